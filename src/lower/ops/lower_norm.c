/*
 * lower_norm.c - BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization, GroupNormalization, RMSNormalization,
 * LpNormalization and LRN, decomposed into reductions, RSQRT, MUL, ADD.
 *
 * BatchNormalization with constant statistics folds into one per-channel
 * scale and shift computed at compile time.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

/* Input i reshaped (numpy broadcasting: leading 1s) to rank r, in dtype t.
 * Absent optional input: NULL with *st = LOWER_OK. */
static const char *norm_operand(lower_ctx *c, uint32_t i, ctosa_dtype t, uint32_t r, lower_status *st) {
    *st = LOWER_OK;
    if (!lw_has_input(c, i)) return NULL;
    const lower_value *v = lw_data_input(c, i, st);
    if (!v) return NULL;
    if (v->rank > r) {
        *st = lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "%s: input '%s' has rank %u > %u",
                        lw_node(c)->op_type, v->name, v->rank, r);
        return NULL;
    }
    int64_t s[LOWER_MAX_RANK];
    for (uint32_t k = 0; k < r; k++) s[k] = 1;
    for (uint32_t k = 0; k < v->rank; k++) s[r - v->rank + k] = v->shape[k];
    const char *x = lw_input(c, i);
    if (x && v->t != t) x = lw_cast(c, x, v->t, t, v->rank, v->shape);
    x = lw_reshape_if(c, x, t, v->rank, v->shape, r, s);
    if (!x) *st = lw_failed(c);
    return x;
}

/* Compute type for stash_type = 1 (float32) with narrower float inputs. */
static ctosa_dtype norm_stash(lower_ctx *c, ctosa_dtype t) {
    if (t == CTOSA_DTYPE_FP32 || !ctosa_dtype_is_float(t)) return t;
    return lw_attr_int(c, "stash_type", 1) == 1 ? CTOSA_DTYPE_FP32 : t;
}

static lower_status norm_outputs_unused(lower_ctx *c, uint32_t from) {
    const ctosa_onnx_node *n = lw_node(c);
    for (uint32_t i = from; i < n->n_outputs; i++)
        if (n->outputs[i][0])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: output %u '%s' (training statistics) is used", n->op_type, i,
                             n->outputs[i]);
    return LOWER_OK;
}

/* y * scale + bias with the per-channel scale and bias of inputs 1 and 2
 * (n values each, laid out on axis 1 of rank r). NULL with *st set when an
 * operand cannot be read. */
static const char *norm_channel_affine(lower_ctx *c, const char *y, int64_t n, ctosa_dtype t, uint32_t r,
                                       const int64_t *shape, lower_status *st) {
    const char *sc = lw_channel_vec(c, 1, n, t, r, st);
    if (!sc) return NULL;
    const char *b = lw_channel_vec(c, 2, n, t, r, st);
    if (!b) return NULL;
    return lw_add(c, lw_mul(c, y, sc, t, r, shape), b, t, r, shape);
}

/* ---------------------------------------------------- BatchNormalization */

static lower_status lower_batchnorm(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    if (lw_attr_int(c, "training_mode", 0) != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "BatchNormalization: training_mode=1 (batch statistics) is not supported");
    if ((st = norm_outputs_unused(c, 1)) != LOWER_OK) return st;
    if (lw_opset(c) < 9 && lw_attr_int(c, "spatial", 1) == 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "BatchNormalization: spatial=0 (per-element statistics) is not supported");
    if (X->rank < 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "BatchNormalization: input rank %u", X->rank);
    ctosa_dtype t = X->t;
    uint32_t r = X->rank;
    int64_t C = X->shape[1];
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    const double *p[4];
    bool all_const = true;
    for (uint32_t i = 0; i < 4; i++) {
        if (!lw_has_input(c, 1 + i))
            return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "BatchNormalization: input %u missing", 1 + i);
        if (lw_const_f64(c, 1 + i, &p[i]) != C) all_const = false;
    }
    int64_t vs[LOWER_MAX_RANK];
    for (uint32_t k = 0; k < r; k++) vs[k] = 1;
    vs[1] = C;
    const char *x = lw_input(c, 0), *scale, *shift;
    if (all_const) {
        double *sc = arena_alloc(lw_arena(c), (size_t)C * 2 * sizeof(double));
        if (!sc) return lw_failed(c);
        double *sh = sc + C;
        for (int64_t k = 0; k < C; k++) {
            sc[k] = p[0][k] / sqrt(p[3][k] + eps);
            sh[k] = p[1][k] - p[2][k] * sc[k];
        }
        scale = lw_const_from_f64(c, t, r, vs, sc);
        shift = lw_const_from_f64(c, t, r, vs, sh);
    } else {
        const char *v[4];
        for (uint32_t i = 0; i < 4; i++) {
            v[i] = lw_channel_vec(c, 1 + i, C, t, r, &st);
            if (!v[i]) return st;
        }
        const char *ve = lw_add_scalar(c, v[3], t, r, vs, eps);
        const char *inv = ve ? lw_unary(c, CTOSA_OP_RSQRT, ve, t, r, vs, NULL) : NULL;
        scale = lw_mul(c, v[0], inv, t, r, vs);
        shift = lw_sub(c, v[1], lw_mul(c, v[2], scale, t, r, vs), t, r, vs);
    }
    const char *y = lw_add(c, lw_mul(c, x, scale, t, r, X->shape), shift, t, r, X->shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ------------------------------------------------ Instance / Layer / Group */

static lower_status lower_instancenorm(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    if (r < 3) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "InstanceNormalization: input rank %u", r);
    ctosa_dtype t = X->t;
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    uint32_t mask = 0;
    for (uint32_t i = 2; i < r; i++) mask |= 1u << i;
    const char *y = lw_normalize(c, lw_input(c, 0), t, r, X->shape, mask, eps, NULL, NULL, NULL);
    y = norm_channel_affine(c, y, X->shape[1], t, r, X->shape, &st);
    if (!y && st != LOWER_OK) return st;
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_layernorm(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), r, "axis", &axis)) return LOWER_REJECT;
    ctosa_dtype t = X->t, ct = norm_stash(c, t);
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    uint32_t mask = 0;
    for (uint32_t i = (uint32_t)axis; i < r; i++) mask |= 1u << i;
    const char *x = lw_input(c, 0);
    if (ct != t) x = lw_cast(c, x, t, ct, r, X->shape);
    const char *mean = NULL, *inv = NULL;
    int64_t rs[LOWER_MAX_RANK];
    const char *y = lw_normalize(c, x, ct, r, X->shape, mask, eps, &mean, &inv, rs);
    if (ct != t) y = lw_cast(c, y, ct, t, r, X->shape);
    const char *sc = norm_operand(c, 1, t, r, &st);
    if (st != LOWER_OK) return st;
    const char *b = norm_operand(c, 2, t, r, &st);
    if (st != LOWER_OK) return st;
    if (sc) y = lw_mul(c, y, sc, t, r, X->shape);
    if (b) y = lw_add(c, y, b, t, r, X->shape);
    LW_TRY(y && mean && inv);
    lw_set_output(c, 0, y);
    if (n->n_outputs > 1 && n->outputs[1][0]) lw_set_output(c, 1, mean);
    if (n->n_outputs > 2 && n->outputs[2][0]) lw_set_output(c, 2, inv);
    return LOWER_OK;
}

static lower_status lower_groupnorm(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    int64_t G = lw_attr_int(c, "num_groups", 0);
    if (r < 2 || G < 1 || X->shape[1] % G)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "GroupNormalization: num_groups %lld does not divide the channels", (long long)G);
    ctosa_dtype t = X->t, ct = norm_stash(c, t);
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    int64_t N = X->shape[0], C = X->shape[1];
    int64_t gs[3] = {N, G, lw_count(r, X->shape) / (N * G)};
    const char *x = lw_input(c, 0);
    if (ct != t) x = lw_cast(c, x, t, ct, r, X->shape);
    x = lw_reshape(c, x, ct, 3, gs);
    const char *y = lw_normalize(c, x, ct, 3, gs, 1u << 2, eps, NULL, NULL, NULL);
    if (ct != t) y = lw_cast(c, y, ct, t, 3, gs);
    /* opset 18 takes per-group scale/bias, 21+ per-channel */
    const lower_value *S = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    bool per_group = S && S->static_shape && lw_count(S->rank, S->shape) == G && G != C;
    st = LOWER_OK;
    if (per_group) {
        y = norm_channel_affine(c, y, G, t, 3, gs, &st);
        y = y ? lw_reshape(c, y, t, r, X->shape) : NULL;
    } else {
        y = y ? lw_reshape(c, y, t, r, X->shape) : NULL;
        y = norm_channel_affine(c, y, C, t, r, X->shape, &st);
    }
    if (!y && st != LOWER_OK) return st;
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_rmsnorm(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), r, "axis", &axis)) return LOWER_REJECT;
    ctosa_dtype t = X->t, ct = norm_stash(c, t);
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    uint32_t mask = 0;
    for (uint32_t i = (uint32_t)axis; i < r; i++) mask |= 1u << i;
    const char *x = lw_input(c, 0);
    if (ct != t) x = lw_cast(c, x, t, ct, r, X->shape);
    int64_t rs[LOWER_MAX_RANK];
    const char *ms = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, x, x, ct, r, X->shape), ct, r, X->shape,
                                    mask, true, rs);
    ms = lw_add_scalar(c, ms, ct, r, rs, eps);
    const char *inv = ms ? lw_unary(c, CTOSA_OP_RSQRT, ms, ct, r, rs, NULL) : NULL;
    const char *y = lw_mul(c, x, inv, ct, r, X->shape);
    if (ct != t) y = lw_cast(c, y, ct, t, r, X->shape);
    const char *sc = norm_operand(c, 1, t, r, &st);
    if (st != LOWER_OK) return st;
    if (sc) y = lw_mul(c, y, sc, t, r, X->shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* 1 / sqrt(s) (RSQRT) or 1 / s (RECIPROCAL) of the norms s, and 0 where a
 * norm is 0: a slice of zeros normalises to zeros, as in ONNX Runtime,
 * instead of 0 * inf = NaN. The operator runs on 1 there, never on 0. */
static const char *inv_norm(lower_ctx *c, ctosa_op_kind k, const char *s, ctosa_dtype t, uint32_t r,
                            const int64_t *rs) {
    const char *zero = lw_scalar(c, t, r, 0.0);
    const char *isz = s && zero ? lw_binary(c, CTOSA_OP_EQUAL, s, zero, CTOSA_DTYPE_BOOL, r, rs) : NULL;
    const char *one = lw_scalar(c, t, r, 1.0);
    const char *safe = lw_tensor(c, t, r, rs), *inv = lw_tensor(c, t, r, rs);
    const char *in1[3] = {isz, one, s};
    if (!isz || !one || !safe || !inv || !lw_op(c, CTOSA_OP_SELECT, 3, in1, 1, &safe, NULL)) return NULL;
    const char *v = lw_unary(c, k, safe, t, r, rs, NULL);
    const char *in2[3] = {isz, zero, v};
    return v && lw_op(c, CTOSA_OP_SELECT, 3, in2, 1, &inv, NULL) ? inv : NULL;
}

static lower_status lower_lpnorm(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), r, "axis", &axis)) return LOWER_REJECT;
    int64_t p = lw_attr_int(c, "p", 2);
    if (p != 1 && p != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "LpNormalization: p=%lld (only 1 and 2)",
                         (long long)p);
    ctosa_dtype t = X->t;
    const char *x = lw_input(c, 0);
    int64_t rs[LOWER_MAX_RANK];
    const char *y;
    if (p == 2) {
        const char *s =
            lw_reduce(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, x, x, t, r, X->shape), t, r, X->shape, axis, rs);
        const char *inv = s ? inv_norm(c, CTOSA_OP_RSQRT, s, t, r, rs) : NULL;
        y = lw_mul(c, x, inv, t, r, X->shape);
    } else {
        const char *ab = x ? lw_unary(c, CTOSA_OP_ABS, x, t, r, X->shape, NULL) : NULL;
        const char *s = lw_reduce(c, CTOSA_OP_REDUCE_SUM, ab, t, r, X->shape, axis, rs);
        const char *inv = s ? inv_norm(c, CTOSA_OP_RECIPROCAL, s, t, r, rs) : NULL;
        y = lw_mul(c, x, inv, t, r, X->shape);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* LRN: the channel-window sum of squares is an average pool over the
 * channel axis (explicit zero padding, so every window averages `size`
 * values). */
static lower_status lower_lrn(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    int64_t size = lw_attr_int(c, "size", 0);
    if (r < 3 || size < 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "LRN: rank %u, size %lld", r, (long long)size);
    ctosa_dtype t = X->t;
    double alpha = lw_attr_float(c, "alpha", 1e-4f), beta = lw_attr_float(c, "beta", 0.75f);
    double bias = lw_attr_float(c, "bias", 1.0f);
    int64_t N = X->shape[0], C = X->shape[1];
    int64_t s4[4] = {N, C, lw_count(r, X->shape) / (N * C), 1};
    const char *x = lw_input(c, 0);
    const char *sq = lw_mul(c, x, x, t, r, X->shape);
    sq = lw_reshape_if(c, sq, t, r, X->shape, 4, s4);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    int64_t pads[8] = {0, 0, lo, hi, 0, 0, 0, 0};
    sq = lw_pad(c, sq, t, 4, s4, pads, 0.0);
    int32_t kernel[2] = {(int32_t)size, 1}, stride[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.kernel = (ctosa_i32s){kernel, 2};
    a.stride = (ctosa_i32s){stride, 2};
    a.pad = (ctosa_i32s){pad, 4};
    a.acc_type = lw_acc_type(t);
    const char *izp = lw_zero_point(c, t, 0), *ozp = lw_zero_point(c, t, 0);
    const char *avg = lw_tensor(c, t, 4, s4);
    LW_TRY(sq && izp && ozp && avg);
    const char *in[3] = {sq, izp, ozp};
    LW_TRY(lw_op(c, CTOSA_OP_AVG_POOL2D, 3, in, 1, &avg, &a));
    const char *s = lw_reshape_if(c, avg, t, 4, s4, r, X->shape);
    /* (bias + alpha/size * sum)^-beta, sum = size * avg */
    s = lw_add_scalar(c, lw_mul_scalar(c, s, t, r, X->shape, alpha), t, r, X->shape, bias);
    const char *pw = s ? lw_binary(c, CTOSA_OP_POW, s, lw_scalar(c, t, r, -beta), t, r, X->shape) : NULL;
    const char *y = lw_mul(c, x, pw, t, r, X->shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

const lower_entry lower_table_norm[] = {
    {"BatchNormalization", 7, 0, lower_batchnorm},
    {"InstanceNormalization", 1, 0, lower_instancenorm},
    {"LayerNormalization", 17, 0, lower_layernorm},
    {"GroupNormalization", 18, 0, lower_groupnorm},
    {"RMSNormalization", 23, 0, lower_rmsnorm},
    {"LpNormalization", 1, 0, lower_lpnorm},
    {"LRN", 1, 0, lower_lrn},
    {0},
};
