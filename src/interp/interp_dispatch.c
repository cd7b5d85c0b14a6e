/* interp_dispatch.c - operator -> kernel table, argument-count checks,
 * element sizes, host <-> canonical conversion and the small helpers the
 * kernels share. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "interp_runtime.h"
#include "util/floatfmt.h"

size_t interp_elem_size(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return 1;
    case CTOSA_DTYPE_INT16: return 2;
    case CTOSA_DTYPE_INT32: return 4;
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return 8;
    case CTOSA_DTYPE_FP32:
    case CTOSA_DTYPE_FP16:
    case CTOSA_DTYPE_BF16:
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return 4;
    default: return 0;
    }
}

size_t ctosa_host_elem_size(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_FP16:
    case CTOSA_DTYPE_BF16: return 2;
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return 1;
    default: return interp_elem_size(t);
    }
}

ctosa_error *interp_fail(const interp_op *o, const char *fmt, ...) {
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "%s: ", o->where);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_INVALID, "%s", b.s ? b.s : "");
    sb_free(&b);
    return e;
}

ctosa_error *interp_unsupported(const interp_op *o, const char *fmt, ...) {
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "%s: ", o->where);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s", b.s ? b.s : "");
    sb_free(&b);
    return e;
}

const char *interp_shape_str(const itensor *t) {
    static _Thread_local char buf[4][200];
    static _Thread_local int k;
    char *s = buf[k++ & 3];
    size_t n = 0;
    s[n++] = '[';
    for (uint32_t i = 0; i < t->rank && n < 170; i++)
        n += (size_t)snprintf(s + n, 200 - n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (t->rank && n >= 170) n += (size_t)snprintf(s + n, 200 - n, ",...");
    s[n++] = ']';
    s[n] = 0;
    return s;
}

bool interp_same_shape(const itensor *a, const itensor *b) {
    if (a->rank != b->rank) return false;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

int64_t interp_get_int(const itensor *t, uint64_t i) {
    switch (t->dtype) {
    case CTOSA_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case CTOSA_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case CTOSA_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return ((const int64_t *)t->data)[i];
    default: return 0;
    }
}

static bool is_int_dtype(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL:
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8:
    case CTOSA_DTYPE_INT16:
    case CTOSA_DTYPE_INT32:
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return true;
    default: return false;
    }
}

ctosa_error *interp_scalar_int(const interp_op *o, uint32_t input, int64_t *v) {
    if (input >= o->n_in) return interp_fail(o, "missing input %u", input);
    const itensor *t = o->in[input];
    if (t->count < 1) return interp_fail(o, "input '%s' is empty, expected one value", t->name);
    if (!is_int_dtype(t->dtype)) {
        if (ctosa_dtype_is_float(t->dtype)) {
            float f = ((const float *)t->data)[0];
            if (!(f > -9.2e18f && f < 9.2e18f) || f != (float)(int64_t)f)
                return interp_fail(o, "input '%s' holds %g, expected an integer", t->name, f);
            *v = (int64_t)f;
            return NULL;
        }
        return interp_unsupported(o, "input '%s' has dtype %s", t->name, ctosa_dtype_short(t->dtype));
    }
    *v = interp_get_int(t, 0);
    return NULL;
}

ctosa_error *interp_scalar_float(const interp_op *o, uint32_t input, float *v) {
    if (input >= o->n_in) return interp_fail(o, "missing input %u", input);
    const itensor *t = o->in[input];
    if (t->count < 1) return interp_fail(o, "input '%s' is empty, expected one value", t->name);
    if (ctosa_dtype_is_float(t->dtype)) *v = ((const float *)t->data)[0];
    else if (is_int_dtype(t->dtype)) *v = (float)interp_get_int(t, 0);
    else return interp_unsupported(o, "input '%s' has dtype %s", t->name, ctosa_dtype_short(t->dtype));
    return NULL;
}

ctosa_error *interp_shape_values(const interp_op *o, uint32_t input, const int64_t **v, uint64_t *n) {
    if (input >= o->n_in) return interp_fail(o, "missing input %u", input);
    const itensor *t = o->in[input];
    if (t->dtype != CTOSA_DTYPE_SHAPE && t->dtype != CTOSA_DTYPE_INT64 && t->dtype != CTOSA_DTYPE_INT48)
        return interp_fail(o, "input '%s' must be a shape, not %s", t->name, ctosa_dtype_short(t->dtype));
    *v = t->data;
    *n = t->count;
    return NULL;
}

/* -------------------------------------------------- host encoding */

void interp_to_host(const itensor *t, void *dst) {
    uint64_t n = t->count;
    const float *f = t->data;
    switch (t->dtype) {
    case CTOSA_DTYPE_FP16:
        for (uint64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = ff_f32_to_fp16(f[i]);
        break;
    case CTOSA_DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = ff_f32_to_bf16(f[i]);
        break;
    case CTOSA_DTYPE_FP8E4M3:
        for (uint64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ff_f32_to_fp8e4m3(f[i]);
        break;
    case CTOSA_DTYPE_FP8E5M2:
        for (uint64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ff_f32_to_fp8e5m2(f[i]);
        break;
    default:
        if (n) memcpy(dst, t->data, (size_t)(n * interp_elem_size(t->dtype)));
        break;
    }
}

ctosa_error *interp_from_host(itensor *t, const void *src, const char *what) {
    uint64_t n = t->count;
    float *f = t->data;
    switch (t->dtype) {
    case CTOSA_DTYPE_FP16:
        for (uint64_t i = 0; i < n; i++) f[i] = ff_fp16_to_f32(((const uint16_t *)src)[i]);
        return NULL;
    case CTOSA_DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++) f[i] = ff_bf16_to_f32(((const uint16_t *)src)[i]);
        return NULL;
    case CTOSA_DTYPE_FP8E4M3:
        for (uint64_t i = 0; i < n; i++) f[i] = ff_fp8e4m3_to_f32(((const uint8_t *)src)[i]);
        return NULL;
    case CTOSA_DTYPE_FP8E5M2:
        for (uint64_t i = 0; i < n; i++) f[i] = ff_fp8e5m2_to_f32(((const uint8_t *)src)[i]);
        return NULL;
    case CTOSA_DTYPE_BOOL:
        for (uint64_t i = 0; i < n; i++) {
            uint8_t v = ((const uint8_t *)src)[i];
            if (v > 1)
                return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: element %llu is %u, not a bool (0/1)", what,
                                       (unsigned long long)i, v);
            ((uint8_t *)t->data)[i] = v;
        }
        return NULL;
    case CTOSA_DTYPE_INT4:
        for (uint64_t i = 0; i < n; i++) {
            int8_t v = ((const int8_t *)src)[i];
            if (v < -8 || v > 7)
                return ctosa_error_new(CTOSA_ERR_FORMAT,
                                       "%s: element %llu is %d, outside the int4 range -8..7", what,
                                       (unsigned long long)i, v);
            ((int8_t *)t->data)[i] = v;
        }
        return NULL;
    case CTOSA_DTYPE_INT48:
        for (uint64_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, (const char *)src + 8 * i, 8);
            if (v < -(INT64_C(1) << 47) || v >= (INT64_C(1) << 47))
                return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: element %llu is %lld, outside the int48 range",
                                       what, (unsigned long long)i, (long long)v);
            ((int64_t *)t->data)[i] = v;
        }
        return NULL;
    default:
        if (n) memcpy(t->data, src, (size_t)(n * interp_elem_size(t->dtype)));
        return NULL;
    }
}

/* -------------------------------------------------- kernel table */

/* One case per operator and no default: a new operator in CTOSA_OP_LIST
 * fails the build (-Wswitch) until it gets a kernel or is listed as having
 * none. */
interp_kernel_fn interp_kernel_for(ctosa_op_kind k) {
    switch (k) {
#define CASE(n) \
    case CTOSA_OP_##n: return interp_k_##n;
        INTERP_KERNELS(CASE)
#undef CASE
    case CTOSA_OP_COND_IF: return interp_k_COND_IF;
    case CTOSA_OP_WHILE_LOOP: return interp_k_WHILE_LOOP;
    case CTOSA_OP_VARIABLE_READ: return interp_k_VARIABLE_READ;
    case CTOSA_OP_VARIABLE_WRITE: return interp_k_VARIABLE_WRITE;
    case CTOSA_OP_CUSTOM: return interp_k_CUSTOM;
    /* declarations: nothing runs (CTOSA_OPF_DECLARES) */
    case CTOSA_OP_CONST:
    case CTOSA_OP_CONST_SHAPE:
    case CTOSA_OP_VARIABLE: return NULL;
    /* 1.1 block-scaled and adaptive-pooling operators: no kernel yet */
    case CTOSA_OP_MATMUL_T_BLOCK_SCALED:
    case CTOSA_OP_CAST_FROM_BLOCK_SCALED:
    case CTOSA_OP_CAST_TO_BLOCK_SCALED:
    case CTOSA_OP_CONV2D_BLOCK_SCALED:
    case CTOSA_OP_MAX_POOL2D_ADAPTIVE:
    case CTOSA_OP_AVG_POOL2D_ADAPTIVE:
    case CTOSA_OP_UNKNOWN:
    case CTOSA_OP_COUNT: return NULL;
    }
    return NULL; /* a value outside the enum */
}

/* Input / output counts come from the operator table (CTOSA_OP_LIST); the
 * older writers' input count is accepted too and the kernels default the
 * omitted trailing inputs. */
ctosa_error *interp_check_arity(const interp_op *o) {
    ctosa_op_kind k = o->op->kind;
    if (ctosa_op_counts_fit(k, o->n_in, o->n_out, true)) return NULL;
    const ctosa_op_props *p = ctosa_op_props_of(k);
    if (!p) return NULL; /* not an operator: planning refuses it (no kernel) */
    int min = p->min_inputs, max = p->max_inputs;
    if (!ctosa_op_counts_fit(k, o->n_in, (uint32_t)(p->min_outputs), true)) {
        if (p->older_min_inputs != min)
            return interp_fail(o, "has %u inputs, the operator takes %d (older writers: %d)", o->n_in, min,
                               p->older_min_inputs);
        if (max == min) return interp_fail(o, "has %u inputs, the operator takes %d", o->n_in, min);
        if (max < 0) return interp_fail(o, "has %u inputs, the operator takes at least %d", o->n_in, min);
        return interp_fail(o, "has %u inputs, the operator takes %d to %d", o->n_in, min, max);
    }
    if (p->max_outputs == p->min_outputs)
        return interp_fail(o, "has %u outputs, the operator produces %d", o->n_out, p->min_outputs);
    if (p->max_outputs < 0)
        return interp_fail(o, "has %u outputs, the operator produces at least %d", o->n_out, p->min_outputs);
    return interp_fail(o, "has %u outputs, the operator produces %d to %d", o->n_out, p->min_outputs,
                       p->max_outputs);
}
