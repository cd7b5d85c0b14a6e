/*
 * lower_mvn.c - MeanVarianceNormalization: (X - E[X]) / (sqrt(Var[X]) +
 * 1e-9) over `axes` (default [0, 2, 3]), decomposed into reductions, SUB,
 * MUL, RSQRT and RECIPROCAL.
 *
 * The definition's function body forms the variance as E[X^2] - E[X]^2;
 * here it is E[(X - E[X])^2], which is the same quantity without the
 * cancellation (it cannot go negative and give a NaN for constant data).
 */
#include "lower/lower_build.h"

static lower_status lower_mvn(lower_ctx *c) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    uint32_t r = X->rank;
    if (!ctosa_dtype_is_float(X->t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, X->name,
                         "MeanVarianceNormalization: input '%s' is not float", X->name);
    static const int64_t dflt[3] = {0, 2, 3};
    const int64_t *axes = dflt;
    int64_t na = lw_attr_ints(c, "axes", &axes);
    if (na < 0) {
        axes = dflt;
        na = 3;
    }
    uint32_t mask = 0;
    for (int64_t i = 0; i < na; i++) {
        int32_t a;
        if (!lw_axis(c, axes[i], r, "axes", &a)) return LOWER_REJECT;
        mask |= 1u << a;
    }
    ctosa_dtype t = X->t;
    int64_t rs[LOWER_MAX_RANK];
    const char *x = lw_input(c, 0);
    const char *mean = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, x, t, r, X->shape, mask, true, rs);
    const char *d = lw_sub(c, x, mean, t, r, X->shape);
    const char *var = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, lw_mul(c, d, d, t, r, X->shape), t, r, X->shape,
                                     mask, true, rs);
    /* sqrt(v) = 1 / rsqrt(v), exact at 0 (1 / inf) */
    const char *rv = var ? lw_unary(c, CTOSA_OP_RSQRT, var, t, r, rs, NULL) : NULL;
    const char *sd = rv ? lw_unary(c, CTOSA_OP_RECIPROCAL, rv, t, r, rs, NULL) : NULL;
    sd = lw_add_scalar(c, sd, t, r, rs, 1e-9);
    const char *inv = sd ? lw_unary(c, CTOSA_OP_RECIPROCAL, sd, t, r, rs, NULL) : NULL;
    const char *y = lw_mul(c, d, inv, t, r, X->shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

const lower_entry lower_table_mvn[] = {
    {"MeanVarianceNormalization", 9, 0, lower_mvn},
    {0},
};
