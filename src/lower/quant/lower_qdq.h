/* lower_qdq.h - the quantized lowerings: qdq_fold.c (the pre-pass that
 * marks DequantizeLinear -> op -> QuantizeLinear groups, and the framework
 * hooks), lower_qdq.c (operands, outputs, the table of group heads and the
 * 8-bit heads), qdq_rescale.c (requantisation arithmetic) and the heads in
 * qdq_ops8.c, qdq_ops16.c, qdq_softmax.c, qdq_rnn.c and qdq_table.c;
 * qdq_explicit.c: QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger.
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
    QR_DQ,     /* DequantizeLinear whose runtime output only feeds group heads: alias */
    QR_HEAD,   /* the op of a group: computes in integers, writes the Q's output */
    QR_ACT,    /* Relu / Clip between head and Q: fused into the head (alias) */
    QR_Q,      /* QuantizeLinear ending a group: alias */
    QR_ISLAND, /* float operator inside a one-input island (qdq_island.h) before the head: alias */
    QR_MOVE,   /* data movement between the DequantizeLinear and the QuantizeLinear heading a
                * movement chain: its own lowering on the integer carrier */
    QR_REGION  /* data movement inside a quantized movement region (qdq_region.c): its own
                * lowering on the integer carriers; each sink replays what it reads */
};

/* The longest movement chain a QuantizeLinear heads. */
#define QDQ_CHAIN_MAX 8

typedef struct qdq_node {
    uint8_t role;
    bool cand;              /* head candidate during the pre-pass */
    int32_t head;           /* QR_ACT / QR_Q: the group's head */
    int32_t act;            /* QR_HEAD: the fused activation node, -1 none */
    int32_t q;              /* QR_HEAD: the QuantizeLinear */
    struct qdq_island *isl; /* QR_HEAD of a float island: its operators and DequantizeLinears */
    /* QR_HEAD of a movement chain (a QuantizeLinear after two or more data-movement
     * operators of one DequantizeLinear's output): the operators, in order, and the
     * DequantizeLinear */
    uint32_t *chain;
    uint32_t n_chain;
    int32_t chain_dq;
    /* movement regions (qdq_region.c): rnode marks a region operator while the
     * pre-pass decides; reg is the region (connected component) of a region
     * operator, of a sink head with its activation and QuantizeLinear, and of a
     * source DequantizeLinear; -1 none */
    bool rnode;
    int32_t reg;
} qdq_node;

struct qdq_state {
    qdq_node *n;
    uint32_t count;
    bool resolved; /* candidates turned into groups (qdq_fold.c resolve) */
    int32_t n_reg; /* movement regions */
};

/* Lowerings of the framework hooks (qdq_entry, lower_qdq.c). */
lower_status qdq_lower_quantize(lower_ctx *c);
lower_status qdq_lower_dequantize(lower_ctx *c);
lower_status qdq_lower_alias(lower_ctx *c);
lower_status qdq_lower_island_member(lower_ctx *c);
lower_status qdq_lower_move(lower_ctx *c);
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

/* The parameters of the operand behind DequantizeLinear node dq (scale,
 * signed zero point, carrier, shape; no tensor: o->x NULL) and whether its
 * bits are uint8; false when it is not a per-tensor int8 / uint8 / int16
 * operand (nothing reported). */
bool qdq_dq_params(lower_ctx *c, uint32_t dq, struct qx_in *o, bool *u8);

/* Whether DequantizeLinear node ni, when its input is a constant, must
 * give a constant however large: a group head reads it (the integer
 * lowerings take weights as constants), or every consumer reads it as a
 * convolution weight (TOSA takes those as constants; a float Conv beside
 * quantized ones). Other weight-sized ones are dequantized at run time. */
bool qdq_dq_gives_constant(lower_session *s, uint32_t ni);

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
 * accumulator acc (|acc| <= acc_max) to int8 with nc ratios, output zero
 * point ozp. */
bool qdq_match_ort(const lower_ctx *c);
/* The values an int32 accumulator can hold, for all channels (n = 1) or
 * per channel of the last axis (n = the channel count): each lies in
 * [lo, hi] and is congruent to base modulo step (step 0: base itself).
 * A superset is fine (it only keeps a tie test that never fires); the
 * tie-to-even operators are emitted only for a ratio some value of the set
 * can tie on. */
typedef struct qdq_acc_set {
    int64_t n;
    const int64_t *lo, *hi, *base, *step;
} qdq_acc_set;
/* |acc| <= acc_max, nothing else known. */
const qdq_acc_set *qdq_acc_bound(lower_ctx *c, double acc_max);
/* Interval, residue and step of each output channel m < nch of an
 * integer convolution / matrix product: acc = bias[m] (integral, NULL: 0)
 * plus the sum over k < per of (x - izp)(w[m·ms + k·ks] - wzp), x any
 * value of the carrier xt (int8 / int16), the weights int8 (uint8 when
 * u8) with zero point wzp in the same bits. */
const qdq_acc_set *qdq_acc_of_weights(lower_ctx *c, ctosa_dtype xt, int64_t izp, int64_t nch, int64_t per,
                                      int64_t ms, int64_t ks, const uint8_t *w, bool u8, int64_t wzp,
                                      const double *bias);
const char *qdq_rescale_ort(lower_ctx *c, const char *acc, ctosa_dtype to, uint32_t rank, const int64_t *sh,
                            int64_t nc, const double *ratio, int64_t ozp, const qdq_acc_set *A);
/* Accumulator (holding values of A) requantised with exact ties to even
 * where TOSA can express it (qdq_rescale.c). */
const char *qdq_rescale_acc(lower_ctx *c, const char *acc, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                            const int64_t *sh, int64_t nc, const double *ratio, int64_t ozp,
                            const qdq_acc_set *A);
/* Largest |x - zp| of a signed int8 / int16 carrier value, and the
 * requantisation of an Add / Sub (z = x·ra ± y·rb) or Mul (z = x·y) int32
 * result with exact ties to even where z is exact (qdq_rescale.c). */
double qdq_operand_bound(ctosa_dtype t, int64_t zp);
const char *qdq_rescale_ewise(lower_ctx *c, const char *z, ctosa_dtype to, uint32_t rank, const int64_t *sh,
                              double ro, int64_t ozp, bool mul, double ra, double xmax, double rb,
                              double ymax);
/* One int8 / int16 operand requantised by ratio, exact ties to even
 * where they can occur (qdq_rescale.c). */
const char *qdq_rescale_x(lower_ctx *c, const char *x, ctosa_dtype ti, ctosa_dtype to, uint32_t rank,
                          const int64_t *shape, double ratio, int64_t izp, int64_t ozp);
/* s_x * s_w / s_y as ONNX Runtime's fused kernels compute it (float32). */
double qdq_acc_ratio(double sx, double sw, double sy);
/* CLAMP of x (int8/int16/int32) to [lo, hi]. */
const char *qdq_clamp(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                      int64_t lo, int64_t hi);

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

/* Group operands and output (lower_qdq.c); each rejects through lw_fail on
 * failure. Input i of the head (a folded DequantizeLinear output) in the
 * signed domain; the group output with the fused activation's range. */
bool qdq_in(lower_ctx *c, uint32_t i, qx_in *o);
bool qdq_out(lower_ctx *c, uint32_t rank, qx_out *o);
bool qdq_weight(lower_ctx *c, uint32_t i, uint32_t rank, qx_w *w);
/* Real bias values (n) of input i; NULL and *bad false when absent. */
const double *qdq_bias(lower_ctx *c, uint32_t i, int64_t n, bool *bad);
/* Clamp to the fused range, uint8 conversion, binds output 0. */
lower_status qdq_finish(lower_ctx *c, const char *y, const qx_out *o, uint32_t rank, const int64_t *shape);
/* Operand requantised to the output's scale / zero point / carrier. */
const char *qdq_requant(lower_ctx *c, const qx_in *a, const qx_out *o, uint32_t rank, const int64_t *shape);
/* Broadcast shape of two operands (numpy rules, leading ones); false when
 * they do not broadcast. as / bs: the operands' shapes padded to *rank. */
bool qdq_bcast(const qx_in *a, const qx_in *b, uint32_t *rank, int64_t *os, int64_t *as, int64_t *bs);
/* Raw constant weight: int8 or uint8 elements, zero point, scales. */
typedef struct qwt {
    const uint8_t *data;
    bool u8;
    int64_t zp;
    int64_t n;           /* scales: 1 or per output channel */
    const double *scale; /* NULL: integer output (ConvInteger / MatMulInteger) */
} qwt;

/* The integer convolution (any rank 1-3 spatial, groups) and matrix
 * product of the heads, shared with the explicit QLinear* / *Integer
 * operators (qdq_explicit.c): int32 accumulation, one requantisation to o
 * (NULL: int32 output). */
lower_status qdq_conv_core(lower_ctx *c, const qx_in *a, const int64_t *wsh, const qwt *w, const double *bias,
                           bool bias_q, const qx_out *o);
lower_status qdq_matmul_core(lower_ctx *c, const qx_in *a, int64_t bb, int64_t rows, int64_t K, int64_t Nn,
                             const uint8_t *wkn, uint8_t off, int64_t wzp, int64_t wn, const double *wscale,
                             const double *bias, double alpha, const qx_out *o, uint32_t out_rank,
                             const int64_t *out_shape);
/* Float function of a table activation at x (false: op is not one). */
bool qdq_act_fn(lower_ctx *c, const char *op, double x, double *y);
/* ONNX dtype of the quantized value behind head input i (the
 * DequantizeLinear's input), 0 when unknown; *konst: it is a constant. */
int32_t qdq_in_dtype(lower_ctx *c, uint32_t i, bool *konst);

/* The heads of a group, one row per (operator, operand width): the
 * pre-pass forms a group only around an operator with a row, and
 * qdq_lower_head() calls the row's function. */
enum {
    QDQ_W8 = 1,  /* int8 / uint8 operands and output */
    QDQ_W16 = 2, /* input 0, input 1 or the output is int16 */
    QDQ_WANY = 3
};
typedef struct qdq_head {
    const char *op;
    uint8_t widths; /* QDQ_W8 | QDQ_W16 */
    uint8_t n_data; /* leading inputs that must come from DequantizeLinear; 0: all */
    bool fuse_act;  /* a following Relu / Clip folds into the head */
    /* attributes the head rejects by themselves (NULL: none): such a node
     * is better left as DequantizeLinear -> float op -> QuantizeLinear (a
     * spec with FP can still delegate it) than a group that must go to the
     * CPU whole */
    bool (*groupable)(const ctosa_onnx_node *n);
    lower_status (*fn)(lower_ctx *c);
    /* the float function of a TABLE activation (NULL: not one) */
    double (*act)(lower_ctx *c, double x);
} qdq_head;

/* The row of node n for operand width w (QDQ_W8 or QDQ_W16; QDQ_WANY: any
 * width): the first row of the operator whose `groupable` takes n (rows of
 * one operator may split by attributes), else its first row, which rejects
 * n; NULL when n cannot head a group. */
const qdq_head *qdq_head_of(const ctosa_onnx_node *n, unsigned w);

/* Whether n only moves data (its head row is one of the data-movement
 * heads: Reshape, Transpose, Flatten, Squeeze, Slice, ...). */
bool qdq_moves_data(const ctosa_onnx_node *n);

/* Quantized data-movement regions (qdq_region.c): DequantizeLinear outputs
 * moved in float by Reshape / Transpose / Concat / Slice / ... (any
 * number of sources, sinks and branches) into QuantizeLinear or Conv
 * sinks. qdq_region_op: whether n may be a region operator.
 * qdq_region_prepass marks the structural candidates (operators and sink
 * heads), qdq_region_resolve keeps those whose sources fold and numbers the
 * regions; qdq_region_head lowers a sink: the region replayed on its
 * integer sources. */
bool qdq_region_op(const ctosa_onnx_node *n);
/* Whether n is the default-domain operator op. */
bool qdq_is_op(const ctosa_onnx_node *n, const char *op);
/* The node producing value `name`; -1 for graph inputs, initializers,
 * unknown and empty names. */
int32_t qdq_producer(lower_session *s, const char *name);
/* The one consumer of node ni's output 0; -1 when it has other outputs in
 * use, is a graph output, or has not exactly one consumer. */
int32_t qdq_sole_consumer(lower_session *s, uint32_t ni);
ctosa_error *qdq_region_prepass(lower_session *s);
/* One pass of the resolve fixpoint; true when it dropped a candidate.
 * consumer_ok(s, u): node u may read a folded DequantizeLinear. */
bool qdq_region_check(lower_session *s, bool (*consumer_ok)(lower_session *s, uint32_t u));
void qdq_region_number(lower_session *s);
lower_status qdq_region_head(lower_ctx *c);

/* Heads outside lower_qdq.c (rows of its table). */
lower_status qdq_table16(lower_ctx *c); /* qdq_table.c: int16 TABLE activations */
/* The int16 TABLE path for operand a, output o and float function fn. */
lower_status qdq_table16_of(lower_ctx *c, const qx_in *a, const qx_out *o, double (*fn)(void *, double),
                            void *arg);
lower_status qdq_add16(lower_ctx *c);     /* qdq_ops16.c: Add with an int16 side */
lower_status qdq_sub(lower_ctx *c);       /* qdq_ops16.c: Sub, any width */
lower_status qdq_mul16(lower_ctx *c);     /* qdq_ops16.c: Mul with an int16 side */
lower_status qdq_matmul_rt(lower_ctx *c); /* qdq_ops16.c: two runtime operands */
/* qdq_ops16.c: an int16 convolution input (zero point 0) as two int8
 * halves, x = 256 hi + lo (lo read with zero point -128), for a spec
 * without EXT-INT16; and whether the int32 accumulator holds every output
 * channel m < M of the int8 weights w (- off, per values a channel) and
 * integral bias (rejects with the reason otherwise). */
bool qdq_split16(lower_ctx *c, const char *x, uint32_t rank, const int64_t *shape, const char **hi,
                 const char **lo);
bool qdq_split16_fits(lower_ctx *c, const uint8_t *w, uint8_t off, int64_t M, int64_t per,
                      const double *bias);
lower_status qdq_pad(lower_ctx *c); /* qdq_ops8.c */
bool qdq_pad_groupable(const ctosa_onnx_node *n);
lower_status qdq_resize(lower_ctx *c);        /* qdq_ops8.c */
lower_status qdq_convtranspose(lower_ctx *c); /* qdq_ops8.c */
bool qdq_convtranspose_groupable(const ctosa_onnx_node *n);
lower_status qdq_softmax(lower_ctx *c);   /* qdq_softmax.c */
lower_status qdq_layernorm(lower_ctx *c); /* qdq_softmax.c */
lower_status qdq_rnn(lower_ctx *c);       /* qdq_rnn.c: LSTM, GRU, RNN */
bool qdq_rnn_groupable(const ctosa_onnx_node *n);

/* The 513-entry int16 table of f for input scale sx (zero point 0):
 * entries for the knots -32768 + 128 j, j = 0..512, in units of *ts,
 * midpoint-corrected (qdq_table.c). Also used by the softmax/layernorm
 * decompositions. Returns false when f is not finite anywhere it is
 * needed and no table can be made. */
bool qdq_table16_build(double (*f)(void *, double), void *arg, double sx, double lo_clip, double hi_clip,
                       int16_t *tab, double *ts);

#endif
