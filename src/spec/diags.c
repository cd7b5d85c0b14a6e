/* diags.c - validator problems as data (ctosa_diags) beside the text lines
 * of the error message: one report call feeds both, so a line and its
 * fields never disagree. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "validate_internal.h"

struct ctosa_diags {
    arena a;
    ctosa_diag *items;
    uint32_t n, cap;
    bool oom; /* a diagnostic could not be stored */
};

const char *ctosa_diag_kind_name(ctosa_diag_kind kind) {
    switch (kind) {
    case CTOSA_DIAG_STRUCTURE: return "structure";
    case CTOSA_DIAG_NOT_IN_VERSION: return "not_in_version";
    case CTOSA_DIAG_OPERAND_COUNT: return "operand_count";
    case CTOSA_DIAG_TYPES: return "types";
    case CTOSA_DIAG_EXTENSION: return "extension";
    case CTOSA_DIAG_NOT_CONSTANT: return "not_constant";
    case CTOSA_DIAG_RANK: return "rank";
    case CTOSA_DIAG_LEVEL_LIMIT: return "level_limit";
    case CTOSA_DIAG_ERROR_IF: return "error_if";
    case CTOSA_DIAG_U55: return "u55";
    }
    return NULL;
}

ctosa_diags *spec_diags_new(void) {
    ctosa_diags *d = calloc(1, sizeof *d);
    if (d) arena_init(&d->a, 0);
    return d;
}

bool spec_diags_failed(const ctosa_diags *d) { return d && d->oom; }

uint32_t ctosa_diags_count(const ctosa_diags *d) { return d ? d->n : 0; }

const ctosa_diag *ctosa_diags_at(const ctosa_diags *d, uint32_t i) {
    return d && i < d->n ? &d->items[i] : NULL;
}

void ctosa_diags_free(ctosa_diags *d) {
    if (!d) return;
    free(d->items);
    arena_free(&d->a);
    free(d);
}

static void store(ctosa_diags *s, ctosa_diag_kind kind, const ctosa_region *region, int32_t op_index,
                  ctosa_op_kind op, uint32_t n_in, uint32_t n_out, const ctosa_dtype *types,
                  const char *line) {
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 8;
        ctosa_diag *p = realloc(s->items, cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return;
        }
        s->items = p;
        s->cap = cap;
    }
    ctosa_diag *d = &s->items[s->n];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->op_index = op_index;
    d->op = op_index >= 0 ? op : CTOSA_OP_UNKNOWN;
    d->region = region ? arena_strdup(&s->a, region->name ? region->name : "") : NULL;
    d->text = arena_strdup(&s->a, line);
    if (types && n_in + n_out) {
        d->types = arena_memdup(&s->a, types, (n_in + n_out) * sizeof *types);
        d->n_inputs = n_in;
        d->n_outputs = n_out;
        if (!d->types) s->oom = true;
    }
    if ((region && !d->region) || !d->text) s->oom = true;
    if (!s->oom) s->n++;
}

static void report_v(diag_list *d, ctosa_diags *sink, ctosa_diag_kind kind, const ctosa_region *region,
                     int32_t op_index, ctosa_op_kind op, uint32_t n_in, uint32_t n_out,
                     const ctosa_dtype *types, const char *fmt, va_list ap) {
    strbuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    const char *line = b.s ? b.s : "";
    diag_add(d, CTOSA_ERR_INVALID, "%s", line);
    /* the same cap as the lines: the n-th item is the n-th line */
    if (sink && d->count <= d->max) {
        if (b.failed) sink->oom = true;
        else store(sink, kind, region, op_index, op, n_in, n_out, types, line);
    }
    sb_free(&b);
}

void spec_report(diag_list *d, ctosa_diags *sink, ctosa_diag_kind kind, const ctosa_region *region,
                 int32_t op_index, ctosa_op_kind op, uint32_t n_in, uint32_t n_out, const ctosa_dtype *types,
                 const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_v(d, sink, kind, region, op_index, op, n_in, n_out, types, fmt, ap);
    va_end(ap);
}

void spec_report_op(const spec_op_ctx *c, diag_list *d, ctosa_diag_kind kind, uint32_t n_in, uint32_t n_out,
                    const ctosa_dtype *types, const char *text) {
    spec_report(d, c->sink, kind, c->region, (int32_t)c->index, c->op->kind, n_in, n_out, types, "%s: %s",
                c->prefix ? c->prefix : "op", text);
}
