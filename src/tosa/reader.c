/* reader.c - TOSA flatbuffer -> ctosa_graph.
 *
 * The file is mapped and verified completely by fb_verify() first; only
 * then is it decoded. Decoding builds the graph directly in its arena (not
 * through the builder) so that nothing is copied more often than it appears
 * in the file:
 *   - constant data (TosaTensor.data, TosaShape.data, external segments) and
 *     byte attributes stay in the mapping (zero copy; data may be only
 *     4-byte aligned, docs/tosa-format.md, so users must not assume more);
 *   - strings are copied once per distinct file position (a cache keyed by
 *     offset), with a byte budget that bounds what overlapping strings in a
 *     hostile file could cost;
 *   - int32 vectors (shapes, attribute lists) are copied (alignment); the
 *     verifier counted their elements against its visit cap.
 *
 * Semantic checks made here are the ones memory safety depends on: data
 * size against shape × element size, element-count overflow, dimension
 * signs, known dtype and operator values. Everything else (types allowed,
 * argument counts, ...) is the validator's job.
 *
 * Numbering: 1.0-final and 1.1-draft files share one numbering (1.1 only
 * appends). Files labelled "1.1.0 draft" may instead come from the 2024-25
 * draft serializers with the older numbering (docs/tosa-format.md). When such a label
 * comes without a SoftwareVersion, these hints reject the file:
 *   - op 76 with no inputs (CONST_SHAPE in the old numbering; in the new it
 *     is MATMUL_T_BLOCK_SCALED, which has inputs);
 *   - op 72 with inputs and no outputs (YIELD in the old numbering; VARIABLE
 *     in the new, which has no inputs);
 *   - constant data whose length fits the old element size but not the new
 *     one (e.g. FP32=8 in the old numbering is FP16 in the new).
 */
#include <stdlib.h>
#include <string.h>

#include "fb_verify.h"
#include "graph_internal.h"

/* ---------------------------------------------------------- string cache */

typedef struct strcache {
    uint64_t *keys; /* 0 = empty (no string lives at byte 0) */
    const char **vals;
    uint32_t cap, count;
} strcache;

static void sc_free(strcache *c) {
    free(c->keys);
    free(c->vals);
}

static bool sc_grow(strcache *c) {
    uint32_t ncap = c->cap ? c->cap * 2 : 256;
    uint64_t *k = calloc(ncap, sizeof *k);
    const char **v = calloc(ncap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return false;
    }
    for (uint32_t i = 0; i < c->cap; i++) {
        if (!c->keys[i]) continue;
        uint32_t j = (uint32_t)(c->keys[i] * 0x9E3779B97F4A7C15ull >> 40) & (ncap - 1);
        while (k[j]) j = (j + 1) & (ncap - 1);
        k[j] = c->keys[i];
        v[j] = c->vals[i];
    }
    sc_free(c);
    c->keys = k;
    c->vals = v;
    c->cap = ncap;
    return true;
}

/* ------------------------------------------------------------- decoder */

typedef struct reader {
    fb_buf b;
    fb_summary s;
    ctosa_graph *g;
    strcache sc;
    uint64_t str_bytes, str_budget;
    bool suspect_old_numbering; /* labelled 1.1 draft, no SoftwareVersion */
    uint64_t min_external;      /* smallest external data offset */
    uint64_t min_align;
    ctosa_error *err;
} reader;

static bool rfail(reader *r, ctosa_code code, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool rfail(reader *r, ctosa_code code, uint64_t at, const char *fmt, ...) {
    if (r->err) return false;
    va_list ap;
    va_start(ap, fmt);
    strbuf sb;
    sb_init(&sb);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    r->err = ctosa_error_new(code, "%s: byte %llu: %s", r->b.name, (unsigned long long)at,
                             sb.s ? sb.s : "out of memory");
    sb_free(&sb);
    return false;
}

static bool nomem(reader *r) {
    if (!r->err) r->err = ctosa_error_nomem();
    return false;
}

static bool old_numbering(reader *r, uint64_t at, const char *why) {
    return rfail(r, CTOSA_ERR_UNSUPPORTED, at,
                 "%s: the file says TOSA %d.%d.%d draft but looks written with the pre-1.0-final "
                 "numbering of 2024-25 draft serializers (UINT8=2, FP32=8, YIELD=72), which ctosa "
                 "does not read",
                 why, r->s.major, r->s.minor, r->s.patch);
}

/* The string at pos, copied once per position; def when pos is 0. */
static bool get_str(reader *r, uint64_t pos, const char *def, const char **out) {
    *out = def;
    if (!pos) return true;
    if (r->sc.count * 2 >= r->sc.cap && !sc_grow(&r->sc)) return nomem(r);
    uint32_t j = (uint32_t)(pos * 0x9E3779B97F4A7C15ull >> 40) & (r->sc.cap - 1);
    while (r->sc.keys[j]) {
        if (r->sc.keys[j] == pos) {
            *out = r->sc.vals[j];
            return true;
        }
        j = (j + 1) & (r->sc.cap - 1);
    }
    uint32_t n = fb_len(&r->b, pos);
    if (pos + 4 + (uint64_t)n >= r->b.size) /* verified; defensive */
        return rfail(r, CTOSA_ERR_FORMAT, pos, "string runs past the end of the file");
    r->str_bytes += (uint64_t)n + 1;
    if (r->str_bytes > r->str_budget)
        return rfail(r, CTOSA_ERR_FORMAT, pos,
                     "strings hold more than %llu bytes in a file of %llu bytes (overlapping "
                     "strings?)",
                     (unsigned long long)r->str_budget, (unsigned long long)r->b.size);
    char *s = arena_strndup(&r->g->arena, (const char *)r->b.p + pos + 4, n);
    if (!s) return nomem(r);
    r->sc.keys[j] = pos;
    r->sc.vals[j] = s;
    r->sc.count++;
    *out = s;
    return true;
}

/* A vector of strings as an arena array (NULL when empty). */
static bool get_strs(reader *r, uint64_t vec, uint32_t *n_out, const char ***out) {
    uint32_t n = fb_len(&r->b, vec);
    *n_out = 0;
    *out = NULL;
    if (!n) return true;
    const char **a = arena_alloc(&r->g->arena, (size_t)n * sizeof *a);
    if (!a) return nomem(r);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = fb_vec_ref(&r->b, vec, i);
        if (!s) return rfail(r, CTOSA_ERR_FORMAT, vec, "string vector element %u is invalid", i);
        if (!get_str(r, s, "", &a[i])) return false;
    }
    *n_out = n;
    *out = a;
    return true;
}

static bool get_i32s(reader *r, uint64_t vec, ctosa_i32s *out) {
    out->v = NULL;
    out->n = fb_len(&r->b, vec);
    if (!out->n) return true;
    if (vec + 4 + 4 * (uint64_t)out->n > r->b.size)
        return rfail(r, CTOSA_ERR_FORMAT, vec, "int32 vector runs past the end of the file");
    int32_t *a = arena_alloc(&r->g->arena, (size_t)out->n * sizeof *a);
    if (!a) return nomem(r);
    for (uint32_t i = 0; i < out->n; i++) a[i] = (int32_t)rd_u32(r->b.p + vec + 4 + 4 * (uint64_t)i);
    out->v = a;
    return true;
}

/* Records where a constant's bytes start (for info.min_data_alignment). */
static void note_alignment(reader *r, uint64_t off) {
    uint64_t a = off ? (off & (~off + 1)) : 4096;
    if (a > 4096) a = 4096;
    if (!r->min_align || a < r->min_align) r->min_align = a;
}

/* Element size in bits under the pre-final draft numbering. */
static int old_dtype_bits(uint32_t t) {
    static const int bits[] = {0, 8, 8, 4, 8, 16, 32, 48, 32, 16, 16, 16, 64, 8, 8};
    return t < CTOSA_ARRAY_LEN(bits) ? bits[t] : 0;
}

static uint64_t bits_to_bytes(int bits, uint64_t n) {
    if (bits <= 0) return 0;
    if (bits == 4) return n / 2 + (n & 1);
    return n * (uint64_t)(bits / 8); /* n <= 2^62 and bits <= 64: no overflow */
}

/* Data of length len at file offset off for tensor t (elements n). */
static bool set_data(reader *r, ctosa_tensor *t, uint64_t at, uint64_t off, uint64_t len, uint64_t n,
                     bool external) {
    uint64_t need;
    if (!ctosa_dtype_storage_size(t->dtype, n, &need))
        return rfail(r, CTOSA_ERR_FORMAT, at,
                     "tensor '%s': constant data of type %s with %llu elements cannot be stored", t->name,
                     ctosa_dtype_name(t->dtype), (unsigned long long)n);
    if (r->suspect_old_numbering && !t->is_shape) {
        uint64_t old = bits_to_bytes(old_dtype_bits(t->dtype), n);
        bool fits_old = old && len >= old && len <= ((old + 7) & ~7ull);
        if (fits_old && (len < need || (old > need && len > ((need + 7) & ~7ull))))
            return old_numbering(r, at, "constant data sizes");
    }
    if (len < need)
        return rfail(r, CTOSA_ERR_FORMAT, at,
                     "tensor '%s': %s data holds %llu bytes but %llu elements of %s need %llu", t->name,
                     external ? "external" : "inline", (unsigned long long)len, (unsigned long long)n,
                     ctosa_dtype_name(t->dtype), (unsigned long long)need);
    t->data.kind = CTOSA_DATA_MEMORY;
    t->data.ptr = r->b.p + off;
    t->data.size = need; /* the C++ writer pads to 8: keep the real size */
    r->g->info.constant_bytes += need;
    note_alignment(r, off);
    return true;
}

static bool read_tensor(reader *r, uint64_t tp, ctosa_tensor **out) {
    const fb_buf *b = &r->b;
    ctosa_tensor *t = arena_zalloc(&r->g->arena, sizeof *t);
    if (!t) return nomem(r);
    t->data.fd = -1;
    if (!get_str(r, fb_ref(b, tp, FB_TENSOR_NAME), "", &t->name)) return false;
    uint32_t type = fb_u32(b, tp, FB_TENSOR_TYPE, 0);
    if (type >= CTOSA_DTYPE_COUNT)
        return rfail(r, CTOSA_ERR_FORMAT, fb_field(b, tp, FB_TENSOR_TYPE),
                     "tensor '%s': unknown data type value %u", t->name, type);
    t->dtype = (ctosa_dtype)type;
    ctosa_i32s shp;
    if (!get_i32s(r, fb_ref(b, tp, FB_TENSOR_SHAPE), &shp)) return false;
    t->rank = shp.n;
    t->shape = shp.v;
    t->variable = fb_u8(b, tp, FB_TENSOR_VARIABLE, 0) != 0;
    t->is_unranked = fb_u8(b, tp, FB_TENSOR_IS_UNRANKED, 0) != 0;
    if (!get_str(r, fb_ref(b, tp, FB_TENSOR_VARIABLE_NAME), NULL, &t->variable_name)) return false;

    uint64_t dvec = fb_ref(b, tp, FB_TENSOR_DATA);
    uint32_t dlen = fb_len(b, dvec);
    uint64_t off = fb_u64(b, tp, FB_TENSOR_OFFSET, 0), size = fb_u64(b, tp, FB_TENSOR_SIZE, 0);
    bool external = off > 1, constant = dlen > 0 || external;

    /* Dimensions: -1 marks a dynamic dimension of a non-constant tensor. */
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        int32_t d = t->shape[i];
        if (d < -1 || (d < 0 && constant))
            return rfail(r, CTOSA_ERR_FORMAT, fb_ref(b, tp, FB_TENSOR_SHAPE) + 4 + 4 * (uint64_t)i,
                         "tensor '%s': dimension %u is %d", t->name, i, d);
        if (d >= 0 && (!mul_u64(n, (uint64_t)d, &n) || n > (1ull << 62)))
            return rfail(r, CTOSA_ERR_FORMAT, fb_ref(b, tp, FB_TENSOR_SHAPE),
                         "tensor '%s': element count overflows", t->name);
    }
    if (!constant) {
        *out = t;
        return true;
    }
    if (t->is_unranked)
        return rfail(r, CTOSA_ERR_FORMAT, tp, "tensor '%s': an unranked tensor cannot hold data", t->name);
    if (external) {
        uint64_t end;
        if (dlen)
            return rfail(r, CTOSA_ERR_FORMAT, fb_field(b, tp, FB_TENSOR_OFFSET),
                         "tensor '%s': has both inline data (%u bytes) and external offset %llu", t->name,
                         dlen, (unsigned long long)off);
        if (!add_u64(off, size, &end) || end > b->size)
            return rfail(r, CTOSA_ERR_FORMAT, fb_field(b, tp, FB_TENSOR_OFFSET),
                         "tensor '%s': external data at offset %llu size %llu runs past the end "
                         "of the file (size %llu)",
                         t->name, (unsigned long long)off, (unsigned long long)size,
                         (unsigned long long)b->size);
        r->g->info.external_data = true;
        if (!r->min_external || off < r->min_external) r->min_external = off;
        if (!set_data(r, t, fb_field(b, tp, FB_TENSOR_SIZE), off, size, n, true)) return false;
    } else if (!set_data(r, t, dvec, dvec + 4, dlen, n, false)) {
        return false;
    }
    *out = t;
    return true;
}

static bool read_shape(reader *r, uint64_t sp, ctosa_tensor **out) {
    const fb_buf *b = &r->b;
    ctosa_tensor *t = arena_zalloc(&r->g->arena, sizeof *t);
    int32_t *dim = arena_alloc(&r->g->arena, sizeof *dim);
    if (!t || !dim) return nomem(r);
    t->data.fd = -1;
    if (!get_str(r, fb_ref(b, sp, FB_SHAPE_NAME), "", &t->name)) return false;
    uint32_t rank = fb_u32(b, sp, FB_SHAPE_RANK, 0);
    if (rank > INT32_MAX)
        return rfail(r, CTOSA_ERR_FORMAT, fb_field(b, sp, FB_SHAPE_RANK), "shape '%s': rank %u is too large",
                     t->name, rank);
    *dim = (int32_t)rank;
    t->is_shape = true;
    t->dtype = CTOSA_DTYPE_SHAPE;
    t->rank = 1;
    t->shape = dim;
    uint64_t dvec = fb_ref(b, sp, FB_SHAPE_DATA);
    uint32_t dlen = fb_len(b, dvec);
    if (dlen && !set_data(r, t, dvec, dvec + 4, dlen, rank, false)) return false;
    *out = t;
    return true;
}

static bool read_attr(reader *r, uint64_t ap, ctosa_op_kind kind, ctosa_attr *a) {
    const fb_buf *b = &r->b;
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(kind, &nf);
    for (uint32_t i = 0; f && i < nf; i++) {
        char *dst = (char *)a + f[i].offset;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: {
            int32_t v = fb_i32(b, ap, i, 0);
            memcpy(dst, &v, sizeof v);
            break;
        }
        case CTOSA_FIELD_BOOL: *(bool *)dst = fb_u8(b, ap, i, 0) != 0; break;
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE: {
            /* Stored as uint32 in the file, an int-sized C enum here. */
            ctosa_dtype v = (ctosa_dtype)fb_u32(b, ap, i, 0);
            memcpy(dst, &v, sizeof v);
            break;
        }
        case CTOSA_FIELD_I32_VEC:
            if (!get_i32s(r, fb_ref(b, ap, i), (ctosa_i32s *)dst)) return false;
            break;
        case CTOSA_FIELD_BYTES: {
            uint64_t v = fb_ref(b, ap, i);
            ctosa_bytes *o = (ctosa_bytes *)dst;
            o->n = fb_len(b, v);
            o->p = o->n ? b->p + v + 4 : NULL; /* zero copy, no alignment needed */
            break;
        }
        case CTOSA_FIELD_STRING:
            if (!get_str(r, fb_ref(b, ap, i), NULL, (const char **)dst)) return false;
            break;
        }
    }
    return true;
}

static bool read_op(reader *r, uint64_t opp, uint32_t index, ctosa_op **out) {
    const fb_buf *b = &r->b;
    ctosa_op *op = arena_zalloc(&r->g->arena, sizeof *op);
    if (!op) return nomem(r);
    uint32_t kind = fb_u32(b, opp, FB_OP_OP, 0);
    if (kind == 0 || kind >= CTOSA_OP_COUNT)
        return rfail(r, CTOSA_ERR_FORMAT, fb_field(b, opp, FB_OP_OP) ? fb_field(b, opp, FB_OP_OP) : opp,
                     "operator #%u: unknown operator value %u", index, kind);
    op->kind = (ctosa_op_kind)kind;
    /* The union member normally equals the operator, but Arm's translator
     * writes e.g. IDENTITY with a VariableReadAttribute (see the official
     * LSTM example), so a mismatch is accepted. Its fields are decoded only
     * when both tables have the same layout; otherwise the attributes stay
     * zero (the member table was verified all the same). */
    uint8_t at = fb_u8(b, opp, FB_OP_ATTRIBUTE_TYPE, 0);
    uint32_t n1, n2;
    bool same_layout = at == kind || (at != 0 && ctosa_op_attr_fields((ctosa_op_kind)at, &n1) ==
                                                     ctosa_op_attr_fields(op->kind, &n2));
    if (!get_strs(r, fb_ref(b, opp, FB_OP_INPUTS), &op->n_inputs, &op->inputs) ||
        !get_strs(r, fb_ref(b, opp, FB_OP_OUTPUTS), &op->n_outputs, &op->outputs))
        return false;
    if (r->suspect_old_numbering) {
        if (kind == 76 && op->n_inputs == 0)
            return old_numbering(r, opp, "operator value 76 without inputs (CONST_SHAPE?)");
        if (kind == 72 && op->n_inputs > 0 && op->n_outputs == 0)
            return old_numbering(r, opp, "operator value 72 with inputs and no outputs (YIELD?)");
    }
    uint64_t ap = at && same_layout ? fb_ref(b, opp, FB_OP_ATTRIBUTE) : 0;
    if (ap && !read_attr(r, ap, op->kind, &op->attr)) return false;
    uint64_t loc = fb_ref(b, opp, FB_OP_LOCATION);
    if (loc && !get_str(r, fb_ref(b, loc, FB_LOCATION_TEXT), NULL, &op->location)) return false;
    *out = op;
    return true;
}

static bool add_name(reader *r, strmap *names, ctosa_block *blk, ctosa_tensor *t, uint64_t at) {
    if (strmap_has(names, t->name))
        return rfail(r, CTOSA_ERR_FORMAT, at, "block '%s': tensor '%s' is defined twice", blk->name, t->name);
    return strmap_put(names, t->name, t) || nomem(r);
}

/* Allocates an exact-size pointer array for n entries. */
static bool alloc_ptrs(reader *r, uint32_t n, void ***arr) {
    *arr = NULL;
    if (!n) return true;
    *arr = arena_zalloc(&r->g->arena, (size_t)n * sizeof(void *));
    return *arr || nomem(r);
}

static bool read_block(reader *r, uint64_t bp, ctosa_block **out) {
    const fb_buf *b = &r->b;
    ctosa_block *blk = arena_zalloc(&r->g->arena, sizeof *blk);
    if (!blk) return nomem(r);
    if (!get_str(r, fb_ref(b, bp, FB_BLOCK_NAME), "", &blk->name)) return false;
    uint64_t tv = fb_ref(b, bp, FB_BLOCK_TENSORS), sv = fb_ref(b, bp, FB_BLOCK_SHAPES),
             ov = fb_ref(b, bp, FB_BLOCK_OPERATORS);
    uint32_t nt = fb_len(b, tv), ns = fb_len(b, sv), no = fb_len(b, ov);
    if (!alloc_ptrs(r, nt, (void ***)&blk->tensors) || !alloc_ptrs(r, ns, (void ***)&blk->shapes) ||
        !alloc_ptrs(r, no, (void ***)&blk->ops))
        return false;
    strmap names;
    strmap_init(&names);
    bool ok = true;
    for (uint32_t i = 0; ok && i < nt; i++) {
        uint64_t tp = fb_vec_ref(b, tv, i);
        ok = read_tensor(r, tp, &blk->tensors[i]) && add_name(r, &names, blk, blk->tensors[i], tp);
        if (ok) blk->n_tensors++;
    }
    for (uint32_t i = 0; ok && i < ns; i++) {
        uint64_t sp = fb_vec_ref(b, sv, i);
        ok = read_shape(r, sp, &blk->shapes[i]) && add_name(r, &names, blk, blk->shapes[i], sp);
        if (ok) blk->n_shapes++;
    }
    strmap_free(&names);
    for (uint32_t i = 0; ok && i < no; i++) {
        ok = read_op(r, fb_vec_ref(b, ov, i), i, &blk->ops[i]);
        if (ok) blk->n_ops++;
    }
    if (!ok) return false;
    if (!get_strs(r, fb_ref(b, bp, FB_BLOCK_INPUTS), &blk->n_inputs, &blk->inputs) ||
        !get_strs(r, fb_ref(b, bp, FB_BLOCK_OUTPUTS), &blk->n_outputs, &blk->outputs))
        return false;
    /* Exact capacities: a later builder call grows the arrays as usual. */
    blk->cap_ops_ = blk->n_ops;
    blk->cap_tensors_ = blk->n_tensors;
    blk->cap_shapes_ = blk->n_shapes;
    blk->cap_inputs_ = blk->n_inputs;
    blk->cap_outputs_ = blk->n_outputs;
    *out = blk;
    return true;
}

static bool read_graph(reader *r) {
    const fb_buf *b = &r->b;
    ctosa_graph *g = r->g;
    uint64_t root = r->s.root;
    uint64_t swv = fb_ref(b, root, FB_GRAPH_SOFTWARE_VERSION);
    if (swv) {
        g->software_version.present = true;
        g->software_version.major = fb_i32(b, swv, FB_SWV_MAJOR, -1);
        g->software_version.minor = fb_i32(b, swv, FB_SWV_MINOR, -1);
        g->software_version.micro = fb_i32(b, swv, FB_SWV_MICRO, -1);
        if (!get_str(r, fb_ref(b, swv, FB_SWV_MODIFIER), NULL, &g->software_version.modifier)) return false;
    }
    uint64_t rv = fb_ref(b, root, FB_GRAPH_REGIONS);
    uint32_t nr = fb_len(b, rv);
    if (!alloc_ptrs(r, nr, (void ***)&g->regions)) return false;
    g->cap_regions = nr;
    for (uint32_t i = 0; i < nr; i++) {
        uint64_t rp = fb_vec_ref(b, rv, i);
        ctosa_region *reg = arena_zalloc(&g->arena, sizeof *reg);
        if (!reg) return nomem(r);
        if (!get_str(r, fb_ref(b, rp, FB_REGION_NAME), "", &reg->name)) return false;
        uint64_t bv = fb_ref(b, rp, FB_REGION_BLOCKS);
        uint32_t nb = fb_len(b, bv);
        if (!alloc_ptrs(r, nb, (void ***)&reg->blocks)) return false;
        for (uint32_t k = 0; k < nb; k++) {
            if (!read_block(r, fb_vec_ref(b, bv, k), &reg->blocks[k])) return false;
            reg->n_blocks++;
        }
        reg->cap_blocks_ = reg->n_blocks;
        g->regions[g->n_regions++] = reg;
    }
    return true;
}

void ctosa_read_options_init(ctosa_read_options *opt) { memset(opt, 0, sizeof *opt); }

static ctosa_error *read_buffer(const uint8_t *p, uint64_t size, const char *name,
                                const ctosa_read_options *opt, ctosa_graph **out) {
    *out = NULL;
    reader r;
    memset(&r, 0, sizeof r);
    r.b.p = p;
    r.b.size = size;
    r.b.name = name ? name : "<memory>";
    ctosa_error *e = fb_verify(&r.b, opt && opt->require_identifier, &r.s);
    if (e) return e;
    ctosa_version v = {r.s.major, r.s.minor, r.s.patch, r.s.draft};
    if ((e = ctosa_graph_create(v, &r.g))) return e;
    r.str_budget = size * 2 + (1u << 20);
    r.suspect_old_numbering = r.s.minor == 1 && r.s.draft && !r.s.has_software_version;
    if (!read_graph(&r)) {
        sc_free(&r.sc);
        ctosa_graph_free(r.g);
        return r.err;
    }
    sc_free(&r.sc);
    ctosa_file_info *info = &r.g->info;
    info->from_file = true;
    info->file_size = size;
    info->flatbuffer_size = info->external_data ? r.min_external : size;
    info->has_identifier = r.s.has_identifier;
    info->min_data_alignment = (uint32_t)r.min_align;
    *out = r.g;
    return NULL;
}

ctosa_error *ctosa_read_memory(const void *buf, size_t size, const char *name, const ctosa_read_options *opt,
                               ctosa_graph **out) {
    *out = NULL;
    if (!buf && size) return ctosa_error_new(CTOSA_ERR_USAGE, "%s: buffer is NULL", name ? name : "<memory>");
    static const uint8_t empty[1];
    ctosa_error *e = read_buffer(buf ? buf : empty, size, name, opt, out);
    if (!e) (*out)->user_buffer = (void *)buf;
    return e;
}

ctosa_error *ctosa_read_file(const char *path, const ctosa_read_options *opt, ctosa_graph **out) {
    *out = NULL;
    file_map m;
    ctosa_error *e = file_map_open(path, &m);
    if (e) return e;
    if ((e = read_buffer(m.data, m.size, path, opt, out))) {
        file_map_close(&m);
        return e;
    }
    (*out)->map = m;
    (*out)->has_map = true;
    return NULL;
}
