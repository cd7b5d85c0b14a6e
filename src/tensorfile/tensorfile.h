/* tensorfile.h - the tensor-file module inside the library: NumPy .npy
 * files (format versions 1.0, 2.0 and 3.0; C order; little- or big-endian
 * on read, little-endian on write; npy.c), ONNX TensorProto .pb files read
 * into the same array (tensor_load.c, through the ONNX reader), and the
 * conversion to the interpreter's host encoding (ctosa/interp.h). The
 * public API over it is ctosa/tensor_file.h (tensor_file.c); the lowering
 * (--bind) and the tests use this header. */
#ifndef CTOSA_TENSORFILE_H
#define CTOSA_TENSORFILE_H

#include "ctosa/interp.h"
#include "util/util.h"

#define NPY_MAX_RANK 16

/* An array as numpy describes it: kind 'f' float, 'i' signed, 'u' unsigned,
 * 'b' bool, plus 'B' for bfloat16 bits (ONNX tensors only); itemsize in
 * bytes; data little-endian after reading. */
typedef struct npy_array {
    char kind;
    uint32_t itemsize;
    uint32_t rank;
    int64_t shape[NPY_MAX_RANK];
    uint64_t count;
    void *data; /* malloc'd, count * itemsize bytes */
} npy_array;

/* Parses a whole .npy image; name is used in messages ("x.npy: byte 23:
 * ..."). */
ctosa_error *npy_parse(const uint8_t *buf, uint64_t size, const char *name, npy_array *out);
ctosa_error *npy_read_file(const char *path, npy_array *out);
/* Reads a .npy file, or an ONNX TensorProto when the name ends in ".pb"
 * (data malloc'd; free with npy_free). */
ctosa_error *npy_read_tensor_file(const char *path, npy_array *out);
void npy_free(npy_array *a);

/* numpy descr of a TOSA dtype in the host encoding ("<f4", "|b1", "<u2" for
 * BF16 bits, "|u1" for FP8 bits, "<i8" for INT48/INT64/SHAPE, "|i1" for
 * INT4); NULL if none. */
const char *npy_descr_for(ctosa_dtype t);

/* Builds a .npy image (v1.0 header padded to 64 bytes) in a malloc'd
 * buffer. data holds count elements of descr's size. */
ctosa_error *npy_encode(const char *descr, uint32_t rank, const int64_t *shape, const void *data,
                        uint64_t nbytes, uint8_t **buf, size_t *size);
/* Writes a .npy file atomically (temporary + rename). */
ctosa_error *npy_write_file(const char *path, const char *descr, uint32_t rank, const int64_t *shape,
                            const void *data, uint64_t nbytes);

/* Converts a to the host encoding of dtype t in a malloc'd buffer (*size
 * bytes). Exact element types are copied; floats convert to any float
 * dtype (rounding to nearest even); integers and bools convert to any
 * integer dtype when every value fits. Anything else, or a value that does
 * not fit, fails naming what (the tensor) and the element. */
ctosa_error *npy_to_host(const npy_array *a, ctosa_dtype t, const char *what, void **host, uint64_t *size);
/* "float32", "int8", "bfloat16", ... for messages. */
const char *npy_kind_name(char kind, uint32_t itemsize);

#endif
