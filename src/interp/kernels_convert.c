/* kernels_convert.c - type conversion kernels: CAST and RESCALE.
 *
 * Both follow the TOSA 1.0 pseudocode bit-exactly for integer results.
 * Canonical storage (interp_internal.h) means floats arrive as float values
 * already representable in their dtype, so float->float casts round once. */
#include <math.h>
#include <string.h>

#include "interp/int_math.h"
#include "util/floatfmt.h"

/* ------------------------------------------------------------------ CAST */

static bool cast_supported(ctosa_dtype t) {
    return im_is_float(t) || t == CTOSA_DTYPE_BOOL || t == CTOSA_DTYPE_INT4 ||
           t == CTOSA_DTYPE_INT8 || t == CTOSA_DTYPE_INT16 || t == CTOSA_DTYPE_INT32 ||
           t == CTOSA_DTYPE_INT48 || t == CTOSA_DTYPE_INT64;
}

/* round_to_nearest_int: ties to even (rint in the default rounding mode). */
static int64_t cast_f2i(double x, int64_t lo, int64_t hi) {
    if (isnan(x)) return 0;
    double r = nearbyint(x);
    if (r <= (double)lo) return lo;
    if (r >= (double)hi) return hi;
    return (int64_t)r;
}

ctosa_error *interp_k_CAST(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 1, 1);
    if (e) return e;
    const itensor *in = o->in[0];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    ctosa_dtype ti = in->dtype, to = out->dtype;
    if (!cast_supported(ti) || !cast_supported(to))
        return interp_fail(o, "CAST from %s to %s is not supported", ctosa_dtype_short(ti),
                           ctosa_dtype_short(to));
    uint64_t n = in->count;
    const void *src = in->data;
    void *dst = out->data;
    if (to == CTOSA_DTYPE_BOOL) {
        uint8_t *d = dst;
        for (uint64_t i = 0; i < n; i++)
            d[i] = im_is_float(ti) ? (((const float *)src)[i] != 0.0f) : (im_load_i(ti, src, i) != 0);
    } else if (im_is_float(to)) {
        float *d = dst;
        if (im_is_float(ti)) {
            const float *s = src;
            for (uint64_t i = 0; i < n; i++) d[i] = ff_round_to(to, s[i]);
        } else {
            /* every int up to 48 bits is exact in double: one rounding */
            for (uint64_t i = 0; i < n; i++) d[i] = ff_round_to_double(to, (double)im_load_i(ti, src, i));
        }
    } else {
        int64_t lo, hi;
        im_range_s(to, &lo, &hi);
        if (im_is_float(ti)) {
            const float *s = src;
            /* the spec clips in int32 first, so no int48/int64 output exceeds
             * the int32 range */
            if (lo < INT32_MIN) lo = INT32_MIN;
            if (hi > INT32_MAX) hi = INT32_MAX;
            for (uint64_t i = 0; i < n; i++) im_store_i(to, dst, i, cast_f2i(s[i], lo, hi));
        } else {
            /* bool -> 0/1; wider: sign extend; narrower: truncate */
            for (uint64_t i = 0; i < n; i++) im_store_i(to, dst, i, im_truncate(to, im_load_i(ti, src, i)));
        }
    }
    return NULL;
}

/* --------------------------------------------------------------- RESCALE */

ctosa_error *interp_k_RESCALE(const interp_op *o) {
    ctosa_error *e = im_need_io(o, 5, 1);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    const itensor *in = o->in[0], *mul = o->in[1], *sh = o->in[2];
    itensor *out = o->out[0];
    if ((e = im_same_shape(o, in, out))) return e;
    ctosa_dtype ti = in->dtype, to = out->dtype;
    if (ti != CTOSA_DTYPE_INT8 && ti != CTOSA_DTYPE_INT16 && ti != CTOSA_DTYPE_INT32 &&
        ti != CTOSA_DTYPE_INT48)
        return interp_fail(o, "input type %s is not supported", ctosa_dtype_short(ti));
    if (to != CTOSA_DTYPE_INT8 && to != CTOSA_DTYPE_INT16 && to != CTOSA_DTYPE_INT32)
        return interp_fail(o, "output type %s is not supported", ctosa_dtype_short(to));
    int64_t izp, ozp;
    if (!im_scalar_i(o->in[3], &izp) || o->in[3]->dtype != ti)
        return interp_fail(o, "input_zp must be a one-element %s tensor", ctosa_dtype_short(ti));
    if (!im_scalar_i(o->in[4], &ozp) || o->in[4]->dtype != to)
        return interp_fail(o, "output_zp must be a one-element %s tensor", ctosa_dtype_short(to));
    bool iu = a->input_unsigned, ou = a->output_unsigned;
    /* zero points are compared after the extension the pseudocode applies */
    if (iu) izp = ti == CTOSA_DTYPE_INT8 ? (uint8_t)izp : (uint16_t)izp;
    if (ou) ozp = to == CTOSA_DTYPE_INT8 ? (uint8_t)ozp : (uint16_t)ozp;
    if (ti != CTOSA_DTYPE_INT8 && (ti != CTOSA_DTYPE_INT16 || !iu) && izp != 0)
        return interp_fail(o, "input_zp must be 0 for %s input", ctosa_dtype_short(ti));
    if (to != CTOSA_DTYPE_INT8 && (to != CTOSA_DTYPE_INT16 || !ou) && ozp != 0)
        return interp_fail(o, "output_zp must be 0 for %s output", ctosa_dtype_short(to));
    if (ti == CTOSA_DTYPE_INT16 && iu && izp != 0 && izp != 32768)
        return interp_fail(o, "input_zp of unsigned int16 input must be 0 or 32768");
    if (to == CTOSA_DTYPE_INT16 && ou && ozp != 0 && ozp != 32768)
        return interp_fail(o, "output_zp of unsigned int16 output must be 0 or 32768");
    if (a->scale32 && ti == CTOSA_DTYPE_INT48) return interp_fail(o, "scale32 is not allowed with int48 input");
    if (a->rounding_mode != CTOSA_ROUND_SINGLE && a->rounding_mode != CTOSA_ROUND_INEXACT &&
        a->rounding_mode != CTOSA_ROUND_DOUBLE)
        return interp_fail(o, "rounding_mode %d is not valid", (int)a->rounding_mode);
    if (!a->scale32 && a->rounding_mode == CTOSA_ROUND_DOUBLE)
        return interp_fail(o, "DOUBLE_ROUND needs scale32");
    if (iu && ou) return interp_fail(o, "input_unsigned and output_unsigned are both set");
    if (to == CTOSA_DTYPE_INT32 && iu) return interp_fail(o, "unsigned input with int32 output");
    if ((ti == CTOSA_DTYPE_INT32 || ti == CTOSA_DTYPE_INT48) && (ou || iu))
        return interp_fail(o, "unsigned flags are not allowed with %s input", ctosa_dtype_short(ti));
    if (to == CTOSA_DTYPE_INT32 && ou) return interp_fail(o, "unsigned int32 output is not allowed");
    if (a->per_channel && in->rank < 1) return interp_fail(o, "per_channel needs an input of rank >= 1");
    uint64_t nc = a->per_channel ? (uint64_t)in->shape[in->rank - 1] : 1;
    ctosa_dtype mt = a->scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16;
    if (mul->dtype != mt)
        return interp_fail(o, "multiplier must be %s when scale32 is %s", ctosa_dtype_short(mt),
                           a->scale32 ? "true" : "false");
    if (sh->dtype != CTOSA_DTYPE_INT8) return interp_fail(o, "shift must be int8");
    if (mul->count != nc || sh->count != nc)
        return interp_fail(o, "multiplier and shift need %llu elements, have %llu and %llu",
                           (unsigned long long)nc, (unsigned long long)mul->count,
                           (unsigned long long)sh->count);
    for (uint64_t c = 0; c < nc; c++) {
        int s = ((const int8_t *)sh->data)[c];
        int64_t m = im_load_i(mt, mul->data, c);
        if (s < 2 || s > 62) return interp_fail(o, "shift[%llu] = %d is outside 2..62", (unsigned long long)c, s);
        if (m < 0) return interp_fail(o, "multiplier[%llu] = %lld is negative", (unsigned long long)c, (long long)m);
    }
    int64_t lo, hi;
    if (ou) {
        lo = 0;
        hi = to == CTOSA_DTYPE_INT8 ? 255 : 65535;
    } else {
        im_range_s(to, &lo, &hi);
    }
    bool dbl = a->rounding_mode == CTOSA_ROUND_DOUBLE;
    const int8_t *shv = sh->data;
    bool ok = true;
    uint64_t n = in->count, c = 0;
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = im_load_i(ti, in->data, i);
        if (iu) v = ti == CTOSA_DTYPE_INT8 ? (uint8_t)v : (uint16_t)v;
        v -= izp;
        int32_t r;
        if (a->scale32)
            r = im_apply_scale_32((int32_t)v, (int32_t)im_load_i(mt, mul->data, c), shv[c], dbl, &ok);
        else
            r = im_apply_scale_16(v, (int16_t)im_load_i(mt, mul->data, c), shv[c], &ok);
        int64_t res = (int64_t)r + ozp;
        if (res < INT32_MIN || res > INT32_MAX) ok = false;
        im_store_i(to, out->data, i, im_truncate(to, im_clip(res, lo, hi)));
        if (!ok)
            return interp_fail(o, "element %llu: scaled value out of range (REQUIRE failed)",
                               (unsigned long long)i);
        if (++c == nc) c = 0;
    }
    return NULL;
}
