/* cmd_dump.c - `ctosa dump`. Placeholder until its module lands. */
#include "cli.h"

int cmd_dump(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_fail("dump", ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "not implemented yet"));
}
