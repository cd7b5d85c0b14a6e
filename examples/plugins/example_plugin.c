/* example_plugin.c - a ctosa custom-operator plugin with two operators:
 *
 *   com.example::MySwish    y = x * sigmoid(beta * x), float attribute
 *                           beta (default 1.0); fp32 only
 *   com.example::SplitHalf  two outputs: the first and second half of the
 *                           last axis (which must have an even size)
 *
 * Each has a shape function (used by `ctosa lower --plugin`) and an
 * interpreter kernel (used by `ctosa run --plugin`). A plugin links against
 * nothing from ctosa: it reaches ctosa only through the host table it is
 * given, and exports one function, ctosa_plugin_init. Build it as a shared
 * library with ctosa's include/ on the include path:
 *
 *     cc -shared -fPIC -I include -o libctosa_example_plugin.so example_plugin.c -lm
 */
#include <math.h>
#include <string.h>

#include "ctosa/custom.h"

#if defined(__GNUC__)
#define PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define PLUGIN_EXPORT
#endif

static const ctosa_plugin_host *host; /* set once by ctosa_plugin_init */

/* ------------------------------------------------------------ MySwish */

static ctosa_error *swish_validate(void *user, const ctosa_custom_node *node) {
    const ctosa_onnx_attr *beta = ctosa_custom_find_attr(node, "beta");
    if (beta && beta->type != CTOSA_ONNX_ATTR_FLOAT)
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "attribute 'beta' must be a float");
    if (beta && !(beta->f > 0.0f))
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "attribute 'beta' must be positive, not %g",
                               (double)beta->f);
    (void)user;
    return NULL;
}

static ctosa_error *swish_infer(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                                uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    if (n_in != 1 || n_out != 1 || !in[0].present)
        return host->error_new(CTOSA_ERR_UNSUPPORTED,
                               "MySwish takes one input and gives one output (got %u and %u)", n_in, n_out);
    out[0] = in[0]; /* same dtype and shape */
    out[0].data = NULL;
    out[0].nbytes = 0;
    (void)user, (void)node;
    return NULL;
}

static ctosa_error *swish_kernel(void *user, const ctosa_interp_tensor *in, uint32_t n_in,
                                 ctosa_interp_tensor *out, uint32_t n_out, const uint8_t *attrs,
                                 uint32_t attrs_len) {
    if (n_in != 1 || n_out != 1 || in[0].dtype != CTOSA_DTYPE_FP32 || out[0].count != in[0].count)
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "MySwish: expected one fp32 input and output");
    double beta = 1.0;
    host->attrs_number(attrs, attrs_len, "beta", &beta);
    const float *x = in[0].data;
    float *y = out[0].data;
    for (uint64_t i = 0; i < in[0].count; i++) y[i] = x[i] / (1.0f + expf(-(float)beta * x[i]));
    (void)user;
    return NULL;
}

/* ---------------------------------------------------------- SplitHalf */

static ctosa_error *split_infer(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                                uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    if (n_in != 1 || n_out != 2 || !in[0].present)
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "SplitHalf takes one input and gives two outputs");
    if (in[0].rank == 0)
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "SplitHalf needs an input of rank >= 1");
    int64_t last = in[0].shape[in[0].rank - 1];
    if (last % 2)
        return host->error_new(CTOSA_ERR_UNSUPPORTED, "the last axis of '%s' has odd size %lld",
                               node->onnx->inputs[0], (long long)last);
    for (int k = 0; k < 2; k++) {
        out[k] = in[0];
        out[k].data = NULL;
        out[k].nbytes = 0;
        out[k].shape[in[0].rank - 1] = last / 2;
    }
    (void)user;
    return NULL;
}

static ctosa_error *split_kernel(void *user, const ctosa_interp_tensor *in, uint32_t n_in,
                                 ctosa_interp_tensor *out, uint32_t n_out, const uint8_t *attrs,
                                 uint32_t attrs_len) {
    if (n_in != 1 || n_out != 2 || in[0].rank == 0 || in[0].count == 0)
        return host->error_new(CTOSA_ERR_UNSUPPORTED,
                               "SplitHalf: expected one non-empty input and two outputs");
    size_t es = (size_t)(in[0].size / in[0].count);
    int64_t last = in[0].shape[in[0].rank - 1];
    uint64_t rows = in[0].count / (uint64_t)last;
    size_t half = (size_t)(last / 2) * es;
    const uint8_t *x = in[0].data;
    for (uint64_t r = 0; r < rows; r++) {
        memcpy((uint8_t *)out[0].data + r * half, x + r * 2 * half, half);
        memcpy((uint8_t *)out[1].data + r * half, x + r * 2 * half + half, half);
    }
    (void)user, (void)attrs, (void)attrs_len;
    return NULL;
}

/* ---------------------------------------------------------- entry point */

PLUGIN_EXPORT uint32_t ctosa_plugin_init(ctosa_custom_registry *reg, const ctosa_plugin_host *h,
                                         uint32_t host_api_version) {
    if (host_api_version != CTOSA_PLUGIN_API_VERSION) return CTOSA_PLUGIN_API_VERSION;
    host = h;
    static const ctosa_dtype fp32_only[] = {CTOSA_DTYPE_FP32};
    ctosa_custom_op swish = {
        .onnx_domain = "com.example",
        .onnx_op_type = "MySwish",
        .infer = swish_infer,
        .validate = swish_validate,
        .kernel = swish_kernel,
        .dtypes = fp32_only,
        .n_dtypes = 1,
    };
    ctosa_custom_op split = {
        .onnx_domain = "com.example",
        .onnx_op_type = "SplitHalf",
        .infer = split_infer,
        .kernel = split_kernel,
    };
    h->register_op(reg, &swish);
    h->register_op(reg, &split);
    return CTOSA_PLUGIN_API_VERSION;
}
