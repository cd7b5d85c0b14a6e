/* lower_qdq.h - shared between qdq_fold.c (the pre-pass that marks
 * DequantizeLinear -> op -> QuantizeLinear groups, and the framework hooks)
 * and lower_qdq.c (the integer lowerings).
 *
 * Carrier convention: a quantized ONNX value (the output of a
 * QuantizeLinear, and, inside a folded group, the float values standing for
 * it) is carried in TOSA as INT8 (INT16 for int16). uint8 values keep their
 * bits in an INT8 tensor and are only ever read or written by RESCALE with
 * input_unsigned / output_unsigned; the lowerings convert them to signed
 * int8 with zero point zp - 128 before computing. */
#ifndef CTOSA_LOWER_QDQ_H
#define CTOSA_LOWER_QDQ_H

#include "lower/lower_internal.h"

enum qdq_role {
    QR_NONE = 0,
    QR_DQ,   /* DequantizeLinear whose runtime output only feeds group heads: alias */
    QR_HEAD, /* the op of a group: computes in integers, writes the Q's output */
    QR_ACT,  /* Relu / Clip between head and Q: fused into the head (alias) */
    QR_Q,    /* QuantizeLinear ending a group: alias */
    QR_ISLAND /* float operator inside a one-input island (qdq_island.h) before the head: alias */
};

typedef struct qdq_node {
    uint8_t role;
    bool cand;    /* head candidate during the pre-pass */
    int32_t head; /* QR_ACT / QR_Q: the group's head */
    int32_t act;  /* QR_HEAD: the fused activation node, -1 none */
    int32_t q;    /* QR_HEAD: the QuantizeLinear */
    struct qdq_island *isl; /* QR_HEAD of a float island: its operators and DequantizeLinears */
} qdq_node;

struct qdq_state {
    qdq_node *n;
    uint32_t count;
    bool resolved; /* candidates turned into groups (qdq_fold.c resolve) */
};

/* Lowerings (lower_qdq.c). */
lower_status qdq_lower_quantize(lower_ctx *c);
lower_status qdq_lower_dequantize(lower_ctx *c);
lower_status qdq_lower_alias(lower_ctx *c);
lower_status qdq_lower_island_member(lower_ctx *c);
lower_status qdq_lower_cast(lower_ctx *c);
lower_status qdq_lower_head(lower_ctx *c);
lower_status qdq_lower_u8_reject(lower_ctx *c);
lower_status qdq_lower_qlinearconv(lower_ctx *c);
lower_status qdq_lower_qlinearmatmul(lower_ctx *c);
lower_status qdq_lower_convinteger(lower_ctx *c);
lower_status qdq_lower_matmulinteger(lower_ctx *c);

/* Head operand from DequantizeLinear node dq whose (aliased) integer input
 * is the TOSA tensor x: signed carrier, scale, zero point (qx_in). */
struct qx_in;
bool qdq_dq_operand(lower_ctx *c, uint32_t dq, const char *x, uint32_t rank, const int64_t *shape,
                    struct qx_in *o);

/* The group role of the context's node. */
const qdq_node *qdq_info(const lower_ctx *c);
/* Element k of a constant value as a double / int64 (any numeric dtype). */
double qdq_val_f64(const lw_val *v, uint64_t k);
uint64_t qdq_val_count(const lw_val *v);
const lw_val *qdq_const(lower_session *s, arena *a, const char *name);

/* Requantisation arithmetic (qdq_rescale.c). RESCALE of x (dtype ti, zero
 * point izp, input_unsigned iu) to dtype to (ozp, ou) by ratio, or by nc
 * per-channel ratios over the last axis; NULL (with the reason set) when a
 * ratio is outside what RESCALE can express. NULL operands propagate. */
const char *qdq_rescale_n(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                          const int64_t *shape, int64_t nc, const double *ratio, int64_t izp, int64_t ozp,
                          bool iu, bool ou);
const char *qdq_rescale(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                        const int64_t *shape, double ratio, int64_t izp, int64_t ozp, bool iu, bool ou);
/* Whether int8 requantisation emulates ONNX Runtime's rounding
 * (ctosa_lower_options.requant, never under U55), and that emulation: int32
 * accumulator acc to int8 with nc ratios, output zero point ozp, pre added
 * before rounding. */
bool qdq_match_ort(const lower_ctx *c);
const char *qdq_rescale_ort(lower_ctx *c, const char *acc, ctosa_dtype to, uint32_t rank, const int64_t *sh,
                            int64_t nc, const double *ratio, int64_t ozp, int64_t pre);
/* s_x * s_w / s_y as ONNX Runtime's fused kernels compute it (float32). */
double qdq_acc_ratio(double sx, double sw, double sy);
/* CLAMP of x (int8/int16/int32) to [lo, hi]. */
const char *qdq_clamp(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                      int64_t lo, int64_t hi);

#endif
