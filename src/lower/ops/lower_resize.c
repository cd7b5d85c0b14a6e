/*
 * lower_resize.c - Resize, Upsample, DepthToSpace, SpaceToDepth.
 *
 * TOSA RESIZE maps output index o to input coordinate (o*d + offset)/n
 * with rational scale n/d per axis and rounds nearest half up. Each ONNX
 * coordinate_transformation_mode is an affine map x*d/n + c, so it becomes
 * an (n, d, offset) triple (doubled where a half appears); nearest_mode
 * variants are a further doubling with a small offset shift, because
 * floor/ceil/round-half-down of y equal round-half-up of y shifted.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h" /* qdq_rescale_n: integer bilinear RESIZE */

static int64_t rs_gcd(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Rational approximation n/d of a float scale (exact for out/in sizes). */
/* floor(v) as an output dimension, or -1 when v is NaN or outside
 * [0, INT32_MAX] (scales come from untrusted models; casting an
 * out-of-range double is undefined behaviour). */
static int64_t rs_floor_dim(double v) {
    if (!(v >= 0 && v <= (double)INT32_MAX)) return -1;
    return (int64_t)floor(v);
}

static bool rs_rational(double s, int64_t *n, int64_t *d) {
    /* The bound keeps (int64_t)num below defined for hostile scales. */
    if (!(s > 0) || !isfinite(s) || s > 1e9) return false;
    for (int64_t den = 1; den <= 4096; den++) {
        double num = round(s * (double)den);
        if (num >= 1 && fabs(num / (double)den - s) <= 1e-6 * s) {
            *n = (int64_t)num;
            *d = den;
            return true;
        }
    }
    return false;
}

typedef struct rs_axis {
    int64_t in, out;
    bool from_scales; /* align_corners then uses in*scale as the resized length */
    int64_t sn, sd;   /* scale as used by the coordinate formula (out/in) */
    int64_t n, d, off, border;
    double roi0, roi1; /* tf_crop_and_resize: normalised crop start / end */
} rs_axis;

/* Rational approximation of v >= 0 (0 is 0/1). */
static bool rs_rational0(double v, int64_t *n, int64_t *d) {
    if (v == 0) {
        *n = 0;
        *d = 1;
        return true;
    }
    return rs_rational(v, n, d);
}

/* tf_crop_and_resize: x_orig = start*(in-1) + x*(end-start)*(in-1)/(out-1)
 * (out == 1: the crop centre). Only crops whose samples all stay inside
 * the input: TOSA clamps where ONNX would use extrapolation_value. */
static bool rs_crop_params(const rs_axis *a, int64_t *n, int64_t *d, int64_t *off) {
    double st = a->roi0 * (double)(a->in - 1);
    double step = a->out > 1 ? (a->roi1 - a->roi0) * (double)(a->in - 1) / (double)(a->out - 1) : 0;
    if (a->out == 1) st = 0.5 * (a->roi0 + a->roi1) * (double)(a->in - 1);
    int64_t sp, sq, ap, aq;
    if (st < 0 || step < 0 || !rs_rational0(st, &ap, &aq)) return false;
    if (step == 0) {
        sp = 1;
        sq = 2048; /* any scale: only x = 0 is sampled */
    } else if (!rs_rational(step, &sp, &sq)) {
        return false;
    }
    /* y = (x*d + off)/n: d/n = step, off/n = start */
    int64_t nn = sq, dd = sp;
    int64_t g = aq / rs_gcd(aq, nn);
    nn *= g;
    dd *= g;
    *n = nn;
    *d = dd;
    *off = ap * (nn / aq);
    double last = ((double)(a->out - 1) * (double)dd + (double)*off) / (double)nn;
    return last <= (double)(a->in - 1) + 1e-9;
}

/* coord: 0 asymmetric, 1 half_pixel, 2 pytorch_half_pixel, 3 align_corners,
 * 4 tf_half_pixel_for_nn, 5 half_pixel_symmetric, 6 tf_crop_and_resize. nearest: -1 (linear), 0 round_prefer_floor,
 * 1 round_prefer_ceil, 2 floor, 3 ceil. */
static bool rs_axis_params(rs_axis *a, int coord, int nearest) {
    /* TOSA needs dimensions < 16384 and scale_n <= 2048: bounding the
     * operands well above that keeps the int64 products below exact. */
    const int64_t lim = INT64_C(1) << 24;
    if (a->in < 0 || a->in > lim || a->out < 0 || a->out > lim || a->sn < 0 || a->sn > lim || a->sd < 0 ||
        a->sd > lim)
        return false;
    int64_t n = a->sn, d = a->sd, off = 0;
    if (a->in == 1) {
        /* every output reads the single input row */
        n = a->out;
        d = 1;
        off = 0;
        coord = -1;
    }
    switch (coord) {
    case 0: break;
    case 1:
        off = d - n;
        n *= 2;
        d *= 2;
        break;
    case 2:
        if (a->out > 1) {
            off = d - n;
            n *= 2;
            d *= 2;
        } else {
            n = 1;
            d = 1;
            off = 0;
        }
        break;
    case 3:
        /* x * (in - 1) / (len - 1); len = out, or in*scale when scales were given */
        if (a->from_scales && a->in * a->sn > a->sd) {
            n = a->in * a->sn - a->sd;
            d = (a->in - 1) * a->sd;
        } else if (!a->from_scales && a->out > 1) {
            n = a->out - 1;
            d = a->in - 1;
        } else {
            n = 1;
            d = 1;
        }
        off = 0;
        break;
    case 4:
        off = d;
        n *= 2;
        d *= 2;
        break;
    case 6:
        if (!rs_crop_params(a, &n, &d, &off)) return false;
        break;
    case 5:
        /* half_pixel_symmetric: half_pixel shifted by in/2 * (1 - out/(in*scale)) */
        off = d - n + a->in * n - a->out * d;
        n *= 2;
        d *= 2;
        break;
    default: break;
    }
    if (nearest >= 0 && nearest != 1) {
        int64_t delta = nearest == 0 ? -1 : nearest == 2 ? -n : n - 2;
        off = 2 * off + delta;
        n *= 2;
        d *= 2;
    }
    int64_t border = (a->out - 1) * d + off - (a->in - 1) * n;
    int64_t g = rs_gcd(rs_gcd(n, d), rs_gcd(off, border));
    if (g > 1) {
        n /= g;
        d /= g;
        off /= g;
        border /= g;
    }
    a->n = n;
    a->d = d;
    a->off = off;
    a->border = border;
    return n >= 1 && d >= 1 && n <= 2048 && d < 16 * n && off >= -n && off < 16 * n && border >= -16 * n &&
           border < n;
}

/* Shared by Resize and Upsample: X is 4-D; out[] the wanted output shape,
 * sc_n/sc_d the per-axis rational scales. */
static lower_status rs_emit(lower_ctx *c, const lower_value *X, const int64_t *out, const int64_t *sc_n,
                            const int64_t *sc_d, bool from_scales, bool linear, int coord, int nearest,
                            const double *roi) {
    const char *op = lw_node(c)->op_type;
    ctosa_dtype t = X->t;
    if (out[0] != X->shape[0] || out[1] != X->shape[1])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: only the spatial axes (2, 3) may be resized (TOSA RESIZE is 2-D)", op);
    rs_axis ax[2];
    for (int i = 0; i < 2; i++) {
        ax[i] = (rs_axis){
            X->shape[2 + i],      out[2 + i],          from_scales, sc_n[2 + i], sc_d[2 + i], 0, 0, 0, 0,
            roi ? roi[2 + i] : 0, roi ? roi[6 + i] : 1};
        if (ax[i].out < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: output size %lld", op,
                             (long long)ax[i].out);
        if (coord == 6 && !rs_axis_params(&ax[i], coord, linear ? -1 : nearest))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: tf_crop_and_resize on axis %d samples outside the input "
                             "(extrapolation_value; TOSA RESIZE clamps) or has no exact scale",
                             op, 2 + i);
        if (coord != 6 && !rs_axis_params(&ax[i], coord, linear ? -1 : nearest))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: scale %lld/%lld on axis %d is outside what TOSA RESIZE expresses "
                             "(numerator <= 2048, downscale < 16x)",
                             op, (long long)ax[i].n, (long long)ax[i].d, 2 + i);
    }
    if (ax[0].out == ax[0].in && ax[1].out == ax[1].in && ax[0].n == ax[0].d && ax[1].n == ax[1].d &&
        ax[0].off == 0 && ax[1].off == 0) {
        /* identity resize: keep it as a cheap IDENTITY-like reshape */
        const char *y = lw_reshape(c, lw_input(c, 0), t, 4, X->shape);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    const char *x = lw_to_last(c, lw_input(c, 0), t, 4, X->shape);
    int64_t scale[4] = {ax[0].n, ax[0].d, ax[1].n, ax[1].d};
    int64_t offset[2] = {ax[0].off, ax[1].off}, border[2] = {ax[0].border, ax[1].border};
    const char *s = lw_shape(c, 4, scale), *o = lw_shape(c, 2, offset), *b = lw_shape(c, 2, border);
    int64_t os[4] = {out[0], out[2], out[3], out[1]};
    /* integer bilinear: RESIZE gives int32 (int16: int48) scaled by
     * n_y * n_x; one RESCALE (half up) brings it back to t (quantized
     * groups only: qdq_ops8.c requantises the result) */
    bool ilin = linear && (t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16) && qdq_info(c)->role == QR_HEAD;
    ctosa_dtype rt = ilin ? (t == CTOSA_DTYPE_INT8 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT48) : t;
    const char *y = lw_tensor(c, rt, 4, os);
    LW_TRY(x && s && o && b && y);
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.mode = linear ? CTOSA_RESIZE_BILINEAR : CTOSA_RESIZE_NEAREST;
    const char *in[4] = {x, s, o, b};
    LW_TRY(lw_op(c, CTOSA_OP_RESIZE, 4, in, 1, &y, &a));
    if (ilin) {
        y = qdq_rescale_n(c, y, rt, t, 4, os, 1, &(double){1.0 / ((double)ax[0].n * (double)ax[1].n)}, 0, 0,
                          false, false);
        if (!y) return c->rejected ? LOWER_REJECT : lw_failed(c);
    }
    y = lw_to_first(c, y, t, 4, os);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static bool rs_mode(const char *mode, bool *linear) {
    if (!strcmp(mode, "nearest")) *linear = false;
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) *linear = true;
    else return false;
    return true;
}

static lower_status lower_resize(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    int64_t opset = lw_opset(c);
    const char *mode = lw_attr_str(c, "mode", "nearest");
    bool linear;
    if (!rs_mode(mode, &linear))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Resize: mode '%s' (TOSA RESIZE has nearest and bilinear)", mode);
    if (X->rank != 4)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: input rank %u (only 4-D NCHW)", X->rank);
    const char *ctm =
        lw_attr_str(c, "coordinate_transformation_mode", opset < 11 ? "asymmetric" : "half_pixel");
    static const char *const coords[] = {"asymmetric",        "half_pixel",           "pytorch_half_pixel",
                                         "align_corners",     "tf_half_pixel_for_nn", "half_pixel_symmetric",
                                         "tf_crop_and_resize"};
    int coord = -1;
    for (int i = 0; i < 7; i++)
        if (!strcmp(ctm, coords[i])) coord = i;
    if (coord < 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: coordinate_transformation_mode '%s'", ctm);
    const char *nm = lw_attr_str(c, "nearest_mode", opset < 11 ? "floor" : "round_prefer_floor");
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    int nearest = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(nm, nms[i])) nearest = i;
    if (!linear && nearest < 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: nearest_mode '%s'", nm);
    const char *policy = lw_attr_str(c, "keep_aspect_ratio_policy", "stretch");
    /* axes (opset 18): scales/sizes name a subset of the axes */
    const int64_t *axes_v = NULL;
    int64_t naxes = lw_attr_ints(c, "axes", &axes_v);
    int32_t axes[4] = {0, 1, 2, 3};
    uint32_t nax = 4;
    if (naxes >= 0) {
        if (naxes > 4)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: %lld axes", (long long)naxes);
        nax = (uint32_t)naxes;
        for (uint32_t i = 0; i < nax; i++)
            if (!lw_axis(c, axes_v[i], 4, "axes", &axes[i])) return LOWER_REJECT;
    }
    int64_t out[4], sn[4], sd[4];
    for (int i = 0; i < 4; i++) {
        out[i] = X->shape[i];
        sn[i] = sd[i] = 1;
    }
    uint32_t si = opset < 11 ? 1 : 2, zi = 3;
    bool have_sizes = opset >= 11 && lw_has_input(c, zi) && lw_in(c, zi)->static_shape &&
                      lw_count(lw_in(c, zi)->rank, lw_in(c, zi)->shape) > 0;
    if (have_sizes) {
        const int64_t *sz = NULL;
        int64_t k = lw_const_i64(c, zi, &sz);
        if (k < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_in(c, zi)->name,
                             "Resize: sizes '%s' must be a constant", lw_in(c, zi)->name);
        if (k != nax)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: %lld sizes for %u axes", (long long)k,
                             nax);
        bool stretch = !strcmp(policy, "stretch");
        if (!stretch && strcmp(policy, "not_larger") && strcmp(policy, "not_smaller"))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: keep_aspect_ratio_policy '%s'",
                             policy);
        double keep = 0;
        if (!stretch) {
            bool larger = !strcmp(policy, "not_larger");
            keep = larger ? INFINITY : 0;
            for (uint32_t i = 0; i < nax; i++) {
                double s = (double)sz[i] / (double)X->shape[axes[i]];
                keep = larger ? fmin(keep, s) : fmax(keep, s);
            }
        }
        for (uint32_t i = 0; i < nax; i++) {
            int32_t a = axes[i];
            if (stretch) {
                out[a] = sz[i];
                sn[a] = sz[i];
                sd[a] = X->shape[a];
            } else {
                out[a] = rs_floor_dim(keep * (double)X->shape[a] + 0.5);
                if (out[a] < 0)
                    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: output size out of range");
                if (!rs_rational(keep, &sn[a], &sd[a]))
                    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: scale %g not rational", keep);
            }
        }
    } else {
        if (!lw_has_input(c, si))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: neither scales nor sizes given");
        const double *sv = NULL;
        int64_t k = lw_const_f64(c, si, &sv);
        if (k < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_in(c, si)->name,
                             "Resize: scales '%s' must be a constant", lw_in(c, si)->name);
        if (k != nax)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: %lld scales for %u axes", (long long)k,
                             nax);
        for (uint32_t i = 0; i < nax; i++) {
            int32_t a = axes[i];
            out[a] = rs_floor_dim((double)X->shape[a] * sv[i] + 1e-9);
            if (out[a] < 0)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: scale %g out of range", sv[i]);
            if (!rs_rational(sv[i], &sn[a], &sd[a]))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: scale %g is not a small rational",
                                 sv[i]);
        }
    }
    if (lw_attr_int(c, "antialias", 0) && linear && (out[2] < X->shape[2] || out[3] < X->shape[3]))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: antialias=1 when downsampling");
    /* roi (tf_crop_and_resize only): starts then ends, per rank or per axes */
    double roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    if (coord == 6) {
        const double *rv = NULL;
        int64_t k = lw_has_input(c, 1) ? lw_const_f64(c, 1, &rv) : -1;
        if (k < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, 1) ? lw_in(c, 1)->name : NULL,
                             "Resize: tf_crop_and_resize needs a constant roi");
        if (k != 2 * (int64_t)nax)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: roi has %lld values for %u axes",
                             (long long)k, nax);
        for (uint32_t i = 0; i < nax; i++) {
            roi[axes[i]] = rv[i];
            roi[4 + axes[i]] = rv[nax + i];
        }
    }
    return rs_emit(c, X, out, sn, sd, !have_sizes, linear, coord, nearest, coord == 6 ? roi : NULL);
}

static lower_status lower_upsample(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    const char *mode = lw_attr_str(c, "mode", "nearest");
    bool linear;
    if (!rs_mode(mode, &linear))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: mode '%s'", mode);
    if (X->rank != 4)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: input rank %u (only 4-D NCHW)", X->rank);
    double sv[4];
    if (lw_opset(c) < 9) {
        const float *f = NULL;
        if (lw_attr_floats(c, "scales", &f) != 4)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: scales attribute needs 4 values");
        for (int i = 0; i < 4; i++) sv[i] = f[i];
    } else {
        const double *d = NULL;
        int64_t k = lw_has_input(c, 1) ? lw_const_f64(c, 1, &d) : -1;
        if (k < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_has_input(c, 1) ? lw_in(c, 1)->name : NULL,
                             "Upsample: scales must be a constant");
        if (k != 4) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: %lld scales", (long long)k);
        memcpy(sv, d, sizeof sv);
    }
    int64_t out[4], sn[4], sd[4];
    for (int i = 0; i < 4; i++) {
        out[i] = rs_floor_dim((double)X->shape[i] * sv[i] + 1e-9);
        if (out[i] < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: scale %g out of range", sv[i]);
        if (!rs_rational(sv[i], &sn[i], &sd[i]))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Upsample: scale %g", sv[i]);
    }
    return rs_emit(c, X, out, sn, sd, true, linear, 0, 2, NULL);
}

/* --------------------------------------------------- DepthToSpace etc. */

static lower_status rs_shuffle(lower_ctx *c, const int64_t *s6, const int32_t *perm, const int64_t *out4) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    ctosa_dtype t = X->t;
    const char *x = lw_reshape(c, lw_input(c, 0), t, 6, s6);
    x = x ? lw_transpose(c, x, t, 6, s6, perm) : NULL;
    x = x ? lw_reshape(c, x, t, 4, out4) : NULL;
    LW_TRY(x);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

static lower_status lower_depth_to_space(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    int64_t b = lw_attr_int(c, "blocksize", 0);
    if (X->rank != 4 || b < 1 || X->shape[1] % (b * b))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "DepthToSpace: blocksize %lld, rank %u",
                         (long long)b, X->rank);
    const char *mode = lw_attr_str(c, "mode", "DCR");
    int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3], Co = C / (b * b);
    int64_t out[4] = {N, Co, H * b, W * b};
    if (!strcmp(mode, "DCR")) {
        int64_t s6[6] = {N, b, b, Co, H, W};
        int32_t p[6] = {0, 3, 4, 1, 5, 2};
        return rs_shuffle(c, s6, p, out);
    }
    if (!strcmp(mode, "CRD")) {
        int64_t s6[6] = {N, Co, b, b, H, W};
        int32_t p[6] = {0, 1, 4, 2, 5, 3};
        return rs_shuffle(c, s6, p, out);
    }
    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "DepthToSpace: mode '%s'", mode);
}

static lower_status lower_space_to_depth(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    int64_t b = lw_attr_int(c, "blocksize", 0);
    if (X->rank != 4 || b < 1 || X->shape[2] % b || X->shape[3] % b)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "SpaceToDepth: blocksize %lld, rank %u",
                         (long long)b, X->rank);
    int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
    int64_t s6[6] = {N, C, H / b, b, W / b, b};
    int32_t p[6] = {0, 3, 5, 1, 2, 4};
    int64_t out[4] = {N, C * b * b, H / b, W / b};
    return rs_shuffle(c, s6, p, out);
}

const lower_entry lower_table_resize[] = {
    {"Resize", 10, 0, lower_resize},
    {"Upsample", 7, 9, lower_upsample},
    {"DepthToSpace", 1, 0, lower_depth_to_space},
    {"SpaceToDepth", 1, 0, lower_space_to_depth},
    {0},
};
