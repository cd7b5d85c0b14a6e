/* qz_graph.c - the quantizer's editable copy of a model's main graph and
 * the ONNX writer for it.
 *
 * Original nodes keep their attributes byte for byte: the writer copies
 * each AttributeProto from the model file (subgraphs included), so only
 * inputs and outputs can change. Initializers are re-encoded as raw_data
 * (external data is read in; the written model is self-contained), and
 * streamed to the file rather than assembled in memory. */
#include <stdlib.h>
#include <string.h>

#include "onnx/pb.h"
#include "quantize/qz_internal.h"

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *r = realloc(*p, (size_t)n * elem);
    if (!r) return false;
    *p = r;
    *cap = n;
    return true;
}

static void name_use(qz_graph *q, const char *s) {
    if (s && s[0] && !strmap_has(&q->names, s)) strmap_put(&q->names, s, (void *)1);
}

ctosa_error *qz_graph_init(qz_graph *q, ctosa_onnx_model *m, const char *path) {
    memset(q, 0, sizeof *q);
    arena_init(&q->a, 0);
    strmap_init(&q->names);
    q->m = m;
    q->path = path;
    q->file.fd = -1;
    const ctosa_onnx_model_info *info = ctosa_onnx_info(m);
    q->g = info->graph;
    q->opset = ctosa_onnx_opset_version(m, "");
    ctosa_error *e = file_map_open(path, &q->file);
    if (e) return e;
    const ctosa_onnx_graph *g = q->g;
    if (g->n_sparse_initializers)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: sparse initializers are not supported by quantize",
                               path);
    for (uint32_t i = 0; i < g->n_inputs; i++) name_use(q, g->inputs[i].name);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        qz_node *d = qz_graph_add_node(q, n->op_type, n->name, n->n_inputs, (const char *const *)n->inputs,
                                       n->n_outputs, (const char *const *)n->outputs);
        if (!d) return ctosa_error_nomem();
        d->domain = n->domain;
        d->orig = n;
    }
    for (uint32_t i = 0; i < g->n_initializers; i++) {
        const ctosa_onnx_tensor *t = &g->initializers[i];
        if (t->dtype == CTOSA_ONNX_STRING)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                   "%s: initializer '%s': string tensors are not supported "
                                   "by quantize",
                                   path, t->name);
        if (t->rank > ONNX_MAX_RANK)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: initializer '%s': rank %u", path, t->name,
                                   t->rank);
        const void *data;
        uint64_t nb;
        if ((e = ctosa_onnx_tensor_data(m, t, &data, &nb))) return e;
        if (!qz_graph_add_init(q, t->name, t->dtype, t->rank, t->dims, data, nb)) return ctosa_error_nomem();
    }
    return NULL;
}

void qz_graph_free(qz_graph *q) {
    free(q->nodes);
    free(q->inits);
    strmap_free(&q->names);
    file_map_close(&q->file);
    arena_free(&q->a);
    memset(q, 0, sizeof *q);
}

qz_node *qz_graph_add_node(qz_graph *q, const char *op_type, const char *name, uint32_t n_in,
                           const char *const *in, uint32_t n_out, const char *const *out) {
    if (!grow((void **)&q->nodes, &q->cap_nodes, q->n_nodes + 1, sizeof *q->nodes)) return NULL;
    qz_node *d = &q->nodes[q->n_nodes++];
    memset(d, 0, sizeof *d);
    d->op_type = op_type;
    d->name = name ? name : "";
    d->domain = "";
    d->n_in = n_in;
    d->n_out = n_out;
    d->in = arena_alloc(&q->a, sizeof(char *) * (n_in + 1));
    d->out = arena_alloc(&q->a, sizeof(char *) * (n_out + 1));
    if (!d->in || !d->out) return NULL;
    for (uint32_t i = 0; i < n_in; i++) d->in[i] = in[i];
    for (uint32_t i = 0; i < n_out; i++) {
        d->out[i] = out[i];
        name_use(q, out[i]);
    }
    name_use(q, d->name);
    return d;
}

qz_init *qz_graph_add_init(qz_graph *q, const char *name, int32_t dtype, uint32_t rank, const int64_t *dims,
                           const void *data, uint64_t nbytes) {
    if (rank > ONNX_MAX_RANK) return NULL;
    if (!grow((void **)&q->inits, &q->cap_inits, q->n_inits + 1, sizeof *q->inits)) return NULL;
    qz_init *t = &q->inits[q->n_inits++];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dtype = dtype;
    t->rank = rank;
    for (uint32_t i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->data = data;
    t->nbytes = nbytes;
    name_use(q, name);
    return t;
}

const qz_init *qz_graph_find_init(const qz_graph *q, const char *name) {
    for (uint32_t i = 0; i < q->n_inits; i++)
        if (!strcmp(q->inits[i].name, name)) return &q->inits[i];
    return NULL;
}

const char *qz_fresh_name(qz_graph *q, const char *base, const char *suffix) {
    char *s = arena_printf(&q->a, "%s%s", base, suffix);
    for (uint32_t k = 1; s && strmap_has(&q->names, s); k++)
        s = arena_printf(&q->a, "%s%s_%u", base, suffix, k);
    if (s) name_use(q, s);
    return s;
}

/* ---------------------------------------------------------------- writer */

static void put_varint(strbuf *b, uint64_t v) {
    char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (char)v;
    sb_putn(b, t, n);
}
static void put_tag(strbuf *b, uint32_t field, int wire) {
    put_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}
static void put_int(strbuf *b, uint32_t field, uint64_t v) {
    put_tag(b, field, PB_VARINT);
    put_varint(b, v);
}
static void put_bytes(strbuf *b, uint32_t field, const void *p, size_t n) {
    put_tag(b, field, PB_LEN);
    put_varint(b, n);
    sb_putn(b, (const char *)p, n);
}
static void put_str(strbuf *b, uint32_t field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static void put_msg(strbuf *b, uint32_t field, const strbuf *m) {
    put_bytes(b, field, m->s ? m->s : "", m->len);
}
static uint64_t varint_len(uint64_t v) {
    uint64_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* The whole field (tag, length, payload) at byte `off` of the model file:
 * how attributes and value infos are copied. */
static ctosa_error *file_field(qz_graph *q, uint64_t off, const uint8_t **p, uint64_t *n, pb_field *f) {
    pb_doc d = {.name = q->path, .base = q->file.data, .size = q->file.size};
    pb_cursor c;
    bool more = false;
    if (off >= q->file.size)
        return ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: byte %llu is outside the file", q->path,
                               (unsigned long long)off);
    pb_cursor_init(&c, &d, q->file.data + off, q->file.size - off);
    ctosa_error *e = pb_next(&c, f, &more);
    if (e) return pb_finish_error(&d, e);
    if (!more || f->wire != PB_LEN)
        return ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: byte %llu: no message here", q->path,
                               (unsigned long long)off);
    *p = f->at;
    *n = (uint64_t)(c.p - f->at);
    return NULL;
}

static ctosa_error *encode_node(qz_graph *q, const qz_node *n, strbuf *out) {
    strbuf nd;
    sb_init(&nd);
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < n->n_in; i++) put_str(&nd, 1, n->in[i]);
    for (uint32_t i = 0; i < n->n_out; i++) put_str(&nd, 2, n->out[i]);
    if (n->name[0]) put_str(&nd, 3, n->name);
    put_str(&nd, 4, n->op_type);
    if (n->orig) {
        for (uint32_t k = 0; k < n->orig->n_attrs && !e; k++) {
            const ctosa_onnx_attr *at = &n->orig->attrs[k];
            if (n->drop_axes_attr && !strcmp(at->name, "axes")) continue;
            const uint8_t *p;
            uint64_t len;
            pb_field f;
            if (!(e = file_field(q, at->offset, &p, &len, &f))) sb_putn(&nd, (const char *)p, (size_t)len);
        }
    }
    if (n->has_axis) {
        strbuf ab;
        sb_init(&ab);
        put_str(&ab, 1, "axis");
        put_int(&ab, 3, (uint64_t)n->axis);
        put_int(&ab, 20, CTOSA_ONNX_ATTR_INT);
        put_msg(&nd, 5, &ab);
        if (ab.failed) nd.failed = true;
        sb_free(&ab);
    }
    if (n->domain[0]) put_str(&nd, 7, n->domain);
    if (!e) put_msg(out, 1, &nd);
    if (nd.failed) out->failed = true;
    sb_free(&nd);
    return e;
}

static void init_header(const qz_init *t, strbuf *h) {
    for (uint32_t i = 0; i < t->rank; i++) put_int(h, 1, (uint64_t)t->dims[i]);
    put_int(h, 2, (uint64_t)t->dtype);
    put_str(h, 8, t->name);
    put_tag(h, 9, PB_LEN);
    put_varint(h, t->nbytes);
}

static bool has_graph_attr(const ctosa_onnx_graph *g) {
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_attrs; k++)
            if (g->nodes[i].attrs[k].type == CTOSA_ONNX_ATTR_GRAPH ||
                g->nodes[i].attrs[k].type == CTOSA_ONNX_ATTR_GRAPHS)
                return true;
    return false;
}

ctosa_error *qz_graph_prune_to_extra(qz_graph *q) {
    /* subgraphs may read any outer value by name: keep such graphs whole */
    if (has_graph_attr(q->g)) return NULL;
    strmap need;
    strmap_init(&need);
    bool ok = true;
    for (uint32_t i = 0; i < q->n_extra; i++) ok &= strmap_put(&need, q->extra[i], (void *)1);
    bool *keep = calloc(q->n_nodes + 1, sizeof(bool));
    if (!keep || !ok) {
        free(keep);
        strmap_free(&need);
        return ctosa_error_nomem();
    }
    /* the nodes are in topological order: one backward sweep */
    for (uint32_t i = q->n_nodes; i-- > 0;) {
        const qz_node *n = &q->nodes[i];
        for (uint32_t k = 0; k < n->n_out && !keep[i]; k++)
            keep[i] = n->out[k][0] && strmap_has(&need, n->out[k]);
        for (uint32_t k = 0; k < n->n_in && keep[i]; k++)
            if (n->in[k][0] && !strmap_has(&need, n->in[k])) ok &= strmap_put(&need, n->in[k], (void *)1);
    }
    if (!ok) {
        free(keep);
        strmap_free(&need);
        return ctosa_error_nomem();
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < q->n_nodes; i++)
        if (keep[i]) q->nodes[m++] = q->nodes[i];
    q->n_nodes = m;
    q->only_extra = true;
    free(keep);
    strmap_free(&need);
    return NULL;
}

ctosa_error *qz_graph_write(qz_graph *q, const char *path) {
    const ctosa_onnx_graph *g = q->g;
    const ctosa_onnx_model_info *info = ctosa_onnx_info(q->m);
    ctosa_error *e = NULL;
    strmap used;
    strmap_init(&used);
    for (uint32_t i = 0; i < q->n_nodes; i++)
        for (uint32_t k = 0; k < q->nodes[i].n_in; k++)
            if (q->nodes[i].in[k][0]) strmap_put(&used, q->nodes[i].in[k], (void *)1);
    for (uint32_t i = 0; i < g->n_outputs && !q->only_extra; i++)
        strmap_put(&used, g->outputs[i].name, (void *)1);
    bool keep_all_orig = has_graph_attr(g);
    uint32_t n_orig_inits = g->n_initializers;

    /* graph body except initializers */
    strbuf body, tail;
    sb_init(&body);
    sb_init(&tail);
    for (uint32_t i = 0; i < q->n_nodes && !e; i++) e = encode_node(q, &q->nodes[i], &body);
    if (g->name[0]) put_str(&body, 2, g->name);
    strmap written;
    strmap_init(&written);
    bool *keep = calloc(q->n_inits + 1, 1);
    if (!keep) e = ctosa_error_nomem();
    uint64_t init_bytes = 0;
    for (uint32_t i = 0; i < q->n_inits && !e; i++) {
        const qz_init *t = &q->inits[i];
        keep[i] = strmap_has(&used, t->name) || (i < n_orig_inits && keep_all_orig);
        if (!keep[i]) continue;
        strmap_put(&written, t->name, (void *)1);
        strbuf h;
        sb_init(&h);
        init_header(t, &h);
        uint64_t msg = h.len + t->nbytes;
        init_bytes += 1 + varint_len(msg) + msg;
        sb_free(&h);
    }
    for (uint32_t i = 0; i < g->n_inputs && !e; i++) {
        const ctosa_onnx_value_info *v = &g->inputs[i];
        bool is_init = false;
        for (uint32_t k = 0; k < n_orig_inits; k++)
            if (!strcmp(g->initializers[k].name, v->name)) is_init = true;
        if (is_init && !strmap_has(&written, v->name)) continue;
        const uint8_t *p;
        uint64_t len;
        pb_field f;
        if (!(e = file_field(q, v->offset, &p, &len, &f))) sb_putn(&tail, (const char *)p, (size_t)len);
    }
    for (uint32_t i = 0; i < g->n_outputs && !e && !q->only_extra; i++) {
        const uint8_t *p;
        uint64_t len;
        pb_field f;
        if (!(e = file_field(q, g->outputs[i].offset, &p, &len, &f)))
            sb_putn(&tail, (const char *)p, (size_t)len);
    }
    for (uint32_t i = 0; i < q->n_extra && !e; i++) {
        strbuf vi;
        sb_init(&vi);
        put_str(&vi, 1, q->extra[i]);
        put_msg(&tail, 12, &vi);
        sb_free(&vi);
    }
    for (uint32_t i = 0; i < g->n_value_infos && !e; i++) {
        if (!strmap_has(&q->names, g->value_infos[i].name)) continue;
        const uint8_t *p;
        uint64_t len;
        pb_field f;
        if (!(e = file_field(q, g->value_infos[i].offset, &p, &len, &f)))
            sb_putn(&tail, (const char *)p, (size_t)len);
    }

    /* model header */
    strbuf head;
    sb_init(&head);
    int64_t ir = info->ir_version;
    if (q->opset >= 21 && ir < 10) ir = 10;
    if (ir < 7) ir = 7;
    put_int(&head, 1, (uint64_t)ir);
    put_str(&head, 2, "ctosa quantize");
    put_str(&head, 3, CTOSA_VERSION_STRING);
    bool have_default = false;
    for (uint32_t i = 0; i < info->n_opsets; i++) {
        const ctosa_onnx_opset *o = &info->opsets[i];
        bool def = !o->domain[0] || !strcmp(o->domain, "ai.onnx");
        strbuf os;
        sb_init(&os);
        if (o->domain[0]) put_str(&os, 1, o->domain);
        put_int(&os, 2, (uint64_t)(def ? q->opset : o->version));
        put_msg(&head, 8, &os);
        sb_free(&os);
        have_default |= def;
    }
    if (!have_default) {
        strbuf os;
        sb_init(&os);
        put_int(&os, 2, (uint64_t)q->opset);
        put_msg(&head, 8, &os);
        sb_free(&os);
    }
    uint64_t graph_len = body.len + init_bytes + tail.len;
    put_tag(&head, 7, PB_LEN);
    put_varint(&head, graph_len);
    if (!e && (head.failed || body.failed || tail.failed)) e = ctosa_error_nomem();

    out_file of;
    bool open = false;
    if (!e && !(e = out_file_open(&of, path))) open = true;
    if (!e) e = out_file_write(&of, head.s, head.len);
    if (!e) e = out_file_write(&of, body.s ? body.s : "", body.len);
    for (uint32_t i = 0; i < q->n_inits && !e; i++) {
        if (!keep[i]) continue;
        const qz_init *t = &q->inits[i];
        strbuf h, m;
        sb_init(&h);
        sb_init(&m);
        init_header(t, &h);
        put_tag(&m, 5, PB_LEN);
        put_varint(&m, h.len + t->nbytes);
        sb_putn(&m, h.s ? h.s : "", h.len);
        if (m.failed || h.failed) e = ctosa_error_nomem();
        if (!e) e = out_file_write(&of, m.s, m.len);
        if (!e && t->nbytes) e = out_file_write(&of, t->data, (size_t)t->nbytes);
        sb_free(&h);
        sb_free(&m);
    }
    if (!e) e = out_file_write(&of, tail.s ? tail.s : "", tail.len);
    if (!e) e = out_file_commit(&of);
    else if (open) out_file_abort(&of);
    sb_free(&head);
    sb_free(&body);
    sb_free(&tail);
    free(keep);
    strmap_free(&used);
    strmap_free(&written);
    return e;
}
