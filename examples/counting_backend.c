/* counting_backend.c - the example backend of counting_backend.h: counts
 * prepare / run / release and forwards each call to the interpreter
 * backend. */
#include "counting_backend.h"

#include <stdio.h>
#include <stdlib.h>

/* What prepare hands back to the runtime: the interpreter's own state and
 * which partition this is. */
typedef struct counting_state {
    void *inner;
    uint32_t index;
} counting_state;

static ctosa_error *cb_prepare(void *user, const ctosa_backend_partition *part, void **state) {
    counting_backend *cb = user;
    *state = NULL;
    if (cb->n_parts == COUNTING_BACKEND_MAX_PARTS)
        return ctosa_error_new(CTOSA_ERR_LIMIT, "counting backend: more than %d partitions",
                               COUNTING_BACKEND_MAX_PARTS);
    counting_state *st = calloc(1, sizeof *st);
    if (!st) return ctosa_error_new(CTOSA_ERR_NOMEM, "counting backend: out of memory");
    /* A device backend would compile part->graph here. */
    ctosa_error *e = cb->inner->prepare(cb->inner->user, part, &st->inner);
    if (e) {
        free(st);
        return e;
    }
    st->index = cb->n_parts++;
    snprintf(cb->names[st->index], sizeof cb->names[st->index], "%s", part->name);
    cb->prepares++;
    *state = st;
    return NULL;
}

static ctosa_error *cb_run(void *user, void *state, const ctosa_interp_tensor *inputs, uint32_t n_inputs,
                           ctosa_interp_tensor *outputs, uint32_t n_outputs) {
    counting_backend *cb = user;
    counting_state *st = state;
    cb->runs++;
    cb->runs_of[st->index]++;
    /* A device backend would copy inputs[i].data to the device, run, and
     * copy the results into outputs[i].data (outputs[i].size bytes). */
    return cb->inner->run(cb->inner->user, st->inner, inputs, n_inputs, outputs, n_outputs);
}

static void cb_release(void *user, void *state) {
    counting_backend *cb = user;
    counting_state *st = state;
    if (!st) return;
    cb->releases++;
    cb->inner->release(cb->inner->user, st->inner);
    free(st);
}

void counting_backend_init(counting_backend *cb) {
    *cb = (counting_backend){0};
    cb->inner = ctosa_backend_interpreter();
    cb->backend = (ctosa_backend){
        .name = "counting", .user = cb, .prepare = cb_prepare, .run = cb_run, .release = cb_release};
}
