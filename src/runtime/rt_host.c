/* rt_host.c - the host executor's lowering: a CPU node of a partitioned
 * model becomes a one-node ONNX model (its non-constant inputs as typed
 * graph inputs, its constant inputs as initializers, its outputs as graph
 * outputs), which ctosa_lower_file() lowers under the widest spec. The
 * node then runs as that TOSA graph on the interpreter. Whether a node can
 * run is therefore decided by the same lowering and validator as
 * delegation, never by a list kept here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/pb.h"
#include "runtime/rt_internal.h"

void rt_widest_spec(ctosa_spec *s) {
    memset(s, 0, sizeof *s);
    s->version = CTOSA_VERSION_1_1_DRAFT;
    s->profiles = CTOSA_PRO_INT | CTOSA_PRO_FP;
    s->extensions = (1ull << CTOSA_EXT_COUNT) - 1;
    s->level = CTOSA_LEVEL_NONE;
}

/* ---- numpy / ONNX / TOSA dtype correspondences */

static const struct {
    const char *numpy;
    int32_t onnx;
    ctosa_dtype carrier;
} DTYPES[] = {
    {"float32", 1, CTOSA_DTYPE_FP32},    {"uint8", 2, CTOSA_DTYPE_INT8},
    {"int8", 3, CTOSA_DTYPE_INT8},       {"uint16", 4, CTOSA_DTYPE_UNKNOWN},
    {"int16", 5, CTOSA_DTYPE_INT16},     {"int32", 6, CTOSA_DTYPE_INT32},
    {"int64", 7, CTOSA_DTYPE_INT64},     {"bool", 9, CTOSA_DTYPE_BOOL},
    {"float16", 10, CTOSA_DTYPE_FP16},   {"float64", 11, CTOSA_DTYPE_UNKNOWN},
    {"uint32", 12, CTOSA_DTYPE_UNKNOWN}, {"uint64", 13, CTOSA_DTYPE_UNKNOWN},
    {"bfloat16", 16, CTOSA_DTYPE_BF16},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

int32_t rt_onnx_dtype_of(const char *numpy) {
    for (size_t i = 0; numpy && i < N_DTYPES; i++)
        if (strcmp(DTYPES[i].numpy, numpy) == 0) return DTYPES[i].onnx;
    return 0;
}
const char *rt_numpy_name(int32_t onnx) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].onnx == onnx) return DTYPES[i].numpy;
    return NULL;
}
ctosa_dtype rt_carrier_of(int32_t onnx) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].onnx == onnx) return DTYPES[i].carrier;
    return CTOSA_DTYPE_UNKNOWN;
}
int32_t rt_onnx_of_carrier(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_FP32: return 1;
    case CTOSA_DTYPE_INT8: return 3;
    case CTOSA_DTYPE_INT16: return 5;
    case CTOSA_DTYPE_INT32: return 6;
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return 7;
    case CTOSA_DTYPE_BOOL: return 9;
    case CTOSA_DTYPE_FP16: return 10;
    case CTOSA_DTYPE_BF16: return 16;
    default: return 0;
    }
}

/* ---- protobuf encoding (field numbers of onnx.proto3) */

static void put_varint(strbuf *b, uint64_t v) {
    char t[10];
    size_t n = 0;
    do {
        t[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    sb_putn(b, t, n);
}
static void put_tag(strbuf *b, uint32_t field, int wire) {
    put_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}
static void put_bytes(strbuf *b, uint32_t field, const void *p, size_t n) {
    put_tag(b, field, PB_LEN);
    put_varint(b, n);
    sb_putn(b, (const char *)p, n);
}
static void put_str(strbuf *b, uint32_t field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static void put_int(strbuf *b, uint32_t field, uint64_t v) {
    put_tag(b, field, PB_VARINT);
    put_varint(b, v);
}
static void put_msg(strbuf *b, uint32_t field, strbuf *m) {
    if (m->failed) b->failed = true;
    put_bytes(b, field, m->s ? m->s : "", m->len);
    sb_free(m);
}

/* ValueInfoProto with a tensor type (shape omitted when t is NULL). */
static void put_value_info(strbuf *g, uint32_t field, const char *name, const rt_vtype *t) {
    strbuf vi, tp, tt, sh;
    sb_init(&vi);
    put_str(&vi, 1, name);
    if (t) {
        sb_init(&tp);
        sb_init(&tt);
        sb_init(&sh);
        put_int(&tt, 1, (uint64_t)t->onnx_dtype);
        for (uint32_t i = 0; i < t->rank; i++) {
            strbuf d;
            sb_init(&d);
            put_int(&d, 1, (uint64_t)t->shape[i]);
            put_msg(&sh, 1, &d);
        }
        put_msg(&tt, 2, &sh);
        put_msg(&tp, 1, &tt);
        put_msg(&vi, 2, &tp);
    }
    put_msg(g, field, &vi);
}

/* NodeProto: names as the model view gives them; each attribute's bytes
 * copied from the file (renamed to the name the view gives, without
 * ref_attr_name: for inlined function bodies the inliner resolved it). */
static ctosa_error *put_node(const rt_host_src *src, strbuf *g, const ctosa_onnx_node *n) {
    strbuf nd;
    sb_init(&nd);
    for (uint32_t i = 0; i < n->n_inputs; i++) put_str(&nd, 1, n->inputs[i]);
    for (uint32_t i = 0; i < n->n_outputs; i++) put_str(&nd, 2, n->outputs[i]);
    if (n->name[0]) put_str(&nd, 3, n->name);
    put_str(&nd, 4, n->op_type);
    pb_doc d = {.name = src->path, .base = src->base, .size = src->size};
    for (uint32_t k = 0; k < n->n_attrs; k++) {
        const ctosa_onnx_attr *at = &n->attrs[k];
        pb_cursor c;
        pb_field f;
        bool more = false;
        ctosa_error *e = NULL;
        if (at->offset >= src->size)
            e = ctosa_error_new(CTOSA_ERR_INTERNAL, "%s: attribute '%s' is not in the file", src->path,
                                at->name);
        if (!e) {
            pb_cursor_init(&c, &d, src->base + at->offset, src->size - at->offset);
            e = pb_next(&c, &f, &more);
        }
        if (!e && (!more || f.wire != PB_LEN))
            e = ctosa_error_new(CTOSA_ERR_FORMAT, "%s: byte %llu: attribute '%s': no AttributeProto here",
                                src->path, (unsigned long long)at->offset, at->name);
        strbuf ab;
        sb_init(&ab);
        if (!e) {
            put_str(&ab, 1, at->name);
            pb_cursor ac;
            pb_field af;
            bool amore;
            pb_cursor_init(&ac, &d, f.data, f.len);
            while (!(e = pb_next(&ac, &af, &amore)) && amore)
                if (af.num != 1 && af.num != 21) sb_putn(&ab, (const char *)af.at, (size_t)(ac.p - af.at));
        }
        if (e) {
            sb_free(&ab);
            sb_free(&nd);
            return e;
        }
        put_msg(&nd, 5, &ab);
    }
    if (n->domain[0]) put_str(&nd, 7, n->domain);
    if (n->overload && n->overload[0]) put_str(&nd, 8, n->overload);
    put_msg(g, 1, &nd);
    return NULL;
}

static const ctosa_onnx_tensor *find_init(const ctosa_onnx_graph *g, const char *name) {
    for (uint32_t i = 0; i < g->n_initializers; i++)
        if (strcmp(g->initializers[i].name, name) == 0) return &g->initializers[i];
    return NULL;
}

/* TensorProto with raw_data. */
static ctosa_error *put_initializer(const rt_host_src *src, strbuf *g, const ctosa_onnx_tensor *t) {
    const void *data;
    uint64_t nbytes, need;
    if (!ctosa_onnx_dtype_storage(t->dtype, t->count, &need))
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "initializer '%s' of type %s cannot be passed on",
                               t->name,
                               ctosa_onnx_dtype_name(t->dtype) ? ctosa_onnx_dtype_name(t->dtype) : "?");
    ctosa_error *e = ctosa_onnx_tensor_data(src->m, t, &data, &nbytes);
    if (e) return e;
    if (nbytes != need)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: initializer '%s' holds %llu bytes, its shape needs %llu", src->path,
                               t->name, (unsigned long long)nbytes, (unsigned long long)need);
    strbuf tp;
    sb_init(&tp);
    for (uint32_t i = 0; i < t->rank; i++) put_int(&tp, 1, (uint64_t)t->dims[i]);
    put_int(&tp, 2, (uint64_t)t->dtype);
    put_str(&tp, 8, t->name);
    put_bytes(&tp, 9, data, (size_t)nbytes);
    put_msg(g, 5, &tp);
    return NULL;
}

/* The ModelProto of node n alone. */
static ctosa_error *node_model(const rt_host_src *src, const ctosa_onnx_node *n, const char *label,
                               strbuf *out, bool *later) {
    const ctosa_onnx_model_info *info = ctosa_onnx_info(src->m);
    strbuf g;
    sb_init(&g);
    ctosa_error *e = put_node(src, &g, n);
    put_str(&g, 2, "ctosa_host_node");
    for (uint32_t k = 0; k < n->n_inputs && !e; k++) {
        const char *nm = n->inputs[k];
        bool dup = false;
        for (uint32_t j = 0; j < k && !dup; j++) dup = strcmp(n->inputs[j], nm) == 0;
        if (!nm[0] || dup) continue;
        const ctosa_onnx_tensor *t = find_init(src->g, nm);
        if (t) {
            e = put_initializer(src, &g, t);
            continue;
        }
        rt_vtype vt;
        if (!src->type_of(src->ctx, nm, &vt)) {
            *later = true; /* a value whose shape only a run tells */
            e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                "node '%s' (%s): the type and shape of input '%s' are not "
                                "known (not in the report)",
                                label, n->op_type, nm);
            break;
        }
        if (vt.data) { /* known at load: an initializer */
            strbuf tp;
            sb_init(&tp);
            for (uint32_t i = 0; i < vt.rank; i++) put_int(&tp, 1, (uint64_t)vt.shape[i]);
            put_int(&tp, 2, (uint64_t)vt.onnx_dtype);
            put_str(&tp, 8, nm);
            put_bytes(&tp, 9, vt.data, (size_t)vt.nbytes);
            put_msg(&g, 5, &tp);
            continue;
        }
        put_value_info(&g, 11, nm, &vt);
    }
    for (uint32_t k = 0; k < n->n_outputs && !e; k++) {
        if (!n->outputs[k][0]) continue;
        rt_vtype vt;
        put_value_info(&g, 12, n->outputs[k], src->type_of(src->ctx, n->outputs[k], &vt) ? &vt : NULL);
    }
    if (e) {
        sb_free(&g);
        return e;
    }
    sb_init(out);
    put_int(out, 1, (uint64_t)(info->ir_version > 0 ? info->ir_version : 8));
    put_str(out, 2, "ctosa-runtime");
    put_msg(out, 7, &g);
    for (uint32_t i = 0; i < info->n_opsets; i++) {
        strbuf os;
        sb_init(&os);
        if (info->opsets[i].domain[0]) put_str(&os, 1, info->opsets[i].domain);
        put_int(&os, 2, (uint64_t)info->opsets[i].version);
        put_msg(out, 8, &os);
    }
    if (out->failed) {
        sb_free(out);
        return ctosa_error_nomem();
    }
    return NULL;
}

ctosa_error *rt_host_lower(const rt_host_src *src, const ctosa_onnx_node *n, const char *label,
                           ctosa_lower_result **out, bool *folded, bool *later) {
    *out = NULL;
    *folded = false;
    *later = false;
    strbuf mb;
    ctosa_error *e = node_model(src, n, label, &mb, later);
    if (e) return e;
    ctosa_spec spec;
    rt_widest_spec(&spec);
    ctosa_lower_options lo;
    ctosa_lower_options_init(&lo);
    lo.custom_ops = src->custom_ops;
    lo.max_problems = 4;
    lo.stem = "host";
    lo.keep_data_movement = true; /* a Reshape alone is still a graph to run */
    ctosa_lower_result *r = NULL;
    /* lowered from memory: no temporary file, nothing to clean up */
    e = ctosa_lower_memory(mb.s, mb.len, label, &spec, &lo, &r);
    sb_free(&mb);
    if (e) return ctosa_error_prefix(e, "node '%s' (%s) on the host", label, n->op_type);
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    /* Outputs computed at compile time are folded: the node "falls back"
     * because a graph output has no operator producing it. */
    bool all_folded =
        s->n_fallback == 1 && s->n_partitions == 0 && strcmp(s->fallback[0].code, "cpu_consumer") == 0;
    for (uint32_t k = 0; all_folded && k < n->n_outputs; k++) {
        ctosa_lower_constant c;
        all_folded = !n->outputs[k][0] || ctosa_lower_result_constant(r, n->outputs[k], &c);
    }
    if (all_folded) {
        *folded = true;
        *out = r;
        return NULL;
    } else if (s->n_fallback) {
        const ctosa_lower_fallback *f = &s->fallback[0];
        *later = f->needs_values;
        e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "node '%s' (%s) cannot run on the host executor: %s: %s",
                            label, n->op_type, f->code, f->reason);
    } else if (s->n_partitions != 1) {
        e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                            "node '%s' (%s) cannot run on the host executor: its lowering "
                            "gave %u graphs",
                            label, n->op_type, s->n_partitions);
    }
    if (e) {
        ctosa_lower_result_free(r);
        return e;
    }
    *out = r;
    return NULL;
}
