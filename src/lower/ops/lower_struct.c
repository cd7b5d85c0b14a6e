/* lower_struct.c - structural ONNX operators: Identity Dropout Constant
 * Reshape Flatten Squeeze Unsqueeze Transpose Shape Size ConstantOfShape.
 *
 * They move data (RESHAPE / TRANSPOSE / IDENTITY) or compute compile-time
 * constants (Shape, Size, ConstantOfShape, Constant). A constant input
 * flows through as a constant output where the operator only reinterprets
 * it (Identity, Reshape, Flatten, Squeeze, Unsqueeze), so shape arithmetic
 * folds without running the interpreter. */
#include <string.h>

#include "lower/lower_internal.h"

#define FOLD_LIMIT ((uint64_t)16 << 20)

static const lower_value *in0(lower_ctx *c) {
    const lower_value *x = lw_in(c, 0);
    if (!x) lw_fail(c, LOWER_INPUT_FALLBACK, NULL, "%s: input 0 is missing", lw_node(c)->op_type);
    return x;
}

/* Output 0 = x reinterpreted with a new shape (no data change). */
static lower_status reshaped(lower_ctx *c, const lower_value *x, uint32_t rank, const int64_t *shape) {
    int64_t n_in = 1, n_out = 1;
    for (uint32_t i = 0; i < x->rank; i++) n_in *= x->shape[i];
    for (uint32_t i = 0; i < rank; i++) n_out *= shape[i];
    if (n_in != n_out)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: %lld elements cannot take a shape of %lld elements", lw_node(c)->op_type,
                         (long long)n_in, (long long)n_out);
    if (x->data) {
        lw_set_output_const(c, 0, x->onnx_dtype, rank, shape, x->data, x->nbytes);
        return c->rejected ? LOWER_REJECT : LOWER_OK;
    }
    const char *o = lw_reshape(c, lw_input(c, 0), x->t, rank, shape);
    lw_set_output(c, 0, o);
    return o ? LOWER_OK : LOWER_REJECT;
}

static lower_status lower_identity(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    if (x->data) {
        lw_set_output_const(c, 0, x->onnx_dtype, x->rank, x->shape, x->data, x->nbytes);
        return c->rejected ? LOWER_REJECT : LOWER_OK;
    }
    const char *o = lw_unary(c, CTOSA_OP_IDENTITY, lw_input(c, 0), x->t, x->rank, x->shape, NULL);
    lw_set_output(c, 0, o);
    return o ? LOWER_OK : LOWER_REJECT;
}

static lower_status lower_dropout(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    if (lw_opset(c) >= 12 && lw_has_input(c, 2)) {
        const int64_t *tm = NULL;
        int64_t n = lw_const_i64(c, 2, &tm);
        if (n < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[2],
                             "Dropout: training_mode must be a constant");
        if (n > 0 && tm[0]) {
            const double *r = NULL;
            double ratio = 0.5;
            if (lw_has_input(c, 1)) {
                if (lw_const_f64(c, 1, &r) < 1)
                    return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[1],
                                     "Dropout: ratio must be a constant");
                ratio = r[0];
            }
            if (ratio != 0)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Dropout in training mode (random) is not supported");
        }
    } else if (lw_opset(c) < 7 && lw_attr_int(c, "is_test", 0) == 0) {
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Dropout with is_test=0 (training) is not supported");
    }
    lower_status st = lower_identity(c);
    if (st != LOWER_OK) return st;
    if (lw_node(c)->n_outputs > 1 && lw_node(c)->outputs[1][0]) {
        uint64_t n = 1;
        for (uint32_t i = 0; i < x->rank; i++) n *= (uint64_t)x->shape[i];
        if (n > FOLD_LIMIT)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Dropout: mask output too large");
        uint8_t *m = arena_alloc(lw_arena(c), (size_t)n + 1);
        if (!m) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
        memset(m, 1, (size_t)n);
        lw_set_output_const(c, 1, CTOSA_ONNX_BOOL, x->rank, x->shape, m, n);
    }
    return c->rejected ? LOWER_REJECT : LOWER_OK;
}

static lower_status lower_constant(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    const ctosa_onnx_attr *a = NULL;
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name[0]) a = &n->attrs[i];
    if (!a) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Constant has no value attribute");
    int64_t one = 1;
    if (strcmp(a->name, "value") == 0 && a->type == CTOSA_ONNX_ATTR_TENSOR && a->t) {
        const ctosa_onnx_tensor *t = a->t;
        if (t->rank > LOWER_MAX_RANK || t->dtype == CTOSA_ONNX_STRING)
            return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "Constant of type %s, rank %u",
                             ctosa_onnx_dtype_name(t->dtype) ? ctosa_onnx_dtype_name(t->dtype) : "?",
                             t->rank);
        const void *d = NULL;
        uint64_t nb = 0;
        ctosa_error *e = ctosa_onnx_tensor_data(c->s->m, t, &d, &nb);
        if (e) {
            lw_fail(c, LOWER_INTERNAL, NULL, "Constant value: %s", ctosa_error_message(e));
            ctosa_error_free(e);
            return LOWER_REJECT;
        }
        lw_set_output_const(c, 0, t->dtype, t->rank, t->dims, d, nb);
    } else if (strcmp(a->name, "value_float") == 0) {
        lw_set_output_const(c, 0, CTOSA_ONNX_FLOAT, 0, NULL, &a->f, 4);
    } else if (strcmp(a->name, "value_floats") == 0) {
        int64_t cnt = a->count;
        lw_set_output_const(c, 0, CTOSA_ONNX_FLOAT, 1, &cnt, a->floats, (uint64_t)cnt * 4);
    } else if (strcmp(a->name, "value_int") == 0) {
        lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 0, NULL, &a->i, 8);
    } else if (strcmp(a->name, "value_ints") == 0) {
        int64_t cnt = a->count;
        lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 1, &cnt, a->ints, (uint64_t)cnt * 8);
    } else {
        (void)one;
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Constant with attribute '%s' is not supported",
                         a->name);
    }
    return c->rejected ? LOWER_REJECT : LOWER_OK;
}

static lower_status lower_reshape(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    const int64_t *sh = NULL;
    int64_t n;
    if (lw_opset(c) < 5) {
        n = lw_attr_ints(c, "shape", &sh);
        if (n < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: no shape attribute");
    } else {
        if (!lw_has_input(c, 1)) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: no shape input");
        n = lw_const_i64(c, 1, &sh);
        if (n < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[1],
                             "Reshape: shape input '%s' is not a constant", lw_node(c)->inputs[1]);
    }
    if (n > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "Reshape to rank %lld", (long long)n);
    bool allowzero = lw_attr_int(c, "allowzero", 0) != 0;
    int64_t out[LOWER_MAX_RANK], known = 1, total = 1;
    int infer = -1;
    for (uint32_t i = 0; i < x->rank; i++)
        if (__builtin_mul_overflow(total, x->shape[i], &total))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: the input's element count overflows");
    for (int64_t i = 0; i < n; i++) {
        int64_t d = sh[i];
        if (d == 0 && !allowzero) {
            if ((uint64_t)i >= x->rank)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Reshape: 0 at position %lld copies a dimension the input does not have",
                                 (long long)i);
            d = x->shape[i];
        }
        if (d == -1) {
            if (infer >= 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: more than one -1");
            infer = (int)i;
            out[i] = 1;
            continue;
        }
        if (d < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: dimension %lld", (long long)d);
        out[i] = d;
        if (__builtin_mul_overflow(known, d, &known)) /* hostile shape constants */
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Reshape: the target shape's element count overflows");
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Reshape: cannot infer -1 for %lld elements",
                             (long long)total);
        out[infer] = total / known;
    }
    return reshaped(c, x, (uint32_t)n, out);
}

static lower_status lower_flatten(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    int64_t axis = lw_attr_int(c, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > (int64_t)x->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Flatten: axis %lld for rank %u",
                         (long long)lw_attr_int(c, "axis", 1), x->rank);
    int64_t out[2] = {1, 1};
    for (uint32_t i = 0; i < x->rank; i++) out[(int64_t)i < axis ? 0 : 1] *= x->shape[i];
    return reshaped(c, x, 2, out);
}

/* axes from the attribute (old opsets) or input 1 (opset 13+). Returns the
 * count, -1 when absent, -2 after rejecting. */
static int64_t get_axes(lower_ctx *c, const int64_t **axes) {
    if (lw_opset(c) < 13) return lw_attr_ints(c, "axes", axes);
    if (!lw_has_input(c, 1)) {
        *axes = NULL;
        return -1;
    }
    int64_t n = lw_const_i64(c, 1, axes);
    if (n < 0) {
        lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[1], "%s: axes input '%s' is not a constant",
                  lw_node(c)->op_type, lw_node(c)->inputs[1]);
        return -2;
    }
    return n;
}

static lower_status lower_squeeze(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    const int64_t *axes = NULL;
    int64_t na = get_axes(c, &axes);
    if (na == -2) return LOWER_REJECT;
    bool drop[LOWER_MAX_RANK] = {0};
    if (na < 0) {
        for (uint32_t i = 0; i < x->rank; i++) drop[i] = x->shape[i] == 1;
    } else {
        for (int64_t k = 0; k < na; k++) {
            int64_t a = axes[k] < 0 ? axes[k] + x->rank : axes[k];
            if (a < 0 || a >= (int64_t)x->rank || x->shape[a] != 1)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "Squeeze: axis %lld is not a dimension of size 1", (long long)axes[k]);
            drop[a] = true;
        }
    }
    int64_t out[LOWER_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++)
        if (!drop[i]) out[r++] = x->shape[i];
    return reshaped(c, x, r, out);
}

static lower_status lower_unsqueeze(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    const int64_t *axes = NULL;
    int64_t na = get_axes(c, &axes);
    if (na == -2) return LOWER_REJECT;
    if (na < 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Unsqueeze: no axes");
    int64_t r = (int64_t)x->rank + na;
    if (r > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "Unsqueeze to rank %lld", (long long)r);
    bool ins[LOWER_MAX_RANK] = {0};
    for (int64_t k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r || ins[a])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Unsqueeze: bad axis %lld", (long long)axes[k]);
        ins[a] = true;
    }
    int64_t out[LOWER_MAX_RANK];
    uint32_t j = 0;
    for (int64_t i = 0; i < r; i++) out[i] = ins[i] ? 1 : x->shape[j++];
    return reshaped(c, x, (uint32_t)r, out);
}

static lower_status lower_transpose(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    const int64_t *p = NULL;
    int64_t n = lw_attr_ints(c, "perm", &p);
    int32_t perm[LOWER_MAX_RANK];
    bool seen[LOWER_MAX_RANK] = {0};
    if (n >= 0 && n != (int64_t)x->rank)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Transpose: perm has %lld entries for rank %u",
                         (long long)n, x->rank);
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t v = n >= 0 ? p[i] : (int64_t)x->rank - 1 - i;
        if (v < 0) v += x->rank;
        if (v < 0 || v >= (int64_t)x->rank || seen[v])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Transpose: perm is not a permutation");
        seen[v] = true;
        perm[i] = (int32_t)v;
    }
    if (x->rank == 0) return lower_identity(c);
    const char *o = lw_transpose(c, lw_input(c, 0), x->t, x->rank, x->shape, perm);
    lw_set_output(c, 0, o);
    return o ? LOWER_OK : LOWER_REJECT;
}

static lower_status lower_shape(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    int64_t r = x->rank;
    int64_t start = lw_attr_int(c, "start", 0), end = lw_attr_int(c, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    if (start < 0) start = 0;
    if (end > r) end = r;
    if (end < start) end = start;
    int64_t n = end - start;
    lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 1, &n, x->shape + start, (uint64_t)n * 8);
    return c->rejected ? LOWER_REJECT : LOWER_OK;
}

static lower_status lower_size(lower_ctx *c) {
    const lower_value *x = in0(c);
    if (!x) return LOWER_REJECT;
    int64_t n = 1;
    for (uint32_t i = 0; i < x->rank; i++) n *= x->shape[i];
    lw_set_output_const(c, 0, CTOSA_ONNX_INT64, 0, NULL, &n, 8);
    return c->rejected ? LOWER_REJECT : LOWER_OK;
}

static lower_status lower_constant_of_shape(lower_ctx *c) {
    const int64_t *sh = NULL;
    int64_t n = lw_const_i64(c, 0, &sh);
    if (n < 0)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[0],
                         "ConstantOfShape: shape input '%s' is not a constant", lw_node(c)->inputs[0]);
    if (n > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "ConstantOfShape of rank %lld", (long long)n);
    int32_t dt = CTOSA_ONNX_FLOAT;
    uint8_t val[16] = {0};
    uint64_t esz = 4;
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(lw_node(c), "value");
    if (a && a->type == CTOSA_ONNX_ATTR_TENSOR && a->t) {
        const void *d = NULL;
        uint64_t nb = 0;
        ctosa_error *e = ctosa_onnx_tensor_data(c->s->m, a->t, &d, &nb);
        if (e) {
            lw_fail(c, LOWER_INTERNAL, NULL, "ConstantOfShape value: %s", ctosa_error_message(e));
            ctosa_error_free(e);
            return LOWER_REJECT;
        }
        dt = a->t->dtype;
        if (!ctosa_onnx_dtype_storage(dt, 1, &esz) || esz > 16 || nb < esz || a->t->count != 1)
            return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "ConstantOfShape: value of type %s",
                             ctosa_onnx_dtype_name(dt) ? ctosa_onnx_dtype_name(dt) : "?");
        memcpy(val, d, (size_t)esz);
    }
    uint64_t count = 1;
    for (int64_t i = 0; i < n; i++) {
        if (sh[i] < 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "ConstantOfShape: negative dimension");
        count *= (uint64_t)sh[i];
        if (count > FOLD_LIMIT)
            return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "ConstantOfShape: output too large to fold");
    }
    uint8_t *buf = arena_alloc(lw_arena(c), (size_t)(count * esz) + 1);
    if (!buf) return lw_reject(c, LOWER_INTERNAL, NULL, "out of memory");
    for (uint64_t k = 0; k < count; k++) memcpy(buf + k * esz, val, (size_t)esz);
    lw_set_output_const(c, 0, dt, (uint32_t)n, sh, buf, count * esz);
    return c->rejected ? LOWER_REJECT : LOWER_OK;
}

const lower_entry lower_table_struct[] = {{"Identity", 1, 0, lower_identity},
                                          {"Dropout", 1, 0, lower_dropout},
                                          {"Constant", 1, 0, lower_constant},
                                          {"Reshape", 1, 0, lower_reshape},
                                          {"Flatten", 1, 0, lower_flatten},
                                          {"Squeeze", 1, 0, lower_squeeze},
                                          {"Unsqueeze", 1, 0, lower_unsqueeze},
                                          {"Transpose", 1, 0, lower_transpose},
                                          {"Shape", 1, 0, lower_shape},
                                          {"Size", 1, 0, lower_size},
                                          {"ConstantOfShape", 9, 0, lower_constant_of_shape},
                                          {0}};
