/* shape_rules.c - TOSA shape rules: the output shape of every operator must
 * follow from its input shapes and attributes (the ERROR_IF conditions of the
 * 1.0 pseudocode that concern shapes and shape-like attributes).
 *
 * Every check tolerates whatever a file says: unresolved operands (NULL),
 * unranked tensors and unknown (negative) dimensions make the affected rule
 * skip silently, since the structural check reports missing tensors and a
 * rule cannot judge what it cannot see. Shape-typed inputs (padding, start,
 * scale...) are used when they carry constant data. All arithmetic is int64
 * so hostile values cannot overflow.
 *
 * The ERROR_IFs on the values of compile-time constants that rules.c does
 * not cover live here too (zero points only non-zero for i8, MUL shift,
 * CLAMP bounds, RESCALE flag combinations), checked when the value is in
 * memory. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "util/floatfmt.h"
#include "validate_internal.h"

#define MAX_SHAPE_VALS 256 /* longest constant shape input we read (level none: MAX_RANK 32 * 2) */

/* ------------------------------------------------------------ reporting */

static void bad(const spec_op_ctx *c, diag_list *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad(const spec_op_ctx *c, diag_list *d, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spec_report_op(c, d, CTOSA_DIAG_ERROR_IF, 0, 0, NULL, msg);
}

/* "[1,4,4,4]" (truncated with "..." if long). Returns buf. */
static const char *shp(char *buf, size_t n, const ctosa_tensor *t) {
    if (!t) return "?";
    if (t->is_unranked) return "unranked";
    size_t len = 0;
    buf[len++] = '[';
    for (uint32_t i = 0; i < t->rank && len + 16 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%" PRId32 : "%" PRId32, t->shape[i]);
    if (len + 16 >= n && len + 5 < n) len += (size_t)snprintf(buf + len, n - len, "...");
    if (len + 2 <= n) {
        buf[len++] = ']';
        buf[len] = 0;
    } else {
        buf[n - 1] = 0;
    }
    return buf;
}

static void fmt_vals(char *buf, size_t n, const int64_t *v, uint32_t count) {
    size_t len = 0;
    buf[len++] = '[';
    for (uint32_t i = 0; i < count && len + 24 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%" PRId64 : "%" PRId64, v[i]);
    if (len + 2 <= n) {
        buf[len++] = ']';
        buf[len] = 0;
    } else {
        buf[n - 1] = 0;
    }
}

static void fmt_i32s(char *buf, size_t n, ctosa_i32s v) {
    int64_t tmp[16];
    uint32_t k = v.n < 16 ? v.n : 16;
    for (uint32_t i = 0; i < k; i++) tmp[i] = v.v[i];
    fmt_vals(buf, n, tmp, k);
}

/* -------------------------------------------------------------- access */

static const ctosa_tensor *IN(const spec_op_ctx *c, uint32_t i) {
    return i < c->op->n_inputs && c->in ? c->in[i] : NULL;
}
static const ctosa_tensor *OUT(const spec_op_ctx *c, uint32_t i) {
    return i < c->op->n_outputs && c->out ? c->out[i] : NULL;
}
static const char *nm(const ctosa_tensor *t) { return t && t->name ? t->name : "?"; }
static bool ranked(const ctosa_tensor *t) { return t && !t->is_unranked && (t->rank == 0 || t->shape); }
static bool known(int64_t v) { return v >= 0; }

/* Whether every dim of t is known (>= 0). */
static bool all_known(const ctosa_tensor *t) {
    for (uint32_t i = 0; i < t->rank; i++)
        if (t->shape[i] < 0) return false;
    return true;
}

/* Number of elements; -1 when unknown or absurdly large. */
static int64_t elements(const ctosa_tensor *t) {
    uint64_t n;
    if (!ranked(t) || !ctosa_tensor_elements(t, &n)) return -1;
    return (int64_t)n;
}

/* Length of a shape-typed operand (number of int64 values), -1 if unknown.
 * Shape values are TosaShape entries (rank 1, shape[0] = length); a rank-1
 * tensor of another type is accepted the same way. */
static int64_t shape_len(const ctosa_tensor *t) {
    if (!ranked(t) || t->rank != 1) return -1;
    return t->shape[0];
}

/* Reads the constant values of a shape operand. Returns the count, or -1 when
 * the values are not known here (not constant, data in a file, too long). */
static int64_t shape_vals(const ctosa_tensor *t, int64_t *v, uint32_t max) {
    if (!t || t->data.kind != CTOSA_DATA_MEMORY || !t->data.ptr) return -1;
    const uint8_t *p = t->data.ptr;
    uint64_t size = t->data.size;
    if (t->is_shape || t->dtype == CTOSA_DTYPE_SHAPE || t->dtype == CTOSA_DTYPE_INT64) {
        if (size % 8 || size / 8 > max) return -1;
        for (uint64_t i = 0; i < size / 8; i++) v[i] = (int64_t)rd_u64(p + 8 * i);
        return (int64_t)(size / 8);
    }
    if (t->dtype == CTOSA_DTYPE_INT32) {
        if (size % 4 || size / 4 > max) return -1;
        for (uint64_t i = 0; i < size / 4; i++) v[i] = (int32_t)rd_u32(p + 4 * i);
        return (int64_t)(size / 4);
    }
    return -1;
}

/* Requires rank r. Wrong ranks are reported by spec_check_op_rules() (the
 * spec's rank bounds per argument), so this only says whether the rule can
 * go on: false when t is missing, unranked, of another rank or has unknown
 * dimensions. */
static bool need_rank(const spec_op_ctx *c, diag_list *d, const ctosa_tensor *t, const char *what,
                      uint32_t r) {
    (void)c, (void)d, (void)what;
    return ranked(t) && t->rank == r && all_known(t);
}

/* Zero points, MUL shift, PAD pad_const: shape [1]. */
static void need_one(const spec_op_ctx *c, diag_list *d, uint32_t idx, const char *what) {
    const ctosa_tensor *t = IN(c, idx);
    if (!ranked(t)) return;
    if (t->rank == 1 && t->shape[0] != 1) { /* other ranks: spec_check_op_rules() */
        char b[96];
        bad(c, d, "%s '%s' must have shape [1], has %s", what, nm(t), shp(b, sizeof b, t));
    }
}

/* An attribute vector of exactly n values. */
static bool need_vec(const spec_op_ctx *c, diag_list *d, ctosa_i32s v, const char *what, uint32_t n) {
    if (v.n != n || (n && !v.v)) {
        bad(c, d, "attribute %s has %u value(s), expected %u", what, v.n, n);
        return false;
    }
    return true;
}

/* All values of v at least lo. */
static bool vec_min(const spec_op_ctx *c, diag_list *d, ctosa_i32s v, const char *what, int32_t lo) {
    for (uint32_t i = 0; i < v.n; i++) {
        if (v.v[i] < lo) {
            char b[128];
            fmt_i32s(b, sizeof b, v);
            bad(c, d, "%s values must be >= %d, got %s", what, lo, b);
            return false;
        }
    }
    return true;
}

/* Output equals input shape (elementwise unary ops and friends). */
static void same_shape(const spec_op_ctx *c, diag_list *d, const ctosa_tensor *in, const ctosa_tensor *out) {
    if (!ranked(in) || !ranked(out)) return;
    bool eq = in->rank == out->rank;
    for (uint32_t i = 0; eq && i < in->rank; i++)
        if (known(in->shape[i]) && known(out->shape[i]) && in->shape[i] != out->shape[i]) eq = false;
    if (!eq) {
        char a[96], b[96];
        bad(c, d, "output '%s' shape %s differs from input '%s' shape %s", nm(out), shp(a, sizeof a, out),
            nm(in), shp(b, sizeof b, in));
    }
}

/* Compares one dim and reports "<what> <have> ... (expected <want>)". */
static bool dim_is(const spec_op_ctx *c, diag_list *d, const char *what, int64_t have, int64_t want,
                   const char *why) {
    if (!known(have) || !known(want) || have == want) return true;
    bad(c, d, "%s %" PRId64 " does not match %s (expected %" PRId64 ")", what, have, why, want);
    return false;
}

/* --------------------------------------------------- elementwise / broadcast */

/* TOSA 1.0 broadcast: equal ranks; each dim equal or 1; output = broadcast. */
static void rule_broadcast(const spec_op_ctx *c, diag_list *d, uint32_t n_in) {
    const ctosa_tensor *o = OUT(c, 0);
    const ctosa_tensor *ins[3] = {0};
    uint32_t rank = UINT32_MAX;
    for (uint32_t i = 0; i < n_in && i < 3; i++) {
        ins[i] = IN(c, i);
        if (!ranked(ins[i])) return;
        if (rank == UINT32_MAX) rank = ins[i]->rank;
        else if (ins[i]->rank != rank) {
            char a[96], b[96];
            bad(c, d, "input ranks differ: '%s' %s and '%s' %s (TOSA needs equal ranks; reshape first)",
                nm(ins[0]), shp(a, sizeof a, ins[0]), nm(ins[i]), shp(b, sizeof b, ins[i]));
            return;
        }
    }
    if (rank == UINT32_MAX) return;
    int32_t want[64];
    bool have_want = rank <= 64;
    for (uint32_t k = 0; k < rank; k++) {
        int64_t e = 1;
        for (uint32_t i = 0; i < n_in; i++) {
            int64_t v = ins[i]->shape[k];
            if (!known(v)) {
                e = -1;
                break;
            }
            if (v == 1) continue;
            if (e == 1) e = v;
            else if (v != e) {
                char a[96], b[96];
                bad(c, d, "inputs cannot be broadcast in dimension %u: '%s' %s and '%s' %s", k, nm(ins[0]),
                    shp(a, sizeof a, ins[0]), nm(ins[i]), shp(b, sizeof b, ins[i]));
                return;
            }
        }
        if (k < 64) want[k] = (int32_t)e;
    }
    if (!ranked(o)) return;
    bool ok = o->rank == rank;
    for (uint32_t k = 0; ok && k < rank && k < 64; k++)
        if (known(want[k]) && known(o->shape[k]) && want[k] != o->shape[k]) ok = false;
    if (!ok) {
        char a[96], b[128];
        if (have_want) {
            ctosa_tensor tmp = {.rank = rank, .shape = want};
            shp(b, sizeof b, &tmp);
        } else {
            snprintf(b, sizeof b, "rank %u", rank);
        }
        bad(c, d, "output '%s' shape %s does not follow from broadcasting the inputs (expected %s)", nm(o),
            shp(a, sizeof a, o), b);
    }
}

/* ------------------------------------------------------------- convolutions */

/* One spatial dim of CONV2D/CONV3D/DEPTHWISE_CONV2D:
 * OH = idiv_check(IH - 1 + pad_a + pad_b - (KH - 1) * dilation, stride) + 1. */
static void conv_dim(const spec_op_ctx *c, diag_list *d, const char *dim, int64_t in, int64_t k, int64_t pa,
                     int64_t pb, int64_t s, int64_t dil, int64_t out) {
    if (!known(in) || !known(k) || !known(out) || s < 1 || dil < 1) return;
    int64_t num = in - 1 + pa + pb - (k - 1) * dil;
    if (num < 0) {
        bad(c, d,
            "input %s %" PRId64 " with pad %" PRId64 "+%" PRId64 " is smaller than kernel %" PRId64
            " with dilation %" PRId64,
            dim, in, pa, pb, k, dil);
    } else if (num % s) {
        bad(c, d,
            "output %s is not exact: input %" PRId64 ", kernel %" PRId64 ", pad %" PRId64 "+%" PRId64
            ", dilation %" PRId64 " give %" PRId64 " which stride %" PRId64
            " does not divide (adjust the padding)",
            dim, in, k, pa, pb, dil, num, s);
    } else if (out != num / s + 1) {
        bad(c, d,
            "output %s %" PRId64 " does not follow from input %" PRId64 ", kernel %" PRId64 ", pad %" PRId64
            "+%" PRId64 ", stride %" PRId64 ", dilation %" PRId64 " (expected %" PRId64 ")",
            dim, out, in, k, pa, pb, s, dil, num / s + 1);
    }
}

/* Pooling: OH = idiv_check(IH + pad_a + pad_b - kernel, stride) + 1. */
static void pool_dim(const spec_op_ctx *c, diag_list *d, const char *dim, int64_t in, int64_t k, int64_t pa,
                     int64_t pb, int64_t s, int64_t out) {
    if (!known(in) || !known(out) || k < 1 || s < 1) return;
    int64_t num = in + pa + pb - k;
    if (num < 0) {
        bad(c, d, "input %s %" PRId64 " with pad %" PRId64 "+%" PRId64 " is smaller than kernel %" PRId64,
            dim, in, pa, pb, k);
    } else if (num % s) {
        bad(c, d,
            "output %s is not exact: input %" PRId64 ", kernel %" PRId64 ", pad %" PRId64 "+%" PRId64
            " give %" PRId64 " which stride %" PRId64 " does not divide",
            dim, in, k, pa, pb, num, s);
    } else if (out != num / s + 1) {
        bad(c, d,
            "output %s %" PRId64 " does not follow from input %" PRId64 ", kernel %" PRId64 ", pad %" PRId64
            "+%" PRId64 ", stride %" PRId64 " (expected %" PRId64 ")",
            dim, out, in, k, pa, pb, s, num / s + 1);
    }
}

static void check_bias(const spec_op_ctx *c, diag_list *d, const ctosa_tensor *b, int64_t oc) {
    if (!need_rank(c, d, b, "bias", 1)) return;
    if (known(oc) && b->shape[0] != oc && b->shape[0] != 1)
        bad(c, d, "bias '%s' has %" PRId32 " values, expected %" PRId64 " (output channels) or 1", nm(b),
            b->shape[0], oc);
}

/* The zero points and pad/stride/dilation of a convolution with `sp`
 * spatial dimensions; true when the attribute vectors are usable. */
static bool conv_attrs(const spec_op_ctx *c, diag_list *d, uint32_t sp) {
    const ctosa_attr *a = &c->op->attr;
    need_one(c, d, 3, "input_zp");
    need_one(c, d, 4, "weight_zp");
    bool attrs = need_vec(c, d, a->pad, "pad", 2 * sp);
    attrs = need_vec(c, d, a->stride, "stride", sp) && attrs;
    attrs = need_vec(c, d, a->dilation, "dilation", sp) && attrs;
    if (!attrs) return false;
    attrs = vec_min(c, d, a->pad, "pad", 0);
    attrs = vec_min(c, d, a->stride, "stride", 1) && attrs;
    return vec_min(c, d, a->dilation, "dilation", 1) && attrs;
}

/* CONV2D and DEPTHWISE_CONV2D (depthwise: weight [KH,KW,C,M]). */
static void rule_conv2d(const spec_op_ctx *c, diag_list *d, bool depthwise) {
    const ctosa_tensor *in = IN(c, 0), *w = IN(c, 1), *out = OUT(c, 0);
    const ctosa_attr *a = &c->op->attr;
    bool attrs = conv_attrs(c, d, 2);
    bool ri = need_rank(c, d, in, "input", 4);
    bool rw = need_rank(c, d, w, "weight", 4);
    bool ro = need_rank(c, d, out, "output", 4);
    int64_t oc = -1;
    if (rw) oc = depthwise ? (int64_t)w->shape[2] * w->shape[3] : w->shape[0];
    check_bias(c, d, IN(c, 2), oc);
    if (!ri || !rw) return;
    int64_t kh = depthwise ? w->shape[0] : w->shape[1];
    int64_t kw = depthwise ? w->shape[1] : w->shape[2];
    int64_t wic = depthwise ? w->shape[2] : w->shape[3];
    if (wic != in->shape[3])
        bad(c, d, "weight '%s' expects %" PRId64 " input channels but input '%s' has %" PRId32, nm(w), wic,
            nm(in), in->shape[3]);
    if (!ro) return;
    dim_is(c, d, "output batch", out->shape[0], in->shape[0], "the input batch");
    dim_is(c, d, "output channels", out->shape[3], oc, depthwise ? "weight C*M" : "weight output channels");
    if (!attrs) return;
    conv_dim(c, d, "height", in->shape[1], kh, a->pad.v[0], a->pad.v[1], a->stride.v[0], a->dilation.v[0],
             out->shape[1]);
    conv_dim(c, d, "width", in->shape[2], kw, a->pad.v[2], a->pad.v[3], a->stride.v[1], a->dilation.v[1],
             out->shape[2]);
}

static void rule_conv3d(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *w = IN(c, 1), *out = OUT(c, 0);
    const ctosa_attr *a = &c->op->attr;
    bool attrs = conv_attrs(c, d, 3);
    bool ri = need_rank(c, d, in, "input", 5);
    bool rw = need_rank(c, d, w, "weight", 5);
    bool ro = need_rank(c, d, out, "output", 5);
    check_bias(c, d, IN(c, 2), rw ? w->shape[0] : -1);
    if (!ri || !rw) return;
    if (w->shape[4] != in->shape[4])
        bad(c, d, "weight '%s' expects %" PRId32 " input channels but input '%s' has %" PRId32, nm(w),
            w->shape[4], nm(in), in->shape[4]);
    if (!ro) return;
    dim_is(c, d, "output batch", out->shape[0], in->shape[0], "the input batch");
    dim_is(c, d, "output channels", out->shape[4], w->shape[0], "weight output channels");
    if (!attrs) return;
    static const char *dims[3] = {"depth", "height", "width"};
    for (int i = 0; i < 3; i++)
        conv_dim(c, d, dims[i], in->shape[1 + i], w->shape[1 + i], a->pad.v[2 * i], a->pad.v[2 * i + 1],
                 a->stride.v[i], a->dilation.v[i], out->shape[1 + i]);
}

static void rule_transpose_conv2d(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *w = IN(c, 1), *out = OUT(c, 0);
    const ctosa_attr *a = &c->op->attr;
    need_one(c, d, 3, "input_zp");
    need_one(c, d, 4, "weight_zp");
    bool attrs = need_vec(c, d, a->out_pad, "out_pad", 4);
    attrs = need_vec(c, d, a->stride, "stride", 2) && attrs;
    if (attrs) attrs = vec_min(c, d, a->stride, "stride", 1);
    bool ri = need_rank(c, d, in, "input", 4);
    bool rw = need_rank(c, d, w, "weight", 4);
    bool ro = need_rank(c, d, out, "output", 4);
    check_bias(c, d, IN(c, 2), rw ? w->shape[0] : -1);
    if (!ri || !rw) return;
    int64_t kh = w->shape[1], kw = w->shape[2];
    if (w->shape[3] != in->shape[3])
        bad(c, d, "weight '%s' expects %" PRId32 " input channels but input '%s' has %" PRId32, nm(w),
            w->shape[3], nm(in), in->shape[3]);
    if (a->out_pad.n == 4 && a->out_pad.v) {
        const int32_t *p = a->out_pad.v;
        if (p[0] <= -kh || p[1] <= -kh || p[2] <= -kw || p[3] <= -kw) {
            char b[96];
            fmt_i32s(b, sizeof b, a->out_pad);
            bad(c, d, "out_pad %s must be greater than minus the kernel size (%" PRId64 "x%" PRId64 ")", b,
                kh, kw);
            attrs = false;
        }
    }
    if (!ro) return;
    dim_is(c, d, "output batch", out->shape[0], in->shape[0], "the input batch");
    dim_is(c, d, "output channels", out->shape[3], w->shape[0], "weight output channels");
    if (!attrs) return;
    const int32_t *p = a->out_pad.v, *s = a->stride.v;
    int64_t oh = ((int64_t)in->shape[1] - 1) * s[0] + p[0] + p[1] + kh;
    int64_t ow = ((int64_t)in->shape[2] - 1) * s[1] + p[2] + p[3] + kw;
    if (out->shape[1] != oh)
        bad(c, d,
            "output height %" PRId32 " does not follow from input %" PRId32 ", kernel %" PRId64
            ", out_pad %d+%d, stride %d (expected %" PRId64 ")",
            out->shape[1], in->shape[1], kh, p[0], p[1], s[0], oh);
    if (out->shape[2] != ow)
        bad(c, d,
            "output width %" PRId32 " does not follow from input %" PRId32 ", kernel %" PRId64
            ", out_pad %d+%d, stride %d (expected %" PRId64 ")",
            out->shape[2], in->shape[2], kw, p[2], p[3], s[1], ow);
}

/* AVG_POOL2D / MAX_POOL2D. */
static void rule_pool2d(const spec_op_ctx *c, diag_list *d, bool avg) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    const ctosa_attr *a = &c->op->attr;
    if (avg) {
        need_one(c, d, 1, "input_zp");
        need_one(c, d, 2, "output_zp");
    }
    bool attrs = need_vec(c, d, a->kernel, "kernel", 2);
    attrs = need_vec(c, d, a->stride, "stride", 2) && attrs;
    attrs = need_vec(c, d, a->pad, "pad", 4) && attrs;
    if (attrs) {
        attrs = vec_min(c, d, a->kernel, "kernel", 1);
        attrs = vec_min(c, d, a->stride, "stride", 1) && attrs;
        attrs = vec_min(c, d, a->pad, "pad", 0) && attrs;
    }
    if (attrs) {
        const int32_t *p = a->pad.v, *k = a->kernel.v;
        if (p[0] >= k[0] || p[1] >= k[0] || p[2] >= k[1] || p[3] >= k[1]) {
            char b1[96], b2[64];
            fmt_i32s(b1, sizeof b1, a->pad);
            fmt_i32s(b2, sizeof b2, a->kernel);
            bad(c, d, "pad %s must be smaller than the kernel %s", b1, b2);
            attrs = false;
        }
    }
    bool ri = need_rank(c, d, in, "input", 4);
    bool ro = need_rank(c, d, out, "output", 4);
    if (!ri || !ro) return;
    dim_is(c, d, "output batch", out->shape[0], in->shape[0], "the input batch");
    dim_is(c, d, "output channels", out->shape[3], in->shape[3], "the input channels");
    if (!attrs) return;
    pool_dim(c, d, "height", in->shape[1], a->kernel.v[0], a->pad.v[0], a->pad.v[1], a->stride.v[0],
             out->shape[1]);
    pool_dim(c, d, "width", in->shape[2], a->kernel.v[1], a->pad.v[2], a->pad.v[3], a->stride.v[1],
             out->shape[2]);
}

/* ------------------------------------------------------------ tensor ops */

static void rule_matmul(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *A = IN(c, 0), *B = IN(c, 1), *out = OUT(c, 0);
    need_one(c, d, 2, "A_zp");
    need_one(c, d, 3, "B_zp");
    bool ra = need_rank(c, d, A, "A", 3), rb = need_rank(c, d, B, "B", 3);
    bool ro = need_rank(c, d, out, "output", 3);
    if (ra && rb) {
        char x[96], y[96];
        if (A->shape[0] != B->shape[0])
            bad(c, d, "batch of A '%s' %s differs from B '%s' %s", nm(A), shp(x, sizeof x, A), nm(B),
                shp(y, sizeof y, B));
        if (A->shape[2] != B->shape[1])
            bad(c, d, "A '%s' %s has C=%" PRId32 " but B '%s' %s has C=%" PRId32 " ([N,H,C]x[N,C,W])", nm(A),
                shp(x, sizeof x, A), A->shape[2], nm(B), shp(y, sizeof y, B), B->shape[1]);
    }
    if (ra && rb && ro) {
        int32_t want[3] = {A->shape[0], A->shape[1], B->shape[2]};
        if (out->shape[0] != want[0] || out->shape[1] != want[1] || out->shape[2] != want[2]) {
            char x[96];
            bad(c, d,
                "output '%s' %s should be [%" PRId32 ",%" PRId32 ",%" PRId32 "] ([N,H,C]x[N,C,W]->[N,H,W])",
                nm(out), shp(x, sizeof x, out), want[0], want[1], want[2]);
        }
    }
}

static bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

static void fft_hw(const spec_op_ctx *c, diag_list *d, const ctosa_tensor *t) {
    if (!pow2(t->shape[1]) || !pow2(t->shape[2]))
        bad(c, d, "height %" PRId32 " and width %" PRId32 " of '%s' must be powers of two", t->shape[1],
            t->shape[2], nm(t));
}

static void rule_fft2d(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *re = IN(c, 0), *im = IN(c, 1);
    bool r1 = need_rank(c, d, re, "input_real", 3), r2 = need_rank(c, d, im, "input_imag", 3);
    if (r1) fft_hw(c, d, re);
    if (r1 && r2) same_shape(c, d, re, im);
    for (uint32_t i = 0; i < 2; i++)
        if (r1 && need_rank(c, d, OUT(c, i), i ? "output_imag" : "output_real", 3))
            same_shape(c, d, re, OUT(c, i));
}

static void rule_rfft2d(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0);
    if (!need_rank(c, d, in, "input_real", 3)) return;
    fft_hw(c, d, in);
    for (uint32_t i = 0; i < 2; i++) {
        const ctosa_tensor *o = OUT(c, i);
        if (!need_rank(c, d, o, i ? "output_imag" : "output_real", 3)) continue;
        int64_t w = in->shape[2] / 2 + 1;
        if (o->shape[0] != in->shape[0] || o->shape[1] != in->shape[1] || o->shape[2] != w) {
            char x[96];
            bad(c, d, "output '%s' %s should be [%" PRId32 ",%" PRId32 ",%" PRId64 "] ([N,H,W/2+1])", nm(o),
                shp(x, sizeof x, o), in->shape[0], in->shape[1], w);
        }
    }
}

static void rule_table(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *tab = IN(c, 1);
    same_shape(c, d, in, OUT(c, 0));
    if (!in || !ranked(tab)) return;
    int64_t want = in->dtype == CTOSA_DTYPE_INT8 ? 256 : in->dtype == CTOSA_DTYPE_INT16 ? 513 : -1;
    if (want < 0) return;
    if (tab->rank == 1 && tab->shape[0] != want) {
        char x[96];
        bad(c, d, "table '%s' has shape %s, expected [%" PRId64 "] for %s input", nm(tab),
            shp(x, sizeof x, tab), want, ctosa_dtype_short(in->dtype));
    }
}

static void rule_rescale(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0);
    same_shape(c, d, in, OUT(c, 0));
    need_one(c, d, 3, "input_zp");
    need_one(c, d, 4, "output_zp");
    if (!ranked(in)) return;
    int64_t nc = 1;
    if (c->op->attr.per_channel) {
        if (in->rank < 1) {
            bad(c, d, "per_channel needs an input of rank >= 1, '%s' is rank 0", nm(in));
            return;
        }
        nc = in->shape[in->rank - 1];
    }
    static const char *names[2] = {"multiplier", "shift"};
    for (uint32_t i = 0; i < 2; i++) {
        const ctosa_tensor *t = IN(c, 1 + i);
        if (!ranked(t) || !known(nc)) continue;
        if (t->rank == 1 && t->shape[0] != nc) {
            char x[96];
            bad(c, d, "%s '%s' has shape %s, expected [%" PRId64 "] (%s)", names[i], nm(t),
                shp(x, sizeof x, t), nc,
                c->op->attr.per_channel ? "per_channel: one per channel of the last dimension"
                                        : "per_channel is false");
        }
    }
}

static bool axis_ok(const spec_op_ctx *c, diag_list *d, int32_t axis, uint32_t rank, const ctosa_tensor *t) {
    if (axis < 0 || (uint32_t)axis >= rank) {
        bad(c, d, "axis %d is out of range for input '%s' of rank %u", axis, nm(t), rank);
        return false;
    }
    return true;
}

static void rule_argmax(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int32_t axis = c->op->attr.axis;
    if (!axis_ok(c, d, axis, in->rank, in) || !ranked(out)) return;
    bool ok = out->rank + 1 == in->rank;
    for (uint32_t i = 0, j = 0; ok && i < in->rank; i++) {
        if (i == (uint32_t)axis) continue;
        if (known(in->shape[i]) && known(out->shape[j]) && in->shape[i] != out->shape[j]) ok = false;
        j++;
    }
    if (!ok) {
        char x[96], y[96];
        bad(c, d, "output '%s' %s should be input %s without axis %d", nm(out), shp(x, sizeof x, out),
            shp(y, sizeof y, in), axis);
    }
}

static void rule_reduce(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int32_t axis = c->op->attr.axis;
    if (!axis_ok(c, d, axis, in->rank, in) || !ranked(out)) return;
    bool ok = out->rank == in->rank;
    for (uint32_t i = 0; ok && i < in->rank; i++) {
        int64_t want = i == (uint32_t)axis ? 1 : in->shape[i];
        if (known(want) && known(out->shape[i]) && out->shape[i] != want) ok = false;
    }
    if (!ok) {
        char x[96], y[96];
        bad(c, d, "output '%s' %s should be input %s with dimension %d set to 1", nm(out),
            shp(x, sizeof x, out), shp(y, sizeof y, in), axis);
    }
}

static void rule_concat(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *out = OUT(c, 0), *first = IN(c, 0);
    if (c->op->n_inputs < 1 || !ranked(first)) return;
    uint32_t rank = first->rank;
    if (rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int32_t axis = c->op->attr.axis;
    if (!axis_ok(c, d, axis, rank, first)) return;
    int64_t sum = 0;
    bool sum_known = true;
    for (uint32_t i = 0; i < c->op->n_inputs; i++) {
        const ctosa_tensor *t = IN(c, i);
        if (!ranked(t)) {
            sum_known = false;
            continue;
        }
        char x[96], y[96];
        if (t->rank != rank) {
            bad(c, d, "input %u '%s' %s has a different rank than input 0 '%s' %s", i, nm(t),
                shp(x, sizeof x, t), nm(first), shp(y, sizeof y, first));
            return;
        }
        for (uint32_t k = 0; k < rank; k++) {
            if (k == (uint32_t)axis) continue;
            if (known(t->shape[k]) && known(first->shape[k]) && t->shape[k] != first->shape[k]) {
                bad(c, d,
                    "input %u '%s' %s differs from input 0 '%s' %s in dimension %u (only axis %d may differ)",
                    i, nm(t), shp(x, sizeof x, t), nm(first), shp(y, sizeof y, first), k, axis);
                return;
            }
        }
        if (known(t->shape[axis])) sum += t->shape[axis];
        else sum_known = false;
    }
    if (!ranked(out)) return;
    char x[96];
    if (out->rank != rank) {
        bad(c, d, "output '%s' %s has rank %u, inputs have rank %u", nm(out), shp(x, sizeof x, out),
            out->rank, rank);
        return;
    }
    for (uint32_t k = 0; k < rank; k++) {
        int64_t want = k == (uint32_t)axis ? (sum_known ? sum : -1) : first->shape[k];
        if (known(want) && known(out->shape[k]) && out->shape[k] != want) {
            bad(c, d, "output '%s' %s: dimension %u is %" PRId32 ", expected %" PRId64 "%s", nm(out),
                shp(x, sizeof x, out), k, out->shape[k], want,
                k == (uint32_t)axis ? " (sum of the inputs along the axis)" : "");
            return;
        }
    }
}

/* A shape input whose length must be n; reads its values when constant.
 * Returns the number of values read (n) or -1 when unknown/wrong. */
static int64_t shape_input(const spec_op_ctx *c, diag_list *d, uint32_t idx, const char *what, int64_t n,
                           int64_t *vals) {
    const ctosa_tensor *t = IN(c, idx);
    if (!t) return -1;
    int64_t len = shape_len(t);
    if (len >= 0 && n >= 0 && len != n) {
        bad(c, d, "%s '%s' has %" PRId64 " values, expected %" PRId64, what, nm(t), len, n);
        return -1;
    }
    int64_t got = shape_vals(t, vals, MAX_SHAPE_VALS);
    if (got < 0) return -1;
    if (n >= 0 && got != n) {
        bad(c, d, "%s '%s' holds %" PRId64 " values, expected %" PRId64, what, nm(t), got, n);
        return -1;
    }
    /* Dimensions, paddings, starts and scales are int32 quantities; bounding
     * them here keeps the rules' int64 sums and products from overflowing. */
    for (int64_t i = 0; i < got; i++) {
        if (vals[i] > INT32_MAX || vals[i] < -(int64_t)INT32_MAX) {
            bad(c, d, "%s '%s' value %" PRId64 " is out of range (must fit in int32)", what, nm(t), vals[i]);
            return -1;
        }
    }
    return got;
}

static void rule_pad(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    need_one(c, d, 2, "pad_const");
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int64_t pads[MAX_SHAPE_VALS];
    int64_t n = shape_input(c, d, 1, "padding", 2 * (int64_t)in->rank, pads);
    if (ranked(out) && out->rank != in->rank) {
        char x[96], y[96];
        bad(c, d, "output '%s' %s has a different rank than input '%s' %s", nm(out), shp(x, sizeof x, out),
            nm(in), shp(y, sizeof y, in));
        return;
    }
    if (n < 0) return;
    for (int64_t i = 0; i < n; i++) {
        if (pads[i] < 0) {
            char b[256];
            fmt_vals(b, sizeof b, pads, (uint32_t)n);
            bad(c, d, "padding %s must not be negative", b);
            return;
        }
    }
    if (!ranked(out)) return;
    for (uint32_t i = 0; i < in->rank; i++) {
        if (!known(in->shape[i]) || !known(out->shape[i])) continue;
        int64_t want = pads[2 * i] + in->shape[i] + pads[2 * i + 1];
        if (out->shape[i] != want) {
            bad(c, d,
                "output dimension %u is %" PRId32 ", expected %" PRId64 " (input %" PRId32
                " + padding %" PRId64 "+%" PRId64 ")",
                i, out->shape[i], want, in->shape[i], pads[2 * i], pads[2 * i + 1]);
            return;
        }
    }
}

static void rule_reshape(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    if (!ranked(in) || !ranked(out)) return;
    int64_t vals[MAX_SHAPE_VALS];
    int64_t n = shape_input(c, d, 1, "shape", out->rank, vals);
    if (n >= 0) {
        for (int64_t i = 0; i < n; i++) {
            if (vals[i] != out->shape[i]) {
                char x[256], y[96];
                fmt_vals(x, sizeof x, vals, (uint32_t)n);
                bad(c, d, "shape input %s differs from output '%s' shape %s", x, nm(out),
                    shp(y, sizeof y, out));
                break;
            }
        }
    }
    int64_t a = elements(in), b = elements(out);
    if (a >= 0 && b >= 0 && a != b) {
        char x[96], y[96];
        bad(c, d, "element count changes: input '%s' %s has %" PRId64 ", output '%s' %s has %" PRId64, nm(in),
            shp(x, sizeof x, in), a, nm(out), shp(y, sizeof y, out), b);
    }
}

static void rule_reverse(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0);
    same_shape(c, d, in, OUT(c, 0));
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    axis_ok(c, d, c->op->attr.axis, in->rank, in);
}

static void rule_slice(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int64_t start[MAX_SHAPE_VALS], size[MAX_SHAPE_VALS];
    int64_t ns = shape_input(c, d, 1, "start", in->rank, start);
    int64_t nz = shape_input(c, d, 2, "size", in->rank, size);
    if (ranked(out) && out->rank != in->rank) {
        char x[96], y[96];
        bad(c, d, "output '%s' %s has a different rank than input '%s' %s", nm(out), shp(x, sizeof x, out),
            nm(in), shp(y, sizeof y, in));
        return;
    }
    for (uint32_t i = 0; i < in->rank; i++) {
        if (ns >= 0 && start[i] < 0) {
            bad(c, d, "start[%u] = %" PRId64 " is negative", i, start[i]);
            return;
        }
        if (nz >= 0 && size[i] <= 0) {
            bad(c, d, "size[%u] = %" PRId64 " must be positive", i, size[i]);
            return;
        }
        if (ns >= 0 && nz >= 0 && known(in->shape[i]) && start[i] + size[i] > in->shape[i]) {
            bad(c, d, "start[%u] %" PRId64 " + size[%u] %" PRId64 " exceeds input dimension %" PRId32, i,
                start[i], i, size[i], in->shape[i]);
            return;
        }
        if (nz >= 0 && ranked(out) && known(out->shape[i]) && out->shape[i] != size[i]) {
            char x[96];
            bad(c, d, "output '%s' %s: dimension %u should equal size[%u] = %" PRId64, nm(out),
                shp(x, sizeof x, out), i, i, size[i]);
            return;
        }
    }
}

static void rule_tile(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    int64_t m[MAX_SHAPE_VALS];
    int64_t n = shape_input(c, d, 1, "multiples", in->rank, m);
    if (!ranked(out)) return;
    if (out->rank != in->rank) {
        char x[96], y[96];
        bad(c, d, "output '%s' %s has a different rank than input '%s' %s", nm(out), shp(x, sizeof x, out),
            nm(in), shp(y, sizeof y, in));
        return;
    }
    if (n < 0) return;
    for (uint32_t i = 0; i < in->rank; i++) {
        if (m[i] < 1) {
            bad(c, d, "multiples[%u] = %" PRId64 " must be >= 1", i, m[i]);
            return;
        }
        if (known(in->shape[i]) && known(out->shape[i]) && (int64_t)in->shape[i] * m[i] != out->shape[i]) {
            bad(c, d,
                "output dimension %u is %" PRId32 ", expected %" PRId64 " (input %" PRId32
                " x multiples %" PRId64 ")",
                i, out->shape[i], (int64_t)in->shape[i] * m[i], in->shape[i], m[i]);
            return;
        }
    }
}

static void rule_transpose(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    ctosa_i32s p = c->op->attr.perms;
    if (!ranked(in)) return;
    if (in->rank < 1) return; /* rank bounds: spec_check_op_rules() */
    if (!need_vec(c, d, p, "perms", in->rank)) return;
    uint8_t seen[MAX_SHAPE_VALS] = {0};
    for (uint32_t i = 0; i < p.n; i++) {
        if (p.v[i] < 0 || (uint32_t)p.v[i] >= in->rank || p.v[i] >= MAX_SHAPE_VALS || seen[p.v[i]]) {
            char b[128];
            fmt_i32s(b, sizeof b, p);
            bad(c, d, "perms %s is not a permutation of 0..%u", b, in->rank - 1);
            return;
        }
        seen[p.v[i]] = 1;
    }
    if (!ranked(out)) return;
    bool ok = out->rank == in->rank;
    for (uint32_t i = 0; ok && i < in->rank; i++)
        if (known(out->shape[i]) && known(in->shape[p.v[i]]) && out->shape[i] != in->shape[p.v[i]])
            ok = false;
    if (!ok) {
        char x[96], y[96], b[128];
        fmt_i32s(b, sizeof b, p);
        bad(c, d, "output '%s' %s does not follow from input %s and perms %s", nm(out), shp(x, sizeof x, out),
            shp(y, sizeof y, in), b);
    }
}

static void rule_gather(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *v = IN(c, 0), *ix = IN(c, 1), *out = OUT(c, 0);
    bool rv = need_rank(c, d, v, "values", 3), ri = need_rank(c, d, ix, "indices", 2);
    bool ro = need_rank(c, d, out, "output", 3);
    if (rv && ri && v->shape[0] != ix->shape[0])
        bad(c, d, "indices '%s' batch %" PRId32 " differs from values batch %" PRId32, nm(ix), ix->shape[0],
            v->shape[0]);
    if (rv && ri && ro) {
        int32_t want[3] = {v->shape[0], ix->shape[1], v->shape[2]};
        if (out->shape[0] != want[0] || out->shape[1] != want[1] || out->shape[2] != want[2]) {
            char x[96];
            bad(c, d,
                "output '%s' %s should be [%" PRId32 ",%" PRId32 ",%" PRId32
                "] ([N,K,C] by [N,W] -> [N,W,C])",
                nm(out), shp(x, sizeof x, out), want[0], want[1], want[2]);
        }
    }
}

static void rule_scatter(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *v = IN(c, 0), *ix = IN(c, 1), *in = IN(c, 2), *out = OUT(c, 0);
    bool rv = need_rank(c, d, v, "values_in", 3), ri = need_rank(c, d, ix, "indices", 2);
    bool rin = need_rank(c, d, in, "input", 3), ro = need_rank(c, d, out, "values_out", 3);
    if (rv && ro) same_shape(c, d, v, out);
    if (rv && ri && rin) {
        if (ix->shape[0] != v->shape[0] || in->shape[0] != v->shape[0] || in->shape[1] != ix->shape[1] ||
            in->shape[2] != v->shape[2]) {
            char x[96], y[96], z[96];
            bad(c, d, "shapes do not fit values_in [N,K,C] %s, indices [N,W] %s, input [N,W,C] %s",
                shp(x, sizeof x, v), shp(y, sizeof y, ix), shp(z, sizeof z, in));
        }
    }
}

static void rule_resize(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0), *out = OUT(c, 0);
    int64_t sc[MAX_SHAPE_VALS], off[MAX_SHAPE_VALS], bo[MAX_SHAPE_VALS];
    int64_t ns = shape_input(c, d, 1, "scale", 4, sc);
    int64_t no = shape_input(c, d, 2, "offset", 2, off);
    int64_t nb = shape_input(c, d, 3, "border", 2, bo);
    bool ri = need_rank(c, d, in, "input", 4), ro = need_rank(c, d, out, "output", 4);
    bool vals = ns == 4 && no == 2 && nb == 2;
    if (ns == 4) {
        if (sc[0] <= 0 || sc[1] <= 0 || sc[2] <= 0 || sc[3] <= 0) {
            bad(c, d, "scale values [%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "] must be positive",
                sc[0], sc[1], sc[2], sc[3]);
            return;
        }
        if (sc[0] > (1 << 11) || sc[2] > (1 << 11)) {
            bad(c, d, "scale numerators %" PRId64 ", %" PRId64 " must be <= 2048", sc[0], sc[2]);
            vals = false;
        }
        if (sc[1] >= 16 * sc[0] || sc[3] >= 16 * sc[2]) {
            bad(c, d,
                "scale [%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                "] downscales by 16 or more (scale_d must be < 16 * scale_n)",
                sc[0], sc[1], sc[2], sc[3]);
            vals = false;
        }
    }
    if (ns == 4 && no == 2) {
        for (int i = 0; i < 2; i++) {
            int64_t n = sc[2 * i];
            if (off[i] < -n || off[i] >= 16 * n) {
                bad(c, d, "offset_%c %" PRId64 " is outside [-%" PRId64 ", %" PRId64 ")", i ? 'x' : 'y',
                    off[i], n, 16 * n);
                vals = false;
            }
        }
    }
    if (ns == 4 && nb == 2) {
        for (int i = 0; i < 2; i++) {
            int64_t n = sc[2 * i];
            if (bo[i] < -16 * n || bo[i] >= n) {
                bad(c, d, "border_%c %" PRId64 " is outside [-%" PRId64 ", %" PRId64 ")", i ? 'x' : 'y',
                    bo[i], 16 * n, n);
                vals = false;
            }
        }
    }
    if (!ri || !ro) return;
    dim_is(c, d, "output batch", out->shape[0], in->shape[0], "the input batch");
    dim_is(c, d, "output channels", out->shape[3], in->shape[3], "the input channels");
    int64_t mx = in->shape[1];
    if (in->shape[2] > mx) mx = in->shape[2];
    if (out->shape[1] > mx) mx = out->shape[1];
    if (out->shape[2] > mx) mx = out->shape[2];
    if (mx >= 16384) bad(c, d, "image dimensions must be < 16384 (largest is %" PRId64 ")", mx);
    if (!vals) return;
    static const char *dims[2] = {"height", "width"};
    for (int i = 0; i < 2; i++) {
        int64_t num = ((int64_t)in->shape[1 + i] - 1) * sc[2 * i] - off[i] + bo[i];
        int64_t den = sc[2 * i + 1];
        if (num < 0 || num % den) {
            bad(c, d,
                "output %s is not exact: (input %" PRId32 " - 1) * %" PRId64 " - offset %" PRId64
                " + border %" PRId64 " = %" PRId64 " is not a non-negative multiple of %" PRId64,
                dims[i], in->shape[1 + i], sc[2 * i], off[i], bo[i], num, den);
        } else if (out->shape[1 + i] != num / den + 1) {
            bad(c, d,
                "output %s %" PRId32 " does not follow from input %" PRId32 ", scale %" PRId64 "/%" PRId64
                ", offset %" PRId64 ", border %" PRId64 " (expected %" PRId64 ")",
                dims[i], out->shape[1 + i], in->shape[1 + i], sc[2 * i], den, off[i], bo[i], num / den + 1);
        }
    }
}

/* CONST / CONST_SHAPE: the output carries data of the right size. */
static void rule_const(const spec_op_ctx *c, diag_list *d, bool is_shape) {
    const ctosa_tensor *o = OUT(c, 0);
    if (!o) return;
    if (o->data.kind == CTOSA_DATA_NONE) {
        if (!is_shape || (o->shape && o->shape[0] != 0)) bad(c, d, "output '%s' has no constant data", nm(o));
        return;
    }
    if (!ranked(o)) return;
    uint64_t n, bytes;
    if (is_shape) {
        int64_t len = shape_len(o);
        if (len >= 0 && o->data.size != (uint64_t)len * 8)
            bad(c, d, "shape '%s' has %" PRIu64 " bytes of data, %" PRId64 " values need %" PRId64, nm(o),
                o->data.size, len, len * 8);
        return;
    }
    if (!ctosa_tensor_elements(o, &n) || !ctosa_dtype_storage_size(o->dtype, n, &bytes)) return;
    if (ctosa_dtype_bits(o->dtype) <= 0) return;
    if (o->data.size != bytes) {
        char x[96];
        bad(c, d, "constant '%s' has %" PRIu64 " bytes of data, but %s of %s needs %" PRIu64, nm(o),
            o->data.size, shp(x, sizeof x, o), ctosa_dtype_short(o->dtype), bytes);
    }
}

static void rule_cond_if(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *cond = IN(c, 0);
    int64_t n = elements(cond);
    if (n >= 0 && n != 1) {
        char x[96];
        bad(c, d, "condition '%s' %s must hold exactly one element", nm(cond), shp(x, sizeof x, cond));
    }
}

static void rule_while(const spec_op_ctx *c, diag_list *d) {
    if (c->op->n_inputs != c->op->n_outputs) {
        bad(c, d, "input_list has %u tensors but output_list has %u (they must match)", c->op->n_inputs,
            c->op->n_outputs);
        return;
    }
    for (uint32_t i = 0; i < c->op->n_inputs; i++) same_shape(c, d, IN(c, i), OUT(c, i));
}

/* ------------------------------------------------------- 1.1 shape ops */

static void rule_shape_binary(const spec_op_ctx *c, diag_list *d) {
    int64_t a = shape_len(IN(c, 0)), b = shape_len(IN(c, 1)), o = shape_len(OUT(c, 0));
    if (a >= 0 && b >= 0 && a != b)
        bad(c, d, "shape inputs have %" PRId64 " and %" PRId64 " values (must be equal)", a, b);
    else if (a >= 0 && o >= 0 && a != o)
        bad(c, d, "output shape has %" PRId64 " values, inputs have %" PRId64, o, a);
}

static void rule_shape_unary(const spec_op_ctx *c, diag_list *d) {
    int64_t a = shape_len(IN(c, 0)), o = shape_len(OUT(c, 0));
    if (a >= 0 && o >= 0 && a != o)
        bad(c, d, "output shape has %" PRId64 " values, input has %" PRId64, o, a);
}

static void rule_concat_shape(const spec_op_ctx *c, diag_list *d) {
    int64_t sum = 0;
    for (uint32_t i = 0; i < c->op->n_inputs; i++) {
        int64_t l = shape_len(IN(c, i));
        if (l < 0) return;
        sum += l;
    }
    int64_t o = shape_len(OUT(c, 0));
    if (o >= 0 && o != sum)
        bad(c, d, "output shape has %" PRId64 " values, the inputs have %" PRId64 " together", o, sum);
}

static void rule_dim(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *in = IN(c, 0);
    int64_t o = shape_len(OUT(c, 0));
    if (o >= 0 && o != 1) bad(c, d, "output shape has %" PRId64 " values, expected 1", o);
    if (ranked(in)) axis_ok(c, d, c->op->attr.axis, in->rank, in);
}

/* SLICE_SHAPE: input shape, start [1] and size [1] (i32 constants). */
static void rule_slice_shape(const spec_op_ctx *c, diag_list *d) {
    int64_t len = shape_len(IN(c, 0)), out = shape_len(OUT(c, 0));
    int64_t st[MAX_SHAPE_VALS], sz[MAX_SHAPE_VALS];
    int64_t ns = shape_vals(IN(c, 1), st, MAX_SHAPE_VALS);
    int64_t nz = shape_vals(IN(c, 2), sz, MAX_SHAPE_VALS);
    if (nz >= 1 && sz[0] <= 0) {
        bad(c, d, "size %" PRId64 " must be positive", sz[0]);
        return;
    }
    if (ns >= 1 && st[0] < 0) {
        bad(c, d, "start %" PRId64 " is negative", st[0]);
        return;
    }
    if (ns >= 1 && nz >= 1 && len >= 0 && st[0] + sz[0] > len) {
        bad(c, d, "start %" PRId64 " + size %" PRId64 " exceeds the input's %" PRId64 " values", st[0], sz[0],
            len);
        return;
    }
    if (nz >= 1 && out >= 0 && out != sz[0])
        bad(c, d, "output shape has %" PRId64 " values, size is %" PRId64, out, sz[0]);
}

/* ASSERT_EQUAL_SHAPE with constant operands: the assertion fails at
 * compile time. */
static void rule_assert_equal_shape(const spec_op_ctx *c, diag_list *d) {
    const ctosa_tensor *a = IN(c, 0), *b = IN(c, 1);
    int64_t la = shape_len(a), lb = shape_len(b);
    if (la >= 0 && lb >= 0 && la != lb) {
        bad(c, d, "shapes '%s' and '%s' have %" PRId64 " and %" PRId64 " values", nm(a), nm(b), la, lb);
        return;
    }
    int64_t va[MAX_SHAPE_VALS], vb[MAX_SHAPE_VALS];
    int64_t na = shape_vals(a, va, MAX_SHAPE_VALS), nb = shape_vals(b, vb, MAX_SHAPE_VALS);
    if (na < 0 || nb < 0 || na != nb) return;
    for (int64_t i = 0; i < na; i++) {
        bool ok = c->op->attr.allow_broadcast ? (va[i] == 1 || vb[i] == 1 || va[i] == vb[i]) : va[i] == vb[i];
        if (!ok) {
            char x[256], y[256];
            fmt_vals(x, sizeof x, va, (uint32_t)na);
            fmt_vals(y, sizeof y, vb, (uint32_t)nb);
            bad(c, d, "constant shapes %s and %s differ at index %" PRId64 "%s: the assertion always fails",
                x, y, i, c->op->attr.allow_broadcast ? " (even with broadcasting)" : "");
            return;
        }
    }
}

/* ------------------------------------------- values of constant arguments */
/* ERROR_IFs on compile-time-constant values (zero points, MUL shift, CLAMP
 * bounds, RESCALE flags): checked when the value is known here. */

/* Element i of a constant tensor as a double; false when not known. */
static bool const_value(const ctosa_tensor *t, uint64_t i, double *out) {
    if (!t || t->data.kind != CTOSA_DATA_MEMORY || !t->data.ptr) return false;
    const uint8_t *p = t->data.ptr;
    uint64_t size = t->data.size;
    switch (t->dtype) {
    case CTOSA_DTYPE_BOOL:
    case CTOSA_DTYPE_INT8:
        if (i >= size) return false;
        *out = t->dtype == CTOSA_DTYPE_BOOL ? p[i] : (int8_t)p[i];
        return true;
    case CTOSA_DTYPE_INT16:
    case CTOSA_DTYPE_FP16:
    case CTOSA_DTYPE_BF16: {
        if (i >= size / 2) return false;
        uint16_t u = rd_u16(p + 2 * i);
        if (t->dtype == CTOSA_DTYPE_INT16) *out = (int16_t)u;
        else if (t->dtype == CTOSA_DTYPE_FP16) *out = ff_fp16_to_f32(u);
        else {
            uint32_t w = (uint32_t)u << 16;
            float f;
            memcpy(&f, &w, 4);
            *out = f;
        }
        return true;
    }
    case CTOSA_DTYPE_INT32:
    case CTOSA_DTYPE_FP32: {
        if (i >= size / 4) return false;
        uint32_t w = rd_u32(p + 4 * i);
        if (t->dtype == CTOSA_DTYPE_INT32) *out = (int32_t)w;
        else {
            float f;
            memcpy(&f, &w, 4);
            *out = f;
        }
        return true;
    }
    case CTOSA_DTYPE_INT48: {
        if (i >= size / 6) return false;
        uint64_t v = 0;
        for (int k = 5; k >= 0; k--) v = (v << 8) | p[6 * i + (uint64_t)k];
        if (v & (1ull << 47)) v |= ~0ull << 48;
        *out = (double)(int64_t)v;
        return true;
    }
    default: return false;
    }
}

/* "Zero point only allowed for i8": a zero point of another type is 0. */
static void zp_zero(const spec_op_ctx *c, diag_list *d, uint32_t idx, const char *what,
                    ctosa_dtype data_type) {
    const ctosa_tensor *zp = IN(c, idx);
    double v;
    if (!zp || data_type == CTOSA_DTYPE_INT8 || data_type == CTOSA_DTYPE_UNKNOWN) return;
    if (const_value(zp, 0, &v) && v != 0)
        bad(c, d, "%s '%s' is %g but must be 0 for %s data (zero points are only for i8)", what, nm(zp), v,
            ctosa_dtype_short(data_type) ? ctosa_dtype_short(data_type) : "?");
}

static ctosa_dtype dt(const ctosa_tensor *t) { return t ? t->dtype : CTOSA_DTYPE_UNKNOWN; }

static void values_conv(const spec_op_ctx *c, diag_list *d) {
    zp_zero(c, d, 3, "input_zp", dt(IN(c, 0)));
    zp_zero(c, d, 4, "weight_zp", dt(IN(c, 1)));
}

static void values_mul(const spec_op_ctx *c, diag_list *d) {
    double v;
    if (!const_value(IN(c, 2), 0, &v)) return;
    if (dt(IN(c, 0)) == CTOSA_DTYPE_INT32) {
        if (v < 0 || v > 63) bad(c, d, "shift %g is outside 0..63", v);
    } else if (v != 0 && dt(IN(c, 0)) != CTOSA_DTYPE_UNKNOWN) {
        bad(c, d, "shift is %g but must be 0 for %s inputs (only i32 MUL shifts)", v,
            ctosa_dtype_short(dt(IN(c, 0))));
    }
}

static bool read_attr_value(ctosa_bytes b, ctosa_dtype t, double *out) {
    ctosa_tensor tmp = {.dtype = t};
    tmp.data.kind = CTOSA_DATA_MEMORY;
    tmp.data.ptr = b.p;
    tmp.data.size = b.n;
    return b.p && const_value(&tmp, 0, out);
}

static void values_clamp(const spec_op_ctx *c, diag_list *d) {
    ctosa_dtype t = dt(IN(c, 0));
    int bits = ctosa_dtype_bits(t);
    if (t == CTOSA_DTYPE_UNKNOWN || bits < 8) return;
    const ctosa_attr *a = &c->op->attr;
    uint32_t need = (uint32_t)bits / 8;
    if (a->min_val.n < need || a->max_val.n < need) {
        bad(c, d, "min_val/max_val have %u/%u bytes, %s needs %u", a->min_val.n, a->max_val.n,
            ctosa_dtype_short(t), need);
        return;
    }
    double lo, hi;
    if (!read_attr_value(a->min_val, t, &lo) || !read_attr_value(a->max_val, t, &hi)) return;
    if (lo != lo || hi != hi) bad(c, d, "min_val and max_val must not be NaN");
    else if (hi < lo) bad(c, d, "max_val %g is below min_val %g", hi, lo);
}

static void values_rescale(const spec_op_ctx *c, diag_list *d) {
    const ctosa_attr *a = &c->op->attr;
    ctosa_dtype in = dt(IN(c, 0)), out = dt(OUT(c, 0));
    if (in == CTOSA_DTYPE_UNKNOWN || out == CTOSA_DTYPE_UNKNOWN) return;
    double v;
    if (const_value(IN(c, 3), 0, &v)) {
        bool u16 = in == CTOSA_DTYPE_INT16 && a->input_unsigned;
        if (u16 && v != 0 && (uint16_t)(int32_t)v != 32768)
            bad(c, d, "input_zp %g of unsigned 16-bit input must be 0 or 32768", v);
        else if (!u16 && in != CTOSA_DTYPE_INT8 && v != 0)
            bad(c, d, "input_zp %g must be 0 for %s input", v, ctosa_dtype_short(in));
    }
    if (const_value(IN(c, 4), 0, &v)) {
        bool u16 = out == CTOSA_DTYPE_INT16 && a->output_unsigned;
        if (u16 && v != 0 && (uint16_t)(int32_t)v != 32768)
            bad(c, d, "output_zp %g of unsigned 16-bit output must be 0 or 32768", v);
        else if (!u16 && out != CTOSA_DTYPE_INT8 && v != 0)
            bad(c, d, "output_zp %g must be 0 for %s output", v, ctosa_dtype_short(out));
    }
    if (a->scale32 && in == CTOSA_DTYPE_INT48) bad(c, d, "scale32 is not allowed with i48 input");
    if (!a->scale32 && a->rounding_mode == CTOSA_ROUND_DOUBLE) bad(c, d, "DOUBLE_ROUND needs scale32");
    if (a->input_unsigned && a->output_unsigned)
        bad(c, d, "input_unsigned and output_unsigned cannot both be set");
    if (a->input_unsigned && (in == CTOSA_DTYPE_INT32 || in == CTOSA_DTYPE_INT48 || out == CTOSA_DTYPE_INT32))
        bad(c, d, "input_unsigned is not allowed with %s input and %s output", ctosa_dtype_short(in),
            ctosa_dtype_short(out));
    if (a->output_unsigned &&
        (out == CTOSA_DTYPE_INT32 || in == CTOSA_DTYPE_INT32 || in == CTOSA_DTYPE_INT48))
        bad(c, d, "output_unsigned is not allowed with %s input and %s output", ctosa_dtype_short(in),
            ctosa_dtype_short(out));
}

/* ---------------------------------------------------------------- arity */

/* Operand counts are reported by spec_check_op_rules(); the shape rules
 * only run when the counts fit the operator table (CTOSA_OP_LIST), so that
 * every operand index they use means what the spec says. */
static bool arity_fits(const spec_op_ctx *c) {
    return ctosa_op_counts_fit(c->op->kind, c->op->n_inputs, c->op->n_outputs, false);
}

/* ----------------------------------------------------------------- driver */

void spec_check_op_shapes(const spec_op_ctx *c, diag_list *d) {
    if (!c || !c->op || !arity_fits(c)) return;
    switch (c->op->kind) {
    case CTOSA_OP_ARGMAX: rule_argmax(c, d); break;
    case CTOSA_OP_AVG_POOL2D:
        rule_pool2d(c, d, true);
        zp_zero(c, d, 1, "input_zp", dt(IN(c, 0)));
        zp_zero(c, d, 2, "output_zp", dt(IN(c, 0)));
        break;
    case CTOSA_OP_MAX_POOL2D: rule_pool2d(c, d, false); break;
    case CTOSA_OP_CONV2D:
        rule_conv2d(c, d, false);
        values_conv(c, d);
        break;
    case CTOSA_OP_DEPTHWISE_CONV2D:
        rule_conv2d(c, d, true);
        values_conv(c, d);
        break;
    case CTOSA_OP_CONV3D:
        rule_conv3d(c, d);
        values_conv(c, d);
        break;
    case CTOSA_OP_TRANSPOSE_CONV2D:
        rule_transpose_conv2d(c, d);
        values_conv(c, d);
        break;
    case CTOSA_OP_FFT2D: rule_fft2d(c, d); break;
    case CTOSA_OP_RFFT2D: rule_rfft2d(c, d); break;
    case CTOSA_OP_MATMUL:
        rule_matmul(c, d);
        zp_zero(c, d, 2, "A_zp", dt(IN(c, 0)));
        zp_zero(c, d, 3, "B_zp", dt(IN(c, 1)));
        break;

    case CTOSA_OP_ADD:
    case CTOSA_OP_ARITHMETIC_RIGHT_SHIFT:
    case CTOSA_OP_BITWISE_AND:
    case CTOSA_OP_BITWISE_OR:
    case CTOSA_OP_BITWISE_XOR:
    case CTOSA_OP_INTDIV:
    case CTOSA_OP_LOGICAL_AND:
    case CTOSA_OP_LOGICAL_LEFT_SHIFT:
    case CTOSA_OP_LOGICAL_RIGHT_SHIFT:
    case CTOSA_OP_LOGICAL_OR:
    case CTOSA_OP_LOGICAL_XOR:
    case CTOSA_OP_MAXIMUM:
    case CTOSA_OP_MINIMUM:
    case CTOSA_OP_POW:
    case CTOSA_OP_SUB:
    case CTOSA_OP_EQUAL:
    case CTOSA_OP_GREATER:
    case CTOSA_OP_GREATER_EQUAL: rule_broadcast(c, d, 2); break;
    case CTOSA_OP_MUL:
        rule_broadcast(c, d, 2);
        need_one(c, d, 2, "shift");
        values_mul(c, d);
        break;
    case CTOSA_OP_SELECT: rule_broadcast(c, d, 3); break;

    case CTOSA_OP_CLAMP:
        same_shape(c, d, IN(c, 0), OUT(c, 0));
        values_clamp(c, d);
        break;
    case CTOSA_OP_ERF:
    case CTOSA_OP_SIGMOID:
    case CTOSA_OP_TANH:
    case CTOSA_OP_ABS:
    case CTOSA_OP_BITWISE_NOT:
    case CTOSA_OP_CEIL:
    case CTOSA_OP_CLZ:
    case CTOSA_OP_COS:
    case CTOSA_OP_EXP:
    case CTOSA_OP_FLOOR:
    case CTOSA_OP_LOG:
    case CTOSA_OP_LOGICAL_NOT:
    case CTOSA_OP_RECIPROCAL:
    case CTOSA_OP_RSQRT:
    case CTOSA_OP_SIN:
    case CTOSA_OP_CAST:
    case CTOSA_OP_IDENTITY: same_shape(c, d, IN(c, 0), OUT(c, 0)); break;
    case CTOSA_OP_NEGATE:
        same_shape(c, d, IN(c, 0), OUT(c, 0));
        need_one(c, d, 1, "input1_zp");
        need_one(c, d, 2, "output_zp");
        zp_zero(c, d, 1, "input1_zp", dt(IN(c, 0)));
        zp_zero(c, d, 2, "output_zp", dt(OUT(c, 0)));
        break;
    case CTOSA_OP_TABLE: rule_table(c, d); break;
    case CTOSA_OP_RESCALE:
        rule_rescale(c, d);
        values_rescale(c, d);
        break;

    case CTOSA_OP_REDUCE_ALL:
    case CTOSA_OP_REDUCE_ANY:
    case CTOSA_OP_REDUCE_MAX:
    case CTOSA_OP_REDUCE_MIN:
    case CTOSA_OP_REDUCE_PRODUCT:
    case CTOSA_OP_REDUCE_SUM: rule_reduce(c, d); break;
    case CTOSA_OP_CONCAT: rule_concat(c, d); break;
    case CTOSA_OP_PAD: rule_pad(c, d); break;
    case CTOSA_OP_RESHAPE: rule_reshape(c, d); break;
    case CTOSA_OP_REVERSE: rule_reverse(c, d); break;
    case CTOSA_OP_SLICE: rule_slice(c, d); break;
    case CTOSA_OP_TILE: rule_tile(c, d); break;
    case CTOSA_OP_TRANSPOSE: rule_transpose(c, d); break;
    case CTOSA_OP_GATHER: rule_gather(c, d); break;
    case CTOSA_OP_SCATTER: rule_scatter(c, d); break;
    case CTOSA_OP_RESIZE: rule_resize(c, d); break;
    case CTOSA_OP_CONST: rule_const(c, d, false); break;
    case CTOSA_OP_CONST_SHAPE: rule_const(c, d, true); break;
    case CTOSA_OP_COND_IF: rule_cond_if(c, d); break;
    case CTOSA_OP_WHILE_LOOP: rule_while(c, d); break;

    case CTOSA_OP_ADD_SHAPE:
    case CTOSA_OP_SUB_SHAPE:
    case CTOSA_OP_MUL_SHAPE:
    case CTOSA_OP_MAX_SHAPE:
    case CTOSA_OP_MIN_SHAPE:
    case CTOSA_OP_MOD_SHAPE:
    case CTOSA_OP_DIV_CEIL_SHAPE:
    case CTOSA_OP_DIV_FLOOR_SHAPE: rule_shape_binary(c, d); break;
    case CTOSA_OP_EXP2_SHAPE:
    case CTOSA_OP_LOG2_CEIL_SHAPE:
    case CTOSA_OP_LOG2_FLOOR_SHAPE: rule_shape_unary(c, d); break;
    case CTOSA_OP_CONCAT_SHAPE: rule_concat_shape(c, d); break;
    case CTOSA_OP_DIM: rule_dim(c, d); break;
    case CTOSA_OP_SLICE_SHAPE: rule_slice_shape(c, d); break;
    case CTOSA_OP_ASSERT_EQUAL_SHAPE: rule_assert_equal_shape(c, d); break;
    /* no shape rule (yet): CUSTOM, VARIABLE* (checked in validate.c), 1.1
     * block-scaled and adaptive-pooling operators */
    case CTOSA_OP_CUSTOM:
    case CTOSA_OP_VARIABLE:
    case CTOSA_OP_VARIABLE_READ:
    case CTOSA_OP_VARIABLE_WRITE:
    case CTOSA_OP_MATMUL_T_BLOCK_SCALED:
    case CTOSA_OP_CAST_FROM_BLOCK_SCALED:
    case CTOSA_OP_CAST_TO_BLOCK_SCALED:
    case CTOSA_OP_CONV2D_BLOCK_SCALED:
    case CTOSA_OP_MAX_POOL2D_ADAPTIVE:
    case CTOSA_OP_AVG_POOL2D_ADAPTIVE:
    case CTOSA_OP_UNKNOWN:
    case CTOSA_OP_COUNT: break;
    }
}
