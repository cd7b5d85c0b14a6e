/* qz_equalize.c - cross-layer equalization of a float model before it is
 * quantized (docs/quantize.md, "Cross-layer equalization").
 *
 * For two convolutions A -> f -> B where f commutes with a positive
 * per-channel scale (nothing, Relu, LeakyRelu, PRelu, a Clip with lower
 * bound 0 and no upper bound), output channel i of A and input channel i of
 * B can be scaled by 1/s_i and s_i without changing the function. With r1_i
 * the largest |weight| of A's output channel i and r2_i that of B's input
 * channel i (over every consumer B), s_i = sqrt(r1_i / r2_i) makes both
 * sqrt(r1_i * r2_i) (the data-free equalization of Nagel et al., 2019).
 * A chain of convolutions is equalized pair by pair, sweep after sweep,
 * until no scale moves by more than 1e-4 (a layer between two pairs gets
 * its output channels scaled by one and its input channels by the other).
 *
 * A Clip with an upper bound (Relu6) is skipped: clip(x / s, 0, 6) is
 * clip(x, 0, 6 s) / s, the same only where the channel never reaches 6
 * (and 6 s). Whether it does depends on the input; ONNX Clip has one
 * bound for all channels, so the bound cannot follow the scale. Skipping
 * keeps the equalized model the same function for every input. Functions
 * that are not positively homogeneous (HardSwish, SiLU, Sigmoid) are
 * skipped too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/qz_internal.h"

/* One equalizable pair: producer A (its weight and bias initializers) and
 * the convolutions reading its output (through the activation). */
typedef struct eq_pair {
    uint32_t a;      /* node index of A */
    float *w1, *b1;  /* A's weight [C, ...] and bias [C] (b1 may be NULL) */
    uint64_t per1;   /* weight elements per output channel of A */
    uint32_t ch;     /* C */
    uint32_t n_cons; /* convolutions B reading it */
    struct eq_cons {
        float *w2; /* [O, C / group, ...] */
        uint32_t out, cig, group;
        uint64_t per; /* elements per (output channel, input channel) */
    } * cons;
} eq_pair;

static bool is_op(const ctosa_onnx_node *n, const char *op) {
    return (!n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

static int64_t attr_int(const ctosa_onnx_node *n, const char *name, int64_t dflt) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, name);
    return a && a->type == CTOSA_ONNX_ATTR_INT ? a->i : dflt;
}

typedef struct eq_graph {
    qz_graph *q;
    strmap producer; /* tensor name -> node index + 1 */
    strmap uses;     /* tensor name -> number of node inputs reading it + graph output (+1 each) */
    strmap init;     /* initializer name -> qz_init index + 1 */
    float **mut;     /* [n_inits] a writable copy of an initializer, made on first use */
} eq_graph;

static uint32_t get_u(const strmap *m, const char *k) { return (uint32_t)(uintptr_t)strmap_get(m, k); }

/* The single scalar value of a Clip bound: an initializer or a Constant
 * node's tensor (exporters write both). */
static bool scalar_value(const eq_graph *eg, const char *name, double *v) {
    const qz_graph *q = eg->q;
    uint32_t ii = get_u(&eg->init, name);
    const void *data = NULL;
    uint64_t nb = 0;
    int32_t dt = 0;
    if (ii) {
        data = q->inits[ii - 1].data;
        nb = q->inits[ii - 1].nbytes;
        dt = q->inits[ii - 1].dtype;
    } else {
        uint32_t p = get_u(&eg->producer, name);
        if (!p || !is_op(&q->g->nodes[p - 1], "Constant")) return false;
        const ctosa_onnx_attr *a = ctosa_onnx_node_attr(&q->g->nodes[p - 1], "value");
        if (!a || a->type != CTOSA_ONNX_ATTR_TENSOR || !a->t) return false;
        if (ctosa_onnx_tensor_data(q->m, a->t, &data, &nb)) return false;
        dt = a->t->dtype;
    }
    if (dt != CTOSA_ONNX_FLOAT || nb != 4) return false;
    float f;
    memcpy(&f, data, 4);
    *v = f;
    return true;
}

typedef enum { ACT_NONE, ACT_OK, ACT_CLAMP, ACT_OTHER } act_kind;

/* Whether node n (reading A's output, directly or through other such
 * nodes) commutes with a positive per-channel scale: f(x / s) = f(x) / s
 * channel by channel. */
static act_kind activation_kind(const eq_graph *eg, const ctosa_onnx_node *n) {
    if (is_op(n, "Relu") || is_op(n, "LeakyRelu") || is_op(n, "PRelu") || is_op(n, "Identity") ||
        is_op(n, "Dropout") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool") ||
        is_op(n, "GlobalMaxPool"))
        return ACT_OK;
    if (is_op(n, "MaxPool")) /* not with its Indices output */
        return n->n_outputs < 2 || !n->outputs[1][0] ? ACT_OK : ACT_OTHER;
    if (is_op(n, "Clip")) {
        double lo = -INFINITY, hi = INFINITY;
        if (n->n_inputs > 1 && n->inputs[1][0] && !scalar_value(eg, n->inputs[1], &lo)) return ACT_OTHER;
        if (n->n_inputs > 2 && n->inputs[2][0] && !scalar_value(eg, n->inputs[2], &hi)) return ACT_OTHER;
        if (isfinite(hi)) return ACT_CLAMP;
        return lo == 0 || lo == -INFINITY ? ACT_OK : ACT_OTHER;
    }
    return ACT_OTHER;
}

/* The float initializer behind a node input: the initializer itself, or
 * the one an Identity copies (exporters share equal weights, such as zero
 * biases, that way). */
static const qz_init *source_init(const eq_graph *eg, const char *name) {
    uint32_t ii = get_u(&eg->init, name);
    if (!ii) {
        uint32_t p = get_u(&eg->producer, name);
        const ctosa_onnx_node *n = p ? &eg->q->g->nodes[p - 1] : NULL;
        if (n && is_op(n, "Identity") && n->n_inputs == 1) ii = get_u(&eg->init, n->inputs[0]);
    }
    const qz_init *t = ii ? &eg->q->inits[ii - 1] : NULL;
    return t && t->dtype == CTOSA_ONNX_FLOAT && t->nbytes % 4 == 0 ? t : NULL;
}

/* The writable float data of input `slot` of node `node`, and a copy of
 * its initializer's header. An initializer only this input reads is
 * changed in place; a shared one (or one behind an Identity) gets a
 * private copy, which the node then reads. */
static float *own_weight(eq_graph *eg, uint32_t node, uint32_t slot, qz_init *hdr) {
    qz_graph *q = eg->q;
    const char *name = q->nodes[node].in[slot];
    uint32_t ii = get_u(&eg->init, name);
    if (ii && get_u(&eg->uses, name) == 1) {
        qz_init *t = &q->inits[ii - 1];
        if (!eg->mut[ii - 1]) {
            float *f = arena_alloc(&q->a, t->nbytes ? t->nbytes : 4);
            if (!f) return NULL;
            if (t->nbytes) memcpy(f, t->data, t->nbytes);
            eg->mut[ii - 1] = f;
            t->data = f;
        }
        *hdr = *t;
        return eg->mut[ii - 1];
    }
    const qz_init *src = source_init(eg, name);
    if (!src) return NULL;
    *hdr = *src; /* q->inits may move below */
    float *f = arena_alloc(&q->a, hdr->nbytes ? hdr->nbytes : 4);
    const char *nm = qz_fresh_name(q, name, "_equalized");
    if (!f || !nm) return NULL;
    if (hdr->nbytes) memcpy(f, hdr->data, hdr->nbytes);
    if (!qz_graph_add_init(q, nm, hdr->dtype, hdr->rank, hdr->dims, f, hdr->nbytes)) return NULL;
    uint32_t idx = q->n_inits;
    if (!strmap_put(&eg->init, nm, (void *)(uintptr_t)idx) ||
        !strmap_put(&eg->uses, nm, (void *)(uintptr_t)1))
        return NULL;
    eg->mut[idx - 1] = f;
    q->nodes[node].in[slot] = nm;
    hdr->data = f;
    hdr->name = nm;
    return f;
}

/* A Conv whose weight (rank >= 3) and bias are float initializers. */
static bool plain_conv(const eq_graph *eg, const ctosa_onnx_node *n) {
    if (!is_op(n, "Conv") || n->n_inputs < 2) return false;
    const qz_init *w = source_init(eg, n->inputs[1]);
    if (!w || w->rank < 3) return false;
    if (n->n_inputs > 2 && n->inputs[2][0]) {
        const qz_init *b = source_init(eg, n->inputs[2]);
        if (!b || b->rank != 1 || b->dims[0] != w->dims[0]) return false;
    }
    return true;
}

static uint64_t elems_from(const qz_init *t, uint32_t axis) {
    uint64_t n = 1;
    for (uint32_t d = axis; d < t->rank; d++) n *= (uint64_t)t->dims[d];
    return n;
}

/* The nodes reading tensor x (at most cap; node indices after `from`). */
static uint32_t readers(const ctosa_onnx_graph *g, uint32_t from, const char *x, uint32_t *rd, uint32_t cap) {
    uint32_t n = 0;
    for (uint32_t i = from + 1; i < g->n_nodes && n < cap; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_inputs; k++)
            if (!strcmp(g->nodes[i].inputs[k], x)) {
                rd[n++] = i;
                break;
            }
    return n;
}

/* Finds the pair starting at node a, if any: A's output goes, through a
 * chain of single-reader nodes (activations, pooling), to convolutions
 * only. Counts the chains left alone because of what is in them. */
static ctosa_error *find_pair(eq_graph *eg, uint32_t a, eq_pair *p, bool *found, qz_equalize_stats *st) {
    *found = false;
    const ctosa_onnx_graph *g = eg->q->g;
    const ctosa_onnx_node *na = &g->nodes[a];
    if (!plain_conv(eg, na)) return NULL;
    const char *z = na->outputs[0];
    uint32_t from = a;
    act_kind worst = ACT_NONE;
    /* walk the chain: each link the one reader of the tensor before it */
    for (uint32_t hop = 0; hop < 8; hop++) {
        uint32_t f;
        if (get_u(&eg->uses, z) != 1 || readers(g, from, z, &f, 1) != 1) break;
        const ctosa_onnx_node *nf = &g->nodes[f];
        if (is_op(nf, "Conv")) break;
        act_kind k = activation_kind(eg, nf);
        if (strcmp(nf->inputs[0], z)) k = ACT_OTHER; /* z is PRelu's slope, say */
        if (k > worst) worst = k;
        z = nf->outputs[0];
        from = f;
    }
    uint32_t n_uses = get_u(&eg->uses, z);
    uint32_t *rd = calloc(n_uses + 1, sizeof(uint32_t));
    if (!rd) return ctosa_error_nomem();
    uint32_t n_rd = readers(g, from, z, rd, n_uses);
    /* every reader a convolution taking z as its data input only, and no
     * graph output (uses counts those) */
    bool ok = n_rd > 0 && n_rd == n_uses;
    for (uint32_t k = 0; k < n_rd && ok; k++) {
        const ctosa_onnx_node *nb = &g->nodes[rd[k]];
        ok = plain_conv(eg, nb) && !strcmp(nb->inputs[0], z);
        for (uint32_t j = 1; j < nb->n_inputs && ok; j++) ok = strcmp(nb->inputs[j], z) != 0;
    }
    if (ok && worst >= ACT_CLAMP) {
        if (worst == ACT_CLAMP) st->skipped_clamp++;
        else st->skipped_other++;
        ok = false;
    }
    if (!ok) {
        free(rd);
        return NULL;
    }
    qz_init w1, b1;
    memset(p, 0, sizeof *p);
    p->a = a;
    p->w1 = own_weight(eg, a, 1, &w1);
    bool has_b = na->n_inputs > 2 && na->inputs[2][0];
    if (has_b) p->b1 = own_weight(eg, a, 2, &b1);
    p->cons = arena_zalloc(&eg->q->a, sizeof *p->cons * n_rd);
    ctosa_error *e = !p->w1 || !p->cons || (has_b && !p->b1) ? ctosa_error_nomem() : NULL;
    if (!e) {
        p->ch = (uint32_t)w1.dims[0];
        p->per1 = elems_from(&w1, 1);
    }
    for (uint32_t k = 0; k < n_rd && !e; k++) {
        const ctosa_onnx_node *nb = &g->nodes[rd[k]];
        qz_init w2;
        float *d = own_weight(eg, rd[k], 1, &w2);
        if (!d) {
            e = ctosa_error_nomem();
            break;
        }
        int64_t grp = attr_int(nb, "group", 1);
        struct eq_cons *c = &p->cons[p->n_cons];
        c->w2 = d;
        c->out = (uint32_t)w2.dims[0];
        c->cig = (uint32_t)w2.dims[1];
        c->group = grp > 0 ? (uint32_t)grp : 1;
        c->per = elems_from(&w2, 2);
        /* shapes that do not line up (a model the runtime would reject) are
         * left alone */
        if ((uint64_t)c->cig * c->group != p->ch || c->out % c->group) {
            free(rd);
            return e;
        }
        p->n_cons++;
    }
    free(rd);
    if (!e) *found = true;
    return e;
}

/* One equalization step of pair p; returns the largest |ln s_i|. */
static double equalize_pair(eq_pair *p) {
    double moved = 0;
    for (uint32_t i = 0; i < p->ch; i++) {
        double r1 = 0, r2 = 0;
        const float *w = p->w1 + (uint64_t)i * p->per1;
        for (uint64_t j = 0; j < p->per1; j++) r1 = fmax(r1, fabs(w[j]));
        for (uint32_t k = 0; k < p->n_cons; k++) {
            const struct eq_cons *c = &p->cons[k];
            uint32_t grp = i / c->cig, l = i % c->cig, opg = c->out / c->group;
            for (uint32_t o = grp * opg; o < (grp + 1) * opg; o++) {
                const float *v = c->w2 + ((uint64_t)o * c->cig + l) * c->per;
                for (uint64_t j = 0; j < c->per; j++) r2 = fmax(r2, fabs(v[j]));
            }
        }
        if (!(r1 > 0) || !(r2 > 0)) continue; /* a dead channel: nothing to balance */
        double s = sqrt(r1 / r2);
        if (fabs(log(s)) < 1e-7) continue;
        moved = fmax(moved, fabs(log(s)));
        float *wm = p->w1 + (uint64_t)i * p->per1;
        for (uint64_t j = 0; j < p->per1; j++) wm[j] = (float)(wm[j] / s);
        if (p->b1) p->b1[i] = (float)(p->b1[i] / s);
        for (uint32_t k = 0; k < p->n_cons; k++) {
            struct eq_cons *c = &p->cons[k];
            uint32_t grp = i / c->cig, l = i % c->cig, opg = c->out / c->group;
            for (uint32_t o = grp * opg; o < (grp + 1) * opg; o++) {
                float *v = c->w2 + ((uint64_t)o * c->cig + l) * c->per;
                for (uint64_t j = 0; j < c->per; j++) v[j] = (float)(v[j] * s);
            }
        }
    }
    return moved;
}

ctosa_error *qz_equalize(qz_graph *q, qz_equalize_stats *st) {
    memset(st, 0, sizeof *st);
    const ctosa_onnx_graph *g = q->g;
    eq_graph eg = {.q = q};
    strmap_init(&eg.producer);
    strmap_init(&eg.uses);
    strmap_init(&eg.init);
    ctosa_error *e = NULL;
    /* room for a private copy of each convolution's weight and bias */
    eg.mut = calloc(q->n_inits + 2 * (size_t)g->n_nodes + 1, sizeof(float *));
    eq_pair *pairs = calloc(g->n_nodes + 1, sizeof *pairs);
    if (!eg.mut || !pairs) e = ctosa_error_nomem();
    bool ok = true;
    for (uint32_t i = 0; i < q->n_inits && !e; i++)
        ok &= strmap_put(&eg.init, q->inits[i].name, (void *)(uintptr_t)(i + 1));
    for (uint32_t i = 0; i < g->n_nodes && !e; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k][0]) ok &= strmap_put(&eg.producer, n->outputs[k], (void *)(uintptr_t)(i + 1));
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k][0])
                ok &= strmap_put(&eg.uses, n->inputs[k],
                                 (void *)(uintptr_t)(get_u(&eg.uses, n->inputs[k]) + 1));
    }
    /* a graph output keeps its tensor's scale */
    for (uint32_t i = 0; i < g->n_outputs && !e; i++)
        ok &= strmap_put(&eg.uses, g->outputs[i].name,
                         (void *)(uintptr_t)(get_u(&eg.uses, g->outputs[i].name) + 2));
    /* subgraphs may read any outer value by name, which the use counts do
     * not see: such models are left as they are */
    bool sub = false;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_attrs; k++)
            sub |= g->nodes[i].attrs[k].type == CTOSA_ONNX_ATTR_GRAPH ||
                   g->nodes[i].attrs[k].type == CTOSA_ONNX_ATTR_GRAPHS;
    st->subgraphs = sub;
    if (!ok && !e) e = ctosa_error_nomem();
    uint32_t n_pairs = 0;
    for (uint32_t i = 0; i < g->n_nodes && !e && !sub; i++) {
        bool found;
        e = find_pair(&eg, i, &pairs[n_pairs], &found, st);
        if (found) {
            n_pairs++;
            st->channels += pairs[n_pairs - 1].ch;
        }
    }
    st->pairs = n_pairs;
    for (uint32_t sweep = 0; sweep < 100 && n_pairs && !e; sweep++) {
        double moved = 0;
        for (uint32_t k = 0; k < n_pairs; k++) moved = fmax(moved, equalize_pair(&pairs[k]));
        st->sweeps = sweep + 1;
        if (sweep == 0) st->first_max_scale = exp(moved);
        if (moved < 1e-4) break;
    }
    free(pairs);
    free(eg.mut);
    strmap_free(&eg.producer);
    strmap_free(&eg.uses);
    strmap_free(&eg.init);
    return e;
}
