/* test_silu_fusion.c - MUL(x, SIGMOID(x)) fused by the interpreter's plan
 * into one pass (the SiLU of efficientnet and YOLO-style networks) must
 * give the bits of the two operators run one after the other:
 *  - fused against unfused (fusion prevented by making the sigmoid's
 *    output a graph output), with x as the MUL's first or second operand,
 *    on 1 and 2 threads, for a size with a tail shorter than a vector and
 *    one large enough to be split between threads, with NaN, infinities,
 *    signed zeros and large magnitudes among the inputs;
 *  - the fusion really happens (the SIGMOID no longer runs) and does not
 *    happen with the plain reference loops, whose result stays within the
 *    documented few ulp of the fast one;
 *  - after a CONV2D or DEPTHWISE_CONV2D whose output nothing else reads,
 *    the convolution applies the SiLU as it stores (neither MUL nor SIGMOID
 *    runs) with the bits of the separate pass. */
#include <math.h>

#include "harness.h"

/* x -> SIGMOID -> s; y = MUL(x, s) or MUL(s, x); expose: s is an output. */
static ctosa_error *run_silu(const int32_t *shape, const float *x, size_t n, bool x_first, bool expose,
                             int threads, bool reference, float *y, uint64_t *sigmoid_runs) {
    ctosa_graph *g = NULL;
    ctosa_region *r;
    ctosa_block *b;
    ctosa_tensor *ct;
    int32_t one[1] = {1};
    int8_t zero = 0;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &g);
    if (!e) e = ctosa_graph_add_region(g, "main", &r);
    if (!e) e = ctosa_region_add_block(g, r, "main", &b);
    if (!e) e = ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_FP32, 4, shape, NULL);
    if (!e) e = ctosa_block_add_input(g, b, "x");
    if (!e) e = ctosa_block_add_tensor(g, b, "s", CTOSA_DTYPE_FP32, 4, shape, NULL);
    if (!e) e = ctosa_block_add_tensor(g, b, "y", CTOSA_DTYPE_FP32, 4, shape, NULL);
    if (!e) e = ctosa_block_add_tensor(g, b, "shift", CTOSA_DTYPE_INT8, 1, one, &ct);
    if (!e) e = ctosa_tensor_set_data(g, ct, &zero, 1, true);
    const char *sh = "shift", *xn = "x", *sn = "s", *yn = "y";
    if (!e) e = ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, &sh, NULL, NULL);
    if (!e) e = ctosa_block_add_op(g, b, CTOSA_OP_SIGMOID, 1, &xn, 1, &sn, NULL, NULL);
    const char *in[3] = {x_first ? "x" : "s", x_first ? "s" : "x", "shift"};
    if (!e) e = ctosa_block_add_op(g, b, CTOSA_OP_MUL, 3, in, 1, &yn, NULL, NULL);
    if (!e) e = ctosa_block_add_output(g, b, "y");
    if (!e && expose) e = ctosa_block_add_output(g, b, "s");
    ctosa_interp *it = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.reference = reference;
    opt.profile = true;
    if (!e) e = ctosa_interp_create(g, &opt, &it);
    int64_t s64[4] = {shape[0], shape[1], shape[2], shape[3]};
    if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 4, s64, x, n * sizeof(float));
    for (int i = 0; !e && i < 2; i++) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, "y", &t);
    if (!e) memcpy(y, t.data, n * sizeof(float));
    *sigmoid_runs = 0;
    for (uint32_t i = 0; !e && i < ctosa_interp_profile_count(it); i++) {
        ctosa_interp_op_profile p;
        if (!(e = ctosa_interp_profile_get(it, i, &p)) && p.kind == CTOSA_OP_SIGMOID) *sigmoid_runs += p.runs;
    }
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return e;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static int64_t ulps(float a, float b) {
    int32_t i, j;
    memcpy(&i, &a, 4);
    memcpy(&j, &b, 4);
    int64_t p = i < 0 ? -(int64_t)(i & 0x7fffffff) : i, q = j < 0 ? -(int64_t)(j & 0x7fffffff) : j;
    return p > q ? p - q : q - p;
}

static void check_shape(const int32_t *shape) {
    size_t n = (size_t)shape[0] * shape[1] * shape[2] * shape[3];
    float *x = malloc(n * 4), *fused = malloc(n * 4), *plain = malloc(n * 4), *ref = malloc(n * 4);
    static const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 90.0f, -90.0f, 200.0f};
    for (size_t i = 0; i < n; i++) x[i] = i % 37 == 5 ? sp[(i / 37) % 10] : rnd() * (i % 3 ? 8.0f : 120.0f);
    for (int threads = 1; threads <= 2; threads++)
        for (int xf = 0; xf < 2; xf++) {
            uint64_t runs_fused, runs_plain, runs_ref;
            ctosa_error *e = run_silu(shape, x, n, xf, false, threads, false, fused, &runs_fused);
            if (!e) e = run_silu(shape, x, n, xf, true, threads, false, plain, &runs_plain);
            if (!e) e = run_silu(shape, x, n, xf, false, threads, true, ref, &runs_ref);
            CHECK_MSG(!e, "%s", e ? ctosa_error_message(e) : "");
            ctosa_error_free(e);
            if (e) continue;
            CHECK_MSG(runs_fused == 0 && runs_plain == 2 && runs_ref == 2,
                      "SIGMOID runs: fused %llu, exposed %llu, reference %llu (want 0, 2, 2)",
                      (unsigned long long)runs_fused, (unsigned long long)runs_plain,
                      (unsigned long long)runs_ref);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) {
                bool same = memcmp(&fused[i], &plain[i], 4) == 0 || (isnan(fused[i]) && isnan(plain[i]));
                /* x * sigmoid: a 3-ulp sigmoid (in subnormal steps when it
                 * is subnormal, which x then scales) and a rounded product */
                bool near = isnan(ref[i]) ? isnan(fused[i])
                                          : ulps(fused[i], ref[i]) <= 4 ||
                                                fabs((double)fused[i] - ref[i]) <= fabs(x[i]) * 4 * 0x1p-149;
                if ((!same || !near) && bad++ < 3)
                    CHECK_MSG(
                        0, "n %zu threads %d x %s: element %zu x %.9g fused %.9g unfused %.9g reference %.9g",
                        n, threads, xf ? "first" : "second", i, x[i], fused[i], plain[i], ref[i]);
            }
            CHECK_MSG(bad == 0, "n %zu threads %d: %zu elements differ", n, threads, bad);
        }
    free(x);
    free(fused);
    free(plain);
    free(ref);
}

/* x -> CONV2D 3x3 (C -> C+4) or DEPTHWISE_CONV2D 5x5 -> c -> SIGMOID -> s;
 * y = MUL(c, s). With expose c is a graph output too, so the SiLU runs as
 * its own pass; without, the convolution applies it as it stores. *muls
 * and *sigs: how many times MUL and SIGMOID ran (the fused SiLU pass
 * counts as a MUL). */
static ctosa_error *run_conv_silu(bool dw, int hw, int C, bool expose, int threads, const float *x,
                                  const float *w, const float *b, float *y, uint64_t *muls, uint64_t *sigs) {
    int OC = dw ? C : C + 4, K = dw ? 5 : 3;
    int32_t xs[4] = {1, hw, hw, C}, ys[4] = {1, hw, hw, OC}, bs[1] = {OC}, one[1] = {1};
    int32_t ws[4] = {OC, K, K, C}, dws[4] = {K, K, C, 1};
    size_t nw = (size_t)OC * K * K * (dw ? 1 : C);
    float zero = 0.0f;
    ctosa_graph *g = NULL;
    ctosa_region *r;
    ctosa_block *bl;
    ctosa_tensor *t;
    int8_t shift = 0;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &g);
    if (!e) e = ctosa_graph_add_region(g, "main", &r);
    if (!e) e = ctosa_region_add_block(g, r, "main", &bl);
    if (!e) e = ctosa_block_add_tensor(g, bl, "x", CTOSA_DTYPE_FP32, 4, xs, NULL);
    if (!e) e = ctosa_block_add_input(g, bl, "x");
    if (!e) e = ctosa_block_add_tensor(g, bl, "w", CTOSA_DTYPE_FP32, 4, dw ? dws : ws, &t);
    if (!e) e = ctosa_tensor_set_data(g, t, w, nw * 4, true);
    if (!e) e = ctosa_block_add_tensor(g, bl, "b", CTOSA_DTYPE_FP32, 1, bs, &t);
    if (!e) e = ctosa_tensor_set_data(g, t, b, (size_t)OC * 4, true);
    if (!e) e = ctosa_block_add_tensor(g, bl, "z", CTOSA_DTYPE_FP32, 1, one, &t);
    if (!e) e = ctosa_tensor_set_data(g, t, &zero, 4, true);
    if (!e) e = ctosa_block_add_tensor(g, bl, "shift", CTOSA_DTYPE_INT8, 1, one, &t);
    if (!e) e = ctosa_tensor_set_data(g, t, &shift, 1, true);
    if (!e) e = ctosa_block_add_tensor(g, bl, "c", CTOSA_DTYPE_FP32, 4, ys, NULL);
    if (!e) e = ctosa_block_add_tensor(g, bl, "s", CTOSA_DTYPE_FP32, 4, ys, NULL);
    if (!e) e = ctosa_block_add_tensor(g, bl, "y", CTOSA_DTYPE_FP32, 4, ys, NULL);
    const char *consts[4] = {"w", "b", "z", "shift"};
    for (int i = 0; i < 4 && !e; i++)
        e = ctosa_block_add_op(g, bl, CTOSA_OP_CONST, 0, NULL, 1, &consts[i], NULL, NULL);
    int32_t pad[4] = {K / 2, K / 2, K / 2, K / 2}, st[2] = {1, 1}, dil[2] = {1, 1};
    ctosa_attr a = {0};
    a.pad = (ctosa_i32s){pad, 4};
    a.stride = (ctosa_i32s){st, 2};
    a.dilation = (ctosa_i32s){dil, 2};
    a.acc_type = CTOSA_DTYPE_FP32;
    const char *cin[5] = {"x", "w", "b", "z", "z"}, *cn = "c", *sn = "s", *yn = "y";
    if (!e)
        e = ctosa_block_add_op(g, bl, dw ? CTOSA_OP_DEPTHWISE_CONV2D : CTOSA_OP_CONV2D, 5, cin, 1, &cn, &a,
                               NULL);
    if (!e) e = ctosa_block_add_op(g, bl, CTOSA_OP_SIGMOID, 1, &cn, 1, &sn, NULL, NULL);
    const char *min[3] = {"c", "s", "shift"};
    if (!e) e = ctosa_block_add_op(g, bl, CTOSA_OP_MUL, 3, min, 1, &yn, NULL, NULL);
    if (!e) e = ctosa_block_add_output(g, bl, "y");
    if (!e && expose) e = ctosa_block_add_output(g, bl, "c");
    ctosa_interp *it = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.profile = true;
    if (!e) e = ctosa_interp_create(g, &opt, &it);
    int64_t x64[4] = {1, hw, hw, C};
    size_t n = (size_t)hw * hw * OC;
    if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 4, x64, x, (size_t)hw * hw * C * 4);
    for (int i = 0; !e && i < 2; i++) e = ctosa_interp_run(it);
    ctosa_interp_tensor o;
    if (!e) e = ctosa_interp_get_output(it, "y", &o);
    if (!e) memcpy(y, o.data, n * sizeof(float));
    *muls = *sigs = 0;
    for (uint32_t i = 0; !e && i < ctosa_interp_profile_count(it); i++) {
        ctosa_interp_op_profile p;
        if ((e = ctosa_interp_profile_get(it, i, &p))) break;
        if (p.kind == CTOSA_OP_MUL) *muls += p.runs;
        if (p.kind == CTOSA_OP_SIGMOID) *sigs += p.runs;
    }
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return e;
}

/* The SiLU applied by the convolution's store (GEMM tiles for CONV2D, the
 * depthwise rows) gives the bits of the separate SiLU pass, on 1 and 2
 * threads, with a channel count off the vector width and NaN and
 * infinities among the inputs; the MUL and SIGMOID no longer run. */
static void check_conv_silu(bool dw, int hw, int C) {
    int OC = dw ? C : C + 4;
    size_t nx = (size_t)hw * hw * C, n = (size_t)hw * hw * OC;
    size_t nw = (size_t)OC * (dw ? 25 : 9 * C);
    float *x = malloc(nx * 4), *fused = malloc(n * 4), *plain = malloc(n * 4);
    float *w = malloc(nw * 4), *b = malloc((size_t)OC * 4);
    for (size_t i = 0; i < nw; i++) w[i] = rnd() * 0.6f;
    for (int i = 0; i < OC; i++) b[i] = rnd() * 2.0f;
    static const float sp[] = {NAN, INFINITY, -INFINITY, 40.0f, -40.0f};
    for (size_t i = 0; i < nx; i++) x[i] = i % 997 == 11 ? sp[(i / 997) % 5] : rnd() * 4.0f;
    for (int threads = 1; threads <= 2; threads++) {
        uint64_t mf, sf, mp, spl;
        ctosa_error *e = run_conv_silu(dw, hw, C, false, threads, x, w, b, fused, &mf, &sf);
        if (!e) e = run_conv_silu(dw, hw, C, true, threads, x, w, b, plain, &mp, &spl);
        CHECK_MSG(!e, "%s", e ? ctosa_error_message(e) : "");
        ctosa_error_free(e);
        if (e) break;
        CHECK_MSG(mf == 0 && sf == 0 && mp == 2 && spl == 0,
                  "%s: MUL / SIGMOID runs fused %llu / %llu, exposed %llu / %llu (want 0 / 0, 2 / 0)",
                  dw ? "depthwise" : "conv", (unsigned long long)mf, (unsigned long long)sf,
                  (unsigned long long)mp, (unsigned long long)spl);
        size_t bad = 0, nan = 0;
        for (size_t i = 0; i < n; i++) {
            nan += isnan(plain[i]);
            if (memcmp(&fused[i], &plain[i], 4) != 0 && !(isnan(fused[i]) && isnan(plain[i])) && bad++ < 3)
                CHECK_MSG(0, "%s %dx%dx%d threads %d: element %zu fused %.9g unfused %.9g",
                          dw ? "depthwise" : "conv", hw, hw, C, threads, i, fused[i], plain[i]);
        }
        CHECK_MSG(bad == 0 && nan > 0, "%s threads %d: %zu elements differ, %zu NaN",
                  dw ? "depthwise" : "conv", threads, bad, nan);
    }
    free(x);
    free(fused);
    free(plain);
    free(w);
    free(b);
}

static void test_conv_store(void) {
    check_conv_silu(false, 13, 20);
    check_conv_silu(false, 40, 48); /* split between threads */
    check_conv_silu(true, 13, 40);
    check_conv_silu(true, 48, 72);
}

static void test_small_with_tail(void) { check_shape((const int32_t[]){1, 7, 9, 23}); }
static void test_large_threaded(void) { check_shape((const int32_t[]){2, 64, 64, 33}); }

int main(void) {
    RUN(test_small_with_tail);
    RUN(test_large_threaded);
    RUN(test_conv_store);
    return th_finish();
}
