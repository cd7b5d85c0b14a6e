/*
 * lower_detect.c - the operators of a detector's post-processing whose
 * results TOSA can hold only once the values are known: NonZero, Compress,
 * NonMaxSuppression, RoiAlign.
 *
 * NonZero's, Compress's and NonMaxSuppression's output sizes depend on the
 * values, and
 * RoiAlign reads the feature map at positions the boxes give. Each is
 * computed here when its inputs are constants (their outputs bound with
 * lw_set_output_const); any other input is refused with dynamic_shape
 * (NonZero, Compress, NonMaxSuppression) or needs_constant (RoiAlign), so
 * the node
 * stays on the CPU. The partitioned model's runtime lowers such a node
 * again on each run with that run's values as constants, which is how
 * detection networks run end to end.
 *
 * Arithmetic follows ONNX's definitions in fp32, the type ONNX Runtime
 * computes them in: NonMaxSuppression's areas and IoU, RoiAlign's sample
 * positions, bilinear weights and sums (in the reference's order).
 */
#include "lower/lower_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- NonZero */

static lower_status lower_nonzero(lower_ctx *c) {
    const lower_value *v = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    if (!v) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "NonZero: the input is unknown");
    const double *x;
    int64_t n = lw_const_f64(c, 0, &x);
    if (n < 0)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, lw_node(c)->inputs[0],
                         "NonZero: the output's shape depends on the input's values");
    uint32_t r = v->rank;
    if (r == 0) /* numpy has deprecated nonzero of a 0-d array; ONNX leaves it open */
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[0], "NonZero of a scalar");
    int64_t nz = 0;
    for (int64_t i = 0; i < n; i++) nz += x[i] != 0; /* NaN counts: it is not zero */
    /* [rank, nz] int64, the indices of each non-zero element in row-major order */
    uint64_t cols = (uint64_t)nz, rows = r;
    if (cols * rows > (1u << 26))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "NonZero: %lld non-zero elements", (long long)nz);
    int64_t *out = arena_alloc(lw_arena(c), (size_t)(rows * cols + 1) * sizeof *out);
    if (!out) return lw_failed(c);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] == 0) continue;
        int64_t rem = i;
        for (uint32_t d = r; d-- > 0;) {
            out[(uint64_t)d * cols + (uint64_t)k] = rem % v->shape[d];
            rem /= v->shape[d];
        }
        k++;
    }
    int64_t shp[2] = {(int64_t)rows, nz};
    lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 2, shp, out, rows * cols * sizeof *out);
    return LOWER_OK;
}

/* ------------------------------------------------------------- Compress */

/* A constant condition on a runtime input: each run of kept slices along
 * the axis is one SLICE, CONCATenated (axis -1: the input flattened). */
#define COMPRESS_MAX_RUNS 64
static lower_status compress_slices(lower_ctx *c, const lower_value *v, const double *cond, int64_t nc,
                                    int32_t axis, int64_t kept) {
    lower_status st = LOWER_REJECT;
    if (!lw_data_input(c, 0, &st)) return st;
    if (kept == 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Compress: nothing is kept (an empty output)");
    const char *x = lw_input(c, 0);
    ctosa_dtype t = v->t;
    uint32_t r = v->rank;
    int64_t shape[LOWER_MAX_RANK];
    memcpy(shape, v->shape, r * sizeof *shape);
    if (axis < 0) {
        shape[0] = lw_count(r, v->shape);
        r = 1;
        axis = 0;
        x = x ? lw_reshape(c, x, t, 1, shape) : NULL;
    }
    const char *parts[COMPRESS_MAX_RUNS];
    uint32_t np = 0;
    for (int64_t i = 0; i < nc; i++) {
        if (cond[i] == 0 || (i > 0 && cond[i - 1] != 0)) continue;
        int64_t e = i;
        while (e < nc && cond[e] != 0) e++;
        if (np == COMPRESS_MAX_RUNS)
            return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "Compress: more than %d runs of kept slices",
                             COMPRESS_MAX_RUNS);
        parts[np++] = x ? lw_slice_axis(c, x, t, r, shape, axis, i, e - i) : NULL;
    }
    const char *y = np == 1 ? parts[0] : lw_concat(c, np, parts, t, r, axis);
    if (!y) return lw_failed(c);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_compress(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    const lower_value *cv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!v || !cv) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "Compress: an input is unknown");
    size_t es = lw_onnx_elem_size(v->onnx_dtype);
    if (!es) return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "Compress: dtype %d", v->onnx_dtype);
    const double *cond;
    int64_t nc = lw_const_f64(c, 1, &cond);
    if (nc < 0)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, nd->inputs[1],
                         "Compress: the output's shape depends on the condition's values");
    /* no axis: the input flattened, as one axis */
    bool flat = !lw_has_attr(c, "axis");
    int32_t axis = 0;
    if (!flat && !lw_axis(c, lw_attr_int(c, "axis", 0), v->rank, "axis", &axis)) return LOWER_REJECT;
    int64_t outer = 1, len = 1, inner = 1;
    for (uint32_t d = 0; d < v->rank; d++) {
        if (flat) len *= v->shape[d];
        else if ((int32_t)d < axis) outer *= v->shape[d];
        else if ((int32_t)d == axis) len = v->shape[d];
        else inner *= v->shape[d];
    }
    if (nc > len)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, nd->inputs[1],
                         "Compress: %lld conditions for an axis of %lld", (long long)nc, (long long)len);
    int64_t kept = 0;
    for (int64_t i = 0; i < nc; i++) kept += cond[i] != 0; /* only the first nc slices can be kept */
    if (!v->data) return compress_slices(c, v, cond, nc, flat ? -1 : axis, kept);
    uint8_t *out = arena_alloc(lw_arena(c), (size_t)(outer * kept * inner) * es + 1);
    if (!out) return lw_failed(c);
    const uint8_t *in = v->data;
    size_t row = (size_t)inner * es;
    for (int64_t o = 0, k = 0; o < outer; o++)
        for (int64_t i = 0; i < nc; i++)
            if (cond[i] != 0) memcpy(out + (size_t)(k++) * row, in + (size_t)(o * len + i) * row, row);
    int64_t shp[LOWER_MAX_RANK];
    uint32_t r = flat ? 1 : v->rank;
    if (flat) shp[0] = kept;
    else {
        memcpy(shp, v->shape, v->rank * sizeof *shp);
        shp[axis] = kept;
    }
    lw_set_output_const(c, 0, v->onnx_dtype, r, shp, out, (uint64_t)(outer * kept) * row);
    return LOWER_OK;
}

/* ---------------------------------------------------- NonMaxSuppression */

/* A box as NonMaxSuppression compares it: corners x0 <= x1, y0 <= y1 (from
 * either diagonal, or from the center and size) and area, in fp32. */
typedef struct nms_box {
    float x0, x1, y0, y1, area;
    bool nan; /* a coordinate is NaN: compared by the fminf / fmaxf rules */
} nms_box;

static void nms_box_of(const float *a, bool center, nms_box *o) {
    if (center) {
        o->x0 = a[0] - a[2] / 2, o->x1 = a[0] + a[2] / 2, o->y0 = a[1] - a[3] / 2, o->y1 = a[1] + a[3] / 2;
    } else { /* [y1, x1, y2, x2], either diagonal */
        o->x0 = fminf(a[1], a[3]), o->x1 = fmaxf(a[1], a[3]), o->y0 = fminf(a[0], a[2]),
        o->y1 = fmaxf(a[0], a[2]);
    }
    o->area = (o->x1 - o->x0) * (o->y1 - o->y0);
    o->nan = isnan(a[0]) || isnan(a[1]) || isnan(a[2]) || isnan(a[3]);
}

/* max / min without NaN: the same values as fmaxf / fminf (a zero's sign
 * aside, which no result below depends on), without a library call */
static inline float nms_max(float a, float b) { return a > b ? a : b; }
static inline float nms_min(float a, float b) { return a < b ? a : b; }

/* Do boxes a and b overlap by more than thr (intersection over union)?
 * Degenerate boxes never suppress. */
static bool nms_suppress(const nms_box *a, const nms_box *b, float thr) {
    float ix0, ix1, iy0, iy1;
    if (a->nan || b->nan) {
        ix0 = fmaxf(a->x0, b->x0), ix1 = fminf(a->x1, b->x1), iy0 = fmaxf(a->y0, b->y0),
        iy1 = fminf(a->y1, b->y1);
    } else {
        ix0 = nms_max(a->x0, b->x0), ix1 = nms_min(a->x1, b->x1), iy0 = nms_max(a->y0, b->y0),
        iy1 = nms_min(a->y1, b->y1);
    }
    if (ix1 <= ix0 || iy1 <= iy0) return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float uni = a->area + b->area - inter;
    if (inter <= 0 || a->area <= 0 || b->area <= 0 || uni <= 0) return false;
    return inter / uni > thr;
}

typedef struct nms_cand {
    float score;
    int64_t box;
} nms_cand;

static int nms_cmp(const void *pa, const void *pb) { /* highest score first, then lowest index */
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->box < b->box ? -1 : a->box > b->box;
}

static lower_status lower_nms(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *bv = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    const lower_value *sv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    if (!bv || !sv) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "NonMaxSuppression: an input is unknown");
    if (bv->rank != 3 || sv->rank != 3 || bv->shape[2] != 4 || bv->shape[0] != sv->shape[0] ||
        bv->shape[1] != sv->shape[2])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, bv->name,
                         "NonMaxSuppression: boxes must be [B, N, 4] and scores [B, C, N]");
    if (bv->onnx_dtype != CTOSA_ONNX_FLOAT || sv->onnx_dtype != CTOSA_ONNX_FLOAT)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, bv->name,
                         "NonMaxSuppression: fp32 boxes and scores only");
    const double *box, *score, *iou = NULL, *sth = NULL;
    const int64_t *mo = NULL; /* exporters pass INT64_MAX for no limit */
    bool known = lw_const_f64(c, 0, &box) >= 0 && lw_const_f64(c, 1, &score) >= 0;
    int64_t n_mo = lw_has_input(c, 2) ? lw_const_i64(c, 2, &mo) : 0;
    int64_t n_iou = lw_has_input(c, 3) ? lw_const_f64(c, 3, &iou) : 0;
    int64_t n_sth = lw_has_input(c, 4) ? lw_const_f64(c, 4, &sth) : 0;
    if (!known || n_mo < 0 || n_iou < 0 || n_sth < 0)
        return lw_reject(c, LOWER_DYNAMIC_SHAPE, nd->inputs[0],
                         "NonMaxSuppression: the number of boxes kept depends on the input's values");
    const int64_t B = bv->shape[0], N = bv->shape[1], C = sv->shape[1];
    const bool center = lw_attr_int(c, "center_point_box", 0) != 0;
    const int64_t max_out = n_mo > 0 && mo[0] > 0 ? mo[0] : 0;
    const float thr = n_iou > 0 ? (float)iou[0] : 0.0f, sthr = n_sth > 0 ? (float)sth[0] : 0.0f;
    if (B * C * N > (1 << 24))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "NonMaxSuppression: too many boxes");
    arena *a = lw_arena(c);
    nms_box *fb = arena_alloc(a, (size_t)(B * N + 1) * sizeof *fb);
    nms_cand *cand = arena_alloc(a, (size_t)(N + 1) * sizeof *cand);
    int64_t *kept = arena_alloc(a, (size_t)(N + 1) * sizeof *kept);
    int64_t *out = arena_alloc(a, (size_t)(B * C * (max_out < N ? max_out : N) * 3 + 1) * sizeof *out);
    /* (B * C * N is at most 2^24 here, so the product above fits) */
    if (!fb || !cand || !kept || !out) return lw_failed(c);
    for (int64_t i = 0; i < B * N; i++) {
        float f[4] = {(float)box[i * 4], (float)box[i * 4 + 1], (float)box[i * 4 + 2], (float)box[i * 4 + 3]};
        nms_box_of(f, center, &fb[i]);
    }
    int64_t n_sel = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < C; k++) {
            int64_t nc = 0;
            for (int64_t i = 0; i < N; i++) {
                float sc = (float)score[(b * C + k) * N + i];
                if (n_sth <= 0 || sc > sthr) cand[nc++] = (nms_cand){sc, i};
            }
            qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
            int64_t nk = 0;
            for (int64_t i = 0; i < nc && nk < max_out; i++) {
                const nms_box *bi = &fb[b * N + cand[i].box];
                bool keep = true;
                for (int64_t j = 0; j < nk && keep; j++) keep = !nms_suppress(bi, &fb[b * N + kept[j]], thr);
                if (!keep) continue;
                kept[nk++] = cand[i].box;
                out[n_sel * 3] = b, out[n_sel * 3 + 1] = k, out[n_sel * 3 + 2] = cand[i].box;
                n_sel++;
            }
        }
    int64_t shp[2] = {n_sel, 3};
    lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 2, shp, out, (uint64_t)n_sel * 3 * sizeof *out);
    return LOWER_OK;
}

/* ------------------------------------------------------------- RoiAlign */

/* One sample of a bin: four positions and their bilinear weights (all zero
 * outside the map). */
typedef struct roi_sample {
    int64_t pos[4];
    float w[4];
} roi_sample;

static void roi_sample_at(float y, float x, int64_t H, int64_t W, roi_sample *s) {
    memset(s, 0, sizeof *s);
    if (y < -1.0f || y > (float)H || x < -1.0f || x > (float)W) return;
    if (y < 0) y = 0;
    if (x < 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= H - 1) y1 = y0 = H - 1, y = (float)y0;
    else y1 = y0 + 1;
    if (x0 >= W - 1) x1 = x0 = W - 1, x = (float)x0;
    else x1 = x0 + 1;
    float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    s->pos[0] = y0 * W + x0, s->pos[1] = y0 * W + x1, s->pos[2] = y1 * W + x0, s->pos[3] = y1 * W + x1;
    s->w[0] = hy * hx, s->w[1] = hy * lx, s->w[2] = ly * hx, s->w[3] = ly * lx;
}

static lower_status lower_roialign(lower_ctx *c) {
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *xv = lw_has_input(c, 0) ? lw_in(c, 0) : NULL;
    const lower_value *rv = lw_has_input(c, 1) ? lw_in(c, 1) : NULL;
    const lower_value *bv = lw_has_input(c, 2) ? lw_in(c, 2) : NULL;
    if (!xv || !rv || !bv) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "RoiAlign: an input is unknown");
    if (xv->rank != 4 || rv->rank != 2 || rv->shape[1] != 4 || bv->rank != 1 || bv->shape[0] != rv->shape[0])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, xv->name,
                         "RoiAlign: X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
    if (xv->onnx_dtype != CTOSA_ONNX_FLOAT || rv->onnx_dtype != CTOSA_ONNX_FLOAT)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, xv->name, "RoiAlign: fp32 X and rois only");
    const double *xd, *rd;
    const int64_t *bd;
    if (lw_const_f64(c, 0, &xd) < 0 || lw_const_f64(c, 1, &rd) < 0 || lw_const_i64(c, 2, &bd) < 0)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->inputs[0],
                         "RoiAlign: computed only when its inputs are constants (TOSA has no gather "
                         "at positions computed from box coordinates)");
    const char *mode = lw_attr_str(c, "mode", "avg");
    const char *ctm = lw_attr_str(c, "coordinate_transformation_mode",
                                  lw_opset(c) >= 16 ? "half_pixel" : "output_half_pixel");
    bool avg = strcmp(mode, "avg") == 0, half = strcmp(ctm, "half_pixel") == 0;
    if ((!avg && strcmp(mode, "max") != 0) || (!half && strcmp(ctm, "output_half_pixel") != 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "RoiAlign: mode '%s', coordinate_transformation_mode '%s'", mode, ctm);
    const int64_t PH = lw_attr_int(c, "output_height", 1), PW = lw_attr_int(c, "output_width", 1);
    const int64_t sr = lw_attr_int(c, "sampling_ratio", 0);
    const float scale = lw_attr_float(c, "spatial_scale", 1.0f);
    const int64_t N = xv->shape[0], C = xv->shape[1], H = xv->shape[2], W = xv->shape[3], R = rv->shape[0];
    if (PH < 1 || PW < 1 || sr < 0 || PH > 4096 || PW > 4096)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "RoiAlign: output %lldx%lld, sampling_ratio %lld",
                         (long long)PH, (long long)PW, (long long)sr);
    if (R * C * PH * PW > (1 << 26) || N * C * H * W > (1 << 26))
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "RoiAlign: too large to compute");
    arena *a = lw_arena(c);
    float *x = arena_alloc(a, (size_t)(N * C * H * W + 1) * sizeof *x);
    float *y = arena_alloc(a, (size_t)(R * C * PH * PW + 1) * sizeof *y);
    if (!x || !y) return lw_failed(c);
    for (int64_t i = 0; i < N * C * H * W; i++) x[i] = (float)xd[i];
    for (int64_t r = 0; r < R; r++) {
        if (bd[r] < 0 || bd[r] >= N)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, nd->inputs[2], "RoiAlign: batch index %lld of %lld",
                             (long long)bd[r], (long long)N);
        const float off = half ? 0.5f : 0.0f;
        float x0 = (float)rd[4 * r] * scale - off, y0 = (float)rd[4 * r + 1] * scale - off;
        float x1 = (float)rd[4 * r + 2] * scale - off, y1 = (float)rd[4 * r + 3] * scale - off;
        float rw = x1 - x0, rh = y1 - y0;
        if (!half) { /* malformed boxes count as 1x1 */
            rw = fmaxf(rw, 1.0f);
            rh = fmaxf(rh, 1.0f);
        }
        float bh = rh / (float)PH, bw = rw / (float)PW;
        int64_t gh = sr > 0 ? sr : (int64_t)ceilf(rh / (float)PH),
                gw = sr > 0 ? sr : (int64_t)ceilf(rw / (float)PW);
        if (gh < 0) gh = 0;
        if (gw < 0) gw = 0;
        if (gh * gw > 4096)
            return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "RoiAlign: %lld samples per bin",
                             (long long)(gh * gw));
        float count = (float)(gh * gw > 1 ? gh * gw : 1);
        roi_sample *smp = arena_alloc(a, (size_t)(PH * PW * gh * gw + 1) * sizeof *smp);
        if (!smp) return lw_failed(c);
        for (int64_t ph = 0, k = 0; ph < PH; ph++)
            for (int64_t pw = 0; pw < PW; pw++)
                for (int64_t iy = 0; iy < gh; iy++) {
                    float yy = y0 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                    for (int64_t ix = 0; ix < gw; ix++, k++) {
                        float xx = x0 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                        roi_sample_at(yy, xx, H, W, &smp[k]);
                    }
                }
        for (int64_t ch = 0; ch < C; ch++) {
            const float *map = x + (bd[r] * C + ch) * H * W;
            float *out = y + (r * C + ch) * PH * PW;
            for (int64_t b = 0, k = 0; b < PH * PW; b++) {
                float v = 0;
                for (int64_t s = 0; s < gh * gw; s++, k++) {
                    const roi_sample *q = &smp[k];
                    if (avg) {
                        v += q->w[0] * map[q->pos[0]] + q->w[1] * map[q->pos[1]] + q->w[2] * map[q->pos[2]] +
                             q->w[3] * map[q->pos[3]];
                    } else { /* ONNX's max mode: the largest weighted corner */
                        float m = fmaxf(fmaxf(q->w[0] * map[q->pos[0]], q->w[1] * map[q->pos[1]]),
                                        fmaxf(q->w[2] * map[q->pos[2]], q->w[3] * map[q->pos[3]]));
                        v = s ? fmaxf(v, m) : m;
                    }
                }
                out[b] = avg ? v / count : v;
            }
        }
    }
    int64_t shp[4] = {R, C, PH, PW};
    lw_set_output_const(c, 0, CTOSA_ONNX_FLOAT, 4, shp, y, (uint64_t)(R * C * PH * PW) * sizeof *y);
    return LOWER_OK;
}

const lower_entry lower_table_detect[] = {
    {"NonZero", 9, 0, lower_nonzero},
    {"Compress", 9, 0, lower_compress},
    {"NonMaxSuppression", 10, 0, lower_nms},
    {"RoiAlign", 10, 0, lower_roialign},
    {0},
};
