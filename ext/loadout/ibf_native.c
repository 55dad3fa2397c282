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
 *
 *   ibf_relocate(binary, [[from, to], ...])
 *
 * A copy of +binary+ in which every whole String object whose bytes are a +from+ has the bytes
 * of its +to+ (same header byte and encoding): the paths a binary was compiled at, pointed at
 * where the file is now. The new objects and a new offset list are appended, so nothing moves.
 * Returns +binary+ itself when no object matched, nil when it cannot be parsed. Loadout's self
 * cache relocates loadout's own files with it before any of loadout's Ruby can (they are what it
 * serves); its output is byte for byte ISeqBinary.rewrite(binary, replacements)'s, the twin.
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

/* compile.c's "small value" encoding of +x+ into out (up to 9 bytes); returns its length. */
static int
put_small_value(unsigned char *out, uint64_t x)
{
    if (x < 0x80) {
        out[0] = (unsigned char)((x << 1) | 1);
        return 1;
    }
    unsigned char tail[8];
    int n = 0;
    while (n < 8 && (x >> (7 - n)) > 0) {
        tail[7 - n] = (unsigned char)(x & 0xff);
        x >>= 8;
        n++;
    }
    out[0] = (unsigned char)((((x << 1) | 1) << n) & 0xff);
    memcpy(out + 1, tail + 8 - n, (size_t)n);
    return n + 1;
}

static void
pad4(VALUE out)
{
    static const char zeros[4] = { 0, 0, 0, 0 };
    long rem = RSTRING_LEN(out) % 4;
    if (rem) rb_str_cat(out, zeros, 4 - rem);
}

static VALUE
native_ibf_relocate(VALUE self, VALUE binary, VALUE pairs)
{
    StringValue(binary);
    Check_Type(pairs, T_ARRAY);
    long npairs = RARRAY_LEN(pairs);
    for (long k = 0; k < npairs; k++) {
        VALUE pair = RARRAY_AREF(pairs, k);
        Check_Type(pair, T_ARRAY);
        if (RARRAY_LEN(pair) != 2 || !RB_TYPE_P(RARRAY_AREF(pair, 0), T_STRING) ||
            !RB_TYPE_P(RARRAY_AREF(pair, 1), T_STRING)) {
            rb_raise(rb_eArgError, "ibf_relocate: pairs of [from, to] Strings");
        }
    }

    const unsigned char *buf = (const unsigned char *)RSTRING_PTR(binary);
    long len = RSTRING_LEN(binary);
    if (len < IBF_HEADER_SIZE || memcmp(buf, "YARB", 4) != 0) return Qnil;
    if ((long)read_u32(buf + 12) != len || read_u32(buf + 16) != 0) return Qnil; /* size, extra_size */
    uint32_t count = read_u32(buf + 24), list_offset = read_u32(buf + 32);
    if (list_offset > (uint64_t)len || (uint64_t)count * 4 > (uint64_t)len - list_offset) return Qnil;
    const unsigned char *list = buf + list_offset;

    VALUE out = Qnil;
    uint32_t *offsets = NULL;
    /* The twin's order: each +from+ in turn, its objects by ascending index. */
    for (long k = 0; k < npairs; k++) {
        VALUE from = RARRAY_AREF(RARRAY_AREF(pairs, k), 0);
        VALUE to = RARRAY_AREF(RARRAY_AREF(pairs, k), 1);
        long flen = RSTRING_LEN(from);
        for (uint32_t i = 0; i < count; i++) {
            long start = read_u32(list + 4 * (size_t)i);
            if (start >= list_offset) continue;
            unsigned int header = buf[start];
            if ((header & 0x1f) != IBF_T_STRING || (header & 0x20) != 0) continue;
            long pos = start + 1;
            long encindex = small_value(buf, list_offset, &pos);
            long n = small_value(buf, list_offset, &pos);
            if (encindex < 0 || n < 0 || n != flen || pos > list_offset - n) continue;
            if (memcmp(buf + pos, RSTRING_PTR(from), (size_t)n) != 0) continue;
            if (offsets && offsets[i] != read_u32(list + 4 * (size_t)i)) continue; /* replaced already */

            if (NIL_P(out)) {
                offsets = ALLOC_N(uint32_t, count ? count : 1);
                for (uint32_t j = 0; j < count; j++) offsets[j] = read_u32(list + 4 * (size_t)j);
                out = rb_str_buf_new(len + 256);
                rb_str_cat(out, (const char *)buf, list_offset);
            }
            pad4(out);
            offsets[i] = (uint32_t)RSTRING_LEN(out);
            unsigned char head[19];
            head[0] = (unsigned char)header;
            int h = 1 + put_small_value(head + 1, (uint64_t)encindex);
            h += put_small_value(head + h, (uint64_t)RSTRING_LEN(to));
            rb_str_cat(out, (const char *)head, h);
            rb_str_cat(out, RSTRING_PTR(to), RSTRING_LEN(to));
        }
    }
    if (NIL_P(out)) {
        RB_GC_GUARD(binary);
        return binary;
    }
    pad4(out);
    uint32_t new_list = (uint32_t)RSTRING_LEN(out);
    rb_str_cat(out, (const char *)offsets, (long)count * 4);
    xfree(offsets);
    unsigned char *o = (unsigned char *)RSTRING_PTR(out);
    uint32_t size = (uint32_t)RSTRING_LEN(out);
    memcpy(o + 12, &size, 4);
    memcpy(o + 32, &new_list, 4);
    RB_GC_GUARD(binary);
    RB_GC_GUARD(pairs);
    return out;
}

void
lo_ibf_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "ibf_relocate", native_ibf_relocate, 2);
    rb_define_module_function(mNative, "ibf_mentioned_outside", native_ibf_mentioned_outside, 2);
}
