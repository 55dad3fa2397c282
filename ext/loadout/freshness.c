/*
 * The compile cache's freshness rule (see freshness.h). Plain C: no VALUE here (the Ruby binding
 * is freshness_native.c, the Ruby twin lib/loadout/compile_cache/freshness.rb).
 */
#include "freshness.h"

#include <string.h>
#include <time.h>

/* An entry is its payload, its path, its realpath, then its head of CE_HEAD bytes; offsets are
 * within the head (lib/loadout/compile_cache/entry.rb, Entry::LAYOUT). */
enum { CE_HEAD = 72, CE_VERSION = 4, CE_FLAGS = 5, CE_SIZE = 8, CE_MTIME = 16, CE_CTIME = 24, CE_VERIFIED = 32,
       CE_INO = 40, CE_DEV = 48, CE_DIGEST = 56, CE_PAYLOAD_LEN = 64, CE_PATH_LEN = 68, CE_REALPATH_LEN = 70 };
enum { CE_NEGATIVE = 4, CE_VERBOSE_WARNINGS = 32 };

static inline uint64_t
get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline size_t
get16(const unsigned char *p)
{
    return (size_t)p[0] | (size_t)p[1] << 8;
}

static void
put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Whether the stat fields at rec were verified within racy_ns (>= 0) of their ctime: such fields
 * never vouch (see vouches), whatever the file's stat says now. */
static int
self_racy(const unsigned char *rec, int64_t racy_ns)
{
    int64_t ctime = (int64_t)get64(rec + CE_CTIME), verified = (int64_t)get64(rec + CE_VERIFIED);
    return verified < ctime || (uint64_t)verified - (uint64_t)ctime < (uint64_t)racy_ns;
}

/* Whether the stat fields at rec (an entry or a stat record: same offsets) describe the file
 * id now, verified at least racy_ns (>= 0) after that ctime. */
static int
vouches(const unsigned char *rec, const lo_file_id *id, int64_t racy_ns)
{
    if (id->size != (int64_t)get64(rec + CE_SIZE) || id->mtime_ns != (int64_t)get64(rec + CE_MTIME) ||
        id->ctime_ns != (int64_t)get64(rec + CE_CTIME))
        return 0;
    if (self_racy(rec, racy_ns)) return 0;
    return id->ino == get64(rec + CE_INO) && id->dev == get64(rec + CE_DEV);
}

/* The verdict for a file whose freshness is settled: the flags in the entry's head h decide. */
static void
settle(const unsigned char *h, int verbose, lo_fresh_verdict fresh, lo_fresh_result *out)
{
    unsigned flags = h[CE_FLAGS];
    if (flags & CE_NEGATIVE) {
        out->verdict = LO_FRESH_NEGATIVE;
    } else if (verbose && (flags & CE_VERBOSE_WARNINGS)) {
        out->verdict = LO_FRESH_WARNS;
    } else {
        out->verdict = fresh;
    }
}

void
lo_fresh_judge(const unsigned char *e, size_t n, unsigned version, const char *path, size_t plen, int64_t racy_ns,
               int verbose, int revalidate, const unsigned char *rec, size_t rec_len, lo_fresh_result *out)
{
    memset(out, 0, sizeof(*out));
    out->verdict = LO_FRESH_CORRUPT;
    if (n < CE_HEAD) return;
    const unsigned char *h = e + n - CE_HEAD;
    if (memcmp(h, "LOce", 4) != 0 || h[CE_VERSION] != version) return;
    size_t path_len = get16(h + CE_PATH_LEN), realpath_len = get16(h + CE_REALPATH_LEN);
    size_t len = (size_t)(h[CE_PAYLOAD_LEN] | h[CE_PAYLOAD_LEN + 1] << 8 | h[CE_PAYLOAD_LEN + 2] << 16 |
                          (uint32_t)h[CE_PAYLOAD_LEN + 3] << 24);
    if (len + path_len + realpath_len != n - CE_HEAD) return;
    out->payload_len = len;
    int here = path_len == plen && memcmp(e + len, path, plen) == 0;
    out->moved = !here;

    if (racy_ns < 0) { /* trusted: no stat */
        settle(h, verbose, LO_FRESH_BY_STAT, out);
        return;
    }
    if (!rec && self_racy(h, racy_ns)) {
        /* Verified within the racy window of its ctime (a first boot right after a checkout): the
         * entry never vouches by itself, so its stat record decides, with the one stat taken then. */
        out->verdict = LO_FRESH_UNVOUCHED;
        return;
    }
    lo_file_id id;
    if (lo_file_identity(path, &id) != 0) {
        out->verdict = LO_FRESH_MISSING;
        return;
    }
    if (vouches(h, &id, racy_ns)) {
        settle(h, verbose, LO_FRESH_BY_STAT, out);
        return;
    }
    out->verdict = LO_FRESH_STALE;
    if (id.size != (int64_t)get64(h + CE_SIZE)) return; /* no record or digest can vouch for other bytes */
    if (!rec) {
        out->verdict = LO_FRESH_UNVOUCHED;
        return;
    }
    if (rec_len == LO_FRESH_RECORD_SIZE && memcmp(rec, "LOcs", 4) == 0 && rec[CE_VERSION] == version &&
        get64(rec + CE_DIGEST) == get64(h + CE_DIGEST) && vouches(rec, &id, racy_ns)) {
        settle(h, verbose, LO_FRESH_BY_RECORD, out);
        return;
    }
    if (!revalidate) return;

    /* Verified: the clock before the bytes are read, so an edit racing the read moves ctime past it. */
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return;
    uint64_t digest;
    if (lo_file_xxh64(path, 0, &digest) != 0) {
        out->verdict = LO_FRESH_MISSING;
        return;
    }
    if (digest != get64(h + CE_DIGEST)) return;

    unsigned char *r = out->new_record;
    memcpy(r, "LOcs", 4);
    r[CE_VERSION] = (unsigned char)version;
    put64(r + CE_SIZE, (uint64_t)id.size);
    put64(r + CE_MTIME, (uint64_t)id.mtime_ns);
    put64(r + CE_CTIME, (uint64_t)id.ctime_ns);
    put64(r + CE_VERIFIED, (uint64_t)((int64_t)now.tv_sec * 1000000000 + now.tv_nsec));
    put64(r + CE_INO, id.ino);
    put64(r + CE_DEV, id.dev);
    put64(r + CE_DIGEST, digest);
    out->has_record = 1;
    out->moved = !here || id.ino != get64(h + CE_INO) || id.dev != get64(h + CE_DEV);
    settle(h, verbose, LO_FRESH_REVALIDATED, out);
}
