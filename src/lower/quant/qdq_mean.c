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
 * P = 1), the output is exactly round_half_even(S P / D) + z_y with
 * D = N 2^j, and integer TOSA computes it with INTDIV, MUL, ADD and SUB
 * alone - no comparison, SELECT, bitwise or boolean operator, so the
 * Ethos-U55 subset (which has INTDIV but none of those) takes it too:
 *   v = S P + K D + floor(D / 2), K even with K D >= max |S P| (v >= 0);
 *   q = INTDIV(v, D)                      round half up of S P / D + K;
 *   D even: r = v - q D, t = INTDIV(D - r, D) is 1 exactly at a tie
 *   (r = 0), where an odd q moves down: q -= t (q - 2 INTDIV(q, 2));
 *   (D odd: S P / D is never half way between two integers);
 *   y = q - K (K even keeps the parity that decided the tie).
 * Other ratios keep the single RESCALE (docs/quantization.md, "Means"). */
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
    if (!S || n <= 0 || n > INT32_MAX || !small_dyadic(ratio, &P, &j)) return NULL;
    int64_t D = n << j, numax = smax * P;
    int64_t K = 2 * ((numax + 2 * D - 1) / (2 * D)); /* even, K D >= numax */
    /* v <= numax + K D + D / 2 <= 2 numax + 3 D must stay inside int32 */
    if (D > INT32_MAX / 8 || smax > INT32_MAX / P || 2 * numax + 3 * D > INT32_MAX) return NULL;
    ctosa_dtype i32 = CTOSA_DTYPE_INT32;
    const char *num = P == 1 ? S : lw_mul(c, S, i32c(c, rank, (double)P), i32, rank, shape);
    const char *v = lw_add(c, num, i32c(c, rank, (double)(K * D + D / 2)), i32, rank, shape);
    const char *Dc = i32c(c, rank, (double)D);
    const char *q = lw_binary(c, CTOSA_OP_INTDIV, v, Dc, i32, rank, shape);
    if (D % 2 == 0) {
        const char *r = lw_sub(c, v, lw_mul(c, q, Dc, i32, rank, shape), i32, rank, shape);
        const char *t =
            lw_binary(c, CTOSA_OP_INTDIV, lw_sub(c, Dc, r, i32, rank, shape), Dc, i32, rank, shape);
        const char *h = lw_binary(c, CTOSA_OP_INTDIV, q, i32c(c, rank, 2), i32, rank, shape);
        const char *odd = lw_sub(c, q, lw_add(c, h, h, i32, rank, shape), i32, rank, shape);
        q = lw_sub(c, q, lw_mul(c, t, odd, i32, rank, shape), i32, rank, shape);
    }
    const char *y = lw_sub(c, q, i32c(c, rank, (double)K), i32, rank, shape);
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
