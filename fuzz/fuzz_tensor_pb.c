/* fuzz_tensor_pb.c - the TensorProto .pb reader (onnx_read_tensor_file),
 * which only reads files: each input is written to a scratch folder that
 * also holds a fixed external-data file ext.bin, so that external data
 * resolution (locations, offsets, lengths, escapes) is exercised too. */
#include "fuzz_common.h"
#include "onnx/onnx_tensor.h"

FUZZ_ENTRY(tensor_pb) {
    if (!fuzz_sandbox_with_ext()) return 0;
    const char *path = fuzz_write_scratch("input.pb", data, size);
    if (!path) return 0;
    arena a;
    arena_init(&a, 0);
    onnx_tensor_value v;
    ctosa_error *e = onnx_read_tensor_file(path, &a, &v);
    if (!e) {
        /* Touch every byte so that ASan sees a short buffer. */
        const volatile uint8_t *p = v.data;
        uint8_t acc = 0;
        for (uint64_t i = 0; i < v.nbytes && v.dtype != CTOSA_ONNX_STRING; i++) acc ^= p[i];
        (void)acc;
        (void)onnx_dtype_numpy_name(v.dtype);
    }
    fuzz_drop(e);
    arena_free(&a);
    return 0;
}
