/* opt_transpose.c - clean-up of a lowered partition and its copy into the
 * final graph.
 *
 * Operator lowerings keep ONNX layouts at their boundaries and transpose
 * in and out around NHWC operators, so a chain Conv -> Relu -> Conv lowers
 * to ... TRANSPOSE(NHWC->NCHW) -> [NCHW op] -> TRANSPOSE(NCHW->NHWC) ...;
 * this pass
 *   - pushes a TRANSPOSE below elementwise unary operators (so that the
 *     pairs meet),
 *   - composes TRANSPOSE(TRANSPOSE(x)) into one TRANSPOSE, or removes both
 *     when they cancel,
 *   - drops identity transposes,
 *   - drops operators whose results nobody uses,
 * and writes the result into a new graph whose outputs carry the ONNX
 * names. Constant data is borrowed, not copied. */
#include <string.h>

#include "lower/lower_internal.h"

typedef struct fin {
    const ctosa_graph *sg;
    const ctosa_block *sb;
    arena a;
    strmap alias;     /* tensor -> tensor it equals */
    strmap producer;  /* tensor -> op index + 1 */
    ctosa_op **ops;   /* working copies of the operators */
    bool *dead;
    uint32_t n_ops;
} fin;

static const char *resolve(fin *f, const char *n) {
    for (int guard = 0; n && guard < 1 << 20; guard++) {
        const char *m = strmap_get(&f->alias, n);
        if (!m) return n;
        n = m;
    }
    return n;
}

static bool is_identity_perm(const int32_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (p[i] != (int32_t)i) return false;
    return true;
}

static bool unary_elementwise(ctosa_op_kind k) {
    switch (k) {
    case CTOSA_OP_ABS: case CTOSA_OP_CEIL: case CTOSA_OP_CLZ: case CTOSA_OP_COS: case CTOSA_OP_EXP:
    case CTOSA_OP_FLOOR: case CTOSA_OP_LOG: case CTOSA_OP_LOGICAL_NOT: case CTOSA_OP_RECIPROCAL:
    case CTOSA_OP_RSQRT: case CTOSA_OP_SIN: case CTOSA_OP_SIGMOID: case CTOSA_OP_TANH:
    case CTOSA_OP_ERF: case CTOSA_OP_CLAMP: case CTOSA_OP_BITWISE_NOT: case CTOSA_OP_CAST:
        return true;
    default: return false;
    }
}

static uint32_t uses_of(fin *f, const char *name) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->n_ops; i++) {
        if (f->dead[i]) continue;
        for (uint32_t k = 0; k < f->ops[i]->n_inputs; k++)
            if (strcmp(resolve(f, f->ops[i]->inputs[k]), name) == 0) n++;
    }
    return n;
}

static ctosa_op *producer_of(fin *f, const char *name) {
    uintptr_t i = (uintptr_t)strmap_get(&f->producer, name);
    if (!i || f->dead[i - 1]) return NULL;
    return f->ops[i - 1];
}

static void pass_transposes(fin *f, uint32_t n_out, const char *const *out_src) {
    for (uint32_t i = 0; i < f->n_ops; i++) {
        ctosa_op *op = f->ops[i];
        for (uint32_t k = 0; k < op->n_inputs; k++) op->inputs[k] = (char *)resolve(f, op->inputs[k]);
        if (op->kind == CTOSA_OP_IDENTITY && op->n_inputs == 1 && op->n_outputs == 1) {
            strmap_put(&f->alias, op->outputs[0], (void *)op->inputs[0]);
            f->dead[i] = true;
            continue;
        }
        if (op->kind != CTOSA_OP_TRANSPOSE || op->n_inputs != 1 || op->n_outputs != 1) continue;
        uint32_t r = op->attr.perms.n;
        const int32_t *p = op->attr.perms.v;
        if (r == 0 || r > LOWER_MAX_RANK || !p) continue;
        if (is_identity_perm(p, r)) {
            strmap_put(&f->alias, op->outputs[0], (void *)op->inputs[0]);
            f->dead[i] = true;
            continue;
        }
        ctosa_op *t1 = producer_of(f, op->inputs[0]);
        if (!t1 || t1->kind != CTOSA_OP_TRANSPOSE || t1->attr.perms.n != r || !t1->attr.perms.v) continue;
        int32_t *q = arena_alloc(&f->a, r * sizeof *q);
        if (!q) continue;
        for (uint32_t d = 0; d < r; d++) q[d] = t1->attr.perms.v[p[d]];
        if (is_identity_perm(q, r)) {
            strmap_put(&f->alias, op->outputs[0], (void *)t1->inputs[0]);
            f->dead[i] = true;
        } else {
            op->inputs[0] = t1->inputs[0];
            op->attr.perms.v = q;
        }
    }
    (void)n_out;
    (void)out_src;
}

/* TRANSPOSE(x) -> U -> y  becomes  U(x) -> TRANSPOSE -> y  when the
 * transposed value has no other use: the moved TRANSPOSE may then meet the
 * next one. Shapes of the unary's output change, so a new tensor is made
 * in the final graph (recorded in `reshaped`). */
typedef struct moved {
    const char *name;   /* the unary's output, now in the pre-transpose layout */
    ctosa_dtype dtype;  /* the unary's output type (CAST changes it) */
    uint32_t rank;
    int32_t shape[LOWER_MAX_RANK];
} moved;

static uint32_t push_through_unary(fin *f, moved *mv, uint32_t cap, const char *const *keep, uint32_t n_keep) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->n_ops && n < cap; i++) {
        ctosa_op *u = f->ops[i];
        if (f->dead[i] || !unary_elementwise(u->kind) || u->n_inputs != 1 || u->n_outputs != 1) continue;
        uintptr_t ti = (uintptr_t)strmap_get(&f->producer, u->inputs[0]);
        if (!ti || f->dead[ti - 1]) continue;
        ctosa_op *t = f->ops[ti - 1];
        if (t->kind != CTOSA_OP_TRANSPOSE || t->n_inputs != 1) continue;
        bool kept = false;
        for (uint32_t k = 0; k < n_keep; k++) kept |= strcmp(resolve(f, keep[k]), u->inputs[0]) == 0;
        if (kept || uses_of(f, u->inputs[0]) != 1) continue;
        const ctosa_tensor *x = ctosa_block_find_tensor(f->sg, f->sb, t->inputs[0]);
        const ctosa_tensor *yt = ctosa_block_find_tensor(f->sg, f->sb, u->outputs[0]);
        if (!x || !yt || x->rank > LOWER_MAX_RANK) continue;
        /* Swap: u reads x and writes `mid` (x's shape); the transpose reads
         * mid and writes u's old output. Both ops are moved to u's slot in
         * order: reuse t's op object for the transpose. */
        const char *mid = u->inputs[0]; /* reuse the old transposed name for the unary output */
        const char *y = u->outputs[0];
        u->inputs[0] = t->inputs[0];
        u->outputs[0] = (char *)mid;
        t->inputs[0] = (char *)mid;
        t->outputs[0] = (char *)y;
        /* t must now run after u: swap the two op slots' contents order. */
        f->ops[ti - 1] = u;
        f->ops[i] = t;
        strmap_put(&f->producer, mid, (void *)(uintptr_t)ti);
        strmap_put(&f->producer, y, (void *)(uintptr_t)(i + 1));
        mv[n].name = mid;
        mv[n].dtype = yt->dtype;
        mv[n].rank = x->rank;
        for (uint32_t d = 0; d < x->rank; d++) mv[n].shape[d] = x->shape[d];
        n++;
    }
    return n;
}

ctosa_error *lw_finalize_graph(const ctosa_graph *src_g, const ctosa_block *src, uint32_t n_in,
                               const char *const *in, uint32_t n_out,
                               const char *const *out_src, const char *const *out_name,
                               ctosa_graph **out) {
    fin f;
    memset(&f, 0, sizeof f);
    f.sg = src_g;
    f.sb = src;
    arena_init(&f.a, 0);
    strmap_init(&f.alias);
    strmap_init(&f.producer);
    ctosa_error *e = NULL;
    ctosa_graph *g = NULL;
    strmap rename, needed;
    strmap_init(&rename);
    strmap_init(&needed);
    f.n_ops = src->n_ops;
    f.ops = arena_zalloc(&f.a, (f.n_ops + 1) * sizeof *f.ops);
    f.dead = arena_zalloc(&f.a, f.n_ops + 1);
    moved *mv = arena_zalloc(&f.a, (f.n_ops + 1) * sizeof *mv);
    if (!f.ops || !f.dead || !mv) {
        e = ctosa_error_nomem();
        goto done;
    }
    for (uint32_t i = 0; i < f.n_ops; i++) {
        ctosa_op *op = arena_memdup(&f.a, src->ops[i], sizeof *op);
        if (!op) { e = ctosa_error_nomem(); goto done; }
        op->inputs = arena_zalloc(&f.a, (op->n_inputs + 1) * sizeof(char *));
        op->outputs = arena_zalloc(&f.a, (op->n_outputs + 1) * sizeof(char *));
        if (!op->inputs || !op->outputs) { e = ctosa_error_nomem(); goto done; }
        if (op->n_inputs) memcpy(op->inputs, src->ops[i]->inputs, op->n_inputs * sizeof(char *));
        if (op->n_outputs) memcpy(op->outputs, src->ops[i]->outputs, op->n_outputs * sizeof(char *));
        f.ops[i] = op;
        for (uint32_t k = 0; k < op->n_outputs; k++)
            strmap_put(&f.producer, op->outputs[k], (void *)(uintptr_t)(i + 1));
    }
    pass_transposes(&f, n_out, out_src);
    uint32_t n_moved = push_through_unary(&f, mv, f.n_ops, out_src, n_out);
    if (n_moved) pass_transposes(&f, n_out, out_src);

    /* Liveness: block outputs, then backwards. */
    for (uint32_t k = 0; k < n_out; k++) strmap_put(&needed, resolve(&f, out_src[k]), (void *)1);
    for (uint32_t i = f.n_ops; i-- > 0;) {
        if (f.dead[i]) continue;
        ctosa_op *op = f.ops[i];
        bool live = false;
        for (uint32_t k = 0; k < op->n_outputs; k++) live |= strmap_has(&needed, op->outputs[k]);
        if (!live) {
            f.dead[i] = true;
            continue;
        }
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            op->inputs[k] = (char *)resolve(&f, op->inputs[k]);
            strmap_put(&needed, op->inputs[k], (void *)1);
        }
    }

    /* Final names of outputs: rename the producing tensor when possible. */
    bool *via_identity = arena_zalloc(&f.a, n_out + 1);
    if (!via_identity) { e = ctosa_error_nomem(); goto done; }
    for (uint32_t k = 0; k < n_out; k++) {
        const char *s = resolve(&f, out_src[k]);
        bool is_input = false;
        for (uint32_t j = 0; j < n_in; j++) is_input |= strcmp(in[j], s) == 0;
        if (is_input || strmap_has(&rename, s) || !strmap_get(&f.producer, s)) via_identity[k] = true;
        else strmap_put(&rename, s, (void *)out_name[k]);
    }

    ctosa_region *r;
    ctosa_block *b;
    if ((e = ctosa_graph_create(ctosa_graph_version(src_g), &g))) goto done;
    if ((e = ctosa_graph_add_region(g, "main", &r))) goto done;
    if ((e = ctosa_region_add_block(g, r, "main", &b))) goto done;
    for (uint32_t j = 0; j < n_in; j++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(src_g, src, in[j]);
        if (!t) { e = ctosa_error_new(CTOSA_ERR_INTERNAL, "partition input '%s' missing", in[j]); goto done; }
        if ((e = ctosa_block_add_tensor(g, b, t->name, t->dtype, t->rank, t->shape, NULL))) goto done;
        if ((e = ctosa_block_add_input(g, b, t->name))) goto done;
    }
    for (uint32_t i = 0; i < f.n_ops; i++) {
        if (f.dead[i]) continue;
        ctosa_op *op = f.ops[i];
        const char **ins = arena_alloc(&f.a, (op->n_inputs + 1) * sizeof *ins);
        const char **outs = arena_alloc(&f.a, (op->n_outputs + 1) * sizeof *outs);
        if (!ins || !outs) { e = ctosa_error_nomem(); goto done; }
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            const char *nm = strmap_get(&rename, op->inputs[k]);
            ins[k] = nm ? nm : op->inputs[k];
        }
        for (uint32_t k = 0; k < op->n_outputs; k++) {
            const char *sn = op->outputs[k];
            const char *nm = strmap_get(&rename, sn);
            outs[k] = nm ? nm : sn;
            const ctosa_tensor *t = ctosa_block_find_tensor(src_g, src, sn);
            if (!t) { e = ctosa_error_new(CTOSA_ERR_INTERNAL, "tensor '%s' missing", sn); goto done; }
            if (ctosa_block_find_tensor(g, b, outs[k])) {
                e = ctosa_error_new(CTOSA_ERR_INTERNAL, "tensor '%s' defined twice", outs[k]);
                goto done;
            }
            ctosa_tensor *nt = NULL;
            if (t->is_shape) {
                int64_t vals[64];
                uint32_t cnt = t->shape && t->rank ? (uint32_t)t->shape[0] : 0;
                bool have = t->data.kind == CTOSA_DATA_MEMORY && t->data.ptr && cnt <= 64 && t->data.size >= cnt * 8u;
                for (uint32_t q = 0; have && q < cnt; q++) vals[q] = (int64_t)rd_u64((const uint8_t *)t->data.ptr + 8 * q);
                if ((e = ctosa_block_add_shape(g, b, outs[k], cnt, have ? vals : NULL, &nt))) goto done;
                continue;
            }
            uint32_t rank = t->rank;
            const int32_t *shape = t->shape;
            ctosa_dtype dt = t->dtype;
            for (uint32_t m = 0; m < n_moved; m++)
                if (strcmp(mv[m].name, sn) == 0) {
                    rank = mv[m].rank;
                    shape = mv[m].shape;
                    dt = mv[m].dtype;
                }
            if ((e = ctosa_block_add_tensor(g, b, outs[k], dt, rank, shape, &nt))) goto done;
            if (t->data.kind == CTOSA_DATA_MEMORY)
                e = ctosa_tensor_set_data(g, nt, t->data.ptr, t->data.size, false);
            else if (t->data.kind == CTOSA_DATA_FILE)
                e = ctosa_tensor_set_data_file(g, nt, t->data.path, t->data.fd, t->data.offset, t->data.size);
            if (e) goto done;
        }
        ctosa_op *nop = NULL;
        if ((e = ctosa_block_add_op(g, b, op->kind, op->n_inputs, ins, op->n_outputs, outs, &op->attr, &nop)))
            goto done;
        if (op->location && (e = ctosa_op_set_location(g, nop, op->location))) goto done;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        if (via_identity[k]) {
            const char *s = resolve(&f, out_src[k]);
            const char *sn = strmap_get(&rename, s);
            if (!sn) sn = s;
            const ctosa_tensor *t = ctosa_block_find_tensor(g, b, sn);
            if (!t) { e = ctosa_error_new(CTOSA_ERR_INTERNAL, "output source '%s' missing", sn); goto done; }
            if ((e = ctosa_block_add_tensor(g, b, out_name[k], t->dtype, t->rank, t->shape, NULL))) goto done;
            const char *o = out_name[k];
            if ((e = ctosa_block_add_op(g, b, CTOSA_OP_IDENTITY, 1, &sn, 1, &o, NULL, NULL))) goto done;
        }
        if ((e = ctosa_block_add_output(g, b, out_name[k]))) goto done;
    }
done:
    strmap_free(&rename);
    strmap_free(&needed);
    strmap_free(&f.alias);
    strmap_free(&f.producer);
    arena_free(&f.a);
    if (e) {
        ctosa_graph_free(g);
        g = NULL;
    }
    *out = g;
    return e;
}
