/* shape_infer.c - ONNX shape rules for the outputs of CPU-side nodes
 * (see shape_infer.h for why). Only static shapes are produced: every rule
 * needs its inputs' shapes fully known and the attributes / constant inputs
 * that decide the shape; anything else leaves the output unknown, exactly as
 * before. Rules follow the ONNX operator specifications (broadcasting,
 * convolution and pooling output sizes, Reshape's 0 / -1, Resize's
 * floor(size * scale), Slice's clamping). */
#include <math.h>
#include <string.h>

#include "lower/quant/lower_qdq.h"
#include "onnx/onnx_tensor.h"
#include "lower/core/shape_infer.h"

#define SI_MAX LOWER_MAX_RANK

typedef struct si_shape {
    uint32_t rank;
    int64_t d[SI_MAX];
} si_shape;

/* ------------------------------------------------------------- helpers */

/* Dimensions, attribute values and constants beyond SI_BIG are treated as
 * "unknown" (constants are clamped: Slice's INT64_MAX ends), so sums of a
 * few of them cannot overflow; products go through si_mul. Models this
 * large fail elsewhere anyway; the point is no undefined behaviour on
 * hostile input. */
#define SI_BIG ((int64_t)1 << 40)

static bool si_small(int64_t v) { return v >= -SI_BIG && v <= SI_BIG; }

static bool si_mul(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r) && *r <= ((int64_t)1 << 62) && *r >= -((int64_t)1 << 62);
}

static const ctosa_onnx_attr *si_attr(const ctosa_onnx_node *n, const char *name) {
    for (uint32_t a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, name) == 0) return &n->attrs[a];
    return NULL;
}

static int64_t si_int(const ctosa_onnx_node *n, const char *name, int64_t def) {
    const ctosa_onnx_attr *a = si_attr(n, name);
    return a ? a->i : def;
}

static bool si_has_in(const ctosa_onnx_node *n, uint32_t i) { return i < n->n_inputs && n->inputs[i][0]; }

/* Input i with a known type and fully static shape. */
static const lw_val *si_in(lower_session *s, const ctosa_onnx_node *n, uint32_t i, si_shape *sh) {
    if (!si_has_in(n, i)) return NULL;
    const lw_val *v = lw_lookup(s, n->inputs[i]);
    if (!v || !v->known || !v->v.static_shape || v->v.rank > SI_MAX) return NULL;
    for (uint32_t k = 0; k < v->v.rank; k++)
        if (v->v.shape[k] < 0 || v->v.shape[k] > SI_BIG) return NULL;
    if (sh) {
        sh->rank = v->v.rank;
        for (uint32_t k = 0; k < v->v.rank; k++) sh->d[k] = v->v.shape[k];
    }
    return v;
}

/* Integer values of constant input i (at most max); -1 when not constant. */
static int64_t si_const_ints(lower_session *s, const ctosa_onnx_node *n, uint32_t i, int64_t *out,
                             uint32_t max) {
    if (!si_has_in(n, i)) return -1;
    const lw_val *v = lw_lookup(s, n->inputs[i]);
    if (!v || !v->known || !v->v.data) return -1;
    uint64_t cnt = qdq_val_count(v);
    if (cnt > max) return -1;
    for (uint64_t k = 0; k < cnt; k++) {
        double x = qdq_val_f64(v, k);
        if (x != x) return -1;
        out[k] = x > (double)SI_BIG ? SI_BIG : x < -(double)SI_BIG ? -SI_BIG : (int64_t)x;
    }
    return (int64_t)cnt;
}

static int64_t si_const_floats(lower_session *s, const ctosa_onnx_node *n, uint32_t i, double *out,
                               uint32_t max) {
    if (!si_has_in(n, i)) return -1;
    const lw_val *v = lw_lookup(s, n->inputs[i]);
    if (!v || !v->known || !v->v.data) return -1;
    uint64_t cnt = qdq_val_count(v);
    if (cnt > max) return -1;
    for (uint64_t k = 0; k < cnt; k++) out[k] = qdq_val_f64(v, k);
    return (int64_t)cnt;
}

/* Output k of node n becomes a runtime value of ONNX type dt and shape sh
 * (only if nothing filled it before). */
static uint32_t si_set(lower_session *s, const ctosa_onnx_node *n, uint32_t k, int32_t dt,
                       const si_shape *sh) {
    if (k >= n->n_outputs || !n->outputs[k][0] || dt <= 0 || sh->rank > SI_MAX) return 0;
    for (uint32_t i = 0; i < sh->rank; i++)
        if (sh->d[i] < 0) return 0;
    lw_val *v = lw_lookup(s, n->outputs[k]);
    if (!v || v->known) return 0;
    v->v.onnx_dtype = dt;
    v->v.t = lw_dtype_for(&s->spec, dt);
    if (dt == CTOSA_ONNX_INT64 && !lw_spec_has_int64(&s->spec)) v->v.t = CTOSA_DTYPE_INT64;
    v->v.rank = sh->rank;
    for (uint32_t i = 0; i < sh->rank; i++) v->v.shape[i] = sh->d[i];
    v->v.static_shape = true;
    v->v.data = NULL;
    v->known = true;
    return 1;
}

static bool si_axis(int64_t a, uint32_t rank, uint32_t *out) {
    if (a < 0) a += rank;
    if (a < 0 || a >= (int64_t)rank) return false;
    *out = (uint32_t)a;
    return true;
}

/* numpy broadcasting of b into a */
static bool si_bcast(si_shape *a, const si_shape *b) {
    si_shape r;
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (uint32_t i = 0; i < r.rank; i++) {
        int64_t x = i + a->rank >= r.rank ? a->d[i + a->rank - r.rank] : 1;
        int64_t y = i + b->rank >= r.rank ? b->d[i + b->rank - r.rank] : 1;
        if (x != y && x != 1 && y != 1) return false;
        r.d[i] = x == 1 ? y : x;
    }
    *a = r;
    return true;
}

/* ---------------------------------------------------------------- rules */

static bool is_one_of(const char *op, const char *const *list) {
    for (; *list; list++)
        if (strcmp(op, *list) == 0) return true;
    return false;
}

static const char *const same_shape_ops[] = {"Relu",
                                             "Clip",
                                             "Sigmoid",
                                             "Tanh",
                                             "Abs",
                                             "Neg",
                                             "Exp",
                                             "Log",
                                             "Sqrt",
                                             "Erf",
                                             "LeakyRelu",
                                             "HardSigmoid",
                                             "HardSwish",
                                             "Softmax",
                                             "LogSoftmax",
                                             "Identity",
                                             "Dropout",
                                             "Elu",
                                             "Selu",
                                             "Gelu",
                                             "Softplus",
                                             "Softsign",
                                             "Floor",
                                             "Ceil",
                                             "Round",
                                             "Reciprocal",
                                             "Not",
                                             "Sign",
                                             "BatchNormalization",
                                             "InstanceNormalization",
                                             "LayerNormalization",
                                             "LRN",
                                             "Celu",
                                             "Mish",
                                             "ThresholdedRelu",
                                             "Sin",
                                             "Cos",
                                             "Tan",
                                             "Atan",
                                             "Asin",
                                             "Acos",
                                             "Sinh",
                                             "Cosh",
                                             "Hardmax",
                                             "IsNaN",
                                             "IsInf",
                                             "CumSum",
                                             "Shrink",
                                             "GroupNormalization",
                                             "BitwiseNot",
                                             "Asinh",
                                             "Acosh",
                                             "Atanh",
                                             "MeanVarianceNormalization",
                                             "LpNormalization",
                                             "RMSNormalization",
                                             "Swish",
                                             "ReverseSequence",
                                             NULL};
static const char *const bcast_ops[] = {"Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Pow",
                                        "Max",
                                        "Min",
                                        "Sum",
                                        "Mean",
                                        "PRelu",
                                        "And",
                                        "Or",
                                        "Xor",
                                        "Mod",
                                        "BitShift",
                                        "BitwiseAnd",
                                        "BitwiseOr",
                                        "BitwiseXor",
                                        "Equal",
                                        "Less",
                                        "Greater",
                                        "LessOrEqual",
                                        "GreaterOrEqual",
                                        "Where",
                                        NULL};

/* Conv / pooling spatial sizes. w: Conv weight shape or NULL (pools use
 * kernel_shape). */
static bool si_window(const ctosa_onnx_node *n, const si_shape *x, const si_shape *w, bool pool,
                      si_shape *o) {
    if (x->rank < 3) return false;
    uint32_t sp = x->rank - 2;
    const ctosa_onnx_attr *ks = si_attr(n, "kernel_shape"), *st = si_attr(n, "strides"),
                          *dl = si_attr(n, "dilations"), *pd = si_attr(n, "pads"),
                          *ap = si_attr(n, "auto_pad");
    bool ceil_mode = pool && si_int(n, "ceil_mode", 0) != 0;
    char pad_mode[16] = "NOTSET";
    if (ap && ap->s.n && ap->s.n < sizeof pad_mode) {
        memcpy(pad_mode, ap->s.p, ap->s.n);
        pad_mode[ap->s.n] = 0;
    }
    o->rank = x->rank;
    o->d[0] = x->d[0];
    o->d[1] = w ? w->d[0] : x->d[1];
    for (uint32_t i = 0; i < sp; i++) {
        int64_t k = ks && ks->count == sp ? ks->ints[i] : w && w->rank == x->rank ? w->d[2 + i] : -1;
        int64_t sd = st && st->count == sp ? st->ints[i] : 1;
        int64_t d = dl && dl->count == sp ? dl->ints[i] : 1;
        int64_t pb = pd && pd->count == 2 * sp ? pd->ints[i] : 0,
                pe = pd && pd->count == 2 * sp ? pd->ints[sp + i] : 0;
        if (k < 1 || sd < 1 || d < 1 || pb < 0 || pe < 0 || k > SI_BIG || sd > SI_BIG || d > SI_BIG ||
            pb > SI_BIG || pe > SI_BIG)
            return false;
        int64_t in = x->d[2 + i], ek;
        if (!si_mul(k - 1, d, &ek)) return false;
        ek += 1;
        int64_t out;
        if (strcmp(pad_mode, "VALID") == 0) {
            out = in >= ek ? (in - ek) / sd + 1 : 0;
        } else if (strncmp(pad_mode, "SAME", 4) == 0) {
            out = (in + sd - 1) / sd;
        } else if (strcmp(pad_mode, "NOTSET") == 0) {
            int64_t span = in + pb + pe - ek;
            if (span < 0) return false;
            out = (ceil_mode ? (span + sd - 1) / sd : span / sd) + 1;
            /* the last window must start inside the input or its left pad */
            if (ceil_mode && (out - 1) * sd >= in + pb) out--;
        } else {
            return false;
        }
        if (out < 1) return false;
        o->d[2 + i] = out;
    }
    return true;
}

static bool si_matmul(si_shape a, si_shape b, si_shape *o) {
    bool a1 = a.rank == 1, b1 = b.rank == 1;
    if (a.rank == 0 || b.rank == 0) return false;
    if (a1) {
        a.d[1] = a.d[0];
        a.d[0] = 1;
        a.rank = 2;
    }
    if (b1) {
        b.d[1] = 1;
        b.rank = 2;
    }
    if (a.d[a.rank - 1] != b.d[b.rank - 2]) return false;
    si_shape ba = a, bb = b;
    ba.rank -= 2;
    bb.rank -= 2;
    if (!si_bcast(&ba, &bb)) return false;
    *o = ba;
    if (!a1) o->d[o->rank++] = a.d[a.rank - 2];
    if (!b1) o->d[o->rank++] = b.d[b.rank - 1];
    return o->rank <= SI_MAX;
}

/* Axes of a reduction / Squeeze / Unsqueeze: attribute, or constant input
 * 1 (newer opsets). Returns the count, 0 when absent, -1 when unknown. */
static int64_t si_axes(lower_session *s, const ctosa_onnx_node *n, uint32_t in, int64_t *ax) {
    const ctosa_onnx_attr *a = si_attr(n, "axes");
    if (a) {
        if (a->count > SI_MAX) return -1;
        for (uint32_t i = 0; i < a->count; i++) ax[i] = a->ints[i];
        return a->count;
    }
    if (!si_has_in(n, in)) return 0;
    return si_const_ints(s, n, in, ax, SI_MAX);
}

static uint32_t infer(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    const char *op = n->op_type;
    si_shape x, y, o;
    const lw_val *v0 = si_in(s, n, 0, &x);
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return 0;

    if (strcmp(op, "QuantizeLinear") == 0 || strcmp(op, "DequantizeLinear") == 0) {
        if (!v0) return 0;
        bool q = op[0] == 'Q';
        const lw_val *p = si_has_in(n, q ? 2 : 1) ? lw_lookup(s, n->inputs[q ? 2 : 1]) : NULL;
        int32_t dt = p && p->known ? p->v.onnx_dtype : 0;
        if (q && !dt) dt = (int32_t)si_int(n, "output_dtype", CTOSA_ONNX_UINT8);
        if (!q && !dt) dt = CTOSA_ONNX_FLOAT;
        return dt ? si_set(s, n, 0, dt, &x) : 0;
    }
    if (is_one_of(op, same_shape_ops)) {
        if (!v0) return 0;
        uint32_t r = si_set(s, n, 0, v0->v.onnx_dtype, &x);
        if (strcmp(op, "Dropout") == 0) r += si_set(s, n, 1, CTOSA_ONNX_BOOL, &x);
        return r;
    }
    if (strcmp(op, "Cast") == 0 || strcmp(op, "CastLike") == 0) {
        if (!v0) return 0;
        int32_t dt = 0;
        if (op[4] == 0) {
            dt = (int32_t)si_int(n, "to", 0);
        } else {
            const lw_val *t = si_has_in(n, 1) ? lw_lookup(s, n->inputs[1]) : NULL;
            dt = t && t->known ? t->v.onnx_dtype : 0;
        }
        return si_set(s, n, 0, dt, &x);
    }
    if (is_one_of(op, bcast_ops)) {
        if (n->n_inputs == 0) return 0;
        bool where = strcmp(op, "Where") == 0;
        const lw_val *first = NULL;
        o.rank = 0;
        for (uint32_t i = 0; i < n->n_inputs; i++) {
            const lw_val *v = si_in(s, n, i, &y);
            if (!v || !si_bcast(&o, &y)) return 0;
            if (i == (where ? 1u : 0u)) first = v;
        }
        bool cmp = is_one_of(
            op, (const char *const[]){"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", NULL});
        return first ? si_set(s, n, 0, cmp ? CTOSA_ONNX_BOOL : first->v.onnx_dtype, &o) : 0;
    }
    if (!v0) return 0;
    int32_t dt = v0->v.onnx_dtype;

    if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvInteger") == 0 || strcmp(op, "QLinearConv") == 0) {
        bool ql = op[0] == 'Q';
        si_shape w;
        if (!si_in(s, n, ql ? 3 : 1, &w) || w.rank != x.rank) return 0;
        int64_t group = si_int(n, "group", 1);
        int64_t cin;
        if (group < 1 || !si_mul(w.d[1], group, &cin) || cin != x.d[1]) return 0;
        if (!si_window(n, &x, &w, false, &o)) return 0;
        if (op[4] == 'I') dt = CTOSA_ONNX_INT32;
        if (ql) {
            const lw_val *z = si_has_in(n, 7) ? lw_lookup(s, n->inputs[7]) : NULL;
            dt = z && z->known ? z->v.onnx_dtype : dt;
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0 || strcmp(op, "LpPool") == 0) {
        if (!si_window(n, &x, NULL, true, &o)) return 0;
        uint32_t r = si_set(s, n, 0, dt, &o);
        if (op[0] == 'M') r += si_set(s, n, 1, CTOSA_ONNX_INT64, &o);
        return r;
    }
    if (strncmp(op, "Global", 6) == 0) { /* GlobalAveragePool / GlobalMaxPool / GlobalLpPool */
        if (x.rank < 3) return 0;
        o = x;
        for (uint32_t i = 2; i < o.rank; i++) o.d[i] = 1;
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Gemm") == 0) {
        si_shape b;
        if (!si_in(s, n, 1, &b) || x.rank != 2 || b.rank != 2) return 0;
        bool ta = si_int(n, "transA", 0) != 0, tb = si_int(n, "transB", 0) != 0;
        int64_t K = ta ? x.d[0] : x.d[1], K2 = tb ? b.d[1] : b.d[0];
        if (K != K2) return 0;
        o.rank = 2;
        o.d[0] = ta ? x.d[1] : x.d[0];
        o.d[1] = tb ? b.d[0] : b.d[1];
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "MatMul") == 0 || strcmp(op, "MatMulInteger") == 0 || strcmp(op, "QLinearMatMul") == 0) {
        bool ql = op[0] == 'Q';
        if (ql && !si_in(s, n, 0, &x)) return 0;
        if (!si_in(s, n, ql ? 3 : 1, &y) || !si_matmul(x, y, &o)) return 0;
        if (op[6] == 'I') dt = CTOSA_ONNX_INT32;
        if (ql) {
            const lw_val *z = si_has_in(n, 7) ? lw_lookup(s, n->inputs[7]) : NULL;
            dt = z && z->known ? z->v.onnx_dtype : dt;
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Flatten") == 0) {
        uint32_t ax;
        int64_t a = si_int(n, "axis", 1);
        if (a == (int64_t)x.rank) ax = x.rank;
        else if (!si_axis(a, x.rank, &ax)) return 0;
        o.rank = 2;
        o.d[0] = o.d[1] = 1;
        for (uint32_t i = 0; i < x.rank; i++)
            if (!si_mul(o.d[i < ax ? 0 : 1], x.d[i], &o.d[i < ax ? 0 : 1])) return 0;
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Reshape") == 0) {
        int64_t want[SI_MAX];
        int64_t cnt = si_const_ints(s, n, 1, want, SI_MAX);
        if (cnt < 0) return 0;
        bool allowzero = si_int(n, "allowzero", 0) != 0;
        int64_t total = 1, known = 1;
        int neg = -1;
        for (uint32_t i = 0; i < x.rank; i++)
            if (!si_mul(total, x.d[i], &total)) return 0;
        o.rank = (uint32_t)cnt;
        for (uint32_t i = 0; i < o.rank; i++) {
            int64_t d = want[i];
            if (d == 0 && !allowzero) {
                if (i >= x.rank) return 0;
                d = x.d[i];
            }
            if (d == -1) {
                if (neg >= 0) return 0;
                neg = (int)i;
                d = 1;
            } else if (d < 0) {
                return 0;
            }
            o.d[i] = d;
            if (!si_mul(known, d, &known)) return 0;
        }
        if (neg >= 0) {
            if (known == 0 || total % known) return 0;
            o.d[neg] = total / known;
        } else if (known != total) {
            return 0;
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Transpose") == 0) {
        const ctosa_onnx_attr *p = si_attr(n, "perm");
        if (p && p->count != x.rank) return 0;
        uint32_t seen = 0;
        o.rank = x.rank;
        for (uint32_t i = 0; i < x.rank; i++) {
            int64_t k = p ? p->ints[i] : (int64_t)(x.rank - 1 - i);
            if (k < 0 || k >= (int64_t)x.rank || (seen >> k) & 1) return 0;
            seen |= 1u << k;
            o.d[i] = x.d[k];
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Concat") == 0) {
        uint32_t ax;
        if (!si_axis(si_int(n, "axis", 0), x.rank, &ax)) return 0;
        o = x;
        for (uint32_t i = 1; i < n->n_inputs; i++) {
            if (!si_in(s, n, i, &y) || y.rank != x.rank) return 0;
            for (uint32_t k = 0; k < x.rank; k++)
                if (k != ax && y.d[k] != x.d[k]) return 0;
            o.d[ax] += y.d[ax];
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) {
        int64_t ax[SI_MAX];
        int64_t na = si_axes(s, n, 1, ax);
        if (na < 0) return 0;
        uint32_t drop = 0;
        if (op[0] == 'S') {
            for (int64_t i = 0; i < na; i++) {
                uint32_t a;
                if (!si_axis(ax[i], x.rank, &a) || x.d[a] != 1) return 0;
                drop |= 1u << a;
            }
            o.rank = 0;
            for (uint32_t i = 0; i < x.rank; i++)
                if (na ? !((drop >> i) & 1) : x.d[i] != 1) o.d[o.rank++] = x.d[i];
        } else {
            uint32_t r = x.rank + (uint32_t)na, add = 0;
            if (na == 0 || r > SI_MAX) return 0;
            for (int64_t i = 0; i < na; i++) {
                uint32_t a;
                if (!si_axis(ax[i], r, &a) || (add >> a) & 1) return 0;
                add |= 1u << a;
            }
            o.rank = r;
            for (uint32_t i = 0, k = 0; i < r; i++) o.d[i] = (add >> i) & 1 ? 1 : x.d[k++];
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0) {
        const ctosa_onnx_attr *ctm = si_attr(n, "coordinate_transformation_mode");
        bool crop = ctm && ctm->s.n == 18 && !memcmp(ctm->s.p, "tf_crop_and_resize", 18);
        int64_t sizes[SI_MAX];
        double sc[SI_MAX];
        bool old = strcmp(op, "Upsample") == 0 || s->opset < 11; /* (X, scales) */
        int64_t ns = old ? -1 : si_const_ints(s, n, 3, sizes, SI_MAX);
        /* sizes depend on axes, and scaled ones on the roi */
        if (si_attr(n, "axes") || (crop && ns != (int64_t)x.rank)) return 0;
        const ctosa_onnx_attr *sa = si_attr(n, "scales"); /* Upsample before opset 9 */
        o.rank = x.rank;
        if (ns == (int64_t)x.rank) {
            for (uint32_t i = 0; i < x.rank; i++) o.d[i] = sizes[i];
        } else {
            int64_t nc = -1;
            if (old && sa && sa->count <= SI_MAX) {
                nc = sa->count;
                for (int64_t i = 0; i < nc; i++) sc[i] = sa->floats[i];
            } else {
                nc = si_const_floats(s, n, old ? 1 : 2, sc, SI_MAX);
            }
            if (nc != (int64_t)x.rank) return 0;
            for (uint32_t i = 0; i < x.rank; i++) {
                if (!(sc[i] > 0)) return 0;
                /* scales are float32 in the model: multiply in float32 as
                 * the ONNX reference does */
                double od = floor((double)((float)x.d[i] * (float)sc[i]));
                if (!(od >= 0 && od <= (double)SI_BIG)) return 0;
                o.d[i] = (int64_t)od;
            }
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Shape") == 0) {
        int64_t r = x.rank, st = si_int(n, "start", 0), en = si_int(n, "end", r);
        st = st < 0 ? st + r : st;
        en = en < 0 ? en + r : en;
        st = st < 0 ? 0 : st > r ? r : st;
        en = en < 0 ? 0 : en > r ? r : en;
        o.rank = 1;
        o.d[0] = en > st ? en - st : 0;
        return si_set(s, n, 0, CTOSA_ONNX_INT64, &o);
    }
    if (strcmp(op, "Gather") == 0) {
        uint32_t ax;
        if (!si_in(s, n, 1, &y) || !si_axis(si_int(n, "axis", 0), x.rank, &ax)) return 0;
        if (x.rank + y.rank - 1 > SI_MAX) return 0;
        o.rank = 0;
        for (uint32_t i = 0; i < ax; i++) o.d[o.rank++] = x.d[i];
        for (uint32_t i = 0; i < y.rank; i++) o.d[o.rank++] = y.d[i];
        for (uint32_t i = ax + 1; i < x.rank; i++) o.d[o.rank++] = x.d[i];
        return si_set(s, n, 0, dt, &o);
    }
    if (strncmp(op, "Reduce", 6) == 0 || strcmp(op, "ArgMax") == 0 || strcmp(op, "ArgMin") == 0) {
        bool arg = op[0] == 'A';
        int64_t ax[SI_MAX];
        int64_t na;
        if (arg) {
            ax[0] = si_int(n, "axis", 0);
            na = 1;
        } else {
            na = si_axes(s, n, 1, ax);
        }
        if (na < 0) return 0;
        bool keep = si_int(n, "keepdims", 1) != 0;
        uint32_t red = 0;
        if (na == 0) {
            if (si_int(n, "noop_with_empty_axes", 0)) return si_set(s, n, 0, dt, &x);
            red = (1u << x.rank) - 1;
        }
        for (int64_t i = 0; i < na; i++) {
            uint32_t a;
            if (!si_axis(ax[i], x.rank, &a)) return 0;
            red |= 1u << a;
        }
        o.rank = 0;
        for (uint32_t i = 0; i < x.rank; i++) {
            if (!((red >> i) & 1)) o.d[o.rank++] = x.d[i];
            else if (keep) o.d[o.rank++] = 1;
        }
        return si_set(s, n, 0, arg ? CTOSA_ONNX_INT64 : dt, &o);
    }
    if (strcmp(op, "Slice") == 0) {
        int64_t st[SI_MAX], en[SI_MAX], ax[SI_MAX], sp[SI_MAX];
        int64_t ns, ne, na, nst;
        const ctosa_onnx_attr *as = si_attr(n, "starts");
        if (as) { /* opset < 10: attributes, step 1 */
            const ctosa_onnx_attr *ae = si_attr(n, "ends"), *aa = si_attr(n, "axes");
            if (!ae || as->count != ae->count || as->count > SI_MAX || (aa && aa->count != as->count))
                return 0;
            ns = ne = na = nst = as->count;
            for (int64_t i = 0; i < ns; i++) {
                st[i] = as->ints[i] > SI_BIG ? SI_BIG : as->ints[i] < -SI_BIG ? -SI_BIG : as->ints[i];
                en[i] = ae->ints[i] > SI_BIG ? SI_BIG : ae->ints[i] < -SI_BIG ? -SI_BIG : ae->ints[i];
                ax[i] = aa ? aa->ints[i] : i;
                sp[i] = 1;
            }
        } else {
            ns = si_const_ints(s, n, 1, st, SI_MAX);
            ne = si_const_ints(s, n, 2, en, SI_MAX);
            na = si_has_in(n, 3) ? si_const_ints(s, n, 3, ax, SI_MAX) : ns;
            nst = si_has_in(n, 4) ? si_const_ints(s, n, 4, sp, SI_MAX) : ns;
            if (ns < 0 || ne != ns || na != ns || nst != ns) return 0;
            if (!si_has_in(n, 3))
                for (int64_t i = 0; i < ns; i++) ax[i] = i;
            if (!si_has_in(n, 4))
                for (int64_t i = 0; i < ns; i++) sp[i] = 1;
        }
        o = x;
        for (int64_t i = 0; i < ns; i++) {
            uint32_t a;
            if (!si_axis(ax[i], x.rank, &a) || sp[i] == 0) return 0;
            int64_t d = x.d[a], b = st[i], e = en[i];
            b = b < 0 ? b + d : b;
            e = e < 0 ? e + d : e;
            if (sp[i] > 0) {
                b = b < 0 ? 0 : b > d ? d : b;
                e = e < 0 ? 0 : e > d ? d : e;
                o.d[a] = e > b ? (e - b + sp[i] - 1) / sp[i] : 0;
            } else {
                b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
                e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
                o.d[a] = b > e ? (b - e - sp[i] - 1) / -sp[i] : 0;
            }
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Pad") == 0) {
        int64_t p[2 * SI_MAX];
        int64_t np;
        const ctosa_onnx_attr *pa = si_attr(n, "pads");
        if (pa) {
            if (pa->count > 2 * SI_MAX) return 0;
            np = pa->count;
            for (int64_t i = 0; i < np; i++) {
                if (!si_small(pa->ints[i])) return 0;
                p[i] = pa->ints[i];
            }
        } else {
            np = si_const_ints(s, n, 1, p, 2 * SI_MAX);
        }
        if (np != 2 * (int64_t)x.rank || si_has_in(n, 3)) return 0;
        o = x;
        for (uint32_t i = 0; i < x.rank; i++) {
            o.d[i] = x.d[i] + p[i] + p[x.rank + i];
            if (o.d[i] < 0) return 0;
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "Expand") == 0 || strcmp(op, "Tile") == 0) {
        int64_t v[SI_MAX];
        int64_t nv = si_const_ints(s, n, 1, v, SI_MAX);
        if (nv < 0) return 0;
        if (op[0] == 'T') {
            if (nv != (int64_t)x.rank) return 0;
            o = x;
            for (uint32_t i = 0; i < x.rank; i++) {
                if (v[i] < 0 || !si_mul(o.d[i], v[i], &o.d[i])) return 0;
            }
        } else {
            y.rank = (uint32_t)nv;
            for (int64_t i = 0; i < nv; i++) y.d[i] = v[i];
            o = x;
            if (!si_bcast(&o, &y)) return 0;
        }
        return si_set(s, n, 0, dt, &o);
    }
    if (strcmp(op, "DepthToSpace") == 0 || strcmp(op, "SpaceToDepth") == 0) {
        int64_t b = si_int(n, "blocksize", 0);
        if (x.rank != 4 || b < 1 || b > (1 << 20)) return 0;
        o = x;
        if (op[0] == 'D') {
            if (x.d[1] % (b * b)) return 0;
            o.d[1] /= b * b;
            o.d[2] *= b;
            o.d[3] *= b;
        } else {
            if (x.d[2] % b || x.d[3] % b) return 0;
            o.d[1] *= b * b;
            o.d[2] /= b;
            o.d[3] /= b;
        }
        return si_set(s, n, 0, dt, &o);
    }
    return 0;
}

uint32_t lw_infer_fallback(lower_session *s, uint32_t ni) {
    if (!s || ni >= s->g->n_nodes) return 0;
    return infer(s, ni);
}
