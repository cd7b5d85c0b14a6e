/* qdq_ops16.c - elementwise Add / Sub / Mul on int8, uint8 and int16
 * (a16w8, EXT-INT16) operands, and MatMul of two runtime quantized
 * operands.
 *
 * Add / Sub: both operands are RESCALEd to int32 at a common scale
 * s_c = 2 max(s_a, s_b) / 2^S, added or subtracted exactly, and RESCALEd
 * once to the output. S = 20 for 8-bit operands (as the int8 Add head) and
 * S = 15 when one is int16: |x| <= 2^15 times a ratio of at most 2^(S-1)
 * keeps the sum inside int32.
 * Mul: (a - zp_a)(b - zp_b) in int32 (at most 2^30 for int16), one RESCALE
 * by s_a s_b / s_y.
 * MatMul of two activations: MATMUL with both zero points (int8 -> int32;
 * int16 -> int48, EXT-INT16), one RESCALE by s_a s_b / s_y (int48: an exact
 * shift into int32 first, so the ratio keeps its 32-bit multiplier).
 * int16 convolution inputs without EXT-INT16: two int8 halves. */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

static lower_status addsubmul(lower_ctx *c, int kind) {
    const char *op = lw_node(c)->op_type;
    qx_in a, b;
    qx_out o;
    if (!qdq_in(c, 0, &a) || !qdq_in(c, 1, &b)) return LOWER_REJECT;
    uint32_t r;
    int64_t os[LOWER_MAX_RANK], as[LOWER_MAX_RANK], bs[LOWER_MAX_RANK];
    if (!qdq_bcast(&a, &b, &r, os, as, bs))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: shapes do not broadcast", op);
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    if (o.t == CTOSA_DTYPE_INT16 && o.zp != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: int16 output zero point %lld (TOSA needs 0)", op, (long long)o.zp);
    const ctosa_dtype I32 = CTOSA_DTYPE_INT32;
    const char *x, *y, *z;
    double ra, rb, ro;
    if (kind == 2) {
        ra = rb = 1.0;
        ro = a.s * b.s / o.s;
    } else {
        bool wide = a.t == CTOSA_DTYPE_INT16 || b.t == CTOSA_DTYPE_INT16;
        double sm = 2.0 * (a.s > b.s ? a.s : b.s) / (wide ? 32768.0 : 1048576.0);
        ra = a.s / sm;
        rb = b.s / sm;
        ro = sm / o.s;
    }
    x = qdq_rescale_n(c, a.x, a.t, I32, a.rank, a.shape, 1, &ra, a.zp, 0, false, false);
    y = qdq_rescale_n(c, b.x, b.t, I32, b.rank, b.shape, 1, &rb, b.zp, 0, false, false);
    x = lw_reshape_if(c, x, I32, a.rank, a.shape, r, as);
    y = lw_reshape_if(c, y, I32, b.rank, b.shape, r, bs);
    LW_TRY(x && y);
    z = kind == 0   ? lw_add(c, x, y, I32, r, os)
        : kind == 1 ? lw_sub(c, x, y, I32, r, os)
                    : lw_mul(c, x, y, I32, r, os);
    z = qdq_rescale_ewise(c, z, o.t, r, os, ro, o.zp, kind == 2, ra, qdq_operand_bound(a.t, a.zp), rb,
                          qdq_operand_bound(b.t, b.zp));
    LW_TRY(z);
    return qdq_finish(c, z, &o, r, os);
}

lower_status qdq_add16(lower_ctx *c) { return addsubmul(c, 0); }
lower_status qdq_sub(lower_ctx *c) { return addsubmul(c, 1); }
lower_status qdq_mul16(lower_ctx *c) { return addsubmul(c, 2); }

lower_status qdq_matmul_rt(lower_ctx *c) {
    qx_in a, b;
    qx_out o;
    if (!qdq_in(c, 0, &a) || !qdq_in(c, 1, &b)) return LOWER_REJECT;
    if (a.rank < 2 || b.rank < 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized MatMul: 1-D operands are not handled");
    if (a.t != b.t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "quantized MatMul of a %s and a %s activation",
                         ctosa_dtype_short(a.t), ctosa_dtype_short(b.t));
    int64_t M = a.shape[a.rank - 2], K = a.shape[a.rank - 1], K2 = b.shape[b.rank - 2],
            N = b.shape[b.rank - 1];
    if (K != K2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized MatMul: inner sizes %lld and %lld differ", (long long)K, (long long)K2);
    /* batch dimensions must be equal (after leading ones): MATMUL has one batch axis */
    uint32_t r = a.rank > b.rank ? a.rank : b.rank;
    int64_t bb = 1, os[LOWER_MAX_RANK];
    for (uint32_t i = 0; i + 2 < r; i++) {
        int64_t da = i + a.rank >= r ? a.shape[i + a.rank - r] : 1;
        int64_t db = i + b.rank >= r ? b.shape[i + b.rank - r] : 1;
        if (da != db)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "quantized MatMul: broadcast batch dimensions (%lld vs %lld)", (long long)da,
                             (long long)db);
        os[i] = da;
        bb *= da;
    }
    os[r - 2] = M;
    os[r - 1] = N;
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    if (o.t == CTOSA_DTYPE_INT16 && o.zp != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized MatMul: int16 output zero point %lld (TOSA needs 0)", (long long)o.zp);
    ctosa_dtype acc = a.t == CTOSA_DTYPE_INT16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    int64_t s3a[3] = {bb, M, K}, s3b[3] = {bb, K, N}, s3o[3] = {bb, M, N};
    const char *x = lw_reshape_if(c, a.x, a.t, a.rank, a.shape, 3, s3a);
    const char *y = lw_reshape_if(c, b.x, b.t, b.rank, b.shape, 3, s3b);
    const char *az = lw_zero_point(c, a.t, a.zp), *bz = lw_zero_point(c, b.t, b.zp);
    const char *z = lw_tensor(c, acc, 3, s3o);
    LW_TRY(x && y && az && bz && z);
    const char *in[4] = {x, y, az, bz};
    LW_TRY(lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &z, NULL));
    double ro = a.s * b.s / o.s;
    if (acc == CTOSA_DTYPE_INT48) {
        /* RESCALE from int48 has only 16-bit multipliers (about 2^-15
         * relative: a step on large outputs); an exact shift by 2^-t into
         * int32 first (|acc| <= K 2^32, the dropped bits are far below an
         * output step), then the 32-bit multiplier */
        int t = 0;
        while (t < 40 && (double)K * 4294967296.0 / ldexp(1.0, t) >= 1073741824.0) t++;
        double rt = ldexp(1.0, -t);
        z = qdq_rescale_n(c, z, acc, CTOSA_DTYPE_INT32, 3, s3o, 1, &rt, 0, 0, false, false);
        acc = CTOSA_DTYPE_INT32;
        ro = ldexp(ro, t);
    }
    z = qdq_rescale_n(c, z, acc, o.t, 3, s3o, 1, &ro, 0, o.zp, false, false);
    z = lw_reshape_if(c, z, o.t, 3, s3o, r, os);
    LW_TRY(z);
    return qdq_finish(c, z, &o, r, os);
}

/* An int16 activation (zero point 0) as two int8 halves, for a spec
 * without EXT-INT16 (no 16x8 convolution): x = 256 hi + lo with hi = x >> 8
 * (ARITHMETIC_RIGHT_SHIFT, CAST to int8: -128..127) and lo = x & 255
 * (BITWISE_AND, RESCALE to int8 as lo - 128, read with zero point -128).
 * Two int8 convolutions then give the int16 one's accumulator exactly:
 * 256 acc(hi) + acc(lo), in int32 when the weights keep it there. */
bool qdq_split16(lower_ctx *c, const char *x, uint32_t rank, const int64_t *shape, const char **hi,
                 const char **lo) {
    const char *eight = lw_scalar(c, CTOSA_DTYPE_INT16, rank, 8.0),
               *mask = lw_scalar(c, CTOSA_DTYPE_INT16, rank, 255.0);
    const char *h16 = lw_tensor(c, CTOSA_DTYPE_INT16, rank, shape);
    if (!x || !eight || !mask || !h16) return false;
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    const char *in[2] = {x, eight};
    if (!lw_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, 2, in, 1, &h16, &at)) return false;
    *hi = lw_cast(c, h16, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8, rank, shape);
    const char *l16 = lw_binary(c, CTOSA_OP_BITWISE_AND, x, mask, CTOSA_DTYPE_INT16, rank, shape);
    *lo = qdq_rescale(c, l16, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8, rank, shape, 1.0, 0, -128, false, false);
    return *hi && *lo;
}

bool qdq_split16_fits(lower_ctx *c, const uint8_t *w, uint8_t off, int64_t M, int64_t per,
                      const double *bias) {
    /* |acc| <= |bias| + 32768 sum |w| per channel (and 256 acc(hi) no
     * more): inside int32, or the int16 convolution needs EXT-INT16 */
    for (int64_t m = 0; m < M; m++) {
        double l1 = 0;
        for (int64_t k = 0; k < per; k++) l1 += fabs((double)(int8_t)(uint8_t)(w[m * per + k] - off));
        if (fabs(bias[m]) + 32768.0 * l1 > 2147483647.0) {
            lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                      "quantized Conv: int16 input as two int8 halves: output channel %lld can reach %.0f, "
                      "beyond the int32 accumulator (a 16x8 convolution needs EXT-INT16)",
                      (long long)m, fabs(bias[m]) + 32768.0 * l1);
            return false;
        }
    }
    return true;
}
