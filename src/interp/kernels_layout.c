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
#define ROW_LOOP(T)                                                              \
    do {                                                                         \
        T *dp = (T *)(void *)(V->dst + (size_t)d * es);                          \
        const T *sp = (const T *)(const void *)(V->src + (size_t)s * es);        \
        for (int64_t j = 0; j < (int64_t)V->len; j++) dp[j * dls] = sp[j * sls]; \
    } while (0)
        switch (es) {
        case 1: ROW_LOOP(uint8_t); break;
        case 2: ROW_LOOP(uint16_t); break;
        case 4: ROW_LOOP(uint32_t); break;
        case 8: ROW_LOOP(uint64_t); break;
        default:
            for (uint64_t j = 0; j < V->len; j++)
                memcpy(V->dst + (size_t)(d + (int64_t)j * dls) * es,
                       V->src + (size_t)(s + (int64_t)j * sls) * es, es);
            break;
        }
#undef ROW_LOOP
    }
}

/* Drops dimensions of size 1 and merges neighbours that are contiguous in
 * both views (a run of dimensions a TRANSPOSE keeps in order becomes one),
 * so the loops below see the smallest rank. */
static void vcopy_simplify(vcopy *V) {
    uint32_t r = 0;
    for (uint32_t k = 0; k < V->rank; k++) {
        if (V->shape[k] == 1) continue;
        if (r && V->dst_st[r - 1] == V->shape[k] * V->dst_st[k] &&
            V->src_st[r - 1] == V->shape[k] * V->src_st[k]) {
            V->shape[r - 1] *= V->shape[k];
            V->dst_st[r - 1] = V->dst_st[k];
            V->src_st[r - 1] = V->src_st[k];
            continue;
        }
        V->shape[r] = V->shape[k];
        V->dst_st[r] = V->dst_st[k];
        V->src_st[r] = V->src_st[k];
        r++;
    }
    if (!r) { /* a single element */
        V->shape[0] = 1;
        V->dst_st[0] = V->src_st[0] = 1;
        r = 1;
    }
    V->rank = r;
}

/* Tiled copy for a view whose destination is contiguous along the last
 * dimension but whose source is contiguous along another one, p (a
 * TRANSPOSE that moves the innermost axis): the [shape[p], shape[last]]
 * plane of each outer index is copied in TT x TT tiles, so both the reads
 * and the writes of a tile stay within TT cache lines instead of every
 * read of a destination row touching another line. One job item is one
 * row of tiles of one plane. Also for a short last dimension (an image's
 * three channels moved last), where the row loop would pay an index
 * division for every three elements. */
#define TT 16
typedef struct tcopy {
    const vcopy *V;
    uint32_t p;
    uint64_t tiles_p; /* row tiles per plane */
} tcopy;

#define TILE_LOOP(T)                                                       \
    do {                                                                   \
        T *dp = (T *)(void *)(V->dst + (size_t)d * es);                    \
        const T *sp = (const T *)(const void *)(V->src + (size_t)s * es);  \
        for (int64_t jb = 0; jb < nl; jb += TT) {                          \
            int64_t je = jb + TT < nl ? jb + TT : nl;                      \
            for (int64_t i = ib; i < ie; i++) {                            \
                T *drow = dp + i * dps;                                    \
                const T *scol = sp + i;                                    \
                for (int64_t j = jb; j < je; j++) drow[j] = scol[j * sls]; \
            }                                                              \
        }                                                                  \
    } while (0)

static void tcopy_rows(void *vp, size_t begin, size_t end) {
    const tcopy *T = vp;
    const vcopy *V = T->V;
    size_t es = V->es;
    uint32_t last = V->rank - 1, p = T->p;
    int64_t np = V->shape[p], nl = V->shape[last], dps = V->dst_st[p], sls = V->src_st[last];
    for (size_t q = begin; q < end; q++) {
        uint64_t plane = q / T->tiles_p, rem = plane;
        int64_t ib = (int64_t)(q % T->tiles_p) * TT, ie = ib + TT < np ? ib + TT : np;
        int64_t d = V->dbase, s = V->sbase;
        for (int k = (int)last - 1; k >= 0; k--) {
            if ((uint32_t)k == p) continue;
            uint64_t n = (uint64_t)V->shape[k];
            int64_t i = (int64_t)(rem % n);
            rem /= n;
            d += i * V->dst_st[k];
            s += i * V->src_st[k];
        }
        switch (es) {
        case 1: TILE_LOOP(uint8_t); break;
        case 2: TILE_LOOP(uint16_t); break;
        case 4: TILE_LOOP(uint32_t); break;
        case 8: TILE_LOOP(uint64_t); break;
        default:
            for (int64_t i = ib; i < ie; i++)
                for (int64_t j = 0; j < nl; j++)
                    memcpy(V->dst + (size_t)(d + i * dps + j) * es, V->src + (size_t)(s + i + j * sls) * es,
                           es);
            break;
        }
    }
}
#undef TILE_LOOP

static void vcopy_run(const interp_op *o, vcopy *V) {
    for (uint32_t k = 0; k < V->rank; k++)
        if (V->shape[k] == 0) return;
    vcopy_simplify(V);
    uint32_t last = V->rank - 1;
    V->len = (uint64_t)V->shape[last];
    V->rows = 1;
    for (uint32_t k = 0; k + 1 < V->rank; k++) V->rows *= (uint64_t)V->shape[k];
    uint64_t total = V->rows * V->len;
    if (V->dst_st[last] == 1 && V->src_st[last] != 1 && V->len >= 2) {
        uint32_t p = last;
        for (uint32_t k = 0; k < last; k++)
            if (V->src_st[k] == 1 && V->shape[k] >= 4) p = k;
        if (p != last) {
            tcopy T = {V, p, ((uint64_t)V->shape[p] + TT - 1) / TT};
            uint64_t items = V->rows / (uint64_t)V->shape[p] * T.tiles_p;
            if (items > 1 && interp_par_worth(o->ctx, (double)total * INTERP_PAR_ELEM))
                interp_parallel_for(o->ctx, (size_t)items, tcopy_rows, &T);
            else tcopy_rows(&T, 0, (size_t)items);
            return;
        }
    }
    if (V->rows > 1 && interp_par_worth(o->ctx, (double)total * INTERP_PAR_ELEM))
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
