/* interp_testutil.h - one-operator graphs run through the public
 * interpreter API (ctosa/interp.h), for the interpreter tests.
 *
 *     int32_t a[] = {1, 2}, b[] = {3, 4}, z[2];
 *     CHECK_OK(it_run(CTOSA_OP_ADD, NULL, 2,
 *                     (it_arg[]){IT_IN(INT32, a, 1, 2), IT_IN(INT32, b, 1, 2)},
 *                     IT_OUT(INT32, 1, 2), z));
 *
 * Inputs marked IT_CONST become constant tensors (SHAPE ones CONST_SHAPE
 * shapes), the others graph inputs fed with ctosa_interp_set_input. Data is
 * in the host encoding, which equals the file encoding for the dtypes used
 * as constants here (little-endian machine). */
#ifndef CTOSA_INTERP_TESTUTIL_H
#define CTOSA_INTERP_TESTUTIL_H

#include <stdio.h>
#include <string.h>

#include "ctosa/ctosa.h"

typedef struct it_arg {
    ctosa_dtype dt;
    uint32_t rank;
    int64_t dims[8];
    const void *data;
    bool is_const;
} it_arg;

#define IT_IN(t, data, rank, ...) ((it_arg){CTOSA_DTYPE_##t, rank, {__VA_ARGS__}, data, false})
#define IT_CONST(t, data, rank, ...) ((it_arg){CTOSA_DTYPE_##t, rank, {__VA_ARGS__}, data, true})
#define IT_OUT(t, rank, ...) ((it_arg){CTOSA_DTYPE_##t, rank, {__VA_ARGS__}, NULL, false})

static inline uint64_t it_count(const it_arg *a) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < a->rank; i++) n *= (uint64_t)a->dims[i];
    return n;
}

/* Builds the graph of one operator (inputs in0.., output "out"). */
static inline ctosa_error *it_build(ctosa_op_kind kind, const ctosa_attr *attr, uint32_t n_in,
                                    const it_arg *in, it_arg out, ctosa_graph **gp) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &g);
    if (e) return e;
    *gp = g;
    if ((e = ctosa_graph_add_region(g, "main", &r)) || (e = ctosa_region_add_block(g, r, "main", &b)))
        return e;
    char names[16][16];
    const char *innames[16];
    for (uint32_t i = 0; i < n_in; i++) {
        snprintf(names[i], sizeof names[i], "in%u", i % 100);
        innames[i] = names[i];
        int32_t d32[8];
        for (uint32_t k = 0; k < in[i].rank; k++) d32[k] = (int32_t)in[i].dims[k];
        ctosa_tensor *t;
        if (in[i].dt == CTOSA_DTYPE_SHAPE) {
            if ((e = ctosa_block_add_shape(g, b, names[i], (uint32_t)it_count(&in[i]), in[i].data, &t)))
                return e;
            const char *o[1] = {names[i]};
            if ((e = ctosa_block_add_op(g, b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, o, NULL, NULL))) return e;
            continue;
        }
        if ((e = ctosa_block_add_tensor(g, b, names[i], in[i].dt, in[i].rank, d32, &t))) return e;
        if (in[i].is_const) {
            uint64_t sz;
            ctosa_dtype_storage_size(in[i].dt, it_count(&in[i]), &sz);
            if ((e = ctosa_tensor_set_data(g, t, in[i].data, sz, true))) return e;
            const char *o[1] = {names[i]};
            if ((e = ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, o, NULL, NULL))) return e;
        } else if ((e = ctosa_block_add_input(g, b, names[i]))) {
            return e;
        }
    }
    int32_t o32[8];
    for (uint32_t k = 0; k < out.rank; k++) o32[k] = (int32_t)out.dims[k];
    if ((e = ctosa_block_add_tensor(g, b, "out", out.dt, out.rank, o32, NULL))) return e;
    const char *outn[1] = {"out"};
    if ((e = ctosa_block_add_op(g, b, kind, n_in, innames, 1, outn, attr, NULL))) return e;
    return ctosa_block_add_output(g, b, "out");
}

/* Runs the operator; copies the output (host encoding) to result. */
static inline ctosa_error *it_run_threads(ctosa_op_kind kind, const ctosa_attr *attr, uint32_t n_in,
                                          const it_arg *in, it_arg out, void *result, int threads) {
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    ctosa_error *e = it_build(kind, attr, n_in, in, out, &g);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    if (!e) e = ctosa_interp_create(g, &opt, &it);
    for (uint32_t i = 0; !e && i < n_in; i++) {
        if (in[i].is_const || in[i].dt == CTOSA_DTYPE_SHAPE) continue;
        char name[16];
        snprintf(name, sizeof name, "in%u", i % 100);
        e = ctosa_interp_set_input(it, name, in[i].dt, in[i].rank, in[i].dims, in[i].data,
                                   it_count(&in[i]) * ctosa_host_elem_size(in[i].dt));
    }
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, "out", &t);
    if (!e && result && t.size) memcpy(result, t.data, (size_t)t.size);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return e;
}

static inline ctosa_error *it_run(ctosa_op_kind kind, const ctosa_attr *attr, uint32_t n_in, const it_arg *in,
                                  it_arg out, void *result) {
    return it_run_threads(kind, attr, n_in, in, out, result, 1);
}

#define IT_ARGS(...) ((const it_arg[]){__VA_ARGS__})
#define IT_NARGS(...) ((uint32_t)(sizeof((it_arg[]){__VA_ARGS__}) / sizeof(it_arg)))

#endif
