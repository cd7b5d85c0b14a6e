/* test_diags.c - structured validator diagnostics (ctosa_validate_diags):
 * each kind with its operator index, operator and offending types; the
 * same lines and cap as the error message; and the partitioner's reason
 * codes computed from kinds and fields alone (a reworded message cannot
 * change them). */
#include "harness.h"
#include "ctosa/spec.h"
#include "lower/lower_internal.h"
#include "spec/validate_internal.h"

static ctosa_graph *G;

static ctosa_block *new_graph(ctosa_version v) {
    ctosa_graph_free(G);
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_create(v, &G));
    CHECK_OK(ctosa_graph_add_region(G, "main", &r));
    CHECK_OK(ctosa_region_add_block(G, r, "main", &b));
    return b;
}

static void ten(ctosa_block *b, const char *name, ctosa_dtype dt, uint32_t rank, const int32_t *shape) {
    CHECK_OK(ctosa_block_add_tensor(G, b, name, dt, rank, shape, NULL));
}

static void op(ctosa_block *b, ctosa_op_kind k, uint32_t n_in, const char *const *in, const char *out) {
    const char *o[1] = {out};
    CHECK_OK(ctosa_block_add_op(G, b, k, n_in, in, 1, o, NULL, NULL));
}

static ctosa_diags *diags(const char *spec_text, uint32_t max, char **msg) {
    ctosa_spec s;
    CHECK_OK(ctosa_spec_parse(spec_text, &s));
    ctosa_validate_options o = {.max_problems = max};
    ctosa_diags *ds = (ctosa_diags *)1;
    ctosa_error *e = ctosa_validate_diags(G, &s, &o, &ds);
    if (msg) *msg = e ? strdup(ctosa_error_message(e)) : NULL;
    CHECK(e ? ds != NULL && ctosa_error_code(e) == CTOSA_ERR_INVALID : ds == NULL);
    ctosa_error_free(e);
    return ds;
}

static const int32_t S4[1] = {4}, S44[2] = {4, 4};

/* ADD of i8 and i16 under INT: one TYPES diagnostic naming the operator,
 * its index and the three types. */
static void test_types(void) {
    ctosa_block *b = new_graph(CTOSA_VERSION_1_0);
    ten(b, "a", CTOSA_DTYPE_INT32, 1, S4);
    ten(b, "x", CTOSA_DTYPE_INT8, 1, S4);
    ten(b, "y", CTOSA_DTYPE_INT16, 1, S4);
    ten(b, "z", CTOSA_DTYPE_INT32, 1, S4);
    ten(b, "w", CTOSA_DTYPE_INT32, 1, S4);
    CHECK_OK(ctosa_block_add_input(G, b, "a"));
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    CHECK_OK(ctosa_block_add_input(G, b, "y"));
    op(b, CTOSA_OP_ADD, 2, (const char *[]){"a", "a"}, "w");
    op(b, CTOSA_OP_ADD, 2, (const char *[]){"x", "y"}, "z");
    CHECK_OK(ctosa_block_add_output(G, b, "z"));
    CHECK_OK(ctosa_block_add_output(G, b, "w"));
    char *msg = NULL;
    ctosa_diags *ds = diags("TOSA-1.0+INT", 0, &msg);
    CHECK(ctosa_diags_count(ds) == 1);
    const ctosa_diag *d = ctosa_diags_at(ds, 0);
    if (d) {
        CHECK(d->kind == CTOSA_DIAG_TYPES && d->op_index == 1 && d->op == CTOSA_OP_ADD);
        CHECK(d->region && strcmp(d->region, "main") == 0);
        CHECK(d->n_inputs == 2 && d->n_outputs == 1 && d->types);
        if (d->types)
            CHECK(d->types[0] == CTOSA_DTYPE_INT8 && d->types[1] == CTOSA_DTYPE_INT16 &&
                  d->types[2] == CTOSA_DTYPE_INT32);
        CHECK(msg && strcmp(d->text, msg) == 0);
        CHECK(strcmp(ctosa_diag_kind_name(d->kind), "types") == 0);
        CHECK(lw_map_validator(G, &(ctosa_spec){0}, ds) == LOWER_MIXED_WIDTH);
    }
    CHECK(ctosa_diags_at(ds, 1) == NULL);
    ctosa_diags_free(ds);
    free(msg);
}

/* Several kinds in one graph, in the order of the message lines, under the
 * cap. */
static void test_kinds_and_cap(void) {
    ctosa_block *b = new_graph(CTOSA_VERSION_1_0);
    ten(b, "x", CTOSA_DTYPE_FP32, 1, S4);
    ten(b, "m", CTOSA_DTYPE_FP32, 2, S44);
    ten(b, "y", CTOSA_DTYPE_FP32, 1, S4);
    ten(b, "r", CTOSA_DTYPE_FP32, 1, S4);
    ten(b, "q", CTOSA_DTYPE_FP32, 1, S4);
    ten(b, "p", CTOSA_DTYPE_FP32, 1, S4);
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    CHECK_OK(ctosa_block_add_input(G, b, "m"));
    op(b, CTOSA_OP_ADD, 1, (const char *[]){"x"}, "y");       /* operand count */
    op(b, CTOSA_OP_ABS, 1, (const char *[]){"m"}, "r");       /* shapes (ERROR_IF) */
    op(b, CTOSA_OP_DIM, 1, (const char *[]){"x"}, "q");       /* 1.1 only */
    op(b, CTOSA_OP_EXP, 1, (const char *[]){"nowhere"}, "p"); /* structure */
    CHECK_OK(ctosa_block_add_output(G, b, "y"));
    CHECK_OK(ctosa_block_add_output(G, b, "r"));
    CHECK_OK(ctosa_block_add_output(G, b, "q"));
    CHECK_OK(ctosa_block_add_output(G, b, "p"));
    char *msg = NULL;
    ctosa_diags *ds = diags("TOSA-1.0+FP", 0, &msg);
    static const struct {
        ctosa_diag_kind kind;
        int32_t index;
        ctosa_op_kind op;
    } want[] = {
        {CTOSA_DIAG_OPERAND_COUNT, 0, CTOSA_OP_ADD},
        {CTOSA_DIAG_ERROR_IF, 1, CTOSA_OP_ABS},
        {CTOSA_DIAG_NOT_IN_VERSION, 2, CTOSA_OP_DIM},
        {CTOSA_DIAG_ERROR_IF, 2, CTOSA_OP_DIM}, /* its output is no shape */
        {CTOSA_DIAG_STRUCTURE, 3, CTOSA_OP_EXP},
    };
    uint32_t n = ctosa_diags_count(ds);
    CHECK_MSG(n == 5, "%u diagnostics:\n%s", n, msg ? msg : "");
    /* one diagnostic per line, same text, same order */
    const char *line = msg;
    for (uint32_t i = 0; i < n && i < 5 && line; i++) {
        const ctosa_diag *d = ctosa_diags_at(ds, i);
        CHECK_MSG(d->kind == want[i].kind && d->op_index == want[i].index && d->op == want[i].op,
                  "diag %u: kind %s op #%d", i, ctosa_diag_kind_name(d->kind), d->op_index);
        CHECK(d->n_inputs == 0 && d->types == NULL);
        size_t len = strlen(d->text);
        CHECK_MSG(strncmp(line, d->text, len) == 0 && (line[len] == '\n' || !line[len]),
                  "line %u differs: %s", i, d->text);
        line = strchr(line, '\n');
        if (line) line++;
        CHECK(lw_map_validator(G, &(ctosa_spec){0}, ds) == LOWER_NOT_IN_SPEC);
    }
    ctosa_diags_free(ds);
    free(msg);

    /* the cap: the first two problems only */
    ds = diags("TOSA-1.0+FP", 2, &msg);
    CHECK(ctosa_diags_count(ds) == 2);
    CHECK(ctosa_diags_at(ds, 1) && ctosa_diags_at(ds, 1)->kind == CTOSA_DIAG_ERROR_IF);
    CHECK(msg && strstr(msg, "... and 3 more problem(s)"));
    ctosa_diags_free(ds);
    free(msg);
}

/* Block-level problems: op_index -1, no operator. Conformant graphs: no
 * diagnostics. */
static void test_block_level(void) {
    ctosa_block *b = new_graph(CTOSA_VERSION_1_0);
    ten(b, "x", CTOSA_DTYPE_FP32, 1, S4);
    ten(b, "y", CTOSA_DTYPE_FP32, 1, S4);
    CHECK_OK(ctosa_block_add_input(G, b, "x"));
    op(b, CTOSA_OP_ABS, 1, (const char *[]){"x"}, "y");
    CHECK_OK(ctosa_block_add_output(G, b, "y"));
    CHECK(diags("TOSA-1.0+FP", 0, NULL) == NULL);
    CHECK_OK(ctosa_block_add_output(G, b, "missing"));
    ctosa_diags *ds = diags("TOSA-1.0+FP", 0, NULL);
    const ctosa_diag *d = ctosa_diags_at(ds, 0);
    CHECK(ctosa_diags_count(ds) == 1 && d && d->kind == CTOSA_DIAG_STRUCTURE && d->op_index == -1 &&
          d->op == CTOSA_OP_UNKNOWN && d->region && strcmp(d->region, "main") == 0);
    ctosa_diags_free(ds);
    ctosa_diags *none = (ctosa_diags *)1;
    CHECK_ERR(ctosa_validate_diags(NULL, NULL, NULL, &none), CTOSA_ERR_USAGE, "NULL");
    CHECK(none == NULL && ctosa_diags_count(NULL) == 0 && ctosa_diags_at(NULL, 0) == NULL);
    ctosa_diags_free(NULL);
    for (int k = CTOSA_DIAG_STRUCTURE; k <= CTOSA_DIAG_U55; k++)
        CHECK(ctosa_diag_kind_name((ctosa_diag_kind)k) != NULL);
}

/* Diagnostics made directly, with text that says one thing and fields that
 * say another: the reason code follows the fields. (The old mapping read
 * "of level", "not allowed" and the "types (...)" list out of the text.) */
static ctosa_diags *one(ctosa_diag_kind kind, uint32_t n_in, const ctosa_dtype *types, const char *text) {
    ctosa_diags *s = spec_diags_new();
    diag_list d;
    diag_init(&d, 0);
    spec_report(&d, s, kind, NULL, 0, CTOSA_OP_ADD, n_in, types ? 1 : 0, types, "%s", text);
    diag_free(&d);
    return s;
}

static void test_mapping_ignores_text(void) {
    ctosa_spec fp, i64;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT", &fp));
    CHECK_OK(ctosa_spec_parse("TOSA-1.1+INT+int64", &i64));
    ctosa_block *b = new_graph(CTOSA_VERSION_1_0);
    ten(b, "x", CTOSA_DTYPE_INT8, 1, S4);
    const ctosa_dtype mixed[3] = {CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16};
    const ctosa_dtype same[3] = {CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT8};
    static const char *texts[] = {
        "",
        "types (i8,i16)->i16 not allowed by TOSA-1.0+INT",
        "types (i16,i16)->i8 not allowed by TOSA-1.0+INT",
        "x = 9 exceeds MAX_KERNEL 8 of level 8K",
        "something entirely reworded",
    };
    for (uint32_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        const char *tx = texts[t];
        ctosa_diags *ds;
#define EXPECT(kind, n, types, spec, code)                                       \
    ds = one(kind, n, types, tx);                                                \
    CHECK_MSG(lw_map_validator(G, spec, ds) == (code), "text '%s', kind %s", tx, \
              ctosa_diag_kind_name(kind));                                       \
    ctosa_diags_free(ds);
        EXPECT(CTOSA_DIAG_TYPES, 2, mixed, &fp, LOWER_MIXED_WIDTH)
        EXPECT(CTOSA_DIAG_TYPES, 2, same, &fp, LOWER_NOT_IN_SPEC)
        EXPECT(CTOSA_DIAG_LEVEL_LIMIT, 0, NULL, &fp, LOWER_LEVEL_LIMIT)
        EXPECT(CTOSA_DIAG_ERROR_IF, 0, NULL, &fp, LOWER_NOT_IN_SPEC)
        EXPECT(CTOSA_DIAG_RANK, 0, NULL, &fp, LOWER_NOT_IN_SPEC)
        EXPECT(CTOSA_DIAG_U55, 0, NULL, &fp, LOWER_NOT_IN_SPEC)
        EXPECT(CTOSA_DIAG_STRUCTURE, 0, NULL, &i64, LOWER_NOT_IN_SPEC)
    }
    /* int64 in the graph, not in the spec: a refused signature is
     * int64_not_enabled whatever the text */
    ten(b, "big", CTOSA_DTYPE_INT64, 1, S4);
    for (uint32_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        const char *tx = texts[t];
        ctosa_diags *ds;
        EXPECT(CTOSA_DIAG_TYPES, 2, same, &fp, LOWER_INT64_NOT_ENABLED)
        EXPECT(CTOSA_DIAG_TYPES, 2, same, &i64, LOWER_NOT_IN_SPEC)
        EXPECT(CTOSA_DIAG_ERROR_IF, 0, NULL, &fp, LOWER_NOT_IN_SPEC)
#undef EXPECT
    }
}

int main(void) {
    RUN(test_types);
    RUN(test_kinds_and_cap);
    RUN(test_block_level);
    RUN(test_mapping_ignores_text);
    ctosa_graph_free(G);
    return th_finish();
}
