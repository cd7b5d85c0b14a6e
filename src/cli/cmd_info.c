/* cmd_info.c - `ctosa info`. Placeholder until its module lands. */
#include "cli.h"

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("info", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
