#ifndef LOADOUT_FRESHNESS_H
#define LOADOUT_FRESHNESS_H 1

#include <stddef.h>
#include <stdint.h>

#include "digest.h"

/*
 * The compile cache's freshness rule, the one place it is written (Ruby twin:
 * lib/loadout/compile_cache/freshness.rb; entry layout: lib/loadout/compile_cache/entry.rb).
 *
 * lo_fresh_judge decides, for a stored entry and the file at +path+ now:
 *  1. The entry must be intact: magic, +version+, lengths that add up (else CORRUPT).
 *  2. Trusted (racy_ns < 0): fresh without a stat.
 *  3. One stat (else MISSING). Fresh when size, mtime (ns), ctime, inode and device equal the
 *     entry's and it was verified at least racy_ns after that ctime (git's racy-clean rule).
 *  4. A file of another size is STALE. Otherwise the stat record a revalidation appended decides
 *     next: without it (+record+ NULL: not looked up yet) the answer is UNVOUCHED, and the caller
 *     looks it up in the store and asks again (+record_len+ 0: there is none). One for the same
 *     source digest, checked the same way, makes the entry fresh BY_RECORD.
 *  5. Else, with +revalidate+: the file's XXH64 decides: equal means only the metadata moved (a
 *     checkout, a restored CI cache): REVALIDATED, and +new_record+ holds the 64-byte stat record
 *     to append; different means STALE. Without +revalidate+: STALE.
 *  6. A fresh entry that is negative is NEGATIVE (the payload is the reason); one flagged for -w
 *     warnings, with +verbose+, WARNS. The payload's bytes are not checked here: the CRC32C frame
 *     every entry is read through (a store record, the self cache file) covers them.
 * +moved+ says the payload names another place than +path+: it was compiled at another path,
 * or the file is another inode than the one that vouched (the caller checks the realpath
 * before it serves a payload that embeds paths).
 */
typedef enum {
    LO_FRESH_CORRUPT = 0,
    LO_FRESH_MISSING,
    LO_FRESH_STALE,
    LO_FRESH_NEGATIVE,
    LO_FRESH_WARNS,
    LO_FRESH_BY_STAT,   /* also: trusted */
    LO_FRESH_BY_RECORD,
    LO_FRESH_REVALIDATED,
    LO_FRESH_UNVOUCHED,
} lo_fresh_verdict;

#define LO_FRESH_RECORD_SIZE 64
/* The racy window: two seconds covers filesystems with one- and two-second timestamps. */
#define LO_FRESH_RACY_NS INT64_C(2000000000)

typedef struct {
    lo_fresh_verdict verdict;
    int moved;
    int has_record; /* new_record holds a stat record to append (content revalidated) */
    size_t payload_len; /* the payload starts the entry */
    unsigned char new_record[LO_FRESH_RECORD_SIZE];
} lo_fresh_result;

void lo_fresh_judge(const unsigned char *entry, size_t n, unsigned version, const char *path, size_t plen,
                    int64_t racy_ns, int verbose, int revalidate, const unsigned char *record, size_t record_len,
                    lo_fresh_result *out);

#endif
