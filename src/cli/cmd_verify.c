/* cmd_verify.c - `ctosa verify MODEL.onnx --spec SPEC --input NAME=FILE...
 * --expect NAME=FILE... [-o DIR] [--json FILE] [tolerances]`: lowers the
 * model, runs the partitioned model end to end (ctosa/runtime.h) and
 * compares each output with the expected array (ctosa_verify_compare):
 * prints a table, writes a JSON summary, exits 1 when a tolerance is
 * exceeded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctosa/lower.h"
#include "ctosa/runtime.h"
#include "util/util.h"

static const char *CMD = "verify";

static void help(void) {
    printf("usage: ctosa verify MODEL.onnx (--spec SPEC | --target NAME) --input NAME=FILE...\n"
           "                    --expect NAME=FILE... [options]\n"
           "\n"
           "Lowers the model, runs the partitioned model (partitions on the interpreter,\n"
           "CPU nodes on the host executor) and compares each output with the expected\n"
           "array. Exit 0 when every compared output is within tolerance, 1 when one is\n"
           "not, 2 on bad usage or input.\n"
           "\n"
           "  --input NAME=FILE     model input (.npy or TensorProto .pb), repeatable\n"
           "  --expect NAME=FILE    expected value of model output NAME, repeatable\n"
           "  -o, --output-dir DIR  where the lowered files go (default ./output)\n"
           "  --json FILE           comparison summary (default DIR/<stem>.verify.json)\n"
           "  --rtol X              float outputs: max |error| / max |expected| (default 1e-4)\n"
           "  --max-steps N         quantized outputs: steps of the quantization scale\n"
           "                        (default 3)...\n"
           "  --step-fraction F     ...that this fraction of elements must be within\n"
           "                        (default 0.99)\n"
           "  --top-k K             classifier-shaped outputs [N, C]: k (default 5)\n"
           "  --min-topk F          fraction of rows whose expected top-1 class must be\n"
           "                        in the actual top-k (default 1)\n"
           "  --plugin LIB.so       custom-operator plugin (repeatable)\n"
           "  --threads N           interpreter worker threads\n"
           "  -q, --quiet           print only failures\n");
}

static bool parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (v != v || v > 1e308 || v < -1e308) fputs("null", f); /* NaN / inf are not JSON */
    else fprintf(f, "%.9g", v);
}

/* The summary, written to a temporary file and renamed. */
static ctosa_error *write_json(const char *path, const char *model, const char *spec,
                               const ctosa_verify_options *vo, const ctosa_verify_output *res, uint32_t n,
                               bool pass) {
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) return ctosa_error_nomem();
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ctosa_error *e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return e;
    }
    fputs("{\n  \"tool\": \"ctosa\",\n  \"model\": ", f);
    json_str(f, model);
    fputs(",\n  \"spec\": ", f);
    json_str(f, spec);
    fputs(",\n  \"tolerances\": {\"rtol\": ", f);
    json_num(f, vo->rtol);
    fputs(", \"max_steps\": ", f);
    json_num(f, vo->max_steps);
    fputs(", \"step_fraction\": ", f);
    json_num(f, vo->step_fraction);
    fprintf(f, ", \"top_k\": %u, \"min_topk\": ", vo->top_k);
    json_num(f, vo->min_topk);
    fprintf(f, "},\n  \"pass\": %s,\n  \"outputs\": [", pass ? "true" : "false");
    for (uint32_t i = 0; i < n; i++) {
        const ctosa_verify_output *r = &res[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        json_str(f, r->name);
        fputs(", \"kind\": ", f);
        json_str(f, r->kind ? r->kind : "");
        fprintf(f, ", \"count\": %llu, \"max_abs\": ", (unsigned long long)r->count);
        json_num(f, r->max_abs);
        if (r->kind && strcmp(r->kind, "float") == 0) {
            fputs(", \"rel\": ", f);
            json_num(f, r->rel);
        }
        fputs(", \"within\": ", f);
        json_num(f, r->within);
        if (r->top1 >= 0) fprintf(f, ", \"rows\": %u, \"top1\": %d, \"topk\": %d", r->rows, r->top1, r->topk);
        fprintf(f, ", \"pass\": %s", r->pass ? "true" : "false");
        if (!r->pass) {
            fputs(", \"why\": ", f);
            json_str(f, r->why);
        }
        fputc('}', f);
    }
    fputs(n ? "\n  ]\n}\n" : "]\n}\n", f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    ctosa_error *e = NULL;
    if (!ok || rename(tmp, path) != 0) {
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return e;
}

int cmd_verify(int argc, char **argv) {
    const char *model = NULL, *spec_s = NULL, *target = NULL, *dir = "output", *json = NULL;
    cli_binding *ins = calloc((size_t)argc + 1, sizeof *ins), *exps = calloc((size_t)argc + 1, sizeof *exps);
    int n_ins = 0, n_exps = 0, rc = 0, threads = 0;
    bool quiet = false;
    ctosa_verify_options vo;
    ctosa_verify_options_init(&vo);
    ctosa_custom_registry *reg = NULL;
    ctosa_lower_result *lr = NULL;
    ctosa_runtime *rt = NULL;
    ctosa_verify_output *res = NULL;
    char *stem = NULL, *pmodel = NULL, *json_owned = NULL;
    ctosa_error *e = NULL;
    if (!ins || !exps) {
        rc = cli_fail(CMD, ctosa_error_nomem());
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        double d;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help();
            goto done;
        }
#define FLAG(f, alt) (!missing && (v = cli_flag_value(argc, argv, &i, f, alt, &missing)))
        if (FLAG("--spec", NULL)) {
            spec_s = v;
        } else if (FLAG("--target", NULL)) {
            target = v;
        } else if (FLAG("--input", NULL)) {
            if (!cli_split_binding(v, &ins[n_ins])) {
                rc = cli_usage(CMD, "--input expects NAME=FILE, got '%s'", v);
                goto done;
            }
            n_ins++;
        } else if (FLAG("--expect", NULL)) {
            if (!cli_split_binding(v, &exps[n_exps])) {
                rc = cli_usage(CMD, "--expect expects NAME=FILE, got '%s'", v);
                goto done;
            }
            n_exps++;
        } else if (FLAG("-o", "--output-dir")) {
            dir = v;
        } else if (FLAG("--json", NULL)) {
            json = v;
        } else if (FLAG("--rtol", NULL)) {
            if (!parse_num(v, 0, 1e300, &vo.rtol)) {
                rc = cli_usage(CMD, "--rtol expects a number >= 0, got '%s'", v);
                goto done;
            }
        } else if (FLAG("--max-steps", NULL)) {
            if (!parse_num(v, 0, 1e300, &vo.max_steps)) {
                rc = cli_usage(CMD, "--max-steps expects a number >= 0, got '%s'", v);
                goto done;
            }
        } else if (FLAG("--step-fraction", NULL)) {
            if (!parse_num(v, 0, 1, &vo.step_fraction)) {
                rc = cli_usage(CMD, "--step-fraction expects a number from 0 to 1, got '%s'", v);
                goto done;
            }
        } else if (FLAG("--min-topk", NULL)) {
            if (!parse_num(v, 0, 1, &vo.min_topk)) {
                rc = cli_usage(CMD, "--min-topk expects a number from 0 to 1, got '%s'", v);
                goto done;
            }
        } else if (FLAG("--top-k", NULL)) {
            if (!parse_num(v, 1, 1e6, &d) || d != (double)(uint32_t)d) {
                rc = cli_usage(CMD, "--top-k expects a whole number >= 1, got '%s'", v);
                goto done;
            }
            vo.top_k = (uint32_t)d;
        } else if (FLAG("--threads", NULL)) {
            if (!parse_num(v, 1, 1024, &d) || d != (double)(int)d) {
                rc = cli_usage(CMD, "--threads expects a number from 1 to 1024, got '%s'", v);
                goto done;
            }
            threads = (int)d;
        } else if (FLAG("--plugin", NULL)) {
            e = reg ? NULL : ctosa_custom_registry_create(&reg);
            if (!e) e = ctosa_custom_registry_load_plugin(reg, v);
            if (e) {
                rc = cli_fail(CMD, ctosa_error_prefix(e, "--plugin"));
                goto done;
            }
        } else if (!missing && (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0)) {
            quiet = true;
        } else if ((rc = cli_model_arg(CMD, "MODEL.onnx", argv[i], missing, &model))) {
            goto done;
        }
#undef FLAG
    }
    if (!model) {
        rc = cli_usage(CMD, "no MODEL.onnx given");
        goto done;
    }
    ctosa_spec spec;
    if ((rc = cli_spec_arg(CMD, spec_s, target, true, &spec))) goto done;
    if (!n_exps) {
        rc = cli_usage(CMD, "nothing to compare: give --expect NAME=FILE for at least one output");
        goto done;
    }
    char spec_text[256];
    ctosa_spec_format(&spec, spec_text, sizeof spec_text);
    /* stem: the model's file name without .onnx, as `ctosa lower` names it */
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    size_t bl = strlen(base);
    if (bl > 5 && strcmp(base + bl - 5, ".onnx") == 0) bl -= 5;
    stem = bl ? strndup(base, bl) : strdup("model");
    size_t pl = strlen(dir) + (stem ? strlen(stem) : 0) + 32;
    pmodel = malloc(pl);
    json_owned = malloc(pl);
    if (!stem || !pmodel || !json_owned) {
        rc = cli_fail(CMD, ctosa_error_nomem());
        goto done;
    }
    snprintf(pmodel, pl, "%s/%s.partitioned.onnx", dir, stem);
    snprintf(json_owned, pl, "%s/%s.verify.json", dir, stem);
    if (!json) json = json_owned;
    ctosa_lower_options lo;
    ctosa_lower_options_init(&lo);
    lo.output_dir = dir;
    lo.stem = stem;
    lo.custom_ops = reg;
    if ((e = ctosa_lower_file(model, &spec, &lo, &lr))) {
        rc = cli_fail(CMD, e);
        goto done;
    }
    const ctosa_lower_summary *s = ctosa_lower_result_summary(lr);
    ctosa_runtime_options ro;
    ctosa_runtime_options_init(&ro);
    ro.custom_ops = reg;
    ro.threads = threads;
    if ((e = ctosa_runtime_load(pmodel, &ro, &rt))) {
        rc = cli_fail(CMD, e);
        goto done;
    }
    for (int k = 0; k < n_ins; k++) {
        ctosa_tensor_file t;
        if ((e = ctosa_tensor_file_read(ins[k].file, &t))) {
            rc = cli_fail(CMD, ctosa_error_prefix(e, "input '%s'", ins[k].name));
            goto done;
        }
        e = ctosa_runtime_set_input_file(rt, ins[k].name, &t, ins[k].file);
        ctosa_tensor_file_free(&t);
        if (e) {
            rc = cli_fail(CMD, e);
            goto done;
        }
    }
    if ((e = ctosa_runtime_run(rt))) {
        rc = cli_fail(CMD, e);
        goto done;
    }
    res = calloc((size_t)n_exps + 1, sizeof *res);
    if (!res) {
        rc = cli_fail(CMD, ctosa_error_nomem());
        goto done;
    }
    bool pass = true;
    for (int k = 0; k < n_exps; k++) {
        ctosa_runtime_tensor out;
        ctosa_tensor_file t;
        if ((e = ctosa_runtime_get_output(rt, exps[k].name, &out))) {
            rc = cli_fail(CMD, ctosa_error_prefix(e, "--expect %s", exps[k].name));
            goto done;
        }
        if ((e = ctosa_tensor_file_read(exps[k].file, &t))) {
            rc = cli_fail(CMD, ctosa_error_prefix(e, "expected '%s'", exps[k].name));
            goto done;
        }
        e = ctosa_verify_compare(&out, &t, &vo, &res[k]);
        ctosa_tensor_file_free(&t);
        if (e) {
            rc = cli_fail(CMD, ctosa_error_prefix(e, "%s", exps[k].file));
            goto done;
        }
        pass &= res[k].pass;
    }
    if (!quiet || !pass) {
        uint32_t np = 0, nh = 0;
        for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++) {
            if (ctosa_runtime_step_at(rt, i)->partition) np++;
            else nh++;
        }
        printf("%s: %u of %u nodes delegated to %s; ran %u partition%s and %u CPU node%s\n", model,
               s->nodes_delegated, s->nodes_total, s->spec, np, np == 1 ? "" : "s", nh, nh == 1 ? "" : "s");
        printf("  %-24s %-9s %10s %12s %10s %9s  %s\n", "output", "kind", "elements", "max error",
               "rel/within", "top-1/k", "result");
        for (int k = 0; k < n_exps; k++) {
            const ctosa_verify_output *r = &res[k];
            char err[32], rel[32], top[32];
            bool fl = strcmp(r->kind, "float") == 0, q = strcmp(r->kind, "quantized") == 0;
            snprintf(err, sizeof err, q ? "%.3g steps" : "%.3g", r->max_abs);
            if (fl) snprintf(rel, sizeof rel, "%.3g", r->rel);
            else snprintf(rel, sizeof rel, "%.2f%%", 100 * r->within);
            if (r->top1 >= 0) snprintf(top, sizeof top, "%d/%d", r->top1, r->topk);
            else snprintf(top, sizeof top, "-");
            printf("  %-24s %-9s %10llu %12s %10s %9s  %s%s%s\n", r->name, r->kind,
                   (unsigned long long)r->count, err, rel, top, r->pass ? "ok" : "FAIL", r->pass ? "" : ": ",
                   r->pass ? "" : r->why);
        }
    }
    if ((e = write_json(json, model, spec_text, &vo, res, (uint32_t)n_exps, pass))) {
        rc = cli_fail(CMD, e);
        goto done;
    }
    if (!quiet) printf("summary written to %s\n", json);
    rc = pass ? 0 : 1;
done:
    for (int k = 0; ins && k < n_ins; k++) free(ins[k].name);
    for (int k = 0; exps && k < n_exps; k++) free(exps[k].name);
    free(ins);
    free(exps);
    free(res);
    free(stem);
    free(pmodel);
    free(json_owned);
    ctosa_runtime_free(rt);
    ctosa_lower_result_free(lr);
    ctosa_custom_registry_free(reg);
    return rc;
}
