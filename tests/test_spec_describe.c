/* test_spec_describe.c - ctosa_spec_describe() and ctosa_spec_target_at()
 * (ctosa/spec.h), through the public API only: the text and JSON layouts
 * carry the facts of the compliance tables (rows allowed by profiles and
 * extensions, u55 reasons, level limits per version), the JSON agrees with
 * the text, the ONNX int64 allowlist depends on EXT-INT64, and `ctosa spec`
 * prints exactly what the library describes (the CLI is a thin printer). */
#include "harness.h"

static char *describe(const char *spec_text, unsigned flags) {
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_parse(spec_text, &s);
    CHECK_MSG(!e, "%s: %s", spec_text, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (e) return NULL;
    char *out = (char *)1;
    CHECK_OK(ctosa_spec_describe(&s, flags, &out));
    CHECK(out != (char *)1);
    return out == (char *)1 ? NULL : out;
}

static uint32_t count_of(const char *hay, const char *needle) {
    uint32_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static void test_text_int(void) {
    char *t = describe("TOSA-1.0+INT", 0);
    if (!t) return;
    CHECK(strncmp(t,
                  "spec:       TOSA-1.0+INT\nversion:    1.0.0\nprofiles:   PRO-INT\n"
                  "extensions: none\n",
                  80) == 0);
    CHECK(strstr(t, "  CONV2D\n      (i8,i8,i32,i8,i8)->i32 acc i32  [PRO-INT]\n") != NULL);
    /* 1.0: seven level limits, no MAX_SHAPE_LEN */
    CHECK(strstr(t, "max_tensor_list_size 256)\n") != NULL && !strstr(t, "max_shape_len"));
    /* no FP rows, no EXT-INT16 rows without the extension */
    CHECK(!strstr(t, "fp32") && !strstr(t, "EXT-INT16") && !strstr(t, "[u55:"));
    CHECK(strstr(t, "u55:        no\n") != NULL);
    CHECK(ends_with(t, " operators allowed\n"));
    free(t);

    t = describe("TOSA-1.0+INT+int16", 0);
    if (!t) return;
    CHECK(strstr(t, "extensions: EXT-INT16\n") != NULL);
    CHECK(strstr(t, "(i16)->i32  [EXT-INT16]\n") != NULL); /* ARGMAX */
    free(t);
}

static void test_json_agrees_with_text(void) {
    const char *specs[] = {"TOSA-1.0+INT", "TOSA-1.0+FP+INT+bf16+fft+cf+8k", "TOSA-1.1+INT+FP+int64+shape",
                           "TOSA-1.0+INT+int16+u55"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        char *t = describe(specs[i], 0), *j = describe(specs[i], CTOSA_SPEC_DESCRIBE_JSON);
        if (t && j) {
            /* "N operators allowed" is the last line */
            const char *last = t + strlen(t) - 1;
            while (last > t && last[-1] != '\n') last--;
            unsigned n = 0;
            CHECK_MSG(sscanf(last, "%u operators allowed", &n) == 1 && n > 0, "%s: %s", specs[i], last);
            CHECK_MSG(count_of(j, "\n    {\"name\": ") == n, "%s: %u operators in text, %u in JSON", specs[i],
                      n, count_of(j, "\n    {\"name\": "));
            CHECK_MSG(count_of(j, "{\"types\": ") == count_of(t, "\n      ("), "%s: signature counts",
                      specs[i]);
            char head[300];
            ctosa_spec s;
            CHECK_OK(ctosa_spec_parse(specs[i], &s));
            char canon[256];
            ctosa_spec_format(&s, canon, sizeof canon);
            snprintf(head, sizeof head, "{\n  \"spec\": \"%s\",\n  \"version\": \"1.", canon);
            CHECK_MSG(strncmp(j, head, strlen(head)) == 0, "%s: %.80s", specs[i], j);
            CHECK(ends_with(j, "\n  ]\n}\n"));
            CHECK(strstr(j, s.u55 ? "\"u55\": true" : "\"u55\": false") != NULL);
            bool v11 = s.version.minor >= 1;
            CHECK_MSG(!!strstr(j, "\"max_shape_len\"") == v11 && !!strstr(t, "max_shape_len") == v11,
                      "%s: max_shape_len only in 1.1", specs[i]);
        }
        free(t);
        free(j);
    }
}

static void test_u55(void) {
    ctosa_spec s;
    CHECK_OK(ctosa_spec_from_target("ethos-u55-128", &s));
    char *t = NULL, *j = NULL;
    CHECK_OK(ctosa_spec_describe(&s, 0, &t));
    CHECK_OK(ctosa_spec_describe(&s, CTOSA_SPEC_DESCRIBE_JSON, &j));
    if (t && j) {
        CHECK(strstr(t, "u55:        yes") != NULL);
        CHECK(strstr(t, "  AVG_POOL2D  [u55: ") != NULL);
        CHECK(count_of(t, "[u55: ") == count_of(j, "\"u55_restriction\": ") && count_of(t, "[u55: ") > 0);
    }
    free(t);
    free(j);
}

static void test_onnx_allowlist(void) {
    char *t = describe("TOSA-1.1+INT+int64", CTOSA_SPEC_DESCRIBE_ONNX);
    char *j = describe("TOSA-1.1+INT+int64", CTOSA_SPEC_DESCRIBE_ONNX | CTOSA_SPEC_DESCRIBE_JSON);
    char *t0 = describe("TOSA-1.0+INT", CTOSA_SPEC_DESCRIBE_ONNX | CTOSA_SPEC_DESCRIBE_JSON);
    if (t && j && t0) {
        CHECK(strncmp(t, "spec:       TOSA-1.1+INT+int64\nONNX operators with int64 operands", 60) == 0);
        const char *yes = strstr(t, "delegated ("), *no = strstr(t, "not delegated (");
        CHECK(yes && no && yes < no);
        const char *add = strstr(t, "\n  Add\n");
        CHECK(add && add < no); /* Add on int64 is delegated with EXT-INT64 */
        unsigned ny = 0, nn = 0;
        CHECK(yes && sscanf(yes, "delegated (%u)", &ny) == 1);
        CHECK(no && sscanf(no, "not delegated (%u)", &nn) == 1);
        CHECK(count_of(j, "{\"op\": ") == ny + nn && count_of(j, "\"delegated\": true") == ny);
        CHECK(strstr(j, "\"int64_extension\": true") != NULL);
        CHECK(strstr(t0, "\"int64_extension\": false") != NULL && strstr(t0, "int64_not_enabled"));
    }
    free(t);
    free(j);
    free(t0);
}

static void test_errors(void) {
    ctosa_spec s;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT", &s));
    char *out = (char *)1;
    CHECK_ERR(ctosa_spec_describe(&s, 1u << 7, &out), CTOSA_ERR_USAGE, "unknown flags");
    CHECK(out == NULL);
    CHECK_ERR(ctosa_spec_describe(NULL, 0, &out), CTOSA_ERR_USAGE, "ctosa_spec_describe");
}

static void test_targets(void) {
    const char *sp = NULL, *name;
    uint32_t n = 0;
    for (uint32_t i = 0; (name = ctosa_spec_target_at(i, &sp)); i++, n++) {
        ctosa_spec a, b;
        CHECK_MSG(sp != NULL, "%s", name);
        if (!sp) continue;
        CHECK_OK(ctosa_spec_parse(sp, &a));
        CHECK_OK(ctosa_spec_from_target(name, &b));
        char ca[256], cb[256];
        ctosa_spec_format(&a, ca, sizeof ca);
        ctosa_spec_format(&b, cb, sizeof cb);
        CHECK_MSG(strcmp(ca, cb) == 0, "%s: %s vs %s", name, ca, cb);
    }
    CHECK(n >= 3);
    CHECK(ctosa_spec_target_at(n, &sp) == NULL && sp == NULL);
    CHECK(ctosa_spec_target_at(0, NULL) != NULL);
}

/* `ctosa spec` output == the library's description, byte for byte. */
static void test_cli_prints_describe(void) {
    const char *specs[] = {"TOSA-1.0+INT", "TOSA-1.0+FP+INT+bf16+fp8e4m3+fft+var+cf+dynamic+8k",
                           "TOSA-1.1+INT+FP+int64+shape", "TOSA-1.0+INT+int16+u55"};
    const char *flags[] = {"", " --json", " --onnx", " --onnx --json"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (unsigned f = 0; f < 4; f++) {
            if (f >= 2 && i != 2) continue; /* the ONNX probes: one spec is enough */
            char *cli = NULL;
            int rc = th_run(&cli, "'%s' spec '%s'%s 2>&1", th_ctosa(), specs[i], flags[f]);
            char *lib = describe(specs[i], f);
            CHECK_MSG(rc == 0 && cli && lib && strcmp(cli, lib) == 0,
                      "ctosa spec %s%s differs from "
                      "ctosa_spec_describe (exit %d)",
                      specs[i], flags[f], rc);
            free(cli);
            free(lib);
        }
    char *cli = NULL;
    int rc = th_run(&cli, "'%s' spec --list-targets 2>&1", th_ctosa());
    const char *sp, *name;
    char line[256];
    CHECK(rc == 0 && cli);
    for (uint32_t i = 0; cli && (name = ctosa_spec_target_at(i, &sp)); i++) {
        snprintf(line, sizeof line, "%-16s %s\n", name, sp);
        CHECK_MSG(strstr(cli, line) != NULL, "--list-targets lacks '%s'", line);
    }
    free(cli);
}

int main(void) {
    RUN(test_text_int);
    RUN(test_json_agrees_with_text);
    RUN(test_u55);
    RUN(test_onnx_allowlist);
    RUN(test_errors);
    RUN(test_targets);
    RUN(test_cli_prints_describe);
    return th_finish();
}
