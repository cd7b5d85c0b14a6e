/* cmd_report.c - `ctosa report REPORT.json [-o FILE.html]`: turns a lowering
 * report into one self-contained HTML page (graph coloured by partition /
 * fallback code, legend, partition summaries, search, node details), and
 * cli_report_html(), which `ctosa lower --html` uses too.
 *
 * The page (src/cli/report_html/: template, CSS, script) is embedded by
 * tools/gen_html_assets.py into report_html_gen.h; the report JSON goes in
 * verbatim inside <script type="application/json"> after a strict parse, so
 * a bad file is an error naming file:line:column and never half a page.
 * docs/report.md describes the page and the "graph" section it draws. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report_html/report_html_gen.h"
#include "util/json_parse.h"
#include "util/util.h"

static const char *CMD = "report";

#define REPORT_MAX_BYTES (1ull << 30)

static void help(void) {
    printf("usage: ctosa report REPORT.json [-o FILE.html] [-q]\n"
           "\n"
           "Writes the lowering report REPORT.json (from 'ctosa lower') as one\n"
           "self-contained HTML page: the model graph coloured by partition or\n"
           "fallback reason, a legend, per-partition summaries, a search box and\n"
           "node details. It loads nothing from the network. See docs/report.md.\n"
           "\n"
           "  -o, --output FILE.html   output (default: REPORT with .json replaced by .html)\n"
           "  -q, --quiet              do not print the output path\n"
           "  -h, --help               this help\n");
}

/* "NAME:LINE:COLUMN: what" for value v. */
static ctosa_error *bad(const char *name, const json_value *v, const char *what) {
    return ctosa_error_new(CTOSA_ERR_FORMAT, "%s:%u:%u: not a ctosa report: %s", name, v->line, v->col, what);
}

/* The keys the page relies on; more are allowed (the contract says so). */
static ctosa_error *check_report(const json_value *root, const char *name) {
    if (root->kind != JSON_OBJECT) return bad(name, root, "the top level is not an object");
    const json_value *parts = json_get(root, "partitions"), *fb = json_get(root, "fallback");
    if (!parts || parts->kind != JSON_ARRAY)
        return bad(name, parts ? parts : root, "no \"partitions\" array");
    if (!fb || fb->kind != JSON_ARRAY) return bad(name, fb ? fb : root, "no \"fallback\" array");
    for (uint32_t i = 0; i < parts->n; i++) {
        const json_value *p = &parts->items[i], *id = json_get(p, "id"), *nodes = json_get(p, "nodes");
        if (p->kind != JSON_OBJECT) return bad(name, p, "a partition is not an object");
        if (!id || id->kind != JSON_NUMBER) return bad(name, p, "a partition has no numeric \"id\"");
        if (!nodes || nodes->kind != JSON_ARRAY) return bad(name, p, "a partition has no \"nodes\" array");
    }
    for (uint32_t i = 0; i < fb->n; i++) {
        const json_value *f = &fb->items[i], *node = json_get(f, "node");
        if (f->kind != JSON_OBJECT) return bad(name, f, "a fallback entry is not an object");
        if (!node || node->kind != JSON_STRING)
            return bad(name, f, "a fallback entry has no \"node\" string");
    }
    const json_value *g = json_get(root, "graph");
    if (!g) return NULL; /* an older report: the page shows nodes without edges */
    const json_value *nodes = json_get(g, "nodes");
    if (g->kind != JSON_OBJECT || !nodes || nodes->kind != JSON_ARRAY)
        return bad(name, g, "\"graph\" is not an object with a \"nodes\" array");
    for (uint32_t i = 0; i < nodes->n; i++) {
        const json_value *n = &nodes->items[i], *nm = json_get(n, "name");
        if (n->kind != JSON_OBJECT || !nm || nm->kind != JSON_STRING)
            return bad(name, n, "a graph node is not an object with a \"name\" string");
    }
    return NULL;
}

static void put_lines(strbuf *b, const char *const *lines) {
    for (; *lines; lines++) sb_puts(b, *lines);
}

static void put_html_text(strbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '&') sb_puts(b, "&amp;");
        else if (c == '<') sb_puts(b, "&lt;");
        else if (c == '>') sb_puts(b, "&gt;");
        else if (c == '"') sb_puts(b, "&quot;");
        else if ((unsigned char)c < 0x20) sb_putc(b, ' ');
        else sb_putc(b, c);
    }
}

ctosa_error *cli_report_html(const char *json, size_t len, const char *name, const char *out_path) {
    arena a;
    arena_init(&a, 0);
    json_value *root = NULL;
    ctosa_error *e = json_parse(json, len, name, &a, &root);
    if (!e) e = check_report(root, name);
    if (e) {
        arena_free(&a);
        return e;
    }
    /* Title: the model's file name. */
    const json_value *model = json_get(root, "model");
    const char *title = model && model->kind == JSON_STRING ? model->str : "report";
    size_t title_len = model && model->kind == JSON_STRING ? model->len : strlen(title);
    const char *slash = memrchr(title, '/', title_len);
    if (slash && (size_t)(slash - title) + 1 < title_len) {
        title_len -= (size_t)(slash - title) + 1;
        title = slash + 1;
    }
    strbuf b;
    sb_init(&b);
    put_lines(&b, REPORT_HTML_HEAD);
    put_html_text(&b, title, title_len);
    put_lines(&b, REPORT_HTML_MID);
    /* The JSON as it is, except: no byte order mark (JSON.parse refuses
     * one) and every '<' as \u003c, so no "</script" or "<!--" can end the
     * element early. A '<' can only be inside a string in valid JSON, where
     * the escape means the same character. */
    size_t i = len >= 3 && memcmp(json, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (i < len) {
        const char *lt = memchr(json + i, '<', len - i);
        size_t n = lt ? (size_t)(lt - (json + i)) : len - i;
        sb_putn(&b, json + i, n);
        i += n;
        if (lt) {
            sb_puts(&b, "\\u003c");
            i++;
        }
    }
    put_lines(&b, REPORT_HTML_TAIL);
    arena_free(&a);
    if (b.failed) {
        sb_free(&b);
        return ctosa_error_nomem();
    }
    e = write_whole_file(out_path, b.s, b.len);
    sb_free(&b);
    return e;
}

/* REPORT.json -> REPORT.html; anything else -> NAME.html. */
static char *default_output(const char *in) {
    size_t n = strlen(in);
    size_t keep = n > 5 && strcmp(in + n - 5, ".json") == 0 ? n - 5 : n;
    char *o = malloc(keep + 6);
    if (!o) return NULL;
    memcpy(o, in, keep);
    memcpy(o + keep, ".html", 6);
    return o;
}

int cmd_report(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return 0;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "-o", "--output", &missing))) {
            out = v;
            continue;
        }
        if (missing) return cli_usage(CMD, "%s needs a value", a);
        if (a[0] == '-' && a[1]) return cli_usage(CMD, "unknown option '%s'", a);
        if (in) return cli_usage(CMD, "more than one report given ('%s' and '%s')", in, a);
        in = a;
    }
    if (!in) return cli_usage(CMD, "no report given");
    char *def = out ? NULL : default_output(in);
    if (!out && !def) return cli_fail(CMD, ctosa_error_nomem());
    const char *path = out ? out : def;
    char a_real[PATH_MAX], b_real[PATH_MAX];
    if (realpath(in, a_real) && realpath(path, b_real) && strcmp(a_real, b_real) == 0) {
        ctosa_error *oe =
            ctosa_error_new(CTOSA_ERR_USAGE, "output %s would overwrite the input report", path);
        free(def);
        return cli_fail(CMD, oe);
    }
    file_map m;
    ctosa_error *e = file_map_open(in, &m);
    if (!e && m.size > REPORT_MAX_BYTES) {
        file_map_close(&m);
        e = ctosa_error_new(CTOSA_ERR_LIMIT, "%s: %llu bytes is more than the %llu a report may have", in,
                            (unsigned long long)m.size, (unsigned long long)REPORT_MAX_BYTES);
    } else if (!e) {
        e = cli_report_html((const char *)m.data, (size_t)m.size, in, path);
        file_map_close(&m);
    }
    if (e) {
        free(def);
        return cli_fail(CMD, e);
    }
    if (!quiet) printf("%s\n", path);
    free(def);
    return 0;
}
