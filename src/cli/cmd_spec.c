/* cmd_spec.c - `ctosa spec SPEC [--json]`, `ctosa spec --target NAME`,
 * `ctosa spec --list-targets`: what a TOSA spec string allows. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "lower/lower_internal.h"
#include "spec/compliance.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: ctosa spec SPEC [--onnx] [--json]\n"
            "       ctosa spec --target NAME [--json]\n"
            "       ctosa spec --list-targets\n\n"
            "Parses a TOSA spec string (e.g. TOSA-1.0+INT+int16) and prints its canonical\n"
            "form, version, profiles, extensions, level and the operators and type\n"
            "signatures it allows.\n\n"
            "  SPEC            TOSA-<major>.<minor>[.<patch>]+<PROFILE>[+<PROFILE>][+<token>]...\n"
            "                  profiles INT, FP; level 8k; u55 (Ethos-U55 subset); extensions\n"
            "                  int16 int4 bf16 fp8e4m3 fp8e5m2 fft var cf doubleround\n"
            "                  inexactround dynamic, and for TOSA 1.1 int64 shape (and mx...)\n"
            "  --target NAME   the spec of a target (ethos-u55-128, ethos-u85-256, vgf, ...)\n"
            "  --list-targets  list the known targets and their specs\n"
            "  --onnx          instead of TOSA operators: which ONNX operators are delegated\n"
            "                  with int64 operands under SPEC (derived by lowering a one-node\n"
            "                  probe per registered ONNX operator and validating it), and\n"
            "                  for the others the reason code and the missing row\n"
            "  --json          machine-readable output\n");
}

/* --onnx: the derived int64 allowlist. */
typedef struct onnx_list {
    strbuf yes, no;
    uint32_t n_yes, n_no;
    bool json;
} onnx_list;

static void onnx_cb(void *ud, const char *op, bool delegated, const char *code, const char *reason) {
    onnx_list *l = ud;
    if (l->json) {
        strbuf *b = &l->yes;
        sb_printf(b, "%s\n    {\"op\": ", l->n_yes + l->n_no ? "," : "");
        sb_json_str(b, op);
        sb_printf(b, ", \"delegated\": %s", delegated ? "true" : "false");
        if (delegated && code) sb_puts(b, ", \"compile_time\": true");
        if (!delegated) {
            sb_puts(b, ", \"code\": ");
            sb_json_str(b, code ? code : "");
            sb_puts(b, ", \"reason\": ");
            sb_json_str(b, reason ? reason : "");
        }
        sb_puts(b, "}");
    } else if (delegated) {
        sb_printf(&l->yes, "  %s%s\n", op, code ? "  (computed at compile time)" : "");
    } else {
        sb_printf(&l->no, "  %s: %s: %s\n", op, code ? code : "?", reason ? reason : "");
    }
    if (delegated) l->n_yes++;
    else l->n_no++;
}

static void print_onnx(const ctosa_spec *s, const char *canon, bool json) {
    onnx_list l;
    memset(&l, 0, sizeof l);
    l.json = json;
    sb_init(&l.yes);
    sb_init(&l.no);
    lw_int64_allowlist(s, onnx_cb, &l);
    if (json) {
        printf("{\n  \"spec\": ");
        strbuf c;
        sb_init(&c);
        sb_json_str(&c, canon);
        printf("%s,\n  \"int64_extension\": %s,\n  \"onnx_int64\": [%s\n  ]\n}\n", c.s ? c.s : "\"\"",
               lw_spec_has_int64(s) ? "true" : "false", l.yes.s ? l.yes.s : "");
        sb_free(&c);
    } else {
        printf("spec:       %s\n", canon);
        printf("ONNX operators with int64 operands (each registered lowering run on a one-node probe\n"
               "with int64 inputs and validated under the spec):\n");
        printf("delegated (%u):\n%s", l.n_yes, l.yes.s ? l.yes.s : "");
        printf("not delegated (%u):\n%s", l.n_no, l.no.s ? l.no.s : "");
    }
    sb_free(&l.yes);
    sb_free(&l.no);
}

static const char *limit_keys[SPEC_LIMIT_COUNT] = {
    "max_rank", "max_kernel", "max_stride", "max_scale", "max_log2_size", "max_nesting",
    "max_tensor_list_size", "max_shape_len"};

static const char *u55_reason(ctosa_op_kind k) {
    ctosa_op_kind op;
    const char *r;
    for (uint32_t i = 0; (r = spec_u55_rule(i, &op)); i++)
        if (op == k) return r;
    return NULL;
}

static void print_text(const ctosa_spec *s, const char *canon) {
    const spec_level_values *lv = spec_level_info(s->level);
    printf("spec:       %s\n", canon);
    printf("version:    %d.%d.%d%s\n", (int)s->version.major, (int)s->version.minor,
           (int)s->version.patch, s->version.draft ? " (draft)" : "");
    printf("profiles:  ");
    if (s->profiles & CTOSA_PRO_INT) printf(" PRO-INT");
    if (s->profiles & CTOSA_PRO_FP) printf(" PRO-FP");
    printf("\nextensions:");
    if (!s->extensions) printf(" none");
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (s->extensions & (1ull << e)) printf(" %s", ctosa_ext_spec_name((ctosa_ext)e));
    printf("\nlevel:      %s (", lv->name);
    int nlim = ctosa_version_key(s->version) >= 11 ? SPEC_LIMIT_COUNT : SPEC_LIMIT_SHAPE_LEN;
    for (int i = 0; i < nlim; i++)
        printf("%s%s %lld", i ? ", " : "", limit_keys[i], (long long)lv->v[i]);
    printf(")\n");
    printf("u55:        %s\n", s->u55 ? "yes (Ethos-U55 subset rules apply, marked below)" : "no");
    uint32_t nops, shown = 0;
    spec_op_at(0, &nops);
    printf("\noperators and type signatures (inputs)->outputs:\n");
    for (uint32_t i = 0; i < nops; i++) {
        const spec_op_info *oi = spec_op_at(i, NULL);
        if (!spec_version_has(s, oi->version)) continue;
        bool header = false;
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *row = spec_op_row(oi, r);
            if (!spec_row_allowed(row, s)) continue;
            if (!header) {
                const char *why = s->u55 ? u55_reason(oi->kind) : NULL;
                printf("  %s%s%s%s\n", oi->name, why ? "  [u55: " : "", why ? why : "", why ? "]" : "");
                header = true;
                shown++;
            }
            strbuf b;
            sb_init(&b);
            spec_format_row_generic(&b, oi, row);
            sb_puts(&b, "  [");
            spec_format_requirement(&b, row);
            sb_puts(&b, "]");
            printf("      %s\n", b.s ? b.s : "");
            sb_free(&b);
        }
    }
    printf("%u operators allowed\n", shown);
}

static void print_json(const ctosa_spec *s, const char *canon) {
    const spec_level_values *lv = spec_level_info(s->level);
    strbuf b;
    sb_init(&b);
    sb_puts(&b, "{\n  \"spec\": ");
    sb_json_str(&b, canon);
    sb_printf(&b, ",\n  \"version\": \"%d.%d.%d\",\n  \"draft\": %s,\n  \"profiles\": [",
              (int)s->version.major, (int)s->version.minor, (int)s->version.patch,
              s->version.draft ? "true" : "false");
    int k = 0;
    if (s->profiles & CTOSA_PRO_INT) sb_printf(&b, "%s\"PRO-INT\"", k++ ? ", " : "");
    if (s->profiles & CTOSA_PRO_FP) sb_printf(&b, "%s\"PRO-FP\"", k++ ? ", " : "");
    sb_puts(&b, "],\n  \"extensions\": [");
    k = 0;
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (s->extensions & (1ull << e))
            sb_printf(&b, "%s\"%s\"", k++ ? ", " : "", ctosa_ext_spec_name((ctosa_ext)e));
    sb_puts(&b, "],\n  \"level\": {\"name\": ");
    sb_json_str(&b, lv->name);
    int nlim = ctosa_version_key(s->version) >= 11 ? SPEC_LIMIT_COUNT : SPEC_LIMIT_SHAPE_LEN;
    for (int i = 0; i < nlim; i++) sb_printf(&b, ", \"%s\": %lld", limit_keys[i], (long long)lv->v[i]);
    sb_printf(&b, "},\n  \"u55\": %s,\n  \"operators\": [", s->u55 ? "true" : "false");
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
                sb_printf(&b, "%s\n    {\"name\": \"%s\"", shown++ ? "," : "", oi->name);
                const char *why = s->u55 ? u55_reason(oi->kind) : NULL;
                if (why) {
                    sb_puts(&b, ", \"u55_restriction\": ");
                    sb_json_str(&b, why);
                }
                sb_puts(&b, ", \"signatures\": [");
            }
            strbuf t;
            sb_init(&t);
            spec_format_row_generic(&t, oi, row);
            sb_printf(&b, "%s\n      {\"types\": ", nr > 1 ? "," : "");
            sb_json_str(&b, t.s ? t.s : "");
            sb_free(&t);
            sb_puts(&b, ", \"mode\": ");
            sb_json_str(&b, row->mode);
            sb_init(&t);
            spec_format_requirement(&t, row);
            sb_puts(&b, ", \"requires\": ");
            sb_json_str(&b, t.s ? t.s : "");
            sb_free(&t);
            sb_printf(&b, ", \"version_added\": \"1.%d\"}", row->version - 10);
        }
        if (nr) sb_puts(&b, "]}");
    }
    sb_puts(&b, "\n  ]\n}\n");
    fputs(b.s ? b.s : "{}\n", stdout);
    sb_free(&b);
}

int cmd_spec(int argc, char **argv) {
    const char *text = NULL, *target = NULL;
    bool json = false, list = false, onnx = false;
    for (int i = 1; i < argc; i++) {
        int missing;
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--onnx") == 0) {
            onnx = true;
        } else if (strcmp(argv[i], "--list-targets") == 0) {
            list = true;
        } else if ((v = cli_flag_value(argc, argv, &i, "--target", "-t", &missing)) || missing) {
            if (missing) return cli_usage("spec", "--target needs a target name");
            target = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage("spec", "unknown option '%s'", argv[i]);
        } else if (text) {
            return cli_usage("spec", "more than one spec string ('%s' and '%s')", text, argv[i]);
        } else {
            text = argv[i];
        }
    }
    if (list) {
        const char *sp, *name;
        for (uint32_t i = 0; (name = spec_target_name(i, &sp)); i++) printf("%-16s %s\n", name, sp);
        return 0;
    }
    if (!text && !target) return cli_usage("spec", "expected a spec string or --target NAME");
    if (text && target) return cli_usage("spec", "give either a spec string or --target, not both");
    ctosa_spec s;
    ctosa_error *err = text ? ctosa_spec_parse(text, &s) : ctosa_spec_from_target(target, &s);
    if (err) return cli_fail("spec", err);
    char canon[256];
    ctosa_spec_format(&s, canon, sizeof canon);
    if (onnx)
        print_onnx(&s, canon, json);
    else if (json)
        print_json(&s, canon);
    else
        print_text(&s, canon);
    return 0;
}
