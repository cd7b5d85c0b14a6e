/*
 * lower_pool.c - MaxPool, AveragePool, LpPool and their Global forms.
 *
 * 1-D pools run as 2-D with a unit height; data is transposed to
 * channels-last around MAX_POOL2D / AVG_POOL2D. TOSA requires the output
 * size division to be exact and the padding to be smaller than the
 * kernel: lw_window() adjusts the end padding (ceil_mode adds padding the
 * pool ignores, floor mode crops the unread input tail). Dilated windows
 * are strided slices combined by MAXIMUM / ADD (pool_taps), and so are
 * the window sums of LpPool, taken over |x|^p in fp32.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

typedef enum pool_kind { POOL_MAX, POOL_AVG, POOL_SUM } pool_kind;

/* Emits a 2-D pool on channels-last x of shape ls (rank 4). */
static const char *pool_emit(lower_ctx *c, bool is_max, const char *x, ctosa_dtype t, const lw_dim *td,
                             const int64_t *os) {
    if (!x) return NULL;
    int32_t kernel[2] = {(int32_t)td[0].k, (int32_t)td[1].k};
    int32_t stride[2] = {(int32_t)td[0].s, (int32_t)td[1].s};
    int32_t pad[4] = {(int32_t)td[0].pb, (int32_t)td[0].pe, (int32_t)td[1].pb, (int32_t)td[1].pe};
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.kernel = (ctosa_i32s){kernel, 2};
    a.stride = (ctosa_i32s){stride, 2};
    a.pad = (ctosa_i32s){pad, 4};
    const char *out = lw_tensor(c, t, 4, os);
    if (!out) return NULL;
    if (is_max) {
        a.nan_mode = CTOSA_NAN_PROPAGATE;
        return lw_op(c, CTOSA_OP_MAX_POOL2D, 1, &x, 1, &out, &a) ? out : NULL;
    }
    a.acc_type = lw_acc_type(t);
    const char *izp = lw_zero_point(c, t, 0), *ozp = lw_zero_point(c, t, 0);
    if (!izp || !ozp) return NULL;
    const char *in[3] = {x, izp, ozp};
    return lw_op(c, CTOSA_OP_AVG_POOL2D, 3, in, 1, &out, &a) ? out : NULL;
}

/* Windows as taps (TOSA pools have no dilation, and no sum), in the ONNX
 * layout and for any number of spatial axes: the input is padded (-inf for
 * a maximum, 0 for a sum) so that along each axis tap j of output o reads
 * o*s + j*d; tap j is then a slice of out*s elements from j*d, and when
 * s > 1 a reshape to [out, s] keeps element 0 of each stride. The taps are
 * combined by MAXIMUM or ADD axis after axis (a box maximum or sum is
 * separable), and an average multiplies by the reciprocal of its count, a
 * product of per-axis counts (positions inside the input, or inside the
 * declared padding with count_include_pad) computed at compile time.
 * x (dtype t, channels-first shape xs of rank r) is the data to pool;
 * returns the pooled tensor (dtype t) or NULL. */
static const char *pool_taps(lower_ctx *c, pool_kind kind, const char *x, ctosa_dtype t, uint32_t r,
                             const int64_t *xs, const lw_dim *dm, uint32_t nsp, bool include_pad) {
    bool is_max = kind == POOL_MAX;
    ctosa_dtype ct = kind == POOL_AVG ? CTOSA_DTYPE_FP32 : t; /* an average in float, as ONNX Runtime */
    int64_t cur[5], start[5] = {0}, size[5], pads[10] = {0};
    memcpy(cur, xs, r * sizeof *cur);
    memcpy(size, cur, sizeof size);
    bool crop = false;
    for (uint32_t i = 0; i < nsp; i++) {
        size[2 + i] -= dm[i].crop;
        crop |= dm[i].crop != 0;
        pads[2 * (2 + i)] = dm[i].pb;
        pads[2 * (2 + i) + 1] = dm[i].pe + dm[i].s - 1;
    }
    if (ct != t) x = lw_cast(c, x, t, ct, r, cur);
    if (crop) x = lw_slice(c, x, ct, r, cur, start, size);
    memcpy(cur, size, sizeof cur);
    x = lw_pad(c, x, ct, r, cur, pads, is_max ? -INFINITY : 0.0);
    for (uint32_t i = 0; i < r; i++) cur[i] += pads[2 * i] + pads[2 * i + 1];
    for (uint32_t i = 0; i < nsp && x; i++) {
        const lw_dim *d = &dm[i];
        int32_t ax = (int32_t)(2 + i);
        int64_t os[5], ws[6];
        memcpy(os, cur, sizeof os);
        os[ax] = d->out;
        /* the axis split into [out, s] */
        for (int32_t j = 0, k = 0; j < (int32_t)r; j++) {
            ws[k++] = j == ax ? d->out : cur[j];
            if (j == ax) ws[k++] = d->s;
        }
        lw_v acc = lw_v_none();
        for (int64_t j = 0; j < d->k; j++) {
            const char *tap = lw_slice_axis(c, x, ct, r, cur, ax, j * d->d, d->out * d->s);
            if (d->s > 1 && tap) {
                tap = lw_reshape(c, tap, ct, r + 1, ws);
                tap = tap ? lw_slice_axis(c, tap, ct, r + 1, ws, ax + 1, 0, 1) : NULL;
                tap = tap ? lw_reshape(c, tap, ct, r, os) : NULL;
            }
            lw_v tv = {tap, ct, r, {0}, 0};
            memcpy(tv.s, os, sizeof os);
            acc = j == 0 ? tv : lw_v_bin(c, is_max ? CTOSA_OP_MAXIMUM : CTOSA_OP_ADD, acc, tv);
        }
        x = acc.n;
        memcpy(cur, os, sizeof cur);
    }
    if (kind == POOL_AVG && x) {
        int64_t ds[5], n = 1;
        for (uint32_t i = 0; i < r; i++) ds[i] = i < 2 ? 1 : cur[i];
        for (uint32_t i = 2; i < r; i++) n *= ds[i];
        double *inv = arena_alloc(lw_arena(c), (size_t)n * sizeof *inv);
        if (!inv) return NULL;
        for (int64_t e = 0; e < n; e++) {
            int64_t rem = e;
            double cnt = 1;
            for (int32_t i = (int32_t)nsp - 1; i >= 0; i--) {
                const lw_dim *d = &dm[i];
                int64_t o = rem % d->out, m = 0;
                rem /= d->out;
                for (int64_t j = 0; j < d->k; j++) {
                    int64_t p = o * d->s + j * d->d - d->pb;
                    m += include_pad ? p >= -d->pb && p < d->in + d->pe0 : p >= 0 && p < d->in;
                }
                cnt *= (double)m;
            }
            inv[e] = cnt > 0 ? 1 / cnt : 0;
        }
        x = lw_mul(c, x, lw_const_from_f64(c, ct, r, ds, inv), ct, r, cur);
        if (ct != t && x) x = lw_cast(c, x, ct, t, r, cur);
    }
    return x;
}

/* |x|^p for an integer p >= 1 by repeated squaring (exact products of
 * |x|, as ONNX Runtime's pow on integral exponents), in x's dtype. */
static lw_v lp_power(lower_ctx *c, lw_v x, int64_t p) {
    lw_v a = lw_v_un(c, CTOSA_OP_ABS, x), r = lw_v_none();
    for (bool first = true; p; p >>= 1) {
        if (p & 1) r = first ? a : lw_v_bin(c, CTOSA_OP_MUL, r, a), first = false;
        if (p > 1) a = lw_v_bin(c, CTOSA_OP_MUL, a, a);
    }
    return r;
}

/* s^(1/p) of sums s >= 0. TOSA POW is unpredictable for a zero base, so
 * zeros run on 1 and give 0. */
static lw_v lp_root(lower_ctx *c, lw_v s, int64_t p) {
    if (p == 1) return s;
    lw_v zero = lw_v_k(c, s, 0);
    lw_v isz = lw_v_bin(c, CTOSA_OP_EQUAL, s, zero);
    lw_v safe = lw_v_select(c, isz, lw_v_k(c, s, 1), s);
    return lw_v_select(c, isz, zero, lw_v_bin(c, CTOSA_OP_POW, safe, lw_v_k(c, s, 1.0 / (double)p)));
}

/* LpPool's p, and its input as |x|^p in fp32 (the sum ONNX Runtime forms
 * in float); rejects integer inputs and p < 1. */
static lower_status lp_input(lower_ctx *c, lw_v *xp, int64_t *p) {
    const char *op = lw_node(c)->op_type;
    lw_v x;
    LW_V_IN(c, 0, &x);
    if (!ctosa_dtype_is_float(x.t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: %s input (float only)", op,
                         ctosa_dtype_name(x.t));
    *p = lw_attr_int(c, "p", 2);
    if (*p < 1 || *p > 64)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: p = %lld (1 to 64 supported)", op,
                         (long long)*p);
    *xp = lp_power(c, lw_v_cast(c, x, CTOSA_DTYPE_FP32), *p);
    return LOWER_OK;
}

static lower_status lower_pool(lower_ctx *c, pool_kind kind) {
    bool is_max = kind == POOL_MAX;
    const ctosa_onnx_node *n = lw_node(c);
    const char *op = n->op_type;
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    if (is_max && n->n_outputs > 1 && n->outputs[1][0])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "MaxPool: the Indices output '%s' is used (TOSA has no arg-max pooling)",
                         n->outputs[1]);
    uint32_t r = X->rank;
    if (r < 3 || r > 5)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: input rank %u: only 1-D, 2-D and 3-D pooling",
                         op, r);
    if (!lw_has_attr(c, "kernel_shape"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: kernel_shape is missing", op);
    ctosa_dtype t = X->t;
    uint32_t nsp = r - 2;
    lw_dim dm[3];
    if ((st = lw_read_window(c, nsp, X->shape, NULL, dm)) != LOWER_OK) return st;
    bool dilated = false;
    for (uint32_t i = 0; i < nsp; i++) dilated |= dm[i].d != 1;
    if (dilated && kind == POOL_AVG && lw_opset(c) < 19)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "AveragePool: dilations before opset 19 (not in that definition)");
    bool ceil_mode = lw_attr_int(c, "ceil_mode", 0) != 0;
    if ((st = lw_window(c, nsp, dm, ceil_mode)) != LOWER_OK) return st;
    bool include_pad = kind == POOL_AVG && lw_attr_int(c, "count_include_pad", 0) != 0;
    if (kind == POOL_SUM) {
        lw_v xp;
        int64_t p;
        if ((st = lp_input(c, &xp, &p)) != LOWER_OK) return st;
        lw_v y = {pool_taps(c, kind, xp.n, xp.t, r, X->shape, dm, nsp, false), xp.t, r, {0}, 0};
        for (uint32_t i = 0; i < r; i++) y.s[i] = i < 2 ? X->shape[i] : dm[i - 2].out;
        return lw_v_out(c, 0, lw_v_cast(c, lp_root(c, y, p), t));
    }
    if (dilated) {
        if (!is_max && !ctosa_dtype_is_float(t))
            return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: dilations on a %s tensor (float only)",
                             op, ctosa_dtype_name(t));
        const char *y = pool_taps(c, kind, lw_input(c, 0), t, r, X->shape, dm, nsp, include_pad);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }

    /* 1-D runs as 2-D with a unit height; 3-D as two 2-D pools (H,W then
     * D): max is separable, and so is an average whose divisor (the valid
     * or padded box) is a product of per-axis counts. */
    int64_t N = X->shape[0], C = X->shape[1];
    uint32_t tsp = nsp == 1 ? 2 : nsp, tr = tsp + 2;
    lw_dim td[3];
    int64_t xs[5];
    if (nsp == 1) {
        td[0] = (lw_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[1] = dm[0];
        xs[0] = N;
        xs[1] = C;
        xs[2] = 1;
        xs[3] = X->shape[2];
    } else {
        memcpy(td, dm, nsp * sizeof *dm);
        memcpy(xs, X->shape, r * sizeof *xs);
    }
    const char *x = lw_input(c, 0);
    x = lw_reshape_if(c, x, t, r, X->shape, tr, xs);
    int64_t ls[5];
    lw_shape_last(tr, xs, ls);
    x = lw_to_last(c, x, t, tr, xs);
    int64_t start[5] = {0}, size[5];
    memcpy(size, ls, sizeof size);
    for (uint32_t i = 0; i < tsp; i++) size[1 + i] -= td[i].crop;
    x = lw_slice(c, x, t, tr, ls, start, size);
    memcpy(ls, size, sizeof ls);
    /* Padding TOSA cannot express in the pool itself is made explicit:
     * counted padding of an average, or padding not smaller than the kernel
     * (max: -inf never wins; average excluding pad: rejected). */
    int64_t pads[10] = {0};
    bool explicit_pad = false;
    for (uint32_t i = 0; i < tsp; i++) {
        lw_dim *d = &td[i];
        int64_t eb = 0, ee = 0;
        if (include_pad) {
            eb = d->pb;
            ee = d->pe < d->pe0 ? d->pe : d->pe0;
        } else if (d->pb >= d->k || d->pe >= d->k) {
            if (!is_max)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "%s: padding %lld/%lld not smaller than the kernel %lld", op,
                                 (long long)d->pb, (long long)d->pe, (long long)d->k);
            eb = d->pb;
            ee = d->pe;
        }
        if (eb || ee) explicit_pad = true;
        pads[2 * (1 + i)] = eb;
        pads[2 * (1 + i) + 1] = ee;
        d->pb -= eb;
        d->pe -= ee;
        if (d->pb >= d->k || d->pe >= d->k)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: padding not smaller than the kernel %lld",
                             op, (long long)d->k);
    }
    if (explicit_pad) {
        x = lw_pad(c, x, t, tr, ls, pads, is_max ? -INFINITY : 0.0);
        for (uint32_t i = 0; i < tsp; i++) ls[1 + i] += pads[2 * (1 + i)] + pads[2 * (1 + i) + 1];
    }
    int64_t os[5];
    os[0] = N;
    for (uint32_t i = 0; i < tsp; i++) os[1 + i] = td[i].out;
    os[tr - 1] = C;
    const char *y;
    if (tsp == 2) {
        y = pool_emit(c, is_max, x, t, td, os);
    } else {
        /* [N*D, H, W, C] pooled over H, W; then [N, D, OH*OW, C] over D */
        int64_t s1[4] = {N * ls[1], ls[2], ls[3], C}, o1[4] = {N * ls[1], os[2], os[3], C};
        x = lw_reshape_if(c, x, t, tr, ls, 4, s1);
        x = pool_emit(c, is_max, x, t, td + 1, o1);
        int64_t s2[4] = {N, ls[1], os[2] * os[3], C}, o2[4] = {N, os[1], os[2] * os[3], C};
        x = lw_reshape_if(c, x, t, 4, o1, 4, s2);
        lw_dim dd[2] = {td[0], {1, 1, 1, 1, 0, 0, 1, 0, 0}};
        dd[1].in = dd[1].out = os[2] * os[3];
        x = pool_emit(c, is_max, x, t, dd, o2);
        y = lw_reshape_if(c, x, t, 4, o2, tr, os);
    }
    int64_t fs[5];
    lw_shape_first(tr, os, fs);
    y = lw_to_first(c, y, t, tr, os);
    if (nsp == 1) {
        int64_t s1[3] = {N, C, td[1].out};
        y = lw_reshape_if(c, y, t, 4, fs, 3, s1);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_maxpool(lower_ctx *c) { return lower_pool(c, POOL_MAX); }
static lower_status lower_avgpool(lower_ctx *c) { return lower_pool(c, POOL_AVG); }
static lower_status lower_lppool(lower_ctx *c) { return lower_pool(c, POOL_SUM); }

/* Global pools: one window over the whole spatial extent for 4-D inputs of
 * moderate size (a real pool op), reductions otherwise. */
static lower_status lower_global_pool(lower_ctx *c, bool is_max) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    if (r < 3)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: input rank %u, expected >= 3",
                         lw_node(c)->op_type, r);
    ctosa_dtype t = X->t;
    const char *x = lw_input(c, 0);
    const char *y;
    if (r == 4 && X->shape[2] <= 256 && X->shape[3] <= 256) {
        int64_t ls[4];
        lw_shape_last(4, X->shape, ls);
        x = lw_to_last(c, x, t, 4, X->shape);
        lw_dim td[2] = {{X->shape[2], X->shape[2], 1, 1, 0, 0, 1, 0, 0},
                        {X->shape[3], X->shape[3], 1, 1, 0, 0, 1, 0, 0}};
        int64_t os[4] = {ls[0], 1, 1, ls[3]};
        y = pool_emit(c, is_max, x, t, td, os);
        y = lw_to_first(c, y, t, 4, os);
    } else {
        uint32_t mask = 0;
        for (uint32_t i = 2; i < r; i++) mask |= 1u << i;
        y = lw_reduce_axes(c, is_max ? CTOSA_OP_REDUCE_MAX : CTOSA_OP_REDUCE_SUM, x, t, r, X->shape, mask,
                           !is_max, NULL);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_gap(lower_ctx *c) { return lower_global_pool(c, false); }
static lower_status lower_gmp(lower_ctx *c) { return lower_global_pool(c, true); }

/* GlobalLpPool: a REDUCE_SUM of |x|^p over the spatial axes, then the root. */
static lower_status lower_global_lppool(lower_ctx *c) {
    lw_v xp;
    int64_t p;
    lower_status st = lp_input(c, &xp, &p);
    if (st != LOWER_OK) return st;
    if (xp.r < 3)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "GlobalLpPool: input rank %u, expected >= 3", xp.r);
    uint32_t mask = 0;
    for (uint32_t i = 2; i < xp.r; i++) mask |= 1u << i;
    lw_v y = xp;
    y.n = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, xp.n, xp.t, xp.r, xp.s, mask, false, y.s);
    return lw_v_out(c, 0, lw_v_cast(c, lp_root(c, y, p), lw_in(c, 0)->t));
}

const lower_entry lower_table_pool[] = {
    {"MaxPool", 1, 0, lower_maxpool},
    {"AveragePool", 1, 0, lower_avgpool},
    {"GlobalAveragePool", 1, 0, lower_gap},
    {"GlobalMaxPool", 1, 0, lower_gmp},
    {"LpPool", 1, 0, lower_lppool},
    {"GlobalLpPool", 1, 0, lower_global_lppool},
    {0},
};
