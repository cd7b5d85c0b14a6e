/* kernels_gemm.c - blocked indirect GEMM engine (see kernels_gemm.h).
 *
 * The inner tile computes MR rows x NP column panels of KG_NR columns with
 * the accumulators held in registers; it is written once with GCC vector
 * extensions and instantiated per instruction set (the vector code maps
 * onto zmm, ymm or xmm registers), with MR and NP chosen so the
 * accumulators fill most of the register file without spilling: with
 * AVX-512, 6 rows x 4 panels (24 of the 32 zmm registers), so each
 * broadcast A value and each loaded B vector serve four and six
 * multiply-adds. Constant B is packed once and kept in the operator's
 * cache by the callers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"
#include "interp/kernels_gemm.h"
#include "interp/vec_math.h"

typedef float kg_vf __attribute__((vector_size(KG_NR * 4)));
typedef int32_t kg_vi __attribute__((vector_size(KG_NR * 4)));
typedef int64_t kg_vl __attribute__((vector_size(KG_NR * 8)));

size_t kg_pack_elems(int64_t K, int64_t N) {
    int64_t panels = (N + KG_NR - 1) / KG_NR;
    return (size_t)(panels * K * KG_NR);
}

/* One panel of 16 columns. When columns are the slow index of src (sn >
 * sk, convolution weights [OC][K]) each column is read contiguously. */
static void kg_pack_f_panel(float *d, int64_t p, int64_t K, int64_t N, const float *src, int64_t sk,
                            int64_t sn) {
    if (sn > sk && sk == 1) {
        /* 16 x 16 blocks: 16 contiguous source rows in, one 1 KiB block out */
        int64_t n0 = p * KG_NR, ncols = N - n0 < KG_NR ? N - n0 : KG_NR;
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
            int64_t kn = K - k0 < 16 ? K - k0 : 16;
            float *db = d + k0 * KG_NR;
            for (int64_t j = 0; j < KG_NR; j++) {
                if (j < ncols) {
                    const float *s = src + (n0 + j) * sn + k0;
                    for (int64_t kk = 0; kk < kn; kk++) db[kk * KG_NR + j] = s[kk];
                } else {
                    for (int64_t kk = 0; kk < kn; kk++) db[kk * KG_NR + j] = 0.0f;
                }
            }
        }
    } else if (sn > sk) {
        for (int j = 0; j < KG_NR; j++) {
            int64_t n = p * KG_NR + j;
            if (n < N) {
                const float *s = src + n * sn;
                for (int64_t k = 0; k < K; k++) d[k * KG_NR + j] = s[k * sk];
            } else {
                for (int64_t k = 0; k < K; k++) d[k * KG_NR + j] = 0.0f;
            }
        }
    } else if (sn == 1) {
        /* rows of src are already 16 contiguous columns (MATMUL's B) */
        int64_t n0 = p * KG_NR, ncols = N - n0 < KG_NR ? N - n0 : KG_NR;
        for (int64_t k = 0; k < K; k++) {
            const float *s = src + k * sk + n0;
            float *dk = d + k * KG_NR;
            for (int64_t j = 0; j < ncols; j++) dk[j] = s[j];
            for (int64_t j = ncols; j < KG_NR; j++) dk[j] = 0.0f;
        }
    } else {
        for (int64_t k = 0; k < K; k++)
            for (int j = 0; j < KG_NR; j++) {
                int64_t n = p * KG_NR + j;
                d[k * KG_NR + j] = n < N ? src[k * sk + n * sn] : 0.0f;
            }
    }
}

typedef struct kg_pack_job {
    float *dst;
    int64_t K, N, sk, sn;
    const float *src;
} kg_pack_job;

static void kg_pack_worker(void *arg, size_t begin, size_t end) {
    const kg_pack_job *j = arg;
    for (size_t p = begin; p < end; p++)
        kg_pack_f_panel(j->dst + (int64_t)p * j->K * KG_NR, (int64_t)p, j->K, j->N, j->src, j->sk, j->sn);
}

void kg_pack_f_par(interp_ctx *ctx, float *dst, int64_t K, int64_t N, const float *src, int64_t sk,
                   int64_t sn) {
    int64_t panels = (N + KG_NR - 1) / KG_NR;
    kg_pack_job j = {dst, K, N, sk, sn, src};
    if (panels > 1 && interp_par_worth(ctx, (double)K * (double)N * INTERP_PAR_ELEM))
        interp_parallel_for(ctx, (size_t)panels, kg_pack_worker, &j);
    else kg_pack_worker(&j, 0, (size_t)panels);
}

void kg_pack_f(float *dst, int64_t K, int64_t N, const float *src, int64_t sk, int64_t sn) {
    kg_pack_f_par(NULL, dst, K, N, src, sk, sn);
}

void kg_pack_i(int32_t *dst, int64_t K, int64_t N, int32_t (*get)(const void *c, int64_t k, int64_t n),
               const void *c) {
    int64_t panels = (N + KG_NR - 1) / KG_NR;
    for (int64_t p = 0; p < panels; p++) {
        int32_t *d = dst + p * K * KG_NR;
        for (int64_t k = 0; k < K; k++)
            for (int j = 0; j < KG_NR; j++) {
                int64_t n = p * KG_NR + j;
                d[k * KG_NR + j] = n < N ? get(c, k, n) : 0;
            }
    }
}

/* The fused CLAMP (interp_post_f) on a vector, lane for lane the same
 * selects: v < lo -> lo, else v > hi -> hi, else v; NaN -> lo when
 * ignore_nan. Or the fused SiLU: v * sigmoid(v), the expression of the
 * SiLU pass (kernels_activation.c) on the same vector sigmoid, so the
 * same bits. A macro: vector arguments would differ in ABI per ISA. */
#define KG_POST(V, P)                                                                           \
    ({                                                                                          \
        kg_vf v_ = (V);                                                                         \
        if ((P)->silu) {                                                                        \
            v_ = v_ * VM_SIGMOID(v_);                                                           \
        } else {                                                                                \
            kg_vf lo_ = (kg_vf){0} + (P)->lo, hi_ = (kg_vf){0} + (P)->hi;                       \
            kg_vi lt_ = v_<lo_, gt_ = v_> hi_;                                                  \
            kg_vi r_ = (lt_ & (kg_vi)lo_) | (~lt_ & ((gt_ & (kg_vi)hi_) | (~gt_ & (kg_vi)v_))); \
            if ((P)->ignore_nan) {                                                              \
                kg_vi nan_ = v_ != v_;                                                          \
                r_ = (nan_ & (kg_vi)lo_) | (~nan_ & r_);                                        \
            }                                                                                   \
            v_ = (kg_vf)r_;                                                                     \
        }                                                                                       \
        v_;                                                                                     \
    })

typedef struct kg_post_job {
    const interp_post *p;
    float *d;
    size_t n;
} kg_post_job;

/* Elements [begin, end) of a kg_post_job, a vector at a time (the last one
 * partial). */
static inline IM_INLINE void kg_post_impl(void *arg, size_t begin, size_t end) {
    const kg_post_job *j = arg;
    size_t i = begin;
    for (; i + KG_NR <= end; i += KG_NR) {
        kg_vf v;
        memcpy(&v, j->d + i, sizeof v);
        v = KG_POST(v, j->p);
        memcpy(j->d + i, &v, sizeof v);
    }
    if (i < end) {
        kg_vf v = {0};
        memcpy(&v, j->d + i, (end - i) * sizeof(float));
        v = KG_POST(v, j->p);
        memcpy(j->d + i, &v, (end - i) * sizeof(float));
    }
}
IM_MULTIVERSION(kg_post_v, kg_post_impl)

void kg_post_rows(const interp_post *p, float *d, size_t n) {
    kg_post_job j = {p, d, n};
    if (p) kg_post_v(&j, 0, n);
}

#ifndef KG_KC
#define KG_KC 4096 /* K values of one column panel per chunk (NP panels: KG_KC / NP each) */
#endif

/* MR rows x NP column panels (NP vectors of KG_NR columns) of one row
 * block, from panel p0 on; ptrs holds nrows*T row pointers. Each output
 * element is summed over k in the same order with the same multiply-adds
 * whatever MR and NP are, so every tile shape gives the same bits; wider
 * tiles only reuse each broadcast A value over NP vectors of B. */
#define KG_TILE_F_PART(NAME, ATTR, MR, NP)                                                                  \
    ATTR static inline __attribute__((always_inline)) void NAME(const kg_job *job, const void *const *ptrs, \
                                                                int64_t nrows, int64_t p0, float *out) {    \
        const int64_t Kt = job->Kt, K = Kt * job->T;                                                        \
        const int32_t T = job->T;                                                                           \
        const kg_vf *bp = (const kg_vf *)job->bpack + p0 * K;                                               \
        kg_vf bias[NP];                                                                                     \
        int ncols[NP];                                                                                      \
        for (int j = 0; j < NP; j++) {                                                                      \
            const int64_t n0 = (p0 + j) * KG_NR;                                                            \
            ncols[j] = job->N - n0 < KG_NR ? (int)(job->N - n0) : KG_NR;                                    \
            bias[j] = (kg_vf){0};                                                                           \
            if (job->bias)                                                                                  \
                for (int i = 0; i < ncols[j]; i++) bias[j][i] = job->bias[n0 + i];                          \
        }                                                                                                   \
        /* K in chunks whose NP panels of B stay in L2 while every row of    \
         * the block passes over them; partial sums wait in the output     \
         * (stored and reloaded exactly, so the bits do not change) */                              \
        const int64_t kc = KG_KC / NP;                                                                      \
        for (int64_t c0 = 0; c0 < K || c0 == 0; c0 += kc) { /* K = 0: one pass for the bias */              \
            const int64_t c1 = K - c0 < kc ? K : c0 + kc;                                                   \
            const int32_t t0 = K ? (int32_t)(c0 / Kt) : 0, t1 = K ? (int32_t)((c1 - 1) / Kt + 1) : 0;       \
            for (int64_t r = 0; r < nrows; r += MR) {                                                       \
                const int mr = nrows - r < MR ? (int)(nrows - r) : MR;                                      \
                kg_vf acc[MR][NP];                                                                          \
                _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++)                                       \
                    _Pragma("GCC unroll 4") for (int j = 0; j < NP; j++) acc[m][j] = (kg_vf){0};            \
                if (c0 > 0)                                                                                 \
                    for (int m = 0; m < mr; m++)                                                            \
                        for (int j = 0; j < NP; j++) {                                                      \
                            const float *o = out + (r + m) * job->ldo + (p0 + j) * KG_NR;                   \
                            if (ncols[j] == KG_NR) memcpy(&acc[m][j], o, sizeof acc[m][j]);                 \
                            else                                                                            \
                                for (int i = 0; i < ncols[j]; i++) acc[m][j][i] = o[i];                     \
                        }                                                                                   \
                for (int32_t t = t0; t < t1; t++) {                                                         \
                    const float *a[MR];                                                                     \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++) a[m] =                            \
                        (const float *)ptrs[(r + (m < mr ? m : 0)) * T + t];                                \
                    const kg_vf *b = bp + t * Kt;                                                           \
                    const int64_t k0 = c0 > t * Kt ? c0 - t * Kt : 0;                                       \
                    const int64_t k1 = c1 < (t + 1) * Kt ? c1 - t * Kt : Kt;                                \
                    for (int64_t k = k0; k < k1; k++) {                                                     \
                        kg_vf bv[NP];                                                                       \
                        _Pragma("GCC unroll 4") for (int j = 0; j < NP; j++) bv[j] = b[j * K + k];          \
                        _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++) {                             \
                            const float av = a[m][k];                                                       \
                            _Pragma("GCC unroll 4") for (int j = 0; j < NP; j++) acc[m][j] += av * bv[j];   \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
                const bool last = c1 == K;                                                                  \
                for (int m = 0; m < mr; m++)                                                                \
                    for (int j = 0; j < NP; j++) {                                                          \
                        float *o = out + (r + m) * job->ldo + (p0 + j) * KG_NR;                             \
                        kg_vf v = acc[m][j];                                                                \
                        if (last) {                                                                         \
                            v += bias[j];                                                                   \
                            if (job->post) v = KG_POST(v, job->post);                                       \
                        }                                                                                   \
                        if (ncols[j] == KG_NR) memcpy(o, &v, sizeof v);                                     \
                        else                                                                                \
                            for (int i = 0; i < ncols[j]; i++) o[i] = v[i];                                 \
                    }                                                                                       \
            }                                                                                               \
        }                                                                                                   \
    }

/* One row block x one group of NP column panels: the widest tile where the
 * group is whole, narrower ones (more rows each) for the last panels. */
#define KG_TILE_F(NAME, ATTR, NP, MR4, MR3, MR2, MR1)                                              \
    KG_TILE_F_PART(NAME##_4, ATTR, MR4, 4)                                                         \
    KG_TILE_F_PART(NAME##_3, ATTR, MR3, 3)                                                         \
    KG_TILE_F_PART(NAME##_2, ATTR, MR2, 2)                                                         \
    KG_TILE_F_PART(NAME##_1, ATTR, MR1, 1)                                                         \
    ATTR static void NAME(const kg_job *job, const void *const *ptrs, int64_t row0, int64_t nrows, \
                          int64_t group) {                                                         \
        const int64_t npanels = (job->N + KG_NR - 1) / KG_NR;                                      \
        int64_t p = group * NP, left = npanels - p < NP ? npanels - p : NP;                        \
        float *out = (float *)job->out + row0 * job->ldo;                                          \
        if (left >= 4) NAME##_4(job, ptrs, nrows, p, out), p += 4, left -= 4;                      \
        if (left == 3) NAME##_3(job, ptrs, nrows, p, out);                                         \
        else if (left == 2) NAME##_2(job, ptrs, nrows, p, out);                                    \
        else if (left == 1) NAME##_1(job, ptrs, nrows, p, out);                                    \
    }

#define KG_TILE_I(NAME, ATTR, MR, VACC, ACC_T)                                                           \
    ATTR static void NAME(const kg_job *job, const void *const *ptrs, int64_t row0, int64_t nrows,       \
                          int64_t panel) {                                                               \
        const int64_t Kt = job->Kt, K = Kt * job->T;                                                     \
        const int32_t T = job->T;                                                                        \
        const int32_t *bp = (const int32_t *)job->bpack + panel * K * KG_NR;                             \
        const int64_t n0 = panel * KG_NR;                                                                \
        const int ncols = job->N - n0 < KG_NR ? (int)(job->N - n0) : KG_NR;                              \
        for (int64_t r = 0; r < nrows; r += MR) {                                                        \
            const int mr = nrows - r < MR ? (int)(nrows - r) : MR;                                       \
            VACC acc[MR];                                                                                \
            _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++) acc[m] = (VACC){0};                    \
            for (int32_t t = 0; t < T; t++) {                                                            \
                const int16_t *a[MR];                                                                    \
                _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++) a[m] =                             \
                    (const int16_t *)ptrs[(r + (m < mr ? m : 0)) * T + t];                               \
                const kg_vi *b = (const kg_vi *)(bp + t * Kt * KG_NR);                                   \
                for (int64_t k = 0; k < Kt; k++) {                                                       \
                    VACC bv = __builtin_convertvector(b[k], VACC);                                       \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MR; m++) acc[m] += (ACC_T)a[m][k] * bv; \
                }                                                                                        \
            }                                                                                            \
            ACC_T *o = (ACC_T *)job->out + (row0 + r) * job->ldo + n0;                                   \
            for (int m = 0; m < mr; m++)                                                                 \
                for (int j = 0; j < ncols; j++) o[m * job->ldo + j] = acc[m][j];                         \
        }                                                                                                \
    }

KG_TILE_F(kg_f_base, , 1, 1, 1, 1, 3)
KG_TILE_I(kg_i_base, , 3, kg_vi, int32_t)
KG_TILE_I(kg_l_base, , 2, kg_vl, int64_t)

#if defined(__x86_64__) && defined(__GNUC__)
#define KG_X86 1
#define KG_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#define KG_AVX2 __attribute__((target("avx2,fma")))
#ifndef KG_F512_NP
#define KG_F512_NP 4
#endif
KG_TILE_F(kg_f_avx512, KG_AVX512, KG_F512_NP, 6, 8, 12, 12)
KG_TILE_F(kg_f_avx2, KG_AVX2, 1, 1, 1, 1, 6)
KG_TILE_I(kg_i_avx512, KG_AVX512, 12, kg_vi, int32_t)
KG_TILE_I(kg_i_avx2, KG_AVX2, 6, kg_vi, int32_t)
KG_TILE_I(kg_l_avx512, KG_AVX512, 6, kg_vl, int64_t)
#endif

enum { KG_ISA_BASE, KG_ISA_AVX2, KG_ISA_AVX512 };

static int kg_isa(void) {
#ifdef KG_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return KG_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return KG_ISA_AVX2;
#endif
    return KG_ISA_BASE;
}

typedef struct kg_run {
    kg_job *job;
    kg_tile_fn tile;
    int64_t block_rows, nblocks, ngroups;
} kg_run;

static void kg_worker(void *arg, size_t begin, size_t end) {
    kg_run *r = arg;
    kg_job *job = r->job;
    const void **ptrs = malloc((size_t)r->block_rows * (size_t)job->T * sizeof *ptrs);
    if (!ptrs) {
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t cur = -1;
    for (size_t i = begin; i < end; i++) {
        int64_t mb = (int64_t)i / r->ngroups, p = (int64_t)i % r->ngroups;
        int64_t row0 = mb * r->block_rows;
        int64_t nrows = job->M - row0 < r->block_rows ? job->M - row0 : r->block_rows;
        if (mb != cur) {
            job->rows(job->rctx, row0, nrows, ptrs);
            cur = mb;
        }
        r->tile(job, ptrs, row0, nrows, p);
    }
    free(ptrs);
}

/* Work items are row blocks x groups of np column panels (the tile's
 * last argument is then the group). */
static bool kg_dispatch_np(interp_ctx *ctx, kg_job *job, kg_tile_fn tile, int block_rows, int np) {
    if (job->M <= 0 || job->N <= 0) return true;
    kg_run r = {.job = job, .tile = tile, .block_rows = block_rows};
    r.ngroups = ((job->N + KG_NR - 1) / KG_NR + np - 1) / np;
    if (!interp_par_worth(ctx, (double)job->M * (double)job->N * (double)(job->Kt * job->T))) ctx = NULL;
    /* A small layer (7x7 or 14x14 pixels, few column groups) in blocks of
     * block_rows gives the threads too few items, or one big and one tiny
     * one: smaller blocks, still whole 12-row tiles (every tile height
     * divides 24 or 12), so that each thread gets several. */
    const int64_t want = ctx ? 4 * (int64_t)interp_threads(ctx) : 0;
    if (ctx && ((job->M + block_rows - 1) / block_rows) * r.ngroups < want) {
        int64_t per = (want + r.ngroups - 1) / r.ngroups; /* row blocks wanted */
        int64_t rows = (job->M + per - 1) / per;
        rows = rows > 12 ? (rows + 23) / 24 * 24 : 12;
        if (rows < r.block_rows) r.block_rows = rows;
    }
    r.nblocks = (job->M + r.block_rows - 1) / r.block_rows;
    job->failed = 0;
    size_t n = (size_t)(r.nblocks * r.ngroups);
    if (ctx) interp_parallel_for(ctx, n, kg_worker, &r);
    else kg_worker(&r, 0, n);
    return !job->failed;
}

bool kg_dispatch(interp_ctx *ctx, kg_job *job, kg_tile_fn tile, int mr) {
    /* rows per block: several tiles so the block's A rows stay in L2 while
     * every panel of B passes over them */
    return kg_dispatch_np(ctx, job, tile, mr * 4, 1);
}

bool kg_run_f(interp_ctx *ctx, kg_job *job) {
    switch (kg_isa()) {
#ifdef KG_X86
    case KG_ISA_AVX512: return kg_dispatch_np(ctx, job, kg_f_avx512, 48, KG_F512_NP);
    case KG_ISA_AVX2: return kg_dispatch(ctx, job, kg_f_avx2, 6);
#endif
    default: return kg_dispatch(ctx, job, kg_f_base, 3);
    }
}

bool kg_run_i(interp_ctx *ctx, kg_job *job) {
    switch (kg_isa()) {
#ifdef KG_X86
    case KG_ISA_AVX512:
        return job->acc64 ? kg_dispatch(ctx, job, kg_l_avx512, 6) : kg_dispatch(ctx, job, kg_i_avx512, 12);
    case KG_ISA_AVX2:
        return job->acc64 ? kg_dispatch(ctx, job, kg_l_base, 2) : kg_dispatch(ctx, job, kg_i_avx2, 6);
#endif
    default: return job->acc64 ? kg_dispatch(ctx, job, kg_l_base, 2) : kg_dispatch(ctx, job, kg_i_base, 3);
    }
}

/* ------------------------------------------------ integer-path helpers */

static inline __attribute__((always_inline)) int32_t cvt_i8_impl(const int8_t *s, size_t n, int32_t zp,
                                                                 float *d) {
    int32_t mn = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t v = s[i] - zp;
        d[i] = (float)v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    return -mn > mx ? -mn : mx;
}

static inline __attribute__((always_inline)) bool bias_f_impl(const float *acc, size_t rows, size_t oc,
                                                              const int32_t *bias, int32_t *out) {
    int64_t lo = 0, hi = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < oc; j++) {
            int64_t v = (int64_t)(int32_t)acc[r * oc + j] + bias[j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            out[r * oc + j] = (int32_t)v;
        }
    return lo >= INT32_MIN && hi <= INT32_MAX;
}

static inline __attribute__((always_inline)) bool bias_l_impl(const int64_t *acc, size_t rows, size_t oc,
                                                              const int32_t *bias, int32_t *out) {
    int64_t lo = 0, hi = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < oc; j++) {
            int64_t a = acc[r * oc + j], v = a + bias[j];
            lo = v < lo ? v : lo;
            lo = a < lo ? a : lo;
            hi = v > hi ? v : hi;
            hi = a > hi ? a : hi;
            out[r * oc + j] = (int32_t)v;
        }
    return lo >= INT32_MIN && hi <= INT32_MAX;
}

#ifdef KG_X86
#define KG_VERSIONS(RET, NAME, IMPL, PARAMS, ARGS)                                                           \
    KG_AVX512 static RET NAME##_v4 PARAMS { return IMPL ARGS; }                                              \
    KG_AVX2 static RET NAME##_v3 PARAMS { return IMPL ARGS; }                                                \
    static RET NAME##_v1 PARAMS { return IMPL ARGS; }                                                        \
    RET NAME PARAMS {                                                                                        \
        int isa = kg_isa();                                                                                  \
        return isa == KG_ISA_AVX512 ? NAME##_v4 ARGS : isa == KG_ISA_AVX2 ? NAME##_v3 ARGS : NAME##_v1 ARGS; \
    }
#else
#define KG_VERSIONS(RET, NAME, IMPL, PARAMS, ARGS) \
    RET NAME PARAMS { return IMPL ARGS; }
#endif

KG_VERSIONS(int32_t, kg_cvt_i8_f32, cvt_i8_impl, (const int8_t *s, size_t n, int32_t zp, float *d),
            (s, n, zp, d))
KG_VERSIONS(bool, kg_bias_f32_i32, bias_f_impl,
            (const float *acc, size_t rows, size_t oc, const int32_t *bias, int32_t *out),
            (acc, rows, oc, bias, out))
KG_VERSIONS(bool, kg_bias_i64_i32, bias_l_impl,
            (const int64_t *acc, size_t rows, size_t oc, const int32_t *bias, int32_t *out),
            (acc, rows, oc, bias, out))

/* ---------------------------------------------------------- scratch */

typedef struct kg_scratch_set {
    void *p[KG_SCRATCH_SLOTS];
    size_t n[KG_SCRATCH_SLOTS];
} kg_scratch_set;

static pthread_key_t kg_scratch_key;
static pthread_once_t kg_scratch_once = PTHREAD_ONCE_INIT;
static bool kg_scratch_ok;

static void kg_scratch_free(void *v) {
    kg_scratch_set *s = v;
    for (int i = 0; i < KG_SCRATCH_SLOTS; i++) free(s->p[i]);
    free(s);
}

static void kg_scratch_init(void) {
    kg_scratch_ok = pthread_key_create(&kg_scratch_key, kg_scratch_free) == 0;
}

void *kg_scratch(int slot, size_t bytes) {
    if (slot < 0 || slot >= KG_SCRATCH_SLOTS) return NULL;
    pthread_once(&kg_scratch_once, kg_scratch_init);
    if (!kg_scratch_ok) return NULL;
    kg_scratch_set *s = pthread_getspecific(kg_scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(kg_scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (bytes == 0) bytes = 64;
    if (s->n[slot] < bytes) {
        free(s->p[slot]);
        size_t sz = (bytes + 63) & ~(size_t)63;
        s->p[slot] = aligned_alloc(64, sz);
        s->n[slot] = s->p[slot] ? sz : 0;
    }
    return s->p[slot];
}

/* ---------------------------------------------------------- op cache */

const void *kg_cache_find(const interp_op *o, const int64_t key[KG_CACHE_KEY]) {
    const int64_t *h = interp_cache_get(o);
    if (!h || memcmp(h, key, KG_CACHE_KEY * sizeof(int64_t)) != 0) return NULL;
    return (const char *)h + 64;
}

void *kg_cache_new(const interp_op *o, const int64_t key[KG_CACHE_KEY], size_t bytes) {
    if (bytes > SIZE_MAX - 64) return NULL;
    int64_t *h = interp_cache_put(o, bytes + 64);
    if (!h) return NULL;
    memcpy(h, key, KG_CACHE_KEY * sizeof(int64_t));
    return (char *)h + 64;
}
