/* fuzz_onnx.c - the protobuf / ONNX model reader (ctosa_onnx_load_memory)
 * with external data resolved against a sandbox folder that holds one
 * fixed file, ext.bin (256 bytes). Every initializer's data is decoded
 * (ctosa_onnx_tensor_data) and model-local functions are inlined, with
 * small node and depth limits so that inputs stay cheap. */
#include "ctosa/onnx.h"
#include "fuzz_common.h"

static void touch(const void *data, uint64_t n) {
    const volatile uint8_t *p = data;
    uint8_t acc = 0;
    for (uint64_t i = 0; i < n; i++) acc ^= p[i];
    (void)acc;
}

static void walk_graph(ctosa_onnx_model *m, const ctosa_onnx_graph *g) {
    for (uint32_t i = 0; i < g->n_initializers && i < 64; i++) {
        const ctosa_onnx_tensor *t = &g->initializers[i];
        const void *p;
        uint64_t n;
        ctosa_error *e = ctosa_onnx_tensor_data(m, t, &p, &n);
        if (!e && t->dtype != 8 /* STRING: records, not bytes */) touch(p, n);
        fuzz_drop(e);
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *nd = &g->nodes[i];
        for (uint32_t j = 0; j < nd->n_attrs; j++) {
            const ctosa_onnx_attr *a = &nd->attrs[j];
            if (a->g && a->g->depth < 4) walk_graph(m, a->g);
            if (a->t) {
                const void *p;
                uint64_t n;
                fuzz_drop(ctosa_onnx_tensor_data(m, a->t, &p, &n));
            }
            (void)ctosa_onnx_attr_type_name(a->type);
        }
    }
}

FUZZ_ENTRY(onnx) {
    const char *dir = fuzz_sandbox_with_ext();
    if (!dir) return 0;
    ctosa_onnx_options opt = {0};
    opt.external_data_dir = dir;
    opt.max_graph_depth = 16;
    opt.max_nodes = 4096;
    opt.max_name = 4096;
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load_memory(data, size, "fuzz.onnx", &opt, &m);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
    const ctosa_onnx_model_info *info = ctosa_onnx_info(m);
    if (info->graph) walk_graph(m, info->graph);
    (void)ctosa_onnx_opset_version(m, "");
    const ctosa_onnx_graph *inl = NULL;
    fuzz_drop(ctosa_onnx_inline_functions(m, &inl));
    ctosa_onnx_free(m);
    return 0;
}
