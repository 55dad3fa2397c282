#ifndef LOADOUT_STORE_H
#define LOADOUT_STORE_H 1

#include <stddef.h>
#include <stdint.h>

/*
 * Store record framing, log parsing and hint parsing: bytes only, no VALUE (the Ruby binding is
 * store_native.c; the Ruby twin is lib/loadout/store/format.rb and must produce the same bytes).
 *
 * One record (all integers little-endian):
 *
 *   0      2       3       4          8          12         16         20
 *   +------+-------+-------+----------+----------+----------+----------+-----+-------+
 *   | magic| vers. | flags | key len  | val len  | hdr crc  | body crc | key | value |
 *   | D5 4C|  u8   |  u8   |   u32    |   u32    |   u32    |   u32    |     |       |
 *   +------+-------+-------+----------+----------+----------+----------+-----+-------+
 *
 *   hdr crc  = crc32c(bytes 0..11)                 -- lengths are trusted only when it matches
 *   body crc = crc32c(key ++ value, seed: hdr crc)  -- so it covers header and payload
 *
 * The first 16 bytes keep this layout in every future version, so a newer file is recognised
 * (valid header CRC, larger version byte) instead of being mistaken for garbage.
 */

#define LO_STORE_HEADER 20
#define LO_STORE_VERSION 1
#define LO_STORE_MAGIC0 0xD5
#define LO_STORE_MAGIC1 0x4C
#define LO_STORE_PUT 0
#define LO_STORE_DELETE 1
#define LO_STORE_META 2

/*
 * Limits, and the in-memory index value that locates a record: one 64-bit Integer per key,
 *
 *   packed = (record length << LO_STORE_OFFSET_BITS) | offset
 *
 * so a record (header + key + value) must fit LO_STORE_LENGTH_BITS and a log LO_STORE_OFFSET_BITS.
 * A longer key or value is refused when framed and read as damage when parsed; a log is never
 * appended past LO_STORE_MAX_LOG. The Ruby twin (Store::Format) repeats these numbers, and
 * test/store/limits_test.rb checks both against this header and against Native::STORE_LIMITS.
 */
#define LO_STORE_MAX_KEY (1u << 20)    /* 1 MiB */
#define LO_STORE_MAX_VALUE (64u << 20) /* 64 MiB */
#define LO_STORE_LENGTH_BITS 27        /* records up to 128 MiB - 1: header + max key + max value fit */
#define LO_STORE_OFFSET_BITS 37        /* logs up to 128 GiB */
#define LO_STORE_MAX_LOG (1ULL << LO_STORE_OFFSET_BITS)
#define LO_STORE_OFFSET_MASK (LO_STORE_MAX_LOG - 1)

typedef char lo_store_limits_fit[(LO_STORE_LENGTH_BITS + LO_STORE_OFFSET_BITS == 64 &&
                                  LO_STORE_HEADER + (uint64_t)LO_STORE_MAX_KEY + LO_STORE_MAX_VALUE <
                                      (1ULL << LO_STORE_LENGTH_BITS)) ? 1 : -1];

static inline uint64_t
lo_store_pack(uint64_t reclen, uint64_t off)
{
    return reclen << LO_STORE_OFFSET_BITS | off;
}

/* Writes the record for (flags, key, value) into out, which holds LO_STORE_HEADER + klen + vlen. */
void lo_store_frame(unsigned char *out, int flags, const char *key, size_t klen, const char *val, size_t vlen);

typedef struct lo_store_parse_result {
    uint64_t good_end;        /* absolute offset just past the last valid record */
    uint64_t corrupt_records; /* damaged regions skipped before good_end */
    uint64_t corrupt_bytes;
    int newer_version;        /* a record of a newer format was found; parsing stopped there */
} lo_store_parse_result;

typedef void lo_store_record_fn(void *ctx, int flags, const unsigned char *key, size_t klen,
                                uint64_t off, uint64_t len);

/*
 * Walks buf (the file bytes from absolute offset base) and calls fn for every valid record.
 * A record whose header CRC fails is skipped by searching for the next valid header; one whose
 * body CRC fails is skipped by its (header-checked) length. Damage after the last valid record
 * is the tail (torn or still being written): it is not counted, and good_end stops before it.
 */
void lo_store_parse(const unsigned char *buf, size_t n, uint64_t base, lo_store_record_fn *fn, void *ctx,
                    lo_store_parse_result *out);

/* 1 when a record of reclen bytes at off is within the limits (so lo_store_pack keeps both). */
int lo_store_locatable(uint64_t off, uint64_t reclen);

/*
 * Checks one whole record read back for a get: framing, both CRCs, flags == PUT, exact key.
 * Returns the value length and sets *voff, or -1 when anything is wrong.
 */
int64_t lo_store_verify(const unsigned char *rec, size_t n, const char *key, size_t klen, size_t *voff);
/* lo_store_verify for a record read in two parts: its header and key (head, head_n bytes: exactly
 * LO_STORE_HEADER + klen) and its value (val, vlen bytes). Returns vlen, or -1. */
int64_t lo_store_verify_split(const unsigned char *head, size_t head_n, const unsigned char *val, size_t vlen,
                              const char *key, size_t klen);

/*
 * Hint file (all little-endian):
 *   0 "LOHINT\0\2"  8 log id (16 bytes, from the log's file header)  24 dev u64  32 ino u64
 *   40 covered_end u64  48 last_off u64 (where the record that ends at covered_end starts)
 *   56 that record's hdr crc u32  60 its body crc u32  64 count u32
 *   68 swept u32 (KiB: the log up to there needs no sweep, see Store::Compaction#due; 0: unknown)
 *   72 live_bytes  80 garbage_bytes  88 garbage_records  96 corrupt_records  104 corrupt_bytes (u64 each)
 *   112 entries: off u64, reclen u32, klen u32, key ... ; then crc32c of everything before it (u32)
 * The store accepts it only for the log it names (lib/loadout/store/hint.rb): same log id, the
 * record it names ending exactly at covered_end, and the same inode (or, for a copy, a log that
 * ends at covered_end).
 */
#define LO_HINT_HEADER 112
#define LO_HINT_ID 8
#define LO_HINT_ID_LEN 16
#define LO_HINT_NFIELDS 12

typedef void lo_hint_entry_fn(void *ctx, const unsigned char *key, size_t klen, uint64_t off, uint32_t reclen);

/* Validates a hint (every entry's record inside the limits above);
 * fills fields[LO_HINT_NFIELDS] (dev, ino, covered_end, last_off, last hdr crc, last body crc,
 * live_bytes, garbage_bytes, garbage_records, corrupt_records, corrupt_bytes, swept KiB; the log id is the
 * 16 bytes at LO_HINT_ID) and calls fn per entry.
 * Returns 0, or -1 when the hint is damaged (nothing was reported through fn then). */
int lo_store_hint_parse(const unsigned char *buf, size_t n, uint64_t *fields, lo_hint_entry_fn *fn, void *ctx);

/*
 * A hint loaded for lookups without building a Ruby Hash: an open-addressing table of entry
 * offsets into the (validated) hint bytes, hashed with crc32c. Building it for 6,300 keys takes
 * tens of microseconds; the Ruby Hash is built only if the store needs every key (each, writes).
 */
typedef struct lo_hint_table {
    uint32_t *slots;  /* entry offset + 1 into the hint bytes; 0 = empty */
    size_t mask;
    uint32_t count;
} lo_hint_table;

/* Validates buf like lo_store_hint_parse (filling fields) and builds t. Returns 0, or -1 when the
 * hint is damaged, -2 when out of memory. */
int lo_hint_table_build(lo_hint_table *t, const unsigned char *buf, size_t n, uint64_t *fields);

/* Finds key; returns 1 and sets *off and *reclen, or 0. buf must be the bytes the table was built on. */
int lo_hint_table_lookup(const lo_hint_table *t, const unsigned char *buf, const char *key, size_t klen,
                         uint64_t *off, uint32_t *reclen);

void lo_hint_table_free(lo_hint_table *t);

#endif
