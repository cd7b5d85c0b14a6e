/* kernels_shape.c - the TOSA 1.1 draft shape operators (EXT-SHAPE). Shape
 * values are int64 (tensor_size_t); arithmetic is REQUIREd not to
 * overflow. */
#include <string.h>

#include "interp/int_math.h"

static ctosa_error *shape_out(const interp_op *o, uint64_t n, int64_t **out) {
    const itensor *t = o->out[0];
    if (t->dtype != CTOSA_DTYPE_SHAPE && t->dtype != CTOSA_DTYPE_INT64)
        return interp_fail(o, "output '%s' must be a shape, not %s", t->name, ctosa_dtype_short(t->dtype));
    if (t->count != n)
        return interp_fail(o, "output '%s' has %llu values, the result has %llu", t->name,
                           (unsigned long long)t->count, (unsigned long long)n);
    *out = t->data;
    return NULL;
}

typedef enum { S_ADD, S_SUB, S_MUL, S_MAX, S_MIN, S_MOD, S_DIV_CEIL, S_DIV_FLOOR } sbin;

static ctosa_error *shape_binary(const interp_op *o, sbin k) {
    const int64_t *a, *b;
    uint64_t na, nb;
    int64_t *r = NULL;
    ctosa_error *e;
    if ((e = interp_shape_values(o, 0, &a, &na)) || (e = interp_shape_values(o, 1, &b, &nb))) return e;
    if (na != nb)
        return interp_fail(o, "inputs have %llu and %llu values", (unsigned long long)na,
                           (unsigned long long)nb);
    if ((e = shape_out(o, na, &r))) return e;
    for (uint64_t i = 0; i < na; i++) {
        int64_t x = a[i], y = b[i], v = 0;
        bool bad = false;
        switch (k) {
        case S_ADD: bad = __builtin_add_overflow(x, y, &v); break;
        case S_SUB: bad = __builtin_sub_overflow(x, y, &v); break;
        case S_MUL: bad = __builtin_mul_overflow(x, y, &v); break;
        case S_MAX: v = x >= y ? x : y; break;
        case S_MIN: v = x < y ? x : y; break;
        case S_MOD:
            bad = x < 0 || y < 1;
            if (!bad) v = x % y;
            break;
        case S_DIV_FLOOR:
            bad = x < 0 || y < 1;
            if (!bad) v = x / y;
            break;
        case S_DIV_CEIL:
            bad = x < 0 || y < 1;
            if (!bad) v = x / y + (x % y != 0);
            break;
        }
        if (bad)
            return interp_fail(o, "REQUIRE failed at element %llu (%lld, %lld)", (unsigned long long)i,
                               (long long)x, (long long)y);
        r[i] = v;
    }
    return NULL;
}

ctosa_error *interp_k_ADD_SHAPE(const interp_op *o) { return shape_binary(o, S_ADD); }
ctosa_error *interp_k_SUB_SHAPE(const interp_op *o) { return shape_binary(o, S_SUB); }
ctosa_error *interp_k_MUL_SHAPE(const interp_op *o) { return shape_binary(o, S_MUL); }
ctosa_error *interp_k_MAX_SHAPE(const interp_op *o) { return shape_binary(o, S_MAX); }
ctosa_error *interp_k_MIN_SHAPE(const interp_op *o) { return shape_binary(o, S_MIN); }
ctosa_error *interp_k_MOD_SHAPE(const interp_op *o) { return shape_binary(o, S_MOD); }
ctosa_error *interp_k_DIV_CEIL_SHAPE(const interp_op *o) { return shape_binary(o, S_DIV_CEIL); }
ctosa_error *interp_k_DIV_FLOOR_SHAPE(const interp_op *o) { return shape_binary(o, S_DIV_FLOOR); }

typedef enum { S_EXP2, S_LOG2_CEIL, S_LOG2_FLOOR } sun;

static ctosa_error *shape_unary(const interp_op *o, sun k) {
    const int64_t *a;
    uint64_t n;
    int64_t *r = NULL;
    ctosa_error *e;
    if ((e = interp_shape_values(o, 0, &a, &n)) || (e = shape_out(o, n, &r))) return e;
    for (uint64_t i = 0; i < n; i++) {
        int64_t x = a[i];
        if (k == S_EXP2) {
            if (x < 0 || x > 62)
                return interp_fail(o,
                                   "REQUIRE failed: exponent %lld at element %llu is outside "
                                   "0..62",
                                   (long long)x, (unsigned long long)i);
            r[i] = INT64_C(1) << x;
            continue;
        }
        if (x < 1)
            return interp_fail(o, "REQUIRE failed: value %lld at element %llu is below 1", (long long)x,
                               (unsigned long long)i);
        int64_t l = 63 - __builtin_clzll((uint64_t)x);
        if (k == S_LOG2_CEIL && x != (INT64_C(1) << l)) l++;
        r[i] = l;
    }
    return NULL;
}

ctosa_error *interp_k_EXP2_SHAPE(const interp_op *o) { return shape_unary(o, S_EXP2); }
ctosa_error *interp_k_LOG2_CEIL_SHAPE(const interp_op *o) { return shape_unary(o, S_LOG2_CEIL); }
ctosa_error *interp_k_LOG2_FLOOR_SHAPE(const interp_op *o) { return shape_unary(o, S_LOG2_FLOOR); }

ctosa_error *interp_k_DIM(const interp_op *o) {
    const itensor *in = o->in[0];
    int32_t axis = o->op->attr.axis;
    int64_t *r = NULL;
    ctosa_error *e;
    if (axis < 0 || (uint32_t)axis >= in->rank)
        return interp_fail(o, "axis %d is outside 0..%d", axis, (int)in->rank - 1);
    if ((e = shape_out(o, 1, &r))) return e;
    r[0] = in->shape[axis];
    return NULL;
}

ctosa_error *interp_k_CONCAT_SHAPE(const interp_op *o) {
    uint64_t total = 0;
    ctosa_error *e;
    for (uint32_t k = 0; k < o->n_in; k++) {
        const int64_t *v;
        uint64_t n;
        if ((e = interp_shape_values(o, k, &v, &n))) return e;
        total += n;
    }
    int64_t *r = NULL;
    if ((e = shape_out(o, total, &r))) return e;
    uint64_t at = 0;
    for (uint32_t k = 0; k < o->n_in; k++) {
        const int64_t *v;
        uint64_t n;
        if ((e = interp_shape_values(o, k, &v, &n))) return e;
        if (n) memmove(r + at, v, (size_t)n * 8);
        at += n;
    }
    return NULL;
}

ctosa_error *interp_k_SLICE_SHAPE(const interp_op *o) {
    const int64_t *a;
    uint64_t n;
    int64_t start, size, *r = NULL;
    ctosa_error *e;
    if ((e = interp_shape_values(o, 0, &a, &n)) || (e = interp_scalar_int(o, 1, &start)) ||
        (e = interp_scalar_int(o, 2, &size)))
        return e;
    if (size <= 0 || start < 0 || (uint64_t)start > n || (uint64_t)size > n - (uint64_t)start)
        return interp_fail(o, "start %lld size %lld do not fit %llu values", (long long)start,
                           (long long)size, (unsigned long long)n);
    if ((e = shape_out(o, (uint64_t)size, &r))) return e;
    memmove(r, a + start, (size_t)size * 8);
    return NULL;
}

ctosa_error *interp_k_ASSERT_EQUAL_SHAPE(const interp_op *o) {
    const int64_t *a, *b;
    uint64_t na, nb;
    ctosa_error *e;
    if ((e = interp_shape_values(o, 0, &a, &na)) || (e = interp_shape_values(o, 1, &b, &nb))) return e;
    if (na != nb)
        return interp_fail(o, "shapes have %llu and %llu values", (unsigned long long)na,
                           (unsigned long long)nb);
    bool bc = o->op->attr.allow_broadcast;
    for (uint64_t i = 0; i < na; i++) {
        bool bad = bc ? (a[i] != 1 && b[i] != 1 && b[i] != a[i]) : a[i] != b[i];
        if (bad)
            return interp_fail(o, "shapes differ at element %llu: %lld vs %lld", (unsigned long long)i,
                               (long long)a[i], (long long)b[i]);
    }
    return NULL;
}
