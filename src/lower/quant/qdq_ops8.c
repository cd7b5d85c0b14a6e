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
 * ConvTranspose (1-D to 3-D, any group count): per group TRANSPOSE_CONV2D
 * (3-D: CONV3D over the stretched input) int8 x int8 -> int32 with both
 * zero points, an int32 bias and a per-channel RESCALE (int16 activations:
 * int48 accumulator and 16-bit multipliers, EXT-INT16). */
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
    return !ctosa_onnx_node_attr(n, "output_shape");
}

/* The per-group operands of lw_conv_emit: the ONNX weight w [C][Mg][kvol]
 * of group g as TRANSPOSE_CONV2D's [Mg, kd0, kd1, Cg] (dilation written as
 * weight-zero-point gaps: TOSA's transposed convolution has none) or, for
 * 3-D, CONV3D's flipped [Mg, KD, KH, KW, Cg] over the stretched input; the
 * group's biases in accumulator units; for int48 accumulators (a16w8, no
 * int48 CONCAT) the group's requantisation. */
typedef struct qct_parts {
    const int8_t *w;
    const double *bq, *ratio;
    bool conv3d;
    int64_t Cg, Mg, kvol, KH, KW, kd[2], dil[2], ks[3], nc;
    int64_t wzp;
    ctosa_dtype acc_t;
    uint32_t tr;
    const qx_out *o;
} qct_parts;

static bool qct_operands(lower_ctx *c, void *arg, int64_t g, const char **w, const char **b) {
    const qct_parts *p = arg;
    int64_t Cg = p->Cg, Mg = p->Mg, kv = p->kvol, wv = p->conv3d ? kv : p->kd[0] * p->kd[1];
    int8_t *buf = arena_alloc(lw_arena(c), (size_t)(Mg * wv * Cg) + 8);
    if (!buf) return false;
    const int8_t *src = p->w + g * Cg * Mg * kv;
    if (p->conv3d) {
        for (int64_t o = 0; o < Mg; o++)
            for (int64_t k = 0; k < kv; k++)
                for (int64_t i = 0; i < Cg; i++)
                    buf[(o * kv + k) * Cg + i] = src[(i * Mg + o) * kv + (kv - 1 - k)];
    } else {
        memset(buf, (int)(int8_t)p->wzp, (size_t)(Mg * wv * Cg));
        for (int64_t i = 0; i < Cg; i++)
            for (int64_t o = 0; o < Mg; o++)
                for (int64_t ky = 0; ky < p->KH; ky++)
                    for (int64_t kx = 0; kx < p->KW; kx++)
                        buf[((o * p->kd[0] + ky * p->dil[0]) * p->kd[1] + kx * p->dil[1]) * Cg + i] =
                            src[((i * Mg + o) * p->KH + ky) * p->KW + kx];
    }
    int64_t w4[4] = {Mg, p->kd[0], p->kd[1], Cg}, w5[5] = {Mg, p->ks[0], p->ks[1], p->ks[2], Cg};
    *w = lw_const(c, CTOSA_DTYPE_INT8, p->conv3d ? 5 : 4, p->conv3d ? w5 : w4, buf);
    *b = lw_const_from_f64(c, p->acc_t, 1, &Mg, p->bq + g * Mg);
    return *w && *b;
}

static const char *qct_part(lower_ctx *c, void *arg, int64_t g, const char *y, const int64_t *shape) {
    const qct_parts *p = arg;
    bool pc = p->nc > 1;
    return qdq_rescale_n(c, y, p->acc_t, p->o->t, p->tr, shape, pc ? p->Mg : 1,
                         p->ratio + (pc ? g * p->Mg : 0), 0, p->o->zp, false, false);
}

/* Integer ConvTranspose, 1-D to 3-D, any group count: per group,
 * TRANSPOSE_CONV2D (1-D as 2-D over height 1) or, 3-D (TOSA has no
 * transposed 3-D convolution), a stride-1 CONV3D over the input with
 * stride - 1 input-zero-point values between elements (x - z_x = 0 there,
 * as the zeros of the float form), the kernel flipped; int8 x int8 -> int32
 * with both zero points and int32 bias (int16 activations: int48, EXT-INT16),
 * then one requantisation of all channels (exact ties where the
 * accumulators can tie) or one per group for int48. */
lower_status qdq_convtranspose(lower_ctx *c) {
    qx_in a;
    qx_w w;
    qx_out o;
    const lower_value *W = lw_in(c, 1);
    if (!W || W->rank < 3 || W->rank > 5)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: 1-D, 2-D or 3-D only");
    uint32_t r = W->rank, nsp = r - 2;
    if (!qdq_in(c, 0, &a) || !qdq_weight(c, 1, r, &w) || !qdq_out(c, r, &o)) return LOWER_REJECT;
    if (a.rank != r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: input rank %u, weight rank %u", a.rank, r);
    bool a16 = a.t == CTOSA_DTYPE_INT16;
    if (o.t != a.t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL,
                         "quantized ConvTranspose: input and output widths differ");
    int64_t N = a.shape[0], C = a.shape[1], Mg = W->shape[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (group < 1 || W->shape[0] != C || C % group)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: group %lld does not match %lld input channels",
                         (long long)group, (long long)C);
    int64_t Cg = C / group, M = Mg * group;
    /* ONNX ConvTranspose weights are [C, M / group, k...]: per-output-channel
     * scales lie along axis 1, one per channel of a group (shared by the
     * groups) */
    if (w.n > 1 && (w.n != Mg || w.axis != 1))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: weight scales must be per output channel (axis 1)");
    lw_dim dm[3];
    lower_status st;
    if ((st = lw_read_window(c, nsp, a.shape, W->shape + 2, dm)) != LOWER_OK) return st;
    const int64_t *opad = NULL, *oshape = NULL;
    int64_t nop = lw_attr_ints(c, "output_padding", &opad), nos = lw_attr_ints(c, "output_shape", &oshape);
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    if ((nop >= 0 && nop != nsp) || nos >= 0 || !ap || (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized ConvTranspose: output_shape / auto_pad SAME");
    int64_t kvol = 1, opv[3] = {0, 0, 0};
    for (uint32_t i = 0; i < nsp; i++) {
        lw_dim *d = &dm[i];
        if (!strcmp(ap, "VALID")) d->pb = d->pe = 0;
        opv[i] = nop >= 0 ? opad[i] : 0;
        d->out = d->s * (d->in - 1) + opv[i] + (d->k - 1) * d->d + 1 - d->pb - d->pe;
        if (d->out < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized ConvTranspose: output size");
        kvol *= d->k;
    }
    double *bq = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    double *ratio = arena_alloc(lw_arena(c), (size_t)M * sizeof(double) + 8);
    uint8_t *wm = arena_alloc(lw_arena(c), (size_t)(M * Cg * kvol) + 8);
    if (!bq || !ratio || !wm) return lw_failed(c);
    bool bbad;
    const double *bias = qdq_bias(c, 2, M, &bbad);
    if (bbad) return LOWER_REJECT;
    for (int64_t m = 0; m < M; m++) {
        double acc_s = a.s * w.scale[w.n > 1 ? m % Mg : 0];
        bq[m] = bias ? nearbyint(bias[m] / acc_s) : 0;
        double lim = a16 ? 140737488355327.0 : 2147483647.0;
        lim -= (a16 ? 65535.0 * 255.0 : 65025.0) * (double)Cg * (double)kvol;
        if (!(fabs(bq[m]) <= lim)) bq[m] = bq[m] > 0 ? lim : -lim;
        ratio[m] = acc_s / o.s;
    }
    /* each output channel's weights, [M][Cg * kvol], for the tie analysis */
    for (int64_t g = 0; g < group; g++)
        for (int64_t oc = 0; oc < Mg; oc++)
            for (int64_t i = 0; i < Cg; i++)
                memcpy(wm + ((g * Mg + oc) * Cg + i) * kvol,
                       (const uint8_t *)w.data + ((g * Cg + i) * Mg + oc) * kvol, (size_t)kvol);
    ctosa_dtype acc_t = a16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    qct_parts qp = {.w = w.data,
                    .bq = bq,
                    .ratio = ratio,
                    .conv3d = nsp == 3,
                    .Cg = Cg,
                    .Mg = Mg,
                    .kvol = kvol,
                    .nc = w.n > 1 ? M : 1,
                    .wzp = w.zp,
                    .acc_t = acc_t,
                    .o = &o};
    uint32_t tr = nsp == 3 ? 5 : 4;
    qp.tr = tr;
    int64_t xs[5], ls[5], full[5], os[5], crop[3] = {0, 0, 0};
    lw_dim td[3];
    lw_conv_attr ab;
    ctosa_attr at;
    int32_t outpad[4], stride[2];
    const char *x = a.x;
    if (nsp == 3) {
        /* stretched input, cropped where a pad exceeds the kernel, padded
         * by the rest (CONV3D pads read x - z_x = 0) */
        memcpy(xs, a.shape, sizeof xs);
        lw_shape_last(5, xs, ls);
        x = lw_to_last(c, x, a.t, 5, xs);
        int64_t strides[3] = {dm[0].s, dm[1].s, dm[2].s};
        x = lw_stretch(c, x, a.t, 5, ls, strides, (double)a.zp);
        int64_t st5[5] = {0}, sz5[5];
        memcpy(sz5, ls, sizeof sz5);
        os[0] = N;
        os[4] = M;
        for (int i = 0; i < 3; i++) {
            int64_t eff = (dm[i].k - 1) * dm[i].d + 1;
            int64_t b = eff - 1 - dm[i].pb, e = eff - 1 - dm[i].pe + opv[i];
            st5[1 + i] = b < 0 ? -b : 0;
            sz5[1 + i] = ls[1 + i] - st5[1 + i] - (e < 0 ? -e : 0);
            td[i] = (lw_dim){sz5[1 + i], dm[i].k, 1, dm[i].d, b > 0 ? b : 0, e > 0 ? e : 0, dm[i].out, 0, 0};
            os[1 + i] = dm[i].out;
            qp.ks[i] = dm[i].k;
            if (sz5[1 + i] + td[i].pb + td[i].pe - eff + 1 != dm[i].out)
                return lw_reject(c, LOWER_INTERNAL, NULL, "quantized ConvTranspose: 3-D size mismatch");
        }
        x = lw_slice(c, x, a.t, 5, ls, st5, sz5);
        memcpy(ls, sz5, sizeof ls);
        memcpy(full, os, sizeof full);
    } else {
        /* 1-D: over height 1 */
        lw_dim d1 = {1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[0] = nsp == 1 ? d1 : dm[0];
        td[1] = nsp == 1 ? dm[0] : dm[1];
        int64_t op2[2] = {nsp == 1 ? 0 : opv[0], nsp == 1 ? opv[0] : opv[1]};
        xs[0] = N;
        xs[1] = C;
        xs[2] = nsp == 1 ? 1 : a.shape[2];
        xs[3] = a.shape[nsp == 1 ? 2 : 3];
        if (nsp == 1) x = lw_reshape(c, x, a.t, 4, xs);
        lw_shape_last(4, xs, ls);
        x = lw_to_last(c, x, a.t, 4, xs);
        qp.KH = nsp == 1 ? 1 : W->shape[2];
        qp.KW = W->shape[r - 1];
        full[0] = os[0] = N;
        full[3] = os[3] = M;
        for (int i = 0; i < 2; i++) {
            lw_dim *d = &td[i];
            qp.kd[i] = (d->k - 1) * d->d + 1;
            qp.dil[i] = d->d;
            int64_t ob = -d->pb, oe = op2[i] - d->pe;
            if (ob <= -qp.kd[i]) { /* TOSA: out_pad > -kernel; crop afterwards */
                crop[i] = d->pb;
                ob = 0;
            }
            if (oe <= -qp.kd[i]) oe = 0;
            outpad[2 * i] = (int32_t)ob;
            outpad[2 * i + 1] = (int32_t)oe;
            stride[i] = (int32_t)d->s;
            full[1 + i] = (d->in - 1) * d->s + ob + oe + qp.kd[i];
            os[1 + i] = d->out;
        }
        memset(&at, 0, sizeof at);
        at.out_pad = (ctosa_i32s){outpad, 4};
        at.stride = (ctosa_i32s){stride, 2};
        at.acc_type = acc_t;
    }
    const char *izp = lw_zero_point(c, a.t, a.zp), *wzp = lw_zero_point(c, CTOSA_DTYPE_INT8, w.zp);
    LW_TRY(x && izp && wzp);
    bool split48 = a16 && group > 1;
    lw_conv cv = {.kind = nsp == 3 ? CTOSA_OP_CONV3D : CTOSA_OP_TRANSPOSE_CONV2D,
                  .attr = nsp == 3 ? lw_conv_attr_of(&ab, 3, td, acc_t) : &at,
                  .x = x,
                  .t = a.t,
                  .rank = tr,
                  .in_shape = ls,
                  .out_shape = full,
                  .acc_t = acc_t,
                  .izp = izp,
                  .wzp = wzp,
                  .group = group,
                  .operands = qct_operands,
                  .part = split48 ? qct_part : NULL,
                  .part_t = o.t,
                  .arg = &qp};
    const char *y = lw_conv_emit(c, &cv);
    LW_TRY(y);
    if (!split48) {
        const qdq_acc_set *A =
            a16 ? qdq_acc_bound(c, 0)
                : qdq_acc_of_weights(c, a.t, a.zp, M, Cg * kvol, Cg * kvol, 1, wm, false, w.zp, bq);
        LW_TRY(A);
        y = qdq_rescale_acc(c, y, acc_t, o.t, tr, full, qp.nc, ratio, o.zp, A);
    }
    if (crop[0] || crop[1] || full[1] != os[1] || full[2] != os[2]) {
        int64_t s0[5] = {0, crop[0], crop[1], 0, 0};
        y = lw_slice(c, y, o.t, tr, full, s0, os);
    }
    y = lw_to_first(c, y, o.t, tr, os);
    int64_t fs[5];
    lw_shape_first(tr, os, fs);
    if (nsp == 1) {
        int64_t s1[3] = {N, M, os[2]};
        y = lw_reshape(c, y, o.t, 3, s1);
        fs[1] = M;
        fs[2] = os[2];
    }
    LW_TRY(y);
    return qdq_finish(c, y, &o, r, fs);
}
