/* interp_internal.h - the contract between the interpreter runtime
 * (interp_core.c and friends) and the kernel files (kernels_*.c).
 *
 * Tensors at run time use one canonical in-memory element type per dtype,
 * so kernels never deal with file encodings:
 *   BOOL          uint8_t (0 or 1)
 *   INT4          int8_t  (one value per byte, -8..7)
 *   INT8          int8_t
 *   INT16         int16_t
 *   INT32         int32_t
 *   INT48         int64_t (sign-extended 48-bit value)
 *   INT64, SHAPE  int64_t
 *   FP32, FP16, BF16, FP8E4M3, FP8E5M2
 *                 float   (always a value exactly representable in the dtype:
 *                          kernels producing FP16/BF16/FP8 round their results
 *                          with ff_round_to(dtype, x) from util/floatfmt.h)
 *
 * The runtime allocates every output with the shape declared in the graph
 * before calling a kernel, and materialises constants in canonical form.
 * Kernels check the spec's ERROR_IF conditions they own and report them with
 * interp_fail(); they must never read or write out of bounds whatever the
 * graph says (shapes may be inconsistent in an unvalidated file).
 */
#ifndef CTOSA_INTERP_INTERNAL_H
#define CTOSA_INTERP_INTERNAL_H

#include "ctosa/graph.h"
#include "util/util.h"

#define INTERP_MAX_RANK 16

typedef struct itensor {
    const char *name;
    ctosa_dtype dtype;
    uint32_t rank;
    int64_t shape[INTERP_MAX_RANK];
    uint64_t count; /* number of elements */
    void *data;     /* canonical storage, count elements */
    bool is_const;  /* compile-time constant (values known before the run) */
} itensor;

/* Size in bytes of one canonical element of dtype (0 if unsupported). */
size_t interp_elem_size(ctosa_dtype t);

typedef struct interp_ctx interp_ctx; /* defined by the runtime */

/* A RESCALE the runtime offers to the convolution producing its input
 * (interp_op.rescale): an int8 CONV2D or DEPTHWISE_CONV2D with int32 output read by nothing but
 * one RESCALE with constant multiplier, shift and zero points. The
 * convolution may store RESCALE(value) into out itself, bit for bit as
 * interp_k_RESCALE would, and then sets done (the RESCALE does not run);
 * otherwise it stores its own output and the RESCALE runs as usual (and
 * reports whatever fails). Its own output's memory stays reserved.
 * With tie set, the RESCALE's input is instead the quantized lowering's
 * tie-to-even chain of the convolution's output acc: y = tie (a RESCALE
 * to int32 of acc), then SELECT((acc & mask) == half, y - (y & odd), y); the
 * chain's operators (two BITWISE_AND, EQUAL, SUB, SELECT) and tie do not
 * run either when done is set.
 * With r2 set it is instead offered to a RESCALE r1 (int8 a -> int32) of
 * a residual addition out = RESCALE(ADD(r1(a), r2(b))), r2 the other
 * input's RESCALE (int8 b -> int32), op / in / out the last RESCALE: r1's
 * kernel may store out in one pass (done: r2, the ADD and the last RESCALE
 * do not run). */
typedef struct interp_fused_rescale {
    const ctosa_op *op; /* the RESCALE */
    const char *where;  /* its place, for messages */
    itensor *const *in; /* its five inputs; in[0] is the convolution's output (or the chain's) */
    itensor *out;       /* its output */
    bool done;
    const ctosa_op *tie;                          /* the chain's first RESCALE, or NULL */
    const char *tie_where;                        /* its place */
    itensor *const *tie_in;                       /* its five inputs, tie_in[0] the convolution's output */
    itensor *tie_out;                             /* y */
    const itensor *tie_mask, *tie_half, *tie_odd; /* constants: one value, or one per channel */
    const ctosa_op *r2;                           /* the residual's other RESCALE, or NULL */
    const char *r2_where;                         /* its place */
    itensor *const *r2_in;                        /* its five inputs, r2_in[0] = b */
    itensor *r2_out;                              /* its output */
    void *keep; /* the kernel's requantisation constants, built on the first run from the constant operands
                   (interp_rescale_requant), freed with the plan */
} interp_fused_rescale;

/* A TRANSPOSE to NHWC (perms [0, 2, 3, 1]) of an int8 tensor whose output
 * only an int8 CONV2D reads, as its input, offered at plan time to that
 * convolution (interp_op.pre): the TRANSPOSE does not run by itself. The
 * convolution's kernel reads the NCHW tensor in[0] directly where its
 * path copies the input anyway (the 3-channel stem), and otherwise first
 * runs the TRANSPOSE through fn, which fills the convolution's input. */
struct interp_op;
typedef struct interp_fused_pre {
    const ctosa_op *op; /* the TRANSPOSE */
    const char *where;  /* its place */
    itensor *const *in; /* its input (in[0], NCHW) */
    itensor *const *out;
    ctosa_error *(*fn)(const struct interp_op *o); /* its kernel */
} interp_fused_pre;

/* What a kernel is told about the operator it runs. */
typedef struct interp_op {
    interp_ctx *ctx;
    const ctosa_op *op;
    uint32_t index;     /* operator index in its block */
    const char *where;  /* "op #12 CONV2D 'conv1'" for messages */
    itensor *const *in; /* n_in inputs in flatbuffer argument order */
    uint32_t n_in;
    itensor *const *out;
    uint32_t n_out;
    /* Per-operator cache (NULL when the caller keeps none, e.g. a unit test
     * calling a kernel directly): see interp_cache_get/put. */
    void **cache;
    /* A CLAMP the runtime fused into this operator (CONV2D and
     * DEPTHWISE_CONV2D with fp32 output only; NULL otherwise): the kernel
     * must store clamp(value) wherever it would store value, exactly as
     * interp_k_CLAMP computes it (interp_post_f). */
    const struct interp_post *post;
    /* A fused RESCALE (see interp_fused_rescale), or NULL. */
    interp_fused_rescale *rescale;
    /* A TRANSPOSE producing in[0] that has not run (interp_fused_pre), or NULL. */
    const interp_fused_pre *pre;
    /* Run the plain reference loops instead of the fast paths (kernels that
     * have both: convolutions, MATMUL, SIGMOID, RESCALE, SELECT):
     * ctosa_interp_options.reference. The differential kernel tests set it
     * directly. */
    bool reference;
} interp_op;

/* The fused CLAMP of interp_op.post: out = v < lo ? lo : v > hi ? hi : v,
 * and with ignore_nan a NaN becomes lo (CLAMP's nan_mode IGNORE). The
 * runtime fuses only when CLAMP's own checks would pass (same shape,
 * dtype fp32, lo <= hi, neither NaN). With silu the post is instead the
 * fused SiLU, v * sigmoid(v) with the vector sigmoid of the SIGMOID fast
 * path (kg_post_rows in kernels_gemm.h applies either; interp_post_f is
 * the clamp alone). */
typedef struct interp_post {
    float lo, hi;
    bool ignore_nan;
    bool silu;
} interp_post;

static inline float interp_post_f(const interp_post *p, float v) {
    float r = v < p->lo ? p->lo : v > p->hi ? p->hi : v;
    return p->ignore_nan && v != v ? p->lo : r;
}
/* Applies p to n floats in place (no-op when p is NULL). */
void interp_post_apply(const interp_post *p, float *d, size_t n);

/* Per-operator cache for work that depends only on compile-time constants
 * (packed constant weights): a kernel computes it on the first run, stores
 * it with interp_cache_put and finds it again on later runs of the same
 * operator with interp_cache_get. Only use it for values derived from
 * inputs with is_const set (their data never changes) and from the
 * operator's attributes; put a small header in the block (sizes) and check
 * it, so a mismatch falls back to the uncached path.
 *
 * interp_cache_get: the block stored for this operator, or NULL.
 * interp_cache_put: a new 64-byte aligned block of bytes (uninitialised),
 * now owned by the runtime (freed by ctosa_interp_free) and counted against
 * max_memory; replaces an earlier one. NULL when the operator has no cache
 * slot, memory is short or the limit would be passed: the kernel then
 * computes into its own temporary as before. */
void *interp_cache_get(const interp_op *o);
void *interp_cache_put(const interp_op *o, size_t bytes);

typedef ctosa_error *(*interp_kernel_fn)(const interp_op *o);

/* An ERROR_IF/REQUIRE failure: CTOSA_ERR_INVALID, message
 * "<where>: <text>". */
ctosa_error *interp_fail(const interp_op *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs fn over [0, n) split into chunks on the runtime's worker threads
 * (or inline when single-threaded). fn must be thread-safe. */
void interp_parallel_for(interp_ctx *ctx, size_t n, void (*fn)(void *arg, size_t begin, size_t end),
                         void *arg);
/* Threads interp_parallel_for runs on (the caller included; 1 without a
 * pool), for kernels that split work into one range per thread. */
int interp_threads(const interp_ctx *ctx);
/* Whether a loop of `work` units is worth splitting over the worker
 * threads: there are workers, and the work lasts well beyond what handing
 * a job to polling workers costs (about a microsecond). Units: multiply-
 * adds for compute-bound loops; memory-bound loops count each element
 * moved (times taps) as INTERP_PAR_ELEM units. */
bool interp_par_worth(const interp_ctx *ctx, double work);
#define INTERP_PAR_ELEM 4.0
/* Tests: makes interp_par_worth true whenever there are workers, so small
 * cases take the split paths. Not thread-safe: set it before running. */
void interp_par_force(bool on);

/* ------------------------------------------------------------ kernels */
/* Every kernel is ctosa_error *interp_k_<OP>(const interp_op *o), with the
 * same contract (top of this file) and the same helpers (below and
 * int_math.h), whatever file it lives in. INTERP_KERNELS lists the
 * operators that have one (interp_kernel_for dispatches on it); the
 * control-flow, variable and custom operators, which call back into the
 * runtime, are declared in interp_runtime.h. */
/* clang-format off */
#define INTERP_KERNELS(X) \
    /* computation and conversion: kernels_conv.c, kernels_matmul.c,          \
     * kernels_pool.c, kernels_fft.c, kernels_activation.c, kernels_image.c,  \
     * kernels_convert.c */                                                    \
    X(ARGMAX) X(AVG_POOL2D) X(CONV2D) X(CONV3D) X(DEPTHWISE_CONV2D) X(FFT2D) X(MATMUL) \
    X(MAX_POOL2D) X(RFFT2D) X(TRANSPOSE_CONV2D) X(CLAMP) X(ERF) X(SIGMOID) X(TANH)       \
    X(TABLE) X(RESIZE) X(CAST) X(RESCALE)                                                \
    /* element-wise, comparison, reduction, data layout, gather/scatter:      \
     * kernels_ewise.c, kernels_reduce.c, kernels_layout.c, kernels_gather.c */ \
    X(ADD) X(ARITHMETIC_RIGHT_SHIFT) X(BITWISE_AND) X(BITWISE_OR) X(BITWISE_XOR) X(INTDIV) \
    X(LOGICAL_AND) X(LOGICAL_LEFT_SHIFT) X(LOGICAL_RIGHT_SHIFT) X(LOGICAL_OR)              \
    X(LOGICAL_XOR) X(MAXIMUM) X(MINIMUM) X(MUL) X(POW) X(SUB) X(ABS) X(BITWISE_NOT)        \
    X(CEIL) X(CLZ) X(COS) X(EXP) X(FLOOR) X(LOG) X(LOGICAL_NOT) X(NEGATE) X(RECIPROCAL)   \
    X(RSQRT) X(SIN) X(SELECT) X(EQUAL) X(GREATER) X(GREATER_EQUAL) X(REDUCE_ALL)          \
    X(REDUCE_ANY) X(REDUCE_MAX) X(REDUCE_MIN) X(REDUCE_PRODUCT) X(REDUCE_SUM) X(CONCAT)   \
    X(PAD) X(RESHAPE) X(REVERSE) X(SLICE) X(TILE) X(TRANSPOSE) X(GATHER) X(SCATTER)       \
    X(IDENTITY)                                                                            \
    /* 1.1 shape operators: kernels_shape.c */                                 \
    X(DIM) X(CONCAT_SHAPE) X(ADD_SHAPE) X(SUB_SHAPE) X(MUL_SHAPE) X(SLICE_SHAPE)          \
    X(EXP2_SHAPE) X(LOG2_CEIL_SHAPE) X(LOG2_FLOOR_SHAPE) X(MAX_SHAPE) X(MIN_SHAPE)        \
    X(MOD_SHAPE) X(DIV_CEIL_SHAPE) X(DIV_FLOOR_SHAPE) X(ASSERT_EQUAL_SHAPE)
/* clang-format on */

#define INTERP_DECLARE(n) ctosa_error *interp_k_##n(const interp_op *o);
INTERP_KERNELS(INTERP_DECLARE)
#undef INTERP_DECLARE
/* A MUL of x by SIGMOID(x) the plan fused (the SiLU / swish pattern):
 * in[0] is x, out[0] the MUL's output; results identical to the two
 * operators run one after the other. */
ctosa_error *interp_k_fused_SILU(const interp_op *o);

/* ------------------------------------------------------ kernel helpers
 * (with the element and fixed-point helpers of int_math.h: the one set
 * every kernel uses) */
/* CTOSA_ERR_UNSUPPORTED "<where>: <text>". */
ctosa_error *interp_unsupported(const interp_op *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "dims" of a tensor for messages: "[1,4,4]" in a static rotating buffer. */
const char *interp_shape_str(const itensor *t);
/* Whether a and b have the same rank and dims. */
bool interp_same_shape(const itensor *a, const itensor *b);
/* Element i of a canonical integer tensor widened to int64 (BOOL, INT*,
 * SHAPE). */
int64_t interp_get_int(const itensor *t, uint64_t i);
/* A 1-element (or rank-0) compile-time argument such as a zero point or the
 * MUL shift, as int64 or float. Fails when the tensor is empty. */
ctosa_error *interp_scalar_int(const interp_op *o, uint32_t input, int64_t *v);
ctosa_error *interp_scalar_float(const interp_op *o, uint32_t input, float *v);
/* The int64 values of a shape input (SHAPE, or an integer tensor). */
ctosa_error *interp_shape_values(const interp_op *o, uint32_t input, const int64_t **v, uint64_t *n);

#endif
