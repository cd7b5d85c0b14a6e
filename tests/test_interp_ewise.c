/* test_interp_ewise.c - element-wise, comparison and reduction operators of
 * the interpreter, run through the public API on one-operator graphs, with
 * hand-computed expected values (integer results bit-exact, REQUIRE and
 * ERROR_IF cases failing with CTOSA_ERR_INVALID). */
#include <math.h>

#include "harness.h"
#include "interp_testutil.h"

#define OP(k) CTOSA_OP_##k
#define INV CTOSA_ERR_INVALID

static void test_add_sub_i32(void) {
    int32_t a[] = {1, 2147483646, -5}, b[] = {5, 1, -7}, z[3];
    CHECK_OK(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 3), IT_IN(INT32, b, 1, 3)),
                    IT_OUT(INT32, 1, 3), z));
    CHECK(z[0] == 6 && z[1] == 2147483647 && z[2] == -12);
    CHECK_OK(it_run(OP(SUB), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 3), IT_IN(INT32, b, 1, 3)),
                    IT_OUT(INT32, 1, 3), z));
    CHECK(z[0] == -4 && z[1] == 2147483645 && z[2] == 2);
    /* apply_add_s / apply_sub_s REQUIRE the result to fit: no wrap-around */
    int32_t big[] = {2147483647}, one[] = {1}, min[] = {INT32_MIN};
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, big, 1, 1), IT_IN(INT32, one, 1, 1)),
                     IT_OUT(INT32, 1, 1), z),
              INV, "op #0 ADD 'out': REQUIRE failed");
    CHECK_ERR(it_run(OP(SUB), NULL, 2, IT_ARGS(IT_IN(INT32, min, 1, 1), IT_IN(INT32, one, 1, 1)),
                     IT_OUT(INT32, 1, 1), z),
              INV, "does not fit int32");
    int64_t a64[] = {INT64_MAX}, b64[] = {1}, z64[1];
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT64, a64, 1, 1), IT_IN(INT64, b64, 1, 1)),
                     IT_OUT(INT64, 1, 1), z64),
              INV, "REQUIRE");
    int64_t c64[] = {INT64_MAX - 1};
    CHECK_OK(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT64, c64, 1, 1), IT_IN(INT64, b64, 1, 1)),
                    IT_OUT(INT64, 1, 1), z64));
    CHECK(z64[0] == INT64_MAX);
}

static void test_broadcast(void) {
    int32_t a[] = {1, 2}, b[] = {10, 20, 30}, z[6];
    CHECK_OK(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 1), IT_IN(INT32, b, 2, 1, 3)),
                    IT_OUT(INT32, 2, 2, 3), z));
    int32_t want[] = {11, 21, 31, 12, 22, 32};
    CHECK(memcmp(z, want, sizeof want) == 0);
    /* rank 6 with size-1 dims on both sides */
    float x[] = {1, 2}, y[] = {10, 20}, w[4];
    CHECK_OK(it_run(OP(MUL), NULL, 2,
                    IT_ARGS(IT_IN(FP32, x, 6, 1, 1, 1, 1, 1, 2), IT_IN(FP32, y, 6, 2, 1, 1, 1, 1, 1)),
                    IT_OUT(FP32, 6, 2, 1, 1, 1, 1, 2), w));
    CHECK(w[0] == 10 && w[1] == 20 && w[2] == 20 && w[3] == 40);
    /* rank 0 */
    int32_t s1[] = {2}, s2[] = {3}, s[1];
    CHECK_OK(
        it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, s1, 0), IT_IN(INT32, s2, 0)), IT_OUT(INT32, 0), s));
    CHECK(s[0] == 5);
    /* empty tensors: nothing to compute, no error */
    CHECK_OK(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 0, 3), IT_IN(INT32, b, 2, 1, 3)),
                    IT_OUT(INT32, 2, 0, 3), NULL));
    /* ERROR_IF: shapes that do not broadcast, wrong output shape, rank mismatch */
    int32_t q[6] = {0};
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, q, 2, 2, 2), IT_IN(INT32, q, 2, 3, 2)),
                     IT_OUT(INT32, 2, 3, 2), z),
              INV, "does not broadcast");
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, q, 2, 1, 2), IT_IN(INT32, q, 2, 1, 2)),
                     IT_OUT(INT32, 2, 3, 2), z),
              INV, "not the broadcast");
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, q, 1, 2), IT_IN(INT32, q, 2, 1, 2)),
                     IT_OUT(INT32, 2, 1, 2), z),
              INV, "ranks must match");
    float f[2] = {0};
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT32, q, 1, 2), IT_IN(FP32, f, 1, 2)),
                     IT_OUT(INT32, 1, 2), z),
              INV, "is fp32 but input 'in0' is int32");
    int8_t i8[2] = {0};
    CHECK_ERR(it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(INT8, i8, 1, 2), IT_IN(INT8, i8, 1, 2)),
                     IT_OUT(INT8, 1, 2), NULL),
              CTOSA_ERR_UNSUPPORTED, "dtype int8 is not supported");
}

static void test_narrow_float_rounding(void) {
    /* fp16: 1 + 2^-11 is a tie -> even (1.0); 1 + 3*2^-11 -> 1 + 2^-9 */
    uint16_t a[] = {0x3c00, 0x3c00}, b[] = {0x1000, 0x1600}, z[2];
    CHECK_OK(
        it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(FP16, a, 1, 2), IT_IN(FP16, b, 1, 2)), IT_OUT(FP16, 1, 2), z));
    CHECK(z[0] == 0x3c00 && z[1] == 0x3c02);
    /* bf16: 1 + 2^-8 is a tie -> 1.0; 1 + 3*2^-8 -> 1 + 2^-6 */
    uint16_t c[] = {0x3f80, 0x3f80}, d[] = {0x3b80, 0x3c40}, w[2];
    CHECK_OK(
        it_run(OP(ADD), NULL, 2, IT_ARGS(IT_IN(BF16, c, 1, 2), IT_IN(BF16, d, 1, 2)), IT_OUT(BF16, 1, 2), w));
    CHECK(w[0] == 0x3f80 && w[1] == 0x3f82);
}

static void test_mul(void) {
    int32_t a[] = {3, -3, 5}, b[] = {5, 5, 1}, z[3];
    int8_t sh1[] = {1}, sh0[] = {0}, sh64[] = {64};
    CHECK_OK(it_run(OP(MUL), NULL, 3,
                    IT_ARGS(IT_IN(INT32, a, 1, 3), IT_IN(INT32, b, 1, 3), IT_CONST(INT8, sh1, 1, 1)),
                    IT_OUT(INT32, 1, 3), z));
    /* (15 + 1) >> 1 = 8, (-15 + 1) >> 1 = -7, (5 + 1) >> 1 = 3 */
    CHECK(z[0] == 8 && z[1] == -7 && z[2] == 3);
    /* shift 0 keeps the low 32 bits of the product */
    int32_t c[] = {65536, 46341}, w[2];
    CHECK_OK(it_run(OP(MUL), NULL, 3,
                    IT_ARGS(IT_IN(INT32, c, 1, 2), IT_IN(INT32, c, 1, 2), IT_CONST(INT8, sh0, 1, 1)),
                    IT_OUT(INT32, 1, 2), w));
    CHECK(w[0] == 0 && w[1] == -2147479015);
    /* shift > 0: the rounded result must fit int32 */
    int32_t e1[] = {1 << 20};
    CHECK_ERR(it_run(OP(MUL), NULL, 3,
                     IT_ARGS(IT_IN(INT32, e1, 1, 1), IT_IN(INT32, e1, 1, 1), IT_CONST(INT8, sh1, 1, 1)),
                     IT_OUT(INT32, 1, 1), w),
              INV, "REQUIRE");
    CHECK_ERR(it_run(OP(MUL), NULL, 3,
                     IT_ARGS(IT_IN(INT32, a, 1, 3), IT_IN(INT32, b, 1, 3), IT_CONST(INT8, sh64, 1, 1)),
                     IT_OUT(INT32, 1, 3), z),
              INV, "shift 64");
    /* i8 x i8 -> i32, i16 x i16 -> i32 */
    int8_t p[] = {-128, 127}, q[] = {-128, -128};
    CHECK_OK(it_run(OP(MUL), NULL, 3,
                    IT_ARGS(IT_IN(INT8, p, 1, 2), IT_IN(INT8, q, 1, 2), IT_CONST(INT8, sh0, 1, 1)),
                    IT_OUT(INT32, 1, 2), w));
    CHECK(w[0] == 16384 && w[1] == -16256);
    int16_t r[] = {32767}, s[] = {-32768};
    CHECK_OK(it_run(OP(MUL), NULL, 3,
                    IT_ARGS(IT_IN(INT16, r, 1, 1), IT_IN(INT16, s, 1, 1), IT_CONST(INT8, sh0, 1, 1)),
                    IT_OUT(INT32, 1, 1), w));
    CHECK(w[0] == -1073709056);
    CHECK_ERR(it_run(OP(MUL), NULL, 3,
                     IT_ARGS(IT_IN(INT8, p, 1, 2), IT_IN(INT8, q, 1, 2), IT_CONST(INT8, sh1, 1, 1)),
                     IT_OUT(INT32, 1, 2), w),
              INV, "must be 0 for int8");
    float f[] = {1.5f, -2}, g[] = {4, 0.25f}, h[2];
    CHECK_OK(it_run(OP(MUL), NULL, 3,
                    IT_ARGS(IT_IN(FP32, f, 1, 2), IT_IN(FP32, g, 1, 2), IT_CONST(INT8, sh0, 1, 1)),
                    IT_OUT(FP32, 1, 2), h));
    CHECK(h[0] == 6 && h[1] == -0.5f);
}

static void test_intdiv(void) {
    int32_t a[] = {7, -7, 7, -7, 0}, b[] = {2, 2, -2, -2, 5}, z[5];
    CHECK_OK(it_run(OP(INTDIV), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 5), IT_IN(INT32, b, 1, 5)),
                    IT_OUT(INT32, 1, 5), z));
    /* truncation toward zero */
    CHECK(z[0] == 3 && z[1] == -3 && z[2] == -3 && z[3] == 3 && z[4] == 0);
    int32_t zero[] = {0}, m1[] = {-1}, min[] = {INT32_MIN};
    CHECK_ERR(it_run(OP(INTDIV), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 1), IT_IN(INT32, zero, 1, 1)),
                     IT_OUT(INT32, 1, 1), z),
              INV, "op #0 INTDIV 'out': REQUIRE failed at output element 0: division of 7 by zero");
    CHECK_ERR(it_run(OP(INTDIV), NULL, 2, IT_ARGS(IT_IN(INT32, min, 1, 1), IT_IN(INT32, m1, 1, 1)),
                     IT_OUT(INT32, 1, 1), z),
              INV, "does not fit int32");
}

static void test_shifts(void) {
    int32_t a[] = {-7, -7, 7, 8}, s[] = {1, 1, 1, 3}, z[4];
    CHECK_OK(it_run(OP(ARITHMETIC_RIGHT_SHIFT), NULL, 2,
                    IT_ARGS(IT_IN(INT32, a, 1, 4), IT_IN(INT32, s, 1, 4)), IT_OUT(INT32, 1, 4), z));
    CHECK(z[0] == -4 && z[1] == -4 && z[2] == 3 && z[3] == 1);
    ctosa_attr round = {0};
    round.round = true;
    CHECK_OK(it_run(OP(ARITHMETIC_RIGHT_SHIFT), &round, 2,
                    IT_ARGS(IT_IN(INT32, a, 1, 4), IT_IN(INT32, s, 1, 4)), IT_OUT(INT32, 1, 4), z));
    CHECK(z[0] == -3 && z[1] == -3 && z[2] == 4 && z[3] == 1);
    int8_t b8[] = {-128, 127}, s8[] = {7, 7}, z8[2];
    CHECK_OK(it_run(OP(ARITHMETIC_RIGHT_SHIFT), &round, 2,
                    IT_ARGS(IT_IN(INT8, b8, 1, 2), IT_IN(INT8, s8, 1, 2)), IT_OUT(INT8, 1, 2), z8));
    CHECK(z8[0] == -1 && z8[1] == 1);
    int32_t s32[] = {32}, sneg[] = {-1};
    CHECK_ERR(it_run(OP(ARITHMETIC_RIGHT_SHIFT), NULL, 2,
                     IT_ARGS(IT_IN(INT32, a, 1, 1), IT_IN(INT32, s32, 1, 1)), IT_OUT(INT32, 1, 1), z),
              INV, "shift amount 32 is out of range for int32");
    CHECK_ERR(it_run(OP(LOGICAL_LEFT_SHIFT), NULL, 2,
                     IT_ARGS(IT_IN(INT32, a, 1, 1), IT_IN(INT32, sneg, 1, 1)), IT_OUT(INT32, 1, 1), z),
              INV, "shift amount -1");
    int8_t l[] = {1, -1}, ls[] = {7, 1};
    CHECK_OK(it_run(OP(LOGICAL_LEFT_SHIFT), NULL, 2, IT_ARGS(IT_IN(INT8, l, 1, 2), IT_IN(INT8, ls, 1, 2)),
                    IT_OUT(INT8, 1, 2), z8));
    CHECK(z8[0] == -128 && z8[1] == -2);
    int8_t r[] = {-1, -128}, rs[] = {1, 7}, r8[] = {8};
    CHECK_OK(it_run(OP(LOGICAL_RIGHT_SHIFT), NULL, 2, IT_ARGS(IT_IN(INT8, r, 1, 2), IT_IN(INT8, rs, 1, 2)),
                    IT_OUT(INT8, 1, 2), z8));
    CHECK(z8[0] == 127 && z8[1] == 1);
    CHECK_ERR(it_run(OP(LOGICAL_RIGHT_SHIFT), NULL, 2, IT_ARGS(IT_IN(INT8, r, 1, 1), IT_IN(INT8, r8, 1, 1)),
                     IT_OUT(INT8, 1, 1), z8),
              INV, "out of range for int8");
    int32_t m[] = {-1}, ms[] = {28};
    CHECK_OK(it_run(OP(LOGICAL_RIGHT_SHIFT), NULL, 2, IT_ARGS(IT_IN(INT32, m, 1, 1), IT_IN(INT32, ms, 1, 1)),
                    IT_OUT(INT32, 1, 1), z));
    CHECK(z[0] == 15);
}

static void test_bitwise_logical_clz(void) {
    int32_t a[] = {0x0f, -1}, b[] = {0x3c, 0x10}, z[2];
    CHECK_OK(it_run(OP(BITWISE_AND), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 2), IT_IN(INT32, b, 1, 2)),
                    IT_OUT(INT32, 1, 2), z));
    CHECK(z[0] == 0x0c && z[1] == 0x10);
    CHECK_OK(it_run(OP(BITWISE_OR), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 2), IT_IN(INT32, b, 1, 2)),
                    IT_OUT(INT32, 1, 2), z));
    CHECK(z[0] == 0x3f && z[1] == -1);
    CHECK_OK(it_run(OP(BITWISE_XOR), NULL, 2, IT_ARGS(IT_IN(INT32, a, 1, 2), IT_IN(INT32, b, 1, 2)),
                    IT_OUT(INT32, 1, 2), z));
    CHECK(z[0] == 0x33 && z[1] == ~0x10);
    int16_t n[] = {0, 0x00ff}, nz[2];
    CHECK_OK(it_run(OP(BITWISE_NOT), NULL, 1, IT_ARGS(IT_IN(INT16, n, 1, 2)), IT_OUT(INT16, 1, 2), nz));
    CHECK(nz[0] == -1 && nz[1] == (int16_t)0xff00);
    uint8_t p[] = {0, 0, 1, 1}, q[] = {0, 1, 0, 1}, bz[4];
    CHECK_OK(it_run(OP(LOGICAL_AND), NULL, 2, IT_ARGS(IT_IN(BOOL, p, 1, 4), IT_IN(BOOL, q, 1, 4)),
                    IT_OUT(BOOL, 1, 4), bz));
    CHECK(bz[0] == 0 && bz[1] == 0 && bz[2] == 0 && bz[3] == 1);
    CHECK_OK(it_run(OP(LOGICAL_OR), NULL, 2, IT_ARGS(IT_IN(BOOL, p, 1, 4), IT_IN(BOOL, q, 1, 4)),
                    IT_OUT(BOOL, 1, 4), bz));
    CHECK(bz[0] == 0 && bz[1] == 1 && bz[2] == 1 && bz[3] == 1);
    CHECK_OK(it_run(OP(LOGICAL_XOR), NULL, 2, IT_ARGS(IT_IN(BOOL, p, 1, 4), IT_IN(BOOL, q, 1, 4)),
                    IT_OUT(BOOL, 1, 4), bz));
    CHECK(bz[0] == 0 && bz[1] == 1 && bz[2] == 1 && bz[3] == 0);
    CHECK_OK(it_run(OP(LOGICAL_NOT), NULL, 1, IT_ARGS(IT_IN(BOOL, p, 1, 4)), IT_OUT(BOOL, 1, 4), bz));
    CHECK(bz[0] == 1 && bz[2] == 0);
    uint8_t notbool[] = {2};
    CHECK_ERR(it_run(OP(LOGICAL_NOT), NULL, 1, IT_ARGS(IT_IN(BOOL, notbool, 1, 1)), IT_OUT(BOOL, 1, 1), bz),
              CTOSA_ERR_FORMAT, "not a bool");
    int32_t c[] = {0, 1, -1, 0x10000}, cz[4];
    CHECK_OK(it_run(OP(CLZ), NULL, 1, IT_ARGS(IT_IN(INT32, c, 1, 4)), IT_OUT(INT32, 1, 4), cz));
    CHECK(cz[0] == 32 && cz[1] == 31 && cz[2] == 0 && cz[3] == 15);
    int64_t c64[] = {0, 1}, cz64[2];
    CHECK_OK(it_run(OP(CLZ), NULL, 1, IT_ARGS(IT_IN(INT64, c64, 1, 2)), IT_OUT(INT64, 1, 2), cz64));
    CHECK(cz64[0] == 64 && cz64[1] == 63);
}

static void test_max_min_nan(void) {
    float a[] = {1, NAN, NAN, -0.0f}, b[] = {NAN, 2, NAN, 0.0f}, z[4];
    ctosa_attr prop = {0}, ign = {0};
    prop.nan_mode = CTOSA_NAN_PROPAGATE;
    ign.nan_mode = CTOSA_NAN_IGNORE;
    CHECK_OK(it_run(OP(MAXIMUM), &prop, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(FP32, 1, 4), z));
    CHECK(isnan(z[0]) && isnan(z[1]) && isnan(z[2]) && z[3] == 0 && signbit(z[3]));
    CHECK_OK(it_run(OP(MAXIMUM), &ign, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(FP32, 1, 4), z));
    CHECK(z[0] == 1 && z[1] == 2 && isnan(z[2]));
    CHECK_OK(it_run(OP(MINIMUM), &ign, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(FP32, 1, 4), z));
    CHECK(z[0] == 1 && z[1] == 2 && isnan(z[2]) && z[3] == 0 && !signbit(z[3]));
    int32_t p[] = {-5, 3}, q[] = {2, 3}, w[2];
    CHECK_OK(it_run(OP(MAXIMUM), NULL, 2, IT_ARGS(IT_IN(INT32, p, 1, 2), IT_IN(INT32, q, 1, 2)),
                    IT_OUT(INT32, 1, 2), w));
    CHECK(w[0] == 2 && w[1] == 3);
    CHECK_OK(it_run(OP(MINIMUM), NULL, 2, IT_ARGS(IT_IN(INT32, p, 1, 2), IT_IN(INT32, q, 1, 2)),
                    IT_OUT(INT32, 1, 2), w));
    CHECK(w[0] == -5 && w[1] == 3);
}

static void test_compare(void) {
    float a[] = {NAN, 1, 2, -0.0f}, b[] = {NAN, 1, 1, 0.0f};
    uint8_t z[4];
    CHECK_OK(it_run(OP(EQUAL), NULL, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(BOOL, 1, 4), z));
    CHECK(z[0] == 0 && z[1] == 1 && z[2] == 0 && z[3] == 1);
    CHECK_OK(it_run(OP(GREATER), NULL, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(BOOL, 1, 4), z));
    CHECK(z[0] == 0 && z[1] == 0 && z[2] == 1 && z[3] == 0);
    CHECK_OK(it_run(OP(GREATER_EQUAL), NULL, 2, IT_ARGS(IT_IN(FP32, a, 1, 4), IT_IN(FP32, b, 1, 4)),
                    IT_OUT(BOOL, 1, 4), z));
    CHECK(z[0] == 0 && z[1] == 1 && z[2] == 1 && z[3] == 1);
    int32_t p[] = {INT32_MIN, 5}, q[] = {INT32_MAX, 5};
    CHECK_OK(it_run(OP(GREATER_EQUAL), NULL, 2, IT_ARGS(IT_IN(INT32, p, 1, 2), IT_IN(INT32, q, 1, 2)),
                    IT_OUT(BOOL, 1, 2), z));
    CHECK(z[0] == 0 && z[1] == 1);
    CHECK_ERR(it_run(OP(EQUAL), NULL, 2, IT_ARGS(IT_IN(INT32, p, 1, 2), IT_IN(INT32, q, 1, 2)),
                     IT_OUT(INT32, 1, 2), z),
              INV, "expected bool");
}

static void test_unary(void) {
    int32_t a[] = {-5, 0, INT32_MAX}, z[3], min[] = {INT32_MIN};
    CHECK_OK(it_run(OP(ABS), NULL, 1, IT_ARGS(IT_IN(INT32, a, 1, 3)), IT_OUT(INT32, 1, 3), z));
    CHECK(z[0] == 5 && z[1] == 0 && z[2] == INT32_MAX);
    CHECK_ERR(it_run(OP(ABS), NULL, 1, IT_ARGS(IT_IN(INT32, min, 1, 1)), IT_OUT(INT32, 1, 1), z), INV,
              "REQUIRE");
    float f[] = {-0.0f, -1.5f, 1.5f, 4}, g[4];
    CHECK_OK(it_run(OP(ABS), NULL, 1, IT_ARGS(IT_IN(FP32, f, 1, 4)), IT_OUT(FP32, 1, 4), g));
    CHECK(g[0] == 0 && !signbit(g[0]) && g[1] == 1.5f);
    CHECK_OK(it_run(OP(FLOOR), NULL, 1, IT_ARGS(IT_IN(FP32, f, 1, 4)), IT_OUT(FP32, 1, 4), g));
    CHECK(g[1] == -2 && g[2] == 1);
    CHECK_OK(it_run(OP(CEIL), NULL, 1, IT_ARGS(IT_IN(FP32, f, 1, 4)), IT_OUT(FP32, 1, 4), g));
    CHECK(g[1] == -1 && g[2] == 2);
    CHECK_OK(it_run(OP(RSQRT), NULL, 1, IT_ARGS(IT_IN(FP32, f, 1, 4)), IT_OUT(FP32, 1, 4), g));
    CHECK(isinf(g[0]) && isnan(g[1]) && g[3] == 0.5f);
    CHECK_OK(it_run(OP(RECIPROCAL), NULL, 1, IT_ARGS(IT_IN(FP32, f, 1, 4)), IT_OUT(FP32, 1, 4), g));
    CHECK(isinf(g[0]) && g[0] < 0 && g[3] == 0.25f);
    float l[] = {0, -1, 1, 1}, lz[4];
    CHECK_OK(it_run(OP(LOG), NULL, 1, IT_ARGS(IT_IN(FP32, l, 1, 4)), IT_OUT(FP32, 1, 4), lz));
    CHECK(isinf(lz[0]) && lz[0] < 0 && isnan(lz[1]) && lz[2] == 0);
    CHECK_OK(it_run(OP(EXP), NULL, 1, IT_ARGS(IT_IN(FP32, l, 1, 4)), IT_OUT(FP32, 1, 4), lz));
    CHECK(lz[0] == 1 && fabsf(lz[2] - 2.7182817f) < 1e-6f);
    CHECK_OK(it_run(OP(SIN), NULL, 1, IT_ARGS(IT_IN(FP32, l, 1, 4)), IT_OUT(FP32, 1, 4), lz));
    CHECK(lz[0] == 0 && fabsf(lz[2] - 0.84147098f) < 1e-6f);
    CHECK_OK(it_run(OP(COS), NULL, 1, IT_ARGS(IT_IN(FP32, l, 1, 4)), IT_OUT(FP32, 1, 4), lz));
    CHECK(lz[0] == 1);
    float pa[] = {2, 9}, pb[] = {10, 0.5f}, pz[2];
    CHECK_OK(it_run(OP(POW), NULL, 2, IT_ARGS(IT_IN(FP32, pa, 1, 2), IT_IN(FP32, pb, 1, 2)),
                    IT_OUT(FP32, 1, 2), pz));
    CHECK(pz[0] == 1024 && pz[1] == 3);
    CHECK_ERR(it_run(OP(CEIL), NULL, 1, IT_ARGS(IT_IN(INT32, a, 1, 3)), IT_OUT(INT32, 1, 3), z),
              CTOSA_ERR_UNSUPPORTED, "int32");
    CHECK_ERR(it_run(OP(ABS), NULL, 1, IT_ARGS(IT_IN(INT32, a, 1, 3)), IT_OUT(INT32, 1, 2), z), INV,
              "differs from input");
}

static void test_negate(void) {
    int8_t a[] = {10, -128, 127}, zi[] = {3}, zo[] = {-2}, z[3];
    CHECK_OK(it_run(OP(NEGATE), NULL, 3,
                    IT_ARGS(IT_IN(INT8, a, 1, 3), IT_CONST(INT8, zi, 1, 1), IT_CONST(INT8, zo, 1, 1)),
                    IT_OUT(INT8, 1, 3), z));
    /* -(10-3)-2 = -9; -(-128-3)-2 = 129 -> clipped 127; -(127-3)-2 = -126 */
    CHECK(z[0] == -9 && z[1] == 127 && z[2] == -126);
    int16_t b[] = {5}, bz[] = {1}, o16[1];
    int16_t b0[] = {0};
    CHECK_ERR(it_run(OP(NEGATE), NULL, 3,
                     IT_ARGS(IT_IN(INT16, b, 1, 1), IT_CONST(INT16, bz, 1, 1), IT_CONST(INT16, b0, 1, 1)),
                     IT_OUT(INT16, 1, 1), o16),
              INV, "zero points must be 0 for int16");
    int32_t c[] = {INT32_MIN}, c0[] = {0}, o32[1];
    CHECK_ERR(it_run(OP(NEGATE), NULL, 3,
                     IT_ARGS(IT_IN(INT32, c, 1, 1), IT_CONST(INT32, c0, 1, 1), IT_CONST(INT32, c0, 1, 1)),
                     IT_OUT(INT32, 1, 1), o32),
              INV, "REQUIRE");
    int16_t m[] = {INT16_MIN};
    CHECK_OK(it_run(OP(NEGATE), NULL, 3,
                    IT_ARGS(IT_IN(INT16, m, 1, 1), IT_CONST(INT16, b0, 1, 1), IT_CONST(INT16, b0, 1, 1)),
                    IT_OUT(INT16, 1, 1), o16));
    CHECK(o16[0] == INT16_MAX); /* 32768 in the i32 accumulator, clipped */
    float f[] = {1.5f, -0.0f}, f0[] = {0}, fz[2];
    CHECK_OK(it_run(OP(NEGATE), NULL, 3,
                    IT_ARGS(IT_IN(FP32, f, 1, 2), IT_CONST(FP32, f0, 1, 1), IT_CONST(FP32, f0, 1, 1)),
                    IT_OUT(FP32, 1, 2), fz));
    CHECK(fz[0] == -1.5f && fz[1] == 0 && !signbit(fz[1]));
}

static void test_select(void) {
    uint8_t c[] = {1, 0};
    int32_t a[] = {1, 2, 3, 4}, b[] = {9, 8}, z[4];
    CHECK_OK(it_run(OP(SELECT), NULL, 3,
                    IT_ARGS(IT_IN(BOOL, c, 2, 2, 1), IT_IN(INT32, a, 2, 2, 2), IT_IN(INT32, b, 2, 1, 2)),
                    IT_OUT(INT32, 2, 2, 2), z));
    CHECK(z[0] == 1 && z[1] == 2 && z[2] == 9 && z[3] == 8);
    uint16_t h[] = {0x3c00, 0x4000}, hb[] = {0xbc00, 0xc000}, hz[2];
    uint8_t c2[] = {0, 1};
    CHECK_OK(it_run(OP(SELECT), NULL, 3,
                    IT_ARGS(IT_IN(BOOL, c2, 1, 2), IT_IN(FP16, h, 1, 2), IT_IN(FP16, hb, 1, 2)),
                    IT_OUT(FP16, 1, 2), hz));
    CHECK(hz[0] == 0xbc00 && hz[1] == 0x4000);
    CHECK_ERR(it_run(OP(SELECT), NULL, 3,
                     IT_ARGS(IT_IN(INT32, a, 1, 2), IT_IN(INT32, a, 1, 2), IT_IN(INT32, b, 1, 2)),
                     IT_OUT(INT32, 1, 2), z),
              INV, "must be bool");
}

static void test_reduce(void) {
    int32_t a[] = {1, 2, 3, 4, 5, 6}, z[3];
    ctosa_attr ax0 = {0}, ax1 = {0};
    ax1.axis = 1;
    CHECK_OK(it_run(OP(REDUCE_SUM), &ax1, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 3)), IT_OUT(INT32, 2, 2, 1), z));
    CHECK(z[0] == 6 && z[1] == 15);
    CHECK_OK(it_run(OP(REDUCE_SUM), &ax0, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 3)), IT_OUT(INT32, 2, 1, 3), z));
    CHECK(z[0] == 5 && z[1] == 7 && z[2] == 9);
    int32_t big[] = {INT32_MAX, 1};
    CHECK_ERR(it_run(OP(REDUCE_SUM), &ax0, 1, IT_ARGS(IT_IN(INT32, big, 1, 2)), IT_OUT(INT32, 1, 1), z), INV,
              "REQUIRE failed");
    CHECK_ERR(it_run(OP(REDUCE_SUM), &ax1, 1, IT_ARGS(IT_IN(INT32, big, 1, 2)), IT_OUT(INT32, 1, 1), z), INV,
              "axis 1 is outside 0..0");
    CHECK_ERR(it_run(OP(REDUCE_SUM), &ax0, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 3)), IT_OUT(INT32, 2, 1, 2), z),
              INV, "dimension 0 set to 1");
    float f[] = {1, NAN, 3}, g[1], nn[] = {NAN, NAN};
    ctosa_attr ign = {0};
    ign.nan_mode = CTOSA_NAN_IGNORE;
    CHECK_OK(it_run(OP(REDUCE_MAX), &ax0, 1, IT_ARGS(IT_IN(FP32, f, 1, 3)), IT_OUT(FP32, 1, 1), g));
    CHECK(isnan(g[0]));
    CHECK_OK(it_run(OP(REDUCE_MAX), &ign, 1, IT_ARGS(IT_IN(FP32, f, 1, 3)), IT_OUT(FP32, 1, 1), g));
    CHECK(g[0] == 3);
    CHECK_OK(it_run(OP(REDUCE_MIN), &ign, 1, IT_ARGS(IT_IN(FP32, f, 1, 3)), IT_OUT(FP32, 1, 1), g));
    CHECK(g[0] == 1);
    CHECK_OK(it_run(OP(REDUCE_MIN), &ign, 1, IT_ARGS(IT_IN(FP32, nn, 1, 2)), IT_OUT(FP32, 1, 1), g));
    CHECK(isnan(g[0]));
    int8_t i8[] = {5, -128, 7}, o8[1];
    CHECK_OK(it_run(OP(REDUCE_MIN), &ax0, 1, IT_ARGS(IT_IN(INT8, i8, 1, 3)), IT_OUT(INT8, 1, 1), o8));
    CHECK(o8[0] == -128);
    CHECK_OK(it_run(OP(REDUCE_MAX), &ax0, 1, IT_ARGS(IT_IN(INT8, i8, 1, 3)), IT_OUT(INT8, 1, 1), o8));
    CHECK(o8[0] == 7);
    float p[] = {2, 3, 4};
    CHECK_OK(it_run(OP(REDUCE_PRODUCT), &ax0, 1, IT_ARGS(IT_IN(FP32, p, 1, 3)), IT_OUT(FP32, 1, 1), g));
    CHECK(g[0] == 24);
    uint8_t b[] = {1, 1, 0, 1}, bz[2];
    CHECK_OK(it_run(OP(REDUCE_ALL), &ax1, 1, IT_ARGS(IT_IN(BOOL, b, 2, 2, 2)), IT_OUT(BOOL, 2, 2, 1), bz));
    CHECK(bz[0] == 1 && bz[1] == 0);
    CHECK_OK(it_run(OP(REDUCE_ANY), &ax0, 1, IT_ARGS(IT_IN(BOOL, b, 2, 2, 2)), IT_OUT(BOOL, 2, 1, 2), bz));
    CHECK(bz[0] == 1 && bz[1] == 1);
    /* empty reduction axis gives the identity */
    CHECK_OK(it_run(OP(REDUCE_SUM), &ax1, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 0)), IT_OUT(INT32, 2, 2, 1), z));
    CHECK(z[0] == 0 && z[1] == 0);
    CHECK_ERR(it_run(OP(REDUCE_PRODUCT), &ax0, 1, IT_ARGS(IT_IN(INT32, a, 1, 3)), IT_OUT(INT32, 1, 1), z),
              CTOSA_ERR_UNSUPPORTED, "int32");
}

/* The threaded path (large tensors) must give the same bits and report
 * failures too. */
static void test_threads(void) {
    enum { N = 1 << 17 };
    int32_t *a = malloc(N * 4), *b = malloc(N * 4), *z1 = malloc(N * 4), *z4 = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        a[i] = i * 7 - 3000;
        b[i] = (i % 5) * 13;
    }
    CHECK_OK(it_run_threads(OP(ADD), NULL, 2,
                            IT_ARGS(IT_IN(INT32, a, 2, 512, 256), IT_IN(INT32, b, 2, 512, 256)),
                            IT_OUT(INT32, 2, 512, 256), z1, 1));
    CHECK_OK(it_run_threads(OP(ADD), NULL, 2,
                            IT_ARGS(IT_IN(INT32, a, 2, 512, 256), IT_IN(INT32, b, 2, 512, 256)),
                            IT_OUT(INT32, 2, 512, 256), z4, 4));
    CHECK(memcmp(z1, z4, N * 4) == 0);
    CHECK(z4[12345] == 12345 * 7 - 3000 + (12345 % 5) * 13);
    b[99999] = 0;
    CHECK_ERR(it_run_threads(OP(INTDIV), NULL, 2,
                             IT_ARGS(IT_IN(INT32, a, 2, 512, 256), IT_IN(INT32, b, 2, 512, 256)),
                             IT_OUT(INT32, 2, 512, 256), z4, 4),
              INV, "by zero");
    free(a);
    free(b);
    free(z1);
    free(z4);
}

/* Random broadcasts of rank 1..5 checked against a naive index mapping,
 * single- and multi-threaded (sizes above the threading threshold make the
 * walk start in the middle of the output). */
static void test_random_broadcast(void) {
    uint64_t rng = 99;
#define RND(n) ((int)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
    for (int iter = 0; iter < 40; iter++) {
        bool large = iter % 4 == 3;
        uint32_t rank = large ? 4 : 1 + (uint32_t)RND(5);
        int64_t out[5], sa[5], sb[5];
        uint64_t n = 1;
        for (uint32_t d = 0; d < rank; d++) {
            out[d] = large ? 16 + RND(8) : 1 + RND(5);
            int pick = RND(3);
            sa[d] = pick == 1 ? 1 : out[d];
            sb[d] = pick == 2 ? 1 : out[d];
            n *= (uint64_t)out[d];
        }
        uint64_t na = 1, nb = 1;
        for (uint32_t d = 0; d < rank; d++) na *= (uint64_t)sa[d], nb *= (uint64_t)sb[d];
        int32_t *a = malloc(na * 4), *b = malloc(nb * 4), *z = malloc(n * 4);
        for (uint64_t i = 0; i < na; i++) a[i] = RND(2000) - 1000;
        for (uint64_t i = 0; i < nb; i++) b[i] = RND(2000) - 1000;
        it_arg args[2] = {{CTOSA_DTYPE_INT32, rank, {0}, a, false}, {CTOSA_DTYPE_INT32, rank, {0}, b, false}};
        it_arg o = {CTOSA_DTYPE_INT32, rank, {0}, NULL, false};
        for (uint32_t d = 0; d < rank; d++) {
            args[0].dims[d] = sa[d];
            args[1].dims[d] = sb[d];
            o.dims[d] = out[d];
        }
        CHECK_OK(it_run_threads(OP(SUB), NULL, 2, args, o, z, 1 + iter % 3));
        if (large) CHECK(n >= (1u << 16)); /* takes the threaded path */
        uint64_t bad = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t rem = i, ia = 0, ib = 0, ma = 1, mb = 1;
            for (int d = (int)rank - 1; d >= 0; d--) {
                uint64_t k = rem % (uint64_t)out[d];
                rem /= (uint64_t)out[d];
                ia += (k % (uint64_t)sa[d]) * ma;
                ib += (k % (uint64_t)sb[d]) * mb;
                ma *= (uint64_t)sa[d];
                mb *= (uint64_t)sb[d];
            }
            bad += z[i] != a[ia] - b[ib];
        }
        CHECK_MSG(bad == 0, "iteration %d: %llu wrong of %llu", iter, (unsigned long long)bad,
                  (unsigned long long)n);
        free(a);
        free(b);
        free(z);
    }
#undef RND
}

int main(void) {
    RUN(test_add_sub_i32);
    RUN(test_broadcast);
    RUN(test_narrow_float_rounding);
    RUN(test_mul);
    RUN(test_intdiv);
    RUN(test_shifts);
    RUN(test_bitwise_logical_clz);
    RUN(test_max_min_nan);
    RUN(test_compare);
    RUN(test_unary);
    RUN(test_negate);
    RUN(test_select);
    RUN(test_reduce);
    RUN(test_threads);
    RUN(test_random_broadcast);
    return th_finish();
}
