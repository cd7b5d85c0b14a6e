/*
 * lower_softmax.c - Softmax, LogSoftmax and Hardmax.
 *
 * Before opset 13 these operate on the input flattened to 2-D at `axis`
 * (default 1); from 13 on, on one axis (default -1). Softmax is the
 * numerically stable form: exp(x - max) * reciprocal(sum).
 */
#include <string.h>

#include "lower/lower_build.h"

typedef enum { SM_SOFT, SM_LOG, SM_HARD } sm_kind;

static lower_status lower_sm(lower_ctx *c, sm_kind kind) {
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    ctosa_dtype t = X->t;
    uint32_t r0 = X->rank;
    bool legacy = lw_opset(c) < 13;
    int32_t axis;
    if (r0 == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: scalar input", lw_node(c)->op_type);
    if (!lw_axis(c, lw_attr_int(c, "axis", legacy ? 1 : -1), r0, "axis", &axis)) return LOWER_REJECT;
    const char *x = lw_input(c, 0);
    uint32_t r = r0;
    int64_t s[LOWER_MAX_RANK];
    memcpy(s, X->shape, r0 * sizeof *s);
    if (legacy && !(axis == (int32_t)r0 - 1)) {
        int64_t s2[2] = {lw_count((uint32_t)axis, X->shape), lw_count(r0 - (uint32_t)axis, X->shape + axis)};
        x = lw_reshape_if(c, x, t, r0, X->shape, 2, s2);
        r = 2;
        memcpy(s, s2, sizeof s2);
        axis = 1;
    }
    int64_t rs[LOWER_MAX_RANK];
    const char *m = lw_reduce(c, CTOSA_OP_REDUCE_MAX, x, t, r, s, axis, rs);
    const char *y;
    if (kind == SM_HARD) {
        /* one-hot of the first maximum: index = min over positions equal to max */
        int64_t len = s[axis];
        int64_t ish[LOWER_MAX_RANK];
        for (uint32_t i = 0; i < r; i++) ish[i] = 1;
        ish[axis] = len;
        double *iota = arena_alloc(lw_arena(c), (size_t)len * sizeof(double));
        if (!iota) return lw_failed(c);
        for (int64_t i = 0; i < len; i++) iota[i] = (double)i;
        const char *io = lw_const_from_f64(c, t, r, ish, iota);
        const char *eq = m ? lw_binary(c, CTOSA_OP_EQUAL, x, m, CTOSA_DTYPE_BOOL, r, s) : NULL;
        const char *big = lw_scalar(c, t, r, (double)len);
        const char *idx = lw_tensor(c, t, r, s);
        LW_TRY(eq && io && big && idx);
        const char *sin[3] = {eq, io, big};
        LW_TRY(lw_op(c, CTOSA_OP_SELECT, 3, sin, 1, &idx, NULL));
        const char *first = lw_reduce(c, CTOSA_OP_REDUCE_MIN, idx, t, r, s, axis, NULL);
        const char *hit = first ? lw_binary(c, CTOSA_OP_EQUAL, io, first, CTOSA_DTYPE_BOOL, r, s) : NULL;
        const char *one = lw_scalar(c, t, r, 1.0), *zero = lw_scalar(c, t, r, 0.0);
        y = lw_tensor(c, t, r, s);
        LW_TRY(hit && one && zero && y);
        const char *hin[3] = {hit, one, zero};
        LW_TRY(lw_op(c, CTOSA_OP_SELECT, 3, hin, 1, &y, NULL));
    } else {
        const char *d = lw_sub(c, x, m, t, r, s);
        const char *e = d ? lw_unary(c, CTOSA_OP_EXP, d, t, r, s, NULL) : NULL;
        const char *sum = lw_reduce(c, CTOSA_OP_REDUCE_SUM, e, t, r, s, axis, NULL);
        if (kind == SM_SOFT) {
            const char *inv = sum ? lw_unary(c, CTOSA_OP_RECIPROCAL, sum, t, r, rs, NULL) : NULL;
            y = lw_mul(c, e, inv, t, r, s);
        } else {
            const char *lg = sum ? lw_unary(c, CTOSA_OP_LOG, sum, t, r, rs, NULL) : NULL;
            y = lw_sub(c, d, lg, t, r, s);
        }
    }
    y = lw_reshape_if(c, y, t, r, s, r0, X->shape);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

static lower_status lower_softmax(lower_ctx *c) { return lower_sm(c, SM_SOFT); }
static lower_status lower_logsoftmax(lower_ctx *c) { return lower_sm(c, SM_LOG); }
static lower_status lower_hardmax(lower_ctx *c) { return lower_sm(c, SM_HARD); }

const lower_entry lower_table_softmax[] = {
    {"Softmax", 1, 0, lower_softmax},
    {"LogSoftmax", 1, 0, lower_logsoftmax},
    {"Hardmax", 1, 0, lower_hardmax},
    {0},
};
