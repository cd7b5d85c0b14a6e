/* bench_interp.c - interpreter kernel throughput against the machine's FMA
 * peak.
 *
 * Measures the fp32 FMA peak (bench_util.h), then times CONV2D
 * (MobileNetV2-like shapes), DEPTHWISE_CONV2D, MATMUL 512^3 and an int8
 * CONV2D through the kernels directly with a thread pool, printing GFLOP/s
 * (int8: GOP/s) and the fraction of peak, then runs a MobileNetV2-shaped fp32
 * graph through the public interpreter API.
 * Run: build/bench/bench_interp [threads] [mobilenet | NAME-PART]: with
 * NAME-PART only the kernel cases whose name contains it (e.g. "DEPTHWISE"),
 * and no MobileNetV2 graph. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/interp.h"
#include "interp/interp_runtime.h"
#include "util/util.h"
#include "bench_util.h"

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

/* --------------------------------------------- MobileNetV2 whole graph */

typedef struct mn {
    ctosa_graph *g;
    ctosa_block *b;
    int id;
    double flops;
    ctosa_error *err;
} mn;

static const char *mn_name(mn *m, const char *pfx) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s%d", pfx, m->id++);
    return ctosa_graph_strdup(m->g, buf);
}

static const char *mn_tensor(mn *m, const char *pfx, uint32_t rank, const int32_t *shape) {
    const char *name = mn_name(m, pfx);
    if (!m->err) m->err = ctosa_block_add_tensor(m->g, m->b, name, CTOSA_DTYPE_FP32, rank, shape, NULL);
    return name;
}

/* A constant fp32 tensor filled with small deterministic values. */
static const char *mn_const(mn *m, uint32_t rank, const int32_t *shape, float scale) {
    ctosa_tensor *t = NULL;
    const char *name = mn_name(m, "c");
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= (uint64_t)shape[i];
    if (!m->err) m->err = ctosa_block_add_tensor(m->g, m->b, name, CTOSA_DTYPE_FP32, rank, shape, &t);
    float *v = ctosa_graph_alloc(m->g, (size_t)n * sizeof(float) + 4);
    if (!v && !m->err) m->err = ctosa_error_new(CTOSA_ERR_NOMEM, "out of memory");
    if (m->err) return name;
    for (uint64_t i = 0; i < n; i++) v[i] = scale * ((float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f);
    m->err = ctosa_tensor_set_data(m->g, t, v, n * sizeof(float), false);
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_CONST, 0, NULL, 1, &name, NULL, NULL);
    return name;
}

static const char *mn_conv(mn *m, const char *x, int32_t *hw, int32_t cin, int32_t cout, int32_t k,
                           int32_t stride, bool depthwise, bool relu6) {
    int32_t pad = k / 2, padb = pad - ((hw[0] - 1 + 2 * pad - (k - 1)) % stride);
    int32_t oh = (hw[0] - 1 + pad + padb - (k - 1)) / stride + 1;
    int32_t wshape[4] = {cout, k, k, cin}, dwshape[4] = {k, k, cin, 1}, one[1] = {1};
    const char *w =
        mn_const(m, 4, depthwise ? dwshape : wshape, 1.0f / (float)(k * k * (depthwise ? 1 : cin)));
    const char *bias = mn_const(m, 1, (int32_t[]){cout}, 0.01f);
    const char *zi = mn_const(m, 1, one, 0.0f), *zw = mn_const(m, 1, one, 0.0f);
    int32_t oshape[4] = {1, oh, oh, cout};
    const char *y = mn_tensor(m, "t", 4, oshape);
    int32_t padv[4] = {pad, padb, pad, padb}, st[2] = {stride, stride}, dil[2] = {1, 1};
    ctosa_attr a = {0};
    a.pad = (ctosa_i32s){padv, 4};
    a.stride = (ctosa_i32s){st, 2};
    a.dilation = (ctosa_i32s){dil, 2};
    a.acc_type = CTOSA_DTYPE_FP32;
    const char *in[5] = {x, w, bias, zi, zw};
    if (!m->err)
        m->err = ctosa_block_add_op(m->g, m->b, depthwise ? CTOSA_OP_DEPTHWISE_CONV2D : CTOSA_OP_CONV2D, 5,
                                    in, 1, &y, &a, NULL);
    m->flops += 2.0 * oh * oh * cout * k * k * (depthwise ? 1 : cin);
    hw[0] = hw[1] = oh;
    if (!relu6) return y;
    const char *r = mn_tensor(m, "t", 4, oshape);
    float lo = 0.0f, hi = 6.0f;
    ctosa_attr c = {0};
    c.min_val = (ctosa_bytes){(const uint8_t *)&lo, 4};
    c.max_val = (ctosa_bytes){(const uint8_t *)&hi, 4};
    c.nan_mode = CTOSA_NAN_PROPAGATE;
    if (!m->err) m->err = ctosa_block_add_op(m->g, m->b, CTOSA_OP_CLAMP, 1, &y, 1, &r, &c, NULL);
    return r;
}

/* MobileNetV2 (width 1.0, 224x224) in fp32 with random weights; returns the
 * graph and its conv/matmul FLOPs. */
static ctosa_error *mn_build(ctosa_graph **gp, double *flops) {
    mn m = {0};
    ctosa_region *r;
    if ((m.err = ctosa_graph_create(CTOSA_VERSION_1_0, &m.g))) return m.err;
    *gp = m.g;
    if ((m.err = ctosa_graph_add_region(m.g, "main", &r)) ||
        (m.err = ctosa_region_add_block(m.g, r, "main", &m.b)))
        return m.err;
    int32_t hw[2] = {224, 224};
    int32_t ishape[4] = {1, 224, 224, 3};
    if ((m.err = ctosa_block_add_tensor(m.g, m.b, "input", CTOSA_DTYPE_FP32, 4, ishape, NULL)) ||
        (m.err = ctosa_block_add_input(m.g, m.b, "input")))
        return m.err;
    const char *x = mn_conv(&m, "input", hw, 3, 32, 3, 2, false, true);
    static const int cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int32_t cin = 32;
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < cfg[i][2]; j++) {
            int32_t t = cfg[i][0], cout = cfg[i][1], s = j == 0 ? cfg[i][3] : 1;
            const char *h = x;
            if (t != 1) h = mn_conv(&m, h, hw, cin, cin * t, 1, 1, false, true);
            h = mn_conv(&m, h, hw, cin * t, cin * t, 3, s, true, true);
            h = mn_conv(&m, h, hw, cin * t, cout, 1, 1, false, false);
            if (s == 1 && cin == cout) {
                int32_t shp[4] = {1, hw[0], hw[1], cout};
                const char *sum = mn_tensor(&m, "t", 4, shp), *in2[2] = {x, h};
                if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_ADD, 2, in2, 1, &sum, NULL, NULL);
                h = sum;
            }
            x = h;
            cin = cout;
        }
    x = mn_conv(&m, x, hw, 320, 1280, 1, 1, false, true);
    /* global average pool 7x7 -> 1x1, then the classifier as a 1x1 conv */
    int32_t pshape[4] = {1, 1, 1, 1280}, one[1] = {1};
    const char *pooled = mn_tensor(&m, "t", 4, pshape);
    const char *pin[3] = {x, mn_const(&m, 1, one, 0.0f), mn_const(&m, 1, one, 0.0f)};
    int32_t kern[2] = {7, 7}, st[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    ctosa_attr a = {0};
    a.kernel = (ctosa_i32s){kern, 2};
    a.stride = (ctosa_i32s){st, 2};
    a.pad = (ctosa_i32s){pad, 4};
    a.acc_type = CTOSA_DTYPE_FP32;
    if (!m.err) m.err = ctosa_block_add_op(m.g, m.b, CTOSA_OP_AVG_POOL2D, 3, pin, 1, &pooled, &a, NULL);
    int32_t phw[2] = {1, 1};
    const char *logits = mn_conv(&m, pooled, phw, 1280, 1000, 1, 1, false, false);
    if (!m.err) m.err = ctosa_block_add_output(m.g, m.b, logits);
    *flops = m.flops;
    return m.err;
}

static void bench_mobilenet(int threads) {
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    double flops = 0;
    ctosa_error *e = mn_build(&g, &flops);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    if (!e) e = ctosa_interp_create(g, &opt, &it);
    float *img = malloc(224 * 224 * 3 * sizeof(float));
    for (int i = 0; img && i < 224 * 224 * 3; i++) img[i] = (float)(i % 255) / 255.0f;
    int64_t shp[4] = {1, 224, 224, 3};
    if (!e && img)
        e = ctosa_interp_set_input(it, "input", CTOSA_DTYPE_FP32, 4, shp, img, 224 * 224 * 3 * sizeof(float));
    double best = 1e30;
    for (int i = 0; !e && i < 12; i++) {
        double t0 = now_seconds();
        e = ctosa_interp_run(it);
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
    }
    if (e) {
        printf("MobileNetV2 fp32 whole graph: %s\n", ctosa_error_message(e));
        ctosa_error_free(e);
    } else {
        printf("%-44s %8.3f ms %8.1f GFLOP/s (%.2f GFLOP per image, best of 12)\n",
               "MobileNetV2 1x224x224x3 fp32 (ctosa_interp_run)", best * 1e3, flops / best / 1e9,
               flops / 1e9);
    }
    free(img);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

int main(int argc, char **argv) {
    int threads = cpu_count();
    if (argc > 1) threads = atoi(argv[1]);
    if (threads < 1) threads = 1;
    printf("threads: %d\n", threads);
    if (argc > 2 && strcmp(argv[2], "mobilenet") == 0) { /* whole graph only (profiling) */
        bench_mobilenet(threads);
        return 0;
    }
    const char *only = argc > 2 ? argv[2] : NULL; /* only the cases whose name contains it */
    double peak = bench_fma_peak(threads, true);
    printf("percentages below are of %.1f GFLOP/s\n\n", peak);
    interp_ctx ctx = {.it = NULL, .pool = threads > 1 ? tpool_create(threads) : NULL, .depth = 0};
    const bcase cases[] = {
        {"DEPTHWISE 1x112x112x32 3x3 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 112, 112, 32, 32, 3, 1},
        {"CONV2D 1x56x56x64 1x1 -> 128 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 56, 56, 64,
         128, 1, 1},
        {"CONV2D 1x28x28x128 3x3 -> 128 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 28, 28,
         128, 128, 3, 1},
        {"CONV2D 1x112x112x32 1x1 -> 16 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 112, 112,
         32, 16, 1, 1},
        {"CONV2D 1x224x224x3 3x3 s2 -> 32 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 224, 224,
         3, 32, 3, 2},
        {"CONV2D 1x7x7x320 1x1 -> 1280 fp32", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_FP32, 7, 7, 320,
         1280, 1, 1},
        {"CONV2D 1x28x28x128 3x3 -> 128 int8", CTOSA_OP_CONV2D, interp_k_CONV2D, CTOSA_DTYPE_INT8, 28, 28,
         128, 128, 3, 1},
        {"DEPTHWISE 1x112x112x32 3x3 s1 int8", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_INT8, 112, 112, 32, 32, 3, 1},
        /* EfficientNet-B0's and MobileNetV3's depthwise layers */
        {"DEPTHWISE 1x112x112x96 3x3 s2 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 112, 112, 96, 96, 3, 2},
        {"DEPTHWISE 1x56x56x144 5x5 s2 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 56, 56, 144, 144, 5, 2},
        {"DEPTHWISE 1x28x28x240 5x5 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 28, 28, 240, 240, 5, 1},
        {"DEPTHWISE 1x28x28x120 5x5 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 28, 28, 120, 120, 5, 1},
        {"DEPTHWISE 1x14x14x672 5x5 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 14, 14, 672, 672, 5, 1},
        {"DEPTHWISE 1x7x7x1152 5x5 s1 fp32", CTOSA_OP_DEPTHWISE_CONV2D, interp_k_DEPTHWISE_CONV2D,
         CTOSA_DTYPE_FP32, 7, 7, 1152, 1152, 5, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!only || strstr(cases[i].name, only)) run_case(&ctx, &cases[i], peak);
    if (only) {
        tpool_free(ctx.pool);
        return 0;
    }

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
    printf("\n");
    bench_mobilenet(threads);
    return 0;
}
