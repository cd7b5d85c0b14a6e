/* test_inline_functions.c - ctosa_lower_file on models with model-local
 * functions (tests/data/onnx/function.onnx: a function with a default
 * attribute called with and without the attribute, a function calling a
 * function, an overloaded call; function_in_if.onnx: a call inside an If
 * branch). Needs no Python: tests/cli_functions.sh covers the numerics.
 *   - every expanded node is in exactly one partition or in fallback, under
 *     "<call>/<node>" names; the report's "inlined_functions" maps calls;
 *   - with every node on the CPU (TOSA-1.0+INT has no float rows), the
 *     partitioned ONNX holds the body nodes as plain nodes whose attribute
 *     references are resolved (3, the default 2, and 1 through a nested
 *     call), has no functions left, and reads back with no dangling input;
 *   - a CPU If whose branch calls a function keeps the functions. */
#include <string.h>

#include "ctosa/lower.h"
#include "ctosa/onnx.h"
#include "harness.h"
#include "lower_testutil.h"

#define DATA CTOSA_SOURCE_DIR "/tests/data/onnx/"

static ctosa_lower_result *lower(const char *model, const char *spec_s, const char *dir) {
    ctosa_spec spec;
    ctosa_error *e = ctosa_spec_parse(spec_s, &spec);
    CHECK(e == NULL);
    ctosa_error_free(e);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    ctosa_lower_result *r = NULL;
    e = ctosa_lower_file(model, &spec, &opt, &r);
    CHECK_MSG(e == NULL, "%s: %s", model, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    char why[1024];
    if (r)
        CHECK_MSG(lt_validate_all(ctosa_lower_result_summary(r), &spec, why, sizeof why), "%s: %s", model,
                  why);
    return r;
}

/* Every node named exactly once over partitions and fallback. */
static void check_accounting(const ctosa_lower_summary *s, const char *const *want, uint32_t n_want) {
    CHECK(s->nodes_total == n_want && s->nodes_delegated + s->n_fallback == n_want);
    for (uint32_t w = 0; w < n_want; w++) {
        uint32_t seen = 0;
        for (uint32_t p = 0; p < s->n_partitions; p++)
            for (uint32_t k = 0; k < s->partitions[p].n_nodes; k++)
                seen += !strcmp(s->partitions[p].nodes[k], want[w]);
        for (uint32_t f = 0; f < s->n_fallback; f++) seen += !strcmp(s->fallback[f].node, want[w]);
        CHECK_MSG(seen == 1, "node '%s' counted %u times", want[w], seen);
    }
}

static const char *const NODES[] = {"call1/Constant",
                                    "call1/Mul",
                                    "call1/Add",
                                    "call2/Constant",
                                    "call2/Mul",
                                    "call2/Add",
                                    "call3/ScaledAdd/Constant",
                                    "call3/ScaledAdd/Mul",
                                    "call3/ScaledAdd/Add",
                                    "relu",
                                    "call4/Add"};

static void test_delegated(void) {
    ctosa_lower_result *r = lower(DATA "function.onnx", "TOSA-1.0+FP", NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_accounting(s, NODES, 11);
    CHECK(s->n_fallback == 0 && s->n_partitions == 1);
    const char *j = s->report_json;
    CHECK(strstr(j, "\"inlined_functions\": [") != NULL);
    CHECK(
        strstr(j,
               "{\"node\": \"call3/ScaledAdd\", \"op_type\": \"ScaledAdd\", \"domain\": \"local\", "
               "\"depth\": 1, "
               "\"nodes\": [\"call3/ScaledAdd/Constant\", \"call3/ScaledAdd/Mul\", \"call3/ScaledAdd/Add\"], "
               "\"partitions\": [0], \"fallback\": []}") != NULL);
    ctosa_lower_result_free(r);
}

static void test_cpu_encoded(void) {
    const char *dir = th_tmpdir();
    ctosa_lower_result *r = lower(DATA "function.onnx", "TOSA-1.0+INT", dir);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_accounting(s, NODES, 11);
    CHECK(s->nodes_delegated == 0 && s->n_fallback == 11);
    CHECK(strstr(s->report_json, "\"fallback\": [\"call1/Constant\", \"call1/Mul\", \"call1/Add\"]") != NULL);
    ctosa_lower_result_free(r);
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load(th_path(dir, "function.partitioned.onnx"), NULL, &m);
    CHECK_MSG(e == NULL, "%s", e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (!m) return;
    const ctosa_onnx_model_info *mi = ctosa_onnx_info(m);
    const ctosa_onnx_graph *g = mi->graph;
    CHECK(mi->n_functions == 0 && g->n_nodes == 11);
    const float want[3] = {3.0f, 2.0f, 1.0f};
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *nd = &g->nodes[i];
        CHECK(strcmp(nd->domain, "local") != 0);
        CHECK_MSG(!strcmp(nd->name, NODES[i]), "node %u: '%s'", i, nd->name);
        for (uint32_t a = 0; a < nd->n_attrs; a++) CHECK(nd->attrs[a].ref_attr_name == NULL);
        if (!strcmp(nd->op_type, "Constant") && k < 3) {
            const ctosa_onnx_attr *at = ctosa_onnx_node_attr(nd, "value_float");
            CHECK_MSG(at && at->type == CTOSA_ONNX_ATTR_FLOAT && at->f == want[k], "Constant %u", k);
            k++;
        }
        /* every input is a graph input, an initializer or an earlier output */
        for (uint32_t q = 0; q < nd->n_inputs; q++) {
            const char *in = nd->inputs[q];
            bool found = !in[0];
            for (uint32_t t = 0; t < g->n_inputs && !found; t++) found = !strcmp(g->inputs[t].name, in);
            for (uint32_t t = 0; t < g->n_initializers && !found; t++)
                found = !strcmp(g->initializers[t].name, in);
            for (uint32_t t = 0; t < i && !found; t++)
                for (uint32_t o = 0; o < g->nodes[t].n_outputs && !found; o++)
                    found = !strcmp(g->nodes[t].outputs[o], in);
            CHECK_MSG(found, "node '%s' input '%s' is produced by nothing", nd->name, in);
        }
    }
    CHECK(k == 3);
    CHECK(!strcmp(g->nodes[1].inputs[1], "call1/alpha"));
    ctosa_onnx_free(m);
}

static void test_call_in_if(void) {
    const char *dir = th_tmpdir();
    ctosa_lower_result *r = lower(DATA "function_in_if.onnx", "TOSA-1.0+FP", dir);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK(s->nodes_total == 1 && s->n_fallback == 1 && strstr(s->report_json, "inlined_functions") == NULL);
    ctosa_lower_result_free(r);
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load(th_path(dir, "function_in_if.partitioned.onnx"), NULL, &m);
    CHECK(e == NULL);
    ctosa_error_free(e);
    if (!m) return;
    /* the If is copied as it is and its branch still calls Twice */
    CHECK(ctosa_onnx_info(m)->n_functions == 1 &&
          ctosa_onnx_find_function(m, "local", "Twice", NULL) != NULL);
    ctosa_onnx_free(m);
}

int main(void) {
    RUN(test_delegated);
    RUN(test_cpu_encoded);
    RUN(test_call_in_if);
    return th_finish();
}
