/* fuzz_npy.c - the .npy reader (npy_parse) and the conversion to every
 * host dtype (npy_to_host). */
#include "fuzz_common.h"
#include "interp/npy.h"

FUZZ_ENTRY(npy) {
    npy_array a;
    ctosa_error *e = npy_parse(data, size, "fuzz.npy", &a);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
    static const ctosa_dtype targets[] = {
        CTOSA_DTYPE_BOOL, CTOSA_DTYPE_INT4, CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16,
        CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT48, CTOSA_DTYPE_INT64, CTOSA_DTYPE_FP32,
        CTOSA_DTYPE_FP16, CTOSA_DTYPE_BF16, CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP8E5M2,
        CTOSA_DTYPE_SHAPE};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        void *host = NULL;
        uint64_t n = 0;
        e = npy_to_host(&a, targets[i], "x", &host, &n);
        if (!e && n != a.count * ctosa_host_elem_size(targets[i]))
            fuzz_fail("npy_to_host size mismatch", NULL);
        fuzz_drop(e);
        free(host);
    }
    npy_free(&a);
    return 0;
}
