/*
 * Ruby binding of digest.c, registered on Loadout::Native:
 *   xxh64(string, seed) -> Integer
 *   file_xxh64(path, seed) -> Integer, or nil when the file cannot be read
 *   file_identity(path) -> [size, mtime_ns, ctime_ns, ino, dev], or nil when stat fails
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

void
lo_digest_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "xxh64", native_xxh64, 2);
    rb_define_module_function(mNative, "file_xxh64", native_file_xxh64, 2);
    rb_define_module_function(mNative, "file_identity", native_file_identity, 1);
}
