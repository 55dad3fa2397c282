/*
 * XXH64 and the stat fields the compile cache validates with. Plain C: no VALUE here (the Ruby
 * binding is digest_native.c, the Ruby twin lib/loadout/compile_cache/digest.rb).
 *
 * XXH64 in one paragraph: inputs of 32 bytes or more run four independent 64-bit lanes over
 * 32-byte stripes (multiply, rotate, multiply), which are then folded into one value; the tail
 * is mixed in 8, 4 and 1 bytes at a time; a final avalanche spreads every input bit over the
 * whole result. Words are read little-endian whatever the host order.
 */
#include "digest.h"
#include "stat_time.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)
#define P4 UINT64_C(0x85EBCA77C2B2AE63)
#define P5 UINT64_C(0x27D4EB2F165667C5)

static inline uint64_t
rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t
read64(const unsigned char *p)
{
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24) |
           ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

static inline uint32_t
read32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t
lane_round(uint64_t acc, uint64_t input)
{
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t
merge_lane(uint64_t h, uint64_t lane)
{
    h ^= lane_round(0, lane);
    return h * P1 + P4;
}

/* Streaming state, so a file can be digested through a small buffer. */
typedef struct {
    uint64_t v[4];
    uint64_t total;
    unsigned char buf[32];
    size_t buffered;
    uint64_t seed;
} xxh64_state;

static void
state_init(xxh64_state *s, uint64_t seed)
{
    s->v[0] = seed + P1 + P2;
    s->v[1] = seed + P2;
    s->v[2] = seed;
    s->v[3] = seed - P1;
    s->total = 0;
    s->buffered = 0;
    s->seed = seed;
}

static void
stripe(xxh64_state *s, const unsigned char *p)
{
    s->v[0] = lane_round(s->v[0], read64(p));
    s->v[1] = lane_round(s->v[1], read64(p + 8));
    s->v[2] = lane_round(s->v[2], read64(p + 16));
    s->v[3] = lane_round(s->v[3], read64(p + 24));
}

static void
state_update(xxh64_state *s, const unsigned char *p, size_t len)
{
    s->total += len;
    if (s->buffered) {
        size_t take = 32 - s->buffered;
        if (take > len) take = len;
        memcpy(s->buf + s->buffered, p, take);
        s->buffered += take;
        p += take;
        len -= take;
        if (s->buffered < 32) return;
        stripe(s, s->buf);
        s->buffered = 0;
    }
    /* The lanes live in locals here: through s->v the compiler stores and reloads them on
     * every stripe (s may alias p), which made a cache hit's payload check twice as slow. */
    uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
    while (len >= 32) {
        v0 = lane_round(v0, read64(p));
        v1 = lane_round(v1, read64(p + 8));
        v2 = lane_round(v2, read64(p + 16));
        v3 = lane_round(v3, read64(p + 24));
        p += 32;
        len -= 32;
    }
    s->v[0] = v0;
    s->v[1] = v1;
    s->v[2] = v2;
    s->v[3] = v3;
    if (len) {
        memcpy(s->buf, p, len);
        s->buffered = len;
    }
}

static uint64_t
state_digest(const xxh64_state *s)
{
    uint64_t h;
    if (s->total >= 32) {
        h = rotl64(s->v[0], 1) + rotl64(s->v[1], 7) + rotl64(s->v[2], 12) + rotl64(s->v[3], 18);
        for (int i = 0; i < 4; i++) h = merge_lane(h, s->v[i]);
    } else {
        h = s->seed + P5;
    }
    h += s->total;

    const unsigned char *p = s->buf;
    size_t len = s->buffered;
    while (len >= 8) {
        h ^= lane_round(0, read64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        h ^= (uint64_t)read32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
        len -= 4;
    }
    while (len) {
        h ^= (uint64_t)(*p) * P5;
        h = rotl64(h, 11) * P1;
        p++;
        len--;
    }

    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

uint64_t
lo_xxh64(const void *data, size_t len, uint64_t seed)
{
    xxh64_state s;
    state_init(&s, seed);
    if (len) state_update(&s, (const unsigned char *)data, len);
    return state_digest(&s);
}

int
lo_file_xxh64(const char *path, uint64_t seed, uint64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;

    xxh64_state s;
    state_init(&s, seed);
    unsigned char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            close(fd);
            return err;
        }
        state_update(&s, buf, (size_t)n);
    }
    close(fd);
    *out = state_digest(&s);
    return 0;
}

int
lo_file_identity(const char *path, lo_file_id *out)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno;
    out->size = (int64_t)st.st_size;
    out->mtime_ns = LO_STAT_NS(st, m);
    out->ctime_ns = LO_STAT_NS(st, c);
    out->ino = (uint64_t)st.st_ino;
    out->dev = (uint64_t)st.st_dev;
    return 0;
}

/* Entry layout offsets (lib/loadout/compile_cache/entry.rb, Entry::LAYOUT). */
enum { CE_HEAD = 80, CE_VERSION = 4, CE_FLAGS = 5, CE_SIZE = 8, CE_MTIME = 16, CE_CTIME = 24, CE_VERIFIED = 32,
       CE_INO = 40, CE_DEV = 48, CE_PAYLOAD_DIGEST = 64, CE_PAYLOAD_LEN = 72, CE_PATH_LEN = 76, CE_REALPATH_LEN = 78 };
enum { CE_NEGATIVE = 4, CE_VERBOSE_WARNINGS = 32 };

/* Stat record layout (Entry::STAT_LAYOUT): the same stat fields at the same offsets as an entry. */
enum { CS_SIZE = 64, CS_DIGEST = 56 };

/* Whether the stat fields at rec (an entry or a stat record) describe the file id now, verified
 * at least racy_ns (>= 0) after that ctime. */
static int
stat_vouches(const unsigned char *rec, const lo_file_id *id, int64_t racy_ns)
{
    int64_t ctime = (int64_t)read64(rec + CE_CTIME), verified = (int64_t)read64(rec + CE_VERIFIED);
    if (id->size != (int64_t)read64(rec + CE_SIZE) || id->mtime_ns != (int64_t)read64(rec + CE_MTIME) ||
        id->ctime_ns != ctime)
        return 0;
    /* verified - ctime >= racy_ns, without overflowing (racy_ns >= 0, so verified < ctime fails) */
    if (verified < ctime || (uint64_t)verified - (uint64_t)ctime < (uint64_t)racy_ns) return 0;
    return id->ino == read64(rec + CE_INO) && id->dev == read64(rec + CE_DEV);
}

/*
 * The stat of the last call that failed only because the entry's own stat did not vouch: the
 * caller then reads the entry's stat record and calls again at once for the same path (and, when
 * that record does not vouch either, revalidates at once), which reuse it instead of another
 * stat(2) (one per file on every boot after a checkout touched everything). Any call consumes
 * it, so it never outlives the next call. +stage+ is the call that took it: a follow-up with a
 * stat record only reuses the first call's, a revalidation either. Callers hold the GVL.
 */
enum { FIRST_CALL = 1, RECORD_CALL = 2 };
static struct {
    int stage; /* 0: nothing kept */
    size_t len;
    lo_file_id id;
    char path[4096];
} last_stat;

static void
write64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The checks every served entry passes before its stat is looked at: an intact head of
 * +version+, neither negative nor (with +verbose+) flagged for -w warnings, compiled at exactly
 * +path+. Sets the payload's offset and length. */
static int
servable_entry(const unsigned char *e, size_t n, unsigned version, const char *path, size_t plen, int verbose,
               size_t *at_out, size_t *len_out)
{
    if (n < CE_HEAD || memcmp(e, "LOce", 4) != 0 || e[CE_VERSION] != version) return 0;
    unsigned flags = e[CE_FLAGS];
    if ((flags & CE_NEGATIVE) || (verbose && (flags & CE_VERBOSE_WARNINGS))) return 0;

    size_t path_len = (size_t)e[CE_PATH_LEN] | (size_t)e[CE_PATH_LEN + 1] << 8;
    size_t realpath_len = (size_t)e[CE_REALPATH_LEN] | (size_t)e[CE_REALPATH_LEN + 1] << 8;
    size_t len = (size_t)read32(e + CE_PAYLOAD_LEN);
    size_t at = CE_HEAD + path_len + realpath_len;
    if (at > n || len != n - at) return 0;
    if (path_len != plen || memcmp(e + CE_HEAD, path, plen) != 0) return 0;
    *at_out = at;
    *len_out = len;
    return 1;
}

/* Consumes the kept stat; whether it is for +path+, taken by a call in +stages+. */
static int
takes_last_stat(const char *path, size_t plen, int stages)
{
    int reuse = (last_stat.stage & stages) && last_stat.len == plen && memcmp(last_stat.path, path, plen) == 0;
    last_stat.stage = 0;
    return reuse;
}

/* The stat of +path+: the kept one when +reuse+, else a stat(2). */
static int
identity_of(const char *path, int reuse, lo_file_id *id)
{
    if (reuse) {
        *id = last_stat.id;
        return 1;
    }
    return lo_file_identity(path, id) == 0;
}

static void
keep_stat(const char *path, size_t plen, const lo_file_id *id, int stage)
{
    if (plen >= sizeof(last_stat.path)) return;
    memcpy(last_stat.path, path, plen);
    last_stat.len = plen;
    last_stat.id = *id;
    last_stat.stage = stage;
}

int
lo_cc_fresh_payload(const unsigned char *e, size_t n, unsigned version, const char *path, size_t plen,
                    int64_t racy_ns, int verbose, const unsigned char *rec, size_t rec_len, size_t *payload_off,
                    size_t *payload_len)
{
    int reuse = takes_last_stat(path, plen, rec ? FIRST_CALL : 0);
    size_t at, len;
    if (racy_ns < 0 || !servable_entry(e, n, version, path, plen, verbose, &at, &len)) return 0;

    lo_file_id id;
    if (!identity_of(path, reuse, &id)) return 0;
    if (!stat_vouches(e, &id, racy_ns)) {
        /* The stat record a revalidation appended (same content, new metadata: a git checkout, a
         * restored CI cache) vouches instead, for the source digest the entry was compiled from. */
        int record_vouches = rec && rec_len == CS_SIZE && memcmp(rec, "LOcs", 4) == 0 && rec[CE_VERSION] == version &&
                             read64(rec + CS_DIGEST) == read64(e + CS_DIGEST) && stat_vouches(rec, &id, racy_ns);
        if (!record_vouches) {
            keep_stat(path, plen, &id, rec ? RECORD_CALL : FIRST_CALL); /* for the follow-up call */
            return 0;
        }
    }

    if (lo_xxh64(e + at, len, 0) != read64(e + CE_PAYLOAD_DIGEST)) return 0;
    *payload_off = at;
    *payload_len = len;
    return 1;
}

int
lo_cc_revalidated_payload(const unsigned char *e, size_t n, unsigned version, const char *path, size_t plen,
                          int verbose, unsigned char *rec_out, size_t *payload_off, size_t *payload_len)
{
    int reuse = takes_last_stat(path, plen, FIRST_CALL | RECORD_CALL);
    size_t at, len;
    if (!servable_entry(e, n, version, path, plen, verbose, &at, &len)) return 0;

    lo_file_id id;
    if (!identity_of(path, reuse, &id)) return 0;
    if (id.size != (int64_t)read64(e + CE_SIZE)) return 0;
    /* Another inode at the same path (a fresh clone): the payload names the realpath it was
     * compiled at, so that must not have moved (a symlink retargeted). */
    if (id.ino != read64(e + CE_INO) || id.dev != read64(e + CE_DEV)) {
        size_t path_len = (size_t)e[CE_PATH_LEN] | (size_t)e[CE_PATH_LEN + 1] << 8;
        size_t realpath_len = (size_t)e[CE_REALPATH_LEN] | (size_t)e[CE_REALPATH_LEN + 1] << 8;
        char *real = realpath(path, NULL);
        if (!real) return 0;
        int same = strlen(real) == realpath_len && memcmp(real, e + CE_HEAD + path_len, realpath_len) == 0;
        free(real);
        if (!same) return 0;
    }

    /* Verified: the clock before the bytes are read (see Entry). */
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return 0;
    uint64_t digest;
    if (lo_file_xxh64(path, 0, &digest) != 0 || digest != read64(e + CS_DIGEST)) return 0;
    if (lo_xxh64(e + at, len, 0) != read64(e + CE_PAYLOAD_DIGEST)) return 0;

    memset(rec_out, 0, CS_SIZE);
    memcpy(rec_out, "LOcs", 4);
    rec_out[CE_VERSION] = (unsigned char)version;
    write64(rec_out + CE_SIZE, (uint64_t)id.size);
    write64(rec_out + CE_MTIME, (uint64_t)id.mtime_ns);
    write64(rec_out + CE_CTIME, (uint64_t)id.ctime_ns);
    write64(rec_out + CE_VERIFIED, (uint64_t)((int64_t)now.tv_sec * 1000000000 + now.tv_nsec));
    write64(rec_out + CE_INO, id.ino);
    write64(rec_out + CE_DEV, id.dev);
    write64(rec_out + CS_DIGEST, digest);
    *payload_off = at;
    *payload_len = len;
    return 1;
}
