/* lower_core.c - the lowering session: the value table (graph inputs,
 * initializers, --bind, --shape, node outputs), the per-node support
 * decision (lower into a scratch graph, validate against the spec), and
 * folding of nodes whose inputs are all constants (lower under a permissive
 * spec, run on the interpreter, keep the outputs as constants).
 *
 * Nodes are visited once, in the model's order, which the ONNX spec
 * requires to be topological; a node that uses a value before it is
 * produced makes the model malformed (exit 2). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfile/tensorfile.h"
#include "lower/lower_internal.h"
#include "lower/quant/lower_qdq.h"
#include "onnx/onnx_inline.h"
#include "onnx/onnx_internal.h"
#include "lower/core/shape_infer.h"
#include "tosa/graph_internal.h"

/* Folded outputs larger than this stay runtime operators (a partition
 * computes them instead of the report carrying megabytes of constants). */
#define FOLD_MAX_BYTES ((uint64_t)64 << 20)

lw_val *lw_lookup(lower_session *s, const char *name) {
    return name && name[0] ? strmap_get(&s->vals, name) : NULL;
}

/* The session's arena, the result's, and the ONNX model's (parsed nodes
 * and initializers decoded on demand; raw weights stay in the mapping). */
static uint64_t budget_used(const lower_session *s) {
    return (uint64_t)s->a.total + (s->extra ? (uint64_t)s->extra->total : 0) +
           (s->m ? (uint64_t)s->m->a.total : 0);
}

uint64_t lw_budget_left(const lower_session *s) {
    uint64_t used = budget_used(s);
    return used < s->max_memory ? s->max_memory - used : 0;
}

bool lw_budget_ok(lower_session *s, uint64_t more, const char *what) {
    uint64_t used = budget_used(s), total;
    if (!s->max_memory || (add_u64(used, more, &total) && total <= s->max_memory)) return true;
    if (!s->limit_err)
        s->limit_err =
            ctosa_error_new(CTOSA_ERR_LIMIT,
                            "%s: lowering needs more than %" PRIu64 " bytes (%s), which passes the "
                            "memory limit of %" PRIu64 " bytes (raise it with --max-memory)",
                            s->model_path, used + (more > UINT64_MAX - used ? 0 : more), what, s->max_memory);
    return false;
}

/* Counts what the limits refused too: a node that asked for more than the
 * budget left must fail the budget check, not pass as a lowering error. */
uint64_t lw_graph_bytes(const ctosa_graph *g) {
    return g ? (uint64_t)g->arena.total + (uint64_t)g->arena.refused : 0;
}

void lw_ctx_init(lower_ctx *c, lower_session *s, const ctosa_spec *spec, uint32_t ni, ctosa_graph *g,
                 ctosa_block *b, arena *scratch, strmap *tmap, strmap *reserved, uint32_t *counter) {
    memset(c, 0, sizeof *c);
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    c->s = s;
    c->spec = spec;
    c->node = n;
    c->node_index = ni;
    c->label = s->nodes[ni].label;
    c->g = g;
    c->b = b;
    c->scratch = scratch;
    c->tmap = tmap;
    c->reserved = reserved;
    c->counter = counter;
    c->in_cache = arena_zalloc(scratch, (n->n_inputs + 1) * sizeof *c->in_cache);
    c->out_names = arena_zalloc(scratch, (n->n_outputs + 1) * sizeof *c->out_names);
    c->out_const = arena_zalloc(scratch, (n->n_outputs + 1) * sizeof *c->out_const);
    c->out_is_const = arena_zalloc(scratch, (n->n_outputs + 1) * sizeof *c->out_is_const);
    if (!c->in_cache || !c->out_names || !c->out_const || !c->out_is_const)
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
}

ctosa_error *lw_add_placeholder(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype t,
                                const lower_value *v) {
    int32_t s32[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < v->rank; i++) {
        if (v->shape[i] < 0 || v->shape[i] > INT32_MAX)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "tensor '%s': dimension %u is %lld", name, i,
                                   (long long)v->shape[i]);
        s32[i] = (int32_t)v->shape[i];
    }
    ctosa_error *e = ctosa_block_add_tensor(g, b, name, t, v->rank, s32, NULL);
    if (!e) e = ctosa_block_add_input(g, b, name);
    return e;
}

/* ------------------------------------------------------------ values */

static lw_val *new_val(lower_session *s, const char *name) {
    lw_val *v = arena_zalloc(&s->a, sizeof *v);
    if (!v) return NULL;
    v->v.name = name;
    v->producer = -1;
    v->fits_i32 = -1;
    if (!strmap_put(&s->vals, name, v)) return NULL;
    return v;
}

static void set_type_from(lower_session *s, lw_val *v, const ctosa_onnx_type *ty) {
    if (!ty || ty->kind != CTOSA_ONNX_TYPE_TENSOR || !ty->elem_type || !ty->has_shape ||
        ty->rank > LOWER_MAX_RANK)
        return;
    v->v.onnx_dtype = ty->elem_type;
    v->v.t = lw_dtype_for(&s->spec, ty->elem_type);
    if (ty->elem_type == CTOSA_ONNX_INT64 && !lw_spec_has_int64(&s->spec)) v->v.t = CTOSA_DTYPE_INT64;
    v->v.rank = ty->rank;
    v->v.static_shape = true;
    for (uint32_t i = 0; i < ty->rank; i++) {
        if (ty->dims[i].has_value && ty->dims[i].value >= 0) {
            v->v.shape[i] = ty->dims[i].value;
        } else {
            v->v.shape[i] = -1;
            v->v.static_shape = false;
        }
    }
    v->known = true;
}

static const ctosa_onnx_type *declared_type(lower_session *s, const char *name) {
    const ctosa_onnx_graph *g = s->g;
    for (uint32_t i = 0; i < g->n_value_infos; i++)
        if (strcmp(g->value_infos[i].name, name) == 0) return g->value_infos[i].type;
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (strcmp(g->outputs[i].name, name) == 0) return g->outputs[i].type;
    return NULL;
}

static ctosa_error *add_consumer(lower_session *s, lw_val *v, uint32_t ni) {
    if (v->n_consumers == v->cap_consumers) {
        uint32_t cap = v->cap_consumers ? v->cap_consumers * 2 : 4;
        uint32_t *n = arena_alloc(&s->a, cap * sizeof *n);
        if (!n) return ctosa_error_nomem();
        if (v->n_consumers) memcpy(n, v->consumers, v->n_consumers * sizeof *n);
        v->consumers = n;
        v->cap_consumers = cap;
    }
    v->consumers[v->n_consumers++] = ni;
    return NULL;
}

/* Names a subgraph (If/Loop/Scan body) uses from the enclosing scope: they
 * are implicit inputs of the node owning the subgraph. */
static ctosa_error *implicit_uses(lower_session *s, const ctosa_onnx_graph *sub, uint32_t ni,
                                  uint32_t depth) {
    if (depth > 64) return NULL;
    for (uint32_t k = 0; k < sub->n_nodes; k++) {
        const ctosa_onnx_node *n = &sub->nodes[k];
        for (uint32_t i = 0; i < n->n_inputs; i++) {
            lw_val *v = lw_lookup(s, n->inputs[i]);
            if (v) {
                ctosa_error *e = add_consumer(s, v, ni);
                if (e) return e;
            }
        }
        for (uint32_t a = 0; a < n->n_attrs; a++) {
            const ctosa_onnx_attr *at = &n->attrs[a];
            if (at->type == CTOSA_ONNX_ATTR_GRAPH && at->g) {
                ctosa_error *e = implicit_uses(s, at->g, ni, depth + 1);
                if (e) return e;
            }
            for (uint32_t j = 0; at->type == CTOSA_ONNX_ATTR_GRAPHS && j < at->count; j++) {
                ctosa_error *e = implicit_uses(s, at->graphs[j], ni, depth + 1);
                if (e) return e;
            }
        }
    }
    return NULL;
}

static char *fmt_shape(arena *a, const lower_value *v) {
    char buf[256];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "[");
    for (uint32_t i = 0; i < v->rank && n < sizeof buf; i++) {
        if (v->shape[i] < 0) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s?", i ? "," : "");
        else n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", i ? "," : "", (long long)v->shape[i]);
    }
    if (n < sizeof buf) snprintf(buf + n, sizeof buf - n, "]");
    return arena_strdup(a, buf);
}

/* A --bind file as an ONNX-typed constant. */
static ctosa_error *load_bind(lower_session *s, const ctosa_lower_bind *b, lw_val *v) {
    size_t len = strlen(b->file);
    bool pb = len >= 3 && strcmp(b->file + len - 3, ".pb") == 0;
    if (pb) {
        onnx_tensor_value t;
        ctosa_error *e = onnx_read_tensor_file(b->file, &s->a, &t);
        if (e) return ctosa_error_prefix(e, "--bind %s", b->name);
        if (t.rank > LOWER_MAX_RANK)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "--bind %s: %s has rank %u (at most %u)", b->name,
                                   b->file, t.rank, LOWER_MAX_RANK);
        if (v->known && v->v.onnx_dtype && v->v.onnx_dtype != t.dtype)
            return ctosa_error_new(CTOSA_ERR_USAGE, "--bind %s: %s holds %s but the input is %s", b->name,
                                   b->file, onnx_dtype_numpy_name(t.dtype),
                                   onnx_dtype_numpy_name(v->v.onnx_dtype));
        v->v.onnx_dtype = t.dtype;
        v->v.rank = t.rank;
        for (uint32_t i = 0; i < t.rank; i++) v->v.shape[i] = t.dims[i];
        v->v.data = t.data;
        v->v.nbytes = t.nbytes;
    } else {
        npy_array a;
        ctosa_error *e = npy_read_file(b->file, &a);
        if (e) return ctosa_error_prefix(e, "--bind %s", b->name);
        int32_t dt = CTOSA_ONNX_UNDEFINED;
        switch (a.kind) {
        case 'f':
            dt = a.itemsize == 4   ? CTOSA_ONNX_FLOAT
                 : a.itemsize == 2 ? CTOSA_ONNX_FLOAT16
                 : a.itemsize == 8 ? CTOSA_ONNX_DOUBLE
                                   : 0;
            break;
        case 'i':
            dt = a.itemsize == 1   ? CTOSA_ONNX_INT8
                 : a.itemsize == 2 ? CTOSA_ONNX_INT16
                 : a.itemsize == 4 ? CTOSA_ONNX_INT32
                                   : CTOSA_ONNX_INT64;
            break;
        case 'u':
            dt = a.itemsize == 1   ? CTOSA_ONNX_UINT8
                 : a.itemsize == 2 ? CTOSA_ONNX_UINT16
                 : a.itemsize == 4 ? CTOSA_ONNX_UINT32
                                   : CTOSA_ONNX_UINT64;
            break;
        case 'b': dt = CTOSA_ONNX_BOOL; break;
        case 'B': dt = CTOSA_ONNX_BFLOAT16; break;
        default: break;
        }
        int32_t want = v->known && v->v.onnx_dtype ? v->v.onnx_dtype : dt;
        if (a.rank > LOWER_MAX_RANK || !dt) {
            npy_free(&a);
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "--bind %s: %s: unsupported array (rank %u, %s)",
                                   b->name, b->file, a.rank, npy_kind_name(a.kind, a.itemsize));
        }
        uint64_t bytes = a.count * a.itemsize;
        void *copy = arena_memdup(&s->a, a.data ? a.data : "", bytes ? (size_t)bytes : 1);
        if (want != dt) {
            /* Same-kind integer widening/narrowing and float64 -> float32:
             * convert element by element, refusing values that change. */
            uint64_t out_bytes = 0;
            void *out = NULL;
            if (ctosa_onnx_dtype_storage(want, a.count, &out_bytes))
                out = arena_alloc(&s->a, (size_t)out_bytes + 1);
            bool ok = out != NULL;
            for (uint64_t k = 0; ok && k < a.count; k++) {
                const uint8_t *p = (const uint8_t *)a.data + k * a.itemsize;
                double d = 0;
                int64_t x = 0;
                bool isf = a.kind == 'f';
                if (isf && a.itemsize == 8) memcpy(&d, p, 8);
                else if (isf && a.itemsize == 4) {
                    float f;
                    memcpy(&f, p, 4);
                    d = f;
                } else if (a.kind == 'i' || a.kind == 'u' || a.kind == 'b') {
                    int64_t sx = 0;
                    uint64_t ux = 0;
                    for (uint32_t q = 0; q < a.itemsize; q++) ux |= (uint64_t)p[q] << (8 * q);
                    if (a.kind == 'i' && a.itemsize < 8 && (ux >> (8 * a.itemsize - 1)) & 1)
                        sx = (int64_t)(ux | (~(uint64_t)0 << (8 * a.itemsize)));
                    else sx = (int64_t)ux;
                    x = sx;
                    d = (double)sx;
                } else ok = false;
                uint8_t *o = (uint8_t *)out;
                switch (want) {
                case CTOSA_ONNX_FLOAT: {
                    float f = (float)d;
                    if (!isf && (double)f != d) ok = false;
                    memcpy(o + 4 * k, &f, 4);
                    break;
                }
                case CTOSA_ONNX_INT8:
                    if (isf || x < INT8_MIN || x > INT8_MAX) ok = false;
                    o[k] = (uint8_t)x;
                    break;
                case CTOSA_ONNX_INT16:
                    if (isf || x < INT16_MIN || x > INT16_MAX) ok = false;
                    wr_u16(o + 2 * k, (uint16_t)x);
                    break;
                case CTOSA_ONNX_INT32:
                    if (isf || x < INT32_MIN || x > INT32_MAX) ok = false;
                    wr_u32(o + 4 * k, (uint32_t)x);
                    break;
                case CTOSA_ONNX_INT64:
                    if (isf) ok = false;
                    wr_u64(o + 8 * k, (uint64_t)x);
                    break;
                case CTOSA_ONNX_BOOL:
                    if (isf || (x != 0 && x != 1)) ok = false;
                    o[k] = (uint8_t)x;
                    break;
                default: ok = false; break;
                }
            }
            if (!ok) {
                npy_free(&a);
                return ctosa_error_new(CTOSA_ERR_USAGE,
                                       "--bind %s: %s holds %s, which does not convert to the "
                                       "input's type %s",
                                       b->name, b->file, npy_kind_name(a.kind, a.itemsize),
                                       onnx_dtype_numpy_name(want));
            }
            copy = out;
            bytes = out_bytes;
        }
        v->v.onnx_dtype = want;
        v->v.rank = a.rank;
        for (uint32_t i = 0; i < a.rank; i++) v->v.shape[i] = a.shape[i];
        v->v.data = copy;
        v->v.nbytes = bytes;
        npy_free(&a);
        if (!copy) return ctosa_error_nomem();
    }
    /* The bound array must fit the declared shape (symbolic dims take it). */
    const ctosa_onnx_type *ty = NULL;
    for (uint32_t i = 0; i < s->g->n_inputs; i++)
        if (strcmp(s->g->inputs[i].name, b->name) == 0) ty = s->g->inputs[i].type;
    if (ty && ty->kind == CTOSA_ONNX_TYPE_TENSOR && ty->has_shape) {
        bool same = ty->rank == v->v.rank;
        for (uint32_t i = 0; same && i < ty->rank; i++)
            if (ty->dims[i].has_value && ty->dims[i].value != v->v.shape[i]) same = false;
        if (!same)
            return ctosa_error_new(CTOSA_ERR_USAGE,
                                   "--bind %s: %s has shape %s, which does not match the "
                                   "input's declared shape",
                                   b->name, b->file, fmt_shape(&s->a, &v->v));
    }
    v->v.t = lw_dtype_for(&s->spec, v->v.onnx_dtype);
    v->v.static_shape = true;
    v->known = true;
    v->bound = true;
    return NULL;
}

static ctosa_error *setup_values(lower_session *s, const ctosa_lower_options *opt) {
    const ctosa_onnx_graph *g = s->g;
    ctosa_error *e;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        const char *name = g->inputs[i].name;
        if (!name[0] || lw_lookup(s, name)) continue;
        lw_val *v = new_val(s, name);
        if (!v) return ctosa_error_nomem();
        v->graph_input = true;
        set_type_from(s, v, g->inputs[i].type);
    }
    for (uint32_t i = 0; i < g->n_initializers; i++) {
        const ctosa_onnx_tensor *t = &g->initializers[i];
        lw_val *v = lw_lookup(s, t->name);
        if (!v && !(v = new_val(s, t->name))) return ctosa_error_nomem();
        v->graph_input = false;
        v->initializer = true;
        if (t->rank > LOWER_MAX_RANK || t->dtype == CTOSA_ONNX_STRING) {
            v->known = false;
            continue;
        }
        const void *data = NULL;
        uint64_t nbytes = 0;
        if ((e = ctosa_onnx_tensor_data(s->m, t, &data, &nbytes))) return e;
        v->v.onnx_dtype = t->dtype;
        v->v.t = lw_dtype_for(&s->spec, t->dtype);
        v->v.rank = t->rank;
        for (uint32_t k = 0; k < t->rank; k++) v->v.shape[k] = t->dims[k];
        v->v.static_shape = true;
        v->v.data = nbytes ? data : "";
        v->v.nbytes = nbytes;
        v->known = true;
    }
    for (uint32_t i = 0; opt && i < opt->n_shapes; i++) {
        const ctosa_lower_shape *sh = &opt->shapes[i];
        lw_val *v = lw_lookup(s, sh->name);
        if (!v || !v->graph_input)
            return ctosa_error_new(CTOSA_ERR_USAGE, "--shape %s: the model has no graph input '%s'", sh->name,
                                   sh->name);
        if (sh->rank > LOWER_MAX_RANK)
            return ctosa_error_new(CTOSA_ERR_USAGE, "--shape %s: rank %u is more than %u", sh->name, sh->rank,
                                   LOWER_MAX_RANK);
        if (v->known && v->v.rank != sh->rank)
            return ctosa_error_new(CTOSA_ERR_USAGE, "--shape %s: rank %u, but the input has rank %u %s",
                                   sh->name, sh->rank, v->v.rank, fmt_shape(&s->a, &v->v));
        for (uint32_t k = 0; k < sh->rank; k++) {
            if (sh->dims[k] < 0)
                return ctosa_error_new(CTOSA_ERR_USAGE, "--shape %s: dimension %u is negative", sh->name, k);
            if (v->known && v->v.shape[k] >= 0 && v->v.shape[k] != sh->dims[k])
                return ctosa_error_new(CTOSA_ERR_USAGE,
                                       "--shape %s: dimension %u is %lld in the model, not %lld", sh->name, k,
                                       (long long)v->v.shape[k], (long long)sh->dims[k]);
            v->v.shape[k] = sh->dims[k];
        }
        v->v.rank = sh->rank;
        v->v.static_shape = true;
        if (!v->known) {
            /* Without a declared type there is nothing to lower with. */
            return ctosa_error_new(CTOSA_ERR_USAGE, "--shape %s: the input has no declared element type",
                                   sh->name);
        }
    }
    for (uint32_t i = 0; opt && i < opt->n_binds; i++) {
        const ctosa_lower_bind *b = &opt->binds[i];
        lw_val *v = lw_lookup(s, b->name);
        if (!v || !v->graph_input)
            return ctosa_error_new(CTOSA_ERR_USAGE, "--bind %s: the model has no graph input '%s'%s", b->name,
                                   b->name, v && v->initializer ? " (it is an initializer)" : "");
        if ((e = load_bind(s, b, v))) return e;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        lw_val *v = lw_lookup(s, g->outputs[i].name);
        if (v) v->graph_output = true;
    }
    return NULL;
}

/* ------------------------------------------------------------- decisions */

static void node_fallback(lower_session *s, uint32_t ni, lower_code code, const char *input, const char *fmt,
                          ...) __attribute__((format(printf, 5, 6)));
static void node_fallback(lower_session *s, uint32_t ni, lower_code code, const char *input, const char *fmt,
                          ...) {
    lw_nodeinfo *n = &s->nodes[ni];
    n->kind = LW_NODE_FALLBACK;
    n->code = code;
    n->input = input ? arena_strdup(&s->a, input) : NULL;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    n->reason = arena_strdup(&s->a, buf);
}

/* The first line of a validator message, with the scratch graph's "op #N"
 * dropped and the count of further lines appended. */
static const char *validator_reason(arena *a, const char *msg) {
    const char *nl = strchr(msg, '\n');
    size_t n = nl ? (size_t)(nl - msg) : strlen(msg);
    uint32_t more = 0;
    for (const char *p = nl; p; p = strchr(p + 1, '\n'))
        if (p[1]) more++;
    const char *start = msg;
    if (strncmp(start, "op #", 4) == 0) {
        const char *sp = strchr(start + 4, ' ');
        if (sp && sp < msg + n) {
            n -= (size_t)(sp + 1 - start);
            start = sp + 1;
        }
    }
    if (more)
        return arena_printf(a, "TOSA %.*s (and %u more problem%s)", (int)n, start, more, more > 1 ? "s" : "");
    return arena_printf(a, "TOSA %.*s", (int)n, start);
}

static bool graph_uses_dtype(const ctosa_graph *g, ctosa_dtype t) {
    for (uint32_t r = 0; r < ctosa_graph_region_count(g); r++) {
        const ctosa_region *rg = ctosa_graph_region(g, r);
        for (uint32_t bi = 0; bi < rg->n_blocks; bi++)
            for (uint32_t i = 0; i < rg->blocks[bi]->n_tensors; i++)
                if (rg->blocks[bi]->tensors[i]->dtype == t) return true;
    }
    return false;
}

/* Integer operand widths that differ among the inputs of a type signature
 * the spec refused (e.g. an i8 and an i16 operand). */
static bool mixed_widths(const ctosa_diag *d) {
    unsigned seen = 0;
    for (uint32_t i = 0; i < d->n_inputs; i++) {
        switch (d->types[i]) {
        case CTOSA_DTYPE_INT8: seen |= 1u; break;
        case CTOSA_DTYPE_INT16: seen |= 2u; break;
        case CTOSA_DTYPE_INT32: seen |= 4u; break;
        case CTOSA_DTYPE_INT48: seen |= 8u; break;
        case CTOSA_DTYPE_INT64: seen |= 16u; break;
        default: break;
        }
    }
    return __builtin_popcount(seen) > 1;
}

/* The reason code of a validator failure, from the kind and fields of its
 * first diagnostic (never from the text). */
lower_code lw_map_validator(const ctosa_graph *g, const ctosa_spec *spec, const ctosa_diags *ds) {
    const ctosa_diag *d = ctosa_diags_at(ds, 0);
    if (!d) return LOWER_NOT_IN_SPEC;
    switch (d->kind) {
    case CTOSA_DIAG_LEVEL_LIMIT: return LOWER_LEVEL_LIMIT;
    case CTOSA_DIAG_TYPES:
        if (!lw_spec_has_int64(spec) && graph_uses_dtype(g, CTOSA_DTYPE_INT64))
            return LOWER_INT64_NOT_ENABLED;
        return mixed_widths(d) ? LOWER_MIXED_WIDTH : LOWER_NOT_IN_SPEC;
    case CTOSA_DIAG_STRUCTURE:
    case CTOSA_DIAG_NOT_IN_VERSION:
    case CTOSA_DIAG_OPERAND_COUNT:
    case CTOSA_DIAG_EXTENSION:
    case CTOSA_DIAG_NOT_CONSTANT:
    case CTOSA_DIAG_RANK:
    case CTOSA_DIAG_ERROR_IF:
    case CTOSA_DIAG_U55: return LOWER_NOT_IN_SPEC;
    }
    return LOWER_NOT_IN_SPEC;
}

/* A scratch graph with region/block "main". */
static ctosa_error *scratch_graph(ctosa_version v, ctosa_graph **g, ctosa_block **b) {
    ctosa_region *r;
    ctosa_error *e = ctosa_graph_create(v, g);
    if (!e) e = ctosa_graph_add_region(*g, "main", &r);
    if (!e) e = ctosa_region_add_block(*g, r, "main", b);
    return e;
}

static int32_t output_onnx_dtype(lower_session *s, const ctosa_onnx_node *n, uint32_t i, ctosa_dtype t);

/* Records the outputs of node ni from a finished context. */
static ctosa_error *record_outputs(lower_session *s, uint32_t ni, lower_ctx *c, bool all_const_ok) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        const char *on = n->outputs[i];
        if (!on[0]) continue;
        lw_val *v = lw_lookup(s, on);
        if (!v) return ctosa_error_new(CTOSA_ERR_INTERNAL, "value '%s' missing", on);
        if (c->out_is_const[i]) {
            const lower_value *cv = &c->out_const[i];
            void *d = arena_memdup(&s->a, cv->data, cv->nbytes ? (size_t)cv->nbytes : 1);
            if (!d) return ctosa_error_nomem();
            v->v.onnx_dtype = cv->onnx_dtype;
            v->v.t = lw_dtype_for(&s->spec, cv->onnx_dtype);
            v->v.rank = cv->rank;
            memcpy(v->v.shape, cv->shape, sizeof v->v.shape);
            v->v.static_shape = true;
            v->v.data = d;
            v->v.nbytes = cv->nbytes;
            v->known = true;
        } else {
            const ctosa_tensor *t = ctosa_block_find_tensor(c->g, c->b, c->out_names[i]);
            if (!t) return ctosa_error_new(CTOSA_ERR_INTERNAL, "output tensor of '%s' missing", on);
            v->v.onnx_dtype = output_onnx_dtype(s, n, i, t->dtype);
            v->v.t = t->dtype;
            v->v.rank = t->rank;
            for (uint32_t k = 0; k < t->rank; k++) v->v.shape[k] = t->shape[k];
            v->v.static_shape = true;
            v->v.data = NULL;
            v->known = true;
        }
    }
    (void)all_const_ok;
    return NULL;
}

static bool narrowed_int64(lower_session *s, const ctosa_onnx_node *n, uint32_t out);

/* ONNX dtype of a runtime output carried in TOSA dtype t: the declared
 * one, else int64 for an int64 result carried in int32 (no int64 in the
 * spec), else the one t carries. */
static int32_t output_onnx_dtype(lower_session *s, const ctosa_onnx_node *n, uint32_t i, ctosa_dtype t) {
    const ctosa_onnx_type *ty = declared_type(s, n->outputs[i]);
    if (ty && ty->kind == CTOSA_ONNX_TYPE_TENSOR && ty->elem_type) return ty->elem_type;
    if (t == CTOSA_DTYPE_INT32 && !lw_spec_has_int64(&s->spec) && narrowed_int64(s, n, i))
        return CTOSA_ONNX_INT64;
    return lw_onnx_of_tosa(t);
}

/* Types and shapes (no values) of the outputs of a node that falls back
 * although its lowering ran: its consumers then get a precise reason
 * instead of input_not_available. The model's declarations still win
 * (record_declared runs afterwards). */
static void record_types(lower_session *s, uint32_t ni, lower_ctx *c) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        lw_val *v = lw_lookup(s, n->outputs[i]);
        const ctosa_tensor *t = c->out_names[i] ? ctosa_block_find_tensor(c->g, c->b, c->out_names[i]) : NULL;
        if (!v || !t || t->rank > LOWER_MAX_RANK) continue;
        v->v.onnx_dtype = output_onnx_dtype(s, n, i, t->dtype);
        v->v.t = v->v.onnx_dtype == CTOSA_ONNX_INT64 && !lw_spec_has_int64(&s->spec) ? CTOSA_DTYPE_INT64
                                                                                     : t->dtype;
        v->v.rank = t->rank;
        for (uint32_t k = 0; k < t->rank; k++) v->v.shape[k] = t->shape[k];
        v->v.static_shape = true;
        v->v.data = NULL;
        v->known = true;
    }
}

/* Outputs of a fallback node: whatever the model declares; dimensions the
 * declaration leaves symbolic keep the static size the lowering computed
 * (record_types; e.g. after --shape). */
static void record_declared(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        lw_val *v = lw_lookup(s, n->outputs[i]);
        if (!v) continue;
        lower_value old = v->v;
        bool had = v->known && old.static_shape;
        set_type_from(s, v, declared_type(s, n->outputs[i]));
        if (!had || v->v.static_shape || v->v.rank != old.rank || v->v.onnx_dtype != old.onnx_dtype) continue;
        bool same = true;
        for (uint32_t k = 0; k < old.rank; k++) same &= v->v.shape[k] < 0 || v->v.shape[k] == old.shape[k];
        if (!same) continue;
        memcpy(v->v.shape, old.shape, sizeof old.shape);
        v->v.static_shape = true;
    }
}

/* Lowers node ni into a fresh scratch graph under spec. Non-constant inputs
 * become placeholders. On success *gout holds the graph (caller frees) and
 * the context is filled; returns false when the lowering rejected (reason
 * in the context). */
static bool lower_scratch(lower_session *s, uint32_t ni, const ctosa_spec *spec, arena *scratch, strmap *tmap,
                          lower_ctx *c, ctosa_graph **gout, const lower_entry *ent) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    ctosa_graph *g = NULL;
    ctosa_block *b = NULL;
    uint32_t counter = 0;
    ctosa_error *e = scratch_graph(spec->version, &g, &b);
    *gout = g;
    /* What the node may allocate is bounded by what the budget leaves, so
     * that a hostile shape (an interpolation matrix of 2^28 entries, say)
     * fails the budget check below instead of the machine's memory. */
    if (s->max_memory) {
        uint64_t left = lw_budget_left(s);
        size_t cap = left == 0 ? 1 : left > SIZE_MAX ? SIZE_MAX : (size_t)left;
        scratch->limit = cap;
        if (g) g->arena.limit = cap;
    }
    lw_ctx_init(c, s, spec, ni, g, b, scratch, tmap, NULL, &counter);
    c->counter = arena_zalloc(scratch, sizeof *c->counter);
    if (e || !c->counter) {
        lw_fail(c, LOWER_INTERNAL, NULL, "%s", e ? ctosa_error_message(e) : "out of memory");
        ctosa_error_free(e);
        return false;
    }
    for (uint32_t i = 0; i < n->n_inputs && !c->rejected; i++) {
        if (!n->inputs[i][0]) continue;
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (v->v.data || strmap_has(tmap, n->inputs[i])) continue;
        e = lw_add_placeholder(g, b, n->inputs[i], v->v.t, &v->v);
        if (e) {
            lw_fail(c, LOWER_INTERNAL, n->inputs[i], "%s", ctosa_error_message(e));
            ctosa_error_free(e);
            return false;
        }
        strmap_put(tmap, n->inputs[i], (void *)n->inputs[i]);
    }
    if (c->rejected) return false;
    lower_status st = ent->fn(c);
    if (st != LOWER_OK && !c->rejected)
        lw_fail(c, LOWER_INTERNAL, NULL, "the lowering rejected the node without a reason");
    if (c->rejected) return false;
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        if (!n->outputs[i][0]) continue;
        if (!c->out_is_const[i] && !c->out_names[i]) {
            lw_fail(c, LOWER_INTERNAL, NULL, "the lowering did not produce output %u '%s'", i, n->outputs[i]);
            return false;
        }
        if (c->out_names[i]) {
            bool dup = false;
            for (uint32_t k = 0; k < b->n_outputs; k++) dup |= strcmp(b->outputs[k], c->out_names[i]) == 0;
            if (!dup && (e = ctosa_block_add_output(g, b, c->out_names[i]))) {
                lw_fail(c, LOWER_INTERNAL, NULL, "%s", ctosa_error_message(e));
                ctosa_error_free(e);
                return false;
            }
        }
    }
    return true;
}

/* Folds node ni (all inputs constant): lowers it under the permissive spec
 * and runs it. Returns true when every output became a constant. */
/* Would an INT32 result of node n be an ONNX int64 under a spec without
 * int64 (which narrows int64 constants to int32)? The declared type says
 * so, or Cast's `to`, or (shape arithmetic) an int64 input and no int32
 * input. */
static bool narrowed_int64(lower_session *s, const ctosa_onnx_node *n, uint32_t out) {
    const ctosa_onnx_type *ty = declared_type(s, n->outputs[out]);
    if (ty && ty->kind == CTOSA_ONNX_TYPE_TENSOR && ty->elem_type) return ty->elem_type == CTOSA_ONNX_INT64;
    if (strcmp(n->op_type, "Cast") == 0) {
        const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, "to");
        return a && a->i == CTOSA_ONNX_INT64;
    }
    /* Operators whose output is int64 whatever their inputs. */
    static const char *const always[] = {"ArgMax", "ArgMin", "Shape", "Size", "NonZero"};
    for (size_t k = 0; k < sizeof always / sizeof *always; k++)
        if (strcmp(n->op_type, always[k]) == 0) return out == 0;
    if (strcmp(n->op_type, "TopK") == 0) return out == 1;
    if (strcmp(n->op_type, "CastLike") == 0 && n->n_inputs > 1) {
        lw_val *v = lw_lookup(s, n->inputs[1]);
        return v && v->v.onnx_dtype == CTOSA_ONNX_INT64;
    }
    bool i64 = false, i32 = false;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (!v) continue;
        i64 |= v->v.onnx_dtype == CTOSA_ONNX_INT64;
        i32 |= v->v.onnx_dtype == CTOSA_ONNX_INT32;
    }
    return i64 && !i32;
}

static bool try_fold_spec(lower_session *s, uint32_t ni, const lower_entry *ent, const ctosa_spec *spec);

/* Folding runs under a permissive spec with int64; when a lowering's int64
 * form does not validate there, it is retried with int64 values narrowed
 * to int32 (shape arithmetic fits). */
static bool try_fold(lower_session *s, uint32_t ni, const lower_entry *ent) {
    if (try_fold_spec(s, ni, ent, &s->fold_spec)) return true;
    ctosa_spec narrow = s->fold_spec;
    narrow.extensions &= ~(CTOSA_EXT_BIT(INT64) | CTOSA_EXT_BIT(SHAPE));
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (v && v->v.onnx_dtype == CTOSA_ONNX_INT64 && v->v.data && !lw_int64_fits(s, v)) return false;
    }
    return try_fold_spec(s, ni, ent, &narrow);
}

/* Folding keeps a node's outputs in memory for the whole session and puts
 * them into the TOSA file. For weight-sized values both grow with the
 * model: an expanding fold (DequantizeLinear of int8 weights, a Cast up,
 * Expand) makes the file bigger than computing the value at run time, and
 * folding a large weight (a Transpose of it) pulls it through memory. So a
 * node is left to run time when an output passes FOLD_MAX_BYTES, or when
 * its outputs pass FOLD_SMALL_BYTES and either grow past its constant
 * inputs or its constant inputs pass FOLD_LARGE_INPUT. Checked on the
 * lowered scratch graph, before anything runs. */
#define FOLD_SMALL_BYTES ((uint64_t)256 << 10)
#define FOLD_LARGE_INPUT ((uint64_t)16 << 20)
static bool fold_too_big(lower_session *s, const ctosa_onnx_node *n, const lower_ctx *c) {
    uint64_t in = 0, out = 0;
    /* Weights that their consumers read as constants (a quantized group's
     * head, a convolution) are folded. */
    if (s->qdq && qdq_dq_gives_constant(s, c->node_index)) return false;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        lw_val *v = n->inputs[i][0] ? lw_lookup(s, n->inputs[i]) : NULL;
        if (v && v->v.data) in += v->v.nbytes;
    }
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        if (!c->out_names[i]) continue;
        const ctosa_tensor *t = ctosa_block_find_tensor(c->g, c->b, c->out_names[i]);
        uint64_t cnt, bytes;
        if (!t || !ctosa_tensor_elements(t, &cnt) || !ctosa_dtype_storage_size(t->dtype, cnt, &bytes))
            return true;
        if (bytes > FOLD_MAX_BYTES) return true;
        out += bytes;
    }
    return out > FOLD_SMALL_BYTES && (out > in || in > FOLD_LARGE_INPUT);
}

/* The ONNX type of folded output i, carried in TOSA dtype t. */
static int32_t folded_onnx_type(lower_session *s, const ctosa_onnx_node *n, uint32_t i, ctosa_dtype t,
                                const ctosa_spec *spec) {
    const ctosa_onnx_type *ty = declared_type(s, n->outputs[i]);
    if (t == CTOSA_DTYPE_INT32 && narrowed_int64(s, n, i) &&
        ((ty && ty->kind == CTOSA_ONNX_TYPE_TENSOR && ty->elem_type == CTOSA_ONNX_INT64) ||
         !lw_spec_has_int64(spec)))
        return CTOSA_ONNX_INT64;
    return lw_onnx_of_tosa(t);
}

/* Every output of the lowered node has no element (a Split of the empty
 * result of a NonZero, say): TOSA has no empty tensors, so the operators
 * would not validate, but the values are known: they are bound as empty
 * constants. */
static bool fold_empty(lower_session *s, const ctosa_onnx_node *n, lower_ctx *c, const ctosa_spec *spec) {
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        if (!c->out_names[i]) continue;
        const ctosa_tensor *t = ctosa_block_find_tensor(c->g, c->b, c->out_names[i]);
        uint64_t cnt;
        if (!t || !ctosa_tensor_elements(t, &cnt) || cnt != 0 || t->rank > LOWER_MAX_RANK ||
            !folded_onnx_type(s, n, i, t->dtype, spec))
            return false;
    }
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        if (!c->out_names[i]) continue;
        const ctosa_tensor *t = ctosa_block_find_tensor(c->g, c->b, c->out_names[i]);
        int64_t shape[LOWER_MAX_RANK];
        for (uint32_t d = 0; d < t->rank; d++) shape[d] = t->shape[d];
        static const uint8_t none[1];
        lw_set_output_const(c, i, folded_onnx_type(s, n, i, t->dtype, spec), t->rank, shape, none, 0);
    }
    return true;
}

static bool try_fold_spec(lower_session *s, uint32_t ni, const lower_entry *ent, const ctosa_spec *spec) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    arena scratch;
    arena_init(&scratch, 0);
    strmap tmap;
    strmap_init(&tmap);
    lower_ctx c;
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    bool ok = lower_scratch(s, ni, spec, &scratch, &tmap, &c, &g, ent);
    bool any_tensor = false;
    for (uint32_t i = 0; ok && i < n->n_outputs; i++) any_tensor |= c.out_names[i] != NULL;
    if (ok && any_tensor && fold_too_big(s, n, &c)) {
        if (s->debug)
            fprintf(s->debug, "ctosa lower: not folding '%s': its values are weight-sized\n",
                    s->nodes[ni].label);
        ok = false;
    }
    if (ok && any_tensor && fold_empty(s, n, &c, spec)) {
        any_tensor = false; /* bound: nothing to validate or run */
    } else if (ok && any_tensor) {
        ctosa_error *e = ctosa_validate(g, spec, NULL);
        ctosa_interp_options io;
        ctosa_interp_options_init(&io);
        io.threads = 1;
        /* A hostile model can ask to fold e.g. ConstantOfShape([1e5, 1e5]):
         * cap what one fold may allocate instead of the machine's memory. */
        io.max_memory = 16 * FOLD_MAX_BYTES;
        /* ...and never more than what the session's --max-memory leaves. */
        uint64_t left = lw_budget_left(s);
        if (s->max_memory && left < io.max_memory) io.max_memory = left ? left : 1;
        if (!e) e = ctosa_interp_create(g, &io, &it);
        if (!e) e = ctosa_interp_run(it);
        for (uint32_t i = 0; !e && i < n->n_outputs; i++) {
            if (!c.out_names[i]) continue;
            ctosa_interp_tensor t;
            e = ctosa_interp_get_output(it, c.out_names[i], &t);
            if (e) break;
            if (t.size > FOLD_MAX_BYTES || t.rank > LOWER_MAX_RANK) {
                e = ctosa_error_new(CTOSA_ERR_LIMIT, "folded output too large");
                break;
            }
            int32_t od = folded_onnx_type(s, n, i, t.dtype, spec);
            void *data = t.data;
            uint64_t nbytes = t.size;
            if (t.dtype == CTOSA_DTYPE_INT32 && od == CTOSA_ONNX_INT64) {
                uint8_t *w = arena_alloc(&scratch, (size_t)t.count * 8 + 1);
                if (!w) {
                    e = ctosa_error_nomem();
                    break;
                }
                for (uint64_t k = 0; k < t.count; k++)
                    wr_u64(w + 8 * k, (uint64_t)(int64_t)((int32_t *)t.data)[k]);
                data = w;
                nbytes = t.count * 8;
            }
            if (!od) {
                e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "folded output type");
                break;
            }
            lw_set_output_const(&c, i, od, t.rank, t.shape, data, nbytes);
        }
        if (e) {
            ok = false;
            if (s->debug)
                fprintf(s->debug, "ctosa lower: folding '%s' failed: %s\n", s->nodes[ni].label,
                        ctosa_error_message(e));
            ctosa_error_free(e);
        }
    } else if (!ok && s->debug) {
        fprintf(s->debug, "ctosa lower: folding '%s' rejected: %s\n", s->nodes[ni].label,
                c.msg ? c.msg : "?");
    }
    if (ok && !c.rejected) {
        for (uint32_t i = 0; i < n->n_outputs; i++)
            if (n->outputs[i][0] && !c.out_is_const[i]) ok = false;
        if (ok) {
            ctosa_error *e = record_outputs(s, ni, &c, true);
            if (e) {
                ok = false;
                ctosa_error_free(e);
            }
        }
    } else {
        ok = false;
    }
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    strmap_free(&tmap);
    arena_free(&scratch);
    return ok;
}

static void decide_node(lower_session *s, uint32_t ni) {
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    lw_nodeinfo *nd = &s->nodes[ni];
    bool default_domain = !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
    const lower_entry *ent = lower_find(
        n->domain, n->op_type, default_domain ? s->opset : ctosa_onnx_opset_version(s->m, n->domain));
    const lower_entry *qent = qdq_entry(s, ni);
    if (qent) ent = qent;
    const lower_entry *cent = lw_custom_find(s, ni); /* registered custom ops win */
    if (cent) ent = cent;
    if (!ent) {
        if (!default_domain)
            node_fallback(s, ni, LOWER_UNREGISTERED_CUSTOM, NULL,
                          "%s (domain '%s') has no TOSA lowering and no plugin registers it (load one "
                          "with --plugin LIB.so, or declare it with --custom-ops FILE.json)",
                          n->op_type, n->domain);
        else
            node_fallback(s, ni, LOWER_UNSUPPORTED_OP, NULL, "%s has no TOSA lowering%s", n->op_type,
                          lower_find(n->domain, n->op_type, -1) ? " for this opset" : "");
        return;
    }
    bool all_const = true;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i][0]) continue;
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (!v || !v->known) {
            const char *why = "its type and shape are not known";
            if (v && v->producer >= 0 && s->nodes[v->producer].kind == LW_NODE_FALLBACK)
                why = arena_printf(&s->a,
                                   "its producer '%s' stays on the CPU and the model declares no "
                                   "type and shape for it",
                                   s->nodes[v->producer].label);
            node_fallback(s, ni, LOWER_INPUT_FALLBACK, n->inputs[i], "input '%s': %s", n->inputs[i], why);
            return;
        }
        if (!v->v.data) all_const = false;
    }
    if (all_const && try_fold(s, ni, ent)) {
        nd->kind = LW_NODE_CONST;
        return;
    }
    const char *int64_in = NULL;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i][0]) continue;
        lw_val *v = lw_lookup(s, n->inputs[i]);
        if (v->v.data) continue;
        if (!v->v.static_shape) {
            node_fallback(
                s, ni, LOWER_DYNAMIC_SHAPE, n->inputs[i],
                "input '%s' has shape %s with dimensions that are not static (give them with --shape)",
                n->inputs[i], fmt_shape(&s->a, &v->v));
            return;
        }
        if (v->v.t == CTOSA_DTYPE_INT64 && !lw_spec_has_int64(&s->spec) && !int64_in)
            int64_in = n->inputs[i]; /* decided after the lowering: needs_constant says more */
        if (v->v.t == CTOSA_DTYPE_UNKNOWN) {
            const char *dn = onnx_dtype_numpy_name(v->v.onnx_dtype);
            node_fallback(s, ni, LOWER_UNSUPPORTED_DTYPE, n->inputs[i],
                          "input '%s' is %s, which TOSA has no type for", n->inputs[i],
                          dn ? dn : "of an unknown type");
            return;
        }
    }
    arena scratch;
    arena_init(&scratch, 0);
    strmap tmap;
    strmap_init(&tmap);
    lower_ctx c;
    ctosa_graph *g = NULL;
    bool ok = lower_scratch(s, ni, &s->spec, &scratch, &tmap, &c, &g, ent);
    char what[160];
    snprintf(what, sizeof what, "at node #%u '%.100s'", ni, s->nodes[ni].label);
    if (!lw_budget_ok(s, (uint64_t)scratch.total + scratch.refused + lw_graph_bytes(g), what)) {
        /* Lowering stops: ctosa_lower_file returns s->limit_err. */
    } else if (!ok) {
        node_fallback(s, ni, c.code, c.rej_input, "%s", c.msg ? c.msg : "rejected");
    } else if (int64_in) {
        node_fallback(s, ni, LOWER_INT64_NOT_ENABLED, int64_in,
                      "input '%s' is an int64 tensor computed at run time and the spec has no int64 "
                      "(needs TOSA-1.1 with +int64)",
                      int64_in);
        record_types(s, ni, &c);
    } else {
        ctosa_validate_options vo = {.max_problems = 8};
        ctosa_diags *ds = NULL;
        ctosa_error *e = ctosa_validate_diags(g, &s->spec, &vo, &ds);
        if (e) {
            const char *msg = ctosa_error_message(e);
            lower_code code = lw_map_validator(g, &s->spec, ds);
            const char *why = validator_reason(&s->a, msg);
            lw_int64_explain(g, &s->spec, n->op_type, &s->a, &code, &why);
            node_fallback(s, ni, code, NULL, "%s", why);
            record_types(s, ni, &c);
            ctosa_error_free(e);
            ctosa_diags_free(ds);
        } else {
            const ctosa_block *b = c.b;
            nd->n_ops = 0;
            for (uint32_t k = 0; k < b->n_ops; k++) {
                if (ctosa_op_has(b->ops[k]->kind, CTOSA_OPF_COMPUTES)) nd->compute = true;
                nd->n_ops++;
            }
            bool any_tensor = false;
            for (uint32_t i = 0; i < n->n_outputs; i++) any_tensor |= c.out_names[i] != NULL;
            e = record_outputs(s, ni, &c, false);
            if (e) {
                node_fallback(s, ni, LOWER_INTERNAL, NULL, "%s", ctosa_error_message(e));
                ctosa_error_free(e);
            } else {
                nd->kind = any_tensor ? LW_NODE_DELEGATED : LW_NODE_CONST;
            }
        }
    }
    ctosa_graph_free(g);
    strmap_free(&tmap);
    arena_free(&scratch);
}

static ctosa_error *session_open(lower_session *s, const char *model_path, const void *mem, uint64_t size,
                                 const ctosa_spec *spec, const ctosa_lower_options *opt);

ctosa_error *lw_session_open(lower_session *s, const char *model_path, const ctosa_spec *spec,
                             const ctosa_lower_options *opt) {
    return session_open(s, model_path, NULL, 0, spec, opt);
}

ctosa_error *lw_session_open_memory(lower_session *s, const void *mem, uint64_t size, const char *name,
                                    const ctosa_spec *spec, const ctosa_lower_options *opt) {
    return session_open(s, name, mem ? mem : "", size, spec, opt);
}

static ctosa_error *session_open(lower_session *s, const char *model_path, const void *mem, uint64_t size,
                                 const ctosa_spec *spec, const ctosa_lower_options *opt) {
    memset(s, 0, sizeof *s);
    arena_init(&s->a, 0);
    strmap_init(&s->vals);
    s->model_path = model_path;
    s->spec = *spec;
    memset(&s->fold_spec, 0, sizeof s->fold_spec);
    s->fold_spec.version = CTOSA_VERSION_1_1_DRAFT;
    s->fold_spec.profiles = CTOSA_PRO_INT | CTOSA_PRO_FP;
    s->fold_spec.extensions = CTOSA_EXT_BIT(INT16) | CTOSA_EXT_BIT(INT4) | CTOSA_EXT_BIT(BF16) |
                              CTOSA_EXT_BIT(FP8E4M3) | CTOSA_EXT_BIT(FP8E5M2) | CTOSA_EXT_BIT(INT64) |
                              CTOSA_EXT_BIT(SHAPE) | CTOSA_EXT_BIT(DOUBLEROUND) | CTOSA_EXT_BIT(INEXACTROUND);
    ctosa_error *e;
    if (mem) {
        void *copy = size ? arena_alloc(&s->a, (size_t)size) : NULL;
        if (size && !copy) return ctosa_error_nomem();
        if (size) memcpy(copy, mem, (size_t)size);
        e = ctosa_onnx_load_memory(copy ? copy : "", size, model_path, NULL, &s->m);
    } else {
        e = ctosa_onnx_load(model_path, NULL, &s->m);
    }
    if (e) return e;
    const ctosa_onnx_model_info *info = ctosa_onnx_info(s->m);
    if (!info->graph) return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: the model has no graph", model_path);
    /* Calls of model-local functions are expanded: the partitioner sees
     * their bodies' nodes (docs/lowering.md, "Model-local functions"). */
    onnx_inline_main im;
    if ((e = onnx_inline_main_graph(s->m, &im))) return e;
    s->g = im.g;
    s->inl_orig = im.orig;
    s->n_inl_calls = im.n_calls;
    s->inl_calls = im.calls;
    s->opset = ctosa_onnx_opset_version(s->m, "");
    if (s->opset < 0) s->opset = 1;
    s->n_nodes = s->g->n_nodes;
    s->nodes = arena_zalloc(&s->a, (s->n_nodes + 1) * sizeof *s->nodes);
    if (!s->nodes) return ctosa_error_nomem();
    /* Labels: node names, or "<op_type>#<index>" for unnamed (and
     * duplicate-named) nodes, so that every node is addressable. */
    strmap seen;
    strmap_init(&seen);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const ctosa_onnx_node *n = &s->g->nodes[i];
        const char *l =
            n->name[0] && !strmap_has(&seen, n->name) ? n->name : arena_printf(&s->a, "%s#%u", n->op_type, i);
        s->nodes[i].label = l;
        s->nodes[i].part = -1;
        s->nodes[i].group = (int32_t)i;
        if (!l || !strmap_put(&seen, l, (void *)l)) {
            strmap_free(&seen);
            return ctosa_error_nomem();
        }
    }
    strmap_free(&seen);
    s->max_memory = opt->max_memory ? opt->max_memory : CTOSA_LOWER_DEFAULT_MAX_MEMORY;
    s->requant_ort = opt->requant == CTOSA_REQUANT_MATCH_ORT;
    s->stream_min = opt->stream_transform_min ? opt->stream_transform_min : LW_LARGE_CONST_BYTES;
    s->no_layout = opt->no_layout;
    s->debug = opt->debug_log;
    s->keep_moves = opt->keep_data_movement;
    if ((e = setup_values(s, opt))) return e;
    if (!lw_budget_ok(s, 0, "decoding constants and bound inputs")) {
        e = s->limit_err;
        s->limit_err = NULL;
        return e;
    }
    /* Node outputs and consumers; topological order check. */
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const ctosa_onnx_node *n = &s->g->nodes[i];
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            if (!n->inputs[k][0]) continue;
            lw_val *v = lw_lookup(s, n->inputs[k]);
            if (!v)
                return ctosa_error_new(CTOSA_ERR_FORMAT,
                                       "%s: node #%u '%s' (%s) uses '%s' before any node produces "
                                       "it (nodes must be in topological order)",
                                       model_path, i, s->nodes[i].label, n->op_type, n->inputs[k]);
            if ((e = add_consumer(s, v, i))) return e;
        }
        for (uint32_t a = 0; a < n->n_attrs; a++) {
            const ctosa_onnx_attr *at = &n->attrs[a];
            if (at->type == CTOSA_ONNX_ATTR_GRAPH && at->g && (e = implicit_uses(s, at->g, i, 0))) return e;
            for (uint32_t j = 0; at->type == CTOSA_ONNX_ATTR_GRAPHS && j < at->count; j++)
                if ((e = implicit_uses(s, at->graphs[j], i, 0))) return e;
        }
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            if (!n->outputs[k][0]) continue;
            lw_val *v = lw_lookup(s, n->outputs[k]);
            if (v)
                return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: node #%u '%s' (%s) produces '%s', which is %s",
                                       model_path, i, s->nodes[i].label, n->op_type, n->outputs[k],
                                       v->producer >= 0 ? "also produced by an earlier node"
                                                        : "a graph input or initializer");
            if (!(v = new_val(s, n->outputs[k]))) return ctosa_error_nomem();
            v->producer = (int32_t)i;
        }
    }
    for (uint32_t i = 0; i < s->g->n_outputs; i++) {
        lw_val *v = lw_lookup(s, s->g->outputs[i].name);
        if (!v)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: graph output '%s' is produced by no node",
                                   model_path, s->g->outputs[i].name);
        v->graph_output = true;
    }
    return qdq_prepass(s);
}

void lw_session_decide(lower_session *s) {
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        char what[160];
        snprintf(what, sizeof what, "before node #%u '%.100s'", i, s->nodes[i].label);
        if (s->limit_err || !lw_budget_ok(s, 0, what)) return;
        decide_node(s, i);
        if (s->nodes[i].kind == LW_NODE_FALLBACK) {
            lw_infer_fallback(s, i); /* undeclared outputs: ONNX shape rules (shape_infer.c) */
            record_declared(s, i);
        }
        qdq_note_outputs(s, i);
    }
    qdq_post_decide(s);
}

void lw_session_close(lower_session *s) {
    ctosa_error_free(s->limit_err);
    s->limit_err = NULL;
    ctosa_onnx_free(s->m);
    strmap_free(&s->vals);
    arena_free(&s->a);
}
