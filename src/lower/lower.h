/*
 * lower.h - ONNX -> TOSA lowering: the contract between the framework
 * (lower_core.c, lower_emit.c, src/pipeline/) and the operator families
 * (one small file per family: lower_ewise.c, lower_conv.c, ...).
 *
 * How a node is lowered
 * ---------------------
 * A lowering function receives a lower_ctx whose `node` is the ONNX node and
 * whose block is the TOSA block being built. It reads its inputs with
 * lw_in() (dtype, static shape, constant value if known), emits TOSA
 * operators with the lw_* helpers, and binds every ONNX output it produces
 * with lw_set_output(). It returns LOWER_OK, or calls lw_reject() (which
 * returns LOWER_REJECT) with a stable reason code and a message saying
 * exactly what is not supported (operator, dtype, attribute value, rank,
 * constant-ness).
 *
 * Lowering functions never decide what the spec allows. They emit what the
 * ONNX semantics need; the partitioner then validates every emitted TOSA
 * operator against the spec (ctosa_validate on the node's scratch graph).
 * So a lowering must not check "is int16 allowed" - it emits, and the
 * validator refuses. Lowering functions DO reject what they cannot express
 * at all (an attribute value they do not implement, a non-constant input
 * that TOSA needs constant: code "needs_constant" with the input name).
 *
 * The same function runs three times for a delegated node: once into a
 * scratch graph for the support decision, once (when all its inputs are
 * constant) to fold it on the interpreter, and once into the partition's
 * real graph. It must be deterministic and free of side effects beyond the
 * context.
 *
 * Layout: ONNX tensors keep their ONNX layout (NCHW) in the TOSA graph.
 * Operators that need NHWC (convolution, pooling, resize...) transpose in,
 * compute, and transpose out; the framework's transpose pass cancels
 * adjacent inverse transposes afterwards. Use lw_transpose().
 *
 * Data types: lw_tosa_dtype() maps an ONNX dtype to the TOSA dtype used for
 * it (FLOAT->FP32, FLOAT16->FP16, BFLOAT16->BF16, INT8->INT8, INT16->INT16,
 * INT32->INT32, BOOL->BOOL, INT64->INT64 only when the spec has int64;
 * without it, int64 constants whose values fit are narrowed to INT32 by the
 * framework and runtime int64 values reject with int64_not_enabled).
 * lw_in() already reports the TOSA dtype (`t`) next to the ONNX one.
 *
 * Registering a lowering
 * ----------------------
 * Each family file defines one table, terminated by a zero entry:
 *
 *     const lower_entry lower_table_ewise[] = {
 *         {"Add", 7, 0, lower_add},      // op_type, since opset, until (0 = open)
 *         ...
 *         {0}
 *     };
 *
 * and core/lower_registry.c lists every family table (ctest
 * cli_lower_families fails when one is missing from the list).
 */
#ifndef CTOSA_LOWER_H
#define CTOSA_LOWER_H

#include "ctosa/ctosa.h"
#include "ctosa/onnx.h"
#include "onnx/onnx_tensor.h"
#include "util/util.h"

#define LOWER_MAX_RANK 8

/* Stable reason codes (report JSON "code"). The third column says whether
 * known input values can remove the reason: with every input a constant,
 * shapes are static, a data-dependent shape is known, and a graph that
 * would be too large is computed instead (the runtime re-lowers such a CPU
 * node on each run with the run's values). */
#define LOWER_REASONS(X)                                                                            \
    X(UNSUPPORTED_OP, "unsupported_op", 0)          /* no lowering for this op */                   \
    X(UNSUPPORTED_ATTR, "unsupported_attribute", 0) /* attribute value not handled */               \
    X(UNSUPPORTED_DTYPE, "unsupported_dtype", 0)    /* dtype not expressible / not in spec */       \
    X(NEEDS_CONSTANT, "needs_constant", 1)          /* input must be a constant (--bind) */         \
    X(DYNAMIC_SHAPE, "dynamic_shape", 1)            /* a dimension is not static */                 \
    X(INT64_NOT_ENABLED, "int64_not_enabled", 0)    /* int64 runtime value, no int64 in spec */     \
    X(MIXED_WIDTH, "mixed_width", 0)                /* operand widths the table does not pair */    \
    X(LEVEL_LIMIT, "level_limit", 1)                /* a level limit is exceeded */                 \
    X(UNREGISTERED_CUSTOM, "unregistered_custom_op", 0)                                             \
    X(NOT_IN_SPEC, "not_in_spec", 0)            /* emitted TOSA fails the validator */              \
    X(NO_COMPUTE, "no_compute", 0)              /* partition with only data movement */             \
    X(INPUT_FALLBACK, "input_not_available", 1) /* an input's type/shape is unknown */              \
    X(INTERNAL, "internal_error", 0)                                                                \
    /* added by the framework: */                                                                   \
    X(CPU_CONSUMER, "cpu_consumer", 0) /* folded at compile time, but a CPU node needs the value */ \
    /* added for custom operators (lower_custom.c): */                                              \
    X(CUSTOM_REJECTED, "custom_op_rejected", 0) /* a custom op's validate/infer refused the node */

/* clang-format off */
typedef enum lower_code {
#define LOWER_X(e, s, v) LOWER_##e,
    LOWER_REASONS(LOWER_X)
#undef LOWER_X
    LOWER_CODE_COUNT
} lower_code;
/* clang-format on */

const char *lower_code_name(lower_code c);
bool lower_code_needs_values(lower_code c); /* the table's third column */

typedef enum lower_status { LOWER_OK = 0, LOWER_REJECT = 1 } lower_status;

/* What the lowering knows about one ONNX value. */
typedef struct lower_value {
    const char *name;   /* ONNX name */
    int32_t onnx_dtype; /* CTOSA_ONNX_* */
    ctosa_dtype t;      /* TOSA dtype it is carried in (UNKNOWN if none) */
    uint32_t rank;
    int64_t shape[LOWER_MAX_RANK]; /* -1 where not static */
    bool static_shape;             /* every dim known */
    /* Constant value, when known at compile time (initializer, Constant,
     * --bind, or folded): dense little-endian elements in the ONNX dtype's
     * natural width (see onnx_tensor_value). NULL otherwise. */
    const void *data;
    uint64_t nbytes;
    /* Quantization of a boundary value (int8/uint8/int16 partitions). */
    bool quantized;
    double scale;
    int64_t zero_point;
} lower_value;

typedef struct lower_ctx lower_ctx; /* defined by the framework */

/* Public read-only view of the context for lowering functions. */
const ctosa_onnx_node *lw_node(const lower_ctx *c);
const ctosa_spec *lw_spec(const lower_ctx *c);
int64_t lw_opset(const lower_ctx *c); /* default-domain opset of the model */
ctosa_graph *lw_graph(lower_ctx *c);
ctosa_block *lw_block(lower_ctx *c);
arena *lw_arena(lower_ctx *c); /* scratch memory for this node */

/* ---------------------------------------------------------------- inputs */
/* Number of node inputs (omitted optional inputs count, see lw_has_input). */
uint32_t lw_n_inputs(const lower_ctx *c);
bool lw_has_input(const lower_ctx *c, uint32_t i); /* present and not "" */
/* Information on input i; NULL when absent. */
const lower_value *lw_in(lower_ctx *c, uint32_t i);
/* TOSA tensor name carrying input i in the current block (a constant input
 * is materialised as a CONST on first use, converted to its TOSA dtype). */
const char *lw_input(lower_ctx *c, uint32_t i);
/* Constant input i as doubles / int64s (converted from any numeric dtype);
 * returns the element count or -1 when not constant. Memory is scratch. */
int64_t lw_const_f64(lower_ctx *c, uint32_t i, const double **out);
int64_t lw_const_i64(lower_ctx *c, uint32_t i, const int64_t **out);

/* ------------------------------------------------------------ attributes */
int64_t lw_attr_int(const lower_ctx *c, const char *name, int64_t dflt);
float lw_attr_float(const lower_ctx *c, const char *name, float dflt);
/* STRING attribute as a NUL-terminated scratch copy, dflt when absent. */
const char *lw_attr_str(lower_ctx *c, const char *name, const char *dflt);
/* INTS attribute: returns count (-1 when absent) and *v. */
int64_t lw_attr_ints(const lower_ctx *c, const char *name, const int64_t **v);
int64_t lw_attr_floats(const lower_ctx *c, const char *name, const float **v);
bool lw_has_attr(const lower_ctx *c, const char *name);

/* ------------------------------------------------------------- emitting */
/* Maps an ONNX dtype to the TOSA dtype used for it under the spec;
 * UNKNOWN when there is none (strings, complex, unsigned...). */
ctosa_dtype lw_tosa_dtype(const lower_ctx *c, int32_t onnx_dtype);
/* A new intermediate tensor with a unique name; returns its name. */
const char *lw_tensor(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape);
/* A constant tensor (CONST op + tensor). data is in the TOSA file encoding of
 * t (little-endian; see ctosa_dtype_storage_size); it is copied. */
const char *lw_const(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape, const void *data);
/* Constants converted from doubles to dtype t (rounded / saturated as a CAST
 * would); scalar helpers make rank-r all-ones shapes (for broadcasting). */
const char *lw_const_from_f64(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                              const double *v);
const char *lw_scalar(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v);
/* A zero point input ([1] of dtype t, value zp). */
const char *lw_zero_point(lower_ctx *c, ctosa_dtype t, int64_t zp);
/* A CONST_SHAPE with n values. */
const char *lw_shape(lower_ctx *c, uint32_t n, const int64_t *v);
/* Emits an operator; returns NULL on allocation failure (the framework then
 * reports internal_error). */
ctosa_op *lw_op(lower_ctx *c, ctosa_op_kind kind, uint32_t n_in, const char *const *in, uint32_t n_out,
                const char *const *out, const ctosa_attr *attr);
/* Common shapes of emission: a new output tensor + op in one call. */
const char *lw_unary(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype out_t, uint32_t rank,
                     const int64_t *shape, const ctosa_attr *attr);
const char *lw_binary(lower_ctx *c, ctosa_op_kind kind, const char *a, const char *b, ctosa_dtype out_t,
                      uint32_t rank, const int64_t *shape);
const char *lw_transpose(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                         const int32_t *perm);
const char *lw_reshape(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *new_shape);
const char *lw_cast(lower_ctx *c, const char *x, ctosa_dtype from, ctosa_dtype to, uint32_t rank,
                    const int64_t *shape);
/* Shape and dtype of an already emitted TOSA tensor. */
const ctosa_tensor *lw_tensor_info(lower_ctx *c, const char *name);

/* Binds ONNX output i to TOSA tensor `name` (whose dtype/shape it takes). */
void lw_set_output(lower_ctx *c, uint32_t i, const char *name);
/* Binds ONNX output i to a compile-time constant (folding: Shape, Size,
 * ConstantOfShape...). data in the ONNX dtype's natural width, copied. */
void lw_set_output_const(lower_ctx *c, uint32_t i, int32_t onnx_dtype, uint32_t rank, const int64_t *shape,
                         const void *data, uint64_t nbytes);

/* Rejects the node: code, the input it is about (or NULL), and a message.
 * Returns LOWER_REJECT. */
lower_status lw_reject(lower_ctx *c, lower_code code, const char *input, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------ registry */
typedef lower_status (*lower_fn)(lower_ctx *c);

typedef struct lower_entry {
    const char *op_type;
    int since_opset; /* first opset the function handles */
    int until_opset; /* last opset (0 = open) */
    lower_fn fn;
} lower_entry;

/* Finds the lowering for (domain, op_type, opset); NULL if none. */
const lower_entry *lower_find(const char *domain, const char *op_type, int64_t opset);

#endif /* CTOSA_LOWER_H */
