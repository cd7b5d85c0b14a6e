/* qdq_island.c - float islands of one quantized input, as one TABLE.
 *
 * Quantizers leave elementwise operators they do not handle in float
 * between a DequantizeLinear and the next QuantizeLinear: torch 1.13
 * exports HardSwish at opset 13 as DQ(x) -> HardSigmoid -> Mul(DQ(x), .)
 * -> Q, SiLU as Sigmoid and Mul, GELU as Div, Erf, Add, Mul, Mul; ONNX
 * Runtime's quantizer leaves Div / Erf in float. When every value inside
 * such a chain depends on the same integer tensor x only (the other
 * operands are single-valued constants), the chain's output is a function
 * of x alone, and the QuantizeLinear output is TABLE(x): 256 exact entries
 * for int8, the 513-entry interpolated int16 table (qdq_table16_build)
 * otherwise.
 *
 * The island's operators are evaluated here from their ONNX definitions in
 * float32, the precision the float operators run at in the QDQ model, so
 * each int8 entry is the QDQ definition's value exactly (up to the last
 * bit of a transcendental function at an exact tie). */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/qdq_island.h"

static bool is_def(const ctosa_onnx_node *n) { return !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0; }

/* Operators an island may hold: data inputs (index < 2 for binary) and
 * whether the other inputs must be constants. */
typedef struct island_op {
    const char *name;
    uint8_t n_data; /* 1: unary (further inputs constant), 2: binary */
} island_op;

static const island_op k_ops[] = {
    {"Sigmoid", 1}, {"Tanh", 1},       {"HardSigmoid", 1}, {"HardSwish", 1}, {"Relu", 1},
    {"Clip", 1},    {"Erf", 1},        {"Exp", 1},         {"Log", 1},       {"Softplus", 1},
    {"Elu", 1},     {"LeakyRelu", 1},  {"Gelu", 1},        {"Neg", 1},       {"Abs", 1},
    {"Sqrt", 1},    {"Reciprocal", 1}, {"Identity", 1},    {"Add", 2},       {"Sub", 2},
    {"Mul", 2},     {"Div", 2},        {"Pow", 2},         {"Min", 2},       {"Max", 2},
};

static const island_op *find_op(const ctosa_onnx_node *n) {
    if (!is_def(n)) return NULL;
    for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
        if (strcmp(n->op_type, k_ops[i].name) == 0) return &k_ops[i];
    return NULL;
}

bool qdq_island_op(const ctosa_onnx_node *n) { return find_op(n) != NULL; }

static float attr_f(const ctosa_onnx_node *n, const char *name, float def) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, name);
    return a ? a->f : def;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* One operator on float32 operands (b: second operand, c: third). */
static float op_eval(const ctosa_onnx_node *n, float a, float b, float c, uint32_t n_in) {
    const char *op = n->op_type;
    switch (op[0]) {
    case 'A':
        if (!strcmp(op, "Add")) return a + b;
        return fabsf(a); /* Abs */
    case 'C': {          /* Clip: min / max inputs (opset 11+) or attributes */
        float lo = n_in > 1 ? b : attr_f(n, "min", -INFINITY), hi = n_in > 2 ? c : attr_f(n, "max", INFINITY);
        return isnan(a) ? a : clampf(a, lo, hi);
    }
    case 'D': return a / b;
    case 'E':
        if (!strcmp(op, "Erf")) return erff(a);
        if (!strcmp(op, "Exp")) return expf(a);
        { /* Elu */
            float al = attr_f(n, "alpha", 1.0f);
            return a >= 0 ? a : al * expm1f(a);
        }
    case 'G': { /* Gelu (opset 20) */
        const ctosa_onnx_attr *ap = ctosa_onnx_node_attr(n, "approximate");
        if (ap && ap->type == CTOSA_ONNX_ATTR_STRING && ap->s.n == 4 && !memcmp(ap->s.p, "tanh", 4))
            return 0.5f * a * (1.0f + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a)));
        return 0.5f * a * (1.0f + erff(a / 1.4142135623730951f));
    }
    case 'H':
        if (!strcmp(op, "HardSigmoid"))
            return clampf(attr_f(n, "alpha", 0.2f) * a + attr_f(n, "beta", 0.5f), 0.0f, 1.0f);
        return a * clampf(a / 6.0f + 0.5f, 0.0f, 1.0f); /* HardSwish */
    case 'I': return a;
    case 'L':
        if (!strcmp(op, "Log")) return logf(a);
        return a >= 0 ? a : attr_f(n, "alpha", 0.01f) * a; /* LeakyRelu */
    case 'M':
        if (!strcmp(op, "Mul")) return a * b;
        if (!strcmp(op, "Min")) return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
        return isnan(a) || isnan(b) ? NAN : a > b ? a : b; /* Max */
    case 'N': return -a;
    case 'P': return powf(a, b);
    case 'R':
        if (!strcmp(op, "Relu")) return a > 0 ? a : 0.0f;
        return 1.0f / a; /* Reciprocal */
    case 'S':
        if (!strcmp(op, "Sigmoid")) return 1.0f / (1.0f + expf(-a));
        if (!strcmp(op, "Sub")) return a - b;
        if (!strcmp(op, "Sqrt")) return sqrtf(a);
        return a > 30.0f ? a : log1pf(expf(a)); /* Softplus */
    case 'T': return tanhf(a);
    default: return NAN;
    }
}

/* The island that ends in node `head`, walked back from it. In structural
 * mode (constants are not known yet) any value that is not produced by a
 * node of the island or a DequantizeLinear counts as a constant; otherwise
 * constants must be known and single-valued. */
typedef struct walk {
    lower_session *s;
    arena *a;
    bool structural;
    qdq_island *isl;
    const char *why;
} walk;

static bool visit(walk *w, uint32_t ni, int depth);

/* Operand `name` of an island node: the integer input x (through a
 * DequantizeLinear), a constant, or another island node. */
static bool operand(walk *w, const char *name, qdq_src *src, int depth) {
    lower_session *s = w->s;
    qdq_island *isl = w->isl;
    int32_t p = qdq_producer(s, name);
    if (!w->structural) {
        const lw_val *cv = qdq_const(s, w->a, name);
        if (cv && cv->v.data) {
            if (qdq_val_count(cv) != 1) {
                w->why = "a constant operand with more than one value";
                return false;
            }
            *src = (qdq_src){QS_CONST, (float)qdq_val_f64(cv, 0), 0};
            return true;
        }
    }
    if (p >= 0) {
        const ctosa_onnx_node *pn = &s->g->nodes[p];
        if (is_def(pn) && strcmp(pn->op_type, "DequantizeLinear") == 0) {
            lw_val *xv = lw_lookup(s, pn->inputs[0]);
            bool runtime = xv && !xv->v.data &&
                           !(xv->producer >= 0 && w->structural &&
                             strcmp(s->g->nodes[xv->producer].op_type, "Constant") == 0);
            if (runtime) {
                if (isl->n_dq == 0) {
                    isl->x = pn->inputs[0];
                } else if (strcmp(isl->x, pn->inputs[0]) != 0) {
                    w->why = "two different integer inputs";
                    return false;
                }
                bool seen = false;
                for (uint32_t k = 0; k < isl->n_dq; k++) seen |= isl->dq[k] == (uint32_t)p;
                if (!seen) {
                    if (isl->n_dq == QDQ_ISLAND_MAX) {
                        w->why = "too many DequantizeLinear inputs";
                        return false;
                    }
                    isl->dq[isl->n_dq++] = (uint32_t)p;
                }
                *src = (qdq_src){QS_X, 0, 0};
                return true;
            }
        }
        if (find_op(pn)) {
            for (uint32_t k = 0; k < isl->n; k++)
                if (isl->nodes[k].node == (uint32_t)p) {
                    *src = (qdq_src){QS_NODE, 0, k};
                    return true;
                }
            if (!visit(w, (uint32_t)p, depth + 1)) return false;
            *src = (qdq_src){QS_NODE, 0, isl->n - 1};
            return true;
        }
    }
    if (w->structural && (p < 0 || strcmp(s->g->nodes[p].op_type, "Constant") == 0 ||
                          strcmp(s->g->nodes[p].op_type, "Identity") == 0)) {
        lw_val *v = lw_lookup(s, name);
        if (v && (v->initializer || v->v.data || p >= 0) && !v->graph_input) {
            *src = (qdq_src){QS_CONST, 0, 0};
            return true;
        }
    }
    w->why = "an operand that is neither the quantized input nor a single-valued constant";
    return false;
}

static bool visit(walk *w, uint32_t ni, int depth) {
    lower_session *s = w->s;
    qdq_island *isl = w->isl;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    const island_op *op = find_op(n);
    if (!op || depth > QDQ_ISLAND_MAX) {
        w->why = op ? "too deep" : "an operator without a float definition here";
        return false;
    }
    if (n->n_inputs < 1 || n->n_inputs > 3) {
        w->why = "operator arity";
        return false;
    }
    qdq_inode in;
    memset(&in, 0, sizeof in);
    in.node = ni;
    in.n_in = n->n_inputs;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        if (!n->inputs[k][0]) {
            /* optional input left out (Clip's min) */
            in.src[k] = (qdq_src){QS_CONST, k == 1 ? -INFINITY : INFINITY, 0};
            continue;
        }
        if (!operand(w, n->inputs[k], &in.src[k], depth)) return false;
    }
    if (isl->n == QDQ_ISLAND_MAX) {
        w->why = "too many operators";
        return false;
    }
    isl->nodes[isl->n++] = in;
    return true;
}

bool qdq_island_collect(lower_session *s, arena *a, uint32_t head, bool structural, qdq_island *isl,
                        const char **why) {
    memset(isl, 0, sizeof *isl);
    walk w = {s, a, structural, isl, NULL};
    bool ok = visit(&w, head, 0);
    if (ok && isl->n_dq == 0) {
        w.why = "no quantized input";
        ok = false;
    }
    /* every value inside must stay inside: intermediate outputs feed only
     * island nodes */
    for (uint32_t k = 0; ok && k < isl->n; k++) {
        const ctosa_onnx_node *n = &s->g->nodes[isl->nodes[k].node];
        if (n->n_outputs != 1) ok = false;
        if (!ok || isl->nodes[k].node == head) continue;
        lw_val *v = lw_lookup(s, n->outputs[0]);
        if (!v || v->graph_output) ok = false;
        for (uint32_t c = 0; ok && v && c < v->n_consumers; c++) ok = qdq_island_has(isl, v->consumers[c]);
        if (!ok) w.why = "an intermediate value used outside";
    }
    /* (the DequantizeLinear outputs may feed other groups too: they fold
     * when every consumer is a group member, see qdq_fold.c) */
    if (why) *why = ok ? NULL : w.why;
    return ok;
}

bool qdq_island_has(const qdq_island *isl, uint32_t ni) {
    for (uint32_t k = 0; k < isl->n; k++)
        if (isl->nodes[k].node == ni) return true;
    return false;
}

float qdq_island_eval(lower_session *s, const qdq_island *isl, float x) {
    float v[QDQ_ISLAND_MAX];
    for (uint32_t k = 0; k < isl->n; k++) {
        const qdq_inode *in = &isl->nodes[k];
        float op[3] = {0, INFINITY, INFINITY};
        for (uint32_t j = 0; j < in->n_in && j < 3; j++) {
            const qdq_src *sr = &in->src[j];
            op[j] = sr->kind == QS_X ? x : sr->kind == QS_CONST ? sr->v : v[sr->k];
        }
        v[k] = op_eval(&s->g->nodes[in->node], op[0], op[1], op[2], in->n_in);
    }
    return isl->n ? v[isl->n - 1] : x;
}

/* ------------------------------------------------------------ the head */

typedef struct isl_arg {
    lower_session *s;
    const qdq_island *isl;
} isl_arg;

static double isl_call(void *p, double x) {
    isl_arg *a = p;
    return (double)qdq_island_eval(a->s, a->isl, (float)x);
}

/* Scale and zero point of DequantizeLinear dq (per tensor), as the model
 * gives them; false when not constant. */
static bool dq_params(lower_ctx *c, uint32_t dq, double *sc, double *zp) {
    const ctosa_onnx_node *d = &c->s->g->nodes[dq];
    const lw_val *sv = d->n_inputs > 1 ? qdq_const(c->s, lw_arena(c), d->inputs[1]) : NULL;
    const lw_val *zv = d->n_inputs > 2 && d->inputs[2][0] ? qdq_const(c->s, lw_arena(c), d->inputs[2]) : NULL;
    if (!sv || qdq_val_count(sv) != 1 || (zv && qdq_val_count(zv) != 1)) return false;
    *sc = qdq_val_f64(sv, 0);
    *zp = zv ? qdq_val_f64(zv, 0) : 0;
    return true;
}

lower_status qdq_island_head(lower_ctx *c) {
    lower_session *s = c->s;
    const ctosa_onnx_node *n = lw_node(c);
    qdq_island isl;
    const char *why = NULL;
    if (!qdq_island_collect(s, lw_arena(c), c->node_index, false, &isl, &why))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: float operators of one input: %s",
                         n->op_type, why);
    double s0, z0;
    if (!dq_params(c, isl.dq[0], &s0, &z0))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, NULL,
                         "quantized %s: per-tensor constant input scale needed", n->op_type);
    for (uint32_t k = 1; k < isl.n_dq; k++) {
        double sk, zk;
        if (!dq_params(c, isl.dq[k], &sk, &zk) || sk != s0 || zk != z0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "quantized %s: the input is dequantized with two "
                             "different scales / zero points",
                             n->op_type);
    }
    /* the integer input: a runtime input of the head stands for it (the
     * island operators before the head alias it) */
    const char *xt = NULL;
    for (uint32_t k = 0; k < n->n_inputs && !xt; k++) {
        const lower_value *V = lw_has_input(c, k) ? lw_in(c, k) : NULL;
        if (V && !V->data) xt = lw_input(c, k);
    }
    lw_val *xv = lw_lookup(s, isl.x), *yv = lw_lookup(s, n->outputs[0]);
    if (!xt || !xv || !xv->known)
        return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "quantized %s: input %s not available", n->op_type,
                         xt ? "shape" : "tensor");
    if (yv && yv->known &&
        (yv->v.rank != xv->v.rank || memcmp(yv->v.shape, xv->v.shape, xv->v.rank * sizeof *xv->v.shape) != 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: a constant operand broadcasts the "
                         "shape",
                         n->op_type);
    qx_in a;
    qx_out o;
    if (!qdq_dq_operand(c, isl.dq[0], xt, xv->v.rank, xv->v.shape, &a) || !qdq_out(c, a.rank, &o))
        return LOWER_REJECT;
    isl_arg arg = {s, &isl};
    if (a.t != CTOSA_DTYPE_INT8 || o.t != CTOSA_DTYPE_INT8) return qdq_table16_of(c, &a, &o, isl_call, &arg);
    /* int8: 256 exact entries, computed the way the QDQ model computes:
     * DequantizeLinear in float32, the operators in float32, then
     * QuantizeLinear (float32 division, round half to even, saturate) */
    int8_t tab[256];
    float sx = (float)s0, sy = (float)o.s;
    for (int i = 0; i < 256; i++) {
        float xf = (float)((i - 128) - a.zp) * sx;
        float y = qdq_island_eval(s, &isl, xf);
        double q = isnan(y) ? (double)o.lo : (double)nearbyintf(y / sy) + (double)o.zp;
        if (!(q >= (double)o.lo)) q = (double)o.lo;
        if (q > (double)o.hi) q = (double)o.hi;
        tab[i] = (int8_t)q;
    }
    int64_t nt = 256;
    const char *tc = lw_const(c, CTOSA_DTYPE_INT8, 1, &nt, tab);
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT8, a.rank, a.shape);
    if (!tc || !y || !a.x) return lw_failed(c);
    const char *in[2] = {a.x, tc};
    if (!lw_op(c, CTOSA_OP_TABLE, 2, in, 1, &y, NULL)) return lw_failed(c);
    return qdq_finish(c, y, &o, a.rank, a.shape);
}
