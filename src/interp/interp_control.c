/* interp_control.c - COND_IF, WHILE_LOOP, VARIABLE_READ / VARIABLE_WRITE
 * and CUSTOM. Regions run through interp_call_region with their own
 * tensors; values cross region boundaries by copy. */
#include <stdlib.h>
#include <string.h>

#include "interp_runtime.h"

static bool same_type(const itensor *a, const itensor *b) {
    return a->dtype == b->dtype && interp_same_shape(a, b);
}

static void copy_tensor(itensor *dst, const itensor *src) {
    if (dst->data != src->data && src->count)
        memmove(dst->data, src->data, (size_t)(src->count * interp_elem_size(src->dtype)));
}

/* Copies a region's results into the operator's outputs, checking that
 * they match (ERROR_IF tensor_list_shape(output_list) != ...). */
static ctosa_error *take_outputs(const interp_op *o, const char *region, itensor **res, uint32_t n_res,
                                 itensor *const *out, uint32_t n_out) {
    if (n_res != n_out)
        return interp_fail(o, "region '%s' produces %u outputs, the operator has %u", region, n_res, n_out);
    for (uint32_t i = 0; i < n_out; i++)
        if (!same_type(res[i], out[i]))
            return interp_fail(o, "output %u '%s' is %s%s but region '%s' produces %s%s", i, out[i]->name,
                               ctosa_dtype_short(out[i]->dtype), interp_shape_str(out[i]), region,
                               ctosa_dtype_short(res[i]->dtype), interp_shape_str(res[i]));
    for (uint32_t i = 0; i < n_out; i++) copy_tensor(out[i], res[i]);
    return NULL;
}

ctosa_error *interp_k_COND_IF(const interp_op *o) {
    const itensor *c = o->in[0];
    if (c->dtype != CTOSA_DTYPE_BOOL || c->count != 1)
        return interp_fail(o, "condition '%s' must be a one-element bool tensor, not %s%s", c->name,
                           ctosa_dtype_short(c->dtype), interp_shape_str(c));
    bool cond = ((const uint8_t *)c->data)[0] != 0;
    const char *region = cond ? o->op->attr.then_graph : o->op->attr.else_graph;
    itensor **res;
    uint32_t n_res;
    ctosa_error *e = interp_call_region(o, region, o->in + 1, o->n_in - 1, &res, &n_res);
    if (e) return e;
    return take_outputs(o, region, res, n_res, o->out, o->n_out);
}

ctosa_error *interp_k_WHILE_LOOP(const interp_op *o) {
    const char *cond_g = o->op->attr.cond_graph, *body_g = o->op->attr.body_graph;
    if (o->n_in != o->n_out)
        return interp_fail(o, "has %u inputs but %u outputs; they must match", o->n_in, o->n_out);
    for (uint32_t i = 0; i < o->n_in; i++)
        if (!same_type(o->in[i], o->out[i]))
            return interp_fail(o, "input %u '%s' is %s%s but output '%s' is %s%s", i, o->in[i]->name,
                               ctosa_dtype_short(o->in[i]->dtype), interp_shape_str(o->in[i]),
                               o->out[i]->name, ctosa_dtype_short(o->out[i]->dtype),
                               interp_shape_str(o->out[i]));
    /* The outputs hold the loop state. An input may alias an output only
     * if the graph is malformed; copying in order keeps that defined. */
    for (uint32_t i = 0; i < o->n_in; i++) copy_tensor(o->out[i], o->in[i]);
    uint64_t max_iter = o->ctx->it->opt.max_iterations;
    for (uint64_t iter = 0;; iter++) {
        itensor **res;
        uint32_t n_res;
        ctosa_error *e = interp_call_region(o, cond_g, o->out, o->n_out, &res, &n_res);
        if (e) return e;
        if (n_res != 1 || res[0]->dtype != CTOSA_DTYPE_BOOL || res[0]->count != 1)
            return interp_fail(o, "condition region '%s' must produce one one-element bool tensor", cond_g);
        if (!((const uint8_t *)res[0]->data)[0]) break;
        if (max_iter && iter >= max_iter)
            return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: more than %llu iterations", o->where,
                                   (unsigned long long)max_iter);
        if ((e = interp_call_region(o, body_g, o->out, o->n_out, &res, &n_res))) return e;
        if ((e = take_outputs(o, body_g, res, n_res, o->out, o->n_out))) return e;
    }
    return NULL;
}

/* The variable an operator names: the first input/output that is a
 * variable tensor (its data is the variable's storage). */
static itensor *find_variable(const interp_op *o, bool outputs_too) {
    ctosa_interp *it = o->ctx->it;
    for (uint32_t i = 0; i < o->n_in; i++)
        for (ivar *v = it->vars; v; v = v->next)
            if (v->t.data == o->in[i]->data) return o->in[i];
    if (outputs_too)
        for (uint32_t i = 0; i < o->n_out; i++)
            for (ivar *v = it->vars; v; v = v->next)
                if (v->t.data == o->out[i]->data) return o->out[i];
    return NULL;
}

ctosa_error *interp_k_VARIABLE_READ(const interp_op *o) {
    itensor *var = find_variable(o, false);
    if (!var) return interp_fail(o, "names no variable tensor");
    if (!same_type(var, o->out[0]))
        return interp_fail(o, "variable '%s' is %s%s but output '%s' is %s%s", var->name,
                           ctosa_dtype_short(var->dtype), interp_shape_str(var), o->out[0]->name,
                           ctosa_dtype_short(o->out[0]->dtype), interp_shape_str(o->out[0]));
    copy_tensor(o->out[0], var);
    return NULL;
}

ctosa_error *interp_k_VARIABLE_WRITE(const interp_op *o) {
    itensor *var = find_variable(o, true);
    if (!var) return interp_fail(o, "names no variable tensor");
    const itensor *val = NULL;
    for (uint32_t i = 0; i < o->n_in; i++)
        if (o->in[i] != var) val = o->in[i];
    if (!val) return interp_fail(o, "has no value to write");
    if (!same_type(var, val))
        return interp_fail(o, "variable '%s' is %s%s but the value '%s' is %s%s", var->name,
                           ctosa_dtype_short(var->dtype), interp_shape_str(var), val->name,
                           ctosa_dtype_short(val->dtype), interp_shape_str(val));
    copy_tensor(var, val);
    return NULL;
}

/* CUSTOM: inputs and outputs cross to the registered callback in the host
 * encoding. */
ctosa_error *interp_k_CUSTOM(const interp_op *o) {
    const char *dom = o->op->attr.domain_name ? o->op->attr.domain_name : "";
    const char *name = o->op->attr.operator_name ? o->op->attr.operator_name : "";
    custom_reg *reg = NULL;
    for (custom_reg *c = o->ctx->it->customs; c; c = c->next)
        if (strcmp(c->domain, dom) == 0 && strcmp(c->name, name) == 0) reg = c;
    if (!reg)
        return interp_unsupported(o,
                                  "no kernel is registered for custom operator '%s' of "
                                  "domain '%s'",
                                  name, dom);
    uint32_t n = o->n_in + o->n_out;
    ctosa_interp_tensor *ht = calloc(n ? n : 1, sizeof *ht);
    if (!ht) return ctosa_error_nomem();
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < n && !e; i++) {
        const itensor *t = i < o->n_in ? o->in[i] : o->out[i - o->n_in];
        ht[i].name = t->name;
        ht[i].dtype = t->dtype;
        ht[i].rank = t->rank;
        ht[i].shape = t->shape;
        ht[i].count = t->count;
        ht[i].size = t->count * ctosa_host_elem_size(t->dtype);
        ht[i].data = calloc(ht[i].size ? (size_t)ht[i].size : 1, 1);
        if (!ht[i].data) e = ctosa_error_nomem();
        else if (i < o->n_in) interp_to_host(t, ht[i].data);
    }
    if (!e) {
        e = reg->fn(reg->user, ht, o->n_in, ht + o->n_in, o->n_out, o->op->attr.implementation_attrs.p,
                    o->op->attr.implementation_attrs.n);
        if (e) e = ctosa_error_prefix(e, "%s (custom '%s' of domain '%s')", o->where, name, dom);
    }
    for (uint32_t i = 0; i < o->n_out && !e; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s output '%s'", o->where, o->out[i]->name);
        e = interp_from_host(o->out[i], ht[o->n_in + i].data, what);
    }
    for (uint32_t i = 0; i < n; i++) free(ht[i].data);
    free(ht);
    return e;
}
