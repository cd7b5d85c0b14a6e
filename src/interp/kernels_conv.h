/* kernels_conv.h - what the convolution kernels share (kernels_conv.c:
 * CONV2D, CONV3D, TRANSPOSE_CONV2D and the checks, reference loops and
 * epilogues; kernels_depthwise.c: DEPTHWISE_CONV2D): one geometry, the
 * operands, and the helpers both use. Private to src/interp. */
#ifndef CTOSA_INTERP_KERNELS_CONV_H
#define CTOSA_INTERP_KERNELS_CONV_H

#include "interp/int_math.h"
#include "interp/kernels_gemm.h"

enum { CK_CONV, CK_DEPTHWISE, CK_TRANSPOSE };

typedef struct cgeom {
    int kind;
    int64_t N, ID, IH, IW, IC, OD, OH, OW, OC, KD, KH, KW, M;
    int64_t sd, sy, sx, dd, dy, dx, pd, pt, pl;
} cgeom;

/* Input coordinates read by output (od,oy,ox) at tap (kd,ky,kx); false when
 * the tap falls in the padding. */
static inline bool cg_in(const cgeom *g, int64_t od, int64_t oy, int64_t ox, int64_t kd, int64_t ky,
                         int64_t kx, int64_t *z, int64_t *y, int64_t *x) {
    if (g->kind == CK_TRANSPOSE) {
        int64_t yy = oy - g->pt - ky, xx = ox - g->pl - kx;
        if (yy < 0 || xx < 0 || yy >= g->IH * g->sy || xx >= g->IW * g->sx) return false;
        if (yy % g->sy || xx % g->sx) return false;
        *z = 0;
        *y = yy / g->sy;
        *x = xx / g->sx;
        return true;
    }
    *z = od * g->sd - g->pd + kd * g->dd;
    *y = oy * g->sy - g->pt + ky * g->dy;
    *x = ox * g->sx - g->pl + kx * g->dx;
    return *z >= 0 && *z < g->ID && *y >= 0 && *y < g->IH && *x >= 0 && *x < g->IW;
}

typedef struct cargs {
    const itensor *in, *w, *bias;
    itensor *out;
    int64_t izp, wzp;
    ctosa_dtype acc;
} cargs;

/* Weight element for output channel oc, tap index tap, input channel ic. */
static inline size_t c_widx(const cgeom *g, int64_t oc, int64_t tap, int64_t ic) {
    if (g->kind == CK_DEPTHWISE) return (size_t)(tap * g->OC + oc); /* [KH,KW,C,M]: c*M+m == oc */
    return (size_t)((oc * (g->KD * g->KH * g->KW) + tap) * g->IC + ic);
}

/* accumulator storage for interp_conv_int_epilogue */
enum { ACC_I32, ACC_I64, ACC_F32 };

ctosa_error *interp_conv_vec(const interp_op *o, const char *name, ctosa_i32s v, uint32_t n);
ctosa_error *interp_conv_common(const interp_op *o, cargs *c, uint32_t in_rank);
ctosa_error *interp_conv_out_dim(const interp_op *o, const char *what, int64_t in, int64_t pa, int64_t pb,
                                 int64_t k, int64_t dil, int64_t s, int64_t out);
ctosa_error *interp_conv_nomem(const interp_op *o);
ctosa_error *interp_conv_ref_float(const interp_op *o, const cgeom *g, const cargs *c);
void interp_conv_float_epilogue(const cargs *c, int64_t OC);
ctosa_error *interp_conv_int_epilogue(const interp_op *o, const cargs *c, const void *acc, int acc_kind,
                                      int64_t OC);
ctosa_error *interp_conv_ref_int(const interp_op *o, const cgeom *g, const cargs *c);
int16_t *interp_conv_in16(const itensor *t, int64_t zp, int64_t *maxabs);

#endif
