/*
 * lower_ewise.c - ONNX elementwise binary / variadic / logical / comparison
 * operators -> TOSA, and the value helpers (lower_ew.h) shared with the
 * unary, activation and cast families.
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

#include "lower/lower_ew.h"
#include "util/floatfmt.h"

/* ================================================================ helpers */

bool ew_is_int(ctosa_dtype t) {
    return t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 ||
           t == CTOSA_DTYPE_INT64;
}

static const char *onnx_dt_name(int32_t dt) {
    const char *s = ctosa_onnx_dtype_name(dt);
    return s ? s : "UNDEFINED";
}

lower_status ew_dtype(lower_ctx *c, int32_t onnx_dtype, const char *what, ctosa_dtype *out) {
    ctosa_dtype t = lw_tosa_dtype(c, onnx_dtype);
    *out = t;
    if (t != CTOSA_DTYPE_UNKNOWN) return LOWER_OK;
    const ctosa_onnx_node *n = lw_node(c);
    if (onnx_dtype == CTOSA_ONNX_INT64)
        return lw_reject(c, LOWER_INT64_NOT_ENABLED, NULL,
                         "%s: %s is int64 and the spec has no int64 (EXT-INT64)", n->op_type,
                         what);
    return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: %s has dtype %s, which has no TOSA type",
                     n->op_type, what, onnx_dt_name(onnx_dtype));
}

lower_status ew_in(lower_ctx *c, uint32_t i, ew_v *v) {
    const ctosa_onnx_node *n = lw_node(c);
    memset(v, 0, sizeof *v);
    const lower_value *x = lw_in(c, i);
    if (!x) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input %u is missing", n->op_type, i);
    if (x->t == CTOSA_DTYPE_UNKNOWN) {
        if (x->onnx_dtype == CTOSA_ONNX_INT64)
            return lw_reject(c, LOWER_INT64_NOT_ENABLED, x->name,
                             "%s: input '%s' is a runtime int64 value and the spec has no int64",
                             n->op_type, x->name);
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, x->name,
                         "%s: input '%s' has dtype %s, which has no TOSA type", n->op_type, x->name,
                         onnx_dt_name(x->onnx_dtype));
    }
    if (!x->static_shape)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, x->name, "%s: input '%s' has a dynamic shape",
                         n->op_type, x->name);
    if (x->rank > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_LEVEL_LIMIT, x->name, "%s: input '%s' has rank %u (max %d)",
                         n->op_type, x->name, x->rank, LOWER_MAX_RANK);
    v->t = x->t;
    v->r = x->rank;
    memcpy(v->s, x->shape, sizeof(int64_t) * x->rank);
    v->cin = x->data && x->t != CTOSA_DTYPE_INT64 ? i + 1 : 0;
    v->n = lw_input(c, i);
    if (!v->n) return lw_reject(c, LOWER_INTERNAL, x->name, "%s: cannot read input '%s'", n->op_type, x->name);
    return LOWER_OK;
}

lower_status ew_bcast(lower_ctx *c, uint32_t n, const ew_v *v) {
    uint32_t r = 0;
    for (uint32_t i = 0; i < n; i++) r = v[i].r > r ? v[i].r : r;
    for (uint32_t d = 0; d < r; d++) {
        int64_t dim = 1;
        for (uint32_t i = 0; i < n; i++) {
            if (d + v[i].r < r) continue; /* leading 1 */
            int64_t s = v[i].s[d + v[i].r - r];
            if (s == 1) continue;
            if (dim != 1 && dim != s)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "%s: input shapes do not broadcast (dimension %u: %lld vs %lld)",
                                 lw_node(c)->op_type, d, (long long)dim, (long long)s);
            dim = s;
        }
    }
    return LOWER_OK;
}

lower_status ew_out(lower_ctx *c, uint32_t i, ew_v v) {
    if (!v.n)
        return lw_reject(c, LOWER_INTERNAL, NULL, "%s: emitting TOSA operators failed",
                         lw_node(c)->op_type);
    lw_set_output(c, i, v.n);
    return LOWER_OK;
}

static ew_v fail_v(void) {
    ew_v v;
    memset(&v, 0, sizeof v);
    return v;
}

ew_v ew_kt(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v) {
    ew_v k = fail_v();
    k.t = t;
    k.r = rank;
    for (uint32_t i = 0; i < rank; i++) k.s[i] = 1;
    k.n = lw_scalar(c, t, rank, v);
    return k;
}

ew_v ew_k(lower_ctx *c, ew_v like, double v) { return ew_kt(c, like.t, like.r, v); }

ew_v ew_rank(lower_ctx *c, ew_v a, uint32_t rank) {
    if (!a.n || a.r >= rank) return a;
    ew_v o = a;
    uint32_t pad = rank - a.r;
    for (uint32_t i = 0; i < rank; i++) o.s[i] = i < pad ? 1 : a.s[i - pad];
    o.r = rank;
    if (a.cin) {
        /* constants (doubles hold every value of the dtypes cin is set
         * for exactly) are emitted at the new rank directly: no RESHAPE */
        const double *v;
        int64_t n = lw_const_f64(c, a.cin - 1, &v), count = 1;
        for (uint32_t i = 0; i < a.r; i++) count *= a.s[i];
        if (n == count) {
            o.n = lw_const_from_f64(c, a.t, rank, o.s, v);
            return o;
        }
    }
    o.n = lw_reshape(c, a.n, a.t, rank, o.s);
    return o;
}

static bool bool_out(ctosa_op_kind k) {
    return k == CTOSA_OP_EQUAL || k == CTOSA_OP_GREATER || k == CTOSA_OP_GREATER_EQUAL ||
           k == CTOSA_OP_LOGICAL_AND || k == CTOSA_OP_LOGICAL_OR || k == CTOSA_OP_LOGICAL_XOR;
}

/* Brings values to a common rank and computes the broadcast shape. */
static uint32_t common_rank(lower_ctx *c, uint32_t n, ew_v *v, int64_t *shape) {
    uint32_t r = 0;
    for (uint32_t i = 0; i < n; i++) r = v[i].r > r ? v[i].r : r;
    for (uint32_t i = 0; i < n; i++) v[i] = ew_rank(c, v[i], r);
    for (uint32_t d = 0; d < r; d++) {
        shape[d] = 1;
        for (uint32_t i = 0; i < n; i++)
            if (v[i].s[d] != 1) shape[d] = v[i].s[d];
    }
    return r;
}

ew_v ew_bin(lower_ctx *c, ctosa_op_kind k, ew_v a, ew_v b) {
    if (!a.n || !b.n) return fail_v();
    ew_v v[2] = {a, b};
    ew_v o = fail_v();
    o.r = common_rank(c, 2, v, o.s);
    if (!v[0].n || !v[1].n) return fail_v();
    o.t = bool_out(k) ? CTOSA_DTYPE_BOOL : a.t;
    if (k == CTOSA_OP_MUL && (a.t == CTOSA_DTYPE_INT8 || a.t == CTOSA_DTYPE_INT16))
        o.t = CTOSA_DTYPE_INT32;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return fail_v();
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in[3] = {v[0].n, v[1].n, NULL};
    uint32_t nin = 2;
    if (k == CTOSA_OP_MUL) {
        int64_t one = 1;
        int8_t zero = 0;
        in[2] = lw_const(c, CTOSA_DTYPE_INT8, 1, &one, &zero);
        if (!in[2]) return fail_v();
        nin = 3;
    }
    bool has_attr = k == CTOSA_OP_MAXIMUM || k == CTOSA_OP_MINIMUM;
    if (!lw_op(c, k, nin, in, 1, &out, has_attr ? &at : NULL)) return fail_v();
    o.n = out;
    return o;
}

ew_v ew_un(lower_ctx *c, ctosa_op_kind k, ew_v a) {
    if (!a.n) return a;
    ew_v o = a;
    o.cin = 0;
    if (k == CTOSA_OP_LOGICAL_NOT) o.t = CTOSA_DTYPE_BOOL;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return fail_v();
    const char *in[3] = {a.n, NULL, NULL};
    uint32_t nin = 1;
    if (k == CTOSA_OP_NEGATE) {
        in[1] = lw_zero_point(c, a.t, 0);
        in[2] = lw_zero_point(c, a.t, 0);
        if (!in[1] || !in[2]) return fail_v();
        nin = 3;
    }
    if (!lw_op(c, k, nin, in, 1, &out, NULL)) return fail_v();
    o.n = out;
    return o;
}

ew_v ew_cast(lower_ctx *c, ew_v a, ctosa_dtype t) {
    if (!a.n || a.t == t) return a;
    /* TOSA 1.1 CASTs int64 only to/from bool and int32: anything else goes
     * through int32 (a float -> int CAST clips to the int32 range anyway) */
    ctosa_dtype other = a.t == CTOSA_DTYPE_INT64 ? t : t == CTOSA_DTYPE_INT64 ? a.t : CTOSA_DTYPE_INT32;
    if (other != CTOSA_DTYPE_INT32 && other != CTOSA_DTYPE_BOOL) a = ew_cast(c, a, CTOSA_DTYPE_INT32);
    ew_v o = a;
    o.cin = 0;
    o.t = t;
    o.n = lw_cast(c, a.n, a.t, t, a.r, a.s);
    return o;
}

ew_v ew_identity(lower_ctx *c, ew_v a) {
    if (!a.n) return a;
    ew_v o = a;
    o.cin = 0;
    o.n = lw_unary(c, CTOSA_OP_IDENTITY, a.n, a.t, a.r, a.s, NULL);
    return o;
}

ew_v ew_select(lower_ctx *c, ew_v cond, ew_v a, ew_v b) {
    if (!cond.n || !a.n || !b.n) return fail_v();
    ew_v v[3] = {cond, a, b};
    ew_v o = fail_v();
    o.r = common_rank(c, 3, v, o.s);
    if (!v[0].n || !v[1].n || !v[2].n) return fail_v();
    o.t = a.t;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return fail_v();
    const char *in[3] = {v[0].n, v[1].n, v[2].n};
    if (!lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &out, NULL)) return fail_v();
    o.n = out;
    return o;
}

static void int_range(ctosa_dtype t, double *lo, double *hi) {
    switch (t) {
    case CTOSA_DTYPE_INT8: *lo = -128; *hi = 127; break;
    case CTOSA_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    case CTOSA_DTYPE_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854775807.0; break;
    }
}

/* Little-endian bytes of v in dtype t (CLAMP attribute encoding). */
static bool encode_value(ctosa_dtype t, double v, uint8_t *p, uint32_t *n) {
    switch (t) {
    case CTOSA_DTYPE_FP32: {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        wr_u32(p, w);
        *n = 4;
        return true;
    }
    case CTOSA_DTYPE_FP16: case CTOSA_DTYPE_BF16: {
        uint16_t h = t == CTOSA_DTYPE_FP16 ? ff_f32_to_fp16((float)v) : ff_f32_to_bf16((float)v);
        p[0] = (uint8_t)h;
        p[1] = (uint8_t)(h >> 8);
        *n = 2;
        return true;
    }
    case CTOSA_DTYPE_FP8E4M3: p[0] = ff_f32_to_fp8e4m3((float)v); *n = 1; return true;
    case CTOSA_DTYPE_FP8E5M2: p[0] = ff_f32_to_fp8e5m2((float)v); *n = 1; return true;
    case CTOSA_DTYPE_INT8: p[0] = (uint8_t)(int8_t)v; *n = 1; return true;
    case CTOSA_DTYPE_INT16: {
        uint16_t h = (uint16_t)(int16_t)v;
        p[0] = (uint8_t)h;
        p[1] = (uint8_t)(h >> 8);
        *n = 2;
        return true;
    }
    default: return false;
    }
}

ew_v ew_clamp(lower_ctx *c, ew_v a, double lo, double hi) {
    if (!a.n) return a;
    if (isnan(lo)) lo = -INFINITY;
    if (isnan(hi)) hi = INFINITY;
    if (ew_is_int(a.t)) {
        double tlo, thi;
        int_range(a.t, &tlo, &thi);
        lo = ceil(lo);
        hi = floor(hi);
        if (lo < tlo) lo = tlo;
        if (hi > thi) hi = thi;
    }
    if (lo > hi) lo = hi; /* numpy clip: min(max(x, lo), hi) == hi everywhere */
    if (a.t == CTOSA_DTYPE_INT32 || a.t == CTOSA_DTYPE_INT64) {
        double tlo, thi;
        int_range(a.t, &tlo, &thi);
        ew_v o = a; /* returned only through ew_bin / ew_identity */
        if (lo > tlo) o = ew_bin(c, CTOSA_OP_MAXIMUM, o, ew_k(c, o, lo));
        if (hi < thi) o = ew_bin(c, CTOSA_OP_MINIMUM, o, ew_k(c, o, hi));
        return o.n == a.n ? ew_identity(c, a) : o;
    }
    arena *ar = lw_arena(c);
    uint8_t *blo = arena_zalloc(ar, 8), *bhi = arena_zalloc(ar, 8);
    uint32_t nlo = 0, nhi = 0;
    if (!blo || !bhi || !encode_value(a.t, lo, blo, &nlo) || !encode_value(a.t, hi, bhi, &nhi)) {
        /* a dtype CLAMP cannot encode (bool...): let MAXIMUM/MINIMUM and
         * the validator decide */
        return ew_bin(c, CTOSA_OP_MINIMUM, ew_bin(c, CTOSA_OP_MAXIMUM, a, ew_k(c, a, lo)),
                      ew_k(c, a, hi));
    }
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.min_val.p = blo;
    at.min_val.n = nlo;
    at.max_val.p = bhi;
    at.max_val.n = nhi;
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    ew_v o = a;
    o.cin = 0;
    o.n = lw_unary(c, CTOSA_OP_CLAMP, a.n, a.t, a.r, a.s, &at);
    return o;
}

ew_v ew_add(lower_ctx *c, ew_v a, ew_v b) { return ew_bin(c, CTOSA_OP_ADD, a, b); }
ew_v ew_sub(lower_ctx *c, ew_v a, ew_v b) { return ew_bin(c, CTOSA_OP_SUB, a, b); }
ew_v ew_mul(lower_ctx *c, ew_v a, ew_v b) { return ew_bin(c, CTOSA_OP_MUL, a, b); }
ew_v ew_addk(lower_ctx *c, ew_v a, double v) { return ew_add(c, a, ew_k(c, a, v)); }
ew_v ew_mulk(lower_ctx *c, ew_v a, double v) {
    if (v == 1.0) return a;
    return ew_mul(c, a, ew_k(c, a, v));
}
ew_v ew_fdiv(lower_ctx *c, ew_v a, ew_v b) {
    return ew_mul(c, a, ew_un(c, CTOSA_OP_RECIPROCAL, b));
}

ew_v ew_widen(lower_ctx *c, ew_v a) {
    if (a.t == CTOSA_DTYPE_INT8 || a.t == CTOSA_DTYPE_INT16) return ew_cast(c, a, CTOSA_DTYPE_INT32);
    return a;
}

ew_v ew_narrow(lower_ctx *c, ew_v a, ctosa_dtype t) { return ew_cast(c, a, t); }

/* ============================================================= lowerings */

static const char *opname(lower_ctx *c) { return lw_node(c)->op_type; }

/* Reads the two inputs of a binary op: same TOSA dtype, broadcastable. */
static lower_status two_inputs(lower_ctx *c, ew_v *a, ew_v *b) {
    EW_IN(c, 0, a);
    EW_IN(c, 1, b);
    if (a->t != b->t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "%s: operands are %s and %s", opname(c),
                         ctosa_dtype_short(a->t), ctosa_dtype_short(b->t));
    ew_v v[2] = {*a, *b};
    return ew_bcast(c, 2, v);
}

static lower_status reject_dtype(lower_ctx *c, ctosa_dtype t) {
    return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s on %s is not defined", opname(c),
                     ctosa_dtype_short(t));
}

/* a (k) b for arithmetic: floats directly, small ints widened. */
static ew_v arith(lower_ctx *c, ctosa_op_kind k, ew_v a, ew_v b) {
    ctosa_dtype t = a.t;
    if (ctosa_dtype_is_float(t)) return ew_bin(c, k, a, b);
    if (k == CTOSA_OP_MUL) return ew_narrow(c, ew_bin(c, k, a, b), t);
    return ew_narrow(c, ew_bin(c, k, ew_widen(c, a), ew_widen(c, b)), t);
}

static lower_status lower_arith(lower_ctx *c, ctosa_op_kind k) {
    ew_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    if (!ctosa_dtype_is_float(a.t) && !ew_is_int(a.t)) return reject_dtype(c, a.t);
    return ew_out(c, 0, arith(c, k, a, b));
}

static lower_status lower_add(lower_ctx *c) { return lower_arith(c, CTOSA_OP_ADD); }
static lower_status lower_sub(lower_ctx *c) { return lower_arith(c, CTOSA_OP_SUB); }
static lower_status lower_mul(lower_ctx *c) { return lower_arith(c, CTOSA_OP_MUL); }

/* Float Div is a * RECIPROCAL(b) (what TOSA backends do; ~1 ulp per step).
 * Integer Div truncates toward zero in ONNX, as INTDIV does. */
static lower_status lower_div(lower_ctx *c) {
    ew_v a, b;
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
            ew_v r = b;
            r.cin = 0;
            r.n = lw_const_from_f64(c, b.t, b.r, b.s, rv);
            return ew_out(c, 0, ew_mul(c, a, r));
        }
        return ew_out(c, 0, ew_fdiv(c, a, b));
    }
    if (!ew_is_int(a.t)) return reject_dtype(c, a.t);
    return ew_out(c, 0, arith(c, CTOSA_OP_INTDIV, a, b));
}

/* trunc(x) for floats: CEIL below zero, FLOOR above. */
static ew_v ftrunc(lower_ctx *c, ew_v x) {
    ew_v neg = ew_bin(c, CTOSA_OP_GREATER, ew_k(c, x, 0), x);
    return ew_select(c, neg, ew_un(c, CTOSA_OP_CEIL, x), ew_un(c, CTOSA_OP_FLOOR, x));
}

/* x^n for an integer n >= 1 by repeated squaring (exact for integers,
 * one rounding per MUL for floats). */
static ew_v ipow(lower_ctx *c, ew_v x, long n) {
    ew_v acc = fail_v(), p = x;
    bool have = false;
    while (n > 0) {
        if (n & 1) {
            acc = have ? ew_mul(c, acc, p) : p;
            have = true;
        }
        n >>= 1;
        if (n) p = ew_mul(c, p, p);
    }
    return acc;
}

/* A tensor of x's shape filled with v. */
static ew_v fill_like(lower_ctx *c, ew_v x, double v) {
    uint64_t count = 1;
    for (uint32_t i = 0; i < x.r; i++) count *= (uint64_t)x.s[i];
    ew_v o = x;
    o.cin = 0;
    double *vals = arena_alloc(lw_arena(c), sizeof(double) * (count ? count : 1));
    if (!vals) return fail_v();
    for (uint64_t i = 0; i < count; i++) vals[i] = v;
    o.n = lw_const_from_f64(c, x.t, x.r, x.s, vals);
    return o;
}

/* Pow. A constant uniform exponent is specialised: integers |n| <= 64 by
 * repeated squaring (exact for integer bases, handles negative float bases
 * which TOSA POW leaves undefined), 0.5 / -0.5 by RSQRT. Otherwise POW on
 * floats; an integer base goes through fp32 POW and is rounded back, which
 * is exact while |result| < 2^24. */
static lower_status lower_pow(lower_ctx *c) {
    ew_v x, y;
    EW_IN(c, 0, &x);
    const lower_value *yi = lw_in(c, 1);
    if (!yi) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Pow: exponent missing");
    const double *yv = NULL;
    int64_t ny = lw_const_f64(c, 1, &yv);
    bool uniform = ny >= 1 && yi->static_shape && yi->rank <= x.r;
    for (int64_t i = 1; uniform && i < ny; i++) uniform = yv[i] == yv[0] || (isnan(yv[i]) && isnan(yv[0]));
    for (uint32_t d = 0; uniform && d < yi->rank; d++)
        uniform = yi->shape[d] == 1 || yi->shape[d] == x.s[x.r - yi->rank + d];
    if (!ctosa_dtype_is_float(x.t) && !ew_is_int(x.t)) return reject_dtype(c, x.t);
    if (uniform) {
        double e = yv[0];
        if (e == floor(e) && fabs(e) <= 64) {
            if (e < 0 && !ctosa_dtype_is_float(x.t))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, yi->name,
                                 "Pow: negative exponent %g on an integer base", e);
            if (e == 0) return ew_out(c, 0, fill_like(c, x, 1.0));
            ew_v base = ctosa_dtype_is_float(x.t) ? x : ew_widen(c, x);
            ew_v r = ipow(c, base, (long)fabs(e));
            if (e < 0) r = ew_un(c, CTOSA_OP_RECIPROCAL, r);
            if (r.n == base.n) r = ew_identity(c, r);
            return ew_out(c, 0, ew_narrow(c, r, x.t));
        }
        if (ctosa_dtype_is_float(x.t) && e == 0.5)
            return ew_out(c, 0, ew_un(c, CTOSA_OP_RECIPROCAL, ew_un(c, CTOSA_OP_RSQRT, x)));
        if (ctosa_dtype_is_float(x.t) && e == -0.5) return ew_out(c, 0, ew_un(c, CTOSA_OP_RSQRT, x));
    }
    EW_IN(c, 1, &y);
    ew_v v[2] = {x, y};
    lower_status st = ew_bcast(c, 2, v);
    if (st) return st;
    if (ctosa_dtype_is_float(x.t)) {
        if (!ctosa_dtype_is_float(y.t) && !ew_is_int(y.t)) return reject_dtype(c, y.t);
        return ew_out(c, 0, ew_bin(c, CTOSA_OP_POW, x, ew_cast(c, y, x.t)));
    }
    /* integer base */
    ew_v xf = ew_cast(c, x, CTOSA_DTYPE_FP32);
    ew_v yf = ew_cast(c, y, CTOSA_DTYPE_FP32);
    ew_v p = ew_bin(c, CTOSA_OP_POW, xf, yf);
    /* an integer exponent gives an integer result: round to nearest (CAST);
     * a float exponent: ONNX truncates the float result */
    if (ctosa_dtype_is_float(y.t)) p = ftrunc(c, p);
    return ew_out(c, 0, ew_cast(c, p, x.t));
}

/* Mod. fmod=1: sign of the dividend (C fmod), a - trunc(a/b)*b.
 * fmod=0: sign of the divisor (Python %): the fmod result, plus b where
 * it is non-zero and its sign differs from b's. Floats compute the
 * quotient as a * RECIPROCAL(b). */
static lower_status lower_mod(lower_ctx *c) {
    ew_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    int64_t fmod_ = lw_attr_int(c, "fmod", 0);
    ctosa_dtype t = a.t;
    ew_v r;
    if (ctosa_dtype_is_float(t)) {
        ew_v q = ew_fdiv(c, a, b);
        q = fmod_ ? ftrunc(c, q) : ew_un(c, CTOSA_OP_FLOOR, q);
        r = ew_sub(c, a, ew_mul(c, q, b));
        return ew_out(c, 0, r);
    }
    if (!ew_is_int(t)) return reject_dtype(c, t);
    ew_v wa = ew_widen(c, a), wb = ew_widen(c, b);
    ew_v q = ew_bin(c, CTOSA_OP_INTDIV, wa, wb);
    r = ew_sub(c, wa, ew_mul(c, q, wb));
    if (!fmod_) {
        ew_v zero = ew_k(c, r, 0);
        ew_v nz = ew_un(c, CTOSA_OP_LOGICAL_NOT, ew_bin(c, CTOSA_OP_EQUAL, r, zero));
        ew_v rneg = ew_bin(c, CTOSA_OP_GREATER, zero, r);
        ew_v bneg = ew_bin(c, CTOSA_OP_GREATER, ew_k(c, wb, 0), wb);
        ew_v fix = ew_bin(c, CTOSA_OP_LOGICAL_AND, nz, ew_bin(c, CTOSA_OP_LOGICAL_XOR, rneg, bneg));
        r = ew_select(c, fix, ew_add(c, r, wb), r);
    }
    return ew_out(c, 0, ew_narrow(c, r, t));
}

/* Max / Min / Sum / Mean: variadic with multidirectional broadcasting. */
static lower_status lower_variadic(lower_ctx *c, ctosa_op_kind k, bool mean) {
    uint32_t n = lw_n_inputs(c);
    if (n == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: no inputs", opname(c));
    ew_v *v = arena_zalloc(lw_arena(c), sizeof(ew_v) * n);
    if (!v) return lw_reject(c, LOWER_INTERNAL, NULL, "%s: out of memory", opname(c));
    for (uint32_t i = 0; i < n; i++) {
        EW_IN(c, i, &v[i]);
        if (v[i].t != v[0].t)
            return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "%s: inputs are %s and %s", opname(c),
                             ctosa_dtype_short(v[0].t), ctosa_dtype_short(v[i].t));
    }
    lower_status st = ew_bcast(c, n, v);
    if (st) return st;
    ctosa_dtype t = v[0].t;
    if (!ctosa_dtype_is_float(t) && !ew_is_int(t)) return reject_dtype(c, t);
    if (mean && !ctosa_dtype_is_float(t)) return reject_dtype(c, t);
    if (n == 1) return ew_out(c, 0, ew_identity(c, v[0]));
    ew_v acc = ctosa_dtype_is_float(t) ? v[0] : ew_widen(c, v[0]);
    for (uint32_t i = 1; i < n; i++)
        acc = ew_bin(c, k, acc, ctosa_dtype_is_float(t) ? v[i] : ew_widen(c, v[i]));
    if (mean) acc = ew_mulk(c, acc, 1.0 / (double)n);
    return ew_out(c, 0, ew_narrow(c, acc, t));
}

static lower_status lower_max(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_MAXIMUM, false); }
static lower_status lower_min(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_MINIMUM, false); }
static lower_status lower_sum(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_ADD, false); }
static lower_status lower_mean(lower_ctx *c) { return lower_variadic(c, CTOSA_OP_ADD, true); }

/* Ops emitted as is on both operands (bitwise, logical, shifts). */
static lower_status lower_direct2(lower_ctx *c, ctosa_op_kind k) {
    ew_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    return ew_out(c, 0, ew_bin(c, k, a, b));
}

/* BitShift is defined on unsigned types only; those have no TOSA type and
 * reject in ew_in (unsupported_dtype). A signed carrier (should the
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
    ew_v a;
    EW_IN(c, 0, &a);
    return ew_out(c, 0, ew_un(c, k, a));
}

static lower_status lower_bitwise_not(lower_ctx *c) { return lower_direct1(c, CTOSA_OP_BITWISE_NOT); }
static lower_status lower_not(lower_ctx *c) { return lower_direct1(c, CTOSA_OP_LOGICAL_NOT); }

/* Comparisons; `swap` turns Less into GREATER(b, a). Bool Equal is
 * NOT(XOR) (EQUAL has no bool rows). */
static lower_status lower_compare(lower_ctx *c, ctosa_op_kind k, bool swap) {
    ew_v a, b;
    lower_status st = two_inputs(c, &a, &b);
    if (st) return st;
    if (a.t == CTOSA_DTYPE_BOOL) {
        if (k != CTOSA_OP_EQUAL) return reject_dtype(c, a.t);
        return ew_out(c, 0, ew_un(c, CTOSA_OP_LOGICAL_NOT, ew_bin(c, CTOSA_OP_LOGICAL_XOR, a, b)));
    }
    a = ew_widen(c, a);
    b = ew_widen(c, b);
    return ew_out(c, 0, swap ? ew_bin(c, k, b, a) : ew_bin(c, k, a, b));
}

static lower_status lower_equal(lower_ctx *c) { return lower_compare(c, CTOSA_OP_EQUAL, false); }
static lower_status lower_greater(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER, false); }
static lower_status lower_greater_eq(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER_EQUAL, false); }
static lower_status lower_less(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER, true); }
static lower_status lower_less_eq(lower_ctx *c) { return lower_compare(c, CTOSA_OP_GREATER_EQUAL, true); }

static lower_status lower_where(lower_ctx *c) {
    ew_v v[3];
    for (uint32_t i = 0; i < 3; i++) EW_IN(c, i, &v[i]);
    if (v[0].t != CTOSA_DTYPE_BOOL)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "Where: condition is %s, not bool",
                         ctosa_dtype_short(v[0].t));
    if (v[1].t != v[2].t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "Where: values are %s and %s",
                         ctosa_dtype_short(v[1].t), ctosa_dtype_short(v[2].t));
    lower_status st = ew_bcast(c, 3, v);
    if (st) return st;
    return ew_out(c, 0, ew_select(c, v[0], v[1], v[2]));
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
