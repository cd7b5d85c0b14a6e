/* test_shape_infer.c - shape inference over CPU-side nodes
 * (src/lower/core/shape_infer.c).
 *
 * 1. Rules: tests/data/lower/shape_infer/rules.onnx has one node per rule
 *    and no value_info; every node is run through lw_infer_fallback() as if
 *    it stayed on the CPU, and the type and shape of every output must equal
 *    what ONNX's own shape inference computed (expected.txt, written by
 *    make_models.py).
 * 2. A float model whose middle node (cubic Resize) has no TOSA lowering and
 *    whose intermediate values are undeclared: the Relu / Conv / Add after
 *    it are delegated in a second partition with the inferred shape.
 * 3. The quantized cascade (grouped Conv group on the CPU) without
 *    value_info: the Relu group after it is delegated and bit-exact. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower_testutil.h"
#include "lower/core/shape_infer.h"

#define DATA CTOSA_SOURCE_DIR "/tests/data/lower/shape_infer"

static void test_rules(void) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP+INT", &spec));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    lower_session s;
    memset(&s, 0, sizeof s);
    ctosa_error *e = lw_session_open(&s, DATA "/rules.onnx", &spec, &opt);
    CHECK_MSG(!e, "open: %s", e ? ctosa_error_message(e) : "");
    if (e) {
        ctosa_error_free(e);
        lw_session_close(&s);
        return;
    }
    uint32_t filled = 0;
    for (uint32_t i = 0; i < s.n_nodes; i++) filled += lw_infer_fallback(&s, i);
    /* a second pass fills nothing: outputs already known are left alone */
    uint32_t again = 0;
    for (uint32_t i = 0; i < s.n_nodes; i++) again += lw_infer_fallback(&s, i);
    CHECK_MSG(again == 0, "second pass filled %u outputs", again);

    FILE *f = fopen(DATA "/expected.txt", "r");
    CHECK_MSG(f != NULL, "cannot open expected.txt");
    if (!f) {
        lw_session_close(&s);
        return;
    }
    char name[128];
    int dt, rank;
    uint32_t n = 0, ok = 0;
    while (fscanf(f, "%127s %d %d", name, &dt, &rank) == 3) {
        int64_t d[16];
        for (int k = 0; k < rank && k < 16; k++)
            if (fscanf(f, "%" SCNd64, &d[k]) != 1) d[k] = -2;
        n++;
        const lw_val *v = lw_lookup(&s, name);
        bool good = v && v->known && v->v.static_shape && v->v.onnx_dtype == dt && (int)v->v.rank == rank;
        for (int k = 0; good && k < rank; k++) good = v->v.shape[k] == d[k];
        char got[128] = "unknown";
        if (v && v->known) lt_shape_str(v->v.rank, v->v.shape, got, sizeof got);
        CHECK_MSG(good, "%s: inferred %s dtype %d, ONNX says rank %d dtype %d", name, got,
                  v ? v->v.onnx_dtype : -1, rank, dt);
        ok += good;
    }
    fclose(f);
    CHECK_MSG(n >= 40, "expected.txt has %u entries", n);
    /* a Reshape to a runtime shape has no static shape: left unknown */
    const lw_val *rt = lw_lookup(&s, "reshape_rt");
    CHECK_MSG(rt && !(rt->known && rt->v.static_shape), "reshape_rt was given a static shape");
    CHECK_MSG(filled == n, "filled %u outputs, expected %u", filled, n);
    printf("  rules.onnx: %u/%u node outputs match ONNX shape inference\n", ok, n);
    lw_session_close(&s);
}

static ctosa_lower_result *lower(const char *model, const char *spec_str) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_str, &spec));
    ctosa_lower_result *res;
    char why[1024];
    CHECK_MSG(lt_lower(model, &spec, NULL, &res, why, sizeof why), "%s: %s", model, why);
    return res;
}

static void test_resize_cubic(void) {
    ctosa_lower_result *r = lower(DATA "/resize_cubic.onnx", "TOSA-1.0+FP");
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    uint32_t resize = 0, other = 0;
    for (uint32_t i = 0; i < s->n_fallback; i++) {
        if (!strcmp(s->fallback[i].node, "resize")) resize++;
        else if (strcmp(s->fallback[i].op_type, "Constant") != 0) {
            other++;
            printf("    unexpected fallback %s: %s: %s\n", s->fallback[i].node, s->fallback[i].code,
                   s->fallback[i].reason);
        }
    }
    CHECK_MSG(resize == 1 && other == 0, "fallback: resize %u, other %u", resize, other);
    CHECK_MSG(s->n_partitions == 2, "%u partitions", s->n_partitions);
    CHECK_MSG(s->nodes_delegated == 4, "%u delegated (want conv1, relu, conv2, add)", s->nodes_delegated);
    if (s->n_partitions == 2) {
        /* the partition after the Resize takes its output, [1,4,16,16] */
        const ctosa_lower_partition *p = &s->partitions[1];
        bool found = false;
        for (uint32_t i = 0; i < p->n_inputs; i++)
            if (!strcmp(p->inputs[i].name, "r")) {
                int64_t want[4] = {1, 4, 16, 16};
                found = lt_same_shape(p->inputs[i].rank, p->inputs[i].shape, 4, want);
            }
        CHECK_MSG(found, "second partition does not take 'r' as [1,4,16,16]");
    }
    printf("  resize_cubic: Resize on the CPU, %u nodes delegated in %u partitions\n", s->nodes_delegated,
           s->n_partitions);
    ctosa_lower_result_free(r);
}

static void test_qdq_cascade(void) {
    ctosa_lower_result *r = lower(DATA "/qdq_cascade.onnx", "TOSA-1.0+INT");
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK_MSG(s->n_partitions == 1 && s->n_fallback == 4 && s->nodes_delegated == 3,
              "%u partitions, %u fallback, %u delegated", s->n_partitions, s->n_fallback, s->nodes_delegated);
    if (s->n_partitions == 1 && s->partitions[0].n_inputs == 1) {
        char why[512];
        const ctosa_lower_io *in = &s->partitions[0].inputs[0];
        CHECK_MSG(in->quantized && in->scale > 0 && in->scale < 1e-11 && in->zero_point == 3,
                  "partition input %s", in->name);
        CHECK_MSG(
            lt_run_single_vs_ref(s, CTOSA_SOURCE_DIR "/tests/data/lower/quant/cascade_conv", why, sizeof why),
            "cascade: %s", why);
        printf("  qdq_cascade (no value_info): Conv group on the CPU, Relu group delegated, exact\n");
    }
    ctosa_lower_result_free(r);
}

int main(void) {
    RUN(test_rules);
    RUN(test_resize_cubic);
    RUN(test_qdq_cascade);
    return th_finish();
}
