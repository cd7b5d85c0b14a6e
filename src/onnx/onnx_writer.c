/* onnx_writer.c - writes a rewritten ONNX model (see onnx_writer.h).
 *
 * The output is assembled from segments: byte ranges of the mapped input
 * file (fields and nodes copied unchanged, weights included, without
 * holding them in memory twice) and small encoded buffers (EPContext nodes,
 * length prefixes). Lengths are known before anything is written, so one
 * pass over the segments writes the file. */
#include <string.h>

#include "onnx/onnx_writer.h"
#include "onnx/pb.h"

typedef struct seg {
    const uint8_t *p;
    uint64_t n;
} seg;

typedef struct segs {
    seg *v;
    uint32_t n, cap;
    arena *a;
    bool failed;
} segs;

static void seg_add(segs *s, const uint8_t *p, uint64_t n) {
    if (!n) return;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        seg *nv = arena_alloc(s->a, cap * sizeof *nv);
        if (!nv) {
            s->failed = true;
            return;
        }
        if (s->n) memcpy(nv, s->v, s->n * sizeof *nv);
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = (seg){p, n};
}

static uint64_t seg_total(const segs *s, uint32_t from) {
    uint64_t t = 0;
    for (uint32_t i = from; i < s->n; i++) t += s->v[i].n;
    return t;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    return n;
}

/* Encoded LEN field header (tag + length). */
static void seg_len_header(segs *s, uint32_t field, uint64_t len) {
    uint8_t *b = arena_alloc(s->a, 24);
    if (!b) {
        s->failed = true;
        return;
    }
    size_t n = put_varint(b, ((uint64_t)field << 3) | PB_LEN);
    n += put_varint(b + n, len);
    seg_add(s, b, n);
}

/* A small growable message buffer. */
static void sb_varint(strbuf *b, uint64_t v) {
    uint8_t t[10];
    sb_putn(b, (const char *)t, put_varint(t, v));
}
static void sb_field_str(strbuf *b, uint32_t field, const char *s) {
    size_t n = strlen(s);
    sb_varint(b, ((uint64_t)field << 3) | PB_LEN);
    sb_varint(b, n);
    sb_putn(b, s, n);
}
static void sb_field_int(strbuf *b, uint32_t field, uint64_t v) {
    sb_varint(b, ((uint64_t)field << 3) | PB_VARINT);
    sb_varint(b, v);
}
static void sb_field_msg(strbuf *b, uint32_t field, const strbuf *m) {
    sb_varint(b, ((uint64_t)field << 3) | PB_LEN);
    sb_varint(b, m->len);
    sb_putn(b, m->s ? m->s : "", m->len);
}

static void attr_int(strbuf *node, const char *name, int64_t v) {
    strbuf a;
    sb_init(&a);
    sb_field_str(&a, 1, name);
    sb_field_int(&a, 3, (uint64_t)v);
    sb_field_int(&a, 20, 2); /* AttributeProto.INT */
    sb_field_msg(node, 5, &a);
    sb_free(&a);
}

static void attr_str(strbuf *node, const char *name, const char *v) {
    strbuf a;
    sb_init(&a);
    sb_field_str(&a, 1, name);
    sb_field_str(&a, 4, v);
    sb_field_int(&a, 20, 3); /* AttributeProto.STRING */
    sb_field_msg(node, 5, &a);
    sb_free(&a);
}

static void seg_ep_node(segs *s, const onnx_ep_node *ep) {
    strbuf nd;
    sb_init(&nd);
    for (uint32_t i = 0; i < ep->n_in; i++) sb_field_str(&nd, 1, ep->in[i]);
    for (uint32_t i = 0; i < ep->n_out; i++) sb_field_str(&nd, 2, ep->out[i]);
    sb_field_str(&nd, 3, ep->name);
    sb_field_str(&nd, 4, "EPContext");
    attr_int(&nd, "main_context", 1);
    attr_int(&nd, "embed_mode", 0);
    attr_str(&nd, "ep_cache_context", ep->cache_file);
    attr_str(&nd, "source", "ctosa");
    attr_str(&nd, "partition_name", ep->name);
    sb_field_str(&nd, 7, "com.microsoft");
    if (nd.failed) {
        s->failed = true;
        sb_free(&nd);
        return;
    }
    uint8_t *copy = arena_memdup(s->a, nd.s ? nd.s : "", nd.len);
    seg_len_header(s, 1, nd.len);
    if (!copy) s->failed = true;
    else seg_add(s, copy, nd.len);
    sb_free(&nd);
}

/* The string field `field` of a message, as a NUL-terminated arena copy. */
static const char *msg_name(pb_doc *d, arena *a, const uint8_t *p, uint64_t n, uint32_t field) {
    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, d, p, n);
    ctosa_error *e;
    while (!(e = pb_next(&c, &f, &more)) && more)
        if (f.num == field && f.wire == PB_LEN) return arena_strndup(a, (const char *)f.data, (size_t)f.len);
    ctosa_error_free(e);
    return "";
}

enum { MP_GRAPH = 7, MP_OPSET = 8, GP_NODE = 1, GP_INIT = 5, GP_INPUT = 11, GP_VALUE_INFO = 13 };

static ctosa_error *graph_segments(pb_doc *d, const pb_field *gf, const onnx_rewrite *rw, segs *s) {
    /* node byte ranges in order */
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    uint32_t n_nodes = 0;
    pb_cursor_init(&c, d, gf->data, gf->len);
    while (!(e = pb_next(&c, &f, &more)) && more) n_nodes += f.num == GP_NODE;
    if (e) return pb_finish_error(d, e);
    seg *nodes = arena_zalloc(s->a, (n_nodes + 1) * sizeof *nodes);
    if (!nodes) return ctosa_error_nomem();
    uint32_t k = 0;
    pb_cursor_init(&c, d, gf->data, gf->len);
    while (!(e = pb_next(&c, &f, &more)) && more)
        if (f.num == GP_NODE) nodes[k++] = (seg){f.at, (uint64_t)(c.p - f.at)};
    if (e) return pb_finish_error(d, e);
    bool nodes_done = false;
    pb_cursor_init(&c, d, gf->data, gf->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        const uint8_t *end = c.p;
        switch (f.num) {
        case GP_NODE:
            if (nodes_done) break;
            nodes_done = true;
            for (uint32_t i = 0; i < rw->n_items; i++) {
                int64_t it = rw->items[i];
                if (it >= 0) {
                    if ((uint64_t)it >= n_nodes)
                        return ctosa_error_new(CTOSA_ERR_INTERNAL, "rewrite names node #%lld of %u", (long long)it, n_nodes);
                    seg_add(s, nodes[it].p, nodes[it].n);
                } else {
                    seg_ep_node(s, &rw->ep[-it - 1]);
                }
            }
            break;
        case GP_INIT:
            if (f.wire == PB_LEN && rw->drop_init &&
                strmap_has(rw->drop_init, msg_name(d, s->a, f.data, f.len, 8)))
                break;
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        case GP_INPUT:
            if (f.wire == PB_LEN && rw->drop_init &&
                strmap_has(rw->drop_init, msg_name(d, s->a, f.data, f.len, 1)))
                break;
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        case GP_VALUE_INFO:
            if (f.wire == PB_LEN && rw->drop_vi && strmap_has(rw->drop_vi, msg_name(d, s->a, f.data, f.len, 1)))
                break;
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        default:
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        }
    }
    if (e) return pb_finish_error(d, e);
    if (!nodes_done)
        for (uint32_t i = 0; i < rw->n_items; i++)
            if (rw->items[i] < 0) seg_ep_node(s, &rw->ep[-rw->items[i] - 1]);
    return NULL;
}

ctosa_error *onnx_write_rewritten(const char *model_path, const onnx_rewrite *rw, const char *out_path) {
    file_map m;
    ctosa_error *e = file_map_open(model_path, &m);
    if (e) return e;
    arena a;
    arena_init(&a, 0);
    segs s = {.a = &a};
    pb_doc d = {.name = model_path, .base = m.data, .size = m.size};
    pb_cursor c;
    pb_field f;
    bool more, has_ms = false;
    pb_cursor_init(&c, &d, m.data, m.size);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        const uint8_t *end = c.p;
        if (f.num == MP_GRAPH && f.wire == PB_LEN) {
            segs body = {.a = &a};
            if ((e = graph_segments(&d, &f, rw, &body))) break;
            if (body.failed) {
                e = ctosa_error_nomem();
                break;
            }
            seg_len_header(&s, MP_GRAPH, seg_total(&body, 0));
            for (uint32_t i = 0; i < body.n; i++) seg_add(&s, body.v[i].p, body.v[i].n);
            continue;
        }
        if (f.num == MP_OPSET && f.wire == PB_LEN &&
            strcmp(msg_name(&d, &a, f.data, f.len, 1), "com.microsoft") == 0)
            has_ms = true;
        seg_add(&s, f.at, (uint64_t)(end - f.at));
    }
    if (e) e = ctosa_error_prefix(e, "rewriting %s", model_path);
    if (!e && !has_ms) {
        strbuf op;
        sb_init(&op);
        sb_field_str(&op, 1, "com.microsoft");
        sb_field_int(&op, 2, 1);
        uint8_t *copy = arena_memdup(&a, op.s ? op.s : "", op.len);
        seg_len_header(&s, MP_OPSET, op.len);
        if (copy) seg_add(&s, copy, op.len);
        else s.failed = true;
        sb_free(&op);
    }
    if (!e && s.failed) e = ctosa_error_nomem();
    if (!e) {
        out_file o;
        e = out_file_open(&o, out_path);
        if (!e) {
            for (uint32_t i = 0; !e && i < s.n; i++) e = out_file_write(&o, s.v[i].p, (size_t)s.v[i].n);
            if (!e) e = out_file_commit(&o);
            else out_file_abort(&o);
        }
    }
    arena_free(&a);
    file_map_close(&m);
    return e;
}
