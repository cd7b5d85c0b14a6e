/* validate.c - ctosa_validate(): walks the graph, checks its structure and
 * runs the per-operator rules (rules.c: types, CTC, levels; shape_rules.c:
 * shapes) with each operator's operands resolved.
 *
 * Structure rules checked here:
 *   - every name an operator, block input or block output uses resolves to a
 *     tensor or shape of the block (or, inside a control-flow region, to a
 *     value defined in the calling block before the calling operator: files
 *     produced from MLIR let nested regions capture outer values);
 *   - SSA: every tensor is defined once (block input, constant data, or the
 *     output of one operator) and before it is used; variable tensors are
 *     state and may be written again;
 *   - COND_IF / WHILE_LOOP name existing regions whose block inputs/outputs
 *     match the operator's lists in count, type and shape; no recursion;
 *     nesting below MAX_NESTING of the level;
 *   - variables: VARIABLE_READ/WRITE refer to a declared variable of the
 *     same shape and type, and using variable tensors needs EXT-VARIABLE.
 *
 * Regions are validated when first called, with the caller's definitions
 * visible; regions nobody calls are validated on their own at the end. */
#include <stdlib.h>
#include <string.h>

#include "validate_internal.h"

enum { DEF_INPUT = -1, DEF_CONST = -2, DEF_VAR = -3 };

typedef struct def {
    const ctosa_tensor *t;
    int32_t by; /* producing operator index, or DEF_* */
    bool is_const;
} def;

typedef struct scope {
    const struct scope *parent;
    const ctosa_block *block;
    strmap defs; /* name -> def*, what is defined so far */
} scope;

typedef struct vstate {
    const ctosa_graph *g;
    const ctosa_spec *spec;
    diag_list *d;
    ctosa_diags *sink;              /* structured copies (NULL: text only) */
    const ctosa_region *cur_region; /* where BAD() reports: the region, block and */
    const ctosa_block *cur_block;
    int32_t cur_op; /* operator being checked (-1: block level) */
    arena a;
    uint32_t max_nesting;
    const char *level_name;
    const ctosa_block **stack; /* blocks being validated (call chain) */
    uint32_t depth;
    bool *visited; /* per region index */
    /* per block (ordinal over all regions): called as a block of a region
     * by name (the blocks-in-region form of control flow), validated */
    bool *called_block, *block_done;
    strmap vars;     /* variables declared by VARIABLE ops: name -> tensor */
    strmap var_told; /* variable tensors already reported for EXT-VARIABLE */
    char spec_text[128];
    bool oom;
} vstate;

/* Reports a problem of the operator or block being checked. */
#define BAD_K(v, dk, ...)                                                                                 \
    spec_report((v)->d, (v)->sink, dk, (v)->cur_region, (v)->cur_op,                                      \
                (v)->cur_op >= 0 ? (v)->cur_block->ops[(v)->cur_op]->kind : CTOSA_OP_UNKNOWN, 0, 0, NULL, \
                __VA_ARGS__)
#define BAD(v, ...) BAD_K(v, CTOSA_DIAG_STRUCTURE, __VA_ARGS__)

/* Names in a file may be missing; messages print them as "". */
static const char *nz(const char *s) { return s ? s : ""; }

static const char *op_name(ctosa_op_kind k) {
    const char *n = ctosa_op_name(k);
    return n ? n : "UNKNOWN";
}

static bool put(vstate *v, strmap *m, const char *key, void *val) {
    if (!strmap_put(m, key, val)) {
        v->oom = true;
        return false;
    }
    return true;
}

static const def *lookup(const scope *s, const char *name) {
    for (; s; s = s->parent) {
        const def *x = strmap_get(&s->defs, name);
        if (x) return x;
    }
    return NULL;
}

static def *define(vstate *v, scope *s, const ctosa_tensor *t, int32_t by, bool is_const) {
    def *x = arena_alloc(&v->a, sizeof *x);
    if (!x) {
        v->oom = true;
        return NULL;
    }
    x->t = t;
    x->by = by;
    x->is_const = is_const;
    put(v, &s->defs, t->name, x);
    return x;
}

static int32_t region_index(const ctosa_graph *g, const ctosa_region *r) {
    uint32_t n = ctosa_graph_region_count(g);
    for (uint32_t i = 0; i < n; i++)
        if (ctosa_graph_region(g, i) == r) return (int32_t)i;
    return -1;
}

/* Index of block b over every block of every region (-1 if none). */
static int32_t block_index(const ctosa_graph *g, const ctosa_block *b) {
    int32_t k = 0;
    for (uint32_t i = 0; i < ctosa_graph_region_count(g); i++) {
        const ctosa_region *r = ctosa_graph_region(g, i);
        for (uint32_t j = 0; j < r->n_blocks; j++, k++)
            if (r->blocks[j] == b) return k;
    }
    return -1;
}

/* "region 'x' " for blocks outside the main region. */
static const char *region_label(vstate *v, const ctosa_region *r) {
    if (region_index(v->g, r) == 0) return "";
    const char *rs = arena_printf(&v->a, "region '%s' ", r->name ? r->name : "");
    return rs ? rs : "";
}

static void shape_text(char *buf, size_t n, const ctosa_tensor *t) {
    size_t len =
        (size_t)snprintf(buf, n, "%s[", ctosa_dtype_short(t->dtype) ? ctosa_dtype_short(t->dtype) : "?");
    for (uint32_t i = 0; i < t->rank && t->shape && len + 16 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%d" : "%d", t->shape[i]);
    if (len + 2 <= n) snprintf(buf + len, n - len, "]");
}

static bool same_type_shape(const ctosa_tensor *a, const ctosa_tensor *b) {
    if (a->dtype != b->dtype || a->is_unranked || b->is_unranked) return a->dtype == b->dtype;
    if (a->rank != b->rank) return false;
    if (a->rank && (!a->shape || !b->shape)) return true; /* nothing to compare */
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* Reports a use of a variable tensor when the spec lacks EXT-VARIABLE (once
 * per tensor name). VARIABLE* operators are left to spec_check_op_rules. */
static void var_use(vstate *v, const char *prefix, const ctosa_tensor *t, ctosa_op_kind k) {
    if (!t || !t->variable || (v->spec->extensions & CTOSA_EXT_BIT(VARIABLE))) return;
    if (k == CTOSA_OP_VARIABLE || k == CTOSA_OP_VARIABLE_READ || k == CTOSA_OP_VARIABLE_WRITE) return;
    if (strmap_has(&v->var_told, t->name)) return;
    put(v, &v->var_told, t->name, (void *)t);
    BAD_K(v, CTOSA_DIAG_EXTENSION, "%s: uses variable tensor '%s', which needs EXT-VARIABLE (not in %s)",
          prefix, t->name, v->spec_text);
}

/* --------------------------------------------------------- control flow */

static void check_region(vstate *v, const ctosa_region *r, const scope *parent);
static void check_block(vstate *v, const ctosa_region *r, const ctosa_block *b, const scope *parent);

/* Compares a tensor list of the calling operator with a block's input or
 * output names. */
static void match_list(vstate *v, const char *prefix, const char *list_name, const ctosa_tensor *const *list,
                       const char *const *list_names, uint32_t n, const char *graph_attr,
                       const ctosa_region *r, const ctosa_block *cb, bool outputs) {
    uint32_t cn = outputs ? cb->n_outputs : cb->n_inputs;
    const char *const *cnames = outputs ? cb->outputs : cb->inputs;
    const char *what = outputs ? "output" : "input";
    if (n != cn) {
        BAD(v, "%s: %s has %u tensor(s) but %s '%s' has %u %s(s)", prefix, list_name, n, graph_attr,
            nz(r->name), cn, what);
        return;
    }
    for (uint32_t k = 0; k < n; k++) {
        const ctosa_tensor *ct = ctosa_block_find_tensor(v->g, cb, cnames[k]);
        if (!list[k] || !ct) continue; /* unresolved names are reported where they occur */
        if (!same_type_shape(list[k], ct)) {
            char a[160], b[160];
            shape_text(a, sizeof a, list[k]);
            shape_text(b, sizeof b, ct);
            BAD(v, "%s: %s[%u] '%s' is %s but %s '%s' %s '%s' is %s", prefix, list_name, k, nz(list_names[k]),
                a, graph_attr, nz(r->name), what, nz(cnames[k]), b);
        }
    }
}

/* The region or block (ctosa_graph_find_called) attribute attr names;
 * *cb receives the block that runs. */
static const ctosa_region *called_region(vstate *v, const ctosa_region *from, const char *prefix,
                                         const char *attr, const char *name, const ctosa_block **cb) {
    *cb = NULL;
    if (!name || !*name) {
        BAD(v, "%s: attribute %s is missing", prefix, attr);
        return NULL;
    }
    const ctosa_region *r = ctosa_graph_find_region(v->g, name);
    if (r && (r->n_blocks == 0 || !r->blocks[0])) {
        BAD(v, "%s: %s '%s' has no blocks", prefix, attr, name);
        return NULL;
    }
    *cb = ctosa_graph_find_called(v->g, from, name, &r);
    if (!*cb) {
        BAD(v, "%s: %s '%s' names no region or block of the graph", prefix, attr, name);
        return NULL;
    }
    return r;
}

/* Validates a called region (or a called block of a region) once, with
 * the caller's scope. */
static void descend(vstate *v, const char *prefix, const ctosa_region *r, const ctosa_block *b,
                    const scope *s) {
    for (uint32_t i = 0; i < v->depth; i++) {
        if (v->stack[i] == b) {
            BAD(v, "%s: %s '%s' is called recursively", prefix, b == r->blocks[0] ? "region" : "block",
                nz(b == r->blocks[0] ? r->name : b->name));
            return;
        }
    }
    int32_t bx = block_index(v->g, b);
    if (bx >= 0 && v->called_block[bx]) {
        if (v->block_done[bx]) return;
        v->block_done[bx] = true;
        v->stack[v->depth++] = b;
        check_block(v, r, b, s);
        v->depth--;
        return;
    }
    int32_t ix = region_index(v->g, r);
    if (ix < 0 || v->visited[ix]) return;
    v->visited[ix] = true;
    v->stack[v->depth++] = b;
    check_region(v, r, s);
    v->depth--;
}

static void check_control_flow(vstate *v, const ctosa_region *from, const scope *s, const ctosa_op *op,
                               const char *prefix, const ctosa_tensor *const *in,
                               const ctosa_tensor *const *out) {
    bool is_if = op->kind == CTOSA_OP_COND_IF;
    const char *a1 = is_if ? "then_graph" : "cond_graph";
    const char *a2 = is_if ? "else_graph" : "body_graph";
    const ctosa_block *b1, *b2;
    const ctosa_region *r1 =
        called_region(v, from, prefix, a1, is_if ? op->attr.then_graph : op->attr.cond_graph, &b1);
    const ctosa_region *r2 =
        called_region(v, from, prefix, a2, is_if ? op->attr.else_graph : op->attr.body_graph, &b2);
    /* MAX_NESTING: the operator runs at depth v->depth - 1 (main region is
     * 0); ERROR_IF(tosa_nesting_depth >= MAX_NESTING). */
    uint32_t nesting = v->depth ? v->depth - 1 : 0;
    if ((r1 || r2) && nesting >= v->max_nesting) {
        BAD_K(v, CTOSA_DIAG_LEVEL_LIMIT, "%s: control flow nested %u deep reaches MAX_NESTING %u of level %s",
              prefix, nesting + 1, v->max_nesting, v->level_name);
        return;
    }
    uint32_t skip = is_if ? 1 : 0; /* COND_IF's first input is the condition */
    uint32_t nl = op->n_inputs > skip ? op->n_inputs - skip : 0;
    /* No pointer arithmetic on the NULL lists of an operator without inputs. */
    const ctosa_tensor *const *list = nl ? in + skip : in;
    const char *const *names = nl ? (const char *const *)op->inputs + skip : NULL;
    const char *const *onames = (const char *const *)op->outputs;
    if (is_if) {
        const ctosa_region *rs[2] = {r1, r2};
        const ctosa_block *bs[2] = {b1, b2};
        const char *as[2] = {a1, a2};
        for (int k = 0; k < 2; k++) {
            if (!rs[k]) continue;
            match_list(v, prefix, "input_list", list, names, nl, as[k], rs[k], bs[k], false);
            match_list(v, prefix, "output_list", out, onames, op->n_outputs, as[k], rs[k], bs[k], true);
        }
    } else {
        if (r1) {
            const ctosa_block *cb = b1;
            match_list(v, prefix, "input_list", list, names, nl, a1, r1, cb, false);
            const ctosa_tensor *ct =
                cb->n_outputs == 1 ? ctosa_block_find_tensor(v->g, cb, cb->outputs[0]) : NULL;
            uint64_t n = 0;
            if (cb->n_outputs != 1 ||
                (ct && (ct->dtype != CTOSA_DTYPE_BOOL || (!ct->is_unranked && (ct->rank == 0 || ct->shape) &&
                                                          ctosa_tensor_elements(ct, &n) && n != 1)))) {
                BAD(v, "%s: cond_graph '%s' must have one output of one bool element (has %u output(s)%s%s)",
                    prefix, nz(r1->name), cb->n_outputs, ct ? ", type " : "",
                    ct ? ctosa_dtype_short(ct->dtype) : "");
            }
        }
        if (r2) {
            match_list(v, prefix, "input_list", list, names, nl, a2, r2, b2, false);
            match_list(v, prefix, "input_list", list, names, nl, a2, r2, b2, true);
        }
    }
    if (r1) descend(v, prefix, r1, b1, s);
    if (r2 && b2 != b1) descend(v, prefix, r2, b2, s);
}

/* ------------------------------------------------------------ variables */

static void check_variable_op(vstate *v, const ctosa_op *op, const char *prefix,
                              const ctosa_tensor *const *in, const ctosa_tensor *const *out) {
    /* The 1.0 schema's Variable* attribute tables are empty: the variable is
     * named through the operands. VARIABLE lists it among its operands;
     * VARIABLE_READ has it as input 0 and the value as output 0;
     * VARIABLE_WRITE has (variable, value) inputs or a value input and the
     * variable as output. */
    if (op->kind == CTOSA_OP_VARIABLE) {
        for (uint32_t i = 0; i < op->n_inputs + op->n_outputs; i++) {
            bool is_in = i < op->n_inputs;
            const char *name = is_in ? op->inputs[i] : op->outputs[i - op->n_inputs];
            if (!name) continue;
            if (strmap_has(&v->vars, name)) BAD(v, "%s: variable '%s' is declared twice", prefix, name);
            else put(v, &v->vars, name, (void *)(is_in ? in[i] : out[i - op->n_inputs]));
        }
        return;
    }
    const char *var = NULL;
    const ctosa_tensor *vt = NULL, *val = NULL;
    if (op->kind == CTOSA_OP_VARIABLE_READ) {
        if (op->n_inputs >= 1) var = op->inputs[0], vt = in[0];
        if (op->n_outputs >= 1) val = out[0];
    } else if (op->n_inputs >= 2) {
        var = op->inputs[0], vt = in[0], val = in[1];
    } else if (op->n_inputs == 1 && op->n_outputs == 1) {
        var = op->outputs[0], vt = out[0], val = in[0];
    }
    if (!var) {
        BAD(v, "%s: does not name a variable", prefix);
        return;
    }
    if (!vt) vt = strmap_get(&v->vars, var);
    bool declared = strmap_has(&v->vars, var) || (vt && vt->variable);
    if (!declared) {
        BAD(v, "%s: variable '%s' is used before a VARIABLE declares it", prefix, var);
        return;
    }
    if (vt && val && !same_type_shape(vt, val)) {
        char a[160], b[160];
        shape_text(a, sizeof a, val);
        shape_text(b, sizeof b, vt);
        BAD(v, "%s: value '%s' is %s but variable '%s' is %s", prefix, nz(val->name), a, var, b);
    }
}

/* ---------------------------------------------------------------- blocks */

static bool declared_above(vstate *v, const scope *s, const char *name) {
    for (; s; s = s->parent)
        if (ctosa_block_find_tensor(v->g, s->block, name)) return true;
    return false;
}

static void report_unresolved(vstate *v, const char *prefix, const scope *s, const strmap *prod, uint32_t i,
                              const char *name, bool local) {
    uintptr_t p = (uintptr_t)strmap_get(prod, name);
    if (p && p - 1 == i) BAD(v, "%s: input '%s' is its own output", prefix, name);
    else if (p && p - 1 > i)
        BAD(v, "%s: input '%s' is used before it is defined (by op #%u)", prefix, name, (unsigned)(p - 1));
    else if (local)
        BAD(v, "%s: input '%s' is never defined (not a block input, constant or operator output)", prefix,
            name);
    else if (declared_above(v, s->parent, name))
        BAD(v, "%s: input '%s' of the enclosing block is not defined before the calling operator", prefix,
            name);
    else
        BAD(v, "%s: input '%s' does not name a tensor of block '%s'", prefix, name,
            s->block->name ? s->block->name : "");
}

static void check_block(vstate *v, const ctosa_region *r, const ctosa_block *b, const scope *parent) {
    const ctosa_graph *g = v->g;
    /* Operator prefixes name the region (outside main) and the block when
     * the region has several; block-level messages always name the block. */
    const char *rl = region_label(v, r);
    const char *bl = arena_printf(&v->a, "%sblock '%s'", rl, b->name ? b->name : "");
    if (!bl) bl = "block";
    const char *pl = r->n_blocks > 1 ? arena_printf(&v->a, "%s ", bl) : rl;
    if (!pl) pl = rl;

    /* BAD() reports at this block; a region checked from inside an operator
     * (control flow) restores the caller's place on return. */
    const ctosa_region *saved_region = v->cur_region;
    const ctosa_block *saved_block = v->cur_block;
    int32_t saved_op = v->cur_op;
    v->cur_region = r;
    v->cur_block = b;
    v->cur_op = -1;

    scope s = {parent, b, {0}};
    strmap_init(&s.defs);
    strmap prod, seen;
    strmap_init(&prod);
    strmap_init(&seen);

    /* Declarations: each name once. */
    for (uint32_t pass = 0; pass < 2; pass++) {
        uint32_t n = pass ? b->n_shapes : b->n_tensors;
        ctosa_tensor **ts = pass ? b->shapes : b->tensors;
        for (uint32_t i = 0; i < n; i++) {
            const ctosa_tensor *t = ts[i];
            if (!t || !t->name) continue;
            if (strmap_has(&seen, t->name)) BAD(v, "%s: tensor '%s' is declared more than once", bl, t->name);
            else put(v, &seen, t->name, (void *)t);
        }
    }
    /* First producer of every name. */
    for (uint32_t i = 0; i < b->n_ops; i++) {
        const ctosa_op *op = b->ops[i];
        for (uint32_t k = 0; k < op->n_outputs; k++)
            if (op->outputs[k] && !strmap_has(&prod, op->outputs[k]))
                put(v, &prod, op->outputs[k], (void *)(uintptr_t)(i + 1));
    }
    /* Block inputs, then variables and constants nobody produces. */
    for (uint32_t i = 0; i < b->n_inputs; i++) {
        const char *name = b->inputs[i];
        if (!name) {
            BAD(v, "%s: block input %u has no name", bl, i);
            continue;
        }
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, name);
        if (!t) BAD(v, "%s: block input '%s' is not a tensor of the block", bl, name);
        else if (strmap_has(&s.defs, name)) BAD(v, "%s: block input '%s' is listed twice", bl, name);
        else define(v, &s, t, DEF_INPUT, false);
    }
    for (uint32_t pass = 0; pass < 2; pass++) {
        uint32_t n = pass ? b->n_shapes : b->n_tensors;
        ctosa_tensor **ts = pass ? b->shapes : b->tensors;
        for (uint32_t i = 0; i < n; i++) {
            const ctosa_tensor *t = ts[i];
            if (!t || !t->name || strmap_has(&s.defs, t->name)) continue;
            if (strmap_get(&seen, t->name) != t) continue; /* a duplicate declaration */
            if (t->variable) define(v, &s, t, DEF_VAR, false);
            else if (t->data.kind != CTOSA_DATA_NONE && !strmap_has(&prod, t->name))
                define(v, &s, t, DEF_CONST, true);
        }
    }

    strbuf pre;
    sb_init(&pre);
    const ctosa_tensor **in = NULL, **out = NULL;
    bool *in_const = NULL;
    size_t scratch_n = 0;
    for (uint32_t i = 0; i < b->n_ops && !v->oom; i++) {
        const ctosa_op *op = b->ops[i];
        v->cur_op = (int32_t)i;
        const char *first = op->n_outputs && op->outputs[0] ? op->outputs[0] : NULL;
        /* Per-operator scratch is reused across the block (a called
         * region's block has its own). */
        pre.len = 0;
        if (pre.s) pre.s[0] = 0;
        if (first) sb_printf(&pre, "%sop #%u %s '%s'", pl, i, op_name(op->kind), first);
        else sb_printf(&pre, "%sop #%u %s", pl, i, op_name(op->kind));
        size_t need = (size_t)(op->n_inputs > op->n_outputs ? op->n_inputs : op->n_outputs) + 1;
        if (need > scratch_n) {
            size_t n = need > 2 * scratch_n ? need : 2 * scratch_n;
            free(in);
            free(out);
            free(in_const);
            in = calloc(n, sizeof *in);
            out = calloc(n, sizeof *out);
            in_const = calloc(n, 1);
            scratch_n = n;
        }
        if (pre.failed || !pre.s || !in || !out || !in_const) {
            v->oom = true;
            break;
        }
        const char *prefix = pre.s;
        memset(in, 0, need * sizeof *in);
        memset(out, 0, need * sizeof *out);
        memset(in_const, 0, need);
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            const char *name = op->inputs[k];
            if (!name) continue;
            const ctosa_tensor *local = ctosa_block_find_tensor(g, b, name);
            const def *x = lookup(&s, name);
            if (x) {
                in[k] = local ? local : x->t;
                in_const[k] = x->is_const;
            } else {
                report_unresolved(v, prefix, &s, &prod, i, name, local != NULL);
                in[k] = local;
            }
            var_use(v, prefix, in[k], op->kind);
        }
        for (uint32_t k = 0; k < op->n_outputs; k++) {
            const char *name = op->outputs[k];
            if (!name) continue;
            out[k] = ctosa_block_find_tensor(g, b, name);
            if (!out[k])
                BAD(v, "%s: output '%s' is not a tensor of block '%s'", prefix, name, b->name ? b->name : "");
            var_use(v, prefix, out[k], op->kind);
        }

        spec_op_ctx c = {
            .g = g,
            .block = b,
            .region = r,
            .index = i,
            .op = op,
            .spec = v->spec,
            .prefix = prefix,
            .in = in,
            .out = out,
            .in_const = in_const,
            .sink = v->sink,
        };
        spec_check_op_rules(&c, v->d);
        spec_check_op_shapes(&c, v->d);

        if (op->kind == CTOSA_OP_COND_IF || op->kind == CTOSA_OP_WHILE_LOOP)
            check_control_flow(v, r, &s, op, prefix, in, out);
        else if (op->kind == CTOSA_OP_VARIABLE || op->kind == CTOSA_OP_VARIABLE_READ ||
                 op->kind == CTOSA_OP_VARIABLE_WRITE)
            check_variable_op(v, op, prefix, in, out);

        bool is_const_op = op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE;
        for (uint32_t k = 0; k < op->n_outputs; k++) {
            const ctosa_tensor *t = out[k];
            if (!t) continue;
            const def *x = strmap_get(&s.defs, t->name);
            if (x) {
                if (x->by == DEF_VAR) continue; /* writing state */
                if (x->by == DEF_INPUT)
                    BAD(v, "%s: output '%s' is a block input (defined twice)", prefix, t->name);
                else if (x->by == DEF_CONST)
                    BAD(v, "%s: output '%s' is a constant tensor (defined twice)", prefix, t->name);
                else if (x->by == (int32_t)i) BAD(v, "%s: output '%s' is listed twice", prefix, t->name);
                else
                    BAD(v, "%s: tensor '%s' is defined twice (by op #%d and op #%u)", prefix, t->name, x->by,
                        i);
                continue;
            }
            if (!is_const_op && t->data.kind != CTOSA_DATA_NONE && !t->variable)
                BAD(v, "%s: output '%s' carries constant data but is computed by %s", prefix, t->name,
                    op_name(op->kind));
            define(v, &s, t, (int32_t)i, is_const_op);
        }
    }

    v->cur_op = -1;
    for (uint32_t i = 0; i < b->n_outputs && !v->oom; i++) {
        const char *name = b->outputs[i];
        if (!name) {
            BAD(v, "%s: block output %u has no name", bl, i);
            continue;
        }
        if (lookup(&s, name)) continue;
        if (ctosa_block_find_tensor(g, b, name)) BAD(v, "%s: block output '%s' is never defined", bl, name);
        else BAD(v, "%s: block output '%s' is not a tensor of the block", bl, name);
    }
    sb_free(&pre);
    free(in);
    free(out);
    free(in_const);
    strmap_free(&s.defs);
    strmap_free(&prod);
    strmap_free(&seen);
    v->cur_region = saved_region;
    v->cur_block = saved_block;
    v->cur_op = saved_op;
}

static void check_region(vstate *v, const ctosa_region *r, const scope *parent) {
    if (r->n_blocks == 0) {
        BAD(v, "region '%s' has no blocks", r->name ? r->name : "");
        return;
    }
    int32_t b0 = block_index(v->g, r->blocks[0]);
    for (uint32_t i = 0; i < r->n_blocks && !v->oom; i++)
        /* blocks that control flow calls by name: validated when called */
        if (r->blocks[i] && !(b0 >= 0 && v->called_block[b0 + (int32_t)i]))
            check_block(v, r, r->blocks[i], parent);
}

static ctosa_error *validate(const ctosa_graph *g, const ctosa_spec *spec, const ctosa_validate_options *opt,
                             ctosa_diags *sink) {
    diag_list d;
    diag_init(&d, opt ? opt->max_problems : 0);
    vstate v = {.g = g, .spec = spec, .d = &d, .sink = sink, .cur_op = -1};
    arena_init(&v.a, 0);
    strmap_init(&v.vars);
    strmap_init(&v.var_told);
    ctosa_spec_format(spec, v.spec_text, sizeof v.spec_text);
    v.max_nesting = spec->level == CTOSA_LEVEL_8K ? 6 : 256;
    v.level_name = spec->level == CTOSA_LEVEL_8K ? "8K" : "none";

    uint32_t nr = ctosa_graph_region_count(g);
    v.visited = arena_zalloc(&v.a, nr + 1);
    uint32_t nb = 0;
    for (uint32_t i = 0; i < nr; i++) nb += ctosa_graph_region(g, i)->n_blocks;
    v.stack = arena_zalloc(&v.a, (nb + 1) * sizeof *v.stack);
    v.called_block = arena_zalloc(&v.a, nb + 1);
    v.block_done = arena_zalloc(&v.a, nb + 1);
    if (!v.visited || !v.stack || !v.called_block || !v.block_done) v.oom = true;
    /* control-flow graphs given as blocks of a region (not regions) */
    for (uint32_t i = 0; i < nr && !v.oom; i++) {
        const ctosa_region *r = ctosa_graph_region(g, i);
        for (uint32_t j = 0; j < r->n_blocks; j++)
            for (uint32_t k = 0; r->blocks[j] && k < r->blocks[j]->n_ops; k++) {
                const ctosa_op *op = r->blocks[j]->ops[k];
                const char *nm[2] = {NULL, NULL};
                if (op->kind == CTOSA_OP_COND_IF) nm[0] = op->attr.then_graph, nm[1] = op->attr.else_graph;
                if (op->kind == CTOSA_OP_WHILE_LOOP) nm[0] = op->attr.cond_graph, nm[1] = op->attr.body_graph;
                for (int m = 0; m < 2; m++) {
                    if (!nm[m] || ctosa_graph_find_region(g, nm[m])) continue;
                    int32_t bx = block_index(g, ctosa_graph_find_called(g, r, nm[m], NULL));
                    if (bx > 0) v.called_block[bx] = true; /* never the main block */
                }
            }
    }
    if (nr == 0) BAD(&v, "graph has no regions (a main region is required)");
    for (uint32_t i = 0; i < nr && !v.oom; i++) {
        const ctosa_region *r = ctosa_graph_region(g, i);
        for (uint32_t j = 0; j < i; j++) {
            const ctosa_region *q = ctosa_graph_region(g, j);
            if (r->name && q->name && strcmp(r->name, q->name) == 0) {
                BAD(&v, "region '%s' is defined more than once (regions #%u and #%u)", r->name, j, i);
                break;
            }
        }
    }
    /* Main region first, then whatever no operator called. */
    for (uint32_t i = 0; i < nr && !v.oom; i++) {
        if (v.visited[i]) continue;
        v.visited[i] = true;
        const ctosa_region *r = ctosa_graph_region(g, i);
        v.stack[0] = r->n_blocks ? r->blocks[0] : NULL;
        v.depth = 1;
        check_region(&v, r, NULL);
        v.depth = 0;
    }
    /* Called blocks no validated operator reached (their callers call each
     * other only): validated on their own, without an enclosing scope. */
    for (uint32_t i = 0, k = 0; i < nr && !v.oom; i++) {
        const ctosa_region *r = ctosa_graph_region(g, i);
        for (uint32_t j = 0; j < r->n_blocks && !v.oom; j++, k++) {
            if (!v.called_block[k] || v.block_done[k] || !r->blocks[j]) continue;
            v.block_done[k] = true;
            v.stack[0] = r->blocks[j];
            v.depth = 1;
            check_block(&v, r, r->blocks[j], NULL);
            v.depth = 0;
        }
    }

    strmap_free(&v.vars);
    strmap_free(&v.var_told);
    arena_free(&v.a);
    if (v.oom) {
        diag_free(&d);
        return ctosa_error_nomem();
    }
    return diag_finish(&d);
}

ctosa_error *ctosa_validate(const ctosa_graph *g, const ctosa_spec *spec, const ctosa_validate_options *opt) {
    if (!g || !spec) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_validate: graph or spec is NULL");
    return validate(g, spec, opt, NULL);
}

ctosa_error *ctosa_validate_diags(const ctosa_graph *g, const ctosa_spec *spec,
                                  const ctosa_validate_options *opt, ctosa_diags **out) {
    if (!out) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_validate_diags: out is NULL");
    *out = NULL;
    if (!g || !spec) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_validate_diags: graph or spec is NULL");
    ctosa_diags *sink = spec_diags_new();
    if (!sink) return ctosa_error_nomem();
    ctosa_error *e = validate(g, spec, opt, sink);
    if (e && spec_diags_failed(sink)) {
        ctosa_error_free(e);
        e = ctosa_error_nomem();
    }
    if (e && ctosa_error_code(e) == CTOSA_ERR_INVALID) *out = sink;
    else ctosa_diags_free(sink);
    return e;
}
