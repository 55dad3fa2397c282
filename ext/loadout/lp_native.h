#ifndef LOADOUT_LP_NATIVE_H
#define LOADOUT_LP_NATIVE_H 1

#include "loadout.h"
#include "lp_table.h"

/*
 * The load path index as Ruby objects (lp_native.c), shared with the require hook
 * (require_native.c), which reads the active table on every require.
 *
 * A LoadPathTable is built from an Array of LoadPathListing objects in $LOAD_PATH order, where nil
 * stands for an item the index cannot describe (not listable, relative, not a String): a name found
 * at or after the first such position, or not found when one exists, is not the index's to answer.
 */
typedef struct lo_lp_index {
    lo_lp_table table;
    VALUE listings;    /* Array of LoadPathListing (or nil), kept alive for the slots pointing into them */
    VALUE bases;       /* Array of frozen Strings, parallel: the directory Ruby joins names to */
    long count;
    long first_opaque; /* position of the first nil in listings, or count */
} lo_lp_index;

/* The LoadPathTable behind +obj+ (raises TypeError for anything else). */
lo_lp_index *lo_lp_index_get(VALUE obj);

#endif
