/* test_floatfmt.c - fp16/bf16/fp8 conversions: exhaustive round trips,
 * round-to-nearest-even ties, overflow, subnormals, and an independent
 * oracle (the compiler's _Float16) where available. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "util/floatfmt.h"

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_fp16_exhaustive(void) {
    int bad = 0;
    float prev = -INFINITY;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ff_fp16_to_f32((uint16_t)h);
        bool nan = ((h >> 10) & 31) == 31 && (h & 1023);
        if (nan) {
            if (!isnan(f)) bad++;
            if (!isnan(ff_fp16_to_f32(ff_f32_to_fp16(f)))) bad++;
            continue;
        }
        if (ff_f32_to_fp16(f) != h) bad++;
        if (ff_round_to(CTOSA_DTYPE_FP16, f) != f && !(f == 0)) bad++;
        /* positive patterns 0x0000..0x7C00 decode in increasing order */
        if (h <= 0x7C00) {
            if (h > 0 && !(f > prev)) bad++;
            prev = f;
        }
    }
    CHECK_MSG(bad == 0, "%d fp16 patterns failed", bad);
    CHECK(ff_fp16_to_f32(0x3C00) == 1.0f);
    CHECK(ff_fp16_to_f32(0x7BFF) == 65504.0f);
    CHECK(ff_fp16_to_f32(0x0001) == ldexpf(1, -24));
    CHECK(isinf(ff_fp16_to_f32(0xFC00)) && ff_fp16_to_f32(0xFC00) < 0);
    CHECK(f2u(ff_fp16_to_f32(0x8000)) == 0x80000000u);
}

static void test_fp16_rounding(void) {
    /* ties go to the even mantissa */
    CHECK(ff_f32_to_fp16(1.0f + ldexpf(1, -11)) == 0x3C00);
    CHECK(ff_f32_to_fp16(1.0f + 3 * ldexpf(1, -11)) == 0x3C02);
    CHECK(ff_f32_to_fp16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)) == 0x3C01);
    CHECK(ff_f32_to_fp16(-(1.0f + ldexpf(1, -11))) == 0xBC00);
    /* overflow: 65520 is the tie between 65504 (odd) and 2^16 -> inf */
    CHECK(ff_f32_to_fp16(65519.0f) == 0x7BFF);
    CHECK(ff_f32_to_fp16(65520.0f) == 0x7C00);
    CHECK(ff_f32_to_fp16(-1e10f) == 0xFC00);
    CHECK(ff_f32_to_fp16(INFINITY) == 0x7C00);
    /* subnormals: half the smallest subnormal ties to zero, 1.5 to 2 */
    CHECK(ff_f32_to_fp16(ldexpf(1, -25)) == 0x0000);
    CHECK(ff_f32_to_fp16(ldexpf(3, -25)) == 0x0002);
    CHECK(ff_f32_to_fp16(ldexpf(1, -25) * 1.0001f) == 0x0001);
    CHECK(ff_f32_to_fp16(-ldexpf(1, -30)) == 0x8000);
    /* largest subnormal rounds up into the smallest normal */
    CHECK(ff_f32_to_fp16(ldexpf(1023.5f, -24)) == 0x0400);
    uint16_t n = ff_f32_to_fp16(NAN);
    CHECK(((n >> 10) & 31) == 31 && (n & 1023));
}

static void test_fp16_oracle(void) {
#ifdef __FLT16_MAX__
    int bad = 0;
    uint32_t x = 12345;
    for (int i = 0; i < 2000000; i++) {
        x = x * 1664525u + 1013904223u;
        /* random bit patterns across the fp16 range and beyond */
        uint32_t u = (x & 0x807FFFFFu) | ((100u + (x >> 8) % 60u) << 23);
        float f = u2f(u);
        _Float16 h = (_Float16)f;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        if (ff_f32_to_fp16(f) != hb) bad++;
    }
    CHECK_MSG(bad == 0, "%d conversions differ from _Float16", bad);
#else
    fprintf(stderr, "note: no _Float16; oracle comparison not run\n");
#endif
}

static void test_bf16(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ff_bf16_to_f32((uint16_t)h);
        if (f2u(f) != h << 16) bad++;
        if (isnan(f)) {
            if (!isnan(ff_bf16_to_f32(ff_f32_to_bf16(f)))) bad++;
        } else if (ff_f32_to_bf16(f) != h) {
            bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d bf16 patterns failed", bad);
    /* the bit-trick encoder agrees with the generic rounding path */
    uint32_t x = 99;
    int diff = 0;
    for (int i = 0; i < 1000000; i++) {
        x = x * 1664525u + 1013904223u;
        float f = u2f(x);
        if (isnan(f)) continue;
        float a = ff_bf16_to_f32(ff_f32_to_bf16(f)), b = ff_round_to_double(CTOSA_DTYPE_BF16, f);
        if (f2u(a) != f2u(b)) diff++;
    }
    CHECK_MSG(diff == 0, "%d bf16 roundings disagree", diff);
    CHECK(ff_f32_to_bf16(u2f(0x3F808000u)) == 0x3F80); /* tie, even stays */
    CHECK(ff_f32_to_bf16(u2f(0x3F818000u)) == 0x3F82); /* tie, odd rounds up */
    CHECK(ff_f32_to_bf16(u2f(0x7F7FFFFFu)) == 0x7F80); /* FLT_MAX rounds to inf */
}

static void test_fp8(void) {
    int bad = 0;
    for (uint32_t v = 0; v < 256; v++) {
        float a = ff_fp8e4m3_to_f32((uint8_t)v), b = ff_fp8e5m2_to_f32((uint8_t)v);
        bool nan4 = (v & 0x7F) == 0x7F;
        if (nan4 != (bool)isnan(a)) bad++;
        if (!nan4 && ff_f32_to_fp8e4m3(a) != v) bad++;
        bool nan5 = ((v >> 2) & 31) == 31 && (v & 3);
        if (nan5 != (bool)isnan(b)) bad++;
        if (!nan5 && ff_f32_to_fp8e5m2(b) != v) bad++;
    }
    CHECK_MSG(bad == 0, "%d fp8 patterns failed", bad);
    CHECK(ff_fp8e4m3_to_f32(0x7E) == 448.0f);
    CHECK(ff_fp8e4m3_to_f32(0x01) == ldexpf(1, -9));
    CHECK(ff_f32_to_fp8e4m3(464.0f) == 0x7E);                   /* tie between 448 (even) and 480 */
    CHECK(isnan(ff_fp8e4m3_to_f32(ff_f32_to_fp8e4m3(465.0f)))); /* no infinity: NaN */
    CHECK(isnan(ff_fp8e4m3_to_f32(ff_f32_to_fp8e4m3(INFINITY))));
    CHECK(ff_f32_to_fp8e4m3(-1.0625f) == 0xB8); /* tie 1.0 / 1.125 -> 1.0 */
    CHECK(ff_f32_to_fp8e4m3(1.1875f) == 0x3A);  /* tie 1.125 / 1.25 -> 1.25 */
    CHECK(ff_fp8e5m2_to_f32(0x7B) == 57344.0f);
    CHECK(ff_fp8e5m2_to_f32(0x7C) == INFINITY);
    CHECK(ff_f32_to_fp8e5m2(61440.0f) == 0x7C);       /* tie, odd max -> inf */
    CHECK(ff_f32_to_fp8e5m2(ldexpf(1, -17)) == 0x00); /* half min subnormal -> 0 */
    CHECK(ff_f32_to_fp8e5m2(ldexpf(3, -17)) == 0x02);
}

static void test_round_to(void) {
    CHECK(ff_round_to(CTOSA_DTYPE_FP32, 1.1f) == 1.1f);
    CHECK(ff_round_to(CTOSA_DTYPE_FP16, 1.1f) == ff_fp16_to_f32(ff_f32_to_fp16(1.1f)));
    CHECK(ff_round_to(CTOSA_DTYPE_FP8E4M3, 3.3f) == 3.25f);
    CHECK(ff_round_to(CTOSA_DTYPE_FP8E5M2, 3.3f) == 3.5f);
    /* the double entry point avoids double rounding: this value is just
     * above an fp16 tie but rounds to the tie in float */
    double d = 1.0 + ldexp(1, -11) + ldexp(1, -40);
    CHECK(ff_round_to_double(CTOSA_DTYPE_FP16, d) == 1.0f + ldexpf(1, -10));
    CHECK(ff_round_to(CTOSA_DTYPE_FP16, (float)d) == 1.0f);
}

int main(void) {
    RUN(test_fp16_exhaustive);
    RUN(test_fp16_rounding);
    RUN(test_fp16_oracle);
    RUN(test_bf16);
    RUN(test_fp8);
    RUN(test_round_to);
    return th_finish();
}
