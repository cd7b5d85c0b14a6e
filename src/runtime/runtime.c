/* runtime.c - loading and running a partitioned model (ctosa/runtime.h).
 *
 * Load: the partitioned ONNX model, its report, then every node in model
 * order becomes a step: an EPContext node's .tosa graph prepared on the
 * backend, any other node lowered alone for the host executor
 * (rt_host.c) and prepared on the interpreter. Every value crossing a step
 * boundary gets one buffer of its static size, allocated at load; a run
 * only copies inputs in, calls the steps in order and leaves the outputs in
 * their buffers.
 *
 * The one exception is a node whose lowering fails only for want of values
 * (its output's shape depends on the data, as NonZero's does, or an input's
 * shape comes from such a node): it becomes a deferred step, lowered again
 * on each run with that run's input values as constants, and its outputs
 * are dynamic values whose shape and buffer each run sets. Whether such a
 * node can run is still decided by the lowering alone. */
#include <stdlib.h>
#include <string.h>

#include "ctosa/tosa_io.h"
#include "tensorfile/tensorfile.h"
#include "runtime/rt_internal.h"

typedef struct rt_value {
    const char *name;
    int32_t onnx_dtype;  /* type at the model interface / in the report */
    ctosa_dtype carrier; /* TOSA dtype of data (uint8: INT8 bits) */
    uint32_t rank;
    const int64_t *shape;
    uint64_t count, size;
    void *data; /* size bytes (owned by the runtime) */
    bool quantized;
    double scale;
    int64_t zero_point;
    bool is_input, set; /* a model input; given since load */
    bool is_const;      /* known at load (a Constant node, an initializer, a node run at load) */
    bool dynamic;       /* set by a deferred step on each run: shape, size and data change */
    int32_t declared;   /* dynamic: the ONNX type the model gives it (0 when none) */
    int64_t *dims;      /* dynamic: room for RT_MAX_RANK dimensions (shape points here) */
    int32_t producer;   /* step index; -1 for model inputs */
} rt_value;

#define RT_MAX_RANK 16
/* integer values of at most this many elements are given to a run's first
 * lowering (shape, index and axis tensors) */
#define RT_SMALL_VALUES 1024

/* Which values a lowering is given with their data: at load, only the
 * constants; on a run, first those plus small integer values (shapes,
 * indices, axes: a graph made this way holds for any data of the rest and
 * is kept while the shapes stay), then, if that lowering needs more, every
 * value. */
typedef enum { RT_VALUES_CONST, RT_VALUES_SMALL, RT_VALUES_ALL } rt_values;

/* The last lowering of a deferred step, reused while its key (the inputs'
 * types, shapes and passed values) stays the same. */
typedef struct rt_cache {
    const ctosa_onnx_node *node;
    strbuf key;
    bool by_values;        /* the small values did not do: each run is lowered with every value */
    ctosa_lower_result *r; /* folded constants, or one graph */
    bool folded;
    void *state; /* the graph prepared on the host interpreter */
} rt_cache;

typedef struct rt_step {
    ctosa_runtime_step pub;
    const ctosa_backend *be;
    void *state;
    bool prepared;
    const ctosa_onnx_node *node; /* deferred: lowered on each run with the run's values */
    ctosa_graph *graph;          /* partitions: read from the .tosa file (owned) */
    ctosa_lower_result *lowered; /* host nodes: owns the graph */
    uint32_t n_in, n_out;
    rt_value **in, **out;
    ctosa_interp_tensor *tin, *tout; /* the graph's declared I/O; data set per run */
    void **conv;                     /* per input: converted copy when the carrier differs, else NULL */
    rt_cache cache;                  /* deferred */
    rt_cache *branch;                /* an If: one per node its branches ran */
    uint32_t n_branch;
} rt_step;

struct ctosa_runtime {
    arena a;
    ctosa_runtime_options opt;
    ctosa_interp_options iopt_part, iopt_host;
    const char *path;
    ctosa_onnx_model *m;
    const ctosa_onnx_graph *g;
    file_map fm;
    bool fm_open;
    ctosa_report *report;
    strmap values; /* name -> rt_value* */
    rt_value **all;
    uint32_t n_all, cap_all;
    rt_step *steps;
    uint32_t n_steps;
    rt_value **inputs, **outputs;
    uint32_t n_inputs, n_outputs;
    rt_values values_mode;           /* which values type_of gives with their data */
    const ctosa_onnx_node *lowering; /* the node lowered on a run (its outputs go untyped), else NULL */
};

void ctosa_runtime_options_init(ctosa_runtime_options *opt) { memset(opt, 0, sizeof *opt); }

/* ONNX If: control flow the runtime runs itself (the branch its condition
 * picks, node by node). */
static bool is_if(const ctosa_onnx_node *n) { return strcmp(n->op_type, "If") == 0 && !n->domain[0]; }

static bool is_ep_context(const ctosa_onnx_node *n) {
    return strcmp(n->op_type, "EPContext") == 0 && strcmp(n->domain, "com.microsoft") == 0;
}

static const char *node_label(ctosa_runtime *rt, const ctosa_onnx_node *n, uint32_t i) {
    return n->name[0] ? n->name : arena_printf(&rt->a, "%s#%u", n->op_type, i);
}

static const ctosa_onnx_tensor *find_init(const ctosa_onnx_graph *g, const char *name) {
    for (uint32_t i = 0; i < g->n_initializers; i++)
        if (strcmp(g->initializers[i].name, name) == 0) return &g->initializers[i];
    return NULL;
}

/* Value types the host executor declares: the runtime's values first (they
 * are what will be fed), else the report, else a static graph input. */
static bool is_output_of(const ctosa_onnx_node *n, const char *name) {
    for (uint32_t k = 0; n && k < n->n_outputs; k++)
        if (strcmp(n->outputs[k], name) == 0) return true;
    return false;
}

static void cache_clear(rt_cache *c) {
    if (c->state) ctosa_backend_interpreter()->release(ctosa_backend_interpreter()->user, c->state);
    ctosa_lower_result_free(c->r);
    sb_free(&c->key);
    memset(c, 0, sizeof *c);
}

/* Whether the lowering of a node gets value v's data (else its type and
 * shape only). */
static bool passes_data(const ctosa_runtime *rt, const rt_value *v) {
    if (v->is_const || rt->values_mode == RT_VALUES_ALL || (v->count == 0 && rt->values_mode)) return true;
    bool real =
        v->carrier == CTOSA_DTYPE_FP32 || v->carrier == CTOSA_DTYPE_FP16 || v->carrier == CTOSA_DTYPE_BF16;
    return rt->values_mode == RT_VALUES_SMALL && !real && v->count <= RT_SMALL_VALUES;
}

static bool type_of(void *ctx, const char *name, rt_vtype *out) {
    ctosa_runtime *rt = ctx;
    rt_value *v = strmap_get(&rt->values, name);
    /* a dynamic value's shape is known only in a run, and the outputs of
     * the node lowered on a run are what it computes */
    if (v && v->dynamic && (rt->values_mode == RT_VALUES_CONST || is_output_of(rt->lowering, name)))
        return false;
    if (v) {
        *out = (rt_vtype){v->onnx_dtype, v->rank, v->shape, passes_data(rt, v) ? v->data : NULL, v->size};
        return true;
    }
    ctosa_runtime_tensor t;
    if (!ctosa_report_tensor(rt->report, name, &t) || !rt_onnx_dtype_of(t.dtype)) return false;
    for (uint32_t i = 0; i < t.rank; i++)
        if (t.shape[i] < 0) return false;
    *out = (rt_vtype){rt_onnx_dtype_of(t.dtype), t.rank, t.shape, NULL, 0};
    return true;
}

/* Puts v in the runtime's lists (its buffer, if any, is freed with it). */
static ctosa_error *register_value(ctosa_runtime *rt, rt_value *v) {
    if (rt->n_all == rt->cap_all) {
        uint32_t nc = rt->cap_all ? rt->cap_all * 2 : 16;
        rt_value **na = realloc(rt->all, nc * sizeof *na);
        if (!na) {
            free(v->data);
            return ctosa_error_nomem();
        }
        rt->all = na;
        rt->cap_all = nc;
    }
    rt->all[rt->n_all++] = v;
    if (!strmap_put(&rt->values, v->name, v)) return ctosa_error_nomem();
    return NULL;
}

/* Elements and bytes of a value of the given carrier and shape; an error
 * naming it when a dimension is not static, the carrier has no host
 * encoding or the size overflows. */
static ctosa_error *value_bytes(const ctosa_runtime *rt, const char *name, ctosa_dtype carrier, uint32_t rank,
                                const int64_t *shape, uint64_t *count, uint64_t *size) {
    uint64_t esz = ctosa_host_elem_size(carrier);
    *count = 1;
    for (uint32_t i = 0; i < rank; i++)
        if (shape[i] < 0 || !mul_u64(*count, (uint64_t)shape[i], count))
            return shape[i] < 0
                       ? ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: tensor '%s' has no static shape",
                                         rt->path, name)
                       : ctosa_error_new(CTOSA_ERR_LIMIT, "%s: tensor '%s' is too large", rt->path, name);
    if (!esz)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: tensor '%s': no host encoding for %s", rt->path,
                               name, ctosa_dtype_short(carrier));
    if (!mul_u64(*count, esz, size))
        return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: tensor '%s' is too large", rt->path, name);
    return NULL;
}

static ctosa_error *add_value(ctosa_runtime *rt, rt_value *v) {
    ctosa_error *e = value_bytes(rt, v->name, v->carrier, v->rank, v->shape, &v->count, &v->size);
    if (e) return e;
    v->data = calloc(1, v->size ? v->size : 1);
    if (!v->data) return ctosa_error_nomem();
    return register_value(rt, v);
}

/* A value known at load: dense ONNX bytes, which for every type the
 * runtime carries are also the carrier's host encoding. */
static ctosa_error *add_const(ctosa_runtime *rt, const char *name, int32_t dtype, uint32_t rank,
                              const int64_t *dims, const void *data, uint64_t nbytes) {
    rt_value *v = arena_zalloc(&rt->a, sizeof *v);
    int64_t *d = arena_alloc(&rt->a, (rank + 1) * sizeof *d);
    if (!v || !d) return ctosa_error_nomem();
    if (rank) memcpy(d, dims, rank * sizeof *d);
    v->name = arena_strdup(&rt->a, name);
    v->onnx_dtype = dtype;
    v->carrier = rt_carrier_of(dtype);
    v->rank = rank;
    v->shape = d;
    v->producer = -1;
    v->is_const = true;
    if (!v->name) return ctosa_error_nomem();
    if (v->carrier == CTOSA_DTYPE_UNKNOWN)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: constant '%s' has type %s, which no TOSA type carries", rt->path, name,
                               ctosa_onnx_dtype_name(dtype) ? ctosa_onnx_dtype_name(dtype) : "?");
    ctosa_error *e = add_value(rt, v);
    if (e) return e;
    if (nbytes != v->size)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: constant '%s' holds %llu bytes, its shape needs %llu",
                               rt->path, name, (unsigned long long)nbytes, (unsigned long long)v->size);
    if (nbytes) memcpy(v->data, data, nbytes);
    return NULL;
}

/* A Constant node: its value attribute becomes a value known at load. */
static ctosa_error *load_constant(ctosa_runtime *rt, const ctosa_onnx_node *n, const char *label) {
    if (n->n_outputs != 1 || n->n_attrs != 1)
        return ctosa_error_new(
            CTOSA_ERR_FORMAT, "%s: node '%s' (Constant) needs one output and one attribute", rt->path, label);
    const ctosa_onnx_attr *a = &n->attrs[0];
    const char *out = n->outputs[0];
    int64_t one = 1, cnt = a->count;
    if (strcmp(a->name, "value") == 0 && a->type == CTOSA_ONNX_ATTR_TENSOR && a->t) {
        const void *data;
        uint64_t nb;
        ctosa_error *e = ctosa_onnx_tensor_data(rt->m, a->t, &data, &nb);
        if (e) return e;
        return add_const(rt, out, a->t->dtype, a->t->rank, a->t->dims, data, nb);
    }
    if (strcmp(a->name, "value_float") == 0 && a->type == CTOSA_ONNX_ATTR_FLOAT)
        return add_const(rt, out, 1, 0, &one, &a->f, sizeof a->f);
    if (strcmp(a->name, "value_int") == 0 && a->type == CTOSA_ONNX_ATTR_INT)
        return add_const(rt, out, 7, 0, &one, &a->i, sizeof a->i);
    if (strcmp(a->name, "value_floats") == 0 && a->type == CTOSA_ONNX_ATTR_FLOATS)
        return add_const(rt, out, 1, 1, &cnt, a->floats, (uint64_t)a->count * sizeof(float));
    if (strcmp(a->name, "value_ints") == 0 && a->type == CTOSA_ONNX_ATTR_INTS)
        return add_const(rt, out, 7, 1, &cnt, a->ints, (uint64_t)a->count * sizeof(int64_t));
    return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                           "%s: node '%s' (Constant): attribute '%s' is not supported on the "
                           "host",
                           rt->path, label, a->name);
}

/* A model input: type from the report, else the graph's declaration. */
static ctosa_error *add_model_input(ctosa_runtime *rt, const ctosa_onnx_value_info *vi) {
    rt_value *v = arena_zalloc(&rt->a, sizeof *v);
    if (!v) return ctosa_error_nomem();
    v->name = vi->name;
    v->is_input = true;
    v->producer = -1;
    ctosa_runtime_tensor t;
    if (ctosa_report_tensor(rt->report, vi->name, &t)) {
        v->onnx_dtype = rt_onnx_dtype_of(t.dtype);
        v->rank = t.rank;
        v->shape = t.shape;
        v->quantized = t.quantized;
        v->scale = t.scale;
        v->zero_point = t.zero_point;
    } else {
        const ctosa_onnx_type *ty = vi->type;
        if (!ty || ty->kind != CTOSA_ONNX_TYPE_TENSOR || !ty->has_shape)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                   "%s: graph input '%s' has no tensor type with a shape", rt->path,
                                   vi->name);
        int64_t *d = arena_alloc(&rt->a, (ty->rank + 1) * sizeof *d);
        if (!d) return ctosa_error_nomem();
        for (uint32_t i = 0; i < ty->rank; i++) {
            if (!ty->dims[i].has_value)
                return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                       "%s: graph input '%s': dimension %u is not static "
                                       "(lower with --shape)",
                                       rt->path, vi->name, i);
            d[i] = ty->dims[i].value;
        }
        v->onnx_dtype = ty->elem_type;
        v->rank = ty->rank;
        v->shape = d;
    }
    v->carrier = rt_carrier_of(v->onnx_dtype);
    if (v->carrier == CTOSA_DTYPE_UNKNOWN)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: graph input '%s' has type %s, which no TOSA type "
                               "carries",
                               rt->path, vi->name,
                               ctosa_onnx_dtype_name(v->onnx_dtype) ? ctosa_onnx_dtype_name(v->onnx_dtype)
                                                                    : "?");
    return add_value(rt, v);
}

static bool same_shape(uint32_t ra, const int64_t *a, uint32_t rb, const int64_t *b) {
    if (ra != rb) return false;
    for (uint32_t i = 0; i < ra; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* A TOSA tensor's shape (int32 dims) against a runtime shape. */
static bool same_tosa_shape(uint32_t ra, const int64_t *a, const ctosa_tensor *t) {
    if (ra != t->rank) return false;
    for (uint32_t i = 0; i < ra; i++)
        if (a[i] != t->shape[i]) return false;
    return true;
}

static bool is_int_carrier(ctosa_dtype t) {
    return t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 ||
           t == CTOSA_DTYPE_INT64 || t == CTOSA_DTYPE_SHAPE || t == CTOSA_DTYPE_BOOL;
}

/* The ONNX type of a host node's output carried as TOSA dtype t: its own
 * lowering says when an INT8 tensor is a uint8 value. */
static int32_t host_output_type(const ctosa_lower_partition *hp, const char *name, ctosa_dtype t) {
    for (uint32_t j = 0; j < hp->n_outputs; j++)
        if (strcmp(hp->outputs[j].name, name) == 0 && strcmp(hp->outputs[j].dtype, "uint8") == 0 &&
            t == CTOSA_DTYPE_INT8)
            return 2;
    return rt_onnx_of_carrier(t);
}

/* The interpreter's view of value v's buffer, as TOSA dtype t. */
static ctosa_interp_tensor interp_view(const rt_value *v, ctosa_dtype t) {
    return (ctosa_interp_tensor){.name = v->name,
                                 .dtype = t,
                                 .rank = v->rank,
                                 .shape = v->shape,
                                 .count = v->count,
                                 .data = v->data,
                                 .size = v->size};
}

/* Input k of a partition is a dynamic value: the graph's shape is what
 * each run must deliver; a conversion buffer is kept for integer carriers
 * that may differ. */
static ctosa_error *bind_dynamic_in(ctosa_runtime *rt, rt_step *st, uint32_t k, rt_value *v,
                                    const ctosa_tensor *t) {
    int64_t *shp = arena_alloc(&rt->a, (t->rank + 1) * sizeof *shp);
    if (!shp) return ctosa_error_nomem();
    uint64_t count = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
        shp[d] = t->shape[d];
        count *= (uint64_t)t->shape[d];
    }
    st->in[k] = v;
    st->tin[k] = (ctosa_interp_tensor){.name = v->name,
                                       .dtype = t->dtype,
                                       .rank = t->rank,
                                       .shape = shp,
                                       .count = count,
                                       .size = count * ctosa_host_elem_size(t->dtype)};
    if (is_int_carrier(t->dtype) && !(st->conv[k] = malloc(st->tin[k].size ? st->tin[k].size : 1)))
        return ctosa_error_nomem();
    return NULL;
}

/* Binds the graph's main block I/O to values; creates the output values. */
static ctosa_error *bind_step(ctosa_runtime *rt, uint32_t si, const ctosa_onnx_node *n) {
    rt_step *st = &rt->steps[si];
    const ctosa_graph *g =
        st->graph ? st->graph : ctosa_lower_result_summary(st->lowered)->partitions[0].graph;
    const ctosa_region *rg = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    const ctosa_block *b = rg && rg->n_blocks ? rg->blocks[0] : NULL;
    if (!b) return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: no main block", st->pub.name);
    st->pub.tosa_ops = b->n_ops;
    st->n_in = b->n_inputs;
    st->n_out = b->n_outputs;
    st->in = arena_zalloc(&rt->a, (b->n_inputs + 1) * sizeof *st->in);
    st->out = arena_zalloc(&rt->a, (b->n_outputs + 1) * sizeof *st->out);
    st->tin = arena_zalloc(&rt->a, (b->n_inputs + 1) * sizeof *st->tin);
    st->tout = arena_zalloc(&rt->a, (b->n_outputs + 1) * sizeof *st->tout);
    st->conv = arena_zalloc(&rt->a, (b->n_inputs + 1) * sizeof *st->conv);
    if (!st->in || !st->out || !st->tin || !st->tout || !st->conv) return ctosa_error_nomem();
    ctosa_error *e = NULL;
    for (uint32_t k = 0; k < b->n_inputs; k++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, b->inputs[k]);
        rt_value *v = strmap_get(&rt->values, b->inputs[k]);
        bool named = false;
        for (uint32_t j = 0; j < n->n_inputs && !named; j++) named = strcmp(n->inputs[j], b->inputs[k]) == 0;
        if (!t)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: input '%s' has no tensor", st->pub.name,
                                   b->inputs[k]);
        if (!v || !named)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: graph input '%s' is not %s", st->pub.name,
                                   b->inputs[k],
                                   !named ? "an input of its node in the model" : "computed before it runs");
        if (v->dynamic) { /* checked on each run (check_dynamic_in) */
            if ((e = bind_dynamic_in(rt, st, k, v, t))) return e;
            continue;
        }
        if (!same_tosa_shape(v->rank, v->shape, t))
            return ctosa_error_new(CTOSA_ERR_FORMAT,
                                   "%s: input '%s': the graph's shape differs from the "
                                   "report's / producer's",
                                   st->pub.name, v->name);
        if (t->dtype != v->carrier && !(is_int_carrier(t->dtype) && is_int_carrier(v->carrier)))
            return ctosa_error_new(CTOSA_ERR_FORMAT,
                                   "%s: input '%s' is %s in the graph but %s where it is "
                                   "computed",
                                   st->pub.name, v->name, ctosa_dtype_short(t->dtype),
                                   ctosa_dtype_short(v->carrier));
        st->in[k] = v;
        st->tin[k] = (ctosa_interp_tensor){.name = v->name,
                                           .dtype = t->dtype,
                                           .rank = v->rank,
                                           .shape = v->shape,
                                           .count = v->count,
                                           .size = v->count * ctosa_host_elem_size(t->dtype)};
        if (t->dtype != v->carrier && !(st->conv[k] = malloc(st->tin[k].size ? st->tin[k].size : 1)))
            return ctosa_error_nomem();
    }
    for (uint32_t k = 0; k < b->n_outputs; k++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, b->outputs[k]);
        if (!t)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: output '%s' has no tensor", st->pub.name,
                                   b->outputs[k]);
        if (strmap_has(&rt->values, b->outputs[k]))
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: output '%s' is computed twice", st->pub.name,
                                   b->outputs[k]);
        rt_value *v = arena_zalloc(&rt->a, sizeof *v);
        if (!v) return ctosa_error_nomem();
        v->name = arena_strdup(&rt->a, b->outputs[k]);
        v->carrier = t->dtype;
        v->rank = t->rank;
        int64_t *shp = arena_alloc(&rt->a, (t->rank + 1) * sizeof *shp);
        for (uint32_t d = 0; shp && d < t->rank; d++) shp[d] = t->shape[d];
        v->shape = shp;
        v->producer = (int32_t)si;
        ctosa_runtime_tensor rep;
        v->onnx_dtype = rt_onnx_of_carrier(t->dtype);
        bool known = ctosa_report_tensor(rt->report, v->name, &rep);
        if (known && !same_tosa_shape(rep.rank, rep.shape, t))
            return ctosa_error_new(CTOSA_ERR_FORMAT,
                                   "%s: output '%s': the graph's shape differs from the report's "
                                   "(%s)",
                                   st->pub.name, v->name, rt_report_path(rt->report));
        if (st->lowered) {
            /* A CPU node: its own lowering says what the value is (uint8
             * travels as INT8); the report's tensor list gives the types
             * the partitioning saw, which for quantized chains are the
             * carriers. */
            v->onnx_dtype =
                host_output_type(&ctosa_lower_result_summary(st->lowered)->partitions[0], v->name, t->dtype);
        } else if (known) {
            /* A partition boundary: exactly as the report describes it. */
            int32_t od = rt_onnx_dtype_of(rep.dtype);
            if (rt_carrier_of(od) != t->dtype)
                return ctosa_error_new(CTOSA_ERR_FORMAT,
                                       "%s: output '%s' is %s in the graph but %s in the report "
                                       "(%s)",
                                       st->pub.name, v->name, ctosa_dtype_short(t->dtype), rep.dtype,
                                       rt_report_path(rt->report));
            v->onnx_dtype = od;
        }
        if (known && rep.quantized) {
            v->quantized = true;
            v->scale = rep.scale;
            v->zero_point = rep.zero_point;
        }
        if (!v->name || !v->shape || !v->onnx_dtype)
            return v->name && v->shape
                       ? ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                         "%s: output '%s': dtype %s has no "
                                         "ONNX type",
                                         st->pub.name, b->outputs[k], ctosa_dtype_short(t->dtype))
                       : ctosa_error_nomem();
        if ((e = add_value(rt, v))) return e;
        st->out[k] = v;
        st->tout[k] = interp_view(v, t->dtype);
    }
    return NULL;
}

/* An EPContext node: the .tosa file it names, beside the model. */
static ctosa_error *load_partition(ctosa_runtime *rt, uint32_t si, const ctosa_onnx_node *n,
                                   const char *label) {
    rt_step *st = &rt->steps[si];
    const ctosa_onnx_attr *em = ctosa_onnx_node_attr(n, "embed_mode");
    const ctosa_onnx_attr *cc = ctosa_onnx_node_attr(n, "ep_cache_context");
    if (em && em->type == CTOSA_ONNX_ATTR_INT && em->i != 0)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: node '%s': embed_mode %lld (only 0, a file beside the "
                               "model, is read)",
                               rt->path, label, (long long)em->i);
    if (!cc || cc->type != CTOSA_ONNX_ATTR_STRING || cc->s.n == 0)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: node '%s': no ep_cache_context naming its .tosa file",
                               rt->path, label);
    char *file = arena_strndup(&rt->a, (const char *)cc->s.p, (size_t)cc->s.n);
    if (!file) return ctosa_error_nomem();
    /* A file name beside the model, never a path elsewhere. */
    if (strchr(file, '/') || strcmp(file, "..") == 0 || strcmp(file, ".") == 0 || strlen(file) != cc->s.n)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: node '%s': ep_cache_context '%s' is not a file name beside "
                               "the model",
                               rt->path, label, file);
    const char *slash = strrchr(rt->path, '/');
    const char *full =
        slash ? arena_printf(&rt->a, "%.*s/%s", (int)(slash - rt->path), rt->path, file) : file;
    if (!full) return ctosa_error_nomem();
    st->pub.partition = true;
    st->pub.name = file;
    st->pub.op_type = "EPContext";
    ctosa_error *e = ctosa_read_file(full, NULL, &st->graph);
    if (e) return ctosa_error_prefix(e, "%s: node '%s'", rt->path, label);
    if ((e = bind_step(rt, si, n))) return e;
    st->be = rt->opt.backend;
    ctosa_backend_partition bp = {
        .name = file, .graph = st->graph, .custom_ops = rt->opt.custom_ops, .interp = &rt->iopt_part};
    if ((e = st->be->prepare(st->be->user, &bp, &st->state)))
        return ctosa_error_prefix(e, "%s: backend '%s' cannot prepare it", full,
                                  st->be->name ? st->be->name : "?");
    st->prepared = true;
    return NULL;
}

static rt_host_src host_src(ctosa_runtime *rt) {
    return (rt_host_src){.m = rt->m,
                         .g = rt->g,
                         .base = rt->fm.data,
                         .size = rt->fm.size,
                         .path = rt->path,
                         .custom_ops = rt->opt.custom_ops,
                         .type_of = type_of,
                         .ctx = rt};
}

/* The ONNX type a deferred node's output has before any run: the report's,
 * else the model's declaration (value_info or graph output), else 0 until
 * the first run. */
static void declared_type(ctosa_runtime *rt, rt_value *v) {
    ctosa_runtime_tensor rep;
    if (ctosa_report_tensor(rt->report, v->name, &rep) && rt_onnx_dtype_of(rep.dtype)) {
        v->onnx_dtype = rt_onnx_dtype_of(rep.dtype);
        v->quantized = rep.quantized;
        v->scale = rep.scale;
        v->zero_point = rep.zero_point;
        return;
    }
    const ctosa_onnx_graph *g = rt->g;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const ctosa_onnx_value_info *vi = pass ? g->outputs : g->value_infos;
        uint32_t n = pass ? g->n_outputs : g->n_value_infos;
        for (uint32_t i = 0; i < n; i++)
            if (strcmp(vi[i].name, v->name) == 0 && vi[i].type &&
                vi[i].type->kind == CTOSA_ONNX_TYPE_TENSOR && rt_numpy_name(vi[i].type->elem_type)) {
                v->onnx_dtype = vi[i].type->elem_type;
                return;
            }
    }
}

/* The outputs of node n (labelled label), run by step si, as dynamic
 * values. again: values made by an earlier run of the same branch stay. */
static ctosa_error *dynamic_outputs(ctosa_runtime *rt, uint32_t si, const ctosa_onnx_node *n,
                                    const char *label, bool again) {
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (!n->outputs[k][0]) continue;
        rt_value *old = strmap_get(&rt->values, n->outputs[k]);
        if (old && again && old->dynamic && old->producer == (int32_t)si) continue;
        if (old)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: node '%s': output '%s' is computed twice", rt->path,
                                   label, n->outputs[k]);
        rt_value *v = arena_zalloc(&rt->a, sizeof *v);
        int64_t *dims = arena_zalloc(&rt->a, RT_MAX_RANK * sizeof *dims);
        if (!v || !dims) return ctosa_error_nomem();
        v->name = n->outputs[k];
        v->dynamic = true;
        v->dims = dims;
        v->shape = dims;
        v->producer = (int32_t)si;
        declared_type(rt, v);
        v->declared = v->onnx_dtype;
        v->carrier = rt_carrier_of(v->onnx_dtype);
        ctosa_error *e = register_value(rt, v);
        if (e) return e;
    }
    return NULL;
}

/* Node n's lowering failed for want of values (or n is an If): it runs as
 * a deferred step, its outputs dynamic values. */
static ctosa_error *defer_node(ctosa_runtime *rt, uint32_t si, const ctosa_onnx_node *n) {
    rt->steps[si].node = n;
    rt->steps[si].pub.deferred = true;
    return dynamic_outputs(rt, si, n, rt->steps[si].pub.name, false);
}

static ctosa_error *load_host_node(ctosa_runtime *rt, uint32_t si, const ctosa_onnx_node *n,
                                   const char *label) {
    rt_step *st = &rt->steps[si];
    st->pub.partition = false;
    st->pub.name = label;
    st->pub.op_type = n->op_type;
    rt_host_src src = host_src(rt);
    /* A node whose inputs are all known at load runs once, at load: its
     * outputs are then constants for the nodes that read them (a
     * ConstantOfShape's shape, a DequantizeLinear's scale). */
    bool all_const = true;
    for (uint32_t k = 0; k < n->n_inputs && all_const; k++) {
        const rt_value *v = n->inputs[k][0] ? strmap_get(&rt->values, n->inputs[k]) : NULL;
        all_const = !n->inputs[k][0] || find_init(rt->g, n->inputs[k]) || (v && v->is_const);
    }
    bool folded = false, later = false;
    ctosa_error *e = rt_host_lower(&src, n, label, &st->lowered, &folded, &later);
    if (e && later && !all_const) {
        /* The run's values decide; the lowering is tried again with them. */
        ctosa_error_free(e);
        return defer_node(rt, si, n);
    }
    if (!e && folded) {
        /* Computed at compile time (a Shape of a static tensor, a
         * ConstantOfShape): the values are constants, nothing runs. */
        for (uint32_t k = 0; k < n->n_outputs && !e; k++) {
            ctosa_lower_constant c;
            if (n->outputs[k][0] && ctosa_lower_result_constant(st->lowered, n->outputs[k], &c))
                e = add_const(rt, n->outputs[k], c.onnx_dtype, c.rank, c.shape, c.data, c.nbytes);
        }
        ctosa_lower_result_free(st->lowered);
        st->lowered = NULL;
        rt->n_steps--; /* no step */
        return e;
    }
    st->pub.at_load = all_const;
    if (e) return ctosa_error_prefix(e, "%s", rt->path);
    if ((e = bind_step(rt, si, n))) return e;
    /* outputs the lowering computed beside its graph (a Dropout's mask) */
    for (uint32_t k = 0; k < n->n_outputs && !e; k++) {
        ctosa_lower_constant c;
        if (n->outputs[k][0] && !strmap_has(&rt->values, n->outputs[k]) &&
            ctosa_lower_result_constant(st->lowered, n->outputs[k], &c))
            e = add_const(rt, n->outputs[k], c.onnx_dtype, c.rank, c.shape, c.data, c.nbytes);
    }
    if (e) return e;
    st->be = ctosa_backend_interpreter();
    ctosa_backend_partition bp = {.name = label,
                                  .graph = ctosa_lower_result_summary(st->lowered)->partitions[0].graph,
                                  .custom_ops = rt->opt.custom_ops,
                                  .interp = &rt->iopt_host};
    if ((e = st->be->prepare(st->be->user, &bp, &st->state)))
        return ctosa_error_prefix(e, "%s: node '%s' (%s) on the host", rt->path, label, n->op_type);
    st->prepared = true;
    if (st->pub.at_load) {
        for (uint32_t k = 0; k < st->n_in; k++) st->tin[k].data = st->in[k]->data;
        if ((e = st->be->run(st->be->user, st->state, st->tin, st->n_in, st->tout, st->n_out)))
            return ctosa_error_prefix(e, "%s: node '%s' (%s) run at load", rt->path, label, n->op_type);
        for (uint32_t k = 0; k < st->n_out; k++) st->out[k]->is_const = true;
    }
    return NULL;
}

static ctosa_error *load(ctosa_runtime *rt) {
    ctosa_error *e = ctosa_onnx_load(rt->path, NULL, &rt->m);
    if (e) return e;
    if ((e = ctosa_onnx_inline_functions(rt->m, &rt->g))) return e;
    if ((e = file_map_open(rt->path, &rt->fm))) return e;
    rt->fm_open = true;
    if (rt->opt.report) e = ctosa_report_load(rt->opt.report, &rt->report);
    else e = ctosa_report_load_beside(rt->path, &rt->report);
    if (e) return e;
    if (!rt->report)
        return ctosa_error_new(CTOSA_ERR_IO,
                               "%s: no report beside the model (<stem>.report.json, written by "
                               "ctosa lower with the partitioned model)",
                               rt->path);
    const ctosa_onnx_graph *g = rt->g;
    rt->inputs = arena_zalloc(&rt->a, (g->n_inputs + 1) * sizeof *rt->inputs);
    rt->outputs = arena_zalloc(&rt->a, (g->n_outputs + 1) * sizeof *rt->outputs);
    rt->steps = calloc(g->n_nodes + 1, sizeof *rt->steps);
    if (!rt->inputs || !rt->outputs || !rt->steps) return ctosa_error_nomem();
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        if (find_init(g, g->inputs[i].name)) continue; /* an initializer listed as input: a constant */
        if ((e = add_model_input(rt, &g->inputs[i]))) return e;
        rt->inputs[rt->n_inputs++] = strmap_get(&rt->values, g->inputs[i].name);
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        const char *label = node_label(rt, n, i);
        if (!label) return ctosa_error_nomem();
        if (strcmp(n->op_type, "Constant") == 0 && !n->domain[0]) {
            if ((e = load_constant(rt, n, label))) return e;
            continue;
        }
        uint32_t si = rt->n_steps++;
        if (is_if(n)) {
            rt->steps[si].pub = (ctosa_runtime_step){.name = label, .op_type = n->op_type};
            e = defer_node(rt, si, n);
        } else {
            e = is_ep_context(n) ? load_partition(rt, si, n, label) : load_host_node(rt, si, n, label);
        }
        if (e) return e;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        const char *name = g->outputs[i].name;
        rt_value *v = strmap_get(&rt->values, name);
        const ctosa_onnx_tensor *t = v ? NULL : find_init(g, name);
        if (t) { /* a value the lowering computed (a Dropout's mask), written as an initializer */
            const void *data;
            uint64_t nbytes;
            if ((e = ctosa_onnx_tensor_data(rt->m, t, &data, &nbytes))) return e;
            if ((e = add_const(rt, name, t->dtype, t->rank, t->dims, data, nbytes))) return e;
            v = strmap_get(&rt->values, name);
        }
        if (!v)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: graph output '%s' is not computed by any node",
                                   rt->path, name);
        rt->outputs[rt->n_outputs++] = v;
    }
    return NULL;
}

ctosa_error *ctosa_runtime_load(const char *path, const ctosa_runtime_options *opt, ctosa_runtime **out) {
    *out = NULL;
    if (!path) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_runtime_load: no model path");
    ctosa_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return ctosa_error_nomem();
    arena_init(&rt->a, 0);
    strmap_init(&rt->values);
    if (opt) rt->opt = *opt;
    else ctosa_runtime_options_init(&rt->opt);
    if (!rt->opt.backend) rt->opt.backend = ctosa_backend_interpreter();
    ctosa_interp_options_init(&rt->iopt_part);
    rt->iopt_part.threads = rt->opt.threads;
    rt->iopt_part.max_memory = rt->opt.max_memory;
    rt->iopt_part.max_iterations = rt->opt.max_iterations;
    rt->iopt_part.reference = rt->opt.reference;
    rt->iopt_host = rt->iopt_part;
    /* CPU nodes are small next to partitions: no worker pool per node. */
    rt->iopt_host.threads = 1;
    rt->path = arena_strdup(&rt->a, path);
    const ctosa_backend *be = rt->opt.backend;
    ctosa_error *e = !rt->path ? ctosa_error_nomem()
                     : !be->prepare || !be->run || !be->release
                         ? ctosa_error_new(CTOSA_ERR_USAGE, "backend '%s' lacks prepare, run or release",
                                           be->name ? be->name : "?")
                         : load(rt);
    if (e) {
        ctosa_runtime_free(rt);
        return e;
    }
    *out = rt;
    return NULL;
}

void ctosa_runtime_free(ctosa_runtime *rt) {
    if (!rt) return;
    for (uint32_t i = 0; i < rt->n_steps; i++) {
        rt_step *st = &rt->steps[i];
        if (st->prepared) st->be->release(st->be->user, st->state);
        for (uint32_t k = 0; st->conv && k < st->n_in; k++) free(st->conv[k]);
        ctosa_graph_free(st->graph);
        ctosa_lower_result_free(st->lowered);
        cache_clear(&st->cache);
        for (uint32_t k = 0; k < st->n_branch; k++) cache_clear(&st->branch[k]);
        free(st->branch);
    }
    free(rt->steps);
    for (uint32_t i = 0; i < rt->n_all; i++) free(rt->all[i]->data);
    free(rt->all);
    strmap_free(&rt->values);
    ctosa_report_free(rt->report);
    if (rt->fm_open) file_map_close(&rt->fm);
    ctosa_onnx_free(rt->m);
    arena_free(&rt->a);
    free(rt);
}

uint32_t ctosa_runtime_input_count(const ctosa_runtime *rt) { return rt->n_inputs; }
uint32_t ctosa_runtime_output_count(const ctosa_runtime *rt) { return rt->n_outputs; }
uint32_t ctosa_runtime_step_count(const ctosa_runtime *rt) { return rt->n_steps; }
const ctosa_runtime_step *ctosa_runtime_step_at(const ctosa_runtime *rt, uint32_t i) {
    return i < rt->n_steps ? &rt->steps[i].pub : NULL;
}
void ctosa_runtime_profile_reset(ctosa_runtime *rt) {
    for (uint32_t i = 0; i < rt->n_steps; i++) {
        rt->steps[i].pub.runs = 0;
        rt->steps[i].pub.seconds = 0;
    }
}

static void info_of(const rt_value *v, ctosa_runtime_tensor *t, bool with_data) {
    memset(t, 0, sizeof *t);
    t->name = v->name;
    t->dtype = rt_numpy_name(v->onnx_dtype);
    t->rank = v->rank;
    t->shape = v->shape;
    t->count = v->count;
    t->size = v->size;
    t->data = with_data ? v->data : NULL;
    t->quantized = v->quantized;
    t->scale = v->scale;
    t->zero_point = v->zero_point;
}

ctosa_error *ctosa_runtime_input_info(const ctosa_runtime *rt, uint32_t i, ctosa_runtime_tensor *info) {
    if (i >= rt->n_inputs)
        return ctosa_error_new(CTOSA_ERR_USAGE, "input index %u out of range (%u inputs)", i, rt->n_inputs);
    info_of(rt->inputs[i], info, false);
    return NULL;
}

ctosa_error *ctosa_runtime_output_info(const ctosa_runtime *rt, uint32_t i, ctosa_runtime_tensor *info) {
    if (i >= rt->n_outputs)
        return ctosa_error_new(CTOSA_ERR_USAGE, "output index %u out of range (%u outputs)", i,
                               rt->n_outputs);
    info_of(rt->outputs[i], info, false);
    return NULL;
}

static rt_value *find_input(ctosa_runtime *rt, const char *name) {
    for (uint32_t i = 0; i < rt->n_inputs; i++)
        if (strcmp(rt->inputs[i]->name, name) == 0) return rt->inputs[i];
    return NULL;
}

static ctosa_error *no_such_input(ctosa_runtime *rt, const char *name) {
    strbuf b;
    sb_init(&b);
    for (uint32_t i = 0; i < rt->n_inputs; i++) sb_printf(&b, "%s'%s'", i ? ", " : "", rt->inputs[i]->name);
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_USAGE, "%s: '%s' is not a model input (inputs: %s)", rt->path,
                                     name, b.s ? b.s : "none");
    sb_free(&b);
    return e;
}

static const char *shape_text(char *buf, size_t cap, uint32_t rank, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

ctosa_error *ctosa_runtime_set_input(ctosa_runtime *rt, const char *name, const char *dtype, uint32_t rank,
                                     const int64_t *shape, const void *data, uint64_t size) {
    rt_value *v = find_input(rt, name);
    if (!v) return no_such_input(rt, name);
    char w[256], g[256];
    if (!dtype || rt_onnx_dtype_of(dtype) != v->onnx_dtype || !same_shape(rank, shape, v->rank, v->shape))
        return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s': expected %s %s, got %s %s", name,
                               rt_numpy_name(v->onnx_dtype), shape_text(w, sizeof w, v->rank, v->shape),
                               dtype ? dtype : "?", shape_text(g, sizeof g, rank, shape));
    if (size != v->size)
        return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s': %llu bytes given, %llu expected", name,
                               (unsigned long long)size, (unsigned long long)v->size);
    /* every numpy layout the runtime accepts is its carrier's host encoding
     * (uint8: the same bits as INT8) */
    if (size) memcpy(v->data, data, size);
    v->set = true;
    return NULL;
}

ctosa_error *ctosa_runtime_set_input_file(ctosa_runtime *rt, const char *name, const ctosa_tensor_file *t,
                                          const char *what) {
    rt_value *v = find_input(rt, name);
    if (!v) return no_such_input(rt, name);
    char w[256], g[256];
    if (!same_shape(t->rank, t->shape, v->rank, v->shape))
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "input '%s': expected shape %s dtype %s, %s has shape %s (%s)", name,
                               shape_text(w, sizeof w, v->rank, v->shape), rt_numpy_name(v->onnx_dtype), what,
                               shape_text(g, sizeof g, t->rank, t->shape), t->type_name);
    if (v->onnx_dtype == 2 /* uint8 */) {
        if (strcmp(t->type_name, "uint8") != 0)
            return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s': expected uint8, %s is %s", name, what,
                                   t->type_name);
        return ctosa_runtime_set_input(rt, name, "uint8", t->rank, t->shape, t->data, t->size);
    }
    void *host = NULL;
    uint64_t size = 0;
    ctosa_error *e = ctosa_tensor_file_to_host(t, v->carrier, what, &host, &size);
    if (e) return ctosa_error_prefix(e, "input '%s': expected %s", name, rt_numpy_name(v->onnx_dtype));
    e = ctosa_runtime_set_input(rt, name, rt_numpy_name(v->onnx_dtype), t->rank, t->shape, host, size);
    free(host);
    return e;
}

/* Integer carriers of one value that differ between producer and consumer
 * (e.g. INT32 where a partition computed INT64): values converted,
 * checked to fit. */
static bool get_int(ctosa_dtype t, const void *p, uint64_t i, int64_t *out) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: *out = ((const uint8_t *)p)[i]; return true;
    case CTOSA_DTYPE_INT8: *out = ((const int8_t *)p)[i]; return true;
    case CTOSA_DTYPE_INT16: *out = ((const int16_t *)p)[i]; return true;
    case CTOSA_DTYPE_INT32: *out = ((const int32_t *)p)[i]; return true;
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: *out = ((const int64_t *)p)[i]; return true;
    default: return false;
    }
}
static bool put_int(ctosa_dtype t, void *p, uint64_t i, int64_t v) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
        if (v != 0 && v != 1) return false;
        ((uint8_t *)p)[i] = (uint8_t)v;
        return true;
    case CTOSA_DTYPE_INT8:
        if (v < INT8_MIN || v > INT8_MAX) return false;
        ((int8_t *)p)[i] = (int8_t)v;
        return true;
    case CTOSA_DTYPE_INT16:
        if (v < INT16_MIN || v > INT16_MAX) return false;
        ((int16_t *)p)[i] = (int16_t)v;
        return true;
    case CTOSA_DTYPE_INT32:
        if (v < INT32_MIN || v > INT32_MAX) return false;
        ((int32_t *)p)[i] = (int32_t)v;
        return true;
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: ((int64_t *)p)[i] = v; return true;
    default: return false;
    }
}

static ctosa_error *convert_in(const rt_step *st, uint32_t k) {
    const rt_value *v = st->in[k];
    const ctosa_interp_tensor *t = &st->tin[k];
    for (uint64_t i = 0; i < v->count; i++) {
        int64_t x = 0;
        if (!get_int(v->carrier, v->data, i, &x) || !put_int(t->dtype, st->conv[k], i, x))
            return ctosa_error_new(CTOSA_ERR_INVALID, "%s: input '%s' element %llu (%lld) does not fit %s",
                                   st->pub.name, v->name, (unsigned long long)i, (long long)x,
                                   ctosa_dtype_short(t->dtype));
    }
    return NULL;
}

/* A deferred step's output for this run: type, shape and a buffer of that
 * size (data copied when given). */
static ctosa_error *set_dynamic(ctosa_runtime *rt, rt_value *v, int32_t onnx_dtype, uint32_t rank,
                                const int64_t *shape, const void *data, uint64_t nbytes) {
    /* a uint8 value is computed as INT8 holding the same bits */
    if (onnx_dtype == 3 && v->declared == 2) onnx_dtype = 2;
    ctosa_dtype carrier = rt_carrier_of(onnx_dtype);
    if (carrier == CTOSA_DTYPE_UNKNOWN)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: value '%s' has type %s, which no TOSA type carries", rt->path, v->name,
                               ctosa_onnx_dtype_name(onnx_dtype) ? ctosa_onnx_dtype_name(onnx_dtype) : "?");
    if (rank > RT_MAX_RANK)
        return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: value '%s' has rank %u (at most %d)", rt->path, v->name,
                               rank, RT_MAX_RANK);
    uint64_t count = 0, size = 0;
    ctosa_error *e = value_bytes(rt, v->name, carrier, rank, shape, &count, &size);
    if (e) return e;
    if (data && nbytes != size)
        return ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: value '%s' holds %llu bytes, its shape needs %llu",
                               rt->path, v->name, (unsigned long long)nbytes, (unsigned long long)size);
    if (!v->data || v->size != size) {
        void *p = realloc(v->data, size ? size : 1);
        if (!p) return ctosa_error_nomem();
        v->data = p;
    }
    v->onnx_dtype = onnx_dtype;
    v->carrier = carrier;
    v->rank = rank;
    for (uint32_t i = 0; i < rank; i++) v->dims[i] = shape[i];
    v->count = count;
    v->size = size;
    if (data && size) memcpy(v->data, data, size);
    return NULL;
}

/* A deferred node's graph for this run: its inputs are the run's values
 * (a graph lowered with every value has none); its outputs take the
 * shapes the graph declares. */
static ctosa_error *run_deferred_graph(ctosa_runtime *rt, rt_step *st, const char *label,
                                       const ctosa_lower_result *r, void *state) {
    const ctosa_lower_partition *hp = &ctosa_lower_result_summary(r)->partitions[0];
    const ctosa_graph *g = hp->graph;
    const ctosa_region *rg = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    const ctosa_block *b = rg && rg->n_blocks ? rg->blocks[0] : NULL;
    if (!b)
        return ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: node '%s': no graph for this run", rt->path, label);
    ctosa_interp_tensor *tin = calloc(b->n_inputs + 1, sizeof *tin);
    ctosa_interp_tensor *tout = calloc(b->n_outputs + 1, sizeof *tout);
    ctosa_error *e = !tin || !tout ? ctosa_error_nomem() : NULL;
    for (uint32_t k = 0; k < b->n_inputs && !e; k++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, b->inputs[k]);
        const rt_value *v = strmap_get(&rt->values, b->inputs[k]);
        if (!t || !v || v->carrier != t->dtype || !same_tosa_shape(v->rank, v->shape, t))
            e = ctosa_error_new(CTOSA_ERR_INTERNAL,
                                "%s: node '%s': graph input '%s' is not the run's value of that name",
                                rt->path, label, b->inputs[k]);
        else tin[k] = interp_view(v, t->dtype);
    }
    for (uint32_t k = 0; k < b->n_outputs && !e; k++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, b->outputs[k]);
        rt_value *v = strmap_get(&rt->values, b->outputs[k]);
        if (!t || !v || !v->dynamic || v->producer != (int32_t)(st - rt->steps)) {
            e = ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: node '%s': graph output '%s' is not its output",
                                rt->path, label, b->outputs[k]);
            break;
        }
        int64_t shp[RT_MAX_RANK];
        for (uint32_t d = 0; d < t->rank && d < RT_MAX_RANK; d++) shp[d] = t->shape[d];
        if ((e = set_dynamic(rt, v, host_output_type(hp, v->name, t->dtype), t->rank, shp, NULL, 0))) break;
        tout[k] = interp_view(v, t->dtype);
    }
    const ctosa_backend *be = ctosa_backend_interpreter();
    bool own = !state;
    if (!e && own) {
        ctosa_backend_partition bp = {
            .name = label, .graph = g, .custom_ops = rt->opt.custom_ops, .interp = &rt->iopt_part};
        e = be->prepare(be->user, &bp, &state);
    }
    if (!e) e = be->run(be->user, state, tin, b->n_inputs, tout, b->n_outputs);
    if (own && state) be->release(be->user, state);
    free(tin);
    free(tout);
    return e;
}

/* A deferred node's outputs its lowering computed: they are the run's
 * (all of them when it folded, else those its graph does not give). */
static ctosa_error *set_folded(ctosa_runtime *rt, const ctosa_onnx_node *n, const char *label,
                               const ctosa_lower_result *r, bool all) {
    ctosa_error *e = NULL;
    for (uint32_t k = 0; k < n->n_outputs && !e; k++) {
        ctosa_lower_constant c;
        if (!n->outputs[k][0]) continue;
        if (!ctosa_lower_result_constant(r, n->outputs[k], &c)) {
            if (all)
                e = ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: node '%s': output '%s' was not computed",
                                    rt->path, label, n->outputs[k]);
        } else
            e = set_dynamic(rt, strmap_get(&rt->values, n->outputs[k]), c.onnx_dtype, c.rank, c.shape, c.data,
                            c.nbytes);
    }
    return e;
}

/* What a deferred node's lowering on a run depends on: each input's type
 * and shape, and the data of those passed with it (passes_data). */
static void cache_key(ctosa_runtime *rt, const ctosa_onnx_node *n, strbuf *key) {
    sb_init(key);
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        const rt_value *v = n->inputs[k][0] ? strmap_get(&rt->values, n->inputs[k]) : NULL;
        uint64_t head[3] = {k, v ? (uint64_t)v->onnx_dtype : 0, v ? v->rank : 0};
        sb_putn(key, (const char *)head, sizeof head);
        if (!v) continue;
        sb_putn(key, (const char *)v->shape, v->rank * sizeof *v->shape);
        if (passes_data(rt, v) && !v->is_const) sb_putn(key, (const char *)v->data, (size_t)v->size);
    }
}

/* The cache of node n, run by step st: its own, or one of an If's branch
 * nodes (several share the If's step). */
static rt_cache *cache_for(rt_step *st, const ctosa_onnx_node *n) {
    if (n == st->node) return &st->cache;
    for (uint32_t i = 0; i < st->n_branch; i++)
        if (st->branch[i].node == n) return &st->branch[i];
    rt_cache *nb = realloc(st->branch, (st->n_branch + 1) * sizeof *nb);
    if (!nb) return NULL;
    st->branch = nb;
    memset(&nb[st->n_branch], 0, sizeof *nb);
    nb[st->n_branch].node = n;
    return &nb[st->n_branch++];
}

/* Lowers node n with the values mode gives (its outputs untyped). */
static ctosa_error *lower_on_run(ctosa_runtime *rt, const ctosa_onnx_node *n, const char *label,
                                 rt_values mode, ctosa_lower_result **r, bool *folded, bool *later) {
    rt_host_src src = host_src(rt);
    rt->values_mode = mode;
    rt->lowering = n;
    ctosa_error *e = rt_host_lower(&src, n, label, r, folded, later);
    rt->values_mode = RT_VALUES_CONST;
    rt->lowering = NULL;
    return e;
}

/* A graph lowered with the small values can run on this run's values when
 * each input is a value of the carrier and shape it declares. */
static bool runs_on_values(ctosa_runtime *rt, const ctosa_lower_result *r) {
    const ctosa_graph *g = ctosa_lower_result_summary(r)->partitions[0].graph;
    const ctosa_region *rg = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    const ctosa_block *b = rg && rg->n_blocks ? rg->blocks[0] : NULL;
    for (uint32_t k = 0; b && k < b->n_inputs; k++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, b->inputs[k]);
        const rt_value *v = strmap_get(&rt->values, b->inputs[k]);
        if (!t || !v || v->carrier != t->dtype || !same_tosa_shape(v->rank, v->shape, t)) return false;
    }
    return b != NULL;
}

static ctosa_error *run_node(ctosa_runtime *rt, rt_step *st, const ctosa_onnx_node *n, const char *label,
                             uint32_t depth);

/* An If: the branch its condition picks, node by node, each as a deferred
 * node; the branch's outputs become the If's. */
static ctosa_error *run_if(ctosa_runtime *rt, rt_step *st, const ctosa_onnx_node *n, const char *label,
                           uint32_t depth) {
    const rt_value *cv = n->n_inputs ? strmap_get(&rt->values, n->inputs[0]) : NULL;
    if (!cv || cv->count != 1 || cv->carrier != CTOSA_DTYPE_BOOL)
        return ctosa_error_new(CTOSA_ERR_INVALID, "%s: node '%s' (If): the condition is not one bool",
                               rt->path, label);
    bool cond = ((const uint8_t *)cv->data)[0] != 0;
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, cond ? "then_branch" : "else_branch");
    const ctosa_onnx_graph *g = a && a->type == CTOSA_ONNX_ATTR_GRAPH ? a->g : NULL;
    if (!g || g->n_outputs != n->n_outputs)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: node '%s' (If): no %s with %u outputs", rt->path, label,
                               cond ? "then_branch" : "else_branch", n->n_outputs);
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < g->n_initializers && !e; i++) {
        const ctosa_onnx_tensor *t = &g->initializers[i];
        if (strmap_has(&rt->values, t->name)) continue; /* made by an earlier run */
        const void *data;
        uint64_t nb;
        if (!(e = ctosa_onnx_tensor_data(rt->m, t, &data, &nb)))
            e = add_const(rt, t->name, t->dtype, t->rank, t->dims, data, nb);
    }
    for (uint32_t i = 0; i < g->n_nodes && !e; i++) {
        const ctosa_onnx_node *bn = &g->nodes[i];
        const char *bl = node_label(rt, bn, i);
        if (!bl) return ctosa_error_nomem();
        if (!(e = dynamic_outputs(rt, (uint32_t)(st - rt->steps), bn, bl, true)))
            e = run_node(rt, st, bn, bl, depth + 1);
    }
    for (uint32_t k = 0; k < n->n_outputs && !e; k++) {
        const rt_value *bv = strmap_get(&rt->values, g->outputs[k].name);
        rt_value *v = n->outputs[k][0] ? strmap_get(&rt->values, n->outputs[k]) : NULL;
        if (!v) continue;
        if (!bv)
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: node '%s' (If): branch output '%s' is not computed",
                                   rt->path, label, g->outputs[k].name);
        e = set_dynamic(rt, v, bv->onnx_dtype, bv->rank, bv->shape, bv->data, bv->size);
    }
    return e;
}

/* A deferred node on a run. It is lowered first with the run's shapes and
 * small integer values only: a graph made so holds for any data of the
 * other inputs, so it is kept (prepared, its weights packed) and run again
 * while the key stays the same; and folded outputs are kept the same way.
 * When that lowering needs more values (the data decide a shape), each
 * run is lowered with all of them. An If runs its branch. */
static ctosa_error *run_node(ctosa_runtime *rt, rt_step *st, const ctosa_onnx_node *n, const char *label,
                             uint32_t depth) {
    if (depth > 64)
        return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: node '%s': If nested more than 64 deep", rt->path,
                               label);
    if (is_if(n)) return run_if(rt, st, n, label, depth);
    rt_cache *c = cache_for(st, n);
    if (!c) return ctosa_error_nomem();
    rt->values_mode = RT_VALUES_SMALL;
    strbuf key;
    cache_key(rt, n, &key);
    rt->values_mode = RT_VALUES_CONST;
    if (key.failed) {
        sb_free(&key);
        return ctosa_error_nomem();
    }
    ctosa_error *e = NULL;
    bool kept = c->node == n && (c->r || c->by_values) && c->key.len == key.len &&
                (!key.len || memcmp(c->key.s, key.s, key.len) == 0);
    if (!kept) {
        cache_clear(c);
        c->node = n;
        c->key = key;
        bool later = false;
        e = lower_on_run(rt, n, label, RT_VALUES_SMALL, &c->r, &c->folded, &later);
        if (e) { /* the lowering with every value decides, as at load */
            ctosa_error_free(e);
            e = NULL;
            c->by_values = true;
        } else if (!e && !c->folded && !runs_on_values(rt, c->r)) {
            c->by_values = true;
        } else if (!e && !c->folded) {
            ctosa_backend_partition bp = {.name = label,
                                          .graph = ctosa_lower_result_summary(c->r)->partitions[0].graph,
                                          .custom_ops = rt->opt.custom_ops,
                                          .interp = &rt->iopt_part};
            const ctosa_backend *be = ctosa_backend_interpreter();
            e = be->prepare(be->user, &bp, &c->state);
        }
    } else {
        sb_free(&key);
    }
    if (!e && c->by_values) {
        ctosa_lower_result *r = NULL;
        bool folded = false, later = false;
        e = lower_on_run(rt, n, label, RT_VALUES_ALL, &r, &folded, &later);
        if (!e && !folded) e = run_deferred_graph(rt, st, label, r, NULL);
        if (!e) e = set_folded(rt, n, label, r, folded);
        ctosa_lower_result_free(r);
    } else if (!e) {
        if (!c->folded) e = run_deferred_graph(rt, st, label, c->r, c->state);
        if (!e) e = set_folded(rt, n, label, c->r, c->folded);
    }
    if (e) { /* a failed lowering is tried again on the next run */
        cache_clear(c);
        c->node = n;
    }
    return e ? ctosa_error_prefix(e, "%s", rt->path) : NULL;
}

/* A dynamic value read by a partition: the shape its graph was made for,
 * and a carrier it can take. */
static ctosa_error *check_dynamic_in(ctosa_runtime *rt, const rt_step *st, uint32_t k) {
    const rt_value *v = st->in[k];
    const ctosa_interp_tensor *t = &st->tin[k];
    char a[256], b[256];
    if (!same_shape(v->rank, v->shape, t->rank, t->shape))
        return ctosa_error_new(CTOSA_ERR_INVALID,
                               "%s: partition %s: input '%s' is %s in this run, the graph needs %s", rt->path,
                               st->pub.name, v->name, shape_text(a, sizeof a, v->rank, v->shape),
                               shape_text(b, sizeof b, t->rank, t->shape));
    if (v->carrier != t->dtype && !(st->conv[k] && is_int_carrier(v->carrier)))
        return ctosa_error_new(
            CTOSA_ERR_INVALID, "%s: partition %s: input '%s' is %s in this run, the graph needs %s", rt->path,
            st->pub.name, v->name, ctosa_dtype_short(v->carrier), ctosa_dtype_short(t->dtype));
    return NULL;
}

/* One step of a run: a deferred node lowered and run, or a graph on its
 * backend with its inputs bound. */
static ctosa_error *run_step(ctosa_runtime *rt, rt_step *st) {
    if (st->node) return run_node(rt, st, st->node, st->pub.name, 0);
    for (uint32_t k = 0; k < st->n_in; k++) {
        ctosa_error *e = st->in[k]->dynamic ? check_dynamic_in(rt, st, k) : NULL;
        if (e) return e;
        if (st->conv[k] && st->in[k]->carrier != st->tin[k].dtype) {
            e = convert_in(st, k);
            if (e) return e;
            st->tin[k].data = st->conv[k];
        } else {
            st->tin[k].data = st->in[k]->data;
        }
    }
    ctosa_error *e = st->be->run(st->be->user, st->state, st->tin, st->n_in, st->tout, st->n_out);
    if (!e) return NULL;
    if (st->pub.partition) return ctosa_error_prefix(e, "%s: partition %s", rt->path, st->pub.name);
    return ctosa_error_prefix(e, "%s: node '%s' (%s) on the host", rt->path, st->pub.name, st->pub.op_type);
}

ctosa_error *ctosa_runtime_run(ctosa_runtime *rt) {
    char sbuf[256];
    for (uint32_t i = 0; i < rt->n_inputs; i++) {
        const rt_value *v = rt->inputs[i];
        if (!v->set)
            return ctosa_error_new(CTOSA_ERR_USAGE, "%s: input '%s' (%s %s) is not given", rt->path, v->name,
                                   rt_numpy_name(v->onnx_dtype),
                                   shape_text(sbuf, sizeof sbuf, v->rank, v->shape));
    }
    for (uint32_t s = 0; s < rt->n_steps; s++) {
        rt_step *st = &rt->steps[s];
        if (st->pub.at_load) continue;
        double t0 = now_seconds();
        ctosa_error *e = run_step(rt, st);
        st->pub.seconds += now_seconds() - t0;
        st->pub.runs++;
        if (e) return e;
    }
    return NULL;
}

ctosa_error *ctosa_runtime_get_output(ctosa_runtime *rt, const char *name, ctosa_runtime_tensor *out) {
    for (uint32_t i = 0; i < rt->n_outputs; i++)
        if (strcmp(rt->outputs[i]->name, name) == 0) {
            info_of(rt->outputs[i], out, true);
            return NULL;
        }
    return ctosa_error_new(CTOSA_ERR_USAGE, "%s: '%s' is not a model output", rt->path, name);
}

ctosa_error *ctosa_runtime_tensor_write_npy(const char *path, const ctosa_runtime_tensor *t) {
    static const struct {
        const char *numpy, *descr;
    } D[] = {{"float32", "<f4"}, {"uint8", "|u1"}, {"int8", "|i1"},    {"int16", "<i2"},   {"int32", "<i4"},
             {"int64", "<i8"},   {"bool", "|b1"},  {"float16", "<f2"}, {"bfloat16", "<u2"}};
    for (size_t i = 0; t->dtype && i < sizeof D / sizeof D[0]; i++)
        if (strcmp(D[i].numpy, t->dtype) == 0)
            return npy_write_file(path, D[i].descr, t->rank, t->shape, t->data, t->size);
    return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: tensor '%s' of type %s cannot be written as .npy",
                           path, t->name, t->dtype ? t->dtype : "?");
}
