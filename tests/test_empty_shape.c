/* test_empty_shape.c - the empty shape [] (RESHAPE to rank 0) in every form
 * a file may hold it: written by ctosa (one dummy value, as Arm's
 * serializer does), an empty data vector, and an absent constant. The
 * writer, the reader, the validator and the interpreter must agree: each
 * form is checked under TOSA-1.0+FP and runs, giving the input's value. */
#include "ctosa/interp.h"
#include "harness.h"
#include "writer_testutil.h"

enum { FORM_VALUES, FORM_NO_DATA };

/* x: fp32[1] -> RESHAPE(x, []) -> y: fp32[]. */
static ctosa_graph *make_graph(int form) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    ctosa_block *b = tu_main(g);
    int32_t one = 1;
    CHECK_OK(ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_FP32, 1, &one, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "y", CTOSA_DTYPE_FP32, 0, NULL, NULL));
    static const int64_t none[1] = {0};
    CHECK_OK(ctosa_block_add_shape(g, b, "s", 0, form == FORM_VALUES ? none : NULL, NULL));
    const char *so[] = {"s"}, *in[] = {"x", "s"}, *out[] = {"y"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, so, NULL, NULL));
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_RESHAPE, 2, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "x"));
    CHECK_OK(ctosa_block_add_output(g, b, "y"));
    return g;
}

/* Validates and runs g; y must be x. */
static void check_and_run(const ctosa_graph *g, const char *what) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    ctosa_error *e = ctosa_validate(g, &spec, NULL);
    CHECK_MSG(!e, "%s: check: %s", what, ctosa_error_message(e));
    ctosa_error_free(e);
    ctosa_interp *it = NULL;
    e = ctosa_interp_create(g, NULL, &it);
    float x = 2.5f;
    int64_t one = 1;
    if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 1, &one, &x, sizeof x);
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor y;
    if (!e) e = ctosa_interp_get_output(it, "y", &y);
    CHECK_MSG(!e, "%s: run: %s", what, ctosa_error_message(e));
    if (!e) CHECK_MSG(y.rank == 0 && y.count == 1 && ((float *)y.data)[0] == 2.5f, "%s: y", what);
    ctosa_error_free(e);
    ctosa_interp_free(it);
}

/* The length of shape s's data vector in file f. */
static uint32_t shape_vec_len(const uint8_t *f) {
    nav_data d[8];
    uint32_t n = nav_tensors(f, d, 8);
    for (uint32_t i = 0; i < n && i < 8; i++)
        if (d[i].is_shape) return d[i].vec ? d[i].vec_len : UINT32_MAX;
    return UINT32_MAX;
}

static void test_forms(void) {
    for (int form = FORM_VALUES; form <= FORM_NO_DATA; form++) {
        const char *what = form == FORM_VALUES ? "constant []" : "[] without data";
        ctosa_graph *g = make_graph(form);
        check_and_run(g, what); /* as built */
        void *buf = NULL;
        size_t size = 0;
        CHECK_OK(ctosa_write_memory(g, NULL, &buf, &size));
        if (buf) {
            /* ctosa writes one dummy int64 for a constant [], nothing for
             * a shape without data */
            CHECK_MSG(shape_vec_len(buf) == (form == FORM_VALUES ? 8u : 0u), "%s: vector of %u bytes", what,
                      shape_vec_len(buf));
            ctosa_graph *back = NULL;
            CHECK_OK(ctosa_read_memory(buf, size, "empty_shape", NULL, &back));
            if (back) check_and_run(back, what); /* as read from the file */
            ctosa_graph_free(back);
        }
        free(buf);
        ctosa_graph_free(g);
    }
}

int main(void) {
    RUN(test_forms);
    return th_finish();
}
