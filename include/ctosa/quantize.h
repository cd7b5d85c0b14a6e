/*
 * ctosa/quantize.h - post-training quantization of a float ONNX model for a
 * TOSA integer target.
 *
 *     ctosa_quantize_calibration cal[] = {{"input", "calib.npy"}};
 *     ctosa_quantize_options opt;
 *     ctosa_quantize_options_init(&opt);
 *     opt.output_dir = "out";
 *     opt.spec = "TOSA-1.0+INT";            // or opt.target = "ethos-u55-128"
 *     opt.n_calibration = 1; opt.calibration = cal;
 *     ctosa_quantize_result *r;
 *     ctosa_error *e = ctosa_quantize("model.onnx", &opt, &r);
 *     // writes out/model.qdq.onnx and out/model.quant.json
 *     const ctosa_quantize_summary *s = ctosa_quantize_result_summary(r);
 *     ctosa_quantize_result_free(r);
 *
 * Calibration: each file holds the samples of one graph input stacked on a
 * new first axis ([N, *input shape]; for an input whose first dimension is
 * 1, [N, *rest] is accepted too), or is a folder of .npy files, one sample
 * each (read in name order). float32 only. Every input needs the same
 * number of samples.
 *
 * The float model runs on the interpreter (through the partitioned
 * runtime) to collect per-tensor statistics; the QDQ model written is
 * standard ONNX: QuantizeLinear / DequantizeLinear pairs on activations,
 * int8 symmetric per-channel weights behind DequantizeLinear, int32 biases.
 * Every operator the target can run in its integer profile is quantized:
 * the model is lowered under the target and operators that cannot be
 * delegated stay float (docs/quantize.md).
 *
 * Errors: a malformed model or calibration file (CTOSA_ERR_FORMAT / _IO /
 * _USAGE, naming the file and the input), a model ctosa cannot run in
 * float (CTOSA_ERR_UNSUPPORTED, naming the node). Nothing is written then.
 */
#ifndef CTOSA_QUANTIZE_H
#define CTOSA_QUANTIZE_H

#include "ctosa/lower.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_quantize_calibration {
    const char *name; /* graph input */
    const char *path; /* .npy with samples stacked on axis 0, or a folder of .npy */
} ctosa_quantize_calibration;

/* How activation ranges are chosen from the calibration statistics. */
typedef enum ctosa_quantize_method {
    CTOSA_QUANT_DEFAULT = 0, /* mse for int8, minmax for int16 */
    CTOSA_QUANT_MINMAX,      /* smallest and largest value seen */
    CTOSA_QUANT_PERCENTILE,  /* clip the tails at `percentile` */
    CTOSA_QUANT_MSE          /* clip where the quantization error is least */
} ctosa_quantize_method;

/* How biases absorb the shift quantization adds to each output channel's
 * mean (docs/quantize.md, "Bias correction"). */
typedef enum ctosa_quantize_bias {
    CTOSA_QUANT_BIAS_DEFAULT = 0, /* FLOAT */
    CTOSA_QUANT_BIAS_OFF,         /* the float biases as they are */
    CTOSA_QUANT_BIAS_FLOAT,       /* predicted from the float run's input means (one float pass) */
    CTOSA_QUANT_BIAS_SEQUENTIAL   /* measured layer by layer on the quantized model (one run of it
                                   * per level of weighted layers: slower) */
} ctosa_quantize_bias;

/* The MAC budget of --int16 auto, in percent of the model's MACs. */
#define CTOSA_QUANT_INT16_BUDGET 25.0

typedef struct ctosa_quantize_options {
    const char *output_dir; /* required: where <stem>.qdq.onnx and <stem>.quant.json go */
    const char *stem;       /* NULL: the model file name without .onnx */
    const char *spec;       /* target spec string; NULL: target, else TOSA-1.0+INT (+int16) */
    const char *target;     /* a named target (ctosa_spec_from_target) */
    int activation_bits;    /* 8 (default) or 16 (int16 activations, int8 weights: EXT-INT16) */
    ctosa_quantize_method method;
    double percentile; /* PERCENTILE: kept fraction in percent; 0 = 99.99 */
    ctosa_quantize_bias bias_correction;
    bool no_bias_correction; /* same as bias_correction = CTOSA_QUANT_BIAS_OFF */
    uint32_t n_calibration;
    const ctosa_quantize_calibration *calibration;
    uint32_t max_samples; /* use at most this many samples; 0 = all */
    /* After the ranges are chosen, adjust them group by group to lower the
     * error at the model's outputs on the calibration samples (runs the
     * quantized model about 2.5 times per quantized tensor: slower). */
    bool range_search;
    /* Mixed precision in an int8 model: the N tensors whose int16
     * activations lower the output error most, measured on the calibration
     * samples (one run of the quantized model per candidate tensor), get
     * int16 (symmetric, whole range). Under a spec without EXT-INT16 every
     * convolution reading one runs as two int8 convolutions (NPU time: the
     * summary gives the MACs added). 0: no count limit (with a budget) or
     * none. */
    uint32_t int16_tensors;
    /* Mixed precision by budget (--int16 auto, CTOSA_QUANT_INT16_BUDGET):
     * the candidate tensors, each measured alone as above, are made int16
     * by gain, largest first, each when it lowers the output noise by more
     * than 1% and the convolutions reading int16 tensors stay within this
     * percent of the model's MACs (with int16_tensors > 0: at most that
     * many). 0: count mode (int16_tensors) or none. In [0, 100]. */
    double int16_budget;
    /* Cross-layer equalization before calibration: for Conv -> (nothing,
     * Relu, LeakyRelu, PRelu) -> Conv pairs, output channel i of the first
     * and input channel i of the second are scaled by 1/s_i and s_i so that
     * their weight ranges become equal. The function is unchanged; the
     * equalized float model is written as <stem>.equalized.onnx and is the
     * reference of the SQNR. Pairs with a Relu6 (Clip with an upper bound)
     * or HardSwish between them are left alone (docs/quantize.md). */
    bool equalize;
} ctosa_quantize_options;

void ctosa_quantize_options_init(ctosa_quantize_options *opt);

/* One quantized output compared with the float model on the calibration
 * samples. */
typedef struct ctosa_quantize_output {
    const char *name;
    double sqnr_db; /* 10 log10(sum y^2 / sum (y - y_q)^2); inf when equal */
} ctosa_quantize_output;

typedef struct ctosa_quantize_summary {
    const char *model, *spec; /* model path as given; canonical target spec */
    const char *qdq_path;     /* the written QDQ model */
    const char *report_path;  /* the written JSON report */
    const char *method;       /* "minmax", "percentile", "mse" */
    const char *bias;         /* bias correction: "sequential", "float", "off" */
    int activation_bits;
    uint32_t samples;
    uint32_t nodes_total; /* nodes of the float model */
    uint32_t nodes_float; /* of them left in float (the target cannot run them quantized) */
    uint32_t tensors_quantized;
    uint32_t partitions;                       /* TOSA partitions of the QDQ model under the target */
    uint32_t nodes_delegated, nodes_qdq_total; /* of the QDQ model under the target */
    /* range_search: quantized-tensor groups searched, of them changed, runs
     * of the quantized model, and the calibration SQNR (all outputs' noise
     * together) before and after the search, before bias correction */
    uint32_t search_groups, search_changed, search_runs;
    double search_sqnr_before, search_sqnr_after;
    /* int16_tensors: candidates measured, runs, the tensors made int16
     * (names), the MACs per sample of the convolutions reading them (run
     * twice without EXT-INT16) and of the whole model, and the calibration
     * SQNR (all outputs' noise together) before and after */
    uint32_t int16_candidates, int16_runs, n_int16;
    const char *const *int16_names;
    double int16_macs, model_macs;
    double int16_sqnr_before, int16_sqnr_after;
    double int16_budget; /* the MAC budget in percent (budget mode), else 0 */
    /* equalize: whether it was asked for, the convolution pairs equalized,
     * the channels between them, the sweeps until the scales settled, the
     * pairs left alone because of a Relu6 or of another operator between
     * them (HardSwish, a residual Add, ...), the largest scale of the first
     * sweep, and the equalized float model written (NULL when no pair was
     * found) */
    bool equalized;
    uint32_t eq_pairs, eq_channels, eq_sweeps, eq_skipped_clamp, eq_skipped_other;
    double eq_max_scale;
    const char *equalized_path;
    uint32_t n_outputs;
    const ctosa_quantize_output *outputs;
    const char *report_json; /* the report text */
} ctosa_quantize_summary;

typedef struct ctosa_quantize_result ctosa_quantize_result;

ctosa_error *ctosa_quantize(const char *model_path, const ctosa_quantize_options *opt,
                            ctosa_quantize_result **out);
const ctosa_quantize_summary *ctosa_quantize_result_summary(const ctosa_quantize_result *r);
void ctosa_quantize_result_free(ctosa_quantize_result *r); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_QUANTIZE_H */
