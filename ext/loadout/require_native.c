/*
 * The require hook: Ruby's own C require with the $LOAD_PATH search answered by the index.
 *
 * Where it sits. Loadout::LoadPath::RequireHook puts lo_require in place of every method entry that is
 * Ruby's C require (Kernel#require when Bundler has removed RubyGems' wrapper, RubyGems'
 * Kernel#gem_original_require, Zeitwerk's zeitwerk_original_require alias when Zeitwerk came
 * first, Kernel.require, ...). Every decorator above keeps calling what it called, with the
 * argument it passes, and reaches lo_require where it used to reach Ruby's require. lo_require
 * is a C function under the same name, so frames, backtraces and the argument Ruby sees for a
 * feature it answers itself are Ruby's own.
 *
 * What it does, per call (reading order: lo_require, then classify, then resolve):
 *   1. Anything but a plain String that names a relative, ASCII, searchable feature goes to
 *      rb_require_string() unchanged: exactly what the method entry it replaced did.
 *   2. rb_feature_provided() is Ruby's own loaded-features check, with the arguments
 *      search_required() uses for the same feature (load.c). Where search_required() would
 *      stop at that very check (see already_loaded) the answer is Ruby's: false, without
 *      entering require a second time (a boot requires a loaded feature about as often as a
 *      new one, and each check walks $LOAD_PATH). Any other provided feature (being loaded
 *      right now, or loaded only as an extension) goes to Ruby, which decides.
 *   3. Otherwise the index says which file Ruby's search would find first; rb_require_string()
 *      of its absolute path does the rest (locking, loading, $LOADED_FEATURES, realpath
 *      dedup). A name Ruby's search cannot find raises Ruby's own LoadError. Whatever the index
 *      cannot prove (an item it could not list comes first) goes to Ruby with the feature.
 * Ruby-side state (which listings, refreshing them when $LOAD_PATH changes, the re-check of app
 * directories on a miss) lives in Loadout::LoadPath::State, called back only when needed.
 */
#include "lp_native.h"

#include "ruby/encoding.h"
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LO_MAX_FEATURE 4000

/* Counter slots, in the order Loadout::LoadPath::Index::COUNTERS names them. */
enum {
    LO_C_REQUIRES, LO_C_PROVIDED, LO_C_HITS, LO_C_MISSES, LO_C_UNKNOWN, LO_C_STALE,
    LO_C_NOT_STRING, LO_C_DIRECT, LO_C_ENCODING, LO_C_SHAPE, LO_C_BUSY,
    LO_C_FRONT, LO_C_RUBYGEMS, LO_C_GEM_WALKS,
    LO_C_COUNT
};

static VALUE lo_state = Qnil;    /* the LoadPath::State while active, else nil */
static VALUE lo_table = Qnil;    /* its current LoadPathTable */
static VALUE lo_snapshot = Qnil; /* shares $LOAD_PATH's buffer while $LOAD_PATH is unchanged */
static VALUE lo_pending = Qnil;  /* the snapshot of the table being built; lo_snapshot once active */
static int lo_pending_set;
static VALUE lo_load_path = Qnil;
static VALUE lo_cwd = Qnil;      /* the cwd the table's relative entries were expanded in, or nil */
static int lo_busy;              /* how many calls back into the state are running (any thread) */
static int lo_instrument;        /* emit an event per require */
static unsigned long lo_counters[LO_C_COUNT];
static ID id_refresh, id_miss, id_stale, id_event, id_at_path;
static VALUE sym_hit, sym_miss, sym_fallback, sym_retry, sym_unknown_entry;
static VALUE lo_reasons[LO_C_COUNT]; /* the :fallback event's reason per counter (nil: no event) */
static const char *lo_dlext;
static size_t lo_dlext_len;

/* The front hook (see lo_front_require): RubyGems' Kernel#require bound to a fixed receiver
 * (nil until the front is installed), and loadout's RubyGems helper. */
static VALUE lo_rubygems = Qnil;
static VALUE lo_front_helper = Qnil;
static VALUE lo_mGem = Qnil, lo_cSpecification = Qnil;
static ID id_find_unresolved_default_spec, id_unresolved_deps, id_empty_p, id_loaded_specs, id_name,
    id_insert_index, id_activated_gem_paths, id_activate_default, id_load_error, id_walk,
    id_discover;
static int lo_has_discover;

/* memrchr is a GNU extension. */
static const char *
last_byte(const char *p, char c, long len)
{
    while (len-- > 0) {
        if (p[len] == c) return p + len;
    }
    return NULL;
}

static VALUE
call_require(VALUE path)
{
    return rb_require_string(path);
}

/* Whether $LOAD_PATH is unchanged since the last snapshot (load.c uses the same test for its
 * expanded load path). Arrays small enough to be embedded never share: compare them whole. */
static int
load_path_unchanged(void)
{
    if (rb_ary_shared_with_p(lo_snapshot, lo_load_path)) return 1;
    long n = RARRAY_LEN(lo_load_path);
    if (n != RARRAY_LEN(lo_snapshot) || n > 8) return 0;
    for (long i = 0; i < n; i++) {
        if (RARRAY_AREF(lo_snapshot, i) != RARRAY_AREF(lo_load_path, i)) return 0;
    }
    return 1;
}

/* Relative $LOAD_PATH items are expanded against the cwd (load.c re-expands them when it
 * changes, checking on every search): the table holds for the cwd it was built in. */
static int
cwd_unchanged(void)
{
    if (NIL_P(lo_cwd)) return 1;
    char buf[4096];
    if (!getcwd(buf, sizeof(buf))) return 0;
    size_t n = strlen(buf);
    return (long)n == RSTRING_LEN(lo_cwd) && memcmp(buf, RSTRING_PTR(lo_cwd), n) == 0;
}

/* Calls +mid+ on the state with lo_busy set; an exception there turns the index off (the
 * state reports it) and answers Qundef, so the caller goes to Ruby. */
struct callback { ID mid; int argc; VALUE argv[3]; };

static VALUE
do_callback(VALUE arg)
{
    struct callback *cb = (struct callback *)arg;
    return rb_funcallv(lo_state, cb->mid, cb->argc, cb->argv);
}

static VALUE
callback(ID mid, int argc, VALUE a, VALUE b, VALUE c)
{
    struct callback cb = { mid, argc, { a, b, c } };
    int state = 0;
    lo_busy++;
    VALUE result = rb_protect(do_callback, (VALUE)&cb, &state);
    lo_busy--;
    if (state) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        lo_state = Qnil;
        lo_table = Qnil;
        rb_warn("loadout: load path index disabled (%"PRIsVALUE": %"PRIsVALUE"); using plain require",
                rb_obj_class(err), rb_funcall(err, rb_intern("message"), 0));
        return Qundef;
    }
    return result;
}

static void
emit(VALUE event, VALUE feature, VALUE reason)
{
    if (lo_instrument && !NIL_P(lo_state)) callback(id_event, 3, event, feature, reason);
}

static VALUE
fallback(int counter, VALUE fname)
{
    lo_counters[counter]++;
    if (lo_instrument && !NIL_P(lo_reasons[counter])) emit(sym_fallback, fname, lo_reasons[counter]);
    return rb_require_string(fname);
}

/* Ruby's LoadError for a feature its search cannot find (error.c rb_load_fail): same class,
 * message, path and, raised from this frame, the same backtrace. */
static VALUE
raise_not_found(VALUE fname)
{
    VALUE mesg = rb_str_buf_new_cstr("cannot load such file");
    rb_str_cat2(mesg, " -- ");
    rb_str_append(mesg, fname);
    VALUE err = rb_exc_new3(rb_eLoadError, mesg);
    rb_ivar_set(err, id_at_path, fname);
    rb_exc_raise(err);
    return Qnil; /* not reached */
}

enum { FT_RB, FT_SO, FT_ANY };

/* Which names to look up for +buf+ (a copy of the feature, NUL-terminated, len bytes), as
 * search_required() decides: an explicit .rb, an explicit .so/.o (DLEXT instead), or neither
 * (".rb" then DLEXT, each over the whole $LOAD_PATH). Returns -1 for shapes Ruby searches in
 * ways the index does not model. */
static int
classify(char *buf, long len, long *stem_len)
{
    const char *dot = last_byte(buf, '.', len);
    const char *slash = last_byte(buf, '/', len);
    *stem_len = len;
    if (!dot || (slash && slash > dot)) return FT_ANY;

    const char *ext = dot;
    if (strcmp(ext, ".rb") == 0) return FT_RB;
    if (strcmp(ext, ".so") == 0 || strcmp(ext, ".o") == 0 || strcmp(ext, lo_dlext) == 0) {
        *stem_len = dot - buf;
        return FT_SO;
    }
    return FT_ANY; /* "x.rake", "foo.bar": Ruby appends the extensions */
}

/* Relative, no dot segments, no NUL, ASCII: the features whose search the index models. */
static int
shape_counter(VALUE fname, const char *p, long len)
{
    if (len == 0 || len > LO_MAX_FEATURE) return LO_C_SHAPE;
    if (p[0] == '/' || p[0] == '~' || p[0] == '.') return LO_C_DIRECT;
    if (!rb_enc_str_asciionly_p(fname)) return LO_C_ENCODING;
    if (memchr(p, '\0', (size_t)len)) return LO_C_SHAPE;
    if (p[len - 1] == '/') return LO_C_SHAPE;
    for (long i = 0; i + 1 < len; i++) {
        if (p[i] != '/') continue;
        if (p[i + 1] == '/') return LO_C_SHAPE;
        if (p[i + 1] == '.' && (i + 2 == len || p[i + 2] == '/')) return LO_C_SHAPE;
        if (p[i + 1] == '.' && p[i + 2] == '.' && (i + 3 == len || p[i + 3] == '/')) return LO_C_SHAPE;
    }
    return -1;
}

/* The index's answer: a position (>= 0), or LOOK_MISS / LOOK_UNKNOWN. Leaves in buf[0..*rel_len]
 * the name that was found. */
enum { LOOK_MISS = -1, LOOK_UNKNOWN = -2 };

static long
lookup(const lo_lp_index *ix, char *buf, long stem_len, int ft, long *rel_len)
{
    long pos;
    if (ft == FT_RB) {
        *rel_len = stem_len;
        pos = lo_lp_table_find(&ix->table, buf, (size_t)stem_len);
        if (pos >= 0) return pos < ix->first_opaque ? pos : LOOK_UNKNOWN;
        return ix->first_opaque < ix->count ? LOOK_UNKNOWN : LOOK_MISS;
    }
    if (ft == FT_ANY) {
        memcpy(buf + stem_len, ".rb", 4);
        *rel_len = stem_len + 3;
        pos = lo_lp_table_find(&ix->table, buf, (size_t)*rel_len);
        if (pos >= 0) return pos < ix->first_opaque ? pos : LOOK_UNKNOWN;
        /* x.rb in any item beats x.so in an earlier one; an unlisted item may hold x.rb */
        if (ix->first_opaque < ix->count) return LOOK_UNKNOWN;
    }
    memcpy(buf + stem_len, lo_dlext, lo_dlext_len + 1);
    *rel_len = stem_len + (long)lo_dlext_len;
    pos = lo_lp_table_find(&ix->table, buf, (size_t)*rel_len);
    if (pos >= 0) return pos < ix->first_opaque ? pos : LOOK_UNKNOWN;
    return ix->first_opaque < ix->count ? LOOK_UNKNOWN : LOOK_MISS;
}

static VALUE call_rubygems(VALUE fname);

/* Requires the file the index found. +front+: called by the front hook, above RubyGems, so
 * what RubyGems would do after Ruby's require failed is done here (see lo_front_require). */
static VALUE
require_found(VALUE fname, const lo_lp_index *ix, long pos, const char *rel, long rel_len, int front)
{
    VALUE base = RARRAY_AREF(ix->bases, pos);
    long blen = RSTRING_LEN(base);
    int root = blen == 1 && RSTRING_PTR(base)[0] == '/';
    if (root) blen = 0;
    VALUE path = rb_enc_str_new(NULL, blen + 1 + rel_len, rb_enc_get(fname));
    char *out = RSTRING_PTR(path);
    memcpy(out, RSTRING_PTR(base), (size_t)blen);
    out[blen] = '/';
    memcpy(out + blen + 1, rel, (size_t)rel_len);

    lo_counters[LO_C_HITS]++;
    if (lo_instrument) emit(sym_hit, fname, Qnil);
    int state = 0;
    VALUE result = rb_protect(call_require, path, &state);
    if (!state) return result;

    /* The file left since it was listed (or Ruby cannot open it): Ruby searches instead. */
    VALUE err = rb_errinfo();
    /* (The same bytes, not the same object: Ruby 3.3's LoadError#path is a copy.) */
    VALUE at = rb_obj_is_kind_of(err, rb_eLoadError) ? rb_attr_get(err, id_at_path) : Qnil;
    if (RB_TYPE_P(at, T_STRING) && rb_str_equal(at, path) == Qtrue) {
        rb_set_errinfo(Qnil);
        lo_counters[LO_C_STALE]++;
        if (!NIL_P(lo_state)) callback(id_stale, 1, path, Qnil, Qnil);
        return front ? call_rubygems(fname) : rb_require_string(fname);
    }
    /* RubyGems rescues a LoadError for the very name it was given (raised by the file itself)
     * and tries to activate a gem holding it. */
    if (front && RB_TYPE_P(at, T_STRING) && rb_str_equal(at, fname) == Qtrue) {
        rb_set_errinfo(Qnil);
        return rb_funcall(lo_front_helper, id_load_error, 2, fname, err);
    }
    rb_jump_tag(state);
    return Qnil; /* not reached */
}

/*
 * $LOADED_FEATURES as the hook knows it. Ruby's own check (rb_feature_provided) walks every
 * expanded $LOAD_PATH item for each loaded feature that could match (load.c
 * loaded_feature_path), a cost that grows with $LOAD_PATH, and a require of a loaded feature made
 * two of them. Most such requires name a file the index finds first where
 * Ruby loaded it from, so:
 * - lf_map: every ".rb" entry of $LOADED_FEATURES (a copy of its bytes) -> its index. When the
 *   index's first holder of x.rb, base + "/x.rb", is at that index of $LOADED_FEATURES (checked
 *   byte for byte there, so an edit of the array can only make this say "don't know"), Ruby's
 *   check for "x.rb" says provided: that is one of the forms it accepts, and a loaded file is not
 *   being loaded.
 * - lf_ext: the short names ("c", "b/c", "a/b/c" for "/x/a/b/c.so") of every entry that is not
 *   ".rb" (extensions, bare names): a feature no such entry can match is not provided as an
 *   extension, so the second check ("x.so") and, with one thread, the bare one are not needed.
 * Both follow $LOADED_FEATURES by its growth (Ruby appends in C, unseen); a shorter array, or a
 * last element other than the one seen, rebuilds them.
 */
static st_table *lf_map, *lf_ext;
static long lf_seen;
static VALUE lf_last = Qnil;
static VALUE lo_loaded_features = Qnil;

static int
lf_free_key(st_data_t key, st_data_t value, st_data_t arg)
{
    ruby_xfree((void *)key);
    return ST_DELETE;
}

static void
lf_reset(void)
{
    st_foreach(lf_map, lf_free_key, 0);
    st_foreach(lf_ext, lf_free_key, 0);
    lf_seen = 0;
    lf_last = Qnil;
}

static char *
lf_copy(const char *p, long len)
{
    char *k = ruby_xmalloc((size_t)len + 1);
    memcpy(k, p, (size_t)len);
    k[len] = '\0';
    return k;
}

static void
lf_add(VALUE v, long i)
{
    if (!RB_TYPE_P(v, T_STRING)) return;
    const char *p = RSTRING_PTR(v);
    long len = RSTRING_LEN(v);
    if (memchr(p, '\0', (size_t)len)) return;
    if (len > 3 && memcmp(p + len - 3, ".rb", 3) == 0) {
        char *k = lf_copy(p, len);
        st_data_t old = (st_data_t)k;
        if (st_delete(lf_map, &old, NULL)) ruby_xfree((void *)old);
        st_insert(lf_map, (st_data_t)k, (st_data_t)i);
        return;
    }
    const char *slash = last_byte(p, '/', len), *dot = last_byte(p, '.', len);
    long stem = dot && (!slash || dot > slash) ? dot - p : len;
    for (long at = stem; at >= 0; at--) {
        if (at > 0 && p[at - 1] != '/') continue;
        if (stem - at > 0 && !st_lookup(lf_ext, (st_data_t)(p + at), NULL)) {
            char *k = lf_copy(p + at, stem - at);
            if (!st_lookup(lf_ext, (st_data_t)k, NULL)) st_insert(lf_ext, (st_data_t)k, 1);
            else ruby_xfree(k);
        }
        if (at == 0) break;
    }
}

static void
lf_sync(void)
{
    long n = RARRAY_LEN(lo_loaded_features);
    if (n < lf_seen || (lf_seen > 0 && RARRAY_AREF(lo_loaded_features, lf_seen - 1) != lf_last)) lf_reset();
    for (long i = lf_seen; i < n; i++) lf_add(RARRAY_AREF(lo_loaded_features, i), i);
    lf_seen = n;
    lf_last = n ? RARRAY_AREF(lo_loaded_features, n - 1) : Qnil;
}

/* Whether the short name +p+ (len bytes, NUL-terminated) can match a loaded entry that is not .rb. */
static int
lf_ext_has(const char *p)
{
    return st_lookup(lf_ext, (st_data_t)p, NULL);
}

/* Whether the file the index finds first for +name+ (nlen bytes: "x.rb") is in $LOADED_FEATURES,
 * at the index lf_map recorded for it. Uses the current table only while it holds. */
static int
loaded_where_found(const char *name, long nlen)
{
    if (NIL_P(lo_table) || !load_path_unchanged() || !cwd_unchanged()) return 0;
    const lo_lp_index *ix = lo_lp_index_get(lo_table);
    long pos = lo_lp_table_find(&ix->table, name, (size_t)nlen);
    if (pos < 0 || pos >= ix->first_opaque) return 0;
    VALUE base = RARRAY_AREF(ix->bases, pos);
    long blen = RSTRING_LEN(base);
    if (blen == 1 && RSTRING_PTR(base)[0] == '/') blen = 0;
    char path[LO_MAX_FEATURE + 4096 + 8];
    if (blen + 1 + nlen + 1 > (long)sizeof(path)) return 0;
    memcpy(path, RSTRING_PTR(base), (size_t)blen);
    path[blen] = '/';
    memcpy(path + blen + 1, name, (size_t)nlen);
    long plen = blen + 1 + nlen;
    path[plen] = '\0';

    lf_sync();
    st_data_t at;
    if (!st_lookup(lf_map, (st_data_t)path, &at)) return 0;
    long i = (long)at;
    VALUE v = i < RARRAY_LEN(lo_loaded_features) ? RARRAY_AREF(lo_loaded_features, i) : Qnil;
    if (RB_TYPE_P(v, T_STRING) && RSTRING_LEN(v) == plen && memcmp(RSTRING_PTR(v), path, (size_t)plen) == 0) return 1;
    lf_reset(); /* the array was edited: rebuilt at the next sync */
    return 0;
}

enum { NOT_PROVIDED, LOADED, ASK_RUBY, NO_RB_LOADED };

/* What search_required() (load.c) answers for +buf+ from $LOADED_FEATURES alone:
 * - an explicit .rb, or an explicit .so/.o/DLEXT: Ruby's first check is rb_feature_p() with the
 *   same arguments rb_feature_provided() passes; provided means "already loaded" (false).
 * - no extension: Ruby asks rb_feature_p() for any type and stops at an 'r' answer; an 's' one
 *   (an extension of that name is loaded) makes it search for a .rb that may still load. So only
 *   a feature provided as .rb and not as an extension is LOADED here. (An entry pushed into
 *   $LOADED_FEATURES without an extension, which Ruby counts first, is the one shape this
 *   does not tell apart; such an entry and a .rb of the same name in one boot is not seen.)
 * - no extension, provided only otherwise (as an extension, or a bare entry): NO_RB_LOADED. Ruby
 *   then searches $LOAD_PATH for a .rb of that name (rb_find_file_ext) and loads it if there is
 *   one; with none anywhere the answer is "already loaded". The index answers that search.
 * - a feature being loaded right now (a circular require, or another thread's): ASK_RUBY (it
 *   warns, or waits for that thread).
 * An unknown extension ("x.rake") is NOT_PROVIDED here: Ruby does not check it first either.
 * buf has room for ".rb" past len and is left as it was. */
static int
already_loaded(char *buf, long len, int ft)
{
    const char *loading = NULL;
    if (ft == FT_RB && loaded_where_found(buf, len)) return LOADED;
    if (ft == FT_RB || ft == FT_SO) {
        if (!rb_feature_provided(buf, &loading)) return NOT_PROVIDED;
        return loading ? ASK_RUBY : LOADED;
    }
    const char *slash = last_byte(buf, '/', len), *dot = last_byte(buf, '.', len);
    if (dot && (!slash || dot > slash)) return NOT_PROVIDED; /* unknown extension: Ruby's search first */

    memcpy(buf + len, ".rb", 4);
    int rb = loaded_where_found(buf, len + 3);
    buf[len] = '\0';
    /* (loaded_where_found synced lf_ext when it found the file) */
    if (rb && !lf_ext_has(buf)) return LOADED;
    /* Ruby's own first check, for the name as given. Not provided: no .rb, extension or bare
     * entry matches (or one that matches only as "x.rb" follows a "x.<other>" entry, which Ruby
     * then finds loaded by its expanded path: required by absolute path, it answers the same). */
    if (!rb_feature_provided(buf, &loading)) return NOT_PROVIDED;
    if (loading) return ASK_RUBY;
    memcpy(buf + len, ".rb", 4);
    rb = rb || rb_feature_provided(buf, &loading);
    memcpy(buf + len, ".so", 4);
    int so = rb && !loading && rb_feature_provided(buf, NULL);
    buf[len] = '\0';
    if (rb && !loading && !so) return LOADED;
    if (rb) return ASK_RUBY;
    return NO_RB_LOADED;
}

static VALUE
lo_require(VALUE self, VALUE fname)
{
    if (NIL_P(lo_state)) return rb_require_string(fname);
    lo_counters[LO_C_REQUIRES]++;
    if (!RB_TYPE_P(fname, T_STRING) || RBASIC_CLASS(fname) != rb_cString) {
        return fallback(LO_C_NOT_STRING, fname);
    }
    if (lo_busy) return fallback(LO_C_BUSY, fname);

    const char *p = RSTRING_PTR(fname);
    long len = RSTRING_LEN(fname);
    int shape = shape_counter(fname, p, len);
    if (shape >= 0) return fallback(shape, fname);

    char buf[LO_MAX_FEATURE + 32];
    memcpy(buf, p, (size_t)len);
    buf[len] = '\0';
    long stem_len;
    int ft = classify(buf, len, &stem_len);
    int loaded = already_loaded(buf, len, ft);
    if (loaded != NOT_PROVIDED) lo_counters[LO_C_PROVIDED]++;
    if (loaded == LOADED) return Qfalse;
    if (loaded == ASK_RUBY) return rb_require_string(fname);
    /* Loaded as an extension: the question left is whether any entry holds <feature>.rb. */
    int rb_only = loaded == NO_RB_LOADED;
    if (rb_only) {
        memcpy(buf + len, ".rb", 4);
        ft = FT_RB;
        stem_len = len + 3;
    }

    for (int attempt = 0; attempt < 2; attempt++) {
        if (NIL_P(lo_table) || !load_path_unchanged() || !cwd_unchanged()) {
            if (callback(id_refresh, 0, Qnil, Qnil, Qnil) == Qundef || NIL_P(lo_table)) {
                return rb_require_string(fname);
            }
        }
        const lo_lp_index *ix = lo_lp_index_get(lo_table);
        long rel_len;
        long pos = lookup(ix, buf, stem_len, ft, &rel_len);
        if (rb_only && pos != LOOK_MISS) return rb_require_string(fname); /* there may be one: Ruby's call */
        if (pos >= 0) return require_found(fname, ix, pos, buf, rel_len, 0);
        if (pos == LOOK_UNKNOWN) return fallback(LO_C_UNKNOWN, fname);

        /* A miss: the state re-checks the app directories that could have gained the file. After
         * it listed one again (attempt 1), the listings are as fresh as a search would be. */
        if (attempt == 0) {
            VALUE verdict = callback(id_miss, 1, fname, Qnil, Qnil);
            if (verdict == sym_retry) {
                if (!rb_only) buf[len] = '\0';
                continue;
            }
            if (verdict != sym_miss) return rb_only ? rb_require_string(fname) : fallback(LO_C_UNKNOWN, fname);
        }
        if (rb_only) return Qfalse; /* no .rb anywhere: Ruby's answer is "already loaded" */
        lo_counters[LO_C_MISSES]++;
        if (lo_instrument) emit(sym_miss, fname, Qnil);
        return raise_not_found(fname);
    }
    return rb_require_string(fname);
}


/*
 * The front hook: in place of RubyGems' Kernel#require (when Bundler has not removed it), so
 * that a require RubyGems would only pass on to Ruby's require is answered before RubyGems'
 * per-call Ruby work (its monitor, its default-gem check and, for a default gem not activated
 * yet, a walk of every $LOAD_PATH item ahead of its insert index, allocating four objects and
 * making two syscalls per item and suffix).
 *
 * RubyGems (3.3 to 4.0, kernel_require.rb) hands the name to gem_original_require unchanged,
 * and only rescues a LoadError for that name, when the name belongs to no default gem left to
 * activate (Gem.find_unresolved_default_spec is nil) and no activated gem has unresolved
 * dependencies. Then this hook answers what lo_require would answer without Ruby's search: an
 * already loaded feature (false), or a name the index resolves (required by absolute path, as
 * lo_require does). Anything else goes to RubyGems with the name, which ends in lo_require.
 *
 * A default gem not activated yet (no version of it active): RubyGems looks for the name, with
 * each of Gem.suffixes ("", ".rb", DLEXT), in every $LOAD_PATH item ahead of its insert index
 * that is not a symlink ("-I beats a default gem"), and activates the default gem when no item
 * has it. The index answers that walk (walk_answer), the helper activates the gem as RubyGems
 * would, and the require goes on as above. What the walk cannot prove goes to RubyGems.
 */
enum { WALK_FOUND, WALK_NOT_FOUND, WALK_UNKNOWN };

static VALUE
call_rubygems(VALUE fname)
{
    lo_counters[LO_C_RUBYGEMS]++;
    return rb_method_call(1, &fname, lo_rubygems);
}

/* Whether a regular file +rel+ (len bytes) is under +base+. */
static int
file_under(VALUE base, const char *rel, long len)
{
    char path[4096];
    long blen = RSTRING_LEN(base);
    if (blen + 1 + len + 1 > (long)sizeof(path)) return -1;
    memcpy(path, RSTRING_PTR(base), (size_t)blen);
    path[blen] = '/';
    memcpy(path + blen + 1, rel, (size_t)len);
    path[blen + 1 + len] = '\0';
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* RubyGems' "-I beats a default gem" walk for +name+ (len bytes, room for a suffix after it)
 * over the first +limit+ $LOAD_PATH items. +walk+ holds, per item: its base (a String), false
 * (a symlink, which RubyGems skips, or no directory there) or nil (the index cannot tell);
 * +positions+ the item of each table position. */
static int
walk_answer(VALUE walk, VALUE positions, char *name, long len, long limit)
{
    const lo_lp_index *ix = lo_lp_index_get(lo_table);
    if (limit > RARRAY_LEN(walk)) limit = RARRAY_LEN(walk);
    int unknown = 0;
    const char *suffixes[3] = { "", ".rb", lo_dlext };
    for (int s = 0; s < 3; s++) {
        size_t slen = strlen(suffixes[s]);
        memcpy(name + len, suffixes[s], slen + 1);
        long nlen = len + (long)slen;
        const char *dot = last_byte(name, '.', nlen), *slash = last_byte(name, '/', nlen);
        int listed = dot && (!slash || dot > slash) && (strcmp(dot, ".rb") == 0 || strcmp(dot, lo_dlext) == 0);
        if (listed) {
            /* The table's first holder; an unlisted item ahead of it may hold the name too. */
            long pos = lo_lp_table_find(&ix->table, name, (size_t)nlen);
            long item = pos >= 0 && pos < ix->first_opaque ? NUM2LONG(RARRAY_AREF(positions, pos)) : -1;
            long opaque = ix->first_opaque < RARRAY_LEN(positions) ? NUM2LONG(RARRAY_AREF(positions, ix->first_opaque)) : -1;
            if (opaque >= 0 && opaque < limit && (item < 0 || opaque < item)) { unknown = 1; continue; }
            if (item < 0 || item >= limit) continue;
            if (RARRAY_AREF(walk, item) == Qfalse) { unknown = 1; continue; } /* a symlink: a later one may hold it */
            name[len] = '\0';
            return WALK_FOUND;
        }
        for (long i = 0; i < limit; i++) {
            VALUE base = RARRAY_AREF(walk, i);
            if (NIL_P(base)) { unknown = 1; continue; }
            if (!RB_TYPE_P(base, T_STRING)) continue;
            int found = file_under(base, name, nlen);
            if (found < 0) { unknown = 1; continue; }
            if (found) { name[len] = '\0'; return WALK_FOUND; }
        }
    }
    name[len] = '\0';
    return unknown ? WALK_UNKNOWN : WALK_NOT_FOUND;
}

/* For a name of a default gem that is not activated: 1 when, after the walk (and the
 * activation RubyGems would make), RubyGems would go on as for any other name; 0 when RubyGems
 * must decide. */
static int
front_default_gem(VALUE fname, VALUE spec, char *buf, long len)
{
    if (!buf) return 0;
    VALUE name = rb_funcall(spec, id_name, 0);
    VALUE loaded = rb_funcall(lo_mGem, id_loaded_specs, 0);
    /* Another version active (3.3 walks, 3.5+ passes), or Bundler's own extensions (4.0): RubyGems'. */
    if (!RB_TYPE_P(loaded, T_HASH) || !NIL_P(rb_hash_lookup2(loaded, name, Qnil))) return 0;
    if (RB_TYPE_P(name, T_STRING) && RSTRING_LEN(name) == 7 && memcmp(RSTRING_PTR(name), "bundler", 7) == 0) return 0;

    VALUE insert = rb_funcall(lo_mGem, id_insert_index, 0);
    VALUE activated = rb_funcall(lo_mGem, id_activated_gem_paths, 0);
    if (!FIXNUM_P(insert) || !FIXNUM_P(activated)) return 0;
    long limit = FIX2LONG(insert) - FIX2LONG(activated);
    /* The state's view of $LOAD_PATH for the current table, or nil (a name the index does not
     * model for this walk, such as one under an ignored directory). */
    VALUE walk = callback(id_walk, 1, fname, Qnil, Qnil);
    if (walk == Qundef || !RB_TYPE_P(walk, T_ARRAY) || RARRAY_LEN(walk) != 3 || RARRAY_AREF(walk, 0) != lo_table) return 0;
    int answer = walk_answer(RARRAY_AREF(walk, 1), RARRAY_AREF(walk, 2), buf, len, limit < 0 ? 0 : limit);
    RB_GC_GUARD(walk);
    if (answer == WALK_UNKNOWN) return 0;
    lo_counters[LO_C_GEM_WALKS]++;
    if (answer == WALK_NOT_FOUND) rb_funcall(lo_front_helper, id_activate_default, 1, spec);
    return 1;
}

/* Whether RubyGems would hand +fname+ to gem_original_require unchanged. */
static int
rubygems_passes(VALUE fname, char *buf, long len)
{
    if (lo_has_discover && !RTEST(rb_funcall(lo_mGem, id_discover, 0))) return 1;
    VALUE spec = rb_funcall(lo_mGem, id_find_unresolved_default_spec, 1, fname);
    if (!NIL_P(spec) && !front_default_gem(fname, spec, buf, len)) return 0;
    VALUE deps = rb_funcall(lo_cSpecification, id_unresolved_deps, 0);
    return RTEST(rb_funcall(deps, id_empty_p, 0));
}

/* An absolute or ./ path (Zeitwerk's requires, require File.expand_path(...)): no search to
 * answer, but RubyGems' own work to skip when it would pass the path on (a default gem is never
 * found under such a name). Ruby's require does the rest, as lo_require's fallback would. */
static VALUE
front_direct(VALUE fname)
{
    if (!rubygems_passes(fname, NULL, 0)) return call_rubygems(fname);
    lo_counters[LO_C_REQUIRES]++;
    lo_counters[LO_C_FRONT]++;
    lo_counters[LO_C_DIRECT]++;
    int state = 0;
    VALUE result = rb_protect(call_require, fname, &state);
    if (!state) return result;
    VALUE err = rb_errinfo();
    VALUE at = rb_obj_is_kind_of(err, rb_eLoadError) ? rb_attr_get(err, id_at_path) : Qnil;
    if (RB_TYPE_P(at, T_STRING) && rb_str_equal(at, fname) == Qtrue) {
        rb_set_errinfo(Qnil);
        return rb_funcall(lo_front_helper, id_load_error, 2, fname, err);
    }
    rb_jump_tag(state);
    return Qnil; /* not reached */
}

static VALUE
lo_front_require(VALUE self, VALUE fname)
{
    if (NIL_P(lo_state) || lo_busy) return call_rubygems(fname);
    if (!RB_TYPE_P(fname, T_STRING) || RBASIC_CLASS(fname) != rb_cString) return call_rubygems(fname);
    const char *p = RSTRING_PTR(fname);
    long len = RSTRING_LEN(fname);
    int shape = shape_counter(fname, p, len);
    if (shape == LO_C_DIRECT) return front_direct(fname);
    if (shape >= 0) return call_rubygems(fname);

    char buf[LO_MAX_FEATURE + 32];
    memcpy(buf, p, (size_t)len);
    buf[len] = '\0';
    if (NIL_P(lo_table) || !load_path_unchanged() || !cwd_unchanged()) {
        if (callback(id_refresh, 0, Qnil, Qnil, Qnil) == Qundef || NIL_P(lo_table)) return call_rubygems(fname);
    }
    if (!rubygems_passes(fname, buf, len)) return call_rubygems(fname);
    if (NIL_P(lo_state) || NIL_P(lo_table)) return call_rubygems(fname);

    long stem_len;
    int ft = classify(buf, len, &stem_len);
    int loaded = already_loaded(buf, len, ft);
    if (loaded == LOADED) {
        lo_counters[LO_C_REQUIRES]++;
        lo_counters[LO_C_FRONT]++;
        lo_counters[LO_C_PROVIDED]++;
        return Qfalse;
    }
    if (loaded != NOT_PROVIDED) return call_rubygems(fname);
    if (!load_path_unchanged() || !cwd_unchanged()) return call_rubygems(fname); /* the activation moved it */
    const lo_lp_index *ix = lo_lp_index_get(lo_table);
    long rel_len;
    long pos = lookup(ix, buf, stem_len, ft, &rel_len);
    if (pos < 0) return call_rubygems(fname);
    lo_counters[LO_C_REQUIRES]++;
    lo_counters[LO_C_FRONT]++;
    return require_found(fname, ix, pos, buf, rel_len, 1);
}


/*
 * The bundled-gems front: in place of Bundler's bundled-gems warning (Ruby 3.3+, bundled_gems.rb
 * replace_require), which decorates Kernel#require and Kernel.require above RubyGems: each call
 * runs Gem::BUNDLED_GEMS.warning?(name) (String copies, a split) before `no_warning_require`.
 * warning? can only warn for a name that one of its checks finds among the bundled gems' names
 * (SINCE, SINCE_FAST_PATH, EXACT): across Ruby 3.3, 3.4 and 4.0 those checks look up the feature,
 * the feature without its extension, its first path segment, its first two joined by "-", all
 * of them joined by "-", and its basename without extension (absolute paths under Ruby's lib dirs
 * first lose that prefix). A name none of those can match, not starting with "reline" (3.4 asks
 * the caller there), is passed on unchanged: this hook then does what no_warning_require would
 * (the front hook for Kernel#require when it is RubyGems' place, else the lower hook) without
 * Bundler's Ruby code. Anything else goes to Bundler's method.
 */
static VALUE lo_bundled_instance = Qnil; /* Bundler's Kernel#require, bound to the main object */
static VALUE lo_bundled_singleton = Qnil; /* Bundler's Kernel.require, bound to Kernel */
/* What each calls next, `kernel_class.send(:no_warning_require)`: from Kernel#require that is
 * Kernel.no_warning_require (the singleton's), from Kernel.require it is Kernel#no_warning_require
 * (the Class object finds Kernel's instance methods): 1 when that is the front hook, 0 the lower. */
static int lo_bundled_instance_below_front, lo_bundled_singleton_below_front;
static char *lo_bundled_names;           /* the names warning? knows, NUL-separated */
static long lo_bundled_names_len;
static VALUE lo_bundled_prefixes = Qnil;  /* Ruby's lib dirs with a trailing "/" */

/* Whether [p, p+len) (with '/' read as '-' when +dashes+) is one of the bundled gems' names. */
static int
bundled_name(const char *p, long len, int dashes)
{
    const char *n = lo_bundled_names, *end = lo_bundled_names + lo_bundled_names_len;
    while (n < end) {
        long nlen = (long)strlen(n);
        if (nlen == len) {
            long i = 0;
            for (; i < len; i++) {
                char c = p[i];
                if (dashes && c == '/') c = '-';
                if (c != n[i]) break;
            }
            if (i == len) return 1;
        }
        n += nlen + 1;
    }
    return 0;
}

static int
bundled_passes(VALUE fname)
{
    if (!RB_TYPE_P(fname, T_STRING) || RBASIC_CLASS(fname) != rb_cString) return 0;
    const char *p = RSTRING_PTR(fname);
    long len = RSTRING_LEN(fname);
    if (len == 0 || len > LO_MAX_FEATURE || memchr(p, '\0', (size_t)len) || !rb_enc_str_asciionly_p(fname)) return 0;
    if (len >= 6 && memcmp(p, "reline", 6) == 0) return 0;
    for (long i = 0; i < RARRAY_LEN(lo_bundled_prefixes); i++) {
        VALUE pre = RARRAY_AREF(lo_bundled_prefixes, i);
        if (len >= RSTRING_LEN(pre) && memcmp(p, RSTRING_PTR(pre), (size_t)RSTRING_LEN(pre)) == 0) return 0;
    }
    const char *slash = last_byte(p, '/', len), *dot = last_byte(p, '.', len);
    long stem = dot && (!slash || dot > slash) ? dot - p : len;   /* without its last extension */
    const char *first = memchr(p, '/', (size_t)stem);
    long seg0 = first ? first - p : stem;
    const char *second = first ? memchr(first + 1, '/', (size_t)(stem - seg0 - 1)) : NULL;
    long seg01 = second ? second - p : stem;
    const char *base = slash ? slash + 1 : p;
    long base_len = stem - (base - p);
    if (base_len < 0) base_len = 0;
    if (bundled_name(p, len, 0) || bundled_name(p, stem, 0) || bundled_name(p, seg0, 0) ||
        bundled_name(p, seg01, 1) || bundled_name(p, stem, 1) || bundled_name(base, base_len, 0)) return 0;
    return 1;
}

static VALUE
lo_bundled_require(VALUE self, VALUE fname)
{
    if (NIL_P(lo_state) || lo_busy || !bundled_passes(fname)) return rb_method_call(1, &fname, lo_bundled_instance);
    return lo_bundled_instance_below_front ? lo_front_require(self, fname) : lo_require(self, fname);
}

static VALUE
lo_bundled_require_singleton(VALUE self, VALUE fname)
{
    if (NIL_P(lo_state) || lo_busy || !bundled_passes(fname)) return rb_method_call(1, &fname, lo_bundled_singleton);
    return lo_bundled_singleton_below_front ? lo_front_require(self, fname) : lo_require(self, fname);
}

/* Loadout::Native.lp_activate(state, table, cwd): the hook answers from +table+ (built in
 * +cwd+ when it holds relative entries, else nil) and calls +state+ back; a nil state means
 * plain require again. The state calls lp_snapshot
 * before it reads $LOAD_PATH, so a change made while it builds the table is seen next time.
 * That snapshot becomes the one the hook compares with only here, together with its table:
 * a thread that requires while another builds a table (Ruby may switch threads inside
 * rb_feature_provided, past the busy check: Ruby 3.4 does) sees the old table with the old
 * snapshot, so it refreshes too, never the old table with the new snapshot (a LoadError for a
 * feature the new entries hold). */
static VALUE
native_lp_activate(VALUE self, VALUE state, VALUE table, VALUE cwd)
{
    if (!NIL_P(table)) lo_lp_index_get(table); /* type check */
    if (!NIL_P(cwd)) StringValue(cwd);
    if (!NIL_P(table) && lo_pending_set) {
        VALUE built_from = lo_pending;
        lo_pending = lo_snapshot;
        lo_snapshot = built_from;
        lo_pending_set = 0;
    }
    lo_table = table;
    lo_cwd = cwd;
    lo_state = state;
    return Qnil;
}

static VALUE
native_lp_snapshot(VALUE self)
{
    rb_ary_replace(lo_pending, lo_load_path);
    lo_pending_set = 1;
    return Qnil;
}

static VALUE
native_lp_instrument(VALUE self, VALUE on)
{
    lo_instrument = RTEST(on);
    return Qnil;
}

static VALUE
native_lp_counters(VALUE self)
{
    VALUE out = rb_ary_new_capa(LO_C_COUNT);
    for (int i = 0; i < LO_C_COUNT; i++) rb_ary_push(out, ULONG2NUM(lo_counters[i]));
    return out;
}

static VALUE
native_lp_counters_reset(VALUE self)
{
    memset(lo_counters, 0, sizeof(lo_counters));
    return Qnil;
}

/* The hooks' method entries: each C function is defined once as "require" in a hidden module of
 * its own, and every entry it takes the place of gets that definition under its own name (as
 * `alias` does), so a frame of the hook is labelled "require" whatever the entry's name, like
 * Ruby's C require under gem_original_require, or RubyGems' require under an alias. */
static VALUE lo_mLowerHolder = Qnil, lo_mFrontHolder = Qnil, lo_mBundledHolder = Qnil, lo_mBundledSingletonHolder = Qnil;

static VALUE
put_hook(VALUE holder, VALUE mod, VALUE name, VALUE public)
{
    Check_Type(name, T_SYMBOL);
    VALUE um = rb_funcall(holder, rb_intern("instance_method"), 1, ID2SYM(rb_intern("require")));
    rb_funcall(mod, rb_intern("define_method"), 2, name, um);
    rb_funcall(mod, rb_intern(RTEST(public) ? "public" : "private"), 1, name);
    return Qnil;
}

/* Puts the hook in place of +mod+'s method +name+ (private unless +public+). */
static VALUE
native_lp_hook(VALUE self, VALUE mod, VALUE name, VALUE public)
{
    return put_hook(lo_mLowerHolder, mod, name, public);
}

/* Loadout::Native.method_arity(mod, name): the arity of the method +name+ that +mod+ answers
 * first (what mod.instance_method(name).arity says, without the UnboundMethod), 0 when it has
 * none, nil for a +name+ that is not a Symbol. The Kernel scans (RequireHook, RubyGemsFront) ask
 * it first, of a module with nothing prepended, so only the entries that take one argument
 * cost an UnboundMethod: a boot looks at each of Kernel's ~180 methods. */
static VALUE
native_method_arity(VALUE self, VALUE mod, VALUE name)
{
    if (!RB_TYPE_P(mod, T_MODULE) && !RB_TYPE_P(mod, T_CLASS)) return Qnil;
    if (!RB_SYMBOL_P(name)) return Qnil;
    return INT2FIX(rb_mod_method_arity(mod, rb_sym2id(name)));
}

/* Loadout::Native.lp_front(rubygems, helper), before the first lp_front_hook: +rubygems+ is
 * RubyGems' Kernel#require as a Method, called for what the front does not answer (it stays
 * for the process: the hook is in RubyGems' place from then on); +helper+ activates default
 * gems and handles a LoadError as RubyGems would. */
static VALUE
native_lp_front(VALUE self, VALUE rubygems, VALUE helper)
{
    if (!rb_obj_is_method(rubygems)) rb_raise(rb_eTypeError, "expected a Method");
    if (!NIL_P(lo_rubygems)) rb_raise(rb_eArgError, "the front hook is installed already");
    lo_mGem = rb_const_get(rb_cObject, rb_intern("Gem"));
    lo_cSpecification = rb_const_get(lo_mGem, rb_intern("Specification"));
    lo_has_discover = RTEST(rb_respond_to(lo_mGem, id_discover));
    lo_front_helper = helper;
    lo_rubygems = rubygems;
    return Qnil;
}

/* Puts the front hook in place of +mod+'s method +name+ (private unless +public+). */
static VALUE
native_lp_front_hook(VALUE self, VALUE mod, VALUE name, VALUE public)
{
    if (NIL_P(lo_rubygems)) rb_raise(rb_eArgError, "lp_front first");
    return put_hook(lo_mFrontHolder, mod, name, public);
}

/* Loadout::Native.lp_bundled(instance, singleton, below, names, prefixes): Bundler's two
 * decorations as Methods (either may be nil), [instance's next is the front hook, singleton's],
 * the names warning? knows and Ruby's lib dirs (see lo_bundled_require). Once. */
static VALUE
native_lp_bundled(VALUE self, VALUE instance, VALUE singleton, VALUE below, VALUE names, VALUE prefixes)
{
    if (!NIL_P(lo_bundled_instance) || !NIL_P(lo_bundled_singleton)) rb_raise(rb_eArgError, "the bundled-gems front is installed already");
    if ((!NIL_P(instance) && !rb_obj_is_method(instance)) || (!NIL_P(singleton) && !rb_obj_is_method(singleton))) rb_raise(rb_eTypeError, "expected Methods");
    Check_Type(below, T_ARRAY);
    if (RARRAY_LEN(below) != 2) rb_raise(rb_eArgError, "below: [instance, singleton]");
    Check_Type(names, T_ARRAY);
    Check_Type(prefixes, T_ARRAY);
    long total = 0;
    for (long i = 0; i < RARRAY_LEN(names); i++) {
        VALUE n = RARRAY_AREF(names, i);
        Check_Type(n, T_STRING);
        total += RSTRING_LEN(n) + 1;
    }
    char *buf = ruby_xmalloc((size_t)(total ? total : 1));
    long at = 0;
    for (long i = 0; i < RARRAY_LEN(names); i++) {
        VALUE n = RARRAY_AREF(names, i);
        memcpy(buf + at, RSTRING_PTR(n), (size_t)RSTRING_LEN(n));
        at += RSTRING_LEN(n);
        buf[at++] = '\0';
    }
    for (long i = 0; i < RARRAY_LEN(prefixes); i++) {
        VALUE pre = RARRAY_AREF(prefixes, i);
        Check_Type(pre, T_STRING);
    }
    lo_bundled_names = buf;
    lo_bundled_names_len = total;
    lo_bundled_prefixes = rb_ary_freeze(rb_ary_dup(prefixes));
    lo_bundled_instance_below_front = RTEST(RARRAY_AREF(below, 0));
    lo_bundled_singleton_below_front = RTEST(RARRAY_AREF(below, 1));
    lo_bundled_singleton = singleton;
    lo_bundled_instance = instance;
    return Qnil;
}

/* Puts the bundled-gems front in place of +mod+'s +name+ (+singleton+: Kernel.require's). */
static VALUE
native_lp_bundled_hook(VALUE self, VALUE mod, VALUE name, VALUE public, VALUE singleton)
{
    if (NIL_P(RTEST(singleton) ? lo_bundled_singleton : lo_bundled_instance)) rb_raise(rb_eArgError, "lp_bundled first, with that method");
    return put_hook(RTEST(singleton) ? lo_mBundledSingletonHolder : lo_mBundledHolder, mod, name, public);
}

/* The index's answer for +feature+ without loading anything (LoadPath.find, tests):
 * [position, name] for a hit, :miss, or :unknown_entry. */
static VALUE
native_lp_lookup(VALUE self, VALUE table, VALUE feature)
{
    const lo_lp_index *ix = lo_lp_index_get(table);
    StringValue(feature);
    long len = RSTRING_LEN(feature);
    if (len > LO_MAX_FEATURE) return sym_unknown_entry;
    char buf[LO_MAX_FEATURE + 32];
    memcpy(buf, RSTRING_PTR(feature), (size_t)len);
    buf[len] = '\0';
    long stem_len, rel_len;
    int ft = classify(buf, len, &stem_len);
    long pos = lookup(ix, buf, stem_len, ft, &rel_len);
    if (pos == LOOK_MISS) return sym_miss;
    if (pos == LOOK_UNKNOWN) return sym_unknown_entry;
    return rb_assoc_new(LONG2NUM(pos), rb_str_new(buf, rel_len));
}

void
lo_require_native_init(VALUE mNative)
{
#ifdef DLEXT
    lo_dlext = DLEXT;
#else
    lo_dlext = ".so";
#endif
    lo_dlext_len = strlen(lo_dlext);
    lo_load_path = rb_gv_get("$LOAD_PATH");
    lo_snapshot = rb_ary_tmp_new(0);
    lo_pending = rb_ary_tmp_new(0);
    rb_gc_register_address(&lo_state);
    rb_gc_register_address(&lo_table);
    rb_gc_register_address(&lo_snapshot);
    rb_gc_register_address(&lo_pending);
    rb_gc_register_address(&lo_load_path);
    rb_gc_register_address(&lo_cwd);
    lf_map = st_init_strtable();
    lf_ext = st_init_strtable();
    rb_gc_register_address(&lf_last);
    lo_loaded_features = rb_gv_get("$LOADED_FEATURES");
    rb_gc_register_address(&lo_loaded_features);
    rb_gc_register_address(&lo_rubygems);
    rb_gc_register_address(&lo_front_helper);
    rb_gc_register_address(&lo_mGem);
    rb_gc_register_address(&lo_cSpecification);
    id_find_unresolved_default_spec = rb_intern("find_unresolved_default_spec");
    id_unresolved_deps = rb_intern("unresolved_deps");
    id_empty_p = rb_intern("empty?");
    id_loaded_specs = rb_intern("loaded_specs");
    id_name = rb_intern("name");
    id_insert_index = rb_intern("load_path_insert_index");
    id_activated_gem_paths = rb_intern("activated_gem_paths");
    id_activate_default = rb_intern("activate_default");
    id_load_error = rb_intern("load_error");
    id_walk = rb_intern("__walk");
    id_discover = rb_intern("discover_gems_on_require");

    id_refresh = rb_intern("__refresh");
    id_miss = rb_intern("__miss");
    id_stale = rb_intern("__stale");
    id_event = rb_intern("__event");
    id_at_path = rb_intern("@path");
#define SYM(name) (sym_##name = ID2SYM(rb_intern(#name)))
    SYM(hit); SYM(miss); SYM(fallback); SYM(retry); SYM(unknown_entry);
#undef SYM
    for (int i = 0; i < LO_C_COUNT; i++) lo_reasons[i] = Qnil;
    lo_reasons[LO_C_UNKNOWN] = sym_unknown_entry;
    lo_reasons[LO_C_NOT_STRING] = ID2SYM(rb_intern("not_string"));
    lo_reasons[LO_C_ENCODING] = ID2SYM(rb_intern("encoding"));
    lo_reasons[LO_C_SHAPE] = ID2SYM(rb_intern("shape"));
    lo_reasons[LO_C_BUSY] = ID2SYM(rb_intern("busy"));

    rb_define_module_function(mNative, "lp_activate", native_lp_activate, 3);
    rb_define_module_function(mNative, "lp_snapshot", native_lp_snapshot, 0);
    rb_define_module_function(mNative, "lp_instrument", native_lp_instrument, 1);
    rb_define_module_function(mNative, "lp_counters", native_lp_counters, 0);
    rb_define_module_function(mNative, "lp_counters_reset", native_lp_counters_reset, 0);
    lo_mLowerHolder = rb_module_new();
    rb_gc_register_address(&lo_mLowerHolder);
    rb_define_private_method(lo_mLowerHolder, "require", lo_require, 1);
    lo_mFrontHolder = rb_module_new();
    rb_gc_register_address(&lo_mFrontHolder);
    rb_define_private_method(lo_mFrontHolder, "require", lo_front_require, 1);
    lo_mBundledHolder = rb_module_new();
    rb_gc_register_address(&lo_mBundledHolder);
    rb_define_private_method(lo_mBundledHolder, "require", lo_bundled_require, 1);
    lo_mBundledSingletonHolder = rb_module_new();
    rb_gc_register_address(&lo_mBundledSingletonHolder);
    rb_define_private_method(lo_mBundledSingletonHolder, "require", lo_bundled_require_singleton, 1);
    rb_gc_register_address(&lo_bundled_instance);
    rb_gc_register_address(&lo_bundled_singleton);
    rb_gc_register_address(&lo_bundled_prefixes);
    rb_define_module_function(mNative, "lp_hook", native_lp_hook, 3);
    rb_define_module_function(mNative, "method_arity", native_method_arity, 2);
    rb_define_module_function(mNative, "lp_lookup", native_lp_lookup, 2);
    rb_define_module_function(mNative, "lp_front", native_lp_front, 2);
    rb_define_module_function(mNative, "lp_front_hook", native_lp_front_hook, 3);
    rb_define_module_function(mNative, "lp_bundled", native_lp_bundled, 5);
    rb_define_module_function(mNative, "lp_bundled_hook", native_lp_bundled_hook, 4);
}
