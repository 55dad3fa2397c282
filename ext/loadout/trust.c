/*
 * The cache's trust rule (see trust.h). Plain C: the Ruby binding is trust_native.c.
 * Reading order: lo_trust_check -> lo_trust_private_group -> lo_trust_open -> lo_trust_walk.
 */
#include "trust.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_as(const struct stat *st, int want_dir, int flags, uid_t euid, lo_trust_report *report);

int
lo_trust_check(const struct stat *st, int want_dir, int flags, lo_trust_report *report)
{
    return check_as(st, want_dir, flags, geteuid(), report);
}

static int
check_as(const struct stat *st, int want_dir, int flags, uid_t euid, lo_trust_report *report)
{
    report->uid = st->st_uid;
    report->gid = st->st_gid;
    report->mode = st->st_mode;
    report->err = 0;
    int problem = LO_TRUST_OK;
    if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
        problem = want_dir ? LO_TRUST_NOT_DIRECTORY : LO_TRUST_NOT_REGULAR;
    else if (flags & LO_TRUST_ANY_OWNER)
        problem = LO_TRUST_OK;
    else if (st->st_uid != euid && st->st_uid != 0)
        problem = LO_TRUST_OWNER;
    else if (st->st_mode & S_IWOTH)
        problem = LO_TRUST_OTHER_WRITABLE;
    else if ((st->st_mode & S_IWGRP) && !(flags & LO_TRUST_SHARED) && !lo_trust_private_group(st->st_gid))
        problem = LO_TRUST_GROUP_WRITABLE;
    report->problem = problem;
    return problem;
}

/* ---- the private group: /etc/nsswitch.conf, /etc/passwd and /etc/group, read as text ---- */

#define DB_MAX (16 << 20)

/* The whole file, NUL-terminated (freed by the caller); NULL with errno set when it cannot be read
 * or is not a regular file under DB_MAX bytes. */
static char *
slurp(const char *path)
{
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); while (fd < 0 && errno == EINTR);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > DB_MAX) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 || (got > 0 && n + (size_t)got >= cap)) { /* an error, or grew while read */
            free(buf);
            buf = NULL;
            errno = EINVAL;
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (buf) buf[n] = '\0';
    return buf;
}

/* Cuts the next line off *cursor (in place); NULL at the end. */
static char *
next_line(char **cursor)
{
    char *line = *cursor;
    if (!line || !*line) return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *cursor = nl + 1;
    } else {
        *cursor = line + strlen(line);
    }
    return line;
}

/* Splits line on ':' in place into at most max fields; returns how many. */
static int
split_fields(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++) {
        if (*p == ':') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

/* A decimal id field (digits only, up to 2^32 - 1); -1 when it is not one. */
static long long
id_field(const char *s)
{
    long long v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > 0xffffffffLL) return -1;
    }
    return v;
}

/* Whether a userdb drop-in directory has records (systemd can then define users we cannot list). */
static int
userdb_records(void)
{
    static const char *const dirs[] = { "/etc/userdb", "/run/userdb", "/run/host/userdb", "/usr/local/lib/userdb",
                                        "/usr/lib/userdb" };
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        DIR *d = opendir(dirs[i]);
        if (!d) {
            if (errno == ENOENT || errno == ENOTDIR) continue;
            return 1; /* cannot be looked at: in doubt */
        }
        struct dirent *e;
        int found = 0;
        while (!found && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) found = 1;
        closedir(d);
        if (found) return 1;
    }
    return 0;
}

/* Whether users and groups come from files only (see trust.h). A missing nsswitch.conf means
 * files (glibc's default; musl has no other source). */
static int
files_only(void)
{
    char *conf = slurp("/etc/nsswitch.conf");
    if (!conf) return errno == ENOENT;
    int ok = 1, systemd = 0;
    char *cursor = conf, *line;
    while (ok && (line = next_line(&cursor)) != NULL) {
        while (*line == ' ' || *line == '\t') line++;
        int db = strncmp(line, "passwd:", 7) == 0 ? 7 : strncmp(line, "group:", 6) == 0 ? 6 : 0;
        if (!db) continue;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        int in_action = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line + db, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
            /* [NOTFOUND=return] and the like are actions, not sources */
            if (in_action || tok[0] == '[') {
                in_action = tok[strlen(tok) - 1] != ']';
                continue;
            }
            if (strcmp(tok, "systemd") == 0) systemd = 1;
            else if (strcmp(tok, "files") != 0) ok = 0;
        }
    }
    free(conf);
    return ok && !(systemd && userdb_records());
}

int
lo_trust_private_group(gid_t gid)
{
    if (gid == 0 || !files_only()) return 0;
    uid_t euid = geteuid();
    char *passwd = slurp("/etc/passwd");
    if (!passwd) return 0;
    char name[256] = "";
    int found = 0, others = 0;
    char *cursor = passwd, *line, *f[7];
    while (!others && (line = next_line(&cursor)) != NULL) {
        if (!*line || *line == '#') continue;
        /* NIS "compat" entries (+user, -user, +@netgroup) stand for users listed elsewhere */
        if (*line == '+' || *line == '-' || split_fields(line, f, 7) < 4) {
            others = 1;
            break;
        }
        long long uid = id_field(f[2]), pgid = id_field(f[3]);
        if (uid < 0 || pgid < 0) {
            others = 1; /* a line we cannot read: in doubt */
        } else if ((uid_t)uid == euid) {
            if (!found) {
                found = 1;
                if ((gid_t)pgid != gid || strlen(f[0]) >= sizeof(name)) others = 1;
                else strcpy(name, f[0]);
            }
        } else if ((gid_t)pgid == gid) {
            others = 1; /* another user's primary group: their processes run with it */
        }
    }
    free(passwd);
    if (!found || others) return 0;

    char *group = slurp("/etc/group");
    if (!group) return 0;
    int ok = 0;
    cursor = group;
    while ((line = next_line(&cursor)) != NULL) {
        if (!*line || *line == '#') continue;
        if (*line == '+' || *line == '-' || split_fields(line, f, 4) < 4) break; /* in doubt: not private */
        long long g = id_field(f[2]);
        if (g < 0) break;
        if ((gid_t)g != gid) continue;
        ok = strcmp(f[0], name) == 0;
        /* members: a comma-separated list, where only the user may appear */
        for (char *m = f[3]; ok && *m;) {
            char *comma = strchr(m, ',');
            size_t len = comma ? (size_t)(comma - m) : strlen(m);
            if (len && (len != strlen(name) || strncmp(m, name, len) != 0)) ok = 0;
            m += len + (comma ? 1 : 0);
        }
        break; /* the first entry for gid is the one the system uses */
    }
    free(group);
    return ok;
}

/* ---- files and directories ---- */

static int
errno_problem(int err, lo_trust_report *report)
{
    memset(report, 0, sizeof(*report));
    report->err = err;
    if (err == ENOENT || err == ENOTDIR) report->problem = LO_TRUST_MISSING;
    else if (err == ELOOP || err == EMLINK) report->problem = LO_TRUST_SYMLINK; /* O_NOFOLLOW (EMLINK: BSD) */
    else report->problem = LO_TRUST_ERRNO;
    return report->problem;
}

int
lo_trust_open(int dirfd, const char *name, int flags, struct stat *st, lo_trust_report *report)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (!(flags & LO_TRUST_ANY_OWNER)) oflags |= O_NOFOLLOW;
    int fd;
    do fd = openat(dirfd, name, oflags); while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        errno_problem(errno, report);
        return -1;
    }
    if (fstat(fd, st) != 0) {
        errno_problem(errno, report);
        close(fd);
        return -1;
    }
    if (lo_trust_check(st, 0, flags, report) != LO_TRUST_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

static int
set_bad(char *bad, size_t badlen, const char *path, int problem)
{
    if (badlen) {
        strncpy(bad, path, badlen - 1);
        bad[badlen - 1] = '\0';
    }
    return problem;
}

/* Whether path is root or inside it (both normalised). */
static int
inside(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return 1;
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* One pass over dir and its parents; *symlinked is set when a component was a symlink. */
static int
walk_once(const char *dir, const char *root, int flags, int *symlinked, char *bad, size_t badlen,
          lo_trust_report *report)
{
    char cur[PATH_MAX];
    if (strlen(dir) >= sizeof(cur)) return set_bad(bad, badlen, dir, errno_problem(ENAMETOOLONG, report));
    strcpy(cur, dir);
    int under_root = root && inside(dir, root);
    int first = 1;
    uid_t euid = geteuid();
    for (;;) {
        struct stat st;
        if (lstat(cur, &st) != 0) return set_bad(bad, badlen, cur, errno_problem(errno, report));
        if (S_ISLNK(st.st_mode)) {
            if (st.st_uid != euid && st.st_uid != 0) {
                check_as(&st, 1, flags, euid, report);
                report->problem = LO_TRUST_SYMLINK;
                return set_bad(bad, badlen, cur, LO_TRUST_SYMLINK);
            }
            *symlinked = 1;
            if (stat(cur, &st) != 0) return set_bad(bad, badlen, cur, errno_problem(errno, report));
        }
        /* Outside the app root, a sticky world-writable directory of root's or ours (/tmp) ends
         * the walk: others cannot rename or remove what we own in it. Its owner can, so one owned
         * by another user is checked like any directory (and refused). Inside the range it is
         * refused like any other world-writable directory. */
        if (!under_root && !first && S_ISDIR(st.st_mode) && (st.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH) &&
            (st.st_uid == 0 || st.st_uid == euid))
            return LO_TRUST_OK;
        if (check_as(&st, 1, flags, euid, report) != LO_TRUST_OK) return set_bad(bad, badlen, cur, report->problem);
        if (under_root && strcmp(cur, root) == 0) return LO_TRUST_OK;
        char *slash = strrchr(cur, '/');
        if (!slash || (slash == cur && cur[1] == '\0')) return LO_TRUST_OK; /* "/" was checked */
        if (slash == cur) cur[1] = '\0';
        else *slash = '\0';
        first = 0;
    }
}

int
lo_trust_walk(const char *dir, const char *root, int flags, char *bad, size_t badlen, lo_trust_report *report)
{
    int symlinked = 0;
    memset(report, 0, sizeof(*report));
    if (walk_once(dir, root, flags, &symlinked, bad, badlen, report) != LO_TRUST_OK || !symlinked)
        return report->problem;

    /* A symlink in the path: the directories the real path goes through count as well. */
    char real_dir[PATH_MAX], real_root[PATH_MAX];
    if (!realpath(dir, real_dir)) return set_bad(bad, badlen, dir, errno_problem(errno, report));
    if (root && !realpath(root, real_root)) return set_bad(bad, badlen, root, errno_problem(errno, report));
    int again = 0;
    return walk_once(real_dir, root ? real_root : NULL, flags, &again, bad, badlen, report);
}
