/*
 * Ruby binding of trust.c, registered on Loadout::Native (the Ruby twin is
 * lib/loadout/trust/checks.rb; Loadout::Trust checks arguments before they get here). +at+ is a
 * directory descriptor (Trust::DirHandle: names are resolved in that directory, never through
 * its path again) or nil (a path, relative to the current directory):
 *   trust_read(at, path, flags) -> the file's bytes (a binary String), nil when it does not exist,
 *     or a problem report when it fails the rule (or cannot be read)
 *   trust_lstat(at, path, flags) -> nil when path is missing or a regular file passing the rule,
 *     else a problem report (without opening it: a quick look, not the check as opened)
 *   trust_walk(dir, root_or_nil, flags) -> nil when dir and its parents pass, or a problem report
 *   trust_private_group?(gid) -> whether gid is the effective user's private group
 * and the file operations of Trust::DirHandle, each one system call on (at, name), raising
 * SystemCallError: trust_openat(at, name, oflags, mode) -> descriptor (always with
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC), trust_renameat(at, from, to), trust_unlinkat(at, name),
 * trust_same_file_at(at, name, fd) -> whether name is the file open as fd (no symlink followed),
 * trust_children_at(at) -> the names in the directory (binary Strings).
 * flags: 1 = a group-writable file is accepted (shared cache), 2 = any owner, symlinks followed
 * (only the type is checked: a source file). A report is [problem, path, uid, gid, mode, errno],
 * problem one of :missing :symlink :not_regular :not_directory :owner :group_writable
 * :other_writable :error.
 */
#include "loadout.h"
#include "trust.h"

#include "ruby/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static const char *const problem_names[] = {
    "ok", "missing", "symlink", "not_regular", "not_directory", "owner", "group_writable", "other_writable", "error"
};

static VALUE
report_ary(VALUE path, const lo_trust_report *r)
{
    int p = r->problem;
    if (p < 0 || p > LO_TRUST_ERRNO) p = LO_TRUST_ERRNO;
    VALUE out = rb_ary_new_capa(6);
    rb_ary_push(out, ID2SYM(rb_intern(problem_names[p])));
    rb_ary_push(out, path);
    rb_ary_push(out, ULONG2NUM((unsigned long)r->uid));
    rb_ary_push(out, ULONG2NUM((unsigned long)r->gid));
    rb_ary_push(out, UINT2NUM((unsigned int)r->mode));
    rb_ary_push(out, INT2NUM(r->err));
    return out;
}

static int
at_arg(VALUE at)
{
    return NIL_P(at) ? AT_FDCWD : NUM2INT(at);
}

typedef struct {
    int fd;
    long size_hint;
    VALUE str;
    int err;
} read_args;

static VALUE
read_all(VALUE p)
{
    read_args *a = (read_args *)p;
    long cap = a->size_hint > 0 ? a->size_hint : 4096, n = 0;
    a->str = rb_str_buf_new(cap);
    for (;;) {
        if (n == cap) { /* the file grew since fstat */
            rb_str_set_len(a->str, n);
            rb_str_modify_expand(a->str, cap);
            cap = (long)rb_str_capacity(a->str);
        }
        ssize_t got = read(a->fd, RSTRING_PTR(a->str) + n, (size_t)(cap - n));
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR) continue;
            a->err = errno;
            break;
        }
        n += got;
    }
    rb_str_set_len(a->str, n);
    return Qnil;
}

static VALUE
close_fd(VALUE p)
{
    close(((read_args *)p)->fd);
    return Qnil;
}

static VALUE
native_trust_read(VALUE self, VALUE at, VALUE path, VALUE flags)
{
    FilePathValue(path);
    struct stat st;
    lo_trust_report r;
    int fd = lo_trust_open(at_arg(at), StringValueCStr(path), NUM2INT(flags), &st, &r);
    if (fd < 0) return r.problem == LO_TRUST_MISSING ? Qnil : report_ary(path, &r);

    read_args a = { fd, (long)st.st_size, Qnil, 0 };
    rb_ensure(read_all, (VALUE)&a, close_fd, (VALUE)&a);
    if (a.err) {
        r.problem = LO_TRUST_ERRNO;
        r.err = a.err;
        return report_ary(path, &r);
    }
    return a.str;
}

static VALUE
native_trust_walk(VALUE self, VALUE dir, VALUE root, VALUE flags)
{
    FilePathValue(dir);
    const char *c_root = NULL;
    if (!NIL_P(root)) {
        FilePathValue(root);
        c_root = StringValueCStr(root);
    }
    char bad[PATH_MAX];
    lo_trust_report r;
    if (lo_trust_walk(StringValueCStr(dir), c_root, NUM2INT(flags), bad, sizeof(bad), &r) == LO_TRUST_OK) return Qnil;
    return report_ary(rb_str_new_cstr(bad), &r);
}

static VALUE
native_trust_lstat(VALUE self, VALUE at, VALUE path, VALUE flags)
{
    FilePathValue(path);
    struct stat st;
    lo_trust_report r;
    if (fstatat(at_arg(at), StringValueCStr(path), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return Qnil;
        memset(&r, 0, sizeof(r));
        r.problem = LO_TRUST_ERRNO;
        r.err = errno;
        return report_ary(path, &r);
    }
    if (S_ISLNK(st.st_mode)) {
        memset(&r, 0, sizeof(r));
        r.problem = LO_TRUST_SYMLINK;
        return report_ary(path, &r);
    }
    if (lo_trust_check(&st, 0, NUM2INT(flags), &r) == LO_TRUST_OK) return Qnil;
    return report_ary(path, &r);
}

static VALUE
native_trust_private_group_p(VALUE self, VALUE gid)
{
    return lo_trust_private_group((gid_t)NUM2ULONG(gid)) ? Qtrue : Qfalse;
}

static VALUE
native_trust_openat(VALUE self, VALUE at, VALUE name, VALUE oflags, VALUE mode)
{
    FilePathValue(name);
    int flags = NUM2INT(oflags) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd;
    do fd = openat(at_arg(at), StringValueCStr(name), flags, (mode_t)NUM2UINT(mode)); while (fd < 0 && errno == EINTR);
    if (fd < 0) rb_syserr_fail_str(errno, name);
    return INT2NUM(fd);
}

static VALUE
native_trust_renameat(VALUE self, VALUE at, VALUE from, VALUE to)
{
    FilePathValue(from);
    FilePathValue(to);
    int d = at_arg(at);
    if (renameat(d, StringValueCStr(from), d, StringValueCStr(to)) != 0) rb_syserr_fail_str(errno, to);
    return Qnil;
}

static VALUE
native_trust_unlinkat(VALUE self, VALUE at, VALUE name)
{
    FilePathValue(name);
    if (unlinkat(at_arg(at), StringValueCStr(name), 0) != 0) rb_syserr_fail_str(errno, name);
    return Qnil;
}

/* The store checks this before every append (another process may have compacted, renaming a new
 * log over ours): two stats and no object. fd: a descriptor, or the open File itself. */
static VALUE
native_trust_same_file_at(VALUE self, VALUE at, VALUE name, VALUE fd)
{
    FilePathValue(name);
    /* rb_io_descriptor (Ruby 3.1+), not rb_io_t's fd: that field is deprecated from 3.3 on. */
    int f = RB_TYPE_P(fd, T_FILE) ? rb_io_descriptor(fd) : NUM2INT(fd);
    struct stat a, b;
    if (fstatat(at_arg(at), StringValueCStr(name), &a, AT_SYMLINK_NOFOLLOW) != 0) return Qfalse;
    if (fstat(f, &b) != 0) return Qfalse;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino ? Qtrue : Qfalse;
}

static VALUE
native_trust_children_at(VALUE self, VALUE at)
{
    /* A description of its own: readdir moves the offset, which dup would share with at. */
    int fd;
    do fd = openat(at_arg(at), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) rb_syserr_fail(errno, "trust_children_at");
    DIR *d = fdopendir(fd);
    if (!d) {
        int err = errno;
        close(fd);
        rb_syserr_fail(err, "trust_children_at");
    }
    VALUE names = rb_ary_new();
    int err;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) break;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        rb_ary_push(names, rb_str_new_cstr(e->d_name)); /* binary: a name is bytes */
    }
    err = errno;
    closedir(d);
    if (err) rb_syserr_fail(err, "trust_children_at");
    return names;
}

void
lo_trust_native_init(VALUE mNative)
{
    rb_define_module_function(mNative, "trust_private_group?", native_trust_private_group_p, 1);
    rb_define_module_function(mNative, "trust_lstat", native_trust_lstat, 3);
    rb_define_module_function(mNative, "trust_read", native_trust_read, 3);
    rb_define_module_function(mNative, "trust_walk", native_trust_walk, 3);
    rb_define_module_function(mNative, "trust_openat", native_trust_openat, 4);
    rb_define_module_function(mNative, "trust_renameat", native_trust_renameat, 3);
    rb_define_module_function(mNative, "trust_unlinkat", native_trust_unlinkat, 2);
    rb_define_module_function(mNative, "trust_same_file_at", native_trust_same_file_at, 3);
    rb_define_module_function(mNative, "trust_children_at", native_trust_children_at, 1);
}
