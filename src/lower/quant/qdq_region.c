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
    int32_t w = qdq_producer(s, n->inputs[1]);
    if (w < 0 || !qdq_is_op(&s->g->nodes[w], "DequantizeLinear")) return false;
    int32_t nx = qdq_sole_consumer(s, u);
    if (nx < 0) return false;
    if (qdq_is_op(&s->g->nodes[nx], "Relu") || qdq_is_op(&s->g->nodes[nx], "Clip")) {
        *act = nx;
        nx = qdq_sole_consumer(s, (uint32_t)nx);
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
                int32_t p = qdq_producer(s, n->inputs[k]);
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
            int32_t p = qdq_producer(s, n->inputs[k]);
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
        int32_t p = qdq_producer(s, s->g->nodes[i].inputs[0]);
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
                uf_unite(par, (int32_t)i, qdq_producer(s, n->inputs[k]));
        } else if (q->n[i].cand && q->n[i].reg == -2) {
            uf_unite(par, (int32_t)i, qdq_producer(s, n->inputs[0]));
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
                int32_t p = qdq_producer(s, n->inputs[k]);
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

/* What a replay makes of each source: requantised to the sink
 * (RM_QUANT), kept when of parameter set `set` and its zero point
 * elsewhere (RM_SET), or the index of its parameter set in int32 (RM_MAP:
 * which set each element of a region value comes from). */
typedef enum { RM_QUANT, RM_SET, RM_MAP } rg_mode;

typedef struct rg_replay {
    lower_ctx *c;
    rg_mode mode;
    const qx_out *o;
    uint32_t set;
    ctosa_dtype t; /* the carrier of the replay */
    uint32_t n_src;
    uint32_t src_node[RG_SRC_MAX];
    qx_in src[RG_SRC_MAX]; /* parameters; the carrier x made on first use */
    bool u8[RG_SRC_MAX];
    uint32_t src_set[RG_SRC_MAX]; /* parameter set of each source */
    uint32_t n_set, set_src[RG_SRC_MAX];
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

/* Collects the source DequantizeLinears (and their parameter sets) region
 * value `name` depends on. */
static bool collect_sources(rg_replay *r, const char *name, uint32_t depth) {
    lower_ctx *c = r->c;
    lower_session *s = c->s;
    int32_t p = qdq_producer(s, name);
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
        uint32_t i = r->n_src;
        if (!qdq_dq_params(c, (uint32_t)p, &r->src[i], &r->u8[i])) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL,
                    "quantized region: source '%s' is not a per-tensor int8 / uint8 / int16 value", name);
            return false;
        }
        r->src_node[i] = (uint32_t)p;
        const qx_in *a = &r->src[i];
        uint32_t k = 0;
        while (k < r->n_set) {
            const qx_in *b = &r->src[r->set_src[k]];
            if (a->s == b->s && a->zp == b->zp && a->t == b->t && r->u8[i] == r->u8[r->set_src[k]]) break;
            k++;
        }
        if (k == r->n_set) r->set_src[r->n_set++] = i;
        r->src_set[i] = k;
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
    uint32_t nd = data_inputs(n);
    const char **xs = arena_alloc(lw_arena(c), (nd + 1) * sizeof *xs);
    if (!xs) {
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
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
    lower_status st = ok ? ent->fn(&sub) : LOWER_REJECT;
    strmap_free(&tm);
    if (!ok) {
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
        return false;
    }
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

/* Source i as the replay takes it. */
static const char *replay_source(rg_replay *r, uint32_t i) {
    lower_ctx *c = r->c;
    qx_in *a = &r->src[i];
    if (r->mode == RM_MAP) {
        uint64_t n = lw_count(a->rank, a->shape);
        int32_t *v = arena_alloc(lw_arena(c), (size_t)n * sizeof *v + 8);
        if (!v) return NULL;
        for (uint64_t k = 0; k < n; k++) v[k] = (int32_t)r->src_set[i];
        return lw_const_i32(c, a->rank, a->shape, v);
    }
    if (r->mode == RM_SET && r->src_set[i] != r->set) {
        /* another parameter set: its elements at this set's zero point */
        int64_t one[LOWER_MAX_RANK];
        for (uint32_t k = 0; k < a->rank; k++) one[k] = 1;
        double z = (double)r->src[r->set_src[r->set]].zp;
        return lw_tile(c, lw_const_from_f64(c, r->t, a->rank, one, &z), r->t, a->rank, one, a->shape);
    }
    if (!a->x && !source_operand(c, r->src_node[i], a)) return NULL;
    return r->mode == RM_QUANT ? qdq_requant(c, a, r->o, a->rank, a->shape) : a->x;
}

/* Region value `name` on the replay's carriers. */
static const char *replay_value(rg_replay *r, const char *name) {
    const char *have = memo_get(r, name);
    if (have) return have;
    lower_ctx *c = r->c;
    lower_session *s = c->s;
    int32_t p = qdq_producer(s, name);
    if (p < 0) return NULL;
    if (++r->depth > RG_DEPTH_MAX) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized region too deep");
        return NULL;
    }
    const char *y = NULL;
    if (s->qdq->n[p].role == QR_DQ) {
        uint32_t i = 0;
        while (i < r->n_src && r->src_node[i] != (uint32_t)p) i++;
        if (i == r->n_src)
            lw_fail(c, LOWER_INTERNAL, NULL, "quantized region: source of '%s' not collected", name);
        else y = replay_source(r, i);
        if (y && !memo_put(r, name, y)) y = NULL;
    } else if (replay_node(r, (uint32_t)p)) {
        y = memo_get(r, name);
    }
    r->depth--;
    return y;
}

/* The replay's memo holds carriers of one kind: restart it. */
static void replay_mode(rg_replay *r, rg_mode mode, const qx_out *o, uint32_t set, ctosa_dtype t) {
    r->n_memo = 0;
    r->depth = 0;
    r->mode = mode;
    r->o = o;
    r->set = set;
    r->t = t;
}

/* The parameter set each channel (axis 1) of region value `name` (rank,
 * shape) comes from: the region replayed on int32 constants holding each
 * source's set index, run on the interpreter now. False when some channel
 * mixes sets (or the analysis cannot run: the sink replays instead). */
static bool channel_sets(lower_ctx *c, const rg_replay *r, const char *name, uint32_t rank,
                         const int64_t *shape, uint32_t *cset) {
    uint64_t total = lw_count(rank, shape);
    if (rank < 2 || total == 0 || total > ((uint64_t)1 << 22)) return false;
    ctosa_graph *g = NULL;
    ctosa_region *rgn;
    ctosa_block *b = NULL;
    ctosa_interp *it = NULL;
    ctosa_error *e = ctosa_graph_create(c->spec->version, &g);
    if (!e) e = ctosa_graph_add_region(g, "main", &rgn);
    if (!e) e = ctosa_region_add_block(g, rgn, "main", &b);
    strmap tm;
    strmap_init(&tm);
    uint32_t counter = 0;
    lower_ctx sc = *c;
    sc.g = g;
    sc.b = b;
    sc.tmap = &tm;
    sc.reserved = NULL;
    sc.counter = &counter;
    sc.rejected = false;
    rg_replay *rr = arena_alloc(lw_arena(c), sizeof *rr);
    bool ok = !e && rr;
    const char *y = NULL;
    if (ok) {
        *rr = *r;
        rr->c = &sc;
        rr->memo_k = rr->memo_v = NULL;
        rr->cap_memo = 0;
        replay_mode(rr, RM_MAP, NULL, 0, CTOSA_DTYPE_INT32);
        y = replay_value(rr, name);
        ok = y && !sc.rejected;
    }
    if (ok) e = ctosa_block_add_output(g, b, y);
    if (ok && !e) e = ctosa_validate(g, &c->s->fold_spec, NULL);
    ctosa_interp_options io;
    ctosa_interp_options_init(&io);
    io.threads = 1;
    if (ok && !e) e = ctosa_interp_create(g, &io, &it);
    if (ok && !e) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (ok && !e) e = ctosa_interp_get_output(it, y, &t);
    ok = ok && !e && t.dtype == CTOSA_DTYPE_INT32 && t.count == total;
    if (ok) {
        uint64_t inner = total / (uint64_t)(shape[0] * shape[1]);
        for (int64_t k = 0; k < shape[1]; k++) cset[k] = UINT32_MAX;
        const int32_t *v = t.data;
        for (uint64_t k = 0; ok && k < total; k++) {
            uint64_t ch = (k / inner) % (uint64_t)shape[1];
            if (cset[ch] == UINT32_MAX) cset[ch] = (uint32_t)v[k];
            ok = cset[ch] == (uint32_t)v[k] && cset[ch] < r->n_set;
        }
    }
    ctosa_error_free(e);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    strmap_free(&tm);
    return ok;
}

/* The sum of n int32 accumulators of a convolution (acc_g from `conv`,
 * each times fac[g] and 2^k), with the bias, requantised per output
 * channel to o; the unit of output channel m is in_s[m] * s_w[m]. The k
 * fraction bits keep the rounding of each share and of the float bias far
 * below the float32 rounding of the float convolution it stands for
 * (whole units moved about 0.2% of shufflenet's float-Conv outputs by one
 * step). Over all accumulators together each product term counts once,
 * with |x - z| <= xmax. */
typedef const char *(*rg_acc_fn)(lower_ctx *c, void *arg, uint32_t g);
static lower_status conv_sum(lower_ctx *c, uint32_t n, const double *fac, const double *in_s, double xmax,
                             const int64_t *wsh, uint32_t wrank, const qx_w *w, const double *bias,
                             const qx_out *o, rg_acc_fn conv, void *arg) {
    int64_t M = wsh[0], kvol = 1;
    for (uint32_t i = 2; i < wrank; i++) kvol *= wsh[i];
    double bmax = 0;
    double *bu = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    if (!bu) return lw_failed(c);
    for (int64_t m = 0; m < M; m++) {
        bu[m] = bias ? bias[m] / (in_s[m] * w->scale[w->n > 1 ? m : 0]) : 0;
        bmax = fmax(bmax, fabs(bu[m]));
    }
    /* the largest |sum of (x - z) (w - z_w)| of an output channel */
    double amax = 0;
    for (int64_t m = 0; m < M; m++) {
        double a = 0;
        for (int64_t i = 0; i < wsh[1] * kvol; i++)
            a += fabs((double)w->data[m * wsh[1] * kvol + i] - (double)w->zp);
        amax = fmax(amax, a * xmax);
    }
    /* RESCALE by up to 2^k has shift 30 - k and REQUIREs |acc| < 2^(29 - k) */
    int k = 0;
    while (k < 20 && (amax + bmax + 1) * ldexp(1.0, k + 3) < 2147483647.0) k++;
    const char *sum = NULL;
    const ctosa_tensor *at = NULL;
    int64_t fs[LOWER_MAX_RANK];
    for (uint32_t g = 0; g < n; g++) {
        const char *acc = conv(c, arg, g);
        at = acc ? lw_tensor_info(c, acc) : NULL;
        if (!at || at->rank > LOWER_MAX_RANK) return c->rejected ? LOWER_REJECT : lw_failed(c);
        for (uint32_t i = 0; i < at->rank; i++) fs[i] = at->shape[i];
        double f = ldexp(fac[g], k);
        if (f != 1.0)
            acc = qdq_rescale(c, acc, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT32, at->rank, fs, f, 0, 0, false,
                              false);
        sum = sum ? lw_add(c, sum, acc, CTOSA_DTYPE_INT32, at->rank, fs) : acc;
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
        ratio[m] = ldexp(qdq_acc_ratio(in_s[m], w->scale[w->n > 1 ? m : 0], o->s), -k);
    }
    int64_t bs[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) bs[i] = i == 1 ? M : 1;
    if (bias) sum = lw_add(c, sum, lw_const_i32(c, rank, bs, bq), CTOSA_DTYPE_INT32, rank, fs);
    /* per output channel: the channels last for RESCALE */
    int64_t ls[LOWER_MAX_RANK];
    lw_shape_last(rank, fs, ls);
    const char *y = lw_to_last(c, sum, CTOSA_DTYPE_INT32, rank, fs);
    y = qdq_rescale_n(c, y, CTOSA_DTYPE_INT32, o->t, rank, ls, M, ratio, 0, o->zp, false, false);
    y = lw_to_first(c, y, o->t, rank, ls);
    LW_TRY(y);
    return qdq_finish(c, y, o, rank, fs);
}

typedef struct rg_conv {
    rg_replay *r;
    const lower_value *X;
    const int64_t *wsh;
    const qwt *wt;
    const qx_in *raw;     /* the raw carrier, signed (channel sets known) */
    const uint32_t *cset; /* parameter set of each input channel */
    int64_t group;
} rg_conv;

/* The int32 accumulator of one integer convolution of `a` (output 0). */
static const char *conv_acc(lower_ctx *c, const qx_in *a, const int64_t *wsh, const qwt *wt) {
    if (qdq_conv_core(c, a, wsh, wt, NULL, true, NULL) != LOWER_OK || c->rejected) return NULL;
    return c->out_names[0];
}

/* The accumulator of the raw carrier (one parameter set, or depthwise:
 * each channel in the unit of its own set). */
static const char *acc_raw(lower_ctx *c, void *arg, uint32_t g) {
    (void)g;
    rg_conv *v = arg;
    return conv_acc(c, v->raw, v->wsh, v->wt);
}

/* Set g's accumulator: the region replayed with the other sets' elements
 * at g's zero point. */
static const char *acc_replayed(lower_ctx *c, void *arg, uint32_t g) {
    rg_conv *v = arg;
    qx_in a = v->r->src[v->r->set_src[g]];
    a.rank = v->X->rank;
    memcpy(a.shape, v->X->shape, sizeof a.shape);
    replay_mode(v->r, RM_SET, NULL, g, a.t);
    a.x = replay_value(v->r, lw_node(c)->inputs[0]);
    return a.x ? conv_acc(c, &a, v->wsh, v->wt) : NULL;
}

/* Set g's accumulator: the raw carrier with the weights of the other
 * sets' input channels at the weight zero point. */
static const char *acc_masked(lower_ctx *c, void *arg, uint32_t g) {
    rg_conv *v = arg;
    int64_t M = v->wsh[0], Cg = v->wsh[1], kvol = 1;
    for (uint32_t i = 2; i < v->X->rank; i++) kvol *= v->wsh[i];
    uint8_t *buf = arena_alloc(lw_arena(c), (size_t)(M * Cg * kvol) + 8);
    if (!buf) return NULL;
    int64_t mg = M / v->group;
    for (int64_t m = 0; m < M; m++)
        for (int64_t i = 0; i < Cg; i++) {
            bool keep = v->cset[(m / mg) * Cg + i] == g;
            for (int64_t k = 0; k < kvol; k++) {
                int64_t e = (m * Cg + i) * kvol + k;
                buf[e] = keep ? v->wt->data[e] : (uint8_t)(int8_t)v->wt->zp;
            }
        }
    qwt wg = *v->wt;
    wg.data = buf;
    return conv_acc(c, v->raw, v->wsh, &wg);
}

/* A Conv sink. Channel sets known (cset): a depthwise convolution is one
 * DEPTHWISE_CONV2D of the raw carrier with each channel's source scale in
 * its weight scale; others one convolution per set with the other sets'
 * weights masked. Otherwise one convolution per set of the replayed
 * region. */
static lower_status region_conv(lower_ctx *c, rg_replay *r, const lower_value *X, const qx_in *raw,
                                const uint32_t *cset) {
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
    int64_t M = W->shape[0], C = X->shape[1], group = lw_attr_int(c, "group", 1);
    if (group < 1 || W->shape[1] * group != C || M % group)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: group %lld does not match the channels", (long long)group);
    bool bbad;
    const double *bias = qdq_bias(c, 2, M, &bbad);
    if (bbad) return LOWER_REJECT;
    qwt wt = {(const uint8_t *)w.data, false, w.zp, w.n, w.scale};
    rg_conv v = {r, X, W->shape, &wt, raw, cset, group};
    double *in_s = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    double fac[RG_SRC_MAX];
    if (!in_s) return lw_failed(c);
    /* the largest scale is the unit */
    double s0 = 0;
    for (uint32_t g = 0; g < r->n_set; g++) s0 = fmax(s0, r->src[r->set_src[g]].s);
    for (uint32_t g = 0; g < r->n_set; g++) fac[g] = r->src[r->set_src[g]].s / s0;
    for (int64_t m = 0; m < M; m++) in_s[m] = s0;
    /* |x - z| over the sets (replayed: the other sets' elements are z) */
    double xmax = 0;
    for (uint32_t g = 0; g < r->n_set; g++) {
        const qx_in *a = &r->src[r->set_src[g]];
        double lo = a->t == CTOSA_DTYPE_INT16 ? -32768 : -128, hi = a->t == CTOSA_DTYPE_INT16 ? 32767 : 127;
        xmax = fmax(xmax, fmax(fabs(lo - (double)a->zp), fabs(hi - (double)a->zp)));
    }
    if (raw && (r->n_set == 1 || (group == C && M == C))) {
        /* one set, or depthwise: output channel m reads input channel m
         * only, in the unit of its own set */
        for (int64_t m = 0; raw && r->n_set > 1 && m < M; m++) in_s[m] = r->src[r->set_src[cset[m]]].s;
        fac[0] = 1.0;
        return conv_sum(c, 1, fac, in_s, xmax, W->shape, W->rank, &w, bias, &o, acc_raw, &v);
    }
    return conv_sum(c, r->n_set, fac, in_s, xmax, W->shape, W->rank, &w, bias, &o,
                    raw ? acc_masked : acc_replayed, &v);
}

/* A QuantizeLinear sink whose input channels come from known parameter
 * sets: the raw carrier requantised per channel (ties to even where they
 * can occur). */
static lower_status region_quant_sets(lower_ctx *c, const rg_replay *r, const qx_in *raw,
                                      const uint32_t *cset, const qx_out *o) {
    uint32_t rank = raw->rank;
    int64_t C = raw->shape[1], ls[LOWER_MAX_RANK];
    double *ratio = arena_alloc(lw_arena(c), (size_t)C * sizeof(double) + 8);
    if (!ratio) return lw_failed(c);
    for (int64_t k = 0; k < C; k++) ratio[k] = r->src[r->set_src[cset[k]]].s / o->s;
    lw_shape_last(rank, raw->shape, ls);
    const char *x = lw_to_last(c, raw->x, raw->t, rank, raw->shape);
    x = qdq_rescale(c, x, raw->t, CTOSA_DTYPE_INT32, rank, ls, 1.0, raw->zp, 0, false, false);
    int64_t lo = (raw->t == CTOSA_DTYPE_INT16 ? -32768 : -128) - raw->zp;
    int64_t hi = (raw->t == CTOSA_DTYPE_INT16 ? 32767 : 127) - raw->zp, base = 0, step = 1;
    qdq_acc_set A = {1, &lo, &hi, &base, &step};
    x = qdq_rescale_acc(c, x, CTOSA_DTYPE_INT32, o->t, rank, ls, C, ratio, o->zp, &A);
    x = lw_to_first(c, x, o->t, rank, ls);
    LW_TRY(x);
    return qdq_finish(c, x, o, rank, raw->shape);
}

lower_status qdq_region_head(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_value *X = lw_in(c, 0);
    if (!X) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input is not available", n->op_type);
    rg_replay *r = arena_alloc(lw_arena(c), sizeof *r);
    if (!r) return lw_failed(c);
    memset(r, 0, sizeof *r);
    r->c = c;
    if (!collect_sources(r, n->inputs[0], 0)) return LOWER_REJECT;
    /* One zero point and carrier for all sources, and the channels of the
     * sink's input each from one parameter set (the sets differ in scale
     * only): the raw carrier the region operators computed serves, with
     * per-channel scales. */
    bool uniform = true;
    const qx_in *f = &r->src[0];
    for (uint32_t i = 1; i < r->n_src; i++)
        uniform &= r->src[i].zp == f->zp && r->src[i].t == f->t && r->u8[i] == r->u8[0];
    uint32_t *cset = NULL;
    if (uniform && r->n_set > 1) {
        cset = arena_alloc(lw_arena(c), (size_t)(X->rank >= 2 ? X->shape[1] : 1) * sizeof *cset + 8);
        if (!cset || !channel_sets(c, r, n->inputs[0], X->rank, X->shape, cset)) cset = NULL;
    }
    qx_in raw = *f, *rawp = NULL;
    if (uniform && (r->n_set == 1 || cset)) {
        raw.rank = X->rank;
        memcpy(raw.shape, X->shape, sizeof raw.shape);
        raw.x = lw_input(c, 0);
        if (r->u8[0])
            raw.x = qdq_rescale(c, raw.x, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, raw.rank, raw.shape, 1.0,
                                raw.zp + 128, raw.zp, true, false);
        LW_TRY(raw.x);
        rawp = &raw;
    }
    if (qdq_is_op(n, "Conv")) return region_conv(c, r, X, rawp, cset);
    qx_out o;
    if (!qdq_out(c, X->rank, &o)) return LOWER_REJECT;
    if (rawp && cset) return region_quant_sets(c, r, rawp, cset, &o);
    const char *y;
    if (rawp) {
        y = qdq_requant(c, rawp, &o, X->rank, X->shape);
    } else {
        replay_mode(r, RM_QUANT, &o, 0, o.t);
        y = replay_value(r, n->inputs[0]);
    }
    LW_TRY(y);
    return qdq_finish(c, y, &o, X->rank, X->shape);
}
