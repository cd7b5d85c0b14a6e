/* qdq_mean.c - quantized means (GlobalAveragePool, ReduceMean) rounded the
 * way the QDQ definition rounds.
 *
 * The QDQ form of a quantized mean is DequantizeLinear, a float mean and
 * QuantizeLinear, which rounds half to even. A single RESCALE of the
 * integer sum S by s_x / (N s_y) rounds half up, and its 31-bit multiplier
 * only approximates 1/N when N is not a power of two, so an exact tie
 * (mean 20.5 of a 28x28 map: S = 16072) can land on either side.
 *
 * When the scale ratio s_x / s_y times a small power of two 2^j is an
 * integer P (torch's FX quantization gives a mean the scale of its input:
 * P = 1), the output is exactly round_half_even(S P / (N 2^j)) + z_y, and
 * integer TOSA computes it exactly: q = INTDIV(S P, D) (truncating),
 * R = S P - q D, then q moves one step away from zero when 2|R| > D, or
 * when 2|R| = D and q is odd. Other ratios, and targets without INTDIV
 * (Ethos-U55), keep the single RESCALE (docs/quantization.md). */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/qdq_island.h"

/* P and j with ratio = P / 2^j exactly, P < 2^15, j <= 20; false if none. */
static bool small_dyadic(double ratio, int64_t *P, int *j) {
    for (int k = 0; k <= 20; k++) {
        double v = ldexp(ratio, k);
        if (v >= 32768.0) return false;
        if (v >= 1.0 && v == floor(v)) {
            *P = (int64_t)v;
            *j = k;
            return true;
        }
    }
    return false;
}

static const char *i32c(lower_ctx *c, uint32_t rank, double v) {
    return lw_scalar(c, CTOSA_DTYPE_INT32, rank, v);
}

const char *qdq_mean_exact(lower_ctx *c, const char *S, uint32_t rank, const int64_t *shape, int64_t n,
                           int64_t smax, double ratio, ctosa_dtype to, int64_t ozp) {
    int64_t P;
    int j;
    if (!S || lw_spec(c)->u55 || !small_dyadic(ratio, &P, &j)) return NULL;
    int64_t D = n << j;
    if (D <= 0 || D > INT32_MAX / 2 || smax > INT32_MAX / P) return NULL;
    ctosa_dtype i32 = CTOSA_DTYPE_INT32;
    const char *num = P == 1 ? S : lw_mul(c, S, i32c(c, rank, (double)P), i32, rank, shape);
    const char *Dc = i32c(c, rank, (double)D);
    const char *q = lw_binary(c, CTOSA_OP_INTDIV, num, Dc, i32, rank, shape);
    const char *R = lw_sub(c, num, lw_mul(c, q, Dc, i32, rank, shape), i32, rank, shape);
    const char *R2 = R ? lw_unary(c, CTOSA_OP_ABS, R, i32, rank, shape, NULL) : NULL;
    R2 = lw_add(c, R2, R2, i32, rank, shape);
    const char *gt = lw_binary(c, CTOSA_OP_GREATER, R2, Dc, CTOSA_DTYPE_BOOL, rank, shape);
    const char *eq = lw_binary(c, CTOSA_OP_EQUAL, R2, Dc, CTOSA_DTYPE_BOOL, rank, shape);
    const char *odd = lw_binary(c, CTOSA_OP_BITWISE_AND, q, i32c(c, rank, 1), i32, rank, shape);
    const char *oddb = lw_binary(c, CTOSA_OP_EQUAL, odd, i32c(c, rank, 1), CTOSA_DTYPE_BOOL, rank, shape);
    const char *tie = lw_binary(c, CTOSA_OP_LOGICAL_AND, eq, oddb, CTOSA_DTYPE_BOOL, rank, shape);
    const char *up = lw_binary(c, CTOSA_OP_LOGICAL_OR, gt, tie, CTOSA_DTYPE_BOOL, rank, shape);
    /* away from zero: the sign of the numerator (R has it, or is 0) */
    const char *neg = lw_binary(c, CTOSA_OP_GREATER, i32c(c, rank, 0), num, CTOSA_DTYPE_BOOL, rank, shape);
    const char *stp = NULL;
    if (neg) {
        const char *out = lw_tensor(c, i32, rank, shape);
        const char *in[3] = {neg, i32c(c, rank, -1), i32c(c, rank, 1)};
        stp = out && lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &out, NULL) ? out : NULL;
    }
    const char *moved = lw_add(c, q, stp, i32, rank, shape);
    const char *y = NULL;
    if (up && moved && q) {
        const char *out = lw_tensor(c, i32, rank, shape);
        const char *in[3] = {up, moved, q};
        y = out && lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &out, NULL) ? out : NULL;
    }
    double one = 1.0;
    return qdq_rescale_n(c, y, i32, to, rank, shape, 1, &one, 0, ozp, false, false);
}

/* ReduceMean of a quantized input: REDUCE_SUM in int32 over the reduced
 * axes (x - z_x exact), then the exact mean above or one RESCALE. */
lower_status qdq_reducemean(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    qx_in a;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    const int64_t *axes = NULL;
    int64_t na;
    if (lw_opset(c) >= 18) {
        if (lw_attr_int(c, "noop_with_empty_axes", 0))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ReduceMean: noop_with_empty_axes");
        na = lw_has_input(c, 1) ? lw_const_i64(c, 1, &axes) : 0;
        if (lw_has_input(c, 1) && na < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->inputs[1],
                             "quantized ReduceMean: axes must be constant");
    } else {
        na = lw_attr_ints(c, "axes", &axes);
    }
    uint32_t mask = 0;
    if (na <= 0) mask = (1u << a.rank) - 1;
    for (int64_t k = 0; k < na; k++) {
        int64_t ax = axes[k] < 0 ? axes[k] + a.rank : axes[k];
        if (ax < 0 || ax >= (int64_t)a.rank)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ReduceMean: axis %lld",
                             (long long)axes[k]);
        mask |= 1u << ax;
    }
    bool keep = lw_attr_int(c, "keepdims", 1) != 0;
    int64_t ks[LOWER_MAX_RANK], os[LOWER_MAX_RANK], n = 1;
    uint32_t orank = 0;
    for (uint32_t i = 0; i < a.rank; i++) {
        ks[i] = mask >> i & 1 ? 1 : a.shape[i];
        if (mask >> i & 1) n *= a.shape[i];
        if (keep || !(mask >> i & 1)) os[orank++] = ks[i];
    }
    qx_out o;
    if (!qdq_out(c, orank, &o)) return LOWER_REJECT;
    double one = 1.0;
    const char *x =
        qdq_rescale_n(c, a.x, a.t, CTOSA_DTYPE_INT32, a.rank, a.shape, 1, &one, a.zp, 0, false, false);
    int64_t sh[LOWER_MAX_RANK];
    x = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, x, CTOSA_DTYPE_INT32, a.rank, a.shape, mask, false, sh);
    int64_t smax = n * (a.t == CTOSA_DTYPE_INT16 ? 65535 : 255);
    const char *y = qdq_mean_exact(c, x, a.rank, ks, n, smax, a.s / o.s, o.t, o.zp);
    if (!y && !c->rejected) {
        double r = a.s / ((double)n * o.s);
        y = qdq_rescale_n(c, x, CTOSA_DTYPE_INT32, o.t, a.rank, ks, 1, &r, 0, o.zp, false, false);
    }
    if (!y) return c->rejected ? LOWER_REJECT : lw_failed(c);
    if (!keep) y = lw_reshape(c, y, o.t, orank, os);
    if (!y) return lw_failed(c);
    return qdq_finish(c, y, &o, orank, os);
}
