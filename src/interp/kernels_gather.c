/* kernels_gather.c - GATHER and SCATTER over [N, K, C] values with [N, W]
 * int32 (or 1.1 int64) indices. Index values are REQUIREd to be in [0, K);
 * SCATTER also REQUIREs every output row to be written at most once. */
#include <stdlib.h>
#include <string.h>

#include "interp/int_math.h"

static ctosa_error *check_rank3(const interp_op *o, const itensor *t, const char *what) {
    if (t->rank != 3)
        return interp_fail(o, "%s '%s' must have rank 3 [N,K,C], not %s", what, t->name, interp_shape_str(t));
    return NULL;
}

static ctosa_error *check_indices(const interp_op *o, const itensor *idx, int64_t n, int64_t w) {
    if (idx->dtype != CTOSA_DTYPE_INT32 && idx->dtype != CTOSA_DTYPE_INT64)
        return interp_fail(o, "indices '%s' must be int32 or int64, not %s", idx->name,
                           ctosa_dtype_short(idx->dtype));
    if (idx->rank != 2 || idx->shape[0] != n || idx->shape[1] != w)
        return interp_fail(o, "indices '%s' %s must be [%lld,%lld]", idx->name, interp_shape_str(idx),
                           (long long)n, (long long)w);
    return NULL;
}

ctosa_error *interp_k_GATHER(const interp_op *o) {
    const itensor *values = o->in[0], *idx = o->in[1], *out = o->out[0];
    ctosa_error *e;
    if ((e = check_rank3(o, values, "values")) || (e = check_rank3(o, out, "output"))) return e;
    int64_t N = values->shape[0], K = values->shape[1], C = values->shape[2], W = out->shape[1];
    if (out->shape[0] != N || out->shape[2] != C)
        return interp_fail(o, "output %s does not match values %s", interp_shape_str(out),
                           interp_shape_str(values));
    if (values->dtype != out->dtype)
        return interp_fail(o, "values are %s, output is %s", ctosa_dtype_short(values->dtype),
                           ctosa_dtype_short(out->dtype));
    if ((e = check_indices(o, idx, N, W))) return e;
    size_t es = interp_elem_size(out->dtype), row = (size_t)C * es;
    for (int64_t n = 0; n < N; n++)
        for (int64_t w = 0; w < W; w++) {
            int64_t k = interp_get_int(idx, (uint64_t)(n * W + w));
            if (k < 0 || k >= K)
                return interp_fail(o, "REQUIRE failed: index %lld at [%lld,%lld] is outside 0..%lld",
                                   (long long)k, (long long)n, (long long)w, (long long)K - 1);
            if (row)
                memcpy((char *)out->data + (size_t)(n * W + w) * row,
                       (const char *)values->data + (size_t)(n * K + k) * row, row);
        }
    return NULL;
}

ctosa_error *interp_k_SCATTER(const interp_op *o) {
    const itensor *vin = o->in[0], *idx = o->in[1], *input = o->in[2], *out = o->out[0];
    ctosa_error *e;
    if ((e = check_rank3(o, vin, "values_in")) || (e = check_rank3(o, input, "input")) ||
        (e = check_rank3(o, out, "values_out")))
        return e;
    int64_t N = vin->shape[0], K = vin->shape[1], C = vin->shape[2], W = input->shape[1];
    if (!interp_same_shape(vin, out) || input->shape[0] != N || input->shape[2] != C)
        return interp_fail(o, "values_in %s, input %s and values_out %s do not agree", interp_shape_str(vin),
                           interp_shape_str(input), interp_shape_str(out));
    if (vin->dtype != out->dtype || input->dtype != out->dtype)
        return interp_fail(o, "values_in, input and values_out must have one dtype");
    if ((e = check_indices(o, idx, N, W))) return e;
    size_t es = interp_elem_size(out->dtype), row = (size_t)C * es;
    if (out->count && out->data != vin->data) memcpy(out->data, vin->data, (size_t)out->count * es);
    uint8_t *written = calloc((size_t)(N * K) + 1, 1);
    if (!written) return ctosa_error_nomem();
    for (int64_t n = 0; n < N; n++)
        for (int64_t w = 0; w < W; w++) {
            int64_t k = interp_get_int(idx, (uint64_t)(n * W + w));
            if (k < 0 || k >= K) {
                free(written);
                return interp_fail(o, "REQUIRE failed: index %lld at [%lld,%lld] is outside 0..%lld",
                                   (long long)k, (long long)n, (long long)w, (long long)K - 1);
            }
            if (C > 0 && written[n * K + k]) {
                free(written);
                return interp_fail(o, "REQUIRE failed: row %lld of batch %lld is written twice", (long long)k,
                                   (long long)n);
            }
            written[n * K + k] = 1;
            if (row)
                memcpy((char *)out->data + (size_t)(n * K + k) * row,
                       (const char *)input->data + (size_t)(n * W + w) * row, row);
        }
    free(written);
    return NULL;
}
