/* cli.h - the ctosa command: one file per subcommand (cmd_<name>.c), each
 * using only the public API plus the small helpers below. Every command
 * returns the process exit code: 0 success, 1 a reported problem, 2 bad
 * usage or bad input (docs/errors.md, "Exit codes"). */
#ifndef CTOSA_CLI_H
#define CTOSA_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ctosa/ctosa.h"

int cmd_lower(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_spec(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* Writes the report JSON json[0..len) (name = its file, for messages) as a
 * self-contained HTML page to out_path (atomically). A malformed report is
 * CTOSA_ERR_FORMAT naming name:line:column; nothing is written then.
 * cmd_report.c; also used by `ctosa lower --html`. */
ctosa_error *cli_report_html(const char *json, size_t len, const char *name, const char *out_path);

/* Prints "ctosa <cmd>: <message>" to stderr and returns the exit code for
 * err (frees it). */
int cli_fail(const char *cmd, ctosa_error *err);
/* Prints a usage error ("ctosa <cmd>: ...; see 'ctosa <cmd> --help'") and
 * returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For "--flag VALUE" and "--flag=VALUE": returns the value and advances *i,
 * or NULL when argv[*i] is not this flag. Sets *missing when the flag is
 * present without a value. */
const char *cli_flag_value(int argc, char **argv, int *i, const char *flag, const char *alt, int *missing);

/* NAME=FILE of --input, --output, --expect: split at the first '=' (paths
 * with '=' are more common than tensor names with one). name is a copy
 * (free it), file points into arg. False when a side is empty or memory is
 * short. */
typedef struct cli_binding {
    char *name;
    const char *file;
} cli_binding;
bool cli_split_binding(const char *arg, cli_binding *b);

/* The end of a command's option loop: arg is no option the command knows.
 * Takes it as the model (*model) when it is the first non-option argument
 * and returns 0; otherwise prints the usage error (a flag left without its
 * value - `missing` from cli_flag_value -, an unknown option, a second
 * model; `what` names the model, e.g. "MODEL.onnx") and returns 2. */
int cli_model_arg(const char *cmd, const char *what, const char *arg, int missing, const char **model);

/* --spec SPEC / --target NAME: at most one of them (both NULL is a usage
 * error when required). With out, the one given is parsed into *out
 * (ctosa_spec_parse / ctosa_spec_from_target). 0 when fine, else the exit
 * code with the message printed. */
int cli_spec_arg(const char *cmd, const char *spec, const char *target, bool required, ctosa_spec *out);

/* Parses a byte count for --max-memory: digits with an optional K, M or G
 * suffix (powers of 1024). False on anything else or on overflow. */
bool cli_parse_size(const char *s, uint64_t *out);

#endif
