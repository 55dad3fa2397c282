/*
 * Ruby binding of scan.c: Loadout::Native.scan(root, exts, ignore_names, ignore_paths)
 *   -> [files, dirs, dir_mtimes, errors]
 * Arguments are checked by Loadout::Scan before they get here.
 */
#include "loadout.h"
#include "scan.h"

#include "ruby/encoding.h"
#include <errno.h>
#include <string.h>

typedef struct {
    lo_scan_state state;
    VALUE files, dirs, mtimes, errors;
} scan_run;

static VALUE sym_loop, sym_invalid_encoding;

static void
on_dir(void *ctx, const char *rel, size_t len, int64_t mtime_ns)
{
    scan_run *r = ctx;
    rb_ary_push(r->dirs, rb_utf8_str_new(rel, (long)len));
    rb_ary_push(r->mtimes, LL2NUM(mtime_ns));
}

static void
on_file(void *ctx, const char *rel, size_t len)
{
    scan_run *r = ctx;
    rb_ary_push(r->files, rb_utf8_str_new(rel, (long)len));
}

static void
on_error(void *ctx, const char *rel, size_t len, int reason)
{
    scan_run *r = ctx;
    VALUE why;
    switch (reason) {
    case LO_SCAN_LOOP: why = sym_loop; break;
    case LO_SCAN_INVALID_NAME: why = sym_invalid_encoding; break;
    default: why = INT2FIX(reason); break; /* Loadout::Scan maps errno numbers to names */
    }
    VALUE path = reason == LO_SCAN_INVALID_NAME ? rb_str_new(rel, (long)len) : rb_utf8_str_new(rel, (long)len);
    rb_ary_push(r->errors, rb_assoc_new(path, why));
}

static void
fill_strs(lo_scan_strs *out, VALUE ary, const char **ptrs, size_t *lens)
{
    out->count = (size_t)RARRAY_LEN(ary);
    out->ptrs = ptrs;
    out->lens = lens;
    for (size_t i = 0; i < out->count; i++) {
        VALUE s = RARRAY_AREF(ary, (long)i);
        ptrs[i] = RSTRING_PTR(s);
        lens[i] = (size_t)RSTRING_LEN(s);
    }
}

static VALUE
run_body(VALUE arg)
{
    scan_run *r = (scan_run *)arg;
    if (lo_scan_run(&r->state) < 0) rb_memerror();
    return Qnil;
}

static VALUE
run_release(VALUE arg)
{
    lo_scan_release(&((scan_run *)arg)->state);
    return Qnil;
}

static VALUE
lo_native_scan(VALUE self, VALUE root, VALUE exts, VALUE ignore_names, VALUE ignore_paths)
{
    Check_Type(root, T_STRING);
    Check_Type(exts, T_ARRAY);
    Check_Type(ignore_names, T_ARRAY);
    Check_Type(ignore_paths, T_ARRAY);
    for (long i = 0; i < RARRAY_LEN(exts); i++) Check_Type(RARRAY_AREF(exts, i), T_STRING);
    for (long i = 0; i < RARRAY_LEN(ignore_names); i++) Check_Type(RARRAY_AREF(ignore_names, i), T_STRING);
    for (long i = 0; i < RARRAY_LEN(ignore_paths); i++) Check_Type(RARRAY_AREF(ignore_paths, i), T_STRING);

    /* Frozen copies keep the argument strings alive and unchanged for the whole walk. */
    root = rb_str_new_frozen(root);
    exts = rb_ary_dup(exts);
    ignore_names = rb_ary_dup(ignore_names);
    ignore_paths = rb_ary_dup(ignore_paths);

    long n = RARRAY_LEN(exts) + RARRAY_LEN(ignore_names) + RARRAY_LEN(ignore_paths) + 1;
    const char **ptrs = ALLOCA_N(const char *, n);
    size_t *lens = ALLOCA_N(size_t, n);

    scan_run r;
    memset(&r, 0, sizeof(r));
    r.state.root = StringValueCStr(root);
    r.state.root_len = (size_t)RSTRING_LEN(root);
    fill_strs(&r.state.exts, exts, ptrs, lens);
    size_t off = r.state.exts.count;
    fill_strs(&r.state.ignore_names, ignore_names, ptrs + off, lens + off);
    off += r.state.ignore_names.count;
    fill_strs(&r.state.ignore_paths, ignore_paths, ptrs + off, lens + off);
    r.state.visitor = (lo_scan_visitor){ &r, on_dir, on_file, on_error };
    r.files = rb_ary_new();
    r.dirs = rb_ary_new();
    r.mtimes = rb_ary_new();
    r.errors = rb_ary_new();

    rb_ensure(run_body, (VALUE)&r, run_release, (VALUE)&r);
    RB_GC_GUARD(root);
    RB_GC_GUARD(exts);
    RB_GC_GUARD(ignore_names);
    RB_GC_GUARD(ignore_paths);
    return rb_ary_new_from_args(4, r.files, r.dirs, r.mtimes, r.errors);
}

void
lo_scan_native_init(VALUE mNative)
{
    sym_loop = ID2SYM(rb_intern("loop"));
    sym_invalid_encoding = ID2SYM(rb_intern("invalid_encoding"));
    rb_define_module_function(mNative, "scan", lo_native_scan, 4);
}
