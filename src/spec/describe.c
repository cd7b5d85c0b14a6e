/* describe.c - what a spec allows, as text or JSON (the output of
 * `ctosa spec SPEC [--json]`), from the compliance tables; and the named
 * targets. The layout is part of the command-line contract: keep it
 * byte-stable (tests/cli_spec_output.sh). */
#include <string.h>

#include "spec/compliance.h"
#include "spec/describe.h"

static const char *limit_keys[SPEC_LIMIT_COUNT] = {
    "max_rank",      "max_kernel",  "max_stride",           "max_scale",
    "max_log2_size", "max_nesting", "max_tensor_list_size", "max_shape_len"};

/* Why the Ethos-U55 subset restricts operator k; NULL when it does not. */
static const char *u55_reason(ctosa_op_kind k) {
    ctosa_op_kind op;
    const char *r;
    for (uint32_t i = 0; (r = spec_u55_rule(i, &op)); i++)
        if (op == k) return r;
    return NULL;
}

/* Level limits a version has (MAX_SHAPE_LEN came with 1.1). */
static int n_limits(const ctosa_spec *s) {
    return ctosa_version_key(s->version) >= 11 ? SPEC_LIMIT_COUNT : SPEC_LIMIT_SHAPE_LEN;
}

static void describe_text(strbuf *b, const ctosa_spec *s, const char *canon) {
    const spec_level_values *lv = spec_level_info(s->level);
    sb_printf(b, "spec:       %s\n", canon);
    sb_printf(b, "version:    %d.%d.%d%s\n", (int)s->version.major, (int)s->version.minor,
              (int)s->version.patch, s->version.draft ? " (draft)" : "");
    sb_puts(b, "profiles:  ");
    if (s->profiles & CTOSA_PRO_INT) sb_puts(b, " PRO-INT");
    if (s->profiles & CTOSA_PRO_FP) sb_puts(b, " PRO-FP");
    sb_puts(b, "\nextensions:");
    if (!s->extensions) sb_puts(b, " none");
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (s->extensions & (1ull << e)) sb_printf(b, " %s", ctosa_ext_spec_name((ctosa_ext)e));
    sb_printf(b, "\nlevel:      %s (", lv->name);
    for (int i = 0; i < n_limits(s); i++)
        sb_printf(b, "%s%s %lld", i ? ", " : "", limit_keys[i], (long long)lv->v[i]);
    sb_puts(b, ")\n");
    sb_printf(b, "u55:        %s\n", s->u55 ? "yes (Ethos-U55 subset rules apply, marked below)" : "no");
    uint32_t nops, shown = 0;
    spec_op_at(0, &nops);
    sb_puts(b, "\noperators and type signatures (inputs)->outputs:\n");
    for (uint32_t i = 0; i < nops; i++) {
        const spec_op_info *oi = spec_op_at(i, NULL);
        if (!spec_version_has(s, oi->version)) continue;
        bool header = false;
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *row = spec_op_row(oi, r);
            if (!spec_row_allowed(row, s)) continue;
            if (!header) {
                const char *why = s->u55 ? u55_reason(oi->kind) : NULL;
                sb_printf(b, "  %s%s%s%s\n", oi->name, why ? "  [u55: " : "", why ? why : "", why ? "]" : "");
                header = true;
                shown++;
            }
            sb_puts(b, "      ");
            spec_format_row_generic(b, oi, row);
            sb_puts(b, "  [");
            spec_format_requirement(b, row);
            sb_puts(b, "]\n");
        }
    }
    sb_printf(b, "%u operators allowed\n", shown);
}

static void describe_json(strbuf *b, const ctosa_spec *s, const char *canon) {
    const spec_level_values *lv = spec_level_info(s->level);
    sb_puts(b, "{\n  \"spec\": ");
    sb_json_str(b, canon);
    sb_printf(b, ",\n  \"version\": \"%d.%d.%d\",\n  \"draft\": %s,\n  \"profiles\": [",
              (int)s->version.major, (int)s->version.minor, (int)s->version.patch,
              s->version.draft ? "true" : "false");
    int k = 0;
    if (s->profiles & CTOSA_PRO_INT) sb_printf(b, "%s\"PRO-INT\"", k++ ? ", " : "");
    if (s->profiles & CTOSA_PRO_FP) sb_printf(b, "%s\"PRO-FP\"", k++ ? ", " : "");
    sb_puts(b, "],\n  \"extensions\": [");
    k = 0;
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (s->extensions & (1ull << e))
            sb_printf(b, "%s\"%s\"", k++ ? ", " : "", ctosa_ext_spec_name((ctosa_ext)e));
    sb_puts(b, "],\n  \"level\": {\"name\": ");
    sb_json_str(b, lv->name);
    for (int i = 0; i < n_limits(s); i++) sb_printf(b, ", \"%s\": %lld", limit_keys[i], (long long)lv->v[i]);
    sb_printf(b, "},\n  \"u55\": %s,\n  \"operators\": [", s->u55 ? "true" : "false");
    uint32_t nops, shown = 0;
    spec_op_at(0, &nops);
    for (uint32_t i = 0; i < nops; i++) {
        const spec_op_info *oi = spec_op_at(i, NULL);
        if (!spec_version_has(s, oi->version)) continue;
        uint32_t nr = 0;
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *row = spec_op_row(oi, r);
            if (!spec_row_allowed(row, s)) continue;
            if (!nr++) {
                sb_printf(b, "%s\n    {\"name\": \"%s\"", shown++ ? "," : "", oi->name);
                const char *why = s->u55 ? u55_reason(oi->kind) : NULL;
                if (why) {
                    sb_puts(b, ", \"u55_restriction\": ");
                    sb_json_str(b, why);
                }
                sb_puts(b, ", \"signatures\": [");
            }
            strbuf t;
            sb_init(&t);
            spec_format_row_generic(&t, oi, row);
            sb_printf(b, "%s\n      {\"types\": ", nr > 1 ? "," : "");
            sb_json_str(b, t.s ? t.s : "");
            sb_free(&t);
            sb_puts(b, ", \"mode\": ");
            sb_json_str(b, row->mode);
            sb_init(&t);
            spec_format_requirement(&t, row);
            sb_puts(b, ", \"requires\": ");
            sb_json_str(b, t.s ? t.s : "");
            sb_free(&t);
            sb_printf(b, ", \"version_added\": \"1.%d\"}", row->version - 10);
        }
        if (nr) sb_puts(b, "]}");
    }
    sb_puts(b, "\n  ]\n}\n");
}

void spec_describe_tosa(strbuf *b, const ctosa_spec *s, const char *canon, bool json) {
    if (json) describe_json(b, s, canon);
    else describe_text(b, s, canon);
}

const char *ctosa_spec_target_at(uint32_t i, const char **spec_string) {
    const char *sp = NULL;
    const char *name = spec_target_name(i, &sp);
    if (spec_string) *spec_string = name ? sp : NULL;
    return name;
}
