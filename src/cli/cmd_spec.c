/* cmd_spec.c - `ctosa spec`. Placeholder until its module lands. */
#include "cli.h"

int cmd_spec(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("spec", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
