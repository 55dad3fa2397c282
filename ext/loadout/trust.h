#ifndef LOADOUT_TRUST_H
#define LOADOUT_TRUST_H 1

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * The trust rule for the cache (OpenSSH's rule for ~/.ssh): whoever can write the cache can make
 * the app run their code, so a file or directory loadout reads its cache from must be
 *   - owned by the process's effective uid or by root,
 *   - not writable by others, and not by the group (unless LO_TRUST_SHARED: a CI cache shared by
 *     one build user and group; or the group is the owner's private group, see
 *     lo_trust_private_group),
 *   - of the expected type: a regular file (opened with O_NOFOLLOW|O_NONBLOCK, so a symlink, a
 *     FIFO or a device is refused without blocking) or a directory.
 * Plain C, no VALUE: the Ruby binding is trust_native.c; the Ruby twin lib/loadout/trust/checks.rb
 * must give the same verdicts.
 */

enum lo_trust_problem {
    LO_TRUST_OK = 0,
    LO_TRUST_MISSING,        /* ENOENT/ENOTDIR: nothing there (not a problem for an optional file) */
    LO_TRUST_SYMLINK,        /* a symlink where a file must be, or a symlink owned by another user */
    LO_TRUST_NOT_REGULAR,    /* a FIFO, device, socket or directory where a file must be */
    LO_TRUST_NOT_DIRECTORY,
    LO_TRUST_OWNER,          /* owned by a user other than the euid and root */
    LO_TRUST_GROUP_WRITABLE,
    LO_TRUST_OTHER_WRITABLE,
    LO_TRUST_ERRNO           /* open/stat/read failed with another errno (saved in the report) */
};

/* Flags */
#define LO_TRUST_SHARED 1  /* a group-writable file or directory is accepted */
#define LO_TRUST_ANY_OWNER 2 /* only the type is checked (source files: any owner, symlinks followed) */

/* What a check found, for the warning: the path is the caller's (or the walk's) own. */
typedef struct lo_trust_report {
    int problem;
    int err;      /* errno for LO_TRUST_ERRNO */
    uid_t uid;
    gid_t gid;
    mode_t mode;  /* st_mode: type and permission bits */
} lo_trust_report;

/*
 * Whether gid is the effective user's private group: a group only that user can be in, by any
 * means the system lets us check. Every condition must hold, or it is not (when in doubt, not
 * private):
 *   - gid is not 0 (root's group: containers run arbitrary uids with gid 0, OpenShift every one);
 *   - users and groups come from files only (/etc/nsswitch.conf lists nothing but "files" and
 *     "systemd" for passwd and group, and systemd has no userdb records): a directory service
 *     (LDAP, SSSD, NIS) may hold users that cannot be listed;
 *   - /etc/passwd has the user, with gid as its primary group, and no other user (another uid)
 *     whose primary group is gid;
 *   - /etc/group names gid like the user, with no member but the user.
 * Read only for a group-writable file, so a warm boot never reads these files.
 */
int lo_trust_private_group(gid_t gid);

/* Checks one stat result against the rule (want_dir: a directory is expected, else a regular file). */
int lo_trust_check(const struct stat *st, int want_dir, int flags, lo_trust_report *report);

/*
 * Opens name relative to dirfd (AT_FDCWD: a path) read-only (O_NOFOLLOW unless LO_TRUST_ANY_OWNER,
 * always O_NONBLOCK|O_CLOEXEC) and checks the descriptor with fstat (*st). Returns the
 * descriptor, or -1 with report->problem set (the descriptor is closed then). Never blocks on a FIFO.
 */
int lo_trust_open(int dirfd, const char *name, int flags, struct stat *st, lo_trust_report *report);

/*
 * Checks the directory dir and its parents: up to and including root when dir is root or under
 * it (root may be NULL: no app root), else up to the first sticky world-writable directory that
 * root or the effective user owns (like /tmp, not itself checked: others cannot rename or remove
 * what we own in it; a sticky directory another user owns is that user's to rename in, so it is
 * checked like any other) or /.
 * A symlinked component must be owned by the euid or root, and its target is checked; when any
 * component was a symlink the real path is walked as well. dir and root are absolute and
 * normalised (no "." or ".." components, no trailing slash). Returns the problem; on a problem,
 * bad (of size badlen) holds the path it concerns.
 */
int lo_trust_walk(const char *dir, const char *root, int flags, char *bad, size_t badlen, lo_trust_report *report);

#endif
