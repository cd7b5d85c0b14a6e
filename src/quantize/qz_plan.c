/* qz_plan.c - which tensors of the float model get QuantizeLinear /
 * DequantizeLinear, with which parameters, and the rewrite that inserts
 * them (weights and biases included).
 *
 * The plan follows what `ctosa lower` folds into integer TOSA
 * (docs/quantization.md): a Relu/Clip after Conv/Gemm/MatMul/Add and the
 * float operators of an island (x * HardSigmoid(x), x * Sigmoid(x)) get no
 * Q/DQ inside, so each becomes one integer operator or one TABLE; data
 * movement and max pooling keep their input's parameters, so they need no
 * RESCALE; the inputs of a Concat share the output's parameters when their
 * ranges are alike. Which operators stay float is not decided here: the
 * caller lowers the result under the target and marks what falls back
 * (node_float). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/qz_internal.h"

/* Operator facts the quantizer needs, in one table. */
enum {
    QT_WEIGHT = 1 << 0,    /* input 1 is a weight: int8 symmetric per channel; input 2 an int32 bias */
    QT_SHARE = 1 << 1,     /* output keeps input 0's parameters (data movement, max) */
    QT_CONCAT = 1 << 2,    /* inputs and output may share parameters */
    QT_HEAD = 1 << 3,      /* a following Relu / Clip fuses into it */
    QT_UNARY_FN = 1 << 4,  /* elementwise function of one input: x * f(x) is one TABLE */
    QT_FUSED_ACT = 1 << 5, /* Relu / Clip */
    /* may read an int16 activation in an int8 model: int16 x int8 (two int8
     * convolutions without EXT-INT16) with int32 arithmetic after */
    QT_READ16 = 1 << 6,
    QT_WRITE16 = 1 << 7 /* may write one: its RESCALE gives int16 */
};
typedef struct qz_traits {
    const char *op;
    uint32_t flags;
    uint8_t n_data; /* leading inputs that carry data (the rest: shapes, scales, ...); 255 = all */
} qz_traits;

static const qz_traits TRAITS[] = {
    {"Conv", QT_WEIGHT | QT_HEAD | QT_READ16 | QT_WRITE16, 1},
    {"ConvTranspose", QT_WEIGHT, 1},
    {"Gemm", QT_WEIGHT | QT_HEAD | QT_READ16 | QT_WRITE16, 1},
    {"MatMul", QT_WEIGHT | QT_HEAD, 2},
    {"Add", QT_HEAD | QT_READ16 | QT_WRITE16, 2},
    {"Sub", 0, 2},
    {"Mul", 0, 2},
    {"Div", 0, 2},
    {"Relu", QT_FUSED_ACT | QT_WRITE16, 1},
    {"Clip", QT_FUSED_ACT | QT_WRITE16, 1},
    {"MaxPool", QT_SHARE, 1},
    {"AveragePool", 0, 1},
    {"GlobalAveragePool", 0, 1},
    {"ReduceMean", 0, 1},
    {"Concat", QT_CONCAT, 255},
    {"Reshape", QT_SHARE, 1},
    {"Flatten", QT_SHARE, 1},
    {"Transpose", QT_SHARE, 1},
    {"Squeeze", QT_SHARE, 1},
    {"Unsqueeze", QT_SHARE, 1},
    {"Slice", QT_SHARE, 1},
    {"Split", QT_SHARE, 1},
    {"Gather", QT_SHARE, 1},
    {"Identity", QT_SHARE, 1},
    {"Tile", QT_SHARE, 1},
    {"Expand", QT_SHARE, 1},
    {"DepthToSpace", QT_SHARE, 1},
    {"SpaceToDepth", QT_SHARE, 1},
    {"Resize", QT_SHARE, 1},
    {"Pad", 0, 1},
    {"Sigmoid", QT_UNARY_FN, 1},
    {"HardSigmoid", QT_UNARY_FN, 1},
    {"HardSwish", QT_UNARY_FN, 1},
    {"Tanh", QT_UNARY_FN, 1},
    {"Exp", QT_UNARY_FN, 1},
    {"Log", QT_UNARY_FN, 1},
    {"Erf", QT_UNARY_FN, 1},
    {"Softplus", QT_UNARY_FN, 1},
    {"Elu", QT_UNARY_FN, 1},
    {"LeakyRelu", QT_UNARY_FN, 1},
    {"Gelu", QT_UNARY_FN, 1},
    {"Softmax", 0, 1},
    {"LayerNormalization", 0, 1},
};

static const qz_traits *traits_of(const ctosa_onnx_node *n) {
    if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return NULL;
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(TRAITS); i++)
        if (!strcmp(TRAITS[i].op, n->op_type)) return &TRAITS[i];
    return NULL;
}
static uint32_t flags_of(const ctosa_onnx_node *n) {
    const qz_traits *t = traits_of(n);
    return t ? t->flags : 0;
}
static uint32_t n_data_of(const ctosa_onnx_node *n) {
    const qz_traits *t = traits_of(n);
    return t ? (t->n_data == 255 ? n->n_inputs : t->n_data) : n->n_inputs;
}

int qz_bits_of(const qz_ctx *c, const qz_tensor *t) { return t && t->wide ? 16 : c->bits; }

bool qz_node_int16_ok(const qz_ctx *c, uint32_t node, bool as_producer) {
    const ctosa_onnx_node *n = &c->g->nodes[node];
    uint32_t f = flags_of(n);
    if (!(f & (as_producer ? QT_WRITE16 : QT_READ16))) return false;
    if (f & QT_FUSED_ACT) {
        /* Relu / Clip fused into the operator before it */
        qz_tensor *x = qz_tensor_of(c, n->inputs[0]);
        return x && x->internal && x->producer >= 0 && (flags_of(&c->g->nodes[x->producer]) & QT_WRITE16);
    }
    if (!strcmp(n->op_type, "Conv")) {
        /* 1-D and 2-D: the lowering splits an int16 input into int8 halves */
        const ctosa_onnx_attr *ks = ctosa_onnx_node_attr(n, "kernel_shape");
        return !ks || ks->count <= 2;
    }
    return true;
}

qz_tensor *qz_tensor_of(const qz_ctx *c, const char *name) {
    return name && name[0] ? strmap_get(&c->by_name, name) : NULL;
}

static uint32_t find(qz_ctx *c, uint32_t i) {
    while (c->t[i].group != i) i = c->t[i].group = c->t[c->t[i].group].group;
    return i;
}
uint32_t qz_group_of(qz_ctx *c, uint32_t i) { return find(c, i); }

static void unite(qz_ctx *c, uint32_t a, uint32_t b) {
    a = find(c, a), b = find(c, b);
    if (a != b) c->t[a > b ? a : b].group = a < b ? a : b;
}

/* The one consumer of t, or -1. */
static int32_t only_consumer(const qz_tensor *t) {
    return t->n_cons == 1 && !t->is_output ? (int32_t)t->cons[0] : -1;
}

void qz_plan_decide(qz_ctx *c) {
    const ctosa_onnx_graph *g = c->g;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        bool touches = false;
        for (uint32_t k = 0; k < n->n_inputs && !touches; k++) {
            qz_tensor *t = qz_tensor_of(c, n->inputs[k]);
            touches = t && t->is_float;
        }
        for (uint32_t k = 0; k < n->n_outputs && !touches; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            touches = t && t->is_float;
        }
        c->node_quant[i] = touches && !c->node_float[i];
    }
    for (uint32_t i = 0; i < c->n_t; i++) {
        qz_tensor *t = &c->t[i];
        t->group = i;
        t->internal = t->quant = false;
        t->dq_name = t->q_name = NULL;
        if (!t->is_float) continue;
        bool prod_q = t->producer >= 0 && c->node_quant[t->producer];
        bool cons_q = false;
        for (uint32_t k = 0; k < t->n_cons; k++) cons_q |= c->node_quant[t->cons[k]];
        int32_t only = only_consumer(t);
        if (prod_q && only >= 0 && c->node_quant[only]) {
            const ctosa_onnx_node *p = &g->nodes[t->producer], *n = &g->nodes[only];
            /* Conv -> Relu: one integer operator with a clamp */
            if ((flags_of(p) & QT_HEAD) && (flags_of(n) & QT_FUSED_ACT)) t->internal = true;
            /* x * f(x): one TABLE */
            if ((flags_of(p) & QT_UNARY_FN) && !strcmp(n->op_type, "Mul") && n->n_inputs == 2 &&
                p->n_inputs >= 1) {
                const char *x = p->inputs[0];
                if ((!strcmp(n->inputs[0], x) && !strcmp(n->inputs[1], t->name)) ||
                    (!strcmp(n->inputs[1], x) && !strcmp(n->inputs[0], t->name)))
                    t->internal = true;
            }
        }
        t->quant = !t->internal && (prod_q || cons_q);
    }
    /* parameter sharing */
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (!c->node_quant[i]) continue;
        const ctosa_onnx_node *n = &g->nodes[i];
        uint32_t f = flags_of(n);
        if (f & QT_SHARE) {
            qz_tensor *a = qz_tensor_of(c, n->inputs[0]);
            for (uint32_t k = 0; a && a->quant && k < n->n_outputs; k++) {
                qz_tensor *b = qz_tensor_of(c, n->outputs[k]);
                if (b && b->quant) unite(c, (uint32_t)(a - c->t), (uint32_t)(b - c->t));
            }
        }
        if ((f & QT_CONCAT) && n->n_outputs == 1) {
            qz_tensor *o = qz_tensor_of(c, n->outputs[0]);
            if (!o || !o->quant) continue;
            /* share only when every input uses at least half of the output
             * range: otherwise a narrow input would lose its resolution */
            double w = o->hi - o->lo;
            bool alike = w > 0;
            for (uint32_t k = 0; k < n->n_inputs && alike; k++) {
                qz_tensor *a = qz_tensor_of(c, n->inputs[k]);
                alike = a && a->quant && (a->hi - a->lo) >= 0.5 * w;
            }
            for (uint32_t k = 0; k < n->n_inputs && alike; k++)
                unite(c, (uint32_t)(qz_tensor_of(c, n->inputs[k]) - c->t), (uint32_t)(o - c->t));
        }
    }
    qz_plan_params(c);
}

void qz_plan_params(qz_ctx *c) {
    /* group ranges, then parameters */
    double *glo = calloc(c->n_t + 1, sizeof(double)), *ghi = calloc(c->n_t + 1, sizeof(double));
    if (!glo || !ghi) {
        free(glo);
        free(ghi);
        for (uint32_t i = 0; i < c->n_t; i++) c->t[i].group = i;
        glo = ghi = NULL;
    }
    /* an int16 group (mixed precision) takes its members' whole range, as
     * --activations int16 does by default: 65535 steps make rounding
     * negligible, so clipping only hurts */
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].quant && c->t[i].wide) c->t[find(c, i)].wide = true;
    for (uint32_t i = 0; i < c->n_t; i++) c->t[i].wide = c->t[i].quant && c->t[find(c, i)].wide;
    for (uint32_t i = 0; glo && i < c->n_t; i++) {
        uint32_t r = find(c, i);
        if (!c->t[i].quant) continue;
        const qz_tensor *t = &c->t[i];
        glo[r] = fmin(glo[r], t->wide ? fmin(t->st.min, 0) : t->lo);
        ghi[r] = fmax(ghi[r], t->wide ? fmax(t->st.max, 0) : t->hi);
    }
    for (uint32_t i = 0; i < c->n_t; i++) {
        qz_tensor *t = &c->t[i];
        if (!t->quant) continue;
        uint32_t r = glo ? find(c, i) : i;
        double lo = glo       ? glo[r]
                    : t->wide ? fmin(t->st.min, 0)
                              : t->lo,
               hi = glo       ? ghi[r]
                    : t->wide ? fmax(t->st.max, 0)
                              : t->hi;
        qz_params(lo, hi, qz_bits_of(c, t), c->symmetric || t->wide, &t->scale, &t->zp);
    }
    free(glo);
    free(ghi);
}

/* ---------------------------------------------------------------- emit */

static float rd_f32(const void *p, uint64_t i) {
    float v;
    memcpy(&v, (const uint8_t *)p + 4 * i, 4);
    return v;
}

static ctosa_error *add_scalar_params(qz_graph *q, const char *base, float scale, int32_t zp, int bits,
                                      const char **s_name, const char **z_name) {
    *s_name = qz_fresh_name(q, base, "_scale");
    *z_name = qz_fresh_name(q, base, "_zero_point");
    float *s = arena_alloc(&q->a, 4);
    void *z = arena_alloc(&q->a, 2);
    if (!*s_name || !*z_name || !s || !z) return ctosa_error_nomem();
    *s = scale;
    if (bits == 16) {
        int16_t v = (int16_t)zp;
        memcpy(z, &v, 2);
    } else {
        int8_t v = (int8_t)zp;
        memcpy(z, &v, 1);
    }
    if (!qz_graph_add_init(q, *s_name, CTOSA_ONNX_FLOAT, 0, NULL, s, 4) ||
        !qz_graph_add_init(q, *z_name, bits == 16 ? CTOSA_ONNX_INT16 : CTOSA_ONNX_INT8, 0, NULL, z,
                           bits == 16 ? 2 : 1))
        return ctosa_error_nomem();
    return NULL;
}

static ctosa_error *add_dq(qz_graph *q, const char *x, const char *s, const char *z, const char *y,
                           bool has_axis, int64_t axis) {
    const char *in[3] = {x, s, z};
    const char *name = qz_fresh_name(q, y, "_DequantizeLinear");
    qz_node *n = name ? qz_graph_add_node(q, "DequantizeLinear", name, 3, in, 1, &y) : NULL;
    if (!n) return ctosa_error_nomem();
    n->has_axis = has_axis;
    n->axis = axis;
    return NULL;
}

/* Per-channel int8 symmetric weight behind a DequantizeLinear; returns the
 * DequantizeLinear output and the channel scales (arena). */
/* Per-channel int8 symmetric weight behind a DequantizeLinear; returns the
 * DequantizeLinear output, the channel scales and the int8 values (arena). */
static ctosa_error *quant_weight(qz_graph *q, const qz_init *w, int64_t axis, const char **out,
                                 float **scales, int8_t **values, uint32_t *n_ch) {
    uint64_t count = w->nbytes / 4, ch = (uint64_t)w->dims[axis], inner = 1;
    for (uint32_t d = (uint32_t)axis + 1; d < w->rank; d++) inner *= (uint64_t)w->dims[d];
    float *sc = arena_alloc(&q->a, ch * 4);
    int8_t *wq = arena_alloc(&q->a, count ? count : 1), *zp = arena_zalloc(&q->a, ch);
    if (!sc || !wq || !zp) return ctosa_error_nomem();
    double *amax = calloc(ch, sizeof(double));
    if (!amax) return ctosa_error_nomem();
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = (i / inner) % ch;
        amax[c] = fmax(amax[c], fabs(rd_f32(w->data, i)));
    }
    for (uint64_t c = 0; c < ch; c++) sc[c] = (float)(amax[c] > 0 ? amax[c] / 127 : 1.0 / 127);
    free(amax);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t c = (i / inner) % ch;
        double v = nearbyint(rd_f32(w->data, i) / sc[c]);
        wq[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
    }
    const char *qn = qz_fresh_name(q, w->name, "_quantized"), *sn = qz_fresh_name(q, w->name, "_scale"),
               *zn = qz_fresh_name(q, w->name, "_zero_point"), *dn = qz_fresh_name(q, w->name, "_dq");
    int64_t cd = (int64_t)ch;
    if (!qn || !sn || !zn || !dn || !qz_graph_add_init(q, qn, CTOSA_ONNX_INT8, w->rank, w->dims, wq, count) ||
        !qz_graph_add_init(q, sn, CTOSA_ONNX_FLOAT, 1, &cd, sc, ch * 4) ||
        !qz_graph_add_init(q, zn, CTOSA_ONNX_INT8, 1, &cd, zp, ch))
        return ctosa_error_nomem();
    *out = dn;
    *scales = sc;
    *values = wq;
    *n_ch = (uint32_t)ch;
    return add_dq(q, qn, sn, zn, dn, true, axis);
}

/* Bias correction: the mean shift of each output channel that quantizing
 * the layer causes, sum over the kernel of w_q * E[x_q] - w * E[x], with
 * E[x] the per-channel input means of the float run and E[x_q] those of
 * the input after its QuantizeLinear / DequantizeLinear (clipping moves
 * them; border padding is ignored). Subtracted from the bias, it removes
 * the systematic part of the error, which otherwise adds up layer after
 * layer. Returns NULL when the input means are not known. */
static float *weight_shift(qz_graph *q, const ctosa_onnx_node *n, const qz_init *w, int64_t axis,
                           const float *sc, const int8_t *wq, const qz_tensor *x) {
    if (!x || !x->mean || w->rank < 2) return NULL;
    const float *xq = x->qmean ? x->qmean : x->mean;
    uint64_t count = w->nbytes / 4;
    uint32_t n_out = (uint32_t)w->dims[axis];
    float *d = arena_zalloc(&q->a, 4 * (size_t)n_out + 4);
    if (!d) return NULL;
    if (!strcmp(n->op_type, "Conv")) {
        /* [Cout, Cin/g, k...]: input channel g * Cin/g + ci */
        const ctosa_onnx_attr *ga = ctosa_onnx_node_attr(n, "group");
        uint64_t groups = ga && ga->i > 0 ? (uint64_t)ga->i : 1, cin_g = (uint64_t)w->dims[1], k = 1;
        for (uint32_t r = 2; r < w->rank; r++) k *= (uint64_t)w->dims[r];
        if (cin_g * groups != x->n_mean || n_out % groups) return NULL;
        uint64_t per_group = n_out / groups;
        for (uint64_t i = 0; i < count; i++) {
            uint64_t co = i / (cin_g * k), ci = (i / k) % cin_g, cin = (co / per_group) * cin_g + ci;
            d[co] += (float)((double)wq[i] * sc[co] * xq[cin] - (double)rd_f32(w->data, i) * x->mean[cin]);
        }
        return d;
    }
    if (w->rank != 2) return NULL;
    /* Gemm / MatMul: [N, K] (axis 0) or [K, N] (axis 1) */
    uint64_t rows = (uint64_t)w->dims[0], cols = (uint64_t)w->dims[1], kdim = axis == 0 ? cols : rows;
    if (kdim != x->n_mean) return NULL;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t r = i / cols, cl = i % cols, o = axis == 0 ? r : cl, kk = axis == 0 ? cl : r;
        d[o] += (float)((double)wq[i] * sc[o] * xq[kk] - (double)rd_f32(w->data, i) * x->mean[kk]);
    }
    return d;
}

static ctosa_error *quant_bias(qz_graph *q, const qz_init *b, double s_x, const float *s_w, uint32_t n_ch,
                               const float *delta, const char **out) {
    int32_t *bq = arena_alloc(&q->a, 4 * (size_t)n_ch), *zp = arena_zalloc(&q->a, 4 * (size_t)n_ch);
    float *sc = arena_alloc(&q->a, 4 * (size_t)n_ch);
    if (!bq || !zp || !sc) return ctosa_error_nomem();
    for (uint32_t c = 0; c < n_ch; c++) {
        sc[c] = (float)(s_x * (double)s_w[c]);
        double v = nearbyint(((double)rd_f32(b->data, c) - (delta ? delta[c] : 0)) / sc[c]);
        bq[c] = (int32_t)(v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : v);
    }
    const char *qn = qz_fresh_name(q, b->name, "_quantized"), *sn = qz_fresh_name(q, b->name, "_scale"),
               *zn = qz_fresh_name(q, b->name, "_zero_point"), *dn = qz_fresh_name(q, b->name, "_dq");
    int64_t cd = n_ch;
    if (!qn || !sn || !zn || !dn ||
        !qz_graph_add_init(q, qn, CTOSA_ONNX_INT32, 1, &cd, bq, 4 * (uint64_t)n_ch) ||
        !qz_graph_add_init(q, sn, CTOSA_ONNX_FLOAT, 1, &cd, sc, 4 * (uint64_t)n_ch) ||
        !qz_graph_add_init(q, zn, CTOSA_ONNX_INT32, 1, &cd, zp, 4 * (uint64_t)n_ch))
        return ctosa_error_nomem();
    *out = dn;
    return add_dq(q, qn, sn, zn, dn, true, 0);
}

/* A float constant in a data slot: per-tensor, minmax range. */
static ctosa_error *quant_const(qz_ctx *c, qz_graph *q, const qz_init *k, const char **out) {
    uint64_t n = k->nbytes / 4;
    double lo = 0, hi = 0;
    for (uint64_t i = 0; i < n; i++) lo = fmin(lo, rd_f32(k->data, i)), hi = fmax(hi, rd_f32(k->data, i));
    float s;
    int32_t z;
    qz_params(lo, hi, c->bits, c->symmetric, &s, &z);
    int w = c->bits / 8;
    uint8_t *d = arena_alloc(&q->a, n * (uint64_t)w + 1);
    if (!d) return ctosa_error_nomem();
    double qmin = -(double)(1 << (c->bits - 1)), qmax = (double)((1 << (c->bits - 1)) - 1);
    for (uint64_t i = 0; i < n; i++) {
        double v = nearbyint(rd_f32(k->data, i) / s) + z;
        v = v < qmin ? qmin : v > qmax ? qmax : v;
        if (w == 2) {
            int16_t x = (int16_t)v;
            memcpy(d + 2 * i, &x, 2);
        } else d[i] = (uint8_t)(int8_t)v;
    }
    const char *qn = qz_fresh_name(q, k->name, "_quantized"), *dn = qz_fresh_name(q, k->name, "_dq"), *sn,
               *zn;
    if (!qn || !dn ||
        !qz_graph_add_init(q, qn, w == 2 ? CTOSA_ONNX_INT16 : CTOSA_ONNX_INT8, k->rank, k->dims, d,
                           n * (uint64_t)w))
        return ctosa_error_nomem();
    ctosa_error *e = add_scalar_params(q, k->name, s, z, c->bits, &sn, &zn);
    if (!e) e = add_dq(q, qn, sn, zn, dn, false, 0);
    *out = dn;
    return e;
}

/* Q and DQ for tensor t (made by a node writing `src`). */
static ctosa_error *add_qdq(qz_ctx *c, qz_graph *q, qz_tensor *t, const char *src) {
    const char *sn, *zn;
    ctosa_error *e = add_scalar_params(q, t->name, t->scale, t->zp, qz_bits_of(c, t), &sn, &zn);
    if (e) return e;
    const char *qn = qz_fresh_name(q, t->name, "_quantized");
    const char *in[3] = {src, sn, zn};
    t->q_name = qn;
    const char *name = qn ? qz_fresh_name(q, t->name, "_QuantizeLinear") : NULL;
    if (!name || !qz_graph_add_node(q, "QuantizeLinear", name, 3, in, 1, &qn)) return ctosa_error_nomem();
    return add_dq(q, qn, sn, zn, t->dq_name, false, 0);
}

static bool weight_axis(const ctosa_onnx_node *n, const qz_init *w, int64_t *axis) {
    if (!w || w->dtype != CTOSA_ONNX_FLOAT || w->rank < 1) return false;
    if (!strcmp(n->op_type, "Conv")) return *axis = 0, w->rank >= 3;
    if (!strcmp(n->op_type, "ConvTranspose")) {
        const ctosa_onnx_attr *ga = ctosa_onnx_node_attr(n, "group");
        return *axis = 1, w->rank >= 3 && (!ga || ga->i == 1);
    }
    if (!strcmp(n->op_type, "Gemm")) {
        const ctosa_onnx_attr *al = ctosa_onnx_node_attr(n, "alpha"), *tb = ctosa_onnx_node_attr(n, "transB"),
                              *ta = ctosa_onnx_node_attr(n, "transA");
        if ((al && al->f != 1.0f) || (ta && ta->i) || w->rank != 2) return false;
        return *axis = tb && tb->i ? 0 : 1, true;
    }
    if (!strcmp(n->op_type, "MatMul")) return *axis = 1, w->rank == 2;
    return false;
}

uint32_t qz_node_bias_channels(const qz_ctx *c, const qz_graph *q, uint32_t node) {
    const ctosa_onnx_node *n = &c->g->nodes[node];
    int64_t axis;
    if (!(flags_of(n) & QT_WEIGHT) || n->n_inputs < 3 || !n->inputs[2][0]) return 0;
    const qz_init *w = qz_graph_find_init(q, n->inputs[1]), *b = qz_graph_find_init(q, n->inputs[2]);
    if (!weight_axis(n, w, &axis) || !b || b->dtype != CTOSA_ONNX_FLOAT || b->rank != 1) return 0;
    return b->dims[0] == w->dims[axis] ? (uint32_t)b->dims[0] : 0;
}

ctosa_error *qz_plan_emit(qz_ctx *c, qz_graph *q) {
    const ctosa_onnx_graph *g = c->g;
    uint32_t n_orig = q->n_nodes;
    qz_node *orig = q->nodes;
    q->nodes = NULL;
    q->n_nodes = q->cap_nodes = 0;
    ctosa_error *e = NULL;
    /* names first: a graph output keeps its name on the DequantizeLinear */
    for (uint32_t i = 0; i < c->n_t; i++) {
        qz_tensor *t = &c->t[i];
        if (t->quant) t->dq_name = t->is_output ? t->name : qz_fresh_name(q, t->name, "_dq");
        if (t->quant && !t->dq_name) e = ctosa_error_nomem();
    }
    for (uint32_t i = 0; i < g->n_inputs && !e; i++) {
        qz_tensor *t = qz_tensor_of(c, g->inputs[i].name);
        if (t && t->quant && t->producer < 0) e = add_qdq(c, q, t, t->name);
    }
    /* constants the float run computed become initializers; the nodes
     * that made them go */
    bool *gone = calloc(n_orig + 1, sizeof(bool));
    if (!gone && !e) e = ctosa_error_nomem();
    for (uint32_t i = 0; i < n_orig && !e; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        bool all = n->n_outputs > 0;
        for (uint32_t k = 0; k < n->n_outputs && all; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            all = t && t->is_const && t->cval;
        }
        gone[i] = all;
        for (uint32_t k = 0; k < n->n_outputs && all && !e; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            if (!qz_graph_add_init(q, t->name, t->cdtype, t->crank, t->cdims, t->cval, t->csize))
                e = ctosa_error_nomem();
        }
    }
    strmap consts_done;
    strmap_init(&consts_done);
    for (uint32_t i = 0; i < n_orig && !e; i++) {
        qz_node nd = orig[i];
        const ctosa_onnx_node *n = &g->nodes[i];
        if (gone[i]) continue;
        if (c->node_quant[i]) {
            uint32_t n_data = n_data_of(n);
            const qz_init *w = NULL;
            int64_t axis = 0;
            bool has_w = (flags_of(n) & QT_WEIGHT) && n->n_inputs >= 2 &&
                         weight_axis(n, (w = qz_graph_find_init(q, n->inputs[1])), &axis);
            float *s_w = NULL;
            int8_t *wq = NULL;
            uint32_t n_ch = 0;
            /* by value: adding initializers moves q->inits */
            qz_init wv, bv;
            if (has_w) {
                wv = *w;
                w = &wv;
                e = quant_weight(q, w, axis, &nd.in[1], &s_w, &wq, &n_ch);
            }
            if (!e && has_w && n->n_inputs >= 3 && n->inputs[2][0]) {
                const qz_init *b = qz_graph_find_init(q, n->inputs[2]);
                if (b) {
                    bv = *b;
                    b = &bv;
                }
                qz_tensor *x = qz_tensor_of(c, n->inputs[0]);
                const float *shift = c->bias_correction ? weight_shift(q, n, w, axis, s_w, wq, x) : NULL;
                if (b && b->dtype == CTOSA_ONNX_FLOAT && b->rank == 1 && (uint32_t)b->dims[0] == n_ch && x &&
                    x->quant)
                    e = quant_bias(q, b, x->scale, s_w, n_ch, shift, &nd.in[2]);
            }
            for (uint32_t k = 0; k < n->n_inputs && k < n_data && !e; k++) {
                if (has_w && k == 1) continue;
                const qz_init *ki = n->inputs[k][0] ? qz_graph_find_init(q, n->inputs[k]) : NULL;
                if (!ki || ki->dtype != CTOSA_ONNX_FLOAT || ki->nbytes <= 4 || !traits_of(n)) continue;
                qz_init kv = *ki;
                const char *dq = strmap_get(&consts_done, kv.name);
                if (!dq && !(e = quant_const(c, q, &kv, &dq))) strmap_put(&consts_done, kv.name, (void *)dq);
                nd.in[k] = dq;
            }
        }
        for (uint32_t k = 0; k < nd.n_in; k++) {
            qz_tensor *t = qz_tensor_of(c, nd.in[k]);
            if (t && t->quant && strcmp(nd.in[k], t->dq_name)) nd.in[k] = t->dq_name;
        }
        const char **src = calloc(nd.n_out + 1, sizeof(char *));
        if (!src) e = ctosa_error_nomem();
        for (uint32_t k = 0; k < nd.n_out && !e; k++) {
            qz_tensor *t = qz_tensor_of(c, nd.out[k]);
            src[k] = nd.out[k];
            if (t && t->quant && t->is_output) {
                src[k] = qz_fresh_name(q, t->name, "_float");
                if (!src[k]) e = ctosa_error_nomem();
                nd.out[k] = src[k];
            }
        }
        if (!e) {
            qz_node *d = qz_graph_add_node(q, nd.op_type, c->label[i], nd.n_in, nd.in, nd.n_out, nd.out);
            if (!d) e = ctosa_error_nomem();
            else d->domain = nd.domain, d->orig = nd.orig, d->drop_axes_attr = nd.drop_axes_attr;
        }
        for (uint32_t k = 0; k < nd.n_out && !e; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            if (t && t->quant) e = add_qdq(c, q, t, src[k]);
        }
        free(src);
    }
    strmap_free(&consts_done);
    free(gone);
    free(orig);
    return e;
}
