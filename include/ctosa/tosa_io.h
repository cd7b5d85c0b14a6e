/*
 * ctosa/tosa_io.h - reading and writing TOSA flatbuffer files.
 *
 * Writer: one pass, to a file or to memory. Files are written to a temporary
 * name in the same folder and renamed, so a failure never leaves a partial
 * file. The same graph always gives byte-identical output.
 *
 * Layouts: below 2 GiB constant data is kept inline in TosaTensor.data
 * (readable by every 1.0 reader). When the flatbuffer would pass 2^31-1 bytes,
 * or when CTOSA_LAYOUT_EXTERNAL is asked for, the flatbuffer comes first and
 * the constant data follows as raw segments aligned to 64 bytes; each tensor
 * then has `offset` (from the start of the file) and `size` set and an empty
 * `data` vector (the layout of the TOSA 1.0-final schema).
 *
 * Reader: the file is mapped, verified completely (every offset, vtable,
 * vector, string and union bounds-checked before use: files are untrusted),
 * and decoded into a ctosa_graph whose constant tensors point into the
 * mapping (zero copy). The mapping lives as long as the graph.
 */
#ifndef CTOSA_TOSA_IO_H
#define CTOSA_TOSA_IO_H

#include "ctosa/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctosa_layout {
    CTOSA_LAYOUT_AUTO = 0, /* inline unless the flatbuffer would exceed 2^31-1 bytes */
    CTOSA_LAYOUT_INLINE,   /* always inline (error if too large) */
    CTOSA_LAYOUT_EXTERNAL  /* always offset/size segments after the flatbuffer */
} ctosa_layout;

typedef struct ctosa_write_options {
    ctosa_layout layout;
    uint32_t data_alignment; /* alignment of constant data, power of two >= 8; 0 = 64 */
} ctosa_write_options;

void ctosa_write_options_init(ctosa_write_options *opt);

/* Writes g to path (temporary name + rename). opt may be NULL. */
ctosa_error *ctosa_write_file(const ctosa_graph *g, const char *path, const ctosa_write_options *opt);
/* Writes g to a malloc'd buffer the caller frees with free(). */
ctosa_error *ctosa_write_memory(const ctosa_graph *g, const ctosa_write_options *opt, void **buf,
                                size_t *size);

typedef struct ctosa_read_options {
    bool require_identifier; /* reject files without the "TOSA" identifier (default: accept) */
} ctosa_read_options;

void ctosa_read_options_init(ctosa_read_options *opt);

/* Maps, verifies and decodes path. opt may be NULL. */
ctosa_error *ctosa_read_file(const char *path, const ctosa_read_options *opt, ctosa_graph **out);
/* Same over a caller-owned buffer, which must outlive the graph. name is used
 * in messages (may be NULL). */
ctosa_error *ctosa_read_memory(const void *buf, size_t size, const char *name, const ctosa_read_options *opt,
                               ctosa_graph **out);

/* What the reader learnt about the file a graph came from. */
typedef struct ctosa_file_info {
    bool from_file;           /* false for built graphs */
    uint64_t file_size;       /* bytes */
    uint64_t flatbuffer_size; /* bytes of the flatbuffer part (== file_size when inline) */
    bool external_data;       /* offset/size layout used by at least one tensor */
    bool has_identifier;
    uint32_t min_data_alignment; /* smallest power-of-two alignment of any constant's data */
    uint64_t constant_bytes;     /* total bytes of constant data */
} ctosa_file_info;

ctosa_file_info ctosa_graph_file_info(const ctosa_graph *g);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_TOSA_IO_H */
