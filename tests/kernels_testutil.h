/* kernels_testutil.h - building itensors and interp_ops by hand so kernel
 * tests call interp_k_<OP> directly (ctx NULL: no thread pool, no runtime;
 * or kt_ctx, a context holding only a thread pool). */
#ifndef CTOSA_KERNELS_TESTUTIL_H
#define CTOSA_KERNELS_TESTUTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"

#define KT_UNUSED __attribute__((unused))

/* Tensors made with kt_new live until kt_free_all(). */
#define KT_MAX 256
static KT_UNUSED itensor *kt_all[KT_MAX];
static int kt_n;

static KT_UNUSED size_t kt_esz(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return 1;
    case CTOSA_DTYPE_INT16: return 2;
    case CTOSA_DTYPE_INT32: return 4;
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return 8;
    default: return 4;
    }
}

/* A zero-filled tensor; dims is rank values. */
static KT_UNUSED itensor *kt_new(ctosa_dtype t, uint32_t rank, const int64_t *dims) {
    itensor *x = calloc(1, sizeof *x);
    x->name = "t";
    x->dtype = t;
    x->rank = rank;
    x->count = 1;
    for (uint32_t i = 0; i < rank; i++) {
        x->shape[i] = dims[i];
        x->count *= (uint64_t)dims[i];
    }
    x->data = calloc(x->count ? x->count : 1, kt_esz(t));
    if (kt_n < KT_MAX) kt_all[kt_n++] = x;
    return x;
}

#define KT_DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define KT_T(t, rank, ...) kt_new(CTOSA_DTYPE_##t, rank, KT_DIMS(__VA_ARGS__))

/* One-element tensor holding integer v (zero points, shifts). */
static KT_UNUSED itensor *kt_scalar_i(ctosa_dtype t, int64_t v) {
    itensor *x = kt_new(t, 1, KT_DIMS(1));
    switch (kt_esz(t)) {
    case 1: ((int8_t *)x->data)[0] = (int8_t)v; break;
    case 2: ((int16_t *)x->data)[0] = (int16_t)v; break;
    case 4: ((int32_t *)x->data)[0] = (int32_t)v; break;
    default: ((int64_t *)x->data)[0] = v; break;
    }
    return x;
}

static KT_UNUSED void kt_free_all(void) {
    for (int i = 0; i < kt_n; i++) {
        free(kt_all[i]->data);
        free(kt_all[i]);
    }
    kt_n = 0;
}

/* Set to run the kernels' plain reference loops (interp_op.reference). */
static KT_UNUSED bool kt_reference;
/* The context kt_run passes (NULL: single-threaded) and the fused post
 * (interp_op.post) it offers, or NULL. */
static KT_UNUSED interp_ctx *kt_ctx;
static KT_UNUSED const interp_post *kt_post;

/* Runs kernel fn with the given inputs/outputs and attributes. */
static KT_UNUSED ctosa_error *kt_run(interp_kernel_fn fn, ctosa_op_kind kind, const ctosa_attr *attr,
                                     uint32_t n_in, itensor **in, uint32_t n_out, itensor **out) {
    ctosa_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    if (attr) op.attr = *attr;
    interp_op o = {.ctx = kt_ctx,
                   .op = &op,
                   .index = 0,
                   .where = "op #0 TEST",
                   .in = in,
                   .n_in = n_in,
                   .out = out,
                   .n_out = n_out,
                   .post = kt_post,
                   .reference = kt_reference};
    return fn(&o);
}

#define KT_I32S(...) ((ctosa_i32s){(const int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__}) / 4})

/* Deterministic pseudo-random numbers. */
static uint64_t kt_rng = 88172645463325252ull;
static KT_UNUSED uint32_t kt_rand(void) {
    kt_rng ^= kt_rng << 13;
    kt_rng ^= kt_rng >> 7;
    kt_rng ^= kt_rng << 17;
    return (uint32_t)(kt_rng >> 11);
}
static KT_UNUSED int64_t kt_randi(int64_t lo, int64_t hi) {
    return lo + (int64_t)(kt_rand() % (uint64_t)(hi - lo + 1));
}
static KT_UNUSED float kt_randf(void) { return (float)((double)(kt_rand() % 2000001) / 1000000.0 - 1.0); }

#endif
