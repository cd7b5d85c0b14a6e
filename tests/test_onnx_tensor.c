/* test_onnx_tensor.c - standalone TensorProto files (onnx_read_tensor_file)
 * and TensorProto decoding rules: every storage form, packed and unpacked
 * typed fields, and the malformed cases, each named with file and offset. */
#include <sys/stat.h>

#include "ctosa/onnx.h"
#include "harness.h"
#include "onnx/onnx_tensor.h"
#include "util/util.h"

#define TDATA CTOSA_SOURCE_DIR "/tests/data/onnx/tensors/"

/* ------------------------------------------------ a tiny protobuf writer */
typedef struct wbuf {
    uint8_t b[512];
    size_t n;
} wbuf;

static void w_varint(wbuf *w, uint64_t v) {
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        w->b[w->n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
}
static void w_tag(wbuf *w, uint32_t num, int wire) { w_varint(w, (uint64_t)num << 3 | (uint64_t)wire); }
static void w_uint(wbuf *w, uint32_t num, uint64_t v) {
    w_tag(w, num, 0);
    w_varint(w, v);
}
static void w_bytes(wbuf *w, uint32_t num, const void *p, size_t n) {
    w_tag(w, num, 2);
    w_varint(w, n);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void w_f32(wbuf *w, uint32_t num, float f) {
    w_tag(w, num, 5);
    memcpy(w->b + w->n, &f, 4);
    w->n += 4;
}

static const char *write_tmp(const char *name, const wbuf *w) {
    const char *p = th_path(th_tmpdir(), name);
    CHECK(th_write(p, w->b, w->n) == 0);
    return p;
}

static ctosa_error *read_t(const char *path, arena *a, onnx_tensor_value *v) {
    return onnx_read_tensor_file(path, a, v);
}

/* ------------------------------------------------------------- good files */
static void test_files(void) {
    arena a;
    arena_init(&a, 0);
    onnx_tensor_value v;

    CHECK_OK(read_t(TDATA "f32_raw.pb", &a, &v));
    CHECK(v.dtype == CTOSA_ONNX_FLOAT && v.rank == 3 && v.dims[0] == 2 && v.dims[2] == 4 && v.count == 24 &&
          v.nbytes == 96);
    CHECK(!strcmp(v.name, "x"));
    bool ok = true;
    for (int i = 0; i < 24; i++) {
        float f;
        memcpy(&f, (const uint8_t *)v.data + 4 * i, 4);
        ok &= f == i * 0.5f;
    }
    CHECK(ok);

    CHECK_OK(read_t(TDATA "f32_typed.pb", &a, &v));
    float f3[3];
    CHECK(v.nbytes == 12);
    memcpy(f3, v.data, 12);
    CHECK(f3[0] == 1.0f && f3[1] == -2.0f && f3[2] == 3.5f);

    CHECK_OK(read_t(TDATA "i64_typed.pb", &a, &v));
    int64_t i4[4];
    CHECK(v.nbytes == 32 && v.rank == 2);
    memcpy(i4, v.data, 32);
    CHECK(i4[0] == 1 && i4[1] == -1 && i4[2] == (int64_t)1 << 33 && i4[3] == 0);

    CHECK_OK(read_t(TDATA "f16_typed.pb", &a, &v));
    CHECK(v.dtype == CTOSA_ONNX_FLOAT16 && v.nbytes == 4 && !memcmp(v.data, "\x00\x3c\x00\xc0", 4));

    CHECK_OK(read_t(TDATA "bool_raw.pb", &a, &v));
    CHECK(v.dtype == CTOSA_ONNX_BOOL && v.nbytes == 3 && !memcmp(v.data, "\x01\x00\x01", 3));

    CHECK_OK(read_t(TDATA "str.pb", &a, &v));
    CHECK(v.dtype == CTOSA_ONNX_STRING && v.count == 2);
    if (v.count == 2) {
        const ctosa_onnx_bytes *s = v.data;
        CHECK(s[0].n == 5 && !memcmp(s[0].p, "hello", 5) && s[1].n == 1 && s[1].p[0] == 'w');
    }
    /* External data beside the tensor file (copied: the mapping is closed). */
    CHECK_OK(read_t(TDATA "ext.pb", &a, &v));
    int32_t e3[3];
    CHECK(v.nbytes == 12);
    memcpy(e3, v.data, 12);
    CHECK(e3[0] == 7 && e3[1] == 8 && e3[2] == 9);
    arena_free(&a);
}

static void test_numpy_names(void) {
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_FLOAT), "float32"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_INT64), "int64"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_BOOL), "bool"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_FLOAT16), "float16"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_DOUBLE), "float64"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_UINT8), "uint8"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_BFLOAT16), "bfloat16"));
    CHECK(!strcmp(onnx_dtype_numpy_name(CTOSA_ONNX_INT4), "int4"));
    CHECK(onnx_dtype_numpy_name(0) == NULL && onnx_dtype_numpy_name(27) == NULL &&
          onnx_dtype_numpy_name(-1) == NULL);
    uint64_t b;
    CHECK(ctosa_onnx_dtype_storage(CTOSA_ONNX_INT4, 5, &b) && b == 3);
    CHECK(ctosa_onnx_dtype_storage(CTOSA_ONNX_INT2, 5, &b) && b == 2);
    CHECK(ctosa_onnx_dtype_storage(CTOSA_ONNX_COMPLEX128, 2, &b) && b == 32);
    CHECK(!ctosa_onnx_dtype_storage(CTOSA_ONNX_DOUBLE, UINT64_MAX / 4, &b));
}

/* ---------------------------------------------------- typed-field layouts */
static void test_typed_layouts(void) {
    arena a;
    arena_init(&a, 0);
    onnx_tensor_value v;
    wbuf w = {0};
    /* float_data unpacked: three separate fixed32 fields. */
    w_uint(&w, 1, 3);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_f32(&w, 4, 1.0f);
    w_f32(&w, 4, 2.0f);
    w_f32(&w, 4, 3.0f);
    CHECK_OK(read_t(write_tmp("unpacked.pb", &w), &a, &v));
    float f[3] = {0};
    if (v.nbytes == 12) memcpy(f, v.data, 12);
    CHECK(v.nbytes == 12 && f[0] == 1.0f && f[2] == 3.0f);

    /* int64_data split into two packed runs with another field between, and
     * dims given unpacked. */
    w.n = 0;
    w_uint(&w, 1, 2);
    w_uint(&w, 1, 2);
    w_uint(&w, 2, CTOSA_ONNX_INT64);
    uint8_t run1[] = {0x05, 0x7f},
            run2[] = {0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    w_bytes(&w, 7, run1, sizeof run1);
    w_bytes(&w, 8, "nm", 2);
    w_bytes(&w, 7, run2, sizeof run2);
    CHECK_OK(read_t(write_tmp("split.pb", &w), &a, &v));
    int64_t q[4] = {0};
    if (v.nbytes == 32) memcpy(q, v.data, 32);
    CHECK(v.rank == 2 && v.count == 4 && q[0] == 5 && q[1] == 127 && q[2] == 128 && q[3] == -1);
    CHECK(!strcmp(v.name, "nm"));

    /* uint64_data carrying UINT32; int32_data carrying INT16 negatives. */
    w.n = 0;
    w_uint(&w, 1, 2);
    w_uint(&w, 2, CTOSA_ONNX_UINT32);
    w_uint(&w, 11, 4294967295u);
    w_uint(&w, 11, 7);
    CHECK_OK(read_t(write_tmp("u32.pb", &w), &a, &v));
    CHECK(v.nbytes == 8 && !memcmp(v.data, "\xff\xff\xff\xff\x07\x00\x00\x00", 8));
    w.n = 0;
    w_uint(&w, 1, 1);
    w_uint(&w, 2, CTOSA_ONNX_INT16);
    w_uint(&w, 5, (uint64_t)(int64_t)-2); /* int32 negatives are 10-byte varints */
    CHECK_OK(read_t(write_tmp("i16.pb", &w), &a, &v));
    CHECK(v.nbytes == 2 && !memcmp(v.data, "\xfe\xff", 2));
    /* Unknown fields (including a group) are skipped. */
    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_UINT8);
    w_uint(&w, 99, 1);
    w_tag(&w, 98, 3);
    w_uint(&w, 1, 5);
    w_tag(&w, 98, 4);
    w_bytes(&w, 9, "\x2a", 1);
    CHECK_OK(read_t(write_tmp("unknown.pb", &w), &a, &v));
    CHECK(v.rank == 0 && v.count == 1 && v.nbytes == 1 && ((const uint8_t *)v.data)[0] == 42);
    arena_free(&a);
}

/* ---------------------------------------------------------- bad tensors */
static void test_bad_tensors(void) {
    arena a;
    arena_init(&a, 0);
    onnx_tensor_value v;
    wbuf w = {0};
    const char *p;

    for (int i = 0; i < 17; i++) w_uint(&w, 1, 1);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    p = write_tmp("rank17.pb", &w);
    CHECK_ERR(read_t(p, &a, &v), CTOSA_ERR_LIMIT, "byte 32: tensor '': more than 16 dims");

    w.n = 0;
    w_bytes(&w, 8, "neg", 3);
    w_uint(&w, 1, (uint64_t)(int64_t)-3);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    CHECK_ERR(read_t(write_tmp("neg.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "tensor 'neg': dims[0] = -3 is negative");

    w.n = 0;
    w_uint(&w, 1, 1);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_bytes(&w, 8, "r", 1);
    w_bytes(&w, 9, "abc", 3);
    p = write_tmp("rawsize.pb", &w);
    char want[256];
    snprintf(want, sizeof want, "%s: byte 9: tensor 'r': raw_data has 3 bytes, FLOAT [1] needs 4", p);
    CHECK_ERR(read_t(p, &a, &v), CTOSA_ERR_FORMAT, want);

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_bytes(&w, 9, "abcd", 4);
    w_f32(&w, 4, 1.0f);
    CHECK_ERR(read_t(write_tmp("both.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "data is given in more than one form");

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_uint(&w, 7, 1);
    CHECK_ERR(read_t(write_tmp("wrongfield.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "int64_data cannot carry FLOAT elements (they go in float_data)");

    w.n = 0;
    w_uint(&w, 1, 3);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_bytes(&w, 8, "c", 1);
    w_bytes(&w, 4, "\0\0\0\0\0\0\0\0", 8);
    CHECK_ERR(read_t(write_tmp("count.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "tensor 'c': float_data has 2 values, FLOAT [3] needs 3");

    w.n = 0;
    w_uint(&w, 1, 3);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    CHECK_ERR(read_t(write_tmp("nodata.pb", &w), &a, &v), CTOSA_ERR_FORMAT, "no data for 3 elements");

    w.n = 0;
    w_uint(&w, 2, 99);
    w_bytes(&w, 9, "abcd", 4);
    CHECK_ERR(read_t(write_tmp("dtype99.pb", &w), &a, &v), CTOSA_ERR_UNSUPPORTED, "unknown data_type 99");

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_uint(&w, 14, 2);
    CHECK_ERR(read_t(write_tmp("loc2.pb", &w), &a, &v), CTOSA_ERR_FORMAT, "data_location 2 is neither");

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_uint(&w, 14, 1);
    wbuf kv = {0};
    w_bytes(&kv, 1, "location", 8);
    w_bytes(&kv, 2, "/etc/passwd", 11);
    w_bytes(&w, 13, kv.b, kv.n);
    CHECK_ERR(read_t(write_tmp("extabs.pb", &w), &a, &v), CTOSA_ERR_FORMAT, "is an absolute path (refused)");

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    w_uint(&w, 14, 1);
    kv.n = 0;
    w_bytes(&kv, 1, "offset", 6);
    w_bytes(&kv, 2, "-1", 2);
    w_bytes(&w, 13, kv.b, kv.n);
    CHECK_ERR(read_t(write_tmp("extoff.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "offset '-1' is not a non-negative integer");

    w.n = 0;
    w_uint(&w, 2, CTOSA_ONNX_STRING);
    w_bytes(&w, 9, "ab", 2);
    CHECK_ERR(read_t(write_tmp("strraw.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "STRING tensors cannot use raw_data");

    w.n = 0;
    w_bytes(&w, 8, "a\0b", 3);
    CHECK_ERR(read_t(write_tmp("nul.pb", &w), &a, &v), CTOSA_ERR_FORMAT, "name contains a NUL byte");

    CHECK_ERR(read_t(TDATA "missing.pb", &a, &v), CTOSA_ERR_IO, "missing.pb");

    /* Overflowing element count. */
    w.n = 0;
    for (int i = 0; i < 4; i++) w_uint(&w, 1, (uint64_t)1 << 40);
    w_uint(&w, 2, CTOSA_ONNX_FLOAT);
    CHECK_ERR(read_t(write_tmp("overflow.pb", &w), &a, &v), CTOSA_ERR_LIMIT, "element count overflows");

    /* Huge dims, tiny data: rejected before any allocation of that size. */
    w.n = 0;
    w_uint(&w, 1, (uint64_t)1 << 40);
    w_uint(&w, 2, CTOSA_ONNX_INT64);
    w_uint(&w, 7, 1);
    CHECK_ERR(read_t(write_tmp("huge.pb", &w), &a, &v), CTOSA_ERR_FORMAT,
              "int64_data has 1 values, INT64 [1099511627776] needs 1099511627776");
    arena_free(&a);
}

static void test_truncated_files(void) {
    const char *files[] = {"f32_raw.pb", "f32_typed.pb", "i64_typed.pb", "str.pb", "ext.pb"};
    int failed = 0, total = 0;
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(files); i++) {
        size_t n;
        unsigned char *buf = th_read(th_path(TDATA, files[i]), &n);
        CHECK(buf != NULL);
        if (!buf) continue;
        for (size_t len = 0; len < n; len++) {
            /* Written beside ext.bin so external references resolve. */
            const char *p = th_path(th_tmpdir(), "trunc.pb");
            CHECK(th_write(p, buf, len) == 0);
            arena a;
            arena_init(&a, 0);
            onnx_tensor_value v;
            ctosa_error *e = read_t(p, &a, &v);
            total++;
            if (e) {
                failed++;
                CHECK_MSG(strstr(ctosa_error_message(e), p) == ctosa_error_message(e), "%s",
                          ctosa_error_message(e));
            }
            ctosa_error_free(e);
            arena_free(&a);
        }
        free(buf);
    }
    fprintf(stderr, "truncated tensor files: %d of %d rejected\n", failed, total);
    CHECK(failed > total / 2);
}

/* Debian's ONNX test data sets, decoded by onnx's numpy_helper (via
 * tests/data/onnx/tensor_digest.py) and by us: same dtype, size and bytes. */
static void test_corpus_vs_numpy(void) {
    const char *corpus = "/usr/share/libonnx-testdata/data/node";
    struct stat st;
    if (stat(corpus, &st) != 0) {
        fprintf(stderr, "SKIPPED test_corpus_vs_numpy: %s absent\n", corpus);
        return;
    }
    if (th_run(NULL, "/usr/bin/python3 -c 'import onnx' 2>/dev/null") != 0) {
        fprintf(stderr, "SKIPPED test_corpus_vs_numpy: /usr/bin/python3 with onnx not available\n");
        return;
    }
    const char *out = th_path(th_tmpdir(), "digests.txt");
    CHECK(th_run(NULL, "/usr/bin/python3 '%s' '%s' > '%s'",
                 CTOSA_SOURCE_DIR "/tests/data/onnx/tensor_digest.py", corpus, out) == 0);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    if (!f) return;
    char path[1024], hex[32];
    int dtype;
    unsigned long long nbytes;
    unsigned compared = 0, bad = 0;
    while (fscanf(f, "%1023s %d %llu %31s", path, &dtype, &nbytes, hex) == 4) {
        arena a;
        arena_init(&a, 0);
        onnx_tensor_value v;
        ctosa_error *e = onnx_read_tensor_file(path, &a, &v);
        if (e) {
            CHECK_MSG(0, "%s", ctosa_error_message(e));
            ctosa_error_free(e);
            bad++;
        } else {
            uint64_t h = 0xcbf29ce484222325ull;
            for (uint64_t i = 0; i < v.nbytes; i++) h = (h ^ ((const uint8_t *)v.data)[i]) * 0x100000001b3ull;
            char mine[32];
            snprintf(mine, sizeof mine, "%016llx", (unsigned long long)h);
            bool same = v.dtype == dtype && v.nbytes == nbytes && !strcmp(mine, hex);
            CHECK_MSG(same, "%s: dtype %d/%d, %llu/%llu bytes", path, v.dtype, dtype,
                      (unsigned long long)v.nbytes, nbytes);
            if (!same) bad++;
            compared++;
        }
        arena_free(&a);
    }
    fclose(f);
    fprintf(stderr, "corpus tensors identical to numpy_helper's decoding: %u of %u\n", compared - bad,
            compared);
    CHECK(compared > 2500);
}

int main(void) {
    RUN(test_files);
    RUN(test_numpy_names);
    RUN(test_typed_layouts);
    RUN(test_bad_tensors);
    RUN(test_truncated_files);
    RUN(test_corpus_vs_numpy);
    return th_finish();
}
