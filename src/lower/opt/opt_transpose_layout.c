/* opt_transpose_layout.c - layout propagation: moves TRANSPOSE operators
 * through layout-agnostic operators so that inverse pairs meet and cancel.
 *
 * Why: ONNX tensors are NCHW and every Conv/pool lowers as
 * TRANSPOSE(NCHW->NHWC) -> CONV2D -> TRANSPOSE(NHWC->NCHW), with CLAMP,
 * ADD, MUL... in NCHW between two of them. Those operators give the same
 * result in any layout, so they can run in NHWC instead.
 *
 * How: tensors joined by layout-agnostic operators (elementwise ops on
 * equal-rank operands, REDUCE_* / CONCAT / REVERSE with their axis
 * permuted) form components. A component can be switched as a whole to
 * another layout P (every tensor v is replaced by v' with v = T_P(v')).
 * The number of TRANSPOSE operators that switch removes or adds is exact
 * and local: inputs produced by TRANSPOSE(P) are read before that
 * transpose, constants are permuted at compile time, consumers that are
 * transposes compose with P (and vanish when the composition is the
 * identity), anything else that needs the old layout (other operators,
 * partition outputs) gets one TRANSPOSE back. A component is switched
 * when that count goes down; rounds repeat until nothing changes, so the
 * pass only ever lowers the TRANSPOSE count and each round is linear in
 * the graph size. Partition inputs and outputs keep their tensors and
 * layouts. */
#include <stdlib.h>
#include <string.h>

#include "lower/opt/opt_transpose_int.h"

/* ------------------------------------------------------------ helpers */

static bool perm_identity(const int32_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (p[i] != (int32_t)i) return false;
    return true;
}

static bool perm_equal(const int32_t *p, const int32_t *q, uint32_t n) {
    return memcmp(p, q, n * sizeof *p) == 0;
}

/* T_outer(T_inner(x)) = T_r(x) with r[d] = inner[outer[d]]. */
static void perm_compose(const int32_t *inner, const int32_t *outer, uint32_t n, int32_t *r) {
    for (uint32_t d = 0; d < n; d++) r[d] = inner[outer[d]];
}

static void perm_invert(const int32_t *p, uint32_t n, int32_t *r) {
    for (uint32_t d = 0; d < n; d++) r[p[d]] = (int32_t)d;
}

static bool perm_valid(const ctosa_i32s *p, uint32_t rank) {
    if (!p->v || p->n != rank || rank == 0 || rank > LOWER_MAX_RANK) return false;
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; d++) {
        if (p->v[d] < 0 || (uint32_t)p->v[d] >= rank || (seen >> p->v[d] & 1)) return false;
        seen |= 1u << p->v[d];
    }
    return true;
}

/* Does T_perm leave the element order of a tensor of `shape` unchanged
 * (it only moves size-1 dimensions)? */
bool ot_perm_trivial(const int32_t *shape, const int32_t *perm, uint32_t n) {
    int32_t last = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (shape[perm[i]] == 1) continue;
        if (perm[i] < last) return false;
        last = perm[i];
    }
    return true;
}

static void shape_permute(const int32_t *in, const int32_t *perm, uint32_t n, int32_t *out) {
    for (uint32_t i = 0; i < n; i++) out[i] = in[perm[i]];
}

/* ------------------------------------------------ working graph edits */

uint32_t ot_new_tensor(ot *s, const char *base, ctosa_dtype dt, uint32_t rank, const int32_t *shape) {
    if (s->nt == s->capt) {
        uint32_t cap = s->capt ? s->capt * 2 : 64;
        ot_tensor *nt = realloc(s->t, cap * sizeof *nt);
        if (!nt) {
            s->oom = true;
            return 0;
        }
        s->t = nt;
        s->capt = cap;
    }
    const char *name = NULL;
    for (int tries = 0; tries < 1000 && !name; tries++) {
        char *cand = arena_printf(&s->a, "%s~t%u", base, s->counter++);
        if (!cand) {
            s->oom = true;
            return 0;
        }
        if (!strmap_has(&s->names, cand)) name = cand;
    }
    if (!name) {
        s->oom = true;
        return 0;
    }
    uint32_t id = s->nt++;
    ot_tensor *t = &s->t[id];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->shape, shape, rank * sizeof *shape);
    t->producer = -1;
    t->alias = -1;
    if (!strmap_put(&s->names, name, (void *)(uintptr_t)(id + 1))) s->oom = true;
    return id;
}

/* Appends an operator and links it into execution order after `after`
 * (-1: at the front). */
int32_t ot_new_op(ot *s, ctosa_op_kind kind, uint32_t n_in, const uint32_t *in, uint32_t n_out,
                  const uint32_t *out, const ctosa_attr *attr, const char *location, int32_t after) {
    if (s->no == s->capo) {
        uint32_t cap = s->capo ? s->capo * 2 : 64;
        ot_op *no = realloc(s->o, cap * sizeof *no);
        if (!no) {
            s->oom = true;
            return -1;
        }
        s->o = no;
        s->capo = cap;
    }
    uint32_t *ins = arena_alloc(&s->a, (n_in + 1) * sizeof *ins);
    uint32_t *outs = arena_alloc(&s->a, (n_out + 1) * sizeof *outs);
    if (!ins || !outs) {
        s->oom = true;
        return -1;
    }
    if (n_in) memcpy(ins, in, n_in * sizeof *in);
    if (n_out) memcpy(outs, out, n_out * sizeof *out);
    int32_t id = (int32_t)s->no++;
    ot_op *o = &s->o[id];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->n_in = n_in;
    o->n_out = n_out;
    o->in = ins;
    o->out = outs;
    if (attr) o->attr = *attr;
    o->location = location;
    o->prev = after;
    o->next = after >= 0 ? s->o[after].next : s->head;
    if (o->next >= 0) s->o[o->next].prev = id;
    else s->tail = id;
    if (after >= 0) s->o[after].next = id;
    else s->head = id;
    for (uint32_t k = 0; k < n_out; k++) s->t[out[k]].producer = id;
    return id;
}

static int32_t new_transpose(ot *s, uint32_t in, uint32_t out, const int32_t *perm, uint32_t n,
                             const char *location, int32_t after) {
    int32_t *p = arena_memdup(&s->a, perm, n * sizeof *perm);
    if (!p) {
        s->oom = true;
        return -1;
    }
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.perms.v = p;
    at.perms.n = n;
    return ot_new_op(s, CTOSA_OP_TRANSPOSE, 1, &in, 1, &out, &at, location, after);
}

uint32_t ot_resolve(ot *s, uint32_t id) {
    uint32_t r = id;
    for (uint32_t guard = 0; s->t[r].alias >= 0 && guard < s->nt; guard++) r = (uint32_t)s->t[r].alias;
    while (s->t[id].alias >= 0 && (uint32_t)s->t[id].alias != r) {
        uint32_t nx = (uint32_t)s->t[id].alias;
        s->t[id].alias = (int32_t)r;
        id = nx;
    }
    return r;
}

/* A constant: produced by a live CONST operator and carrying data. */
bool ot_is_const(const ot *s, uint32_t t) {
    int32_t p = s->t[t].producer;
    return p >= 0 && !s->o[p].dead && s->o[p].kind == CTOSA_OP_CONST &&
           s->t[t].data.kind != CTOSA_DATA_NONE && !s->t[t].is_shape;
}

/* Can constant c become T_perm(c) at compile time? */
bool ot_const_permutable(const ot *s, uint32_t c, const int32_t *perm) {
    const ot_tensor *t = &s->t[c];
    if (ot_perm_trivial(t->shape, perm, t->rank)) return true;
    int bits = ctosa_dtype_bits(t->dtype);
    uint64_t count = 1;
    for (uint32_t i = 0; i < t->rank; i++) count *= (uint64_t)(t->shape[i] > 0 ? t->shape[i] : 0);
    return (t->data.kind == CTOSA_DATA_MEMORY || ot_gen_of(&t->data)) && (t->data.ptr || t->data.user) &&
           bits >= 8 && bits % 8 == 0 && t->data.size == count * (uint64_t)(bits / 8);
}

static bool gen_reduce(ot_gen *d);

/* Streams T_perm(src) when it is large: a permute of the borrowed source
 * bytes, or of the source of an already permuted constant (perms
 * compose). False: materialise it. */
static bool const_permute_streamed(ot *s, const ot_tensor *src, const int32_t *perm, ctosa_data *d) {
    const ot_gen *g0 = ot_gen_of(&src->data);
    if (src->data_copy || src->data.size < s->stream_min || (!g0 && src->data.kind != CTOSA_DATA_MEMORY))
        return false;
    ot_gen tmp;
    memset(&tmp, 0, sizeof tmp);
    uint32_t r = src->rank;
    if (g0) {
        /* out[i] = mid[perm[i]] = orig[g0->perm[perm[i]]] */
        if (g0->rank != r) return false;
        tmp = *g0;
        for (uint32_t i = 0; i < r; i++) tmp.perm[i] = g0->perm[perm[i]];
    } else {
        tmp.src = src->data;
        tmp.rank = r;
        tmp.es = (uint32_t)(ctosa_dtype_bits(src->dtype) / 8);
        for (uint32_t i = 0; i < r; i++) {
            tmp.shape[i] = src->shape[i];
            tmp.perm[i] = perm[i];
        }
    }
    if (!gen_reduce(&tmp)) return false;
    ot_gen *g = arena_alloc(&s->a, sizeof *g);
    if (!g) {
        s->oom = true;
        return false;
    }
    *g = tmp;
    memset(d, 0, sizeof *d);
    d->kind = CTOSA_DATA_GENERATED;
    d->size = src->data.size;
    d->fd = -1;
    d->fill = ot_gen_fill;
    d->user = g;
    return true;
}

/* New constant T_perm(c) (a CONST operator after c's). */
uint32_t ot_const_permute(ot *s, uint32_t c, const int32_t *perm) {
    ot_tensor src = s->t[c];
    uint32_t r = src.rank;
    int32_t nshape[LOWER_MAX_RANK] = {0};
    shape_permute(src.shape, perm, r, nshape);
    uint32_t id = ot_new_tensor(s, src.name, src.dtype, r, nshape);
    if (s->oom) return 0;
    ctosa_data d = src.data;
    s->t[id].data_copy = src.data_copy; /* shared bytes: same owner */
    if (!ot_perm_trivial(src.shape, perm, r) && const_permute_streamed(s, &src, perm, &d)) {
        /* d: generated, its descriptor in the pass's arena (add_final_tensor
         * copies it out) */
        s->t[id].data_copy = false;
    } else if (!ot_perm_trivial(src.shape, perm, r)) {
        if (s->oom) return 0;
        size_t esz = (size_t)(ctosa_dtype_bits(src.dtype) / 8);
        uint8_t *buf = arena_alloc(&s->a, src.data.size ? (size_t)src.data.size : 1);
        if (!buf) {
            s->oom = true;
            return 0;
        }
        /* Walk the output in order; the input offset follows from the
         * input strides taken in output dimension order. */
        uint64_t istride[LOWER_MAX_RANK], ostride[LOWER_MAX_RANK];
        uint64_t acc = 1;
        for (uint32_t i = r; i-- > 0;) {
            istride[i] = acc;
            acc *= (uint64_t)src.shape[i];
        }
        for (uint32_t i = 0; i < r; i++) ostride[i] = istride[perm[i]];
        uint64_t idx[LOWER_MAX_RANK] = {0};
        uint64_t count = acc, off = 0;
        const uint8_t *ip = src.data.ptr;
        if (src.data.kind == CTOSA_DATA_GENERATED) {
            /* a streamed permute that does not compose into a streamable
             * one: read it whole (rare) */
            uint8_t *whole = arena_alloc(&s->a, src.data.size ? (size_t)src.data.size : 1);
            ctosa_tensor tt;
            memset(&tt, 0, sizeof tt);
            tt.name = src.name;
            tt.data = src.data;
            ctosa_error *er = whole ? ctosa_tensor_read_data(&tt, 0, whole, (size_t)src.data.size) : NULL;
            if (!whole || er) {
                ctosa_error_free(er);
                s->oom = true;
                return 0;
            }
            ip = whole;
        }
        for (uint64_t e = 0; e < count; e++) {
            memcpy(buf + e * esz, ip + off * esz, esz);
            for (uint32_t i = r; i-- > 0;) {
                off += ostride[i];
                if (++idx[i] < (uint64_t)nshape[i]) break;
                off -= ostride[i] * (uint64_t)nshape[i];
                idx[i] = 0;
            }
        }
        d.kind = CTOSA_DATA_MEMORY;
        d.ptr = buf;
        d.path = NULL;
        d.fd = -1;
        d.offset = 0;
        s->t[id].data_copy = true;
    }
    s->t[id].data = d;
    int32_t after = s->t[c].producer;
    ot_new_op(s, CTOSA_OP_CONST, 0, NULL, 1, &id, NULL, after >= 0 ? s->o[after].location : NULL, after);
    return id;
}

/* ------------------------------------------- layout-agnostic operators */

/* Which operators are layout-agnostic, and which of their inputs follow the
 * layout (as opposed to a zero point, shift or table), is the operator
 * table's layout column and data slots (CTOSA_OP_LIST). */
static bool agnostic_kind(const ot_op *o) {
    const ctosa_op_props *p = ctosa_op_props_of(o->kind);
    if (!p) return false;
    switch (p->layout) {
    case CTOSA_OP_LAYOUT_EW:
        /* per-channel RESCALE scales follow the last axis: not agnostic */
        if (o->kind == CTOSA_OP_RESCALE && o->attr.per_channel) return false;
        /* every data operand present (elementwise operands broadcast at
         * equal ranks) */
        return o->n_in >= 32u - (uint32_t)__builtin_clz(p->data_slots);
    case CTOSA_OP_LAYOUT_AXIS: /* the axis is permuted */
        return ctosa_op_counts_fit(o->kind, o->n_in, o->n_out, false);
    case CTOSA_OP_LAYOUT_NONE: return false;
    }
    return false;
}

static bool agnostic(const ot *s, const ot_op *o) {
    if (o->dead || o->n_out != 1 || !agnostic_kind(o)) return false;
    const ot_tensor *y = &s->t[o->out[0]];
    if (y->is_shape || y->rank < 2 || y->rank > LOWER_MAX_RANK) return false;
    if (ctosa_op_props_of(o->kind)->layout == CTOSA_OP_LAYOUT_AXIS &&
        (o->attr.axis < 0 || (uint32_t)o->attr.axis >= y->rank))
        return false;
    for (uint32_t k = 0; k < o->n_in; k++) {
        if (!ctosa_op_is_data_slot(o->kind, k)) continue;
        const ot_tensor *x = &s->t[o->in[k]];
        if (x->is_shape || x->rank != y->rank) return false;
    }
    return true;
}

/* ------------------------------------------------------- one round */

typedef struct round {
    uint32_t nt, no;     /* sizes at the start of the round */
    uint32_t *use_start; /* CSR of uses: tensor -> (op, slot) */
    uint32_t *use_op, *use_slot;
    bool *agn;     /* op is layout-agnostic this round */
    bool *touched; /* transpose used by a component switched this round */
    int32_t *uf;   /* union-find over tensors */
    bool *member;
    uint32_t *mem_start, *mem_list; /* members grouped by root */
    uint32_t *op_start, *op_list;   /* agnostic ops grouped by root of output */
    int32_t *map;                   /* member -> its tensor in the new layout */
} round;

static int32_t uf_find(int32_t *uf, int32_t x) {
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

static void uf_union(int32_t *uf, int32_t a, int32_t b) {
    a = uf_find(uf, a);
    b = uf_find(uf, b);
    if (a == b) return;
    if (a < b) uf[b] = a;
    else uf[a] = b;
}

static bool produced_in(const ot *s, const round *rd, uint32_t v) {
    int32_t p = s->t[v].producer;
    return p >= 0 && (uint32_t)p < rd->no && rd->agn[p];
}

/* The live TRANSPOSE producing v, or -1. */
static int32_t producer_transpose(const ot *s, uint32_t v) {
    int32_t p = s->t[v].producer;
    if (p < 0 || s->o[p].dead || s->o[p].kind != CTOSA_OP_TRANSPOSE || s->o[p].n_in != 1) return -1;
    if (!perm_valid(&s->o[p].attr.perms, s->t[v].rank)) return -1;
    return p;
}

static bool is_transpose_use(const ot *s, const round *rd, uint32_t u, uint32_t rank) {
    const ot_op *o = &s->o[rd->use_op[u]];
    return o->kind == CTOSA_OP_TRANSPOSE && o->n_in == 1 && perm_valid(&o->attr.perms, rank);
}

/* Must v still exist in its current layout after the switch? */
static bool need_old(const ot *s, const round *rd, uint32_t v) {
    if (s->t[v].is_out) return true;
    for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++) {
        uint32_t op = rd->use_op[u];
        if (rd->agn[op] && ctosa_op_is_data_slot(s->o[op].kind, rd->use_slot[u])) continue;
        if (is_transpose_use(s, rd, u, s->t[v].rank)) continue;
        return true;
    }
    return false;
}

/* Will the TRANSPOSE back to v's old layout vanish anyway? It does when
 * only RESHAPEs read v and the transpose moves size-1 dims only (the
 * RESHAPE then reads v' directly: see the local rules). */
static bool back_is_free(const ot *s, const round *rd, uint32_t v, const int32_t *P, const int32_t *Pinv,
                         uint32_t r) {
    if (s->t[v].is_out) return false;
    for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++) {
        uint32_t op = rd->use_op[u];
        if (rd->agn[op] && ctosa_op_is_data_slot(s->o[op].kind, rd->use_slot[u])) continue;
        if (is_transpose_use(s, rd, u, r)) continue;
        if (s->o[op].kind != CTOSA_OP_RESHAPE || rd->use_slot[u] != 0) return false;
    }
    int32_t nshape[LOWER_MAX_RANK] = {0};
    shape_permute(s->t[v].shape, Pinv, r, nshape);
    return ot_perm_trivial(nshape, P, r);
}

/* Change of the TRANSPOSE count if component (members m[0..nm), ops
 * ops[0..nops)) switches to layout P. */
static int64_t switch_cost(const ot *s, const round *rd, const uint32_t *m, uint32_t nm, const uint32_t *ops,
                           uint32_t nops, const int32_t *P, uint32_t r) {
    int32_t Pinv[LOWER_MAX_RANK], comp[LOWER_MAX_RANK];
    perm_invert(P, r, Pinv);
    int64_t d = 0;
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t v = m[i];
        bool old = need_old(s, rd, v);
        if (produced_in(s, rd, v)) {
            if (old && !back_is_free(s, rd, v, P, Pinv, r)) d++;
        } else {
            int32_t pt = producer_transpose(s, v);
            if (pt >= 0 && perm_equal(s->o[pt].attr.perms.v, P, r)) {
                if (!old) d--;
            } else if (pt >= 0) {
                if (old) d++;
            } else {
                d++;
            }
        }
        for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++) {
            if (!is_transpose_use(s, rd, u, r)) continue;
            perm_compose(P, s->o[rd->use_op[u]].attr.perms.v, r, comp);
            if (perm_identity(comp, r)) d--;
        }
    }
    for (uint32_t i = 0; i < nops; i++) {
        const ot_op *o = &s->o[ops[i]];
        for (uint32_t k = 0; k < o->n_in; k++)
            if (ctosa_op_is_data_slot(o->kind, k) && ot_is_const(s, o->in[k]) &&
                !ot_const_permutable(s, o->in[k], Pinv))
                d++;
    }
    return d;
}

static bool conflicts(const ot *s, const round *rd, const uint32_t *m, uint32_t nm) {
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t v = m[i];
        int32_t pt = producer_transpose(s, v);
        if (pt >= 0 && (uint32_t)pt < rd->no && rd->touched[pt]) return true;
        for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++)
            if (rd->touched[rd->use_op[u]]) return true;
    }
    return false;
}

static void mark_touched(const ot *s, round *rd, const uint32_t *m, uint32_t nm) {
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t v = m[i];
        int32_t pt = producer_transpose(s, v);
        if (pt >= 0 && (uint32_t)pt < rd->no) rd->touched[pt] = true;
        for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++)
            if (s->o[rd->use_op[u]].kind == CTOSA_OP_TRANSPOSE) rd->touched[rd->use_op[u]] = true;
    }
}

/* Switches the component to layout P (see the top of the file). */
static void apply_switch(ot *s, round *rd, const uint32_t *m, uint32_t nm, const uint32_t *ops, uint32_t nops,
                         const int32_t *P, uint32_t r) {
    int32_t Pinv[LOWER_MAX_RANK] = {0}, comp[LOWER_MAX_RANK] = {0}, nshape[LOWER_MAX_RANK] = {0};
    perm_invert(P, r, Pinv);
    mark_touched(s, rd, m, nm);
    for (uint32_t i = 0; i < nm && !s->oom; i++) {
        uint32_t v = m[i];
        bool old = need_old(s, rd, v);
        shape_permute(s->t[v].shape, Pinv, r, nshape);
        if (produced_in(s, rd, v)) {
            int32_t p = s->t[v].producer;
            uint32_t nv = ot_new_tensor(s, s->t[v].name, s->t[v].dtype, r, nshape);
            if (s->oom) return;
            for (uint32_t k = 0; k < s->o[p].n_out; k++)
                if (s->o[p].out[k] == v) s->o[p].out[k] = nv;
            s->t[nv].producer = p;
            s->t[v].producer = -1;
            rd->map[v] = (int32_t)nv;
            if (old) new_transpose(s, nv, v, P, r, s->o[p].location, p);
            continue;
        }
        int32_t pt = producer_transpose(s, v);
        if (pt >= 0 && perm_equal(s->o[pt].attr.perms.v, P, r)) {
            rd->map[v] = (int32_t)s->o[pt].in[0];
            continue;
        }
        uint32_t nv = ot_new_tensor(s, s->t[v].name, s->t[v].dtype, r, nshape);
        if (s->oom) return;
        rd->map[v] = (int32_t)nv;
        if (pt >= 0) {
            perm_compose(s->o[pt].attr.perms.v, Pinv, r, comp);
            new_transpose(s, s->o[pt].in[0], nv, comp, r, s->o[pt].location, pt);
        } else {
            int32_t after = s->t[v].producer;
            new_transpose(s, v, nv, Pinv, r, after >= 0 ? s->o[after].location : NULL, after);
        }
    }
    /* Operators of the component read and write the new tensors. */
    for (uint32_t i = 0; i < nops && !s->oom; i++) {
        uint32_t oi = ops[i];
        for (uint32_t k = 0; k < s->o[oi].n_in; k++) {
            if (!ctosa_op_is_data_slot(s->o[oi].kind, k)) continue;
            uint32_t x = s->o[oi].in[k];
            if (x < rd->nt && rd->member[x] && rd->map[x] >= 0) {
                s->o[oi].in[k] = (uint32_t)rd->map[x];
            } else if (ot_is_const(s, x)) {
                if (ot_const_permutable(s, x, Pinv)) {
                    uint32_t c = ot_const_permute(s, x, Pinv);
                    if (s->oom) return;
                    s->o[oi].in[k] = c;
                } else {
                    shape_permute(s->t[x].shape, Pinv, r, nshape);
                    uint32_t nv = ot_new_tensor(s, s->t[x].name, s->t[x].dtype, r, nshape);
                    if (s->oom) return;
                    new_transpose(s, x, nv, Pinv, r, s->o[oi].location, s->t[x].producer);
                    s->o[oi].in[k] = nv;
                }
            }
        }
        if (ctosa_op_props_of(s->o[oi].kind)->layout == CTOSA_OP_LAYOUT_AXIS)
            s->o[oi].attr.axis = P[s->o[oi].attr.axis];
    }
    /* Transposes reading the component compose with P. */
    for (uint32_t i = 0; i < nm && !s->oom; i++) {
        uint32_t v = m[i];
        for (uint32_t u = rd->use_start[v]; u < rd->use_start[v + 1]; u++) {
            if (!is_transpose_use(s, rd, u, r)) continue;
            uint32_t oi = rd->use_op[u];
            perm_compose(P, s->o[oi].attr.perms.v, r, comp);
            if (perm_identity(comp, r)) {
                s->t[s->o[oi].out[0]].alias = rd->map[v];
                s->o[oi].dead = true;
            } else {
                int32_t *np = arena_memdup(&s->a, comp, r * sizeof *comp);
                if (!np) {
                    s->oom = true;
                    return;
                }
                s->o[oi].attr.perms.v = np;
                s->o[oi].in[0] = (uint32_t)rd->map[v];
            }
        }
    }
}

/* Builds the use lists of live operators. */
static bool build_uses(ot *s, round *rd) {
    rd->use_start = calloc(rd->nt + 2, sizeof *rd->use_start);
    if (!rd->use_start) return false;
    uint32_t total = 0;
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next) {
        if (s->o[oi].dead) continue;
        for (uint32_t k = 0; k < s->o[oi].n_in; k++) rd->use_start[s->o[oi].in[k] + 1]++;
        total += s->o[oi].n_in;
    }
    for (uint32_t t = 0; t < rd->nt; t++) rd->use_start[t + 1] += rd->use_start[t];
    rd->use_op = malloc((total + 1) * sizeof *rd->use_op);
    rd->use_slot = malloc((total + 1) * sizeof *rd->use_slot);
    uint32_t *fill = malloc((rd->nt + 1) * sizeof *fill);
    if (!rd->use_op || !rd->use_slot || !fill) {
        free(fill);
        return false;
    }
    memcpy(fill, rd->use_start, rd->nt * sizeof *fill);
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next) {
        if (s->o[oi].dead) continue;
        for (uint32_t k = 0; k < s->o[oi].n_in; k++) {
            uint32_t t = s->o[oi].in[k];
            rd->use_op[fill[t]] = (uint32_t)oi;
            rd->use_slot[fill[t]++] = k;
        }
    }
    free(fill);
    return true;
}

static void round_free(round *rd) {
    free(rd->use_start);
    free(rd->use_op);
    free(rd->use_slot);
    free(rd->agn);
    free(rd->touched);
    free(rd->uf);
    free(rd->member);
    free(rd->mem_start);
    free(rd->mem_list);
    free(rd->op_start);
    free(rd->op_list);
    free(rd->map);
}

static void add_cand(int32_t (*cand)[LOWER_MAX_RANK], uint32_t *nc, const int32_t *p, uint32_t r) {
    if (*nc >= 4 || perm_identity(p, r)) return;
    for (uint32_t c = 0; c < *nc; c++)
        if (perm_equal(cand[c], p, r)) return;
    memcpy(cand[(*nc)++], p, r * sizeof *p);
}

/* One round of component switching; returns the number of switches. */
uint32_t ot_layout_round(ot *s) {
    round rd;
    memset(&rd, 0, sizeof rd);
    rd.nt = s->nt;
    rd.no = s->no;
    uint32_t switched = 0;
    rd.agn = calloc(rd.no + 1, 1);
    rd.touched = calloc(rd.no + 1, 1);
    rd.uf = malloc((rd.nt + 1) * sizeof *rd.uf);
    rd.member = calloc(rd.nt + 1, 1);
    rd.mem_start = calloc(rd.nt + 2, sizeof *rd.mem_start);
    rd.mem_list = malloc((rd.nt + 1) * sizeof *rd.mem_list);
    rd.op_start = calloc(rd.nt + 2, sizeof *rd.op_start);
    rd.op_list = malloc((rd.no + 1) * sizeof *rd.op_list);
    rd.map = malloc((rd.nt + 1) * sizeof *rd.map);
    if (!rd.agn || !rd.touched || !rd.uf || !rd.member || !rd.mem_start || !rd.mem_list || !rd.op_start ||
        !rd.op_list || !rd.map || !build_uses(s, &rd)) {
        s->oom = true;
        goto done;
    }
    for (uint32_t t = 0; t < rd.nt; t++) {
        rd.uf[t] = (int32_t)t;
        rd.map[t] = -1;
    }
    uint32_t n_agn = 0;
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next) {
        ot_op *o = &s->o[oi];
        if (!agnostic(s, o)) continue;
        rd.agn[oi] = true;
        n_agn++;
        uint32_t y = o->out[0];
        rd.member[y] = true;
        for (uint32_t k = 0; k < o->n_in; k++) {
            if (!ctosa_op_is_data_slot(o->kind, k) || ot_is_const(s, o->in[k])) continue;
            rd.member[o->in[k]] = true;
            uf_union(rd.uf, (int32_t)y, (int32_t)o->in[k]);
        }
    }
    if (!n_agn) goto done;
    /* Group members and operators by component root (counting sort keeps
     * tensor and execution order inside a component: deterministic). */
    for (uint32_t t = 0; t < rd.nt; t++)
        if (rd.member[t]) rd.mem_start[uf_find(rd.uf, (int32_t)t) + 1]++;
    for (uint32_t t = 0; t < rd.nt; t++) rd.mem_start[t + 1] += rd.mem_start[t];
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next)
        if (rd.agn[oi]) rd.op_start[uf_find(rd.uf, (int32_t)s->o[oi].out[0]) + 1]++;
    for (uint32_t t = 0; t < rd.nt; t++) rd.op_start[t + 1] += rd.op_start[t];
    {
        uint32_t *mf = malloc((rd.nt + 1) * sizeof *mf), *of = malloc((rd.nt + 1) * sizeof *of);
        if (!mf || !of) {
            free(mf);
            free(of);
            s->oom = true;
            goto done;
        }
        memcpy(mf, rd.mem_start, rd.nt * sizeof *mf);
        memcpy(of, rd.op_start, rd.nt * sizeof *of);
        for (uint32_t t = 0; t < rd.nt; t++)
            if (rd.member[t]) rd.mem_list[mf[uf_find(rd.uf, (int32_t)t)]++] = t;
        for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next)
            if (rd.agn[oi]) rd.op_list[of[uf_find(rd.uf, (int32_t)s->o[oi].out[0])]++] = (uint32_t)oi;
        free(mf);
        free(of);
    }
    for (uint32_t root = 0; root < rd.nt && !s->oom; root++) {
        uint32_t nm = rd.mem_start[root + 1] - rd.mem_start[root];
        if (!nm) continue;
        const uint32_t *m = rd.mem_list + rd.mem_start[root];
        const uint32_t *ops = rd.op_list + rd.op_start[root];
        uint32_t nops = rd.op_start[root + 1] - rd.op_start[root];
        uint32_t r = s->t[m[0]].rank;
        /* Candidate layouts: those of the transposes around the component. */
        int32_t cand[4][LOWER_MAX_RANK];
        uint32_t nc = 0;
        for (uint32_t i = 0; i < nm && nc < 4; i++) {
            uint32_t v = m[i];
            int32_t pp[LOWER_MAX_RANK];
            if (!produced_in(s, &rd, v)) {
                int32_t pt = producer_transpose(s, v);
                if (pt >= 0) add_cand(cand, &nc, s->o[pt].attr.perms.v, r);
            }
            for (uint32_t u = rd.use_start[v]; u < rd.use_start[v + 1] && nc < 4; u++) {
                if (!is_transpose_use(s, &rd, u, r)) continue;
                perm_invert(s->o[rd.use_op[u]].attr.perms.v, r, pp);
                add_cand(cand, &nc, pp, r);
            }
        }
        int64_t best = 0;
        int32_t bi = -1;
        for (uint32_t c = 0; c < nc; c++) {
            int64_t d = switch_cost(s, &rd, m, nm, ops, nops, cand[c], r);
            if (d < best) {
                best = d;
                bi = (int32_t)c;
            }
        }
        if (bi < 0 || conflicts(s, &rd, m, nm)) continue;
        apply_switch(s, &rd, m, nm, ops, nops, cand[bi], r);
        switched++;
    }
done:
    round_free(&rd);
    return switched;
}

/* --------------------------------------------- streamed (generated) permutes
 *
 * A large constant whose bytes are a permutation of borrowed source bytes
 * (a convolution weight OIHW -> OHWI, a Gemm transB weight, a constant
 * permuted by this pass) is not materialised: it becomes generated data
 * (graph.h) that the writer produces chunk by chunk. Supported are the
 * permutations that, after dropping unit axes and merging axes adjacent
 * both in the source and the output, swap two neighbouring axis groups:
 * source [B, R, C] units of U bytes -> output [B, C, R]. That covers the
 * usual weight transforms; others stay in memory. */

/* Reduces (shape, perm) to [B, R, C] units of U bytes; false when the
 * permutation is not one swap of neighbouring groups (or is trivial). */
static bool gen_reduce(ot_gen *d) {
    uint32_t q[LOWER_MAX_RANK], m = 0; /* output order of the source axes of size > 1 */
    for (uint32_t i = 0; i < d->rank; i++)
        if (d->shape[d->perm[i]] > 1) q[m++] = (uint32_t)d->perm[i];
    /* groups: maximal runs of q with consecutive source axes */
    uint32_t gstart[LOWER_MAX_RANK], glen[LOWER_MAX_RANK], ng = 0;
    for (uint32_t j = 0; j < m; j++) {
        if (j && q[j] == q[j - 1] + 1) {
            glen[ng - 1]++;
            continue;
        }
        gstart[ng] = q[j];
        glen[ng++] = 1;
    }
    /* rank of each group in source order */
    uint32_t srank[LOWER_MAX_RANK];
    for (uint32_t g = 0; g < ng; g++) {
        srank[g] = 0;
        for (uint32_t h = 0; h < ng; h++) srank[g] += gstart[h] < gstart[g];
    }
    uint32_t a = 0;
    while (a < ng && srank[a] == a) a++;
    if (a + 1 >= ng || srank[a] != a + 1 || srank[a + 1] != a) return false;
    for (uint32_t g = a + 2; g < ng; g++)
        if (srank[g] != g) return false;
    uint64_t size[LOWER_MAX_RANK];
    for (uint32_t g = 0; g < ng; g++) {
        size[g] = 1;
        for (uint32_t k = 0; k < glen[g]; k++) size[g] *= (uint64_t)d->shape[gstart[g] + k];
    }
    /* output order: groups 0..a-1, then source group a+1 (output slot a)
     * and source group a (output slot a+1), then the rest */
    d->B = 1;
    for (uint32_t g = 0; g < a; g++) d->B *= size[g];
    d->R = size[a + 1]; /* the group that comes first in the source */
    d->C = size[a];
    d->U = d->es;
    for (uint32_t g = a + 2; g < ng; g++) d->U *= size[g];
    return true;
}

/* The bytes come from the one streamed transposer of the graph API
 * (ctosa_transpose_view_read); this descriptor adds what the lowering
 * needs on top: the full shape and permutation, so permutes compose. */
ctosa_error *ot_gen_fill(void *user, uint64_t offset, void *buf, size_t n) {
    const ot_gen *d = user;
    ctosa_transpose_view v = {.src = d->src, .batch = d->B, .rows = d->R, .cols = d->C, .unit_bytes = d->U};
    return ctosa_transpose_view_read(&v, offset, buf, n);
}

ctosa_error *ot_set_permuted(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *src, uint32_t rank,
                             const int64_t *src_shape, const int32_t *perm, uint32_t es, uint64_t min,
                             bool *done) {
    *done = false;
    if (!src || (src->kind != CTOSA_DATA_MEMORY && src->kind != CTOSA_DATA_FILE) || rank > LOWER_MAX_RANK ||
        !es || src->size < min)
        return NULL;
    ot_gen tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.src = *src;
    tmp.rank = rank;
    tmp.es = es;
    uint64_t count = 1;
    for (uint32_t i = 0; i < rank; i++) {
        if (src_shape[i] < 0 || perm[i] < 0 || (uint32_t)perm[i] >= rank) return NULL;
        tmp.shape[i] = src_shape[i];
        tmp.perm[i] = perm[i];
        count *= (uint64_t)src_shape[i];
    }
    if (count * es != src->size || !gen_reduce(&tmp)) return NULL;
    ot_gen *d = ctosa_graph_alloc(g, sizeof *d);
    if (!d) return ctosa_error_nomem();
    *d = tmp;
    if (src->kind == CTOSA_DATA_FILE && src->path && !(d->src.path = ctosa_graph_strdup(g, src->path)))
        return ctosa_error_nomem();
    ctosa_error *e = ctosa_tensor_set_data_generated(g, t, src->size, ot_gen_fill, d);
    if (!e) *done = true;
    return e;
}

ot_gen *ot_gen_of(const ctosa_data *d) {
    return d->kind == CTOSA_DATA_GENERATED && d->fill == ot_gen_fill ? d->user : NULL;
}

ctosa_error *ot_copy_data(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *d) {
    const ot_gen *src = ot_gen_of(d);
    if (!src) {
        if (d->kind != CTOSA_DATA_GENERATED) return NULL;
        return ctosa_tensor_set_data_generated(g, t, d->size, d->fill, d->user);
    }
    ot_gen *nd = ctosa_graph_alloc(g, sizeof *nd);
    if (!nd) return ctosa_error_nomem();
    *nd = *src;
    if (src->src.kind == CTOSA_DATA_FILE && src->src.path &&
        !(nd->src.path = ctosa_graph_strdup(g, src->src.path)))
        return ctosa_error_nomem();
    return ctosa_tensor_set_data_generated(g, t, src->src.size, ot_gen_fill, nd);
}
