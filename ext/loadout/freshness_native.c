/*
 * Ruby bindings of the compile cache's per-hit C, registered on Loadout::Native: the freshness
 * judge (freshness.c) and the store key.
 *
 *   cc_judge(entry, path, version, racy_ns, verbose, revalidate, record) -> Integer
 *
 * Judges a stored compile cache entry against the file at +path+ (lo_fresh_judge) and returns
 * the verdict, a small Integer (Loadout::CompileCache::Freshness: CORRUPT 0, MISSING 1, STALE 2,
 * NEGATIVE 3, WARNS 4, FRESH 5, FRESH_BY_RECORD 6, REVALIDATED 7, UNVOUCHED 8; the three fresh
 * ones plus MOVED 16 when the payload names another place; plus RECORDED 32 when +record+ now
 * holds the file's new stat record, to append). +racy_ns+ is a Fixnum (-1: trusted, no stat);
 * +record+ is nil (the stat record was not looked up: UNVOUCHED when the entry's own stat does
 * not vouch) or a String, empty when there is none; a content revalidation (REVALIDATED, or a
 * NEGATIVE or WARNS entry whose file only moved) replaces its bytes with the new 64-byte record
 * (unless it is frozen).
 *
 * +entry+ is a String the caller owns (not frozen): when the verdict serves its payload at this
 * very place (fresh, by record or revalidated, not moved) or is NEGATIVE (the payload is the
 * reason), it is cut down to the payload in place: the payload starts an entry, so only its length
 * changes (no new object, no copy); otherwise it is left whole. nil for arguments it does not take
 * (the Ruby twin checks them first). Twin: Loadout::CompileCache::Freshness.judge.
 *
 *   cc_key(letter, variant, path, roots, spare) -> String or nil
 *
 * The compile cache's store key for +path+: "cc/<letter>/<variant>/" then, under the deepest of
 * +roots+ (Loadout::CompileCache::Key's [[root bytes ("" for "/"), tag], ...], longest first)
 * containing the path's directory, the root's tag and the path after the root; under none, the
 * whole path. A binary String; nothing else is made. nil for a path that is not ASCII, has no
 * "/" past its first byte, or arguments it does not take: Key#for builds those in Ruby, the
 * reference this must equal (for an ASCII path, comparing bytes with each root is what Key's walk
 * up the directory's parents finds: a root of other bytes, non-ASCII ones included, never
 * contains it).
 *
 * +spare+: nil (the key is a new String), or an Array of Strings a caller gave back
 * (Key#lookup_key / #release): the key is written into the last one, taken out of the Array
 * first, so no other thread can be handed the same String while this caller holds it. A boot
 * looks up one key per file it loads and keeps none of them: with a spare, no object at all.
 */
#include "loadout.h"
#include "freshness.h"

#include <ruby/encoding.h>

#include <string.h>

#define MOVED 16
#define RECORDED 32

static VALUE
native_cc_judge(VALUE self, VALUE entry, VALUE path, VALUE version, VALUE racy_ns, VALUE verbose, VALUE revalidate,
                VALUE record)
{
    if (!RB_TYPE_P(entry, T_STRING) || OBJ_FROZEN(entry) || !RB_TYPE_P(path, T_STRING) || !FIXNUM_P(racy_ns) ||
        !FIXNUM_P(version) || !(NIL_P(record) || RB_TYPE_P(record, T_STRING)))
        return Qnil;
    const char *p = RSTRING_PTR(path);
    long plen = RSTRING_LEN(path);
    if (memchr(p, 0, (size_t)plen)) return Qnil;
    p = StringValueCStr(path);

    lo_fresh_result r;
    lo_fresh_judge((const unsigned char *)RSTRING_PTR(entry), (size_t)RSTRING_LEN(entry), (unsigned)FIX2INT(version),
                   p, (size_t)plen, (int64_t)FIX2LONG(racy_ns), RTEST(verbose), RTEST(revalidate),
                   NIL_P(record) ? NULL : (const unsigned char *)RSTRING_PTR(record),
                   NIL_P(record) ? 0 : (size_t)RSTRING_LEN(record), &r);

    int recorded = r.has_record && r.verdict != LO_FRESH_CORRUPT && !OBJ_FROZEN(record);
    if (recorded) {
        rb_str_modify(record); /* never written through a buffer shared with another String */
        rb_str_resize(record, LO_FRESH_RECORD_SIZE);
        memcpy(RSTRING_PTR(record), r.new_record, LO_FRESH_RECORD_SIZE);
        rb_enc_associate(record, rb_ascii8bit_encoding());
    }
    int served = r.verdict == LO_FRESH_BY_STAT || r.verdict == LO_FRESH_BY_RECORD || r.verdict == LO_FRESH_REVALIDATED;
    if ((served && !r.moved) || r.verdict == LO_FRESH_NEGATIVE) {
        rb_str_modify(entry); /* a String shared with another would be copied first, never changed under it */
        rb_str_set_len(entry, (long)r.payload_len);
    }
    return INT2FIX((int)r.verdict | (served && r.moved ? MOVED : 0) | (recorded ? RECORDED : 0));
}

static VALUE
native_cc_key(VALUE self, VALUE letter, VALUE variant, VALUE path, VALUE roots, VALUE spare)
{
    if (!RB_TYPE_P(letter, T_STRING) || !RB_TYPE_P(variant, T_STRING) || !RB_TYPE_P(path, T_STRING) ||
        !RB_TYPE_P(roots, T_ARRAY) || !rb_enc_str_asciionly_p(path))
        return Qnil;
    const char *p = RSTRING_PTR(path);
    long plen = RSTRING_LEN(path);
    long dlen = plen - 1; /* the last "/" (memrchr is a GNU extension) */
    while (dlen > 0 && p[dlen] != '/') dlen--;
    if (dlen <= 0) return Qnil; /* no directory, or "/": Key's own cases */

    /* The first root (the longest) that is the directory or one of its parents: the same bytes,
     * then the directory's end or a "/". The key takes the root's tag in place of its bytes. */
    const char *tag = NULL;
    long tlen = 0, rest = 0;
    for (long i = 0; i < RARRAY_LEN(roots); i++) {
        VALUE pair = RARRAY_AREF(roots, i);
        if (!RB_TYPE_P(pair, T_ARRAY) || RARRAY_LEN(pair) < 2) return Qnil;
        VALUE root = RARRAY_AREF(pair, 0), t = RARRAY_AREF(pair, 1);
        if (!RB_TYPE_P(root, T_STRING) || !RB_TYPE_P(t, T_STRING)) return Qnil;
        long rlen = RSTRING_LEN(root);
        if (rlen > dlen || p[rlen] != '/' || memcmp(p, RSTRING_PTR(root), (size_t)rlen) != 0) continue;
        tag = RSTRING_PTR(t);
        tlen = RSTRING_LEN(t);
        rest = dlen == rlen + 1 ? dlen : rlen; /* (a directory that is the root and a "/": Key's prefix is the tag) */
        break;
    }

    long llen = RSTRING_LEN(letter), vlen = RSTRING_LEN(variant);
    long klen = 3 + llen + 1 + vlen + 1 + tlen + plen - rest;
    VALUE key = Qnil;
    if (RB_TYPE_P(spare, T_ARRAY) && RARRAY_LEN(spare) > 0) {
        VALUE given = rb_ary_pop(spare); /* (no Ruby runs until the key is returned: no other taker) */
        if (RB_TYPE_P(given, T_STRING) && !OBJ_FROZEN(given) && ENCODING_GET(given) == rb_ascii8bit_encindex()) {
            key = given;
            rb_str_modify(key); /* its own bytes, never a buffer shared with another String */
            if (RSTRING_LEN(key) < klen) rb_str_modify_expand(key, klen - RSTRING_LEN(key));
            rb_str_set_len(key, klen); /* (a shorter key keeps the capacity: no realloc per file) */
        }
    }
    if (NIL_P(key)) key = rb_str_new(NULL, klen); /* binary */
    char *k = RSTRING_PTR(key);
    memcpy(k, "cc/", 3); /* Key::PREFIX */
    k += 3;
    memcpy(k, RSTRING_PTR(letter), (size_t)llen);
    k += llen;
    *k++ = '/';
    memcpy(k, RSTRING_PTR(variant), (size_t)vlen);
    k += vlen;
    *k++ = '/';
    if (tlen) memcpy(k, tag, (size_t)tlen);
    memcpy(k + tlen, p + rest, (size_t)(plen - rest));
    return key;
}

void
lo_freshness_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "cc_key", native_cc_key, 5);
    rb_define_module_function(mNative, "cc_judge", native_cc_judge, 7);
    /* Freshness::RACY_NS for SelfCache, which runs before any Ruby of the compile cache loads. */
    rb_define_const(mNative, "CC_RACY_NS", LL2NUM(LO_FRESH_RACY_NS));
}
