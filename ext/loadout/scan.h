#ifndef LOADOUT_SCAN_H
#define LOADOUT_SCAN_H 1

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <dirent.h>

/*
 * A depth-first directory walk built on readdir's d_type, with no Ruby in it.
 *
 * Order (the Ruby twin reproduces it exactly): a directory is reported when it is opened, then
 * its requirable files in readdir order, then each subdirectory, in readdir order, walked the
 * same way. Paths handed to the visitor are relative to the root ("" is the root itself).
 */

/* Reasons reported besides plain errno values. */
#define LO_SCAN_LOOP (-1)             /* a symlinked directory that is one of its own ancestors */
#define LO_SCAN_INVALID_NAME (-2)     /* a name that is not valid UTF-8 */

typedef struct lo_scan_visitor {
    void *ctx;
    void (*on_dir)(void *ctx, const char *rel, size_t len, int64_t mtime_ns);
    void (*on_file)(void *ctx, const char *rel, size_t len);
    void (*on_error)(void *ctx, const char *rel, size_t len, int reason);
} lo_scan_visitor;

typedef struct lo_scan_strs {
    const char **ptrs;
    size_t *lens;
    size_t count;
} lo_scan_strs;

typedef struct lo_scan_node lo_scan_node;

typedef struct lo_scan_state {
    /* inputs */
    const char *root;
    size_t root_len;
    lo_scan_strs exts;         /* suffixes such as ".rb", ".so" */
    lo_scan_strs ignore_names; /* directory names never entered */
    lo_scan_strs ignore_paths; /* absolute directory paths never entered */
    lo_scan_visitor visitor;

    /* resources, released by lo_scan_release even if a visitor callback longjmps */
    DIR *open_dir;       /* portable reader */
    int open_fd;         /* Linux getdents64 reader; -1 when none is open */
    char dents[32768];   /* getdents64 buffer */
    char *path;          /* root + "/" + rel of the entry being looked at */
    size_t path_cap;
    lo_scan_node **stack;
    size_t stack_len, stack_cap;
    lo_scan_node *nodes; /* every node allocated, for release */
} lo_scan_state;

/* Returns 0, or -1 with errno set when memory ran out. */
int lo_scan_run(lo_scan_state *state);
void lo_scan_release(lo_scan_state *state);

#endif
