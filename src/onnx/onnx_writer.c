/* onnx_writer.c - writes a rewritten ONNX model (see onnx_writer.h).
 *
 * The output is assembled from segments: byte ranges of the mapped input
 * file (fields and nodes copied unchanged, weights included, without
 * holding them in memory twice) and small encoded buffers (EPContext nodes,
 * length prefixes). Lengths are known before anything is written, so one
 * pass over the segments writes the file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "onnx/onnx_writer.h"
#include "onnx/pb.h"

/* Segments of the mapped input at least this long are copied with
 * copy_file_range from the input's descriptor instead of write() from the
 * mapping: the kernel moves the pages, and the process never maps them in
 * (its RSS does not grow with inline weights). */
#define COPY_RANGE_MIN ((uint64_t)64 << 10)
/* Alignment of tensors in the external-data file written beside the output. */
#define EXT_ALIGN 4096u

typedef struct seg {
    const uint8_t *p;
    uint64_t n;
} seg;

/* One external tensor copied into <out>.data: src_off..+n of src_path to
 * dst_off of the new file. */
typedef struct ext_copy {
    const char *src_path;
    uint64_t src_off, n, dst_off;
} ext_copy;

typedef struct segs {
    seg *v;
    uint32_t n, cap;
    arena *a;
    bool failed;
    /* Relocation of external data (set when the output lives in another
     * folder than the model, so that its relative locations would break). */
    const char *model_dir; /* folder the model's locations are relative to */
    const char *ext_name;  /* location written: "<out file name>.data"; NULL = keep */
    ext_copy *x;
    uint32_t nx, capx;
    uint64_t ext_size;
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

enum { TP_DIMS_F = 1, TP_TYPE_F = 2 };
enum {
    MP_GRAPH = 7,
    MP_OPSET = 8,
    MP_FUNCTIONS = 25,
    GP_NODE = 1,
    GP_INIT = 5,
    GP_INPUT = 11,
    GP_VALUE_INFO = 13,
    GP_QUANT_ANNOTATION = 14
};

/* A node of an inlined function body, encoded from the model view: names
 * as given (mangled by the inliner), each attribute's AttributeProto
 * copied from the model file at its offset with the name the body gives
 * it and without ref_attr_name (the inliner resolved the reference to the
 * caller's attribute, whose bytes these are). */
static ctosa_error *seg_node_encoded(pb_doc *d, segs *s, const ctosa_onnx_node *n) {
    strbuf nd;
    sb_init(&nd);
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < n->n_inputs; i++) sb_field_str(&nd, 1, n->inputs[i]);
    for (uint32_t i = 0; i < n->n_outputs; i++) sb_field_str(&nd, 2, n->outputs[i]);
    if (n->name[0]) sb_field_str(&nd, 3, n->name);
    sb_field_str(&nd, 4, n->op_type);
    for (uint32_t k = 0; k < n->n_attrs && !e; k++) {
        const ctosa_onnx_attr *at = &n->attrs[k];
        pb_cursor c;
        pb_field f;
        bool more = false;
        if (at->offset >= d->size) {
            e = ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: attribute '%s' of '%s' is not in the file", d->name,
                                at->name, n->name);
            break;
        }
        pb_cursor_init(&c, d, d->base + at->offset, d->size - at->offset);
        if ((e = pb_next(&c, &f, &more))) break;
        if (!more || f.wire != PB_LEN) {
            e = pb_error(d, d->base + at->offset, "attribute '%.200s' of '%.200s': no AttributeProto here",
                         at->name, n->name);
            break;
        }
        strbuf ab;
        sb_init(&ab);
        sb_field_str(&ab, 1, at->name);
        pb_cursor ac;
        pb_field af;
        bool amore;
        pb_cursor_init(&ac, d, f.data, f.len);
        while (!(e = pb_next(&ac, &af, &amore)) && amore)
            if (af.num != 1 && af.num != 21) sb_putn(&ab, (const char *)af.at, (size_t)(ac.p - af.at));
        sb_field_msg(&nd, 5, &ab);
        if (ab.failed) nd.failed = true;
        sb_free(&ab);
    }
    if (n->domain[0]) sb_field_str(&nd, 7, n->domain);
    if (n->overload && n->overload[0]) sb_field_str(&nd, 8, n->overload);
    if (!e && nd.failed) e = ctosa_error_nomem();
    if (!e) {
        uint8_t *copy = arena_memdup(s->a, nd.s ? nd.s : "", nd.len);
        seg_len_header(s, GP_NODE, nd.len);
        if (!copy) s->failed = true;
        else seg_add(s, copy, nd.len);
    }
    sb_free(&nd);
    return e;
}

/* A compile-time value as an initializer (raw_data). The bytes are not
 * copied: the segment points at the caller's memory until the file is
 * written. */
static void seg_const_init(segs *s, const onnx_const_init *ci) {
    strbuf t;
    sb_init(&t);
    for (uint32_t i = 0; i < ci->rank; i++) sb_field_int(&t, TP_DIMS_F, (uint64_t)ci->dims[i]);
    sb_field_int(&t, TP_TYPE_F, (uint64_t)ci->dtype);
    sb_field_str(&t, 8, ci->name);
    /* raw_data (field 9): header here, bytes as their own segment */
    sb_varint(&t, (9u << 3) | PB_LEN);
    sb_varint(&t, ci->nbytes);
    uint8_t *copy = t.failed ? NULL : arena_memdup(s->a, t.s ? t.s : "", t.len);
    if (!copy) {
        s->failed = true;
    } else {
        seg_len_header(s, GP_INIT, t.len + ci->nbytes);
        seg_add(s, copy, t.len);
        seg_add(s, ci->data, ci->nbytes);
    }
    sb_free(&t);
}

/* ValueInfoProto {name, TypeProto {tensor_type {elem_type, shape}}} and,
 * for quantized values, TensorAnnotation {tensor_name,
 * quant_parameter_tensor_names {SCALE_TENSOR, ZERO_POINT_TENSOR}}. */
static void seg_value_decl(segs *s, const onnx_value_decl *v) {
    strbuf vi, tp, tt, sh, dim, an, kv;
    sb_init(&vi);
    sb_init(&tp);
    sb_init(&tt);
    sb_init(&sh);
    sb_init(&an);
    for (uint32_t i = 0; i < v->rank; i++) {
        sb_init(&dim);
        if (v->dims[i] >= 0) sb_field_int(&dim, 1, (uint64_t)v->dims[i]);
        sb_field_msg(&sh, 1, &dim);
        sb_free(&dim);
    }
    sb_field_int(&tt, 1, (uint64_t)v->dtype);
    sb_field_msg(&tt, 2, &sh);
    sb_field_msg(&tp, 1, &tt);
    sb_field_str(&vi, 1, v->name);
    sb_field_msg(&vi, 2, &tp);
    if (v->scale_init) {
        sb_field_str(&an, 1, v->name);
        const char *keys[2] = {"SCALE_TENSOR", "ZERO_POINT_TENSOR"}, *vals[2] = {v->scale_init, v->zp_init};
        for (int k = 0; k < 2; k++) {
            if (!vals[k]) continue;
            sb_init(&kv);
            sb_field_str(&kv, 1, keys[k]);
            sb_field_str(&kv, 2, vals[k]);
            sb_field_msg(&an, 2, &kv);
            sb_free(&kv);
        }
    }
    bool failed = vi.failed || tp.failed || tt.failed || sh.failed || an.failed;
    uint8_t *c1 = failed ? NULL : arena_memdup(s->a, vi.s, vi.len);
    uint8_t *c2 = failed || !an.len ? NULL : arena_memdup(s->a, an.s, an.len);
    if (!c1 || (an.len && !c2)) {
        s->failed = true;
    } else {
        if (v->declare) {
            seg_len_header(s, GP_VALUE_INFO, vi.len);
            seg_add(s, c1, vi.len);
        }
        if (an.len) {
            seg_len_header(s, GP_QUANT_ANNOTATION, an.len);
            seg_add(s, c2, an.len);
        }
    }
    sb_free(&vi);
    sb_free(&tp);
    sb_free(&tt);
    sb_free(&sh);
    sb_free(&an);
}

bool onnx_model_locate(const struct ctosa_onnx_model *m, const void *p, uint64_t len, int *fd,
                       uint64_t *offset) {
    if (!m || !p) return false;
    const uint8_t *b = p;
    const file_map *cand[1] = {&m->map};
    for (uint32_t i = 0; i < 1 + m->ext.n_maps; i++) {
        const file_map *f = i == 0 ? cand[0] : m->ext.maps[i - 1];
        if (!f || !f->mapped || f->fd < 0 || !f->data) continue;
        if (b >= f->data && b <= f->data + f->size && len <= (uint64_t)(f->data + f->size - b)) {
            *fd = f->fd;
            *offset = (uint64_t)(b - f->data);
            return true;
        }
    }
    return false;
}

enum { TP_DIMS = 1, TP_TYPE = 2, TP_EXTERNAL = 13 };

/* Byte size of an ONNX dtype's elements (0: not fixed-width / unknown). */
static uint64_t dtype_bytes(uint64_t t) {
    switch (t) {
    case 1:
    case 6:
    case 12: return 4; /* float, int32, uint32 */
    case 2:
    case 3:
    case 9:
    case 17:
    case 18:
    case 19:
    case 20: return 1; /* (u)int8, bool, fp8 */
    case 4:
    case 5:
    case 10:
    case 16: return 2; /* (u)int16, fp16, bf16 */
    case 7:
    case 11:
    case 13:
    case 14: return 8;  /* int64, double, uint64, complex64 */
    case 15: return 16; /* complex128 */
    default: return 0;
    }
}

static bool parse_dec(const uint8_t *p, uint64_t n, uint64_t *v) {
    if (!n || n > 20) return false;
    uint64_t x = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9' || x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(p[i] - '0');
    }
    *v = x;
    return true;
}

static void sb_entry(strbuf *b, const char *k, const char *v) {
    strbuf e;
    sb_init(&e);
    sb_field_str(&e, 1, k);
    sb_field_str(&e, 2, v);
    sb_field_msg(b, TP_EXTERNAL, &e);
    if (e.failed) b->failed = true;
    sb_free(&e);
}

/* An initializer kept in the output: copied as it is, unless it has
 * external data and the output is in another folder; then the TensorProto
 * is re-encoded with its external_data pointing into <out>.data, and the
 * bytes are scheduled for a streamed copy there. */
static ctosa_error *seg_initializer(pb_doc *d, const pb_field *tf, const uint8_t *end, segs *s) {
    if (!s->ext_name || tf->wire != PB_LEN) {
        seg_add(s, tf->at, (uint64_t)(end - tf->at));
        return NULL;
    }
    pb_cursor c;
    pb_field f;
    bool more, external = false;
    ctosa_error *e;
    const uint8_t *loc = NULL;
    uint64_t loc_n = 0, off = 0, len = 0, dtype = 0, elems = 1;
    bool have_len = false, bad = false;
    pb_cursor_init(&c, d, tf->data, tf->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num == 14 && f.wire == PB_VARINT) external = f.u == 1; /* data_location */
        if (f.num == TP_TYPE && f.wire == PB_VARINT) dtype = f.u;
        if (f.num == TP_DIMS && f.wire == PB_VARINT)
            elems = f.u && elems <= UINT64_MAX / f.u ? elems * f.u : 0;
        if (f.num == TP_DIMS && f.wire == PB_LEN) {
            const uint8_t *q = f.data, *qe = f.data + f.len;
            while (!e && q < qe) {
                uint64_t v;
                if ((e = pb_varint(d, &q, qe, &v))) break;
                elems = v && elems <= UINT64_MAX / v ? elems * v : 0;
            }
            if (e) break;
        }
        if (f.num != TP_EXTERNAL || f.wire != PB_LEN) continue;
        pb_cursor ec;
        pb_field ef;
        bool emore;
        const uint8_t *k = NULL, *v = NULL;
        uint64_t kn = 0, vn = 0;
        pb_cursor_init(&ec, d, f.data, f.len);
        while (!(e = pb_next(&ec, &ef, &emore)) && emore) {
            if (ef.num == 1 && ef.wire == PB_LEN) k = ef.data, kn = ef.len;
            if (ef.num == 2 && ef.wire == PB_LEN) v = ef.data, vn = ef.len;
        }
        if (e) break;
        if (!k || !v) continue;
        if (kn == 8 && memcmp(k, "location", 8) == 0) loc = v, loc_n = vn;
        else if (kn == 6 && memcmp(k, "offset", 6) == 0) bad |= !parse_dec(v, vn, &off);
        else if (kn == 6 && memcmp(k, "length", 6) == 0) bad |= !(have_len = parse_dec(v, vn, &len));
    }
    if (e) return e;
    if (!external) {
        seg_add(s, tf->at, (uint64_t)(end - tf->at));
        return NULL;
    }
    if (!have_len && !bad) {
        uint64_t es = dtype_bytes(dtype);
        if (!es || (elems && elems > UINT64_MAX / es)) bad = true;
        len = elems * es;
    }
    char *locs = loc ? arena_strndup(s->a, (const char *)loc, (size_t)loc_n) : NULL;
    if (bad || !locs || !locs[0] || locs[0] == '/' || strlen(locs) != loc_n || strcmp(locs, "..") == 0 ||
        strncmp(locs, "../", 3) == 0 || strstr(locs, "/../") ||
        (loc_n >= 3 && strcmp(locs + loc_n - 3, "/..") == 0))
        return pb_error(d, tf->at, "initializer '%.200s': external data entry that cannot be relocated",
                        msg_name(d, s->a, tf->data, tf->len, 8));
    /* Re-encode: every field but external_data as it is, then the new entries. */
    strbuf t;
    sb_init(&t);
    pb_cursor_init(&c, d, tf->data, tf->len);
    while (!(e = pb_next(&c, &f, &more)) && more)
        if (f.num != TP_EXTERNAL) sb_putn(&t, (const char *)f.at, (size_t)(c.p - f.at));
    if (e) {
        sb_free(&t);
        return e;
    }
    uint64_t dst = (s->ext_size + EXT_ALIGN - 1) / EXT_ALIGN * EXT_ALIGN;
    char num[32];
    sb_entry(&t, "location", s->ext_name);
    snprintf(num, sizeof num, "%llu", (unsigned long long)dst);
    sb_entry(&t, "offset", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)len);
    sb_entry(&t, "length", num);
    uint8_t *copy = t.failed ? NULL : arena_memdup(s->a, t.s ? t.s : "", t.len);
    if (copy) {
        seg_len_header(s, GP_INIT, t.len);
        seg_add(s, copy, t.len);
    } else {
        s->failed = true;
    }
    sb_free(&t);
    if (s->nx == s->capx) {
        uint32_t cap = s->capx ? s->capx * 2 : 32;
        ext_copy *nv = arena_alloc(s->a, cap * sizeof *nv);
        if (!nv) return ctosa_error_nomem();
        if (s->nx) memcpy(nv, s->x, s->nx * sizeof *nv);
        s->x = nv;
        s->capx = cap;
    }
    const char *src = arena_printf(s->a, "%s/%s", s->model_dir, locs);
    if (!src) return ctosa_error_nomem();
    s->x[s->nx++] = (ext_copy){src, off, len, dst};
    s->ext_size = dst + len;
    return NULL;
}

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
                if (it >= 0 && rw->nodes && rw->orig[it] < 0) {
                    if ((e = seg_node_encoded(d, s, &rw->nodes[it]))) return pb_finish_error(d, e);
                } else if (it >= 0) {
                    if (rw->nodes) it = rw->orig[it];
                    if ((uint64_t)it >= n_nodes)
                        return ctosa_error_new(CTOSA_ERR_INTERNAL, "rewrite names node #%lld of %u",
                                               (long long)it, n_nodes);
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
            if ((e = seg_initializer(d, &f, end, s))) return pb_finish_error(d, e);
            break;
        case GP_INPUT:
            if (f.wire == PB_LEN && rw->drop_init &&
                strmap_has(rw->drop_init, msg_name(d, s->a, f.data, f.len, 1)))
                break;
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        case GP_VALUE_INFO:
            if (f.wire == PB_LEN && rw->drop_vi &&
                strmap_has(rw->drop_vi, msg_name(d, s->a, f.data, f.len, 1)))
                break;
            seg_add(s, f.at, (uint64_t)(end - f.at));
            break;
        default: seg_add(s, f.at, (uint64_t)(end - f.at)); break;
        }
    }
    if (e) return pb_finish_error(d, e);
    if (!nodes_done)
        for (uint32_t i = 0; i < rw->n_items; i++)
            if (rw->items[i] < 0) seg_ep_node(s, &rw->ep[-rw->items[i] - 1]);
    for (uint32_t i = 0; i < rw->n_consts; i++) seg_const_init(s, &rw->consts[i]);
    for (uint32_t i = 0; i < rw->n_decls; i++) seg_value_decl(s, &rw->decls[i]);
    return NULL;
}

/* Real path of the folder of `path` (which need not exist itself). */
static char *real_dir_of(arena *a, const char *path) {
    const char *sl = strrchr(path, '/');
    const char *dir = sl ? (sl == path ? "/" : arena_strndup(a, path, (size_t)(sl - path))) : ".";
    char buf[PATH_MAX];
    if (!dir || !realpath(dir, buf)) return NULL;
    return arena_strdup(a, buf);
}

/* Writes the external tensors scheduled in `x` to path (atomically). */
static ctosa_error *write_ext_file(const segs *x, const char *path, out_file *o) {
    ctosa_error *e = out_file_open(o, path);
    if (e) return e;
    for (uint32_t i = 0; !e && i < x->nx; i++) {
        const ext_copy *c = &x->x[i];
        if (c->dst_off > o->written) e = out_file_pad(o, (size_t)(c->dst_off - o->written));
        if (e) break;
        int fd = open(c->src_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot open: %s", c->src_path, strerror(errno));
            break;
        }
        e = out_file_copy_range(o, fd, c->src_off, c->n, c->src_path);
        close(fd);
    }
    if (e) out_file_abort(o);
    return e;
}

ctosa_error *onnx_write_rewritten(const char *model_path, const onnx_rewrite *rw, const char *out_path) {
    file_map m;
    ctosa_error *e = file_map_open(model_path, &m);
    if (e) return e;
    arena a;
    arena_init(&a, 0);
    segs s = {.a = &a};
    /* External-data locations are relative to the model's folder: when the
     * output goes elsewhere, the kept external tensors are copied (streamed)
     * into "<output file>.data" beside it. */
    const char *model_dir = real_dir_of(&a, model_path), *out_dir = real_dir_of(&a, out_path);
    const char *ext_name = NULL;
    if (model_dir && out_dir && strcmp(model_dir, out_dir) != 0) {
        const char *base = strrchr(out_path, '/');
        ext_name = arena_printf(&a, "%s.data", base ? base + 1 : out_path);
    }
    segs body = {.a = &a, .model_dir = model_dir, .ext_name = ext_name};
    pb_doc d = {.name = model_path, .base = m.data, .size = m.size};
    pb_cursor c;
    pb_field f;
    bool more, has_ms = false;
    strmap doms; /* imported domains ("ai.onnx" as "") */
    strmap_init(&doms);
    pb_cursor_init(&c, &d, m.data, m.size);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        const uint8_t *end = c.p;
        if (f.num == MP_GRAPH && f.wire == PB_LEN) {
            if ((e = graph_segments(&d, &f, rw, &body))) break;
            if (body.failed) {
                e = ctosa_error_nomem();
                break;
            }
            seg_len_header(&s, MP_GRAPH, seg_total(&body, 0));
            for (uint32_t i = 0; i < body.n; i++) seg_add(&s, body.v[i].p, body.v[i].n);
            continue;
        }
        if (f.num == MP_FUNCTIONS && rw->drop_functions) continue;
        if (f.num == MP_OPSET && f.wire == PB_LEN) {
            const char *dom = msg_name(&d, &a, f.data, f.len, 1);
            if (strcmp(dom, "com.microsoft") == 0) has_ms = true;
            if (!strmap_put(&doms, strcmp(dom, "ai.onnx") == 0 ? "" : dom, (void *)1)) s.failed = true;
        }
        seg_add(&s, f.at, (uint64_t)(end - f.at));
    }
    /* Domains the inlined function bodies use that the model does not import. */
    for (uint32_t i = 0; !e && i < rw->n_opsets; i++) {
        const char *dom = strcmp(rw->opsets[i].domain, "ai.onnx") == 0 ? "" : rw->opsets[i].domain;
        if (strmap_has(&doms, dom) || strcmp(dom, "com.microsoft") == 0) continue;
        if (!strmap_put(&doms, dom, (void *)1)) s.failed = true;
        strbuf op;
        sb_init(&op);
        sb_field_str(&op, 1, dom);
        sb_field_int(&op, 2, (uint64_t)rw->opsets[i].version);
        uint8_t *copy = op.failed ? NULL : arena_memdup(&a, op.s ? op.s : "", op.len);
        seg_len_header(&s, MP_OPSET, op.len);
        if (copy) seg_add(&s, copy, op.len);
        else s.failed = true;
        sb_free(&op);
    }
    strmap_free(&doms);
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
    out_file xo;
    bool have_x = false;
    if (!e && body.nx) {
        const char *xpath = arena_printf(&a, "%s.data", out_path);
        e = xpath ? write_ext_file(&body, xpath, &xo) : ctosa_error_nomem();
        have_x = !e;
    }
    if (!e) {
        out_file o;
        e = out_file_open(&o, out_path);
        if (!e) {
            for (uint32_t i = 0; !e && i < s.n; i++) {
                const seg *g = &s.v[i];
                bool in_map = g->p >= m.data && g->p < m.data + m.size && m.fd >= 0 && m.mapped;
                if (in_map && g->n >= COPY_RANGE_MIN)
                    e = out_file_copy_range(&o, m.fd, (uint64_t)(g->p - m.data), g->n, model_path);
                else e = out_file_write(&o, g->p, (size_t)g->n);
            }
            /* The data file first: the model must never name a missing one. */
            if (!e && have_x) {
                e = out_file_commit(&xo);
                have_x = false;
            }
            if (!e) e = out_file_commit(&o);
            else out_file_abort(&o);
        }
    }
    if (have_x) out_file_abort(&xo);
    /* A data file left by an earlier run into this folder names tensors
     * this model no longer references: remove it. */
    if (!e && !body.nx) {
        const char *xpath = arena_printf(&a, "%s.data", out_path);
        if (xpath) unlink(xpath);
    }
    arena_free(&a);
    file_map_close(&m);
    return e;
}
