/*
 * ctosa/tensor_file.h - tensors in files: NumPy .npy arrays and ONNX
 * TensorProto .pb files (as onnx.numpy_helper and the ONNX test data sets
 * write them), read into a plain value, converted to a TOSA dtype's host
 * encoding (ctosa/interp.h), and interpreter values written back as .npy.
 * This is what `ctosa run` uses for --input and its outputs.
 *
 *     ctosa_tensor_file t;
 *     ctosa_error *e = ctosa_tensor_file_read("x.npy", &t);     // or "x.pb"
 *     void *host; uint64_t size;
 *     if (!e) e = ctosa_tensor_file_to_host(&t, CTOSA_DTYPE_INT8, "input 'x'", &host, &size);
 *     if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_INT8, t.rank, t.shape, host, size);
 *     free(host);
 *     ctosa_tensor_file_free(&t);
 *
 *     ctosa_interp_tensor y;
 *     e = ctosa_interp_get_output(it, "y", &y);
 *     if (!e) e = ctosa_tensor_file_write_npy("y.npy", &y);   // atomic
 *
 * .npy: format versions 1.0, 2.0 and 3.0, C order, little- or big-endian
 * (data is little-endian after reading); element kinds float (2, 4, 8
 * bytes), signed and unsigned integers (1-8 bytes) and bool. .pb: float,
 * double, float16, bfloat16, int8..int64, uint8..uint64, bool. Errors name
 * the file and the byte offset.
 */
#ifndef CTOSA_TENSOR_FILE_H
#define CTOSA_TENSOR_FILE_H

#include "ctosa/interp.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTOSA_TENSOR_FILE_MAX_RANK 16

/* An array read from a file. Free with ctosa_tensor_file_free(). */
typedef struct ctosa_tensor_file {
    /* The TOSA dtype whose host encoding the data already is (FP32, FP16,
     * BF16 (.pb bfloat16), INT8, INT16, INT32, INT64, BOOL); UNKNOWN for
     * arrays with no such dtype (unsigned integers, float64). A .npy '<u2'
     * holding bfloat16 bits reads as UNKNOWN: convert it with
     * ctosa_tensor_file_to_host(..., CTOSA_DTYPE_BF16, ...). */
    ctosa_dtype dtype;
    /* numpy description of the data as it is in memory: descr "<f4",
     * "|i1", "|b1", ... (bfloat16 from a .pb: "<u2", its bits); kind 'f'
     * float, 'i' signed, 'u' unsigned, 'b' bool, 'B' bfloat16 bits;
     * type_name "float32", "int8", "bfloat16", ... */
    char descr[8];
    char kind;
    const char *type_name;
    uint32_t itemsize; /* bytes per element */
    uint32_t rank;
    int64_t shape[CTOSA_TENSOR_FILE_MAX_RANK];
    uint64_t count; /* elements */
    void *data;     /* count * itemsize bytes, little-endian, row-major */
    uint64_t size;  /* bytes of data */
} ctosa_tensor_file;

/* Reads path: an ONNX TensorProto when the name ends in ".pb", a .npy
 * file otherwise. On error *out is empty (freeing it is harmless). */
ctosa_error *ctosa_tensor_file_read(const char *path, ctosa_tensor_file *out);
/* Parses a whole .npy image in memory; name is used in messages. */
ctosa_error *ctosa_tensor_file_parse_npy(const void *buf, uint64_t size, const char *name,
                                         ctosa_tensor_file *out);
void ctosa_tensor_file_free(ctosa_tensor_file *t); /* accepts NULL */

/* Converts t to the host encoding of dtype in a malloc'd buffer (*size
 * bytes; the caller frees *host with free()). Arrays already in that
 * encoding (the numpy descr ctosa_npy_descr(dtype)) are copied as they are
 * (the range of INT4, INT48 and BOOL is then checked by
 * ctosa_interp_set_input); floats convert to any float dtype (round to
 * nearest even); integers and bools convert to any integer dtype or BOOL
 * when every value fits. Anything else (a float array for an integer
 * dtype, a value out of range) fails naming `what` (e.g. "input 'x'
 * (x.npy)") and the element. */
ctosa_error *ctosa_tensor_file_to_host(const ctosa_tensor_file *t, ctosa_dtype dtype, const char *what,
                                       void **host, uint64_t *size);

/* numpy descr of a TOSA dtype's host encoding ("<f4", "|b1", "<u2" for
 * BF16 bits, "|u1" for FP8 bits, "<i8" for INT48/INT64/SHAPE, "|i1" for
 * INT4); NULL for dtypes without one. */
const char *ctosa_npy_descr(ctosa_dtype dtype);

/* Writes a tensor value (host encoding, e.g. from ctosa_interp_get_output)
 * as a .npy file with ctosa_npy_descr(t->dtype), atomically (temporary
 * file + rename: nothing is left on error). CTOSA_ERR_UNSUPPORTED for a
 * dtype without a descr. */
ctosa_error *ctosa_tensor_file_write_npy(const char *path, const ctosa_interp_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_TENSOR_FILE_H */
