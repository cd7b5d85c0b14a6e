/* plugin_failing.c - a plugin whose second registration is invalid (no
 * shape function): loading must fail naming the problem, and the first
 * registration must be withdrawn. */
#include <stddef.h>

#include "ctosa/custom.h"

static ctosa_error *infer(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                          uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    (void)user, (void)node, (void)in, (void)n_in, (void)out, (void)n_out;
    return NULL;
}

__attribute__((visibility("default"))) uint32_t
ctosa_plugin_init(ctosa_custom_registry *reg, const ctosa_plugin_host *host, uint32_t host_api_version) {
    if (host_api_version != CTOSA_PLUGIN_API_VERSION) return CTOSA_PLUGIN_API_VERSION;
    ctosa_custom_op good = {.onnx_domain = "com.fail", .onnx_op_type = "Good", .infer = infer};
    ctosa_custom_op bad = {.onnx_domain = "com.fail", .onnx_op_type = "Bad", .infer = NULL};
    host->register_op(reg, &good);
    host->register_op(reg, &bad);
    return CTOSA_PLUGIN_API_VERSION;
}
