/* interp_fuse.c - element-wise chains (interp_fuse.h): the row steps, and
 * the plan-time grouping of runs of element-wise operators that then run
 * tile by tile in one pass over memory.
 *
 * The row loops restate the kernels' statements (kernels_ewise.c,
 * kernels_activation.c, the fast CAST loops of kernels_convert.c) one
 * operation per statement, so every element gets the same bits fused or
 * not; test_interp_chain compares fused runs with the unfused ones byte
 * for byte. Checked integer steps compute the wrapped value in a loop that
 * vectorises and note that something failed; only then a second loop finds
 * the first failing element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_fuse.h"
#include "interp_runtime.h"
#include "interp/int_math.h"
#include "interp/vec_math.h"

/* ------------------------------------------------------------ support */

bool fz_supported(fz_op op, fz_type t, fz_type to) {
    bool f = t == FZ_F32, i32 = t == FZ_I32, i = t == FZ_I8 || t == FZ_I16 || t == FZ_I32;
    switch (op) {
    case FZ_ADD:
    case FZ_SUB: return (f || i32) && to == t;
    case FZ_MUL: return ((f || i32) && to == t) || ((t == FZ_I8 || t == FZ_I16) && to == FZ_I32);
    case FZ_MAX:
    case FZ_MIN: return (f || i32) && to == t;
    case FZ_POW: return f && to == t;
    case FZ_INTDIV: return i32 && to == t;
    case FZ_GT:
    case FZ_GE:
    case FZ_EQ: return (f || i32) && to == FZ_BOOL;
    case FZ_AND:
    case FZ_OR:
    case FZ_XOR:
    case FZ_SHL:
    case FZ_SHR:
    case FZ_ASR:
    case FZ_NOT: return i && to == t;
    case FZ_LAND:
    case FZ_LOR:
    case FZ_LXOR:
    case FZ_LNOT: return t == FZ_BOOL && to == t;
    case FZ_ABS: return (f || i32) && to == t;
    case FZ_NEG:
    case FZ_CLAMP: return (f || i) && to == t;
    case FZ_CLZ: return i32 && to == t;
    case FZ_FLOOR:
    case FZ_CEIL:
    case FZ_EXP:
    case FZ_LOG:
    case FZ_RECIP:
    case FZ_RSQRT:
    case FZ_SIGMOID:
    case FZ_TANH:
    case FZ_ERF:
    case FZ_SIN:
    case FZ_COS:
    case FZ_SILU: return f && to == t;
    case FZ_CAST: return t != to && (t <= FZ_BOOL && to <= FZ_BOOL);
    case FZ_SELECT: return to == t && t <= FZ_BOOL;
    default: return false;
    }
}

/* ------------------------------------------------------------ row loops */

/* The four operand patterns of a binary step: BODY runs per element i
 * with x and y set (either may be one value for every element). The
 * pointers are restrict: a step's result never overlaps its operands. */
#define FZ_BIN_LOOP(T1, BODY)                                                \
    do {                                                                     \
        const T1 *restrict A_ = (const T1 *)a, *restrict B_ = (const T1 *)b; \
        switch (one & 3) {                                                   \
        case 0:                                                              \
            for (size_t i = 0; i < n; i++) {                                 \
                T1 x = A_[i], y = B_[i];                                     \
                BODY;                                                        \
            }                                                                \
            break;                                                           \
        case 1: {                                                            \
            const T1 x = A_[0];                                              \
            for (size_t i = 0; i < n; i++) {                                 \
                T1 y = B_[i];                                                \
                BODY;                                                        \
            }                                                                \
        } break;                                                             \
        case 2: {                                                            \
            const T1 y = B_[0];                                              \
            for (size_t i = 0; i < n; i++) {                                 \
                T1 x = A_[i];                                                \
                BODY;                                                        \
            }                                                                \
        } break;                                                             \
        default: {                                                           \
            const T1 x = A_[0], y = B_[0];                                   \
            for (size_t i = 0; i < n; i++) { BODY; }                         \
        }                                                                    \
        }                                                                    \
    } while (0)

/* Binary step: EXPR of x and y into d. */
#define FZ_BIN(T1, TO, EXPR)             \
    do {                                 \
        TO *restrict D_ = (TO *)d;       \
        FZ_BIN_LOOP(T1, D_[i] = (EXPR)); \
    } while (0)

/* A checked binary step: EXPR is the wrapped result, BAD (on x, y) the
 * REQUIRE failure, noted in bad_ (the loops still vectorise) and then
 * located. */
#define FZ_BIN_CHK(T1, TO, EXPR, BAD, KIND)                          \
    do {                                                             \
        TO *restrict D_ = (TO *)d;                                   \
        int bad_ = 0;                                                \
        FZ_BIN_LOOP(T1, (D_[i] = (EXPR), bad_ |= (BAD)));            \
        if (bad_) {                                                  \
            const T1 *A_ = (const T1 *)a, *B_ = (const T1 *)b;       \
            size_t sa_ = (one & 1) ? 0 : 1, sb_ = (one & 2) ? 0 : 1; \
            for (size_t i = 0; i < n; i++) {                         \
                T1 x = A_[i * sa_], y = B_[i * sb_];                 \
                if (BAD) {                                           \
                    *fk = (KIND);                                    \
                    *fat = i;                                        \
                    *fa = (double)x;                                 \
                    *fb = (double)y;                                 \
                    break;                                           \
                }                                                    \
            }                                                        \
        }                                                            \
    } while (0)

/* Unary step on a full row. */
#define FZ_UN(T1, TO, EXPR)                    \
    do {                                       \
        const T1 *restrict A_ = (const T1 *)a; \
        TO *restrict D_ = (TO *)d;             \
        for (size_t i = 0; i < n; i++) {       \
            T1 x = A_[i];                      \
            D_[i] = (EXPR);                    \
        }                                      \
    } while (0)

/* fp32 functions of vec_math.h, 16 lanes at a time with the tail in a
 * padded vector, as the unfused kernels run them. */
#define FZ_VM(MAC)                                       \
    do {                                                 \
        const float *A_ = (const float *)a;              \
        float *D_ = (float *)d;                          \
        size_t i = 0;                                    \
        for (; i + VM_LANES <= n; i += VM_LANES) {       \
            vm_f x;                                      \
            memcpy(&x, A_ + i, sizeof x);                \
            x = MAC(x);                                  \
            memcpy(D_ + i, &x, sizeof x);                \
        }                                                \
        if (i < n) {                                     \
            vm_f x = {0};                                \
            memcpy(&x, A_ + i, (n - i) * sizeof(float)); \
            x = MAC(x);                                  \
            memcpy(D_ + i, &x, (n - i) * sizeof(float)); \
        }                                                \
    } while (0)

#define FZ_SEL_PICK(T, c, x, y) ((y) ^ (((x) ^ (y)) & (T)(0 - (T)((c) != 0))))
#define FZ_SEL(T)                                                                                      \
    do {                                                                                               \
        const uint8_t *restrict C_ = (const uint8_t *)a;                                               \
        const T *restrict X_ = (const T *)b, *restrict Y_ = (const T *)c;                              \
        T *restrict D_ = (T *)d;                                                                       \
        if ((one & 7) == 0) {                                                                          \
            for (size_t i = 0; i < n; i++) D_[i] = FZ_SEL_PICK(T, C_[i], X_[i], Y_[i]);                \
        } else {                                                                                       \
            size_t s0 = (one & 1) ? 0 : 1, s1 = (one & 2) ? 0 : 1, s2 = (one & 4) ? 0 : 1;             \
            for (size_t i = 0; i < n; i++) D_[i] = FZ_SEL_PICK(T, C_[i * s0], X_[i * s1], Y_[i * s2]); \
        }                                                                                              \
    } while (0)

/* Binary steps of the integer types that share one statement. */
#define FZ_INT3(EXPR8, EXPR16, EXPR32)                             \
    do {                                                           \
        if (s->t == FZ_I8) FZ_BIN(int8_t, int8_t, EXPR8);          \
        else if (s->t == FZ_I16) FZ_BIN(int16_t, int16_t, EXPR16); \
        else FZ_BIN(int32_t, int32_t, EXPR32);                     \
    } while (0)

/* Shifts: the amount y must be in 0..BITS-1 (REQUIRE); the wrapped
 * statement masks it so nothing undefined runs when it is not. */
#define FZ_SHIFTS(STMT8, STMT16, STMT32)                                                         \
    do {                                                                                         \
        if (s->t == FZ_I8) FZ_BIN_CHK(int8_t, int8_t, STMT8, y<0 || y> 7, FZ_E_SHIFT);           \
        else if (s->t == FZ_I16) FZ_BIN_CHK(int16_t, int16_t, STMT16, y<0 || y> 15, FZ_E_SHIFT); \
        else FZ_BIN_CHK(int32_t, int32_t, STMT32, y<0 || y> 31, FZ_E_SHIFT);                     \
    } while (0)

static inline IM_INLINE int8_t asr8(int8_t x, int8_t y, bool rnd) {
    int b = y & 7;
    int8_t r = (int8_t)(x >> b);
    if (rnd && b > 0 && ((x >> (b - 1)) & 1)) r = (int8_t)(r + 1);
    return r;
}
static inline IM_INLINE int16_t asr16(int16_t x, int16_t y, bool rnd) {
    int b = y & 15;
    int16_t r = (int16_t)(x >> b);
    if (rnd && b > 0 && ((x >> (b - 1)) & 1)) r = (int16_t)(r + 1);
    return r;
}
static inline IM_INLINE int32_t asr32(int32_t x, int32_t y, bool rnd) {
    int b = y & 31;
    int32_t r = x >> b;
    if (rnd && b > 0 && ((x >> (b - 1)) & 1)) r = (int32_t)((uint32_t)r + 1u);
    return r;
}

/* floorf and ceilf in operations that vectorise (the compiler keeps the
 * libm calls scalar): r rounds x to the nearest integer (|x| < 2^23, as
 * the fp32 -> int32 cast below), then steps down (up) when it passed x; a
 * zero result takes x's sign (floor(-0) = -0, ceil(-0.5) = -0); NaN,
 * infinities and |x| >= 2^23 give x + 0 (x itself, NaN quietened as
 * floorf does). */
static inline IM_INLINE float fz_round_near(float x) {
    float m = x < 0.0f ? -0x1p23f : 0x1p23f;
    return (x + m) - m;
}
static inline IM_INLINE float fz_floor(float x) {
    float r = fz_round_near(x);
    r = r > x ? r - 1.0f : r;
    r = r == 0.0f ? x * 0.0f : r;
    return fabsf(x) < 0x1p23f ? r : x + 0.0f;
}
static inline IM_INLINE float fz_ceil(float x) {
    float r = fz_round_near(x);
    r = r < x ? r + 1.0f : r;
    r = r == 0.0f ? x * 0.0f : r;
    return fabsf(x) < 0x1p23f ? r : x + 0.0f;
}

/* fp32 -> int32 and -> int8 / int16 as kernels_convert.c's fast loops. */
static inline IM_INLINE int32_t cast_f_i32(float x) {
    float v = x < -0x1p31f ? -0x1p31f : x > 0x1.fffffep30f ? 0x1.fffffep30f : x;
    float m = v < 0.0f ? -0x1p23f : 0x1p23f;
    v = fabsf(v) < 0x1p23f ? (v + m) - m : v;
    v = x != x ? 0.0f : v;
    int32_t r = (int32_t)v;
    return x >= 0x1p31f ? INT32_MAX : r;
}
static inline IM_INLINE int32_t cast_f_small(float x, float lo, float hi) {
    float v = x < lo ? lo : x > hi ? hi : x;
    v = x != x ? 0.0f : v;
    return (int32_t)((v + 0x1.8p23f) - 0x1.8p23f);
}

static inline IM_INLINE void fz_cast(const fz_step *s, void *d, const void *a, size_t n) {
    fz_type t = s->t, to = s->to;
    if (t == FZ_F32) {
        if (to == FZ_I32) FZ_UN(float, int32_t, cast_f_i32(x));
        else if (to == FZ_I16) FZ_UN(float, int16_t, (int16_t)cast_f_small(x, -32768.0f, 32767.0f));
        else if (to == FZ_I8) FZ_UN(float, int8_t, (int8_t)cast_f_small(x, -128.0f, 127.0f));
        else FZ_UN(float, uint8_t, (uint8_t)(x != 0.0f));
        return;
    }
    /* integers and bool: widen through int32 (bool is 0/1) */
#define FZ_CAST_FROM(T1)                                                          \
    do {                                                                          \
        if (to == FZ_F32) FZ_UN(T1, float, (float)(double)x);                     \
        else if (to == FZ_I32) FZ_UN(T1, int32_t, (int32_t)x);                    \
        else if (to == FZ_I16) FZ_UN(T1, int16_t, (int16_t)(uint16_t)(int32_t)x); \
        else if (to == FZ_I8) FZ_UN(T1, int8_t, (int8_t)(uint8_t)(int32_t)x);     \
        else FZ_UN(T1, uint8_t, (uint8_t)(x != 0));                               \
    } while (0)
    if (t == FZ_I32) FZ_CAST_FROM(int32_t);
    else if (t == FZ_I16) FZ_CAST_FROM(int16_t);
    else if (t == FZ_I8) FZ_CAST_FROM(int8_t);
    else FZ_CAST_FROM(uint8_t);
#undef FZ_CAST_FROM
}

/* NEGATE on integers: (zp_out - (x - zp_in)) with each step in int32
 * range (REQUIRE), clipped to the type. */
#define FZ_NEG_INT(T, LO, HI)                           \
    do {                                                \
        const T *A_ = (const T *)a;                     \
        T *D_ = (T *)d;                                 \
        for (size_t i = 0; i < n; i++) {                \
            int64_t v = (int64_t)A_[i] - s->zp_in;      \
            bool bad = v < INT32_MIN || v > INT32_MAX;  \
            v = -v;                                     \
            bad |= v < INT32_MIN || v > INT32_MAX;      \
            v += s->zp_out;                             \
            bad |= v < INT32_MIN || v > INT32_MAX;      \
            D_[i] = (T)(v < LO ? LO : v > HI ? HI : v); \
            if (bad && *fk == FZ_E_NONE) {              \
                *fk = FZ_E_OVERFLOW;                    \
                *fat = i;                               \
                *fa = (double)A_[i];                    \
                *fb = 0;                                \
            }                                           \
        }                                               \
    } while (0)

#define FZ_CLAMP_INT(T)                          \
    do {                                         \
        const T lo = (T)s->ilo, hi = (T)s->ihi;  \
        FZ_UN(T, T, x<lo ? lo : x> hi ? hi : x); \
    } while (0)

/* One step over a row. Sets *fk (FZ_E_*) and the failing element on a
 * REQUIRE failure. */
static inline IM_INLINE void fz_step_row(const fz_step *s, void *const *slots, size_t n, int *fk, size_t *fat,
                                         double *fa, double *fb) {
    void *d = slots[s->dst];
    const void *a = slots[s->src[0]], *b = slots[s->src[1]], *c = slots[s->src[2]];
    const unsigned one = s->one;
    const bool f = s->t == FZ_F32;
    switch ((fz_op)s->op) {
    case FZ_ADD:
        if (f) FZ_BIN(float, float, x + y);
        else
            FZ_BIN_CHK(int32_t, int32_t, (int32_t)((uint32_t)x + (uint32_t)y),
                       (uint64_t)((int64_t)x + (int64_t)y - INT32_MIN) > UINT32_MAX, FZ_E_OVERFLOW);
        break;
    case FZ_SUB:
        if (f) FZ_BIN(float, float, x - y);
        else
            FZ_BIN_CHK(int32_t, int32_t, (int32_t)((uint32_t)x - (uint32_t)y),
                       (uint64_t)((int64_t)x - (int64_t)y - INT32_MIN) > UINT32_MAX, FZ_E_OVERFLOW);
        break;
    case FZ_MUL:
        if (f) FZ_BIN(float, float, x *y);
        else if (s->t == FZ_I8) FZ_BIN(int8_t, int32_t, (int32_t)x * (int32_t)y);
        else if (s->t == FZ_I16) FZ_BIN(int16_t, int32_t, (int32_t)x * (int32_t)y);
        else if (s->shift == 0) FZ_BIN(int32_t, int32_t, (int32_t)((uint32_t)x * (uint32_t)y));
        else {
            const int sh = s->shift;
            const __int128 half = (__int128)1 << (sh - 1);
#define FZ_MULSH(x, y) ((((__int128)((int64_t)(x) * (int64_t)(y))) + half) >> sh)
            FZ_BIN_CHK(int32_t, int32_t, (int32_t)(uint32_t)(uint64_t)FZ_MULSH(x, y),
                       FZ_MULSH(x, y) < INT32_MIN || FZ_MULSH(x, y) > INT32_MAX, FZ_E_OVERFLOW);
#undef FZ_MULSH
        }
        break;
    case FZ_MAX:
        if (!f) FZ_BIN(int32_t, int32_t, x >= y ? x : y);
        else if (s->ignore_nan)
            FZ_BIN(float, float, (x != x || y != y) ? (x != x ? y : x) : (x >= y ? x : y));
        else FZ_BIN(float, float, (x != x || y != y) ? NAN : (x >= y ? x : y));
        break;
    case FZ_MIN:
        if (!f) FZ_BIN(int32_t, int32_t, x < y ? x : y);
        else if (s->ignore_nan) FZ_BIN(float, float, (x != x || y != y) ? (x != x ? y : x) : (x < y ? x : y));
        else FZ_BIN(float, float, (x != x || y != y) ? NAN : (x < y ? x : y));
        break;
    case FZ_POW: FZ_BIN(float, float, (float)pow((double)x, (double)y)); break;
    case FZ_INTDIV:
        FZ_BIN_CHK(int32_t, int32_t, (y == 0 || (x == INT32_MIN && y == -1)) ? 0 : x / y,
                   y == 0 || (x == INT32_MIN && y == -1), y == 0 ? FZ_E_DIV0 : FZ_E_OVERFLOW);
        break;
    case FZ_GT:
        if (f) FZ_BIN(float, uint8_t, (uint8_t)(x > y));
        else FZ_BIN(int32_t, uint8_t, (uint8_t)(x > y));
        break;
    case FZ_GE:
        if (f) FZ_BIN(float, uint8_t, (uint8_t)(x >= y));
        else FZ_BIN(int32_t, uint8_t, (uint8_t)(x >= y));
        break;
    case FZ_EQ:
        if (f) FZ_BIN(float, uint8_t, (uint8_t)(x == y));
        else FZ_BIN(int32_t, uint8_t, (uint8_t)(x == y));
        break;
    case FZ_AND: FZ_INT3((int8_t)(x & y), (int16_t)(x & y), x & y); break;
    case FZ_OR: FZ_INT3((int8_t)(x | y), (int16_t)(x | y), x | y); break;
    case FZ_XOR: FZ_INT3((int8_t)(x ^ y), (int16_t)(x ^ y), x ^ y); break;
    case FZ_SHL:
        FZ_SHIFTS((int8_t)(uint8_t)((uint8_t)x << (y & 7)), (int16_t)(uint16_t)((uint16_t)x << (y & 15)),
                  (int32_t)((uint32_t)x << (y & 31)));
        break;
    case FZ_SHR:
        FZ_SHIFTS((int8_t)(uint8_t)((uint8_t)x >> (y & 7)), (int16_t)(uint16_t)((uint16_t)x >> (y & 15)),
                  (int32_t)((uint32_t)x >> (y & 31)));
        break;
    case FZ_ASR: {
        const bool rnd = s->round;
        FZ_SHIFTS(asr8(x, y, rnd), asr16(x, y, rnd), asr32(x, y, rnd));
        break;
    }
    case FZ_LAND: FZ_BIN(uint8_t, uint8_t, (uint8_t)(x && y)); break;
    case FZ_LOR: FZ_BIN(uint8_t, uint8_t, (uint8_t)(x || y)); break;
    case FZ_LXOR: FZ_BIN(uint8_t, uint8_t, (uint8_t)((x != 0) != (y != 0))); break;
    case FZ_ABS:
        if (f) FZ_UN(float, float, fabsf(x));
        else {
            FZ_UN(int32_t, int32_t, x < 0 ? (int32_t)(0u - (uint32_t)x) : x);
            const int32_t *A_ = a;
            int bad = 0;
            for (size_t i = 0; i < n; i++) bad |= A_[i] == INT32_MIN;
            for (size_t i = 0; bad && i < n; i++)
                if (A_[i] == INT32_MIN) {
                    *fk = FZ_E_OVERFLOW;
                    *fat = i;
                    *fa = (double)A_[i];
                    *fb = 0;
                    break;
                }
        }
        break;
    case FZ_NEG:
        if (f) FZ_UN(float, float, -x);
        else if (s->t == FZ_I8) FZ_NEG_INT(int8_t, INT8_MIN, INT8_MAX);
        else if (s->t == FZ_I16) FZ_NEG_INT(int16_t, INT16_MIN, INT16_MAX);
        else FZ_NEG_INT(int32_t, INT32_MIN, INT32_MAX);
        break;
    case FZ_FLOOR: FZ_UN(float, float, fz_floor(x)); break;
    case FZ_CEIL: FZ_UN(float, float, fz_ceil(x)); break;
    case FZ_EXP: FZ_VM(VM_EXP); break;
    case FZ_LOG: FZ_UN(float, float, x == 0 ? -INFINITY : x < 0 ? NAN : (float)log((double)x)); break;
    case FZ_RECIP: FZ_UN(float, float, 1.0f / x); break;
    case FZ_RSQRT: FZ_UN(float, float, x < 0 ? NAN : (float)(1.0 / sqrt((double)x))); break;
    case FZ_SIGMOID: FZ_VM(VM_SIGMOID); break;
    case FZ_TANH: FZ_VM(VM_TANH); break;
    case FZ_ERF: FZ_VM(VM_ERF); break;
    case FZ_SIN: FZ_UN(float, float, (float)sin((double)x)); break;
    case FZ_COS: FZ_UN(float, float, (float)cos((double)x)); break;
    case FZ_SILU: FZ_VM(VM_SILU); break;
    case FZ_NOT:
        if (s->t == FZ_I8) FZ_UN(int8_t, int8_t, (int8_t)~x);
        else if (s->t == FZ_I16) FZ_UN(int16_t, int16_t, (int16_t)~x);
        else FZ_UN(int32_t, int32_t, ~x);
        break;
    case FZ_LNOT: FZ_UN(uint8_t, uint8_t, (uint8_t)!x); break;
    case FZ_CLZ: FZ_UN(int32_t, int32_t, x == 0 ? 32 : __builtin_clz((uint32_t)x)); break;
    case FZ_CLAMP:
        if (f) {
            const float lo = s->flo, hi = s->fhi;
            if (s->ignore_nan) FZ_UN(float, float, x != x ? lo : (x < lo ? lo : x > hi ? hi : x));
            else FZ_UN(float, float, x<lo ? lo : x> hi ? hi : x);
        } else if (s->t == FZ_I8) FZ_CLAMP_INT(int8_t);
        else if (s->t == FZ_I16) FZ_CLAMP_INT(int16_t);
        else FZ_CLAMP_INT(int32_t);
        break;
    case FZ_CAST: fz_cast(s, d, a, n); break;
    case FZ_SELECT:
        if (s->t == FZ_F32 || s->t == FZ_I32) FZ_SEL(uint32_t);
        else if (s->t == FZ_I16) FZ_SEL(uint16_t);
        else FZ_SEL(uint8_t);
        break;
    default: break;
    }
}

/* All steps over one row; false (and *fail) on the first failing step. */
static inline IM_INLINE bool fz_row(const fz_step *st, uint32_t n_st, void *const *slots, size_t n,
                                    fz_fail *fail) {
    bool ok = true;
    for (uint32_t k = 0; k < n_st; k++) {
        int kind = FZ_E_NONE;
        size_t at = 0;
        double fa = 0, fb = 0;
        fz_step_row(&st[k], slots, n, &kind, &at, &fa, &fb);
        if (kind != FZ_E_NONE && ok) {
            ok = false;
            if (fail) *fail = (fz_fail){.step = k, .kind = kind, .at = at, .a = fa, .b = fb};
        }
    }
    return ok;
}

typedef struct fz_row_job {
    const fz_step *st;
    uint32_t n_st;
    void *const *slots;
    fz_fail *fail;
    bool ok;
} fz_row_job;

static inline IM_INLINE void fz_rows_impl(void *arg, size_t b, size_t e) {
    fz_row_job *j = arg;
    (void)b;
    j->ok = fz_row(j->st, j->n_st, j->slots, e, j->fail);
}
IM_MULTIVERSION(fz_rows, fz_rows_impl)

bool fz_run_row(const fz_step *steps, uint32_t n_steps, void *const *slots, size_t n, fz_fail *fail) {
    fz_row_job j = {steps, n_steps, slots, fail, true};
    if (n) fz_rows(&j, 0, n);
    return j.ok;
}

/* ------------------------------------------------------------ groups */

/* Registers (tile buffers) a group may use: FZ_MAX_REGS rows of FZ_TILE
 * elements of up to 4 bytes live on the stack of the thread running a
 * range of tiles (64 KiB). */
#define FZ_MAX_REGS 32
#define FZ_MAX_SLOTS 255
#define FZ_MAX_STEPS 200

/* How a group reads an operand from outside the group. Every broadcast
 * the group takes is affine in the element index i: element i of the group
 * reads element (i / inner) % period of the operand (the operand's
 * dimensions that are not broadcast form one run of the output's
 * dimensions). Other broadcasts (say [N, 1, W, 1] onto [N, C, W, H]) end
 * a group: a per-element gather costs more than the pass it saves. */
enum {
    FZ_X_FLAT, /* the output's shape: read in place */
    FZ_X_ONE,  /* one element for every element */
    FZ_X_ROW,  /* inner 1: a row of period elements repeated (per channel) */
    FZ_X_REP   /* inner > 1: each value repeated inner times (per row) */
};

/* An operand from outside the group. */
typedef struct fz_xin {
    const itensor *t;
    uint8_t slot, mode, reg; /* reg: the tile buffer of an operand filled per tile */
    bool fill;               /* ROW / REP: copied into reg per tile, else read in place */
    size_t es;
    uint64_t inner, period;
} fz_xin;

typedef struct fz_xout {
    itensor *t;
    uint8_t slot;
    size_t es;
} fz_xout;

/* The operator behind a step, as planned (for its messages). */
typedef struct fz_src {
    const ctosa_op *op;
    const char *where;
    itensor **in, **out;
    uint32_t n_in, n_out;
} fz_src;

struct fz_group {
    fz_step *steps;
    uint32_t n_steps;
    fz_src *srcs;
    fz_xin *xin;
    uint32_t n_xin;
    fz_xout *xout;
    uint32_t n_xout;
    uint8_t reg_slot[FZ_MAX_REGS]; /* slot of each register */
    uint32_t n_regs;
    uint32_t n_slots;
    const itensor *shape; /* the common output shape */
    uint64_t count;
    /* Tiles never cross a multiple of row (so ROW / REP operands aligned
     * to it are read in place): each row of row elements is row_tiles
     * tiles of up to tile elements, tiles in all. */
    uint64_t row;
    size_t tile, row_tiles, tiles;
};

static fz_type fz_type_of(ctosa_dtype t, bool *ok) {
    switch (t) {
    case CTOSA_DTYPE_FP32: return FZ_F32;
    case CTOSA_DTYPE_INT8: return FZ_I8;
    case CTOSA_DTYPE_INT16: return FZ_I16;
    case CTOSA_DTYPE_INT32: return FZ_I32;
    case CTOSA_DTYPE_BOOL: return FZ_BOOL;
    default: *ok = false; return FZ_F32;
    }
}

static slot *fz_slot(const rplan *p, const itensor *t) {
    slot *s = (slot *)((char *)t - offsetof(slot, t));
    return s >= p->slots && s < p->slots + p->n_slots ? s : NULL;
}

/* The broadcast rules of the element-wise kernels' bc_setup (they fail
 * the operator otherwise, so such an operator is not fused). */
static bool fz_bcast_ok(itensor *const *in, uint32_t n, const itensor *out) {
    for (uint32_t k = 0; k < n; k++) {
        if (in[k]->rank != out->rank) return false;
        for (uint32_t d = 0; d < out->rank; d++)
            if (in[k]->shape[d] != out->shape[d] && in[k]->shape[d] != 1) return false;
    }
    for (uint32_t d = 0; d < out->rank; d++) {
        if (out->shape[d] == 1) continue;
        bool any = false;
        for (uint32_t k = 0; k < n; k++) any |= in[k]->shape[d] == out->shape[d];
        if (!any) return false;
    }
    return true;
}

/* The affine form of operand t's broadcast onto out (fz_xin): element i
 * of out reads element (i / inner) % period of t. False when the
 * dimensions t keeps are not one run of out's dimensions. */
static bool fz_affine(const itensor *t, const itensor *out, uint64_t *inner, uint64_t *period) {
    uint64_t in = 1, per = 1;
    int state = 0; /* 0: trailing broadcast dimensions, 1: the kept run, 2: after it */
    for (int d = (int)out->rank - 1; d >= 0; d--) {
        int64_t n = out->shape[d];
        if (n == 1) continue;
        if (t->shape[d] == n) {
            if (state == 2) return false;
            state = 1;
            per *= (uint64_t)n;
        } else if (state == 0) {
            in *= (uint64_t)n;
        } else {
            state = 2;
        }
    }
    *inner = in;
    *period = per;
    return true;
}

/* The element count a tile of a ROW / REP operand of this inner and
 * period must not cross to be read in place. */
static uint64_t fz_align(uint64_t inner, uint64_t period) { return inner > 1 ? inner : period; }

/* A constant scalar operand (MUL's shift, NEGATE's zero points). */
static bool fz_const_i(const rplan *p, const itensor *t, int64_t *v) {
    const slot *s = fz_slot(p, t);
    return s && s->kind == SLOT_CONST && s->t.data && im_scalar_i(t, v);
}
static bool fz_const_f(const rplan *p, const itensor *t, float *v) {
    const slot *s = fz_slot(p, t);
    if (!s || s->kind != SLOT_CONST || !s->t.data || t->count < 1) return false;
    if (ctosa_dtype_is_float(t->dtype)) *v = ((const float *)t->data)[0];
    else *v = (float)im_load_i(t->dtype, t->data, 0);
    return true;
}

/* A CLAMP bound from its attribute bytes (fp32, int8, int16, int32). */
static bool fz_bound(ctosa_bytes b, ctosa_dtype t, int32_t *iv, float *fv) {
    int bytes = ctosa_dtype_bits(t) / 8;
    if (bytes <= 0 || !b.p || b.n < (uint32_t)bytes) return false;
    const uint8_t *q = b.p;
    switch (t) {
    case CTOSA_DTYPE_INT8: *iv = (int8_t)q[0]; return true;
    case CTOSA_DTYPE_INT16: *iv = (int16_t)rd_u16(q); return true;
    case CTOSA_DTYPE_INT32: *iv = (int32_t)rd_u32(q); return true;
    case CTOSA_DTYPE_FP32: {
        uint32_t u = rd_u32(q);
        memcpy(fv, &u, 4);
        return true;
    }
    default: return false;
    }
}

/* The step for operator po when it can run in a group: every check its
 * kernel makes passes (the values of constant operands included), so the
 * only failures left are the value-dependent REQUIREs the steps report.
 * *n_data: how many of its inputs are element operands. */
static bool fz_step_of(const rplan *p, const pop *po, fz_step *st, uint32_t *n_data) {
    const ctosa_op *op = po->op;
    ctosa_op_kind k = op->kind;
    memset(st, 0, sizeof *st);
    /* a SiLU the plan fused already (MUL reading x twice, interp_k_fused_SILU) is one step */
    bool silu = po->fn == interp_k_fused_SILU && k == CTOSA_OP_MUL;
    if (po->skip || po->fused || po->has_post || po->has_rescale || po->rescale_by >= 0 || po->n_out != 1 ||
        !po->out[0] || (po->fn != interp_kernel_for(k) && !silu) ||
        !ctosa_op_counts_fit(k, po->n_in, po->n_out, true))
        return false;
    for (uint32_t i = 0; i < po->n_in; i++)
        if (!po->in[i]) return false;
    const itensor *out = po->out[0];
    const slot *so = fz_slot(p, out);
    if (!so || so->kind != SLOT_ACT || so->def != (int64_t)(po - p->ops)) return false;
    bool ok = true;
    fz_type to = fz_type_of(out->dtype, &ok);
    fz_type t = po->n_in ? fz_type_of(po->in[0]->dtype, &ok) : FZ_F32;
    if (!ok) return false;
    fz_op fo;
    uint32_t nd = 1;
    switch (k) {
    case CTOSA_OP_ADD:
        fo = FZ_ADD;
        nd = 2;
        break;
    case CTOSA_OP_SUB:
        fo = FZ_SUB;
        nd = 2;
        break;
    case CTOSA_OP_MUL:
        fo = silu ? FZ_SILU : FZ_MUL;
        nd = silu ? 1 : 2;
        break;
    case CTOSA_OP_MAXIMUM:
        fo = FZ_MAX;
        nd = 2;
        break;
    case CTOSA_OP_MINIMUM:
        fo = FZ_MIN;
        nd = 2;
        break;
    case CTOSA_OP_POW:
        fo = FZ_POW;
        nd = 2;
        break;
    case CTOSA_OP_INTDIV:
        fo = FZ_INTDIV;
        nd = 2;
        break;
    case CTOSA_OP_GREATER:
        fo = FZ_GT;
        nd = 2;
        break;
    case CTOSA_OP_GREATER_EQUAL:
        fo = FZ_GE;
        nd = 2;
        break;
    case CTOSA_OP_EQUAL:
        fo = FZ_EQ;
        nd = 2;
        break;
    case CTOSA_OP_BITWISE_AND:
        fo = FZ_AND;
        nd = 2;
        break;
    case CTOSA_OP_BITWISE_OR:
        fo = FZ_OR;
        nd = 2;
        break;
    case CTOSA_OP_BITWISE_XOR:
        fo = FZ_XOR;
        nd = 2;
        break;
    case CTOSA_OP_LOGICAL_LEFT_SHIFT:
        fo = FZ_SHL;
        nd = 2;
        break;
    case CTOSA_OP_LOGICAL_RIGHT_SHIFT:
        fo = FZ_SHR;
        nd = 2;
        break;
    case CTOSA_OP_ARITHMETIC_RIGHT_SHIFT:
        fo = FZ_ASR;
        nd = 2;
        break;
    case CTOSA_OP_LOGICAL_AND:
        fo = FZ_LAND;
        nd = 2;
        break;
    case CTOSA_OP_LOGICAL_OR:
        fo = FZ_LOR;
        nd = 2;
        break;
    case CTOSA_OP_LOGICAL_XOR:
        fo = FZ_LXOR;
        nd = 2;
        break;
    case CTOSA_OP_ABS: fo = FZ_ABS; break;
    case CTOSA_OP_NEGATE: fo = FZ_NEG; break;
    case CTOSA_OP_FLOOR: fo = FZ_FLOOR; break;
    case CTOSA_OP_CEIL: fo = FZ_CEIL; break;
    case CTOSA_OP_EXP: fo = FZ_EXP; break;
    case CTOSA_OP_LOG: fo = FZ_LOG; break;
    case CTOSA_OP_RECIPROCAL: fo = FZ_RECIP; break;
    case CTOSA_OP_RSQRT: fo = FZ_RSQRT; break;
    case CTOSA_OP_SIGMOID: fo = FZ_SIGMOID; break;
    case CTOSA_OP_TANH: fo = FZ_TANH; break;
    case CTOSA_OP_ERF: fo = FZ_ERF; break;
    case CTOSA_OP_SIN: fo = FZ_SIN; break;
    case CTOSA_OP_COS: fo = FZ_COS; break;
    case CTOSA_OP_BITWISE_NOT: fo = FZ_NOT; break;
    case CTOSA_OP_LOGICAL_NOT: fo = FZ_LNOT; break;
    case CTOSA_OP_CLZ: fo = FZ_CLZ; break;
    case CTOSA_OP_CLAMP: fo = FZ_CLAMP; break;
    case CTOSA_OP_CAST: fo = FZ_CAST; break;
    case CTOSA_OP_SELECT:
        fo = FZ_SELECT;
        nd = 3;
        if (po->in[0]->dtype != CTOSA_DTYPE_BOOL || po->in[1]->dtype != po->in[2]->dtype ||
            po->in[1]->dtype != out->dtype)
            return false;
        t = fz_type_of(po->in[1]->dtype, &ok);
        break;
    default: return false;
    }
    if (po->n_in < nd || !ok) return false;
    /* operand types as the kernels check them */
    if (nd == 2 && po->in[1]->dtype != po->in[0]->dtype) return false;
    if (nd >= 2 && !fz_bcast_ok(po->in, nd, out)) return false;
    for (uint32_t i = 0; i < nd; i++) {
        uint64_t inner, period;
        if (!fz_affine(po->in[i], out, &inner, &period)) return false;
    }
    if (nd == 1 && !interp_same_shape(po->in[0], out)) return false;
    if (!fz_supported(fo, t, to)) return false;
    st->op = (uint8_t)fo;
    st->t = (uint8_t)t;
    st->to = (uint8_t)to;
    const ctosa_attr *a = &op->attr;
    int64_t v;
    switch (fo) {
    case FZ_MUL:
        if (po->n_in > 2) {
            if (!fz_const_i(p, po->in[2], &v) || v < 0 || v > 63 || (t != FZ_I32 && v != 0)) return false;
            st->shift = (int32_t)v;
        }
        break;
    case FZ_MAX:
    case FZ_MIN: st->ignore_nan = a->nan_mode == CTOSA_NAN_IGNORE; break;
    case FZ_ASR: st->round = a->round; break;
    case FZ_NEG:
        if (t == FZ_F32) {
            float z;
            for (uint32_t i = 1; i < po->n_in && i < 3; i++)
                if (!fz_const_f(p, po->in[i], &z) || z != 0) return false;
        } else {
            int64_t zp[2] = {0, 0};
            for (uint32_t i = 1; i < po->n_in && i < 3; i++)
                if (!fz_const_i(p, po->in[i], &zp[i - 1])) return false;
            if (t != FZ_I8 && (zp[0] != 0 || zp[1] != 0)) return false;
            if (zp[0] < INT32_MIN || zp[0] > INT32_MAX || zp[1] < INT32_MIN || zp[1] > INT32_MAX)
                return false;
            st->zp_in = (int32_t)zp[0];
            st->zp_out = (int32_t)zp[1];
        }
        break;
    case FZ_CLAMP:
        if (t == FZ_F32) {
            if (!fz_bound(a->min_val, out->dtype, NULL, &st->flo) ||
                !fz_bound(a->max_val, out->dtype, NULL, &st->fhi) || isnan(st->flo) || isnan(st->fhi) ||
                st->fhi < st->flo)
                return false;
            st->ignore_nan = a->nan_mode == CTOSA_NAN_IGNORE;
        } else if (!fz_bound(a->min_val, out->dtype, &st->ilo, NULL) ||
                   !fz_bound(a->max_val, out->dtype, &st->ihi, NULL) || st->ihi < st->ilo)
            return false;
        break;
    default: break;
    }
    *n_data = nd;
    return true;
}

/* Builds the group of the m operators idx[] (in order, all with the output
 * shape of the first): slots for the outside operands, the tensors read
 * after the group (or that are block outputs), and registers for the
 * rest, reused once their last reader in the group has run. NULL when it
 * needs more registers or slots than a tile's stack holds, or memory is
 * short. */
static fz_group *fz_build(rplan *p, arena *A, const uint32_t *idx, uint32_t m, const uint32_t *readers) {
    fz_group *g = arena_zalloc(A, sizeof *g);
    if (!g) return NULL;
    g->steps = arena_zalloc(A, m * sizeof *g->steps);
    g->srcs = arena_zalloc(A, m * sizeof *g->srcs);
    g->xin = arena_zalloc(A, 3 * m * sizeof *g->xin);
    g->xout = arena_zalloc(A, m * sizeof *g->xout);
    int64_t *last = calloc(m, sizeof *last);
    uint32_t *reads = calloc(m, sizeof *reads), *vslot = calloc(m, sizeof *vslot),
             *nd = calloc(m, sizeof *nd);
    bool *kept = calloc(m, sizeof *kept);
    int64_t owner[FZ_MAX_REGS];
    bool ok = g->steps && g->srcs && g->xin && g->xout && last && reads && vslot && nd && kept;
    g->shape = p->ops[idx[0]].out[0];
    g->count = g->shape->count;
    /* producer of each input, in-group reads, last reader */
    for (uint32_t j = 0; ok && j < m; j++) {
        pop *po = &p->ops[idx[j]];
        ok = fz_step_of(p, po, &g->steps[j], &nd[j]);
        last[j] = -1;
        for (uint32_t k = 0; ok && k < po->n_in; k++) /* a fused SiLU reads x twice */
            for (uint32_t v = 0; v < j; v++)
                if (p->ops[idx[v]].out[0] == po->in[k]) {
                    reads[v]++;
                    last[v] = j;
                }
    }
    for (uint32_t j = 0; ok && j < m; j++) {
        const slot *s = fz_slot(p, p->ops[idx[j]].out[0]);
        kept[j] = s->is_output || readers[s - p->slots] > reads[j];
    }
    /* The tile alignment: the smallest run or period of at least
     * FZ_MIN_ROW elements among the broadcast operands (shorter ones are
     * copied into a tile buffer per tile). Runs and periods are products
     * of trailing output dimensions, so the larger ones are multiples of
     * the row and read in place too. */
    g->row = g->count;
    for (uint32_t j = 0; ok && j < m; j++) {
        const pop *po = &p->ops[idx[j]];
        for (uint32_t k = 0; k < nd[j]; k++) {
            const itensor *t = po->in[k];
            uint64_t inner, period;
            if (t->count == 1 || interp_same_shape(t, g->shape) || !fz_affine(t, g->shape, &inner, &period))
                continue;
            uint64_t a = fz_align(inner, period);
            if (a >= FZ_MIN_ROW && a < g->row) g->row = a;
        }
    }
    uint32_t free_regs = 0; /* bit r: register r is free */
    for (uint32_t j = 0; ok && j < m; j++) {
        pop *po = &p->ops[idx[j]];
        fz_step *st = &g->steps[j];
        g->srcs[j] = (fz_src){po->op, po->where, po->in, po->out, po->n_in, po->n_out};
        for (uint32_t k = 0; ok && k < nd[j]; k++) {
            const itensor *t = po->in[k];
            int64_t v = -1;
            for (uint32_t u = 0; u < j && v < 0; u++)
                if (p->ops[idx[u]].out[0] == t) v = u;
            if (v >= 0) {
                st->src[k] = (uint8_t)vslot[v];
                continue;
            }
            fz_xin *x = NULL;
            for (uint32_t u = 0; u < g->n_xin && !x; u++)
                if (g->xin[u].t == t) x = &g->xin[u];
            if (!x) {
                x = &g->xin[g->n_xin++];
                x->t = t;
                x->es = interp_elem_size(t->dtype);
                x->slot = (uint8_t)g->n_slots++;
                uint64_t inner = 1, period = 1;
                fz_affine(t, g->shape, &inner, &period); /* fz_step_of checked it */
                x->inner = inner;
                x->period = period;
                x->mode = interp_same_shape(t, g->shape) ? FZ_X_FLAT
                          : t->count == 1                ? FZ_X_ONE
                          : inner == 1                   ? FZ_X_ROW
                                                         : FZ_X_REP;
                x->fill = (x->mode == FZ_X_ROW || x->mode == FZ_X_REP) && fz_align(inner, period) < g->row;
                if (x->fill) {
                    if (g->n_regs >= FZ_MAX_REGS) {
                        ok = false;
                    } else {
                        x->reg = (uint8_t)g->n_regs++;
                        g->reg_slot[x->reg] = 0xff; /* never a value's */
                        owner[x->reg] = -1;
                    }
                }
            }
            st->src[k] = x->slot;
            /* one value per tile: a scalar, or a run that tiles never cross */
            if (x->mode == FZ_X_ONE || (x->mode == FZ_X_REP && !x->fill)) st->one |= (uint8_t)(1u << k);
        }
        if (!ok) break;
        if (kept[j]) {
            fz_xout *x = &g->xout[g->n_xout++];
            x->t = po->out[0];
            x->es = interp_elem_size(x->t->dtype);
            x->slot = (uint8_t)g->n_slots++;
            vslot[j] = x->slot;
        } else {
            int r = free_regs ? __builtin_ctz(free_regs) : -1;
            if (r < 0) {
                if (g->n_regs >= FZ_MAX_REGS) {
                    ok = false;
                    break;
                }
                r = (int)g->n_regs++;
                g->reg_slot[r] = (uint8_t)g->n_slots++;
            }
            free_regs &= ~(1u << r);
            owner[r] = j;
            vslot[j] = g->reg_slot[r];
        }
        st->dst = (uint8_t)vslot[j];
        /* registers whose value has no reader after this step */
        for (uint32_t r = 0; r < g->n_regs; r++) {
            if (free_regs & (1u << r) || g->reg_slot[r] == 0xff) continue;
            int64_t v = owner[r];
            if (v >= 0 && last[v] <= (int64_t)j) free_regs |= 1u << r;
        }
        if (g->n_slots > FZ_MAX_SLOTS) ok = false;
    }
    free(last);
    free(reads);
    free(vslot);
    free(nd);
    free(kept);
    if (!ok) return NULL;
    g->n_steps = m;
    /* Longer tiles while the registers fit FZ_TILE_L1 bytes: each step's
     * loop then runs longer per call. */
    g->tile = FZ_TILE;
    while (g->tile * 2 <= FZ_TILE_MAX && (size_t)g->n_regs * g->tile * 2 * 4 <= FZ_TILE_L1) g->tile *= 2;
    if (g->row) {
        g->row_tiles = (size_t)((g->row + g->tile - 1) / g->tile);
        g->tiles = (size_t)(g->count / g->row) * g->row_tiles;
    }
    return g;
}

/* ------------------------------------------------------------ running */

typedef struct fz_job {
    const fz_group *g;
    int lock;
    bool failed;
    fz_fail fail; /* .at: element of the tensor */
} fz_job;

/* Keeps the failure of the earliest step, at its lowest element: what the
 * operators run one after the other report (each kernel reports its first
 * failing element, and an earlier operator's failure stops the run). */
static void fz_note(fz_job *j, const fz_fail *f, uint64_t t0) {
    while (__atomic_test_and_set(&j->lock, __ATOMIC_ACQUIRE)) {}
    uint64_t at = t0 + f->at;
    if (!j->failed || f->step < j->fail.step || (f->step == j->fail.step && at < j->fail.at)) {
        j->fail = *f;
        j->fail.at = (size_t)at;
        j->failed = true;
    }
    __atomic_clear(&j->lock, __ATOMIC_RELEASE);
}

/* Copies the tile [t0, t0 + n) of a ROW / REP operand into buffer d: runs
 * of the row (memcpy) or runs of one value (loops that vectorise as
 * stores). */
static inline IM_INLINE void fz_fill(const fz_xin *x, uint64_t t0, size_t n, void *d) {
    const char *s = x->t->data;
    size_t es = x->es;
    char *o = d;
    if (x->mode == FZ_X_ROW) {
        uint64_t c = x->period, pos = t0 % c;
        for (size_t i = 0; i < n;) {
            size_t run = (size_t)(c - pos) < n - i ? (size_t)(c - pos) : n - i;
            memcpy(o + i * es, s + pos * es, run * es);
            i += run;
            pos = 0;
        }
        return;
    }
    uint64_t v = t0 / x->inner, pos = t0 % x->inner;
    for (size_t i = 0; i < n; v++) {
        size_t run = (size_t)(x->inner - pos) < n - i ? (size_t)(x->inner - pos) : n - i;
        size_t at = (size_t)(v % x->period);
        if (es == 4) {
            uint32_t val, *w = (uint32_t *)(void *)(o + i * 4);
            memcpy(&val, s + at * 4, 4);
            for (size_t k = 0; k < run; k++) w[k] = val;
        } else if (es == 2) {
            uint16_t val, *w = (uint16_t *)(void *)(o + i * 2);
            memcpy(&val, s + at * 2, 2);
            for (size_t k = 0; k < run; k++) w[k] = val;
        } else {
            memset(o + i, s[at], run);
        }
        i += run;
        pos = 0;
    }
}

static inline IM_INLINE void fz_tiles_impl(void *arg, size_t tb, size_t te) {
    fz_job *j = arg;
    const fz_group *g = j->g;
    _Alignas(64) unsigned char buf[FZ_MAX_REGS * FZ_TILE * 4]; /* >= n_regs * tile * 4 */
    const size_t tl = g->tile;
    void *slots[FZ_MAX_SLOTS + 1];
    for (uint32_t r = 0; r < g->n_regs; r++)
        if (g->reg_slot[r] != 0xff) slots[g->reg_slot[r]] = buf + (size_t)r * tl * 4;
    for (uint32_t k = 0; k < g->n_xin; k++) {
        const fz_xin *x = &g->xin[k];
        slots[x->slot] = x->fill ? buf + (size_t)x->reg * tl * 4 : x->t->data;
    }
    for (size_t tile = tb; tile < te; tile++) {
        size_t c = tile % g->row_tiles;
        uint64_t t0 = (uint64_t)(tile / g->row_tiles) * g->row + (uint64_t)c * tl;
        size_t n = g->row - (uint64_t)c * tl < tl ? (size_t)(g->row - (uint64_t)c * tl) : tl;
        for (uint32_t k = 0; k < g->n_xin; k++) {
            const fz_xin *x = &g->xin[k];
            char *base = x->t->data;
            if (x->mode == FZ_X_ONE) continue;
            if (x->fill) fz_fill(x, t0, n, buf + (size_t)x->reg * tl * 4);
            else if (x->mode == FZ_X_FLAT) slots[x->slot] = base + t0 * x->es;
            else if (x->mode == FZ_X_ROW) slots[x->slot] = base + (t0 % x->period) * x->es;
            else slots[x->slot] = base + ((t0 / x->inner) % x->period) * x->es;
        }
        for (uint32_t k = 0; k < g->n_xout; k++)
            slots[g->xout[k].slot] = (char *)g->xout[k].t->data + t0 * g->xout[k].es;
        fz_fail f;
        if (!fz_row(g->steps, g->n_steps, slots, n, &f)) fz_note(j, &f, t0);
    }
}
IM_MULTIVERSION(fz_tiles, fz_tiles_impl)

ctosa_error *interp_k_fused_CHAIN(const interp_op *o) {
    const fz_group *g = o->ctx->cur->ops[o->index].chain;
    fz_job j = {.g = g};
    size_t tiles = g->tiles;
    /* threads pay off from about 64K element-operations per wake-up */
    if (tiles > 1 && (double)g->count * g->n_steps >= IM_PAR_MIN_ELEMS / 2)
        interp_parallel_for(o->ctx, tiles, fz_tiles, &j);
    else if (tiles) fz_tiles(&j, 0, tiles);
    if (!j.failed) return NULL;
    const fz_src *s = &g->srcs[j.fail.step];
    interp_op fo = *o;
    fo.op = s->op;
    fo.where = s->where;
    fo.in = s->in;
    fo.n_in = s->n_in;
    fo.out = s->out;
    fo.n_out = s->n_out;
    return interp_ew_require(&fo, j.fail.kind, j.fail.at, j.fail.a, j.fail.b);
}

/* ------------------------------------------------------------ planning */

void interp_fuse_chains(ctosa_interp *it, rplan *p) {
    if (it->opt.reference || p->n_ops < 2) return;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    uint32_t *readers = calloc(p->n_slots + 1, sizeof *readers), *idx = malloc(p->n_ops * sizeof *idx);
    if (!readers || !idx) {
        free(readers);
        free(idx);
        return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const pop *po = &p->ops[i];
        if (po->skip) continue;
        for (uint32_t k = 0; k < po->n_in; k++) {
            const slot *s = po->in[k] ? fz_slot(p, po->in[k]) : NULL;
            if (s) readers[s - p->slots]++;
        }
    }
    for (uint32_t i = 0; i < p->n_ops;) {
        fz_step st;
        uint32_t nd, m = 0;
        /* small tensors: the operators' own passes stay in cache and a
         * group would save less than its setup */
        if (!fz_step_of(p, &p->ops[i], &st, &nd) || p->ops[i].out[0]->count < FZ_MIN_COUNT) {
            i++;
            continue;
        }
        const itensor *shape = p->ops[i].out[0];
        idx[m++] = i;
        /* the run goes on over operators that do nothing at run time */
        for (uint32_t j = i + 1; j < p->n_ops && m < FZ_MAX_STEPS; j++) {
            pop *q = &p->ops[j];
            if (q->skip) continue;
            if (!fz_step_of(p, q, &st, &nd) || !interp_same_shape(q->out[0], shape)) break;
            idx[m++] = j;
        }
        uint32_t take = m;
        fz_group *g = NULL;
        while (take >= 2 && !(g = fz_build(p, &it->arena, idx, take, readers))) take = take * 2 / 3;
        if (!g) {
            i++;
            continue;
        }
        pop *run = &p->ops[idx[0]];
        itensor **outs = arena_zalloc(&it->arena, (g->n_xout + 1) * sizeof *outs);
        const char *where =
            arena_printf(&it->arena, "%s + %u fused element-wise operators", run->where, take - 1);
        if (!outs || !where) break;
        for (uint32_t k = 0; k < g->n_xout; k++) {
            outs[k] = g->xout[k].t;
            fz_slot(p, outs[k])->def = idx[0];
        }
        for (uint32_t k = 0; k < take; k++) {
            pop *q = &p->ops[idx[k]];
            bool kept = false;
            for (uint32_t x = 0; x < g->n_xout; x++) kept |= g->xout[x].t == q->out[0];
            if (!kept) { /* held in tile buffers only */
                slot *s = fz_slot(p, q->out[0]);
                s->kind = SLOT_UNUSED;
                s->t.data = NULL;
            }
            if (k > 0) q->skip = q->fused = true;
        }
        run->chain = g;
        run->fn = interp_k_fused_CHAIN;
        run->writes_all = true;
        run->out = outs;
        run->n_out = g->n_xout;
        run->where = (char *)where;
        i = idx[take - 1] + 1;
    }
    free(readers);
    free(idx);
}
