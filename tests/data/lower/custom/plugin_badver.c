/* plugin_badver.c - a test plugin "built against" a future plugin API
 * version: it follows the contract (returns its own version without
 * touching anything when the host's differs), so ctosa must report the
 * mismatch cleanly. Built by tests/data/lower/custom/CMakeLists.txt. */
#include "ctosa/custom.h"

#define BUILT_AGAINST (CTOSA_PLUGIN_API_VERSION + 41u)

__attribute__((visibility("default"))) uint32_t
ctosa_plugin_init(ctosa_custom_registry *reg, const ctosa_plugin_host *host, uint32_t host_api_version) {
    if (host_api_version != BUILT_AGAINST) return BUILT_AGAINST;
    (void)reg, (void)host;
    return BUILT_AGAINST;
}
