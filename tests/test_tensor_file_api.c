/* test_tensor_file_api.c - the public tensor-file API (ctosa/tensor_file.h)
 * through the public headers only: .npy written from an interpreter value
 * and read back byte for byte, the dtype/descr/kind/type_name a reader
 * reports, conversions to host encodings (exact copy, float narrowing,
 * integer range checks with the element named), ONNX TensorProto .pb files
 * (bfloat16, int64), big-endian .npy, malformed input (errors naming the
 * file and byte offset) and atomic writes (nothing left on error). */
#include <unistd.h>

#include "harness.h"

static const char *tmp_path(const char *name) { return th_path(th_tmpdir(), name); }

static void test_npy_roundtrip_int8(void) {
    int64_t shape[] = {2, 3};
    int8_t v[] = {-128, 127, 0, 1, -1, 5};
    ctosa_interp_tensor t = {.name = "y",
                             .dtype = CTOSA_DTYPE_INT8,
                             .rank = 2,
                             .shape = shape,
                             .count = 6,
                             .data = v,
                             .size = sizeof v};
    const char *p = tmp_path("y.npy");
    CHECK_OK(ctosa_tensor_file_write_npy(p, &t));
    size_t n = 0;
    unsigned char *raw = th_read(p, &n);
    CHECK(raw && n > sizeof v && (n - sizeof v) % 64 == 0 && memcmp(raw, "\x93NUMPY\x01\x00", 8) == 0);
    CHECK(raw && n > 64 && memmem(raw, n, "'descr': '|i1'", 14) && memmem(raw, n, "'shape': (2, 3,)", 16));
    CHECK(raw && n > sizeof v && memcmp(raw + n - sizeof v, v, sizeof v) == 0);
    free(raw);
    ctosa_tensor_file f;
    CHECK_OK(ctosa_tensor_file_read(p, &f));
    CHECK(f.dtype == CTOSA_DTYPE_INT8 && strcmp(f.descr, "|i1") == 0 && f.kind == 'i' && f.itemsize == 1);
    CHECK(f.type_name && strcmp(f.type_name, "int8") == 0);
    CHECK(f.rank == 2 && f.shape[0] == 2 && f.shape[1] == 3 && f.count == 6 && f.size == 6);
    CHECK(f.data && memcmp(f.data, v, sizeof v) == 0);
    void *host = NULL;
    uint64_t hs = 0;
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT8, "x", &host, &hs));
    CHECK(hs == 6 && host && memcmp(host, v, 6) == 0);
    free(host);
    /* widening to INT32 keeps values */
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT32, "x", &host, &hs));
    CHECK(hs == 24 && host && ((int32_t *)host)[0] == -128 && ((int32_t *)host)[5] == 5);
    free(host);
    /* -128 does not fit INT4; the same encoding (|i1) is copied as is,
     * range checks are ctosa_interp_set_input's */
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT4, "x", &host, &hs));
    CHECK(hs == 6 && host && memcmp(host, v, 6) == 0);
    free(host);
    /* -128 does not fit BOOL: the element is named */
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_BOOL, "input 'x' (y.npy)", &host, &hs),
              CTOSA_ERR_FORMAT, "input 'x' (y.npy): element 0 (int8 -128) does not fit bool");
    CHECK(host == NULL);
    /* an int array for a float dtype */
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_FP32, "x", &host, &hs), CTOSA_ERR_USAGE,
              "the graph expects fp32 (numpy '<f4'), the file holds int8");
    ctosa_tensor_file_free(&f);
    CHECK(f.data == NULL);
    ctosa_tensor_file_free(&f); /* twice is harmless */
    ctosa_tensor_file_free(NULL);
}

static void test_float_conversions(void) {
    int64_t shape[] = {3};
    float v[] = {1.0f, -2.5f, 65504.0f};
    ctosa_interp_tensor t = {.name = "f",
                             .dtype = CTOSA_DTYPE_FP32,
                             .rank = 1,
                             .shape = shape,
                             .count = 3,
                             .data = v,
                             .size = sizeof v};
    const char *p = tmp_path("f.npy");
    CHECK_OK(ctosa_tensor_file_write_npy(p, &t));
    ctosa_tensor_file f;
    CHECK_OK(ctosa_tensor_file_read(p, &f));
    CHECK(f.dtype == CTOSA_DTYPE_FP32 && strcmp(f.descr, "<f4") == 0 && strcmp(f.type_name, "float32") == 0);
    void *host = NULL;
    uint64_t hs = 0;
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_FP16, "x", &host, &hs));
    uint16_t *h = host;
    CHECK(hs == 6 && h && h[0] == 0x3c00 && h[1] == 0xc100 && h[2] == 0x7bff);
    free(host);
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_BF16, "x", &host, &hs));
    h = host;
    CHECK(hs == 6 && h && h[0] == 0x3f80 && h[1] == 0xc020);
    free(host);
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT32, "x", &host, &hs), CTOSA_ERR_USAGE,
              "the file holds float32");
    ctosa_tensor_file_free(&f);
}

/* A .npy image with the given descr and shape text and raw data. */
static size_t make_npy(uint8_t *buf, const char *descr, const char *shape, const void *data, size_t n) {
    char hdr[128];
    int len =
        snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    while ((10 + len + 1) % 16) hdr[len++] = ' ';
    hdr[len++] = '\n';
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)len;
    buf[9] = 0;
    memcpy(buf + 10, hdr, (size_t)len);
    memcpy(buf + 10 + len, data, n);
    return 10 + (size_t)len + n;
}

static void test_parse_kinds(void) {
    uint8_t buf[256];
    ctosa_tensor_file f;
    /* uint8: no exact TOSA dtype; converts to INT8 when values fit */
    uint8_t u[] = {1, 200};
    size_t n = make_npy(buf, "|u1", "(2,)", u, 2);
    CHECK_OK(ctosa_tensor_file_parse_npy(buf, n, "u.npy", &f));
    CHECK(f.dtype == CTOSA_DTYPE_UNKNOWN && strcmp(f.descr, "|u1") == 0 && f.kind == 'u');
    void *host = NULL;
    uint64_t hs = 0;
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT8, "u", &host, &hs), CTOSA_ERR_FORMAT,
              "u: element 1 (uint8 200) does not fit int8");
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT16, "u", &host, &hs));
    CHECK(hs == 4 && host && ((int16_t *)host)[1] == 200);
    free(host);
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_BOOL, "u", &host, &hs), CTOSA_ERR_FORMAT,
              "u: element 1 (uint8 200) does not fit bool");
    ctosa_tensor_file_free(&f);
    /* '<u2' holding bfloat16 bits converts to BF16 as is */
    uint16_t bits[] = {0x3f80, 0xc020};
    n = make_npy(buf, "<u2", "(2,)", bits, 4);
    CHECK_OK(ctosa_tensor_file_parse_npy(buf, n, "b.npy", &f));
    CHECK(f.dtype == CTOSA_DTYPE_UNKNOWN && strcmp(f.type_name, "uint16") == 0);
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_BF16, "b", &host, &hs));
    CHECK(hs == 4 && host && memcmp(host, bits, 4) == 0);
    free(host);
    ctosa_tensor_file_free(&f);
    /* big-endian int16 reads as little-endian values */
    uint8_t be[] = {0x01, 0x02, 0xff, 0xfe};
    n = make_npy(buf, ">i2", "(1, 2)", be, 4);
    CHECK_OK(ctosa_tensor_file_parse_npy(buf, n, "be.npy", &f));
    CHECK(f.dtype == CTOSA_DTYPE_INT16 && strcmp(f.descr, "<i2") == 0 && f.rank == 2 && f.shape[1] == 2);
    CHECK(f.data && ((int16_t *)f.data)[0] == 0x0102 && ((int16_t *)f.data)[1] == -2);
    ctosa_tensor_file_free(&f);
    /* float64: UNKNOWN dtype, narrows to FP32 */
    double d[] = {0.5};
    n = make_npy(buf, "<f8", "()", d, 8);
    CHECK_OK(ctosa_tensor_file_parse_npy(buf, n, "d.npy", &f));
    CHECK(f.dtype == CTOSA_DTYPE_UNKNOWN && f.rank == 0 && f.count == 1 &&
          strcmp(f.type_name, "float64") == 0);
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_FP32, "d", &host, &hs));
    CHECK(hs == 4 && host && *(float *)host == 0.5f);
    free(host);
    ctosa_tensor_file_free(&f);
}

static void test_malformed(void) {
    ctosa_tensor_file f;
    CHECK_ERR(ctosa_tensor_file_parse_npy("garbage!!!!!", 12, "g.npy", &f), CTOSA_ERR_FORMAT,
              "g.npy: byte 0: not a .npy file");
    CHECK(f.data == NULL);
    uint8_t buf[256];
    int32_t v[] = {1, 2};
    size_t n = make_npy(buf, "<i4", "(3,)", v, 8); /* 8 bytes for 3 elements */
    char want[128];
    snprintf(want, sizeof want, "short.npy: byte %zu: data has 8 bytes, shape and dtype '<i4' need 12",
             n - 8);
    CHECK_ERR(ctosa_tensor_file_parse_npy(buf, n, "short.npy", &f), CTOSA_ERR_FORMAT, want);
    const char *missing = tmp_path("missing.npy");
    ctosa_error *e = ctosa_tensor_file_read(missing, &f);
    CHECK(e && strstr(ctosa_error_message(e), missing));
    ctosa_error_free(e);
    CHECK_ERR(ctosa_tensor_file_to_host(NULL, CTOSA_DTYPE_INT8, "w", (void **)&e, &(uint64_t){0}),
              CTOSA_ERR_USAGE, "w: not a tensor");
}

static void test_write_errors_leave_nothing(void) {
    int64_t shape[] = {2};
    uint8_t v[] = {1, 2};
    const char *p = tmp_path("fp4.npy");
    ctosa_interp_tensor t = {.name = "q",
                             .dtype = CTOSA_DTYPE_FP4E2M1,
                             .rank = 1,
                             .shape = shape,
                             .count = 2,
                             .data = v,
                             .size = 2};
    CHECK(ctosa_npy_descr(CTOSA_DTYPE_FP4E2M1) == NULL);
    CHECK_ERR(ctosa_tensor_file_write_npy(p, &t), CTOSA_ERR_UNSUPPORTED, "cannot be written as .npy");
    CHECK(access(p, F_OK) != 0);
    /* size disagreeing with count */
    t.dtype = CTOSA_DTYPE_INT16;
    p = tmp_path("bad.npy");
    CHECK_ERR(ctosa_tensor_file_write_npy(p, &t), CTOSA_ERR_USAGE, "tensor 'q' has rank 1 and 2 bytes for 2");
    CHECK(access(p, F_OK) != 0);
    /* a directory that does not exist */
    t.dtype = CTOSA_DTYPE_INT8;
    p = tmp_path("no/such/dir/x.npy");
    ctosa_error *e = ctosa_tensor_file_write_npy(p, &t);
    CHECK(e != NULL && ctosa_error_code(e) == CTOSA_ERR_IO);
    ctosa_error_free(e);
    CHECK(strcmp(ctosa_npy_descr(CTOSA_DTYPE_BF16), "<u2") == 0 &&
          strcmp(ctosa_npy_descr(CTOSA_DTYPE_INT48), "<i8") == 0 &&
          strcmp(ctosa_npy_descr(CTOSA_DTYPE_BOOL), "|b1") == 0);
}

/* Protobuf helpers for a TensorProto: dims (1), data_type (2), name (8),
 * raw_data (9). */
static size_t pb_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static size_t make_tensor_pb(uint8_t *buf, const int64_t *dims, uint32_t rank, int dtype, const void *raw,
                             size_t n) {
    size_t k = 0;
    for (uint32_t i = 0; i < rank; i++) {
        buf[k++] = 0x08;
        k += pb_varint(buf + k, (uint64_t)dims[i]);
    }
    buf[k++] = 0x10;
    k += pb_varint(buf + k, (uint64_t)dtype);
    buf[k++] = 0x42;
    buf[k++] = 1;
    buf[k++] = 'x';
    buf[k++] = 0x4a;
    k += pb_varint(buf + k, n);
    memcpy(buf + k, raw, n);
    return k + n;
}

static void test_tensorproto(void) {
    uint8_t buf[256];
    int64_t dims[] = {1, 3};
    uint16_t bf[] = {0x3f80, 0xc020, 0x0000};
    size_t n = make_tensor_pb(buf, dims, 2, 16 /* BFLOAT16 */, bf, sizeof bf);
    const char *p = tmp_path("bf.pb");
    CHECK(th_write(p, buf, n) == 0);
    ctosa_tensor_file f;
    CHECK_OK(ctosa_tensor_file_read(p, &f));
    CHECK(f.dtype == CTOSA_DTYPE_BF16 && f.kind == 'B' && strcmp(f.descr, "<u2") == 0 &&
          strcmp(f.type_name, "bfloat16") == 0 && f.rank == 2 && f.shape[1] == 3 && f.size == 6);
    void *host = NULL;
    uint64_t hs = 0;
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_FP32, "bf", &host, &hs));
    CHECK(hs == 12 && host && ((float *)host)[0] == 1.0f && ((float *)host)[1] == -2.5f);
    free(host);
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_BF16, "bf", &host, &hs));
    CHECK(hs == 6 && host && memcmp(host, bf, 6) == 0);
    free(host);
    ctosa_tensor_file_free(&f);

    int64_t d1[] = {2};
    int64_t iv[] = {-5, (int64_t)1 << 40};
    n = make_tensor_pb(buf, d1, 1, 7 /* INT64 */, iv, sizeof iv);
    p = tmp_path("i64.pb");
    CHECK(th_write(p, buf, n) == 0);
    CHECK_OK(ctosa_tensor_file_read(p, &f));
    CHECK(f.dtype == CTOSA_DTYPE_INT64 && strcmp(f.descr, "<i8") == 0 && f.count == 2);
    CHECK_ERR(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT32, "i64.pb", &host, &hs), CTOSA_ERR_FORMAT,
              "i64.pb: element 1 (int64 1099511627776) does not fit int32");
    CHECK_OK(ctosa_tensor_file_to_host(&f, CTOSA_DTYPE_INT48, "i64.pb", &host, &hs));
    CHECK(hs == 16 && host && ((int64_t *)host)[1] == (int64_t)1 << 40);
    free(host);
    ctosa_tensor_file_free(&f);

    /* a string tensor is not an interpreter input; truncated raw_data fails at a byte */
    n = make_tensor_pb(buf, d1, 1, 8 /* STRING */, "", 0);
    p = tmp_path("s.pb");
    CHECK(th_write(p, buf, n) == 0);
    ctosa_error *e = ctosa_tensor_file_read(p, &f);
    CHECK(e && strstr(ctosa_error_message(e), p));
    ctosa_error_free(e);
    n = make_tensor_pb(buf, d1, 1, 7, iv, sizeof iv);
    p = tmp_path("trunc.pb");
    CHECK(th_write(p, buf, n - 3) == 0);
    e = ctosa_tensor_file_read(p, &f);
    CHECK(e && ctosa_error_code(e) == CTOSA_ERR_FORMAT && strstr(ctosa_error_message(e), p));
    ctosa_error_free(e);
}

int main(void) {
    RUN(test_npy_roundtrip_int8);
    RUN(test_float_conversions);
    RUN(test_parse_kinds);
    RUN(test_malformed);
    RUN(test_write_errors_leave_nothing);
    RUN(test_tensorproto);
    return th_finish();
}
