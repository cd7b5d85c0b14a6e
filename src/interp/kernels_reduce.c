/* kernels_reduce.c - REDUCE_ALL/ANY/MAX/MIN/PRODUCT/SUM along one axis.
 * The tensor is viewed as [outer, n, inner] around the axis; each output
 * element folds its n inputs in index order, as the spec loop does. */
#include <math.h>
#include <string.h>

#include "interp/int_math.h"
#include "util/floatfmt.h"

typedef enum { R_ALL, R_ANY, R_MAX, R_MIN, R_PROD, R_SUM } rkind;

typedef struct rarg {
    const itensor *in, *out;
    uint64_t outer, n, inner;
    rkind kind;
    bool ignore_nan;
    int err; /* 1 = overflow (atomic) */
    uint64_t err_at;
} rarg;

static void set_int(const itensor *t, uint64_t i, int64_t v) {
    switch (t->dtype) {
    case CTOSA_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case CTOSA_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case CTOSA_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case CTOSA_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    default: ((int64_t *)t->data)[i] = v; break;
    }
}

static void int_range(ctosa_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
        *lo = 0;
        *hi = 1;
        break;
    case CTOSA_DTYPE_INT8:
        *lo = INT8_MIN;
        *hi = INT8_MAX;
        break;
    case CTOSA_DTYPE_INT16:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case CTOSA_DTYPE_INT32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    default:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        break;
    }
}

/* Outputs [begin, end) of the flattened [outer, inner] output. */
static void reduce_fn(void *vp, size_t begin, size_t end) {
    rarg *R = vp;
    ctosa_dtype dt = R->in->dtype;
    bool fl = ctosa_dtype_is_float(dt);
    for (size_t q = begin; q < end; q++) {
        uint64_t o = q / R->inner, j = q % R->inner;
        uint64_t base = o * R->n * R->inner + j;
        if (fl) {
            const float *x = R->in->data;
            float acc;
            switch (R->kind) {
            case R_MAX: acc = R->ignore_nan ? NAN : -INFINITY; break;
            case R_MIN: acc = R->ignore_nan ? NAN : INFINITY; break;
            case R_PROD: acc = 1.0f; break;
            default: acc = 0.0f; break;
            }
            for (uint64_t i = 0; i < R->n; i++) {
                float v = x[base + i * R->inner];
                switch (R->kind) {
                case R_MAX:
                case R_MIN:
                    if (isnan(acc) || isnan(v)) acc = R->ignore_nan ? (isnan(acc) ? v : acc) : NAN;
                    else if (R->kind == R_MAX) acc = acc >= v ? acc : v;
                    else acc = acc < v ? acc : v;
                    break;
                case R_PROD: acc = ff_round_to(dt, acc * v); break;
                default:
                    /* acc_t is fp16 for fp16 (rounded every step), fp32
                     * for bf16 and fp32 */
                    acc = dt == CTOSA_DTYPE_FP16 ? ff_round_to(dt, acc + v) : acc + v;
                    break;
                }
            }
            ((float *)R->out->data)[q] = ff_round_to(R->out->dtype, acc);
        } else {
            int64_t lo, hi;
            int_range(dt, &lo, &hi);
            int64_t acc;
            switch (R->kind) {
            case R_ALL: acc = 1; break;
            case R_ANY: acc = 0; break;
            case R_MAX: acc = lo; break;
            case R_MIN: acc = hi; break;
            default: acc = 0; break;
            }
            for (uint64_t i = 0; i < R->n; i++) {
                int64_t v = interp_get_int(R->in, base + i * R->inner);
                switch (R->kind) {
                case R_ALL: acc = acc && v; break;
                case R_ANY: acc = acc || v; break;
                case R_MAX: acc = acc >= v ? acc : v; break;
                case R_MIN: acc = acc < v ? acc : v; break;
                default:
                    if (__builtin_add_overflow(acc, v, &acc) || acc < lo || acc > hi) {
                        int expected = 0;
                        if (__atomic_compare_exchange_n(&R->err, &expected, 1, false, __ATOMIC_RELAXED,
                                                        __ATOMIC_RELAXED))
                            R->err_at = q;
                        return;
                    }
                    break;
                }
            }
            set_int(R->out, q, acc);
        }
    }
}

/* fp32 SUM, MAX and MIN fast paths: the same expression per output and the
 * same index order as reduce_fn, so the results are bit-identical, but with
 * independent outputs side by side instead of one dependency chain at a
 * time. A job unit is RF_ROWS rows when the axis is innermost (inner = 1,
 * LayerNorm and softmax), else RF_LANES neighbouring outputs of one outer
 * index (a loop the compiler vectorises). MAX / MIN outputs whose inputs
 * hold a NaN are redone by reduce_fn, which has the NaN rules. */
#define RF_ROWS 8
#define RF_LANES 64
static inline IM_INLINE void freduce_impl(void *vp, size_t begin, size_t end) {
    rarg *R = vp;
    const float *x = R->in->data;
    float *y = R->out->data;
    const uint64_t n = R->n, inner = R->inner;
    const rkind kind = R->kind;
    for (size_t u = begin; u < end; u++) {
        if (inner == 1) {
            uint64_t r0 = (uint64_t)u * RF_ROWS, nr = R->outer - r0 < RF_ROWS ? R->outer - r0 : RF_ROWS;
            if (nr < RF_ROWS) {
                reduce_fn(R, (size_t)r0, (size_t)(r0 + nr));
                continue;
            }
            const float *p = x + r0 * n;
            float a[RF_ROWS];
            int nan = 0;
            if (kind == R_SUM) {
                for (int k = 0; k < RF_ROWS; k++) a[k] = 0.0f;
                for (uint64_t i = 0; i < n; i++)
                    for (int k = 0; k < RF_ROWS; k++) a[k] = a[k] + p[(uint64_t)k * n + i];
            } else {
                for (int k = 0; k < RF_ROWS; k++) a[k] = p[(uint64_t)k * n];
                for (uint64_t i = 0; i < n; i++)
                    for (int k = 0; k < RF_ROWS; k++) {
                        float v = p[(uint64_t)k * n + i];
                        nan |= v != v;
                        if (kind == R_MAX) a[k] = a[k] >= v ? a[k] : v;
                        else a[k] = a[k] < v ? a[k] : v;
                    }
            }
            if (nan) reduce_fn(R, (size_t)r0, (size_t)(r0 + RF_ROWS));
            else
                for (int k = 0; k < RF_ROWS; k++) y[r0 + (uint64_t)k] = a[k];
            continue;
        }
        uint64_t chunks = (inner + RF_LANES - 1) / RF_LANES;
        uint64_t o = (uint64_t)u / chunks, j0 = (uint64_t)u % chunks * RF_LANES;
        uint64_t nl = inner - j0 < RF_LANES ? inner - j0 : RF_LANES;
        const float *p = x + o * n * inner + j0;
        float a[RF_LANES];
        int nan = 0;
        if (kind == R_SUM) {
            for (uint64_t j = 0; j < nl; j++) a[j] = 0.0f;
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t j = 0; j < nl; j++) a[j] = a[j] + p[i * inner + j];
        } else {
            for (uint64_t j = 0; j < nl; j++) a[j] = p[j];
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t j = 0; j < nl; j++) {
                    float v = p[i * inner + j];
                    nan |= v != v;
                    if (kind == R_MAX) a[j] = a[j] >= v ? a[j] : v;
                    else a[j] = a[j] < v ? a[j] : v;
                }
        }
        size_t q0 = (size_t)(o * inner + j0);
        if (nan) reduce_fn(R, q0, q0 + (size_t)nl);
        else memcpy(y + q0, a, (size_t)nl * sizeof(float));
    }
}
IM_MULTIVERSION(freduce_rows, freduce_impl)

/* int32 SUM: RF_LANES neighbouring outputs at a time in int64 (a loop the
 * compiler vectorises), every partial sum checked against int32's range as
 * apply_add_s requires; a unit where a check fails is redone by reduce_fn,
 * which reports it. */
static inline IM_INLINE void ireduce_impl(void *vp, size_t begin, size_t end) {
    rarg *R = vp;
    const int32_t *x = R->in->data;
    int32_t *y = R->out->data;
    const uint64_t n = R->n, inner = R->inner, chunks = (inner + RF_LANES - 1) / RF_LANES;
    for (size_t u = begin; u < end; u++) {
        uint64_t o = (uint64_t)u / chunks, j0 = (uint64_t)u % chunks * RF_LANES;
        uint64_t nl = inner - j0 < RF_LANES ? inner - j0 : RF_LANES;
        const int32_t *p = x + o * n * inner + j0;
        int64_t a[RF_LANES];
        int bad = 0;
        for (uint64_t j = 0; j < nl; j++) a[j] = 0;
        for (uint64_t i = 0; i < n; i++)
            for (uint64_t j = 0; j < nl; j++) {
                a[j] += p[i * inner + j];
                bad |= (a[j] < INT32_MIN) | (a[j] > INT32_MAX);
            }
        size_t q0 = (size_t)(o * inner + j0);
        if (bad) reduce_fn(R, q0, q0 + (size_t)nl);
        else
            for (uint64_t j = 0; j < nl; j++) y[q0 + j] = (int32_t)a[j];
    }
}
IM_MULTIVERSION(ireduce_rows, ireduce_impl)

static ctosa_error *reduce(const interp_op *o, rkind kind) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_dtype dt = in->dtype;
    bool ok;
    switch (kind) {
    case R_ALL:
    case R_ANY: ok = dt == CTOSA_DTYPE_BOOL; break;
    case R_MAX:
    case R_MIN:
        ok = dt == CTOSA_DTYPE_INT8 || dt == CTOSA_DTYPE_INT16 || dt == CTOSA_DTYPE_INT32 ||
             dt == CTOSA_DTYPE_INT64 || ctosa_dtype_is_float(dt);
        break;
    case R_PROD: ok = ctosa_dtype_is_float(dt); break;
    default: ok = dt == CTOSA_DTYPE_INT32 || dt == CTOSA_DTYPE_INT64 || ctosa_dtype_is_float(dt); break;
    }
    if (!ok)
        return interp_unsupported(o, "dtype %s is not supported for this operator", ctosa_dtype_short(dt));
    if (out->dtype != dt)
        return interp_fail(o, "output '%s' is %s, input '%s' is %s", out->name, ctosa_dtype_short(out->dtype),
                           in->name, ctosa_dtype_short(dt));
    int32_t axis = o->op->attr.axis;
    if (axis < 0 || (uint32_t)axis >= in->rank)
        return interp_fail(o, "axis %d is outside 0..%d", axis, (int)in->rank - 1);
    if (out->rank != in->rank)
        return interp_fail(o, "output rank %u differs from input rank %u", out->rank, in->rank);
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t want = d == (uint32_t)axis ? 1 : in->shape[d];
        if (out->shape[d] != want)
            return interp_fail(o, "output %s must be input %s with dimension %d set to 1",
                               interp_shape_str(out), interp_shape_str(in), axis);
    }
    rarg R = {in, out, 1, (uint64_t)in->shape[axis], 1, kind, o->op->attr.nan_mode == CTOSA_NAN_IGNORE, 0, 0};
    for (int32_t d = 0; d < axis; d++) R.outer *= (uint64_t)in->shape[d];
    for (uint32_t d = (uint32_t)axis + 1; d < in->rank; d++) R.inner *= (uint64_t)in->shape[d];
    uint64_t n_out = R.outer * R.inner;
    if (!o->reference && dt == CTOSA_DTYPE_FP32 && out->dtype == dt && R.n >= 1 &&
        (kind == R_SUM || kind == R_MAX || kind == R_MIN)) {
        uint64_t units = R.inner == 1 ? (R.outer + RF_ROWS - 1) / RF_ROWS
                                      : R.outer * ((R.inner + RF_LANES - 1) / RF_LANES);
        if (units > 1 && interp_par_worth(o->ctx, (double)(n_out * R.n) * INTERP_PAR_ELEM))
            interp_parallel_for(o->ctx, (size_t)units, freduce_rows, &R);
        else if (units) freduce_rows(&R, 0, (size_t)units);
        return NULL;
    }
    if (!o->reference && dt == CTOSA_DTYPE_INT32 && kind == R_SUM && R.n >= 1 && R.inner > 1) {
        uint64_t units = R.outer * ((R.inner + RF_LANES - 1) / RF_LANES);
        if (units > 1 && interp_par_worth(o->ctx, (double)(n_out * R.n) * INTERP_PAR_ELEM))
            interp_parallel_for(o->ctx, (size_t)units, ireduce_rows, &R);
        else if (units) ireduce_rows(&R, 0, (size_t)units);
    } else if (interp_par_worth(o->ctx, (double)(n_out * R.n) * INTERP_PAR_ELEM)) {
        interp_parallel_for(o->ctx, (size_t)n_out, reduce_fn, &R);
    } else if (n_out) {
        reduce_fn(&R, 0, (size_t)n_out);
    }
    if (R.err)
        return interp_fail(o, "REQUIRE failed at output element %llu: the sum does not fit %s",
                           (unsigned long long)R.err_at, ctosa_dtype_short(dt));
    return NULL;
}

ctosa_error *interp_k_REDUCE_ALL(const interp_op *o) { return reduce(o, R_ALL); }
ctosa_error *interp_k_REDUCE_ANY(const interp_op *o) { return reduce(o, R_ANY); }
ctosa_error *interp_k_REDUCE_MAX(const interp_op *o) { return reduce(o, R_MAX); }
ctosa_error *interp_k_REDUCE_MIN(const interp_op *o) { return reduce(o, R_MIN); }
ctosa_error *interp_k_REDUCE_PRODUCT(const interp_op *o) { return reduce(o, R_PROD); }
ctosa_error *interp_k_REDUCE_SUM(const interp_op *o) { return reduce(o, R_SUM); }
