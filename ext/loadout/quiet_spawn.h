#ifndef LOADOUT_QUIET_SPAWN_H
#define LOADOUT_QUIET_SPAWN_H 1

#include <stddef.h>
#include <sys/types.h>

/* Built where posix_spawn can also set the child's working directory (glibc >= 2.29, macOS
 * 10.15); elsewhere Loadout::QuietSpawn uses its Process.spawn twin. */
#if defined(HAVE_POSIX_SPAWN) && defined(HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCHDIR_NP)
#define LO_HAVE_QUIET_SPAWN 1
#endif

/*
 * Starts a background helper without copying the caller. Ruby's Process.spawn forks, and a fork
 * of a big process copies its page tables first (15 ms for a boot that loaded 6,000 files,
 * measured with strace -tt), which an exiting boot pays in full. posix_spawn starts the child
 * the vfork way: the parent is only paused until the child has exec'ed.
 *
 * The child holds nothing of the caller's but what it is given: argv (argv[0] an absolute path;
 * no PATH search, no shell), exactly the environment envp (NULL-terminated "NAME=VALUE"
 * strings), the working directory dir, stdin/stdout/stderr on /dev/null, no other descriptor
 * (whatever the caller left without close-on-exec), and an empty signal mask; like
 * Process.spawn, signals the caller ignores stay ignored (nohup keeps covering it) and handled
 * ones are back at their defaults. Returns 0 and sets *pid, or an errno value.
 */
int lo_spawn_quiet(char *const argv[], char *const envp[], const char *dir, pid_t *pid);

#endif
