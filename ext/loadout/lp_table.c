/*
 * The load path index's table (see lp_table.h): open addressing with linear probing over
 * (hash, length, bytes). Plain C: no VALUE here; the binding is require_native.c.
 */
#include "lp_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, folded to 32 bits. Names are short (tens of bytes); this costs a few ns each and is
 * computed once per listing, never per rebuild. */
uint32_t
lo_lp_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return (uint32_t)(h ^ (h >> 32));
}

int
lo_lp_listing_init(lo_lp_listing *l, const char *files, size_t n)
{
    memset(l, 0, sizeof(*l));
    if (n > 0 && files[n - 1] != '\0') return EINVAL;

    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (files[i] == '\0') {
            if (i == 0 || files[i - 1] == '\0') return EINVAL; /* an empty name */
            count++;
        }
    }
    l->files = malloc(n ? n : 1);
    l->hashes = malloc(sizeof(uint32_t) * (count ? count : 1));
    l->lens = malloc(sizeof(uint32_t) * (count ? count : 1));
    if (!l->files || !l->hashes || !l->lens) {
        lo_lp_listing_free(l);
        return ENOMEM;
    }
    memcpy(l->files, files, n);
    l->files_len = n;
    l->nfiles = count;

    const char *p = l->files;
    for (uint32_t i = 0; i < count; i++) {
        size_t len = strlen(p);
        l->lens[i] = (uint32_t)len;
        l->hashes[i] = lo_lp_hash(p, len);
        p += len + 1;
    }
    return 0;
}

void
lo_lp_listing_free(lo_lp_listing *l)
{
    free(l->files);
    free(l->hashes);
    free(l->lens);
    memset(l, 0, sizeof(*l));
}

static lo_lp_slot *
probe(const lo_lp_table *t, const char *rel, size_t len, uint32_t hash)
{
    size_t i = hash & t->mask;
    for (;;) {
        lo_lp_slot *s = &t->slots[i];
        if (!s->rel) return s;
        if (s->hash == hash && s->len == len && memcmp(s->rel, rel, len) == 0) return s;
        i = (i + 1) & t->mask;
    }
}

int
lo_lp_table_build(lo_lp_table *t, lo_lp_listing *const *listings, size_t count)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += listings[i]->nfiles;

    /* At most half full: probes stay short for the misses that walk to a free slot. */
    size_t want = 16;
    while (want < total * 2) want <<= 1;
    lo_lp_slot *slots = calloc(want, sizeof(lo_lp_slot));
    if (!slots) return ENOMEM;

    lo_lp_table fresh = { slots, want - 1, 0 };
    for (size_t pos = 0; pos < count; pos++) {
        const lo_lp_listing *l = listings[pos];
        const char *p = l->files;
        for (uint32_t i = 0; i < l->nfiles; i++) {
            lo_lp_slot *s = probe(&fresh, p, l->lens[i], l->hashes[i]);
            if (!s->rel) { /* the first position holding a name wins, as in Ruby's search */
                s->rel = p;
                s->len = l->lens[i];
                s->hash = l->hashes[i];
                s->pos = (uint32_t)pos;
                fresh.used++;
            }
            p += l->lens[i] + 1;
        }
    }
    lo_lp_table_free(t);
    *t = fresh;
    return 0;
}

void
lo_lp_table_free(lo_lp_table *t)
{
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

long
lo_lp_table_find(const lo_lp_table *t, const char *rel, size_t len)
{
    if (!t->slots) return -1;
    const lo_lp_slot *s = probe(t, rel, len, lo_lp_hash(rel, len));
    return s->rel ? (long)s->pos : -1;
}
