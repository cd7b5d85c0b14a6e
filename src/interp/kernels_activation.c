/* kernels_activation.c - CLAMP, ERF, SIGMOID, TANH, TABLE. */
#include <math.h>
#include <string.h>

#include "interp/int_math.h"
#include "interp/vec_math.h"
#include "util/floatfmt.h"

/* ----------------------------------------------------------------- CLAMP */

/* Decodes a CLAMP bound from its attribute bytes (the file encoding of the
 * input dtype, little-endian) into an int64 or a float. */
static ctosa_error *clamp_bound(const interp_op *o, const char *what, ctosa_bytes b, ctosa_dtype t,
                                int64_t *iv, float *fv) {
    int bytes = t == CTOSA_DTYPE_INT48 ? 6 : ctosa_dtype_bits(t) / 8;
    if (bytes <= 0 || !b.p || b.n < (uint32_t)bytes)
        return interp_fail(o, "%s has %u bytes, %s needs %d", what, b.n, ctosa_dtype_short(t),
                           bytes > 0 ? bytes : 1);
    const uint8_t *p = b.p;
    switch (t) {
    case CTOSA_DTYPE_INT8: *iv = (int8_t)p[0]; break;
    case CTOSA_DTYPE_INT16: *iv = (int16_t)rd_u16(p); break;
    case CTOSA_DTYPE_INT32: *iv = (int32_t)rd_u32(p); break;
    case CTOSA_DTYPE_FP32: {
        uint32_t u = rd_u32(p);
        memcpy(fv, &u, 4);
        break;
    }
    case CTOSA_DTYPE_FP16: *fv = ff_fp16_to_f32(rd_u16(p)); break;
    case CTOSA_DTYPE_BF16: *fv = ff_bf16_to_f32(rd_u16(p)); break;
    case CTOSA_DTYPE_FP8E4M3: *fv = ff_fp8e4m3_to_f32(p[0]); break;
    case CTOSA_DTYPE_FP8E5M2: *fv = ff_fp8e5m2_to_f32(p[0]); break;
    default: return interp_fail(o, "CLAMP of %s is not supported", ctosa_dtype_short(t));
    }
    return NULL;
}

typedef struct clamp_job {
    const float *s;
    float *d;
    float lo, hi;
    bool ignore;
} clamp_job;

/* NaN compares false both ways, so the select chain passes NaN through
 * (PROPAGATE); IGNORE maps it to min_val, as max(NaN, min) = min. The
 * loop vectorises (compare + blend). */
static inline IM_INLINE void clamp_f_impl(void *arg, size_t begin, size_t end) {
    const clamp_job *j = arg;
    const float *restrict s = j->s;
    float *restrict d = j->d;
    const float lo = j->lo, hi = j->hi;
    if (j->ignore) {
        for (size_t i = begin; i < end; i++) {
            float v = s[i];
            float r = v < lo ? lo : v > hi ? hi : v;
            d[i] = v != v ? lo : r;
        }
    } else {
        for (size_t i = begin; i < end; i++) {
            float v = s[i];
            d[i] = v < lo ? lo : v > hi ? hi : v;
        }
    }
}
IM_MULTIVERSION(clamp_f, clamp_f_impl)

/* Element ranges for the worker threads: blocks of 16K elements. */
#define CLAMP_BLOCK 16384
static void clamp_blocks(void *arg, size_t begin, size_t end) {
    clamp_f(arg, begin * CLAMP_BLOCK, end * CLAMP_BLOCK);
}

ctosa_error *interp_k_CLAMP(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    if (in->dtype != out->dtype) return interp_fail(o, "output type differs from input type");
    const ctosa_attr *a = &o->op->attr;
    ctosa_dtype t = in->dtype;
    int64_t imin = 0, imax = 0;
    float fmin = 0, fmax = 0;
    if ((e = clamp_bound(o, "min_val", a->min_val, t, &imin, &fmin))) return e;
    if ((e = clamp_bound(o, "max_val", a->max_val, t, &imax, &fmax))) return e;
    uint64_t n = in->count;
    if (ctosa_dtype_is_float(t)) {
        if (isnan(fmin) || isnan(fmax)) return interp_fail(o, "min_val or max_val is NaN");
        if (fmax < fmin) return interp_fail(o, "max_val %g < min_val %g", fmax, fmin);
        clamp_job j = {in->data, out->data, fmin, fmax, a->nan_mode == CTOSA_NAN_IGNORE};
        size_t full = (size_t)(n / CLAMP_BLOCK);
        if (o->ctx && (double)n >= IM_PAR_MIN_ELEMS) interp_parallel_for(o->ctx, full, clamp_blocks, &j);
        else if (full) clamp_f(&j, 0, full * CLAMP_BLOCK);
        clamp_f(&j, full * CLAMP_BLOCK, (size_t)n);
    } else {
        if (imax < imin)
            return interp_fail(o, "max_val %lld < min_val %lld", (long long)imax, (long long)imin);
            /* typed loops for the common dtypes (they vectorise); bounds were
         * decoded from the dtype's own bytes, so they fit it */
#define CLAMP_TYPED(T)                                                                  \
    do {                                                                                \
        const T *s = in->data, lo = (T)imin, hi = (T)imax;                              \
        T *d = out->data;                                                               \
        for (uint64_t i = 0; i < n; i++) d[i] = s[i] < lo ? lo : s[i] > hi ? hi : s[i]; \
    } while (0)
        if (t == CTOSA_DTYPE_INT8) CLAMP_TYPED(int8_t);
        else if (t == CTOSA_DTYPE_INT16) CLAMP_TYPED(int16_t);
        else if (t == CTOSA_DTYPE_INT32) CLAMP_TYPED(int32_t);
        else
            for (uint64_t i = 0; i < n; i++)
                im_store_i(t, out->data, i, im_clip(im_load_i(t, in->data, i), imin, imax));
#undef CLAMP_TYPED
    }
    return NULL;
}

/* ------------------------------------------------- ERF, SIGMOID, TANH */

typedef double (*unary_fn)(double);
static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

static ctosa_error *float_unary(const interp_op *o, unary_fn fn) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    if (in->dtype != out->dtype || !ctosa_dtype_is_float(in->dtype))
        return interp_fail(o, "needs the same floating-point type in and out (%s -> %s)",
                           ctosa_dtype_short(in->dtype), ctosa_dtype_short(out->dtype));
    ctosa_dtype t = in->dtype;
    const float *s = in->data;
    float *d = out->data;
    /* computed in double and rounded once to the dtype */
    for (uint64_t i = 0; i < in->count; i++) d[i] = ff_round_to_double(t, fn(s[i]));
    return NULL;
}

/* fp32 ERF, SIGMOID and TANH: 16 lanes at a time with the vec_math.h
 * formulas (a few ulp from the correctly rounded result; bounds there);
 * the plain double loop above with interp_op.reference and for other float
 * types. The tail of fewer than 16 elements goes through the same formula
 * in a padded vector: a value's result must not depend on its position
 * (graph rewrites that move TRANSPOSEs across element-wise operators
 * expect identical bits). */
typedef struct vm_job {
    const float *s;
    float *d;
    size_t n;
} vm_job;

#define VM_ROWS(NAME, MAC)                                                              \
    static inline IM_INLINE void NAME##_impl(void *arg, size_t begin, size_t end) {     \
        const vm_job *j = arg;                                                          \
        size_t e = end * VM_LANES < j->n ? end * VM_LANES : j->n, i = begin * VM_LANES; \
        for (; i + VM_LANES <= e; i += VM_LANES) {                                      \
            vm_f x;                                                                     \
            memcpy(&x, j->s + i, sizeof x);                                             \
            x = MAC(x);                                                                 \
            memcpy(j->d + i, &x, sizeof x);                                             \
        }                                                                               \
        if (i < e) {                                                                    \
            vm_f x = {0};                                                               \
            memcpy(&x, j->s + i, (e - i) * sizeof(float));                              \
            x = MAC(x);                                                                 \
            memcpy(j->d + i, &x, (e - i) * sizeof(float));                              \
        }                                                                               \
    }                                                                                   \
    IM_MULTIVERSION(NAME, NAME##_impl)

VM_ROWS(erf_rows, VM_ERF)
VM_ROWS(sigmoid_rows, VM_SIGMOID)
VM_ROWS(tanh_rows, VM_TANH)

static ctosa_error *fast_unary(const interp_op *o, void (*rows)(void *, size_t, size_t), unary_fn plain) {
    if (o->reference || o->n_in != 1 || o->n_out != 1 || o->in[0]->dtype != CTOSA_DTYPE_FP32 ||
        o->out[0]->dtype != CTOSA_DTYPE_FP32)
        return float_unary(o, plain);
    ctosa_error *e = im_same_shape(o, o->in[0], o->out[0]);
    if (e) return e;
    vm_job j = {o->in[0]->data, o->out[0]->data, (size_t)o->in[0]->count};
    size_t blocks = (j.n + VM_LANES - 1) / VM_LANES;
    if (o->ctx && (double)j.n >= IM_PAR_MIN_ELEMS / 4) interp_parallel_for(o->ctx, blocks, rows, &j);
    else rows(&j, 0, blocks);
    return NULL;
}

VM_ROWS(silu_rows, VM_SILU)

ctosa_error *interp_k_fused_SILU(const interp_op *o) {
    ctosa_error *e = im_same_shape(o, o->in[0], o->out[0]);
    if (e) return e;
    vm_job j = {o->in[0]->data, o->out[0]->data, (size_t)o->in[0]->count};
    size_t blocks = (j.n + VM_LANES - 1) / VM_LANES;
    if (o->ctx && (double)j.n >= IM_PAR_MIN_ELEMS / 4) interp_parallel_for(o->ctx, blocks, silu_rows, &j);
    else silu_rows(&j, 0, blocks);
    return NULL;
}

ctosa_error *interp_k_ERF(const interp_op *o) { return fast_unary(o, erf_rows, erf); }
ctosa_error *interp_k_SIGMOID(const interp_op *o) { return fast_unary(o, sigmoid_rows, sigmoid_d); }
ctosa_error *interp_k_TANH(const interp_op *o) { return fast_unary(o, tanh_rows, tanh); }

/* ----------------------------------------------------------------- TABLE */

ctosa_error *interp_k_TABLE(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 2, 1);
    if (e) return e;
    const itensor *in = o->in[0], *tab = o->in[1];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    uint64_t n = in->count;
    if (in->dtype == CTOSA_DTYPE_INT8) {
        if (tab->dtype != CTOSA_DTYPE_INT8 || tab->count != 256)
            return interp_fail(o, "int8 TABLE needs a 256-entry int8 table");
        if (out->dtype != CTOSA_DTYPE_INT8) return interp_fail(o, "int8 TABLE output must be int8");
        const int8_t *s = in->data, *tv = tab->data;
        int8_t *d = out->data;
        for (uint64_t i = 0; i < n; i++) d[i] = tv[(int)s[i] + 128];
        return NULL;
    }
    if (in->dtype == CTOSA_DTYPE_INT16) {
        if (tab->dtype != CTOSA_DTYPE_INT16 || tab->count != 513)
            return interp_fail(o, "int16 TABLE needs a 513-entry int16 table");
        if (out->dtype != CTOSA_DTYPE_INT32) return interp_fail(o, "int16 TABLE output must be int32");
        const int16_t *s = in->data, *tv = tab->data;
        /* REQUIRE: neighbouring entries differ by a value that fits int16 */
        for (int k = 0; k < 512; k++) {
            int32_t slope = (int32_t)tv[k + 1] - tv[k];
            if (slope < INT16_MIN || slope > INT16_MAX)
                return interp_fail(o, "table entries %d and %d differ by %d (more than int16)", k, k + 1,
                                   slope);
        }
        int32_t *d = out->data;
        for (uint64_t i = 0; i < n; i++) {
            int32_t v = s[i];
            int32_t idx = (v + 32768) >> 7, frac = v & 0x7F;
            int32_t base = tv[idx], slope = (int32_t)tv[idx + 1] - base;
            d[i] = base * 128 + slope * frac;
        }
        return NULL;
    }
    return interp_fail(o, "TABLE of %s is not supported", ctosa_dtype_short(in->dtype));
}
