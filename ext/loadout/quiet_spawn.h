#ifndef LOADOUT_QUIET_SPAWN_H
#define LOADOUT_QUIET_SPAWN_H 1

#include <stddef.h>
#include <sys/types.h>

/*
 * Starts a background helper without copying the caller. Ruby's Process.spawn forks, and a fork
 * of a big process copies its page tables first (15 ms for a boot that loaded 6,000 files,
 * measured with strace -tt), which an exiting boot pays in full. posix_spawn starts the child
 * the vfork way: the parent is only paused until the child has exec'ed.
 *
 * argv[0] is an absolute path (no PATH search, no shell). The child gets the caller's
 * environment with the NAME=VALUE strings of extra_env added (replacing variables of the same
 * name), stdin/stdout/stderr on /dev/null and an empty signal mask; like Process.spawn, signals
 * the caller ignores stay ignored (nohup keeps covering it) and handled ones are back at their
 * defaults. Returns 0 and sets *pid, or an errno value.
 */
int lo_spawn_quiet(char *const argv[], char *const extra_env[], size_t n_extra, pid_t *pid);

#endif
