/* rt_backend.c - the built-in partition backend: the reference
 * interpreter, one ctosa_interp per prepared graph (constants prepared
 * once, reused on every run). */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

static ctosa_error *interp_prepare(void *user, const ctosa_backend_partition *part, void **state) {
    (void)user;
    *state = NULL;
    ctosa_interp *it = NULL;
    ctosa_error *e = ctosa_interp_create(part->graph, part->interp, &it);
    if (!e && part->custom_ops) e = ctosa_custom_registry_attach(part->custom_ops, it);
    if (e) {
        ctosa_interp_free(it);
        return e;
    }
    *state = it;
    return NULL;
}

static ctosa_error *interp_run(void *user, void *state, const ctosa_interp_tensor *inputs, uint32_t n_inputs,
                               ctosa_interp_tensor *outputs, uint32_t n_outputs) {
    (void)user;
    ctosa_interp *it = state;
    for (uint32_t i = 0; i < n_inputs; i++) {
        const ctosa_interp_tensor *t = &inputs[i];
        ctosa_error *e = ctosa_interp_set_input(it, t->name, t->dtype, t->rank, t->shape, t->data, t->size);
        if (e) return e;
    }
    ctosa_error *e = ctosa_interp_run(it);
    if (e) return e;
    for (uint32_t i = 0; i < n_outputs; i++) {
        ctosa_interp_tensor v;
        if ((e = ctosa_interp_get_output(it, outputs[i].name, &v))) return e;
        if (v.size != outputs[i].size || v.dtype != outputs[i].dtype)
            return ctosa_error_new(CTOSA_ERR_INTERNAL, "output '%s': %llu bytes of %s, %llu of %s expected",
                                   outputs[i].name, (unsigned long long)v.size, ctosa_dtype_short(v.dtype),
                                   (unsigned long long)outputs[i].size, ctosa_dtype_short(outputs[i].dtype));
        if (v.size) memcpy(outputs[i].data, v.data, v.size);
    }
    return NULL;
}

static void interp_release(void *user, void *state) {
    (void)user;
    ctosa_interp_free(state);
}

static const ctosa_backend INTERP_BACKEND = {
    .name = "interpreter",
    .user = NULL,
    .prepare = interp_prepare,
    .run = interp_run,
    .release = interp_release,
};

const ctosa_backend *ctosa_backend_interpreter(void) { return &INTERP_BACKEND; }
