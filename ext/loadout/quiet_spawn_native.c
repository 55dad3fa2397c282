/*
 * Ruby binding of quiet_spawn.c, registered on Loadout::Native:
 *   spawn_quiet(argv, env, dir) -> pid; raises SystemCallError when the child cannot be started
 *     argv: Array of Strings, argv[0] an absolute path; env: Array of "NAME=VALUE" Strings, the
 *     child's whole environment; dir: the child's working directory
 * Arguments are checked by Loadout::QuietSpawn before they get here.
 */
#include "loadout.h"
#include "quiet_spawn.h"

#include <string.h>

#ifdef LO_HAVE_QUIET_SPAWN
/* Fills out[0..n) with the C strings of +ary+'s Strings and NULL-terminates it. */
static void
fill_c_strings(VALUE ary, char **out)
{
    long n = RARRAY_LEN(ary);
    for (long i = 0; i < n; i++) {
        VALUE s = RARRAY_AREF(ary, i);
        out[i] = StringValueCStr(s);
    }
    out[n] = NULL;
}

static VALUE
native_spawn_quiet(VALUE self, VALUE argv, VALUE env, VALUE dir)
{
    Check_Type(argv, T_ARRAY);
    Check_Type(env, T_ARRAY);
    argv = rb_ary_dup(argv); /* the Strings stay reachable from here while C holds their bytes */
    env = rb_ary_dup(env);
    FilePathValue(dir);
    long n_argv = RARRAY_LEN(argv), n_env = RARRAY_LEN(env);
    VALUE holder = 0;
    /* argv, NULL, env, NULL in one buffer (on the stack when small; freed by the GC if a String
     * check raises) */
    char **strings = RB_ALLOCV_N(char *, holder, n_argv + n_env + 2);
    char **c_argv = strings, **c_env = strings + n_argv + 1;
    fill_c_strings(argv, c_argv);
    fill_c_strings(env, c_env);
    if (!c_argv[0] || c_argv[0][0] != '/') rb_raise(rb_eArgError, "spawn_quiet: argv[0] must be an absolute path");

    pid_t pid;
    int err = lo_spawn_quiet(c_argv, c_env, StringValueCStr(dir), &pid);
    RB_ALLOCV_END(holder);
    RB_GC_GUARD(argv);
    RB_GC_GUARD(env);
    RB_GC_GUARD(dir);
    if (err) rb_syserr_fail(err, "posix_spawn");
    return INT2NUM((int)pid);
}

#endif

void
lo_quiet_spawn_native_init(VALUE mNative)
{
#ifdef LO_HAVE_QUIET_SPAWN
    rb_define_module_function(mNative, "spawn_quiet", native_spawn_quiet, 3);
#endif
}
