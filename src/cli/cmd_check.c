/* cmd_check.c - `ctosa check`. Placeholder until its module lands. */
#include "cli.h"

int cmd_check(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("check", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
