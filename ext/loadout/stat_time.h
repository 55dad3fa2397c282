#ifndef LOADOUT_STAT_TIME_H
#define LOADOUT_STAT_TIME_H 1

/*
 * Nanosecond file times from a struct stat, whatever the platform names them. extconf.rb checks
 * which member exists: st_mtim (Linux, the BSDs, POSIX 2008) or st_mtimespec (macOS); with
 * neither, whole seconds. LO_STAT_NS(st, m) is the mtime, LO_STAT_NS(st, c) the ctime.
 */
#include <stdint.h>
#include <sys/stat.h>

#if defined(HAVE_STRUCT_STAT_ST_MTIM)
#define LO_STAT_NS(st, which) \
    ((int64_t)(st).st_##which##tim.tv_sec * 1000000000LL + (int64_t)(st).st_##which##tim.tv_nsec)
#elif defined(HAVE_STRUCT_STAT_ST_MTIMESPEC)
#define LO_STAT_NS(st, which) \
    ((int64_t)(st).st_##which##timespec.tv_sec * 1000000000LL + (int64_t)(st).st_##which##timespec.tv_nsec)
#else
#define LO_STAT_NS(st, which) ((int64_t)(st).st_##which##time * 1000000000LL)
#endif

#endif
