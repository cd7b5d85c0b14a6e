/* writer_testutil.h - helpers shared by test_writer.c and test_flatc_compat.c:
 * a tiny independent flatbuffer walker (enough to find where the writer put
 * each tensor's data) and small graph builders. Header-only, static. */
#ifndef CTOSA_WRITER_TESTUTIL_H
#define CTOSA_WRITER_TESTUTIL_H

#include <stdint.h>
#include <string.h>

#include "harness.h"

/* ------------------------------------------------------------ walker */

static inline uint32_t nav_u32(const uint8_t *b, uint64_t p) {
    return (uint32_t)b[p] | (uint32_t)b[p + 1] << 8 | (uint32_t)b[p + 2] << 16 | (uint32_t)b[p + 3] << 24;
}
static inline uint64_t nav_u64(const uint8_t *b, uint64_t p) {
    return nav_u32(b, p) | (uint64_t)nav_u32(b, p + 4) << 32;
}
/* Absolute position of field `slot` of the table at t, or 0 when absent. */
static inline uint64_t nav_field(const uint8_t *b, uint64_t t, unsigned slot) {
    uint64_t vt = (uint64_t)((int64_t)t - (int32_t)nav_u32(b, t));
    unsigned vsize = b[vt] | b[vt + 1] << 8;
    if (4 + 2 * slot >= vsize) return 0;
    unsigned o = b[vt + 4 + 2 * slot] | b[vt + 5 + 2 * slot] << 8;
    return o ? t + o : 0;
}
/* Follows the uoffset stored at p. */
static inline uint64_t nav_deref(const uint8_t *b, uint64_t p) { return p + nav_u32(b, p); }

/* Where one tensor's (or shape's) bytes are. */
typedef struct nav_data {
    bool is_shape;
    uint64_t vec; /* position of the inline data vector's length field */
    uint32_t vec_len;
    uint64_t offset, size; /* TosaTensor.offset / .size (0 for shapes) */
} nav_data;

/* Visits every tensor and shape of every block in file order; returns the
 * count (fills at most max entries). */
static inline uint32_t nav_tensors(const uint8_t *b, nav_data *out, uint32_t max) {
    uint32_t n = 0;
    uint64_t g = nav_deref(b, 0);
    uint64_t regs = nav_deref(b, nav_field(b, g, 1));
    for (uint32_t r = 0; r < nav_u32(b, regs); r++) {
        uint64_t reg = nav_deref(b, regs + 4 + 4 * r);
        uint64_t blks = nav_deref(b, nav_field(b, reg, 1));
        for (uint32_t k = 0; k < nav_u32(b, blks); k++) {
            uint64_t blk = nav_deref(b, blks + 4 + 4 * k);
            for (int pass = 0; pass < 2; pass++) {
                uint64_t vec = nav_deref(b, nav_field(b, blk, pass ? 5 : 2));
                for (uint32_t i = 0; i < nav_u32(b, vec); i++, n++) {
                    uint64_t t = nav_deref(b, vec + 4 + 4 * i);
                    if (n >= max) continue;
                    nav_data *d = &out[n];
                    memset(d, 0, sizeof *d);
                    d->is_shape = pass == 1;
                    uint64_t df = nav_field(b, t, pass ? 2 : 3);
                    d->vec = df ? nav_deref(b, df) : 0;
                    d->vec_len = df ? nav_u32(b, d->vec) : 0;
                    if (!pass) {
                        uint64_t f = nav_field(b, t, 7);
                        d->offset = f ? nav_u64(b, f) : 0;
                        f = nav_field(b, t, 8);
                        d->size = f ? nav_u64(b, f) : 0;
                    }
                }
            }
        }
    }
    return n;
}

/* ------------------------------------------------------------ builders */

static inline ctosa_block *tu_main(ctosa_graph *g) {
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    return b;
}

/* A constant int8 tensor of n bytes with a pattern seeded by `seed`, plus
 * its CONST op. Data is copied into the graph. */
static inline ctosa_tensor *tu_const_i8(ctosa_graph *g, ctosa_block *b, const char *name, int32_t n,
                                        unsigned seed) {
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_INT8, 1, &n, &t));
    uint8_t *p = malloc(n ? (size_t)n : 1);
    for (int32_t i = 0; i < n; i++) p[i] = (uint8_t)(seed * 131u + (unsigned)i * 7u + 1u);
    CHECK_OK(ctosa_tensor_set_data(g, t, p, (uint64_t)n, true));
    free(p);
    const char *out[] = {name};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
    return t;
}

/* Sets every attribute field of op kind k to a non-default value. */
static inline void tu_fill_attr(ctosa_op_kind k, ctosa_attr *a, int32_t *vec, uint8_t *bytes) {
    memset(a, 0, sizeof *a);
    uint32_t n;
    const ctosa_attr_field *f = ctosa_op_attr_fields(k, &n);
    for (uint32_t i = 0; i < n; i++) {
        char *p = (char *)a + f[i].offset;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: *(int32_t *)p = -(int32_t)k * 3 - (int32_t)i; break;
        case CTOSA_FIELD_BOOL: *(bool *)p = true; break;
        case CTOSA_FIELD_ENUM: {
            uint32_t v = strcmp(f[i].enum_type, "BlockSize") == 0      ? 32
                         : strcmp(f[i].enum_type, "RoundingMode") == 0 ? 3
                                                                       : 2;
            memcpy(p, &v, sizeof v);
            break;
        }
        case CTOSA_FIELD_DTYPE: *(ctosa_dtype *)p = CTOSA_DTYPE_INT48; break;
        case CTOSA_FIELD_I32_VEC: *(ctosa_i32s *)p = (ctosa_i32s){vec + i, 2 + (k + i) % 4}; break;
        case CTOSA_FIELD_BYTES: *(ctosa_bytes *)p = (ctosa_bytes){bytes + i, 1 + (k + i) % 9}; break;
        case CTOSA_FIELD_STRING: {
            static char s[16][32];
            snprintf(s[i], sizeof s[i], "%s_%u", f[i].name, (unsigned)k);
            *(const char **)p = s[i];
            break;
        }
        }
    }
}

/* One operator of every kind (96, in a 1.1 graph with SoftwareVersion), every
 * attribute field non-default, some with OpLocation. */
static inline ctosa_graph *tu_every_op_graph(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_1_DRAFT, &g));
    CHECK_OK(ctosa_graph_set_software_version(g, 3, 14, 15, "ctosa-test"));
    ctosa_block *b = tu_main(g);
    int32_t vec[32];
    uint8_t bytes[32];
    for (int i = 0; i < 32; i++) {
        vec[i] = 1000 - 37 * i;
        bytes[i] = (uint8_t)(200 + i);
    }
    int count = 0;
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        ctosa_attr a;
        tu_fill_attr((ctosa_op_kind)k, &a, vec, bytes);
        const char *in[] = {"x", "y", "z"}, *out[] = {"o1", "o2"};
        ctosa_op *op;
        CHECK_OK(ctosa_block_add_op(g, b, (ctosa_op_kind)k, (uint32_t)(k % 4), in, 1 + (uint32_t)(k % 2), out,
                                    &a, &op));
        if (op && k % 3 == 0) {
            char loc[64];
            snprintf(loc, sizeof loc, "loc(\"model.py\":%d:7)", k);
            CHECK_OK(ctosa_op_set_location(g, op, loc));
        }
        count++;
    }
    CHECK(count == 96);
    return g;
}

/* Every dtype with data, variables, shapes, several regions and blocks
 * (some empty), in a 1.1 graph; and the 1.0 subset in a 1.0 graph. */
static inline ctosa_graph *tu_tensor_graph(ctosa_version v) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(v, &g));
    ctosa_block *b = tu_main(g);
    char name[64];
    for (int d = 1; d < CTOSA_DTYPE_COUNT; d++) {
        if (!ctosa_dtype_valid_in((ctosa_dtype)d, v)) continue;
        int32_t shp[2] = {1, 3 + d % 3};
        uint64_t bytes;
        CHECK(ctosa_dtype_storage_size((ctosa_dtype)d, 3 + d % 3, &bytes));
        snprintf(name, sizeof name, "const_%s", ctosa_dtype_short((ctosa_dtype)d));
        ctosa_tensor *t;
        CHECK_OK(ctosa_block_add_tensor(g, b, name, (ctosa_dtype)d, 2, shp, &t));
        uint8_t data[64];
        for (uint64_t i = 0; i < bytes; i++) data[i] = (uint8_t)(d * 17 + i * 5);
        CHECK_OK(ctosa_tensor_set_data(g, t, data, bytes, true));
        snprintf(name, sizeof name, "act_%s", ctosa_dtype_short((ctosa_dtype)d));
        CHECK_OK(ctosa_block_add_tensor(g, b, name, (ctosa_dtype)d, 2, shp, NULL));
    }
    ctosa_tensor *t;
    int32_t s1 = 4;
    CHECK_OK(ctosa_block_add_tensor(g, b, "state", CTOSA_DTYPE_FP32, 1, &s1, &t));
    t->variable = true;
    t->variable_name = ctosa_graph_strdup(g, "lstm.h0");
    float init[4] = {1.5f, -2, 0, 3};
    CHECK_OK(ctosa_tensor_set_data(g, t, init, sizeof init, true));
    CHECK_OK(ctosa_block_add_tensor(g, b, "unranked", CTOSA_DTYPE_FP16, 0, NULL, &t));
    t->is_unranked = true;
    CHECK_OK(ctosa_block_add_tensor(g, b, "scalar", CTOSA_DTYPE_INT32, 0, NULL, &t));
    int32_t one = 77;
    CHECK_OK(ctosa_tensor_set_data(g, t, &one, 4, true));
    int64_t sv[4] = {1, -1, 1ll << 40, 7};
    CHECK_OK(ctosa_block_add_shape(g, b, "shape_c", 4, sv, NULL));
    CHECK_OK(ctosa_block_add_shape(g, b, "shape_0", 0, sv, NULL));
    CHECK_OK(ctosa_block_add_shape(g, b, "shape_dyn", 3, NULL, NULL));
    const char *sout[] = {"shape_c"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, sout, NULL, NULL));
    /* all-default attributes: empty vectors, "" strings, UNKNOWN enums */
    const char *cin[] = {"act_int8", "const_int8", "const_int32"}, *cout[] = {"act_int32"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONV2D, 3, cin, 1, cout, NULL, NULL));
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CUSTOM, 1, cin, 1, cout, NULL, NULL));
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CLAMP, 1, cin, 1, cout, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "act_int8"));
    CHECK_OK(ctosa_block_add_output(g, b, "act_int8"));
    CHECK_OK(ctosa_block_add_output(g, b, "state"));
    /* second block in main, empty */
    ctosa_region *r = ctosa_graph_region(g, 0), *r2, *r3;
    CHECK_OK(ctosa_region_add_block(g, r, "empty_block", NULL));
    /* cond / body regions */
    CHECK_OK(ctosa_graph_add_region(g, "then", &r2));
    ctosa_block *b2;
    CHECK_OK(ctosa_region_add_block(g, r2, "then_bb", &b2));
    int32_t s2[1] = {2};
    CHECK_OK(ctosa_block_add_tensor(g, b2, "ti", CTOSA_DTYPE_INT32, 1, s2, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b2, "to", CTOSA_DTYPE_INT32, 1, s2, NULL));
    const char *ti[] = {"ti"}, *to[] = {"to"};
    CHECK_OK(ctosa_block_add_op(g, b2, CTOSA_OP_IDENTITY, 1, ti, 1, to, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b2, "ti"));
    CHECK_OK(ctosa_block_add_output(g, b2, "to"));
    CHECK_OK(ctosa_graph_add_region(g, "empty_region", &r3));
    return g;
}

#endif
