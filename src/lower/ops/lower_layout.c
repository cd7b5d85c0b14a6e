/*
 * lower_layout.c - data movement: Concat, Split, Slice, Pad, Tile, Expand.
 *
 * Everything here is expressed with SLICE / PAD / REVERSE / CONCAT / TILE /
 * RESHAPE, which exist for every dtype TOSA has (bool included), so these
 * lowerings never need GATHER. Parameters that TOSA needs as compile-time
 * shapes (Slice starts..., Pad pads, Tile repeats, Expand shape, Split
 * sizes) must be constants; otherwise the node is rejected with
 * needs_constant naming the input.
 */
#include "lower/lower_build.h"

#include <math.h>
#include <string.h>

#include "util/floatfmt.h"

/* A constant int64 list from input i (needs_constant if not constant). */
static bool const_ints(lower_ctx *c, uint32_t i, const int64_t **v, int64_t *n, lower_status *st) {
    *n = lw_const_i64(c, i, v);
    if (*n < 0) {
        const ctosa_onnx_node *nd = lw_node(c);
        const char *name = i < nd->n_inputs ? nd->inputs[i] : "?";
        *st = lw_reject(c, LOWER_NEEDS_CONSTANT, name, "%s: input '%s' must be a compile-time constant",
                        nd->op_type, name);
        return false;
    }
    return true;
}

/* Binds output i to an empty constant (a zero-size result TOSA cannot
 * carry as a tensor). */
static void set_empty_output(lower_ctx *c, uint32_t i, int32_t onnx_dtype, uint32_t rank,
                             const int64_t *shape) {
    static const uint8_t none[8];
    lw_set_output_const(c, i, onnx_dtype, rank, shape, none, 0);
}

/* --------------------------------------------------------------- Concat */

static lower_status lower_concat(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    uint32_t n = lw_n_inputs(c);
    const lower_value *v0 = lw_data_input(c, 0, &st);
    if (!v0) return st;
    int32_t axis;
    if (!lw_has_attr(c, "axis"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Concat: attribute 'axis' is missing");
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), v0->rank, "axis", &axis)) return LOWER_REJECT;
    const char **xs = arena_alloc(lw_arena(c), (n ? n : 1) * sizeof *xs);
    if (!xs) return lw_failed(c);
    uint32_t m = 0;
    int64_t out_shape[LOWER_MAX_RANK];
    memcpy(out_shape, v0->shape, v0->rank * sizeof *out_shape);
    out_shape[axis] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const lower_value *v = lw_data_input(c, i, &st);
        if (!v) return st;
        if (v->rank != v0->rank)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name,
                             "Concat: input '%s' has rank %u, expected %u", v->name, v->rank, v0->rank);
        out_shape[axis] += v->shape[axis];
        if (lw_count(v->rank, v->shape) == 0) continue; /* empty inputs add nothing */
        xs[m] = lw_input(c, i);
        if (!xs[m]) return lw_failed(c);
        m++;
    }
    if (m == 0) {
        set_empty_output(c, 0, v0->onnx_dtype, v0->rank, out_shape);
        return LOWER_OK;
    }
    const char *out = m == 1 ? lw_unary(c, CTOSA_OP_IDENTITY, xs[0], v0->t, v0->rank, out_shape, NULL)
                             : lw_concat(c, m, xs, v0->t, v0->rank, axis);
    if (!out) return lw_failed(c);
    lw_set_output(c, 0, out);
    return LOWER_OK;
}

/* ---------------------------------------------------------------- Split */

static lower_status lower_split(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), v->rank, "axis", &axis)) return LOWER_REJECT;
    uint32_t nout = nd->n_outputs;
    int64_t dim = v->shape[axis];
    int64_t *sizes = arena_alloc(lw_arena(c), (nout ? nout : 1) * sizeof *sizes);
    if (!sizes) return lw_failed(c);
    const int64_t *sp = NULL;
    int64_t nsp = -1;
    if (lw_opset(c) >= 13) {
        if (lw_has_input(c, 1) && !const_ints(c, 1, &sp, &nsp, &st)) return st;
    } else {
        nsp = lw_attr_ints(c, "split", &sp);
    }
    if (nsp >= 0) {
        if ((uint64_t)nsp != nout)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Split: %lld split sizes for %u outputs",
                             (long long)nsp, nout);
        int64_t sum = 0;
        for (uint32_t i = 0; i < nout; i++) {
            if (sp[i] < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Split: negative split size");
            sizes[i] = sp[i];
            sum += sp[i];
        }
        if (sum != dim)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Split: split sizes add up to %lld, axis has %lld", (long long)sum,
                             (long long)dim);
    } else {
        int64_t parts = lw_has_attr(c, "num_outputs") ? lw_attr_int(c, "num_outputs", 0) : (int64_t)nout;
        if (parts <= 0 || parts != (int64_t)nout)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Split: num_outputs %lld does not match %u outputs", (long long)parts, nout);
        if (lw_has_attr(c, "num_outputs")) {
            /* opset 18: ceil-sized chunks, the last one smaller */
            int64_t chunk = (dim + parts - 1) / parts;
            int64_t left = dim;
            for (uint32_t i = 0; i < nout; i++) {
                sizes[i] = left < chunk ? left : chunk;
                left -= sizes[i];
            }
        } else {
            if (dim % parts)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Split: axis of %lld does not split into %lld equal parts", (long long)dim,
                                 (long long)parts);
            for (uint32_t i = 0; i < nout; i++) sizes[i] = dim / parts;
        }
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    int64_t off = 0;
    for (uint32_t i = 0; i < nout; i++) {
        if (!nd->outputs[i][0]) {
            off += sizes[i];
            continue;
        }
        if (sizes[i] == 0) {
            int64_t shp[LOWER_MAX_RANK];
            memcpy(shp, v->shape, v->rank * sizeof *shp);
            shp[axis] = 0;
            set_empty_output(c, i, v->onnx_dtype, v->rank, shp);
            continue;
        }
        const char *o = lw_slice_axis(c, x, v->t, v->rank, v->shape, axis, off, sizes[i]);
        if (!o) return lw_failed(c);
        if (o == x) {
            o = lw_unary(c, CTOSA_OP_IDENTITY, x, v->t, v->rank, v->shape, NULL);
            if (!o) return lw_failed(c);
        }
        lw_set_output(c, i, o);
        off += sizes[i];
    }
    return LOWER_OK;
}

/* ---------------------------------------------------------------- Slice */

/* Strided selection along one axis of x (already sliced so that the
 * selection starts at 0): keeps elements 0, step, 2*step, ... (len of
 * them). Uses PAD + RESHAPE [len, step] + SLICE [len, 1] + RESHAPE. */
static const char *stride_axis(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, int64_t *shape,
                               int32_t axis, int64_t step, int64_t len) {
    int64_t need = len * step;
    if (shape[axis] > need) {
        x = lw_slice_axis(c, x, t, rank, shape, axis, 0, need);
        if (!x) return NULL;
        shape[axis] = need;
    } else if (shape[axis] < need) {
        int64_t pads[2 * LOWER_MAX_RANK] = {0};
        pads[2 * axis + 1] = need - shape[axis];
        x = lw_pad(c, x, t, rank, shape, pads, 0);
        if (!x) return NULL;
        shape[axis] = need;
    }
    if (rank + 1 > LOWER_MAX_RANK) return NULL;
    int64_t split[LOWER_MAX_RANK], start[LOWER_MAX_RANK] = {0}, size[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < rank; i++) {
        if ((int32_t)i == axis) {
            split[k++] = len;
            split[k++] = step;
        } else {
            split[k++] = shape[i];
        }
    }
    x = lw_reshape(c, x, t, rank + 1, split);
    if (!x) return NULL;
    memcpy(size, split, (rank + 1) * sizeof *size);
    size[axis + 1] = 1;
    x = lw_slice(c, x, t, rank + 1, split, start, size);
    if (!x) return NULL;
    shape[axis] = len;
    return lw_reshape(c, x, t, rank, shape);
}

static lower_status lower_slice(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
    int64_t ns, ne, na = -1, nst = -1;
    if (lw_opset(c) < 10) {
        ns = lw_attr_ints(c, "starts", &starts);
        ne = lw_attr_ints(c, "ends", &ends);
        na = lw_attr_ints(c, "axes", &axes);
        if (ns < 0 || ne < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Slice: attributes 'starts' and 'ends' are required");
    } else {
        if (!const_ints(c, 1, &starts, &ns, &st) || !const_ints(c, 2, &ends, &ne, &st)) return st;
        if (lw_has_input(c, 3) && !const_ints(c, 3, &axes, &na, &st)) return st;
        if (lw_has_input(c, 4) && !const_ints(c, 4, &steps, &nst, &st)) return st;
    }
    if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Slice: starts/ends/axes/steps have different lengths");
    /* Per-axis selection: first element, step, count. */
    int64_t first[LOWER_MAX_RANK], step[LOWER_MAX_RANK], len[LOWER_MAX_RANK];
    bool seen[LOWER_MAX_RANK] = {false};
    for (uint32_t i = 0; i < r; i++) {
        first[i] = 0;
        step[i] = 1;
        len[i] = v->shape[i];
    }
    for (int64_t k = 0; k < ns; k++) {
        int32_t ax;
        if (!lw_axis(c, axes ? axes[k] : k, r, "axis", &ax)) return LOWER_REJECT;
        if (seen[ax]) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Slice: axis %d given twice", ax);
        seen[ax] = true;
        int64_t d = v->shape[ax], s = steps ? steps[k] : 1;
        if (s == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Slice: step 0");
        int64_t b = starts[k], e = ends[k];
        if (b < 0) b += d;
        if (e < 0) e += d;
        if (s > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
            len[ax] = e > b ? (e - b + s - 1) / s : 0;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len[ax] = b > e ? (b - e + (-s) - 1) / (-s) : 0;
        }
        first[ax] = b;
        step[ax] = s;
    }
    int64_t out_shape[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) out_shape[i] = len[i];
    if (lw_count(r, out_shape) == 0) {
        set_empty_output(c, 0, v->onnx_dtype, r, out_shape);
        return LOWER_OK;
    }
    /* One SLICE covering every selected element, then REVERSE negative
     * steps and thin out |step| > 1 axes. */
    int64_t start[LOWER_MAX_RANK], size[LOWER_MAX_RANK], shape[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        int64_t span = (len[i] - 1) * (step[i] < 0 ? -step[i] : step[i]) + 1;
        start[i] = step[i] > 0 ? first[i] : first[i] - span + 1;
        size[i] = span;
        shape[i] = span;
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    x = lw_slice(c, x, v->t, r, v->shape, start, size);
    if (!x) return lw_failed(c);
    for (uint32_t i = 0; i < r; i++) {
        if (step[i] < 0) {
            x = lw_reverse(c, x, v->t, r, shape, (int32_t)i);
            if (!x) return lw_failed(c);
        }
        int64_t s = step[i] < 0 ? -step[i] : step[i];
        if (s > 1 && len[i] > 1) {
            x = stride_axis(c, x, v->t, r, shape, (int32_t)i, s, len[i]);
            if (!x) return lw_failed(c);
        }
    }
    if (x == lw_input(c, 0)) {
        x = lw_unary(c, CTOSA_OP_IDENTITY, x, v->t, r, v->shape, NULL);
        if (!x) return lw_failed(c);
    }
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

/* ------------------------------------------------------------------ Pad */

static lower_status lower_pad(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    const char *mode = lw_attr_str(c, "mode", "constant");
    const int64_t *pads;
    int64_t np;
    double value = 0;
    int64_t lo[LOWER_MAX_RANK] = {0}, hi[LOWER_MAX_RANK] = {0};
    if (lw_opset(c) < 11) {
        np = lw_attr_ints(c, "pads", &pads);
        if (np < 0) np = lw_attr_ints(c, "paddings", &pads);
        if (np < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Pad: 'pads' is missing");
        value = lw_attr_float(c, "value", 0.0f);
    } else {
        if (!const_ints(c, 1, &pads, &np, &st)) return st;
        if (lw_has_input(c, 2)) {
            const double *cv;
            int64_t n = lw_const_f64(c, 2, &cv);
            if (n < 0)
                return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[2],
                                 "Pad: constant_value '%s' must be a compile-time constant",
                                 lw_node(c)->inputs[2]);
            if (n >= 1) value = cv[0];
        }
    }
    /* Which axes the pads refer to (opset 18 axes input). */
    int32_t ax[LOWER_MAX_RANK];
    int64_t nax = r;
    for (uint32_t i = 0; i < r; i++) ax[i] = (int32_t)i;
    if (lw_opset(c) >= 18 && lw_has_input(c, 3)) {
        const int64_t *a;
        if (!const_ints(c, 3, &a, &nax, &st)) return st;
        if (nax > (int64_t)r) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Pad: more axes than rank");
        for (int64_t k = 0; k < nax; k++)
            if (!lw_axis(c, a[k], r, "axis", &ax[k])) return LOWER_REJECT;
    }
    if (np != 2 * nax)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Pad: %lld pads for %lld axes", (long long)np,
                         (long long)nax);
    for (int64_t k = 0; k < nax; k++) {
        lo[ax[k]] = pads[k];
        hi[ax[k]] = pads[k + nax];
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    int64_t shape[LOWER_MAX_RANK];
    memcpy(shape, v->shape, r * sizeof *shape);
    /* Negative pads crop first. */
    {
        int64_t start[LOWER_MAX_RANK], size[LOWER_MAX_RANK];
        for (uint32_t i = 0; i < r; i++) {
            int64_t sum; /* hostile pads: no negation of INT64_MIN, no overflowing sums */
            if (lo[i] < -shape[i] || hi[i] < -shape[i] || __builtin_add_overflow(shape[i], lo[i], &sum) ||
                __builtin_add_overflow(sum, hi[i], &sum))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Pad: pads %lld/%lld for axis %u of size %lld", (long long)lo[i],
                                 (long long)hi[i], i, (long long)shape[i]);
            start[i] = lo[i] < 0 ? -lo[i] : 0;
            size[i] = shape[i] - start[i] - (hi[i] < 0 ? -hi[i] : 0);
            if (size[i] <= 0)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Pad: negative pads remove all of axis %u",
                                 i);
            if (lo[i] < 0) lo[i] = 0;
            if (hi[i] < 0) hi[i] = 0;
        }
        x = lw_slice(c, x, v->t, r, shape, start, size);
        if (!x) return lw_failed(c);
        memcpy(shape, size, r * sizeof *shape);
    }
    if (!strcmp(mode, "constant")) {
        int64_t lohi[2 * LOWER_MAX_RANK];
        for (uint32_t i = 0; i < r; i++) {
            lohi[2 * i] = lo[i];
            lohi[2 * i + 1] = hi[i];
        }
        x = lw_pad(c, x, v->t, r, shape, lohi, value);
        if (!x) return lw_failed(c);
    } else if (!strcmp(mode, "reflect") || !strcmp(mode, "edge") || !strcmp(mode, "wrap")) {
        for (uint32_t i = 0; i < r; i++) {
            if (!lo[i] && !hi[i]) continue;
            int64_t d = shape[i];
            const char *parts[3];
            uint32_t n = 0;
            if (!strcmp(mode, "reflect") && (lo[i] > d - 1 || hi[i] > d - 1))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Pad: reflect pads of %lld/%lld exceed axis %u of size %lld - 1",
                                 (long long)lo[i], (long long)hi[i], i, (long long)d);
            if (!strcmp(mode, "wrap") && (lo[i] > d || hi[i] > d))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Pad: wrap pads larger than axis %u are not supported", i);
            for (int side = 0; side < 2; side++) {
                int64_t p = side ? hi[i] : lo[i];
                if (!p) {
                    if (side == 0) parts[n++] = x;
                    continue;
                }
                const char *e;
                int64_t es[LOWER_MAX_RANK];
                memcpy(es, shape, r * sizeof *es);
                if (!strcmp(mode, "reflect")) {
                    e = lw_slice_axis(c, x, v->t, r, shape, (int32_t)i, side ? d - 1 - p : 1, p);
                    es[i] = p;
                    if (e) e = lw_reverse(c, e, v->t, r, es, (int32_t)i);
                } else if (!strcmp(mode, "edge")) {
                    e = lw_slice_axis(c, x, v->t, r, shape, (int32_t)i, side ? d - 1 : 0, 1);
                    es[i] = 1;
                    int64_t mult[LOWER_MAX_RANK];
                    for (uint32_t j = 0; j < r; j++) mult[j] = 1;
                    mult[i] = p;
                    if (e) e = lw_tile(c, e, v->t, r, es, mult);
                } else {
                    e = lw_slice_axis(c, x, v->t, r, shape, (int32_t)i, side ? 0 : d - p, p);
                }
                if (!e) return lw_failed(c);
                parts[n++] = e;
                if (side == 0) parts[n++] = x;
            }
            x = lw_concat(c, n, parts, v->t, r, (int32_t)i);
            if (!x) return lw_failed(c);
            shape[i] = d + lo[i] + hi[i];
        }
    } else {
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Pad: mode '%s' is not supported", mode);
    }
    if (x == lw_input(c, 0)) {
        x = lw_unary(c, CTOSA_OP_IDENTITY, x, v->t, r, v->shape, NULL);
        if (!x) return lw_failed(c);
    }
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

/* ----------------------------------------------------------------- Tile */

static lower_status lower_tile(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    const int64_t *rep;
    int64_t n;
    if (!const_ints(c, 1, &rep, &n, &st)) return st;
    if (n != (int64_t)v->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Tile: %lld repeats for rank %u", (long long)n,
                         v->rank);
    int64_t out_shape[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < v->rank; i++) {
        if (rep[i] < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Tile: negative repeat");
        if (__builtin_mul_overflow(v->shape[i], rep[i], &out_shape[i]))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Tile: the output shape overflows");
    }
    if (lw_count(v->rank, out_shape) == 0) {
        set_empty_output(c, 0, v->onnx_dtype, v->rank, out_shape);
        return LOWER_OK;
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    const char *o = lw_tile(c, x, v->t, v->rank, v->shape, rep);
    if (o == x) o = lw_unary(c, CTOSA_OP_IDENTITY, x, v->t, v->rank, v->shape, NULL);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

/* --------------------------------------------------------------- Expand */

static lower_status lower_expand(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    const int64_t *shp;
    int64_t n;
    if (!const_ints(c, 1, &shp, &n, &st)) return st;
    uint32_t r = (uint32_t)(n > (int64_t)v->rank ? n : (int64_t)v->rank);
    if (r > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Expand: rank %u is too large", r);
    int64_t in_shape[LOWER_MAX_RANK], out_shape[LOWER_MAX_RANK], mult[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        int64_t a = i < r - v->rank ? 1 : v->shape[i - (r - v->rank)];
        int64_t b = i < r - (uint32_t)n ? 1 : shp[i - (r - (uint32_t)n)];
        if (a != b && a != 1 && b != 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Expand: shape %lld does not broadcast with %lld at axis %u", (long long)b,
                             (long long)a, i);
        in_shape[i] = a;
        out_shape[i] = a == 1 ? b : a;
        mult[i] = a == 1 ? b : 1;
    }
    if (lw_count(r, out_shape) == 0) {
        set_empty_output(c, 0, v->onnx_dtype, r, out_shape);
        return LOWER_OK;
    }
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    if (r != v->rank) {
        x = lw_reshape(c, x, v->t, r, in_shape);
        if (!x) return lw_failed(c);
    }
    const char *o = lw_tile(c, x, v->t, r, in_shape, mult);
    if (o == lw_input(c, 0)) o = lw_unary(c, CTOSA_OP_IDENTITY, o, v->t, r, out_shape, NULL);
    if (!o) return lw_failed(c);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

const lower_entry lower_table_layout[] = {
    {"Concat", 4, 0, lower_concat},
    {"Split", 2, 0, lower_split},
    {"Slice", 1, 0, lower_slice},
    {"Pad", 2, 0, lower_pad},
    {"Tile", 6, 0, lower_tile},
    {"Expand", 8, 0, lower_expand},
    {0},
};
