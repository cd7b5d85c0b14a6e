/* qdq_explicit.c - the operators that carry their quantization
 * parameters as inputs (QLinearConv, ConvInteger, QLinearMatMul,
 * MatMulInteger): operands read from the node itself, then the same integer
 * convolution and matrix-product cores as the DequantizeLinear -> op ->
 * QuantizeLinear heads (lower_qdq.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

/* ------------------------------------------------- QLinear* / *Integer */

/* Operand from the node's own inputs: data ix, scale is (UINT32_MAX: 1),
 * zero point iz (absent: 0), as a signed tensor. */
static bool qa_explicit(lower_ctx *c, uint32_t ix, uint32_t is, uint32_t iz, qx_in *o) {
    const lower_value *X = lw_in(c, ix);
    if (!X) return false;
    memset(o, 0, sizeof *o);
    o->s = 1.0;
    if (is != UINT32_MAX) {
        const double *sv = NULL;
        if (lw_const_f64(c, is, &sv) != 1) {
            lw_fail(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, is) ? lw_node(c)->inputs[is] : NULL,
                    "%s: the scale must be a one-element constant", lw_node(c)->op_type);
            return false;
        }
        o->s = sv[0];
    }
    int64_t zp = 0;
    if (lw_has_input(c, iz)) {
        const int64_t *zv = NULL;
        int64_t n = lw_const_i64(c, iz, &zv);
        if (n < 1) {
            lw_fail(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[iz], "%s: the zero point must be a constant",
                    lw_node(c)->op_type);
            return false;
        }
        for (int64_t k = 1; k < n; k++)
            if (zv[k] != zv[0]) {
                lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: per-row zero points", lw_node(c)->op_type);
                return false;
            }
        zp = zv[0];
    }
    bool u8 = X->onnx_dtype == CTOSA_ONNX_UINT8;
    if (!u8 && X->onnx_dtype != CTOSA_ONNX_INT8) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, X->name, "%s: input type is not int8/uint8", lw_node(c)->op_type);
        return false;
    }
    o->t = CTOSA_DTYPE_INT8;
    o->zp = zp - (u8 ? 128 : 0);
    o->rank = X->rank;
    memcpy(o->shape, X->shape, sizeof o->shape);
    if (X->data) {
        uint64_t cnt = (uint64_t)lw_count(X->rank, X->shape);
        uint8_t *b = arena_alloc(lw_arena(c), (size_t)cnt + 8);
        if (!b) return false;
        for (uint64_t k = 0; k < cnt; k++) b[k] = (uint8_t)(((const uint8_t *)X->data)[k] - (u8 ? 128 : 0));
        o->x = lw_const(c, CTOSA_DTYPE_INT8, X->rank, X->shape, b);
    } else {
        o->x = lw_input(c, ix);
        if (u8)
            o->x = qdq_rescale(c, o->x, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, X->rank, X->shape, 1.0, zp, o->zp,
                               true, false);
    }
    return o->x != NULL;
}

static bool qo_explicit(lower_ctx *c, uint32_t is, uint32_t iz, qx_out *o) {
    const double *sv = NULL;
    if (lw_const_f64(c, is, &sv) != 1) {
        lw_fail(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, is) ? lw_node(c)->inputs[is] : NULL,
                "%s: the output scale must be a one-element constant", lw_node(c)->op_type);
        return false;
    }
    const int64_t *zv = NULL;
    int64_t zp = 0;
    int32_t od = CTOSA_ONNX_UINT8;
    if (lw_has_input(c, iz)) {
        if (lw_const_i64(c, iz, &zv) != 1) {
            lw_fail(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[iz],
                    "%s: the output zero point must be a constant", lw_node(c)->op_type);
            return false;
        }
        zp = zv[0];
        od = lw_in(c, iz)->onnx_dtype;
    }
    if (od != CTOSA_ONNX_UINT8 && od != CTOSA_ONNX_INT8) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: output type is not int8/uint8", lw_node(c)->op_type);
        return false;
    }
    o->u8 = od == CTOSA_ONNX_UINT8;
    o->t = CTOSA_DTYPE_INT8;
    o->s = sv[0];
    o->zp = zp - (o->u8 ? 128 : 0);
    o->lo = -128;
    o->hi = 127;
    return true;
}

/* Constant weight from the node's own inputs (data iw, scales is or
 * UINT32_MAX, zero point iz). */
static bool qwt_explicit(lower_ctx *c, uint32_t iw, uint32_t is, uint32_t iz, qwt *w, const lower_value **W) {
    *W = lw_in(c, iw);
    if (!*W || !(*W)->data) {
        lw_fail(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, iw) ? lw_node(c)->inputs[iw] : NULL,
                "%s: the weight must be a constant", lw_node(c)->op_type);
        return false;
    }
    memset(w, 0, sizeof *w);
    w->data = (*W)->data;
    w->u8 = (*W)->onnx_dtype == CTOSA_ONNX_UINT8;
    if (!w->u8 && (*W)->onnx_dtype != CTOSA_ONNX_INT8) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, (*W)->name, "%s: weight type is not int8/uint8",
                lw_node(c)->op_type);
        return false;
    }
    w->n = 1;
    if (is != UINT32_MAX) {
        const double *sv = NULL;
        w->n = lw_const_f64(c, is, &sv);
        if (w->n < 1) {
            lw_fail(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[is],
                    "%s: the weight scale must be a constant", lw_node(c)->op_type);
            return false;
        }
        w->scale = sv;
    }
    if (lw_has_input(c, iz)) {
        const int64_t *zv = NULL;
        int64_t n = lw_const_i64(c, iz, &zv);
        if (n < 1) {
            lw_fail(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[iz],
                    "%s: the weight zero point must be a constant", lw_node(c)->op_type);
            return false;
        }
        for (int64_t k = 1; k < n; k++)
            if (zv[k] != zv[0]) {
                lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: weight zero points differ per channel",
                        lw_node(c)->op_type);
                return false;
            }
        w->zp = zv[0];
    }
    return true;
}

static lower_status explicit_conv(lower_ctx *c, bool qlinear) {
    qx_in a;
    qwt w;
    qx_out o;
    const lower_value *W;
    if (qlinear) {
        if (!qa_explicit(c, 0, 1, 2, &a) || !qwt_explicit(c, 3, 4, 5, &w, &W) || !qo_explicit(c, 6, 7, &o))
            return LOWER_REJECT;
    } else if (!qa_explicit(c, 0, UINT32_MAX, 2, &a) || !qwt_explicit(c, 1, UINT32_MAX, 3, &w, &W)) {
        return LOWER_REJECT;
    }
    if (W->rank != 4)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: only 2-D convolutions", lw_node(c)->op_type);
    const double *bias = NULL;
    if (qlinear && lw_has_input(c, 8) && lw_const_f64(c, 8, &bias) != W->shape[0])
        return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[8],
                         "QLinearConv: B must be a constant of M values");
    return qdq_conv_core(c, &a, W->shape, &w, bias, true, qlinear ? &o : NULL);
}

static lower_status explicit_matmul(lower_ctx *c, bool qlinear) {
    qx_in a;
    qwt w;
    qx_out o;
    const lower_value *B;
    if (qlinear) {
        if (!qa_explicit(c, 0, 1, 2, &a) || !qwt_explicit(c, 3, 4, 5, &w, &B) || !qo_explicit(c, 6, 7, &o))
            return LOWER_REJECT;
    } else if (!qa_explicit(c, 0, UINT32_MAX, 2, &a) || !qwt_explicit(c, 1, UINT32_MAX, 3, &w, &B)) {
        return LOWER_REJECT;
    }
    if (a.rank < 2 || B->rank < 2 || B->rank > 3 ||
        (B->rank == 3 && (a.rank != 3 || a.shape[0] != B->shape[0])))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: operand ranks %u and %u are not handled",
                         lw_node(c)->op_type, a.rank, B->rank);
    int64_t K = B->shape[B->rank - 2], Nn = B->shape[B->rank - 1], bb = B->rank == 3 ? B->shape[0] : 1;
    if (a.shape[a.rank - 1] != K)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: inner sizes differ", lw_node(c)->op_type);
    if (w.n > 1 && w.n != Nn)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: weight scales must be per column",
                         lw_node(c)->op_type);
    int64_t rows = 1;
    for (uint32_t i = bb > 1 ? 1 : 0; i + 1 < a.rank; i++) rows *= a.shape[i];
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, a.shape, sizeof os);
    os[a.rank - 1] = Nn;
    return qdq_matmul_core(c, &a, bb, rows, K, Nn, w.data, w.u8 ? 128 : 0, w.zp, w.n, w.scale, NULL, 1.0,
                           qlinear ? &o : NULL, a.rank, os);
}

lower_status qdq_lower_qlinearconv(lower_ctx *c) { return explicit_conv(c, true); }
lower_status qdq_lower_convinteger(lower_ctx *c) { return explicit_conv(c, false); }
lower_status qdq_lower_qlinearmatmul(lower_ctx *c) { return explicit_matmul(c, true); }
lower_status qdq_lower_matmulinteger(lower_ctx *c) { return explicit_matmul(c, false); }
