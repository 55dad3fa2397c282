/*
 * Reading CRuby's instruction-sequence binaries ("IBF", RubyVM::InstructionSequence#to_binary),
 * registered on Loadout::Native:
 *
 *   ibf_mentioned_outside(binary, needle)
 *
 * True when +needle+ occurs in +binary+ other than as the exact bytes of a whole String object
 * (inside a longer literal the parser folded, say): a binary whose path is mentioned that way
 * cannot be relocated by replacing objects. Called once per ISeq a cold boot captures, where the
 * Ruby twin's per-occurrence slices and small arrays were measurable. A binary it cannot parse
 * counts as mentioning it (the caller then pins the entry to its path: the safe answer).
 * Twin: Loadout::CompileCache::ISeqBinary.mentioned_outside_objects? (layout described there).
 */
#include "loadout.h"

#include <stdint.h>
#include <string.h>

#define IBF_HEADER_SIZE 36
#define IBF_T_STRING 0x05

static uint32_t
read_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v); /* native endian, as compile.c writes it */
    return v;
}

/* compile.c's "small value" at *pos (advanced past it); -1 when it runs past +len+. */
static long
small_value(const unsigned char *buf, long len, long *pos)
{
    if (*pos >= len) return -1;
    unsigned int c = buf[*pos];
    int n = (c & 1) ? 1 : c == 0 ? 9 : __builtin_ctz(c) + 1;
    if (*pos + n > len) return -1;
    uint64_t x = n == 9 ? 0 : (c >> n);
    for (int i = 1; i < n; i++) x = (x << 8) | buf[*pos + i];
    *pos += n;
    return x > (uint64_t)LONG_MAX ? -1 : (long)x;
}

/* Whether the object list holds a String object whose bytes are exactly buf[at, stop). */
static int
whole_string_at(const unsigned char *buf, long len, const unsigned char *list, uint32_t count, long at, long stop)
{
    /* The last object starting at or before +at+ (offsets grow with the index). */
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((long)read_u32(list + 4 * (size_t)mid) > at) hi = mid;
        else lo = mid + 1;
    }
    if (lo == 0) return 0;
    long start = read_u32(list + 4 * (size_t)(lo - 1));
    if (start >= len) return 0;
    unsigned int header = buf[start];
    if ((header & 0x1f) != IBF_T_STRING || (header & 0x20) != 0) return 0;

    long pos = start + 1;
    if (small_value(buf, len, &pos) < 0) return 0; /* encindex */
    long n = small_value(buf, len, &pos);
    if (n < 0 || pos > len - n) return 0;
    return pos == at && pos + n == stop;
}

/* memmem, portably: the first +n+-byte match of +needle+ in buf[0, len), or NULL. */
static const unsigned char *
find_bytes(const unsigned char *buf, long len, const unsigned char *needle, long n)
{
    const unsigned char *p = buf, *end = buf + len;
    while (end - p >= n) {
        p = memchr(p, needle[0], (size_t)(end - p - n + 1));
        if (!p) return NULL;
        if (memcmp(p, needle, (size_t)n) == 0) return p;
        p++;
    }
    return NULL;
}

static VALUE
native_ibf_mentioned_outside(VALUE self, VALUE binary, VALUE needle)
{
    StringValue(binary);
    StringValue(needle);
    const unsigned char *buf = (const unsigned char *)RSTRING_PTR(binary);
    long len = RSTRING_LEN(binary), nlen = RSTRING_LEN(needle);
    if (nlen == 0) return Qfalse;
    if (len < IBF_HEADER_SIZE || memcmp(buf, "YARB", 4) != 0) return Qtrue;

    uint32_t count = read_u32(buf + 24), list_offset = read_u32(buf + 32);
    if (list_offset > (uint64_t)len || (uint64_t)count * 4 > (uint64_t)len - list_offset) return Qtrue;
    const unsigned char *list = buf + list_offset;

    const unsigned char *n = (const unsigned char *)RSTRING_PTR(needle);
    long at = 0;
    while (at <= len - nlen) {
        const unsigned char *hit = find_bytes(buf + at, len - at, n, nlen);
        if (!hit) break;
        long found = hit - buf;
        if (!whole_string_at(buf, len, list, count, found, found + nlen)) return Qtrue;
        at = found + nlen;
    }
    RB_GC_GUARD(binary);
    RB_GC_GUARD(needle);
    return Qfalse;
}

void
lo_ibf_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "ibf_mentioned_outside", native_ibf_mentioned_outside, 2);
}
