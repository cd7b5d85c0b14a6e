/* onnx_model.c - ModelProto / GraphProto / NodeProto / AttributeProto /
 * ValueInfoProto / TypeProto / FunctionProto decoding into the read-only
 * view of ctosa/onnx.h.
 *
 * Repeated fields are handled in two passes over each message: the first
 * counts (and validates the wire format), the second fills arrays of the
 * exact size. Allocations therefore never exceed what the bytes present can
 * describe, and limits are checked before anything is allocated. Tensor
 * payloads are never read here (see onnx_tensor.c). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"

#define ONNX_MAX_TYPE_DEPTH 64
#define ONNX_MAX_TYPE_RANK 64

/* Field numbers (onnx.proto). */
enum {
    MP_IR_VERSION = 1,
    MP_PRODUCER_NAME = 2,
    MP_PRODUCER_VERSION = 3,
    MP_DOMAIN = 4,
    MP_MODEL_VERSION = 5,
    MP_GRAPH = 7,
    MP_OPSET_IMPORT = 8,
    MP_METADATA = 14,
    MP_FUNCTIONS = 25
};
enum {
    GP_NODE = 1,
    GP_NAME = 2,
    GP_INITIALIZER = 5,
    GP_INPUT = 11,
    GP_OUTPUT = 12,
    GP_VALUE_INFO = 13,
    GP_SPARSE_INITIALIZER = 15
};
enum {
    NP_INPUT = 1,
    NP_OUTPUT = 2,
    NP_NAME = 3,
    NP_OP_TYPE = 4,
    NP_ATTRIBUTE = 5,
    NP_DOMAIN = 7,
    NP_OVERLOAD = 8
};
enum {
    AP_NAME = 1,
    AP_F = 2,
    AP_I = 3,
    AP_S = 4,
    AP_T = 5,
    AP_G = 6,
    AP_FLOATS = 7,
    AP_INTS = 8,
    AP_STRINGS = 9,
    AP_TENSORS = 10,
    AP_GRAPHS = 11,
    AP_TP = 14,
    AP_TYPE_PROTOS = 15,
    AP_TYPE = 20,
    AP_REF_ATTR_NAME = 21,
    AP_SPARSE_TENSOR = 22,
    AP_SPARSE_TENSORS = 23,
    AP_NFIELDS = 24
};
enum {
    FP_NAME = 1,
    FP_INPUT = 4,
    FP_OUTPUT = 5,
    FP_ATTRIBUTE = 6,
    FP_NODE = 7,
    FP_OPSET_IMPORT = 9,
    FP_DOMAIN = 10,
    FP_ATTRIBUTE_PROTO = 11,
    FP_VALUE_INFO = 12,
    FP_OVERLOAD = 13
};

ctosa_error *onnx_str(onnx_ctx *ctx, const pb_field *f, const char *what, const char **out) {
    ctosa_error *e = pb_expect(&ctx->doc, f, PB_LEN, what);
    if (e) return e;
    if (f->len > ctx->max_name)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, f->at, "%s is %llu bytes long (limit %u)", what,
                             (unsigned long long)f->len, ctx->max_name);
    if (memchr(f->data, 0, (size_t)f->len)) return pb_error(&ctx->doc, f->at, "%s contains a NUL byte", what);
    char *s = arena_strndup(ctx->a, (const char *)f->data, (size_t)f->len);
    if (!s) return ctosa_error_nomem();
    *out = s;
    return NULL;
}

const char *onnx_node_label(const ctosa_onnx_node *n, char *buf, size_t size) {
    snprintf(buf, size, "node #%u '%.200s' (%.100s%s%.100s)", n->index, n->name,
             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    return buf;
}

/* Counts fields by number (numbers >= nmax are not counted) and checks that
 * the listed LEN fields are length-delimited. */
/* Inline weights: the walk never reads a payload it skips, but each tag it
 * reads faults in the whole page-cache folio around it (large folios can
 * span megabytes), so without this the process's RSS would grow by most
 * of an inline-weights model.onnx. Large payloads already walked past
 * (or parsed: their bytes stay valid and fault back in when used) are
 * unmapped from the process; the page cache keeps them. */
#define DROP_MIN ((uint64_t)1 << 20)
/* The read-only file mapping being parsed by this thread (ctosa_onnx_load),
 * NULL otherwise: only its pages may be dropped. */
static _Thread_local const uint8_t *drop_base;
static _Thread_local uint64_t drop_size;
static void drop_pages(const onnx_ctx *ctx, const uint8_t *p, uint64_t n) {
    if (!drop_base || ctx->doc.base != drop_base || n < DROP_MIN || p < drop_base ||
        (uint64_t)(p - drop_base) > drop_size || n > drop_size - (uint64_t)(p - drop_base))
        return;
    static uintptr_t page;
    if (!page) {
        long ps = sysconf(_SC_PAGESIZE);
        page = ps > 0 ? (uintptr_t)ps : 4096;
    }
    uintptr_t a = ((uintptr_t)p + page - 1) / page * page, b = ((uintptr_t)p + n) / page * page;
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

static ctosa_error *count_fields(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint64_t *cnt, uint32_t nmax,
                                 const uint32_t *len_fields, size_t n_len) {
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    memset(cnt, 0, nmax * sizeof *cnt);
    pb_cursor_init(&c, &ctx->doc, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.wire == PB_LEN) drop_pages(ctx, f.data, f.len);
        if (f.num >= nmax) continue;
        cnt[f.num]++;
        for (size_t i = 0; i < n_len; i++)
            if (len_fields[i] == f.num && f.wire != PB_LEN)
                return pb_error(&ctx->doc, f.at, "field %u has wire type %d, expected length-delimited",
                                f.num, f.wire);
    }
    return e;
}

static void *alloc_array(onnx_ctx *ctx, uint64_t n, size_t elem) {
    if (n == 0) return NULL;
    if (n > SIZE_MAX / elem) return NULL;
    return arena_zalloc(ctx->a, (size_t)n * elem);
}
#define ALLOC_N(ctx, ptr, n)                                                                      \
    do {                                                                                          \
        if ((n) && !((ptr) = alloc_array((ctx), (n), sizeof *(ptr)))) return ctosa_error_nomem(); \
    } while (0)

static ctosa_error *check_count(onnx_ctx *ctx, const uint8_t *at, uint64_t n, const char *what) {
    if (n >= UINT32_MAX)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, at, "too many %s (%llu)", what,
                             (unsigned long long)n);
    return NULL;
}

/* ---------------------------------------------------------------- small */

static ctosa_error *parse_opset(onnx_ctx *ctx, const pb_field *of, ctosa_onnx_opset *o) {
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    o->domain = "";
    o->version = 0;
    pb_cursor_init(&c, &ctx->doc, of->data, of->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num == 1 && (e = onnx_str(ctx, &f, "opset domain", &o->domain))) return e;
        if (f.num == 2) {
            if ((e = pb_expect(&ctx->doc, &f, PB_VARINT, "opset version"))) return e;
            o->version = (int64_t)f.u;
        }
    }
    return e;
}

static ctosa_error *parse_kv(onnx_ctx *ctx, const pb_field *of, ctosa_onnx_kv *kv) {
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    kv->key = kv->value = "";
    pb_cursor_init(&c, &ctx->doc, of->data, of->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num == 1 && (e = onnx_str(ctx, &f, "key", &kv->key))) return e;
        if (f.num == 2 && (e = onnx_str(ctx, &f, "value", &kv->value))) return e;
    }
    return e;
}

/* ---------------------------------------------------------------- types */

static ctosa_error *parse_type(onnx_ctx *ctx, const uint8_t *p, uint64_t n, const ctosa_onnx_type **out);

static ctosa_error *parse_shape(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_type *t) {
    uint64_t cnt[2];
    static const uint32_t lens[] = {1};
    ctosa_error *e = count_fields(ctx, p, n, cnt, 2, lens, 1);
    if (e) return e;
    if (cnt[1] > ONNX_MAX_TYPE_RANK)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, p, "shape has %llu dims (limit %d)",
                             (unsigned long long)cnt[1], ONNX_MAX_TYPE_RANK);
    ctosa_onnx_dim *dims = NULL;
    ALLOC_N(ctx, dims, cnt[1]);
    t->has_shape = true;
    t->rank = 0;
    t->dims = dims;
    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, &ctx->doc, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num != 1) continue;
        ctosa_onnx_dim *d = &dims[t->rank++];
        pb_cursor dc;
        pb_field df;
        bool dmore;
        pb_cursor_init(&dc, &ctx->doc, f.data, f.len);
        while (!(e = pb_next(&dc, &df, &dmore)) && dmore) {
            if (df.num == 1) {
                if ((e = pb_expect(&ctx->doc, &df, PB_VARINT, "dim_value"))) return e;
                d->has_value = true;
                d->value = (int64_t)df.u;
                d->param = NULL;
            } else if (df.num == 2) {
                if ((e = onnx_str(ctx, &df, "dim_param", &d->param))) return e;
                d->has_value = false;
            }
        }
        if (e) return e;
    }
    return e;
}

static ctosa_error *parse_type_body(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_type *t) {
    pb_doc *d = &ctx->doc;
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    t->denotation = "";
    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case CTOSA_ONNX_TYPE_TENSOR:
        case CTOSA_ONNX_TYPE_SPARSE_TENSOR: {
            if ((e = pb_expect(d, &f, PB_LEN, "tensor_type"))) return e;
            t->kind = (ctosa_onnx_type_kind)f.num;
            pb_cursor tc;
            pb_field tf;
            bool tmore;
            pb_cursor_init(&tc, d, f.data, f.len);
            while (!(e = pb_next(&tc, &tf, &tmore)) && tmore) {
                if (tf.num == 1) {
                    if ((e = pb_expect(d, &tf, PB_VARINT, "elem_type"))) return e;
                    t->elem_type = (int32_t)(uint32_t)tf.u;
                } else if (tf.num == 2) {
                    if ((e = pb_expect(d, &tf, PB_LEN, "shape"))) return e;
                    if ((e = parse_shape(ctx, tf.data, tf.len, t))) return e;
                }
            }
            if (e) return e;
            break;
        }
        case CTOSA_ONNX_TYPE_SEQUENCE:
        case CTOSA_ONNX_TYPE_OPTIONAL:
        case CTOSA_ONNX_TYPE_MAP: {
            if ((e = pb_expect(d, &f, PB_LEN, "type"))) return e;
            t->kind = (ctosa_onnx_type_kind)f.num;
            pb_cursor tc;
            pb_field tf;
            bool tmore;
            pb_cursor_init(&tc, d, f.data, f.len);
            while (!(e = pb_next(&tc, &tf, &tmore)) && tmore) {
                if (f.num == CTOSA_ONNX_TYPE_MAP && tf.num == 1) {
                    if ((e = pb_expect(d, &tf, PB_VARINT, "key_type"))) return e;
                    t->key_type = (int32_t)(uint32_t)tf.u;
                } else if (tf.num == (f.num == CTOSA_ONNX_TYPE_MAP ? 2u : 1u)) {
                    if ((e = pb_expect(d, &tf, PB_LEN, "elem_type"))) return e;
                    if ((e = parse_type(ctx, tf.data, tf.len, &t->elem))) return e;
                }
            }
            if (e) return e;
            break;
        }
        case CTOSA_ONNX_TYPE_OPAQUE: {
            if ((e = pb_expect(d, &f, PB_LEN, "opaque_type"))) return e;
            t->kind = CTOSA_ONNX_TYPE_OPAQUE;
            t->opaque_domain = t->opaque_name = "";
            pb_cursor tc;
            pb_field tf;
            bool tmore;
            pb_cursor_init(&tc, d, f.data, f.len);
            while (!(e = pb_next(&tc, &tf, &tmore)) && tmore) {
                if (tf.num == 1 && (e = onnx_str(ctx, &tf, "domain", &t->opaque_domain))) return e;
                if (tf.num == 2 && (e = onnx_str(ctx, &tf, "name", &t->opaque_name))) return e;
            }
            if (e) return e;
            break;
        }
        case 6:
            if ((e = onnx_str(ctx, &f, "denotation", &t->denotation))) return e;
            break;
        default: break;
        }
    }
    return e;
}

static ctosa_error *parse_type(onnx_ctx *ctx, const uint8_t *p, uint64_t n, const ctosa_onnx_type **out) {
    if (ctx->type_depth >= ONNX_MAX_TYPE_DEPTH)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, p, "types nested deeper than %d",
                             ONNX_MAX_TYPE_DEPTH);
    ctosa_onnx_type *t = arena_zalloc(ctx->a, sizeof *t);
    if (!t) return ctosa_error_nomem();
    ctx->type_depth++;
    ctosa_error *e = parse_type_body(ctx, p, n, t);
    ctx->type_depth--;
    *out = t;
    return e;
}

static ctosa_error *parse_value_info(onnx_ctx *ctx, const pb_field *vf, ctosa_onnx_value_info *v) {
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    v->name = "";
    v->type = NULL;
    v->offset = pb_offset(&ctx->doc, vf->at);
    pb_cursor_init(&c, &ctx->doc, vf->data, vf->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num == 1 && (e = onnx_str(ctx, &f, "name", &v->name))) return e;
        if (f.num == 2) {
            if ((e = pb_expect(&ctx->doc, &f, PB_LEN, "type"))) return e;
            if ((e = parse_type(ctx, f.data, f.len, &v->type)))
                return ctosa_error_prefix(e, "value '%.200s'", v->name);
        }
    }
    return e;
}

/* ----------------------------------------------------------- attributes */

static ctosa_error *parse_graph(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint32_t depth,
                                const ctosa_onnx_graph *parent, const ctosa_onnx_graph **out);

static ctosa_error *parse_attr_body(onnx_ctx *ctx, const pb_field *af, uint32_t depth,
                                    const ctosa_onnx_graph *owner, ctosa_onnx_attr *a) {
    pb_doc *d = &ctx->doc;
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    uint64_t cnt[AP_NFIELDS] = {0};
    uint64_t n_floats = 0, n_ints = 0;
    bool has[AP_NFIELDS] = {false};

    /* Pass 1: counts, name, type. */
    pb_cursor_init(&c, d, af->data, af->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num >= AP_NFIELDS) continue;
        has[f.num] = true;
        cnt[f.num]++;
        uint64_t k;
        switch (f.num) {
        case AP_NAME:
            if ((e = onnx_str(ctx, &f, "name", &a->name))) return e;
            break;
        case AP_REF_ATTR_NAME:
            if ((e = onnx_str(ctx, &f, "ref_attr_name", &a->ref_attr_name))) return e;
            break;
        case AP_TYPE:
            if ((e = pb_expect(d, &f, PB_VARINT, "type"))) return e;
            if (f.u > CTOSA_ONNX_ATTR_TYPE_PROTOS)
                return pb_error(d, f.at, "unknown attribute type %llu", (unsigned long long)f.u);
            a->type = (ctosa_onnx_attr_type)f.u;
            break;
        case AP_F:
            if ((e = pb_expect(d, &f, PB_I32, "f"))) return e;
            break;
        case AP_I:
            if ((e = pb_expect(d, &f, PB_VARINT, "i"))) return e;
            break;
        case AP_FLOATS:
            if ((e = pb_repeated_count(d, &f, PB_I32, "floats", &k))) return e;
            n_floats += k;
            break;
        case AP_INTS:
            if ((e = pb_repeated_count(d, &f, PB_VARINT, "ints", &k))) return e;
            n_ints += k;
            break;
        case AP_S:
        case AP_T:
        case AP_G:
        case AP_STRINGS:
        case AP_TENSORS:
        case AP_GRAPHS:
        case AP_TP:
        case AP_TYPE_PROTOS:
        case AP_SPARSE_TENSOR:
        case AP_SPARSE_TENSORS:
            if ((e = pb_expect(d, &f, PB_LEN, "value"))) return e;
            break;
        default: break;
        }
    }
    if (e) return e;

    if (a->type == CTOSA_ONNX_ATTR_UNDEFINED) {
        /* Old files: the type is the one value field present. */
        static const struct {
            uint8_t field;
            uint8_t type;
        } infer[] = {{AP_F, CTOSA_ONNX_ATTR_FLOAT},
                     {AP_I, CTOSA_ONNX_ATTR_INT},
                     {AP_S, CTOSA_ONNX_ATTR_STRING},
                     {AP_T, CTOSA_ONNX_ATTR_TENSOR},
                     {AP_G, CTOSA_ONNX_ATTR_GRAPH},
                     {AP_SPARSE_TENSOR, CTOSA_ONNX_ATTR_SPARSE_TENSOR},
                     {AP_TP, CTOSA_ONNX_ATTR_TYPE_PROTO},
                     {AP_FLOATS, CTOSA_ONNX_ATTR_FLOATS},
                     {AP_INTS, CTOSA_ONNX_ATTR_INTS},
                     {AP_STRINGS, CTOSA_ONNX_ATTR_STRINGS},
                     {AP_TENSORS, CTOSA_ONNX_ATTR_TENSORS},
                     {AP_GRAPHS, CTOSA_ONNX_ATTR_GRAPHS},
                     {AP_SPARSE_TENSORS, CTOSA_ONNX_ATTR_SPARSE_TENSORS},
                     {AP_TYPE_PROTOS, CTOSA_ONNX_ATTR_TYPE_PROTOS}};
        int found = 0;
        for (size_t i = 0; i < CTOSA_ARRAY_LEN(infer); i++)
            if (has[infer[i].field]) {
                a->type = (ctosa_onnx_attr_type)infer[i].type;
                found++;
            }
        if (found > 1) return pb_error(d, af->data, "no type given and several value fields set");
        if (found == 0 && !a->ref_attr_name) return pb_error(d, af->data, "no type and no value");
    }

    uint64_t n_list = 0;
    switch (a->type) {
    case CTOSA_ONNX_ATTR_FLOATS: n_list = n_floats; break;
    case CTOSA_ONNX_ATTR_INTS: n_list = n_ints; break;
    case CTOSA_ONNX_ATTR_STRINGS: n_list = cnt[AP_STRINGS]; break;
    case CTOSA_ONNX_ATTR_TENSORS: n_list = cnt[AP_TENSORS]; break;
    case CTOSA_ONNX_ATTR_GRAPHS: n_list = cnt[AP_GRAPHS]; break;
    case CTOSA_ONNX_ATTR_SPARSE_TENSORS: n_list = cnt[AP_SPARSE_TENSORS]; break;
    case CTOSA_ONNX_ATTR_TYPE_PROTOS: n_list = cnt[AP_TYPE_PROTOS]; break;
    default: break;
    }
    if ((e = check_count(ctx, af->data, n_list, "attribute values"))) return e;
    a->count = (uint32_t)n_list;
    float *floats = NULL;
    int64_t *ints = NULL;
    ctosa_onnx_bytes *strings = NULL;
    ctosa_onnx_tensor *tensors = NULL;
    const ctosa_onnx_graph **graphs = NULL;
    ctosa_onnx_sparse_tensor *sparse = NULL;
    const ctosa_onnx_type **tps = NULL;
    switch (a->type) {
    case CTOSA_ONNX_ATTR_FLOATS:
        ALLOC_N(ctx, floats, n_list);
        a->floats = floats;
        break;
    case CTOSA_ONNX_ATTR_INTS:
        ALLOC_N(ctx, ints, n_list);
        a->ints = ints;
        break;
    case CTOSA_ONNX_ATTR_STRINGS:
        ALLOC_N(ctx, strings, n_list);
        a->strings = strings;
        break;
    case CTOSA_ONNX_ATTR_TENSORS:
        ALLOC_N(ctx, tensors, n_list);
        a->tensors = tensors;
        break;
    case CTOSA_ONNX_ATTR_GRAPHS:
        ALLOC_N(ctx, graphs, n_list);
        a->graphs = graphs;
        break;
    case CTOSA_ONNX_ATTR_SPARSE_TENSORS:
        ALLOC_N(ctx, sparse, n_list);
        a->sparse_tensors = sparse;
        break;
    case CTOSA_ONNX_ATTR_TYPE_PROTOS:
        ALLOC_N(ctx, tps, n_list);
        a->type_protos = tps;
        break;
    default: break;
    }

    /* Pass 2: values of the declared type (other value fields ignored). */
    uint64_t k = 0;
    pb_cursor_init(&c, d, af->data, af->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case AP_F: a->f = pb_f32(f.u); break;
        case AP_I: a->i = (int64_t)f.u; break;
        case AP_S: a->s = (ctosa_onnx_bytes){f.data, f.len}; break;
        case AP_T:
            if (a->type != CTOSA_ONNX_ATTR_TENSOR) break;
            {
                ctosa_onnx_tensor *t = arena_zalloc(ctx->a, sizeof *t);
                if (!t) return ctosa_error_nomem();
                if ((e = onnx_parse_tensor(ctx, f.data, f.len, t))) return e;
                a->t = t;
            }
            break;
        case AP_G:
            if (a->type != CTOSA_ONNX_ATTR_GRAPH) break;
            if ((e = parse_graph(ctx, f.data, f.len, depth + 1, owner, &a->g))) return e;
            break;
        case AP_SPARSE_TENSOR:
            if (a->type != CTOSA_ONNX_ATTR_SPARSE_TENSOR) break;
            {
                ctosa_onnx_sparse_tensor *t = arena_zalloc(ctx->a, sizeof *t);
                if (!t) return ctosa_error_nomem();
                if ((e = onnx_parse_sparse_tensor(ctx, f.data, f.len, t))) return e;
                a->sparse_tensor = t;
            }
            break;
        case AP_TP:
            if (a->type != CTOSA_ONNX_ATTR_TYPE_PROTO) break;
            if ((e = parse_type(ctx, f.data, f.len, &a->tp))) return e;
            break;
        case AP_FLOATS:
            if (a->type == CTOSA_ONNX_ATTR_FLOATS) {
                if (f.wire != PB_LEN) {
                    floats[k++] = pb_f32(f.u);
                } else {
                    for (const uint8_t *q = f.data; q < f.data + f.len; q += 4)
                        floats[k++] = pb_f32(rd_u32(q));
                }
            }
            break;
        case AP_INTS:
            if (a->type == CTOSA_ONNX_ATTR_INTS) {
                if (f.wire != PB_LEN) {
                    ints[k++] = (int64_t)f.u;
                } else {
                    const uint8_t *q = f.data, *end = f.data + f.len;
                    while (q < end) {
                        uint64_t v;
                        if ((e = pb_varint(d, &q, end, &v))) return e;
                        ints[k++] = (int64_t)v;
                    }
                }
            }
            break;
        case AP_STRINGS:
            if (a->type == CTOSA_ONNX_ATTR_STRINGS) strings[k++] = (ctosa_onnx_bytes){f.data, f.len};
            break;
        case AP_TENSORS:
            if (a->type == CTOSA_ONNX_ATTR_TENSORS) {
                if ((e = onnx_parse_tensor(ctx, f.data, f.len, &tensors[k])))
                    return ctosa_error_prefix(e, "tensors[%llu]", (unsigned long long)k);
                k++;
            }
            break;
        case AP_GRAPHS:
            if (a->type == CTOSA_ONNX_ATTR_GRAPHS) {
                if ((e = parse_graph(ctx, f.data, f.len, depth + 1, owner, &graphs[k])))
                    return ctosa_error_prefix(e, "graphs[%llu]", (unsigned long long)k);
                k++;
            }
            break;
        case AP_SPARSE_TENSORS:
            if (a->type == CTOSA_ONNX_ATTR_SPARSE_TENSORS) {
                if ((e = onnx_parse_sparse_tensor(ctx, f.data, f.len, &sparse[k])))
                    return ctosa_error_prefix(e, "sparse_tensors[%llu]", (unsigned long long)k);
                k++;
            }
            break;
        case AP_TYPE_PROTOS:
            if (a->type == CTOSA_ONNX_ATTR_TYPE_PROTOS) {
                if ((e = parse_type(ctx, f.data, f.len, &tps[k]))) return e;
                k++;
            }
            break;
        default: break;
        }
    }
    if (e) return e;
    /* A declared single-value type whose field is missing. */
    if (!a->ref_attr_name) {
        if ((a->type == CTOSA_ONNX_ATTR_TENSOR && !a->t) || (a->type == CTOSA_ONNX_ATTR_GRAPH && !a->g) ||
            (a->type == CTOSA_ONNX_ATTR_SPARSE_TENSOR && !a->sparse_tensor) ||
            (a->type == CTOSA_ONNX_ATTR_TYPE_PROTO && !a->tp))
            return pb_error(d, af->data, "type %s but no value", ctosa_onnx_attr_type_name(a->type));
    }
    return NULL;
}

static ctosa_error *parse_attr(onnx_ctx *ctx, const pb_field *af, uint32_t depth,
                               const ctosa_onnx_graph *owner, ctosa_onnx_attr *a) {
    memset(a, 0, sizeof *a);
    a->name = "";
    a->offset = pb_offset(&ctx->doc, af->at);
    ctosa_error *e = parse_attr_body(ctx, af, depth, owner, a);
    if (e) e = ctosa_error_prefix(e, "attribute '%.200s'", a->name);
    return e;
}

/* ---------------------------------------------------------------- nodes */

static ctosa_error *parse_node_body(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint32_t depth,
                                    const ctosa_onnx_graph *owner, ctosa_onnx_node *nd) {
    pb_doc *d = &ctx->doc;
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    uint64_t n_in = 0, n_out = 0, n_attr = 0;

    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case NP_INPUT: n_in++; break;
        case NP_OUTPUT: n_out++; break;
        case NP_ATTRIBUTE:
            if ((e = pb_expect(d, &f, PB_LEN, "attribute"))) return e;
            n_attr++;
            break;
        case NP_NAME:
            if ((e = onnx_str(ctx, &f, "name", &nd->name))) return e;
            break;
        case NP_OP_TYPE:
            if ((e = onnx_str(ctx, &f, "op_type", &nd->op_type))) return e;
            break;
        case NP_DOMAIN:
            if ((e = onnx_str(ctx, &f, "domain", &nd->domain))) return e;
            break;
        case NP_OVERLOAD:
            if ((e = onnx_str(ctx, &f, "overload", &nd->overload))) return e;
            break;
        default: break;
        }
    }
    if (e) return e;
    if ((e = check_count(ctx, p, n_in + n_out + n_attr, "node inputs/outputs/attributes"))) return e;
    const char **ins = NULL, **outs = NULL;
    ctosa_onnx_attr *attrs = NULL;
    ALLOC_N(ctx, ins, n_in);
    ALLOC_N(ctx, outs, n_out);
    ALLOC_N(ctx, attrs, n_attr);
    nd->inputs = ins;
    nd->outputs = outs;
    nd->attrs = attrs;
    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case NP_INPUT:
            if ((e = onnx_str(ctx, &f, "input", &ins[nd->n_inputs]))) return e;
            nd->n_inputs++;
            break;
        case NP_OUTPUT:
            if ((e = onnx_str(ctx, &f, "output", &outs[nd->n_outputs]))) return e;
            nd->n_outputs++;
            break;
        case NP_ATTRIBUTE:
            if ((e = parse_attr(ctx, &f, depth, owner, &attrs[nd->n_attrs]))) return e;
            nd->n_attrs++;
            break;
        default: break;
        }
    }
    return e;
}

ctosa_error *onnx_parse_node(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint32_t index, uint32_t depth,
                             const ctosa_onnx_graph *owner, ctosa_onnx_node *nd) {
    memset(nd, 0, sizeof *nd);
    nd->name = nd->op_type = nd->domain = nd->overload = "";
    nd->index = index;
    nd->offset = pb_offset(&ctx->doc, p);
    ctosa_error *e = parse_node_body(ctx, p, n, depth, owner, nd);
    if (e) {
        char buf[512];
        e = ctosa_error_prefix(e, "%s", onnx_node_label(nd, buf, sizeof buf));
    }
    return e;
}

/* ---------------------------------------------------------------- graphs */

static ctosa_error *add_nodes(onnx_ctx *ctx, const uint8_t *at, uint64_t n) {
    if (n > ctx->max_nodes || ctx->total_nodes > ctx->max_nodes - n)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, at, "more than %u nodes in the model",
                             ctx->max_nodes);
    ctx->total_nodes += (uint32_t)n;
    return NULL;
}

static ctosa_error *parse_graph_body(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_graph *g) {
    pb_doc *d = &ctx->doc;
    static const uint32_t lens[] = {GP_NODE,   GP_INITIALIZER, GP_INPUT,
                                    GP_OUTPUT, GP_VALUE_INFO,  GP_SPARSE_INITIALIZER};
    uint64_t cnt[16];
    ctosa_error *e = count_fields(ctx, p, n, cnt, 16, lens, CTOSA_ARRAY_LEN(lens));
    if (e) return e;
    if ((e = add_nodes(ctx, p, cnt[GP_NODE]))) return e;
    for (int i = 0; i < 16; i++)
        if ((e = check_count(ctx, p, cnt[i], "graph entries"))) return e;
    ctosa_onnx_node *nodes = NULL;
    ctosa_onnx_tensor *inits = NULL;
    ctosa_onnx_sparse_tensor *sparse = NULL;
    ctosa_onnx_value_info *ins = NULL, *outs = NULL, *vis = NULL;
    ALLOC_N(ctx, nodes, cnt[GP_NODE]);
    ALLOC_N(ctx, inits, cnt[GP_INITIALIZER]);
    ALLOC_N(ctx, sparse, cnt[GP_SPARSE_INITIALIZER]);
    ALLOC_N(ctx, ins, cnt[GP_INPUT]);
    ALLOC_N(ctx, outs, cnt[GP_OUTPUT]);
    ALLOC_N(ctx, vis, cnt[GP_VALUE_INFO]);
    g->nodes = nodes;
    g->initializers = inits;
    g->sparse_initializers = sparse;
    g->inputs = ins;
    g->outputs = outs;
    g->value_infos = vis;

    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case GP_NAME:
            if ((e = onnx_str(ctx, &f, "graph name", &g->name))) return e;
            break;
        case GP_NODE:
            if ((e = onnx_parse_node(ctx, f.data, f.len, g->n_nodes, g->depth, g, &nodes[g->n_nodes])))
                return e;
            g->n_nodes++;
            break;
        case GP_INITIALIZER:
            if ((e = onnx_parse_tensor(ctx, f.data, f.len, &inits[g->n_initializers])))
                return ctosa_error_prefix(e, "initializer #%u", g->n_initializers);
            drop_pages(ctx, f.data, f.len);
            g->n_initializers++;
            break;
        case GP_SPARSE_INITIALIZER:
            if ((e = onnx_parse_sparse_tensor(ctx, f.data, f.len, &sparse[g->n_sparse_initializers])))
                return ctosa_error_prefix(e, "sparse initializer #%u", g->n_sparse_initializers);
            g->n_sparse_initializers++;
            break;
        case GP_INPUT:
            if ((e = parse_value_info(ctx, &f, &ins[g->n_inputs])))
                return ctosa_error_prefix(e, "graph input #%u", g->n_inputs);
            g->n_inputs++;
            break;
        case GP_OUTPUT:
            if ((e = parse_value_info(ctx, &f, &outs[g->n_outputs])))
                return ctosa_error_prefix(e, "graph output #%u", g->n_outputs);
            g->n_outputs++;
            break;
        case GP_VALUE_INFO:
            if ((e = parse_value_info(ctx, &f, &vis[g->n_value_infos])))
                return ctosa_error_prefix(e, "value_info #%u", g->n_value_infos);
            g->n_value_infos++;
            break;
        default: break;
        }
    }
    return e;
}

static ctosa_error *parse_graph(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint32_t depth,
                                const ctosa_onnx_graph *parent, const ctosa_onnx_graph **out) {
    if (depth > ctx->max_depth)
        return pb_error_code(&ctx->doc, CTOSA_ERR_LIMIT, p, "subgraphs nested deeper than %u",
                             ctx->max_depth);
    ctosa_onnx_graph *g = arena_zalloc(ctx->a, sizeof *g);
    if (!g) return ctosa_error_nomem();
    g->name = "";
    g->parent = parent;
    g->depth = depth;
    g->offset = pb_offset(&ctx->doc, p);
    *out = g;
    ctosa_error *e = parse_graph_body(ctx, p, n, g);
    if (e && depth > 0 && g->name[0]) e = ctosa_error_prefix(e, "graph '%.200s'", g->name);
    return e;
}

/* ------------------------------------------------------------- functions */

static ctosa_error *parse_function_body(onnx_ctx *ctx, const pb_field *ff, ctosa_onnx_function *fn) {
    pb_doc *d = &ctx->doc;
    static const uint32_t lens[] = {FP_INPUT,        FP_OUTPUT,          FP_ATTRIBUTE, FP_NODE,
                                    FP_OPSET_IMPORT, FP_ATTRIBUTE_PROTO, FP_VALUE_INFO};
    uint64_t cnt[16];
    ctosa_error *e = count_fields(ctx, ff->data, ff->len, cnt, 16, lens, CTOSA_ARRAY_LEN(lens));
    if (e) return e;
    if ((e = add_nodes(ctx, ff->data, cnt[FP_NODE]))) return e;
    for (int i = 0; i < 16; i++)
        if ((e = check_count(ctx, ff->data, cnt[i], "function entries"))) return e;
    const char **ins = NULL, **outs = NULL, **anames = NULL;
    ctosa_onnx_attr *adef = NULL;
    ctosa_onnx_node *nodes = NULL;
    ctosa_onnx_opset *ops = NULL;
    ctosa_onnx_value_info *vis = NULL;
    ALLOC_N(ctx, ins, cnt[FP_INPUT]);
    ALLOC_N(ctx, outs, cnt[FP_OUTPUT]);
    ALLOC_N(ctx, anames, cnt[FP_ATTRIBUTE]);
    ALLOC_N(ctx, adef, cnt[FP_ATTRIBUTE_PROTO]);
    ALLOC_N(ctx, nodes, cnt[FP_NODE]);
    ALLOC_N(ctx, ops, cnt[FP_OPSET_IMPORT]);
    ALLOC_N(ctx, vis, cnt[FP_VALUE_INFO]);
    fn->inputs = ins;
    fn->outputs = outs;
    fn->attr_names = anames;
    fn->attr_defaults = adef;
    fn->nodes = nodes;
    fn->opsets = ops;
    fn->value_infos = vis;
    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, d, ff->data, ff->len);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case FP_NAME:
            if ((e = onnx_str(ctx, &f, "name", &fn->name))) return e;
            break;
        case FP_DOMAIN:
            if ((e = onnx_str(ctx, &f, "domain", &fn->domain))) return e;
            break;
        case FP_OVERLOAD:
            if ((e = onnx_str(ctx, &f, "overload", &fn->overload))) return e;
            break;
        case FP_INPUT:
            if ((e = onnx_str(ctx, &f, "input", &ins[fn->n_inputs]))) return e;
            fn->n_inputs++;
            break;
        case FP_OUTPUT:
            if ((e = onnx_str(ctx, &f, "output", &outs[fn->n_outputs]))) return e;
            fn->n_outputs++;
            break;
        case FP_ATTRIBUTE:
            if ((e = onnx_str(ctx, &f, "attribute", &anames[fn->n_attr_names]))) return e;
            fn->n_attr_names++;
            break;
        case FP_ATTRIBUTE_PROTO:
            if ((e = parse_attr(ctx, &f, 1, NULL, &adef[fn->n_attr_defaults]))) return e;
            fn->n_attr_defaults++;
            break;
        case FP_NODE:
            if ((e = onnx_parse_node(ctx, f.data, f.len, fn->n_nodes, 1, NULL, &nodes[fn->n_nodes])))
                return e;
            fn->n_nodes++;
            break;
        case FP_OPSET_IMPORT:
            if ((e = parse_opset(ctx, &f, &ops[fn->n_opsets]))) return e;
            fn->n_opsets++;
            break;
        case FP_VALUE_INFO:
            if ((e = parse_value_info(ctx, &f, &vis[fn->n_value_infos]))) return e;
            fn->n_value_infos++;
            break;
        default: break;
        }
    }
    return e;
}

/* ----------------------------------------------------------------- model */

static ctosa_error *parse_model(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_model_info *info) {
    pb_doc *d = &ctx->doc;
    static const uint32_t lens[] = {MP_GRAPH, MP_OPSET_IMPORT, MP_METADATA, MP_FUNCTIONS};
    uint64_t cnt[32];
    ctosa_error *e = count_fields(ctx, p, n, cnt, 32, lens, CTOSA_ARRAY_LEN(lens));
    if (e) return e;
    for (int i = 0; i < 32; i++)
        if ((e = check_count(ctx, p, cnt[i], "model entries"))) return e;
    ctosa_onnx_opset *ops = NULL;
    ctosa_onnx_kv *meta = NULL;
    ctosa_onnx_function *fns = NULL;
    ALLOC_N(ctx, ops, cnt[MP_OPSET_IMPORT]);
    ALLOC_N(ctx, meta, cnt[MP_METADATA]);
    ALLOC_N(ctx, fns, cnt[MP_FUNCTIONS]);
    info->opsets = ops;
    info->metadata = meta;
    info->functions = fns;
    info->producer_name = info->producer_version = info->domain = "";
    pb_field graph = {0};
    bool has_graph = false;
    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case MP_IR_VERSION:
            if ((e = pb_expect(d, &f, PB_VARINT, "ir_version"))) return e;
            info->ir_version = (int64_t)f.u;
            break;
        case MP_MODEL_VERSION:
            if ((e = pb_expect(d, &f, PB_VARINT, "model_version"))) return e;
            info->model_version = (int64_t)f.u;
            break;
        case MP_PRODUCER_NAME:
            if ((e = onnx_str(ctx, &f, "producer_name", &info->producer_name))) return e;
            break;
        case MP_PRODUCER_VERSION:
            if ((e = onnx_str(ctx, &f, "producer_version", &info->producer_version))) return e;
            break;
        case MP_DOMAIN:
            if ((e = onnx_str(ctx, &f, "domain", &info->domain))) return e;
            break;
        case MP_OPSET_IMPORT:
            if ((e = parse_opset(ctx, &f, &ops[info->n_opsets])))
                return ctosa_error_prefix(e, "opset_import #%u", info->n_opsets);
            info->n_opsets++;
            break;
        case MP_METADATA:
            if ((e = parse_kv(ctx, &f, &meta[info->n_metadata])))
                return ctosa_error_prefix(e, "metadata_props #%u", info->n_metadata);
            info->n_metadata++;
            break;
        case MP_GRAPH:
            graph = f;
            has_graph = true;
            break;
        case MP_FUNCTIONS: {
            ctosa_onnx_function *fn = &fns[info->n_functions];
            fn->name = fn->domain = fn->overload = "";
            fn->offset = pb_offset(d, f.at);
            if ((e = parse_function_body(ctx, &f, fn)))
                return ctosa_error_prefix(e, "function #%u '%.200s'", info->n_functions, fn->name);
            info->n_functions++;
            break;
        }
        default: break;
        }
    }
    if (e) return e;
    if (!has_graph) return pb_error(d, p, "the model has no graph (not an ONNX ModelProto?)");
    return parse_graph(ctx, graph.data, graph.len, 0, NULL, &info->graph);
}

/* ------------------------------------------------------------ public API */

static ctosa_error *load_common(ctosa_onnx_model *m, const uint8_t *data, uint64_t size, const char *name,
                                const char *ext_dir, const ctosa_onnx_options *opt) {
    ctosa_onnx_options dflt = {0};
    if (!opt) opt = &dflt;
    const char *file = arena_strdup(&m->a, name);
    if (!file) return ctosa_error_nomem();
    m->info.path = file;
    m->info.file_size = size;
    onnx_ctx ctx = {.doc = {file, data, size, 0},
                    .a = &m->a,
                    .file = file,
                    .ext = &m->ext,
                    .max_depth = opt->max_graph_depth ? opt->max_graph_depth : 32,
                    .max_nodes = opt->max_nodes ? opt->max_nodes : (16u << 20),
                    .max_name = opt->max_name ? opt->max_name : (1u << 20)};
    if (ext_dir) {
        m->ext.dir = arena_strdup(&m->a, ext_dir);
        if (!m->ext.dir) return ctosa_error_nomem();
    }
    m->ext.skip = opt->skip_external_data;
    if (ctx.max_depth > 256) ctx.max_depth = 256; /* recursion: keep the C stack bounded */
    m->max_depth = ctx.max_depth;
    drop_base = m->map.mapped && data == m->map.data ? data : NULL;
    drop_size = size;
    ctosa_error *e = parse_model(&ctx, data, size, &m->info);
    drop_base = NULL;
    if (e) return pb_finish_error(&ctx.doc, e);
    m->info.total_nodes = ctx.total_nodes;
    m->info.n_external_files = m->ext.n_maps;
    return NULL;
}

static ctosa_onnx_model *model_new(void) {
    ctosa_onnx_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    arena_init(&m->a, 0);
    m->map.fd = -1;
    onnx_ext_init(&m->ext);
    pthread_mutex_init(&m->lock, NULL);
    return m;
}

ctosa_error *ctosa_onnx_load(const char *path, const ctosa_onnx_options *opt, ctosa_onnx_model **out) {
    *out = NULL;
    if (!path) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_onnx_load: no path");
    ctosa_onnx_model *m = model_new();
    if (!m) return ctosa_error_nomem();
    ctosa_error *e = file_map_open(path, &m->map);
    char *dir = NULL;
    if (!e && !(opt && opt->external_data_dir)) e = onnx_ext_dir_of(path, &dir);
    if (!e && opt && opt->external_data_dir) {
        dir = realpath(opt->external_data_dir, NULL);
        if (!dir)
            e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot resolve the external data folder",
                                opt->external_data_dir);
    }
    if (!e) e = load_common(m, m->map.data, m->map.size, path, dir, opt);
    free(dir);
    if (e) {
        ctosa_onnx_free(m);
        return e;
    }
    *out = m;
    return NULL;
}

ctosa_error *ctosa_onnx_load_memory(const void *data, uint64_t size, const char *name,
                                    const ctosa_onnx_options *opt, ctosa_onnx_model **out) {
    *out = NULL;
    if (!data && size) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_onnx_load_memory: no data");
    ctosa_onnx_model *m = model_new();
    if (!m) return ctosa_error_nomem();
    char *dir = NULL;
    ctosa_error *e = NULL;
    if (opt && opt->external_data_dir) {
        dir = realpath(opt->external_data_dir, NULL);
        if (!dir)
            e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot resolve the external data folder",
                                opt->external_data_dir);
    }
    if (!e) e = load_common(m, data ? data : (const void *)"", size, name ? name : "<memory>", dir, opt);
    free(dir);
    if (e) {
        ctosa_onnx_free(m);
        return e;
    }
    *out = m;
    return NULL;
}

void ctosa_onnx_free(ctosa_onnx_model *m) {
    if (!m) return;
    onnx_ext_free(&m->ext);
    file_map_close(&m->map);
    arena_free(&m->a);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

const ctosa_onnx_model_info *ctosa_onnx_info(const ctosa_onnx_model *m) { return &m->info; }

static bool is_default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

int64_t ctosa_onnx_opset_version(const ctosa_onnx_model *m, const char *domain) {
    bool dflt = is_default_domain(domain);
    for (uint32_t i = 0; i < m->info.n_opsets; i++) {
        const char *d = m->info.opsets[i].domain;
        if (dflt ? is_default_domain(d) : !strcmp(d, domain)) return m->info.opsets[i].version;
    }
    return -1;
}

const ctosa_onnx_attr *ctosa_onnx_node_attr(const ctosa_onnx_node *n, const char *name) {
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

const ctosa_onnx_function *ctosa_onnx_find_function(const ctosa_onnx_model *m, const char *domain,
                                                    const char *name, const char *overload) {
    if (!overload) overload = "";
    for (uint32_t i = 0; i < m->info.n_functions; i++) {
        const ctosa_onnx_function *f = &m->info.functions[i];
        if (!strcmp(f->name, name) && !strcmp(f->domain, domain ? domain : "") &&
            !strcmp(f->overload, overload))
            return f;
    }
    return NULL;
}

const char *ctosa_onnx_attr_type_name(ctosa_onnx_attr_type t) {
    static const char *const names[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",
                                        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
                                        "STRINGS",        "TENSORS",    "GRAPHS",     "SPARSE_TENSOR",
                                        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return (unsigned)t < CTOSA_ARRAY_LEN(names) ? names[t] : "?";
}

ctosa_error *ctosa_onnx_tensor_data(ctosa_onnx_model *m, const ctosa_onnx_tensor *t, const void **data,
                                    uint64_t *nbytes) {
    onnx_tensor_value v;
    ctosa_error *e = NULL;
    pthread_mutex_lock(&m->lock);
    if (t->decoded_) {
        v.data = t->decoded_;
        v.nbytes = t->decoded_len_;
    } else if (!(e = onnx_tensor_value_of(t, &m->a, &v)) && t->storage == CTOSA_ONNX_DATA_TYPED) {
        /* Every tensor of a model lives in its arena: caching the decoded
         * copy in it is the model's own (mutex-guarded) business. */
        ctosa_onnx_tensor *mt = (ctosa_onnx_tensor *)t;
        mt->decoded_ = v.data;
        mt->decoded_len_ = v.nbytes;
    }
    pthread_mutex_unlock(&m->lock);
    if (e) return e;
    *data = v.data;
    *nbytes = v.nbytes;
    return NULL;
}
