/* test_runtime.c - the partitioned-model runtime (ctosa/runtime.h) through
 * its C API: the counting example backend runs every partition (and only
 * partitions) and gives the interpreter backend's results bit for bit; CPU
 * nodes on the host executor; uint8 at the model interface; load-time
 * errors naming the node; input checks; report reading; output
 * comparison. */
#include <math.h>

#include "counting_backend.h"
#include "ctosa/lower.h"
#include "harness.h"

#define RDATA CTOSA_SOURCE_DIR "/tests/data/runtime/"
#define QDATA CTOSA_SOURCE_DIR "/tests/data/lower/quant/"

/* (lowered graphs not run: here they are - every partition is loaded and run
 * by the runtime, whose backends validate and execute it.) */
static const char *lower_to(const char *model, const char *spec_s, const char *name) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_s, &spec));
    const char *dir = th_path(th_tmpdir(), name);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    opt.stem = "m";
    ctosa_lower_result *r = NULL;
    CHECK_OK(ctosa_lower_file(model, &spec, &opt, &r));
    ctosa_lower_result_free(r);
    static char path[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/m.partitioned.onnx", dir);
    return path[k];
}

static void set_file(ctosa_runtime *rt, const char *name, const char *file) {
    ctosa_tensor_file t;
    CHECK_OK(ctosa_tensor_file_read(file, &t));
    CHECK_OK(ctosa_runtime_set_input_file(rt, name, &t, file));
    ctosa_tensor_file_free(&t);
}

/* The example backend sees every partition prepared once, run once per
 * inference and released once; CPU nodes never reach it. */
static void test_counting_backend(void) {
    const char *pm = lower_to(RDATA "float_mid.onnx", "TOSA-1.0+FP", "count");
    counting_backend cb;
    counting_backend_init(&cb);
    ctosa_runtime_options opt;
    ctosa_runtime_options_init(&opt);
    opt.backend = &cb.backend;
    ctosa_runtime *rt = NULL, *ref = NULL;
    CHECK_OK(ctosa_runtime_load(pm, &opt, &rt));
    CHECK_OK(ctosa_runtime_load(pm, NULL, &ref));
    if (!rt || !ref) return;
    uint32_t parts = 0, host = 0;
    for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++) {
        const ctosa_runtime_step *s = ctosa_runtime_step_at(rt, i);
        if (s->partition) parts++;
        else host++;
        CHECK(s->tosa_ops > 0);
    }
    CHECK_MSG(parts == 2 && host == 2, "%u partitions, %u host nodes", parts, host);
    CHECK(cb.prepares == parts && cb.n_parts == parts && cb.runs == 0);
    set_file(rt, "x", RDATA "float_mid_in.npy");
    set_file(ref, "x", RDATA "float_mid_in.npy");
    for (int r = 0; r < 2; r++) CHECK_OK(ctosa_runtime_run(rt));
    CHECK_OK(ctosa_runtime_run(ref));
    CHECK(cb.runs == 2 * parts);
    for (uint32_t p = 0; p < cb.n_parts; p++) {
        CHECK_MSG(cb.runs_of[p] == 2, "partition %s ran %u times", cb.names[p], cb.runs_of[p]);
        CHECK(strstr(cb.names[p], ".tosa") != NULL);
    }
    ctosa_runtime_tensor a, b;
    CHECK_OK(ctosa_runtime_get_output(rt, "y", &a));
    CHECK_OK(ctosa_runtime_get_output(ref, "y", &b));
    CHECK(strcmp(a.dtype, "float32") == 0 && a.rank == 2 && a.shape[1] == 10);
    CHECK(a.size == b.size && memcmp(a.data, b.data, a.size) == 0);
    float sum = 0;
    for (uint64_t i = 0; i < a.count; i++) sum += ((const float *)a.data)[i];
    CHECK_MSG(fabsf(sum - 1.0f) < 1e-5f, "softmax sums to %g", sum);
    ctosa_runtime_free(rt);
    CHECK(cb.releases == parts);
    ctosa_runtime_free(ref);
}

/* A backend that cannot prepare: the load fails naming the partition. */
static ctosa_error *refuse(void *u, const ctosa_backend_partition *p, void **s) {
    (void)u;
    (void)s;
    return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "device has no room for %s", p->name);
}
static ctosa_error *never_run(void *u, void *s, const ctosa_interp_tensor *i, uint32_t ni,
                              ctosa_interp_tensor *o, uint32_t no) {
    (void)u, (void)s, (void)i, (void)ni, (void)o, (void)no;
    return NULL;
}
static void never_release(void *u, void *s) {
    (void)u;
    (void)s;
}
static void test_backend_refuses(void) {
    const char *pm = lower_to(RDATA "float_mid.onnx", "TOSA-1.0+FP", "refuse");
    ctosa_backend be = {.name = "npu", .prepare = refuse, .run = never_run, .release = never_release};
    ctosa_runtime_options opt;
    ctosa_runtime_options_init(&opt);
    opt.backend = &be;
    ctosa_runtime *rt = NULL;
    CHECK_ERR(ctosa_runtime_load(pm, &opt, &rt), CTOSA_ERR_UNSUPPORTED, "backend 'npu' cannot prepare it");
    CHECK(rt == NULL);
    ctosa_backend half = {.name = "half", .prepare = refuse};
    opt.backend = &half;
    CHECK_ERR(ctosa_runtime_load(pm, &opt, &rt), CTOSA_ERR_USAGE, "lacks prepare, run or release");
}

/* Under TOSA-1.0+INT the whole float network is CPU nodes. */
static void test_all_on_host(void) {
    const char *pm = lower_to(RDATA "float_mid.onnx", "TOSA-1.0+INT", "host");
    ctosa_runtime *rt = NULL, *ref = NULL;
    CHECK_OK(ctosa_runtime_load(pm, NULL, &rt));
    CHECK_OK(ctosa_runtime_load(lower_to(RDATA "float_mid.onnx", "TOSA-1.0+FP", "host_ref"), NULL, &ref));
    if (!rt || !ref) return;
    for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++)
        CHECK(!ctosa_runtime_step_at(rt, i)->partition);
    set_file(rt, "x", RDATA "float_mid_in.npy");
    set_file(ref, "x", RDATA "float_mid_in.npy");
    CHECK_OK(ctosa_runtime_run(rt));
    CHECK_OK(ctosa_runtime_run(ref));
    ctosa_runtime_tensor a;
    ctosa_tensor_file x;
    CHECK_OK(ctosa_runtime_get_output(rt, "y", &a));
    ctosa_runtime_tensor b;
    CHECK_OK(ctosa_runtime_get_output(ref, "y", &b));
    /* same numbers both ways, within float rounding of a different grouping */
    memset(&x, 0, sizeof x);
    x.kind = 'f';
    x.itemsize = 4;
    x.type_name = "float32";
    x.rank = b.rank;
    for (uint32_t i = 0; i < b.rank; i++) x.shape[i] = b.shape[i];
    x.count = b.count;
    x.data = b.data;
    x.size = b.size;
    ctosa_verify_output res;
    CHECK_OK(ctosa_verify_compare(&a, &x, NULL, &res));
    CHECK_MSG(res.pass && res.rel < 1e-5 && res.top1 == 1 && res.topk == 1, "rel %g top1 %d: %s", res.rel,
              res.top1, res.why);
    ctosa_runtime_free(rt);
    ctosa_runtime_free(ref);
}

/* A node no TOSA graph can express fails at load, naming it. */
static void test_unsupported_node(void) {
    const char *pm = lower_to(RDATA "unique_mid.onnx", "TOSA-1.0+FP", "uq");
    ctosa_runtime *rt = NULL;
    CHECK_ERR(ctosa_runtime_load(pm, NULL, &rt), CTOSA_ERR_UNSUPPORTED,
              "node 'unique' (Unique) cannot run on the host executor: unsupported_op");
    CHECK(rt == NULL);
}

/* Output a of the runtime against the generator's numpy result. */
static void check_against(const ctosa_runtime_tensor *a, const char *file, const char *what) {
    ctosa_tensor_file e;
    CHECK_OK(ctosa_tensor_file_read(file, &e));
    bool same = a->rank == e.rank && a->count == e.count && strcmp(a->dtype, "float32") == 0;
    for (uint32_t i = 0; same && i < e.rank; i++) same = a->shape[i] == e.shape[i];
    CHECK_MSG(same, "%s: shape or dtype differs from %s", what, file);
    for (uint64_t i = 0; same && i < e.count; i++) {
        float x = ((const float *)a->data)[i], y = ((const float *)e.data)[i];
        CHECK_MSG(fabsf(x - y) <= 1e-5f * (1 + fabsf(y)), "%s[%llu]: %g, expected %g", what,
                  (unsigned long long)i, x, y);
    }
    ctosa_tensor_file_free(&e);
}

/* model lowered under TOSA-1.0+FP, loaded and run once on float_mid_in.npy
 * as x; NULL when that fails (the checks have said why). */
static ctosa_runtime *run_on_float_mid_in(const char *model, const char *name) {
    ctosa_runtime *rt = NULL;
    CHECK_OK(ctosa_runtime_load(lower_to(model, "TOSA-1.0+FP", name), NULL, &rt));
    if (!rt) return NULL;
    set_file(rt, "x", RDATA "float_mid_in.npy");
    CHECK_OK(ctosa_runtime_run(rt));
    return rt;
}

/* Shapes that depend on the data (NonZero, TopK with k from a Shape,
 * NonMaxSuppression) and an If: those nodes are lowered on a run with its
 * shapes (kept while they stay) or its values. One runtime, four runs:
 * boxes kept, none kept (empty tensors, the other branch), boxes again,
 * and the same input once more (every kept lowering reused). */
static void test_dynamic_shapes(void) {
    const char *pm = lower_to(RDATA "detect_mid.onnx", "TOSA-1.0+FP", "detect");
    ctosa_runtime *rt = NULL;
    CHECK_OK(ctosa_runtime_load(pm, NULL, &rt));
    if (!rt) return;
    const char *order[4] = {"detect", "detect_none", "detect", "detect"};
    static const char *const outs[3] = {"out_boxes", "out_scores", "pooled"};
    for (int r = 0; r < 4; r++) {
        char in[1024], exp[1024];
        snprintf(in, sizeof in, RDATA "%s_in.npy", order[r]);
        set_file(rt, "x", in);
        CHECK_OK(ctosa_runtime_run(rt));
        for (int k = 0; k < 3; k++) {
            ctosa_runtime_tensor a;
            CHECK_OK(ctosa_runtime_get_output(rt, outs[k], &a));
            snprintf(exp, sizeof exp, RDATA "%s_out%d.npy", order[r], k);
            check_against(&a, exp, outs[k]);
            if (k == 0)
                CHECK_MSG((a.count == 0) == (r == 1), "run %d: %llu box values", r,
                          (unsigned long long)a.count);
        }
    }
    /* the steps' timing: every step not run at load ran four times; the
     * data-dependent ones are marked */
    uint32_t deferred = 0, timed = 0;
    for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++) {
        const ctosa_runtime_step *st = ctosa_runtime_step_at(rt, i);
        CHECK_MSG(st->at_load ? st->runs == 0 : st->runs == 4 && st->seconds > 0, "step %s: %llu runs",
                  st->name, (unsigned long long)st->runs);
        deferred += st->deferred;
        timed += !st->at_load;
        if (!strcmp(st->name, "nonzero") || !strcmp(st->name, "maybe_nms") || !strcmp(st->name, "topk"))
            CHECK_MSG(st->deferred && !st->partition, "step %s is not deferred", st->name);
    }
    CHECK_MSG(deferred >= 3 && timed > deferred, "%u deferred of %u timed steps", deferred, timed);
    ctosa_runtime_profile_reset(rt);
    for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++)
        CHECK(ctosa_runtime_step_at(rt, i)->runs == 0 && ctosa_runtime_step_at(rt, i)->seconds == 0);
    ctosa_runtime_free(rt);
    /* a constant k of 100: past the 64-round limit of the TOSA form, so the
     * run's values are sorted */
    if (!(rt = run_on_float_mid_in(RDATA "topk_big.onnx", "topk"))) return;
    ctosa_runtime_tensor tv, ti;
    CHECK_OK(ctosa_runtime_get_output(rt, "vals", &tv));
    check_against(&tv, RDATA "topk_big_out0.npy", "vals");
    CHECK_OK(ctosa_runtime_get_output(rt, "idx", &ti));
    ctosa_tensor_file ei;
    CHECK_OK(ctosa_tensor_file_read(RDATA "topk_big_out1.npy", &ei));
    CHECK(strcmp(ti.dtype, "int64") == 0 && ti.size == ei.size && memcmp(ti.data, ei.data, ei.size) == 0);
    ctosa_tensor_file_free(&ei);
    ctosa_runtime_free(rt);
    /* NonZero's result read by a Cast: [4, n] with n the positive elements */
    if (!(rt = run_on_float_mid_in(RDATA "nonzero_mid.onnx", "nz"))) return;
    ctosa_runtime_tensor y;
    CHECK_OK(ctosa_runtime_get_output(rt, "y", &y));
    CHECK_MSG(y.rank == 2 && y.shape[0] == 4 && y.shape[1] > 0 && y.shape[1] < 8 * 16 * 16, "rank %u",
              y.rank);
    const float *v = y.data;
    const int64_t n = y.rank == 2 ? y.shape[1] : 0;
    for (int64_t j = 1; j < n; j++) { /* batch 0, channel < 8, in row-major order */
        float prev = v[n + j - 1] * 256 + v[2 * n + j - 1] * 16 + v[3 * n + j - 1];
        float cur = v[n + j] * 256 + v[2 * n + j] * 16 + v[3 * n + j];
        CHECK_MSG(cur > prev && v[j] == 0 && v[n + j] < 8, "index %lld", (long long)j);
    }
    ctosa_runtime_free(rt);
}

/* uint8 at the model interface: accepted and returned as uint8, the same
 * bits the partition carries as INT8; scale / zero point from the report. */
static void test_uint8_interface(void) {
    const char *pm = lower_to(QDATA "add_requant_u8/model.onnx", "TOSA-1.0+INT", "u8");
    ctosa_runtime *rt = NULL;
    CHECK_OK(ctosa_runtime_load(pm, NULL, &rt));
    if (!rt) return;
    ctosa_runtime_tensor in, out;
    CHECK_OK(ctosa_runtime_input_info(rt, 0, &in));
    CHECK_OK(ctosa_runtime_output_info(rt, 0, &out));
    CHECK(strcmp(in.dtype, "uint8") == 0); /* a raw uint8 input: no scale in the report */
    CHECK(strcmp(out.dtype, "uint8") == 0 && out.quantized && out.scale > 0);
    ctosa_tensor_file t;
    CHECK_OK(ctosa_tensor_file_read(QDATA "add_requant_u8/input_0.npy", &t));
    /* a wrong dtype is refused, naming both */
    CHECK_ERR(ctosa_runtime_set_input(rt, in.name, "int8", t.rank, t.shape, t.data, t.size), CTOSA_ERR_USAGE,
              "expected uint8");
    CHECK_ERR(ctosa_runtime_run(rt), CTOSA_ERR_USAGE, "is not given");
    CHECK_OK(ctosa_runtime_set_input(rt, in.name, "uint8", t.rank, t.shape, t.data, t.size));
    ctosa_tensor_file_free(&t);
    CHECK_OK(ctosa_runtime_run(rt));
    ctosa_runtime_tensor v;
    CHECK_OK(ctosa_runtime_get_output(rt, out.name, &v));
    ctosa_tensor_file ref;
    CHECK_OK(ctosa_tensor_file_read(QDATA "add_requant_u8/ref_output_0.npy", &ref));
    ctosa_verify_output res;
    CHECK_OK(ctosa_verify_compare(&v, &ref, NULL, &res));
    CHECK_MSG(res.pass && strcmp(res.kind, "quantized") == 0 && res.max_abs <= 1, "%s max %g: %s", res.kind,
              res.max_abs, res.why);
    ctosa_tensor_file_free(&ref);
    CHECK_ERR(ctosa_runtime_get_output(rt, "nope", &v), CTOSA_ERR_USAGE, "'nope' is not a model output");
    CHECK_ERR(ctosa_runtime_set_input(rt, "nope", "uint8", 0, NULL, NULL, 0), CTOSA_ERR_USAGE,
              "'nope' is not a model input");
    ctosa_runtime_free(rt);
}

static void test_report(void) {
    const char *pm = lower_to(QDATA "add_requant_u8/model.onnx", "TOSA-1.0+INT", "rep");
    ctosa_report *r = NULL;
    CHECK_OK(ctosa_report_load_beside(pm, &r));
    CHECK(r != NULL);
    ctosa_report *r2 = NULL;
    char part[1100];
    snprintf(part, sizeof part, "%.*s.part0.tosa", (int)(strlen(pm) - strlen(".partitioned.onnx")), pm);
    CHECK_OK(ctosa_report_load_beside(part, &r2));
    CHECK(r2 != NULL);
    ctosa_runtime_tensor t;
    CHECK(ctosa_report_tensor(r, "t11", &t) && strcmp(t.dtype, "uint8") == 0 && t.quantized);
    CHECK(!ctosa_report_tensor(r, "not there", &t));
    ctosa_report_free(r);
    ctosa_report_free(r2);
    ctosa_report *none = (ctosa_report *)1;
    CHECK_OK(ctosa_report_load_beside("/nonexistent/a.part0.tosa", &none));
    CHECK(none == NULL);
    CHECK_OK(ctosa_report_load_beside("model.tosa", &none)); /* no <stem>.partN: no report */
    CHECK(none == NULL);
    const char *bad = th_path(th_tmpdir(), "bad.report.json");
    th_write(bad, "{\"partitions\": [{\"inputs\": [{\"name\": 1}]}]}", 44);
    CHECK_ERR(ctosa_report_load(bad, &r), CTOSA_ERR_FORMAT, "bad.report.json:1:");
}

/* Comparison rules: quantized in steps, integers exactly, shape mismatch. */
static void test_compare(void) {
    float av[4] = {0, 1, 2, 3}, ev[4] = {0, 1, 2, 3.5f};
    int64_t shape[2] = {1, 4};
    ctosa_runtime_tensor a = {.name = "y",
                              .dtype = "float32",
                              .rank = 2,
                              .shape = shape,
                              .count = 4,
                              .data = av,
                              .size = sizeof av};
    ctosa_tensor_file e = {.kind = 'f',
                           .itemsize = 4,
                           .type_name = "float32",
                           .rank = 2,
                           .shape = {1, 4},
                           .count = 4,
                           .data = ev,
                           .size = sizeof ev};
    ctosa_verify_output r;
    CHECK_OK(ctosa_verify_compare(&a, &e, NULL, &r));
    CHECK(!r.pass && fabs(r.rel - 0.5 / 3.5) < 1e-9 && r.top1 == 1);
    a.quantized = true;
    a.scale = 0.25; /* 0.5 = 2 steps */
    CHECK_OK(ctosa_verify_compare(&a, &e, NULL, &r));
    CHECK(r.pass && strcmp(r.kind, "quantized") == 0 && fabs(r.max_abs - 2) < 1e-9);
    a.scale = 0.1; /* 5 steps on 1 of 4 */
    CHECK_OK(ctosa_verify_compare(&a, &e, NULL, &r));
    CHECK(!r.pass && fabs(r.within - 0.75) < 1e-9);
    int32_t ai[4] = {1, 2, 3, 4}, ei[4] = {1, 2, 3, 5};
    ctosa_runtime_tensor b = {.name = "i",
                              .dtype = "int32",
                              .rank = 1,
                              .shape = shape + 1,
                              .count = 4,
                              .data = ai,
                              .size = sizeof ai};
    ctosa_tensor_file f = {.kind = 'i',
                           .itemsize = 4,
                           .type_name = "int32",
                           .rank = 1,
                           .shape = {4},
                           .count = 4,
                           .data = ei,
                           .size = sizeof ei};
    CHECK_OK(ctosa_verify_compare(&b, &f, NULL, &r));
    CHECK(!r.pass && strcmp(r.kind, "integer") == 0);
    f.shape[0] = 3;
    CHECK_OK(ctosa_verify_compare(&b, &f, NULL, &r));
    CHECK(!r.pass && strstr(r.why, "shape"));
}

int main(void) {
    RUN(test_counting_backend);
    RUN(test_backend_refuses);
    RUN(test_all_on_host);
    RUN(test_unsupported_node);
    RUN(test_dynamic_shapes);
    RUN(test_uint8_interface);
    RUN(test_report);
    RUN(test_compare);
    return th_finish();
}
