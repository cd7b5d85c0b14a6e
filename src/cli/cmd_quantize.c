/* cmd_quantize.c - `ctosa quantize MODEL.onnx --calibration NAME=FILE ...
 * [--spec SPEC | --target NAME] [--activations int8|int16] [--method M]
 * [-o DIR]`: post-training quantization of a float model into a QDQ ONNX
 * model for a TOSA integer target (docs/quantize.md). Exit 0 on success,
 * 2 for bad usage or input (nothing is written then). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctosa/quantize.h"
#include "util/util.h"

static const char *CMD = "quantize";

static void help(void) {
    printf("usage: ctosa quantize MODEL.onnx --calibration NAME=FILE.npy... [options]\n"
           "\n"
           "Post-training quantization for a TOSA integer target. Runs the float model\n"
           "on the calibration samples, and writes into the output directory:\n"
           "  <stem>.qdq.onnx     QDQ ONNX: QuantizeLinear/DequantizeLinear on activations,\n"
           "                      int8 per-channel weights, int32 biases; runs on ONNX\n"
           "                      Runtime and 'ctosa lower' folds it into integer TOSA\n"
           "  <stem>.quant.json   per tensor range, scale and zero point; per output SQNR\n"
           "                      against the float model on the calibration samples\n"
           "\n"
           "  --calibration NAME=PATH    samples for graph input NAME: a .npy with samples\n"
           "                             stacked on a new first axis, or a folder of .npy\n"
           "                             files, one sample each (repeat per input; NAME= may\n"
           "                             be left out when the model has one input)\n"
           "  --spec SPEC                target spec (default TOSA-1.0+INT, with +int16 for\n"
           "                             --activations int16)\n"
           "  --target NAME              a named target instead of --spec\n"
           "  --activations int8|int16   activation type (default int8; int16 = EXT-INT16,\n"
           "                             int8 weights)\n"
           "  --method mse|minmax|percentile\n"
           "                             activation ranges (default mse for int8, minmax for int16)\n"
           "  --percentile P             kept fraction in percent for --method percentile\n"
           "                             (default 99.99)\n"
           "  --bias-correction float|sequential|off\n"
           "                             how biases absorb each layer's mean output shift\n"
           "                             (default float: predicted from the float run;\n"
           "                             sequential: measured layer by layer on the quantized\n"
           "                             model, one run of it per level of layers)\n"
           "  --no-bias-correction       keep the float biases as they are (= off)\n"
           "  --range-search             then adjust each activation range to lower the error at\n"
           "                             the model's outputs (about 2.5 runs of the quantized\n"
           "                             model per quantized tensor: slower)\n"
           "  --int16 N|auto             mixed precision: the N tensors whose int16 lowers the\n"
           "                             error most (one run of the quantized model per\n"
           "                             candidate) get int16 activations; without EXT-INT16\n"
           "                             each convolution reading one runs twice (as two int8\n"
           "                             halves: the summary gives the MACs added); auto: as\n"
           "                             many as fit in a budget of 25%% of the model's MACs\n"
           "                             run twice; 0: none (the default)\n"
           "  --int16-budget P           --int16 auto with P%% of the MACs (with --int16 N: at\n"
           "                             most N tensors)\n"
           "  --equalize                 cross-layer equalization first: Conv -> (Relu) -> Conv\n"
           "                             pairs get equal per-channel weight ranges, the\n"
           "                             function unchanged (written as <stem>.equalized.onnx,\n"
           "                             the SQNR's reference); pairs with a Relu6 or HardSwish\n"
           "                             between them are left alone\n"
           "  --max-samples N            use at most N calibration samples\n"
           "  --stem NAME                output file name stem (default: the model's name)\n"
           "  -o, --output-dir DIR       output directory (default ./output, created if missing)\n"
           "  -q, --quiet                print no summary\n");
}

int cmd_quantize(int argc, char **argv) {
    const char *model = NULL;
    int rc = 2;
    ctosa_quantize_options opt;
    ctosa_quantize_options_init(&opt);
    opt.output_dir = "output";
    bool quiet = false;
    int int16_mode = -1; /* --int16: not given, a count (0), auto (1) */
    double budget = 0;   /* --int16-budget */
    ctosa_quantize_calibration *cal = calloc((size_t)argc + 1, sizeof *cal);
    char **owned = calloc((size_t)argc + 1, sizeof(char *));
    uint32_t n_cal = 0, n_owned = 0;
    ctosa_quantize_result *res = NULL;
    if (!cal || !owned) {
        rc = cli_fail(CMD, ctosa_error_nomem());
        goto out;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            rc = 0;
            goto out;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        if (!strcmp(a, "--range-search")) {
            opt.range_search = true;
            continue;
        }
        if (!strcmp(a, "--equalize")) {
            opt.equalize = true;
            continue;
        }
        if (!strcmp(a, "--no-bias-correction")) {
            opt.no_bias_correction = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--bias-correction", NULL, &missing))) {
            if (!strcmp(v, "sequential")) opt.bias_correction = CTOSA_QUANT_BIAS_SEQUENTIAL;
            else if (!strcmp(v, "float")) opt.bias_correction = CTOSA_QUANT_BIAS_FLOAT;
            else if (!strcmp(v, "off")) opt.bias_correction = CTOSA_QUANT_BIAS_OFF;
            else {
                rc = cli_usage(CMD, "--bias-correction expects sequential, float or off, got '%s'", v);
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--calibration", NULL, &missing))) {
            const char *eq = strchr(v, '=');
            if (eq && eq == v) {
                rc = cli_usage(CMD, "--calibration expects NAME=PATH, got '%s'", v);
                goto out;
            }
            if (eq) {
                char *n = strndup(v, (size_t)(eq - v));
                if (!n) {
                    rc = cli_fail(CMD, ctosa_error_nomem());
                    goto out;
                }
                owned[n_owned++] = n;
                cal[n_cal].name = n;
                cal[n_cal++].path = eq + 1;
            } else {
                cal[n_cal].name = NULL; /* the model's only input */
                cal[n_cal++].path = v;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--spec", NULL, &missing))) {
            opt.spec = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--target", NULL, &missing))) {
            opt.target = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "-o", "--output-dir", &missing))) {
            opt.output_dir = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--stem", NULL, &missing))) {
            opt.stem = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--activations", NULL, &missing))) {
            if (!strcmp(v, "int8")) opt.activation_bits = 8;
            else if (!strcmp(v, "int16")) opt.activation_bits = 16;
            else {
                rc = cli_usage(CMD, "--activations expects int8 or int16, got '%s'", v);
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--method", NULL, &missing))) {
            if (!strcmp(v, "mse")) opt.method = CTOSA_QUANT_MSE;
            else if (!strcmp(v, "minmax")) opt.method = CTOSA_QUANT_MINMAX;
            else if (!strcmp(v, "percentile")) opt.method = CTOSA_QUANT_PERCENTILE;
            else {
                rc = cli_usage(CMD, "--method expects mse, minmax or percentile, got '%s'", v);
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--percentile", NULL, &missing))) {
            char *end;
            double p = strtod(v, &end);
            if (*end || !(p > 0 && p <= 100)) {
                rc = cli_usage(CMD, "--percentile expects a number in (0, 100], got '%s'", v);
                goto out;
            }
            opt.percentile = p;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--int16", NULL, &missing))) {
            if (!strcmp(v, "auto")) {
                opt.int16_tensors = 0;
                int16_mode = 1;
                continue;
            }
            char *end;
            unsigned long n = strtoul(v, &end, 10);
            if (*end || !v[0] || n > 100000 || v[0] == '-') {
                rc = cli_usage(CMD, "--int16 expects auto or a tensor count, got '%s'", v);
                goto out;
            }
            opt.int16_tensors = (uint32_t)n;
            int16_mode = 0;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--int16-budget", NULL, &missing))) {
            char *end;
            double p = strtod(v, &end);
            if (*end || !v[0] || !(p > 0 && p <= 100)) {
                rc = cli_usage(
                    CMD, "--int16-budget expects a percent of the model's MACs in (0, 100], got '%s'", v);
                goto out;
            }
            budget = p;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--max-samples", NULL, &missing))) {
            char *end;
            unsigned long n = strtoul(v, &end, 10);
            if (*end || !n || n > 0xffffffffUL || v[0] == '-') {
                rc = cli_usage(CMD, "--max-samples expects a positive count, got '%s'", v);
                goto out;
            }
            opt.max_samples = (uint32_t)n;
            continue;
        }
        if ((rc = cli_model_arg(CMD, "model", a, missing, &model))) goto out;
        rc = 2;
    }
    if (!model) {
        rc = cli_usage(CMD, "no model given");
        goto out;
    }
    if (!n_cal) {
        rc = cli_usage(CMD, "--calibration NAME=FILE.npy is required");
        goto out;
    }
    if ((rc = cli_spec_arg(CMD, opt.spec, opt.target, false, NULL))) goto out;
    rc = 2;
    /* NAME= left out: the model's only input */
    for (uint32_t k = 0; k < n_cal; k++) {
        if (cal[k].name) continue;
        ctosa_onnx_model *m = NULL;
        ctosa_error *e = ctosa_onnx_load(model, NULL, &m);
        if (e) {
            rc = cli_fail(CMD, e);
            goto out;
        }
        const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
        const char *only = NULL;
        uint32_t n_in = 0;
        for (uint32_t i = 0; i < g->n_inputs; i++) {
            bool init = false;
            for (uint32_t j = 0; j < g->n_initializers && !init; j++)
                init = !strcmp(g->initializers[j].name, g->inputs[i].name);
            if (!init) only = g->inputs[i].name, n_in++;
        }
        if (n_in == 1) owned[n_owned++] = (char *)(cal[k].name = strdup(only));
        ctosa_onnx_free(m);
        if (n_in != 1) {
            rc = cli_usage(CMD, "%s has %u inputs: give --calibration NAME=%s for each", model, n_in,
                           cal[k].path);
            goto out;
        }
        if (!cal[k].name) {
            rc = cli_fail(CMD, ctosa_error_nomem());
            goto out;
        }
    }
    opt.n_calibration = n_cal;
    opt.calibration = cal;
    /* --int16-budget P: budget mode (with --int16 N, at most N tensors);
     * --int16 N alone: count mode (0: pure int8); --int16 auto: budget
     * mode with the default budget */
    if (budget > 0) opt.int16_budget = budget;
    else if (int16_mode == 0) opt.int16_budget = 0;
    else if (int16_mode == 1) opt.int16_budget = CTOSA_QUANT_INT16_BUDGET;
    ctosa_error *e = ctosa_quantize(model, &opt, &res);
    if (e) {
        rc = cli_fail(CMD, e);
        goto out;
    }
    const ctosa_quantize_summary *s = ctosa_quantize_result_summary(res);
    if (!quiet) {
        printf("%s: int%d activations, int8 weights, %s ranges, %u samples, target %s\n", s->model,
               s->activation_bits, s->method, s->samples, s->spec);
        printf("quantized: %u of %u nodes (%u left in float), %u tensors with Q/DQ\n",
               s->nodes_total - s->nodes_float, s->nodes_total, s->nodes_float, s->tensors_quantized);
        printf("lowered under the target: %u partition%s, %u of %u nodes delegated\n", s->partitions,
               s->partitions == 1 ? "" : "s", s->nodes_delegated, s->nodes_qdq_total);
        if (s->equalized)
            printf(
                "equalized: %u convolution pair%s (%u channels, %u sweeps); left alone: %u at a Relu6, %u at "
                "another operator\n",
                s->eq_pairs, s->eq_pairs == 1 ? "" : "s", s->eq_channels, s->eq_sweeps, s->eq_skipped_clamp,
                s->eq_skipped_other);
        if (s->search_runs)
            printf("range search: %u of %u ranges changed in %u runs, calibration SQNR %.2f -> %.2f dB\n",
                   s->search_changed, s->search_groups, s->search_runs, s->search_sqnr_before,
                   s->search_sqnr_after);
        if (s->int16_runs) {
            printf("int16: %u tensor%s of %u candidates (%u runs), calibration SQNR %.2f -> %.2f dB\n",
                   s->n_int16, s->n_int16 == 1 ? "" : "s", s->int16_candidates, s->int16_runs,
                   s->int16_sqnr_before, s->int16_sqnr_after);
            for (uint32_t i = 0; i < s->n_int16; i++) printf("  %s\n", s->int16_names[i]);
            if (s->n_int16 || s->int16_budget > 0) {
                printf("  cost: the convolutions reading them, %.1f M of %.1f M MACs per sample (%.1f%%",
                       s->int16_macs / 1e6, s->model_macs / 1e6,
                       s->model_macs > 0 ? 100 * s->int16_macs / s->model_macs : 0.0);
                if (s->int16_budget > 0) printf(", budget %g%%", s->int16_budget);
                printf("), run twice without EXT-INT16\n");
            }
        }
        for (uint32_t i = 0; i < s->n_outputs; i++) {
            if (isinf(s->outputs[i].sqnr_db)) printf("output '%s': exact (SQNR inf)\n", s->outputs[i].name);
            else
                printf("output '%s': SQNR %.2f dB against float\n", s->outputs[i].name,
                       s->outputs[i].sqnr_db);
        }
        printf("wrote %s\n      %s\n", s->qdq_path, s->report_path);
        if (s->equalized_path) printf("      %s\n", s->equalized_path);
    }
    rc = 0;
out:
    ctosa_quantize_result_free(res);
    for (uint32_t k = 0; owned && k < n_owned; k++) free(owned[k]);
    free(owned);
    free(cal);
    return rc;
}
