/*
 * ctosa/lower.h - partition an ONNX model against a TOSA spec and lower the
 * delegated partitions to TOSA.
 *
 *     ctosa_spec spec;  ctosa_spec_parse("TOSA-1.0+FP", &spec);
 *     ctosa_lower_options opt;  ctosa_lower_options_init(&opt);
 *     opt.output_dir = "out";            // NULL: keep results in memory only
 *     ctosa_lower_result *r;
 *     ctosa_error *e = ctosa_lower_file("model.onnx", &spec, &opt, &r);
 *     const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
 *     // s->partitions[i].graph is the TOSA graph of partition i,
 *     // s->fallback[j] says why a node stays on the CPU.
 *     ctosa_lower_result_free(r);
 *
 * A node is delegated only when its lowering succeeds and every TOSA
 * operator it emits passes ctosa_validate() under the spec. Partitions are
 * maximal connected groups of delegated nodes that can be merged without
 * creating a cycle; every node ends in exactly one partition or in the
 * fallback list with a stable reason code (see docs/errors.md).
 *
 * Files written into output_dir (when set): <stem>.part<N>.tosa per
 * partition, <stem>.partitioned.onnx (each partition replaced by one
 * com.microsoft EPContext node naming its .tosa), <stem>.report.json.
 */
#ifndef CTOSA_LOWER_API_H
#define CTOSA_LOWER_API_H

#include <stdio.h>

#include "ctosa/graph.h"
#include "ctosa/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_lower_bind {
    const char *name; /* graph input to freeze */
    const char *file; /* .npy or TensorProto .pb */
} ctosa_lower_bind;

typedef struct ctosa_lower_shape {
    const char *name; /* graph input with symbolic dims */
    uint32_t rank;
    const int64_t *dims; /* static dims to use */
} ctosa_lower_shape;

typedef struct ctosa_lower_options {
    const char *output_dir; /* NULL: nothing is written */
    const char *stem;       /* file name stem; NULL: the model's file name without .onnx */
    uint32_t n_binds;
    const ctosa_lower_bind *binds;
    uint32_t n_shapes;
    const ctosa_lower_shape *shapes;
    bool no_partitioned_onnx; /* skip <stem>.partitioned.onnx */
    bool no_report;           /* skip <stem>.report.json */
    uint32_t max_problems;    /* cap on reasons kept per run; 0 = unlimited */
    /* Custom operators (ctosa/custom.h), consulted before the built-in
     * lowerings; NULL = none. Borrowed: must outlive the result. */
    const struct ctosa_custom_registry *custom_ops;
    /* Cap on the bytes lowering allocates (decoded constants, folded
     * values, scratch and partition graphs); 0 = CTOSA_LOWER_DEFAULT_MAX_MEMORY.
     * Weights left in the mapped model file do not count. Over the cap,
     * ctosa_lower_file fails with CTOSA_ERR_LIMIT and writes nothing. */
    uint64_t max_memory;
    /* How quantized int8 Conv/Add outputs are requantized (outside the
     * Ethos-U55 subset). CTOSA_REQUANT_RESCALE (default): one RESCALE per
     * output, what an NPU runs. CTOSA_REQUANT_MATCH_ORT: a verification
     * aid that reproduces ONNX Runtime's float32 rounding (ties snapped by
     * float32 go to even) with ~35 extra int32 operators per output, so
     * the interpreter agrees with ORT step for step; not for deployment
     * (docs/quantization.md, "Where ctosa sits"). */
    int requant;
    /* Delegate partitions that only move data (Reshape, Transpose...);
     * by default they stay on the CPU (no_compute). The runtime's host
     * executor sets it to run such a node alone. */
    bool keep_data_movement;
    /* Aids for debugging and comparing the lowering; leave them zero in
     * normal use. `ctosa lower` sets them from environment variables
     * (docs/cli.md); the library itself reads no environment.
     *
     * stream_transform_min: constants of at least this many bytes whose
     * layout the lowering permutes (OIHW -> OHWI weights, Gemm transB) are
     * written as streamed transposes instead of being copied; 0 = 64 KiB;
     * UINT64_MAX = never stream. Output files are byte-identical either
     * way. */
    uint64_t stream_transform_min;
    /* Skip the transpose pass's layout propagation and constant folds:
     * only adjacent TRANSPOSE pairs cancel (to measure what they remove). */
    bool no_layout;
    /* Where the lowering explains why it did not fold a node and what the
     * transpose pass did per partition; NULL = nowhere. */
    FILE *debug_log;
} ctosa_lower_options;

#define CTOSA_REQUANT_RESCALE 0
#define CTOSA_REQUANT_MATCH_ORT 1

#define CTOSA_LOWER_DEFAULT_MAX_MEMORY ((uint64_t)8 << 30) /* 8 GiB */

void ctosa_lower_options_init(ctosa_lower_options *opt);

/* One boundary tensor of a partition. */
typedef struct ctosa_lower_io {
    const char *name;  /* ONNX tensor name (also the TOSA tensor name) */
    const char *dtype; /* numpy name: "float32", "int8", "int64", "bool"... */
    uint32_t rank;
    const int64_t *shape;
    bool quantized; /* scale / zero_point meaningful */
    double scale;
    int64_t zero_point;
} ctosa_lower_io;

typedef struct ctosa_lower_partition {
    uint32_t id;
    const char *file;         /* file name (in output_dir), e.g. "model.part0.tosa" */
    const ctosa_graph *graph; /* the lowered TOSA graph */
    uint32_t n_nodes;
    const char *const *nodes; /* ONNX node names (or "<op_type>#<index>" when unnamed) */
    uint32_t n_inputs, n_outputs;
    const ctosa_lower_io *inputs, *outputs;
    uint32_t n_op_counts;
    const char *const *op_names; /* TOSA operator counts, sorted by name */
    const uint32_t *op_counts;
} ctosa_lower_partition;

typedef struct ctosa_lower_fallback {
    const char *node, *op_type, *domain;
    const char *code;   /* stable reason code, e.g. "unsupported_op" */
    const char *reason; /* human reason */
    const char *input;  /* for needs_constant: the input to bind; else NULL */
    /* Known input values could remove the reason (needs_constant,
     * dynamic_shape, level_limit, input_not_available): lowered again with
     * every input a constant, the node may be computed. */
    bool needs_values;
} ctosa_lower_fallback;

typedef struct ctosa_lower_summary {
    const char *model, *spec; /* model path as given; canonical spec */
    uint32_t nodes_total, nodes_delegated;
    uint32_t n_partitions, n_fallback;
    const ctosa_lower_partition *partitions;
    const ctosa_lower_fallback *fallback;
    const char *report_json; /* the report (contract schema) */
    /* Delegated nodes lowered through a custom-operator registration
     * (report key "custom_ops"), in node order. */
    uint32_t n_custom;
    const struct ctosa_lower_custom *custom;
} ctosa_lower_summary;

/* A node that became a TOSA CUSTOM operator. */
typedef struct ctosa_lower_custom {
    const char *node, *op_type, *domain;     /* the ONNX node */
    const char *domain_name, *operator_name; /* the CUSTOM operator emitted */
    uint32_t partition;
    bool overrides_builtin; /* a standard ONNX operator ctosa would lower itself */
} ctosa_lower_custom;

typedef struct ctosa_lower_result ctosa_lower_result;

/* Loads, partitions and lowers model_path under spec. Bad input (malformed
 * model, bad bind file, unsafe external data) is an error (exit-2 class);
 * fallbacks are not errors. opt may be NULL. */
ctosa_error *ctosa_lower_file(const char *model_path, const ctosa_spec *spec, const ctosa_lower_options *opt,
                              ctosa_lower_result **out);
/* The same for a model held in memory (size bytes of ONNX protobuf). The
 * bytes are copied, so data may be freed once this returns; name (NULL:
 * "<memory>") stands for the file in messages and the report. Results stay
 * in memory: opt->output_dir must be NULL (CTOSA_ERR_USAGE otherwise), and
 * a model with external data is refused (no folder anchors it). For a
 * large model prefer ctosa_lower_file, which maps the file instead. */
ctosa_error *ctosa_lower_memory(const void *data, uint64_t size, const char *name, const ctosa_spec *spec,
                                const ctosa_lower_options *opt, ctosa_lower_result **out);
const ctosa_lower_summary *ctosa_lower_result_summary(const ctosa_lower_result *r);

/* A value the lowering computed at compile time (folded constants, e.g. a
 * Shape of a static tensor), by ONNX tensor name: dense little-endian
 * elements of ONNX dtype onnx_dtype. False when name is not such a value
 * (or is not dense: strings). Pointers stay valid while r lives. */
typedef struct ctosa_lower_constant {
    int32_t onnx_dtype;
    uint32_t rank;
    const int64_t *shape;
    const void *data;
    uint64_t nbytes;
} ctosa_lower_constant;
bool ctosa_lower_result_constant(const ctosa_lower_result *r, const char *name, ctosa_lower_constant *out);
void ctosa_lower_result_free(ctosa_lower_result *r); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_LOWER_API_H */
