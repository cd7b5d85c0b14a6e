/* test_malformed.c - a corpus of malformed TOSA files made from small valid
 * ones (tests/data/tosa/small.tosa, external.tosa, v11.tosa): every
 * truncation, corrupted offsets, vtables, vectors, strings, unions, enum
 * values, shapes, data sizes and external segments, hand-made DAG and
 * string blow-ups, and seeded random byte flips. Every case is read from a
 * malloc'd buffer of exactly the file's size, so that AddressSanitizer
 * catches any read past the end. Each malformed case must be refused with
 * a message that names the file and a byte offset; random flips must never
 * crash. A few cases also go through `ctosa dump` / `ctosa info`. */
#include <stdint.h>

#include "harness.h"
#include "util/util.h"

#define DATA CTOSA_SOURCE_DIR "/tests/data/tosa/"
#define NAME "mut.tosa"

static unsigned char *seed_buf, *ext_buf, *v11_buf;
static size_t seed_n, ext_n, v11_n;

/* ------------------------------------------------ independent walker */

static uint64_t w_field(const uint8_t *b, uint64_t t, unsigned slot) {
    uint64_t vt = (uint64_t)((int64_t)t - (int32_t)rd_u32(b + t));
    unsigned vsize = rd_u16(b + vt);
    if (4 + 2 * slot >= vsize) return 0;
    unsigned o = rd_u16(b + vt + 4 + 2 * slot);
    return o ? t + o : 0;
}
static uint64_t w_vtable(const uint8_t *b, uint64_t t) {
    return (uint64_t)((int64_t)t - (int32_t)rd_u32(b + t));
}
static uint64_t w_deref(const uint8_t *b, uint64_t p) { return p + rd_u32(b + p); }
static uint64_t w_ref(const uint8_t *b, uint64_t t, unsigned slot) { return w_deref(b, w_field(b, t, slot)); }
static uint64_t w_elem(const uint8_t *b, uint64_t vec, uint32_t i) {
    return w_deref(b, vec + 4 + 4 * (uint64_t)i);
}
static uint64_t w_root(const uint8_t *b) { return w_deref(b, 0); }
static uint64_t w_block0(const uint8_t *b) {
    uint64_t reg = w_elem(b, w_ref(b, w_root(b), 1), 0);
    return w_elem(b, w_ref(b, reg, 1), 0);
}
/* Tensor i / operator i of the first block. */
static uint64_t w_tensor(const uint8_t *b, uint32_t i) { return w_elem(b, w_ref(b, w_block0(b), 2), i); }
static uint64_t w_op(const uint8_t *b, uint32_t i) { return w_elem(b, w_ref(b, w_block0(b), 1), i); }

/* ------------------------------------------------------------ runner */

static ctosa_error *read_exact(const unsigned char *p, size_t n, const ctosa_read_options *opt,
                               ctosa_graph **g) {
    /* exact-size copy: any overread is an ASan report */
    unsigned char *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, p, n);
    ctosa_error *e = ctosa_read_memory(copy, n, NAME, opt, g);
    if (!e) {
        /* touch every constant byte through the graph */
        unsigned sum = 0;
        for (uint32_t ri = 0; ri < ctosa_graph_region_count(*g); ri++) {
            ctosa_region *r = ctosa_graph_region(*g, ri);
            for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
                ctosa_block *b = r->blocks[bi];
                for (uint32_t i = 0; i < b->n_tensors; i++)
                    for (uint64_t k = 0; k < b->tensors[i]->data.size; k++)
                        sum += ((const uint8_t *)b->tensors[i]->data.ptr)[k];
                for (uint32_t i = 0; i < b->n_ops; i++)
                    for (uint32_t k = 0; k < b->ops[i]->n_inputs; k++)
                        sum += (unsigned)strlen(b->ops[i]->inputs[k]);
            }
        }
        (void)sum;
        ctosa_graph_free(*g);
        *g = NULL;
    }
    free(copy);
    return e;
}

static int cases_rejected;

/* Reads a mutated copy and expects refusal with code and a message naming
 * the file, "byte " and needle. */
static void expect_reject(const char *what, const unsigned char *p, size_t n, ctosa_code code,
                          const char *needle) {
    ctosa_graph *g = NULL;
    ctosa_error *e = read_exact(p, n, NULL, &g);
    th_checks++;
    if (!e) {
        th_failures++;
        fprintf(stderr, "[%s] %s: accepted\n", th_current, what);
        return;
    }
    const char *m = ctosa_error_message(e);
    if (ctosa_error_code(e) != code || !strstr(m, NAME ": ") ||
        (code == CTOSA_ERR_FORMAT && !strstr(m, "byte ")) || (needle && !strstr(m, needle))) {
        th_failures++;
        fprintf(stderr, "[%s] %s: expected code %d with '%s', got %d: %s\n", th_current, what, (int)code,
                needle ? needle : "byte ", (int)ctosa_error_code(e), m);
    } else {
        cases_rejected++;
        if (getenv("CTOSA_TEST_VERBOSE")) printf("  %-44s -> %s\n", what, m);
    }
    ctosa_error_free(e);
}

/* A patched copy of base. */
static unsigned char *dup_buf(const unsigned char *base, size_t n) {
    unsigned char *p = malloc(n);
    if (!p) abort();
    memcpy(p, base, n);
    return p;
}

#define MUTATE(base, n, what, code, needle, patch) \
    do {                                           \
        unsigned char *m_ = dup_buf(base, n);      \
        {                                          \
            unsigned char *b = m_;                 \
            (void)b;                               \
            patch;                                 \
        }                                          \
        expect_reject(what, m_, n, code, needle);  \
        free(m_);                                  \
    } while (0)

/* -------------------------------------------------------------- cases */

static void test_seeds_valid(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(read_exact(seed_buf, seed_n, NULL, &g));
    CHECK_OK(read_exact(ext_buf, ext_n, NULL, &g));
    CHECK_OK(read_exact(v11_buf, v11_n, NULL, &g));
}

/* Every proper prefix of a valid file is refused, except prefixes that only
 * drop trailing zero padding nothing refers to. */
static void truncate_all(const unsigned char *p, size_t n, const char *label) {
    size_t first_ok = n;
    for (size_t len = 0; len < n; len++) {
        ctosa_graph *g = NULL;
        ctosa_error *e = read_exact(p, len, NULL, &g);
        if (!e) {
            if (first_ok == n) first_ok = len;
            continue;
        }
        const char *m = ctosa_error_message(e);
        CHECK_MSG(ctosa_error_code(e) == CTOSA_ERR_FORMAT && strstr(m, NAME ": byte "),
                  "%s truncated to %zu: %s", label, len, m);
        if (first_ok != n) CHECK_MSG(0, "%s: prefix %zu accepted but %zu refused", label, first_ok, len);
        cases_rejected++;
        ctosa_error_free(e);
    }
    for (size_t i = first_ok; i < n; i++)
        CHECK_MSG(p[i] == 0, "%s: prefix %zu accepted although byte %zu is data", label, first_ok, i);
}

static void test_truncations(void) {
    truncate_all(seed_buf, seed_n, "small.tosa");
    truncate_all(v11_buf, v11_n, "v11.tosa");
    /* external.tosa: every cut inside the flatbuffer, the padding or the segments */
    truncate_all(ext_buf, ext_n, "external.tosa");
}

static void test_root_and_identifier(void) {
    size_t n = seed_n;
    MUTATE(seed_buf, n, "root offset past end", CTOSA_ERR_FORMAT, "byte 0:", wr_u32(b, (uint32_t)n + 100));
    MUTATE(seed_buf, n, "root offset 0xffffffff", CTOSA_ERR_FORMAT, "past the end", wr_u32(b, 0xffffffffu));
    MUTATE(seed_buf, n, "root offset 0 (self)", CTOSA_ERR_FORMAT, "itself", wr_u32(b, 0));
    MUTATE(seed_buf, n, "root offset at last 2 bytes", CTOSA_ERR_FORMAT,
           "byte 0:", wr_u32(b, (uint32_t)n - 2));
    /* a missing identifier is fine unless asked for */
    unsigned char *m = dup_buf(seed_buf, n);
    memcpy(m + 4, "ABCD", 4);
    ctosa_graph *g = NULL;
    CHECK_OK(read_exact(m, n, NULL, &g));
    ctosa_read_options opt;
    ctosa_read_options_init(&opt);
    opt.require_identifier = true;
    CHECK_ERR(read_exact(m, n, &opt, &g), CTOSA_ERR_FORMAT, NAME ": byte 4: file identifier");
    free(m);
}

static void test_vtables(void) {
    size_t n = seed_n;
    uint64_t root = w_root(seed_buf), rvt = w_vtable(seed_buf, root);
    uint64_t t0 = w_tensor(seed_buf, 1), tvt = w_vtable(seed_buf, t0);
    MUTATE(seed_buf, n, "root vtable before file start", CTOSA_ERR_FORMAT, "vtable offset",
           wr_u32(b + root, (uint32_t)(root + 64)));
    MUTATE(seed_buf, n, "root vtable past end", CTOSA_ERR_FORMAT, "vtable offset",
           wr_u32(b + root, (uint32_t) - (int32_t)(n * 2)));
    MUTATE(seed_buf, n, "tensor vtable past end", CTOSA_ERR_FORMAT, "TosaTensor",
           wr_u32(b + t0, (uint32_t) - (int32_t)n));
    MUTATE(seed_buf, n, "vtable size odd", CTOSA_ERR_FORMAT, "invalid vtable size", wr_u16(b + tvt, 7));
    MUTATE(seed_buf, n, "vtable size 2", CTOSA_ERR_FORMAT, "invalid vtable size", wr_u16(b + tvt, 2));
    MUTATE(seed_buf, n, "vtable size past end", CTOSA_ERR_FORMAT, "vtable of", wr_u16(b + rvt, 0xfffe));
    MUTATE(seed_buf, n, "table size past end", CTOSA_ERR_FORMAT, "table of", wr_u16(b + tvt + 2, 0xfff0));
    MUTATE(seed_buf, n, "table size < 4", CTOSA_ERR_FORMAT, "invalid table size", wr_u16(b + tvt + 2, 2));
    MUTATE(seed_buf, n, "field offset outside table", CTOSA_ERR_FORMAT, "outside its table",
           wr_u16(b + tvt + 4, rd_u16(b + tvt + 2)));
    MUTATE(seed_buf, n, "field offset inside soffset", CTOSA_ERR_FORMAT, "outside its table",
           wr_u16(b + tvt + 4, 2));
    MUTATE(seed_buf, n, "required version missing", CTOSA_ERR_FORMAT, "required field 'version'",
           wr_u16(b + rvt + 4, 0));
    uint64_t ver = w_ref(seed_buf, root, 0);
    MUTATE(seed_buf, n, "Version._major unset", CTOSA_ERR_FORMAT, "TOSA version is missing",
           wr_u16(b + w_vtable(b, ver) + 4, 0));
}

static void test_offsets_and_vectors(void) {
    size_t n = seed_n;
    uint64_t blk = w_block0(seed_buf);
    uint64_t tensors_field = w_field(seed_buf, blk, 2), tensors = w_deref(seed_buf, tensors_field);
    uint64_t w = w_tensor(seed_buf, 1);
    uint64_t wdata = w_ref(seed_buf, w, 3), wshape = w_ref(seed_buf, w, 1);
    uint64_t wname = w_ref(seed_buf, w, 0);
    MUTATE(seed_buf, n, "offset field 0 (self)", CTOSA_ERR_FORMAT, "itself", wr_u32(b + tensors_field, 0));
    MUTATE(seed_buf, n, "offset field past end", CTOSA_ERR_FORMAT, "past the end",
           wr_u32(b + tensors_field, (uint32_t)n));
    MUTATE(seed_buf, n, "vector count 0xffffffff", CTOSA_ERR_FORMAT, "vector length 4294967295",
           wr_u32(b + tensors, 0xffffffffu));
    MUTATE(seed_buf, n, "vector count 2^30 (x4 wraps 32 bits)", CTOSA_ERR_FORMAT, "runs past",
           wr_u32(b + wshape, 0x40000000u));
    MUTATE(seed_buf, n, "data vector past end", CTOSA_ERR_FORMAT, "TosaTensor.data: vector length",
           wr_u32(b + wdata, (uint32_t)n));
    MUTATE(seed_buf, n, "tensor element offset past end", CTOSA_ERR_FORMAT, "TosaBasicBlock.tensors",
           wr_u32(b + tensors + 8, 0x7ffffff0u));
    MUTATE(seed_buf, n, "string without terminator", CTOSA_ERR_FORMAT, "not NUL-terminated",
           b[wname + 4 + rd_u32(b + wname)] = 'x');
    MUTATE(seed_buf, n, "string length past end", CTOSA_ERR_FORMAT, "string length",
           wr_u32(b + wname, 0x7fffffffu));
    /* all tensor offsets at one table: a DAG, and duplicate names */
    MUTATE(seed_buf, n, "tensors shared (duplicate)", CTOSA_ERR_FORMAT, "defined twice", {
        uint32_t cnt = rd_u32(b + tensors);
        for (uint32_t i = 1; i < cnt; i++) {
            uint64_t slot = tensors + 4 + 4 * (uint64_t)i;
            wr_u32(b + slot, (uint32_t)(w_elem(b, tensors, 0) - slot));
        }
    });
}

static void test_unions_and_enums(void) {
    size_t n = seed_n;
    uint64_t add = w_op(seed_buf, 2); /* ADD */
    uint64_t at = w_field(seed_buf, add, 1), opf = w_field(seed_buf, add, 0);
    MUTATE(seed_buf, n, "union type 200", CTOSA_ERR_FORMAT, "union type 200 is out of range", b[at] = 200);
    MUTATE(seed_buf, n, "union type 76 in a 1.0 file", CTOSA_ERR_FORMAT, "union type 76", b[at] = 76);
    uint64_t dim = w_op(v11_buf, 1);
    MUTATE(v11_buf, v11_n, "union type 97 in a 1.1 file", CTOSA_ERR_FORMAT, "union type 97",
           b[w_field(b, dim, 1)] = 97);
    MUTATE(seed_buf, n, "attribute table offset past end", CTOSA_ERR_FORMAT, "attribute",
           wr_u32(b + w_field(b, add, 2), (uint32_t)n));
    MUTATE(seed_buf, n, "operator value 0", CTOSA_ERR_FORMAT, "unknown operator value 0", wr_u32(b + opf, 0));
    MUTATE(seed_buf, n, "operator value 5000", CTOSA_ERR_FORMAT, "unknown operator value 5000",
           wr_u32(b + opf, 5000));
    uint64_t typef = w_field(seed_buf, w_tensor(seed_buf, 1), 2);
    MUTATE(seed_buf, n, "dtype value 99", CTOSA_ERR_FORMAT, "unknown data type value 99",
           wr_u32(b + typef, 99));
    /* CLAMP min_val vector past the end */
    uint64_t clamp = w_op(seed_buf, 3);
    uint64_t cattr = w_ref(seed_buf, clamp, 2);
    MUTATE(seed_buf, n, "attribute vector past end", CTOSA_ERR_FORMAT, "min_val",
           wr_u32(b + w_ref(b, cattr, 0), 0x10000000u));
    uint64_t custom = w_op(seed_buf, 5), cuattr = w_ref(seed_buf, custom, 2);
    uint64_t opname = w_ref(seed_buf, cuattr, 0);
    MUTATE(seed_buf, n, "attribute string unterminated", CTOSA_ERR_FORMAT, "operator_name",
           b[opname + 4 + rd_u32(b + opname)] = '!');
}

static void test_semantics(void) {
    size_t n = seed_n;
    uint64_t x = w_tensor(seed_buf, 0), w = w_tensor(seed_buf, 1);
    uint64_t xshape = w_ref(seed_buf, x, 1), wshape = w_ref(seed_buf, w, 1);
    uint64_t wdata = w_ref(seed_buf, w, 3);
    MUTATE(seed_buf, n, "negative dim on a constant", CTOSA_ERR_FORMAT, "dimension 0 is -3",
           wr_u32(b + wshape + 4, (uint32_t)-3));
    MUTATE(seed_buf, n, "dim -1 on a constant", CTOSA_ERR_FORMAT, "dimension 1 is -1",
           wr_u32(b + wshape + 8, (uint32_t)-1));
    MUTATE(seed_buf, n, "dim -7 on a placeholder", CTOSA_ERR_FORMAT, "dimension 0 is -7",
           wr_u32(b + xshape + 4, (uint32_t)-7));
    /* -1 marks a dynamic dimension of a non-constant tensor: accepted */
    unsigned char *m = dup_buf(seed_buf, n);
    wr_u32(m + xshape + 4, (uint32_t)-1);
    ctosa_graph *g = NULL;
    CHECK_OK(read_exact(m, n, NULL, &g));
    free(m);
    MUTATE(seed_buf, n, "data too small", CTOSA_ERR_FORMAT, "holds 15 bytes", wr_u32(b + wdata, 15));
    uint64_t bigshape = w_ref(seed_buf, w_tensor(seed_buf, 7), 1); /* "big": [1,1,1,1] */
    MUTATE(seed_buf, n, "element count overflow", CTOSA_ERR_FORMAT, "'big': element count overflows", {
        for (int k = 0; k < 4; k++) wr_u32(b + bigshape + 4 + 4 * k, 0x7fffffff);
    });
    /* TosaShape: rank (element count) larger than its data */
    uint64_t sh = w_elem(seed_buf, w_ref(seed_buf, w_block0(seed_buf), 5), 0);
    MUTATE(seed_buf, n, "shape data too small", CTOSA_ERR_FORMAT, "holds 8 bytes",
           wr_u32(b + w_field(b, sh, 1), 2));
    MUTATE(seed_buf, n, "shape rank > INT32_MAX", CTOSA_ERR_FORMAT, "too large",
           wr_u32(b + w_field(b, sh, 1), 0x80000000u));

    /* external segments */
    uint64_t ew = w_tensor(ext_buf, 0);
    uint64_t off = w_field(ext_buf, ew, 7), size = w_field(ext_buf, ew, 8);
    CHECK(off && size);
    MUTATE(ext_buf, ext_n, "external size past end", CTOSA_ERR_FORMAT, "runs past the end",
           wr_u64(b + size, 1000));
    MUTATE(ext_buf, ext_n, "external offset past end", CTOSA_ERR_FORMAT, "external data at offset",
           wr_u64(b + off, ext_n));
    MUTATE(ext_buf, ext_n, "external offset+size overflow", CTOSA_ERR_FORMAT, "runs past the end",
           wr_u64(b + off, UINT64_MAX - 8));
    MUTATE(ext_buf, ext_n, "external size too small", CTOSA_ERR_FORMAT, "external data holds 12",
           wr_u64(b + size, 12));
}

/* ------------------------------------------ hand-built hostile files */

typedef struct hb {
    uint8_t *p;
    size_t n, cap;
} hb;
static size_t hb_alloc(hb *h, size_t n) {
    size_t at = (h->n + 3) & ~(size_t)3;
    if (at + n > h->cap) {
        h->cap = (at + n) * 2;
        h->p = realloc(h->p, h->cap);
        if (!h->p) abort();
    }
    memset(h->p + h->n, 0, at + n - h->n);
    h->n = at + n;
    return at;
}
/* A vtable with k 4-byte fields in slots 0..k-1 (mask bit i: slot present). */
static size_t hb_vtable(hb *h, unsigned k, unsigned mask) {
    size_t vt = hb_alloc(h, 4 + 2 * k);
    wr_u16(h->p + vt, (uint16_t)(4 + 2 * k));
    wr_u16(h->p + vt + 2, (uint16_t)(4 + 4 * k));
    for (unsigned i = 0; i < k; i++)
        wr_u16(h->p + vt + 4 + 2 * i, (mask >> i & 1) ? (uint16_t)(4 + 4 * i) : 0);
    return vt;
}
static size_t hb_table(hb *h, size_t vt, unsigned k) {
    size_t t = hb_alloc(h, 4 + 4 * k);
    wr_u32(h->p + t, (uint32_t)(t - vt));
    return t;
}
static void hb_set_off(hb *h, size_t field, size_t target) {
    wr_u32(h->p + field, (uint32_t)(target - field));
}
/* Header + TosaGraph{version 1.0.0, regions} + Version; returns the
 * position of the regions field. */
static size_t hb_graph(hb *h) {
    hb_alloc(h, 8);
    memcpy(h->p + 4, "TOSA", 4);
    size_t gvt = hb_vtable(h, 2, 3);
    size_t g = hb_table(h, gvt, 2);
    hb_set_off(h, 0, g);
    size_t vvt = hb_vtable(h, 3, 7);
    size_t v = hb_table(h, vvt, 3);
    wr_u32(h->p + v + 4, 1);
    hb_set_off(h, g + 4, v);
    return g + 8;
}

/* N regions sharing one region whose M blocks share one block: a small file
 * whose naive walk is N*M tables. */
static void test_dag_blowup(void) {
    hb h = {0};
    size_t regions_field = hb_graph(&h);
    const uint32_t N = 4000, M = 4000;
    size_t rv = hb_alloc(&h, 4 + 4 * (size_t)N);
    wr_u32(h.p + rv, N);
    hb_set_off(&h, regions_field, rv);
    size_t rvt = hb_vtable(&h, 2, 2); /* name absent, blocks present */
    size_t reg = hb_table(&h, rvt, 2);
    for (uint32_t i = 0; i < N; i++) hb_set_off(&h, rv + 4 + 4 * i, reg);
    size_t bv = hb_alloc(&h, 4 + 4 * (size_t)M);
    wr_u32(h.p + bv, M);
    hb_set_off(&h, reg + 8, bv);
    size_t bvt = hb_vtable(&h, 0, 0);
    size_t blk = hb_table(&h, bvt, 0);
    for (uint32_t i = 0; i < M; i++) hb_set_off(&h, bv + 4 + 4 * i, blk);
    double t0 = now_seconds();
    expect_reject("DAG blow-up (4000 x 4000 shared tables)", h.p, h.n, CTOSA_ERR_FORMAT, "objects shared");
    double dt = now_seconds() - t0;
    CHECK_MSG(dt < 1.0, "blow-up refusal took %.2f s", dt);
    free(h.p);
}

/* Many tensors whose names are overlapping long strings: copying each name
 * would cost quadratic memory. */
static void test_string_blowup(void) {
    hb h = {0};
    size_t regions_field = hb_graph(&h);
    size_t rv = hb_alloc(&h, 8);
    wr_u32(h.p + rv, 1);
    hb_set_off(&h, regions_field, rv);
    size_t rvt = hb_vtable(&h, 2, 2);
    size_t reg = hb_table(&h, rvt, 2);
    hb_set_off(&h, rv + 4, reg);
    size_t bv = hb_alloc(&h, 8);
    wr_u32(h.p + bv, 1);
    hb_set_off(&h, reg + 8, bv);
    size_t bvt = hb_vtable(&h, 3, 4); /* tensors only */
    size_t blk = hb_table(&h, bvt, 3);
    hb_set_off(&h, bv + 4, blk);
    const uint32_t T = 8192;
    size_t tv = hb_alloc(&h, 4 + 4 * (size_t)T);
    wr_u32(h.p + tv, T);
    hb_set_off(&h, blk + 12, tv);
    size_t tvt = hb_vtable(&h, 1, 1); /* name only */
    size_t *tabs = malloc(T * sizeof *tabs);
    for (uint32_t i = 0; i < T; i++) {
        tabs[i] = hb_table(&h, tvt, 1);
        hb_set_off(&h, tv + 4 + 4 * i, tabs[i]);
    }
    /* string region: at every 4-byte step a length that reaches the same
     * terminator, so string i holds S - 4i bytes and they all overlap */
    const size_t S = 4 * (size_t)T;
    size_t s = hb_alloc(&h, S + 8);
    for (uint32_t i = 0; i < T; i++) {
        wr_u32(h.p + s + 4 * i, (uint32_t)(S - 4 * (size_t)i));
        hb_set_off(&h, tabs[i] + 4, s + 4 * i);
    }
    h.p[s + S + 4] = 0;
    free(tabs);
    ctosa_graph *g = NULL;
    double t0 = now_seconds();
    ctosa_error *e = read_exact(h.p, h.n, NULL, &g);
    double dt = now_seconds() - t0;
    /* Names with zeros inside may collide (refused as duplicates) or hit the
     * string budget; either way: refused, quickly, naming a byte. */
    CHECK(e != NULL && ctosa_error_code(e) == CTOSA_ERR_FORMAT && strstr(ctosa_error_message(e), "byte "));
    if (e && getenv("CTOSA_TEST_VERBOSE")) printf("  string blow-up -> %s\n", ctosa_error_message(e));
    CHECK_MSG(dt < 1.0, "string blow-up refusal took %.2f s", dt);
    ctosa_error_free(e);
    free(h.p);
}

/* Seeded random byte changes: no crash, no sanitizer report, and every
 * refusal names the file. */
static void test_random_flips(void) {
    uint64_t state = 0x9e3779b97f4a7c15ull;
    const unsigned char *seeds[3] = {seed_buf, v11_buf, ext_buf};
    size_t sizes[3] = {seed_n, v11_n, 1024 /* the flatbuffer part of external.tosa */};
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 6000; iter++) {
        int s = iter % 3;
        size_t n = s == 2 ? ext_n : sizes[s];
        unsigned char *m = dup_buf(seeds[s], n);
        int flips = 1 + (int)(iter % 4);
        for (int k = 0; k < flips; k++) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            size_t pos = (size_t)(state % sizes[s]);
            uint8_t val = (uint8_t)(state >> 32);
            if (iter % 5 == 0) val = (uint8_t)(m[pos] ^ (1u << (state >> 40 & 7)));
            m[pos] = val;
        }
        ctosa_graph *g = NULL;
        ctosa_error *e = read_exact(m, n, NULL, &g);
        if (e) {
            refused++;
            CHECK_MSG(strstr(ctosa_error_message(e), NAME ": ") != NULL, "%s", ctosa_error_message(e));
            ctosa_error_free(e);
        } else {
            accepted++;
        }
        free(m);
    }
    printf("random flips: %d refused, %d accepted (harmless changes), no crash\n", refused, accepted);
    CHECK(refused > 1000);
}

/* ----------------------------------------------------------------- CLI */

static void test_cli(void) {
    const char *dir = th_tmpdir();
    const char *bad = th_path(dir, "trunc.tosa");
    CHECK(th_write(bad, seed_buf, seed_n / 2) == 0);
    char *out = NULL;
    int rc = th_run(&out, "'%s' dump '%s'", th_ctosa(), bad);
    CHECK_MSG(rc == 2 && out && strstr(out, bad) && strstr(out, "byte "), "rc %d: %s", rc, out);
    free(out);
    rc = th_run(&out, "'%s' info --json '%s'", th_ctosa(), bad);
    CHECK_MSG(rc == 2 && out && strstr(out, bad) && strstr(out, "byte "), "rc %d: %s", rc, out);
    free(out);

    unsigned char *m = dup_buf(seed_buf, seed_n);
    wr_u32(m + w_ref(m, w_tensor(m, 1), 3), 15); /* data too small */
    const char *bad2 = th_path(dir, "small-data.tosa");
    CHECK(th_write(bad2, m, seed_n) == 0);
    free(m);
    rc = th_run(&out, "'%s' dump --format json '%s'", th_ctosa(), bad2);
    CHECK_MSG(rc == 2 && out && strstr(out, bad2) && strstr(out, "byte ") && !strstr(out, "\"regions\""),
              "rc %d: %s", rc, out);
    free(out);

    rc = th_run(&out, "'%s' dump '%s'", th_ctosa(), th_path(dir, "missing.tosa"));
    CHECK_MSG(rc == 2 && out && strstr(out, "missing.tosa"), "rc %d: %s", rc, out);
    free(out);
    rc = th_run(&out, "'%s' dump --format xml '%s'", th_ctosa(), DATA "small.tosa");
    CHECK_MSG(rc == 2 && out && strstr(out, "xml"), "rc %d: %s", rc, out);
    free(out);
    rc = th_run(&out, "'%s' dump", th_ctosa());
    CHECK(rc == 2);
    free(out);
    rc = th_run(&out, "'%s' info --bogus '%s'", th_ctosa(), DATA "small.tosa");
    CHECK(rc == 2);
    free(out);
    rc = th_run(&out, "'%s' dump --help", th_ctosa());
    CHECK(rc == 0 && out && strstr(out, "usage: ctosa dump"));
    free(out);
    rc = th_run(&out, "'%s' info -h", th_ctosa());
    CHECK(rc == 0 && out && strstr(out, "usage: ctosa info"));
    free(out);
    /* refused versions exit 2 as well */
    rc = th_run(&out, "'%s' info '%s'", th_ctosa(), DATA "v080.tosa");
    CHECK_MSG(rc == 2 && out && strstr(out, "0.80.0"), "rc %d: %s", rc, out);
    free(out);
}

int main(void) {
    seed_buf = th_read(DATA "small.tosa", &seed_n);
    ext_buf = th_read(DATA "external.tosa", &ext_n);
    v11_buf = th_read(DATA "v11.tosa", &v11_n);
    if (!seed_buf || !ext_buf || !v11_buf) {
        fprintf(stderr, "cannot read tests/data/tosa inputs\n");
        return 1;
    }
    RUN(test_seeds_valid);
    RUN(test_truncations);
    RUN(test_root_and_identifier);
    RUN(test_vtables);
    RUN(test_offsets_and_vectors);
    RUN(test_unions_and_enums);
    RUN(test_semantics);
    RUN(test_dag_blowup);
    RUN(test_string_blowup);
    RUN(test_random_flips);
    RUN(test_cli);
    printf("%d malformed cases refused\n", cases_rejected);
    free(seed_buf);
    free(ext_buf);
    free(v11_buf);
    return th_finish();
}
