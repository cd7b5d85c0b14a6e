/* cmd_spec.c - `ctosa spec SPEC [--json]`, `ctosa spec --target NAME`,
 * `ctosa spec --list-targets`: what a TOSA spec string allows. A thin
 * printer: the description is ctosa_spec_describe() (ctosa/spec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: ctosa spec SPEC [--onnx] [--json]\n"
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
        for (uint32_t i = 0; (name = ctosa_spec_target_at(i, &sp)); i++) printf("%-16s %s\n", name, sp);
        return 0;
    }
    if (!text && !target) return cli_usage("spec", "expected a spec string or --target NAME");
    if (text && target) return cli_usage("spec", "give either a spec string or --target, not both");
    ctosa_spec s;
    ctosa_error *err = text ? ctosa_spec_parse(text, &s) : ctosa_spec_from_target(target, &s);
    if (err) return cli_fail("spec", err);
    char *out = NULL;
    err = ctosa_spec_describe(
        &s, (json ? CTOSA_SPEC_DESCRIBE_JSON : 0u) | (onnx ? CTOSA_SPEC_DESCRIBE_ONNX : 0u), &out);
    if (err) return cli_fail("spec", err);
    fputs(out, stdout);
    free(out);
    return 0;
}
