/* lower_emit.c - the lw_* helpers operator lowerings are written with:
 * reading inputs and attributes, emitting TOSA tensors and operators,
 * binding outputs, rejecting. Failures inside a helper never abort the
 * lowering function: they are recorded in the context (first one wins), the
 * helper returns NULL, later helpers accept NULL names quietly, and the
 * framework rejects the node afterwards. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "util/floatfmt.h"

/* ------------------------------------------------------------- context */

const ctosa_onnx_node *lw_node(const lower_ctx *c) { return c->node; }
const ctosa_spec *lw_spec(const lower_ctx *c) { return c->spec; }
int64_t lw_opset(const lower_ctx *c) { return c->s->opset; }
ctosa_graph *lw_graph(lower_ctx *c) { return c->g; }
ctosa_block *lw_block(lower_ctx *c) { return c->b; }
arena *lw_arena(lower_ctx *c) { return c->scratch; }

void lw_fail(lower_ctx *c, lower_code code, const char *input, const char *fmt, ...) {
    if (c->rejected) return;
    c->rejected = true;
    c->code = code;
    c->rej_input = input ? arena_strdup(c->scratch, input) : NULL;
    va_list ap;
    va_start(ap, fmt);
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->msg = arena_strdup(c->scratch, buf);
}

lower_status lw_reject(lower_ctx *c, lower_code code, const char *input, const char *fmt, ...) {
    if (!c->rejected) {
        va_list ap;
        va_start(ap, fmt);
        char buf[1024];
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        lw_fail(c, code, input, "%s", buf);
    }
    return LOWER_REJECT;
}

/* -------------------------------------------------------------- dtypes */

bool lw_spec_has_int64(const ctosa_spec *spec) { return (spec->extensions & CTOSA_EXT_BIT(INT64)) != 0; }

ctosa_dtype lw_dtype_for(const ctosa_spec *spec, int32_t onnx_dtype) {
    switch (onnx_dtype) {
    case CTOSA_ONNX_FLOAT: return CTOSA_DTYPE_FP32;
    case CTOSA_ONNX_FLOAT16: return CTOSA_DTYPE_FP16;
    case CTOSA_ONNX_BFLOAT16: return CTOSA_DTYPE_BF16;
    case CTOSA_ONNX_INT8: return CTOSA_DTYPE_INT8;
    case CTOSA_ONNX_INT16: return CTOSA_DTYPE_INT16;
    case CTOSA_ONNX_INT32: return CTOSA_DTYPE_INT32;
    case CTOSA_ONNX_BOOL: return CTOSA_DTYPE_BOOL;
    case CTOSA_ONNX_INT64: return lw_spec_has_int64(spec) ? CTOSA_DTYPE_INT64 : CTOSA_DTYPE_INT32;
    case CTOSA_ONNX_FLOAT8E4M3FN: return CTOSA_DTYPE_FP8E4M3;
    case CTOSA_ONNX_FLOAT8E5M2: return CTOSA_DTYPE_FP8E5M2;
    default: return CTOSA_DTYPE_UNKNOWN;
    }
}

int32_t lw_onnx_of_tosa(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_FP32: return CTOSA_ONNX_FLOAT;
    case CTOSA_DTYPE_FP16: return CTOSA_ONNX_FLOAT16;
    case CTOSA_DTYPE_BF16: return CTOSA_ONNX_BFLOAT16;
    case CTOSA_DTYPE_INT8: return CTOSA_ONNX_INT8;
    case CTOSA_DTYPE_INT16: return CTOSA_ONNX_INT16;
    case CTOSA_DTYPE_INT32: return CTOSA_ONNX_INT32;
    case CTOSA_DTYPE_INT64: return CTOSA_ONNX_INT64;
    case CTOSA_DTYPE_BOOL: return CTOSA_ONNX_BOOL;
    case CTOSA_DTYPE_FP8E4M3: return CTOSA_ONNX_FLOAT8E4M3FN;
    case CTOSA_DTYPE_FP8E5M2: return CTOSA_ONNX_FLOAT8E5M2;
    default: return CTOSA_ONNX_UNDEFINED;
    }
}

ctosa_dtype lw_tosa_dtype(const lower_ctx *c, int32_t onnx_dtype) {
    return lw_dtype_for(c->spec, onnx_dtype);
}

bool lw_int64_fits(lower_session *s, lw_val *v) {
    if (v->fits_i32 >= 0) return v->fits_i32 == 1;
    const uint8_t *p = v->v.data;
    uint64_t n = v->v.nbytes / 8;
    v->fits_i32 = 1;
    for (uint64_t i = 0; i < n; i++) {
        int64_t x = (int64_t)rd_u64(p + 8 * i);
        if (x < INT32_MIN || x > INT32_MAX) {
            v->fits_i32 = 0;
            v->bad_value = x;
            return false;
        }
    }
    uint8_t *q = arena_alloc(&s->a, n * 4 + 1);
    if (!q) {
        v->fits_i32 = 0;
        v->bad_value = 0;
        return false;
    }
    for (uint64_t i = 0; i < n; i++) wr_u32(q + 4 * i, (uint32_t)(int32_t)(int64_t)rd_u64(p + 8 * i));
    v->narrow = q;
    return true;
}

/* -------------------------------------------------------------- inputs */

uint32_t lw_n_inputs(const lower_ctx *c) { return c->node->n_inputs; }

bool lw_has_input(const lower_ctx *c, uint32_t i) {
    return i < c->node->n_inputs && c->node->inputs[i][0] != 0;
}

const lower_value *lw_in(lower_ctx *c, uint32_t i) {
    if (!lw_has_input(c, i)) return NULL;
    if (c->in_cache[i]) return c->in_cache[i];
    lw_val *v = lw_lookup(c->s, c->node->inputs[i]);
    if (!v || !v->known) return NULL;
    lower_value *cp = arena_memdup(c->scratch, &v->v, sizeof v->v);
    if (!cp) {
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    if (v->v.data) {
        cp->t = lw_dtype_for(c->spec, v->v.onnx_dtype);
        if (v->v.onnx_dtype == CTOSA_ONNX_INT64 && !lw_spec_has_int64(c->spec) && !lw_int64_fits(c->s, v))
            cp->t = CTOSA_DTYPE_INT64; /* materialising it rejects the node */
    }
    c->in_cache[i] = cp;
    return cp;
}

static bool valid_name(lower_ctx *c, const char *name) {
    return !ctosa_block_find_tensor(c->g, c->b, name) && !(c->reserved && strmap_has(c->reserved, name));
}

const char *lw_unique_name(lower_ctx *c, const char *hint) {
    const char *base = hint ? hint : c->label;
    char buf[512];
    for (;;) {
        snprintf(buf, sizeof buf, "%.400s:%u", base, (*c->counter)++);
        if (valid_name(c, buf)) break;
    }
    return arena_strdup(c->scratch, buf);
}

static bool to_i32_shape(lower_ctx *c, uint32_t rank, const int64_t *shape, int32_t *out) {
    if (rank > LOWER_MAX_RANK) {
        lw_fail(c, LOWER_LEVEL_LIMIT, NULL, "rank %u exceeds the %u dimensions ctosa lowers", rank,
                LOWER_MAX_RANK);
        return false;
    }
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] < 0 || shape[i] > INT32_MAX) {
            lw_fail(c, shape[i] < 0 ? LOWER_DYNAMIC_SHAPE : LOWER_LEVEL_LIMIT, NULL, "dimension %u is %lld",
                    i, (long long)shape[i]);
            return false;
        }
        out[i] = (int32_t)shape[i];
    }
    return true;
}

/* Adds tensor `name` + a CONST op producing it from borrowed/copied data. */
static const char *add_const(lower_ctx *c, const char *name, ctosa_dtype t, uint32_t rank,
                             const int64_t *shape, const void *data, uint64_t nbytes, bool copy) {
    int32_t s32[LOWER_MAX_RANK];
    if (!to_i32_shape(c, rank, shape, s32)) return NULL;
    ctosa_tensor *tt = NULL;
    ctosa_error *e = ctosa_block_add_tensor(c->g, c->b, name, t, rank, s32, &tt);
    if (!e) e = ctosa_tensor_set_data(c->g, tt, data, nbytes, copy);
    const char *nm = tt ? tt->name : NULL;
    if (!e) e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST, 0, NULL, 1, &nm, NULL, NULL);
    if (e) {
        lw_fail(c, LOWER_INTERNAL, NULL, "constant '%s': %s", name, ctosa_error_message(e));
        ctosa_error_free(e);
        return NULL;
    }
    return nm;
}

const char *lw_input(lower_ctx *c, uint32_t i) {
    if (!lw_has_input(c, i)) {
        lw_fail(c, LOWER_INTERNAL, NULL, "input %u is absent", i);
        return NULL;
    }
    const char *onnx_name = c->node->inputs[i];
    const char *have = strmap_get(c->tmap, onnx_name);
    if (have) return have;
    const lower_value *in = lw_in(c, i);
    lw_val *v = lw_lookup(c->s, onnx_name);
    if (!in || !v || !v->v.data) {
        lw_fail(c, LOWER_INPUT_FALLBACK, onnx_name, "input '%s' is not available", onnx_name);
        return NULL;
    }
    const void *data = v->v.data;
    uint64_t nbytes = v->v.nbytes;
    if (in->t == CTOSA_DTYPE_UNKNOWN) {
        const char *dn = ctosa_onnx_dtype_name(v->v.onnx_dtype);
        lw_fail(c, LOWER_UNSUPPORTED_DTYPE, onnx_name,
                "constant '%s' has ONNX type %s, which TOSA has no type for", onnx_name, dn ? dn : "?");
        return NULL;
    }
    if (v->v.onnx_dtype == CTOSA_ONNX_INT64 && in->t == CTOSA_DTYPE_INT32) {
        data = v->narrow;
        nbytes = v->v.nbytes / 2;
    } else if (v->v.onnx_dtype == CTOSA_ONNX_INT64 && !lw_spec_has_int64(c->spec)) {
        lw_fail(c, LOWER_INT64_NOT_ENABLED, onnx_name,
                "int64 constant '%s' holds %lld, outside the int32 range, and the spec has no int64 "
                "(TOSA-1.1+...+int64)",
                onnx_name, (long long)v->bad_value);
    }
    const char *name =
        valid_name(c, onnx_name) ? arena_strdup(c->scratch, onnx_name) : lw_unique_name(c, onnx_name);
    const char *nm = add_const(c, name, in->t, in->rank, in->shape, data, nbytes, false);
    if (nm) strmap_put(c->tmap, onnx_name, (void *)nm);
    return nm;
}

static int64_t elem_count(const lower_value *v) {
    int64_t n = 1;
    for (uint32_t i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}

/* double -> int64 saturating (NaN -> 0): a cast of an out-of-range value
 * is undefined behaviour, and constants come from untrusted models. */
static int64_t sat_i64(double f) {
    if (f != f) return 0;
    if (f >= 0x1p63) return INT64_MAX;
    if (f < -0x1p63) return INT64_MIN;
    return (int64_t)f;
}

/* Element k of ONNX-encoded data as double / int64. */
static bool load_elem(int32_t dt, const uint8_t *p, uint64_t k, double *d, int64_t *x) {
    switch (dt) {
    case CTOSA_ONNX_FLOAT: {
        uint32_t u = rd_u32(p + 4 * k);
        float f;
        memcpy(&f, &u, 4);
        *d = f;
        *x = sat_i64(f);
        return true;
    }
    case CTOSA_ONNX_DOUBLE: {
        uint64_t u = rd_u64(p + 8 * k);
        double f;
        memcpy(&f, &u, 8);
        *d = f;
        *x = sat_i64(f);
        return true;
    }
    case CTOSA_ONNX_FLOAT16:
        *d = ff_fp16_to_f32(rd_u16(p + 2 * k));
        *x = sat_i64(*d);
        return true;
    case CTOSA_ONNX_BFLOAT16:
        *d = ff_bf16_to_f32(rd_u16(p + 2 * k));
        *x = sat_i64(*d);
        return true;
    case CTOSA_ONNX_INT8: *x = (int8_t)p[k]; break;
    case CTOSA_ONNX_UINT8: *x = p[k]; break;
    case CTOSA_ONNX_BOOL: *x = p[k] != 0; break;
    case CTOSA_ONNX_INT16: *x = (int16_t)rd_u16(p + 2 * k); break;
    case CTOSA_ONNX_UINT16: *x = rd_u16(p + 2 * k); break;
    case CTOSA_ONNX_INT32: *x = (int32_t)rd_u32(p + 4 * k); break;
    case CTOSA_ONNX_UINT32: *x = rd_u32(p + 4 * k); break;
    case CTOSA_ONNX_INT64: *x = (int64_t)rd_u64(p + 8 * k); break;
    case CTOSA_ONNX_UINT64: *x = (int64_t)rd_u64(p + 8 * k); break;
    default: return false;
    }
    *d = (double)*x;
    return true;
}

static int64_t const_conv(lower_ctx *c, uint32_t i, double **fd, int64_t **fi) {
    const lower_value *in = lw_in(c, i);
    if (!in || !in->data) return -1;
    int64_t n = elem_count(in);
    if (n < 0) return -1;
    void *buf = arena_alloc(c->scratch, (size_t)n * 8 + 8);
    if (!buf) return -1;
    for (int64_t k = 0; k < n; k++) {
        double d;
        int64_t x;
        if (!load_elem(in->onnx_dtype, in->data, (uint64_t)k, &d, &x)) return -1;
        if (fd) ((double *)buf)[k] = d;
        else ((int64_t *)buf)[k] = x;
    }
    if (fd) *fd = buf;
    else *fi = buf;
    return n;
}

int64_t lw_const_f64(lower_ctx *c, uint32_t i, const double **out) {
    double *d = NULL;
    int64_t n = const_conv(c, i, &d, NULL);
    *out = d;
    return n;
}

int64_t lw_const_i64(lower_ctx *c, uint32_t i, const int64_t **out) {
    int64_t *x = NULL;
    int64_t n = const_conv(c, i, NULL, &x);
    *out = x;
    return n;
}

/* ---------------------------------------------------------- attributes */

int64_t lw_attr_int(const lower_ctx *c, const char *name, int64_t dflt) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(c->node, name);
    if (!a) return dflt;
    if (a->type == CTOSA_ONNX_ATTR_INT) return a->i;
    if (a->type == CTOSA_ONNX_ATTR_FLOAT) return sat_i64(a->f);
    return dflt;
}

float lw_attr_float(const lower_ctx *c, const char *name, float dflt) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(c->node, name);
    if (!a) return dflt;
    if (a->type == CTOSA_ONNX_ATTR_FLOAT) return a->f;
    if (a->type == CTOSA_ONNX_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *lw_attr_str(lower_ctx *c, const char *name, const char *dflt) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(c->node, name);
    if (!a || a->type != CTOSA_ONNX_ATTR_STRING) return dflt;
    char *s = arena_strndup(c->scratch, (const char *)a->s.p, (size_t)a->s.n);
    return s ? s : dflt;
}

int64_t lw_attr_ints(const lower_ctx *c, const char *name, const int64_t **v) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(c->node, name);
    *v = NULL;
    if (!a) return -1;
    if (a->type == CTOSA_ONNX_ATTR_INTS) {
        *v = a->ints;
        return a->count;
    }
    if (a->type == CTOSA_ONNX_ATTR_INT) {
        *v = &a->i;
        return 1;
    }
    return -1;
}

int64_t lw_attr_floats(const lower_ctx *c, const char *name, const float **v) {
    const ctosa_onnx_attr *a = ctosa_onnx_node_attr(c->node, name);
    *v = NULL;
    if (!a) return -1;
    if (a->type == CTOSA_ONNX_ATTR_FLOATS) {
        *v = a->floats;
        return a->count;
    }
    if (a->type == CTOSA_ONNX_ATTR_FLOAT) {
        *v = &a->f;
        return 1;
    }
    return -1;
}

bool lw_has_attr(const lower_ctx *c, const char *name) { return ctosa_onnx_node_attr(c->node, name) != NULL; }

/* ------------------------------------------------------------ emitting */

const char *lw_tensor(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape) {
    if (c->rejected && c->code == LOWER_INTERNAL) return NULL;
    int32_t s32[LOWER_MAX_RANK];
    if (!to_i32_shape(c, rank, shape, s32)) return NULL;
    const char *name = lw_unique_name(c, NULL);
    ctosa_tensor *tt = NULL;
    ctosa_error *e = name ? ctosa_block_add_tensor(c->g, c->b, name, t, rank, s32, &tt) : ctosa_error_nomem();
    if (e) {
        lw_fail(c, LOWER_INTERNAL, NULL, "tensor: %s", ctosa_error_message(e));
        ctosa_error_free(e);
        return NULL;
    }
    return tt->name;
}

const char *lw_const(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape, const void *data) {
    uint64_t n = 1, bytes = 0;
    for (uint32_t i = 0; i < rank; i++) n *= (uint64_t)(shape[i] < 0 ? 0 : shape[i]);
    if (!ctosa_dtype_storage_size(t, n, &bytes)) {
        lw_fail(c, LOWER_LEVEL_LIMIT, NULL, "constant of %llu elements is too large", (unsigned long long)n);
        return NULL;
    }
    return add_const(c, lw_unique_name(c, NULL), t, rank, shape, data, bytes, true);
}

static int64_t sat_round(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    double r = nearbyint(v);
    if (r <= (double)lo) return lo;
    if (r >= (double)hi) return hi;
    return (int64_t)r;
}

const char *lw_const_from_f64(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape,
                              const double *v) {
    uint64_t n = 1, bytes = 0;
    for (uint32_t i = 0; i < rank; i++) n *= (uint64_t)(shape[i] < 0 ? 0 : shape[i]);
    if (!ctosa_dtype_storage_size(t, n, &bytes) || bytes > ((uint64_t)1 << 40)) {
        lw_fail(c, LOWER_LEVEL_LIMIT, NULL, "constant of %llu elements is too large", (unsigned long long)n);
        return NULL;
    }
    uint8_t *p = arena_zalloc(c->scratch, (size_t)bytes + 8);
    if (!p) {
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    for (uint64_t k = 0; k < n; k++) {
        double x = v[k];
        switch (t) {
        case CTOSA_DTYPE_FP32: {
            float f = (float)x;
            memcpy(p + 4 * k, &f, 4);
            break;
        }
        case CTOSA_DTYPE_FP16: wr_u16(p + 2 * k, ff_f32_to_fp16((float)x)); break;
        case CTOSA_DTYPE_BF16: wr_u16(p + 2 * k, ff_f32_to_bf16((float)x)); break;
        case CTOSA_DTYPE_FP8E4M3: p[k] = ff_f32_to_fp8e4m3((float)x); break;
        case CTOSA_DTYPE_FP8E5M2: p[k] = ff_f32_to_fp8e5m2((float)x); break;
        case CTOSA_DTYPE_BOOL: p[k] = x != 0; break;
        case CTOSA_DTYPE_INT8: p[k] = (uint8_t)(int8_t)sat_round(x, INT8_MIN, INT8_MAX); break;
        case CTOSA_DTYPE_INT16:
            wr_u16(p + 2 * k, (uint16_t)(int16_t)sat_round(x, INT16_MIN, INT16_MAX));
            break;
        case CTOSA_DTYPE_INT32:
            wr_u32(p + 4 * k, (uint32_t)(int32_t)sat_round(x, INT32_MIN, INT32_MAX));
            break;
        case CTOSA_DTYPE_INT48: {
            uint64_t u = (uint64_t)sat_round(x, -((int64_t)1 << 47), ((int64_t)1 << 47) - 1);
            for (int b = 0; b < 6; b++) p[6 * k + (uint64_t)b] = (uint8_t)(u >> (8 * b));
            break;
        }
        case CTOSA_DTYPE_INT64:
        case CTOSA_DTYPE_SHAPE: wr_u64(p + 8 * k, (uint64_t)sat_round(x, INT64_MIN, INT64_MAX)); break;
        case CTOSA_DTYPE_INT4: {
            uint8_t q = (uint8_t)(sat_round(x, -8, 7) & 15);
            p[k / 2] |= (uint8_t)(k % 2 ? q << 4 : q);
            break;
        }
        default:
            lw_fail(c, LOWER_UNSUPPORTED_DTYPE, NULL, "no constants of type %s",
                    ctosa_dtype_short(t) ? ctosa_dtype_short(t) : "?");
            return NULL;
        }
    }
    return add_const(c, lw_unique_name(c, NULL), t, rank, shape, p, bytes, true);
}

const char *lw_scalar(lower_ctx *c, ctosa_dtype t, uint32_t rank, double v) {
    int64_t ones[LOWER_MAX_RANK];
    if (rank > LOWER_MAX_RANK) rank = LOWER_MAX_RANK;
    for (uint32_t i = 0; i < rank; i++) ones[i] = 1;
    return lw_const_from_f64(c, t, rank, ones, &v);
}

const char *lw_zero_point(lower_ctx *c, ctosa_dtype t, int64_t zp) {
    int64_t one = 1;
    double v = (double)zp;
    return lw_const_from_f64(c, t, 1, &one, &v);
}

const char *lw_shape(lower_ctx *c, uint32_t n, const int64_t *v) {
    const char *name = lw_unique_name(c, NULL);
    ctosa_tensor *t = NULL;
    ctosa_error *e = ctosa_block_add_shape(c->g, c->b, name, n, v, &t);
    const char *nm = t ? t->name : NULL;
    if (!e) e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, &nm, NULL, NULL);
    if (e) {
        lw_fail(c, LOWER_INTERNAL, NULL, "shape: %s", ctosa_error_message(e));
        ctosa_error_free(e);
        return NULL;
    }
    return nm;
}

ctosa_op *lw_op(lower_ctx *c, ctosa_op_kind kind, uint32_t n_in, const char *const *in, uint32_t n_out,
                const char *const *out, const ctosa_attr *attr) {
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i]) {
            if (!c->rejected)
                lw_fail(c, LOWER_INTERNAL, NULL, "%s: input %u was not produced", ctosa_op_name(kind), i);
            return NULL;
        }
    for (uint32_t i = 0; i < n_out; i++)
        if (!out[i]) {
            if (!c->rejected)
                lw_fail(c, LOWER_INTERNAL, NULL, "%s: output %u was not created", ctosa_op_name(kind), i);
            return NULL;
        }
    ctosa_op *op = NULL;
    ctosa_error *e = ctosa_block_add_op(c->g, c->b, kind, n_in, in, n_out, out, attr, &op);
    if (e) {
        lw_fail(c, LOWER_INTERNAL, NULL, "%s: %s", ctosa_op_name(kind) ? ctosa_op_name(kind) : "?",
                ctosa_error_message(e));
        ctosa_error_free(e);
        return NULL;
    }
    /* The ONNX node an operator came from, for dumps and messages. */
    ctosa_error_free(ctosa_op_set_location(c->g, op, c->label));
    return op;
}

const char *lw_unary(lower_ctx *c, ctosa_op_kind kind, const char *x, ctosa_dtype out_t, uint32_t rank,
                     const int64_t *shape, const ctosa_attr *attr) {
    if (!x) return NULL;
    const char *o = lw_tensor(c, out_t, rank, shape);
    return lw_op(c, kind, 1, &x, 1, &o, attr) ? o : NULL;
}

const char *lw_binary(lower_ctx *c, ctosa_op_kind kind, const char *a, const char *b, ctosa_dtype out_t,
                      uint32_t rank, const int64_t *shape) {
    if (!a || !b) return NULL;
    const char *o = lw_tensor(c, out_t, rank, shape);
    const char *in[2] = {a, b};
    return lw_op(c, kind, 2, in, 1, &o, NULL) ? o : NULL;
}

const char *lw_transpose(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *in_shape,
                         const int32_t *perm) {
    if (!x) return NULL;
    if (rank > LOWER_MAX_RANK) {
        lw_fail(c, LOWER_LEVEL_LIMIT, NULL, "transpose of rank %u", rank);
        return NULL;
    }
    int64_t out[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) {
        if (perm[i] < 0 || (uint32_t)perm[i] >= rank) {
            lw_fail(c, LOWER_INTERNAL, NULL, "transpose permutation entry %d out of range", perm[i]);
            return NULL;
        }
        out[i] = in_shape[perm[i]];
    }
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.perms.v = perm;
    a.perms.n = rank;
    return lw_unary(c, CTOSA_OP_TRANSPOSE, x, t, rank, out, &a);
}

const char *lw_reshape(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, const int64_t *new_shape) {
    if (!x) return NULL;
    const char *shp = lw_shape(c, rank, new_shape);
    if (!shp) return NULL;
    const char *o = lw_tensor(c, t, rank, new_shape);
    const char *in[2] = {x, shp};
    return lw_op(c, CTOSA_OP_RESHAPE, 2, in, 1, &o, NULL) ? o : NULL;
}

const char *lw_cast(lower_ctx *c, const char *x, ctosa_dtype from, ctosa_dtype to, uint32_t rank,
                    const int64_t *shape) {
    if (!x) return NULL;
    if (from == to) return x;
    return lw_unary(c, CTOSA_OP_CAST, x, to, rank, shape, NULL);
}

const ctosa_tensor *lw_tensor_info(lower_ctx *c, const char *name) {
    return name ? ctosa_block_find_tensor(c->g, c->b, name) : NULL;
}

/* ------------------------------------------------------------- outputs */

void lw_set_output(lower_ctx *c, uint32_t i, const char *name) {
    if (i >= c->node->n_outputs) {
        lw_fail(c, LOWER_INTERNAL, NULL, "output %u does not exist (node has %u)", i, c->node->n_outputs);
        return;
    }
    if (!name) return;
    if (!ctosa_block_find_tensor(c->g, c->b, name)) {
        lw_fail(c, LOWER_INTERNAL, NULL, "output %u is bound to unknown tensor '%s'", i, name);
        return;
    }
    c->out_names[i] = name;
    c->out_is_const[i] = false;
}

void lw_set_output_const(lower_ctx *c, uint32_t i, int32_t onnx_dtype, uint32_t rank, const int64_t *shape,
                         const void *data, uint64_t nbytes) {
    if (i >= c->node->n_outputs) {
        lw_fail(c, LOWER_INTERNAL, NULL, "output %u does not exist (node has %u)", i, c->node->n_outputs);
        return;
    }
    if (rank > LOWER_MAX_RANK) {
        lw_fail(c, LOWER_LEVEL_LIMIT, NULL, "constant output of rank %u", rank);
        return;
    }
    uint64_t count = 1, need = 0;
    for (uint32_t k = 0; k < rank; k++) count *= (uint64_t)(shape[k] < 0 ? 0 : shape[k]);
    if (!ctosa_onnx_dtype_storage(onnx_dtype, count, &need) || need != nbytes) {
        lw_fail(c, LOWER_INTERNAL, NULL, "constant output %u: %llu bytes for %llu elements of %s", i,
                (unsigned long long)nbytes, (unsigned long long)count,
                ctosa_onnx_dtype_name(onnx_dtype) ? ctosa_onnx_dtype_name(onnx_dtype) : "?");
        return;
    }
    lower_value *v = &c->out_const[i];
    memset(v, 0, sizeof *v);
    v->name = c->node->outputs[i];
    v->onnx_dtype = onnx_dtype;
    v->t = lw_dtype_for(c->spec, onnx_dtype);
    v->rank = rank;
    for (uint32_t k = 0; k < rank; k++) v->shape[k] = shape[k];
    v->static_shape = true;
    void *d = arena_memdup(c->scratch, data ? data : "", nbytes ? (size_t)nbytes : 1);
    if (!d) {
        lw_fail(c, LOWER_INTERNAL, NULL, "out of memory");
        return;
    }
    v->data = d;
    v->nbytes = nbytes;
    c->out_is_const[i] = true;
    c->out_names[i] = NULL;
}
