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
    /* A regular file only, opened non-blocking: a FIFO in its place never blocks a boot. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno;
    struct stat st;
    int bad = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (bad) {
        close(fd);
        return bad;
    }

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
