/* onnx_internal.h - shared state of the ONNX reader (onnx_model.c,
 * onnx_tensor.c, external_data.c, onnx_functions.c). Not public. */
#ifndef CTOSA_ONNX_INTERNAL_H
#define CTOSA_ONNX_INTERNAL_H

#include <pthread.h>

#include "ctosa/onnx.h"
#include "onnx/pb.h"
#include "onnx/onnx_tensor.h"
#include "util/util.h"

/* External data files of one model: resolved once, mapped once. */
typedef struct onnx_ext_files {
    const char *dir; /* real path of the folder locations are relative to; NULL = refuse */
    bool skip;       /* options.skip_external_data */
    strmap by_path;  /* real path -> file_map* */
    file_map **maps;
    uint32_t n_maps, cap_maps;
} onnx_ext_files;

/* Parsing context. Errors are built innermost-first with pb_error (which
 * records the byte offset) and get their context ("node #3 'x' (Conv)")
 * prefixed on the way out; the top level adds "file: byte N". */
typedef struct onnx_ctx {
    pb_doc doc;
    arena *a;
    const char *file;    /* arena copy of the file name */
    onnx_ext_files *ext; /* NULL: external data refused */
    uint32_t max_depth, max_nodes, max_name;
    uint32_t total_nodes;
    uint32_t type_depth; /* nesting of TypeProto */
} onnx_ctx;

struct ctosa_onnx_model {
    arena a;
    file_map map; /* the model file (unused for load_memory) */
    onnx_ext_files ext;
    ctosa_onnx_model_info info;
    pthread_mutex_t lock; /* guards `a` after load (tensor decoding, inlining) */
    const ctosa_onnx_graph *inlined;
    uint32_t max_depth; /* options.max_graph_depth, also bounds function inlining */
};

/* Copies a string field into the arena (NUL-terminated); rejects embedded
 * NULs and names longer than ctx->max_name. `what` names the field. */
ctosa_error *onnx_str(onnx_ctx *ctx, const pb_field *f, const char *what, const char **out);

/* TensorProto: header fields only (dims, dtype, name, where the data is).
 * External locations are resolved when ctx->ext is set. */
ctosa_error *onnx_parse_tensor(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_tensor *t);
ctosa_error *onnx_parse_sparse_tensor(onnx_ctx *ctx, const uint8_t *p, uint64_t n,
                                      ctosa_onnx_sparse_tensor *t);
/* Dense little-endian elements of t. Raw and external data are returned in
 * place (out->data points into the mapped file, valid while the model or
 * the mapping lives); typed fields are decoded into `a`. Strings: out->data
 * holds `count` ctosa_onnx_bytes records. Errors name the tensor, the file
 * and the byte offset. */
ctosa_error *onnx_tensor_value_of(const ctosa_onnx_tensor *t, arena *a, onnx_tensor_value *out);

/* External data (external_data.c). */
void onnx_ext_init(onnx_ext_files *x);
void onnx_ext_free(onnx_ext_files *x);
/* Resolves t->ext.location against x->dir, checks that it stays inside,
 * maps the file and checks the range. Fills t->data / t->nbytes / ext.path.
 * `at` is where errors point. */
ctosa_error *onnx_ext_resolve(onnx_ctx *ctx, const uint8_t *at, ctosa_onnx_tensor *t);
/* Real path of the folder of `path` (malloc'd) or an IO error. */
ctosa_error *onnx_ext_dir_of(const char *path, char **out);

/* Model parsing pieces shared with onnx_functions.c. */
ctosa_error *onnx_parse_node(onnx_ctx *ctx, const uint8_t *p, uint64_t n, uint32_t index, uint32_t depth,
                             const ctosa_onnx_graph *owner, ctosa_onnx_node *out);

/* A context string for messages: "node #3 'conv1' (Conv)". */
const char *onnx_node_label(const ctosa_onnx_node *n, char *buf, size_t size);

#endif
