/* test_kernels_misc.c - CLAMP, TABLE, ERF/SIGMOID/TANH, RESIZE, FFT2D,
 * RFFT2D against hand-computed values and naive sums. */
#include <math.h>

#include "harness.h"
#include "kernels_testutil.h"
#include "util/floatfmt.h"

static void test_clamp(void) {
    itensor *in = KT_T(INT8, 1, 5), *out = KT_T(INT8, 1, 5);
    int8_t v[5] = {-128, -6, 0, 9, 127};
    memcpy(in->data, v, 5);
    uint8_t mn[1] = {(uint8_t)-5}, mx[1] = {10};
    ctosa_attr a = {0};
    a.min_val = (ctosa_bytes){mn, 1};
    a.max_val = (ctosa_bytes){mx, 1};
    CHECK_OK(kt_run(interp_k_CLAMP, CTOSA_OP_CLAMP, &a, 1, &in, 1, &out));
    int8_t *o = out->data;
    CHECK(o[0] == -5 && o[1] == -5 && o[2] == 0 && o[3] == 9 && o[4] == 10);
    /* fp16 bounds are half-precision bytes: 0x3C00 = 1.0, 0xBC00 = -1.0 */
    itensor *f = KT_T(FP16, 1, 4), *fo = KT_T(FP16, 1, 4);
    float fv[4] = {-3, 0.5f, NAN, 2};
    memcpy(f->data, fv, sizeof fv);
    uint8_t hmin[2] = {0x00, 0xBC}, hmax[2] = {0x00, 0x3C};
    a.min_val = (ctosa_bytes){hmin, 2};
    a.max_val = (ctosa_bytes){hmax, 2};
    a.nan_mode = CTOSA_NAN_PROPAGATE;
    CHECK_OK(kt_run(interp_k_CLAMP, CTOSA_OP_CLAMP, &a, 1, &f, 1, &fo));
    float *p = fo->data;
    CHECK(p[0] == -1 && p[1] == 0.5f && isnan(p[2]) && p[3] == 1);
    a.nan_mode = CTOSA_NAN_IGNORE;
    CHECK_OK(kt_run(interp_k_CLAMP, CTOSA_OP_CLAMP, &a, 1, &f, 1, &fo));
    CHECK(p[2] == -1);
    /* errors: max < min, short attribute */
    a.min_val = (ctosa_bytes){hmax, 2};
    a.max_val = (ctosa_bytes){hmin, 2};
    CHECK_ERR(kt_run(interp_k_CLAMP, CTOSA_OP_CLAMP, &a, 1, &f, 1, &fo), CTOSA_ERR_INVALID, "max_val");
    a.max_val = (ctosa_bytes){hmin, 1};
    CHECK_ERR(kt_run(interp_k_CLAMP, CTOSA_OP_CLAMP, &a, 1, &f, 1, &fo), CTOSA_ERR_INVALID, "bytes");
    kt_free_all();
}

static void test_table(void) {
    itensor *in = KT_T(INT8, 1, 3), *tab = KT_T(INT8, 1, 256), *out = KT_T(INT8, 1, 3);
    for (int i = 0; i < 256; i++) ((int8_t *)tab->data)[i] = (int8_t)(255 - i);
    int8_t v[3] = {-128, 0, 127};
    memcpy(in->data, v, 3);
    itensor *ins[2] = {in, tab};
    CHECK_OK(kt_run(interp_k_TABLE, CTOSA_OP_TABLE, NULL, 2, ins, 1, &out));
    int8_t *o = out->data;
    CHECK(o[0] == (int8_t)255 && o[1] == (int8_t)127 && o[2] == 0);
    /* int16: 513 entries, linear interpolation in 1/128 steps */
    itensor *i16 = KT_T(INT16, 1, 5), *t16 = KT_T(INT16, 1, 513), *o32 = KT_T(INT32, 1, 5);
    for (int i = 0; i < 513; i++) ((int16_t *)t16->data)[i] = (int16_t)(i * 10 - 2000);
    int16_t w[5] = {-32768, -32767, 64, 32767, 0};
    memcpy(i16->data, w, sizeof w);
    itensor *ins16[2] = {i16, t16};
    CHECK_OK(kt_run(interp_k_TABLE, CTOSA_OP_TABLE, NULL, 2, ins16, 1, &o32));
    int32_t *r = o32->data;
    /* value v: index (v+32768)>>7, frac v&127: base*128 + slope*frac */
    CHECK(r[0] == -2000 * 128);
    CHECK(r[1] == -2000 * 128 + 10 * 1);
    CHECK(r[2] == (256 * 10 - 2000) * 128 + 10 * 64);
    CHECK(r[3] == (511 * 10 - 2000) * 128 + 10 * 127);
    CHECK(r[4] == (256 * 10 - 2000) * 128);
    /* slope beyond int16 is a REQUIRE failure */
    ((int16_t *)t16->data)[10] = 32767;
    ((int16_t *)t16->data)[11] = -32768;
    CHECK_ERR(kt_run(interp_k_TABLE, CTOSA_OP_TABLE, NULL, 2, ins16, 1, &o32), CTOSA_ERR_INVALID, "differ");
    itensor *short_tab = KT_T(INT8, 1, 255);
    ins[1] = short_tab;
    CHECK_ERR(kt_run(interp_k_TABLE, CTOSA_OP_TABLE, NULL, 2, ins, 1, &out), CTOSA_ERR_INVALID, "256");
    kt_free_all();
}

static void test_float_activations(void) {
    itensor *in = KT_T(FP32, 1, 5), *out = KT_T(FP32, 1, 5);
    float v[5] = {0, 1, -2, INFINITY, NAN};
    memcpy(in->data, v, sizeof v);
    CHECK_OK(kt_run(interp_k_SIGMOID, CTOSA_OP_SIGMOID, NULL, 1, &in, 1, &out));
    float *o = out->data;
    CHECK(o[0] == 0.5f && fabsf(o[1] - 0.7310586f) < 1e-7f && fabsf(o[2] - 0.1192029f) < 1e-7f &&
          o[3] == 1.0f && isnan(o[4]));
    CHECK_OK(kt_run(interp_k_TANH, CTOSA_OP_TANH, NULL, 1, &in, 1, &out));
    CHECK(o[0] == 0 && fabsf(o[1] - 0.7615942f) < 1e-7f && o[3] == 1.0f);
    CHECK_OK(kt_run(interp_k_ERF, CTOSA_OP_ERF, NULL, 1, &in, 1, &out));
    CHECK(fabsf(o[1] - 0.8427008f) < 1e-7f && fabsf(o[2] + 0.9953223f) < 1e-7f && o[3] == 1.0f);
    /* fp16 results are rounded to fp16 */
    itensor *h = KT_T(FP16, 1, 1), *ho = KT_T(FP16, 1, 1);
    ((float *)h->data)[0] = 1;
    CHECK_OK(kt_run(interp_k_SIGMOID, CTOSA_OP_SIGMOID, NULL, 1, &h, 1, &ho));
    CHECK(((float *)ho->data)[0] == ff_round_to(CTOSA_DTYPE_FP16, 0.7310586f));
    itensor *bad = KT_T(INT8, 1, 5);
    CHECK_ERR(kt_run(interp_k_TANH, CTOSA_OP_TANH, NULL, 1, &bad, 1, &out), CTOSA_ERR_INVALID, "floating");
    kt_free_all();
}

static ctosa_error *resize(itensor *in, itensor *out, ctosa_resize_mode mode, const int64_t *sc,
                           const int64_t *off, const int64_t *bor) {
    itensor *s = KT_T(SHAPE, 1, 4), *of = KT_T(SHAPE, 1, 2), *b = KT_T(SHAPE, 1, 2);
    memcpy(s->data, sc, 32);
    memcpy(of->data, off, 16);
    memcpy(b->data, bor, 16);
    itensor *ins[4] = {in, s, of, b};
    ctosa_attr a = {0};
    a.mode = mode;
    return kt_run(interp_k_RESIZE, CTOSA_OP_RESIZE, &a, 4, ins, 1, &out);
}

static void test_resize(void) {
    /* 2x upscale of a 1x2x2x1 int8 image, align-corners-off style:
     * scale 4/2, offset -1, border 1 -> 4x4 */
    itensor *in = KT_T(INT8, 4, 1, 2, 2, 1), *out = KT_T(INT32, 4, 1, 4, 4, 1);
    int8_t v[4] = {0, 40, 80, 120};
    memcpy(in->data, v, 4);
    const int64_t sc[4] = {4, 2, 4, 2}, off[2] = {-1, -1}, bor[2] = {1, 1};
    CHECK_OK(resize(in, out, CTOSA_RESIZE_BILINEAR, sc, off, bor));
    int32_t *o = out->data;
    /* output scaled by 4*4 = 16; x positions -0.25, 0.25, 0.75, 1.25 */
    CHECK(o[0] == 0);           /* clamped corner */
    CHECK(o[1] == 40 * 16 / 4); /* row 0: 0*0.75 + 40*0.25 = 10 -> 160 */
    CHECK(o[2] == 30 * 16);
    CHECK(o[3] == 40 * 16);
    CHECK(o[5] ==
          (int32_t)((0 * 0.75 * 0.75 + 40 * 0.75 * 0.25 + 80 * 0.25 * 0.75 + 120 * 0.25 * 0.25) * 16));
    CHECK(o[15] == 120 * 16);
    itensor *on = KT_T(INT8, 4, 1, 4, 4, 1);
    CHECK_OK(resize(in, on, CTOSA_RESIZE_NEAREST, sc, off, bor));
    int8_t *n = on->data;
    /* rx*2 >= scale_n picks the right neighbour: -0.25->0, 0.25->0, 0.75->1, 1.25->1 */
    CHECK(n[0] == 0 && n[1] == 0 && n[2] == 40 && n[3] == 40 && n[8] == 80 && n[15] == 120);
    /* float bilinear */
    itensor *fi = KT_T(FP32, 4, 1, 2, 2, 1), *fo = KT_T(FP32, 4, 1, 4, 4, 1);
    float fv[4] = {0, 1, 2, 3};
    memcpy(fi->data, fv, sizeof fv);
    CHECK_OK(resize(fi, fo, CTOSA_RESIZE_BILINEAR, sc, off, bor));
    float *f = fo->data;
    CHECK(f[0] == 0 && f[1] == 0.25f && f[5] == 0.75f && f[15] == 3);
    /* errors: bad output size, scale too large */
    itensor *bad = KT_T(INT32, 4, 1, 5, 4, 1);
    CHECK_ERR(resize(in, bad, CTOSA_RESIZE_BILINEAR, sc, off, bor), CTOSA_ERR_INVALID, "height");
    const int64_t big[4] = {4096, 2, 4, 2};
    CHECK_ERR(resize(in, out, CTOSA_RESIZE_BILINEAR, big, off, bor), CTOSA_ERR_INVALID, "2048");
    CHECK_ERR(resize(in, on, CTOSA_RESIZE_BILINEAR, sc, off, bor), CTOSA_ERR_INVALID, "int32");
    kt_free_all();
}

static void test_fft(void) {
    int64_t N = 2, H = 4, W = 8;
    itensor *re = KT_T(FP32, 3, N, H, W), *im = KT_T(FP32, 3, N, H, W);
    itensor *orr = KT_T(FP32, 3, N, H, W), *oi = KT_T(FP32, 3, N, H, W);
    for (uint64_t i = 0; i < re->count; i++) {
        ((float *)re->data)[i] = kt_randf();
        ((float *)im->data)[i] = kt_randf();
    }
    for (int inv = 0; inv < 2; inv++) {
        ctosa_attr a = {0};
        a.inverse = inv;
        itensor *ins[2] = {re, im}, *outs[2] = {orr, oi};
        CHECK_OK(kt_run(interp_k_FFT2D, CTOSA_OP_FFT2D, &a, 2, ins, 2, outs));
        double sign = inv ? -1 : 1;
        int bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t oy = 0; oy < H; oy++)
                for (int64_t ox = 0; ox < W; ox++) {
                    double sr = 0, si = 0;
                    for (int64_t iy = 0; iy < H; iy++)
                        for (int64_t ix = 0; ix < W; ix++) {
                            double ang =
                                sign * 2 * M_PI * ((double)((iy * oy) % H) / H + (double)((ix * ox) % W) / W);
                            double vr = ((float *)re->data)[(n * H + iy) * W + ix],
                                   vi = ((float *)im->data)[(n * H + iy) * W + ix];
                            sr += vr * cos(ang) + vi * sin(ang);
                            si += -vr * sin(ang) + vi * cos(ang);
                        }
                    size_t i = (size_t)((n * H + oy) * W + ox);
                    if (fabs(((float *)orr->data)[i] - sr) > 1e-4 || fabs(((float *)oi->data)[i] - si) > 1e-4)
                        bad++;
                }
        CHECK_MSG(bad == 0, "FFT2D inverse=%d: %d mismatches", inv, bad);
    }
    /* RFFT2D: imaginary parts at the purely real bins are exactly zero */
    itensor *rr = KT_T(FP32, 3, 1, H, W / 2 + 1), *ri = KT_T(FP32, 3, 1, H, W / 2 + 1),
            *rin = KT_T(FP32, 3, 1, H, W);
    for (uint64_t i = 0; i < rin->count; i++) ((float *)rin->data)[i] = kt_randf();
    itensor *routs[2] = {rr, ri};
    CHECK_OK(kt_run(interp_k_RFFT2D, CTOSA_OP_RFFT2D, NULL, 1, &rin, 2, routs));
    float *I = ri->data, *R = rr->data;
    CHECK(I[0] == 0 && I[W / 2] == 0 && I[(H / 2) * (W / 2 + 1)] == 0);
    double s = 0;
    for (uint64_t i = 0; i < rin->count; i++) s += ((float *)rin->data)[i];
    CHECK(fabs(R[0] - s) < 1e-5);
    itensor *np2 = KT_T(FP32, 3, 1, 3, 4);
    itensor *o3[2] = {KT_T(FP32, 3, 1, 3, 3), KT_T(FP32, 3, 1, 3, 3)};
    CHECK_ERR(kt_run(interp_k_RFFT2D, CTOSA_OP_RFFT2D, NULL, 1, &np2, 2, o3), CTOSA_ERR_INVALID, "power");
    kt_free_all();
}

int main(void) {
    RUN(test_clamp);
    RUN(test_table);
    RUN(test_float_activations);
    RUN(test_resize);
    RUN(test_fft);
    kt_free_all();
    return th_finish();
}
