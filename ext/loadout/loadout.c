#include "loadout.h"

VALUE lo_mNative;

/* Init only: each component registers its own functions under Loadout::Native. */
RUBY_FUNC_EXPORTED void
Init_loadout_ext(void)
{
    VALUE mLoadout = rb_define_module("Loadout");
    lo_mNative = rb_define_module_under(mLoadout, "Native");
    rb_gc_register_address(&lo_mNative);

    lo_scan_native_init(lo_mNative);
    lo_store_native_init(lo_mNative);
    lo_digest_native_init(lo_mNative);
    lo_freshness_native_init(lo_mNative);
    lo_lp_native_init(lo_mNative);
    lo_require_native_init(lo_mNative);
    lo_trust_native_init(lo_mNative);
    lo_ibf_native_init(lo_mNative);
    lo_msgpack_native_init(lo_mNative);
}
