/*
 * ctosa/interp.h - the reference interpreter: runs a TOSA graph on the CPU.
 *
 *     ctosa_interp *it;
 *     ctosa_error *err = ctosa_interp_create(graph, NULL, &it);   // plans, loads constants
 *     err = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 4, shape, data, bytes);
 *     err = ctosa_interp_run(it);
 *     ctosa_interp_tensor out;
 *     err = ctosa_interp_get_output(it, "y", &out);   // out.data valid until the next run
 *     ctosa_interp_free(it);
 *
 * The graph must outlive the interpreter (names and constant data are
 * borrowed from it). One ctosa_interp is not thread-safe: call it from one
 * thread at a time. Kernels themselves may use several worker threads
 * (options.threads).
 *
 * Host encoding. Tensor data crossing this API (inputs, outputs, CUSTOM
 * kernel arguments) is dense, row-major, native-endian, one element per
 * slot, with this element type per TOSA dtype - the same as the .npy files
 * `ctosa run` reads and writes:
 *
 *     BOOL            uint8_t (0 or 1)        numpy |b1
 *     INT4            int8_t  (-8..7)         numpy |i1
 *     INT8            int8_t                  numpy |i1
 *     INT16           int16_t                 numpy <i2
 *     INT32           int32_t                 numpy <i4
 *     INT48           int64_t (48-bit range)  numpy <i8
 *     INT64, SHAPE    int64_t                 numpy <i8
 *     FP32            float                   numpy <f4
 *     FP16            uint16_t IEEE half bits numpy <f2
 *     BF16            uint16_t bfloat16 bits  numpy <u2
 *     FP8E4M3/E5M2    uint8_t bits            numpy |u1
 *
 * ctosa_host_elem_size() gives the element size. Values outside a dtype's
 * range (an INT4 of 9, a BOOL of 2) are rejected by set_input.
 *
 * Variables (EXT-VARIABLE) keep their values across ctosa_interp_run calls
 * of one interpreter; they start from the variable tensor's initial data
 * (zeros when it has none).
 *
 * Errors: ERROR_IF / REQUIRE violations found while running are
 * CTOSA_ERR_INVALID with a message "op #i NAME 'output': ..."; shapes or
 * sizes over the limits are CTOSA_ERR_LIMIT; operators or dtypes the
 * interpreter does not implement are CTOSA_ERR_UNSUPPORTED.
 */
#ifndef CTOSA_INTERP_H
#define CTOSA_INTERP_H

#include "ctosa/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_interp ctosa_interp;

typedef struct ctosa_interp_options {
    int threads;             /* worker threads for kernels; 0 = number of CPUs, 1 = none */
    uint64_t max_memory;     /* bytes for all tensors (constants, inputs, activations,
                             variables); 0 = the machine's physical memory */
    uint32_t max_depth;      /* COND_IF / WHILE_LOOP nesting limit; 0 = 32 */
    uint64_t max_iterations; /* WHILE_LOOP iteration limit per loop; 0 = unlimited */
    /* Running a slice of the graph: when n_outputs > 0, these tensors of the
     * main block (block outputs, intermediates, inputs or constants) are the
     * outputs instead of the block's, and only the operators they depend on
     * are planned and run. Constants that no such operator reads are never
     * read (a mapped file's pages of them are never loaded), and graph
     * inputs they do not need need not be set (see ctosa_interp_input_used).
     * The names are read during ctosa_interp_create only. */
    const char *const *outputs;
    uint32_t n_outputs;
    /* Do not keep packed copies of constant weights between runs (the
     * per-operator cache): for a graph that runs once (`ctosa run`), this
     * saves memory the size of the weights of the operators that run, at
     * no cost in time. Results are identical. */
    bool no_weight_cache;
    /* Time every operator of the main region on each run (two clock reads
     * per operator); read the figures with ctosa_interp_profile_get. Time
     * spent in a COND_IF / WHILE_LOOP body counts for that operator. */
    bool profile;
    /* Run the plain loops that follow the specification's pseudocode
     * instead of the fast paths (blocked, packed, vectorised, threaded),
     * for the kernels that have both (CONV2D, CONV3D, DEPTHWISE_CONV2D,
     * TRANSPOSE_CONV2D, MATMUL, fp32 SIGMOID, RESCALE, SELECT). Integer results are identical either way;
     * float results may differ in the last bits (the plain loops sum in a
     * different order and round every step to the accumulator type). Much
     * slower: for checking the fast paths, not for production. */
    bool reference;
} ctosa_interp_options;

void ctosa_interp_options_init(ctosa_interp_options *opt);

/* Prepares the main region (regions[0]) of g: checks declared shapes and
 * sizes, prepares the constants the operators read, plans the activation
 * memory. Constants whose stored bytes are already the host encoding
 * (INT8, INT16, INT32, INT64, FP32, SHAPE, suitably aligned, in memory such
 * as the reader's mapping) are used in place, not copied, and are not
 * counted against max_memory; others are decoded once. Other regions
 * (COND_IF / WHILE_LOOP bodies) are prepared on first use. opt may be NULL. */
ctosa_error *ctosa_interp_create(const ctosa_graph *g, const ctosa_interp_options *opt, ctosa_interp **out);
void ctosa_interp_free(ctosa_interp *it); /* accepts NULL */

/* A tensor as seen through the API: data in the host encoding above. */
typedef struct ctosa_interp_tensor {
    const char *name;
    ctosa_dtype dtype;
    uint32_t rank;
    const int64_t *shape; /* rank entries */
    uint64_t count;       /* elements */
    void *data;           /* count * ctosa_host_elem_size(dtype) bytes */
    uint64_t size;        /* bytes of data */
} ctosa_interp_tensor;

/* Bytes per element in the host encoding; 0 for dtypes the interpreter
 * does not handle. */
size_t ctosa_host_elem_size(ctosa_dtype t);

/* Graph inputs and outputs of the main region, in block order (the outputs
 * are the ones options.outputs selected, in that order, when it is set). The
 * info's data is NULL (count and size say how much is expected). */
uint32_t ctosa_interp_input_count(const ctosa_interp *it);
uint32_t ctosa_interp_output_count(const ctosa_interp *it);
ctosa_error *ctosa_interp_input_info(const ctosa_interp *it, uint32_t i, ctosa_interp_tensor *info);
/* Whether input i is read by the operators that run: false only for inputs
 * a slice (ctosa_interp_options.outputs) does not depend on, which need not
 * be set. */
bool ctosa_interp_input_used(const ctosa_interp *it, uint32_t i);
ctosa_error *ctosa_interp_output_info(const ctosa_interp *it, uint32_t i, ctosa_interp_tensor *info);

/* Copies data (size bytes, host encoding) into graph input name. dtype,
 * rank and shape must equal the declared ones. */
ctosa_error *ctosa_interp_set_input(ctosa_interp *it, const char *name, ctosa_dtype dtype, uint32_t rank,
                                    const int64_t *shape, const void *data, uint64_t size);

/* Runs the graph. Every input must have been set (values stay set across
 * runs). */
ctosa_error *ctosa_interp_run(ctosa_interp *it);

/* The value of graph output name after the last successful run. out->data
 * (host encoding) is owned by the interpreter and valid until the next
 * run or free. */
ctosa_error *ctosa_interp_get_output(ctosa_interp *it, const char *name, ctosa_interp_tensor *out);

/* Profile (options.profile): time per operator of the main region, summed
 * over the runs since creation or the last ctosa_interp_profile_reset.
 * count is the number of operators of the main block (including the
 * declarations CONST / VARIABLE, which take no time, and the CLAMPs fused
 * into the convolution before them, whose time is the convolution's);
 * operators a slice does not run have runs == 0. Without options.profile
 * every entry has runs == 0.
 *
 *     for (uint32_t i = 0; i < ctosa_interp_profile_count(it); i++) {
 *         ctosa_interp_op_profile p;
 *         ctosa_interp_profile_get(it, i, &p);
 *         printf("%s %.3f ms\n", p.where, 1e3 * p.seconds / (p.runs ? p.runs : 1));
 *     } */
typedef struct ctosa_interp_op_profile {
    uint32_t index; /* operator index in the main block */
    ctosa_op_kind kind;
    const char *where;  /* "op #12 CONV2D 'conv1'" (valid while the interpreter lives) */
    uint64_t runs;      /* how many times it ran */
    double seconds;     /* total wall time of those runs */
    uint64_t out_elems; /* elements of its first output (0 when it has none) */
} ctosa_interp_op_profile;

uint32_t ctosa_interp_profile_count(const ctosa_interp *it);
/* Fills *out for operator i (0 <= i < count); CTOSA_ERR_USAGE otherwise. */
ctosa_error *ctosa_interp_profile_get(const ctosa_interp *it, uint32_t i, ctosa_interp_op_profile *out);
/* Sets every operator's runs and seconds to zero (e.g. after a warm-up). */
void ctosa_interp_profile_reset(ctosa_interp *it);

/* CUSTOM operators. A kernel gets the operator's inputs (read-only) and its
 * outputs, which the runtime has allocated with the declared dtypes and
 * shapes (data zeroed); it fills outputs[i].data in the host encoding.
 * implementation_attrs is the operator's attribute bytes (may be empty).
 * Return NULL on success or an error (its message is prefixed with the
 * operator's place). */
typedef ctosa_error *(*ctosa_custom_fn)(void *user, const ctosa_interp_tensor *inputs, uint32_t n_inputs,
                                        ctosa_interp_tensor *outputs, uint32_t n_outputs,
                                        const uint8_t *implementation_attrs,
                                        uint32_t implementation_attrs_len);

/* Registers fn for CUSTOM operators with this domain_name and operator_name
 * (copied). A later registration of the same pair replaces the earlier one.
 * Running a CUSTOM operator nobody registered fails naming both. */
ctosa_error *ctosa_interp_register_custom(ctosa_interp *it, const char *domain_name,
                                          const char *operator_name, ctosa_custom_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_INTERP_H */
