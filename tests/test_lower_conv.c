/* test_lower_conv.c - the conv / pool / matmul / norm / softmax / resize
 * lowering families on small ONNX models (tests/data/lower/conv, made by
 * gen.py there with numpy references).
 *
 * Every case in cases.txt is lowered under TOSA-1.0+FP through the public
 * API. "ok" cases must be fully delegated in valid partitions whose
 * interpreter outputs match the reference (rtol 1e-3, atol 1e-5); "reject
 * CODE" cases must leave their node in the fallback list with that code.
 * Some structural properties are checked on top: the depthwise case uses
 * DEPTHWISE_CONV2D, grouped conv splits into CONV2Ds, and the
 * conv -> pool -> conv chain keeps only the boundary transposes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower_testutil.h"

static const char *case_dir(const char *name) {
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/tests/data/lower/conv/%s", CTOSA_SOURCE_DIR, name);
    return buf;
}

static uint32_t op_count(const ctosa_lower_summary *s, const char *op) {
    uint32_t n = 0;
    for (uint32_t p = 0; p < s->n_partitions; p++)
        for (uint32_t i = 0; i < s->partitions[p].n_op_counts; i++)
            if (!strcmp(s->partitions[p].op_names[i], op)) n += s->partitions[p].op_counts[i];
    return n;
}

/* Lowers one case; returns the result (caller frees) or NULL. */
static ctosa_lower_result *lower_case(const char *name, const ctosa_spec *spec) {
    char model[1100];
    snprintf(model, sizeof model, "%s/model.onnx", case_dir(name));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(model, spec, &opt, &r);
    CHECK_MSG(!e, "%s: %s", name, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    return r;
}

/* Feeds the case's input_<name>.npy files and compares output_<i>.npy. */
static void run_ok_case(const char *name, const ctosa_lower_summary *s, double rtol, double atol) {
    char why[1024];
    CHECK_MSG(s->n_fallback == 0 && s->nodes_delegated == s->nodes_total, "%s: %u/%u delegated%s%s", name,
              s->nodes_delegated, s->nodes_total, s->n_fallback ? ": " : "",
              s->n_fallback ? s->fallback[0].reason : "");
    if (s->n_fallback) return;
    CHECK_MSG(lt_check_accounting(s, why, sizeof why), "%s: %s", name, why);
    lt_values vals = {0};
    ctosa_onnx_model *m = NULL;
    char path[1200];
    snprintf(path, sizeof path, "%s/model.onnx", case_dir(name));
    CHECK_OK(ctosa_onnx_load(path, NULL, &m));
    if (!m) return;
    const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        snprintf(path, sizeof path, "%s/input_%s.npy", case_dir(name), g->inputs[i].name);
        npy_array a;
        ctosa_error *e = lt_load_array(path, &a);
        CHECK_MSG(!e, "%s: %s", name, e ? ctosa_error_message(e) : "");
        if (e) {
            ctosa_error_free(e);
            continue;
        }
        CHECK_OK(lt_values_put(&vals, g->inputs[i].name, &a));
    }
    lt_run_status rs = lt_run_partitions(s, &vals, 1, why, sizeof why);
    CHECK_MSG(rs == LT_RUN_OK, "%s: %s", name, why);
    for (uint32_t i = 0; rs == LT_RUN_OK && i < g->n_outputs; i++) {
        snprintf(path, sizeof path, "%s/output_%u.npy", case_dir(name), i);
        npy_array want;
        ctosa_error *e = lt_load_array(path, &want);
        CHECK_MSG(!e, "%s: %s", name, e ? ctosa_error_message(e) : "");
        if (e) {
            ctosa_error_free(e);
            continue;
        }
        const npy_array *got = lt_values_get(&vals, g->outputs[i].name);
        CHECK_MSG(got, "%s: output '%s' not produced", name, g->outputs[i].name);
        if (got) {
            double mx;
            CHECK_MSG(lt_compare(got, &want, rtol, atol, &mx, why, sizeof why), "%s: output '%s': %s", name,
                      g->outputs[i].name, why);
        }
        npy_free(&want);
    }
    lt_values_free(&vals);
    ctosa_onnx_free(m);
}

static void test_cases(void) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    char list[1100];
    snprintf(list, sizeof list, "%s/cases.txt", case_dir(""));
    FILE *f = fopen(list, "r");
    CHECK_MSG(f, "cannot open %s", list);
    if (!f) return;
    char line[512];
    uint32_t n = 0;
    while (fgets(line, sizeof line, f)) {
        /* "<case> ok [rtol atol]" or "<case> reject <code>" */
        char name[256] = "", kind[32] = "", code[64] = "", atol_s[64] = "";
        if (sscanf(line, "%255s %31s %63s %63s", name, kind, code, atol_s) < 2) continue;
        n++;
        ctosa_lower_result *r = lower_case(name, &spec);
        if (!r) continue;
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        char why[1024];
        CHECK_MSG(lt_validate_all(s, &spec, why, sizeof why), "%s: %s", name, why);
        if (!strcmp(kind, "ok")) {
            double rtol = code[0] ? strtod(code, NULL) : 1e-3;
            double atol = atol_s[0] ? strtod(atol_s, NULL) : 1e-5;
            run_ok_case(name, s, rtol, atol);
        } else {
            bool found = false;
            for (uint32_t i = 0; i < s->n_fallback; i++)
                if (!strcmp(s->fallback[i].node, "n0")) {
                    found = true;
                    CHECK_MSG(!strcmp(s->fallback[i].code, code), "%s: code %s (%s), expected %s", name,
                              s->fallback[i].code, s->fallback[i].reason, code);
                    const char *want_in = strstr(name, "resize") ? "scales" : "w";
                    if (!strcmp(code, "needs_constant"))
                        CHECK_MSG(s->fallback[i].input && !strcmp(s->fallback[i].input, want_in),
                                  "%s: needs_constant names '%s'", name,
                                  s->fallback[i].input ? s->fallback[i].input : "(null)");
                }
            CHECK_MSG(found, "%s: node n0 was not rejected", name);
        }
        /* structural checks on selected cases */
        if (!strcmp(name, "conv2d_depthwise_mult2"))
            CHECK(op_count(s, "DEPTHWISE_CONV2D") == 1 && op_count(s, "CONV2D") == 0);
        if (!strcmp(name, "conv2d_group2")) CHECK(op_count(s, "CONV2D") == 2 && op_count(s, "CONCAT") == 1);
        if (!strcmp(name, "conv3d")) CHECK(op_count(s, "CONV3D") == 1);
        if (!strcmp(name, "convtr_basic")) CHECK(op_count(s, "TRANSPOSE_CONV2D") == 1);
        if (!strcmp(name, "chain_conv_pool_conv")) {
            CHECK(op_count(s, "CONV2D") == 2 && op_count(s, "MAX_POOL2D") == 1);
            CHECK_MSG(op_count(s, "TRANSPOSE") == 2, "%u transposes (expected the 2 at the boundary)",
                      op_count(s, "TRANSPOSE"));
        }
        if (!strcmp(name, "resize_linear_half_pixel")) CHECK(op_count(s, "RESIZE") == 1);
        if (!strcmp(name, "matmul_4d_x_2d_const"))
            CHECK(op_count(s, "MATMUL") == 1 && op_count(s, "TILE") == 0);
        ctosa_lower_result_free(r);
    }
    fclose(f);
    CHECK(n >= 120);
}

int main(void) {
    RUN(test_cases);
    return th_finish();
}
