/* onnx_writer.h - writes a rewritten copy of an ONNX model: the main
 * graph's node list replaced by a new order of original nodes (copied byte
 * for byte) and new com.microsoft EPContext nodes, some initializers /
 * value_infos dropped, and the com.microsoft opset imported. Every other
 * field of the model is copied as it is. Used for <stem>.partitioned.onnx. */
#ifndef CTOSA_ONNX_WRITER_H
#define CTOSA_ONNX_WRITER_H

#include "ctosa/common.h"
#include "util/util.h"

/* One EPContext node (ONNX Runtime's convention, embed_mode 0). */
typedef struct onnx_ep_node {
    const char *name;       /* node name and partition_name */
    const char *cache_file; /* ep_cache_context: the file beside the model */
    uint32_t n_in, n_out;
    const char *const *in;
    const char *const *out;
} onnx_ep_node;

typedef struct onnx_rewrite {
    uint32_t n_items;
    const int64_t *items;       /* >= 0: main-graph node index; < 0: -(k+1) = ep[k] */
    const onnx_ep_node *ep;
    const strmap *drop_init;    /* initializer names to drop (and their graph input entries) */
    const strmap *drop_vi;      /* value_info names to drop */
} onnx_rewrite;

/* Reads model_path again (its bytes are copied, not re-encoded) and writes
 * the rewritten model to out_path atomically. */
ctosa_error *onnx_write_rewritten(const char *model_path, const onnx_rewrite *rw, const char *out_path);

#endif
