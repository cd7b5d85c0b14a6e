/* fuzz_lower.c - the whole lowering pipeline (ctosa_lower_file: ONNX load,
 * partitioning, lowering, constant folding, validation) on the fuzz bytes
 * written as a model file into a scratch folder (with the fixed external
 * data file ext.bin next to it), in memory only (output_dir NULL). The
 * first byte picks the spec. */
#include "ctosa/lower.h"
#include "fuzz_common.h"

FUZZ_ENTRY(lower) {
    if (size < 1 || !fuzz_sandbox_with_ext()) return 0;
    static const char *const specs[] = {"TOSA-1.0+INT+FP", "TOSA-1.0+FP", "TOSA-1.0+INT+int16",
                                        "TOSA-1.1+INT+FP+int64+shape+bf16"};
    ctosa_spec spec;
    ctosa_error *e = ctosa_spec_parse(specs[data[0] % 4], &spec);
    if (e) fuzz_fail("fixed spec string does not parse", e);
    const char *path = fuzz_write_scratch("model.onnx", data + 1, size - 1);
    if (!path) return 0;
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = NULL;
    opt.max_problems = 16;
    ctosa_lower_result *r = NULL;
    e = ctosa_lower_file(path, &spec, &opt, &r);
    if (!e) {
        const ctosa_lower_summary *sm = ctosa_lower_result_summary(r);
        if (sm->nodes_delegated > sm->nodes_total) fuzz_fail("more nodes delegated than exist", NULL);
    }
    fuzz_drop(e);
    ctosa_lower_result_free(r);
    return 0;
}
