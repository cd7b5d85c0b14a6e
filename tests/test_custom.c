/* test_custom.c - custom operators end to end: the registry API,
 * plugins (the example plugin, one built against another API version, one
 * without an entry point, one whose registration fails), --custom-ops JSON
 * files and their strict parser, lowering to ONE TOSA CUSTOM per node
 * inside a partition, the bytes flatc decodes with the official schema,
 * level limits, fallbacks, and running CUSTOM through registered kernels
 * against numpy results (tests/data/lower/custom/gen.py). */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "tensorfile/tensorfile.h"
#include "util/json_parse.h"

#define DATA CTOSA_SOURCE_DIR "/tests/data/lower/custom/"
#define EXAMPLE_PLUGIN CTOSA_BINARY_DIR "/examples/plugins/libctosa_example_plugin.so"
#define TEST_PLUGIN(n) CTOSA_BINARY_DIR "/tests/plugins/libctosa_test_plugin_" n ".so"

static ctosa_spec spec_of(const char *s) {
    ctosa_spec sp;
    ctosa_error *e = ctosa_spec_parse(s, &sp);
    if (e) {
        fprintf(stderr, "spec %s: %s\n", s, ctosa_error_message(e));
        ctosa_error_free(e);
        exit(1);
    }
    return sp;
}

/* lowered graphs not run: CUSTOM operators need their kernels registered;
 * the tests below run the partitions they need with those. */
static ctosa_lower_result *lower(const char *model, const char *spec, const ctosa_custom_registry *reg,
                                 const char *outdir) {
    ctosa_spec sp = spec_of(spec);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.custom_ops = reg;
    opt.output_dir = outdir;
    ctosa_lower_result *r = NULL;
    CHECK_OK(ctosa_lower_file(model, &sp, &opt, &r));
    return r;
}

static const ctosa_lower_fallback *find_fallback(const ctosa_lower_summary *s, const char *node) {
    for (uint32_t i = 0; i < s->n_fallback; i++)
        if (strcmp(s->fallback[i].node, node) == 0) return &s->fallback[i];
    return NULL;
}

static const ctosa_op *nth_custom(const ctosa_graph *g, uint32_t k) {
    const ctosa_block *b = ctosa_graph_region(g, 0)->blocks[0];
    for (uint32_t i = 0; i < b->n_ops; i++)
        if (b->ops[i]->kind == CTOSA_OP_CUSTOM && k-- == 0) return b->ops[i];
    return NULL;
}

static bool attrs_are(const ctosa_op *op, const char *text) {
    return op && op->attr.implementation_attrs.n == strlen(text) &&
           memcmp(op->attr.implementation_attrs.p, text, strlen(text)) == 0;
}

/* Max |a - b| between a float32 .npy file and n floats; -1 on mismatch of shape. */
static double npy_diff(const char *path, const float *v, uint64_t n) {
    npy_array a;
    ctosa_error *e = npy_read_file(path, &a);
    if (e) {
        fprintf(stderr, "%s\n", ctosa_error_message(e));
        ctosa_error_free(e);
        return -1;
    }
    double d = -1;
    if (a.kind == 'f' && a.itemsize == 4 && a.count == n) {
        d = 0;
        for (uint64_t i = 0; i < n; i++) d = fmax(d, fabs((double)((float *)a.data)[i] - v[i]));
    }
    npy_free(&a);
    return d;
}

static void feed_npy(ctosa_interp *it, const char *name, const char *path) {
    npy_array a;
    CHECK_OK(npy_read_file(path, &a));
    CHECK_OK(ctosa_interp_set_input(it, name, CTOSA_DTYPE_FP32, a.rank, a.shape, a.data, a.count * 4));
    npy_free(&a);
}

/* ------------------------------------------------------------ JSON parser */

static void expect_json_error(const char *text, const char *where) {
    arena a;
    arena_init(&a, 0);
    json_value *v;
    ctosa_error *e = json_parse(text, strlen(text), "t.json", &a, &v);
    CHECK_MSG(e && ctosa_error_code(e) == CTOSA_ERR_FORMAT && strstr(ctosa_error_message(e), where),
              "%s: expected error at %s, got %s", text, where, e ? ctosa_error_message(e) : "success");
    ctosa_error_free(e);
    arena_free(&a);
}

static void test_json_parser(void) {
    arena a;
    arena_init(&a, 0);
    json_value *v = NULL;
    const char *ok =
        "\xEF\xBB\xBF {\"a\": [1, -2.5e3, true, false, null], \"b\\u00e9\": \"x\\ud83d\\ude00\\n\","
        " \"c\": {}, \"d\": [], \"big\": 12345678901234567890}";
    CHECK_OK(json_parse(ok, strlen(ok), "ok.json", &a, &v));
    CHECK(v && v->kind == JSON_OBJECT && v->n == 5);
    const json_value *arr = json_get(v, "a");
    CHECK(arr && arr->kind == JSON_ARRAY && arr->n == 5);
    CHECK(arr && arr->items[0].is_int && arr->items[0].i == 1);
    CHECK(arr && !arr->items[1].is_int && arr->items[1].num == -2500.0);
    CHECK(arr && arr->items[2].kind == JSON_BOOL && arr->items[2].b && arr->items[4].kind == JSON_NULL);
    const json_value *s = json_get(v, "b\xC3\xA9");
    CHECK(s && s->kind == JSON_STRING && s->len == 6 && memcmp(s->str, "x\xF0\x9F\x98\x80\n", 6) == 0);
    const json_value *big = json_get(v, "big");
    CHECK(big && !big->is_int && big->num > 1e19); /* beyond int64: a double */
    arena_free(&a);

    expect_json_error("", "t.json:1:1:");
    expect_json_error("{\"a\": 1,}", "t.json:1:9: trailing comma");
    expect_json_error("[1,\n 2,\n  ]", "t.json:3:3: trailing comma");
    expect_json_error("{\"a\": 01}", "t.json:1:8: numbers must not have leading zeros");
    expect_json_error("{\"a\": 1} x", "t.json:1:10: unexpected 'x' after the JSON value");
    expect_json_error("{\"a\": 1, \"a\": 2}", "t.json:1:10: duplicate key \"a\"");
    expect_json_error("[\"a\tb\"]", "t.json:1:4: control character");
    expect_json_error("[\"\\x\"]", "invalid escape");
    expect_json_error("[\"\\ud800\"]", "not followed by a low surrogate");
    expect_json_error("[\"\\udc00\"]", "lone low surrogate");
    expect_json_error("[\"\xC3\x28\"]", "invalid UTF-8");
    expect_json_error("[NaN]", "t.json:1:2: unexpected 'N'");
    expect_json_error("{'a': 1}", "t.json:1:2: expected a string key");
    expect_json_error("// c\n{}", "t.json:1:1:");
    expect_json_error("[1 2]", "t.json:1:4: expected ',' or ']'");
    expect_json_error("[\"\xC3\xA9\xC3\xA9\", 1e]", "t.json:1:10: digits expected in the exponent");
    expect_json_error("[tru]", "t.json:1:2:");
    expect_json_error("\"abc", "unterminated string");
    expect_json_error("[1e999]", "number out of range");
    /* Nesting is bounded (no stack overflow on hostile input). */
    char deep[600];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    expect_json_error(deep, "nesting deeper than");
}

/* --------------------------------------------------------------- registry */

static ctosa_error *same_as_input(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                                  uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    for (uint32_t k = 0; k < n_out; k++) {
        out[k] = in[0];
        out[k].data = NULL;
    }
    (void)user, (void)node, (void)n_in;
    return NULL;
}

static void test_registry_api(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op op = {.onnx_domain = "com.x", .onnx_op_type = "A"};
    CHECK_ERR(ctosa_custom_register(reg, &op), CTOSA_ERR_USAGE, "infer");
    op.infer = same_as_input;
    op.since_opset = 3;
    op.until_opset = 2;
    CHECK_ERR(ctosa_custom_register(reg, &op), CTOSA_ERR_USAGE, "opset range");
    op.since_opset = 2;
    op.until_opset = 4;
    op.user = (void *)1;
    CHECK_OK(ctosa_custom_register(reg, &op));
    op.since_opset = 0;
    op.until_opset = 0;
    op.user = (void *)2;
    op.tosa_operator = "A_v2";
    CHECK_OK(ctosa_custom_register(reg, &op)); /* later registration wins */
    ctosa_custom_op std = {.onnx_domain = "ai.onnx", .onnx_op_type = "Relu", .infer = same_as_input};
    CHECK_ERR(ctosa_custom_register(reg, &std), CTOSA_ERR_USAGE, "needs a tosa_domain");
    std.tosa_domain = "com.vendor";
    CHECK_OK(ctosa_custom_register(reg, &std));
    CHECK(ctosa_custom_registry_count(reg) == 3);
    const ctosa_custom_op *f = ctosa_custom_registry_find(reg, "com.x", "A", 3);
    CHECK(f && f->user == (void *)2 && strcmp(f->tosa_operator, "A_v2") == 0 &&
          strcmp(f->tosa_domain, "com.x") == 0);
    CHECK(ctosa_custom_registry_find(reg, "com.y", "A", 3) == NULL);
    /* "" and "ai.onnx" are the same domain */
    f = ctosa_custom_registry_find(reg, "", "Relu", 17);
    CHECK(f && strcmp(f->tosa_domain, "com.vendor") == 0 && strcmp(f->tosa_operator, "Relu") == 0);
    ctosa_custom_registry_free(reg);

    /* Opset ranges select among registrations. */
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op v1 = {.onnx_domain = "com.x",
                          .onnx_op_type = "B",
                          .until_opset = 1,
                          .infer = same_as_input,
                          .tosa_operator = "B1"};
    ctosa_custom_op v2 = {.onnx_domain = "com.x",
                          .onnx_op_type = "B",
                          .since_opset = 2,
                          .infer = same_as_input,
                          .tosa_operator = "B2"};
    CHECK_OK(ctosa_custom_register(reg, &v1));
    CHECK_OK(ctosa_custom_register(reg, &v2));
    f = ctosa_custom_registry_find(reg, "com.x", "B", 1);
    CHECK(f && strcmp(f->tosa_operator, "B1") == 0);
    f = ctosa_custom_registry_find(reg, "com.x", "B", 5);
    CHECK(f && strcmp(f->tosa_operator, "B2") == 0);
    ctosa_custom_registry_free(reg);
}

/* ------------------------------------------------------------ example plugin */

static void test_plugin_lower_and_run(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    CHECK_OK(ctosa_custom_registry_load_plugin(reg, EXAMPLE_PLUGIN));
    CHECK(ctosa_custom_registry_count(reg) == 2);
    const char *dir = th_path(th_tmpdir(), "swish");
    ctosa_lower_result *r = lower(DATA "swish_split.onnx", "TOSA-1.0+FP", reg, dir);
    if (!r) {
        ctosa_custom_registry_free(reg);
        return;
    }
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK(s->nodes_total == 5 && s->nodes_delegated == 5 && s->n_partitions == 1 && s->n_fallback == 0);
    CHECK(s->n_custom == 2);
    if (s->n_custom == 2) {
        CHECK(strcmp(s->custom[0].node, "swish") == 0 && strcmp(s->custom[0].operator_name, "MySwish") == 0);
        CHECK(strcmp(s->custom[1].domain_name, "com.example") == 0 && !s->custom[1].overrides_builtin);
    }
    CHECK(strstr(s->report_json, "\"custom_ops\": [") != NULL);
    const ctosa_graph *g = s->n_partitions ? s->partitions[0].graph : NULL;
    const ctosa_op *sw = g ? nth_custom(g, 0) : NULL, *sp = g ? nth_custom(g, 1) : NULL;
    CHECK(sw && sp && (!g || !nth_custom(g, 2)));
    if (sw && sp) {
        CHECK(strcmp(sw->attr.domain_name, "com.example") == 0 &&
              strcmp(sw->attr.operator_name, "MySwish") == 0);
        CHECK(attrs_are(sw, "{\"beta\":1.5}"));
        CHECK(sw->n_inputs == 1 && sw->n_outputs == 1);
        CHECK(strcmp(sp->attr.operator_name, "SplitHalf") == 0 && attrs_are(sp, "{}"));
        CHECK(sp->n_inputs == 1 && sp->n_outputs == 2);
    }
    /* The written file runs with the plugin's kernels and matches numpy. */
    ctosa_graph *rg = NULL;
    CHECK_OK(ctosa_read_file(th_path(dir, "swish_split.part0.tosa"), NULL, &rg));
    ctosa_interp *it = NULL;
    if (rg) CHECK_OK(ctosa_interp_create(rg, NULL, &it));
    if (it) {
        feed_npy(it, "x", DATA "swish_split_in.npy");
        CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_UNSUPPORTED,
                  "custom operator 'MySwish' of domain 'com.example'");
        CHECK_OK(ctosa_custom_registry_attach(reg, it));
        CHECK_OK(ctosa_interp_run(it));
        for (int k = 0; k < 2; k++) {
            ctosa_interp_tensor t;
            CHECK_OK(ctosa_interp_get_output(it, k ? "y1" : "y0", &t));
            double d =
                npy_diff(k ? DATA "swish_split_out1.npy" : DATA "swish_split_out0.npy", t.data, t.count);
            CHECK_MSG(d >= 0 && d < 1e-5, "output %d differs from numpy by %g", k, d);
        }
    }
    ctosa_interp_free(it);
    ctosa_graph_free(rg);
    /* Byte-identical across runs. */
    size_t n1 = 0, n2 = 0;
    unsigned char *f1 = th_read(th_path(dir, "swish_split.part0.tosa"), &n1);
    ctosa_lower_result *r2 =
        lower(DATA "swish_split.onnx", "TOSA-1.0+FP", reg, th_path(th_tmpdir(), "swish2"));
    unsigned char *f2 = th_read(th_path(th_path(th_tmpdir(), "swish2"), "swish_split.part0.tosa"), &n2);
    CHECK(f1 && f2 && n1 == n2 && memcmp(f1, f2, n1) == 0);
    free(f1);
    free(f2);
    ctosa_lower_result_free(r2);
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* The CUSTOM operators decoded by flatc with the official schema. */
static void test_flatc_decode(void) {
    if (!th_have("flatc")) {
        fprintf(stderr, "  (flatc not installed: flatc decoding not checked)\n");
        return;
    }
    const char *schema =
        th_shared_dir() ? th_path(th_shared_dir(), "reference/tosa/schema/tosa-1.0.fbs") : NULL;
    struct stat st;
    if (!schema || stat(schema, &st) != 0) {
        fprintf(stderr, "  (../shared absent: flatc decoding not checked)\n");
        return;
    }
    const char *dir = th_path(th_tmpdir(), "fb");
    char *out = NULL;
    int rc =
        th_run(&out,
               "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' -q --plugin '%s' && flatc --json --raw-binary "
               "--strict-json -o '%s' '%s' -- '%s/swish_split.part0.tosa'",
               th_ctosa(), DATA "swish_split.onnx", dir, EXAMPLE_PLUGIN, dir, schema, dir);
    CHECK_MSG(rc == 0, "lower + flatc failed (%d): %s", rc, out ? out : "");
    free(out);
    size_t n = 0;
    char *text = (char *)th_read(th_path(dir, "swish_split.part0.json"), &n);
    CHECK(text != NULL);
    if (!text) return;
    arena a;
    arena_init(&a, 0);
    json_value *root = NULL;
    CHECK_OK(json_parse(text, n, "flatc.json", &a, &root));
    const json_value *regions = json_get(root, "regions");
    const json_value *blocks = regions && regions->n ? json_get(&regions->items[0], "blocks") : NULL;
    const json_value *ops = blocks && blocks->n ? json_get(&blocks->items[0], "operators") : NULL;
    CHECK(ops && ops->kind == JSON_ARRAY);
    const char *want_name[] = {"MySwish", "SplitHalf"}, *want_attrs[] = {"{\"beta\":1.5}", "{}"};
    uint32_t n_custom = 0;
    for (uint32_t i = 0; ops && i < ops->n; i++) {
        const json_value *op = &ops->items[i], *kind = json_get(op, "op");
        if (!kind || kind->kind != JSON_STRING || strcmp(kind->str, "CUSTOM") != 0) continue;
        const json_value *at = json_get(op, "attribute"), *ty = json_get(op, "attribute_type");
        CHECK(ty && ty->kind == JSON_STRING && strcmp(ty->str, "CustomAttribute") == 0);
        if (n_custom >= 2) {
            n_custom++;
            continue;
        }
        const json_value *on = json_get(at, "operator_name"), *dn = json_get(at, "domain_name");
        const json_value *ia = json_get(at, "implementation_attrs");
        CHECK(on && on->kind == JSON_STRING && strcmp(on->str, want_name[n_custom]) == 0);
        CHECK(dn && dn->kind == JSON_STRING && strcmp(dn->str, "com.example") == 0);
        const char *w = want_attrs[n_custom];
        bool same = ia && ia->kind == JSON_ARRAY && ia->n == strlen(w);
        for (uint32_t k = 0; same && k < ia->n; k++)
            same = ia->items[k].is_int && ia->items[k].i == (uint8_t)w[k];
        CHECK_MSG(same, "implementation_attrs of %s as decoded by flatc differ from %s", want_name[n_custom],
                  w);
        n_custom++;
    }
    CHECK(n_custom == 2);
    arena_free(&a);
    free(text);
}

/* `ctosa run --plugin` against numpy, `ctosa check` and `ctosa dump`. */
static void test_cli_run_plugin(void) {
    const char *dir = th_path(th_tmpdir(), "cli");
    char *out = NULL;
    int rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --plugin '%s'", th_ctosa(),
                    DATA "swish_split.onnx", dir, EXAMPLE_PLUGIN);
    CHECK_MSG(
        rc == 0 && strstr(out, "5 of 5 nodes delegated") &&
            strstr(out, "custom: swish (com.example::MySwish) -> CUSTOM com.example::MySwish in partition 0"),
        "lower: %d %s", rc, out ? out : "");
    free(out);
    const char *tosa = th_path(dir, "swish_split.part0.tosa");
    rc = th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP", th_ctosa(), tosa);
    CHECK_MSG(rc == 0, "check: %d %s", rc, out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' dump '%s'", th_ctosa(), tosa);
    CHECK_MSG(rc == 0 && strstr(out, "operator_name=MySwish") && strstr(out, "domain_name=com.example") &&
                  strstr(out, "implementation_attrs=\"{\\\"beta\\\":1.5}\""),
              "dump: %d %s", rc, out ? out : "");
    free(out);
    /* Without the plugin the CUSTOM has no kernel: an error naming both names. */
    rc = th_run(&out, "'%s' run '%s' --input x='%s' -o '%s' -q", th_ctosa(), tosa, DATA "swish_split_in.npy",
                dir);
    CHECK_MSG(rc == 2 && strstr(out, "'MySwish' of domain 'com.example'"), "run without plugin: %d %s", rc,
              out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' run '%s' --input x='%s' -o '%s' -q --plugin '%s'", th_ctosa(), tosa,
                DATA "swish_split_in.npy", dir, EXAMPLE_PLUGIN);
    CHECK_MSG(rc == 0, "run: %d %s", rc, out ? out : "");
    free(out);
    for (int k = 0; k < 2; k++) {
        npy_array a;
        ctosa_error *e = npy_read_file(th_path(dir, k ? "y1.npy" : "y0.npy"), &a);
        CHECK_OK(e);
        if (e) continue;
        double d = npy_diff(k ? DATA "swish_split_out1.npy" : DATA "swish_split_out0.npy", a.data, a.count);
        CHECK_MSG(d >= 0 && d < 1e-5, "ctosa run output %d differs from numpy by %g", k, d);
        npy_free(&a);
    }
}

/* ------------------------------------------------------ three outputs */

static ctosa_error *three_infer(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                                uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    if (n_out != 3) return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "Three has 3 outputs, not %u", n_out);
    const ctosa_onnx_attr *sc = ctosa_custom_find_attr(node, "scale");
    if (!sc) return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "no scale");
    return same_as_input(user, node, in, n_in, out, n_out);
}

static ctosa_error *three_kernel(void *user, const ctosa_interp_tensor *in, uint32_t n_in,
                                 ctosa_interp_tensor *out, uint32_t n_out, const uint8_t *attrs,
                                 uint32_t len) {
    /* scale from the canonical JSON implementation_attrs */
    arena a;
    arena_init(&a, 0);
    json_value *v = NULL;
    ctosa_error *e = json_parse((const char *)attrs, len, "attrs", &a, &v);
    const json_value *sc = e ? NULL : json_get(v, "scale");
    double scale = sc && sc->kind == JSON_NUMBER ? sc->num : 0;
    arena_free(&a);
    if (e) return e;
    if (n_in != 1 || n_out != 3) return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "bad arity");
    for (uint32_t k = 0; k < 3; k++)
        for (uint64_t i = 0; i < in[0].count; i++)
            ((float *)out[k].data)[i] = ((const float *)in[0].data)[i] * (float)(k + 1) * (float)scale;
    (void)user;
    return NULL;
}

static void test_three_outputs(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op op = {.onnx_domain = "com.test",
                          .onnx_op_type = "Three",
                          .infer = three_infer,
                          .kernel = three_kernel,
                          .tosa_operator = "Three3"};
    CHECK_OK(ctosa_custom_register(reg, &op));
    ctosa_lower_result *r = lower(DATA "three_out.onnx", "TOSA-1.0+FP", reg, NULL);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    CHECK(s && s->n_partitions == 1 && s->nodes_delegated == 5 && s->n_fallback == 0);
    const ctosa_op *c = s && s->n_partitions ? nth_custom(s->partitions[0].graph, 0) : NULL;
    CHECK(c && c->n_inputs == 1 && c->n_outputs == 3);
    /* canonical JSON: keys sorted, float with '.', ints, strings */
    CHECK_MSG(attrs_are(c, "{\"mode\":\"fast\",\"scale\":0.5,\"sizes\":[3,1,2]}"), "attrs: %.*s",
              c ? (int)c->attr.implementation_attrs.n : 0,
              c ? (const char *)c->attr.implementation_attrs.p : "");
    CHECK(c && strcmp(c->attr.operator_name, "Three3") == 0 && strcmp(c->attr.domain_name, "com.test") == 0);
    ctosa_interp *it = NULL;
    if (c) CHECK_OK(ctosa_interp_create(s->partitions[0].graph, NULL, &it));
    if (it) {
        CHECK_OK(ctosa_custom_registry_attach(reg, it));
        feed_npy(it, "x", DATA "three_out_in.npy");
        CHECK_OK(ctosa_interp_run(it));
        for (int k = 0; k < 3; k++) {
            char nm[8], ref[256];
            snprintf(nm, sizeof nm, "y%d", k);
            snprintf(ref, sizeof ref, DATA "three_out_out%d.npy", k);
            ctosa_interp_tensor t;
            CHECK_OK(ctosa_interp_get_output(it, nm, &t));
            double d = npy_diff(ref, t.data, t.count);
            CHECK_MSG(d >= 0 && d < 1e-6, "%s differs from numpy by %g", nm, d);
        }
    }
    ctosa_interp_free(it);
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* A registration's own implementation_attrs encoder (binary bytes):
 * carried exactly, shown as hex by `ctosa dump`. */
static ctosa_error *binary_encoder(void *user, const ctosa_custom_node *node, uint8_t *buf, size_t cap,
                                   size_t *len) {
    static const uint8_t bytes[] = {0xff, 0x00, 0x10, 0x7f};
    if (cap >= sizeof bytes) memcpy(buf, bytes, sizeof bytes);
    *len = sizeof bytes;
    (void)user, (void)node;
    return NULL;
}

static ctosa_error *refusing_encoder(void *user, const ctosa_custom_node *node, uint8_t *buf, size_t cap,
                                     size_t *len) {
    (void)user, (void)buf, (void)cap, (void)len;
    return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "cannot encode '%s'", node->name);
}

static void test_custom_encoder(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op op = {.onnx_domain = "com.test",
                          .onnx_op_type = "Three",
                          .infer = three_infer,
                          .encode_attrs = binary_encoder};
    CHECK_OK(ctosa_custom_register(reg, &op));
    const char *dir = th_path(th_tmpdir(), "enc");
    ctosa_lower_result *r = lower(DATA "three_out.onnx", "TOSA-1.0+FP", reg, dir);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    const ctosa_op *c = s && s->n_partitions ? nth_custom(s->partitions[0].graph, 0) : NULL;
    CHECK(c && c->attr.implementation_attrs.n == 4 &&
          memcmp(c->attr.implementation_attrs.p, "\xff\x00\x10\x7f", 4) == 0);
    ctosa_lower_result_free(r);
    char *out = NULL;
    int rc = th_run(&out, "'%s' dump '%s'", th_ctosa(), th_path(dir, "three_out.part0.tosa"));
    CHECK_MSG(rc == 0 && strstr(out, "implementation_attrs=0xff00107f"), "dump: %d %s", rc, out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' dump --format json '%s'", th_ctosa(), th_path(dir, "three_out.part0.tosa"));
    CHECK_MSG(rc == 0 && strstr(out, "\"implementation_attrs\": {\"hex\": \"ff00107f\"}"), "dump: %d %s", rc,
              out ? out : "");
    free(out);
    /* An encoder error is a fallback naming the operator. */
    op.encode_attrs = refusing_encoder;
    CHECK_OK(ctosa_custom_register(reg, &op));
    r = lower(DATA "three_out.onnx", "TOSA-1.0+FP", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    const ctosa_lower_fallback *f = s ? find_fallback(s, "three") : NULL;
    CHECK_MSG(f && strcmp(f->code, "unsupported_attribute") == 0 &&
                  strstr(f->reason, "cannot encode 'three'"),
              "%s", f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* --------------------------------------------------------- fallbacks */

static void test_fallbacks(void) {
    /* Unregistered: unregistered_custom_op with a hint. */
    ctosa_lower_result *r = lower(DATA "swish_split.onnx", "TOSA-1.0+FP", NULL, NULL);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    const ctosa_lower_fallback *f = s ? find_fallback(s, "swish") : NULL;
    CHECK(f && strcmp(f->code, "unregistered_custom_op") == 0 && strstr(f->reason, "--plugin") &&
          strstr(f->reason, "--custom-ops"));
    ctosa_lower_result_free(r);

    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    CHECK_OK(ctosa_custom_registry_load_plugin(reg, EXAMPLE_PLUGIN));
    /* The shape function refuses an odd last axis: falls back with its message. */
    r = lower(DATA "split_odd.onnx", "TOSA-1.0+FP", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    f = s ? find_fallback(s, "split_odd") : NULL;
    CHECK_MSG(f && strcmp(f->code, "custom_op_rejected") == 0 && strstr(f->reason, "odd size 5"), "%s",
              f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    /* The validation callback refuses beta <= 0. */
    r = lower(DATA "swish_badbeta.onnx", "TOSA-1.0+FP", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    f = s ? find_fallback(s, "swish_bad") : NULL;
    CHECK_MSG(f && strcmp(f->code, "custom_op_rejected") == 0 && strstr(f->reason, "'beta' must be positive"),
              "%s", f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    /* A registration's dtype list: one allowing int8 only refuses fp32. */
    ctosa_custom_op op = {.onnx_domain = "com.example",
                          .onnx_op_type = "MySwish",
                          .infer = same_as_input,
                          .dtypes = (const ctosa_dtype[]){CTOSA_DTYPE_INT8},
                          .n_dtypes = 1};
    CHECK_OK(ctosa_custom_register(reg, &op));
    r = lower(DATA "swish_badbeta.onnx", "TOSA-1.0+FP", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    f = s ? find_fallback(s, "swish_bad") : NULL;
    CHECK_MSG(f && strcmp(f->code, "unsupported_dtype") == 0 && strstr(f->reason, "fp32"), "%s",
              f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* MAX_TENSOR_LIST_SIZE: 70 outputs exceed level 8K's 64. */
static void test_level_limit(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op op = {.onnx_domain = "com.test", .onnx_op_type = "Many", .infer = same_as_input};
    CHECK_OK(ctosa_custom_register(reg, &op));
    const char *dir = th_path(th_tmpdir(), "many");
    ctosa_lower_result *r = lower(DATA "many_out.onnx", "TOSA-1.0+FP", reg, dir);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    CHECK(s && s->n_fallback == 0 && s->n_partitions == 1 && s->n_custom == 1);
    const ctosa_op *c = s && s->n_partitions ? nth_custom(s->partitions[0].graph, 0) : NULL;
    CHECK(c && c->n_outputs == 70);
    ctosa_lower_result_free(r);
    /* `ctosa check` validates CUSTOM like any operator: fine without a
     * level, a level violation with +8k. */
    char *out = NULL;
    const char *tosa = th_path(dir, "many_out.part0.tosa");
    int rc = th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP", th_ctosa(), tosa);
    CHECK_MSG(rc == 0, "check: %d %s", rc, out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' check '%s' --spec TOSA-1.0+FP+8k", th_ctosa(), tosa);
    CHECK_MSG(rc == 1 && strstr(out, "CUSTOM") && strstr(out, "MAX_TENSOR_LIST_SIZE"), "check +8k: %d %s", rc,
              out ? out : "");
    free(out);
    r = lower(DATA "many_out.onnx", "TOSA-1.0+FP+8k", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    const ctosa_lower_fallback *f = s ? find_fallback(s, "many") : NULL;
    CHECK_MSG(f && strcmp(f->code, "level_limit") == 0 && strstr(f->reason, "MAX_TENSOR_LIST_SIZE"), "%s: %s",
              f ? f->code : "-", f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* A plugin's lowering of a standard operator wins over the built-in one. */
static void test_override_builtin(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    ctosa_custom_op op = {.onnx_domain = "",
                          .onnx_op_type = "Sigmoid",
                          .infer = same_as_input,
                          .tosa_domain = "com.vendor",
                          .tosa_operator = "FastSigmoid",
                          .since_opset = 13};
    CHECK_OK(ctosa_custom_register(reg, &op));
    ctosa_lower_result *r = lower(DATA "override.onnx", "TOSA-1.0+FP", reg, NULL);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    CHECK(s && s->n_partitions == 1 && s->nodes_delegated == 2 && s->n_custom == 1);
    if (s && s->n_custom == 1) {
        CHECK(strcmp(s->custom[0].node, "sig") == 0 && s->custom[0].overrides_builtin);
        CHECK(strcmp(s->custom[0].operator_name, "FastSigmoid") == 0);
    }
    CHECK(s && strstr(s->report_json, "\"overrides_builtin\": true"));
    const ctosa_op *c = s && s->n_partitions ? nth_custom(s->partitions[0].graph, 0) : NULL;
    CHECK(c && strcmp(c->attr.domain_name, "com.vendor") == 0 && attrs_are(c, "{}"));
    bool has_sigmoid = false;
    const ctosa_block *b =
        s && s->n_partitions ? ctosa_graph_region(s->partitions[0].graph, 0)->blocks[0] : NULL;
    for (uint32_t i = 0; b && i < b->n_ops; i++) has_sigmoid |= b->ops[i]->kind == CTOSA_OP_SIGMOID;
    CHECK(!has_sigmoid);
    ctosa_lower_result_free(r);
    /* Outside its opset range the built-in lowering is used. */
    op.since_opset = 18;
    ctosa_custom_registry_free(reg);
    CHECK_OK(ctosa_custom_registry_create(&reg));
    CHECK_OK(ctosa_custom_register(reg, &op));
    r = lower(DATA "override.onnx", "TOSA-1.0+FP", reg, NULL);
    s = r ? ctosa_lower_result_summary(r) : NULL;
    CHECK(s && s->n_custom == 0 && s->nodes_delegated == 2 && !strstr(s->report_json, "custom_ops"));
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

/* ------------------------------------------------------------ bad plugins */

static void test_bad_plugins(void) {
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    CHECK_ERR(ctosa_custom_registry_load_plugin(reg, TEST_PLUGIN("badver")), CTOSA_ERR_UNSUPPORTED,
              "plugin built against ctosa plugin API version 42, but this ctosa provides version 1");
    CHECK_ERR(ctosa_custom_registry_load_plugin(reg, TEST_PLUGIN("noentry")), CTOSA_ERR_FORMAT,
              "not a ctosa plugin: it does not export ctosa_plugin_init()");
    CHECK_ERR(ctosa_custom_registry_load_plugin(reg, TEST_PLUGIN("failing")), CTOSA_ERR_USAGE,
              "plugin failed to initialise: custom operator com.fail::Bad: a shape inference callback");
    CHECK(ctosa_custom_registry_count(reg) == 0); /* 'Good' was withdrawn with it */
    CHECK_ERR(ctosa_custom_registry_load_plugin(reg, "/nonexistent/libnothing.so"), CTOSA_ERR_IO,
              "cannot load plugin");
    CHECK_ERR(ctosa_custom_registry_load_plugin(reg, DATA "three_out.json"), CTOSA_ERR_IO,
              "cannot load plugin");
    CHECK_OK(ctosa_custom_registry_load_plugin(reg, EXAMPLE_PLUGIN));
    CHECK(ctosa_custom_registry_count(reg) == 2);
    ctosa_custom_registry_free(reg);

    char *out = NULL;
    int rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --plugin '%s'", th_ctosa(),
                    DATA "swish_split.onnx", th_tmpdir(), TEST_PLUGIN("badver"));
    CHECK_MSG(rc == 2 && strstr(out, "API version 42"), "%d %s", rc, out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' run '%s' --plugin '%s'", th_ctosa(), DATA "swish_split.onnx",
                TEST_PLUGIN("noentry"));
    CHECK_MSG(rc == 2 && strstr(out, "does not export ctosa_plugin_init"), "%d %s", rc, out ? out : "");
    free(out);
}

/* ------------------------------------------------------------ --custom-ops */

static void test_custom_ops_json(void) {
    const char *dir = th_path(th_tmpdir(), "json");
    char *out = NULL;
    int rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --custom-ops '%s'", th_ctosa(),
                    DATA "three_out.onnx", dir, DATA "three_out.json");
    CHECK_MSG(rc == 0 && strstr(out, "5 of 5 nodes delegated") &&
                  strstr(out, "-> CUSTOM com.test.tosa::ThreeWay in partition 0"),
              "%d %s", rc, out ? out : "");
    free(out);
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(th_path(dir, "three_out.part0.tosa"), NULL, &g));
    const ctosa_op *c = g ? nth_custom(g, 0) : NULL;
    CHECK(c && c->n_outputs == 3 && strcmp(c->attr.operator_name, "ThreeWay") == 0 &&
          strcmp(c->attr.domain_name, "com.test.tosa") == 0);
    CHECK(attrs_are(c, "{\"mode\":\"fast\",\"scale\":0.5,\"sizes\":[3,1,2]}"));
    ctosa_graph_free(g);
    /* Syntax error: exit 2 with FILE:LINE:COLUMN. */
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --custom-ops '%s'", th_ctosa(),
                DATA "three_out.onnx", dir, DATA "bad_syntax.json");
    CHECK_MSG(rc == 2 && strstr(out, "bad_syntax.json:6:37: trailing comma before ']'"), "%d %s", rc,
              out ? out : "");
    free(out);
    /* Schema error: also located. */
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --custom-ops '%s'", th_ctosa(),
                DATA "three_out.onnx", dir, DATA "bad_schema.json");
    CHECK_MSG(rc == 2 && strstr(out, "bad_schema.json:3:87: give \"like_input\" or \"shape\", not both"),
              "%d %s", rc, out ? out : "");
    free(out);
    rc = th_run(&out, "'%s' lower '%s' --spec TOSA-1.0+FP -o '%s' --custom-ops /nonexistent.json", th_ctosa(),
                DATA "three_out.onnx", dir);
    CHECK_MSG(rc == 2 && strstr(out, "nonexistent.json"), "%d %s", rc, out ? out : "");
    free(out);

    /* API: rule errors, wrong output count at lowering time. */
    ctosa_custom_registry *reg;
    CHECK_OK(ctosa_custom_registry_create(&reg));
    const char *bad[][2] = {
        {"{\"custom_ops\": [{\"domain\": \"d\", \"op_type\": \"X\"}]}", "<t>:1:17: missing \"outputs\""},
        {"{\"custom_ops\": [{\"domain\": \"d\", \"op_type\": \"X\", \"outputs\": [{\"shape\": [1]}]}]}",
         "needs \"like_input\", or both"},
        {"{\"custom_ops\": [{\"domain\": \"d\", \"op_type\": \"X\", \"outputs\": [{\"like_input\": 0, "
         "\"dtype\": "
         "\"fp99\"}]}]}",
         "expected a dtype name"},
        {"{\"custom_ops\": [], \"extra\": 1}", "<t>:1:29: unknown key \"extra\""},
        {"{\"version\": 2, \"custom_ops\": []}", "\"version\" must be 1"},
        {"[]", "expected an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ERR(ctosa_custom_registry_load_json_text(reg, bad[i][0], strlen(bad[i][0]), "<t>"),
                  CTOSA_ERR_FORMAT, bad[i][1]);
    CHECK(ctosa_custom_registry_count(reg) == 0);
    const char *two = "{\"custom_ops\": [{\"domain\": \"com.test\", \"op_type\": \"Three\", \"outputs\": "
                      "[{\"like_input\": 0}, {\"like_input\": 0}]}]}";
    CHECK_OK(ctosa_custom_registry_load_json_text(reg, two, strlen(two), "<two>"));
    ctosa_lower_result *r = lower(DATA "three_out.onnx", "TOSA-1.0+FP", reg, NULL);
    const ctosa_lower_summary *s = r ? ctosa_lower_result_summary(r) : NULL;
    const ctosa_lower_fallback *f = s ? find_fallback(s, "three") : NULL;
    CHECK_MSG(f && strcmp(f->code, "custom_op_rejected") == 0 &&
                  strstr(f->reason, "3 outputs but --custom-ops "
                                    "declares 2"),
              "%s", f ? f->reason : "no fallback");
    ctosa_lower_result_free(r);
    ctosa_custom_registry_free(reg);
}

int main(void) {
    RUN(test_json_parser);
    RUN(test_registry_api);
    RUN(test_plugin_lower_and_run);
    RUN(test_flatc_decode);
    RUN(test_cli_run_plugin);
    RUN(test_three_outputs);
    RUN(test_custom_encoder);
    RUN(test_fallbacks);
    RUN(test_level_limit);
    RUN(test_override_builtin);
    RUN(test_bad_plugins);
    RUN(test_custom_ops_json);
    return th_finish();
}
