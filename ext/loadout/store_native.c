/*
 * Ruby binding of store.c and crc32c.c, registered on Loadout::Native as store_* functions.
 * Loadout::Store::Format checks arguments before calling these; the Ruby twins live in
 * lib/loadout/store/format.rb and lib/loadout/store/crc32c.rb.
 */
#include "loadout.h"
#include "store.h"
#include "crc32c.h"

#include "ruby/thread.h"
#include "ruby/encoding.h"
#include <errno.h>
#include <unistd.h>
#ifdef HAVE_PREADV
#include <sys/uio.h>
#endif
#include <string.h>

static uint32_t
seed_arg(VALUE seed)
{
    return (uint32_t)NUM2ULONG(seed);
}

static VALUE
lo_native_store_crc32c(VALUE self, VALUE str, VALUE seed)
{
    StringValue(str);
    return ULONG2NUM(lo_crc32c(seed_arg(seed), RSTRING_PTR(str), (size_t)RSTRING_LEN(str)));
}

static VALUE
lo_native_store_crc32c_sw(VALUE self, VALUE str, VALUE seed)
{
    StringValue(str);
    return ULONG2NUM(lo_crc32c_sw(seed_arg(seed), RSTRING_PTR(str), (size_t)RSTRING_LEN(str)));
}

static VALUE
lo_native_store_crc32c_hardware_p(VALUE self)
{
    return lo_crc32c_hardware() ? Qtrue : Qfalse;
}

static void
check_lengths(long klen, long vlen)
{
    if (klen > (long)LO_STORE_MAX_KEY) rb_raise(rb_eArgError, "key is %ld bytes; the limit is %u", klen, LO_STORE_MAX_KEY);
    if (vlen > (long)LO_STORE_MAX_VALUE) rb_raise(rb_eArgError, "value is %ld bytes; the limit is %u", vlen, LO_STORE_MAX_VALUE);
}

/* Appends the record for (flags, key, value) to buf (a binary String) and returns buf. */
static VALUE
frame_into(VALUE buf, int flags, const char *key, long klen, const char *val, long vlen)
{
    check_lengths(klen, vlen);
    long old = RSTRING_LEN(buf);
    long total = LO_STORE_HEADER + klen + vlen;
    /* Grow geometrically: rb_str_modify_expand alone would realloc on every append. */
    long capa = (long)rb_str_capacity(buf);
    if (capa - old < total) {
        long want = old + total > 2 * capa ? old + total : 2 * capa;
        rb_str_modify_expand(buf, want - old);
    }
    lo_store_frame((unsigned char *)RSTRING_PTR(buf) + old, flags, key, (size_t)klen, val, (size_t)vlen);
    rb_str_set_len(buf, old + total);
    return buf;
}

static VALUE
lo_native_store_frame_into(VALUE self, VALUE buf, VALUE flags, VALUE key, VALUE value)
{
    StringValue(buf);
    StringValue(key);
    StringValue(value);
    rb_str_modify(buf);
    return frame_into(buf, NUM2INT(flags), RSTRING_PTR(key), RSTRING_LEN(key), RSTRING_PTR(value), RSTRING_LEN(value));
}

/* The Journal's hot path: key = id as 8 big-endian bytes, no Ruby String for the key. */
static VALUE
lo_native_store_frame_id_into(VALUE self, VALUE buf, VALUE flags, VALUE id, VALUE value)
{
    StringValue(buf);
    StringValue(value);
    rb_str_modify(buf);
    uint64_t n = NUM2ULL(id);
    char key[8];
    for (int i = 0; i < 8; i++) key[i] = (char)(n >> (56 - 8 * i));
    return frame_into(buf, NUM2INT(flags), key, 8, RSTRING_PTR(value), RSTRING_LEN(value));
}

static void
on_record(void *ctx, int flags, const unsigned char *key, size_t klen, uint64_t off, uint64_t len)
{
    VALUE ary = (VALUE)ctx;
    rb_ary_push(ary, INT2FIX(flags));
    rb_ary_push(ary, rb_obj_freeze(rb_str_new((const char *)key, (long)klen))); /* see on_hint_entry */
    rb_ary_push(ary, ULL2NUM(off));
    rb_ary_push(ary, ULL2NUM(len));
}

/* -> [[flags, key, off, len, ...], good_end, corrupt_records, corrupt_bytes, newer_version] */
static VALUE
lo_native_store_parse(VALUE self, VALUE buf, VALUE base)
{
    StringValue(buf);
    buf = rb_str_new_frozen(buf);
    VALUE entries = rb_ary_new();
    lo_store_parse_result r;
    lo_store_parse((const unsigned char *)RSTRING_PTR(buf), (size_t)RSTRING_LEN(buf), NUM2ULL(base),
                   on_record, (void *)entries, &r);
    RB_GC_GUARD(buf);
    return rb_ary_new_from_args(5, entries, ULL2NUM(r.good_end), ULL2NUM(r.corrupt_records),
                                ULL2NUM(r.corrupt_bytes), r.newer_version ? Qtrue : Qfalse);
}

/* The value of a record read back for a get, or nil when it fails any check. */
static VALUE
lo_native_store_verify(VALUE self, VALUE rec, VALUE key)
{
    StringValue(rec);
    StringValue(key);
    size_t voff = 0;
    int64_t vlen = lo_store_verify((const unsigned char *)RSTRING_PTR(rec), (size_t)RSTRING_LEN(rec),
                                   RSTRING_PTR(key), (size_t)RSTRING_LEN(key), &voff);
    if (vlen < 0) return Qnil;
    return rb_str_new(RSTRING_PTR(rec) + voff, (long)vlen);
}

/* The bytes at [off, off + alen + blen) of f into a, then b: preadv, again after a short read
 * (EINTR too). Returns how many were read (fewer at EOF), or -1 with errno set. */
#ifdef HAVE_PREADV
static long
pread_split(int f, off_t off, unsigned char *a, long alen, char *b, long blen)
{
    long got = 0, total = alen + blen;
    while (got < total) {
        struct iovec iov[2];
        int n = 0;
        if (got < alen) {
            iov[n].iov_base = a + got;
            iov[n++].iov_len = (size_t)(alen - got);
            iov[n].iov_base = b;
            iov[n++].iov_len = (size_t)blen;
        } else {
            iov[n].iov_base = b + (got - alen);
            iov[n++].iov_len = (size_t)(total - got);
        }
        ssize_t r = preadv(f, iov, n, off + got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += r;
    }
    return got;
}
#endif

/* Keys up to this long have their record's header and key read onto the stack (a split read). */
#define SPLIT_HEAD_MAX 2048

/*
 * Store#get's read: preads the record at packed (lo_store_pack: length and offset) from fd, checks it as
 * store_verify does, and returns its value in a new String: one allocation per get. Where preadv
 * exists the record's header and key are read onto the stack and its value straight into the String
 * (one system call, no copy); otherwise the whole record is read into the String and its value moved
 * to the front. nil when the record is short (EOF) or fails a check; a read error raises. Twin:
 * LogFile#read_value (Ruby).
 */
static VALUE
lo_native_store_read_value(VALUE self, VALUE fd, VALUE packed, VALUE key)
{
    StringValue(key);
    int f = NUM2INT(fd);
    uint64_t p = NUM2ULL(packed);
    long len = (long)(p >> LO_STORE_OFFSET_BITS);
    off_t off = (off_t)(p & LO_STORE_OFFSET_MASK);
    if (len <= 0) return Qnil;
    long klen = RSTRING_LEN(key);
#ifdef HAVE_PREADV
    long head_n = LO_STORE_HEADER + klen;
    if (head_n <= SPLIT_HEAD_MAX) {
        if (len < head_n) return Qnil; /* not this key's record */
        unsigned char head[SPLIT_HEAD_MAX];
        long vlen = len - head_n;
        VALUE val = rb_str_buf_new(vlen);
        long got = pread_split(f, off, head, head_n, RSTRING_PTR(val), vlen);
        if (got < 0) rb_sys_fail("store_read_value");
        if (got < len || lo_store_verify_split(head, (size_t)head_n, (const unsigned char *)RSTRING_PTR(val),
                                               (size_t)vlen, RSTRING_PTR(key), (size_t)klen) < 0)
            return Qnil;
        rb_str_set_len(val, vlen);
        return val;
    }
#endif
    VALUE buf = rb_str_buf_new(len);
    char *ptr = RSTRING_PTR(buf);
    long got = 0;
    while (got < len) {
        ssize_t n = pread(f, ptr + got, (size_t)(len - got), off + got);
        if (n < 0) {
            if (errno == EINTR) continue;
            rb_sys_fail("store_read_value");
        }
        if (n == 0) break;
        got += n;
    }
    size_t voff = 0;
    int64_t vlen = lo_store_verify((const unsigned char *)ptr, (size_t)got, RSTRING_PTR(key), (size_t)klen, &voff);
    if (vlen < 0) return Qnil;
    memmove(ptr, ptr + voff, (size_t)vlen);
    rb_str_set_len(buf, (long)vlen);
    return buf;
}

static void
on_hint_entry(void *ctx, const unsigned char *key, size_t klen, uint64_t off, uint32_t reclen)
{
    /* Index values pack the record as lo_store_pack(length, offset): one Integer per key. The key is
     * frozen first: Hash#[]= would otherwise copy it into the VM's interned-string table, which
     * doubled the cost of loading a 6,300-entry hint. */
    VALUE k = rb_obj_freeze(rb_str_new((const char *)key, (long)klen));
    rb_hash_aset((VALUE)ctx, k, ULL2NUM(lo_store_pack(reclen, off)));
}

/* The hint's fields as Ruby sees them: the log id (16 bytes) then the LO_HINT_NFIELDS numbers. */
static VALUE
hint_fields(VALUE buf, const uint64_t *fields)
{
    VALUE ary = rb_ary_new_capa(LO_HINT_NFIELDS + 1);
    rb_ary_push(ary, rb_str_new(RSTRING_PTR(buf) + LO_HINT_ID, LO_HINT_ID_LEN));
    for (int i = 0; i < LO_HINT_NFIELDS; i++) rb_ary_push(ary, ULL2NUM(fields[i]));
    return ary;
}

/* -> [[log id, dev, ino, covered_end, last_off, last hdr crc, last body crc, live_bytes,
 *      garbage_bytes, garbage_records, corrupt_records, corrupt_bytes, swept KiB], {key => packed}] or nil
 *    when the hint is damaged. */
static VALUE
lo_native_store_hint_parse(VALUE self, VALUE buf)
{
    StringValue(buf);
    buf = rb_str_new_frozen(buf);
    uint64_t fields[LO_HINT_NFIELDS];
    VALUE index = rb_hash_new();
    int rc = lo_store_hint_parse((const unsigned char *)RSTRING_PTR(buf), (size_t)RSTRING_LEN(buf), fields,
                                 on_hint_entry, (void *)index);
    if (rc != 0) return Qnil;
    VALUE ary = hint_fields(buf, fields);
    RB_GC_GUARD(buf);
    return rb_assoc_new(ary, index);
}

typedef struct {
    int fd;
    int rc;
    int err;
} sync_args;

static void *
sync_nogvl(void *p)
{
    sync_args *a = p;
#ifdef HAVE_FDATASYNC
    a->rc = fdatasync(a->fd);
#else
    a->rc = fsync(a->fd);
#endif
    a->err = errno;
    return NULL;
}

/*
 * fdatasync(2) without the GVL, so other threads keep appending while the disk flushes (group
 * commit). Any error raises and is never retried: unlike IO#fdatasync, which falls back to fsync
 * and can swallow an EIO, after which the kernel may have dropped the dirty pages.
 */
static VALUE
lo_native_store_fdatasync(VALUE self, VALUE fd)
{
    sync_args a = { NUM2INT(fd), 0, 0 };
    rb_thread_call_without_gvl(sync_nogvl, &a, RUBY_UBF_IO, NULL);
    if (a.rc != 0) rb_syserr_fail(a.err, "store_fdatasync");
    return Qnil;
}

/*
 * Loadout::Native::JournalBuffer: the Journal's in-process buffer and id counter. Each method is
 * one C call that never releases the GVL, so appends from several threads are atomic without a
 * Ruby Mutex (the :none hot path is then ~4 Ruby operations). Writing the buffer is the Journal's
 * job: #take swaps in an empty buffer and hands back the full one. Ruby twin: Journal::RubyBuffer.
 */
typedef struct {
    VALUE buf;
    unsigned long long next_id;
    unsigned long long reserved;
    long limit;
    int open; /* 0 after #disable: every #append returns nil (closed, failed or forked) */
} lo_jbuf;

static void
jbuf_mark(void *p)
{
    rb_gc_mark(((lo_jbuf *)p)->buf);
}

static size_t
jbuf_size(const void *p)
{
    return sizeof(lo_jbuf);
}

static const rb_data_type_t jbuf_type = {
    "Loadout::Native::JournalBuffer",
    { jbuf_mark, RUBY_TYPED_DEFAULT_FREE, jbuf_size, NULL, { NULL } },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY
};

static VALUE
jbuf_alloc(VALUE klass)
{
    lo_jbuf *jb;
    VALUE obj = TypedData_Make_Struct(klass, lo_jbuf, &jbuf_type, jb);
    jb->buf = Qnil;
    return obj;
}

static lo_jbuf *
jbuf_get(VALUE self)
{
    return rb_check_typeddata(self, &jbuf_type);
}

static VALUE
new_buffer(long limit)
{
    VALUE buf = rb_str_buf_new(limit + limit / 2);
    rb_enc_associate_index(buf, rb_ascii8bit_encindex());
    return buf;
}

static VALUE
jbuf_initialize(VALUE self, VALUE next_id, VALUE reserved, VALUE limit)
{
    lo_jbuf *jb = jbuf_get(self);
    jb->next_id = NUM2ULL(next_id);
    jb->reserved = NUM2ULL(reserved);
    jb->limit = NUM2LONG(limit);
    jb->open = 1;
    RB_OBJ_WRITE(self, &jb->buf, new_buffer(jb->limit));
    return self;
}

/*
 * Frames payload under the next id and returns the id, or -id when the buffer is now full (the
 * caller writes it out). nil, with nothing framed, when the id is not reserved yet or the buffer
 * was disabled: the caller takes its slow path, which knows why.
 */
static VALUE
jbuf_append(VALUE self, VALUE payload)
{
    lo_jbuf *jb = jbuf_get(self);
    StringValue(payload);
    if (!jb->open || jb->next_id > jb->reserved) return Qnil;
    unsigned long long id = jb->next_id;
    lo_native_store_frame_id_into(Qnil, jb->buf, INT2FIX(LO_STORE_PUT), ULL2NUM(id), payload);
    jb->next_id = id + 1;
    if (RSTRING_LEN(jb->buf) >= jb->limit) return LL2NUM(-(long long)id);
    return ULL2NUM(id);
}

static VALUE
jbuf_disable(VALUE self)
{
    jbuf_get(self)->open = 0;
    return Qnil;
}

static VALUE
jbuf_frame(VALUE self, VALUE flags, VALUE key, VALUE value)
{
    lo_native_store_frame_into(Qnil, jbuf_get(self)->buf, flags, key, value);
    return self;
}

static VALUE
jbuf_frame_id(VALUE self, VALUE flags, VALUE id, VALUE value)
{
    lo_native_store_frame_id_into(Qnil, jbuf_get(self)->buf, flags, id, value);
    return self;
}

static VALUE
jbuf_full_p(VALUE self)
{
    lo_jbuf *jb = jbuf_get(self);
    return RSTRING_LEN(jb->buf) >= jb->limit ? Qtrue : Qfalse;
}

static VALUE
jbuf_empty_p(VALUE self)
{
    return RSTRING_LEN(jbuf_get(self)->buf) == 0 ? Qtrue : Qfalse;
}

/* Returns the buffered bytes and starts a new buffer. */
static VALUE
jbuf_take(VALUE self)
{
    lo_jbuf *jb = jbuf_get(self);
    VALUE full = jb->buf;
    RB_OBJ_WRITE(self, &jb->buf, new_buffer(jb->limit));
    return full;
}

static VALUE
jbuf_next_id(VALUE self)
{
    return ULL2NUM(jbuf_get(self)->next_id);
}

static VALUE
jbuf_set_reserved(VALUE self, VALUE reserved)
{
    jbuf_get(self)->reserved = NUM2ULL(reserved);
    return reserved;
}

/*
 * Loadout::Native::HintTable: lookups straight from the hint bytes (see lo_hint_table in store.h).
 * HintTable.load(bytes) -> [fields, table] or nil; #lookup(key) -> packed Integer or nil; #size;
 * #bytes (for Format.hint_parse when every key is needed). Ruby twin: Store::RubyHintTable.
 */
typedef struct {
    VALUE buf;
    lo_hint_table table;
} lo_htab;

static void
htab_mark(void *p)
{
    rb_gc_mark(((lo_htab *)p)->buf);
}

static void
htab_free(void *p)
{
    lo_hint_table_free(&((lo_htab *)p)->table);
    xfree(p);
}

static size_t
htab_size(const void *p)
{
    return sizeof(lo_htab) + (((const lo_htab *)p)->table.mask + 1) * sizeof(uint32_t);
}

static const rb_data_type_t htab_type = {
    "Loadout::Native::HintTable",
    { htab_mark, htab_free, htab_size, NULL, { NULL } },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY
};

static VALUE
htab_load(VALUE klass, VALUE buf)
{
    StringValue(buf);
    buf = rb_str_new_frozen(buf);
    lo_htab *h;
    VALUE obj = TypedData_Make_Struct(klass, lo_htab, &htab_type, h);
    RB_OBJ_WRITE(obj, &h->buf, buf);
    uint64_t fields[LO_HINT_NFIELDS];
    int rc = lo_hint_table_build(&h->table, (const unsigned char *)RSTRING_PTR(buf), (size_t)RSTRING_LEN(buf), fields);
    if (rc == -2) rb_memerror();
    if (rc != 0) return Qnil;
    return rb_assoc_new(hint_fields(buf, fields), obj);
}

static VALUE
htab_lookup(VALUE self, VALUE key)
{
    lo_htab *h = rb_check_typeddata(self, &htab_type);
    StringValue(key);
    uint64_t off;
    uint32_t reclen;
    if (!lo_hint_table_lookup(&h->table, (const unsigned char *)RSTRING_PTR(h->buf), RSTRING_PTR(key),
                              (size_t)RSTRING_LEN(key), &off, &reclen))
        return Qnil;
    return ULL2NUM(lo_store_pack(reclen, off));
}

static VALUE
htab_count(VALUE self)
{
    return ULONG2NUM(((lo_htab *)rb_check_typeddata(self, &htab_type))->table.count);
}

static VALUE
htab_bytes(VALUE self)
{
    return ((lo_htab *)rb_check_typeddata(self, &htab_type))->buf;
}

/*
 * store_hint_entries(base_bytes, overlay, gone) -> [entries, count]: the entry section of a hint
 * file (per key: u64 offset, u32 record length, u32 key length, key) for the index made of the
 * hint bytes +base_bytes+ (or nil) overlaid with +overlay+ ({key => packed}, +gone+ marking a
 * deleted key), without first building the whole map as a Ruby Hash (in Ruby, after a CI boot,
 * that was most of the boot's exit). Twin: the loop in Store::Hint.build.
 */
typedef struct {
    VALUE out;
    VALUE overlay;
    VALUE probe;
    VALUE gone;
    long count;
} hint_entries_ctx;

static void
hint_append(VALUE out, const char *key, size_t klen, uint64_t off, uint32_t reclen)
{
    unsigned char head[16];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)(off >> (8 * i));
    for (int i = 0; i < 4; i++) head[8 + i] = (unsigned char)(reclen >> (8 * i));
    for (int i = 0; i < 4; i++) head[12 + i] = (unsigned char)((uint32_t)klen >> (8 * i));
    rb_str_cat(out, (const char *)head, sizeof(head));
    rb_str_cat(out, key, (long)klen);
}

static void
hint_on_base_entry(void *p, const unsigned char *key, size_t klen, uint64_t off, uint32_t reclen)
{
    hint_entries_ctx *ctx = p;
    /* The overlay decides for every key it holds: look it up with one reused probe String. */
    rb_str_resize(ctx->probe, (long)klen);
    memcpy(RSTRING_PTR(ctx->probe), key, klen);
    ENC_CODERANGE_CLEAR(ctx->probe);
    if (rb_hash_lookup2(ctx->overlay, ctx->probe, Qundef) != Qundef) return;
    hint_append(ctx->out, (const char *)key, klen, off, reclen);
    ctx->count++;
}

static int
hint_on_overlay_entry(VALUE key, VALUE packed, VALUE p)
{
    hint_entries_ctx *ctx = (hint_entries_ctx *)p;
    if (packed == ctx->gone || !RB_TYPE_P(key, T_STRING)) return ST_CONTINUE;
    uint64_t v = NUM2ULL(packed);
    hint_append(ctx->out, RSTRING_PTR(key), (size_t)RSTRING_LEN(key), v & LO_STORE_OFFSET_MASK,
                (uint32_t)(v >> LO_STORE_OFFSET_BITS));
    ctx->count++;
    return ST_CONTINUE;
}

static VALUE
lo_native_store_hint_entries(VALUE self, VALUE base, VALUE overlay, VALUE gone)
{
    Check_Type(overlay, T_HASH);
    hint_entries_ctx ctx = { rb_str_buf_new(0), overlay, rb_str_buf_new(64), gone, 0 };
    if (!NIL_P(base)) {
        StringValue(base);
        base = rb_str_new_frozen(base);
        uint64_t fields[LO_HINT_NFIELDS];
        if (lo_store_hint_parse((const unsigned char *)RSTRING_PTR(base), (size_t)RSTRING_LEN(base), fields,
                                hint_on_base_entry, &ctx) != 0)
            return Qnil;
    }
    rb_hash_foreach(overlay, hint_on_overlay_entry, (VALUE)&ctx);
    RB_GC_GUARD(base);
    RB_GC_GUARD(ctx.probe);
    return rb_assoc_new(ctx.out, LONG2NUM(ctx.count));
}

/* Native::STORE_LIMITS: store.h's numbers, which Store::Format must repeat (a test compares them). */
static VALUE
limits_hash(void)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("header")), INT2FIX(LO_STORE_HEADER));
    rb_hash_aset(h, ID2SYM(rb_intern("max_key")), ULONG2NUM(LO_STORE_MAX_KEY));
    rb_hash_aset(h, ID2SYM(rb_intern("max_value")), ULONG2NUM(LO_STORE_MAX_VALUE));
    rb_hash_aset(h, ID2SYM(rb_intern("length_bits")), INT2FIX(LO_STORE_LENGTH_BITS));
    rb_hash_aset(h, ID2SYM(rb_intern("offset_bits")), INT2FIX(LO_STORE_OFFSET_BITS));
    rb_hash_aset(h, ID2SYM(rb_intern("max_log")), ULL2NUM(LO_STORE_MAX_LOG));
    rb_hash_aset(h, ID2SYM(rb_intern("version")), INT2FIX(LO_STORE_VERSION));
    return rb_obj_freeze(h);
}

void
lo_store_native_init(VALUE mNative)
{
    rb_define_const(mNative, "STORE_LIMITS", limits_hash());
    rb_define_module_function(mNative, "store_crc32c", lo_native_store_crc32c, 2);
    rb_define_module_function(mNative, "store_crc32c_sw", lo_native_store_crc32c_sw, 2);
    rb_define_module_function(mNative, "store_crc32c_hardware?", lo_native_store_crc32c_hardware_p, 0);
    rb_define_module_function(mNative, "store_frame_into", lo_native_store_frame_into, 4);
    rb_define_module_function(mNative, "store_frame_id_into", lo_native_store_frame_id_into, 4);
    rb_define_module_function(mNative, "store_parse", lo_native_store_parse, 2);
    rb_define_module_function(mNative, "store_verify", lo_native_store_verify, 2);
    rb_define_module_function(mNative, "store_read_value", lo_native_store_read_value, 3);
    rb_define_module_function(mNative, "store_hint_parse", lo_native_store_hint_parse, 1);
    rb_define_module_function(mNative, "store_hint_entries", lo_native_store_hint_entries, 3);
    rb_define_module_function(mNative, "store_fdatasync", lo_native_store_fdatasync, 1);

    VALUE cHint = rb_define_class_under(mNative, "HintTable", rb_cObject);
    rb_undef_alloc_func(cHint);
    rb_define_singleton_method(cHint, "load", htab_load, 1);
    rb_define_method(cHint, "lookup", htab_lookup, 1);
    rb_define_method(cHint, "size", htab_count, 0);
    rb_define_method(cHint, "bytes", htab_bytes, 0);

    VALUE cBuffer = rb_define_class_under(mNative, "JournalBuffer", rb_cObject);
    rb_define_alloc_func(cBuffer, jbuf_alloc);
    rb_define_method(cBuffer, "initialize", jbuf_initialize, 3);
    rb_define_method(cBuffer, "append", jbuf_append, 1);
    rb_define_method(cBuffer, "frame", jbuf_frame, 3);
    rb_define_method(cBuffer, "frame_id", jbuf_frame_id, 3);
    rb_define_method(cBuffer, "full?", jbuf_full_p, 0);
    rb_define_method(cBuffer, "disable", jbuf_disable, 0);
    rb_define_method(cBuffer, "empty?", jbuf_empty_p, 0);
    rb_define_method(cBuffer, "take", jbuf_take, 0);
    rb_define_method(cBuffer, "next_id", jbuf_next_id, 0);
    rb_define_method(cBuffer, "reserved=", jbuf_set_reserved, 1);
}
