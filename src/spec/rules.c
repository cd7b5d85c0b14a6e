/* rules.c - spec_check_op_rules(): one operator against the compliance
 * tables of a spec (operator in the version, operand counts, type
 * signature and acc_type, compile-time constants, argument ranks, level
 * limits, rounding-mode extensions, the Ethos-U55 subset).
 *
 * Tolerates anything a file says: unresolved operands (NULL), unranked
 * tensors and unknown dimensions make the affected check skip, since the
 * structural check reports those. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "spec/compliance.h"
#include "spec/validate_internal.h"

static void bad(const spec_op_ctx *c, diag_list *d, ctosa_diag_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void bad(const spec_op_ctx *c, diag_list *d, ctosa_diag_kind kind, const char *fmt, ...) {
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    spec_report_op(c, d, kind, 0, 0, NULL, b.s ? b.s : "");
    sb_free(&b);
}

/* Token to add to a spec string for one requirement term, e.g. "+int16". */
static void put_term_hint(strbuf *b, const spec_term *t, const ctosa_spec *s) {
    if ((t->profiles & CTOSA_PRO_FP) && !(s->profiles & CTOSA_PRO_FP)) sb_puts(b, "+FP");
    if ((t->profiles & CTOSA_PRO_INT) && !(s->profiles & CTOSA_PRO_INT)) sb_puts(b, "+INT");
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if ((t->extensions & (1ull << e)) && !(s->extensions & (1ull << e)))
            sb_printf(b, "+%s", ctosa_ext_token((ctosa_ext)e));
}

/* ------------------------------------------------------------ types */

typedef struct sigctx {
    const spec_op_info *oi;
    uint32_t n_in, n_out;
    ctosa_dtype *in, *out;
    uint16_t *in_arg, *out_arg;
    ctosa_dtype acc;
} sigctx;

/* Appends every allowed row (deduplicated text) as "; allowed: a, b". */
static void put_allowed(strbuf *b, const sigctx *x, const ctosa_spec *s) {
    strbuf seen;
    sb_init(&seen);
    sb_putc(&seen, '\n');
    uint32_t n = 0;
    for (uint32_t r = 0; r < x->oi->n_rows; r++) {
        const spec_row *row = spec_op_row(x->oi, r);
        if (!spec_row_allowed(row, s)) continue;
        strbuf one;
        sb_init(&one);
        spec_format_row(&one, x->oi, row, x->n_in, x->in_arg, x->in, x->n_out, x->out_arg, x->out);
        sb_putc(&one, '\n');
        if (one.s && seen.s && !strstr(seen.s, one.s)) {
            sb_puts(&seen, one.s);
            one.s[one.len - 1] = 0;
            sb_printf(b, "%s%s", n++ ? ", " : "; allowed: ", one.s);
        }
        sb_free(&one);
    }
    if (!n) sb_puts(b, "; allowed: none");
    sb_free(&seen);
}

/* "; these types need EXT-INT16 (add +int16)" or "; these types need TOSA
 * 1.1 (EXT-INT64)" for a row the spec does not allow. */
static void put_need(strbuf *b, const spec_row *row, const ctosa_spec *s) {
    if (!spec_version_has(s, row->version)) {
        sb_puts(b, "; these types need TOSA 1.1 (");
        spec_format_requirement(b, row);
        sb_puts(b, ")");
    } else {
        sb_puts(b, "; these types need ");
        spec_format_requirement(b, row);
        sb_puts(b, " (add ");
        put_term_hint(b, spec_row_term(row, 0), s);
        sb_puts(b, ")");
    }
}

/* Prefers a row of the spec's version over a later one. */
static const spec_row *better(const spec_row *cur, const spec_row *row, const ctosa_spec *s) {
    if (!cur) return row;
    if (!spec_version_has(s, cur->version) && spec_version_has(s, row->version)) return row;
    return cur;
}

static void check_types(const spec_op_ctx *c, diag_list *d, const sigctx *x) {
    const spec_op_info *oi = x->oi;
    const ctosa_spec *s = c->spec;
    /* tensor_ok: an allowed row matching the tensors (then only acc differs);
     * need_full / need_tensors: rows not allowed that match everything / the
     * tensors, to say what is missing. */
    const spec_row *tensor_ok = NULL, *need_full = NULL, *need_tensors = NULL;
    bool any_allowed = false;
    for (uint32_t r = 0; r < oi->n_rows; r++) {
        const spec_row *row = spec_op_row(oi, r);
        bool allowed = spec_row_allowed(row, s);
        any_allowed |= allowed;
        if (!spec_row_matches_tensors(oi, row, x->n_in, x->in, x->in_arg, x->n_out, x->out, x->out_arg))
            continue;
        bool full =
            spec_row_matches(oi, row, x->n_in, x->in, x->in_arg, x->n_out, x->out, x->out_arg, x->acc);
        if (allowed) {
            if (full) return; /* conformant */
            if (!tensor_ok) tensor_ok = row;
        } else if (full) {
            need_full = better(need_full, row, s);
        } else {
            need_tensors = better(need_tensors, row, s);
        }
    }
    char sname[512];
    ctosa_spec_format(s, sname, sizeof sname);
    strbuf b;
    sb_init(&b);
    sb_puts(&b, "types ");
    spec_format_actual(&b, x->n_in, x->in, x->n_out, x->out);
    if (tensor_ok) {
        /* Tensors fit an allowed row; acc_type does not. */
        sb_printf(&b, " with acc_type %s not allowed by %s; allowed acc_type:", spec_dtype_short(x->acc),
                  sname);
        uint32_t seen = 0;
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *row = spec_op_row(oi, r);
            if (!spec_row_allowed(row, s) ||
                !spec_row_matches_tensors(oi, row, x->n_in, x->in, x->in_arg, x->n_out, x->out, x->out_arg))
                continue;
            uint8_t a = row->types[oi->acc_sym];
            if (seen & (1u << (a & 31))) continue;
            seen |= 1u << (a & 31);
            sb_printf(&b, " %s", spec_dtype_short((ctosa_dtype)a));
        }
        if (need_full) put_need(&b, need_full, s);
    } else {
        sb_printf(&b, " not allowed by %s", sname);
        const spec_row *need = need_full ? need_full : need_tensors;
        if (any_allowed) put_allowed(&b, x, s);
        if (need && !any_allowed && spec_version_has(s, need->version)) {
            /* nothing of the operator is allowed: say what it needs */
            sb_printf(&b, "; %s needs ", oi->name);
            spec_format_requirement(&b, need);
            sb_puts(&b, " (add ");
            put_term_hint(&b, spec_row_term(need, 0), s);
            sb_puts(&b, ")");
        } else if (need) {
            if (!any_allowed) sb_puts(&b, "; allowed: none");
            put_need(&b, need, s);
        } else if (!any_allowed) {
            sb_printf(&b, "; %s needs one of: ", oi->name);
            /* distinct requirements of rows in the version */
            strbuf seen;
            sb_init(&seen);
            sb_putc(&seen, '\n');
            uint32_t n = 0;
            for (uint32_t r = 0; r < oi->n_rows; r++) {
                const spec_row *row = spec_op_row(oi, r);
                if (!spec_version_has(s, row->version)) continue;
                strbuf one;
                sb_init(&one);
                spec_format_requirement(&one, row);
                sb_putc(&one, '\n');
                if (one.s && seen.s && !strstr(seen.s, one.s)) {
                    sb_puts(&seen, one.s);
                    one.s[one.len - 1] = 0;
                    sb_printf(&b, "%s%s", n++ ? ", " : "", one.s);
                }
                sb_free(&one);
            }
            sb_free(&seen);
        }
    }
    spec_report_op(c, d, CTOSA_DIAG_TYPES, x->n_in, x->n_out, x->in, b.s ? b.s : "types not allowed");
    sb_free(&b);
}

/* ------------------------------------------------------------ levels */

static int64_t attr_at(ctosa_i32s v, uint32_t i) { return i < v.n && v.v ? v.v[i] : -1; }

static int64_t dim_of(const ctosa_tensor *t, uint32_t i) {
    if (!t || t->is_unranked || i >= t->rank || !t->shape) return -1;
    return t->shape[i];
}

/* Constant int64 element i of a shape operand, or -1. */
static int64_t shape_value(const ctosa_tensor *t, uint32_t i) {
    if (!t || t->data.kind != CTOSA_DATA_MEMORY || !t->data.ptr) return -1;
    if (t->dtype != CTOSA_DTYPE_SHAPE && t->dtype != CTOSA_DTYPE_INT64) return -1;
    if ((uint64_t)(i + 1) * 8 > t->data.size) return -1;
    return (int64_t)rd_u64((const uint8_t *)t->data.ptr + (size_t)i * 8);
}

static const ctosa_tensor *input_named(const spec_op_ctx *c, const sigctx *x, const char *name) {
    for (uint32_t i = 0; i < x->n_in; i++)
        if (strcmp(spec_op_arg(x->oi, x->in_arg[i])->name, name) == 0) return c->in[i];
    return NULL;
}

/* Value of one identifier of a level-limit expression; -1 when unknown. */
static int64_t ident(const spec_op_ctx *c, const sigctx *x, const spec_arg *a, const char *id, size_t n) {
    const ctosa_attr *at = &c->op->attr;
    ctosa_op_kind k = c->op->kind;
    bool is3d = k == CTOSA_OP_CONV3D;
#define ID(s) (n == strlen(s) && memcmp(id, s, n) == 0)
    static const char *const pad2[] = {"pad_top", "pad_bottom", "pad_left", "pad_right"};
    static const char *const pad3[] = {"pad_d0", "pad_d1", "pad_top", "pad_bottom", "pad_left", "pad_right"};
    static const char *const opad[] = {"out_pad_top", "out_pad_bottom", "out_pad_left", "out_pad_right"};
    for (uint32_t i = 0; i < (is3d ? 6u : 4u); i++)
        if (ID(is3d ? pad3[i] : pad2[i])) return attr_at(at->pad, i);
    for (uint32_t i = 0; i < 4; i++)
        if (ID(opad[i])) return attr_at(at->out_pad, i);
    if (ID("stride_d")) return attr_at(at->stride, 0);
    if (ID("stride_y")) return attr_at(at->stride, is3d ? 1 : 0);
    if (ID("stride_x")) return attr_at(at->stride, is3d ? 2 : 1);
    if (ID("dilation_d")) return attr_at(at->dilation, 0);
    if (ID("dilation_y")) return attr_at(at->dilation, is3d ? 1 : 0);
    if (ID("dilation_x")) return attr_at(at->dilation, is3d ? 2 : 1);
    if (ID("kernel_y")) return attr_at(at->kernel, 0);
    if (ID("kernel_x")) return attr_at(at->kernel, 1);
    const ctosa_tensor *w = input_named(c, x, "weight");
    if (ID("KD")) return dim_of(w, 1);
    if (ID("KH")) return dim_of(w, k == CTOSA_OP_DEPTHWISE_CONV2D ? 0 : is3d ? 2 : 1);
    if (ID("KW")) return dim_of(w, k == CTOSA_OP_DEPTHWISE_CONV2D ? 1 : is3d ? 3 : 2);
    if (ID("H")) return dim_of(input_named(c, x, "input_real"), 1);
    if (ID("W")) return dim_of(input_named(c, x, "input_real"), 2);
    static const char *const sc[] = {"scale_y_n", "scale_y_d", "scale_x_n", "scale_x_d"};
    for (uint32_t i = 0; i < 4; i++)
        if (ID(sc[i])) return shape_value(input_named(c, x, "scale"), i);
#undef ID
    (void)a;
    return -1;
}

/* Evaluates "a", "a * b" or "a/b"; -1 when any part is unknown. */
static int64_t eval_expr(const spec_op_ctx *c, const sigctx *x, const spec_arg *a, const char *e) {
    int64_t acc = -1;
    char op = 0;
    const char *p = e;
    while (*p) {
        while (*p == ' ') p++;
        const char *s = p;
        while (*p && *p != ' ' && *p != '*' && *p != '/') p++;
        int64_t v = ident(c, x, a, s, (size_t)(p - s));
        if (v < 0) return -1;
        if (!op) acc = v;
        else if (op == '*') acc = (acc > INT32_MAX || v > INT32_MAX) ? INT64_MAX / 2 : acc * v;
        else if (v == 0) return -1;
        else acc = acc / v; /* MAX_SCALE compares the integer ratio */
        while (*p == ' ') p++;
        if (*p == '*' || *p == '/') op = *p++;
    }
    return acc;
}

static const char *limit_name(int l) {
    static const char *const names[SPEC_LIMIT_COUNT] = {
        "MAX_RANK",      "MAX_KERNEL",  "MAX_STRIDE",           "MAX_SCALE",
        "MAX_LOG2_SIZE", "MAX_NESTING", "MAX_TENSOR_LIST_SIZE", "MAX_SHAPE_LEN"};
    return l >= 0 && l < SPEC_LIMIT_COUNT ? names[l] : "MAX_?";
}

static int64_t rank_bound(int8_t v, const spec_level_values *lv) {
    return v >= 0 ? v : lv->v[SPEC_LIMIT_RANK] + 1 + v;
}

static void check_arg_levels(const spec_op_ctx *c, diag_list *d, const sigctx *x,
                             const spec_level_values *lv) {
    const spec_op_info *oi = x->oi;
    for (uint32_t ai = 0; ai < oi->n_args; ai++) {
        const spec_arg *a = spec_op_arg(oi, ai);
        for (uint32_t li = 0; li < a->n_limits; li++) {
            const spec_level_limit *l = spec_arg_limit(a, li);
            int64_t max = lv->v[l->limit];
            if (l->limit == SPEC_LIMIT_RANK) continue; /* with the rank bounds below */
            if (l->limit == SPEC_LIMIT_TENSOR_LIST_SIZE) {
                uint32_t cnt = 0;
                const uint16_t *map = a->cat == SPEC_ARG_OUTPUT ? x->out_arg : x->in_arg;
                uint32_t n = a->cat == SPEC_ARG_OUTPUT ? x->n_out : x->n_in;
                for (uint32_t i = 0; i < n; i++) cnt += map[i] == ai;
                if (cnt > max)
                    bad(c, d, CTOSA_DIAG_LEVEL_LIMIT,
                        "%s has %u tensors, exceeding MAX_TENSOR_LIST_SIZE %" PRId64 " of level %s", a->name,
                        cnt, max, lv->name);
                continue;
            }
            int64_t v = eval_expr(c, x, a, l->expr);
            if (v > max)
                bad(c, d, CTOSA_DIAG_LEVEL_LIMIT, "%s = %" PRId64 " exceeds %s %" PRId64 " of level %s",
                    l->expr, v, limit_name(l->limit), max, lv->name);
        }
    }
}

static void check_operand(const spec_op_ctx *c, diag_list *d, const sigctx *x, bool input, uint32_t i,
                          const spec_level_values *lv) {
    const ctosa_tensor *t = input ? c->in[i] : c->out[i];
    if (!t) return;
    const spec_arg *a = spec_op_arg(x->oi, input ? x->in_arg[i] : x->out_arg[i]);
    const char *side = input ? "input" : "output";
    /* compile-time constant */
    if (input && c->in_const && (a->ctc_profiles & c->spec->profiles) &&
        !(a->ctc_lifted_by & c->spec->extensions) && !c->in_const[i]) {
        bad(c, d, CTOSA_DIAG_NOT_CONSTANT,
            "input %u '%s' (tensor '%s') must be a compile-time constant (CONST or "
            "CONST_SHAPE output) unless EXT-DYNAMIC (+dynamic) is enabled",
            i, a->name, t->name);
    }
    if (t->is_unranked || t->is_shape || a->kind == SPEC_KIND_SHAPE) return;
    if (t->rank && !t->shape) return;
    /* rank bounds (the spec's <rank>, MAX_RANK of the level) */
    if (a->has_rank) {
        int64_t lo = rank_bound(a->rank_min, lv), hi = rank_bound(a->rank_max, lv);
        if ((int64_t)t->rank > hi && a->rank_max < 0)
            bad(c, d, CTOSA_DIAG_LEVEL_LIMIT,
                "%s %u '%s' (tensor '%s') has rank %u, exceeding MAX_RANK %" PRId64 " of level %s", side, i,
                a->name, t->name, t->rank, lv->v[SPEC_LIMIT_RANK], lv->name);
        else if ((int64_t)t->rank < lo || (int64_t)t->rank > hi) {
            if (lo == hi)
                bad(c, d, CTOSA_DIAG_RANK, "%s %u '%s' (tensor '%s') has rank %u; %s needs rank %" PRId64,
                    side, i, a->name, t->name, t->rank, x->oi->name, lo);
            else
                bad(c, d, CTOSA_DIAG_RANK,
                    "%s %u '%s' (tensor '%s') has rank %u; %s needs rank %" PRId64 "..%" PRId64, side, i,
                    a->name, t->name, t->rank, x->oi->name, lo, hi);
        }
    } else {
        for (uint32_t li = 0; li < a->n_limits; li++)
            if (spec_arg_limit(a, li)->limit == SPEC_LIMIT_RANK && (int64_t)t->rank > lv->v[SPEC_LIMIT_RANK])
                bad(c, d, CTOSA_DIAG_LEVEL_LIMIT,
                    "%s %u '%s' (tensor '%s') has rank %u, exceeding MAX_RANK %" PRId64 " of level %s", side,
                    i, a->name, t->name, t->rank, lv->v[SPEC_LIMIT_RANK], lv->name);
    }
    /* MAX_LOG2_SIZE: tensor_size_t bound on every tensor's byte size */
    uint64_t n;
    for (uint32_t k = 0; k < t->rank; k++)
        if (t->shape[k] < 0) return;
    if (!ctosa_tensor_elements(t, &n)) n = UINT64_MAX;
    int bits = ctosa_dtype_bits(t->dtype);
    uint64_t bytes, eb = bits >= 8 ? (uint64_t)bits / 8 : 1;
    if (!mul_u64(n, eb, &bytes)) bytes = UINT64_MAX;
    int64_t l2 = lv->v[SPEC_LIMIT_LOG2_SIZE];
    if (l2 < 64 && bytes >= (1ull << l2))
        bad(c, d, CTOSA_DIAG_LEVEL_LIMIT,
            "%s %u tensor '%s' has %" PRIu64 " bytes, reaching 2^MAX_LOG2_SIZE (2^%" PRId64 ") of level %s",
            side, i, t->name, bytes, l2, lv->name);
}

/* ------------------------------------------------------------ variables */

/* VARIABLE* operands differ between writers (see validate.c); the type
 * symbol binds to the variable's value. */
static void check_variable(const spec_op_ctx *c, diag_list *d, const spec_op_info *oi) {
    const ctosa_op *op = c->op;
    const ctosa_tensor *t = NULL;
    if (op->kind == CTOSA_OP_VARIABLE_READ) t = op->n_outputs ? c->out[0] : NULL;
    else if (op->kind == CTOSA_OP_VARIABLE_WRITE) t = op->n_inputs ? c->in[op->n_inputs - 1] : NULL;
    else t = op->n_inputs ? c->in[0] : op->n_outputs ? c->out[0] : NULL;
    ctosa_dtype dt = t ? t->dtype : CTOSA_DTYPE_UNKNOWN;
    bool any = false;
    for (uint32_t r = 0; r < oi->n_rows; r++) {
        const spec_row *row = spec_op_row(oi, r);
        if ((!dt || row->types[0] == dt) && spec_row_allowed(row, c->spec)) return;
        any |= spec_row_allowed(row, c->spec);
    }
    char sname[512];
    ctosa_spec_format(c->spec, sname, sizeof sname);
    if (!any) bad(c, d, CTOSA_DIAG_EXTENSION, "%s needs EXT-VARIABLE (+var), not in %s", oi->name, sname);
    else {
        char line[640];
        snprintf(line, sizeof line, "variable type %s not allowed by %s", spec_dtype_short(dt), sname);
        spec_report_op(c, d, CTOSA_DIAG_TYPES, op->kind == CTOSA_OP_VARIABLE_READ ? 0 : 1,
                       op->kind == CTOSA_OP_VARIABLE_READ ? 1 : 0, &dt, line);
    }
}

/* ------------------------------------------------------------ entry */

void spec_check_op_rules(const spec_op_ctx *c, diag_list *d) {
    const ctosa_op *op = c->op;
    const ctosa_spec *s = c->spec;
    const spec_op_info *oi = spec_op_find(op->kind);
    if (!oi) {
        bad(c, d, CTOSA_DIAG_NOT_IN_VERSION, "operator value %d is not a TOSA operator", (int)op->kind);
        return;
    }
    if (!spec_version_has(s, oi->version)) {
        bad(c, d, CTOSA_DIAG_NOT_IN_VERSION, "%s is not in TOSA %d.%d (it is a TOSA 1.1 draft operator)",
            oi->name, (int)s->version.major, (int)s->version.minor);
        return;
    }
    if (op->kind == CTOSA_OP_VARIABLE || op->kind == CTOSA_OP_VARIABLE_READ ||
        op->kind == CTOSA_OP_VARIABLE_WRITE) {
        check_variable(c, d, oi);
        return;
    }
    const spec_level_values *lv = spec_level_info(s->level);
    sigctx x = {.oi = oi, .n_in = op->n_inputs, .n_out = op->n_outputs};
    size_t n_all = (size_t)op->n_inputs + op->n_outputs + 1;
    x.in = calloc(n_all, sizeof *x.in);
    x.in_arg = calloc(n_all, sizeof *x.in_arg);
    if (!x.in || !x.in_arg) {
        free(x.in);
        free(x.in_arg);
        bad(c, d, CTOSA_DIAG_TYPES, "out of memory while checking types");
        return;
    }
    x.out = x.in + op->n_inputs;
    x.out_arg = x.in_arg + op->n_inputs;
    if (!spec_map_operands(oi, op->n_inputs, op->n_outputs, x.in_arg, x.out_arg)) {
        uint32_t ni, no;
        bool li, lo;
        spec_operand_counts(oi, &ni, &li, &no, &lo);
        bad(c, d, CTOSA_DIAG_OPERAND_COUNT,
            "has %u input%s and %u output%s; %s takes %s%u input%s and %s%u output%s", op->n_inputs,
            op->n_inputs == 1 ? "" : "s", op->n_outputs, op->n_outputs == 1 ? "" : "s", oi->name,
            li ? "at least " : "", ni, ni == 1 && !li ? "" : "s", lo ? "at least " : "", no,
            no == 1 && !lo ? "" : "s");
        free(x.in);
        free(x.in_arg);
        return;
    }
    for (uint32_t i = 0; i < op->n_inputs; i++) x.in[i] = c->in[i] ? c->in[i]->dtype : 0;
    for (uint32_t i = 0; i < op->n_outputs; i++) x.out[i] = c->out[i] ? c->out[i]->dtype : 0;
    x.acc = oi->acc_sym >= 0 ? op->attr.acc_type : CTOSA_DTYPE_UNKNOWN;

    check_types(c, d, &x);
    for (uint32_t i = 0; i < op->n_inputs; i++) check_operand(c, d, &x, true, i, lv);
    for (uint32_t i = 0; i < op->n_outputs; i++) check_operand(c, d, &x, false, i, lv);
    check_arg_levels(c, d, &x, lv);

    if (op->kind == CTOSA_OP_RESCALE) {
        uint64_t need = spec_rounding_mode_ext(op->attr.rounding_mode);
        if (need && !(s->extensions & need)) {
            int e = __builtin_ctzll(need);
            char sname[512];
            ctosa_spec_format(s, sname, sizeof sname);
            bad(c, d, CTOSA_DIAG_EXTENSION, "rounding_mode %s needs %s (+%s), not in %s",
                op->attr.rounding_mode == CTOSA_ROUND_DOUBLE ? "DOUBLE_ROUND" : "INEXACT_ROUND",
                ctosa_ext_spec_name((ctosa_ext)e), ctosa_ext_token((ctosa_ext)e), sname);
        }
        /* mul_t is i32 when scale32, else i16 (spec RESCALE) */
        ctosa_dtype want = op->attr.scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16;
        if (op->n_inputs > 1 && x.in[1] && x.in[1] != want)
            bad(c, d, CTOSA_DIAG_ERROR_IF, "multiplier is %s but scale32 = %s needs %s",
                spec_dtype_short(x.in[1]), op->attr.scale32 ? "true" : "false", spec_dtype_short(want));
    }
    if (s->u55) spec_u55_check(c, d, x.n_in, x.in, x.n_out, x.out);
    free(x.in);
    free(x.in_arg);
}
