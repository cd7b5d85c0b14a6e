/* main.c - `ctosa <command>` dispatcher. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"lower", cmd_lower, "partition an ONNX model against a TOSA spec and lower it"},
    {"run", cmd_run, "run a .tosa graph, or a whole partitioned model"},
    {"quantize", cmd_quantize, "post-training quantization of a float model for a TOSA INT target"},
    {"verify", cmd_verify, "lower a model, run it end to end and compare its outputs"},
    {"check", cmd_check, "verify a .tosa file and validate it against a spec"},
    {"dump", cmd_dump, "print a .tosa graph (text, json or Graphviz dot)"},
    {"info", cmd_info, "summarise a .tosa file: version, sizes, operator counts, layout"},
    {"spec", cmd_spec, "parse a spec string and print what it allows"},
    {"report", cmd_report, "write a lowering report as a self-contained HTML page"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: ctosa <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'ctosa <command> --help' describes a command's options.\n");
}

int cli_fail(const char *cmd, ctosa_error *err) {
    int code = ctosa_error_exit_code(err);
    fprintf(stderr, "ctosa %s: %s\n", cmd, ctosa_error_message(err));
    ctosa_error_free(err);
    return code;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ctosa %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'ctosa %s --help')\n", cmd);
    va_end(ap);
    return 2;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *flag, const char *alt, int *missing) {
    const char *a = argv[*i];
    *missing = 0;
    const char *names[2] = {flag, alt};
    for (int k = 0; k < 2; k++) {
        const char *f = names[k];
        if (!f) continue;
        size_t n = strlen(f);
        if (strncmp(a, f, n) != 0) continue;
        if (a[n] == '=') return a + n + 1;
        if (a[n] != 0) continue;
        if (*i + 1 >= argc) {
            *missing = 1;
            return NULL;
        }
        return argv[++*i];
    }
    return NULL;
}

bool cli_split_binding(const char *arg, cli_binding *b) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return false;
    b->name = strndup(arg, (size_t)(eq - arg));
    b->file = eq + 1;
    return b->name != NULL;
}

int cli_model_arg(const char *cmd, const char *what, const char *arg, int missing, const char **model) {
    if (missing) return cli_usage(cmd, "%s needs a value", arg);
    if (arg[0] == '-' && arg[1]) return cli_usage(cmd, "unknown option '%s'", arg);
    if (*model) return cli_usage(cmd, "more than one %s given ('%s' and '%s')", what, *model, arg);
    *model = arg;
    return 0;
}

int cli_spec_arg(const char *cmd, const char *spec, const char *target, bool required, ctosa_spec *out) {
    if (spec && target) return cli_usage(cmd, "give --spec or --target, not both");
    if (!spec && !target) return required ? cli_usage(cmd, "--spec SPEC (or --target NAME) is required") : 0;
    ctosa_error *e = !out ? NULL : spec ? ctosa_spec_parse(spec, out) : ctosa_spec_from_target(target, out);
    return e ? cli_fail(cmd, e) : 0;
}

bool cli_parse_size(const char *s, uint64_t *out) {
    if (!s || s[0] < '0' || s[0] > '9') return false; /* no sign, no space */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return false;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (*end) return false;
    return !__builtin_mul_overflow((uint64_t)v, mul, out);
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ctosa %s\n", CTOSA_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "ctosa: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
