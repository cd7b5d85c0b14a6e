/* test_lower_cvnodes.c - Debian's libonnx-testdata node tests of the conv /
 * pool / matmul / norm / softmax / resize operator families, lowered under
 * TOSA-1.0+FP (and TOSA-1.0+INT+FP) and run on the interpreter.
 *
 * Inputs a lowering needs constant (needs_constant with the input name)
 * are bound from the test data, as `ctosa lower --bind` would. Every test
 * whose directory name starts with one of the prefixes below must be fully
 * delegated and match output_N.pb (rtol 1e-3, atol 1e-5), unless it is in
 * the exception table with the reason code its node must fall back with.
 * Skipped (exit 77) when the test data is not installed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lower_testutil.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static const char *const prefixes[] = {
    "test_conv",
    "test_basic_conv",
    "test_convtranspose",
    "test_maxpool",
    "test_averagepool",
    "test_globalaveragepool",
    "test_globalmaxpool",
    "test_matmul_",
    "test_gemm",
    "test_einsum",
    "test_batchnorm",
    "test_instancenorm",
    "test_layer_normalization",
    "test_group_normalization",
    "test_rms_normalization",
    "test_lpnorm",
    "test_lrn",
    "test_softmax",
    "test_logsoftmax",
    "test_hardmax",
    "test_resize",
    "test_upsample",
    "test_depthtospace",
    "test_spacetodepth",
};

/* Tests that fall back, with the code their operator node must get. */
static const struct {
    const char *test, *code;
} exceptions[] = {
    {"test_maxpool_2d_uint8", "unsupported_dtype"},                            /* uint8 has no TOSA type */
    {"test_maxpool_with_argmax_2d_precomputed_pads", "unsupported_attribute"}, /* Indices */
    {"test_maxpool_with_argmax_2d_precomputed_strides", "unsupported_attribute"},
    {"test_batchnorm_epsilon_training_mode", "unsupported_attribute"},
    {"test_batchnorm_example_training_mode", "unsupported_attribute"},
    /* the Einsum tests are float64, which TOSA has no type for */
    {"test_einsum_batch_diagonal", "unsupported_dtype"},
    {"test_einsum_batch_matmul", "unsupported_dtype"},
    {"test_einsum_inner_prod", "unsupported_dtype"},
    {"test_einsum_sum", "unsupported_dtype"},
    {"test_einsum_transpose", "unsupported_dtype"},
    {"test_depthtospace_example", "no_compute"}, /* data movement alone */
    {"test_depthtospace_crd_mode_example", "no_compute"},
    {"test_depthtospace_dcr_mode", "no_compute"},
    {"test_depthtospace_crd_mode", "no_compute"},
    {"test_spacetodepth", "no_compute"},
    {"test_spacetodepth_example", "no_compute"},
};

static const char *exception_code(const char *test) {
    for (size_t i = 0; i < sizeof exceptions / sizeof *exceptions; i++)
        if (!strcmp(exceptions[i].test, test)) return exceptions[i].code;
    return NULL;
}

static bool wanted(const char *name) {
    /* *_expanded tests are function bodies of other families' operators */
    size_t n = strlen(name);
    if (n > 9 && !strcmp(name + n - 9, "_expanded")) return false;
    /* ConvInteger belongs to the quantized lowerings (tests/test_quant.c) */
    if (strstr(name, "convinteger")) return false;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return true;
    return false;
}

static uint32_t n_pass, n_exc, n_fail;

/* Lowers test dir `d` binding `binds`; returns the result or NULL. */
static ctosa_lower_result *lower_with(const char *model, const ctosa_spec *spec,
                                      const ctosa_lower_bind *binds, uint32_t nb, char *why, size_t cap) {
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.binds = binds;
    opt.n_binds = nb;
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(model, spec, &opt, &r);
    if (e) {
        snprintf(why, cap, "lower: %s", ctosa_error_message(e));
        ctosa_error_free(e);
        return NULL;
    }
    return r;
}

static bool run_test(const char *name, const ctosa_spec *spec, char *why, size_t cap,
                     const char **fell_code) {
    char dir[512], model[600];
    snprintf(dir, sizeof dir, "%s/%s", NODE_DIR, name);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    *fell_code = NULL;
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load(model, NULL, &m);
    if (e) {
        snprintf(why, cap, "load: %s", ctosa_error_message(e));
        ctosa_error_free(e);
        return false;
    }
    const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
    /* graph inputs that are not initializers, in order: input_<k>.pb */
    const char *in_names[16];
    uint32_t n_in = 0;
    for (uint32_t i = 0; i < g->n_inputs && n_in < 16; i++) {
        bool init = false;
        for (uint32_t j = 0; j < g->n_initializers; j++)
            if (!strcmp(g->initializers[j].name, g->inputs[i].name)) init = true;
        if (!init) in_names[n_in++] = g->inputs[i].name;
    }
    static char files[16][700];
    ctosa_lower_bind binds[16];
    uint32_t nb = 0;
    ctosa_lower_result *r = lower_with(model, spec, NULL, 0, why, cap);
    /* bind what the lowering needs constant, then lower again */
    for (int round = 0; r && round < 2; round++) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        uint32_t added = 0;
        for (uint32_t f = 0; f < s->n_fallback; f++) {
            const char *in = s->fallback[f].input;
            /* a run-time int64 input reports int64_not_enabled before the
             * lowering can ask for it as a constant: bind it too */
            if ((strcmp(s->fallback[f].code, "needs_constant") &&
                 strcmp(s->fallback[f].code, "int64_not_enabled")) ||
                !in)
                continue;
            for (uint32_t k = 0; k < n_in && nb < 16; k++)
                if (!strcmp(in_names[k], in)) {
                    bool dup = false;
                    for (uint32_t q = 0; q < nb; q++)
                        if (!strcmp(binds[q].name, in)) dup = true;
                    if (dup) break;
                    snprintf(files[nb], sizeof files[nb], "%s/test_data_set_0/input_%u.pb", dir, k);
                    binds[nb].name = in_names[k];
                    binds[nb].file = files[nb];
                    nb++;
                    added++;
                }
        }
        if (!added) break;
        ctosa_lower_result_free(r);
        r = lower_with(model, spec, binds, nb, why, cap);
    }
    bool ok = r != NULL;
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    if (ok && !lt_validate_all(s, spec, why, cap)) ok = false;
    if (ok && s->n_fallback) {
        *fell_code = s->fallback[0].code;
        snprintf(why, cap, "fallback %s %s: %s", s->fallback[0].op_type, s->fallback[0].code,
                 s->fallback[0].reason);
        /* keep a stable copy of the code */
        static char code[64];
        snprintf(code, sizeof code, "%s", s->fallback[0].code);
        *fell_code = code;
        ok = false;
    }
    lt_values vals = {0};
    for (uint32_t k = 0; ok && k < n_in; k++) {
        char path[700];
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%u.pb", dir, k);
        npy_array a;
        e = lt_load_array(path, &a);
        if (!e) e = lt_values_put(&vals, in_names[k], &a);
        if (e) {
            snprintf(why, cap, "%s", ctosa_error_message(e));
            ctosa_error_free(e);
            ok = false;
        }
    }
    if (ok && lt_run_partitions(s, &vals, 1, why, cap) != LT_RUN_OK) ok = false;
    for (uint32_t i = 0; ok && i < g->n_outputs; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%u.pb", dir, i);
        npy_array want;
        e = lt_load_array(path, &want);
        if (e) {
            snprintf(why, cap, "%s", ctosa_error_message(e));
            ctosa_error_free(e);
            ok = false;
            break;
        }
        const npy_array *got = lt_values_get(&vals, g->outputs[i].name);
        if (!got) {
            snprintf(why, cap, "output '%s' not produced", g->outputs[i].name);
            ok = false;
        } else if (!lt_compare(got, &want, 1e-3, 1e-5, NULL, why, cap)) {
            ok = false;
        }
        npy_free(&want);
    }
    lt_values_free(&vals);
    ctosa_lower_result_free(r);
    ctosa_onnx_free(m);
    return ok;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void run_all(const char *spec_text) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_text, &spec));
    n_pass = n_exc = n_fail = 0;
    DIR *d = opendir(NODE_DIR);
    if (!d) return;
    char *names[1024];
    uint32_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 1024)
        if (wanted(de->d_name)) names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    bool verbose = getenv("CTOSA_TEST_VERBOSE") != NULL;
    for (uint32_t i = 0; i < n; i++) {
        char why[1024] = "";
        const char *code = NULL;
        bool ok = run_test(names[i], &spec, why, sizeof why, &code);
        const char *exc = exception_code(names[i]);
        if (ok) {
            n_pass++;
            CHECK_MSG(!exc, "%s passes but is listed as an exception", names[i]);
        } else if (exc && (!strcmp(exc, "*") || (code && !strcmp(code, exc)))) {
            n_exc++;
        } else {
            n_fail++;
            CHECK_MSG(false, "%s under %s: %s", names[i], spec_text, why);
        }
        if (verbose)
            fprintf(stderr, "%s %-60s %s %s\n", spec_text, names[i],
                    ok    ? "pass"
                    : exc ? "exception"
                          : "FAIL",
                    ok ? "" : why);
        free(names[i]);
    }
    fprintf(stderr, "node tests under %s: %u pass, %u documented exceptions, %u fail\n", spec_text, n_pass,
            n_exc, n_fail);
    CHECK(n_pass >= 100);
}

/* PRO-FP alone, and with PRO-INT as the CI runs integer-typed tests. */
static void test_nodes_fp(void) { run_all("TOSA-1.0+FP"); }
static void test_nodes_int_fp(void) { run_all("TOSA-1.0+INT+FP"); }

int main(void) {
    if (access(NODE_DIR, R_OK) != 0) th_skip("%s not installed", NODE_DIR);
    RUN(test_nodes_fp);
    RUN(test_nodes_int_fp);
    return th_finish();
}
