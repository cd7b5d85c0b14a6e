/*
 * ctosa/onnx.h - a read-only view of an ONNX model.
 *
 * ctosa_onnx_load() maps the file and decodes every message except tensor
 * payloads into plain const structs owned by the model (one arena). Weights
 * are not touched at load: raw_data and external data are pointers into the
 * mapped files, typed fields (float_data, int64_data, ...) are decoded when
 * asked for with ctosa_onnx_tensor_data().
 *
 *     ctosa_onnx_model *m;
 *     ctosa_error *err = ctosa_onnx_load("model.onnx", NULL, &m);
 *     if (err) { puts(ctosa_error_message(err)); ctosa_error_free(err); return 2; }
 *     const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
 *     for (uint32_t i = 0; i < g->n_nodes; i++) {
 *         const ctosa_onnx_node *n = &g->nodes[i];
 *         const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n, "pads");
 *         ...
 *     }
 *     const void *data; uint64_t nbytes;
 *     err = ctosa_onnx_tensor_data(m, &g->initializers[0], &data, &nbytes);
 *     ctosa_onnx_free(m);
 *
 * Errors are CTOSA_ERR_FORMAT (or _LIMIT / _IO / _UNSUPPORTED) and read
 * "model.onnx: byte 1234: node #17 'conv1' (Conv): attribute 'pads': ...".
 *
 * Every pointer in the structs below stays valid until ctosa_onnx_free().
 * Strings (names, op types, domains) are NUL-terminated copies; absent
 * strings are "" (never NULL) unless a field says otherwise. Data pointers
 * into the mapped file are NOT aligned: read them with memcpy.
 *
 * Thread safety: a loaded model may be read from several threads;
 * ctosa_onnx_tensor_data() serialises its own allocations.
 */
#ifndef CTOSA_ONNX_H
#define CTOSA_ONNX_H

#include "ctosa/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_onnx_model ctosa_onnx_model;
typedef struct ctosa_onnx_graph ctosa_onnx_graph;
typedef struct ctosa_onnx_type ctosa_onnx_type;

/* Bytes inside the mapped file (not NUL-terminated, not aligned). */
typedef struct ctosa_onnx_bytes {
    const uint8_t *p;
    uint64_t n;
} ctosa_onnx_bytes;

/* ---------------------------------------------------------------- tensors */

/* ONNX TensorProto.DataType values (the `dtype` / `elem_type` fields below
 * hold one as int32_t, since a model may carry values this list does not
 * know). */
typedef enum ctosa_onnx_dtype {
    CTOSA_ONNX_UNDEFINED = 0,
    CTOSA_ONNX_FLOAT = 1,
    CTOSA_ONNX_UINT8 = 2,
    CTOSA_ONNX_INT8 = 3,
    CTOSA_ONNX_UINT16 = 4,
    CTOSA_ONNX_INT16 = 5,
    CTOSA_ONNX_INT32 = 6,
    CTOSA_ONNX_INT64 = 7,
    CTOSA_ONNX_STRING = 8,
    CTOSA_ONNX_BOOL = 9,
    CTOSA_ONNX_FLOAT16 = 10,
    CTOSA_ONNX_DOUBLE = 11,
    CTOSA_ONNX_UINT32 = 12,
    CTOSA_ONNX_UINT64 = 13,
    CTOSA_ONNX_COMPLEX64 = 14,
    CTOSA_ONNX_COMPLEX128 = 15,
    CTOSA_ONNX_BFLOAT16 = 16,
    CTOSA_ONNX_FLOAT8E4M3FN = 17,
    CTOSA_ONNX_FLOAT8E4M3FNUZ = 18,
    CTOSA_ONNX_FLOAT8E5M2 = 19,
    CTOSA_ONNX_FLOAT8E5M2FNUZ = 20,
    CTOSA_ONNX_UINT4 = 21,
    CTOSA_ONNX_INT4 = 22,
    CTOSA_ONNX_FLOAT4E2M1 = 23,
    CTOSA_ONNX_FLOAT8E8M0 = 24,
    CTOSA_ONNX_UINT2 = 25,
    CTOSA_ONNX_INT2 = 26,
    CTOSA_ONNX_DTYPE_MAX = 26 /* the largest value above */
} ctosa_onnx_dtype;

typedef enum ctosa_onnx_storage {
    CTOSA_ONNX_DATA_NONE = 0, /* no data field present (empty tensor, or data missing) */
    CTOSA_ONNX_DATA_RAW,      /* raw_data: `data`/`nbytes` point into the model file */
    CTOSA_ONNX_DATA_TYPED,    /* float_data, int32_data, ...: `typed_field` says which */
    CTOSA_ONNX_DATA_EXTERNAL  /* external file: `data`/`nbytes` point into its mapping */
} ctosa_onnx_storage;

typedef struct ctosa_onnx_external {
    const char *location;    /* as written in the model ("" if absent) */
    const char *path;        /* resolved real path; NULL when not resolved */
    uint64_t offset, length; /* length = bytes used (resolved even if not given) */
    bool has_offset, has_length;
    const char *checksum; /* NULL if absent */
} ctosa_onnx_external;

typedef struct ctosa_onnx_tensor {
    const char *name;
    int32_t dtype; /* a ctosa_onnx_dtype value */
    uint32_t rank;
    const int64_t *dims;
    uint64_t count; /* product of dims (1 for a scalar) */
    ctosa_onnx_storage storage;
    uint32_t typed_field; /* TYPED: TensorProto field number (4 float_data,
                               * 5 int32_data, 6 string_data, 7 int64_data,
                               * 10 double_data, 11 uint64_data) */
    const uint8_t *data;  /* RAW / EXTERNAL bytes (little-endian, packed) */
    uint64_t nbytes;
    ctosa_onnx_external ext; /* EXTERNAL only */
    bool has_segment;        /* a `segment` was given (read, otherwise ignored) */
    uint64_t offset;         /* byte offset of the TensorProto in the file */
    /* Private: the TensorProto bytes, the file they are in, and the typed
     * data once decoded by ctosa_onnx_tensor_data(). */
    const uint8_t *msg_;
    uint64_t msg_len_;
    const char *file_;
    const uint8_t *file_base_;
    const void *decoded_;
    uint64_t decoded_len_;
} ctosa_onnx_tensor;

typedef struct ctosa_onnx_sparse_tensor {
    ctosa_onnx_tensor values;  /* 1-D, NNZ values */
    ctosa_onnx_tensor indices; /* int64 [NNZ] (linearised) or [NNZ, rank] */
    uint32_t rank;
    const int64_t *dims; /* dense shape */
    uint64_t offset;
} ctosa_onnx_sparse_tensor;

/* ------------------------------------------------------------------ types */

/* TypeProto kinds (the TypeProto field numbers). */
typedef enum ctosa_onnx_type_kind {
    CTOSA_ONNX_TYPE_NONE = 0, /* no value set */
    CTOSA_ONNX_TYPE_TENSOR = 1,
    CTOSA_ONNX_TYPE_SEQUENCE = 4,
    CTOSA_ONNX_TYPE_MAP = 5,
    CTOSA_ONNX_TYPE_OPAQUE = 7,
    CTOSA_ONNX_TYPE_SPARSE_TENSOR = 8,
    CTOSA_ONNX_TYPE_OPTIONAL = 9
} ctosa_onnx_type_kind;

/* One dimension: a value, a symbolic name, or neither (unknown). */
typedef struct ctosa_onnx_dim {
    bool has_value;
    int64_t value;
    const char *param; /* NULL when not symbolic */
} ctosa_onnx_dim;

struct ctosa_onnx_type {
    ctosa_onnx_type_kind kind;
    int32_t elem_type; /* TENSOR / SPARSE_TENSOR: ONNX dtype (0 = unset) */
    bool has_shape;    /* TENSOR / SPARSE_TENSOR: shape given (rank may be 0) */
    uint32_t rank;
    const ctosa_onnx_dim *dims;
    const ctosa_onnx_type *elem;             /* SEQUENCE / OPTIONAL element; MAP value */
    int32_t key_type;                        /* MAP */
    const char *opaque_domain, *opaque_name; /* OPAQUE */
    const char *denotation;
};

typedef struct ctosa_onnx_value_info {
    const char *name;
    const ctosa_onnx_type *type; /* NULL when the ValueInfoProto has no type */
    uint64_t offset;
} ctosa_onnx_value_info;

/* ------------------------------------------------------------- attributes */

typedef enum ctosa_onnx_attr_type {
    CTOSA_ONNX_ATTR_UNDEFINED = 0,
    CTOSA_ONNX_ATTR_FLOAT = 1,
    CTOSA_ONNX_ATTR_INT = 2,
    CTOSA_ONNX_ATTR_STRING = 3,
    CTOSA_ONNX_ATTR_TENSOR = 4,
    CTOSA_ONNX_ATTR_GRAPH = 5,
    CTOSA_ONNX_ATTR_FLOATS = 6,
    CTOSA_ONNX_ATTR_INTS = 7,
    CTOSA_ONNX_ATTR_STRINGS = 8,
    CTOSA_ONNX_ATTR_TENSORS = 9,
    CTOSA_ONNX_ATTR_GRAPHS = 10,
    CTOSA_ONNX_ATTR_SPARSE_TENSOR = 11,
    CTOSA_ONNX_ATTR_SPARSE_TENSORS = 12,
    CTOSA_ONNX_ATTR_TYPE_PROTO = 13,
    CTOSA_ONNX_ATTR_TYPE_PROTOS = 14
} ctosa_onnx_attr_type;

/* An attribute. `type` says which member is meaningful; for the list types
 * `count` elements are in the matching array. When the file gives no type
 * (old exporters), it is inferred from the one field that is set. */
typedef struct ctosa_onnx_attr {
    const char *name;
    const char *ref_attr_name; /* function bodies: refers to the caller's attribute; NULL otherwise */
    ctosa_onnx_attr_type type;
    float f;
    int64_t i;
    ctosa_onnx_bytes s; /* STRING: bytes in the file */
    const ctosa_onnx_tensor *t;
    const ctosa_onnx_graph *g;
    const ctosa_onnx_sparse_tensor *sparse_tensor;
    const ctosa_onnx_type *tp;
    uint32_t count; /* number of elements of the list member in use */
    const float *floats;
    const int64_t *ints;
    const ctosa_onnx_bytes *strings;
    const ctosa_onnx_tensor *tensors;
    const ctosa_onnx_graph *const *graphs;
    const ctosa_onnx_sparse_tensor *sparse_tensors;
    const ctosa_onnx_type *const *type_protos;
    uint64_t offset;
} ctosa_onnx_attr;

/* ------------------------------------------------------------------ nodes */

typedef struct ctosa_onnx_node {
    const char *name, *op_type, *domain, *overload;
    uint32_t index; /* position in its graph */
    uint32_t n_inputs, n_outputs, n_attrs;
    const char *const *inputs; /* "" marks an omitted optional input */
    const char *const *outputs;
    const ctosa_onnx_attr *attrs;
    uint64_t offset;
} ctosa_onnx_node;

struct ctosa_onnx_graph {
    const char *name;
    uint32_t n_nodes, n_initializers, n_sparse_initializers;
    uint32_t n_inputs, n_outputs, n_value_infos;
    const ctosa_onnx_node *nodes;
    const ctosa_onnx_tensor *initializers;
    const ctosa_onnx_sparse_tensor *sparse_initializers;
    const ctosa_onnx_value_info *inputs, *outputs, *value_infos;
    const ctosa_onnx_graph *parent; /* enclosing graph for If/Loop/Scan bodies; NULL for main */
    uint32_t depth;                 /* 0 for the main graph */
    uint64_t offset;
};

/* ------------------------------------------------------------------ model */

typedef struct ctosa_onnx_opset {
    const char *domain; /* as written; "" and "ai.onnx" both mean the default domain */
    int64_t version;
} ctosa_onnx_opset;

typedef struct ctosa_onnx_kv {
    const char *key, *value;
} ctosa_onnx_kv;

/* A model-local function (FunctionProto). */
typedef struct ctosa_onnx_function {
    const char *name, *domain, *overload;
    uint32_t n_inputs, n_outputs, n_attr_names, n_attr_defaults, n_nodes, n_opsets, n_value_infos;
    const char *const *inputs, *const *outputs;
    const char *const *attr_names;        /* attributes without defaults */
    const ctosa_onnx_attr *attr_defaults; /* attributes with default values */
    const ctosa_onnx_node *nodes;
    const ctosa_onnx_opset *opsets;
    const ctosa_onnx_value_info *value_infos;
    uint64_t offset;
} ctosa_onnx_function;

typedef struct ctosa_onnx_model_info {
    const char *path; /* as given to ctosa_onnx_load (or the name given for memory) */
    uint64_t file_size;
    int64_t ir_version, model_version;
    const char *producer_name, *producer_version, *domain;
    uint32_t n_opsets, n_metadata, n_functions;
    const ctosa_onnx_opset *opsets;
    const ctosa_onnx_kv *metadata;
    const ctosa_onnx_function *functions;
    const ctosa_onnx_graph *graph;
    uint32_t total_nodes;      /* nodes in every graph, subgraphs and functions included */
    uint32_t n_external_files; /* external data files mapped */
} ctosa_onnx_model_info;

typedef struct ctosa_onnx_options {
    /* Folder that external data locations are relative to. Default: the
     * model file's folder; for ctosa_onnx_load_memory, external data is
     * refused unless this is set. */
    const char *external_data_dir;
    /* Do not open external data files at load (their tensors then have
     * ext.path NULL and no data). */
    bool skip_external_data;
    uint32_t max_graph_depth; /* nested subgraphs and function calls; 0 = 32, at most 256 */
    uint32_t max_nodes;       /* all graphs together; 0 = 16 M */
    uint32_t max_name;        /* bytes in one name / op type / domain; 0 = 1 MiB */
} ctosa_onnx_options;

/* Loads a model file (options may be NULL). */
ctosa_error *ctosa_onnx_load(const char *path, const ctosa_onnx_options *opt, ctosa_onnx_model **out);
/* Loads from memory; the buffer must outlive the model. `name` is used in
 * messages (NULL = "<memory>"). */
ctosa_error *ctosa_onnx_load_memory(const void *data, uint64_t size, const char *name,
                                    const ctosa_onnx_options *opt, ctosa_onnx_model **out);
void ctosa_onnx_free(ctosa_onnx_model *m); /* accepts NULL */

const ctosa_onnx_model_info *ctosa_onnx_info(const ctosa_onnx_model *m);

/* Opset version the model imports for a domain ("" or "ai.onnx" for the
 * default domain); -1 when the domain is not imported. */
int64_t ctosa_onnx_opset_version(const ctosa_onnx_model *m, const char *domain);
/* Attribute of a node by name, or NULL. */
const ctosa_onnx_attr *ctosa_onnx_node_attr(const ctosa_onnx_node *n, const char *name);
/* Model-local function by (domain, name, overload); overload may be NULL = "". */
const ctosa_onnx_function *ctosa_onnx_find_function(const ctosa_onnx_model *m, const char *domain,
                                                    const char *name, const char *overload);
/* "FLOAT", "INT64", "FLOAT8E4M3FN"..., or NULL for an unknown value. */
const char *ctosa_onnx_dtype_name(int32_t dtype);
/* Bytes needed for count elements of dtype densely packed (sub-byte types
 * packed low bits first); false for strings, unknown dtypes and overflow. */
bool ctosa_onnx_dtype_storage(int32_t dtype, uint64_t count, uint64_t *bytes);
const char *ctosa_onnx_attr_type_name(ctosa_onnx_attr_type t); /* "INTS" ... */

/* A tensor's elements as dense little-endian bytes, however they were
 * stored (raw_data, a typed field, external data). Raw and external data
 * are returned in place (zero copy); typed fields are decoded into the
 * model's memory on the first call and reused. For STRING tensors *data points to `count`
 * ctosa_onnx_bytes records. Errors name the tensor, file and byte offset. */
ctosa_error *ctosa_onnx_tensor_data(ctosa_onnx_model *m, const ctosa_onnx_tensor *t, const void **data,
                                    uint64_t *nbytes);

/* Inlines every call of a model-local function in the main graph (and
 * recursively in function bodies and subgraphs) and returns the resulting
 * graph, owned by the model. Names inside an inlined body are prefixed with
 * the calling node's name so that they stay unique. Without functions the
 * main graph itself is returned. Calls inside subgraphs (If/Loop/Scan
 * bodies) are expanded too, in copies of those subgraphs. */
ctosa_error *ctosa_onnx_inline_functions(ctosa_onnx_model *m, const ctosa_onnx_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_ONNX_H */
