/*
 * Background helpers started with posix_spawn (see quiet_spawn.h). Plain C: the Ruby binding is
 * quiet_spawn_native.c, the Ruby twin lib/loadout/quiet_spawn.rb (Process.spawn with the same settings).
 */
#include "quiet_spawn.h"

#ifdef LO_HAVE_QUIET_SPAWN

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/*
 * Closes every descriptor but 0-2 in the child, however the app left them: a pipe, socket or
 * lock file without close-on-exec would otherwise stay open in the worker (a parent reading
 * that pipe would wait for its EOF until the worker exits). closefrom where the C library has
 * it (glibc >= 2.34: close_range in the child), POSIX_SPAWN_CLOEXEC_DEFAULT on macOS, else one
 * close action per descriptor open now (listed from /proc/self/fd or /dev/fd).
 */
static int
close_others(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attr, short *spawn_flags)
{
#if defined(HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP) && !defined(LO_SPAWN_LIST_FDS)
    (void)attr;
    (void)spawn_flags;
    return posix_spawn_file_actions_addclosefrom_np(actions, 3);
#elif defined(POSIX_SPAWN_CLOEXEC_DEFAULT) && !defined(LO_SPAWN_LIST_FDS)
    (void)actions;
    (void)attr;
    *spawn_flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
    return 0;
#else
    (void)attr;
    (void)spawn_flags;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) dir = opendir("/dev/fd");
    if (!dir) return errno ? errno : ENOSYS;
    int own = dirfd(dir), err = 0;
    struct dirent *e;
    while (!err && (e = readdir(dir)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || fd < 3 || fd == own) continue;
        err = posix_spawn_file_actions_addclose(actions, (int)fd);
    }
    closedir(dir);
    return err;
#endif
}

int
lo_spawn_quiet(char *const argv[], char *const envp[], const char *dir, pid_t *pid)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int err = posix_spawn_file_actions_init(&actions);
    if (err) return err;
    err = posix_spawnattr_init(&attr);
    if (err) {
        posix_spawn_file_actions_destroy(&actions);
        return err;
    }

    sigset_t none;
    sigemptyset(&none);
    short spawn_flags = POSIX_SPAWN_SETSIGMASK;
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (!err) err = close_others(&actions, &attr, &spawn_flags);
    if (!err) err = posix_spawn_file_actions_addchdir_np(&actions, dir);
    if (!err) err = posix_spawnattr_setsigmask(&attr, &none);
    if (!err) err = posix_spawnattr_setflags(&attr, spawn_flags);
    if (!err) err = posix_spawn(pid, argv[0], &actions, &attr, argv, envp);

    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return err;
}
#endif
