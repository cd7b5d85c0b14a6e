/* cmd_run.c - `ctosa run`. Placeholder until its module lands. */
#include "cli.h"

int cmd_run(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("run", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
