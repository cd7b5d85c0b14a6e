/*
 * lower_ewise.c - ONNX elementwise binary / variadic / logical / comparison
 * operators -> TOSA, written with the builder's value form (lw_v,
 * lower_build.h) like the unary, activation and cast families.
 *
 * Add Sub Mul Div Pow Mod Max Min Sum Mean BitShift BitwiseAnd BitwiseOr
 * BitwiseXor BitwiseNot And Or Xor Not Equal Greater GreaterOrEqual Less
 * LessOrEqual Where.
 *
 * Integer arithmetic: TOSA has ADD/SUB/INTDIV/MAXIMUM/MINIMUM/EQUAL/GREATER
 * only for int32 (and int64 with EXT-INT64); int8/int16 operands are
 * sign-extended to int32, computed, and CAST back, which wraps modulo 2^n
 * exactly like ONNX (numpy) integer arithmetic. MUL takes int8/int16
 * directly (its output is int32) and is CAST back the same way.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "util/floatfmt.h"

/* ============================================================= lowerings */

static const char *opname(lower_ctx *c) { return lw_node(c)->op_type; }

/* Reads the two inputs of a binary op: same TOSA dtype, broadcastable. */
static lower_status two_inputs(lower_ctx *c, lw_v *a, lw_v *b) {
    LW_V_IN(c, 0, a);
    LW_V_IN(c, 1, b);
    if (a->t != b->t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "%s: operands are %s and %s", opname(c),
                         ctosa_dtype_short(a->t), ctosa_dtype_short(b->t));
    lw_v v[2] = {*a, *b};
    return lw_v_bcast(c, 2, v);
}

static lower_status reject_dtype(lower_ctx *c, ctosa_dtype t) {
    return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s on %s is not defined", opname(c),
                     ctosa_dtype_short(t));
}

/* a (k) b for arithmetic: floats directly, small ints widened. */
static lw_v arith(lower_ctx *c, ctosa_op_kind k, lw_v a, lw_v b) {
    ctosa_dtype t = a.t;
    if (ctosa_dtype_is_float(t)) return lw_v_bin(c, k, a, b);
    if (k == CTOSA_OP_MUL) return lw_v_narrow(c, lw_v_bin(c, k, a, b), t);
    return lw_v_narrow(c, lw_v_bin(c, k, lw_v_widen(c, a), lw_v_widen(c, b)), t);
}

static lower_status lower_arith(lower_ctx *c, ctosa_op_kind k) {
    lw_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    if (!ctosa_dtype_is_float(a.t) && !lw_v_is_int(a.t)) return reject_dtype(c, a.t);
    return lw_v_out(c, 0, arith(c, k, a, b));
}

static lower_status lower_add(lower_ctx *c) { return lower_arith(c, CTOSA_OP_ADD); }
static lower_status lower_sub(lower_ctx *c) { return lower_arith(c, CTOSA_OP_SUB); }
static lower_status lower_mul(lower_ctx *c) { return lower_arith(c, CTOSA_OP_MUL); }

/* Float Div is a * RECIPROCAL(b) (what TOSA backends do; ~1 ulp per step).
 * Integer Div truncates toward zero in ONNX, as INTDIV does. */
static lower_status lower_div(lower_ctx *c) {
    lw_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    if (ctosa_dtype_is_float(a.t)) {
        /* a constant divisor (x / 255, x / sqrt(d)...) gets its reciprocal
         * at compile time: the same single rounding as RECIPROCAL */
        const double *bv;
        int64_t nb = lw_const_f64(c, 1, &bv);
        if (nb > 0) {
            double *rv = arena_alloc(lw_arena(c), sizeof(double) * (size_t)nb);
            if (!rv) return lw_reject(c, LOWER_INTERNAL, NULL, "Div: out of memory");
            for (int64_t i = 0; i < nb; i++) rv[i] = 1.0 / (double)(float)bv[i];
            lw_v r = b;
            r.cin = 0;
            r.n = lw_const_from_f64(c, b.t, b.r, b.s, rv);
            return lw_v_out(c, 0, lw_v_mul(c, a, r));
        }
        return lw_v_out(c, 0, lw_v_fdiv(c, a, b));
    }
    if (!lw_v_is_int(a.t)) return reject_dtype(c, a.t);
    return lw_v_out(c, 0, arith(c, CTOSA_OP_INTDIV, a, b));
}

/* trunc(x) for floats: CEIL below zero, FLOOR above. */
static lw_v ftrunc(lower_ctx *c, lw_v x) {
    lw_v neg = lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, x, 0), x);
    return lw_v_select(c, neg, lw_v_un(c, CTOSA_OP_CEIL, x), lw_v_un(c, CTOSA_OP_FLOOR, x));
}

/* x^n for an integer n >= 1 by repeated squaring (exact for integers,
 * one rounding per MUL for floats). */
static lw_v ipow(lower_ctx *c, lw_v x, long n) {
    lw_v acc = lw_v_none(), p = x;
    bool have = false;
    while (n > 0) {
        if (n & 1) {
            acc = have ? lw_v_mul(c, acc, p) : p;
            have = true;
        }
        n >>= 1;
        if (n) p = lw_v_mul(c, p, p);
    }
    return acc;
}

/* A tensor of x's shape filled with v. */
static lw_v fill_like(lower_ctx *c, lw_v x, double v) {
    uint64_t count = 1;
    for (uint32_t i = 0; i < x.r; i++) count *= (uint64_t)x.s[i];
    lw_v o = x;
    o.cin = 0;
    double *vals = arena_alloc(lw_arena(c), sizeof(double) * (count ? count : 1));
    if (!vals) return lw_v_none();
    for (uint64_t i = 0; i < count; i++) vals[i] = v;
    o.n = lw_const_from_f64(c, x.t, x.r, x.s, vals);
    return o;
}

/* x^y with C pow semantics (what ONNX defines and ONNX Runtime computes)
 * for float x and y (broadcast-compatible). TOSA POW is predictable only
 * for a positive base, or a zero base with a positive exponent, so POW
 * runs on |x|, with 2 in place of a zero base (2^0 = 1 and 2^NaN = NaN, as
 * C gives 0^0 and 0^NaN), and SELECTs give the other cases:
 *   x < 0:  integer y: |x|^y, negated for odd y (infinities are even);
 *           other y: NaN, but |x|^y for x = -inf
 *   x == 0: y > 0: +0 (x itself for odd y, keeping -0);
 *           y < 0: +inf (1/x for odd y, giving -inf for -0)
 * When y is a uniform constant e (ye != NULL) the tests on y are decided
 * here and only the operators the case needs are emitted. */
static lw_v pow_c(lower_ctx *c, lw_v x, lw_v y, const double *ye) {
    lw_v zero = lw_v_k(c, x, 0);
    lw_v isz = lw_v_bin(c, CTOSA_OP_EQUAL, x, zero);
    lw_v neg = lw_v_bin(c, CTOSA_OP_GREATER, zero, x);
    lw_v safe = lw_v_select(c, isz, lw_v_k(c, x, 2), lw_v_un(c, CTOSA_OP_ABS, x));
    lw_v p = lw_v_bin(c, CTOSA_OP_POW, safe, y);
    lw_v inf = lw_v_k(c, x, INFINITY);
    lw_v ninf = lw_v_bin(c, CTOSA_OP_EQUAL, x, lw_v_k(c, x, -INFINITY));
    lw_v nonint = lw_v_select(c, ninf, p, lw_v_k(c, x, NAN));
    lw_v negv, zv;
    if (ye) {
        double e = *ye;
        bool integer = e == floor(e), odd = integer && isfinite(e) && fmod(e, 2.0) != 0;
        negv = !integer ? nonint : odd ? lw_v_un(c, CTOSA_OP_NEGATE, p) : p;
        if (isnan(e)) zv = p; /* POW(2, NaN) */
        else if (e > 0) zv = odd ? x : zero;
        else zv = odd ? lw_v_un(c, CTOSA_OP_RECIPROCAL, x) : inf;
    } else {
        lw_v integer = lw_v_bin(c, CTOSA_OP_EQUAL, lw_v_un(c, CTOSA_OP_FLOOR, y), y);
        lw_v half = lw_v_mulk(c, y, 0.5);
        lw_v even = lw_v_bin(c, CTOSA_OP_EQUAL, lw_v_un(c, CTOSA_OP_FLOOR, half), half);
        lw_v odd = lw_v_bin(c, CTOSA_OP_LOGICAL_AND, integer, lw_v_un(c, CTOSA_OP_LOGICAL_NOT, even));
        negv = lw_v_select(c, integer, lw_v_select(c, odd, lw_v_un(c, CTOSA_OP_NEGATE, p), p), nonint);
        lw_v yk0 = lw_v_k(c, y, 0);
        lw_v zpos = lw_v_select(c, odd, x, zero);
        lw_v zneg = lw_v_select(c, odd, lw_v_un(c, CTOSA_OP_RECIPROCAL, x), inf);
        /* y == 0 or NaN: POW(2, y) is already 1 or NaN */
        zv = lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, y, yk0), zpos,
                         lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, yk0, y), zneg, p));
    }
    return lw_v_select(c, neg, negv, lw_v_select(c, isz, zv, p));
}

/* Pow. fp16 / bf16 compute in fp32 and round once at the end (as ONNX
 * Runtime does). A constant uniform exponent is specialised: integers
 * |n| <= 64 by repeated squaring (exact for integer bases, any sign of a
 * float base), 0.5 / -0.5 by RSQRT (NaN for a negative base), others
 * through pow_c with the tests on the exponent decided at compile time.
 * Otherwise pow_c; an integer base goes through fp32 and is rounded back,
 * which is exact while |result| < 2^24. */
static lower_status lower_pow(lower_ctx *c) {
    lw_v x, y;
    LW_V_IN(c, 0, &x);
    const lower_value *yi = lw_in(c, 1);
    if (!yi) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Pow: exponent missing");
    const double *yv = NULL;
    int64_t ny = lw_const_f64(c, 1, &yv);
    bool uniform = ny >= 1 && yi->static_shape && yi->rank <= x.r;
    for (int64_t i = 1; uniform && i < ny; i++) uniform = yv[i] == yv[0] || (isnan(yv[i]) && isnan(yv[0]));
    for (uint32_t d = 0; uniform && d < yi->rank; d++)
        uniform = yi->shape[d] == 1 || yi->shape[d] == x.s[x.r - yi->rank + d];
    bool fl = ctosa_dtype_is_float(x.t);
    if (!fl && !lw_v_is_int(x.t)) return reject_dtype(c, x.t);
    /* the type computed in: fp32 for narrow floats and integers */
    ctosa_dtype ct = fl && x.t != CTOSA_DTYPE_FP16 && x.t != CTOSA_DTYPE_BF16 ? x.t : CTOSA_DTYPE_FP32;
    if (uniform) {
        double e = yv[0];
        if (e == floor(e) && fabs(e) <= 64) {
            if (e < 0 && !fl)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, yi->name,
                                 "Pow: negative exponent %g on an integer base", e);
            if (e == 0) return lw_v_out(c, 0, fill_like(c, x, 1.0));
            lw_v base = fl ? lw_v_cast(c, x, ct) : lw_v_widen(c, x);
            lw_v r = ipow(c, base, (long)fabs(e));
            if (e < 0) r = lw_v_un(c, CTOSA_OP_RECIPROCAL, r);
            if (r.n == base.n) r = lw_v_identity(c, r);
            return lw_v_out(c, 0, lw_v_narrow(c, r, x.t));
        }
        if (fl && fabs(e) == 0.5) {
            /* RSQRT runs on |x| (a negative input is not trusted either;
             * -0 gives +inf as C's pow(-0, -0.5)); negative x give NaN,
             * but -inf gives inf^e as in C */
            lw_v r = lw_v_un(c, CTOSA_OP_RSQRT, lw_v_un(c, CTOSA_OP_ABS, x));
            if (e > 0) r = lw_v_un(c, CTOSA_OP_RECIPROCAL, r);
            lw_v zero = lw_v_k(c, x, 0);
            lw_v ninf = lw_v_bin(c, CTOSA_OP_EQUAL, x, lw_v_k(c, x, -INFINITY));
            lw_v negv = lw_v_select(c, ninf, lw_v_k(c, x, e > 0 ? INFINITY : 0), lw_v_k(c, x, NAN));
            return lw_v_out(c, 0, lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, zero, x), negv, r));
        }
        if (fl) {
            lw_v xc = lw_v_cast(c, x, ct);
            return lw_v_out(c, 0, lw_v_cast(c, pow_c(c, xc, lw_v_k(c, xc, e), &e), x.t));
        }
    }
    LW_V_IN(c, 1, &y);
    lw_v v[2] = {x, y};
    lower_status st = lw_v_bcast(c, 2, v);
    if (st) return st;
    if (!ctosa_dtype_is_float(y.t) && !lw_v_is_int(y.t)) return reject_dtype(c, y.t);
    lw_v p = pow_c(c, lw_v_cast(c, x, ct), lw_v_cast(c, y, ct), NULL);
    if (fl) return lw_v_out(c, 0, lw_v_cast(c, p, x.t));
    /* integer base: an integer exponent gives an integer result: round to
     * nearest (CAST); a float exponent: ONNX truncates the float result */
    if (ctosa_dtype_is_float(y.t)) p = ftrunc(c, p);
    return lw_v_out(c, 0, lw_v_cast(c, p, x.t));
}

/* Mod. fmod=1: sign of the dividend (C fmod), a - trunc(a/b)*b.
 * fmod=0: sign of the divisor (Python %): the fmod result, plus b where
 * it is non-zero and its sign differs from b's. Floats compute the
 * quotient as a * RECIPROCAL(b). */
static lower_status lower_mod(lower_ctx *c) {
    lw_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    int64_t fmod_ = lw_attr_int(c, "fmod", 0);
    ctosa_dtype t = a.t;
    lw_v r;
    if (ctosa_dtype_is_float(t)) {
        lw_v q = lw_v_fdiv(c, a, b);
        q = fmod_ ? ftrunc(c, q) : lw_v_un(c, CTOSA_OP_FLOOR, q);
        r = lw_v_sub(c, a, lw_v_mul(c, q, b));
        return lw_v_out(c, 0, r);
    }
    if (!lw_v_is_int(t)) return reject_dtype(c, t);
    lw_v wa = lw_v_widen(c, a), wb = lw_v_widen(c, b);
    lw_v q = lw_v_bin(c, CTOSA_OP_INTDIV, wa, wb);
    r = lw_v_sub(c, wa, lw_v_mul(c, q, wb));
    if (!fmod_) {
        lw_v zero = lw_v_k(c, r, 0);
        lw_v nz = lw_v_un(c, CTOSA_OP_LOGICAL_NOT, lw_v_bin(c, CTOSA_OP_EQUAL, r, zero));
        lw_v rneg = lw_v_bin(c, CTOSA_OP_GREATER, zero, r);
        lw_v bneg = lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, wb, 0), wb);
        lw_v fix = lw_v_bin(c, CTOSA_OP_LOGICAL_AND, nz, lw_v_bin(c, CTOSA_OP_LOGICAL_XOR, rneg, bneg));
        r = lw_v_select(c, fix, lw_v_add(c, r, wb), r);
    }
    return lw_v_out(c, 0, lw_v_narrow(c, r, t));
}

/* Max / Min / Sum / Mean: variadic with multidirectional broadcasting. */
static lower_status lower_variadic(lower_ctx *c, ctosa_op_kind k, bool mean) {
    uint32_t n = lw_n_inputs(c);
    if (n == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: no inputs", opname(c));
    lw_v *v = arena_zalloc(lw_arena(c), sizeof(lw_v) * n);
    if (!v) return lw_reject(c, LOWER_INTERNAL, NULL, "%s: out of memory", opname(c));
    for (uint32_t i = 0; i < n; i++) {
        LW_V_IN(c, i, &v[i]);
        if (v[i].t != v[0].t)
            return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "%s: inputs are %s and %s", opname(c),
                             ctosa_dtype_short(v[0].t), ctosa_dtype_short(v[i].t));
    }
    lower_status st = lw_v_bcast(c, n, v);
    if (st) return st;
    ctosa_dtype t = v[0].t;
    if (!ctosa_dtype_is_float(t) && !lw_v_is_int(t)) return reject_dtype(c, t);
    if (mean && !ctosa_dtype_is_float(t)) return reject_dtype(c, t);
    if (n == 1) return lw_v_out(c, 0, lw_v_identity(c, v[0]));
    lw_v acc = ctosa_dtype_is_float(t) ? v[0] : lw_v_widen(c, v[0]);
    for (uint32_t i = 1; i < n; i++)
        acc = lw_v_bin(c, k, acc, ctosa_dtype_is_float(t) ? v[i] : lw_v_widen(c, v[i]));
    if (mean) acc = lw_v_mulk(c, acc, 1.0 / (double)n);
    return lw_v_out(c, 0, lw_v_narrow(c, acc, t));
}

static lower_status lower_max(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_MAXIMUM, false); }
static lower_status lower_min(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_MINIMUM, false); }
static lower_status lower_sum(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_ADD, false); }
static lower_status lower_mean(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_ADD, true); }

/* Ops emitted as is on both operands (bitwise, logical, shifts). */
static lower_status lower_direct2(lower_ctx *c, ctosa_op_kind k) {
    lw_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_bin(c, k, a, b));
}

/* BitShift is defined on unsigned types only; those have no TOSA type and
 * reject in lw_v_in (unsupported_dtype). A signed carrier (should the
 * framework ever map one) gets the logical shifts. */
static lower_status lower_bitshift(lower_ctx *c) {
    const char *dir = lw_attr_str(c, "direction", "");
    if (dir && strcmp(dir, "LEFT") == 0) return lower_direct2(c, CTOSA_OP_LOGICAL_LEFT_SHIFT);
    if (dir && strcmp(dir, "RIGHT") == 0) return lower_direct2(c, CTOSA_OP_LOGICAL_RIGHT_SHIFT);
    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "BitShift: direction '%s' is not LEFT or RIGHT",
                     dir ? dir : "");
}

static lower_status lower_bitwise_and(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_BITWISE_AND); }
static lower_status lower_bitwise_or(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_BITWISE_OR); }
static lower_status lower_bitwise_xor(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_BITWISE_XOR); }
static lower_status lower_and(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_LOGICAL_AND); }
static lower_status lower_or(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_LOGICAL_OR); }
static lower_status lower_xor(lower_ctx *c) { return lower_direct2(c, CTOSA_OP_LOGICAL_XOR); }

static lower_status lower_direct1(lower_ctx *c, ctosa_op_kind k) {
    lw_v a;
    LW_V_IN(c, 0, &a);
    return lw_v_out(c, 0, lw_v_un(c, k, a));
}

static lower_status lower_bitwise_not(lower_ctx *c) { return lower_direct1(c, CTOSA_OP_BITWISE_NOT); }
static lower_status lower_not(lower_ctx *c) { return lower_direct1(c, CTOSA_OP_LOGICAL_NOT); }

/* Comparisons; `swap` turns Less into GREATER(b, a). Bool Equal is
 * NOT(XOR) (EQUAL has no bool rows). */
static lower_status lower_compare(lower_ctx *c, ctosa_op_kind k, bool swap) {
    lw_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    if (a.t == CTOSA_DTYPE_BOOL) {
        if (k != CTOSA_OP_EQUAL) return reject_dtype(c, a.t);
        return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_LOGICAL_NOT, lw_v_bin(c, CTOSA_OP_LOGICAL_XOR, a, b)));
    }
    a = lw_v_widen(c, a);
    b = lw_v_widen(c, b);
    return lw_v_out(c, 0, swap ? lw_v_bin(c, k, b, a) : lw_v_bin(c, k, a, b));
}

static lower_status lower_equal(lower_ctx *c) { return lower_compare(c, CTOSA_OP_EQUAL, false); }
static lower_status lower_greater(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER, false); }
static lower_status lower_greater_eq(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER_EQUAL, false); }
static lower_status lower_less(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER, true); }
static lower_status lower_less_eq(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER_EQUAL, true); }

static lower_status lower_where(lower_ctx *c) {
    lw_v v[3];
    for (uint32_t i = 0; i < 3; i++) LW_V_IN(c, i, &v[i]);
    if (v[0].t != CTOSA_DTYPE_BOOL)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "Where: condition is %s, not bool",
                         ctosa_dtype_short(v[0].t));
    if (v[1].t != v[2].t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "Where: values are %s and %s", ctosa_dtype_short(v[1].t),
                         ctosa_dtype_short(v[2].t));
    lower_status st = lw_v_bcast(c, 3, v);
    if (st) return st;
    return lw_v_out(c, 0, lw_v_select(c, v[0], v[1], v[2]));
}

const lower_entry lower_table_ewise[] = {
    {"Add", 7, 0, lower_add},
    {"Sub", 7, 0, lower_sub},
    {"Mul", 7, 0, lower_mul},
    {"Div", 7, 0, lower_div},
    {"Pow", 7, 0, lower_pow},
    {"Mod", 10, 0, lower_mod},
    {"Max", 6, 0, lower_max},
    {"Min", 6, 0, lower_min},
    {"Sum", 6, 0, lower_sum},
    {"Mean", 6, 0, lower_mean},
    {"BitShift", 11, 0, lower_bitshift},
    {"BitwiseAnd", 18, 0, lower_bitwise_and},
    {"BitwiseOr", 18, 0, lower_bitwise_or},
    {"BitwiseXor", 18, 0, lower_bitwise_xor},
    {"BitwiseNot", 18, 0, lower_bitwise_not},
    {"And", 7, 0, lower_and},
    {"Or", 7, 0, lower_or},
    {"Xor", 7, 0, lower_xor},
    {"Not", 1, 0, lower_not},
    {"Equal", 7, 0, lower_equal},
    {"Greater", 7, 0, lower_greater},
    {"GreaterOrEqual", 12, 0, lower_greater_eq},
    {"Less", 7, 0, lower_less},
    {"LessOrEqual", 12, 0, lower_less_eq},
    {"Where", 9, 0, lower_where},
    {0, 0, 0, 0},
};
