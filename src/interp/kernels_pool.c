/* kernels_pool.c - AVG_POOL2D, MAX_POOL2D, ARGMAX.
 *
 * Pooling runs over output rows (n, oy) in parallel; the channel loop is
 * innermost and contiguous (NHWC). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"
#include "util/floatfmt.h"

typedef struct pgeom {
    int64_t N, IH, IW, C, OH, OW, KY, KX, SY, SX, PT, PB, PL, PR;
} pgeom;

/* Shared attribute and shape checks of both pools. */
static ctosa_error *p_geom(const interp_op *o, const itensor *in, const itensor *out, pgeom *g) {
    const ctosa_attr *a = &o->op->attr;
    if (a->kernel.n != 2 || a->stride.n != 2 || a->pad.n != 4 || !a->kernel.v || !a->stride.v || !a->pad.v)
        return interp_fail(o, "kernel, stride and pad need 2, 2 and 4 values");
    if (in->rank != 4 || out->rank != 4) return interp_fail(o, "input and output must have rank 4");
    if (im_dims(in, 0, 4) != in->count || im_dims(out, 0, 4) != out->count)
        return interp_fail(o, "tensor element counts do not match their shapes");
    *g = (pgeom){in->shape[0],  in->shape[1],   in->shape[2],   in->shape[3],   out->shape[1],
                 out->shape[2], a->kernel.v[0], a->kernel.v[1], a->stride.v[0], a->stride.v[1],
                 a->pad.v[0],   a->pad.v[1],    a->pad.v[2],    a->pad.v[3]};
    if (out->shape[0] != g->N || out->shape[3] != g->C)
        return interp_fail(o, "output batch/channels [%lld, %lld] differ from input [%lld, %lld]",
                           (long long)out->shape[0], (long long)out->shape[3], (long long)g->N,
                           (long long)g->C);
    if (g->KY < 1 || g->KX < 1) return interp_fail(o, "kernel must be >= 1");
    if (g->SY < 1 || g->SX < 1) return interp_fail(o, "stride must be >= 1");
    if (g->PT < 0 || g->PB < 0 || g->PL < 0 || g->PR < 0) return interp_fail(o, "negative pad");
    if (g->PR >= g->KX || g->PL >= g->KX || g->PT >= g->KY || g->PB >= g->KY)
        return interp_fail(o, "pad must be smaller than the kernel");
    int64_t nh = g->IH + g->PT + g->PB - g->KY, nw = g->IW + g->PL + g->PR - g->KX;
    if (nh < 0 || nh % g->SY || nh / g->SY + 1 != g->OH)
        return interp_fail(o, "output height %lld does not match (IH + pads - kernel) / stride + 1 (exact)",
                           (long long)g->OH);
    if (nw < 0 || nw % g->SX || nw / g->SX + 1 != g->OW)
        return interp_fail(o, "output width %lld does not match (IW + pads - kernel) / stride + 1 (exact)",
                           (long long)g->OW);
    return NULL;
}

typedef struct pjob {
    const pgeom *g;
    const itensor *in;
    itensor *out;
    ctosa_dtype acc_t;
    int64_t izp, ozp;
    bool ignore_nan;
    int failed; /* REQUIRE violation seen by a worker */
} pjob;

/* Runs fn over output rows; parallel when rows x kernel taps x channels is
 * large enough to be worth splitting (interp_par_worth). */
static void p_par(const interp_op *o, const pgeom *g, size_t n, void (*fn)(void *, size_t, size_t),
                  void *arg) {
    double work = (double)n * (double)g->OW * (double)g->C * (double)(g->KY * g->KX);
    if (interp_par_worth(o->ctx, work * INTERP_PAR_ELEM)) interp_parallel_for(o->ctx, n, fn, arg);
    else fn(arg, 0, n);
}

/* ------------------------------------------------------------ AVG_POOL2D */

static inline IM_INLINE void avg_rows_impl(void *arg, size_t begin, size_t end) {
    pjob *j = arg;
    const pgeom *g = j->g;
    const int64_t C = g->C;
    bool isf = ctosa_dtype_is_float(j->in->dtype);
    ctosa_dtype t = j->in->dtype;
    double *accd = malloc((size_t)(C ? C : 1) * sizeof(double));
    int64_t *acci = malloc((size_t)(C ? C : 1) * sizeof(int64_t));
    if (!accd || !acci) {
        __atomic_store_n(&j->failed, 2, __ATOMIC_RELAXED);
        free(accd);
        free(acci);
        return;
    }
    int64_t lo, hi;
    im_range_s(t, &lo, &hi);
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        for (int64_t ox = 0; ox < g->OW; ox++) {
            int64_t count = 0;
            if (isf) memset(accd, 0, (size_t)C * sizeof(double));
            else memset(acci, 0, (size_t)C * sizeof(int64_t));
            for (int64_t ky = 0; ky < g->KY; ky++) {
                int64_t y = oy * g->SY - g->PT + ky;
                if (y < 0 || y >= g->IH) continue;
                for (int64_t kx = 0; kx < g->KX; kx++) {
                    int64_t x = ox * g->SX - g->PL + kx;
                    if (x < 0 || x >= g->IW) continue;
                    count++;
                    size_t base = (size_t)(((n * g->IH + y) * g->IW + x) * C);
                    if (!isf) {
                        for (int64_t c = 0; c < C; c++)
                            acci[c] += im_load_i(t, j->in->data, base + c) - j->izp;
                    } else if (j->acc_t == CTOSA_DTYPE_FP32) {
                        const float *s = (const float *)j->in->data + base;
                        for (int64_t c = 0; c < C; c++) accd[c] = (float)(accd[c] + s[c]);
                    } else {
                        const float *s = (const float *)j->in->data + base;
                        for (int64_t c = 0; c < C; c++)
                            accd[c] = ff_round_to_double(j->acc_t, accd[c] + s[c]);
                    }
                }
            }
            size_t obase = (size_t)(((n * g->OH + oy) * g->OW + ox) * C);
            if (count == 0 && !isf) {
                /* only possible with an empty input: reciprocal_scale(0) is
                 * a REQUIRE failure */
                __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
                continue;
            }
            if (isf) {
                /* count 0 (empty input) gives 0/0 = NaN, as the pseudocode */
                float *d = (float *)j->out->data + obase;
                for (int64_t c = 0; c < C; c++) {
                    double q = j->acc_t == CTOSA_DTYPE_FP32
                                   ? (double)(float)(accd[c] / (double)count)
                                   : ff_round_to_double(j->acc_t, accd[c] / (double)count);
                    d[c] = ff_round_to_double(t, q);
                }
            } else {
                int32_t mult;
                int shift;
                im_reciprocal_scale((uint32_t)count, &mult, &shift);
                for (int64_t c = 0; c < C; c++) {
                    bool ok = acci[c] >= INT32_MIN && acci[c] <= INT32_MAX;
                    int64_t v = im_apply_scale_32((int32_t)acci[c], mult, shift, false, &ok);
                    if (!ok) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
                    v = im_clip(v + j->ozp, lo, hi);
                    im_store_i(t, j->out->data, obase + c, v);
                }
            }
        }
    }
    free(accd);
    free(acci);
}
IM_MULTIVERSION(avg_rows, avg_rows_impl)

ctosa_error *interp_k_AVG_POOL2D(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 3, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    pgeom g;
    if ((e = p_geom(o, in, out, &g))) return e;
    ctosa_dtype t = in->dtype, acc = o->op->attr.acc_type;
    if (out->dtype != t) return interp_fail(o, "output type differs from input type");
    int64_t izp = 0, ozp = 0;
    bool isf = ctosa_dtype_is_float(t);
    if (isf) {
        for (int i = 1; i <= 2; i++) {
            const itensor *z = o->in[i];
            if (z->count != 1)
                return interp_fail(o, "%s must be a one-element tensor", i == 1 ? "input_zp" : "output_zp");
            if (ctosa_dtype_is_float(z->dtype) ? ((const float *)z->data)[0] != 0.0f
                                               : im_load_i(z->dtype, z->data, 0) != 0)
                return interp_fail(o, "%s must be 0 for %s", i == 1 ? "input_zp" : "output_zp",
                                   ctosa_dtype_short(t));
        }
        if (acc != CTOSA_DTYPE_FP32 &&
            !(acc == CTOSA_DTYPE_FP16 &&
              (t == CTOSA_DTYPE_FP16 || t == CTOSA_DTYPE_FP8E4M3 || t == CTOSA_DTYPE_FP8E5M2)))
            return interp_fail(o, "acc_type %s is not valid for %s",
                               ctosa_dtype_short(acc) ? ctosa_dtype_short(acc) : "?", ctosa_dtype_short(t));
    } else if (t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16) {
        if (!im_scalar_i(o->in[1], &izp) || !im_scalar_i(o->in[2], &ozp))
            return interp_fail(o, "input_zp and output_zp must be one-element integer tensors");
        if (t != CTOSA_DTYPE_INT8 && (izp != 0 || ozp != 0))
            return interp_fail(o, "zero points must be 0 for int16");
        if (acc != CTOSA_DTYPE_INT32)
            return interp_fail(o, "acc_type must be int32 for %s", ctosa_dtype_short(t));
    } else {
        return interp_fail(o, "AVG_POOL2D of %s is not supported", ctosa_dtype_short(t));
    }
    pjob j = {.g = &g, .in = in, .out = out, .acc_t = acc, .izp = izp, .ozp = ozp};
    p_par(o, &g, (size_t)(g.N * g.OH), avg_rows, &j);
    if (j.failed == 2) return interp_fail(o, "out of memory");
    if (j.failed) return interp_fail(o, "accumulator out of range (REQUIRE failed)");
    return NULL;
}

/* ------------------------------------------------------------ MAX_POOL2D */

static inline IM_INLINE void max_rows_impl(void *arg, size_t begin, size_t end) {
    pjob *j = arg;
    const pgeom *g = j->g;
    const int64_t C = g->C;
    ctosa_dtype t = j->in->dtype;
    bool isf = ctosa_dtype_is_float(t);
    const bool ignore_nan = j->ignore_nan;
    int64_t lo, hi;
    im_range_s(t, &lo, &hi);
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        for (int64_t ox = 0; ox < g->OW; ox++) {
            size_t obase = (size_t)(((n * g->OH + oy) * g->OW + ox) * C);
            float *df = (float *)j->out->data + obase;
            if (isf)
                for (int64_t c = 0; c < C; c++) df[c] = ignore_nan ? NAN : -INFINITY;
            else
                for (int64_t c = 0; c < C; c++) im_store_i(t, j->out->data, obase + c, lo);
            for (int64_t ky = 0; ky < g->KY; ky++) {
                int64_t y = oy * g->SY - g->PT + ky;
                if (y < 0 || y >= g->IH) continue;
                for (int64_t kx = 0; kx < g->KX; kx++) {
                    int64_t x = ox * g->SX - g->PL + kx;
                    if (x < 0 || x >= g->IW) continue;
                    size_t base = (size_t)(((n * g->IH + y) * g->IW + x) * C);
                    if (isf) {
                        /* branch-free selects (vectorised), value for value
                         * the pseudocode's: IGNORE keeps the non-NaN
                         * operand, PROPAGATE turns any NaN into NaN */
                        const float *s = (const float *)j->in->data + base;
                        if (ignore_nan) {
                            for (int64_t c = 0; c < C; c++) {
                                float a = df[c], v = s[c];
                                df[c] = a >= v || v != v ? a : v;
                            }
                        } else {
                            for (int64_t c = 0; c < C; c++) {
                                float a = df[c], v = s[c], m = a >= v ? a : v;
                                df[c] = a != a || v != v ? NAN : m;
                            }
                        }
                    } else if (t == CTOSA_DTYPE_INT8) {
                        const int8_t *s = (const int8_t *)j->in->data + base;
                        int8_t *d = (int8_t *)j->out->data + obase;
                        for (int64_t c = 0; c < C; c++) d[c] = d[c] >= s[c] ? d[c] : s[c];
                    } else {
                        const int16_t *s = (const int16_t *)j->in->data + base;
                        int16_t *d = (int16_t *)j->out->data + obase;
                        for (int64_t c = 0; c < C; c++) d[c] = d[c] >= s[c] ? d[c] : s[c];
                    }
                }
            }
        }
    }
}
IM_MULTIVERSION(max_rows, max_rows_impl)

ctosa_error *interp_k_MAX_POOL2D(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    pgeom g;
    if ((e = p_geom(o, in, out, &g))) return e;
    ctosa_dtype t = in->dtype;
    if (out->dtype != t) return interp_fail(o, "output type differs from input type");
    if (!ctosa_dtype_is_float(t) && t != CTOSA_DTYPE_INT8 && t != CTOSA_DTYPE_INT16)
        return interp_fail(o, "MAX_POOL2D of %s is not supported", ctosa_dtype_short(t));
    pjob j = {.g = &g, .in = in, .out = out, .ignore_nan = o->op->attr.nan_mode == CTOSA_NAN_IGNORE};
    p_par(o, &g, (size_t)(g.N * g.OH), max_rows, &j);
    return NULL;
}

/* ---------------------------------------------------------------- ARGMAX */

ctosa_error *interp_k_ARGMAX(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    int32_t axis = o->op->attr.axis;
    if (in->rank < 1 || axis < 0 || (uint32_t)axis >= in->rank)
        return interp_fail(o, "axis %d is outside 0..%u", axis, in->rank ? in->rank - 1 : 0);
    if (out->rank != in->rank - 1) return interp_fail(o, "output rank must be input rank - 1");
    for (uint32_t i = 0, k = 0; i < in->rank; i++) {
        if ((int32_t)i == axis) continue;
        if (out->shape[k] != in->shape[i])
            return interp_fail(o, "output dimension %u differs from input dimension %u", k, i);
        k++;
    }
    if (im_dims(in, 0, in->rank) != in->count || im_dims(out, 0, out->rank) != out->count)
        return interp_fail(o, "tensor element counts do not match their shapes");
    ctosa_dtype t = in->dtype, to = out->dtype;
    /* i32 and i64 inputs: TOSA 1.1 EXT-INT64 rows (i64 output). */
    if (!ctosa_dtype_is_float(t) && t != CTOSA_DTYPE_INT8 && t != CTOSA_DTYPE_INT16 &&
        t != CTOSA_DTYPE_INT32 && t != CTOSA_DTYPE_INT64)
        return interp_fail(o, "ARGMAX of %s is not supported", ctosa_dtype_short(t));
    if (to != CTOSA_DTYPE_INT32 && to != CTOSA_DTYPE_INT64) return interp_fail(o, "output must be int32");
    uint64_t left = im_dims(in, 0, (uint32_t)axis), len = (uint64_t)in->shape[axis];
    uint64_t right = im_dims(in, (uint32_t)axis + 1, in->rank);
    int64_t omax = to == CTOSA_DTYPE_INT32 ? INT32_MAX : INT64_MAX;
    if (len > 0 && (int64_t)(len - 1) > omax)
        return interp_fail(o, "axis length does not fit the output type");
    bool ignore = o->op->attr.nan_mode == CTOSA_NAN_IGNORE;
    bool isf = ctosa_dtype_is_float(t);
    int64_t lo, hi;
    im_range_s(t, &lo, &hi);
    for (uint64_t l = 0; l < left; l++)
        for (uint64_t r = 0; r < right; r++) {
            int64_t best = 0;
            if (isf) {
                const float *s = in->data;
                float mv = ignore ? NAN : -INFINITY;
                for (uint64_t i = 0; i < len; i++) {
                    float v = s[(l * len + i) * right + r], res;
                    if (isnan(v) || isnan(mv)) res = ignore ? (isnan(v) ? mv : v) : NAN;
                    else res = v >= mv ? v : mv;
                    /* update on a different value, except NaN -> NaN */
                    bool same = (isnan(res) && isnan(mv)) || res == mv;
                    if (!same) {
                        mv = res;
                        best = (int64_t)i;
                    }
                }
            } else {
                int64_t mv = lo;
                for (uint64_t i = 0; i < len; i++) {
                    int64_t v = im_load_i(t, in->data, (l * len + i) * right + r);
                    if (v > mv) {
                        mv = v;
                        best = (int64_t)i;
                    }
                }
            }
            im_store_i(to, out->data, l * right + r, best);
        }
    return NULL;
}
