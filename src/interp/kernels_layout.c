/* kernels_layout.c - data layout operators: CONCAT, PAD, RESHAPE, REVERSE,
 * SLICE, TILE, TRANSPOSE, IDENTITY. They only move elements, so they work
 * on any dtype by element size.
 *
 * Every one of them is a strided copy: walk a shape, read the source at
 * sbase + sum(idx * src_st) and write the destination at dbase +
 * sum(idx * dst_st). SLICE, TRANSPOSE and REVERSE (negative stride) are a
 * source view; PAD writes the input into a view of the output; TILE walks
 * the output as [m0, s0, m1, s1, ...] with stride 0 on the repeat axes. */
#include <string.h>

#include "interp/int_math.h"

#define VMAX (2 * INTERP_MAX_RANK)

typedef struct vcopy {
    char *dst;
    const char *src;
    size_t es;
    uint32_t rank;
    int64_t shape[VMAX], dst_st[VMAX], src_st[VMAX];
    int64_t dbase, sbase;
    uint64_t rows, len; /* rows = product of all dims but the last */
} vcopy;

static void vcopy_rows(void *vp, size_t begin, size_t end) {
    vcopy *V = vp;
    size_t es = V->es;
    uint32_t last = V->rank ? V->rank - 1 : 0;
    int64_t dls = V->rank ? V->dst_st[last] : 1, sls = V->rank ? V->src_st[last] : 1;
    for (size_t r = begin; r < end; r++) {
        int64_t d = V->dbase, s = V->sbase;
        uint64_t rem = r;
        for (int k = (int)last - 1; k >= 0; k--) {
            uint64_t n = (uint64_t)V->shape[k];
            int64_t i = (int64_t)(rem % n);
            rem /= n;
            d += i * V->dst_st[k];
            s += i * V->src_st[k];
        }
        if (dls == 1 && sls == 1) {
            memcpy(V->dst + (size_t)d * es, V->src + (size_t)s * es, (size_t)V->len * es);
            continue;
        }
        for (uint64_t j = 0; j < V->len; j++) {
            char *dp = V->dst + (size_t)(d + (int64_t)j * dls) * es;
            const char *sp = V->src + (size_t)(s + (int64_t)j * sls) * es;
            switch (es) {
            case 1: *dp = *sp; break;
            case 2: memcpy(dp, sp, 2); break;
            case 4: memcpy(dp, sp, 4); break;
            default: memcpy(dp, sp, es); break;
            }
        }
    }
}

static void vcopy_run(const interp_op *o, vcopy *V) {
    V->len = V->rank ? (uint64_t)V->shape[V->rank - 1] : 1;
    V->rows = 1;
    for (uint32_t k = 0; k + 1 < V->rank; k++) V->rows *= (uint64_t)V->shape[k];
    if (V->len == 0 || V->rows == 0) return;
    if (V->rows * V->len >= (1u << 16) && V->rows > 1)
        interp_parallel_for(o->ctx, (size_t)V->rows, vcopy_rows, V);
    else vcopy_rows(V, 0, (size_t)V->rows);
}

/* Row-major element strides of t. */
static void strides_of(const itensor *t, int64_t *st) {
    int64_t s = 1;
    for (int d = (int)t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

static ctosa_error *same_dtype(const interp_op *o, const itensor *a, const itensor *b) {
    if (a->dtype != b->dtype)
        return interp_fail(o, "'%s' is %s but '%s' is %s", a->name, ctosa_dtype_short(a->dtype), b->name,
                           ctosa_dtype_short(b->dtype));
    return NULL;
}

/* A view over out (contiguous destination) reading in. */
static void view_init(vcopy *V, const itensor *in, const itensor *out) {
    memset(V, 0, sizeof *V);
    V->dst = out->data;
    V->src = in->data;
    V->es = interp_elem_size(out->dtype);
    V->rank = out->rank;
    for (uint32_t d = 0; d < out->rank; d++) V->shape[d] = out->shape[d];
    strides_of(out, V->dst_st);
}

ctosa_error *interp_k_IDENTITY(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    if (!interp_same_shape(in, out))
        return interp_fail(o, "output %s differs from input %s", interp_shape_str(out), interp_shape_str(in));
    if (out->count && out->data != in->data)
        memcpy(out->data, in->data, (size_t)(out->count * interp_elem_size(out->dtype)));
    return NULL;
}

ctosa_error *interp_k_RESHAPE(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    const int64_t *sv;
    uint64_t sn;
    if ((e = interp_shape_values(o, 1, &sv, &sn))) return e;
    bool match = sn == out->rank;
    for (uint64_t i = 0; match && i < sn; i++) match = sv[i] == out->shape[i] || sv[i] == -1;
    if (!match)
        return interp_fail(o, "shape input '%s' does not match output %s", o->in[1]->name,
                           interp_shape_str(out));
    if (in->count != out->count)
        return interp_fail(o, "input %s has %llu elements, output %s has %llu", interp_shape_str(in),
                           (unsigned long long)in->count, interp_shape_str(out),
                           (unsigned long long)out->count);
    if (out->count) memcpy(out->data, in->data, (size_t)(out->count * interp_elem_size(out->dtype)));
    return NULL;
}

ctosa_error *interp_k_REVERSE(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    int32_t axis = o->op->attr.axis;
    if (axis < 0 || (uint32_t)axis >= in->rank)
        return interp_fail(o, "axis %d is outside 0..%d", axis, (int)in->rank - 1);
    if (!interp_same_shape(in, out))
        return interp_fail(o, "output %s differs from input %s", interp_shape_str(out), interp_shape_str(in));
    vcopy V;
    view_init(&V, in, out);
    strides_of(in, V.src_st);
    if (in->shape[axis] > 0) {
        V.sbase = (in->shape[axis] - 1) * V.src_st[axis];
        V.src_st[axis] = -V.src_st[axis];
    }
    vcopy_run(o, &V);
    return NULL;
}

ctosa_error *interp_k_SLICE(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    const int64_t *start, *size;
    uint64_t ns, nz;
    if ((e = interp_shape_values(o, 1, &start, &ns)) || (e = interp_shape_values(o, 2, &size, &nz))) return e;
    if (ns != in->rank || nz != in->rank)
        return interp_fail(o, "start has %llu and size %llu values; input rank is %u", (unsigned long long)ns,
                           (unsigned long long)nz, in->rank);
    if (out->rank != in->rank)
        return interp_fail(o, "output rank %u differs from input rank %u", out->rank, in->rank);
    for (uint32_t d = 0; d < in->rank; d++) {
        if (start[d] < 0 || size[d] <= 0 || start[d] > in->shape[d] - size[d] || out->shape[d] != size[d])
            return interp_fail(o,
                               "dimension %u: start %lld size %lld does not fit input %s "
                               "giving output %s",
                               d, (long long)start[d], (long long)size[d], interp_shape_str(in),
                               interp_shape_str(out));
    }
    vcopy V;
    view_init(&V, in, out);
    strides_of(in, V.src_st);
    for (uint32_t d = 0; d < in->rank; d++) V.sbase += start[d] * V.src_st[d];
    vcopy_run(o, &V);
    return NULL;
}

ctosa_error *interp_k_TILE(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    const int64_t *mul;
    uint64_t nm;
    if ((e = interp_shape_values(o, 1, &mul, &nm))) return e;
    if (out->rank != in->rank || nm != in->rank)
        return interp_fail(o, "input rank %u, output rank %u and %llu multiples must agree", in->rank,
                           out->rank, (unsigned long long)nm);
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t want;
        if (mul[d] < 0 || __builtin_mul_overflow(in->shape[d], mul[d], &want) || want != out->shape[d])
            return interp_fail(o, "dimension %u: input %s times multiple %lld is not output %s", d,
                               interp_shape_str(in), (long long)mul[d], interp_shape_str(out));
    }
    vcopy V;
    memset(&V, 0, sizeof V);
    V.dst = out->data;
    V.src = in->data;
    V.es = interp_elem_size(out->dtype);
    int64_t ist[INTERP_MAX_RANK];
    strides_of(in, ist);
    V.rank = 2 * in->rank;
    for (uint32_t d = 0; d < in->rank; d++) {
        V.shape[2 * d] = mul[d];
        V.shape[2 * d + 1] = in->shape[d];
        V.src_st[2 * d] = 0;
        V.src_st[2 * d + 1] = ist[d];
    }
    int64_t s = 1;
    for (int k = (int)V.rank - 1; k >= 0; k--) {
        V.dst_st[k] = s;
        s *= V.shape[k];
    }
    vcopy_run(o, &V);
    return NULL;
}

ctosa_error *interp_k_TRANSPOSE(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    ctosa_i32s perms = o->op->attr.perms;
    if (out->rank != in->rank || perms.n != in->rank)
        return interp_fail(o, "input rank %u, output rank %u and %u perms must agree", in->rank, out->rank,
                           perms.n);
    bool used[INTERP_MAX_RANK] = {0};
    for (uint32_t d = 0; d < perms.n; d++) {
        int32_t p = perms.v[d];
        if (p < 0 || (uint32_t)p >= in->rank || used[p])
            return interp_fail(o, "perms[%u] = %d is out of range or repeated", d, p);
        used[p] = true;
        if (out->shape[d] != in->shape[p])
            return interp_fail(o, "output %s is not input %s permuted", interp_shape_str(out),
                               interp_shape_str(in));
    }
    vcopy V;
    view_init(&V, in, out);
    int64_t ist[INTERP_MAX_RANK];
    strides_of(in, ist);
    for (uint32_t d = 0; d < in->rank; d++) V.src_st[d] = ist[perms.v[d]];
    vcopy_run(o, &V);
    return NULL;
}

ctosa_error *interp_k_PAD(const interp_op *o) {
    const itensor *in = o->in[0], *out = o->out[0];
    ctosa_error *e = same_dtype(o, in, out);
    if (e) return e;
    const int64_t *pad;
    uint64_t np;
    if ((e = interp_shape_values(o, 1, &pad, &np))) return e;
    if (out->rank != in->rank || np != 2 * (uint64_t)in->rank)
        return interp_fail(o, "padding has %llu values; input rank %u needs %u", (unsigned long long)np,
                           in->rank, 2 * in->rank);
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t want;
        if (pad[2 * d] < 0 || pad[2 * d + 1] < 0 ||
            __builtin_add_overflow(pad[2 * d], pad[2 * d + 1], &want) ||
            __builtin_add_overflow(want, in->shape[d], &want) || want != out->shape[d])
            return interp_fail(o,
                               "dimension %u: padding %lld,%lld around input %s does not give "
                               "output %s",
                               d, (long long)pad[2 * d], (long long)pad[2 * d + 1], interp_shape_str(in),
                               interp_shape_str(out));
    }
    size_t es = interp_elem_size(out->dtype);
    /* pad_const: a one-element tensor of the element type (0 if absent). */
    char fill[8] = {0};
    if (o->n_in > 2) {
        const itensor *pc = o->in[2];
        if (pc->count < 1) return interp_fail(o, "pad_const '%s' is empty", pc->name);
        if (pc->dtype != out->dtype)
            return interp_fail(o, "pad_const '%s' is %s, the input is %s", pc->name,
                               ctosa_dtype_short(pc->dtype), ctosa_dtype_short(out->dtype));
        memcpy(fill, pc->data, es);
    }
    char *dst = out->data;
    bool zero = true;
    for (size_t k = 0; k < es; k++) zero &= fill[k] == 0;
    if (zero) memset(dst, 0, (size_t)(out->count * es));
    else
        for (uint64_t i = 0; i < out->count; i++) memcpy(dst + i * es, fill, es);
    vcopy V;
    memset(&V, 0, sizeof V);
    V.dst = out->data;
    V.src = in->data;
    V.es = es;
    V.rank = in->rank;
    for (uint32_t d = 0; d < in->rank; d++) V.shape[d] = in->shape[d];
    strides_of(out, V.dst_st);
    strides_of(in, V.src_st);
    for (uint32_t d = 0; d < in->rank; d++) V.dbase += pad[2 * d] * V.dst_st[d];
    if (in->count) vcopy_run(o, &V);
    return NULL;
}

ctosa_error *interp_k_CONCAT(const interp_op *o) {
    const itensor *out = o->out[0], *first = o->in[0];
    int32_t axis = o->op->attr.axis;
    if (first->rank == 0) return interp_fail(o, "inputs must have rank 1 or more");
    if (axis < 0 || (uint32_t)axis >= first->rank)
        return interp_fail(o, "axis %d is outside 0..%d", axis, (int)first->rank - 1);
    if (out->rank != first->rank)
        return interp_fail(o, "output rank %u differs from input rank %u", out->rank, first->rank);
    int64_t sum = 0;
    for (uint32_t k = 0; k < o->n_in; k++) {
        const itensor *t = o->in[k];
        ctosa_error *e = same_dtype(o, t, out);
        if (e) return e;
        if (t->rank != first->rank)
            return interp_fail(o, "input '%s' has rank %u, input '%s' rank %u", t->name, t->rank, first->name,
                               first->rank);
        for (uint32_t d = 0; d < t->rank; d++)
            if (d != (uint32_t)axis && t->shape[d] != out->shape[d])
                return interp_fail(o, "input '%s' %s does not match output %s outside axis %d", t->name,
                                   interp_shape_str(t), interp_shape_str(out), axis);
        sum += t->shape[axis];
    }
    if (sum != out->shape[axis])
        return interp_fail(o, "inputs give %lld along axis %d, output %s", (long long)sum, axis,
                           interp_shape_str(out));
    size_t es = interp_elem_size(out->dtype);
    uint64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= (uint64_t)out->shape[d];
    for (uint32_t d = (uint32_t)axis + 1; d < out->rank; d++) inner *= (uint64_t)out->shape[d];
    char *dst = out->data;
    uint64_t orow = (uint64_t)out->shape[axis] * inner * es;
    uint64_t at = 0;
    for (uint32_t k = 0; k < o->n_in; k++) {
        const itensor *t = o->in[k];
        uint64_t chunk = (uint64_t)t->shape[axis] * inner * es;
        for (uint64_t i = 0; i < outer && chunk; i++)
            memcpy(dst + i * orow + at, (const char *)t->data + i * chunk, (size_t)chunk);
        at += chunk;
    }
    return NULL;
}
