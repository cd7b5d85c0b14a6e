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

/* A value computed at compile time that the rewritten graph still needs
 * (a CPU node reads it, or it is a graph output) but no kept node
 * produces: written as an initializer (raw_data, bytes copied from `data`). */
typedef struct onnx_const_init {
    const char *name;
    int32_t dtype; /* ONNX TensorProto.DataType */
    uint32_t rank;
    const int64_t *dims;
    const void *data;
    uint64_t nbytes;
} onnx_const_init;

/* A value the rewritten graph declares (GraphProto.value_info): an
 * EPContext output has no type otherwise. With scale_init / zp_init set
 * (names of initializers in `consts`), its quantization parameters are
 * written as a GraphProto.quantization_annotation too. */
typedef struct onnx_value_decl {
    const char *name;
    int32_t dtype; /* ONNX TensorProto.DataType */
    uint32_t rank;
    const int64_t *dims; /* negative: unknown dimension */
    bool declare;        /* write a value_info (not for graph inputs/outputs) */
    const char *scale_init, *zp_init;
} onnx_value_decl;

typedef struct onnx_rewrite {
    uint32_t n_items;
    const int64_t *items; /* >= 0: main-graph node index; < 0: -(k+1) = ep[k] */
    const onnx_ep_node *ep;
    const strmap *drop_init; /* initializer names to drop (and their graph input entries) */
    const strmap *drop_vi;   /* value_info names to drop */
    /* Inlined functions (onnx_inline.h). When `nodes` is set, items index
     * these nodes: orig[i] >= 0 copies the model's main-graph node orig[i]
     * byte for byte, -1 encodes nodes[i] (its attributes' bytes are copied
     * from the model file at their offsets, renamed, ref_attr_name removed). */
    const struct ctosa_onnx_node *nodes;
    const int32_t *orig;
    bool drop_functions; /* leave out ModelProto.functions */
    uint32_t n_opsets;   /* opset imports to add when their domain is not imported */
    const struct ctosa_onnx_opset *opsets;
    uint32_t n_consts;
    const onnx_const_init *consts;
    uint32_t n_decls;
    const onnx_value_decl *decls;
} onnx_rewrite;

/* Where len bytes at p lie in the files model m has mapped (the .onnx
 * itself or one of its external-data files): the open descriptor and the
 * byte offset. False when p is not (entirely) inside one mapping. The
 * descriptor stays valid while m lives; callers may copy_file_range /
 * pread from it but must not close it or move its file position. */
struct ctosa_onnx_model;
bool onnx_model_locate(const struct ctosa_onnx_model *m, const void *p, uint64_t len, int *fd,
                       uint64_t *offset);

/* Reads model_path again (its bytes are copied, not re-encoded) and writes
 * the rewritten model to out_path atomically. */
ctosa_error *onnx_write_rewritten(const char *model_path, const onnx_rewrite *rw, const char *out_path);

#endif
