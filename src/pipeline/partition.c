/* partition.c - grouping delegated nodes into partitions.
 *
 * Edges are runtime data dependencies: a constant value (initializer,
 * folded output, --bind) is embedded where it is used and creates no edge.
 * A constant node that stays on the CPU keeps its real edges: its runtime
 * inputs (Shape reads its input in the ONNX model) and its CPU consumers.
 *
 * Grouping walks the nodes in topological order. A delegated node N may
 * join (and so merge) the groups of its delegated producers; each candidate
 * group is accepted only if the contraction stays acyclic: no path leaves
 * the merged set and comes back into it (checked by a forward search over
 * the nodes seen so far, expanding every other group as one contracted
 * node). Most nodes have all producers in one group and need no search. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/partition.h"

typedef struct pstate {
    lower_session *s;
    uint32_t n;
    /* successor lists (runtime edges) */
    uint32_t *succ_start, *succ;
    uint32_t *pred_start, *pred;
    int32_t *parent;   /* union-find over node indices; root = smallest index */
    int32_t *next_mem; /* member list per root */
    int32_t *tail;
    uint32_t *mark; /* DFS generation marks */
    uint32_t gen;
    uint32_t *stack;
    uint8_t *in_set;
    bool *cpu;    /* node is a CPU node in the current iteration */
    bool *active; /* node is delegated (takes part in grouping) */
} pstate;

static int32_t find(pstate *p, int32_t x) {
    int32_t r = x;
    while (p->parent[r] != r) r = p->parent[r];
    while (p->parent[x] != r) {
        int32_t nx = p->parent[x];
        p->parent[x] = r;
        x = nx;
    }
    return r;
}

static void unite(pstate *p, int32_t a, int32_t b) {
    a = find(p, a);
    b = find(p, b);
    if (a == b) return;
    if (b < a) {
        int32_t t = a;
        a = b;
        b = t;
    }
    p->parent[b] = a;
    p->next_mem[p->tail[a]] = b;
    p->tail[a] = p->tail[b];
}

/* Would merging the groups in roots[0..k) together with node `nn` create a
 * cycle in the contracted graph? */
static bool creates_cycle(pstate *p, const int32_t *roots, uint32_t k, uint32_t nn) {
    p->gen++;
    uint32_t sp = 0;
    /* in_set: members of the merged set */
    for (uint32_t r = 0; r < k; r++)
        for (int32_t m = roots[r]; m >= 0; m = p->next_mem[m]) p->in_set[m] = 1;
    p->in_set[nn] = 1;
    /* Seeds: outside successors of set members. */
    for (uint32_t r = 0; r < k; r++)
        for (int32_t m = roots[r]; m >= 0; m = p->next_mem[m])
            for (uint32_t e = p->succ_start[m]; e < p->succ_start[m + 1]; e++) {
                uint32_t x = p->succ[e];
                if (x > nn || p->in_set[x] || p->mark[x] == p->gen) continue;
                p->mark[x] = p->gen;
                p->stack[sp++] = x;
            }
    bool cycle = false;
    while (sp && !cycle) {
        uint32_t x = p->stack[--sp];
        /* A contracted group: all of its members are reached together. */
        if (p->active[x]) {
            int32_t r = find(p, (int32_t)x);
            for (int32_t m = r; m >= 0; m = p->next_mem[m]) {
                if ((uint32_t)m > nn || p->mark[m] == p->gen) continue;
                if (p->in_set[m]) {
                    cycle = true;
                    break;
                }
                p->mark[m] = p->gen;
                p->stack[sp++] = (uint32_t)m;
            }
        }
        for (uint32_t e = p->succ_start[x]; e < p->succ_start[x + 1] && !cycle; e++) {
            uint32_t y = p->succ[e];
            if (y > nn) continue;
            if (p->in_set[y]) {
                cycle = true;
                break;
            }
            if (p->mark[y] == p->gen) continue;
            p->mark[y] = p->gen;
            p->stack[sp++] = y;
        }
    }
    for (uint32_t r = 0; r < k; r++)
        for (int32_t m = roots[r]; m >= 0; m = p->next_mem[m]) p->in_set[m] = 0;
    p->in_set[nn] = 0;
    return cycle;
}

/* Node status helpers for the current iteration. */
static bool is_const_node(lower_session *s, uint32_t i) { return s->nodes[i].kind == LW_NODE_CONST; }

/* A DequantizeLinear folded into its quantized group emits nothing: its
 * output is the integer input under the float name. Such a value must not
 * cross a partition boundary (a CPU consumer or the partitioned ONNX would
 * read integer bits under a float name), so the node joins the partition of
 * its consumer, and the boundary is the integer tensor before it, which
 * ONNX types truthfully (with its scale and zero point). */
static bool joins_consumer(lower_session *s, uint32_t i) {
    return s->nodes[i].kind == LW_NODE_DELEGATED && !s->nodes[i].compute &&
           strcmp(s->g->nodes[i].op_type, "DequantizeLinear") == 0;
}

/* Builds edge lists: producer -> consumer for runtime values, plus the CPU
 * edges of constant nodes kept on the CPU. */
static bool build_edges(pstate *p) {
    lower_session *s = p->s;
    uint32_t n = p->n;
    uint32_t *cnt = calloc(n + 1, sizeof *cnt);
    uint32_t *pc = calloc(n + 1, sizeof *pc);
    if (!cnt || !pc) {
        free(cnt);
        free(pc);
        return false;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            uint32_t tot = 0, tp = 0;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t c = cnt[i], d = pc[i];
                p->succ_start[i] = tot;
                p->pred_start[i] = tp;
                tot += c;
                tp += d;
                cnt[i] = p->succ_start[i];
                pc[i] = p->pred_start[i];
            }
            p->succ_start[n] = tot;
            p->pred_start[n] = tp;
            free(p->succ);
            free(p->pred);
            p->succ = malloc((tot + 1) * sizeof *p->succ);
            p->pred = malloc((tp + 1) * sizeof *p->pred);
            if (!p->succ || !p->pred) {
                free(cnt);
                free(pc);
                return false;
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            const ctosa_onnx_node *nd = &s->g->nodes[i];
            bool cnode = is_const_node(s, i);
            if (cnode && !p->cpu[i]) continue; /* embedded where used: no edges */
            for (uint32_t k = 0; k < nd->n_outputs; k++) {
                lw_val *v = lw_lookup(s, nd->outputs[k]);
                if (!v) continue;
                for (uint32_t c = 0; c < v->n_consumers; c++) {
                    uint32_t to = v->consumers[c];
                    if (to == i) continue;
                    bool edge;
                    if (cnode) edge = p->cpu[to]; /* only CPU consumers read it */
                    else if (v->v.data) edge = p->cpu[to] && s->nodes[i].kind == LW_NODE_FALLBACK;
                    else edge = !(is_const_node(s, to) && !p->cpu[to]);
                    if (!edge) continue;
                    if (pass == 0) {
                        cnt[i]++;
                        pc[to]++;
                    } else {
                        p->succ[cnt[i]++] = to;
                        p->pred[pc[to]++] = i;
                    }
                }
            }
        }
    }
    free(cnt);
    free(pc);
    return true;
}

static void set_cpu(lower_session *s, uint32_t i, lower_code code, const char *reason) {
    lw_nodeinfo *nd = &s->nodes[i];
    nd->on_cpu = true;
    nd->part = -1;
    if (nd->kind != LW_NODE_FALLBACK || code == LOWER_NO_COMPUTE) {
        nd->code = code;
        nd->reason = reason;
        nd->input = NULL;
    }
}

/* Constant nodes: on the CPU when a CPU node or a graph output needs them. */
static void place_const_nodes(pstate *p) {
    lower_session *s = p->s;
    for (uint32_t i = p->n; i-- > 0;) {
        if (!is_const_node(s, i)) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        const char *why = NULL;
        bool used = false;
        for (uint32_t k = 0; k < nd->n_outputs && !why; k++) {
            lw_val *v = lw_lookup(s, nd->outputs[k]);
            if (!v) continue;
            if (v->graph_output) why = arena_printf(&s->a, "its value '%s' is a graph output", v->v.name);
            for (uint32_t c = 0; c < v->n_consumers && !why; c++) {
                uint32_t to = v->consumers[c];
                used = true;
                if (p->cpu[to])
                    why = arena_printf(&s->a, "its value '%s' is used by '%s', which stays on the CPU",
                                       v->v.name, s->nodes[to].label);
            }
        }
        if (!why && !used) why = "its values are not used by any node";
        p->cpu[i] = why != NULL;
        if (why) s->nodes[i].reason = arena_printf(&s->a, "computed at compile time, but %s", why);
    }
}

/* Candidate order: a folded DequantizeLinear still alone first (it must
 * join a consumer), then by first node. */
static bool cand_before(pstate *p, int32_t a, int32_t b) {
    bool la = joins_consumer(p->s, (uint32_t)a) && p->next_mem[a] < 0;
    bool lb = joins_consumer(p->s, (uint32_t)b) && p->next_mem[b] < 0;
    if (la != lb) return la;
    return a < b;
}

int32_t part_assign(lower_session *s) {
    pstate p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.n = s->n_nodes;
    uint32_t n = p.n;
    int32_t result = -1;
    p.succ_start = calloc(n + 2, sizeof *p.succ_start);
    p.pred_start = calloc(n + 2, sizeof *p.pred_start);
    p.parent = malloc((n + 1) * sizeof *p.parent);
    p.next_mem = malloc((n + 1) * sizeof *p.next_mem);
    p.tail = malloc((n + 1) * sizeof *p.tail);
    p.mark = calloc(n + 1, sizeof *p.mark);
    p.stack = malloc((n + 1) * sizeof *p.stack * 2);
    p.in_set = calloc(n + 1, 1);
    p.cpu = calloc(n + 1, sizeof *p.cpu);
    p.active = calloc(n + 1, sizeof *p.active);
    int32_t *roots = malloc((n + 1) * sizeof *roots);
    bool *has_compute = calloc(n + 1, sizeof *has_compute);
    if (!p.succ_start || !p.pred_start || !p.parent || !p.next_mem || !p.tail || !p.mark || !p.stack ||
        !p.in_set || !p.cpu || !p.active || !roots || !has_compute)
        goto done;
    bool *demoted = calloc(n + 1, sizeof *demoted);
    if (!demoted) goto done;
    for (;;) {
        for (uint32_t i = 0; i < n; i++) {
            p.cpu[i] = s->nodes[i].kind == LW_NODE_FALLBACK || demoted[i];
            p.active[i] = s->nodes[i].kind == LW_NODE_DELEGATED && !demoted[i];
            p.parent[i] = (int32_t)i;
            p.next_mem[i] = -1;
            p.tail[i] = (int32_t)i;
        }
        place_const_nodes(&p);
        if (!build_edges(&p)) {
            free(demoted);
            goto done;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (!p.active[i] || joins_consumer(s, i)) continue;
            uint32_t k = 0;
            for (uint32_t e = p.pred_start[i]; e < p.pred_start[i + 1]; e++) {
                uint32_t u = p.pred[e];
                if (!p.active[u]) continue;
                int32_t r = find(&p, (int32_t)u);
                bool dup = false;
                for (uint32_t j = 0; j < k; j++) dup |= roots[j] == r;
                if (!dup) roots[k++] = r;
                /* through a folded DequantizeLinear still on its own: its
                 * producer's group is a candidate too */
                if (r != (int32_t)u || p.next_mem[u] >= 0 || !joins_consumer(s, u)) continue;
                for (uint32_t f = p.pred_start[u]; f < p.pred_start[u + 1]; f++) {
                    if (!p.active[p.pred[f]]) continue;
                    int32_t r2 = find(&p, (int32_t)p.pred[f]);
                    dup = false;
                    for (uint32_t j = 0; j < k; j++) dup |= roots[j] == r2;
                    if (!dup) roots[k++] = r2;
                }
            }
            /* candidates in order of their first node, the folded
             * DequantizeLinear inputs still on their own first */
            for (uint32_t a = 1; a < k; a++)
                for (uint32_t b = a; b > 0 && cand_before(&p, roots[b], roots[b - 1]); b--) {
                    int32_t t = roots[b];
                    roots[b] = roots[b - 1];
                    roots[b - 1] = t;
                }
            uint32_t acc = 0;
            for (uint32_t j = 0; j < k; j++) {
                int32_t cand = roots[j];
                roots[acc] = cand;
                bool fast = acc == 0;
                /* Single group and every producer inside it: cannot cycle. */
                for (uint32_t e = p.pred_start[i]; fast && e < p.pred_start[i + 1]; e++) {
                    uint32_t u = p.pred[e];
                    if (!p.active[u] || find(&p, (int32_t)u) != cand) fast = false;
                }
                if (fast || !creates_cycle(&p, roots, acc + 1, i)) acc++;
            }
            for (uint32_t j = 0; j < acc; j++) unite(&p, roots[j], (int32_t)i);
        }
        /* A folded DequantizeLinear no consumer could take (that would
         * have closed a cycle) stays with its producer. Its one runtime
         * input comes from that group, so this cannot close a cycle. */
        for (uint32_t i = 0; i < n; i++) {
            if (!p.active[i] || !joins_consumer(s, i) || find(&p, (int32_t)i) != (int32_t)i ||
                p.next_mem[i] >= 0)
                continue;
            for (uint32_t e = p.pred_start[i]; e < p.pred_start[i + 1]; e++)
                if (p.active[p.pred[e]]) unite(&p, find(&p, (int32_t)p.pred[e]), (int32_t)i);
        }
        /* Groups without compute are not delegated. */
        memset(has_compute, 0, (n + 1) * sizeof *has_compute);
        for (uint32_t i = 0; i < n; i++)
            if (p.active[i] && s->nodes[i].compute) has_compute[find(&p, (int32_t)i)] = true;
        bool again = false;
        for (uint32_t i = 0; i < n; i++) {
            if (!p.active[i] || has_compute[find(&p, (int32_t)i)] || s->keep_moves) continue;
            demoted[i] = true;
            again = true;
        }
        if (!again) break;
    }
    /* Final assignment. */
    int32_t n_parts = 0;
    int32_t *pid = roots; /* reuse: root -> partition id */
    for (uint32_t i = 0; i < n; i++) pid[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        lw_nodeinfo *nd = &s->nodes[i];
        nd->part = -1;
        nd->on_cpu = false;
        if (p.active[i]) {
            int32_t r = find(&p, (int32_t)i);
            if (pid[r] < 0) pid[r] = n_parts++;
            nd->part = pid[r];
        } else if (demoted[i]) {
            set_cpu(s, i, LOWER_NO_COMPUTE,
                    arena_printf(&s->a,
                                 "%s would be delegated, but its partition only moves data (no compute)",
                                 s->g->nodes[i].op_type));
        } else if (nd->kind == LW_NODE_FALLBACK) {
            set_cpu(s, i, nd->code, nd->reason);
        }
    }
    /* Constant nodes: CPU, or the partition of their first consumer. */
    for (uint32_t i = n; i-- > 0;) {
        if (!is_const_node(s, i)) continue;
        if (p.cpu[i]) {
            set_cpu(s, i, LOWER_CPU_CONSUMER, s->nodes[i].reason);
            continue;
        }
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        int32_t best = -1;
        uint32_t best_node = UINT32_MAX;
        for (uint32_t k = 0; k < nd->n_outputs; k++) {
            lw_val *v = lw_lookup(s, nd->outputs[k]);
            for (uint32_t c = 0; v && c < v->n_consumers; c++) {
                uint32_t to = v->consumers[c];
                int32_t pt = s->nodes[to].part;
                if (pt >= 0 && to < best_node) {
                    best = pt;
                    best_node = to;
                }
            }
        }
        if (best < 0) {
            /* Consumers are constant nodes on the CPU only (e.g. a folded
             * chain ending in a CPU node): stays with them. */
            set_cpu(s, i, LOWER_CPU_CONSUMER,
                    "computed at compile time, but only nodes on the CPU use its values");
        } else {
            s->nodes[i].part = best;
        }
    }
    result = n_parts;
    free(demoted);
done:
    free(p.succ_start);
    free(p.pred_start);
    free(p.succ);
    free(p.pred);
    free(p.parent);
    free(p.next_mem);
    free(p.tail);
    free(p.mark);
    free(p.stack);
    free(p.in_set);
    free(p.cpu);
    free(p.active);
    free(roots);
    free(has_compute);
    return result;
}

/* ---------------------------------------------------------- ONNX order */

typedef struct heap {
    int64_t *key; /* smallest original index of the item */
    int64_t *item;
    uint32_t n;
} heap;

static void heap_push(heap *h, int64_t key, int64_t item) {
    uint32_t i = h->n++;
    h->key[i] = key;
    h->item[i] = item;
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        if (h->key[up] <= h->key[i]) break;
        int64_t tk = h->key[up], ti = h->item[up];
        h->key[up] = h->key[i];
        h->item[up] = h->item[i];
        h->key[i] = tk;
        h->item[i] = ti;
        i = up;
    }
}

static int64_t heap_pop(heap *h) {
    int64_t top = h->item[0];
    h->n--;
    h->key[0] = h->key[h->n];
    h->item[0] = h->item[h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->key[l] < h->key[m]) m = l;
        if (r < h->n && h->key[r] < h->key[m]) m = r;
        if (m == i) break;
        int64_t tk = h->key[m], ti = h->item[m];
        h->key[m] = h->key[i];
        h->item[m] = h->item[i];
        h->key[i] = tk;
        h->item[i] = ti;
        i = m;
    }
    return top;
}

int64_t part_order(lower_session *s, uint32_t n_parts, int64_t *order) {
    uint32_t n = s->n_nodes;
    /* Items: CPU nodes (by index) and partitions (n + p). */
    uint32_t n_items = n + n_parts;
    uint32_t *indeg = calloc(n_items + 1, sizeof *indeg);
    int64_t *first = malloc((n_items + 1) * sizeof *first);
    heap h = {malloc((n_items + 1) * sizeof(int64_t)), malloc((n_items + 1) * sizeof(int64_t)), 0};
    int64_t count = -2; /* out of memory until the order is built */
    /* Edges: consumer items per producer item, built as a flat list. */
    uint32_t *estart = calloc(n_items + 2, sizeof *estart);
    uint32_t *edges = NULL;
    if (!indeg || !first || !h.key || !h.item || !estart) goto out;
#define ITEM(i) (s->nodes[i].part >= 0 ? n + (uint32_t)s->nodes[i].part : (i))
#define PRESENT(i) (s->nodes[i].on_cpu || s->nodes[i].part >= 0)
    for (uint32_t it = 0; it < n_items; it++) first[it] = INT64_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (PRESENT(i) && first[ITEM(i)] > i) first[ITEM(i)] = i;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t *fill = NULL;
        if (pass == 1) {
            uint32_t tot = 0;
            for (uint32_t it = 0; it < n_items; it++) {
                uint32_t c = estart[it];
                estart[it] = tot;
                tot += c;
            }
            estart[n_items] = tot;
            edges = malloc((tot + 1) * sizeof *edges);
            fill = calloc(n_items + 1, sizeof *fill);
            if (!edges || !fill) {
                free(fill);
                goto out;
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            if (!PRESENT(i)) continue;
            const ctosa_onnx_node *nd = &s->g->nodes[i];
            for (uint32_t k = 0; k < nd->n_outputs; k++) {
                lw_val *v = lw_lookup(s, nd->outputs[k]);
                for (uint32_t c = 0; v && c < v->n_consumers; c++) {
                    uint32_t to = v->consumers[c];
                    if (!PRESENT(to) || ITEM(to) == ITEM(i)) continue;
                    /* Only dependencies the partitioned model keeps: a value
                     * a partition embeds as a constant is no edge. */
                    if (s->nodes[to].part >= 0 && v->v.data) continue;
                    if (s->nodes[i].part >= 0 && v->v.data) continue;
                    if (pass == 0) {
                        estart[ITEM(i)]++;
                    } else {
                        edges[estart[ITEM(i)] + fill[ITEM(i)]++] = ITEM(to);
                        indeg[ITEM(to)]++;
                    }
                }
            }
        }
        free(fill);
    }
    for (uint32_t it = 0; it < n_items; it++)
        if (first[it] != INT64_MAX && indeg[it] == 0) heap_push(&h, first[it], it);
    count = 0;
    while (h.n) {
        uint32_t it = (uint32_t)heap_pop(&h);
        order[count++] = it < n ? (int64_t)it : -(int64_t)(it - n) - 1;
        for (uint32_t e = estart[it]; e < estart[it + 1]; e++) {
            uint32_t to = edges[e];
            if (--indeg[to] == 0) heap_push(&h, first[to], to);
        }
    }
    uint32_t expect = 0;
    for (uint32_t it = 0; it < n_items; it++) expect += first[it] != INT64_MAX;
    if ((uint32_t)count != expect) count = -1;
#undef ITEM
#undef PRESENT
out:
    free(indeg);
    free(first);
    free(h.key);
    free(h.item);
    free(estart);
    free(edges);
    return count;
}
