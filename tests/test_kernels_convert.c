/* test_kernels_convert.c - RESCALE and CAST against hand-computed values
 * from the TOSA 1.0 pseudocode. */
#include <math.h>

#include "harness.h"
#include "kernels_testutil.h"
#include "util/floatfmt.h"

/* Runs RESCALE on n values of type ti with one multiplier/shift. */
typedef struct rs_opts {
    ctosa_dtype ti, to;
    bool scale32, per_channel, iu, ou;
    ctosa_rounding_mode rm;
    int64_t izp, ozp;
} rs_opts;

static ctosa_error *rescale(const rs_opts *p, uint32_t rank, const int64_t *dims, const int64_t *vals,
                            uint32_t nc, const int64_t *mult, const int64_t *shift, int64_t *res) {
    itensor *in = kt_new(p->ti, rank, dims), *out = kt_new(p->to, rank, dims);
    for (uint64_t i = 0; i < in->count; i++) im_store_i(p->ti, in->data, i, vals[i]);
    itensor *m = kt_new(p->scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16, 1, KT_DIMS(nc));
    itensor *s = kt_new(CTOSA_DTYPE_INT8, 1, KT_DIMS(nc));
    for (uint32_t c = 0; c < nc; c++) {
        im_store_i(m->dtype, m->data, c, mult[c]);
        ((int8_t *)s->data)[c] = (int8_t)shift[c];
    }
    itensor *ins[5] = {in, m, s, kt_scalar_i(p->ti, p->izp), kt_scalar_i(p->to, p->ozp)};
    ctosa_attr a = {0};
    a.scale32 = p->scale32;
    a.per_channel = p->per_channel;
    a.input_unsigned = p->iu;
    a.output_unsigned = p->ou;
    a.rounding_mode = p->rm ? p->rm : CTOSA_ROUND_SINGLE;
    ctosa_error *e = kt_run(interp_k_RESCALE, CTOSA_OP_RESCALE, &a, 5, ins, 1, &out);
    if (!e && res)
        for (uint64_t i = 0; i < out->count; i++) res[i] = im_load_i(p->to, out->data, i);
    return e;
}

/* int64 version of the pseudocode, written independently of int_math.h */
static int64_t ref_scale32(int64_t v, int64_t m, int s, bool dbl) {
    __int128 r = (__int128)v * m + ((__int128)1 << (s - 1));
    if (dbl && s > 31) r += v >= 0 ? ((__int128)1 << 30) : -((__int128)1 << 30);
    /* floor division by 2^s */
    __int128 d = (__int128)1 << s;
    __int128 q = r / d;
    if (q * d > r) q--;
    return (int64_t)q;
}

static void test_rescale_rounding(void) {
    int64_t r[8];
    rs_opts p = {CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    /* scale 0.5: ties round half up (towards +inf) */
    int64_t v1[6] = {3, -3, 1, -1, 5, -5};
    CHECK_OK(rescale(&p, 1, KT_DIMS(6), v1, 1, (int64_t[]){1 << 30}, (int64_t[]){31}, r));
    CHECK(r[0] == 2 && r[1] == -1 && r[2] == 1 && r[3] == 0 && r[4] == 3 && r[5] == -2);
    /* single vs double rounding with shift 40 (scale 2^-10) */
    int64_t v2[4] = {511, -512, 512, -513};
    CHECK_OK(rescale(&p, 1, KT_DIMS(4), v2, 1, (int64_t[]){1 << 30}, (int64_t[]){40}, r));
    CHECK(r[0] == 0 && r[1] == 0 && r[2] == 1 && r[3] == -1);
    p.rm = CTOSA_ROUND_DOUBLE;
    CHECK_OK(rescale(&p, 1, KT_DIMS(4), v2, 1, (int64_t[]){1 << 30}, (int64_t[]){40}, r));
    CHECK(r[0] == 1 && r[1] == -1 && r[2] == 1 && r[3] == -1);
    /* double rounding changes nothing when shift <= 31 */
    CHECK_OK(rescale(&p, 1, KT_DIMS(6), v1, 1, (int64_t[]){1 << 30}, (int64_t[]){31}, r));
    CHECK(r[0] == 2 && r[1] == -1 && r[3] == 0);
    p.rm = CTOSA_ROUND_INEXACT; /* implemented as single rounding */
    CHECK_OK(rescale(&p, 1, KT_DIMS(4), v2, 1, (int64_t[]){1 << 30}, (int64_t[]){40}, r));
    CHECK(r[0] == 0 && r[1] == 0);
}

static void test_rescale_random_vs_ref(void) {
    /* int32 -> int32 with random multipliers and large shifts */
    int bad = 0;
    for (int it = 0; it < 200; it++) {
        bool dbl = it & 1;
        rs_opts p = {CTOSA_DTYPE_INT32,
                     CTOSA_DTYPE_INT32,
                     true,
                     false,
                     false,
                     false,
                     dbl ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE,
                     0,
                     0};
        int64_t m = kt_randi(0, INT32_MAX), s = kt_randi(32, 62);
        int64_t v[16], r[16];
        for (int i = 0; i < 16; i++) v[i] = (int64_t)(int32_t)kt_rand() * (i & 1 ? -1 : 1);
        v[0] = INT32_MIN;
        v[1] = INT32_MAX;
        ctosa_error *e = rescale(&p, 1, KT_DIMS(16), v, 1, &m, &s, r);
        if (e) {
            bad++;
            ctosa_error_free(e);
            continue;
        }
        for (int i = 0; i < 16; i++) {
            int64_t want = ref_scale32(v[i], m, (int)s, dbl);
            if (want > INT32_MAX) want = INT32_MAX;
            if (want < INT32_MIN) want = INT32_MIN;
            if (r[i] != want) bad++;
        }
        kt_free_all();
    }
    CHECK_MSG(bad == 0, "%d mismatches", bad);
}

static void test_rescale_zp_saturation(void) {
    int64_t r[4];
    /* saturation int32 -> int8 at scale 1 */
    rs_opts p = {CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT8, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_OK(rescale(&p, 1, KT_DIMS(4), (int64_t[]){100000, -100000, 127, -128}, 1, (int64_t[]){1 << 30},
                     (int64_t[]){30}, r));
    CHECK(r[0] == 127 && r[1] == -128 && r[2] == 127 && r[3] == -128);
    /* zero points at the int8 limits */
    p = (rs_opts){
        CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, true, false, false, false, CTOSA_ROUND_SINGLE, -128, 127};
    CHECK_OK(
        rescale(&p, 1, KT_DIMS(3), (int64_t[]){127, -128, 0}, 1, (int64_t[]){1 << 30}, (int64_t[]){31}, r));
    /* (255*0.5 -> 128) + 127 -> 127 (clip); 0 + 127; (128*0.5=64)+127 -> 127 */
    CHECK(r[0] == 127 && r[1] == 127 && r[2] == 127);
    p.ozp = -128;
    CHECK_OK(
        rescale(&p, 1, KT_DIMS(3), (int64_t[]){127, -128, 0}, 1, (int64_t[]){1 << 30}, (int64_t[]){31}, r));
    CHECK(r[0] == 0 && r[1] == -128 && r[2] == -64);
}

static void test_rescale_unsigned(void) {
    int64_t r[3];
    /* uint8 input (stored int8) with zp 128 -> int8 */
    rs_opts p = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, true, false, true, false, CTOSA_ROUND_SINGLE, -128, 0};
    CHECK_OK(
        rescale(&p, 1, KT_DIMS(3), (int64_t[]){-1, 0, -128}, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, r));
    CHECK(r[0] == 127 && r[1] == -128 && r[2] == 0);
    /* int16 -> uint8 output: 200 stays 200 (stored as -56), -5 clips to 0 */
    p = (rs_opts){CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8, true, false, false, true, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_OK(
        rescale(&p, 1, KT_DIMS(3), (int64_t[]){200, -5, 300}, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, r));
    CHECK(r[0] == -56 && r[1] == 0 && r[2] == -1);
    /* uint16 input with zp 32768 */
    p = (rs_opts){
        CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, true, false, true, false, CTOSA_ROUND_SINGLE, -32768, 0};
    CHECK_OK(
        rescale(&p, 1, KT_DIMS(3), (int64_t[]){-32768, -1, 0}, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, r));
    CHECK(r[0] == 0 && r[1] == 32767 && r[2] == -32768);
    /* uint16 output with zp 32768: 0 -> 32768 stored as -32768 */
    p = (rs_opts){
        CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, true, false, false, true, CTOSA_ROUND_SINGLE, 0, -32768};
    CHECK_OK(rescale(&p, 1, KT_DIMS(2), (int64_t[]){0, 32767}, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, r));
    CHECK(r[0] == -32768 && r[1] == -1);
}

static void test_rescale_per_channel_and_16(void) {
    int64_t r[6];
    rs_opts p = {CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32, true, true, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_OK(rescale(&p, 2, KT_DIMS(2, 3), (int64_t[]){100, 100, 100, -7, -7, -7}, 3,
                     (int64_t[]){1 << 30, 1 << 30, 1 << 30}, (int64_t[]){30, 31, 32}, r));
    CHECK(r[0] == 100 && r[1] == 50 && r[2] == 25 && r[3] == -7 && r[4] == -3 && r[5] == -2);
    /* 16-bit multiplier with int48 input */
    p = (rs_opts){CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT32, false, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_OK(rescale(&p, 1, KT_DIMS(2), (int64_t[]){INT64_C(1) << 40, -(INT64_C(3) << 20)}, 1,
                     (int64_t[]){16384}, (int64_t[]){30}, r));
    CHECK(r[0] == (1 << 24) && r[1] == -48);
    /* result beyond int32: REQUIRE failure -> error */
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), (int64_t[]){INT64_C(1) << 46}, 1, (int64_t[]){16384}, (int64_t[]){2},
                      NULL),
              CTOSA_ERR_INVALID, "REQUIRE");
    kt_free_all();
}

static void test_rescale_errors(void) {
    int64_t v[1] = {1};
    rs_opts p = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){1}, NULL), CTOSA_ERR_INVALID,
              "shift");
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){63}, NULL),
              CTOSA_ERR_INVALID, "shift");
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){-5}, (int64_t[]){30}, NULL), CTOSA_ERR_INVALID,
              "negative");
    p.iu = p.ou = true;
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "both");
    p = (rs_opts){CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8, true, false, false, false, CTOSA_ROUND_SINGLE, 3, 0};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "input_zp");
    p.iu = true;
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "32768");
    p = (rs_opts){CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT32, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 4};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "output_zp");
    p = (rs_opts){CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT32, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 30}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "scale32");
    p = (rs_opts){CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, false, false, false, false, CTOSA_ROUND_DOUBLE, 0, 0};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), v, 1, (int64_t[]){1 << 14}, (int64_t[]){30}, NULL),
              CTOSA_ERR_INVALID, "DOUBLE_ROUND");
    /* REQUIRE of apply_scale_32: value must fit below 2^(shift-1) */
    p = (rs_opts){CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT32, true, false, false, false, CTOSA_ROUND_SINGLE, 0, 0};
    CHECK_ERR(rescale(&p, 1, KT_DIMS(1), (int64_t[]){20000}, 1, (int64_t[]){1 << 30}, (int64_t[]){10}, NULL),
              CTOSA_ERR_INVALID, "REQUIRE");
    /* the same REQUIREs on the 8-lane path (element counts divisible by 8) */
    CHECK_ERR(rescale(&p, 1, KT_DIMS(8), (int64_t[]){1, 2, 3, 4, 5, 20000, 7, 8}, 1, (int64_t[]){1 << 30},
                      (int64_t[]){10}, NULL),
              CTOSA_ERR_INVALID, "REQUIRE");
    CHECK_OK(rescale(&p, 1, KT_DIMS(8), (int64_t[]){1, 2, 3, 4, 5, 511, -512, 8}, 1, (int64_t[]){1 << 30},
                     (int64_t[]){10}, NULL));
    {
        rs_opts q = {
            CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT32, false, true, false, false, CTOSA_ROUND_SINGLE, 0, 0};
        int64_t big[16], m[8], sh[8], r[16];
        for (int i = 0; i < 8; i++) {
            m[i] = 16384;
            sh[i] = 30 + i;
        }
        for (int i = 0; i < 16; i++) big[i] = (INT64_C(1) << 40) + i;
        CHECK_OK(rescale(&q, 2, KT_DIMS(2, 8), big, 8, m, sh, r));
        CHECK(r[0] == (1 << 24) && r[7] == (1 << 17) && r[15] == (1 << 17));
        big[9] = INT64_C(1) << 46;
        sh[1] = 2;
        CHECK_ERR(rescale(&q, 2, KT_DIMS(2, 8), big, 8, m, sh, NULL), CTOSA_ERR_INVALID, "REQUIRE");
    }
    /* per-channel multiplier count must match the last dimension */
    p.per_channel = true;
    CHECK_ERR(rescale(&p, 2, KT_DIMS(2, 3), (int64_t[]){1, 2, 3, 4, 5, 6}, 2, (int64_t[]){1 << 30, 1 << 30},
                      (int64_t[]){30, 30}, NULL),
              CTOSA_ERR_INVALID, "elements");
    kt_free_all();
}

/* ------------------------------------------------------------------ CAST */

static itensor *cast_run(ctosa_dtype ti, ctosa_dtype to, uint64_t n, const double *vals) {
    itensor *in = kt_new(ti, 1, KT_DIMS((int64_t)n)), *out = kt_new(to, 1, KT_DIMS((int64_t)n));
    for (uint64_t i = 0; i < n; i++) {
        if (ti == CTOSA_DTYPE_FP32 || ti == CTOSA_DTYPE_FP16 || ti == CTOSA_DTYPE_BF16)
            ((float *)in->data)[i] = (float)vals[i];
        else im_store_i(ti, in->data, i, (int64_t)vals[i]);
    }
    CHECK_OK(kt_run(interp_k_CAST, CTOSA_OP_CAST, NULL, 1, &in, 1, &out));
    return out;
}

static void test_cast(void) {
    double f[] = {2.5, 3.5, -2.5, -3.5, 1000, -1000, INFINITY, -INFINITY, 0.49999997, 126.5};
    itensor *o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_INT8, 10, f);
    int8_t *d8 = o->data;
    CHECK(d8[0] == 2 && d8[1] == 4 && d8[2] == -2 && d8[3] == -4 && d8[4] == 127 && d8[5] == -128);
    CHECK(d8[6] == 127 && d8[7] == -128 && d8[8] == 0 && d8[9] == 126);
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_INT32, 3, (double[]){3e9, -3e9, 16777216.0});
    int32_t *d32 = o->data;
    CHECK(d32[0] == INT32_MAX && d32[1] == INT32_MIN && d32[2] == 16777216);
    o = cast_run(CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT8, 3, (double[]){300, -129, -1});
    d8 = o->data;
    CHECK(d8[0] == 44 && d8[1] == 127 && d8[2] == -1);
    o = cast_run(CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT32, 2, (double[]){-5, 127});
    CHECK(((int32_t *)o->data)[0] == -5 && ((int32_t *)o->data)[1] == 127);
    o = cast_run(CTOSA_DTYPE_INT16, CTOSA_DTYPE_BOOL, 3, (double[]){0, 7, -32768});
    CHECK(((uint8_t *)o->data)[0] == 0 && ((uint8_t *)o->data)[1] == 1 && ((uint8_t *)o->data)[2] == 1);
    o = cast_run(CTOSA_DTYPE_BOOL, CTOSA_DTYPE_FP32, 2, (double[]){1, 0});
    CHECK(((float *)o->data)[0] == 1.0f && ((float *)o->data)[1] == 0.0f);
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_BOOL, 3, (double[]){0.0, -0.0 + 1e-30, NAN});
    CHECK(((uint8_t *)o->data)[0] == 0 && ((uint8_t *)o->data)[1] == 1 && ((uint8_t *)o->data)[2] == 1);
    /* int -> narrow float rounds once, ties to even */
    o = cast_run(CTOSA_DTYPE_INT32, CTOSA_DTYPE_FP16, 4, (double[]){2049, 2051, 70000, -65519});
    float *df = o->data;
    CHECK(df[0] == 2048.0f && df[1] == 2052.0f && isinf(df[2]) && df[3] == -65504.0f);
    o = cast_run(CTOSA_DTYPE_INT32, CTOSA_DTYPE_FP32, 2, (double[]){16777217, 16777219});
    df = o->data;
    CHECK(df[0] == 16777216.0f && df[1] == 16777220.0f);
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP16, 3, (double[]){1.0 + ldexp(1, -11), 1e6, NAN});
    df = o->data;
    CHECK(df[0] == 1.0f && isinf(df[1]) && isnan(df[2]));
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP8E4M3, 3, (double[]){500, 464, 0.3});
    df = o->data;
    CHECK(isnan(df[0]) && df[1] == 448.0f && df[2] == 0.3125f);
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_BF16, 1, (double[]){1.00390625}); /* 1 + 2^-8: tie -> 1 */
    CHECK(((float *)o->data)[0] == 1.0f);
    o = cast_run(CTOSA_DTYPE_FP16, CTOSA_DTYPE_INT16, 2, (double[]){65504, -0.5});
    CHECK(((int16_t *)o->data)[0] == 32767 && ((int16_t *)o->data)[1] == 0);
    /* empty tensor */
    o = cast_run(CTOSA_DTYPE_FP32, CTOSA_DTYPE_INT8, 0, NULL);
    CHECK(o->count == 0);
    /* shape mismatch */
    itensor *a = KT_T(FP32, 1, 3), *b = KT_T(INT8, 1, 4);
    CHECK_ERR(kt_run(interp_k_CAST, CTOSA_OP_CAST, NULL, 1, &a, 1, &b), CTOSA_ERR_INVALID, "dimension");
    kt_free_all();
}

int main(void) {
    RUN(test_rescale_rounding);
    RUN(test_rescale_random_vs_ref);
    RUN(test_rescale_zp_saturation);
    RUN(test_rescale_unsigned);
    RUN(test_rescale_per_channel_and_16);
    RUN(test_rescale_errors);
    RUN(test_cast);
    kt_free_all();
    return th_finish();
}
