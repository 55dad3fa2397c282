#ifndef LOADOUT_CRC32C_H
#define LOADOUT_CRC32C_H 1

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every store record.
 * crc32c(seed, buf, len) continues a running CRC: crc32c(crc32c(0, a), b) == crc32c(0, a ++ b).
 * Uses the SSE4.2 crc32 instruction when cpuid reports it, else a slicing-by-8 table; both give
 * the same result as the Ruby twin in lib/loadout/store/crc32c.rb.
 */
uint32_t lo_crc32c(uint32_t seed, const void *buf, size_t len);

/* The table path alone, so tests can prove it agrees with the hardware path. */
uint32_t lo_crc32c_sw(uint32_t seed, const void *buf, size_t len);

/* 1 when the hardware path is in use (reported by the benchmark). */
int lo_crc32c_hardware(void);

#endif
