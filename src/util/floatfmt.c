/* floatfmt.c - narrow float formats (fp16, bf16, fp8e4m3, fp8e5m2) <-> float.
 *
 * One generic encoder/decoder driven by a small format description keeps the
 * four formats consistent: rounding is done in double, where scaling by a
 * power of two is exact, so rint() (round half to even in the default
 * rounding mode) gives the IEEE result directly. */
#include "util/floatfmt.h"

#include <math.h>
#include <string.h>

typedef struct ffmt {
    int ebits, mbits, bias;
    bool has_inf; /* IEEE-style: all-ones exponent = inf/NaN */
    double max;   /* largest finite magnitude */
    uint32_t nan; /* canonical quiet NaN encoding (positive) */
} ffmt;

static const ffmt F16 = {5, 10, 15, true, 65504.0, 0x7E00};
static const ffmt BF16 = {8, 7, 127, true, 3.3895313892515355e38, 0x7FC0};
/* E4M3 (OCP FN variant): no infinity; S.1111.111 is NaN; max 448. */
static const ffmt E4M3 = {4, 3, 7, false, 448.0, 0x7F};
static const ffmt E5M2 = {5, 2, 15, true, 57344.0, 0x7E};

static double ff_decode(const ffmt *f, uint32_t v) {
    uint32_t sign = (v >> (f->ebits + f->mbits)) & 1u;
    uint32_t e = (v >> f->mbits) & ((1u << f->ebits) - 1u);
    uint32_t m = v & ((1u << f->mbits) - 1u);
    uint32_t emax_field = (1u << f->ebits) - 1u;
    double r;
    if (f->has_inf && e == emax_field) {
        r = m ? NAN : INFINITY;
    } else if (!f->has_inf && e == emax_field && m == (1u << f->mbits) - 1u) {
        r = NAN;
    } else if (e == 0) {
        r = ldexp((double)m, 1 - f->bias - f->mbits);
    } else {
        r = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
    }
    return sign ? -r : r;
}

static uint32_t ff_encode(const ffmt *f, double x) {
    uint32_t sign_bit = 1u << (f->ebits + f->mbits);
    if (isnan(x)) return f->nan;
    uint32_t s = signbit(x) ? sign_bit : 0;
    double a = fabs(x);
    if (a == 0.0) return s;
    uint32_t inf_or_nan = f->has_inf ? ((1u << f->ebits) - 1u) << f->mbits : f->nan;
    if (isinf(a)) return s | inf_or_nan;
    int emin = 1 - f->bias;
    int k;
    (void)frexp(a, &k); /* a = [0.5,1) * 2^k, so the unbiased exponent is k-1 */
    int e = k - 1;
    if (e < emin) e = emin;
    /* Round to a multiple of the quantum 2^(e - mbits); exact scaling. */
    double q = rint(ldexp(a, f->mbits - e));
    double r = ldexp(q, e - f->mbits);
    if (r > f->max) return s | inf_or_nan;
    if (r == 0.0) return s;
    (void)frexp(r, &k);
    int re = k - 1;
    if (re < emin) {
        /* subnormal: mantissa field = r / 2^(emin - mbits) */
        return s | (uint32_t)ldexp(r, f->mbits - emin);
    }
    uint32_t mant = (uint32_t)ldexp(r, f->mbits - re) - (1u << f->mbits);
    return s | ((uint32_t)(re + f->bias) << f->mbits) | mant;
}

float ff_fp16_to_f32(uint16_t h) { return (float)ff_decode(&F16, h); }
uint16_t ff_f32_to_fp16(float f) { return (uint16_t)ff_encode(&F16, f); }

float ff_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t ff_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)(0x7FC0u | ((u >> 16) & 0x8000u));
    /* round to nearest even on the 16 discarded bits; carries into the
     * exponent give the correct next binade / infinity */
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7FFFu + lsb;
    return (uint16_t)(u >> 16);
}

float ff_fp8e4m3_to_f32(uint8_t v) { return (float)ff_decode(&E4M3, v); }
uint8_t ff_f32_to_fp8e4m3(float f) { return (uint8_t)ff_encode(&E4M3, f); }
float ff_fp8e5m2_to_f32(uint8_t v) { return (float)ff_decode(&E5M2, v); }
uint8_t ff_f32_to_fp8e5m2(float f) { return (uint8_t)ff_encode(&E5M2, f); }

float ff_round_to_double(ctosa_dtype t, double x) {
    switch (t) {
    case CTOSA_DTYPE_FP16: return (float)ff_decode(&F16, ff_encode(&F16, x));
    case CTOSA_DTYPE_BF16: return (float)ff_decode(&BF16, ff_encode(&BF16, x));
    case CTOSA_DTYPE_FP8E4M3: return (float)ff_decode(&E4M3, ff_encode(&E4M3, x));
    case CTOSA_DTYPE_FP8E5M2: return (float)ff_decode(&E5M2, ff_encode(&E5M2, x));
    default: return (float)x;
    }
}

float ff_round_to(ctosa_dtype t, float x) {
    if (t == CTOSA_DTYPE_BF16) return ff_bf16_to_f32(ff_f32_to_bf16(x));
    return ff_round_to_double(t, x);
}
