/*
 * lower_dm.h - helpers shared by the data-movement, gather/scatter,
 * reduction and misc lowering families (lower_layout.c, lower_gather.c,
 * lower_reduce.c, lower_misc.c). Implemented in lower_layout.c.
 *
 * Every helper emits into the current block through the lw_* contract of
 * lower.h and returns the new TOSA tensor name, or NULL when emission
 * failed (the caller then rejects with internal_error via dm_fail()).
 */
#ifndef CTOSA_LOWER_DM_H
#define CTOSA_LOWER_DM_H

#include "lower/lower.h"

/* Checks that input i is present, has a static shape and a TOSA dtype.
 * On failure it has already called lw_reject() and returns NULL. */
const lower_value *dm_data_input(lower_ctx *c, uint32_t i, lower_status *st);
/* Normalises a possibly negative axis against rank; false (after
 * rejecting with unsupported_attribute) when out of range. */
bool dm_axis(lower_ctx *c, int64_t axis, uint32_t rank, const char *what, int32_t *out,
             lower_status *st);
/* Rejects with internal_error (emission failed). */
lower_status dm_fail(lower_ctx *c);
/* Element count of a static shape. */
int64_t dm_count(uint32_t rank, const int64_t *shape);
/* Shape of an emitted tensor as int64 (returns rank). */
uint32_t dm_shape_of(lower_ctx *c, const char *name, int64_t *shape);

const char *dm_slice(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                     const int64_t *in_shape, const int64_t *start, const int64_t *size);
/* Slices [begin, begin+len) along one axis. */
const char *dm_slice_axis(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                          const int64_t *in_shape, int32_t axis, int64_t begin, int64_t len);
const char *dm_pad(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                   const int64_t *in_shape, const int64_t *lo, const int64_t *hi, double value);
const char *dm_reverse(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                       const int64_t *shape, int32_t axis);
const char *dm_concat(lower_ctx *c, uint32_t n, const char *const *xs, ctosa_dtype t,
                      uint32_t rank, int32_t axis);
const char *dm_tile(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                    const int64_t *in_shape, const int64_t *mult);
/* MUL with its shift input (0). */
const char *dm_mul(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, uint32_t rank,
                   const int64_t *shape);
/* An INT32 constant of the given shape. */
const char *dm_const_i32(lower_ctx *c, uint32_t rank, const int64_t *shape, const int32_t *v);
/* Writes value v as one element of ONNX dtype dt into dst (natural width);
 * returns the element size or 0 for dtypes it does not encode. */
size_t dm_onnx_encode(int32_t dt, double v, void *dst);
size_t dm_onnx_elem_size(int32_t dt);
bool dm_onnx_is_float(int32_t dt);
const char *dm_dtype_name(int32_t dt); /* never NULL */

#endif
