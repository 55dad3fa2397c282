/*
 * Directory walk for Loadout::Scan (seed 000): readdir's d_type tells files from directories,
 * so the only stat calls are one fstat per directory (its mtime and identity) and an fstatat
 * for symlinks and DT_UNKNOWN entries. Plain C: the binding lives in scan_native.c.
 */
#include "scan.h"
#include "stat_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/syscall.h>
#endif

/*
 * Reading a directory: on Linux getdents64(2) straight into a buffer, which saves the fstat that
 * glibc's fdopendir() makes on every directory (we already fstat it for its mtime). Elsewhere,
 * fdopendir/readdir.
 */
#if defined(__linux__) && defined(SYS_getdents64)
#define LO_USE_GETDENTS 1
struct lo_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
#endif

struct lo_scan_node {
    lo_scan_node *parent;   /* ancestors, for symlink loop detection */
    lo_scan_node *next_alloc;
    dev_t dev;
    ino_t ino;
    size_t rel_len;
    char rel[];             /* NUL-terminated relative path */
};

static int
ensure_path_cap(lo_scan_state *s, size_t need)
{
    if (need <= s->path_cap) return 0;
    size_t cap = s->path_cap ? s->path_cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(s->path, cap);
    if (!p) return -1;
    s->path = p;
    s->path_cap = cap;
    return 0;
}

/* Writes root + "/" + rel (+ "/" + name) into s->path; returns the full length. */
static long
build_path(lo_scan_state *s, const char *rel, size_t rel_len, const char *name, size_t name_len)
{
    size_t len = s->root_len;
    size_t need = s->root_len + 1 + rel_len + 1 + name_len + 1;
    if (ensure_path_cap(s, need) < 0) return -1;
    memcpy(s->path, s->root, s->root_len);
    if (rel_len) {
        if (len == 0 || s->path[len - 1] != '/') s->path[len++] = '/';
        memcpy(s->path + len, rel, rel_len);
        len += rel_len;
    }
    if (name_len) {
        if (len == 0 || s->path[len - 1] != '/') s->path[len++] = '/';
        memcpy(s->path + len, name, name_len);
        len += name_len;
    }
    s->path[len] = '\0';
    return (long)len;
}

static lo_scan_node *
new_node(lo_scan_state *s, lo_scan_node *parent, const char *rel, size_t rel_len, const char *name, size_t name_len)
{
    size_t len = rel_len + (rel_len && name_len ? 1 : 0) + name_len;
    lo_scan_node *n = malloc(sizeof(lo_scan_node) + len + 1);
    if (!n) return NULL;
    n->parent = parent;
    n->dev = 0;
    n->ino = 0;
    n->rel_len = len;
    memcpy(n->rel, rel, rel_len);
    if (rel_len && name_len) n->rel[rel_len] = '/';
    memcpy(n->rel + len - name_len, name, name_len);
    n->rel[len] = '\0';
    n->next_alloc = s->nodes;
    s->nodes = n;
    return n;
}

static int
push_node(lo_scan_state *s, lo_scan_node *n)
{
    if (s->stack_len == s->stack_cap) {
        size_t cap = s->stack_cap ? s->stack_cap * 2 : 64;
        lo_scan_node **p = realloc(s->stack, cap * sizeof(*p));
        if (!p) return -1;
        s->stack = p;
        s->stack_cap = cap;
    }
    s->stack[s->stack_len++] = n;
    return 0;
}

static int
has_suffix(const lo_scan_strs *set, const char *name, size_t len)
{
    for (size_t i = 0; i < set->count; i++) {
        size_t l = set->lens[i];
        if (len >= l && memcmp(name + len - l, set->ptrs[i], l) == 0) return 1;
    }
    return 0;
}

static int
is_member(const lo_scan_strs *set, const char *str, size_t len)
{
    for (size_t i = 0; i < set->count; i++) {
        if (set->lens[i] == len && memcmp(set->ptrs[i], str, len) == 0) return 1;
    }
    return 0;
}

/* Strict UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF), like String#valid_encoding?. */
static int
valid_utf8(const unsigned char *p, size_t len)
{
    const unsigned char *e = p + len;
    while (p < e) {
        unsigned char c = *p;
        if (c < 0x80) { p++; continue; }
        size_t n;
        unsigned int cp;
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return 0;
        if ((size_t)(e - p) <= n) return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
        p += n + 1;
    }
    return 1;
}

static void
report(lo_scan_state *s, const char *rel, size_t rel_len, const char *name, size_t name_len, int reason)
{
    /* Reuse the node constructor's join logic without allocating a node. */
    size_t len = rel_len + (rel_len && name_len ? 1 : 0) + name_len;
    char stackbuf[512];
    char *buf = len < sizeof(stackbuf) ? stackbuf : malloc(len + 1);
    if (!buf) return;
    memcpy(buf, rel, rel_len);
    if (rel_len && name_len) buf[rel_len] = '/';
    memcpy(buf + len - name_len, name, name_len);
    buf[len] = '\0';
    s->visitor.on_error(s->visitor.ctx, buf, len, reason);
    if (buf != stackbuf) free(buf);
}

/* Classifies one directory entry: reports a file, stacks a subdirectory, or skips it. */
static int
visit_entry(lo_scan_state *s, lo_scan_node *node, const char *name, int dtype, int dfd)
{
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) return 0;
    size_t name_len = strlen(name);
    if (!valid_utf8((const unsigned char *)name, name_len)) {
        report(s, node->rel, node->rel_len, name, name_len, LO_SCAN_INVALID_NAME);
        return 0;
    }
    int requirable = has_suffix(&s->exts, name, name_len);
    int is_dir = 0, is_file = 0;
    switch (dtype) {
    case DT_DIR: is_dir = 1; break;
    case DT_REG: is_file = requirable; break;
    case DT_LNK:
    case DT_UNKNOWN: {
        /* Follow the link the way open(2) in require would. */
        struct stat lst;
        if (fstatat(dfd, name, &lst, 0) < 0) {
            if (requirable) report(s, node->rel, node->rel_len, name, name_len, errno);
            return 0;
        }
        is_dir = S_ISDIR(lst.st_mode);
        is_file = requirable && S_ISREG(lst.st_mode);
        break;
    }
    default: break;
    }
    if (is_file) {
        size_t len = node->rel_len + (node->rel_len ? 1 : 0) + name_len;
        char stackbuf[512];
        char *buf = len < sizeof(stackbuf) ? stackbuf : malloc(len + 1);
        if (!buf) return -1;
        memcpy(buf, node->rel, node->rel_len);
        if (node->rel_len) buf[node->rel_len] = '/';
        memcpy(buf + len - name_len, name, name_len);
        buf[len] = '\0';
        s->visitor.on_file(s->visitor.ctx, buf, len);
        if (buf != stackbuf) free(buf);
    } else if (is_dir && !is_member(&s->ignore_names, name, name_len)) {
        if (s->ignore_paths.count) {
            long full = build_path(s, node->rel, node->rel_len, name, name_len);
            if (full < 0) return -1;
            if (is_member(&s->ignore_paths, s->path, (size_t)full)) return 0;
        }
        lo_scan_node *child = new_node(s, node, node->rel, node->rel_len, name, name_len);
        if (!child || push_node(s, child) < 0) return -1;
    }
    return 0;
}

/* Walks one directory: reports it, its files, and stacks its subdirectories. */
static int
visit(lo_scan_state *s, lo_scan_node *node)
{
    if (build_path(s, node->rel, node->rel_len, NULL, 0) < 0) return -1;

    int fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        /* A root that is missing (or not a directory) is simply an empty tree. */
        if (!(node->parent == NULL && (errno == ENOENT || errno == ENOTDIR))) {
            report(s, node->rel, node->rel_len, NULL, 0, errno);
        }
        return 0;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = errno;
        close(fd);
        report(s, node->rel, node->rel_len, NULL, 0, err);
        return 0;
    }
    for (lo_scan_node *a = node->parent; a; a = a->parent) {
        if (a->dev == st.st_dev && a->ino == st.st_ino) {
            close(fd);
            report(s, node->rel, node->rel_len, NULL, 0, LO_SCAN_LOOP);
            return 0;
        }
    }
    node->dev = st.st_dev;
    node->ino = st.st_ino;
#ifdef LO_USE_GETDENTS
    s->open_fd = fd;
#else
    s->open_dir = fdopendir(fd);
    if (!s->open_dir) {
        int err = errno;
        close(fd);
        report(s, node->rel, node->rel_len, NULL, 0, err);
        return 0;
    }
#endif
    s->visitor.on_dir(s->visitor.ctx, node->rel, node->rel_len,
                      LO_STAT_NS(st, m));

    size_t first_child = s->stack_len;
    int read_error = 0;
#ifdef LO_USE_GETDENTS
    for (;;) {
        long nread = syscall(SYS_getdents64, fd, s->dents, sizeof(s->dents));
        if (nread <= 0) {
            if (nread < 0) read_error = errno;
            break;
        }
        for (long off = 0; off < nread;) {
            struct lo_dirent64 *ent = (struct lo_dirent64 *)(s->dents + off);
            off += ent->d_reclen;
            const char *name = ent->d_name;
            int dtype = ent->d_type;
            int dfd = fd;
#else
    {
        struct dirent *ent;
        errno = 0;
        while ((ent = readdir(s->open_dir)) != NULL) {
            const char *name = ent->d_name;
            int dtype = ent->d_type;
            int dfd = dirfd(s->open_dir);
#endif
            if (visit_entry(s, node, name, dtype, dfd) < 0) return -1;
#ifndef LO_USE_GETDENTS
            errno = 0;
#endif
        }
#ifndef LO_USE_GETDENTS
        if (errno != 0) read_error = errno;
#endif
    }
    if (read_error) report(s, node->rel, node->rel_len, NULL, 0, read_error);
#ifdef LO_USE_GETDENTS
    close(fd);
    s->open_fd = -1;
#else
    closedir(s->open_dir);
    s->open_dir = NULL;
#endif

    /* Children were stacked in readdir order; reverse them so the first one is walked first. */
    for (size_t i = first_child, j = s->stack_len; i + 1 < j; i++, j--) {
        lo_scan_node *tmp = s->stack[i];
        s->stack[i] = s->stack[j - 1];
        s->stack[j - 1] = tmp;
    }
    return 0;
}

int
lo_scan_run(lo_scan_state *s)
{
    s->open_fd = -1;
    lo_scan_node *root = new_node(s, NULL, "", 0, "", 0);
    if (!root || push_node(s, root) < 0) return -1;
    while (s->stack_len > 0) {
        lo_scan_node *node = s->stack[--s->stack_len];
        if (visit(s, node) < 0) return -1;
    }
    return 0;
}

void
lo_scan_release(lo_scan_state *s)
{
    if (s->open_dir) closedir(s->open_dir);
    s->open_dir = NULL;
    if (s->open_fd >= 0) close(s->open_fd);
    s->open_fd = -1;
    free(s->path);
    s->path = NULL;
    free(s->stack);
    s->stack = NULL;
    while (s->nodes) {
        lo_scan_node *next = s->nodes->next_alloc;
        free(s->nodes);
        s->nodes = next;
    }
}
