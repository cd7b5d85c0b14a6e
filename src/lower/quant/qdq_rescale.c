/* qdq_rescale.c - requantisation arithmetic shared by the quantized
 * lowerings: scale ratio -> RESCALE multiplier/shift, RESCALE and CLAMP
 * emitters, ONNX Runtime's float32 accumulator ratio, and the opt-in
 * emulation of ONNX Runtime's rounding (`--requant ort`). Split from
 * lower_qdq.c, which holds the lowerings themselves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

/* ----------------------------------------------------------- scale math */

/* ratio = multiplier * 2^-shift, multiplier < 2^bits (31 for scale32, 15
 * for the 16-bit multipliers that int48 inputs need), shift in [2, 62]. */
static bool q_ratio_bits(double r, int bits, int32_t *mult, int8_t *shift) {
    if (!(r >= 0) || isinf(r)) return false;
    if (r == 0) {
        *mult = 0;
        *shift = 31;
        return true;
    }
    int e;
    double f = frexp(r, &e); /* r = f * 2^e, f in [0.5, 1) */
    int64_t m = llround(ldexp(f, bits));
    if (m == (INT64_C(1) << bits)) {
        m >>= 1;
        e++;
    }
    int s = bits - e;
    if (s > 62) {
        int d = s - 62;
        m = d >= 63 ? 0 : (m + (INT64_C(1) << (d - 1))) >> d;
        s = 62;
    }
    if (s < 2) return false;
    *mult = (int32_t)m;
    *shift = (int8_t)s;
    return true;
}

static int64_t zp_bits(ctosa_dtype t, int64_t zp) {
    /* unsigned zero points are given as the signed value with the same bits */
    if (t == CTOSA_DTYPE_INT8 && zp > 127) return zp - 256;
    if (t == CTOSA_DTYPE_INT16 && zp > 32767) return zp - 65536;
    return zp;
}

/* RESCALE with per-channel (nc > 1, over the last axis) or single ratios. */
const char *qdq_rescale_n(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                          const int64_t *shape, int64_t nc, const double *ratio, int64_t izp, int64_t ozp,
                          bool iu, bool ou) {
    if (!x) return NULL;
    int32_t *m = arena_alloc(lw_arena(c), (size_t)nc * 4 + 4);
    int8_t *sh = arena_alloc(lw_arena(c), (size_t)nc + 1);
    if (!m || !sh) return NULL;
    bool s32 = ti != CTOSA_DTYPE_INT48;
    for (int64_t k = 0; k < nc; k++)
        if (!q_ratio_bits(ratio[k], s32 ? 31 : 15, &m[k], &sh[k])) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "scale ratio %g is outside what RESCALE can express",
                    ratio[k]);
            return NULL;
        }
    uint8_t *mb = arena_alloc(lw_arena(c), (size_t)nc * 4 + 4);
    if (!mb) return NULL;
    for (int64_t k = 0; k < nc; k++) {
        if (s32) wr_u32(mb + 4 * k, (uint32_t)m[k]);
        else wr_u16(mb + 2 * k, (uint16_t)m[k]);
    }
    const char *mc = lw_const(c, s32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16, 1, &nc, mb);
    const char *sc = lw_const(c, CTOSA_DTYPE_INT8, 1, &nc, sh);
    const char *iz = lw_zero_point(c, ti, zp_bits(ti, izp));
    const char *oz = lw_zero_point(c, to, zp_bits(to, ozp));
    const char *out = lw_tensor(c, to, rank, shape);
    if (!mc || !sc || !iz || !oz || !out) return NULL;
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.scale32 = s32;
    a.rounding_mode = CTOSA_ROUND_SINGLE;
    a.per_channel = nc > 1;
    a.input_unsigned = iu;
    a.output_unsigned = ou;
    const char *in[5] = {x, mc, sc, iz, oz};
    return lw_op(c, CTOSA_OP_RESCALE, 5, in, 1, &out, &a) ? out : NULL;
}

const char *qdq_rescale(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                        const int64_t *shape, double ratio, int64_t izp, int64_t ozp, bool iu, bool ou) {
    return qdq_rescale_n(c, x, ti, to, rank, shape, 1, &ratio, izp, ozp, iu, ou);
}

/* int32 elementwise emitters of qdq_rescale_ort (NULL operands propagate) */
static const char *qe_s(lower_ctx *c, uint32_t rank, double v) {
    return lw_scalar(c, CTOSA_DTYPE_INT32, rank, v);
}

static const char *qe_b(lower_ctx *c, ctosa_op_kind k, const char *a, const char *b, uint32_t rank,
                        const int64_t *sh) {
    if (!a || !b) return NULL;
    return lw_binary(c, k, a, b, CTOSA_DTYPE_INT32, rank, sh);
}

static const char *qe_cmp(lower_ctx *c, ctosa_op_kind k, const char *a, const char *b, uint32_t rank,
                          const int64_t *sh) {
    if (!a || !b) return NULL;
    return lw_binary(c, k, a, b, CTOSA_DTYPE_BOOL, rank, sh);
}

static const char *qe_sel(lower_ctx *c, const char *p, const char *a, const char *b, uint32_t rank,
                          const int64_t *sh) {
    if (!p || !a || !b) return NULL;
    const char *out = lw_tensor(c, CTOSA_DTYPE_INT32, rank, sh);
    const char *in[3] = {p, a, b};
    return out && lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &out, NULL) ? out : NULL;
}

/* ------------------------------------------------ reachable accumulators */

static int64_t pmod(int64_t a, int64_t m) {
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* One set for all channels: [lo, hi], base modulo step. */
static const qdq_acc_set *acc_set1(lower_ctx *c, int64_t lo, int64_t hi, int64_t base, int64_t step) {
    qdq_acc_set *A = arena_alloc(lw_arena(c), sizeof *A);
    int64_t *v = arena_alloc(lw_arena(c), 4 * sizeof *v);
    if (!A || !v) return NULL;
    v[0] = lo;
    v[1] = hi;
    v[2] = base;
    v[3] = step;
    *A = (qdq_acc_set){1, v, v + 1, v + 2, v + 3};
    return A;
}

const qdq_acc_set *qdq_acc_bound(lower_ctx *c, double acc_max) {
    double m = floor(acc_max);
    if (!(m < 4611686018427387904.0)) m = 4611686018427387904.0; /* 2^62: beyond any tie */
    return acc_set1(c, -(int64_t)m, (int64_t)m, 0, 1);
}

const qdq_acc_set *qdq_acc_of_weights(lower_ctx *c, ctosa_dtype xt, int64_t izp, int64_t nch, int64_t per,
                                      int64_t ms, int64_t ks, const uint8_t *w, bool u8, int64_t wzp,
                                      const double *bias) {
    qdq_acc_set *A = arena_alloc(lw_arena(c), sizeof *A);
    int64_t *v = arena_alloc(lw_arena(c), (size_t)(4 * nch) * sizeof *v + 8);
    if (!A || !v) return NULL;
    /* x - izp runs over [dlo, dhi], which holds 0 (x = izp: also what
     * padding reads), so every partial sum lies inside the full one's
     * interval */
    int64_t dlo = (xt == CTOSA_DTYPE_INT16 ? -32768 : -128) - izp;
    int64_t dhi = (xt == CTOSA_DTYPE_INT16 ? 32767 : 127) - izp;
    for (int64_t m = 0; m < nch; m++) {
        int64_t b = bias ? (int64_t)bias[m] : 0, lo = b, hi = b, g = 0;
        for (int64_t k = 0; k < per; k++) {
            uint8_t r = w[m * ms + k * ks];
            int64_t d = (u8 ? (int64_t)r : (int64_t)(int8_t)r) - wzp;
            int64_t p = d * dlo, q = d * dhi;
            lo += p < q ? p : q;
            hi += p < q ? q : p;
            g = gcd_i64(g, d);
        }
        v[m] = lo;
        v[nch + m] = hi;
        v[2 * nch + m] = b;
        v[3 * nch + m] = g;
    }
    *A = (qdq_acc_set){nch, v, v + nch, v + 2 * nch, v + 3 * nch};
    return A;
}

/* Whether some value of [lo, hi] that is congruent to base modulo step
 * (step 0: base only) is congruent to 2^(s-1) modulo 2^s. The two
 * congruences meet iff base ≡ 2^(s-1) modulo gcd(step, 2^s); their common
 * class, modulo L = lcm(step, 2^s), is found by stepping 2^(s-1) + u·2^s
 * (u < step / gcd); then the interval is asked for a member of it. */
static bool acc_can_tie(int s, int64_t lo, int64_t hi, int64_t base, int64_t step) {
    int64_t T = INT64_C(1) << s, H = T >> 1;
    if (lo > hi) return false;
    if (step == 0) return base >= lo && base <= hi && pmod(base, T) == H;
    int64_t d = gcd_i64(step, T);
    if (pmod(base - H, d)) return false;
    int64_t n = step / d;
    if (n > (INT64_C(1) << 20) || T > (INT64_C(1) << 40) / n) return true; /* too large to decide: keep */
    int64_t L = T * n, x = -1;
    for (int64_t u = 0; u < n && x < 0; u++)
        if (!pmod(H + T * u - base, step)) x = H + T * u;
    if (x < 0) return true; /* cannot happen when the congruences meet */
    return lo + pmod(x - lo, L) <= hi;
}

/* Exact ties of an integer accumulator. With the RESCALE ratio m·2^-s (m
 * odd after removing its trailing zeros), acc·m·2^-s lies exactly half way
 * between two integers iff acc ≡ 2^(s-1) (mod 2^s), m being invertible mod
 * 2^s. Whether such an acc can occur is decided on what the accumulator
 * can hold (A: its interval, and the residue its weights leave: a channel
 * whose weights are all even with an odd bias never ties), not on the ratio
 * alone: the tie test costs five int32 operators per element on the NPU and
 * in the interpreter, and a test that can never fire must not be emitted.
 * Ratio channel k (nc = 1: one ratio for all of A's channels) gets *mask /
 * *half 2^s - 1 and 2^(s-1) when some channel it scales can tie, 0 and 1
 * (never) otherwise. Returns whether any can. */
static bool tie_masks(int64_t nc, const double *ratio, const qdq_acc_set *A, double *mask, double *half) {
    bool any = false;
    for (int64_t k = 0; k < nc; k++) {
        int32_t m;
        int8_t sh;
        mask[k] = 0;
        half[k] = 1;
        if (!q_ratio_bits(ratio[k], 31, &m, &sh) || m == 0) continue;
        int s = sh;
        while (!(m & 1)) {
            m >>= 1;
            s--;
        }
        if (s < 1 || s > 31) continue;
        bool tie = false;
        /* the channels of A this ratio scales */
        int64_t j0 = A->n == 1 ? 0 : nc == 1 ? 0 : k, j1 = A->n == 1 ? 1 : nc == 1 ? A->n : k + 1;
        for (int64_t j = j0; j < j1 && !tie; j++)
            tie = acc_can_tie(s, A->lo[j], A->hi[j], A->base[j], A->step[j]);
        if (!tie) continue;
        mask[k] = ldexp(1.0, s) - 1;
        half[k] = ldexp(1.0, s - 1);
        any = true;
    }
    return any;
}

/* y (int32, acc requantised with RESCALE's half-up rounding) with the
 * exact ties of acc moved to the even neighbour: y - (y & 1) there (half
 * up gave k + 1 for k + 1/2). Unchanged when no channel can tie. */
static const char *tie_even(lower_ctx *c, const char *acc, const char *y, uint32_t rank, const int64_t *sh,
                            int64_t nc, const double *ratio, const qdq_acc_set *A) {
    double *mask = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    double *half = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    if (!acc || !y || !mask || !half || !A) return NULL;
    if (!tie_masks(nc, ratio, A, mask, half)) return y;
    int64_t bs[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) bs[i] = 1;
    bs[rank - 1] = nc;
    if (lw_spec(c)->u55) {
        /* no bitwise, comparison or SELECT operator: the low s bits are
         * lo = acc - ((acc >> s) << s), a tie is t = INTDIV(half - |lo -
         * half|, half) = 1 (0 otherwise), odd = y - ((y >> 1) << 1);
         * channels with s = 31 (lo would leave int32) keep half up */
        double *shv = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
        if (!shv) return NULL;
        for (int64_t k = 0; k < nc; k++) {
            shv[k] = mask[k] > 0 ? log2(mask[k] + 1.0) : 0;
            if (shv[k] > 30) {
                shv[k] = 0;
                half[k] = 1;
            }
        }
        const char *S = lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, shv);
        const char *Hc = lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, half);
        const char *hi = qe_b(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, acc, S, rank, sh);
        const char *lo =
            qe_b(c, CTOSA_OP_SUB, acc, qe_b(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, hi, S, rank, sh), rank, sh);
        const char *d = qe_b(c, CTOSA_OP_SUB, lo, Hc, rank, sh);
        d = d ? lw_unary(c, CTOSA_OP_ABS, d, CTOSA_DTYPE_INT32, rank, sh, NULL) : NULL;
        const char *t = qe_b(c, CTOSA_OP_INTDIV, qe_b(c, CTOSA_OP_SUB, Hc, d, rank, sh), Hc, rank, sh);
        const char *one = qe_s(c, rank, 1);
        const char *y2 = qe_b(c, CTOSA_OP_LOGICAL_LEFT_SHIFT,
                              qe_b(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, y, one, rank, sh), one, rank, sh);
        const char *odd = qe_b(c, CTOSA_OP_SUB, y, y2, rank, sh);
        return qe_b(c, CTOSA_OP_SUB, y, lw_mul(c, t, odd, CTOSA_DTYPE_INT32, rank, sh), rank, sh);
    }
    const char *lo =
        qe_b(c, CTOSA_OP_BITWISE_AND, acc, lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, mask), rank, sh);
    const char *tie =
        qe_cmp(c, CTOSA_OP_EQUAL, lo, lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, half), rank, sh);
    const char *odd = qe_b(c, CTOSA_OP_BITWISE_AND, y, qe_s(c, rank, 1), rank, sh);
    return qe_sel(c, tie, qe_b(c, CTOSA_OP_SUB, y, odd, rank, sh), y, rank, sh);
}

/* RESCALE of an integer accumulator (holding values of A) by nc ratios to
 * `to` with output zero point ozp, rounding as QuantizeLinear does: a
 * value exactly half way between two integers goes to the even one where
 * such a tie can occur (tie_masks), with bitwise and comparison operators
 * or, under U55, shifts and INTDIV (tie_even); int48 accumulators (no
 * int48 operators for that) and ties-free ratios: one RESCALE, half up. */
const char *qdq_rescale_acc(lower_ctx *c, const char *acc, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                            const int64_t *sh, int64_t nc, const double *ratio, int64_t ozp,
                            const qdq_acc_set *A) {
    double *mask = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    double *half = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    if (!mask || !half || !A) return NULL;
    if (ti != CTOSA_DTYPE_INT32 || !tie_masks(nc, ratio, A, mask, half))
        return qdq_rescale_n(c, acc, ti, to, rank, sh, nc, ratio, 0, ozp, false, false);
    const char *y = qdq_rescale_n(c, acc, ti, CTOSA_DTYPE_INT32, rank, sh, nc, ratio, 0, 0, false, false);
    y = tie_even(c, acc, y, rank, sh, nc, ratio, A);
    return qdq_rescale(c, y, CTOSA_DTYPE_INT32, to, rank, sh, 1.0, 0, ozp, false, false);
}

/* Largest |x - zp| of a signed carrier value (int8 / int16). */
double qdq_operand_bound(ctosa_dtype t, int64_t zp) {
    double lo = t == CTOSA_DTYPE_INT16 ? -32768.0 : -128.0, hi = -lo - 1.0;
    double a = fabs(lo - (double)zp), b = fabs(hi - (double)zp);
    return a > b ? a : b;
}

/* Requantisation of an elementwise int32 result z to the output: Add / Sub
 * at a common scale (z = (x - z_x)·ra ± (y - z_y)·rb) or Mul (z = (x -
 * z_x)(y - z_y)), |x - z_x| <= xmax, |y - z_y| <= ymax. Where z is the
 * exact value - always for Mul, for Add / Sub when both operand ratios are
 * integers (their RESCALEs are then exact: equal scales, or scales a power
 * of two apart) - exact ties go to even as QuantizeLinear sends them
 * (qdq_rescale_acc); otherwise each operand was already rounded once, no
 * tie of z is a tie of the QDQ value, and one RESCALE (half up) stays. */
const char *qdq_rescale_ewise(lower_ctx *c, const char *z, ctosa_dtype to, uint32_t rank, const int64_t *sh,
                              double ro, int64_t ozp, bool mul, double ra, double xmax, double rb,
                              double ymax) {
    double zmax = 0;
    if (mul) zmax = xmax * ymax;
    else if (ra == floor(ra) && rb == floor(rb) && ra < 536870912.0 && rb < 536870912.0)
        zmax = ra * xmax + rb * ymax;
    if (!(zmax > 0 && zmax <= 2147483647.0))
        return qdq_rescale_n(c, z, CTOSA_DTYPE_INT32, to, rank, sh, 1, &ro, 0, ozp, false, false);
    /* an Add / Sub sum is a multiple of gcd(ra, rb) (2^19 for equal
     * scales): only such values can tie */
    int64_t zm = (int64_t)zmax;
    const qdq_acc_set *A = acc_set1(c, -zm, zm, 0, mul ? 1 : gcd_i64((int64_t)ra, (int64_t)rb));
    return qdq_rescale_acc(c, z, CTOSA_DTYPE_INT32, to, rank, sh, 1, &ro, ozp, A);
}

/* One integer operand x (int8 / int16, zero point izp) requantised by
 * ratio to `to` (zero point ozp): Relu, Clip, MaxPool, Concat and the data
 * movement heads. (x - izp)·ratio is the exact QDQ value; where it can lie
 * half way between two integers (a ratio with few significant bits, such
 * as 1/2) the tie goes to even as QuantizeLinear sends it: x is widened to
 * int32 (exact) and requantised by qdq_rescale_acc. Otherwise one
 * RESCALE, the same graph as without ties. */
const char *qdq_rescale_x(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                          const int64_t *shape, double ratio, int64_t izp, int64_t ozp) {
    if (ti != CTOSA_DTYPE_INT8 && ti != CTOSA_DTYPE_INT16)
        return qdq_rescale(c, x, ti, to, rank, shape, ratio, izp, ozp, false, false);
    /* x - izp takes every value of [lo - izp, hi - izp] */
    int64_t v[4] = {(ti == CTOSA_DTYPE_INT16 ? -32768 : -128) - izp,
                    (ti == CTOSA_DTYPE_INT16 ? 32767 : 127) - izp, 0, 1};
    qdq_acc_set A = {1, v, v + 1, v + 2, v + 3};
    double mask, half;
    if (!tie_masks(1, &ratio, &A, &mask, &half))
        return qdq_rescale(c, x, ti, to, rank, shape, ratio, izp, ozp, false, false);
    const char *w = qdq_rescale(c, x, ti, CTOSA_DTYPE_INT32, rank, shape, 1.0, izp, 0, false, false);
    return qdq_rescale_acc(c, w, CTOSA_DTYPE_INT32, to, rank, shape, 1, &ratio, ozp, &A);
}

/* Requantisation of an int32 accumulator to int8 the way ONNX Runtime's
 * fused kernels round: rint_even(float32(acc * r)) (docs/quantization.md,
 * "Where ctosa sits"). A plain RESCALE rounds the exact product half up;
 * the two differ where float32's rounding (24 significant bits) snaps the
 * product onto a tie k + 1/2 that ORT then sends to the even neighbour.
 * Those few outputs per layer grow through deep networks (mobilenet_v2
 * onednn: 97.2% of outputs within 3 steps of ORT with a plain RESCALE,
 * 99.0% with this), so on request and outside the U55 subset (no
 * comparisons, SELECT or bitwise operators there) the snap is emulated in
 * int32:
 *   w  = RESCALE(acc, r * 2^F)           v with F fraction bits (F = 20)
 *   y0 = (w + 2^(F-1)) >> F              half up; fr = its fraction bits
 *   H  = half a float32 ulp of the tie y0 -/+ 1/2, in units of 2^-F
 *        (2^(q - 24 + F), q from CLZ of 2|tie|)
 *   fr in [0, H): within H of the tie y0 - 1/2 -> an odd y0 becomes
 *   y0 - 1 (fr = 0 means w was rounded onto the tie: v is within half a
 *   unit of it, inside the snap zone whenever H >= 1: exact 20.4999996,
 *   float32 20.5, ORT 20);
 *   fr in (2^F - H, 2^F): just below the tie y0 + 1/2 -> odd y0 -> y0 + 1;
 *   fr = 0 with H = 0 (ties below 16, whose half ulp is at most half a unit):
 *   half up, except an exact tie of acc (tie_even), which goes to the even
 *   neighbour as ORT's rint sends it.
 * Only QLinearConv / QGemm compute float32(acc * r) in one rounding;
 * QLinearAdd's float32 multiply-adds round intermediate values, so its
 * snaps are not those of the exact sum (an exact 122.5000017 gives 123
 * there, which a snap of the exact value would send to 122): Add keeps the
 * plain requantisation in both modes. Accumulators are first clamped to |v| <= 300 (the
 * int8 output saturates long before) so that acc * r * 2^F stays inside
 * RESCALE's input bound. About 35 elementwise int32 operators per output;
 * int8 outputs only; acc holds values of A. */
#define QE_F 20
/* Only on request (ctosa_lower_options.requant) and never for U55. */
bool qdq_match_ort(const lower_ctx *c) { return c->s && c->s->requant_ort && !lw_spec(c)->u55; }

const char *qdq_rescale_ort(lower_ctx *c, const char *acc, ctosa_dtype to, uint32_t rank, const int64_t *sh,
                            int64_t nc, const double *ratio, int64_t ozp, const qdq_acc_set *A) {
    for (int64_t k = 0; k < nc; k++) /* r * 2^F must stay a RESCALE ratio (below 2^29) */
        if (!(ratio[k] < 256.0))
            return qdq_rescale_acc(c, acc, CTOSA_DTYPE_INT32, to, rank, sh, nc, ratio, ozp, A);
    double *r2 = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    if (!r2) return NULL;
    double *lo = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    double *hi = arena_alloc(lw_arena(c), (size_t)nc * sizeof(double) + 8);
    if (!lo || !hi) return NULL;
    for (int64_t k = 0; k < nc; k++) {
        r2[k] = ldexp(ratio[k], QE_F);
        /* accumulators beyond |v| = 300 saturate anyway; keeps acc * r * 2^F inside int32 */
        double b = ratio[k] > 0 ? floor(300.0 / ratio[k]) : 2147483647.0;
        hi[k] = b > 536870911.0 ? 536870911.0 : b;
        lo[k] = -hi[k];
    }
    int64_t bs[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) bs[i] = 1;
    bs[rank - 1] = nc;
    const char *acc_c = acc;
    acc = qe_b(c, CTOSA_OP_MAXIMUM, acc, lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, lo), rank, sh);
    acc = qe_b(c, CTOSA_OP_MINIMUM, acc, lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, bs, hi), rank, sh);
    const char *w =
        qdq_rescale_n(c, acc, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32, rank, sh, nc, r2, 0, 0, false, false);
    const char *t = qe_b(c, CTOSA_OP_ADD, w, qe_s(c, rank, (double)(1 << (QE_F - 1))), rank, sh);
    const char *y0 = qe_b(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, t, qe_s(c, rank, QE_F), rank, sh);
    const char *fr = qe_b(c, CTOSA_OP_BITWISE_AND, t, qe_s(c, rank, (double)((1 << QE_F) - 1)), rank, sh);
    const char *y2 = qe_b(c, CTOSA_OP_ADD, y0, y0, rank, sh);
    const char *odd = qe_b(c, CTOSA_OP_BITWISE_AND, y0, qe_s(c, rank, 1), rank, sh);
    const char *H[2];
    for (int j = 0; j < 2; j++) {
        /* tie y0 - 1/2 (j = 0) or y0 + 1/2 (j = 1); T = 2|tie| */
        const char *T = qe_b(c, j ? CTOSA_OP_ADD : CTOSA_OP_SUB, y2, qe_s(c, rank, 1), rank, sh);
        T = T ? lw_unary(c, CTOSA_OP_ABS, T, CTOSA_DTYPE_INT32, rank, sh, NULL) : NULL;
        const char *z = T ? lw_unary(c, CTOSA_OP_CLZ, T, CTOSA_DTYPE_INT32, rank, sh, NULL) : NULL;
        /* half ulp of the tie in units of 2^-F: 2^(q - 24 + F), q = 30 - clz(T) */
        const char *e = qe_b(c, CTOSA_OP_SUB, qe_s(c, rank, 30 - 24 + QE_F + 1), z, rank, sh);
        e = qe_b(c, CTOSA_OP_MAXIMUM, e, qe_s(c, rank, 0), rank, sh);
        e = qe_b(c, CTOSA_OP_MINIMUM, e, qe_s(c, rank, 30), rank, sh);
        const char *h = qe_b(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, qe_s(c, rank, 1), e, rank, sh);
        H[j] = qe_b(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, h, qe_s(c, rank, 1), rank, sh);
    }
    const char *above = qe_cmp(c, CTOSA_OP_GREATER, H[0], fr, rank, sh);
    const char *lim = qe_b(c, CTOSA_OP_SUB, qe_s(c, rank, (double)(1 << QE_F)), H[1], rank, sh);
    const char *below = qe_cmp(c, CTOSA_OP_GREATER, fr, lim, rank, sh);
    const char *y = qe_sel(c, above, qe_b(c, CTOSA_OP_SUB, y0, odd, rank, sh), y0, rank, sh);
    y = qe_sel(c, below, qe_b(c, CTOSA_OP_ADD, y, odd, rank, sh), y, rank, sh);
    /* exact ties (fr = 0 above) go to even, as ORT's rint does */
    y = tie_even(c, acc_c, y, rank, sh, nc, ratio, A);
    return qdq_rescale(c, y, CTOSA_DTYPE_INT32, to, rank, sh, 1.0, 0, ozp, false, false);
}

/* Requantisation ratio s_x * s_w / s_y of an integer accumulator, computed
 * the way ONNX Runtime's QLinearConv / QGemm kernels do: float32 product,
 * then float32 quotient (docs/quantization.md, "Where ctosa sits"). The
 * float32 value has 24 significant bits, so the 31-bit multiplier holds it
 * exactly and ctosa and ORT scale the accumulator by the same number; the
 * exact double ratio differs from it by up to 2^-24 relative, which moved
 * outputs lying that close to a .5 boundary by one step. Scales whose
 * float32 ratio is not a normal number keep the double ratio. */
double qdq_acc_ratio(double sx, double sw, double sy) {
    float p = (float)sx * (float)sw;
    float r = p / (float)sy;
    if (isnormal(p) && isnormal(r)) return (double)r;
    return sx * sw / sy;
}

const char *qdq_clamp(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                      int64_t lo, int64_t hi) {
    if (!x) return NULL;
    if (t == CTOSA_DTYPE_INT16 && !(lw_spec(c)->extensions & CTOSA_EXT_BIT(INT16))) {
        /* CLAMP of int16 is EXT-INT16: MAXIMUM / MINIMUM in int32 instead */
        const char *y = lw_cast(c, x, t, CTOSA_DTYPE_INT32, rank, shape);
        y = lw_binary(c, CTOSA_OP_MAXIMUM, y, lw_scalar(c, CTOSA_DTYPE_INT32, rank, (double)lo),
                      CTOSA_DTYPE_INT32, rank, shape);
        y = lw_binary(c, CTOSA_OP_MINIMUM, y, lw_scalar(c, CTOSA_DTYPE_INT32, rank, (double)hi),
                      CTOSA_DTYPE_INT32, rank, shape);
        return lw_cast(c, y, CTOSA_DTYPE_INT32, t, rank, shape);
    }
    uint8_t *b = arena_alloc(lw_arena(c), 16);
    if (!b) return NULL;
    uint32_t w = t == CTOSA_DTYPE_INT8 ? 1 : t == CTOSA_DTYPE_INT16 ? 2 : 4;
    for (uint32_t k = 0; k < w; k++) {
        b[k] = (uint8_t)((uint64_t)lo >> (8 * k));
        b[8 + k] = (uint8_t)((uint64_t)hi >> (8 * k));
    }
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.min_val = (ctosa_bytes){b, w};
    a.max_val = (ctosa_bytes){b + 8, w};
    a.nan_mode = CTOSA_NAN_PROPAGATE;
    return lw_unary(c, CTOSA_OP_CLAMP, x, t, rank, shape, &a);
}
