/*
 * lower_ew.h - helpers shared by the elementwise, unary, activation and cast
 * lowering families (lower_ewise.c, lower_unary.c, lower_activation.c,
 * lower_cast.c). Implemented in lower_ewise.c.
 *
 * Values are handled as `ew_v` (TOSA tensor name + dtype + static shape) so
 * decompositions read like the formulas they implement:
 *
 *     ew_v x;  EW_IN(c, 0, &x);
 *     ew_v y = ew_bin(c, CTOSA_OP_MUL, x, ew_k(c, x, 0.5));
 *     return ew_out(c, 0, y);
 *
 * Every emitting helper takes and returns values by copy. When an emission
 * fails (allocation), the result's name is NULL, later helpers pass the NULL
 * on, and ew_out() turns it into internal_error: callers need no checks in
 * the middle of a formula.
 *
 * Binary helpers broadcast: the lower-rank operand is RESHAPEd with leading
 * 1s, the output shape is the numpy broadcast of both. Callers must have
 * checked that shapes are broadcast-compatible (ew_bcast()).
 */
#ifndef CTOSA_LOWER_EW_H
#define CTOSA_LOWER_EW_H

#include "lower/lower.h"

typedef struct ew_v {
    const char *n;   /* TOSA tensor name; NULL after a failed emission */
    ctosa_dtype t;
    uint32_t r;
    int64_t s[LOWER_MAX_RANK];
    /* 1 + node input index when this value is that constant input as read
     * (ew_rank then re-emits the constant at the new rank instead of a
     * RESHAPE); 0 for everything computed. */
    uint32_t cin;
} ew_v;

/* Reads input i into *v (static shape and a TOSA dtype required); on
 * failure the node is rejected and the calling lowering must return. */
#define EW_IN(c, i, v)                                             \
    do {                                                           \
        lower_status st_ = ew_in((c), (i), (v));                   \
        if (st_ != LOWER_OK) return st_;                           \
    } while (0)

lower_status ew_in(lower_ctx *c, uint32_t i, ew_v *v);
/* TOSA dtype for an ONNX dtype; rejects unsupported_dtype /
 * int64_not_enabled naming `what` when there is none. */
lower_status ew_dtype(lower_ctx *c, int32_t onnx_dtype, const char *what, ctosa_dtype *out);
/* Broadcast-compatibility of n values (rejects with unsupported_attribute
 * naming the shapes when incompatible). */
lower_status ew_bcast(lower_ctx *c, uint32_t n, const ew_v *v);
/* Binds output i; internal_error when v failed to emit. */
lower_status ew_out(lower_ctx *c, uint32_t i, ew_v v);

bool ew_is_int(ctosa_dtype t); /* INT8/16/32/64 */

/* A constant of dtype `like.t` (or t) broadcastable against `like`. */
ew_v ew_k(lower_ctx *c, ew_v like, double v);
ew_v ew_kt(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v);
/* RESHAPE to `rank` with leading 1s (no-op when equal); a constant input
 * is re-emitted as a CONST of the new shape instead. */
ew_v ew_rank(lower_ctx *c, ew_v a, uint32_t rank);
/* Binary op with broadcasting. Output dtype: BOOL for EQUAL / GREATER /
 * GREATER_EQUAL / LOGICAL_*, else a.t. MUL gets its shift input, MAXIMUM /
 * MINIMUM nan_mode PROPAGATE. */
ew_v ew_bin(lower_ctx *c, ctosa_op_kind k, ew_v a, ew_v b);
/* Unary op (NEGATE gets its zero points). */
ew_v ew_un(lower_ctx *c, ctosa_op_kind k, ew_v a);
ew_v ew_cast(lower_ctx *c, ew_v a, ctosa_dtype t); /* no-op when same dtype */
ew_v ew_select(lower_ctx *c, ew_v cond, ew_v a, ew_v b);
ew_v ew_identity(lower_ctx *c, ew_v a);
/* min(max(a, lo), hi): CLAMP for float / int8 / int16, MAXIMUM+MINIMUM
 * for int32 / int64 (CLAMP has no such rows). lo/hi are clipped to the
 * dtype's range; infinite bounds are kept for floats. */
ew_v ew_clamp(lower_ctx *c, ew_v a, double lo, double hi);

/* Shorthands. */
ew_v ew_add(lower_ctx *c, ew_v a, ew_v b);
ew_v ew_sub(lower_ctx *c, ew_v a, ew_v b);
ew_v ew_mul(lower_ctx *c, ew_v a, ew_v b);
ew_v ew_addk(lower_ctx *c, ew_v a, double v);
ew_v ew_mulk(lower_ctx *c, ew_v a, double v); /* returns a when v == 1 */
/* a / b for floats: a * RECIPROCAL(b). */
ew_v ew_fdiv(lower_ctx *c, ew_v a, ew_v b);

/* Integer ops TOSA only has for int32: INT8 / INT16 are sign-extended to
 * INT32 first (ew_widen) and the result CAST back, which wraps exactly as
 * ONNX / numpy integer arithmetic does (ew_narrow). */
ew_v ew_widen(lower_ctx *c, ew_v a);
ew_v ew_narrow(lower_ctx *c, ew_v a, ctosa_dtype t);

/* Family tables (lower_registry.c lists them). */
extern const lower_entry lower_table_ewise[];
extern const lower_entry lower_table_unary[];
extern const lower_entry lower_table_activation[];
extern const lower_entry lower_table_cast[];

#endif /* CTOSA_LOWER_EW_H */
