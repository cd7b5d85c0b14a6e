/* report.c - the lowering report (contract schema, deterministic key
 * order) and the partitioned ONNX model. */
#include <string.h>

#include "onnx/onnx_writer.h"
#include "partition/lower_result.h"

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
        if (s->nodes[i].part < 0 || !lw_custom_describe(s, i, &x->domain_name, &x->operator_name,
                                                        &x->overrides_builtin))
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
    sb_printf(&b, ",\n  \"nodes_total\": %u,\n  \"nodes_delegated\": %u,\n  \"partitions\": [", s->n_nodes, n_del);
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
    sb_puts(&b, "\n}\n");
    if (b.failed) {
        sb_free(&b);
        return ctosa_error_nomem();
    }
    r->report = sb_take(&b);
    sum->report_json = r->report;
    return NULL;
}

ctosa_error *lw_write_partitioned(ctosa_lower_result *r, const char *path) {
    lower_session *s = &r->s;
    arena *a = &r->a;
    int64_t *order = arena_alloc(a, ((size_t)s->n_nodes + r->n_parts + 1) * sizeof *order);
    onnx_ep_node *ep = arena_zalloc(a, (r->n_parts + 1) * sizeof *ep);
    if (!order || !ep) return ctosa_error_nomem();
    int64_t n = part_order(s, r->n_parts, order);
    if (n < 0) return ctosa_error_new(CTOSA_ERR_INTERNAL, "partitions form a cycle (a ctosa bug)");
    /* Names of EPContext nodes must not clash with node names. */
    strmap names;
    strmap_init(&names);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (s->g->nodes[i].name[0]) strmap_put(&names, s->g->nodes[i].name, (void *)1);
    for (uint32_t p = 0; p < r->n_parts; p++) {
        const ctosa_lower_partition *pp = &r->pub_parts[p];
        const char *nm = arena_printf(a, "ctosa_partition_%u", p);
        for (uint32_t k = 1; nm && strmap_has(&names, nm); k++) nm = arena_printf(a, "ctosa_partition_%u_%u", p, k);
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
        if (!strmap_has(&used, s->g->value_infos[i].name)) strmap_put(&drop_vi, s->g->value_infos[i].name, (void *)1);
    onnx_rewrite rw = {(uint32_t)n, order, ep, &drop_init, &drop_vi};
    ctosa_error *e = onnx_write_rewritten(s->model_path, &rw, path);
    strmap_free(&used);
    strmap_free(&drop_init);
    strmap_free(&drop_vi);
    return e;
}
