/* test_mlir_networks.c - every network the suite lowers, emitted as MLIR
 * and checked with LLVM 22's tools: each partition parses and validates
 * under the spec it was lowered for (mlir-opt --tosa-validate
 * =strict-op-spec-alignment), is rejected under a wrong profile, and run
 * through the upstream pipeline by mlir-runner gives the interpreter's
 * integer outputs exactly and its float outputs within 1e-4 of the
 * output's magnitude. Inputs are deterministic random values (partitions
 * after the first take intermediate tensors). Skips (77) without
 * mlir-22-tools.
 *
 * The networks are enumerated, not listed: the README's example
 * (examples/models/small_cnn.onnx), every tests/models/<name>/model.onnx
 * and tests/models/quantize/<name>/float.onnx, and every <name>/model.onnx
 * of the folders CI generates (CTOSA_MODELS_DIR: torchvision float
 * networks; CTOSA_QMODELS_DIR: quantized ones). The spec follows the
 * network's kind: QuantizeLinear / DequantizeLinear -> TOSA-1.0+INT, int64
 * graph inputs (token ids) -> TOSA-1.1+FP+INT+int64, else TOSA-1.0+FP.
 *
 * Every network is validated, checked for wrong-profile rejection and run
 * through mlir-runner (JIT compile and run of each partition: 1 to 16 s
 * for the committed networks; for the full-size generated ones up to about
 * 80 s of CPU for the 6900-operator quantized regnet, whose naive
 * JIT-compiled loops are the costly part). CTOSA_LONG_TESTS=1 also lowers
 * the quantized networks under TOSA-1.0+FP+INT and the int64 ones under
 * TOSA-1.0+FP (where the token-id part falls back). */
#include "harness.h"
#include "mlir_testutil.h"

#include <dirent.h>
#include <sys/time.h>

static bool g_long;

static double now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static uint32_t g_parts, g_valid, g_run, g_ok, g_int_outputs, g_float_outputs;
static double g_worst_rel;

static void check_partition(const ctosa_lower_partition *p, const ctosa_spec *spec, const char *spec_str,
                            int64_t int_range) {
    char path[512], why[1024];
    snprintf(path, sizeof path, "%s/mlir_net_%s.mlir", th_tmpdir(), p->file);
    uint32_t n_ops = 0;
    for (uint32_t i = 0; i < p->n_op_counts; i++) n_ops += p->op_counts[i];
    double t0 = now();
    mt_case c;
    mt_case_init(&c, p->graph, p->file);
    CHECK_OK(mt_random_inputs(&c, p->id + 1, int_range));
    CHECK_OK(mt_write(&c, path, false));
    int rc = mt_validate(path, spec, why, sizeof why);
    CHECK_MSG(rc == 0, "%s %s: mlir-opt rejects it under its spec: %s", spec_str, p->file, why);
    /* Wrong profile: the one(s) the spec does not have; with both, each
     * alone must reject unless the partition needs only one of them. */
    ctosa_spec wrong = *spec;
    bool rejected = false;
    for (uint32_t pro = CTOSA_PRO_INT; pro <= CTOSA_PRO_FP && !rejected; pro <<= 1) {
        if (spec->profiles == pro) continue;
        wrong.profiles = (spec->profiles & pro) ? (spec->profiles & ~pro) : pro;
        if (!wrong.profiles) continue;
        rejected = mt_validate(path, &wrong, NULL, 0) != 0;
    }
    CHECK_MSG(rejected, "%s %s: mlir-opt accepts it under a wrong profile", spec_str, p->file);
    double t1 = now();
    bool ok = false;
    double rel = 0;
    {
        CHECK_OK(mt_write(&c, path, true));
        mt_printed pr = {0};
        rc = mt_execute(path, &pr, why, sizeof why);
        CHECK_MSG(rc == 0, "%s %s: the upstream pipeline fails: %s", spec_str, p->file, why);
        if (rc == 0) {
            ok = mt_compare(&c, &pr, &rel, why, sizeof why);
            CHECK_MSG(ok, "%s %s: %s", spec_str, p->file, why);
        }
        mt_printed_free(&pr);
        for (uint32_t i = 0; i < p->n_outputs; i++) {
            bool fl = !strcmp(p->outputs[i].dtype, "float32") || !strcmp(p->outputs[i].dtype, "float16");
            if (fl) g_float_outputs++;
            else g_int_outputs++;
        }
        if (rel > g_worst_rel) g_worst_rel = rel;
        g_run++;
        g_ok += ok;
    }
    double t2 = now();
    char res[96];
    snprintf(res, sizeof res, "%s (max rel. diff %.2g)", ok ? "outputs match" : "MISMATCH", rel);
    printf("    %-30s %5u ops  %s, %s, %s  [%.1f s + %.1f s]\n", p->file, n_ops,
           rc == 0 ? "valid" : "INVALID", rejected ? "wrong profile rejected" : "WRONG PROFILE ACCEPTED", res,
           t1 - t0, t2 - t1);
    g_parts++;
    g_valid += rejected;
    mt_case_free(&c);
    unlink(path);
}

/* The network's kind, from its main graph: quantized (QDQ nodes) and/or
 * int64 graph inputs. */
static bool classify(const char *model, bool *qdq, bool *i64) {
    ctosa_onnx_model *m = NULL;
    *qdq = *i64 = false;
    ctosa_error *e = ctosa_onnx_load(model, NULL, &m);
    if (e) {
        CHECK_MSG(false, "%s: %s", model, ctosa_error_message(e));
        ctosa_error_free(e);
        return false;
    }
    const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        *qdq |= !strcmp(g->nodes[i].op_type, "QuantizeLinear") ||
                !strcmp(g->nodes[i].op_type, "DequantizeLinear");
    for (uint32_t i = 0; i < g->n_inputs; i++)
        *i64 |= g->inputs[i].type && g->inputs[i].type->elem_type == 7; /* ONNX INT64 */
    ctosa_onnx_free(m);
    return true;
}

static void check_network(const char *model, const char *label, const char *spec_str, int64_t int_range) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_str, &spec));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.no_report = true;
    opt.no_partitioned_onnx = true;
    ctosa_lower_result *res = NULL;
    /* (lowered graphs not run: here they are - check_partition validates
     * each partition and compares ctosa's run with mlir-runner's.) */
    ctosa_error *e = ctosa_lower_file(model, &spec, &opt, &res);
    if (e) {
        CHECK_MSG(false, "%s: %s", model, ctosa_error_message(e));
        ctosa_error_free(e);
        ctosa_lower_result_free(res);
        return;
    }
    const ctosa_lower_summary *s = ctosa_lower_result_summary(res);
    double t0 = now();
    printf("  %s under %s: %u partition(s), %u fallback node(s)\n", label, spec_str, s->n_partitions,
           s->n_fallback);
    for (uint32_t k = 0; k < s->n_partitions; k++)
        check_partition(&s->partitions[k], &spec, spec_str, int_range);
    printf("    (%.1f s)\n", now() - t0);
    ctosa_lower_result_free(res);
}

static uint32_t g_networks;

static void check_model(const char *model, const char *label) {
    bool qdq, i64;
    if (access(model, R_OK) != 0 || !classify(model, &qdq, &i64)) return;
    g_networks++;
    /* int64 inputs are token ids here: drawn from [0, 15] */
    if (i64) {
        check_network(model, label, "TOSA-1.1+FP+INT+int64", 15);
        if (g_long) check_network(model, label, qdq ? "TOSA-1.0+FP+INT" : "TOSA-1.0+FP", 15);
    } else if (qdq) {
        check_network(model, label, "TOSA-1.0+INT", 0);
        if (g_long) check_network(model, label, "TOSA-1.0+FP+INT", 0);
    } else {
        check_network(model, label, "TOSA-1.0+FP", 0);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every DIR/<name>/model.onnx (or float.onnx), in name order. */
static void check_folder(const char *dir, const char *label_prefix) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "%s cannot be opened", dir);
    if (!d) return;
    char *names[512];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 512)
        if (de->d_name[0] != '.') names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char model[4200], label[1200];
        snprintf(model, sizeof model, "%s/%s/model.onnx", dir, names[i]);
        if (access(model, R_OK) != 0) /* tests/models/quantize: the float input of ctosa quantize */
            snprintf(model, sizeof model, "%s/%s/float.onnx", dir, names[i]);
        snprintf(label, sizeof label, "%s%s", label_prefix, names[i]);
        check_model(model, label);
        free(names[i]);
    }
}

static void test_networks(void) {
    const char *lt = getenv("CTOSA_LONG_TESTS");
    g_long = lt && lt[0] == '1';
    double t0 = now();
    char path[4200];
    snprintf(path, sizeof path, "%s/examples/models/small_cnn.onnx", CTOSA_SOURCE_DIR);
    check_model(path, "examples/models/small_cnn.onnx");
    snprintf(path, sizeof path, "%s/tests/models", CTOSA_SOURCE_DIR);
    check_folder(path, "tests/models/");
    snprintf(path, sizeof path, "%s/tests/models/quantize", CTOSA_SOURCE_DIR);
    check_folder(path, "tests/models/quantize/");
    const char *envs[2] = {"CTOSA_MODELS_DIR", "CTOSA_QMODELS_DIR"};
    for (int i = 0; i < 2; i++) {
        const char *dir = getenv(envs[i]);
        if (!dir || !dir[0]) {
            printf("  %s not set: the networks CI generates are not checked here\n", envs[i]);
            continue;
        }
        char pre[300];
        snprintf(pre, sizeof pre, "%s/", envs[i]);
        check_folder(dir, pre);
    }
    printf("  %u networks, %u partitions: %u/%u parse, validate and are rejected under a wrong profile; "
           "%u/%u run by mlir-runner match ctosa run (%u integer, %u float outputs; worst float diff %.2g "
           "of the magnitude) in %.0f s\n",
           g_networks, g_parts, g_valid, g_parts, g_ok, g_run, g_int_outputs, g_float_outputs, g_worst_rel,
           now() - t0);
    CHECK_MSG(g_networks >= 10, "only %u networks found", g_networks);
}
int main(void) {
    if (!mt_tools_found()) th_skip("mlir-opt / mlir-runner of LLVM 22 (mlir-22-tools) not found");
    RUN(test_networks);
    return th_finish();
}
