/* kernels_convert.c - type conversion kernels: CAST and RESCALE.
 *
 * Both follow the TOSA 1.0 pseudocode bit-exactly for integer results.
 * Canonical storage (interp_internal.h) means floats arrive as float values
 * already representable in their dtype, so float->float casts round once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"
#include "interp/kernels_gemm.h"
#include "util/floatfmt.h"

/* ------------------------------------------------------------------ CAST */

static bool cast_supported(ctosa_dtype t) {
    return ctosa_dtype_is_float(t) || t == CTOSA_DTYPE_BOOL || t == CTOSA_DTYPE_INT4 ||
           t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 ||
           t == CTOSA_DTYPE_INT48 || t == CTOSA_DTYPE_INT64;
}

/* round_to_nearest_int: ties to even (rint in the default rounding mode). */
static int64_t cast_f2i(double x, int64_t lo, int64_t hi) {
    if (isnan(x)) return 0;
    double r = nearbyint(x);
    if (r <= (double)lo) return lo;
    if (r >= (double)hi) return hi;
    return (int64_t)r;
}

/* fp32 -> int8 / int16, vectorised: NaN -> 0, clamp to the (integer)
 * range first, then round half to even by adding and subtracting 1.5 * 2^23
 * (exact for |x| < 2^22 in the default rounding mode); rounding is
 * monotonic, so clamping first gives cast_f2i's result. */
typedef struct cast_fi {
    const float *s;
    void *d;
    bool i16;
} cast_fi;

static inline IM_INLINE void cast_fi_impl(void *arg, size_t b, size_t e) {
    const cast_fi *c = arg;
    const float *s = c->s;
    const float lo = c->i16 ? -32768.0f : -128.0f, hi = c->i16 ? 32767.0f : 127.0f;
    if (c->i16) {
        int16_t *d = c->d;
        for (size_t i = b; i < e; i++) {
            float x = s[i], v = x < lo ? lo : x > hi ? hi : x;
            v = x != x ? 0.0f : v;
            d[i] = (int16_t)(int32_t)((v + 0x1.8p23f) - 0x1.8p23f);
        }
    } else {
        int8_t *d = c->d;
        for (size_t i = b; i < e; i++) {
            float x = s[i], v = x < lo ? lo : x > hi ? hi : x;
            v = x != x ? 0.0f : v;
            d[i] = (int8_t)(int32_t)((v + 0x1.8p23f) - 0x1.8p23f);
        }
    }
}
IM_MULTIVERSION(cast_fi_rows, cast_fi_impl)

/* fp32 -> int32, vectorised: clamp to [-2^31, 2^31 - 128] (the largest
 * float below 2^31), round half to even by adding and subtracting 2^23
 * with x's sign (exact for |x| < 2^23; larger floats are integers), then
 * x >= 2^31 gives INT32_MAX and NaN 0, as cast_f2i does. */
static inline IM_INLINE void cast_fi32_impl(void *arg, size_t b, size_t e) {
    const cast_fi *c = arg;
    const float *s = c->s;
    int32_t *d = c->d;
    for (size_t i = b; i < e; i++) {
        float x = s[i], v = x < -0x1p31f ? -0x1p31f : x > 0x1.fffffep30f ? 0x1.fffffep30f : x;
        float m = v < 0.0f ? -0x1p23f : 0x1p23f;
        v = fabsf(v) < 0x1p23f ? (v + m) - m : v;
        v = x != x ? 0.0f : v;
        int32_t r = (int32_t)v;
        d[i] = x >= 0x1p31f ? INT32_MAX : r;
    }
}
IM_MULTIVERSION(cast_fi32_rows, cast_fi32_impl)

/* int32 -> int8 / int16: the low bits (CAST truncates), vectorised. */
static inline IM_INLINE void cast_trunc_impl(void *arg, size_t b, size_t e) {
    const cast_fi *c = arg;
    const int32_t *s = (const int32_t *)(const void *)c->s;
    if (c->i16) {
        int16_t *d = c->d;
        for (size_t i = b; i < e; i++) d[i] = (int16_t)(uint16_t)(uint32_t)s[i];
    } else {
        int8_t *d = c->d;
        for (size_t i = b; i < e; i++) d[i] = (int8_t)(uint8_t)(uint32_t)s[i];
    }
}
IM_MULTIVERSION(cast_trunc_rows, cast_trunc_impl)

ctosa_error *interp_k_CAST(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    ctosa_dtype ti = in->dtype, to = out->dtype;
    if (!cast_supported(ti) || !cast_supported(to))
        return interp_fail(o, "CAST from %s to %s is not supported", ctosa_dtype_short(ti),
                           ctosa_dtype_short(to));
    uint64_t n = in->count;
    const void *src = in->data;
    void *dst = out->data;
    if (to == CTOSA_DTYPE_BOOL) {
        uint8_t *d = dst;
        for (uint64_t i = 0; i < n; i++)
            d[i] =
                ctosa_dtype_is_float(ti) ? (((const float *)src)[i] != 0.0f) : (im_load_i(ti, src, i) != 0);
    } else if (ctosa_dtype_is_float(to)) {
        float *d = dst;
        if (ctosa_dtype_is_float(ti)) {
            const float *s = src;
            for (uint64_t i = 0; i < n; i++) d[i] = ff_round_to(to, s[i]);
        } else {
            /* every int up to 48 bits is exact in double: one rounding */
            for (uint64_t i = 0; i < n; i++) d[i] = ff_round_to_double(to, (double)im_load_i(ti, src, i));
        }
    } else {
        int64_t lo, hi;
        im_range_s(to, &lo, &hi);
        if (ctosa_dtype_is_float(ti)) {
            const float *s = src;
            /* the spec clips in int32 first, so no int48/int64 output exceeds
             * the int32 range */
            if (lo < INT32_MIN) lo = INT32_MIN;
            if (hi > INT32_MAX) hi = INT32_MAX;
            if (!o->reference && ti == CTOSA_DTYPE_FP32 &&
                (to == CTOSA_DTYPE_INT8 || to == CTOSA_DTYPE_INT16)) {
                cast_fi c = {s, dst, to == CTOSA_DTYPE_INT16};
                cast_fi_rows(&c, 0, (size_t)n);
                return NULL;
            }
            if (!o->reference && ti == CTOSA_DTYPE_FP32 && to == CTOSA_DTYPE_INT32) {
                cast_fi c = {s, dst, false};
                cast_fi32_rows(&c, 0, (size_t)n);
                return NULL;
            }
            for (uint64_t i = 0; i < n; i++) im_store_i(to, dst, i, cast_f2i(s[i], lo, hi));
        } else {
            /* bool -> 0/1; wider: sign extend; narrower: truncate */
            if (!o->reference && ti == CTOSA_DTYPE_INT32 &&
                (to == CTOSA_DTYPE_INT8 || to == CTOSA_DTYPE_INT16)) {
                cast_fi c = {src, dst, to == CTOSA_DTYPE_INT16};
                cast_trunc_rows(&c, 0, (size_t)n);
                return NULL;
            }
            for (uint64_t i = 0; i < n; i++) im_store_i(to, dst, i, im_truncate(to, im_load_i(ti, src, i)));
        }
    }
    return NULL;
}

/* --------------------------------------------------------------- RESCALE */

typedef struct rs_job {
    const void *in;
    void *out;
    ctosa_dtype ti, to;
    uint64_t nc;
    int64_t izp, ozp, lo, hi;
    bool iu, scale32;
    int64_t *mult, *lim, *dbl, *shift64;
    int32_t *shift;
    int failed;
} rs_job;

/* One input value, zero-extended for unsigned input. */
static inline int64_t rs_load(ctosa_dtype ti, bool iu, const void *p, size_t i) {
    switch (ti) {
    case CTOSA_DTYPE_INT8: return iu ? (int64_t)((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
    case CTOSA_DTYPE_INT16: return iu ? (int64_t)((const uint16_t *)p)[i] : ((const int16_t *)p)[i];
    case CTOSA_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

static inline void rs_store(ctosa_dtype to, void *p, size_t i, int64_t v) {
    switch (to) {
    case CTOSA_DTYPE_INT8: ((uint8_t *)p)[i] = (uint8_t)v; break; /* wraps unsigned outputs */
    case CTOSA_DTYPE_INT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    default: ((int32_t *)p)[i] = (int32_t)v; break;
    }
}

/* Rows of nc channels. TI/TO are constants at each call site below, so
 * every combination compiles to its own switch-free loop. */
static inline __attribute__((always_inline)) void rs_loop(rs_job *j, size_t b, size_t e, ctosa_dtype ti,
                                                          ctosa_dtype to) {
    /* locals: byte stores into the output could alias the job's fields */
    const uint64_t nc = j->nc;
    const int64_t *restrict mult = j->mult, *restrict lim = j->lim, *restrict dbl = j->dbl;
    const int32_t *restrict shift = j->shift;
    const void *in = j->in;
    void *out = j->out;
    const int64_t izp = j->izp, ozp = j->ozp, lo = j->lo, hi = j->hi;
    const bool iu = j->iu;
    bool bad = false;
    for (size_t row = b; row < e; row++)
        for (uint64_t c = 0; c < nc; c++) {
            size_t i = row * nc + c;
            int64_t v = rs_load(ti, iu, in, i) - izp;
            int s = shift[c];
            bad |= v < -lim[c] || v >= lim[c];
            int64_t round = (INT64_C(1) << (s - 1)) + (v >= 0 ? dbl[c] : -dbl[c]);
            /* scale32: |v| < 2^32 and m < 2^31; scale16: |v| < 2^48 and m < 2^15:
             * the product and rounding term fit int64 */
            int64_t r = (v * mult[c] + round) >> s;
            int64_t res = r + ozp;
            bad |= r < INT32_MIN || r > INT32_MAX || res < INT32_MIN || res > INT32_MAX;
            rs_store(to, out, i, res < lo ? lo : res > hi ? hi : res);
        }
    if (bad) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

typedef int64_t rs_vl __attribute__((vector_size(64)));
typedef int32_t rs_vi __attribute__((vector_size(32)));
typedef int16_t rs_vh __attribute__((vector_size(16)));
typedef int8_t rs_vb __attribute__((vector_size(8)));
typedef uint16_t rs_vuh __attribute__((vector_size(16)));
typedef uint8_t rs_vub __attribute__((vector_size(8)));

/* Eight channels at a time (nc a multiple of 8); the same arithmetic as
 * rs_loop with lane masks for the comparisons (C has no vector ?:). */
static inline __attribute__((always_inline)) void rs_loop8(rs_job *j, size_t b, size_t e, ctosa_dtype ti,
                                                           ctosa_dtype to) {
    const uint64_t nc = j->nc;
    const int64_t *mult = j->mult, *lim = j->lim, *dbl = j->dbl, *shift = j->shift64;
    const char *in = j->in;
    char *out = j->out;
    const bool iu = j->iu;
    const rs_vl izp = (rs_vl){0} + j->izp, ozp = (rs_vl){0} + j->ozp, lo = (rs_vl){0} + j->lo,
                hi = (rs_vl){0} + j->hi, one = (rs_vl){0} + 1, i32min = (rs_vl){0} + INT32_MIN,
                i32max = (rs_vl){0} + INT32_MAX;
    rs_vl bad = {0};
    for (size_t row = b; row < e; row++)
        for (uint64_t c = 0; c < nc; c += 8) {
            size_t i = row * nc + c;
            rs_vl v;
            if (ti == CTOSA_DTYPE_INT8) {
                if (iu) {
                    rs_vub x;
                    memcpy(&x, in + i, 8);
                    v = __builtin_convertvector(x, rs_vl);
                } else {
                    rs_vb x;
                    memcpy(&x, in + i, 8);
                    v = __builtin_convertvector(x, rs_vl);
                }
            } else if (ti == CTOSA_DTYPE_INT16) {
                if (iu) {
                    rs_vuh x;
                    memcpy(&x, in + i * 2, 16);
                    v = __builtin_convertvector(x, rs_vl);
                } else {
                    rs_vh x;
                    memcpy(&x, in + i * 2, 16);
                    v = __builtin_convertvector(x, rs_vl);
                }
            } else if (ti == CTOSA_DTYPE_INT32) {
                rs_vi x;
                memcpy(&x, in + i * 4, 32);
                v = __builtin_convertvector(x, rs_vl);
            } else {
                memcpy(&v, in + i * 8, 64);
            }
            v -= izp;
            rs_vl m, l, d, sv;
            memcpy(&m, mult + c, 64);
            memcpy(&l, lim + c, 64);
            memcpy(&d, dbl + c, 64);
            memcpy(&sv, shift + c, 64);
            /* range checks as sign bits: any negative term means out of range */
            bad |= (v + l) | (l - 1 - v);
            rs_vl pos = v >= 0; /* -1 where v >= 0 */
            rs_vl round = (one << (sv - 1)) + ((d & pos) | (-d & ~pos));
            rs_vl r = (v * m + round) >> sv;
            rs_vl res = r + ozp;
            bad |= (r - i32min) | (i32max - r) | (res - i32min) | (i32max - res);
            rs_vl ml = res<lo, mh = res> hi;
            res = (res & ~ml) | (lo & ml);
            res = (res & ~mh) | (hi & mh);
            if (to == CTOSA_DTYPE_INT8) {
                rs_vb y = __builtin_convertvector(res, rs_vb);
                memcpy(out + i, &y, 8);
            } else if (to == CTOSA_DTYPE_INT16) {
                rs_vh y = __builtin_convertvector(res, rs_vh);
                memcpy(out + i * 2, &y, 16);
            } else {
                rs_vi y = __builtin_convertvector(res, rs_vi);
                memcpy(out + i * 4, &y, 32);
            }
        }
    int64_t any = 0;
    for (int k = 0; k < 8; k++) any |= bad[k];
    if (any < 0) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

#define RS_CASE(TI, TO)                                \
    case TI * 32 + TO:                                 \
        if (j->nc % 8 == 0) rs_loop8(j, b, e, TI, TO); \
        else rs_loop(j, b, e, TI, TO);                 \
        break;
#define RS_CASES(TI) \
    RS_CASE(TI, CTOSA_DTYPE_INT8) RS_CASE(TI, CTOSA_DTYPE_INT16) RS_CASE(TI, CTOSA_DTYPE_INT32)

static inline IM_INLINE void rs_rows_impl(void *arg, size_t b, size_t e) {
    rs_job *j = arg;
    switch (j->ti * 32 + j->to) {
        RS_CASES(CTOSA_DTYPE_INT8)
        RS_CASES(CTOSA_DTYPE_INT16)
        RS_CASES(CTOSA_DTYPE_INT32)
        RS_CASES(CTOSA_DTYPE_INT48)
    default: break;
    }
}
IM_MULTIVERSION(rs_rows, rs_rows_impl)

/* ------------------------------------------------ RESCALE fast paths */

/* 8-bit input with one scale for the tensor: the result is a function of
 * the input byte, so the 256 results are computed once with the generic
 * loop (the same arithmetic) and the tensor is mapped through the table.
 * Returns false (nothing written) when some table entry breaks a REQUIRE,
 * so that the generic loop reports it only if such a value occurs. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 64 bytes per step: two 128-entry byte permutes, picked by the top bit. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
rs_map_vbmi(const uint8_t *in, uint8_t *out, size_t n, const uint8_t *tab) {
    __m512i t0 = _mm512_loadu_si512(tab), t1 = _mm512_loadu_si512(tab + 64);
    __m512i t2 = _mm512_loadu_si512(tab + 128), t3 = _mm512_loadu_si512(tab + 192);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i x = _mm512_loadu_si512(in + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
        _mm512_storeu_si512(out + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
    }
    for (; i < n; i++) out[i] = tab[in[i]];
}

static bool rs_has_vbmi(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* scale32 RESCALE of 8-, 16- and 32-bit inputs, 16 lanes per step (rows of
 * a multiple of 16 channels, or one scale replicated), with the int8
 * engine's requantisation step kg_rq16 (kernels_gemm.h). */
typedef struct rs_v16 {
    rs_job *j;
    const kg_rq_blk *blk;
} rs_v16;

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) static void rs_rows16(void *arg, size_t b,
                                                                                    size_t e) {
    const rs_v16 *w = arg;
    rs_job *j = w->j;
    const size_t nb = (size_t)j->nc / 16;
    const char *in = j->in;
    char *out = j->out;
    const __m512i izp = _mm512_set1_epi32((int32_t)j->izp), ozp = _mm512_set1_epi32((int32_t)j->ozp);
    const __m512i lo = _mm512_set1_epi32((int32_t)j->lo), hi = _mm512_set1_epi32((int32_t)j->hi);
    __mmask16 bad = 0;
    for (size_t row = b; row < e; row++)
        for (size_t k = 0; k < nb; k++) {
            size_t i = row * (size_t)j->nc + k * 16;
            __m512i v;
            if (j->ti == CTOSA_DTYPE_INT8) {
                __m128i x = _mm_loadu_si128((const __m128i *)(in + i));
                v = j->iu ? _mm512_cvtepu8_epi32(x) : _mm512_cvtepi8_epi32(x);
            } else if (j->ti == CTOSA_DTYPE_INT16) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(in + 2 * i));
                v = j->iu ? _mm512_cvtepu16_epi32(x) : _mm512_cvtepi16_epi32(x);
            } else {
                v = _mm512_loadu_si512(in + 4 * i);
            }
            __m512i r = kg_rq16(_mm512_sub_epi32(v, izp), w->blk + k, ozp, lo, hi, &bad);
            if (j->to == CTOSA_DTYPE_INT8) _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtepi32_epi8(r));
            else if (j->to == CTOSA_DTYPE_INT16)
                _mm256_storeu_si256((__m256i *)(out + 2 * i), _mm512_cvtepi32_epi16(r));
            else _mm512_storeu_si512(out + 4 * i, r);
        }
    if (bad) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Runs j with rs_rows16 when it applies (scale32, 8/16/32-bit input, the
 * channel vectors in j filled for j->nc lanes, a multiple of 16); false
 * when it does not (nothing done). */
static bool rs_try16(const interp_op *o, rs_job *j, size_t rows) {
    if (o->reference || !j->scale32 || j->nc % 16 || im_isa() != 2 ||
        (j->ti != CTOSA_DTYPE_INT8 && j->ti != CTOSA_DTYPE_INT16 && j->ti != CTOSA_DTYPE_INT32))
        return false;
    size_t nb = (size_t)j->nc / 16;
    kg_rq_blk *blk = aligned_alloc(64, nb * sizeof *blk);
    if (!blk) return false;
    for (size_t k = 0; k < nb; k++)
        for (int l = 0; l < 16; l++) {
            size_t c = k * 16 + (size_t)l;
            kg_rq_lane(blk + k, l, j->mult[c], (int)j->shift64[c], j->dbl[c]);
        }
    rs_v16 w = {j, blk};
    if (o->ctx && (double)rows * (double)j->nc >= IM_PAR_MIN_ELEMS)
        interp_parallel_for(o->ctx, rows, rs_rows16, &w);
    else rs_rows16(&w, 0, rows);
    free(blk);
    return true;
}
#endif

typedef struct rs_map {
    const uint8_t *in;
    void *out;
    ctosa_dtype to;
    const int32_t *tab;
    const uint8_t *tab8;
    bool vbmi;
} rs_map;

static void rs_map_rows(void *arg, size_t b, size_t e) {
    const rs_map *m = arg;
    const uint8_t *in = m->in;
    if (m->to == CTOSA_DTYPE_INT8) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (m->vbmi) {
            rs_map_vbmi(in + b, (uint8_t *)m->out + b, e - b, m->tab8);
            return;
        }
#endif
        for (size_t i = b; i < e; i++) ((uint8_t *)m->out)[i] = m->tab8[in[i]];
    } else if (m->to == CTOSA_DTYPE_INT16) {
        for (size_t i = b; i < e; i++) ((uint16_t *)m->out)[i] = (uint16_t)m->tab[in[i]];
    } else {
        for (size_t i = b; i < e; i++) ((int32_t *)m->out)[i] = m->tab[in[i]];
    }
}

static bool rs_table(const interp_op *o, rs_job *j, uint64_t count) {
    uint8_t bytes[256];
    int32_t tab[256];
    uint8_t tab8[256];
    for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
    rs_job t = *j;
    t.nc = 1;
    t.out = tab;
    t.to = CTOSA_DTYPE_INT32;
    for (int i = 0; i < 256; i++) {
        /* one element per call: a failure is known per entry */
        t.in = bytes + i;
        t.out = tab + i;
        t.failed = 0;
        rs_rows(&t, 0, 1);
        if (t.failed) return false;
    }
    /* the int32 pass stored the clamped result; narrower outputs keep its
     * low bits, as rs_store does */
    for (int i = 0; i < 256; i++) tab8[i] = (uint8_t)tab[i];
    rs_map m = {.in = j->in, .out = j->out, .to = j->to, .tab = tab, .tab8 = tab8};
#if defined(__x86_64__) && defined(__GNUC__)
    m.vbmi = rs_has_vbmi();
#endif
    size_t n = (size_t)count;
    if (o->ctx && (double)n >= IM_PAR_MIN_ELEMS * 4) interp_parallel_for(o->ctx, n, rs_map_rows, &m);
    else rs_map_rows(&m, 0, n);
    return true;
}

/* The RESCALE's checks (every ERROR_IF / REQUIRE that does not depend on
 * the values) and its job: per-lane constants in malloc'd arrays (free
 * them with rs_free, also on failure). */
static ctosa_error *rs_setup(const interp_op *o, rs_job *jp) {
    memset(jp, 0, sizeof *jp);
    ctosa_error *e = im_need_io(o, 5, 1);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    const itensor *in = o->in[0], *mul = o->in[1], *sh = o->in[2];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    ctosa_dtype ti = in->dtype, to = out->dtype;
    if (ti != CTOSA_DTYPE_INT8 && ti != CTOSA_DTYPE_INT16 && ti != CTOSA_DTYPE_INT32 &&
        ti != CTOSA_DTYPE_INT48)
        return interp_fail(o, "input type %s is not supported", ctosa_dtype_short(ti));
    if (to != CTOSA_DTYPE_INT8 && to != CTOSA_DTYPE_INT16 && to != CTOSA_DTYPE_INT32)
        return interp_fail(o, "output type %s is not supported", ctosa_dtype_short(to));
    int64_t izp, ozp;
    if (!im_scalar_i(o->in[3], &izp) || o->in[3]->dtype != ti)
        return interp_fail(o, "input_zp must be a one-element %s tensor", ctosa_dtype_short(ti));
    if (!im_scalar_i(o->in[4], &ozp) || o->in[4]->dtype != to)
        return interp_fail(o, "output_zp must be a one-element %s tensor", ctosa_dtype_short(to));
    bool iu = a->input_unsigned, ou = a->output_unsigned;
    /* zero points are compared after the extension the pseudocode applies */
    if (iu) izp = ti == CTOSA_DTYPE_INT8 ? (uint8_t)izp : (uint16_t)izp;
    if (ou) ozp = to == CTOSA_DTYPE_INT8 ? (uint8_t)ozp : (uint16_t)ozp;
    if (ti != CTOSA_DTYPE_INT8 && (ti != CTOSA_DTYPE_INT16 || !iu) && izp != 0)
        return interp_fail(o, "input_zp must be 0 for %s input", ctosa_dtype_short(ti));
    if (to != CTOSA_DTYPE_INT8 && (to != CTOSA_DTYPE_INT16 || !ou) && ozp != 0)
        return interp_fail(o, "output_zp must be 0 for %s output", ctosa_dtype_short(to));
    if (ti == CTOSA_DTYPE_INT16 && iu && izp != 0 && izp != 32768)
        return interp_fail(o, "input_zp of unsigned int16 input must be 0 or 32768");
    if (to == CTOSA_DTYPE_INT16 && ou && ozp != 0 && ozp != 32768)
        return interp_fail(o, "output_zp of unsigned int16 output must be 0 or 32768");
    if (a->scale32 && ti == CTOSA_DTYPE_INT48)
        return interp_fail(o, "scale32 is not allowed with int48 input");
    if (a->rounding_mode != CTOSA_ROUND_SINGLE && a->rounding_mode != CTOSA_ROUND_INEXACT &&
        a->rounding_mode != CTOSA_ROUND_DOUBLE)
        return interp_fail(o, "rounding_mode %d is not valid", (int)a->rounding_mode);
    if (!a->scale32 && a->rounding_mode == CTOSA_ROUND_DOUBLE)
        return interp_fail(o, "DOUBLE_ROUND needs scale32");
    if (iu && ou) return interp_fail(o, "input_unsigned and output_unsigned are both set");
    if (to == CTOSA_DTYPE_INT32 && iu) return interp_fail(o, "unsigned input with int32 output");
    if ((ti == CTOSA_DTYPE_INT32 || ti == CTOSA_DTYPE_INT48) && (ou || iu))
        return interp_fail(o, "unsigned flags are not allowed with %s input", ctosa_dtype_short(ti));
    if (to == CTOSA_DTYPE_INT32 && ou) return interp_fail(o, "unsigned int32 output is not allowed");
    if (a->per_channel && in->rank < 1) return interp_fail(o, "per_channel needs an input of rank >= 1");
    uint64_t nc = a->per_channel ? (uint64_t)in->shape[in->rank - 1] : 1;
    ctosa_dtype mt = a->scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16;
    if (mul->dtype != mt)
        return interp_fail(o, "multiplier must be %s when scale32 is %s", ctosa_dtype_short(mt),
                           a->scale32 ? "true" : "false");
    if (sh->dtype != CTOSA_DTYPE_INT8) return interp_fail(o, "shift must be int8");
    if (mul->count != nc || sh->count != nc)
        return interp_fail(o, "multiplier and shift need %llu elements, have %llu and %llu",
                           (unsigned long long)nc, (unsigned long long)mul->count,
                           (unsigned long long)sh->count);
    for (uint64_t c = 0; c < nc; c++) {
        int s = ((const int8_t *)sh->data)[c];
        int64_t m = im_load_i(mt, mul->data, c);
        if (s < 2 || s > 62)
            return interp_fail(o, "shift[%llu] = %d is outside 2..62", (unsigned long long)c, s);
        if (m < 0)
            return interp_fail(o, "multiplier[%llu] = %lld is negative", (unsigned long long)c, (long long)m);
    }
    int64_t lo, hi;
    if (ou) {
        lo = 0;
        hi = to == CTOSA_DTYPE_INT8 ? 255 : 65535;
    } else {
        im_range_s(to, &lo, &hi);
    }
    *jp = (rs_job){.in = in->data,
                   .out = out->data,
                   .ti = ti,
                   .to = to,
                   .nc = nc,
                   .izp = izp,
                   .ozp = ozp,
                   .lo = lo,
                   .hi = hi,
                   .iu = iu,
                   .scale32 = a->scale32};
    /* per-channel constants: multiplier, shift and the rounding term (the
     * DOUBLE_ROUND bias is added per element, it depends on the sign) */
    /* one scale for the tensor: replicate it over 16 or 8 lanes so a vector
     * loop applies (rows of 16 or 8 elements) */
    uint64_t lanes = nc == 1 && in->count % 16 == 0 ? 16 : nc == 1 && in->count % 8 == 0 ? 8 : nc;
    jp->nc = lanes;
    jp->mult = malloc((size_t)lanes * sizeof(int64_t));
    jp->shift = malloc((size_t)lanes * sizeof(int32_t));
    jp->shift64 = malloc((size_t)lanes * sizeof(int64_t));
    jp->lim = malloc((size_t)lanes * sizeof(int64_t));
    jp->dbl = malloc((size_t)lanes * sizeof(int64_t));
    if (!jp->mult || !jp->shift || !jp->shift64 || !jp->lim || !jp->dbl)
        return interp_fail(o, "out of memory");
    for (uint64_t k = 0; k < lanes; k++) {
        uint64_t c = nc == 1 ? 0 : k;
        int sft = ((const int8_t *)sh->data)[c];
        jp->mult[k] = im_load_i(mt, mul->data, c);
        jp->shift[k] = sft;
        jp->shift64[k] = sft;
        /* apply_scale_32's REQUIRE: |value| < 2^(shift-1) when that bounds */
        jp->lim[k] = a->scale32 && sft <= 32 ? INT64_C(1) << (sft - 1) : INT64_C(1) << 62;
        jp->dbl[k] = a->rounding_mode == CTOSA_ROUND_DOUBLE && sft > 31 ? INT64_C(1) << 30 : 0;
    }
    return NULL;
}

static void rs_free(rs_job *j) {
    free(j->mult);
    free(j->shift);
    free(j->shift64);
    free(j->lim);
    free(j->dbl);
}

static bool rs_residual(const interp_op *o);

ctosa_error *interp_k_RESCALE(const interp_op *o) {
    if (o->rescale && o->rescale->r2 && !o->reference && rs_residual(o)) {
        o->rescale->done = true;
        return NULL;
    }
    rs_job j;
    ctosa_error *e = rs_setup(o, &j);
    if (e) {
        rs_free(&j);
        return e;
    }
    const itensor *in = o->in[0];
    uint64_t lanes = j.nc, nc = o->op->attr.per_channel ? lanes : 1;
    ctosa_dtype ti = in->dtype;
    size_t rows = lanes ? (size_t)(in->count / lanes) : 0;
    /* int8 input, one scale: a 256-entry table (to int32 on AVX-512 the
     * 16-lane step below is faster than the table's scalar loop) */
    if (!o->reference && nc == 1 && ti == CTOSA_DTYPE_INT8 && in->count >= 1024 &&
        (j.to != CTOSA_DTYPE_INT32 || im_isa() != 2) && rs_table(o, &j, in->count))
        goto done;
#if defined(__x86_64__) && defined(__GNUC__)
    if (rs_try16(o, &j, rows)) goto checked;
#endif
    if (o->ctx && (double)in->count >= IM_PAR_MIN_ELEMS) interp_parallel_for(o->ctx, rows, rs_rows, &j);
    else rs_rows(&j, 0, rows);
#if defined(__x86_64__) && defined(__GNUC__)
checked:
#endif
    if (j.failed) e = interp_fail(o, "scaled value out of range (REQUIRE failed)");
done:
    rs_free(&j);
    return e;
}

/* The RESCALE ro's job (rs_setup) when it is a scale32 int32 -> int32 or
 * 8-bit one with input zero point 0 over rows of nc channels; false (and
 * nothing to free) otherwise. */
static bool rq_job(const ctosa_op *op, const char *where, itensor *const *in, itensor *out, int64_t nc,
                   rs_job *j) {
    itensor *outs[1] = {out};
    interp_op ro = {.op = op, .where = where, .in = in, .n_in = op->n_inputs, .out = outs, .n_out = 1};
    ctosa_error *e = rs_setup(&ro, j);
    bool ok = !e && op->attr.scale32 && j->ti == CTOSA_DTYPE_INT32 && j->izp == 0 && nc > 0 &&
              in[0]->rank >= 1 && in[0]->shape[in[0]->rank - 1] == nc &&
              (j->to == CTOSA_DTYPE_INT8 || j->to == CTOSA_DTYPE_INT32);
    ctosa_error_free(e);
    if (!ok) rs_free(j);
    return ok;
}

/* Lane l of block b from channel c's constants of j. */
static void rq_lane(kg_rq_blk *b, int l, const rs_job *j, bool per_channel, int64_t c) {
    uint64_t src = per_channel ? (uint64_t)c : 0;
    kg_rq_lane(b, l, j->mult[src % j->nc], j->shift[src % j->nc], j->dbl[src % j->nc]);
}

/* One value of a constant of one value or nc. */
static int32_t rq_const(const itensor *t, int64_t c) {
    return ((const int32_t *)t->data)[t->count == 1 ? 0 : c];
}

/* What interp_rescale_requant keeps in interp_fused_rescale.keep: the
 * filled kg_requant (its blocks follow in the same allocation), or ok
 * false when the RESCALE is not one the kernels can apply. */
typedef struct rq_keep {
    kg_requant rq;
    int64_t nc;
    bool ok;
} rq_keep;

static rq_keep *rq_build(const interp_fused_rescale *fr, int64_t nc) {
    rs_job j, t;
    if (!rq_job(fr->op, fr->where, fr->in, fr->out, nc, &j)) return calloc(1, sizeof(rq_keep));
    bool ok = j.to == CTOSA_DTYPE_INT8;
    bool tie = ok && fr->tie;
    if (tie) {
        const itensor *cs[3] = {fr->tie_mask, fr->tie_half, fr->tie_odd};
        for (int i = 0; i < 3; i++)
            ok &= cs[i]->dtype == CTOSA_DTYPE_INT32 && (cs[i]->count == 1 || (int64_t)cs[i]->count == nc);
        ok = ok && rq_job(fr->tie, fr->tie_where, fr->tie_in, fr->tie_out, nc, &t);
        if (ok && t.to != CTOSA_DTYPE_INT32) {
            rs_free(&t);
            ok = false;
        }
        tie = ok;
    }
    /* the header, the blocks, then the tie steps' blocks, in one
     * allocation; lanes past nc get channel 0's constants (valid, never
     * stored) */
    int64_t nb = (nc + 15) / 16;
    size_t head = (sizeof(rq_keep) + 63) & ~(size_t)63;
    size_t bytes = head + (ok ? (size_t)nb * (sizeof(kg_rq_blk) + (tie ? sizeof(kg_rq_tie) : 0)) : 0);
    char *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    rq_keep *k = (rq_keep *)(void *)mem;
    if (k) *k = (rq_keep){.nc = nc, .ok = ok};
    if (k && ok) {
        kg_rq_blk *blk = (kg_rq_blk *)(void *)(mem + head);
        kg_rq_tie *tb = tie ? (kg_rq_tie *)(void *)(mem + head + (size_t)nb * sizeof(kg_rq_blk)) : NULL;
        for (int64_t b = 0; b < nb; b++)
            for (int l = 0; l < 16; l++) {
                int64_t c = b * 16 + l < nc ? b * 16 + l : 0;
                rq_lane(blk + b, l, &j, fr->op->attr.per_channel, c);
                if (!tb) continue;
                rq_lane(&tb[b].r1, l, &t, fr->tie->attr.per_channel, c);
                tb[b].mask[l] = rq_const(fr->tie_mask, c);
                tb[b].half[l] = rq_const(fr->tie_half, c);
                tb[b].odd[l] = rq_const(fr->tie_odd, c);
            }
        k->rq = (kg_requant){.blk = blk,
                             .tie = tb,
                             .ozp = (int32_t)j.ozp,
                             .lo = (int32_t)j.lo,
                             .hi = (int32_t)j.hi,
                             .ldo = nc};
        k->rq.fast = !tie;
        for (uint64_t i = 0; i < j.nc; i++) k->rq.fast &= j.dbl[i] == 0 && j.shift[i] >= 32;
        k->rq.sat = k->rq.fast && k->rq.lo == -128 && k->rq.hi == 127;
    }
    if (tie) rs_free(&t);
    rs_free(&j);
    return k;
}

bool interp_rescale_requant(interp_fused_rescale *fr, int64_t nc, kg_requant *rq) {
    rq_keep *k = fr->keep;
    if (!k || k->nc != nc) {
        free(k);
        fr->keep = k = rq_build(fr, nc);
    }
    if (!k || !k->ok) return false;
    *rq = k->rq;
    rq->out = fr->out->data;
    rq->bad = 0;
    return true;
}

/* ------------------------------------------------ residual addition */

#if defined(__x86_64__) && defined(__GNUC__)
/* out = R3(R1(a) + R2(b)) (interp_fused_rescale.r2), 16 elements per step:
 * each RESCALE through kg_rq16 as rs_rows16 applies it, the int32 ADD
 * with its overflow test (the REQUIRE of apply_add_s). */
typedef struct rs_res {
    const int8_t *a, *b;
    uint8_t *out;
    size_t n;
    kg_rq_blk blk[3];
    int32_t za, zb, ozp, lo, hi;
    int bad;
} rs_res;

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) static void rs_res_rows(void *arg, size_t b,
                                                                                      size_t e) {
    rs_res *w = arg;
    const __m512i za = _mm512_set1_epi32(w->za), zb = _mm512_set1_epi32(w->zb), z = _mm512_setzero_si512();
    const __m512i i32lo = _mm512_set1_epi32(INT32_MIN), i32hi = _mm512_set1_epi32(INT32_MAX);
    const __m512i ozp = _mm512_set1_epi32(w->ozp), lo = _mm512_set1_epi32(w->lo),
                  hi = _mm512_set1_epi32(w->hi);
    __mmask16 bad = 0;
    for (size_t g = b; g < e; g++) {
        size_t i = g * 16;
        __mmask16 m = w->n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (w->n - i)) - 1);
        __m512i va = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, w->a + i)), za);
        __m512i vb = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, w->b + i)), zb);
        __mmask16 bd = 0;
        __m512i y1 = kg_rq16(va, &w->blk[0], z, i32lo, i32hi, &bd);
        __m512i y2 = kg_rq16(vb, &w->blk[1], z, i32lo, i32hi, &bd);
        __m512i s = _mm512_add_epi32(y1, y2);
        /* apply_add_s's REQUIRE (signed overflow: both addends' signs
         * differ from the sum's); 8-bit inputs cannot reach it */
        bd |= _mm512_cmplt_epi32_mask(_mm512_and_si512(_mm512_xor_si512(y1, s), _mm512_xor_si512(y2, s)), z);
        __m512i r = kg_rq16(s, &w->blk[2], ozp, lo, hi, &bd);
        bad |= bd & m;
        _mm512_mask_cvtepi32_storeu_epi8(w->out + i, m, r);
    }
    if (bad) __atomic_store_n(&w->bad, 1, __ATOMIC_RELAXED);
}
#endif

/* The job of RESCALE op (inputs in, output out), checked as the kernel
 * checks it; false (nothing to free) when a check fails. */
static bool rs_job_of(const ctosa_op *op, const char *where, itensor *const *in, itensor *out, rs_job *j) {
    itensor *outs[1] = {out};
    interp_op ro = {.op = op, .where = where, .in = in, .n_in = op->n_inputs, .out = outs, .n_out = 1};
    ctosa_error *e = rs_setup(&ro, j);
    if (e) rs_free(j);
    ctosa_error_free(e);
    return !e;
}

/* The residual addition offered to RESCALE o (interp_fused_rescale.r2):
 * true when out has been stored; false when it does not apply or a value
 * breaks a REQUIRE (the four operators then run and report it). Only
 * per-tensor scale32 RESCALEs, signed int8 a and b, on AVX-512. */
static bool rs_residual(const interp_op *o) {
#if defined(__x86_64__) && defined(__GNUC__)
    const interp_fused_rescale *fr = o->rescale;
    if (im_isa() != 2 || o->n_in != 5 || o->n_out != 1) return false;
    rs_job j[3];
    bool have[3] = {rs_job_of(o->op, o->where, o->in, o->out[0], &j[0]), false, false};
    have[1] = have[0] && rs_job_of(fr->r2, fr->r2_where, fr->r2_in, fr->r2_out, &j[1]);
    have[2] = have[1] && rs_job_of(fr->op, fr->where, fr->in, fr->out, &j[2]);
    const ctosa_op *ops[3] = {o->op, fr->r2, fr->op};
    bool ok = have[2];
    for (int k = 0; k < 3 && ok; k++)
        ok = ops[k]->attr.scale32 && !ops[k]->attr.per_channel && !j[k].iu &&
             j[k].ti == (k < 2 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_INT32) &&
             j[k].to == (k < 2 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT8);
    ok = ok && o->in[0]->count == fr->r2_in[0]->count && o->in[0]->count == fr->out->count;
    rs_res *w = ok ? aligned_alloc(64, (sizeof(rs_res) + 63) & ~(size_t)63) : NULL;
    if (w) {
        *w = (rs_res){.a = o->in[0]->data,
                      .b = fr->r2_in[0]->data,
                      .out = fr->out->data,
                      .n = (size_t)fr->out->count,
                      .za = (int32_t)j[0].izp,
                      .zb = (int32_t)j[1].izp,
                      .ozp = (int32_t)j[2].ozp,
                      .lo = (int32_t)j[2].lo,
                      .hi = (int32_t)j[2].hi};
        for (int k = 0; k < 3; k++)
            for (int l = 0; l < 16; l++)
                kg_rq_lane(&w->blk[k], l, j[k].mult[0], (int)j[k].shift64[0], j[k].dbl[0]);
        size_t groups = (w->n + 15) / 16;
        /* three RESCALEs per element */
        if (interp_par_worth(o->ctx, (double)w->n * INTERP_PAR_ELEM * 3))
            interp_parallel_for(o->ctx, groups, rs_res_rows, w);
        else rs_res_rows(w, 0, groups);
        ok = !w->bad;
        free(w);
    } else {
        ok = false;
    }
    for (int k = 0; k < 3; k++)
        if (have[k]) rs_free(&j[k]);
    return ok;
#else
    (void)o;
    return false;
#endif
}
