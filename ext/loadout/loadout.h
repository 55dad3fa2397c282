#ifndef LOADOUT_H
#define LOADOUT_H 1

/*
 * Shared declarations for the loadout extension.
 *
 * Reading order: loadout.c (Init only) -> scan.h/scan.c (plain C directory walk, no VALUE)
 * -> scan_native.c (the Ruby binding). Other components follow the same split: plain C in
 * <component>.c, the binding in <component>_native.c.
 */

#include "ruby.h"

#if defined(__GNUC__)
#define LO_LIKELY(x) __builtin_expect(!!(x), 1)
#define LO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LO_NOINLINE __attribute__((noinline))
#else
#define LO_LIKELY(x) (x)
#define LO_UNLIKELY(x) (x)
#define LO_NOINLINE
#endif

/* Loadout::Native, defined in loadout.c before any component init runs. */
extern VALUE lo_mNative;

void lo_scan_native_init(VALUE mNative);
void lo_store_native_init(VALUE mNative);
void lo_digest_native_init(VALUE mNative);
void lo_freshness_native_init(VALUE mNative);
void lo_trust_native_init(VALUE mNative);
void lo_ibf_native_init(VALUE mNative);
void lo_msgpack_native_init(VALUE mNative);
void lo_lp_native_init(VALUE mNative);
void lo_require_native_init(VALUE mNative);

#endif
