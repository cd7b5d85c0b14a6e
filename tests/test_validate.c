/* test_validate.c - ctosa_validate(): graph structure (names resolve, SSA,
 * control-flow regions, nesting, variables), several problems in one run,
 * the problem cap, and `ctosa check` on the official example graphs. */
#include "harness.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static ctosa_graph *G;

static ctosa_block *new_graph(void) {
    ctosa_graph_free(G);
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &G));
    CHECK_OK(ctosa_graph_add_region(G, "main", &r));
    CHECK_OK(ctosa_region_add_block(G, r, "main", &b));
    return b;
}

static ctosa_block *add_region(const char *name) {
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_add_region(G, name, &r));
    CHECK_OK(ctosa_region_add_block(G, r, name, &b));
    return b;
}

static ctosa_tensor *ten(ctosa_block *b, const char *name, ctosa_dtype dt, uint32_t rank,
                         const int32_t *shape) {
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(G, b, name, dt, rank, shape, &t));
    return t;
}

static const int32_t S4[1] = {4};
static ctosa_tensor *f4(ctosa_block *b, const char *name) { return ten(b, name, CTOSA_DTYPE_FP32, 1, S4); }

static void op2(ctosa_block *b, ctosa_op_kind k, const char *x, const char *y, const char *out) {
    const char *in[2] = {x, y}, *o[1] = {out};
    CHECK_OK(ctosa_block_add_op(G, b, k, y ? 2 : 1, in, 1, o, NULL, NULL));
}

static ctosa_spec spec_of(const char *text) {
    ctosa_spec s;
    memset(&s, 0, sizeof s);
    CHECK_OK(ctosa_spec_parse(text, &s));
    return s;
}

static char *validate(const char *spec_text, uint32_t max) {
    ctosa_spec s = spec_of(spec_text);
    ctosa_validate_options o = {.max_problems = max};
    ctosa_error *e = ctosa_validate(G, &s, &o);
    if (!e) return NULL;
    CHECK(ctosa_error_code(e) == CTOSA_ERR_INVALID);
    char *m = strdup(ctosa_error_message(e));
    ctosa_error_free(e);
    return m;
}

static int count_lines(const char *m) {
    int n = m && *m ? 1 : 0;
    for (; m && *m; m++) n += *m == '\n' && m[1]; /* a final newline ends the last line */
    return n;
}

#define PASS(expr)                                   \
    do {                                             \
        char *m_ = (expr);                           \
        CHECK_MSG(m_ == NULL, "unexpected: %s", m_); \
        free(m_);                                    \
    } while (0)
#define HAS(m, needle) \
    CHECK_MSG((m) && strstr((m), (needle)), "expected '%s' in: %s", needle, (m) ? (m) : "(none)")

/* x + y -> z, a correct graph. */
static ctosa_block *simple(void) {
    ctosa_block *b = new_graph();
    f4(b, "x");
    f4(b, "y");
    f4(b, "z");
    op2(b, CTOSA_OP_ADD, "x", "y", "z");
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    CHECK_OK(ctosa_block_add_input(G, b, "y"));
    CHECK_OK(ctosa_block_add_output(G, b, "z"));
    return b;
}

static void test_valid(void) {
    simple();
    PASS(validate("TOSA-1.0+FP", 0));
    char *m = validate("TOSA-1.0+INT", 0);
    HAS(m, "op #0 ADD 'z': types (fp32,fp32)->fp32");
    free(m);
    /* a constant tensor with data counts as defined without a producer */
    ctosa_block *b = simple();
    ctosa_tensor *c = f4(b, "c");
    float v[4] = {1, 2, 3, 4};
    CHECK_OK(ctosa_tensor_set_data(G, c, v, sizeof v, true));
    f4(b, "w");
    op2(b, CTOSA_OP_SUB, "z", "c", "w");
    PASS(validate("TOSA-1.0+FP", 0));
}

static void test_undefined_and_twice(void) {
    ctosa_block *b = simple();
    f4(b, "u");
    f4(b, "r1");
    f4(b, "r2");
    op2(b, CTOSA_OP_ADD, "x", "nope", "r1"); /* name of no tensor */
    op2(b, CTOSA_OP_ADD, "x", "u", "r2");    /* declared, never defined */
    char *m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #1 ADD 'r1': input 'nope' does not name a tensor of block 'main'");
    HAS(m, "op #2 ADD 'r2': input 'u' is never defined");
    free(m);

    b = simple();
    op2(b, CTOSA_OP_SUB, "x", "y", "z"); /* z again */
    m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #1 SUB 'z': tensor 'z' is defined twice (by op #0 and op #1)");
    free(m);

    b = simple();
    op2(b, CTOSA_OP_SUB, "x", "y", "x"); /* overwrites a block input */
    m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #1 SUB 'x': output 'x' is a block input (defined twice)");
    free(m);

    b = simple();
    CHECK_OK(ctosa_block_add_input(G, b, "ghost"));
    CHECK_OK(ctosa_block_add_output(G, b, "ghost2"));
    f4(b, "lonely");
    CHECK_OK(ctosa_block_add_output(G, b, "lonely"));
    m = validate("TOSA-1.0+FP", 0);
    HAS(m, "block 'main': block input 'ghost' is not a tensor of the block");
    HAS(m, "block 'main': block output 'ghost2' is not a tensor of the block");
    HAS(m, "block 'main': block output 'lonely' is never defined");
    free(m);

    b = simple();
    const char *out[1] = {"missing"}, *in[2] = {"x", "y"};
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_ADD, 2, in, 1, out, NULL, NULL));
    m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #1 ADD 'missing': output 'missing' is not a tensor of block 'main'");
    free(m);
}

static void test_use_before_definition(void) {
    ctosa_block *b = new_graph();
    f4(b, "x");
    f4(b, "t");
    f4(b, "y");
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    op2(b, CTOSA_OP_ADD, "x", "t", "y"); /* t is made by the next op */
    op2(b, CTOSA_OP_ABS, "x", NULL, "t");
    op2(b, CTOSA_OP_NEGATE, "t", NULL, "t"); /* wrong arity too; own output */
    CHECK_OK(ctosa_block_add_output(G, b, "y"));
    char *m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #0 ADD 'y': input 't' is used before it is defined (by op #1)");
    HAS(m, "op #2 NEGATE 't': tensor 't' is defined twice (by op #1 and op #2)");
    free(m);
}

/* main: COND_IF(c, x) -> y with then/else regions. */
static ctosa_block *cond_graph(const char *then_name, const char *else_name) {
    ctosa_block *b = new_graph();
    static const int32_t one[1] = {1};
    ten(b, "c", CTOSA_DTYPE_BOOL, 1, one);
    f4(b, "x");
    f4(b, "y");
    CHECK_OK(ctosa_block_add_input(G, b, "c"));
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    ctosa_attr a = {.then_graph = then_name, .else_graph = else_name};
    const char *in[2] = {"c", "x"}, *out[1] = {"y"};
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_COND_IF, 2, in, 1, out, &a, NULL));
    CHECK_OK(ctosa_block_add_output(G, b, "y"));
    return b;
}

static void branch(const char *name, ctosa_op_kind k) {
    ctosa_block *t = add_region(name);
    f4(t, "a");
    f4(t, "b");
    CHECK_OK(ctosa_block_add_input(G, t, "a"));
    op2(t, k, "a", NULL, "b");
    CHECK_OK(ctosa_block_add_output(G, t, "b"));
}

static void test_control_flow(void) {
    cond_graph("then", "else");
    branch("then", CTOSA_OP_ABS);
    branch("else", CTOSA_OP_NEGATE); /* NEGATE needs zero points: a rule problem inside */
    char *m = validate("TOSA-1.0+FP+cf", 0);
    HAS(m, "region 'else' op #0 NEGATE 'b'");
    CHECK(!strstr(m ? m : "", "region 'then'"));
    free(m);

    cond_graph("then", "else");
    branch("then", CTOSA_OP_ABS);
    branch("else", CTOSA_OP_ABS);
    PASS(validate("TOSA-1.0+FP+cf", 0));
    m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #0 COND_IF 'y': ");
    HAS(m, "EXT-CONTROLFLOW");
    free(m);

    /* missing region, signature mismatch */
    cond_graph("then", "nowhere");
    ctosa_block *t = add_region("then");
    static const int32_t s5[1] = {5};
    ten(t, "a", CTOSA_DTYPE_FP32, 1, s5);
    f4(t, "b");
    CHECK_OK(ctosa_block_add_input(G, t, "a"));
    CHECK_OK(ctosa_block_add_input(G, t, "a2"));
    op2(t, CTOSA_OP_ABS, "a", NULL, "b");
    CHECK_OK(ctosa_block_add_output(G, t, "b"));
    m = validate("TOSA-1.0+FP+cf", 0);
    HAS(m, "op #0 COND_IF 'y': else_graph 'nowhere' names no region or block of the graph");
    HAS(m, "op #0 COND_IF 'y': input_list has 1 tensor(s) but then_graph 'then' has 2 input(s)");
    HAS(m, "region 'then' block 'then': block input 'a2' is not a tensor of the block");
    free(m);

    cond_graph("then", "then");
    t = add_region("then");
    ten(t, "a", CTOSA_DTYPE_FP32, 1, s5);
    ten(t, "b", CTOSA_DTYPE_INT32, 1, S4);
    CHECK_OK(ctosa_block_add_input(G, t, "a"));
    const char *in[1] = {"a"}, *out[1] = {"b"};
    CHECK_OK(ctosa_block_add_op(G, t, CTOSA_OP_CAST, 1, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_output(G, t, "b"));
    m = validate("TOSA-1.0+FP+INT+cf", 0);
    HAS(m, "input_list[0] 'x' is fp32[4] but then_graph 'then' input 'a' is fp32[5]");
    HAS(m, "output_list[0] 'y' is fp32[4] but then_graph 'then' output 'b' is int32[4]");
    free(m);
}

/* WHILE_LOOP whose regions capture a value of the main block. */
static void test_while_and_capture(void) {
    ctosa_block *b = new_graph();
    f4(b, "x");
    f4(b, "k");
    f4(b, "y");
    f4(b, "late");
    static const int32_t one[1] = {1};
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    op2(b, CTOSA_OP_ABS, "x", NULL, "k"); /* captured by the body */
    ctosa_attr a = {.cond_graph = "cond", .body_graph = "body"};
    const char *in[1] = {"x"}, *out[1] = {"y"};
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_WHILE_LOOP, 1, in, 1, out, &a, NULL));
    op2(b, CTOSA_OP_ABS, "y", NULL, "late");
    CHECK_OK(ctosa_block_add_output(G, b, "late"));

    ctosa_block *c = add_region("cond");
    f4(c, "ci");
    ten(c, "cz", CTOSA_DTYPE_FP32, 1, one);
    ten(c, "co", CTOSA_DTYPE_BOOL, 1, one);
    CHECK_OK(ctosa_block_add_input(G, c, "ci"));
    ctosa_attr ax = {.axis = 0};
    const char *rin[1] = {"ci"}, *rout[1] = {"cz"};
    CHECK_OK(ctosa_block_add_op(G, c, CTOSA_OP_REDUCE_SUM, 1, rin, 1, rout, &ax, NULL));
    op2(c, CTOSA_OP_GREATER, "cz", "cz", "co");
    CHECK_OK(ctosa_block_add_output(G, c, "co"));

    ctosa_block *body = add_region("body");
    f4(body, "bi");
    f4(body, "bo");
    CHECK_OK(ctosa_block_add_input(G, body, "bi"));
    op2(body, CTOSA_OP_SUB, "bi", "k", "bo");
    CHECK_OK(ctosa_block_add_output(G, body, "bo"));
    PASS(validate("TOSA-1.0+FP+cf", 0));

    /* The body now uses 'late', defined only after the loop. */
    op2(body, CTOSA_OP_SUB, "bi", "late", "bo2");
    char *m = validate("TOSA-1.0+FP+cf", 0);
    HAS(m, "region 'body' op #1 SUB 'bo2': input 'late' of the enclosing block is not defined before the "
           "calling operator");
    HAS(m, "region 'body' op #1 SUB 'bo2': output 'bo2' is not a tensor of block 'body'");
    free(m);

    /* cond graph must give one bool */
    b = new_graph();
    f4(b, "x");
    f4(b, "y");
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_WHILE_LOOP, 1, in, 1, out, &a, NULL));
    CHECK_OK(ctosa_block_add_output(G, b, "y"));
    c = add_region("cond");
    f4(c, "ci");
    f4(c, "co");
    CHECK_OK(ctosa_block_add_input(G, c, "ci"));
    op2(c, CTOSA_OP_ABS, "ci", NULL, "co");
    CHECK_OK(ctosa_block_add_output(G, c, "co"));
    body = add_region("body");
    f4(body, "bi");
    CHECK_OK(ctosa_block_add_input(G, body, "bi"));
    CHECK_OK(ctosa_block_add_output(G, body, "bi"));
    m = validate("TOSA-1.0+FP+cf", 0);
    HAS(m, "cond_graph 'cond' must have one output of one bool element (has 1 output(s), type fp32)");
    free(m);
}

/* Region i calls region i+1 through COND_IF, depth levels deep. Each
 * region's condition is a constant; the regions take and give nothing. */
static void nested(uint32_t depth, bool recursive) {
    ctosa_block *b = new_graph();
    static const int32_t one[1] = {1};
    static const uint8_t yes = 1;
    for (uint32_t i = 0; i <= depth; i++) {
        char name[32], next[32];
        snprintf(next, sizeof next, "r%u", i + 1);
        if (recursive && i == depth) snprintf(next, sizeof next, "r1");
        if (i > 0) {
            snprintf(name, sizeof name, "r%u", i);
            b = add_region(name);
        }
        ctosa_tensor *c = ten(b, "c", CTOSA_DTYPE_BOOL, 1, one);
        CHECK_OK(ctosa_tensor_set_data(G, c, &yes, 1, false));
        if (i == depth && !recursive) break;
        ctosa_attr a = {.then_graph = next, .else_graph = next};
        const char *in[1] = {"c"};
        CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_COND_IF, 1, in, 0, NULL, &a, NULL));
    }
}

static void test_nesting(void) {
    nested(6, false); /* main + 6 nested COND_IFs: the 6th runs at depth 5 */
    PASS(validate("TOSA-1.0+INT+cf+8k", 0));
    nested(7, false);
    char *m = validate("TOSA-1.0+INT+cf+8k", 0);
    HAS(m, "region 'r6' op #0 COND_IF: control flow nested 7 deep reaches MAX_NESTING 6 of level 8K");
    CHECK(count_lines(m) == 1);
    free(m);
    PASS(validate("TOSA-1.0+INT+cf", 0)); /* level none: 256 */
    nested(3, true);
    m = validate("TOSA-1.0+INT+cf", 0);
    HAS(m, "region 'r3' op #0 COND_IF: region 'r1' is called recursively");
    free(m);
    /* 300 deep with no level: stops at 256 without blowing the stack */
    nested(300, false);
    m = validate("TOSA-1.0+INT+cf", 0);
    HAS(m, "reaches MAX_NESTING 256 of level none");
    free(m);
}

static void test_variables(void) {
    ctosa_block *b = new_graph();
    ctosa_tensor *v = f4(b, "state");
    float init[4] = {0};
    CHECK_OK(ctosa_tensor_set_data(G, v, init, sizeof init, true));
    v->variable = true;
    f4(b, "x");
    f4(b, "r");
    f4(b, "n");
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    op2(b, CTOSA_OP_ADD, "x", "state", "r");
    op2(b, CTOSA_OP_IDENTITY, "r", NULL, "state"); /* state update: allowed twice */
    op2(b, CTOSA_OP_ABS, "r", NULL, "n");
    CHECK_OK(ctosa_block_add_output(G, b, "n"));
    PASS(validate("TOSA-1.0+FP+var", 0));
    char *m = validate("TOSA-1.0+FP", 0);
    HAS(m, "op #0 ADD 'r': uses variable tensor 'state', which needs EXT-VARIABLE (not in TOSA-1.0+FP)");
    CHECK(count_lines(m) == 1); /* once per variable */
    free(m);

    /* VARIABLE_READ of something no VARIABLE declared; shape mismatch */
    b = new_graph();
    f4(b, "v");
    f4(b, "out");
    static const int32_t s3[1] = {3};
    ten(b, "o3", CTOSA_DTYPE_FP32, 1, s3);
    const char *in[1] = {"v"}, *out[1] = {"out"}, *out3[1] = {"o3"};
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_VARIABLE_READ, 1, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_VARIABLE, 1, in, 0, NULL, NULL, NULL));
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_VARIABLE_READ, 1, in, 1, out3, NULL, NULL));
    m = validate("TOSA-1.0+FP+var", 0);
    HAS(m, "op #0 VARIABLE_READ 'out': variable 'v' is used before a VARIABLE declares it");
    HAS(m, "op #2 VARIABLE_READ 'o3': value 'o3' is fp32[3] but variable 'v' is fp32[4]");
    free(m);
    /* declared twice; VARIABLE_WRITE (variable, value) */
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_VARIABLE, 1, in, 0, NULL, NULL, NULL));
    const char *w[2] = {"v", "o3"};
    CHECK_OK(ctosa_block_add_op(G, b, CTOSA_OP_VARIABLE_WRITE, 2, w, 0, NULL, NULL, NULL));
    m = validate("TOSA-1.0+FP+var", 0);
    HAS(m, "op #3 VARIABLE: variable 'v' is declared twice");
    HAS(m, "op #4 VARIABLE_WRITE: value 'o3' is fp32[3] but variable 'v' is fp32[4]");
    free(m);
}

static void test_many_and_cap(void) {
    ctosa_block *b = simple();
    char name[32], out[32];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "undef%d", i);
        snprintf(out, sizeof out, "o%d", i);
        f4(b, out);
        op2(b, CTOSA_OP_ADD, "x", name, out);
    }
    char *m = validate("TOSA-1.0+FP", 0);
    CHECK(count_lines(m) == 20);
    HAS(m, "op #1 ADD 'o0': input 'undef0'");
    HAS(m, "op #20 ADD 'o19': input 'undef19'");
    free(m);
    m = validate("TOSA-1.0+FP", 5);
    CHECK_MSG(count_lines(m) == 6, "%s", m);
    HAS(m, "... and 15 more problem(s)");
    CHECK(!strstr(m ? m : "", "undef5"));
    free(m);

    /* different kinds of problems in one run */
    b = new_graph();
    f4(b, "x");
    f4(b, "y");
    f4(b, "z");
    static const int32_t s2x2[2] = {2, 2};
    ten(b, "w", CTOSA_DTYPE_FP32, 2, s2x2);
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    op2(b, CTOSA_OP_ADD, "x", "w", "y");            /* ranks differ */
    op2(b, CTOSA_OP_ADD, "x", "nope", "z");         /* undefined */
    op2(b, CTOSA_OP_ADD, "x", "x", "z");            /* defined twice */
    CHECK_OK(ctosa_block_add_output(G, b, "gone")); /* unresolved output */
    m = validate("TOSA-1.0+INT", 0);
    HAS(m, "input ranks differ");
    HAS(m, "'nope' does not name a tensor");
    HAS(m, "defined twice");
    HAS(m, "block output 'gone'");
    HAS(m, "not allowed by TOSA-1.0+INT");
    CHECK(count_lines(m) >= 5);
    free(m);
}

/* `ctosa check` on the official example graphs. */
static void test_examples_cli(void) {
    const char *shared = th_shared_dir();
    if (!shared) {
        fprintf(stderr, "skipping test_examples_cli: ../shared is absent\n");
        return;
    }
    const char *ex = "reference/tosa/examples";
    static const struct {
        const char *file, *spec;
        int rc;
        const char *needle;
    } cases[] = {
        {"test_add_1x4x4x4_f32/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa", "TOSA-1.0+FP", 0,
         "OK, conforms to TOSA-1.0+FP (1 operator in 1 region)"},
        {"test_add_1x4x4x4_f32/flatbuffer-tf/test_add_1x4x4x4_f32.tosa", "TOSA-1.0+FP", 0, "OK"},
        {"test_add_1x4x4x4_f32/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa", "TOSA-1.0+INT", 1,
         "op #0 ADD 'TosaOutput_0': types (fp32,fp32)->fp32"},
        {"test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+FP", 0, "OK"},
        {"test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+INT", 1, "op #3 CONV2D 'TosaOutput_0': types (fp32,fp32,fp32,fp32,fp32)->fp32"},
        /* the qi8 graph rescales with DOUBLE_ROUND: needs +doubleround */
        {"test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+INT+doubleround", 0, "OK"},
        {"test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+INT", 1, "op #8 RESCALE 'TosaOutput_0': rounding_mode DOUBLE_ROUND"},
        {"test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+FP", 1, "op #7 CONV2D 'layer_7': types (i8,i8,i32,i8,i8)->i32"},
        /* the LSTM: fp32 maths, i32 loop counters, WHILE_LOOP, variable tensors */
        {"test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
         "TOSA-1.0+FP+INT+var+cf", 0, "OK, conforms to TOSA-1.0+FP+INT+var+cf (55 operators in 3 regions)"},
        {"test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
         "TOSA-1.0+FP+INT+var+cf+8k", 0, "OK"},
        {"test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
         "TOSA-1.0+FP+INT+cf", 1,
         "op #20 IDENTITY 'layer_20': uses variable tensor 'Variable_0', which needs EXT-VARIABLE"},
        {"test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
         "TOSA-1.0+FP+INT+var", 1, "op #23 WHILE_LOOP 'layer_23'"},
        {"test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
         "TOSA-1.0+FP+var+cf", 1,
         "region 'tosa.while_loop_cond_region' op #0 GREATER 'TosaOutput_1': types (i32,i32)->bool"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char *out = NULL;
        int rc = th_run(&out, "'%s' check '%s/%s/%s' --spec '%s'", th_ctosa(), shared, ex, cases[i].file,
                        cases[i].spec);
        CHECK_MSG(rc == cases[i].rc, "%s under %s: rc %d, output: %s", cases[i].file, cases[i].spec, rc,
                  out ? out : "");
        CHECK_MSG(out && strstr(out, cases[i].needle), "%s under %s: expected '%s' in: %s", cases[i].file,
                  cases[i].spec, cases[i].needle, out ? out : "");
        free(out);
    }
    /* --max-problems caps the lines */
    char *out = NULL;
    int rc = th_run(&out, "'%s' check '%s/%s/%s' --spec TOSA-1.0+INT --max-problems 2 2>/dev/null",
                    th_ctosa(), shared, ex,
                    "test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa");
    CHECK(rc == 1);
    CHECK_MSG(out && count_lines(out) == 3 && strstr(out, "more problem(s)"), "%s", out ? out : "");
    free(out);
}

/* Files that pass the verifier but say odd things (mutated shapes, counts,
 * names, attribute values) must validate without crashing. */
static void test_mutated_files(void) {
    const char *shared = th_shared_dir();
    if (!shared) {
        fprintf(stderr, "skipping test_mutated_files: ../shared is absent\n");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/reference/tosa/examples/%s", shared,
             "test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa");
    size_t size = 0;
    unsigned char *orig = th_read(path, &size);
    CHECK(orig && size > 1000);
    if (!orig) return;
    unsigned char *buf = malloc(size);
    ctosa_spec s = spec_of("TOSA-1.0+FP+INT+var+cf+8k");
    uint32_t seed = 12345, read_ok = 0, invalid = 0;
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(buf, orig, size);
        int flips = 1 + iter % 4;
        for (int f = 0; f < flips; f++) {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % size;
            seed = seed * 1103515245u + 12345u;
            buf[pos] = (unsigned char)(iter % 3 == 0 ? buf[pos] ^ (1u << ((seed >> 16) % 8)) : (seed >> 16));
        }
        ctosa_graph *g = NULL;
        ctosa_error *e = ctosa_read_memory(buf, size, "mutant", NULL, &g);
        if (e) {
            ctosa_error_free(e);
            continue;
        }
        read_ok++;
        e = ctosa_validate(g, &s, NULL);
        if (e) {
            CHECK(ctosa_error_code(e) == CTOSA_ERR_INVALID);
            invalid++;
        }
        ctosa_error_free(e);
        ctosa_graph_free(g);
    }
    fprintf(stderr, "mutants: %u read, %u of them invalid\n", read_ok, invalid);
    CHECK(read_ok > 100);
    CHECK(invalid > 10);
    free(buf);
    free(orig);
}

static void test_cli_errors(void) {
    const char *dir = th_tmpdir();
    char *out = NULL;
    /* usage errors */
    CHECK(th_run(&out, "'%s' check 2>&1", th_ctosa()) == 2);
    free(out);
    CHECK(th_run(&out, "'%s' check x.tosa", th_ctosa()) == 2);
    CHECK(out && strstr(out, "--spec SPEC or --target NAME is required"));
    free(out);
    CHECK(th_run(&out, "'%s' check x.tosa --spec TOSA-1.0+FP --max-problems zero", th_ctosa()) == 2);
    free(out);
    CHECK(th_run(&out, "'%s' check --help", th_ctosa()) == 0);
    CHECK(out && strstr(out, "--max-problems"));
    free(out);
    /* bad spec string before any file access */
    CHECK(th_run(&out, "'%s' check x.tosa --spec TOSA-1.0+XYZ", th_ctosa()) == 2);
    CHECK(out && strstr(out, "XYZ"));
    free(out);
    /* unreadable and malformed files */
    CHECK(th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP", th_ctosa(), th_path(dir, "none.tosa")) == 2);
    CHECK(out && strstr(out, "none.tosa"));
    free(out);
    const char junk[] = "\x10\x00\x00\x00TOSA\xff\xff\xff\xff garbage garbage";
    CHECK(th_write(th_path(dir, "junk.tosa"), junk, sizeof junk - 1) == 0);
    CHECK(th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP", th_ctosa(), th_path(dir, "junk.tosa")) == 2);
    CHECK(out && strstr(out, "junk.tosa"));
    free(out);
    /* a written graph round-trips through the reader and validates */
    simple();
    const char *p = th_path(dir, "add.tosa");
    CHECK_OK(ctosa_write_file(G, p, NULL));
    CHECK(th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP", th_ctosa(), p) == 0);
    CHECK(out && strstr(out, "OK"));
    free(out);
    CHECK(th_run(&out, "'%s' check '%s' --target TOSA-1.0+INT -q", th_ctosa(), p) == 1);
    CHECK(out && strstr(out, "op #0 ADD 'z'"));
    free(out);
    CHECK(th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP -q", th_ctosa(), p) == 0);
    CHECK(out && !*out);
    free(out);
}

int main(void) {
    RUN(test_valid);
    RUN(test_undefined_and_twice);
    RUN(test_use_before_definition);
    RUN(test_control_flow);
    RUN(test_while_and_capture);
    RUN(test_nesting);
    RUN(test_variables);
    RUN(test_many_and_cap);
    RUN(test_examples_cli);
    RUN(test_mutated_files);
    RUN(test_cli_errors);
    ctosa_graph_free(G);
    G = NULL;
    return th_finish();
}
