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
 * - lo_file_identity: the stat fields the freshness engine (freshness.c) compares, with
 *   nanosecond times.
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

#endif
