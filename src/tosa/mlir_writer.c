/* mlir_writer.c - a ctosa_graph as MLIR text in the upstream `tosa` dialect
 * (LLVM 22). The mapping from the flatbuffer model is driven by the
 * operator and attribute tables (tables.c): the MLIR operation is the
 * lower-case operator name, attributes are the fields of the operator's
 * attribute table in the representation MLIR gives each field kind, and
 * operands keep their flatbuffer order (both follow the specification's
 * argument order). Text streams to a sink; constant data is converted
 * chunk by chunk, never held whole. */
#include <stdlib.h>
#include <string.h>

#include "ctosa/mlir.h"
#include "graph_internal.h"

#define MW_FLUSH ((size_t)64 << 10)        /* text handed to the sink at this size */
#define MW_CHUNK_ELEMS ((uint64_t)1 << 18) /* elements converted per chunk (multiple of 8) */

void ctosa_mlir_options_init(ctosa_mlir_options *opt) { memset(opt, 0, sizeof *opt); }

/* A value in scope: its SSA name and the tensor that gives its type. */
typedef struct mw_val {
    const char *ssa;
    const ctosa_tensor *t;
} mw_val;

/* One block being written; lookups fall back to the enclosing blocks (a
 * region body may read values of the block that runs it). */
typedef struct mw_scope {
    const ctosa_block *blk;
    const char *blk_label; /* NULL for the main block */
    strmap vals;           /* tensor name -> mw_val */
    struct mw_scope *up;
    const ctosa_region *rgn; /* the region holding blk: where called blocks are looked up */
} mw_scope;

typedef struct mw {
    const ctosa_graph *g;
    const ctosa_mlir_options *opt;
    const char *file;
    ctosa_mlir_sink sink;
    void *user;
    strbuf b;
    ctosa_error *err;
    arena a;
    uint64_t next_id;
    uint32_t depth;  /* nesting of regions (indentation) */
    strmap vars;     /* variable tensor name -> symbol name */
    strmap var_syms; /* symbols declared */
} mw;

/* ------------------------------------------------------------- output */

static void mw_flush(mw *w) {
    if (w->b.failed && !w->err) w->err = ctosa_error_nomem();
    if (!w->err && w->b.len) w->err = w->sink(w->user, w->b.s, w->b.len);
    w->b.len = 0;
}

static void mw_maybe_flush(mw *w) {
    if (w->b.len >= MW_FLUSH || w->b.failed) mw_flush(w);
}

static void mw_fail(mw *w, ctosa_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mw_fail(mw *w, ctosa_code code, const char *fmt, ...) {
    if (w->err) return;
    va_list ap;
    va_start(ap, fmt);
    w->err = ctosa_error_vnew(code, fmt, ap);
    va_end(ap);
}

static void mw_indent(mw *w) {
    for (uint32_t i = 0; i < w->depth + 2; i++) sb_puts(&w->b, "  ");
}

/* An MLIR string literal: printable ASCII as is, the rest as \XX. */
static void mw_str(strbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            sb_putc(b, (char)c);
        } else {
            char e[3] = {'\\', hex[c >> 4], hex[c & 15]};
            sb_putn(b, e, 3);
        }
    }
    sb_putc(b, '"');
}

static void mw_cstr(strbuf *b, const char *s) { mw_str(b, s ? s : "", s ? strlen(s) : 0); }

/* ---------------------------------------------------------------- types */

/* MLIR element type of a dtype; NULL when MLIR has none. */
static const char *mw_elem(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return "i1";
    case CTOSA_DTYPE_INT4: return "i4";
    case CTOSA_DTYPE_INT8: return "i8";
    case CTOSA_DTYPE_INT16: return "i16";
    case CTOSA_DTYPE_INT32: return "i32";
    case CTOSA_DTYPE_INT48: return "i48";
    case CTOSA_DTYPE_INT64: return "i64";
    case CTOSA_DTYPE_FP32: return "f32";
    case CTOSA_DTYPE_FP16: return "f16";
    case CTOSA_DTYPE_BF16: return "bf16";
    case CTOSA_DTYPE_FP8E4M3: return "f8E4M3FN";
    case CTOSA_DTYPE_FP8E5M2: return "f8E5M2";
    case CTOSA_DTYPE_FP6E2M3: return "f6E2M3FN";
    case CTOSA_DTYPE_FP6E3M2: return "f6E3M2FN";
    case CTOSA_DTYPE_FP4E2M1: return "f4E2M1FN";
    case CTOSA_DTYPE_FP8UE8M0: return "f8E8M0FNU";
    default: return NULL;
    }
}

static bool mw_is_float(ctosa_dtype t) {
    const char *e = mw_elem(t);
    return e && e[0] != 'i';
}

static const char *mw_elem_or_fail(mw *w, ctosa_dtype t, const char *what) {
    const char *e = mw_elem(t);
    if (!e)
        mw_fail(w, CTOSA_ERR_UNSUPPORTED, "%s: dtype %s has no MLIR type", what,
                ctosa_dtype_name(t) ? ctosa_dtype_name(t) : "?");
    return e ? e : "none";
}

/* tensor<1x?x4xf32>, tensor<f32>, tensor<*xf32>, !tosa.shape<N>. */
static void mw_type(mw *w, const ctosa_tensor *t) {
    if (t->is_shape) {
        sb_printf(&w->b, "!tosa.shape<%d>", t->rank ? t->shape[0] : 0);
        return;
    }
    sb_puts(&w->b, "tensor<");
    if (t->is_unranked) {
        sb_puts(&w->b, "*x");
    } else {
        for (uint32_t i = 0; i < t->rank; i++) {
            if (t->shape[i] < 0) sb_puts(&w->b, "?x");
            else sb_printf(&w->b, "%dx", t->shape[i]);
        }
    }
    sb_printf(&w->b, "%s>", mw_elem_or_fail(w, t->dtype, t->name));
}

/* The same tensor type with another element type ("i64" for printing). */
static void mw_type_as(mw *w, const ctosa_tensor *t, const char *elem) {
    sb_puts(&w->b, "tensor<");
    for (uint32_t i = 0; i < t->rank; i++) sb_printf(&w->b, "%dx", t->shape[i]);
    sb_printf(&w->b, "%s>", elem);
}

/* ------------------------------------------------------------ constants */

/* Where element bytes come from: a graph constant (file encoding, read in
 * ranges) or a host-encoded input value in memory. */
typedef struct mw_src {
    const ctosa_tensor *t; /* file encoding when set */
    const uint8_t *host;   /* else host encoding */
} mw_src;

/* Source bytes of elements [first, first + n). */
static uint64_t mw_src_bytes(ctosa_dtype dt, bool host, uint64_t n) {
    if (host) {
        switch (dt) {
        case CTOSA_DTYPE_BOOL:
        case CTOSA_DTYPE_INT4: return n;
        case CTOSA_DTYPE_INT48: return 8 * n;
        default: break;
        }
    }
    uint64_t bytes = 0;
    ctosa_dtype_storage_size(dt, n, &bytes);
    return bytes;
}

/* Appends the MLIR raw-buffer bytes of n elements (src: their source bytes;
 * first is a multiple of MW_CHUNK_ELEMS) as hex. */
static void mw_hex_elems(mw *w, ctosa_dtype dt, bool host, const uint8_t *src, uint64_t n,
                         char *out /* 2 * 8 * n + 16 bytes */) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
#define PUT(byte)                     \
    do {                              \
        uint8_t v_ = (uint8_t)(byte); \
        out[k++] = hex[v_ >> 4];      \
        out[k++] = hex[v_ & 15];      \
    } while (0)
    switch (dt) {
    case CTOSA_DTYPE_BOOL: /* bit-packed, least significant bit first */
        for (uint64_t i = 0; i < n; i += 8) {
            uint8_t v = 0;
            for (uint64_t j = 0; j < 8 && i + j < n; j++) v |= (uint8_t)((src[i + j] != 0) << j);
            PUT(v);
        }
        break;
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_FP4E2M1: /* one element per byte */
        for (uint64_t i = 0; i < n; i++)
            PUT(host ? (uint8_t)(src[i] & 15) : (uint8_t)((src[i / 2] >> ((i & 1) * 4)) & 15));
        break;
    case CTOSA_DTYPE_INT48: /* six bytes little-endian */
        for (uint64_t i = 0; i < n; i++)
            for (int j = 0; j < 6; j++) PUT(src[(host ? 8 : 6) * i + (uint64_t)j]);
        break;
    default: {
        uint64_t bytes = mw_src_bytes(dt, host, n);
        for (uint64_t i = 0; i < bytes; i++) PUT(src[i]);
    }
    }
#undef PUT
    sb_putn(&w->b, out, k);
}

/* dense<"0x..."> of count elements of dtype dt (streamed in chunks). */
static void mw_dense_hex(mw *w, ctosa_dtype dt, uint64_t count, const mw_src *s, const char *what) {
    if (dt == CTOSA_DTYPE_FP6E2M3 || dt == CTOSA_DTYPE_FP6E3M2) {
        mw_fail(w, CTOSA_ERR_UNSUPPORTED, "%s: constants of dtype %s are not written as MLIR", what,
                ctosa_dtype_name(dt));
        return;
    }
    if (count == 0) {
        sb_puts(&w->b, "dense<>");
        return;
    }
    uint64_t chunk = count < MW_CHUNK_ELEMS ? count : MW_CHUNK_ELEMS;
    uint8_t *buf = NULL;
    char *out = malloc((size_t)(16 * chunk + 16));
    if (!s->host) buf = malloc((size_t)mw_src_bytes(dt, false, chunk) + 1);
    if (!out || (!s->host && !buf)) {
        free(out);
        free(buf);
        mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        return;
    }
    sb_puts(&w->b, "dense<\"0x");
    for (uint64_t first = 0; first < count && !w->err; first += chunk) {
        uint64_t n = count - first < chunk ? count - first : chunk;
        uint64_t off = mw_src_bytes(dt, s->host != NULL, first);
        const uint8_t *src;
        if (s->host) {
            src = s->host + off;
        } else {
            ctosa_error *e = ctosa_tensor_read_data(s->t, off, buf, (size_t)mw_src_bytes(dt, false, n));
            if (e) {
                w->err = ctosa_error_prefix(e, "%s", what);
                break;
            }
            src = buf;
        }
        mw_hex_elems(w, dt, s->host != NULL, src, n, out);
        mw_maybe_flush(w);
    }
    sb_puts(&w->b, "\">");
    free(out);
    free(buf);
}

/* The values of a constant tensor or shape: dense<...> : tensor<...>. */
static void mw_const_values(mw *w, const ctosa_tensor *t) {
    uint64_t count = 0;
    if (!ctosa_tensor_elements(t, &count)) {
        mw_fail(w, CTOSA_ERR_LIMIT, "constant '%s': too many elements", t->name);
        return;
    }
    if (t->is_shape) {
        uint32_t n = t->rank ? (uint32_t)t->shape[0] : 0;
        sb_puts(&w->b, n ? "dense<[" : "dense<");
        for (uint32_t i = 0; i < n && !w->err; i++) {
            uint8_t v[8];
            ctosa_error *e = ctosa_tensor_read_data(t, 8 * (uint64_t)i, v, 8);
            if (e) w->err = ctosa_error_prefix(e, "shape '%s'", t->name);
            sb_printf(&w->b, i ? ", %lld" : "%lld", (long long)rd_u64(v));
        }
        sb_printf(&w->b, n ? "]> : tensor<%uxindex>" : "> : tensor<%uxindex>", n);
        return;
    }
    uint64_t need = 0;
    ctosa_dtype_storage_size(t->dtype, count, &need);
    if (t->data.size < need) {
        mw_fail(w, CTOSA_ERR_FORMAT, "constant '%s': %llu bytes of data, %llu needed", t->name,
                (unsigned long long)t->data.size, (unsigned long long)need);
        return;
    }
    char what[256];
    snprintf(what, sizeof what, "constant '%s'", t->name);
    mw_src s = {t, NULL};
    mw_dense_hex(w, t->dtype, count, &s, what);
    sb_puts(&w->b, " : ");
    mw_type(w, t);
}

/* ------------------------------------------------------------- scopes */

static mw_val *mw_lookup(const mw_scope *sc, const char *name) {
    for (; sc; sc = sc->up) {
        mw_val *v = strmap_get(&sc->vals, name);
        if (v) return v;
    }
    return NULL;
}

static const ctosa_tensor *mw_find_tensor(const mw *w, const mw_scope *sc, const char *name) {
    for (; sc; sc = sc->up) {
        const ctosa_tensor *t = ctosa_block_find_tensor(w->g, sc->blk, name);
        if (t) return t;
    }
    return NULL;
}

static const char *mw_fresh(mw *w) {
    const char *s = arena_printf(&w->a, "%%%llu", (unsigned long long)w->next_id++);
    if (!s) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
    return s ? s : "%?";
}

static void mw_bind(mw *w, mw_scope *sc, const char *name, const char *ssa, const ctosa_tensor *t) {
    mw_val *v = arena_alloc(&w->a, sizeof *v);
    if (!v || !strmap_put(&sc->vals, name, v)) {
        mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        return;
    }
    v->ssa = ssa;
    v->t = t;
}

/* loc("NODE"("FILE[@BLOCK]":INDEX:0)) */
static void mw_loc(mw *w, const mw_scope *sc, uint32_t index, const ctosa_op *op) {
    sb_puts(&w->b, " loc(");
    if (op && op->location) {
        mw_cstr(&w->b, op->location);
        sb_putc(&w->b, '(');
    }
    if (sc->blk_label) {
        char *f = arena_printf(&w->a, "%s@%s", w->file, sc->blk_label);
        mw_cstr(&w->b, f ? f : w->file);
    } else {
        mw_cstr(&w->b, w->file);
    }
    sb_printf(&w->b, ":%u:0", index);
    if (op && op->location) sb_putc(&w->b, ')');
    sb_puts(&w->b, ")\n");
}

/* ------------------------------------------------------------ variables */

/* The symbol of a variable tensor: its variable_name, else its name. */
static const char *mw_var_symbol(const ctosa_tensor *t) {
    return t->variable_name && t->variable_name[0] ? t->variable_name : t->name;
}

/* Module-level tosa.variable for every variable tensor of every block. */
static void mw_variables(mw *w) {
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(w->g); ri++) {
        const ctosa_region *r = ctosa_graph_region(w->g, ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *blk = r->blocks[bi];
            for (uint32_t i = 0; i < blk->n_tensors && !w->err; i++) {
                const ctosa_tensor *t = blk->tensors[i];
                if (!t->variable) continue;
                const char *sym = mw_var_symbol(t);
                bool seen = strmap_has(&w->var_syms, sym);
                if (!strmap_put(&w->vars, t->name, (void *)sym) ||
                    !strmap_put(&w->var_syms, sym, (void *)sym))
                    mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
                if (seen) continue;
                sb_puts(&w->b, "  \"tosa.variable\"() <{");
                if (t->data.kind != CTOSA_DATA_NONE) {
                    sb_puts(&w->b, "initial_value = ");
                    mw_const_values(w, t);
                    sb_puts(&w->b, ", ");
                }
                sb_puts(&w->b, "sym_name = ");
                mw_cstr(&w->b, sym);
                sb_printf(&w->b, ", type = %s, var_shape = ", mw_elem_or_fail(w, t->dtype, t->name));
                sb_puts(&w->b, t->rank ? "dense<[" : "dense<");
                for (uint32_t d = 0; d < t->rank; d++) sb_printf(&w->b, d ? ", %d" : "%d", t->shape[d]);
                sb_printf(&w->b, t->rank ? "]> : tensor<%uxindex>" : "> : tensor<%uxindex>", t->rank);
                sb_puts(&w->b, "}> : () -> ()");
                mw_scope top = {blk, ri ? r->name : NULL, {0}, NULL, r};
                mw_loc(w, &top, i, NULL);
                mw_maybe_flush(w);
            }
        }
    }
}

/* ------------------------------------------------------------ operators */

static void mw_block_ops(mw *w, mw_scope *sc);

/* The SSA value of operand name, emitting what defines it when it is a
 * constant without a CONST operator or a variable read through a plain
 * operand. */
static mw_val *mw_operand(mw *w, mw_scope *sc, const char *name, uint32_t index) {
    const ctosa_tensor *t = mw_find_tensor(w, sc, name);
    if (t && t->variable) {
        const char *ssa = mw_fresh(w);
        mw_indent(w);
        sb_printf(&w->b, "%s = \"tosa.variable_read\"() <{name = ", ssa);
        mw_cstr(&w->b, mw_var_symbol(t));
        sb_puts(&w->b, "}> : () -> ");
        mw_type(w, t);
        mw_loc(w, sc, index, NULL);
        mw_bind(w, sc, name, ssa, t);
        return mw_lookup(sc, name);
    }
    mw_val *v = mw_lookup(sc, name);
    if (v) return v;
    if (!t || t->data.kind == CTOSA_DATA_NONE) {
        mw_fail(w, CTOSA_ERR_FORMAT, "%s%s%s operator %u reads '%s', which nothing defines before it",
                w->file, sc->blk_label ? " block " : "", sc->blk_label ? sc->blk_label : "", index, name);
        return NULL;
    }
    const char *ssa = mw_fresh(w);
    mw_indent(w);
    sb_printf(&w->b, "%s = \"tosa.%s\"() <{values = ", ssa, t->is_shape ? "const_shape" : "const");
    mw_const_values(w, t);
    sb_puts(&w->b, "}> : () -> ");
    mw_type(w, t);
    mw_loc(w, sc, index, NULL);
    mw_bind(w, sc, name, ssa, t);
    return mw_lookup(sc, name);
}

/* How MLIR spells the enums of the attribute tables. */
static const char *mw_enum_attr(const char *enum_type) {
    static const char *const map[][2] = {{"NanPropagationMode", "nan_mode"},
                                         {"RoundingMode", "rounding_mode"},
                                         {"ResizeMode", "resize_mode"},
                                         {"BlockSize", "block_size"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], enum_type) == 0) return map[i][1];
    return NULL;
}

/* Fields MLIR holds as regions of the operation, not as attributes. */
static bool mw_region_field(const char *name) {
    return !strcmp(name, "then_graph") || !strcmp(name, "else_graph") || !strcmp(name, "cond_graph") ||
           !strcmp(name, "body_graph");
}

/* A scalar attribute typed as the operator's input (CLAMP min_val/max_val):
 * the little-endian bytes as an integer, or as a float's bit pattern. */
static void mw_typed_scalar(mw *w, const ctosa_bytes *v, ctosa_dtype dt) {
    const char *elem = mw_elem(dt);
    uint64_t u = 0;
    for (uint32_t i = 0; i < v->n && i < 8; i++) u |= (uint64_t)v->p[i] << (8 * i);
    int bits = ctosa_dtype_bits(dt);
    if (!elem || bits <= 0 || bits > 64) {
        mw_fail(w, CTOSA_ERR_UNSUPPORTED, "CLAMP bound of dtype %s", ctosa_dtype_name(dt));
        return;
    }
    if (mw_is_float(dt)) {
        sb_printf(&w->b, "0x%0*llX : %s", (bits + 3) / 4, (unsigned long long)u, elem);
    } else if (dt == CTOSA_DTYPE_BOOL) {
        sb_puts(&w->b, u ? "true" : "false");
    } else {
        int64_t s = bits == 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
        sb_printf(&w->b, "%lld : %s", (long long)s, elem);
    }
}

/* <{...}> of op from its attribute table; nothing when it has no fields. */
static void mw_attrs(mw *w, const ctosa_op *op, const ctosa_tensor *in0) {
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &nf);
    bool open = false;
    for (uint32_t i = 0; f && i < nf && !w->err; i++) {
        const char *src = (const char *)&op->attr + f[i].offset;
        if (mw_region_field(f[i].name)) continue;
        uint32_t ev = 0;
        if (f[i].kind == CTOSA_FIELD_ENUM) {
            memcpy(&ev, src, sizeof ev);
            if (ev == 0) continue; /* UNKNOWN: MLIR's default applies */
        }
        sb_puts(&w->b, open ? ", " : " <{");
        open = true;
        sb_printf(&w->b, "%s = ", f[i].name);
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: {
            int32_t v;
            memcpy(&v, src, sizeof v);
            sb_printf(&w->b, "%d : i32", v);
            break;
        }
        case CTOSA_FIELD_BOOL: sb_puts(&w->b, *(const bool *)src ? "true" : "false"); break;
        case CTOSA_FIELD_ENUM: {
            const char *nm = ctosa_enum_value_name(f[i].enum_type, ev);
            const char *mn = mw_enum_attr(f[i].enum_type);
            if (nm && strcmp(nm, "NEAREST") == 0) nm = "NEAREST_NEIGHBOR"; /* MLIR's spelling */
            if (!nm || !mn) {
                mw_fail(w, CTOSA_ERR_FORMAT, "%s: %s value %u is not a %s", ctosa_op_name(op->kind),
                        f[i].name, ev, f[i].enum_type);
                break;
            }
            sb_printf(&w->b, "#tosa.%s<%s>", mn, nm);
            break;
        }
        case CTOSA_FIELD_DTYPE: {
            ctosa_dtype v;
            memcpy(&v, src, sizeof v);
            sb_puts(&w->b, mw_elem_or_fail(w, v, f[i].name));
            break;
        }
        case CTOSA_FIELD_I32_VEC: {
            /* MLIR holds perms as i32, the other vectors as i64 */
            const ctosa_i32s *v = (const ctosa_i32s *)src;
            sb_printf(&w->b, "array<%s", strcmp(f[i].name, "perms") == 0 ? "i32" : "i64");
            for (uint32_t k = 0; k < v->n; k++) sb_printf(&w->b, k ? ", %d" : ": %d", v->v[k]);
            sb_putc(&w->b, '>');
            break;
        }
        case CTOSA_FIELD_STRING: mw_cstr(&w->b, *(const char *const *)src); break;
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *v = (const ctosa_bytes *)src;
            if (f[i].name[0] == 'm') /* min_val / max_val: typed as the input */
                mw_typed_scalar(w, v, in0 ? in0->dtype : CTOSA_DTYPE_UNKNOWN);
            else mw_str(&w->b, v->p ? (const char *)v->p : "", v->n);
            break;
        }
        }
    }
    if (open) sb_puts(&w->b, "}>");
}

/* Where a control-flow operator's graph name leads: a region, or a block
 * of the calling region (both forms are read; ctosa_graph_find_called). */
static const ctosa_block *mw_cf_block(const ctosa_graph *g, const mw_scope *sc, const char *name,
                                      const ctosa_region **r) {
    const ctosa_region *from = NULL;
    for (; sc && !from; sc = sc->up) from = sc->rgn;
    return name ? ctosa_graph_find_called(g, from, name, r) : NULL;
}

/* One region of a control-flow operator: block arguments bound to the
 * sub-block's inputs (typed like args), its operators, tosa.yield of its
 * outputs. */
static void mw_region(mw *w, mw_scope *sc, const ctosa_region *rgn, const ctosa_block *sub, const char *label,
                      const mw_val *const *args, uint32_t n_args, uint32_t op_index) {
    if (sub->n_inputs != n_args) {
        mw_fail(w, CTOSA_ERR_FORMAT,
                "%s operator %u: region '%s' has %u inputs, the operator "
                "passes %u",
                w->file, op_index, label, sub->n_inputs, n_args);
        return;
    }
    mw_scope in = {sub, label, {0}, sc, rgn};
    strmap_init(&in.vals);
    sb_puts(&w->b, "{\n");
    w->depth++;
    if (n_args) {
        for (uint32_t i = 0; i < w->depth + 1; i++) sb_puts(&w->b, "  ");
        sb_puts(&w->b, "^bb0(");
        for (uint32_t i = 0; i < n_args; i++) {
            const ctosa_tensor *t = ctosa_block_find_tensor(w->g, sub, sub->inputs[i]);
            if (!t) t = args[i]->t;
            const char *ssa = mw_fresh(w);
            sb_printf(&w->b, i ? ", %s: " : "%s: ", ssa);
            mw_type(w, t);
            mw_bind(w, &in, sub->inputs[i], ssa, t);
        }
        sb_puts(&w->b, "):\n");
    }
    mw_block_ops(w, &in);
    const mw_val **outs = calloc(sub->n_outputs ? sub->n_outputs : 1, sizeof *outs);
    if (!outs) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; outs && i < sub->n_outputs && !w->err; i++)
        outs[i] = mw_operand(w, &in, sub->outputs[i], sub->n_ops);
    if (outs && !w->err) {
        mw_indent(w);
        sb_puts(&w->b, "\"tosa.yield\"(");
        for (uint32_t i = 0; i < sub->n_outputs; i++) sb_printf(&w->b, i ? ", %s" : "%s", outs[i]->ssa);
        sb_puts(&w->b, ") : (");
        for (uint32_t i = 0; i < sub->n_outputs; i++) {
            if (i) sb_puts(&w->b, ", ");
            mw_type(w, outs[i]->t);
        }
        sb_puts(&w->b, ") -> ()");
        mw_loc(w, &in, sub->n_ops, NULL);
    }
    free(outs);
    w->depth--;
    mw_indent(w);
    sb_putc(&w->b, '}');
    strmap_free(&in.vals);
}

static void mw_op(mw *w, mw_scope *sc, uint32_t index) {
    const ctosa_op *op = sc->blk->ops[index];
    const char *name = ctosa_op_name(op->kind);
    if (!name) {
        mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u: unknown operator %d", w->file, index, (int)op->kind);
        return;
    }
    if (op->kind == CTOSA_OP_VARIABLE) return; /* declared at module level */
    bool is_const = op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE;
    const ctosa_tensor *vt = NULL; /* VARIABLE_WRITE's variable when it is the output */
    uint32_t n_in = op->n_inputs;
    const char *var_sym = NULL;
    if (op->kind == CTOSA_OP_VARIABLE_READ || op->kind == CTOSA_OP_VARIABLE_WRITE) {
        /* The variable is input 0 (READ, WRITE with two inputs) or the
         * output (WRITE with one input); MLIR names it by symbol. */
        const char *vn = op->kind == CTOSA_OP_VARIABLE_WRITE && op->n_inputs == 1 && op->n_outputs
                             ? op->outputs[0]
                         : op->n_inputs ? op->inputs[0]
                                        : NULL;
        vt = vn ? mw_find_tensor(w, sc, vn) : NULL;
        if (!vt) {
            mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u (%s) names no variable", w->file, index, name);
            return;
        }
        var_sym = strmap_get(&w->vars, vt->name);
        if (!var_sym) var_sym = mw_var_symbol(vt);
    }
    mw_val **in = calloc(n_in ? n_in : 1, sizeof *in);
    if (!in) {
        mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        return;
    }
    uint32_t first = 0, n_use = is_const ? 0 : n_in;
    if (op->kind == CTOSA_OP_VARIABLE_READ) n_use = 0;
    if (op->kind == CTOSA_OP_VARIABLE_WRITE && n_in >= 2) first = 1;
    for (uint32_t i = first; i < n_use && !w->err; i++) in[i] = mw_operand(w, sc, op->inputs[i], index);
    const ctosa_tensor **out = calloc(op->n_outputs ? op->n_outputs : 1, sizeof *out);
    if (!out) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
    uint32_t n_out = op->kind == CTOSA_OP_VARIABLE_WRITE ? 0 : op->n_outputs;
    for (uint32_t i = 0; out && i < n_out && !w->err; i++) {
        out[i] = mw_find_tensor(w, sc, op->outputs[i]);
        if (!out[i])
            mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u (%s): output '%s' is not a tensor of the block",
                    w->file, index, name, op->outputs[i]);
    }
    if (w->err) goto done;

    const char *res = n_out ? mw_fresh(w) : NULL;
    mw_indent(w);
    if (n_out == 1) sb_printf(&w->b, "%s = ", res);
    else if (n_out > 1) sb_printf(&w->b, "%s:%u = ", res, n_out);
    sb_puts(&w->b, "\"tosa.");
    for (const char *p = name; *p; p++) sb_putc(&w->b, (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p));
    sb_puts(&w->b, "\"(");
    for (uint32_t i = first; i < n_use; i++) sb_printf(&w->b, i > first ? ", %s" : "%s", in[i]->ssa);
    sb_putc(&w->b, ')');
    if (is_const) {
        const ctosa_tensor *t = n_out ? out[0] : NULL;
        if (!t || t->data.kind == CTOSA_DATA_NONE) {
            mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u (%s): output has no constant data", w->file, index,
                    name);
            goto done;
        }
        sb_puts(&w->b, " <{values = ");
        mw_const_values(w, t);
        sb_puts(&w->b, "}>");
    } else if (var_sym) {
        sb_puts(&w->b, " <{name = ");
        mw_cstr(&w->b, var_sym);
        sb_puts(&w->b, "}>");
    } else {
        mw_attrs(w, op, n_in && in[0] ? in[0]->t : NULL);
    }
    if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) {
        bool cond_if = op->kind == CTOSA_OP_COND_IF;
        const char *names[2] = {cond_if ? op->attr.then_graph : op->attr.cond_graph,
                                cond_if ? op->attr.else_graph : op->attr.body_graph};
        uint32_t skip = cond_if ? 1 : 0; /* COND_IF's condition is no region argument */
        if (cond_if && n_in < 1)
            mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u: COND_IF without a condition", w->file, index);
        sb_puts(&w->b, " (");
        for (int k = 0; k < 2 && !w->err; k++) {
            const ctosa_region *rgn = NULL;
            const ctosa_block *sub = mw_cf_block(w->g, sc, names[k], &rgn);
            if (!sub) {
                mw_fail(w, CTOSA_ERR_FORMAT, "%s operator %u (%s): region or block '%s' does not exist",
                        w->file, index, name, names[k] ? names[k] : "(none)");
                break;
            }
            if (k) sb_puts(&w->b, ", ");
            mw_region(w, sc, rgn, sub, names[k], (const mw_val *const *)in + skip, n_in - skip, index);
        }
        sb_putc(&w->b, ')');
    }
    sb_puts(&w->b, " : (");
    for (uint32_t i = first; i < n_use; i++) {
        if (i > first) sb_puts(&w->b, ", ");
        mw_type(w, in[i]->t);
    }
    sb_puts(&w->b, ") -> ");
    if (n_out != 1) sb_putc(&w->b, '(');
    for (uint32_t i = 0; i < n_out; i++) {
        if (i) sb_puts(&w->b, ", ");
        mw_type(w, out[i]);
    }
    if (n_out != 1) sb_putc(&w->b, ')');
    mw_loc(w, sc, index, op);
    for (uint32_t i = 0; i < n_out; i++) {
        const char *ssa = n_out == 1 ? res : arena_printf(&w->a, "%s#%u", res, i);
        if (!ssa) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        else mw_bind(w, sc, op->outputs[i], ssa, out[i]);
    }
done:
    free(in);
    free(out);
}

static void mw_block_ops(mw *w, mw_scope *sc) {
    for (uint32_t i = 0; i < sc->blk->n_ops && !w->err; i++) {
        mw_op(w, sc, i);
        mw_maybe_flush(w);
    }
}

/* ------------------------------------------------------------ functions */

/* func.func @main: arguments = main block inputs, results = its outputs. */
static void mw_main(mw *w, const ctosa_region *rgn, const ctosa_block *blk) {
    mw_scope sc = {blk, NULL, {0}, NULL, rgn};
    strmap_init(&sc.vals);
    sb_puts(&w->b, "  func.func @main(");
    for (uint32_t i = 0; i < blk->n_inputs && !w->err; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(w->g, blk, blk->inputs[i]);
        if (!t) {
            mw_fail(w, CTOSA_ERR_FORMAT, "%s: graph input '%s' is not a tensor of the main block", w->file,
                    blk->inputs[i]);
            break;
        }
        const char *ssa = arena_printf(&w->a, "%%arg%u", i);
        if (!ssa) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        sb_printf(&w->b, i ? ", %s: " : "%s: ", ssa ? ssa : "");
        mw_type(w, t);
        mw_bind(w, &sc, blk->inputs[i], ssa, t);
    }
    sb_puts(&w->b, ") -> (");
    for (uint32_t i = 0; i < blk->n_outputs && !w->err; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(w->g, blk, blk->outputs[i]);
        if (!t) {
            mw_fail(w, CTOSA_ERR_FORMAT, "%s: graph output '%s' is not a tensor of the main block", w->file,
                    blk->outputs[i]);
            break;
        }
        if (i) sb_puts(&w->b, ", ");
        mw_type(w, t);
    }
    sb_puts(&w->b, ") {\n");
    mw_block_ops(w, &sc);
    mw_val **outs = calloc(blk->n_outputs ? blk->n_outputs : 1, sizeof *outs);
    if (!outs) mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; outs && i < blk->n_outputs && !w->err; i++)
        outs[i] = mw_operand(w, &sc, blk->outputs[i], blk->n_ops);
    if (outs && !w->err) {
        sb_puts(&w->b, "    \"func.return\"(");
        for (uint32_t i = 0; i < blk->n_outputs; i++) sb_printf(&w->b, i ? ", %s" : "%s", outs[i]->ssa);
        sb_puts(&w->b, ") : (");
        for (uint32_t i = 0; i < blk->n_outputs; i++) {
            if (i) sb_puts(&w->b, ", ");
            mw_type(w, outs[i]->t);
        }
        sb_puts(&w->b, ") -> ()");
        mw_loc(w, &sc, blk->n_ops, NULL);
    }
    free(outs);
    sb_puts(&w->b, "  }\n");
    strmap_free(&sc.vals);
}

/* func.func @ctosa_run: @main on the given inputs, every output printed as
 * i64 values (floats: their bit patterns) with printMemrefI64. */
static void mw_run(mw *w, const ctosa_block *blk) {
    const ctosa_mlir_options *o = w->opt;
    sb_puts(&w->b, "  func.func private @printMemrefI64(memref<*xi64>) attributes "
                   "{llvm.emit_c_interface}\n  func.func @ctosa_run() {\n");
    for (uint32_t i = 0; i < blk->n_inputs && !w->err; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(w->g, blk, blk->inputs[i]);
        const ctosa_mlir_input *v = NULL;
        for (uint32_t k = 0; k < o->n_inputs; k++)
            if (o->inputs[k].name && strcmp(o->inputs[k].name, blk->inputs[i]) == 0) v = &o->inputs[k];
        if (!v) {
            mw_fail(w, CTOSA_ERR_USAGE, "input '%s' is not given a value", blk->inputs[i]);
            break;
        }
        bool same = t && v->dtype == t->dtype && v->rank == t->rank && !t->is_unranked;
        uint64_t count = 1;
        for (uint32_t d = 0; same && d < t->rank; d++) {
            same = v->shape[d] == t->shape[d] && t->shape[d] >= 0;
            count *= (uint64_t)(same ? v->shape[d] : 0);
        }
        if (!same || mw_src_bytes(t->dtype, true, count) != v->size) {
            mw_fail(w, CTOSA_ERR_USAGE,
                    "input '%s': the value's dtype, shape or size differs from "
                    "the graph input's",
                    blk->inputs[i]);
            break;
        }
        sb_printf(&w->b, "    %%in%u = arith.constant ", i);
        char what[256];
        snprintf(what, sizeof what, "input '%s'", t->name);
        mw_src s = {NULL, v->data};
        mw_dense_hex(w, t->dtype, count, &s, what);
        sb_puts(&w->b, " : ");
        mw_type(w, t);
        sb_putc(&w->b, '\n');
        mw_maybe_flush(w);
    }
    if (w->err) return;
    const ctosa_tensor **outs = calloc(blk->n_outputs ? blk->n_outputs : 1, sizeof *outs);
    if (!outs) {
        mw_fail(w, CTOSA_ERR_NOMEM, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < blk->n_outputs && !w->err; i++) {
        outs[i] = ctosa_block_find_tensor(w->g, blk, blk->outputs[i]);
        if (outs[i] && (outs[i]->is_shape || outs[i]->is_unranked))
            mw_fail(w, CTOSA_ERR_UNSUPPORTED, "output '%s': only ranked tensors can be printed",
                    outs[i]->name);
        for (uint32_t d = 0; outs[i] && d < outs[i]->rank && !w->err; d++)
            if (outs[i]->shape[d] < 0)
                mw_fail(w, CTOSA_ERR_UNSUPPORTED, "output '%s': only static shapes can be printed",
                        outs[i]->name);
    }
    if (w->err) {
        free(outs);
        return;
    }
    sb_puts(&w->b, "    ");
    if (blk->n_outputs) sb_printf(&w->b, blk->n_outputs > 1 ? "%%r:%u = " : "%%r = ", blk->n_outputs);
    sb_puts(&w->b, "func.call @main(");
    for (uint32_t i = 0; i < blk->n_inputs; i++) sb_printf(&w->b, i ? ", %%in%u" : "%%in%u", i);
    sb_puts(&w->b, ") : (");
    for (uint32_t i = 0; i < blk->n_inputs; i++) {
        if (i) sb_puts(&w->b, ", ");
        mw_type(w, ctosa_block_find_tensor(w->g, blk, blk->inputs[i]));
    }
    sb_puts(&w->b, ") -> (");
    for (uint32_t i = 0; i < blk->n_outputs; i++) {
        if (i) sb_puts(&w->b, ", ");
        mw_type(w, outs[i]);
    }
    sb_puts(&w->b, ")\n");
    for (uint32_t i = 0; i < blk->n_outputs; i++) {
        const ctosa_tensor *t = outs[i];
        char r[32];
        if (blk->n_outputs > 1) snprintf(r, sizeof r, "%%r#%u", i);
        else snprintf(r, sizeof r, "%%r");
        const char *v = r;
        if (mw_is_float(t->dtype)) { /* the bits, as an integer of the same width */
            char ib[8];
            snprintf(ib, sizeof ib, "i%d", ctosa_dtype_bits(t->dtype));
            sb_printf(&w->b, "    %%b%u = arith.bitcast %s : ", i, v);
            mw_type(w, t);
            sb_puts(&w->b, " to ");
            mw_type_as(w, t, ib);
            sb_printf(&w->b, "\n    %%x%u = arith.extui %%b%u : ", i, i);
            mw_type_as(w, t, ib);
        } else if (t->dtype != CTOSA_DTYPE_INT64) {
            sb_printf(&w->b, "    %%x%u = arith.%s %s : ", i,
                      t->dtype == CTOSA_DTYPE_BOOL ? "extui" : "extsi", v);
            mw_type(w, t);
        }
        if (t->dtype != CTOSA_DTYPE_INT64) {
            sb_puts(&w->b, " to ");
            mw_type_as(w, t, "i64");
            sb_putc(&w->b, '\n');
            snprintf(r, sizeof r, "%%x%u", i);
        }
        sb_printf(&w->b, "    %%m%u = bufferization.to_buffer %s : ", i, r);
        mw_type_as(w, t, "i64");
        sb_puts(&w->b, " to memref<");
        for (uint32_t d = 0; d < t->rank; d++) sb_printf(&w->b, "%dx", t->shape[d]);
        sb_printf(&w->b, "i64>\n    %%u%u = memref.cast %%m%u : memref<", i, i);
        for (uint32_t d = 0; d < t->rank; d++) sb_printf(&w->b, "%dx", t->shape[d]);
        sb_printf(&w->b,
                  "i64> to memref<*xi64>\n    func.call @printMemrefI64(%%u%u) : "
                  "(memref<*xi64>) -> ()\n",
                  i);
    }
    sb_puts(&w->b, "    func.return\n  }\n");
    free(outs);
}

/* --------------------------------------------------------------- public */

ctosa_error *ctosa_mlir_write(const ctosa_graph *g, const ctosa_mlir_options *opt, ctosa_mlir_sink sink,
                              void *user) {
    ctosa_mlir_options def;
    if (!opt) {
        ctosa_mlir_options_init(&def);
        opt = &def;
    }
    if (!g || !sink) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_mlir_write: no graph or sink");
    const ctosa_region *main_r = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    if (!main_r || !main_r->n_blocks)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: the graph has no main block",
                               opt->source_name ? opt->source_name : "graph");
    mw w = {0};
    w.g = g;
    w.opt = opt;
    w.file = opt->source_name ? opt->source_name : "graph.tosa";
    w.sink = sink;
    w.user = user;
    sb_init(&w.b);
    arena_init(&w.a, 0);
    strmap_init(&w.vars);
    strmap_init(&w.var_syms);
    ctosa_version v = ctosa_graph_version(g);
    sb_printf(&w.b, "// TOSA %d.%d.%d%s graph from ", v.major, v.minor, v.patch, v.draft ? " draft" : "");
    mw_cstr(&w.b, w.file);
    sb_puts(&w.b, ", written by ctosa\nmodule {\n");
    mw_variables(&w);
    if (!w.err) mw_main(&w, main_r, main_r->blocks[0]);
    if (!w.err && (opt->run || opt->n_inputs)) mw_run(&w, main_r->blocks[0]);
    if (!w.err) sb_puts(&w.b, "}\n");
    mw_flush(&w);
    ctosa_error *e = w.err;
    sb_free(&w.b);
    arena_free(&w.a);
    strmap_free(&w.vars);
    strmap_free(&w.var_syms);
    return e;
}

static ctosa_error *mw_file_sink(void *user, const char *text, size_t n) {
    return out_file_write(user, text, n);
}

ctosa_error *ctosa_mlir_write_file(const ctosa_graph *g, const char *path, const ctosa_mlir_options *opt) {
    out_file f;
    ctosa_error *e = out_file_open(&f, path);
    if (e) return e;
    if ((e = ctosa_mlir_write(g, opt, mw_file_sink, &f))) {
        out_file_abort(&f);
        return ctosa_error_prefix(e, "%s", path);
    }
    return out_file_commit(&f);
}

static ctosa_error *mw_mem_sink(void *user, const char *text, size_t n) {
    strbuf *b = user;
    sb_putn(b, text, n);
    return b->failed ? ctosa_error_nomem() : NULL;
}

ctosa_error *ctosa_mlir_write_memory(const ctosa_graph *g, const ctosa_mlir_options *opt, char **text,
                                     size_t *len) {
    strbuf b;
    sb_init(&b);
    *text = NULL;
    *len = 0;
    ctosa_error *e = ctosa_mlir_write(g, opt, mw_mem_sink, &b);
    if (e) {
        sb_free(&b);
        return e;
    }
    *len = b.len;
    *text = sb_take(&b);
    if (!*text) return ctosa_error_nomem();
    return NULL;
}
