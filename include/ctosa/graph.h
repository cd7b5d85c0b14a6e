/*
 * ctosa/graph.h - the in-memory TOSA graph: model and builder.
 *
 * A ctosa_graph owns an arena; every region, block, tensor, operator, name
 * and attribute vector hangs off it and lives until ctosa_graph_free(). The
 * same model is produced by the builder below and by the reader
 * (ctosa/tosa_io.h), and consumed by the writer, the validator and the
 * interpreter.
 *
 * Layout of a graph (as in the TOSA flatbuffer schema):
 *
 *     graph -> regions[] ("main" first) -> blocks[] -> { ops[], tensors[],
 *              shapes[], inputs[] (names), outputs[] (names) }
 *
 * Tensors are referred to by name everywhere. Operators run in list order.
 * TosaShape entries (block.shapes, produced by CONST_SHAPE) are represented
 * as ctosa_tensor with is_shape = true, dtype CTOSA_DTYPE_SHAPE, rank 1 and
 * shape[0] = number of int64 elements.
 *
 * Building a graph:
 *
 *     ctosa_graph *g; ctosa_region *r; ctosa_block *b; ctosa_tensor *t;
 *     ctosa_graph_create(CTOSA_VERSION_1_0, &g);
 *     ctosa_graph_add_region(g, "main", &r);
 *     ctosa_region_add_block(g, r, "main", &b);
 *     int32_t shp[2] = {1, 16};
 *     ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_FP32, 2, shp, &t);
 *     ...
 *     const char *in[] = {"x", "y"}, *out[] = {"z"};
 *     ctosa_block_add_op(g, b, CTOSA_OP_ADD, 2, in, 1, out, NULL, NULL);
 *     ctosa_block_add_input(g, b, "x"); ...
 *
 * Every builder call copies the names, shapes and attribute vectors it is
 * given into the graph's arena, so the caller's arrays may be temporaries.
 * Constant tensor data is the exception: ctosa_tensor_set_data() with
 * copy = false BORROWS the memory, which must stay valid and unchanged until
 * the graph is freed (or at least until the last write); file-backed data
 * (ctosa_tensor_set_data_file) is read only when the graph is written.
 *
 * Thread safety: a graph may be read from several threads at once; building
 * (any ctosa_*_add_* or set call) must not run concurrently with anything
 * else on the same graph.
 */
#ifndef CTOSA_GRAPH_H
#define CTOSA_GRAPH_H

#include "ctosa/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_graph ctosa_graph;

/* A vector of int32 (attribute lists such as pad, stride, perms). */
typedef struct ctosa_i32s {
    const int32_t *v;
    uint32_t n;
} ctosa_i32s;

/* A byte vector (CLAMP min/max values, CUSTOM implementation_attrs). */
typedef struct ctosa_bytes {
    const uint8_t *p;
    uint32_t n;
} ctosa_bytes;

/*
 * Operator attributes: the union of every field of every TOSA attribute
 * table. Each operator uses the subset its table has (see
 * ctosa_op_attr_fields()); other fields are ignored by the writer and are
 * zero after reading. Zero-initialise and set what the operator needs.
 */
typedef struct ctosa_attr {
    int32_t axis;                        /* ARGMAX, REDUCE_*, CONCAT, REVERSE, DIM */
    ctosa_nan_mode nan_mode;             /* ARGMAX, MAX_POOL2D*, CLAMP, MAXIMUM, MINIMUM, REDUCE_MAX/MIN */
    ctosa_i32s kernel, stride, pad;      /* pooling; stride/pad also convolutions */
    ctosa_i32s dilation;                 /* CONV2D, CONV3D, DEPTHWISE_CONV2D */
    ctosa_i32s out_pad;                  /* TRANSPOSE_CONV2D */
    ctosa_i32s perms;                    /* TRANSPOSE */
    ctosa_dtype acc_type;                /* convolutions, AVG_POOL2D* (a DType value) */
    bool local_bound;                    /* convolutions, FFT2D, RFFT2D */
    bool inverse;                        /* FFT2D */
    bool round;                          /* ARITHMETIC_RIGHT_SHIFT */
    ctosa_bytes min_val, max_val;        /* CLAMP: little-endian bytes of in_out_t */
    ctosa_resize_mode mode;              /* RESIZE */
    bool scale32;                        /* RESCALE */
    ctosa_rounding_mode rounding_mode;   /* RESCALE */
    bool per_channel;                    /* RESCALE */
    bool input_unsigned;                 /* RESCALE */
    bool output_unsigned;                /* RESCALE */
    const char *operator_name;           /* CUSTOM */
    const char *domain_name;             /* CUSTOM */
    ctosa_bytes implementation_attrs;    /* CUSTOM */
    const char *then_graph, *else_graph; /* COND_IF: region names */
    const char *cond_graph, *body_graph; /* WHILE_LOOP: region names */
    ctosa_block_size block_size;         /* 1.1 block-scaled ops */
    bool allow_broadcast;                /* 1.1 ASSERT_EQUAL_SHAPE */
} ctosa_attr;

/* How one attribute field is stored (drives writer, reader, dump). */
typedef enum ctosa_field_kind {
    CTOSA_FIELD_I32,     /* int32_t */
    CTOSA_FIELD_BOOL,    /* bool */
    CTOSA_FIELD_ENUM,    /* uint32 enum stored in an int-sized C enum */
    CTOSA_FIELD_DTYPE,   /* ctosa_dtype */
    CTOSA_FIELD_I32_VEC, /* ctosa_i32s */
    CTOSA_FIELD_BYTES,   /* ctosa_bytes ([ubyte], force_align 8 for CLAMP) */
    CTOSA_FIELD_STRING   /* const char * */
} ctosa_field_kind;

typedef struct ctosa_attr_field {
    const char *name; /* schema field name, e.g. "pad" */
    ctosa_field_kind kind;
    uint16_t offset;       /* offsetof(ctosa_attr, member) */
    const char *enum_type; /* "NanPropagationMode", "ResizeMode", "RoundingMode",
                              "BlockSize" for CTOSA_FIELD_ENUM, else NULL */
} ctosa_attr_field;

/* The fields of op's attribute table, in schema (vtable slot) order. Empty
 * tables return count 0 and a non-NULL pointer. NULL for unknown ops. */
const ctosa_attr_field *ctosa_op_attr_fields(ctosa_op_kind op, uint32_t *count);
/* Schema name of op's attribute table ("Conv2dAttribute"); NULL if unknown. */
const char *ctosa_op_attr_table(ctosa_op_kind op);
/* Name of an enum value for dump output ("PROPAGATE"); NULL if out of range. */
const char *ctosa_enum_value_name(const char *enum_type, uint32_t value);

/* Where a constant tensor's bytes are. */
typedef enum ctosa_data_kind {
    CTOSA_DATA_NONE = 0, /* not a constant (placeholder or intermediate) */
    CTOSA_DATA_MEMORY,   /* ptr/size: borrowed, arena-owned or inside a mapped file */
    CTOSA_DATA_FILE,     /* size bytes at offset of path (or of fd when path is NULL) */
    CTOSA_DATA_GENERATED /* computed on demand by fill(user, ...) (see below) */
} ctosa_data_kind;

/* Produces bytes [offset, offset + n) of a generated constant's file
 * encoding into buf. Called with any offset; the writer calls it front to
 * back in chunks of at most CTOSA_DATA_CHUNK bytes. Must be deterministic
 * and, when the graph is read from several threads, reentrant. */
typedef ctosa_error *(*ctosa_data_fill_fn)(void *user, uint64_t offset, void *buf, size_t n);
#define CTOSA_DATA_CHUNK ((size_t)4 << 20)

typedef struct ctosa_data {
    ctosa_data_kind kind;
    uint64_t
        size; /* bytes, in the file encoding of the dtype (docs/tosa-format.md: INT4 two per byte, INT48 6 bytes) */
    const void *ptr;         /* MEMORY */
    const char *path;        /* FILE */
    int fd;                  /* FILE when path == NULL; the writer does not close it */
    uint64_t offset;         /* FILE */
    ctosa_data_fill_fn fill; /* GENERATED */
    void *user;              /* GENERATED: fill's argument (borrowed) */
} ctosa_data;

typedef struct ctosa_tensor {
    const char *name;
    ctosa_dtype dtype;
    uint32_t rank;
    const int32_t *shape; /* rank entries */
    bool is_shape;        /* a TosaShape (block.shapes) entry */
    bool variable;        /* TosaTensor.variable */
    bool is_unranked;
    const char *variable_name; /* NULL if none */
    ctosa_data data;
} ctosa_tensor;

typedef struct ctosa_op {
    ctosa_op_kind kind;
    uint32_t n_inputs, n_outputs;
    const char **inputs; /* tensor or shape names */
    const char **outputs;
    ctosa_attr attr;
    const char *location; /* OpLocation.text, NULL if none */
} ctosa_op;

typedef struct ctosa_block {
    const char *name;
    uint32_t n_ops, n_tensors, n_shapes, n_inputs, n_outputs;
    ctosa_op **ops;
    ctosa_tensor **tensors;
    ctosa_tensor **shapes;
    const char **inputs;
    const char **outputs;
    /* private: capacities used by the builder */
    uint32_t cap_ops_, cap_tensors_, cap_shapes_, cap_inputs_, cap_outputs_;
} ctosa_block;

typedef struct ctosa_region {
    const char *name;
    uint32_t n_blocks;
    ctosa_block **blocks;
    uint32_t cap_blocks_; /* private */
} ctosa_region;

/* ---------------------------------------------------------------- graph */

ctosa_error *ctosa_graph_create(ctosa_version version, ctosa_graph **out);
void ctosa_graph_free(ctosa_graph *g); /* accepts NULL */

ctosa_version ctosa_graph_version(const ctosa_graph *g);
void ctosa_graph_set_version(ctosa_graph *g, ctosa_version v);

/* 1.1 SoftwareVersion (producing tool); absent when has_software_version is
 * false. Written only for 1.1 graphs. */
typedef struct ctosa_software_version {
    bool present;
    int32_t major, minor, micro;
    const char *modifier;
} ctosa_software_version;
ctosa_software_version ctosa_graph_software_version(const ctosa_graph *g);
ctosa_error *ctosa_graph_set_software_version(ctosa_graph *g, int32_t major, int32_t minor, int32_t micro,
                                              const char *modifier);

uint32_t ctosa_graph_region_count(const ctosa_graph *g);
ctosa_region *ctosa_graph_region(const ctosa_graph *g, uint32_t i);
ctosa_region *ctosa_graph_find_region(const ctosa_graph *g, const char *name);

/* The block a COND_IF / WHILE_LOOP attribute (then_graph, else_graph,
 * cond_graph, body_graph) names, in either form files use: a region of
 * that name (its first block; the form the specification and the official
 * serializer document, and the one to build), or else a block of that name
 * in the calling region `from` (Arm's conformance generator puts the
 * sub-graphs there; from may be NULL), or else in any region. *region (may
 * be NULL) receives the region holding the block. NULL when nothing has
 * that name. Use it wherever such a name is resolved:
 *
 *     const ctosa_region *r;
 *     const ctosa_block *b = ctosa_graph_find_called(g, caller, op->attr.then_graph, &r);
 */
const ctosa_block *ctosa_graph_find_called(const ctosa_graph *g, const ctosa_region *from, const char *name,
                                           const ctosa_region **region);

/* Finds a tensor or shape of block b by name (hash lookup; NULL if none). */
ctosa_tensor *ctosa_block_find_tensor(const ctosa_graph *g, const ctosa_block *b, const char *name);

/* -------------------------------------------------------------- builder */

ctosa_error *ctosa_graph_add_region(ctosa_graph *g, const char *name, ctosa_region **out);
ctosa_error *ctosa_region_add_block(ctosa_graph *g, ctosa_region *r, const char *name, ctosa_block **out);
/* Adds a tensor. shape may be NULL when rank is 0. Duplicate names in one
 * block are an error. out may be NULL. */
ctosa_error *ctosa_block_add_tensor(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype dtype,
                                    uint32_t rank, const int32_t *shape, ctosa_tensor **out);
/* Adds a TosaShape with n int64 values (values may be NULL for a shape that is
 * not constant); values are copied. */
ctosa_error *ctosa_block_add_shape(ctosa_graph *g, ctosa_block *b, const char *name, uint32_t n,
                                   const int64_t *values, ctosa_tensor **out);
/* Constant data from memory. copy = false borrows (see the top of this file). */
ctosa_error *ctosa_tensor_set_data(ctosa_graph *g, ctosa_tensor *t, const void *ptr, uint64_t size,
                                   bool copy);
/* Constant data from a byte range of a file; the file is opened when the graph
 * is written (path), or used as is (fd >= 0 with path NULL). */
ctosa_error *ctosa_tensor_set_data_file(ctosa_graph *g, ctosa_tensor *t, const char *path, int fd,
                                        uint64_t offset, uint64_t size);
/*
 * Deferred (generated) constant data, for weights that must change bytes on
 * the way to the file (a transpose, a narrowing, a repacking) without ever
 * existing whole in memory: the writer asks fill() for the bytes chunk by
 * chunk (at most CTOSA_DATA_CHUNK at a time) while it streams the file, so
 * memory stays bounded whatever the weight's size. `user` is borrowed: it
 * must stay valid while the graph may be written or read.
 * Who reads generated data: ctosa_write_file / ctosa_write_memory and
 * ctosa_tensor_read_data(). (Graph consumers that only know MEMORY and
 * FILE data, e.g. the interpreter and the validator's constant-value
 * rules, read such a tensor through ctosa_tensor_read_data or treat it as
 * an opaque constant.)
 */
ctosa_error *ctosa_tensor_set_data_generated(ctosa_graph *g, ctosa_tensor *t, uint64_t size,
                                             ctosa_data_fill_fn fill, void *user);
/* A ready-made generated source: the bytes of src (MEMORY or FILE data,
 * copied by value; a file stays borrowed as for set_data_file) viewed as
 * [batch, rows, cols] elements of elem_bytes each, with the last two axes
 * swapped: t receives [batch, cols, rows]. This is OIHW -> OHWI (batch O,
 * rows I, cols H*W) and the [N,K] -> [K,N] transpose of Gemm transB.
 * Computed by ctosa_transpose_view_read when written or read. State lives
 * in the graph's arena. */
ctosa_error *ctosa_tensor_set_data_transposed(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *src,
                                              uint64_t batch, uint64_t rows, uint64_t cols,
                                              uint32_t elem_bytes);
/* The streamed transposer itself, for a fill callback that keeps its own
 * descriptor: src (MEMORY or FILE data of exactly batch x rows x cols x
 * unit_bytes bytes, borrowed) viewed as [batch, rows, cols] units of
 * unit_bytes bytes each (any size: merged trailing axes make one unit),
 * with the last two axes swapped. ctosa_transpose_view_read writes bytes
 * [offset, offset + n) of the result into buf (any offset and length, as
 * a ctosa_data_fill_fn may be asked). A memory source is read in place; a
 * file source in tiles of at most 4 MiB (mapped for the time of a tile when
 * it is a borrowed descriptor), so memory stays bounded whatever the size. */
typedef struct ctosa_transpose_view {
    ctosa_data src;
    uint64_t batch, rows, cols;
    uint64_t unit_bytes;
} ctosa_transpose_view;
ctosa_error *ctosa_transpose_view_read(const ctosa_transpose_view *v, uint64_t offset, void *buf, size_t n);
/* Reads bytes [offset, offset + n) of a constant's data, whatever its
 * kind (memory, file range or generated) into buf. */
ctosa_error *ctosa_tensor_read_data(const ctosa_tensor *t, uint64_t offset, void *buf, size_t n);

/* Adds an operator. attr may be NULL (all fields zero). Names, vectors and
 * strings of attr are copied. out may be NULL. */
ctosa_error *ctosa_block_add_op(ctosa_graph *g, ctosa_block *b, ctosa_op_kind kind, uint32_t n_inputs,
                                const char *const *inputs, uint32_t n_outputs, const char *const *outputs,
                                const ctosa_attr *attr, ctosa_op **out);
ctosa_error *ctosa_op_set_location(ctosa_graph *g, ctosa_op *op, const char *text);
ctosa_error *ctosa_block_add_input(ctosa_graph *g, ctosa_block *b, const char *name);
ctosa_error *ctosa_block_add_output(ctosa_graph *g, ctosa_block *b, const char *name);

/* Arena helpers for code that builds graphs: memory lives until graph free.
 * Return NULL only when out of memory. */
void *ctosa_graph_alloc(ctosa_graph *g, size_t size);
const char *ctosa_graph_strdup(ctosa_graph *g, const char *s);

/* Number of elements of a tensor (product of shape; 1 for rank 0). Returns
 * false on overflow past 2^62. */
bool ctosa_tensor_elements(const ctosa_tensor *t, uint64_t *count);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_GRAPH_H */
