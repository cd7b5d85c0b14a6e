/* compliance.c - lookups on the generated TOSA compliance tables. */
#include <stdlib.h>
#include <string.h>

#include "spec/compliance.h"

#include "spec/compliance_gen.h"

/* The generated table is sorted by op enum value (1.0 ops 1..75, then the
 * 1.1 ops), so a binary search needs no mutable state (thread safe). */
static const spec_op_info *op_by_kind(ctosa_op_kind k) {
    uint32_t n = (uint32_t)CTOSA_ARRAY_LEN(spec_gen_ops);
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if ((int)spec_gen_ops[mid].kind < (int)k) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && spec_gen_ops[lo].kind == k ? &spec_gen_ops[lo] : NULL;
}

const spec_op_info *spec_op_find(ctosa_op_kind op) { return op_by_kind(op); }

const spec_op_info *spec_op_at(uint32_t i, uint32_t *count) {
    if (count) *count = (uint32_t)CTOSA_ARRAY_LEN(spec_gen_ops);
    return i < CTOSA_ARRAY_LEN(spec_gen_ops) ? &spec_gen_ops[i] : NULL;
}

const spec_arg *spec_op_arg(const spec_op_info *oi, uint32_t i) { return &spec_gen_args[oi->first_arg + i]; }

const spec_row *spec_op_row(const spec_op_info *oi, uint32_t i) { return &spec_gen_rows[oi->first_row + i]; }

const spec_term *spec_row_term(const spec_row *row, uint32_t i) {
    return &spec_gen_terms[row->first_term + i];
}

const spec_level_limit *spec_arg_limit(const spec_arg *a, uint32_t i) {
    return &spec_gen_limits[a->first_limit + i];
}

const spec_level_values *spec_level_info(ctosa_level level) {
    /* generated order: "none", "8K" */
    return &spec_gen_levels[level == CTOSA_LEVEL_8K ? 1 : 0];
}

uint32_t spec_row_count(int version_key) {
    return version_key == 10 ? SPEC_GEN_ROWS_10 : version_key == 11 ? SPEC_GEN_ROWS_11 : 0;
}

uint64_t spec_rounding_mode_ext(ctosa_rounding_mode m) {
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(spec_gen_enum_ext); i++)
        if (strcmp(spec_gen_enum_ext[i].enum_type, "rounding_mode_t") == 0 &&
            spec_gen_enum_ext[i].value == (uint32_t)m)
            return spec_gen_enum_ext[i].ext;
    return 0;
}

uint64_t spec_dtype_ext(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_INT16: return CTOSA_EXT_BIT(INT16);
    case CTOSA_DTYPE_INT4: return CTOSA_EXT_BIT(INT4);
    case CTOSA_DTYPE_INT64: return CTOSA_EXT_BIT(INT64);
    case CTOSA_DTYPE_BF16: return CTOSA_EXT_BIT(BF16);
    case CTOSA_DTYPE_FP8E4M3: return CTOSA_EXT_BIT(FP8E4M3);
    case CTOSA_DTYPE_FP8E5M2: return CTOSA_EXT_BIT(FP8E5M2);
    case CTOSA_DTYPE_FP8UE8M0: return CTOSA_EXT_BIT(MX_COMMON);
    case CTOSA_DTYPE_FP4E2M1: return CTOSA_EXT_BIT(MX_FP4E2M1);
    case CTOSA_DTYPE_FP6E2M3: return CTOSA_EXT_BIT(MX_FP6E2M3);
    case CTOSA_DTYPE_FP6E3M2: return CTOSA_EXT_BIT(MX_FP6E3M2);
    case CTOSA_DTYPE_MXINT8: return CTOSA_EXT_BIT(MX_INT8);
    default: return 0;
    }
}

/* ------------------------------------------------------------ queries */

bool spec_version_has(const ctosa_spec *s, int version_key) {
    return ctosa_version_key(s->version) >= version_key;
}

bool spec_term_satisfied(const spec_term *t, const ctosa_spec *s) {
    return (s->profiles & t->profiles) == t->profiles && (s->extensions & t->extensions) == t->extensions;
}

bool spec_row_allowed(const spec_row *row, const ctosa_spec *s) {
    if (!spec_version_has(s, row->version)) return false;
    for (uint32_t i = 0; i < row->n_terms; i++)
        if (spec_term_satisfied(spec_row_term(row, i), s)) return true;
    return false;
}

void spec_operand_counts(const spec_op_info *oi, uint32_t *n_in, bool *in_list, uint32_t *n_out,
                         bool *out_list) {
    uint32_t ni = 0, no = 0;
    bool li = false, lo = false;
    for (uint32_t i = 0; i < oi->n_args; i++) {
        const spec_arg *a = spec_op_arg(oi, i);
        if (a->cat == SPEC_ARG_ATTR) continue;
        bool *l = a->cat == SPEC_ARG_INPUT ? &li : &lo;
        uint32_t *n = a->cat == SPEC_ARG_INPUT ? &ni : &no;
        if (a->kind == SPEC_KIND_LIST) *l = true;
        else (*n)++;
    }
    if (n_in) *n_in = ni;
    if (in_list) *in_list = li;
    if (n_out) *n_out = no;
    if (out_list) *out_list = lo;
}

static bool map_cat(const spec_op_info *oi, spec_arg_cat cat, uint32_t n, uint16_t *map) {
    uint32_t fixed = 0;
    bool list = false;
    for (uint32_t i = 0; i < oi->n_args; i++) {
        const spec_arg *a = spec_op_arg(oi, i);
        if (a->cat != cat) continue;
        if (a->kind == SPEC_KIND_LIST) list = true;
        else fixed++;
    }
    if (n < fixed || (!list && n != fixed)) return false;
    uint32_t list_len = n - fixed, k = 0;
    for (uint32_t i = 0; i < oi->n_args; i++) {
        const spec_arg *a = spec_op_arg(oi, i);
        if (a->cat != cat) continue;
        uint32_t take = a->kind == SPEC_KIND_LIST ? list_len : 1;
        for (uint32_t j = 0; j < take; j++)
            if (map) map[k++] = (uint16_t)i;
        if (!map) k += take;
    }
    return k == n;
}

bool spec_map_operands(const spec_op_info *oi, uint32_t n_in, uint32_t n_out, uint16_t *in_arg,
                       uint16_t *out_arg) {
    return map_cat(oi, SPEC_ARG_INPUT, n_in, in_arg) && map_cat(oi, SPEC_ARG_OUTPUT, n_out, out_arg);
}

ctosa_dtype spec_arg_dtype(const spec_op_info *oi, const spec_arg *a, const spec_row *row) {
    if (a->dtype) return (ctosa_dtype)a->dtype;
    if (a->sym >= 0 && a->sym < oi->n_syms && row) return (ctosa_dtype)row->types[a->sym];
    return CTOSA_DTYPE_UNKNOWN;
}

static bool match_side(const spec_op_info *oi, const spec_row *row, uint32_t n, const ctosa_dtype *dt,
                       const uint16_t *arg) {
    for (uint32_t i = 0; i < n; i++) {
        if (!dt[i]) continue;
        ctosa_dtype want = spec_arg_dtype(oi, spec_op_arg(oi, arg[i]), row);
        if (want && want != dt[i]) return false;
    }
    return true;
}

bool spec_row_matches_tensors(const spec_op_info *oi, const spec_row *row, uint32_t n_in,
                              const ctosa_dtype *in, const uint16_t *in_arg, uint32_t n_out,
                              const ctosa_dtype *out, const uint16_t *out_arg) {
    return match_side(oi, row, n_in, in, in_arg) && match_side(oi, row, n_out, out, out_arg);
}

bool spec_row_matches(const spec_op_info *oi, const spec_row *row, uint32_t n_in, const ctosa_dtype *in,
                      const uint16_t *in_arg, uint32_t n_out, const ctosa_dtype *out, const uint16_t *out_arg,
                      ctosa_dtype acc) {
    if (!spec_row_matches_tensors(oi, row, n_in, in, in_arg, n_out, out, out_arg)) return false;
    if (oi->acc_sym >= 0 && acc != CTOSA_DTYPE_UNKNOWN && row->types[oi->acc_sym] != acc) return false;
    return true;
}

bool spec_types_allowed(ctosa_op_kind kind, uint32_t n_in, const ctosa_dtype *in, uint32_t n_out,
                        const ctosa_dtype *out, ctosa_dtype acc, const ctosa_spec *s) {
    const spec_op_info *oi = spec_op_find(kind);
    if (!oi || !spec_version_has(s, oi->version)) return false;
    uint16_t in_small[16], out_small[8];
    uint16_t *in_arg = n_in <= 16 ? in_small : malloc(n_in * sizeof *in_arg);
    uint16_t *out_arg = n_out <= 8 ? out_small : malloc(n_out * sizeof *out_arg);
    bool ok = false;
    if (in_arg && out_arg && spec_map_operands(oi, n_in, n_out, in_arg, out_arg)) {
        for (uint32_t r = 0; r < oi->n_rows && !ok; r++) {
            const spec_row *row = spec_op_row(oi, r);
            ok = spec_row_allowed(row, s) &&
                 spec_row_matches(oi, row, n_in, in, in_arg, n_out, out, out_arg, acc);
        }
    }
    if (in_arg != in_small) free(in_arg);
    if (out_arg != out_small) free(out_arg);
    return ok;
}

/* ------------------------------------------------------------ text */

const char *spec_dtype_short(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return "bool";
    case CTOSA_DTYPE_INT4: return "i4";
    case CTOSA_DTYPE_INT8: return "i8";
    case CTOSA_DTYPE_INT16: return "i16";
    case CTOSA_DTYPE_INT32: return "i32";
    case CTOSA_DTYPE_INT48: return "i48";
    case CTOSA_DTYPE_INT64: return "i64";
    case CTOSA_DTYPE_FP16: return "fp16";
    case CTOSA_DTYPE_BF16: return "bf16";
    case CTOSA_DTYPE_FP32: return "fp32";
    case CTOSA_DTYPE_SHAPE: return "shape";
    case CTOSA_DTYPE_FP8E4M3: return "fp8e4m3";
    case CTOSA_DTYPE_FP8E5M2: return "fp8e5m2";
    case CTOSA_DTYPE_FP6E2M3: return "fp6e2m3";
    case CTOSA_DTYPE_FP6E3M2: return "fp6e3m2";
    case CTOSA_DTYPE_FP4E2M1: return "fp4e2m1";
    case CTOSA_DTYPE_FP8UE8M0: return "fp8ue8m0";
    case CTOSA_DTYPE_MXINT8: return "mxint8";
    default: return "?";
    }
}

static void put_list(strbuf *b, uint32_t n, const ctosa_dtype *dt) {
    sb_putc(b, '(');
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_putc(b, ',');
        sb_puts(b, spec_dtype_short(dt[i]));
    }
    sb_putc(b, ')');
}

void spec_format_actual(strbuf *b, uint32_t n_in, const ctosa_dtype *in, uint32_t n_out,
                        const ctosa_dtype *out) {
    put_list(b, n_in, in);
    sb_puts(b, "->");
    if (n_out == 1) sb_puts(b, spec_dtype_short(out[0]));
    else put_list(b, n_out, out);
}

static void put_row_side(strbuf *b, const spec_op_info *oi, const spec_row *row, uint32_t n,
                         const uint16_t *arg, const ctosa_dtype *actual) {
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_putc(b, ',');
        ctosa_dtype t = spec_arg_dtype(oi, spec_op_arg(oi, arg[i]), row);
        if (!t && actual) t = actual[i];
        sb_puts(b, t ? spec_dtype_short(t) : "*");
    }
}

void spec_format_row(strbuf *b, const spec_op_info *oi, const spec_row *row, uint32_t n_in,
                     const uint16_t *in_arg, const ctosa_dtype *in, uint32_t n_out, const uint16_t *out_arg,
                     const ctosa_dtype *out) {
    sb_putc(b, '(');
    put_row_side(b, oi, row, n_in, in_arg, in);
    sb_puts(b, ")->");
    if (n_out != 1) sb_putc(b, '(');
    put_row_side(b, oi, row, n_out, out_arg, out);
    if (n_out != 1) sb_putc(b, ')');
}

static void put_generic_side(strbuf *b, const spec_op_info *oi, const spec_row *row, spec_arg_cat cat,
                             uint32_t *count) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < oi->n_args; i++) {
        const spec_arg *a = spec_op_arg(oi, i);
        if (a->cat != cat) continue;
        if (k++) sb_putc(b, ',');
        ctosa_dtype t = spec_arg_dtype(oi, a, row);
        sb_puts(b, t ? spec_dtype_short(t) : "*");
        if (a->kind == SPEC_KIND_LIST) sb_puts(b, "...");
    }
    *count = k;
}

void spec_format_row_generic(strbuf *b, const spec_op_info *oi, const spec_row *row) {
    uint32_t n_in, n_out;
    bool in_list, out_list;
    spec_operand_counts(oi, &n_in, &in_list, &n_out, &out_list);
    sb_putc(b, '(');
    uint32_t k;
    put_generic_side(b, oi, row, SPEC_ARG_INPUT, &k);
    sb_puts(b, ")->");
    bool paren = n_out + (out_list ? 1u : 0u) != 1;
    if (paren) sb_putc(b, '(');
    put_generic_side(b, oi, row, SPEC_ARG_OUTPUT, &k);
    if (paren) sb_putc(b, ')');
    if (oi->acc_sym >= 0 && row->types[oi->acc_sym])
        sb_printf(b, " acc %s", spec_dtype_short((ctosa_dtype)row->types[oi->acc_sym]));
    if (row->param) sb_printf(b, " table %d", (int)row->param);
}

const char *spec_profile_name(uint32_t pro_bit) {
    return pro_bit == CTOSA_PRO_INT ? "PRO-INT" : pro_bit == CTOSA_PRO_FP ? "PRO-FP" : "PRO-?";
}

void spec_format_requirement(strbuf *b, const spec_row *row) {
    for (uint32_t i = 0; i < row->n_terms; i++) {
        const spec_term *t = spec_row_term(row, i);
        if (i) sb_puts(b, " or ");
        bool first = true;
        for (uint32_t p = CTOSA_PRO_INT; p <= CTOSA_PRO_FP; p <<= 1)
            if (t->profiles & p) {
                sb_printf(b, "%s%s", first ? "" : " and ", spec_profile_name(p));
                first = false;
            }
        for (int e = 0; e < CTOSA_EXT_COUNT; e++)
            if (t->extensions & (1ull << e)) {
                sb_printf(b, "%s%s", first ? "" : " and ", ctosa_ext_spec_name((ctosa_ext)e));
                first = false;
            }
    }
}
