/*
 * The cache's trust rule (see trust.h). Plain C: the Ruby binding is trust_native.c.
 * Reading order: lo_trust_check -> lo_trust_open -> lo_trust_walk.
 */
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Whether gid is the private group of the effective user: the group of the same name as the user,
 * its primary group, with no member but the user. A file that group can write is writable by that
 * user alone (umask 002 systems make every directory so). Looked up only for a group-writable
 * file, so a warm boot never reads the user and group databases.
 */
int
lo_trust_private_group(gid_t gid)
{
    long size = sysconf(_SC_GETPW_R_SIZE_MAX);
    long gsize = sysconf(_SC_GETGR_R_SIZE_MAX);
    if (size < 16384) size = 16384;
    if (gsize < 16384) gsize = 16384;
    char *buf = malloc((size_t)size + (size_t)gsize);
    if (!buf) return 0;

    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    int ok = 0;
    if (getpwuid_r(geteuid(), &pw, buf, (size_t)size, &pwp) == 0 && pwp && pw.pw_gid == gid &&
        getgrgid_r(gid, &gr, buf + size, (size_t)gsize, &grp) == 0 && grp && strcmp(gr.gr_name, pw.pw_name) == 0) {
        ok = 1;
        for (char **m = gr.gr_mem; m && *m; m++)
            if (strcmp(*m, pw.pw_name) != 0) ok = 0;
    }
    free(buf);
    return ok;
}

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
lo_trust_open(const char *path, int flags, struct stat *st, lo_trust_report *report)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (!(flags & LO_TRUST_ANY_OWNER)) oflags |= O_NOFOLLOW;
    int fd;
    do fd = open(path, oflags); while (fd < 0 && errno == EINTR);
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
        /* Outside the app root, a sticky world-writable directory (/tmp) ends the walk: others
         * cannot rename or remove what we own in it. Inside the range it is refused like any
         * other world-writable directory. */
        if (!under_root && !first && S_ISDIR(st.st_mode) && (st.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH))
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
