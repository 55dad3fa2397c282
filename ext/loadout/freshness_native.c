/*
 * Ruby binding of freshness.c, registered on Loadout::Native:
 *
 *   cc_judge(entry, path, version, racy_ns, verbose, revalidate, lookup, key)
 *
 * Judges a stored compile cache entry against the file at +path+ (lo_fresh_judge). +racy_ns+ is
 * a Fixnum (-1: trusted, no stat); +lookup+ is nil or a callable whose call(key) returns the
 * stat record's bytes or nil, called only when the entry's own stat does not vouch.
 *
 * The common answers, fresh at this very path by its stat or by its stat record, are the payload
 * alone: a frozen +entry+ gives a slice that shares its bytes; an unfrozen one (the caller's own,
 * fresh from the store) becomes the payload itself, moved to its front in place (no second
 * object, no copy; the caller may free it once done with it). Every other answer is [verdict, payload, record, moved]: verdict
 * one of :corrupt, :missing, :stale, :negative, :warns, :fresh, :fresh_by_record, :revalidated;
 * payload (a slice; for :negative the reason) unless corrupt, missing or stale; record, the
 * 64-byte stat record to append, after a content revalidation; moved as in freshness.h.
 * nil for arguments it does not take (the Ruby twin checks them first).
 * Twin: Loadout::CompileCache::Freshness.judge.
 */
#include "loadout.h"
#include "freshness.h"

#include <ruby/encoding.h>

#include <string.h>

static ID id_call;
static VALUE verdicts[LO_FRESH_REVALIDATED + 1];

typedef struct {
    VALUE lookup, key, record;
} record_ctx;

static void
fetch_record(void *p, const unsigned char **rec, size_t *len)
{
    record_ctx *c = p;
    c->record = rb_funcall(c->lookup, id_call, 1, c->key);
    if (RB_TYPE_P(c->record, T_STRING)) {
        *rec = (const unsigned char *)RSTRING_PTR(c->record);
        *len = (size_t)RSTRING_LEN(c->record);
    }
}

static VALUE
native_cc_judge(VALUE self, VALUE entry, VALUE path, VALUE version, VALUE racy_ns, VALUE verbose, VALUE revalidate,
                VALUE lookup, VALUE key)
{
    if (!RB_TYPE_P(entry, T_STRING) || !RB_TYPE_P(path, T_STRING) || !FIXNUM_P(racy_ns) || !FIXNUM_P(version))
        return Qnil;
    const char *p = RSTRING_PTR(path);
    long plen = RSTRING_LEN(path);
    if (memchr(p, 0, (size_t)plen)) return Qnil;
    p = StringValueCStr(path);

    /* Judged where it lies: +entry+ is an argument, so on the machine stack, which pins it (GC
     * compaction moves no object the stack names) while the lookup runs Ruby. */
    record_ctx ctx = { lookup, key, Qnil };
    lo_fresh_result r;
    lo_fresh_judge((const unsigned char *)RSTRING_PTR(entry), (size_t)RSTRING_LEN(entry), (unsigned)FIX2INT(version),
                   p, (size_t)plen, (int64_t)FIX2LONG(racy_ns), RTEST(verbose), RTEST(revalidate),
                   NIL_P(lookup) ? NULL : fetch_record, &ctx, &r);
    RB_GC_GUARD(ctx.record);

    if ((r.verdict == LO_FRESH_BY_STAT || r.verdict == LO_FRESH_BY_RECORD) && !r.moved) {
        if (OBJ_FROZEN(entry)) return rb_str_subseq(entry, (long)r.payload_off, (long)r.payload_len);
        rb_str_modify(entry); /* a String shared with another would be copied first, never changed under it */
        char *b = RSTRING_PTR(entry);
        memmove(b, b + r.payload_off, r.payload_len);
        rb_str_set_len(entry, (long)r.payload_len);
        return entry;
    }
    int has_payload = r.verdict != LO_FRESH_CORRUPT && r.verdict != LO_FRESH_MISSING && r.verdict != LO_FRESH_STALE;
    VALUE payload = has_payload ? rb_str_subseq(entry, (long)r.payload_off, (long)r.payload_len) : Qnil;
    VALUE record = r.has_record ? rb_enc_str_new((const char *)r.record, LO_FRESH_RECORD_SIZE, rb_ascii8bit_encoding())
                                : Qnil;
    return rb_ary_new_from_args(4, verdicts[r.verdict], payload, record, r.moved ? Qtrue : Qfalse);
}

void
lo_freshness_native_init(VALUE mNative)
{
    id_call = rb_intern("call");
    const char *names[] = { "corrupt", "missing", "stale", "negative", "warns", "fresh", "fresh_by_record",
                            "revalidated" };
    for (int i = 0; i <= LO_FRESH_REVALIDATED; i++) {
        verdicts[i] = ID2SYM(rb_intern(names[i]));
    }
    rb_define_module_function(mNative, "cc_judge", native_cc_judge, 8);
    /* Freshness::RACY_NS for SelfCache, which runs before any Ruby of the compile cache loads. */
    rb_define_const(mNative, "CC_RACY_NS", LL2NUM(LO_FRESH_RACY_NS));
}
