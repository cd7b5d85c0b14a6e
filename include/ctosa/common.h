/*
 * ctosa/common.h - errors, data types, operators and versions.
 *
 * Everything in ctosa that can fail returns a `ctosa_error *`: NULL means
 * success, anything else is a heap-allocated error that the caller owns and
 * releases with ctosa_error_free(). The message names the file and the place
 * in it (byte offset, operator index and name, tensor name) and may hold
 * several lines when a call reports every problem it found, up to a cap.
 *
 *     ctosa_error *err = ctosa_read_file("m.tosa", NULL, &g);
 *     if (err) {
 *         fprintf(stderr, "%s\n", ctosa_error_message(err));
 *         int code = ctosa_error_code(err);   // see ctosa_code
 *         ctosa_error_free(err);
 *     }
 *
 * Enumerations follow the TOSA 1.0 final / 1.1 draft flatbuffer schemas: the
 * numeric value of every ctosa_dtype and ctosa_op_kind is the value written in
 * the file. 1.1 only appends values, so one enum serves both; which values
 * a graph may use depends on its version (ctosa_op_min_version()).
 */
#ifndef CTOSA_COMMON_H
#define CTOSA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTOSA_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum ctosa_code {
    CTOSA_OK = 0,
    CTOSA_ERR_USAGE,       /* bad argument from the caller (exit 2) */
    CTOSA_ERR_IO,          /* a file could not be opened/read/written (exit 2) */
    CTOSA_ERR_FORMAT,      /* malformed input file (exit 2) */
    CTOSA_ERR_UNSUPPORTED, /* valid input that ctosa does not handle (exit 2) */
    CTOSA_ERR_LIMIT,       /* a resource limit was hit (exit 2) */
    CTOSA_ERR_NOMEM,       /* allocation failed (exit 2) */
    CTOSA_ERR_INVALID,     /* graph breaks the spec: ERROR_IF/REQUIRE, validation (exit 1) */
    CTOSA_ERR_INTERNAL     /* a bug in ctosa */
} ctosa_code;

typedef struct ctosa_error ctosa_error;

/* Creates an error with a printf-style message. Never returns NULL (falls
 * back to a static out-of-memory error, which ctosa_error_free ignores). */
ctosa_error *ctosa_error_new(ctosa_code code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
ctosa_code ctosa_error_code(const ctosa_error *err);
const char *ctosa_error_message(const ctosa_error *err);
void ctosa_error_free(ctosa_error *err); /* accepts NULL */
/* Prefixes the message with "prefix: " (for adding file or node context as an
 * error travels up). Returns err. */
ctosa_error *ctosa_error_prefix(ctosa_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Process exit code for an error: 0 for NULL, 1 for CTOSA_ERR_INVALID, else 2. */
int ctosa_error_exit_code(const ctosa_error *err);

/* ----------------------------------------------------------------- versions */

/* The TOSA version a graph is written for. */
typedef struct ctosa_version {
    int32_t major, minor, patch;
    bool draft;
} ctosa_version;

#define CTOSA_VERSION_1_0 ((ctosa_version){1, 0, 0, false})
#define CTOSA_VERSION_1_1_DRAFT ((ctosa_version){1, 1, 0, true})

/* 10 for 1.0.x, 11 for 1.1.x: the key used by ctosa_op_min_version(). */
int ctosa_version_key(ctosa_version v);

/* ------------------------------------------------------------------ dtypes */

/* X(NAME, value, bits per element, min version key, lower-case name) */
#define CTOSA_DTYPE_LIST(X)                          \
    X(UNKNOWN, 0, 0, 10, "unknown")                  \
    X(BOOL, 1, 8, 10, "bool")                        \
    X(INT4, 2, 4, 10, "int4")                        \
    X(INT8, 3, 8, 10, "int8")                        \
    X(INT16, 4, 16, 10, "int16")                     \
    X(INT32, 5, 32, 10, "int32")                     \
    X(INT48, 6, 48, 10, "int48")                     \
    X(FP32, 7, 32, 10, "fp32")                       \
    X(FP16, 8, 16, 10, "fp16")                       \
    X(BF16, 9, 16, 10, "bf16")                       \
    X(SHAPE, 10, 64, 10, "shape")                    \
    X(FP8E4M3, 11, 8, 10, "fp8e4m3")                 \
    X(FP8E5M2, 12, 8, 10, "fp8e5m2")                 \
    X(FP6E2M3, 13, 6, 11, "fp6e2m3")                 \
    X(FP6E3M2, 14, 6, 11, "fp6e3m2")                 \
    X(FP4E2M1, 15, 4, 11, "fp4e2m1")                 \
    X(FP8UE8M0, 16, 8, 11, "fp8ue8m0")               \
    X(INT64, 17, 64, 11, "int64")                    \
    X(MXINT8, 18, 8, 11, "mxint8")

typedef enum ctosa_dtype {
#define CTOSA_X(n, v, b, ver, s) CTOSA_DTYPE_##n = v,
    CTOSA_DTYPE_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_DTYPE_COUNT
} ctosa_dtype;

const char *ctosa_dtype_name(ctosa_dtype t);   /* "INT8", "FP32"... or NULL */
const char *ctosa_dtype_short(ctosa_dtype t);  /* "int8", "fp32"... or NULL */
/* Bits per element as stored in a file (INT4 4, INT48 48, SHAPE 64). */
int ctosa_dtype_bits(ctosa_dtype t);
/* Bytes needed to store n elements of t in a file (INT4 packs two per byte,
 * INT48 takes 6 bytes each). Returns false on overflow. */
bool ctosa_dtype_storage_size(ctosa_dtype t, uint64_t n, uint64_t *bytes);
bool ctosa_dtype_valid_in(ctosa_dtype t, ctosa_version v);

/* -------------------------------------------------------------- operators */

/* X(NAME, value, attribute table name (schema), min version key) */
#define CTOSA_OP_LIST(X)                                            \
    X(ARGMAX, 1, ArgMax, 10)                                        \
    X(AVG_POOL2D, 2, AvgPool2d, 10)                                 \
    X(CONV2D, 3, Conv2d, 10)                                        \
    X(CONV3D, 4, Conv3d, 10)                                        \
    X(DEPTHWISE_CONV2D, 5, DepthwiseConv2d, 10)                     \
    X(FFT2D, 6, FFT2d, 10)                                          \
    X(MATMUL, 7, MatMul, 10)                                        \
    X(MAX_POOL2D, 8, MaxPool2d, 10)                                 \
    X(RFFT2D, 9, RFFT2d, 10)                                        \
    X(TRANSPOSE_CONV2D, 10, TransposeConv2d, 10)                    \
    X(CLAMP, 11, Clamp, 10)                                         \
    X(ERF, 12, Erf, 10)                                             \
    X(SIGMOID, 13, Sigmoid, 10)                                     \
    X(TANH, 14, Tanh, 10)                                           \
    X(ADD, 15, Add, 10)                                             \
    X(ARITHMETIC_RIGHT_SHIFT, 16, ArithmeticRightShift, 10)         \
    X(BITWISE_AND, 17, BitwiseAnd, 10)                              \
    X(BITWISE_OR, 18, BitwiseOr, 10)                                \
    X(BITWISE_XOR, 19, BitwiseXor, 10)                              \
    X(INTDIV, 20, IntDiv, 10)                                       \
    X(LOGICAL_AND, 21, LogicalAnd, 10)                              \
    X(LOGICAL_LEFT_SHIFT, 22, LogicalLeftShift, 10)                 \
    X(LOGICAL_RIGHT_SHIFT, 23, LogicalRightShift, 10)               \
    X(LOGICAL_OR, 24, LogicalOr, 10)                                \
    X(LOGICAL_XOR, 25, LogicalXor, 10)                              \
    X(MAXIMUM, 26, Maximum, 10)                                     \
    X(MINIMUM, 27, Minimum, 10)                                     \
    X(MUL, 28, Mul, 10)                                             \
    X(POW, 29, Pow, 10)                                             \
    X(SUB, 30, Sub, 10)                                             \
    X(TABLE, 31, Table, 10)                                         \
    X(ABS, 32, Abs, 10)                                             \
    X(BITWISE_NOT, 33, BitwiseNot, 10)                              \
    X(CEIL, 34, Ceil, 10)                                           \
    X(CLZ, 35, Clz, 10)                                             \
    X(COS, 36, Cos, 10)                                             \
    X(EXP, 37, Exp, 10)                                             \
    X(FLOOR, 38, Floor, 10)                                         \
    X(LOG, 39, Log, 10)                                             \
    X(LOGICAL_NOT, 40, LogicalNot, 10)                              \
    X(NEGATE, 41, Negate, 10)                                       \
    X(RECIPROCAL, 42, Reciprocal, 10)                               \
    X(RSQRT, 43, Rsqrt, 10)                                         \
    X(SIN, 44, Sin, 10)                                             \
    X(SELECT, 45, Select, 10)                                       \
    X(EQUAL, 46, Equal, 10)                                         \
    X(GREATER, 47, Greater, 10)                                     \
    X(GREATER_EQUAL, 48, GreaterEqual, 10)                          \
    X(REDUCE_ALL, 49, ReduceAll, 10)                                \
    X(REDUCE_ANY, 50, ReduceAny, 10)                                \
    X(REDUCE_MAX, 51, ReduceMax, 10)                                \
    X(REDUCE_MIN, 52, ReduceMin, 10)                                \
    X(REDUCE_PRODUCT, 53, ReduceProduct, 10)                        \
    X(REDUCE_SUM, 54, ReduceSum, 10)                                \
    X(CONCAT, 55, Concat, 10)                                       \
    X(PAD, 56, Pad, 10)                                             \
    X(RESHAPE, 57, Reshape, 10)                                     \
    X(REVERSE, 58, Reverse, 10)                                     \
    X(SLICE, 59, Slice, 10)                                         \
    X(TILE, 60, Tile, 10)                                           \
    X(TRANSPOSE, 61, Transpose, 10)                                 \
    X(GATHER, 62, Gather, 10)                                       \
    X(SCATTER, 63, Scatter, 10)                                     \
    X(RESIZE, 64, Resize, 10)                                       \
    X(CAST, 65, Cast, 10)                                           \
    X(RESCALE, 66, Rescale, 10)                                     \
    X(CONST, 67, Const, 10)                                         \
    X(IDENTITY, 68, Identity, 10)                                   \
    X(CUSTOM, 69, Custom, 10)                                       \
    X(COND_IF, 70, CondIf, 10)                                      \
    X(WHILE_LOOP, 71, WhileLoop, 10)                                \
    X(VARIABLE, 72, Variable, 10)                                   \
    X(VARIABLE_WRITE, 73, VariableWrite, 10)                        \
    X(VARIABLE_READ, 74, VariableRead, 10)                          \
    X(CONST_SHAPE, 75, ConstShape, 10)                              \
    X(MATMUL_T_BLOCK_SCALED, 76, MatMulTBlockScaled, 11)            \
    X(CAST_FROM_BLOCK_SCALED, 77, CastFromBlockScaled, 11)          \
    X(CAST_TO_BLOCK_SCALED, 78, CastToBlockScaled, 11)              \
    X(DIM, 79, Dim, 11)                                             \
    X(CONCAT_SHAPE, 80, ConcatShape, 11)                            \
    X(ADD_SHAPE, 81, AddShape, 11)                                  \
    X(SUB_SHAPE, 82, SubShape, 11)                                  \
    X(MUL_SHAPE, 83, MulShape, 11)                                  \
    X(SLICE_SHAPE, 84, SliceShape, 11)                              \
    X(EXP2_SHAPE, 85, Exp2Shape, 11)                                \
    X(LOG2_CEIL_SHAPE, 86, Log2CeilShape, 11)                       \
    X(LOG2_FLOOR_SHAPE, 87, Log2FloorShape, 11)                     \
    X(MAX_SHAPE, 88, MaxShape, 11)                                  \
    X(MIN_SHAPE, 89, MinShape, 11)                                  \
    X(MOD_SHAPE, 90, ModShape, 11)                                  \
    X(DIV_CEIL_SHAPE, 91, DivCeilShape, 11)                         \
    X(DIV_FLOOR_SHAPE, 92, DivFloorShape, 11)                       \
    X(ASSERT_EQUAL_SHAPE, 93, AssertEqualShape, 11)                 \
    X(CONV2D_BLOCK_SCALED, 94, Conv2dBlockScaled, 11)               \
    X(MAX_POOL2D_ADAPTIVE, 95, MaxPool2dAdaptive, 11)               \
    X(AVG_POOL2D_ADAPTIVE, 96, AvgPool2dAdaptive, 11)

typedef enum ctosa_op_kind {
    CTOSA_OP_UNKNOWN = 0,
#define CTOSA_X(n, v, a, ver) CTOSA_OP_##n = v,
    CTOSA_OP_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_OP_COUNT
} ctosa_op_kind;

const char *ctosa_op_name(ctosa_op_kind op);      /* "CONV2D", or NULL */
bool ctosa_op_from_name(const char *name, ctosa_op_kind *out);
/* 10 (TOSA 1.0) or 11 (1.1 draft); 0 for an unknown value. */
int ctosa_op_min_version(ctosa_op_kind op);
bool ctosa_op_valid_in(ctosa_op_kind op, ctosa_version v);

/* ------------------------------------------------------ attribute enums */

typedef enum ctosa_nan_mode {
    CTOSA_NAN_UNKNOWN = 0,
    CTOSA_NAN_PROPAGATE = 1,
    CTOSA_NAN_IGNORE = 2
} ctosa_nan_mode;

typedef enum ctosa_resize_mode {
    CTOSA_RESIZE_UNKNOWN = 0,
    CTOSA_RESIZE_NEAREST = 1,
    CTOSA_RESIZE_BILINEAR = 2
} ctosa_resize_mode;

typedef enum ctosa_rounding_mode {
    CTOSA_ROUND_UNKNOWN = 0,
    CTOSA_ROUND_SINGLE = 1,
    CTOSA_ROUND_INEXACT = 2,
    CTOSA_ROUND_DOUBLE = 3
} ctosa_rounding_mode;

typedef enum ctosa_block_size {
    CTOSA_BLOCK_SIZE_UNKNOWN = 0,
    CTOSA_BLOCK_SIZE_32 = 32
} ctosa_block_size;

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_COMMON_H */
