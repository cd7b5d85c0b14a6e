/* opt_transpose.c - clean-up of a lowered partition and its copy into the
 * final graph.
 *
 * Operator lowerings keep ONNX layouts at their boundaries and transpose
 * in and out around NHWC operators, so a chain Conv -> Relu -> Conv lowers
 * to ... TRANSPOSE(NHWC->NCHW) -> [NCHW op] -> TRANSPOSE(NCHW->NHWC) ...;
 * this pass, in rounds until nothing changes,
 *   - drops IDENTITY operators and identity transposes,
 *   - composes TRANSPOSE(TRANSPOSE(x)) into one TRANSPOSE (none when they
 *     cancel), folds TRANSPOSE and RESHAPE of constants into constants,
 *     RESHAPE(RESHAPE(x)) into one RESHAPE, and RESHAPE of a transpose
 *     that only moves size-1 dimensions into a RESHAPE of its input,
 *   - moves transposes through layout-agnostic operators so that inverse
 *     pairs meet (opt_transpose_layout.c),
 *   - merges chains of RESCALEs where that is exact (opt_rescale.c),
 *   - drops operators whose results nobody uses,
 * and writes the result into a new graph whose outputs carry the ONNX
 * names. Constant data is borrowed, not copied (except constants the pass
 * permuted). ctosa_lower_options.no_layout turns the
 * layout propagation and the constant folds off (to measure what they
 * gain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/opt/opt_transpose_int.h"

static bool valid_perm(const ctosa_i32s *p, uint32_t rank) {
    if (!p->v || p->n != rank || rank == 0 || rank > LOWER_MAX_RANK) return false;
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; d++) {
        if (p->v[d] < 0 || (uint32_t)p->v[d] >= rank || (seen >> p->v[d] & 1)) return false;
        seen |= 1u << p->v[d];
    }
    return true;
}

static bool identity_perm(const int32_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (p[i] != (int32_t)i) return false;
    return true;
}

static void resolve_all(ot *s, uint32_t n_out, const uint32_t *out_ids) {
    for (int32_t oi = s->head; oi >= 0; oi = s->o[oi].next) {
        if (s->o[oi].dead) continue;
        for (uint32_t k = 0; k < s->o[oi].n_in; k++) s->o[oi].in[k] = ot_resolve(s, s->o[oi].in[k]);
    }
    for (uint32_t t = 0; t < s->nt; t++) s->t[t].is_out = false;
    for (uint32_t k = 0; k < n_out; k++) s->t[ot_resolve(s, out_ids[k])].is_out = true;
}

/* Marks operators whose outputs nobody reads as dead (backwards sweep). */
static bool liveness(ot *s) {
    bool *needed = calloc(s->nt + 1, 1);
    if (!needed) return false;
    for (uint32_t t = 0; t < s->nt; t++) needed[t] = s->t[t].is_out;
    for (int32_t oi = s->tail; oi >= 0; oi = s->o[oi].prev) {
        ot_op *o = &s->o[oi];
        if (o->dead) continue;
        bool live = o->n_out == 0 || ctosa_op_has(o->kind, CTOSA_OPF_SIDE_EFFECT);
        for (uint32_t k = 0; k < o->n_out; k++) live |= needed[o->out[k]];
        if (!live) {
            o->dead = true;
            continue;
        }
        for (uint32_t k = 0; k < o->n_in; k++) needed[o->in[k]] = true;
    }
    free(needed);
    return true;
}

static int32_t live_producer(const ot *s, uint32_t t, ctosa_op_kind kind) {
    int32_t p = s->t[t].producer;
    if (p < 0 || s->o[p].dead || s->o[p].kind != kind) return -1;
    return p;
}

/* Peephole rules; returns how many applied. */
static uint32_t local_rules(ot *s, bool fold_consts, strmap *cse) {
    uint32_t n = 0;
    for (int32_t oi = s->head; oi >= 0 && !s->oom; oi = s->o[oi].next) {
        ot_op *o = &s->o[oi];
        if (o->dead) continue;
        if (o->kind == CTOSA_OP_IDENTITY && o->n_in == 1 && o->n_out == 1) {
            s->t[o->out[0]].alias = (int32_t)ot_resolve(s, o->in[0]);
            o->dead = true;
            n++;
            continue;
        }
        if (o->kind == CTOSA_OP_TRANSPOSE && o->n_in == 1 && o->n_out == 1) {
            uint32_t x = ot_resolve(s, o->in[0]);
            uint32_t r = s->t[x].rank;
            if (!valid_perm(&o->attr.perms, r)) continue;
            if (identity_perm(o->attr.perms.v, r)) {
                s->t[o->out[0]].alias = (int32_t)x;
                o->dead = true;
                n++;
                continue;
            }
            int32_t pi = live_producer(s, x, CTOSA_OP_TRANSPOSE);
            if (pi >= 0 && s->o[pi].n_in == 1 &&
                valid_perm(&s->o[pi].attr.perms, s->t[s->o[pi].in[0]].rank) &&
                s->t[s->o[pi].in[0]].rank == r) {
                int32_t *q = arena_alloc(&s->a, r * sizeof *q);
                if (!q) {
                    s->oom = true;
                    break;
                }
                for (uint32_t d = 0; d < r; d++) q[d] = s->o[pi].attr.perms.v[o->attr.perms.v[d]];
                uint32_t inner = ot_resolve(s, s->o[pi].in[0]);
                n++;
                if (identity_perm(q, r)) {
                    s->t[o->out[0]].alias = (int32_t)inner;
                    o->dead = true;
                    continue;
                }
                o->in[0] = inner;
                o->attr.perms.v = q;
                x = inner;
            }
            if (fold_consts) {
                /* Two transposes of one tensor with one perm: keep the first. */
                char *key = arena_printf(&s->a, "%u", x);
                for (uint32_t d = 0; key && d < r; d++)
                    key = arena_printf(&s->a, "%s,%d", key, o->attr.perms.v[d]);
                if (!key) {
                    s->oom = true;
                    break;
                }
                uintptr_t prev = (uintptr_t)strmap_get(cse, key);
                if (prev && !s->o[prev - 1].dead) {
                    s->t[o->out[0]].alias = (int32_t)s->o[prev - 1].out[0];
                    o->dead = true;
                    n++;
                    continue;
                }
                if (!strmap_put(cse, key, (void *)(uintptr_t)(oi + 1))) s->oom = true;
            }
            if (fold_consts && ot_is_const(s, x) && ot_const_permutable(s, x, o->attr.perms.v)) {
                uint32_t c = ot_const_permute(s, x, o->attr.perms.v);
                if (s->oom) break;
                o = &s->o[oi]; /* the op array may have moved */
                s->t[o->out[0]].alias = (int32_t)c;
                o->dead = true;
                n++;
            }
            continue;
        }
        if (o->kind == CTOSA_OP_RESHAPE && o->n_in == 2 && o->n_out == 1 && fold_consts) {
            uint32_t x = ot_resolve(s, o->in[0]);
            int32_t pt = live_producer(s, x, CTOSA_OP_TRANSPOSE);
            if (pt >= 0 && s->o[pt].n_in == 1) {
                uint32_t tx = ot_resolve(s, s->o[pt].in[0]);
                if (valid_perm(&s->o[pt].attr.perms, s->t[tx].rank) &&
                    ot_perm_trivial(s->t[tx].shape, s->o[pt].attr.perms.v, s->t[tx].rank)) {
                    o->in[0] = x = tx;
                    n++;
                }
            }
            int32_t pr = live_producer(s, x, CTOSA_OP_RESHAPE);
            if (pr >= 0 && s->o[pr].n_in == 2) {
                o->in[0] = x = ot_resolve(s, s->o[pr].in[0]);
                n++;
            }
            ot_tensor *y = &s->t[o->out[0]];
            const ot_tensor *xt = &s->t[x];
            if (!y->is_shape && !xt->is_shape && y->dtype == xt->dtype && y->rank == xt->rank &&
                memcmp(y->shape, xt->shape, y->rank * sizeof *y->shape) == 0) {
                /* Same shape: nothing to do. */
                y->alias = (int32_t)x;
                o->dead = true;
                n++;
                continue;
            }
            if (ot_is_const(s, x) && !y->is_shape && y->dtype == s->t[x].dtype &&
                y->data.kind == CTOSA_DATA_NONE) {
                /* Same bytes, new shape: the RESHAPE becomes a CONST. */
                y->data = s->t[x].data;
                y->data_copy = s->t[x].data_copy;
                o->kind = CTOSA_OP_CONST;
                o->n_in = 0;
                memset(&o->attr, 0, sizeof o->attr);
                n++;
            }
        }
    }
    return n;
}

static ctosa_error *load(ot *s, const ctosa_block *sb) {
    uint32_t n = sb->n_tensors + sb->n_shapes;
    s->capt = n + 1; /* grows by doubling (kept tight: tests exercise growth) */
    s->t = calloc(s->capt, sizeof *s->t);
    s->capo = sb->n_ops + 1;
    s->o = calloc(s->capo, sizeof *s->o);
    if (!s->t || !s->o) return ctosa_error_nomem();
    for (uint32_t i = 0; i < n; i++) {
        const ctosa_tensor *src = i < sb->n_tensors ? sb->tensors[i] : sb->shapes[i - sb->n_tensors];
        if (strmap_has(&s->names, src->name)) continue;
        if (src->rank > LOWER_MAX_RANK && !src->is_shape)
            return ctosa_error_new(CTOSA_ERR_INTERNAL, "tensor '%s' has rank %u", src->name, src->rank);
        ot_tensor *t = &s->t[s->nt];
        t->name = src->name;
        t->dtype = src->dtype;
        t->is_shape = src->is_shape;
        t->rank = src->is_shape ? 0 : src->rank;
        for (uint32_t d = 0; d < t->rank; d++) t->shape[d] = src->shape[d];
        t->src = src;
        t->data = src->data;
        t->producer = -1;
        t->alias = -1;
        if (!strmap_put(&s->names, src->name, (void *)(uintptr_t)(s->nt + 1))) return ctosa_error_nomem();
        s->nt++;
    }
    s->head = s->tail = -1;
    for (uint32_t i = 0; i < sb->n_ops; i++) {
        const ctosa_op *op = sb->ops[i];
        uint32_t in[64], out[64];
        uint32_t *ins = op->n_inputs <= 64 ? in : arena_alloc(&s->a, op->n_inputs * sizeof *ins);
        uint32_t *outs = op->n_outputs <= 64 ? out : arena_alloc(&s->a, op->n_outputs * sizeof *outs);
        if (!ins || !outs) return ctosa_error_nomem();
        for (uint32_t k = 0; k < op->n_inputs + op->n_outputs; k++) {
            const char *nm = k < op->n_inputs ? op->inputs[k] : op->outputs[k - op->n_inputs];
            uintptr_t id = (uintptr_t)strmap_get(&s->names, nm);
            if (!id)
                return ctosa_error_new(CTOSA_ERR_INTERNAL, "operator #%u %s: tensor '%s' missing", i,
                                       ctosa_op_name(op->kind), nm);
            if (k < op->n_inputs) ins[k] = (uint32_t)(id - 1);
            else outs[k - op->n_inputs] = (uint32_t)(id - 1);
        }
        ot_new_op(s, op->kind, op->n_inputs, ins, op->n_outputs, outs, &op->attr, op->location, s->tail);
        if (s->oom) return ctosa_error_nomem();
    }
    return NULL;
}

static uint32_t lookup(ot *s, const char *name, bool *ok) {
    uintptr_t id = (uintptr_t)strmap_get(&s->names, name);
    if (!id || id > s->nt) {
        *ok = false;
        return 0;
    }
    return (uint32_t)(id - 1);
}

static ctosa_error *add_final_tensor(ctosa_graph *g, ctosa_block *b, const ot_tensor *t, const char *name) {
    ctosa_tensor *nt = NULL;
    ctosa_error *e;
    if (t->is_shape) {
        const ctosa_tensor *src = t->src;
        int64_t vals[64];
        uint32_t cnt = src && src->shape && src->rank ? (uint32_t)src->shape[0] : 0;
        bool have = src && src->data.kind == CTOSA_DATA_MEMORY && src->data.ptr && cnt <= 64 &&
                    src->data.size >= cnt * 8u;
        for (uint32_t q = 0; have && q < cnt; q++)
            vals[q] = (int64_t)rd_u64((const uint8_t *)src->data.ptr + 8 * q);
        return ctosa_block_add_shape(g, b, name, cnt, have ? vals : NULL, &nt);
    }
    if ((e = ctosa_block_add_tensor(g, b, name, t->dtype, t->rank, t->shape, &nt))) return e;
    if (t->data.kind == CTOSA_DATA_MEMORY)
        return ctosa_tensor_set_data(g, nt, t->data.ptr, t->data.size, t->data_copy);
    if (t->data.kind == CTOSA_DATA_FILE)
        return ctosa_tensor_set_data_file(g, nt, t->data.path, t->data.fd, t->data.offset, t->data.size);
    if (t->data.kind == CTOSA_DATA_GENERATED) return ot_copy_data(g, nt, &t->data); /* streamed permutes */
    return NULL;
}

ctosa_error *lw_finalize_graph(const lower_session *ls, const ctosa_graph *src_g, const ctosa_block *src,
                               uint32_t n_in, const char *const *in, uint32_t n_out,
                               const char *const *out_src, const char *const *out_name, ctosa_graph **out) {
    ot s;
    memset(&s, 0, sizeof s);
    arena_init(&s.a, 0);
    strmap_init(&s.names);
    ctosa_error *e = NULL;
    ctosa_graph *g = NULL;
    const char **final = NULL;
    bool *via_identity = NULL;
    uint32_t *out_ids = NULL;
    bool layout = !ls || !ls->no_layout;
    s.stream_min = ls ? ls->stream_min : LW_LARGE_CONST_BYTES;
    FILE *debug = ls ? ls->debug : NULL;
    if ((e = load(&s, src))) goto done;
    out_ids = calloc(n_out + 1, sizeof *out_ids);
    via_identity = calloc(n_out + 1, sizeof *via_identity);
    if (!out_ids || !via_identity) {
        e = ctosa_error_nomem();
        goto done;
    }
    bool ok = true;
    for (uint32_t k = 0; k < n_out; k++) out_ids[k] = lookup(&s, out_src[k], &ok);
    for (uint32_t j = 0; j < n_in && ok; j++) s.t[lookup(&s, in[j], &ok)].is_in = true;
    if (!ok) {
        e = ctosa_error_new(CTOSA_ERR_INTERNAL, "partition input or output missing from the lowered block");
        goto done;
    }
    /* Output names are reserved: new tensors must not take them. */
    for (uint32_t k = 0; k < n_out; k++)
        if (!strmap_has(&s.names, out_name[k]) &&
            !strmap_put(&s.names, out_name[k], (void *)(uintptr_t)UINT32_MAX)) {
            e = ctosa_error_nomem();
            goto done;
        }

    uint32_t rounds = 0, switches = 0, rewrites = 0;
    for (int round = 0; round < 64 && !s.oom; round++) {
        rounds++;
        resolve_all(&s, n_out, out_ids);
        if (!liveness(&s)) s.oom = true;
        strmap cse;
        strmap_init(&cse);
        uint32_t changed = local_rules(&s, layout, &cse);
        strmap_free(&cse);
        if (!s.oom) changed += ot_rescale_round(&s);
        resolve_all(&s, n_out, out_ids);
        if (!liveness(&s)) s.oom = true;
        rewrites += changed;
        uint32_t sw = layout && !s.oom ? ot_layout_round(&s) : 0;
        switches += sw;
        if (!changed && !sw) break;
    }
    if (debug)
        fprintf(debug, "transpose pass: %u operators, %u rounds, %u rewrites, %u layout switches\n",
                src->n_ops, rounds, rewrites, switches);
    resolve_all(&s, n_out, out_ids);
    if (s.oom || !liveness(&s)) {
        e = ctosa_error_nomem();
        goto done;
    }

    /* Final names: outputs take their ONNX names when they can. */
    final = calloc(s.nt + 1, sizeof *final);
    if (!final) {
        e = ctosa_error_nomem();
        goto done;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        uint32_t t = ot_resolve(&s, out_ids[k]);
        int32_t p = s.t[t].producer;
        if (s.t[t].is_in || final[t] || p < 0 || s.o[p].dead) via_identity[k] = true;
        else final[t] = out_name[k];
    }
    for (uint32_t t = 0; t < s.nt; t++)
        if (!final[t]) final[t] = s.t[t].name;

    ctosa_region *r;
    ctosa_block *b;
    if ((e = ctosa_graph_create(ctosa_graph_version(src_g), &g))) goto done;
    if ((e = ctosa_graph_add_region(g, "main", &r))) goto done;
    if ((e = ctosa_region_add_block(g, r, "main", &b))) goto done;
    for (uint32_t j = 0; j < n_in; j++) {
        uint32_t t = lookup(&s, in[j], &ok);
        if ((e = add_final_tensor(g, b, &s.t[t], in[j]))) goto done;
        if ((e = ctosa_block_add_input(g, b, in[j]))) goto done;
    }
    for (int32_t oi = s.head; oi >= 0; oi = s.o[oi].next) {
        ot_op *op = &s.o[oi];
        if (op->dead) continue;
        const char **ins = arena_alloc(&s.a, (op->n_in + 1) * sizeof *ins);
        const char **outs = arena_alloc(&s.a, (op->n_out + 1) * sizeof *outs);
        if (!ins || !outs) {
            e = ctosa_error_nomem();
            goto done;
        }
        for (uint32_t k = 0; k < op->n_in; k++) ins[k] = final[op->in[k]];
        for (uint32_t k = 0; k < op->n_out; k++) {
            outs[k] = final[op->out[k]];
            if (ctosa_block_find_tensor(g, b, outs[k])) {
                e = ctosa_error_new(CTOSA_ERR_INTERNAL, "tensor '%s' defined twice", outs[k]);
                goto done;
            }
            if ((e = add_final_tensor(g, b, &s.t[op->out[k]], outs[k]))) goto done;
        }
        ctosa_op *nop = NULL;
        if ((e = ctosa_block_add_op(g, b, op->kind, op->n_in, ins, op->n_out, outs, &op->attr, &nop)))
            goto done;
        if (op->location && (e = ctosa_op_set_location(g, nop, op->location))) goto done;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        if (via_identity[k]) {
            const char *sn = final[ot_resolve(&s, out_ids[k])];
            const ctosa_tensor *t = ctosa_block_find_tensor(g, b, sn);
            if (!t) {
                e = ctosa_error_new(CTOSA_ERR_INTERNAL, "output source '%s' missing", sn);
                goto done;
            }
            if ((e = ctosa_block_add_tensor(g, b, out_name[k], t->dtype, t->rank, t->shape, NULL))) goto done;
            const char *o = out_name[k];
            if ((e = ctosa_block_add_op(g, b, CTOSA_OP_IDENTITY, 1, &sn, 1, &o, NULL, NULL))) goto done;
        }
        if ((e = ctosa_block_add_output(g, b, out_name[k]))) goto done;
    }
done:
    free(final);
    free(via_identity);
    free(out_ids);
    free(s.t);
    free(s.o);
    strmap_free(&s.names);
    arena_free(&s.a);
    if (e) {
        ctosa_graph_free(g);
        g = NULL;
    }
    *out = g;
    return e;
}
