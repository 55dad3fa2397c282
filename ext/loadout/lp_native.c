/*
 * Ruby binding of lp_table.c, registered on Loadout::Native:
 *   lp_listing(files)            -> LoadPathListing  (files: "rel\0rel\0...", copied)
 *   lp_table(listings, bases)    -> LoadPathTable    (listings: [LoadPathListing | nil], bases: [String | nil])
 *   lp_listing_size(listing)     -> Integer
 *   lp_dirs_fresh(base, dirs, mtimes) -> true when every dir still has its recorded mtime
 *   lp_dir_changed(base, dirs, mtimes, dir) -> whether the deepest recorded dir on the way to
 *                                dir changed
 *   lp_changed_dirs(load_dirs, dir) -> the LoadDirs for which lp_dir_changed holds, or nil
 * The Ruby twins live in lib/loadout/load_path/ruby_index.rb.
 */
#include "lp_native.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static VALUE cListing, cTable;

static void
listing_free(void *ptr)
{
    lo_lp_listing *l = ptr;
    lo_lp_listing_free(l);
    xfree(l);
}

static size_t
listing_memsize(const void *ptr)
{
    const lo_lp_listing *l = ptr;
    return sizeof(*l) + l->files_len + (size_t)l->nfiles * 2 * sizeof(uint32_t);
}

static const rb_data_type_t listing_type = {
    "Loadout::Native::LoadPathListing",
    { NULL, listing_free, listing_memsize, NULL, { NULL } },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE
native_lp_listing(VALUE self, VALUE files)
{
    StringValue(files);
    lo_lp_listing *l;
    VALUE obj = TypedData_Make_Struct(cListing, lo_lp_listing, &listing_type, l);
    int err = lo_lp_listing_init(l, RSTRING_PTR(files), (size_t)RSTRING_LEN(files));
    if (err == ENOMEM) rb_memerror();
    if (err) rb_raise(rb_eArgError, "a listing is NUL-terminated non-empty names");
    RB_GC_GUARD(files);
    return obj;
}

static VALUE
native_lp_listing_size(VALUE self, VALUE obj)
{
    lo_lp_listing *l = rb_check_typeddata(obj, &listing_type);
    return UINT2NUM(l->nfiles);
}

static void
index_mark(void *ptr)
{
    lo_lp_index *ix = ptr;
    rb_gc_mark(ix->listings);
    rb_gc_mark(ix->bases);
}

static void
index_free(void *ptr)
{
    lo_lp_index *ix = ptr;
    lo_lp_table_free(&ix->table);
    xfree(ix);
}

static size_t
index_memsize(const void *ptr)
{
    const lo_lp_index *ix = ptr;
    return sizeof(*ix) + (ix->table.mask + 1) * sizeof(lo_lp_slot);
}

static const rb_data_type_t index_type = {
    "Loadout::Native::LoadPathTable",
    { index_mark, index_free, index_memsize, NULL, { NULL } },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

lo_lp_index *
lo_lp_index_get(VALUE obj)
{
    return rb_check_typeddata(obj, &index_type);
}

static lo_lp_listing lo_empty_listing; /* stands in for opaque positions: holds nothing */

static VALUE
native_lp_table(VALUE self, VALUE listings, VALUE bases)
{
    Check_Type(listings, T_ARRAY);
    Check_Type(bases, T_ARRAY);
    long count = RARRAY_LEN(listings);
    if (RARRAY_LEN(bases) != count) rb_raise(rb_eArgError, "listings and bases differ in length");

    lo_lp_index *ix;
    VALUE obj = TypedData_Make_Struct(cTable, lo_lp_index, &index_type, ix);
    ix->listings = rb_ary_freeze(rb_ary_dup(listings));
    ix->bases = rb_ary_freeze(rb_ary_dup(bases));
    ix->count = count;
    ix->first_opaque = count;

    lo_lp_listing **list = ALLOC_N(lo_lp_listing *, count ? count : 1);
    for (long i = 0; i < count; i++) {
        VALUE l = RARRAY_AREF(listings, i);
        VALUE b = RARRAY_AREF(bases, i);
        if (NIL_P(l)) {
            if (ix->first_opaque == count) ix->first_opaque = i;
            list[i] = &lo_empty_listing;
            continue;
        }
        if (!RB_TYPE_P(b, T_STRING)) {
            xfree(list);
            rb_raise(rb_eArgError, "a listed position needs a base String");
        }
        list[i] = rb_check_typeddata(l, &listing_type);
    }
    int err = lo_lp_table_build(&ix->table, list, (size_t)count);
    xfree(list);
    if (err) rb_memerror();
    return obj;
}

static int64_t
mtime_ns(const struct stat *st)
{
#if defined(__APPLE__)
    return (int64_t)st->st_mtimespec.tv_sec * 1000000000 + st->st_mtimespec.tv_nsec;
#else
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
#endif
}

/* Every directory in +dirs+ ("rel\0rel\0", "" being +base+ itself) is still a directory with
 * the mtime (ns) at the same index of +mtimes+ (packed native int64). One stat per directory. */
static VALUE
native_lp_dirs_fresh(VALUE self, VALUE base, VALUE dirs, VALUE mtimes)
{
    StringValue(base);
    StringValue(dirs);
    StringValue(mtimes);
    long blen = RSTRING_LEN(base);
    const char *p = RSTRING_PTR(dirs), *end = p + RSTRING_LEN(dirs);
    long count = RSTRING_LEN(mtimes) / (long)sizeof(int64_t);
    char path[4096];
    if (blen + 2 > (long)sizeof(path)) return Qfalse;
    memcpy(path, RSTRING_PTR(base), (size_t)blen);

    for (long i = 0; i < count; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        if (!nul) return Qfalse;
        size_t rlen = (size_t)(nul - p);
        size_t at = (size_t)blen;
        if (rlen) {
            if (at + 1 + rlen + 1 > sizeof(path)) return Qfalse;
            path[at++] = '/';
            memcpy(path + at, p, rlen);
            at += rlen;
        }
        path[at] = '\0';
        int64_t want;
        memcpy(&want, RSTRING_PTR(mtimes) + i * (long)sizeof(int64_t), sizeof(want));
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || mtime_ns(&st) != want) return Qfalse;
        p = nul + 1;
    }
    return p == end ? Qtrue : Qfalse;
}

/* Whether a file under +dir+ (relative, "" for +base+ itself) may have appeared since the listing
 * recorded +dirs+ / +mtimes+ (as lp_dirs_fresh takes them): one stat, of the deepest recorded
 * directory on the way to +dir+ (creating a directory changes its parent's mtime). Allocates
 * nothing. (A miss asks it of every app directory on $LOAD_PATH at once: lp_changed_dirs.) */
static int
dir_changed(VALUE base, VALUE dirs, VALUE mtimes, const char *want, long wlen)
{
    const char *p = RSTRING_PTR(dirs), *end = p + RSTRING_LEN(dirs);
    long count = RSTRING_LEN(mtimes) / (long)sizeof(int64_t);
    long best = -1, best_len = -1;
    const char *best_name = NULL;

    for (long i = 0; i < count && p < end; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        if (!nul) return 1;
        long n = nul - p;
        /* "" (the root), dir itself, or an ancestor of it ("a" for "a/b") */
        if (n > best_len && (n == 0 || (n <= wlen && memcmp(p, want, (size_t)n) == 0 && (n == wlen || want[n] == '/')))) {
            best = i;
            best_len = n;
            best_name = p;
        }
        p = nul + 1;
    }
    if (best < 0) return 1;

    char path[4096];
    long blen = RSTRING_LEN(base);
    if (blen + 1 + best_len + 1 > (long)sizeof(path)) return 1;
    memcpy(path, RSTRING_PTR(base), (size_t)blen);
    if (best_len) {
        path[blen] = '/';
        memcpy(path + blen + 1, best_name, (size_t)best_len);
        path[blen + 1 + best_len] = '\0';
    } else {
        path[blen] = '\0';
    }
    int64_t recorded;
    memcpy(&recorded, RSTRING_PTR(mtimes) + best * (long)sizeof(int64_t), sizeof(recorded));
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 1;
    return mtime_ns(&st) != recorded;
}

static VALUE
native_lp_dir_changed(VALUE self, VALUE base, VALUE dirs, VALUE mtimes, VALUE dir)
{
    StringValue(base);
    StringValue(dirs);
    StringValue(mtimes);
    StringValue(dir);
    return dir_changed(base, dirs, mtimes, RSTRING_PTR(dir), RSTRING_LEN(dir)) ? Qtrue : Qfalse;
}

static ID id_iv_base, id_iv_dirs, id_iv_mtimes;

/* The load dirs of +list+ (LoadDir objects: their @base, @dirs and @mtimes) that may have gained
 * a file under +dir+ since they were listed, as LoadDir#maybe_changed_for? says of each (a dir
 * listed as missing: whether it exists now); nil when none did. One loop and one stat per dir
 * for what a miss asks of every app directory on $LOAD_PATH (the Ruby twin:
 * RubyIndex.changed_dirs). Allocates nothing when nothing changed. */
static VALUE
native_lp_changed_dirs(VALUE self, VALUE list, VALUE dir)
{
    Check_Type(list, T_ARRAY);
    StringValue(dir);
    VALUE out = Qnil;
    for (long i = 0; i < RARRAY_LEN(list); i++) {
        VALUE d = RARRAY_AREF(list, i);
        VALUE base = rb_ivar_get(d, id_iv_base), dirs = rb_ivar_get(d, id_iv_dirs);
        StringValue(base);
        int changed;
        if (NIL_P(dirs) || (StringValue(dirs), RSTRING_LEN(dirs) == 0)) {
            /* listed as missing (File.directory? in the twin): changed once it exists */
            char path[4096];
            long blen = RSTRING_LEN(base);
            struct stat st;
            if (blen + 1 > (long)sizeof(path) || memchr(RSTRING_PTR(base), '\0', (size_t)blen)) {
                changed = 1;
            } else {
                memcpy(path, RSTRING_PTR(base), (size_t)blen);
                path[blen] = '\0';
                changed = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
            }
        } else {
            VALUE mtimes = rb_ivar_get(d, id_iv_mtimes);
            StringValue(mtimes);
            changed = dir_changed(base, dirs, mtimes, RSTRING_PTR(dir), RSTRING_LEN(dir));
        }
        if (changed) {
            if (NIL_P(out)) out = rb_ary_new();
            rb_ary_push(out, d);
        }
    }
    return out;
}

void
lo_lp_native_init(VALUE mNative)
{
    cListing = rb_define_class_under(mNative, "LoadPathListing", rb_cObject);
    rb_undef_alloc_func(cListing);
    cTable = rb_define_class_under(mNative, "LoadPathTable", rb_cObject);
    rb_undef_alloc_func(cTable);
    rb_define_module_function(mNative, "lp_listing", native_lp_listing, 1);
    rb_define_module_function(mNative, "lp_listing_size", native_lp_listing_size, 1);
    rb_define_module_function(mNative, "lp_table", native_lp_table, 2);
    rb_define_module_function(mNative, "lp_dirs_fresh", native_lp_dirs_fresh, 3);
    rb_define_module_function(mNative, "lp_dir_changed", native_lp_dir_changed, 4);
    rb_define_module_function(mNative, "lp_changed_dirs", native_lp_changed_dirs, 2);
    id_iv_base = rb_intern("@base");
    id_iv_dirs = rb_intern("@dirs");
    id_iv_mtimes = rb_intern("@mtimes");
}
