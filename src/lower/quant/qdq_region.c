/* qdq_region.c - quantized data-movement regions.
 *
 * torch's exporter leaves a channel shuffle (and the Concat / Slice around
 * it) in float: DequantizeLinear outputs of several integer tensors, each
 * with its own scale and zero point, are concatenated, reshaped,
 * transposed and sliced, and the pieces end in QuantizeLinears of other
 * parameters, or in a Conv whose input the quantizer did not observe (its
 * weight is quantized, its output is). Such a region is a DAG: one source
 * may feed several sinks, one sink may read several sources, and a value
 * may pass through several shuffles before it is quantized again.
 *
 * Every region operator only moves values, so a QuantizeLinear sink's
 * output equals the region replayed on the sources requantised to the
 * sink's parameters (elementwise QuantizeLinear(DequantizeLinear(x))
 * commutes with moving elements): each sink replays the operators it
 * depends on, with each operator's own lowering, on its own integer
 * carriers. A source with the sink's scale and zero point passes
 * unchanged, so a region whose parameters agree is bit-exact. A Conv sink
 * accumulates per source parameter set: the region replayed with the
 * other sources' elements at the set's zero point (they contribute
 * nothing), one integer convolution each, the int32 accumulators brought
 * to the largest scale and added before the one requantisation.
 *
 * The region operators also lower on the raw carriers (their outputs keep
 * the shapes the Shape operators around a shuffle read); only the sinks'
 * replays are read. A region is all-or-nothing like a group: qdq_fold.c
 * sends every operator, sink and source DequantizeLinear of it to the
 * CPU when one of them stays there. */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

/* The most sources one sink reads, and the deepest replay. */
#define RG_SRC_MAX 64
#define RG_DEPTH_MAX 256

bool qdq_region_op(const ctosa_onnx_node *n) {
    if (qdq_is_op(n, "QuantizeLinear")) return false;
    return qdq_moves_data(n) || qdq_is_op(n, "Concat") || qdq_is_op(n, "Split");
}

/* Inputs of a region operator that carry moved values (the others are
 * shapes, starts, indices: constants). */
static uint32_t data_inputs(const ctosa_onnx_node *n) { return qdq_is_op(n, "Concat") ? n->n_inputs : 1; }

static int32_t producer(lower_session *s, const char *name) {
    lw_val *v = name[0] ? lw_lookup(s, name) : NULL;
    return v ? v->producer : -1;
}

static int32_t sole_consumer(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    if (n->n_outputs < 1) return -1;
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k][0]) return -1;
    lw_val *v = lw_lookup(s, n->outputs[0]);
    if (!v || v->graph_output || v->n_consumers != 1) return -1;
    return (int32_t)v->consumers[0];
}

/* Whether node u reads value `name` only as input 0 (and reads it). */
static bool reads_only_as_first(const ctosa_onnx_node *u, const char *name) {
    if (u->n_inputs < 1 || strcmp(u->inputs[0], name) != 0) return false;
    for (uint32_t k = 1; k < u->n_inputs; k++)
        if (strcmp(u->inputs[k], name) == 0) return false;
    return true;
}

/* Node u as a sink of region value `name`: a QuantizeLinear, or a Conv
 * with a DequantizeLinear weight whose output goes (through one Relu /
 * Clip) to one QuantizeLinear. *act / *q: the fused activation and the
 * QuantizeLinear. */
static bool sink_of(lower_session *s, uint32_t u, const char *name, int32_t *act, int32_t *q) {
    const ctosa_onnx_node *n = &s->g->nodes[u];
    if (s->qdq->n[u].cand || !reads_only_as_first(n, name)) return false;
    *act = -1;
    if (qdq_is_op(n, "QuantizeLinear")) {
        *q = (int32_t)u;
        return n->n_inputs >= 2;
    }
    if (!qdq_is_op(n, "Conv") || n->n_inputs < 2) return false;
    int32_t w = producer(s, n->inputs[1]);
    if (w < 0 || !qdq_is_op(&s->g->nodes[w], "DequantizeLinear")) return false;
    int32_t nx = sole_consumer(s, u);
    if (nx < 0) return false;
    if (qdq_is_op(&s->g->nodes[nx], "Relu") || qdq_is_op(&s->g->nodes[nx], "Clip")) {
        *act = nx;
        nx = sole_consumer(s, (uint32_t)nx);
        if (nx < 0) return false;
    }
    if (!qdq_is_op(&s->g->nodes[nx], "QuantizeLinear") || s->qdq->n[nx].cand) return false;
    *q = nx;
    return true;
}

/* Whether every reader of region operator i's outputs is a region
 * operator, a Shape, or (sinks true) a sink. */
static bool readers_ok(lower_session *s, uint32_t i, bool sinks) {
    const ctosa_onnx_node *n = &s->g->nodes[i];
    struct qdq_state *q = s->qdq;
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (!n->outputs[k][0]) continue;
        lw_val *v = lw_lookup(s, n->outputs[k]);
        if (!v || v->graph_output) return false;
        for (uint32_t c = 0; c < v->n_consumers; c++) {
            uint32_t u = v->consumers[c];
            if (q->n[u].rnode || qdq_is_op(&s->g->nodes[u], "Shape")) continue;
            int32_t act, qq;
            bool ok = sinks ? sink_of(s, u, n->outputs[k], &act, &qq)
                            : q->n[u].cand && q->n[u].reg == -2 &&
                                  reads_only_as_first(&s->g->nodes[u], n->outputs[k]);
            if (!ok) return false;
        }
    }
    return true;
}

ctosa_error *qdq_region_prepass(lower_session *s) {
    struct qdq_state *q = s->qdq;
    uint32_t nn = q->count;
    bool any = false;
    for (uint32_t i = 0; i < nn; i++) {
        q->n[i].rnode = !q->n[i].cand && qdq_region_op(&s->g->nodes[i]);
        any |= q->n[i].rnode;
    }
    if (!any) return NULL;
    /* structural: moved values come from DequantizeLinear or region
     * operators and go to region operators, Shapes and sinks */
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 0; i < nn; i++) {
            if (!q->n[i].rnode) continue;
            const ctosa_onnx_node *n = &s->g->nodes[i];
            bool ok = n->n_inputs >= 1;
            for (uint32_t k = 0; ok && k < data_inputs(n); k++) {
                int32_t p = producer(s, n->inputs[k]);
                ok = p >= 0 && (q->n[p].rnode || qdq_is_op(&s->g->nodes[p], "DequantizeLinear"));
            }
            if (!ok || !readers_ok(s, i, true)) {
                q->n[i].rnode = false;
                changed = true;
            }
        }
    }
    for (uint32_t i = 0; i < nn; i++) {
        if (!q->n[i].rnode) continue;
        const ctosa_onnx_node *n = &s->g->nodes[i];
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            lw_val *v = n->outputs[k][0] ? lw_lookup(s, n->outputs[k]) : NULL;
            for (uint32_t c = 0; v && c < v->n_consumers; c++) {
                uint32_t u = v->consumers[c];
                int32_t act, qq;
                if (q->n[u].rnode || !sink_of(s, u, n->outputs[k], &act, &qq)) continue;
                q->n[u].cand = true;
                q->n[u].reg = -2; /* a region sink until the regions are numbered */
                q->n[u].act = act;
                q->n[u].q = qq;
            }
        }
    }
    return NULL;
}

bool qdq_region_check(lower_session *s, bool (*consumer_ok)(lower_session *s, uint32_t u)) {
    struct qdq_state *q = s->qdq;
    bool changed = false;
    for (uint32_t i = 0; i < q->count; i++) {
        if (!q->n[i].rnode) continue;
        const ctosa_onnx_node *n = &s->g->nodes[i];
        bool ok = !lw_custom_find(s, i);
        for (uint32_t k = 0; ok && k < data_inputs(n); k++) {
            int32_t p = producer(s, n->inputs[k]);
            if (p < 0) {
                ok = false;
            } else if (!q->n[p].rnode) {
                /* a source: a DequantizeLinear that folds */
                lw_val *dv = lw_lookup(s, s->g->nodes[p].outputs[0]);
                ok = dv && !dv->graph_output && !lw_custom_find(s, (uint32_t)p);
                for (uint32_t u = 0; ok && u < dv->n_consumers; u++) ok = consumer_ok(s, dv->consumers[u]);
            }
        }
        if (!ok || !readers_ok(s, i, false)) {
            q->n[i].rnode = false;
            changed = true;
        }
    }
    for (uint32_t i = 0; i < q->count; i++) {
        if (!q->n[i].cand || q->n[i].reg != -2) continue;
        int32_t p = producer(s, s->g->nodes[i].inputs[0]);
        if (p < 0 || !q->n[p].rnode) {
            q->n[i].cand = false;
            changed = true;
        }
    }
    return changed;
}

static int32_t uf_find(int32_t *par, int32_t x) {
    while (par[x] != x) x = par[x] = par[par[x]];
    return x;
}

static void uf_unite(int32_t *par, int32_t a, int32_t b) {
    a = uf_find(par, a);
    b = uf_find(par, b);
    if (a != b) par[a > b ? a : b] = a < b ? a : b;
}

void qdq_region_number(lower_session *s) {
    struct qdq_state *q = s->qdq;
    uint32_t nn = q->count;
    int32_t *par = arena_alloc(&s->a, (nn + 1) * sizeof *par);
    if (!par) {
        /* out of memory: no regions (their nodes stay on the CPU) */
        for (uint32_t i = 0; i < nn; i++) {
            q->n[i].rnode = false;
            if (q->n[i].reg == -2) q->n[i].cand = false;
        }
        return;
    }
    for (uint32_t i = 0; i < nn; i++) par[i] = (int32_t)i;
    for (uint32_t i = 0; i < nn; i++) {
        const ctosa_onnx_node *n = &s->g->nodes[i];
        if (q->n[i].rnode) {
            for (uint32_t k = 0; k < data_inputs(n); k++)
                uf_unite(par, (int32_t)i, producer(s, n->inputs[k]));
        } else if (q->n[i].cand && q->n[i].reg == -2) {
            uf_unite(par, (int32_t)i, producer(s, n->inputs[0]));
            if (q->n[i].act >= 0) uf_unite(par, (int32_t)i, q->n[i].act);
            uf_unite(par, (int32_t)i, q->n[i].q);
        }
    }
    int32_t *id = arena_alloc(&s->a, (nn + 1) * sizeof *id);
    if (!id) return;
    for (uint32_t i = 0; i < nn; i++) id[i] = -1;
    q->n_reg = 0;
    for (uint32_t i = 0; i < nn; i++) {
        const ctosa_onnx_node *n = &s->g->nodes[i];
        bool member = q->n[i].rnode || (q->n[i].cand && q->n[i].reg == -2);
        if (!member) continue;
        int32_t r = uf_find(par, (int32_t)i);
        if (id[r] < 0) id[r] = q->n_reg++;
        q->n[i].reg = id[r];
        if (q->n[i].rnode) {
            q->n[i].role = QR_REGION;
            for (uint32_t k = 0; k < data_inputs(n); k++) {
                int32_t p = producer(s, n->inputs[k]);
                if (q->n[p].rnode) continue;
                q->n[p].role = QR_DQ;
                q->n[p].reg = id[r];
            }
        } else {
            if (q->n[i].act >= 0) q->n[q->n[i].act].reg = id[r];
            q->n[q->n[i].q].reg = id[r];
        }
    }
}

/* ------------------------------------------------------------- replay */

typedef struct rg_replay {
    lower_ctx *c;
    /* what each source becomes: requantised to o (a QuantizeLinear sink),
     * or (o NULL) kept when its parameters are (gs, gzp), else gzp */
    const qx_out *o;
    double gs;
    int64_t gzp;
    ctosa_dtype t; /* the carrier of the replay */
    uint32_t n_src;
    uint32_t src_node[RG_SRC_MAX];
    qx_in src[RG_SRC_MAX];
    uint32_t n_memo, cap_memo;
    const char **memo_k, **memo_v;
    uint32_t depth;
} rg_replay;

static const char *memo_get(const rg_replay *r, const char *k) {
    for (uint32_t i = 0; i < r->n_memo; i++)
        if (strcmp(r->memo_k[i], k) == 0) return r->memo_v[i];
    return NULL;
}

static bool memo_put(rg_replay *r, const char *k, const char *v) {
    if (r->n_memo == r->cap_memo) {
        uint32_t cap = r->cap_memo ? 2 * r->cap_memo : 16;
        const char **nk = arena_alloc(lw_arena(r->c), cap * sizeof *nk);
        const char **nv = arena_alloc(lw_arena(r->c), cap * sizeof *nv);
        if (!nk || !nv) return false;
        if (r->n_memo) {
            memcpy(nk, r->memo_k, r->n_memo * sizeof *nk);
            memcpy(nv, r->memo_v, r->n_memo * sizeof *nv);
        }
        r->memo_k = nk;
        r->memo_v = nv;
        r->cap_memo = cap;
    }
    r->memo_k[r->n_memo] = k;
    r->memo_v[r->n_memo++] = v;
    return true;
}

/* The integer tensor source DequantizeLinear d stands for, as a signed
 * operand: its folded output in this block (or its integer input), a
 * placeholder while the node is only being decided. */
static bool source_operand(lower_ctx *c, uint32_t d, qx_in *a) {
    lower_session *s = c->s;
    const ctosa_onnx_node *dn = &s->g->nodes[d];
    lw_val *xv = lw_lookup(s, dn->inputs[0]);
    lw_val *ov = lw_lookup(s, dn->outputs[0]);
    if (!xv || !ov || !xv->known) {
        lw_fail(c, LOWER_INPUT_FALLBACK, dn->outputs[0], "quantized region: source '%s' unknown",
                dn->outputs[0]);
        return false;
    }
    const char *x = "";
    if (!xv->v.data) {
        x = strmap_get(c->tmap, dn->outputs[0]);
        if (!x) x = strmap_get(c->tmap, dn->inputs[0]);
        if (!x && s->nodes[c->node_index].part >= 0) {
            lw_fail(c, LOWER_INPUT_FALLBACK, dn->outputs[0],
                    "quantized region: source '%s' is not in this partition", dn->outputs[0]);
            return false;
        }
        if (!x) {
            /* deciding: the source is an input of the scratch graph */
            ctosa_error *e = lw_add_placeholder(c->g, c->b, dn->outputs[0], xv->v.t, &xv->v);
            if (e) {
                lw_fail(c, LOWER_INTERNAL, NULL, "%s", ctosa_error_message(e));
                ctosa_error_free(e);
                return false;
            }
            strmap_put(c->tmap, dn->outputs[0], (void *)dn->outputs[0]);
            x = dn->outputs[0];
        }
    }
    return qdq_dq_operand(c, d, x, xv->v.rank, xv->v.shape, a);
}

/* Collects the source DequantizeLinears region value `name` depends on. */
static bool collect_sources(rg_replay *r, const char *name, uint32_t depth) {
    lower_ctx *c = r->c;
    lower_session *s = c->s;
    int32_t p = producer(s, name);
    if (p < 0 || depth > RG_DEPTH_MAX) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized region too deep");
        return false;
    }
    const qdq_node *qn = &s->qdq->n[p];
    if (qn->role == QR_DQ) {
        for (uint32_t i = 0; i < r->n_src; i++)
            if (r->src_node[i] == (uint32_t)p) return true;
        if (r->n_src == RG_SRC_MAX) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized region with more than %d sources",
                    RG_SRC_MAX);
            return false;
        }
        r->src_node[r->n_src] = (uint32_t)p;
        if (!source_operand(c, (uint32_t)p, &r->src[r->n_src])) return false;
        r->n_src++;
        return true;
    }
    if (qn->role != QR_REGION) {
        lw_fail(c, LOWER_INTERNAL, NULL, "quantized region: '%s' is no region value", name);
        return false;
    }
    const ctosa_onnx_node *n = &s->g->nodes[p];
    for (uint32_t k = 0; k < data_inputs(n); k++)
        if (!collect_sources(r, n->inputs[k], depth + 1)) return false;
    return true;
}

static const char *replay_value(rg_replay *r, const char *name);

/* Region operator ni lowered once more, on the replayed carriers of its
 * moved inputs (its own lowering, in a context of its own). */
static bool replay_node(rg_replay *r, uint32_t ni) {
    lower_ctx *c = r->c;
    lower_session *s = c->s;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    const lower_entry *ent = lower_find(n->domain, n->op_type, lw_opset(c));
    if (!ent) {
        lw_fail(c, LOWER_UNSUPPORTED_OP, NULL, "%s has no lowering", n->op_type);
        return false;
    }
    const char *xs[64];
    uint32_t nd = data_inputs(n);
    if (nd > 64) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized region: %u inputs", nd);
        return false;
    }
    for (uint32_t k = 0; k < nd; k++)
        if (!(xs[k] = replay_value(r, n->inputs[k]))) return false;
    strmap tm;
    strmap_init(&tm);
    lower_ctx sub;
    lw_ctx_init(&sub, s, c->spec, ni, c->g, c->b, c->scratch, &tm, c->reserved, c->counter);
    bool ok = !sub.rejected;
    for (uint32_t k = 0; ok && k < nd; k++) {
        lw_val *v = lw_lookup(s, n->inputs[k]);
        lower_value *cp = v ? arena_memdup(c->scratch, &v->v, sizeof v->v) : NULL;
        ok = cp && strmap_put(&tm, n->inputs[k], (void *)xs[k]);
        if (!ok) break;
        cp->t = r->t;
        cp->data = NULL;
        cp->nbytes = 0;
        sub.in_cache[k] = cp;
    }
    if (!ok) {
        strmap_free(&tm);
        {
            lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
            return false;
        }
    }
    lower_status st = ent->fn(&sub);
    strmap_free(&tm);
    if (st != LOWER_OK || sub.rejected) {
        lw_fail(c, sub.rejected ? sub.code : LOWER_INTERNAL, sub.rej_input, "quantized region: %s '%s': %s",
                n->op_type, s->nodes[ni].label, sub.msg ? sub.msg : "rejected");
        return false;
    }
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (!n->outputs[k][0]) continue;
        if (!sub.out_names[k] || !memo_put(r, n->outputs[k], sub.out_names[k])) {
            lw_fail(c, LOWER_INTERNAL, NULL, "quantized region: %s gave no output", n->op_type);
            return false;
        }
    }
    return true;
}

/* Region value `name` on the replay's carriers. */
static const char *replay_value(rg_replay *r, const char *name) {
    const char *have = memo_get(r, name);
    if (have) return have;
    lower_ctx *c = r->c;
    lower_session *s = c->s;
    int32_t p = producer(s, name);
    if (p < 0) return NULL;
    if (++r->depth > RG_DEPTH_MAX) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized region too deep");
        return NULL;
    }
    const char *y = NULL;
    if (s->qdq->n[p].role == QR_DQ) {
        const qx_in *a = NULL;
        for (uint32_t i = 0; i < r->n_src; i++)
            if (r->src_node[i] == (uint32_t)p) a = &r->src[i];
        if (!a) {
            lw_fail(c, LOWER_INTERNAL, NULL, "quantized region: source of '%s' not collected", name);
        } else if (r->o) {
            y = qdq_requant(c, a, r->o, a->rank, a->shape);
        } else if (a->s == r->gs && a->zp == r->gzp && a->t == r->t) {
            y = a->x;
        } else {
            /* another parameter set: its elements at this set's zero point */
            int64_t one[LOWER_MAX_RANK];
            for (uint32_t i = 0; i < a->rank; i++) one[i] = 1;
            double z = (double)r->gzp;
            y = lw_tile(c, lw_const_from_f64(c, r->t, a->rank, one, &z), r->t, a->rank, one, a->shape);
        }
        if (y && !memo_put(r, name, y)) y = NULL;
    } else if (replay_node(r, (uint32_t)p)) {
        y = memo_get(r, name);
    }
    r->depth--;
    return y;
}

static bool replay_init(rg_replay *r, lower_ctx *c, const char *name) {
    memset(r, 0, sizeof *r);
    r->c = c;
    return collect_sources(r, name, 0);
}

/* The replay's memo holds carriers of one kind: restart it. */
static void replay_reset(rg_replay *r, const qx_out *o, double gs, int64_t gzp, ctosa_dtype t) {
    r->n_memo = 0;
    r->depth = 0;
    r->o = o;
    r->gs = gs;
    r->gzp = gzp;
    r->t = t;
}

/* A Conv sink: one integer convolution per source parameter set. */
static lower_status region_conv(lower_ctx *c, rg_replay *r, const lower_value *X) {
    const lower_value *W = lw_in(c, 1);
    qx_w w;
    qx_out o;
    if (!W || W->rank < 3 || W->rank > 5 || W->rank != X->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: 1-D, 2-D or 3-D convolutions only");
    if (!qdq_weight(c, 1, W->rank, &w) || !qdq_out(c, W->rank, &o)) return LOWER_REJECT;
    if (w.n > 1 && w.axis != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: weight scales must be per output channel");
    int64_t M = W->shape[0];
    bool bbad;
    const double *bias = qdq_bias(c, 2, M, &bbad);
    if (bbad) return LOWER_REJECT;
    qwt wt = {(const uint8_t *)w.data, false, w.zp, w.n, w.scale};
    /* the parameter sets, the largest scale first */
    uint32_t ng = 0, gi[RG_SRC_MAX];
    for (uint32_t i = 0; i < r->n_src; i++) {
        bool seen = false;
        for (uint32_t g = 0; g < ng && !seen; g++)
            seen = r->src[gi[g]].s == r->src[i].s && r->src[gi[g]].zp == r->src[i].zp &&
                   r->src[gi[g]].t == r->src[i].t;
        if (!seen) gi[ng++] = i;
    }
    if (ng == 0) return lw_reject(c, LOWER_INTERNAL, NULL, "quantized region without sources");
    for (uint32_t g = 1; g < ng; g++)
        if (r->src[gi[g]].s > r->src[gi[0]].s) {
            uint32_t t = gi[0];
            gi[0] = gi[g];
            gi[g] = t;
        }
    qx_in a = r->src[gi[0]];
    a.rank = X->rank;
    memcpy(a.shape, X->shape, sizeof a.shape);
    if (ng == 1) {
        replay_reset(r, NULL, a.s, a.zp, a.t);
        a.x = replay_value(r, lw_node(c)->inputs[0]);
        LW_TRY(a.x);
        return qdq_conv_core(c, &a, W->shape, &wt, bias, false, &o);
    }
    /* sum over the sets of acc_g * s_g / s_0 * 2^k, in units of s_0 * s_w /
     * 2^k: the k fraction bits keep the rounding of each set's share far
     * below the float32 rounding of the float convolution it stands for
     * (whole units of s_0 * s_w would move about 0.2% of shufflenet's
     * outputs by one step). |acc| <= 255 * 255 per product term, over all
     * sets together (each term belongs to one). */
    int64_t kvol = 1;
    for (uint32_t i = 2; i < W->rank; i++) kvol *= W->shape[i];
    double s0 = a.s, bmax = 0;
    double *bu = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    if (!bu) return lw_failed(c);
    for (int64_t m = 0; m < M; m++) {
        bu[m] = bias ? bias[m] / (s0 * w.scale[w.n > 1 ? m : 0]) : 0;
        bmax = fmax(bmax, fabs(bu[m]));
    }
    double amax = 65025.0 * (double)W->shape[1] * (double)kvol;
    int k = 0;
    while (k < 20 && (amax + bmax + 1) * ldexp(1.0, k + 1) < 2147483647.0) k++;
    const char *sum = NULL;
    const ctosa_tensor *at = NULL;
    int64_t fs[LOWER_MAX_RANK];
    for (uint32_t g = 0; g < ng; g++) {
        qx_in ag = r->src[gi[g]];
        ag.rank = X->rank;
        memcpy(ag.shape, X->shape, sizeof ag.shape);
        replay_reset(r, NULL, ag.s, ag.zp, ag.t);
        ag.x = replay_value(r, lw_node(c)->inputs[0]);
        LW_TRY(ag.x);
        if (qdq_conv_core(c, &ag, W->shape, &wt, NULL, true, NULL) != LOWER_OK || c->rejected)
            return LOWER_REJECT;
        const char *acc = c->out_names[0];
        at = acc ? lw_tensor_info(c, acc) : NULL;
        if (!at || at->rank > LOWER_MAX_RANK)
            return lw_reject(c, LOWER_INTERNAL, NULL, "quantized Conv: no accumulator");
        for (uint32_t i = 0; i < at->rank; i++) fs[i] = at->shape[i];
        if (g > 0 || k > 0)
            acc = qdq_rescale(c, acc, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32, at->rank, fs, ldexp(ag.s / s0, k),
                              0, 0, false, false);
        sum = g == 0 ? acc : lw_add(c, sum, acc, CTOSA_DTYPE_INT32, at->rank, fs);
        LW_TRY(sum);
    }
    uint32_t rank = at->rank;
    double *ratio = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    int32_t *bq = arena_alloc(lw_arena(c), (size_t)M * sizeof(int32_t) + 8);
    if (!ratio || !bq) return lw_failed(c);
    double blim = 2147483647.0 - amax * ldexp(1.0, k);
    for (int64_t m = 0; m < M; m++) {
        double b = nearbyint(ldexp(bu[m], k));
        bq[m] = (int32_t)(b > blim ? blim : b < -blim ? -blim : b);
        ratio[m] = ldexp(qdq_acc_ratio(s0, w.scale[w.n > 1 ? m : 0], o.s), -k);
    }
    int64_t bs[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) bs[i] = i == 1 ? M : 1;
    if (bias) sum = lw_add(c, sum, lw_const_i32(c, rank, bs, bq), CTOSA_DTYPE_INT32, rank, fs);
    /* per output channel: the channels last for RESCALE */
    int64_t ls[LOWER_MAX_RANK];
    lw_shape_last(rank, fs, ls);
    const char *y = lw_to_last(c, sum, CTOSA_DTYPE_INT32, rank, fs);
    y = qdq_rescale_n(c, y, CTOSA_DTYPE_INT32, o.t, rank, ls, w.n > 1 ? M : 1, ratio, 0, o.zp, false, false);
    y = lw_to_first(c, y, o.t, rank, ls);
    LW_TRY(y);
    return qdq_finish(c, y, &o, rank, fs);
}

lower_status qdq_region_head(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_value *X = lw_in(c, 0);
    if (!X) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input is not available", n->op_type);
    rg_replay *r = arena_alloc(lw_arena(c), sizeof *r);
    if (!r) return lw_failed(c);
    if (!replay_init(r, c, n->inputs[0])) return LOWER_REJECT;
    if (qdq_is_op(n, "Conv")) return region_conv(c, r, X);
    qx_out o;
    if (!qdq_out(c, X->rank, &o)) return LOWER_REJECT;
    replay_reset(r, &o, 0, 0, o.t);
    const char *y = replay_value(r, n->inputs[0]);
    LW_TRY(y);
    return qdq_finish(c, y, &o, X->rank, X->shape);
}
