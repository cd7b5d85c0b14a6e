/* test_kernels_conv.c - CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D
 * and MATMUL against naive loops written from the pseudocode (exact for
 * integers, tolerance for fp32), plus ERROR_IF and REQUIRE cases; all of
 * it once on the fast paths and once on the reference loops. */
#include <math.h>

#include "harness.h"
#include "kernels_testutil.h"
#include "util/floatfmt.h"

static void fill(itensor *t, int64_t lo, int64_t hi) {
    for (uint64_t i = 0; i < t->count; i++) {
        if (t->dtype == CTOSA_DTYPE_FP32 || t->dtype == CTOSA_DTYPE_FP16)
            ((float *)t->data)[i] = ff_round_to(t->dtype, kt_randf() * (float)hi);
        else im_store_i(t->dtype, t->data, i, kt_randi(lo, hi));
    }
}

static double val(const itensor *t, uint64_t i) {
    if (t->dtype == CTOSA_DTYPE_FP32 || t->dtype == CTOSA_DTYPE_FP16) return ((const float *)t->data)[i];
    return (double)im_load_i(t->dtype, t->data, i);
}

/* Naive conv (kind 0 conv2d, 1 depthwise, 2 transpose), double/int64 sums. */
static double naive_conv(int kind, const itensor *in, const itensor *w, const itensor *bias, int64_t izp,
                         int64_t wzp, const int32_t *pad, const int32_t *st, const int32_t *dil, int64_t n,
                         int64_t oy, int64_t ox, int64_t oc) {
    int64_t IH = in->shape[1], IW = in->shape[2], IC = in->shape[3];
    int64_t KH = kind == 1 ? w->shape[0] : w->shape[1], KW = kind == 1 ? w->shape[1] : w->shape[2];
    int64_t M = kind == 1 ? w->shape[3] : 1;
    double acc = 0;
    for (int64_t ky = 0; ky < KH; ky++)
        for (int64_t kx = 0; kx < KW; kx++) {
            int64_t y, x;
            if (kind == 2) {
                y = oy - pad[0] - ky;
                x = ox - pad[2] - kx;
                if (y < 0 || x < 0 || y % st[0] || x % st[1]) continue;
                y /= st[0];
                x /= st[1];
            } else {
                y = oy * st[0] - pad[0] + ky * dil[0];
                x = ox * st[1] - pad[2] + kx * dil[1];
            }
            if (y < 0 || y >= IH || x < 0 || x >= IW) continue;
            if (kind == 1) {
                int64_t c = oc / M, m = oc % M;
                acc += (val(in, (uint64_t)(((n * IH + y) * IW + x) * IC + c)) - izp) *
                       (val(w, (uint64_t)(((ky * KW + kx) * IC + c) * M + m)) - wzp);
            } else {
                for (int64_t ic = 0; ic < IC; ic++)
                    acc += (val(in, (uint64_t)(((n * IH + y) * IW + x) * IC + ic)) - izp) *
                           (val(w, (uint64_t)(((oc * KH + ky) * KW + kx) * IC + ic)) - wzp);
            }
        }
    return acc + val(bias, bias->count == 1 ? 0 : (uint64_t)oc);
}

typedef struct ccase {
    int kind;
    ctosa_dtype ti, tw, to, acc;
    int64_t N, IH, IW, IC, OC, KH, KW, M;
    int32_t pad[4], st[2], dil[2];
    int64_t izp, wzp;
    bool bias1;
} ccase;

static int64_t out_dim(int kind, int64_t in, int32_t pa, int32_t pb, int64_t k, int32_t d, int32_t s) {
    if (kind == 2) return (in - 1) * s + pa + pb + k;
    return (in - 1 + pa + pb - (k - 1) * d) / s + 1;
}

static void run_case(const ccase *c) {
    int64_t OH = out_dim(c->kind, c->IH, c->pad[0], c->pad[1], c->KH, c->dil[0], c->st[0]);
    int64_t OW = out_dim(c->kind, c->IW, c->pad[2], c->pad[3], c->KW, c->dil[1], c->st[1]);
    int64_t OC = c->kind == 1 ? c->IC * c->M : c->OC;
    itensor *in = kt_new(c->ti, 4, KT_DIMS(c->N, c->IH, c->IW, c->IC));
    itensor *w = c->kind == 1 ? kt_new(c->tw, 4, KT_DIMS(c->KH, c->KW, c->IC, c->M))
                              : kt_new(c->tw, 4, KT_DIMS(OC, c->KH, c->KW, c->IC));
    itensor *b = kt_new(c->to, 1, KT_DIMS(c->bias1 ? 1 : OC));
    itensor *out = kt_new(c->to, 4, KT_DIMS(c->N, OH, OW, OC));
    bool isf = c->ti == CTOSA_DTYPE_FP32 || c->ti == CTOSA_DTYPE_FP16;
    if (isf) {
        fill(in, 0, 1);
        fill(w, 0, 1);
        fill(b, 0, 1);
    } else {
        fill(in, c->ti == CTOSA_DTYPE_INT8 ? -128 : -32768, c->ti == CTOSA_DTYPE_INT8 ? 127 : 32767);
        fill(w, c->tw == CTOSA_DTYPE_INT4 ? -8 : -128, c->tw == CTOSA_DTYPE_INT4 ? 7 : 127);
        fill(b, -100000, 100000);
    }
    itensor *ins[5] = {in, w, b, kt_scalar_i(isf ? CTOSA_DTYPE_INT8 : c->ti, c->izp),
                       kt_scalar_i(isf ? CTOSA_DTYPE_INT8 : c->tw, c->wzp)};
    if (isf) {
        ins[3] = kt_new(c->ti, 1, KT_DIMS(1));
        ins[4] = kt_new(c->tw, 1, KT_DIMS(1));
    }
    ctosa_attr a = {0};
    a.acc_type = c->acc;
    a.stride = (ctosa_i32s){c->st, 2};
    if (c->kind == 2) {
        a.out_pad = (ctosa_i32s){c->pad, 4};
    } else {
        a.pad = (ctosa_i32s){c->pad, 4};
        a.dilation = (ctosa_i32s){c->dil, 2};
    }
    interp_kernel_fn fn = c->kind == 0   ? interp_k_CONV2D
                          : c->kind == 1 ? interp_k_DEPTHWISE_CONV2D
                                         : interp_k_TRANSPOSE_CONV2D;
    CHECK_OK(kt_run(fn, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out));
    int bad = 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++)
                for (int64_t oc = 0; oc < OC; oc++) {
                    double want =
                        naive_conv(c->kind, in, w, b, c->izp, c->wzp, c->pad, c->st, c->dil, n, oy, ox, oc);
                    uint64_t i = (uint64_t)(((n * OH + oy) * OW + ox) * OC + oc);
                    double got = val(out, i);
                    double tol = isf ? 1e-4 * (1 + fabs(want)) : 0;
                    if (c->to == CTOSA_DTYPE_FP16) tol = 2e-3 * (1 + fabs(want));
                    if (fabs(got - want) > tol) {
                        if (bad < 3)
                            fprintf(stderr, "  kind %d at %llu: got %.9g want %.9g\n", c->kind,
                                    (unsigned long long)i, got, want);
                        bad++;
                    }
                }
    CHECK_MSG(bad == 0, "kind %d: %d mismatches", c->kind, bad);
    kt_free_all();
}

#define F32 CTOSA_DTYPE_FP32
#define I8 CTOSA_DTYPE_INT8
#define I16 CTOSA_DTYPE_INT16
#define I32 CTOSA_DTYPE_INT32
#define I48 CTOSA_DTYPE_INT48

static void test_conv2d(void) {
    /* fp32: padding, stride, dilation, odd channel counts (panel edges) */
    run_case(
        &(ccase){0, F32, F32, F32, F32, 2, 7, 9, 5, 19, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){0, F32, F32, F32, F32, 1, 9, 8, 3, 33, 3, 2, 1, {0, 2, 1, 0}, {2, 1}, {1, 2}, 0, 0, true});
    run_case(&(ccase){
        0, F32, F32, F32, F32, 1, 13, 13, 40, 16, 1, 1, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){0, F32, F32, F32, F32, 1, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, 0, 0, false});
    /* zero input channels: the output is the bias */
    run_case(
        &(ccase){0, F32, F32, F32, F32, 1, 3, 3, 0, 5, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){0, I8, I8, I32, I32, 1, 3, 3, 0, 5, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 4, 0, false});
    /* empty batch */
    run_case(
        &(ccase){0, F32, F32, F32, F32, 0, 3, 3, 2, 5, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, 0, false});
    /* int8 with zero points at the limits, int4 weights, int16 x int8 -> int48 */
    run_case(&(ccase){
        0, I8, I8, I32, I32, 2, 6, 5, 7, 18, 3, 3, 1, {1, 1, 1, 1}, {1, 2}, {1, 1}, -128, 127, false});
    run_case(&(ccase){
        0, I8, CTOSA_DTYPE_INT4, I32, I32, 1, 5, 5, 4, 5, 2, 2, 1, {1, 0, 0, 1}, {1, 1}, {2, 1}, 5, 0, true});
    run_case(
        &(ccase){0, I16, I8, I48, I48, 1, 5, 6, 9, 17, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, -3, false});
    /* int8 with K = 900 at extreme zero points: the exact fp32 path splits K
     * into chunks of whole taps (IC 100 <= 258 terms per chunk) */
    run_case(&(ccase){
        0, I8, I8, I32, I32, 1, 4, 4, 100, 20, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, -128, 127, false});
    run_case(&(ccase){
        0, I8, I8, I32, I32, 1, 3, 3, 300, 17, 1, 2, 1, {0, 0, 0, 1}, {1, 1}, {1, 1}, 127, -128, true});
    /* few input channels (the RGB stem): the per-pixel patch path, with
     * padding on every side, stride 2, and dilation */
    run_case(&(ccase){
        0, F32, F32, F32, F32, 2, 15, 17, 3, 35, 3, 3, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){0, F32, F32, F32, F32, 1, 12, 11, 1, 32, 3, 3, 1, {0, 2, 2, 0}, {1, 1}, {1, 1}, 0, 0, true});
    run_case(&(ccase){
        0, F32, F32, F32, F32, 1, 10, 13, 4, 17, 3, 3, 1, {1, 1, 1, 1}, {1, 2}, {2, 1}, 0, 0, false});
    /* fp16 in/out, fp32 accumulate */
    run_case(&(ccase){0,
                      CTOSA_DTYPE_FP16,
                      CTOSA_DTYPE_FP16,
                      CTOSA_DTYPE_FP16,
                      F32,
                      1,
                      5,
                      5,
                      3,
                      4,
                      3,
                      3,
                      1,
                      {1, 1, 1, 1},
                      {1, 1},
                      {1, 1},
                      0,
                      0,
                      false});
}

static void test_depthwise(void) {
    run_case(
        &(ccase){1, F32, F32, F32, F32, 2, 9, 7, 24, 0, 3, 3, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 6, 6, 5, 0, 3, 2, 3, {0, 1, 2, 1}, {1, 1}, {2, 1}, 0, 0, true});
    run_case(
        &(ccase){1, I8, I8, I32, I32, 1, 8, 8, 13, 0, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, -7, 9, false});
    run_case(&(ccase){
        1, I8, I8, I32, I32, 1, 5, 5, 4, 0, 3, 3, 2, {1, 1, 1, 1}, {2, 2}, {1, 1}, 127, -128, false});
    run_case(
        &(ccase){1, I16, I8, I48, I48, 1, 5, 5, 6, 0, 2, 2, 1, {0, 1, 0, 1}, {1, 1}, {1, 1}, 0, 0, false});
    /* the 3x3 register-blocked paths: full 16-channel blocks plus a tail,
     * stride 2, dilation 2, asymmetric padding, narrow images */
    run_case(
        &(ccase){1, F32, F32, F32, F32, 2, 11, 9, 37, 0, 3, 3, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 9, 10, 32, 0, 3, 3, 1, {2, 0, 0, 2}, {1, 1}, {2, 2}, 0, 0, true});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 2, 1, 16, 0, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(&(ccase){
        1, I8, I8, I32, I32, 1, 9, 8, 48, 0, 3, 3, 1, {0, 0, 1, 0}, {2, 2}, {1, 1}, -128, 127, false});
    run_case(
        &(ccase){1, I8, I8, I32, I32, 1, 6, 6, 35, 0, 3, 3, 1, {0, 0, 0, 0}, {1, 1}, {2, 2}, 3, -3, false});
    /* stride 1, dilation 1: interior columns in groups of four, a remainder,
     * border columns, wide and narrow padding */
    run_case(
        &(ccase){1, F32, F32, F32, F32, 2, 7, 13, 37, 0, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 6, 10, 32, 0, 3, 3, 1, {0, 2, 2, 0}, {1, 1}, {1, 1}, 0, 0, true});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 5, 4, 16, 0, 3, 3, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(&(ccase){
        1, I8, I8, I32, I32, 1, 6, 12, 48, 0, 3, 3, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, -128, 127, false});
    /* other kernel sizes: generic blocked loop */
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 8, 8, 20, 0, 5, 5, 1, {2, 2, 2, 2}, {1, 1}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){1, I8, I8, I32, I32, 1, 7, 7, 33, 0, 2, 4, 1, {0, 1, 1, 2}, {1, 1}, {1, 1}, -1, 2, false});
    run_case(
        &(ccase){1, F32, F32, F32, F32, 1, 9, 9, 3, 0, 8, 8, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, 0, 0, false});
}

static void test_transpose(void) {
    run_case(
        &(ccase){2, F32, F32, F32, F32, 1, 4, 5, 6, 7, 3, 3, 1, {0, 0, 0, 0}, {2, 2}, {1, 1}, 0, 0, false});
    run_case(
        &(ccase){2, F32, F32, F32, F32, 2, 3, 3, 4, 17, 3, 2, 1, {-1, -2, 1, 0}, {1, 3}, {1, 1}, 0, 0, true});
    run_case(
        &(ccase){2, I8, I8, I32, I32, 1, 4, 4, 5, 6, 2, 3, 1, {1, 0, 0, 2}, {2, 1}, {1, 1}, -100, 33, false});
}

/* CONV3D against a plain loop written from the pseudocode (double sums);
 * returns the largest |ctosa - plain| and sets *bound to a tolerance: the
 * output type's rounding of the largest |sum| (fp16) or fp32 sum error. */
static double conv3d_case(ctosa_dtype t, ctosa_dtype acc_t, int64_t N, int64_t ID, int64_t IH, int64_t IW,
                          int64_t IC, int64_t OC, int64_t KD, int64_t KH, int64_t KW, const int32_t pad[6],
                          const int32_t st[3], const int32_t dil[3], bool local_bound, double *bound) {
    int64_t OD = (ID - 1 + pad[0] + pad[1] - (KD - 1) * dil[0]) / st[0] + 1;
    int64_t OH = (IH - 1 + pad[2] + pad[3] - (KH - 1) * dil[1]) / st[1] + 1;
    int64_t OW = (IW - 1 + pad[4] + pad[5] - (KW - 1) * dil[2]) / st[2] + 1;
    itensor *in = kt_new(t, 5, KT_DIMS(N, ID, IH, IW, IC)), *w = kt_new(t, 5, KT_DIMS(OC, KD, KH, KW, IC));
    itensor *b = kt_new(t, 1, KT_DIMS(OC)), *out = kt_new(t, 5, KT_DIMS(N, OD, OH, OW, OC));
    fill(in, 0, 1);
    fill(w, 0, 1);
    fill(b, 0, 1);
    itensor *ins[5] = {in, w, b, kt_new(t, 1, KT_DIMS(1)), kt_new(t, 1, KT_DIMS(1))};
    ctosa_attr a = {0};
    a.acc_type = acc_t;
    a.local_bound = local_bound;
    a.pad = (ctosa_i32s){pad, 6};
    a.stride = (ctosa_i32s){st, 3};
    a.dilation = (ctosa_i32s){dil, 3};
    CHECK_OK(kt_run(interp_k_CONV3D, CTOSA_OP_CONV3D, &a, 5, ins, 1, &out));
    const float *I = in->data, *W = w->data, *B = b->data, *O = out->data;
    double maxd = 0, maxabs = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t od = 0; od < OD; od++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++)
                    for (int64_t oc = 0; oc < OC; oc++) {
                        double acc = B[oc], mag = fabs(B[oc]);
                        for (int64_t kd = 0; kd < KD; kd++)
                            for (int64_t ky = 0; ky < KH; ky++)
                                for (int64_t kx = 0; kx < KW; kx++) {
                                    int64_t z = od * st[0] - pad[0] + kd * dil[0];
                                    int64_t y = oy * st[1] - pad[2] + ky * dil[1];
                                    int64_t x = ox * st[2] - pad[4] + kx * dil[2];
                                    if (z < 0 || z >= ID || y < 0 || y >= IH || x < 0 || x >= IW) continue;
                                    for (int64_t ic = 0; ic < IC; ic++) {
                                        double p = (double)I[(((n * ID + z) * IH + y) * IW + x) * IC + ic] *
                                                   W[(((oc * KD + kd) * KH + ky) * KW + kx) * IC + ic];
                                        acc += p;
                                        mag += fabs(p);
                                    }
                                }
                        double d = fabs(O[(((n * OD + od) * OH + oy) * OW + ox) * OC + oc] - acc);
                        if (!(d <= maxd)) maxd = d; /* NaN propagates */
                        if (mag > maxabs) maxabs = mag;
                    }
    /* fp32: a few ulps of the magnitude; fp16: the accumulator and output
     * round at every step (ulp 2^-10 relative, K + 2 roundings) */
    int64_t K = KD * KH * KW * IC;
    *bound = maxabs * (t == CTOSA_DTYPE_FP16 ? (double)(K + 2) * 0x1p-10 : 1e-6);
    kt_free_all();
    return maxd;
}

static void test_conv3d(void) {
    /* depth padding and stride */
    double bound, d;
    d = conv3d_case(CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, 1, 5, 5, 4, 3, 5, 2, 3, 2,
                    (const int32_t[]){1, 0, 1, 1, 0, 1}, (const int32_t[]){2, 1, 1},
                    (const int32_t[]){1, 1, 2}, false, &bound);
    CHECK_MSG(d <= bound, "max diff %g (bound %g)", d, bound);
    /* Conformance cases that read past the input in the small-channel patch
     * path (it ignored the depth coordinate): kernels 1x2x1 and 1x1x2,
     * large depth dilation, padding only at the front of the depth axis. */
    static const int32_t pad1[6] = {1, 0, 0, 0, 0, 0}, st1[3] = {1, 1, 1}, dil1[3] = {7, 1, 1};
    static const int32_t pad2[6] = {9, 0, 0, 0, 0, 0}, dil2[3] = {2, 2, 1};
    static const ctosa_dtype types[3][2] = {{CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32},
                                            {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP32},
                                            {CTOSA_DTYPE_FP16, CTOSA_DTYPE_FP16}};
    for (int k = 0; k < 3; k++) {
        ctosa_dtype t = types[k][0], acc = types[k][1];
        for (int64_t oc = 1; oc <= 5; oc += 4) {
            d = conv3d_case(t, acc, 1, 6, 12, 17, 3, oc, 1, 2, 1, pad1, st1, dil1, false, &bound);
            CHECK_MSG(d <= bound, "1x2x1 %s acc %s: max diff %g (bound %g)", ctosa_dtype_short(t),
                      ctosa_dtype_short(acc), d, bound);
            printf("conv3d 1x6x12x17x3 k1x2x1 dil7x1x1 pad(1,0,0,0,0,0) %s/%s OC %lld: max |diff| %g\n",
                   ctosa_dtype_short(t), ctosa_dtype_short(acc), (long long)oc, d);
            d = conv3d_case(t, acc, 1, 6, 12, 17, 3, oc, 1, 1, 2, pad2, st1, dil2, true, &bound);
            CHECK_MSG(d <= bound, "1x1x2 %s acc %s: max diff %g (bound %g)", ctosa_dtype_short(t),
                      ctosa_dtype_short(acc), d, bound);
            printf("conv3d 1x6x12x17x3 k1x1x2 dil2x2x1 pad(9,0,0,0,0,0) %s/%s OC %lld: max |diff| %g\n",
                   ctosa_dtype_short(t), ctosa_dtype_short(acc), (long long)oc, d);
        }
    }
    /* batch > 1 walks the pixel index across the depth and batch borders */
    d = conv3d_case(CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP32, 2, 3, 4, 5, 2, 3, 2, 2, 2,
                    (const int32_t[]){0, 3, 1, 0, 2, 1}, (const int32_t[]){1, 3, 1},
                    (const int32_t[]){2, 1, 3}, false, &bound);
    CHECK_MSG(d <= bound, "batch 2: max diff %g (bound %g)", d, bound);
}

static void test_fp16_accumulate(void) {
    /* fp16 accumulation rounds every step: 2048 + 1 + 1 ... stays 2048 in
     * fp16 (ulp 2), while fp32 accumulation reaches 2048 + 8 */
    itensor *in = KT_T(FP16, 4, 1, 1, 1, 9), *w = KT_T(FP16, 4, 1, 1, 1, 9);
    itensor *b = KT_T(FP16, 1, 1), *out = KT_T(FP16, 4, 1, 1, 1, 1);
    float *I = in->data, *W = w->data;
    I[0] = 2048;
    W[0] = 1;
    for (int i = 1; i < 9; i++) I[i] = W[i] = 1;
    itensor *ins[5] = {in, w, b, KT_T(FP16, 1, 1), KT_T(FP16, 1, 1)};
    ctosa_attr a = {0};
    a.acc_type = CTOSA_DTYPE_FP16;
    a.pad = KT_I32S(0, 0, 0, 0);
    a.stride = KT_I32S(1, 1);
    a.dilation = KT_I32S(1, 1);
    CHECK_OK(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out));
    CHECK(((float *)out->data)[0] == 2048.0f);
    a.acc_type = CTOSA_DTYPE_FP32;
    CHECK_OK(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out));
    CHECK(((float *)out->data)[0] == 2056.0f);
    kt_free_all();
}

static void test_conv_errors(void) {
    itensor *in = KT_T(INT8, 4, 1, 4, 4, 2), *w = KT_T(INT8, 4, 3, 3, 3, 2), *b = KT_T(INT32, 1, 3);
    itensor *out = KT_T(INT32, 4, 1, 2, 2, 3);
    itensor *ins[5] = {in, w, b, kt_scalar_i(CTOSA_DTYPE_INT8, 0), kt_scalar_i(CTOSA_DTYPE_INT8, 0)};
    ctosa_attr a = {0};
    a.acc_type = CTOSA_DTYPE_INT32;
    a.pad = KT_I32S(0, 0, 0, 0);
    a.stride = KT_I32S(1, 1);
    a.dilation = KT_I32S(1, 1);
    CHECK_OK(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out));
    a.stride = KT_I32S(0, 1);
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "stride");
    a.stride = KT_I32S(2, 2); /* (4-1-2)/2 is not exact */
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "multiple");
    a.stride = KT_I32S(1, 1);
    a.pad = KT_I32S(-1, 0, 0, 0);
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "pad");
    a.pad = KT_I32S(0, 0, 0);
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "pad");
    a.pad = KT_I32S(0, 0, 0, 0);
    a.acc_type = CTOSA_DTYPE_INT48;
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "acc_type");
    a.acc_type = CTOSA_DTYPE_INT32;
    /* output shape inconsistent with the weights */
    itensor *bad_out = KT_T(INT32, 4, 1, 3, 2, 3);
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &bad_out), CTOSA_ERR_INVALID, "height");
    itensor *bad_w = KT_T(INT8, 4, 3, 3, 3, 5);
    ins[1] = bad_w;
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "weight");
    ins[1] = w;
    /* zero point on a non-int8 weight */
    itensor *in16 = KT_T(INT16, 4, 1, 4, 4, 2), *out48 = KT_T(INT48, 4, 1, 2, 2, 3), *b48 = KT_T(INT48, 1, 3);
    itensor *ins16[5] = {in16, w, b48, kt_scalar_i(CTOSA_DTYPE_INT16, 1), kt_scalar_i(CTOSA_DTYPE_INT8, 0)};
    a.acc_type = CTOSA_DTYPE_INT48;
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins16, 1, &out48), CTOSA_ERR_INVALID,
              "input_zp");
    /* int48 bias add overflow is a REQUIRE failure */
    ins16[3] = kt_scalar_i(CTOSA_DTYPE_INT16, 0);
    ((int16_t *)in16->data)[0] = 1000;
    ((int8_t *)w->data)[0] = 100;
    for (int i = 0; i < 3; i++) ((int64_t *)b48->data)[i] = (INT64_C(1) << 47) - 1;
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins16, 1, &out48), CTOSA_ERR_INVALID,
              "REQUIRE");
    kt_free_all();
}

static void test_int32_overflow(void) {
    /* 1x1 conv with K = 40000 of (-128 - 127) * (-128 - 127): the exact sum
     * 40000 * 65025 passes int32 -> REQUIRE error, not a wrapped value */
    int64_t K = 40000;
    itensor *in = KT_T(INT8, 4, 1, 1, 1, K), *w = KT_T(INT8, 4, 1, 1, 1, K), *b = KT_T(INT32, 1, 1);
    itensor *out = KT_T(INT32, 4, 1, 1, 1, 1);
    memset(in->data, 0x80, (size_t)K);
    memset(w->data, 0x80, (size_t)K);
    itensor *ins[5] = {in, w, b, kt_scalar_i(CTOSA_DTYPE_INT8, 127), kt_scalar_i(CTOSA_DTYPE_INT8, 127)};
    ctosa_attr a = {0};
    a.acc_type = CTOSA_DTYPE_INT32;
    a.pad = KT_I32S(0, 0, 0, 0);
    a.stride = KT_I32S(1, 1);
    a.dilation = KT_I32S(1, 1);
    CHECK_ERR(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out), CTOSA_ERR_INVALID, "overflow");
    /* 30000 terms fit: exact value */
    itensor *in2 = KT_T(INT8, 4, 1, 1, 1, 30000), *w2 = KT_T(INT8, 4, 1, 1, 1, 30000);
    memset(in2->data, 0x80, 30000);
    memset(w2->data, 0x80, 30000);
    ins[0] = in2;
    ins[1] = w2;
    CHECK_OK(kt_run(interp_k_CONV2D, CTOSA_OP_CONV2D, &a, 5, ins, 1, &out));
    CHECK(((int32_t *)out->data)[0] == 30000 * 65025);
    kt_free_all();
}

static void test_matmul(void) {
    for (int it = 0; it < 3; it++) {
        int64_t N = 2, H = 5 + it * 7, C = 3 + it * 11, W = 17 + it * 4;
        itensor *A = KT_T(FP32, 3, N, H, C), *B = KT_T(FP32, 3, N, C, W), *O = KT_T(FP32, 3, N, H, W);
        fill(A, 0, 1);
        fill(B, 0, 1);
        itensor *ins[4] = {A, B, KT_T(FP32, 1, 1), KT_T(FP32, 1, 1)};
        CHECK_OK(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, ins, 1, &O));
        int bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double s = 0;
                    for (int64_t c = 0; c < C; c++)
                        s += (double)((float *)A->data)[(n * H + h) * C + c] *
                             ((float *)B->data)[(n * C + c) * W + w];
                    if (fabs(((float *)O->data)[(n * H + h) * W + w] - s) > 1e-4) bad++;
                }
        CHECK_MSG(bad == 0, "fp32 matmul: %d mismatches", bad);
        /* int8 with zero points */
        itensor *Ai = KT_T(INT8, 3, N, H, C), *Bi = KT_T(INT8, 3, N, C, W), *Oi = KT_T(INT32, 3, N, H, W);
        fill(Ai, -128, 127);
        fill(Bi, -128, 127);
        itensor *insi[4] = {Ai, Bi, kt_scalar_i(CTOSA_DTYPE_INT8, -128), kt_scalar_i(CTOSA_DTYPE_INT8, 3)};
        CHECK_OK(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, insi, 1, &Oi));
        bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    int64_t s = 0;
                    for (int64_t c = 0; c < C; c++)
                        s += (int64_t)(((int8_t *)Ai->data)[(n * H + h) * C + c] + 128) *
                             (((int8_t *)Bi->data)[(n * C + c) * W + w] - 3);
                    if (((int32_t *)Oi->data)[(n * H + h) * W + w] != s) bad++;
                }
        CHECK_MSG(bad == 0, "int8 matmul: %d mismatches", bad);
        /* int16 -> int48 */
        itensor *Ah = KT_T(INT16, 3, N, H, C), *Bh = KT_T(INT16, 3, N, C, W), *Oh = KT_T(INT48, 3, N, H, W);
        fill(Ah, -32768, 32767);
        fill(Bh, -32768, 32767);
        itensor *insh[4] = {Ah, Bh, kt_scalar_i(CTOSA_DTYPE_INT16, 0), kt_scalar_i(CTOSA_DTYPE_INT16, 0)};
        CHECK_OK(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, insh, 1, &Oh));
        bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    int64_t s = 0;
                    for (int64_t c = 0; c < C; c++)
                        s += (int64_t)((int16_t *)Ah->data)[(n * H + h) * C + c] *
                             ((int16_t *)Bh->data)[(n * C + c) * W + w];
                    if (((int64_t *)Oh->data)[(n * H + h) * W + w] != s) bad++;
                }
        CHECK_MSG(bad == 0, "int16 matmul: %d mismatches", bad);
        kt_free_all();
    }
    /* int8 with K = 600 at extreme zero points: three exact fp32 chunks */
    {
        int64_t H = 3, C = 600, W = 5;
        itensor *Ai = KT_T(INT8, 3, 1, H, C), *Bi = KT_T(INT8, 3, 1, C, W), *Oi = KT_T(INT32, 3, 1, H, W);
        fill(Ai, -128, 127);
        fill(Bi, -128, 127);
        itensor *insi[4] = {Ai, Bi, kt_scalar_i(CTOSA_DTYPE_INT8, 127), kt_scalar_i(CTOSA_DTYPE_INT8, -128)};
        CHECK_OK(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, insi, 1, &Oi));
        int bad = 0;
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) {
                int64_t sum = 0;
                for (int64_t c = 0; c < C; c++)
                    sum += (int64_t)(((int8_t *)Ai->data)[h * C + c] - 127) *
                           (((int8_t *)Bi->data)[c * W + w] + 128);
                if (((int32_t *)Oi->data)[h * W + w] != sum) bad++;
            }
        CHECK_MSG(bad == 0, "int8 K=600 matmul: %d mismatches", bad);
        /* K = 40000 of 255 * 255 passes int32: REQUIRE error */
        itensor *Ab = KT_T(INT8, 3, 1, 1, 40000), *Bb = KT_T(INT8, 3, 1, 40000, 1),
                *Ob = KT_T(INT32, 3, 1, 1, 1);
        memset(Ab->data, 0x80, 40000);
        memset(Bb->data, 0x80, 40000);
        itensor *insb[4] = {Ab, Bb, kt_scalar_i(CTOSA_DTYPE_INT8, 127), kt_scalar_i(CTOSA_DTYPE_INT8, 127)};
        CHECK_ERR(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, insb, 1, &Ob), CTOSA_ERR_INVALID,
                  "overflow");
        kt_free_all();
    }
    /* errors: zp on int16, shape mismatch */
    itensor *A = KT_T(INT16, 3, 1, 2, 3), *B = KT_T(INT16, 3, 1, 3, 2), *O = KT_T(INT48, 3, 1, 2, 2);
    itensor *ins[4] = {A, B, kt_scalar_i(CTOSA_DTYPE_INT16, 1), kt_scalar_i(CTOSA_DTYPE_INT16, 0)};
    CHECK_ERR(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, ins, 1, &O), CTOSA_ERR_INVALID, "A_zp");
    itensor *O2 = KT_T(INT48, 3, 1, 2, 3);
    ins[2] = kt_scalar_i(CTOSA_DTYPE_INT16, 0);
    CHECK_ERR(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, ins, 1, &O2), CTOSA_ERR_INVALID, "shapes");
    /* empty dimension: C = 0 gives zeros; H = 0 gives nothing */
    itensor *Ae = KT_T(FP32, 3, 1, 2, 0), *Be = KT_T(FP32, 3, 1, 0, 3), *Oe = KT_T(FP32, 3, 1, 2, 3);
    ((float *)Oe->data)[0] = 5;
    itensor *inse[4] = {Ae, Be, KT_T(FP32, 1, 1), KT_T(FP32, 1, 1)};
    CHECK_OK(kt_run(interp_k_MATMUL, CTOSA_OP_MATMUL, NULL, 4, inse, 1, &Oe));
    CHECK(((float *)Oe->data)[0] == 0.0f);
    kt_free_all();
}

int main(void) {
    /* every case twice: the fast paths, then the plain reference loops */
    for (int ref = 0; ref < 2; ref++) {
        kt_reference = ref;
        RUN(test_conv2d);
        RUN(test_depthwise);
        RUN(test_transpose);
        RUN(test_conv3d);
        RUN(test_fp16_accumulate);
        RUN(test_conv_errors);
        RUN(test_int32_overflow);
        RUN(test_matmul);
    }
    kt_free_all();
    return th_finish();
}
