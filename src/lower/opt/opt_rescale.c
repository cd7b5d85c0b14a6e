/* opt_rescale.c - merges chains of RESCALE operators in a lowered partition.
 *
 * Why: quantized lowerings requantize at every boundary, so one
 * QuantizeLinear after a convolution becomes RESCALE(int32 -> int8) then
 * RESCALE(int8 -> uint8), and the next operator's input RESCALE(uint8 ->
 * int8) follows: three passes over the activation where one does the work.
 *
 * A pair x -> R1 -> y -> R2 -> z is replaced by one RESCALE x -> z only
 * where the result is provably the same for every input, including the
 * inputs for which the pseudocode's REQUIREs fail (they fail in both forms
 * or in neither). With r = apply_scale(x - a1) the scaled value of R1 and
 * (a, b) the input and output zero points:
 *
 *  - R2 has unit scale (multiplier 2^shift in every channel): R2 computes
 *    z = clamp(y - a2 + b2), so z = clamp(clamp(r + b1, T1) + k, T2) with
 *    k = b2 - a2. When T1 shifted by k covers T2, the inner clamp never
 *    decides anything the outer one does not, and z = clamp(r + b1 + k, T2):
 *    R1 with R2's output type and output zero point b1 + k.
 *  - R1 has unit scale and its clamp never binds on any input value: y is
 *    x - a1 + b1 exactly, so R2 can read x with input zero point
 *    a1 - b1 + a2 (R2's scale and output unchanged).
 *
 * Both need R1's output read by R2 the way R1 wrote it (R1's
 * output_unsigned equal to R2's input_unsigned), the merged zero point
 * representable, and the merged type and flag combination one the
 * validator accepts. The first rule also needs R2 to be y's only reader
 * (else R1's scaling would run twice, once in the merged operator and once
 * for the other readers); the second does not (R2 costs the same reading x,
 * and R1 stays while others read y; liveness drops it otherwise). A
 * unit-scale RESCALE from a type to itself with equal zero points and no
 * unsigned flags is an identity and disappears. */
#include <stdlib.h>
#include <string.h>

#include "lower/opt/opt_transpose_int.h"

typedef struct rsc {
    ctosa_dtype ti, to;
    bool iu, ou, scale32, per_channel;
    ctosa_rounding_mode round;
    int64_t izp, ozp; /* after the extension the pseudocode applies */
    uint32_t nc;
    uint32_t in, mult, shift, izp_t, ozp_t; /* tensor indices */
} rsc;

static int type_bytes(ctosa_dtype t) {
    return t == CTOSA_DTYPE_INT8 ? 1 : t == CTOSA_DTYPE_INT16 ? 2 : t == CTOSA_DTYPE_INT32 ? 4 : 0;
}

static bool const_elems(const ot *s, uint32_t t, uint64_t *n) {
    const ot_tensor *x = &s->t[t];
    int b = type_bytes(x->dtype);
    if (!b || !ot_is_const(s, t) || x->data.kind != CTOSA_DATA_MEMORY || !x->data.ptr) return false;
    uint64_t count = 1;
    for (uint32_t d = 0; d < x->rank; d++) count *= (uint64_t)(x->shape[d] > 0 ? x->shape[d] : 0);
    if (x->data.size != count * (uint64_t)b) return false;
    *n = count;
    return true;
}

/* Element i of an integer constant (checked by const_elems), sign-extended. */
static int64_t const_at(const ot *s, uint32_t t, uint64_t i) {
    const uint8_t *p = s->t[t].data.ptr;
    switch (s->t[t].dtype) {
    case CTOSA_DTYPE_INT8: return (int8_t)p[i];
    case CTOSA_DTYPE_INT16: return (int16_t)rd_u16(p + 2 * i);
    default: return (int32_t)rd_u32(p + 4 * i);
    }
}

static void type_range(ctosa_dtype t, bool uns, int64_t *lo, int64_t *hi) {
    int bits = t == CTOSA_DTYPE_INT8 ? 8 : t == CTOSA_DTYPE_INT16 ? 16 : 32;
    if (uns) {
        *lo = 0;
        *hi = (INT64_C(1) << bits) - 1;
    } else {
        *lo = -(INT64_C(1) << (bits - 1));
        *hi = (INT64_C(1) << (bits - 1)) - 1;
    }
}

/* Reads a RESCALE whose parameters are constants the pass understands and
 * that passes RESCALE's own checks; false otherwise (left alone). */
static bool rsc_read(const ot *s, const ot_op *o, rsc *r) {
    if (o->dead || o->kind != CTOSA_OP_RESCALE || o->n_in != 5 || o->n_out != 1) return false;
    memset(r, 0, sizeof *r);
    r->in = o->in[0];
    r->mult = o->in[1];
    r->shift = o->in[2];
    r->izp_t = o->in[3];
    r->ozp_t = o->in[4];
    r->ti = s->t[r->in].dtype;
    r->to = s->t[o->out[0]].dtype;
    r->iu = o->attr.input_unsigned;
    r->ou = o->attr.output_unsigned;
    r->scale32 = o->attr.scale32;
    r->per_channel = o->attr.per_channel;
    r->round = o->attr.rounding_mode;
    if (!type_bytes(r->ti) || !type_bytes(r->to) || s->t[r->in].is_shape) return false;
    if (r->round != CTOSA_ROUND_SINGLE && r->round != CTOSA_ROUND_DOUBLE && r->round != CTOSA_ROUND_INEXACT)
        return false;
    if (!r->scale32 && r->round == CTOSA_ROUND_DOUBLE) return false;
    if ((r->iu && r->ou) || (r->iu && (r->ti == CTOSA_DTYPE_INT32 || r->to == CTOSA_DTYPE_INT32)) ||
        (r->ou && (r->to == CTOSA_DTYPE_INT32 || r->ti == CTOSA_DTYPE_INT32)))
        return false;
    uint64_t n1, n2, nz;
    if (!const_elems(s, r->mult, &n1) || !const_elems(s, r->shift, &n2) || n1 != n2 || n1 == 0 ||
        n1 > 1u << 20)
        return false;
    if (s->t[r->mult].dtype != (r->scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16) ||
        s->t[r->shift].dtype != CTOSA_DTYPE_INT8)
        return false;
    const ot_tensor *x = &s->t[r->in];
    uint64_t want = r->per_channel ? (x->rank ? (uint64_t)x->shape[x->rank - 1] : 0) : 1;
    if (n1 != want) return false;
    r->nc = (uint32_t)n1;
    if (!const_elems(s, r->izp_t, &nz) || nz < 1 || s->t[r->izp_t].dtype != r->ti) return false;
    if (!const_elems(s, r->ozp_t, &nz) || nz < 1 || s->t[r->ozp_t].dtype != r->to) return false;
    r->izp = const_at(s, r->izp_t, 0);
    r->ozp = const_at(s, r->ozp_t, 0);
    if (r->iu) r->izp = r->ti == CTOSA_DTYPE_INT8 ? (uint8_t)r->izp : (uint16_t)r->izp;
    if (r->ou) r->ozp = r->to == CTOSA_DTYPE_INT8 ? (uint8_t)r->ozp : (uint16_t)r->ozp;
    for (uint32_t c = 0; c < r->nc; c++) {
        int64_t m = const_at(s, r->mult, c), sh = const_at(s, r->shift, c);
        if (m < 0 || sh < 2 || sh > 62) return false;
    }
    return true;
}

/* Is zp a valid zero point of type t with the unsigned flag u? */
static bool zp_ok(ctosa_dtype t, bool u, int64_t zp) {
    if (t == CTOSA_DTYPE_INT8) return u ? zp >= 0 && zp <= 255 : zp >= -128 && zp <= 127;
    if (t == CTOSA_DTYPE_INT16 && u) return zp == 0 || zp == 32768;
    return zp == 0;
}

/* The flag and type combinations RESCALE's checks accept. */
static bool flags_ok(ctosa_dtype ti, ctosa_dtype to, bool iu, bool ou) {
    if (iu && ou) return false;
    if (iu && (ti == CTOSA_DTYPE_INT32 || to == CTOSA_DTYPE_INT32)) return false;
    if (ou && (ti == CTOSA_DTYPE_INT32 || to == CTOSA_DTYPE_INT32)) return false;
    return true;
}

/* apply_scale_32 / apply_scale_16 of channel c for v; false where a
 * REQUIRE fails (value range, or a result outside int32). */
static bool rsc_apply(const ot *s, const rsc *r, uint32_t c, int64_t v, int64_t *out) {
    int64_t m = const_at(s, r->mult, c);
    int sh = (int)const_at(s, r->shift, c);
    if (r->scale32) {
        if (v < INT32_MIN || v > INT32_MAX) return false;
        if (sh <= 32 && (v < -(INT64_C(1) << (sh - 1)) || v >= INT64_C(1) << (sh - 1))) return false;
    }
    __int128 round = (__int128)1 << (sh - 1);
    if (r->round == CTOSA_ROUND_DOUBLE && sh > 31) round += v >= 0 ? (INT64_C(1) << 30) : -(INT64_C(1) << 30);
    __int128 res = ((__int128)v * m + round) >> sh;
    if (res < INT32_MIN || res > INT32_MAX) return false;
    *out = (int64_t)res;
    return true;
}

/* Every channel multiplies by exactly one. */
static bool unit_scale(const ot *s, const rsc *r) {
    if (r->round == CTOSA_ROUND_INEXACT) return false;
    for (uint32_t c = 0; c < r->nc; c++) {
        int64_t m = const_at(s, r->mult, c), sh = const_at(s, r->shift, c);
        if (sh > (r->scale32 ? 30 : 14) || m != INT64_C(1) << sh) return false;
    }
    return true;
}

/* A unit-scale r passes its REQUIREs for every value of its input type. */
static bool unit_never_fails(const ot *s, const rsc *r) {
    int64_t lo, hi, t;
    type_range(r->ti, r->iu, &lo, &hi);
    for (uint32_t c = 0; c < r->nc; c++)
        if (!rsc_apply(s, r, c, lo - r->izp, &t) || !rsc_apply(s, r, c, hi - r->izp, &t)) return false;
    return true;
}

/* Bounds of apply_scale(x - izp) over the input type, per channel, for the
 * values that pass the REQUIREs (the others fail in any form). The scale is
 * monotone in the value, so the extreme passing values give the bounds. */
static bool scaled_bounds(const ot *s, const rsc *r, uint32_t c, int64_t *rlo, int64_t *rhi) {
    int64_t lo, hi;
    type_range(r->ti, r->iu, &lo, &hi);
    lo -= r->izp;
    hi -= r->izp;
    int sh = (int)const_at(s, r->shift, c);
    if (r->scale32) {
        int64_t lim = sh <= 32 ? INT64_C(1) << (sh - 1) : INT64_C(1) << 31;
        if (lo < -lim) lo = -lim;
        if (hi > lim - 1) hi = lim - 1;
    }
    /* the result REQUIRE (int32) can cut the range further: shrink towards
     * zero until the ends pass (at most a few steps per end: the scale is
     * monotone, so binary search) */
    int64_t a = lo, b = hi, t;
    if (a > b) return false;
    if (!rsc_apply(s, r, c, a, &t)) {
        int64_t bad = a, good = b;
        if (!rsc_apply(s, r, c, good, &t)) return false;
        while (good - bad > 1) {
            int64_t mid = bad + (good - bad) / 2;
            if (rsc_apply(s, r, c, mid, &t)) good = mid;
            else bad = mid;
        }
        a = good;
    }
    if (!rsc_apply(s, r, c, b, &t)) {
        int64_t good = a, bad = b;
        while (bad - good > 1) {
            int64_t mid = good + (bad - good) / 2;
            if (rsc_apply(s, r, c, mid, &t)) good = mid;
            else bad = mid;
        }
        b = good;
    }
    return rsc_apply(s, r, c, a, rlo) && rsc_apply(s, r, c, b, rhi);
}

/* A constant zero point of type dt holding v (stored as the signed bits),
 * shaped like model; reuses model when it already holds v. */
static uint32_t zp_const(ot *s, uint32_t model, ctosa_dtype dt, int64_t v, int64_t model_value,
                         int32_t before) {
    if (s->t[model].dtype == dt && model_value == v) return model;
    int b = type_bytes(dt);
    uint8_t *buf = arena_alloc(&s->a, (size_t)b);
    if (!buf) {
        s->oom = true;
        return 0;
    }
    if (b == 1) buf[0] = (uint8_t)v;
    else if (b == 2) wr_u16(buf, (uint16_t)v);
    else wr_u32(buf, (uint32_t)v);
    ot_tensor m = s->t[model];
    uint32_t id = ot_new_tensor(s, m.name, dt, 1, (const int32_t[]){1});
    if (s->oom) return 0;
    s->t[id].data.kind = CTOSA_DATA_MEMORY;
    s->t[id].data.ptr = buf;
    s->t[id].data.size = (uint64_t)b;
    s->t[id].data.fd = -1;
    s->t[id].data_copy = true;
    int32_t after = before >= 0 ? s->o[before].prev : -1;
    ot_new_op(s, CTOSA_OP_CONST, 0, NULL, 1, &id, NULL, before >= 0 ? s->o[before].location : NULL, after);
    return id;
}

/* R2 of unit scale folded into R1 (first rule above); rewrites o2. */
static bool merge_unit_second(ot *s, int32_t i1, int32_t i2, const rsc *r1, const rsc *r2) {
    if (r1->ou != r2->iu || !unit_scale(s, r2) || !unit_never_fails(s, r2)) return false;
    int64_t lo1, hi1, lo2, hi2;
    type_range(r1->to, r1->ou, &lo1, &hi1);
    type_range(r2->to, r2->ou, &lo2, &hi2);
    int64_t k = r2->ozp - r2->izp;
    if (lo1 + k > lo2 || hi1 + k < hi2) return false;
    int64_t b = r1->ozp + k;
    if (!zp_ok(r2->to, r2->ou, b) || !flags_ok(r1->ti, r2->to, r1->iu, r2->ou)) return false;
    /* the output zero point is added in int32 (REQUIRE): no scaled value
     * may overflow with either zero point */
    int64_t mn = b < r1->ozp ? b : r1->ozp, mx = b > r1->ozp ? b : r1->ozp;
    for (uint32_t c = 0; c < r1->nc; c++) {
        int64_t rlo, rhi;
        if (!scaled_bounds(s, r1, c, &rlo, &rhi)) return false;
        if (rlo + mn < INT32_MIN || rhi + mx > INT32_MAX) return false;
    }
    int64_t stored2 = const_at(s, r2->ozp_t, 0);
    uint32_t z = zp_const(s, r2->ozp_t, r2->to, b, r2->ou ? r2->ozp : stored2, i2);
    if (s->oom) return false;
    ot_op *o2 = &s->o[i2];
    const ot_op *o1 = &s->o[i1];
    bool ou = r2->ou;
    o2->in[0] = o1->in[0];
    o2->in[1] = o1->in[1];
    o2->in[2] = o1->in[2];
    o2->in[3] = o1->in[3];
    o2->in[4] = z;
    o2->attr = o1->attr;
    o2->attr.output_unsigned = ou;
    return true;
}

/* R1 of unit scale whose clamp never binds folded into R2 (second rule). */
static bool merge_unit_first(ot *s, int32_t i1, int32_t i2, const rsc *r1, const rsc *r2) {
    if (r1->ou != r2->iu || !unit_scale(s, r1) || !unit_never_fails(s, r1)) return false;
    int64_t tlo, thi, lo1, hi1;
    type_range(r1->ti, r1->iu, &tlo, &thi);
    type_range(r1->to, r1->ou, &lo1, &hi1);
    if (tlo - r1->izp + r1->ozp < lo1 || thi - r1->izp + r1->ozp > hi1) return false;
    int64_t a = r1->izp - r1->ozp + r2->izp;
    if (!zp_ok(r1->ti, r1->iu, a) || !flags_ok(r1->ti, r2->to, r1->iu, r2->ou)) return false;
    int64_t stored1 = const_at(s, r1->izp_t, 0);
    uint32_t z = zp_const(s, r1->izp_t, r1->ti, a, r1->iu ? r1->izp : stored1, i2);
    if (s->oom) return false;
    ot_op *o2 = &s->o[i2];
    bool iu = r1->iu;
    o2->in[0] = s->o[i1].in[0];
    o2->in[3] = z;
    o2->attr.input_unsigned = iu;
    return true;
}

/* A RESCALE that returns its input unchanged for every input value. */
static bool is_identity(const ot *s, const rsc *r) {
    return r->ti == r->to && !r->iu && !r->ou && r->izp == r->ozp && unit_scale(s, r) &&
           unit_never_fails(s, r);
}

uint32_t ot_rescale_round(ot *s) {
    /* readers of each tensor: folding a unit-scale R2 into an R1 whose
     * result is still needed elsewhere would run R1's scaling twice, so
     * that rule needs R2 to be y's only reader */
    uint32_t nt = s->nt, n = 0;
    uint32_t *readers = calloc(nt + 1, sizeof *readers);
    if (!readers) {
        s->oom = true;
        return 0;
    }
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next)
        if (!s->o[oi].dead)
            for (uint32_t k = 0; k < s->o[oi].n_in; k++) readers[ot_resolve(s, s->o[oi].in[k])]++;
    for (uint32_t t = 0; t < nt; t++) readers[t] += s->t[t].is_out;
    for (int32_t oi = s->head; oi >= 0 && !s->oom; oi = s->o[oi].next) {
        rsc r2;
        if (!rsc_read(s, &s->o[oi], &r2)) continue;
        for (;;) {
            if (is_identity(s, &r2)) {
                uint32_t x = ot_resolve(s, s->o[oi].in[0]), y = s->o[oi].out[0];
                s->t[y].alias = (int32_t)x;
                s->o[oi].dead = true;
                if (x < nt && y < nt) readers[x] += readers[y];
                n++;
                break;
            }
            uint32_t x = ot_resolve(s, s->o[oi].in[0]);
            int32_t p = s->t[x].producer;
            rsc r1;
            if (p < 0 || !rsc_read(s, &s->o[p], &r1) || s->o[p].out[0] != x) break;
            bool only = x < nt && readers[x] == 1;
            if (!(only && merge_unit_second(s, p, oi, &r1, &r2)) && !merge_unit_first(s, p, oi, &r1, &r2))
                break;
            /* o2 now reads R1's input instead of x */
            uint32_t nx = ot_resolve(s, s->o[oi].in[0]);
            if (x < nt) readers[x]--;
            if (nx < nt) readers[nx]++;
            n++;
            if (s->oom || !rsc_read(s, &s->o[oi], &r2)) break;
        }
    }
    free(readers);
    return n;
}
