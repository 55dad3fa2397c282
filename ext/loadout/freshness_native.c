/*
 * Ruby binding of freshness.c, registered on Loadout::Native:
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

void
lo_freshness_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "cc_judge", native_cc_judge, 7);
    /* Freshness::RACY_NS for SelfCache, which runs before any Ruby of the compile cache loads. */
    rb_define_const(mNative, "CC_RACY_NS", LL2NUM(LO_FRESH_RACY_NS));
}
