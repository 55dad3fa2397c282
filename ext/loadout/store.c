/*
 * Store records: framing, parsing and checking (see the layout in store.h). Plain C, no VALUE.
 * Reading order: lo_store_frame -> header_ok -> lo_store_parse -> lo_store_verify -> hints.
 */
#include "store.h"
#include "crc32c.h"

#include <stdlib.h>
#include <string.h>

static inline uint32_t
get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t
get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void
put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

void
lo_store_frame(unsigned char *out, int flags, const char *key, size_t klen, const char *val, size_t vlen)
{
    out[0] = LO_STORE_MAGIC0;
    out[1] = LO_STORE_MAGIC1;
    out[2] = LO_STORE_VERSION;
    out[3] = (unsigned char)flags;
    put32(out + 4, (uint32_t)klen);
    put32(out + 8, (uint32_t)vlen);
    uint32_t hcrc = lo_crc32c(0, out, 12);
    put32(out + 12, hcrc);
    memcpy(out + LO_STORE_HEADER, key, klen);
    if (vlen) memcpy(out + LO_STORE_HEADER + klen, val, vlen);
    put32(out + 16, lo_crc32c(hcrc, out + LO_STORE_HEADER, klen + vlen));
}

enum { HDR_BAD, HDR_OK, HDR_NEWER };

/* Checks the 20-byte header at p; on HDR_OK sets the record's total length. */
static int
header_ok(const unsigned char *p, uint64_t *total)
{
    if (p[0] != LO_STORE_MAGIC0 || p[1] != LO_STORE_MAGIC1) return HDR_BAD;
    if (lo_crc32c(0, p, 12) != get32(p + 12)) return HDR_BAD;
    if (p[2] > LO_STORE_VERSION) return HDR_NEWER;
    if (p[2] != LO_STORE_VERSION || p[3] > LO_STORE_META) return HDR_BAD;
    uint32_t klen = get32(p + 4), vlen = get32(p + 8);
    if (klen > LO_STORE_MAX_KEY || vlen > LO_STORE_MAX_VALUE) return HDR_BAD;
    *total = (uint64_t)LO_STORE_HEADER + klen + vlen;
    return HDR_OK;
}

/* Next offset after pos whose header validates (or is of a newer version); n when none. */
static size_t
resync(const unsigned char *buf, size_t n, size_t pos)
{
    uint64_t total;
    size_t i = pos + 1;
    while (i + LO_STORE_HEADER <= n) {
        const unsigned char *hit = memchr(buf + i, LO_STORE_MAGIC0, n - LO_STORE_HEADER + 1 - i);
        if (!hit) break;
        i = (size_t)(hit - buf);
        if (header_ok(hit, &total) != HDR_BAD) return i;
        i++;
    }
    return n;
}

void
lo_store_parse(const unsigned char *buf, size_t n, uint64_t base, lo_store_record_fn *fn, void *ctx,
               lo_store_parse_result *out)
{
    size_t pos = 0, good = 0;
    uint64_t bad_records = 0, bad_bytes = 0; /* damage seen since the last valid record */
    memset(out, 0, sizeof(*out));

    while (pos + LO_STORE_HEADER <= n) {
        const unsigned char *p = buf + pos;
        uint64_t total = 0;
        int h = header_ok(p, &total);
        if (h == HDR_NEWER) {
            out->newer_version = 1;
            break;
        }
        if (h == HDR_BAD) {
            size_t next = resync(buf, n, pos);
            bad_records++;
            bad_bytes += next - pos;
            pos = next;
            continue;
        }
        /* A length that runs past the end is a torn (or still being written) record; nothing is
         * indexed past the largest offset an index value holds (loadout never writes there). */
        if (total > n - pos || base + pos + total > LO_STORE_MAX_LOG) break;
        uint32_t klen = get32(p + 4);
        if (lo_crc32c(get32(p + 12), p + LO_STORE_HEADER, (size_t)total - LO_STORE_HEADER) != get32(p + 16)) {
            bad_records++;
            bad_bytes += total;
            pos += (size_t)total;
            continue;
        }
        out->corrupt_records += bad_records;
        out->corrupt_bytes += bad_bytes;
        bad_records = bad_bytes = 0;
        fn(ctx, p[3], p + LO_STORE_HEADER, klen, base + pos, total);
        pos += (size_t)total;
        good = pos;
    }
    out->good_end = base + good;
}

int
lo_store_locatable(uint64_t off, uint64_t reclen)
{
    return reclen >= LO_STORE_HEADER && reclen <= LO_STORE_HEADER + (uint64_t)LO_STORE_MAX_KEY + LO_STORE_MAX_VALUE &&
           off <= LO_STORE_MAX_LOG - reclen;
}

int64_t
lo_store_verify(const unsigned char *rec, size_t n, const char *key, size_t klen, size_t *voff)
{
    uint64_t total;
    if (n < LO_STORE_HEADER || header_ok(rec, &total) != HDR_OK) return -1;
    if (total != n || rec[3] != LO_STORE_PUT || get32(rec + 4) != klen) return -1;
    if (memcmp(rec + LO_STORE_HEADER, key, klen) != 0) return -1;
    if (lo_crc32c(get32(rec + 12), rec + LO_STORE_HEADER, n - LO_STORE_HEADER) != get32(rec + 16)) return -1;
    *voff = LO_STORE_HEADER + klen;
    return (int64_t)(n - LO_STORE_HEADER - klen);
}

int64_t
lo_store_verify_split(const unsigned char *head, size_t head_n, const unsigned char *val, size_t vlen, const char *key,
                      size_t klen)
{
    uint64_t total;
    if (head_n != LO_STORE_HEADER + klen || header_ok(head, &total) != HDR_OK) return -1;
    if (total != head_n + vlen || head[3] != LO_STORE_PUT || get32(head + 4) != klen) return -1;
    if (memcmp(head + LO_STORE_HEADER, key, klen) != 0) return -1;
    uint32_t crc = lo_crc32c(get32(head + 12), head + LO_STORE_HEADER, klen);
    if (lo_crc32c(crc, val, vlen) != get32(head + 16)) return -1;
    return (int64_t)vlen;
}

static const unsigned char hint_magic[8] = { 'L', 'O', 'H', 'I', 'N', 'T', 0, 2 };

int
lo_store_hint_parse(const unsigned char *buf, size_t n, uint64_t *fields, lo_hint_entry_fn *fn, void *ctx)
{
    if (n < LO_HINT_HEADER + 4 || memcmp(buf, hint_magic, 8) != 0) return -1;
    if (lo_crc32c(0, buf, n - 4) != get32(buf + n - 4)) return -1;
    uint32_t count = get32(buf + 64);
    /* First pass: every entry must fit, so a damaged hint reports nothing at all. */
    size_t pos = LO_HINT_HEADER, end = n - 4;
    for (uint32_t i = 0; i < count; i++) {
        if (end - pos < 16) return -1;
        uint32_t klen = get32(buf + pos + 12);
        if (klen > end - pos - 16) return -1;
        if (!lo_store_locatable(get64(buf + pos), get32(buf + pos + 8))) return -1;
        pos += 16 + (size_t)klen;
    }
    if (pos != end) return -1;

    fields[0] = get64(buf + 24); /* dev */
    fields[1] = get64(buf + 32); /* ino */
    fields[2] = get64(buf + 40); /* covered_end */
    fields[3] = get64(buf + 48); /* last_off */
    fields[4] = get32(buf + 56); /* last hdr crc */
    fields[5] = get32(buf + 60); /* last body crc */
    for (int i = 0; i < 5; i++) fields[6 + i] = get64(buf + 72 + 8 * i);
    fields[11] = get32(buf + 68); /* swept, KiB */
    pos = LO_HINT_HEADER;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t klen = get32(buf + pos + 12);
        fn(ctx, buf + pos + 16, klen, get64(buf + pos), get32(buf + pos + 8));
        pos += 16 + (size_t)klen;
    }
    return 0;
}

static void
count_entry(void *ctx, const unsigned char *key, size_t klen, uint64_t off, uint32_t reclen)
{
    (void)key; (void)klen; (void)off; (void)reclen;
    (*(uint32_t *)ctx)++;
}

int
lo_hint_table_build(lo_hint_table *t, const unsigned char *buf, size_t n, uint64_t *fields)
{
    uint32_t count = 0;
    memset(t, 0, sizeof(*t));
    /* Full validation (CRC, every entry in bounds) before anything points into buf. */
    if (lo_store_hint_parse(buf, n, fields, count_entry, &count) != 0) return -1;
    size_t cap = 16;
    while (cap < (size_t)count * 2) cap <<= 1;
    t->slots = calloc(cap, sizeof(uint32_t));
    if (!t->slots) return -2;
    t->mask = cap - 1;
    t->count = count;
    size_t pos = LO_HINT_HEADER;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t klen = get32(buf + pos + 12);
        size_t slot = lo_crc32c(0, buf + pos + 16, klen) & t->mask;
        while (t->slots[slot]) slot = (slot + 1) & t->mask;
        t->slots[slot] = (uint32_t)pos + 1;
        pos += 16 + (size_t)klen;
    }
    return 0;
}

int
lo_hint_table_lookup(const lo_hint_table *t, const unsigned char *buf, const char *key, size_t klen,
                     uint64_t *off, uint32_t *reclen)
{
    if (!t->slots) return 0;
    size_t slot = lo_crc32c(0, key, klen) & t->mask;
    uint32_t at;
    while ((at = t->slots[slot]) != 0) {
        const unsigned char *e = buf + at - 1;
        if (get32(e + 12) == klen && memcmp(e + 16, key, klen) == 0) {
            *off = get64(e);
            *reclen = get32(e + 8);
            return 1;
        }
        slot = (slot + 1) & t->mask;
    }
    return 0;
}

void
lo_hint_table_free(lo_hint_table *t)
{
    free(t->slots);
    t->slots = NULL;
}
