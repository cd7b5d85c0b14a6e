/* fuzz_report.c - `ctosa report`'s JSON -> HTML path (cli_report_html, the
 * entry point `ctosa report` and `ctosa lower --html` share) on arbitrary
 * bytes taken as a report file. cmd_report.c is compiled into this target
 * (it is part of the ctosa program, not of the library); the three CLI
 * helpers its argument parser calls are stubbed below and never reached.
 *
 * Invariants: a refused report writes no file; an accepted one writes a
 * page whose only '<' characters are the template's (every '<' of the JSON
 * is escaped, the title is HTML-escaped), so nothing in a report can end
 * the <script> element or inject markup. */
#include <sys/stat.h>
#include <unistd.h>

#include "../src/cli/cmd_report.c"
#include "fuzz_common.h"

int cli_fail(const char *cmd, ctosa_error *err) {
    (void)cmd;
    ctosa_error_free(err);
    return 2;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    (void)cmd;
    (void)fmt;
    return 2;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *flag, const char *alt, int *missing) {
    (void)argc, (void)argv, (void)i, (void)flag, (void)alt, (void)missing;
    return NULL;
}

static size_t count_lt(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += s[i] == '<';
    return c;
}

static size_t template_lt(void) {
    static size_t cached = (size_t)-1;
    if (cached != (size_t)-1) return cached;
    size_t c = 0;
    const char *const *parts[] = {REPORT_HTML_HEAD, REPORT_HTML_MID, REPORT_HTML_TAIL};
    for (int p = 0; p < 3; p++)
        for (const char *const *l = parts[p]; *l; l++) c += count_lt(*l, strlen(*l));
    return cached = c;
}

FUZZ_ENTRY(report) {
    const char *dir = fuzz_scratch_dir();
    if (!dir) return 0;
    char out[1024];
    snprintf(out, sizeof out, "%s/report.html", dir);
    unlink(out);
    ctosa_error *e = cli_report_html((const char *)data, size, "fuzz.json", out);
    struct stat st;
    if (e) {
        if (stat(out, &st) == 0) fuzz_fail("a refused report left an output file", e);
        fuzz_drop(e);
        return 0;
    }
    size_t n = 0;
    file_map m;
    e = file_map_open(out, &m);
    if (e) fuzz_fail("an accepted report wrote no readable page", e);
    n = (size_t)m.size;
    if (count_lt((const char *)m.data, n) != template_lt())
        fuzz_fail("report JSON or title put a '<' into the page", NULL);
    file_map_close(&m);
    unlink(out);
    return 0;
}
