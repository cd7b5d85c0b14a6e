/* bench_interp.c - interpreter kernel throughput against the machine's FMA
 * peak.
 *
 * Measures the fp32 FMA peak with register-only FMA loops on every core (for
 * the widest vector ISA the GEMM engine uses here), then times CONV2D
 * (MobileNetV2-like shapes), DEPTHWISE_CONV2D, MATMUL 512^3 and an int8
 * CONV2D through the kernels directly with a thread pool, printing GFLOP/s
 * (int8: GOP/s) and the fraction of peak. Run: build/bench/bench_interp */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_runtime.h"
#include "util/util.h"

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));

#define PEAK_ITERS 30000000L

#if defined(__x86_64__) && defined(__GNUC__)
/* 24 independent chains hide the FMA latency on two FMA ports; the chains
 * converge (x -> 0.1) so no value becomes denormal or infinite. */
#define FMA_LOOP(NAME, ATTR, VT)                                                   \
    ATTR __attribute__((noinline)) static float NAME(long iters) {                 \
        VT acc[PEAK_CHAINS];                                                       \
        VT m = {0}, a = {0};                                                       \
        for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = (VT){0} + (float)i * 1e-3f; \
        m += 0.999999f;                                                            \
        a += 1e-7f;                                                                \
        for (long it = 0; it < iters; it++) {                                      \
            _Pragma("GCC unroll 32") for (int i = 0; i < PEAK_CHAINS; i++)         \
                acc[i] = acc[i] * m + a;                                           \
        }                                                                          \
        float s = 0;                                                               \
        for (int i = 0; i < PEAK_CHAINS; i++) s += acc[i][0];                      \
        return s;                                                                  \
    }
#define PEAK_CHAINS 24
FMA_LOOP(fma512, __attribute__((target("avx512f,fma"))), v16)
#undef PEAK_CHAINS
#define PEAK_CHAINS 12 /* 16 ymm registers */
FMA_LOOP(fma256, __attribute__((target("avx2,fma"))), v8)
#endif

typedef struct peak_arg {
    int wide;
    double flops;
    float sink;
} peak_arg;

static void *peak_thread(void *p) {
    peak_arg *a = p;
#if defined(__x86_64__) && defined(__GNUC__)
    if (a->wide) {
        a->sink = fma512(PEAK_ITERS);
        a->flops = (double)PEAK_ITERS * 24 * 16 * 2;
    } else {
        a->sink = fma256(PEAK_ITERS);
        a->flops = (double)PEAK_ITERS * 12 * 8 * 2;
    }
#else
    a->flops = 0;
#endif
    return NULL;
}

static double measure_peak(int threads, int wide) {
    pthread_t th[64];
    peak_arg args[64];
    if (threads > 64) threads = 64;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
    double t0 = now_seconds();
    for (int i = 0; i < threads; i++) {
        args[i] = (peak_arg){.wide = wide};
        pthread_create(&th[i], NULL, peak_thread, &args[i]);
    }
    double flops = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        flops += args[i].flops;
    }
    double r = flops / (now_seconds() - t0) / 1e9;
    if (r > best) best = r;
    }
    return best; /* best of 5: the clock ramps up and the VM is noisy */
}

/* -------------------------------------------------------------- kernels */

static itensor *mk(ctosa_dtype t, uint32_t rank, const int64_t *d) {
    itensor *x = calloc(1, sizeof *x);
    x->name = "t";
    x->dtype = t;
    x->rank = rank;
    x->count = 1;
    for (uint32_t i = 0; i < rank; i++) {
        x->shape[i] = d[i];
        x->count *= (uint64_t)d[i];
    }
    size_t es = interp_elem_size(t);
    x->data = calloc(x->count, es);
    for (uint64_t i = 0; i < x->count; i++) {
        if (t == CTOSA_DTYPE_FP32) ((float *)x->data)[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
        else if (t == CTOSA_DTYPE_INT8) ((int8_t *)x->data)[i] = (int8_t)((i * 2654435761u) % 255);
    }
    return x;
}

static void rm(itensor *x) {
    free(x->data);
    free(x);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})

typedef struct bcase {
    const char *name;
    ctosa_op_kind kind;
    interp_kernel_fn fn;
    ctosa_dtype t;
    int64_t H, W, IC, OC, K, stride;
} bcase;

static double time_op(interp_ctx *ctx, interp_kernel_fn fn, ctosa_op *op, itensor **in, uint32_t n_in,
                      itensor *out, double min_seconds) {
    interp_op o = {.ctx = ctx, .op = op, .where = "bench", .in = in, .n_in = n_in, .out = &out, .n_out = 1};
    ctosa_error *e = fn(&o); /* warm-up */
    if (e) {
        fprintf(stderr, "error: %s\n", ctosa_error_message(e));
        ctosa_error_free(e);
        return -1;
    }
    double best = 1e30, t_start = now_seconds();
    int runs = 0;
    while (runs < 3 || now_seconds() - t_start < min_seconds) {
        double t0 = now_seconds();
        e = fn(&o);
        double dt = now_seconds() - t0;
        if (e) {
            fprintf(stderr, "error: %s\n", ctosa_error_message(e));
            ctosa_error_free(e);
            return -1;
        }
        if (dt < best) best = dt;
        runs++;
    }
    return best;
}

static void run_case(interp_ctx *ctx, const bcase *c, double peak) {
    /* "same" padding; the bottom/right pad shrinks so the stride divides exactly */
    int64_t pad = c->K / 2, padb = pad - (c->H - 1 + 2 * pad - (c->K - 1)) % c->stride;
    int64_t OH = (c->H - 1 + pad + padb - (c->K - 1)) / c->stride + 1, OW = OH * c->W / c->H;
    bool dw = c->kind == CTOSA_OP_DEPTHWISE_CONV2D;
    bool i8 = c->t == CTOSA_DTYPE_INT8;
    ctosa_dtype to = i8 ? CTOSA_DTYPE_INT32 : c->t;
    itensor *in = mk(c->t, 4, D(1, c->H, c->W, c->IC));
    itensor *w = dw ? mk(c->t, 4, D(c->K, c->K, c->IC, 1)) : mk(c->t, 4, D(c->OC, c->K, c->K, c->IC));
    int64_t OC = dw ? c->IC : c->OC;
    itensor *b = mk(to, 1, D(OC)), *out = mk(to, 4, D(1, OH, OW, OC));
    itensor *izp = mk(c->t, 1, D(1)), *wzp = mk(c->t, 1, D(1));
    memset(izp->data, 0, interp_elem_size(c->t));
    memset(wzp->data, 0, interp_elem_size(c->t));
    int32_t padv[4] = {(int32_t)pad, (int32_t)padb, (int32_t)pad, (int32_t)padb};
    int32_t st[2] = {(int32_t)c->stride, (int32_t)c->stride}, dil[2] = {1, 1};
    ctosa_op op;
    memset(&op, 0, sizeof op);
    op.kind = c->kind;
    op.attr.pad = (ctosa_i32s){padv, 4};
    op.attr.stride = (ctosa_i32s){st, 2};
    op.attr.dilation = (ctosa_i32s){dil, 2};
    op.attr.acc_type = i8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32;
    itensor *ins[5] = {in, w, b, izp, wzp};
    double t = time_op(ctx, c->fn, &op, ins, 5, out, 0.5);
    double flops = 2.0 * (double)(OH * OW) * (double)OC * (double)(c->K * c->K) * (dw ? 1.0 : (double)c->IC);
    if (t > 0)
        printf("%-44s %8.3f ms %8.1f G%s/s %6.1f%% of fp32 peak\n", c->name, t * 1e3, flops / t / 1e9,
               i8 ? "OP" : "FLOP", 100.0 * flops / t / 1e9 / peak);
    rm(in), rm(w), rm(b), rm(out), rm(izp), rm(wzp);
}

int main(int argc, char **argv) {
    int threads = cpu_count();
    if (argc > 1) threads = atoi(argv[1]);
    if (threads < 1) threads = 1;
    printf("threads: %d\n", threads);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool has512 = __builtin_cpu_supports("avx512f");
    bool has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    double p256 = has256 ? measure_peak(threads, 0) : 0;
    double p512 = has512 ? measure_peak(threads, 1) : 0;
    printf("FMA peak fp32: AVX2 %.1f GFLOP/s, AVX-512 %.1f GFLOP/s (%d threads)\n", p256, p512, threads);
    double peak = p512 > p256 ? p512 : p256;
#else
    double peak = 1;
    printf("no FMA peak measurement on this architecture; %% figures are relative to 1 GFLOP/s\n");
#endif
    if (peak <= 0) peak = 1;
    printf("percentages below are of %.1f GFLOP/s\n\n", peak);
    interp_ctx ctx = {.it = NULL, .pool = threads > 1 ? tpool_create(threads) : NULL, .depth = 0};
    const bcase cases[] = {
        {"DEPTHWISE 1x112x112x32 3x3 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D, CTOSA_DTYPE_FP32, 112, 112, 32, 32, 3, 1},
        {"CONV2D 1x56x56x64 1x1 -> 128 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 56, 56, 64, 128, 1, 1},
        {"CONV2D 1x28x28x128 3x3 -> 128 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 28, 28, 128, 128, 3, 1},
        {"CONV2D 1x112x112x32 1x1 -> 16 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 112, 112, 32, 16, 1, 1},
        {"CONV2D 1x224x224x3 3x3 s2 -> 32 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 224, 224, 3, 32, 3, 2},
        {"CONV2D 1x7x7x320 1x1 -> 1280 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 7, 7, 320, 1280, 1, 1},
        {"CONV2D 1x28x28x128 3x3 -> 128 int8", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_INT8, 28, 28, 128, 128, 3, 1},
        {"DEPTHWISE 1x112x112x32 3x3 s1 int8", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D, CTOSA_DTYPE_INT8, 112, 112, 32, 32, 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&ctx, &cases[i], peak);

    /* MATMUL 512 x 512 x 512 */
    itensor *A = mk(CTOSA_DTYPE_FP32, 3, D(1, 512, 512)), *B = mk(CTOSA_DTYPE_FP32, 3, D(1, 512, 512));
    itensor *O = mk(CTOSA_DTYPE_FP32, 3, D(1, 512, 512));
    itensor *za = mk(CTOSA_DTYPE_FP32, 1, D(1)), *zb = mk(CTOSA_DTYPE_FP32, 1, D(1));
    ((float *)za->data)[0] = ((float *)zb->data)[0] = 0.0f;
    ctosa_op op;
    memset(&op, 0, sizeof op);
    op.kind = CTOSA_OP_MATMUL;
    itensor *ins[4] = {A, B, za, zb};
    double t = time_op(&ctx, interp_k_MATMUL, &op, ins, 4, O, 0.5);
    double flops = 2.0 * 512 * 512 * 512;
    if (t > 0)
        printf("%-44s %8.3f ms %8.1f GFLOP/s %6.1f%% of fp32 peak\n", "MATMUL 512x512x512 fp32", t * 1e3,
               flops / t / 1e9, 100.0 * flops / t / 1e9 / peak);
    rm(A), rm(B), rm(O), rm(za), rm(zb);
    tpool_free(ctx.pool);
    return 0;
}
