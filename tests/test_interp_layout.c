/* test_interp_layout.c - data layout and gather/scatter operators, constant
 * decoding, and the runtime: memory reuse, limits, input checks, COND_IF,
 * WHILE_LOOP (with values captured from the enclosing block), variables
 * across runs, CUSTOM kernels. Expected values are computed by hand. */
#include <math.h>

#include "harness.h"
#include "interp_testutil.h"

#define OP(k) CTOSA_OP_##k
#define INV CTOSA_ERR_INVALID

static void test_concat(void) {
    int32_t a[] = {1, 2}, b[] = {3, 4, 5, 6}, z[6];
    ctosa_attr ax = {0};
    ax.axis = 1;
    CHECK_OK(it_run(OP(CONCAT), &ax, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 1), IT_IN(INT32, b, 2, 2, 2)),
                    IT_OUT(INT32, 2, 2, 3), z));
    int32_t want[] = {1, 3, 4, 2, 5, 6};
    CHECK(memcmp(z, want, sizeof want) == 0);
    ax.axis = 0;
    CHECK_OK(it_run(OP(CONCAT), &ax, 2, IT_ARGS(IT_IN(INT32, b, 2, 2, 2), IT_IN(INT32, a, 2, 1, 2)),
                    IT_OUT(INT32, 2, 3, 2), z));
    int32_t want0[] = {3, 4, 5, 6, 1, 2};
    CHECK(memcmp(z, want0, sizeof want0) == 0);
    CHECK_ERR(it_run(OP(CONCAT), &ax, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 1), IT_IN(INT32, b, 2, 2, 2)),
                     IT_OUT(INT32, 2, 4, 1), z),
              INV, "outside axis 0");
    ax.axis = 2;
    CHECK_ERR(it_run(OP(CONCAT), &ax, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 1)), IT_OUT(INT32, 2, 2, 1), z), INV,
              "axis 2 is outside 0..1");
}

static void test_pad(void) {
    int8_t a[] = {1, 2, 3, 4}, pc[] = {9}, z[9];
    int64_t pad[] = {1, 0, 0, 1};
    CHECK_OK(it_run(OP(PAD), NULL, 3,
                    IT_ARGS(IT_IN(INT8, a, 2, 2, 2), IT_CONST(SHAPE, pad, 1, 4), IT_CONST(INT8, pc, 1, 1)),
                    IT_OUT(INT8, 2, 3, 3), z));
    int8_t want[] = {9, 9, 9, 1, 2, 9, 3, 4, 9};
    CHECK(memcmp(z, want, sizeof want) == 0);
    int64_t bad[] = {-1, 0, 0, 1};
    CHECK_ERR(it_run(OP(PAD), NULL, 3,
                     IT_ARGS(IT_IN(INT8, a, 2, 2, 2), IT_CONST(SHAPE, bad, 1, 4), IT_CONST(INT8, pc, 1, 1)),
                     IT_OUT(INT8, 2, 3, 3), z),
              INV, "padding -1,0");
    CHECK_ERR(it_run(OP(PAD), NULL, 3,
                     IT_ARGS(IT_IN(INT8, a, 2, 2, 2), IT_CONST(SHAPE, pad, 1, 4), IT_CONST(INT8, pc, 1, 1)),
                     IT_OUT(INT8, 2, 3, 4), z),
              INV, "dimension 1");
    /* fp32 pad value, rank 1 */
    float f[] = {1, 2}, fz[5], fpc[] = {-0.5f};
    int64_t p1[] = {2, 1};
    CHECK_OK(it_run(OP(PAD), NULL, 3,
                    IT_ARGS(IT_IN(FP32, f, 1, 2), IT_CONST(SHAPE, p1, 1, 2), IT_CONST(FP32, fpc, 1, 1)),
                    IT_OUT(FP32, 1, 5), fz));
    CHECK(fz[0] == -0.5f && fz[1] == -0.5f && fz[2] == 1 && fz[3] == 2 && fz[4] == -0.5f);
}

static void test_reshape_identity(void) {
    int32_t a[] = {1, 2, 3, 4, 5, 6}, z[6];
    int64_t s[] = {3, 2}, s4[] = {4, 2};
    CHECK_OK(it_run(OP(RESHAPE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 3), IT_CONST(SHAPE, s, 1, 2)),
                    IT_OUT(INT32, 2, 3, 2), z));
    CHECK(memcmp(z, a, sizeof a) == 0);
    CHECK_ERR(it_run(OP(RESHAPE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 3), IT_CONST(SHAPE, s4, 1, 2)),
                     IT_OUT(INT32, 2, 4, 2), z),
              INV, "has 6 elements");
    CHECK_ERR(it_run(OP(RESHAPE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 3), IT_CONST(SHAPE, s4, 1, 2)),
                     IT_OUT(INT32, 2, 3, 2), z),
              INV, "does not match output");
    uint16_t h[] = {0x3c00, 0x7fc1, 0xff80}, hz[3];
    CHECK_OK(it_run(OP(IDENTITY), NULL, 1, IT_ARGS(IT_IN(BF16, h, 1, 3)), IT_OUT(BF16, 1, 3), hz));
    CHECK(hz[0] == 0x3c00 && hz[2] == 0xff80 && (hz[1] & 0x7f80) == 0x7f80 && (hz[1] & 0x7f));
    int64_t i48[] = {-(INT64_C(1) << 47), (INT64_C(1) << 47) - 1}, z48[2];
    CHECK_OK(it_run(OP(IDENTITY), NULL, 1, IT_ARGS(IT_IN(INT48, i48, 1, 2)), IT_OUT(INT48, 1, 2), z48));
    CHECK(z48[0] == i48[0] && z48[1] == i48[1]);
    int64_t over[] = {INT64_C(1) << 47};
    CHECK_ERR(it_run(OP(IDENTITY), NULL, 1, IT_ARGS(IT_IN(INT48, over, 1, 1)), IT_OUT(INT48, 1, 1), z48),
              CTOSA_ERR_FORMAT, "outside the int48 range");
    int8_t i4[] = {-8, 7}, i4z[2], i4bad[] = {8};
    CHECK_OK(it_run(OP(IDENTITY), NULL, 1, IT_ARGS(IT_IN(INT4, i4, 1, 2)), IT_OUT(INT4, 1, 2), i4z));
    CHECK(i4z[0] == -8 && i4z[1] == 7);
    CHECK_ERR(it_run(OP(IDENTITY), NULL, 1, IT_ARGS(IT_IN(INT4, i4bad, 1, 1)), IT_OUT(INT4, 1, 1), i4z),
              CTOSA_ERR_FORMAT, "int4 range");
}

static void test_reverse_slice_tile(void) {
    int32_t a[] = {1, 2, 3, 4, 5, 6}, z[12];
    ctosa_attr ax = {0};
    CHECK_OK(it_run(OP(REVERSE), &ax, 1, IT_ARGS(IT_IN(INT32, a, 2, 3, 2)), IT_OUT(INT32, 2, 3, 2), z));
    int32_t r0[] = {5, 6, 3, 4, 1, 2};
    CHECK(memcmp(z, r0, sizeof r0) == 0);
    ax.axis = 1;
    CHECK_OK(it_run(OP(REVERSE), &ax, 1, IT_ARGS(IT_IN(INT32, a, 2, 3, 2)), IT_OUT(INT32, 2, 3, 2), z));
    int32_t r1[] = {2, 1, 4, 3, 6, 5};
    CHECK(memcmp(z, r1, sizeof r1) == 0);
    int16_t m[12];
    for (int i = 0; i < 12; i++) m[i] = (int16_t)i;
    int16_t sz[4];
    int64_t st[] = {1, 1}, size[] = {2, 2};
    CHECK_OK(it_run(OP(SLICE), NULL, 3,
                    IT_ARGS(IT_IN(INT16, m, 2, 3, 4), IT_CONST(SHAPE, st, 1, 2), IT_CONST(SHAPE, size, 1, 2)),
                    IT_OUT(INT16, 2, 2, 2), sz));
    CHECK(sz[0] == 5 && sz[1] == 6 && sz[2] == 9 && sz[3] == 10);
    int64_t st2[] = {2, 3};
    CHECK_ERR(
        it_run(OP(SLICE), NULL, 3,
               IT_ARGS(IT_IN(INT16, m, 2, 3, 4), IT_CONST(SHAPE, st2, 1, 2), IT_CONST(SHAPE, size, 1, 2)),
               IT_OUT(INT16, 2, 2, 2), sz),
        INV, "does not fit input [3,4]");
    int64_t mul[] = {2, 2};
    CHECK_OK(it_run(OP(TILE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 1, 2), IT_CONST(SHAPE, mul, 1, 2)),
                    IT_OUT(INT32, 2, 2, 4), z));
    int32_t t0[] = {1, 2, 1, 2, 1, 2, 1, 2};
    CHECK(memcmp(z, t0, sizeof t0) == 0);
    int64_t mul2[] = {1, 3};
    CHECK_OK(it_run(OP(TILE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 1), IT_CONST(SHAPE, mul2, 1, 2)),
                    IT_OUT(INT32, 2, 2, 3), z));
    int32_t t1[] = {1, 1, 1, 2, 2, 2};
    CHECK(memcmp(z, t1, sizeof t1) == 0);
    CHECK_ERR(it_run(OP(TILE), NULL, 2, IT_ARGS(IT_IN(INT32, a, 2, 2, 1), IT_CONST(SHAPE, mul2, 1, 2)),
                     IT_OUT(INT32, 2, 2, 4), z),
              INV, "is not output");
}

static void test_transpose(void) {
    int32_t a[] = {1, 2, 3, 4, 5, 6}, z[6];
    ctosa_attr at = {0};
    int32_t p10[] = {1, 0};
    at.perms = (ctosa_i32s){p10, 2};
    CHECK_OK(it_run(OP(TRANSPOSE), &at, 1, IT_ARGS(IT_IN(INT32, a, 2, 2, 3)), IT_OUT(INT32, 2, 3, 2), z));
    int32_t want[] = {1, 4, 2, 5, 3, 6};
    CHECK(memcmp(z, want, sizeof want) == 0);
    /* rank 3, perms [2,0,1]: out[k][i][j] = in[i][j][k] */
    float in[24], out[24];
    for (int i = 0; i < 24; i++) in[i] = (float)i;
    int32_t p201[] = {2, 0, 1};
    at.perms = (ctosa_i32s){p201, 3};
    CHECK_OK(
        it_run(OP(TRANSPOSE), &at, 1, IT_ARGS(IT_IN(FP32, in, 3, 2, 3, 4)), IT_OUT(FP32, 3, 4, 2, 3), out));
    CHECK(out[0] == 0 && out[1] == 4 && out[3] == 12 && out[6] == 1 && out[23] == 23);
    CHECK(out[1 * 6 + 1 * 3 + 2] == in[1 * 12 + 2 * 4 + 1]);
    int32_t dup[] = {0, 0, 1};
    at.perms = (ctosa_i32s){dup, 3};
    CHECK_ERR(
        it_run(OP(TRANSPOSE), &at, 1, IT_ARGS(IT_IN(FP32, in, 3, 2, 3, 4)), IT_OUT(FP32, 3, 2, 2, 3), out),
        INV, "repeated");
}

static void test_gather_scatter(void) {
    int32_t v[] = {1, 2, 3, 4, 5, 6}, idx[] = {2, 0}, z[4];
    CHECK_OK(it_run(OP(GATHER), NULL, 2, IT_ARGS(IT_IN(INT32, v, 3, 1, 3, 2), IT_IN(INT32, idx, 2, 1, 2)),
                    IT_OUT(INT32, 3, 1, 2, 2), z));
    CHECK(z[0] == 5 && z[1] == 6 && z[2] == 1 && z[3] == 2);
    int32_t bad[] = {3, 0};
    CHECK_ERR(it_run(OP(GATHER), NULL, 2, IT_ARGS(IT_IN(INT32, v, 3, 1, 3, 2), IT_IN(INT32, bad, 2, 1, 2)),
                     IT_OUT(INT32, 3, 1, 2, 2), z),
              INV, "index 3 at [0,0] is outside 0..2");
    int8_t vin[] = {0, 0, 0}, in[] = {7, 8}, out[3];
    CHECK_OK(
        it_run(OP(SCATTER), NULL, 3,
               IT_ARGS(IT_IN(INT8, vin, 3, 1, 3, 1), IT_IN(INT32, idx, 2, 1, 2), IT_IN(INT8, in, 3, 1, 2, 1)),
               IT_OUT(INT8, 3, 1, 3, 1), out));
    CHECK(out[0] == 8 && out[1] == 0 && out[2] == 7);
    int32_t twice[] = {1, 1};
    CHECK_ERR(it_run(OP(SCATTER), NULL, 3,
                     IT_ARGS(IT_IN(INT8, vin, 3, 1, 3, 1), IT_IN(INT32, twice, 2, 1, 2),
                             IT_IN(INT8, in, 3, 1, 2, 1)),
                     IT_OUT(INT8, 3, 1, 3, 1), out),
              INV, "written twice");
}

/* ------------------------------------------------------------ runtime */

typedef struct gb {
    ctosa_graph *g;
    ctosa_block *b;
} gb;

static gb gb_region(ctosa_graph *g, const char *name) {
    gb r = {g, NULL};
    ctosa_region *reg;
    CHECK_OK(ctosa_graph_add_region(g, name, &reg));
    CHECK_OK(ctosa_region_add_block(g, reg, name, &r.b));
    return r;
}

static ctosa_tensor *gb_t(gb *x, const char *name, ctosa_dtype dt, uint32_t rank, const int32_t *dims) {
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(x->g, x->b, name, dt, rank, dims, &t));
    return t;
}

static void gb_op(gb *x, ctosa_op_kind k, const ctosa_attr *attr, uint32_t ni, const char **in, uint32_t no,
                  const char **out) {
    CHECK_OK(ctosa_block_add_op(x->g, x->b, k, ni, in, no, out, attr, NULL));
}

static void gb_const_i32(gb *x, const char *name, uint32_t rank, const int32_t *dims, const int32_t *v,
                         size_t n) {
    ctosa_tensor *t = gb_t(x, name, CTOSA_DTYPE_INT32, rank, dims);
    CHECK_OK(ctosa_tensor_set_data(x->g, t, v, n * 4, true));
    const char *o[] = {name};
    gb_op(x, OP(CONST), NULL, 0, NULL, 1, o);
}

static ctosa_error *run1(ctosa_interp *it, const char *in, const int32_t *v, uint32_t rank,
                         const int64_t *dims, uint64_t n, const char *out, int32_t *res, uint64_t rn) {
    ctosa_error *e = ctosa_interp_set_input(it, in, CTOSA_DTYPE_INT32, rank, dims, v, n * 4);
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, out, &t);
    if (!e) memcpy(res, t.data, (size_t)(rn * 4));
    return e;
}

static void test_memory_reuse_chain(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main");
    int32_t d[] = {64};
    const char *names[] = {"x", "a", "b", "c", "d", "e"};
    for (int i = 0; i < 6; i++) gb_t(&m, names[i], CTOSA_DTYPE_INT32, 1, d);
    for (int i = 0; i < 5; i++) {
        const char *in[] = {names[i], names[i]}, *out[] = {names[i + 1]};
        gb_op(&m, OP(ADD), NULL, 2, in, 1, out);
    }
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "e"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "b"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t x[64], e[64], b[64];
    for (int i = 0; i < 64; i++) x[i] = i - 20;
    int64_t dims[] = {64};
    CHECK_OK(run1(it, "x", x, 1, dims, 64, "e", e, 64));
    ctosa_interp_tensor t;
    CHECK_OK(ctosa_interp_get_output(it, "b", &t));
    memcpy(b, t.data, sizeof b);
    bool ok = true;
    for (int i = 0; i < 64; i++) ok &= e[i] == 32 * x[i] && b[i] == 4 * x[i];
    CHECK(ok);
    /* input checks */
    int64_t wrong[] = {63};
    CHECK_ERR(ctosa_interp_set_input(it, "x", CTOSA_DTYPE_INT32, 1, wrong, x, 63 * 4), CTOSA_ERR_USAGE,
              "input 'x': expected int32[64], got int32[63]");
    CHECK_ERR(ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 1, dims, x, 64 * 4), CTOSA_ERR_USAGE,
              "expected int32[64], got fp32[64]");
    CHECK_ERR(ctosa_interp_set_input(it, "nope", CTOSA_DTYPE_INT32, 1, dims, x, 64 * 4), CTOSA_ERR_USAGE,
              "'nope' is not an input");
    CHECK_ERR(ctosa_interp_get_output(it, "a", &t), CTOSA_ERR_USAGE, "not an output");
    CHECK(ctosa_interp_input_count(it) == 1 && ctosa_interp_output_count(it) == 2);
    CHECK_OK(ctosa_interp_output_info(it, 1, &t));
    CHECK(strcmp(t.name, "b") == 0 && t.rank == 1 && t.shape[0] == 64 && t.size == 256);
    ctosa_interp_free(it);
    /* not set -> error; memory limit -> CTOSA_ERR_LIMIT */
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_USAGE, "input 'x' (int32[64]) has not been set");
    ctosa_interp_free(it);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.max_memory = 600;
    CHECK_ERR(ctosa_interp_create(g, &opt, &it), CTOSA_ERR_LIMIT, "memory limit of 600 bytes");
    ctosa_graph_free(g);
}

static void test_limits_and_plan_errors(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main");
    int32_t big[17];
    for (int i = 0; i < 17; i++) big[i] = 1;
    gb_t(&m, "x", CTOSA_DTYPE_FP32, 17, big);
    gb_t(&m, "y", CTOSA_DTYPE_FP32, 17, big);
    const char *in[] = {"x"}, *out[] = {"y"};
    gb_op(&m, OP(IDENTITY), NULL, 1, in, 1, out);
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    ctosa_interp *it;
    CHECK_ERR(ctosa_interp_create(g, NULL, &it), CTOSA_ERR_LIMIT, "tensor 'x' has rank 17");
    ctosa_graph_free(g);

    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    m = gb_region(g, "main");
    int32_t huge[] = {1 << 20, 1 << 20, 1 << 10};
    gb_t(&m, "x", CTOSA_DTYPE_FP32, 3, huge);
    gb_t(&m, "y", CTOSA_DTYPE_FP32, 3, huge);
    gb_op(&m, OP(IDENTITY), NULL, 1, in, 1, out);
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    CHECK_ERR(ctosa_interp_create(g, NULL, &it), CTOSA_ERR_LIMIT, "memory limit");
    ctosa_graph_free(g);

    /* a tensor read before it is produced, and an arity error */
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    m = gb_region(g, "main");
    int32_t d[] = {2};
    gb_t(&m, "x", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&m, "y", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&m, "z", CTOSA_DTYPE_INT32, 1, d);
    const char *i2[] = {"x", "z"}, *o2[] = {"y"};
    gb_op(&m, OP(ADD), NULL, 2, i2, 1, o2);
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    CHECK_ERR(ctosa_interp_create(g, NULL, &it), INV,
              "op #0 ADD 'y': input 'z' is read before any operator produces it");
    ctosa_graph_free(g);

    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    m = gb_region(g, "main");
    gb_t(&m, "x", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&m, "y", CTOSA_DTYPE_INT32, 1, d);
    const char *i3[] = {"x", "x", "x"};
    gb_op(&m, OP(ADD), NULL, 3, i3, 1, o2);
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t xv[] = {1, 2};
    int64_t dd[] = {2};
    CHECK_OK(ctosa_interp_set_input(it, "x", CTOSA_DTYPE_INT32, 1, dd, xv, 8));
    CHECK_ERR(ctosa_interp_run(it), INV, "op #0 ADD 'y': has 3 inputs, the operator takes 2");
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

static void test_const_decoding(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main");
    int32_t d4[] = {4}, d2[] = {2};
    ctosa_tensor *c4 = gb_t(&m, "c4", CTOSA_DTYPE_INT4, 1, d4);
    const uint8_t nib[] = {0x21, 0xf8}; /* 1, 2, -8, -1 */
    CHECK_OK(ctosa_tensor_set_data(g, c4, nib, 2, true));
    ctosa_tensor *c48 = gb_t(&m, "c48", CTOSA_DTYPE_INT48, 1, d2);
    const uint8_t b48[] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00};
    CHECK_OK(ctosa_tensor_set_data(g, c48, b48, 12, true));
    ctosa_tensor *ch = gb_t(&m, "ch", CTOSA_DTYPE_FP16, 1, d2);
    const uint8_t bh[] = {0x00, 0x3c, 0x00, 0xc0}; /* 1.0, -2.0 */
    CHECK_OK(ctosa_tensor_set_data(g, ch, bh, 4, true));
    const char *names[] = {"c4", "c48", "ch"};
    for (int i = 0; i < 3; i++) {
        const char *o[] = {names[i]};
        gb_op(&m, OP(CONST), NULL, 0, NULL, 1, o);
    }
    gb_t(&m, "o4", CTOSA_DTYPE_INT4, 1, d4);
    gb_t(&m, "o48", CTOSA_DTYPE_INT48, 1, d2);
    gb_t(&m, "oh", CTOSA_DTYPE_FP16, 1, d2);
    const char *i1[] = {"c4"}, *o1[] = {"o4"}, *i2[] = {"c48"}, *o2[] = {"o48"};
    const char *i3[] = {"ch", "ch"}, *o3[] = {"oh"};
    gb_op(&m, OP(IDENTITY), NULL, 1, i1, 1, o1);
    gb_op(&m, OP(IDENTITY), NULL, 1, i2, 1, o2);
    gb_op(&m, OP(ADD), NULL, 2, i3, 1, o3);
    CHECK_OK(ctosa_block_add_output(g, m.b, "o4"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "o48"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "oh"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    CHECK_OK(ctosa_interp_run(it));
    ctosa_interp_tensor t;
    CHECK_OK(ctosa_interp_get_output(it, "o4", &t));
    const int8_t *v4 = t.data;
    CHECK(v4[0] == 1 && v4[1] == 2 && v4[2] == -8 && v4[3] == -1);
    CHECK_OK(ctosa_interp_get_output(it, "o48", &t));
    const int64_t *v48 = t.data;
    CHECK(v48[0] == -2 && v48[1] == INT64_C(0x123456789a));
    CHECK_OK(ctosa_interp_get_output(it, "oh", &t));
    const uint16_t *vh = t.data;
    CHECK(t.size == 4 && vh[0] == 0x4000 && vh[1] == 0xc400);
    ctosa_interp_free(it);
    /* constant data shorter than the shape needs */
    ctosa_tensor_set_data(g, ch, bh, 3, true);
    CHECK_ERR(ctosa_interp_create(g, NULL, &it), CTOSA_ERR_FORMAT,
              "tensor 'ch': constant data has 3 bytes, its fp16 shape needs 4");
    ctosa_graph_free(g);
}

/* main: y = COND_IF(c, x) with then: a + a, else: identity. */
static void test_cond_if(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main"), th = gb_region(g, "then"), el = gb_region(g, "else");
    int32_t d[] = {2}, d1[] = {1};
    gb_t(&m, "c", CTOSA_DTYPE_BOOL, 1, d1);
    gb_t(&m, "x", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&m, "y", CTOSA_DTYPE_INT32, 1, d);
    ctosa_attr at = {0};
    at.then_graph = "then";
    at.else_graph = "else";
    const char *in[] = {"c", "x"}, *out[] = {"y"};
    gb_op(&m, OP(COND_IF), &at, 2, in, 1, out);
    CHECK_OK(ctosa_block_add_input(g, m.b, "c"));
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    gb_t(&th, "a", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&th, "r", CTOSA_DTYPE_INT32, 1, d);
    const char *ti[] = {"a", "a"}, *to[] = {"r"};
    gb_op(&th, OP(ADD), NULL, 2, ti, 1, to);
    CHECK_OK(ctosa_block_add_input(g, th.b, "a"));
    CHECK_OK(ctosa_block_add_output(g, th.b, "r"));
    gb_t(&el, "a", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&el, "r", CTOSA_DTYPE_INT32, 1, d);
    const char *ei[] = {"a"};
    gb_op(&el, OP(IDENTITY), NULL, 1, ei, 1, to);
    CHECK_OK(ctosa_block_add_input(g, el.b, "a"));
    CHECK_OK(ctosa_block_add_output(g, el.b, "r"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t x[] = {3, -4}, y[2];
    int64_t dx[] = {2}, dc[] = {1};
    uint8_t c1 = 1, c0 = 0;
    CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, dc, &c1, 1));
    CHECK_OK(run1(it, "x", x, 1, dx, 2, "y", y, 2));
    CHECK(y[0] == 6 && y[1] == -8);
    CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, dc, &c0, 1));
    CHECK_OK(run1(it, "x", x, 1, dx, 2, "y", y, 2));
    CHECK(y[0] == 3 && y[1] == -4);
    ctosa_interp_free(it);
    /* a missing region is reported when the branch runs */
    at.else_graph = "nowhere";
    ctosa_graph_region(g, 0)->blocks[0]->ops[0]->attr.else_graph = "nowhere";
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, dc, &c0, 1));
    CHECK_ERR(run1(it, "x", x, 1, dx, 2, "y", y, 2), INV,
              "op #0 COND_IF 'y': region or block 'nowhere' does not exist");
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

/* (i, acc) = WHILE_LOOP(0, 0): cond i < lim (lim captured from main),
 * body i + 1, acc + i. */
static void test_while_loop(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main"), c = gb_region(g, "cond"), b = gb_region(g, "body");
    int32_t one_v[] = {1};
    gb_t(&m, "i0", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&m, "lim", CTOSA_DTYPE_INT32, 0, NULL);
    gb_const_i32(&m, "one", 0, NULL, one_v, 1);
    gb_t(&m, "i", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&m, "acc", CTOSA_DTYPE_INT32, 0, NULL);
    ctosa_attr at = {0};
    at.cond_graph = "cond";
    at.body_graph = "body";
    const char *in[] = {"i0", "i0"}, *out[] = {"i", "acc"};
    gb_op(&m, OP(WHILE_LOOP), &at, 2, in, 2, out);
    CHECK_OK(ctosa_block_add_input(g, m.b, "i0"));
    CHECK_OK(ctosa_block_add_input(g, m.b, "lim"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "i"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "acc"));
    gb_t(&c, "ci", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&c, "cacc", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&c, "go", CTOSA_DTYPE_BOOL, 0, NULL);
    const char *gi[] = {"lim", "ci"}, *go[] = {"go"};
    gb_op(&c, OP(GREATER), NULL, 2, gi, 1, go);
    CHECK_OK(ctosa_block_add_input(g, c.b, "ci"));
    CHECK_OK(ctosa_block_add_input(g, c.b, "cacc"));
    CHECK_OK(ctosa_block_add_output(g, c.b, "go"));
    gb_t(&b, "bi", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&b, "bacc", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&b, "ni", CTOSA_DTYPE_INT32, 0, NULL);
    gb_t(&b, "nacc", CTOSA_DTYPE_INT32, 0, NULL);
    const char *a1[] = {"bi", "one"}, *r1[] = {"ni"}, *a2[] = {"bacc", "bi"}, *r2[] = {"nacc"};
    gb_op(&b, OP(ADD), NULL, 2, a1, 1, r1);
    gb_op(&b, OP(ADD), NULL, 2, a2, 1, r2);
    CHECK_OK(ctosa_block_add_input(g, b.b, "bi"));
    CHECK_OK(ctosa_block_add_input(g, b.b, "bacc"));
    CHECK_OK(ctosa_block_add_output(g, b.b, "ni"));
    CHECK_OK(ctosa_block_add_output(g, b.b, "nacc"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t zero = 0, lim = 5, r[1];
    CHECK_OK(ctosa_interp_set_input(it, "i0", CTOSA_DTYPE_INT32, 0, NULL, &zero, 4));
    CHECK_OK(ctosa_interp_set_input(it, "lim", CTOSA_DTYPE_INT32, 0, NULL, &lim, 4));
    CHECK_OK(ctosa_interp_run(it));
    ctosa_interp_tensor t;
    CHECK_OK(ctosa_interp_get_output(it, "i", &t));
    CHECK(*(int32_t *)t.data == 5);
    CHECK_OK(ctosa_interp_get_output(it, "acc", &t));
    CHECK(*(int32_t *)t.data == 10);
    lim = -1; /* the body never runs */
    CHECK_OK(ctosa_interp_set_input(it, "lim", CTOSA_DTYPE_INT32, 0, NULL, &lim, 4));
    CHECK_OK(ctosa_interp_run(it));
    CHECK_OK(ctosa_interp_get_output(it, "i", &t));
    memcpy(r, t.data, 4);
    CHECK(r[0] == 0);
    ctosa_interp_free(it);
    /* an iteration limit stops a loop */
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.max_iterations = 3;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    lim = 100;
    CHECK_OK(ctosa_interp_set_input(it, "i0", CTOSA_DTYPE_INT32, 0, NULL, &zero, 4));
    CHECK_OK(ctosa_interp_set_input(it, "lim", CTOSA_DTYPE_INT32, 0, NULL, &lim, 4));
    CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_LIMIT, "more than 3 iterations");
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

/* A variable accumulates x across runs, written once by IDENTITY (as MLIR
 * emits) and once by VARIABLE_WRITE, read by VARIABLE_READ. */
static void test_variables(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main");
    int32_t d[] = {1};
    ctosa_tensor *v = gb_t(&m, "v", CTOSA_DTYPE_INT32, 1, d);
    v->variable = true;
    v->variable_name = "state";
    int32_t init = 100;
    CHECK_OK(ctosa_tensor_set_data(g, v, &init, 4, true));
    const char *names[] = {"x", "r", "s", "w", "s2"};
    for (int i = 0; i < 5; i++) gb_t(&m, names[i], CTOSA_DTYPE_INT32, 1, d);
    const char *vi[] = {"v"}, *vr[] = {"r"};
    gb_op(&m, OP(VARIABLE_READ), NULL, 1, vi, 1, vr);
    const char *ai[] = {"r", "x"}, *ao[] = {"s"};
    gb_op(&m, OP(ADD), NULL, 2, ai, 1, ao);
    const char *wi[] = {"v", "s"};
    gb_op(&m, OP(VARIABLE_WRITE), NULL, 2, wi, 0, NULL);
    const char *ii[] = {"v"}, *io[] = {"w"};
    gb_op(&m, OP(IDENTITY), NULL, 1, ii, 1, io);
    const char *bi[] = {"w", "w"}, *bo[] = {"s2"};
    gb_op(&m, OP(ADD), NULL, 2, bi, 1, bo);
    const char *ki[] = {"s2"}, *ko[] = {"v"};
    gb_op(&m, OP(IDENTITY), NULL, 1, ki, 1, ko); /* v = 2 * (v + x) */
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "s"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t x = 5, s[1];
    int64_t dims[] = {1};
    CHECK_OK(run1(it, "x", &x, 1, dims, 1, "s", s, 1));
    CHECK(s[0] == 105);
    CHECK_OK(run1(it, "x", &x, 1, dims, 1, "s", s, 1));
    CHECK(s[0] == 215); /* v was 210 */
    ctosa_interp_free(it);
    /* a fresh interpreter starts from the initial value again */
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    CHECK_OK(run1(it, "x", &x, 1, dims, 1, "s", s, 1));
    CHECK(s[0] == 105);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

static ctosa_error *double_it(void *user, const ctosa_interp_tensor *in, uint32_t n_in,
                              ctosa_interp_tensor *out, uint32_t n_out, const uint8_t *attrs,
                              uint32_t n_attrs) {
    int *calls = user;
    (*calls)++;
    if (n_in != 1 || n_out != 1 || n_attrs != 3 || memcmp(attrs, "k=2", 3) != 0)
        return ctosa_error_new(CTOSA_ERR_INVALID, "unexpected arguments");
    const int32_t *a = in[0].data;
    int32_t *z = out[0].data;
    for (uint64_t i = 0; i < in[0].count; i++) z[i] = 2 * a[i];
    return NULL;
}

static void test_custom(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    gb m = gb_region(g, "main");
    int32_t d[] = {3};
    gb_t(&m, "x", CTOSA_DTYPE_INT32, 1, d);
    gb_t(&m, "y", CTOSA_DTYPE_INT32, 1, d);
    ctosa_attr at = {0};
    at.domain_name = "org.example";
    at.operator_name = "double";
    at.implementation_attrs = (ctosa_bytes){(const uint8_t *)"k=2", 3};
    const char *in[] = {"x"}, *out[] = {"y"};
    gb_op(&m, OP(CUSTOM), &at, 1, in, 1, out);
    CHECK_OK(ctosa_block_add_input(g, m.b, "x"));
    CHECK_OK(ctosa_block_add_output(g, m.b, "y"));
    ctosa_interp *it;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    int32_t x[] = {1, -2, 3}, y[3];
    int64_t dims[] = {3};
    CHECK_ERR(run1(it, "x", x, 1, dims, 3, "y", y, 3), CTOSA_ERR_UNSUPPORTED,
              "op #0 CUSTOM 'y': no kernel is registered for custom operator 'double' of domain "
              "'org.example'");
    int calls = 0;
    CHECK_OK(ctosa_interp_register_custom(it, "org.example", "double", double_it, &calls));
    CHECK_OK(run1(it, "x", x, 1, dims, 3, "y", y, 3));
    CHECK(calls == 1 && y[0] == 2 && y[1] == -4 && y[2] == 6);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
}

/* 1.1 shape operators (EXT-SHAPE) on CONST_SHAPE inputs. */
static void test_shape_ops(void) {
    int64_t a[] = {7, 8, 1}, b[] = {2, 3, 1}, z[4];
    CHECK_OK(it_run(OP(ADD_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, a, 1, 3), IT_CONST(SHAPE, b, 1, 3)),
                    IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 9 && z[1] == 11 && z[2] == 2);
    CHECK_OK(it_run(OP(DIV_CEIL_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, a, 1, 3), IT_CONST(SHAPE, b, 1, 3)),
                    IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 4 && z[1] == 3 && z[2] == 1);
    CHECK_OK(it_run(OP(DIV_FLOOR_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, a, 1, 3), IT_CONST(SHAPE, b, 1, 3)),
                    IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 3 && z[1] == 2 && z[2] == 1);
    CHECK_OK(it_run(OP(MOD_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, a, 1, 3), IT_CONST(SHAPE, b, 1, 3)),
                    IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 1 && z[1] == 2 && z[2] == 0);
    int64_t zero[] = {0, 1, 1};
    CHECK_ERR(it_run(OP(MOD_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, a, 1, 3), IT_CONST(SHAPE, zero, 1, 3)),
                     IT_OUT(SHAPE, 1, 3), z),
              INV, "REQUIRE failed at element 0 (7, 0)");
    int64_t big[] = {INT64_MAX, 1, 1};
    CHECK_ERR(it_run(OP(MUL_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, big, 1, 3), IT_CONST(SHAPE, b, 1, 3)),
                     IT_OUT(SHAPE, 1, 3), z),
              INV, "REQUIRE");
    int64_t l[] = {1, 5, 8};
    CHECK_OK(it_run(OP(LOG2_CEIL_SHAPE), NULL, 1, IT_ARGS(IT_CONST(SHAPE, l, 1, 3)), IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 0 && z[1] == 3 && z[2] == 3);
    CHECK_OK(
        it_run(OP(LOG2_FLOOR_SHAPE), NULL, 1, IT_ARGS(IT_CONST(SHAPE, l, 1, 3)), IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 0 && z[1] == 2 && z[2] == 3);
    CHECK_OK(it_run(OP(EXP2_SHAPE), NULL, 1, IT_ARGS(IT_CONST(SHAPE, l, 1, 3)), IT_OUT(SHAPE, 1, 3), z));
    CHECK(z[0] == 2 && z[1] == 32 && z[2] == 256);
    CHECK_OK(it_run(OP(CONCAT_SHAPE), NULL, 2, IT_ARGS(IT_CONST(SHAPE, l, 1, 3), IT_CONST(SHAPE, b, 1, 1)),
                    IT_OUT(SHAPE, 1, 4), z));
    CHECK(z[0] == 1 && z[2] == 8 && z[3] == 2);
    int32_t st[] = {1}, sz[] = {2};
    CHECK_OK(it_run(OP(SLICE_SHAPE), NULL, 3,
                    IT_ARGS(IT_CONST(SHAPE, l, 1, 3), IT_CONST(INT32, st, 1, 1), IT_CONST(INT32, sz, 1, 1)),
                    IT_OUT(SHAPE, 1, 2), z));
    CHECK(z[0] == 5 && z[1] == 8);
    float v[6] = {0};
    ctosa_attr ax = {0};
    ax.axis = 1;
    CHECK_OK(it_run(OP(DIM), &ax, 1, IT_ARGS(IT_IN(FP32, v, 2, 2, 3)), IT_OUT(SHAPE, 1, 1), z));
    CHECK(z[0] == 3);
    /* ASSERT_EQUAL_SHAPE has no output: a graph of its own */
    int64_t s1[] = {1, 4}, s2[] = {3, 4}, s3[] = {3, 5};
    const int64_t *second[] = {s2, s3};
    for (int k = 0; k < 2; k++) {
        for (int bcast = 0; bcast < 2; bcast++) {
            ctosa_graph *g;
            CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_1_DRAFT, &g));
            gb m = gb_region(g, "main");
            CHECK_OK(ctosa_block_add_shape(g, m.b, "p", 2, s1, NULL));
            CHECK_OK(ctosa_block_add_shape(g, m.b, "q", 2, second[k], NULL));
            const char *pn[] = {"p"}, *qn[] = {"q"}, *in[] = {"p", "q"};
            gb_op(&m, OP(CONST_SHAPE), NULL, 0, NULL, 1, pn);
            gb_op(&m, OP(CONST_SHAPE), NULL, 0, NULL, 1, qn);
            ctosa_attr bc = {0};
            bc.allow_broadcast = bcast;
            gb_op(&m, OP(ASSERT_EQUAL_SHAPE), &bc, 2, in, 0, NULL);
            ctosa_interp *it;
            CHECK_OK(ctosa_interp_create(g, NULL, &it));
            ctosa_error *e = ctosa_interp_run(it);
            if (k == 0 && bcast) CHECK_OK(e);
            else CHECK_ERR(e, INV, k && bcast ? "element 1: 4 vs 5" : "element 0: 1 vs 3");
            ctosa_interp_free(it);
            ctosa_graph_free(g);
        }
    }
}

/* Random TRANSPOSE / SLICE / PAD / TILE / REVERSE of rank 1..5 checked
 * against a naive per-element index mapping, with 1..3 threads; every
 * fourth case is large enough to be split across threads. */
static uint64_t lrng = 7;
static int lrnd(int n) {
    lrng = lrng * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((lrng >> 33) % (uint64_t)n);
}

static void test_random_layout(void) {
    for (int iter = 0; iter < 60; iter++) {
        bool large = iter % 4 == 3;
        uint32_t rank = large ? 4 : 1 + (uint32_t)lrnd(5);
        int kind = iter % 5; /* 0 transpose, 1 slice, 2 pad, 3 tile, 4 reverse */
        int64_t in_s[5], out_s[5], p0[5], p1[5];
        int32_t perm[5];
        uint64_t nin = 1, nout = 1;
        for (uint32_t d = 0; d < rank; d++) {
            in_s[d] = large ? 16 + lrnd(6) : 1 + lrnd(5);
            nin *= (uint64_t)in_s[d];
            perm[d] = (int32_t)d;
        }
        for (uint32_t d = rank; d > 1; d--) { /* shuffle */
            uint32_t j = (uint32_t)lrnd((int)d);
            int32_t t = perm[d - 1];
            perm[d - 1] = perm[j];
            perm[j] = t;
        }
        for (uint32_t d = 0; d < rank; d++) {
            switch (kind) {
            case 0: out_s[d] = in_s[perm[d]]; break;
            case 1:
                p1[d] = 1 + lrnd((int)in_s[d]);
                p0[d] = lrnd((int)(in_s[d] - p1[d] + 1));
                out_s[d] = p1[d];
                break;
            case 2:
                p0[d] = lrnd(3);
                p1[d] = lrnd(3);
                out_s[d] = in_s[d] + p0[d] + p1[d];
                break;
            case 3:
                p0[d] = 1 + lrnd(large ? 2 : 3);
                out_s[d] = in_s[d] * p0[d];
                break;
            default: out_s[d] = in_s[d]; break;
            }
            nout *= (uint64_t)out_s[d];
        }
        int axis = lrnd((int)rank);
        int16_t *in = malloc(nin * 2), *z = malloc(nout * 2), pc = -77;
        for (uint64_t i = 0; i < nin; i++) in[i] = (int16_t)(i * 7 + 3);
        it_arg a = {CTOSA_DTYPE_INT16, rank, {0}, in, false}, o = {CTOSA_DTYPE_INT16, rank, {0}, NULL, false};
        for (uint32_t d = 0; d < rank; d++) a.dims[d] = in_s[d], o.dims[d] = out_s[d];
        int64_t v0[10], v1[5];
        ctosa_attr at = {0};
        ctosa_error *e = NULL;
        int th = 1 + iter % 3;
        switch (kind) {
        case 0:
            at.perms = (ctosa_i32s){perm, rank};
            e = it_run_threads(OP(TRANSPOSE), &at, 1, &a, o, z, th);
            break;
        case 1:
            for (uint32_t d = 0; d < rank; d++) v0[d] = p0[d], v1[d] = p1[d];
            e = it_run_threads(OP(SLICE), NULL, 3,
                               IT_ARGS(a, IT_CONST(SHAPE, v0, 1, rank), IT_CONST(SHAPE, v1, 1, rank)), o, z,
                               th);
            break;
        case 2:
            for (uint32_t d = 0; d < rank; d++) v0[2 * d] = p0[d], v0[2 * d + 1] = p1[d];
            e = it_run_threads(OP(PAD), NULL, 3,
                               IT_ARGS(a, IT_CONST(SHAPE, v0, 1, 2 * rank), IT_CONST(INT16, &pc, 1, 1)), o, z,
                               th);
            break;
        case 3:
            for (uint32_t d = 0; d < rank; d++) v0[d] = p0[d];
            e = it_run_threads(OP(TILE), NULL, 2, IT_ARGS(a, IT_CONST(SHAPE, v0, 1, rank)), o, z, th);
            break;
        default:
            at.axis = axis;
            e = it_run_threads(OP(REVERSE), &at, 1, &a, o, z, th);
            break;
        }
        CHECK_OK(e);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < nout; i++) {
            int64_t idx[5], src[5];
            uint64_t rem = i;
            for (int d = (int)rank - 1; d >= 0; d--) {
                idx[d] = (int64_t)(rem % (uint64_t)out_s[d]);
                rem /= (uint64_t)out_s[d];
            }
            bool is_pad = false;
            for (uint32_t d = 0; d < rank; d++) {
                switch (kind) {
                case 0: src[perm[d]] = idx[d]; break;
                case 1: src[d] = idx[d] + p0[d]; break;
                case 2:
                    src[d] = idx[d] - p0[d];
                    is_pad |= src[d] < 0 || src[d] >= in_s[d];
                    break;
                case 3: src[d] = idx[d] % in_s[d]; break;
                default: src[d] = (int)d == axis ? in_s[d] - 1 - idx[d] : idx[d]; break;
                }
            }
            int16_t want = pc;
            if (!is_pad) {
                uint64_t off = 0;
                for (uint32_t d = 0; d < rank; d++) off = off * (uint64_t)in_s[d] + (uint64_t)src[d];
                want = in[off];
            }
            bad += z[i] != want;
        }
        CHECK_MSG(bad == 0, "iteration %d (kind %d, rank %u): %llu wrong of %llu", iter, kind, rank,
                  (unsigned long long)bad, (unsigned long long)nout);
        free(in);
        free(z);
    }
}

int main(void) {
    RUN(test_concat);
    RUN(test_pad);
    RUN(test_reshape_identity);
    RUN(test_reverse_slice_tile);
    RUN(test_transpose);
    RUN(test_gather_scatter);
    RUN(test_memory_reuse_chain);
    RUN(test_limits_and_plan_errors);
    RUN(test_const_decoding);
    RUN(test_cond_if);
    RUN(test_while_loop);
    RUN(test_variables);
    RUN(test_custom);
    RUN(test_shape_ops);
    RUN(test_random_layout);
    return th_finish();
}
