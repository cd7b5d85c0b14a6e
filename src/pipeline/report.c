/* report.c - the lowering report (contract schema, deterministic key
 * order) and the partitioned ONNX model. */
#include <stdint.h>
#include <string.h>

#include "onnx/onnx_inline.h"
#include "onnx/onnx_writer.h"
#include "pipeline/lower_result.h"

static void json_io(strbuf *b, const ctosa_lower_io *io) {
    sb_puts(b, "{\"name\": ");
    sb_json_str(b, io->name);
    sb_puts(b, ", \"dtype\": ");
    sb_json_str(b, io->dtype);
    sb_puts(b, ", \"shape\": [");
    for (uint32_t i = 0; i < io->rank; i++) sb_printf(b, "%s%lld", i ? ", " : "", (long long)io->shape[i]);
    sb_puts(b, "]");
    if (io->quantized) {
        sb_puts(b, ", \"scale\": ");
        sb_json_double(b, io->scale);
        sb_printf(b, ", \"zero_point\": %lld", (long long)io->zero_point);
    }
    sb_puts(b, "}");
}

/* ---- "graph": the model's nodes, edges (by tensor name), attributes
 * (summarised) and the tensor types known after lowering, for the HTML
 * report (docs/report.md). Additive to the contract schema. */

#define REPORT_LIST_MAX 16  /* list attributes: first values shown */
#define REPORT_ATTRS_MAX 32 /* attributes per node */
#define REPORT_STR_MAX 256  /* bytes of a string attribute */

static void json_dims(strbuf *b, uint32_t rank, const int64_t *d) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < rank; i++) sb_printf(b, "%s%lld", i ? ", " : "", (long long)d[i]);
    sb_putc(b, ']');
}

/* A list attribute: an array when short, else {"count": N, "first": [...]}. */
static void json_attr_list(strbuf *b, const ctosa_onnx_attr *at) {
    uint32_t n = at->count < REPORT_LIST_MAX ? at->count : REPORT_LIST_MAX;
    if (n < at->count) sb_printf(b, "{\"count\": %u, \"first\": ", at->count);
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_puts(b, ", ");
        if (at->type == CTOSA_ONNX_ATTR_INTS) sb_printf(b, "%lld", (long long)at->ints[i]);
        else if (at->type == CTOSA_ONNX_ATTR_FLOATS) sb_json_double(b, at->floats[i]);
        else
            sb_json_strn(b, (const char *)at->strings[i].p,
                         at->strings[i].n < REPORT_STR_MAX ? (size_t)at->strings[i].n : REPORT_STR_MAX);
    }
    sb_putc(b, ']');
    if (n < at->count) sb_putc(b, '}');
}

static void json_attr(strbuf *b, const ctosa_onnx_attr *at) {
    switch (at->type) {
    case CTOSA_ONNX_ATTR_INT: sb_printf(b, "%lld", (long long)at->i); break;
    case CTOSA_ONNX_ATTR_FLOAT: sb_json_double(b, at->f); break;
    case CTOSA_ONNX_ATTR_STRING:
        sb_json_strn(b, (const char *)at->s.p, at->s.n < REPORT_STR_MAX ? (size_t)at->s.n : REPORT_STR_MAX);
        break;
    case CTOSA_ONNX_ATTR_INTS:
    case CTOSA_ONNX_ATTR_FLOATS:
    case CTOSA_ONNX_ATTR_STRINGS: json_attr_list(b, at); break;
    case CTOSA_ONNX_ATTR_TENSOR: {
        /* Never the data: a dtype and a shape are what a reader needs. */
        const char *dn = at->t ? onnx_dtype_numpy_name(at->t->dtype) : NULL;
        sb_puts(b, "{\"tensor\": {\"dtype\": ");
        sb_json_str(b, dn ? dn : "unknown");
        sb_puts(b, ", \"shape\": ");
        json_dims(b, at->t ? at->t->rank : 0, at->t ? at->t->dims : NULL);
        sb_puts(b, "}}");
        break;
    }
    case CTOSA_ONNX_ATTR_GRAPH:
        sb_puts(b, "{\"graph\": ");
        sb_json_str(b, at->g && at->g->name ? at->g->name : "");
        sb_printf(b, ", \"nodes\": %u}", at->g ? at->g->n_nodes : 0);
        break;
    default: {
        const char *tn = ctosa_onnx_attr_type_name(at->type);
        sb_puts(b, "{\"type\": ");
        sb_json_str(b, tn ? tn : "UNDEFINED");
        sb_printf(b, ", \"count\": %u}", at->count);
    }
    }
}

static void json_value_type(strbuf *b, const lw_val *v) {
    const char *dn = onnx_dtype_numpy_name(v->v.onnx_dtype);
    sb_puts(b, "\"dtype\": ");
    sb_json_str(b, dn ? dn : "unknown");
    sb_puts(b, ", \"shape\": ");
    json_dims(b, v->v.rank, v->v.shape);
    if (v->v.quantized) {
        sb_puts(b, ", \"scale\": ");
        sb_json_double(b, v->v.scale);
        sb_printf(b, ", \"zero_point\": %lld", (long long)v->v.zero_point);
    }
}

/* One tensor entry, the first time name is seen. */
static void json_graph_tensor(strbuf *b, lower_session *s, strmap *seen, const char *name, bool *first) {
    if (!name[0] || strmap_has(seen, name)) return;
    if (!strmap_put(seen, name, (void *)1)) b->failed = true;
    lw_val *v = lw_lookup(s, name);
    if (!v || !v->known) return;
    sb_puts(b, *first ? "\n      {\"name\": " : ",\n      {\"name\": ");
    *first = false;
    sb_json_str(b, name);
    sb_puts(b, ", ");
    json_value_type(b, v);
    if (v->initializer) sb_puts(b, ", \"initializer\": true");
    else if (v->v.data) sb_puts(b, ", \"constant\": true");
    sb_putc(b, '}');
}

static void json_graph_io(strbuf *b, const ctosa_onnx_value_info *vi, uint32_t n) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        sb_puts(b, i ? ", " : "");
        sb_json_str(b, vi[i].name);
    }
    sb_putc(b, ']');
}

static void json_names(strbuf *b, const char *const *s, uint32_t n) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        sb_puts(b, i ? ", " : "");
        sb_json_str(b, s[i]);
    }
    sb_putc(b, ']');
}

static void json_graph(strbuf *b, lower_session *s) {
    const ctosa_onnx_graph *g = s->g;
    sb_puts(b, ",\n  \"graph\": {\n    \"name\": ");
    sb_json_str(b, g->name ? g->name : "");
    sb_puts(b, ",\n    \"inputs\": ");
    json_graph_io(b, g->inputs, g->n_inputs);
    sb_puts(b, ",\n    \"outputs\": ");
    json_graph_io(b, g->outputs, g->n_outputs);
    sb_puts(b, ",\n    \"nodes\": [");
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const ctosa_onnx_node *on = &g->nodes[i];
        const lw_nodeinfo *nd = &s->nodes[i];
        sb_puts(b, i ? ",\n      {\"name\": " : "\n      {\"name\": ");
        sb_json_str(b, nd->label);
        sb_puts(b, ", \"op_type\": ");
        sb_json_str(b, on->op_type);
        if (on->domain && on->domain[0]) {
            sb_puts(b, ", \"domain\": ");
            sb_json_str(b, on->domain);
        }
        sb_puts(b, ", \"inputs\": ");
        json_names(b, on->inputs, on->n_inputs);
        sb_puts(b, ", \"outputs\": ");
        json_names(b, on->outputs, on->n_outputs);
        if (on->n_attrs) {
            sb_puts(b, ", \"attributes\": {");
            uint32_t na = on->n_attrs < REPORT_ATTRS_MAX ? on->n_attrs : REPORT_ATTRS_MAX;
            for (uint32_t k = 0; k < na; k++) {
                /* A malformed model may repeat a name: keep JSON keys unique. */
                bool dup = false;
                for (uint32_t j = 0; j < k && !dup; j++)
                    dup = strcmp(on->attrs[j].name, on->attrs[k].name) == 0;
                if (dup) continue;
                sb_puts(b, k ? ", " : "");
                sb_json_str(b, on->attrs[k].name);
                sb_puts(b, ": ");
                json_attr(b, &on->attrs[k]);
            }
            sb_putc(b, '}');
            if (na < on->n_attrs) sb_printf(b, ", \"attributes_omitted\": %u", on->n_attrs - na);
        }
        if (nd->part >= 0) sb_printf(b, ", \"partition\": %d}", nd->part);
        else {
            sb_puts(b, ", \"fallback\": ");
            sb_json_str(b, lower_code_name(nd->code));
            sb_putc(b, '}');
        }
    }
    sb_puts(b, s->n_nodes ? "\n    ],\n    \"tensors\": [" : "],\n    \"tensors\": [");
    strmap seen;
    strmap_init(&seen);
    bool first = true;
    for (uint32_t i = 0; i < g->n_inputs; i++) json_graph_tensor(b, s, &seen, g->inputs[i].name, &first);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const ctosa_onnx_node *on = &g->nodes[i];
        for (uint32_t k = 0; k < on->n_inputs; k++) json_graph_tensor(b, s, &seen, on->inputs[k], &first);
        for (uint32_t k = 0; k < on->n_outputs; k++) json_graph_tensor(b, s, &seen, on->outputs[k], &first);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) json_graph_tensor(b, s, &seen, g->outputs[i].name, &first);
    strmap_free(&seen);
    sb_puts(b, first ? "]\n  }" : "\n    ]\n  }");
}

/* "inlined_functions": every expanded call of a model-local function (the
 * partitioner sees the bodies' nodes, named "<call>/<node>"): the nodes of
 * its body (nested calls' included), the partitions they went to and those
 * that fell back. Callers come before their callees. */
static void json_inlined(strbuf *b, lower_session *s) {
    if (!s->n_inl_calls) return;
    sb_puts(b, ",\n  \"inlined_functions\": [");
    for (uint32_t c = 0; c < s->n_inl_calls; c++) {
        const onnx_inline_call *ic = &s->inl_calls[c];
        sb_puts(b, c ? ",\n    {\"node\": " : "\n    {\"node\": ");
        sb_json_str(b, ic->node);
        sb_puts(b, ", \"op_type\": ");
        sb_json_str(b, ic->op_type);
        sb_puts(b, ", \"domain\": ");
        sb_json_str(b, ic->domain);
        sb_printf(b, ", \"depth\": %u, \"nodes\": [", ic->depth);
        for (uint32_t i = ic->first; i < ic->end; i++) {
            sb_puts(b, i > ic->first ? ", " : "");
            sb_json_str(b, s->nodes[i].label);
        }
        sb_puts(b, "], \"partitions\": [");
        int32_t last = -1;
        bool first = true;
        for (;;) { /* ascending distinct ids, without allocating */
            int32_t next = INT32_MAX;
            for (uint32_t i = ic->first; i < ic->end; i++)
                if (s->nodes[i].part > last && s->nodes[i].part < next) next = s->nodes[i].part;
            if (next == INT32_MAX) break;
            sb_printf(b, "%s%d", first ? "" : ", ", next);
            first = false;
            last = next;
        }
        sb_puts(b, "], \"fallback\": [");
        first = true;
        for (uint32_t i = ic->first; i < ic->end; i++) {
            if (s->nodes[i].part >= 0) continue;
            sb_puts(b, first ? "" : ", ");
            sb_json_str(b, s->nodes[i].label);
            first = false;
        }
        sb_puts(b, "]}");
    }
    sb_puts(b, "\n  ]");
}

ctosa_error *lw_build_report(ctosa_lower_result *r, const char *model_path) {
    lower_session *s = &r->s;
    ctosa_spec_format(&s->spec, r->spec_str, sizeof r->spec_str);
    uint32_t n_fb = 0, n_del = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (s->nodes[i].part >= 0) n_del++;
        else n_fb++;
    }
    r->fallback = arena_zalloc(&r->a, (n_fb + 1) * sizeof *r->fallback);
    if (!r->fallback) return ctosa_error_nomem();
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const lw_nodeinfo *nd = &s->nodes[i];
        if (nd->part >= 0) continue;
        const ctosa_onnx_node *on = &s->g->nodes[i];
        ctosa_lower_fallback *f = &r->fallback[k++];
        f->node = nd->label;
        f->op_type = on->op_type;
        f->domain = on->domain;
        f->code = lower_code_name(nd->code);
        f->needs_values = lower_code_needs_values(nd->code);
        f->reason = nd->reason ? nd->reason : "";
        f->input = nd->code == LOWER_NEEDS_CONSTANT || nd->input ? nd->input : NULL;
    }
    ctosa_lower_summary *sum = &r->sum;
    sum->model = arena_strdup(&r->a, model_path);
    sum->spec = r->spec_str;
    sum->nodes_total = s->n_nodes;
    sum->nodes_delegated = n_del;
    sum->n_partitions = r->n_parts;
    sum->n_fallback = n_fb;
    sum->partitions = r->pub_parts;
    sum->fallback = r->fallback;
    /* Nodes that became TOSA CUSTOM operators through a registration. */
    uint32_t n_cu = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const char *dn, *on;
        bool ov;
        n_cu += s->nodes[i].part >= 0 && lw_custom_describe(s, i, &dn, &on, &ov);
    }
    ctosa_lower_custom *cu = arena_zalloc(&r->a, (n_cu + 1) * sizeof *cu);
    if (!cu) return ctosa_error_nomem();
    n_cu = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        ctosa_lower_custom *x = &cu[n_cu];
        if (s->nodes[i].part < 0 ||
            !lw_custom_describe(s, i, &x->domain_name, &x->operator_name, &x->overrides_builtin))
            continue;
        x->node = s->nodes[i].label;
        x->op_type = s->g->nodes[i].op_type;
        x->domain = s->g->nodes[i].domain;
        x->partition = (uint32_t)s->nodes[i].part;
        n_cu++;
    }
    sum->n_custom = n_cu;
    sum->custom = cu;

    strbuf b;
    sb_init(&b);
    sb_puts(&b, "{\n  \"tool\": \"ctosa\",\n  \"version\": ");
    sb_json_str(&b, CTOSA_VERSION_STRING);
    sb_puts(&b, ",\n  \"model\": ");
    sb_json_str(&b, model_path);
    sb_puts(&b, ",\n  \"spec\": ");
    sb_json_str(&b, r->spec_str);
    sb_printf(&b, ",\n  \"nodes_total\": %u,\n  \"nodes_delegated\": %u,\n  \"partitions\": [", s->n_nodes,
              n_del);
    for (uint32_t p = 0; p < r->n_parts; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        sb_printf(&b, "%s\n    {\"id\": %u, \"file\": ", p ? "," : "", pp->id);
        sb_json_str(&b, pp->file);
        sb_puts(&b, ",\n     \"nodes\": [");
        for (uint32_t i = 0; i < pp->n_nodes; i++) {
            if (i) sb_puts(&b, ", ");
            sb_json_str(&b, pp->nodes[i]);
        }
        sb_puts(&b, "],\n     \"inputs\": [");
        for (uint32_t i = 0; i < pp->n_inputs; i++) {
            if (i) sb_puts(&b, ", ");
            json_io(&b, &pp->inputs[i]);
        }
        sb_puts(&b, "],\n     \"outputs\": [");
        for (uint32_t i = 0; i < pp->n_outputs; i++) {
            if (i) sb_puts(&b, ", ");
            json_io(&b, &pp->outputs[i]);
        }
        sb_puts(&b, "],\n     \"tosa_ops\": {");
        for (uint32_t i = 0; i < pp->n_op_counts; i++) {
            if (i) sb_puts(&b, ", ");
            sb_json_str(&b, pp->op_names[i]);
            sb_printf(&b, ": %u", pp->op_counts[i]);
        }
        sb_puts(&b, "}}");
    }
    sb_puts(&b, r->n_parts ? "\n  ],\n  \"fallback\": [" : "],\n  \"fallback\": [");
    for (uint32_t i = 0; i < n_fb; i++) {
        const ctosa_lower_fallback *f = &r->fallback[i];
        sb_puts(&b, i ? ",\n    {\"node\": " : "\n    {\"node\": ");
        sb_json_str(&b, f->node);
        sb_puts(&b, ", \"op_type\": ");
        sb_json_str(&b, f->op_type);
        sb_puts(&b, ", \"domain\": ");
        sb_json_str(&b, f->domain);
        sb_puts(&b, ", \"code\": ");
        sb_json_str(&b, f->code);
        sb_puts(&b, ", \"reason\": ");
        sb_json_str(&b, f->reason);
        if (f->input) {
            sb_puts(&b, ", \"input\": ");
            sb_json_str(&b, f->input);
        }
        sb_puts(&b, "}");
    }
    sb_puts(&b, n_fb ? "\n  ]" : "]");
    if (n_cu) {
        sb_puts(&b, ",\n  \"custom_ops\": [");
        for (uint32_t i = 0; i < n_cu; i++) {
            sb_puts(&b, i ? ",\n    {\"node\": " : "\n    {\"node\": ");
            sb_json_str(&b, cu[i].node);
            sb_puts(&b, ", \"op_type\": ");
            sb_json_str(&b, cu[i].op_type);
            sb_puts(&b, ", \"domain\": ");
            sb_json_str(&b, cu[i].domain);
            sb_printf(&b, ", \"partition\": %u, \"domain_name\": ", cu[i].partition);
            sb_json_str(&b, cu[i].domain_name);
            sb_puts(&b, ", \"operator_name\": ");
            sb_json_str(&b, cu[i].operator_name);
            sb_printf(&b, ", \"overrides_builtin\": %s}", cu[i].overrides_builtin ? "true" : "false");
        }
        sb_puts(&b, "\n  ]");
    }
    json_inlined(&b, s);
    json_graph(&b, s);
    sb_puts(&b, "\n}\n");
    if (b.failed) {
        sb_free(&b);
        return ctosa_error_nomem();
    }
    r->report = sb_take(&b);
    sum->report_json = r->report;
    return NULL;
}

/* A scalar initializer for a quantization parameter, named after value
 * `of` and not clashing with any model value. */
static const char *qparam_init(ctosa_lower_result *r, onnx_const_init *ci, const char *of, const char *what,
                               int32_t dtype, double v) {
    arena *a = &r->a;
    const char *nm = arena_printf(a, "%s_%s", of, what);
    for (uint32_t k = 1; nm && lw_lookup(&r->s, nm); k++) nm = arena_printf(a, "%s_%s_%u", of, what, k);
    void *d = arena_alloc(a, 8);
    if (!nm || !d) return NULL;
    uint64_t nb = 1;
    if (dtype == CTOSA_ONNX_FLOAT) {
        float f = (float)v;
        memcpy(d, &f, 4);
        nb = 4;
    } else if (dtype == CTOSA_ONNX_INT16) {
        int16_t x = (int16_t)v;
        memcpy(d, &x, 2);
        nb = 2;
    } else if (dtype == CTOSA_ONNX_INT8) {
        int8_t x = (int8_t)v;
        memcpy(d, &x, 1);
    } else {
        uint8_t x = (uint8_t)v;
        memcpy(d, &x, 1);
    }
    *ci = (onnx_const_init){nm, dtype, 0, NULL, d, nb};
    return nm;
}

/* Every partition input and output declared with its ONNX type and shape
 * (an EPContext output has no type otherwise); quantized ones annotated
 * with their scale and zero point (two scalar initializers each). */
static ctosa_error *lw_boundary_decls(ctosa_lower_result *r, onnx_rewrite *rw, onnx_const_init **ci,
                                      uint32_t *n, uint32_t *cap) {
    lower_session *s = &r->s;
    arena *a = &r->a;
    uint32_t total = 0;
    for (uint32_t p = 0; p < r->n_parts; p++) total += r->pub_parts[p].n_inputs + r->pub_parts[p].n_outputs;
    onnx_value_decl *d = arena_zalloc(a, (total + 1) * sizeof *d);
    if (!d) return ctosa_error_nomem();
    strmap seen, declared;
    strmap_init(&seen);
    strmap_init(&declared);
    for (uint32_t i = 0; i < s->g->n_inputs; i++) strmap_put(&declared, s->g->inputs[i].name, (void *)1);
    for (uint32_t i = 0; i < s->g->n_outputs; i++) strmap_put(&declared, s->g->outputs[i].name, (void *)1);
    uint32_t nd = 0;
    ctosa_error *e = NULL;
    for (uint32_t p = 0; p < r->n_parts && !e; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        for (uint32_t k = 0; k < pp->n_inputs + pp->n_outputs && !e; k++) {
            const ctosa_lower_io *io = k < pp->n_inputs ? &pp->inputs[k] : &pp->outputs[k - pp->n_inputs];
            lw_val *v = lw_lookup(s, io->name);
            if (!v || !v->known || strmap_has(&seen, io->name)) continue;
            if (!strmap_put(&seen, io->name, (void *)1)) {
                e = ctosa_error_nomem();
                break;
            }
            onnx_value_decl *o = &d[nd++];
            *o = (onnx_value_decl){
                io->name, v->v.onnx_dtype, io->rank, io->shape, !strmap_has(&declared, io->name), NULL, NULL};
            if (!io->quantized) continue;
            if (*n + 2 > *cap) {
                uint32_t nc = *cap * 2 + 8;
                onnx_const_init *nv = arena_alloc(a, nc * sizeof *nv);
                if (!nv) {
                    e = ctosa_error_nomem();
                    break;
                }
                if (*n) memcpy(nv, *ci, *n * sizeof *nv);
                *ci = nv;
                *cap = nc;
            }
            o->scale_init = qparam_init(r, &(*ci)[*n], io->name, "scale", CTOSA_ONNX_FLOAT, io->scale);
            o->zp_init = o->scale_init ? qparam_init(r, &(*ci)[*n + 1], io->name, "zero_point",
                                                     v->v.onnx_dtype, (double)io->zero_point)
                                       : NULL;
            if (!o->zp_init) e = ctosa_error_nomem();
            *n += 2;
        }
    }
    strmap_free(&seen);
    strmap_free(&declared);
    rw->n_decls = nd;
    rw->decls = d;
    return e;
}

/* What the partitioned ONNX needs beyond the node list:
 * - compile-time values (folded outputs of delegated nodes, e.g. a
 *   Dropout mask) that a CPU node reads or that are graph outputs: no kept
 *   node produces them, so they become initializers;
 * - with inlined functions: the inlined nodes (encoded), the functions'
 *   opset imports, and ModelProto.functions dropped when no kept node can
 *   still call one (only subgraph attributes copied as they are can). */
static ctosa_error *lw_partitioned_extras(ctosa_lower_result *r, onnx_rewrite *rw) {
    lower_session *s = &r->s;
    arena *a = &r->a;
    uint32_t cap = 0, n = 0;
    onnx_const_init *ci = NULL;
    strmap seen;
    strmap_init(&seen);
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i <= s->n_nodes && !e; i++) {
        const char *const *names;
        uint32_t cnt;
        if (i < s->n_nodes) {
            if (!s->nodes[i].on_cpu) continue;
            names = s->g->nodes[i].inputs;
            cnt = s->g->nodes[i].n_inputs;
        } else {
            names = NULL;
            cnt = s->g->n_outputs;
        }
        for (uint32_t k = 0; k < cnt; k++) {
            const char *nm = names ? names[k] : s->g->outputs[k].name;
            lw_val *v = nm[0] ? lw_lookup(s, nm) : NULL;
            if (!v || !v->v.data || v->producer < 0 || s->nodes[v->producer].on_cpu || strmap_has(&seen, nm))
                continue;
            uint64_t count = 1, need = 0;
            for (uint32_t d = 0; d < v->v.rank; d++) count *= (uint64_t)v->v.shape[d];
            /* Only dense fixed-width values can be raw_data (not strings). */
            if (!ctosa_onnx_dtype_storage(v->v.onnx_dtype, count, &need) || need != v->v.nbytes) continue;
            if (n == cap) {
                uint32_t nc = cap ? cap * 2 : 8;
                onnx_const_init *nv = arena_alloc(a, nc * sizeof *nv);
                if (!nv) {
                    e = ctosa_error_nomem();
                    break;
                }
                if (n) memcpy(nv, ci, n * sizeof *nv);
                ci = nv;
                cap = nc;
            }
            ci[n++] = (onnx_const_init){nm, v->v.onnx_dtype, v->v.rank, v->v.shape, v->v.data, v->v.nbytes};
            if (!strmap_put(&seen, nm, (void *)1)) e = ctosa_error_nomem();
        }
    }
    strmap_free(&seen);
    if (e) return e;
    if ((e = lw_boundary_decls(r, rw, &ci, &n, &cap))) return e;
    rw->n_consts = n;
    rw->consts = ci;
    if (!s->inl_orig) return NULL;
    rw->nodes = s->g->nodes;
    rw->orig = s->inl_orig;
    bool graphs = false;
    for (uint32_t i = 0; i < s->n_nodes && !graphs; i++) {
        if (!s->nodes[i].on_cpu) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        for (uint32_t k = 0; k < nd->n_attrs; k++)
            graphs |=
                nd->attrs[k].type == CTOSA_ONNX_ATTR_GRAPH || nd->attrs[k].type == CTOSA_ONNX_ATTR_GRAPHS;
    }
    rw->drop_functions = !graphs;
    const ctosa_onnx_model_info *info = ctosa_onnx_info(s->m);
    uint32_t no = 0;
    for (uint32_t f = 0; f < info->n_functions; f++) no += info->functions[f].n_opsets;
    ctosa_onnx_opset *ops = arena_alloc(a, (no + 1) * sizeof *ops);
    if (!ops) return ctosa_error_nomem();
    no = 0;
    for (uint32_t f = 0; f < info->n_functions; f++)
        for (uint32_t k = 0; k < info->functions[f].n_opsets; k++) ops[no++] = info->functions[f].opsets[k];
    rw->n_opsets = no;
    rw->opsets = ops;
    return NULL;
}

ctosa_error *lw_write_partitioned(ctosa_lower_result *r, const char *path) {
    lower_session *s = &r->s;
    arena *a = &r->a;
    int64_t *order = arena_alloc(a, ((size_t)s->n_nodes + r->n_parts + 1) * sizeof *order);
    onnx_ep_node *ep = arena_zalloc(a, (r->n_parts + 1) * sizeof *ep);
    if (!order || !ep) return ctosa_error_nomem();
    int64_t n = part_order(s, r->n_parts, order);
    if (n == -2) return ctosa_error_nomem();
    if (n < 0) return ctosa_error_new(CTOSA_ERR_INTERNAL, "partitions form a cycle (a ctosa bug)");
    /* Names of EPContext nodes must not clash with node names. */
    strmap names;
    strmap_init(&names);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (s->g->nodes[i].name[0]) strmap_put(&names, s->g->nodes[i].name, (void *)1);
    for (uint32_t p = 0; p < r->n_parts; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        const char *nm = arena_printf(a, "ctosa_partition_%u", p);
        for (uint32_t k = 1; nm && strmap_has(&names, nm); k++)
            nm = arena_printf(a, "ctosa_partition_%u_%u", p, k);
        const char **in = arena_alloc(a, (pp->n_inputs + 1) * sizeof *in);
        const char **out = arena_alloc(a, (pp->n_outputs + 1) * sizeof *out);
        if (!nm || !in || !out) {
            strmap_free(&names);
            return ctosa_error_nomem();
        }
        for (uint32_t k = 0; k < pp->n_inputs; k++) in[k] = pp->inputs[k].name;
        for (uint32_t k = 0; k < pp->n_outputs; k++) out[k] = pp->outputs[k].name;
        ep[p] = (onnx_ep_node){nm, pp->file, pp->n_inputs, pp->n_outputs, in, out};
    }
    strmap_free(&names);
    /* Values still used by the model: CPU node inputs and graph outputs.
     * Initializers nobody else uses are dropped, and value_info entries of
     * values that no longer exist (computed inside partitions). */
    strmap used, drop_init, drop_vi;
    strmap_init(&used);
    strmap_init(&drop_init);
    strmap_init(&drop_vi);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (!s->nodes[i].on_cpu) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        for (uint32_t k = 0; k < nd->n_inputs; k++) strmap_put(&used, nd->inputs[k], (void *)1);
        for (uint32_t k = 0; k < nd->n_outputs; k++) strmap_put(&used, nd->outputs[k], (void *)1);
    }
    /* Implicit (subgraph) uses of CPU nodes count as uses too. */
    for (uint32_t i = 0; i < s->g->n_initializers; i++) {
        lw_val *v = lw_lookup(s, s->g->initializers[i].name);
        for (uint32_t c = 0; v && c < v->n_consumers; c++)
            if (s->nodes[v->consumers[c]].on_cpu) strmap_put(&used, v->v.name, (void *)1);
    }
    for (uint32_t p = 0; p < r->n_parts; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        for (uint32_t k = 0; k < pp->n_inputs; k++) strmap_put(&used, pp->inputs[k].name, (void *)1);
        for (uint32_t k = 0; k < pp->n_outputs; k++) strmap_put(&used, pp->outputs[k].name, (void *)1);
    }
    for (uint32_t i = 0; i < s->g->n_outputs; i++) strmap_put(&used, s->g->outputs[i].name, (void *)1);
    for (uint32_t i = 0; i < s->g->n_inputs; i++) strmap_put(&used, s->g->inputs[i].name, (void *)1);
    for (uint32_t i = 0; i < s->g->n_initializers; i++) {
        const char *nm = s->g->initializers[i].name;
        bool out_used = false;
        for (uint32_t k = 0; k < s->g->n_outputs; k++) out_used |= strcmp(s->g->outputs[k].name, nm) == 0;
        bool cpu_used = false;
        lw_val *v = lw_lookup(s, nm);
        for (uint32_t c = 0; v && c < v->n_consumers; c++) cpu_used |= s->nodes[v->consumers[c]].on_cpu;
        if (!out_used && !cpu_used) strmap_put(&drop_init, nm, (void *)1);
    }
    for (uint32_t i = 0; i < s->g->n_value_infos; i++)
        if (!strmap_has(&used, s->g->value_infos[i].name))
            strmap_put(&drop_vi, s->g->value_infos[i].name, (void *)1);
    /* partition inputs / outputs are declared anew (lw_boundary_decls) */
    for (uint32_t p = 0; p < r->n_parts; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        for (uint32_t k = 0; k < pp->n_inputs; k++) strmap_put(&drop_vi, pp->inputs[k].name, (void *)1);
        for (uint32_t k = 0; k < pp->n_outputs; k++) strmap_put(&drop_vi, pp->outputs[k].name, (void *)1);
    }
    onnx_rewrite rw = {
        .n_items = (uint32_t)n, .items = order, .ep = ep, .drop_init = &drop_init, .drop_vi = &drop_vi};
    ctosa_error *e = lw_partitioned_extras(r, &rw);
    if (!e) e = onnx_write_rewritten(s->model_path, &rw, path);
    strmap_free(&used);
    strmap_free(&drop_init);
    strmap_free(&drop_vi);
    return e;
}
