/* qdq_softmax.c - quantized Softmax and LayerNormalization decomposed
 * into integer TOSA: int8 / uint8 with PRO-INT only (no int16 TABLE, no
 * float), int16 (a16w8 transformers) with EXT-INT16's TABLE.
 *
 * int8 
 * Softmax over one axis of x (scale s_x, any zero point):
 *   1. m = REDUCE_MAX(x) (int8); d = x - m in int32, d in [-255, 0]; the
 *      zero point cancels.
 *   2. RESCALE d to int8 with output zero point 127 (d + 127 fits int8
 *      exactly) and look up E(d) = round(32767 exp(d s_x)) through two
 *      256-entry int8 TABLEs: the high byte E >> 8 (0..127) and the low
 *      byte (E & 255) - 128; E = 256 hi + lo + 128 in int32 (RESCALEs by
 *      256 and 1 with input zero point -128, then ADD). 15 bits of exp
 *      with int8 tables only.
 *   3. S = REDUCE_SUM(E) in int32 (axis size <= 65535 keeps it exact).
 *   4. q = INTDIV(E * 2^14 + S / 2, S): the probability in Q14, rounded
 *      (E * 2^14 <= 2^29 and S / 2 < 2^30: no overflow).
 *   5. RESCALE q by 2^-14 / s_y to the output (zero point z_y).
 * Errors: exp to 1/65534 relative, the Q14 division to 2^-15, then the
 * output rounding; for the usual output scale 1/256 the result is the
 * float softmax quantised, within one step at ties (measured in
 * tests/test_quant_ops.c). */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

static const char *table8(lower_ctx *c, const char *x, uint32_t rank, const int64_t *shape,
                          const int8_t *tab) {
    int64_t n = 256;
    const char *tc = lw_const(c, CTOSA_DTYPE_INT8, 1, &n, tab);
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT8, rank, shape);
    if (!x || !tc || !y) return NULL;
    const char *in[2] = {x, tc};
    return lw_op(c, CTOSA_OP_TABLE, 2, in, 1, &y, NULL) ? y : NULL;
}

static const char *shift_op(lower_ctx *c, ctosa_op_kind k, const char *a, const char *b, uint32_t r,
                            const int64_t *sh, bool round) {
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT32, r, sh);
    if (!a || !b || !y) return NULL;
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.round = round;
    const char *in[2] = {a, b};
    return lw_op(c, k, 2, in, 1, &y, k == CTOSA_OP_ARITHMETIC_RIGHT_SHIFT ? &at : NULL) ? y : NULL;
}

/* a * b >> shift (rounded), int32 (TOSA MUL's shift input). */
static const char *mul_shift(lower_ctx *c, const char *a, const char *b, uint32_t r, const int64_t *sh,
                             int shift) {
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT32, r, sh);
    int64_t one = 1;
    int8_t sv = (int8_t)shift;
    const char *s = lw_const(c, CTOSA_DTYPE_INT8, 1, &one, &sv);
    if (!a || !b || !y || !s) return NULL;
    const char *in[3] = {a, b, s};
    return lw_op(c, CTOSA_OP_MUL, 3, in, 1, &y, NULL) ? y : NULL;
}

/* ------------------------------------------------------ int16 Softmax
 *
 * int16 input or output (EXT-INT16), any axis size up to 65535:
 *   1. d = max(x) - x >= 0 in int32 (the zero point cancels), capped where
 *      exp(-d s_x) is below 2^-31 of the maximum;
 *   2. u = d s_x log2(e) 2^16 (one RESCALE): 2^-u/2^16 = exp(-d s_x);
 *      n = u >> 16, f = u - n 2^16 (integer part and fraction);
 *   3. 2^(-f/2^16) from a 513-entry int16 TABLE over f - 32768 (knots
 *      1/512 apart: interpolation error about 1e-7, entries in units of
 *      1/32767) gives E_0 = 2^(-f/2^16) 32767 2^7 (int32, < 2^22);
 *      E = E_0 >> (n + e) rounded (e > 0 only for axes over 256 long,
 *      keeping the sum inside int32);
 *   4. S = REDUCE_SUM(E), S >= E(max) ~ 2^(22 - e); 1/S in fixed point:
 *      k = CLZ(S) - 2 normalises a = S << k into [2^29, 2^30); the
 *      reciprocal of a / 2^29 in Q29 from a linear seed (24 - 8 a) / 17
 *      and three Newton steps r <- r (2 - a r) (error below 2^-28);
 *   5. p 2^29 = (E r >> (21 - e)) >> (8 + e - k), rounded; one RESCALE
 *      by 2^-29 / s_y gives the output.
 * The exp entries (1/65534 of the largest term) bound the error: within
 * one output step for an output scale of 1/32767 (measured in
 * tests/test_qseq.c). INTDIV is not used; no comparisons or
 * bitwise operators either (Ethos-U55's subset). */

static double exp2_frac(void *arg, double x) {
    (void)arg;
    return exp2(-(x + 0.5)); /* table input v = f - 32768, x = v / 2^16 */
}

static lower_status softmax16(lower_ctx *c, const qx_in *a, const qx_out *o, int32_t axis) {
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    if (o->t == CTOSA_DTYPE_INT16 && o->zp != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Softmax: int16 output zero point %lld (TOSA "
                         "needs 0)",
                         (long long)o->zp);
    uint32_t r = a->rank;
    const int64_t *sh = a->shape;
    int64_t N = sh[axis], rs[LOWER_MAX_RANK];
    int lg = 0;
    while ((INT64_C(1) << lg) < N) lg++;
    int e = lg > 8 ? lg - 8 : 0; /* N 2^(22 - e) <= 2^30 */
    double one = 1.0;
    /* 1. d = max - x, capped so that n <= 31 - e */
    const char *m = lw_reduce(c, CTOSA_OP_REDUCE_MAX, a->x, a->t, r, sh, axis, rs);
    const char *x32 = qdq_rescale_n(c, a->x, a->t, I32, r, sh, 1, &one, 0, 0, false, false);
    const char *m32 = qdq_rescale_n(c, m, a->t, I32, r, rs, 1, &one, 0, 0, false, false);
    LW_TRY(x32 && m32);
    const char *d = lw_sub(c, m32, x32, I32, r, sh);
    double ru = a->s * 1.4426950408889634 * 65536.0;
    double cap = floor(((double)(32 - e) * 65536.0 - 2.0) / ru);
    if (cap < 65535.0) {
        const char *cc = lw_scalar(c, I32, r, cap), *dm = lw_tensor(c, I32, r, sh);
        LW_TRY(d && cc && dm);
        const char *in2[2] = {d, cc};
        ctosa_attr mn;
        memset(&mn, 0, sizeof mn);
        mn.nan_mode = CTOSA_NAN_PROPAGATE;
        LW_TRY(lw_op(c, CTOSA_OP_MINIMUM, 2, in2, 1, &dm, &mn));
        d = dm;
    }
    /* 2. u, n, f */
    const char *u = qdq_rescale_n(c, d, I32, I32, r, sh, 1, &ru, 0, 0, false, false);
    const char *n = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, u, lw_scalar(c, I32, r, 16.0), r, sh, false);
    const char *f = lw_sub(c, u, lw_mul(c, n, lw_scalar(c, I32, r, 65536.0), I32, r, sh), I32, r, sh);
    f = lw_add_scalar(c, f, I32, r, sh, -32768.0);
    const char *v = qdq_rescale_n(c, f, I32, CTOSA_DTYPE_INT16, r, sh, 1, &one, 0, 0, false, false);
    LW_TRY(v);
    /* 3. E */
    int16_t tab[513];
    double ts;
    if (!qdq_table16_build(exp2_frac, NULL, 1.0 / 65536.0, 0.0, 1.0, tab, &ts)) return lw_failed(c);
    int64_t nt = 513;
    uint8_t tb[513 * 2];
    for (int j = 0; j < 513; j++) wr_u16(tb + 2 * j, (uint16_t)tab[j]);
    const char *tc = lw_const(c, CTOSA_DTYPE_INT16, 1, &nt, tb);
    const char *E0 = lw_tensor(c, I32, r, sh);
    LW_TRY(tc && E0);
    const char *tin[2] = {v, tc};
    LW_TRY(lw_op(c, CTOSA_OP_TABLE, 2, tin, 1, &E0, NULL));
    if (e) n = lw_add_scalar(c, n, I32, r, sh, (double)e);
    const char *E = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, E0, n, r, sh, true);
    /* 4. S and its reciprocal */
    const char *S = lw_reduce(c, CTOSA_OP_REDUCE_SUM, E, I32, r, sh, axis, rs);
    const char *z = lw_unary(c, CTOSA_OP_CLZ, S, I32, r, rs, NULL);
    const char *k = lw_add_scalar(c, z, I32, r, rs, -2.0);
    const char *A = shift_op(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, S, k, r, rs, false);
    const char *seed = mul_shift(c, A, lw_scalar(c, I32, r, nearbyint(8.0 / 17.0 * 536870912.0)), r, rs, 29);
    const char *rc = lw_sub(c, lw_scalar(c, I32, r, nearbyint(24.0 / 17.0 * 536870912.0)), seed, I32, r, rs);
    const char *two = lw_scalar(c, I32, r, 1073741824.0);
    for (int it = 0; it < 3; it++) {
        const char *ar = mul_shift(c, A, rc, r, rs, 29);
        rc = mul_shift(c, rc, lw_sub(c, two, ar, I32, r, rs), r, rs, 29);
    }
    /* 5. p 2^29 and the output */
    const char *P = mul_shift(c, E, rc, r, sh, 21 - e);
    const char *rsh = lw_sub(c, lw_scalar(c, I32, r, (double)(8 + e)), k, I32, r, rs);
    const char *zero = lw_scalar(c, I32, r, 0.0), *rsp = lw_tensor(c, I32, r, rs);
    LW_TRY(rsh && zero && rsp);
    const char *mx[2] = {rsh, zero};
    ctosa_attr ma;
    memset(&ma, 0, sizeof ma);
    ma.nan_mode = CTOSA_NAN_PROPAGATE;
    LW_TRY(lw_op(c, CTOSA_OP_MAXIMUM, 2, mx, 1, &rsp, &ma));
    P = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, P, rsp, r, sh, true);
    double ro = 1.0 / (536870912.0 * o->s);
    const char *y = qdq_rescale_n(c, P, I32, o->t, r, sh, 1, &ro, 0, o->zp, false, false);
    LW_TRY(y);
    return qdq_finish(c, y, o, r, sh);
}

lower_status qdq_softmax(lower_ctx *c) {
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    uint32_t r = a.rank;
    int64_t axis_attr = lw_attr_int(c, "axis", lw_opset(c) >= 13 ? -1 : 1);
    int32_t axis;
    if (!lw_axis(c, axis_attr, r, "axis", &axis)) return LOWER_REJECT;
    if (lw_opset(c) < 13 && axis != (int32_t)r - 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Softmax (opset < 13): axis %d is not the last (the coerced 2-D form)",
                         axis);
    if (a.shape[axis] > 65535)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Softmax: axis of %lld elements (at most 65535 "
                         "keep the int32 sum exact)",
                         (long long)a.shape[axis]);
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    if (a.t == CTOSA_DTYPE_INT16 || o.t == CTOSA_DTYPE_INT16) return softmax16(c, &a, &o, axis);
    const ctosa_dtype I8 = CTOSA_DTYPE_INT8, I32 = CTOSA_DTYPE_INT32;
    const int64_t *sh = a.shape;
    int64_t rs[LOWER_MAX_RANK];
    double one = 1.0, r256 = 256.0;
    /* 1. d = x - max(x) */
    const char *m = lw_reduce(c, CTOSA_OP_REDUCE_MAX, a.x, I8, r, sh, axis, rs);
    const char *x32 = qdq_rescale_n(c, a.x, I8, I32, r, sh, 1, &one, 0, 0, false, false);
    const char *m32 = qdq_rescale_n(c, m, I8, I32, r, rs, 1, &one, 0, 0, false, false);
    LW_TRY(x32 && m32);
    const char *d = lw_sub(c, x32, m32, I32, r, sh);
    /* 2. exp through two int8 tables */
    const char *v = qdq_rescale_n(c, d, I32, I8, r, sh, 1, &one, 0, 127, false, false);
    int8_t hi[256], lo[256];
    for (int i = 0; i < 256; i++) {
        int dv = i - 255; /* table index i holds input value i - 128 = d + 127 */
        long e = lround(32767.0 * exp((double)dv * a.s));
        if (e < 0) e = 0;
        if (e > 32767) e = 32767;
        hi[i] = (int8_t)(e >> 8);
        lo[i] = (int8_t)((e & 255) - 128);
    }
    const char *th = table8(c, v, r, sh, hi), *tl = table8(c, v, r, sh, lo);
    const char *h32 = qdq_rescale_n(c, th, I8, I32, r, sh, 1, &r256, 0, 0, false, false);
    const char *l32 = qdq_rescale_n(c, tl, I8, I32, r, sh, 1, &one, -128, 0, false, false);
    LW_TRY(h32 && l32);
    const char *e = lw_add(c, h32, l32, I32, r, sh);
    /* 3. sum */
    const char *s = lw_reduce(c, CTOSA_OP_REDUCE_SUM, e, I32, r, sh, axis, rs);
    /* 4. q = (E 2^14 + S/2) / S */
    const char *num = lw_mul(c, e, lw_scalar(c, I32, r, 16384.0), I32, r, sh);
    ctosa_attr sa;
    memset(&sa, 0, sizeof sa);
    sa.round = false;
    const char *half = lw_tensor(c, I32, r, rs);
    const char *one_c = lw_scalar(c, I32, r, 1.0);
    LW_TRY(s && num && half && one_c);
    const char *in2[2] = {s, one_c};
    LW_TRY(lw_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, 2, in2, 1, &half, &sa));
    num = lw_add(c, num, half, I32, r, sh);
    const char *q = lw_tensor(c, I32, r, sh);
    LW_TRY(num && q);
    in2[0] = num;
    in2[1] = s;
    LW_TRY(lw_op(c, CTOSA_OP_INTDIV, 2, in2, 1, &q, NULL));
    /* 5. to the output */
    double ro = 1.0 / (16384.0 * o.s);
    const char *y = qdq_rescale_n(c, q, I32, o.t, r, sh, 1, &ro, 0, o.zp, false, false);
    LW_TRY(y);
    return qdq_finish(c, y, &o, r, sh);
}

/* ------------------------------------------------- LayerNormalization
 *
 * LayerNormalization over the last dimensions (from `axis`), viewed as
 * [outer, N]; the result is first T_i = x_norm_i sqrt(N) 2^Q with
 * Q = 30 - ceil(log2 N) (|x_norm| <= sqrt(N - 1), so |T| < 2^30), then per
 * element of the normalised axis a RESCALE by |gamma_j| 2^G / (s_y
 * sqrt(N) 2^Q) (negative gamma: MUL by -1 first), ADD beta_j 2^G / s_y,
 * RESCALE by 2^-G to the output (G = 8, less when gamma / beta are so
 * large against s_y that the sum could leave int32). N <= 8192.
 *
 * int8 / uint8 (PRO-INT only). With x_i = X - z_x in int32:
 *   S = sum x_i; m = INTDIV(S, N); d_i = x_i - m; R = S - N m
 *   W = sum d_i^2 - INTDIV(R^2, N)          (= N var exactly, to < 1)
 *   W' = max(W + round(N eps / s_x^2), 1)  (= N (var + eps) in steps^2)
 *   D_i = N x_i - S                         (= N (x_i - mean), exact)
 * rsqrt(W') in fixed point (rsqrt_q29): CLZ gives an even shift k with
 * W' << k in [2^29, 2^31); a = (W' << k) / 2^30 in [0.5, 2); a 256-entry
 * int8 TABLE indexed by the top 8 bits seeds 1/sqrt(a) in Q6 (about 1%),
 * two Newton steps r <- r (3 - a r^2) / 2 with int32 MUL (64-bit products,
 * rounding shifts) bring it to Q29 (< 1e-7); then
 * rsqrt(W') = r 2^(k/2 - 15), applied as a rounding right shift of r by
 * 15 - k/2 (at least 13 significant bits remain), and
 *   T_i = D_i r' >> (29 - Q).
 *
 * int16 (a16w8; also an int8 input with an int16 output): |d| reaches
 * 2^16, so sum d^2 no longer fits int32 and 13 bits of rsqrt are too few
 * for a 16-bit output. Per row a shift j makes the sum fit: a coarse
 * V_0 = sum (d >> 8)^2 (rounded shift; |d >> 8| <= 256) bounds sum d^2 by
 * 2^16 (2 V_0 + N / 2), and j = max(0, (21 - CLZ(V_0 + N/4)) >> 1) keeps
 * sum (d >> j)^2 < 2^31 (j = 0, exact, for every row of small variance);
 *   d'_i = d_i >> j (rounded); W = sum d'^2 - INTDIV((sum d')^2, N)
 *   W' = max(W + (round(N eps / s_x^2) >> 2j), 1)   (= N (var + eps) / 4^j)
 * r = rsqrt_q29(W'), k as above; D_i = N x_i - S (|D| <= N 2^16) and
 *   P_i = D_i r >> (16 + ceil(log2 N))   (|P| < 2^29.5, full precision)
 *   T_i = P_i 2^(2 - j + k/2)            (a left or a rounding right shift)
 * which keeps the 29 bits of r: within one output step of the float64
 * reference (tests/test_qseq.c). */

/* rsqrt of W' (int32 >= 1, shape s1 = [outer, 1]) in fixed point: Q29 of
 * 1/sqrt(a), a = (W' << k) / 2^30 in [0.5, 2), with the even shift k in
 * *k_out. Shifts, CLZ, MUL and an int8 TABLE only. */
static const char *rsqrt_q29(lower_ctx *c, const char *Wp, const int64_t *s1, const char **k_out) {
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    double one = 1.0;
    const char *onec = lw_scalar(c, I32, 2, 1.0);
    /* even normalising shift k = ((clz - 1) >> 1) << 1 */
    const char *z = lw_unary(c, CTOSA_OP_CLZ, Wp, I32, 2, s1, NULL);
    const char *k =
        shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, lw_sub(c, z, onec, I32, 2, s1), onec, 2, s1, false);
    k = shift_op(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, k, onec, 2, s1, false);
    const char *Wn = shift_op(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, Wp, k, 2, s1, false);
    /* seed: index Wn >> 23 in [64, 255] as int8 (- 128) */
    double r23 = 1.0 / 8388608.0;
    const char *idx = qdq_rescale_n(c, Wn, I32, CTOSA_DTYPE_INT8, 2, s1, 1, &r23, 0, -128, false, false);
    int8_t tab[256];
    for (int i = 0; i < 256; i++) {
        double av = i < 64 ? 0.5 : (double)i / 128.0; /* RESCALE rounds: bin i is centred on i */
        tab[i] = (int8_t)lround(64.0 / sqrt(av));
    }
    const char *seed = table8(c, idx, 2, s1, tab);
    /* Q6 -> Q29 by a shift (a RESCALE by 2^23 would need shift 7, which
     * limits its input to +-2^6) */
    const char *r = qdq_rescale_n(c, seed, CTOSA_DTYPE_INT8, I32, 2, s1, 1, &one, 0, 0, false, false);
    r = shift_op(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, r, lw_scalar(c, I32, 2, 23.0), 2, s1, false);
    const char *three = lw_scalar(c, I32, 2, 3.0 * 536870912.0);
    for (int it = 0; it < 2; it++) {
        const char *t = mul_shift(c, r, r, 2, s1, 29);     /* r^2, Q29 */
        const char *ar2 = mul_shift(c, Wn, t, 2, s1, 30);  /* a r^2, Q29 (a = Wn / 2^30) */
        const char *v = lw_sub(c, three, ar2, I32, 2, s1); /* 3 - a r^2 */
        r = mul_shift(c, r, v, 2, s1, 30);                 /* r (3 - a r^2) / 2 */
    }
    *k_out = k;
    return r;
}

static const char *max0(lower_ctx *c, const char *x, const int64_t *s1) {
    const char *z = lw_scalar(c, CTOSA_DTYPE_INT32, 2, 0.0), *y = lw_tensor(c, CTOSA_DTYPE_INT32, 2, s1);
    if (!x || !z || !y) return NULL;
    ctosa_attr mx;
    memset(&mx, 0, sizeof mx);
    mx.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in[2] = {x, z};
    return lw_op(c, CTOSA_OP_MAXIMUM, 2, in, 1, &y, &mx) ? y : NULL;
}

static const char *intdiv(lower_ctx *c, const char *a, const char *b, const int64_t *sh) {
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT32, 2, sh);
    if (!a || !b || !y) return NULL;
    const char *in[2] = {a, b};
    return lw_op(c, CTOSA_OP_INTDIV, 2, in, 1, &y, NULL) ? y : NULL;
}

/* T = x_norm sqrt(N) 2^Q for the int8 carrier (x = X - z_x, int32). */
static const char *ln_norm8(lower_ctx *c, const char *x, const int64_t *s2, const int64_t *s1, int64_t N,
                            int Q, double ne) {
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    const char *S = lw_reduce(c, CTOSA_OP_REDUCE_SUM, x, I32, 2, s2, 1, NULL);
    const char *Nc = lw_scalar(c, I32, 2, (double)N);
    const char *m = intdiv(c, S, Nc, s1);
    const char *d = lw_sub(c, x, m, I32, 2, s2);
    const char *R = lw_sub(c, S, lw_mul(c, m, Nc, I32, 2, s1), I32, 2, s1);
    const char *V = lw_reduce(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, d, d, I32, 2, s2), I32, 2, s2, 1, NULL);
    const char *R2N = intdiv(c, lw_mul(c, R, R, I32, 2, s1), Nc, s1);
    const char *W = lw_add_scalar(c, lw_sub(c, V, R2N, I32, 2, s1), I32, 2, s1, ne);
    const char *Wp = lw_tensor(c, I32, 2, s1), *onec = lw_scalar(c, I32, 2, 1.0);
    if (!W || !Wp || !onec) return NULL;
    ctosa_attr mx;
    memset(&mx, 0, sizeof mx);
    mx.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in2[2] = {W, onec};
    if (!lw_op(c, CTOSA_OP_MAXIMUM, 2, in2, 1, &Wp, &mx)) return NULL;
    const char *k = NULL;
    const char *r = rsqrt_q29(c, Wp, s1, &k);
    /* r' = r >> (15 - k/2), rounded */
    const char *kh = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, k, onec, 2, s1, false);
    const char *sh = lw_sub(c, lw_scalar(c, I32, 2, 15.0), kh, I32, 2, s1);
    const char *rp = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, r, sh, 2, s1, true);
    const char *D = lw_sub(c, lw_mul(c, x, Nc, I32, 2, s2), S, I32, 2, s2);
    return mul_shift(c, D, rp, 2, s2, 29 - Q);
}

/* T = x_norm sqrt(N) 2^Q, Q = 30 - lg, for 16-bit values (x = X - z_x). */
static const char *ln_norm16(lower_ctx *c, const char *x, const int64_t *s2, const int64_t *s1, int64_t N,
                             int lg, double ne) {
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    const char *S = lw_reduce(c, CTOSA_OP_REDUCE_SUM, x, I32, 2, s2, 1, NULL);
    const char *Nc = lw_scalar(c, I32, 2, (double)N);
    const char *onec = lw_scalar(c, I32, 2, 1.0);
    const char *d = lw_sub(c, x, intdiv(c, S, Nc, s1), I32, 2, s2);
    /* the per-row shift j */
    const char *d8 = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, d, lw_scalar(c, I32, 2, 8.0), 2, s2, true);
    const char *V0 = lw_reduce(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, d8, d8, I32, 2, s2), I32, 2, s2, 1, NULL);
    V0 = lw_add_scalar(c, V0, I32, 2, s1, (double)((N + 3) / 4));
    const char *z = lw_unary(c, CTOSA_OP_CLZ, V0, I32, 2, s1, NULL);
    const char *j = lw_sub(c, lw_scalar(c, I32, 2, 21.0), z, I32, 2, s1);
    j = max0(c, shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, j, onec, 2, s1, false), s1);
    /* the variance of d >> j */
    const char *dj = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, d, j, 2, s2, true);
    const char *Sj = lw_reduce(c, CTOSA_OP_REDUCE_SUM, dj, I32, 2, s2, 1, NULL);
    const char *V = lw_reduce(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, dj, dj, I32, 2, s2), I32, 2, s2, 1, NULL);
    const char *W = lw_sub(c, V, intdiv(c, lw_mul(c, Sj, Sj, I32, 2, s1), Nc, s1), I32, 2, s1);
    const char *j2 = lw_add(c, j, j, I32, 2, s1);
    const char *nej = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, lw_scalar(c, I32, 2, ne), j2, 2, s1, true);
    const char *Wp = lw_tensor(c, I32, 2, s1);
    W = lw_add(c, W, nej, I32, 2, s1);
    if (!W || !Wp) return NULL;
    ctosa_attr mx;
    memset(&mx, 0, sizeof mx);
    mx.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in2[2] = {W, onec};
    if (!lw_op(c, CTOSA_OP_MAXIMUM, 2, in2, 1, &Wp, &mx)) return NULL;
    const char *k = NULL;
    const char *r = rsqrt_q29(c, Wp, s1, &k);
    const char *D = lw_sub(c, lw_mul(c, x, Nc, I32, 2, s2), S, I32, 2, s2);
    const char *P = mul_shift(c, D, r, 2, s2, 16 + lg);
    /* T = P 2^(2 - j + k/2): left by max(0, k/2 + 2 - j), right by max(0, j - k/2 - 2) */
    const char *kh = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, k, onec, 2, s1, false);
    const char *L = lw_sub(c, lw_add_scalar(c, kh, I32, 2, s1, 2.0), j, I32, 2, s1);
    const char *Rr = lw_sub(c, j, lw_add_scalar(c, kh, I32, 2, s1, 2.0), I32, 2, s1);
    P = shift_op(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, P, max0(c, L, s1), 2, s2, false);
    return shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, P, max0(c, Rr, s1), 2, s2, true);
}

lower_status qdq_layernorm(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k][0])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "quantized LayerNormalization: Mean / InvStdDev outputs");
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    uint32_t rank = a.rank;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), rank, "axis", &axis)) return LOWER_REJECT;
    int64_t N = 1, outer = 1;
    for (uint32_t i = 0; i < rank; i++) {
        if ((int32_t)i < axis) outer *= a.shape[i];
        else N *= a.shape[i];
    }
    if (N < 2 || N > 8192)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized LayerNormalization over %lld elements (2 to 8192 "
                         "keep the integer variance inside int32)",
                         (long long)N);
    const double *gam = NULL, *bet = NULL;
    int64_t ng = lw_const_f64(c, 1, &gam);
    if (ng != N && ng != 1)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, 1) ? n->inputs[1] : NULL,
                         "quantized LayerNormalization: Scale must be a constant of %lld values",
                         (long long)N);
    int64_t nb = 0;
    if (lw_has_input(c, 2)) {
        nb = lw_const_f64(c, 2, &bet);
        if (nb != N && nb != 1)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, n->inputs[2],
                             "quantized LayerNormalization: B must be a constant of %lld values",
                             (long long)N);
    }
    if (!qdq_out(c, rank, &o)) return LOWER_REJECT;
    bool wide = a.t == CTOSA_DTYPE_INT16 || o.t == CTOSA_DTYPE_INT16;
    if ((a.t == CTOSA_DTYPE_INT16 && a.zp != 0) || (o.t == CTOSA_DTYPE_INT16 && o.zp != 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized LayerNormalization: int16 zero point (TOSA needs "
                         "0)");
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    int64_t s2[2] = {outer, N}, s1[2] = {outer, 1};
    double one = 1.0;
    const char *x = lw_reshape_if(c, a.x, a.t, rank, a.shape, 2, s2);
    x = qdq_rescale_n(c, x, a.t, I32, 2, s2, 1, &one, a.zp, 0, false, false);
    LW_TRY(x);
    int lg = 0;
    while ((INT64_C(1) << lg) < N) lg++;
    int Q = 30 - lg;
    double ne = nearbyint((double)N * eps / (a.s * a.s));
    if (ne > 1073741823.0) ne = 1073741823.0;
    const char *T = wide ? ln_norm16(c, x, s2, s1, N, lg, ne) : ln_norm8(c, x, s2, s1, N, Q, ne);
    LW_TRY(T);
    /* gamma, beta per element of the normalised axis */
    double *ratio = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    double *sign = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    double *bq = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    if (!ratio || !sign || !bq) return lw_failed(c);
    /* G: |gamma| sqrt(N) + |beta| (the largest |y|) times 2^G / s_y stays
     * below 2^30 */
    double big = 0;
    for (int64_t j = 0; j < N; j++) {
        double v = fabs(gam[ng > 1 ? j : 0]) * sqrt((double)N) + (bet ? fabs(bet[nb > 1 ? j : 0]) : 0.0);
        if (v > big) big = v;
    }
    int G = 8;
    while (G > 0 && big / o.s * ldexp(1.0, G) >= 1073741824.0) G--;
    if (big / o.s * ldexp(1.0, G) >= 1073741824.0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized LayerNormalization: Scale / B of up to %g against "
                         "an output scale of %g leave int32",
                         big, o.s);
    bool neg = false;
    double base = ldexp(1.0, G) / (o.s * sqrt((double)N) * ldexp(1.0, Q));
    for (int64_t j = 0; j < N; j++) {
        double gj = gam[ng > 1 ? j : 0];
        sign[j] = gj < 0 ? -1 : 1;
        neg |= gj < 0;
        ratio[j] = fabs(gj) * base;
        bq[j] = bet ? nearbyint(bet[nb > 1 ? j : 0] * ldexp(1.0, G) / o.s) : 0;
    }
    int64_t ns[2] = {1, N};
    if (neg) T = lw_mul(c, T, lw_const_from_f64(c, I32, 2, ns, sign), I32, 2, s2);
    const char *Y = qdq_rescale_n(c, T, I32, I32, 2, s2, N, ratio, 0, 0, false, false);
    if (bet) Y = lw_add(c, Y, lw_const_from_f64(c, I32, 2, ns, bq), I32, 2, s2);
    double rg = ldexp(1.0, -G);
    Y = qdq_rescale_n(c, Y, I32, o.t, 2, s2, 1, &rg, 0, o.zp, false, false);
    Y = lw_reshape_if(c, Y, o.t, 2, s2, rank, a.shape);
    LW_TRY(Y);
    return qdq_finish(c, Y, &o, rank, a.shape);
}
