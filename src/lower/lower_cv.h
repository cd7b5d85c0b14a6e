/*
 * lower_cv.h - helpers shared by the convolution, pooling, matmul,
 * normalisation, softmax and resize lowering families (lower_conv.c,
 * lower_pool.c, lower_matmul.c, lower_norm.c, lower_softmax.c,
 * lower_resize.c). Implemented in lower_conv.c.
 *
 * Every emitting helper returns the new TOSA tensor name, or NULL when
 * emission failed; callers then return cv_fail(c) (internal_error).
 */
#ifndef CTOSA_LOWER_CV_H
#define CTOSA_LOWER_CV_H

#include <string.h>

#include "lower/lower.h"

/* Returns from the calling lowering with internal_error when x is NULL. */
#define CV_TRY(x)                                   \
    do {                                            \
        if (!(x)) return cv_fail(c);                \
    } while (0)

lower_status cv_fail(lower_ctx *c);

/* Input i must be present, have a static shape and a TOSA dtype; on failure
 * it has already rejected (*st = LOWER_REJECT) and returns NULL. */
const lower_value *cv_data_input(lower_ctx *c, uint32_t i, lower_status *st);
/* Normalises axis against rank; rejects (unsupported_attribute) when out of range. */
bool cv_axis(lower_ctx *c, int64_t axis, uint32_t rank, const char *what, int32_t *out);
int64_t cv_count(uint32_t rank, const int64_t *shape);
/* Accumulator type of a convolution / pooling with input dtype t. */
ctosa_dtype cv_acc_type(ctosa_dtype t);

/* Elementwise helpers: shapes must already be broadcast-compatible with
 * equal ranks; `shape` is the output shape. MUL gets its zero shift. */
const char *cv_mul(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
const char *cv_add(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
const char *cv_sub(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
/* x * v (scalar broadcast); returns x when v == 1. */
const char *cv_mul_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *shape, double v);
const char *cv_add_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *shape, double v);
/* REDUCE_<kind> over one axis (kept as size 1); *out_shape receives the shape. */
const char *cv_reduce(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t,
                      uint32_t rank, const int64_t *shape, int32_t axis, int64_t *out_shape);
/* Sums over every axis set in mask (bit i = axis i), then scales by 1/count
 * when mean is true. out_shape receives the kept-dims shape. */
const char *cv_reduce_axes(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t,
                           uint32_t rank, const int64_t *shape, uint32_t mask, bool mean,
                           int64_t *out_shape);
const char *cv_slice(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                     const int64_t *in_shape, const int64_t *start, const int64_t *size);
/* PAD with before/after pairs per dimension (pads[2*d], pads[2*d+1]) and a
 * constant value. */
const char *cv_pad(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                   const int64_t *in_shape, const int64_t *pads, double value);
const char *cv_concat(lower_ctx *c, uint32_t n, const char *const *xs, ctosa_dtype t, uint32_t rank,
                      const int64_t *out_shape, int32_t axis);
/* NCHW-style (channels at 1) <-> channels-last for rank 4 / 5. */
const char *cv_to_last(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                       const int64_t *shape);
const char *cv_to_first(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                        const int64_t *last_shape);
/* Shape of a value moved to channels-last / from channels-last. */
void cv_shape_last(uint32_t rank, const int64_t *shape, int64_t *out);
void cv_shape_first(uint32_t rank, const int64_t *last_shape, int64_t *out);
/* The input as a TOSA tensor name, or a reshape of it to `shape` (same
 * elements) when the shapes differ. */
const char *cv_reshape_if(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *from, uint32_t new_rank, const int64_t *to);
/* Per-channel vector (input i, n elements, or broadcastable) reshaped to
 * [1, n, 1, ...] of rank `rank` for broadcasting against channels-first
 * data; NULL after rejecting when it does not fit. */
const char *cv_channel_vec(lower_ctx *c, uint32_t i, int64_t n, ctosa_dtype t, uint32_t rank,
                           lower_status *st);

/* Normalisation core: returns (x - mean) * rsqrt(var + eps) over the axes
 * in mask, in dtype t; *mean_out / *inv_out (kept-dims shape) when asked. */
const char *cv_normalize(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                         const int64_t *shape, uint32_t mask, double eps, const char **mean_out,
                         const char **inv_out, int64_t *red_shape);

/* Spatial parameters of one convolution / pooling dimension. */
typedef struct cv_dim {
    int64_t in, k, s, d, pb, pe, out;
    int64_t crop; /* input elements to drop at the end so the TOSA division is exact */
    int64_t pe0;  /* end padding as declared (after auto_pad), before adjustment */
} cv_dim;

/* Reads kernel_shape / strides / dilations / pads for nsp spatial dims of
 * the channels-first input shape `in`; k[] is the weight's kernel (NULL for
 * pooling: kernel_shape then gives it). */
lower_status cv_read_window(lower_ctx *c, uint32_t nsp, const int64_t *in, const int64_t *k,
                            cv_dim *dm);
/* Applies auto_pad, computes the output size (ceil_mode for pooling) and
 * makes the TOSA output-size division exact by adjusting the end padding
 * or cropping the input end. */
lower_status cv_window(lower_ctx *c, uint32_t nsp, cv_dim *dm, bool ceil_mode);

/* A constant weight being re-laid out at compile time. When the ONNX dtype
 * has the TOSA encoding already (float, float16, bfloat16), elements are
 * copied as raw bytes (no float64 copy of large weights); otherwise they go
 * through doubles. */
typedef struct cv_wsrc {
    const uint8_t *raw; /* raw elements, esz bytes each (unaligned) */
    const double *f64;  /* or converted values */
    size_t esz;         /* bytes per element in the relaid buffer */
    ctosa_dtype t;      /* TOSA dtype of the constant */
    int64_t n;          /* elements */
} cv_wsrc;

/* False (nothing rejected) when input i is not a known constant. */
bool cv_wsrc_init(lower_ctx *c, uint32_t i, cv_wsrc *w);
/* A zeroed buffer for n elements in the source's working encoding. */
void *cv_wbuf(lower_ctx *c, const cv_wsrc *w, int64_t n);
static inline void cv_wcopy(const cv_wsrc *w, void *dst, int64_t di, int64_t si) {
    /* fixed-size memcpy compiles to one load/store (data may be unaligned) */
    if (w->raw && w->esz == 4) memcpy((uint8_t *)dst + (size_t)di * 4, w->raw + (size_t)si * 4, 4);
    else if (w->raw) memcpy((uint8_t *)dst + (size_t)di * 2, w->raw + (size_t)si * 2, 2);
    else ((double *)dst)[di] = w->f64[si];
}
const char *cv_wconst(lower_ctx *c, const cv_wsrc *w, uint32_t rank, const int64_t *shape,
                      const void *buf);
/* The raw weight elements [first, first + prod(src_shape)) permuted by perm
 * as a streamed constant of shape out_shape (no copy is made; see
 * ot_set_permuted) when they are large and raw; NULL otherwise (nothing
 * emitted, nothing rejected: the caller materialises it). */
const char *cv_wconst_stream(lower_ctx *c, const cv_wsrc *w, uint32_t rank, const int64_t *out_shape,
                             int64_t first, uint32_t src_rank, const int64_t *src_shape, const int32_t *perm);

#endif /* CTOSA_LOWER_CV_H */
