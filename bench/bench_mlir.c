/* bench_mlir.c - MLIR text of a model with 1 GiB of constants: time, text
 * size and peak memory of ctosa_mlir_write, to show that the text streams
 * (memory stays far below the model's size).
 *
 *     build-rel/bench/bench_mlir [DIR]   # DIR default $TMPDIR or /tmp; needs ~2.2 GB free
 *
 * The graph: 16 int8 constants of 64 MiB (1 GiB in total, generated on
 * demand by a fill callback, never whole in memory) returned as graph
 * outputs, plus a chain of 2000 ADD operators on [1,16] int32 tensors (the
 * per-operator text). Steps,
 * each in a fresh child process so that ru_maxrss is the step's own peak:
 *   count: ctosa_mlir_write to a sink that only counts bytes
 *   file:  ctosa_mlir_write_file into DIR (then deleted)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_clock.h"
#include "ctosa/ctosa.h"

#define N_CONST 16
#define CONST_BYTES ((uint64_t)64 << 20)
#define N_ADD 2000

static const char *PROG = "bench_mlir";

/* Deterministic bytes: a xorshift stream seeded by the offset's block. */
static ctosa_error *fill(void *user, uint64_t offset, void *buf, size_t n) {
    uint64_t seed = (uint64_t)(uintptr_t)user * 0x9e3779b97f4a7c15ull;
    uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = seed ^ (offset + i) * 0xbf58476d1ce4e5b9ull;
        x ^= x >> 31;
        p[i] = (uint8_t)(x * 0x94d049bb133111ebull >> 56);
    }
    return NULL;
}

static ctosa_graph *build(void) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &g);
    if (!e) e = ctosa_graph_add_region(g, "main", &r);
    if (!e) e = ctosa_region_add_block(g, r, "main", &b);
    int32_t shp[2] = {1, 16};
    char name[64], prev[64];
    if (!e) e = ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_INT32, 2, shp, NULL);
    if (!e) e = ctosa_block_add_input(g, b, "x");
    snprintf(prev, sizeof prev, "x");
    for (int i = 0; i < N_ADD && !e; i++) {
        snprintf(name, sizeof name, "add%d", i);
        e = ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_INT32, 2, shp, NULL);
        const char *in[2] = {prev, "x"}, *out[1] = {name};
        if (!e) e = ctosa_block_add_op(g, b, CTOSA_OP_ADD, 2, in, 1, out, NULL, NULL);
        snprintf(prev, sizeof prev, "%s", name);
    }
    if (!e) e = ctosa_block_add_output(g, b, prev);
    for (int i = 0; i < N_CONST && !e; i++) {
        int32_t cs[1] = {(int32_t)CONST_BYTES};
        ctosa_tensor *t;
        snprintf(name, sizeof name, "w%d", i);
        e = ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_INT8, 1, cs, &t);
        if (!e) e = ctosa_tensor_set_data_generated(g, t, CONST_BYTES, fill, (void *)(uintptr_t)(i + 1));
        const char *out[1] = {name};
        if (!e) e = ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL);
        if (!e) e = ctosa_block_add_output(g, b, name);
    }
    if (e) bench_die(PROG, "building the graph", e);
    return g;
}

static ctosa_error *count_sink(void *user, const char *text, size_t n) {
    (void)text;
    *(uint64_t *)user += n;
    return NULL;
}

/* Runs one step in a child; prints time, bytes and the child's peak RSS. */
static void step(const char *label, const char *path) {
    int fds[2];
    if (pipe(fds) != 0) bench_die(PROG, "pipe", NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        ctosa_graph *g = build();
        uint64_t bytes = 0;
        double t0 = bench_now();
        ctosa_error *e =
            path ? ctosa_mlir_write_file(g, path, NULL) : ctosa_mlir_write(g, NULL, count_sink, &bytes);
        double t1 = bench_now();
        if (e) bench_die(PROG, label, e);
        if (path) {
            FILE *f = fopen(path, "rb");
            if (f && fseek(f, 0, SEEK_END) == 0) bytes = (uint64_t)ftell(f);
            if (f) fclose(f);
            unlink(path);
        }
        double res[2] = {t1 - t0, (double)bytes};
        if (write(fds[1], res, sizeof res) != (ssize_t)sizeof res) _exit(1);
        ctosa_graph_free(g);
        _exit(0);
    }
    close(fds[1]);
    double res[2] = {0, 0};
    ssize_t got = read(fds[0], res, sizeof res);
    close(fds[0]);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0 || got != (ssize_t)sizeof res || !WIFEXITED(st) || WEXITSTATUS(st))
        bench_die(PROG, label, NULL);
    printf("%-6s %8.2f s  %12.0f bytes of text (%.2f GiB)  %6.1f MB/s of constants  peak RSS %6.1f MiB\n",
           label, res[0], res[1], res[1] / (1 << 30), (double)(N_CONST * CONST_BYTES) / res[0] / 1e6,
           (double)ru.ru_maxrss / 1024.0);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_mlir_%d.mlir", dir, (int)getpid());
    printf("model: %d int8 constants of %llu MiB (%.2f GiB) + %d ADD operators\n", N_CONST,
           (unsigned long long)(CONST_BYTES >> 20), (double)(N_CONST * CONST_BYTES) / (1 << 30), N_ADD);
    step("count", NULL);
    step("file", path);
    return 0;
}
