/* fuzz_roundtrip.c - build -> write -> read. The fuzz bytes drive the
 * builder (ctosa_graph.h) deterministically: versions, regions, blocks,
 * tensors of every dtype with random small shapes and constant data,
 * TosaShapes, operators of every kind with every attribute field of their
 * table filled from the bytes, locations, block inputs and outputs. A graph
 * the builder and the writer accept must read back (ctosa_read_memory) to
 * the same graph, field by field; anything else aborts. */
#include <string.h>

#include "ctosa/tosa_io.h"
#include "fuzz_common.h"

typedef struct src {
    const uint8_t *p;
    size_t n, i;
} src;

static uint8_t u8(src *s) { return s->i < s->n ? s->p[s->i++] : 0; }
static uint32_t u32(src *s) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v |= (uint32_t)u8(s) << (8 * k);
    return v;
}

#define MAX_T 8
#define MAX_NAMES 16

typedef struct names {
    char buf[MAX_NAMES][16];
    uint32_t n;
} names;

static const char *pick(src *s, const names *nm) {
    uint8_t k = u8(s);
    if (nm->n == 0 || k == 255) return "missing";
    return nm->buf[k % nm->n];
}

static ctosa_error *build_block(ctosa_graph *g, ctosa_block *b, src *s) {
    ctosa_error *e = NULL;
    names nm = {.n = 0};
    uint32_t nt = u8(s) % MAX_T;
    for (uint32_t t = 0; t < nt && !e; t++) {
        ctosa_dtype dt = (ctosa_dtype)(1 + u8(s) % (CTOSA_DTYPE_COUNT - 1));
        uint32_t rank = u8(s) % 5;
        int32_t shape[4];
        bool cst = u8(s) & 1;
        for (uint32_t k = 0; k < rank; k++) {
            uint8_t d = u8(s);
            shape[k] = (!cst && d == 255) ? -1 : (int32_t)(d % 5);
        }
        snprintf(nm.buf[nm.n], sizeof nm.buf[0], "t%u", t);
        ctosa_tensor *tt = NULL;
        if ((e = ctosa_block_add_tensor(g, b, nm.buf[nm.n], dt, rank, shape, &tt))) break;
        nm.n++;
        uint8_t flags = u8(s);
        if (flags & 2) tt->variable = true;
        if (flags & 4) tt->variable_name = ctosa_graph_strdup(g, "var");
        if (cst) {
            uint64_t count, bytes;
            if (!ctosa_tensor_elements(tt, &count) || !ctosa_dtype_storage_size(dt, count, &bytes)) continue;
            uint8_t data[512];
            if (bytes > sizeof data) continue;
            for (uint64_t k = 0; k < bytes; k++) data[k] = u8(s);
            e = ctosa_tensor_set_data(g, tt, data, bytes, true);
        }
    }
    uint32_t ns = u8(s) % 3;
    for (uint32_t t = 0; t < ns && !e; t++) {
        uint32_t n = u8(s) % 5;
        int64_t v[4];
        for (uint32_t k = 0; k < n; k++) v[k] = (int64_t)((uint64_t)u32(s) << 32 | u32(s));
        snprintf(nm.buf[nm.n], sizeof nm.buf[0], "s%u", t);
        e = ctosa_block_add_shape(g, b, nm.buf[nm.n], n, (u8(s) & 1) ? v : NULL, NULL);
        if (!e) nm.n++;
    }
    uint32_t nops = u8(s) % 6;
    for (uint32_t o = 0; o < nops && !e; o++) {
        ctosa_op_kind kind = (ctosa_op_kind)(1 + u8(s) % (CTOSA_OP_COUNT - 1));
        const char *in[4], *out[3];
        uint32_t nin = u8(s) % 5, nout = u8(s) % 4;
        for (uint32_t k = 0; k < nin; k++) in[k] = pick(s, &nm);
        for (uint32_t k = 0; k < nout; k++) out[k] = pick(s, &nm);
        ctosa_attr a;
        memset(&a, 0, sizeof a);
        int32_t vecs[8][4];
        uint8_t bytes[8][8];
        char strs[8][16];
        uint32_t nf = 0;
        const ctosa_attr_field *f = ctosa_op_attr_fields(kind, &nf);
        for (uint32_t k = 0; f && k < nf && k < 8; k++) {
            char *d = (char *)&a + f[k].offset;
            switch (f[k].kind) {
            case CTOSA_FIELD_I32: {
                int32_t v = (int32_t)u32(s);
                memcpy(d, &v, sizeof v);
                break;
            }
            case CTOSA_FIELD_BOOL: *(bool *)d = u8(s) & 1; break;
            case CTOSA_FIELD_ENUM: {
                uint8_t v = u8(s);
                int iv = (v & 0x80) ? 32 : v % 4;
                memcpy(d, &iv, sizeof iv);
                break;
            }
            case CTOSA_FIELD_DTYPE: {
                int iv = u8(s) % CTOSA_DTYPE_COUNT;
                memcpy(d, &iv, sizeof iv);
                break;
            }
            case CTOSA_FIELD_I32_VEC: {
                ctosa_i32s *v = (ctosa_i32s *)d;
                v->n = u8(s) % 5;
                for (uint32_t j = 0; j < v->n; j++) vecs[k][j] = (int32_t)u32(s);
                v->v = vecs[k];
                break;
            }
            case CTOSA_FIELD_BYTES: {
                ctosa_bytes *v = (ctosa_bytes *)d;
                v->n = u8(s) % 9;
                for (uint32_t j = 0; j < v->n; j++) bytes[k][j] = u8(s);
                v->p = bytes[k];
                break;
            }
            case CTOSA_FIELD_STRING: {
                uint8_t c = u8(s);
                if (c & 1) {
                    snprintf(strs[k], sizeof strs[k], "%s", (c & 2) ? "main" : "r1");
                    *(const char **)d = strs[k];
                }
                break;
            }
            }
        }
        ctosa_op *op = NULL;
        e = ctosa_block_add_op(g, b, kind, nin, in, nout, out, &a, &op);
        if (!e && (u8(s) & 3) == 0) e = ctosa_op_set_location(g, op, "loc(fuzz)");
    }
    uint32_t nbi = u8(s) % 3, nbo = u8(s) % 3;
    for (uint32_t k = 0; k < nbi && !e; k++) e = ctosa_block_add_input(g, b, pick(s, &nm));
    for (uint32_t k = 0; k < nbo && !e; k++) e = ctosa_block_add_output(g, b, pick(s, &nm));
    return e;
}

static bool same_str(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static void cmp_tensor(const ctosa_tensor *a, const ctosa_tensor *b) {
    if (!same_str(a->name, b->name) || a->dtype != b->dtype || a->rank != b->rank ||
        a->is_shape != b->is_shape || a->variable != b->variable ||
        !same_str(a->variable_name, b->variable_name))
        fuzz_fail("tensor header differs after the round trip", NULL);
    for (uint32_t k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k]) fuzz_fail("tensor shape differs after the round trip", NULL);
    uint64_t an = a->data.kind ? a->data.size : 0, bn = b->data.kind ? b->data.size : 0;
    if (an != bn) fuzz_fail("constant size differs after the round trip", NULL);
    if (an && memcmp(a->data.ptr, b->data.ptr, an))
        fuzz_fail("constant data differs after the round trip", NULL);
}

static void cmp_op(const ctosa_op *a, const ctosa_op *b) {
    if (a->kind != b->kind || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        !same_str(a->location, b->location))
        fuzz_fail("operator differs after the round trip", NULL);
    for (uint32_t k = 0; k < a->n_inputs; k++)
        if (!same_str(a->inputs[k], b->inputs[k])) fuzz_fail("operator input differs", NULL);
    for (uint32_t k = 0; k < a->n_outputs; k++)
        if (!same_str(a->outputs[k], b->outputs[k])) fuzz_fail("operator output differs", NULL);
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(a->kind, &nf);
    for (uint32_t k = 0; f && k < nf; k++) {
        const char *x = (const char *)&a->attr + f[k].offset;
        const char *y = (const char *)&b->attr + f[k].offset;
        bool same = true;
        switch (f[k].kind) {
        case CTOSA_FIELD_I32: same = !memcmp(x, y, sizeof(int32_t)); break;
        case CTOSA_FIELD_BOOL: same = *(const bool *)x == *(const bool *)y; break;
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE: same = !memcmp(x, y, sizeof(int)); break;
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *v = (const ctosa_i32s *)x, *w = (const ctosa_i32s *)y;
            same = v->n == w->n && (!v->n || !memcmp(v->v, w->v, v->n * sizeof(int32_t)));
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *v = (const ctosa_bytes *)x, *w = (const ctosa_bytes *)y;
            same = v->n == w->n && (!v->n || !memcmp(v->p, w->p, v->n));
            break;
        }
        case CTOSA_FIELD_STRING: {
            /* The writer always writes attribute strings: NULL reads back as "". */
            const char *sx = *(const char *const *)x, *sy = *(const char *const *)y;
            same = same_str(sx ? sx : "", sy ? sy : "");
            break;
        }
        }
        if (!same) {
            fprintf(stderr, "op %s field %s\n", ctosa_op_name(a->kind), f[k].name);
            fuzz_fail("attribute differs after the round trip", NULL);
        }
    }
}

static void cmp_graph(const ctosa_graph *a, const ctosa_graph *b) {
    ctosa_version va = ctosa_graph_version(a), vb = ctosa_graph_version(b);
    if (va.major != vb.major || va.minor != vb.minor || va.patch != vb.patch || va.draft != vb.draft)
        fuzz_fail("version differs after the round trip", NULL);
    if (ctosa_graph_region_count(a) != ctosa_graph_region_count(b))
        fuzz_fail("region count differs after the round trip", NULL);
    for (uint32_t r = 0; r < ctosa_graph_region_count(a); r++) {
        const ctosa_region *ra = ctosa_graph_region(a, r), *rb = ctosa_graph_region(b, r);
        if (!same_str(ra->name, rb->name) || ra->n_blocks != rb->n_blocks)
            fuzz_fail("region differs after the round trip", NULL);
        for (uint32_t k = 0; k < ra->n_blocks; k++) {
            const ctosa_block *x = ra->blocks[k], *y = rb->blocks[k];
            if (!same_str(x->name, y->name) || x->n_ops != y->n_ops || x->n_tensors != y->n_tensors ||
                x->n_shapes != y->n_shapes || x->n_inputs != y->n_inputs || x->n_outputs != y->n_outputs)
                fuzz_fail("block counts differ after the round trip", NULL);
            for (uint32_t i = 0; i < x->n_tensors; i++) cmp_tensor(x->tensors[i], y->tensors[i]);
            for (uint32_t i = 0; i < x->n_shapes; i++) cmp_tensor(x->shapes[i], y->shapes[i]);
            for (uint32_t i = 0; i < x->n_ops; i++) cmp_op(x->ops[i], y->ops[i]);
            for (uint32_t i = 0; i < x->n_inputs; i++)
                if (!same_str(x->inputs[i], y->inputs[i])) fuzz_fail("block input differs", NULL);
            for (uint32_t i = 0; i < x->n_outputs; i++)
                if (!same_str(x->outputs[i], y->outputs[i])) fuzz_fail("block output differs", NULL);
        }
    }
}

FUZZ_ENTRY(roundtrip) {
    src s = {data, size, 0};
    uint8_t head = u8(&s);
    ctosa_graph *g = NULL;
    ctosa_error *e = ctosa_graph_create((head & 1) ? CTOSA_VERSION_1_1_DRAFT : CTOSA_VERSION_1_0, &g);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
    /* 1.1 graphs always get a SoftwareVersion: without one the reader's
     * pre-1.0-final numbering heuristics (docs/cli.md) rightly refuse some
     * graphs the builder accepts (e.g. operator 72 with inputs only). */
    if (head & 1) e = ctosa_graph_set_software_version(g, 0, 1, 2, (head & 4) ? "x" : NULL);
    uint32_t nreg = 1 + ((head >> 3) & 1);
    for (uint32_t r = 0; r < nreg && !e; r++) {
        ctosa_region *rg = NULL;
        if ((e = ctosa_graph_add_region(g, r ? "r1" : "main", &rg))) break;
        uint32_t nb = 1 + (u8(&s) & 1);
        for (uint32_t k = 0; k < nb && !e; k++) {
            ctosa_block *b = NULL;
            if (!(e = ctosa_region_add_block(g, rg, k ? "b1" : "main", &b))) e = build_block(g, b, &s);
        }
    }
    if (e) {
        fuzz_drop(e);
        ctosa_graph_free(g);
        return 0;
    }
    ctosa_write_options wo;
    ctosa_write_options_init(&wo);
    wo.layout = (ctosa_layout)((head >> 4) % 3);
    wo.data_alignment = (head & 0x40) ? 8u << (u8(&s) % 4) : 0;
    void *buf = NULL;
    size_t n = 0;
    e = ctosa_write_memory(g, &wo, &buf, &n);
    if (e) {
        fuzz_drop(e);
        ctosa_graph_free(g);
        return 0;
    }
    ctosa_graph *g2 = NULL;
    e = ctosa_read_memory(buf, n, "roundtrip.tosa", NULL, &g2);
    if (e) fuzz_fail("a written graph does not read back", e);
    cmp_graph(g, g2);
    ctosa_graph_free(g2);
    free(buf);
    ctosa_graph_free(g);
    return 0;
}
