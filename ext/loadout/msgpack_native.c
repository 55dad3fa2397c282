/*
 * Reading the YAML/JSON caches' MessagePack entries, registered on Loadout::Native:
 *
 *   msgpack_load(bytes, freeze) -> value
 *
 * The value the msgpack gem's MessagePack::Factory#load(bytes, freeze:) returns for what the
 * compile cache stores with it (CompileCache::Serializer): nil, true, false, Integers, Floats,
 * Strings (str: UTF-8, bin: ASCII-8BIT), Arrays, Hashes, and Symbols as extension type 0 (their
 * UTF-8 name). With +freeze+ every String, Array and Hash is frozen (Strings deduplicated, as the
 * gem does). Raises ArgumentError on anything else: another extension type, bytes after the
 * value, a value cut short, nesting deeper than the gem's unpacker allows (EncodingError for a
 * Symbol name that is not UTF-8); the caller then counts the entry as corrupt and lets the
 * parser run.
 *
 * Why not the gem: a warm boot that reads a YAML entry would load it (its Ruby files and its
 * extension) to decode a few maps of strings (figures: CHANGELOG). Entries are still
 * written by the gem (Serializer.dump); the round trip Fidelity checks when a value is stored
 * goes through this decoder, and test/compile_cache/msgpack_native_test.rb holds it to the gem's
 * own reading.
 */
#include "loadout.h"

#include <ruby/encoding.h>
#include <stdint.h>
#include <string.h>

/* msgpack-ruby's unpacker stack (MSGPACK_UNPACKER_STACK_CAPACITY): that many non-empty Arrays
 * and Hashes nested, no more (an empty one is complete when read and takes no place there). */
#define MSGPACK_DEPTH 128
#define SYMBOL_TYPE 0     /* CompileCache::Serializer::SYMBOL_TYPE */

struct reader {
    const unsigned char *p, *end;
    int freeze;
};

NORETURN(static void broken(const char *why));
static void
broken(const char *why)
{
    rb_raise(rb_eArgError, "not a loadout MessagePack value: %s", why);
}

static const unsigned char *
take(struct reader *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) broken("cut short");
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}

static uint64_t
be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* +interned+: a Hash key, which Ruby would freeze and deduplicate anyway (rb_hash_aset of a
 * bare String), and the gem makes one directly: no String to copy and drop per key. */
static VALUE
string(struct reader *r, size_t n, int utf8, int interned)
{
    const char *s = (const char *)take(r, n);
    rb_encoding *enc = utf8 ? rb_utf8_encoding() : rb_ascii8bit_encoding();
    return r->freeze || interned ? rb_enc_interned_str(s, (long)n, enc) : rb_enc_str_new(s, (long)n, enc);
}

static VALUE value(struct reader *r, int depth, int key);

/* +depth+: the non-empty Arrays and Hashes around the one being read. */
static VALUE
array(struct reader *r, size_t n, int depth)
{
    if (n && depth >= MSGPACK_DEPTH) broken("nested too deep");
    if ((size_t)(r->end - r->p) < n) broken("cut short"); /* each element takes a byte at least */
    VALUE ary = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) rb_ary_push(ary, value(r, depth + 1, 0));
    if (r->freeze) rb_obj_freeze(ary);
    return ary;
}

static VALUE
map(struct reader *r, size_t n, int depth)
{
    if (n && depth >= MSGPACK_DEPTH) broken("nested too deep");
    if ((size_t)(r->end - r->p) / 2 < n) broken("cut short");
    VALUE hash = rb_hash_new();
    for (size_t i = 0; i < n; i++) {
        VALUE k = value(r, depth + 1, 1);
        rb_hash_aset(hash, k, value(r, depth + 1, 0));
    }
    if (r->freeze) rb_obj_freeze(hash);
    return hash;
}

static VALUE
ext(struct reader *r, size_t n)
{
    int type = (signed char)*take(r, 1);
    if (type != SYMBOL_TYPE) broken("an extension type other than Symbol");
    const char *s = (const char *)take(r, n);
    return rb_str_intern(rb_enc_str_new(s, (long)n, rb_utf8_encoding()));
}

static VALUE
value(struct reader *r, int depth, int key)
{
    unsigned char b = *take(r, 1);
    if (b <= 0x7f) return INT2FIX(b);
    if (b >= 0xe0) return INT2FIX((signed char)b);
    if (b <= 0x8f) return map(r, b & 0x0f, depth);
    if (b <= 0x9f) return array(r, b & 0x0f, depth);
    if (b <= 0xbf) return string(r, b & 0x1f, 1, key);
    switch (b) {
      case 0xc0: return Qnil;
      case 0xc2: return Qfalse;
      case 0xc3: return Qtrue;
      case 0xc4: return string(r, be(take(r, 1), 1), 0, key);
      case 0xc5: return string(r, be(take(r, 2), 2), 0, key);
      case 0xc6: return string(r, be(take(r, 4), 4), 0, key);
      case 0xc7: return ext(r, be(take(r, 1), 1));
      case 0xc8: return ext(r, be(take(r, 2), 2));
      case 0xc9: return ext(r, be(take(r, 4), 4));
      case 0xca: {
        uint32_t bits = (uint32_t)be(take(r, 4), 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        return DBL2NUM((double)f);
      }
      case 0xcb: {
        uint64_t bits = be(take(r, 8), 8);
        double d;
        memcpy(&d, &bits, sizeof d);
        return DBL2NUM(d);
      }
      case 0xcc: return INT2FIX(be(take(r, 1), 1));
      case 0xcd: return INT2FIX(be(take(r, 2), 2));
      case 0xce: return ULONG2NUM((unsigned long)be(take(r, 4), 4));
      case 0xcf: return ULL2NUM((unsigned long long)be(take(r, 8), 8));
      case 0xd0: return INT2FIX((int8_t)be(take(r, 1), 1));
      case 0xd1: return INT2FIX((int16_t)be(take(r, 2), 2));
      case 0xd2: return LONG2NUM((long)(int32_t)be(take(r, 4), 4));
      case 0xd3: return LL2NUM((long long)(int64_t)be(take(r, 8), 8));
      case 0xd4: return ext(r, 1);
      case 0xd5: return ext(r, 2);
      case 0xd6: return ext(r, 4);
      case 0xd7: return ext(r, 8);
      case 0xd8: return ext(r, 16);
      case 0xd9: return string(r, be(take(r, 1), 1), 1, key);
      case 0xda: return string(r, be(take(r, 2), 2), 1, key);
      case 0xdb: return string(r, be(take(r, 4), 4), 1, key);
      case 0xdc: return array(r, be(take(r, 2), 2), depth);
      case 0xdd: return array(r, be(take(r, 4), 4), depth);
      case 0xde: return map(r, be(take(r, 2), 2), depth);
      case 0xdf: return map(r, be(take(r, 4), 4), depth);
      default: broken("a reserved type byte (0xc1)");
    }
}

static VALUE
native_msgpack_load(VALUE self, VALUE bytes, VALUE freeze)
{
    StringValue(bytes);
    struct reader r;
    r.p = (const unsigned char *)RSTRING_PTR(bytes);
    r.end = r.p + RSTRING_LEN(bytes);
    r.freeze = RTEST(freeze);
    VALUE v = value(&r, 0, 0);
    if (r.p != r.end) broken("bytes after the value");
    RB_GC_GUARD(bytes);
    return v;
}

void
lo_msgpack_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "msgpack_load", native_msgpack_load, 2);
}
