/* qdq_quantize.h - QuantizeLinear of a float tensor with the exact ONNX
 * rounding (qdq_quantize.c has the argument). */
#ifndef CTOSA_QDQ_QUANTIZE_H
#define CTOSA_QDQ_QUANTIZE_H

#include "lower/lower_build.h"

/* True when scale s (a float32 value) is in the range the exact
 * formulation is proven for. */
bool qdq_quantize_exact_ok(double s);

/* rne(fl32(x / scale)) clamped to [lo, hi] (the output range minus the zero
 * point, integers with |lo|, |hi| < 2^17), as INT32. x is a float tensor;
 * scale, lo and hi have n entries laid out along cs (rank x.r, every
 * dimension 1 except the axis). Every scale must pass qdq_quantize_exact_ok. */
lw_v qdq_quantize_exact(lower_ctx *c, lw_v x, int64_t n, const int64_t *cs, const double *scale,
                        const double *lo, const double *hi);

#endif /* CTOSA_QDQ_QUANTIZE_H */
