/* test_kernels_pool.c - AVG_POOL2D, MAX_POOL2D, ARGMAX with hand-computed
 * values (integer rounding, zero points, NaN modes) and error cases. */
#include <math.h>

#include "harness.h"
#include "kernels_testutil.h"

static ctosa_error *pool(interp_kernel_fn fn, itensor *in, itensor *out, int ky, int kx, int sy, int sx,
                         const int32_t *pad, ctosa_dtype acc, ctosa_nan_mode nm, int64_t izp, int64_t ozp) {
    ctosa_attr a = {0};
    int32_t k[2] = {ky, kx}, s[2] = {sy, sx};
    a.kernel = (ctosa_i32s){k, 2};
    a.stride = (ctosa_i32s){s, 2};
    a.pad = (ctosa_i32s){pad, 4};
    a.acc_type = acc;
    a.nan_mode = nm;
    bool isf = in->dtype == CTOSA_DTYPE_FP32 || in->dtype == CTOSA_DTYPE_FP16;
    itensor *ins[3] = {in, isf ? kt_new(in->dtype, 1, KT_DIMS(1)) : kt_scalar_i(in->dtype, izp),
                       isf ? kt_new(in->dtype, 1, KT_DIMS(1)) : kt_scalar_i(in->dtype, ozp)};
    return kt_run(fn, CTOSA_OP_AVG_POOL2D, &a, fn == interp_k_MAX_POOL2D ? 1 : 3, ins, 1, &out);
}

static const int32_t P0[4] = {0, 0, 0, 0}, P1[4] = {1, 1, 1, 1};

static void test_avg_int(void) {
    /* 1x3x3x1 int8, kernel 2x2 stride 1 pad 0 -> 2x2 */
    itensor *in = KT_T(INT8, 4, 1, 3, 3, 1), *out = KT_T(INT8, 4, 1, 2, 2, 1);
    int8_t v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10};
    memcpy(in->data, v, 9);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, 0, 0));
    int8_t *o = out->data;
    /* sums 12, 16, 24, 29 over 4: 3, 4, 6, 7.25 -> 7 */
    CHECK(o[0] == 3 && o[1] == 4 && o[2] == 6 && o[3] == 7);
    /* ties: 1,2,3,4 -> 2.5; reciprocal scaling rounds half up to 3 */
    int8_t t[9] = {1, 2, 0, 3, 4, 0, -1, -2, -3};
    memcpy(in->data, t, 9);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, 0, 0));
    o = out->data;
    /* windows: {1,2,3,4}=2.5->3, {2,0,4,0}=1.5->2, {3,4,-1,-2}=1->1, {4,0,-2,-3}=-0.25->0 */
    CHECK(o[0] == 3 && o[1] == 2 && o[2] == 1 && o[3] == 0);
    /* padding is not counted: 3x3 kernel pad 1 on the corner averages 4 values */
    itensor *out3 = KT_T(INT8, 4, 1, 3, 3, 1);
    memcpy(in->data, v, 9);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out3, 3, 3, 1, 1, P1, CTOSA_DTYPE_INT32, 0, 0, 0));
    o = out3->data;
    CHECK(o[0] == 3); /* (1+2+4+5)/4 */
    CHECK(o[4] == 5); /* 46/9 = 5.11 */
    CHECK(o[8] == 7); /* (5+6+8+10)/4 = 7.25 */
    /* zero points at the limits and output saturation */
    int8_t z[9] = {127, 127, 127, 127, 127, 127, 127, 127, 127};
    memcpy(in->data, z, 9);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, -128, 127));
    o = out->data;
    CHECK(o[0] == 127); /* 255 + 127 saturates */
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, -128, -128));
    CHECK(((int8_t *)out->data)[0] == 127); /* 255 - 128 */
    /* int16 */
    itensor *in16 = KT_T(INT16, 4, 1, 1, 3, 1), *out16 = KT_T(INT16, 4, 1, 1, 1, 1);
    int16_t w[3] = {-32768, -32768, -32767};
    memcpy(in16->data, w, 6);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in16, out16, 1, 3, 1, 1, P0, CTOSA_DTYPE_INT32, 0, 0, 0));
    CHECK(((int16_t *)out16->data)[0] == -32768); /* -32767.67 rounds to -32768 */
    kt_free_all();
}

static void test_avg_float_and_errors(void) {
    itensor *in = KT_T(FP32, 4, 1, 2, 2, 2), *out = KT_T(FP32, 4, 1, 1, 1, 2);
    float v[8] = {1, 10, 2, 20, 3, 30, 4, INFINITY};
    memcpy(in->data, v, sizeof v);
    CHECK_OK(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_FP32, 0, 0, 0));
    CHECK(((float *)out->data)[0] == 2.5f && isinf(((float *)out->data)[1]));
    /* pad >= kernel, bad output size, zp on fp, wrong acc type */
    int32_t pbig[4] = {2, 0, 0, 0};
    CHECK_ERR(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, pbig, CTOSA_DTYPE_FP32, 0, 0, 0),
              CTOSA_ERR_INVALID, "pad");
    itensor *bad = KT_T(FP32, 4, 1, 2, 1, 2);
    CHECK_ERR(pool(interp_k_AVG_POOL2D, in, bad, 2, 2, 1, 1, P0, CTOSA_DTYPE_FP32, 0, 0, 0),
              CTOSA_ERR_INVALID, "height");
    CHECK_ERR(pool(interp_k_AVG_POOL2D, in, out, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, 0, 0),
              CTOSA_ERR_INVALID, "acc_type");
    CHECK_ERR(pool(interp_k_AVG_POOL2D, in, out, 0, 2, 1, 1, P0, CTOSA_DTYPE_FP32, 0, 0, 0),
              CTOSA_ERR_INVALID, "kernel");
    /* empty input height: the one output window holds only padding */
    itensor *e_in = KT_T(INT8, 4, 1, 0, 2, 1), *e_out = KT_T(INT8, 4, 1, 1, 1, 1);
    int32_t pad11[4] = {1, 1, 0, 0};
    CHECK_ERR(pool(interp_k_AVG_POOL2D, e_in, e_out, 2, 2, 1, 1, pad11, CTOSA_DTYPE_INT32, 0, 0, 0),
              CTOSA_ERR_INVALID, "REQUIRE");
    itensor *ef_in = KT_T(FP32, 4, 1, 0, 2, 1), *ef_out = KT_T(FP32, 4, 1, 1, 1, 1);
    CHECK_OK(pool(interp_k_AVG_POOL2D, ef_in, ef_out, 2, 2, 1, 1, pad11, CTOSA_DTYPE_FP32, 0, 0, 0));
    CHECK(isnan(((float *)ef_out->data)[0]));
    itensor *i16 = KT_T(INT16, 4, 1, 2, 2, 1), *o16 = KT_T(INT16, 4, 1, 1, 1, 1);
    CHECK_ERR(pool(interp_k_AVG_POOL2D, i16, o16, 2, 2, 1, 1, P0, CTOSA_DTYPE_INT32, 0, 3, 0),
              CTOSA_ERR_INVALID, "zero");
    kt_free_all();
}

static void test_max(void) {
    itensor *in = KT_T(FP32, 4, 1, 2, 2, 3), *out = KT_T(FP32, 4, 1, 1, 1, 3);
    float v[12] = {1, NAN, NAN, 5, 2, NAN, -3, 7, NAN, 0, -1, NAN};
    memcpy(in->data, v, sizeof v);
    CHECK_OK(pool(interp_k_MAX_POOL2D, in, out, 2, 2, 1, 1, P0, 0, CTOSA_NAN_PROPAGATE, 0, 0));
    float *o = out->data;
    CHECK(o[0] == 5 && isnan(o[1]) && isnan(o[2]));
    CHECK_OK(pool(interp_k_MAX_POOL2D, in, out, 2, 2, 1, 1, P0, 0, CTOSA_NAN_IGNORE, 0, 0));
    CHECK(o[0] == 5 && o[1] == 7 && isnan(o[2])); /* all NaN stays NaN */
    /* int8 with padding: padding never wins even when all values are -128 */
    itensor *i8 = KT_T(INT8, 4, 1, 2, 2, 1), *o8 = KT_T(INT8, 4, 1, 2, 2, 1);
    memset(i8->data, 0x80, 4);
    ((int8_t *)i8->data)[3] = -5;
    int32_t pad[4] = {1, 0, 1, 0};
    CHECK_OK(pool(interp_k_MAX_POOL2D, i8, o8, 2, 2, 1, 1, pad, 0, 0, 0, 0));
    int8_t *p = o8->data;
    CHECK(p[0] == -128 && p[1] == -128 && p[2] == -128 && p[3] == -5);
    int32_t padbad[4] = {0, 0, 0, 2};
    CHECK_ERR(pool(interp_k_MAX_POOL2D, i8, o8, 2, 2, 1, 1, padbad, 0, 0, 0, 0), CTOSA_ERR_INVALID, "pad");
    kt_free_all();
}

static void test_argmax(void) {
    itensor *in = KT_T(FP32, 2, 2, 4), *out = KT_T(INT32, 1, 2);
    float v[8] = {1, NAN, 3, NAN, 2, 2, -1, 2};
    memcpy(in->data, v, sizeof v);
    ctosa_attr a = {0};
    a.axis = 1;
    a.nan_mode = CTOSA_NAN_PROPAGATE;
    CHECK_OK(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &in, 1, &out));
    int32_t *o = out->data;
    CHECK(o[0] == 1 && o[1] == 0); /* first NaN; first of equal maxima */
    a.nan_mode = CTOSA_NAN_IGNORE;
    CHECK_OK(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &in, 1, &out));
    CHECK(o[0] == 2 && o[1] == 0);
    /* axis 0 of an int8 [3,2] */
    itensor *i8 = KT_T(INT8, 2, 3, 2), *o2 = KT_T(INT32, 1, 2);
    int8_t w[6] = {-128, 5, -128, 9, -100, 9};
    memcpy(i8->data, w, 6);
    a.axis = 0;
    CHECK_OK(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &i8, 1, &o2));
    CHECK(((int32_t *)o2->data)[0] == 2 && ((int32_t *)o2->data)[1] == 1);
    /* all -inf / all NaN under IGNORE -> index 0 */
    float n4[4] = {NAN, NAN, NAN, NAN};
    itensor *fn = KT_T(FP32, 1, 4), *o0 = kt_new(CTOSA_DTYPE_INT32, 0, NULL);
    memcpy(fn->data, n4, sizeof n4);
    CHECK_OK(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &fn, 1, &o0));
    CHECK(((int32_t *)o0->data)[0] == 0);
    a.axis = 2;
    CHECK_ERR(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &in, 1, &out), CTOSA_ERR_INVALID, "axis");
    a.axis = 0;
    CHECK_ERR(kt_run(interp_k_ARGMAX, CTOSA_OP_ARGMAX, &a, 1, &in, 1, &out), CTOSA_ERR_INVALID, "dimension");
    kt_free_all();
}

int main(void) {
    RUN(test_avg_int);
    RUN(test_avg_float_and_errors);
    RUN(test_max);
    RUN(test_argmax);
    kt_free_all();
    return th_finish();
}
