/* test_interp_examples.c - the official example graphs
 * (../shared/reference/tosa/examples/<test>/flatbuffer-tflite/) run on the
 * interpreter with their desc.json inputs, compared with tflite_result.npy
 * (floats within 1e-5 relative, integers exactly); and `ctosa run` on the
 * add example: outputs, name sanitising, missing / mis-shaped inputs. */
#include <math.h>
#include <unistd.h>

#include "harness.h"
#include "tensorfile/tensorfile.h"

/* The strings of JSON array `key` in text (desc.json is simple). */
static int json_strings(const char *text, const char *key, char out[][128], int max) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(text, pat);
    if (!p || !(p = strchr(p, '['))) return 0;
    int n = 0;
    for (p++; *p && *p != ']' && n < max;) {
        if (*p != '"') {
            p++;
            continue;
        }
        const char *e = strchr(p + 1, '"');
        if (!e) break;
        snprintf(out[n++], 128, "%.*s", (int)(e - p - 1), p + 1);
        p = e + 1;
    }
    return n;
}

static bool close_enough(const npy_array *got, const npy_array *want, double *worst) {
    if (got->count != want->count || got->kind != want->kind || got->itemsize != want->itemsize) return false;
    *worst = 0;
    /* Relative error, with the magnitude floored at 1% of the output's
     * range: an output element near zero is the difference of terms of the
     * output's size, so float rounding of those terms (which depends on the
     * summation order TFLite and we use) bounds its error, not its own
     * magnitude. */
    double range = 1e-3;
    if (got->kind == 'f' && got->itemsize == 4)
        for (uint64_t i = 0; i < want->count; i++)
            range = fmax(range, 0.01 * fabs(((const float *)want->data)[i]));
    for (uint64_t i = 0; i < got->count; i++) {
        double a, b;
        if (got->kind == 'f' && got->itemsize == 4) {
            a = ((const float *)got->data)[i];
            b = ((const float *)want->data)[i];
            double err = fabs(a - b) / fmax(fabs(b), range);
            if (err > *worst) *worst = err;
            if (err > 1e-5) return false;
        } else if (got->itemsize == 1) {
            if (((const int8_t *)got->data)[i] != ((const int8_t *)want->data)[i]) return false;
        } else {
            return false;
        }
    }
    return true;
}

/* Returns 1 ran and matched, 0 failed, -1 skipped (kernel not available). */
static int run_example(const char *name) {
    char dir[512], path[2048], *desc = NULL;
    snprintf(dir, sizeof dir, "%s/%s/flatbuffer-tflite", th_shared_path("reference/tosa/examples"), name);
    snprintf(path, sizeof path, "%s/desc.json", dir);
    size_t dn;
    desc = (char *)th_read(path, &dn);
    CHECK_MSG(desc != NULL, "%s", path);
    if (!desc) return 0;
    char ifm[8][128], ifile[8][128], ofm[4][128];
    char *tf = strstr(desc, "\"tosa_file\"");
    char tosa_file[128] = "";
    if (tf && (tf = strchr(tf + 11, '"'))) {
        char *e = strchr(tf + 1, '"');
        if (e) snprintf(tosa_file, sizeof tosa_file, "%.*s", (int)(e - tf - 1), tf + 1);
    }
    int ni = json_strings(desc, "ifm_name", ifm, 8);
    int nf = json_strings(desc, "ifm_file", ifile, 8);
    int no = json_strings(desc, "ofm_name", ofm, 4);
    free(desc);
    CHECK(ni == nf && ni > 0 && no == 1 && tosa_file[0]);
    snprintf(path, sizeof path, "%s/%s", dir, tosa_file);
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    int result = 0;
    ctosa_error *e = ctosa_read_file(path, NULL, &g);
    if (!e) e = ctosa_interp_create(g, NULL, &it);
    for (int i = 0; !e && i < ni; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, ifile[i]);
        npy_array a;
        e = npy_read_file(path, &a);
        if (e) break;
        uint32_t n = ctosa_interp_input_count(it);
        ctosa_interp_tensor info = {0};
        for (uint32_t k = 0; k < n; k++) {
            ctosa_interp_tensor t;
            ctosa_error_free(ctosa_interp_input_info(it, k, &t));
            if (strcmp(t.name, ifm[i]) == 0) info = t;
        }
        CHECK_MSG(info.name != NULL, "%s: no input %s", name, ifm[i]);
        void *host = NULL;
        uint64_t hs;
        if (info.name) e = npy_to_host(&a, info.dtype, ifm[i], &host, &hs);
        if (info.name && !e) e = ctosa_interp_set_input(it, info.name, info.dtype, a.rank, a.shape, host, hs);
        free(host);
        npy_free(&a);
    }
    if (!e) e = ctosa_interp_run(it);
    if (e && ctosa_error_code(e) == CTOSA_ERR_UNSUPPORTED) {
        fprintf(stderr, "  SKIPPED %s: kernel not available (%s)\n", name, ctosa_error_message(e));
        ctosa_error_free(e);
        result = -1;
    } else if (e) {
        CHECK_MSG(0, "%s: %s", name, ctosa_error_message(e));
        ctosa_error_free(e);
    } else {
        ctosa_interp_tensor out;
        CHECK_OK(ctosa_interp_get_output(it, ofm[0], &out));
        npy_array want, got = {0};
        snprintf(path, sizeof path, "%s/../tflite_result.npy", dir);
        CHECK_OK(npy_read_file(path, &want));
        got.kind = out.dtype == CTOSA_DTYPE_FP32 ? 'f' : 'i';
        got.itemsize = (uint32_t)ctosa_host_elem_size(out.dtype);
        got.count = out.count;
        got.data = out.data;
        double worst = 0;
        bool ok = close_enough(&got, &want, &worst);
        CHECK_MSG(ok, "%s: output differs from tflite_result.npy (worst relative error %g)", name, worst);
        fprintf(stderr, "  %s: %llu values, worst relative error %g\n", name, (unsigned long long)out.count,
                worst);
        result = ok;
        npy_free(&want);
    }
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return result;
}

static void test_examples(void) {
    const char *names[] = {
        "test_add_1x4x4x4_f32",
        "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11",
        "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11",
        "test_lstm_stateful_13x21x3_f32",
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) ran += run_example(names[i]) == 1;
    /* the add example needs group-B kernels only: it must always run */
    CHECK(ran >= 1);
}

static void test_cli_run(void) {
    const char *ex = th_shared_path("reference/tosa/examples/test_add_1x4x4x4_f32");
    const char *dir = th_tmpdir();
    char model[600], in0[600], in1[600];
    snprintf(model, sizeof model, "%s/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa", ex);
    snprintf(in0, sizeof in0, "%s/placeholder_0.npy", ex);
    snprintf(in1, sizeof in1, "%s/placeholder_1.npy", ex);
    char *out = NULL;
    int rc = th_run(&out,
                    "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s' -o '%s/o' "
                    "--threads 2",
                    th_ctosa(), model, in0, in1, dir);
    CHECK_MSG(rc == 0, "%s", out ? out : "");
    free(out);
    npy_array got, want;
    CHECK_OK(npy_read_file(th_path(dir, "o/TosaOutput_0.npy"), &got));
    snprintf(model + strlen(model) - strlen("flatbuffer-tflite/test_add_1x4x4x4_f32.tosa"), 64,
             "tflite_result.npy");
    CHECK_OK(npy_read_file(model, &want));
    CHECK(got.count == 64 && want.count == 64 && memcmp(got.data, want.data, 256) == 0);
    npy_free(&got);
    npy_free(&want);
    snprintf(model, sizeof model, "%s/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa", ex);
    /* --output NAME=FILE */
    rc = th_run(&out,
                "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s' -q "
                "--output TosaOutput_0='%s/named.npy'",
                th_ctosa(), model, in0, in1, dir);
    CHECK(rc == 0 && out && out[0] == 0);
    free(out);
    CHECK(access(th_path(dir, "named.npy"), R_OK) == 0);
    /* a missing input names it with shape and dtype */
    rc = th_run(&out, "'%s' run '%s' --input TosaInput_0='%s' -o '%s/o2'", th_ctosa(), model, in0, dir);
    CHECK_MSG(rc == 2 && out &&
                  strstr(out, "input 'TosaInput_1' (dtype fp32, shape [1,4,4,4]) is "
                              "not given"),
              "%s", out ? out : "");
    free(out);
    CHECK(access(th_path(dir, "o2"), F_OK) != 0); /* nothing written */
    /* a mis-shaped input */
    const char *bad = th_path(dir, "bad.npy");
    int64_t s[] = {1, 4, 4};
    float z[16] = {0};
    CHECK_OK(npy_write_file(bad, "<f4", 3, s, z, sizeof z));
    rc = th_run(&out, "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s'", th_ctosa(), model,
                in0, bad);
    CHECK_MSG(rc == 2 && out &&
                  strstr(out, "input 'TosaInput_1': expected shape [1,4,4,4] dtype "
                              "fp32") &&
                  strstr(out, "[1,4,4]"),
              "%s", out ? out : "");
    free(out);
    /* an int64 file for an fp32 input */
    int64_t iv[64] = {0}, s4[] = {1, 4, 4, 4};
    CHECK_OK(npy_write_file(bad, "<i8", 4, s4, iv, sizeof iv));
    rc = th_run(&out, "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s'", th_ctosa(), model,
                in0, bad);
    CHECK_MSG(rc == 2 && out && strstr(out, "expects fp32"), "%s", out ? out : "");
    free(out);
    /* an ONNX TensorProto .pb input (needs python3 with onnx to make one) */
    if (th_run(NULL, "/usr/bin/python3 -c 'import onnx' 2>/dev/null") == 0) {
        rc = th_run(&out,
                    "cd '%s' && /usr/bin/python3 -c \"import numpy as np, onnx.numpy_helper as h; "
                    "a=np.load('%s'); open('in1.pb','wb').write(h.from_array(a, 'x').SerializeToString())\"",
                    dir, in1);
        CHECK(rc == 0);
        free(out);
        rc = th_run(&out,
                    "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s/in1.pb' "
                    "--output TosaOutput_0='%s/pb.npy'",
                    th_ctosa(), model, in0, dir, dir);
        CHECK_MSG(rc == 0, "%s", out ? out : "");
        free(out);
        unsigned char *x = th_read(th_path(dir, "pb.npy"), NULL),
                      *y = th_read(th_path(dir, "named.npy"), NULL);
        CHECK(x && y && memcmp(x, y, 128 + 256) == 0);
        free(x);
        free(y);
    } else {
        fprintf(stderr, "  (python3 onnx not available: .pb input not tested)\n");
    }
    /* unknown input name, malformed npy, unknown flag */
    rc = th_run(&out, "'%s' run '%s' --input nope='%s'", th_ctosa(), model, in0);
    CHECK(rc == 2 && out && strstr(out, "'nope' is not a graph input"));
    free(out);
    th_write(bad, "\x93NUMPY\x01\x00", 8);
    rc = th_run(&out, "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s'", th_ctosa(), model,
                in0, bad);
    CHECK_MSG(rc == 2 && out && strstr(out, "bad.npy: byte"), "%s", out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' run '%s' --bogus", th_ctosa(), model);
    CHECK(rc == 2 && out && strstr(out, "unknown option '--bogus'"));
    free(out);
    rc = th_run(&out, "'%s' run '%s' -o", th_ctosa(), model);
    CHECK(rc == 2 && out && strstr(out, "-o needs a value"));
    free(out);
    /* float overflow is not an error: it gives inf */
    float big[64];
    for (int i = 0; i < 64; i++) big[i] = 3.4e38f;
    CHECK_OK(npy_write_file(bad, "<f4", 4, s4, big, sizeof big));
    rc = th_run(&out,
                "'%s' run '%s' --input TosaInput_0='%s' --input TosaInput_1='%s' -q "
                "--output TosaOutput_0='%s/inf.npy'",
                th_ctosa(), model, in0, bad, dir);
    CHECK_MSG(rc == 0, "%s", out ? out : "");
    free(out);
}

/* Output names with characters outside [A-Za-z0-9._-] become '_' in file
 * names. */
static void test_cli_sanitised_names(void) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    int32_t d[] = {2};
    CHECK_OK(ctosa_block_add_tensor(g, b, "in:0", CTOSA_DTYPE_INT8, 1, d, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "out/y:0", CTOSA_DTYPE_INT8, 1, d, NULL));
    const char *in[] = {"in:0"}, *out[] = {"out/y:0"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_IDENTITY, 1, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "out:y/0", CTOSA_DTYPE_INT8, 1, d, NULL));
    const char *out2[] = {"out:y/0"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_BITWISE_NOT, 1, in, 1, out2, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "in:0"));
    CHECK_OK(ctosa_block_add_output(g, b, "out/y:0"));
    CHECK_OK(ctosa_block_add_output(g, b, "out:y/0"));
    const char *dir = th_tmpdir();
    char model[600];
    snprintf(model, sizeof model, "%s/ident.tosa", dir);
    CHECK_OK(ctosa_write_file(g, model, NULL));
    ctosa_graph_free(g);
    int8_t v[] = {-3, 4};
    int64_t s[] = {2};
    CHECK_OK(npy_write_file(th_path(dir, "v.npy"), "|i1", 1, s, v, 2));
    char *o = NULL;
    int rc = th_run(&o, "'%s' run '%s' --input 'in:0=%s/v.npy' -o '%s/outdir'", th_ctosa(), model, dir, dir);
    CHECK_MSG(rc == 0, "%s", o ? o : "");
    free(o);
    npy_array a;
    CHECK_OK(npy_read_file(th_path(dir, "outdir/out_y_0.npy"), &a));
    CHECK(a.count == 2 && ((int8_t *)a.data)[0] == -3 && ((int8_t *)a.data)[1] == 4);
    npy_free(&a);
    /* the second name sanitises to the same file name: it gets a suffix */
    CHECK_OK(npy_read_file(th_path(dir, "outdir/out_y_0_1.npy"), &a));
    CHECK(a.count == 2 && ((int8_t *)a.data)[0] == 2 && ((int8_t *)a.data)[1] == -5);
    npy_free(&a);
}

/* A REQUIRE failure while running (INTDIV by zero) is exit 1 naming the
 * operator; nothing is written. */
static void test_cli_require_exit1(void) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    int32_t d[] = {3};
    const char *names[] = {"a", "b", "q"};
    for (int i = 0; i < 3; i++)
        CHECK_OK(ctosa_block_add_tensor(g, b, names[i], CTOSA_DTYPE_INT32, 1, d, NULL));
    const char *in[] = {"a", "b"}, *out[] = {"q"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_INTDIV, 2, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "a"));
    CHECK_OK(ctosa_block_add_input(g, b, "b"));
    CHECK_OK(ctosa_block_add_output(g, b, "q"));
    const char *dir = th_tmpdir();
    char model[600];
    snprintf(model, sizeof model, "%s/div.tosa", dir);
    CHECK_OK(ctosa_write_file(g, model, NULL));
    ctosa_graph_free(g);
    int32_t a[] = {7, -7, 9}, bv[] = {2, 0, 3};
    int64_t s[] = {3};
    CHECK_OK(npy_write_file(th_path(dir, "a.npy"), "<i4", 1, s, a, sizeof a));
    CHECK_OK(npy_write_file(th_path(dir, "b.npy"), "<i4", 1, s, bv, sizeof bv));
    char *o = NULL;
    int rc = th_run(&o, "'%s' run '%s' --input a='%s/a.npy' --input b='%s/b.npy' -o '%s/divout'", th_ctosa(),
                    model, dir, dir, dir);
    CHECK_MSG(rc == 1 && o &&
                  strstr(o, "op #0 INTDIV 'q': REQUIRE failed at output element 1: "
                            "division of -7 by zero"),
              "rc %d: %s", rc, o ? o : "");
    free(o);
    CHECK(access(th_path(dir, "divout/q.npy"), F_OK) != 0);
    bv[1] = -2;
    CHECK_OK(npy_write_file(th_path(dir, "b.npy"), "<i4", 1, s, bv, sizeof bv));
    rc = th_run(&o, "'%s' run '%s' --input a='%s/a.npy' --input b='%s/b.npy' -o '%s/divout'", th_ctosa(),
                model, dir, dir, dir);
    CHECK(rc == 0);
    free(o);
    npy_array q;
    CHECK_OK(npy_read_file(th_path(dir, "divout/q.npy"), &q));
    CHECK(q.count == 3 && ((int32_t *)q.data)[0] == 3 && ((int32_t *)q.data)[1] == 3 &&
          ((int32_t *)q.data)[2] == 3);
    npy_free(&q);
}

/* Corrupted copies of the example graphs (deterministic byte flips) must
 * either run or fail with an error that has a code and a message: never a
 * crash or a sanitizer report. */
static void test_corrupted_graphs(void) {
    const char *names[] = {"test_add_1x4x4x4_f32", "test_lstm_stateful_13x21x3_f32",
                           "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11"};
    uint64_t rng = 12345;
    int ran = 0, failed = 0;
    for (int n = 0; n < 3; n++) {
        char path[1024];
        const char *ex = th_shared_path("reference/tosa/examples");
        snprintf(path, sizeof path, "%s/%s/flatbuffer-tflite/%s.tosa", ex, names[n], names[n]);
        size_t size;
        unsigned char *orig = th_read(path, &size);
        CHECK(orig != NULL);
        if (!orig) continue;
        npy_array in0;
        snprintf(path, sizeof path, "%s/%s/placeholder_0.npy", ex, names[n]);
        CHECK_OK(npy_read_file(path, &in0));
        unsigned char *buf = malloc(size);
        for (int iter = 0; iter < 120; iter++) {
            memcpy(buf, orig, size);
            for (int k = 0; k < 1 + iter % 3; k++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                buf[(rng >> 33) % size] = (unsigned char)(rng >> 20);
            }
            ctosa_graph *g = NULL;
            ctosa_interp *it = NULL;
            ctosa_error *e = ctosa_read_memory(buf, size, "fuzz.tosa", NULL, &g);
            ctosa_interp_options opt;
            ctosa_interp_options_init(&opt);
            opt.max_memory = 64u << 20;
            opt.threads = 1;
            if (!e) e = ctosa_interp_create(g, &opt, &it);
            if (!e) {
                /* feed every input that has placeholder_0's shape and dtype */
                for (uint32_t i = 0; i < ctosa_interp_input_count(it) && !e; i++) {
                    ctosa_interp_tensor info;
                    ctosa_error_free(ctosa_interp_input_info(it, i, &info));
                    void *host = NULL;
                    uint64_t hs;
                    e = npy_to_host(&in0, info.dtype, info.name, &host, &hs);
                    if (!e)
                        e = ctosa_interp_set_input(it, info.name, info.dtype, in0.rank, in0.shape, host, hs);
                    free(host);
                }
            }
            if (!e) e = ctosa_interp_run(it);
            if (e) {
                failed++;
                CHECK(ctosa_error_code(e) != CTOSA_OK && ctosa_error_message(e)[0]);
                CHECK_MSG(ctosa_error_code(e) != CTOSA_ERR_INTERNAL, "%s", ctosa_error_message(e));
                ctosa_error_free(e);
            } else {
                ran++;
            }
            ctosa_interp_free(it);
            ctosa_graph_free(g);
        }
        free(buf);
        free(orig);
        npy_free(&in0);
    }
    fprintf(stderr, "  corrupted graphs: %d ran, %d failed cleanly\n", ran, failed);
    CHECK(ran + failed == 360);
}

int main(void) {
    th_shared_path("reference/tosa/examples");
    RUN(test_examples);
    RUN(test_cli_run);
    RUN(test_cli_sanitised_names);
    RUN(test_cli_require_exit1);
    RUN(test_corrupted_graphs);
    return th_finish();
}
