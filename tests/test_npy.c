/* test_npy.c - .npy reading/writing: round trips of every dtype's host
 * encoding, conversions to the host encoding, malformed files (exit-2 class
 * errors naming the file and byte offset), and cross-checks with numpy when
 * /usr/bin/python3 has it. */
#include <math.h>
#include <unistd.h>

#include "harness.h"
#include "tensorfile/tensorfile.h"

static void roundtrip(ctosa_dtype t, const void *data, uint32_t rank, const int64_t *shape, uint64_t count) {
    const char *descr = npy_descr_for(t);
    CHECK_MSG(descr != NULL, "%s", ctosa_dtype_short(t));
    if (!descr) return;
    uint64_t nbytes = count * ctosa_host_elem_size(t);
    uint8_t *buf;
    size_t n;
    CHECK_OK(npy_encode(descr, rank, shape, data, nbytes, &buf, &n));
    CHECK((n - nbytes) % 64 == 0); /* header padded to 64 */
    npy_array a;
    CHECK_OK(npy_parse(buf, n, "mem.npy", &a));
    CHECK(a.rank == rank && a.count == count && a.itemsize == (uint32_t)(descr[2] - '0'));
    for (uint32_t i = 0; i < rank; i++) CHECK(a.shape[i] == shape[i]);
    void *host = NULL;
    uint64_t hs = 0;
    CHECK_OK(npy_to_host(&a, t, "x", &host, &hs));
    CHECK_MSG(hs == nbytes && (!nbytes || memcmp(host, data, (size_t)nbytes) == 0), "%s",
              ctosa_dtype_short(t));
    free(host);
    npy_free(&a);
    free(buf);
}

static void test_roundtrip_every_dtype(void) {
    int64_t s23[] = {2, 3}, s4[] = {4};
    uint8_t b[] = {0, 1, 1, 0, 1, 0};
    int8_t i4[] = {-8, 7, 0, -1, 3, 2};
    int8_t i8[] = {-128, 127, 0, 1, -1, 5};
    int16_t i16[] = {-32768, 32767, 0, 1, -1, 5};
    int32_t i32[] = {INT32_MIN, INT32_MAX, 0, 1, -1, 5};
    int64_t i48[] = {-(INT64_C(1) << 47), (INT64_C(1) << 47) - 1, 0, 1, -1, 5};
    int64_t i64[] = {INT64_MIN, INT64_MAX, 0, 1, -1, 5};
    float f32[] = {1.5f, -0.0f, INFINITY, 3.25e-39f, 1e30f, -2};
    uint16_t f16[] = {0x3c00, 0x8000, 0x7c00, 0x0001, 0x7bff, 0xc000};
    uint16_t bf16[] = {0x3f80, 0x8000, 0x7f80, 0x0001, 0x7f7f, 0xc000};
    uint8_t f8[] = {0x00, 0x38, 0x7e, 0x80, 0x01, 0xfe};
    roundtrip(CTOSA_DTYPE_BOOL, b, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT4, i4, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT8, i8, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT16, i16, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT32, i32, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT48, i48, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_INT64, i64, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_SHAPE, i64, 1, s4, 4);
    roundtrip(CTOSA_DTYPE_FP32, f32, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_FP16, f16, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_BF16, bf16, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_FP8E4M3, f8, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_FP8E5M2, f8, 2, s23, 6);
    roundtrip(CTOSA_DTYPE_FP32, f32, 0, NULL, 1); /* rank 0 */
    int64_t s0[] = {3, 0};
    roundtrip(CTOSA_DTYPE_INT32, i32, 2, s0, 0); /* empty */
    /* the file round trip */
    const char *p = th_path(th_tmpdir(), "x.npy");
    CHECK_OK(npy_write_file(p, "<i4", 2, s23, i32, sizeof i32));
    npy_array a;
    CHECK_OK(npy_read_file(p, &a));
    CHECK(a.kind == 'i' && a.itemsize == 4 && a.count == 6 && memcmp(a.data, i32, 24) == 0);
    npy_free(&a);
}

static void test_conversions(void) {
    npy_array a = {0};
    double d[] = {1.0, 1.0 + 1.0 / 2048, 65520.0, -0.5};
    a.kind = 'f';
    a.itemsize = 8;
    a.rank = 1;
    a.shape[0] = 4;
    a.count = 4;
    a.data = d;
    void *h;
    uint64_t n;
    CHECK_OK(npy_to_host(&a, CTOSA_DTYPE_FP16, "t", &h, &n));
    uint16_t *f16 = h;
    /* tie to even; 65520 rounds to infinity in fp16 */
    CHECK(n == 8 && f16[0] == 0x3c00 && f16[1] == 0x3c00 && f16[2] == 0x7c00 && f16[3] == 0xb800);
    free(h);
    CHECK_OK(npy_to_host(&a, CTOSA_DTYPE_FP32, "t", &h, &n));
    CHECK(((float *)h)[1] == 1.0f + 1.0f / 2048 && n == 16);
    free(h);
    CHECK_ERR(npy_to_host(&a, CTOSA_DTYPE_INT32, "input 'q'", &h, &n), CTOSA_ERR_USAGE,
              "input 'q': the graph expects int32 (numpy '<i4'), the file holds float64");
    int64_t v[] = {5, -3, 300};
    a.kind = 'i';
    a.itemsize = 8;
    a.count = 3;
    a.shape[0] = 3;
    a.data = v;
    CHECK_OK(npy_to_host(&a, CTOSA_DTYPE_INT16, "t", &h, &n));
    CHECK(n == 6 && ((int16_t *)h)[2] == 300 && ((int16_t *)h)[1] == -3);
    free(h);
    CHECK_ERR(npy_to_host(&a, CTOSA_DTYPE_INT8, "t", &h, &n), CTOSA_ERR_FORMAT,
              "t: element 2 (int64 300) does not fit int8");
    uint8_t bits[] = {1, 0, 1};
    a.kind = 'b';
    a.itemsize = 1;
    a.data = bits;
    CHECK_OK(npy_to_host(&a, CTOSA_DTYPE_INT32, "t", &h, &n));
    CHECK(((int32_t *)h)[2] == 1);
    free(h);
}

static void expect_bad(const char *bytes, size_t n, const char *needle) {
    npy_array a;
    CHECK_ERR(npy_parse((const uint8_t *)bytes, n, "bad.npy", &a), CTOSA_ERR_FORMAT, needle);
}

/* magic + v1.0 + header text + data_bytes zero bytes into out. */
static size_t mk(const char *hdr, size_t data_bytes, char *out) {
    size_t h = strlen(hdr);
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)h;
    out[9] = 0;
    memcpy(out + 10, hdr, h);
    memset(out + 10 + h, 0, data_bytes);
    return 10 + h + data_bytes;
}

static void test_malformed(void) {
    char buf[256];
    expect_bad("hello", 5, "bad.npy: byte 0: not a .npy file");
    expect_bad("\x93NUMPY\x09\x00\x00\x00", 10, "byte 6: unsupported .npy format version");
    expect_bad("\x93NUMPY\x01\x00\xff\x00{}", 12, "byte 8: header length runs past");
    size_t n = mk("{'descr': 5}", 0, buf);
    expect_bad(buf, n, "byte 20: 'descr' must be");
    const char *ok = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
    n = mk(ok, 8, buf);
    npy_array a;
    CHECK_OK(npy_parse((const uint8_t *)buf, n, "ok.npy", &a));
    CHECK(a.count == 2 && a.kind == 'i');
    npy_free(&a);
    expect_bad(buf, n - 1, "byte 68: data has 7 bytes, shape and dtype '<i4' need 8");
    n = mk("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, buf);
    expect_bad(buf, n, "unsupported dtype '<c8'");
    n = mk("{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }\n", 8, buf);
    expect_bad(buf, n, "fortran_order");
    n = mk("{'descr': '<i4', 'fortran_order': False, 'shape': (2,x), }\n", 8, buf);
    expect_bad(buf, n, "byte 63: expected a dimension");
    n = mk("{'descr': '<i4', 'shape': (2,), 'extra': 1}\n", 8, buf);
    expect_bad(buf, n, "byte 42: unknown header key");
    /* the file variant names the path */
    const char *p = th_path(th_tmpdir(), "trunc.npy");
    th_write(p, "\x93NUMPY", 6);
    CHECK_ERR(npy_read_file(p, &a), CTOSA_ERR_FORMAT, "trunc.npy: byte 0");
}

static void test_numpy_crosscheck(void) {
    if (access("/usr/bin/python3", X_OK) != 0 ||
        th_run(NULL, "/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
        fprintf(stderr, "  (numpy not available: cross-check skipped)\n");
        return;
    }
    const char *dir = th_tmpdir();
    /* ours -> numpy */
    int64_t s[] = {2, 2};
    uint16_t h[] = {0x3c00, 0xc000, 0x7c00, 0x0001};
    CHECK_OK(npy_write_file(th_path(dir, "h.npy"), "<f2", 2, s, h, 8));
    uint8_t b[] = {1, 0, 0, 1};
    CHECK_OK(npy_write_file(th_path(dir, "b.npy"), "|b1", 2, s, b, 4));
    char *out = NULL;
    int rc = th_run(&out,
                    "cd '%s' && /usr/bin/python3 -c \"import numpy as np; a=np.load('h.npy'); "
                    "b=np.load('b.npy'); print(a.dtype, a.shape, a[0,0], a[0,1], a[1,0], "
                    "a[1,1]==2**-24, b.dtype, b.tolist())\"",
                    dir);
    CHECK_MSG(rc == 0 && out &&
                  strstr(out, "float16 (2, 2) 1.0 -2.0 inf True bool "
                              "[[True, False], [False, True]]"),
              "%s", out ? out : "");
    free(out);
    /* numpy -> ours: v2.0 header, big-endian, rank 0, bool */
    rc = th_run(&out,
                "cd '%s' && /usr/bin/python3 -c \"import numpy as np; "
                "np.lib.format.write_array(open('v2.npy','wb'), np.arange(6, dtype='>i2').reshape(3,2), "
                "version=(2,0)); np.save('s.npy', np.float32(2.5)); "
                "np.save('bb.npy', np.array([True, False]))\"",
                dir);
    CHECK(rc == 0);
    free(out);
    npy_array a;
    CHECK_OK(npy_read_file(th_path(dir, "v2.npy"), &a));
    CHECK(a.kind == 'i' && a.itemsize == 2 && a.rank == 2 && a.shape[0] == 3 && ((int16_t *)a.data)[5] == 5 &&
          ((int16_t *)a.data)[1] == 1);
    npy_free(&a);
    CHECK_OK(npy_read_file(th_path(dir, "s.npy"), &a));
    CHECK(a.rank == 0 && a.count == 1 && ((float *)a.data)[0] == 2.5f);
    npy_free(&a);
    CHECK_OK(npy_read_file(th_path(dir, "bb.npy"), &a));
    CHECK(a.kind == 'b' && a.count == 2 && ((uint8_t *)a.data)[0] == 1);
    npy_free(&a);
}

int main(void) {
    RUN(test_roundtrip_every_dtype);
    RUN(test_conversions);
    RUN(test_malformed);
    RUN(test_numpy_crosscheck);
    return th_finish();
}
