/* tensor_load.c - one input tensor from a file: a .npy array, or an ONNX
 * TensorProto .pb (as the ONNX test data sets store them), as an npy_array.
 * Shared by `ctosa run` and the tests. */
#include <stdlib.h>
#include <string.h>

#include "tensorfile/tensorfile.h"
#include "onnx/onnx_tensor.h"

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Reads FILE (.pb via the ONNX reader, anything else as .npy) into an
 * npy_array whose data is malloc'd. */
ctosa_error *npy_read_tensor_file(const char *file, npy_array *a) {
    if (!ends_with(file, ".pb")) return npy_read_file(file, a);
    memset(a, 0, sizeof *a);
    arena ar;
    arena_init(&ar, 0);
    onnx_tensor_value v;
    ctosa_error *e = onnx_read_tensor_file(file, &ar, &v);
    if (!e) {
        char kind = 0;
        uint32_t size = 0;
        switch (v.dtype) {
        case CTOSA_ONNX_FLOAT:
            kind = 'f';
            size = 4;
            break;
        case CTOSA_ONNX_DOUBLE:
            kind = 'f';
            size = 8;
            break;
        case CTOSA_ONNX_FLOAT16:
            kind = 'f';
            size = 2;
            break;
        case CTOSA_ONNX_BFLOAT16:
            kind = 'B';
            size = 2;
            break;
        case CTOSA_ONNX_INT8:
            kind = 'i';
            size = 1;
            break;
        case CTOSA_ONNX_INT16:
            kind = 'i';
            size = 2;
            break;
        case CTOSA_ONNX_INT32:
            kind = 'i';
            size = 4;
            break;
        case CTOSA_ONNX_INT64:
            kind = 'i';
            size = 8;
            break;
        case CTOSA_ONNX_UINT8:
            kind = 'u';
            size = 1;
            break;
        case CTOSA_ONNX_UINT16:
            kind = 'u';
            size = 2;
            break;
        case CTOSA_ONNX_UINT32:
            kind = 'u';
            size = 4;
            break;
        case CTOSA_ONNX_UINT64:
            kind = 'u';
            size = 8;
            break;
        case CTOSA_ONNX_BOOL:
            kind = 'b';
            size = 1;
            break;
        default: break;
        }
        if (!kind) {
            const char *nm = onnx_dtype_numpy_name(v.dtype);
            e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                "%s: tensor element type %s (%d) is not "
                                "supported as an interpreter input",
                                file, nm ? nm : "?", v.dtype);
        } else if (v.rank > NPY_MAX_RANK || v.nbytes != v.count * size) {
            e = ctosa_error_new(CTOSA_ERR_FORMAT,
                                "%s: tensor has rank %u and %llu bytes for %llu "
                                "elements",
                                file, v.rank, (unsigned long long)v.nbytes, (unsigned long long)v.count);
        } else {
            a->kind = kind;
            a->itemsize = size;
            a->rank = v.rank;
            for (uint32_t i = 0; i < v.rank; i++) a->shape[i] = v.dims[i];
            a->count = v.count;
            a->data = malloc(v.nbytes ? (size_t)v.nbytes : 1);
            if (!a->data) e = ctosa_error_nomem();
            else if (v.nbytes) memcpy(a->data, v.data, (size_t)v.nbytes);
        }
    }
    arena_free(&ar);
    return e;
}
