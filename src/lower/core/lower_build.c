/*
 * lower_build.c - the emission builder's tensor-name form (lower_build.h):
 * element counts, axes, data movement, arithmetic, reductions, layout
 * changes, convolution windows and weight constants. Every family file
 * emits through these (and the primitives of lower.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/opt/opt_transpose_int.h"
#include "util/floatfmt.h"

bool lw_axis(lower_ctx *c, int64_t axis, uint32_t rank, const char *what, int32_t *out) {
    int64_t a = axis < 0 ? axis + (int64_t)rank : axis;
    if (a < 0 || a >= (int64_t)(rank ? rank : 1)) {
        lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: %s %lld is out of range for rank %u",
                  lw_node(c)->op_type, what, (long long)axis, rank);
        return false;
    }
    *out = (int32_t)a;
    return true;
}

ctosa_dtype lw_acc_type(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_INT8: return CTOSA_DTYPE_INT32;
    case CTOSA_DTYPE_INT16: return CTOSA_DTYPE_INT48;
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return CTOSA_DTYPE_FP16;
    default: return CTOSA_DTYPE_FP32;
    }
}

const char *lw_mul(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
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

const char *lw_add(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape) {
    if (!a || !b) return NULL;
    return lw_binary(c, CTOSA_OP_ADD, a, b, t, rank, shape);
}

const char *lw_sub(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape) {
    if (!a || !b) return NULL;
    return lw_binary(c, CTOSA_OP_SUB, a, b, t, rank, shape);
}

const char *lw_mul_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                          double v) {
    if (!x) return NULL;
    if (v == 1.0) return x;
    return lw_mul(c, x, lw_scalar(c, t, rank, v), t, rank, shape);
}

const char *lw_add_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                          double v) {
    if (!x) return NULL;
    return lw_add(c, x, lw_scalar(c, t, rank, v), t, rank, shape);
}

const char *lw_reduce(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t, uint32_t rank,
                      const int64_t *shape, int32_t axis, int64_t *out_shape) {
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

const char *lw_reduce_axes(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t, uint32_t rank,
                           const int64_t *shape, uint32_t mask, bool mean, int64_t *out_shape) {
    int64_t s[LOWER_MAX_RANK];
    memcpy(s, shape, rank * sizeof *s);
    int64_t n = 1;
    for (uint32_t i = 0; i < rank && x; i++) {
        if (!(mask & (1u << i))) continue;
        n *= s[i];
        x = lw_reduce(c, kind, x, t, rank, s, (int32_t)i, s);
    }
    if (out_shape) memcpy(out_shape, s, rank * sizeof *s);
    if (mean && x && n != 1) x = lw_mul_scalar(c, x, t, rank, s, 1.0 / (double)n);
    return x;
}

const char *lw_slice(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                     const int64_t *start, const int64_t *size) {
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

const char *lw_pad(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                   const int64_t *pads, double value) {
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

void lw_shape_last(uint32_t rank, const int64_t *shape, int64_t *out) {
    int64_t ch = shape[1];
    out[0] = shape[0];
    for (uint32_t i = 2; i < rank; i++) out[i - 1] = shape[i];
    out[rank - 1] = ch;
}

void lw_shape_first(uint32_t rank, const int64_t *last_shape, int64_t *out) {
    int64_t ch = last_shape[rank - 1];
    out[0] = last_shape[0];
    out[1] = ch;
    for (uint32_t i = 1; i + 1 < rank; i++) out[i + 1] = last_shape[i];
}

const char *lw_to_last(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape) {
    if (!x) return NULL;
    int32_t perm[LOWER_MAX_RANK];
    perm[0] = 0;
    for (uint32_t i = 1; i + 1 < rank; i++) perm[i] = (int32_t)i + 1;
    perm[rank - 1] = 1;
    return lw_transpose(c, x, t, rank, shape, perm);
}

const char *lw_to_first(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                        const int64_t *last_shape) {
    if (!x) return NULL;
    int32_t perm[LOWER_MAX_RANK];
    perm[0] = 0;
    perm[1] = (int32_t)rank - 1;
    for (uint32_t i = 2; i < rank; i++) perm[i] = (int32_t)i - 1;
    return lw_transpose(c, x, t, rank, last_shape, perm);
}

const char *lw_reshape_if(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *from,
                          uint32_t new_rank, const int64_t *to) {
    if (!x) return NULL;
    if (rank == new_rank && memcmp(from, to, rank * sizeof *from) == 0) return x;
    return lw_reshape(c, x, t, new_rank, to);
}

const char *lw_channel_vec(lower_ctx *c, uint32_t i, int64_t n, ctosa_dtype t, uint32_t rank,
                           lower_status *st) {
    const char *op = lw_node(c)->op_type;
    const lower_value *v = lw_data_input(c, i, st);
    if (!v) return NULL;
    int64_t cnt = lw_count(v->rank, v->shape);
    if (cnt != n && cnt != 1) {
        *st = lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "%s: input '%s' has %lld elements, expected %lld",
                        op, v->name, (long long)cnt, (long long)n);
        return NULL;
    }
    int64_t s[LOWER_MAX_RANK];
    for (uint32_t k = 0; k < rank; k++) s[k] = 1;
    if (rank > 1) s[1] = cnt;
    else s[0] = cnt;
    const char *x = lw_input(c, i);
    if (x && v->t != t) x = lw_cast(c, x, v->t, t, v->rank, v->shape);
    x = lw_reshape_if(c, x, t, v->rank, v->shape, rank, s);
    if (!x) *st = lw_failed(c);
    return x;
}

const char *lw_normalize(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                         uint32_t mask, double eps, const char **mean_out, const char **inv_out,
                         int64_t *red_shape) {
    int64_t rs[LOWER_MAX_RANK];
    const char *mean = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, x, t, rank, shape, mask, true, rs);
    const char *d = lw_sub(c, x, mean, t, rank, shape);
    const char *sq = lw_mul(c, d, d, t, rank, shape);
    const char *var = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, sq, t, rank, shape, mask, true, NULL);
    const char *ve = lw_add_scalar(c, var, t, rank, rs, eps);
    const char *inv = ve ? lw_unary(c, CTOSA_OP_RSQRT, ve, t, rank, rs, NULL) : NULL;
    if (mean_out) *mean_out = mean;
    if (inv_out) *inv_out = inv;
    if (red_shape) memcpy(red_shape, rs, rank * sizeof *rs);
    return lw_mul(c, d, inv, t, rank, shape);
}

bool lw_wsrc_init(lower_ctx *c, uint32_t i, lw_wsrc *w) {
    memset(w, 0, sizeof *w);
    const lower_value *v = lw_has_input(c, i) ? lw_in(c, i) : NULL;
    if (!v || !v->data || !v->static_shape) return false;
    w->t = v->t;
    w->n = lw_count(v->rank, v->shape);
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

void *lw_wbuf(lower_ctx *c, const lw_wsrc *w, int64_t n) {
    size_t sz = (size_t)(n > 0 ? n : 1) * w->esz;
    void *p = arena_alloc(lw_arena(c), sz);
    if (p) memset(p, 0, sz);
    return p;
}

const char *lw_wconst(lower_ctx *c, const lw_wsrc *w, uint32_t rank, const int64_t *shape, const void *buf) {
    if (!buf) return NULL;
    return w->raw ? lw_const(c, w->t, rank, shape, buf) : lw_const_from_f64(c, w->t, rank, shape, buf);
}

const char *lw_wconst_stream(lower_ctx *c, const lw_wsrc *w, uint32_t rank, const int64_t *out_shape,
                             int64_t first, uint32_t src_rank, const int64_t *src_shape,
                             const int32_t *perm) {
    if (!w->raw || rank > LOWER_MAX_RANK || c->rejected) return NULL;
    uint64_t n = 1;
    for (uint32_t i = 0; i < src_rank; i++) n *= (uint64_t)(src_shape[i] > 0 ? src_shape[i] : 0);
    if (n * w->esz < c->s->stream_min) return NULL;
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
        e = ot_set_permuted(c->g, &probe, &src, src_rank, src_shape, perm, (uint32_t)w->esz, c->s->stream_min,
                            &done);
    if (!e && !done) return NULL;
    const char *name = e ? NULL : lw_unique_name(c, NULL);
    ctosa_tensor *tt = NULL;
    if (!e) e = name ? ctosa_block_add_tensor(c->g, c->b, name, w->t, rank, s32, &tt) : ctosa_error_nomem();
    if (!e) tt->data = probe.data;
    const char *nm = tt ? tt->name : NULL;
    if (!e) e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST, 0, NULL, 1, &nm, NULL, NULL);
    if (e) {
        lw_failed(c);
        ctosa_error_free(e);
        return NULL;
    }
    return nm;
}

/* ============================================================= Conv */

/* Reads kernel_shape / strides / dilations / pads / auto_pad for nsp
 * spatial dims of input shape `in` (spatial at in[2..]), kernel k[].
 * transposed: ConvTranspose rules. */
lower_status lw_read_window(lower_ctx *c, uint32_t nsp, const int64_t *in, const int64_t *k, lw_dim *dm) {
    const char *op = lw_node(c)->op_type;
    const int64_t *ks = NULL, *st = NULL, *dl = NULL, *pd = NULL;
    int64_t nks = lw_attr_ints(c, "kernel_shape", &ks);
    int64_t nst = lw_attr_ints(c, "strides", &st);
    int64_t ndl = lw_attr_ints(c, "dilations", &dl);
    int64_t npd = lw_attr_ints(c, "pads", &pd);
    if ((nks >= 0 && nks != nsp) || (nst >= 0 && nst != nsp) || (ndl >= 0 && ndl != nsp) ||
        (npd >= 0 && npd != 2 * nsp))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: kernel_shape/strides/dilations/pads lengths do not match %u spatial dims", op,
                         nsp);
    for (uint32_t i = 0; i < nsp; i++) {
        lw_dim *d = &dm[i];
        d->in = in[2 + i];
        d->k = k ? k[i] : (nks >= 0 ? ks[i] : 1);
        if (nks >= 0 && k && ks[i] != k[i])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: kernel_shape %lld differs from the weight's %lld", op, (long long)ks[i],
                             (long long)k[i]);
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
lower_status lw_window(lower_ctx *c, uint32_t nsp, lw_dim *dm, bool ceil_mode) {
    const char *op = lw_node(c)->op_type;
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    for (uint32_t i = 0; i < nsp; i++) {
        lw_dim *d = &dm[i];
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
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: kernel %lld larger than padded input %lld",
                             op, (long long)eff, (long long)(d->in + d->pb + d->pe));
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

/* ------------------------------------------------ data movement, dtypes */

lower_status lw_failed(lower_ctx *c) {
    /* lw_reject keeps the first reason: a builder call that failed because
     * the lowering had already rejected reports that reason */
    return lw_reject(c, LOWER_INTERNAL, NULL, "%s: emitting TOSA operators failed", lw_node(c)->op_type);
}

const lower_value *lw_data_input(lower_ctx *c, uint32_t i, lower_status *st) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_value *v = lw_has_input(c, i) ? lw_in(c, i) : NULL;
    if (!v) {
        *st = lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input %u is missing or unknown", n->op_type, i);
        return NULL;
    }
    if (!v->static_shape) {
        *st = lw_reject(c, LOWER_DYNAMIC_SHAPE, v->name, "%s: input '%s' has a dimension that is not static",
                        n->op_type, v->name);
        return NULL;
    }
    if (v->t == CTOSA_DTYPE_UNKNOWN) {
        if (v->onnx_dtype == CTOSA_ONNX_INT64)
            *st = lw_reject(c, LOWER_INT64_NOT_ENABLED, v->name,
                            "%s: input '%s' is a runtime int64 value and the spec has no int64", n->op_type,
                            v->name);
        else
            *st = lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name,
                            "%s: input '%s' has dtype %s, which has no TOSA type", n->op_type, v->name,
                            lw_onnx_dtype_name(v->onnx_dtype));
        return NULL;
    }
    *st = LOWER_OK;
    return v;
}

int64_t lw_count(uint32_t rank, const int64_t *shape) {
    /* Saturates at INT64_MAX (hostile shapes; every caller then rejects
     * the count as too large) but stays 0 when any dimension is 0. */
    int64_t n = 1;
    bool over = false;
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] == 0) return 0;
        if (!over && __builtin_mul_overflow(n, shape[i], &n)) over = true;
    }
    return over ? INT64_MAX : n;
}

uint32_t lw_shape_of(lower_ctx *c, const char *name, int64_t *shape) {
    const ctosa_tensor *t = lw_tensor_info(c, name);
    if (!t) return 0;
    for (uint32_t i = 0; i < t->rank; i++) shape[i] = t->shape[i];
    return t->rank;
}

const char *lw_slice_axis(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                          int32_t axis, int64_t begin, int64_t len) {
    int64_t start[LOWER_MAX_RANK] = {0}, size[LOWER_MAX_RANK];
    memcpy(size, in_shape, rank * sizeof *size);
    start[axis] = begin;
    size[axis] = len;
    return lw_slice(c, x, t, rank, in_shape, start, size);
}

const char *lw_reverse(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                       int32_t axis) {
    if (shape[axis] == 1) return x;
    ctosa_attr a = {0};
    a.axis = axis;
    return lw_unary(c, CTOSA_OP_REVERSE, x, t, rank, shape, &a);
}

const char *lw_concat(lower_ctx *c, uint32_t n, const char *const *xs, ctosa_dtype t, uint32_t rank,
                      int32_t axis) {
    if (n == 1) return xs[0];
    for (uint32_t i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    int64_t out_shape[LOWER_MAX_RANK], s[LOWER_MAX_RANK];
    if (lw_shape_of(c, xs[0], out_shape) != rank) return NULL;
    for (uint32_t i = 1; i < n; i++) {
        if (lw_shape_of(c, xs[i], s) != rank) return NULL;
        out_shape[axis] += s[axis];
    }
    ctosa_attr a = {0};
    a.axis = axis;
    const char *out = lw_tensor(c, t, rank, out_shape);
    if (!out || !lw_op(c, CTOSA_OP_CONCAT, n, xs, 1, &out, &a)) return NULL;
    return out;
}

const char *lw_tile(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                    const int64_t *mult) {
    int64_t out_shape[LOWER_MAX_RANK];
    bool any = false;
    for (uint32_t i = 0; i < rank; i++) {
        out_shape[i] = in_shape[i] * mult[i];
        if (mult[i] != 1) any = true;
    }
    if (!any) return x;
    const char *in[2] = {x, lw_shape(c, rank, mult)};
    if (!in[1]) return NULL;
    const char *out = lw_tensor(c, t, rank, out_shape);
    if (!out || !lw_op(c, CTOSA_OP_TILE, 2, in, 1, &out, NULL)) return NULL;
    return out;
}

const char *lw_const_i32(lower_ctx *c, uint32_t rank, const int64_t *shape, const int32_t *v) {
    /* The file encoding is little-endian; so is every host ctosa supports. */
    return lw_const(c, CTOSA_DTYPE_INT32, rank, shape, v);
}

size_t lw_onnx_elem_size(int32_t dt) {
    switch (dt) {
    case CTOSA_ONNX_BOOL:
    case CTOSA_ONNX_INT8:
    case CTOSA_ONNX_UINT8: return 1;
    case CTOSA_ONNX_INT16:
    case CTOSA_ONNX_UINT16:
    case CTOSA_ONNX_FLOAT16:
    case CTOSA_ONNX_BFLOAT16: return 2;
    case CTOSA_ONNX_INT32:
    case CTOSA_ONNX_UINT32:
    case CTOSA_ONNX_FLOAT: return 4;
    case CTOSA_ONNX_INT64:
    case CTOSA_ONNX_UINT64:
    case CTOSA_ONNX_DOUBLE: return 8;
    default: return 0;
    }
}

const char *lw_onnx_dtype_name(int32_t dt) {
    const char *n = ctosa_onnx_dtype_name(dt);
    return n ? n : "?";
}

bool lw_onnx_is_float(int32_t dt) {
    return dt == CTOSA_ONNX_FLOAT || dt == CTOSA_ONNX_DOUBLE || dt == CTOSA_ONNX_FLOAT16 ||
           dt == CTOSA_ONNX_BFLOAT16;
}

size_t lw_onnx_encode(int32_t dt, double v, void *dst) {
    size_t n = lw_onnx_elem_size(dt);
    /* Values come from untrusted models: casting an out-of-range double to
     * an integer type is undefined, so go through a saturated int64 (NaN ->
     * 0) and wrap from there. */
    int64_t iv = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
    switch (dt) {
    case CTOSA_ONNX_BOOL: {
        uint8_t x = v != 0;
        memcpy(dst, &x, 1);
        break;
    }
    case CTOSA_ONNX_INT8: {
        int8_t x = (int8_t)iv;
        memcpy(dst, &x, 1);
        break;
    }
    case CTOSA_ONNX_UINT8: {
        uint8_t x = (uint8_t)iv;
        memcpy(dst, &x, 1);
        break;
    }
    case CTOSA_ONNX_INT16: {
        int16_t x = (int16_t)iv;
        memcpy(dst, &x, 2);
        break;
    }
    case CTOSA_ONNX_UINT16: {
        uint16_t x = (uint16_t)iv;
        memcpy(dst, &x, 2);
        break;
    }
    case CTOSA_ONNX_FLOAT16: {
        uint16_t x = ff_f32_to_fp16((float)v);
        memcpy(dst, &x, 2);
        break;
    }
    case CTOSA_ONNX_BFLOAT16: {
        uint16_t x = ff_f32_to_bf16((float)v);
        memcpy(dst, &x, 2);
        break;
    }
    case CTOSA_ONNX_INT32: {
        int32_t x = (int32_t)iv;
        memcpy(dst, &x, 4);
        break;
    }
    case CTOSA_ONNX_UINT32: {
        uint32_t x = (uint32_t)iv;
        memcpy(dst, &x, 4);
        break;
    }
    case CTOSA_ONNX_FLOAT: {
        float x = (float)v;
        memcpy(dst, &x, 4);
        break;
    }
    case CTOSA_ONNX_INT64: {
        int64_t x = iv;
        memcpy(dst, &x, 8);
        break;
    }
    case CTOSA_ONNX_UINT64: {
        uint64_t x = v >= 0x1p64 ? UINT64_MAX : v >= 0 ? (uint64_t)v : (uint64_t)iv;
        memcpy(dst, &x, 8);
        break;
    }
    case CTOSA_ONNX_DOUBLE: memcpy(dst, &v, 8); break;
    default: return 0;
    }
    return n;
}
