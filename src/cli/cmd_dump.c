/* cmd_dump.c - `ctosa dump MODEL.tosa [--format json|text|dot|mlir]`: prints a graph.
 *
 * The JSON form is the stable, machine-readable one (documented in
 * docs/cli.md): every region, block, operator (with all attributes of its
 * table), tensor and shape, in file order. Constant data is summarised: byte
 * count, element count and the first DUMP_VALUES values decoded per dtype
 * ("truncated" says whether there are more). The dot form is a Graphviz
 * digraph: one cluster per region and block, operators as nodes, tensors as
 * edges, constant operands counted in the operator's label. The mlir form
 * is the upstream MLIR `tosa` dialect (ctosa/mlir.h, docs/mlir.md),
 * streamed; --input NAME=FILE adds @ctosa_run calling @main on those values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util/floatfmt.h"
#include "util/util.h"

#define DUMP_VALUES 16

/* ---------------------------------------------------------- value decode */

/* Whether dump can decode elements of t. */
static bool decodable(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_FP6E2M3:
    case CTOSA_DTYPE_FP6E3M2:
    case CTOSA_DTYPE_FP4E2M1:
    case CTOSA_DTYPE_MXINT8:
    case CTOSA_DTYPE_UNKNOWN: return false;
    default: return ctosa_dtype_name(t) != NULL;
    }
}

/* Element i of little-endian data of type t (decodable(t), in range). */
static int64_t int_at(ctosa_dtype t, const uint8_t *p, uint64_t i) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return p[i] != 0;
    case CTOSA_DTYPE_INT4: {
        int v = (p[i / 2] >> ((i & 1) * 4)) & 0xf;
        return v >= 8 ? v - 16 : v;
    }
    case CTOSA_DTYPE_INT8: return (int8_t)p[i];
    case CTOSA_DTYPE_INT16: return (int16_t)rd_u16(p + 2 * i);
    case CTOSA_DTYPE_INT32: return (int32_t)rd_u32(p + 4 * i);
    case CTOSA_DTYPE_INT48: {
        uint64_t v = (uint64_t)rd_u32(p + 6 * i) | ((uint64_t)rd_u16(p + 6 * i + 4) << 32);
        return (int64_t)(v << 16) >> 16;
    }
    default: return (int64_t)rd_u64(p + 8 * i); /* INT64, SHAPE */
    }
}

static float float_at(ctosa_dtype t, const uint8_t *p, uint64_t i) {
    switch (t) {
    case CTOSA_DTYPE_FP32: {
        uint32_t u = rd_u32(p + 4 * i);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case CTOSA_DTYPE_FP16: return ff_fp16_to_f32(rd_u16(p + 2 * i));
    case CTOSA_DTYPE_BF16: return ff_bf16_to_f32(rd_u16(p + 2 * i));
    case CTOSA_DTYPE_FP8E4M3: return ff_fp8e4m3_to_f32(p[i]);
    case CTOSA_DTYPE_FP8E5M2: return ff_fp8e5m2_to_f32(p[i]);
    default: return p[i] == 255 ? NAN : ldexpf(1.0f, (int)p[i] - 127); /* FP8UE8M0 */
    }
}

/* Shortest decimal that reads back as the same float. */
static void put_float(strbuf *b, float f, bool json) {
    if (isnan(f) || isinf(f)) {
        if (json) sb_json_double(b, f);
        else sb_puts(b, isnan(f) ? "nan" : f > 0 ? "inf" : "-inf");
        return;
    }
    char tmp[40];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
        if (strtof(tmp, NULL) == f) break;
    }
    sb_puts(b, tmp);
}

static void put_value(strbuf *b, ctosa_dtype t, const uint8_t *p, uint64_t i, bool json) {
    if (t == CTOSA_DTYPE_BOOL) sb_puts(b, p[i] ? "true" : "false");
    else if (ctosa_dtype_is_float(t)) put_float(b, float_at(t, p, i), json);
    else sb_printf(b, "%lld", (long long)int_at(t, p, i));
}

static void put_hex(strbuf *b, const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) sb_printf(b, "%02x", p[i]);
}

static bool valid_utf8_text(const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n;) {
        uint8_t c = p[i];
        uint32_t len = c < 0x80             ? 1
                       : (c & 0xe0) == 0xc0 ? 2
                       : (c & 0xf0) == 0xe0 ? 3
                       : (c & 0xf8) == 0xf0 ? 4
                                            : 0;
        if (!len || c == 0 || i + len > n || (len == 2 && c < 0xc2)) return false;
        for (uint32_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80) return false;
        i += len;
    }
    return true;
}

/* ------------------------------------------------------------------ JSON */

static void json_strs(strbuf *b, const char *const *s, uint32_t n) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_puts(b, ", ");
        sb_json_str(b, s[i]);
    }
    sb_putc(b, ']');
}

static void json_i32s(strbuf *b, const int32_t *v, uint32_t n) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) sb_printf(b, i ? ", %d" : "%d", v[i]);
    sb_putc(b, ']');
}

/* The dtype of the first input of op, for decoding CLAMP min/max. */
static ctosa_dtype input_dtype(const ctosa_graph *g, const ctosa_block *blk, const ctosa_op *op) {
    const ctosa_tensor *t = op->n_inputs ? ctosa_block_find_tensor(g, blk, op->inputs[0]) : NULL;
    return t ? t->dtype : CTOSA_DTYPE_UNKNOWN;
}

/* Prints attribute values; json selects "name": value pairs, else name=value. */
static void put_attrs(strbuf *b, const ctosa_graph *g, const ctosa_block *blk, const ctosa_op *op,
                      bool json) {
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &nf);
    for (uint32_t i = 0; f && i < nf; i++) {
        const char *src = (const char *)&op->attr + f[i].offset;
        if (json) {
            sb_puts(b, i ? ", " : "");
            sb_json_str(b, f[i].name);
            sb_puts(b, ": ");
        } else {
            sb_printf(b, " %s=", f[i].name);
        }
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: {
            int32_t v;
            memcpy(&v, src, sizeof v);
            sb_printf(b, "%d", v);
            break;
        }
        case CTOSA_FIELD_BOOL: sb_puts(b, *(const bool *)src ? "true" : "false"); break;
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE: {
            ctosa_dtype v;
            memcpy(&v, src, sizeof v);
            const char *nm = f[i].kind == CTOSA_FIELD_DTYPE
                                 ? ctosa_dtype_name(v)
                                 : ctosa_enum_value_name(f[i].enum_type, (uint32_t)v);
            if (!nm) sb_printf(b, "%u", (unsigned)v);
            else if (json) sb_json_str(b, nm);
            else sb_puts(b, nm);
            break;
        }
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *v = (const ctosa_i32s *)src;
            json_i32s(b, v->v, v->n);
            break;
        }
        case CTOSA_FIELD_STRING: {
            const char *s = *(const char *const *)src;
            if (json) {
                if (s) sb_json_str(b, s);
                else sb_puts(b, "null");
            } else {
                sb_puts(b, s ? s : "(none)");
            }
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *v = (const ctosa_bytes *)src;
            if (op->kind == CTOSA_OP_CUSTOM) {
                /* implementation_attrs: text when it is text, else hex */
                if (valid_utf8_text(v->p, v->n)) {
                    /* Quoted and escaped in both formats: the attributes are
                     * often JSON themselves. */
                    sb_json_strn(b, v->p ? (const char *)v->p : "", v->n);
                } else {
                    sb_puts(b, json ? "{\"hex\": \"" : "0x");
                    put_hex(b, v->p, v->n);
                    if (json) sb_puts(b, "\"}");
                }
                break;
            }
            /* CLAMP min/max: the value in the input's type when it fits exactly */
            ctosa_dtype t = input_dtype(g, blk, op);
            uint64_t one;
            if (decodable(t) && ctosa_dtype_storage_size(t, 1, &one) && one == v->n) {
                put_value(b, t, v->p, 0, json);
            } else {
                sb_puts(b, json ? "{\"hex\": \"" : "0x");
                put_hex(b, v->p, v->n);
                if (json) sb_puts(b, "\"}");
            }
            break;
        }
        }
    }
}

/* Constant data summary. */
static void put_data(strbuf *b, const ctosa_tensor *t, bool json) {
    uint64_t n = 0;
    if (!ctosa_tensor_elements(t, &n)) n = 0;
    const uint8_t *p = t->data.ptr;
    uint64_t shown = n < DUMP_VALUES ? n : DUMP_VALUES;
    bool dec = decodable(t->dtype) && p;
    if (json) {
        sb_printf(b, "{\"bytes\": %llu, \"elements\": %llu, ", (unsigned long long)t->data.size,
                  (unsigned long long)n);
        if (dec) {
            sb_puts(b, "\"values\": [");
            for (uint64_t i = 0; i < shown; i++) {
                if (i) sb_puts(b, ", ");
                put_value(b, t->dtype, p, i, true);
            }
            sb_printf(b, "], \"truncated\": %s}", shown < n ? "true" : "false");
        } else {
            uint64_t nb = t->data.size < DUMP_VALUES ? t->data.size : DUMP_VALUES;
            sb_puts(b, "\"hex\": \"");
            if (p) put_hex(b, p, nb);
            sb_printf(b, "\", \"truncated\": %s}", nb < t->data.size ? "true" : "false");
        }
        return;
    }
    sb_printf(b, "  const %llu B = [", (unsigned long long)t->data.size);
    if (dec) {
        for (uint64_t i = 0; i < shown; i++) {
            if (i) sb_puts(b, ", ");
            put_value(b, t->dtype, p, i, false);
        }
        if (shown < n) sb_puts(b, ", ...");
    } else if (p) {
        uint64_t nb = t->data.size < DUMP_VALUES ? t->data.size : DUMP_VALUES;
        sb_puts(b, "0x");
        put_hex(b, p, nb);
        if (nb < t->data.size) sb_puts(b, "...");
    }
    sb_putc(b, ']');
}

static void json_tensor(strbuf *b, const ctosa_tensor *t) {
    sb_puts(b, "{\"name\": ");
    sb_json_str(b, t->name);
    if (t->is_shape) {
        sb_printf(b, ", \"dtype\": \"SHAPE\", \"rank\": %d", t->shape[0]);
    } else {
        sb_printf(b, ", \"dtype\": \"%s\", \"shape\": ", ctosa_dtype_name(t->dtype));
        json_i32s(b, t->shape, t->rank);
        if (t->is_unranked) sb_puts(b, ", \"unranked\": true");
        if (t->variable) sb_puts(b, ", \"variable\": true");
        if (t->variable_name && t->variable_name[0]) {
            sb_puts(b, ", \"variable_name\": ");
            sb_json_str(b, t->variable_name);
        }
    }
    if (t->data.kind != CTOSA_DATA_NONE) {
        sb_puts(b, ", \"data\": ");
        put_data(b, t, true);
    }
    sb_putc(b, '}');
}

static void dump_json(strbuf *b, const ctosa_graph *g, const char *path) {
    ctosa_version v = ctosa_graph_version(g);
    sb_puts(b, "{\n  \"file\": ");
    sb_json_str(b, path);
    sb_printf(b, ",\n  \"version\": {\"major\": %d, \"minor\": %d, \"patch\": %d, \"draft\": %s}", v.major,
              v.minor, v.patch, v.draft ? "true" : "false");
    ctosa_software_version sw = ctosa_graph_software_version(g);
    if (sw.present) {
        sb_printf(b,
                  ",\n  \"software_version\": {\"major\": %d, \"minor\": %d, \"micro\": %d, "
                  "\"modifier\": ",
                  sw.major, sw.minor, sw.micro);
        if (sw.modifier) sb_json_str(b, sw.modifier);
        else sb_puts(b, "null");
        sb_putc(b, '}');
    }
    sb_puts(b, ",\n  \"regions\": [");
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        const ctosa_region *r = ctosa_graph_region(g, ri);
        sb_puts(b, ri ? ",\n    {\"name\": " : "\n    {\"name\": ");
        sb_json_str(b, r->name);
        sb_puts(b, ", \"blocks\": [");
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *blk = r->blocks[bi];
            sb_puts(b, bi ? ",\n      {\"name\": " : "\n      {\"name\": ");
            sb_json_str(b, blk->name);
            sb_puts(b, ",\n       \"inputs\": ");
            json_strs(b, blk->inputs, blk->n_inputs);
            sb_puts(b, ",\n       \"outputs\": ");
            json_strs(b, blk->outputs, blk->n_outputs);
            sb_puts(b, ",\n       \"operators\": [");
            for (uint32_t i = 0; i < blk->n_ops; i++) {
                const ctosa_op *op = blk->ops[i];
                sb_printf(b, "%s\n        {\"index\": %u, \"op\": \"%s\", \"inputs\": ", i ? "," : "", i,
                          ctosa_op_name(op->kind));
                json_strs(b, op->inputs, op->n_inputs);
                sb_puts(b, ", \"outputs\": ");
                json_strs(b, op->outputs, op->n_outputs);
                sb_puts(b, ", \"attributes\": {");
                put_attrs(b, g, blk, op, true);
                sb_putc(b, '}');
                if (op->location) {
                    sb_puts(b, ", \"location\": ");
                    sb_json_str(b, op->location);
                }
                sb_putc(b, '}');
            }
            sb_puts(b, blk->n_ops ? "\n       ],\n       \"tensors\": [" : "],\n       \"tensors\": [");
            for (uint32_t i = 0; i < blk->n_tensors; i++) {
                sb_puts(b, i ? ",\n        " : "\n        ");
                json_tensor(b, blk->tensors[i]);
            }
            sb_puts(b, blk->n_tensors ? "\n       ],\n       \"shapes\": [" : "],\n       \"shapes\": [");
            for (uint32_t i = 0; i < blk->n_shapes; i++) {
                sb_puts(b, i ? ",\n        " : "\n        ");
                json_tensor(b, blk->shapes[i]);
            }
            sb_puts(b, blk->n_shapes ? "\n       ]}" : "]}");
        }
        sb_puts(b, r->n_blocks ? "\n    ]}" : "]}");
    }
    sb_puts(b, ctosa_graph_region_count(g) ? "\n  ]\n}\n" : "]\n}\n");
}

/* ------------------------------------------------------------------ text */

static void text_names(strbuf *b, const char *const *s, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) sb_printf(b, "%s%s", i ? ", " : "", s[i]);
}

static void text_tensor(strbuf *b, const ctosa_tensor *t) {
    sb_printf(b, "      %s: ", t->name);
    if (t->is_shape) {
        sb_printf(b, "shape[%d]", t->shape[0]);
    } else {
        sb_printf(b, "%s[", ctosa_dtype_short(t->dtype));
        for (uint32_t i = 0; i < t->rank; i++) sb_printf(b, i ? ",%d" : "%d", t->shape[i]);
        sb_putc(b, ']');
        if (t->is_unranked) sb_puts(b, " unranked");
        if (t->variable) sb_printf(b, " variable '%s'", t->variable_name ? t->variable_name : "");
    }
    if (t->data.kind != CTOSA_DATA_NONE) put_data(b, t, false);
    sb_putc(b, '\n');
}

static void dump_text(strbuf *b, const ctosa_graph *g, const char *path) {
    ctosa_version v = ctosa_graph_version(g);
    sb_printf(b, "%s: TOSA %d.%d.%d%s\n", path, v.major, v.minor, v.patch, v.draft ? " draft" : "");
    ctosa_software_version sw = ctosa_graph_software_version(g);
    if (sw.present)
        sb_printf(b, "software version %d.%d.%d%s%s\n", sw.major, sw.minor, sw.micro, sw.modifier ? " " : "",
                  sw.modifier ? sw.modifier : "");
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        const ctosa_region *r = ctosa_graph_region(g, ri);
        sb_printf(b, "region %s\n", r->name);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *blk = r->blocks[bi];
            sb_printf(b, "  block %s\n    inputs: ", blk->name);
            text_names(b, blk->inputs, blk->n_inputs);
            sb_puts(b, "\n    outputs: ");
            text_names(b, blk->outputs, blk->n_outputs);
            sb_printf(b, "\n    tensors (%u):\n", blk->n_tensors);
            for (uint32_t i = 0; i < blk->n_tensors; i++) text_tensor(b, blk->tensors[i]);
            if (blk->n_shapes) {
                sb_printf(b, "    shapes (%u):\n", blk->n_shapes);
                for (uint32_t i = 0; i < blk->n_shapes; i++) text_tensor(b, blk->shapes[i]);
            }
            sb_printf(b, "    operators (%u):\n", blk->n_ops);
            for (uint32_t i = 0; i < blk->n_ops; i++) {
                const ctosa_op *op = blk->ops[i];
                sb_printf(b, "      #%u %s (", i, ctosa_op_name(op->kind));
                text_names(b, op->inputs, op->n_inputs);
                sb_puts(b, ") -> (");
                text_names(b, op->outputs, op->n_outputs);
                sb_putc(b, ')');
                put_attrs(b, g, blk, op, false);
                if (op->location) sb_printf(b, "  @ %s", op->location);
                sb_putc(b, '\n');
            }
        }
    }
}

/* ------------------------------------------------------------------- dot */

/* A DOT double-quoted string: \ and " escaped, line breaks as \n (a label
 * line break), other control bytes and invalid UTF-8 as '?'. */
static void dot_str(strbuf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    sb_putc(b, '"');
    while (*p) {
        unsigned char c = *p;
        uint32_t len = c < 0x80                          ? 1
                       : (c & 0xe0) == 0xc0 && c >= 0xc2 ? 2
                       : (c & 0xf0) == 0xe0              ? 3
                       : (c & 0xf8) == 0xf0 && c <= 0xf4 ? 4
                                                         : 0;
        for (uint32_t k = 1; k < len; k++)
            if ((p[k] & 0xc0) != 0x80) len = 0;
        if (len > 1) {
            sb_putn(b, (const char *)p, len);
            p += len;
            continue;
        }
        if (c == '"' || c == '\\') sb_putc(b, '\\'), sb_putc(b, (char)c);
        else if (c == '\n') sb_puts(b, "\\n");
        else if (c < 0x20 || c >= 0x7f) sb_putc(b, '?');
        else sb_putc(b, (char)c);
        p++;
    }
    sb_putc(b, '"');
}

/* "fp32[1,16,112,112]" (or "shape[3]"), for labels. */
static void dot_type(strbuf *b, const ctosa_tensor *t) {
    if (!t) {
        sb_puts(b, "?");
        return;
    }
    if (t->is_shape) {
        sb_printf(b, "shape[%d]", t->shape[0]);
        return;
    }
    const char *dn = ctosa_dtype_short(t->dtype);
    sb_printf(b, "%s[", dn ? dn : "?");
    for (uint32_t i = 0; i < t->rank; i++) sb_printf(b, i ? ",%d" : "%d", t->shape[i]);
    sb_putc(b, ']');
}

#define DOT_LABEL_OUTPUTS 2 /* output types shown in an operator's label */

/* CONST / CONST_SHAPE operators are not drawn: their outputs are counted
 * in the consumers' labels like any other constant operand. */
static bool is_const_op(const ctosa_op *op) {
    return op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE;
}

static bool is_block_input(const ctosa_block *blk, const char *name) {
    for (uint32_t i = 0; i < blk->n_inputs; i++)
        if (strcmp(blk->inputs[i], name) == 0) return true;
    return false;
}

/* One block: operators as nodes, tensors between them as edges, inputs and
 * outputs as ellipses, constant operands counted in the operator label. */
static void dot_block(strbuf *b, const ctosa_graph *g, uint32_t ri, uint32_t bi, const ctosa_block *blk,
                      strmap *producer, strmap *extern_seen) {
    const char *ind = "    ";
    sb_printf(b, "  subgraph \"cluster_r%u_b%u\" {\n%slabel=", ri, bi, ind);
    strbuf l;
    sb_init(&l);
    sb_printf(&l, "block %s", blk->name ? blk->name : "");
    dot_str(b, l.s);
    sb_printf(b, ";\n%sstyle=\"rounded\"; color=\"#8899aa\";\n", ind);
    sb_printf(b, "%s\"r%u_b%u_anchor\" [shape=point, style=invis, width=0, height=0];\n", ind, ri, bi);
    strmap_init(producer);
    strmap_init(extern_seen);
    for (uint32_t i = 0; i < blk->n_inputs; i++) {
        l.len = 0;
        sb_printf(&l, "%s\n", blk->inputs[i]);
        dot_type(&l, ctosa_block_find_tensor(g, blk, blk->inputs[i]));
        sb_printf(b, "%s\"r%u_b%u_in%u\" [shape=ellipse, fillcolor=\"#ffffff\", label=", ind, ri, bi, i);
        dot_str(b, l.s);
        sb_puts(b, "];\n");
    }
    for (uint32_t i = 0; i < blk->n_ops; i++)
        for (uint32_t k = 0; !is_const_op(blk->ops[i]) && k < blk->ops[i]->n_outputs; k++)
            if (!strmap_put(producer, blk->ops[i]->outputs[k], (void *)(uintptr_t)(i + 1))) b->failed = true;
    for (uint32_t i = 0; i < blk->n_ops; i++) {
        const ctosa_op *op = blk->ops[i];
        if (is_const_op(op)) continue;
        uint32_t n_const = 0; /* the operands dot_source elides */
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            const ctosa_tensor *t = ctosa_block_find_tensor(g, blk, op->inputs[k]);
            n_const += t && t->data.kind != CTOSA_DATA_NONE && !strmap_has(producer, op->inputs[k]) &&
                       !is_block_input(blk, op->inputs[k]);
        }
        l.len = 0;
        sb_printf(&l, "#%u %s", i, ctosa_op_name(op->kind));
        for (uint32_t k = 0; k < op->n_outputs && k < DOT_LABEL_OUTPUTS; k++) {
            sb_putc(&l, '\n');
            dot_type(&l, ctosa_block_find_tensor(g, blk, op->outputs[k]));
        }
        if (op->n_outputs > DOT_LABEL_OUTPUTS)
            sb_printf(&l, "\n+%u outputs", op->n_outputs - DOT_LABEL_OUTPUTS);
        if (n_const) sb_printf(&l, "\n(%u constant%s)", n_const, n_const == 1 ? "" : "s");
        bool cf = op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP;
        sb_printf(b, "%s\"r%u_b%u_op%u\" [%slabel=", ind, ri, bi, i, cf ? "fillcolor=\"#fff2cc\", " : "");
        dot_str(b, l.s);
        sb_puts(b, "];\n");
    }
    for (uint32_t i = 0; i < blk->n_outputs; i++) {
        l.len = 0;
        sb_printf(&l, "%s\n", blk->outputs[i]);
        dot_type(&l, ctosa_block_find_tensor(g, blk, blk->outputs[i]));
        sb_printf(b, "%s\"r%u_b%u_out%u\" [shape=ellipse, fillcolor=\"#ffffff\", label=", ind, ri, bi, i);
        dot_str(b, l.s);
        sb_puts(b, "];\n");
    }
    sb_puts(b, "  }\n");
    sb_free(&l);
}

/* The source node of tensor name in block (ri, bi) into b, or false when
 * it is a constant (elided). Tensors with no producer that are not block
 * inputs (values from an enclosing block, variables) get a small node of
 * their own, declared once. */
static bool dot_source(strbuf *b, strbuf *decl, const ctosa_graph *g, uint32_t ri, uint32_t bi,
                       const ctosa_block *blk, strmap *producer, strmap *extern_seen, const char *name) {
    uintptr_t p = (uintptr_t)strmap_get(producer, name);
    if (p) {
        sb_printf(b, "\"r%u_b%u_op%u\"", ri, bi, (unsigned)(p - 1));
        return true;
    }
    for (uint32_t i = 0; i < blk->n_inputs; i++)
        if (strcmp(blk->inputs[i], name) == 0) {
            sb_printf(b, "\"r%u_b%u_in%u\"", ri, bi, i);
            return true;
        }
    const ctosa_tensor *t = ctosa_block_find_tensor(g, blk, name);
    if (t && t->data.kind != CTOSA_DATA_NONE) return false;
    uintptr_t id = (uintptr_t)strmap_get(extern_seen, name);
    if (!id) {
        id = extern_seen->count + 1;
        if (!strmap_put(extern_seen, name, (void *)id)) b->failed = true;
        sb_printf(decl, "  \"r%u_b%u_x%u\" [shape=plaintext, style=\"\", label=", ri, bi, (unsigned)id);
        strbuf l;
        sb_init(&l);
        sb_puts(&l, name);
        if (t && t->variable) sb_puts(&l, "\n(variable)");
        dot_str(decl, l.s ? l.s : "");
        sb_free(&l);
        sb_puts(decl, "];\n");
    }
    sb_printf(b, "\"r%u_b%u_x%u\"", ri, bi, (unsigned)id);
    return true;
}

static void dot_edge_label(strbuf *b, const char *tensor) {
    sb_puts(b, " [label=");
    dot_str(b, tensor);
    sb_puts(b, "];\n");
}

static void dot_edges(strbuf *b, const ctosa_graph *g, uint32_t ri, uint32_t bi, const ctosa_block *blk,
                      strmap *producer, strmap *extern_seen) {
    strbuf decl, e;
    sb_init(&decl);
    sb_init(&e);
    for (uint32_t i = 0; i < blk->n_ops; i++) {
        const ctosa_op *op = blk->ops[i];
        if (is_const_op(op)) continue;
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            size_t mark = e.len;
            sb_puts(&e, "  ");
            if (!dot_source(&e, &decl, g, ri, bi, blk, producer, extern_seen, op->inputs[k])) {
                e.len = mark;
                continue;
            }
            sb_printf(&e, " -> \"r%u_b%u_op%u\"", ri, bi, i);
            dot_edge_label(&e, op->inputs[k]);
        }
        /* Control flow: a dashed edge to each region (or block) it runs. */
        uint32_t nf = 0;
        const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &nf);
        bool cf = op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP;
        for (uint32_t k = 0; cf && f && k < nf; k++) {
            if (f[k].kind != CTOSA_FIELD_STRING) continue;
            const char *target = *(const char *const *)((const char *)&op->attr + f[k].offset);
            if (!target) continue;
            /* a region, or a block of the calling region: both forms */
            const ctosa_region *r = NULL;
            const ctosa_block *cb = ctosa_graph_find_called(g, ctosa_graph_region(g, ri), target, &r);
            uint32_t rj = 0, bj = 0;
            while (cb && ctosa_graph_region(g, rj) != r) rj++;
            while (cb && r->blocks[bj] != cb) bj++;
            if (!cb) continue;
            bool region = r->name && strcmp(r->name, target) == 0;
            sb_printf(&e,
                      "  \"r%u_b%u_op%u\" -> \"r%u_b%u_anchor\" [style=dashed, color=\"#b08000\", "
                      "lhead=\"cluster_r%u",
                      ri, bi, i, rj, bj, rj);
            if (!region) sb_printf(&e, "_b%u", bj);
            sb_puts(&e, "\", label=");
            dot_str(&e, f[k].name);
            sb_puts(&e, "];\n");
        }
    }
    for (uint32_t i = 0; i < blk->n_outputs; i++) {
        size_t mark = e.len;
        sb_puts(&e, "  ");
        if (!dot_source(&e, &decl, g, ri, bi, blk, producer, extern_seen, blk->outputs[i])) {
            e.len = mark;
            continue;
        }
        sb_printf(&e, " -> \"r%u_b%u_out%u\"", ri, bi, i);
        dot_edge_label(&e, blk->outputs[i]);
    }
    if (decl.failed || e.failed) b->failed = true;
    if (decl.s) sb_putn(b, decl.s, decl.len);
    if (e.s) sb_putn(b, e.s, e.len);
    sb_free(&decl);
    sb_free(&e);
}

static void dump_dot(strbuf *b, const ctosa_graph *g, const char *path) {
    ctosa_version v = ctosa_graph_version(g);
    sb_puts(b, "digraph ");
    dot_str(b, path);
    sb_printf(b, " {\n  graph [label=");
    strbuf l;
    sb_init(&l);
    sb_printf(&l, "%s (TOSA %d.%d.%d%s)", path, v.major, v.minor, v.patch, v.draft ? " draft" : "");
    dot_str(b, l.s ? l.s : "");
    sb_free(&l);
    sb_puts(b, ", labelloc=t, rankdir=TB, compound=true, fontname=\"Helvetica\"];\n"
               "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#e8eefc\", fontname=\"Helvetica\", "
               "fontsize=10];\n"
               "  edge [color=\"#666666\", fontname=\"Helvetica\", fontsize=8];\n");
    strmap producer, extern_seen;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        const ctosa_region *r = ctosa_graph_region(g, ri);
        sb_printf(b, "  subgraph \"cluster_r%u\" {\n  label=", ri);
        sb_init(&l);
        sb_printf(&l, "region %s", r->name ? r->name : "");
        dot_str(b, l.s ? l.s : "");
        sb_free(&l);
        sb_puts(b, ";\n  style=\"dashed\"; color=\"#aaaaaa\";\n");
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *blk = r->blocks[bi];
            dot_block(b, g, ri, bi, blk, &producer, &extern_seen);
            dot_edges(b, g, ri, bi, blk, &producer, &extern_seen);
            strmap_free(&producer);
            strmap_free(&extern_seen);
        }
        sb_puts(b, "  }\n");
    }
    sb_puts(b, "}\n");
}

static void help(void) {
    printf("usage: ctosa dump MODEL.tosa [--format json|text|dot|mlir] [--require-identifier]\n"
           "                  [--input NAME=FILE]... [--run] [-o FILE]\n\n"
           "Prints a TOSA flatbuffer: version, regions, blocks, operators with attributes,\n"
           "tensors with shapes and types, constant data summarised (first %d values).\n"
           "The file is verified completely first; a malformed file is an error (exit 2)\n"
           "naming the byte offset.\n\n"
           "options:\n"
           "  --format FMT            text (default), json (stable, machine-readable), dot\n"
           "                          (Graphviz: 'ctosa dump m.tosa --format dot | dot -Tsvg -o m.svg')\n"
           "                          or mlir (the upstream MLIR tosa dialect, constants exact;\n"
           "                          see docs/mlir.md for mlir-opt validation and execution)\n"
           "  --json                  same as --format json\n"
           "  --input NAME=FILE       mlir: value of graph input NAME (.npy or .pb); with every\n"
           "                          input given, adds func.func @ctosa_run that calls @main on\n"
           "                          them and prints the outputs (for 'mlir-runner -e ctosa_run')\n"
           "  --run                   mlir: add @ctosa_run also for a graph without inputs\n"
           "  -o, --output FILE       write to FILE (atomically) instead of stdout\n"
           "  --require-identifier    reject files without the \"TOSA\" file identifier\n"
           "  -h, --help              this help\n",
           DUMP_VALUES);
}

/* ------------------------------------------------------------------ MLIR */

typedef struct dump_input {
    const char *name, *file;
} dump_input;

/* Reads the --input files as values of the main block's inputs. */
static ctosa_error *mlir_inputs(const ctosa_graph *g, const dump_input *in, uint32_t n, ctosa_mlir_input *out,
                                ctosa_tensor_file *files, void **host) {
    const ctosa_region *r = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    const ctosa_block *blk = r && r->n_blocks ? r->blocks[0] : NULL;
    for (uint32_t i = 0; i < n; i++) {
        bool is_input = false;
        for (uint32_t k = 0; blk && k < blk->n_inputs && !is_input; k++)
            is_input = strcmp(blk->inputs[k], in[i].name) == 0;
        const ctosa_tensor *t = is_input ? ctosa_block_find_tensor(g, blk, in[i].name) : NULL;
        if (!t) return ctosa_error_new(CTOSA_ERR_USAGE, "--input %s: not a graph input", in[i].name);
        ctosa_error *e = ctosa_tensor_file_read(in[i].file, &files[i]);
        if (e) return ctosa_error_prefix(e, "input '%s'", in[i].name);
        bool same = files[i].rank == t->rank;
        for (uint32_t d = 0; same && d < t->rank; d++) same = files[i].shape[d] == t->shape[d];
        if (!same)
            return ctosa_error_new(CTOSA_ERR_USAGE,
                                   "input '%s': %s has another shape than the "
                                   "graph input",
                                   in[i].name, in[i].file);
        char what[512];
        snprintf(what, sizeof what, "input '%s' (%s)", in[i].name, in[i].file);
        uint64_t size = 0;
        if ((e = ctosa_tensor_file_to_host(&files[i], t->dtype, what, &host[i], &size))) return e;
        out[i].name = in[i].name;
        out[i].dtype = t->dtype;
        out[i].rank = files[i].rank;
        out[i].shape = files[i].shape;
        out[i].data = host[i];
        out[i].size = size;
    }
    return NULL;
}

static ctosa_error *stdout_sink(void *user, const char *text, size_t n) {
    (void)user;
    if (fwrite(text, 1, n, stdout) != n) return ctosa_error_new(CTOSA_ERR_IO, "writing to stdout failed");
    return NULL;
}

static ctosa_error *dump_mlir(const ctosa_graph *g, const char *path, const dump_input *in, uint32_t n_in,
                              bool run, const char *out_path) {
    ctosa_mlir_input *vals = calloc(n_in ? n_in : 1, sizeof *vals);
    ctosa_tensor_file *files = calloc(n_in ? n_in : 1, sizeof *files);
    void **host = calloc(n_in ? n_in : 1, sizeof *host);
    ctosa_error *e =
        vals && files && host ? mlir_inputs(g, in, n_in, vals, files, host) : ctosa_error_nomem();
    if (!e) {
        ctosa_mlir_options opt;
        ctosa_mlir_options_init(&opt);
        opt.source_name = path;
        opt.run = run;
        opt.inputs = vals;
        opt.n_inputs = n_in;
        if (out_path) e = ctosa_mlir_write_file(g, out_path, &opt);
        else if (!(e = ctosa_mlir_write(g, &opt, stdout_sink, NULL)) && fflush(stdout) != 0)
            e = ctosa_error_new(CTOSA_ERR_IO, "writing to stdout failed");
    }
    for (uint32_t i = 0; i < n_in && files && host; i++) {
        ctosa_tensor_file_free(&files[i]);
        free(host[i]);
    }
    free(vals);
    free(files);
    free(host);
    return e;
}

/* The command with ins (room for argc --input bindings) owned by the caller. */
static int dump_cmd(int argc, char **argv, dump_input *ins) {
    const char *path = NULL, *format = "text", *out_path = NULL;
    uint32_t n_ins = 0;
    bool run = false;
    ctosa_read_options opt;
    ctosa_read_options_init(&opt);
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *val;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return 0;
        } else if ((val = cli_flag_value(argc, argv, &i, "--format", NULL, &missing))) {
            format = val;
        } else if (missing) {
            return cli_usage("dump", "--format needs a value (json, text, dot or mlir)");
        } else if ((val = cli_flag_value(argc, argv, &i, "--input", NULL, &missing))) {
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || !eq[1])
                return cli_usage("dump", "--input expects NAME=FILE, got '%s'", val);
            /* NAME is cut at '=' in place: argv strings are writable */
            ((char *)eq)[0] = '\0';
            ins[n_ins].name = val;
            ins[n_ins++].file = eq + 1;
        } else if (missing && strcmp(argv[i], "--input") == 0) {
            return cli_usage("dump", "--input needs NAME=FILE");
        } else if ((val = cli_flag_value(argc, argv, &i, "-o", "--output", &missing))) {
            out_path = val;
        } else if (missing) {
            return cli_usage("dump", "%s needs a file name", argv[i]);
        } else if (strcmp(argv[i], "--json") == 0) {
            format = "json";
        } else if (strcmp(argv[i], "--run") == 0) {
            run = true;
        } else if (strcmp(argv[i], "--require-identifier") == 0) {
            opt.require_identifier = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage("dump", "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage("dump", "more than one model given ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return cli_usage("dump", "no model given");
    bool json = strcmp(format, "json") == 0, dot = strcmp(format, "dot") == 0;
    bool mlir = strcmp(format, "mlir") == 0;
    if (!json && !dot && !mlir && strcmp(format, "text") != 0)
        return cli_usage("dump", "unknown format '%s' (expected json, text, dot or mlir)", format);
    if ((n_ins || run) && !mlir) return cli_usage("dump", "--input and --run are only for --format mlir");
    ctosa_graph *g;
    ctosa_error *e = ctosa_read_file(path, &opt, &g);
    if (e) return cli_fail("dump", e);
    if (mlir) {
        e = dump_mlir(g, path, ins, n_ins, run, out_path);
        ctosa_graph_free(g);
        return e ? cli_fail("dump", e) : 0;
    }
    strbuf b;
    sb_init(&b);
    if (json) dump_json(&b, g, path);
    else if (dot) dump_dot(&b, g, path);
    else dump_text(&b, g, path);
    ctosa_graph_free(g);
    if (b.failed) {
        sb_free(&b);
        return cli_fail("dump", ctosa_error_nomem());
    }
    if (out_path) {
        e = write_whole_file(out_path, b.s ? b.s : "", b.len);
        sb_free(&b);
        return e ? cli_fail("dump", e) : 0;
    }
    size_t w = b.len ? fwrite(b.s, 1, b.len, stdout) : 0;
    bool ok = w == b.len && fflush(stdout) == 0;
    sb_free(&b);
    if (!ok) return cli_fail("dump", ctosa_error_new(CTOSA_ERR_IO, "writing to stdout failed"));
    return 0;
}

int cmd_dump(int argc, char **argv) {
    dump_input *ins = calloc((size_t)argc + 1, sizeof *ins);
    if (!ins) return cli_fail("dump", ctosa_error_nomem());
    int rc = dump_cmd(argc, argv, ins);
    free(ins);
    return rc;
}
