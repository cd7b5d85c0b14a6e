/* test_dump_dot.c - `ctosa dump --format dot` on graphs built here: COND_IF
 * with its then/else regions (the shell test covers WHILE_LOOP with Arm's
 * LSTM example), constants elided and counted, names that need escaping,
 * and Graphviz's `dot` accepting the output when it is installed. */
#include <stdlib.h>
#include <string.h>

#include "ctosa/ctosa.h"
#include "harness.h"

static char *dump_dot(const char *path) {
    char *out = NULL;
    int rc = th_run(&out, "'%s' dump '%s' --format dot", th_ctosa(), path);
    CHECK_MSG(rc == 0, "dump --format dot exit %d: %s", rc, out ? out : "");
    return out;
}

/* Counts occurrences of s in text. */
static int count(const char *text, const char *s) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, s)); p += strlen(s)) n++;
    return n;
}

/* main: y = COND_IF(c, x); then: r = a + k (k constant); else: identity.
 * Names carry a quote and a backslash. */
static void test_cond_if(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    ctosa_region *rm, *rt, *re;
    ctosa_block *bm, *bt, *be;
    CHECK_OK(ctosa_graph_add_region(g, "main", &rm));
    CHECK_OK(ctosa_region_add_block(g, rm, "main", &bm));
    CHECK_OK(ctosa_graph_add_region(g, "then \"branch\"", &rt));
    CHECK_OK(ctosa_region_add_block(g, rt, "then_bb", &bt));
    CHECK_OK(ctosa_graph_add_region(g, "else", &re));
    CHECK_OK(ctosa_region_add_block(g, re, "else_bb", &be));
    int32_t d[] = {2}, d1[] = {1};
    CHECK_OK(ctosa_block_add_tensor(g, bm, "c", CTOSA_DTYPE_BOOL, 1, d1, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, bm, "x\"q\\", CTOSA_DTYPE_INT32, 1, d, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, bm, "y", CTOSA_DTYPE_INT32, 1, d, NULL));
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.then_graph = "then \"branch\"";
    at.else_graph = "else";
    const char *in[] = {"c", "x\"q\\"}, *out[] = {"y"};
    CHECK_OK(ctosa_block_add_op(g, bm, CTOSA_OP_COND_IF, 2, in, 1, out, &at, NULL));
    CHECK_OK(ctosa_block_add_input(g, bm, "c"));
    CHECK_OK(ctosa_block_add_input(g, bm, "x\"q\\"));
    CHECK_OK(ctosa_block_add_output(g, bm, "y"));
    /* then: r = a + k, k a constant */
    ctosa_tensor *k;
    int32_t kv[2] = {5, 7};
    CHECK_OK(ctosa_block_add_tensor(g, bt, "a", CTOSA_DTYPE_INT32, 1, d, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, bt, "k", CTOSA_DTYPE_INT32, 1, d, &k));
    CHECK_OK(ctosa_tensor_set_data(g, k, kv, sizeof kv, true));
    CHECK_OK(ctosa_block_add_tensor(g, bt, "r", CTOSA_DTYPE_INT32, 1, d, NULL));
    const char *ti[] = {"a", "k"}, *to[] = {"r"};
    ctosa_attr none;
    memset(&none, 0, sizeof none);
    CHECK_OK(ctosa_block_add_op(g, bt, CTOSA_OP_ADD, 2, ti, 1, to, &none, NULL));
    CHECK_OK(ctosa_block_add_input(g, bt, "a"));
    CHECK_OK(ctosa_block_add_output(g, bt, "r"));
    CHECK_OK(ctosa_block_add_tensor(g, be, "a", CTOSA_DTYPE_INT32, 1, d, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, be, "r", CTOSA_DTYPE_INT32, 1, d, NULL));
    const char *ei[] = {"a"};
    CHECK_OK(ctosa_block_add_op(g, be, CTOSA_OP_IDENTITY, 1, ei, 1, to, &none, NULL));
    CHECK_OK(ctosa_block_add_input(g, be, "a"));
    CHECK_OK(ctosa_block_add_output(g, be, "r"));
    const char *path = th_path(th_tmpdir(), "cond.tosa");
    CHECK_OK(ctosa_write_file(g, path, NULL));
    ctosa_graph_free(g);

    char *dot = dump_dot(path);
    if (!dot) return;
    CHECK_MSG(strncmp(dot, "digraph \"", 9) == 0, "%.60s", dot);
    /* three region clusters, three block clusters */
    CHECK(count(dot, "subgraph \"cluster_r") == 6);
    CHECK(strstr(dot, "label=\"region then \\\"branch\\\"\"") != NULL);
    /* COND_IF points at both branches */
    CHECK_MSG(strstr(dot, "\"r0_b0_op0\" -> \"r1_b0_anchor\" [style=dashed, color=\"#b08000\", "
                          "lhead=\"cluster_r1\", label=\"then_graph\"];") != NULL,
              "%s", dot);
    CHECK_MSG(strstr(dot, "\"r0_b0_op0\" -> \"r2_b0_anchor\" [style=dashed, color=\"#b08000\", "
                          "lhead=\"cluster_r2\", label=\"else_graph\"];") != NULL,
              "%s", dot);
    CHECK(strstr(dot, "\"r0_b0_op0\" [fillcolor=\"#fff2cc\", label=\"#0 COND_IF\\nint32[2]\"];") != NULL);
    /* the escaped input name as node label and edge label */
    CHECK_MSG(strstr(dot, "label=\"x\\\"q\\\\\\nint32[2]\"") != NULL, "%s", dot);
    CHECK(strstr(dot, "\"r0_b0_in1\" -> \"r0_b0_op0\" [label=\"x\\\"q\\\\\"];") != NULL);
    /* the constant operand is counted, not drawn */
    CHECK(strstr(dot, "label=\"#0 ADD\\nint32[2]\\n(1 constant)\"") != NULL);
    CHECK(strstr(dot, "label=\"k\"") == NULL);
    CHECK(count(dot, "{") == count(dot, "}"));
    if (th_have("dot")) {
        const char *dp = th_path(th_tmpdir(), "cond.dot");
        CHECK(th_write(dp, dot, strlen(dot)) == 0);
        char *o = NULL;
        int rc = th_run(&o, "dot -Tsvg '%s' -o /dev/null", dp);
        CHECK_MSG(rc == 0, "Graphviz dot rejects the output: %s", o ? o : "");
        free(o);
    }
    free(dot);
}

int main(void) {
    RUN(test_cond_if);
    return th_finish();
}
