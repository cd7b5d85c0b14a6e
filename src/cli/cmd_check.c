/* cmd_check.c - `ctosa check MODEL.tosa --spec SPEC`: verify the flatbuffer
 * and validate the graph against a TOSA spec (or a named target).
 * Exit 0 conformant, 1 violations (one line each on stdout), 2 bad usage,
 * unreadable/malformed file or bad spec string. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f) {
    fprintf(f, "usage: ctosa check MODEL.tosa (--spec SPEC | --target NAME) [options]\n"
               "\n"
               "Verifies the TOSA flatbuffer (every offset bounds-checked) and validates every\n"
               "operator against SPEC: operator in the version, type signature allowed by the\n"
               "profiles and extensions, compile-time-constant arguments, level limits, shape\n"
               "rules and graph structure (tensors defined once before use, regions exist).\n"
               "\n"
               "options:\n"
               "  --spec SPEC          e.g. TOSA-1.0+INT, TOSA-1.0+FP+var+cf, TOSA-1.0+INT+int16+u55\n"
               "  --target NAME        a named target instead of --spec (e.g. ethos-u55-128)\n"
               "  --max-problems N     report at most N violations (default 100)\n"
               "  -q, --quiet          print nothing when the graph is conformant\n"
               "  -h, --help           this help\n"
               "\n"
               "exit status: 0 conformant; 1 violations found (one line each on stdout);\n"
               "2 bad usage, unreadable or malformed file, or bad spec string.\n");
}

static uint32_t count_ops(const ctosa_graph *g, uint32_t *n_regions) {
    uint32_t n = 0, nr = ctosa_graph_region_count(g);
    for (uint32_t i = 0; i < nr; i++) {
        const ctosa_region *r = ctosa_graph_region(g, i);
        for (uint32_t b = 0; b < r->n_blocks; b++) n += r->blocks[b]->n_ops;
    }
    *n_regions = nr;
    return n;
}

int cmd_check(int argc, char **argv) {
    const char *model = NULL, *spec_text = NULL, *target = NULL, *max_text = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            quiet = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--spec", NULL, &missing)) || missing) {
            if (missing) return cli_usage("check", "--spec needs a value");
            spec_text = v;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--target", NULL, &missing)) || missing) {
            if (missing) return cli_usage("check", "--target needs a value");
            target = v;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--max-problems", NULL, &missing)) || missing) {
            if (missing) return cli_usage("check", "--max-problems needs a value");
            max_text = v;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage("check", "unknown option '%s'", argv[i]);
        if (model)
            return cli_usage("check", "only one model file may be given ('%s' and '%s')", model, argv[i]);
        model = argv[i];
    }
    if (!model) return cli_usage("check", "no model file given");
    if (!spec_text && !target) return cli_usage("check", "--spec SPEC or --target NAME is required");
    if (spec_text && target) return cli_usage("check", "give either --spec or --target, not both");

    ctosa_validate_options vo = {0};
    if (max_text) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(max_text, &end, 10);
        if (errno || end == max_text || *end || n < 1 || n > 1000000 || max_text[0] == '-')
            return cli_usage("check", "--max-problems wants a number from 1 to 1000000, not '%s'", max_text);
        vo.max_problems = (uint32_t)n;
    }

    ctosa_spec spec;
    ctosa_error *err = spec_text ? ctosa_spec_parse(spec_text, &spec) : ctosa_spec_from_target(target, &spec);
    if (err) return cli_fail("check", err);
    char canon[160];
    ctosa_spec_format(&spec, canon, sizeof canon);

    ctosa_graph *g = NULL;
    if ((err = ctosa_read_file(model, NULL, &g))) return cli_fail("check", err);

    err = ctosa_validate(g, &spec, &vo);
    uint32_t n_regions, n_ops = count_ops(g, &n_regions);
    ctosa_graph_free(g);
    if (!err) {
        if (!quiet)
            printf("%s: OK, conforms to %s (%u operator%s in %u region%s)\n", model, canon, n_ops,
                   n_ops == 1 ? "" : "s", n_regions, n_regions == 1 ? "" : "s");
        return 0;
    }
    if (ctosa_error_code(err) != CTOSA_ERR_INVALID) return cli_fail("check", err);
    const char *msg = ctosa_error_message(err);
    uint32_t lines = 0;
    for (const char *p = msg; *p; p++) lines += *p == '\n';
    printf("%s\n", msg);
    fflush(stdout);
    fprintf(stderr, "ctosa check: %s: does not conform to %s (%u problem line%s)\n", model, canon, lines + 1,
            lines ? "s" : "");
    ctosa_error_free(err);
    return 1;
}
