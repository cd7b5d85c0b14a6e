/* bench_tosa_file.c - times ctosa_interp_run on a .tosa file, excluding
 * process start, file reading and planning (what `ctosa run` also pays once
 * per call), so a lowered model can be compared with ONNX Runtime's
 * per-inference time.
 *
 * Run: build-rel/bench/bench_tosa_file MODEL.tosa [--input NAME=FILE.npy]...
 *          [--threads N] [--runs N] [--output NAME=FILE.npy]
 * Inputs not given are filled with a fixed pattern (floats in [-0.5, 0.5),
 * integers cycling through small values). Two warm-up runs (the first fills
 * the per-operator caches) precede the N timed runs. Prints best, median and
 * mean ms and a "RESULT tosa ..." line for tools/bench_network.sh; --output
 * writes an output after the last run (.npy) so results can be checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctosa/interp.h"
#include "ctosa/tosa_io.h"
#include "tensorfile/tensorfile.h"
#include "util/util.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int fail(ctosa_error *e) {
    fprintf(stderr, "bench_tosa_file: %s\n", ctosa_error_message(e));
    ctosa_error_free(e);
    return 2;
}

int main(int argc, char **argv) {
    const char *model = NULL, *inputs[64], *out_spec = NULL;
    int n_inputs = 0, threads = 0, runs = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc && n_inputs < 64) inputs[n_inputs++] = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) out_spec = argv[++i];
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else {
            fprintf(stderr,
                    "usage: %s MODEL.tosa [--input NAME=FILE.npy]... [--threads N] [--runs N] "
                    "[--output NAME=FILE.npy]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "bench_tosa_file: no model given\n");
        return 2;
    }
    if (runs < 1) runs = 1;
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    ctosa_error *e = ctosa_read_file(model, NULL, &g);
    if (e) return fail(e);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    double t0 = now_seconds();
    if ((e = ctosa_interp_create(g, &opt, &it))) {
        ctosa_graph_free(g);
        return fail(e);
    }
    double t_load = now_seconds() - t0;
    int rc = 0;
    for (uint32_t i = 0; !e && i < ctosa_interp_input_count(it); i++) {
        ctosa_interp_tensor info;
        if ((e = ctosa_interp_input_info(it, i, &info))) break;
        const char *file = NULL;
        size_t nl = strlen(info.name);
        for (int k = 0; k < n_inputs; k++)
            if (strncmp(inputs[k], info.name, nl) == 0 && inputs[k][nl] == '=') file = inputs[k] + nl + 1;
        void *host = NULL;
        uint64_t size = info.size;
        if (file) {
            npy_array a;
            if ((e = npy_read_file(file, &a))) break;
            e = npy_to_host(&a, info.dtype, info.name, &host, &size);
            npy_free(&a);
            if (e) break;
        } else {
            host = malloc(size ? (size_t)size : 1);
            if (!host) {
                e = ctosa_error_nomem();
                break;
            }
            size_t es = ctosa_host_elem_size(info.dtype);
            for (uint64_t k = 0; k < info.count; k++) {
                if (info.dtype == CTOSA_DTYPE_FP32) ((float *)host)[k] = (float)(k % 251) / 251.0f - 0.5f;
                else if (es == 1)
                    ((uint8_t *)host)[k] = info.dtype == CTOSA_DTYPE_BOOL ? k & 1 : (uint8_t)(k % 7);
                else memset((char *)host + k * es, 0, es), ((uint8_t *)host)[k * es] = (uint8_t)(k % 7);
            }
        }
        e = ctosa_interp_set_input(it, info.name, info.dtype, info.rank, info.shape, host, size);
        free(host);
    }
    double *times = calloc((size_t)runs, sizeof(double));
    if (!e && !times) e = ctosa_error_nomem();
    double t_first = 0;
    for (int i = 0; !e && i < 2; i++) {
        t0 = now_seconds();
        e = ctosa_interp_run(it);
        if (i == 0) t_first = now_seconds() - t0;
    }
    /* process CPU time too: on a shared machine it is far steadier than
     * wall time for a single-threaded run (--threads 1) */
    double *cpu = calloc((size_t)runs, sizeof(double));
    if (!e && !cpu) e = ctosa_error_nomem();
    for (int i = 0; !e && i < runs; i++) {
        struct timespec c0, c1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        t0 = now_seconds();
        e = ctosa_interp_run(it);
        times[i] = now_seconds() - t0;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        cpu[i] = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    }
    if (!e && out_spec) {
        const char *eq = strchr(out_spec, '=');
        char name[512];
        size_t nl = eq ? (size_t)(eq - out_spec) : 0;
        if (!eq || nl >= sizeof name) {
            e = ctosa_error_new(CTOSA_ERR_USAGE, "--output wants NAME=FILE.npy");
        } else {
            memcpy(name, out_spec, nl);
            name[nl] = 0;
            ctosa_interp_tensor val;
            if (!(e = ctosa_interp_get_output(it, name, &val))) {
                const char *descr = npy_descr_for(val.dtype);
                e = descr ? npy_write_file(eq + 1, descr, val.rank, val.shape, val.data, val.size)
                          : ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "no .npy type for output '%s'", name);
            }
        }
    }
    if (e) {
        rc = fail(e);
    } else {
        double sum = 0;
        for (int i = 0; i < runs; i++) sum += times[i];
        qsort(times, (size_t)runs, sizeof *times, cmp_d);
        printf("%s: best %.3f ms, median %.3f ms, mean %.3f ms over %d runs (load+plan %.1f ms, first "
               "run %.1f ms)\n",
               model, times[0] * 1e3, times[runs / 2] * 1e3, sum / runs * 1e3, runs, t_load * 1e3,
               t_first * 1e3);
        qsort(cpu, (size_t)runs, sizeof *cpu, cmp_d);
        printf("process CPU time per run: best %.3f ms, median %.3f ms\n", cpu[0] * 1e3, cpu[runs / 2] * 1e3);
        printf("RESULT tosa best_ms=%.3f median_ms=%.3f mean_ms=%.3f\n", times[0] * 1e3,
               times[runs / 2] * 1e3, sum / runs * 1e3);
    }
    free(times);
    free(cpu);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return rc;
}
