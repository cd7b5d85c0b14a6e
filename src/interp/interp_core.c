/* interp_core.c - the interpreter runtime: plans a region (tensors, constants,
 * activation memory with reuse after last use), runs its operators in order,
 * and implements the public API of ctosa/interp.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/kernels_gemm.h"
#include "interp_fuse.h"
#include "interp_runtime.h"
#include "util/floatfmt.h"

#define ACT_ALIGN 64u

void ctosa_interp_options_init(ctosa_interp_options *opt) { memset(opt, 0, sizeof *opt); }

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0) return UINT64_C(8) << 30;
    return (uint64_t)pages * (uint64_t)psize;
}

ctosa_error *interp_reserve(ctosa_interp *it, uint64_t bytes, const char *what) {
    uint64_t total;
    if (!add_u64(it->mem_used, bytes, &total) || total > it->opt.max_memory)
        return ctosa_error_new(CTOSA_ERR_LIMIT,
                               "%s: needs %llu bytes, which passes the interpreter's memory "
                               "limit of %llu bytes (%llu already in use)",
                               what, (unsigned long long)bytes, (unsigned long long)it->opt.max_memory,
                               (unsigned long long)it->mem_used);
    it->mem_used = total;
    return NULL;
}

/* ------------------------------------------------------------ constants */

/* Reads the file encoding of a constant (memory or a byte range of a file)
 * into a malloc'd buffer, or borrows the memory. */
static ctosa_error *const_bytes(const ctosa_tensor *t, uint64_t need, const uint8_t **p, void **owned) {
    *owned = NULL;
    if (t->data.size < need)
        return ctosa_error_new(
            CTOSA_ERR_FORMAT, "tensor '%s': constant data has %llu bytes, its %s shape needs %llu", t->name,
            (unsigned long long)t->data.size, ctosa_dtype_short(t->dtype), (unsigned long long)need);
    if (t->data.kind == CTOSA_DATA_MEMORY) {
        *p = t->data.ptr;
        return NULL;
    }
    if (need > SIZE_MAX) return ctosa_error_nomem();
    uint8_t *buf = malloc(need ? (size_t)need : 1);
    if (!buf) return ctosa_error_nomem();
    if (t->data.kind == CTOSA_DATA_GENERATED) {
        /* a streamed transform (a permuted weight...): produced now, for
         * the operator that reads it */
        ctosa_error *e = ctosa_tensor_read_data(t, 0, buf, (size_t)need);
        if (e) {
            free(buf);
            return e;
        }
        *p = buf;
        *owned = buf;
        return NULL;
    }
    int fd = t->data.fd;
    if (t->data.path) {
        fd = open(t->data.path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            free(buf);
            return ctosa_error_new(CTOSA_ERR_IO, "tensor '%s': cannot open %s: %s", t->name, t->data.path,
                                   strerror(errno));
        }
    }
    uint64_t got = 0;
    while (got < need) {
        ssize_t r = pread(fd, buf + got, (size_t)(need - got), (off_t)(t->data.offset + got));
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            int er = errno;
            if (t->data.path) close(fd);
            free(buf);
            return ctosa_error_new(CTOSA_ERR_IO, "tensor '%s': cannot read %llu bytes at offset %llu: %s",
                                   t->name, (unsigned long long)need, (unsigned long long)t->data.offset,
                                   r < 0 ? strerror(er) : "short file");
        }
        got += (uint64_t)r;
    }
    if (t->data.path) close(fd);
    *p = buf;
    *owned = buf;
    return NULL;
}

/* File encoding (docs/tosa-format.md) -> canonical form. */
static void decode_const(ctosa_dtype dt, const uint8_t *s, uint64_t n, void *dst) {
    switch (dt) {
    case CTOSA_DTYPE_BOOL:
        for (uint64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = s[i] != 0;
        break;
    case CTOSA_DTYPE_INT4:
        for (uint64_t i = 0; i < n; i++) {
            unsigned nib = (i & 1) ? (s[i / 2] >> 4) : (s[i / 2] & 15u);
            ((int8_t *)dst)[i] = (int8_t)(nib >= 8 ? (int)nib - 16 : (int)nib);
        }
        break;
    case CTOSA_DTYPE_INT8: memcpy(dst, s, (size_t)n); break;
    case CTOSA_DTYPE_INT16:
        for (uint64_t i = 0; i < n; i++) ((int16_t *)dst)[i] = (int16_t)rd_u16(s + 2 * i);
        break;
    case CTOSA_DTYPE_INT32:
        for (uint64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)rd_u32(s + 4 * i);
        break;
    case CTOSA_DTYPE_INT48:
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *q = s + 6 * i;
            uint64_t v = (uint64_t)rd_u32(q) | ((uint64_t)rd_u16(q + 4) << 32);
            if (v & (UINT64_C(1) << 47)) v |= UINT64_C(0xffff) << 48;
            ((int64_t *)dst)[i] = (int64_t)v;
        }
        break;
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE:
        for (uint64_t i = 0; i < n; i++) ((int64_t *)dst)[i] = (int64_t)rd_u64(s + 8 * i);
        break;
    case CTOSA_DTYPE_FP32:
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = rd_u32(s + 4 * i);
            memcpy((float *)dst + i, &u, 4);
        }
        break;
    case CTOSA_DTYPE_FP16:
        for (uint64_t i = 0; i < n; i++) ((float *)dst)[i] = ff_fp16_to_f32(rd_u16(s + 2 * i));
        break;
    case CTOSA_DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++) ((float *)dst)[i] = ff_bf16_to_f32(rd_u16(s + 2 * i));
        break;
    case CTOSA_DTYPE_FP8E4M3:
        for (uint64_t i = 0; i < n; i++) ((float *)dst)[i] = ff_fp8e4m3_to_f32(s[i]);
        break;
    case CTOSA_DTYPE_FP8E5M2:
        for (uint64_t i = 0; i < n; i++) ((float *)dst)[i] = ff_fp8e5m2_to_f32(s[i]);
        break;
    default: break;
    }
}

/* ------------------------------------------------------------ planning */

static ctosa_error *plan_err(const rplan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ctosa_error *plan_err(const rplan *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ctosa_error *e = ctosa_error_vnew(CTOSA_ERR_INVALID, fmt, ap);
    va_end(ap);
    return ctosa_error_prefix(e, "region '%s' block '%s'", p->region->name ? p->region->name : "",
                              p->block->name ? p->block->name : "");
}

/* Fills a slot's itensor from the declared tensor; checks dtype, rank and
 * size limits. */
static ctosa_error *slot_init(ctosa_interp *it, slot *s, const ctosa_tensor *t) {
    s->src = t;
    s->t.name = t->name;
    s->t.dtype = t->dtype;
    s->def = -1;
    s->last = -1;
    if (t->is_unranked)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "tensor '%s' is unranked; the interpreter "
                               "needs static shapes",
                               t->name);
    if (t->rank > INTERP_MAX_RANK)
        return ctosa_error_new(CTOSA_ERR_LIMIT,
                               "tensor '%s' has rank %u; the interpreter "
                               "handles ranks up to %d",
                               t->name, t->rank, INTERP_MAX_RANK);
    if (interp_elem_size(t->dtype) == 0)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "tensor '%s': dtype %s is not supported by "
                               "the interpreter",
                               t->name, ctosa_dtype_short(t->dtype) ? ctosa_dtype_short(t->dtype) : "?");
    s->t.rank = t->rank;
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                   "tensor '%s' has dynamic dimension %u "
                                   "(%d); the interpreter needs static shapes",
                                   t->name, i, t->shape[i]);
        s->t.shape[i] = t->shape[i];
        if (!mul_u64(n, (uint64_t)t->shape[i], &n) || n > (UINT64_C(1) << 60))
            return ctosa_error_new(CTOSA_ERR_LIMIT, "tensor '%s': element count overflows", t->name);
    }
    s->t.count = n;
    if (!mul_u64(n, interp_elem_size(t->dtype), &s->bytes))
        return ctosa_error_new(CTOSA_ERR_LIMIT, "tensor '%s': byte size overflows", t->name);
    (void)it;
    return NULL;
}

static ivar *find_var(ctosa_interp *it, const char *key) {
    for (ivar *v = it->vars; v; v = v->next)
        if (strcmp(v->key, key) == 0) return v;
    return NULL;
}

/* Shared storage of a variable tensor (created on first sight, initialised
 * from the tensor's data or zeros). */
static ctosa_error *bind_var(ctosa_interp *it, slot *s) {
    const ctosa_tensor *t = s->src;
    const char *key = t->variable_name ? t->variable_name : t->name;
    ivar *v = find_var(it, key);
    if (v) {
        if (v->t.dtype != s->t.dtype || !interp_same_shape(&v->t, &s->t))
            return ctosa_error_new(CTOSA_ERR_INVALID,
                                   "variable '%s': tensor '%s' is %s%s but "
                                   "the variable was declared %s%s",
                                   key, t->name, ctosa_dtype_short(s->t.dtype), interp_shape_str(&s->t),
                                   ctosa_dtype_short(v->t.dtype), interp_shape_str(&v->t));
        s->t.data = v->t.data;
        return NULL;
    }
    ctosa_error *e = interp_reserve(it, s->bytes, t->name);
    if (e) return e;
    v = arena_zalloc(&it->arena, sizeof *v);
    if (!v || !(v->key = arena_strdup(&it->arena, key))) return ctosa_error_nomem();
    v->t = s->t;
    v->t.name = v->key;
    v->t.data = arena_zalloc(&it->arena, s->bytes ? (size_t)s->bytes : 1);
    if (!v->t.data) return ctosa_error_nomem();
    if (t->data.kind != CTOSA_DATA_NONE) {
        uint64_t need;
        if (!ctosa_dtype_storage_size(t->dtype, s->t.count, &need)) return ctosa_error_nomem();
        const uint8_t *p;
        void *owned;
        if ((e = const_bytes(t, need, &p, &owned))) return e;
        decode_const(t->dtype, p, s->t.count, v->t.data);
        free(owned);
    }
    v->next = it->vars;
    it->vars = v;
    s->t.data = v->t.data;
    return NULL;
}

/* Whether the file encoding of dt is its canonical form on this host
 * (so a constant can be used where it lies). */
static bool same_encoding(ctosa_dtype dt) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    switch (dt) {
    case CTOSA_DTYPE_INT8:
    case CTOSA_DTYPE_INT16:
    case CTOSA_DTYPE_INT32:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE:
    case CTOSA_DTYPE_FP32: return true;
    default: return false;
    }
#else
    (void)dt;
    return false;
#endif
}

/* Makes a used constant available in canonical form. Constants in memory
 * (the reader's mapping of the file, or memory a builder lent) whose bytes
 * already are the canonical form are used in place: a multi-GB weight file
 * is then only paged in where operators read it, nothing is copied, and
 * the pages do not count against max_memory (they are the file's). The
 * runtime never writes a constant (planning refuses operators that would),
 * so pointing at read-only pages is safe. */
static ctosa_error *load_const(ctosa_interp *it, slot *s) {
    const ctosa_tensor *t = s->src;
    uint64_t need;
    if (!ctosa_dtype_storage_size(t->dtype, s->t.count, &need))
        return ctosa_error_new(CTOSA_ERR_LIMIT, "tensor '%s': size overflows", t->name);
    size_t esz = interp_elem_size(t->dtype);
    if (need == 0) {
        /* an empty constant (the [] shape of a RESHAPE to rank 0): stored
         * as no data, an empty vector or one dummy value, all the same */
        if (!(s->t.data = arena_zalloc(&it->arena, 8))) return ctosa_error_nomem();
        s->t.is_const = true;
        return NULL;
    }
    if (t->data.kind == CTOSA_DATA_MEMORY && t->data.size >= need && need == s->bytes &&
        same_encoding(t->dtype) && t->data.ptr && esz && (uintptr_t)t->data.ptr % esz == 0) {
        s->t.data = (void *)(uintptr_t)t->data.ptr;
        s->t.is_const = true;
        return NULL;
    }
    ctosa_error *e = interp_reserve(it, s->bytes, t->name);
    if (e) return e;
    const uint8_t *p;
    void *owned;
    if ((e = const_bytes(t, need, &p, &owned))) return e;
    s->t.data = arena_alloc(&it->arena, s->bytes ? (size_t)s->bytes : 1);
    if (!s->t.data) {
        free(owned);
        return ctosa_error_nomem();
    }
    decode_const(t->dtype, p, s->t.count, s->t.data);
    free(owned);
    s->t.is_const = true;
    return NULL;
}

static slot *find_slot(const rplan *p, const char *name) {
    return name ? strmap_get(&p->by_name, name) : NULL;
}

/* A name of p's block, or else of an enclosing block. A tensor found in an
 * enclosing block stays alive until the control-flow operator there that
 * (transitively) runs p has finished. */
static slot *resolve(rplan *p, const char *name) {
    slot *s = find_slot(p, name);
    if (s) return s;
    for (rplan *c = p; c->parent; c = c->parent) {
        s = find_slot(c->parent, name);
        if (s) {
            if (s->kind == SLOT_ACT && s->def >= 0 && s->last < (int64_t)c->parent_op) s->last = c->parent_op;
            if (s->kind == SLOT_CONST && s->last < (int64_t)c->parent_op) s->last = c->parent_op;
            return s;
        }
    }
    return NULL;
}

/* First-fit placement of activation tensors in one buffer: a tensor's bytes
 * are reused once every reader has run. */
static ctosa_error *place_activations(ctosa_interp *it, rplan *p) {
    slot **live = calloc(p->n_slots + 1, sizeof *live);
    if (!live && p->n_slots) return ctosa_error_nomem();
    uint32_t n_live = 0;
    uint64_t top = 0;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        uint32_t k = 0;
        for (uint32_t j = 0; j < n_live; j++)
            if (live[j]->last >= (int64_t)i) live[k++] = live[j];
        n_live = k;
        pop *po = &p->ops[i];
        if (po->skip) continue;
        for (uint32_t o = 0; o < po->n_out + po->has_rescale; o++) {
            slot *s = (slot *)((char *)(o < po->n_out ? po->out[o] : po->rescale.out) - offsetof(slot, t));
            if (s->kind != SLOT_ACT || s->def != (int64_t)i) continue;
            uint64_t size = (s->bytes + ACT_ALIGN - 1) & ~(uint64_t)(ACT_ALIGN - 1);
            if (size < s->bytes) {
                free(live);
                return ctosa_error_new(CTOSA_ERR_LIMIT, "tensor '%s' is too large", s->t.name);
            }
            /* live[] is kept sorted by offset: find the first gap. */
            uint64_t off = 0;
            uint32_t pos = 0;
            for (; pos < n_live; pos++) {
                if (live[pos]->off >= off && live[pos]->off - off >= size) break;
                uint64_t end =
                    live[pos]->off + ((live[pos]->bytes + ACT_ALIGN - 1) & ~(uint64_t)(ACT_ALIGN - 1));
                if (end > off) off = end;
            }
            s->off = off;
            memmove(live + pos + 1, live + pos, (n_live - pos) * sizeof *live);
            live[pos] = s;
            n_live++;
            uint64_t end;
            if (!add_u64(off, size, &end)) {
                free(live);
                return ctosa_error_new(CTOSA_ERR_LIMIT, "activation memory overflows");
            }
            if (end > top) top = end;
        }
    }
    free(live);
    p->act_size = top;
    if (top) {
        ctosa_error *e = interp_reserve(it, top, "activation memory");
        if (e) return ctosa_error_prefix(e, "region '%s'", p->region->name);
        if (top > SIZE_MAX || !(p->act = arena_alloc(&it->arena, (size_t)top)))
            return ctosa_error_new(CTOSA_ERR_NOMEM,
                                   "region '%s': cannot allocate %llu bytes of "
                                   "activation memory",
                                   p->region->name, (unsigned long long)top);
    }
    /* When every activation is empty (top == 0) there is no block: empty
     * tensors then point at a dummy (no pointer arithmetic on NULL). */
    static _Alignas(64) char no_activations[64];
    for (uint32_t i = 0; i < p->n_slots; i++)
        if (p->slots[i].kind == SLOT_ACT)
            p->slots[i].t.data = p->act ? (char *)p->act + p->slots[i].off : no_activations;
    return NULL;
}

static ctosa_error *plan_subregion(ctosa_interp *it, rplan *p, uint32_t op_index, const char *name) {
    const ctosa_region *r;
    const ctosa_block *b = ctosa_graph_find_called(it->g, p->region, name, &r);
    if (!b) return NULL; /* reported when the operator runs */
    uint32_t depth = 0;
    for (rplan *c = p; c; c = c->parent, depth++)
        if (c->block == b)
            return ctosa_error_new(CTOSA_ERR_INVALID, "%s: %s '%s' calls itself", p->ops[op_index].where,
                                   b == r->blocks[0] ? "region" : "block", name);
    if (depth >= it->opt.max_depth)
        return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: control flow nesting passes the limit of %u",
                               p->ops[op_index].where, it->opt.max_depth);
    rplan *sub;
    return interp_get_plan(it, r, b, p, op_index, &sub);
}

static slot *slot_of(itensor *t) { return (slot *)((char *)t - offsetof(slot, t)); }

/* Plan-time fusion of CLAMP into the CONV2D / DEPTHWISE_CONV2D producing
 * its input, when that input is an fp32 activation nobody else reads: the
 * convolution writes the CLAMP's output directly, applying the clamp as it
 * stores (interp_op.post), and the CLAMP no longer runs. Saves a pass over
 * the tensor, its zeroing and a pool wake-up per pair (MobileNet has one
 * per convolution). Results are bit-identical: the kernels apply exactly
 * interp_k_CLAMP's expression. Fusion is skipped when the CLAMP's own
 * checks would fail (the unfused run then reports them as before) and in
 * blocks with control flow (a region could read the intermediate). */
static void fuse_clamps(rplan *p) {
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        pop *pc = &p->ops[i];
        const ctosa_op *op = pc->op;
        if (pc->skip || op->kind != CTOSA_OP_CLAMP || pc->n_in != 1 || pc->n_out != 1) continue;
        slot *mid = slot_of(pc->in[0]), *dst = slot_of(pc->out[0]);
        bool local = mid >= p->slots && mid < p->slots + p->n_slots;
        if (!local || mid->kind != SLOT_ACT || mid->is_output || mid->last != (int64_t)i || mid->def < 0 ||
            mid->def >= (int64_t)i || dst->kind != SLOT_ACT || dst->def != (int64_t)i)
            continue;
        pop *pv = &p->ops[mid->def];
        if (pv->skip || pv->fused || pv->has_post || pv->n_out != 1 || pv->out[0] != &mid->t ||
            (pv->op->kind != CTOSA_OP_CONV2D && pv->op->kind != CTOSA_OP_DEPTHWISE_CONV2D))
            continue;
        if (mid->t.dtype != CTOSA_DTYPE_FP32 || dst->t.dtype != CTOSA_DTYPE_FP32 ||
            !interp_same_shape(&mid->t, &dst->t))
            continue;
        /* only reader of mid: CLAMP itself (count the readers) */
        uint32_t readers = 0;
        for (uint32_t j = 0; j < p->n_ops; j++)
            for (uint32_t k = 0; k < p->ops[j].n_in; k++) readers += p->ops[j].in[k] == &mid->t;
        if (readers != 1) continue;
        const ctosa_attr *a = &op->attr;
        if (!a->min_val.p || !a->max_val.p || a->min_val.n < 4 || a->max_val.n < 4) continue;
        uint32_t ulo = rd_u32(a->min_val.p), uhi = rd_u32(a->max_val.p);
        float lo, hi;
        memcpy(&lo, &ulo, 4);
        memcpy(&hi, &uhi, 4);
        if (isnan(lo) || isnan(hi) || hi < lo) continue;
        pv->post = (interp_post){lo, hi, a->nan_mode == CTOSA_NAN_IGNORE, false};
        pv->has_post = true;
        pv->out[0] = &dst->t;
        dst->def = mid->def;
        mid->kind = SLOT_UNUSED; /* never materialised */
        mid->t.data = NULL;
        pc->skip = true;
        pc->fused = true;
    }
}

/* Number of operator inputs of p reading t. */
static uint32_t readers_of(const rplan *p, const itensor *t) {
    uint32_t n = 0;
    for (uint32_t j = 0; j < p->n_ops; j++)
        for (uint32_t k = 0; k < p->ops[j].n_in; k++) n += p->ops[j].in[k] == t;
    return n;
}

/* The operator of kind k with n_in inputs producing t, when t is a local
 * activation (not a block output) with exactly readers readers; NULL
 * otherwise. */
static pop *chain_def(rplan *p, const itensor *t, ctosa_op_kind k, uint32_t n_in, uint32_t readers) {
    slot *s = slot_of((itensor *)t);
    if (s < p->slots || s >= p->slots + p->n_slots || s->kind != SLOT_ACT || s->is_output || s->def < 0)
        return NULL;
    pop *d = &p->ops[s->def];
    if (d->skip || d->fused || d->op->kind != k || d->n_in != n_in || d->n_out != 1 || d->out[0] != t ||
        readers_of(p, t) != readers)
        return NULL;
    return d;
}

/* An int32 constant that broadcasts along the channels (last dimension) of
 * like: rank of like, every dimension 1 but the last (1 or like's). */
static bool chain_const(const rplan *p, const itensor *t, const itensor *like) {
    const slot *s = slot_of((itensor *)t);
    if (s < p->slots || s >= p->slots + p->n_slots || s->kind != SLOT_CONST ||
        t->dtype != CTOSA_DTYPE_INT32 || t->rank != like->rank || t->rank < 1)
        return false;
    for (uint32_t d = 0; d + 1 < t->rank; d++)
        if (t->shape[d] != 1) return false;
    return t->shape[t->rank - 1] == 1 || t->shape[t->rank - 1] == like->shape[like->rank - 1];
}

/* The quantized lowering's tie-to-even chain ending in the SELECT op
 * (interp_fused_rescale.tie): y = RESCALE(acc) to int32, SELECT(
 * EQUAL(BITWISE_AND(acc, mask), half), SUB(y, BITWISE_AND(y, odd)), y),
 * every intermediate read only inside the chain and acc only by the
 * RESCALE and the first BITWISE_AND. Fills fr's tie fields and chain[]
 * with the chain's six operators; returns the index of the operator
 * producing acc, or -1. Every operator of a matched chain passes its own
 * checks on any values: the shapes and types are the same, and y - (y &
 * odd) = y & ~odd cannot overflow. */
static int64_t match_tie(rplan *p, pop *sel, interp_fused_rescale *fr, int64_t chain[6]) {
    if (sel->n_in != 3 || sel->n_out != 1) return -1;
    itensor *b = sel->in[0], *e = sel->in[1], *y = sel->in[2], *z = sel->out[0];
    pop *eq = chain_def(p, b, CTOSA_OP_EQUAL, 2, 1), *sub = chain_def(p, e, CTOSA_OP_SUB, 2, 1);
    pop *r1 = chain_def(p, y, CTOSA_OP_RESCALE, 5, 3);
    if (!eq || !sub || !r1 || sub->in[0] != y) return -1;
    pop *odd = chain_def(p, sub->in[1], CTOSA_OP_BITWISE_AND, 2, 1);
    pop *msk = chain_def(p, eq->in[0], CTOSA_OP_BITWISE_AND, 2, 1);
    if (!odd || !msk || odd->in[0] != y) return -1;
    itensor *acc = r1->in[0];
    slot *sa = slot_of(acc);
    if (msk->in[0] != acc || sa < p->slots || sa >= p->slots + p->n_slots || sa->kind != SLOT_ACT ||
        sa->is_output || sa->def < 0 || readers_of(p, acc) != 2)
        return -1;
    const itensor *same[] = {acc, y, msk->out[0], b, odd->out[0], e, z};
    for (size_t k = 0; k < sizeof same / sizeof *same; k++)
        if (!interp_same_shape(same[k], z) ||
            same[k]->dtype != (same[k] == b ? CTOSA_DTYPE_BOOL : CTOSA_DTYPE_INT32))
            return -1;
    if (!chain_const(p, msk->in[1], z) || !chain_const(p, eq->in[1], z) || !chain_const(p, odd->in[1], z))
        return -1;
    for (uint32_t k = 1; k < 5; k++)
        if (slot_of(r1->in[k])->kind != SLOT_CONST) return -1;
    fr->tie = r1->op;
    fr->tie_where = r1->where;
    fr->tie_in = r1->in;
    fr->tie_out = y;
    fr->tie_mask = msk->in[1];
    fr->tie_half = eq->in[1];
    fr->tie_odd = odd->in[1];
    pop *ops[6] = {r1, msk, eq, odd, sub, sel};
    for (int k = 0; k < 6; k++) chain[k] = ops[k] - p->ops;
    return sa->def;
}

/* A SiLU just fused (op i, reading x twice) whose x is the fp32 output of a
 * CONV2D or DEPTHWISE_CONV2D that nothing else reads (the skipped SIGMOID
 * and the SiLU's two operands) is applied by the convolution as it stores
 * its results (interp_op.post with silu: the same vector sigmoid and
 * product, so the same bits), which then writes y directly: x is never
 * stored. */
static void fold_silu(rplan *p, uint32_t i) {
    pop *pm = &p->ops[i];
    slot *mid = slot_of(pm->in[0]), *dst = slot_of(pm->out[0]);
    bool local = mid >= p->slots && mid < p->slots + p->n_slots;
    if (!local || mid->kind != SLOT_ACT || mid->is_output || mid->last != (int64_t)i || mid->def < 0 ||
        mid->def >= (int64_t)i || dst->kind != SLOT_ACT || dst->def != (int64_t)i)
        return;
    pop *pv = &p->ops[mid->def];
    if (pv->skip || pv->fused || pv->has_post || pv->n_out != 1 || pv->out[0] != &mid->t ||
        (pv->op->kind != CTOSA_OP_CONV2D && pv->op->kind != CTOSA_OP_DEPTHWISE_CONV2D) ||
        readers_of(p, &mid->t) != 3)
        return;
    pv->post = (interp_post){0.0f, 0.0f, false, true};
    pv->has_post = true;
    pv->out[0] = &dst->t;
    dst->def = mid->def;
    mid->kind = SLOT_UNUSED;
    mid->t.data = NULL;
    pm->skip = true;
    pm->fused = true;
}

/* Plan-time fusion of y = MUL(x, SIGMOID(x)) (SiLU / swish; efficientnet and
 * YOLO-style networks have one per convolution) into one pass that reads x
 * and writes y (interp_k_fused_SILU): the sigmoid's output is never
 * written nor read again. Only for fp32 operands of one shape, a SIGMOID
 * output read by nothing but the MUL, outside blocks with control flow,
 * and not with the plain reference loops (which run the two operators). */
static void fuse_silus(rplan *p, bool reference) {
    if (reference) return;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        pop *pm = &p->ops[i];
        if (pm->skip || pm->op->kind != CTOSA_OP_MUL || pm->n_in < 2 || pm->n_out != 1) continue;
        for (uint32_t k = 0; k < 2; k++) {
            itensor *t = pm->in[k], *x = pm->in[1 - k];
            slot *mid = slot_of(t);
            bool local = mid >= p->slots && mid < p->slots + p->n_slots;
            if (!local || mid->kind != SLOT_ACT || mid->is_output || mid->last != (int64_t)i ||
                mid->def < 0 || mid->def >= (int64_t)i)
                continue;
            pop *ps = &p->ops[mid->def];
            if (ps->skip || ps->op->kind != CTOSA_OP_SIGMOID || ps->n_in != 1 || ps->n_out != 1 ||
                ps->in[0] != x || ps->out[0] != t)
                continue;
            if (x->dtype != CTOSA_DTYPE_FP32 || t->dtype != CTOSA_DTYPE_FP32 ||
                pm->out[0]->dtype != CTOSA_DTYPE_FP32 || !interp_same_shape(x, t) ||
                !interp_same_shape(x, pm->out[0]))
                continue;
            if (readers_of(p, t) != 1) continue;
            pm->in[k] = x;
            pm->fn = interp_k_fused_SILU;
            pm->writes_all = true;
            mid->kind = SLOT_UNUSED; /* never materialised */
            mid->t.data = NULL;
            ps->skip = true;
            ps->fused = true;
            fold_silu(p, i);
            break;
        }
    }
}

/* Plan-time offer of a RESCALE to the int8 CONV2D / DEPTHWISE_CONV2D producing its input
 * (interp_fused_rescale), directly or through a tie-to-even chain: the
 * convolution's int32 output is a local activation read by nothing else
 * (but the chain), and the RESCALEs' other operands are constants. The
 * RESCALE's output is then defined at the convolution (its memory is
 * placed there, so it cannot share bytes with the convolution's inputs or
 * the chain's tensors); the convolution's own output and the chain's keep
 * their memory for the runs where the kernel declines. Not in blocks with
 * control flow. */
static void fuse_rescales(rplan *p) {
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        pop *pr = &p->ops[i];
        if (pr->skip || pr->op->kind != CTOSA_OP_RESCALE || pr->n_in != 5 || pr->n_out != 1) continue;
        slot *mid = slot_of(pr->in[0]), *dst = slot_of(pr->out[0]);
        bool local = mid >= p->slots && mid < p->slots + p->n_slots;
        if (!local || mid->kind != SLOT_ACT || mid->is_output || mid->last != (int64_t)i || mid->def < 0 ||
            mid->def >= (int64_t)i || dst->kind != SLOT_ACT || dst->def != (int64_t)i ||
            mid->t.dtype != CTOSA_DTYPE_INT32 || dst->t.dtype != CTOSA_DTYPE_INT8)
            continue;
        bool consts = true;
        for (uint32_t k = 1; k < 5; k++) consts &= slot_of(pr->in[k])->kind == SLOT_CONST;
        if (!consts || readers_of(p, &mid->t) != 1) continue;
        interp_fused_rescale fr = {.op = pr->op, .where = pr->where, .in = pr->in, .out = &dst->t};
        int64_t chain[6], nchain = 0, iv = mid->def;
        const itensor *acc = &mid->t;
        if (p->ops[iv].op->kind == CTOSA_OP_SELECT) {
            if ((iv = match_tie(p, &p->ops[iv], &fr, chain)) < 0) continue;
            nchain = 6;
            acc = fr.tie_in[0];
        }
        pop *pv = &p->ops[iv];
        if (pv->skip || pv->has_rescale || pv->n_out != 1 || pv->out[0] != acc ||
            (pv->op->kind != CTOSA_OP_CONV2D && pv->op->kind != CTOSA_OP_DEPTHWISE_CONV2D) || pv->n_in < 1 ||
            pv->in[0]->dtype != CTOSA_DTYPE_INT8)
            continue;
        pv->has_rescale = true;
        pv->rescale = fr;
        pr->rescale_by = iv;
        for (int64_t k = 0; k < nchain; k++) p->ops[chain[k]].rescale_by = iv;
        dst->def = iv;
    }
}

/* Plan-time offer of a residual addition of the int8 lowering, RESCALE(
 * ADD(r1(a), r2(b))) with r1, r2 RESCALEs of int8 tensors to int32, every
 * intermediate int32 and read only inside the group, constant RESCALE
 * operands and one shape throughout, to the earlier of r1 and r2 (the
 * host, interp_fused_rescale.r2): its kernel stores the last RESCALE's
 * output in one pass when it can, else the four operators run as usual.
 * That output is defined at the host, so its memory shares no bytes with
 * a, b or anything alive there; b must exist by then. Not in blocks with
 * control flow, nor with the plain reference loops. */
static bool consts_1_4(pop *po) {
    for (uint32_t k = 1; k < 5; k++)
        if (slot_of(po->in[k])->kind != SLOT_CONST) return false;
    return true;
}

static void fuse_residuals(rplan *p, bool reference) {
    if (reference) return;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        pop *pr = &p->ops[i];
        if (pr->skip || pr->rescale_by >= 0 || pr->has_rescale || pr->op->kind != CTOSA_OP_RESCALE ||
            pr->n_in != 5 || pr->n_out != 1 || !consts_1_4(pr))
            continue;
        itensor *mid = pr->in[0], *y = pr->out[0];
        slot *dst = slot_of(y);
        pop *pa = chain_def(p, mid, CTOSA_OP_ADD, 2, 1);
        if (!pa || pa->rescale_by >= 0 || pa->has_rescale || dst->kind != SLOT_ACT ||
            dst->def != (int64_t)i || mid->dtype != CTOSA_DTYPE_INT32 || y->dtype != CTOSA_DTYPE_INT8 ||
            !interp_same_shape(mid, y) || pa->in[0] == pa->in[1])
            continue;
        pop *r[2];
        bool ok = true;
        for (int k = 0; k < 2 && ok; k++) {
            r[k] = chain_def(p, pa->in[k], CTOSA_OP_RESCALE, 5, 1);
            ok = r[k] && r[k]->rescale_by < 0 && !r[k]->has_rescale && consts_1_4(r[k]) &&
                 r[k]->in[0]->dtype == CTOSA_DTYPE_INT8 && pa->in[k]->dtype == CTOSA_DTYPE_INT32 &&
                 interp_same_shape(r[k]->in[0], y) && interp_same_shape(pa->in[k], y);
        }
        if (!ok) continue;
        pop *host = r[0] < r[1] ? r[0] : r[1], *other = r[0] < r[1] ? r[1] : r[0];
        int64_t ih = host - p->ops;
        slot *sb = slot_of(other->in[0]);
        bool local = sb >= p->slots && sb < p->slots + p->n_slots;
        if (local && sb->kind == SLOT_ACT && sb->def >= ih) continue; /* b made after the host */
        host->has_rescale = true;
        host->rescale = (interp_fused_rescale){.op = pr->op,
                                               .where = pr->where,
                                               .in = pr->in,
                                               .out = y,
                                               .r2 = other->op,
                                               .r2_where = other->where,
                                               .r2_in = other->in,
                                               .r2_out = other->out[0]};
        other->rescale_by = pa->rescale_by = pr->rescale_by = ih;
        dst->def = ih;
    }
}

/* Plan-time offer of a TRANSPOSE to NHWC of an int8 tensor to the int8
 * CONV2D that alone reads its output, as its input (interp_fused_pre):
 * the TRANSPOSE does not run by itself (pre_fused); its output keeps its
 * memory for the runs where the kernel needs it, and its input stays
 * alive up to the convolution. Not in blocks with control flow, nor with the plain
 * reference loops. */
static void fuse_transposes(rplan *p, bool reference) {
    if (reference) return;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        const ctosa_op *op = p->ops[i].op;
        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP) return;
    }
    for (uint32_t i = 0; i < p->n_ops; i++) {
        pop *pt = &p->ops[i];
        const ctosa_i32s *pm = &pt->op->attr.perms;
        if (pt->skip || pt->op->kind != CTOSA_OP_TRANSPOSE || pt->n_in != 1 || pt->n_out != 1 || pm->n != 4 ||
            pm->v[0] != 0 || pm->v[1] != 2 || pm->v[2] != 3 || pm->v[3] != 1)
            continue;
        itensor *x = pt->in[0], *y = pt->out[0];
        slot *dst = slot_of(y), *src = slot_of(x);
        bool local = dst >= p->slots && dst < p->slots + p->n_slots;
        if (!local || dst->kind != SLOT_ACT || dst->is_output || dst->def != (int64_t)i ||
            dst->last <= (int64_t)i || x->dtype != CTOSA_DTYPE_INT8 || y->dtype != CTOSA_DTYPE_INT8 ||
            x->rank != 4 || readers_of(p, y) != 1)
            continue;
        pop *pc = &p->ops[dst->last];
        if (pc->skip || pc->has_pre || pc->op->kind != CTOSA_OP_CONV2D || pc->n_in < 1 || pc->in[0] != y)
            continue;
        bool src_local = src >= p->slots && src < p->slots + p->n_slots;
        if (src_local && src->kind == SLOT_ACT && !src->is_output && src->last < dst->last)
            src->last = dst->last;
        pc->has_pre = true;
        pc->pre =
            (interp_fused_pre){.op = pt->op, .where = pt->where, .in = pt->in, .out = pt->out, .fn = pt->fn};
        pt->pre_fused = true;
    }
}

void interp_post_apply(const interp_post *p, float *d, size_t n) {
    if (!p) return;
    if (p->silu) kg_post_rows(p, d, n);
    else
        for (size_t i = 0; i < n; i++) d[i] = interp_post_f(p, d[i]);
}

void *interp_cache_get(const interp_op *o) { return o->cache ? *o->cache : NULL; }

void *interp_cache_put(const interp_op *o, size_t bytes) {
    if (!o->cache || !o->ctx || !o->ctx->it) return NULL;
    ctosa_interp *it = o->ctx->it;
    if (it->opt.no_weight_cache) return NULL; /* kernels then use their scratch */
    op_cache *c = (op_cache *)(void *)o->cache;
    size_t sz = (bytes + 63) & ~(size_t)63;
    if (sz < bytes) return NULL;
    if (!sz) sz = 64;
    if (c->p) { /* replaced */
        free(c->p);
        it->mem_used -= c->bytes;
        c->p = NULL;
        c->bytes = 0;
    }
    ctosa_error *e = interp_reserve(it, sz, "operator cache");
    if (e) {
        ctosa_error_free(e);
        return NULL;
    }
    c->p = aligned_alloc(64, sz);
    if (!c->p) {
        it->mem_used -= sz;
        return NULL;
    }
    c->bytes = sz;
    return c->p;
}

/* ------------------------------------------------------------ slices */

/* Adds every name the operators of the block `name` calls from region
 * `from` read (and the blocks it calls, each once) to need: a called block
 * may read tensors of the calling block without naming them as operator
 * inputs. */
static bool add_region_reads(arena *A, const ctosa_graph *g, const ctosa_region *from, const char *name,
                             strmap *need, strmap *seen) {
    const ctosa_region *r;
    const ctosa_block *b = name ? ctosa_graph_find_called(g, from, name, &r) : NULL;
    char key[2 * sizeof(void *) + 8];
    snprintf(key, sizeof key, "%p", (const void *)b);
    if (!b || strmap_has(seen, key)) return true;
    /* strmap keeps the key pointer: the key must outlive this call */
    const char *kept = arena_printf(A, "%s", key);
    if (!kept || !strmap_put(seen, kept, (void *)b)) return false;
    for (uint32_t i = 0; i < b->n_outputs; i++)
        if (b->outputs[i] && !strmap_put(need, b->outputs[i], (void *)1)) return false;
    for (uint32_t i = 0; i < b->n_ops; i++) {
        const ctosa_op *op = b->ops[i];
        for (uint32_t k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] && !strmap_put(need, op->inputs[k], (void *)1)) return false;
        const ctosa_attr *a = &op->attr;
        if (op->kind == CTOSA_OP_COND_IF && (!add_region_reads(A, g, r, a->then_graph, need, seen) ||
                                             !add_region_reads(A, g, r, a->else_graph, need, seen)))
            return false;
        if (op->kind == CTOSA_OP_WHILE_LOOP && (!add_region_reads(A, g, r, a->cond_graph, need, seen) ||
                                                !add_region_reads(A, g, r, a->body_graph, need, seen)))
            return false;
    }
    return true;
}

static bool is_var_name(const rplan *p, const char *name) {
    const slot *s = name ? strmap_get(&p->by_name, name) : NULL;
    return s && s->src->variable;
}

/* The operators of the main block that the requested outputs depend on
 * (keep[i]), and every tensor name they read (need). A backward sweep: an
 * operator is kept when it produces a needed name, and then its inputs are
 * needed. Variables carry state between operators without a data edge, so
 * once any variable is needed every operator that writes a variable is
 * kept too (another sweep). */
static ctosa_error *select_ops(ctosa_interp *it, rplan *p, strmap *need, bool **keep_out) {
    const ctosa_block *b = p->block;
    bool *keep = arena_zalloc(&it->arena, (size_t)b->n_ops + 1);
    if (!keep) return ctosa_error_nomem();
    for (uint32_t i = 0; i < it->opt.n_outputs; i++) {
        const char *n = it->opt.outputs[i];
        if (!n || !strmap_get(&p->by_name, n))
            return ctosa_error_new(CTOSA_ERR_USAGE,
                                   "requested output '%s' is not a tensor of "
                                   "the main block",
                                   n ? n : "(null)");
        if (!strmap_put(need, n, (void *)1)) return ctosa_error_nomem();
    }
    strmap seen;
    strmap_init(&seen);
    bool vars = false, changed = true, ok = true;
    for (uint32_t i = 0; i < it->opt.n_outputs; i++) vars |= is_var_name(p, it->opt.outputs[i]);
    /* Valid graphs settle in two sweeps (three with variables); the cap
     * keeps a hostile ordering from making this quadratic. */
    for (int pass = 0; pass < 4 && changed && ok; pass++) {
        changed = false;
        for (uint32_t i = b->n_ops; i-- > 0 && ok;) {
            const ctosa_op *op = b->ops[i];
            if (keep[i]) continue;
            bool hit = false, writes_var = op->kind == CTOSA_OP_VARIABLE_WRITE;
            for (uint32_t k = 0; k < op->n_outputs; k++) {
                hit |= op->outputs[k] && strmap_has(need, op->outputs[k]);
                writes_var |= is_var_name(p, op->outputs[k]);
            }
            if (!hit && !(vars && writes_var)) continue;
            keep[i] = changed = true;
            for (uint32_t k = 0; k < op->n_inputs && ok; k++) {
                ok = !op->inputs[k] || strmap_put(need, op->inputs[k], (void *)1);
                vars |= is_var_name(p, op->inputs[k]);
            }
            const ctosa_attr *a = &op->attr;
            if (ok && op->kind == CTOSA_OP_COND_IF)
                ok = add_region_reads(&it->arena, it->g, p->region, a->then_graph, need, &seen) &&
                     add_region_reads(&it->arena, it->g, p->region, a->else_graph, need, &seen);
            if (ok && op->kind == CTOSA_OP_WHILE_LOOP)
                ok = add_region_reads(&it->arena, it->g, p->region, a->cond_graph, need, &seen) &&
                     add_region_reads(&it->arena, it->g, p->region, a->body_graph, need, &seen);
            if (ok && (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP)) {
                /* names the regions read may be variables of this block */
                for (uint32_t j = 0; j < p->n_slots && !vars; j++)
                    vars = p->slots[j].src->variable && strmap_has(need, p->slots[j].t.name);
            }
        }
    }
    strmap_free(&seen);
    if (!ok) return ctosa_error_nomem();
    *keep_out = keep;
    return NULL;
}

static ctosa_error *build_plan(ctosa_interp *it, const ctosa_region *r, const ctosa_block *b, rplan *p) {
    arena *A = &it->arena;
    p->region = r;
    p->block = b;
    strmap_init(&p->by_name);
    uint32_t ns = b->n_tensors + b->n_shapes;
    p->slots = arena_zalloc(A, (ns ? ns : 1) * sizeof(slot));
    if (!p->slots) return ctosa_error_nomem();
    ctosa_error *e;
    for (uint32_t i = 0; i < ns; i++) {
        const ctosa_tensor *t = i < b->n_tensors ? b->tensors[i] : b->shapes[i - b->n_tensors];
        if (!t->name || strmap_has(&p->by_name, t->name)) continue;
        slot *s = &p->slots[p->n_slots++];
        s->src = t;
        s->t.name = t->name;
        s->def = s->last = -1;
        if (!strmap_put(&p->by_name, t->name, s)) return ctosa_error_nomem();
    }
    /* A slice of the main region: which operators run. */
    bool slice = !p->parent && it->opt.n_outputs > 0;
    if (slice && (e = select_ops(it, p, &p->need, &p->keep))) return e;
    /* Which slots are needed, and how. */
    p->n_in = b->n_inputs;
    p->n_out = slice ? it->opt.n_outputs : b->n_outputs;
    p->inputs = arena_zalloc(A, (p->n_in + 1) * sizeof(slot *));
    p->outputs = arena_zalloc(A, (p->n_out + 1) * sizeof(slot *));
    p->out_t = arena_zalloc(A, (p->n_out + 1) * sizeof(itensor *));
    p->n_ops = b->n_ops;
    p->ops = arena_zalloc(A, (p->n_ops + 1) * sizeof(pop));
    if (!p->inputs || !p->outputs || !p->out_t || !p->ops) return ctosa_error_nomem();

    for (uint32_t i = 0; i < b->n_inputs; i++) {
        slot *s = find_slot(p, b->inputs[i]);
        if (!s) return plan_err(p, "input '%s' is not a tensor of the block", b->inputs[i]);
        if (s->kind == SLOT_UNUSED) {
            if ((e = slot_init(it, s, s->src))) return e;
            s->kind = SLOT_INPUT;
        }
        s->used = !slice || strmap_has(&p->need, s->t.name);
        p->inputs[i] = s;
    }
    for (uint32_t i = 0; i < ns && i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        if (s->kind != SLOT_UNUSED) continue;
        if (s->src->variable) {
            if ((e = slot_init(it, s, s->src)) || (e = bind_var(it, s))) return e;
            s->kind = SLOT_VAR;
        } else if (s->src->data.kind != CTOSA_DATA_NONE) {
            /* a constant outside the slice is not even looked at */
            if ((!slice || strmap_has(&p->need, s->t.name)) && (e = slot_init(it, s, s->src))) return e;
            s->kind = SLOT_CONST; /* loaded below, only if used */
        }
    }

    for (uint32_t i = 0; i < b->n_ops; i++) {
        const ctosa_op *op = b->ops[i];
        pop *po = &p->ops[i];
        po->op = op;
        po->rescale_by = -1;
        const char *oname = ctosa_op_name(op->kind);
        po->where = arena_printf(A, "op #%u %s '%s'", i, oname ? oname : "UNKNOWN",
                                 op->n_outputs ? op->outputs[0] : "");
        if (!po->where) return ctosa_error_nomem();
        if (slice && !p->keep[i]) {
            /* outside the slice: never planned, never run */
            po->skip = true;
            continue;
        }
        po->n_in = op->n_inputs;
        po->n_out = op->n_outputs;
        po->in = arena_zalloc(A, (po->n_in + 1) * sizeof(itensor *));
        po->out = arena_zalloc(A, (po->n_out + 1) * sizeof(itensor *));
        if (!po->in || !po->out) return ctosa_error_nomem();
        bool is_const_op = op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE;
        if (ctosa_op_has(op->kind, CTOSA_OPF_DECLARES)) po->skip = true;
        /* Kernels of CTOSA_OPF_WRITES_ALL operators store every output
         * element when they succeed (audited: element-wise loops over the
         * whole output, convolutions and pooling writing each output pixel,
         * layout copies). The runtime does not zero their outputs before the
         * call; every other kernel (SCATTER copies then overwrites, CUSTOM
         * is promised zeroed outputs, control flow, and anything not
         * audited) still gets zeroed outputs. Debug builds fill these
         * outputs with a NaN / -1 pattern instead, so a kernel that leaves a
         * gap changes test results instead of passing by luck. */
        po->writes_all = ctosa_op_has(op->kind, CTOSA_OPF_WRITES_ALL);
        if (!po->skip) {
            po->fn = interp_kernel_for(op->kind);
            if (!po->fn)
                return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                       "%s: operator %s is not supported "
                                       "by the interpreter",
                                       po->where, oname ? oname : "UNKNOWN");
        }
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            slot *s = resolve(p, op->inputs[k]);
            if (!s)
                return plan_err(p, "%s: input '%s' is not a tensor of the block", po->where, op->inputs[k]);
            if (s->kind == SLOT_UNUSED)
                return plan_err(p, "%s: input '%s' is read before any operator produces it", po->where,
                                op->inputs[k]);
            if (s->kind == SLOT_ACT && s->def < 0)
                return plan_err(p, "%s: input '%s' is read before any operator produces it", po->where,
                                op->inputs[k]);
            bool local = s >= p->slots && s < p->slots + p->n_slots;
            if (!po->skip && local) s->last = i;
            po->in[k] = &s->t;
        }
        for (uint32_t k = 0; k < op->n_outputs; k++) {
            slot *s = find_slot(p, op->outputs[k]);
            if (!s)
                return plan_err(p, "%s: output '%s' is not a tensor of the block", po->where, op->outputs[k]);
            po->out[k] = &s->t;
            if (is_const_op) {
                /* a CONST_SHAPE of no elements may come without data */
                if (s->kind == SLOT_UNUSED && op->kind == CTOSA_OP_CONST_SHAPE && s->src->rank == 1 &&
                    s->src->shape[0] == 0) {
                    if ((e = slot_init(it, s, s->src))) return e;
                    s->kind = SLOT_CONST;
                }
                if (s->kind != SLOT_CONST)
                    return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: output '%s' has no constant data",
                                           po->where, op->outputs[k]);
                continue;
            }
            if (op->kind == CTOSA_OP_VARIABLE) continue;
            /* Writing a variable tensor (VARIABLE_WRITE, or any operator
             * producing it, as MLIR emits with IDENTITY) updates its state. */
            if (s->kind == SLOT_VAR) continue;
            if (s->kind == SLOT_INPUT || s->kind == SLOT_CONST)
                return plan_err(p, "%s: output '%s' is a graph input or a constant", po->where,
                                op->outputs[k]);
            if (s->kind == SLOT_ACT)
                return plan_err(p, "%s: output '%s' is already produced by op #%lld", po->where,
                                op->outputs[k], (long long)s->def);
            if ((e = slot_init(it, s, s->src))) return ctosa_error_prefix(e, "%s", po->where);
            s->kind = SLOT_ACT;
            s->def = s->last = i;
        }
        if (op->kind == CTOSA_OP_COND_IF) {
            if ((e = plan_subregion(it, p, i, op->attr.then_graph)) ||
                (e = plan_subregion(it, p, i, op->attr.else_graph)))
                return e;
        } else if (op->kind == CTOSA_OP_WHILE_LOOP) {
            if ((e = plan_subregion(it, p, i, op->attr.cond_graph)) ||
                (e = plan_subregion(it, p, i, op->attr.body_graph)))
                return e;
        }
    }
    for (uint32_t i = 0; i < p->n_out; i++) {
        const char *name = slice ? it->opt.outputs[i] : b->outputs[i];
        slot *s = resolve(p, name);
        if (!s) return plan_err(p, "output '%s' is not a tensor of the block", name);
        if (s->kind == SLOT_UNUSED) return plan_err(p, "output '%s' is never produced", name);
        if (s->kind == SLOT_INPUT) s->used = true;
        if (s >= p->slots && s < p->slots + p->n_slots) {
            s->is_output = true;
            s->last = INT64_MAX;
        }
        p->outputs[i] = s;
        p->out_t[i] = &s->t;
    }
    fuse_clamps(p);
    fuse_silus(p, it->opt.reference);
    fuse_rescales(p);
    fuse_residuals(p, it->opt.reference);
    fuse_transposes(p, it->opt.reference);
    /* Memory: constants that are used, inputs, activations. */
    for (uint32_t i = 0; i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        if (s->kind == SLOT_CONST && (s->last >= 0 || s->is_output)) {
            if ((e = load_const(it, s))) return e;
        } else if (s->kind == SLOT_INPUT && s->used) {
            /* (an input a slice does not read gets memory only if set) */
            if ((e = interp_reserve(it, s->bytes, s->t.name))) return e;
            if (s->bytes > SIZE_MAX || !(s->t.data = arena_zalloc(A, s->bytes ? (size_t)s->bytes : 1)))
                return ctosa_error_nomem();
        }
    }
    /* needs the constants' values, changes which tensors get memory */
    interp_fuse_chains(it, p);
    return place_activations(it, p);
}

ctosa_error *interp_get_plan(ctosa_interp *it, const ctosa_region *r, const ctosa_block *b, rplan *parent,
                             uint32_t parent_op, rplan **out) {
    for (rplan *p = it->plans; p; p = p->next)
        if (p->block == b && p->parent == parent) {
            *out = p;
            return NULL;
        }
    rplan *p = arena_zalloc(&it->arena, sizeof *p);
    if (!p) return ctosa_error_nomem();
    p->parent = parent;
    p->parent_op = parent_op;
    ctosa_error *e = build_plan(it, r, b, p);
    p->next = it->plans;
    it->plans = p; /* kept even on failure so its map is freed */
    if (e) {
        p->block = NULL; /* never found again: a half-built plan must not run */
        return e;
    }
    *out = p;
    return NULL;
}

/* ------------------------------------------------------------ running */

ctosa_error *interp_run_plan(ctosa_interp *it, rplan *p) {
    for (uint32_t i = 0; i < p->n_in; i++)
        if (!p->inputs[i]->set && p->inputs[i]->used)
            return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s' (%s%s) has not been set",
                                   p->inputs[i]->t.name, ctosa_dtype_short(p->inputs[i]->t.dtype),
                                   interp_shape_str(&p->inputs[i]->t));
    p->active = true;
    /* a graph big enough to have parallel loops: the workers poll from the
     * start instead of sleeping through the first ones */
    if (p->act_size >= ((uint64_t)1 << 20)) tpool_wake(it->ctx.pool);
    rplan *saved = it->ctx.cur;
    it->ctx.cur = p;
    ctosa_error *e = NULL;
    for (uint32_t i = 0; i < p->n_ops && !e; i++) {
        pop *po = &p->ops[i];
        if (po->skip || po->pre_fused) continue;
        /* a RESCALE its convolution has applied */
        if (po->rescale_by >= 0 && p->ops[po->rescale_by].rescale.done) continue;
        po->rescale.done = false;
        interp_op o = {.ctx = &it->ctx,
                       .op = po->op,
                       .index = i,
                       .where = po->where,
                       .in = po->in,
                       .n_in = po->n_in,
                       .out = po->out,
                       .n_out = po->n_out,
                       .cache = &po->cache.p,
                       .post = po->has_post ? &po->post : NULL,
                       .rescale = po->has_rescale ? &po->rescale : NULL,
                       .pre = po->has_pre ? &po->pre : NULL,
                       .reference = it->opt.reference};
        if (!po->chain && (e = interp_check_arity(&o))) break; /* a group's operators were checked */
        /* Fresh outputs of kernels that may leave positions unwritten are
         * zeroed so the result is deterministic (CTOSA_OPF_WRITES_ALL). */
        for (uint32_t k = 0; k < po->n_out; k++) {
            slot *s = slot_of(po->out[k]);
            if (s->kind != SLOT_ACT || !s->bytes) continue;
            if (!po->writes_all) memset(s->t.data, 0, (size_t)s->bytes);
#ifndef NDEBUG
            else memset(s->t.data, 0xff, (size_t)s->bytes); /* NaN / -1: exposes gaps */
#endif
        }
        double t0 = it->opt.profile && p == it->main ? now_seconds() : 0;
        e = po->fn(&o);
        if (it->opt.profile && p == it->main) {
            po->prof_s += now_seconds() - t0;
            po->prof_runs++;
        }
    }
    p->active = false;
    it->ctx.cur = saved;
    return e;
}

ctosa_error *interp_call_region(const interp_op *o, const char *name, itensor *const *in, uint32_t n_in,
                                itensor ***outs, uint32_t *n_outs) {
    ctosa_interp *it = o->ctx->it;
    rplan *cur = o->ctx->cur;
    const ctosa_region *r;
    const ctosa_block *b = ctosa_graph_find_called(it->g, cur ? cur->region : NULL, name, &r);
    if (!b) return interp_fail(o, "region or block '%s' does not exist", name ? name : "(none)");
    if (o->ctx->depth >= it->opt.max_depth)
        return interp_fail(o, "control flow nesting depth passes the limit of %u", it->opt.max_depth);
    rplan *p;
    ctosa_error *e = interp_get_plan(it, r, b, cur, o->index, &p);
    if (e) return ctosa_error_prefix(e, "%s", o->where);
    if (p->active) return interp_fail(o, "region '%s' is already running (recursive call)", name);
    if (p->n_in != n_in) return interp_fail(o, "region '%s' takes %u inputs, %u given", name, p->n_in, n_in);
    for (uint32_t i = 0; i < n_in; i++) {
        itensor *d = &p->inputs[i]->t;
        if (d->dtype != in[i]->dtype || !interp_same_shape(d, in[i]))
            return interp_fail(o, "input %u '%s' is %s%s but region '%s' input '%s' is %s%s", i, in[i]->name,
                               ctosa_dtype_short(in[i]->dtype), interp_shape_str(in[i]), name, d->name,
                               ctosa_dtype_short(d->dtype), interp_shape_str(d));
    }
    for (uint32_t i = 0; i < n_in; i++) {
        itensor *d = &p->inputs[i]->t;
        if (d->data != in[i]->data && p->inputs[i]->bytes)
            memmove(d->data, in[i]->data, (size_t)p->inputs[i]->bytes);
        p->inputs[i]->set = true;
    }
    o->ctx->depth++;
    e = interp_run_plan(it, p);
    o->ctx->depth--;
    if (e) return e;
    *outs = p->out_t;
    *n_outs = p->n_out;
    return NULL;
}

/* ------------------------------------------------------------ public API */

ctosa_error *ctosa_interp_create(const ctosa_graph *g, const ctosa_interp_options *opt, ctosa_interp **out) {
    *out = NULL;
    if (!g) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_interp_create: graph is NULL");
    if (ctosa_graph_region_count(g) < 1)
        return ctosa_error_new(CTOSA_ERR_INVALID, "graph has no region to run");
    ctosa_interp *it = calloc(1, sizeof *it);
    if (!it) return ctosa_error_nomem();
    it->g = g;
    if (opt) it->opt = *opt;
    if (it->opt.threads <= 0) it->opt.threads = cpu_count();
    if (it->opt.threads > 256) it->opt.threads = 256;
    if (!it->opt.max_memory) it->opt.max_memory = physical_memory();
    if (!it->opt.max_depth) it->opt.max_depth = 32;
    arena_init(&it->arena, 0);
    it->ctx.it = it;
    it->ctx.pool = it->opt.threads > 1 ? tpool_create(it->opt.threads) : NULL;
    const ctosa_region *main_r = ctosa_graph_region(g, 0);
    ctosa_error *e = main_r->n_blocks && main_r->blocks[0]
                         ? interp_get_plan(it, main_r, main_r->blocks[0], NULL, 0, &it->main)
                         : ctosa_error_new(CTOSA_ERR_INVALID, "region '%s' has no block",
                                           main_r->name ? main_r->name : "");
    if (!e) {
        it->out_host = arena_zalloc(&it->arena, (it->main->n_out + 1) * sizeof(void *));
        if (!it->out_host) e = ctosa_error_nomem();
    }
    if (e) {
        ctosa_interp_free(it);
        return e;
    }
    *out = it;
    return NULL;
}

void ctosa_interp_free(ctosa_interp *it) {
    if (!it) return;
    tpool_free(it->ctx.pool);
    for (rplan *p = it->plans; p; p = p->next) {
        strmap_free(&p->by_name);
        strmap_free(&p->need);
        for (uint32_t i = 0; p->ops && i < p->n_ops; i++) {
            free(p->ops[i].cache.p);
            free(p->ops[i].rescale.keep);
        }
    }
    if (it->out_host && it->main)
        for (uint32_t i = 0; i < it->main->n_out; i++) free(it->out_host[i]);
    for (custom_reg *c = it->customs; c;) {
        custom_reg *n = c->next;
        free(c->domain);
        free(c->name);
        free(c);
        c = n;
    }
    arena_free(&it->arena);
    free(it);
}

static void fill_info(const slot *s, ctosa_interp_tensor *info) {
    memset(info, 0, sizeof *info);
    info->name = s->t.name;
    info->dtype = s->t.dtype;
    info->rank = s->t.rank;
    info->shape = s->t.shape;
    info->count = s->t.count;
    info->size = s->t.count * ctosa_host_elem_size(s->t.dtype);
}

uint32_t ctosa_interp_input_count(const ctosa_interp *it) { return it->main->n_in; }

bool ctosa_interp_input_used(const ctosa_interp *it, uint32_t i) {
    return i < it->main->n_in && it->main->inputs[i]->used;
}
uint32_t ctosa_interp_output_count(const ctosa_interp *it) { return it->main->n_out; }

ctosa_error *ctosa_interp_input_info(const ctosa_interp *it, uint32_t i, ctosa_interp_tensor *info) {
    if (i >= it->main->n_in)
        return ctosa_error_new(CTOSA_ERR_USAGE, "input index %u out of range (%u inputs)", i, it->main->n_in);
    fill_info(it->main->inputs[i], info);
    return NULL;
}

ctosa_error *ctosa_interp_output_info(const ctosa_interp *it, uint32_t i, ctosa_interp_tensor *info) {
    if (i >= it->main->n_out)
        return ctosa_error_new(CTOSA_ERR_USAGE, "output index %u out of range (%u outputs)", i,
                               it->main->n_out);
    fill_info(it->main->outputs[i], info);
    return NULL;
}

ctosa_error *ctosa_interp_set_input(ctosa_interp *it, const char *name, ctosa_dtype dtype, uint32_t rank,
                                    const int64_t *shape, const void *data, uint64_t size) {
    rplan *p = it->main;
    slot *s = NULL;
    for (uint32_t i = 0; i < p->n_in; i++)
        if (name && strcmp(p->inputs[i]->t.name, name) == 0) s = p->inputs[i];
    if (!s)
        return ctosa_error_new(CTOSA_ERR_USAGE, "'%s' is not an input of the graph", name ? name : "(null)");
    bool same = rank == s->t.rank && dtype == s->t.dtype;
    for (uint32_t i = 0; same && i < rank; i++) same = shape && shape[i] == s->t.shape[i];
    if (!same) {
        itensor given = {0};
        given.rank = rank <= INTERP_MAX_RANK ? rank : INTERP_MAX_RANK;
        for (uint32_t i = 0; i < given.rank && shape; i++) given.shape[i] = shape[i];
        return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s': expected %s%s, got %s%s", name,
                               ctosa_dtype_short(s->t.dtype), interp_shape_str(&s->t),
                               ctosa_dtype_short(dtype) ? ctosa_dtype_short(dtype) : "?",
                               interp_shape_str(&given));
    }
    uint64_t need = s->t.count * ctosa_host_elem_size(dtype);
    if (size != need || (need && !data))
        return ctosa_error_new(CTOSA_ERR_USAGE, "input '%s': %llu bytes given, %s%s needs %llu", name,
                               (unsigned long long)size, ctosa_dtype_short(dtype), interp_shape_str(&s->t),
                               (unsigned long long)need);
    char what[300];
    snprintf(what, sizeof what, "input '%s'", name);
    ctosa_error *e;
    if (!s->t.data) { /* an input the slice does not read: memory on demand */
        if ((e = interp_reserve(it, s->bytes, s->t.name))) return e;
        if (s->bytes > SIZE_MAX || !(s->t.data = arena_zalloc(&it->arena, s->bytes ? (size_t)s->bytes : 1)))
            return ctosa_error_nomem();
    }
    e = interp_from_host(&s->t, data, what);
    s->set = e == NULL;
    return e;
}

ctosa_error *ctosa_interp_run(ctosa_interp *it) {
    it->ran = false;
    it->ctx.depth = 0;
    ctosa_error *e = interp_run_plan(it, it->main);
    if (!e) it->ran = true;
    return e;
}

ctosa_error *ctosa_interp_get_output(ctosa_interp *it, const char *name, ctosa_interp_tensor *out) {
    rplan *p = it->main;
    for (uint32_t i = 0; i < p->n_out; i++) {
        slot *s = p->outputs[i];
        if (!name || strcmp(s->t.name, name) != 0) continue;
        if (!it->ran) return ctosa_error_new(CTOSA_ERR_USAGE, "output '%s': the graph has not run", name);
        fill_info(s, out);
        if (ctosa_host_elem_size(s->t.dtype) == interp_elem_size(s->t.dtype) &&
            s->t.dtype != CTOSA_DTYPE_FP16 && s->t.dtype != CTOSA_DTYPE_BF16) {
            out->data = s->t.data;
            return NULL;
        }
        if (!it->out_host[i] && !(it->out_host[i] = malloc(out->size ? (size_t)out->size : 1)))
            return ctosa_error_nomem();
        interp_to_host(&s->t, it->out_host[i]);
        out->data = it->out_host[i];
        return NULL;
    }
    return ctosa_error_new(CTOSA_ERR_USAGE, "'%s' is not an output of the graph", name ? name : "(null)");
}

ctosa_error *ctosa_interp_register_custom(ctosa_interp *it, const char *domain_name,
                                          const char *operator_name, ctosa_custom_fn fn, void *user) {
    if (!domain_name || !operator_name || !fn)
        return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_interp_register_custom: NULL argument");
    for (custom_reg *c = it->customs; c; c = c->next)
        if (strcmp(c->domain, domain_name) == 0 && strcmp(c->name, operator_name) == 0) {
            c->fn = fn;
            c->user = user;
            return NULL;
        }
    custom_reg *c = calloc(1, sizeof *c);
    if (!c) return ctosa_error_nomem();
    c->domain = strdup(domain_name);
    c->name = strdup(operator_name);
    if (!c->domain || !c->name) {
        free(c->domain);
        free(c->name);
        free(c);
        return ctosa_error_nomem();
    }
    c->fn = fn;
    c->user = user;
    c->next = it->customs;
    it->customs = c;
    return NULL;
}
