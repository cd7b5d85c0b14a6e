/*
 * ctosa/runtime.h - run a partitioned model end to end: the TOSA partitions
 * that `ctosa lower` (ctosa_lower_file) wrote, and the nodes it left on the
 * CPU, on host arrays.
 *
 *     ctosa_runtime_options opt;
 *     ctosa_runtime_options_init(&opt);        // backend NULL = the interpreter
 *     ctosa_runtime *rt;
 *     ctosa_error *e = ctosa_runtime_load("out/model.partitioned.onnx", &opt, &rt);
 *     // every partition is prepared and every CPU node is checked here:
 *     // a node that cannot run is an error now, not halfway through a run
 *     // (except one whose shapes depend on the run's values, below)
 *     e = ctosa_runtime_set_input(rt, "x", "float32", 4, shape, data, bytes);
 *     e = ctosa_runtime_run(rt);
 *     ctosa_runtime_tensor y;
 *     e = ctosa_runtime_get_output(rt, "y", &y);  // y.data valid until the next run
 *     ctosa_runtime_free(rt);
 *
 * What is loaded: MODEL.partitioned.onnx, the `.tosa` file each of its
 * com.microsoft EPContext nodes names (ep_cache_context, beside the model)
 * and <stem>.report.json, which describes every boundary tensor (dtype,
 * shape, scale / zero point). The nodes run in the model's order:
 *
 * - an EPContext node: its TOSA graph runs on the backend (below);
 * - any other node (a CPU fallback): on the host executor. Each such node is
 *   lowered on its own, at load, under the widest specification (TOSA 1.1,
 *   both profiles, every extension, int64 included) and runs on the
 *   reference interpreter. A node that no TOSA graph can express (strings,
 *   operators without a lowering) makes ctosa_runtime_load fail with
 *   CTOSA_ERR_UNSUPPORTED naming the node, its operator and the lowering's
 *   reason.
 * - a node whose lowering lacks only values (an output shape that depends on
 *   the data, as NonZero's, NonMaxSuppression's or a TopK's whose k comes
 *   from a Shape; an input whose shape such a node decides; a graph too
 *   large for a level limit, as a TopK of k above 64) and an If: on
 *   each run, the node is lowered with that run's input values as constants
 *   (an If runs the branch its condition picks, node by node). Its outputs
 *   take their shape in the run; ctosa_runtime_output_info gives the shape
 *   of the last run (rank 0 before the first). If the lowering then fails,
 *   ctosa_runtime_run returns that error, naming the node.
 *
 * Values at the model's interface have the ONNX types the report gives
 * (numpy names: "float32", "uint8", "int64", "bool"...), in the model's own
 * layout (NCHW stays NCHW). Inside, a uint8 value travels as INT8 holding
 * the same bits (TOSA 1.0 has no uint8); it is accepted and returned as
 * uint8. Quantized boundary tensors carry their scale and zero point in
 * ctosa_runtime_tensor (from the report).
 *
 * A runtime is not thread-safe: call it from one thread at a time.
 */
#ifndef CTOSA_RUNTIME_H
#define CTOSA_RUNTIME_H

#include "ctosa/custom.h"
#include "ctosa/interp.h"
#include "ctosa/tensor_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- backends
 *
 * A backend runs the TOSA partitions (the host executor always uses the
 * interpreter). To plug in an NPU driver, implement the three functions:
 * prepare compiles or loads a graph once per partition at model load, run
 * executes it on input buffers, release frees what prepare made.
 * examples/counting_backend.c is a worked example that counts the calls
 * and forwards them to the interpreter backend (docs/runtime.md). */

/* What prepare gets about one partition. */
typedef struct ctosa_backend_partition {
    const char *name;         /* the .tosa file name, e.g. "model.part0.tosa" */
    const ctosa_graph *graph; /* valid until release */
    /* Kernels for the graph's CUSTOM operators (ctosa_custom_registry_attach);
     * NULL when no registry was given. */
    const ctosa_custom_registry *custom_ops;
    /* Interpreter settings (threads, memory and loop limits) of the runtime,
     * for backends that run the interpreter. */
    const ctosa_interp_options *interp;
} ctosa_backend_partition;

typedef struct ctosa_backend {
    const char *name; /* for messages, e.g. "interpreter" */
    void *user;       /* passed to every call */
    /* Prepares part->graph; *state is handed to run and release. */
    ctosa_error *(*prepare)(void *user, const ctosa_backend_partition *part, void **state);
    /* Runs one inference. inputs are the graph's main-block inputs in block
     * order (host encoding, ctosa/interp.h); outputs are its block outputs in
     * order, allocated by the runtime with the declared dtype and shape:
     * fill outputs[i].data (outputs[i].size bytes). */
    ctosa_error *(*run)(void *user, void *state, const ctosa_interp_tensor *inputs, uint32_t n_inputs,
                        ctosa_interp_tensor *outputs, uint32_t n_outputs);
    void (*release)(void *user, void *state); /* accepts the state of a failed prepare: NULL */
} ctosa_backend;

/* The built-in backend: the reference interpreter (a fresh ctosa_interp
 * per partition, CUSTOM kernels attached from part->custom_ops). */
const ctosa_backend *ctosa_backend_interpreter(void);

/* ------------------------------------------------------------- runtime */

typedef struct ctosa_runtime ctosa_runtime;

typedef struct ctosa_runtime_options {
    const ctosa_backend *backend; /* NULL: ctosa_backend_interpreter(); borrowed */
    /* Custom operators: kernels for CUSTOM operators of partitions and of the
     * host executor, and the registrations the host executor lowers CPU
     * nodes with. Borrowed: must outlive the runtime. NULL = none. */
    const ctosa_custom_registry *custom_ops;
    int threads;             /* interpreter worker threads; 0 = number of CPUs */
    uint64_t max_memory;     /* interpreter tensor memory per graph; 0 = physical memory */
    uint64_t max_iterations; /* WHILE_LOOP limit; 0 = unlimited */
    const char *report;      /* report path; NULL = <stem>.report.json beside the model */
    bool reference;          /* the interpreter's plain loops (ctosa_interp_options.reference) */
} ctosa_runtime_options;

void ctosa_runtime_options_init(ctosa_runtime_options *opt);

/* A value at the model's interface, or a tensor described by a report. */
typedef struct ctosa_runtime_tensor {
    const char *name;
    const char *dtype; /* numpy name: "float32", "uint8", "int8", "int64", "bool"... */
    uint32_t rank;
    const int64_t *shape;
    uint64_t count; /* elements */
    void *data;     /* numpy layout of dtype (native-endian, row-major); NULL in infos */
    uint64_t size;  /* bytes */
    bool quantized; /* scale / zero_point meaningful */
    double scale;
    int64_t zero_point;
} ctosa_runtime_tensor;

/* Loads path (<stem>.partitioned.onnx), its partitions and report, prepares
 * every partition on the backend and lowers every CPU node for the host
 * executor. Errors: unreadable or malformed files (CTOSA_ERR_IO / _FORMAT,
 * naming the file), a report or partition that disagrees with the model
 * (CTOSA_ERR_FORMAT naming the tensor), a CPU node that cannot run
 * (CTOSA_ERR_UNSUPPORTED naming the node and why). opt may be NULL. */
ctosa_error *ctosa_runtime_load(const char *path, const ctosa_runtime_options *opt, ctosa_runtime **out);
void ctosa_runtime_free(ctosa_runtime *rt); /* accepts NULL */

/* Model inputs and outputs in graph order (data NULL). */
uint32_t ctosa_runtime_input_count(const ctosa_runtime *rt);
uint32_t ctosa_runtime_output_count(const ctosa_runtime *rt);
ctosa_error *ctosa_runtime_input_info(const ctosa_runtime *rt, uint32_t i, ctosa_runtime_tensor *info);
ctosa_error *ctosa_runtime_output_info(const ctosa_runtime *rt, uint32_t i, ctosa_runtime_tensor *info);

/* Copies data (size bytes, numpy layout of dtype) into model input name.
 * dtype, rank and shape must equal the declared ones (input_info). */
ctosa_error *ctosa_runtime_set_input(ctosa_runtime *rt, const char *name, const char *dtype, uint32_t rank,
                                     const int64_t *shape, const void *data, uint64_t size);
/* Sets input name from an array read with ctosa_tensor_file_read: converted
 * to the declared dtype when every value fits (ctosa_tensor_file_to_host
 * rules; uint8 arrays for uint8 inputs as they are). `what` names the array
 * in messages (e.g. the file). */
ctosa_error *ctosa_runtime_set_input_file(ctosa_runtime *rt, const char *name, const ctosa_tensor_file *t,
                                          const char *what);

/* Runs the whole model. Every input must have been set. Errors name the
 * partition or node that failed. */
ctosa_error *ctosa_runtime_run(ctosa_runtime *rt);

/* The value of model output name after the last run; out->data is owned by
 * the runtime and valid until the next run or free. */
ctosa_error *ctosa_runtime_get_output(ctosa_runtime *rt, const char *name, ctosa_runtime_tensor *out);

/* Writes a runtime tensor (with data) as a .npy file of its numpy dtype
 * ("|u1" for uint8), atomically (temporary file + rename). */
ctosa_error *ctosa_runtime_tensor_write_npy(const char *path, const ctosa_runtime_tensor *t);

/* What runs where: steps in execution order, with the time each took.
 *
 *     ctosa_runtime_run(rt);                  // warm-up
 *     ctosa_runtime_profile_reset(rt);
 *     for (int i = 0; i < 10; i++) ctosa_runtime_run(rt);
 *     for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++) {
 *         const ctosa_runtime_step *s = ctosa_runtime_step_at(rt, i);
 *         if (s->runs) printf("%s %.3f ms\n", s->name, 1e3 * s->seconds / s->runs);
 *     }
 */
typedef struct ctosa_runtime_step {
    bool partition;      /* true: a TOSA partition on the backend; false: a CPU node on the host executor */
    bool deferred;       /* a CPU node lowered again on each run with that run's values (its shapes
                            depend on them); its time includes that lowering */
    bool at_load;        /* every input known at load: ran once then, never by ctosa_runtime_run */
    const char *name;    /* partition file, or the node's name ("<op_type>#<index>" when unnamed) */
    const char *op_type; /* "EPContext" for partitions */
    uint32_t tosa_ops;   /* operators of the TOSA graph that runs it (0 for a deferred node) */
    uint64_t runs;       /* times it ran since load or the last ctosa_runtime_profile_reset */
    double seconds;      /* wall time of those runs, in total */
} ctosa_runtime_step;
uint32_t ctosa_runtime_step_count(const ctosa_runtime *rt);
const ctosa_runtime_step *ctosa_runtime_step_at(const ctosa_runtime *rt, uint32_t i);
/* Zeroes every step's runs and seconds (e.g. after a warm-up run). */
void ctosa_runtime_profile_reset(ctosa_runtime *rt);

/* ------------------------------------------------------------- reports */

/* A lowering report (<stem>.report.json) as the runtime reads it. */
typedef struct ctosa_report ctosa_report;

ctosa_error *ctosa_report_load(const char *path, ctosa_report **out);
/* The report that belongs to an artifact ctosa_lower_file wrote
 * (<stem>.partN.tosa or <stem>.partitioned.onnx): <stem>.report.json in the
 * same folder. *out is NULL (and no error) when that file does not exist. */
ctosa_error *ctosa_report_load_beside(const char *artifact, ctosa_report **out);
void ctosa_report_free(ctosa_report *r); /* accepts NULL */
/* The description of tensor name (dtype, shape, scale / zero point), from
 * the report's partition boundaries or its tensor list; false when the
 * report does not know it. Pointers stay valid while r lives. */
bool ctosa_report_tensor(const ctosa_report *r, const char *name, ctosa_runtime_tensor *info);

/* ------------------------------------------------------------- verify */

typedef struct ctosa_verify_options {
    double rtol;          /* float outputs: max |actual - expected| / max |expected|; default 1e-4 */
    double max_steps;     /* quantized outputs: steps of the quantization...   default 3 */
    double step_fraction; /* ...that this fraction of elements must be within; default 0.99 */
    uint32_t top_k;       /* classifier-shaped outputs ([N, C], C >= 2): k; default 5 */
    double min_topk;      /* fraction of rows whose expected top-1 class is in the actual top-k; default 1 */
} ctosa_verify_options;

void ctosa_verify_options_init(ctosa_verify_options *opt);

/* The comparison of one output. */
typedef struct ctosa_verify_output {
    const char *name;
    const char *kind; /* "float", "quantized", "integer", "bool" */
    uint64_t count;   /* elements compared */
    double max_abs;   /* max |actual - expected| (in steps for quantized) */
    double rel;       /* float: max_abs / max |expected| */
    double within; /* quantized: fraction of elements within max_steps; others: fraction exact/within rtol */
    int32_t top1;  /* classifier-shaped: rows with the same top-1 class; -1 otherwise */
    int32_t topk;  /* rows whose expected top-1 is in the actual top-k; -1 otherwise */
    uint32_t rows; /* classifier rows */
    bool pass;
    char why[200]; /* the tolerance exceeded (or the mismatch), when !pass */
} ctosa_verify_output;

/* Compares actual with expected (an array read from a file). A dtype or
 * shape mismatch is not an error but a failed comparison saying so (why).
 * res->name is actual->name. Quantized outputs are those the report gives
 * a scale (actual->quantized); integer outputs without one must match
 * exactly. */
ctosa_error *ctosa_verify_compare(const ctosa_runtime_tensor *actual, const ctosa_tensor_file *expected,
                                  const ctosa_verify_options *opt, ctosa_verify_output *res);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_RUNTIME_H */
