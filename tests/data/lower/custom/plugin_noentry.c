/* plugin_noentry.c - a shared library that is not a ctosa plugin: it does
 * not export ctosa_plugin_init. ctosa must refuse it with a clear error. */
#include <stdint.h>

__attribute__((visibility("default"))) uint32_t ctosa_plugin_start(void) { return 1; }
