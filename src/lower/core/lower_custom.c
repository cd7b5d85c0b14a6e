/* lower_custom.c - lowering of nodes matched by a custom-operator
 * registration (ctosa/custom.h): the node is delegated whole as ONE TOSA
 * CUSTOM operator after its validate and infer callbacks ran. Also the
 * default implementation_attrs encoding: the node's ONNX attributes as
 * canonical JSON (keys sorted bytewise, no whitespace, integers as
 * integers, floats in their shortest float32 round-trip form with a '.',
 * strings UTF-8 with minimal escapes), which is byte-identical across runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/custom.h"
#include "lower/lower_internal.h"

static bool std_domain(const char *d) { return !d[0] || strcmp(d, "ai.onnx") == 0; }

static int64_t node_opset(lower_session *s, const ctosa_onnx_node *n) {
    return std_domain(n->domain) ? s->opset : ctosa_onnx_opset_version(s->m, n->domain);
}

static const ctosa_custom_op *match(lower_session *s, uint32_t ni) {
    if (!s->custom) return NULL;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    return ctosa_custom_registry_find(s->custom, n->domain, n->op_type, node_opset(s, n));
}

/* ------------------------------------------------------ canonical JSON */

static bool valid_utf8(const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n;) {
        uint8_t c = p[i];
        uint32_t len, cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
        else return false;
        if (n - i < len) return false;
        for (uint32_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

static void put_hex(strbuf *b, const uint8_t *p, uint64_t n) {
    static const char hx[] = "0123456789abcdef";
    for (uint64_t i = 0; i < n; i++) {
        sb_putc(b, hx[p[i] >> 4]);
        sb_putc(b, hx[p[i] & 15]);
    }
}

/* A byte string: a JSON string when it is UTF-8 (escaping only '"', '\\'
 * and control characters), else {"hex":"..."}. */
static void put_bytes_str(strbuf *b, const uint8_t *p, uint64_t n) {
    if (!valid_utf8(p, n)) {
        sb_puts(b, "{\"hex\":\"");
        put_hex(b, p, n);
        sb_puts(b, "\"}");
        return;
    }
    sb_putc(b, '"');
    for (uint64_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        switch (c) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\r': sb_puts(b, "\\r"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\b': sb_puts(b, "\\b"); break;
        case '\f': sb_puts(b, "\\f"); break;
        default:
            if (c < 0x20) sb_printf(b, "\\u%04x", c);
            else sb_putc(b, (char)c);
        }
    }
    sb_putc(b, '"');
}

/* Shortest decimal form that reads back as the same float32, always with a
 * '.' or an exponent so that it stays distinguishable from an integer. */
static void put_f32(strbuf *b, float f) {
    if (isnan(f)) {
        sb_puts(b, "\"NaN\"");
        return;
    }
    if (isinf(f)) {
        sb_puts(b, f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    char tmp[48];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
        if (strtof(tmp, NULL) == f) break;
    }
    sb_puts(b, tmp);
    if (!strpbrk(tmp, ".e")) sb_puts(b, ".0");
}

static void put_f64(strbuf *b, double d) {
    if (isnan(d)) {
        sb_puts(b, "\"NaN\"");
        return;
    }
    if (isinf(d)) {
        sb_puts(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    sb_puts(b, tmp);
    if (!strpbrk(tmp, ".e")) sb_puts(b, ".0");
}

/* A TENSOR attribute: {"dims":[..],"dtype":"float32","values":[..]} for
 * numeric types, "raw_hex" for the others. */
static bool put_tensor(lower_ctx *c, strbuf *b, const ctosa_onnx_tensor *t) {
    const void *data = NULL;
    uint64_t nbytes = 0;
    ctosa_error *e = ctosa_onnx_tensor_data(c->s->m, t, &data, &nbytes);
    if (e) {
        ctosa_error_free(e);
        return false;
    }
    const char *dn = onnx_dtype_numpy_name(t->dtype);
    sb_puts(b, "{\"dims\":[");
    for (uint32_t i = 0; i < t->rank; i++) sb_printf(b, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    sb_puts(b, "],\"dtype\":");
    put_bytes_str(b, (const uint8_t *)(dn ? dn : "unknown"), strlen(dn ? dn : "unknown"));
    const uint8_t *p = data;
    uint32_t w = 0;
    switch (t->dtype) {
    case CTOSA_ONNX_FLOAT:
    case CTOSA_ONNX_INT32:
    case CTOSA_ONNX_UINT32: w = 4; break;
    case CTOSA_ONNX_DOUBLE:
    case CTOSA_ONNX_INT64:
    case CTOSA_ONNX_UINT64: w = 8; break;
    case CTOSA_ONNX_INT16:
    case CTOSA_ONNX_UINT16: w = 2; break;
    case CTOSA_ONNX_INT8:
    case CTOSA_ONNX_UINT8:
    case CTOSA_ONNX_BOOL: w = 1; break;
    default: break;
    }
    if (!w || nbytes != t->count * w) {
        sb_puts(b, ",\"raw_hex\":\"");
        put_hex(b, p, nbytes);
        sb_puts(b, "\"}");
        return true;
    }
    sb_puts(b, ",\"values\":[");
    for (uint64_t i = 0; i < t->count; i++) {
        const uint8_t *q = p + i * w;
        if (i) sb_putc(b, ',');
        switch (t->dtype) {
        case CTOSA_ONNX_FLOAT: {
            float f;
            uint32_t u = rd_u32(q);
            memcpy(&f, &u, 4);
            put_f32(b, f);
            break;
        }
        case CTOSA_ONNX_DOUBLE: {
            double d;
            uint64_t u = rd_u64(q);
            memcpy(&d, &u, 8);
            put_f64(b, d);
            break;
        }
        case CTOSA_ONNX_INT8: sb_printf(b, "%d", (int)(int8_t)q[0]); break;
        case CTOSA_ONNX_UINT8:
        case CTOSA_ONNX_BOOL: sb_printf(b, "%u", q[0]); break;
        case CTOSA_ONNX_INT16: sb_printf(b, "%d", (int)(int16_t)rd_u16(q)); break;
        case CTOSA_ONNX_UINT16: sb_printf(b, "%u", rd_u16(q)); break;
        case CTOSA_ONNX_INT32: sb_printf(b, "%d", (int32_t)rd_u32(q)); break;
        case CTOSA_ONNX_UINT32: sb_printf(b, "%u", rd_u32(q)); break;
        case CTOSA_ONNX_INT64: sb_printf(b, "%lld", (long long)(int64_t)rd_u64(q)); break;
        default: sb_printf(b, "%llu", (unsigned long long)rd_u64(q)); break;
        }
    }
    sb_puts(b, "]}");
    return true;
}

static int cmp_attr(const void *a, const void *b) {
    const ctosa_onnx_attr *x = *(const ctosa_onnx_attr *const *)a, *y = *(const ctosa_onnx_attr *const *)b;
    return strcmp(x->name, y->name);
}

/* The default implementation_attrs. Returns false (reason in *why) for
 * attribute kinds that have no JSON form (graphs, sparse tensors, types). */
static bool canonical_attrs(lower_ctx *c, const ctosa_onnx_node *n, strbuf *b, const char **why) {
    const ctosa_onnx_attr **v = arena_alloc(lw_arena(c), (n->n_attrs + 1) * sizeof *v);
    if (!v) return *why = "out of memory", false;
    for (uint32_t i = 0; i < n->n_attrs; i++) v[i] = &n->attrs[i];
    qsort(v, n->n_attrs, sizeof *v, cmp_attr);
    sb_putc(b, '{');
    for (uint32_t i = 0; i < n->n_attrs; i++) {
        const ctosa_onnx_attr *a = v[i];
        if (i && strcmp(v[i - 1]->name, a->name) == 0)
            return *why = arena_printf(lw_arena(c), "attribute '%s' appears twice", a->name), false;
        if (i) sb_putc(b, ',');
        put_bytes_str(b, (const uint8_t *)a->name, strlen(a->name));
        sb_putc(b, ':');
        switch (a->type) {
        case CTOSA_ONNX_ATTR_FLOAT: put_f32(b, a->f); break;
        case CTOSA_ONNX_ATTR_INT: sb_printf(b, "%lld", (long long)a->i); break;
        case CTOSA_ONNX_ATTR_STRING: put_bytes_str(b, a->s.p, a->s.n); break;
        case CTOSA_ONNX_ATTR_FLOATS:
            sb_putc(b, '[');
            for (uint32_t k = 0; k < a->count; k++) {
                if (k) sb_putc(b, ',');
                put_f32(b, a->floats[k]);
            }
            sb_putc(b, ']');
            break;
        case CTOSA_ONNX_ATTR_INTS:
            sb_putc(b, '[');
            for (uint32_t k = 0; k < a->count; k++)
                sb_printf(b, "%s%lld", k ? "," : "", (long long)a->ints[k]);
            sb_putc(b, ']');
            break;
        case CTOSA_ONNX_ATTR_STRINGS:
            sb_putc(b, '[');
            for (uint32_t k = 0; k < a->count; k++) {
                if (k) sb_putc(b, ',');
                put_bytes_str(b, a->strings[k].p, a->strings[k].n);
            }
            sb_putc(b, ']');
            break;
        case CTOSA_ONNX_ATTR_TENSOR:
            if (!a->t || !put_tensor(c, b, a->t))
                return *why = arena_printf(lw_arena(c), "tensor attribute '%s' cannot be read", a->name),
                       false;
            break;
        case CTOSA_ONNX_ATTR_TENSORS:
            sb_putc(b, '[');
            for (uint32_t k = 0; k < a->count; k++) {
                if (k) sb_putc(b, ',');
                if (!put_tensor(c, b, &a->tensors[k]))
                    return *why = arena_printf(lw_arena(c), "tensor attribute '%s' cannot be read", a->name),
                           false;
            }
            sb_putc(b, ']');
            break;
        default:
            return *why = arena_printf(lw_arena(c),
                                       "attribute '%s' of type %s has no JSON form for "
                                       "implementation_attrs (register an encode_attrs callback)",
                                       a->name, ctosa_onnx_attr_type_name(a->type)),
                   false;
        }
    }
    sb_putc(b, '}');
    return true;
}

/* ------------------------------------------------------------ lowering */

static lower_status reject_err(lower_ctx *c, lower_code code, const ctosa_custom_op *op, const char *what,
                               ctosa_error *e) {
    lower_status st = lw_reject(c, code, NULL, "custom operator %s::%s: %s: %s",
                                op->onnx_domain[0] ? op->onnx_domain : "ai.onnx", op->onnx_op_type, what,
                                e ? ctosa_error_message(e) : "refused");
    ctosa_error_free(e);
    return st;
}

static bool dtype_allowed(const ctosa_custom_op *op, ctosa_dtype t) {
    if (!op->n_dtypes) return true;
    for (uint32_t i = 0; i < op->n_dtypes; i++)
        if (op->dtypes[i] == t) return true;
    return false;
}

static lower_status lower_custom(lower_ctx *c) {
    lower_session *s = c->s;
    const ctosa_onnx_node *n = lw_node(c);
    const ctosa_custom_op *op = match(s, c->node_index);
    if (!op) return lw_reject(c, LOWER_INTERNAL, NULL, "custom registration vanished");
    ctosa_custom_node view = {c->label, n->domain, n->op_type, node_opset(s, n), n->n_attrs, n->attrs, n};
    if (op->validate) {
        ctosa_error *e = op->validate(op->user, &view);
        if (e) return reject_err(c, LOWER_CUSTOM_REJECTED, op, "attributes refused", e);
    }
    uint32_t ni = n->n_inputs, no = n->n_outputs;
    ctosa_custom_tensor *in = arena_zalloc(lw_arena(c), (ni + 1) * sizeof *in);
    ctosa_custom_tensor *out = arena_zalloc(lw_arena(c), (no + 1) * sizeof *out);
    const char **in_names = arena_zalloc(lw_arena(c), (ni + 1) * sizeof *in_names);
    const char **out_names = arena_zalloc(lw_arena(c), (no + 1) * sizeof *out_names);
    if (!in || !out || !in_names || !out_names) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
    for (uint32_t i = 0; i < ni; i++) {
        if (!lw_has_input(c, i)) continue;
        const lower_value *v = lw_in(c, i);
        if (!v)
            return lw_reject(c, LOWER_INPUT_FALLBACK, n->inputs[i], "input '%s' is not known", n->inputs[i]);
        if (v->rank > CTOSA_CUSTOM_MAX_RANK)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[i],
                             "input '%s' has rank %u (custom operators "
                             "take at most %d)",
                             n->inputs[i], v->rank, CTOSA_CUSTOM_MAX_RANK);
        in[i].present = true;
        in[i].dtype = v->t;
        in[i].onnx_dtype = v->onnx_dtype;
        in[i].rank = v->rank;
        for (uint32_t k = 0; k < v->rank; k++) in[i].shape[k] = v->shape[k];
        in[i].data = v->data;
        in[i].nbytes = v->data ? v->nbytes : 0;
    }
    ctosa_error *e = op->infer(op->user, &view, in, ni, out, no);
    if (e) return reject_err(c, LOWER_CUSTOM_REJECTED, op, "shape inference refused the node", e);
    for (uint32_t k = 0; k < no; k++) {
        const ctosa_custom_tensor *o = &out[k];
        if (o->dtype <= CTOSA_DTYPE_UNKNOWN || o->dtype >= CTOSA_DTYPE_COUNT || !ctosa_dtype_name(o->dtype))
            return lw_reject(c, LOWER_CUSTOM_REJECTED, NULL,
                             "custom operator %s: shape inference gave output %u "
                             "no valid dtype (%d)",
                             n->op_type, k, (int)o->dtype);
        if (o->rank > CTOSA_CUSTOM_MAX_RANK)
            return lw_reject(c, LOWER_CUSTOM_REJECTED, NULL,
                             "custom operator %s: shape inference gave output %u "
                             "rank %u",
                             n->op_type, k, o->rank);
        for (uint32_t d = 0; d < o->rank; d++)
            if (o->shape[d] < 0 || o->shape[d] > INT32_MAX)
                return lw_reject(c, LOWER_CUSTOM_REJECTED, NULL,
                                 "custom operator %s: shape inference gave output "
                                 "%u dimension %u = %lld",
                                 n->op_type, k, d, (long long)o->shape[d]);
    }
    for (uint32_t i = 0; i < ni + no; i++) {
        const ctosa_custom_tensor *t = i < ni ? &in[i] : &out[i - ni];
        if ((i < ni && !t->present) || dtype_allowed(op, t->dtype)) continue;
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, i < ni ? n->inputs[i] : NULL,
                         "custom operator %s: %s %u is %s, which its registration does not support",
                         n->op_type, i < ni ? "input" : "output", i < ni ? i : i - ni,
                         ctosa_dtype_short(t->dtype));
    }
    /* implementation_attrs */
    uint8_t *attrs = NULL;
    size_t attrs_len = 0;
    if (op->encode_attrs) {
        size_t need = 0;
        if ((e = op->encode_attrs(op->user, &view, NULL, 0, &need)))
            return reject_err(c, LOWER_UNSUPPORTED_ATTR, op, "encode_attrs", e);
        if (need > UINT32_MAX)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "implementation_attrs too large");
        attrs = arena_alloc(lw_arena(c), need + 1);
        if (!attrs) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
        size_t got = 0;
        if ((e = op->encode_attrs(op->user, &view, attrs, need, &got)))
            return reject_err(c, LOWER_UNSUPPORTED_ATTR, op, "encode_attrs", e);
        if (got != need)
            return lw_reject(c, LOWER_INTERNAL, NULL,
                             "custom operator %s: encode_attrs gave %zu bytes, then %zu", n->op_type, need,
                             got);
        attrs_len = need;
    } else {
        strbuf b;
        sb_init(&b);
        const char *why = NULL;
        bool ok = canonical_attrs(c, n, &b, &why);
        if (ok && (b.failed || b.len > UINT32_MAX)) ok = false, why = "out of memory";
        if (ok) {
            attrs_len = b.len;
            attrs = arena_memdup(lw_arena(c), b.s ? b.s : "", b.len + 1);
        }
        sb_free(&b);
        if (!ok) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "custom operator %s: %s", n->op_type, why);
        if (!attrs) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
    }
    /* Emit: present inputs in order, every output (unused ones too: the
     * operator's output_list is fixed by its definition). */
    uint32_t n_in = 0;
    for (uint32_t i = 0; i < ni; i++) {
        if (!in[i].present) continue;
        const char *nm = lw_input(c, i);
        if (!nm || c->rejected)
            return c->rejected ? LOWER_REJECT : lw_reject(c, LOWER_INTERNAL, NULL, "input %u", i);
        in_names[n_in++] = nm;
    }
    for (uint32_t k = 0; k < no; k++) {
        out_names[k] = lw_tensor(c, out[k].dtype, out[k].rank, out[k].shape);
        if (!out_names[k]) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
    }
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.domain_name = op->tosa_domain;
    at.operator_name = op->tosa_operator;
    at.implementation_attrs.p = attrs;
    at.implementation_attrs.n = (uint32_t)attrs_len;
    if (!lw_op(c, CTOSA_OP_CUSTOM, n_in, in_names, no, out_names, &at))
        return c->rejected ? LOWER_REJECT
                           : lw_reject(c, LOWER_INTERNAL, NULL, "cannot add the CUSTOM operator");
    for (uint32_t k = 0; k < no; k++)
        if (n->outputs[k][0]) lw_set_output(c, k, out_names[k]);
    return LOWER_OK;
}

static const lower_entry custom_entry = {"<custom>", 0, 0, lower_custom};

const lower_entry *lw_custom_find(lower_session *s, uint32_t ni) {
    return match(s, ni) ? &custom_entry : NULL;
}

bool lw_custom_describe(lower_session *s, uint32_t ni, const char **domain_name, const char **operator_name,
                        bool *overrides_builtin) {
    const ctosa_custom_op *op = match(s, ni);
    if (!op) return false;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    *domain_name = op->tosa_domain;
    *operator_name = op->tosa_operator;
    *overrides_builtin = std_domain(n->domain) && lower_find(n->domain, n->op_type, s->opset) != NULL;
    return true;
}
