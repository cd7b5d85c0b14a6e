/* test_stream_transform.c - streamed weight transforms.
 *
 * Large weights whose bytes change on the way to TOSA (Conv OIHW -> OHWI,
 * depthwise [C*M,1,KH,KW] -> [KH,KW,C,M], grouped Conv slices, ConvTranspose
 * IOHW -> OHWI, Gemm transB)
 * are generated data produced in bounded chunks (ot_set_permuted), never a
 * relaid copy in memory. Checked here:
 *  - ot_gen_fill (ctosa_transpose_view_read) gives exactly a naive permute
 *    for the supported forms,
 *    from memory and from a file (slab tiles, column tiles, units larger
 *    than one element, unaligned reads);
 *  - a model (built here as protobuf, half of its weights in external data)
 *    lowered with streaming off (ctosa_lower_options.stream_transform_min huge), at the
 *    default threshold and with everything streamed gives byte-identical
 *    TOSA files and bit-identical interpreter outputs, and the default run
 *    really holds generated constants.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctosa/ctosa.h"
#include "ctosa/interp.h"
#include "ctosa/lower.h"
#include "harness.h"
#include "lower_testutil.h"
#include "lower/opt/opt_transpose_int.h"

/* ------------------------------------------------------ ot_gen_fill units */

/* Streaming threshold handed to ot_set_permuted by check_form. */
static uint64_t form_min = 1;

static void naive_permute(const uint8_t *src, uint32_t rank, const int64_t *shape, const int32_t *perm,
                          uint32_t es, uint8_t *dst) {
    uint64_t istride[8], n = 1;
    for (uint32_t i = rank; i-- > 0;) {
        istride[i] = n;
        n *= (uint64_t)shape[i];
    }
    uint64_t idx[8] = {0};
    for (uint64_t k = 0; k < n; k++) {
        uint64_t off = 0;
        for (uint32_t i = 0; i < rank; i++) off += idx[i] * istride[perm[i]];
        memcpy(dst + k * es, src + off * es, es);
        for (uint32_t i = rank; i-- > 0;)
            if (++idx[i] < (uint64_t)shape[perm[i]]) break;
            else idx[i] = 0;
    }
}

static void check_form(const char *dir, uint32_t rank, const int64_t *shape, const int32_t *perm, uint32_t es,
                       bool expect_stream) {
    uint64_t n = es;
    for (uint32_t i = 0; i < rank; i++) n *= (uint64_t)shape[i];
    uint8_t *src = malloc(n), *want = malloc(n), *got = malloc(n);
    for (uint64_t i = 0; i < n; i++) src[i] = (uint8_t)((i * 2654435761u) >> 13);
    naive_permute(src, rank, shape, perm, es, want);
    char path[1024];
    snprintf(path, sizeof path, "%s/src.bin", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(src, 1, n, f) == n);
    if (f) fclose(f);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    for (int kind = 0; kind < 2 && g; kind++) {
        ctosa_data d;
        memset(&d, 0, sizeof d);
        d.size = n;
        d.fd = -1;
        if (kind == 0) {
            d.kind = CTOSA_DATA_MEMORY;
            d.ptr = src;
        } else {
            d.kind = CTOSA_DATA_FILE;
            d.fd = fd;
        }
        ctosa_tensor t;
        memset(&t, 0, sizeof t);
        t.name = "w";
        bool done = false;
        CHECK_OK(ot_set_permuted(g, &t, &d, rank, shape, perm, es, form_min, &done));
        CHECK_MSG(done == expect_stream, "rank %u perm %d,%d,...: streamed %d", rank, perm[0], perm[1], done);
        if (!done) continue;
        memset(got, 0xAA, n);
        CHECK_OK(ctosa_tensor_read_data(&t, 0, got, (size_t)n));
        CHECK_MSG(memcmp(got, want, n) == 0, "kind %d: whole read differs from the naive permute", kind);
        /* unaligned pieces, as the writer or interpreter may ask */
        uint64_t at = 0, step = 7;
        bool same = true;
        while (at < n) {
            uint64_t len = step < n - at ? step : n - at;
            CHECK_OK(ctosa_tensor_read_data(&t, at, got, (size_t)len));
            same = same && memcmp(got, want + at, len) == 0;
            at += len;
            step = step * 3 + 1;
        }
        CHECK_MSG(same, "kind %d: piecewise reads differ", kind);
        CHECK_ERR(ctosa_tensor_read_data(&t, n - 1, got, 2), CTOSA_ERR_USAGE, "passes");
    }
    ctosa_graph_free(g);
    if (fd >= 0) close(fd);
    unlink(path);
    free(src);
    free(want);
    free(got);
}

static void test_fill_forms(void) {
    const char *dir = th_tmpdir();
    form_min = 1;
    /* OIHW -> O,HW,I: whole slabs per tile */
    int64_t s1[4] = {37, 19, 3, 3};
    int32_t p1[4] = {0, 2, 3, 1};
    check_form(dir, 4, s1, p1, 4, true);
    /* 2-D transpose larger than a tile: column tiles (rows of 3 KiB) */
    int64_t s2[2] = {777, 2100};
    int32_t p2[2] = {1, 0};
    check_form(dir, 2, s2, p2, 4, true);
    /* swap with a trailing unit ([R, C, 5] -> [C, R, 5]) and unit axes */
    int64_t s3[5] = {1, 33, 41, 1, 5};
    int32_t p3[5] = {3, 2, 1, 0, 4};
    check_form(dir, 5, s3, p3, 2, true);
    /* a batch with slabs over the tile: [3, 1100, 1300] fp16 -> [3, 1300, 1100] */
    int64_t s4[3] = {3, 1100, 1300};
    int32_t p4[3] = {0, 2, 1};
    check_form(dir, 3, s4, p4, 2, true);
    /* not one neighbouring swap: materialised by the caller */
    int64_t s5[3] = {4, 5, 6};
    int32_t p5[3] = {2, 1, 0};
    check_form(dir, 3, s5, p5, 4, false);
    int32_t p6[3] = {0, 1, 2};
    check_form(dir, 3, s5, p6, 4, false);
    /* below the threshold nothing streams */
    form_min = 100000000;
    check_form(dir, 4, s1, p1, 4, false);
}

/* ------------------------------------------------- a protobuf model here */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void varint(buf *b, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)((v & 127) | (v > 127 ? 128 : 0));
        v >>= 7;
    } while (v);
    put(b, t, n);
}
static void key(buf *b, uint32_t field, uint32_t wire) { varint(b, (uint64_t)field << 3 | wire); }
static void f_int(buf *b, uint32_t field, int64_t v) {
    key(b, field, 0);
    varint(b, (uint64_t)v);
}
static void f_bytes(buf *b, uint32_t field, const void *p, size_t n) {
    key(b, field, 2);
    varint(b, n);
    put(b, p, n);
}
static void f_str(buf *b, uint32_t field, const char *s) { f_bytes(b, field, s, strlen(s)); }
static void f_msg(buf *b, uint32_t field, buf *m) {
    f_bytes(b, field, m->p, m->n);
    free(m->p);
    memset(m, 0, sizeof *m);
}

static void value_info(buf *g, uint32_t field, const char *name, uint32_t rank, const int64_t *shape) {
    buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (uint32_t i = 0; i < rank; i++) {
        buf d = {0};
        f_int(&d, 1, shape[i]);
        f_msg(&sh, 1, &d);
    }
    f_int(&tt, 1, 1); /* FLOAT */
    f_msg(&tt, 2, &sh);
    f_msg(&tp, 1, &tt);
    f_str(&vi, 1, name);
    f_msg(&vi, 2, &tp);
    f_msg(g, field, &vi);
}

/* An fp32 initializer: inline raw_data, or appended to ext (external data). */
static void initializer(buf *g, const char *name, uint32_t rank, const int64_t *shape, const float *v,
                        FILE *ext, const char *ext_name) {
    buf t = {0};
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        f_int(&t, 1, shape[i]);
        n *= (uint64_t)shape[i];
    }
    f_int(&t, 2, 1);
    f_str(&t, 8, name);
    if (!ext) {
        f_bytes(&t, 9, v, n * 4);
    } else {
        long off = ftell(ext);
        CHECK(fwrite(v, 4, n, ext) == n);
        char num[32];
        const char *keys[3] = {"location", "offset", "length"};
        for (int k = 0; k < 3; k++) {
            buf e = {0};
            f_str(&e, 1, keys[k]);
            if (k == 0) f_str(&e, 2, ext_name);
            else {
                snprintf(num, sizeof num, "%llu",
                         k == 1 ? (unsigned long long)off : (unsigned long long)(n * 4));
                f_str(&e, 2, num);
            }
            f_msg(&t, 13, &e);
        }
        f_int(&t, 14, 1); /* EXTERNAL */
    }
    f_msg(g, 5, &t);
}

static void attr_i(buf *n, const char *name, int64_t v) {
    buf a = {0};
    f_str(&a, 1, name);
    f_int(&a, 3, v);
    f_int(&a, 20, 2);
    f_msg(n, 5, &a);
}
static void attr_ints(buf *n, const char *name, uint32_t k, const int64_t *v) {
    buf a = {0};
    f_str(&a, 1, name);
    for (uint32_t i = 0; i < k; i++) f_int(&a, 8, v[i]);
    f_int(&a, 20, 7);
    f_msg(n, 5, &a);
}
static buf node(const char *op, const char *name, uint32_t ni, const char *const *in, const char *out) {
    buf n = {0};
    for (uint32_t i = 0; i < ni; i++) f_str(&n, 1, in[i]);
    f_str(&n, 2, out);
    f_str(&n, 3, name);
    f_str(&n, 4, op);
    return n;
}

static float *weights(uint64_t n, uint32_t seed) {
    float *w = malloc(n * 4);
    uint32_t x = seed;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        w[i] = (float)((int32_t)(x >> 8) % 2001) / 16000.0f;
    }
    return w;
}

/* x[1,32,6,6] -> Conv 3x3 (256x32) -> Relu -> depthwise 5x5 (x4, 1024 ch)
 * -> grouped Conv 3x3 (4 groups, 64 out) -> ConvTranspose 3x3 (64 -> 64)
 * -> Flatten -> Gemm transB
 * (B [256, 2304]) -> Gemm (B [256, 128]) -> y[1,128]. Conv1 and the Gemm
 * weights are external data, the others inline. */
static void write_model(const char *dir) {
    char path[1024], ext_path[1024];
    snprintf(ext_path, sizeof ext_path, "%s/w.bin", dir);
    FILE *ext = fopen(ext_path, "wb");
    CHECK(ext != NULL);
    if (!ext) return;
    buf g = {0}, n;
    int64_t pads1[4] = {1, 1, 1, 1}, pads2[4] = {2, 2, 2, 2};
    {
        const char *in[] = {"x", "w1"};
        n = node("Conv", "conv1", 2, in, "c1");
        attr_ints(&n, "pads", 4, pads1);
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"c1"};
        n = node("Relu", "relu", 1, in, "r1");
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"r1", "w2"};
        n = node("Conv", "dw", 2, in, "c2");
        attr_i(&n, "group", 256);
        attr_ints(&n, "pads", 4, pads2);
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"c2", "w3"};
        n = node("Conv", "grouped", 2, in, "c3");
        attr_i(&n, "group", 4);
        attr_ints(&n, "pads", 4, pads1);
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"c3", "w4"};
        n = node("ConvTranspose", "convtr", 2, in, "c4");
        attr_ints(&n, "pads", 4, pads1);
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"c4"};
        n = node("Flatten", "flat", 1, in, "f");
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"f", "b1"};
        n = node("Gemm", "gemm1", 2, in, "g1");
        attr_i(&n, "transB", 1);
        f_msg(&g, 1, &n);
    }
    {
        const char *in[] = {"g1", "b2"};
        n = node("Gemm", "gemm2", 2, in, "y");
        f_msg(&g, 1, &n);
    }
    f_str(&g, 2, "stream_transform");
    int64_t sw1[4] = {256, 32, 3, 3}, sw2[4] = {1024, 1, 5, 5}, sw3[4] = {64, 256, 3, 3};
    int64_t sb1[2] = {256, 2304}, sb2[2] = {256, 128};
    float *w;
    initializer(&g, "w1", 4, sw1, w = weights(256 * 32 * 9, 1), ext, "w.bin");
    free(w);
    initializer(&g, "w2", 4, sw2, w = weights(1024 * 25, 2), NULL, NULL);
    free(w);
    initializer(&g, "w3", 4, sw3, w = weights(64 * 256 * 9, 3), NULL, NULL);
    free(w);
    int64_t sw4[4] = {64, 64, 3, 3};
    initializer(&g, "w4", 4, sw4, w = weights(64 * 64 * 9, 6), NULL, NULL);
    free(w);
    initializer(&g, "b1", 2, sb1, w = weights(256 * 2304, 4), ext, "w.bin");
    free(w);
    initializer(&g, "b2", 2, sb2, w = weights(256 * 128, 5), ext, "w.bin");
    free(w);
    fclose(ext);
    int64_t sx[4] = {1, 32, 6, 6}, sy[2] = {1, 128};
    value_info(&g, 11, "x", 4, sx);
    value_info(&g, 12, "y", 2, sy);
    buf m = {0}, op = {0};
    f_int(&m, 1, 8);
    f_str(&op, 1, "");
    f_int(&op, 2, 13);
    f_msg(&m, 8, &op);
    f_msg(&m, 7, &g);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(m.p, 1, m.n, f) == m.n);
    if (f) fclose(f);
    free(m.p);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

/* Lowers the model with threshold `min` (NULL: default) into out/<tag>;
 * returns the TOSA file bytes and the interpreter's y; counts generated
 * constants of the in-memory result. */
static uint8_t *lower_run(const char *dir, uint64_t min, const char *tag, const float *x, float *y,
                          size_t *tosa_n, uint32_t *n_generated) {
    char model[1024], out[1024], file[1200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(out, sizeof out, "%s/out_%s", dir, tag);
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    uint8_t *bytes = NULL;
    *n_generated = 0;
    for (int written = 0; written < 2; written++) {
        ctosa_lower_options opt;
        ctosa_lower_options_init(&opt);
        opt.output_dir = written ? out : NULL;
        opt.no_report = true;
        opt.no_partitioned_onnx = true;
        opt.stream_transform_min = min;
        ctosa_lower_result *r = NULL;
        CHECK_OK(ctosa_lower_file(model, &spec, &opt, &r));
        if (!r) break;
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        char why[1024];
        if (!written) CHECK_MSG(lt_validate_all(s, &spec, why, sizeof why), "%s: %s", tag, why);
        CHECK_MSG(s->n_partitions == 1 && s->n_fallback == 0, "%s: %u partitions, %u fallbacks", tag,
                  s->n_partitions, s->n_fallback);
        if (s->n_partitions == 1) {
            const ctosa_graph *g = s->partitions[0].graph;
            for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
                const ctosa_region *rg = ctosa_graph_region(g, ri);
                for (uint32_t bi = 0; bi < rg->n_blocks; bi++)
                    for (uint32_t ti = 0; ti < rg->blocks[bi]->n_tensors; ti++)
                        *n_generated +=
                            !written && rg->blocks[bi]->tensors[ti]->data.kind == CTOSA_DATA_GENERATED;
            }
            /* the written run's graph (its sources now file ranges) runs too */
            ctosa_interp *it = NULL;
            int64_t xs[4] = {1, 32, 6, 6};
            CHECK_OK(ctosa_interp_create(g, NULL, &it));
            CHECK_OK(ctosa_interp_set_input(it, s->partitions[0].inputs[0].name, CTOSA_DTYPE_FP32, 4, xs, x,
                                            32 * 36 * 4));
            CHECK_OK(ctosa_interp_run(it));
            ctosa_interp_tensor t;
            memset(&t, 0, sizeof t);
            CHECK_OK(ctosa_interp_get_output(it, s->partitions[0].outputs[0].name, &t));
            float yy[128];
            if (t.data) memcpy(yy, t.data, sizeof yy);
            if (!written) memcpy(y, yy, sizeof yy);
            else CHECK_MSG(memcmp(y, yy, sizeof yy) == 0, "%s: in-memory and written results differ", tag);
            ctosa_interp_free(it);
            if (written) {
                snprintf(file, sizeof file, "%s/%s", out, s->partitions[0].file);
                bytes = slurp(file, tosa_n);
                CHECK_MSG(bytes, "%s: cannot read %s", tag, file);
            }
        }
        ctosa_lower_result_free(r);
    }
    return bytes;
}

static void test_model(void) {
    const char *dir = th_tmpdir();
    write_model(dir);
    float *x = weights(32 * 36, 9);
    float y_off[128], y_def[128], y_all[128];
    size_t n_off = 0, n_def = 0, n_all = 0;
    uint32_t g_off, g_def, g_all;
    uint8_t *off = lower_run(dir, UINT64_MAX, "off", x, y_off, &n_off, &g_off);
    uint8_t *def = lower_run(dir, 0, "def", x, y_def, &n_def, &g_def);
    uint8_t *all = lower_run(dir, 1, "all", x, y_all, &n_all, &g_all);
    printf("  generated constants: off %u, default %u, all %u; TOSA %zu bytes\n", g_off, g_def, g_all, n_off);
    CHECK(g_off == 0);
    /* conv1, depthwise, 4 group slices (144 KiB each), ConvTranspose, Gemm transB */
    CHECK_MSG(g_def == 8, "default threshold: %u generated constants, expected 8", g_def);
    CHECK(g_all >= g_def);
    CHECK_MSG(off && def && n_off == n_def && memcmp(off, def, n_off) == 0,
              "streamed (default) TOSA file differs from the in-memory one");
    CHECK_MSG(off && all && n_off == n_all && memcmp(off, all, n_off) == 0,
              "streamed (all) TOSA file differs from the in-memory one");
    CHECK_MSG(memcmp(y_off, y_def, sizeof y_off) == 0 && memcmp(y_off, y_all, sizeof y_off) == 0,
              "interpreter outputs differ between the paths");
    bool nonzero = false;
    for (int i = 0; i < 128; i++) nonzero = nonzero || y_off[i] != 0.0f;
    CHECK(nonzero);
    free(off);
    free(def);
    free(all);
    free(x);
}

int main(void) {
    RUN(test_fill_forms);
    RUN(test_model);
    return th_finish();
}
