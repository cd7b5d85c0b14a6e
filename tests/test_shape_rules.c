/* test_shape_rules.c - spec_check_op_shapes(): for each shape rule, one
 * operator whose output shape follows from its inputs (no message) and one
 * that breaks the rule (a message naming the rule and the numbers). The
 * operators are built with the builder API and checked directly through a
 * small local context, so these tests do not depend on the type rules. */
#include "harness.h"
#include "spec/validate_internal.h"

static ctosa_graph *G;
static ctosa_block *B;
static int n_ops;

static void reset(void) {
    ctosa_graph_free(G);
    ctosa_region *r;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &G));
    CHECK_OK(ctosa_graph_add_region(G, "main", &r));
    CHECK_OK(ctosa_region_add_block(G, r, "main", &B));
    n_ops = 0;
}

/* Parses "1,4,-2" into v; returns the count. */
static uint32_t parse_list(const char *s, int64_t *v, uint32_t max) {
    uint32_t n = 0;
    while (s && *s && n < max) {
        char *end;
        v[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return n;
}

/* A tensor with dims "1,4,4,4" ("" = rank 0). */
static ctosa_tensor *ten(const char *name, ctosa_dtype dt, const char *dims) {
    int64_t v[16];
    int32_t d[16];
    uint32_t n = parse_list(dims, v, 16);
    for (uint32_t i = 0; i < n; i++) d[i] = (int32_t)v[i];
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(G, B, name, dt, n, d, &t));
    return t;
}
#define F32(n, d) ten(n, CTOSA_DTYPE_FP32, d)
#define I8(n, d) ten(n, CTOSA_DTYPE_INT8, d)

/* A constant shape with values "1,1,0,2". */
static void shape(const char *name, const char *vals) {
    int64_t v[64];
    uint32_t n = parse_list(vals, v, 64);
    CHECK_OK(ctosa_block_add_shape(G, B, name, n, v, NULL));
}

/* Adds the operator (inputs/outputs comma-separated) and runs the shape
 * rules on it. Returns the messages (malloc'd) or NULL. */
static char *run(ctosa_op_kind k, const char *ins, const char *outs, const ctosa_attr *a) {
    char ib[256], ob[256];
    const char *in[16], *out[16];
    uint32_t ni = 0, no = 0;
    snprintf(ib, sizeof ib, "%s", ins);
    snprintf(ob, sizeof ob, "%s", outs);
    for (char *p = strtok(ib, ","); p && ni < 16; p = strtok(NULL, ",")) in[ni++] = p;
    for (char *p = strtok(ob, ","); p && no < 16; p = strtok(NULL, ",")) out[no++] = p;
    ctosa_op *op = NULL;
    CHECK_OK(ctosa_block_add_op(G, B, k, ni, in, no, out, a, &op));
    if (!op) return strdup("(op not added)");
    const ctosa_tensor *it[16] = {0}, *ot[16] = {0};
    bool ic[16] = {0};
    for (uint32_t i = 0; i < ni; i++) it[i] = ctosa_block_find_tensor(G, B, in[i]);
    for (uint32_t i = 0; i < no; i++) ot[i] = ctosa_block_find_tensor(G, B, out[i]);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "op #%d %s '%s'", n_ops++, ctosa_op_name(k), no ? out[0] : "");
    spec_op_ctx c = {
        .g = G, .block = B, .index = 0, .op = op, .prefix = prefix, .in = it, .out = ot, .in_const = ic};
    diag_list d;
    diag_init(&d, 0);
    spec_check_op_shapes(&c, &d);
    ctosa_error *e = diag_finish(&d);
    if (!e) return NULL;
    CHECK(ctosa_error_code(e) == CTOSA_ERR_INVALID);
    char *m = strdup(ctosa_error_message(e));
    ctosa_error_free(e);
    return m;
}

#define PASS(expr)                                   \
    do {                                             \
        char *m_ = (expr);                           \
        CHECK_MSG(m_ == NULL, "unexpected: %s", m_); \
        free(m_);                                    \
    } while (0)
#define FAIL(expr, needle)                                                                              \
    do {                                                                                                \
        char *m_ = (expr);                                                                              \
        CHECK_MSG(m_ &&strstr(m_, needle), "expected '%s', got: %s", needle, m_ ? m_ : "(no message)"); \
        free(m_);                                                                                       \
    } while (0)

static ctosa_i32s V(const int32_t *v, uint32_t n) { return (ctosa_i32s){v, n}; }

static void test_broadcast(void) {
    reset();
    F32("a", "1,4,4,1");
    F32("b", "1,4,4,4");
    F32("y", "1,4,4,4");
    F32("bad", "1,4,4,1");
    F32("r2", "4,4");
    F32("c", "1,4,3,4");
    PASS(run(CTOSA_OP_ADD, "a,b", "y", NULL));
    PASS(run(CTOSA_OP_SUB, "b,a", "y", NULL));
    FAIL(run(CTOSA_OP_ADD, "a,b", "bad", NULL), "op #2 ADD 'bad': output 'bad' shape [1,4,4,1] does not "
                                                "follow from broadcasting the inputs (expected [1,4,4,4])");
    FAIL(run(CTOSA_OP_MAXIMUM, "a,r2", "y", NULL), "input ranks differ");
    FAIL(run(CTOSA_OP_EQUAL, "b,c", "y", NULL), "cannot be broadcast in dimension 2");
    /* SELECT broadcasts three inputs; MUL checks its shift shape too. */
    ten("cond", CTOSA_DTYPE_BOOL, "1,1,4,1");
    PASS(run(CTOSA_OP_SELECT, "cond,a,b", "y", NULL));
    FAIL(run(CTOSA_OP_SELECT, "cond,c,b", "y", NULL), "cannot be broadcast");
    ten("sh", CTOSA_DTYPE_INT8, "1");
    ten("sh2", CTOSA_DTYPE_INT8, "2");
    PASS(run(CTOSA_OP_MUL, "a,b,sh", "y", NULL));
    FAIL(run(CTOSA_OP_MUL, "a,b,sh2", "y", NULL), "shift 'sh2' must have shape [1], has [2]");
    /* rank 0 operands broadcast trivially */
    ten("s0", CTOSA_DTYPE_INT32, "");
    ten("s1", CTOSA_DTYPE_INT32, "");
    ten("s2", CTOSA_DTYPE_INT32, "");
    PASS(run(CTOSA_OP_ADD, "s0,s1", "s2", NULL));
}

static void test_unary(void) {
    reset();
    F32("x", "2,3");
    F32("y", "2,3");
    F32("z", "3,2");
    PASS(run(CTOSA_OP_TANH, "x", "y", NULL));
    FAIL(run(CTOSA_OP_SIGMOID, "x", "z", NULL), "output 'z' shape [3,2] differs from input 'x' shape [2,3]");
    float lo = 0, hi = 6;
    ctosa_attr a = {.min_val = {(const uint8_t *)&lo, 4}, .max_val = {(const uint8_t *)&hi, 4}};
    PASS(run(CTOSA_OP_CLAMP, "x", "y", &a));
    FAIL(run(CTOSA_OP_CLAMP, "x", "z", &a), "differs from input");
    I8("q", "3,2");
    FAIL(run(CTOSA_OP_CAST, "x", "q", NULL), "differs from input");
    /* NEGATE zero points are [1] */
    I8("i", "4");
    I8("o", "4");
    I8("zp", "1");
    I8("zp3", "3");
    PASS(run(CTOSA_OP_NEGATE, "i,zp,zp", "o", NULL));
    FAIL(run(CTOSA_OP_NEGATE, "i,zp3,zp", "o", NULL), "input1_zp 'zp3' must have shape [1]");
}

static void test_argmax_reduce(void) {
    reset();
    F32("x", "2,3,4");
    ten("am", CTOSA_DTYPE_INT32, "2,4");
    ten("am_bad", CTOSA_DTYPE_INT32, "2,3");
    F32("r", "2,3,1");
    F32("r_bad", "2,3");
    ctosa_attr a = {.axis = 1};
    PASS(run(CTOSA_OP_ARGMAX, "x", "am", &a));
    FAIL(run(CTOSA_OP_ARGMAX, "x", "am_bad", &a), "should be input [2,3,4] without axis 1");
    a.axis = 3;
    FAIL(run(CTOSA_OP_ARGMAX, "x", "am", &a), "axis 3 is out of range for input 'x' of rank 3");
    a.axis = 2;
    PASS(run(CTOSA_OP_REDUCE_SUM, "x", "r", &a));
    FAIL(run(CTOSA_OP_REDUCE_MAX, "x", "r_bad", &a), "with dimension 2 set to 1");
    a.axis = -1;
    FAIL(run(CTOSA_OP_REDUCE_MIN, "x", "r", &a), "axis -1 is out of range");
}

static void test_conv2d(void) {
    reset();
    F32("x", "1,32,32,8");
    F32("w", "16,3,3,8");
    F32("b", "16");
    F32("zp", "1");
    F32("y", "1,16,16,16");
    F32("y17", "1,17,16,16");
    F32("w7", "16,3,3,7");
    F32("b5", "5");
    F32("y32", "1,32,32,16");
    int32_t pad[4] = {0, 1, 0, 1}, st[2] = {2, 2}, dil[2] = {1, 1}, pad1[4] = {1, 1, 1, 1}, st1[2] = {1, 1},
            negpad[4] = {-1, 0, 0, 0};
    ctosa_attr a = {
        .pad = V(pad, 4), .stride = V(st, 2), .dilation = V(dil, 2), .acc_type = CTOSA_DTYPE_FP32};
    PASS(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y", &a));
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y17", &a),
         "op #1 CONV2D 'y17': output height 17 does not follow from input 32, kernel 3, pad 0+1, "
         "stride 2, dilation 1 (expected 16)");
    FAIL(run(CTOSA_OP_CONV2D, "x,w7,b,zp,zp", "y", &a),
         "weight 'w7' expects 7 input channels but input 'x' has 8");
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b5,zp,zp", "y", &a), "bias 'b5' has 5 values, expected 16");
    /* (32 - 1 + 2 - 2) = 31 is not a multiple of stride 2: 1.0 wants exactness */
    a.pad = V(pad1, 4);
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y", &a), "output height is not exact");
    /* same padding, stride 1 */
    a.stride = V(st1, 2);
    PASS(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y32", &a));
    a.pad = V(negpad, 4);
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y32", &a), "pad values must be >= 0");
    a.pad = V(pad1, 4);
    a.stride = V(st1, 1);
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y32", &a), "attribute stride has 1 value(s), expected 2");
    /* dilation 2: kernel spans 5 */
    int32_t dil2[2] = {2, 2}, pad2[4] = {2, 2, 2, 2};
    a.stride = V(st1, 2);
    a.dilation = V(dil2, 2);
    a.pad = V(pad2, 4);
    PASS(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y32", &a));
    a.pad = V(pad1, 4);
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,zp,zp", "y32", &a), "dilation 2 (expected 30)");
    /* a bias of 1 broadcasts */
    F32("b1", "1");
    a.pad = V(pad2, 4);
    PASS(run(CTOSA_OP_CONV2D, "x,w,b1,zp,zp", "y32", &a));
}

static void test_depthwise_conv3d_tconv(void) {
    reset();
    F32("x", "1,8,8,4");
    F32("w", "3,3,4,2");
    F32("b", "8");
    F32("zp", "1");
    F32("y", "1,6,6,8");
    F32("y4", "1,6,6,4");
    int32_t p0[6] = {0}, s1[3] = {1, 1, 1}, d1[3] = {1, 1, 1};
    ctosa_attr a = {.pad = V(p0, 4), .stride = V(s1, 2), .dilation = V(d1, 2)};
    PASS(run(CTOSA_OP_DEPTHWISE_CONV2D, "x,w,b,zp,zp", "y", &a));
    FAIL(run(CTOSA_OP_DEPTHWISE_CONV2D, "x,w,b,zp,zp", "y4", &a),
         "output channels 4 does not match weight C*M (expected 8)");

    F32("x3", "1,4,8,8,2");
    F32("w3", "3,2,3,3,2");
    F32("b3", "3");
    F32("y3", "1,3,6,6,3");
    F32("y3bad", "1,4,6,6,3");
    ctosa_attr a3 = {.pad = V(p0, 6), .stride = V(s1, 3), .dilation = V(d1, 3)};
    PASS(run(CTOSA_OP_CONV3D, "x3,w3,b3,zp,zp", "y3", &a3));
    FAIL(run(CTOSA_OP_CONV3D, "x3,w3,b3,zp,zp", "y3bad", &a3),
         "output depth 4 does not follow from input 4, kernel 2, pad 0+0, stride 1, dilation 1 (expected 3)");
    FAIL(run(CTOSA_OP_CONV3D, "x3,w3,b3,zp,zp", "y3", &a), "attribute pad has 4 value(s), expected 6");

    F32("xt", "1,4,4,2");
    F32("wt", "3,3,3,2");
    F32("bt", "3");
    F32("yt", "1,9,9,3");
    F32("ytbad", "1,8,9,3");
    int32_t op0[4] = {0, 0, 0, 0}, s2[2] = {2, 2}, opneg[4] = {-3, 0, 0, 0};
    ctosa_attr at = {.out_pad = V(op0, 4), .stride = V(s2, 2)};
    PASS(run(CTOSA_OP_TRANSPOSE_CONV2D, "xt,wt,bt,zp,zp", "yt", &at));
    FAIL(run(CTOSA_OP_TRANSPOSE_CONV2D, "xt,wt,bt,zp,zp", "ytbad", &at),
         "output height 8 does not follow from input 4, kernel 3, out_pad 0+0, stride 2 (expected 9)");
    at.out_pad = V(opneg, 4);
    FAIL(run(CTOSA_OP_TRANSPOSE_CONV2D, "xt,wt,bt,zp,zp", "yt", &at),
         "out_pad [-3,0,0,0] must be greater than");
}

static void test_pool(void) {
    reset();
    I8("x", "1,8,8,3");
    I8("y", "1,4,4,3");
    I8("y5", "1,5,4,3");
    I8("zp", "1");
    int32_t k[2] = {2, 2}, s[2] = {2, 2}, p[4] = {0, 0, 0, 0}, pbig[4] = {2, 0, 0, 0}, k3[2] = {3, 3},
            p1[4] = {1, 1, 1, 1};
    ctosa_attr a = {.kernel = V(k, 2), .stride = V(s, 2), .pad = V(p, 4), .acc_type = CTOSA_DTYPE_INT32};
    PASS(run(CTOSA_OP_AVG_POOL2D, "x,zp,zp", "y", &a));
    PASS(run(CTOSA_OP_MAX_POOL2D, "x", "y", &a));
    FAIL(run(CTOSA_OP_MAX_POOL2D, "x", "y5", &a),
         "output height 5 does not follow from input 8, kernel 2, pad 0+0, stride 2 (expected 4)");
    a.pad = V(pbig, 4);
    FAIL(run(CTOSA_OP_AVG_POOL2D, "x,zp,zp", "y", &a), "pad [2,0,0,0] must be smaller than the kernel [2,2]");
    /* 8 + 1 + 1 - 3 = 7 is not a multiple of 2 */
    a.kernel = V(k3, 2);
    a.pad = V(p1, 4);
    FAIL(run(CTOSA_OP_MAX_POOL2D, "x", "y", &a), "output height is not exact");
    int32_t k0[2] = {0, 2};
    a.kernel = V(k0, 2);
    FAIL(run(CTOSA_OP_MAX_POOL2D, "x", "y", &a), "kernel values must be >= 1");
}

static void test_matmul_fft(void) {
    reset();
    F32("A", "2,3,4");
    F32("Bm", "2,4,5");
    F32("Bbad", "2,6,5");
    F32("zp", "1");
    F32("y", "2,3,5");
    F32("ybad", "2,3,4");
    PASS(run(CTOSA_OP_MATMUL, "A,Bm,zp,zp", "y", NULL));
    FAIL(run(CTOSA_OP_MATMUL, "A,Bbad,zp,zp", "y", NULL), "has C=4 but B 'Bbad' [2,6,5] has C=6");
    FAIL(run(CTOSA_OP_MATMUL, "A,Bm,zp,zp", "ybad", NULL), "should be [2,3,5]");

    F32("re", "1,8,8");
    F32("im", "1,8,8");
    F32("ore", "1,8,8");
    F32("oim", "1,8,8");
    F32("re6", "1,6,8");
    F32("o6", "1,6,8");
    ctosa_attr a = {0};
    PASS(run(CTOSA_OP_FFT2D, "re,im", "ore,oim", &a));
    FAIL(run(CTOSA_OP_FFT2D, "re6,re6", "o6,o6", &a), "height 6 and width 8 of 're6' must be powers of two");
    F32("rr", "1,8,5");
    F32("ri", "1,8,5");
    PASS(run(CTOSA_OP_RFFT2D, "re", "rr,ri", &a));
    FAIL(run(CTOSA_OP_RFFT2D, "re", "ore,ri", &a), "output 'ore' [1,8,8] should be [1,8,5]");
}

static void test_concat_pad_reshape(void) {
    reset();
    F32("a", "2,3");
    F32("b", "2,4");
    F32("c", "3,4");
    F32("y", "2,7");
    F32("y6", "2,6");
    ctosa_attr a = {.axis = 1};
    PASS(run(CTOSA_OP_CONCAT, "a,b", "y", &a));
    FAIL(run(CTOSA_OP_CONCAT, "a,b", "y6", &a),
         "dimension 1 is 6, expected 7 (sum of the inputs along the axis)");
    FAIL(run(CTOSA_OP_CONCAT, "a,c", "y", &a), "differs from input 0 'a' [2,3] in dimension 0");
    a.axis = 2;
    FAIL(run(CTOSA_OP_CONCAT, "a,b", "y", &a), "axis 2 is out of range");

    shape("pads", "1,1,0,2");
    shape("negpads", "-1,1,0,2");
    shape("pads3", "1,1,0");
    F32("pc", "1");
    F32("p", "4,5");
    F32("p44", "4,4");
    PASS(run(CTOSA_OP_PAD, "a,pads,pc", "p", NULL));
    FAIL(run(CTOSA_OP_PAD, "a,pads,pc", "p44", NULL),
         "output dimension 1 is 4, expected 5 (input 3 + padding 0+2)");
    FAIL(run(CTOSA_OP_PAD, "a,negpads,pc", "p", NULL), "padding [-1,1,0,2] must not be negative");
    FAIL(run(CTOSA_OP_PAD, "a,pads3,pc", "p", NULL), "padding 'pads3' has 3 values, expected 4");

    F32("x", "2,6");
    F32("r", "3,4");
    F32("r35", "3,5");
    shape("s34", "3,4");
    shape("s35", "3,5");
    PASS(run(CTOSA_OP_RESHAPE, "x,s34", "r", NULL));
    FAIL(run(CTOSA_OP_RESHAPE, "x,s35", "r35", NULL),
         "element count changes: input 'x' [2,6] has 12, output 'r35' [3,5] has 15");
    FAIL(run(CTOSA_OP_RESHAPE, "x,s35", "r", NULL), "shape input [3,5] differs from output 'r' shape [3,4]");
}

static void test_slice_tile_transpose_reverse(void) {
    reset();
    F32("x", "4,5");
    F32("y", "2,5");
    F32("y3", "3,5");
    shape("st", "1,0");
    shape("sz", "2,5");
    shape("st3", "3,0");
    shape("neg", "-1,0");
    PASS(run(CTOSA_OP_SLICE, "x,st,sz", "y", NULL));
    FAIL(run(CTOSA_OP_SLICE, "x,st3,sz", "y", NULL), "start[0] 3 + size[0] 2 exceeds input dimension 4");
    FAIL(run(CTOSA_OP_SLICE, "x,st,sz", "y3", NULL), "dimension 0 should equal size[0] = 2");
    FAIL(run(CTOSA_OP_SLICE, "x,neg,sz", "y", NULL), "start[0] = -1 is negative");

    shape("m", "2,1");
    shape("m0", "0,1");
    F32("t", "8,5");
    F32("tbad", "8,6");
    PASS(run(CTOSA_OP_TILE, "x,m", "t", NULL));
    FAIL(run(CTOSA_OP_TILE, "x,m", "tbad", NULL),
         "output dimension 1 is 6, expected 5 (input 5 x multiples 1)");
    FAIL(run(CTOSA_OP_TILE, "x,m0", "t", NULL), "multiples[0] = 0 must be >= 1");

    F32("x3", "2,3,4");
    F32("tr", "4,2,3");
    F32("trbad", "4,3,2");
    int32_t perm[3] = {2, 0, 1}, dup[3] = {0, 0, 1}, big[3] = {0, 1, 1000000};
    ctosa_attr a = {.perms = V(perm, 3)};
    PASS(run(CTOSA_OP_TRANSPOSE, "x3", "tr", &a));
    FAIL(run(CTOSA_OP_TRANSPOSE, "x3", "trbad", &a), "does not follow from input [2,3,4] and perms [2,0,1]");
    a.perms = V(dup, 3);
    FAIL(run(CTOSA_OP_TRANSPOSE, "x3", "tr", &a), "perms [0,0,1] is not a permutation of 0..2");
    a.perms = V(big, 3);
    FAIL(run(CTOSA_OP_TRANSPOSE, "x3", "tr", &a), "is not a permutation");
    a.perms = V(perm, 2);
    FAIL(run(CTOSA_OP_TRANSPOSE, "x3", "tr", &a), "attribute perms has 2 value(s), expected 3");

    ctosa_attr r = {.axis = 1};
    F32("x2", "4,5");
    PASS(run(CTOSA_OP_REVERSE, "x", "x2", &r));
    r.axis = 2;
    FAIL(run(CTOSA_OP_REVERSE, "x", "x2", &r), "axis 2 is out of range for input 'x' of rank 2");
}

static void test_gather_scatter_resize(void) {
    reset();
    F32("v", "1,21,39");
    ten("ix", CTOSA_DTYPE_INT32, "1,1");
    F32("g", "1,1,39");
    F32("gbad", "1,21,39");
    PASS(run(CTOSA_OP_GATHER, "v,ix", "g", NULL));
    FAIL(run(CTOSA_OP_GATHER, "v,ix", "gbad", NULL), "should be [1,1,39]");
    F32("vi", "1,5,3");
    ten("ix2", CTOSA_DTYPE_INT32, "1,2");
    F32("in", "1,2,3");
    F32("inbad", "1,3,3");
    F32("vo", "1,5,3");
    PASS(run(CTOSA_OP_SCATTER, "vi,ix2,in", "vo", NULL));
    FAIL(run(CTOSA_OP_SCATTER, "vi,ix2,inbad", "vo", NULL), "shapes do not fit");

    F32("x", "1,4,4,3");
    F32("y", "1,8,8,3");
    F32("y7", "1,7,8,3");
    shape("sc", "2,1,2,1");
    shape("off", "0,0");
    shape("bor", "1,1");
    shape("scbad", "2,64,2,1");
    shape("bor3", "2,1");
    ctosa_attr a = {.mode = CTOSA_RESIZE_NEAREST};
    PASS(run(CTOSA_OP_RESIZE, "x,sc,off,bor", "y", &a));
    FAIL(run(CTOSA_OP_RESIZE, "x,sc,off,bor", "y7", &a),
         "output height 7 does not follow from input 4, scale 2/1, offset 0, border 1 (expected 8)");
    FAIL(run(CTOSA_OP_RESIZE, "x,scbad,off,bor", "y", &a), "downscales by 16 or more");
    FAIL(run(CTOSA_OP_RESIZE, "x,sc,off,bor3", "y", &a), "border_y 2 is outside [-32, 2)");
}

static void test_table_rescale(void) {
    reset();
    I8("x", "2,3");
    I8("y", "2,3");
    I8("t", "256");
    I8("t255", "255");
    PASS(run(CTOSA_OP_TABLE, "x,t", "y", NULL));
    FAIL(run(CTOSA_OP_TABLE, "x,t255", "y", NULL),
         "table 't255' has shape [255], expected [256] for int8 input");
    ten("x16", CTOSA_DTYPE_INT16, "2,3");
    ten("t16", CTOSA_DTYPE_INT16, "513");
    ten("y16", CTOSA_DTYPE_INT32, "2,3");
    PASS(run(CTOSA_OP_TABLE, "x16,t16", "y16", NULL));
    FAIL(run(CTOSA_OP_TABLE, "x16,t", "y16", NULL), "expected [513] for int16 input");

    ten("acc", CTOSA_DTYPE_INT32, "1,4,4,16");
    I8("out", "1,4,4,16");
    ten("m16", CTOSA_DTYPE_INT32, "16");
    I8("s16", "16");
    ten("m1", CTOSA_DTYPE_INT32, "1");
    I8("s1", "1");
    ten("izp", CTOSA_DTYPE_INT32, "1");
    I8("ozp", "1");
    ctosa_attr a = {.scale32 = true, .rounding_mode = CTOSA_ROUND_DOUBLE, .per_channel = true};
    PASS(run(CTOSA_OP_RESCALE, "acc,m16,s16,izp,ozp", "out", &a));
    FAIL(run(CTOSA_OP_RESCALE, "acc,m1,s16,izp,ozp", "out", &a),
         "multiplier 'm1' has shape [1], expected [16] (per_channel: one per channel");
    a.per_channel = false;
    PASS(run(CTOSA_OP_RESCALE, "acc,m1,s1,izp,ozp", "out", &a));
    FAIL(run(CTOSA_OP_RESCALE, "acc,m16,s1,izp,ozp", "out", &a), "expected [1] (per_channel is false)");
}

static void test_const_control(void) {
    reset();
    ctosa_tensor *c = F32("c", "2,2");
    float vals[4] = {1, 2, 3, 4};
    CHECK_OK(ctosa_tensor_set_data(G, c, vals, sizeof vals, true));
    ctosa_tensor *c3 = F32("c3", "3");
    CHECK_OK(ctosa_tensor_set_data(G, c3, vals, sizeof vals, true));
    F32("nodata", "2");
    PASS(run(CTOSA_OP_CONST, "", "c", NULL));
    FAIL(run(CTOSA_OP_CONST, "", "c3", NULL), "constant 'c3' has 16 bytes of data, but [3] of fp32 needs 12");
    FAIL(run(CTOSA_OP_CONST, "", "nodata", NULL), "output 'nodata' has no constant data");

    ten("cond", CTOSA_DTYPE_BOOL, "1");
    ten("cond2", CTOSA_DTYPE_BOOL, "2");
    F32("x", "2");
    F32("y", "2");
    ctosa_attr a = {.then_graph = "t", .else_graph = "e"};
    PASS(run(CTOSA_OP_COND_IF, "cond,x", "y", &a));
    FAIL(run(CTOSA_OP_COND_IF, "cond2,x", "y", &a), "condition 'cond2' [2] must hold exactly one element");
    ctosa_attr w = {.cond_graph = "c", .body_graph = "b"};
    F32("z", "3");
    PASS(run(CTOSA_OP_WHILE_LOOP, "x", "y", &w));
    FAIL(run(CTOSA_OP_WHILE_LOOP, "x,y", "y", &w), "input_list has 2 tensors but output_list has 1");
    FAIL(run(CTOSA_OP_WHILE_LOOP, "x", "z", &w), "differs from input");
    /* CUSTOM: nothing to check */
    ctosa_attr cu = {.operator_name = "foo", .domain_name = "bar"};
    PASS(run(CTOSA_OP_CUSTOM, "x,z", "cond2", &cu));
}

static void test_shape_ops_1_1(void) {
    reset();
    shape("a", "1,2,3");
    shape("b", "4,5,6");
    shape("b2", "4,5");
    shape("o", "0,0,0");
    shape("o2", "0,0");
    PASS(run(CTOSA_OP_ADD_SHAPE, "a,b", "o", NULL));
    FAIL(run(CTOSA_OP_MUL_SHAPE, "a,b2", "o", NULL), "shape inputs have 3 and 2 values");
    FAIL(run(CTOSA_OP_SUB_SHAPE, "a,b", "o2", NULL), "output shape has 2 values, inputs have 3");
    shape("o5", "0,0,0,0,0");
    PASS(run(CTOSA_OP_CONCAT_SHAPE, "a,b2", "o5", NULL));
    FAIL(run(CTOSA_OP_CONCAT_SHAPE, "a,b2", "o", NULL), "the inputs have 5 together");
    /* SLICE_SHAPE: start/size are i32 [1] constants */
    ctosa_tensor *st = ten("st", CTOSA_DTYPE_INT32, "1"), *sz = ten("sz", CTOSA_DTYPE_INT32, "1");
    ctosa_tensor *big = ten("big", CTOSA_DTYPE_INT32, "1");
    int32_t one = 1, two = 2, three = 3;
    CHECK_OK(ctosa_tensor_set_data(G, st, &one, 4, true));
    CHECK_OK(ctosa_tensor_set_data(G, sz, &two, 4, true));
    CHECK_OK(ctosa_tensor_set_data(G, big, &three, 4, true));
    PASS(run(CTOSA_OP_SLICE_SHAPE, "a,st,sz", "o2", NULL));
    FAIL(run(CTOSA_OP_SLICE_SHAPE, "a,st,sz", "o", NULL), "output shape has 3 values, size is 2");
    FAIL(run(CTOSA_OP_SLICE_SHAPE, "a,st,big", "o", NULL), "start 1 + size 3 exceeds the input's 3 values");
    shape("a1", "1,2,3");
    shape("bb", "1,5,3");
    ctosa_attr ab = {.allow_broadcast = false};
    PASS(run(CTOSA_OP_ASSERT_EQUAL_SHAPE, "a,a1", "", &ab));
    FAIL(run(CTOSA_OP_ASSERT_EQUAL_SHAPE, "a,bb", "", &ab), "differ at index 1: the assertion always fails");
    shape("bc", "1,1,3");
    ab.allow_broadcast = true;
    PASS(run(CTOSA_OP_ASSERT_EQUAL_SHAPE, "a,bc", "", &ab));
    F32("x", "2,3");
    shape("d1", "0");
    ctosa_attr ax = {.axis = 1};
    PASS(run(CTOSA_OP_DIM, "x", "d1", &ax));
    ax.axis = 2;
    FAIL(run(CTOSA_OP_DIM, "x", "d1", &ax), "axis 2 is out of range");
}

static ctosa_tensor *cten(const char *name, ctosa_dtype t, const void *p, size_t n) {
    ctosa_tensor *x = ten(name, t, "1");
    CHECK_OK(ctosa_tensor_set_data(G, x, p, n, true));
    return x;
}

static void test_constant_values(void) {
    reset();
    float fz = 0, f3 = 3;
    int8_t i8v = -5;
    int32_t i0 = 0, i7 = 7, i64v = 64;
    uint8_t s1 = 1;
    cten("fz", CTOSA_DTYPE_FP32, &fz, 4);
    cten("f3", CTOSA_DTYPE_FP32, &f3, 4);
    cten("i8zp", CTOSA_DTYPE_INT8, &i8v, 1);
    F32("x", "1,4,4,2");
    F32("w", "3,1,1,2");
    F32("b", "3");
    F32("y", "1,4,4,3");
    I8("qx", "1,4,4,2");
    I8("qw", "3,1,1,2");
    ten("qb", CTOSA_DTYPE_INT32, "3");
    ten("qy", CTOSA_DTYPE_INT32, "1,4,4,3");
    int32_t p0[4] = {0}, s1v[2] = {1, 1};
    ctosa_attr a = {.pad = V(p0, 4), .stride = V(s1v, 2), .dilation = V(s1v, 2)};
    PASS(run(CTOSA_OP_CONV2D, "x,w,b,fz,fz", "y", &a));
    FAIL(run(CTOSA_OP_CONV2D, "x,w,b,f3,fz", "y", &a),
         "input_zp 'f3' is 3 but must be 0 for fp32 data (zero points are only for i8)");
    PASS(run(CTOSA_OP_CONV2D, "qx,qw,qb,i8zp,i8zp", "qy", &a));

    /* MUL shift: 0..63 for i32, 0 otherwise */
    ten("a32", CTOSA_DTYPE_INT32, "2");
    ten("o32", CTOSA_DTYPE_INT32, "2");
    F32("af", "2");
    F32("of", "2");
    cten("sh0", CTOSA_DTYPE_INT8, &i0, 1);
    cten("sh7", CTOSA_DTYPE_INT8, &i7, 1);
    cten("sh64", CTOSA_DTYPE_INT8, &i64v, 1);
    PASS(run(CTOSA_OP_MUL, "a32,a32,sh7", "o32", NULL));
    FAIL(run(CTOSA_OP_MUL, "a32,a32,sh64", "o32", NULL), "shift 64 is outside 0..63");
    PASS(run(CTOSA_OP_MUL, "af,af,sh0", "of", NULL));
    FAIL(run(CTOSA_OP_MUL, "af,af,sh7", "of", NULL), "shift is 7 but must be 0 for fp32 inputs");

    /* CLAMP bounds */
    float lo = -1, hi = 6;
    ctosa_attr c = {.min_val = {(const uint8_t *)&lo, 4}, .max_val = {(const uint8_t *)&hi, 4}};
    PASS(run(CTOSA_OP_CLAMP, "af", "of", &c));
    c.min_val.p = (const uint8_t *)&hi;
    c.max_val.p = (const uint8_t *)&lo;
    FAIL(run(CTOSA_OP_CLAMP, "af", "of", &c), "max_val -1 is below min_val 6");
    c.max_val.n = 2;
    FAIL(run(CTOSA_OP_CLAMP, "af", "of", &c), "min_val/max_val have 4/2 bytes, fp32 needs 4");
    int8_t qlo = -128, qhi = 127;
    ctosa_attr qc = {.min_val = {(const uint8_t *)&qlo, 1}, .max_val = {(const uint8_t *)&qhi, 1}};
    I8("q", "2");
    I8("qo", "2");
    PASS(run(CTOSA_OP_CLAMP, "q", "qo", &qc));

    /* RESCALE zero points and flags */
    ten("acc", CTOSA_DTYPE_INT32, "2");
    I8("r8", "2");
    ten("r16", CTOSA_DTYPE_INT16, "2");
    ten("m", CTOSA_DTYPE_INT32, "1");
    I8("s", "1");
    cten("z32", CTOSA_DTYPE_INT32, &i0, 4);
    cten("z32b", CTOSA_DTYPE_INT32, &i7, 4);
    int16_t u0 = 0, u32768 = (int16_t)-32768, u5 = 5;
    cten("zu", CTOSA_DTYPE_INT16, &u32768, 2);
    cten("zu5", CTOSA_DTYPE_INT16, &u5, 2);
    cten("zu0", CTOSA_DTYPE_INT16, &u0, 2);
    ctosa_attr r = {.scale32 = true, .rounding_mode = CTOSA_ROUND_SINGLE};
    PASS(run(CTOSA_OP_RESCALE, "acc,m,s,z32,i8zp", "r8", &r));
    FAIL(run(CTOSA_OP_RESCALE, "acc,m,s,z32b,i8zp", "r8", &r), "input_zp 7 must be 0 for int32 input");
    r.output_unsigned = true;
    PASS(run(CTOSA_OP_RESCALE, "r8,m,s,i8zp,zu", "r16", &r));
    FAIL(run(CTOSA_OP_RESCALE, "r8,m,s,i8zp,zu5", "r16", &r),
         "output_zp 5 of unsigned 16-bit output must be 0 or 32768");
    FAIL(run(CTOSA_OP_RESCALE, "acc,m,s,z32,zu0", "r16", &r),
         "output_unsigned is not allowed with int32 input");
    r.output_unsigned = false;
    r.scale32 = false;
    r.rounding_mode = CTOSA_ROUND_DOUBLE;
    FAIL(run(CTOSA_OP_RESCALE, "acc,m,s,z32,i8zp", "r8", &r), "DOUBLE_ROUND needs scale32");
    (void)s1;
}

/* Nothing a file can say makes a rule read out of bounds or crash: wrong
 * operand counts, missing operands, unranked tensors, huge/negative values. */
static void test_hostile(void) {
    reset();
    F32("x", "1,32,32,8");
    F32("w", "16,3,3,8");
    F32("y", "1,16,16,16");
    F32("neg", "-1,-5,2147483647,8");
    F32("big", "2147483647,2147483647,2147483647,2147483647");
    ctosa_attr empty = {0};
    int32_t huge[4] = {INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN}, hs[2] = {INT32_MAX, 1};
    ctosa_attr h = {.pad = V(huge, 4),
                    .stride = V(hs, 2),
                    .dilation = V(hs, 2),
                    .kernel = V(hs, 2),
                    .out_pad = V(huge, 4),
                    .perms = V(huge, 4)};
    ctosa_op_kind kinds[] = {CTOSA_OP_CONV2D,
                             CTOSA_OP_DEPTHWISE_CONV2D,
                             CTOSA_OP_CONV3D,
                             CTOSA_OP_TRANSPOSE_CONV2D,
                             CTOSA_OP_AVG_POOL2D,
                             CTOSA_OP_MAX_POOL2D,
                             CTOSA_OP_RESIZE,
                             CTOSA_OP_TRANSPOSE,
                             CTOSA_OP_PAD,
                             CTOSA_OP_SLICE,
                             CTOSA_OP_TILE,
                             CTOSA_OP_RESHAPE,
                             CTOSA_OP_CONCAT,
                             CTOSA_OP_MATMUL,
                             CTOSA_OP_GATHER,
                             CTOSA_OP_SCATTER,
                             CTOSA_OP_RESCALE,
                             CTOSA_OP_TABLE,
                             CTOSA_OP_FFT2D,
                             CTOSA_OP_RFFT2D,
                             CTOSA_OP_ARGMAX,
                             CTOSA_OP_REDUCE_SUM,
                             CTOSA_OP_ADD,
                             CTOSA_OP_SELECT,
                             CTOSA_OP_CONST,
                             CTOSA_OP_COND_IF,
                             CTOSA_OP_WHILE_LOOP,
                             CTOSA_OP_DIM,
                             CTOSA_OP_CONCAT_SHAPE,
                             CTOSA_OP_SLICE_SHAPE,
                             CTOSA_OP_ASSERT_EQUAL_SHAPE,
                             CTOSA_OP_ADD_SHAPE};
    const char *ins[] = {
        "", "x", "x,w", "x,w,nope", "x,w,big,neg,neg", "neg,big,x,w,y", "big,neg,neg,neg,neg", "x,x,x,x"};
    for (size_t k = 0; k < CTOSA_ARRAY_LEN(kinds); k++) {
        for (size_t i = 0; i < CTOSA_ARRAY_LEN(ins); i++) {
            free(run(kinds[k], ins[i], "y", &empty));
            free(run(kinds[k], ins[i], "neg", &h));
            free(run(kinds[k], ins[i], "big,nope", &h));
        }
    }
    /* A wrong number of operands is left to the type rules, silently here. */
    PASS(run(CTOSA_OP_CONV2D, "x,w", "y", &empty));
    CHECK(n_ops > 100);
}

int main(void) {
    RUN(test_broadcast);
    RUN(test_unary);
    RUN(test_argmax_reduce);
    RUN(test_conv2d);
    RUN(test_depthwise_conv3d_tconv);
    RUN(test_pool);
    RUN(test_matmul_fft);
    RUN(test_concat_pad_reshape);
    RUN(test_slice_tile_transpose_reverse);
    RUN(test_gather_scatter_resize);
    RUN(test_table_rescale);
    RUN(test_const_control);
    RUN(test_shape_ops_1_1);
    RUN(test_constant_values);
    RUN(test_hostile);
    ctosa_graph_free(G);
    return th_finish();
}
