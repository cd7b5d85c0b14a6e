/*
 * lower_conv.c - Conv and ConvTranspose, plus the helpers shared by the
 * conv/pool/matmul/norm/softmax/resize families (lower_cv.h).
 *
 * ONNX convolutions are channels-first; TOSA's are channels-last with
 * OHWI weights. Data is transposed in and out (the framework cancels the
 * adjacent inverse pairs between consecutive convolutions); weights are
 * constants and are re-laid out at compile time into new constants.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_cv.h"
#include "lower/opt/opt_transpose_int.h"

/* ================================================================ helpers */

lower_status cv_fail(lower_ctx *c) {
    return lw_reject(c, LOWER_INTERNAL, NULL, "%s: emitting TOSA failed", lw_node(c)->op_type);
}

const lower_value *cv_data_input(lower_ctx *c, uint32_t i, lower_status *st) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_value *v = lw_has_input(c, i) ? lw_in(c, i) : NULL;
    if (!v) {
        *st = lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input %u is missing", n->op_type, i);
        return NULL;
    }
    if (!v->static_shape) {
        *st = lw_reject(c, LOWER_DYNAMIC_SHAPE, v->name, "%s: input '%s' has no static shape",
                        n->op_type, v->name);
        return NULL;
    }
    if (v->t == CTOSA_DTYPE_UNKNOWN) {
        const char *dn = ctosa_onnx_dtype_name(v->onnx_dtype);
        *st = lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "%s: input '%s' has dtype %s",
                        n->op_type, v->name, dn ? dn : "?");
        return NULL;
    }
    *st = LOWER_OK;
    return v;
}

bool cv_axis(lower_ctx *c, int64_t axis, uint32_t rank, const char *what, int32_t *out) {
    int64_t a = axis < 0 ? axis + (int64_t)rank : axis;
    if (a < 0 || a >= (int64_t)(rank ? rank : 1)) {
        lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: %s %lld is outside rank %u",
                  lw_node(c)->op_type, what, (long long)axis, rank);
        return false;
    }
    *out = (int32_t)a;
    return true;
}

int64_t cv_count(uint32_t rank, const int64_t *shape) {
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= shape[i];
    return n;
}

ctosa_dtype cv_acc_type(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_INT8: return CTOSA_DTYPE_INT32;
    case CTOSA_DTYPE_INT16: return CTOSA_DTYPE_INT48;
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return CTOSA_DTYPE_FP16;
    default: return CTOSA_DTYPE_FP32;
    }
}

const char *cv_mul(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape) {
    if (!a || !b) return NULL;
    int64_t one = 1;
    int8_t zero = 0;
    const char *shift = lw_const(c, CTOSA_DTYPE_INT8, 1, &one, &zero);
    const char *out = lw_tensor(c, t, rank, shape);
    if (!shift || !out) return NULL;
    const char *in[3] = {a, b, shift};
    return lw_op(c, CTOSA_OP_MUL, 3, in, 1, &out, NULL) ? out : NULL;
}

const char *cv_add(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape) {
    if (!a || !b) return NULL;
    return lw_binary(c, CTOSA_OP_ADD, a, b, t, rank, shape);
}

const char *cv_sub(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape) {
    if (!a || !b) return NULL;
    return lw_binary(c, CTOSA_OP_SUB, a, b, t, rank, shape);
}

const char *cv_mul_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *shape, double v) {
    if (!x) return NULL;
    if (v == 1.0) return x;
    return cv_mul(c, x, lw_scalar(c, t, rank, v), t, rank, shape);
}

const char *cv_add_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *shape, double v) {
    if (!x) return NULL;
    return cv_add(c, x, lw_scalar(c, t, rank, v), t, rank, shape);
}

const char *cv_reduce(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t,
                      uint32_t rank, const int64_t *shape, int32_t axis, int64_t *out_shape) {
    if (!x) return NULL;
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, shape, rank * sizeof *os);
    os[axis] = 1;
    if (out_shape) memcpy(out_shape, os, rank * sizeof *os);
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.axis = axis;
    if (kind == CTOSA_OP_REDUCE_MAX || kind == CTOSA_OP_REDUCE_MIN) a.nan_mode = CTOSA_NAN_PROPAGATE;
    return lw_unary(c, kind, x, t, rank, os, &a);
}

const char *cv_reduce_axes(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t,
                           uint32_t rank, const int64_t *shape, uint32_t mask, bool mean,
                           int64_t *out_shape) {
    int64_t s[LOWER_MAX_RANK];
    memcpy(s, shape, rank * sizeof *s);
    int64_t n = 1;
    for (uint32_t i = 0; i < rank && x; i++) {
        if (!(mask & (1u << i))) continue;
        n *= s[i];
        x = cv_reduce(c, kind, x, t, rank, s, (int32_t)i, s);
    }
    if (out_shape) memcpy(out_shape, s, rank * sizeof *s);
    if (mean && x && n != 1) x = cv_mul_scalar(c, x, t, rank, s, 1.0 / (double)n);
    return x;
}

const char *cv_slice(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                     const int64_t *in_shape, const int64_t *start, const int64_t *size) {
    if (!x) return NULL;
    bool same = true;
    for (uint32_t i = 0; i < rank; i++)
        if (start[i] != 0 || size[i] != in_shape[i]) same = false;
    if (same) return x;
    const char *st = lw_shape(c, rank, start), *sz = lw_shape(c, rank, size);
    const char *out = lw_tensor(c, t, rank, size);
    if (!st || !sz || !out) return NULL;
    const char *in[3] = {x, st, sz};
    return lw_op(c, CTOSA_OP_SLICE, 3, in, 1, &out, NULL) ? out : NULL;
}

const char *cv_pad(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                   const int64_t *in_shape, const int64_t *pads, double value) {
    if (!x) return NULL;
    int64_t os[LOWER_MAX_RANK];
    bool any = false;
    for (uint32_t i = 0; i < rank; i++) {
        os[i] = in_shape[i] + pads[2 * i] + pads[2 * i + 1];
        if (pads[2 * i] || pads[2 * i + 1]) any = true;
    }
    if (!any) return x;
    int64_t one = 1;
    const char *p = lw_shape(c, 2 * rank, pads);
    const char *pv = lw_const_from_f64(c, t, 1, &one, &value);
    const char *out = lw_tensor(c, t, rank, os);
    if (!p || !pv || !out) return NULL;
    const char *in[3] = {x, p, pv};
    return lw_op(c, CTOSA_OP_PAD, 3, in, 1, &out, NULL) ? out : NULL;
}

const char *cv_concat(lower_ctx *c, uint32_t n, const char *const *xs, ctosa_dtype t, uint32_t rank,
                      const int64_t *out_shape, int32_t axis) {
    if (n == 1) return xs[0];
    for (uint32_t i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    const char *out = lw_tensor(c, t, rank, out_shape);
    if (!out) return NULL;
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.axis = axis;
    return lw_op(c, CTOSA_OP_CONCAT, n, xs, 1, &out, &a) ? out : NULL;
}

void cv_shape_last(uint32_t rank, const int64_t *shape, int64_t *out) {
    int64_t ch = shape[1];
    out[0] = shape[0];
    for (uint32_t i = 2; i < rank; i++) out[i - 1] = shape[i];
    out[rank - 1] = ch;
}

void cv_shape_first(uint32_t rank, const int64_t *last_shape, int64_t *out) {
    int64_t ch = last_shape[rank - 1];
    out[0] = last_shape[0];
    out[1] = ch;
    for (uint32_t i = 1; i + 1 < rank; i++) out[i + 1] = last_shape[i];
}

const char *cv_to_last(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                       const int64_t *shape) {
    if (!x) return NULL;
    int32_t perm[LOWER_MAX_RANK];
    perm[0] = 0;
    for (uint32_t i = 1; i + 1 < rank; i++) perm[i] = (int32_t)i + 1;
    perm[rank - 1] = 1;
    return lw_transpose(c, x, t, rank, shape, perm);
}

const char *cv_to_first(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                        const int64_t *last_shape) {
    if (!x) return NULL;
    int32_t perm[LOWER_MAX_RANK];
    perm[0] = 0;
    perm[1] = (int32_t)rank - 1;
    for (uint32_t i = 2; i < rank; i++) perm[i] = (int32_t)i - 1;
    return lw_transpose(c, x, t, rank, last_shape, perm);
}

const char *cv_reshape_if(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *from, uint32_t new_rank, const int64_t *to) {
    if (!x) return NULL;
    if (rank == new_rank && memcmp(from, to, rank * sizeof *from) == 0) return x;
    return lw_reshape(c, x, t, new_rank, to);
}

const char *cv_channel_vec(lower_ctx *c, uint32_t i, int64_t n, ctosa_dtype t, uint32_t rank,
                           lower_status *st) {
    const char *op = lw_node(c)->op_type;
    const lower_value *v = cv_data_input(c, i, st);
    if (!v) return NULL;
    int64_t cnt = cv_count(v->rank, v->shape);
    if (cnt != n && cnt != 1) {
        *st = lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name,
                        "%s: input '%s' has %lld elements, expected %lld", op, v->name,
                        (long long)cnt, (long long)n);
        return NULL;
    }
    int64_t s[LOWER_MAX_RANK];
    for (uint32_t k = 0; k < rank; k++) s[k] = 1;
    if (rank > 1) s[1] = cnt;
    else s[0] = cnt;
    const char *x = lw_input(c, i);
    if (x && v->t != t) x = lw_cast(c, x, v->t, t, v->rank, v->shape);
    x = cv_reshape_if(c, x, t, v->rank, v->shape, rank, s);
    if (!x) *st = cv_fail(c);
    return x;
}

const char *cv_normalize(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                         const int64_t *shape, uint32_t mask, double eps, const char **mean_out,
                         const char **inv_out, int64_t *red_shape) {
    int64_t rs[LOWER_MAX_RANK];
    const char *mean = cv_reduce_axes(c, CTOSA_OP_REDUCE_SUM, x, t, rank, shape, mask, true, rs);
    const char *d = cv_sub(c, x, mean, t, rank, shape);
    const char *sq = cv_mul(c, d, d, t, rank, shape);
    const char *var = cv_reduce_axes(c, CTOSA_OP_REDUCE_SUM, sq, t, rank, shape, mask, true, NULL);
    const char *ve = cv_add_scalar(c, var, t, rank, rs, eps);
    const char *inv = ve ? lw_unary(c, CTOSA_OP_RSQRT, ve, t, rank, rs, NULL) : NULL;
    if (mean_out) *mean_out = mean;
    if (inv_out) *inv_out = inv;
    if (red_shape) memcpy(red_shape, rs, rank * sizeof *rs);
    return cv_mul(c, d, inv, t, rank, shape);
}

bool cv_wsrc_init(lower_ctx *c, uint32_t i, cv_wsrc *w) {
    memset(w, 0, sizeof *w);
    const lower_value *v = lw_has_input(c, i) ? lw_in(c, i) : NULL;
    if (!v || !v->data || !v->static_shape) return false;
    w->t = v->t;
    w->n = cv_count(v->rank, v->shape);
    bool same = (v->onnx_dtype == CTOSA_ONNX_FLOAT && v->t == CTOSA_DTYPE_FP32) ||
                (v->onnx_dtype == CTOSA_ONNX_FLOAT16 && v->t == CTOSA_DTYPE_FP16) ||
                (v->onnx_dtype == CTOSA_ONNX_BFLOAT16 && v->t == CTOSA_DTYPE_BF16);
    if (same && v->nbytes == (uint64_t)w->n * (v->t == CTOSA_DTYPE_FP32 ? 4u : 2u)) {
        w->raw = v->data;
        w->esz = v->t == CTOSA_DTYPE_FP32 ? 4 : 2;
        return true;
    }
    w->esz = sizeof(double);
    return lw_const_f64(c, i, &w->f64) == w->n;
}

void *cv_wbuf(lower_ctx *c, const cv_wsrc *w, int64_t n) {
    size_t sz = (size_t)(n > 0 ? n : 1) * w->esz;
    void *p = arena_alloc(lw_arena(c), sz);
    if (p) memset(p, 0, sz);
    return p;
}

const char *cv_wconst(lower_ctx *c, const cv_wsrc *w, uint32_t rank, const int64_t *shape,
                      const void *buf) {
    if (!buf) return NULL;
    return w->raw ? lw_const(c, w->t, rank, shape, buf) : lw_const_from_f64(c, w->t, rank, shape, buf);
}

const char *cv_wconst_stream(lower_ctx *c, const cv_wsrc *w, uint32_t rank, const int64_t *out_shape,
                             int64_t first, uint32_t src_rank, const int64_t *src_shape, const int32_t *perm) {
    if (!w->raw || rank > LOWER_MAX_RANK || c->rejected) return NULL;
    uint64_t n = 1;
    for (uint32_t i = 0; i < src_rank; i++) n *= (uint64_t)(src_shape[i] > 0 ? src_shape[i] : 0);
    if (n * w->esz < ot_stream_min()) return NULL;
    int32_t s32[LOWER_MAX_RANK];
    uint64_t on = 1;
    for (uint32_t i = 0; i < rank; i++) {
        if (out_shape[i] < 0 || out_shape[i] > INT32_MAX) return NULL;
        s32[i] = (int32_t)out_shape[i];
        on *= (uint64_t)out_shape[i];
    }
    if (on != n) return NULL;
    ctosa_data src;
    memset(&src, 0, sizeof src);
    src.kind = CTOSA_DATA_MEMORY;
    src.ptr = w->raw + (uint64_t)first * w->esz;
    src.size = n * w->esz;
    src.fd = -1;
    /* decide on a detached tensor first: nothing is added when the
     * permutation has no streamed form */
    ctosa_tensor probe;
    memset(&probe, 0, sizeof probe);
    probe.name = "weight";
    bool done = false;
    bool ident = true;
    for (uint32_t i = 0; i < src_rank; i++) ident = ident && perm[i] == (int32_t)i;
    ctosa_error *e = NULL;
    if (ident) /* same bytes: borrow them (written as a file range) */
        done = !(e = ctosa_tensor_set_data(c->g, &probe, src.ptr, src.size, false));
    else
        e = ot_set_permuted(c->g, &probe, &src, src_rank, src_shape, perm, (uint32_t)w->esz, &done);
    if (!e && !done) return NULL;
    const char *name = e ? NULL : lw_unique_name(c, NULL);
    ctosa_tensor *tt = NULL;
    if (!e) e = name ? ctosa_block_add_tensor(c->g, c->b, name, w->t, rank, s32, &tt) : ctosa_error_nomem();
    if (!e) tt->data = probe.data;
    const char *nm = tt ? tt->name : NULL;
    if (!e) e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST, 0, NULL, 1, &nm, NULL, NULL);
    if (e) {
        cv_fail(c);
        ctosa_error_free(e);
        return NULL;
    }
    return nm;
}

/* ============================================================= Conv */

/* Reads kernel_shape / strides / dilations / pads / auto_pad for nsp
 * spatial dims of input shape `in` (spatial at in[2..]), kernel k[].
 * transposed: ConvTranspose rules. */
lower_status cv_read_window(lower_ctx *c, uint32_t nsp, const int64_t *in,
                                    const int64_t *k, cv_dim *dm) {
    const char *op = lw_node(c)->op_type;
    const int64_t *ks = NULL, *st = NULL, *dl = NULL, *pd = NULL;
    int64_t nks = lw_attr_ints(c, "kernel_shape", &ks);
    int64_t nst = lw_attr_ints(c, "strides", &st);
    int64_t ndl = lw_attr_ints(c, "dilations", &dl);
    int64_t npd = lw_attr_ints(c, "pads", &pd);
    if ((nks >= 0 && nks != nsp) || (nst >= 0 && nst != nsp) || (ndl >= 0 && ndl != nsp) ||
        (npd >= 0 && npd != 2 * nsp))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: kernel_shape/strides/dilations/pads lengths do not match %u spatial dims",
                         op, nsp);
    for (uint32_t i = 0; i < nsp; i++) {
        cv_dim *d = &dm[i];
        d->in = in[2 + i];
        d->k = k ? k[i] : (nks >= 0 ? ks[i] : 1);
        if (nks >= 0 && k && ks[i] != k[i])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: kernel_shape %lld differs from the weight's %lld", op,
                             (long long)ks[i], (long long)k[i]);
        d->s = nst >= 0 ? st[i] : 1;
        d->d = ndl >= 0 ? dl[i] : 1;
        d->pb = npd >= 0 ? pd[i] : 0;
        d->pe = npd >= 0 ? pd[nsp + i] : 0;
        d->crop = 0;
        if (d->s < 1 || d->d < 1 || d->k < 1 || d->pb < 0 || d->pe < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: kernel/stride/dilation must be >= 1 and pads >= 0", op);
    }
    return LOWER_OK;
}

/* auto_pad and output size of a forward convolution / pooling window.
 * ceil: pooling ceil_mode. Sets pe (and crop) so the TOSA division is exact. */
lower_status cv_window(lower_ctx *c, uint32_t nsp, cv_dim *dm, bool ceil_mode) {
    const char *op = lw_node(c)->op_type;
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    for (uint32_t i = 0; i < nsp; i++) {
        cv_dim *d = &dm[i];
        int64_t eff = (d->k - 1) * d->d + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t out = (d->in + d->s - 1) / d->s;
            int64_t total = (out - 1) * d->s + eff - d->in;
            if (total < 0) total = 0;
            d->pb = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            d->pe = total - d->pb;
        } else if (!strcmp(ap, "VALID")) {
            d->pb = d->pe = 0;
        } else if (strcmp(ap, "NOTSET") != 0) {
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: auto_pad '%s' is not handled", op, ap);
        }
        int64_t span = d->in + d->pb + d->pe - eff;
        if (span < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: kernel %lld larger than padded input %lld", op, (long long)eff,
                             (long long)(d->in + d->pb + d->pe));
        if (ceil_mode) {
            d->out = (span + d->s - 1) / d->s + 1;
            /* the last window must start inside the input or the left padding */
            if ((d->out - 1) * d->s >= d->in + d->pb) d->out--;
        } else {
            d->out = span / d->s + 1;
        }
        d->pe0 = d->pe;
        int64_t need = (d->out - 1) * d->s + eff - d->in - d->pb; /* exact end padding */
        if (need >= 0) {
            d->pe = need;
        } else {
            d->pe = 0;
            d->crop = -need;
        }
    }
    return LOWER_OK;
}

/* Bias of output channels [o0, o0+n): constant, sliced input, or zeros. */
static const char *conv_bias(lower_ctx *c, uint32_t idx, ctosa_dtype t, int64_t M, int64_t o0,
                             int64_t n) {
    if (!lw_has_input(c, idx)) {
        double z = 0;
        int64_t one = 1;
        return lw_const_from_f64(c, t, 1, &one, &z);
    }
    const double *b = NULL;
    if (lw_const_f64(c, idx, &b) == M) return lw_const_from_f64(c, t, 1, &n, b + o0);
    const lower_value *v = lw_in(c, idx);
    const char *x = lw_input(c, idx);
    if (x && v->t != t) x = lw_cast(c, x, v->t, t, 1, &M);
    int64_t st = o0;
    return cv_slice(c, x, t, 1, &M, &st, &n);
}

/* Emits one CONV2D / CONV3D / DEPTHWISE_CONV2D on channels-last x. */
static const char *conv_emit(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t,
                             const char *w, ctosa_dtype wt, const char *bias, uint32_t tsp,
                             const cv_dim *dm, const int64_t *oshape) {
    if (!x || !w || !bias) return NULL;
    int32_t pad[6], stride[3], dil[3];
    for (uint32_t i = 0; i < tsp; i++) {
        pad[2 * i] = (int32_t)dm[i].pb;
        pad[2 * i + 1] = (int32_t)dm[i].pe;
        stride[i] = (int32_t)dm[i].s;
        dil[i] = (int32_t)dm[i].d;
    }
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.pad = (ctosa_i32s){pad, 2 * tsp};
    a.stride = (ctosa_i32s){stride, tsp};
    a.dilation = (ctosa_i32s){dil, tsp};
    a.acc_type = cv_acc_type(t);
    const char *izp = lw_zero_point(c, t, 0), *wzp = lw_zero_point(c, wt, 0);
    const char *out = lw_tensor(c, t, tsp + 2, oshape);
    if (!izp || !wzp || !out) return NULL;
    const char *in[5] = {x, w, bias, izp, wzp};
    return lw_op(c, kind, 5, in, 1, &out, &a) ? out : NULL;
}

static lower_status lower_conv(lower_ctx *c) {
    lower_status st;
    const lower_value *X = cv_data_input(c, 0, &st);
    if (!X) return st;
    const lower_value *W = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!W) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Conv: weight input is missing");
    cv_wsrc ws;
    if (!cv_wsrc_init(c, 1, &ws))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, W->name, "Conv: weight '%s' must be a constant",
                         W->name);
    uint32_t r = X->rank;
    if (r < 3 || r > 5 || W->rank != r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Conv: input rank %u / weight rank %u: only 1-D, 2-D and 3-D convolutions",
                         r, W->rank);
    ctosa_dtype t = X->t, wt = W->t;
    uint32_t nsp = r - 2;
    int64_t N = X->shape[0], C = X->shape[1], M = W->shape[0], Cg = W->shape[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (group < 1 || C % group || M % group || Cg * group != C)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Conv: group %lld does not match %lld input / %lld weight channels",
                         (long long)group, (long long)C, (long long)Cg);
    cv_dim dm[3];
    if ((st = cv_read_window(c, nsp, X->shape, W->shape + 2, dm)) != LOWER_OK) return st;
    if ((st = cv_window(c, nsp, dm, false)) != LOWER_OK) return st;

    /* 1-D convolutions run as 2-D with a unit height. */
    uint32_t tsp = nsp == 1 ? 2 : nsp, tr = tsp + 2;
    cv_dim td[3];
    int64_t xs[6]; /* channels-first shape used for the TOSA op */
    int64_t ks[3];
    if (nsp == 1) {
        td[0] = (cv_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[1] = dm[0];
        xs[0] = N; xs[1] = C; xs[2] = 1; xs[3] = X->shape[2];
    } else {
        memcpy(td, dm, nsp * sizeof *dm);
        memcpy(xs, X->shape, r * sizeof *xs);
    }
    for (uint32_t i = 0; i < tsp; i++) ks[i] = td[i].k;

    const char *x = lw_input(c, 0);
    x = cv_reshape_if(c, x, t, r, X->shape, tr, xs);
    int64_t ls[6];
    cv_shape_last(tr, xs, ls);
    x = cv_to_last(c, x, t, tr, xs);
    /* drop the input tail that a floor division would never read */
    int64_t start[6] = {0}, size[6];
    memcpy(size, ls, sizeof size);
    for (uint32_t i = 0; i < tsp; i++) size[1 + i] -= td[i].crop;
    x = cv_slice(c, x, t, tr, ls, start, size);
    memcpy(ls, size, sizeof ls);
    CV_TRY(x);

    int64_t os[6];
    os[0] = N;
    for (uint32_t i = 0; i < tsp; i++) os[1 + i] = td[i].out;
    os[tr - 1] = M;
    int64_t kvol = 1;
    for (uint32_t i = 0; i < tsp; i++) kvol *= ks[i];
    /* Large raw weights are streamed (cv_wconst_stream: a permuted view of
     * the model's bytes written in bounded chunks), others relaid here. */
    bool stream = ws.raw && (uint64_t)ws.n * ws.esz >= ot_stream_min();
    void *buf = stream ? NULL : cv_wbuf(c, &ws, ws.n);
    if (!stream && !buf) return cv_fail(c);
    const char *y;
    if (group > 1 && group == C && tsp == 2) {
        /* depthwise: weight [KH, KW, C, mult], output channel c*mult + m */
        int64_t mult = M / C;
        int64_t wshape[4] = {ks[0], ks[1], C, mult};
        int64_t src2[2] = {M, kvol};
        int32_t p10[2] = {1, 0};
        const char *w = stream ? cv_wconst_stream(c, &ws, 4, wshape, 0, 2, src2, p10) : NULL;
        if (!w && !c->rejected && !buf && !(buf = cv_wbuf(c, &ws, ws.n))) return cv_fail(c);
        if (!w && buf) {
            for (int64_t o = 0; o < M; o++)
                for (int64_t k = 0; k < kvol; k++) cv_wcopy(&ws, buf, k * M + o, o * kvol + k);
            w = cv_wconst(c, &ws, 4, wshape, buf);
        }
        y = conv_emit(c, CTOSA_OP_DEPTHWISE_CONV2D, x, t, w, wt, conv_bias(c, 2, t, M, 0, M), tsp,
                      td, os);
    } else {
        /* OIHW -> OHWI per group; groups split into slices + CONCAT */
        int64_t Mg = M / group;
        const char **parts = arena_alloc(lw_arena(c), (size_t)group * sizeof *parts);
        if (!parts) return cv_fail(c);
        for (int64_t g = 0; g < group; g++) {
            int64_t wshape[5];
            wshape[0] = Mg;
            for (uint32_t i = 0; i < tsp; i++) wshape[1 + i] = ks[i];
            wshape[tr - 1] = Cg;
            int64_t src3[3] = {Mg, Cg, kvol};
            int32_t p021[3] = {0, 2, 1};
            const char *w = stream ? cv_wconst_stream(c, &ws, tr, wshape, g * Mg * Cg * kvol, 3, src3, p021) : NULL;
            if (!w && !c->rejected && !buf && !(buf = cv_wbuf(c, &ws, ws.n))) return cv_fail(c);
            if (!w && buf) {
                for (int64_t o = 0; o < Mg; o++)
                    for (int64_t i = 0; i < Cg; i++)
                        for (int64_t k = 0; k < kvol; k++)
                            cv_wcopy(&ws, buf, (o * kvol + k) * Cg + i, ((g * Mg + o) * Cg + i) * kvol + k);
                w = cv_wconst(c, &ws, tr, wshape, buf);
            }
            const char *xg = x;
            if (group > 1) {
                int64_t s0[6] = {0}, sz[6];
                memcpy(sz, ls, sizeof sz);
                s0[tr - 1] = g * Cg;
                sz[tr - 1] = Cg;
                xg = cv_slice(c, x, t, tr, ls, s0, sz);
            }
            int64_t og[6];
            memcpy(og, os, sizeof og);
            og[tr - 1] = Mg;
            parts[g] = conv_emit(c, tsp == 3 ? CTOSA_OP_CONV3D : CTOSA_OP_CONV2D, xg, t, w, wt,
                                 conv_bias(c, 2, t, M, g * Mg, Mg), tsp, td, og);
            CV_TRY(parts[g]);
        }
        y = cv_concat(c, (uint32_t)group, parts, t, tr, os, (int32_t)tr - 1);
    }
    int64_t fs[6];
    cv_shape_first(tr, os, fs);
    y = cv_to_first(c, y, t, tr, os);
    if (nsp == 1) {
        int64_t s1[3] = {N, M, td[1].out};
        y = cv_reshape_if(c, y, t, tr, fs, 3, s1);
    }
    CV_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ======================================================= ConvTranspose */

/* 3-D ConvTranspose (TOSA has no 3-D transposed convolution): a stride-1
 * CONV3D over the input with stride-1 zeros inserted between elements,
 * padded by eff-1-pad_begin / eff-1-pad_end+output_padding (negative parts
 * crop), with the kernel flipped and its in/out channels swapped. */
static lower_status convtr_3d(lower_ctx *c, const lower_value *X, const lower_value *W,
                              const cv_wsrc *ws, const cv_dim *dm, const int64_t *opv) {
    ctosa_dtype t = X->t;
    int64_t N = X->shape[0], C = X->shape[1], M = W->shape[1];
    int64_t ls[5];
    cv_shape_last(5, X->shape, ls);
    const char *x = cv_to_last(c, lw_input(c, 0), t, 5, X->shape);
    for (int i = 0; i < 3 && x; i++) {
        int64_t st = dm[i].s, L = ls[1 + i];
        if (st == 1) continue;
        int64_t A = cv_count((uint32_t)i + 1, ls), B = cv_count(3 - (uint32_t)i, ls + 2 + i);
        int64_t s4[4] = {A, L, 1, B}, s3[3] = {A, L * st, B};
        int64_t pads[8] = {0, 0, 0, 0, 0, st - 1, 0, 0};
        x = lw_reshape(c, x, t, 4, s4);
        x = cv_pad(c, x, t, 4, s4, pads, 0.0);
        x = x ? lw_reshape(c, x, t, 3, s3) : NULL;
        int64_t z3[3] = {0, 0, 0}, sz3[3] = {A, (L - 1) * st + 1, B};
        x = cv_slice(c, x, t, 3, s3, z3, sz3);
        ls[1 + i] = sz3[1];
        x = x ? lw_reshape(c, x, t, 5, ls) : NULL;
    }
    int64_t st5[5] = {0}, sz5[5];
    memcpy(sz5, ls, sizeof sz5);
    cv_dim cd[3];
    int64_t os[5] = {N, 0, 0, 0, M};
    for (int i = 0; i < 3; i++) {
        int64_t eff = (dm[i].k - 1) * dm[i].d + 1;
        int64_t b = eff - 1 - dm[i].pb, e = eff - 1 - dm[i].pe + opv[i];
        st5[1 + i] = b < 0 ? -b : 0;
        sz5[1 + i] = ls[1 + i] - st5[1 + i] - (e < 0 ? -e : 0);
        cd[i] = (cv_dim){sz5[1 + i], dm[i].k, 1, dm[i].d, b > 0 ? b : 0, e > 0 ? e : 0, dm[i].out, 0, 0};
        os[1 + i] = dm[i].out;
        if (sz5[1 + i] + cd[i].pb + cd[i].pe - eff + 1 != dm[i].out)
            return lw_reject(c, LOWER_INTERNAL, NULL, "ConvTranspose: 3-D size mismatch on axis %d", 2 + i);
    }
    x = cv_slice(c, x, t, 5, ls, st5, sz5);
    int64_t KD = W->shape[2], KH = W->shape[3], KW = W->shape[4], kv = KD * KH * KW;
    void *buf = cv_wbuf(c, ws, ws->n);
    if (!buf) return cv_fail(c);
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < kv; k++)
            for (int64_t ic = 0; ic < C; ic++)
                cv_wcopy(ws, buf, (m * kv + k) * C + ic, (ic * M + m) * kv + (kv - 1 - k));
    int64_t wshape[5] = {M, KD, KH, KW, C};
    const char *w = cv_wconst(c, ws, 5, wshape, buf);
    const char *y = conv_emit(c, CTOSA_OP_CONV3D, x, t, w, W->t, conv_bias(c, 2, t, M, 0, M), 3, cd, os);
    y = cv_to_first(c, y, t, 5, os);
    CV_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_conv_transpose(lower_ctx *c) {
    lower_status st;
    const lower_value *X = cv_data_input(c, 0, &st);
    if (!X) return st;
    const lower_value *W = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!W) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "ConvTranspose: weight input is missing");
    cv_wsrc ws;
    if (!cv_wsrc_init(c, 1, &ws))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, W->name,
                         "ConvTranspose: weight '%s' must be a constant", W->name);
    uint32_t r = X->rank;
    if (r < 3 || r > 5 || W->rank != r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "ConvTranspose: input rank %u / weight rank %u: only 1-D, 2-D and 3-D", r,
                         W->rank);
    ctosa_dtype t = X->t, wt = W->t;
    uint32_t nsp = r - 2;
    int64_t N = X->shape[0], C = X->shape[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (group < 1 || W->shape[0] != C || C % group)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "ConvTranspose: group %lld does not match %lld input channels",
                         (long long)group, (long long)C);
    int64_t Mg = W->shape[1], M = Mg * group, Cg = C / group;
    cv_dim dm[3];
    if ((st = cv_read_window(c, nsp, X->shape, W->shape + 2, dm)) != LOWER_OK) return st;
    const int64_t *opad = NULL, *oshape = NULL;
    int64_t nop = lw_attr_ints(c, "output_padding", &opad);
    int64_t nos = lw_attr_ints(c, "output_shape", &oshape);
    if (nop >= 0 && nop != nsp)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output_padding length %lld",
                         (long long)nop);
    if (nos >= 0 && nos < nsp)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output_shape length %lld",
                         (long long)nos);
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: auto_pad '%s'", ap);
    int64_t opb[3], ope[3], crop_b[3], kd[3], opv[3];
    for (uint32_t i = 0; i < nsp; i++) {
        cv_dim *d = &dm[i];
        int64_t op = nop >= 0 ? opad[i] : 0;
        opv[i] = op;
        int64_t eff = (d->k - 1) * d->d + 1;
        kd[i] = eff;
        if (!strcmp(ap, "VALID")) d->pb = d->pe = 0;
        if (nos >= 0 || same) {
            int64_t want = nos >= 0 ? oshape[nos - nsp + i] : d->in * d->s;
            int64_t total = d->s * (d->in - 1) + op + eff - want;
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor */
            if (!strcmp(ap, "SAME_UPPER")) {
                d->pb = half;
                d->pe = total - half;
            } else {
                d->pb = total - half;
                d->pe = half;
            }
        }
        d->out = d->s * (d->in - 1) + op + eff - d->pb - d->pe;
        if (d->out < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output size %lld",
                             (long long)d->out);
        /* TOSA: out_pad > -kernel; larger pads are cropped after the op */
        opb[i] = -d->pb;
        ope[i] = op - d->pe;
        crop_b[i] = 0;
        if (opb[i] <= -eff) {
            crop_b[i] = d->pb;
            opb[i] = 0;
        }
        if (ope[i] <= -eff) ope[i] = 0;
    }
    if (nsp == 3) {
        if (group != 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: 3-D with group %lld",
                             (long long)group);
        return convtr_3d(c, X, W, &ws, dm, opv);
    }
    uint32_t tr = 4;
    int64_t xs[4];
    cv_dim td[2];
    int64_t tkd[2], topb[2], tope[2], tcrop[2];
    if (nsp == 1) {
        xs[0] = N; xs[1] = C; xs[2] = 1; xs[3] = X->shape[2];
        td[0] = (cv_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[1] = dm[0];
        tkd[0] = 1; tkd[1] = kd[0];
        topb[0] = tope[0] = tcrop[0] = 0;
        topb[1] = opb[0]; tope[1] = ope[0]; tcrop[1] = crop_b[0];
    } else {
        memcpy(xs, X->shape, sizeof xs);
        memcpy(td, dm, sizeof td);
        memcpy(tkd, kd, sizeof tkd);
        memcpy(topb, opb, sizeof topb);
        memcpy(tope, ope, sizeof tope);
        memcpy(tcrop, crop_b, sizeof tcrop);
    }
    const char *x = lw_input(c, 0);
    x = cv_reshape_if(c, x, t, r, X->shape, tr, xs);
    int64_t ls[4];
    cv_shape_last(tr, xs, ls);
    x = cv_to_last(c, x, t, tr, xs);
    CV_TRY(x);
    /* full TOSA output and the wanted window of it */
    int64_t full[4] = {N, 0, 0, M}, os[4] = {N, td[0].out, td[1].out, M};
    for (int i = 0; i < 2; i++) full[1 + i] = (td[i].in - 1) * td[i].s + topb[i] + tope[i] + tkd[i];
    int64_t kvol = tkd[0] * tkd[1];
    int64_t KH = nsp == 1 ? 1 : W->shape[2], KW = W->shape[r - 1];
    int64_t dy = td[0].d, dx = td[1].d;
    /* undilated large raw weights: streamed ([Cg, Mg, KH*KW] -> [Mg, KH*KW, Cg] per group) */
    bool stream = ws.raw && dy == 1 && dx == 1 && (uint64_t)Mg * kvol * Cg * ws.esz >= ot_stream_min();
    void *buf = stream ? NULL : cv_wbuf(c, &ws, Mg * kvol * Cg);
    const char **parts = arena_alloc(lw_arena(c), (size_t)group * sizeof *parts);
    if ((!stream && !buf) || !parts) return cv_fail(c);
    for (int64_t g = 0; g < group; g++) {
        int64_t wshape[4] = {Mg, tkd[0], tkd[1], Cg};
        int64_t src3[3] = {Cg, Mg, KH * KW};
        int32_t p120[3] = {1, 2, 0};
        const char *w = stream ? cv_wconst_stream(c, &ws, 4, wshape, g * Cg * Mg * KH * KW, 3, src3, p120) : NULL;
        if (!w && !c->rejected && !buf && !(buf = cv_wbuf(c, &ws, Mg * kvol * Cg))) return cv_fail(c);
        if (!w && buf) {
            memset(buf, 0, (size_t)(Mg * kvol * Cg) * ws.esz);
            /* W[ic][oc][ky][kx] (IOHW) -> [oc][ky*dy][kx*dx][ic] (OHWI, dilated) */
            for (int64_t i = 0; i < Cg; i++)
                for (int64_t o = 0; o < Mg; o++)
                    for (int64_t ky = 0; ky < KH; ky++)
                        for (int64_t kx = 0; kx < KW; kx++)
                            cv_wcopy(&ws, buf, ((o * tkd[0] + ky * dy) * tkd[1] + kx * dx) * Cg + i,
                                     (((g * Cg + i) * Mg + o) * KH + ky) * KW + kx);
            w = cv_wconst(c, &ws, 4, wshape, buf);
        }
        const char *xg = x;
        if (group > 1) {
            int64_t s0[4] = {0, 0, 0, g * Cg}, sz[4] = {ls[0], ls[1], ls[2], Cg};
            xg = cv_slice(c, x, t, 4, ls, s0, sz);
        }
        int32_t outpad[4] = {(int32_t)topb[0], (int32_t)tope[0], (int32_t)topb[1], (int32_t)tope[1]};
        int32_t stride[2] = {(int32_t)td[0].s, (int32_t)td[1].s};
        ctosa_attr a;
        memset(&a, 0, sizeof a);
        a.out_pad = (ctosa_i32s){outpad, 4};
        a.stride = (ctosa_i32s){stride, 2};
        a.acc_type = cv_acc_type(t);
        int64_t og[4] = {full[0], full[1], full[2], Mg};
        const char *bias = conv_bias(c, 2, t, M, g * Mg, Mg);
        const char *izp = lw_zero_point(c, t, 0), *wzp = lw_zero_point(c, wt, 0);
        const char *out = lw_tensor(c, t, 4, og);
        CV_TRY(w && xg && bias && izp && wzp && out);
        const char *in[5] = {xg, w, bias, izp, wzp};
        CV_TRY(lw_op(c, CTOSA_OP_TRANSPOSE_CONV2D, 5, in, 1, &out, &a));
        parts[g] = out;
    }
    const char *y = cv_concat(c, (uint32_t)group, parts, t, 4, full, 3);
    int64_t s0[4] = {0, tcrop[0], tcrop[1], 0};
    y = cv_slice(c, y, t, 4, full, s0, os);
    int64_t fs[4];
    cv_shape_first(4, os, fs);
    y = cv_to_first(c, y, t, 4, os);
    if (nsp == 1) {
        int64_t s1[3] = {N, M, td[1].out};
        y = cv_reshape_if(c, y, t, 4, fs, 3, s1);
    }
    CV_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

const lower_entry lower_table_conv[] = {
    {"Conv", 1, 0, lower_conv},
    {"ConvTranspose", 1, 0, lower_conv_transpose},
    {0},
};
