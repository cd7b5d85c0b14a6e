/* cmd_lower.c - `ctosa lower`. Placeholder until its module lands. */
#include "cli.h"

int cmd_lower(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("lower", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
