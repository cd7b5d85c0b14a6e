/* lower_int64.c - why a node with int64 operands is not delegated under a
 * spec with EXT-INT64.
 *
 * The support decision itself is the framework's ("lower, then validate"):
 * a node is delegated exactly when every operator its lowering emits has a
 * row the spec allows. When validation fails, this file names the operator
 * that lacks its i64 row, from the scratch graph and the compliance tables
 * (never from a hand-written list):
 *
 *   unsupported_dtype  "Clip: MAXIMUM has i64, but its lowering needs CLAMP
 *                       which has no i64 row"
 *   mixed_width        "Gather: GATHER with types (i64,i32)->i64 pairs
 *                       operand widths the table does not (its i64 rows:
 *                       (i64,i64)->i64)"
 */
#include <stdio.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "spec/compliance.h"

#define MAX_OPERANDS 64

/* Operand dtypes of op (0 when a name is unknown). */
static bool op_types(const ctosa_graph *g, const ctosa_block *b, const ctosa_op *op, ctosa_dtype *in,
                     ctosa_dtype *out) {
    if (op->n_inputs > MAX_OPERANDS || op->n_outputs > MAX_OPERANDS) return false;
    for (uint32_t i = 0; i < op->n_inputs; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, op->inputs[i]);
        in[i] = t ? t->dtype : CTOSA_DTYPE_UNKNOWN;
    }
    for (uint32_t i = 0; i < op->n_outputs; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, op->outputs[i]);
        out[i] = t ? t->dtype : CTOSA_DTYPE_UNKNOWN;
    }
    return true;
}

static bool has_dtype(uint32_t n_in, const ctosa_dtype *in, uint32_t n_out, const ctosa_dtype *out,
                      ctosa_dtype t) {
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i] == t) return true;
    for (uint32_t i = 0; i < n_out; i++)
        if (out[i] == t) return true;
    return false;
}

/* Integer/bool "widths" among the operands (shape operands excluded). */
static unsigned width_bits(uint32_t n, const ctosa_dtype *t) {
    unsigned w = 0;
    for (uint32_t i = 0; i < n; i++) {
        switch (t[i]) {
        case CTOSA_DTYPE_BOOL: w |= 1; break;
        case CTOSA_DTYPE_INT8: w |= 2; break;
        case CTOSA_DTYPE_INT16: w |= 4; break;
        case CTOSA_DTYPE_INT32: w |= 8; break;
        case CTOSA_DTYPE_INT64: w |= 16; break;
        default: break;
        }
    }
    return w;
}

/* The rows of op kind the spec allows that involve i64, formatted for the
 * actual operand layout ("(i64,i64)->i64, ..."); false when there is none. */
static bool i64_rows(ctosa_op_kind kind, const ctosa_spec *spec, uint32_t n_in, const ctosa_dtype *in,
                     uint32_t n_out, const ctosa_dtype *out, strbuf *sb) {
    const spec_op_info *oi = spec_op_find(kind);
    if (!oi) return false;
    uint16_t in_arg[MAX_OPERANDS], out_arg[MAX_OPERANDS];
    bool mapped = spec_map_operands(oi, n_in, n_out, in_arg, out_arg);
    uint32_t found = 0;
    for (uint32_t r = 0; r < oi->n_rows; r++) {
        const spec_row *row = spec_op_row(oi, r);
        if (!spec_row_allowed(row, spec)) continue;
        bool i64 = false;
        for (uint32_t k = 0; k < oi->n_syms; k++) i64 |= row->types[k] == CTOSA_DTYPE_INT64;
        if (!i64) continue;
        if (found++) sb_puts(sb, ", ");
        if (mapped) spec_format_row(sb, oi, row, n_in, in_arg, in, n_out, out_arg, out);
        else spec_format_row_generic(sb, oi, row);
    }
    return found > 0;
}

bool lw_int64_explain(const ctosa_graph *g, const ctosa_spec *spec, const char *onnx_op, arena *a,
                      lower_code *code, const char **reason) {
    if (!lw_spec_has_int64(spec) || ctosa_graph_region_count(g) == 0) return false;
    const ctosa_region *rg = ctosa_graph_region(g, 0);
    if (!rg->n_blocks) return false;
    const ctosa_block *b = rg->blocks[0];
    ctosa_dtype in[MAX_OPERANDS], out[MAX_OPERANDS];
    /* Operators that carry i64 and are allowed (named in the message). */
    const char *ok_names[8];
    uint32_t n_ok = 0;
    const ctosa_op *bad = NULL;
    ctosa_dtype bad_in[MAX_OPERANDS], bad_out[MAX_OPERANDS];
    for (uint32_t k = 0; k < b->n_ops; k++) {
        const ctosa_op *op = b->ops[k];
        if (op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE) continue;
        if (!op_types(g, b, op, in, out)) continue;
        if (!has_dtype(op->n_inputs, in, op->n_outputs, out, CTOSA_DTYPE_INT64)) continue;
        bool allowed =
            spec_types_allowed(op->kind, op->n_inputs, in, op->n_outputs, out, CTOSA_DTYPE_UNKNOWN, spec);
        const char *nm = ctosa_op_name(op->kind);
        if (allowed) {
            bool dup = false;
            for (uint32_t i = 0; i < n_ok; i++) dup |= strcmp(ok_names[i], nm) == 0;
            if (!dup && n_ok < 8) ok_names[n_ok++] = nm;
        } else if (!bad) {
            bad = op;
            memcpy(bad_in, in, op->n_inputs * sizeof *in);
            memcpy(bad_out, out, op->n_outputs * sizeof *out);
        }
    }
    if (!bad) return false;
    /* An operand type that no allowed row of the operator uses at all (fp32
     * under an INT-only spec) is the problem, not i64: the validator's
     * reason stands. */
    const spec_op_info *boi = spec_op_find(bad->kind);
    for (uint32_t k = 0; boi && k < bad->n_inputs + bad->n_outputs; k++) {
        ctosa_dtype t = k < bad->n_inputs ? bad_in[k] : bad_out[k - bad->n_inputs];
        if (t == CTOSA_DTYPE_INT64 || t == CTOSA_DTYPE_SHAPE || t == CTOSA_DTYPE_UNKNOWN) continue;
        bool used = false;
        for (uint32_t r = 0; r < boi->n_rows && !used; r++) {
            const spec_row *row = spec_op_row(boi, r);
            if (!spec_row_allowed(row, spec)) continue;
            for (uint32_t q = 0; q < boi->n_syms; q++) used |= row->types[q] == t;
        }
        if (!used) return false;
    }
    strbuf head, types, rows;
    sb_init(&head);
    sb_init(&types);
    sb_init(&rows);
    sb_printf(&head, "%s: ", onnx_op);
    for (uint32_t i = 0; i < n_ok; i++)
        sb_printf(&head, "%s%s", i ? (i + 1 == n_ok ? " and " : ", ") : "", ok_names[i]);
    if (n_ok) sb_printf(&head, " %s i64, but its lowering", n_ok > 1 ? "have" : "has");
    else sb_puts(&head, "its lowering");
    spec_format_actual(&types, bad->n_inputs, bad_in, bad->n_outputs, bad_out);
    const char *bn = ctosa_op_name(bad->kind);
    bool has_rows = i64_rows(bad->kind, spec, bad->n_inputs, bad_in, bad->n_outputs, bad_out, &rows);
    unsigned w = width_bits(bad->n_inputs, bad_in) | width_bits(bad->n_outputs, bad_out);
    const char *msg;
    if (!has_rows) {
        *code = LOWER_UNSUPPORTED_DTYPE;
        msg = arena_printf(a, "%s needs %s which has no i64 row (types %s)", head.s ? head.s : "", bn,
                           types.s ? types.s : "");
    } else if (__builtin_popcount(w) > 1) {
        *code = LOWER_MIXED_WIDTH;
        msg = arena_printf(a,
                           "%s needs %s with types %s, operand widths the table does not pair "
                           "(its i64 rows: %s)",
                           head.s ? head.s : "", bn, types.s ? types.s : "", rows.s ? rows.s : "");
    } else {
        *code = LOWER_UNSUPPORTED_DTYPE;
        msg = arena_printf(a, "%s needs %s with types %s, which has no such i64 row (its i64 rows: %s)",
                           head.s ? head.s : "", bn, types.s ? types.s : "", rows.s ? rows.s : "");
    }
    sb_free(&head);
    sb_free(&types);
    sb_free(&rows);
    if (!msg) return false;
    *reason = msg;
    return true;
}

/* ------------------------------------------------------- allowlist probe */

typedef struct probe_result {
    bool done, delegated, folded;
    int rank; /* how informative a fallback is: keep the best one */
    lower_code code;
    char reason[512];
} probe_result;

/* Fallback codes that say something about int64 rank above the ones that
 * only say the probe's inputs did not fit the operator. */
static int code_rank(lower_code c) {
    switch (c) {
    case LOWER_UNSUPPORTED_DTYPE:
    case LOWER_MIXED_WIDTH:
    case LOWER_INT64_NOT_ENABLED:
    case LOWER_NOT_IN_SPEC: return 3;
    case LOWER_NO_COMPUTE: return 2;
    default: return 1;
    }
}

/* Lowers one probe node: n_in inputs, int64 [2,3] at run time except the
 * constant ones (int64 [1] = {1}) and a bool input 0 when bool0. Returns
 * the code of the input the lowering wants constant, -1 otherwise. */
/* Values tried for an input the lowering needs constant (axes, starts,
 * ends, shapes, repeats, pads of the [2,3] data). */
static const int64_t CONST_VALS[][4] = {{1}, {0}, {2, 3}, {1, 1, 1, 1}, {-1}};
static const uint32_t CONST_LENS[] = {1, 1, 2, 4, 1};
#define N_CONST_VALS 5

static int probe_once(const ctosa_spec *spec, const lower_entry *e, uint32_t n_in, const int8_t *cval,
                      bool bool0, bool cast_attr, bool axis_attr, probe_result *res) {
    lower_session s;
    memset(&s, 0, sizeof s);
    arena_init(&s.a, 0);
    strmap_init(&s.vals);
    s.spec = *spec;
    s.fold_spec = *spec;
    s.model_path = "probe";
    s.opset = e->until_opset ? e->until_opset : (e->since_opset > 13 ? e->since_opset : 13);
    ctosa_onnx_graph *g = arena_zalloc(&s.a, sizeof *g);
    ctosa_onnx_node *nd = arena_zalloc(&s.a, sizeof *nd);
    const char **ins = arena_zalloc(&s.a, 4 * sizeof *ins);
    const char **outs = arena_zalloc(&s.a, 2 * sizeof *outs);
    ctosa_onnx_attr *at = arena_zalloc(&s.a, 2 * sizeof *at);
    s.nodes = arena_zalloc(&s.a, 2 * sizeof *s.nodes);
    static const char *const in_names[3] = {"x0", "x1", "x2"};
    int want_const = -1;
    /* The probe is about int64 values at run time: at least one runtime
     * int64 input, or (operators computed from constants, like
     * ConstantOfShape) only constant int64 inputs. */
    uint32_t rt64 = 0, rt = 0;
    for (uint32_t i = 0; i < n_in; i++) {
        rt += cval[i] < 0;
        rt64 += cval[i] < 0 && !(i == 0 && bool0);
    }
    if ((!rt64 && (rt || bool0)) || !g || !nd || !ins || !outs || !at || !s.nodes) goto out;
    for (uint32_t i = 0; i < n_in; i++) ins[i] = in_names[i];
    outs[0] = "y";
    uint32_t n_attrs = 0;
    if (cast_attr)
        at[n_attrs++] = (ctosa_onnx_attr){.name = "to", .type = CTOSA_ONNX_ATTR_INT, .i = CTOSA_ONNX_INT32};
    if (axis_attr) at[n_attrs++] = (ctosa_onnx_attr){.name = "axis", .type = CTOSA_ONNX_ATTR_INT, .i = 0};
    nd->name = e->op_type;
    nd->op_type = e->op_type;
    nd->domain = "";
    nd->overload = "";
    nd->n_inputs = n_in;
    nd->n_outputs = 1;
    nd->inputs = ins;
    nd->outputs = outs;
    nd->n_attrs = n_attrs;
    nd->attrs = n_attrs ? at : NULL;
    g->name = "probe";
    g->n_nodes = 1;
    g->nodes = nd;
    s.g = g;
    s.n_nodes = 1;
    s.nodes[0].label = e->op_type;
    s.nodes[0].part = -1;
    for (uint32_t i = 0; i <= n_in; i++) {
        lw_val *v = arena_zalloc(&s.a, sizeof *v);
        uint32_t *cons = arena_zalloc(&s.a, sizeof *cons);
        if (!v || !cons) goto out;
        v->fits_i32 = -1;
        if (i == n_in) {
            v->v.name = "y";
            v->producer = 0;
        } else {
            v->v.name = in_names[i];
            v->producer = -1;
            v->known = true;
            v->consumers = cons;
            v->n_consumers = v->cap_consumers = 1;
            bool cst = cval[i] >= 0;
            v->v.onnx_dtype = i == 0 && bool0 ? CTOSA_ONNX_BOOL : CTOSA_ONNX_INT64;
            v->v.t = lw_dtype_for(spec, v->v.onnx_dtype);
            v->v.static_shape = true;
            if (cst) {
                v->initializer = true;
                uint32_t len = CONST_LENS[cval[i]];
                uint8_t *d = arena_alloc(&s.a, len * 8);
                if (!d) goto out;
                for (uint32_t k = 0; k < len; k++) wr_u64(d + 8 * k, (uint64_t)CONST_VALS[cval[i]][k]);
                v->v.rank = 1;
                v->v.shape[0] = len;
                v->v.data = d;
                v->v.nbytes = len * 8;
            } else {
                v->graph_input = true;
                if (v->v.onnx_dtype == CTOSA_ONNX_INT64) v->v.t = CTOSA_DTYPE_INT64; /* runtime int64 */
                v->v.rank = 2;
                v->v.shape[0] = 2;
                v->v.shape[1] = 3;
            }
        }
        if (!strmap_put(&s.vals, v->v.name, v)) goto out;
    }
    lw_session_decide(&s);
    const lw_nodeinfo *ni = &s.nodes[0];
    if (ni->kind == LW_NODE_DELEGATED) {
        res->done = res->delegated = true;
    } else if (ni->kind == LW_NODE_CONST) {
        /* Computed at compile time (Shape of a static tensor...): keep
         * looking for a runtime form, remember this one. */
        res->folded = true;
    } else if (ni->kind == LW_NODE_FALLBACK) {
        if (ni->code == LOWER_NEEDS_CONSTANT && ni->input) {
            for (uint32_t i = 0; i < n_in; i++)
                if (strcmp(ni->input, in_names[i]) == 0 && cval[i] < 0) want_const = (int)i;
        }
        int rk = code_rank(ni->code);
        if (rk > res->rank) {
            res->rank = rk;
            res->code = ni->code;
            snprintf(res->reason, sizeof res->reason, "%s", ni->reason ? ni->reason : "");
        }
    }
out:
    strmap_free(&s.vals);
    arena_free(&s.a);
    return want_const;
}

/* Tries the probe with the inputs in cval (-1 runtime), and, for every
 * input the lowering then wants constant, each candidate value (depth
 * first, a few levels). */
static void probe_search(const ctosa_spec *spec, const lower_entry *e, uint32_t n_in, int8_t *cval,
                         bool bool0, bool cast, bool axis, int depth, probe_result *res) {
    int want = probe_once(spec, e, n_in, cval, bool0, cast, axis, res);
    if (res->done || depth >= 3) return;
    /* The lowering named an input; otherwise (needs_constant without a
     * name) every input but the data is tried constant. */
    if (want < 0 && res->code == LOWER_NEEDS_CONSTANT && depth == 0 && n_in > 1) {
        for (uint32_t i = 1; i < n_in; i++) cval[i] = 0;
        probe_search(spec, e, n_in, cval, bool0, cast, axis, depth + 1, res);
        for (uint32_t i = 1; i < n_in; i++) cval[i] = -1;
        return;
    }
    if (want < 0) return;
    for (int8_t k = 0; k < N_CONST_VALS && !res->done; k++) {
        cval[want] = k;
        probe_search(spec, e, n_in, cval, bool0, cast, axis, depth + 1, res);
    }
    cval[want] = -1;
}

void lw_int64_allowlist(const ctosa_spec *spec, lw_int64_probe_fn cb, void *ud) {
    const lower_entry *e;
    for (uint32_t i = 0; (e = lower_entry_at(i)); i++) {
        bool seen = false;
        for (uint32_t k = 0; k < i && !seen; k++) seen = strcmp(lower_entry_at(k)->op_type, e->op_type) == 0;
        if (seen) continue;
        probe_result res;
        memset(&res, 0, sizeof res);
        bool cast = strcmp(e->op_type, "Cast") == 0;
        for (int ax = 0; ax < 2 && !res.done; ax++)
            for (uint32_t n_in = 1; n_in <= 3 && !res.done; n_in++)
                for (int b0 = 0; b0 < 2 && !res.done; b0++) {
                    int8_t cval[3] = {-1, -1, -1};
                    probe_search(spec, e, n_in, cval, b0 != 0, cast, ax != 0, 0, &res);
                }
        if (res.delegated) cb(ud, e->op_type, true, NULL, NULL);
        else if (res.folded) cb(ud, e->op_type, true, "compile_time", NULL);
        else
            cb(ud, e->op_type, false, lower_code_name(res.code),
               res.rank ? res.reason : "no probe form of the operator was accepted by its lowering");
    }
}
