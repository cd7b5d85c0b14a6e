/*
 * lower_gather.c - Gather, GatherElements, GatherND, ScatterElements (and
 * the old Scatter), ScatterND.
 *
 * TOSA has one gather and one scatter, both on rank-3 tensors:
 *     GATHER  values [N,K,C], indices [N,W] (i32)      -> [N,W,C]
 *     SCATTER values_in [N,K,C], indices [N,W], input [N,W,C] -> [N,K,C]
 * Every ONNX form is reshaped onto them:
 *   - Gather(axis): N = prod(dims before axis), K = dim[axis], C = prod(dims
 *     after axis), W = number of indices (the same indices for every n).
 *   - GatherElements / ScatterElements: data flattened to [1, size, 1];
 *     each index becomes the flat element position (computed at compile time
 *     for constant indices, with ADD/MUL of a constant base otherwise).
 *   - ScatterND: N = 1, K = prod(data dims addressed by an index tuple),
 *     C = the rest; tuples are linearised to one position.
 *   - GatherND: the same with N = prod(batch_dims leading dims).
 * Negative indices are wrapped: at compile time for constants, with
 * t = i + K; t - (t / K) * K (INTDIV) for runtime indices.
 * Gather under specs with int64 keeps int64 indices i64 (GATHER's i64-index
 * rows); the other forms CAST runtime int64 indices to i32; without
 * int64 the framework's int64 rules decide (a runtime int64 graph input is
 * int64_not_enabled).
 * Repeated constant indices with reduction 'none' are applied in order
 * (the last update wins), in rounds of unique positions like below.
 * Scatter reductions (add, mul, max, min) need constant indices: float
 * 'add' sums the updates per target with a MATMUL by a constant one-hot
 * [K, W] matrix and ADDs them to the data; the others run in rounds of
 * unique positions (GATHER current values, combine, SCATTER back), so
 * duplicate indices accumulate as ONNX requires.
 */
#include "lower/lower_build.h"

#include <stdlib.h>
#include <string.h>

/* Constant indices as int64 (count, or -1 when not constant). */
static int64_t const_indices(lower_ctx *c, uint32_t i, const int64_t **v) { return lw_const_i64(c, i, v); }

/* Runtime indices of input i as an INT32 tensor (cast from int64 when the
 * spec has int64). Rejects (returns NULL) when they cannot be carried. */
static const char *runtime_indices(lower_ctx *c, uint32_t i, const lower_value **out_v, lower_status *st) {
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_has_input(c, i) ? lw_in(c, i) : NULL;
    if (!v) {
        *st = lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: indices are missing", nd->op_type);
        return NULL;
    }
    if (!v->static_shape) {
        *st = lw_reject(c, LOWER_DYNAMIC_SHAPE, v->name, "%s: indices '%s' are not static", nd->op_type,
                        v->name);
        return NULL;
    }
    *out_v = v;
    if (v->t == CTOSA_DTYPE_INT32 || v->t == CTOSA_DTYPE_INT64) {
        const char *x = lw_input(c, i);
        if (x && v->t == CTOSA_DTYPE_INT64)
            x = lw_cast(c, x, CTOSA_DTYPE_INT64, CTOSA_DTYPE_INT32, v->rank, v->shape);
        if (!x) *st = lw_failed(c);
        return x;
    }
    *st = lw_reject(c, LOWER_NEEDS_CONSTANT, v->name,
                    "%s: runtime %s indices '%s' cannot be carried without int64 in the spec; "
                    "bind them as a constant",
                    nd->op_type, lw_onnx_dtype_name(v->onnx_dtype), v->name);
    return NULL;
}

/* Wraps negative runtime indices into [0, K): t = i + K; t - (t / K) * K.
 * k_name is a constant broadcastable to the indices (rank r). */
static const char *wrap_runtime(lower_ctx *c, const char *idx, uint32_t rank, const int64_t *shape,
                                const char *k_name) {
    const ctosa_tensor *ti = lw_tensor_info(c, idx);
    const ctosa_dtype I = ti ? ti->dtype : CTOSA_DTYPE_INT32; /* i32, or i64 (Gather under int64) */
    const char *t = lw_binary(c, CTOSA_OP_ADD, idx, k_name, I, rank, shape);
    if (!t) return NULL;
    const char *q = lw_binary(c, CTOSA_OP_INTDIV, t, k_name, I, rank, shape);
    if (!q) return NULL;
    const char *qk = lw_mul(c, q, k_name, I, rank, shape);
    if (!qk) return NULL;
    return lw_binary(c, CTOSA_OP_SUB, t, qk, I, rank, shape);
}

static lower_status index_range(lower_ctx *c, int64_t idx, int64_t k) {
    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: index %lld is out of range [-%lld, %lld)",
                     lw_node(c)->op_type, (long long)idx, (long long)k, (long long)k);
}

static bool fits_i32(int64_t v) { return v >= 0 && v <= INT32_MAX; }

/* Indices are computed as i32; TOSA 1.1 pairs int64 values only with int64
 * indices, so they are widened for int64 data. */
static const char *index_for(lower_ctx *c, const char *idx, ctosa_dtype values_t, uint32_t rank,
                             const int64_t *shape) {
    const ctosa_tensor *ti = lw_tensor_info(c, idx);
    if (ti && ti->dtype == CTOSA_DTYPE_INT64) return idx; /* already i64 (wide index math) */
    if (idx && values_t == CTOSA_DTYPE_INT64)
        return lw_cast(c, idx, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT64, rank, shape);
    return idx;
}

/* Linear positions of `rows` index tuples of length kd (input 1, read
 * row-major as [rows, kd]) into data dims first .. first+kd-1, negative
 * entries wrapped: an i32 tensor of shape out_shape (rank 2, rows
 * elements). Constant indices also give the positions in *cpos (NULL for
 * runtime ones: MUL by the strides, REDUCE_SUM over the tuple). */
static const char *tuple_positions(lower_ctx *c, const lower_value *v, int64_t first, int64_t kd,
                                   int64_t rows, const int64_t *out_shape, const int32_t **cpos,
                                   lower_status *st) {
    *cpos = NULL;
    int64_t stride[LOWER_MAX_RANK];
    stride[kd - 1] = 1;
    for (int64_t j = kd - 1; j > 0; j--) stride[j - 1] = stride[j] * v->shape[first + j];
    const int64_t *ci;
    if (const_indices(c, 1, &ci) >= 0) {
        int32_t *pos = arena_alloc(lw_arena(c), (size_t)rows * sizeof *pos);
        if (!pos) {
            *st = lw_failed(c);
            return NULL;
        }
        for (int64_t w = 0; w < rows; w++) {
            int64_t p = 0;
            for (int64_t j = 0; j < kd; j++) {
                int64_t d = v->shape[first + j], x = ci[w * kd + j];
                int64_t y = x < 0 ? x + d : x;
                if (y < 0 || y >= d) {
                    *st = index_range(c, x, d);
                    return NULL;
                }
                p += y * stride[j];
            }
            pos[w] = (int32_t)p;
        }
        *cpos = pos;
        const char *r = lw_const_i32(c, 2, out_shape, pos);
        if (!r) *st = lw_failed(c);
        return r;
    }
    const lower_value *rv;
    const char *idx = runtime_indices(c, 1, &rv, st);
    if (!idx) return NULL;
    const ctosa_dtype I = CTOSA_DTYPE_INT32;
    int64_t wk[2] = {rows, kd}, w1[2] = {rows, 1}, one_k[2] = {1, kd};
    int32_t dims[LOWER_MAX_RANK], strd[LOWER_MAX_RANK];
    for (int64_t j = 0; j < kd; j++) {
        dims[j] = (int32_t)v->shape[first + j];
        strd[j] = (int32_t)stride[j];
    }
    idx = lw_reshape(c, idx, I, 2, wk);
    if (idx) idx = wrap_runtime(c, idx, 2, wk, lw_const_i32(c, 2, one_k, dims));
    if (idx) idx = lw_mul(c, idx, lw_const_i32(c, 2, one_k, strd), I, 2, wk);
    if (idx && kd > 1) {
        ctosa_attr a = {0};
        a.axis = 1;
        idx = lw_unary(c, CTOSA_OP_REDUCE_SUM, idx, I, 2, w1, &a);
    }
    if (idx) idx = lw_reshape(c, idx, I, 2, out_shape);
    if (!idx) *st = lw_failed(c);
    return idx;
}

/* GATHER of data (input 0) as [N, K, C] with indices [N, W], reshaped to
 * the node's output 0. */
static lower_status emit_gather(lower_ctx *c, const lower_value *v, const char *idx, int64_t N, int64_t K,
                                int64_t W, int64_t C, uint32_t out_rank, const int64_t *out_shape) {
    int64_t vals_shape[3] = {N, K, C}, g_shape[3] = {N, W, C};
    const char *vals = lw_input(c, 0);
    if (vals) vals = lw_reshape(c, vals, v->t, 3, vals_shape);
    if (!vals || !idx) return lw_failed(c);
    const char *in[2] = {vals, idx};
    const char *g = lw_tensor(c, v->t, 3, g_shape);
    if (!g || !lw_op(c, CTOSA_OP_GATHER, 2, in, 1, &g, NULL)) return lw_failed(c);
    const char *o = lw_reshape(c, g, v->t, out_rank, out_shape);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

/* --------------------------------------------------------------- Gather */

static lower_status lower_gather(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), v->rank, "axis", &axis)) return LOWER_REJECT;
    const lower_value *iv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!iv || !iv->static_shape)
        return lw_reject(c, iv ? LOWER_DYNAMIC_SHAPE : LOWER_INPUT_FALLBACK, iv ? iv->name : NULL,
                         "Gather: indices are missing or not static");
    int64_t N = 1, K = v->shape[axis], C = 1, W = lw_count(iv->rank, iv->shape);
    for (int32_t i = 0; i < axis; i++) N *= v->shape[i];
    for (uint32_t i = (uint32_t)axis + 1; i < v->rank; i++) C *= v->shape[i];
    uint32_t out_rank = v->rank - 1 + iv->rank;
    if (out_rank > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gather: output rank %u too large", out_rank);
    int64_t out_shape[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (int32_t i = 0; i < axis; i++) out_shape[k++] = v->shape[i];
    for (uint32_t i = 0; i < iv->rank; i++) out_shape[k++] = iv->shape[i];
    for (uint32_t i = (uint32_t)axis + 1; i < v->rank; i++) out_shape[k++] = v->shape[i];
    if (W == 0 || N * C == 0) {
        static const uint8_t none[8];
        lw_set_output_const(c, 0, v->onnx_dtype, out_rank, out_shape, none, 0);
        return LOWER_OK;
    }
    if (!fits_i32(N * K * C) || !fits_i32(N * W))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "Gather: tensor too large for i32 indices");
    /* Under int64 specs, int64 indices (and any indices of int64 data)
     * stay i64: GATHER has i64-index rows for every value type there, and
     * the index arithmetic then needs no i32 rows (PRO-INT only). */
    const bool wide = lw_tosa_dtype(c, CTOSA_ONNX_INT64) == CTOSA_DTYPE_INT64 &&
                      (iv->onnx_dtype == CTOSA_ONNX_INT64 || v->t == CTOSA_DTYPE_INT64);
    const ctosa_dtype I = wide ? CTOSA_DTYPE_INT64 : CTOSA_DTYPE_INT32;
    int64_t nw[2] = {N, W};
    const char *idx;
    const int64_t *ci;
    if (const_indices(c, 1, &ci) >= 0 && W == 1) {
        /* one constant index (torch's x[:, -1]): a SLICE, which every
         * target has (Ethos-U55 has no GATHER) */
        int64_t x = ci[0] < 0 ? ci[0] + K : ci[0];
        if (x < 0 || x >= K) return index_range(c, ci[0], K);
        int64_t vs[3] = {N, K, C}, st3[3] = {0, x, 0}, sz3[3] = {N, 1, C};
        const char *vals = lw_input(c, 0);
        if (vals) vals = lw_reshape(c, vals, v->t, 3, vs);
        if (vals) vals = lw_slice(c, vals, v->t, 3, vs, st3, sz3);
        if (vals) vals = lw_reshape(c, vals, v->t, out_rank, out_shape);
        if (!vals) return lw_failed(c);
        lw_set_output(c, 0, vals);
        return LOWER_OK;
    }
    if (const_indices(c, 1, &ci) >= 0) {
        int32_t *buf = arena_alloc(lw_arena(c), (size_t)(N * W) * sizeof *buf);
        double *dbuf = arena_alloc(lw_arena(c), (size_t)(N * W) * sizeof *dbuf);
        if (!buf || !dbuf) return lw_failed(c);
        for (int64_t w = 0; w < W; w++) {
            int64_t x = ci[w] < 0 ? ci[w] + K : ci[w];
            if (x < 0 || x >= K) return index_range(c, ci[w], K);
            for (int64_t n = 0; n < N; n++) buf[n * W + w] = (int32_t)x, dbuf[n * W + w] = (double)x;
        }
        idx = wide ? lw_const_from_f64(c, I, 2, nw, dbuf) : lw_const_i32(c, 2, nw, buf);
    } else if (wide) {
        idx = lw_input(c, 1);
        if (idx && iv->t != I) idx = lw_cast(c, idx, iv->t, I, iv->rank, iv->shape);
        if (!idx) return lw_failed(c);
        int64_t one_w[2] = {1, W};
        idx = lw_reshape(c, idx, I, 2, one_w);
        if (idx) idx = wrap_runtime(c, idx, 2, one_w, lw_scalar(c, I, 2, (double)K));
        if (idx && N > 1) {
            int64_t mult[2] = {N, 1};
            idx = lw_tile(c, idx, I, 2, one_w, mult);
        }
    } else {
        const lower_value *rv;
        idx = runtime_indices(c, 1, &rv, &st);
        if (!idx) return st;
        int64_t one_w[2] = {1, W};
        idx = lw_reshape(c, idx, I, 2, one_w);
        if (idx) idx = wrap_runtime(c, idx, 2, one_w, lw_scalar(c, I, 2, (double)K));
        if (idx && N > 1) {
            int64_t mult[2] = {N, 1};
            idx = lw_tile(c, idx, I, 2, one_w, mult);
        }
    }
    if (idx && !wide) idx = index_for(c, idx, v->t, 2, nw);
    return emit_gather(c, v, idx, N, K, W, C, out_rank, out_shape);
}

/* ------------------------------------------- element-wise index forms */

/* Flat positions into data (shape dshape, rank r) for an indices tensor of
 * shape ishape along axis. Constant indices: fills *cbuf. Runtime: returns
 * the INT32 [1, W] tensor name. */
static const char *element_positions(lower_ctx *c, const lower_value *dv, const lower_value *iv, int32_t axis,
                                     lower_status *st, const int32_t **cpos) {
    *cpos = NULL;
    uint32_t r = dv->rank;
    int64_t stride[LOWER_MAX_RANK];
    stride[r - 1] = 1;
    for (uint32_t i = r - 1; i > 0; i--) stride[i - 1] = stride[i] * dv->shape[i];
    int64_t W = lw_count(iv->rank, iv->shape), K = dv->shape[axis];
    int64_t one_w[2] = {1, W};
    const ctosa_dtype I = CTOSA_DTYPE_INT32;
    /* base[p] = position of p with p[axis] = 0 */
    int32_t *base = arena_alloc(lw_arena(c), (size_t)W * sizeof *base);
    if (!base) return NULL;
    int64_t p[LOWER_MAX_RANK] = {0};
    for (int64_t w = 0; w < W; w++) {
        int64_t pos = 0;
        for (uint32_t i = 0; i < r; i++)
            if ((int32_t)i != axis) pos += p[i] * stride[i];
        base[w] = (int32_t)pos;
        for (int32_t i = (int32_t)r - 1; i >= 0; i--) {
            if (++p[i] < iv->shape[i]) break;
            p[i] = 0;
        }
    }
    const int64_t *ci;
    if (const_indices(c, 1, &ci) >= 0) {
        for (int64_t w = 0; w < W; w++) {
            int64_t x = ci[w] < 0 ? ci[w] + K : ci[w];
            if (x < 0 || x >= K) {
                *st = index_range(c, ci[w], K);
                return NULL;
            }
            base[w] += (int32_t)(x * stride[axis]);
        }
        *cpos = base;
        const char *r_ = lw_const_i32(c, 2, one_w, base);
        if (!r_) *st = lw_failed(c);
        return r_;
    }
    const lower_value *rv;
    /* Under int64 specs, int64 runtime indices (or any indices of int64
     * data) are computed in i64: the i64 arithmetic rows need no PRO-INT,
     * and GATHER/SCATTER take i64 indices for every value type there. */
    const bool wide = lw_tosa_dtype(c, CTOSA_ONNX_INT64) == CTOSA_DTYPE_INT64 &&
                      (iv->onnx_dtype == CTOSA_ONNX_INT64 || dv->t == CTOSA_DTYPE_INT64) &&
                      (iv->t == CTOSA_DTYPE_INT32 || iv->t == CTOSA_DTYPE_INT64);
    const ctosa_dtype J = wide ? CTOSA_DTYPE_INT64 : I;
    const char *idx;
    if (wide) {
        idx = lw_input(c, 1);
        if (idx && iv->t != J) idx = lw_cast(c, idx, iv->t, J, iv->rank, iv->shape);
    } else {
        idx = runtime_indices(c, 1, &rv, st);
        if (!idx) return NULL;
    }
    if (idx) idx = lw_reshape(c, idx, J, 2, one_w);
    if (idx) idx = wrap_runtime(c, idx, 2, one_w, lw_scalar(c, J, 2, (double)K));
    if (idx && stride[axis] != 1) idx = lw_mul(c, idx, lw_scalar(c, J, 2, (double)stride[axis]), J, 2, one_w);
    const char *bn = NULL;
    if (idx && wide) {
        double *db = arena_alloc(lw_arena(c), (size_t)W * sizeof *db);
        for (int64_t w = 0; db && w < W; w++) db[w] = base[w];
        bn = db ? lw_const_from_f64(c, J, 2, one_w, db) : NULL;
    } else if (idx) {
        bn = lw_const_i32(c, 2, one_w, base);
    }
    if (idx) idx = lw_binary(c, CTOSA_OP_ADD, idx, bn, J, 2, one_w);
    if (!idx) *st = lw_failed(c);
    return idx;
}

static bool check_element_shapes(lower_ctx *c, const lower_value *dv, const lower_value *iv,
                                 lower_status *st) {
    if (!iv || !iv->static_shape) {
        *st = lw_reject(c, iv ? LOWER_DYNAMIC_SHAPE : LOWER_INPUT_FALLBACK, iv ? iv->name : NULL,
                        "%s: indices are missing or not static", lw_node(c)->op_type);
        return false;
    }
    if (iv->rank != dv->rank || dv->rank == 0) {
        *st = lw_reject(c, LOWER_UNSUPPORTED_ATTR, iv->name, "%s: indices rank %u differs from data rank %u",
                        lw_node(c)->op_type, iv->rank, dv->rank);
        return false;
    }
    if (!fits_i32(lw_count(dv->rank, dv->shape)) || !fits_i32(lw_count(iv->rank, iv->shape))) {
        *st = lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "%s: tensor too large for i32 indices",
                        lw_node(c)->op_type);
        return false;
    }
    return true;
}

static lower_status lower_gather_elements(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    const lower_value *iv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!check_element_shapes(c, v, iv, &st)) return st;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), v->rank, "axis", &axis)) return LOWER_REJECT;
    int64_t W = lw_count(iv->rank, iv->shape), T = lw_count(v->rank, v->shape);
    if (W == 0) {
        static const uint8_t none[8];
        lw_set_output_const(c, 0, v->onnx_dtype, iv->rank, iv->shape, none, 0);
        return LOWER_OK;
    }
    const int32_t *cpos;
    const char *idx = element_positions(c, v, iv, axis, &st, &cpos);
    if (!idx) return st;
    int64_t one_w[2] = {1, W};
    idx = index_for(c, idx, v->t, 2, one_w);
    if (!idx) return lw_failed(c);
    int64_t vshape[3] = {1, T, 1}, gshape[3] = {1, W, 1};
    const char *vals = lw_input(c, 0);
    if (vals) vals = lw_reshape(c, vals, v->t, 3, vshape);
    if (!vals) return lw_failed(c);
    const char *in[2] = {vals, idx};
    const char *g = lw_tensor(c, v->t, 3, gshape);
    if (!g || !lw_op(c, CTOSA_OP_GATHER, 2, in, 1, &g, NULL)) return lw_failed(c);
    const char *o = lw_reshape(c, g, v->t, iv->rank, iv->shape);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

enum { RD_NONE, RD_ADD, RD_MUL, RD_MAX, RD_MIN };

/* The reduction attribute (opset 16+: none/add/mul, 18+: max/min). */
static bool reduction_kind(lower_ctx *c, int *red, lower_status *st) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *r = lw_attr_str(c, "reduction", "none");
    for (int i = 0; i < 5; i++)
        if (!strcmp(r, names[i])) {
            *red = i;
            return true;
        }
    *st = lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: reduction '%s' is not supported",
                    lw_node(c)->op_type, r);
    return false;
}

/* A reduction needs its indices at compile time: duplicates are resolved
 * while lowering (TOSA SCATTER may not write one position twice). */
static bool reduce_preconditions(lower_ctx *c, lower_status *st) {
    const int64_t *ci;
    if (const_indices(c, 1, &ci) < 0) {
        *st = lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[1],
                        "%s: a scatter reduction needs constant indices '%s'", lw_node(c)->op_type,
                        lw_node(c)->inputs[1]);
        return false;
    }
    return true;
}

static lower_status emit_scatter_add(lower_ctx *c, const lower_value *v, const int32_t *pos, int64_t K,
                                     int64_t W, int64_t C);

/* Reduction with constant positions (also reduction 'none' with repeated
 * positions): the updates are split into rounds in which every position
 * occurs at most once; each round GATHERs the current values at its
 * positions, combines them with its updates (ADD / MUL / MAXIMUM / MINIMUM;
 * 'none' just takes the update) and SCATTERs them back. Float 'add' is one
 * MATMUL by a one-hot matrix instead. */
static lower_status emit_scatter_reduce(lower_ctx *c, const lower_value *v, const int32_t *pos, int64_t K,
                                        int64_t W, int64_t C, int red) {
    if (red == RD_ADD && ctosa_dtype_is_float(v->t) && K * W <= ((int64_t)1 << 22))
        return emit_scatter_add(c, v, pos, K, W, C);
    if (K > ((int64_t)1 << 26))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "%s: %lld scatter positions is too many",
                         lw_node(c)->op_type, (long long)K);
    const lower_value *uv = lw_in(c, 2);
    ctosa_dtype t = v->t;
    int32_t *seen = arena_zalloc(lw_arena(c), (size_t)K * sizeof *seen);
    int32_t *round = arena_alloc(lw_arena(c), (size_t)W * sizeof *round);
    int32_t *sel = arena_alloc(lw_arena(c), (size_t)W * sizeof *sel);
    int32_t *rpos = arena_alloc(lw_arena(c), (size_t)W * sizeof *rpos);
    if (!seen || !round || !sel || !rpos) return lw_failed(c);
    int32_t rounds = 0;
    for (int64_t w = 0; w < W; w++) {
        round[w] = seen[pos[w]]++;
        if (round[w] + 1 > rounds) rounds = round[w] + 1;
    }
    int64_t kc[3] = {1, K, C}, wc[3] = {1, W, C};
    const char *cur = lw_input(c, 0);
    if (cur) cur = lw_reshape(c, cur, t, 3, kc);
    const char *upd = lw_input(c, 2);
    if (upd) upd = lw_reshape(c, upd, uv->t, 3, wc);
    for (int32_t r = 0; r < rounds && cur && upd; r++) {
        int64_t n = 0;
        for (int64_t w = 0; w < W; w++)
            if (round[w] == r) {
                sel[n] = (int32_t)w;
                rpos[n++] = pos[w];
            }
        int64_t one_n[2] = {1, n}, nc[3] = {1, n, C};
        const char *pi = index_for(c, lw_const_i32(c, 2, one_n, rpos), t, 2, one_n);
        const char *u = upd;
        if (n != W) {
            const char *gin[2] = {upd, index_for(c, lw_const_i32(c, 2, one_n, sel), t, 2, one_n)};
            u = lw_tensor(c, t, 3, nc);
            if (!lw_op(c, CTOSA_OP_GATHER, 2, gin, 1, &u, NULL)) return lw_failed(c);
        }
        const char *nv, *g = NULL;
        if (red != RD_NONE) {
            const char *gin[2] = {cur, pi};
            g = lw_tensor(c, t, 3, nc);
            if (!lw_op(c, CTOSA_OP_GATHER, 2, gin, 1, &g, NULL)) return lw_failed(c);
        }
        if (red == RD_NONE) {
            nv = u; /* plain overwrite: later rounds win, as in ONNX's order */
        } else if (red == RD_ADD) {
            nv = lw_binary(c, CTOSA_OP_ADD, g, u, t, 3, nc);
        } else if (red == RD_MUL) {
            nv = lw_mul(c, g, u, t, 3, nc);
        } else {
            ctosa_attr a = {0};
            a.nan_mode = CTOSA_NAN_PROPAGATE;
            const char *min[2] = {g, u};
            nv = lw_tensor(c, t, 3, nc);
            if (!lw_op(c, red == RD_MAX ? CTOSA_OP_MAXIMUM : CTOSA_OP_MINIMUM, 2, min, 1, &nv, &a))
                return lw_failed(c);
        }
        const char *sin[3] = {cur, pi, nv};
        cur = lw_tensor(c, t, 3, kc);
        if (!lw_op(c, CTOSA_OP_SCATTER, 3, sin, 1, &cur, NULL)) return lw_failed(c);
    }
    const char *o = lw_reshape(c, cur, t, v->rank, v->shape);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

/* data + onehot(pos)[K, W] x updates[W, C]: duplicate positions add up. */
static lower_status emit_scatter_add(lower_ctx *c, const lower_value *v, const int32_t *pos, int64_t K,
                                     int64_t W, int64_t C) {
    if (K * W > ((int64_t)1 << 22))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL,
                         "%s: reduction 'add' over %lld x %lld positions is too large", lw_node(c)->op_type,
                         (long long)K, (long long)W);
    const lower_value *uv = lw_in(c, 2);
    ctosa_dtype t = v->t;
    ctosa_dtype acc = (t == CTOSA_DTYPE_BF16 || t == CTOSA_DTYPE_FP16) ? CTOSA_DTYPE_FP32 : t;
    double *oh = arena_zalloc(lw_arena(c), (size_t)(K * W) * sizeof *oh);
    if (!oh) return lw_failed(c);
    for (int64_t w = 0; w < W; w++) oh[(int64_t)pos[w] * W + w] = 1.0;
    int64_t kw[3] = {1, K, W}, wc[3] = {1, W, C}, kc[3] = {1, K, C};
    const char *upd = lw_input(c, 2);
    if (upd) upd = lw_reshape(c, upd, uv->t, 3, wc);
    const char *in[4] = {lw_const_from_f64(c, t, 3, kw, oh), upd, lw_zero_point(c, t, 0),
                         lw_zero_point(c, t, 0)};
    if (!in[0] || !in[1] || !in[2] || !in[3]) return lw_failed(c);
    const char *m = lw_tensor(c, acc, 3, kc);
    if (!m || !lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &m, NULL)) return lw_failed(c);
    m = lw_cast(c, m, acc, t, 3, kc);
    const char *vals = lw_input(c, 0);
    if (vals) vals = lw_reshape(c, vals, t, 3, kc);
    const char *o = lw_binary(c, CTOSA_OP_ADD, vals, m, t, 3, kc);
    if (o) o = lw_reshape(c, o, t, v->rank, v->shape);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Whether constant positions repeat (TOSA SCATTER forbids writing one
 * position twice; ONNX applies the updates in order, the last one wins). */
static bool has_duplicates(lower_ctx *c, const int32_t *pos, int64_t w, bool *oom) {
    int32_t *s = arena_memdup(lw_arena(c), pos, (size_t)w * sizeof *s);
    *oom = !s;
    if (!s) return false;
    qsort(s, (size_t)w, sizeof *s, cmp_i32);
    for (int64_t i = 1; i < w; i++)
        if (s[i] == s[i - 1]) return true;
    return false;
}

static lower_status emit_scatter(lower_ctx *c, const lower_value *v, const char *idx, int64_t K, int64_t W,
                                 int64_t C) {
    const lower_value *uv = lw_in(c, 2);
    int64_t vshape[3] = {1, K, C}, ushape[3] = {1, W, C};
    const char *vals = lw_input(c, 0);
    if (vals) vals = lw_reshape(c, vals, v->t, 3, vshape);
    const char *upd = lw_input(c, 2);
    if (upd) upd = lw_reshape(c, upd, uv->t, 3, ushape);
    if (!vals || !upd) return lw_failed(c);
    int64_t one_w[2] = {1, W};
    const char *in[3] = {vals, index_for(c, idx, v->t, 2, one_w), upd};
    if (!in[1]) return lw_failed(c);
    const char *s = lw_tensor(c, v->t, 3, vshape);
    if (!s || !lw_op(c, CTOSA_OP_SCATTER, 3, in, 1, &s, NULL)) return lw_failed(c);
    const char *o = lw_reshape(c, s, v->t, v->rank, v->shape);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

static lower_status lower_scatter_elements(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    int red;
    if (!reduction_kind(c, &red, &st)) return st;
    if (red != RD_NONE && !reduce_preconditions(c, &st)) return st;
    const lower_value *iv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!check_element_shapes(c, v, iv, &st)) return st;
    const lower_value *uv = lw_data_input(c, 2, &st);
    if (!uv) return st;
    if (uv->rank != iv->rank || memcmp(uv->shape, iv->shape, iv->rank * sizeof *iv->shape))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, uv->name, "%s: updates shape differs from indices shape",
                         lw_node(c)->op_type);
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), v->rank, "axis", &axis)) return LOWER_REJECT;
    int64_t W = lw_count(iv->rank, iv->shape), T = lw_count(v->rank, v->shape);
    const char *x0 = lw_input(c, 0);
    if (!x0) return lw_failed(c);
    if (W == 0) {
        const char *o = lw_unary(c, CTOSA_OP_IDENTITY, x0, v->t, v->rank, v->shape, NULL);
        if (!o) return lw_failed(c);
        lw_set_output(c, 0, o);
        return LOWER_OK;
    }
    const int32_t *cpos;
    const char *idx = element_positions(c, v, iv, axis, &st, &cpos);
    if (!idx) return st;
    bool oom = false;
    if (red != RD_NONE || (cpos && has_duplicates(c, cpos, W, &oom)))
        return emit_scatter_reduce(c, v, cpos, T, W, 1, red);
    if (oom) return lw_failed(c);
    return emit_scatter(c, v, idx, T, W, 1);
}

/* ------------------------------------------------------------ ScatterND */

static lower_status lower_scatter_nd(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    int red;
    if (!reduction_kind(c, &red, &st)) return st;
    if (red != RD_NONE && !reduce_preconditions(c, &st)) return st;
    const lower_value *iv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!iv || !iv->static_shape || iv->rank == 0)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, iv ? iv->name : NULL,
                         "ScatterND: indices are missing, scalar or not static");
    const lower_value *uv = lw_data_input(c, 2, &st);
    if (!uv) return st;
    int64_t kd = iv->shape[iv->rank - 1];
    if (kd < 1 || kd > (int64_t)v->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, iv->name,
                         "ScatterND: index tuples of %lld for data rank %u", (long long)kd, v->rank);
    int64_t K = 1, C = 1, W = 1;
    for (int64_t i = 0; i < kd; i++) K *= v->shape[i];
    for (uint32_t i = (uint32_t)kd; i < v->rank; i++) C *= v->shape[i];
    for (uint32_t i = 0; i + 1 < iv->rank; i++) W *= iv->shape[i];
    if (!fits_i32(K * C) || !fits_i32(W * C))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "ScatterND: tensor too large");
    const char *x0 = lw_input(c, 0);
    if (!x0) return lw_failed(c);
    if (W == 0 || C == 0) {
        const char *o = lw_unary(c, CTOSA_OP_IDENTITY, x0, v->t, v->rank, v->shape, NULL);
        if (!o) return lw_failed(c);
        lw_set_output(c, 0, o);
        return LOWER_OK;
    }
    int64_t one_w[2] = {1, W};
    const int32_t *pos;
    const char *idx = tuple_positions(c, v, 0, kd, W, one_w, &pos, &st);
    if (!idx) return st;
    bool oom = false;
    if (pos && (red != RD_NONE || has_duplicates(c, pos, W, &oom)))
        return emit_scatter_reduce(c, v, pos, K, W, C, red);
    if (oom) return lw_failed(c);
    return emit_scatter(c, v, idx, K, W, C);
}

/* ------------------------------------------------------------- GatherND */

/* GatherND(data, indices, batch_dims b): the first b dims of both are the
 * GATHER's N; each index tuple (the last indices dim, kd) addresses the
 * block data[n, i0, .., i(kd-1), ...], linearised to one position in
 * K = prod(data dims b .. b+kd-1); C is the rest of data. */
static lower_status lower_gather_nd(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    const lower_value *iv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!iv || !iv->static_shape || iv->rank == 0)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, iv ? iv->name : NULL,
                         "GatherND: indices are missing, scalar or not static");
    int64_t b = lw_attr_int(c, "batch_dims", 0), kd = iv->shape[iv->rank - 1];
    if (b < 0 || b >= (int64_t)iv->rank || b >= (int64_t)v->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "GatherND: batch_dims %lld for ranks %u and %u",
                         (long long)b, v->rank, iv->rank);
    if (kd < 1 || b + kd > (int64_t)v->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, iv->name,
                         "GatherND: index tuples of %lld for data rank %u and batch_dims %lld", (long long)kd,
                         v->rank, (long long)b);
    int64_t N = 1, K = 1, C = 1, W = 1;
    for (int64_t i = 0; i < b; i++) {
        if (iv->shape[i] != v->shape[i])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, iv->name,
                             "GatherND: batch dim %lld differs (%lld, %lld)", (long long)i,
                             (long long)v->shape[i], (long long)iv->shape[i]);
        N *= v->shape[i];
    }
    for (int64_t i = b; i < b + kd; i++) K *= v->shape[i];
    for (uint32_t i = (uint32_t)(b + kd); i < v->rank; i++) C *= v->shape[i];
    for (uint32_t i = (uint32_t)b; i + 1 < iv->rank; i++) W *= iv->shape[i];
    uint32_t out_rank = iv->rank - 1 + v->rank - (uint32_t)(b + kd);
    if (out_rank > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "GatherND: output rank %u too large", out_rank);
    int64_t out_shape[LOWER_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i + 1 < iv->rank; i++) out_shape[r++] = iv->shape[i];
    for (uint32_t i = (uint32_t)(b + kd); i < v->rank; i++) out_shape[r++] = v->shape[i];
    if (N * W * C == 0) {
        static const uint8_t none[8];
        lw_set_output_const(c, 0, v->onnx_dtype, out_rank, out_shape, none, 0);
        return LOWER_OK;
    }
    if (!fits_i32(N * K * C) || !fits_i32(N * W * kd))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "GatherND: tensor too large for i32 indices");
    int64_t nw[2] = {N, W};
    const int32_t *pos;
    const char *idx = tuple_positions(c, v, b, kd, N * W, nw, &pos, &st);
    if (!idx) return st;
    idx = index_for(c, idx, v->t, 2, nw);
    return emit_gather(c, v, idx, N, K, W, C, out_rank, out_shape);
}

const lower_entry lower_table_gather[] = {
    {"Gather", 1, 0, lower_gather},
    {"GatherElements", 11, 0, lower_gather_elements},
    {"GatherND", 11, 0, lower_gather_nd},
    {"Scatter", 9, 10, lower_scatter_elements},
    {"ScatterElements", 11, 0, lower_scatter_elements},
    {"ScatterND", 11, 0, lower_scatter_nd},
    {0},
};
