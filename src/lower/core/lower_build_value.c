/*
 * lower_build_value.c - the emission builder's value form (lw_v in
 * lower_build.h): a tensor name with its dtype and shape, so elementwise
 * decompositions broadcast, cast and fold constants without restating
 * shapes at every step.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "util/floatfmt.h"

bool lw_v_is_int(ctosa_dtype t) {
    return t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 ||
           t == CTOSA_DTYPE_INT64;
}

static const char *onnx_dt_name(int32_t dt) {
    const char *s = ctosa_onnx_dtype_name(dt);
    return s ? s : "UNDEFINED";
}

lower_status lw_v_dtype(lower_ctx *c, int32_t onnx_dtype, const char *what, ctosa_dtype *out) {
    ctosa_dtype t = lw_tosa_dtype(c, onnx_dtype);
    *out = t;
    if (t != CTOSA_DTYPE_UNKNOWN) return LOWER_OK;
    const ctosa_onnx_node *n = lw_node(c);
    if (onnx_dtype == CTOSA_ONNX_INT64)
        return lw_reject(c, LOWER_INT64_NOT_ENABLED, NULL,
                         "%s: %s is int64 and the spec has no int64 (EXT-INT64)", n->op_type, what);
    return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: %s has dtype %s, which has no TOSA type",
                     n->op_type, what, onnx_dt_name(onnx_dtype));
}

lower_status lw_v_in(lower_ctx *c, uint32_t i, lw_v *v) {
    const ctosa_onnx_node *n = lw_node(c);
    memset(v, 0, sizeof *v);
    const lower_value *x = lw_in(c, i);
    if (!x) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input %u is missing", n->op_type, i);
    if (x->t == CTOSA_DTYPE_UNKNOWN) {
        if (x->onnx_dtype == CTOSA_ONNX_INT64)
            return lw_reject(c, LOWER_INT64_NOT_ENABLED, x->name,
                             "%s: input '%s' is a runtime int64 value and the spec has no int64", n->op_type,
                             x->name);
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, x->name,
                         "%s: input '%s' has dtype %s, which has no TOSA type", n->op_type, x->name,
                         onnx_dt_name(x->onnx_dtype));
    }
    if (!x->static_shape)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, x->name, "%s: input '%s' has a dynamic shape", n->op_type,
                         x->name);
    if (x->rank > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_LEVEL_LIMIT, x->name, "%s: input '%s' has rank %u (max %d)", n->op_type,
                         x->name, x->rank, LOWER_MAX_RANK);
    v->t = x->t;
    v->r = x->rank;
    memcpy(v->s, x->shape, sizeof(int64_t) * x->rank);
    v->cin = x->data && x->t != CTOSA_DTYPE_INT64 ? i + 1 : 0;
    v->n = lw_input(c, i);
    if (!v->n)
        return lw_reject(c, LOWER_INTERNAL, x->name, "%s: cannot read input '%s'", n->op_type, x->name);
    return LOWER_OK;
}

lower_status lw_v_bcast(lower_ctx *c, uint32_t n, const lw_v *v) {
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

lower_status lw_v_out(lower_ctx *c, uint32_t i, lw_v v) {
    if (!v.n)
        return lw_reject(c, LOWER_INTERNAL, NULL, "%s: emitting TOSA operators failed", lw_node(c)->op_type);
    lw_set_output(c, i, v.n);
    return LOWER_OK;
}

lw_v lw_v_none(void) {
    lw_v v;
    memset(&v, 0, sizeof v);
    return v;
}

lw_v lw_v_kt(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v) {
    lw_v k = lw_v_none();
    k.t = t;
    k.r = rank;
    for (uint32_t i = 0; i < rank; i++) k.s[i] = 1;
    k.n = lw_scalar(c, t, rank, v);
    return k;
}

lw_v lw_v_k(lower_ctx *c, lw_v like, double v) { return lw_v_kt(c, like.t, like.r, v); }

lw_v lw_v_rank(lower_ctx *c, lw_v a, uint32_t rank) {
    if (!a.n || a.r >= rank) return a;
    lw_v o = a;
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
static uint32_t common_rank(lower_ctx *c, uint32_t n, lw_v *v, int64_t *shape) {
    uint32_t r = 0;
    for (uint32_t i = 0; i < n; i++) r = v[i].r > r ? v[i].r : r;
    for (uint32_t i = 0; i < n; i++) v[i] = lw_v_rank(c, v[i], r);
    for (uint32_t d = 0; d < r; d++) {
        shape[d] = 1;
        for (uint32_t i = 0; i < n; i++)
            if (v[i].s[d] != 1) shape[d] = v[i].s[d];
    }
    return r;
}

lw_v lw_v_bin(lower_ctx *c, ctosa_op_kind k, lw_v a, lw_v b) {
    if (!a.n || !b.n) return lw_v_none();
    lw_v v[2] = {a, b};
    lw_v o = lw_v_none();
    o.r = common_rank(c, 2, v, o.s);
    if (!v[0].n || !v[1].n) return lw_v_none();
    o.t = bool_out(k) ? CTOSA_DTYPE_BOOL : a.t;
    if (k == CTOSA_OP_MUL && (a.t == CTOSA_DTYPE_INT8 || a.t == CTOSA_DTYPE_INT16)) o.t = CTOSA_DTYPE_INT32;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return lw_v_none();
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in[3] = {v[0].n, v[1].n, NULL};
    uint32_t nin = 2;
    if (k == CTOSA_OP_MUL) {
        int64_t one = 1;
        int8_t zero = 0;
        in[2] = lw_const(c, CTOSA_DTYPE_INT8, 1, &one, &zero);
        if (!in[2]) return lw_v_none();
        nin = 3;
    }
    bool has_attr = k == CTOSA_OP_MAXIMUM || k == CTOSA_OP_MINIMUM;
    if (!lw_op(c, k, nin, in, 1, &out, has_attr ? &at : NULL)) return lw_v_none();
    o.n = out;
    return o;
}

lw_v lw_v_un(lower_ctx *c, ctosa_op_kind k, lw_v a) {
    if (!a.n) return a;
    lw_v o = a;
    o.cin = 0;
    if (k == CTOSA_OP_LOGICAL_NOT) o.t = CTOSA_DTYPE_BOOL;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return lw_v_none();
    const char *in[3] = {a.n, NULL, NULL};
    uint32_t nin = 1;
    if (k == CTOSA_OP_NEGATE) {
        in[1] = lw_zero_point(c, a.t, 0);
        in[2] = lw_zero_point(c, a.t, 0);
        if (!in[1] || !in[2]) return lw_v_none();
        nin = 3;
    }
    if (!lw_op(c, k, nin, in, 1, &out, NULL)) return lw_v_none();
    o.n = out;
    return o;
}

lw_v lw_v_cast(lower_ctx *c, lw_v a, ctosa_dtype t) {
    if (!a.n || a.t == t) return a;
    /* TOSA 1.1 CASTs int64 only to/from bool and int32: anything else goes
     * through int32 (a float -> int CAST clips to the int32 range anyway) */
    ctosa_dtype other = a.t == CTOSA_DTYPE_INT64 ? t : t == CTOSA_DTYPE_INT64 ? a.t : CTOSA_DTYPE_INT32;
    if (other != CTOSA_DTYPE_INT32 && other != CTOSA_DTYPE_BOOL) a = lw_v_cast(c, a, CTOSA_DTYPE_INT32);
    lw_v o = a;
    o.cin = 0;
    o.t = t;
    o.n = lw_cast(c, a.n, a.t, t, a.r, a.s);
    return o;
}

lw_v lw_v_identity(lower_ctx *c, lw_v a) {
    if (!a.n) return a;
    lw_v o = a;
    o.cin = 0;
    o.n = lw_unary(c, CTOSA_OP_IDENTITY, a.n, a.t, a.r, a.s, NULL);
    return o;
}

lw_v lw_v_select(lower_ctx *c, lw_v cond, lw_v a, lw_v b) {
    if (!cond.n || !a.n || !b.n) return lw_v_none();
    lw_v v[3] = {cond, a, b};
    lw_v o = lw_v_none();
    o.r = common_rank(c, 3, v, o.s);
    if (!v[0].n || !v[1].n || !v[2].n) return lw_v_none();
    o.t = a.t;
    const char *out = lw_tensor(c, o.t, o.r, o.s);
    if (!out) return lw_v_none();
    const char *in[3] = {v[0].n, v[1].n, v[2].n};
    if (!lw_op(c, CTOSA_OP_SELECT, 3, in, 1, &out, NULL)) return lw_v_none();
    o.n = out;
    return o;
}

static void int_range(ctosa_dtype t, double *lo, double *hi) {
    switch (t) {
    case CTOSA_DTYPE_INT8:
        *lo = -128;
        *hi = 127;
        break;
    case CTOSA_DTYPE_INT16:
        *lo = -32768;
        *hi = 32767;
        break;
    case CTOSA_DTYPE_INT32:
        *lo = -2147483648.0;
        *hi = 2147483647.0;
        break;
    default:
        *lo = -9223372036854775808.0;
        *hi = 9223372036854775807.0;
        break;
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
    case CTOSA_DTYPE_FP16:
    case CTOSA_DTYPE_BF16: {
        uint16_t h = t == CTOSA_DTYPE_FP16 ? ff_f32_to_fp16((float)v) : ff_f32_to_bf16((float)v);
        p[0] = (uint8_t)h;
        p[1] = (uint8_t)(h >> 8);
        *n = 2;
        return true;
    }
    case CTOSA_DTYPE_FP8E4M3:
        p[0] = ff_f32_to_fp8e4m3((float)v);
        *n = 1;
        return true;
    case CTOSA_DTYPE_FP8E5M2:
        p[0] = ff_f32_to_fp8e5m2((float)v);
        *n = 1;
        return true;
    case CTOSA_DTYPE_INT8:
        p[0] = (uint8_t)(int8_t)v;
        *n = 1;
        return true;
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

lw_v lw_v_clamp(lower_ctx *c, lw_v a, double lo, double hi) {
    if (!a.n) return a;
    if (isnan(lo)) lo = -INFINITY;
    if (isnan(hi)) hi = INFINITY;
    if (lw_v_is_int(a.t)) {
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
        lw_v o = a; /* returned only through lw_v_bin / lw_v_identity */
        if (lo > tlo) o = lw_v_bin(c, CTOSA_OP_MAXIMUM, o, lw_v_k(c, o, lo));
        if (hi < thi) o = lw_v_bin(c, CTOSA_OP_MINIMUM, o, lw_v_k(c, o, hi));
        return o.n == a.n ? lw_v_identity(c, a) : o;
    }
    arena *ar = lw_arena(c);
    uint8_t *blo = arena_zalloc(ar, 8), *bhi = arena_zalloc(ar, 8);
    uint32_t nlo = 0, nhi = 0;
    if (!blo || !bhi || !encode_value(a.t, lo, blo, &nlo) || !encode_value(a.t, hi, bhi, &nhi)) {
        /* a dtype CLAMP cannot encode (bool...): let MAXIMUM/MINIMUM and
         * the validator decide */
        return lw_v_bin(c, CTOSA_OP_MINIMUM, lw_v_bin(c, CTOSA_OP_MAXIMUM, a, lw_v_k(c, a, lo)),
                        lw_v_k(c, a, hi));
    }
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.min_val.p = blo;
    at.min_val.n = nlo;
    at.max_val.p = bhi;
    at.max_val.n = nhi;
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    lw_v o = a;
    o.cin = 0;
    o.n = lw_unary(c, CTOSA_OP_CLAMP, a.n, a.t, a.r, a.s, &at);
    return o;
}

lw_v lw_v_add(lower_ctx *c, lw_v a, lw_v b) { return lw_v_bin(c, CTOSA_OP_ADD, a, b); }
lw_v lw_v_sub(lower_ctx *c, lw_v a, lw_v b) { return lw_v_bin(c, CTOSA_OP_SUB, a, b); }
lw_v lw_v_mul(lower_ctx *c, lw_v a, lw_v b) { return lw_v_bin(c, CTOSA_OP_MUL, a, b); }
lw_v lw_v_addk(lower_ctx *c, lw_v a, double v) { return lw_v_add(c, a, lw_v_k(c, a, v)); }
lw_v lw_v_mulk(lower_ctx *c, lw_v a, double v) {
    if (v == 1.0) return a;
    return lw_v_mul(c, a, lw_v_k(c, a, v));
}
lw_v lw_v_fdiv(lower_ctx *c, lw_v a, lw_v b) { return lw_v_mul(c, a, lw_v_un(c, CTOSA_OP_RECIPROCAL, b)); }

lw_v lw_v_widen(lower_ctx *c, lw_v a) {
    if (a.t == CTOSA_DTYPE_INT8 || a.t == CTOSA_DTYPE_INT16) return lw_v_cast(c, a, CTOSA_DTYPE_INT32);
    return a;
}

lw_v lw_v_narrow(lower_ctx *c, lw_v a, ctosa_dtype t) { return lw_v_cast(c, a, t); }
