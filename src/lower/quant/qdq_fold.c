/* qdq_fold.c - QDQ folding pre-pass and the framework hooks.
 *
 * ONNX quantizers (and torch's exporter) write quantized networks as float
 * operators wrapped in DequantizeLinear (inputs) and QuantizeLinear
 * (output). Integer TOSA computes such a group directly on the integers:
 * the pre-pass finds the groups structurally (op types and edges; the
 * constants are only known while deciding), the group's head lowers to
 * integer TOSA, and its DequantizeLinear inputs, fused Relu/Clip and
 * QuantizeLinear become aliases of integer tensors.
 *
 * Because aliased values are integers standing in for floats, a group is
 * all-or-nothing: qdq_post_decide() sends every member of a group (and of
 * the groups sharing its DequantizeLinear inputs) to the CPU when one of
 * them fell back, so the CPU always sees true ONNX values. */
#include <string.h>

#include "lower/quant/lower_qdq.h"
#include "lower/quant/qdq_island.h"

bool qdq_is_op(const ctosa_onnx_node *n, const char *op) {
    bool def = !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
    return def && strcmp(n->op_type, op) == 0;
}

/* Inputs of a head that must come from DequantizeLinear (the first
 * *count); false when n cannot head a group (no row in the head table, or
 * attributes its head rejects). */
static bool head_inputs(const ctosa_onnx_node *n, uint32_t *count) {
    const qdq_head *h = qdq_head_of(n, QDQ_WANY);
    if (!h || (h->groupable && !h->groupable(n))) return false;
    *count = h->n_data ? h->n_data : n->n_inputs;
    return true;
}

static bool can_fuse_act(const ctosa_onnx_node *h) {
    const qdq_head *row = qdq_head_of(h, QDQ_WANY);
    return row && row->fuse_act;
}

int32_t qdq_producer(lower_session *s, const char *name) {
    lw_val *v = name && name[0] ? lw_lookup(s, name) : NULL;
    return v ? v->producer : -1;
}

int32_t qdq_sole_consumer(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    if (n->n_outputs < 1) return -1;
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k][0]) return -1;
    lw_val *v = lw_lookup(s, n->outputs[0]);
    if (!v || v->graph_output || v->n_consumers != 1) return -1;
    return (int32_t)v->consumers[0];
}

ctosa_error *qdq_prepass(lower_session *s) {
    uint32_t nn = s->n_nodes;
    struct qdq_state *q = arena_zalloc(&s->a, sizeof *q);
    if (!q) return ctosa_error_nomem();
    q->n = arena_zalloc(&s->a, (nn + 1) * sizeof *q->n);
    if (!q->n) return ctosa_error_nomem();
    q->count = nn;
    s->qdq = q;
    /* uint8 graph inputs are carried as INT8 bits */
    for (uint32_t i = 0; i < s->g->n_inputs; i++) {
        lw_val *v = lw_lookup(s, s->g->inputs[i].name);
        if (v && v->known && v->v.onnx_dtype == CTOSA_ONNX_UINT8 && !v->v.data) v->v.t = CTOSA_DTYPE_INT8;
    }
    for (uint32_t i = 0; i < nn; i++) {
        q->n[i].act = q->n[i].q = q->n[i].head = q->n[i].chain_dq = q->n[i].reg = -1;
        const ctosa_onnx_node *n = &s->g->nodes[i];
        uint32_t count = 0;
        if (qdq_is_op(n, "QuantizeLinear")) {
            /* DequantizeLinear straight into QuantizeLinear (torch writes
             * one where a quantized tensor is requantized, or re-observed
             * with the same parameters): the QuantizeLinear heads its own
             * group, one RESCALE or nothing */
            int32_t p = n->n_inputs >= 1 ? qdq_producer(s, n->inputs[0]) : -1;
            if (p >= 0 && qdq_is_op(&s->g->nodes[p], "DequantizeLinear")) {
                q->n[i].cand = true;
                q->n[i].q = (int32_t)i;
                continue;
            }
            /* or after a chain of data-movement operators of one
             * DequantizeLinear's output (two or more: one forms the
             * operator's own group below), each read only by the next */
            uint32_t ch[QDQ_CHAIN_MAX], k = 0;
            int32_t next = (int32_t)i;
            while (p >= 0 && k < QDQ_CHAIN_MAX && qdq_moves_data(&s->g->nodes[p]) &&
                   qdq_sole_consumer(s, (uint32_t)p) == next && s->g->nodes[p].n_inputs >= 1) {
                ch[k++] = (uint32_t)p;
                next = p;
                p = qdq_producer(s, s->g->nodes[p].inputs[0]);
            }
            if (k >= 2 && p >= 0 && qdq_is_op(&s->g->nodes[p], "DequantizeLinear")) {
                q->n[i].chain = arena_alloc(&s->a, k * sizeof *q->n[i].chain);
                if (!q->n[i].chain) return ctosa_error_nomem();
                for (uint32_t j = 0; j < k; j++) q->n[i].chain[j] = ch[k - 1 - j];
                q->n[i].n_chain = k;
                q->n[i].chain_dq = p;
                q->n[i].cand = true;
                q->n[i].q = (int32_t)i;
            }
            continue;
        }
        if (!head_inputs(n, &count)) continue;
        bool ok = count > 0 && n->n_inputs >= count;
        for (uint32_t k = 0; ok && k < count; k++) {
            int32_t p = qdq_producer(s, n->inputs[k]);
            ok = p >= 0 && qdq_is_op(&s->g->nodes[p], "DequantizeLinear");
        }
        if (!ok) continue;
        int32_t nx = qdq_sole_consumer(s, i);
        if (nx < 0) continue;
        int32_t act = -1;
        const ctosa_onnx_node *cn = &s->g->nodes[nx];
        if (can_fuse_act(n) && (qdq_is_op(cn, "Relu") || qdq_is_op(cn, "Clip"))) {
            act = nx;
            nx = qdq_sole_consumer(s, (uint32_t)nx);
            if (nx < 0) continue;
            cn = &s->g->nodes[nx];
        }
        if (!qdq_is_op(cn, "QuantizeLinear")) continue;
        q->n[i].cand = true;
        q->n[i].act = act;
        q->n[i].q = nx;
    }
    /* Float islands of one quantized input (qdq_island.h): elementwise
     * float operators between the DequantizeLinear(s) of one integer tensor
     * and a QuantizeLinear, whose other operands are constants. */
    for (uint32_t i = 0; i < nn; i++) {
        if (q->n[i].cand || !qdq_island_op(&s->g->nodes[i])) continue;
        int32_t nx = qdq_sole_consumer(s, i);
        if (nx < 0 || !qdq_is_op(&s->g->nodes[nx], "QuantizeLinear")) continue;
        qdq_island *isl = arena_alloc(&s->a, sizeof *isl);
        if (!isl) return ctosa_error_nomem();
        if (!qdq_island_collect(s, &s->a, i, true, isl, NULL)) continue;
        /* a lone operator that is a head kind of its own forms its group above */
        if (isl->n == 1 && head_inputs(&s->g->nodes[i], &(uint32_t){0}) &&
            isl->n_dq == s->g->nodes[i].n_inputs)
            continue;
        q->n[i].cand = true;
        q->n[i].q = nx;
        q->n[i].isl = isl;
    }
    /* data-movement regions of several sources and sinks (qdq_region.c) */
    return qdq_region_prepass(s);
}

/* Whether node u is an operator of a candidate island other than its
 * head, or the first operator of a candidate movement chain. */
static bool island_member(struct qdq_state *q, uint32_t u) {
    for (uint32_t i = 0; i < q->count; i++) {
        if (!q->n[i].cand) continue;
        if (q->n[i].isl && q->n[i].isl->nodes[q->n[i].isl->n - 1].node != u && qdq_island_has(q->n[i].isl, u))
            return true;
        if (q->n[i].n_chain && q->n[i].chain[0] == u) return true;
    }
    return false;
}

/* Whether node u may read a DequantizeLinear that folds: a group head, an
 * island or chain member, a region operator. */
static bool consumer_ok(lower_session *s, uint32_t u) {
    struct qdq_state *q = s->qdq;
    return q->n[u].cand || q->n[u].rnode || island_member(q, u);
}

/* Resolves the candidates into groups (once, on the first qdq_entry():
 * the custom-operator registry is only attached after the session is
 * open, and a registered custom op replaces a built-in lowering, so it
 * cannot be a group member). */
static void resolve(lower_session *s) {
    struct qdq_state *q = s->qdq;
    uint32_t nn = q->count;
    q->resolved = true;
    for (uint32_t i = 0; i < nn; i++) {
        if (!q->n[i].cand) continue;
        bool custom = lw_custom_find(s, i) ||
                      (q->n[i].act >= 0 && lw_custom_find(s, (uint32_t)q->n[i].act)) ||
                      lw_custom_find(s, (uint32_t)q->n[i].q);
        const ctosa_onnx_node *n = &s->g->nodes[i];
        uint32_t count = 0;
        if (q->n[i].isl) {
            const qdq_island *isl = q->n[i].isl;
            for (uint32_t k = 0; !custom && k < isl->n; k++)
                custom = lw_custom_find(s, isl->nodes[k].node) != NULL;
            for (uint32_t k = 0; !custom && k < isl->n_dq; k++)
                custom = lw_custom_find(s, isl->dq[k]) != NULL;
        } else if (q->n[i].n_chain) {
            for (uint32_t k = 0; !custom && k < q->n[i].n_chain; k++)
                custom = lw_custom_find(s, q->n[i].chain[k]) != NULL;
            custom = custom || lw_custom_find(s, (uint32_t)q->n[i].chain_dq) != NULL;
        } else {
            head_inputs(n, &count);
            for (uint32_t k = 0; !custom && k < count; k++)
                custom = lw_custom_find(s, (uint32_t)qdq_producer(s, n->inputs[k])) != NULL;
        }
        if (custom) q->n[i].cand = false;
    }
    /* A DequantizeLinear folds when every consumer is a head candidate; a
     * candidate stays one when every data input's DequantizeLinear folds. */
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 0; i < nn; i++) {
            if (!q->n[i].cand) continue;
            const ctosa_onnx_node *n = &s->g->nodes[i];
            uint32_t count = 0;
            bool ok = true;
            if (q->n[i].isl) {
                const qdq_island *isl = q->n[i].isl;
                for (uint32_t k = 0; ok && k < isl->n_dq; k++) {
                    lw_val *dv = lw_lookup(s, s->g->nodes[isl->dq[k]].outputs[0]);
                    if (!dv || dv->graph_output) ok = false;
                    for (uint32_t u = 0; ok && u < dv->n_consumers; u++)
                        ok = qdq_island_has(isl, dv->consumers[u]) || consumer_ok(s, dv->consumers[u]);
                }
            } else if (q->n[i].reg == -2) {
                continue; /* a region sink: qdq_region_check */
            } else if (q->n[i].n_chain) {
                lw_val *dv = lw_lookup(s, s->g->nodes[q->n[i].chain_dq].outputs[0]);
                if (!dv || dv->graph_output) ok = false;
                for (uint32_t u = 0; ok && u < dv->n_consumers; u++) ok = consumer_ok(s, dv->consumers[u]);
            } else {
                head_inputs(n, &count);
                for (uint32_t k = 0; ok && k < count; k++) {
                    int32_t p = qdq_producer(s, n->inputs[k]);
                    lw_val *dv = lw_lookup(s, s->g->nodes[p].outputs[0]);
                    if (!dv || dv->graph_output) ok = false;
                    for (uint32_t u = 0; ok && u < dv->n_consumers; u++)
                        ok = consumer_ok(s, dv->consumers[u]);
                }
            }
            /* the head must not also be an act/Q of another group */
            if (!ok) {
                q->n[i].cand = false;
                changed = true;
            }
        }
        changed |= qdq_region_check(s, consumer_ok);
    }
    qdq_region_number(s);
    for (uint32_t i = 0; i < nn; i++) {
        if (!q->n[i].cand) continue;
        const ctosa_onnx_node *n = &s->g->nodes[i];
        q->n[i].role = QR_HEAD;
        uint32_t count = 0;
        if (q->n[i].isl) {
            const qdq_island *isl = q->n[i].isl;
            for (uint32_t k = 0; k < isl->n_dq; k++) q->n[isl->dq[k]].role = QR_DQ;
            for (uint32_t k = 0; k + 1 < isl->n; k++) {
                q->n[isl->nodes[k].node].role = QR_ISLAND;
                q->n[isl->nodes[k].node].head = (int32_t)i;
            }
        } else if (q->n[i].reg >= 0) {
            /* a region sink: qdq_region_number marked its sources */
        } else if (q->n[i].n_chain) {
            q->n[q->n[i].chain_dq].role = QR_DQ;
            for (uint32_t k = 0; k < q->n[i].n_chain; k++) {
                q->n[q->n[i].chain[k]].role = QR_MOVE;
                q->n[q->n[i].chain[k]].head = (int32_t)i;
            }
        } else {
            head_inputs(n, &count);
            for (uint32_t k = 0; k < count; k++) q->n[qdq_producer(s, n->inputs[k])].role = QR_DQ;
        }
        if (q->n[i].act >= 0) {
            q->n[q->n[i].act].role = QR_ACT;
            q->n[q->n[i].act].head = (int32_t)i;
        }
        if (q->n[i].q == (int32_t)i) continue; /* a QuantizeLinear heading its own group */
        q->n[q->n[i].q].role = QR_Q;
        q->n[q->n[i].q].head = (int32_t)i;
    }
}

static const lower_entry e_alias = {"(alias)", 1, 0, qdq_lower_alias};
static const lower_entry e_island = {"(island operator)", 1, 0, qdq_lower_island_member};
static const lower_entry e_move = {"(quantized data movement)", 1, 0, qdq_lower_move};
static const lower_entry e_cast = {"Cast", 1, 0, qdq_lower_cast};
static const lower_entry e_head = {"(qdq head)", 1, 0, qdq_lower_head};
static const lower_entry e_u8 = {"(uint8)", 1, 0, qdq_lower_u8_reject};
/* Operators whose lowering is quantization-aware wherever they stand. */
static const lower_entry quant_ops[] = {
    {"QuantizeLinear", 1, 0, qdq_lower_quantize},  {"DequantizeLinear", 1, 0, qdq_lower_dequantize},
    {"QLinearConv", 10, 0, qdq_lower_qlinearconv}, {"QLinearMatMul", 10, 0, qdq_lower_qlinearmatmul},
    {"ConvInteger", 10, 0, qdq_lower_convinteger}, {"MatMulInteger", 10, 0, qdq_lower_matmulinteger},
};

const lower_entry *qdq_entry(lower_session *s, uint32_t ni) {
    if (!s->qdq || ni >= s->qdq->count) return NULL;
    if (!s->qdq->resolved) resolve(s);
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    const qdq_node *qn = &s->qdq->n[ni];
    if (qn->role == QR_HEAD) return &e_head;
    if (qn->role == QR_ACT || qn->role == QR_Q) return &e_alias;
    if (qn->role == QR_ISLAND) return &e_island;
    if (qn->role == QR_MOVE || qn->role == QR_REGION) return &e_move;
    for (size_t i = 0; i < sizeof quant_ops / sizeof *quant_ops; i++)
        if (qdq_is_op(n, quant_ops[i].op_type)) return &quant_ops[i];
    /* uint8 runtime values are INT8 bits: only quantization-aware
     * lowerings may read them */
    bool u8 = false;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (v && v->known && !v->v.data && v->v.onnx_dtype == CTOSA_ONNX_UINT8 && v->v.t == CTOSA_DTYPE_INT8)
            u8 = true;
    }
    if (qdq_is_op(n, "Cast") && n->n_inputs >= 1) {
        lw_val *v = lw_lookup(s, n->inputs[0]);
        const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, "to");
        if (v && v->known && a && a->i == v->v.onnx_dtype &&
            (v->v.quantized || v->v.onnx_dtype == CTOSA_ONNX_UINT8 || v->v.onnx_dtype == CTOSA_ONNX_INT8))
            return &e_cast;
    }
    if (u8 && qdq_is_op(n, "Identity")) return &e_cast;
    if (u8) return &e_u8;
    return NULL;
}

/* Output 0 of a QuantizeLinear / no-op Cast / Identity: integer type,
 * carrier, and (per-tensor) scale and zero point. */
void qdq_note_outputs(lower_session *s, uint32_t ni) {
    if (!s->qdq) return;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    if (n->n_outputs < 1 || !n->outputs[0][0] || n->n_inputs < 1) return;
    lw_val *out = lw_lookup(s, n->outputs[0]);
    lw_val *x = lw_lookup(s, n->inputs[0]);
    if (!out || !x) return;
    if (qdq_is_op(n, "QuantizeLinear")) {
        int32_t od = CTOSA_ONNX_UINT8;
        lw_val *zp = n->n_inputs > 2 ? lw_lookup(s, n->inputs[2]) : NULL;
        lw_val *sc = n->n_inputs > 1 ? lw_lookup(s, n->inputs[1]) : NULL;
        if (zp && zp->known) od = zp->v.onnx_dtype;
        if (od != CTOSA_ONNX_UINT8 && od != CTOSA_ONNX_INT8 && od != CTOSA_ONNX_INT16) return;
        if (!out->known && x->known) {
            out->v.rank = x->v.rank;
            memcpy(out->v.shape, x->v.shape, sizeof out->v.shape);
            out->v.static_shape = x->v.static_shape;
            out->known = true;
        }
        out->v.onnx_dtype = od;
        if (!out->v.data) out->v.t = od == CTOSA_ONNX_INT16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8;
        if (sc && sc->v.data && qdq_val_count(sc) == 1 && (!zp || (zp->v.data && qdq_val_count(zp) == 1))) {
            out->v.quantized = true;
            out->v.scale = qdq_val_f64(sc, 0);
            out->v.zero_point = zp ? (int64_t)qdq_val_f64(zp, 0) : 0;
        }
        return;
    }
    if ((qdq_is_op(n, "Cast") || qdq_is_op(n, "Identity")) && x->known &&
        (x->v.quantized || x->v.onnx_dtype == CTOSA_ONNX_UINT8)) {
        const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, "to");
        if (a && a->i != x->v.onnx_dtype) return;
        if (!out->known) {
            out->v.rank = x->v.rank;
            memcpy(out->v.shape, x->v.shape, sizeof out->v.shape);
            out->v.static_shape = x->v.static_shape;
            out->known = true;
        }
        out->v.onnx_dtype = x->v.onnx_dtype;
        if (!out->v.data) out->v.t = x->v.t;
        out->v.quantized = x->v.quantized;
        out->v.scale = x->v.scale;
        out->v.zero_point = x->v.zero_point;
    }
}

bool qdq_dq_gives_constant(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    if (!qdq_is_op(n, "DequantizeLinear") || n->n_outputs < 1) return false;
    lw_val *o = lw_lookup(s, n->outputs[0]);
    if (!o || !o->n_consumers || o->graph_output) return false;
    for (uint32_t k = 0; k < o->n_consumers; k++)
        if (s->qdq && o->consumers[k] < s->qdq->count && s->qdq->n[o->consumers[k]].role == QR_HEAD)
            return true;
    for (uint32_t k = 0; k < o->n_consumers; k++) {
        const ctosa_onnx_node *u = &s->g->nodes[o->consumers[k]];
        if (!qdq_is_op(u, "Conv") && !qdq_is_op(u, "ConvTranspose")) return false;
        for (uint32_t i = 0; i < u->n_inputs; i++)
            if (i != 1 && strcmp(u->inputs[i], n->outputs[0]) == 0) return false;
    }
    return true;
}

/* Node ni leaves with its group because member `bad` stays on the CPU: it
 * takes bad's reason code (the group's real reason, e.g. an unsupported
 * attribute of the head, not a missing input) and names it. */
static void to_cpu(lower_session *s, uint32_t ni, uint32_t bad) {
    lw_nodeinfo *nd = &s->nodes[ni];
    if (nd->kind == LW_NODE_FALLBACK) return;
    const lw_nodeinfo *b = &s->nodes[bad];
    nd->kind = LW_NODE_FALLBACK;
    nd->code = b->code;
    nd->input = NULL;
    nd->reason = arena_printf(&s->a,
                              "quantized group: '%s' stays on the CPU (%s), so the whole "
                              "DequantizeLinear -> op -> QuantizeLinear group does",
                              b->label, b->reason ? b->reason : "no reason given");
}

/* A movement region (qdq_region.c) is all-or-nothing: when one of its
 * operators, sinks (with their activation and QuantizeLinear) or
 * runtime source DequantizeLinears stays on the CPU, all do. */
static bool regions_post_decide(lower_session *s) {
    struct qdq_state *q = s->qdq;
    if (!q->n_reg) return false;
    int32_t *bad = arena_alloc(&s->a, (size_t)q->n_reg * sizeof *bad);
    if (!bad) return false;
    for (int32_t k = 0; k < q->n_reg; k++) bad[k] = -1;
    for (uint32_t i = 0; i < q->count; i++)
        if (q->n[i].reg >= 0 && s->nodes[i].kind == LW_NODE_FALLBACK && bad[q->n[i].reg] < 0)
            bad[q->n[i].reg] = (int32_t)i;
    bool changed = false;
    for (uint32_t i = 0; i < q->count; i++) {
        int32_t k = q->n[i].reg;
        if (k < 0 || bad[k] < 0 || s->nodes[i].kind == LW_NODE_FALLBACK) continue;
        if (q->n[i].role == QR_DQ) {
            /* a DequantizeLinear of a constant stays a constant */
            lw_val *xv = lw_lookup(s, s->g->nodes[i].inputs[0]);
            if (!xv || xv->v.data || s->nodes[i].kind != LW_NODE_DELEGATED) continue;
        }
        to_cpu(s, i, (uint32_t)bad[k]);
        changed = true;
    }
    return changed;
}

void qdq_post_decide(lower_session *s) {
    struct qdq_state *q = s->qdq;
    if (!q) return;
    for (bool changed = true; changed;) {
        changed = false;
        changed |= regions_post_decide(s);
        for (uint32_t i = 0; i < q->count; i++) {
            if (q->n[i].role != QR_HEAD || q->n[i].reg >= 0) continue;
            /* members: head, fused activation, Q, island operators */
            const qdq_island *isl = q->n[i].isl;
            int32_t mem[3 + QDQ_ISLAND_MAX + QDQ_CHAIN_MAX] = {(int32_t)i, q->n[i].act, q->n[i].q};
            uint32_t nm = 3;
            for (uint32_t k = 0; isl && k + 1 < isl->n; k++) mem[nm++] = (int32_t)isl->nodes[k].node;
            for (uint32_t k = 0; k < q->n[i].n_chain; k++) mem[nm++] = (int32_t)q->n[i].chain[k];
            /* its DequantizeLinear inputs */
            int32_t dqs[QDQ_ISLAND_MAX + 8];
            uint32_t nd = 0;
            const ctosa_onnx_node *n = &s->g->nodes[i];
            if (isl) {
                for (uint32_t k = 0; k < isl->n_dq; k++) dqs[nd++] = (int32_t)isl->dq[k];
            } else if (q->n[i].n_chain) {
                dqs[nd++] = q->n[i].chain_dq;
            } else {
                for (uint32_t k = 0; k < n->n_inputs && nd < QDQ_ISLAND_MAX + 8; k++) {
                    int32_t p = qdq_producer(s, n->inputs[k]);
                    if (p >= 0 && q->n[p].role == QR_DQ) dqs[nd++] = p;
                }
            }
            int32_t bad = -1;
            for (uint32_t k = 0; k < nm; k++)
                if (mem[k] >= 0 && s->nodes[mem[k]].kind == LW_NODE_FALLBACK && bad < 0) bad = mem[k];
            /* an aliased DequantizeLinear input on the CPU breaks it too */
            for (uint32_t k = 0; k < nd && bad < 0; k++)
                if (s->nodes[dqs[k]].kind == LW_NODE_FALLBACK) bad = dqs[k];
            if (bad < 0) continue;
            for (uint32_t k = 0; k < nm; k++)
                if (mem[k] >= 0 && s->nodes[mem[k]].kind != LW_NODE_FALLBACK) {
                    to_cpu(s, (uint32_t)mem[k], (uint32_t)bad);
                    changed = true;
                }
            for (uint32_t k = 0; k < nd; k++) {
                int32_t p = dqs[k];
                if (s->nodes[p].kind == LW_NODE_DELEGATED) {
                    /* a DequantizeLinear of a runtime value was an alias */
                    lw_val *xv = lw_lookup(s, s->g->nodes[p].inputs[0]);
                    if (xv && !xv->v.data) {
                        to_cpu(s, (uint32_t)p, (uint32_t)bad);
                        changed = true;
                    }
                }
            }
        }
    }
    /* values that now cross to the CPU from an aliased group keep their
     * ONNX float type: re-declare them (the CPU computes them) */
    for (uint32_t i = 0; i < q->count; i++) {
        if (q->n[i].role == QR_NONE || s->nodes[i].kind != LW_NODE_FALLBACK) continue;
        const ctosa_onnx_node *n = &s->g->nodes[i];
        if (qdq_is_op(n, "QuantizeLinear")) continue;
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            lw_val *v = lw_lookup(s, n->outputs[k]);
            if (v && !v->v.data && v->known && v->v.t != CTOSA_DTYPE_FP32) v->v.t = CTOSA_DTYPE_FP32;
        }
    }
}

/* ------------------------------------------------------------ constants */

/* Value `name` with its constant data: already known, or (when the
 * deciding has not reached its producer yet, as for the scale of a
 * QuantizeLinear that follows the op) read from a Constant node or through
 * Identity. NULL when not constant. */
const lw_val *qdq_const(lower_session *s, arena *a, const char *name) {
    for (int depth = 0; depth < 8; depth++) {
        lw_val *v = lw_lookup(s, name);
        if (!v) return NULL;
        if (v->v.data) return v;
        if (v->producer < 0) return NULL;
        const ctosa_onnx_node *n = &s->g->nodes[v->producer];
        if (qdq_is_op(n, "Identity") && n->n_inputs == 1) {
            name = n->inputs[0];
            continue;
        }
        if (!qdq_is_op(n, "Constant")) return NULL;
        const ctosa_onnx_attr *at = ctosa_onnx_node_attr(n, "value");
        if (!at || !at->t || at->t->rank > LOWER_MAX_RANK) return NULL;
        const void *data = NULL;
        uint64_t nbytes = 0;
        ctosa_error *e = ctosa_onnx_tensor_data(s->m, at->t, &data, &nbytes);
        if (e) {
            ctosa_error_free(e);
            return NULL;
        }
        lw_val *c = arena_zalloc(a, sizeof *c);
        if (!c) return NULL;
        *c = *v;
        c->v.onnx_dtype = at->t->dtype;
        c->v.rank = at->t->rank;
        for (uint32_t k = 0; k < at->t->rank; k++) c->v.shape[k] = at->t->dims[k];
        c->v.static_shape = true;
        c->v.data = nbytes ? data : "";
        c->v.nbytes = nbytes;
        c->known = true;
        return c;
    }
    return NULL;
}

uint64_t qdq_val_count(const lw_val *v) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < v->v.rank; i++) n *= (uint64_t)(v->v.shape[i] < 0 ? 0 : v->v.shape[i]);
    return n;
}

double qdq_val_f64(const lw_val *v, uint64_t k) {
    const uint8_t *p = v->v.data;
    if (!p) return 0;
    switch (v->v.onnx_dtype) {
    case CTOSA_ONNX_FLOAT: {
        float f;
        memcpy(&f, p + 4 * k, 4);
        return f;
    }
    case CTOSA_ONNX_DOUBLE: {
        double d;
        memcpy(&d, p + 8 * k, 8);
        return d;
    }
    case CTOSA_ONNX_INT8: return (int8_t)p[k];
    case CTOSA_ONNX_UINT8: return p[k];
    case CTOSA_ONNX_INT16: return (int16_t)rd_u16(p + 2 * k);
    case CTOSA_ONNX_UINT16: return rd_u16(p + 2 * k);
    case CTOSA_ONNX_INT32: return (int32_t)rd_u32(p + 4 * k);
    case CTOSA_ONNX_UINT32: return rd_u32(p + 4 * k);
    case CTOSA_ONNX_INT64: return (double)(int64_t)rd_u64(p + 8 * k);
    case CTOSA_ONNX_BOOL: return p[k] != 0;
    default: return 0;
    }
}
