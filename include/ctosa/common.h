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

/* X(NAME, value, bits per element, min version key, lower-case name,
 *   is_float: a floating-point format (ctosa_dtype_is_float)) */
/* The table is aligned by hand, one row per type. */
/* clang-format off */
#define CTOSA_DTYPE_LIST(X) \
    X(UNKNOWN,  0,  0,  10, "unknown",  0) \
    X(BOOL,     1,  8,  10, "bool",     0) \
    X(INT4,     2,  4,  10, "int4",     0) \
    X(INT8,     3,  8,  10, "int8",     0) \
    X(INT16,    4,  16, 10, "int16",    0) \
    X(INT32,    5,  32, 10, "int32",    0) \
    X(INT48,    6,  48, 10, "int48",    0) \
    X(FP32,     7,  32, 10, "fp32",     1) \
    X(FP16,     8,  16, 10, "fp16",     1) \
    X(BF16,     9,  16, 10, "bf16",     1) \
    X(SHAPE,    10, 64, 10, "shape",    0) \
    X(FP8E4M3,  11, 8,  10, "fp8e4m3",  1) \
    X(FP8E5M2,  12, 8,  10, "fp8e5m2",  1) \
    X(FP6E2M3,  13, 6,  11, "fp6e2m3",  1) \
    X(FP6E3M2,  14, 6,  11, "fp6e3m2",  1) \
    X(FP4E2M1,  15, 4,  11, "fp4e2m1",  1) \
    X(FP8UE8M0, 16, 8,  11, "fp8ue8m0", 1) \
    X(INT64,    17, 64, 11, "int64",    0) \
    X(MXINT8,   18, 8,  11, "mxint8",   0)

typedef enum ctosa_dtype {
#define CTOSA_X(n, v, b, ver, s, fl) CTOSA_DTYPE_##n = v,
    CTOSA_DTYPE_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_DTYPE_COUNT
} ctosa_dtype;
/* clang-format on */

const char *ctosa_dtype_name(ctosa_dtype t);  /* "INT8", "FP32"... or NULL */
const char *ctosa_dtype_short(ctosa_dtype t); /* "int8", "fp32"... or NULL */
/* Bits per element as stored in a file (INT4 4, INT48 48, SHAPE 64). */
int ctosa_dtype_bits(ctosa_dtype t);
/* Bytes needed to store n elements of t in a file (INT4 packs two per byte,
 * INT48 takes 6 bytes each). Returns false on overflow. */
bool ctosa_dtype_storage_size(ctosa_dtype t, uint64_t n, uint64_t *bytes);
bool ctosa_dtype_valid_in(ctosa_dtype t, ctosa_version v);
/* Whether t is a floating-point format (FP32, FP16, BF16, the FP8, FP6 and
 * FP4 formats, FP8UE8M0); BOOL, the integers and SHAPE are not. */
bool ctosa_dtype_is_float(ctosa_dtype t);

/* -------------------------------------------------------------- operators */

/*
 * Every fact about an operator is one row of this table:
 *
 *   X(NAME, value, attribute table (schema), min version key,
 *     class, layout, data slots, flags,
 *     inputs min, inputs max, outputs min, outputs max, older inputs min)
 *
 *   class       CTOSA_OP_CLASS_<class>: the chapter of the specification
 *               (elementwise UNARY/BINARY/TERNARY, REDUCE, CONV, MOVE for
 *               data layout and gather/scatter, SHAPE, ...; ctosa_op_class)
 *   layout      CTOSA_OP_LAYOUT_<layout>: how the operator relates to the
 *               order of its data axes. EW: elementwise, any permutation of
 *               the axes of its data operands and output gives the same
 *               values permuted; AXIS: the same once its `axis` attribute is
 *               permuted too; NONE: neither.
 *   data slots  bit k set when input k is a data operand of a layout EW or
 *               AXIS operator (as opposed to a zero point, shift, table or
 *               shape); a tensor list repeats its bit for every list entry.
 *   flags       letters for CTOSA_OPF_* bits (ctosa_op_props.flags):
 *               C computes values; M instead only moves or re-labels data
 *               (IDENTITY, RESHAPE, TRANSPOSE, variable access): a graph
 *               of M and D operators does no arithmetic; W the reference
 *               kernel stores every output element (no zeroing needed);
 *               D declares a value (CONST, VARIABLE: nothing runs); S has
 *               an effect beyond its outputs (state, regions, assertions).
 *   counts      operands of a conformant flatbuffer; -1 = a tensor list,
 *               any count from the minimum. VARIABLE_READ/WRITE may name
 *               their variable as one more operand (the schema's attribute
 *               tables for them are empty).
 *   older min   inputs of the same operator as written by older TOSA
 *               writers, which omit trailing compile-time inputs (MUL
 *               shift, NEGATE zero points, PAD pad_const); readers may
 *               accept exactly this count as well and default the rest.
 *
 * Adding an operator: docs/adding-an-op.md.
 */
/* The table is aligned by hand, one row per operator. */
/* clang-format off */
#define CTOSA_OP_LIST(X) \
    X(ARGMAX,                 1,  ArgMax,               10, TENSOR,   NONE, 0,   C,  1, 1,  1, 1,  1) \
    X(AVG_POOL2D,             2,  AvgPool2d,            10, TENSOR,   NONE, 0,   CW, 3, 3,  1, 1,  3) \
    X(CONV2D,                 3,  Conv2d,               10, CONV,     NONE, 0,   CW, 5, 5,  1, 1,  5) \
    X(CONV3D,                 4,  Conv3d,               10, CONV,     NONE, 0,   CW, 5, 5,  1, 1,  5) \
    X(DEPTHWISE_CONV2D,       5,  DepthwiseConv2d,      10, CONV,     NONE, 0,   CW, 5, 5,  1, 1,  5) \
    X(FFT2D,                  6,  FFT2d,                10, TENSOR,   NONE, 0,   C,  2, 2,  2, 2,  2) \
    X(MATMUL,                 7,  MatMul,               10, TENSOR,   NONE, 0,   CW, 4, 4,  1, 1,  4) \
    X(MAX_POOL2D,             8,  MaxPool2d,            10, TENSOR,   NONE, 0,   CW, 1, 1,  1, 1,  1) \
    X(RFFT2D,                 9,  RFFT2d,               10, TENSOR,   NONE, 0,   C,  1, 1,  2, 2,  1) \
    X(TRANSPOSE_CONV2D,       10, TransposeConv2d,      10, CONV,     NONE, 0,   CW, 5, 5,  1, 1,  5) \
    X(CLAMP,                  11, Clamp,                10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(ERF,                    12, Erf,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(SIGMOID,                13, Sigmoid,              10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(TANH,                   14, Tanh,                 10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(ADD,                    15, Add,                  10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(ARITHMETIC_RIGHT_SHIFT, 16, ArithmeticRightShift, 10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(BITWISE_AND,            17, BitwiseAnd,           10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(BITWISE_OR,             18, BitwiseOr,            10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(BITWISE_XOR,            19, BitwiseXor,           10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(INTDIV,                 20, IntDiv,               10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(LOGICAL_AND,            21, LogicalAnd,           10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(LOGICAL_LEFT_SHIFT,     22, LogicalLeftShift,     10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(LOGICAL_RIGHT_SHIFT,    23, LogicalRightShift,    10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(LOGICAL_OR,             24, LogicalOr,            10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(LOGICAL_XOR,            25, LogicalXor,           10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(MAXIMUM,                26, Maximum,              10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(MINIMUM,                27, Minimum,              10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(MUL,                    28, Mul,                  10, BINARY,   EW,   0x3, CW, 3, 3,  1, 1,  2) \
    X(POW,                    29, Pow,                  10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(SUB,                    30, Sub,                  10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(TABLE,                  31, Table,                10, BINARY,   EW,   0x1, C,  2, 2,  1, 1,  2) \
    X(ABS,                    32, Abs,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(BITWISE_NOT,            33, BitwiseNot,           10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(CEIL,                   34, Ceil,                 10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(CLZ,                    35, Clz,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(COS,                    36, Cos,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(EXP,                    37, Exp,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(FLOOR,                  38, Floor,                10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(LOG,                    39, Log,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(LOGICAL_NOT,            40, LogicalNot,           10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(NEGATE,                 41, Negate,               10, UNARY,    EW,   0x1, CW, 3, 3,  1, 1,  1) \
    X(RECIPROCAL,             42, Reciprocal,           10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(RSQRT,                  43, Rsqrt,                10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(SIN,                    44, Sin,                  10, UNARY,    EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(SELECT,                 45, Select,               10, TERNARY,  EW,   0x7, CW, 3, 3,  1, 1,  3) \
    X(EQUAL,                  46, Equal,                10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(GREATER,                47, Greater,              10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(GREATER_EQUAL,          48, GreaterEqual,         10, BINARY,   EW,   0x3, CW, 2, 2,  1, 1,  2) \
    X(REDUCE_ALL,             49, ReduceAll,            10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(REDUCE_ANY,             50, ReduceAny,            10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(REDUCE_MAX,             51, ReduceMax,            10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(REDUCE_MIN,             52, ReduceMin,            10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(REDUCE_PRODUCT,         53, ReduceProduct,        10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(REDUCE_SUM,             54, ReduceSum,            10, REDUCE,   AXIS, 0x1, C,  1, 1,  1, 1,  1) \
    X(CONCAT,                 55, Concat,               10, MOVE,     AXIS, 0x1, C,  1, -1, 1, 1,  1) \
    X(PAD,                    56, Pad,                  10, MOVE,     NONE, 0,   C,  3, 3,  1, 1,  2) \
    X(RESHAPE,                57, Reshape,              10, MOVE,     NONE, 0,   MW, 2, 2,  1, 1,  2) \
    X(REVERSE,                58, Reverse,              10, MOVE,     AXIS, 0x1, CW, 1, 1,  1, 1,  1) \
    X(SLICE,                  59, Slice,                10, MOVE,     NONE, 0,   CW, 3, 3,  1, 1,  3) \
    X(TILE,                   60, Tile,                 10, MOVE,     NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(TRANSPOSE,              61, Transpose,            10, MOVE,     NONE, 0,   MW, 1, 1,  1, 1,  1) \
    X(GATHER,                 62, Gather,               10, MOVE,     NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(SCATTER,                63, Scatter,              10, MOVE,     NONE, 0,   C,  3, 3,  1, 1,  3) \
    X(RESIZE,                 64, Resize,               10, IMAGE,    NONE, 0,   C,  4, 4,  1, 1,  4) \
    X(CAST,                   65, Cast,                 10, CONVERT,  EW,   0x1, CW, 1, 1,  1, 1,  1) \
    X(RESCALE,                66, Rescale,              10, CONVERT,  EW,   0x1, CW, 5, 5,  1, 1,  5) \
    X(CONST,                  67, Const,                10, DATA,     NONE, 0,   D,  0, 0,  1, 1,  0) \
    X(IDENTITY,               68, Identity,             10, DATA,     NONE, 0,   MW, 1, 1,  1, 1,  1) \
    X(CUSTOM,                 69, Custom,               10, CUSTOM,   NONE, 0,   CS, 0, -1, 0, -1, 0) \
    X(COND_IF,                70, CondIf,               10, CONTROL,  NONE, 0,   CS, 1, -1, 0, -1, 1) \
    X(WHILE_LOOP,             71, WhileLoop,            10, CONTROL,  NONE, 0,   CS, 0, -1, 0, -1, 0) \
    X(VARIABLE,               72, Variable,             10, VARIABLE, NONE, 0,   DS, 0, 0,  0, 0,  0) \
    X(VARIABLE_WRITE,         73, VariableWrite,        10, VARIABLE, NONE, 0,   MS, 1, 2,  0, 1,  1) \
    X(VARIABLE_READ,          74, VariableRead,         10, VARIABLE, NONE, 0,   M,  0, 1,  1, 1,  0) \
    X(CONST_SHAPE,            75, ConstShape,           10, SHAPE,    NONE, 0,   D,  0, 0,  1, 1,  0) \
    X(MATMUL_T_BLOCK_SCALED,  76, MatMulTBlockScaled,   11, TENSOR,   NONE, 0,   C,  4, 4,  1, 1,  4) \
    X(CAST_FROM_BLOCK_SCALED, 77, CastFromBlockScaled,  11, CONVERT,  NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(CAST_TO_BLOCK_SCALED,   78, CastToBlockScaled,    11, CONVERT,  NONE, 0,   C,  1, 1,  2, 2,  1) \
    X(DIM,                    79, Dim,                  11, SHAPE,    NONE, 0,   C,  1, 1,  1, 1,  1) \
    X(CONCAT_SHAPE,           80, ConcatShape,          11, SHAPE,    NONE, 0,   C,  1, -1, 1, 1,  1) \
    X(ADD_SHAPE,              81, AddShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(SUB_SHAPE,              82, SubShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(MUL_SHAPE,              83, MulShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(SLICE_SHAPE,            84, SliceShape,           11, SHAPE,    NONE, 0,   C,  3, 3,  1, 1,  3) \
    X(EXP2_SHAPE,             85, Exp2Shape,            11, SHAPE,    NONE, 0,   C,  1, 1,  1, 1,  1) \
    X(LOG2_CEIL_SHAPE,        86, Log2CeilShape,        11, SHAPE,    NONE, 0,   C,  1, 1,  1, 1,  1) \
    X(LOG2_FLOOR_SHAPE,       87, Log2FloorShape,       11, SHAPE,    NONE, 0,   C,  1, 1,  1, 1,  1) \
    X(MAX_SHAPE,              88, MaxShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(MIN_SHAPE,              89, MinShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(MOD_SHAPE,              90, ModShape,             11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(DIV_CEIL_SHAPE,         91, DivCeilShape,         11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(DIV_FLOOR_SHAPE,        92, DivFloorShape,        11, SHAPE,    NONE, 0,   C,  2, 2,  1, 1,  2) \
    X(ASSERT_EQUAL_SHAPE,     93, AssertEqualShape,     11, SHAPE,    NONE, 0,   CS, 2, 2,  0, 0,  2) \
    X(CONV2D_BLOCK_SCALED,    94, Conv2dBlockScaled,    11, CONV,     NONE, 0,   C,  8, 8,  1, 1,  8) \
    X(MAX_POOL2D_ADAPTIVE,    95, MaxPool2dAdaptive,    11, TENSOR,   NONE, 0,   C,  4, 4,  1, 1,  4) \
    X(AVG_POOL2D_ADAPTIVE,    96, AvgPool2dAdaptive,    11, TENSOR,   NONE, 0,   C,  6, 6,  1, 1,  6)

typedef enum ctosa_op_kind {
    CTOSA_OP_UNKNOWN = 0,
#define CTOSA_X(n, v, a, ver, cls, lay, slots, fl, i0, i1, o0, o1, iold) CTOSA_OP_##n = v,
    CTOSA_OP_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_OP_COUNT
} ctosa_op_kind;
/* clang-format on */

const char *ctosa_op_name(ctosa_op_kind op); /* "CONV2D", or NULL */
bool ctosa_op_from_name(const char *name, ctosa_op_kind *out);
/* 10 (TOSA 1.0) or 11 (1.1 draft); 0 for an unknown value. */
int ctosa_op_min_version(ctosa_op_kind op);
bool ctosa_op_valid_in(ctosa_op_kind op, ctosa_version v);

/* The class of an operator: the chapter of the specification it is in. */
typedef enum ctosa_op_class {
    CTOSA_OP_CLASS_TENSOR,   /* ARGMAX, pooling, MATMUL, FFT */
    CTOSA_OP_CLASS_CONV,     /* convolutions */
    CTOSA_OP_CLASS_UNARY,    /* elementwise unary and activation functions */
    CTOSA_OP_CLASS_BINARY,   /* elementwise binary (with TABLE) and comparisons */
    CTOSA_OP_CLASS_TERNARY,  /* SELECT */
    CTOSA_OP_CLASS_REDUCE,   /* REDUCE_* */
    CTOSA_OP_CLASS_MOVE,     /* data layout, GATHER and SCATTER */
    CTOSA_OP_CLASS_IMAGE,    /* RESIZE */
    CTOSA_OP_CLASS_CONVERT,  /* CAST, RESCALE and the block-scaled casts */
    CTOSA_OP_CLASS_DATA,     /* CONST, IDENTITY */
    CTOSA_OP_CLASS_CUSTOM,   /* CUSTOM */
    CTOSA_OP_CLASS_CONTROL,  /* COND_IF, WHILE_LOOP */
    CTOSA_OP_CLASS_VARIABLE, /* VARIABLE, VARIABLE_READ, VARIABLE_WRITE */
    CTOSA_OP_CLASS_SHAPE     /* CONST_SHAPE and the 1.1 shape operators */
} ctosa_op_class;

/* How an operator follows a permutation of its data axes (see the table). */
typedef enum ctosa_op_layout {
    CTOSA_OP_LAYOUT_NONE,
    CTOSA_OP_LAYOUT_EW,  /* elementwise: data operands and output permute alike */
    CTOSA_OP_LAYOUT_AXIS /* likewise once the axis attribute is permuted */
} ctosa_op_layout;

#define CTOSA_OPF_COMPUTES (1u << 0)    /* computes values (else declares or re-labels) */
#define CTOSA_OPF_WRITES_ALL (1u << 1)  /* its reference kernel stores every output element */
#define CTOSA_OPF_DECLARES (1u << 2)    /* declares a value; nothing runs */
#define CTOSA_OPF_SIDE_EFFECT (1u << 3) /* effect beyond its outputs: state, regions, asserts */

/* One row of CTOSA_OP_LIST as data. Counts of -1: a tensor list. */
typedef struct ctosa_op_props {
    ctosa_op_class op_class;
    ctosa_op_layout layout;
    uint32_t data_slots; /* bit k: input k is a data operand (layout EW / AXIS) */
    uint32_t flags;      /* CTOSA_OPF_* */
    int8_t min_inputs, max_inputs, min_outputs, max_outputs;
    int8_t older_min_inputs; /* inputs older writers give (<= min_inputs) */
} ctosa_op_props;

/* The properties of op; NULL for a value that is not an operator. */
const ctosa_op_props *ctosa_op_props_of(ctosa_op_kind op);
/* Whether n_in inputs and n_out outputs fit op's counts. older: also accept
 * exactly the older writers' input count. False for unknown operators. */
bool ctosa_op_counts_fit(ctosa_op_kind op, uint32_t n_in, uint32_t n_out, bool older);
/* Whether input `slot` of op is a data operand (ctosa_op_props.data_slots,
 * with a tensor list's bit repeated over the list). */
bool ctosa_op_is_data_slot(ctosa_op_kind op, uint32_t slot);
/* ctosa_op_props_of(op)->flags & flag, false for unknown operators. */
bool ctosa_op_has(ctosa_op_kind op, uint32_t flag);

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

typedef enum ctosa_block_size { CTOSA_BLOCK_SIZE_UNKNOWN = 0, CTOSA_BLOCK_SIZE_32 = 32 } ctosa_block_size;

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_COMMON_H */
