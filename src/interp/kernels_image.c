/* kernels_image.c - RESIZE (nearest and bilinear), integer and float, as
 * the TOSA pseudocode computes it: positions in fixed point with the
 * scale numerator as unit, so integer results are exact. */
#include <math.h>
#include <stdlib.h>

#include "interp/int_math.h"
#include "util/floatfmt.h"

static int64_t idiv_floor64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (q * b > a) q--;
    return q;
}

static ctosa_error *r_shape_vals(const interp_op *o, const itensor *t, const char *what, uint64_t n,
                                 int64_t *v) {
    if (!t || t->count != n || !im_is_int(t->dtype))
        return interp_fail(o, "%s must hold %llu integer values", what, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) v[i] = im_load_i(t->dtype, t->data, i);
    return NULL;
}

ctosa_error *interp_k_RESIZE(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 4, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    int64_t sc[4], off[2], bor[2];
    if ((e = r_shape_vals(o, o->in[1], "scale", 4, sc)) ||
        (e = r_shape_vals(o, o->in[2], "offset", 2, off)) ||
        (e = r_shape_vals(o, o->in[3], "border", 2, bor)))
        return e;
    if (in->rank != 4 || out->rank != 4) return interp_fail(o, "input and output must have rank 4");
    if (im_dims(in, 0, 4) != in->count || im_dims(out, 0, 4) != out->count)
        return interp_fail(o, "tensor element counts do not match their shapes");
    int64_t N = in->shape[0], IH = in->shape[1], IW = in->shape[2], C = in->shape[3];
    int64_t OH = out->shape[1], OW = out->shape[2];
    if (out->shape[0] != N || out->shape[3] != C)
        return interp_fail(o, "output batch/channels differ from input");
    int64_t syn = sc[0], syd = sc[1], sxn = sc[2], sxd = sc[3], oy0 = off[0], ox0 = off[1];
    int64_t by = bor[0], bx = bor[1];
    int mode = o->op->attr.mode;
    if (mode != CTOSA_RESIZE_NEAREST && mode != CTOSA_RESIZE_BILINEAR)
        return interp_fail(o, "mode %d is not valid", mode);
    if (OH >= 16384 || OW >= 16384 || IH >= 16384 || IW >= 16384)
        return interp_fail(o, "dimensions must be below 16384");
    if (syn <= 0 || syd <= 0 || sxn <= 0 || sxd <= 0) return interp_fail(o, "scale values must be positive");
    if (syn > (1 << 11) || sxn > (1 << 11)) return interp_fail(o, "scale numerators must be <= 2048");
    if (syd >= 16 * syn || sxd >= 16 * sxn) return interp_fail(o, "downscale beyond 1/16");
    if (oy0 < -syn || oy0 >= 16 * syn || ox0 < -sxn || ox0 >= 16 * sxn)
        return interp_fail(o, "offset out of range");
    if (by < -16 * syn || by >= syn || bx < -16 * sxn || bx >= sxn)
        return interp_fail(o, "border out of range");
    if (IH < 1 || IW < 1) return interp_fail(o, "input height and width must be >= 1");
    int64_t nh = (IH - 1) * syn - oy0 + by, nw = (IW - 1) * sxn - ox0 + bx;
    if (nh < 0 || nh % syd || nh / syd + 1 != OH)
        return interp_fail(o, "output height %lld does not match scale/offset/border", (long long)OH);
    if (nw < 0 || nw % sxd || nw / sxd + 1 != OW)
        return interp_fail(o, "output width %lld does not match scale/offset/border", (long long)OW);
    ctosa_dtype ti = in->dtype, to = out->dtype;
    bool isf = ctosa_dtype_is_float(ti);
    if (isf) {
        if (to != ti) return interp_fail(o, "float RESIZE needs the same output type");
    } else if (ti == CTOSA_DTYPE_INT8 || ti == CTOSA_DTYPE_INT16) {
        ctosa_dtype want = mode == CTOSA_RESIZE_NEAREST ? ti
                           : ti == CTOSA_DTYPE_INT8     ? CTOSA_DTYPE_INT32
                                                        : CTOSA_DTYPE_INT48;
        if (to != want) return interp_fail(o, "output must be %s", ctosa_dtype_short(want));
    } else {
        return interp_fail(o, "RESIZE of %s is not supported", ctosa_dtype_short(ti));
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t oy = 0; oy < OH; oy++) {
            int64_t y = oy * syd + oy0, iy = idiv_floor64(y, syn), ry = y - iy * syn;
            int64_t iy0 = iy > 0 ? iy : 0, iy1 = iy + 1 < IH - 1 ? iy + 1 : IH - 1;
            for (int64_t ox = 0; ox < OW; ox++) {
                int64_t x = ox * sxd + ox0, ix = idiv_floor64(x, sxn), rx = x - ix * sxn;
                int64_t ix0 = ix > 0 ? ix : 0, ix1 = ix + 1 < IW - 1 ? ix + 1 : IW - 1;
                size_t ob = (size_t)(((n * OH + oy) * OW + ox) * C);
                size_t b00 = (size_t)(((n * IH + iy0) * IW + ix0) * C),
                       b01 = (size_t)(((n * IH + iy0) * IW + ix1) * C);
                size_t b10 = (size_t)(((n * IH + iy1) * IW + ix0) * C),
                       b11 = (size_t)(((n * IH + iy1) * IW + ix1) * C);
                if (mode == CTOSA_RESIZE_NEAREST) {
                    int64_t sy = 2 * ry >= syn ? iy1 : iy0, sx = 2 * rx >= sxn ? ix1 : ix0;
                    if (isf) {
                        /* dy >= 0.5 in float equals 2*ry >= syn exactly */
                        size_t b = (size_t)(((n * IH + sy) * IW + sx) * C);
                        for (int64_t c = 0; c < C; c++)
                            ((float *)out->data)[ob + c] = ((const float *)in->data)[b + c];
                    } else {
                        size_t b = (size_t)(((n * IH + sy) * IW + sx) * C);
                        for (int64_t c = 0; c < C; c++)
                            im_store_i(to, out->data, ob + c, im_load_i(ti, in->data, b + c));
                    }
                } else if (isf) {
                    const float *s = in->data;
                    float dy = (float)ry / (float)syn, dx = (float)rx / (float)sxn;
                    for (int64_t c = 0; c < C; c++) {
                        float acc = s[b00 + c] * (1.0f - dy) * (1.0f - dx);
                        acc += s[b01 + c] * (1.0f - dy) * dx;
                        acc += s[b10 + c] * dy * (1.0f - dx);
                        acc += s[b11 + c] * dy * dx;
                        ((float *)out->data)[ob + c] = ff_round_to(to, acc);
                    }
                } else {
                    for (int64_t c = 0; c < C; c++) {
                        int64_t acc = im_load_i(ti, in->data, b00 + c) * (syn - ry) * (sxn - rx);
                        acc += im_load_i(ti, in->data, b01 + c) * (syn - ry) * rx;
                        acc += im_load_i(ti, in->data, b10 + c) * ry * (sxn - rx);
                        acc += im_load_i(ti, in->data, b11 + c) * ry * rx;
                        im_store_i(to, out->data, ob + c, acc);
                    }
                }
            }
        }
    return NULL;
}
