/*
 * Ruby binding of digest.c, registered on Loadout::Native:
 *   xxh64(string, seed) -> Integer
 *   file_xxh64(path, seed) -> Integer, or nil when the file cannot be read
 *   file_identity(path) -> [size, mtime_ns, ctime_ns, ino, dev], or nil when stat fails
 *   xxh64_matches(str, offset, len, digest_offset) -> true when XXH64 of str[offset, len] equals
 *     the little-endian u64 stored at str[digest_offset, 8] (false when a range is out of bounds);
 *     checks a cached payload without slicing it or allocating a Bignum
 *   cc_fresh_payload, cc_revalidated_payload: the compile cache's one-call hit and revalidation
 *     (documented at each function below)
 * Arguments are checked by Loadout::CompileCache::Digest before they get here.
 */
#include "loadout.h"
#include "digest.h"

#include <ruby/encoding.h>

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

/*
 * cc_fresh_payload(entry, path, version, racy_ns, verbose, stat_record) -> the payload when
 * lo_cc_fresh_payload says the entry (or its stat record, a String or nil) makes it a fresh hit
 * for path, else nil. nil too for anything it does not handle (a path with a NUL byte, racy_ns
 * not a Fixnum >= 0). A frozen entry gives a slice that shares its bytes; an unfrozen one (the
 * caller's own, fresh from the store) becomes the payload itself: moved to its front in place,
 * no second object, and the caller may free it once it is done with it. Untouched on nil.
 * Twin: CompileCache::Entry.fresh_payload.
 */
static VALUE
native_cc_fresh_payload(VALUE self, VALUE entry, VALUE path, VALUE version, VALUE racy_ns, VALUE verbose,
                        VALUE record)
{
    if (!RB_TYPE_P(entry, T_STRING) || !RB_TYPE_P(path, T_STRING) || !FIXNUM_P(racy_ns) || FIX2LONG(racy_ns) < 0)
        return Qnil;
    if (!NIL_P(record) && !RB_TYPE_P(record, T_STRING)) return Qnil;
    const char *p = RSTRING_PTR(path);
    long plen = RSTRING_LEN(path);
    if (memchr(p, 0, (size_t)plen)) return Qnil;
    p = StringValueCStr(path);
    size_t off, len;
    int in_place = !OBJ_FROZEN(entry);
    if (!in_place) entry = rb_str_new_frozen(entry); /* the slice below shares its bytes */
    const unsigned char *rec = NIL_P(record) ? NULL : (const unsigned char *)RSTRING_PTR(record);
    size_t rec_len = NIL_P(record) ? 0 : (size_t)RSTRING_LEN(record);
    if (!lo_cc_fresh_payload((const unsigned char *)RSTRING_PTR(entry), (size_t)RSTRING_LEN(entry),
                             (unsigned)NUM2UINT(version), p, (size_t)plen, (int64_t)FIX2LONG(racy_ns), RTEST(verbose),
                             rec, rec_len, &off, &len))
        return Qnil;
    RB_GC_GUARD(record);
    if (!in_place) return rb_str_subseq(entry, (long)off, (long)len);
    rb_str_modify(entry); /* unshares it if it was shared: the move below is only ever ours */
    char *bytes = RSTRING_PTR(entry);
    memmove(bytes, bytes + off, len);
    rb_str_set_len(entry, (long)len);
    return entry;
}

/*
 * cc_revalidated_payload(entry, path, version, verbose, record_out) -> the payload slice when
 * lo_cc_revalidated_payload vouches for entry by content; record_out (a String) is replaced by
 * the 64-byte stat record to append. nil, record_out untouched, otherwise. Twin:
 * CompileCache::Entry.revalidated_payload.
 */
static VALUE
native_cc_revalidated_payload(VALUE self, VALUE entry, VALUE path, VALUE version, VALUE verbose, VALUE record_out)
{
    if (!RB_TYPE_P(entry, T_STRING) || !RB_TYPE_P(path, T_STRING) || !RB_TYPE_P(record_out, T_STRING)) return Qnil;
    rb_check_frozen(record_out);
    const char *p = RSTRING_PTR(path);
    long plen = RSTRING_LEN(path);
    if (memchr(p, 0, (size_t)plen)) return Qnil;
    p = StringValueCStr(path);
    size_t off, len;
    unsigned char rec[64];
    entry = rb_str_new_frozen(entry); /* the slice below shares its bytes */
    if (!lo_cc_revalidated_payload((const unsigned char *)RSTRING_PTR(entry), (size_t)RSTRING_LEN(entry),
                                   (unsigned)NUM2UINT(version), p, (size_t)plen, RTEST(verbose), rec, &off, &len))
        return Qnil;
    rb_str_resize(record_out, 0);
    rb_enc_associate(record_out, rb_ascii8bit_encoding());
    rb_str_cat(record_out, (const char *)rec, sizeof(rec));
    return rb_str_subseq(entry, (long)off, (long)len);
}

void
lo_digest_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "cc_fresh_payload", native_cc_fresh_payload, 6);
    rb_define_module_function(mNative, "cc_revalidated_payload", native_cc_revalidated_payload, 5);
    rb_define_module_function(mNative, "xxh64", native_xxh64, 2);
    rb_define_module_function(mNative, "file_xxh64", native_file_xxh64, 2);
    rb_define_module_function(mNative, "file_identity", native_file_identity, 1);
    rb_define_module_function(mNative, "xxh64_matches", native_xxh64_matches, 4);
}
