/* test_lower_framework.c - the lowering framework and partitioner on the
 * small models of tests/data/lower/framework/ (generator: gen.py there):
 * folding, shape arithmetic, partitions without cycles, no_compute,
 * needs_constant + --bind, --shape, int64 narrowing, determinism, the
 * every-node-once property, the partitioned ONNX (onnx.checker when
 * available) and numeric results of the partitions on the interpreter. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "lower_testutil.h"
#include "util/util.h"

static const char *model(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/tests/data/lower/framework/%s", CTOSA_SOURCE_DIR, name);
    return buf[k];
}

static ctosa_lower_result *lower(const char *name, const char *spec_s, const char *dir,
                                 const ctosa_lower_options *base) {
    ctosa_spec spec;
    ctosa_error *e = ctosa_spec_parse(spec_s, &spec);
    CHECK(e == NULL);
    ctosa_error_free(e);
    ctosa_lower_options opt;
    if (base) opt = *base;
    else ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    ctosa_lower_result *r = NULL;
    e = ctosa_lower_file(model(name), &spec, &opt, &r);
    CHECK_MSG(e == NULL, "%s: %s", name, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    char why[1024];
    if (r)
        CHECK_MSG(lt_validate_all(ctosa_lower_result_summary(r), &spec, why, sizeof why), "%s: %s", name,
                  why);
    return r;
}

/* Every node exactly once: in one partition or in the fallback list. */
static void check_every_node_once(const ctosa_lower_summary *s) {
    uint32_t seen = 0;
    for (uint32_t p = 0; p < s->n_partitions; p++) seen += s->partitions[p].n_nodes;
    seen += s->n_fallback;
    CHECK(seen == s->nodes_total);
    CHECK(s->nodes_delegated + s->n_fallback == s->nodes_total);
    for (uint32_t p = 0; p < s->n_partitions; p++)
        for (uint32_t i = 0; i < s->partitions[p].n_nodes; i++) {
            const char *n = s->partitions[p].nodes[i];
            uint32_t hits = 0;
            for (uint32_t q = 0; q < s->n_partitions; q++)
                for (uint32_t j = 0; j < s->partitions[q].n_nodes; j++)
                    hits += strcmp(s->partitions[q].nodes[j], n) == 0;
            for (uint32_t f = 0; f < s->n_fallback; f++) hits += strcmp(s->fallback[f].node, n) == 0;
            CHECK_MSG(hits == 1, "node %s appears %u times", n, hits);
        }
    for (uint32_t f = 0; f < s->n_fallback; f++) {
        CHECK(s->fallback[f].code && s->fallback[f].code[0]);
        CHECK(s->fallback[f].reason && s->fallback[f].reason[0]);
    }
    CHECK(s->report_json && strstr(s->report_json, "\"nodes_total\""));
}

static const ctosa_lower_fallback *fb(const ctosa_lower_summary *s, const char *node) {
    for (uint32_t i = 0; i < s->n_fallback; i++)
        if (strcmp(s->fallback[i].node, node) == 0) return &s->fallback[i];
    return NULL;
}

static int part_of(const ctosa_lower_summary *s, const char *node) {
    for (uint32_t p = 0; p < s->n_partitions; p++)
        for (uint32_t i = 0; i < s->partitions[p].n_nodes; i++)
            if (strcmp(s->partitions[p].nodes[i], node) == 0) return (int)p;
    return -1;
}

static uint32_t op_count(const ctosa_lower_partition *p, const char *op) {
    for (uint32_t i = 0; i < p->n_op_counts; i++)
        if (strcmp(p->op_names[i], op) == 0) return p->op_counts[i];
    return 0;
}

/* Runs a one-input one-output fp32 partition. */
static bool run_f32(const ctosa_lower_partition *p, const float *x, uint64_t nx, float *y, uint64_t ny) {
    ctosa_interp *it = NULL;
    ctosa_interp_options o;
    ctosa_interp_options_init(&o);
    o.threads = 1;
    ctosa_error *e = ctosa_interp_create(p->graph, &o, &it);
    if (!e)
        e = ctosa_interp_set_input(it, p->inputs[0].name, CTOSA_DTYPE_FP32, p->inputs[0].rank,
                                   p->inputs[0].shape, x, nx * 4);
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, p->outputs[0].name, &t);
    bool ok = !e && t.size == ny * 4;
    if (ok) memcpy(y, t.data, ny * 4);
    CHECK_MSG(ok, "%s", e ? ctosa_error_message(e) : "size");
    ctosa_error_free(e);
    ctosa_interp_free(it);
    return ok;
}

static void test_chain(void) {
    ctosa_lower_result *r = lower("chain.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    CHECK(s->nodes_delegated == 4 && s->n_partitions == 1);
    if (s->n_partitions == 1) {
        const ctosa_lower_partition *p = &s->partitions[0];
        CHECK(strcmp(p->inputs[0].name, "x") == 0 && strcmp(p->outputs[0].name, "y") == 0);
        CHECK(p->outputs[0].rank == 2 && p->outputs[0].shape[0] == 2 && p->outputs[0].shape[1] == 12);
        CHECK(op_count(p, "IDENTITY") == 0);
        float x[24], y[24];
        for (int i = 0; i < 24; i++) x[i] = (float)(i - 12) * 0.5f;
        if (run_f32(p, x, 24, y, 24))
            for (int i = 0; i < 24; i++) CHECK(y[i] == (x[i] > 0 ? x[i] : 0));
    }
    ctosa_lower_result_free(r);
}

static void test_shape_chain(void) {
    ctosa_lower_result *r = lower("shape_chain.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    /* Shape -> Gather -> Unsqueeze -> Concat fold away: one partition with
     * the Relu and the Reshape, input x, output y. */
    CHECK_MSG(s->nodes_delegated == 6, "%s", s->report_json);
    if (s->n_partitions == 1) {
        const ctosa_lower_partition *p = &s->partitions[0];
        CHECK(p->n_inputs == 1 && p->n_outputs == 1);
        CHECK(op_count(p, "GATHER") == 0 && op_count(p, "CONCAT") == 0);
        float x[24], y[24];
        for (int i = 0; i < 24; i++) x[i] = (float)(i % 5) - 2;
        if (run_f32(p, x, 24, y, 24))
            for (int i = 0; i < 24; i++) CHECK(y[i] == (x[i] > 0 ? x[i] : 0));
    }
    ctosa_lower_result_free(r);
}

static void test_fold(void) {
    ctosa_lower_result *r = lower("fold.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    CHECK(s->nodes_delegated == 4 && s->n_partitions == 1);
    if (s->n_partitions == 1) {
        const ctosa_lower_partition *p = &s->partitions[0];
        /* Constant, Relu(const), Add(const, w) are folded: one ADD left. */
        CHECK(op_count(p, "ADD") == 1 && op_count(p, "CLAMP") == 0);
        float x[12], y[12];
        const float k[4] = {0.5f, 2.5f, 0.5f, 4.5f};
        for (int i = 0; i < 12; i++) x[i] = (float)i;
        if (run_f32(p, x, 12, y, 12))
            for (int i = 0; i < 12; i++) CHECK(fabsf(y[i] - (x[i] + k[i % 4])) < 1e-6f);
    }
    ctosa_lower_result_free(r);
}

static void test_split_no_cycle(void) {
    ctosa_lower_result *r = lower("split.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    int a = part_of(s, "A"), b = part_of(s, "B");
    CHECK(a >= 0 && b >= 0 && a != b); /* A -> X(cpu) -> B: merging A and B would be a cycle */
    CHECK(a < b);                      /* ids in topological order */
    const ctosa_lower_fallback *x = fb(s, "X");
    CHECK(x && strcmp(x->code, "dynamic_shape") == 0 && strstr(x->reason, "NonZero"));
    const ctosa_lower_fallback *xc = fb(s, "Xc");
    CHECK(xc && strcmp(xc->code, "dynamic_shape") == 0);
    ctosa_lower_result_free(r);
}

static void test_branches_merge(void) {
    ctosa_lower_result *r = lower("branches.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    CHECK(s->n_partitions == 1 && s->nodes_delegated == 3);
    if (s->n_partitions == 1) CHECK(s->partitions[0].n_inputs == 2 && s->partitions[0].n_outputs == 1);
    ctosa_lower_result_free(r);
}

static void test_no_compute(void) {
    ctosa_lower_result *r = lower("no_compute.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    CHECK(s->n_partitions == 0);
    const ctosa_lower_fallback *t = fb(s, "tr");
    CHECK(t && strcmp(t->code, "no_compute") == 0);
    ctosa_lower_result_free(r);
}

static void test_needs_constant_and_bind(void) {
    ctosa_lower_result *r = lower("needs_const.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    const ctosa_lower_fallback *f = fb(s, "reshape");
    CHECK(f && strcmp(f->code, "needs_constant") == 0 && f->input && strcmp(f->input, "shape") == 0);
    CHECK(strstr(s->report_json, "\"input\": \"shape\""));
    ctosa_lower_result_free(r);

    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    ctosa_lower_bind b = {"shape", model("needs_const_shape.npy")};
    opt.binds = &b;
    opt.n_binds = 1;
    r = lower("needs_const.onnx", "TOSA-1.0+FP", NULL, &opt);
    if (!r) return;
    s = ctosa_lower_result_summary(r);
    check_every_node_once(s);
    CHECK(s->nodes_delegated == 2 && s->n_fallback == 0);
    if (s->n_partitions == 1) {
        const ctosa_lower_partition *p = &s->partitions[0];
        CHECK(p->outputs[0].rank == 2 && p->outputs[0].shape[0] == 3 && p->outputs[0].shape[1] == 4);
    }
    ctosa_lower_result_free(r);

    /* a bind for an input that does not exist is bad input */
    ctosa_spec spec;
    ctosa_error_free(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    ctosa_lower_bind bad = {"nope", model("needs_const_shape.npy")};
    opt.binds = &bad;
    CHECK_ERR(ctosa_lower_file(model("needs_const.onnx"), &spec, &opt, &r), CTOSA_ERR_USAGE, "nope");
}

static void test_shape_option(void) {
    ctosa_lower_result *r = lower("dynamic.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    const ctosa_lower_fallback *f = fb(s, "relu");
    CHECK(f && strcmp(f->code, "dynamic_shape") == 0 && strstr(f->reason, "--shape"));
    ctosa_lower_result_free(r);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    int64_t dims[2] = {2, 4};
    ctosa_lower_shape sh = {"x", 2, dims};
    opt.shapes = &sh;
    opt.n_shapes = 1;
    r = lower("dynamic.onnx", "TOSA-1.0+FP", NULL, &opt);
    if (!r) return;
    s = ctosa_lower_result_summary(r);
    CHECK(s->nodes_delegated == 1);
    if (s->n_partitions == 1) CHECK(s->partitions[0].inputs[0].shape[0] == 2);
    ctosa_lower_result_free(r);
}

static void test_int64(void) {
    /* Without int64: constants that fit are narrowed (folded shape), one
     * that does not fit makes its consumer fall back, naming the value. */
    ctosa_lower_result *r = lower("int64_const.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        check_every_node_once(s);
        CHECK(s->nodes_delegated == 3);
        ctosa_lower_result_free(r);
    }
    r = lower("int64.onnx", "TOSA-1.0+INT+FP", NULL, NULL);
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        check_every_node_once(s);
        const ctosa_lower_fallback *f = fb(s, "add_big");
        CHECK(f && strcmp(f->code, "int64_not_enabled") == 0 && strstr(f->reason, "1099511627776"));
        f = fb(s, "add_small");
        CHECK(f && strcmp(f->code, "int64_not_enabled") == 0);
        for (uint32_t p = 0; p < s->n_partitions; p++)
            for (uint32_t k = 0; k < s->partitions[p].n_outputs; k++)
                CHECK(strcmp(s->partitions[p].outputs[k].dtype, "int64") != 0);
        ctosa_lower_result_free(r);
    }
    r = lower("int64.onnx", "TOSA-1.1+INT+FP+int64", NULL, NULL);
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        check_every_node_once(s);
        CHECK_MSG(s->nodes_delegated == 3, "%s", s->report_json);
        if (s->n_partitions == 1) CHECK(strcmp(s->partitions[0].outputs[0].dtype, "int64") == 0);
        ctosa_lower_result_free(r);
    }
}

static void test_transposes_cancel(void) {
    ctosa_lower_result *r = lower("transposes.onnx", "TOSA-1.0+FP", NULL, NULL);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK(s->nodes_delegated == 3 && s->n_partitions == 1);
    if (s->n_partitions == 1) {
        const ctosa_lower_partition *p = &s->partitions[0];
        CHECK_MSG(op_count(p, "TRANSPOSE") == 0, "%s", s->report_json);
        float x[60], y[60];
        for (int i = 0; i < 60; i++) x[i] = (float)(i % 7) - 3;
        if (run_f32(p, x, 60, y, 60))
            for (int i = 0; i < 60; i++) CHECK(y[i] == (x[i] > 0 ? x[i] : 0));
    }
    ctosa_lower_result_free(r);
}

static bool same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    unsigned char *pa = th_read(a, &na), *pb = th_read(b, &nb);
    bool same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

static void check_onnx(const char *path) {
    char *out = NULL;
    int rc = th_run(&out, "/usr/bin/python3 -c 'import onnx' 2>/dev/null");
    free(out);
    if (rc != 0) {
        fprintf(stderr, "  (skipped: /usr/bin/python3 with onnx not available for onnx.checker)\n");
        return;
    }
    rc =
        th_run(&out,
               "/usr/bin/python3 -c 'import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); "
               "print(sum(n.op_type==\"EPContext\" for n in m.graph.node))' '%s'",
               path);
    CHECK_MSG(rc == 0, "%s: %s", path, out ? out : "");
    free(out);
}

static void test_files_and_determinism(void) {
    const char *d1 = th_path(th_tmpdir(), "a"), *d2 = th_path(th_tmpdir(), "b");
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s", d1);
    snprintf(p2, sizeof p2, "%s", d2);
    const char *models[] = {"split", "shape_chain", "fold"};
    for (int m = 0; m < 3; m++) {
        char name[64];
        snprintf(name, sizeof name, "%s.onnx", models[m]);
        ctosa_lower_result *r1 = lower(name, "TOSA-1.0+FP", p1, NULL);
        ctosa_lower_result *r2 = lower(name, "TOSA-1.0+FP", p2, NULL);
        if (!r1 || !r2) {
            ctosa_lower_result_free(r1);
            ctosa_lower_result_free(r2);
            return;
        }
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r1);
        char f1[1200], f2[1200];
        for (uint32_t p = 0; p < s->n_partitions; p++) {
            snprintf(f1, sizeof f1, "%s/%s", p1, s->partitions[p].file);
            snprintf(f2, sizeof f2, "%s/%s", p2, s->partitions[p].file);
            CHECK_MSG(same_file(f1, f2), "%s", f1);
            ctosa_graph *g = NULL;
            CHECK_OK(ctosa_read_file(f1, NULL, &g));
            ctosa_graph_free(g);
        }
        const char *sfx[] = {"partitioned.onnx", "report.json"};
        for (int k = 0; k < 2; k++) {
            snprintf(f1, sizeof f1, "%s/%s.%s", p1, models[m], sfx[k]);
            snprintf(f2, sizeof f2, "%s/%s.%s", p2, models[m], sfx[k]);
            CHECK_MSG(same_file(f1, f2), "%s", f1);
        }
        snprintf(f1, sizeof f1, "%s/%s.partitioned.onnx", p1, models[m]);
        check_onnx(f1);
        ctosa_lower_result_free(r1);
        ctosa_lower_result_free(r2);
    }
}

/* ctosa_lower_memory: the same partitions, TOSA bytes, fallbacks and report
 * as ctosa_lower_file, from a buffer the caller may wipe as soon as it
 * returns; outputs refused; malformed bytes an error naming the buffer. */
static void test_from_memory(void) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    const char *models[] = {"split.onnx", "shape_chain.onnx", "fold.onnx"};
    for (int m = 0; m < 3; m++) {
        char *buf = NULL;
        size_t size = 0;
        CHECK_OK(read_whole_file(model(models[m]), 0, &buf, &size));
        if (!buf) return;
        ctosa_lower_result *rf = NULL, *rm = NULL;
        CHECK_OK(ctosa_lower_file(model(models[m]), &spec, NULL, &rf));
        CHECK_OK(ctosa_lower_memory(buf, size, models[m], &spec, NULL, &rm));
        memset(buf, 0, size); /* the result must not refer to the caller's bytes */
        free(buf);
        if (!rf || !rm) {
            ctosa_lower_result_free(rf);
            ctosa_lower_result_free(rm);
            return;
        }
        const ctosa_lower_summary *a = ctosa_lower_result_summary(rf), *b = ctosa_lower_result_summary(rm);
        CHECK(a->n_partitions == b->n_partitions && a->n_fallback == b->n_fallback &&
              a->nodes_delegated == b->nodes_delegated && a->nodes_total == b->nodes_total);
        CHECK_MSG(strcmp(b->model, models[m]) == 0, "summary model '%s'", b->model);
        for (uint32_t p = 0; p < a->n_partitions && p < b->n_partitions; p++) {
            void *x = NULL, *y = NULL;
            size_t nx = 0, ny = 0;
            CHECK_OK(ctosa_write_memory(a->partitions[p].graph, NULL, &x, &nx));
            CHECK_OK(ctosa_write_memory(b->partitions[p].graph, NULL, &y, &ny));
            CHECK_MSG(x && y && nx == ny && memcmp(x, y, nx) == 0, "%s: partition %u differs", models[m], p);
            free(x);
            free(y);
        }
        for (uint32_t f = 0; f < a->n_fallback && f < b->n_fallback; f++)
            CHECK(strcmp(a->fallback[f].node, b->fallback[f].node) == 0 &&
                  strcmp(a->fallback[f].code, b->fallback[f].code) == 0);
        ctosa_lower_result_free(rf);
        ctosa_lower_result_free(rm);
    }
    /* outputs need the file */
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = th_tmpdir();
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_memory("x", 1, "m.onnx", &spec, &opt, &r);
    CHECK(e && ctosa_error_code(e) == CTOSA_ERR_USAGE && !r);
    CHECK_MSG(e && strstr(ctosa_error_message(e), "output_dir"), "%s", e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    /* malformed bytes: an input error naming the buffer */
    static const unsigned char junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    e = ctosa_lower_memory(junk, sizeof junk, "junk.onnx", &spec, NULL, &r);
    CHECK(e && ctosa_error_code(e) == CTOSA_ERR_FORMAT && !r);
    CHECK_MSG(e && strstr(ctosa_error_message(e), "junk.onnx"), "%s", e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    e = ctosa_lower_memory(NULL, 0, NULL, &spec, NULL, &r);
    CHECK(e && !r);
    ctosa_error_free(e);
}

static void test_long_fast(void) {
    double t0 = now_seconds();
    ctosa_lower_result *r = lower("long.onnx", "TOSA-1.0+FP", NULL, NULL);
    double dt = now_seconds() - t0;
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK(s->nodes_total == 1000 && s->nodes_delegated == 1000 && s->n_partitions == 1);
    fprintf(stderr, "  1000-node model lowered in %.3f s\n", dt);
    CHECK(dt < 10.0); /* well under a second in a release build; sanitizers are slower */
    ctosa_lower_result_free(r);
}

static void test_cli(void) {
    char *out = NULL;
    const char *dir = th_path(th_tmpdir(), "cli");
    char d[1024];
    snprintf(d, sizeof d, "%s", dir);
    int rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s'", th_ctosa(), model("chain.onnx"), d);
    CHECK_MSG(rc == 0 && out && strstr(out, "4 of 4 nodes delegated"), "%s", out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --strict", th_ctosa(), model("split.onnx"),
                d);
    CHECK_MSG(rc == 1 && out && strstr(out, "dynamic_shape"), "%s", out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-9.9+FP -o '%s'", th_ctosa(), model("chain.onnx"), d);
    CHECK(rc == 2);
    free(out);
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --bind x", th_ctosa(), model("chain.onnx"),
                d);
    CHECK(rc == 2);
    free(out);
    rc = th_run(&out, "'%s' lower /nonexistent.onnx --spec TOSA-1.0+FP -o '%s'", th_ctosa(), d);
    CHECK(rc == 2);
    free(out);
    /* never overwrite the input model */
    rc = th_run(
        &out,
        "cp '%s' '%s/m.onnx' && '%s' lower '%s/m.onnx' --spec TOSA-1.0+FP -o '%s' --stem m.partitioned "
        "-q; echo rc=$?",
        model("chain.onnx"), d, th_ctosa(), d, d);
    free(out);
    rc = th_run(&out, "'%s' lower '%s/m.onnx' --spec TOSA-1.0+FP -o '%s' --report-json '%s/m.onnx'",
                th_ctosa(), d, d, d);
    CHECK_MSG(rc == 2 && out && strstr(out, "overwrite"), "%s", out ? out : "");
    free(out);
}

int main(void) {
    RUN(test_chain);
    RUN(test_shape_chain);
    RUN(test_fold);
    RUN(test_split_no_cycle);
    RUN(test_branches_merge);
    RUN(test_no_compute);
    RUN(test_needs_constant_and_bind);
    RUN(test_shape_option);
    RUN(test_int64);
    RUN(test_transposes_cancel);
    RUN(test_files_and_determinism);
    RUN(test_from_memory);
    RUN(test_long_fast);
    RUN(test_cli);
    return th_finish();
}
