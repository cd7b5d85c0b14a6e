/* tiny_cnn.c - builds a small TOSA 1.0 FP32 network with the public builder
 * API and writes it, with a sample input, next to the given path:
 *
 *     ctosa_example_tiny_cnn examples/tiny_cnn.tosa
 *       -> examples/tiny_cnn.tosa, examples/tiny_cnn_input.npy
 *
 * x[1,8,8,3] -> CONV2D 3x3 (8 ch) -> CLAMP 0..6 -> AVG_POOL2D 8x8
 *            -> RESHAPE [1,1,8] -> MATMUL [1,8,4] -> ADD bias -> y[1,1,4]
 *
 * Weights are a fixed pseudo-random sequence, so the file is the same on
 * every run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/ctosa.h"

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static void die(ctosa_error *e) {
    if (!e) return;
    fprintf(stderr, "tiny_cnn: %s\n", ctosa_error_message(e));
    exit(2);
}

static void add_const(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype t, uint32_t rank,
                      const int32_t *shape, const void *data, size_t size) {
    die(ctosa_block_add_tensor(g, b, name, t, rank, shape, NULL));
    ctosa_tensor *tt = ctosa_block_find_tensor(g, b, name);
    die(ctosa_tensor_set_data(g, tt, data, size, true));
    const char *out[] = {name};
    die(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
}

static int write_npy(const char *path, const float *v, const int32_t *shape, int rank) {
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%d, ", shape[i]);
        count *= (size_t)shape[i];
    }
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    unsigned hl = (unsigned)(n + pad + 1);
    pre[8] = (unsigned char)(hl & 0xFF);
    pre[9] = (unsigned char)(hl >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(v, sizeof(float), count, f);
    return fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.tosa\n", argv[0]);
        return 2;
    }
    uint32_t seed = 12345;
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    die(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    die(ctosa_graph_add_region(g, "main", &r));
    die(ctosa_region_add_block(g, r, "main", &b));

    int32_t xs[4] = {1, 8, 8, 3}, ws[4] = {8, 3, 3, 3}, bs[1] = {8}, one[1] = {1};
    int32_t cs[4] = {1, 8, 8, 8}, ps[4] = {1, 1, 1, 8}, rs[3] = {1, 1, 8};
    int32_t ms[3] = {1, 8, 4}, ys[3] = {1, 1, 4};
    float w[8 * 3 * 3 * 3], bias[8], fc[32], fcb[4], zero = 0.0f;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = 0.3f * frand(&seed);
    for (int i = 0; i < 8; i++) bias[i] = 0.1f * frand(&seed);
    for (int i = 0; i < 32; i++) fc[i] = frand(&seed);
    for (int i = 0; i < 4; i++) fcb[i] = 0.05f * frand(&seed);

    die(ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_FP32, 4, xs, NULL));
    die(ctosa_block_add_input(g, b, "x"));
    add_const(g, b, "conv.w", CTOSA_DTYPE_FP32, 4, ws, w, sizeof w);
    add_const(g, b, "conv.b", CTOSA_DTYPE_FP32, 1, bs, bias, sizeof bias);
    add_const(g, b, "zp", CTOSA_DTYPE_FP32, 1, one, &zero, sizeof zero);
    add_const(g, b, "fc.w", CTOSA_DTYPE_FP32, 3, ms, fc, sizeof fc);
    add_const(g, b, "fc.b", CTOSA_DTYPE_FP32, 3, ys, fcb, sizeof fcb);

    int32_t pad1[4] = {1, 1, 1, 1}, st1[2] = {1, 1}, dil[2] = {1, 1};
    ctosa_attr conv = {0};
    conv.pad = (ctosa_i32s){pad1, 4};
    conv.stride = (ctosa_i32s){st1, 2};
    conv.dilation = (ctosa_i32s){dil, 2};
    conv.acc_type = CTOSA_DTYPE_FP32;
    die(ctosa_block_add_tensor(g, b, "conv", CTOSA_DTYPE_FP32, 4, cs, NULL));
    const char *ci[] = {"x", "conv.w", "conv.b", "zp", "zp"}, *co[] = {"conv"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_CONV2D, 5, ci, 1, co, &conv, NULL));

    float lo = 0.0f, hi = 6.0f;
    ctosa_attr clamp = {0};
    clamp.min_val = (ctosa_bytes){(const uint8_t *)&lo, 4};
    clamp.max_val = (ctosa_bytes){(const uint8_t *)&hi, 4};
    clamp.nan_mode = CTOSA_NAN_PROPAGATE;
    die(ctosa_block_add_tensor(g, b, "relu6", CTOSA_DTYPE_FP32, 4, cs, NULL));
    const char *li[] = {"conv"}, *lo_[] = {"relu6"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_CLAMP, 1, li, 1, lo_, &clamp, NULL));

    int32_t k8[2] = {8, 8}, pad0[4] = {0, 0, 0, 0};
    ctosa_attr pool = {0};
    pool.kernel = (ctosa_i32s){k8, 2};
    pool.stride = (ctosa_i32s){st1, 2};
    pool.pad = (ctosa_i32s){pad0, 4};
    pool.acc_type = CTOSA_DTYPE_FP32;
    die(ctosa_block_add_tensor(g, b, "pool", CTOSA_DTYPE_FP32, 4, ps, NULL));
    const char *pi[] = {"relu6", "zp", "zp"}, *po[] = {"pool"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_AVG_POOL2D, 3, pi, 1, po, &pool, NULL));

    int64_t newshape[3] = {1, 1, 8};
    die(ctosa_block_add_shape(g, b, "flat.shape", 3, newshape, NULL));
    const char *so[] = {"flat.shape"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_CONST_SHAPE, 0, NULL, 1, so, NULL, NULL));
    die(ctosa_block_add_tensor(g, b, "flat", CTOSA_DTYPE_FP32, 3, rs, NULL));
    const char *ri[] = {"pool", "flat.shape"}, *ro[] = {"flat"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_RESHAPE, 2, ri, 1, ro, NULL, NULL));

    die(ctosa_block_add_tensor(g, b, "fc", CTOSA_DTYPE_FP32, 3, ys, NULL));
    const char *mi[] = {"flat", "fc.w", "zp", "zp"}, *mo[] = {"fc"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_MATMUL, 4, mi, 1, mo, NULL, NULL));

    die(ctosa_block_add_tensor(g, b, "y", CTOSA_DTYPE_FP32, 3, ys, NULL));
    const char *ai[] = {"fc", "fc.b"}, *ao[] = {"y"};
    die(ctosa_block_add_op(g, b, CTOSA_OP_ADD, 2, ai, 1, ao, NULL, NULL));
    die(ctosa_block_add_output(g, b, "y"));

    die(ctosa_write_file(g, argv[1], NULL));
    ctosa_graph_free(g);

    /* A sample input beside the model. */
    char npy[4096];
    size_t n = strlen(argv[1]);
    if (n > 5 && strcmp(argv[1] + n - 5, ".tosa") == 0) n -= 5;
    snprintf(npy, sizeof npy, "%.*s_input.npy", (int)n, argv[1]);
    float x[8 * 8 * 3];
    for (int i = 0; i < 8 * 8 * 3; i++) x[i] = frand(&seed);
    if (write_npy(npy, x, xs, 4) != 0) {
        fprintf(stderr, "tiny_cnn: cannot write %s\n", npy);
        return 2;
    }
    printf("wrote %s and %s\n", argv[1], npy);
    return 0;
}
