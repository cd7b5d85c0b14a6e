/* test_data_generated.c - generated (deferred) constant data:
 * ctosa_tensor_set_data_generated, ctosa_tensor_set_data_transposed and
 * ctosa_tensor_read_data. A transposed weight written from a file source
 * or a memory source must give exactly the bytes of a naive transpose,
 * in file and memory output, inline and external layout, including sizes
 * that are not multiples of the writer's chunk or the tile; fill errors
 * must fail the write and leave no file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctosa/ctosa.h"
#include "harness.h"

/* src [B, R, C] int32 elements with value = index; naive [B, C, R]. */
static int32_t *make_src(uint64_t B, uint64_t R, uint64_t C) {
    int32_t *p = malloc(B * R * C * 4);
    for (uint64_t i = 0; i < B * R * C; i++) p[i] = (int32_t)(i * 2654435761u);
    return p;
}
static int32_t *naive_t(const int32_t *s, uint64_t B, uint64_t R, uint64_t C) {
    int32_t *p = malloc(B * R * C * 4);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t r = 0; r < R; r++)
            for (uint64_t c = 0; c < C; c++) p[(b * C + c) * R + r] = s[(b * R + r) * C + c];
    return p;
}

/* A one-constant graph; the constant is [B, C, R] int32 from src. */
static ctosa_graph *graph_of(const ctosa_data *src, uint64_t B, uint64_t R, uint64_t C) {
    ctosa_graph *g = NULL;
    ctosa_region *rg;
    ctosa_block *b;
    ctosa_tensor *t;
    int32_t shp[3] = {(int32_t)B, (int32_t)C, (int32_t)R};
    const char *out[] = {"w"};
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &rg));
    CHECK_OK(ctosa_region_add_block(g, rg, "main", &b));
    CHECK_OK(ctosa_block_add_tensor(g, b, "w", CTOSA_DTYPE_INT32, 3, shp, &t));
    CHECK_OK(ctosa_tensor_set_data_transposed(g, t, src, B, R, C, 4));
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_output(g, b, "w"));
    return g;
}

/* Reads the file back and compares its constant with want. */
static void check_file(const char *path, const int32_t *want, uint64_t n) {
    ctosa_graph *r = NULL;
    CHECK_OK(ctosa_read_file(path, NULL, &r));
    if (!r) return;
    const ctosa_block *b = ctosa_graph_region(r, 0)->blocks[0];
    const ctosa_tensor *t = ctosa_block_find_tensor(r, b, "w");
    CHECK(t && t->data.size == n * 4);
    if (t && t->data.size == n * 4) {
        int32_t *got = malloc(n * 4 + 1);
        CHECK_OK(ctosa_tensor_read_data(t, 0, got, (size_t)(n * 4)));
        CHECK(memcmp(got, want, n * 4) == 0);
        free(got);
    }
    ctosa_graph_free(r);
}

static void test_transposed(uint64_t B, uint64_t R, uint64_t C) {
    uint64_t n = B * R * C;
    int32_t *src = make_src(B, R, C), *want = naive_t(src, B, R, C);
    const char *bin = th_path(th_tmpdir(), "src.bin");
    int fd = open(bin, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    /* the source sits at an odd offset of the file */
    CHECK(write(fd, "xyz", 3) == 3);
    CHECK(write(fd, src, n * 4) == (ssize_t)(n * 4));
    ctosa_data fsrc = {.kind = CTOSA_DATA_FILE, .size = n * 4, .path = NULL, .fd = fd, .offset = 3};
    ctosa_data psrc = {.kind = CTOSA_DATA_FILE, .size = n * 4, .path = bin, .fd = -1, .offset = 3};
    ctosa_data msrc = {.kind = CTOSA_DATA_MEMORY, .size = n * 4, .ptr = src, .fd = -1};
    const ctosa_data *srcs[] = {&fsrc, &psrc, &msrc};
    for (int k = 0; k < 3; k++) {
        ctosa_graph *g = graph_of(srcs[k], B, R, C);
        if (!g) continue;
        const ctosa_block *b = ctosa_graph_region(g, 0)->blocks[0];
        const ctosa_tensor *t = ctosa_block_find_tensor(g, b, "w");
        /* random-offset reads through ctosa_tensor_read_data */
        int32_t one[7];
        uint64_t at = n > 7 ? (n * 5 / 11) : 0, cnt = n - at < 7 ? n - at : 7;
        CHECK_OK(ctosa_tensor_read_data(t, at * 4, one, (size_t)(cnt * 4)));
        CHECK(memcmp(one, want + at, cnt * 4) == 0);
        CHECK_ERR(ctosa_tensor_read_data(t, n * 4 - 4, one, 8), CTOSA_ERR_USAGE, "passes");
        for (int lay = 0; lay < 2; lay++) {
            ctosa_write_options o;
            ctosa_write_options_init(&o);
            o.layout = lay ? CTOSA_LAYOUT_EXTERNAL : CTOSA_LAYOUT_INLINE;
            const char *p = th_path(th_tmpdir(), "gen.tosa");
            CHECK_OK(ctosa_write_file(g, p, &o));
            check_file(p, want, n);
            void *mem = NULL;
            size_t sz = 0;
            CHECK_OK(ctosa_write_memory(g, &o, &mem, &sz));
            /* memory output == file output, byte for byte */
            FILE *f = fopen(p, "rb");
            char *fb = malloc(sz + 1);
            CHECK(f && fread(fb, 1, sz + 1, f) == sz);
            CHECK(mem && memcmp(fb, mem, sz) == 0);
            if (f) fclose(f);
            free(fb);
            free(mem);
            unlink(p);
        }
        ctosa_graph_free(g);
    }
    close(fd);
    unlink(bin);
    free(src);
    free(want);
}

static void test_shapes(void) {
    test_transposed(1, 1, 1);
    test_transposed(1, 3, 5);
    test_transposed(4, 7, 9);       /* OIHW -> OHWI shape: O=4, I=7, HW=9 */
    test_transposed(1, 1000, 3001); /* 12 MB: several chunks and tiles, ragged ends */
    test_transposed(3, 513, 700);
}

static ctosa_error *fail_at_5m(void *user, uint64_t off, void *buf, size_t n) {
    (void)user;
    if (off + n > (5u << 20))
        return ctosa_error_new(CTOSA_ERR_IO, "disk on fire at %llu", (unsigned long long)off);
    memset(buf, 7, n);
    return NULL;
}

static void test_fill_error(void) {
    ctosa_graph *g = NULL;
    ctosa_region *rg;
    ctosa_block *b;
    ctosa_tensor *t;
    int32_t shp[1] = {8 << 20};
    const char *out[] = {"w"};
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &rg));
    CHECK_OK(ctosa_region_add_block(g, rg, "main", &b));
    CHECK_OK(ctosa_block_add_tensor(g, b, "w", CTOSA_DTYPE_INT8, 1, shp, &t));
    CHECK_ERR(ctosa_tensor_set_data_generated(g, t, 8 << 20, NULL, NULL), CTOSA_ERR_USAGE, "fill");
    CHECK_OK(ctosa_tensor_set_data_generated(g, t, 8 << 20, fail_at_5m, NULL));
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
    const char *p = th_path(th_tmpdir(), "fail.tosa");
    CHECK_ERR(ctosa_write_file(g, p, NULL), CTOSA_ERR_IO, "disk on fire");
    CHECK(access(p, F_OK) != 0); /* no partial output */
    /* a source of the wrong size is refused when the tensor is set */
    ctosa_data small = {.kind = CTOSA_DATA_MEMORY, .size = 12, .ptr = "abcdefghijkl", .fd = -1};
    CHECK_ERR(ctosa_tensor_set_data_transposed(g, t, &small, 1, 2, 2, 4), CTOSA_ERR_USAGE, "exactly");
    ctosa_graph_free(g);
}

int main(void) {
    RUN(test_shapes);
    RUN(test_fill_error);
    return th_finish();
}
