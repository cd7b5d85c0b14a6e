/* bench_network.c - whole-network speed of the interpreter: MobileNetV2
 * (width 1.0, 224x224, 1000 classes, the real layer shapes, random weights)
 * built with the public builder API in FP32 and in int8, run through
 * ctosa_interp_run, against the machine's measured FMA peak.
 *
 * FP32 graph: CONV2D / DEPTHWISE_CONV2D (acc fp32) + CLAMP [0, 6] (ReLU6),
 * residual ADD, AVG_POOL2D 7x7, RESHAPE, MATMUL 1280x1000 + ADD bias.
 * int8 graph, as a TOSA int8 lowering of a quantized MobileNetV2 looks:
 * int8 CONV2D / DEPTHWISE_CONV2D -> int32, per-channel RESCALE (scale32,
 * single round) to int8, CLAMP int8 for ReLU6; residual ADD as two RESCALEs
 * to int32, ADD, RESCALE back to int8; int8 AVG_POOL2D; int8 MATMUL ->
 * int32 + ADD bias.
 *
 * Run: build-rel/bench/bench_network [--threads N] [--runs N] [--no-peak]
 *                                    [--only fp32|int8]
 * Prints per graph: best / median / mean ms per run over N runs (after two
 * warm-up runs, which also fill the interpreter's per-operator caches),
 * conv+matmul GFLOP/s (int8: GOP/s) and the fraction of the fp32 FMA peak.
 * Lines starting "RESULT" are for tools/bench_network.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctosa/interp.h"
#include "util/util.h"
#include "bench_util.h"

typedef struct net {
    ctosa_graph *g;
    ctosa_block *b;
    bool i8;
    int id;
    double flops;
    uint64_t rng;
    ctosa_error *err;
} net;

static uint32_t rnd(net *m) { /* xorshift64*: fixed seed, same graph every run */
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return (uint32_t)((m->rng * UINT64_C(2685821657736338717)) >> 32);
}
static float urand(net *m) { return (float)rnd(m) / 4294967296.0f * 2.0f - 1.0f; } /* [-1, 1) */

static const char *nm(net *m, const char *pfx) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s%d", pfx, m->id++);
    return ctosa_graph_strdup(m->g, buf);
}

static const char *tensor(net *m, ctosa_dtype t, uint32_t rank, const int32_t *shape) {
    const char *name = nm(m, "t");
    if (!m->err) m->err = ctosa_block_add_tensor(m->g, m->b, name, t, rank, shape, NULL);
    return name;
}

/* A constant of n elements of dtype t (fp32, int8, int32); fill(i) gives
 * the values, stored little-endian as the file encoding wants. */
static const char *constant(net *m, ctosa_dtype t, uint32_t rank, const int32_t *shape,
                            double (*fill)(net *, uint64_t, void *), void *ctx) {
    ctosa_tensor *ct = NULL;
    const char *name = nm(m, "c");
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= (uint64_t)shape[i];
    size_t es = t == CTOSA_DTYPE_INT8 ? 1 : 4;
    if (!m->err) m->err = ctosa_block_add_tensor(m->g, m->b, name, t, rank, shape, &ct);
    uint8_t *v = m->err ? NULL : ctosa_graph_alloc(m->g, (size_t)n * es + 8);
    if (!v && !m->err) m->err = ctosa_error_nomem();
    if (m->err) return name;
    for (uint64_t i = 0; i < n; i++) {
        double x = fill(m, i, ctx);
        if (t == CTOSA_DTYPE_FP32) {
            float f = (float)x;
            memcpy(v + 4 * i, &f, 4);
        } else if (t == CTOSA_DTYPE_INT8) {
            v[i] = (uint8_t)(int8_t)x;
        } else {
            wr_u32(v + 4 * i, (uint32_t)(int32_t)x);
        }
    }
    m->err = ctosa_tensor_set_data(m->g, ct, v, n * es, false);
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_CONST, 0, NULL, 1, &name, NULL, NULL);
    return name;
}

static double f_uniform(net *m, uint64_t i, void *c) { return urand(m) * *(const float *)c; }
static double f_value(net *m, uint64_t i, void *c) { return *(const double *)c; }
static double f_i8(net *m, uint64_t i, void *c) { return (double)(int)(urand(m) * 127.0f); }
static double f_i32(net *m, uint64_t i, void *c) { return (double)(int)(urand(m) * *(const float *)c); }

static const char *scalar(net *m, ctosa_dtype t, double v) {
    int32_t one[1] = {1};
    return constant(m, t, 1, one, f_value, &v);
}

/* Per-channel RESCALE int32 -> int8 (or int8 -> int32 when to32): value *
 * scale with scale = mult * 2^-shift, multiplier in [2^30, 2^31). */
static const char *rescale(net *m, const char *x, const int32_t *shape, int32_t ch, double scale, int32_t izp,
                           int32_t ozp, bool to32) {
    int shift = 0;
    double mult = scale;
    while (mult < 0.5 && shift < 62) mult *= 2, shift++;
    while (mult >= 1.0 && shift > 2) mult /= 2, shift--;
    shift += 31;
    if (shift > 62) shift = 62;
    double mv = (double)(int64_t)(mult * 2147483648.0);
    if (mv > 2147483647.0) mv = 2147483647.0;
    double sv = shift;
    int32_t chs[1] = {ch};
    const char *mul = constant(m, CTOSA_DTYPE_INT32, 1, chs, f_value, &mv);
    const char *sh = constant(m, CTOSA_DTYPE_INT8, 1, chs, f_value, &sv);
    const char *zi = scalar(m, to32 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_INT32, izp);
    const char *zo = scalar(m, to32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT8, ozp);
    const char *y = tensor(m, to32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT8, 4, shape);
    ctosa_attr a = {0};
    a.scale32 = true;
    a.rounding_mode = CTOSA_ROUND_SINGLE;
    a.per_channel = ch > 1;
    const char *in[5] = {x, mul, sh, zi, zo};
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_RESCALE, 5, in, 1, &y, &a, NULL);
    return y;
}

static const char *clamp(net *m, const char *x, const int32_t *shape, double lo, double hi) {
    ctosa_dtype t = m->i8 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_FP32;
    const char *r = tensor(m, t, 4, shape);
    uint8_t *b = ctosa_graph_alloc(m->g, 8);
    if (!b) {
        if (!m->err) m->err = ctosa_error_nomem();
        return r;
    }
    if (m->i8) {
        b[0] = (uint8_t)(int8_t)lo;
        b[4] = (uint8_t)(int8_t)hi;
    } else {
        float l = (float)lo, h = (float)hi;
        memcpy(b, &l, 4);
        memcpy(b + 4, &h, 4);
    }
    ctosa_attr c = {0};
    c.min_val = (ctosa_bytes){b, m->i8 ? 1u : 4u};
    c.max_val = (ctosa_bytes){b + 4, m->i8 ? 1u : 4u};
    c.nan_mode = CTOSA_NAN_PROPAGATE;
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_CLAMP, 1, &x, 1, &r, &c, NULL);
    return r;
}

/* int8 activations: after ReLU6 zero point -128 (range 0..6 -> -128..127),
 * linear ones zero point 0. */
#define ZP_RELU (-128)

/* Convolution (+ ReLU6). *zp: the input's zero point in, the output's out. */
static const char *conv(net *m, const char *x, int32_t *hw, int32_t cin, int32_t cout, int32_t k,
                        int32_t stride, bool dw, bool relu6, int32_t *zp) {
    /* "same" padding; the bottom/right pad shrinks so the stride divides exactly */
    int32_t pad = k / 2, padb = pad - ((hw[0] - 1 + 2 * pad - (k - 1)) % stride);
    int32_t oh = (hw[0] - 1 + pad + padb - (k - 1)) / stride + 1;
    int32_t wshape[4] = {cout, k, k, cin}, dwshape[4] = {k, k, cin, 1}, bshape[1] = {cout};
    int32_t oshape[4] = {1, oh, oh, cout};
    int64_t fan = (int64_t)k * k * (dw ? 1 : cin);
    ctosa_dtype at = m->i8 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_FP32;
    const char *w, *bias, *zi, *zw;
    if (m->i8) {
        float bs = 1000.0f;
        w = constant(m, at, 4, dw ? dwshape : wshape, f_i8, NULL);
        bias = constant(m, CTOSA_DTYPE_INT32, 1, bshape, f_i32, &bs);
        zi = scalar(m, at, *zp);
        zw = scalar(m, at, 0);
    } else {
        float ws = 1.7f / sqrtf((float)fan);
        float bs = 0.01f;
        w = constant(m, at, 4, dw ? dwshape : wshape, f_uniform, &ws);
        bias = constant(m, at, 1, bshape, f_uniform, &bs);
        zi = scalar(m, at, 0);
        zw = scalar(m, at, 0);
    }
    const char *y = tensor(m, m->i8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32, 4, oshape);
    int32_t padv[4] = {pad, padb, pad, padb}, st[2] = {stride, stride}, dil[2] = {1, 1};
    ctosa_attr a = {0};
    a.pad = (ctosa_i32s){padv, 4};
    a.stride = (ctosa_i32s){st, 2};
    a.dilation = (ctosa_i32s){dil, 2};
    a.acc_type = m->i8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32;
    const char *in[5] = {x, w, bias, zi, zw};
    if (!m->err)
        m->err = ctosa_block_add_op(m->g, m->b, dw ? CTOSA_OP_DEPTHWISE_CONV2D : CTOSA_OP_CONV2D, 5, in, 1,
                                    &y, &a, NULL);
    m->flops += 2.0 * oh * oh * cout * (double)fan;
    hw[0] = hw[1] = oh;
    if (m->i8) {
        /* accumulators of about sqrt(fan) * 127 * 64 map onto +-64 steps */
        double scale = 64.0 / (sqrtf((float)fan) * 127.0 * 64.0);
        int32_t ozp = relu6 ? ZP_RELU : 0;
        y = rescale(m, y, oshape, cout, scale, 0, ozp, false);
        *zp = ozp;
        return relu6 ? clamp(m, y, oshape, ZP_RELU, 127) : y;
    }
    return relu6 ? clamp(m, y, oshape, 0.0, 6.0) : y;
}

/* Residual: x + h. int8: both to int32 (x1), ADD, back to int8 (x0.5). */
static const char *residual(net *m, const char *x, const char *h, const int32_t *shape, int32_t ch) {
    if (!m->i8) {
        const char *sum = tensor(m, CTOSA_DTYPE_FP32, 4, shape), *in[2] = {x, h};
        if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_ADD, 2, in, 1, &sum, NULL, NULL);
        return sum;
    }
    const char *a = rescale(m, x, shape, 1, 1.0, 0, 0, true);
    const char *b = rescale(m, h, shape, 1, 1.0, 0, 0, true);
    const char *sum = tensor(m, CTOSA_DTYPE_INT32, 4, shape), *in[2] = {a, b};
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_ADD, 2, in, 1, &sum, NULL, NULL);
    return rescale(m, sum, shape, 1, 0.5, 0, 0, false);
}

/* MobileNetV2 1x224x224x3 -> 1x1x1000 (fp32 or int8/int32). */
static ctosa_error *build(bool i8, ctosa_graph **gp, double *flops) {
    net m = {.i8 = i8, .rng = UINT64_C(0x9E3779B97F4A7C15)};
    ctosa_region *r;
    if ((m.err = ctosa_graph_create(CTOSA_VERSION_1_0, &m.g))) return m.err;
    *gp = m.g;
    if ((m.err = ctosa_graph_add_region(m.g, "main", &r)) ||
        (m.err = ctosa_region_add_block(m.g, r, "main", &m.b)))
        return m.err;
    ctosa_dtype at = i8 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_FP32;
    int32_t hw[2] = {224, 224}, ishape[4] = {1, 224, 224, 3}, zp = 0;
    if ((m.err = ctosa_block_add_tensor(m.g, m.b, "input", at, 4, ishape, NULL)) ||
        (m.err = ctosa_block_add_input(m.g, m.b, "input")))
        return m.err;
    const char *x = conv(&m, "input", hw, 3, 32, 3, 2, false, true, &zp);
    /* (expansion t, channels c, repeats n, first stride s), as in the paper */
    static const int cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int32_t cin = 32;
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < cfg[i][2]; j++) {
            int32_t t = cfg[i][0], cout = cfg[i][1], s = j == 0 ? cfg[i][3] : 1;
            int32_t hzp = zp;
            const char *h = x;
            if (t != 1) h = conv(&m, h, hw, cin, cin * t, 1, 1, false, true, &hzp);
            h = conv(&m, h, hw, cin * t, cin * t, 3, s, true, true, &hzp);
            h = conv(&m, h, hw, cin * t, cout, 1, 1, false, false, &hzp);
            if (s == 1 && cin == cout) {
                int32_t shp[4] = {1, hw[0], hw[1], cout};
                h = residual(&m, x, h, shp, cout);
            }
            x = h;
            zp = hzp;
            cin = cout;
        }
    x = conv(&m, x, hw, 320, 1280, 1, 1, false, true, &zp);
    /* global average pool 7x7 -> 1x1 */
    int32_t pshape[4] = {1, 1, 1, 1280};
    const char *pooled = tensor(&m, at, 4, pshape);
    const char *pin[3] = {x, scalar(&m, at, zp), scalar(&m, at, zp)};
    int32_t kern[2] = {7, 7}, st[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    ctosa_attr a = {0};
    a.kernel = (ctosa_i32s){kern, 2};
    a.stride = (ctosa_i32s){st, 2};
    a.pad = (ctosa_i32s){pad, 4};
    a.acc_type = i8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32;
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_AVG_POOL2D, 3, pin, 1, &pooled, &a, NULL);
    /* classifier: RESHAPE to [1,1,1280], MATMUL by [1,1280,1000], + bias */
    int64_t sv[3] = {1, 1, 1280};
    const char *shp = nm(&m, "s");
    if (!m.err) m.err = ctosa_block_add_shape(m.g, m.b, shp, 3, sv, NULL);
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, &shp, NULL, NULL);
    int32_t fshape[3] = {1, 1, 1280}, wshape[3] = {1, 1280, 1000}, oshape[3] = {1, 1, 1000};
    const char *flat = tensor(&m, at, 3, fshape), *rin[2] = {pooled, shp};
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_RESHAPE, 2, rin, 1, &flat, NULL, NULL);
    ctosa_dtype ot = i8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32;
    float ws = 1.7f / sqrtf(1280.0f), bs = i8 ? 1000.0f : 0.01f;
    const char *w =
        i8 ? constant(&m, at, 3, wshape, f_i8, NULL) : constant(&m, at, 3, wshape, f_uniform, &ws);
    const char *min[4] = {flat, w, scalar(&m, at, zp), scalar(&m, at, 0)};
    const char *mm = tensor(&m, ot, 3, oshape);
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_MATMUL, 4, min, 1, &mm, NULL, NULL);
    m.flops += 2.0 * 1280 * 1000;
    const char *bias =
        i8 ? constant(&m, ot, 3, oshape, f_i32, &bs) : constant(&m, ot, 3, oshape, f_uniform, &bs);
    const char *logits = tensor(&m, ot, 3, oshape), *ain[2] = {mm, bias};
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_ADD, 2, ain, 1, &logits, NULL, NULL);
    if (!m.err) m.err = ctosa_block_add_output(m.g, m.b, logits);
    *flops = m.flops;
    return m.err;
}

/* CPU time of the whole process (every thread), seconds. */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Builds, loads and runs one graph; prints its figures. */
static int bench(bool i8, int threads, int runs, double peak) {
    const char *label = i8 ? "int8" : "fp32";
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    double flops = 0, t_load = 0;
    ctosa_error *e = build(i8, &g, &flops);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    double t0 = now_seconds();
    if (!e) e = ctosa_interp_create(g, &opt, &it);
    t_load = now_seconds() - t0;
    size_t n = 224 * 224 * 3, es = i8 ? 1 : 4;
    uint8_t *img = malloc(n * es);
    double *times = calloc((size_t)runs, sizeof(double));
    if (!e && (!img || !times)) e = ctosa_error_nomem();
    for (size_t i = 0; !e && i < n; i++) {
        if (i8) img[i] = (uint8_t)(int8_t)((int)(i * 7 % 255) - 128);
        else ((float *)img)[i] = (float)(i % 255) / 255.0f - 0.5f;
    }
    int64_t shp[4] = {1, 224, 224, 3};
    if (!e)
        e = ctosa_interp_set_input(it, "input", i8 ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_FP32, 4, shp, img,
                                   n * es);
    double t_first = 0;
    for (int i = 0; !e && i < 2; i++) { /* warm-up: the first run fills the op caches */
        t0 = now_seconds();
        e = ctosa_interp_run(it);
        if (i == 0) t_first = now_seconds() - t0;
    }
    double c0 = cpu_seconds();
    for (int i = 0; !e && i < runs; i++) {
        t0 = now_seconds();
        e = ctosa_interp_run(it);
        times[i] = now_seconds() - t0;
    }
    double cpu = (cpu_seconds() - c0) / runs;
    int rc = 0;
    if (e) {
        printf("MobileNetV2 %s: %s\n", label, ctosa_error_message(e));
        ctosa_error_free(e);
        rc = 1;
    } else {
        double sum = 0;
        for (int i = 0; i < runs; i++) sum += times[i];
        qsort(times, (size_t)runs, sizeof *times, cmp_d);
        double best = times[0], med = times[runs / 2], mean = sum / runs;
        printf("MobileNetV2 1x224x224x3 %s: best %.3f ms, median %.3f ms, mean %.3f ms over %d runs "
               "(load %.1f ms, first run %.1f ms)\n",
               label, best * 1e3, med * 1e3, mean * 1e3, runs, t_load * 1e3, t_first * 1e3);
        printf("  %.3f G%s per image; at the median %.1f G%s/s", flops / 1e9, i8 ? "OP" : "FLOP",
               flops / med / 1e9, i8 ? "OP" : "FLOP");
        if (peak > 0) printf(" = %.1f%% of the fp32 FMA peak", 100.0 * flops / med / 1e9 / peak);
        printf(" (best %.1f G%s/s)\n", flops / best / 1e9, i8 ? "OP" : "FLOP");
        printf("  CPU time %.3f ms per run (all threads; spinning workers count; with --threads 1 "
               "it is the work itself, which other load on the machine hardly changes)\n",
               cpu * 1e3);
        printf("RESULT %s best_ms=%.3f median_ms=%.3f mean_ms=%.3f gflops=%.1f cpu_ms=%.3f\n", label,
               best * 1e3, med * 1e3, mean * 1e3, flops / med / 1e9, cpu * 1e3);
    }
    free(img);
    free(times);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return rc;
}

int main(int argc, char **argv) {
    int threads = cpu_count(), runs = 20;
    bool peak_on = true, do32 = true, do8 = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-peak") == 0) peak_on = false;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            const char *w = argv[++i];
            do32 = strcmp(w, "fp32") == 0;
            do8 = strcmp(w, "int8") == 0;
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--runs N] [--no-peak] [--only fp32|int8]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (runs < 1) runs = 1;
    printf("threads: %d\n", threads);
    double peak = peak_on ? bench_fma_peak(threads, true) : 0;
    if (peak_on) printf("RESULT peak gflops=%.1f\n", peak);
    int rc = 0;
    if (do32) rc |= bench(false, threads, runs, peak);
    if (do8) rc |= bench(true, threads, runs, peak);
    return rc;
}
