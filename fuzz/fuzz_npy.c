/* fuzz_npy.c - the .npy reader (npy_parse) and the conversion to every
 * host dtype (npy_to_host), then the same bytes through the public
 * tensor-file API (ctosa/tensor_file.h: parse, convert to every dtype, and
 * for an accepted conversion write the value back as .npy and read it
 * again: same element count and bytes). */
#include <string.h>

#include "ctosa/tensor_file.h"
#include "fuzz_common.h"
#include "tensorfile/tensorfile.h"

static const ctosa_dtype targets[] = {
    CTOSA_DTYPE_BOOL,    CTOSA_DTYPE_INT4,    CTOSA_DTYPE_INT8, CTOSA_DTYPE_INT16, CTOSA_DTYPE_INT32,
    CTOSA_DTYPE_INT48,   CTOSA_DTYPE_INT64,   CTOSA_DTYPE_FP32, CTOSA_DTYPE_FP16,  CTOSA_DTYPE_BF16,
    CTOSA_DTYPE_FP8E4M3, CTOSA_DTYPE_FP8E5M2, CTOSA_DTYPE_SHAPE};

static void public_api(const uint8_t *data, size_t size) {
    ctosa_tensor_file t;
    ctosa_error *e = ctosa_tensor_file_parse_npy(data, size, "fuzz.npy", &t);
    if (e) {
        fuzz_drop(e);
        ctosa_tensor_file_free(&t);
        return;
    }
    if (t.size != t.count * t.itemsize) fuzz_fail("tensor file size != count * itemsize", NULL);
    bool wrote = false;
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        void *host = NULL;
        uint64_t n = 0;
        e = ctosa_tensor_file_to_host(&t, targets[i], "fuzz", &host, &n);
        /* Write it back and read it again (dtypes whose every bit pattern
         * is a value: BOOL, INT4 and INT48 are range-checked on reading). */
        bool plain = targets[i] == CTOSA_DTYPE_INT8 || targets[i] == CTOSA_DTYPE_INT16 ||
                     targets[i] == CTOSA_DTYPE_INT32 || targets[i] == CTOSA_DTYPE_INT64 ||
                     targets[i] == CTOSA_DTYPE_FP32 || targets[i] == CTOSA_DTYPE_FP16;
        if (!e && !wrote && plain) {
            wrote = true;
            const char *dir = fuzz_scratch_dir();
            char path[1024];
            snprintf(path, sizeof path, "%s/back.npy", dir ? dir : ".");
            ctosa_interp_tensor v = {.name = "x",
                                     .dtype = targets[i],
                                     .rank = t.rank,
                                     .shape = t.shape,
                                     .count = t.count,
                                     .data = host,
                                     .size = n};
            if (dir) {
                ctosa_error *e2 = ctosa_tensor_file_write_npy(path, &v);
                if (!e2) {
                    ctosa_tensor_file b;
                    e2 = ctosa_tensor_file_read(path, &b);
                    if (e2) fuzz_fail("a written .npy does not read back", e2);
                    if (b.count != t.count || b.size != n || (n && memcmp(b.data, host, n)))
                        fuzz_fail("a written .npy reads back different", NULL);
                    ctosa_tensor_file_free(&b);
                }
                fuzz_drop(e2);
            }
        }
        fuzz_drop(e);
        free(host);
    }
    ctosa_tensor_file_free(&t);
}

FUZZ_ENTRY(npy) {
    public_api(data, size);
    npy_array a;
    ctosa_error *e = npy_parse(data, size, "fuzz.npy", &a);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
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
