/* test_mlir_networks.c - every network the suite lowers (the models of
 * test_lower_models.c: float, quantized, int64), emitted as MLIR and
 * checked with LLVM 22's tools: each partition parses and validates under
 * the spec it was lowered for (mlir-opt --tosa-validate
 * =strict-op-spec-alignment), is rejected under a wrong profile, and run
 * through the upstream pipeline by mlir-runner gives the interpreter's
 * integer outputs exactly and its float outputs within 1e-4 of the
 * output's magnitude. Inputs are deterministic random values (partitions
 * after the first take intermediate tensors). Skips (77) without
 * mlir-22-tools.
 *
 * The default suite checks one network of each kind (float, quantized,
 * int64: `always`); CTOSA_LONG_TESTS=1 checks them all (about 30 s of CPU
 * per network for mlir-opt and the JIT). */
#include "harness.h"
#include "mlir_testutil.h"

typedef struct net {
    const char *model, *spec;
    int64_t int_range; /* integer inputs drawn from [0, r] (token ids): 0 = full range */
    bool always;       /* also in the default suite */
} net;

static const net NETS[] = {
    {"examples/models/small_cnn.onnx", "TOSA-1.0+FP", 0, true},
    {"tests/models/mobilenet_v2_x0_25_op13/model.onnx", "TOSA-1.0+FP", 0, false},
    {"tests/models/transformer_encoder_op13/model.onnx", "TOSA-1.0+FP", 0, false},
    {"tests/models/transformer_encoder_op17/model.onnx", "TOSA-1.0+FP", 0, false},
    {"tests/models/mobilenet_v2_x0_25_qnnpack/model.onnx", "TOSA-1.0+INT", 0, true},
    {"tests/models/mobilenet_v2_x0_25_onednn/model.onnx", "TOSA-1.0+INT", 0, false},
    {"tests/models/mobilenet_v2_x0_25_qnnpack/model.onnx", "TOSA-1.0+FP+INT", 0, false},
    {"tests/models/llm_tiny_fp32/model.onnx", "TOSA-1.0+FP", 0, false},
    {"tests/models/llm_tiny_int8/model.onnx", "TOSA-1.0+FP+INT", 0, false},
    {"tests/models/llm_tiny_fp32/model.onnx", "TOSA-1.1+FP+INT+int64", 15, true},
    {"tests/models/llm_tiny_int8/model.onnx", "TOSA-1.1+FP+INT+int64", 15, false},
};

static uint32_t g_parts, g_ok, g_int_outputs, g_float_outputs;
static double g_worst_rel;

static void check_partition(const ctosa_lower_partition *p, const ctosa_spec *spec, const char *label,
                            int64_t int_range) {
    char path[512], why[1024];
    snprintf(path, sizeof path, "mlir_net_%d_%s.mlir", (int)getpid(), p->file);
    mt_case c;
    mt_case_init(&c, p->graph, p->file);
    CHECK_OK(mt_random_inputs(&c, p->id + 1, int_range));
    CHECK_OK(mt_write(&c, path, false));
    int rc = mt_validate(path, spec, why, sizeof why);
    CHECK_MSG(rc == 0, "%s %s: mlir-opt rejects it under its spec: %s", label, p->file, why);
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
    CHECK_MSG(rejected, "%s %s: mlir-opt accepts it under a wrong profile", label, p->file);
    CHECK_OK(mt_write(&c, path, true));
    mt_printed pr = {0};
    bool ok = false;
    double rel = 0;
    rc = mt_execute(path, &pr, why, sizeof why);
    CHECK_MSG(rc == 0, "%s %s: the upstream pipeline fails: %s", label, p->file, why);
    if (rc == 0) {
        ok = mt_compare(&c, &pr, &rel, why, sizeof why);
        CHECK_MSG(ok, "%s %s: %s", label, p->file, why);
    }
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        bool fl = !strcmp(p->outputs[i].dtype, "float32") || !strcmp(p->outputs[i].dtype, "float16");
        if (fl) g_float_outputs++;
        else g_int_outputs++;
    }
    if (rel > g_worst_rel) g_worst_rel = rel;
    printf("    %-34s %-28s valid, wrong profile rejected, %s (max rel. diff %.2g)\n", p->file,
           label, ok ? "outputs match" : "MISMATCH", rel);
    g_parts++;
    g_ok += ok && rejected;
    mt_printed_free(&pr);
    mt_case_free(&c);
    unlink(path);
}

static void test_networks(void) {
    const char *lt = getenv("CTOSA_LONG_TESTS");
    bool all = lt && lt[0] == '1';
    if (!all) printf("  (one network per kind; CTOSA_LONG_TESTS=1 checks all %zu)\n", sizeof NETS / sizeof NETS[0]);
    for (size_t i = 0; i < sizeof NETS / sizeof NETS[0]; i++) {
        if (!all && !NETS[i].always) continue;
        char model[4096];
        snprintf(model, sizeof model, "%s/%s", CTOSA_SOURCE_DIR, NETS[i].model);
        ctosa_spec spec;
        CHECK_OK(ctosa_spec_parse(NETS[i].spec, &spec));
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
            continue;
        }
        const ctosa_lower_summary *s = ctosa_lower_result_summary(res);
        printf("  %s under %s: %u partition(s)\n", NETS[i].model, NETS[i].spec, s->n_partitions);
        for (uint32_t k = 0; k < s->n_partitions; k++) check_partition(&s->partitions[k], &spec, NETS[i].spec, NETS[i].int_range);
        ctosa_lower_result_free(res);
    }
    printf("  %u/%u partitions parse, validate, are rejected under a wrong profile and match "
           "(%u integer, %u float outputs; worst float diff %.2g of the magnitude)\n",
           g_ok, g_parts, g_int_outputs, g_float_outputs, g_worst_rel);
}

int main(void) {
    if (!mt_tools_found()) th_skip("mlir-opt / mlir-runner of LLVM 22 (mlir-22-tools) not found");
    RUN(test_networks);
    return th_finish();
}
