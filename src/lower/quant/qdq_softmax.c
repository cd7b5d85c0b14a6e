/* qdq_softmax.c - int8 Softmax decomposed into integer TOSA (PRO-INT
 * only: no int16 TABLE, no float), and LayerNormalization the same way.
 *
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

lower_status qdq_softmax(lower_ctx *c) {
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    if (a.t != CTOSA_DTYPE_INT8)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "quantized Softmax: int8 / uint8 input only");
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
 * int8 LayerNormalization over the last dimensions (from `axis`), viewed
 * as [outer, N], PRO-INT only. With x_i = X - z_x in int32:
 *   S = sum x_i; m = INTDIV(S, N); d_i = x_i - m; R = S - N m
 *   W = sum d_i^2 - INTDIV(R^2, N)          (= N var exactly, to < 1)
 *   W' = max(W + round(N eps / s_x^2), 1)  (= N (var + eps) in steps^2)
 *   D_i = N x_i - S                         (= N (x_i - mean), exact)
 * rsqrt(W') in fixed point: CLZ gives an even shift k with
 * W' << k in [2^29, 2^31); a = (W' << k) / 2^30 in [0.5, 2); a 256-entry
 * int8 TABLE indexed by the top 8 bits seeds 1/sqrt(a) in Q6 (about 1%),
 * two Newton steps r <- r (3 - a r^2) / 2 with int32 MUL (64-bit products,
 * rounding shifts) bring it to Q29 (< 1e-7); then
 * rsqrt(W') = r 2^(k/2 - 15), applied as a rounding right shift of r by
 * 15 - k/2 (at least 13 significant bits remain).
 *   T_i = D_i r' >> (29 - Q)  = x_norm_i sqrt(N) 2^Q, |T| <= N 2^Q < 2^31
 * then per element of the normalised axis: RESCALE by
 * |gamma_j| 2^8 / (s_y sqrt(N) 2^Q) (sign by MUL), ADD beta_j 2^8 / s_y,
 * RESCALE by 2^-8 to the output. N <= 8192 keeps sum d^2 inside int32. */

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

lower_status qdq_layernorm(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k][0])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "quantized LayerNormalization: Mean / InvStdDev outputs");
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    if (a.t != CTOSA_DTYPE_INT8)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                         "quantized LayerNormalization: int8 / uint8 input only");
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
    double eps = lw_attr_float(c, "epsilon", 1e-5f);
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    int64_t s2[2] = {outer, N}, s1[2] = {outer, 1};
    double one = 1.0;
    const char *x = lw_reshape_if(c, a.x, a.t, rank, a.shape, 2, s2);
    x = qdq_rescale_n(c, x, a.t, I32, 2, s2, 1, &one, a.zp, 0, false, false);
    LW_TRY(x);
    const char *S = lw_reduce(c, CTOSA_OP_REDUCE_SUM, x, I32, 2, s2, 1, NULL);
    const char *Nc = lw_scalar(c, I32, 2, (double)N);
    const char *m = lw_tensor(c, I32, 2, s1);
    LW_TRY(S && Nc && m);
    const char *in2[2] = {S, Nc};
    LW_TRY(lw_op(c, CTOSA_OP_INTDIV, 2, in2, 1, &m, NULL));
    const char *d = lw_sub(c, x, m, I32, 2, s2);
    const char *R = lw_sub(c, S, lw_mul(c, m, Nc, I32, 2, s1), I32, 2, s1);
    const char *V = lw_reduce(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, d, d, I32, 2, s2), I32, 2, s2, 1, NULL);
    const char *R2 = lw_mul(c, R, R, I32, 2, s1);
    const char *R2N = lw_tensor(c, I32, 2, s1);
    LW_TRY(V && R2 && R2N);
    in2[0] = R2;
    in2[1] = Nc;
    LW_TRY(lw_op(c, CTOSA_OP_INTDIV, 2, in2, 1, &R2N, NULL));
    double ne = nearbyint((double)N * eps / (a.s * a.s));
    if (ne > 1073741823.0) ne = 1073741823.0;
    const char *W = lw_add_scalar(c, lw_sub(c, V, R2N, I32, 2, s1), I32, 2, s1, ne);
    const char *Wp = lw_tensor(c, I32, 2, s1);
    ctosa_attr mx;
    memset(&mx, 0, sizeof mx);
    mx.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *onec = lw_scalar(c, I32, 2, 1.0);
    LW_TRY(W && Wp && onec);
    in2[0] = W;
    in2[1] = onec;
    LW_TRY(lw_op(c, CTOSA_OP_MAXIMUM, 2, in2, 1, &Wp, &mx));
    /* even normalising shift k = (clz - 1) & ~1 */
    const char *z = lw_unary(c, CTOSA_OP_CLZ, Wp, I32, 2, s1, NULL);
    const char *k = shift_op(c, CTOSA_OP_BITWISE_AND, lw_sub(c, z, onec, I32, 2, s1),
                             lw_scalar(c, I32, 2, -2.0), 2, s1, false);
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
    /* r' = r >> (15 - k/2), rounded */
    const char *kh = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, k, onec, 2, s1, false);
    const char *sh = lw_sub(c, lw_scalar(c, I32, 2, 15.0), kh, I32, 2, s1);
    const char *rp = shift_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, r, sh, 2, s1, true);
    /* T = D r' >> (29 - Q) */
    int lg = 0;
    while ((INT64_C(1) << lg) < N) lg++;
    int Q = 30 - lg;
    if (Q > 29) Q = 29;
    const char *D = lw_sub(c, lw_mul(c, x, Nc, I32, 2, s2), S, I32, 2, s2);
    const char *T = mul_shift(c, D, rp, 2, s2, 29 - Q);
    LW_TRY(T);
    /* gamma, beta per element of the normalised axis */
    double *ratio = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    double *sign = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    double *bq = arena_alloc(lw_arena(c), (size_t)N * sizeof(double) + 8);
    if (!ratio || !sign || !bq) return lw_failed(c);
    bool neg = false;
    double base = 256.0 / (o.s * sqrt((double)N) * ldexp(1.0, Q));
    for (int64_t j = 0; j < N; j++) {
        double gj = gam[ng > 1 ? j : 0];
        sign[j] = gj < 0 ? -1 : 1;
        neg |= gj < 0;
        ratio[j] = fabs(gj) * base;
        bq[j] = bet ? nearbyint(bet[nb > 1 ? j : 0] * 256.0 / o.s) : 0;
    }
    int64_t ns[2] = {1, N};
    if (neg) T = lw_mul(c, T, lw_const_from_f64(c, I32, 2, ns, sign), I32, 2, s2);
    const char *Y = qdq_rescale_n(c, T, I32, I32, 2, s2, N, ratio, 0, 0, false, false);
    if (bet) Y = lw_add(c, Y, lw_const_from_f64(c, I32, 2, ns, bq), I32, 2, s2);
    double r8 = 1.0 / 256.0;
    Y = qdq_rescale_n(c, Y, I32, o.t, 2, s2, 1, &r8, 0, o.zp, false, false);
    Y = lw_reshape_if(c, Y, o.t, 2, s2, rank, a.shape);
    LW_TRY(Y);
    return qdq_finish(c, Y, &o, rank, a.shape);
}
