/* qdq_ext.h - the second layer of quantized lowerings (issue 6): int16
 * TABLE activations (513 entries), int16 elementwise, and the int8 Resize,
 * Pad, ConvTranspose, Softmax, LayerNormalization and two-operand MatMul
 * heads (qdq_ops16.c, qdq_table.c, qdq_softmax.c, qdq_ops8.c).
 *
 * They reuse the group machinery of lower_qdq.c through the functions
 * declared here (qx_in / qx_out are lower_qdq.c's own operand and output
 * views; RESCALE with flags and CLAMP are qdq_rescale / qdq_clamp of
 * lower_qdq.h), and are reached from qdq_lower_head() through
 * qdq_ext_head(), which claims a node or leaves it to the built-in heads. */
#ifndef CTOSA_QDQ_EXT_H
#define CTOSA_QDQ_EXT_H

#include "lower/lower_qdq.h"

/* A head operand in the signed domain: carrier x (INT8 / INT16), scale,
 * signed zero point (uint8 already converted), static shape. */
typedef struct qx_in {
    const char *x;
    ctosa_dtype t;
    double s;
    int64_t zp;
    uint32_t rank;
    int64_t shape[LOWER_MAX_RANK];
} qx_in;

/* The group output: scale, signed zero point, carrier, uint8 flag, clamp
 * range (fused activation included). */
typedef struct qx_out {
    double s;
    int64_t zp;
    ctosa_dtype t;
    bool u8;
    int64_t lo, hi;
} qx_out;

/* Constant int8 weight behind a DequantizeLinear: raw int8 values, scales
 * (n = 1 or per channel along axis), common zero point. */
typedef struct qx_w {
    const int8_t *data;
    uint32_t rank;
    int64_t shape[LOWER_MAX_RANK];
    int64_t n;
    const double *scale;
    int32_t axis;
    int64_t zp;
} qx_w;

/* Wrappers over lower_qdq.c (each rejects through lw_fail on failure). */
bool qdq_x_in(lower_ctx *c, uint32_t i, qx_in *o);
bool qdq_x_out(lower_ctx *c, uint32_t rank, qx_out *o);
bool qdq_x_weight(lower_ctx *c, uint32_t i, uint32_t rank, qx_w *w);
/* Real bias values (n) of input i; NULL and *bad false when absent. */
const double *qdq_x_bias(lower_ctx *c, uint32_t i, int64_t n, bool *bad);
/* Clamp to the fused range, uint8 conversion, binds output 0. */
lower_status qdq_x_finish(lower_ctx *c, const char *y, const qx_out *o, uint32_t rank, const int64_t *shape);
/* RESCALE with nc ratios (per channel over the last axis when nc > 1). */
const char *qdq_x_rescale(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                          const int64_t *shape, int64_t nc, const double *ratio, int64_t izp, int64_t ozp);
/* Operand requantised to the output's scale / zero point / carrier. */
const char *qdq_x_requant(lower_ctx *c, const qx_in *a, const qx_out *o, uint32_t rank, const int64_t *shape);
/* Broadcast shape of two operands (numpy rules, leading ones); false when
 * they do not broadcast. as / bs: the operands' shapes padded to *rank. */
bool qdq_bcast(const qx_in *a, const qx_in *b, uint32_t *rank, int64_t *os, int64_t *as, int64_t *bs);
/* Float function of a table activation (false: not one). */
bool qdq_x_act_fn(lower_ctx *c, const char *op, double x, double *y);

/* The ext dispatcher (qdq_ops16.c): true when it handled the head (*st is
 * the result), false to leave it to lower_qdq.c. */
bool qdq_ext_head(lower_ctx *c, lower_status *st);

/* False when node n (a would-be head) has attributes the ext heads
 * reject (Pad mode other than constant, grouped ConvTranspose, ...):
 * qdq_fold.c then forms no group around it. */
bool qdq_ext_groupable(const ctosa_onnx_node *n);

/* The individual ext heads. */
lower_status qdq_table16(lower_ctx *c);                 /* qdq_table.c */
/* The int16 TABLE path for operand a, output o and float function fn. */
lower_status qdq_table16_of(lower_ctx *c, const qx_in *a, const qx_out *o, double (*fn)(void *, double), void *arg);
lower_status qdq_addsubmul(lower_ctx *c, int kind);     /* qdq_ops16.c: 0 add, 1 sub, 2 mul */
lower_status qdq_matmul_rt(lower_ctx *c);               /* qdq_ops16.c: two runtime operands */
lower_status qdq_pad(lower_ctx *c);                     /* qdq_ops8.c */
lower_status qdq_resize(lower_ctx *c);                  /* qdq_ops8.c */
lower_status qdq_convtranspose(lower_ctx *c);           /* qdq_ops8.c */
lower_status qdq_softmax(lower_ctx *c);                 /* qdq_softmax.c */
lower_status qdq_layernorm(lower_ctx *c);               /* qdq_softmax.c */

/* The 513-entry int16 table of f for input scale sx (zero point 0):
 * entries for the knots -32768 + 128 j, j = 0..512, in units of *ts,
 * midpoint-corrected (qdq_table.c). Also used by the softmax/layernorm
 * decompositions. Returns false when f is not finite anywhere it is
 * needed and no table can be made. */
bool qdq_table16_build(double (*f)(void *, double), void *arg, double sx, double lo_clip, double hi_clip,
                       int16_t *tab, double *ts);

#endif
