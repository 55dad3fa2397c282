/*
 * Ruby binding of digest.c, registered on Loadout::Native:
 *   xxh64(string, seed) -> Integer
 *   file_xxh64(path, seed) -> Integer, or nil when the file cannot be read
 *   file_identity(path) -> [size, mtime_ns, ctime_ns, ino, dev], or nil when stat fails
 *   xxh64_matches(str, offset, len, digest_offset) -> true when XXH64 of str[offset, len] equals
 *     the little-endian u64 stored at str[digest_offset, 8] (false when a range is out of bounds);
 *     checks a cached payload without slicing it or allocating a Bignum
 * Arguments are checked by Loadout::CompileCache::Digest before they get here.
 */
#include "loadout.h"
#include "digest.h"

#include <string.h>

static VALUE
native_xxh64(VALUE self, VALUE str, VALUE seed)
{
    StringValue(str);
    return ULL2NUM(lo_xxh64(RSTRING_PTR(str), (size_t)RSTRING_LEN(str), NUM2ULL(seed)));
}

static VALUE
native_file_xxh64(VALUE self, VALUE path, VALUE seed)
{
    uint64_t out;
    FilePathValue(path);
    if (lo_file_xxh64(StringValueCStr(path), NUM2ULL(seed), &out) != 0) return Qnil;
    return ULL2NUM(out);
}

static VALUE
native_file_identity(VALUE self, VALUE path)
{
    lo_file_id id;
    FilePathValue(path);
    if (lo_file_identity(StringValueCStr(path), &id) != 0) return Qnil;
    return rb_ary_new_from_args(5, LL2NUM(id.size), LL2NUM(id.mtime_ns), LL2NUM(id.ctime_ns),
                                ULL2NUM(id.ino), ULL2NUM(id.dev));
}

static VALUE
native_xxh64_matches(VALUE self, VALUE str, VALUE offset, VALUE len, VALUE digest_offset)
{
    StringValue(str);
    long size = RSTRING_LEN(str);
    long off = NUM2LONG(offset), n = NUM2LONG(len), at = NUM2LONG(digest_offset);
    if (off < 0 || n < 0 || at < 0 || off > size || n > size - off || at > size - 8) return Qfalse;

    const unsigned char *p = (const unsigned char *)RSTRING_PTR(str);
    uint64_t stored = 0;
    for (int i = 7; i >= 0; i--) stored = (stored << 8) | p[at + i];
    return lo_xxh64(p + off, (size_t)n, 0) == stored ? Qtrue : Qfalse;
}

void
lo_digest_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "xxh64", native_xxh64, 2);
    rb_define_module_function(mNative, "file_xxh64", native_file_xxh64, 2);
    rb_define_module_function(mNative, "file_identity", native_file_identity, 1);
    rb_define_module_function(mNative, "xxh64_matches", native_xxh64_matches, 4);
}
