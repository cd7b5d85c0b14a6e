/* error.c - ctosa_error objects and the capped multi-problem collector. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct ctosa_error {
    ctosa_code code;
    char *msg;
};

/* Returned when even the error cannot be allocated; never freed. */
static ctosa_error nomem_error = {CTOSA_ERR_NOMEM, (char *)"out of memory"};

ctosa_error *ctosa_error_nomem(void) { return &nomem_error; }

ctosa_error *ctosa_error_vnew(ctosa_code code, const char *fmt, va_list ap) {
    ctosa_error *e = malloc(sizeof *e);
    if (!e) return &nomem_error;
    strbuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    if (b.failed) {
        sb_free(&b);
        free(e);
        return &nomem_error;
    }
    e->code = code;
    e->msg = sb_take(&b);
    return e;
}

ctosa_error *ctosa_error_new(ctosa_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ctosa_error *e = ctosa_error_vnew(code, fmt, ap);
    va_end(ap);
    return e;
}

ctosa_code ctosa_error_code(const ctosa_error *err) { return err ? err->code : CTOSA_OK; }
const char *ctosa_error_message(const ctosa_error *err) { return err ? err->msg : ""; }

void ctosa_error_free(ctosa_error *err) {
    if (!err || err == &nomem_error) return;
    free(err->msg);
    free(err);
}

ctosa_error *ctosa_error_prefix(ctosa_error *err, const char *fmt, ...) {
    if (!err || err == &nomem_error) return err;
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    sb_puts(&b, ": ");
    sb_puts(&b, err->msg);
    if (b.failed) {
        sb_free(&b);
        return err;
    }
    free(err->msg);
    err->msg = sb_take(&b);
    return err;
}

int ctosa_error_exit_code(const ctosa_error *err) {
    if (!err) return 0;
    return err->code == CTOSA_ERR_INVALID ? 1 : 2;
}

void diag_init(diag_list *d, uint32_t max) {
    memset(d, 0, sizeof *d);
    d->max = max ? max : 100;
}

void diag_add(diag_list *d, ctosa_code code, const char *fmt, ...) {
    d->count++;
    if (d->code == CTOSA_OK) d->code = code;
    if (d->count > d->max) return;
    strbuf b = {d->text, d->len, d->cap, false};
    if (b.len) sb_putc(&b, '\n');
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    d->text = b.s;
    d->len = b.len;
    d->cap = b.cap;
}

ctosa_error *diag_finish(diag_list *d) {
    if (d->count == 0) return NULL;
    ctosa_error *e;
    if (d->count > d->max)
        e = ctosa_error_new(d->code, "%s\n... and %u more problem(s)", d->text ? d->text : "",
                            d->count - d->max);
    else e = ctosa_error_new(d->code, "%s", d->text ? d->text : "");
    diag_free(d);
    return e;
}

void diag_free(diag_list *d) {
    free(d->text);
    uint32_t max = d->max;
    memset(d, 0, sizeof *d);
    d->max = max;
}
