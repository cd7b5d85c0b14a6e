/* qdq_table.c - int16 activations through TOSA TABLE (EXT-INT16).
 *
 * TOSA's int16 TABLE reads a 513-entry int16 table: for input v the index
 * is (v + 32768) >> 7 and the low 7 bits interpolate linearly between
 * entries idx and idx + 1; the int32 result carries 7 fractional bits
 * (base * 128 + (next - base) * frac). So entry j is the function at the
 * knot v_j = -32768 + 128 j (j = 512 is one past the int16 range, needed
 * only as the right end of the last segment).
 *
 * Building the table from the float function f, input scale s_x (TOSA
 * requires int16 zero point 0, so v_j means v_j * s_x):
 *   - f is clipped to what the output can represent, so saturation
 *     happens in the table (and interpolating between two saturated
 *     entries stays saturated);
 *   - the table's own scale t_s = max |f(knot or midpoint)| / 32767 uses
 *     all 16 bits (never coarser than needed), and one RESCALE of the int32
 *     result by t_s / (128 s_y) produces the output - one rounding;
 *   - each entry is moved by a quarter of the midpoint errors of its two
 *     segments (half of one segment's at the ends): a curved f is then
 *     wrong by about +-err/2 at knots and midpoints instead of 0 at knots
 *     and err at midpoints;
 *   - neighbouring entries may differ by at most an int16 (TABLE's
 *     REQUIRE); a steeper step is limited, which only matters for
 *     functions that jump by more than the whole int16 range within 128
 *     input steps.
 * The validator decides whether int16 TABLE exists (EXT-INT16): under a
 * spec without it the node falls back with the validator's reason. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

static double clipv(double v, double lo, double hi) {
    if (isnan(v)) return lo; /* log of 0 and below: the most negative value */
    return v < lo ? lo : v > hi ? hi : v;
}

bool qdq_table16_build(double (*f)(void *, double), void *arg, double sx, double lo_clip, double hi_clip,
                       int16_t *tab, double *ts) {
    double fk[513], fm[512], mx = 0;
    for (int j = 0; j <= 512; j++) {
        fk[j] = clipv(f(arg, (double)(-32768 + 128 * j) * sx), lo_clip, hi_clip);
        if (fabs(fk[j]) > mx) mx = fabs(fk[j]);
    }
    for (int j = 0; j < 512; j++) {
        fm[j] = clipv(f(arg, ((double)(-32768 + 128 * j) + 64.0) * sx), lo_clip, hi_clip);
        if (fabs(fm[j]) > mx) mx = fabs(fm[j]);
    }
    if (!isfinite(mx)) return false;
    double s = mx > 0 ? mx / 32767.0 : 1.0;
    double err[512];
    for (int j = 0; j < 512; j++) err[j] = ((fk[j] + fk[j + 1]) / 2 - fm[j]) / s;
    int32_t prev = 0;
    for (int j = 0; j <= 512; j++) {
        double corr = j == 0 ? err[0] / 2 : j == 512 ? err[511] / 2 : (err[j - 1] + err[j]) / 4;
        double v = nearbyint(fk[j] / s - corr);
        if (v < -32768) v = -32768;
        if (v > 32767) v = 32767;
        int32_t t = (int32_t)v;
        if (j > 0 && t - prev > 32767) t = prev + 32767;
        if (j > 0 && t - prev < -32768) t = prev - 32768;
        tab[j] = (int16_t)t;
        prev = t;
    }
    *ts = s;
    return true;
}

typedef struct act_arg {
    lower_ctx *c;
    const char *op;
} act_arg;

static double act_call(void *p, double x) {
    act_arg *a = p;
    double y = 0;
    qdq_act_fn(a->c, a->op, x, &y);
    return y;
}

lower_status qdq_table16(lower_ctx *c) {
    const char *op = lw_node(c)->op_type;
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a) || !qdq_out(c, a.rank, &o)) return LOWER_REJECT;
    act_arg arg = {c, op};
    return qdq_table16_of(c, &a, &o, act_call, &arg);
}

lower_status qdq_table16_of(lower_ctx *c, const qx_in *ap, const qx_out *op_, double (*fn)(void *, double),
                            void *fn_arg) {
    const char *op = lw_node(c)->op_type;
    qx_in a = *ap;
    qx_out o = *op_;
    if (o.t == CTOSA_DTYPE_INT16 && o.zp != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: int16 output zero point %lld (TOSA needs 0)", op, (long long)o.zp);
    const char *x = a.x;
    double sx = a.s;
    if (a.t == CTOSA_DTYPE_INT8) {
        /* int8 input, int16 output: widen exactly, (x - zp) * 2^k with the
         * largest k that keeps every x - zp (up to 255) inside int16 */
        int64_t span = llabs(-128 - a.zp) > llabs(127 - a.zp) ? llabs(-128 - a.zp) : llabs(127 - a.zp);
        int k = 8;
        while (k > 0 && (span << k) > 32767) k--;
        double r = ldexp(1.0, k);
        x = qdq_rescale_n(c, x, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, a.rank, a.shape, 1, &r, a.zp, 0, false,
                          false);
        sx = a.s / r;
        if (!x) return c->rejected ? LOWER_REJECT : lw_failed(c);
    }
    /* what the output can hold (clamp range of a fused activation too) */
    double lo = (double)(o.lo - o.zp) * o.s, hi = (double)(o.hi - o.zp) * o.s;
    int16_t tab[513];
    double ts;
    if (!qdq_table16_build(fn, fn_arg, sx, lo, hi, tab, &ts))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: the function is not finite on the input range", op);
    int64_t n = 513;
    uint8_t tb[513 * 2];
    for (int j = 0; j < 513; j++) wr_u16(tb + 2 * j, (uint16_t)tab[j]);
    const char *tc = lw_const(c, CTOSA_DTYPE_INT16, 1, &n, tb);
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT32, a.rank, a.shape);
    if (!tc || !y) return lw_failed(c);
    const char *in[2] = {x, tc};
    if (!lw_op(c, CTOSA_OP_TABLE, 2, in, 1, &y, NULL)) return lw_failed(c);
    double r = ts / (128.0 * o.s);
    const char *z =
        qdq_rescale_n(c, y, CTOSA_DTYPE_INT32, o.t, a.rank, a.shape, 1, &r, 0, o.zp, false, false);
    if (!z) return c->rejected ? LOWER_REJECT : lw_failed(c);
    return qdq_finish(c, z, &o, a.rank, a.shape);
}
