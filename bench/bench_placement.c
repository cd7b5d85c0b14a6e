/* bench_placement.c - how close the machine's first two CPUs are.
 *
 * On a VM the host decides whether two vCPUs share a last-level cache,
 * and may change its mind while a benchmark runs. Two interpreter threads
 * read each other's activations, so a two-thread timing means little
 * without this: the program prints the bandwidth of summing a buffer that
 * the same thread has just written ("local") and one the other CPU has
 * just written ("cross"), and the verdict bench_ort.py puts beside its
 * table.
 *
 * usage: bench_placement [KIB [ROUNDS]]   (default 4096 KiB, 100 rounds) */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "bench_clock.h"

static float *buf;
static size_t n_floats;
static int turn; /* atomic: 1 = the helper thread writes, 0 = main's turn, 2 = quit */

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void fill(float v) {
    for (size_t i = 0; i < n_floats; i++) buf[i] = v + (float)(i & 1023);
}

typedef float v8f __attribute__((vector_size(32)));

/* Four vector sums in separate variables, so that the loop is bound by
 * the loads rather than by the latency of one addition chain (written
 * with vectors: the compiler may not reorder float additions itself). */
static inline __attribute__((always_inline)) double sum_body(void) {
    v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    const v8f *v = (const v8f *)buf;
    size_t nv = n_floats / 8;
    for (size_t i = 0; i + 4 <= nv; i += 4) {
        a0 += v[i];
        a1 += v[i + 1];
        a2 += v[i + 2];
        a3 += v[i + 3];
    }
    v8f t = (a0 + a1) + (a2 + a3);
    double s = 0;
    for (int k = 0; k < 8; k++) s += t[k];
    return s;
}

static double sum_plain(void) { return sum_body(); }

/* With 16-byte loads (the x86-64 baseline) a core reads its own cache at
 * about a third of its speed, which hides the difference measured here:
 * where the CPU has AVX2, the same loop with 32-byte loads. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static double sum_avx2(void) { return sum_body(); }
#endif

static double sum(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) return sum_avx2();
#endif
    return sum_plain();
}

static void *helper(void *arg) {
    (void)arg;
    pin(1);
    for (;;) {
        int t;
        while ((t = __atomic_load_n(&turn, __ATOMIC_ACQUIRE)) == 0) sched_yield();
        if (t == 2) return NULL;
        fill(1.0f);
        __atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
    }
}

int main(int argc, char **argv) {
    size_t kib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 4096;
    int rounds = argc > 2 ? atoi(argv[2]) : 100;
    if (kib < 4 || rounds < 1) {
        fprintf(stderr, "usage: bench_placement [KIB [ROUNDS]]\n");
        return 2;
    }
    n_floats = kib * 1024 / sizeof(float);
    buf = aligned_alloc(64, n_floats * sizeof(float));
    if (!buf) bench_die("bench_placement", "buffer", NULL);
    pin(0);
    pthread_t th;
    if (pthread_create(&th, NULL, helper, NULL) != 0) bench_die("bench_placement", "thread", NULL);
    double local = 0, cross = 0, check = 0;
    for (int r = 0; r < rounds; r++) {
        fill(2.0f);
        double t0 = bench_now();
        check += sum();
        local += bench_now() - t0;
        __atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 0) sched_yield();
        t0 = bench_now();
        check += sum();
        cross += bench_now() - t0;
    }
    __atomic_store_n(&turn, 2, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    double bytes = (double)n_floats * sizeof(float) * rounds;
    double gl = bytes / local / 1e9, gx = bytes / cross / 1e9;
    /* Cores sharing a last-level cache read each other's lines at close to
     * local speed; across caches it was about a third on the build machine
     * (100 against 40 GB/s from 4 MiB). */
    printf("placement: %zu KiB written by CPU 1, read by CPU 0 at %.1f GB/s (written by CPU 0: %.1f GB/s): "
           "%s%s\n",
           kib, gx, gl, gx > 0.6 * gl ? "shared cache" : "separate caches", check == 0 ? " (?)" : "");
    free(buf);
    return 0;
}
