/* test_interp_fusion.c - the interpreter runtime's speed features must not
 * change a single bit of any result:
 *  - CLAMP fused into the preceding CONV2D / DEPTHWISE_CONV2D (fp32) gives
 *    the same bits as the unfused pair (fusion is prevented by making the
 *    intermediate a graph output), including NaN with both nan modes;
 *  - constant weights packed once into the per-operator cache give the
 *    same results on the second run as on the first, and as the same graph
 *    with the weights fed as a graph input (never cached): fp32 and int8
 *    convolutions, int16 convolution, fp32 and int8 MATMUL;
 *  - int8 MATMUL on the dot-product engine gives the plain loops' values
 *    (or error) over shapes, zero points and every instruction set;
 *  - an invalid CLAMP (min > max) is not fused and still fails;
 *  - a RESCALE fused into the int8 CONV2D / DEPTHWISE_CONV2D before it
 *    (applied as the convolution stores its results) gives the bytes of the unfused pair and of
 *    the plain loops, on every dot-product instruction set the CPU has,
 *    and a REQUIRE it breaks fails with the RESCALE's own message; the
 *    same with the quantized lowering's tie-to-even chain in between;
 *  - the int8 lowering's residual addition (RESCALE, RESCALE, ADD, RESCALE)
 *    run as one pass gives the four operators' bytes, or their error;
 *  - int32 REDUCE_SUM's fast path gives the plain loop's sums, or its error;
 *  - the int8 depthwise kernels give the plain loops' bytes (or error)
 *    over kernel sizes, strides, dilations, pads, zero points and biases;
 *  - a TRANSPOSE to NHWC before an int8 CONV2D, offered to the
 *    convolution, gives the plain loops' values whether the convolution
 *    reads the NCHW tensor or runs the TRANSPOSE itself;
 *  - results do not depend on the thread count (the spinning pool). */
#include <math.h>

#include "harness.h"
#include "interp/int_math.h"
#include "interp/kernels_gemm.h"

typedef struct gb {
    ctosa_graph *g;
    ctosa_block *b;
    ctosa_error *e;
    int id;
} gb;

static const char *gname(gb *q, const char *p) {
    char buf[32];
    snprintf(buf, sizeof buf, "%s%d", p, q->id++);
    return ctosa_graph_strdup(q->g, buf);
}

static const char *gtensor(gb *q, ctosa_dtype t, uint32_t rank, const int32_t *shape) {
    const char *n = gname(q, "t");
    if (!q->e) q->e = ctosa_block_add_tensor(q->g, q->b, n, t, rank, shape, NULL);
    return n;
}

/* A constant (data in the file encoding = host encoding here), or, when
 * as_input, a graph input the caller feeds with the same bytes. */
static const char *gconst(gb *q, ctosa_dtype t, uint32_t rank, const int32_t *shape, const void *data,
                          size_t bytes, bool as_input) {
    ctosa_tensor *ct = NULL;
    const char *n = gname(q, as_input ? "w" : "c");
    if (!q->e) q->e = ctosa_block_add_tensor(q->g, q->b, n, t, rank, shape, &ct);
    if (as_input) {
        if (!q->e) q->e = ctosa_block_add_input(q->g, q->b, n);
        return n;
    }
    if (!q->e) q->e = ctosa_tensor_set_data(q->g, ct, data, bytes, true);
    if (!q->e) q->e = ctosa_block_add_op(q->g, q->b, CTOSA_OP_CONST, 0, NULL, 1, &n, NULL, NULL);
    return n;
}

static void gstart(gb *q) {
    memset(q, 0, sizeof *q);
    ctosa_region *r;
    q->e = ctosa_graph_create(CTOSA_VERSION_1_0, &q->g);
    if (!q->e) q->e = ctosa_graph_add_region(q->g, "main", &r);
    if (!q->e) q->e = ctosa_region_add_block(q->g, r, "main", &q->b);
}

/* One input fed to grun. */
typedef struct gin {
    const char *name;
    ctosa_dtype type;
    uint32_t rank;
    const int64_t *shape;
    const void *data;
    size_t bytes;
} gin;

/* Adds output y, runs the graph `runs` times on one interpreter (threads 0:
 * the default; reference: the plain loops), copies y's `bytes` bytes to out
 * and frees the graph. An output of another size is an error. */
static bool grun_profile;      /* grun: profile the run ... */
static uint64_t grun_add_runs; /* ... and count the ADD operators that ran */

static ctosa_error *grun(gb *q, int threads, bool reference, int nin, const gin *in, int runs, const char *y,
                         void *out, size_t bytes) {
    ctosa_interp *it = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.reference = reference;
    opt.profile = grun_profile;
    ctosa_error *e = q->e;
    if (!e) e = ctosa_block_add_output(q->g, q->b, y);
    if (!e) e = ctosa_interp_create(q->g, &opt, &it);
    for (int i = 0; !e && i < nin; i++)
        e = ctosa_interp_set_input(it, in[i].name, in[i].type, in[i].rank, in[i].shape, in[i].data,
                                   in[i].bytes);
    for (int i = 0; !e && i < runs; i++) e = ctosa_interp_run(it);
    grun_add_runs = 0;
    for (uint32_t i = 0; it && grun_profile && i < ctosa_interp_profile_count(it); i++) {
        ctosa_interp_op_profile pr;
        if (!ctosa_interp_profile_get(it, i, &pr) && pr.kind == CTOSA_OP_ADD) grun_add_runs += pr.runs;
    }
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, y, &t);
    if (!e && t.size == bytes) memcpy(out, t.data, bytes);
    else if (!e) e = ctosa_error_new(CTOSA_ERR_INVALID, "output has %llu bytes", (unsigned long long)t.size);
    ctosa_interp_free(it);
    ctosa_graph_free(q->g);
    return e;
}

static float fx[1 * 9 * 9 * 20], fw[24 * 3 * 3 * 20], fb[24], fdw[3 * 3 * 24], fdb[24];
static int8_t ix[1 * 9 * 9 * 20], iw[24 * 3 * 3 * 20];
static int32_t ib[24];
static int16_t sx16[1 * 9 * 9 * 20];
static int64_t lb[24];

static void fill(void) {
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        s = s * 1103515245u + 12345u;
        fx[i] = (float)((int)(s >> 16) % 2001 - 1000) / 250.0f;
        ix[i] = (int8_t)(s >> 20);
        sx16[i] = (int16_t)(s >> 12);
    }
    fx[7] = NAN; /* reaches a few outputs: CLAMP must treat it as unfused */
    for (size_t i = 0; i < sizeof fw / sizeof fw[0]; i++) {
        s = s * 1103515245u + 12345u;
        fw[i] = (float)((int)(s >> 16) % 2001 - 1000) / 3000.0f;
        iw[i] = (int8_t)(s >> 20);
    }
    for (int i = 0; i < 24; i++) {
        fb[i] = (float)(i - 12) / 8.0f;
        fdb[i] = (float)(12 - i) / 16.0f;
        ib[i] = i * 1000 - 12000;
        lb[i] = i * 100000 - 1200000;
    }
    for (size_t i = 0; i < sizeof fdw / sizeof fdw[0]; i++) fdw[i] = (float)((int)(i * 37 % 19) - 9) / 7.0f;
}

static ctosa_attr conv_attr(int32_t *pad, int32_t *st, int32_t *dil, ctosa_dtype acc) {
    ctosa_attr a = {0};
    a.pad = (ctosa_i32s){pad, 4};
    a.stride = (ctosa_i32s){st, 2};
    a.dilation = (ctosa_i32s){dil, 2};
    a.acc_type = acc;
    return a;
}

static const char *gclamp(gb *q, const char *x, const int32_t *shape, float *lohi, ctosa_nan_mode nm) {
    const char *y = gtensor(q, CTOSA_DTYPE_FP32, 4, shape);
    ctosa_attr c = {0};
    c.min_val = (ctosa_bytes){(const uint8_t *)&lohi[0], 4};
    c.max_val = (ctosa_bytes){(const uint8_t *)&lohi[1], 4};
    c.nan_mode = nm;
    if (!q->e) q->e = ctosa_block_add_op(q->g, q->b, CTOSA_OP_CLAMP, 1, &x, 1, &y, &c, NULL);
    return y;
}

/* x -> CONV2D 3x3 (20->24) -> CLAMP -> DEPTHWISE 3x3 -> CLAMP(nm2) -> out.
 * expose: the two convolution outputs are graph outputs too (no fusion). */
/* ctosa_interp_options.reference for run_fp32 and run_int. */
static bool use_reference;

static ctosa_error *run_fp32(bool expose, int threads, ctosa_nan_mode nm2, float *lohi1, float *out,
                             int runs) {
    gb q;
    gstart(&q);
    int32_t xs[4] = {1, 9, 9, 20}, ws[4] = {24, 3, 3, 20}, bs[1] = {24}, one[1] = {1};
    int32_t ys[4] = {1, 9, 9, 24}, dws[4] = {3, 3, 24, 1};
    int32_t pad[4] = {1, 1, 1, 1}, st[2] = {1, 1}, dil[2] = {1, 1};
    float zero = 0, lohi2[2] = {-0.5f, 1.5f};
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", CTOSA_DTYPE_FP32, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *w = gconst(&q, CTOSA_DTYPE_FP32, 4, ws, fw, sizeof fw, false);
    const char *b = gconst(&q, CTOSA_DTYPE_FP32, 1, bs, fb, sizeof fb, false);
    const char *z = gconst(&q, CTOSA_DTYPE_FP32, 1, one, &zero, 4, false);
    const char *c1 = gtensor(&q, CTOSA_DTYPE_FP32, 4, ys);
    ctosa_attr a = conv_attr(pad, st, dil, CTOSA_DTYPE_FP32);
    const char *in1[5] = {"x", w, b, z, z};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_CONV2D, 5, in1, 1, &c1, &a, NULL);
    const char *r1 = gclamp(&q, c1, ys, lohi1, CTOSA_NAN_PROPAGATE);
    const char *dw = gconst(&q, CTOSA_DTYPE_FP32, 4, dws, fdw, sizeof fdw, false);
    const char *db = gconst(&q, CTOSA_DTYPE_FP32, 1, bs, fdb, sizeof fdb, false);
    const char *c2 = gtensor(&q, CTOSA_DTYPE_FP32, 4, ys);
    const char *in2[5] = {r1, dw, db, z, z};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_DEPTHWISE_CONV2D, 5, in2, 1, &c2, &a, NULL);
    const char *r2 = gclamp(&q, c2, ys, lohi2, nm2);
    if (expose && !q.e) q.e = ctosa_block_add_output(q.g, q.b, c1);
    if (expose && !q.e) q.e = ctosa_block_add_output(q.g, q.b, c2);
    int64_t xs64[4] = {1, 9, 9, 20};
    gin x = {"x", CTOSA_DTYPE_FP32, 4, xs64, fx, sizeof fx};
    return grun(&q, threads, use_reference, 1, &x, runs, r2, out, sizeof(float) * 9 * 9 * 24);
}

static void test_clamp_fusion_bits(void) {
    enum { N = 9 * 9 * 24 };
    static float ref[N], got[N];
    float lohi[2] = {0.0f, 6.0f};
    for (int nm = 1; nm <= 2; nm++) {
        CHECK_OK(run_fp32(true, 1, (ctosa_nan_mode)nm, lohi, ref, 1));
        int nans = 0;
        for (int i = 0; i < N; i++) nans += ref[i] != ref[i];
        /* PROPAGATE keeps the NaN, IGNORE maps it to min_val */
        CHECK(nm == CTOSA_NAN_PROPAGATE ? nans > 0 : nans == 0);
        for (int threads = 1; threads <= 3; threads++)
            for (int runs = 1; runs <= 2; runs++) {
                memset(got, 0, sizeof got);
                CHECK_OK(run_fp32(false, threads, (ctosa_nan_mode)nm, lohi, got, runs));
                CHECK_MSG(memcmp(ref, got, sizeof ref) == 0, "nan_mode %d threads %d runs %d", nm, threads,
                          runs);
            }
    }
}

static void test_bad_clamp_not_fused(void) {
    static float got[9 * 9 * 24];
    float lohi[2] = {6.0f, 0.0f}; /* max < min: ERROR_IF */
    CHECK_ERR(run_fp32(false, 1, CTOSA_NAN_PROPAGATE, lohi, got, 1), CTOSA_ERR_INVALID, "CLAMP");
}

/* Integer convolution: x (int8 or int16) -> CONV2D -> int32 / int48 out;
 * weights a constant or (weights_input) a graph input. */
static ctosa_error *run_int(bool i16, bool weights_input, int threads, int runs, void *out, size_t bytes) {
    gb q;
    gstart(&q);
    int32_t xs[4] = {1, 9, 9, 20}, ws[4] = {24, 3, 3, 20}, bs[1] = {24}, one[1] = {1};
    int32_t ys[4] = {1, 9, 9, 24};
    int32_t pad[4] = {1, 1, 1, 1}, st[2] = {1, 1}, dil[2] = {1, 1};
    ctosa_dtype xt = i16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8;
    ctosa_dtype ot = i16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    int8_t izp = i16 ? 0 : -3, wzp = i16 ? 0 : 2;
    int16_t izp16 = 0;
    uint8_t b48[24 * 6];
    for (int i = 0; i < 24; i++)
        for (int k = 0; k < 6; k++) b48[i * 6 + k] = (uint8_t)((uint64_t)lb[i] >> (8 * k));
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", xt, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *w = gconst(&q, CTOSA_DTYPE_INT8, 4, ws, iw, sizeof iw, weights_input);
    const char *b =
        i16 ? gconst(&q, ot, 1, bs, b48, sizeof b48, false) : gconst(&q, ot, 1, bs, ib, sizeof ib, false);
    const char *zi = i16 ? gconst(&q, xt, 1, one, &izp16, 2, false) : gconst(&q, xt, 1, one, &izp, 1, false);
    const char *zw = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &wzp, 1, false);
    const char *y = gtensor(&q, ot, 4, ys);
    ctosa_attr a = conv_attr(pad, st, dil, i16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32);
    const char *in[5] = {"x", w, b, zi, zw};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_CONV2D, 5, in, 1, &y, &a, NULL);
    int64_t xs64[4] = {1, 9, 9, 20}, ws64[4] = {24, 3, 3, 20};
    gin in2[2] = {{"x", xt, 4, xs64, i16 ? (const void *)sx16 : ix, i16 ? sizeof sx16 : sizeof ix},
                  {w, CTOSA_DTYPE_INT8, 4, ws64, iw, sizeof iw}};
    return grun(&q, threads, use_reference, weights_input ? 2 : 1, in2, runs, y, out, bytes);
}

static void test_cached_weights_int(void) {
    static int32_t r32[9 * 9 * 24], g32[9 * 9 * 24];
    static int64_t r64[9 * 9 * 24], g64[9 * 9 * 24];
    CHECK_OK(run_int(false, true, 1, 1, r32, sizeof r32));
    bool nonzero = false;
    for (int i = 0; i < 9 * 9 * 24; i++) nonzero |= r32[i] != 0;
    CHECK(nonzero);
    for (int threads = 1; threads <= 2; threads++)
        for (int runs = 1; runs <= 3; runs += 2) {
            memset(g32, 0, sizeof g32);
            CHECK_OK(run_int(false, false, threads, runs, g32, sizeof g32));
            CHECK_MSG(memcmp(r32, g32, sizeof r32) == 0, "int8 threads %d runs %d", threads, runs);
        }
    CHECK_OK(run_int(true, true, 1, 1, r64, sizeof r64));
    for (int runs = 1; runs <= 2; runs++) {
        memset(g64, 0, sizeof g64);
        CHECK_OK(run_int(true, false, 2, runs, g64, sizeof g64));
        CHECK_MSG(memcmp(r64, g64, sizeof r64) == 0, "int16 runs %d", runs);
    }
}

/* MATMUL [2,5,33] x B [2,33,40]: B constant (cached) vs graph input. */
static ctosa_error *run_mm(bool b_input, int runs, float *out) {
    static float A[2 * 5 * 33], B[2 * 33 * 40];
    for (int i = 0; i < 2 * 5 * 33; i++) A[i] = (float)((i * 7) % 13 - 6) / 3.0f;
    for (int i = 0; i < 2 * 33 * 40; i++) B[i] = (float)((i * 11) % 17 - 8) / 5.0f;
    gb q;
    gstart(&q);
    int32_t as[3] = {2, 5, 33}, bsh[3] = {2, 33, 40}, os[3] = {2, 5, 40}, one[1] = {1};
    float zero = 0;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "a", CTOSA_DTYPE_FP32, 3, as, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "a");
    const char *b = gconst(&q, CTOSA_DTYPE_FP32, 3, bsh, B, sizeof B, b_input);
    const char *z = gconst(&q, CTOSA_DTYPE_FP32, 1, one, &zero, 4, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_FP32, 3, os), *in[4] = {"a", b, z, z};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_MATMUL, 4, in, 1, &y, NULL, NULL);
    int64_t as64[3] = {2, 5, 33}, bs64[3] = {2, 33, 40};
    gin ab[2] = {{"a", CTOSA_DTYPE_FP32, 3, as64, A, sizeof A}, {b, CTOSA_DTYPE_FP32, 3, bs64, B, sizeof B}};
    return grun(&q, 0, false, b_input ? 2 : 1, ab, runs, y, out, sizeof(float) * 2 * 5 * 40);
}

static void test_cached_matmul(void) {
    static float r[2 * 5 * 40], g[2 * 5 * 40];
    CHECK_OK(run_mm(true, 1, r));
    for (int runs = 1; runs <= 3; runs++) {
        memset(g, 0, sizeof g);
        CHECK_OK(run_mm(false, runs, g));
        CHECK_MSG(memcmp(r, g, sizeof r) == 0, "runs %d", runs);
    }
    /* a value worked by hand: out[0][0][0] = sum_c A[0][0][c] * B[0][c][0] */
    float s = 0;
    for (int c = 0; c < 33; c++)
        s += (float)((c * 7) % 13 - 6) / 3.0f * ((float)((c * 40 * 11) % 17 - 8) / 5.0f);
    CHECK(fabsf(r[0] - s) < 1e-4f);
}

/* int8 MATMUL [1,4,300] x B [1,300,20] -> int32 (zero points -5 and 3):
 * B constant (cached, chunks planned for the worst input) vs graph input,
 * and against a plain integer sum. */
static ctosa_error *run_mm8(bool b_input, int runs, int32_t *out, const int8_t *A, const int8_t *B) {
    gb q;
    gstart(&q);
    int32_t as[3] = {1, 4, 300}, bsh[3] = {1, 300, 20}, os[3] = {1, 4, 20}, one[1] = {1};
    int8_t azp = -5, bzp = 3;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "a", CTOSA_DTYPE_INT8, 3, as, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "a");
    const char *b = gconst(&q, CTOSA_DTYPE_INT8, 3, bsh, B, 300 * 20, b_input);
    const char *za = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &azp, 1, false);
    const char *zb = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &bzp, 1, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_INT32, 3, os), *in[4] = {"a", b, za, zb};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_MATMUL, 4, in, 1, &y, NULL, NULL);
    int64_t as64[3] = {1, 4, 300}, bs64[3] = {1, 300, 20};
    gin ab[2] = {{"a", CTOSA_DTYPE_INT8, 3, as64, A, 4 * 300}, {b, CTOSA_DTYPE_INT8, 3, bs64, B, 300 * 20}};
    return grun(&q, 0, false, b_input ? 2 : 1, ab, runs, y, out, sizeof(int32_t) * 4 * 20);
}

static void test_cached_matmul_int8(void) {
    static int8_t A[4 * 300], B[300 * 20];
    static int32_t r[80], g[80];
    for (int i = 0; i < 4 * 300; i++) A[i] = (int8_t)(i % 2 ? 127 : -128); /* extremes */
    for (int i = 0; i < 300 * 20; i++) B[i] = (int8_t)((i * 53) % 256 - 128);
    CHECK_OK(run_mm8(true, 1, r, A, B));
    for (int h = 0; h < 4; h++)
        for (int w = 0; w < 20; w++) {
            int64_t s = 0;
            for (int c = 0; c < 300; c++) s += (int64_t)(A[h * 300 + c] + 5) * (B[c * 20 + w] - 3);
            CHECK(r[h * 20 + w] == s);
        }
    for (int runs = 1; runs <= 3; runs++) {
        memset(g, 0, sizeof g);
        CHECK_OK(run_mm8(false, runs, g, A, B));
        CHECK_MSG(memcmp(r, g, sizeof r) == 0, "runs %d", runs);
    }
}

/* The public reference option (plain loops): integer convolutions give the
 * same bits as the fast paths, float ones agree to rounding. */
static void test_reference_option(void) {
    enum { N = 9 * 9 * 24 };
    static int32_t f32[N], r32[N];
    static int64_t f64[N], r64[N];
    static float ff[N], rf[N];
    float lohi[2] = {0.0f, 6.0f};
    for (int ref = 0; ref < 2; ref++) {
        use_reference = ref;
        CHECK_OK(run_int(false, false, 2, 1, ref ? r32 : f32, sizeof r32));
        CHECK_OK(run_int(true, false, 2, 1, ref ? r64 : f64, sizeof r64));
        CHECK_OK(run_fp32(false, 2, CTOSA_NAN_IGNORE, lohi, ref ? rf : ff, 1));
    }
    use_reference = false;
    CHECK(memcmp(f32, r32, sizeof r32) == 0);
    CHECK(memcmp(f64, r64, sizeof r64) == 0);
    int far = 0;
    for (int i = 0; i < N; i++) far += fabsf(ff[i] - rf[i]) > 1e-4f * (1.0f + fabsf(rf[i]));
    CHECK_MSG(far == 0, "%d fp32 outputs differ beyond rounding", far);
}

/* ------------------------------------------------- fused RESCALE */

typedef struct rq_case {
    int32_t H, W, IC, OC, k, stride;
    bool dw; /* DEPTHWISE_CONV2D (OC = IC) instead of CONV2D */
    int8_t izp, ozp;
    bool per_channel, dbl;
    int shift_lo; /* smallest shift drawn (small shifts break the REQUIRE) */
    /* the quantized lowering's tie-to-even chain between the convolution
     * and the RESCALE: y = RESCALE1(acc) to int32, SELECT((acc & mask) ==
     * half, y - (y & odd), y); tie_pc: mask, half and odd per channel */
    bool tie, tie_pc;
    int shift2_lo; /* the same for the RESCALE after the chain */
} rq_case;

static uint32_t rq_rng;
static int32_t rq_rand(int32_t lo, int32_t hi) {
    rq_rng = rq_rng * 1103515245u + 12345u;
    return lo + (int32_t)((rq_rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* x int8 [1,H,W,IC] -> CONV2D k x k (int32) -> [tie chain ->] RESCALE ->
 * int8 y. expose 1: the int32 tensor is a graph output too, 2: the chain's
 * SUB result is (no fusion either way). out gets y's bytes. */
static ctosa_error *run_rq(const rq_case *c, int expose, int threads, int runs, int8_t *out) {
    static int8_t x[16 * 16 * 64], w[64 * 3 * 3 * 64];
    static int32_t bias[64], mult[64];
    static int8_t shift[64];
    int32_t H = c->H, W = c->W, IC = c->IC, OC = c->OC, k = c->k, s = c->stride, pd = k / 2;
    int32_t OH = (H + 2 * pd - k) / s + 1, OW = (W + 2 * pd - k) / s + 1;
    rq_rng = (uint32_t)(H * 131 + W * 17 + IC * 7 + OC);
    for (int32_t i = 0; i < H * W * IC; i++) x[i] = (int8_t)rq_rand(-128, 127);
    for (int32_t i = 0; i < OC * k * k * IC; i++) w[i] = (int8_t)rq_rand(-128, 127);
    int32_t nc = c->per_channel ? OC : 1;
    for (int32_t i = 0; i < OC; i++) bias[i] = rq_rand(-30000, 30000);
    for (int32_t i = 0; i < nc; i++) {
        mult[i] = rq_rand(1 << 30, 0x7fffffff);
        shift[i] = (int8_t)rq_rand(c->shift_lo, 40);
    }
    gb q;
    gstart(&q);
    int32_t xs[4] = {1, H, W, IC}, ws[4] = {OC, k, k, IC}, bs[1] = {OC}, one[1] = {1}, ncs[1] = {nc};
    if (c->dw) ws[0] = k, ws[1] = k, ws[2] = IC, ws[3] = 1;
    int32_t ys[4] = {1, OH, OW, OC};
    int32_t pad[4] = {pd, pd, pd, pd}, st[2] = {s, s}, dil[2] = {1, 1};
    int8_t wzp = 0;
    int32_t zero32 = 0;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", CTOSA_DTYPE_INT8, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *wt = gconst(&q, CTOSA_DTYPE_INT8, 4, ws, w, (size_t)(ws[0] * ws[1] * ws[2] * ws[3]), false);
    const char *bt = gconst(&q, CTOSA_DTYPE_INT32, 1, bs, bias, (size_t)OC * 4, false);
    const char *zi = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->izp, 1, false);
    const char *zw = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &wzp, 1, false);
    const char *acc = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys);
    ctosa_attr a = conv_attr(pad, st, dil, CTOSA_DTYPE_INT32);
    const char *in[5] = {"x", wt, bt, zi, zw};
    if (!q.e)
        q.e = ctosa_block_add_op(q.g, q.b, c->dw ? CTOSA_OP_DEPTHWISE_CONV2D : CTOSA_OP_CONV2D, 5, in, 1,
                                 &acc, &a, NULL);
    const char *mt = gconst(&q, CTOSA_DTYPE_INT32, 1, ncs, mult, (size_t)nc * 4, false);
    const char *sht = gconst(&q, CTOSA_DTYPE_INT8, 1, ncs, shift, (size_t)nc, false);
    const char *z32 = gconst(&q, CTOSA_DTYPE_INT32, 1, one, &zero32, 4, false);
    const char *zo = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->ozp, 1, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_INT8, 4, ys);
    ctosa_attr r = {0};
    r.scale32 = true;
    r.rounding_mode = c->dbl ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE;
    r.per_channel = c->per_channel;
    const char *rin[5] = {acc, mt, sht, z32, zo};
    const char *sub = NULL;
    if (c->tie) {
        /* the chain, then the second RESCALE reads its result */
        static int32_t mask[64], half[64], odd[64], mult2[64];
        static int8_t shift2[64];
        int32_t tn = c->tie_pc ? OC : 1, cs[4] = {1, 1, 1, tn};
        for (int32_t i = 0; i < OC; i++) {
            int b = rq_rand(0, 6); /* low bits compared: b = 0 ties everywhere */
            mask[i] = (1 << b) - 1;
            half[i] = b ? 1 << (b - 1) : 0;
            odd[i] = rq_rand(0, 3) ? 1 : rq_rand(-(1 << 29), 1 << 29) * 2 + 1;
        }
        for (int32_t i = 0; i < nc; i++) {
            mult2[i] = rq_rand(1 << 30, 0x7fffffff);
            shift2[i] = (int8_t)rq_rand(c->shift2_lo, 36);
        }
        const char *y1 = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys);
        ctosa_attr r1 = r;
        r1.rounding_mode = CTOSA_ROUND_SINGLE;
        const char *r1in[5] = {acc, mt, sht, z32, z32};
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_RESCALE, 5, r1in, 1, &y1, &r1, NULL);
        const char *mk = gconst(&q, CTOSA_DTYPE_INT32, 4, cs, mask, (size_t)tn * 4, false);
        const char *hf = gconst(&q, CTOSA_DTYPE_INT32, 4, cs, half, (size_t)tn * 4, false);
        const char *od = gconst(&q, CTOSA_DTYPE_INT32, 4, cs, odd, (size_t)tn * 4, false);
        const char *a1 = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys), *eq = gtensor(&q, CTOSA_DTYPE_BOOL, 4, ys);
        const char *a2 = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys), *z = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys);
        sub = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys);
        const char *i1[2] = {acc, mk}, *i2[2] = {a1, hf}, *i3[2] = {y1, od}, *i4[2] = {y1, a2};
        const char *i5[3] = {eq, sub, y1};
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_BITWISE_AND, 2, i1, 1, &a1, NULL, NULL);
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_EQUAL, 2, i2, 1, &eq, NULL, NULL);
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_BITWISE_AND, 2, i3, 1, &a2, NULL, NULL);
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_SUB, 2, i4, 1, &sub, NULL, NULL);
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_SELECT, 3, i5, 1, &z, NULL, NULL);
        rin[0] = z;
        rin[1] = gconst(&q, CTOSA_DTYPE_INT32, 1, ncs, mult2, (size_t)nc * 4, false);
        rin[2] = gconst(&q, CTOSA_DTYPE_INT8, 1, ncs, shift2, (size_t)nc, false);
    }
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_RESCALE, 5, rin, 1, &y, &r, NULL);
    if (expose == 1 && !q.e) q.e = ctosa_block_add_output(q.g, q.b, acc);
    if (expose == 2 && sub && !q.e) q.e = ctosa_block_add_output(q.g, q.b, sub);
    int64_t xs64[4] = {1, H, W, IC};
    gin xi = {"x", CTOSA_DTYPE_INT8, 4, xs64, x, (size_t)(H * W * IC)};
    return grun(&q, threads, use_reference, 1, &xi, runs, y, out, (size_t)(OH * OW * OC));
}

static void test_rescale_fusion(void) {
    static const int levels[] = {KG_Q8_AVX512VNNI, KG_Q8_AVXVNNI, KG_Q8_NONE};
    static int8_t ref[16 * 16 * 64], got[16 * 16 * 64];
    int compared = 0, failed_alike = 0;
    /* cases 48 and up: with a tie chain */
    for (int i = 0; i < 48 + 40; i++) {
        rq_rng = (uint32_t)i * 2654435761u + 1;
        static const int32_t ics[] = {3, 8, 16, 20}, ocs[] = {5, 16, 24, 40};
        rq_case c = {.H = rq_rand(3, 16),
                     .W = rq_rand(3, 16),
                     .IC = ics[rq_rand(0, 3)],
                     .OC = ocs[rq_rand(0, 3)],
                     .k = rq_rand(0, 1) ? 3 : 1,
                     .stride = rq_rand(1, 2),
                     .izp = (int8_t)rq_rand(-128, 127),
                     .per_channel = rq_rand(0, 3) > 0,
                     .dbl = rq_rand(0, 1),
                     .shift_lo = i % 8 == 7 ? 8 : 33};
        c.ozp = (int8_t)rq_rand(-128, 127);
        c.dw = i % 3 == 2;
        c.tie = i >= 48;
        c.tie_pc = rq_rand(0, 2) > 0;
        c.shift2_lo = i % 8 == 3 ? 4 : 31;
        if (c.tie) c.dbl = false;                                  /* the lowering's chains round once */
        if (c.dw) c.IC = c.OC = ocs[rq_rand(0, 3)] + (i % 2) * 16; /* channel tails and 16-channel blocks */
        if (c.stride == 2) c.H |= 1, c.W |= 1;                     /* (size - 1) divisible by the stride */
        size_t n = (size_t)((c.H + 2 * (c.k / 2) - c.k) / c.stride + 1) *
                   (size_t)((c.W + 2 * (c.k / 2) - c.k) / c.stride + 1) * (size_t)c.OC;
        /* the unfused pair on the plain loops */
        use_reference = true;
        ctosa_error *er = run_rq(&c, 1, 1, 1, ref);
        use_reference = false;
        for (int l = 0; l < 3; l++) {
            kg_q8_limit(levels[l]);
            if (kg_q8_isa() != levels[l]) continue;
            for (int v = 0; v < (c.tie ? 4 : 3); v++) {
                memset(got, 0x5a, sizeof got);
                int expose = v == 0 ? 1 : v == 3 ? 2 : 0;
                ctosa_error *eg = run_rq(&c, expose, v == 2 ? 2 : 1, v == 2 ? 2 : 1, got);
                CHECK_MSG((er == NULL) == (eg == NULL), "case %d isa %d variant %d: reference %s, fast %s", i,
                          levels[l], v, er ? ctosa_error_message(er) : "ok",
                          eg ? ctosa_error_message(eg) : "ok");
                if (er && eg) {
                    CHECK_MSG(strcmp(ctosa_error_message(er), ctosa_error_message(eg)) == 0,
                              "case %d: '%s' vs '%s'", i, ctosa_error_message(er), ctosa_error_message(eg));
                    failed_alike++;
                } else if (!er && !eg) {
                    CHECK_MSG(memcmp(ref, got, n) == 0, "case %d isa %d variant %d: outputs differ", i,
                              levels[l], v);
                    compared++;
                }
                ctosa_error_free(eg);
            }
        }
        ctosa_error_free(er);
    }
    kg_q8_limit(-1);
    printf("fused RESCALE: %d runs compared, %d failed alike\n", compared, failed_alike);
    CHECK(compared >= (48 * 3 + 40 * 4) * 3 / 2);
    CHECK(failed_alike > 0);
}

/* int8 MATMUL on the dot-product engine (kg_matmul_q8): shapes with C a
 * multiple of 4 (A read in place) and not (A copied), 1..17 rows (the 12-,
 * 4- and 1-row tiles), W across panel tails, zero points, B constant
 * (cached) or an input, 1 and 2 threads, every instruction set; bytes equal
 * to the plain loops'. The last cases: C = 70000 with extreme values (the
 * scan of A; the second overflows int32 and must fail as the plain loop
 * does). */
typedef struct mm8_case {
    int32_t N, H, C, W;
    int8_t azp, bzp;
    bool b_input, extreme;
} mm8_case;

static ctosa_error *run_mm8c(const mm8_case *c, int threads, int32_t *out) {
    static int8_t A[2 * 17 * 70000], B[2 * 70000 * 40];
    int32_t N = c->N, H = c->H, C = c->C, W = c->W;
    rq_rng = (uint32_t)(N * 7 + H * 131 + C * 17 + W);
    for (int32_t i = 0; i < N * H * C; i++)
        A[i] = (int8_t)(c->extreme ? (i % 3 ? 127 : 126) : rq_rand(-128, 127));
    /* b - bzp must fit int8 for the engine */
    for (int32_t i = 0; i < N * C * W; i++)
        B[i] = (int8_t)(c->extreme
                            ? -128 + (c->bzp > 0 ? c->bzp : 0)
                            : rq_rand(c->bzp > 0 ? -128 + c->bzp : -128, c->bzp < 0 ? 127 + c->bzp : 127));
    gb q;
    gstart(&q);
    int32_t as[3] = {N, H, C}, bsh[3] = {N, C, W}, os[3] = {N, H, W}, one[1] = {1};
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "a", CTOSA_DTYPE_INT8, 3, as, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "a");
    const char *b = gconst(&q, CTOSA_DTYPE_INT8, 3, bsh, B, (size_t)(N * C * W), c->b_input);
    const char *za = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->azp, 1, false);
    const char *zb = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->bzp, 1, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_INT32, 3, os), *in[4] = {"a", b, za, zb};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_MATMUL, 4, in, 1, &y, NULL, NULL);
    int64_t as64[3] = {N, H, C}, bs64[3] = {N, C, W};
    gin ab[2] = {{"a", CTOSA_DTYPE_INT8, 3, as64, A, (size_t)(N * H * C)},
                 {b, CTOSA_DTYPE_INT8, 3, bs64, B, (size_t)(N * C * W)}};
    return grun(&q, threads, use_reference, c->b_input ? 2 : 1, ab, 2, y, out,
                sizeof(int32_t) * (size_t)(N * H * W));
}

static void test_matmul_int8_engine(void) {
    static const int levels[] = {KG_Q8_AVX512VNNI, KG_Q8_AVXVNNI, KG_Q8_NONE};
    static int32_t ref[2 * 17 * 40], got[2 * 17 * 40];
    static const mm8_case fixed[] = {{1, 1, 70000, 3, 126, 0, false, true},
                                     {1, 1, 70000, 3, -128, 0, false, true}};
    int compared = 0, failed = 0;
    uint64_t q8 = kg_q8_runs();
    for (int i = 0; i < 26; i++) {
        mm8_case c;
        if (i < 24) {
            rq_rng = (uint32_t)i * 2654435761u + 7;
            static const int32_t hs[] = {1, 3, 12, 13, 17}, cs[] = {1, 3, 4, 5, 64, 300},
                                 ws[] = {1, 5, 16, 40};
            c = (mm8_case){.N = rq_rand(1, 2),
                           .H = hs[rq_rand(0, 4)],
                           .C = cs[rq_rand(0, 5)],
                           .W = ws[rq_rand(0, 3)],
                           .azp = (int8_t)rq_rand(-128, 127),
                           .bzp = (int8_t)(i % 3 ? rq_rand(-20, 20) : 0),
                           .b_input = i % 4 == 1};
        } else {
            c = fixed[i - 24];
        }
        size_t n = (size_t)(c.N * c.H * c.W);
        use_reference = true;
        ctosa_error *er = run_mm8c(&c, 1, ref);
        use_reference = false;
        for (int l = 0; l < 3; l++) {
            kg_q8_limit(levels[l]);
            if (kg_q8_isa() != levels[l]) continue;
            for (int t = 1; t <= 2; t++) {
                memset(got, 0x5a, sizeof got);
                ctosa_error *eg = run_mm8c(&c, t, got);
                CHECK_MSG((er == NULL) == (eg == NULL), "case %d isa %d threads %d: reference %s, fast %s", i,
                          levels[l], t, er ? ctosa_error_message(er) : "ok",
                          eg ? ctosa_error_message(eg) : "ok");
                if (!er && !eg) {
                    CHECK_MSG(memcmp(ref, got, n * sizeof(int32_t)) == 0, "case %d isa %d threads %d differ",
                              i, levels[l], t);
                    compared++;
                }
                failed += er && eg;
                ctosa_error_free(eg);
            }
        }
        ctosa_error_free(er);
    }
    kg_q8_limit(-1);
    printf("int8 MATMUL: %d runs compared, %d failed alike\n", compared, failed);
    CHECK(compared >= 25 * 2);
    CHECK(failed > 0);
    if (kg_q8_isa() != KG_Q8_NONE) CHECK(kg_q8_runs() > q8);
}

/* ------------------------------------------ fused residual addition */

/* y = RESCALE3(ADD(RESCALE1(a), RESCALE2(b))), int8 a and b [1,H,W,C] to
 * int32 and back (the int8 lowering's residual addition). expose: the ADD's
 * output is a graph output too (no fusion); late_b: b is a CLAMP of an
 * input placed after RESCALE1 (no fusion either: b does not exist at the
 * host). big: multipliers and shifts that make the int32 values reach
 * 2^30, so RESCALE1, RESCALE2 or RESCALE3's REQUIRE fails on some cases. */
typedef struct res_case {
    int32_t H, W, C;
    int8_t za, zb, ozp;
    bool dbl, big, late_b;
} res_case;

static ctosa_error *run_res(const res_case *c, bool expose, int threads, int8_t *out) {
    static int8_t a[16 * 16 * 40], b[16 * 16 * 40];
    int32_t n = c->H * c->W * c->C;
    rq_rng = (uint32_t)(c->H * 131 + c->W * 17 + c->C * 7 + c->za);
    for (int32_t i = 0; i < n; i++) a[i] = (int8_t)rq_rand(-128, 127), b[i] = (int8_t)rq_rand(-128, 127);
    int32_t mult[3];
    int8_t shift[3];
    for (int k = 0; k < 3; k++) {
        mult[k] = rq_rand(1 << 30, 0x7fffffff);
        shift[k] = (int8_t)(k < 2    ? (c->big ? rq_rand(8, 10) : rq_rand(20, 40))
                            : c->big ? rq_rand(28, 40)
                                     : rq_rand(14, 50));
    }
    gb q;
    gstart(&q);
    int32_t xs[4] = {1, c->H, c->W, c->C}, one[1] = {1};
    int32_t zero32 = 0;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "a", CTOSA_DTYPE_INT8, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "a");
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "b", CTOSA_DTYPE_INT8, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "b");
    const char *z32 = gconst(&q, CTOSA_DTYPE_INT32, 1, one, &zero32, 4, false);
    const char *t[2];
    ctosa_attr r = {0};
    r.scale32 = true;
    r.rounding_mode = c->dbl ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE;
    const char *src[2] = {"a", "b"};
    const int8_t *zps[2] = {&c->za, &c->zb};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && c->late_b) {
            /* b' = CLAMP(b), made after RESCALE1 */
            ctosa_attr ca = {0};
            int8_t lo = -128, hi = 127;
            ca.min_val = (ctosa_bytes){(const uint8_t *)&lo, 1};
            ca.max_val = (ctosa_bytes){(const uint8_t *)&hi, 1};
            const char *bc = gtensor(&q, CTOSA_DTYPE_INT8, 4, xs);
            if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_CLAMP, 1, &src[1], 1, &bc, &ca, NULL);
            src[1] = bc;
        }
        const char *mt = gconst(&q, CTOSA_DTYPE_INT32, 1, one, &mult[k], 4, false);
        const char *st = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &shift[k], 1, false);
        const char *zi = gconst(&q, CTOSA_DTYPE_INT8, 1, one, zps[k], 1, false);
        const char *rin[5] = {src[k], mt, st, zi, z32};
        t[k] = gtensor(&q, CTOSA_DTYPE_INT32, 4, xs);
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_RESCALE, 5, rin, 1, &t[k], &r, NULL);
    }
    const char *s = gtensor(&q, CTOSA_DTYPE_INT32, 4, xs);
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_ADD, 2, t, 1, &s, NULL, NULL);
    const char *mt = gconst(&q, CTOSA_DTYPE_INT32, 1, one, &mult[2], 4, false);
    const char *st = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &shift[2], 1, false);
    const char *zo = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->ozp, 1, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_INT8, 4, xs), *rin[5] = {s, mt, st, z32, zo};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_RESCALE, 5, rin, 1, &y, &r, NULL);
    if (expose && !q.e) q.e = ctosa_block_add_output(q.g, q.b, s);
    int64_t xs64[4] = {1, c->H, c->W, c->C};
    gin in[2] = {{"a", CTOSA_DTYPE_INT8, 4, xs64, a, (size_t)n},
                 {"b", CTOSA_DTYPE_INT8, 4, xs64, b, (size_t)n}};
    return grun(&q, threads, use_reference, 2, in, 2, y, out, (size_t)n);
}

static void test_residual_fusion(void) {
    static int8_t ref[16 * 16 * 40], got[16 * 16 * 40];
    int compared = 0, failed_alike = 0, fused = 0;
    for (int i = 0; i < 40; i++) {
        rq_rng = (uint32_t)i * 2654435761u + 3;
        static const int32_t cs[] = {1, 3, 16, 24, 40};
        res_case c = {.H = rq_rand(1, 16),
                      .W = rq_rand(1, 16),
                      .C = cs[rq_rand(0, 4)],
                      .za = (int8_t)rq_rand(-128, 127),
                      .zb = (int8_t)rq_rand(-128, 127),
                      .ozp = (int8_t)rq_rand(-128, 127),
                      .dbl = rq_rand(0, 1),
                      .big = i % 4 == 3,
                      .late_b = i % 9 == 8};
        size_t n = (size_t)(c.H * c.W * c.C);
        use_reference = true;
        ctosa_error *er = run_res(&c, true, 1, ref);
        use_reference = false;
        for (int v = 0; v < 3; v++) {
            memset(got, 0x5a, sizeof got);
            grun_profile = true;
            ctosa_error *eg = run_res(&c, v == 0, v == 2 ? 2 : 1, got);
            grun_profile = false;
            fused += !eg && v > 0 && grun_add_runs == 0;
            /* without an error: fused unless the ADD's output is exposed or b comes late */
            CHECK_MSG(eg || (grun_add_runs == 0) == (v > 0 && !c.late_b),
                      "case %d variant %d: %llu ADD runs, %s", i, v, (unsigned long long)grun_add_runs,
                      eg ? ctosa_error_message(eg) : "ok");
            CHECK_MSG((er == NULL) == (eg == NULL), "case %d variant %d: reference %s, fast %s", i, v,
                      er ? ctosa_error_message(er) : "ok", eg ? ctosa_error_message(eg) : "ok");
            if (er && eg) {
                CHECK_MSG(strcmp(ctosa_error_message(er), ctosa_error_message(eg)) == 0,
                          "case %d: '%s' vs '%s'", i, ctosa_error_message(er), ctosa_error_message(eg));
                failed_alike++;
            } else if (!er && !eg) {
                CHECK_MSG(memcmp(ref, got, n) == 0, "case %d variant %d: outputs differ", i, v);
                compared++;
            }
            ctosa_error_free(eg);
        }
        ctosa_error_free(er);
    }
    printf("fused residual: %d runs compared (%d fused), %d failed alike\n", compared, fused, failed_alike);
    CHECK(compared >= 60);
    CHECK(failed_alike > 0);
    CHECK(fused >= 30 || im_isa() != 2);
}

/* ------------------------------------------- int32 REDUCE_SUM */

/* int32 REDUCE_SUM (an int8 global average pool's sums) over shapes and
 * axes against the plain loop: values, and the REQUIRE of a partial sum
 * leaving int32 (also when the final sum is back in range). */
static ctosa_error *run_rsum(const int32_t *shape, int axis, const int32_t *x, int threads, int32_t *out,
                             size_t n_out) {
    gb q;
    gstart(&q);
    int32_t os[4] = {shape[0], shape[1], shape[2], shape[3]};
    os[axis] = 1;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", CTOSA_DTYPE_INT32, 4, shape, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *y = gtensor(&q, CTOSA_DTYPE_INT32, 4, os), *in[1] = {"x"};
    ctosa_attr a = {0};
    a.axis = axis;
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_REDUCE_SUM, 1, in, 1, &y, &a, NULL);
    int64_t s64[4] = {shape[0], shape[1], shape[2], shape[3]};
    gin xi = {"x", CTOSA_DTYPE_INT32,
              4,   s64,
              x,   sizeof(int32_t) * (size_t)(shape[0] * shape[1] * shape[2] * shape[3])};
    return grun(&q, threads, use_reference, 1, &xi, 1, y, out, n_out * sizeof(int32_t));
}

static void test_reduce_sum_int32(void) {
    static int32_t x[2 * 9 * 9 * 300], ref[2 * 9 * 9 * 300], got[2 * 9 * 9 * 300];
    int compared = 0, failed_alike = 0;
    for (int i = 0; i < 24; i++) {
        rq_rng = (uint32_t)i * 2654435761u + 11;
        int32_t shape[4] = {rq_rand(1, 2), rq_rand(1, 9), rq_rand(1, 9), i % 2 ? 300 : rq_rand(1, 70)};
        int axis = rq_rand(0, 3);
        int32_t total = shape[0] * shape[1] * shape[2] * shape[3];
        /* i % 6 == 5: values near 2^30 whose running sums pass int32 (the
         * last element brings some back in range) */
        for (int32_t k = 0; k < total; k++)
            x[k] = i % 6 == 5 ? (k % 3 == 2 ? -(1 << 30) : (1 << 30) - rq_rand(0, 5))
                              : rq_rand(-(1 << 20), 1 << 20);
        size_t n_out = (size_t)(total / shape[axis]);
        use_reference = true;
        ctosa_error *er = run_rsum(shape, axis, x, 1, ref, n_out);
        use_reference = false;
        for (int t = 1; t <= 2; t++) {
            memset(got, 0x5a, sizeof got);
            ctosa_error *eg = run_rsum(shape, axis, x, t, got, n_out);
            CHECK_MSG((er == NULL) == (eg == NULL), "case %d threads %d: reference %s, fast %s", i, t,
                      er ? ctosa_error_message(er) : "ok", eg ? ctosa_error_message(eg) : "ok");
            if (er && eg && t == 1) {
                CHECK_MSG(strcmp(ctosa_error_message(er), ctosa_error_message(eg)) == 0,
                          "case %d: '%s' vs '%s'", i, ctosa_error_message(er), ctosa_error_message(eg));
            }
            failed_alike += er && eg;
            if (!er && !eg) {
                CHECK_MSG(memcmp(ref, got, n_out * sizeof(int32_t)) == 0, "case %d threads %d differ", i, t);
                compared++;
            }
            ctosa_error_free(eg);
        }
        ctosa_error_free(er);
    }
    printf("int32 REDUCE_SUM: %d runs compared, %d failed alike\n", compared, failed_alike);
    CHECK(compared >= 30);
    CHECK(failed_alike > 0);
}

/* ------------------------------------------- int8 depthwise geometries */

typedef struct dw_case {
    int32_t N, H, W, C, KH, KW, sy, sx, dy, dx, pad[4];
    int8_t izp, wzp, ozp;
    int8_t wlo, whi;   /* weight range: w - wzp outside [-128, 127] takes the fp32 path */
    int32_t bias_base; /* near INT32_MAX: the epilogue's REQUIRE (overflow) fails */
    bool rescale, dbl;
    int shift_lo;
} dw_case;

/* x int8 [N,H,W,C] -> DEPTHWISE_CONV2D KH x KW (int32) [-> RESCALE -> int8]
 * -> y; out gets y's bytes. */
static ctosa_error *run_dw(const dw_case *c, int threads, void *out, size_t bytes) {
    static int8_t x[2 * 14 * 14 * 80], w[7 * 7 * 80];
    static int32_t bias[80], mult[80];
    static int8_t shift[80];
    int32_t OH = (c->H - 1 + c->pad[0] + c->pad[1] - (c->KH - 1) * c->dy) / c->sy + 1;
    int32_t OW = (c->W - 1 + c->pad[2] + c->pad[3] - (c->KW - 1) * c->dx) / c->sx + 1;
    rq_rng = (uint32_t)(c->H * 131 + c->W * 17 + c->C * 7 + c->KH * 3 + c->KW);
    for (int32_t i = 0; i < c->N * c->H * c->W * c->C; i++) x[i] = (int8_t)rq_rand(-128, 127);
    for (int32_t i = 0; i < c->KH * c->KW * c->C; i++) w[i] = (int8_t)rq_rand(c->wlo, c->whi);
    for (int32_t i = 0; i < c->C; i++) {
        bias[i] = c->bias_base + rq_rand(-30000, 30000);
        mult[i] = rq_rand(1 << 30, 0x7fffffff);
        shift[i] = (int8_t)rq_rand(c->shift_lo, 40);
    }
    gb q;
    gstart(&q);
    int32_t xs[4] = {c->N, c->H, c->W, c->C}, ws[4] = {c->KH, c->KW, c->C, 1}, bs[1] = {c->C}, one[1] = {1};
    int32_t ys[4] = {c->N, OH, OW, c->C}, st[2] = {c->sy, c->sx}, dil[2] = {c->dy, c->dx}, pad[4];
    memcpy(pad, c->pad, sizeof pad);
    int32_t zero32 = 0;
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", CTOSA_DTYPE_INT8, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *wt = gconst(&q, CTOSA_DTYPE_INT8, 4, ws, w, (size_t)(c->KH * c->KW * c->C), false);
    const char *bt = gconst(&q, CTOSA_DTYPE_INT32, 1, bs, bias, (size_t)c->C * 4, false);
    const char *zi = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->izp, 1, false);
    const char *zw = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->wzp, 1, false);
    const char *acc = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys), *y = acc;
    ctosa_attr a = conv_attr(pad, st, dil, CTOSA_DTYPE_INT32);
    const char *in[5] = {"x", wt, bt, zi, zw};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_DEPTHWISE_CONV2D, 5, in, 1, &acc, &a, NULL);
    if (c->rescale) {
        int32_t cs[1] = {c->C};
        const char *rin[5] = {acc, gconst(&q, CTOSA_DTYPE_INT32, 1, cs, mult, (size_t)c->C * 4, false),
                              gconst(&q, CTOSA_DTYPE_INT8, 1, cs, shift, (size_t)c->C, false),
                              gconst(&q, CTOSA_DTYPE_INT32, 1, one, &zero32, 4, false),
                              gconst(&q, CTOSA_DTYPE_INT8, 1, one, &c->ozp, 1, false)};
        y = gtensor(&q, CTOSA_DTYPE_INT8, 4, ys);
        ctosa_attr r = {0};
        r.scale32 = true;
        r.rounding_mode = c->dbl ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE;
        r.per_channel = true;
        if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_RESCALE, 5, rin, 1, &y, &r, NULL);
    }
    int64_t xs64[4] = {c->N, c->H, c->W, c->C};
    gin xi = {"x", CTOSA_DTYPE_INT8, 4, xs64, x, (size_t)(c->N * c->H * c->W * c->C)};
    size_t n = (size_t)(c->N * OH * OW * c->C) * (c->rescale ? 1 : 4);
    if (n > bytes) return ctosa_error_new(CTOSA_ERR_INVALID, "test output buffer too small");
    return grun(&q, threads, use_reference, 1, &xi, 2, y, out, n);
}

/* The int8 depthwise kernels (VPDPBUSD on prepared rows, the fp32 one on
 * widened bytes) against the plain loops over kernel sizes 1x1 to 7x7,
 * strides, dilations, uneven pads, batches, channel tails, extreme zero
 * points, weights that do or do not fit a signed byte after their zero
 * point, with and without a fused RESCALE (shifts from 32, where the
 * single-round store needs no range check, and small ones whose REQUIRE
 * fails), and biases whose sums overflow int32 (the epilogue's REQUIRE):
 * the same bytes, or the same error. */
static void test_depthwise_int8(void) {
    static const int levels[] = {KG_Q8_AVX512VNNI, KG_Q8_AVXVNNI, KG_Q8_NONE};
    static int32_t ref[2 * 14 * 14 * 80], got[2 * 14 * 14 * 80];
    static const int32_t cs[] = {5, 16, 20, 48, 64, 80}; /* 64 and up: VBMI blocks */
    static const int8_t zps[] = {-128, 127, 0, 3};
    int compared = 0, failed_alike = 0;
    for (int i = 0; i < 60; i++) {
        rq_rng = (uint32_t)i * 2246822519u + 7;
        dw_case c = {.N = rq_rand(1, 2),
                     .H = rq_rand(1, 14),
                     .W = rq_rand(1, 14),
                     .C = cs[rq_rand(0, 5)],
                     .KH = rq_rand(1, 7),
                     .KW = rq_rand(1, 7),
                     .sy = rq_rand(1, 2),
                     .sx = rq_rand(1, 3),
                     .dy = rq_rand(1, 2),
                     .dx = rq_rand(1, 2),
                     .izp = zps[rq_rand(0, 3)],
                     .wzp = i % 5 == 4 ? (int8_t)rq_rand(-60, 60) : 0,
                     .wlo = -128,
                     .whi = 127,
                     .rescale = i % 2 == 1,
                     .dbl = i % 8 == 5,
                     .shift_lo = i % 12 == 7 ? 8 : 32};
        c.ozp = (int8_t)rq_rand(-128, 127);
        if (i % 10 == 9) c.wlo = -60, c.whi = 60; /* a zero point the weights still fit around */
        if (i % 15 == 14) c.bias_base = INT32_MAX - (1 << 23);
        /* pads top / left up to the kernel's extent, bottom / right the
         * smallest that make (size - 1 + pads - extent) a multiple of the
         * stride */
        int32_t eh = (c.KH - 1) * c.dy, ew = (c.KW - 1) * c.dx;
        c.pad[0] = rq_rand(0, eh);
        c.pad[2] = rq_rand(0, ew);
        for (c.pad[1] = 0; c.H - 1 + c.pad[0] + c.pad[1] < eh || (c.H - 1 + c.pad[0] + c.pad[1] - eh) % c.sy;)
            c.pad[1]++;
        for (c.pad[3] = 0; c.W - 1 + c.pad[2] + c.pad[3] < ew || (c.W - 1 + c.pad[2] + c.pad[3] - ew) % c.sx;)
            c.pad[3]++;
        use_reference = true;
        memset(ref, 0x5a, sizeof ref);
        ctosa_error *er = run_dw(&c, 1, ref, sizeof ref);
        use_reference = false;
        for (int l = 0; l < 3; l++) {
            kg_q8_limit(levels[l]);
            if (kg_q8_isa() != levels[l]) continue;
            for (int threads = 1; threads <= 2; threads++) {
                memset(got, 0x5a, sizeof got);
                ctosa_error *eg = run_dw(&c, threads, got, sizeof got);
                CHECK_MSG((er == NULL) == (eg == NULL), "dw case %d isa %d threads %d: reference %s, fast %s",
                          i, levels[l], threads, er ? ctosa_error_message(er) : "ok",
                          eg ? ctosa_error_message(eg) : "ok");
                if (er && eg) {
                    CHECK_MSG(strcmp(ctosa_error_message(er), ctosa_error_message(eg)) == 0,
                              "dw case %d: '%s' vs '%s'", i, ctosa_error_message(er),
                              ctosa_error_message(eg));
                    failed_alike++;
                } else if (!er && !eg) {
                    CHECK_MSG(memcmp(ref, got, sizeof ref) == 0,
                              "dw case %d isa %d threads %d: outputs differ", i, levels[l], threads);
                    compared++;
                }
                ctosa_error_free(eg);
            }
        }
        ctosa_error_free(er);
    }
    kg_q8_limit(-1);
    printf("int8 depthwise: %d runs compared, %d failed alike\n", compared, failed_alike);
    CHECK(compared >= 60 * 2 * 3 / 4);
    CHECK(failed_alike > 0);
}

/* The TRANSPOSE to NHWC before an int8 CONV2D (offered to the
 * convolution at plan time): with 3 channels the engine's padded copy
 * reads the NCHW tensor, with 8 the TRANSPOSE runs inside the
 * convolution, with a weight zero point that leaves int8 the engine
 * declines after the NCHW read was planned (the TRANSPOSE runs then), and
 * an exposed transposed tensor is not fused; every instruction set, 1 and
 * 2 threads, the plain loops' values (and, exposed, the TRANSPOSE's). */
static ctosa_error *run_tc(int32_t C, int32_t H, int32_t W, int32_t OC, int32_t k, int32_t s, int8_t izp,
                           int8_t wzp, bool expose, int threads, int32_t *out, int8_t *tout) {
    static int8_t x[3 * 40 * 40 * 8], w[24 * 3 * 3 * 8];
    static int32_t bias[24];
    int32_t pd = k / 2, OH = (H + 2 * pd - k) / s + 1, OW = (W + 2 * pd - k) / s + 1;
    rq_rng = (uint32_t)(C * 7 + H * 131 + W);
    for (int32_t i = 0; i < C * H * W; i++) x[i] = (int8_t)rq_rand(-128, 127);
    for (int32_t i = 0; i < OC * k * k * C; i++) w[i] = (int8_t)rq_rand(-128, 127);
    for (int32_t i = 0; i < OC; i++) bias[i] = rq_rand(-30000, 30000);
    gb q;
    gstart(&q);
    int32_t xs[4] = {1, C, H, W}, ts[4] = {1, H, W, C}, ws[4] = {OC, k, k, C}, bs[1] = {OC}, one[1] = {1};
    int32_t ys[4] = {1, OH, OW, OC}, pad[4] = {pd, pd, pd, pd}, st[2] = {s, s}, dil[2] = {1, 1};
    static const int32_t perm[4] = {0, 2, 3, 1};
    if (!q.e) q.e = ctosa_block_add_tensor(q.g, q.b, "x", CTOSA_DTYPE_INT8, 4, xs, NULL);
    if (!q.e) q.e = ctosa_block_add_input(q.g, q.b, "x");
    const char *t = gtensor(&q, CTOSA_DTYPE_INT8, 4, ts), *xn = "x";
    ctosa_attr ta = {0};
    ta.perms = (ctosa_i32s){perm, 4};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_TRANSPOSE, 1, &xn, 1, &t, &ta, NULL);
    const char *wt = gconst(&q, CTOSA_DTYPE_INT8, 4, ws, w, (size_t)(OC * k * k * C), false);
    const char *bt = gconst(&q, CTOSA_DTYPE_INT32, 1, bs, bias, (size_t)OC * 4, false);
    const char *zi = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &izp, 1, false);
    const char *zw = gconst(&q, CTOSA_DTYPE_INT8, 1, one, &wzp, 1, false);
    const char *y = gtensor(&q, CTOSA_DTYPE_INT32, 4, ys);
    ctosa_attr a = conv_attr(pad, st, dil, CTOSA_DTYPE_INT32);
    const char *in[5] = {t, wt, bt, zi, zw};
    if (!q.e) q.e = ctosa_block_add_op(q.g, q.b, CTOSA_OP_CONV2D, 5, in, 1, &y, &a, NULL);
    if (expose && !q.e) q.e = ctosa_block_add_output(q.g, q.b, t);
    int64_t xs64[4] = {1, C, H, W};
    gin xi = {"x", CTOSA_DTYPE_INT8, 4, xs64, x, (size_t)(C * H * W)};
    if (!expose) return grun(&q, threads, use_reference, 1, &xi, 2, y, out, (size_t)(OH * OW * OC) * 4);
    /* both outputs: grun reads one, so run the graph by hand */
    ctosa_interp *it = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.reference = use_reference;
    ctosa_error *e = q.e;
    if (!e) e = ctosa_block_add_output(q.g, q.b, y);
    if (!e) e = ctosa_interp_create(q.g, &opt, &it);
    if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_INT8, 4, xs64, x, (size_t)(C * H * W));
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor ot;
    if (!e && !(e = ctosa_interp_get_output(it, y, &ot))) memcpy(out, ot.data, (size_t)(OH * OW * OC) * 4);
    if (!e && !(e = ctosa_interp_get_output(it, t, &ot))) memcpy(tout, ot.data, (size_t)(C * H * W));
    ctosa_interp_free(it);
    ctosa_graph_free(q.g);
    return e;
}

static void test_transpose_fusion(void) {
    static const int levels[] = {KG_Q8_AVX512VNNI, KG_Q8_AVXVNNI, KG_Q8_NONE};
    static int32_t ref[40 * 40 * 24], got[40 * 40 * 24];
    static int8_t tref[3 * 40 * 40 * 8], tgot[3 * 40 * 40 * 8];
    int compared = 0;
    for (int i = 0; i < 12; i++) {
        int32_t C = i % 3 == 1 ? 8 : 3, H = 7 + 11 * (i % 4), W = 9 + 5 * (i % 5), OC = i % 2 ? 24 : 16;
        int32_t k = i % 4 == 3 ? 1 : 3, s = 1 + i % 2;
        if (s == 2) H |= 1, W |= 1;
        int8_t izp = (int8_t)(i * 37 - 100), wzp = i % 6 == 5 ? 100 : 0;
        bool expose = i % 6 == 3;
        size_t n = (size_t)(((H + 2 * (k / 2) - k) / s + 1) * ((W + 2 * (k / 2) - k) / s + 1) * OC) * 4;
        use_reference = true;
        ctosa_error *er = run_tc(C, H, W, OC, k, s, izp, wzp, expose, 1, ref, tref);
        use_reference = false;
        CHECK_MSG(er == NULL, "case %d: %s", i, er ? ctosa_error_message(er) : "");
        ctosa_error_free(er);
        for (int l = 0; l < 3; l++) {
            kg_q8_limit(levels[l]);
            if (kg_q8_isa() != levels[l]) continue;
            for (int threads = 1; threads <= 2; threads++) {
                memset(got, 0x5a, sizeof got);
                memset(tgot, 0x5a, sizeof tgot);
                ctosa_error *eg = run_tc(C, H, W, OC, k, s, izp, wzp, expose, threads, got, tgot);
                CHECK_MSG(eg == NULL, "case %d isa %d threads %d: %s", i, levels[l], threads,
                          eg ? ctosa_error_message(eg) : "");
                CHECK_MSG(!eg && memcmp(ref, got, n) == 0, "case %d isa %d threads %d: outputs differ", i,
                          levels[l], threads);
                if (expose)
                    CHECK_MSG(memcmp(tref, tgot, (size_t)(C * H * W)) == 0, "case %d: TRANSPOSE differs", i);
                compared += !eg;
                ctosa_error_free(eg);
            }
        }
    }
    kg_q8_limit(-1);
    printf("TRANSPOSE before int8 CONV2D: %d runs compared\n", compared);
    CHECK(compared >= 24);
}

int main(void) {
    fill();
    RUN(test_clamp_fusion_bits);
    RUN(test_bad_clamp_not_fused);
    RUN(test_cached_weights_int);
    RUN(test_cached_matmul);
    RUN(test_cached_matmul_int8);
    RUN(test_matmul_int8_engine);
    RUN(test_reference_option);
    RUN(test_rescale_fusion);
    RUN(test_residual_fusion);
    RUN(test_reduce_sum_int32);
    RUN(test_depthwise_int8);
    RUN(test_transpose_fusion);
    return th_finish();
}
