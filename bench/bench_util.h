/* bench_util.h - shared by the interpreter benchmarks: the machine's
 * measured fp32 FMA peak.
 *
 *     double peak = bench_fma_peak(threads, true);   // GFLOP/s, prints a line
 *
 * The peak is the best of 5 runs of register-only FMA loops on `threads`
 * threads, for the widest vector ISA the GEMM engine uses here (AVX-512 or
 * AVX2+FMA). Header-only (static functions): include it from one .c file. */
#ifndef CTOSA_BENCH_UTIL_H
#define CTOSA_BENCH_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/util.h"

typedef float bench_v16 __attribute__((vector_size(64)));
typedef float bench_v8 __attribute__((vector_size(32)));

#define BENCH_PEAK_ITERS 30000000L

#if defined(__x86_64__) && defined(__GNUC__)
/* Independent chains hide the FMA latency on two FMA ports; the chains
 * converge (x -> 0.1) so no value becomes denormal or infinite. */
#define BENCH_FMA_LOOP(NAME, ATTR, VT, CHAINS)                                                 \
    ATTR __attribute__((noinline)) static float NAME(long iters) {                             \
        VT acc[CHAINS];                                                                        \
        VT m = {0}, a = {0};                                                                   \
        for (int i = 0; i < CHAINS; i++) acc[i] = (VT){0} + (float)i * 1e-3f;                  \
        m += 0.999999f;                                                                        \
        a += 1e-7f;                                                                            \
        for (long it = 0; it < iters; it++) {                                                  \
            _Pragma("GCC unroll 32") for (int i = 0; i < CHAINS; i++) acc[i] = acc[i] * m + a; \
        }                                                                                      \
        float s = 0;                                                                           \
        for (int i = 0; i < CHAINS; i++) s += acc[i][0];                                       \
        return s;                                                                              \
    }
BENCH_FMA_LOOP(bench_fma512, __attribute__((target("avx512f,fma"))), bench_v16, 24)
BENCH_FMA_LOOP(bench_fma256, __attribute__((target("avx2,fma"))), bench_v8, 12) /* 16 ymm */
#endif

typedef struct bench_peak_arg {
    int wide;
    double flops;
    float sink;
} bench_peak_arg;

static void *bench_peak_thread(void *p) {
    bench_peak_arg *a = p;
#if defined(__x86_64__) && defined(__GNUC__)
    if (a->wide) {
        a->sink = bench_fma512(BENCH_PEAK_ITERS);
        a->flops = (double)BENCH_PEAK_ITERS * 24 * 16 * 2;
    } else {
        a->sink = bench_fma256(BENCH_PEAK_ITERS);
        a->flops = (double)BENCH_PEAK_ITERS * 12 * 8 * 2;
    }
#else
    a->flops = 0;
#endif
    return NULL;
}

/* GFLOP/s of the FMA loop (wide: AVX-512, else AVX2) on threads threads,
 * best of 5: the clock ramps up and a shared VM is noisy. */
static double bench_measure_peak(int threads, int wide) {
    pthread_t th[64];
    bench_peak_arg args[64];
    if (threads > 64) threads = 64;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_seconds();
        int n = 0;
        for (int i = 0; i < threads; i++) {
            args[i] = (bench_peak_arg){.wide = wide};
            if (pthread_create(&th[n], NULL, bench_peak_thread, &args[i]) == 0) n++;
        }
        double flops = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            flops += args[i].flops;
        }
        double r = flops / (now_seconds() - t0) / 1e9;
        if (r > best) best = r;
    }
    return best;
}

/* The fp32 FMA peak for the widest ISA available, in GFLOP/s (1 when this
 * architecture has no measurement). verbose: print what was measured. */
static double bench_fma_peak(int threads, bool verbose) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool has512 = __builtin_cpu_supports("avx512f");
    bool has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    double p256 = has256 ? bench_measure_peak(threads, 0) : 0;
    double p512 = has512 ? bench_measure_peak(threads, 1) : 0;
    if (verbose)
        printf("FMA peak fp32: AVX2 %.1f GFLOP/s, AVX-512 %.1f GFLOP/s (%d threads)\n", p256, p512, threads);
    double peak = p512 > p256 ? p512 : p256;
    return peak > 0 ? peak : 1;
#else
    (void)threads;
    if (verbose)
        printf("no FMA peak measurement on this architecture; %% figures are relative to 1 GFLOP/s\n");
    return 1;
#endif
}

#endif
