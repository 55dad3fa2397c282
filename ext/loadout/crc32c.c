/*
 * CRC-32C, written for loadout: a slicing-by-8 table fallback and an SSE4.2 path chosen once by
 * cpuid. The hardware path is one 8-byte crc32 instruction per step (about 8 GB/s here), which
 * makes the checksum negligible next to the write(2) of a record.
 */
#include "crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;
static int use_hw = -1; /* -1: not probed yet */

static void
build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = table[0][i];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][i] = c;
        }
    }
    table_ready = 1;
}

static uint32_t
crc_table(uint32_t crc, const unsigned char *p, size_t len)
{
    if (!table_ready) build_table();
    while (len >= 8) {
        /* Little-endian word loads written out byte by byte: no alignment or endianness
         * assumptions, and the compiler folds them into plain loads on x86. */
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    /* Four words per step: the loop's own bookkeeping is paid once per 32 bytes (a cache hit
     * checks its whole record, the ISeq binary included). */
    while (len >= 32) {
        uint64_t w0, w1, w2, w3;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        memcpy(&w2, p + 16, 8);
        memcpy(&w3, p + 24, 8);
        c = _mm_crc32_u64(c, w0);
        c = _mm_crc32_u64(c, w1);
        c = _mm_crc32_u64(c, w2);
        c = _mm_crc32_u64(c, w3);
        p += 32;
        len -= 32;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    while (len--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}

static int
probe_hw(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_SSE4_2) != 0;
}
#else
static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    return crc_table(crc, p, len);
}

static int
probe_hw(void)
{
    return 0;
}
#endif

int
lo_crc32c_hardware(void)
{
    if (use_hw < 0) use_hw = probe_hw();
    return use_hw;
}

uint32_t
lo_crc32c(uint32_t seed, const void *buf, size_t len)
{
    uint32_t crc = ~seed;
    if (lo_crc32c_hardware()) crc = crc_hw(crc, buf, len);
    else crc = crc_table(crc, buf, len);
    return ~crc;
}

uint32_t
lo_crc32c_sw(uint32_t seed, const void *buf, size_t len)
{
    return ~crc_table(~seed, buf, len);
}
