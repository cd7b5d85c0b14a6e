/* cmd_lower.c - `ctosa lower MODEL.onnx --spec SPEC|--target NAME [-o DIR]
 * [--bind NAME=FILE]... [--shape NAME=D0xD1x...]... [--strict]
 * [--report-json FILE] [--html[=FILE]] [--max-memory SIZE] [--plugin LIB.so]... [--custom-ops FILE.json]... [-q]`: partitions an ONNX model against a TOSA spec,
 * writes one .tosa per partition, <stem>.partitioned.onnx and
 * <stem>.report.json, and prints a summary. Exit 0 (fallbacks are fine),
 * 1 with --strict when anything fell back, 2 for bad usage or input. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctosa/custom.h"
#include "util/util.h"

static const char *CMD = "lower";

static void help(void) {
    printf("usage: ctosa lower MODEL.onnx (--spec SPEC | --target NAME) [options]\n"
           "\n"
           "Partitions an ONNX model against a TOSA specification, lowers every\n"
           "delegated partition to TOSA and writes into the output directory:\n"
           "  <stem>.part<N>.tosa        one TOSA flatbuffer per partition\n"
           "  <stem>.partitioned.onnx    the model with each partition replaced by a\n"
           "                             com.microsoft EPContext node naming its .tosa\n"
           "  <stem>.report.json         what went where, and why\n"
           "\n"
           "  --spec SPEC               e.g. TOSA-1.0+FP, TOSA-1.0+INT+int16, TOSA-1.1+INT+int64\n"
           "  --target NAME             a named target instead of --spec\n"
           "  -o, --output-dir DIR      output directory (default ./output, created if missing)\n"
           "  --bind NAME=FILE          freeze graph input NAME to a .npy / TensorProto .pb file\n"
           "  --shape NAME=D0xD1x...    static shape for a graph input with symbolic dimensions\n"
           "  --stem NAME               output file name stem (default: the model's name)\n"
           "  --strict                  exit 1 if any node falls back to the CPU\n"
           "  --emit mlir               also write <stem>.part<N>.mlir beside each .tosa: the\n"
           "                            partition as upstream MLIR tosa dialect (docs/mlir.md)\n"
           "  --report-json FILE        also write the report to FILE\n"
           "  --html[=FILE]             also write the report as a self-contained HTML page,\n"
           "                            by default <stem>.report.html (docs/report.md)\n"
           "  --plugin LIB.so           load a custom-operator plugin (repeatable)\n"
           "  --custom-ops FILE.json    declare pass-through custom operators (docs/custom-ops.md)\n"
           "  --max-memory SIZE         cap on what lowering allocates, bytes or with a K, M or\n"
           "                            G suffix (default 8G; weights stay mapped and do not count)\n"
           "  --requant rescale|ort     int8 Conv/Add requantization: one RESCALE per output\n"
           "                            (default, what an NPU runs) or ONNX Runtime's float32\n"
           "                            rounding emulated with extra int32 ops (verification\n"
           "                            against ORT; not for deployment; ignored under u55)\n"
           "  -q, --quiet               print no summary\n"
           "\n"
           "Reason codes in the report and summary: see docs/errors.md.\n");
}

static bool split_eq(const char *arg, const char **name, const char **val) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return false;
    char *n = strndup(arg, (size_t)(eq - arg));
    if (!n) return false;
    *name = n;
    *val = eq + 1;
    return true;
}

static bool parse_dims(const char *s, uint32_t *rank, int64_t *dims, uint32_t max) {
    *rank = 0;
    if (!*s) return false;
    if (strcmp(s, "scalar") == 0) return true;
    const char *p = s;
    for (;;) {
        if (*rank >= max) return false;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0) return false;
        dims[(*rank)++] = v;
        if (*end == 0) return true;
        if (*end != 'x' && *end != 'X' && *end != ',') return false;
        p = end + 1;
    }
}

/* Summary: delegated/total, partitions, fallback operators grouped by
 * (code, op_type) with counts and one example reason. */
static void print_summary(const ctosa_lower_summary *s, const char *dir) {
    double pct = s->nodes_total ? 100.0 * s->nodes_delegated / s->nodes_total : 100.0;
    printf("%s: %u of %u nodes delegated (%.1f%%) to %s in %u partition%s\n", s->model, s->nodes_delegated,
           s->nodes_total, pct, s->spec, s->n_partitions, s->n_partitions == 1 ? "" : "s");
    for (uint32_t i = 0; i < s->n_partitions; i++) {
        const ctosa_lower_partition *p = &s->partitions[i];
        uint32_t ops = 0;
        for (uint32_t k = 0; k < p->n_op_counts; k++) ops += p->op_counts[k];
        printf("  %s/%s: %u node%s, %u TOSA operator%s, %u input%s, %u output%s\n", dir, p->file, p->n_nodes,
               p->n_nodes == 1 ? "" : "s", ops, ops == 1 ? "" : "s", p->n_inputs, p->n_inputs == 1 ? "" : "s",
               p->n_outputs, p->n_outputs == 1 ? "" : "s");
    }
    for (uint32_t i = 0; i < s->n_custom; i++) {
        const ctosa_lower_custom *c = &s->custom[i];
        printf("  custom: %s (%s%s%s) -> CUSTOM %s::%s in partition %u%s\n", c->node, c->domain,
               c->domain[0] ? "::" : "", c->op_type, c->domain_name, c->operator_name, c->partition,
               c->overrides_builtin ? " (plugin lowering overrides the built-in one)" : "");
    }
    if (!s->n_fallback) return;
    printf("fallback to CPU (%u node%s):\n", s->n_fallback, s->n_fallback == 1 ? "" : "s");
    printf("  %-22s %-24s %5s  %s\n", "code", "operator", "nodes", "reason (first)");
    bool *done = calloc(s->n_fallback + 1, 1);
    if (!done) return;
    for (uint32_t i = 0; i < s->n_fallback; i++) {
        if (done[i]) continue;
        const ctosa_lower_fallback *f = &s->fallback[i];
        uint32_t n = 0;
        for (uint32_t k = i; k < s->n_fallback; k++) {
            const ctosa_lower_fallback *g = &s->fallback[k];
            if (!done[k] && strcmp(g->code, f->code) == 0 && strcmp(g->op_type, f->op_type) == 0 &&
                strcmp(g->domain, f->domain) == 0) {
                done[k] = true;
                n++;
            }
        }
        char op[128];
        snprintf(op, sizeof op, "%s%s%s", f->domain, f->domain[0] ? "::" : "", f->op_type);
        printf("  %-22s %-24s %5u  %s: %s\n", f->code, op, n, f->node, f->reason);
    }
    free(done);
}

/* --emit mlir: <dir>/<stem>.part<N>.mlir beside each partition's .tosa. */
static ctosa_error *write_mlir(const ctosa_lower_summary *s, const char *dir) {
    for (uint32_t i = 0; i < s->n_partitions; i++) {
        const ctosa_lower_partition *p = &s->partitions[i];
        size_t n = strlen(p->file);
        if (n > 5 && strcmp(p->file + n - 5, ".tosa") == 0) n -= 5;
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%.*s.mlir", dir, (int)n, p->file) >= sizeof path)
            return ctosa_error_new(CTOSA_ERR_USAGE, "%s/%s: path too long", dir, p->file);
        ctosa_mlir_options o;
        ctosa_mlir_options_init(&o);
        o.source_name = p->file;
        ctosa_error *e = ctosa_mlir_write_file(p->graph, path, &o);
        if (e) return e;
    }
    return NULL;
}

/* --html: the report as a page, at FILE or <dir>/<stem>.report.html (the
 * stem as ctosa_lower_file chooses it: --stem, else the model's name). */
static ctosa_error *write_html(const ctosa_lower_summary *s, const char *file, const char *dir,
                               const char *stem, const char *model, bool quiet) {
    char *path = NULL;
    if (!file) {
        const char *base = strrchr(model, '/');
        base = base ? base + 1 : model;
        int n = (int)strlen(base);
        if (stem && stem[0]) base = stem, n = (int)strlen(stem);
        else if (n > 5 && strcmp(base + n - 5, ".onnx") == 0) n -= 5;
        if (n == 0) base = "model", n = 5;
        if (asprintf(&path, "%s/%.*s.report.html", dir, n, base) < 0) return ctosa_error_nomem();
    }
    const char *o = file ? file : path;
    char m_real[PATH_MAX], o_real[PATH_MAX];
    ctosa_error *e = NULL;
    if (realpath(model, m_real) && realpath(o, o_real) && strcmp(m_real, o_real) == 0)
        e = ctosa_error_new(CTOSA_ERR_USAGE, "%s would overwrite the input model", o);
    else e = cli_report_html(s->report_json, strlen(s->report_json), "report", o);
    if (!e && !quiet) printf("HTML report: %s\n", o);
    free(path);
    return e;
}

/* The lowering's debugging aids come from the environment here, in the CLI
 * only (the library reads no environment; docs/cli.md lists them):
 * CTOSA_LOWER_DEBUG=1 (explanations on stderr), CTOSA_LOWER_NO_LAYOUT=1,
 * CTOSA_STREAM_TRANSFORM_MIN=<bytes>. */
static void env_debug_options(ctosa_lower_options *opt) {
    const char *v = getenv("CTOSA_LOWER_DEBUG");
    if (v && *v && strcmp(v, "0") != 0) opt->debug_log = stderr;
    v = getenv("CTOSA_LOWER_NO_LAYOUT");
    opt->no_layout = v && *v && strcmp(v, "0") != 0;
    v = getenv("CTOSA_STREAM_TRANSFORM_MIN");
    char *end = NULL;
    unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
    if (end && !*end) opt->stream_transform_min = x;
}

int cmd_lower(int argc, char **argv) {
    const char *model = NULL, *spec_s = NULL, *target = NULL, *dir = "output", *report = NULL, *stem = NULL;
    bool strict = false, quiet = false, want_html = false, emit_mlir = false;
    const char *html = NULL; /* --html=FILE */
    uint64_t max_memory = 0; /* 0 = CTOSA_LOWER_DEFAULT_MAX_MEMORY */
    int requant = CTOSA_REQUANT_RESCALE;
    int rc = 2;
    ctosa_lower_bind *binds = calloc((size_t)argc + 1, sizeof *binds);
    ctosa_lower_shape *shapes = calloc((size_t)argc + 1, sizeof *shapes);
    int64_t(*dims)[16] = calloc((size_t)argc + 1, sizeof *dims);
    uint32_t n_binds = 0, n_shapes = 0;
    ctosa_lower_result *res = NULL;
    ctosa_custom_registry *reg = NULL;
    if (!binds || !shapes || !dims) {
        rc = cli_fail(CMD, ctosa_error_nomem());
        goto out;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            rc = 0;
            goto out;
        }
        if (strcmp(a, "--strict") == 0) {
            strict = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--emit", NULL, &missing))) {
            if (strcmp(v, "mlir") != 0) {
                rc = cli_usage(CMD, "--emit expects 'mlir', got '%s'", v);
                goto out;
            }
            emit_mlir = true;
            continue;
        }
        if (strcmp(a, "--html") == 0) {
            want_html = true;
            continue;
        }
        if (strncmp(a, "--html=", 7) == 0) {
            if (!a[7]) {
                rc = cli_usage(CMD, "--html= needs a file name");
                goto out;
            }
            want_html = true;
            html = a + 7;
            continue;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--spec", NULL, &missing))) {
            spec_s = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--target", NULL, &missing))) {
            target = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "-o", "--output-dir", &missing))) {
            dir = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--report-json", NULL, &missing))) {
            report = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--stem", NULL, &missing))) {
            stem = v;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--requant", NULL, &missing))) {
            if (strcmp(v, "rescale") == 0) requant = CTOSA_REQUANT_RESCALE;
            else if (strcmp(v, "ort") == 0) requant = CTOSA_REQUANT_MATCH_ORT;
            else {
                rc = cli_usage(CMD, "--requant expects 'rescale' or 'ort', got '%s'", v);
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--max-memory", NULL, &missing))) {
            if (!cli_parse_size(v, &max_memory) || max_memory == 0) {
                rc = cli_usage(CMD, "--max-memory expects a byte count such as 512M, got '%s'", v);
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--plugin", NULL, &missing))) {
            ctosa_error *pe = reg ? NULL : ctosa_custom_registry_create(&reg);
            if (!pe) pe = ctosa_custom_registry_load_plugin(reg, v);
            if (pe) {
                rc = cli_fail(CMD, ctosa_error_prefix(pe, "--plugin"));
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--custom-ops", NULL, &missing))) {
            ctosa_error *pe = reg ? NULL : ctosa_custom_registry_create(&reg);
            if (!pe) pe = ctosa_custom_registry_load_json(reg, v);
            if (pe) {
                rc = cli_fail(CMD, ctosa_error_prefix(pe, "--custom-ops"));
                goto out;
            }
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--bind", NULL, &missing))) {
            if (!split_eq(v, &binds[n_binds].name, &binds[n_binds].file)) {
                rc = cli_usage(CMD, "--bind expects NAME=FILE, got '%s'", v);
                goto out;
            }
            n_binds++;
            continue;
        }
        if (!missing && (v = cli_flag_value(argc, argv, &i, "--shape", NULL, &missing))) {
            const char *nm, *ds;
            if (!split_eq(v, &nm, &ds)) {
                rc = cli_usage(CMD, "--shape expects NAME=D0xD1x..., got '%s'", v);
                goto out;
            }
            shapes[n_shapes].name = nm;
            if (!parse_dims(ds, &shapes[n_shapes].rank, dims[n_shapes], 16)) {
                n_shapes++;
                rc = cli_usage(CMD, "--shape %s: '%s' is not a list of dimensions like 1x3x224x224", nm, ds);
                goto out;
            }
            shapes[n_shapes].dims = dims[n_shapes];
            n_shapes++;
            continue;
        }
        if ((rc = cli_model_arg(CMD, "model", a, missing, &model))) goto out;
        rc = 2;
    }
    if (!model) {
        rc = cli_usage(CMD, "no model given");
        goto out;
    }
    ctosa_spec spec;
    if ((rc = cli_spec_arg(CMD, spec_s, target, true, &spec))) goto out;
    rc = 2;
    ctosa_error *e = NULL;
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    opt.stem = stem;
    opt.binds = binds;
    opt.n_binds = n_binds;
    opt.shapes = shapes;
    opt.n_shapes = n_shapes;
    opt.custom_ops = reg;
    opt.max_memory = max_memory;
    opt.requant = requant;
    env_debug_options(&opt);
    for (int k = 0; k < 2; k++) {
        const char *o = k ? html : report;
        char a_real[PATH_MAX], b_real[PATH_MAX];
        if (!o) continue;
        if (realpath(model, a_real) && realpath(o, b_real) && strcmp(a_real, b_real) == 0) {
            rc = cli_fail(CMD, ctosa_error_new(CTOSA_ERR_USAGE, "%s %s would overwrite the input model",
                                               k ? "--html" : "--report-json", o));
            goto out;
        }
    }
    if ((e = ctosa_lower_file(model, &spec, &opt, &res))) {
        rc = cli_fail(CMD, e);
        goto out;
    }
    const ctosa_lower_summary *s = ctosa_lower_result_summary(res);
    if (report && (e = write_whole_file(report, s->report_json, strlen(s->report_json)))) {
        rc = cli_fail(CMD, e);
        goto out;
    }
    if (emit_mlir && (e = write_mlir(s, dir))) {
        rc = cli_fail(CMD, e);
        goto out;
    }
    if (!quiet) print_summary(s, dir);
    if (want_html && (e = write_html(s, html, dir, stem, model, quiet))) {
        rc = cli_fail(CMD, e);
        goto out;
    }
    rc = strict && s->n_fallback ? 1 : 0;
    if (rc == 1 && !quiet)
        printf("--strict: %u node%s fell back to the CPU\n", s->n_fallback, s->n_fallback == 1 ? "" : "s");
out:
    ctosa_lower_result_free(res);
    ctosa_custom_registry_free(reg);
    for (uint32_t i = 0; binds && i < n_binds; i++) free((char *)binds[i].name);
    for (uint32_t i = 0; shapes && i < n_shapes; i++) free((char *)shapes[i].name);
    free(binds);
    free(shapes);
    free(dims);
    return rc;
}
