/* interp_fuse.h - element-wise chains: a list of element-wise steps applied
 * to a row of elements in one pass (each step reads its operands and writes
 * its result for the whole row before the next step runs, so rows should be
 * small enough to stay in L1: the plan uses FZ_TILE elements).
 *
 * Two users:
 *  - the plan (interp_fuse_chains): runs of element-wise operators over
 *    tensors of one shape become one group, executed tile by tile over
 *    memory, with the intermediate tensors only ever held in tile buffers;
 *  - kernels that want to apply a small activation as they store their
 *    results (fz_run_row on a row of fp32 values, with per-channel
 *    constants given as slots pointing at the row's channels).
 *
 * Every step computes exactly what the operator's kernel computes
 * (kernels_ewise.c, kernels_activation.c, CAST in kernels_convert.c) on the
 * fast paths, element for element and bit for bit, and checks the same
 * REQUIREs.
 *
 * Using the row API: describe each step (op, operand types, the slots of
 * its operands and of its result), point slots[k] at the row of slot k
 * (n elements; or one element when the step's `one` bit for that operand
 * is set: a scalar), and call fz_run_row. A step's result slot must not be
 * one of its operand slots (the loops vectorise only without overlap).
 * Example, hard-swish x * clamp(x + 3, 0, 6) * (1/6) on a row x of n fp32
 * values with two scratch rows r1, r2:
 *
 *     fz_step s[3] = {
 *         {.op = FZ_ADD, .t = FZ_F32, .to = FZ_F32, .dst = 2, .src = {0, 1}, .one = 2},
 *         {.op = FZ_CLAMP, .t = FZ_F32, .to = FZ_F32, .dst = 3, .src = {2}, .flo = 0, .fhi = 6},
 *         {.op = FZ_MUL, .t = FZ_F32, .to = FZ_F32, .dst = 2, .src = {0, 3}},
 *     };   (then a fourth step multiplying by a scalar 1/6 in slot 4)
 *     void *slots[] = {x, &three, r1, r2, &sixth};
 *     fz_run_row(s, 3, slots, n, NULL);
 */
#ifndef CTOSA_INTERP_FUSE_H
#define CTOSA_INTERP_FUSE_H

#include "interp_internal.h"

/* Element types of the steps (canonical storage, interp_internal.h). */
typedef enum fz_type { FZ_F32, FZ_I8, FZ_I16, FZ_I32, FZ_BOOL } fz_type;

typedef enum fz_op {
    /* binary: src[0], src[1] of type t; result of type to (bool for the
     * comparisons, int32 for MUL of int8 / int16) */
    FZ_ADD,
    FZ_SUB,
    FZ_MUL, /* int32: shift as the operator's shift operand */
    FZ_MAX,
    FZ_MIN, /* fp32: ignore_nan for nan_mode IGNORE */
    FZ_POW,
    FZ_INTDIV,
    FZ_GT,
    FZ_GE,
    FZ_EQ,
    FZ_AND,
    FZ_OR,
    FZ_XOR,
    FZ_SHL,
    FZ_SHR, /* logical */
    FZ_ASR, /* round as the operator's attribute */
    FZ_LAND,
    FZ_LOR,
    FZ_LXOR,
    /* unary */
    FZ_ABS,
    FZ_NEG, /* integers: zp_in, zp_out */
    FZ_FLOOR,
    FZ_CEIL,
    FZ_EXP,
    FZ_LOG,
    FZ_RECIP,
    FZ_RSQRT,
    FZ_SIGMOID,
    FZ_TANH,
    FZ_ERF,
    FZ_SIN,
    FZ_COS,
    FZ_SILU, /* x * sigmoid(x), as the plan's fused SiLU */
    FZ_NOT,  /* BITWISE_NOT */
    FZ_LNOT,
    FZ_CLZ,
    FZ_CLAMP, /* fp32: flo, fhi, ignore_nan; integers: ilo, ihi */
    FZ_CAST,  /* t -> to */
    /* ternary: SELECT(src[0] bool, src[1], src[2]) of type t */
    FZ_SELECT,
    FZ_N_OPS
} fz_op;

typedef struct fz_step {
    uint8_t op;     /* fz_op */
    uint8_t t, to;  /* fz_type of the (value) operands and of the result */
    uint8_t dst;    /* slot of the result */
    uint8_t src[3]; /* slots of the operands */
    uint8_t one;    /* bit k: src[k] holds one value used for every element */
    bool ignore_nan;
    bool round;
    int32_t shift;         /* MUL int32: 0..63 */
    int32_t zp_in, zp_out; /* NEGATE on integers */
    int32_t ilo, ihi;      /* CLAMP on integers */
    float flo, fhi;        /* CLAMP on fp32 */
} fz_step;

/* REQUIRE failures, as the element-wise kernels report them
 * (interp_ew_require). */
enum { FZ_E_NONE, FZ_E_OVERFLOW, FZ_E_DIV0, FZ_E_SHIFT };

typedef struct fz_fail {
    uint32_t step; /* the first step (in order) whose REQUIRE failed */
    int kind;      /* FZ_E_* */
    size_t at;     /* its first failing element in the row */
    double a, b;   /* the operands there */
} fz_fail;

/* Whether fz_run_row implements op on operands of type t giving to. */
bool fz_supported(fz_op op, fz_type t, fz_type to);

/* Runs the steps in order over the n elements of a row (see the top of
 * this file). Returns true when every REQUIRE held; otherwise fills *fail
 * (when not NULL) with the first failing step and element; steps after a
 * failure still run (on the wrapped values). */
bool fz_run_row(const fz_step *steps, uint32_t n_steps, void *const *slots, size_t n, fz_fail *fail);

/* Elements per tile when the plan runs a group over a tensor: FZ_TILE,
 * or up to FZ_TILE_MAX when the group's tile buffers stay within
 * FZ_TILE_L1 bytes (a part of the L1 data cache). */
#define FZ_TILE 512
#define FZ_TILE_MAX 2048
#define FZ_TILE_L1 24576
/* Groups are made over outputs of at least this many elements (below, the
 * operators' own passes stay in cache and a group saves less than it
 * costs to set up). */
#define FZ_MIN_COUNT 2048
/* Broadcast runs and periods of at least this many elements are read in
 * place (tiles are cut at their ends); shorter ones are copied per tile. */
#define FZ_MIN_ROW 256

/* The REQUIRE message of an element-wise kernel: "<where>: REQUIRE failed
 * at output element N: ..." (kernels_ewise.c; kind FZ_E_*). */
ctosa_error *interp_ew_require(const interp_op *o, int kind, uint64_t at, double a, double b);

/* ------------------------------------------------ the plan's groups */
typedef struct fz_group fz_group;
struct rplan;
struct ctosa_interp;

/* Plan-time grouping (interp_core.c calls it once the block's constants
 * are loaded, before activation memory is placed): maximal runs of
 * element-wise operators, consecutive in the block (operators that do
 * nothing at run time, such as CONST, may sit between them), whose outputs
 * have one shape and whose every check passes on the planned shapes,
 * types and constant operands, become one group. The group runs where its
 * first operator ran (interp_k_fused_CHAIN), tile by tile: each tile goes
 * through every step before the next tile starts. Tensors read only inside
 * the group are never stored; the others (read later, or block outputs)
 * are written as the group computes them. Operands from outside the group
 * are read in place (same shape), as one value (one element), or, when
 * broadcast as a row repeated along the leading dimensions (per channel)
 * or as values each repeated along the trailing dimensions (per row: a
 * softmax's maximum, a normalisation's mean), read in place by tiles cut
 * at the runs' ends or, for runs shorter than FZ_MIN_ROW, copied into a
 * tile buffer. An operator with any other broadcast ends the group, and
 * groups are only made over outputs of FZ_MIN_COUNT elements or more. A
 * SiLU the plan fused already is one step. A REQUIRE failure reports the
 * earliest operator's first failing element, as the operators run one by
 * one would. Not done with options.reference or in blocks with control
 * flow. */
void interp_fuse_chains(struct ctosa_interp *it, struct rplan *p);
ctosa_error *interp_k_fused_CHAIN(const interp_op *o);

#endif
