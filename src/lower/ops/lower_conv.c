/*
 * lower_conv.c - Conv and ConvTranspose.
 *
 * ONNX convolutions are channels-first; TOSA's are channels-last with
 * OHWI weights. Data is transposed in and out (the framework cancels the
 * adjacent inverse pairs between consecutive convolutions); weights are
 * constants and are re-laid out at compile time into new constants.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/opt/opt_transpose_int.h"

/* Bias of output channels [o0, o0+n): constant, sliced input, or zeros. */
static const char *conv_bias(lower_ctx *c, uint32_t idx, ctosa_dtype t, int64_t M, int64_t o0, int64_t n) {
    if (!lw_has_input(c, idx)) {
        double z = 0;
        int64_t one = 1;
        return lw_const_from_f64(c, t, 1, &one, &z);
    }
    const double *b = NULL;
    if (lw_const_f64(c, idx, &b) == M) return lw_const_from_f64(c, t, 1, &n, b + o0);
    const lower_value *v = lw_in(c, idx);
    const char *x = lw_input(c, idx);
    if (x && v->t != t) x = lw_cast(c, x, v->t, t, 1, &M);
    int64_t st = o0;
    return lw_slice(c, x, t, 1, &M, &st, &n);
}

/* Emits one CONV2D / CONV3D / DEPTHWISE_CONV2D on channels-last x. */
static const char *conv_emit(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t, const char *w,
                             ctosa_dtype wt, const char *bias, uint32_t tsp, const lw_dim *dm,
                             const int64_t *oshape) {
    if (!x || !w || !bias) return NULL;
    lw_conv_attr ab;
    const ctosa_attr *a = lw_conv_attr_of(&ab, tsp, dm, lw_acc_type(t));
    const char *izp = lw_zero_point(c, t, 0), *wzp = lw_zero_point(c, wt, 0);
    const char *out = lw_tensor(c, t, tsp + 2, oshape);
    if (!izp || !wzp || !out) return NULL;
    const char *in[5] = {x, w, bias, izp, wzp};
    return lw_op(c, kind, 5, in, 1, &out, a) ? out : NULL;
}

/* Weights of one group for lw_conv_emit: relaid (or streamed) OIHW ->
 * OHWI slices, or the whole depthwise [KH, KW, C, mult] weight. */
typedef struct conv_wt {
    lw_wsrc ws;
    ctosa_dtype t; /* data (and bias) type */
    void *buf;
    bool stream, dw;
    uint32_t tr, tsp;
    int64_t M, Mg, Cg, kvol, C;
    const int64_t *ks;
} conv_wt;

static bool conv_operands(lower_ctx *c, void *arg, int64_t g, const char **w, const char **b) {
    conv_wt *p = arg;
    lw_wsrc *ws = &p->ws;
    if (p->dw) {
        int64_t wshape[4] = {p->ks[0], p->ks[1], p->C, p->M / p->C};
        int64_t src2[2] = {p->M, p->kvol};
        int32_t p10[2] = {1, 0};
        *w = p->stream ? lw_wconst_stream(c, ws, 4, wshape, 0, 2, src2, p10) : NULL;
        if (!*w && !c->rejected && !p->buf && !(p->buf = lw_wbuf(c, ws, ws->n))) return false;
        if (!*w && p->buf) {
            for (int64_t o = 0; o < p->M; o++)
                for (int64_t k = 0; k < p->kvol; k++) lw_wcopy(ws, p->buf, k * p->M + o, o * p->kvol + k);
            *w = lw_wconst(c, ws, 4, wshape, p->buf);
        }
        *b = conv_bias(c, 2, p->t, p->M, 0, p->M);
        return *w && *b;
    }
    int64_t Mg = p->Mg, Cg = p->Cg, kvol = p->kvol;
    int64_t wshape[5];
    wshape[0] = Mg;
    for (uint32_t i = 0; i < p->tsp; i++) wshape[1 + i] = p->ks[i];
    wshape[p->tr - 1] = Cg;
    int64_t src3[3] = {Mg, Cg, kvol};
    int32_t p021[3] = {0, 2, 1};
    *w = p->stream ? lw_wconst_stream(c, ws, p->tr, wshape, g * Mg * Cg * kvol, 3, src3, p021) : NULL;
    if (!*w && !c->rejected && !p->buf && !(p->buf = lw_wbuf(c, ws, ws->n))) return false;
    if (!*w && p->buf) {
        for (int64_t o = 0; o < Mg; o++)
            for (int64_t i = 0; i < Cg; i++)
                for (int64_t k = 0; k < kvol; k++)
                    lw_wcopy(ws, p->buf, (o * kvol + k) * Cg + i, ((g * Mg + o) * Cg + i) * kvol + k);
        *w = lw_wconst(c, ws, p->tr, wshape, p->buf);
    }
    *b = conv_bias(c, 2, p->t, p->M, g * Mg, Mg);
    return *w && *b;
}

static lower_status lower_conv(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    const lower_value *W = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!W) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Conv: weight input is missing");
    lw_wsrc ws;
    if (!lw_wsrc_init(c, 1, &ws))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, W->name, "Conv: weight '%s' must be a constant", W->name);
    uint32_t r = X->rank;
    if (r < 3 || r > 5 || W->rank != r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Conv: input rank %u / weight rank %u: only 1-D, 2-D and 3-D convolutions", r,
                         W->rank);
    ctosa_dtype t = X->t, wt = W->t;
    uint32_t nsp = r - 2;
    int64_t N = X->shape[0], C = X->shape[1], M = W->shape[0], Cg = W->shape[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (group < 1 || C % group || M % group || Cg * group != C)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Conv: group %lld does not match %lld input / %lld weight channels",
                         (long long)group, (long long)C, (long long)Cg);
    lw_dim dm[3];
    if ((st = lw_read_window(c, nsp, X->shape, W->shape + 2, dm)) != LOWER_OK) return st;
    if ((st = lw_window(c, nsp, dm, false)) != LOWER_OK) return st;

    /* 1-D convolutions run as 2-D with a unit height. */
    uint32_t tsp = nsp == 1 ? 2 : nsp, tr = tsp + 2;
    lw_dim td[3];
    int64_t xs[6]; /* channels-first shape used for the TOSA op */
    int64_t ks[3];
    if (nsp == 1) {
        td[0] = (lw_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[1] = dm[0];
        xs[0] = N;
        xs[1] = C;
        xs[2] = 1;
        xs[3] = X->shape[2];
    } else {
        memcpy(td, dm, nsp * sizeof *dm);
        memcpy(xs, X->shape, r * sizeof *xs);
    }
    for (uint32_t i = 0; i < tsp; i++) ks[i] = td[i].k;

    const char *x = lw_input(c, 0);
    x = lw_reshape_if(c, x, t, r, X->shape, tr, xs);
    int64_t ls[6];
    lw_shape_last(tr, xs, ls);
    x = lw_to_last(c, x, t, tr, xs);
    /* drop the input tail that a floor division would never read */
    int64_t start[6] = {0}, size[6];
    memcpy(size, ls, sizeof size);
    for (uint32_t i = 0; i < tsp; i++) size[1 + i] -= td[i].crop;
    x = lw_slice(c, x, t, tr, ls, start, size);
    memcpy(ls, size, sizeof ls);
    LW_TRY(x);

    int64_t os[6];
    os[0] = N;
    for (uint32_t i = 0; i < tsp; i++) os[1 + i] = td[i].out;
    os[tr - 1] = M;
    int64_t kvol = 1;
    for (uint32_t i = 0; i < tsp; i++) kvol *= ks[i];
    /* Large raw weights are streamed (lw_wconst_stream: a permuted view of
     * the model's bytes written in bounded chunks), others relaid here. */
    conv_wt p = {.ws = ws,
                 .tr = tr,
                 .tsp = tsp,
                 .M = M,
                 .Mg = M / group,
                 .Cg = Cg,
                 .kvol = kvol,
                 .C = C,
                 .ks = ks,
                 .t = t};
    p.stream = ws.raw && (uint64_t)ws.n * ws.esz >= c->s->stream_min;
    /* depthwise: weight [KH, KW, C, mult], output channel c*mult + m */
    p.dw = group > 1 && group == C && tsp == 2;
    if (!p.stream && !(p.buf = lw_wbuf(c, &ws, ws.n))) return lw_failed(c);
    lw_conv_attr ab;
    lw_conv cv = {.kind = p.dw       ? CTOSA_OP_DEPTHWISE_CONV2D
                          : tsp == 3 ? CTOSA_OP_CONV3D
                                     : CTOSA_OP_CONV2D,
                  .attr = lw_conv_attr_of(&ab, tsp, td, lw_acc_type(t)),
                  .x = x,
                  .t = t,
                  .rank = tr,
                  .in_shape = ls,
                  .out_shape = os,
                  .acc_t = t,
                  .izp = lw_zero_point(c, t, 0),
                  .wzp = lw_zero_point(c, wt, 0),
                  .group = p.dw ? 1 : group,
                  .operands = conv_operands,
                  .arg = &p};
    const char *y = lw_conv_emit(c, &cv);
    int64_t fs[6];
    lw_shape_first(tr, os, fs);
    y = lw_to_first(c, y, t, tr, os);
    if (nsp == 1) {
        int64_t s1[3] = {N, M, td[1].out};
        y = lw_reshape_if(c, y, t, tr, fs, 3, s1);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ======================================================= ConvTranspose */

/* 3-D ConvTranspose (TOSA has no 3-D transposed convolution): a stride-1
 * CONV3D over the input with stride-1 zeros inserted between elements,
 * padded by eff-1-pad_begin / eff-1-pad_end+output_padding (negative parts
 * crop), with the kernel flipped and its in/out channels swapped. */
static lower_status convtr_3d(lower_ctx *c, const lower_value *X, const lower_value *W, const lw_wsrc *ws,
                              const lw_dim *dm, const int64_t *opv) {
    ctosa_dtype t = X->t;
    int64_t N = X->shape[0], C = X->shape[1], M = W->shape[1];
    int64_t ls[5];
    lw_shape_last(5, X->shape, ls);
    const char *x = lw_to_last(c, lw_input(c, 0), t, 5, X->shape);
    int64_t strides[3] = {dm[0].s, dm[1].s, dm[2].s};
    x = lw_stretch(c, x, t, 5, ls, strides, 0.0);
    int64_t st5[5] = {0}, sz5[5];
    memcpy(sz5, ls, sizeof sz5);
    lw_dim cd[3];
    int64_t os[5] = {N, 0, 0, 0, M};
    for (int i = 0; i < 3; i++) {
        int64_t eff = (dm[i].k - 1) * dm[i].d + 1;
        int64_t b = eff - 1 - dm[i].pb, e = eff - 1 - dm[i].pe + opv[i];
        st5[1 + i] = b < 0 ? -b : 0;
        sz5[1 + i] = ls[1 + i] - st5[1 + i] - (e < 0 ? -e : 0);
        cd[i] = (lw_dim){sz5[1 + i], dm[i].k, 1, dm[i].d, b > 0 ? b : 0, e > 0 ? e : 0, dm[i].out, 0, 0};
        os[1 + i] = dm[i].out;
        if (sz5[1 + i] + cd[i].pb + cd[i].pe - eff + 1 != dm[i].out)
            return lw_reject(c, LOWER_INTERNAL, NULL, "ConvTranspose: 3-D size mismatch on axis %d", 2 + i);
    }
    x = lw_slice(c, x, t, 5, ls, st5, sz5);
    int64_t KD = W->shape[2], KH = W->shape[3], KW = W->shape[4], kv = KD * KH * KW;
    void *buf = lw_wbuf(c, ws, ws->n);
    if (!buf) return lw_failed(c);
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < kv; k++)
            for (int64_t ic = 0; ic < C; ic++)
                lw_wcopy(ws, buf, (m * kv + k) * C + ic, (ic * M + m) * kv + (kv - 1 - k));
    int64_t wshape[5] = {M, KD, KH, KW, C};
    const char *w = lw_wconst(c, ws, 5, wshape, buf);
    const char *y = conv_emit(c, CTOSA_OP_CONV3D, x, t, w, W->t, conv_bias(c, 2, t, M, 0, M), 3, cd, os);
    y = lw_to_first(c, y, t, 5, os);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_conv_transpose(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    const lower_value *W = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!W) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "ConvTranspose: weight input is missing");
    lw_wsrc ws;
    if (!lw_wsrc_init(c, 1, &ws))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, W->name, "ConvTranspose: weight '%s' must be a constant",
                         W->name);
    uint32_t r = X->rank;
    if (r < 3 || r > 5 || W->rank != r)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "ConvTranspose: input rank %u / weight rank %u: only 1-D, 2-D and 3-D", r, W->rank);
    ctosa_dtype t = X->t, wt = W->t;
    uint32_t nsp = r - 2;
    int64_t N = X->shape[0], C = X->shape[1];
    int64_t group = lw_attr_int(c, "group", 1);
    if (group < 1 || W->shape[0] != C || C % group)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "ConvTranspose: group %lld does not match %lld input channels", (long long)group,
                         (long long)C);
    int64_t Mg = W->shape[1], M = Mg * group, Cg = C / group;
    lw_dim dm[3];
    if ((st = lw_read_window(c, nsp, X->shape, W->shape + 2, dm)) != LOWER_OK) return st;
    const int64_t *opad = NULL, *oshape = NULL;
    int64_t nop = lw_attr_ints(c, "output_padding", &opad);
    int64_t nos = lw_attr_ints(c, "output_shape", &oshape);
    if (nop >= 0 && nop != nsp)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output_padding length %lld",
                         (long long)nop);
    if (nos >= 0 && nos < nsp)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output_shape length %lld",
                         (long long)nos);
    const char *ap = lw_attr_str(c, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: auto_pad '%s'", ap);
    int64_t opb[3], ope[3], crop_b[3], kd[3], opv[3];
    for (uint32_t i = 0; i < nsp; i++) {
        lw_dim *d = &dm[i];
        int64_t op = nop >= 0 ? opad[i] : 0;
        opv[i] = op;
        int64_t eff = (d->k - 1) * d->d + 1;
        kd[i] = eff;
        if (!strcmp(ap, "VALID")) d->pb = d->pe = 0;
        if (nos >= 0 || same) {
            int64_t want = nos >= 0 ? oshape[nos - nsp + i] : d->in * d->s;
            int64_t total = d->s * (d->in - 1) + op + eff - want;
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor */
            if (!strcmp(ap, "SAME_UPPER")) {
                d->pb = half;
                d->pe = total - half;
            } else {
                d->pb = total - half;
                d->pe = half;
            }
        }
        d->out = d->s * (d->in - 1) + op + eff - d->pb - d->pe;
        if (d->out < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: output size %lld",
                             (long long)d->out);
        /* TOSA: out_pad > -kernel; larger pads are cropped after the op */
        opb[i] = -d->pb;
        ope[i] = op - d->pe;
        crop_b[i] = 0;
        if (opb[i] <= -eff) {
            crop_b[i] = d->pb;
            opb[i] = 0;
        }
        if (ope[i] <= -eff) ope[i] = 0;
    }
    if (nsp == 3) {
        if (group != 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConvTranspose: 3-D with group %lld",
                             (long long)group);
        return convtr_3d(c, X, W, &ws, dm, opv);
    }
    uint32_t tr = 4;
    int64_t xs[4];
    lw_dim td[2];
    int64_t tkd[2], topb[2], tope[2], tcrop[2];
    if (nsp == 1) {
        xs[0] = N;
        xs[1] = C;
        xs[2] = 1;
        xs[3] = X->shape[2];
        td[0] = (lw_dim){1, 1, 1, 1, 0, 0, 1, 0, 0};
        td[1] = dm[0];
        tkd[0] = 1;
        tkd[1] = kd[0];
        topb[0] = tope[0] = tcrop[0] = 0;
        topb[1] = opb[0];
        tope[1] = ope[0];
        tcrop[1] = crop_b[0];
    } else {
        memcpy(xs, X->shape, sizeof xs);
        memcpy(td, dm, sizeof td);
        memcpy(tkd, kd, sizeof tkd);
        memcpy(topb, opb, sizeof topb);
        memcpy(tope, ope, sizeof tope);
        memcpy(tcrop, crop_b, sizeof tcrop);
    }
    const char *x = lw_input(c, 0);
    x = lw_reshape_if(c, x, t, r, X->shape, tr, xs);
    int64_t ls[4];
    lw_shape_last(tr, xs, ls);
    x = lw_to_last(c, x, t, tr, xs);
    LW_TRY(x);
    /* full TOSA output and the wanted window of it */
    int64_t full[4] = {N, 0, 0, M}, os[4] = {N, td[0].out, td[1].out, M};
    for (int i = 0; i < 2; i++) full[1 + i] = (td[i].in - 1) * td[i].s + topb[i] + tope[i] + tkd[i];
    int64_t kvol = tkd[0] * tkd[1];
    int64_t KH = nsp == 1 ? 1 : W->shape[2], KW = W->shape[r - 1];
    int64_t dy = td[0].d, dx = td[1].d;
    /* undilated large raw weights: streamed ([Cg, Mg, KH*KW] -> [Mg, KH*KW, Cg] per group) */
    bool stream = ws.raw && dy == 1 && dx == 1 && (uint64_t)Mg * kvol * Cg * ws.esz >= c->s->stream_min;
    void *buf = stream ? NULL : lw_wbuf(c, &ws, Mg * kvol * Cg);
    const char **parts = arena_alloc(lw_arena(c), (size_t)group * sizeof *parts);
    if ((!stream && !buf) || !parts) return lw_failed(c);
    for (int64_t g = 0; g < group; g++) {
        int64_t wshape[4] = {Mg, tkd[0], tkd[1], Cg};
        int64_t src3[3] = {Cg, Mg, KH * KW};
        int32_t p120[3] = {1, 2, 0};
        const char *w =
            stream ? lw_wconst_stream(c, &ws, 4, wshape, g * Cg * Mg * KH * KW, 3, src3, p120) : NULL;
        if (!w && !c->rejected && !buf && !(buf = lw_wbuf(c, &ws, Mg * kvol * Cg))) return lw_failed(c);
        if (!w && buf) {
            memset(buf, 0, (size_t)(Mg * kvol * Cg) * ws.esz);
            /* W[ic][oc][ky][kx] (IOHW) -> [oc][ky*dy][kx*dx][ic] (OHWI, dilated) */
            for (int64_t i = 0; i < Cg; i++)
                for (int64_t o = 0; o < Mg; o++)
                    for (int64_t ky = 0; ky < KH; ky++)
                        for (int64_t kx = 0; kx < KW; kx++)
                            lw_wcopy(&ws, buf, ((o * tkd[0] + ky * dy) * tkd[1] + kx * dx) * Cg + i,
                                     (((g * Cg + i) * Mg + o) * KH + ky) * KW + kx);
            w = lw_wconst(c, &ws, 4, wshape, buf);
        }
        const char *xg = x;
        if (group > 1) {
            int64_t s0[4] = {0, 0, 0, g * Cg}, sz[4] = {ls[0], ls[1], ls[2], Cg};
            xg = lw_slice(c, x, t, 4, ls, s0, sz);
        }
        int32_t outpad[4] = {(int32_t)topb[0], (int32_t)tope[0], (int32_t)topb[1], (int32_t)tope[1]};
        int32_t stride[2] = {(int32_t)td[0].s, (int32_t)td[1].s};
        ctosa_attr a;
        memset(&a, 0, sizeof a);
        a.out_pad = (ctosa_i32s){outpad, 4};
        a.stride = (ctosa_i32s){stride, 2};
        a.acc_type = lw_acc_type(t);
        int64_t og[4] = {full[0], full[1], full[2], Mg};
        const char *bias = conv_bias(c, 2, t, M, g * Mg, Mg);
        const char *izp = lw_zero_point(c, t, 0), *wzp = lw_zero_point(c, wt, 0);
        const char *out = lw_tensor(c, t, 4, og);
        LW_TRY(w && xg && bias && izp && wzp && out);
        const char *in[5] = {xg, w, bias, izp, wzp};
        LW_TRY(lw_op(c, CTOSA_OP_TRANSPOSE_CONV2D, 5, in, 1, &out, &a));
        parts[g] = out;
    }
    const char *y = lw_concat(c, (uint32_t)group, parts, t, 4, 3);
    int64_t s0[4] = {0, tcrop[0], tcrop[1], 0};
    y = lw_slice(c, y, t, 4, full, s0, os);
    int64_t fs[4];
    lw_shape_first(4, os, fs);
    y = lw_to_first(c, y, t, 4, os);
    if (nsp == 1) {
        int64_t s1[3] = {N, M, td[1].out};
        y = lw_reshape_if(c, y, t, 4, fs, 3, s1);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

const lower_entry lower_table_conv[] = {
    {"Conv", 1, 0, lower_conv},
    {"ConvTranspose", 1, 0, lower_conv_transpose},
    {0},
};
