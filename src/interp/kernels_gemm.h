/* kernels_gemm.h - the blocked matrix-multiply engine behind CONV2D,
 * CONV3D, TRANSPOSE_CONV2D and MATMUL (internal to the interpreter).
 *
 * out[m][n] = sum over taps t < T, k < Kt of A(m, t)[k] * B[t*Kt + k][n]
 *
 * A is "indirect": for every output row m the caller supplies T pointers,
 * each to Kt contiguous elements (an NHWC pixel's channels, or a row of a
 * matrix). Padding taps point to a zero row. This is convolution without an
 * im2col copy. B is packed once per call into column panels of KG_NR.
 *
 * The float engine accumulates in fp32 (FMA where available); the integer
 * engine multiplies int16 A values by packed int32 B values (zero points
 * already subtracted) into int32 or, when the caller cannot prove the sum
 * fits, int64 accumulators. Work is split over row blocks x column panels
 * with interp_parallel_for (inline when ctx is NULL). The inner kernels are
 * compiled for AVX-512, AVX2+FMA and baseline x86-64 (or plain C elsewhere)
 * and picked at run time. */
#ifndef CTOSA_KERNELS_GEMM_H
#define CTOSA_KERNELS_GEMM_H

#include "interp/interp_internal.h"

#define KG_NR 16 /* columns per packed panel */

/* Fills ptrs[r*T + t] for output rows m0 .. m0+nrows-1, taps t < T. */
typedef void (*kg_rows_fn)(const void *rctx, int64_t m0, int64_t nrows, const void **ptrs);

/* A RESCALE (scale32, int32 -> 8-bit) applied by the int8 dot-product
 * engine as it stores its tiles, instead of storing int32 (kg_job.rq). One
 * block per column panel holds the 16 lanes' constants, laid out for the
 * vector arithmetic (even and odd lanes' 64-bit terms apart). */
typedef struct kg_rq_blk {
    int32_t mult[16], vlo[16], vhi[16];
    int64_t base_e[8], base_o[8], dbl_e[8], dbl_o[8], sh_e[8], sh_o[8];
} kg_rq_blk;
/* Sets lane l of b: multiplier m, shift s (2..62) and the DOUBLE_ROUND term
 * dbl (0 or 2^30), with apply_scale_32's value limits for s. */
void kg_rq_lane(kg_rq_blk *b, int l, int64_t m, int s, int64_t dbl);

/* A tie-to-even step before the RESCALE (kg_requant.tie), per column panel:
 * y = RESCALE1(acc) to int32 through r1, and where (acc & mask) == half
 * (an exact tie of that rounding) y - (y & odd), which is y & ~odd (the
 * even neighbour for odd = 1). */
typedef struct kg_rq_tie {
    kg_rq_blk r1;
    int32_t mask[16], half[16], odd[16];
} kg_rq_tie;

typedef struct kg_requant {
    const kg_rq_blk *blk; /* one per column panel of KG_NR columns */
    const kg_rq_tie *tie; /* the tie step, one per panel, or NULL */
    int32_t ozp, lo, hi;  /* output zero point and clamp range */
    uint8_t *out;         /* 8-bit output, ldo bytes between rows */
    int64_t ldo;
    int bad;   /* set (atomically) when a value broke the REQUIRE: the output is then incomplete */
    bool fast; /* no tie step, SINGLE_ROUND and every shift >= 32: kg_rqf16 applies */
    bool sat;  /* fast, and the clamp is int8's range: kg_rqf16n and a saturating store */
} kg_requant;

/* Fills rq for the fused RESCALE fr applied to an int32 output of nc
 * channels (rows of nc values): checks the RESCALE as interp_k_RESCALE
 * does and returns false, rq untouched, when it would fail or is not a
 * scale32 int32 -> 8-bit one (the RESCALE then runs itself). The
 * constants are built on the first call (their operands are constants)
 * and kept in fr->keep for later runs; rq->blk and rq->tie point there
 * (do not free them); rq->out is fr's output. */
bool interp_rescale_requant(interp_fused_rescale *fr, int64_t nc, kg_requant *rq);

typedef struct kg_job {
    int64_t M, N, Kt;
    int32_t T;
    kg_rows_fn rows;
    const void *rctx;
    const void *bpack;       /* from kg_pack_f / kg_pack_i */
    const float *bias;       /* float engine: N values added to every row, or NULL */
    void *out;               /* float engine: float; integer engine: int32 or int64 */
    int64_t ldo;             /* elements between output rows */
    bool acc64;              /* integer engine: accumulate and store int64 */
    const interp_post *post; /* float engine: fused CLAMP applied as tiles are stored, or NULL */
    const int32_t *ibias;    /* int8 dot-product engine: N values added to every row */
    kg_requant *rq;          /* int8 dot-product engine: store RESCALE(sum) as bytes, or NULL */
    bool xa;                 /* int8 dot-product engine: A holds int8 x, used as the byte x + 128 */
    int failed;              /* set when a worker could not allocate */
} kg_job;

/* Number of elements of a packed B with K rows and N columns. */
size_t kg_pack_elems(int64_t K, int64_t N);
/* Packs B[k][n] = src[k*sk + n*sn] into dst (kg_pack_elems floats); columns
 * past N are zero. */
void kg_pack_f(float *dst, int64_t K, int64_t N, const float *src, int64_t sk, int64_t sn);
/* The same, panels split over the worker threads (ctx may be NULL). */
void kg_pack_f_par(interp_ctx *ctx, float *dst, int64_t K, int64_t N, const float *src, int64_t sk,
                   int64_t sn);
/* Same for the integer engine: dst holds int32 values. get(k, n) supplies
 * each value (zero point already subtracted). */
void kg_pack_i(int32_t *dst, int64_t K, int64_t N, int32_t (*get)(const void *c, int64_t k, int64_t n),
               const void *c);

/* Applies the post p (the fused CLAMP or SiLU) to n floats in place, with
 * the float engine's tile-store arithmetic (the same bits). */
void kg_post_rows(const interp_post *p, float *d, size_t n);

/* Runs the job; returns false when out of memory. */
bool kg_run_f(interp_ctx *ctx, kg_job *job);
/* A values are int16. */
bool kg_run_i(interp_ctx *ctx, kg_job *job);

/* One row block x one column panel of a job (the engines' inner tiles);
 * kg_dispatch splits a job into tiles over the worker threads, with row
 * blocks of 4 * mr rows. */
typedef void (*kg_tile_fn)(const kg_job *, const void *const *ptrs, int64_t row0, int64_t nrows,
                           int64_t panel);
bool kg_dispatch(interp_ctx *ctx, kg_job *job, kg_tile_fn tile, int mr);

/* The int8 dot-product engine (kernels_qgemm.c): unsigned 8-bit A values
 * times signed 8-bit B values summed in int32 with the CPU's dot-product
 * instructions (AVX-512 VNNI, else AVX-VNNI). Callers turn x - zp into
 * (x + 128) (a byte) times w, and remove (128 + zp) * column sum through
 * ibias; int32 wrap-around makes the result exact whenever the true sum
 * fits int32, which the caller proves beforehand (else it uses the other
 * paths). No dot-product instruction (or kg_q8_limit(0)): kg_q8_isa() is
 * 0 and callers use the exact fp32 / int16 paths, since the AVX2 byte
 * multiply-add (vpmaddubsw) saturates its int16 pair sums. */
enum { KG_Q8_NONE, KG_Q8_AVXVNNI, KG_Q8_AVX512VNNI };
int kg_q8_isa(void);
/* Tests: caps the instruction set kg_q8_isa() reports (KG_Q8_*: the best
 * one the CPU has at or below the cap); -1 lifts the cap. Not thread-safe: set it before running kernels. */
void kg_q8_limit(int level);
/* Tests: how many jobs kg_run_q8 has run in this process. */
uint64_t kg_q8_runs(void);
/* Packed B: T taps of Kt4 (a multiple of 4) rows each, N columns, in column
 * panels of KG_NR: panel p, tap t, group g holds 64 bytes, column j's 4
 * consecutive k values at j*4. */
size_t kg_q8_pack_bytes(int64_t T, int64_t Kt4, int64_t N);
/* Packs B[t*Kt + k][n] = src[n*sn + (t*Kt + k)*sk] - zp (rows k >= Kt are
 * zero) and sets colsum[n] (N entries) to each column's sum. Returns false,
 * leaving dst incomplete, when a value does not fit int8. *maxabs gets the
 * largest |value|. */
bool kg_q8_pack(int8_t *dst, int64_t T, int64_t Kt, int64_t Kt4, int64_t N, const int8_t *src, int64_t sn,
                int64_t sk, int64_t zp, int32_t *colsum, int64_t *maxabs);
/* Runs the job: job->Kt is Kt4, every A row pointer covers Kt4 bytes,
 * job->out is int32 and job->ibias required; with job->xa the rows may be
 * the int8 tensor itself (Kt4 == its channel count, padding rows of the
 * zero point's int8 bytes). false when out of memory. */
bool kg_run_q8(interp_ctx *ctx, kg_job *job);
/* Row pointers of a matrix: row m at base + m * stride (rctx: kg_flat). */
typedef struct kg_flat {
    const uint8_t *base;
    int64_t stride;
} kg_flat;
void kg_rows_flat(const void *rc, int64_t m0, int64_t nrows, const void **ptrs);
/* int8 MATMUL (A [N,H,C], B [N,C,W], int32 out) on the engine when it is
 * exact for these operands; *done false (and NULL) leaves it to the
 * caller's path. */
ctosa_error *kg_matmul_q8(const interp_op *o, const itensor *A, const itensor *B, itensor *out, int64_t azp,
                          int64_t bzp, bool *done);
/* d[i] = (uint8)(s[i] + 128) for n values, stride-padded: rows of ic values
 * become rows of ic4 bytes (the extra bytes 0). With scan, returns max
 * |s[i] - zp| (0 without). */
int32_t kg_q8_convert(const int8_t *s, size_t rows, size_t ic, size_t ic4, int32_t zp, uint8_t *d, bool scan);
/* The same copy (without the scan) from an NCHW tensor [n, c, hw]: d is
 * NHWC with rows of c4 bytes. d must be 4-byte aligned. */
void kg_q8_convert_nchw(const int8_t *s, size_t n, size_t c, size_t hw, size_t c4, uint8_t *d);

/* Per-thread scratch buffers that survive between kernel calls, so large
 * temporaries do not pay fresh page faults on every call. Returns a 64-byte
 * aligned buffer of at least bytes, valid until the next kg_scratch call
 * with the same slot in the same thread (or the thread's exit, which frees
 * them); NULL when out of memory. Slots: KG_SCRATCH_SLOTS independent ones.
 * Only the thread that entered the kernel may use them (not workers). */
#define KG_SCRATCH_SLOTS 6
void *kg_scratch(int slot, size_t bytes);

/* Constant data kept across runs in the operator's cache (interp_cache_get):
 * the block starts with a 64-byte header holding a key (what was packed,
 * sizes), so a lookup with another key misses. kg_cache_find returns the
 * payload (64-byte aligned) or NULL; kg_cache_new allocates a payload of
 * bytes under the key, or returns NULL (no cache: use a temporary). Only
 * for data derived from is_const inputs. */
#define KG_CACHE_KEY 6
const void *kg_cache_find(const interp_op *o, const int64_t key[KG_CACHE_KEY]);
void *kg_cache_new(const interp_op *o, const int64_t key[KG_CACHE_KEY], size_t bytes);

/* Vectorised helpers for the integer paths (ISA picked at run time). */
/* d[i] = s[i] - zp as float; returns max |s[i] - zp|. */
int32_t kg_cvt_i8_f32(const int8_t *s, size_t n, int32_t zp, float *d);
/* out[r][j] = (int32)acc[r][j] + bias[j] over rows x oc; acc values are
 * integers held in float (|acc| < 2^24) or int64. Returns false if a sum
 * leaves the int32 range (the outputs are then unspecified). */
bool kg_bias_f32_i32(const float *acc, size_t rows, size_t oc, const int32_t *bias, int32_t *out);
bool kg_bias_i64_i32(const int64_t *acc, size_t rows, size_t oc, const int32_t *bias, int32_t *out);
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 16 lanes of int32 values v (input zero point already subtracted) through
 * the RESCALE of block p: VPMULDQ gives the exact 64-bit products of the
 * even and the odd lanes, VPSRAVQ the per-lane shifts, the DOUBLE_ROUND
 * term takes the value's sign as (d ^ s) - s; adds ozp and clamps to
 * [lo, hi]. *bad gets the lanes whose value breaks apply_scale_32's
 * REQUIRE (the only one that can fail: with |value| < 2^(shift-1), or
 * < 2^31 for shifts above 32, and multipliers below 2^31 the scaled value
 * stays within +-(2^30 + 1), so no int32 overflow follows). */
static inline __attribute__((always_inline, target("avx512f"))) __m512i
kg_rq16(__m512i v, const kg_rq_blk *p, __m512i ozp, __m512i lo, __m512i hi, __mmask16 *bad) {
    *bad |= _mm512_cmplt_epi32_mask(v, _mm512_loadu_si512(p->vlo)) |
            _mm512_cmpgt_epi32_mask(v, _mm512_loadu_si512(p->vhi));
    __m512i m = _mm512_loadu_si512(p->mult);
    __m512i pe = _mm512_mul_epi32(v, m);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(v, 32), _mm512_srli_epi64(m, 32));
    __m512i se = _mm512_srai_epi64(_mm512_slli_epi64(v, 32), 63), so = _mm512_srai_epi64(v, 63);
    __m512i de = _mm512_loadu_si512(p->dbl_e), dd = _mm512_loadu_si512(p->dbl_o);
    __m512i re =
        _mm512_add_epi64(_mm512_loadu_si512(p->base_e), _mm512_sub_epi64(_mm512_xor_si512(de, se), se));
    __m512i ro =
        _mm512_add_epi64(_mm512_loadu_si512(p->base_o), _mm512_sub_epi64(_mm512_xor_si512(dd, so), so));
    __m512i qe = _mm512_srav_epi64(_mm512_add_epi64(pe, re), _mm512_loadu_si512(p->sh_e));
    __m512i qo = _mm512_srav_epi64(_mm512_add_epi64(po, ro), _mm512_loadu_si512(p->sh_o));
    __m512i r = _mm512_mask_blend_epi32(0xAAAA, qe, _mm512_slli_epi64(qo, 32));
    return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(r, ozp), lo), hi);
}

/* kg_rq16 for the common case kg_requant.fast, with one block's
 * constants held in registers (kg_rqf_load once per panel): with shifts of
 * 32 or more apply_scale_32's REQUIRE holds for every int32 value, there
 * is no DOUBLE_ROUND term, and the odd lanes' quotient is the high half of
 * the product shifted by s - 32, so no shift back is needed. */
typedef struct kg_rqf {
    __m512i m, mo, be, bo, se, so;
} kg_rqf;
static inline __attribute__((always_inline, target("avx512f"))) void kg_rqf_load(kg_rqf *f,
                                                                                 const kg_rq_blk *p) {
    f->m = _mm512_loadu_si512(p->mult);
    f->mo = _mm512_srli_epi64(f->m, 32);
    f->be = _mm512_loadu_si512(p->base_e);
    f->bo = _mm512_loadu_si512(p->base_o);
    f->se = _mm512_loadu_si512(p->sh_e);
    f->so = _mm512_sub_epi64(_mm512_loadu_si512(p->sh_o), _mm512_set1_epi64(32));
}
/* The value before the clamp (|value| < 2^30 + 128, so no overflow): with
 * kg_requant.sat the caller stores it with signed saturation (VPMOVSDB),
 * which is the clamp to [-128, 127]. */
static inline __attribute__((always_inline, target("avx512f"))) __m512i kg_rqf16n(__m512i v, const kg_rqf *f,
                                                                                  __m512i ozp) {
    __m512i qe = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(v, f->m), f->be), f->se);
    __m512i qo =
        _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), f->mo), f->bo), f->so);
    return _mm512_add_epi32(_mm512_mask_blend_epi32(0xAAAA, qe, qo), ozp);
}
static inline __attribute__((always_inline, target("avx512f"))) __m512i
kg_rqf16(__m512i v, const kg_rqf *f, __m512i ozp, __m512i lo, __m512i hi) {
    return _mm512_min_epi32(_mm512_max_epi32(kg_rqf16n(v, f, ozp), lo), hi);
}

/* The whole store of 16 accumulators of column panel k: rq's tie step
 * when it has one, then its RESCALE. */
static inline __attribute__((always_inline, target("avx512f"))) __m512i
kg_rqs16(__m512i v, const kg_requant *rq, int64_t k, __m512i ozp, __m512i lo, __m512i hi, __mmask16 *bad) {
    if (rq->tie) {
        const kg_rq_tie *t = rq->tie + k;
        __m512i y = kg_rq16(v, &t->r1, _mm512_setzero_si512(), _mm512_set1_epi32(INT32_MIN),
                            _mm512_set1_epi32(INT32_MAX), bad);
        __mmask16 tie = _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, _mm512_loadu_si512(t->mask)),
                                                _mm512_loadu_si512(t->half));
        v = _mm512_mask_andnot_epi32(y, tie, _mm512_loadu_si512(t->odd), y);
    }
    return kg_rq16(v, rq->blk + k, ozp, lo, hi, bad);
}
#endif

/* One lane l of block p in scalar code: RESCALE to [lo, hi] around ozp. */
static inline int32_t kg_rq1_blk(int32_t v, const kg_rq_blk *p, int l, int32_t ozp, int32_t lo, int32_t hi,
                                 bool *bad) {
    *bad |= v < p->vlo[l] || v > p->vhi[l];
    const int64_t *base = l % 2 ? p->base_o : p->base_e, *dbl = l % 2 ? p->dbl_o : p->dbl_e;
    const int64_t *sh = l % 2 ? p->sh_o : p->sh_e;
    int64_t r = ((int64_t)v * p->mult[l] + base[l / 2] + (v >= 0 ? dbl[l / 2] : -dbl[l / 2])) >> sh[l / 2];
    r += ozp;
    return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}

/* kg_rqs16 for lane l of column panel k, in scalar code. */
static inline int32_t kg_rq1(int32_t v, const kg_requant *rq, int64_t k, int l, bool *bad) {
    if (rq->tie) {
        const kg_rq_tie *t = rq->tie + k;
        int32_t y = kg_rq1_blk(v, &t->r1, l, 0, INT32_MIN, INT32_MAX, bad);
        v = (v & t->mask[l]) == t->half[l] ? y & ~t->odd[l] : y;
    }
    return kg_rq1_blk(v, rq->blk + k, l, rq->ozp, rq->lo, rq->hi, bad);
}
#endif
