/* qdq_island.h - float islands of one quantized input (qdq_island.c):
 * a chain of elementwise float operators between the DequantizeLinear(s)
 * of one integer tensor x and a QuantizeLinear, whose other operands are
 * single-valued constants; the QuantizeLinear output is then a function of
 * x and lowers to one TABLE. */
#ifndef CTOSA_QDQ_ISLAND_H
#define CTOSA_QDQ_ISLAND_H

#include "lower/quant/lower_qdq.h"

#define QDQ_ISLAND_MAX 16

enum { QS_X = 0, QS_CONST, QS_NODE };

typedef struct qdq_src {
    uint8_t kind; /* QS_X: the dequantized input; QS_CONST: v; QS_NODE: island node k */
    float v;
    uint32_t k;
} qdq_src;

typedef struct qdq_inode {
    uint32_t node; /* node index */
    uint32_t n_in;
    qdq_src src[3];
} qdq_inode;

typedef struct qdq_island {
    uint32_t n; /* operators, in evaluation order; the last is the head */
    qdq_inode nodes[QDQ_ISLAND_MAX];
    const char *x; /* the integer tensor */
    uint32_t n_dq;
    uint32_t dq[QDQ_ISLAND_MAX]; /* its DequantizeLinear nodes */
} qdq_island;

/* Whether node n is an operator an island may contain. */
bool qdq_island_op(const ctosa_onnx_node *n);
/* The island ending in node `head` (whose output the QuantizeLinear reads).
 * structural: before deciding, constants not known yet (any operand that
 * is not computed at run time counts as one); otherwise constant operands
 * must be known and hold one value. False (with *why) when it is none. */
bool qdq_island_collect(lower_session *s, arena *a, uint32_t head, bool structural, qdq_island *isl,
                        const char **why);
bool qdq_island_has(const qdq_island *isl, uint32_t ni);
/* The island's float32 value for dequantized input x (ONNX semantics). */
float qdq_island_eval(lower_session *s, const qdq_island *isl, float x);

/* The head of an island group (qdq_fold.c marks it): one TABLE. */
lower_status qdq_island_head(lower_ctx *c);

/* Quantized means (qdq_mean.c). qdq_mean_exact: the int32 sums S (of
 * x - z_x over n elements, |S| <= smax) to round_half_even(S * ratio / n)
 * + ozp in dtype `to`, exactly as the QDQ definition rounds, when ratio
 * (s_x / s_y) is a small dyadic number and the target has INTDIV; NULL
 * otherwise (the caller keeps one RESCALE). qdq_reducemean: the
 * ReduceMean head. */
const char *qdq_mean_exact(lower_ctx *c, const char *S, uint32_t rank, const int64_t *shape, int64_t n,
                           int64_t smax, double ratio, ctosa_dtype to, int64_t ozp);
lower_status qdq_reducemean(lower_ctx *c);

#endif
