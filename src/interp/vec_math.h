/* vec_math.h - fp32 EXP, SIGMOID, TANH and ERF on 16-lane float vectors,
 * for the fast paths of the element-wise kernels (the plain loops, which
 * compute in double with libm and round once, stay behind
 * interp_op.reference).
 *
 * Use inside an IM_MULTIVERSION body (int_math.h), so the vectors become
 * AVX-512, 2 x AVX2 or 4 x SSE registers. They are statement-expression
 * macros, not functions, because vector arguments would change the ABI per
 * instruction set.
 *
 * Error against the correctly rounded result (libm in double, rounded to
 * float), measured over every 61st fp32 bit pattern (70 million inputs
 * covering every exponent, AVX-512 and baseline builds; largest errors
 * seen: EXP 1, SIGMOID 2, TANH 3, ERF 3 ulp) and checked in
 * test_kernels_diff: EXP <= 2 ulp, SIGMOID <= 3 ulp, TANH <= 3 ulp,
 * ERF <= 3 ulp (subnormal results: the same bounds in units of the
 * smallest subnormal). NaN in gives NaN out; infinities give the limits.
 * The bounds hold with and without FMA contraction (the compiler contracts
 * a*b+c in the AVX2 and AVX-512 versions, not in the baseline one), so
 * results may differ by an ulp between instruction sets. */
#ifndef CTOSA_VEC_MATH_H
#define CTOSA_VEC_MATH_H

#include <stdint.h>

typedef float vm_f __attribute__((vector_size(64)));
typedef int32_t vm_i __attribute__((vector_size(64)));
#define VM_LANES 16

/* lane select: M ? A : B (C has no vector ?:) */
#define VM_SEL(M, A, B) ((vm_f)(((vm_i)(A) & (M)) | ((vm_i)(B) & ~(M))))
#define VM_SPLAT(C) ((vm_f){0} + (float)(C))
#define VM_ABS(X) ((vm_f)((vm_i)(X)&0x7fffffff))

/* exp(X) for lanes already clamped to [-104, 89] (NaN replaced): X = n ln2
 * + r with |r| <= ln2/2 (ln2 split so n * hi is exact), exp(r) by Taylor
 * terms to r^7 (truncation below 0.06 ulp), then 2^n in two steps so that
 * both factors are normal for n in [-150, 128]: the first product is
 * exact, the second rounds once into the subnormal range or overflows to
 * infinity past FLT_MAX. */
#define VM_EXP_CLAMPED(X)                                                                        \
    ({                                                                                           \
        vm_f x_ = (X);                                                                           \
        vm_f k_ = (x_ * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest integer */ \
        vm_f r_ = (x_ - k_ * 0.693359375f) - k_ * -2.12194440e-4f;                               \
        vm_f p_ = VM_SPLAT(1.0f / 5040.0f);                                                      \
        p_ = p_ * r_ + 1.0f / 720.0f;                                                            \
        p_ = p_ * r_ + 1.0f / 120.0f;                                                            \
        p_ = p_ * r_ + 1.0f / 24.0f;                                                             \
        p_ = p_ * r_ + 1.0f / 6.0f;                                                              \
        p_ = p_ * r_ + 0.5f;                                                                     \
        p_ = p_ * r_ + 1.0f;                                                                     \
        p_ = p_ * r_ + 1.0f;                                                                     \
        vm_i n_ = __builtin_convertvector(k_, vm_i), n1_ = n_ >> 1, n2_ = n_ - n1_;              \
        p_ *(vm_f)((n1_ + 127) << 23) * (vm_f)((n2_ + 127) << 23);                               \
    })

/* exp(X): NaN stays NaN, -inf gives 0, +inf gives +inf. */
#define VM_EXP(X)                                              \
    ({                                                         \
        vm_f v_ = (X);                                         \
        vm_i nan_ = v_ != v_;                                  \
        vm_f c_ = VM_SEL(v_ < -104.0f, VM_SPLAT(-104.0f), v_); \
        c_ = VM_SEL(c_ > 89.0f, VM_SPLAT(89.0f), c_);          \
        c_ = VM_SEL(nan_, VM_SPLAT(0.0f), c_);                 \
        vm_f e_ = VM_EXP_CLAMPED(c_);                          \
        VM_SEL(nan_, v_, e_);                                  \
    })

/* 1 / (1 + exp(-X)) from e = exp(-|X|) in (0, 1]: 1 / (1 + e) for X >= 0,
 * e / (1 + e) below, so nothing overflows and results down to the
 * subnormal range keep their relative accuracy. */
#define VM_SIGMOID(X)                                                    \
    ({                                                                   \
        vm_f s_ = (X);                                                   \
        vm_i snan_ = s_ != s_;                                           \
        vm_f a_ = VM_ABS(s_);                                            \
        a_ = VM_SEL(a_ > 104.0f, VM_SPLAT(104.0f), a_);                  \
        a_ = VM_SEL(snan_, VM_SPLAT(0.0f), a_);                          \
        vm_f e1_ = VM_EXP_CLAMPED(-a_);                                  \
        vm_f q_ = VM_SEL(s_ < 0.0f, e1_, VM_SPLAT(1.0f)) / (e1_ + 1.0f); \
        VM_SEL(snan_, s_, q_);                                           \
    })

/* tanh(|X|) = m / (m + 2) with m = expm1(2|X|) = 2^n expm1(r) + (2^n - 1),
 * which is expm1(r) itself when n = 0 (no cancellation for small X: tiny
 * and subnormal X come out as X); 2|X| is clamped to 40, where the result
 * is 1; the sign is copied from X (so -0 stays -0). */
#define VM_TANH(X)                                                         \
    ({                                                                     \
        vm_f t_ = (X);                                                     \
        vm_i tnan_ = t_ != t_;                                             \
        vm_f y_ = VM_ABS(t_) * 2.0f;                                       \
        y_ = VM_SEL(y_ > 40.0f, VM_SPLAT(40.0f), y_);                      \
        y_ = VM_SEL(tnan_, VM_SPLAT(0.0f), y_);                            \
        vm_f k_ = (y_ * 1.44269504f + 12582912.0f) - 12582912.0f;          \
        vm_f r_ = (y_ - k_ * 0.693359375f) - k_ * -2.12194440e-4f;         \
        vm_f p_ = VM_SPLAT(1.0f / 40320.0f);                               \
        p_ = p_ * r_ + 1.0f / 5040.0f;                                     \
        p_ = p_ * r_ + 1.0f / 720.0f;                                      \
        p_ = p_ * r_ + 1.0f / 120.0f;                                      \
        p_ = p_ * r_ + 1.0f / 24.0f;                                       \
        p_ = p_ * r_ + 1.0f / 6.0f;                                        \
        p_ = p_ * r_ + 0.5f;                                               \
        vm_f q_ = r_ * (p_ * r_ + 1.0f); /* expm1(r) */                    \
        vm_f s_ = (vm_f)((__builtin_convertvector(k_, vm_i) + 127) << 23); \
        vm_f m_ = s_ * q_ + (s_ - 1.0f);                                   \
        vm_f h_ = m_ / (m_ + 2.0f);                                        \
        h_ = (vm_f)((vm_i)h_ | ((vm_i)t_ & (int32_t)0x80000000));          \
        VM_SEL(tnan_, t_, h_);                                             \
    })

/* erf(X): below |X| = 0.9 the series 2/sqrt(pi) x sum (-1)^k x^2k /
 * (k! (2k+1)) to k = 11 (truncation below 1e-9 relative); above, 1 -
 * erfc(|X|) with erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), the
 * Chebyshev fit of Numerical Recipes (relative error of erfc below 1.2e-7,
 * and erfc <= 0.21 there, so it costs erf less than half an ulp). |X| is
 * clamped to 10, where erf is 1. */
#define VM_ERF(X)                                                               \
    ({                                                                          \
        vm_f f_ = (X);                                                          \
        vm_i fnan_ = f_ != f_;                                                  \
        vm_f z_ = VM_ABS(f_);                                                   \
        z_ = VM_SEL(z_ > 10.0f, VM_SPLAT(10.0f), z_);                           \
        z_ = VM_SEL(fnan_, VM_SPLAT(0.0f), z_);                                 \
        vm_f z2_ = z_ * z_;                                                     \
        vm_f s_ = VM_SPLAT(-1.0 / (39916800.0 * 23.0) * 1.1283791670955126);    \
        s_ = s_ * z2_ + (float)(1.0 / (3628800.0 * 21.0) * 1.1283791670955126); \
        s_ = s_ * z2_ + (float)(-1.0 / (362880.0 * 19.0) * 1.1283791670955126); \
        s_ = s_ * z2_ + (float)(1.0 / (40320.0 * 17.0) * 1.1283791670955126);   \
        s_ = s_ * z2_ + (float)(-1.0 / (5040.0 * 15.0) * 1.1283791670955126);   \
        s_ = s_ * z2_ + (float)(1.0 / (720.0 * 13.0) * 1.1283791670955126);     \
        s_ = s_ * z2_ + (float)(-1.0 / (120.0 * 11.0) * 1.1283791670955126);    \
        s_ = s_ * z2_ + (float)(1.0 / (24.0 * 9.0) * 1.1283791670955126);       \
        s_ = s_ * z2_ + (float)(-1.0 / (6.0 * 7.0) * 1.1283791670955126);       \
        s_ = s_ * z2_ + (float)(1.0 / (2.0 * 5.0) * 1.1283791670955126);        \
        s_ = s_ * z2_ + (float)(-1.0 / 3.0 * 1.1283791670955126);               \
        s_ = s_ * z2_ + 1.12837917f;                                            \
        s_ = s_ * z_;                                                           \
        vm_f u_ = 1.0f / (z_ * 0.5f + 1.0f);                                    \
        vm_f g_ = VM_SPLAT(0.17087277f);                                        \
        g_ = g_ * u_ - 0.82215223f;                                             \
        g_ = g_ * u_ + 1.48851587f;                                             \
        g_ = g_ * u_ - 1.13520398f;                                             \
        g_ = g_ * u_ + 0.27886807f;                                             \
        g_ = g_ * u_ - 0.18628806f;                                             \
        g_ = g_ * u_ + 0.09678418f;                                             \
        g_ = g_ * u_ + 0.37409196f;                                             \
        g_ = g_ * u_ + 1.00002368f;                                             \
        g_ = g_ * u_ - 1.26551223f;                                             \
        vm_f l_ = 1.0f - u_ * VM_EXP_CLAMPED(g_ - z2_);                         \
        vm_f w_ = VM_SEL(z_ < 0.9f, s_, l_);                                    \
        w_ = (vm_f)((vm_i)w_ | ((vm_i)f_ & (int32_t)0x80000000));               \
        VM_SEL(fnan_, f_, w_);                                                  \
    })

/* SiLU, x * sigmoid(x) with the sigmoid rounded to float first, as
 * SIGMOID then MUL compute it (the fused SiLU pass and the element-wise
 * groups: the same bits as the two operators). */
#define VM_SILU(X) ((X)*VM_SIGMOID(X))

#endif
