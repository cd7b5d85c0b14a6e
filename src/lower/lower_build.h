/*
 * lower_build.h - the emission builder every lowering uses. Implemented in
 * core/lower_build.c (tensor names), core/lower_build_value.c (values) and
 * core/lower_build_conv.c (convolution operators, grouped ones split).
 *
 * Two forms of the same builder, over the primitives of lower.h (lw_op,
 * lw_tensor, lw_const, lw_reshape, ...):
 *
 *   - tensor names: each helper takes TOSA tensor names with their dtype and
 *     static shape and returns the new tensor's name;
 *   - values (lw_v): a name with its dtype and shape, for elementwise
 *     formulas that broadcast, e.g.
 *
 *         lw_v x;  LW_V_IN(c, 0, &x);
 *         lw_v y = lw_v_bin(c, CTOSA_OP_MUL, x, lw_v_k(c, x, 0.5));
 *         return lw_v_out(c, 0, y);
 *
 * One propagation rule for both: a helper that cannot emit returns NULL (a
 * value with a NULL name), and every helper given a NULL operand returns
 * NULL, so a chain of calls needs one check at its end. LW_TRY(x) returns
 * from the lowering when x is NULL: with the reason already given when the
 * lowering had rejected (lw_reject keeps the first reason), otherwise with
 * internal_error (lw_failed).
 */
#ifndef CTOSA_LOWER_BUILD_H
#define CTOSA_LOWER_BUILD_H

#include <string.h>

#include "lower/lower.h"

lower_status lw_failed(lower_ctx *c);
#define LW_TRY(x)                      \
    do {                               \
        if (!(x)) return lw_failed(c); \
    } while (0)

/* Checks that input i is present, has a static shape and a TOSA dtype;
 * on failure it has already rejected (*st says how) and returns NULL. */
const lower_value *lw_data_input(lower_ctx *c, uint32_t i, lower_status *st);
/* Normalises a possibly negative axis; rejects (unsupported_attribute,
 * naming `what`) when it is outside the rank. */
bool lw_axis(lower_ctx *c, int64_t axis, uint32_t rank, const char *what, int32_t *out);
/* Element count of a static shape; saturates at INT64_MAX, 0 when a
 * dimension is 0. */
int64_t lw_count(uint32_t rank, const int64_t *shape);
/* CONCAT along axis; the output shape is read from the operands. */
const char *lw_concat(lower_ctx *c, uint32_t n, const char *const *xs, ctosa_dtype t, uint32_t rank,
                      int32_t axis);

/* ------------------------------------------------------------- tensor names */

/* Accumulator type of a convolution / pooling with input dtype t. */
ctosa_dtype lw_acc_type(ctosa_dtype t);

/* Elementwise helpers: shapes must already be broadcast-compatible with
 * equal ranks; `shape` is the output shape. MUL gets its zero shift. */
const char *lw_mul(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
const char *lw_add(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
const char *lw_sub(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
/* x * v (scalar broadcast); returns x when v == 1. */
const char *lw_mul_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                          double v);
const char *lw_add_scalar(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                          double v);
/* REDUCE_<kind> over one axis (kept as size 1); *out_shape receives the shape. */
const char *lw_reduce(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t, uint32_t rank,
                      const int64_t *shape, int32_t axis, int64_t *out_shape);
/* Sums over every axis set in mask (bit i = axis i), then scales by 1/count
 * when mean is true. out_shape receives the kept-dims shape. */
const char *lw_reduce_axes(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype t, uint32_t rank,
                           const int64_t *shape, uint32_t mask, bool mean, int64_t *out_shape);
const char *lw_slice(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                     const int64_t *start, const int64_t *size);
/* PAD with before/after pairs per dimension (pads[2*d], pads[2*d+1]) and a
 * constant value. */
const char *lw_pad(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                   const int64_t *pads, double value);
/* NCHW-style (channels at 1) <-> channels-last for rank 4 / 5. */
const char *lw_to_last(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape);
const char *lw_to_first(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *last_shape);
/* Shape of a value moved to channels-last / from channels-last. */
void lw_shape_last(uint32_t rank, const int64_t *shape, int64_t *out);
void lw_shape_first(uint32_t rank, const int64_t *last_shape, int64_t *out);
/* The input as a TOSA tensor name, or a reshape of it to `shape` (same
 * elements) when the shapes differ. */
const char *lw_reshape_if(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *from,
                          uint32_t new_rank, const int64_t *to);
/* Per-channel vector (input i, n elements, or broadcastable) reshaped to
 * [1, n, 1, ...] of rank `rank` for broadcasting against channels-first
 * data; NULL after rejecting when it does not fit. */
const char *lw_channel_vec(lower_ctx *c, uint32_t i, int64_t n, ctosa_dtype t, uint32_t rank,
                           lower_status *st);

/* Normalisation core: returns (x - mean) * rsqrt(var + eps) over the axes
 * in mask, in dtype t; *mean_out / *inv_out (kept-dims shape) when asked. */
const char *lw_normalize(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                         uint32_t mask, double eps, const char **mean_out, const char **inv_out,
                         int64_t *red_shape);

/* Spatial parameters of one convolution / pooling dimension. */
typedef struct lw_dim {
    int64_t in, k, s, d, pb, pe, out;
    int64_t crop; /* input elements to drop at the end so the TOSA division is exact */
    int64_t pe0;  /* end padding as declared (after auto_pad), before adjustment */
} lw_dim;

/* Reads kernel_shape / strides / dilations / pads for nsp spatial dims of
 * the channels-first input shape `in`; k[] is the weight's kernel (NULL for
 * pooling: kernel_shape then gives it). */
lower_status lw_read_window(lower_ctx *c, uint32_t nsp, const int64_t *in, const int64_t *k, lw_dim *dm);
/* Applies auto_pad, computes the output size (ceil_mode for pooling) and
 * makes the TOSA output-size division exact by adjusting the end padding
 * or cropping the input end. */
lower_status lw_window(lower_ctx *c, uint32_t nsp, lw_dim *dm, bool ceil_mode);

/* ------------------------------------------------------------ convolution */

/* CONV2D / CONV3D / DEPTHWISE_CONV2D attributes of tsp spatial windows
 * (pad, stride, dilation) with accumulator acc; the arrays live in *b,
 * which must outlive the emission. */
typedef struct lw_conv_attr {
    int32_t pad[6], stride[3], dil[3];
    ctosa_attr a;
} lw_conv_attr;
const ctosa_attr *lw_conv_attr_of(lw_conv_attr *b, uint32_t tsp, const lw_dim *dm, ctosa_dtype acc);

/* One convolution operator on channels-last data (CONV2D, CONV3D,
 * DEPTHWISE_CONV2D, TRANSPOSE_CONV2D), or, for group > 1, one per group on
 * its slice of the input channels with the results concatenated along the
 * channels (TOSA has no grouped convolution). operands() gives group g's
 * weight and bias constants (output channels [g·M/group, (g+1)·M/group));
 * part(), when set, maps group g's result before the CONCAT, e.g. a
 * RESCALE of an int48 accumulator, which CONCAT does not take. Returns the
 * channels-last result (dtype part_t with part, acc_t otherwise). */
typedef struct lw_conv {
    ctosa_op_kind kind;
    const ctosa_attr *attr;
    const char *x; /* channels-last input */
    ctosa_dtype t;
    uint32_t rank;            /* 4 or 5 */
    const int64_t *in_shape;  /* channels-last */
    const int64_t *out_shape; /* channels-last, all output channels */
    ctosa_dtype acc_t;        /* the operator's output dtype */
    const char *izp, *wzp;    /* zero-point operands */
    int64_t group;
    bool (*operands)(lower_ctx *c, void *arg, int64_t g, const char **w, const char **b);
    const char *(*part)(lower_ctx *c, void *arg, int64_t g, const char *y, const int64_t *shape);
    ctosa_dtype part_t;
    void *arg;
} lw_conv;
const char *lw_conv_emit(lower_ctx *c, const lw_conv *cv);
/* A transposed convolution's input as a stride-1 convolution reads it:
 * channels-last x (rank 4 or 5, shape ls, updated) with s[i] - 1 copies of
 * `fill` (0, or the input zero point of an integer carrier) between
 * neighbours along spatial axis i. */
const char *lw_stretch(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, int64_t *ls,
                       const int64_t *s, double fill);

/* A constant weight being re-laid out at compile time. When the ONNX dtype
 * has the TOSA encoding already (float, float16, bfloat16), elements are
 * copied as raw bytes (no float64 copy of large weights); otherwise they go
 * through doubles. */
typedef struct lw_wsrc {
    const uint8_t *raw; /* raw elements, esz bytes each (unaligned) */
    const double *f64;  /* or converted values */
    size_t esz;         /* bytes per element in the relaid buffer */
    ctosa_dtype t;      /* TOSA dtype of the constant */
    int64_t n;          /* elements */
} lw_wsrc;

/* False (nothing rejected) when input i is not a known constant. */
bool lw_wsrc_init(lower_ctx *c, uint32_t i, lw_wsrc *w);
/* A zeroed buffer for n elements in the source's working encoding. */
void *lw_wbuf(lower_ctx *c, const lw_wsrc *w, int64_t n);
static inline void lw_wcopy(const lw_wsrc *w, void *dst, int64_t di, int64_t si) {
    /* fixed-size memcpy compiles to one load/store (data may be unaligned) */
    if (w->raw && w->esz == 4) memcpy((uint8_t *)dst + (size_t)di * 4, w->raw + (size_t)si * 4, 4);
    else if (w->raw) memcpy((uint8_t *)dst + (size_t)di * 2, w->raw + (size_t)si * 2, 2);
    else ((double *)dst)[di] = w->f64[si];
}
const char *lw_wconst(lower_ctx *c, const lw_wsrc *w, uint32_t rank, const int64_t *shape, const void *buf);
/* The raw weight elements [first, first + prod(src_shape)) permuted by perm
 * as a streamed constant of shape out_shape (no copy is made; see
 * ot_set_permuted) when they are large and raw; NULL otherwise (nothing
 * emitted, nothing rejected: the caller materialises it). */
const char *lw_wconst_stream(lower_ctx *c, const lw_wsrc *w, uint32_t rank, const int64_t *out_shape,
                             int64_t first, uint32_t src_rank, const int64_t *src_shape, const int32_t *perm);

/* Rejects with internal_error (emission failed). */
/* Shape of an emitted tensor as int64 (returns rank). */
uint32_t lw_shape_of(lower_ctx *c, const char *name, int64_t *shape);

/* Slices [begin, begin+len) along one axis. */
const char *lw_slice_axis(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                          int32_t axis, int64_t begin, int64_t len);
const char *lw_reverse(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                       int32_t axis);
const char *lw_tile(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                    const int64_t *mult);
/* An INT32 constant of the given shape. */
const char *lw_const_i32(lower_ctx *c, uint32_t rank, const int64_t *shape, const int32_t *v);
/* Writes value v as one element of ONNX dtype dt into dst (natural width);
 * returns the element size or 0 for dtypes it does not encode. */
size_t lw_onnx_encode(int32_t dt, double v, void *dst);
size_t lw_onnx_elem_size(int32_t dt);
bool lw_onnx_is_float(int32_t dt);
const char *lw_onnx_dtype_name(int32_t dt); /* never NULL */

/* ------------------------------------------------------------------- values */
typedef struct lw_v {
    const char *n; /* TOSA tensor name; NULL after a failed emission */
    ctosa_dtype t;
    uint32_t r;
    int64_t s[LOWER_MAX_RANK];
    /* 1 + node input index when this value is that constant input as read
     * (lw_v_rank then re-emits the constant at the new rank instead of a
     * RESHAPE); 0 for everything computed. */
    uint32_t cin;
} lw_v;

/* Reads input i into *v (static shape and a TOSA dtype required); on
 * failure the node is rejected and the calling lowering must return. */
#define LW_V_IN(c, i, v)                           \
    do {                                           \
        lower_status st_ = lw_v_in((c), (i), (v)); \
        if (st_ != LOWER_OK) return st_;           \
    } while (0)

lower_status lw_v_in(lower_ctx *c, uint32_t i, lw_v *v);
/* TOSA dtype for an ONNX dtype; rejects unsupported_dtype /
 * int64_not_enabled naming `what` when there is none. */
lower_status lw_v_dtype(lower_ctx *c, int32_t onnx_dtype, const char *what, ctosa_dtype *out);
/* Broadcast-compatibility of n values (rejects with unsupported_attribute
 * naming the shapes when incompatible). */
lower_status lw_v_bcast(lower_ctx *c, uint32_t n, const lw_v *v);
/* Binds output i; internal_error when v failed to emit. */
lower_status lw_v_out(lower_ctx *c, uint32_t i, lw_v v);

bool lw_v_is_int(ctosa_dtype t); /* INT8/16/32/64 */

/* A constant of dtype `like.t` (or t) broadcastable against `like`. */
/* The failed value (NULL name): what a helper returns when it cannot emit. */
lw_v lw_v_none(void);
lw_v lw_v_k(lower_ctx *c, lw_v like, double v);
lw_v lw_v_kt(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v);
/* RESHAPE to `rank` with leading 1s (no-op when equal); a constant input
 * is re-emitted as a CONST of the new shape instead. */
lw_v lw_v_rank(lower_ctx *c, lw_v a, uint32_t rank);
/* Binary op with broadcasting. Output dtype: BOOL for EQUAL / GREATER /
 * GREATER_EQUAL / LOGICAL_*, else a.t. MUL gets its shift input, MAXIMUM /
 * MINIMUM nan_mode PROPAGATE. */
lw_v lw_v_bin(lower_ctx *c, ctosa_op_kind k, lw_v a, lw_v b);
/* Unary op (NEGATE gets its zero points). */
lw_v lw_v_un(lower_ctx *c, ctosa_op_kind k, lw_v a);
lw_v lw_v_cast(lower_ctx *c, lw_v a, ctosa_dtype t); /* no-op when same dtype */
lw_v lw_v_select(lower_ctx *c, lw_v cond, lw_v a, lw_v b);
lw_v lw_v_identity(lower_ctx *c, lw_v a);
/* min(max(a, lo), hi): CLAMP for float / int8 / int16, MAXIMUM+MINIMUM
 * for int32 / int64 (CLAMP has no such rows). lo/hi are clipped to the
 * dtype's range; infinite bounds are kept for floats. */
lw_v lw_v_clamp(lower_ctx *c, lw_v a, double lo, double hi);

/* Shorthands. */
lw_v lw_v_add(lower_ctx *c, lw_v a, lw_v b);
lw_v lw_v_sub(lower_ctx *c, lw_v a, lw_v b);
lw_v lw_v_mul(lower_ctx *c, lw_v a, lw_v b);
lw_v lw_v_addk(lower_ctx *c, lw_v a, double v);
lw_v lw_v_mulk(lower_ctx *c, lw_v a, double v); /* returns a when v == 1 */
/* a / b for floats: a * RECIPROCAL(b). */
lw_v lw_v_fdiv(lower_ctx *c, lw_v a, lw_v b);

/* Integer ops TOSA only has for int32: INT8 / INT16 are sign-extended to
 * INT32 first (lw_v_widen) and the result CAST back, which wraps exactly as
 * ONNX / numpy integer arithmetic does (lw_v_narrow). */
lw_v lw_v_widen(lower_ctx *c, lw_v a);
lw_v lw_v_narrow(lower_ctx *c, lw_v a, ctosa_dtype t);

#endif /* CTOSA_LOWER_BUILD_H */
