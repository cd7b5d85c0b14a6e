/* test_pb.c - protobuf wire-format reader: varints, fixed fields, lengths,
 * packed repeated fields, groups, and every way a buffer can be malformed. */
#include "harness.h"
#include "onnx/pb.h"

static pb_doc doc_of(const uint8_t *p, size_t n) { return (pb_doc){"t.pb", p, n, 0}; }

/* Reads every top-level field; returns the error (NULL if fine) and the
 * number of fields seen. */
static ctosa_error *read_all(const uint8_t *p, size_t n, int *count, pb_field *last, uint64_t *err_off) {
    pb_doc d = doc_of(p, n);
    pb_cursor c;
    pb_cursor_init(&c, &d, p, n);
    pb_field f;
    bool more;
    ctosa_error *e;
    *count = 0;
    while (!(e = pb_next(&c, &f, &more)) && more) {
        (*count)++;
        if (last) *last = f;
    }
    if (err_off) *err_off = d.err_off;
    return e ? pb_finish_error(&d, e) : NULL;
}

static void test_varints(void) {
    struct {
        uint8_t b[12];
        size_t n;
        uint64_t v;
    } ok[] = {
        {{0x00}, 1, 0},
        {{0x7f}, 1, 127},
        {{0x80, 0x01}, 2, 128},
        {{0xac, 0x02}, 2, 300},
        {{0x80, 0x00}, 2, 0}, /* redundant continuation: accepted like protobuf does */
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, UINT64_MAX},
        {{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, UINT64_MAX - 1},
    };
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(ok); i++) {
        pb_doc d = doc_of(ok[i].b, ok[i].n);
        const uint8_t *p = ok[i].b;
        uint64_t v = 0;
        CHECK_OK(pb_varint(&d, &p, ok[i].b + ok[i].n, &v));
        CHECK(v == ok[i].v);
        CHECK(p == ok[i].b + ok[i].n);
    }
    /* 11 bytes, 10th byte > 1, truncated. */
    uint8_t eleven[11];
    memset(eleven, 0x80, 10);
    eleven[10] = 0;
    uint8_t over[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    uint8_t trunc[3] = {0x80, 0x80, 0x80};
    struct {
        const uint8_t *b;
        size_t n;
        const char *msg;
    } bad[] = {
        {eleven, 11, "longer than 10 bytes"},
        {over, 10, "does not fit in 64 bits"},
        {trunc, 3, "truncated varint"},
        {trunc, 0, "truncated varint"},
    };
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(bad); i++) {
        pb_doc d = doc_of(bad[i].b, bad[i].n);
        const uint8_t *p = bad[i].b;
        uint64_t v;
        CHECK_ERR(pb_varint(&d, &p, bad[i].b + bad[i].n, &v), CTOSA_ERR_FORMAT, bad[i].msg);
    }
    CHECK(pb_zigzag64(0) == 0 && pb_zigzag64(1) == -1 && pb_zigzag64(2) == 1 && pb_zigzag64(3) == -2);
    CHECK(pb_zigzag64(UINT64_MAX) == INT64_MIN);
    CHECK(pb_zigzag32(4294967295u) == INT32_MIN && pb_zigzag32(4294967294u) == INT32_MAX);
}

static void test_fields(void) {
    /* 1: varint 150; 2: "abc"; 3: fixed32 1.5f; 4: fixed64 -2.0; 5: empty LEN */
    const uint8_t buf[] = {0x08, 0x96, 0x01, 0x12, 3, 'a', 'b', 'c', 0x1d, 0x00, 0x00, 0xc0,
                           0x3f, 0x21, 0,    0,    0, 0,   0,   0,   0,    0xc0, 0x2a, 0x00};
    pb_doc d = doc_of(buf, sizeof buf);
    pb_cursor c;
    pb_cursor_init(&c, &d, buf, sizeof buf);
    pb_field f;
    bool more;
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(more && f.num == 1 && f.wire == PB_VARINT && f.u == 150 && f.at == buf);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(f.num == 2 && f.wire == PB_LEN && f.len == 3 && !memcmp(f.data, "abc", 3));
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(f.num == 3 && f.wire == PB_I32 && pb_f32(f.u) == 1.5f);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(f.num == 4 && f.wire == PB_I64 && pb_f64(f.u) == -2.0);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(f.num == 5 && f.wire == PB_LEN && f.len == 0);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(!more);
    /* pb_expect names the field and both wire types. */
    CHECK_ERR(pb_expect(&d, &f, PB_VARINT, "dims"), CTOSA_ERR_FORMAT, "field 'dims'");
}

static void test_malformed(void) {
    struct {
        uint8_t b[16];
        size_t n;
        const char *msg;
        uint64_t off;
    } bad[] = {
        {{0x12, 5, 'a', 'b'}, 4, "runs past the end", 0},     /* LEN longer than the buffer */
        {{0x08, 0x01, 0x12, 0x80}, 4, "truncated varint", 3}, /* truncated length */
        {{0x08, 0x01, 0x1d, 0x00, 0x00}, 5, "truncated fixed32", 2},
        {{0x21, 0x00, 0x00, 0x00}, 4, "truncated fixed64", 0},
        {{0x0e, 0x00}, 2, "invalid wire type 6", 0},
        {{0x0f, 0x00}, 2, "invalid wire type 7", 0},
        {{0x00, 0x00}, 2, "field number 0", 0},
        {{0x08, 0x01, 0x0c}, 3, "group end without a group start", 2},
        {{0x0b, 0x08, 0x01}, 3, "not closed", 0},                           /* group never closed */
        {{0x0b, 0x14}, 2, "does not match", 1},                             /* group 1 closed as 2 */
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00}, 7, "out of range", 0}, /* tag > 32 bits */
    };
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(bad); i++) {
        int n;
        uint64_t off;
        ctosa_error *e = read_all(bad[i].b, bad[i].n, &n, NULL, &off);
        CHECK_MSG(e != NULL, "case %zu", i);
        if (!e) continue;
        CHECK_MSG(strstr(ctosa_error_message(e), bad[i].msg) != NULL, "case %zu: %s", i,
                  ctosa_error_message(e));
        CHECK_MSG(strstr(ctosa_error_message(e), "t.pb: byte ") == ctosa_error_message(e), "%s",
                  ctosa_error_message(e));
        CHECK_MSG(off == bad[i].off, "case %zu: offset %llu", i, (unsigned long long)off);
        CHECK(ctosa_error_code(e) == CTOSA_ERR_FORMAT);
        ctosa_error_free(e);
    }
}

static void test_groups_skipped(void) {
    /* field 1 varint, group 2 { field 1 varint, group 3 { fixed32 }, "xy" }, field 4 varint */
    const uint8_t buf[] = {0x08, 0x05, 0x13, 0x08, 0x01, 0x1b, 0x0d, 1,    2,   3,
                           4,    0x1c, 0x0a, 2,    'x',  'y',  0x14, 0x20, 0x07};
    int n;
    pb_field last = {0};
    CHECK_OK(read_all(buf, sizeof buf, &n, &last, NULL));
    CHECK(n == 3);
    CHECK(last.num == 4 && last.u == 7);
    /* The group is reported with its body span. */
    pb_doc d = doc_of(buf, sizeof buf);
    pb_cursor c;
    pb_cursor_init(&c, &d, buf, sizeof buf);
    pb_field f;
    bool more;
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK(f.num == 2 && f.wire == PB_SGROUP && f.data == buf + 3 && f.len == 13);
}

static void test_group_depth_limit(void) {
    /* 100 nested group starts for field 1 then ends: over the depth limit. */
    uint8_t buf[400];
    size_t n = 0;
    for (int i = 0; i < 100; i++) buf[n++] = 0x0b;
    for (int i = 0; i < 100; i++) buf[n++] = 0x0c;
    int cnt;
    ctosa_error *e = read_all(buf, n, &cnt, NULL, NULL);
    CHECK(e && ctosa_error_code(e) == CTOSA_ERR_LIMIT && strstr(ctosa_error_message(e), "nested deeper"));
    ctosa_error_free(e);
    /* 60 levels are fine. */
    n = 0;
    for (int i = 0; i < 60; i++) buf[n++] = 0x0b;
    for (int i = 0; i < 60; i++) buf[n++] = 0x0c;
    CHECK_OK(read_all(buf, n, &cnt, NULL, NULL));
    CHECK(cnt == 1);
}

static void test_unknown_fields_skipped(void) {
    /* Unknown field numbers of every wire type among known ones. */
    const uint8_t buf[] = {0xf8, 0x07, 0x01,                                  /* field 127 varint */
                           0xa1, 0x1f, 1,    2,    3,    4,    5,    6, 7, 8, /* field 500 fixed64 */
                           0x08, 0x2a,                                        /* field 1 = 42 */
                           0xfa, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x00,          /* field 2^29-1 LEN 1 */
                           0x15, 1,    2,    3,    4};                        /* field 2 fixed32 */
    pb_doc d = doc_of(buf, sizeof buf);
    pb_cursor c;
    pb_cursor_init(&c, &d, buf, sizeof buf);
    pb_field f;
    bool more;
    int seen1 = 0, total = 0;
    ctosa_error *e;
    while (!(e = pb_next(&c, &f, &more)) && more) {
        total++;
        if (f.num == 1) seen1 = (int)f.u;
    }
    CHECK_OK(e);
    CHECK(total == 5 && seen1 == 42);
}

static void test_packed(void) {
    /* packed varints 3, 270, 86942 and -1 (10 bytes) */
    const uint8_t pk[] = {0x0a, 16,   0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05, 0xff,
                          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    pb_doc d = doc_of(pk, sizeof pk);
    pb_cursor c;
    pb_cursor_init(&c, &d, pk, sizeof pk);
    pb_field f;
    bool more;
    CHECK_OK(pb_next(&c, &f, &more));
    uint64_t n = 0, got, v[8];
    CHECK_OK(pb_repeated_count(&d, &f, PB_VARINT, "ints", &n));
    CHECK(n == 4);
    pb_repeated_get(&f, PB_VARINT, v, 8, &got);
    CHECK(got == 4 && v[0] == 3 && v[1] == 270 && v[2] == 86942 && (int64_t)v[3] == -1);
    /* Unpacked element. */
    const uint8_t up[] = {0x08, 0x05};
    d = doc_of(up, sizeof up);
    pb_cursor_init(&c, &d, up, sizeof up);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_OK(pb_repeated_count(&d, &f, PB_VARINT, "ints", &n));
    pb_repeated_get(&f, PB_VARINT, v, 8, &got);
    CHECK(n == 1 && got == 1 && v[0] == 5);
    /* Packed fixed32 of 2 floats; a 7-byte run is rejected. */
    const uint8_t pf[] = {0x0a, 8, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0x12, 7, 0, 0, 0, 0, 0, 0, 0};
    d = doc_of(pf, sizeof pf);
    pb_cursor_init(&c, &d, pf, sizeof pf);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_OK(pb_repeated_count(&d, &f, PB_I32, "floats", &n));
    pb_repeated_get(&f, PB_I32, v, 8, &got);
    CHECK(n == 2 && pb_f32(v[0]) == 1.0f && pb_f32(v[1]) == 2.0f);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_ERR(pb_repeated_count(&d, &f, PB_I32, "floats", &n), CTOSA_ERR_FORMAT, "not a multiple of 4");
    /* A packed varint run whose last varint is cut. */
    const uint8_t pt[] = {0x0a, 2, 0x01, 0x80};
    d = doc_of(pt, sizeof pt);
    pb_cursor_init(&c, &d, pt, sizeof pt);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_ERR(pb_repeated_count(&d, &f, PB_VARINT, "dims", &n), CTOSA_ERR_FORMAT, "truncated varint");
    CHECK(d.err_off == 3);
    /* Wrong wire type for a repeated float. */
    const uint8_t ww[] = {0x08, 0x01};
    d = doc_of(ww, sizeof ww);
    pb_cursor_init(&c, &d, ww, sizeof ww);
    CHECK_OK(pb_next(&c, &f, &more));
    CHECK_ERR(pb_repeated_count(&d, &f, PB_I32, "floats", &n), CTOSA_ERR_FORMAT,
              "expected fixed32 or packed");
}

static void test_truncation_never_crashes(void) {
    /* Every prefix of a message with all wire types either parses or fails
     * cleanly with an offset inside the buffer. */
    const uint8_t buf[] = {0x08, 0x96, 0x01, 0x12, 3, 'a', 'b', 'c',  0x1d, 0x00, 0x00, 0xc0, 0x3f, 0x21,
                           0,    0,    0,    0,    0, 0,   0,   0xc0, 0x13, 0x08, 0x01, 0x14, 0x2a, 0x00};
    for (size_t n = 0; n <= sizeof buf; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size so ASan sees overreads */
        memcpy(copy, buf, n);
        int cnt;
        uint64_t off = 0;
        ctosa_error *e = read_all(copy, n, &cnt, NULL, &off);
        if (e) CHECK(off <= n);
        ctosa_error_free(e);
        free(copy);
    }
}

int main(void) {
    RUN(test_varints);
    RUN(test_fields);
    RUN(test_malformed);
    RUN(test_groups_skipped);
    RUN(test_group_depth_limit);
    RUN(test_unknown_fields_skipped);
    RUN(test_packed);
    RUN(test_truncation_never_crashes);
    return th_finish();
}
