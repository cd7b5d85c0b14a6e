/* interp_profile.c - per-operator timing of the main region
 * (ctosa_interp_options.profile): the runtime adds each operator's wall time
 * to its plan entry; this file reads and resets the sums. */
#include "interp_runtime.h"

uint32_t ctosa_interp_profile_count(const ctosa_interp *it) { return it && it->main ? it->main->n_ops : 0; }

ctosa_error *ctosa_interp_profile_get(const ctosa_interp *it, uint32_t i, ctosa_interp_op_profile *out) {
    if (i >= ctosa_interp_profile_count(it))
        return ctosa_error_new(CTOSA_ERR_USAGE, "profile: operator %u does not exist (%u operators)", i,
                               ctosa_interp_profile_count(it));
    const pop *po = &it->main->ops[i];
    out->index = i;
    out->kind = po->op->kind;
    out->where = po->where;
    out->runs = po->prof_runs;
    out->seconds = po->prof_s;
    out->out_elems = po->out && po->n_out ? po->out[0]->count : 0;
    return NULL;
}

void ctosa_interp_profile_reset(ctosa_interp *it) {
    for (uint32_t i = 0; i < ctosa_interp_profile_count(it); i++) {
        it->main->ops[i].prof_runs = 0;
        it->main->ops[i].prof_s = 0;
    }
}
