#ifndef LOADOUT_LP_TABLE_H
#define LOADOUT_LP_TABLE_H 1

#include <stddef.h>
#include <stdint.h>

/*
 * The load path index, with no Ruby in it.
 *
 * A listing is what one $LOAD_PATH directory holds: its requirable files ("json.rb",
 * "json/ext/parser.so"), relative and with their extension, as one block of NUL-terminated
 * names, plus the directory Ruby joins them to (the entry's realpath, which is how Ruby's
 * expanded load path names it). A table maps every name of an ordered list of listings to the
 * first position holding it: exactly what Ruby's search over $LOAD_PATH finds for one
 * extension. Building a table copies nothing: slots point into the listings, which the caller
 * keeps alive for the table's life. A rebuild after $LOAD_PATH changed order costs one probe
 * per name (hashes are computed once per listing).
 *
 *   listing A: "a.rb\0json.rb\0"       table [A, B]:  "json.rb" -> 0 (A), "x.so" -> 1 (B)
 *   listing B: "json.rb\0x.so\0"
 */

typedef struct lo_lp_listing {
    char *files;       /* "rel\0rel\0...", owned */
    size_t files_len;
    uint32_t nfiles;
    uint32_t *hashes;  /* one per file, in order */
    uint32_t *lens;    /* one per file, without the NUL */
} lo_lp_listing;

typedef struct lo_lp_slot {
    const char *rel;   /* points into a listing; NULL when the slot is free */
    uint32_t len;
    uint32_t hash;
    uint32_t pos;      /* position of the listing in the table's order */
} lo_lp_slot;

typedef struct lo_lp_table {
    lo_lp_slot *slots;
    size_t mask;       /* slot count - 1 (a power of two) */
    size_t used;
} lo_lp_table;

uint32_t lo_lp_hash(const char *s, size_t len);

/* Fills +l+ from +files+ (n bytes of NUL-terminated names, copied). Returns 0 or ENOMEM/EINVAL
 * (a block that does not end in NUL, or an empty name). */
int lo_lp_listing_init(lo_lp_listing *l, const char *files, size_t n);
void lo_lp_listing_free(lo_lp_listing *l);

/* Builds +t+ over +listings+ (count of them, in $LOAD_PATH order). Returns 0 or ENOMEM. */
int lo_lp_table_build(lo_lp_table *t, lo_lp_listing *const *listings, size_t count);
void lo_lp_table_free(lo_lp_table *t);

/* The position of the first listing holding +rel+ (len bytes), or -1. */
long lo_lp_table_find(const lo_lp_table *t, const char *rel, size_t len);

#endif
