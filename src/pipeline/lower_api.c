/* lower_api.c - ctosa_lower_file(): the whole lowering pipeline.
 *
 *   load + values -> per-node support decisions (scratch lowering +
 *   validation, folding) -> partitions -> one TOSA graph per partition
 *   (real lowering, transpose pass, validation) -> report / files.
 *
 * A partition whose final graph fails validation (a lowering bug: every
 * node passed on its own) falls back as a whole with internal_error and the
 * partitioning is redone without it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lower/opt/opt_transpose_int.h"
#include "onnx/onnx_writer.h"
#include "pipeline/lower_result.h"

void ctosa_lower_options_init(ctosa_lower_options *opt) { memset(opt, 0, sizeof *opt); }

const ctosa_lower_summary *ctosa_lower_result_summary(const ctosa_lower_result *r) {
    return r ? &r->sum : NULL;
}

bool ctosa_lower_result_constant(const ctosa_lower_result *r, const char *name, ctosa_lower_constant *out) {
    lw_val *v = r && name ? lw_lookup((lower_session *)&r->s, name) : NULL;
    uint64_t count = 1, need = 0;
    if (!v || !v->v.data || !v->v.static_shape) return false;
    for (uint32_t d = 0; d < v->v.rank; d++) count *= (uint64_t)v->v.shape[d];
    if (!ctosa_onnx_dtype_storage(v->v.onnx_dtype, count, &need) || need != v->v.nbytes) return false;
    *out = (ctosa_lower_constant){v->v.onnx_dtype, v->v.rank, v->v.shape, v->v.data, v->v.nbytes};
    return true;
}

static void free_parts(ctosa_lower_result *r) {
    for (uint32_t i = 0; i < r->n_parts; i++) {
        ctosa_graph_free(r->parts[i].final);
        ctosa_graph_free(r->parts[i].work);
    }
    free(r->parts);
    r->parts = NULL;
    r->n_parts = 0;
}

void ctosa_lower_result_free(ctosa_lower_result *r) {
    if (!r) return;
    free_parts(r);
    free(r->report);
    free(r->pub_parts);
    lw_session_close(&r->s);
    arena_free(&r->a);
    free(r);
}

static const char *io_dtype(const lw_val *v) {
    const char *n = onnx_dtype_numpy_name(v->v.onnx_dtype);
    return n ? n : "unknown";
}

static void fill_io(ctosa_lower_result *r, ctosa_lower_io *io, const lw_val *v) {
    memset(io, 0, sizeof *io);
    io->name = v->v.name;
    io->dtype = io_dtype(v);
    io->rank = v->v.rank;
    io->shape = v->v.shape;
    io->quantized = v->v.quantized;
    io->scale = v->v.scale;
    io->zero_point = v->v.zero_point;
    (void)r;
}

/* Is node ni a member of partition p that runs operators? */
static bool delegated_in(lower_session *s, uint32_t ni, int32_t p) {
    return s->nodes[ni].part == p && s->nodes[ni].kind == LW_NODE_DELEGATED;
}

/* The integer value that the output v of a folded DequantizeLinear
 * stands for (its runtime input), NULL when v is not such an output. A
 * folded DequantizeLinear emits nothing: its output is the integer tensor
 * under the float name, so where another partition reads it, that
 * partition reads the integer value under its own name instead, which
 * ONNX and the report describe truthfully (integer type, scale, zero
 * point); partition.c keeps such a DequantizeLinear with one of its
 * consumers, and this covers the others. */
static lw_val *folded_dq_source(lower_session *s, const lw_val *v) {
    if (!v || v->producer < 0 || v->v.data) return NULL;
    uint32_t d = (uint32_t)v->producer;
    const ctosa_onnx_node *n = &s->g->nodes[d];
    if (s->nodes[d].kind != LW_NODE_DELEGATED || s->nodes[d].compute || n->n_inputs < 1 ||
        strcmp(n->op_type, "DequantizeLinear") != 0)
        return NULL;
    lw_val *x = lw_lookup(s, n->inputs[0]);
    return x && !x->v.data ? x : NULL;
}

/* Whether value v is read outside partition p (on the CPU, or by a node
 * delegated to another partition). */
static bool read_outside(lower_session *s, const lw_val *v, int32_t p) {
    for (uint32_t c = 0; c < v->n_consumers; c++) {
        const lw_nodeinfo *cn = &s->nodes[v->consumers[c]];
        if (cn->on_cpu || (cn->part != p && cn->kind == LW_NODE_DELEGATED && cn->part >= 0)) return true;
    }
    return false;
}

/* --max-memory while building partition p: the graphs of partitions
 * 0..p (earlier ones are kept) plus p's scratch arena. */
static bool part_budget_ok(ctosa_lower_result *r, int32_t p, const lw_part *lp, const arena *scratch) {
    uint64_t bytes = (uint64_t)scratch->total + lw_graph_bytes(lp->work) + lw_graph_bytes(lp->final);
    for (int32_t q = 0; q < p; q++)
        bytes += lw_graph_bytes(r->parts[q].work) + lw_graph_bytes(r->parts[q].final);
    char what[64];
    snprintf(what, sizeof what, "building partition %d", p);
    return lw_budget_ok(&r->s, bytes, what);
}

/* Builds partition p: boundary, real lowering, finalisation, validation.
 * Returns false (with *why) when the partition cannot be delegated. */
static bool build_part(ctosa_lower_result *r, int32_t p, lw_part *lp, char **why, bool *retry) {
    lower_session *s = &r->s;
    arena *ra = &r->a;
    uint32_t n = s->n_nodes;
    strmap seen, tmap, reserved, subst;
    strmap_init(&seen);
    strmap_init(&tmap);
    strmap_init(&reserved);
    strmap_init(&subst);
    arena scratch;
    arena_init(&scratch, 0);
    bool ok = false;
    ctosa_error *e = NULL;
    *why = NULL;
    uint32_t cap_in = 8, cap_out = 8;
    lp->in = arena_alloc(ra, cap_in * sizeof *lp->in);
    lp->out = arena_alloc(ra, cap_out * sizeof *lp->out);
    lp->n_in = lp->n_out = lp->n_members = 0;
    for (uint32_t i = 0; i < n; i++) lp->n_members += s->nodes[i].part == p;
    lp->members = arena_alloc(ra, (lp->n_members + 1) * sizeof *lp->members);
    uint32_t n_sub = 0, cap_sub = 8;
    const lw_val **sub = arena_alloc(&scratch, cap_sub * sizeof *sub);
    if (!lp->in || !lp->out || !lp->members || !sub) goto out;
    lp->n_members = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (s->nodes[i].part != p) continue;
        lp->members[lp->n_members++] = i;
        if (s->nodes[i].kind != LW_NODE_DELEGATED) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        for (uint32_t k = 0; k < nd->n_inputs; k++) {
            lw_val *v = lw_lookup(s, nd->inputs[k]);
            lw_val *src = v && v->producer >= 0 && !delegated_in(s, (uint32_t)v->producer, p)
                              ? folded_dq_source(s, v)
                              : NULL;
            if (src) {
                /* read the integer value the DequantizeLinear stands for */
                if (!strmap_has(&subst, v->v.name)) {
                    if (n_sub == cap_sub) {
                        const lw_val **nv = arena_alloc(&scratch, cap_sub * 2 * sizeof *nv);
                        if (!nv) goto out;
                        memcpy(nv, sub, n_sub * sizeof *nv);
                        sub = nv;
                        cap_sub *= 2;
                    }
                    sub[n_sub++] = v;
                    if (!strmap_put(&subst, v->v.name, (void *)src->v.name)) goto out;
                }
                v = src;
            }
            if (!v || v->v.data || strmap_has(&seen, v->v.name)) continue;
            if (v->producer >= 0 && delegated_in(s, (uint32_t)v->producer, p)) continue;
            if (lp->n_in == cap_in) {
                const lw_val **nv = arena_alloc(ra, cap_in * 2 * sizeof *nv);
                if (!nv) goto out;
                memcpy(nv, lp->in, cap_in * sizeof *nv);
                lp->in = nv;
                cap_in *= 2;
            }
            lp->in[lp->n_in++] = v;
            strmap_put(&seen, v->v.name, v);
            strmap_put(&reserved, v->v.name, v);
        }
    }
    for (uint32_t m = 0; m < lp->n_members; m++) {
        uint32_t i = lp->members[m];
        if (s->nodes[i].kind != LW_NODE_DELEGATED) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        for (uint32_t k = 0; k < nd->n_outputs; k++) {
            lw_val *v = lw_lookup(s, nd->outputs[k]);
            if (!v || v->v.data) continue;
            bool need = v->graph_output;
            if (folded_dq_source(s, v)) {
                /* other partitions read its integer input instead */
                for (uint32_t c = 0; c < v->n_consumers && !need; c++)
                    need = s->nodes[v->consumers[c]].on_cpu;
            } else {
                need = need || read_outside(s, v, p);
                /* read by another partition through a folded DequantizeLinear of this one */
                for (uint32_t c = 0; c < v->n_consumers && !need; c++) {
                    uint32_t d = v->consumers[c];
                    const ctosa_onnx_node *dn = &s->g->nodes[d];
                    lw_val *dv = dn->n_outputs ? lw_lookup(s, dn->outputs[0]) : NULL;
                    need = delegated_in(s, d, p) && folded_dq_source(s, dv) == v && read_outside(s, dv, p);
                }
            }
            if (!need) continue;
            if (lp->n_out == cap_out) {
                const lw_val **nv = arena_alloc(ra, cap_out * 2 * sizeof *nv);
                if (!nv) goto out;
                memcpy(nv, lp->out, cap_out * sizeof *nv);
                lp->out = nv;
                cap_out *= 2;
            }
            lp->out[lp->n_out++] = v;
            strmap_put(&reserved, v->v.name, v);
        }
    }
    /* An int64 value carried in int32 (no int64 in the spec) cannot cross
     * the boundary: its ONNX type is int64. The nodes touching it fall back
     * and partitioning starts over. */
    if (!lw_spec_has_int64(&s->spec)) {
        bool marked = false;
        for (uint32_t k = 0; k < lp->n_out; k++) {
            const lw_val *v = lp->out[k];
            if (v->v.onnx_dtype != CTOSA_ONNX_INT64 || v->v.t == CTOSA_DTYPE_INT64) continue;
            lw_nodeinfo *pn = &s->nodes[v->producer];
            pn->kind = LW_NODE_FALLBACK;
            pn->code = LOWER_INT64_NOT_ENABLED;
            pn->reason = arena_printf(&s->a,
                                      "output '%s' is an int64 tensor used outside TOSA and the spec has no "
                                      "int64 (needs TOSA-1.1 with +int64)",
                                      v->v.name);
            pn->input = NULL;
            marked = true;
        }
        for (uint32_t k = 0; k < lp->n_in; k++) {
            const lw_val *v = lp->in[k];
            if (v->v.onnx_dtype != CTOSA_ONNX_INT64 || v->v.t == CTOSA_DTYPE_INT64) continue;
            for (uint32_t c = 0; c < v->n_consumers; c++) {
                lw_nodeinfo *cn = &s->nodes[v->consumers[c]];
                if (cn->part != p || cn->kind != LW_NODE_DELEGATED) continue;
                cn->kind = LW_NODE_FALLBACK;
                cn->code = LOWER_INT64_NOT_ENABLED;
                cn->reason = arena_printf(&s->a,
                                          "input '%s' is an int64 tensor computed at run time and the spec "
                                          "has no int64 (needs TOSA-1.1 with +int64)",
                                          v->v.name);
                cn->input = NULL;
                marked = true;
            }
        }
        if (marked) {
            *retry = true;
            goto out;
        }
    }
    /* Real lowering into the working graph. */
    ctosa_region *rg;
    ctosa_block *b;
    if ((e = ctosa_graph_create(s->spec.version, &lp->work))) goto out;
    if ((e = ctosa_graph_add_region(lp->work, "main", &rg))) goto out;
    if ((e = ctosa_region_add_block(lp->work, rg, "main", &b))) goto out;
    for (uint32_t k = 0; k < lp->n_in; k++) {
        const lw_val *v = lp->in[k];
        if ((e = lw_add_placeholder(lp->work, b, v->v.name, v->v.t, &v->v))) goto out;
        strmap_put(&tmap, v->v.name, (void *)v->v.name);
    }
    /* folded DequantizeLinear outputs of other partitions: their integer input */
    for (uint32_t k = 0; k < n_sub; k++)
        if (!strmap_put(&tmap, sub[k]->v.name, (void *)strmap_get(&subst, sub[k]->v.name))) goto out;
    uint32_t counter = 0;
    for (uint32_t m = 0; m < lp->n_members; m++) {
        uint32_t i = lp->members[m];
        if (s->nodes[i].kind != LW_NODE_DELEGATED) continue;
        const ctosa_onnx_node *nd = &s->g->nodes[i];
        const lower_entry *ent = qdq_entry(s, i);
        if (!ent) ent = lower_find(nd->domain, nd->op_type, s->opset);
        const lower_entry *cent = lw_custom_find(s, i); /* as in decide_node */
        if (cent) ent = cent;
        lower_ctx c;
        lw_ctx_init(&c, s, &s->spec, i, lp->work, b, &scratch, &tmap, &reserved, &counter);
        lower_status st = ent && !c.rejected ? ent->fn(&c) : LOWER_REJECT; /* rejected: init out of memory */
        if (st != LOWER_OK || c.rejected) {
            *why = arena_printf(ra, "partition %d: node '%s' failed to lower a second time: %s", p,
                                s->nodes[i].label, c.msg ? c.msg : "rejected");
            goto out;
        }
        for (uint32_t k = 0; k < nd->n_outputs; k++)
            if (c.out_names[k]) strmap_put(&tmap, nd->outputs[k], (void *)c.out_names[k]);
        if (!part_budget_ok(r, p, lp, &scratch)) goto out; /* s->limit_err says why */
    }
    /* A partition takes only the values its operators read: an input of a
     * member node that the lowering never reads (CastLike's `like` gives
     * only a type) is dropped, so no partition has an input it ignores
     * (which may be empty and that other tools cannot even load). */
    {
        strmap read;
        strmap_init(&read);
        bool mem = true;
        for (uint32_t i = 0; i < b->n_ops && mem; i++)
            for (uint32_t k = 0; k < b->ops[i]->n_inputs && mem; k++)
                mem = !b->ops[i]->inputs[k] || strmap_put(&read, b->ops[i]->inputs[k], (void *)1);
        for (uint32_t k = 0; k < lp->n_out && mem; k++) {
            const char *src = strmap_get(&tmap, lp->out[k]->v.name);
            mem = !src || strmap_put(&read, src, (void *)1);
        }
        uint32_t kept = 0;
        for (uint32_t k = 0; k < lp->n_in && mem; k++)
            if (strmap_has(&read, lp->in[k]->v.name)) lp->in[kept++] = lp->in[k];
        if (mem) lp->n_in = kept;
        strmap_free(&read);
        if (!mem) goto out;
    }
    const char **in_names = arena_alloc(&scratch, (lp->n_in + 1) * sizeof *in_names);
    const char **out_src = arena_alloc(&scratch, (lp->n_out + 1) * sizeof *out_src);
    const char **out_names = arena_alloc(&scratch, (lp->n_out + 1) * sizeof *out_names);
    if (!in_names || !out_src || !out_names) goto out;
    for (uint32_t k = 0; k < lp->n_in; k++) in_names[k] = lp->in[k]->v.name;
    for (uint32_t k = 0; k < lp->n_out; k++) {
        out_names[k] = lp->out[k]->v.name;
        out_src[k] = strmap_get(&tmap, out_names[k]);
        if (!out_src[k]) {
            *why = arena_printf(ra, "partition %d: output '%s' was not produced", p, out_names[k]);
            goto out;
        }
    }
    if ((e = lw_finalize_graph(s, lp->work, b, lp->n_in, in_names, lp->n_out, out_src, out_names,
                               &lp->final)))
        goto out;
    ctosa_validate_options vo = {.max_problems = 4};
    if ((e = ctosa_validate(lp->final, &s->spec, &vo))) {
        *why = arena_printf(ra, "partition %d fails validation as a whole: %s", p, ctosa_error_message(e));
        goto out;
    }
    if (!part_budget_ok(r, p, lp, &scratch)) goto out;
    ok = true;
out:
    if (e && !*why) *why = arena_printf(ra, "partition %d: %s", p, ctosa_error_message(e));
    if (!ok && !*why && !*retry) *why = "out of memory";
    ctosa_error_free(e);
    strmap_free(&seen);
    strmap_free(&tmap);
    strmap_free(&reserved);
    strmap_free(&subst);
    arena_free(&scratch);
    return ok;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Public view of a built partition. */
static ctosa_error *publish_part(ctosa_lower_result *r, uint32_t id, lw_part *lp) {
    arena *a = &r->a;
    lower_session *s = &r->s;
    ctosa_lower_partition *pp = &r->pub_parts[id];
    memset(pp, 0, sizeof *pp);
    pp->id = id;
    pp->file = arena_printf(a, "%s.part%u.tosa", r->stem, id);
    pp->graph = lp->final;
    pp->n_nodes = lp->n_members;
    const char **nodes = arena_alloc(a, (lp->n_members + 1) * sizeof *nodes);
    ctosa_lower_io *ins = arena_zalloc(a, (lp->n_in + 1) * sizeof *ins);
    ctosa_lower_io *outs = arena_zalloc(a, (lp->n_out + 1) * sizeof *outs);
    if (!pp->file || !nodes || !ins || !outs) return ctosa_error_nomem();
    for (uint32_t k = 0; k < lp->n_members; k++) nodes[k] = s->nodes[lp->members[k]].label;
    for (uint32_t k = 0; k < lp->n_in; k++) fill_io(r, &ins[k], lp->in[k]);
    for (uint32_t k = 0; k < lp->n_out; k++) fill_io(r, &outs[k], lp->out[k]);
    pp->nodes = nodes;
    pp->n_inputs = lp->n_in;
    pp->n_outputs = lp->n_out;
    pp->inputs = ins;
    pp->outputs = outs;
    /* operator counts, sorted by name */
    const ctosa_block *b = ctosa_graph_region(lp->final, 0)->blocks[0];
    const char **names = arena_alloc(a, (b->n_ops + 1) * sizeof *names);
    uint32_t *counts = arena_zalloc(a, (b->n_ops + 1) * sizeof *counts);
    if (!names || !counts) return ctosa_error_nomem();
    uint32_t nn = 0;
    const char **all = malloc((b->n_ops + 1) * sizeof *all);
    if (!all) return ctosa_error_nomem();
    for (uint32_t k = 0; k < b->n_ops; k++) {
        const char *nm = ctosa_op_name(b->ops[k]->kind);
        all[k] = nm ? nm : "UNKNOWN";
    }
    qsort(all, b->n_ops, sizeof *all, cmp_str);
    for (uint32_t k = 0; k < b->n_ops; k++) {
        if (nn && strcmp(names[nn - 1], all[k]) == 0) {
            counts[nn - 1]++;
        } else {
            names[nn] = all[k];
            counts[nn++] = 1;
        }
    }
    free(all);
    pp->n_op_counts = nn;
    pp->op_names = names;
    pp->op_counts = counts;
    return NULL;
}

static char *path_join(arena *a, const char *dir, const char *file) {
    if (!file) return NULL; /* a name that could not be allocated */
    size_t n = strlen(dir);
    return arena_printf(a, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", file);
}

static ctosa_error *mkdir_p(const char *dir) {
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return ctosa_error_new(CTOSA_ERR_USAGE, "bad output directory '%s'", dir);
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char ch = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        buf[i] = ch;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ctosa_error_new(CTOSA_ERR_IO, "%s: not a directory", dir);
    return NULL;
}

/* Refuses to write over the input model. */
static ctosa_error *not_the_model(const char *model_real, const char *path) {
    char buf[PATH_MAX];
    if (model_real && realpath(path, buf) && strcmp(buf, model_real) == 0)
        return ctosa_error_new(CTOSA_ERR_USAGE, "output %s would overwrite the input model", path);
    return NULL;
}

/* Weights the graph borrows from the mapped model (pass-through constants:
 * initializers reshaped, not changed) become byte ranges of the model's
 * files, so the writer streams them with copy_file_range and the process
 * never maps their pages in (peak RSS independent of the model size).
 * Only for the files written; small constants stay in memory. */
static ctosa_error *file_backed_weights(const lower_session *s, ctosa_graph *g) {
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        const ctosa_region *r = ctosa_graph_region(g, ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *b = r->blocks[bi];
            for (uint32_t ti = 0; ti < b->n_tensors; ti++) {
                ctosa_tensor *t = b->tensors[ti];
                int fd;
                uint64_t off;
                ot_gen *gen = ot_gen_of(&t->data);
                if (gen) {
                    /* a streamed permute (conv / Gemm weight): read its
                     * source with pread, not through the mapping */
                    if (gen->src.kind == CTOSA_DATA_MEMORY && gen->src.size >= LW_LARGE_CONST_BYTES &&
                        onnx_model_locate(s->m, gen->src.ptr, gen->src.size, &fd, &off)) {
                        gen->src.kind = CTOSA_DATA_FILE;
                        gen->src.ptr = NULL;
                        gen->src.path = NULL;
                        gen->src.fd = fd;
                        gen->src.offset = off;
                    }
                    continue;
                }
                if (t->data.kind != CTOSA_DATA_MEMORY || t->data.size < LW_LARGE_CONST_BYTES ||
                    !onnx_model_locate(s->m, t->data.ptr, t->data.size, &fd, &off))
                    continue;
                ctosa_error *e = ctosa_tensor_set_data_file(g, t, NULL, fd, off, t->data.size);
                if (e) return e;
            }
        }
    }
    return NULL;
}

static ctosa_error *write_outputs(ctosa_lower_result *r, const ctosa_lower_options *opt) {
    lower_session *s = &r->s;
    ctosa_error *e = mkdir_p(opt->output_dir);
    if (e) return e;
    char model_real[PATH_MAX];
    const char *mr = realpath(s->model_path, model_real);
    /* Files written so far: removed again when a later one fails, so a
     * failed lowering leaves no partial output (each file itself is
     * written under a temporary name and renamed). */
    const char **written = arena_alloc(&r->a, (r->sum.n_partitions + 3) * sizeof *written);
    uint32_t n_written = 0;
    if (!written) return ctosa_error_nomem();
    for (uint32_t i = 0; i < r->sum.n_partitions && !e; i++) {
        const char *path = path_join(&r->a, opt->output_dir, r->pub_parts[i].file);
        if (!path) e = ctosa_error_nomem();
        if (!e) e = not_the_model(mr, path);
        if (!e) e = file_backed_weights(s, (ctosa_graph *)r->pub_parts[i].graph);
        if (!e) e = ctosa_write_file(r->pub_parts[i].graph, path, NULL);
        if (!e) written[n_written++] = path;
    }
    if (!e && !opt->no_partitioned_onnx) {
        const char *path =
            path_join(&r->a, opt->output_dir, arena_printf(&r->a, "%s.partitioned.onnx", r->stem));
        if (!path) e = ctosa_error_nomem();
        if (!e) e = not_the_model(mr, path);
        if (!e) e = lw_write_partitioned(r, path);
        if (!e) written[n_written++] = path;
    }
    if (!e && !opt->no_report) {
        const char *path = path_join(&r->a, opt->output_dir, arena_printf(&r->a, "%s.report.json", r->stem));
        if (!path) e = ctosa_error_nomem();
        if (!e) e = not_the_model(mr, path);
        if (!e) e = write_whole_file(path, r->report, strlen(r->report));
    }
    for (uint32_t i = 0; e && i < n_written; i++) unlink(written[i]);
    return e;
}

static const char *default_stem(arena *a, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".onnx") == 0) n -= 5;
    if (n == 0) return "model";
    return arena_strndup(a, base, n);
}

/* The whole lowering of a model read from model_path, or from mem when
 * mem is non-NULL (model_path then only names it). */
static ctosa_error *lower_model(const char *model_path, const void *mem, uint64_t mem_size,
                                const ctosa_spec *spec, const ctosa_lower_options *opt,
                                ctosa_lower_result **out) {
    ctosa_lower_result *r = calloc(1, sizeof *r);
    if (!r) return ctosa_error_nomem();
    arena_init(&r->a, 0);
    ctosa_error *e = mem ? lw_session_open_memory(&r->s, mem, mem_size, model_path, spec, opt)
                         : lw_session_open(&r->s, model_path, spec, opt);
    if (e) {
        ctosa_lower_result_free(r);
        return e;
    }
    lower_session *s = &r->s;
    s->custom = opt->custom_ops;
    s->extra = &r->a; /* the result's arena counts against --max-memory too */
    r->stem = opt->stem && opt->stem[0] ? arena_strdup(&r->a, opt->stem) : default_stem(&r->a, model_path);
    if (!r->stem || strchr(r->stem, '/')) {
        ctosa_lower_result_free(r);
        return ctosa_error_new(CTOSA_ERR_USAGE, "bad output stem '%s'", opt->stem ? opt->stem : "");
    }
    lw_session_decide(s);
    if (s->limit_err) {
        e = s->limit_err;
        s->limit_err = NULL;
        ctosa_lower_result_free(r);
        return e;
    }
    /* Partition, build; a failed partition falls back and we start over. */
    int32_t n_parts = 0;
    for (uint32_t round = 0;; round++) {
        free_parts(r);
        n_parts = part_assign(s);
        if (n_parts < 0) {
            ctosa_lower_result_free(r);
            return ctosa_error_nomem();
        }
        r->parts = calloc((size_t)n_parts + 1, sizeof *r->parts);
        if (!r->parts) {
            ctosa_lower_result_free(r);
            return ctosa_error_nomem();
        }
        r->n_parts = (uint32_t)n_parts;
        bool failed = false;
        for (int32_t p = 0; p < n_parts; p++) {
            char *why = NULL;
            bool retry = false;
            if (build_part(r, p, &r->parts[p], &why, &retry)) continue;
            if (s->limit_err) {
                e = s->limit_err;
                s->limit_err = NULL;
                ctosa_lower_result_free(r);
                return e;
            }
            failed = true;
            if (retry) continue;
            for (uint32_t i = 0; i < s->n_nodes; i++)
                if (s->nodes[i].part == p) {
                    s->nodes[i].kind = LW_NODE_FALLBACK;
                    s->nodes[i].code = LOWER_INTERNAL;
                    s->nodes[i].reason = why;
                    s->nodes[i].input = NULL;
                }
        }
        if (!failed || round > s->n_nodes) break;
    }
    r->pub_parts = calloc((size_t)n_parts + 1, sizeof *r->pub_parts);
    if (!r->pub_parts) {
        ctosa_lower_result_free(r);
        return ctosa_error_nomem();
    }
    for (int32_t p = 0; p < n_parts; p++)
        if ((e = publish_part(r, (uint32_t)p, &r->parts[p]))) {
            ctosa_lower_result_free(r);
            return e;
        }
    if ((e = lw_build_report(r, model_path))) {
        ctosa_lower_result_free(r);
        return e;
    }
    if (opt->output_dir && (e = write_outputs(r, opt))) {
        ctosa_lower_result_free(r);
        return e;
    }
    *out = r;
    return NULL;
}

ctosa_error *ctosa_lower_file(const char *model_path, const ctosa_spec *spec, const ctosa_lower_options *opt,
                              ctosa_lower_result **out) {
    *out = NULL;
    if (!model_path || !spec) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_lower_file: no model or spec");
    ctosa_lower_options defaults;
    ctosa_lower_options_init(&defaults);
    return lower_model(model_path, NULL, 0, spec, opt ? opt : &defaults, out);
}

ctosa_error *ctosa_lower_memory(const void *data, uint64_t size, const char *name, const ctosa_spec *spec,
                                const ctosa_lower_options *opt, ctosa_lower_result **out) {
    *out = NULL;
    if ((!data && size) || !spec)
        return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_lower_memory: no model or spec");
    ctosa_lower_options defaults;
    ctosa_lower_options_init(&defaults);
    if (!opt) opt = &defaults;
    if (!name || !name[0]) name = "<memory>";
    /* The partitioned ONNX is rewritten from the model file's bytes and
     * external data is anchored to its folder: outputs need the file. */
    if (opt->output_dir)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "%s: ctosa_lower_memory keeps results in memory (output_dir must be NULL; "
                               "write files with ctosa_lower_file)",
                               name);
    return lower_model(name, data ? data : "", size, spec, opt, out);
}
