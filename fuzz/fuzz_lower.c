/* fuzz_lower.c - the whole lowering pipeline (ctosa_lower_file: ONNX load,
 * partitioning, lowering, constant folding, validation) on the fuzz bytes
 * written as a model file into a scratch folder (with the fixed external
 * data file ext.bin next to it). The first byte picks the spec (bits 0-1)
 * and whether the outputs are written (bit 2): without it, in memory only
 * (output_dir NULL); with it, the .tosa files, report and partitioned ONNX
 * (with its folded constants) go into the scratch folder under the stem
 * "m", and the partitioned ONNX must load back with the ONNX reader. */
#include <unistd.h>

#include "ctosa/lower.h"
#include "ctosa/onnx.h"
#include "fuzz_common.h"

/* The partitioned ONNX ctosa wrote must be a model ctosa can read. */
static void check_partitioned(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/m.partitioned.onnx", dir);
    if (access(path, F_OK) != 0) return;
    ctosa_onnx_options o = {0};
    o.external_data_dir = dir;
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load(path, &o, &m);
    if (e) fuzz_fail("the partitioned ONNX does not load back", e);
    ctosa_onnx_free(m);
    unlink(path);
}

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
    bool write = data[0] & 4;
    opt.output_dir = write ? fuzz_scratch_dir() : NULL;
    opt.stem = "m";
    opt.max_problems = 16;
    /* within libFuzzer's 2 GiB: a model asking more must fail the budget */
    opt.max_memory = (uint64_t)512 << 20;
    /* The harness (not the library) reads the streaming threshold from the
     * environment, as the CLI does: =1 streams every weight transform. */
    const char *min = getenv("CTOSA_STREAM_TRANSFORM_MIN");
    if (min && *min) opt.stream_transform_min = strtoull(min, NULL, 10);
    ctosa_lower_result *r = NULL;
    e = ctosa_lower_file(path, &spec, &opt, &r);
    if (!e) {
        const ctosa_lower_summary *sm = ctosa_lower_result_summary(r);
        if (sm->nodes_delegated > sm->nodes_total) fuzz_fail("more nodes delegated than exist", NULL);
        if (write) check_partitioned(opt.output_dir);
    }
    fuzz_drop(e);
    ctosa_lower_result_free(r);
    return 0;
}
