/* spec_describe.c - ctosa_spec_describe(): what a spec allows, as text or
 * JSON. The TOSA operator table comes from src/spec/describe.c; the ONNX
 * int64 allowlist (CTOSA_SPEC_DESCRIBE_ONNX) is derived by the lowering
 * (lw_int64_allowlist, lower_int64.c), which is why this lives above both
 * modules. The layouts are the output of `ctosa spec` and must stay
 * byte-stable (tests/cli_spec_output.sh). */
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "spec/describe.h"

/* The derived int64 allowlist: text keeps two lists (delegated, not), JSON
 * one array in registry order. */
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

static void describe_onnx(strbuf *b, const ctosa_spec *s, const char *canon, bool json) {
    onnx_list l;
    memset(&l, 0, sizeof l);
    l.json = json;
    sb_init(&l.yes);
    sb_init(&l.no);
    lw_int64_allowlist(s, onnx_cb, &l);
    if (json) {
        sb_puts(b, "{\n  \"spec\": ");
        sb_json_str(b, canon);
        sb_printf(b, ",\n  \"int64_extension\": %s,\n  \"onnx_int64\": [%s\n  ]\n}\n",
                  lw_spec_has_int64(s) ? "true" : "false", l.yes.s ? l.yes.s : "");
    } else {
        sb_printf(b, "spec:       %s\n", canon);
        sb_puts(b, "ONNX operators with int64 operands (each registered lowering run on a one-node probe\n"
                   "with int64 inputs and validated under the spec):\n");
        sb_printf(b, "delegated (%u):\n%s", l.n_yes, l.yes.s ? l.yes.s : "");
        sb_printf(b, "not delegated (%u):\n%s", l.n_no, l.no.s ? l.no.s : "");
    }
    if (l.yes.failed || l.no.failed) b->failed = true;
    sb_free(&l.yes);
    sb_free(&l.no);
}

ctosa_error *ctosa_spec_describe(const ctosa_spec *spec, unsigned flags, char **out_text) {
    if (out_text) *out_text = NULL;
    if (!spec || !out_text)
        return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_spec_describe: spec and out_text are required");
    if (flags & ~(unsigned)(CTOSA_SPEC_DESCRIBE_JSON | CTOSA_SPEC_DESCRIBE_ONNX))
        return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_spec_describe: unknown flags 0x%x",
                               flags & ~(unsigned)(CTOSA_SPEC_DESCRIBE_JSON | CTOSA_SPEC_DESCRIBE_ONNX));
    char canon[256];
    ctosa_spec_format(spec, canon, sizeof canon);
    bool json = flags & CTOSA_SPEC_DESCRIBE_JSON;
    strbuf b;
    sb_init(&b);
    if (flags & CTOSA_SPEC_DESCRIBE_ONNX) describe_onnx(&b, spec, canon, json);
    else spec_describe_tosa(&b, spec, canon, json);
    if (b.failed || !b.s) {
        sb_free(&b);
        return ctosa_error_nomem();
    }
    *out_text = sb_take(&b); /* malloc'd: the caller frees it */
    return NULL;
}
