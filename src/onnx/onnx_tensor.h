/* onnx_tensor.h - dense values of ONNX tensors (onnx_tensor.c), and one
 * TensorProto read from a standalone .pb file (as onnx.numpy_helper and the
 * ONNX test data sets write them; the tensor-file module and `ctosa lower
 * --bind` read .pb files through it). */
#ifndef CTOSA_ONNX_TENSOR_H
#define CTOSA_ONNX_TENSOR_H

#include "ctosa/onnx.h"
#include "util/util.h"

#define ONNX_MAX_RANK 16

/* A dense tensor: elements little-endian in ONNX's natural width (float 4
 * bytes, float16/bfloat16 2, int64 8, bool 1, int4/uint4 two per byte low
 * nibble first), row-major. */
typedef struct onnx_tensor_value {
    const char *name; /* may be "" */
    int32_t dtype;    /* CTOSA_ONNX_* */
    uint32_t rank;
    int64_t dims[ONNX_MAX_RANK];
    uint64_t count;   /* elements */
    const void *data; /* nbytes bytes, allocated in the given arena */
    uint64_t nbytes;
} onnx_tensor_value;

/* Reads a TensorProto .pb file. Errors name the file and byte offset. */
ctosa_error *onnx_read_tensor_file(const char *path, arena *a, onnx_tensor_value *out);
/* numpy dtype name of an ONNX dtype ("float32", "int64", "bool", ...). */
const char *onnx_dtype_numpy_name(int32_t dtype);

#endif
