/* qdq_ops8.c - quantized Pad, Resize and ConvTranspose heads.
 *
 * Pad (mode constant): PAD on the integer carrier whose pad value is the
 * quantised constant_value (the zero point for the default 0), then a
 * RESCALE when the output's parameters differ.
 * Resize: the float Resize lowering (lower_resize.c) runs on the integer
 * carrier; nearest is RESIZE int8 -> int8 (the bits move), bilinear is
 * RESIZE int8 -> int32 (int16 -> int48) whose result carries the factor
 * n_y n_x of the scales and is RESCALEd back by lower_resize.c, then the
 * group requantises when the output's parameters differ. uint8 bits cannot
 * be interpolated as int8: the lowering reads their signed conversion.
 * ConvTranspose (2-D, group 1): TRANSPOSE_CONV2D int8 x int8 -> int32 with
 * both zero points, an int32 bias and a per-channel RESCALE (int16
 * activations: int48 accumulator and 16-bit multipliers, EXT-INT16). */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

static int64_t type_lo(ctosa_dtype t) { return t == CTOSA_DTYPE_INT8 ? -128 : -32768; }
static int64_t type_hi(ctosa_dtype t) { return t == CTOSA_DTYPE_INT8 ? 127 : 32767; }

/* ------------------------------------------------------------------ Pad */

bool qdq_pad_groupable(const ctosa_onnx_node *n) {
    const ctosa_onnx_attr *m = ctosa_onnx_node_attr(n, "mode");
    return !m || (m->s.n == 8 && !memcmp(m->s.p, "constant", 8));
}

lower_status qdq_pad(lower_ctx *c) {
    const char *mode = lw_attr_str(c, "mode", "constant");
    if (!mode || strcmp(mode, "constant") != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Pad: mode '%s' (constant only)",
                         mode ? mode : "?");
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    uint32_t r = a.rank;
    int64_t pads[2 * LOWER_MAX_RANK];
    memset(pads, 0, sizeof pads);
    const int64_t *pv = NULL;
    int64_t np;
    if (lw_opset(c) < 11) {
        np = lw_attr_ints(c, "pads", &pv);
    } else {
        np = lw_has_input(c, 1) ? lw_const_i64(c, 1, &pv) : -1;
        if (np < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, 1) ? lw_node(c)->inputs[1] : NULL,
                             "quantized Pad: pads must be a constant");
    }
    int32_t axes[LOWER_MAX_RANK];
    int64_t na = r;
    for (uint32_t i = 0; i < r; i++) axes[i] = (int32_t)i;
    if (lw_opset(c) >= 18 && lw_has_input(c, 3)) {
        const int64_t *av = NULL;
        na = lw_const_i64(c, 3, &av);
        if (na < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[3],
                             "quantized Pad: axes must be a constant");
        for (int64_t i = 0; i < na && i < LOWER_MAX_RANK; i++)
            if (!lw_axis(c, av[i], r, "axes", &axes[i])) return LOWER_REJECT;
    }
    if (np != 2 * na || na > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Pad: %lld pads for %lld axes",
                         (long long)np, (long long)na);
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, a.shape, sizeof os);
    for (int64_t i = 0; i < na; i++) {
        if (pv[i] < 0 || pv[na + i] < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Pad: negative pads (cropping)");
        pads[2 * axes[i]] = pv[i];
        pads[2 * axes[i] + 1] = pv[na + i];
        if (__builtin_add_overflow(os[axes[i]], pv[i], &os[axes[i]]) ||
            __builtin_add_overflow(os[axes[i]], pv[na + i], &os[axes[i]])) /* hostile pads */
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Pad: the padded shape overflows");
    }
    double cval = 0;
    if (lw_opset(c) < 11) {
        cval = lw_attr_float(c, "value", 0.0f);
    } else if (lw_has_input(c, 2)) {
        const double *cv = NULL;
        if (lw_const_f64(c, 2, &cv) != 1)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[2],
                             "quantized Pad: constant_value must be a one-element constant");
        cval = cv[0];
    }
    if (!qdq_out(c, r, &o)) return LOWER_REJECT;
    /* the pad value in the input's quantisation (DequantizeLinear of it is
     * the float constant_value, up to the input's step) */
    double pq = nearbyint(cval / a.s) + (double)a.zp;
    if (pq < (double)type_lo(a.t)) pq = (double)type_lo(a.t);
    if (pq > (double)type_hi(a.t)) pq = (double)type_hi(a.t);
    const char *y = lw_pad(c, a.x, a.t, r, a.shape, pads, pq);
    LW_TRY(y);
    qx_in m = a;
    m.x = y;
    memcpy(m.shape, os, sizeof os);
    y = qdq_requant(c, &m, &o, r, os);
    LW_TRY(y);
    return qdq_finish(c, y, &o, r, os);
}

/* --------------------------------------------------------------- Resize */

lower_status qdq_resize(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const lower_entry *ent = lower_find(n->domain, n->op_type, lw_opset(c));
    if (!ent) return lw_reject(c, LOWER_UNSUPPORTED_OP, NULL, "Resize has no lowering");
    qx_in a;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    const lower_value *X = lw_in(c, 0);
    if (!X || X->data) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized Resize of a constant");
    lw_val *hv = lw_lookup(c->s, n->inputs[0]);
    lw_val *xv = hv && hv->producer >= 0 ? lw_lookup(c->s, c->s->g->nodes[hv->producer].inputs[0]) : NULL;
    bool u8 = xv && xv->v.onnx_dtype == CTOSA_ONNX_UINT8;
    /* uint8 bits cannot be interpolated as int8: the float lowering reads
     * the signed conversion qdq_in made (the block's binding of the
     * input name is swapped for the call and restored after) */
    const char *prev = u8 ? strmap_get(c->tmap, n->inputs[0]) : NULL;
    if (u8 && (!prev || !strmap_put(c->tmap, n->inputs[0], (void *)a.x))) return lw_failed(c);
    lower_status fst = ent->fn(c);
    if (u8) strmap_put(c->tmap, n->inputs[0], (void *)prev);
    if (fst != LOWER_OK || c->rejected) return LOWER_REJECT;
    const char *y = c->out_names[0];
    const ctosa_tensor *yt = y ? lw_tensor_info(c, y) : NULL;
    if (!yt || yt->dtype != a.t)
        return lw_reject(c, LOWER_INTERNAL, NULL, "quantized Resize produced no %s output",
                         ctosa_dtype_short(a.t));
    qx_out o;
    if (!qdq_out(c, yt->rank, &o)) return LOWER_REJECT;
    int64_t sh[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < yt->rank; i++) sh[i] = yt->shape[i];
    qx_in m = a;
    m.x = y;
    m.rank = yt->rank;
    memcpy(m.shape, sh, sizeof sh);
    y = qdq_requant(c, &m, &o, yt->rank, sh);
    LW_TRY(y);
    return qdq_finish(c, y, &o, yt->rank, sh);
}

/* -------------------------------------------------------- ConvTranspose */

bool qdq_convtranspose_groupable(const ctosa_onnx_node *n) {
    const ctosa_onnx_attr *g = ctosa_onnx_node_attr(n, "group");
    const ctosa_onnx_attr *os = ctosa_onnx_node_attr(n, "output_shape");
    return (!g || g->i == 1) && !os;
}

lower_status qdq_convtranspose(lower_ctx *c) {
    qx_in a;
    qx_w w;
    qx_out o;
    const lower_value *W = lw_in(c, 1);
    if (!W || W->rank != 4)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: 2-D only");
    if (!qdq_in(c, 0, &a) || !qdq_weight(c, 1, 4, &w) || !qdq_out(c, 4, &o)) return LOWER_REJECT;
    if (a.rank != 4) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: 2-D only");
    int64_t group = lw_attr_int(c, "group", 1);
    if (group != 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: group %lld",
                         (long long)group);
    bool a16 = a.t == CTOSA_DTYPE_INT16;
    if (o.t != a.t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL,
                         "quantized ConvTranspose: input and output widths differ");
    int64_t N = a.shape[0], C = a.shape[1], M = W->shape[1], KH = W->shape[2], KW = W->shape[3];
    if (W->shape[0] != C)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: weight channels");
    /* ONNX ConvTranspose weights are [C, M, kH, kW]: per-output-channel
     * scales are along axis 1 */
    if (w.n > 1 && (w.n != M || w.axis != 1))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: weight scales must be per output channel (axis 1)");
    lw_dim dm[2];
    lower_status st;
    if ((st = lw_read_window(c, 2, a.shape, W->shape + 2, dm)) != LOWER_OK) return st;
    const int64_t *opad = NULL, *oshape = NULL;
    int64_t nop = lw_attr_ints(c, "output_padding", &opad), nos = lw_attr_ints(c, "output_shape", &oshape);
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    if ((nop >= 0 && nop != 2) || nos >= 0 || !ap || (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: output_shape / auto_pad SAME");
    int64_t opb[2], ope[2], crop[2], kd[2], full[4] = {N, 0, 0, M}, os[4] = {N, 0, 0, M};
    for (int i = 0; i < 2; i++) {
        lw_dim *d = &dm[i];
        if (!strcmp(ap, "VALID")) d->pb = d->pe = 0;
        int64_t op = nop >= 0 ? opad[i] : 0;
        kd[i] = (d->k - 1) * d->d + 1;
        d->out = d->s * (d->in - 1) + op + kd[i] - d->pb - d->pe;
        if (d->out < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: output size");
        opb[i] = -d->pb;
        ope[i] = op - d->pe;
        crop[i] = 0;
        if (opb[i] <= -kd[i]) { /* TOSA: out_pad > -kernel; crop afterwards */
            crop[i] = d->pb;
            opb[i] = 0;
        }
        if (ope[i] <= -kd[i]) ope[i] = 0;
        full[1 + i] = (d->in - 1) * d->s + opb[i] + ope[i] + kd[i];
        os[1 + i] = d->out;
    }
    /* weight [C][M][ky][kx] -> [M][ky*dy][kx*dx][C], dilations as zeros
     * (weight zero point: the gap entries hold the zero point) */
    int64_t kvol = kd[0] * kd[1];
    int8_t *buf = arena_alloc(lw_arena(c), (size_t)(M * kvol * C) + 8);
    double *bq = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    double *ratio = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    if (!buf || !bq || !ratio) return lw_failed(c);
    memset(buf, (int)(int8_t)w.zp, (size_t)(M * kvol * C));
    for (int64_t i = 0; i < C; i++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t ky = 0; ky < KH; ky++)
                for (int64_t kx = 0; kx < KW; kx++)
                    buf[((m * kd[0] + ky * dm[0].d) * kd[1] + kx * dm[1].d) * C + i] =
                        w.data[((i * M + m) * KH + ky) * KW + kx];
    bool bbad;
    const double *bias = qdq_bias(c, 2, M, &bbad);
    if (bbad) return LOWER_REJECT;
    for (int64_t m = 0; m < M; m++) {
        double acc_s = a.s * w.scale[w.n > 1 ? m : 0];
        bq[m] = bias ? nearbyint(bias[m] / acc_s) : 0;
        double lim = a16 ? 140737488355327.0 : 2147483647.0;
        lim -= (a16 ? 65535.0 * 255.0 : 65025.0) * (double)C * (double)KH * (double)KW;
        if (!(fabs(bq[m]) <= lim)) bq[m] = bq[m] > 0 ? lim : -lim;
        ratio[m] = acc_s / o.s;
    }
    ctosa_dtype acc_t = a16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    const char *x = lw_to_last(c, a.x, a.t, 4, a.shape);
    int64_t wshape[4] = {M, kd[0], kd[1], C};
    const char *wc = lw_const(c, CTOSA_DTYPE_INT8, 4, wshape, buf);
    const char *bc = lw_const_from_f64(c, acc_t, 1, &M, bq);
    const char *izp = lw_zero_point(c, a.t, a.zp), *wzp = lw_zero_point(c, CTOSA_DTYPE_INT8, w.zp);
    const char *acc = lw_tensor(c, acc_t, 4, full);
    LW_TRY(x && wc && bc && izp && wzp && acc);
    int32_t outpad[4] = {(int32_t)opb[0], (int32_t)ope[0], (int32_t)opb[1], (int32_t)ope[1]};
    int32_t stride[2] = {(int32_t)dm[0].s, (int32_t)dm[1].s};
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.out_pad = (ctosa_i32s){outpad, 4};
    at.stride = (ctosa_i32s){stride, 2};
    at.acc_type = acc_t;
    const char *in[5] = {x, wc, bc, izp, wzp};
    LW_TRY(lw_op(c, CTOSA_OP_TRANSPOSE_CONV2D, 5, in, 1, &acc, &at));
    const char *y = qdq_rescale_n(c, acc, acc_t, o.t, 4, full, w.n > 1 ? M : 1, ratio, 0, o.zp, false, false);
    if (crop[0] || crop[1] || full[1] != os[1] || full[2] != os[2]) {
        int64_t s0[4] = {0, crop[0], crop[1], 0};
        y = lw_slice(c, y, o.t, 4, full, s0, os);
    }
    y = lw_to_first(c, y, o.t, 4, os);
    LW_TRY(y);
    int64_t fs[4];
    lw_shape_first(4, os, fs);
    return qdq_finish(c, y, &o, 4, fs);
}
