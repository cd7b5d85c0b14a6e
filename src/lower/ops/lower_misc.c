/*
 * lower_misc.c - Trilu, EyeLike, CumSum, Range, OneHot.
 *
 * Trilu: SELECT(constant triangular bool mask, x, 0); the mask has shape
 *   [1,...,1,N,M] and broadcasts over the batch dims.
 * EyeLike, Range: the result depends only on shapes and constant inputs,
 *   so it is bound as a compile-time constant (lw_set_output_const).
 * CumSum: floats use one MATMUL with a constant triangular [L, L] matrix
 *   (the axis moved last with TRANSPOSE, the rest flattened to rows); very
 *   long axes (L > 512, the matrix would exceed 1 MiB) and integers use a
 *   log-step prefix sum: y += shift(y, s) for s = 1, 2, 4, ... where
 *   shift = SLICE + PAD with zeros. exclusive shifts the input by one first,
 *   reverse runs on the REVERSEd axis.
 * OneHot: EQUAL(indices with a 1 inserted at axis, a constant 0..depth-1
 *   along axis) SELECTs on or off; negative indices are wrapped by depth
 *   first (from opset 11), and an index still outside [0, depth) matches nothing (all off),
 *   as ONNX defines.
 */
#include "lower/lower_build.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- Trilu */

static lower_status lower_trilu(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    if (r < 2) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "Trilu: input rank %u < 2", r);
    bool upper = lw_attr_int(c, "upper", 1) != 0;
    int64_t k = 0;
    if (lw_has_input(c, 1)) {
        const int64_t *kv;
        int64_t n = lw_const_i64(c, 1, &kv);
        if (n < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[1],
                             "Trilu: k '%s' must be a compile-time constant", lw_node(c)->inputs[1]);
        if (n >= 1) k = kv[0];
    }
    int64_t N = v->shape[r - 2], M = v->shape[r - 1];
    if (lw_count(r, v->shape) == 0) {
        static const uint8_t none[8];
        lw_set_output_const(c, 0, v->onnx_dtype, r, v->shape, none, 0);
        return LOWER_OK;
    }
    uint8_t *mask = arena_alloc(lw_arena(c), (size_t)(N * M));
    if (!mask) return lw_failed(c);
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++) mask[i * M + j] = upper ? (j - i >= k) : (j - i <= k);
    int64_t ms[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) ms[i] = 1;
    ms[r - 2] = N;
    ms[r - 1] = M;
    const char *in[3] = {lw_const(c, CTOSA_DTYPE_BOOL, r, ms, mask), lw_input(c, 0),
                         lw_scalar(c, v->t, r, 0)};
    if (!in[0] || !in[1] || !in[2]) return lw_failed(c);
    const char *o = lw_tensor(c, v->t, r, v->shape);
    if (!o || !lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &o, NULL)) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

/* -------------------------------------------------------------- EyeLike */

static lower_status lower_eyelike(lower_ctx *c) {
    const lower_value *v = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    if (!v) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "EyeLike: input is unknown");
    if (!v->static_shape)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, v->name, "EyeLike: input shape is not static");
    if (v->rank != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "EyeLike: input rank %u != 2", v->rank);
    int32_t dt = (int32_t)lw_attr_int(c, "dtype", v->onnx_dtype);
    size_t es = lw_onnx_elem_size(dt);
    if (!es) return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "EyeLike: dtype %d is not supported", dt);
    int64_t k = lw_attr_int(c, "k", 0), N = v->shape[0], M = v->shape[1];
    uint8_t *buf = arena_zalloc(lw_arena(c), (size_t)(N * M) * es + 1);
    if (!buf) return lw_failed(c);
    for (int64_t i = 0; i < N; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < M) lw_onnx_encode(dt, 1.0, buf + (size_t)(i * M + j) * es);
    }
    lw_set_output_const(c, 0, dt, 2, v->shape, buf, (uint64_t)(N * M) * es);
    return LOWER_OK;
}

/* ---------------------------------------------------------------- Range */

static lower_status lower_range(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    if (!v) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Range: start is unknown");
    int32_t dt = v->onnx_dtype;
    if (!lw_onnx_elem_size(dt) || dt == CTOSA_ONNX_BOOL)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "Range: dtype %d", dt);
    for (uint32_t i = 0; i < 3; i++) {
        const double *d;
        if (!lw_has_input(c, i) || lw_const_f64(c, i, &d) < 1)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, i < nd->n_inputs ? nd->inputs[i] : NULL,
                             "Range: input '%s' must be a compile-time constant",
                             i < nd->n_inputs ? nd->inputs[i] : "?");
    }
    int64_t n;
    bool fl = lw_onnx_is_float(dt);
    const double *fs, *fl_, *fd;
    const int64_t *is, *il, *id;
    lw_const_f64(c, 0, &fs);
    lw_const_f64(c, 1, &fl_);
    lw_const_f64(c, 2, &fd);
    lw_const_i64(c, 0, &is);
    lw_const_i64(c, 1, &il);
    lw_const_i64(c, 2, &id);
    if (fl) {
        if (fd[0] == 0 || !isfinite(fd[0]) || !isfinite(fs[0]) || !isfinite(fl_[0]))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Range: bad start/limit/delta");
        double q = ceil((fl_[0] - fs[0]) / fd[0]);
        n = q > 0 ? (q > 1e9 ? -1 : (int64_t)q) : 0;
    } else {
        if (id[0] == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Range: delta is 0");
        double q = ceil(((double)il[0] - (double)is[0]) / (double)id[0]);
        n = q > 0 ? (q > 1e9 ? -1 : (int64_t)q) : 0;
    }
    if (n < 0 || n > (1 << 24)) return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "Range: output is too long");
    size_t es = lw_onnx_elem_size(dt);
    uint8_t *buf = arena_alloc(lw_arena(c), (size_t)n * es + 1);
    if (!buf) return lw_failed(c);
    for (int64_t i = 0; i < n; i++) {
        if (fl) {
            /* ONNX computes start + i*delta in the value's own type */
            double x = dt == CTOSA_ONNX_DOUBLE ? fs[0] + (double)i * fd[0]
                                               : (double)((float)fs[0] + (float)i * (float)fd[0]);
            lw_onnx_encode(dt, x, buf + (size_t)i * es);
        } else {
            int64_t x = is[0] + i * id[0];
            if (dt == CTOSA_ONNX_INT64 || dt == CTOSA_ONNX_UINT64) memcpy(buf + (size_t)i * es, &x, 8);
            else lw_onnx_encode(dt, (double)x, buf + (size_t)i * es);
        }
    }
    int64_t shp[1] = {n};
    lw_set_output_const(c, 0, dt, 1, shp, buf, (uint64_t)n * es);
    return LOWER_OK;
}

/* --------------------------------------------------------------- CumSum */

/* Shifts y by s along axis (zeros enter at the front). */
static const char *shift_axis(lower_ctx *c, const char *y, ctosa_dtype t, uint32_t r, const int64_t *shape,
                              int32_t axis, int64_t s) {
    int64_t ss[LOWER_MAX_RANK], pads[2 * LOWER_MAX_RANK] = {0};
    memcpy(ss, shape, r * sizeof *ss);
    ss[axis] = shape[axis] - s;
    const char *x = lw_slice_axis(c, y, t, r, shape, axis, 0, ss[axis]);
    pads[2 * axis] = s;
    return lw_pad(c, x, t, r, ss, pads, 0);
}

static const char *cumsum_scan(lower_ctx *c, const char *y, ctosa_dtype t, uint32_t r, const int64_t *shape,
                               int32_t axis, bool exclusive) {
    int64_t L = shape[axis];
    if (exclusive) {
        if (L == 1) {
            double *z = arena_zalloc(lw_arena(c), (size_t)lw_count(r, shape) * sizeof *z);
            return z ? lw_const_from_f64(c, t, r, shape, z) : NULL;
        }
        y = shift_axis(c, y, t, r, shape, axis, 1);
    }
    for (int64_t s = 1; s < L && y; s *= 2) {
        const char *sh = shift_axis(c, y, t, r, shape, axis, s);
        y = sh ? lw_binary(c, CTOSA_OP_ADD, y, sh, t, r, shape) : NULL;
    }
    return y;
}

static const char *cumsum_matmul(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t r, const int64_t *shape,
                                 int32_t axis, bool exclusive, bool reverse) {
    int64_t L = shape[axis], M = lw_count(r, shape) / L;
    int32_t perm[LOWER_MAX_RANK], inv[LOWER_MAX_RANK];
    int64_t tshape[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < r; i++)
        if ((int32_t)i != axis) perm[k++] = (int32_t)i;
    perm[k] = axis;
    for (uint32_t i = 0; i < r; i++) {
        inv[perm[i]] = (int32_t)i;
        tshape[i] = shape[perm[i]];
    }
    if (axis != (int32_t)r - 1) x = lw_transpose(c, x, t, r, shape, perm);
    int64_t a_shape[3] = {1, M, L}, b_shape[3] = {1, L, L};
    if (x) x = lw_reshape(c, x, t, 3, a_shape);
    double *tri = arena_alloc(lw_arena(c), (size_t)(L * L) * sizeof *tri);
    if (!x || !tri) return NULL;
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++) {
            bool on = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
            tri[i * L + j] = on ? 1.0 : 0.0;
        }
    ctosa_dtype acc = (t == CTOSA_DTYPE_BF16 || t == CTOSA_DTYPE_FP16) ? CTOSA_DTYPE_FP32 : t;
    const char *in[4] = {x, lw_const_from_f64(c, t, 3, b_shape, tri), lw_zero_point(c, t, 0),
                         lw_zero_point(c, t, 0)};
    if (!in[1] || !in[2] || !in[3]) return NULL;
    const char *o = lw_tensor(c, acc, 3, a_shape);
    if (!o || !lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &o, NULL)) return NULL;
    if (acc != t) o = lw_cast(c, o, acc, t, 3, a_shape);
    if (o) o = lw_reshape(c, o, t, r, tshape);
    if (o && axis != (int32_t)r - 1) o = lw_transpose(c, o, t, r, tshape, inv);
    return o;
}

static lower_status lower_cumsum(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    const int64_t *av;
    int64_t na = lw_has_input(c, 1) ? lw_const_i64(c, 1, &av) : -1;
    if (na < 1)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->n_inputs > 1 ? nd->inputs[1] : NULL,
                         "CumSum: axis must be a compile-time constant");
    if (r == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "CumSum: scalar input");
    int32_t axis;
    if (!lw_axis(c, av[0], r, "axis", &axis)) return LOWER_REJECT;
    bool exclusive = lw_attr_int(c, "exclusive", 0) != 0;
    bool reverse = lw_attr_int(c, "reverse", 0) != 0;
    if (lw_count(r, v->shape) == 0) {
        static const uint8_t none[8];
        lw_set_output_const(c, 0, v->onnx_dtype, r, v->shape, none, 0);
        return LOWER_OK;
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    int64_t L = v->shape[axis];
    if (ctosa_dtype_is_float(v->t) && L > 1 && L <= 512) {
        x = cumsum_matmul(c, x, v->t, r, v->shape, axis, exclusive, reverse);
    } else {
        if (reverse) x = lw_reverse(c, x, v->t, r, v->shape, axis);
        if (x) x = cumsum_scan(c, x, v->t, r, v->shape, axis, exclusive);
        if (x && reverse) x = lw_reverse(c, x, v->t, r, v->shape, axis);
        if (x && x == lw_input(c, 0)) x = lw_unary(c, CTOSA_OP_IDENTITY, x, v->t, r, v->shape, NULL);
    }
    if (!x) return lw_failed(c);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

/* --------------------------------------------------------------- OneHot */

static lower_status lower_onehot(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    lw_v ind, vals;
    LW_V_IN(c, 0, &ind);
    if (!lw_v_is_int(ind.t) && !ctosa_dtype_is_float(ind.t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, nd->inputs[0], "OneHot: %s indices",
                         ctosa_dtype_name(ind.t));
    const double *dv;
    if (lw_const_f64(c, 1, &dv) != 1)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->inputs[1],
                         "OneHot: depth '%s' must be a one-element compile-time constant", nd->inputs[1]);
    if (!(dv[0] >= 1 && dv[0] < 2147483648.0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, nd->inputs[1], "OneHot: depth %g", dv[0]);
    const int64_t depth = (int64_t)dv[0]; /* ONNX casts a float depth to int64 */
    LW_V_IN(c, 2, &vals);
    if (vals.r != 1 || vals.s[0] != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, nd->inputs[2], "OneHot: values must have shape [2]");
    const uint32_t r = ind.r + 1;
    if (r > LOWER_MAX_RANK) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "OneHot: output rank %u", r);
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), r, "axis", &axis)) return LOWER_REJECT;
    lw_v w = ind;
    if (ctosa_dtype_is_float(ind.t)) {
        /* truncated toward zero like ONNX's cast to int64 (CAST rounds to
         * nearest, so the value is made integral first) */
        lw_v neg = lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, ind, 0), ind);
        w = lw_v_select(c, neg, lw_v_un(c, CTOSA_OP_CEIL, ind), lw_v_un(c, CTOSA_OP_FLOOR, ind));
        w = lw_v_cast(c, w, CTOSA_DTYPE_INT32);
    }
    w = lw_v_widen(c, w);
    if (lw_opset(c) >= 11) /* OneHot-9 has no negative indices: they match nothing */
        w = lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, w, 0), w), lw_v_addk(c, w, (double)depth),
                        w);
    /* indices with a 1 at axis, against 0..depth-1 along axis */
    lw_v wr = w, iota = w;
    wr.r = iota.r = r;
    for (uint32_t i = 0, k = 0; i < r; i++) {
        wr.s[i] = (int32_t)i == axis ? 1 : ind.s[k++];
        iota.s[i] = (int32_t)i == axis ? depth : 1;
    }
    if (w.n) wr.n = lw_reshape(c, w.n, w.t, r, wr.s);
    double *seq = arena_alloc(lw_arena(c), (size_t)depth * sizeof *seq);
    if (!seq) return lw_failed(c);
    for (int64_t i = 0; i < depth; i++) seq[i] = (double)i;
    iota.n = lw_const_from_f64(c, w.t, r, iota.s, seq);
    iota.cin = 0;
    /* off = values[0], on = values[1], each shaped [1, ..., 1] */
    lw_v pick[2];
    int64_t two[1] = {2}, len[1] = {1};
    for (int k = 0; k < 2; k++) {
        int64_t at[1] = {k};
        pick[k] = vals;
        pick[k].r = r;
        pick[k].cin = 0;
        for (uint32_t i = 0; i < r; i++) pick[k].s[i] = 1;
        pick[k].n = vals.n ? lw_slice(c, vals.n, vals.t, 1, two, at, len) : NULL;
        if (pick[k].n) pick[k].n = lw_reshape(c, pick[k].n, vals.t, r, pick[k].s);
    }
    return lw_v_out(c, 0, lw_v_select(c, lw_v_bin(c, CTOSA_OP_EQUAL, wr, iota), pick[1], pick[0]));
}

const lower_entry lower_table_misc[] = {
    {"Trilu", 14, 0, lower_trilu},   {"EyeLike", 9, 0, lower_eyelike}, {"Range", 11, 0, lower_range},
    {"CumSum", 11, 0, lower_cumsum}, {"OneHot", 9, 0, lower_onehot},   {0},
};
