/* tensor_file.h - reading one ONNX TensorProto from a .pb file (as written
 * by onnx.numpy_helper / the ONNX test data sets). Implemented by the ONNX
 * module; used by `ctosa run` and `ctosa lower --bind`. */
#ifndef CTOSA_ONNX_TENSOR_FILE_H
#define CTOSA_ONNX_TENSOR_FILE_H

#include "ctosa/common.h"
#include "util/util.h"

/* ONNX TensorProto.DataType values. */
enum {
    ONNX_UNDEFINED = 0, ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4,
    ONNX_INT16 = 5, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9,
    ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13,
    ONNX_COMPLEX64 = 14, ONNX_COMPLEX128 = 15, ONNX_BFLOAT16 = 16, ONNX_FLOAT8E4M3FN = 17,
    ONNX_FLOAT8E4M3FNUZ = 18, ONNX_FLOAT8E5M2 = 19, ONNX_FLOAT8E5M2FNUZ = 20,
    ONNX_UINT4 = 21, ONNX_INT4 = 22, ONNX_FLOAT4E2M1 = 23
};

#define ONNX_MAX_RANK 16

/* A dense tensor: elements little-endian in ONNX's natural width (float 4
 * bytes, float16/bfloat16 2, int64 8, bool 1, int4/uint4 two per byte low
 * nibble first), row-major. */
typedef struct onnx_tensor_value {
    const char *name;       /* may be "" */
    int32_t dtype;          /* ONNX_* */
    uint32_t rank;
    int64_t dims[ONNX_MAX_RANK];
    uint64_t count;         /* elements */
    const void *data;       /* nbytes bytes, allocated in the given arena */
    uint64_t nbytes;
} onnx_tensor_value;

/* Reads a TensorProto .pb file. Errors name the file and byte offset. */
ctosa_error *onnx_read_tensor_file(const char *path, arena *a, onnx_tensor_value *out);
/* numpy dtype name of an ONNX dtype ("float32", "int64", "bool", ...). */
const char *onnx_dtype_numpy_name(int32_t dtype);

#endif
