/* qz_internal.h - shared state of the post-training quantizer (src/quantize).
 *
 * The quantizer sits above the lowering and the runtime: it reads the float
 * model with the ONNX reader, keeps an editable copy of its main graph
 * (qz_graph: node list, initializers, graph outputs), writes variants of it
 * as ONNX files (probes for calibration, the QDQ model) and lowers / runs
 * them through the public API only (ctosa/lower.h, ctosa/runtime.h). */
#ifndef CTOSA_QZ_INTERNAL_H
#define CTOSA_QZ_INTERNAL_H

#include "ctosa/onnx.h"
#include "ctosa/quantize.h"
#include "onnx/onnx_tensor.h"
#include "util/util.h"

/* ------------------------------------------------------------ the graph */

/* One node of the editable graph: an original node (attributes copied from
 * the model file when written) or a new QuantizeLinear / DequantizeLinear. */
typedef struct qz_node {
    const char *name, *op_type, *domain;
    uint32_t n_in, n_out;
    const char **in, **out;
    const ctosa_onnx_node *orig; /* NULL for new nodes */
    bool has_axis;               /* new Q/DQ: write attribute axis */
    int64_t axis;
    /* ReduceX at opset >= 18: the axes attribute becomes this int64 input
     * (set by the writer's opset bump). */
    bool drop_axes_attr;
} qz_node;

/* An initializer: an original one (written from the model's data) or a new
 * one whose bytes live in the graph's arena. */
typedef struct qz_init {
    const char *name;
    int32_t dtype;
    uint32_t rank;
    int64_t dims[ONNX_MAX_RANK];
    const void *data;
    uint64_t nbytes;
} qz_init;

typedef struct qz_graph {
    arena a;
    ctosa_onnx_model *m;       /* the float model (borrowed) */
    const char *path;          /* its file */
    file_map file;             /* its bytes, for attributes and value infos */
    const ctosa_onnx_graph *g; /* its main graph */
    qz_node *nodes;
    uint32_t n_nodes, cap_nodes;
    qz_init *inits;
    uint32_t n_inits, cap_inits;
    /* Graph outputs: the model's own, then extra float outputs (probes). */
    uint32_t n_extra;
    const char **extra;
    bool only_extra; /* the model's own outputs are left out (qz_graph_prune_to_extra) */
    /* Output names that are renamed (a quantized graph output t is made by
     * DequantizeLinear; its producer then writes out_rename[i]). */
    int64_t opset; /* default-domain opset to write */
    strmap names;  /* every tensor name in use -> (void*)1 */
} qz_graph;

/* Loads the editable copy of m's main graph (original nodes and
 * initializers; no extra outputs). */
ctosa_error *qz_graph_init(qz_graph *q, ctosa_onnx_model *m, const char *path);
void qz_graph_free(qz_graph *q);
qz_node *qz_graph_add_node(qz_graph *q, const char *op_type, const char *name, uint32_t n_in,
                           const char *const *in, uint32_t n_out, const char *const *out);
qz_init *qz_graph_add_init(qz_graph *q, const char *name, int32_t dtype, uint32_t rank, const int64_t *dims,
                           const void *data, uint64_t nbytes);
/* A tensor name not yet used, built from base and suffix (registered). */
const char *qz_fresh_name(qz_graph *q, const char *base, const char *suffix);
/* The initializer called name, or NULL. */
const qz_init *qz_graph_find_init(const qz_graph *q, const char *name);
/* Keeps only the nodes the extra outputs need, and makes those the only
 * graph outputs (a probe of part of the model; graphs with subgraphs are
 * kept whole). */
ctosa_error *qz_graph_prune_to_extra(qz_graph *q);
/* Writes the graph as an ONNX model to path, atomically. Initializers no
 * node reads (and that are not graph outputs) are left out. */
ctosa_error *qz_graph_write(qz_graph *q, const char *path);

/* ------------------------------------------------------------ equalization */

typedef struct qz_equalize_stats {
    uint32_t pairs;         /* convolution pairs equalized */
    uint32_t channels;      /* channels between them */
    uint32_t sweeps;        /* passes over the pairs until no scale moved */
    uint32_t skipped_clamp; /* Conv -> Clip with an upper bound (Relu6) -> Conv */
    uint32_t skipped_other; /* Conv -> another operator (HardSwish, a residual Add) -> Conv */
    double first_max_scale; /* the largest scale (or 1 / scale) of the first sweep */
    bool subgraphs;         /* the model has subgraphs: left as it is */
} qz_equalize_stats;

/* Cross-layer equalization of q's float weights in place (q fresh from
 * qz_graph_init; its changed initializers then live in q's arena): the
 * function of the model is unchanged up to float rounding. */
ctosa_error *qz_equalize(qz_graph *q, qz_equalize_stats *st);

/* ------------------------------------------------------------ statistics */

#define QZ_HIST_BINS 4096

/* What calibration saw of one float tensor. The histogram covers
 * [-range, range] and is re-binned (range doubled, bin pairs merged) when
 * a value falls outside, so one pass over the samples is enough. */
typedef struct qz_stats {
    const char *name;
    double min, max;
    double range; /* histogram half width (0 until a nonzero value) */
    uint64_t count;
    uint64_t zeros; /* values counted before the histogram had a range */
    uint64_t *hist; /* QZ_HIST_BINS counters */
} qz_stats;

void qz_stats_add(qz_stats *s, const float *v, uint64_t n);
/* The range [lo, hi] to quantize with under `method` (lo <= 0 <= hi). */
void qz_stats_range(const qz_stats *s, ctosa_quantize_method method, double percentile, int bits,
                    bool symmetric, double *lo, double *hi);

/* Scale and zero point for [lo, hi] in `bits`-bit signed integers
 * (symmetric: zero point 0, range max(|lo|, |hi|)). */
void qz_params(double lo, double hi, int bits, bool symmetric, float *scale, int32_t *zp);

/* One calibration sample set: per graph input, an array of n_samples
 * samples (each the input's shape, float32). */
typedef struct qz_samples {
    uint32_t n_inputs, n_samples;
    const char **names; /* graph input names */
    uint32_t *rank;
    int64_t (*shape)[ONNX_MAX_RANK];
    uint64_t *count; /* elements per sample */
    float **data;    /* [n_inputs] -> n_samples * count floats */
} qz_samples;

/* Reads --calibration NAME=FILE entries against the model's graph inputs. */
ctosa_error *qz_samples_load(const ctosa_onnx_model *m, const ctosa_quantize_calibration *cal, uint32_t n_cal,
                             uint32_t max_samples, qz_samples *out);
void qz_samples_free(qz_samples *s);

/* Runs `model_path` (written by qz_graph_write) lowered under spec on
 * every sample through the runtime (files in work_dir); calls fn for
 * every float32 output of every sample. */
typedef void (*qz_output_fn)(void *user, uint32_t sample, const char *name, const float *data, uint64_t n,
                             uint32_t rank, const int64_t *shape);
/* Outputs of other dtypes (onnx_dtype, size bytes), for constants. */
typedef void (*qz_other_fn)(void *user, uint32_t sample, const char *name, int32_t onnx_dtype,
                            const void *data, uint64_t size, uint32_t rank, const int64_t *shape);
ctosa_error *qz_run_samples(const char *model_path, const ctosa_spec *spec, const char *work_dir,
                            const qz_samples *smp, qz_output_fn fn, qz_other_fn other, void *user);

/* ------------------------------------------------------------ the plan */

/* What the quantizer knows about one tensor of the float model. */
typedef struct qz_tensor {
    const char *name;
    int32_t producer; /* node index; -1: graph input or initializer */
    bool is_float;    /* a float32 value seen in calibration */
    bool is_output;   /* a graph output */
    uint32_t n_cons;
    uint32_t *cons; /* consumer node indices */
    qz_stats st;
    double lo, hi; /* range chosen from st */
    float scale;   /* decided parameters (of the tensor's group) */
    int32_t zp;
    uint32_t group; /* parameter-sharing group: index of its representative */
    bool quant;     /* gets QuantizeLinear / DequantizeLinear */
    bool internal;  /* inside a fused activation or an island: no Q/DQ */
    bool is_const;  /* computed from initializers and shapes only (Identity of a
                                    * weight, Shape -> Gather -> Slice arguments) */
    void *cval;     /* its value, seen in calibration */
    int32_t cdtype; /* its ONNX dtype */
    uint64_t csize; /* bytes */
    uint32_t crank;
    int64_t cdims[ONNX_MAX_RANK];
    float *mean;  /* per-channel means (axis 1) in the float run, inputs of weighted layers */
    float *qmean; /* the same of its quantized values (NULL: not measured) */
    uint32_t n_mean;
    bool wide;           /* int16 in an int8 model (its group: mixed precision) */
    const char *dq_name; /* set while emitting */
    const char *q_name;  /* its QuantizeLinear output (set while emitting) */
} qz_tensor;

typedef struct qz_ctx {
    ctosa_onnx_model *m;
    const char *path; /* the file m was read from (the equalized model in the work folder, with --equalize) */
    const char *model; /* the model as the user named it (messages) */
    const ctosa_onnx_graph *g;
    int bits;       /* activation bits: 8 or 16 */
    bool symmetric; /* int16: zero point 0 */
    ctosa_quantize_method method;
    double percentile;
    qz_tensor *t;
    uint32_t n_t;
    strmap by_name;           /* name -> qz_tensor* */
    bool *node_float;         /* [n_nodes] kept float: the target cannot run it quantized */
    const char **node_reason; /* why (the lowering's reason) */
    bool *node_quant;         /* [n_nodes] decided: quantized */
    bool bias_correction;     /* fold each layer's mean output shift into its bias */
    uint32_t n_wide;          /* tensors made int16 in an int8 model (mixed precision) */
    const char **label;       /* [n_nodes] node names in the QDQ model */
    arena a;
} qz_ctx;

qz_tensor *qz_tensor_of(const qz_ctx *c, const char *name);
/* Activation bits of tensor t: 16 when its group was made int16 in an int8
 * model, else the model's. */
int qz_bits_of(const qz_ctx *c, const qz_tensor *t);
/* Operator facts for mixed precision: whether node i can produce / read an
 * int16 activation in an int8 model (qz_plan.c's operator table). */
bool qz_node_int16_ok(const qz_ctx *c, uint32_t node, bool as_producer);
/* Decides which tensors get Q/DQ and their parameters (from node_float and
 * the statistics). */
void qz_plan_decide(qz_ctx *c);
/* Scale and zero point of every quantized tensor from the ranges (lo, hi)
 * of its group, with the groups qz_plan_decide made. */
void qz_plan_params(qz_ctx *c);
/* The representative of tensor i's parameter-sharing group. */
uint32_t qz_group_of(qz_ctx *c, uint32_t i);
/* Rewrites q (fresh from qz_graph_init) into the QDQ model. */
ctosa_error *qz_plan_emit(qz_ctx *c, qz_graph *q);
/* Channel count of the bias a quantized node would get (0: none). */
uint32_t qz_node_bias_channels(const qz_ctx *c, const qz_graph *q, uint32_t node);

#endif
