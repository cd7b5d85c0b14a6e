/* onnx_functions.c - inlining calls of model-local functions (FunctionProto).
 *
 * A call node is replaced by copies of the function body in which
 *   - formal inputs / outputs become the call's actual names ("" for an
 *     omitted optional input),
 *   - every other value name becomes "<call name>/<name>" so that two calls
 *     of one function do not collide,
 *   - attributes with ref_attr_name take the caller's attribute of that
 *     name, else the function's default (attribute_proto), else are dropped
 *     (an optional attribute the caller did not give).
 * Bodies calling other local functions are expanded recursively up to the
 * model's graph depth limit (which also stops recursive functions).
 * Calls inside subgraphs (If/Loop/Scan bodies) are expanded too; the
 * subgraphs are copied, the original graphs stay as they were.
 * Known limit: names used inside subgraph attributes of a function body
 * are not renamed. */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_inline.h"
#include "onnx/onnx_internal.h"

typedef struct node_vec {
    ctosa_onnx_node *v;
    uint32_t n, cap;
} node_vec;

typedef struct inl_ctx {
    ctosa_onnx_model *m;
    node_vec out;
    uint32_t max_depth;
    uint32_t calls;
    const ctosa_onnx_node *top; /* the main-graph node being expanded (named in errors) */
    /* Tracking (onnx_inline_main_graph, main graph only): origin of every
     * output node and the expanded calls. */
    bool track;
    int32_t *orig;
    uint32_t orig_cap;
    onnx_inline_call *rec;
    uint32_t n_rec, rec_cap;
} inl_ctx;

static ctosa_error *push(inl_ctx *c, const ctosa_onnx_node *n, int32_t orig) {
    if (c->track && c->out.n == c->orig_cap) {
        uint32_t cap = c->orig_cap ? c->orig_cap * 2 : 64;
        int32_t *v = cap > (16u << 20) ? NULL : realloc(c->orig, cap * sizeof *v);
        if (!v) return ctosa_error_nomem();
        c->orig = v;
        c->orig_cap = cap;
    }
    if (c->track) c->orig[c->out.n] = orig;
    if (c->out.n == c->out.cap) {
        uint32_t cap = c->out.cap ? c->out.cap * 2 : 64;
        if (cap < c->out.cap || cap > (16u << 20))
            return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: inlining functions gives more than %u nodes",
                                   c->m->info.path, 16u << 20);
        ctosa_onnx_node *v = realloc(c->out.v, cap * sizeof *v);
        if (!v) return ctosa_error_nomem();
        c->out.v = v;
        c->out.cap = cap;
    }
    ctosa_onnx_node *d = &c->out.v[c->out.n];
    *d = *n;
    d->index = c->out.n++;
    return NULL;
}

static const ctosa_onnx_function *find_fn(const ctosa_onnx_model *m, const ctosa_onnx_node *n) {
    return ctosa_onnx_find_function(m, n->domain, n->op_type, n->overload);
}

/* Maps a body value name to the caller's namespace. */
static const char *map_name(inl_ctx *c, const ctosa_onnx_function *f, const ctosa_onnx_node *call,
                            const char *prefix, const char *name) {
    if (!name[0]) return "";
    for (uint32_t i = 0; i < f->n_inputs; i++)
        if (!strcmp(f->inputs[i], name)) return i < call->n_inputs ? call->inputs[i] : "";
    for (uint32_t i = 0; i < f->n_outputs; i++)
        if (!strcmp(f->outputs[i], name) && i < call->n_outputs && call->outputs[i][0])
            return call->outputs[i]; /* an output the caller omits stays internal (below) */
    return arena_printf(&c->m->a, "%s/%s", prefix, name);
}

static ctosa_error *expand(inl_ctx *c, const ctosa_onnx_node *n, uint32_t depth, int32_t orig);

/* Would the unnamed body node i, named by its op type, clash with another
 * body node (one so named, or another unnamed node of that type)? Then it
 * is named "<op_type>#<i>" so that inlined names stay unique. */
static bool body_name_taken(const ctosa_onnx_function *f, uint32_t i) {
    const char *op = f->nodes[i].op_type;
    for (uint32_t k = 0; k < f->n_nodes; k++) {
        if (k == i) continue;
        const ctosa_onnx_node *o = &f->nodes[k];
        if (!strcmp(o->name, op) || (!o->name[0] && !strcmp(o->op_type, op))) return true;
    }
    return false;
}

static ctosa_error *expand_call(inl_ctx *c, const ctosa_onnx_function *f, const ctosa_onnx_node *call,
                                uint32_t depth) {
    char label[512];
    if (depth >= c->max_depth)
        return ctosa_error_new(
            CTOSA_ERR_LIMIT, "%s: byte %llu: %s: function calls nested deeper than %u (recursive function?)",
            c->m->info.path, (unsigned long long)c->top->offset, onnx_node_label(c->top, label, sizeof label),
            c->max_depth);
    arena *a = &c->m->a;
    uint32_t id = c->calls++;
    /* An unnamed top-level call is named as the report labels unnamed
     * nodes ("<op_type>#<index>"); nested calls always have a name here. */
    const char *prefix = call->name[0] ? call->name
                         : depth == 0  ? arena_printf(a, "%s#%u", call->op_type, call->index)
                                       : arena_printf(a, "%s#%u", call->op_type, id);
    if (!prefix) return ctosa_error_nomem();
    uint32_t rec = UINT32_MAX;
    if (c->track) {
        if (c->n_rec == c->rec_cap) {
            uint32_t cap = c->rec_cap ? c->rec_cap * 2 : 16;
            onnx_inline_call *v = cap > (16u << 20) ? NULL : realloc(c->rec, cap * sizeof *v);
            if (!v) return ctosa_error_nomem();
            c->rec = v;
            c->rec_cap = cap;
        }
        rec = c->n_rec++;
        c->rec[rec] = (onnx_inline_call){prefix, call->op_type, call->domain, c->out.n, c->out.n, depth};
    }
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        const ctosa_onnx_node *b = &f->nodes[i];
        ctosa_onnx_node nn = *b;
        nn.name = b->name[0]              ? arena_printf(a, "%s/%s", prefix, b->name)
                  : body_name_taken(f, i) ? arena_printf(a, "%s/%s#%u", prefix, b->op_type, i)
                                          : arena_printf(a, "%s/%s", prefix, b->op_type);
        const char **ins = b->n_inputs ? arena_alloc(a, b->n_inputs * sizeof *ins) : NULL;
        const char **outs = b->n_outputs ? arena_alloc(a, b->n_outputs * sizeof *outs) : NULL;
        ctosa_onnx_attr *attrs = b->n_attrs ? arena_alloc(a, b->n_attrs * sizeof *attrs) : NULL;
        if (!nn.name || (b->n_inputs && !ins) || (b->n_outputs && !outs) || (b->n_attrs && !attrs))
            return ctosa_error_nomem();
        for (uint32_t k = 0; k < b->n_inputs; k++)
            if (!(ins[k] = map_name(c, f, call, prefix, b->inputs[k]))) return ctosa_error_nomem();
        for (uint32_t k = 0; k < b->n_outputs; k++)
            if (!(outs[k] = map_name(c, f, call, prefix, b->outputs[k]))) return ctosa_error_nomem();
        uint32_t na = 0;
        for (uint32_t k = 0; k < b->n_attrs; k++) {
            const ctosa_onnx_attr *ba = &b->attrs[k];
            if (!ba->ref_attr_name) {
                attrs[na++] = *ba;
                continue;
            }
            const ctosa_onnx_attr *src = ctosa_onnx_node_attr(call, ba->ref_attr_name);
            for (uint32_t d = 0; !src && d < f->n_attr_defaults; d++)
                if (!strcmp(f->attr_defaults[d].name, ba->ref_attr_name)) src = &f->attr_defaults[d];
            if (!src) continue; /* optional attribute not given */
            if (ba->type != CTOSA_ONNX_ATTR_UNDEFINED && src->type != ba->type)
                return ctosa_error_new(
                    CTOSA_ERR_FORMAT,
                    "%s: byte %llu: %s: attribute '%.200s' refers to '%.200s' of type %s, expected %s",
                    c->m->info.path, (unsigned long long)call->offset,
                    onnx_node_label(call, label, sizeof label), ba->name, ba->ref_attr_name,
                    ctosa_onnx_attr_type_name(src->type), ctosa_onnx_attr_type_name(ba->type));
            attrs[na] = *src;
            attrs[na].name = ba->name;
            attrs[na].ref_attr_name = NULL;
            na++;
        }
        nn.inputs = ins;
        nn.outputs = outs;
        nn.attrs = attrs;
        nn.n_attrs = na;
        ctosa_error *e = expand(c, &nn, depth + 1, -1);
        if (e) return e;
    }
    if (rec != UINT32_MAX) c->rec[rec].end = c->out.n;
    return NULL;
}

static ctosa_error *expand(inl_ctx *c, const ctosa_onnx_node *n, uint32_t depth, int32_t orig) {
    const ctosa_onnx_function *f = find_fn(c->m, n);
    return f ? expand_call(c, f, n, depth) : push(c, n, orig);
}

/* Rebuilds the subgraph attributes of one (already expanded) node. */
static ctosa_error *inline_graph(inl_ctx *c, const ctosa_onnx_graph *g, const ctosa_onnx_graph *parent,
                                 const ctosa_onnx_graph **out);

static ctosa_error *inline_subgraphs(inl_ctx *c, ctosa_onnx_node *n, const ctosa_onnx_graph *owner) {
    bool any = false;
    for (uint32_t k = 0; k < n->n_attrs; k++)
        any |= n->attrs[k].type == CTOSA_ONNX_ATTR_GRAPH || n->attrs[k].type == CTOSA_ONNX_ATTR_GRAPHS;
    if (!any) return NULL;
    arena *a = &c->m->a;
    ctosa_onnx_attr *attrs = arena_memdup(a, n->attrs, n->n_attrs * sizeof *attrs);
    if (!attrs) return ctosa_error_nomem();
    for (uint32_t k = 0; k < n->n_attrs; k++) {
        ctosa_onnx_attr *at = &attrs[k];
        ctosa_error *e;
        if (at->type == CTOSA_ONNX_ATTR_GRAPH && at->g) {
            if ((e = inline_graph(c, at->g, owner, &at->g))) return e;
        } else if (at->type == CTOSA_ONNX_ATTR_GRAPHS && at->count) {
            const ctosa_onnx_graph **gs = arena_alloc(a, at->count * sizeof *gs);
            if (!gs) return ctosa_error_nomem();
            for (uint32_t j = 0; j < at->count; j++)
                if ((e = inline_graph(c, at->graphs[j], owner, &gs[j]))) return e;
            at->graphs = gs;
        }
    }
    n->attrs = attrs;
    return NULL;
}

/* A copy of g with every call expanded, in g's subgraphs too. */
static ctosa_error *inline_graph(inl_ctx *c, const ctosa_onnx_graph *g, const ctosa_onnx_graph *parent,
                                 const ctosa_onnx_graph **out) {
    ctosa_onnx_graph *ng = arena_alloc(&c->m->a, sizeof *ng);
    if (!ng) return ctosa_error_nomem();
    *ng = *g;
    ng->parent = parent;
    node_vec saved = c->out;
    const ctosa_onnx_node *saved_top = c->top;
    bool saved_track = c->track;
    c->out = (node_vec){0};
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < g->n_nodes && !e; i++) {
        c->top = &g->nodes[i];
        e = expand(c, &g->nodes[i], 0, (int32_t)i);
    }
    c->track = false; /* subgraphs are not tracked */
    node_vec mine = c->out;
    for (uint32_t i = 0; i < mine.n && !e; i++) e = inline_subgraphs(c, &mine.v[i], ng);
    if (!e && mine.n) {
        ctosa_onnx_node *nodes = arena_memdup(&c->m->a, mine.v, mine.n * sizeof *nodes);
        if (!nodes) e = ctosa_error_nomem();
        ng->nodes = nodes;
    }
    ng->n_nodes = mine.n;
    free(mine.v);
    c->out = saved;
    c->top = saved_top;
    c->track = saved_track;
    *out = ng;
    return e;
}

ctosa_error *ctosa_onnx_inline_functions(ctosa_onnx_model *m, const ctosa_onnx_graph **out) {
    *out = m->info.graph;
    if (m->info.n_functions == 0) return NULL;
    pthread_mutex_lock(&m->lock);
    ctosa_error *e = NULL;
    if (!m->inlined) {
        inl_ctx c = {.m = m, .max_depth = m->max_depth};
        const ctosa_onnx_graph *ng = NULL;
        e = inline_graph(&c, m->info.graph, NULL, &ng);
        if (!e) m->inlined = ng;
    }
    if (!e) *out = m->inlined;
    pthread_mutex_unlock(&m->lock);
    return e;
}

ctosa_error *onnx_inline_main_graph(ctosa_onnx_model *m, onnx_inline_main *out) {
    memset(out, 0, sizeof *out);
    out->g = m->info.graph;
    if (m->info.n_functions == 0 || !m->info.graph) return NULL;
    pthread_mutex_lock(&m->lock);
    inl_ctx c = {.m = m, .max_depth = m->max_depth, .track = true};
    const ctosa_onnx_graph *ng = NULL;
    ctosa_error *e = inline_graph(&c, m->info.graph, NULL, &ng);
    if (!e) {
        uint32_t n = ng->n_nodes;
        int32_t *orig = arena_alloc(&m->a, (n + 1) * sizeof *orig);
        onnx_inline_call *calls = arena_alloc(&m->a, (c.n_rec + 1) * sizeof *calls);
        if (orig && n) memcpy(orig, c.orig, n * sizeof *orig);
        if (calls && c.n_rec) memcpy(calls, c.rec, c.n_rec * sizeof *calls);
        if (!orig || !calls) {
            e = ctosa_error_nomem();
        } else {
            out->g = ng;
            out->orig = orig;
            out->calls = calls;
            out->n_calls = c.n_rec;
        }
    }
    free(c.orig);
    free(c.rec);
    pthread_mutex_unlock(&m->lock);
    return e;
}
