/* int_math.h - integer and element helpers shared by the interpreter
 * kernels: the spec's fixed-point scaling (apply_scale_32/16,
 * reciprocal_scale), saturation ranges per dtype, round-half-even, and
 * generic canonical-element loads/stores (see interp_internal.h for the
 * canonical storage of each dtype).
 *
 * The "REQUIRE" conditions of the spec helpers are reported through a
 * bool *ok out-parameter (set to false, never to true) so callers can run a
 * whole tensor and fail once. */
#ifndef CTOSA_INT_MATH_H
#define CTOSA_INT_MATH_H

#include <math.h>
#include <stdint.h>
#include "interp/interp_internal.h"

/* Hot loops with the interp_parallel_for signature are compiled for
 * AVX-512, AVX2+FMA and baseline and picked at run time by CPU features:
 *
 *     static inline IM_INLINE void rows_impl(void *arg, size_t b, size_t e) {...}
 *     IM_MULTIVERSION(rows, rows_impl)   // defines static void rows(void *, size_t, size_t)
 *
 * (GCC's target_clones("arch=...") dispatches on CPU model names, which
 * misses newer CPUs, hence the feature test here.) */
#define IM_INLINE __attribute__((always_inline))
#if defined(__x86_64__) && defined(__GNUC__)
static inline int im_isa(void) { /* 2 AVX-512, 1 AVX2+FMA, 0 baseline */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return 2;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}
#define IM_MULTIVERSION(NAME, IMPL)                                                               \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))) static void NAME##_v4( \
        void *a, size_t b, size_t e) {                                                            \
        IMPL(a, b, e);                                                                            \
    }                                                                                             \
    __attribute__((target("avx2,fma"))) static void NAME##_v3(void *a, size_t b, size_t e) {      \
        IMPL(a, b, e);                                                                            \
    }                                                                                             \
    static void NAME##_v1(void *a, size_t b, size_t e) { IMPL(a, b, e); }                         \
    static void NAME(void *a, size_t b, size_t e) {                                               \
        int isa = im_isa();                                                                       \
        (isa == 2 ? NAME##_v4 : isa == 1 ? NAME##_v3 : NAME##_v1)(a, b, e);                       \
    }
#else
#define IM_MULTIVERSION(NAME, IMPL) \
    static void NAME(void *a, size_t b, size_t e) { IMPL(a, b, e); }
#endif

/* Work below which a kernel runs inline instead of through
 * interp_parallel_for: waking the pool's workers costs tens of
 * microseconds (measured ~55 us on the 2-vCPU build machine), more than a
 * small layer's whole run. Units: multiply-adds, or elements x taps for the
 * memory-bound loops. */
#define IM_PAR_MIN_MACS 6000000.0
#define IM_PAR_MIN_ELEMS 262144.0

#define IM_INT48_MIN (-(INT64_C(1) << 47))
#define IM_INT48_MAX ((INT64_C(1) << 47) - 1)

/* value * multiplier / 2^shift rounded (half up); with double_round, shifts
 * above 31 get the extra 2^30 bias of the spec's DOUBLE_ROUND mode. */
static inline int32_t im_apply_scale_32(int32_t value, int32_t multiplier, int shift, bool double_round,
                                        bool *ok) {
    if (multiplier < 0 || shift < 2 || shift > 62) {
        *ok = false;
        return 0;
    }
    /* REQUIRE: the result must fit 32 bits, which the spec guarantees by
     * bounding value to the shift */
    if (shift <= 32) {
        int64_t lim = INT64_C(1) << (shift - 1);
        if ((int64_t)value < -lim || (int64_t)value >= lim) *ok = false;
    }
    int64_t round = INT64_C(1) << (shift - 1);
    if (double_round && shift > 31) round += value >= 0 ? (INT64_C(1) << 30) : -(INT64_C(1) << 30);
    int64_t r = ((int64_t)value * multiplier + round) >> shift;
    return (int32_t)r;
}

static inline int32_t im_apply_scale_16(int64_t value, int16_t multiplier, int shift, bool *ok) {
    if (multiplier < 0 || shift < 2 || shift > 62) {
        *ok = false;
        return 0;
    }
    int64_t round = INT64_C(1) << (shift - 1);
    int64_t r = (value * multiplier + round) >> shift;
    if (r < INT32_MIN || r > INT32_MAX) {
        *ok = false;
        return 0;
    }
    return (int32_t)r;
}

/* Multiplier and shift approximating 1/value (value > 0), as the spec's
 * reciprocal_scale for AVG_POOL2D. */
static inline void im_reciprocal_scale(uint32_t value, int32_t *multiplier, int *shift) {
    int k = value == 1 ? 0 : 32 - __builtin_clz(value - 1);
    int64_t numerator = ((INT64_C(1) << 30) + 1) << k;
    *multiplier = (int32_t)(numerator / value);
    *shift = 30 + k;
}

/* Signed range of an integer dtype (canonical interpretation). */
static inline void im_range_s(ctosa_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
        *lo = 0;
        *hi = 1;
        break;
    case CTOSA_DTYPE_INT4:
        *lo = -8;
        *hi = 7;
        break;
    case CTOSA_DTYPE_INT8:
        *lo = INT8_MIN;
        *hi = INT8_MAX;
        break;
    case CTOSA_DTYPE_INT16:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case CTOSA_DTYPE_INT32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case CTOSA_DTYPE_INT48:
        *lo = IM_INT48_MIN;
        *hi = IM_INT48_MAX;
        break;
    default:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        break;
    }
}

static inline int64_t im_clip(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static inline bool im_is_int(ctosa_dtype t) {
    return t == CTOSA_DTYPE_BOOL || t == CTOSA_DTYPE_INT4 || t == CTOSA_DTYPE_INT8 ||
           t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 || t == CTOSA_DTYPE_INT48 ||
           t == CTOSA_DTYPE_INT64 || t == CTOSA_DTYPE_SHAPE;
}

/* Loads element i of canonical data of dtype t as int64 (integers, bool). */
static inline int64_t im_load_i(ctosa_dtype t, const void *p, size_t i) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return ((const int8_t *)p)[i];
    case CTOSA_DTYPE_INT16: return ((const int16_t *)p)[i];
    case CTOSA_DTYPE_INT32: return ((const int32_t *)p)[i];
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return ((const int64_t *)p)[i];
    default: return (int64_t)((const float *)p)[i];
    }
}

/* Stores v (already in range) into element i of canonical data of dtype t. */
static inline void im_store_i(ctosa_dtype t, void *p, size_t i, int64_t v) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case CTOSA_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case CTOSA_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

/* Wraps v to the width of integer dtype t (two's complement truncation). */
static inline int64_t im_truncate(ctosa_dtype t, int64_t v) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return v != 0;
    case CTOSA_DTYPE_INT4: return (int64_t)(int8_t)((uint8_t)((uint64_t)v << 4)) >> 4;
    case CTOSA_DTYPE_INT8: return (int8_t)(uint8_t)v;
    case CTOSA_DTYPE_INT16: return (int16_t)(uint16_t)v;
    case CTOSA_DTYPE_INT32: return (int32_t)(uint32_t)v;
    case CTOSA_DTYPE_INT48: return (int64_t)((uint64_t)v << 16) >> 16;
    default: return v;
    }
}

/* Reads a scalar zero point (or any 1-element integer tensor) as int64.
 * Returns false when the tensor is missing or empty. */
static inline bool im_scalar_i(const itensor *t, int64_t *v) {
    if (!t || t->count < 1 || !t->data || !im_is_int(t->dtype)) return false;
    *v = im_load_i(t->dtype, t->data, 0);
    return true;
}

/* Element count of shape dims [from, to). */
static inline uint64_t im_dims(const itensor *t, uint32_t from, uint32_t to) {
    uint64_t n = 1;
    for (uint32_t i = from; i < to && i < t->rank; i++) n *= (uint64_t)t->shape[i];
    return n;
}

/* Shapes of a and b must be equal (element-wise unary kernels). */
static inline ctosa_error *im_same_shape(const interp_op *o, const itensor *a, const itensor *b) {
    if (a->rank != b->rank)
        return interp_fail(o, "output rank %u differs from input rank %u", b->rank, a->rank);
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return interp_fail(o, "output dimension %u is %lld, input has %lld", i, (long long)b->shape[i],
                               (long long)a->shape[i]);
    if (a->count != b->count) return interp_fail(o, "output element count differs from input");
    return NULL;
}

/* Checks that the op has at least n_in inputs and n_out outputs, all present. */
static inline ctosa_error *im_need_io(const interp_op *o, uint32_t n_in, uint32_t n_out) {
    if (o->n_in < n_in || o->n_out < n_out)
        return interp_fail(o, "expects %u inputs and %u outputs, has %u and %u", n_in, n_out, o->n_in,
                           o->n_out);
    for (uint32_t i = 0; i < n_in; i++)
        if (!o->in[i]) return interp_fail(o, "input %u is missing", i);
    for (uint32_t i = 0; i < n_out; i++)
        if (!o->out[i]) return interp_fail(o, "output %u is missing", i);
    return NULL;
}

#endif
