/*
 * Background helpers started with posix_spawn (see quiet_spawn.h). Plain C: the Ruby binding is
 * quiet_spawn_native.c, the Ruby twin lib/loadout/quiet_spawn.rb (Process.spawn with the same settings).
 */
#include "quiet_spawn.h"

#ifdef HAVE_POSIX_SPAWN

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>

#if defined(__APPLE__)
/* A macOS shared library cannot link against environ; the C runtime hands it out instead. */
#include <crt_externs.h>
#define environ (*_NSGetEnviron())
#else
extern char **environ;
#endif

/* Whether the variable "NAME=..." at var is the one extra ("NAME=...") sets. */
static int
same_name(const char *var, const char *extra)
{
    size_t n = strcspn(extra, "=");
    return strncmp(var, extra, n) == 0 && var[n] == '=';
}

static int
replaced(const char *var, char *const extra_env[], size_t n_extra)
{
    for (size_t j = 0; j < n_extra; j++)
        if (same_name(var, extra_env[j])) return 1;
    return 0;
}

int
lo_spawn_quiet(char *const argv[], char *const extra_env[], size_t n_extra, pid_t *pid)
{
    size_t n_env = 0;
    while (environ && environ[n_env]) n_env++;
    char **envp = malloc((n_env + n_extra + 1) * sizeof(*envp));
    if (!envp) return ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (!replaced(environ[i], extra_env, n_extra)) envp[k++] = environ[i];
    for (size_t j = 0; j < n_extra; j++) envp[k++] = extra_env[j];
    envp[k] = NULL;

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int err = posix_spawn_file_actions_init(&actions);
    if (err) {
        free(envp);
        return err;
    }
    err = posix_spawnattr_init(&attr);
    if (err) {
        posix_spawn_file_actions_destroy(&actions);
        free(envp);
        return err;
    }

    sigset_t none;
    sigemptyset(&none);
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (!err) err = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (!err) err = posix_spawnattr_setsigmask(&attr, &none);
    if (!err) err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    if (!err) err = posix_spawn(pid, argv[0], &actions, &attr, argv, envp);

    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    return err;
}
#endif
