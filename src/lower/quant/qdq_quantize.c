/* qdq_quantize.c - QuantizeLinear of a float tensor, bit-exact.
 *
 * ONNX defines y = saturate(round(x / s) + zp) with the division done in
 * float32 and round half to even; ONNX Runtime computes exactly that
 * (a float32 divide, a clamp to [lo - zp, hi - zp], a round to nearest
 * even). TOSA has no float divide, and x * fl(1/s) rounds differently from
 * fl(x / s) for some x: where fl(x / s) lands on one side of a half-integer
 * and x * fl(1/s) on the other, the quantized value differs by one step.
 * That happens on the input of every quantized network, so it is worth
 * exactness.
 *
 * Notation: q = x / s (real), fl() float32 round to nearest even, N the
 * wanted integer rne(fl(q)). All operations below are float32 TOSA ops,
 * each correctly rounded (TOSA fp32 ADD / SUB / MUL / FLOOR / ABS).
 *
 *  1. y = fl(x * r), r = fl(1/s). |y - q| < 2 ulp(q), so with F = floor(y)
 *     (y clamped to the output range first, which also keeps F small) N is
 *     F or F + 1; only the half-integer H = F + 1/2 between them matters:
 *     N = F + 1 when fl(q) > H, F when fl(q) < H, rne(H) when fl(q) == H.
 *  2. fl(q) == H exactly when |q - H| < ulp(H)/2. H is inside a binade
 *     (a half-integer other than +-1/2 is no power of two) and q is never
 *     exactly a midpoint between two floats: that would take x = s * m
 *     with m of 25 significant bits, a product of at least 25 bits unless
 *     s is a power of two (then q itself is a float). For H = +-1/2 the
 *     rounding interval is narrower towards zero, but there both answers
 *     are 0, so the symmetric test is harmless.
 *  3. R = x - H*s decides both: its sign is the side of q, and
 *     fl(q) == H iff |R| < T = s * ulp(H) / 2.
 *     H*s = P + p exactly by Dekker's product (H split by Veltkamp at
 *     runtime, s split into 12-bit halves here; four exact partial
 *     products). When |q - H| <= ulp(H): x - P is exact (Sterbenz: P is
 *     within a factor 2 of x), and R is a multiple of
 *     min(ulp(x), ulp(s)/2) (2H is an integer) at most 2^(e_H + 2) <= 2^19
 *     of them, so R is a float and fl((x - P) - p) == R exactly. When
 *     |q - H| > ulp(H), |R| > 2T and the computed value keeps the sign and
 *     stays above T (Sterbenz still holds, or |x - P| > |P|/2 dwarfs p).
 *  4. ulp(H) = ufp(H) * 2^-23 with ufp (the unit in the first place, the
 *     power of two of the leading bit) from float32 operations after Rump:
 *     u = fl(H * (2^25 + 1)), U = |fl(u - fl(u * (1 - 2^-24)))| is
 *     4 * ufp(H), or 2 * ufp(H) when H is a power of two (checked on every
 *     float32 of magnitude in [2^-63, 2^63)). Among half-integers only
 *     +-1/2 are powers of two, where U * s * 2^-26 is half the threshold
 *     s * 2^-25; so T = max(U * (s * 2^-26), s * 2^-25), a float exactly.
 * The argument needs no underflow or overflow in the products: scales
 * within [2^-60, 2^60] and |H| < 2^17 (8- and 16-bit outputs). Other scales
 * keep the plain product x * fl(1/s). */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/qdq_quantize.h"

/* A per-channel float32 constant of shape cs (rank r). */
static lw_v chan_const(lower_ctx *c, ctosa_dtype t, uint32_t r, const int64_t *cs, const double *v) {
    lw_v o;
    memset(&o, 0, sizeof o);
    o.t = t;
    o.r = r;
    for (uint32_t i = 0; i < r; i++) o.s[i] = cs[i];
    o.n = lw_const_from_f64(c, t, r, cs, v);
    return o;
}

bool qdq_quantize_exact_ok(double s) { return s >= 0x1p-60 && s <= 0x1p60 && (double)(float)s == s; }

/* s rounded to its 12 leading significant bits; s - that has at most 12. */
static double split12(double s) {
    int e;
    double m = frexp(s, &e);
    return ldexp(nearbyint(ldexp(m, 12)), e - 12);
}

lw_v qdq_quantize_exact(lower_ctx *c, lw_v x, int64_t n, const int64_t *cs, const double *scale,
                        const double *lo, const double *hi) {
    arena *ar = lw_arena(c);
    const ctosa_dtype f = CTOSA_DTYPE_FP32;
    double *k = arena_alloc(ar, 7 * ((size_t)n + 1) * sizeof(double));
    if (!k) return lw_v_none();
    double *rcp = k, *sh = k + n + 1, *sl = k + 2 * (n + 1), *sk = k + 3 * (n + 1), *ylo = k + 4 * (n + 1),
           *yhi = k + 5 * (n + 1), *tmin = k + 6 * (n + 1);
    for (int64_t i = 0; i < n; i++) {
        rcp[i] = (double)(float)(1.0 / scale[i]);
        sh[i] = split12(scale[i]);
        sl[i] = scale[i] - sh[i];
        sk[i] = ldexp(scale[i], -26);
        tmin[i] = ldexp(scale[i], -25);
        ylo[i] = lo[i];
        yhi[i] = hi[i];
    }
    uint32_t r = x.r;
    x = lw_v_cast(c, x, f); /* fp16 / bf16 widen exactly */
    lw_v S = chan_const(c, f, r, cs, scale);
    /* 1. the estimate and its floor, inside the output range */
    lw_v y = lw_v_mul(c, x, chan_const(c, f, r, cs, rcp));
    y = lw_v_bin(c, CTOSA_OP_MAXIMUM, y, chan_const(c, f, r, cs, ylo));
    y = lw_v_bin(c, CTOSA_OP_MINIMUM, y, chan_const(c, f, r, cs, yhi));
    lw_v F = lw_v_un(c, CTOSA_OP_FLOOR, y);
    lw_v H = lw_v_addk(c, F, 0.5);
    /* 3. H * s = P + p (Veltkamp split of H, Dekker's product) */
    lw_v V = lw_v_mulk(c, H, 4097.0);
    lw_v Hh = lw_v_sub(c, V, lw_v_sub(c, V, H));
    lw_v Hl = lw_v_sub(c, H, Hh);
    lw_v Sh = chan_const(c, f, r, cs, sh), Sl = chan_const(c, f, r, cs, sl);
    lw_v P = lw_v_mul(c, H, S);
    lw_v p = lw_v_sub(c, lw_v_mul(c, Hh, Sh), P);
    p = lw_v_add(c, p, lw_v_mul(c, Hh, Sl));
    p = lw_v_add(c, p, lw_v_mul(c, Hl, Sh));
    p = lw_v_add(c, p, lw_v_mul(c, Hl, Sl));
    lw_v R = lw_v_sub(c, lw_v_sub(c, x, P), p);
    /* 4. T = s * ulp(H) / 2 */
    lw_v u = lw_v_mulk(c, H, 33554433.0); /* 2^25 + 1 */
    lw_v ufp = lw_v_un(c, CTOSA_OP_ABS, lw_v_sub(c, u, lw_v_mulk(c, u, 1.0 - 0x1p-24)));
    lw_v T = lw_v_mul(c, ufp, chan_const(c, f, r, cs, sk));
    T = lw_v_bin(c, CTOSA_OP_MAXIMUM, T, chan_const(c, f, r, cs, tmin));
    /* 2. N = rne(H) when fl(q) == H, else F or F + 1 by the side of q */
    lw_v at_h = lw_v_bin(c, CTOSA_OP_GREATER, T, lw_v_un(c, CTOSA_OP_ABS, R));
    lw_v above = lw_v_bin(c, CTOSA_OP_GREATER, R, lw_v_k(c, R, 0.0));
    lw_v Fi = lw_v_cast(c, F, CTOSA_DTYPE_INT32);
    lw_v Hi = lw_v_cast(c, H, CTOSA_DTYPE_INT32); /* ties to even */
    lw_v N = lw_v_select(c, at_h, Hi, lw_v_select(c, above, lw_v_addk(c, Fi, 1.0), Fi));
    /* F + 1 may pass the top of the range */
    return lw_v_bin(c, CTOSA_OP_MINIMUM, N, chan_const(c, CTOSA_DTYPE_INT32, r, cs, yhi));
}
