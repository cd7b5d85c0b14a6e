/* test_mlir_ops.c - a round trip for every TOSA 1.0 operator the
 * interpreter runs: ctosa graph -> MLIR text -> mlir-opt validation under
 * the group's spec (and rejection under the other profile) -> the upstream
 * TOSA -> LLVM pipeline -> mlir-runner -> comparison with the interpreter
 * (integers exact, floats within 1e-4 of the output's magnitude).
 *
 * Cases are batched: one graph per group holds every case of the group
 * (inputs and outputs prefixed cN_), so each group costs one validation,
 * one rejection and one pipeline run. When a batch fails, its cases are
 * run one by one to name the culprit. Operators LLVM 22 cannot lower are
 * marked with the reason (`gap`): they must still parse and validate, and
 * the test fails if one of them starts to lower (time to drop the mark).
 * Skips (77) without mlir-22-tools. */
#include "harness.h"
#include "mlir_testutil.h"

#define V(...) \
    { (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / 4 }
#define F32B(x) \
    { (const uint8_t *)(const float[]){x}, 4 }
#define I8B(x) \
    { (const uint8_t *)(const int8_t[]){x}, 1 }
#define I16B(x) \
    { (const uint8_t *)(const int16_t[]){x}, 2 }
#define P CTOSA_NAN_PROPAGATE

enum { G_FP, G_INT, G_FFT, G_COUNT };
static const char *const GROUP_SPEC[G_COUNT] = {"TOSA-1.0+FP", "TOSA-1.0+INT+int16+doubleround",
                                                "TOSA-1.0+FP+fft"};
/* The wrong spec of each group: the other profile, or no EXT-FFT. */
static const char *const GROUP_WRONG[G_COUNT] = {"TOSA-1.0+INT+int16+doubleround", "TOSA-1.0+FP",
                                                 "TOSA-1.0+FP"};

/* Signature: operands then "->" and results, space separated.
 *   f32[2,3]            a graph input (random values; <lo,hi> narrows them)
 *   i32[2,3]<1,9>       a graph input with integer values in [1, 9]
 *   f32[1]{0}           a constant (one value fills it; else every value)
 *   i8[256]{?}          a constant of random values (<lo,hi> narrows them)
 *   shape{1,2}          a CONST_SHAPE
 * dtypes: f32 f16 bf16 i4 i8 i16 i32 i48 i64 bool. */
typedef struct opcase {
    ctosa_op_kind op;
    int group;
    const char *sig;
    ctosa_attr attr;
    const char *gap; /* why LLVM 22 cannot lower it; NULL: it must run */
} opcase;

static const opcase CASES[] = {
    /* ---------------------------------------------------- float profile */
    {CTOSA_OP_ARGMAX, G_FP, "f32[2,3,4] -> i32[2,4]", {.axis = 1, .nan_mode = P}, NULL},
    {CTOSA_OP_AVG_POOL2D,
     G_FP,
     "f32[1,4,4,2] f32[1]{0} f32[1]{0} -> f32[1,2,2,2]",
     {.kernel = V(2, 2), .stride = V(2, 2), .pad = V(0, 0, 0, 0), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_CONV2D,
     G_FP,
     "f32[1,5,5,2] f32[3,3,3,2] f32[3] f32[1]{0} f32[1]{0} -> f32[1,5,5,3]",
     {.pad = V(1, 1, 1, 1), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_CONV2D,
     G_FP,
     "f16[1,4,4,2] f16[2,1,1,2] f16[2] f16[1]{0} f16[1]{0} -> f16[1,4,4,2]",
     {.pad = V(0, 0, 0, 0), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_CONV3D,
     G_FP,
     "f32[1,3,4,4,2] f32[2,2,2,2,2] f32[2] f32[1]{0} f32[1]{0} -> f32[1,2,3,3,2]",
     {.pad = V(0, 0, 0, 0, 0, 0), .stride = V(1, 1, 1), .dilation = V(1, 1, 1), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_DEPTHWISE_CONV2D,
     G_FP,
     "f32[1,4,4,2] f32[3,3,2,2] f32[4] f32[1]{0} f32[1]{0} -> f32[1,2,2,4]",
     {.pad = V(0, 0, 0, 0), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_MATMUL, G_FP, "f32[1,2,3] f32[1,3,4] f32[1]{0} f32[1]{0} -> f32[1,2,4]", {0}, NULL},
    {CTOSA_OP_MAX_POOL2D,
     G_FP,
     "f32[1,4,4,2] -> f32[1,2,2,2]",
     {.kernel = V(2, 2), .stride = V(2, 2), .pad = V(0, 0, 0, 0), .nan_mode = P},
     NULL},
    {CTOSA_OP_TRANSPOSE_CONV2D,
     G_FP,
     "f32[1,3,3,2] f32[2,3,3,2] f32[2] f32[1]{0} f32[1]{0} -> f32[1,5,5,2]",
     {.out_pad = V(0, 0, 0, 0), .stride = V(1, 1), .acc_type = CTOSA_DTYPE_FP32},
     NULL},
    {CTOSA_OP_CLAMP,
     G_FP,
     "f32[2,3] -> f32[2,3]",
     {.min_val = F32B(-1.0f), .max_val = F32B(1.0f), .nan_mode = P},
     NULL},
    {CTOSA_OP_ERF, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_SIGMOID, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_TANH, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_ADD, G_FP, "f32[2,3] f32[1,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_ADD, G_FP, "f16[2,3] f16[2,3] -> f16[2,3]", {0}, NULL},
    {CTOSA_OP_MAXIMUM, G_FP, "f32[2,3] f32[2,3] -> f32[2,3]", {.nan_mode = P}, NULL},
    {CTOSA_OP_MINIMUM, G_FP, "f32[2,3] f32[2,3] -> f32[2,3]", {.nan_mode = P}, NULL},
    {CTOSA_OP_MUL, G_FP, "f32[2,3] f32[2,3] i8[1]{0} -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_POW, G_FP, "f32[2,3]<1,3> f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_SUB, G_FP, "f32[2,3] f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_ABS, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_CEIL, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_COS, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_EXP, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_FLOOR, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_LOG, G_FP, "f32[2,3]<1,9> -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_NEGATE, G_FP, "f32[2,3] f32[1]{0} f32[1]{0} -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_RECIPROCAL, G_FP, "f32[2,3]<1,9> -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_RSQRT, G_FP, "f32[2,3]<1,9> -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_SIN, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_SELECT, G_FP, "bool[2,3] f32[2,3] f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_EQUAL, G_FP, "f32[2,3] f32[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_GREATER, G_FP, "f32[2,3] f32[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_GREATER_EQUAL, G_FP, "f32[2,3] f32[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_REDUCE_MAX, G_FP, "f32[2,3,4] -> f32[2,1,4]", {.axis = 1, .nan_mode = P}, NULL},
    {CTOSA_OP_REDUCE_MIN, G_FP, "f32[2,3,4] -> f32[2,1,4]", {.axis = 1, .nan_mode = P}, NULL},
    {CTOSA_OP_REDUCE_PRODUCT, G_FP, "f32[2,3,4] -> f32[2,1,4]", {.axis = 1}, NULL},
    {CTOSA_OP_REDUCE_SUM, G_FP, "f32[2,3,4] -> f32[2,3,1]", {.axis = 2}, NULL},
    {CTOSA_OP_CONCAT, G_FP, "f32[2,3] f32[2,2] -> f32[2,5]", {.axis = 1}, NULL},
    {CTOSA_OP_PAD, G_FP, "f32[2,3] shape{1,0,0,2} f32[1]{0.5} -> f32[3,5]", {0}, NULL},
    {CTOSA_OP_RESHAPE, G_FP, "f32[2,3] shape{3,2} -> f32[3,2]", {0}, NULL},
    {CTOSA_OP_REVERSE, G_FP, "f32[2,3] -> f32[2,3]", {.axis = 1}, NULL},
    {CTOSA_OP_SLICE, G_FP, "f32[3,4] shape{1,1} shape{2,2} -> f32[2,2]", {0}, NULL},
    {CTOSA_OP_TILE, G_FP, "f32[2,3] shape{2,1} -> f32[4,3]", {0}, NULL},
    {CTOSA_OP_TRANSPOSE, G_FP, "f32[2,3,4] -> f32[4,2,3]", {.perms = V(2, 0, 1)}, NULL},
    {CTOSA_OP_GATHER, G_FP, "f32[2,5,3] i32[2,4]<0,4> -> f32[2,4,3]", {0}, NULL},
    {CTOSA_OP_SCATTER, G_FP, "f32[2,5,3] i32[2,2]{0,3,4,1} f32[2,2,3] -> f32[2,5,3]", {0}, NULL},
    {CTOSA_OP_RESIZE,
     G_FP,
     "f32[1,3,3,2] shape{2,1,2,1} shape{0,0} shape{1,1} -> f32[1,6,6,2]",
     {.mode = CTOSA_RESIZE_NEAREST},
     NULL},
    {CTOSA_OP_RESIZE,
     G_FP,
     "f32[1,3,3,2] shape{2,1,2,1} shape{0,0} shape{1,1} -> f32[1,6,6,2]",
     {.mode = CTOSA_RESIZE_BILINEAR},
     NULL},
    {CTOSA_OP_CAST, G_FP, "f32[2,3] -> f16[2,3]", {0}, NULL},
    {CTOSA_OP_CAST, G_FP, "i8[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_CAST, G_FP, "f32[2,3]<-100,100> -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_IDENTITY, G_FP, "f32[2,3] -> f32[2,3]", {0}, NULL},
    {CTOSA_OP_CONST, G_FP, "-> f32[2,2]{1.5,-2,0.25,3}", {0}, NULL},
    /* ---------------------------------------------------- integer profile */
    {CTOSA_OP_ARGMAX, G_INT, "i8[2,3,4] -> i32[2,3]", {.axis = 2, .nan_mode = P}, NULL},
    {CTOSA_OP_AVG_POOL2D,
     G_INT,
     "i8[1,4,4,2] i8[1]{-3} i8[1]{2} -> i8[1,2,2,2]",
     {.kernel = V(2, 2), .stride = V(2, 2), .pad = V(0, 0, 0, 0), .acc_type = CTOSA_DTYPE_INT32},
     NULL},
    {CTOSA_OP_CONV2D,
     G_INT,
     "i8[1,5,5,2] i8[3,3,3,2] i32[3] i8[1]{5} i8[1]{0} -> i32[1,5,5,3]",
     {.pad = V(1, 1, 1, 1), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_INT32},
     NULL},
    {CTOSA_OP_CONV2D,
     G_INT,
     "i16[1,4,4,2] i8[2,1,1,2] i48[2]{7,-9} i16[1]{0} i8[1]{0} -> i48[1,4,4,2]",
     {.pad = V(0, 0, 0, 0), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_INT48},
     NULL},
    {CTOSA_OP_CONV3D,
     G_INT,
     "i8[1,3,4,4,2] i8[2,2,2,2,2] i32[2] i8[1]{1} i8[1]{0} -> i32[1,2,3,3,2]",
     {.pad = V(0, 0, 0, 0, 0, 0),
      .stride = V(1, 1, 1),
      .dilation = V(1, 1, 1),
      .acc_type = CTOSA_DTYPE_INT32},
     NULL},
    {CTOSA_OP_DEPTHWISE_CONV2D,
     G_INT,
     "i8[1,4,4,2] i8[3,3,2,2] i32[4] i8[1]{-1} i8[1]{0} -> i32[1,2,2,4]",
     {.pad = V(0, 0, 0, 0), .stride = V(1, 1), .dilation = V(1, 1), .acc_type = CTOSA_DTYPE_INT32},
     NULL},
    {CTOSA_OP_MATMUL, G_INT, "i8[1,2,3] i8[1,3,4] i8[1]{3} i8[1]{-2} -> i32[1,2,4]", {0}, NULL},
    {CTOSA_OP_MATMUL, G_INT, "i16[1,2,3] i16[1,3,4] i16[1]{0} i16[1]{0} -> i48[1,2,4]", {0}, NULL},
    {CTOSA_OP_MAX_POOL2D,
     G_INT,
     "i8[1,4,4,2] -> i8[1,2,2,2]",
     {.kernel = V(2, 2), .stride = V(2, 2), .pad = V(0, 0, 0, 0), .nan_mode = P},
     NULL},
    {CTOSA_OP_TRANSPOSE_CONV2D,
     G_INT,
     "i8[1,3,3,2] i8[2,3,3,2] i32[2] i8[1]{4} i8[1]{0} -> i32[1,5,5,2]",
     {.out_pad = V(0, 0, 0, 0), .stride = V(1, 1), .acc_type = CTOSA_DTYPE_INT32},
     NULL},
    {CTOSA_OP_CLAMP,
     G_INT,
     "i8[2,3] -> i8[2,3]",
     {.min_val = I8B(-5), .max_val = I8B(5), .nan_mode = P},
     NULL},
    {CTOSA_OP_CLAMP,
     G_INT,
     "i16[2,3] -> i16[2,3]",
     {.min_val = I16B(-300), .max_val = I16B(900), .nan_mode = P},
     NULL},
    {CTOSA_OP_ADD,
     G_INT,
     "i32[2,3]<-1000000000,1000000000> i32[2,3]<-1000000000,1000000000> -> i32[2,3]",
     {0},
     NULL},
    {CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, G_INT, "i32[2,3] i32[2,3]<0,31> -> i32[2,3]", {.round = true}, NULL},
    {CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, G_INT, "i8[2,3] i8[2,3]<0,7> -> i8[2,3]", {.round = false}, NULL},
    {CTOSA_OP_BITWISE_AND, G_INT, "i32[2,3] i32[2,3] -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_BITWISE_OR, G_INT, "i16[2,3] i16[2,3] -> i16[2,3]", {0}, NULL},
    {CTOSA_OP_BITWISE_XOR, G_INT, "i8[2,3] i8[2,3] -> i8[2,3]", {0}, NULL},
    {CTOSA_OP_INTDIV, G_INT, "i32[2,3] i32[2,3]<1,1000> -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_AND, G_INT, "bool[2,3] bool[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_LEFT_SHIFT, G_INT, "i32[2,3] i32[2,3]<0,31> -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_RIGHT_SHIFT, G_INT, "i32[2,3] i32[2,3]<0,31> -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_OR, G_INT, "bool[2,3] bool[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_XOR, G_INT, "bool[2,3] bool[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_MAXIMUM, G_INT, "i32[2,3] i32[2,3] -> i32[2,3]", {.nan_mode = P}, NULL},
    {CTOSA_OP_MINIMUM, G_INT, "i32[2,3] i32[2,3] -> i32[2,3]", {.nan_mode = P}, NULL},
    {CTOSA_OP_MUL, G_INT, "i32[2,3]<-30000,30000> i32[2,3]<-30000,30000> i8[1]{0} -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_MUL, G_INT, "i32[2,3]<-30000,30000> i32[2,3]<-30000,30000> i8[1]{9} -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_MUL, G_INT, "i8[2,3] i8[2,3] i8[1]{0} -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_SUB,
     G_INT,
     "i32[2,3]<-1000000000,1000000000> i32[2,3]<-1000000000,1000000000> -> i32[2,3]",
     {0},
     NULL},
    {CTOSA_OP_TABLE, G_INT, "i8[2,3] i8[256]{?} -> i8[2,3]", {0}, NULL},
    {CTOSA_OP_TABLE, G_INT, "i16[2,3] i16[513]<-1000,1000>{?} -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_ABS, G_INT, "i32[2,3]<-1000000,1000000> -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_BITWISE_NOT, G_INT, "i32[2,3] -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_CLZ, G_INT, "i32[2,3] -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_LOGICAL_NOT, G_INT, "bool[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_NEGATE, G_INT, "i8[2,3] i8[1]{3} i8[1]{-2} -> i8[2,3]", {0}, NULL},
    {CTOSA_OP_NEGATE, G_INT, "i32[2,3]<-1000000,1000000> i32[1]{0} i32[1]{0} -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_SELECT, G_INT, "bool[2,3] i8[2,3] i8[2,3] -> i8[2,3]", {0}, NULL},
    {CTOSA_OP_EQUAL, G_INT, "i32[2,3]<0,3> i32[2,3]<0,3> -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_GREATER, G_INT, "i32[2,3] i32[2,3] -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_GREATER_EQUAL, G_INT, "i32[2,3]<0,3> i32[2,3]<0,3> -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_REDUCE_ALL, G_INT, "bool[2,3,4] -> bool[2,1,4]", {.axis = 1}, NULL},
    {CTOSA_OP_REDUCE_ANY, G_INT, "bool[2,3,4] -> bool[2,3,1]", {.axis = 2}, NULL},
    {CTOSA_OP_REDUCE_MAX, G_INT, "i8[2,3,4] -> i8[1,3,4]", {.axis = 0, .nan_mode = P}, NULL},
    {CTOSA_OP_REDUCE_MIN, G_INT, "i16[2,3,4] -> i16[2,1,4]", {.axis = 1, .nan_mode = P}, NULL},
    {CTOSA_OP_REDUCE_SUM, G_INT, "i32[2,3,4]<-100000,100000> -> i32[2,1,4]", {.axis = 1}, NULL},
    {CTOSA_OP_CONCAT, G_INT, "i8[2,3] i8[1,3] i8[2,3] -> i8[5,3]", {.axis = 0}, NULL},
    {CTOSA_OP_PAD, G_INT, "i8[2,3] shape{0,1,2,0} i8[1]{-7} -> i8[3,5]", {0}, NULL},
    {CTOSA_OP_RESHAPE, G_INT, "i16[2,3,2] shape{12} -> i16[12]", {0}, NULL},
    {CTOSA_OP_REVERSE, G_INT, "i8[2,3] -> i8[2,3]", {.axis = 0}, NULL},
    {CTOSA_OP_SLICE, G_INT, "i32[3,4] shape{0,2} shape{3,2} -> i32[3,2]", {0}, NULL},
    {CTOSA_OP_TILE, G_INT, "bool[2,3] shape{1,3} -> bool[2,9]", {0}, NULL},
    {CTOSA_OP_TRANSPOSE, G_INT, "i8[2,3,4] -> i8[3,4,2]", {.perms = V(1, 2, 0)}, NULL},
    {CTOSA_OP_GATHER, G_INT, "i8[1,6,2] i32[1,3]<0,5> -> i8[1,3,2]", {0}, NULL},
    {CTOSA_OP_SCATTER, G_INT, "i16[1,4,2] i32[1,2]{3,0} i16[1,2,2] -> i16[1,4,2]", {0}, NULL},
    {CTOSA_OP_RESIZE,
     G_INT,
     "i8[1,3,3,2] shape{2,1,2,1} shape{0,0} shape{1,1} -> i8[1,6,6,2]",
     {.mode = CTOSA_RESIZE_NEAREST},
     NULL},
    {CTOSA_OP_RESIZE,
     G_INT,
     "i8[1,3,3,2] shape{2,1,2,1} shape{0,0} shape{1,1} -> i32[1,6,6,2]",
     {.mode = CTOSA_RESIZE_BILINEAR},
     NULL},
    {CTOSA_OP_CAST, G_INT, "i8[2,3] -> i32[2,3]", {0}, NULL},
    {CTOSA_OP_CAST, G_INT, "i32[2,3] -> i8[2,3]", {0}, NULL},
    {CTOSA_OP_CAST, G_INT, "bool[2,3] -> i16[2,3]", {0}, NULL},
    {CTOSA_OP_CAST, G_INT, "i32[2,3]<-1,1> -> bool[2,3]", {0}, NULL},
    {CTOSA_OP_RESCALE,
     G_INT,
     "i8[2,3] i32[1]{1073741824} i8[1]{30} i8[1]{-3} i32[1]{0} -> i32[2,3]",
     {.scale32 = true, .rounding_mode = CTOSA_ROUND_SINGLE},
     NULL},
    {CTOSA_OP_RESCALE,
     G_INT,
     "i32[2,3]<-100000,100000> i32[3]{1518500250,1073741824,2040109465} "
     "i8[3]{38,36,40} i32[1]{0} i8[1]{5} -> i8[2,3]",
     {.scale32 = true, .rounding_mode = CTOSA_ROUND_DOUBLE, .per_channel = true},
     NULL},
    {CTOSA_OP_RESCALE,
     G_INT,
     "i16[2,3] i16[1]{21845} i8[1]{16} i16[1]{0} i8[1]{0} -> i8[2,3]",
     {.scale32 = false, .rounding_mode = CTOSA_ROUND_SINGLE},
     NULL},
    {CTOSA_OP_RESCALE,
     G_INT,
     "i8[2,3] i32[1]{1073741824} i8[1]{30} i8[1]{-128} i8[1]{5} -> i8[2,3]",
     {.scale32 = true, .rounding_mode = CTOSA_ROUND_SINGLE, .input_unsigned = true},
     NULL},
    {CTOSA_OP_IDENTITY, G_INT, "i48[2,3]{1,-2,140737488355327,-140737488355328,0,5} -> i48[2,3]", {0}, NULL},
    {CTOSA_OP_IDENTITY, G_INT, "bool[9]{1,0,1,1,0,0,0,1,1} -> bool[9]", {0}, NULL},
    /* ------------------------------------------------------- EXT-FFT */
    {CTOSA_OP_FFT2D, G_FFT, "f32[1,4,4] f32[1,4,4] -> f32[1,4,4] f32[1,4,4]", {.inverse = false}, NULL},
    {CTOSA_OP_RFFT2D, G_FFT, "f32[1,4,8] -> f32[1,4,5] f32[1,4,5]", {0}, NULL},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

/* ---------------------------------------------------------- building */

typedef struct operand {
    ctosa_dtype dt;
    uint32_t rank;
    int32_t dims[8];
    bool is_shape, is_const, ranged, random;
    double lo, hi;
    uint32_t n_vals;
    double vals[600];
} operand;

static bool parse_dtype(const char **s, ctosa_dtype *dt) {
    static const struct {
        const char *n;
        ctosa_dtype t;
    } T[] = {{"f32", CTOSA_DTYPE_FP32},  {"f16", CTOSA_DTYPE_FP16},  {"bf16", CTOSA_DTYPE_BF16},
             {"i48", CTOSA_DTYPE_INT48}, {"i4", CTOSA_DTYPE_INT4},   {"i8", CTOSA_DTYPE_INT8},
             {"i16", CTOSA_DTYPE_INT16}, {"i32", CTOSA_DTYPE_INT32}, {"i64", CTOSA_DTYPE_INT64},
             {"bool", CTOSA_DTYPE_BOOL}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        size_t n = strlen(T[i].n);
        if (!strncmp(*s, T[i].n, n) && (*s)[n] == '[') {
            *dt = T[i].t;
            *s += n;
            return true;
        }
    }
    return false;
}

/* Parses one operand token at *s (advanced past it). */
static bool parse_operand(const char **s, operand *o) {
    memset(o, 0, sizeof *o);
    char *e;
    if (!strncmp(*s, "shape{", 6)) {
        o->is_shape = o->is_const = true;
        *s += 5;
    } else {
        if (!parse_dtype(s, &o->dt)) return false;
        (*s)++; /* '[' */
        while (**s != ']') {
            o->dims[o->rank++] = (int32_t)strtol(*s, &e, 10);
            *s = e;
            if (**s == ',') (*s)++;
        }
        (*s)++;
    }
    if (**s == '<') {
        o->ranged = true;
        o->lo = strtod(*s + 1, &e);
        o->hi = strtod(e + 1, &e);
        *s = e + 1;
    }
    if (!strncmp(*s, "{?}", 3)) {
        o->is_const = o->random = true;
        *s += 3;
        return true;
    }
    if (**s == '{') {
        o->is_const = true;
        (*s)++;
        while (**s != '}') {
            o->vals[o->n_vals++] = strtod(*s, &e);
            *s = e;
            if (**s == ',') (*s)++;
        }
        (*s)++;
        if (o->is_shape) o->dims[0] = (int32_t)o->n_vals, o->rank = 1;
    }
    return true;
}

static uint64_t op_count(const operand *o) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < o->rank; i++) n *= (uint64_t)o->dims[i];
    return n;
}

/* Element value k of a constant operand in its file encoding into p. */
static void put_elem(ctosa_dtype dt, uint8_t *p, uint64_t k, double v) {
    switch (dt) {
    case CTOSA_DTYPE_FP32: {
        float f = (float)v;
        memcpy(p + 4 * k, &f, 4);
        break;
    }
    case CTOSA_DTYPE_FP16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        int ex = (int)((u >> 23) & 255) - 127 + 15;
        uint16_t h =
            (uint16_t)(((u >> 16) & 0x8000) | (f == 0 ? 0 : ((unsigned)ex << 10) | ((u >> 13) & 1023)));
        memcpy(p + 2 * k, &h, 2);
        break;
    }
    case CTOSA_DTYPE_BOOL:
    case CTOSA_DTYPE_INT8: p[k] = (uint8_t)(int8_t)v; break;
    case CTOSA_DTYPE_INT16: {
        int16_t x = (int16_t)v;
        memcpy(p + 2 * k, &x, 2);
        break;
    }
    case CTOSA_DTYPE_INT32: {
        int32_t x = (int32_t)v;
        memcpy(p + 4 * k, &x, 4);
        break;
    }
    case CTOSA_DTYPE_INT48: {
        int64_t x = (int64_t)v;
        for (int b = 0; b < 6; b++) p[6 * k + (uint64_t)b] = (uint8_t)(x >> (8 * b));
        break;
    }
    default: {
        int64_t x = (int64_t)v;
        memcpy(p + 8 * k, &x, 8);
    }
    }
}

typedef struct batch {
    ctosa_graph *g;
    ctosa_block *b;
    mt_case c;
    uint64_t seed;
    uint32_t case_of_output[256];
    uint32_t n_out;
} batch;

/* A deterministic random value for operand o: floats in [-2, 2] (f16 on
 * a 1/64 grid, exact), integers over the dtype's range, bools 0/1; <lo,hi>
 * narrows them. */
static double rand_value(batch *bt, const operand *o) {
    double f = (double)(mt_rand(&bt->seed) >> 11) / 9007199254740992.0;
    bool fl = o->dt == CTOSA_DTYPE_FP32 || o->dt == CTOSA_DTYPE_FP16;
    int bits = ctosa_dtype_bits(o->dt);
    double lo = o->ranged ? o->lo : fl ? -2 : o->dt == CTOSA_DTYPE_BOOL ? 0 : -ldexp(1, bits - 1);
    double hi = o->ranged ? o->hi : fl ? 2 : o->dt == CTOSA_DTYPE_BOOL ? 1 : ldexp(1, bits - 1) - 1;
    double v = o->dt == CTOSA_DTYPE_FP32   ? lo + f * (hi - lo)
               : o->dt == CTOSA_DTYPE_FP16 ? round((lo + f * (hi - lo)) * 64) / 64
                                           : floor(lo + f * (hi - lo + 1));
    return v > hi ? hi : v;
}

/* Adds case ci to the batch: its operands (inputs, constants) and operator,
 * its results as graph outputs. */
static ctosa_error *add_case(batch *bt, uint32_t ci) {
    const opcase *oc = &CASES[ci];
    const char *s = oc->sig;
    const char *ins[8], *outs[4];
    uint32_t n_in = 0, n_out = 0;
    bool results = false;
    ctosa_error *e = NULL;
    while (*s && !e) {
        if (*s == ' ') {
            s++;
            continue;
        }
        if (!strncmp(s, "->", 2)) {
            results = true;
            s += 2;
            continue;
        }
        operand o;
        if (!parse_operand(&s, &o))
            return ctosa_error_new(CTOSA_ERR_USAGE, "case %u: bad signature at '%s'", ci, s);
        char *name = ctosa_graph_alloc(bt->g, 32);
        snprintf(name, 32, "c%u_%s%u", ci, results ? "out" : "in", results ? n_out : n_in);
        ctosa_tensor *t = NULL;
        if (o.is_shape) {
            int64_t v[16];
            for (uint32_t k = 0; k < o.n_vals; k++) v[k] = (int64_t)o.vals[k];
            if ((e = ctosa_block_add_shape(bt->g, bt->b, name, o.n_vals, v, &t))) break;
            const char *on[1] = {name};
            e = ctosa_block_add_op(bt->g, bt->b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, on, NULL, NULL);
        } else {
            if ((e = ctosa_block_add_tensor(bt->g, bt->b, name, o.dt, o.rank, o.dims, &t))) break;
            if (o.is_const) {
                uint64_t n = op_count(&o), sz = 0;
                ctosa_dtype_storage_size(o.dt, n, &sz);
                uint8_t *p = calloc(sz + 8, 1);
                for (uint64_t k = 0; k < n; k++)
                    put_elem(o.dt, p, k, o.random ? rand_value(bt, &o) : o.vals[o.n_vals == 1 ? 0 : k]);
                e = ctosa_tensor_set_data(bt->g, t, p, sz, true);
                free(p);
                const char *on[1] = {name};
                if (!e && !(results && oc->op == CTOSA_OP_CONST))
                    e = ctosa_block_add_op(bt->g, bt->b, CTOSA_OP_CONST, 0, NULL, 1, on, NULL, NULL);
            } else if (!results) {
                /* a graph input with deterministic values */
                mt_case *c = &bt->c;
                uint32_t i = c->n_in++;
                uint64_t n = op_count(&o);
                size_t es = ctosa_host_elem_size(o.dt);
                uint8_t *p = malloc(n * es + 1);
                for (uint64_t k = 0; k < n; k++) {
                    double v = rand_value(bt, &o);
                    if (o.dt == CTOSA_DTYPE_FP16) { /* host encoding = file encoding */
                        put_elem(o.dt, p, k, v);
                    } else if (es == 8) {
                        int64_t x = (int64_t)v;
                        memcpy(p + 8 * k, &x, 8);
                    } else {
                        put_elem(o.dt, p, k, v);
                    }
                }
                for (uint32_t d = 0; d < o.rank; d++) c->shapes[i][d] = o.dims[d];
                c->in[i] = (ctosa_mlir_input){t->name, o.dt, o.rank, c->shapes[i], p, n * es};
                c->data[i] = p;
                e = ctosa_block_add_input(bt->g, bt->b, name);
            }
        }
        if (results) outs[n_out++] = name;
        else ins[n_in++] = name;
    }
    if (!e && oc->op != CTOSA_OP_CONST)
        e = ctosa_block_add_op(bt->g, bt->b, oc->op, n_in, ins, n_out, outs, &oc->attr, NULL);
    for (uint32_t k = 0; !e && k < n_out; k++) {
        bt->case_of_output[bt->n_out++] = ci;
        e = ctosa_block_add_output(bt->g, bt->b, outs[k]);
    }
    return e;
}

static ctosa_error *build(batch *bt, const uint32_t *cases, uint32_t n) {
    memset(bt, 0, sizeof *bt);
    ctosa_region *r;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &bt->g);
    if (!e) e = ctosa_graph_add_region(bt->g, "main", &r);
    if (!e) e = ctosa_region_add_block(bt->g, r, "main", &bt->b);
    mt_case_init(&bt->c, bt->g, "ops.tosa");
    bt->seed = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i < n && !e; i++) e = add_case(bt, cases[i]);
    return e;
}

static void batch_free(batch *bt) {
    mt_case_free(&bt->c);
    ctosa_graph_free(bt->g);
}

/* ----------------------------------------------------------- checking */

static uint32_t g_rejected_other;
static bool g_covered[CTOSA_OP_COUNT]; /* operators with a passing round trip */

/* Under the other profile ctosa's validator and mlir-opt must agree: an
 * operator type in both profiles (int32 ADD, bool logic, ...) is accepted
 * by both, one that is not is rejected by both. */
static bool agree_on(const ctosa_graph *g, const char *path, const ctosa_spec *wrong, char *why, size_t cap) {
    ctosa_error *e = ctosa_validate(g, wrong, NULL);
    bool ours = e == NULL;
    char w[512];
    if (e) snprintf(w, sizeof w, "%s", ctosa_error_message(e));
    ctosa_error_free(e);
    bool theirs = mt_validate(path, wrong, NULL, 0) == 0;
    if (ours != theirs)
        snprintf(why, cap, "under the other profile ctosa %s, mlir-opt %s%s%s", ours ? "accepts" : "rejects",
                 theirs ? "accepts" : "rejects", ours ? "" : ": ", ours ? "" : w);
    g_rejected_other += !ours && !theirs;
    return ours == theirs;
}

typedef enum { RS_OK, RS_INVALID, RS_ACCEPTED_WRONG, RS_PIPELINE, RS_MISMATCH, RS_BUILD } result;

static result check(const uint32_t *cases, uint32_t n, int group, char *why, size_t cap) {
    batch bt;
    ctosa_error *e = build(&bt, cases, n);
    char path[256];
    snprintf(path, sizeof path, "mlir_ops_%d_%d.mlir", (int)getpid(), group);
    result r = RS_OK;
    ctosa_spec spec, wrong;
    ctosa_spec_parse(GROUP_SPEC[group], &spec);
    ctosa_spec_parse(GROUP_WRONG[group], &wrong);
    if (!e) e = ctosa_validate(bt.g, &spec, NULL);
    if (!e) e = mt_write(&bt.c, path, false);
    if (e) {
        snprintf(why, cap, "%s", ctosa_error_message(e));
        ctosa_error_free(e);
        r = RS_BUILD;
    } else if (mt_validate(path, &spec, why, cap) != 0) {
        r = RS_INVALID;
    } else if (!agree_on(bt.g, path, &wrong, why, cap)) {
        r = RS_ACCEPTED_WRONG;
    } else {
        CHECK_OK(mt_write(&bt.c, path, true));
        mt_printed pr = {0};
        double rel = 0;
        if (mt_execute(path, &pr, why, cap) != 0) r = RS_PIPELINE;
        else if (!mt_compare(&bt.c, &pr, &rel, why, cap)) r = RS_MISMATCH;
        mt_printed_free(&pr);
    }
    unlink(path);
    batch_free(&bt);
    return r;
}

/* A failing batch: halves until the failing cases stand alone. */
static void bisect(const uint32_t *cases, uint32_t n, int group) {
    if (n == 1) {
        char why[1024];
        result r = check(cases, 1, group, why, sizeof why);
        CHECK_MSG(r == RS_OK, "case %u %s (%s): %s", cases[0], ctosa_op_name(CASES[cases[0]].op),
                  CASES[cases[0]].sig, why);
        return;
    }
    for (int h = 0; h < 2; h++) {
        const uint32_t *part = cases + (h ? n / 2 : 0);
        uint32_t m = h ? n - n / 2 : n / 2;
        char why[1024];
        if (check(part, m, group, why, sizeof why) != RS_OK) bisect(part, m, group);
    }
}

static void test_operators(void) {
    bool seen[CTOSA_OP_COUNT] = {0}, gap_op[CTOSA_OP_COUNT] = {0};
    for (int gi = 0; gi < G_COUNT; gi++) {
        uint32_t run[N_CASES], n_run = 0;
        for (uint32_t i = 0; i < N_CASES; i++)
            if (CASES[i].group == gi && !CASES[i].gap) run[n_run++] = i;
        char why[1024];
        result r = check(run, n_run, gi, why, sizeof why);
        printf("  %-22s %3u cases in one graph: %s\n", GROUP_SPEC[gi], n_run,
               r == RS_OK ? "valid, other profile rejected, outputs match" : why);
        for (uint32_t k = 0; k < n_run; k++) {
            seen[CASES[run[k]].op] = true;
            if (strstr(CASES[run[k]].sig, "shape{")) seen[CTOSA_OP_CONST_SHAPE] = true;
            if (strstr(CASES[run[k]].sig, "}")) seen[CTOSA_OP_CONST] = true;
        }
        if (r != RS_OK) bisect(run, n_run, gi);
        /* The known gaps: they parse and validate, the pipeline still fails. */
        for (uint32_t i = 0; i < N_CASES; i++) {
            if (CASES[i].group != gi || !CASES[i].gap) continue;
            result r1 = check(&i, 1, gi, why, sizeof why);
            CHECK_MSG(r1 == RS_PIPELINE || r1 == RS_MISMATCH,
                      "case %u %s: marked as an LLVM 22 gap "
                      "(%s) but: %s",
                      i, ctosa_op_name(CASES[i].op), CASES[i].gap,
                      r1 == RS_OK ? "it lowers and matches now" : why);
            printf("    gap: %-22s %s\n", ctosa_op_name(CASES[i].op), CASES[i].gap);
            gap_op[CASES[i].op] = true;
        }
    }
    uint32_t n_ops = 0, n_10 = 0, n_gap = 0;
    char missing[1024] = "";
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        bool v10 = ctosa_op_valid_in((ctosa_op_kind)k, CTOSA_VERSION_1_0);
        bool cov = seen[k] || gap_op[k] || g_covered[k];
        n_10 += v10;
        n_ops += v10 && cov;
        n_gap += v10 && gap_op[k];
        if (v10 && !cov)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s",
                     ctosa_op_name((ctosa_op_kind)k));
    }
    CHECK_MSG(!missing[0], "TOSA 1.0 operators without a round trip:%s", missing);
    printf("  %u of %u TOSA 1.0 operators have a round trip (%u of them LLVM 22 gaps); %u graphs "
           "rejected under the wrong spec by both ctosa and mlir-opt\n",
           n_ops, n_10, n_gap, g_rejected_other);
}

/* ------------------------------------------- regions, variables, custom */

static ctosa_tensor *add_t(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype dt, uint32_t rank,
                           const int32_t *shape) {
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(g, b, name, dt, rank, shape, &t));
    return t;
}

static void add_op(ctosa_graph *g, ctosa_block *b, ctosa_op_kind k, uint32_t n_in, const char **in,
                   uint32_t n_out, const char **out, const ctosa_attr *a) {
    CHECK_OK(ctosa_block_add_op(g, b, k, n_in, in, n_out, out, a, NULL));
}

static void add_const(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype dt, uint32_t rank,
                      const int32_t *shape, const void *data, uint64_t size) {
    ctosa_tensor *t = add_t(g, b, name, dt, rank, shape);
    if (t) CHECK_OK(ctosa_tensor_set_data(g, t, data, size, true));
    const char *o[1] = {name};
    add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, o, NULL);
}

/* COND_IF (then: ABS, else: EXP) and WHILE_LOOP (i < 3: acc = acc * 2)
 * with their bodies as regions. */
static ctosa_graph *control_flow_graph(void) {
    ctosa_graph *g = NULL;
    ctosa_region *r;
    ctosa_block *m, *b;
    int32_t s23[2] = {2, 3};
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &m));
    add_t(g, m, "c", CTOSA_DTYPE_BOOL, 0, NULL);
    add_t(g, m, "x", CTOSA_DTYPE_FP32, 2, s23);
    add_t(g, m, "y", CTOSA_DTYPE_FP32, 2, s23);
    add_t(g, m, "i_out", CTOSA_DTYPE_INT32, 0, NULL);
    add_t(g, m, "acc_out", CTOSA_DTYPE_FP32, 2, s23);
    int32_t zero = 0;
    add_const(g, m, "i0", CTOSA_DTYPE_INT32, 0, NULL, &zero, 4);
    CHECK_OK(ctosa_block_add_input(g, m, "c"));
    CHECK_OK(ctosa_block_add_input(g, m, "x"));
    ctosa_attr a = {.then_graph = "then", .else_graph = "else"};
    const char *ci[2] = {"c", "x"}, *co[1] = {"y"};
    add_op(g, m, CTOSA_OP_COND_IF, 2, ci, 1, co, &a);
    ctosa_attr w = {.cond_graph = "cond", .body_graph = "body"};
    const char *wi[2] = {"i0", "y"}, *wo[2] = {"i_out", "acc_out"};
    add_op(g, m, CTOSA_OP_WHILE_LOOP, 2, wi, 2, wo, &w);
    CHECK_OK(ctosa_block_add_output(g, m, "acc_out"));
    CHECK_OK(ctosa_block_add_output(g, m, "i_out"));
    static const char *const bodies[2][2] = {{"then", "ABS"}, {"else", "EXP"}};
    for (int k = 0; k < 2; k++) {
        CHECK_OK(ctosa_graph_add_region(g, bodies[k][0], &r));
        CHECK_OK(ctosa_region_add_block(g, r, bodies[k][0], &b));
        add_t(g, b, "a", CTOSA_DTYPE_FP32, 2, s23);
        add_t(g, b, "z", CTOSA_DTYPE_FP32, 2, s23);
        CHECK_OK(ctosa_block_add_input(g, b, "a"));
        const char *in[1] = {"a"}, *out[1] = {"z"};
        add_op(g, b, k ? CTOSA_OP_EXP : CTOSA_OP_ABS, 1, in, 1, out, NULL);
        CHECK_OK(ctosa_block_add_output(g, b, "z"));
    }
    CHECK_OK(ctosa_graph_add_region(g, "cond", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "cond", &b));
    add_t(g, b, "i", CTOSA_DTYPE_INT32, 0, NULL);
    add_t(g, b, "acc", CTOSA_DTYPE_FP32, 2, s23);
    add_t(g, b, "go", CTOSA_DTYPE_BOOL, 0, NULL);
    int32_t three = 3;
    add_const(g, b, "n", CTOSA_DTYPE_INT32, 0, NULL, &three, 4);
    CHECK_OK(ctosa_block_add_input(g, b, "i"));
    CHECK_OK(ctosa_block_add_input(g, b, "acc"));
    const char *gi[2] = {"n", "i"}, *go[1] = {"go"};
    add_op(g, b, CTOSA_OP_GREATER, 2, gi, 1, go, NULL);
    CHECK_OK(ctosa_block_add_output(g, b, "go"));
    CHECK_OK(ctosa_graph_add_region(g, "body", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "body", &b));
    add_t(g, b, "i", CTOSA_DTYPE_INT32, 0, NULL);
    add_t(g, b, "acc", CTOSA_DTYPE_FP32, 2, s23);
    add_t(g, b, "i2", CTOSA_DTYPE_INT32, 0, NULL);
    add_t(g, b, "acc2", CTOSA_DTYPE_FP32, 2, s23);
    int32_t one = 1;
    add_const(g, b, "one", CTOSA_DTYPE_INT32, 0, NULL, &one, 4);
    CHECK_OK(ctosa_block_add_input(g, b, "i"));
    CHECK_OK(ctosa_block_add_input(g, b, "acc"));
    const char *ai[2] = {"i", "one"}, *ao[1] = {"i2"}, *di[2] = {"acc", "acc"}, *dout[1] = {"acc2"};
    add_op(g, b, CTOSA_OP_ADD, 2, ai, 1, ao, NULL);
    add_op(g, b, CTOSA_OP_ADD, 2, di, 1, dout, NULL);
    CHECK_OK(ctosa_block_add_output(g, b, "i2"));
    CHECK_OK(ctosa_block_add_output(g, b, "acc2"));
    return g;
}

/* A variable with an initial value: y = v + x; v = y (VARIABLE,
 * VARIABLE_READ, VARIABLE_WRITE). */
static ctosa_graph *variable_graph(void) {
    ctosa_graph *g = NULL;
    ctosa_region *r;
    ctosa_block *m;
    int32_t s4[1] = {4};
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &m));
    static const float init[4] = {1.5f, -2.0f, 0.25f, 8.0f};
    ctosa_tensor *v = add_t(g, m, "v", CTOSA_DTYPE_FP32, 1, s4);
    if (v) {
        v->variable = true;
        v->variable_name = "state";
        CHECK_OK(ctosa_tensor_set_data(g, v, init, sizeof init, true));
    }
    add_t(g, m, "x", CTOSA_DTYPE_FP32, 1, s4);
    add_t(g, m, "r", CTOSA_DTYPE_FP32, 1, s4);
    add_t(g, m, "y", CTOSA_DTYPE_FP32, 1, s4);
    CHECK_OK(ctosa_block_add_input(g, m, "x"));
    const char *vn[1] = {"v"}, *rn[1] = {"r"}, *ad[2] = {"r", "x"}, *yn[1] = {"y"}, *wr[2] = {"v", "y"};
    add_op(g, m, CTOSA_OP_VARIABLE, 1, vn, 0, NULL, NULL);
    add_op(g, m, CTOSA_OP_VARIABLE_READ, 1, vn, 1, rn, NULL);
    add_op(g, m, CTOSA_OP_ADD, 2, ad, 1, yn, NULL);
    add_op(g, m, CTOSA_OP_VARIABLE_WRITE, 2, wr, 0, NULL, NULL);
    CHECK_OK(ctosa_block_add_output(g, m, "y"));
    return g;
}

/* Validation under spec, rejection without the extension, the pipeline
 * and the comparison; gap: why the pipeline is expected to fail. */
static bool check_graph(ctosa_graph *g, const char *label, const char *spec_s, const char *no_ext,
                        const char *gap) {
    char path[256], why[1024];
    snprintf(path, sizeof path, "mlir_ops_%d_%s.mlir", (int)getpid(), label);
    ctosa_spec spec, wrong;
    CHECK_OK(ctosa_spec_parse(spec_s, &spec));
    CHECK_OK(ctosa_spec_parse(no_ext, &wrong));
    CHECK_OK(ctosa_validate(g, &spec, NULL));
    mt_case c;
    mt_case_init(&c, g, label);
    CHECK_OK(mt_random_inputs(&c, 7, 0));
    CHECK_OK(mt_write(&c, path, false));
    int rc = mt_validate(path, &spec, why, sizeof why);
    CHECK_MSG(rc == 0, "%s: mlir-opt rejects it under %s: %s", label, spec_s, why);
    uint32_t before = g_rejected_other;
    bool agree = agree_on(g, path, &wrong, why, sizeof why);
    CHECK_MSG(agree && g_rejected_other > before, "%s under %s: %s", label, no_ext,
              agree ? "accepted by both" : why);
    CHECK_OK(mt_write(&c, path, true));
    mt_printed pr = {0};
    double rel = 0;
    rc = mt_execute(path, &pr, why, sizeof why);
    bool ok = rc == 0 && mt_compare(&c, &pr, &rel, why, sizeof why);
    if (gap) {
        CHECK_MSG(!ok, "%s: marked as an LLVM 22 gap (%s) but it lowers and matches now", label, gap);
        printf("  %-26s valid under %s, rejected under %s; gap: %s\n", label, spec_s, no_ext, gap);
    } else {
        CHECK_MSG(ok, "%s: %s", label, why);
        printf("  %-26s valid under %s, rejected under %s, outputs match\n", label, spec_s, no_ext);
    }
    mt_printed_free(&pr);
    mt_case_free(&c);
    unlink(path);
    return ok && agree && !gap;
}

static void test_regions_variables_custom(void) {
    ctosa_graph *g = control_flow_graph();
    if (check_graph(g, "COND_IF+WHILE_LOOP", "TOSA-1.0+FP+INT+cf", "TOSA-1.0+FP+INT", NULL))
        g_covered[CTOSA_OP_COND_IF] = g_covered[CTOSA_OP_WHILE_LOOP] = true;
    ctosa_graph_free(g);
    g = variable_graph();
    if (check_graph(g, "VARIABLE_READ_WRITE", "TOSA-1.0+FP+var", "TOSA-1.0+FP", NULL))
        g_covered[CTOSA_OP_VARIABLE] = g_covered[CTOSA_OP_VARIABLE_READ] =
            g_covered[CTOSA_OP_VARIABLE_WRITE] = true;
    ctosa_graph_free(g);
    /* CUSTOM: parsed as tosa.custom with its attributes (nothing runs it) */
    int32_t s4[1] = {4};
    ctosa_region *r;
    ctosa_block *m;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &m));
    add_t(g, m, "x", CTOSA_DTYPE_FP32, 1, s4);
    add_t(g, m, "y", CTOSA_DTYPE_FP32, 1, s4);
    CHECK_OK(ctosa_block_add_input(g, m, "x"));
    static const uint8_t impl[] = {'{', '"', 'k', '"', ':', '1', '}', 0, 0xff};
    ctosa_attr ca = {.operator_name = "my_gelu",
                     .domain_name = "com.example",
                     .implementation_attrs = {impl, sizeof impl}};
    const char *xi[1] = {"x"}, *yo[1] = {"y"};
    add_op(g, m, CTOSA_OP_CUSTOM, 1, xi, 1, yo, &ca);
    CHECK_OK(ctosa_block_add_output(g, m, "y"));
    char path[256], cmd[2048], *out = NULL;
    snprintf(path, sizeof path, "mlir_ops_%d_custom.mlir", (int)getpid());
    ctosa_mlir_options o;
    ctosa_mlir_options_init(&o);
    CHECK_OK(ctosa_mlir_write_file(g, path, &o));
    snprintf(cmd, sizeof cmd, "'%s' --mlir-print-op-generic '%s' 2>&1", mt_opt, path);
    int rc = mt_sh(cmd, &out);
    CHECK_MSG(rc == 0 && out && strstr(out, "\"tosa.custom\"") &&
                  strstr(out, "implementation_attrs = \"{\\22k\\22:1}\\00\\FF\""),
              "CUSTOM: %s", out ? out : "");
    g_covered[CTOSA_OP_CUSTOM] = rc == 0;
    printf("  CUSTOM                     parsed: tosa.custom with operator_name, domain_name and "
           "the implementation bytes\n");
    free(out);
    unlink(path);
    ctosa_graph_free(g);
}

int main(void) {
    if (!mt_tools_found()) th_skip("mlir-opt / mlir-runner of LLVM 22 (mlir-22-tools) not found");
    RUN(test_regions_variables_custom);
    RUN(test_operators);
    return th_finish();
}
