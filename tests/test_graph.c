/* test_graph.c - the graph builder: names, lookups, attribute copies. */
#include "harness.h"

static void test_build_and_find(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    int32_t shp[2] = {1, 16};
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        CHECK_OK(ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_FP32, 2, shp, NULL));
    }
    CHECK_ERR(ctosa_block_add_tensor(g, b, "t5", CTOSA_DTYPE_FP32, 2, shp, NULL), CTOSA_ERR_USAGE,
              "already defined");
    int64_t sv[3] = {1, 2, -3};
    ctosa_tensor *s;
    CHECK_OK(ctosa_block_add_shape(g, b, "s", 3, sv, &s));
    CHECK(ctosa_block_find_tensor(g, b, "t999") == b->tensors[999]);
    CHECK(ctosa_block_find_tensor(g, b, "s") == s);
    CHECK(s->is_shape && s->dtype == CTOSA_DTYPE_SHAPE && s->shape[0] == 3 && s->data.size == 24);
    CHECK(ctosa_block_find_tensor(g, b, "nope") == NULL);

    int32_t pad[4] = {1, 1, 2, 2};
    ctosa_attr a = {0};
    a.pad = (ctosa_i32s){pad, 4};
    a.axis = 7; /* not a CONV2D field: must not be copied */
    const char *in[] = {"t0", "t1", "t2", "z0", "z1"}, *out[] = {"t3"};
    ctosa_op *op;
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONV2D, 5, in, 1, out, &a, &op));
    pad[0] = 99;
    CHECK(op->attr.pad.n == 4 && op->attr.pad.v[0] == 1 && op->attr.pad.v != pad);
    CHECK(op->attr.axis == 0);
    CHECK(strcmp(op->inputs[4], "z1") == 0);
    CHECK(ctosa_graph_find_region(g, "main") == r);
    ctosa_graph_free(g);
}

static void test_tables(void) {
    CHECK(strcmp(ctosa_op_name(CTOSA_OP_CONST_SHAPE), "CONST_SHAPE") == 0);
    CHECK(CTOSA_OP_AVG_POOL2D_ADAPTIVE == 96 && CTOSA_DTYPE_INT64 == 17);
    CHECK(ctosa_op_valid_in(CTOSA_OP_DIM, CTOSA_VERSION_1_1_DRAFT));
    CHECK(!ctosa_op_valid_in(CTOSA_OP_DIM, CTOSA_VERSION_1_0));
    CHECK(!ctosa_dtype_valid_in(CTOSA_DTYPE_INT64, CTOSA_VERSION_1_0));
    uint64_t n;
    CHECK(ctosa_dtype_storage_size(CTOSA_DTYPE_INT4, 5, &n) && n == 3);
    CHECK(ctosa_dtype_storage_size(CTOSA_DTYPE_INT48, 2, &n) && n == 12);
    uint32_t c;
    const ctosa_attr_field *f = ctosa_op_attr_fields(CTOSA_OP_RESCALE, &c);
    CHECK(c == 5 && strcmp(f[1].name, "rounding_mode") == 0);
    ctosa_op_kind k;
    CHECK(ctosa_op_from_name("TRANSPOSE_CONV2D", &k) && k == CTOSA_OP_TRANSPOSE_CONV2D);
}

int main(void) {
    RUN(test_build_and_find);
    RUN(test_tables);
    return th_finish();
}
