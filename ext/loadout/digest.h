#ifndef LOADOUT_DIGEST_H
#define LOADOUT_DIGEST_H 1

#include <stddef.h>
#include <stdint.h>

/*
 * The compile cache's content identity, with no Ruby in it.
 *
 * - lo_xxh64: XXH64 (Yann Collet's xxHash, 64-bit variant), written from the published
 *   algorithm description; the test vectors in test/compile_cache/digest_test.rb come from
 *   xxHash's own sanity check. It digests source files (is this the content we compiled?) and
 *   cached payloads (was this blob damaged since we wrote it?) at memory speed.
 * - lo_file_xxh64: the same over a file's bytes, read with a stack buffer (no allocation); a
 *   regular file only (opened O_NONBLOCK and checked with fstat: EINVAL for a FIFO or device).
 * - lo_file_identity: the stat fields the validator compares, with nanosecond times.
 */

uint64_t lo_xxh64(const void *data, size_t len, uint64_t seed);

/* Returns 0 and sets *out, or an errno value. */
int lo_file_xxh64(const char *path, uint64_t seed, uint64_t *out);

typedef struct lo_file_id {
    int64_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
    uint64_t ino;
    uint64_t dev;
} lo_file_id;

/* Returns 0 and fills *out (following symlinks, like File.stat), or an errno value. */
int lo_file_identity(const char *path, lo_file_id *out);

/*
 * A compile-cache hit in one call (layout: lib/loadout/compile_cache/entry.rb). Returns 1 and
 * sets *payload_off and *payload_len when +entry+ (n bytes) is an intact entry of +version+ whose
 * payload digest matches, that is neither negative nor (with +verbose+) flagged for -w
 * warnings, that was compiled at exactly +path+ (plen bytes, NUL-terminated), and whose
 * recorded stat (size, mtime, ctime, ino, dev) equals the file's now, verified at least
 * +racy_ns+ (>= 0) after that ctime -- or, failing that, whose stat record +rec+ (rec_len
 * bytes, NULL when there is none) does, for the same source digest. 0 means "not certain": the
 * caller takes its full path.
 */
int lo_cc_fresh_payload(const unsigned char *entry, size_t n, unsigned version, const char *path, size_t plen,
                        int64_t racy_ns, int verbose, const unsigned char *rec, size_t rec_len, size_t *payload_off,
                        size_t *payload_len);

/*
 * The revalidation that follows when lo_cc_fresh_payload said 0 for the same path (the file's
 * metadata moved: a checkout, a restored CI cache, a touch): returns 1 and sets the payload's
 * offset and length when +entry+ passes the same entry checks, the file's size is the recorded
 * one, its XXH64 equals the entry's source digest and, when its inode moved, its realpath is
 * still the recorded one. Then fills rec_out (64 bytes) with the stat record that lets the next
 * boot's lo_cc_fresh_payload vouch with one stat again. 0: the caller's full path decides.
 */
int lo_cc_revalidated_payload(const unsigned char *entry, size_t n, unsigned version, const char *path, size_t plen,
                              int verbose, unsigned char *rec_out, size_t *payload_off, size_t *payload_len);

#endif
