/* lower_qdq.c - quantized lowerings: QuantizeLinear / DequantizeLinear as
 * arithmetic, the aliases of folded groups, and the integer heads of
 * DequantizeLinear -> op -> QuantizeLinear groups (qdq_fold.c marks them).
 *
 * Requantisation (qdq_rescale.c) uses RESCALE with a 32-bit multiplier and
 * a shift from the scale ratio: ratio = m * 2^-shift with m in
 * [2^30, 2^31). Integer heads accumulate in int32 (CONV2D / MATMUL with
 * zero points, int32 bias) and RESCALE once to the output's scale, so each
 * output has a single rounding (half up, the spec's SINGLE_ROUND). On
 * request (ctosa_lower_options.requant, `--requant ort`) int8 Conv / Add
 * outputs outside the U55 subset emulate ONNX Runtime's float32 rounding
 * instead (qdq_rescale_ort). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"
#include "lower/quant/qdq_island.h"
#include "lower/quant/qdq_quantize.h"

const qdq_node *qdq_info(const lower_ctx *c) {
    static const qdq_node none = {QR_NONE, false, -1, -1, -1, NULL, NULL, 0, -1, false, -1};
    if (!c->s->qdq || c->node_index >= c->s->qdq->count) return &none;
    return &c->s->qdq->n[c->node_index];
}

/* -------------------------------------------------------- quant params */

typedef struct qparam {
    int64_t n; /* 1 = per tensor */
    double *scale;
    int64_t *zp;
    int32_t dtype; /* ONNX integer type of the quantized side */
    int32_t axis;  /* normalised, for n > 1 */
} qparam;

/* Scale / zero point of Q/DQ node `ni` (inputs 1, 2), x of rank `rank`. */
static bool qp_of(lower_ctx *c, uint32_t ni, uint32_t rank, qparam *p) {
    lower_session *s = c->s;
    const ctosa_onnx_node *n = &s->g->nodes[ni];
    memset(p, 0, sizeof *p);
    const lw_val *sv = n->n_inputs > 1 ? qdq_const(s, lw_arena(c), n->inputs[1]) : NULL;
    bool has_zp = n->n_inputs > 2 && n->inputs[2][0];
    const lw_val *zv = has_zp ? qdq_const(s, lw_arena(c), n->inputs[2]) : NULL;
    if (!sv) {
        lw_fail(c, LOWER_NEEDS_CONSTANT, n->n_inputs > 1 ? n->inputs[1] : NULL,
                "%s: the scale must be a constant", n->op_type);
        return false;
    }
    if (has_zp && !zv) {
        lw_fail(c, LOWER_NEEDS_CONSTANT, n->inputs[2], "%s: the zero point must be a constant", n->op_type);
        return false;
    }
    p->n = (int64_t)qdq_val_count(sv);
    if (zv && (int64_t)qdq_val_count(zv) != p->n) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: scale and zero point sizes differ", n->op_type);
        return false;
    }
    p->scale = arena_alloc(lw_arena(c), (size_t)p->n * sizeof(double) + 8);
    p->zp = arena_zalloc(lw_arena(c), (size_t)p->n * sizeof(int64_t) + 8);
    if (!p->scale || !p->zp) return false;
    if (sv->v.onnx_dtype != CTOSA_ONNX_FLOAT && sv->v.onnx_dtype != CTOSA_ONNX_DOUBLE) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, sv->v.name, "%s: %s scales are not handled (float32 only)",
                n->op_type,
                onnx_dtype_numpy_name(sv->v.onnx_dtype) ? onnx_dtype_numpy_name(sv->v.onnx_dtype) : "?");
        return false;
    }
    for (int64_t k = 0; k < p->n; k++) {
        p->scale[k] = qdq_val_f64(sv, (uint64_t)k);
        if (zv) {
            /* zero points are 8/16/32-bit integers; anything else (a float
             * or int64 tensor with a wild value) must not reach a cast */
            double z = qdq_val_f64(zv, (uint64_t)k);
            if (!(z >= -2147483648.0 && z <= 4294967295.0)) {
                lw_fail(c, LOWER_UNSUPPORTED_ATTR, zv->v.name, "%s: zero point %g is out of range",
                        n->op_type, z);
                return false;
            }
            p->zp[k] = (int64_t)z;
        }
        if (!(p->scale[k] > 0) || isinf(p->scale[k])) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, sv->v.name, "%s: scale %g is not a positive finite number",
                    n->op_type, p->scale[k]);
            return false;
        }
    }
    if (zv) p->dtype = zv->v.onnx_dtype;
    else if (strcmp(n->op_type, "DequantizeLinear") == 0) {
        lw_val *xv = lw_lookup(s, n->inputs[0]);
        p->dtype = xv ? xv->v.onnx_dtype : CTOSA_ONNX_UINT8;
    } else {
        p->dtype = CTOSA_ONNX_UINT8;
    }
    int64_t axis = 1;
    for (uint32_t a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, "axis") == 0) axis = n->attrs[a].i;
    if (axis < 0) axis += rank;
    p->axis = (int32_t)axis;
    bool scalar_shape = sv->v.rank == 0 || (sv->v.rank == 1 && p->n == 1);
    if (p->n > 1 || !scalar_shape) {
        if (axis < 0 || axis >= (int64_t)rank) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: axis %lld is out of range", n->op_type,
                    (long long)axis);
            return false;
        }
        if (sv->v.rank > 1) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: blocked quantization is not supported", n->op_type);
            return false;
        }
    }
    return true;
}

static ctosa_dtype carrier_of(int32_t od) {
    return od == CTOSA_ONNX_INT16 || od == CTOSA_ONNX_UINT16 ? CTOSA_DTYPE_INT16
           : od == CTOSA_ONNX_INT32                          ? CTOSA_DTYPE_INT32
                                                             : CTOSA_DTYPE_INT8;
}

/* Shape with every dimension 1 except `axis` (n). */
static void axis_shape(uint32_t rank, int32_t axis, int64_t n, int64_t *out) {
    for (uint32_t i = 0; i < rank; i++) out[i] = 1;
    if (n > 1 && rank) out[axis] = n;
}

/* ---------------------------------------------------- QuantizeLinear */

lower_status qdq_lower_quantize(lower_ctx *c) {
    const lower_value *X = lw_in(c, 0);
    if (!X) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "QuantizeLinear: input is not available");
    qparam p;
    if (!qp_of(c, c->node_index, X->rank, &p)) return LOWER_REJECT;
    if (p.dtype != CTOSA_ONNX_UINT8 && p.dtype != CTOSA_ONNX_INT8 && p.dtype != CTOSA_ONNX_INT16)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "QuantizeLinear: output type %s is not handled",
                         onnx_dtype_numpy_name(p.dtype) ? onnx_dtype_numpy_name(p.dtype) : "?");
    bool u8 = p.dtype == CTOSA_ONNX_UINT8;
    ctosa_dtype ot = carrier_of(p.dtype), ft = X->t;
    if (ft != CTOSA_DTYPE_FP32 && ft != CTOSA_DTYPE_FP16 && ft != CTOSA_DTYPE_BF16)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, X->name, "QuantizeLinear: input must be float");
    uint32_t r = X->rank;
    int64_t cs[LOWER_MAX_RANK];
    axis_shape(r, p.axis, p.n, cs);
    double *inv = arena_alloc(lw_arena(c), (size_t)p.n * sizeof(double) + 8);
    double *zpd = arena_alloc(lw_arena(c), (size_t)p.n * sizeof(double) + 8);
    if (!inv || !zpd) return lw_failed(c);
    for (int64_t k = 0; k < p.n; k++) {
        inv[k] = 1.0 / p.scale[k];
        zpd[k] = (double)(p.zp[k] - (u8 ? 128 : 0));
    }
    const char *x = lw_input(c, 0);
    int64_t lo = ot == CTOSA_DTYPE_INT8 ? -128 : -32768, hi = ot == CTOSA_DTYPE_INT8 ? 127 : 32767;
    double *blo = arena_alloc(lw_arena(c), (size_t)p.n * sizeof(double) + 8);
    double *bhi = arena_alloc(lw_arena(c), (size_t)p.n * sizeof(double) + 8);
    if (!blo || !bhi) return lw_failed(c);
    bool exact = true;
    for (int64_t k = 0; k < p.n; k++) {
        blo[k] = (double)lo - zpd[k];
        bhi[k] = (double)hi - zpd[k];
        exact = exact && qdq_quantize_exact_ok(p.scale[k]);
    }
    const char *y;
    if (exact) {
        /* fl32(x / scale) rounded half to even, as ONNX (qdq_quantize.c) */
        lw_v xv;
        memset(&xv, 0, sizeof xv);
        xv.n = x;
        xv.t = ft;
        xv.r = r;
        memcpy(xv.s, X->shape, r * sizeof(int64_t));
        y = qdq_quantize_exact(c, xv, p.n, cs, p.scale, blo, bhi).n;
    } else {
        /* scales near the float32 limits: x * (1/scale), within one float
         * rounding of x / scale */
        y = lw_mul(c, x, lw_const_from_f64(c, ft, r, cs, inv), ft, r, X->shape);
        /* saturation: clamp to [lo - zp, hi - zp] before rounding (integer
         * bounds, so the same as clamping after); TOSA 1.0 has no int32 CLAMP */
        ctosa_attr mx;
        memset(&mx, 0, sizeof mx);
        mx.nan_mode = CTOSA_NAN_PROPAGATE;
        const char *in2[2];
        const char *t1 = lw_tensor(c, ft, r, X->shape), *t2 = lw_tensor(c, ft, r, X->shape);
        in2[0] = y;
        in2[1] = lw_const_from_f64(c, ft, r, cs, blo);
        LW_TRY(y && t1 && t2 && in2[1] && lw_op(c, CTOSA_OP_MAXIMUM, 2, in2, 1, &t1, &mx));
        in2[0] = t1;
        in2[1] = lw_const_from_f64(c, ft, r, cs, bhi);
        LW_TRY(in2[1] && lw_op(c, CTOSA_OP_MINIMUM, 2, in2, 1, &t2, &mx));
        y = lw_cast(c, t2, ft, CTOSA_DTYPE_INT32, r, X->shape); /* ties to even */
    }
    LW_TRY(y);
    y = lw_add(c, y, lw_const_from_f64(c, CTOSA_DTYPE_INT32, r, cs, zpd), CTOSA_DTYPE_INT32, r, X->shape);
    y = lw_cast(c, y, CTOSA_DTYPE_INT32, ot, r, X->shape);
    if (u8) y = qdq_rescale(c, y, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, r, X->shape, 1.0, 0, 128, false, true);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* -------------------------------------------------- DequantizeLinear */

lower_status qdq_lower_dequantize(lower_ctx *c) {
    lower_session *s = c->s;
    const ctosa_onnx_node *n = lw_node(c);
    if (n->n_inputs < 2 || !n->inputs[0][0])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "DequantizeLinear: needs an input and a scale");
    lw_val *xv = lw_lookup(s, n->inputs[0]);
    if (!xv || !xv->known)
        return lw_reject(c, LOWER_INPUT_FALLBACK, n->inputs[0], "DequantizeLinear: input unknown");
    if (qdq_info(c)->role == QR_DQ && !xv->v.data) return qdq_lower_alias(c);
    qparam p;
    uint32_t r = xv->v.rank;
    if (!qp_of(c, c->node_index, r, &p)) return LOWER_REJECT;
    int32_t od = xv->v.onnx_dtype;
    if (od != CTOSA_ONNX_UINT8 && od != CTOSA_ONNX_INT8 && od != CTOSA_ONNX_INT16 && od != CTOSA_ONNX_INT32)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, n->inputs[0],
                         "DequantizeLinear: input type %s is not handled",
                         onnx_dtype_numpy_name(od) ? onnx_dtype_numpy_name(od) : "?");
    int64_t cs[LOWER_MAX_RANK];
    axis_shape(r, p.axis, p.n, cs);
    const int64_t *shape = xv->v.shape;
    /* Weight-sized constants outside a QDQ group are dequantized
     * at run time instead: the int8 bytes pass through to the TOSA file
     * (the size test counts elements, which are bytes for int8/uint8) */
    if (xv->v.data && (qdq_info(c)->role == QR_DQ || qdq_val_count(xv) <= LW_LARGE_CONST_BYTES ||
                       qdq_dq_gives_constant(s, c->node_index))) {
        /* constant input: the result is a constant */
        uint64_t cnt = qdq_val_count(xv);
        double *v = arena_alloc(lw_arena(c), (size_t)cnt * sizeof(double) + 8);
        if (!v) return lw_failed(c);
        uint64_t inner = 1, ch = 1;
        if (p.n > 1) {
            for (uint32_t i = (uint32_t)p.axis + 1; i < r; i++) inner *= (uint64_t)shape[i];
            ch = (uint64_t)p.n;
        }
        for (uint64_t k = 0; k < cnt; k++) {
            uint64_t ci = p.n > 1 ? (k / inner) % ch : 0;
            float d = (float)(qdq_val_f64(xv, k) - (double)p.zp[ci]);
            v[k] = (double)(d * (float)p.scale[ci]);
        }
        const char *y = lw_const_from_f64(c, CTOSA_DTYPE_FP32, r, shape, v);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    const char *x = lw_input(c, 0);
    ctosa_dtype xt = xv->v.t;
    const char *f;
    bool allzero = true;
    for (int64_t k = 0; k < p.n; k++) allzero &= p.zp[k] == 0;
    if (od == CTOSA_ONNX_UINT8) {
        /* bits -> 0..255 (or x - zp when per tensor) in int16 */
        int64_t izp = p.n == 1 ? p.zp[0] : 0;
        const char *w =
            qdq_rescale(c, x, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, r, shape, 1.0, izp, 0, true, false);
        f = lw_cast(c, w, CTOSA_DTYPE_INT16, CTOSA_DTYPE_FP32, r, shape);
        if (p.n == 1) allzero = true;
    } else {
        f = lw_cast(c, x, xt, CTOSA_DTYPE_FP32, r, shape);
    }
    if (!allzero) {
        double *z = arena_alloc(lw_arena(c), (size_t)p.n * sizeof(double) + 8);
        if (!z) return lw_failed(c);
        for (int64_t k = 0; k < p.n; k++) z[k] = (double)p.zp[k];
        f = lw_sub(c, f, lw_const_from_f64(c, CTOSA_DTYPE_FP32, r, cs, z), CTOSA_DTYPE_FP32, r, shape);
    }
    const char *y =
        lw_mul(c, f, lw_const_from_f64(c, CTOSA_DTYPE_FP32, r, cs, p.scale), CTOSA_DTYPE_FP32, r, shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ------------------------------------------------------------- aliases */

lower_status qdq_lower_alias(lower_ctx *c) {
    const lower_value *X = lw_in(c, 0);
    if (!X)
        return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: input is not available", lw_node(c)->op_type);
    if (X->data) {
        /* constant carrier (folding): re-emit it under the input's TOSA dtype */
        const char *x = lw_input(c, 0);
        LW_TRY(x);
        lw_set_output(c, 0, x);
        return LOWER_OK;
    }
    const char *x = lw_input(c, 0);
    LW_TRY(x);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

/* An island operator before its head (qdq_island.h): emits nothing; its
 * output stands for the island's integer input (the head reads that). */
lower_status qdq_lower_island_member(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        const lower_value *V = lw_has_input(c, k) ? lw_in(c, k) : NULL;
        if (!V || V->data) continue;
        const char *x = lw_input(c, k);
        LW_TRY(x);
        lw_set_output(c, 0, x);
        return LOWER_OK;
    }
    return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "%s: no runtime input in its quantized island",
                     n->op_type);
}

/* A data-movement operator inside a movement chain: its own lowering moves
 * the integer carrier (exact for any dtype); the chain's QuantizeLinear
 * requantises once from the DequantizeLinear's parameters. */
lower_status qdq_lower_move(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_entry *ent = lower_find(n->domain, n->op_type, lw_opset(c));
    if (!ent) return lw_reject(c, LOWER_UNSUPPORTED_OP, NULL, "%s has no lowering", n->op_type);
    return ent->fn(c);
}

lower_status qdq_lower_cast(lower_ctx *c) {
    const lower_value *X = lw_in(c, 0);
    if (!X) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Cast: input is not available");
    int64_t to = lw_attr_int(c, "to", X->onnx_dtype);
    if (to != X->onnx_dtype)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, X->name,
                         "%s of a uint8 quantized tensor to another type: only through DequantizeLinear",
                         lw_node(c)->op_type);
    return qdq_lower_alias(c);
}

lower_status qdq_lower_u8_reject(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    return lw_reject(
        c, LOWER_UNSUPPORTED_DTYPE, NULL,
        "%s on a uint8 tensor: TOSA has uint8 only at RESCALE boundaries and %s is not part of a "
        "DequantizeLinear -> op -> QuantizeLinear group",
        n->op_type, n->op_type);
}

/* --------------------------------------------------------------- heads */

/* Input i of the head (a folded DequantizeLinear output) as a signed
 * int8/int16 tensor with its scale and zero point. */
/* Operand behind DequantizeLinear node dq (its runtime integer input is
 * the TOSA tensor x, or NULL to read input i of the head). */
static bool dq_operand(lower_ctx *c, uint32_t dq, const char *x, int32_t i, uint32_t rank,
                       const int64_t *shape, const char *name, qx_in *o) {
    lower_session *s = c->s;
    const ctosa_onnx_node *d = &s->g->nodes[dq];
    lw_val *xv = lw_lookup(s, d->inputs[0]);
    qparam p;
    if (!xv || !qp_of(c, dq, rank, &p)) return false;
    if (p.n != 1) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: per-axis quantized activation '%s'",
                lw_node(c)->op_type, name);
        return false;
    }
    int32_t od = xv->v.onnx_dtype;
    bool u8 = od == CTOSA_ONNX_UINT8;
    if (od != CTOSA_ONNX_UINT8 && od != CTOSA_ONNX_INT8 && od != CTOSA_ONNX_INT16) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, NULL, "%s: quantized input '%s' of type %s", lw_node(c)->op_type,
                name, onnx_dtype_numpy_name(od) ? onnx_dtype_numpy_name(od) : "?");
        return false;
    }
    o->t = od == CTOSA_ONNX_INT16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8;
    o->s = p.scale[0];
    o->zp = p.zp[0] - (u8 ? 128 : 0);
    o->rank = rank;
    memcpy(o->shape, shape, rank * sizeof *shape);
    if (xv->v.data) {
        uint64_t cnt = qdq_val_count(xv);
        double *v = arena_alloc(lw_arena(c), (size_t)cnt * sizeof(double) + 8);
        if (!v) return false;
        for (uint64_t k = 0; k < cnt; k++) v[k] = qdq_val_f64(xv, k) - (u8 ? 128 : 0);
        o->x = lw_const_from_f64(c, o->t, rank, shape, v);
    } else {
        o->x = x ? x : lw_input(c, (uint32_t)i);
        if (u8)
            o->x = qdq_rescale(c, o->x, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, rank, shape, 1.0, p.zp[0], o->zp,
                               true, false);
    }
    if (o->t == CTOSA_DTYPE_INT16 && o->zp != 0) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: int16 input '%s' with zero point %lld (TOSA needs 0)",
                lw_node(c)->op_type, name, (long long)o->zp);
        return false;
    }
    return o->x != NULL;
}

bool qdq_in(lower_ctx *c, uint32_t i, qx_in *o) {
    lower_session *s = c->s;
    const lower_value *V = lw_in(c, i);
    lw_val *hv = lw_lookup(s, lw_node(c)->inputs[i]);
    if (!V || !hv || hv->producer < 0) return false;
    return dq_operand(c, (uint32_t)hv->producer, NULL, (int32_t)i, V->rank, V->shape, V->name, o);
}

bool qdq_dq_params(lower_ctx *c, uint32_t dq, qx_in *o, bool *u8) {
    lower_session *s = c->s;
    lw_val *xv = lw_lookup(s, s->g->nodes[dq].inputs[0]);
    qparam p;
    if (!xv || !xv->known || !qp_of(c, dq, xv->v.rank, &p)) return false;
    int32_t od = xv->v.onnx_dtype;
    if (p.n != 1 || (od != CTOSA_ONNX_UINT8 && od != CTOSA_ONNX_INT8 && od != CTOSA_ONNX_INT16)) return false;
    *u8 = od == CTOSA_ONNX_UINT8;
    memset(o, 0, sizeof *o);
    o->t = od == CTOSA_ONNX_INT16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8;
    o->s = p.scale[0];
    o->zp = p.zp[0] - (*u8 ? 128 : 0);
    o->rank = xv->v.rank;
    memcpy(o->shape, xv->v.shape, sizeof o->shape);
    return true;
}

bool qdq_dq_operand(lower_ctx *c, uint32_t dq, const char *x, uint32_t rank, const int64_t *shape, qx_in *o) {
    return dq_operand(c, dq, x, -1, rank, shape, c->s->g->nodes[dq].outputs[0], o);
}

bool qdq_out(lower_ctx *c, uint32_t rank, qx_out *o) {
    const qdq_node *qn = qdq_info(c);
    lower_session *s = c->s;
    qparam p;
    if (qn->q < 0 || !qp_of(c, (uint32_t)qn->q, rank, &p)) return false;
    if (p.n != 1) {
        lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "per-axis output quantization");
        return false;
    }
    if (p.dtype != CTOSA_ONNX_UINT8 && p.dtype != CTOSA_ONNX_INT8 && p.dtype != CTOSA_ONNX_INT16) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, NULL, "quantized output type not handled");
        return false;
    }
    o->u8 = p.dtype == CTOSA_ONNX_UINT8;
    o->t = p.dtype == CTOSA_ONNX_INT16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8;
    o->s = p.scale[0];
    o->zp = p.zp[0] - (o->u8 ? 128 : 0);
    o->lo = o->t == CTOSA_DTYPE_INT8 ? -128 : -32768;
    o->hi = o->t == CTOSA_DTYPE_INT8 ? 127 : 32767;
    const ctosa_onnx_node *self = lw_node(c);
    const ctosa_onnx_node *act = qn->act >= 0 ? &s->g->nodes[qn->act] : NULL;
    if (!act && qn->role == QR_HEAD &&
        (strcmp(self->op_type, "Relu") == 0 || strcmp(self->op_type, "Clip") == 0))
        act = self;
    if (act) {
        double mn = -INFINITY, mx = INFINITY;
        if (strcmp(act->op_type, "Relu") == 0) {
            mn = 0;
        } else {
            for (uint32_t a = 0; a < act->n_attrs; a++) {
                if (strcmp(act->attrs[a].name, "min") == 0) mn = act->attrs[a].f;
                if (strcmp(act->attrs[a].name, "max") == 0) mx = act->attrs[a].f;
            }
            for (uint32_t k = 1; k < 3 && k < act->n_inputs; k++) {
                if (!act->inputs[k][0]) continue;
                const lw_val *v = qdq_const(s, lw_arena(c), act->inputs[k]);
                if (!v) {
                    lw_fail(c, LOWER_NEEDS_CONSTANT, act->inputs[k], "Clip: bounds must be constants");
                    return false;
                }
                if (k == 1) mn = qdq_val_f64(v, 0);
                else mx = qdq_val_f64(v, 0);
            }
        }
        if (mn > -INFINITY) {
            double q = nearbyint(mn / o->s) + (double)o->zp;
            if (q > (double)o->lo) o->lo = q > (double)o->hi ? o->hi : (int64_t)q;
        }
        if (mx < INFINITY) {
            double q = nearbyint(mx / o->s) + (double)o->zp;
            if (q < (double)o->hi) o->hi = q < (double)o->lo ? o->lo : (int64_t)q;
        }
    }
    return true;
}

/* Clamp to the activation range when narrower than the type, convert to
 * uint8 bits when the output is uint8, bind output 0. */
lower_status qdq_finish(lower_ctx *c, const char *y, const qx_out *o, uint32_t rank, const int64_t *shape) {
    int64_t tlo = o->t == CTOSA_DTYPE_INT8 ? -128 : -32768, thi = o->t == CTOSA_DTYPE_INT8 ? 127 : 32767;
    if (o->lo > tlo || o->hi < thi) y = qdq_clamp(c, y, o->t, rank, shape, o->lo, o->hi);
    if (o->u8)
        y = qdq_rescale(c, y, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, rank, shape, 1.0, 0, 128, false, true);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* Requantises a signed operand to the output's scale / zero point. */
const char *qdq_requant(lower_ctx *c, const qx_in *a, const qx_out *o, uint32_t rank, const int64_t *shape) {
    if (a->s == o->s && a->zp == o->zp && a->t == o->t) return a->x;
    return qdq_rescale_x(c, a->x, a->t, o->t, rank, shape, a->s / o->s, a->zp, o->zp);
}

bool qdq_weight(lower_ctx *c, uint32_t i, uint32_t rank, qx_w *w) {
    lower_session *s = c->s;
    lw_val *hv = lw_lookup(s, lw_node(c)->inputs[i]);
    if (!hv || hv->producer < 0) return false;
    const ctosa_onnx_node *d = &s->g->nodes[hv->producer];
    lw_val *xv = lw_lookup(s, d->inputs[0]);
    if (!xv || !xv->v.data) {
        lw_fail(c, LOWER_NEEDS_CONSTANT, d->inputs[0], "%s: quantized weight must be a constant",
                lw_node(c)->op_type);
        return false;
    }
    if (xv->v.onnx_dtype != CTOSA_ONNX_INT8) {
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, d->inputs[0], "%s: weights of type %s (int8 only)",
                lw_node(c)->op_type,
                onnx_dtype_numpy_name(xv->v.onnx_dtype) ? onnx_dtype_numpy_name(xv->v.onnx_dtype) : "?");
        return false;
    }
    qparam p;
    if (!qp_of(c, (uint32_t)hv->producer, rank, &p)) return false;
    w->data = (const int8_t *)xv->v.data;
    w->rank = xv->v.rank;
    memcpy(w->shape, xv->v.shape, sizeof w->shape);
    w->n = p.n;
    w->scale = p.scale;
    w->axis = p.axis;
    w->zp = p.zp[0];
    for (int64_t k = 1; k < p.n; k++)
        if (p.zp[k] != w->zp) {
            lw_fail(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: per-channel weight zero points differ",
                    lw_node(c)->op_type);
            return false;
        }
    return true;
}

/* Real bias values (n of them) of input i: a DequantizeLinear of a
 * constant or a float constant; NULL (no rejection) when absent. */
const double *qdq_bias(lower_ctx *c, uint32_t i, int64_t n, bool *bad) {
    *bad = false;
    if (!lw_has_input(c, i)) return NULL;
    lower_session *s = c->s;
    lw_val *hv = lw_lookup(s, lw_node(c)->inputs[i]);
    double *b = arena_alloc(lw_arena(c), (size_t)n * sizeof(double) + 8);
    if (!hv || !b) {
        *bad = true;
        return NULL;
    }
    if (hv->producer >= 0 && strcmp(s->g->nodes[hv->producer].op_type, "DequantizeLinear") == 0) {
        lw_val *xv = lw_lookup(s, s->g->nodes[hv->producer].inputs[0]);
        qparam p;
        if (xv && xv->v.data && (int64_t)qdq_val_count(xv) == n && qp_of(c, (uint32_t)hv->producer, 1, &p)) {
            for (int64_t k = 0; k < n; k++) {
                int64_t ci = p.n > 1 ? k : 0;
                b[k] = (qdq_val_f64(xv, (uint64_t)k) - (double)p.zp[ci]) * p.scale[ci];
            }
            return b;
        }
    }
    if (hv->v.data && (int64_t)qdq_val_count(hv) == n) {
        for (int64_t k = 0; k < n; k++) b[k] = qdq_val_f64(hv, (uint64_t)k);
        return b;
    }
    lw_fail(c, LOWER_NEEDS_CONSTANT, hv->v.name, "%s: bias must be a constant of %lld values",
            lw_node(c)->op_type, (long long)n);
    *bad = true;
    return NULL;
}

static const char *int32_const(lower_ctx *c, uint32_t rank, const int64_t *shape, const double *v) {
    return lw_const_from_f64(c, CTOSA_DTYPE_INT32, rank, shape, v);
}

/* Group weights, biases and requantisation of conv_core for lw_conv_emit. */
typedef struct qconv_parts {
    const uint8_t *buf; /* OHWI (or depthwise HWCM) int8 weights */
    const double *bq, *ratio;
    bool dw;
    uint32_t tr, tsp;
    int64_t M, Mg, Cg, kvol, C, nc;
    const int64_t *ks;
    ctosa_dtype acc_t;
    const qx_out *o;
} qconv_parts;

static bool qconv_operands(lower_ctx *c, void *arg, int64_t g, const char **w, const char **b) {
    const qconv_parts *p = arg;
    if (p->dw) {
        int64_t wshape[4] = {p->ks[0], p->ks[1], p->C, p->M / p->C};
        *w = lw_const(c, CTOSA_DTYPE_INT8, 4, wshape, p->buf);
        *b = lw_const_from_f64(c, p->acc_t, 1, &p->M, p->bq);
        return *w && *b;
    }
    int64_t wshape[5] = {p->Mg};
    for (uint32_t i = 0; i < p->tsp; i++) wshape[1 + i] = p->ks[i];
    wshape[p->tr - 1] = p->Cg;
    *w = lw_const(c, CTOSA_DTYPE_INT8, p->tr, wshape, p->buf + g * p->Mg * p->kvol * p->Cg);
    *b = lw_const_from_f64(c, p->acc_t, 1, &p->Mg, p->bq + g * p->Mg);
    return *w && *b;
}

/* An int48 accumulator cannot be concatenated (CONCAT has no int48 row):
 * each group is requantised on its own, the same RESCALE per element. */
static const char *qconv_part(lower_ctx *c, void *arg, int64_t g, const char *y, const int64_t *shape) {
    const qconv_parts *p = arg;
    bool pc = p->nc > 1;
    return qdq_rescale_n(c, y, p->acc_t, p->o->t, p->tr, shape, pc ? p->Mg : 1,
                         p->ratio + (pc ? g * p->Mg : 0), 0, p->o->zp, false, false);
}

/* Integer convolution of signed x with an int8 view of the weight: 2-D
 * (CONV2D, DEPTHWISE_CONV2D), 1-D (as 2-D with height 1) and 3-D (CONV3D);
 * any group count: a group that is not depthwise gets one convolution per
 * group on its channel slice (lw_conv_emit), the int32 accumulators
 * concatenated, int48 ones (a16w8) requantised per group first. Bias either real values (bias_q false) or
 * already in accumulator units; with o, requantised to o, otherwise the
 * int32 accumulator is the output. */
lower_status qdq_conv_core(lower_ctx *c, const qx_in *a, const int64_t *wsh, const qwt *w, const double *bias,
                           bool bias_q, const qx_out *o) {
    uint32_t rank = a->rank, nsp = rank >= 3 ? rank - 2 : 0;
    if (nsp < 1 || nsp > 3)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: 1-D, 2-D or 3-D convolutions only");
    /* int8 activations accumulate in int32; int16 (a16w8, EXT-INT16) in
     * int48 with an int48 bias; without EXT-INT16 an int16 input is split
     * into two int8 halves whose int32 accumulators add up (qdq_split16). The
     * output may be int8 or int16 either way (mixed precision). */
    bool a16 = a->t == CTOSA_DTYPE_INT16;
    bool split = a16 && !(lw_spec(c)->extensions & CTOSA_EXT_BIT(INT16));
    ctosa_dtype acc_t = a16 && !split ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    if ((a->t != CTOSA_DTYPE_INT8 && !a16) || (o && o->t != CTOSA_DTYPE_INT8 && o->t != CTOSA_DTYPE_INT16))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "quantized Conv: int8/uint8 or int16 activations");
    if (!o && a16) return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "ConvInteger: int16 input");
    int64_t N = a->shape[0], C = a->shape[1], M = wsh[0], Cg = wsh[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (w->n > 1 && w->n != M)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: weight scales must be per output channel");
    if (group < 1 || Cg * group != C || M % group)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: group %lld does not match %lld input / "
                         "%lld weight channels",
                         (long long)group, (long long)C, (long long)Cg);
    bool dw = nsp != 3 && group > 1 && group == C && Cg == 1;
    lw_dim dm3[3];
    lower_status st;
    if ((st = lw_read_window(c, nsp, a->shape, wsh + 2, dm3)) != LOWER_OK) return st;
    if ((st = lw_window(c, nsp, dm3, false)) != LOWER_OK) return st;
    /* 1-D: a 2-D convolution over height 1 */
    uint32_t tsp = nsp == 3 ? 3 : 2, tr = tsp + 2;
    lw_dim dm[3];
    int64_t xs[5], ks[3];
    if (nsp == 1) {
        dm[0] = (lw_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        dm[1] = dm3[0];
        int64_t s4[4] = {N, C, 1, a->shape[2]};
        memcpy(xs, s4, sizeof s4);
        ks[0] = 1;
        ks[1] = wsh[2];
    } else {
        memcpy(dm, dm3, sizeof dm);
        memcpy(xs, a->shape, tr * sizeof *xs);
        for (uint32_t i = 0; i < tsp; i++) ks[i] = wsh[2 + i];
    }
    double *bq = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    double *ratio = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    if (!bq || !ratio) return lw_failed(c);
    int64_t kvol = 1;
    for (uint32_t i = 0; i < tsp; i++) kvol *= ks[i];
    for (int64_t m = 0; m < M; m++) {
        double sw = w->scale ? w->scale[w->n > 1 ? m : 0] : 1.0;
        double acc_s = a->s * sw;
        bq[m] = !bias ? 0 : bias_q ? bias[m] : nearbyint(bias[m] / acc_s);
        /* keep bias + accumulator inside int32 (CONV2D REQUIRE): a bias at
         * the int32 limit only occurs for channels of tiny weight scale,
         * where the trimmed part is far below one output step */
        double lim = (a16 && !split ? 140737488355327.0 : 2147483647.0) -
                     (a16 ? 65535.0 * 255.0 : 65025.0) * (double)Cg * (double)kvol;
        if (split) lim = 2147483647.0; /* checked against the weights below */
        if (!(fabs(bq[m]) <= lim)) bq[m] = bq[m] > 0 ? lim : -lim;
        ratio[m] = o ? qdq_acc_ratio(a->s, sw, o->s) : 1.0;
    }
    const char *x = a->x;
    if (nsp == 1) x = lw_reshape(c, x, a->t, 4, xs);
    int64_t ls[5];
    lw_shape_last(tr, xs, ls);
    x = lw_to_last(c, x, a->t, tr, xs);
    int64_t start[5] = {0}, size[5];
    memcpy(size, ls, sizeof size);
    for (uint32_t i = 0; i < tsp; i++) size[1 + i] -= dm[i].crop;
    x = lw_slice(c, x, a->t, tr, ls, start, size);
    memcpy(ls, size, sizeof ls);
    uint8_t *buf = arena_alloc(lw_arena(c), (size_t)(M * Cg * kvol) + 8);
    if (!buf) return lw_failed(c);
    const uint8_t *src = w->data;
    uint8_t off = w->u8 ? 128 : 0; /* uint8 weights: w - 128 with zero point zp - 128 */
    const char *izp = lw_zero_point(c, a->t, a->zp);
    const char *wzp = lw_zero_point(c, CTOSA_DTYPE_INT8, w->zp - off);
    int64_t os[5] = {N};
    for (uint32_t i = 0; i < tsp; i++) os[1 + i] = dm[i].out;
    os[tr - 1] = M;
    LW_TRY(x && izp && wzp);
    if (dw) {
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < kvol; k++) buf[k * M + m] = (uint8_t)(src[m * kvol + k] - off);
    } else {
        /* OIHW -> OHWI */
        for (int64_t m = 0; m < M; m++)
            for (int64_t i = 0; i < Cg; i++)
                for (int64_t k = 0; k < kvol; k++)
                    buf[(m * kvol + k) * Cg + i] = (uint8_t)(src[(m * Cg + i) * kvol + k] - off);
    }
    if (split && !qdq_split16_fits(c, src, off, M, Cg * kvol, bq)) return LOWER_REJECT;
    /* an int48 accumulator (a16w8) is requantised per group before the
     * CONCAT, which has no int48 row; int32 ones after it (one RESCALE) */
    bool split48 = a16 && !split && !dw && group > 1 && o;
    qconv_parts qp = {buf, bq, ratio, dw, tr, tsp, M, M / group, Cg, kvol, C, w->n > 1 ? M : 1, ks, acc_t, o};
    lw_conv_attr ab;
    lw_conv cv = {.kind = dw         ? CTOSA_OP_DEPTHWISE_CONV2D
                          : tsp == 3 ? CTOSA_OP_CONV3D
                                     : CTOSA_OP_CONV2D,
                  .attr = lw_conv_attr_of(&ab, tsp, dm, acc_t),
                  .x = x,
                  .t = a->t,
                  .rank = tr,
                  .in_shape = ls,
                  .out_shape = os,
                  .acc_t = acc_t,
                  .izp = izp,
                  .wzp = wzp,
                  .group = dw ? 1 : group,
                  .operands = qconv_operands,
                  .part = split48 ? qconv_part : NULL,
                  .part_t = o ? o->t : acc_t,
                  .arg = &qp};
    const char *acc;
    if (split) {
        /* 256 conv(hi, zero bias) + conv(lo - 128 read at zero point -128) */
        double *zb = arena_zalloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
        const char *hi = NULL, *lo = NULL;
        LW_TRY(zb && qdq_split16(c, x, tr, ls, &hi, &lo));
        qconv_parts qh = qp;
        qh.bq = zb;
        lw_conv ch = cv, cl = cv;
        ch.x = hi, ch.t = CTOSA_DTYPE_INT8, ch.izp = lw_zero_point(c, CTOSA_DTYPE_INT8, 0), ch.arg = &qh;
        cl.x = lo, cl.t = CTOSA_DTYPE_INT8, cl.izp = lw_zero_point(c, CTOSA_DTYPE_INT8, -128);
        LW_TRY(ch.izp && cl.izp);
        const char *ah = lw_conv_emit(c, &ch), *al = lw_conv_emit(c, &cl);
        acc =
            lw_add(c, lw_mul_scalar(c, ah, CTOSA_DTYPE_INT32, tr, os, 256.0), al, CTOSA_DTYPE_INT32, tr, os);
    } else {
        acc = lw_conv_emit(c, &cv);
    }
    LW_TRY(acc);
    /* channels-first output shape ([N, M, L] for 1-D) */
    int64_t fs[5];
    lw_shape_first(tr, os, fs);
    uint32_t orank = rank;
    int64_t ofs[5];
    if (nsp == 1) {
        ofs[0] = N;
        ofs[1] = M;
        ofs[2] = os[2];
    } else {
        memcpy(ofs, fs, sizeof ofs);
    }
    if (!o) {
        const char *y = lw_to_first(c, acc, CTOSA_DTYPE_INT32, tr, os);
        if (nsp == 1) y = lw_reshape(c, y, CTOSA_DTYPE_INT32, 3, ofs);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    /* what each channel's accumulator can hold (exact ties only where one
     * can occur); int48 accumulators keep one RESCALE */
    const qdq_acc_set *A =
        split48 || (a16 && !split)
            ? qdq_acc_bound(c, 0)
            : qdq_acc_of_weights(c, a->t, a->zp, M, Cg * kvol, Cg * kvol, 1, w->data, w->u8, w->zp, bq);
    LW_TRY(A);
    const char *y = split48 ? acc
                    : qdq_match_ort(c) && acc_t == CTOSA_DTYPE_INT32 && o->t == CTOSA_DTYPE_INT8
                        ? qdq_rescale_ort(c, acc, o->t, tr, os, w->n > 1 ? M : 1, ratio, o->zp, A)
                        : qdq_rescale_acc(c, acc, acc_t, o->t, tr, os, w->n > 1 ? M : 1, ratio, o->zp, A);
    y = lw_to_first(c, y, o->t, tr, os);
    if (nsp == 1) y = lw_reshape(c, y, o->t, 3, ofs);
    LW_TRY(y);
    return qdq_finish(c, y, o, orank, ofs);
}

static lower_status head_conv(lower_ctx *c) {
    const lower_value *W = lw_in(c, 1);
    qx_in a;
    qx_w w;
    qx_out o;
    if (!W || W->rank < 3 || W->rank > 5)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: 1-D, 2-D or 3-D convolutions only");
    if (!qdq_in(c, 0, &a) || !qdq_weight(c, 1, W->rank, &w) || !qdq_out(c, W->rank, &o)) return LOWER_REJECT;
    if (w.n > 1 && w.axis != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Conv: weight scales must be per output channel");
    bool bbad;
    const double *bias = qdq_bias(c, 2, W->shape[0], &bbad);
    if (bbad) return LOWER_REJECT;
    qwt wt = {(const uint8_t *)w.data, false, w.zp, w.n, w.scale};
    return qdq_conv_core(c, &a, W->shape, &wt, bias, false, &o);
}

/* MATMUL of the signed activation a (viewed as [bb, rows, K]) with a
 * constant [bb, K, Nn] weight (bits wkn, int8 after subtracting `off`),
 * per-column scales (wn = 1 or Nn; NULL: integer output) and optional real
 * bias; requantised to o, or the int32 accumulator when o is NULL. */
lower_status qdq_matmul_core(lower_ctx *c, const qx_in *a, int64_t bb, int64_t rows, int64_t K, int64_t Nn,
                             const uint8_t *wkn, uint8_t off, int64_t wzp, int64_t wn, const double *wscale,
                             const double *bias, double alpha, const qx_out *o, uint32_t out_rank,
                             const int64_t *out_shape) {
    if ((a->t == CTOSA_DTYPE_INT16 || (o && o->t == CTOSA_DTYPE_INT16)) && o && bb == 1) {
        /* a16w8 (or an int16 output): as a 1x1 CONV2D, whose int48
         * accumulator takes the int48 bias (TOSA has no int48 ADD) - one
         * rounding, like the int8 path; split into int8 halves without
         * EXT-INT16 */
        int64_t wsh[4] = {Nn, K, 1, 1};
        uint8_t *wt = arena_alloc(lw_arena(c), (size_t)(K * Nn) + 8);
        if (!wt) return lw_failed(c);
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < Nn; n++) wt[n * K + k] = wkn[k * Nn + n];
        qx_in a4 = *a;
        a4.rank = 4;
        a4.shape[0] = 1;
        a4.shape[1] = K;
        a4.shape[2] = rows;
        a4.shape[3] = 1;
        int64_t s2[2] = {rows, K}, s4[4] = {1, rows, K, 1};
        int32_t perm[4] = {0, 2, 1, 3};
        a4.x = lw_reshape(c, a->x, a->t, 2, s2);
        a4.x = lw_reshape(c, a4.x, a->t, 4, s4);
        a4.x = lw_transpose(c, a4.x, a->t, 4, s4, perm);
        LW_TRY(a4.x);
        double *sc = arena_alloc(lw_arena(c), (size_t)Nn * sizeof(double) + 8);
        if (!sc) return lw_failed(c);
        for (int64_t n = 0; n < Nn; n++) sc[n] = alpha * wscale[wn > 1 ? n : 0];
        qwt w = {wt, off != 0, wzp, wn > 1 ? Nn : 1, sc};
        qx_out o4 = *o;
        /* conv_core binds [1, Nn, rows, 1]; re-bind in the output shape */
        lower_status st = qdq_conv_core(c, &a4, wsh, &w, bias, false, &o4);
        if (st != LOWER_OK) return st;
        const char *y = c->out_names[0];
        int64_t f4[4] = {1, Nn, rows, 1}, t4[4] = {1, rows, Nn, 1};
        int32_t p2[4] = {0, 2, 1, 3};
        y = lw_transpose(c, y, o->t, 4, f4, p2);
        y = lw_reshape(c, y, o->t, out_rank, out_shape);
        (void)t4;
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    if (a->t != CTOSA_DTYPE_INT8 || (o && o->t != CTOSA_DTYPE_INT8))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                         "quantized %s: int8/uint8 activations (int16 with a "
                         "2-D weight)",
                         lw_node(c)->op_type);
    int64_t s3[3] = {bb, rows, K}, w3[3] = {bb, K, Nn}, o3[3] = {bb, rows, Nn};
    uint8_t *wb = arena_alloc(lw_arena(c), (size_t)(bb * K * Nn) + 8);
    if (!wb) return lw_failed(c);
    for (int64_t i = 0; i < bb * K * Nn; i++) wb[i] = (uint8_t)(wkn[i] - off);
    const char *x = lw_reshape(c, a->x, CTOSA_DTYPE_INT8, 3, s3);
    const char *wc = lw_const(c, CTOSA_DTYPE_INT8, 3, w3, wb);
    const char *az = lw_zero_point(c, CTOSA_DTYPE_INT8, a->zp),
               *bz = lw_zero_point(c, CTOSA_DTYPE_INT8, wzp - off);
    const char *acc = lw_tensor(c, CTOSA_DTYPE_INT32, 3, o3);
    LW_TRY(x && wc && az && bz && acc);
    const char *in[4] = {x, wc, az, bz};
    LW_TRY(lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &acc, NULL));
    if (!o) {
        const char *y = lw_reshape(c, acc, CTOSA_DTYPE_INT32, out_rank, out_shape);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    double *ratio = arena_alloc(lw_arena(c), (size_t)Nn * sizeof(double) + 8);
    double *bq = arena_alloc(lw_arena(c), (size_t)Nn * sizeof(double) + 8);
    if (!ratio || !bq) return lw_failed(c);
    for (int64_t n = 0; n < Nn; n++) {
        double acc_s = alpha * a->s * wscale[wn > 1 ? n : 0];
        ratio[n] = alpha * qdq_acc_ratio(a->s, wscale[wn > 1 ? n : 0], o->s);
        bq[n] = bias ? nearbyint(bias[n] / acc_s) : 0;
    }
    if (bias) {
        int64_t b3[3] = {1, 1, Nn};
        acc = lw_add(c, acc, int32_const(c, 3, b3, bq), CTOSA_DTYPE_INT32, 3, o3);
    }
    /* column n's accumulator: bias plus its weights over K (and the bb
     * batches: a superset) */
    const qdq_acc_set *A = qdq_acc_of_weights(c, CTOSA_DTYPE_INT8, a->zp, Nn, bb * K, 1, Nn, wkn, off != 0,
                                              wzp, bias ? bq : NULL);
    const char *y =
        qdq_rescale_acc(c, acc, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT8, 3, o3, wn > 1 ? Nn : 1, ratio, o->zp, A);
    y = lw_reshape(c, y, CTOSA_DTYPE_INT8, out_rank, out_shape);
    LW_TRY(y);
    return qdq_finish(c, y, o, out_rank, out_shape);
}

static lower_status head_gemm(lower_ctx *c) {
    const lower_value *A = lw_in(c, 0), *B = lw_in(c, 1);
    if (!A || !B || A->rank != 2 || B->rank != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Gemm: 2-D operands only");
    if (lw_attr_int(c, "transA", 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Gemm: transA = 1 is not handled");
    bool tb = lw_attr_int(c, "transB", 0) != 0;
    double alpha = lw_attr_float(c, "alpha", 1.0f), beta = lw_attr_float(c, "beta", 1.0f);
    qx_in a;
    qx_w w;
    if (!qdq_in(c, 0, &a) || !qdq_weight(c, 1, 2, &w)) return LOWER_REJECT;
    int64_t M = A->shape[0], K = A->shape[1], Nn = tb ? B->shape[0] : B->shape[1];
    if (w.n > 1 && (w.n != Nn || w.axis != (tb ? 0 : 1)))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized Gemm: weight scales must be per output column");
    uint8_t *buf = arena_alloc(lw_arena(c), (size_t)(K * Nn) + 8);
    if (!buf) return lw_failed(c);
    const uint8_t *src = (const uint8_t *)w.data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < Nn; n++) buf[k * Nn + n] = tb ? src[n * K + k] : src[k * Nn + n];
    bool bbad;
    const double *bias = NULL;
    if (lw_has_input(c, 2)) {
        const lower_value *Cv = lw_in(c, 2);
        if (!Cv || (int64_t)lw_count(Cv->rank, Cv->shape) != Nn)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Gemm: C must have N elements");
        bias = qdq_bias(c, 2, Nn, &bbad);
        if (bbad) return LOWER_REJECT;
        if (bias && beta != 1.0) {
            double *b2 = arena_alloc(lw_arena(c), (size_t)Nn * sizeof(double) + 8);
            if (!b2) return lw_failed(c);
            for (int64_t n = 0; n < Nn; n++) b2[n] = bias[n] * beta;
            bias = b2;
        }
    }
    int64_t os[2] = {M, Nn};
    qx_out o;
    if (!qdq_out(c, 2, &o)) return LOWER_REJECT;
    return qdq_matmul_core(c, &a, 1, M, K, Nn, buf, 0, w.zp, w.n, w.scale, bias, alpha, &o, 2, os);
}

static lower_status head_matmul(lower_ctx *c) {
    bool bconst = true;
    if (lw_node(c)->n_inputs == 2 && qdq_in_dtype(c, 1, &bconst) && !bconst) return qdq_matmul_rt(c);
    const lower_value *A = lw_in(c, 0), *B = lw_in(c, 1);
    if (!A || !B || A->rank < 2 || B->rank != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized MatMul: needs a 2-D constant right operand");
    qx_in a;
    qx_w w;
    if (!qdq_in(c, 0, &a) || !qdq_weight(c, 1, 2, &w)) return LOWER_REJECT;
    int64_t K = B->shape[0], Nn = B->shape[1], rows = 1;
    for (uint32_t i = 0; i + 1 < A->rank; i++) rows *= A->shape[i];
    if (w.n > 1 && (w.n != Nn || w.axis != 1))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized MatMul: weight scales must be per column");
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, A->shape, sizeof os);
    os[A->rank - 1] = Nn;
    qx_out o;
    if (!qdq_out(c, A->rank, &o)) return LOWER_REJECT;
    return qdq_matmul_core(c, &a, 1, rows, K, Nn, (const uint8_t *)w.data, 0, w.zp, w.n, w.scale, NULL, 1.0,
                           &o, A->rank, os);
}

/* Broadcast shape of two operands (numpy rules, leading ones). */
bool qdq_bcast(const qx_in *a, const qx_in *b, uint32_t *rank, int64_t *os, int64_t *as, int64_t *bs) {
    uint32_t r = a->rank > b->rank ? a->rank : b->rank;
    for (uint32_t i = 0; i < r; i++) {
        int64_t da = i + a->rank >= r ? a->shape[i + a->rank - r] : 1;
        int64_t db = i + b->rank >= r ? b->shape[i + b->rank - r] : 1;
        as[i] = da;
        bs[i] = db;
        if (da != db && da != 1 && db != 1) return false;
        os[i] = da > db ? da : db;
    }
    *rank = r;
    return true;
}

static lower_status head_addmul(lower_ctx *c, bool is_mul) {
    qx_in a, b;
    qx_out o;
    if (!qdq_in(c, 0, &a) || !qdq_in(c, 1, &b)) return LOWER_REJECT;
    uint32_t r;
    int64_t os[LOWER_MAX_RANK], as[LOWER_MAX_RANK], bs[LOWER_MAX_RANK];
    if (!qdq_bcast(&a, &b, &r, os, as, bs))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "shapes do not broadcast");
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    if (a.t != CTOSA_DTYPE_INT8 || b.t != CTOSA_DTYPE_INT8)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "quantized %s: int8/uint8 only",
                         lw_node(c)->op_type);
    const char *x, *y, *z;
    if (is_mul) {
        x = qdq_rescale(c, a.x, a.t, CTOSA_DTYPE_INT32, a.rank, a.shape, 1.0, a.zp, 0, false, false);
        y = qdq_rescale(c, b.x, b.t, CTOSA_DTYPE_INT32, b.rank, b.shape, 1.0, b.zp, 0, false, false);
        x = lw_reshape(c, x, CTOSA_DTYPE_INT32, r, as);
        y = lw_reshape(c, y, CTOSA_DTYPE_INT32, r, bs);
        z = lw_mul(c, x, y, CTOSA_DTYPE_INT32, r, os);
        z = qdq_rescale_ewise(c, z, o.t, r, os, a.s * b.s / o.s, o.zp, true, 1, qdq_operand_bound(a.t, a.zp),
                              1, qdq_operand_bound(b.t, b.zp));
    } else {
        /* both operands to a common scale 2*max(sa,sb)/2^20 in int32 */
        double sm = 2.0 * (a.s > b.s ? a.s : b.s) / 1048576.0;
        x = qdq_rescale(c, a.x, a.t, CTOSA_DTYPE_INT32, a.rank, a.shape, a.s / sm, a.zp, 0, false, false);
        y = qdq_rescale(c, b.x, b.t, CTOSA_DTYPE_INT32, b.rank, b.shape, b.s / sm, b.zp, 0, false, false);
        x = lw_reshape(c, x, CTOSA_DTYPE_INT32, r, as);
        y = lw_reshape(c, y, CTOSA_DTYPE_INT32, r, bs);
        z = lw_add(c, x, y, CTOSA_DTYPE_INT32, r, os);
        double rz = sm / o.s;
        /* one RESCALE also with --requant ort: ORT's QLinearAdd rounds
         * its float32 multiply-adds on the way (qdq_rescale.c) */
        z = qdq_rescale_ewise(c, z, o.t, r, os, rz, o.zp, false, a.s / sm, qdq_operand_bound(a.t, a.zp),
                              b.s / sm, qdq_operand_bound(b.t, b.zp));
    }
    LW_TRY(z);
    return qdq_finish(c, z, &o, r, os);
}

static lower_status head_gap(lower_ctx *c) {
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    if (a.rank < 3) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "GlobalAveragePool: rank below 3");
    if (!qdq_out(c, a.rank, &o)) return LOWER_REJECT;
    const char *x = qdq_rescale(c, a.x, a.t, CTOSA_DTYPE_INT32, a.rank, a.shape, 1.0, a.zp, 0, false, false);
    int64_t sh[LOWER_MAX_RANK];
    memcpy(sh, a.shape, sizeof sh);
    int64_t cnt = 1;
    for (uint32_t i = 2; i < a.rank; i++) {
        int64_t ns[LOWER_MAX_RANK];
        cnt *= sh[i];
        x = lw_reduce(c, CTOSA_OP_REDUCE_SUM, x, CTOSA_DTYPE_INT32, a.rank, sh, (int32_t)i, ns);
        memcpy(sh, ns, sizeof sh);
    }
    /* round half to even as QuantizeLinear does, where exact (qdq_mean.c) */
    int64_t smax = cnt * (a.t == CTOSA_DTYPE_INT16 ? 65535 : 255);
    const char *y = qdq_mean_exact(c, x, a.rank, sh, cnt, smax, a.s / o.s, o.t, o.zp);
    if (!y && !c->rejected)
        y = qdq_rescale(c, x, CTOSA_DTYPE_INT32, o.t, a.rank, sh, a.s / ((double)cnt * o.s), 0, o.zp, false,
                        false);
    LW_TRY(y);
    return qdq_finish(c, y, &o, a.rank, sh);
}

static lower_status head_maxpool(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    bool avg = strcmp(n->op_type, "AveragePool") == 0;
    if (n->n_outputs > 1 && n->outputs[1][0])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "MaxPool: the Indices output is used");
    if (avg && lw_attr_int(c, "count_include_pad", 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized AveragePool: count_include_pad = 1");
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    if (a.rank != 4) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: 2-D only", n->op_type);
    if (avg && a.t != CTOSA_DTYPE_INT8 && a.t != CTOSA_DTYPE_INT16)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "quantized AveragePool: int8 / int16 only");
    if (!qdq_out(c, 4, &o)) return LOWER_REJECT;
    lw_dim dm[2];
    lower_status st;
    if ((st = lw_read_window(c, 2, a.shape, NULL, dm)) != LOWER_OK) return st;
    if ((st = lw_window(c, 2, dm, lw_attr_int(c, "ceil_mode", 0) != 0)) != LOWER_OK) return st;
    if (dm[0].d != 1 || dm[1].d != 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: dilations", n->op_type);
    if (avg && (lw_attr_int(c, "ceil_mode", 0) || dm[0].pe != dm[0].pe0 || dm[1].pe != dm[1].pe0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized AveragePool: ceil_mode / uneven windows");
    int64_t ls[4];
    lw_shape_last(4, a.shape, ls);
    const char *x = lw_to_last(c, a.x, a.t, 4, a.shape);
    int64_t start[4] = {0}, size[4] = {ls[0], ls[1] - dm[0].crop, ls[2] - dm[1].crop, ls[3]};
    x = lw_slice(c, x, a.t, 4, ls, start, size);
    int32_t kernel[2] = {(int32_t)dm[0].k, (int32_t)dm[1].k},
            stride[2] = {(int32_t)dm[0].s, (int32_t)dm[1].s};
    int32_t pad[4] = {(int32_t)dm[0].pb, (int32_t)dm[0].pe, (int32_t)dm[1].pb, (int32_t)dm[1].pe};
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.kernel = (ctosa_i32s){kernel, 2};
    at.stride = (ctosa_i32s){stride, 2};
    at.pad = (ctosa_i32s){pad, 4};
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    int64_t os[4] = {ls[0], dm[0].out, dm[1].out, ls[3]};
    const char *y = lw_tensor(c, a.t, 4, os);
    LW_TRY(x && y);
    if (avg) {
        /* the average stays in the input's parameters (the window excludes
         * padding, as ONNX with count_include_pad = 0) */
        at.nan_mode = 0;
        at.acc_type = CTOSA_DTYPE_INT32;
        const char *izp = lw_zero_point(c, a.t, a.zp), *ozp = lw_zero_point(c, a.t, a.zp);
        LW_TRY(izp && ozp);
        const char *in3[3] = {x, izp, ozp};
        LW_TRY(lw_op(c, CTOSA_OP_AVG_POOL2D, 3, in3, 1, &y, &at));
    } else {
        LW_TRY(lw_op(c, CTOSA_OP_MAX_POOL2D, 1, &x, 1, &y, &at));
    }
    int64_t fs[4];
    lw_shape_first(4, os, fs);
    y = lw_to_first(c, y, a.t, 4, os);
    qx_in m = a;
    m.x = y;
    y = qdq_requant(c, &m, &o, 4, fs);
    LW_TRY(y);
    return qdq_finish(c, y, &o, 4, fs);
}

/* The end of the data-movement heads: the moved integers x (rank r, shape
 * os) requantised to the output. Relu / Clip heads (and a QuantizeLinear
 * straight after its DequantizeLinear) move nothing: their
 * range is the output's clamp (qdq_out). */
static lower_status move_finish(lower_ctx *c, const qx_in *a, const char *x, uint32_t r, const int64_t *os) {
    qx_out o;
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    qx_in m = *a;
    m.x = x;
    x = qdq_requant(c, &m, &o, r, os);
    LW_TRY(x);
    return qdq_finish(c, x, &o, r, os);
}

static lower_status head_clamp(lower_ctx *c) {
    qx_in a;
    const qdq_node *qn = qdq_info(c);
    if (qn->n_chain) {
        /* the end of a movement chain: the moved integers, with the
         * parameters of the chain's DequantizeLinear */
        const lower_value *V = lw_in(c, 0);
        if (!V) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "QuantizeLinear: input is not available");
        lw_val *xv = lw_lookup(c->s, c->s->g->nodes[qn->chain_dq].inputs[0]);
        if (!xv || xv->v.data)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized data movement of a constant");
        if (!qdq_dq_operand(c, (uint32_t)qn->chain_dq, lw_input(c, 0), V->rank, V->shape, &a))
            return LOWER_REJECT;
    } else if (!qdq_in(c, 0, &a)) {
        return LOWER_REJECT;
    }
    return move_finish(c, &a, a.x, a.rank, a.shape);
}

static lower_status head_flatten(lower_ctx *c) {
    qx_in a;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    uint32_t r = a.rank;
    int64_t axis = lw_attr_int(c, "axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > (int64_t)r) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Flatten: axis");
    int64_t p0 = 1, p1 = 1;
    for (uint32_t i = 0; i < r; i++) {
        if ((int64_t)i < axis) p0 *= a.shape[i];
        else p1 *= a.shape[i];
    }
    int64_t os[LOWER_MAX_RANK] = {p0, p1};
    return move_finish(c, &a, lw_reshape(c, a.x, a.t, 2, os), 2, os);
}

static lower_status head_reshape(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    qx_in a;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, a.shape, sizeof os);
    const int64_t *sv = NULL;
    int64_t k = lw_const_i64(c, 1, &sv);
    if (k < 0)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, n->n_inputs > 1 ? n->inputs[1] : NULL,
                         "Reshape: shape must be a constant");
    if (k > LOWER_MAX_RANK) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: rank too large");
    int64_t total = lw_count(a.rank, a.shape), known = 1;
    int neg = -1;
    for (int64_t i = 0; i < k; i++) {
        os[i] = sv[i] == 0 && !lw_attr_int(c, "allowzero", 0) && i < (int64_t)a.rank ? a.shape[i] : sv[i];
        if (os[i] == -1 && neg < 0) neg = (int)i;
        else if (os[i] < 0 || __builtin_mul_overflow(known, os[i], &known))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: invalid target shape");
    }
    if (neg >= 0) os[neg] = known ? total / known : 0;
    if (neg >= 0 ? (known == 0 || os[neg] * known != total) : known != total)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Reshape: target shape does not match the %lld input elements", (long long)total);
    uint32_t r = (uint32_t)k;
    return move_finish(c, &a, lw_reshape(c, a.x, a.t, r, os), r, os);
}

static lower_status head_transpose(lower_ctx *c) {
    qx_in a;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    uint32_t r = a.rank;
    const int64_t *pv = NULL;
    int64_t k = lw_attr_ints(c, "perm", &pv);
    int32_t perm[LOWER_MAX_RANK];
    if (k >= 0 && k != (int64_t)r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Transpose: perm has %lld entries for rank %u",
                         (long long)k, r);
    bool seen[LOWER_MAX_RANK] = {false};
    for (uint32_t i = 0; i < r; i++) {
        int64_t pi = k == (int64_t)r ? pv[i] : (int64_t)(r - 1 - i);
        if (pi < 0 || pi >= (int64_t)r || seen[pi])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Transpose: perm is not a permutation of 0..%u",
                             r - 1);
        seen[pi] = true;
        perm[i] = (int32_t)pi;
    }
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, a.shape, sizeof os);
    for (uint32_t i = 0; i < r; i++) os[i] = a.shape[perm[i]];
    return move_finish(c, &a, lw_transpose(c, a.x, a.t, r, a.shape, perm), r, os);
}

static lower_status head_concat(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    uint32_t k = n->n_inputs;
    const char **xs = arena_alloc(lw_arena(c), (k + 1) * sizeof *xs);
    if (!xs) return lw_failed(c);
    qx_in a0;
    if (!qdq_in(c, 0, &a0)) return LOWER_REJECT;
    qx_out o;
    if (!qdq_out(c, a0.rank, &o)) return LOWER_REJECT;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), a0.rank, "axis", &axis)) return LOWER_REJECT;
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, a0.shape, sizeof os);
    os[axis] = 0;
    for (uint32_t i = 0; i < k; i++) {
        qx_in a;
        if (!qdq_in(c, i, &a)) return LOWER_REJECT;
        if (a.rank != a0.rank) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Concat: ranks differ");
        xs[i] = qdq_requant(c, &a, &o, a.rank, a.shape);
        LW_TRY(xs[i]);
        os[axis] += a.shape[axis];
    }
    const char *y = lw_concat(c, k, xs, o.t, a0.rank, axis);
    LW_TRY(y);
    return qdq_finish(c, y, &o, a0.rank, os);
}

/* Float functions of the table activations (rows of the head table). */
static double act_sigmoid(lower_ctx *c, double x) { return 1.0 / (1.0 + exp(-x)); }
static double act_tanh(lower_ctx *c, double x) { return tanh(x); }
static double act_exp(lower_ctx *c, double x) { return exp(x); }
static double act_log(lower_ctx *c, double x) { return log(x); }
static double act_erf(lower_ctx *c, double x) { return erf(x); }
static double act_softplus(lower_ctx *c, double x) { return x > 30 ? x : log1p(exp(x)); }

static double act_hardsigmoid(lower_ctx *c, double x) {
    double a = lw_attr_float(c, "alpha", 0.2f), b = lw_attr_float(c, "beta", 0.5f);
    double v = a * x + b;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

static double act_hardswish(lower_ctx *c, double x) {
    double v = x / 6.0 + 0.5;
    return x * (v < 0 ? 0 : v > 1 ? 1 : v);
}

static double act_leakyrelu(lower_ctx *c, double x) {
    double a = lw_attr_float(c, "alpha", 0.01f);
    return x >= 0 ? x : a * x;
}

static double act_elu(lower_ctx *c, double x) {
    double a = lw_attr_float(c, "alpha", 1.0f);
    return x >= 0 ? x : a * expm1(x);
}

static double act_gelu(lower_ctx *c, double x) {
    const char *ap = lw_attr_str(c, "approximate", "none");
    if (ap && !strcmp(ap, "tanh"))
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / 1.4142135623730951));
}

/* int8 activations through a 256-entry TABLE: entry i holds the output
 * quantisation of f((i - 128 - zp_x) * s_x). */
static lower_status head_table(lower_ctx *c) {
    const char *op = lw_node(c)->op_type;
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a) || !qdq_out(c, a.rank, &o)) return LOWER_REJECT;
    if (a.t != CTOSA_DTYPE_INT8 || o.t != CTOSA_DTYPE_INT8)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                         "quantized %s: int16 tables (513 entries) are not "
                         "built yet",
                         op);
    int8_t tab[256];
    for (int i = 0; i < 256; i++) {
        double x = (double)((i - 128) - a.zp) * a.s, y = 0;
        if (!qdq_act_fn(c, op, x, &y))
            return lw_reject(c, LOWER_UNSUPPORTED_OP, NULL, "%s has no table form", op);
        double qv = isnan(y) ? (double)o.lo : nearbyint(y / o.s) + (double)o.zp;
        if (!(qv >= (double)o.lo)) qv = (double)o.lo;
        if (qv > (double)o.hi) qv = (double)o.hi;
        tab[i] = (int8_t)qv;
    }
    int64_t n = 256;
    const char *tc = lw_const(c, CTOSA_DTYPE_INT8, 1, &n, tab);
    const char *y = lw_tensor(c, CTOSA_DTYPE_INT8, a.rank, a.shape);
    LW_TRY(tc && y);
    const char *in[2] = {a.x, tc};
    LW_TRY(lw_op(c, CTOSA_OP_TABLE, 2, in, 1, &y, NULL));
    return qdq_finish(c, y, &o, a.rank, a.shape);
}

/* Other pure data movement (Squeeze, Unsqueeze, Slice, Gather, Tile,
 * Expand, DepthToSpace, SpaceToDepth): the operator's own lowering moves
 * the integer carrier (bits are exact for any dtype), then the result is
 * requantised when the output's parameters differ from the input's. */
static lower_status head_generic_move(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_entry *ent = lower_find(n->domain, n->op_type, lw_opset(c));
    if (!ent) return lw_reject(c, LOWER_UNSUPPORTED_OP, NULL, "%s has no lowering", n->op_type);
    lower_session *s = c->s;
    lw_val *hv = lw_lookup(s, n->inputs[0]);
    if (!hv || hv->producer < 0) return lw_reject(c, LOWER_INTERNAL, NULL, "quantized input missing");
    qparam pi;
    if (!qp_of(c, (uint32_t)hv->producer, hv->v.rank, &pi)) return LOWER_REJECT;
    lw_val *xv = lw_lookup(s, s->g->nodes[hv->producer].inputs[0]);
    if (!xv || xv->v.data)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s of a constant", n->op_type);
    if (ent->fn(c) != LOWER_OK || c->rejected) return LOWER_REJECT;
    const char *y = c->out_names[0];
    const ctosa_tensor *yt = y ? lw_tensor_info(c, y) : NULL;
    if (!yt) return lw_reject(c, LOWER_INTERNAL, NULL, "%s produced no output", n->op_type);
    qx_out o;
    if (!qdq_out(c, yt->rank, &o)) return LOWER_REJECT;
    bool in_u8 = xv->v.onnx_dtype == CTOSA_ONNX_UINT8;
    int64_t izp = pi.zp[0] - (in_u8 ? 128 : 0);
    if (pi.n == 1 && pi.scale[0] == o.s && izp == o.zp && in_u8 == o.u8 && yt->dtype == o.t &&
        o.lo == (o.t == CTOSA_DTYPE_INT8 ? -128 : -32768) && o.hi == (o.t == CTOSA_DTYPE_INT8 ? 127 : 32767))
        return LOWER_OK; /* same parameters: the moved bits are the output */
    if (pi.n != 1 || (yt->dtype != CTOSA_DTYPE_INT8 && yt->dtype != CTOSA_DTYPE_INT16))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s with per-axis or int16 input",
                         n->op_type);
    int64_t sh[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < yt->rank; i++) sh[i] = yt->shape[i];
    qx_in a = {y, yt->dtype, pi.scale[0], izp, yt->rank, {0}};
    memcpy(a.shape, sh, sizeof sh);
    if (in_u8)
        a.x = qdq_rescale(c, y, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT8, yt->rank, sh, 1.0, pi.zp[0], izp, true,
                          false);
    LW_TRY(a.x);
    const char *z = qdq_requant(c, &a, &o, yt->rank, sh);
    LW_TRY(z);
    return qdq_finish(c, z, &o, yt->rank, sh);
}

/* Pad modes that only move data (the float lowering's slices, reversals,
 * tiles and concatenations, exact on the integer carrier); mode constant
 * writes a value and has its own head (qdq_pad). */
static bool pad_moves(const ctosa_onnx_node *n) {
    const ctosa_onnx_attr *m = ctosa_onnx_node_attr(n, "mode");
    return m && ((m->s.n == 7 && !memcmp(m->s.p, "reflect", 7)) ||
                 (m->s.n == 4 && !memcmp(m->s.p, "edge", 4)) || (m->s.n == 4 && !memcmp(m->s.p, "wrap", 4)));
}

static lower_status head_add(lower_ctx *c) { return head_addmul(c, false); }
static lower_status head_mul(lower_ctx *c) { return head_addmul(c, true); }

/* ------------------------------------------------------ the head table */

#define ACT(op, f) \
    {op, QDQ_W8, 1, false, NULL, head_table, f}, { op, QDQ_W16, 1, false, NULL, qdq_table16, f }
#define MOVE(op) \
    { op, QDQ_WANY, 1, false, NULL, head_generic_move, NULL }

static const qdq_head heads[] = {
    /* integer accumulation, one RESCALE to the output */
    {"Conv", QDQ_WANY, 2, true, NULL, head_conv, NULL},
    {"ConvTranspose", QDQ_WANY, 2, true, qdq_convtranspose_groupable, qdq_convtranspose, NULL},
    {"Gemm", QDQ_WANY, 2, true, NULL, head_gemm, NULL},
    {"MatMul", QDQ_WANY, 2, true, NULL, head_matmul, NULL},
    {"Add", QDQ_W8, 2, true, NULL, head_add, NULL},
    {"Add", QDQ_W16, 2, true, NULL, qdq_add16, NULL},
    {"Sub", QDQ_WANY, 2, true, NULL, qdq_sub, NULL},
    {"Mul", QDQ_W8, 2, false, NULL, head_mul, NULL},
    {"Mul", QDQ_W16, 2, false, NULL, qdq_mul16, NULL},
    {"GlobalAveragePool", QDQ_WANY, 1, false, NULL, head_gap, NULL},
    {"ReduceMean", QDQ_WANY, 1, false, NULL, qdq_reducemean, NULL},
    {"MaxPool", QDQ_WANY, 1, false, NULL, head_maxpool, NULL},
    {"AveragePool", QDQ_WANY, 1, false, NULL, head_maxpool, NULL},
    {"Concat", QDQ_WANY, 0, false, NULL, head_concat, NULL},
    /* decompositions with constant scales / pads / sizes */
    {"Resize", QDQ_WANY, 1, false, NULL, qdq_resize, NULL},
    {"Pad", QDQ_WANY, 1, false, pad_moves, head_generic_move, NULL}, /* reflect, edge, wrap */
    {"Pad", QDQ_WANY, 1, false, qdq_pad_groupable, qdq_pad, NULL},
    {"Softmax", QDQ_WANY, 1, false, NULL, qdq_softmax, NULL},
    {"LayerNormalization", QDQ_WANY, 1, false, NULL, qdq_layernorm, NULL},
    /* recurrent layers unrolled in integers (int8 W / R behind DequantizeLinear) */
    {"LSTM", QDQ_WANY, 1, false, qdq_rnn_groupable, qdq_rnn, NULL},
    {"GRU", QDQ_WANY, 1, false, qdq_rnn_groupable, qdq_rnn, NULL},
    {"RNN", QDQ_WANY, 1, false, qdq_rnn_groupable, qdq_rnn, NULL},
    /* data movement (or a clamp) on the integers, then a requantisation */
    {"Flatten", QDQ_WANY, 1, false, NULL, head_flatten, NULL},
    {"Reshape", QDQ_WANY, 1, false, NULL, head_reshape, NULL},
    {"Transpose", QDQ_WANY, 1, false, NULL, head_transpose, NULL},
    {"Relu", QDQ_WANY, 1, false, NULL, head_clamp, NULL},
    {"Clip", QDQ_WANY, 1, false, NULL, head_clamp, NULL},
    /* DequantizeLinear -> QuantizeLinear with nothing between: the
     * QuantizeLinear is its own head (and Q), a RESCALE when the
     * parameters differ */
    {"QuantizeLinear", QDQ_WANY, 1, false, NULL, head_clamp, NULL},
    MOVE("Squeeze"),
    MOVE("Unsqueeze"),
    MOVE("Slice"),
    MOVE("Gather"),
    MOVE("Tile"),
    MOVE("Expand"),
    MOVE("DepthToSpace"),
    MOVE("SpaceToDepth"),
    /* TABLE activations: 256 entries for int8, 513 for int16 */
    ACT("Sigmoid", act_sigmoid),
    ACT("Tanh", act_tanh),
    ACT("Exp", act_exp),
    ACT("Log", act_log),
    ACT("Erf", act_erf),
    ACT("Softplus", act_softplus),
    ACT("HardSigmoid", act_hardsigmoid),
    ACT("HardSwish", act_hardswish),
    ACT("LeakyRelu", act_leakyrelu),
    ACT("Elu", act_elu),
    ACT("Gelu", act_gelu),
};
#undef ACT
#undef MOVE

static bool default_domain(const ctosa_onnx_node *n) {
    return !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
}

bool qdq_moves_data(const ctosa_onnx_node *n) {
    const qdq_head *h = qdq_head_of(n, QDQ_WANY);
    return h && (h->fn == head_flatten || h->fn == head_reshape || h->fn == head_transpose ||
                 h->fn == head_generic_move);
}

const qdq_head *qdq_head_of(const ctosa_onnx_node *n, unsigned w) {
    if (!default_domain(n)) return NULL;
    const qdq_head *first = NULL;
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        if (!(heads[i].widths & w) || strcmp(heads[i].op, n->op_type) != 0) continue;
        /* rows of one operator split by attributes: the row that takes n */
        if (!heads[i].groupable || heads[i].groupable(n)) return &heads[i];
        if (!first) first = &heads[i];
    }
    return first;
}

bool qdq_act_fn(lower_ctx *c, const char *op, double x, double *y) {
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++)
        if (heads[i].act && strcmp(heads[i].op, op) == 0) {
            *y = heads[i].act(c, x);
            return true;
        }
    return false;
}

int32_t qdq_in_dtype(lower_ctx *c, uint32_t i, bool *konst) {
    lower_session *s = c->s;
    const ctosa_onnx_node *n = lw_node(c);
    if (konst) *konst = false;
    if (i >= n->n_inputs) return 0;
    lw_val *hv = lw_lookup(s, n->inputs[i]);
    if (!hv || hv->producer < 0) return 0;
    const ctosa_onnx_node *p = &s->g->nodes[hv->producer];
    if (!default_domain(p) || strcmp(p->op_type, "DequantizeLinear") != 0 || p->n_inputs < 1) return 0;
    lw_val *xv = lw_lookup(s, p->inputs[0]);
    if (!xv) return 0;
    if (konst) *konst = xv->v.data != NULL;
    return xv->v.onnx_dtype;
}

/* QDQ_W16 when input 0, input 1 or the group's QuantizeLinear output is
 * int16, QDQ_W8 otherwise. */
static unsigned group_width(lower_ctx *c) {
    const qdq_node *qn = qdq_info(c);
    int32_t od = 0;
    if (qn->q >= 0) {
        const ctosa_onnx_node *q = &c->s->g->nodes[qn->q];
        if (q->n_inputs < 3 || !q->inputs[2][0]) od = CTOSA_ONNX_UINT8;
        else {
            lw_val *z = lw_lookup(c->s, q->inputs[2]);
            od = z ? z->v.onnx_dtype : 0;
        }
    }
    bool wide = qdq_in_dtype(c, 0, NULL) == CTOSA_ONNX_INT16 || od == CTOSA_ONNX_INT16;
    if (lw_node(c)->n_inputs > 1 && qdq_in_dtype(c, 1, NULL) == CTOSA_ONNX_INT16) wide = true;
    return wide ? QDQ_W16 : QDQ_W8;
}

lower_status qdq_lower_head(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    if (qdq_info(c)->isl) return qdq_island_head(c);      /* a float island of one input: one TABLE */
    if (qdq_info(c)->reg >= 0) return qdq_region_head(c); /* the sink of a movement region */
    const qdq_head *h = qdq_head_of(n, group_width(c));
    if (!h) return lw_reject(c, LOWER_INTERNAL, NULL, "%s heads no quantized group", n->op_type);
    return h->fn(c);
}
