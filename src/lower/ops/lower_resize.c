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
    int64_t g = aq / gcd_i64(aq, nn);
    nn *= g;
    dd *= g;
    *n = nn;
    *d = dd;
    *off = ap * (nn / aq);
    double last = ((double)(a->out - 1) * (double)dd + (double)*off) / (double)nn;
    return last <= (double)(a->in - 1) + 1e-9;
}

/* coord: 0 asymmetric, 1 half_pixel, 2 pytorch_half_pixel, 3 align_corners,
 * 4 tf_half_pixel_for_nearest, 5 half_pixel_symmetric, 6 tf_crop_and_resize. nearest: -1 (linear), 0 round_prefer_floor,
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
    int64_t g = gcd_i64(gcd_i64(n, d), gcd_i64(off, border));
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

/* ------------------------------------------------ interpolation matrices */

/* What RESIZE cannot express (cubic, antialiasing, extrapolation, other
 * ranks and axes, extreme scales) is separable all the same: along each
 * resized axis the output is a fixed linear combination of input samples,
 * a constant [in, out] matrix computed here from the definition. The data
 * (FP32; FP16/BF16 cast up and back) moves that axis last and runs one
 * MATMUL [1, rest, in] x [1, in, out] per axis. */

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };

typedef struct rs_interp {
    int mode, coord, nearest;
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
} rs_interp;

/* Keys' cubic convolution kernel with coefficient a, at distance t. */
static double rs_cubic_w(double t, double a) {
    t = fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

/* The input coordinate of output index x (coordinate_transformation_mode);
 * len is the resized length the formulas divide by (in * scale when scales
 * were given, else the output size). Sets *outside for tf_crop_and_resize
 * samples outside the input. */
static double rs_orig(const rs_interp *ip, const rs_axis *a, double x, double scale, double len,
                      bool *outside) {
    double in = (double)a->in, xo;
    *outside = false;
    switch (ip->coord) {
    case 0: xo = x / scale; break;
    case 2: xo = a->out > 1 ? (x + 0.5) / scale - 0.5 : 0; break;
    case 3: xo = len > 1 ? x * (in - 1) / (len - 1) : 0; break;
    case 4: xo = (x + 0.5) / scale; break;
    case 5: {
        double adj = (double)a->out / (scale * in);
        xo = in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5;
        break;
    }
    case 6:
        xo = a->out > 1 ? a->roi0 * (in - 1) + x * (a->roi1 - a->roi0) * (in - 1) / (double)(a->out - 1)
                        : 0.5 * (a->roi0 + a->roi1) * (in - 1);
        *outside = xo < 0 || xo > in - 1;
        break;
    default: xo = (x + 0.5) / scale - 0.5; break;
    }
    return xo;
}

/* Weight of the tap at offset i from base for a sample at base + r, and
 * the offset of the first tap (*first) with the tap count (*n). */
static double rs_tap(const rs_interp *ip, double r, double s, int64_t i) {
    if (ip->mode == RS_LINEAR) return fmax(0, 1 - fabs(((double)i - r) * s));
    return rs_cubic_w(((double)i - r) * s, ip->cubic_a);
}

/* Row o of the [out, in] interpolation matrix into w[0..in). Taps sit at
 * base + i with base = ceil(x) - 1, so an integral x is weighed through
 * ratio 1 as the definition's reference does; positions beyond the edge
 * read the edge sample. Returns false for a tf_crop_and_resize sample
 * outside the input (the row stays zero). */
static bool rs_matrix_row(const rs_interp *ip, const rs_axis *a, int64_t o, double scale, double len,
                          double *w) {
    bool outside;
    double x = rs_orig(ip, a, (double)o, scale, len, &outside);
    if (outside) return false;
    double base = ceil(x) - 1, r = x - base, last = (double)(a->in - 1);
    if (ip->mode == RS_NEAREST) {
        int nm = ip->nearest;
        bool up = nm == 0 ? r > 0.5 : nm == 1 ? r >= 0.5 : nm == 2 ? r == 1 : true;
        double p = fmin(fmax(base + (up ? 1 : 0), 0), last);
        w[(int64_t)p] += 1;
        return true;
    }
    /* antialiasing widens the kernel by 1/scale when downsampling */
    double s = ip->antialias && scale < 1 ? scale : 1;
    int64_t first = (int64_t)floor((ip->mode == RS_LINEAR ? -1 : -2) / s) + 1, end = 2 - first;
    double sum = 0;
    for (int64_t i = first; i < end; i++) {
        double p = base + (double)i;
        if (!(ip->exclude_outside && (p < 0 || p > last))) sum += rs_tap(ip, r, s, i);
    }
    /* antialiased taps are normalised to sum 1, and so are the taps left
     * inside the input when exclude_outside drops the others */
    bool norm = (s < 1 || ip->exclude_outside) && sum != 0;
    for (int64_t i = first; i < end; i++) {
        double p = base + (double)i;
        if (ip->exclude_outside && (p < 0 || p > last)) continue;
        double t = rs_tap(ip, r, s, i);
        w[(int64_t)fmin(fmax(p, 0), last)] += norm ? t / sum : t;
    }
    return true;
}

#define RS_MATRIX_MAX ((int64_t)1 << 26)

/* MATMUL [1, M, K] x [1, K, N] in FP32. */
static const char *rs_matmul(lower_ctx *c, const char *a, const char *b, int64_t m, int64_t n) {
    int64_t os[3] = {1, m, n};
    const char *azp = lw_zero_point(c, CTOSA_DTYPE_FP32, 0), *bzp = lw_zero_point(c, CTOSA_DTYPE_FP32, 0);
    const char *out = lw_tensor(c, CTOSA_DTYPE_FP32, 3, os);
    if (!a || !b || !azp || !bzp || !out) return NULL;
    const char *in[4] = {a, b, azp, bzp};
    return lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &out, NULL) ? out : NULL;
}

/* Resize of any rank through interpolation matrices: out[] the output
 * shape, scale[] the scale per axis, roi[] (tf_crop_and_resize) starts
 * then ends per axis. */
static lower_status rs_emit_matrix(lower_ctx *c, const lower_value *X, const int64_t *out,
                                   const double *scale, bool from_scales, const rs_interp *ip,
                                   const double *roi) {
    const char *op = lw_node(c)->op_type;
    uint32_t r = X->rank;
    ctosa_dtype t = X->t, ct = CTOSA_DTYPE_FP32;
    if (!ctosa_dtype_is_float(t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                         "%s: this resize needs interpolation matrices, which are for float tensors only",
                         op);
    int64_t cur[LOWER_MAX_RANK];
    memcpy(cur, X->shape, r * sizeof *cur);
    const char *x = lw_input(c, 0);
    if (t != ct) x = lw_cast(c, x, t, ct, r, cur);
    arena *ar = lw_arena(c);
    bool *outside[LOWER_MAX_RANK] = {0};
    for (int32_t ax = (int32_t)r - 1; ax >= 0; ax--) {
        rs_axis a = {X->shape[ax],
                     out[ax],
                     from_scales,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0,
                     roi ? roi[ax] : 0,
                     roi ? roi[r + (uint32_t)ax] : 1};
        int64_t in = a.in, on = a.out;
        if (on < 1 || in < 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: axis %d from %lld to %lld elements", op,
                             ax, (long long)in, (long long)on);
        /* a dense matrix per axis: past 2^26 entries (256 MiB of FP32) the
         * constant outweighs any tensor it serves, so the node is left to
         * the CPU */
        if (in > RS_MATRIX_MAX / on)
            return lw_reject(c, LOWER_LEVEL_LIMIT, NULL,
                             "%s: axis %d from %lld to %lld elements needs an interpolation matrix of more "
                             "than 2^26 entries",
                             op, ax, (long long)in, (long long)on);
        double len = from_scales ? (double)in * scale[ax] : (double)on;
        double *mt = arena_zalloc(ar, (size_t)(in * on) * sizeof *mt);
        double *row = arena_alloc(ar, (size_t)in * sizeof *row);
        bool *oa = arena_zalloc(ar, (size_t)on);
        if (!mt || !row || !oa) return lw_failed(c);
        bool ident = in == on, any_out = false;
        for (int64_t o = 0; o < on; o++) {
            memset(row, 0, (size_t)in * sizeof *row);
            if (!rs_matrix_row(ip, &a, o, scale[ax], len, row)) oa[o] = any_out = true;
            for (int64_t p = 0; p < in; p++) {
                mt[p * on + o] = row[p];
                if (row[p] != (p == o ? 1.0 : 0.0)) ident = false;
            }
        }
        if (any_out) outside[ax] = oa;
        if (ident && !any_out) continue;
        /* the axis goes last, [1, rest, in] x [1, in, out], and back */
        int32_t perm[LOWER_MAX_RANK];
        int64_t ts[LOWER_MAX_RANK];
        for (uint32_t i = 0; i < r; i++) perm[i] = (int32_t)i;
        perm[ax] = (int32_t)r - 1;
        perm[r - 1] = ax;
        for (uint32_t i = 0; i < r; i++) ts[i] = cur[perm[i]];
        bool last = ax == (int32_t)r - 1;
        const char *y = last ? x : lw_transpose(c, x, ct, r, cur, perm);
        int64_t rest = lw_count(r, ts) / in, s3[3] = {1, rest, in}, ms[3] = {1, in, on};
        y = y ? lw_reshape(c, y, ct, 3, s3) : NULL;
        y = rs_matmul(c, y, lw_const_from_f64(c, ct, 3, ms, mt), rest, on);
        ts[r - 1] = on;
        y = y ? lw_reshape(c, y, ct, r, ts) : NULL;
        if (!last && y) y = lw_transpose(c, y, ct, r, ts, perm);
        LW_TRY(y);
        cur[ax] = on;
        x = y;
    }
    /* tf_crop_and_resize: samples outside the input are extrapolation_value
     * (their matrix rows are zero, so adding it sets them) */
    bool any = false;
    int64_t ms[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        ms[i] = outside[i] ? cur[i] : 1;
        any |= outside[i] != NULL;
    }
    if (any && ip->extrapolation != 0) {
        int64_t n = lw_count(r, ms);
        double *m = arena_alloc(ar, (size_t)n * sizeof *m);
        if (!m) return lw_failed(c);
        for (int64_t k = 0; k < n; k++) {
            int64_t rem = k;
            bool o = false;
            for (int32_t i = (int32_t)r - 1; i >= 0; i--) {
                int64_t idx = rem % ms[i];
                rem /= ms[i];
                if (outside[i] && outside[i][idx]) o = true;
            }
            m[k] = o ? ip->extrapolation : 0;
        }
        x = lw_add(c, x, lw_const_from_f64(c, ct, r, ms, m), ct, r, cur);
    }
    if (t != ct && x) x = lw_cast(c, x, ct, t, r, cur);
    if (x && !strcmp(x, lw_input(c, 0))) x = lw_reshape(c, x, t, r, cur);
    LW_TRY(x);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

/* Whether RESIZE expresses it (rs_emit says why not when it does not). */
static bool rs_fits(const lower_value *X, const int64_t *out, const int64_t *sc_n, const int64_t *sc_d,
                    bool from_scales, bool linear, int coord, int nearest, const double *roi) {
    if (X->rank != 4 || out[0] != X->shape[0] || out[1] != X->shape[1]) return false;
    for (int i = 0; i < 2; i++) {
        rs_axis a = {
            X->shape[2 + i],      out[2 + i],          from_scales, sc_n[2 + i], sc_d[2 + i], 0, 0, 0, 0,
            roi ? roi[2 + i] : 0, roi ? roi[6 + i] : 1};
        if (a.out < 1 || !rs_axis_params(&a, coord, linear ? -1 : nearest)) return false;
    }
    return true;
}

/* Shared by Resize and Upsample: X is 4-D; out[] the wanted output shape,
 * sc_n/sc_d the per-axis rational scales. */
static lower_status rs_emit(lower_ctx *c, const lower_value *X, const int64_t *out, const int64_t *sc_n,
                            const int64_t *sc_d, bool from_scales, bool linear, int coord, int nearest,
                            const double *roi) {
    const char *op = lw_node(c)->op_type;
    ctosa_dtype t = X->t;
    if (X->rank != 4)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: input rank %u (RESIZE is 2-D over NCHW; other ranks take interpolation "
                         "matrices, for float tensors only)",
                         op, X->rank);
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
    uint32_t r = X->rank;
    const char *mode = lw_attr_str(c, "mode", "nearest");
    rs_interp ip = {RS_NEAREST,
                    -1,
                    -1,
                    lw_attr_float(c, "cubic_coeff_a", -0.75f),
                    lw_attr_float(c, "extrapolation_value", 0.0f),
                    lw_attr_int(c, "exclude_outside", 0) != 0,
                    lw_attr_int(c, "antialias", 0) != 0};
    if (!strcmp(mode, "linear")) ip.mode = RS_LINEAR;
    else if (!strcmp(mode, "cubic")) ip.mode = RS_CUBIC;
    else if (strcmp(mode, "nearest"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: mode '%s'", mode);
    bool linear = ip.mode == RS_LINEAR;
    const char *ctm =
        lw_attr_str(c, "coordinate_transformation_mode", opset < 11 ? "asymmetric" : "half_pixel");
    static const char *const coords[] = {"asymmetric",
                                         "half_pixel",
                                         "pytorch_half_pixel",
                                         "align_corners",
                                         "tf_half_pixel_for_nearest",
                                         "half_pixel_symmetric",
                                         "tf_crop_and_resize"};
    /* tf_half_pixel_for_nn: the name of older definitions (and ONNX Runtime's) */
    int coord = !strcmp(ctm, "tf_half_pixel_for_nn") ? 4 : -1;
    for (int i = 0; i < 7; i++)
        if (!strcmp(ctm, coords[i])) coord = i;
    if (coord < 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: coordinate_transformation_mode '%s'", ctm);
    const char *nm = lw_attr_str(c, "nearest_mode", opset < 11 ? "floor" : "round_prefer_floor");
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    int nearest = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(nm, nms[i])) nearest = i;
    if (ip.mode == RS_NEAREST && nearest < 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: nearest_mode '%s'", nm);
    ip.coord = coord;
    ip.nearest = nearest;
    const char *policy = lw_attr_str(c, "keep_aspect_ratio_policy", "stretch");
    /* axes (opset 18): scales/sizes name a subset of the axes */
    const int64_t *axes_v = NULL;
    int64_t naxes = lw_attr_ints(c, "axes", &axes_v);
    int32_t axes[LOWER_MAX_RANK];
    uint32_t nax = r;
    for (uint32_t i = 0; i < r; i++) axes[i] = (int32_t)i;
    if (naxes >= 0) {
        if (naxes > r)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: %lld axes", (long long)naxes);
        nax = (uint32_t)naxes;
        for (uint32_t i = 0; i < nax; i++)
            if (!lw_axis(c, axes_v[i], r, "axes", &axes[i])) return LOWER_REJECT;
    }
    int64_t out[LOWER_MAX_RANK], sn[LOWER_MAX_RANK], sd[LOWER_MAX_RANK];
    double sc[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        out[i] = X->shape[i];
        sn[i] = sd[i] = 1;
        sc[i] = 1;
    }
    uint32_t si = opset < 11 ? 1 : 2, zi = 3;
    bool have_sizes = opset >= 11 && lw_has_input(c, zi) && lw_in(c, zi)->static_shape &&
                      lw_count(lw_in(c, zi)->rank, lw_in(c, zi)->shape) > 0;
    /* a scale without a small rational form leaves RESIZE, not the matrices */
    bool rational = true;
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
                if (sz[i] < 1 || sz[i] > INT32_MAX)
                    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: size %lld", (long long)sz[i]);
                out[a] = sz[i];
                sn[a] = sz[i];
                sd[a] = X->shape[a];
                sc[a] = (double)sz[i] / (double)X->shape[a];
            } else {
                out[a] = rs_floor_dim(keep * (double)X->shape[a] + 0.5);
                if (out[a] < 0)
                    return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: output size out of range");
                sc[a] = keep;
                if (!rs_rational(keep, &sn[a], &sd[a])) rational = false;
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
            if (out[a] < 1 || !(sv[i] > 0))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Resize: scale %g out of range", sv[i]);
            sc[a] = sv[i];
            if (!rs_rational(sv[i], &sn[a], &sd[a])) rational = false;
        }
    }
    /* roi (tf_crop_and_resize only): starts then ends, per rank or per axes */
    double roi[2 * LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        roi[i] = 0;
        roi[r + i] = 1;
    }
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
            roi[r + (uint32_t)axes[i]] = rv[nax + i];
            /* with scales the definition sizes the output by the roi's span
             * as well (floor(in * (end - start) * scale)) */
            if (!have_sizes && rv[nax + i] - rv[i] != 1)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Resize: tf_crop_and_resize with scales and a roi span other than 1 on axis "
                                 "%d (give sizes)",
                                 axes[i]);
        }
    }
    bool down = false;
    for (uint32_t i = 0; i < r; i++) down |= out[i] < X->shape[i];
    ip.antialias = ip.antialias && ip.mode != RS_NEAREST && down;
    /* RESIZE where it expresses the resize, interpolation matrices otherwise
     * (cubic, antialias, extrapolation, other axes or ranks, extreme or
     * irrational scales) */
    const double *roi_p = coord == 6 ? roi : NULL;
    bool fits = ip.mode != RS_CUBIC && !ip.antialias && rational &&
                rs_fits(X, out, sn, sd, !have_sizes, linear, coord, nearest, roi_p);
    if (!fits && (ctosa_dtype_is_float(X->t) || ip.mode == RS_CUBIC || ip.antialias))
        return rs_emit_matrix(c, X, out, sc, !have_sizes, &ip, roi_p);
    if (!rational)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Resize: a scale is not a small rational (RESIZE; the interpolation matrices are "
                         "for float tensors only)");
    return rs_emit(c, X, out, sn, sd, !have_sizes, linear, coord, nearest, roi_p);
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
