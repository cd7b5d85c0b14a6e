/* kernels_matmul.c - MATMUL: [N,H,C] x [N,C,W] -> [N,H,W].
 *
 * The accumulator is the output type (pseudocode: acc is out_t): int32 for
 * int8, int48 for int16, fp32 through the GEMM engine, and fp16 rounded at
 * every step on the slow exact path. */
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"
#include "interp/kernels_gemm.h"
#include "util/floatfmt.h"

typedef struct mm_rows {
    const char *base;
    size_t esz;
    int64_t C, c0; /* row length; first column of the K chunk */
} mm_rows;

static void mm_row(const void *rc, int64_t m0, int64_t nrows, const void **ptrs) {
    const mm_rows *r = rc;
    for (int64_t i = 0; i < nrows; i++) ptrs[i] = r->base + (size_t)((m0 + i) * r->C + r->c0) * r->esz;
}

/* int8 MATMUL on the fp32 engine, exactly (see c_run_int8_float in
 * kernels_conv.c): K is split so that no chunk's sum can reach 2^24. */
static ctosa_error *mm_int8_float(const interp_op *o, const itensor *A, const itensor *B, itensor *out,
                                  int64_t azp, int64_t bzp) {
    int64_t N = A->shape[0], H = A->shape[1], C = A->shape[2], W = B->shape[2];
    int64_t amax = 0, bmax = 0;
    float *af = kg_scratch(0, A->count * sizeof(float));
    float *bf = kg_scratch(1, B->count * sizeof(float));
    float *tmp = kg_scratch(2, (size_t)(H * W) * sizeof(float));
    int64_t *acc = kg_scratch(3, out->count * sizeof(int64_t));
    ctosa_error *e = NULL;
    float *bp = NULL;
    if (!af || !bf || !tmp || !acc) goto nomem;
    amax = kg_cvt_i8_f32(A->data, A->count, (int32_t)azp, af);
    /* A constant B is packed once into the op cache, its K chunks planned
     * for the worst A the zero point allows (|a - zp| <= max(127 - zp,
     * zp + 128)); sums stay exact either way, so results do not change. */
    int64_t key[KG_CACHE_KEY] = {5, N, C, W, azp, bzp};
    const float *cached = NULL;
    float *cfill = NULL;
    if (B->is_const) {
        const float *cp = kg_cache_find(o, key);
        if (cp) {
            memcpy(&bmax, cp, sizeof bmax); /* first 64 bytes: bmax */
            cached = cp + 16;
        }
        amax = 127 - azp > azp + 128 ? 127 - azp : azp + 128;
    }
    if (!cached) bmax = kg_cvt_i8_f32(B->data, B->count, (int32_t)bzp, bf);
    int64_t prod = amax * bmax > 0 ? amax * bmax : 1;
    int64_t kc = ((INT64_C(1) << 24) - 1) / prod;
    if (kc > C) kc = C > 0 ? C : 1;
    if (B->is_const && !cached) {
        size_t total = 0;
        for (int64_t c0 = 0; c0 < C; c0 += kc) total += kg_pack_elems(C - c0 < kc ? C - c0 : kc, W);
        float *blk = (size_t)N <= SIZE_MAX / 8 / (total + 1)
                         ? kg_cache_new(o, key, ((size_t)N * total + 16) * 4)
                         : NULL;
        if (blk) {
            memcpy(blk, &bmax, sizeof bmax);
            cfill = blk + 16;
        }
    }
    if (!cached && !cfill) {
        bp = kg_scratch(4, kg_pack_elems(kc, W) * sizeof(float));
        if (!bp) goto nomem;
    }
    memset(acc, 0, (size_t)out->count * sizeof(int64_t));
    size_t coff = 0; /* offset of the chunk in the cached block */
    for (int64_t n = 0; n < N; n++)
        for (int64_t c0 = 0; c0 < C; c0 += kc) {
            int64_t nc = C - c0 < kc ? C - c0 : kc;
            if (cached) {
                bp = (float *)(cached + coff);
            } else {
                if (cfill) bp = cfill + coff;
                kg_pack_f_par(o->ctx, bp, nc, W, bf + (n * C + c0) * W, W, 1);
            }
            coff += kg_pack_elems(nc, W);
            mm_rows rc = {(const char *)(af + n * H * C), sizeof(float), C, c0};
            kg_job job = {.M = H,
                          .N = W,
                          .Kt = nc,
                          .T = 1,
                          .rows = mm_row,
                          .rctx = &rc,
                          .bpack = bp,
                          .out = tmp,
                          .ldo = W};
            if (!kg_run_f(o->ctx, &job)) goto nomem;
            int64_t *a = acc + n * H * W;
            for (int64_t i = 0; i < H * W; i++) a[i] += (int64_t)tmp[i];
        }
    for (uint64_t i = 0; i < out->count; i++) {
        if (acc[i] < INT32_MIN || acc[i] > INT32_MAX) {
            e = interp_fail(o, "accumulator overflows int32 at output element %llu (REQUIRE failed)",
                            (unsigned long long)i);
            break;
        }
        ((int32_t *)out->data)[i] = (int32_t)acc[i];
    }
    goto done;
nomem:
    e = interp_fail(o, "out of memory");
done:
    return e;
}

typedef struct mm_bget {
    const itensor *b;
    int64_t off, W, zp;
} mm_bget;

static int32_t mm_get(const void *cc, int64_t k, int64_t n) {
    const mm_bget *g = cc;
    return (int32_t)(im_load_i(g->b->dtype, g->b->data, (size_t)(g->off + k * g->W + n)) - g->zp);
}

static ctosa_error *mm_float_zp(const interp_op *o, const itensor *t, int64_t *zp, const char *what) {
    if (im_scalar_i(t, zp)) return NULL;
    if (t->count == 1 && ctosa_dtype_is_float(t->dtype)) {
        *zp = ((const float *)t->data)[0] != 0.0f;
        return NULL;
    }
    return interp_fail(o, "%s must be a one-element tensor", what);
}

/* Few rows of A (a fully-connected layer on one sample: GEMV): every
 * element of B is used by only H products, so packing B (a full copy) would
 * cost as much as the product itself, for the weights of a single run.
 * Instead B streams once from memory: each thread owns one range of
 * columns (the whole rows on one thread, so the reads are sequential),
 * whose H output rows stay in L1/L2 while MM_GEMV_ROWS rows of B at a time
 * add A[h][c] times their segments. Each output is still summed over c in
 * order with one multiply-add per step, as the reference loop does; taking
 * several rows per pass only keeps the sum in a register between them. */
#define MM_GEMV_MAX_H 4
#define MM_GEMV_OUT 8192 /* output floats (H x columns) of one range: 32 KiB, L1 */
#define MM_GEMV_ROWS 4
typedef struct mm_gemv {
    const float *a, *b;
    float *out;
    int64_t H, C, W, cols; /* cols: columns per range, a multiple of 16 */
} mm_gemv;

static inline IM_INLINE void mm_gemv_impl(void *arg, size_t begin, size_t end) {
    const mm_gemv *g = arg;
    const int64_t H = g->H, C = g->C, W = g->W;
    for (size_t chunk = begin; chunk < end; chunk++) {
        int64_t w0 = (int64_t)chunk * g->cols, nw = W - w0 < g->cols ? W - w0 : g->cols;
        for (int64_t h = 0; h < H; h++) memset(g->out + h * W + w0, 0, (size_t)nw * sizeof(float));
        int64_t c = 0;
        for (; c + MM_GEMV_ROWS <= C; c += MM_GEMV_ROWS) {
            const float *restrict b0 = g->b + c * W + w0, *restrict b1 = b0 + W, *restrict b2 = b1 + W,
                                  *restrict b3 = b2 + W;
            /* rows of B are W apart, so a range narrower than a row starts
             * a new page the hardware prefetchers do not follow: fetch the
             * next group of rows ahead */
            if (nw < W && c + 2 * MM_GEMV_ROWS <= C)
                for (int64_t w = 0; w < nw; w += 16)
                    for (int r = 0; r < MM_GEMV_ROWS; r++)
                        __builtin_prefetch(b0 + (MM_GEMV_ROWS + r) * W + w, 0, 0);
            for (int64_t h = 0; h < H; h++) {
                float *restrict o = g->out + h * W + w0;
                const float *ah = g->a + h * C + c;
                const float a0 = ah[0], a1 = ah[1], a2 = ah[2], a3 = ah[3];
                for (int64_t w = 0; w < nw; w++) {
                    float v = o[w];
                    v += a0 * b0[w];
                    v += a1 * b1[w];
                    v += a2 * b2[w];
                    v += a3 * b3[w];
                    o[w] = v;
                }
            }
        }
        for (; c < C; c++) {
            const float *restrict b = g->b + c * W + w0;
            for (int64_t h = 0; h < H; h++) {
                float *restrict o = g->out + h * W + w0;
                const float av = g->a[h * C + c];
                for (int64_t w = 0; w < nw; w++) o[w] += av * b[w];
            }
        }
    }
}
IM_MULTIVERSION(mm_gemv_rows, mm_gemv_impl)

ctosa_error *interp_k_MATMUL(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 4, 1);
    if (e) return e;
    const itensor *A = o->in[0], *B = o->in[1];
    itensor *out = o->out[0];
    if (A->rank != 3 || B->rank != 3 || out->rank != 3)
        return interp_fail(o, "A, B and output must have rank 3");
    int64_t N = A->shape[0], H = A->shape[1], C = A->shape[2], W = B->shape[2];
    if (B->shape[0] != N || B->shape[1] != C || out->shape[0] != N || out->shape[1] != H ||
        out->shape[2] != W)
        return interp_fail(
            o, "shapes do not match: A [%lld,%lld,%lld], B [%lld,%lld,%lld], output [%lld,%lld,%lld]",
            (long long)N, (long long)H, (long long)C, (long long)B->shape[0], (long long)B->shape[1],
            (long long)W, (long long)out->shape[0], (long long)out->shape[1], (long long)out->shape[2]);
    if (im_dims(A, 0, 3) != A->count || im_dims(B, 0, 3) != B->count || im_dims(out, 0, 3) != out->count)
        return interp_fail(o, "tensor element counts do not match their shapes");
    int64_t azp, bzp;
    if ((e = mm_float_zp(o, o->in[2], &azp, "A_zp")) || (e = mm_float_zp(o, o->in[3], &bzp, "B_zp")))
        return e;
    ctosa_dtype ta = A->dtype, tb = B->dtype, to = out->dtype;
    if (ta != CTOSA_DTYPE_INT8 && azp != 0)
        return interp_fail(o, "A_zp must be 0 for %s", ctosa_dtype_short(ta));
    if (tb != CTOSA_DTYPE_INT8 && bzp != 0)
        return interp_fail(o, "B_zp must be 0 for %s", ctosa_dtype_short(tb));
    if (ta != tb) return interp_fail(o, "A is %s but B is %s", ctosa_dtype_short(ta), ctosa_dtype_short(tb));
    bool is_int = ta == CTOSA_DTYPE_INT8 || ta == CTOSA_DTYPE_INT16;
    if (ta == CTOSA_DTYPE_INT8 && to != CTOSA_DTYPE_INT32)
        return interp_fail(o, "int8 MATMUL needs int32 output");
    if (ta == CTOSA_DTYPE_INT16 && to != CTOSA_DTYPE_INT48)
        return interp_fail(o, "int16 MATMUL needs int48 output");
    if (!is_int && (!ctosa_dtype_is_float(ta) || !ctosa_dtype_is_float(to)))
        return interp_fail(o, "MATMUL of %s to %s is not supported", ctosa_dtype_short(ta),
                           ctosa_dtype_short(to));
    if (out->count == 0) return NULL;

    if (is_int && o->reference) {
        /* plain loop (interp_op.reference): exact int64 sums, range check */
        int64_t lo, hi;
        im_range_s(to, &lo, &hi);
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    int64_t acc = 0;
                    for (int64_t c = 0; c < C; c++)
                        acc += (im_load_i(ta, A->data, (size_t)((n * H + h) * C + c)) - azp) *
                               (im_load_i(tb, B->data, (size_t)((n * C + c) * W + w)) - bzp);
                    if (acc < lo || acc > hi)
                        return interp_fail(o, "accumulator overflows %s (REQUIRE failed)",
                                           ctosa_dtype_short(to));
                    im_store_i(to, out->data, (size_t)((n * H + h) * W + w), acc);
                }
        return NULL;
    }
    if (!is_int && (to != CTOSA_DTYPE_FP32 || o->reference)) {
        /* fp16 (or other narrow) accumulation, and the plain loop of
         * interp_op.reference: round every step to the accumulator type */
        const float *a = A->data, *b = B->data;
        float *d = out->data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double acc = 0;
                    for (int64_t c = 0; c < C; c++) {
                        double p =
                            ff_round_to_double(to, (double)a[(n * H + h) * C + c] * b[(n * C + c) * W + w]);
                        acc = ff_round_to_double(to, acc + p);
                    }
                    d[(n * H + h) * W + w] = (float)acc;
                }
        return NULL;
    }

    if (ta == CTOSA_DTYPE_INT8) {
        bool done;
        if ((e = kg_matmul_q8(o, A, B, out, azp, bzp, &done)) || done) return e;
        return mm_int8_float(o, A, B, out, azp, bzp);
    }
    if (!is_int && H <= MM_GEMV_MAX_H) {
        for (int64_t n = 0; n < N; n++) {
            /* one range per thread (threads that would get too few
             * columns stay idle), ranges small enough for L1 */
            int64_t nthr =
                interp_par_worth(o->ctx, (double)H * (double)C * (double)W) ? interp_threads(o->ctx) : 1;
            if (nthr > (W + 255) / 256) nthr = (W + 255) / 256;
            int64_t cols = ((W + nthr - 1) / nthr + 15) / 16 * 16;
            if (cols * H > MM_GEMV_OUT) cols = MM_GEMV_OUT / H / 16 * 16;
            mm_gemv g = {(const float *)A->data + n * H * C,
                         (const float *)B->data + n * C * W,
                         (float *)out->data + n * H * W,
                         H,
                         C,
                         W,
                         cols};
            size_t chunks = (size_t)((W + cols - 1) / cols);
            if (chunks > 1) interp_parallel_for(o->ctx, chunks, mm_gemv_rows, &g);
            else mm_gemv_rows(&g, 0, chunks);
        }
        return NULL;
    }

    size_t pe = kg_pack_elems(C, W);
    /* A constant float B is packed once (all batches) into the op cache. */
    int64_t key[KG_CACHE_KEY] = {4, N, C, W, 0, 0};
    const float *cached = NULL;
    float *cfill = NULL;
    if (!is_int && B->is_const) {
        cached = kg_cache_find(o, key);
        if (!cached && (size_t)N <= SIZE_MAX / 4 / (pe ? pe : 1))
            cfill = kg_cache_new(o, key, (size_t)N * pe * 4);
    }
    /* packed B holds int32 or float: 4 bytes either way */
    void *bp = cached || cfill ? (void *)1 : kg_scratch(4, pe * 4);
    int16_t *a16 = NULL;
    void *acc = NULL;
    bool acc64 = false;
    if (is_int) {
        a16 = malloc((size_t)A->count * sizeof(int16_t));
        int64_t amax = 0, bmax = 0;
        if (a16) {
            for (uint64_t i = 0; i < A->count; i++) {
                int64_t v = im_load_i(ta, A->data, i) - azp;
                a16[i] = (int16_t)v;
                if (llabs(v) > amax) amax = llabs(v);
            }
        }
        for (uint64_t i = 0; i < B->count; i++) {
            int64_t v = llabs(im_load_i(tb, B->data, i) - bzp);
            if (v > bmax) bmax = v;
        }
        acc64 = to == CTOSA_DTYPE_INT48 || (double)C * (double)amax * (double)bmax > 2147483647.0;
        acc = malloc((size_t)out->count * (acc64 ? 8 : 4));
    }
    if (!bp || (is_int && (!a16 || !acc))) {
        free(a16);
        free(acc);
        return interp_fail(o, "out of memory");
    }
    bool ok = true;
    for (int64_t n = 0; n < N && ok; n++) {
        kg_job job = {.M = H, .N = W, .Kt = C, .T = 1, .rows = mm_row, .ldo = W, .acc64 = acc64};
        mm_rows rc;
        job.rctx = &rc;
        job.bpack = bp;
        if (is_int) {
            mm_bget g = {B, n * C * W, W, bzp};
            kg_pack_i(bp, C, W, mm_get, &g);
            rc = (mm_rows){(const char *)(a16 + n * H * C), sizeof(int16_t), C, 0};
            job.out = (char *)acc + (size_t)(n * H * W) * (acc64 ? 8 : 4);
            ok = kg_run_i(o->ctx, &job);
        } else {
            if (cached) {
                job.bpack = cached + (size_t)n * pe;
            } else if (cfill) {
                job.bpack = cfill + (size_t)n * pe;
                kg_pack_f_par(o->ctx, cfill + (size_t)n * pe, C, W, (const float *)B->data + n * C * W, W, 1);
            } else {
                kg_pack_f_par(o->ctx, bp, C, W, (const float *)B->data + n * C * W, W, 1);
            }
            rc = (mm_rows){(const char *)((const float *)A->data + n * H * C), sizeof(float), C, 0};
            job.out = (float *)out->data + n * H * W;
            ok = kg_run_f(o->ctx, &job);
        }
    }
    e = ok ? NULL : interp_fail(o, "out of memory");
    if (ok && is_int) {
        int64_t lo, hi;
        im_range_s(to, &lo, &hi);
        for (uint64_t i = 0; i < out->count; i++) {
            int64_t v = acc64 ? ((int64_t *)acc)[i] : ((int32_t *)acc)[i];
            if (v < lo || v > hi) {
                e = interp_fail(o, "accumulator overflows %s at output element %llu (REQUIRE failed)",
                                ctosa_dtype_short(to), (unsigned long long)i);
                break;
            }
            im_store_i(to, out->data, i, v);
        }
    }
    free(a16);
    free(acc);
    return e;
}
