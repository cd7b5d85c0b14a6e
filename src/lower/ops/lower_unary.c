/*
 * lower_unary.c - ONNX elementwise unary math operators -> TOSA.
 *
 * Abs Neg Ceil Floor Round Sign Sqrt Reciprocal Exp Log Sin Cos Tan Asin
 * Acos Atan Sinh Cosh Asinh Acosh Atanh Erf IsNaN IsInf.
 *
 * Direct TOSA ops where they exist; the others are decomposed:
 *   Round   half to even, exact: f = FLOOR(x), d = x - f (exact in binary
 *           floating point); round up when d > 0.5, or d == 0.5 and f odd.
 *   Sign    SELECT(x > 0, 1, SELECT(x < 0, -1, x)) (keeps 0 and NaN).
 *   Sqrt    RECIPROCAL(RSQRT(x)) (sqrt(0) = 0, sqrt(<0) = NaN).
 *   Tan     SIN(x) * RECIPROCAL(COS(x)).
 *   Atan    range reduction to |t| <= 1 (atan x = pi/2 - atan 1/x) and the
 *           degree-17 odd polynomial of Abramowitz & Stegun 4.4.49
 *           (|error| <= 2e-8 in exact arithmetic; ~1e-7 in fp32).
 *   Asin    atan(x / sqrt((1 - x)(1 + x))); Acos = pi/2 - asin(x).
 *   Sinh, Cosh  (e^x -+ e^-x) / 2.  Asinh  sign(x) log(|x| + sqrt(x^2+1)).
 *   Acosh   log(x + sqrt((x-1)(x+1))).  Atanh  log((1+x)/(1-x)) / 2.
 *   IsNaN   NOT(EQUAL(x, x)): NaN is the one value unequal to itself.
 *   IsInf   EQUAL(x, +inf) OR EQUAL(x, -inf), as detect_positive /
 *           detect_negative ask (neither: AND of the two, never true).
 * The log/exp forms lose relative (not absolute) precision near 0 (about
 * 1e-7 absolute), inside the acceptance tolerance (rtol 1e-3, atol 1e-5).
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

#define EW_PI_2 1.57079632679489661923

static lower_status one_input(lower_ctx *c, lw_v *x) { return lw_v_in(c, 0, x); }

static lower_status direct(lower_ctx *c, ctosa_op_kind k) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_un(c, k, x));
}

static lower_status lower_abs(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    if (ctosa_dtype_is_float(x.t)) return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_ABS, x));
    /* int8/int16 widen (ABS is int32 only); |-128| wraps back to -128 as in numpy */
    return lw_v_out(c, 0, lw_v_narrow(c, lw_v_un(c, CTOSA_OP_ABS, lw_v_widen(c, x)), x.t));
}

/* int8/int16 NEGATE saturates in TOSA (-(-128) = 127); ONNX wraps
 * (-(-128) = -128): negate in int32 and CAST back. */
static lower_status lower_neg(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    if (ctosa_dtype_is_float(x.t)) return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_NEGATE, x));
    return lw_v_out(c, 0, lw_v_narrow(c, lw_v_un(c, CTOSA_OP_NEGATE, lw_v_widen(c, x)), x.t));
}
static lower_status lower_ceil(lower_ctx *c) { return direct(c, CTOSA_OP_CEIL); }
static lower_status lower_floor(lower_ctx *c) { return direct(c, CTOSA_OP_FLOOR); }
static lower_status lower_reciprocal(lower_ctx *c) { return direct(c, CTOSA_OP_RECIPROCAL); }
static lower_status lower_exp(lower_ctx *c) { return direct(c, CTOSA_OP_EXP); }
static lower_status lower_log(lower_ctx *c) { return direct(c, CTOSA_OP_LOG); }
static lower_status lower_sin(lower_ctx *c) { return direct(c, CTOSA_OP_SIN); }
static lower_status lower_cos(lower_ctx *c) { return direct(c, CTOSA_OP_COS); }
static lower_status lower_erf(lower_ctx *c) { return direct(c, CTOSA_OP_ERF); }

static lw_v gt(lower_ctx *c, lw_v a, lw_v b) { return lw_v_bin(c, CTOSA_OP_GREATER, a, b); }
static lw_v neg(lower_ctx *c, lw_v a) { return lw_v_un(c, CTOSA_OP_NEGATE, a); }
static lw_v sqrt_(lower_ctx *c, lw_v a) {
    return lw_v_un(c, CTOSA_OP_RECIPROCAL, lw_v_un(c, CTOSA_OP_RSQRT, a));
}

static lower_status lower_round(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v f = lw_v_un(c, CTOSA_OP_FLOOR, x);
    lw_v d = lw_v_sub(c, x, f);
    lw_v half = lw_v_k(c, x, 0.5);
    lw_v above = gt(c, d, half);
    lw_v tie = lw_v_bin(c, CTOSA_OP_EQUAL, d, half);
    lw_v h = lw_v_mulk(c, f, 0.5);
    lw_v odd =
        lw_v_un(c, CTOSA_OP_LOGICAL_NOT, lw_v_bin(c, CTOSA_OP_EQUAL, lw_v_un(c, CTOSA_OP_FLOOR, h), h));
    lw_v up = lw_v_bin(c, CTOSA_OP_LOGICAL_OR, above, lw_v_bin(c, CTOSA_OP_LOGICAL_AND, tie, odd));
    return lw_v_out(c, 0, lw_v_select(c, up, lw_v_addk(c, f, 1.0), f));
}

static lower_status lower_sign(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v w = ctosa_dtype_is_float(x.t) ? x : lw_v_widen(c, x);
    lw_v zero = lw_v_k(c, w, 0);
    lw_v r =
        lw_v_select(c, gt(c, w, zero), lw_v_k(c, w, 1), lw_v_select(c, gt(c, zero, w), lw_v_k(c, w, -1), w));
    return lw_v_out(c, 0, lw_v_narrow(c, r, x.t));
}

static lower_status lower_sqrt(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, sqrt_(c, x));
}

static lower_status lower_tan(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_fdiv(c, lw_v_un(c, CTOSA_OP_SIN, x), lw_v_un(c, CTOSA_OP_COS, x)));
}

/* atan(x) for any x (see the file comment). */
static lw_v atan_(lower_ctx *c, lw_v x) {
    static const double a[8] = {-0.3333314528, 0.1999355085, -0.1420889944, 0.1065626393,
                                -0.0752896400, 0.0429096138, -0.0161657367, 0.0028662257};
    lw_v ax = lw_v_un(c, CTOSA_OP_ABS, x);
    lw_v big = gt(c, ax, lw_v_k(c, x, 1.0));
    lw_v t = lw_v_select(c, big, lw_v_un(c, CTOSA_OP_RECIPROCAL, ax), ax);
    lw_v z = lw_v_mul(c, t, t);
    lw_v p = lw_v_k(c, x, a[7]);
    for (int i = 6; i >= 0; i--) p = lw_v_addk(c, lw_v_mul(c, p, z), a[i]);
    p = lw_v_addk(c, lw_v_mul(c, p, z), 1.0);
    lw_v r = lw_v_mul(c, t, p);
    r = lw_v_select(c, big, lw_v_sub(c, lw_v_k(c, x, EW_PI_2), r), r);
    return lw_v_select(c, gt(c, lw_v_k(c, x, 0), x), neg(c, r), r);
}

static lw_v asin_(lower_ctx *c, lw_v x) {
    lw_v one = lw_v_k(c, x, 1.0);
    lw_v w = lw_v_mul(c, lw_v_sub(c, one, x), lw_v_add(c, one, x));
    return atan_(c, lw_v_mul(c, x, lw_v_un(c, CTOSA_OP_RSQRT, w)));
}

static lower_status lower_atan(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, atan_(c, x));
}

static lower_status lower_asin(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, asin_(c, x));
}

static lower_status lower_acos(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_sub(c, lw_v_k(c, x, EW_PI_2), asin_(c, x)));
}

static lower_status lower_sinh_cosh(lower_ctx *c, bool cosh_) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v ep = lw_v_un(c, CTOSA_OP_EXP, x);
    lw_v en = lw_v_un(c, CTOSA_OP_EXP, neg(c, x));
    lw_v s = cosh_ ? lw_v_add(c, ep, en) : lw_v_sub(c, ep, en);
    return lw_v_out(c, 0, lw_v_mulk(c, s, 0.5));
}

static lower_status lower_sinh(lower_ctx *c) { return lower_sinh_cosh(c, false); }
static lower_status lower_cosh(lower_ctx *c) { return lower_sinh_cosh(c, true); }

static lower_status lower_asinh(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v ax = lw_v_un(c, CTOSA_OP_ABS, x);
    lw_v u = lw_v_un(c, CTOSA_OP_LOG, lw_v_add(c, ax, sqrt_(c, lw_v_addk(c, lw_v_mul(c, ax, ax), 1.0))));
    return lw_v_out(c, 0, lw_v_select(c, gt(c, lw_v_k(c, x, 0), x), neg(c, u), u));
}

static lower_status lower_acosh(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v w = lw_v_mul(c, lw_v_addk(c, x, -1.0), lw_v_addk(c, x, 1.0));
    return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_LOG, lw_v_add(c, x, sqrt_(c, w))));
}

static lower_status lower_atanh(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    lw_v one = lw_v_k(c, x, 1.0);
    lw_v q = lw_v_fdiv(c, lw_v_add(c, one, x), lw_v_sub(c, one, x));
    return lw_v_out(c, 0, lw_v_mulk(c, lw_v_un(c, CTOSA_OP_LOG, q), 0.5));
}

static lower_status lower_isnan(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_LOGICAL_NOT, lw_v_bin(c, CTOSA_OP_EQUAL, x, x)));
}

static lower_status lower_isinf(lower_ctx *c) {
    lw_v x;
    lower_status st = one_input(c, &x);
    if (st) return st;
    bool pos = lw_attr_int(c, "detect_positive", 1) != 0, neg = lw_attr_int(c, "detect_negative", 1) != 0;
    lw_v p = lw_v_bin(c, CTOSA_OP_EQUAL, x, lw_v_k(c, x, INFINITY));
    lw_v n = lw_v_bin(c, CTOSA_OP_EQUAL, x, lw_v_k(c, x, -INFINITY));
    if (pos != neg) return lw_v_out(c, 0, pos ? p : n);
    return lw_v_out(c, 0, lw_v_bin(c, pos ? CTOSA_OP_LOGICAL_OR : CTOSA_OP_LOGICAL_AND, p, n));
}

const lower_entry lower_table_unary[] = {
    {"Abs", 1, 0, lower_abs},
    {"Neg", 1, 0, lower_neg},
    {"Ceil", 1, 0, lower_ceil},
    {"Floor", 1, 0, lower_floor},
    {"Round", 11, 0, lower_round},
    {"Sign", 9, 0, lower_sign},
    {"Sqrt", 1, 0, lower_sqrt},
    {"Reciprocal", 1, 0, lower_reciprocal},
    {"Exp", 1, 0, lower_exp},
    {"Log", 1, 0, lower_log},
    {"Sin", 7, 0, lower_sin},
    {"Cos", 7, 0, lower_cos},
    {"Tan", 7, 0, lower_tan},
    {"Asin", 7, 0, lower_asin},
    {"Acos", 7, 0, lower_acos},
    {"Atan", 7, 0, lower_atan},
    {"Sinh", 9, 0, lower_sinh},
    {"Cosh", 9, 0, lower_cosh},
    {"Asinh", 9, 0, lower_asinh},
    {"Acosh", 9, 0, lower_acosh},
    {"Atanh", 9, 0, lower_atanh},
    {"Erf", 9, 0, lower_erf},
    {"IsNaN", 9, 0, lower_isnan},
    {"IsInf", 10, 0, lower_isinf},
    {0, 0, 0, 0},
};
