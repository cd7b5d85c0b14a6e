/* test_kernels_diff.c - differential test of the interpreter kernels that
 * have fast paths (CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D,
 * MATMUL, RESCALE, SIGMOID, SELECT, int32 ADD / SUB, fp32 -> int8/16/32 and int32 -> int8/16 CAST): randomized shapes and attributes over the legal parameter space
 * (ranks and batch, strides, dilations, asymmetric and large pads, out_pad
 * of both signs, channel counts around the vector widths, every accepted
 * dtype combination, zero points, local_bound), each case run on the fast
 * paths and on the plain reference loops (interp_op.reference), which must
 * agree: integers exactly (including a REQUIRE failure), floats within the
 * fp32 summation error of the two orders. The pooling kernels (one plain
 * loop each) are checked the same way against loops written here from the
 * pseudocode. The convolution geometry follows the conformance generator's
 * picks: dilations up to 16 with small kernels, pads up to twice the
 * dilated kernel on one side only, strides up to 8.
 *
 * A few hundred cases per operator by default (a second or two, also under
 * ASan); CTOSA_LONG_TESTS=1 runs 5000 per operator. A failure prints the
 * case's parameters and seed. */
#include <math.h>

#include "harness.h"
#include "kernels_testutil.h"
#include "interp/interp_runtime.h"
#include "interp/kernels_gemm.h"
#include "util/floatfmt.h"

static int g_cases;               /* per operator */
static int g_compared, g_refused; /* of the current operator */

static bool long_tests(void) {
    const char *env = getenv("CTOSA_LONG_TESTS");
    return env && (strcmp(env, "1") == 0 || strcmp(env, "ON") == 0);
}

static int64_t ri(int64_t lo, int64_t hi) { return kt_randi(lo, hi); }
static bool coin(int pct) { return (int64_t)(kt_rand() % 100) < pct; }

static bool is_f(ctosa_dtype t) {
    return t == CTOSA_DTYPE_FP32 || t == CTOSA_DTYPE_FP16 || t == CTOSA_DTYPE_BF16 ||
           t == CTOSA_DTYPE_FP8E4M3 || t == CTOSA_DTYPE_FP8E5M2;
}

/* Random values of t: floats in [-1, 1] rounded to t, integers over the
 * whole range (int4 -8..7) or a narrow band (so int32 sums stay valid). */
static void fill(itensor *x, bool narrow) {
    int64_t lo, hi;
    if (is_f(x->dtype)) {
        for (uint64_t i = 0; i < x->count; i++) ((float *)x->data)[i] = ff_round_to(x->dtype, kt_randf());
        return;
    }
    im_range_s(x->dtype, &lo, &hi);
    if (x->dtype == CTOSA_DTYPE_INT4) lo = -8, hi = 7;
    if (narrow || x->dtype == CTOSA_DTYPE_INT32 || x->dtype == CTOSA_DTYPE_INT48) lo = -1000, hi = 1000;
    for (uint64_t i = 0; i < x->count; i++) im_store_i(x->dtype, x->data, i, ri(lo, hi));
}

/* A copy of x's shape and dtype, zero data. */
static itensor *like(const itensor *x) { return kt_new(x->dtype, x->rank, x->shape); }

/* Compares the fast output a with the reference output b. bound[i]: the
 * tolerance of element i for floats (NULL: exact). */
static bool same_out(const itensor *a, const itensor *b, double tol_scale, const char *what, uint64_t seed) {
    for (uint64_t i = 0; i < a->count; i++) {
        if (is_f(a->dtype)) {
            float x = ((float *)a->data)[i], y = ((float *)b->data)[i];
            if ((isnan(x) && isnan(y)) || x == y) continue; /* x == y: infinities too */
            /* tol_scale: the largest |partial sum| the output could see */
            double ulp = a->dtype == CTOSA_DTYPE_FP32   ? 0x1p-22
                         : a->dtype == CTOSA_DTYPE_FP16 ? 0x1p-9
                         : a->dtype == CTOSA_DTYPE_BF16 ? 0x1p-6
                                                        : 0x1p-2;
            if (!(fabs((double)x - y) <= tol_scale * ulp + 1e-30)) {
                CHECK_MSG(0, "%s (seed %llu): element %llu fast %.9g reference %.9g", what,
                          (unsigned long long)seed, (unsigned long long)i, x, y);
                return false;
            }
        } else if (im_load_i(a->dtype, a->data, i) != im_load_i(b->dtype, b->data, i)) {
            CHECK_MSG(0, "%s (seed %llu): element %llu fast %lld reference %lld", what,
                      (unsigned long long)seed, (unsigned long long)i,
                      (long long)im_load_i(a->dtype, a->data, i), (long long)im_load_i(b->dtype, b->data, i));
            return false;
        }
    }
    return true;
}

/* The second pass of the tests (main): a two-thread pool whose split
 * paths every kernel takes (interp_par_force), checked bit for bit against
 * the same fast kernel on one thread. */
static interp_ctx *g_pool;

/* With g_pool: runs the fast kernel on one thread into out and on the pool
 * into a copy, which must hold the same bits (and the same status); a
 * depthwise case sometimes with a fused CLAMP or SiLU (post), applied by
 * the split path per channel part. Returns the one-thread status; *posted
 * tells that out holds a post the reference loops do not apply. */
static ctosa_error *run_fast(interp_kernel_fn fn, ctosa_op_kind kind, const ctosa_attr *a, uint32_t n_in,
                             itensor **in, itensor *out, const char *what, uint64_t seed, bool *posted) {
    *posted = false;
    if (!g_pool) return kt_run(fn, kind, a, n_in, in, 1, &out);
    interp_post post = {-0.5f, 0.75f, false, coin(50)};
    if (kind == CTOSA_OP_DEPTHWISE_CONV2D && out->dtype == CTOSA_DTYPE_FP32 && coin(40)) {
        kt_post = &post;
        *posted = true;
    }
    itensor *par = like(out);
    kt_ctx = NULL;
    ctosa_error *e1 = kt_run(fn, kind, a, n_in, in, 1, &out);
    kt_ctx = g_pool;
    ctosa_error *e2 = kt_run(fn, kind, a, n_in, in, 1, &par);
    kt_ctx = NULL;
    kt_post = NULL;
    CHECK_MSG((e1 == NULL) == (e2 == NULL), "%s (seed %llu): one thread %s, two threads %s", what,
              (unsigned long long)seed, e1 ? ctosa_error_message(e1) : "ok",
              e2 ? ctosa_error_message(e2) : "ok");
    if (!e1 && !e2 && memcmp(out->data, par->data, out->count * kt_esz(out->dtype)) != 0) {
        uint64_t i = 0;
        while (i < out->count && !memcmp((char *)out->data + i * kt_esz(out->dtype),
                                         (char *)par->data + i * kt_esz(out->dtype), kt_esz(out->dtype)))
            i++;
        CHECK_MSG(0, "%s (seed %llu): two threads differ from one at element %llu", what,
                  (unsigned long long)seed, (unsigned long long)i);
    }
    ctosa_error_free(e2);
    return e1;
}

/* Runs fn twice (fast, reference) on the same inputs; outputs and error
 * status must agree. Returns false when a case was invalid for both. */
static bool diff_run(interp_kernel_fn fn, ctosa_op_kind kind, const ctosa_attr *a, uint32_t n_in,
                     itensor **in, itensor *out, double tol_scale, const char *what, uint64_t seed) {
    itensor *ref = like(out);
    kt_reference = false;
    bool posted;
    ctosa_error *e1 = run_fast(fn, kind, a, n_in, in, out, what, seed, &posted);
    kt_reference = true;
    ctosa_error *e2 = kt_run(fn, kind, a, n_in, in, 1, &ref);
    kt_reference = false;
    bool ok = true;
    if ((e1 == NULL) != (e2 == NULL)) {
        CHECK_MSG(0, "%s (seed %llu): fast %s, reference %s", what, (unsigned long long)seed,
                  e1 ? ctosa_error_message(e1) : "ok", e2 ? ctosa_error_message(e2) : "ok");
        ok = false;
    } else if (!e1) {
        if (!posted) same_out(out, ref, tol_scale, what, seed);
        g_compared++;
    } else {
        ok = false; /* both refused (a REQUIRE on random data): consistent */
        g_refused++;
    }
    ctosa_error_free(e1);
    ctosa_error_free(e2);
    return ok;
}

/* ------------------------------------------------------ convolutions */

/* One spatial axis: input size, kernel, stride, dilation and pads such
 * that (in - 1 + pa + pb - (k - 1) * d) is a non-negative multiple of s. */
typedef struct axis {
    int64_t in, k, s, d, pa, pb, out;
} axis;

static axis pick_axis(bool big) {
    axis x;
    for (;;) {
        x.k = coin(70) ? ri(1, 3) : ri(1, big ? 8 : 5);
        x.d = coin(50) ? 1 : coin(60) ? ri(2, 4) : ri(5, 16);
        x.s = coin(50) ? 1 : coin(70) ? ri(2, 3) : ri(4, 8);
        int64_t span = (x.k - 1) * x.d + 1;
        x.in = ri(1, big ? 24 : 12);
        /* pads: none, small, or large on one side only (conformance picks) */
        int r = (int)ri(0, 3);
        x.pa = r == 0 ? 0 : r == 1 ? ri(0, x.k) : r == 2 ? ri(0, 2 * span) : 0;
        int64_t num = x.in - 1 + x.pa - (x.k - 1) * x.d;
        int64_t pb = num >= 0 ? 0 : -num;
        while ((num + pb) % x.s) pb++;
        if (r == 3 || coin(30)) pb += x.s * ri(0, 2); /* pad at the end too */
        x.pb = pb;
        x.out = (num + pb) / x.s + 1;
        if (x.out >= 1 && x.out <= 24) return x;
    }
}

/* Accepted (input, weight, accumulator, output) combinations. */
typedef struct ctypes {
    ctosa_dtype in, w, acc, out;
} ctypes;

static ctypes pick_types(bool int4_ok) {
    static const ctypes all[] = {
        {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32},
        {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT4, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32},
        {CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT48},
        {CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
        {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16},
        {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP16},
        {CTOSA_DTYPE_BF16, CTOSA_DTYPE_BF16, CTOSA_DTYPE_FP32, CTOSA_DTYPE_BF16},
        {CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16},
        {CTOSA_DTYPE_FP8E5M2, CTOSA_DTYPE_FP8E5M2, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16},
    };
    /* fp32 and int8 (the fast paths) most often */
    for (;;) {
        int k = coin(35) ? 3 : coin(40) ? 0 : (int)ri(0, CTOSA_ARRAY_LEN(all) - 1);
        if (!int4_ok && all[k].w == CTOSA_DTYPE_INT4) continue;
        return all[k];
    }
}

static int64_t pick_channels(void) {
    int r = (int)ri(0, 4);
    return r == 0 ? ri(1, 4) : r == 1 ? 3 : r == 2 ? ri(14, 18) : r == 3 ? ri(30, 40) : ri(1, 20);
}

/* The zero point tensor of type t: random for int8, else 0. */
static itensor *zp(ctosa_dtype t, bool random) {
    itensor *z = kt_new(t, 1, KT_DIMS(1));
    if (t == CTOSA_DTYPE_INT8 && random) ((int8_t *)z->data)[0] = (int8_t)ri(-128, 127);
    return z;
}

/* Largest |sum of products| possible for K taps of |x| <= 1 floats. */
static double f_scale(int64_t K) { return (double)(K + 2) * 1.0; }

enum { OP_CONV2D, OP_CONV3D, OP_DEPTHWISE, OP_TRANSPOSE };

static void conv_case(int op, uint64_t seed) {
    kt_rng = seed;
    bool depth = op == OP_CONV3D, dw = op == OP_DEPTHWISE, tr = op == OP_TRANSPOSE;
    ctypes ty = pick_types(!dw || true);
    int64_t N = coin(80) ? 1 : 2;
    axis ad = depth ? pick_axis(false) : (axis){1, 1, 1, 1, 0, 0, 1};
    axis ay = pick_axis(true), ax = pick_axis(true);
    int64_t IC = pick_channels(), M = dw ? (coin(70) ? 1 : ri(2, 3)) : 1;
    int64_t OC = dw ? IC * M : pick_channels();
    if (dw && coin(40)) { /* the register-blocked 3x3 paths */
        ay.k = ax.k = 3;
        ay = (axis){ri(3, 14), 3, coin(60) ? 1 : 2, coin(70) ? 1 : 2, ri(0, 2), 0, 0};
        ax = (axis){ri(3, 14), 3, coin(60) ? 1 : 2, coin(70) ? 1 : 2, ri(0, 2), 0, 0};
        axis *v[2] = {&ay, &ax};
        for (int i = 0; i < 2; i++) {
            int64_t num = v[i]->in - 1 + v[i]->pa - 2 * v[i]->d, pb = num >= 0 ? 0 : -num;
            while ((num + pb) % v[i]->s) pb++;
            v[i]->pb = pb;
            v[i]->out = (num + pb) / v[i]->s + 1;
        }
        IC = coin(50) ? 16 * ri(1, 2) : ri(16, 40);
        OC = IC * M;
    }
    if (op == OP_CONV2D && coin(15)) { /* a network's stem: few channels, a large kernel */
        IC = ri(1, 4);
        int64_t k = ri(4, 11);
        ay = (axis){ri(k, k + 14), k, ri(1, 4), 1, ri(0, 3), 0, 0};
        ax = (axis){ri(k, k + 14), k, ri(1, 4), 1, ri(0, 3), 0, 0};
        axis *v[2] = {&ay, &ax};
        for (int i = 0; i < 2; i++) {
            int64_t num = v[i]->in - 1 + v[i]->pa - (k - 1), pb = 0;
            while ((num + pb) % v[i]->s) pb++;
            v[i]->pb = pb;
            v[i]->out = (num + pb) / v[i]->s + 1;
        }
    }
    int64_t KD = ad.k, KH = ay.k, KW = ax.k;
    int64_t OD = ad.out, OH = ay.out, OW = ax.out;
    int32_t opad[4];
    if (tr) {
        /* out_pad in (-K, 2K], any stride; no dilation */
        ay.in = ri(1, 10), ax.in = ri(1, 10);
        ay.s = ri(1, 4), ax.s = ri(1, 4);
        opad[0] = (int32_t)ri(1 - KH, 2 * KH), opad[1] = (int32_t)ri(1 - KH, 2 * KH);
        opad[2] = (int32_t)ri(1 - KW, 2 * KW), opad[3] = (int32_t)ri(1 - KW, 2 * KW);
        OH = (ay.in - 1) * ay.s + opad[0] + opad[1] + KH;
        OW = (ax.in - 1) * ax.s + opad[2] + opad[3] + KW;
        if (OH < 1 || OW < 1) return;
    }
    uint32_t rank = depth ? 5 : 4;
    itensor *in, *w, *out;
    if (depth) {
        in = kt_new(ty.in, 5, KT_DIMS(N, ad.in, ay.in, ax.in, IC));
        w = kt_new(ty.w, 5, KT_DIMS(OC, KD, KH, KW, IC));
        out = kt_new(ty.out, 5, KT_DIMS(N, OD, OH, OW, OC));
    } else {
        in = kt_new(ty.in, 4, KT_DIMS(N, ay.in, ax.in, IC));
        w = dw ? kt_new(ty.w, 4, KT_DIMS(KH, KW, IC, M)) : kt_new(ty.w, 4, KT_DIMS(OC, KH, KW, IC));
        out = kt_new(ty.out, 4, KT_DIMS(N, OH, OW, OC));
    }
    (void)rank;
    itensor *bias = kt_new(ty.out, 1, KT_DIMS(coin(15) ? 1 : OC));
    fill(in, false);
    fill(w, false);
    fill(bias, true);
    bool izp_r = ty.in == CTOSA_DTYPE_INT8 && coin(70), wzp_r = ty.w == CTOSA_DTYPE_INT8 && coin(50);
    itensor *ins[5] = {in, w, bias, zp(ty.in, izp_r), zp(ty.w, wzp_r)};
    ctosa_attr a = {0};
    a.acc_type = ty.acc;
    a.local_bound = coin(50);
    int32_t pad[6], st[3], dil[3];
    if (depth) {
        int32_t p6[6] = {(int32_t)ad.pa, (int32_t)ad.pb, (int32_t)ay.pa,
                         (int32_t)ay.pb, (int32_t)ax.pa, (int32_t)ax.pb};
        int32_t s3[3] = {(int32_t)ad.s, (int32_t)ay.s, (int32_t)ax.s},
                d3[3] = {(int32_t)ad.d, (int32_t)ay.d, (int32_t)ax.d};
        memcpy(pad, p6, sizeof p6);
        memcpy(st, s3, sizeof s3);
        memcpy(dil, d3, sizeof d3);
        a.pad = (ctosa_i32s){pad, 6};
        a.stride = (ctosa_i32s){st, 3};
        a.dilation = (ctosa_i32s){dil, 3};
    } else if (tr) {
        st[0] = (int32_t)ay.s, st[1] = (int32_t)ax.s;
        a.out_pad = (ctosa_i32s){opad, 4};
        a.stride = (ctosa_i32s){st, 2};
    } else {
        int32_t p4[4] = {(int32_t)ay.pa, (int32_t)ay.pb, (int32_t)ax.pa, (int32_t)ax.pb};
        memcpy(pad, p4, sizeof p4);
        st[0] = (int32_t)ay.s, st[1] = (int32_t)ax.s;
        dil[0] = (int32_t)ay.d, dil[1] = (int32_t)ax.d;
        a.pad = (ctosa_i32s){pad, 4};
        a.stride = (ctosa_i32s){st, 2};
        a.dilation = (ctosa_i32s){dil, 2};
    }
    static const char *names[] = {"CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D"};
    static const interp_kernel_fn fns[] = {interp_k_CONV2D, interp_k_CONV3D, interp_k_DEPTHWISE_CONV2D,
                                           interp_k_TRANSPOSE_CONV2D};
    static const ctosa_op_kind kinds[] = {CTOSA_OP_CONV2D, CTOSA_OP_CONV3D, CTOSA_OP_DEPTHWISE_CONV2D,
                                          CTOSA_OP_TRANSPOSE_CONV2D};
    char what[400];
    snprintf(what, sizeof what,
             "%s %s/%s acc %s N%lld in[%lld,%lld,%lld]x%lld k[%lld,%lld,%lld] s[%lld,%lld,%lld] "
             "d[%lld,%lld,%lld] pad[%lld,%lld,%lld,%lld,%lld,%lld] OC %lld M %lld",
             names[op], ctosa_dtype_short(ty.in), ctosa_dtype_short(ty.w), ctosa_dtype_short(ty.acc),
             (long long)N, (long long)ad.in, (long long)ay.in, (long long)ax.in, (long long)IC, (long long)KD,
             (long long)KH, (long long)KW, (long long)ad.s, (long long)ay.s, (long long)ax.s, (long long)ad.d,
             (long long)ay.d, (long long)ax.d, (long long)(tr ? opad[0] : ad.pa),
             (long long)(tr ? opad[1] : ad.pb), (long long)(tr ? opad[2] : ay.pa),
             (long long)(tr ? opad[3] : ay.pb), (long long)ax.pa, (long long)ax.pb, (long long)OC,
             (long long)M);
    int64_t K = KD * KH * KW * (dw ? 1 : IC);
    diff_run(fns[op], kinds[op], &a, 5, ins, out, f_scale(K), what, seed);
    kt_free_all();
}

/* ------------------------------------------------------------ MATMUL */

static void matmul_case(uint64_t seed) {
    kt_rng = seed;
    static const ctypes all[] = {
        {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32},
        {CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT48},
        {CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
        {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16},
        {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
        {CTOSA_DTYPE_BF16, CTOSA_DTYPE_BF16, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
        {CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16},
        {CTOSA_DTYPE_FP8E5M2, CTOSA_DTYPE_FP8E5M2, CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
    };
    ctypes ty = all[coin(40) ? 2 : coin(40) ? 0 : (int)ri(0, CTOSA_ARRAY_LEN(all) - 1)];
    int64_t N = ri(1, 3), H = coin(30) ? ri(1, 4) : ri(1, 40), C = coin(20) ? ri(0, 3) : ri(1, 70),
            W = coin(30) ? ri(1, 4) : ri(1, 40);
    if (coin(15)) W = ri(60, 200);                    /* whole 64-column chunks of the few-row (GEMV) path */
    if (ty.in == CTOSA_DTYPE_INT16 && C > 40) C = 40; /* int48 sums of int16 squares */
    itensor *A = kt_new(ty.in, 3, KT_DIMS(N, H, C)), *B = kt_new(ty.in, 3, KT_DIMS(N, C, W));
    itensor *out = kt_new(ty.out, 3, KT_DIMS(N, H, W));
    fill(A, false);
    fill(B, false);
    bool rz = ty.in == CTOSA_DTYPE_INT8;
    itensor *ins[4] = {A, B, zp(ty.in, rz && coin(60)), zp(ty.in, rz && coin(60))};
    char what[200];
    snprintf(what, sizeof what, "MATMUL %s -> %s N%lld H%lld C%lld W%lld", ctosa_dtype_short(ty.in),
             ctosa_dtype_short(ty.out), (long long)N, (long long)H, (long long)C, (long long)W);
    diff_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, ins, out, f_scale(C), what, seed);
    kt_free_all();
}

/* ------------------------------------------------------------- pools */

/* AVG_POOL2D / MAX_POOL2D against loops written here from the pseudocode. */
static void pool_case(bool avg, uint64_t seed) {
    kt_rng = seed;
    static const ctosa_dtype types[] = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, CTOSA_DTYPE_FP32,
                                        CTOSA_DTYPE_FP16, CTOSA_DTYPE_BF16};
    ctosa_dtype t = types[coin(40) ? 2 : (int)ri(0, 4)];
    ctosa_dtype acc = is_f(t) ? (t == CTOSA_DTYPE_FP16 && coin(50) ? CTOSA_DTYPE_FP16 : CTOSA_DTYPE_FP32)
                              : CTOSA_DTYPE_INT32;
    int64_t N = ri(1, 2), C = pick_channels(), k[2], s[2], p[4], in[2], o[2];
    for (int i = 0; i < 2; i++) {
        for (;;) {
            k[i] = coin(60) ? ri(1, 3) : ri(1, 9);
            s[i] = coin(50) ? 1 : ri(2, 8);
            in[i] = ri(1, 20);
            /* pads below the kernel size, often on one side only */
            p[2 * i] = coin(50) ? 0 : ri(0, k[i] - 1);
            int64_t num = in[i] + p[2 * i] - k[i], pb = num >= 0 ? 0 : -num;
            while ((num + pb) % s[i]) pb++;
            if (pb >= k[i]) continue;
            p[2 * i + 1] = pb;
            o[i] = (num + pb) / s[i] + 1;
            if (o[i] >= 1) break;
        }
    }
    itensor *x = kt_new(t, 4, KT_DIMS(N, in[0], in[1], C)), *y = kt_new(t, 4, KT_DIMS(N, o[0], o[1], C));
    fill(x, false);
    int64_t izp = 0, ozp = 0;
    if (t == CTOSA_DTYPE_INT8 && coin(60)) izp = ri(-128, 127), ozp = ri(-128, 127);
    itensor *zi = kt_scalar_i(is_f(t) ? CTOSA_DTYPE_INT8 : t, izp),
            *zo = kt_scalar_i(is_f(t) ? CTOSA_DTYPE_INT8 : t, ozp);
    if (is_f(t)) zi = kt_new(t, 1, KT_DIMS(1)), zo = kt_new(t, 1, KT_DIMS(1));
    int32_t kk[2] = {(int32_t)k[0], (int32_t)k[1]}, ss[2] = {(int32_t)s[0], (int32_t)s[1]};
    int32_t pp[4] = {(int32_t)p[0], (int32_t)p[1], (int32_t)p[2], (int32_t)p[3]};
    ctosa_attr a = {0};
    a.kernel = (ctosa_i32s){kk, 2};
    a.stride = (ctosa_i32s){ss, 2};
    a.pad = (ctosa_i32s){pp, 4};
    a.acc_type = acc;
    a.nan_mode = coin(50) ? CTOSA_NAN_IGNORE : CTOSA_NAN_PROPAGATE;
    itensor *ins[3] = {x, zi, zo};
    kt_ctx = g_pool;
    ctosa_error *e = avg ? kt_run(interp_k_AVG_POOL2D, CTOSA_OP_AVG_POOL2D, &a, 3, ins, 1, &y)
                         : kt_run(interp_k_MAX_POOL2D, CTOSA_OP_MAX_POOL2D, &a, 1, ins, 1, &y);
    kt_ctx = NULL;
    char what[300];
    snprintf(what, sizeof what,
             "%s %s acc %s N%lld in[%lld,%lld]x%lld k[%lld,%lld] s[%lld,%lld] pad[%lld,%lld,%lld,%lld]",
             avg ? "AVG_POOL2D" : "MAX_POOL2D", ctosa_dtype_short(t), ctosa_dtype_short(acc), (long long)N,
             (long long)in[0], (long long)in[1], (long long)C, (long long)k[0], (long long)k[1],
             (long long)s[0], (long long)s[1], (long long)p[0], (long long)p[1], (long long)p[2],
             (long long)p[3]);
    CHECK_MSG(!e, "%s (seed %llu): %s", what, (unsigned long long)seed, ctosa_error_message(e));
    ctosa_error_free(e);
    if (e) {
        kt_free_all();
        return;
    }
    g_compared++;
    int64_t lo, hi;
    im_range_s(t, &lo, &hi);
    bool bad = false;
    for (int64_t n = 0; n < N && !bad; n++)
        for (int64_t oy = 0; oy < o[0] && !bad; oy++)
            for (int64_t ox = 0; ox < o[1] && !bad; ox++)
                for (int64_t c = 0; c < C && !bad; c++) {
                    double facc = avg ? 0 : -INFINITY;
                    int64_t iacc = avg ? 0 : lo, count = 0;
                    for (int64_t ky = 0; ky < k[0]; ky++)
                        for (int64_t kx = 0; kx < k[1]; kx++) {
                            int64_t yy = oy * s[0] - p[0] + ky, xx = ox * s[1] - p[2] + kx;
                            if (yy < 0 || yy >= in[0] || xx < 0 || xx >= in[1]) continue;
                            size_t ii = (size_t)(((n * in[0] + yy) * in[1] + xx) * C + c);
                            count++;
                            if (is_f(t)) {
                                double v = ((float *)x->data)[ii];
                                facc = avg ? ff_round_to_double(acc, facc + v) : (v > facc ? v : facc);
                            } else {
                                int64_t v = im_load_i(t, x->data, ii);
                                iacc = avg ? iacc + v - izp : (v > iacc ? v : iacc);
                            }
                        }
                    size_t oi = (size_t)(((n * o[0] + oy) * o[1] + ox) * C + c);
                    double want, got;
                    if (is_f(t)) {
                        if (avg) facc = ff_round_to_double(acc, facc / (double)count);
                        want = ff_round_to_double(t, facc);
                        got = ((float *)y->data)[oi];
                    } else {
                        if (avg) {
                            int32_t mult;
                            int sh;
                            bool ok = true;
                            im_reciprocal_scale((uint32_t)count, &mult, &sh);
                            iacc = im_apply_scale_32((int32_t)iacc, mult, sh, false, &ok) + ozp;
                            iacc = iacc < lo ? lo : iacc > hi ? hi : iacc;
                        }
                        want = (double)iacc;
                        got = (double)im_load_i(t, y->data, oi);
                    }
                    if (want != got) {
                        CHECK_MSG(0, "%s (seed %llu): output %zu is %.9g, the plain loop gives %.9g", what,
                                  (unsigned long long)seed, oi, got, want);
                        bad = true;
                    }
                }
    kt_free_all();
}

/* ------------------------------------------------------------ RESCALE */

/* 8-bit inputs with one scale (the table path), rows of 16-channel
 * multiples (the 16-lane scale32 path) and other shapes of the operator;
 * unsigned 16-bit inputs; multipliers and shifts over their whole valid
 * range, so some cases break the apply_scale REQUIRE (both paths must
 * refuse them alike). */
static void rescale_case(uint64_t seed) {
    kt_rng = seed;
    static const ctosa_dtype tos[] = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT32};
    ctosa_dtype ti = coin(60) ? CTOSA_DTYPE_INT8 : coin(50) ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT32;
    ctosa_dtype to = tos[ri(0, 2)];
    ctosa_attr a = {0};
    a.scale32 = coin(70);
    a.rounding_mode = a.scale32 && coin(30) ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE;
    a.per_channel = coin(15);
    a.input_unsigned = ti != CTOSA_DTYPE_INT32 && to != CTOSA_DTYPE_INT32 && coin(40);
    a.output_unsigned = !a.input_unsigned && to == CTOSA_DTYPE_INT8 && ti != CTOSA_DTYPE_INT32 && coin(40);
    int64_t C = a.per_channel ? ri(1, 20) : ri(1, 40), R = ri(1, 200);
    if (coin(40)) C = 16 * ri(1, 3); /* the 16-lane path */
    if (coin(50)) R = ri(40, 300);   /* >= 1024 elements: the table path */
    itensor *in = kt_new(ti, 2, KT_DIMS(R, C)), *out = kt_new(to, 2, KT_DIMS(R, C));
    fill(in, false);
    int64_t nc = a.per_channel ? C : 1;
    itensor *mul = kt_new(a.scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16, 1, KT_DIMS(nc));
    itensor *sh = kt_new(CTOSA_DTYPE_INT8, 1, KT_DIMS(nc));
    for (int64_t c = 0; c < nc; c++) {
        int64_t sft = coin(70) ? ri(20, 40) : ri(2, 62);
        im_store_i(mul->dtype, mul->data, (size_t)c, a.scale32 ? ri(0, INT32_MAX) : ri(0, INT16_MAX));
        ((int8_t *)sh->data)[c] = (int8_t)sft;
    }
    int64_t izp = ti == CTOSA_DTYPE_INT8 && coin(60) ? ri(-128, 127) : 0;
    if (ti == CTOSA_DTYPE_INT16 && a.input_unsigned && coin(50)) izp = -32768; /* 32768 unsigned */
    int64_t ozp = to == CTOSA_DTYPE_INT8 && coin(60) ? ri(-128, 127) : 0;
    itensor *ins[5] = {in, mul, sh, kt_scalar_i(ti, izp), kt_scalar_i(to, ozp)};
    char what[200];
    snprintf(what, sizeof what,
             "RESCALE %s%s -> %s%s [%lld,%lld] scale32 %d round %d per_channel %d izp %lld ozp %lld",
             a.input_unsigned ? "u" : "", ctosa_dtype_short(ti), a.output_unsigned ? "u" : "",
             ctosa_dtype_short(to), (long long)R, (long long)C, a.scale32, (int)a.rounding_mode,
             a.per_channel, (long long)izp, (long long)ozp);
    diff_run(interp_k_RESCALE, CTOSA_OP_RESCALE, &a, 5, ins, out, 0, what, seed);
    kt_free_all();
}

/* ------------------------------------------- EXP, SIGMOID, TANH, ERF */

/* Distance in representable floats (subnormals count their own steps). */
static int64_t ulp_apart(float x, float y) {
    int32_t i, j;
    memcpy(&i, &x, 4);
    memcpy(&j, &y, 4);
    int64_t a = i < 0 ? -(int64_t)(i & 0x7fffffff) : i, b = j < 0 ? -(int64_t)(j & 0x7fffffff) : j;
    return a > b ? a - b : b - a;
}

/* The fp32 vector paths of EXP, SIGMOID, TANH and ERF against the plain
 * loops (libm in double, rounded once): within the ulp bounds vec_math.h
 * documents, NaN where the reference is NaN, over magnitudes from tiny to
 * far past saturation and overflow, infinities and NaN; every fourth case
 * sweeps 2^18 bit patterns spread over all floats (every sign, exponent
 * and the subnormals). */
static const struct {
    const char *name;
    interp_kernel_fn fn;
    ctosa_op_kind kind;
    int64_t max_ulp;
} vm_ops[] = {
    {"EXP", interp_k_EXP, CTOSA_OP_EXP, 2},
    {"SIGMOID", interp_k_SIGMOID, CTOSA_OP_SIGMOID, 3},
    {"TANH", interp_k_TANH, CTOSA_OP_TANH, 3},
    {"ERF", interp_k_ERF, CTOSA_OP_ERF, 3},
};

static void vm_case(int which, uint64_t seed) {
    kt_rng = seed;
    bool sweep = seed % 4 == 1;
    int64_t n = sweep ? (1 << 18) : coin(30) ? ri(1, 20) : ri(100, 5000);
    itensor *in = kt_new(CTOSA_DTYPE_FP32, 1, KT_DIMS(n)), *out = kt_new(CTOSA_DTYPE_FP32, 1, KT_DIMS(n));
    itensor *ref = like(out);
    static const double scale[] = {1e-6, 1, 8, 30, 120, 1000, 1e-40};
    double sc = scale[ri(0, 6)];
    float *x = in->data;
    uint32_t start = (uint32_t)kt_rand();
    for (int64_t i = 0; i < n; i++) {
        if (sweep) {
            uint32_t bits = start + (uint32_t)i * 16381u; /* odd step: 2^18 distinct patterns */
            memcpy(&x[i], &bits, 4);
            continue;
        }
        x[i] = (float)(kt_randf() * sc);
        if (coin(2)) x[i] = coin(50) ? INFINITY : -INFINITY;
        if (coin(1)) x[i] = NAN;
    }
    /* the last element (in the tail when n % 16 != 0) repeats the first
     * (in a full vector): a result must not depend on its position */
    if (n > 16) x[n - 1] = x[0];
    char what[120];
    snprintf(what, sizeof what, "%s fp32 n %lld %s %g", vm_ops[which].name, (long long)n,
             sweep ? "sweep from" : "scale", sweep ? (double)start : sc);
    kt_reference = false;
    ctosa_error *e1 = kt_run(vm_ops[which].fn, vm_ops[which].kind, NULL, 1, &in, 1, &out);
    kt_reference = true;
    ctosa_error *e2 = kt_run(vm_ops[which].fn, vm_ops[which].kind, NULL, 1, &in, 1, &ref);
    kt_reference = false;
    CHECK_MSG(!e1 && !e2, "%s (seed %llu): fast %s, reference %s", what, (unsigned long long)seed,
              e1 ? ctosa_error_message(e1) : "ok", e2 ? ctosa_error_message(e2) : "ok");
    if (!e1 && !e2) {
        g_compared++;
        const float *f = out->data, *r = ref->data;
        CHECK_MSG(n <= 16 || memcmp(&f[0], &f[n - 1], 4) == 0 || (isnan(f[0]) && isnan(f[n - 1])),
                  "%s (seed %llu): x %.9g gives %.9g at 0 but %.9g at %lld", what, (unsigned long long)seed,
                  x[0], f[0], f[n - 1], (long long)(n - 1));
        for (int64_t i = 0; i < n; i++) {
            bool ok =
                isnan(r[i]) ? isnan(f[i]) : !isnan(f[i]) && ulp_apart(f[i], r[i]) <= vm_ops[which].max_ulp;
            if (!ok) {
                CHECK_MSG(0, "%s (seed %llu): x %.9g fast %.9g reference %.9g (bound %lld ulp)", what,
                          (unsigned long long)seed, x[i], f[i], r[i], (long long)vm_ops[which].max_ulp);
                break;
            }
        }
    }
    ctosa_error_free(e1);
    ctosa_error_free(e2);
    kt_free_all();
}

/* ------------------------------------------------ REDUCE_SUM/MAX/MIN */

/* fp32 REDUCE_SUM, REDUCE_MAX and REDUCE_MIN's row-interleaved and
 * lane-vectorised paths against the one-output-at-a-time loop: identical
 * results (same order per output), any axis of ranks 1 to 4, NaN (both
 * NaN modes), infinities and signed zeros in some cases. */
static void reduce_case(uint64_t seed) {
    kt_rng = seed;
    uint32_t rank = (uint32_t)ri(1, 4);
    int64_t ish[4], osh[4];
    for (uint32_t d = 0; d < rank; d++) ish[d] = coin(20) ? 1 : ri(2, rank <= 2 ? 300 : 24);
    int32_t axis = (int32_t)ri(0, rank - 1);
    for (uint32_t d = 0; d < rank; d++) osh[d] = d == (uint32_t)axis ? 1 : ish[d];
    itensor *in = kt_new(CTOSA_DTYPE_FP32, rank, ish), *out = kt_new(CTOSA_DTYPE_FP32, rank, osh);
    float *x = in->data;
    bool specials = coin(30);
    for (uint64_t i = 0; i < in->count; i++) {
        x[i] = kt_randf() * 100.0f;
        if (specials && coin(3)) {
            static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
            x[i] = sp[ri(0, 4)];
        }
    }
    static const struct {
        const char *name;
        interp_kernel_fn fn;
        ctosa_op_kind kind;
    } ops[] = {{"REDUCE_SUM", interp_k_REDUCE_SUM, CTOSA_OP_REDUCE_SUM},
               {"REDUCE_MAX", interp_k_REDUCE_MAX, CTOSA_OP_REDUCE_MAX},
               {"REDUCE_MIN", interp_k_REDUCE_MIN, CTOSA_OP_REDUCE_MIN}};
    int k = (int)ri(0, 2);
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.axis = axis;
    a.nan_mode = coin(50) ? CTOSA_NAN_IGNORE : CTOSA_NAN_PROPAGATE;
    char what[160];
    int n = snprintf(what, sizeof what, "%s axis %d nan %s in", ops[k].name, axis,
                     a.nan_mode == CTOSA_NAN_IGNORE ? "ignore" : "propagate");
    for (uint32_t d = 0; d < rank; d++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %lld", (long long)ish[d]);
    diff_run(ops[k].fn, ops[k].kind, &a, 1, &in, out, 0, what, seed);
    kt_free_all();
}

/* ---------------------------------------------------------- TRANSPOSE */

/* TRANSPOSE (merged dimensions, tiled planes, strided rows) against the
 * spec's index loop written here: ranks 1 to 6, sizes 1 to 40 (tiles with
 * ragged edges), every element size, every permutation kind. */
static void transpose_case(uint64_t seed) {
    kt_rng = seed;
    static const ctosa_dtype types[] = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, CTOSA_DTYPE_FP32,
                                        CTOSA_DTYPE_INT64};
    ctosa_dtype t = types[ri(0, 3)];
    uint32_t rank = (uint32_t)ri(1, 6);
    int64_t ish[6], osh[6], total = 1;
    int32_t perm[6];
    for (uint32_t d = 0; d < rank; d++) {
        ish[d] = coin(25) ? 1 : ri(2, rank <= 3 ? 40 : 9);
        total *= ish[d];
        perm[d] = (int32_t)d;
    }
    for (uint32_t d = rank; d > 1; d--) { /* Fisher-Yates */
        uint32_t k = (uint32_t)ri(0, d - 1);
        int32_t tmp = perm[d - 1];
        perm[d - 1] = perm[k];
        perm[k] = tmp;
    }
    for (uint32_t d = 0; d < rank; d++) osh[d] = ish[perm[d]];
    itensor *in = kt_new(t, rank, ish), *out = kt_new(t, rank, osh);
    size_t es = interp_elem_size(t);
    uint8_t *src = in->data, *dst = out->data;
    for (size_t i = 0; i < (size_t)total * es; i++) src[i] = (uint8_t)kt_rand();
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.perms = (ctosa_i32s){perm, rank};
    char what[160];
    int n = snprintf(what, sizeof what, "TRANSPOSE %s in", ctosa_dtype_short(t));
    for (uint32_t d = 0; d < rank; d++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %lld", (long long)ish[d]);
    n += snprintf(what + n, sizeof what - (size_t)n, " perm");
    for (uint32_t d = 0; d < rank; d++) n += snprintf(what + n, sizeof what - (size_t)n, " %d", perm[d]);
    kt_ctx = g_pool;
    ctosa_error *e = kt_run(interp_k_TRANSPOSE, CTOSA_OP_TRANSPOSE, &a, 1, &in, 1, &out);
    kt_ctx = NULL;
    CHECK_MSG(!e, "%s (seed %llu): %s", what, (unsigned long long)seed, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (!e) {
        g_compared++;
        int64_t ist[6], idx[6] = {0};
        int64_t st = 1;
        for (int d = (int)rank - 1; d >= 0; d--) {
            ist[d] = st;
            st *= ish[d];
        }
        for (int64_t i = 0; i < total; i++) {
            int64_t s_off = 0;
            for (uint32_t d = 0; d < rank; d++) s_off += idx[d] * ist[perm[d]];
            if (memcmp(dst + (size_t)i * es, src + (size_t)s_off * es, es)) {
                CHECK_MSG(0, "%s (seed %llu): output element %lld differs", what, (unsigned long long)seed,
                          (long long)i);
                break;
            }
            for (int d = (int)rank - 1; d >= 0 && ++idx[d] == osh[d]; d--) idx[d] = 0;
        }
    }
    kt_free_all();
}

/* ------------------------------------------------------------ SELECT */

/* SELECT's row loops against its plain loop: every element size, shapes
 * where each of the three inputs is full or broadcast along any
 * dimension (the innermost included), ranks 1 to 4. */
static void select_case(uint64_t seed) {
    kt_rng = seed;
    static const ctosa_dtype dts[] = {CTOSA_DTYPE_INT8,  CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT32,
                                      CTOSA_DTYPE_INT64, CTOSA_DTYPE_FP32,  CTOSA_DTYPE_BOOL};
    ctosa_dtype dt = dts[ri(0, 5)];
    uint32_t rank = (uint32_t)ri(1, 4);
    int64_t shape[4], sh[3][4];
    for (uint32_t d = 0; d < rank; d++) shape[d] = coin(20) ? 1 : ri(1, d + 1 == rank ? 70 : 6);
    for (int k = 0; k < 3; k++)
        for (uint32_t d = 0; d < rank; d++) sh[k][d] = coin(25) ? 1 : shape[d];
    itensor *c = kt_new(CTOSA_DTYPE_BOOL, rank, sh[0]), *x = kt_new(dt, rank, sh[1]),
            *y = kt_new(dt, rank, sh[2]);
    /* the output is the broadcast of the inputs */
    for (uint32_t d = 0; d < rank; d++) shape[d] = sh[0][d] > sh[1][d] ? sh[0][d] : sh[1][d];
    for (uint32_t d = 0; d < rank; d++) shape[d] = sh[2][d] > shape[d] ? sh[2][d] : shape[d];
    itensor *out = kt_new(dt, rank, shape);
    for (uint64_t i = 0; i < c->count; i++) ((uint8_t *)c->data)[i] = coin(50);
    if (dt == CTOSA_DTYPE_BOOL) {
        for (uint64_t i = 0; i < x->count; i++) ((uint8_t *)x->data)[i] = coin(50);
        for (uint64_t i = 0; i < y->count; i++) ((uint8_t *)y->data)[i] = coin(50);
    } else {
        fill(x, dt == CTOSA_DTYPE_INT64); /* narrow: the whole int64 range is not drawn */
        fill(y, dt == CTOSA_DTYPE_INT64);
    }
    itensor *ins[3] = {c, x, y};
    char what[160];
    snprintf(what, sizeof what, "SELECT %s rank %u out %s", ctosa_dtype_short(dt), rank,
             interp_shape_str(out));
    diff_run(interp_k_SELECT, CTOSA_OP_SELECT, NULL, 3, ins, out, 0, what, seed);
    kt_free_all();
}

/* ------------------------------------------------------------ ADD / SUB, CAST */

/* int32 ADD / SUB (the wrapping loops with a re-check) over broadcast
 * shapes, values narrow or over the whole range (so some cases overflow:
 * both paths must refuse them alike); fp32 -> int8 / int16 / int32 CAST over
 * values around and past the range with exact halves, infinities and NaN,
 * and int32 -> int8 / int16 (truncating) over the whole int32 range. */
static void arith_case(uint64_t seed) {
    kt_rng = seed;
    if (coin(40)) {
        int64_t n = ri(1, 3000);
        int kind = (int)ri(0, 3); /* fp32 -> int8, int16, int32; int32 -> int8 / int16 */
        ctosa_dtype to = kind == 0 ? CTOSA_DTYPE_INT8 : kind == 1 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT32;
        ctosa_dtype ti = kind == 3 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_FP32;
        if (kind == 3) to = coin(50) ? CTOSA_DTYPE_INT8 : CTOSA_DTYPE_INT16;
        itensor *in = kt_new(ti, 1, KT_DIMS(n)), *out = kt_new(to, 1, KT_DIMS(n));
        /* int32: around 2^22, 2^23 (where halves stop) and past 2^31 */
        double range = kind == 0 ? 300 : kind == 1 ? 70000 : coin(50) ? 3e9 : coin(50) ? 9e6 : 5e6;
        float *x = in->data;
        for (int64_t i = 0; i < n; i++) {
            if (kind == 3) {
                ((int32_t *)in->data)[i] =
                    coin(50) ? (int32_t)(uint32_t)kt_rand() : (int32_t)ri(-40000, 40000);
                continue;
            }
            x[i] = (float)(kt_randf() * range);
            if (coin(20)) x[i] = (float)(ri(-(int64_t)range, (int64_t)range)) + 0.5f;
            if (coin(2)) x[i] = coin(50) ? INFINITY : -INFINITY;
            if (coin(1)) x[i] = NAN;
            if (kind == 2 && coin(3)) x[i] = coin(50) ? 0x1p31f : coin(50) ? -0x1p31f : 0x1.fffffep30f;
        }
        char what[80];
        snprintf(what, sizeof what, "CAST %s -> %s n %lld", ctosa_dtype_short(ti), ctosa_dtype_short(to),
                 (long long)n);
        diff_run(interp_k_CAST, CTOSA_OP_CAST, NULL, 1, &in, out, 0, what, seed);
        kt_free_all();
        return;
    }
    bool sub = coin(50);
    uint32_t rank = (uint32_t)ri(1, 4);
    int64_t shape[4], sh[2][4];
    for (uint32_t d = 0; d < rank; d++) shape[d] = coin(20) ? 1 : ri(1, d + 1 == rank ? 70 : 6);
    for (int k = 0; k < 2; k++)
        for (uint32_t d = 0; d < rank; d++) sh[k][d] = coin(25) ? 1 : shape[d];
    for (uint32_t d = 0; d < rank; d++) shape[d] = sh[0][d] > sh[1][d] ? sh[0][d] : sh[1][d];
    itensor *x = kt_new(CTOSA_DTYPE_INT32, rank, sh[0]), *y = kt_new(CTOSA_DTYPE_INT32, rank, sh[1]);
    itensor *out = kt_new(CTOSA_DTYPE_INT32, rank, shape);
    bool wide = coin(30);
    for (int k = 0; k < 2; k++) {
        itensor *t = k ? y : x;
        for (uint64_t i = 0; i < t->count; i++)
            ((int32_t *)t->data)[i] = wide ? (int32_t)(uint32_t)kt_rand() : (int32_t)ri(-1000000, 1000000);
    }
    itensor *ins[2] = {x, y};
    char what[120];
    snprintf(what, sizeof what, "%s int32 rank %u out %s%s", sub ? "SUB" : "ADD", rank, interp_shape_str(out),
             wide ? " wide" : "");
    diff_run(sub ? interp_k_SUB : interp_k_ADD, sub ? CTOSA_OP_SUB : CTOSA_OP_ADD, NULL, 2, ins, out, 0, what,
             seed);
    kt_free_all();
}

/* ------------------------------------------------ fp32 engine, exactly */

/* acc + a * b rounded once (fused) or twice */
static float mac(bool fused, float acc, float a, float b) {
    if (fused) return fmaf(a, b, acc);
    volatile float p = a * b;
    return acc + p;
}

/* The fast paths write acc += a * b; an optimising build for an FMA
 * instruction set fuses it (one rounding), an unoptimised or pre-FMA one
 * does not. So a case's outputs must all equal the in-order sum of one of
 * the two kinds: *mode (0 at the start of a case) records which. */
static bool same_chain(int *mode, float got, float fused, float sep) {
    bool f = memcmp(&got, &fused, sizeof got) == 0, s = memcmp(&got, &sep, sizeof got) == 0;
    if (*mode == 0 && f != s) *mode = f ? 1 : 2;
    return *mode == 1 ? f : *mode == 2 ? s : f;
}

typedef struct gemm_rows {
    const float *a;
    const int64_t *off; /* per row and tap: offset of its Kt values in a */
    int32_t T;
} gemm_rows;

static void gemm_rows_fn(const void *rc, int64_t m0, int64_t nrows, const void **ptrs) {
    const gemm_rows *g = rc;
    for (int64_t r = 0; r < nrows; r++)
        for (int32_t t = 0; t < g->T; t++) ptrs[r * g->T + t] = g->a + g->off[(m0 + r) * g->T + t];
}

/* The blocked engine (every tile shape: groups of four column panels and
 * the narrower ones for the last 1-3 panels, rows left over, K split in
 * chunks that end inside a tap) against a plain loop that sums each output
 * in k order with the same multiply-adds, then adds the bias and clamps:
 * the bits must be the same. */
static void gemm_case(uint64_t seed) {
    kt_rng = seed;
    static const int64_t ns[] = {1, 5, 16, 17, 31, 32, 48, 63, 64, 65, 80, 96, 112, 128, 130, 200};
    int64_t M = coin(30) ? ri(1, 7) : ri(1, 100), N = ns[ri(0, CTOSA_ARRAY_LEN(ns) - 1)];
    int32_t T = (int32_t)(coin(40) ? 1 : ri(2, 9));
    int64_t Kt = coin(3) ? 0 : ri(1, 80); /* K = 0: the output is the bias */
    if (coin(30)) {                       /* K past a chunk (1024 per panel of a group of four) */
        T = (int32_t)ri(1, 4);
        Kt = T == 1 ? ri(1000, 5000) : ri(300, 1400);
        M = ri(1, 16);
        N = ns[ri(0, 8)];
    }
    int64_t K = Kt * T;
    float *a = malloc(((size_t)(M * T + 8) * (size_t)Kt + 1) * sizeof(float));
    float *b = malloc((size_t)(K * N + 1) * sizeof(float));
    float *bp =
        aligned_alloc(64, (kg_pack_elems(K, N) + 16) * sizeof(float)); /* the engine's vectors are aligned */
    float *bias = malloc((size_t)N * sizeof(float));
    float *out = malloc((size_t)(M * N) * sizeof(float));
    int64_t *off = malloc((size_t)(M * T) * sizeof(int64_t));
    int64_t na = (M * T + 8) * Kt;
    for (int64_t i = 0; i < na; i++) a[i] = kt_randf();
    for (int64_t i = 0; i < K * N; i++) b[i] = kt_randf();
    for (int64_t i = 0; i < N; i++) bias[i] = kt_randf();
    for (int64_t i = 0; i < M * T; i++) off[i] = ri(0, M * T + 7) * Kt; /* rows shared, out of order */
    interp_post post = {(float)-ri(0, 3) / 2, (float)ri(0, 3) / 2, false, false};
    bool use_bias = coin(60), use_post = coin(40);
    kg_pack_f(bp, K, N, b, N, 1); /* B[k][n] = b[k*N + n] */
    gemm_rows rc = {a, off, T};
    kg_job job = {.M = M,
                  .N = N,
                  .Kt = Kt,
                  .T = T,
                  .rows = gemm_rows_fn,
                  .rctx = &rc,
                  .bpack = bp,
                  .bias = use_bias ? bias : NULL,
                  .out = out,
                  .ldo = N,
                  .post = use_post ? &post : NULL};
    CHECK_MSG(kg_run_f(g_pool, &job), "kg_run_f failed");
    int mode = 0;
    for (int64_t m = 0; m < M && th_failures < 5; m++)
        for (int64_t n = 0; n < N; n++) {
            float v[2];
            for (int f = 0; f < 2; f++) {
                float acc = 0.0f;
                for (int32_t t = 0; t < T; t++)
                    for (int64_t k = 0; k < Kt; k++)
                        acc = mac(f == 0, acc, a[off[m * T + t] + k], b[(t * Kt + k) * N + n]);
                v[f] = use_bias ? acc + bias[n] : acc + 0.0f;
                if (use_post) v[f] = interp_post_f(&post, v[f]);
            }
            if (!same_chain(&mode, out[m * N + n], v[0], v[1])) {
                CHECK_MSG(0,
                          "GEMM M%lld N%lld Kt%lld T%d (seed %llu): [%lld][%lld] engine %.9g, in-order sum "
                          "%.9g (fused) %.9g (not)",
                          (long long)M, (long long)N, (long long)Kt, T, (unsigned long long)seed,
                          (long long)m, (long long)n, out[m * N + n], v[0], v[1]);
                break;
            }
        }
    g_compared++;
    free(a);
    free(b);
    free(bp);
    free(bias);
    free(out);
    free(off);
}

/* The few-row MATMUL (GEMV: B streamed in column ranges, four rows of B
 * per pass, C not always a multiple of four, more than one range when
 * H x W passes the range size) against the in-order sum, bit for bit. */
static void gemv_case(uint64_t seed) {
    kt_rng = seed;
    int64_t N = ri(1, 2), H = ri(1, 4), C = coin(20) ? ri(1, 7) : ri(8, 300);
    int64_t W = coin(50) ? ri(1, 300) : ri(2000, 9000);
    itensor *A = kt_new(CTOSA_DTYPE_FP32, 3, KT_DIMS(N, H, C)),
            *B = kt_new(CTOSA_DTYPE_FP32, 3, KT_DIMS(N, C, W));
    itensor *out = kt_new(CTOSA_DTYPE_FP32, 3, KT_DIMS(N, H, W));
    fill(A, false);
    fill(B, false);
    B->is_const = coin(50);
    itensor *ins[4] = {A, B, zp(CTOSA_DTYPE_FP32, false), zp(CTOSA_DTYPE_FP32, false)};
    kt_ctx = g_pool;
    ctosa_error *e = kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, ins, 1, &out);
    kt_ctx = NULL;
    CHECK_MSG(e == NULL, "GEMV: %s", e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    const float *a = A->data, *b = B->data, *o = out->data;
    int mode = 0;
    for (int64_t i = 0; i < N * H * W; i++) {
        int64_t n = i / (H * W), h = i / W % H, w = i % W;
        float acc[2] = {0.0f, 0.0f};
        for (int f = 0; f < 2; f++)
            for (int64_t c = 0; c < C; c++)
                acc[f] = mac(f == 0, acc[f], a[(n * H + h) * C + c], b[(n * C + c) * W + w]);
        if (!same_chain(&mode, o[i], acc[0], acc[1])) {
            CHECK_MSG(0,
                      "GEMV N%lld H%lld C%lld W%lld (seed %llu): element %lld fast %.9g, in-order sum %.9g "
                      "(fused) %.9g (not)",
                      (long long)N, (long long)H, (long long)C, (long long)W, (unsigned long long)seed,
                      (long long)i, o[i], acc[0], acc[1]);
            break;
        }
    }
    g_compared++;
    kt_free_all();
}

/* fp32 DEPTHWISE_CONV2D, multiplier 1, at least 16 channels, kernels
 * other than 3x3 (the row kernel of kernels_depthwise_f32.c: groups of
 * eight and four interior columns with the kernel widths 3, 5 and 7 at
 * strides 1 and 2 loading each input once, the generic group for other
 * widths, strides and dilations, border columns, a last channel block that
 * overlaps the one before) against the in-order sum bias + taps in (ky, kx)
 * order, bit for bit. */
static void dwf_case(uint64_t seed) {
    kt_rng = seed;
    static const int64_t ks[] = {1, 2, 3, 4, 5, 7};
    int64_t C = coin(30) ? 16 * ri(1, 4) : ri(16, 80), N = coin(80) ? 1 : 2;
    int64_t k[2], s[2], d[2], in[2], pa[2], pb[2], out[2];
    do {
        k[0] = ks[ri(0, 5)];
        k[1] = ks[ri(0, 5)];
    } while (k[0] == 3 && k[1] == 3); /* 3x3 has its own loops */
    for (int i = 0; i < 2; i++) {
        s[i] = coin(60) ? 1 : ri(2, 3);
        d[i] = coin(75) ? 1 : 2;
        in[i] = coin(50) ? ri(1, 12) : ri(13, 40);
        pa[i] = ri(0, (k[i] - 1) * d[i] + 1);
        int64_t num = in[i] - 1 + pa[i] - (k[i] - 1) * d[i];
        pb[i] = num >= 0 ? ri(0, 2) : -num + ri(0, 2);
        while ((num + pb[i]) % s[i]) pb[i]++;
        out[i] = (num + pb[i]) / s[i] + 1;
    }
    itensor *x = kt_new(CTOSA_DTYPE_FP32, 4, KT_DIMS(N, in[0], in[1], C));
    itensor *w = kt_new(CTOSA_DTYPE_FP32, 4, KT_DIMS(k[0], k[1], C, 1));
    itensor *b = kt_new(CTOSA_DTYPE_FP32, 1, KT_DIMS(C));
    itensor *o = kt_new(CTOSA_DTYPE_FP32, 4, KT_DIMS(N, out[0], out[1], C));
    fill(x, false);
    fill(w, false);
    fill(b, false);
    int32_t pad[4] = {(int32_t)pa[0], (int32_t)pb[0], (int32_t)pa[1], (int32_t)pb[1]};
    int32_t st[2] = {(int32_t)s[0], (int32_t)s[1]}, dil[2] = {(int32_t)d[0], (int32_t)d[1]};
    ctosa_attr a = {0};
    a.acc_type = CTOSA_DTYPE_FP32;
    a.pad = (ctosa_i32s){pad, 4};
    a.stride = (ctosa_i32s){st, 2};
    a.dilation = (ctosa_i32s){dil, 2};
    itensor *ins[5] = {x, w, b, zp(CTOSA_DTYPE_FP32, false), zp(CTOSA_DTYPE_FP32, false)};
    kt_ctx = g_pool;
    ctosa_error *e = kt_run(interp_k_DEPTHWISE_CONV2D, CTOSA_OP_DEPTHWISE_CONV2D, &a, 5, ins, 1, &o);
    kt_ctx = NULL;
    CHECK_MSG(e == NULL, "depthwise: %s", e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    const float *xv = x->data, *wv = w->data, *bv = b->data, *ov = o->data;
    int mode = 0;
    for (int64_t i = 0; i < (int64_t)o->count; i++) {
        int64_t c = i % C, ox = i / C % out[1], oy = i / C / out[1] % out[0], n = i / C / out[1] / out[0];
        float acc[2] = {bv[c], bv[c]};
        for (int f = 0; f < 2; f++)
            for (int64_t ky = 0; ky < k[0]; ky++)
                for (int64_t kx = 0; kx < k[1]; kx++) {
                    int64_t y = oy * s[0] - pa[0] + ky * d[0], xx = ox * s[1] - pa[1] + kx * d[1];
                    if (y < 0 || y >= in[0] || xx < 0 || xx >= in[1]) continue;
                    acc[f] = mac(f == 0, acc[f], xv[((n * in[0] + y) * in[1] + xx) * C + c],
                                 wv[(ky * k[1] + kx) * C + c]);
                }
        if (!same_chain(&mode, ov[i], acc[0], acc[1])) {
            CHECK_MSG(0,
                      "depthwise N%lld in[%lld,%lld]x%lld k[%lld,%lld] s[%lld,%lld] d[%lld,%lld] "
                      "pad[%lld,%lld,%lld,%lld] (seed %llu): element %lld fast %.9g, in-order sum %.9g "
                      "(fused) %.9g (not)",
                      (long long)N, (long long)in[0], (long long)in[1], (long long)C, (long long)k[0],
                      (long long)k[1], (long long)s[0], (long long)s[1], (long long)d[0], (long long)d[1],
                      (long long)pa[0], (long long)pb[0], (long long)pa[1], (long long)pb[1],
                      (unsigned long long)seed, (long long)i, ov[i], acc[0], acc[1]);
            break;
        }
    }
    g_compared++;
    kt_free_all();
}

/* ------------------------------------------------------------ driver */

static uint64_t case_seed(int op, int i) {
    return 0x9E3779B97F4A7C15ull * (uint64_t)(op * 1000003 + i + 1) | 1;
}

static void run_op(const char *name, int op) {
    int before = th_failures;
    g_compared = g_refused = 0;
    for (int i = 0; i < g_cases && th_failures - before < 5; i++) {
        uint64_t seed = case_seed(op, i);
        if (op <= OP_TRANSPOSE) conv_case(op, seed);
        else if (op == 4) matmul_case(seed);
        else if (op == 7) rescale_case(seed);
        else if (op >= 11 && op <= 14) vm_case(op - 11, seed);
        else if (op == 15) transpose_case(seed);
        else if (op == 16) reduce_case(seed);
        else if (op == 9) select_case(seed);
        else if (op == 10) arith_case(seed);
        else if (op == 17) gemm_case(seed);
        else if (op == 18) gemv_case(seed);
        else if (op == 19) dwf_case(seed);
        else pool_case(op == 5, seed);
    }
    printf("%-18s %d random cases: %d compared, %d refused by both paths\n", name, g_cases, g_compared,
           g_refused);
    /* the generator must mostly make valid cases, or the test proves nothing */
    CHECK_MSG(g_compared >= g_cases * (op == 7 || op == 10 ? 5 : 9) / 10, "%s: only %d of %d cases ran", name,
              g_compared, g_cases);
}

static void test_conv2d(void) { run_op("CONV2D", OP_CONV2D); }
static void test_conv3d(void) { run_op("CONV3D", OP_CONV3D); }
static void test_depthwise(void) { run_op("DEPTHWISE_CONV2D", OP_DEPTHWISE); }
static void test_transpose(void) { run_op("TRANSPOSE_CONV2D", OP_TRANSPOSE); }
static void test_matmul(void) { run_op("MATMUL", 4); }
static void test_avg_pool(void) { run_op("AVG_POOL2D", 5); }
static void test_max_pool(void) { run_op("MAX_POOL2D", 6); }
static void test_rescale(void) { run_op("RESCALE", 7); }
static void test_reduce(void) { run_op("REDUCE_SUM/MAX/MIN", 16); }
static void test_transpose_op(void) { run_op("TRANSPOSE", 15); }
static void test_vec_math(void) {
    for (int k = 0; k < 4; k++) run_op(vm_ops[k].name, 11 + k);
}
static void test_select(void) { run_op("SELECT", 9); }
static void test_arith(void) { run_op("ADD/SUB/CAST", 10); }
static void test_gemm_exact(void) { run_op("fp32 GEMM engine", 17); }
static void test_gemv_exact(void) { run_op("fp32 GEMV", 18); }
static void test_dwf_exact(void) { run_op("fp32 depthwise rows", 19); }

/* The int8 dot-product engine, once per instruction set this CPU has (the
 * tests above run with it switched off, so they cover the fp32 / int16
 * paths); each must take most of the int8 cases (the others have weights
 * whose zero point puts them outside int8, or sums that may pass int32). */
static void test_q8_paths(void) {
    static const struct {
        int level;
        const char *name;
    } isa[] = {{KG_Q8_AVX512VNNI, "AVX-512 VNNI"}, {KG_Q8_AVXVNNI, "AVX-VNNI"}};
    for (int i = 0; i < 2; i++) {
        kg_q8_limit(isa[i].level);
        if (kg_q8_isa() != isa[i].level) {
            printf("%s: not on this CPU, skipped\n", isa[i].name);
            continue;
        }
        printf("int8 dot-product engine, %s:\n", isa[i].name);
        uint64_t before = kg_q8_runs();
        run_op("CONV2D", OP_CONV2D);
        run_op("CONV3D", OP_CONV3D);
        run_op("TRANSPOSE_CONV2D", OP_TRANSPOSE);
        run_op("MATMUL", 4);
        uint64_t ran = kg_q8_runs() - before;
        printf("  %llu jobs on the engine\n", (unsigned long long)ran);
        CHECK_MSG(ran >= (uint64_t)g_cases / 4, "%s: only %llu int8 jobs took the engine", isa[i].name,
                  (unsigned long long)ran);
    }
    kg_q8_limit(KG_Q8_NONE);
}

int main(void) {
    g_cases = long_tests() ? 5000 : 300;
    kg_q8_limit(KG_Q8_NONE);
    RUN(test_conv2d);
    RUN(test_conv3d);
    RUN(test_depthwise);
    RUN(test_transpose);
    RUN(test_matmul);
    RUN(test_avg_pool);
    RUN(test_max_pool);
    RUN(test_rescale);
    RUN(test_vec_math);
    RUN(test_transpose_op);
    RUN(test_reduce);
    RUN(test_select);
    RUN(test_arith);
    RUN(test_gemm_exact);
    RUN(test_gemv_exact);
    RUN(test_dwf_exact);
    RUN(test_q8_paths);
    kg_q8_limit(-1);
    /* the split paths, against one thread bit for bit (and the checks above) */
    struct interp_ctx two = {0};
    two.pool = tpool_create(2);
    CHECK_MSG(two.pool != NULL, "no thread pool");
    if (two.pool) {
        printf("two threads, every loop split:\n");
        g_pool = &two;
        interp_par_force(true);
        kg_q8_limit(KG_Q8_NONE);
        RUN(test_conv2d);
        RUN(test_conv3d);
        RUN(test_depthwise);
        RUN(test_transpose);
        RUN(test_matmul);
        RUN(test_avg_pool);
        RUN(test_max_pool);
        RUN(test_transpose_op);
        RUN(test_reduce);
        RUN(test_gemm_exact);
        RUN(test_gemv_exact);
        RUN(test_dwf_exact);
        kg_q8_limit(-1);
        interp_par_force(false);
        g_pool = NULL;
        tpool_free(two.pool);
    }
    kt_free_all();
    return th_finish();
}
