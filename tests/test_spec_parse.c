/* test_spec_parse.c - spec strings: parsing, canonical form, errors with
 * suggestions, targets. Examples from ../shared/research/
 * executorch-arm-backend.md section 1.3 plus our own. */
#include <unistd.h>

#include "harness.h"
#include "ctosa/spec.h"
#include "spec/compliance.h"

/* Parses text, checks the canonical form. */
static void ok(const char *text, const char *canon) {
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_parse(text, &s);
    CHECK_MSG(!e, "%s: %s", text, e ? ctosa_error_message(e) : "");
    if (e) {
        ctosa_error_free(e);
        return;
    }
    char buf[128];
    size_t n = ctosa_spec_format(&s, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, canon) == 0, "%s -> %s, expected %s", text, buf, canon);
    CHECK(n == strlen(canon));
    /* the canonical form parses to the same spec */
    ctosa_spec t;
    CHECK_OK(ctosa_spec_parse(buf, &t));
    CHECK(memcmp(&s.version, &t.version, sizeof s.version) == 0 && s.profiles == t.profiles &&
          s.extensions == t.extensions && s.level == t.level && s.u55 == t.u55);
}

/* Fails with CTOSA_ERR_USAGE and exactly this message. */
static void fails(const char *text, const char *msg) {
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_parse(text, &s);
    CHECK_MSG(e != NULL, "%s parsed", text);
    if (!e) return;
    CHECK(ctosa_error_code(e) == CTOSA_ERR_USAGE);
    CHECK_MSG(strcmp(ctosa_error_message(e), msg) == 0, "%s:\n  got      %s\n  expected %s", text,
              ctosa_error_message(e), msg);
    CHECK(ctosa_error_exit_code(e) == 2);
    ctosa_error_free(e);
}

static void test_research_valid(void) {
    ok("TOSA-1.0.0+INT+FP+fft", "TOSA-1.0+FP+INT+fft");
    ok("TOSA-1.0+FP+cf+bf16+8k", "TOSA-1.0+FP+bf16+cf+8k");
    ok("TOSA-1.1.0+INT+shape+int64+u55", "TOSA-1.1+INT+int64+shape+u55");
    ok("TOSA-1.0+INT", "TOSA-1.0+INT");
    ok("TOSA-1.0+FP", "TOSA-1.0+FP");
    ok("TOSA-1.0+INT+int16", "TOSA-1.0+INT+int16");
    ok("TOSA-1.1+INT+int64", "TOSA-1.1+INT+int64");
    ok("TOSA-1.0+INT+int16+int4+u55", "TOSA-1.0+INT+int16+int4+u55");
    ok("TOSA-1.00.0+INT+FP+fft", "TOSA-1.0+FP+INT+fft");            /* leading zeros as packaging.Version */
    ok("TOSA-1.0+FP+INT+int4+int16", "TOSA-1.0+FP+INT+int16+int4"); /* ExecuTorch VGF default */
}

static void test_our_valid(void) {
    ok("TOSA-1.0.2+INT", "TOSA-1.0.2+INT");
    ok("TOSA-1.0.0+INT", "TOSA-1.0+INT");
    ok("TOSA-1.1+FP+INT+shape+int64", "TOSA-1.1+FP+INT+int64+shape");
    ok("TOSA-1.0+8k+INT", "TOSA-1.0+INT+8k"); /* tokens in any order */
    ok("TOSA-1.0+INT+doubleround+inexactround+dynamic+var+cf",
       "TOSA-1.0+INT+var+cf+doubleround+inexactround+dynamic");
    ok("TOSA-1.0+FP+fp8e4m3+fp8e5m2+bf16+fft", "TOSA-1.0+FP+bf16+fp8e4m3+fp8e5m2+fft");
    ok("TOSA-1.1+FP+mx+mxfp8e4m3+mxfpconv", "TOSA-1.1+FP+mx+mxfp8e4m3+mxfpconv");
    ok("TOSA-1.1+FP+int64", "TOSA-1.1+FP+int64"); /* int64 with either profile */
    ok("TOSA-1.1+INT+shape", "TOSA-1.1+INT+shape");

    ctosa_spec s;
    CHECK_OK(ctosa_spec_parse("TOSA-1.1.3+FP+INT+int16+8k+u55", &s));
    CHECK(s.version.major == 1 && s.version.minor == 1 && s.version.patch == 3 && s.version.draft);
    CHECK(s.profiles == (CTOSA_PRO_INT | CTOSA_PRO_FP));
    CHECK(s.extensions == CTOSA_EXT_BIT(INT16));
    CHECK(s.level == CTOSA_LEVEL_8K && s.u55);
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &s));
    CHECK(!s.version.draft && s.level == CTOSA_LEVEL_NONE && !s.u55 && s.extensions == 0);

    /* snprintf semantics: truncation still returns the full length */
    char small[8];
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT+int16", &s));
    CHECK(ctosa_spec_format(&s, small, sizeof small) == strlen("TOSA-1.0+INT+int16"));
    CHECK(strcmp(small, "TOSA-1.") == 0);
    CHECK(ctosa_spec_format(&s, NULL, 0) == strlen("TOSA-1.0+INT+int16"));

    CHECK(strcmp(ctosa_ext_token(CTOSA_EXT_INT16), "int16") == 0);
    CHECK(strcmp(ctosa_ext_spec_name(CTOSA_EXT_CONTROLFLOW), "EXT-CONTROLFLOW") == 0);
    CHECK(strcmp(ctosa_ext_token(CTOSA_EXT_VARIABLE), "var") == 0);
    CHECK(ctosa_ext_token(CTOSA_EXT_COUNT) == NULL);
}

#define P "invalid spec string "

static void test_research_invalid(void) {
    fails("TOSA-1.0.0+fft",
          P "'TOSA-1.0.0+fft': no profile: add +INT and/or +FP after the version, e.g. TOSA-1.0+INT");
    fails("TOSA-1.0.0+fp+bf16", P "'TOSA-1.0.0+fp+bf16': profiles are upper case: did you mean FP?");
    fails("TOSA-1.0.0+INT+INT4+cf",
          P "'TOSA-1.0.0+INT+INT4+cf': unknown token 'INT4': extension tokens are lower case: did "
            "you mean int4?");
    fails("TOSA-1.0+FP+shape", P "'TOSA-1.0+FP+shape': shape needs TOSA 1.1 (e.g. TOSA-1.1+FP+shape)");
    fails("TOSA-1.1+INT+blockscale_ue5m3",
          P "'TOSA-1.1+INT+blockscale_ue5m3': unknown token 'blockscale_ue5m3': an ExecuTorch 1.1 "
            "token that ctosa does not support (expected a profile INT or FP, the level 8k, u55 "
            "or an extension: int16 int4 bf16 fp8e4m3 fp8e5m2 fft var cf doubleround "
            "inexactround dynamic int64 shape mx mxfp4e2m1 mxfp6e2m3 mxfp6e3m2 mxfp8e4m3 "
            "mxfp8e5m2 mxint8 mxfpconv)");
    fails("TOSA-1.1+FP+FP+INT", P "'TOSA-1.1+FP+FP+INT': duplicate profile 'FP'");
}

static void test_our_invalid(void) {
    /* the contract's examples */
    fails("TOSA-1.0+INT+INT16",
          P "'TOSA-1.0+INT+INT16': unknown token 'INT16': extension tokens are lower case: did "
            "you mean int16?");
    fails("TOSA-1.0+FP+int64", P "'TOSA-1.0+FP+int64': int64 needs TOSA 1.1 (e.g. TOSA-1.1+FP+int64)");
    /* extension of the other profile */
    fails("TOSA-1.0+INT+bf16",
          P "'TOSA-1.0+INT+bf16': extension bf16 (EXT-BF16) belongs to the FP profile: add +FP");
    fails("TOSA-1.0+INT+fft",
          P "'TOSA-1.0+INT+fft': extension fft (EXT-FFT) belongs to the FP profile: add +FP");
    fails("TOSA-1.0+INT+fp8e5m2", P "'TOSA-1.0+INT+fp8e5m2': extension fp8e5m2 (EXT-FP8E5M2) "
                                    "belongs to the FP profile: add +FP");
    fails("TOSA-1.0+FP+int16",
          P "'TOSA-1.0+FP+int16': extension int16 (EXT-INT16) belongs to the INT profile: add +INT");
    fails("TOSA-1.0+FP+doubleround", P "'TOSA-1.0+FP+doubleround': extension doubleround "
                                       "(EXT-DOUBLEROUND) belongs to the INT profile: add +INT");
    fails("TOSA-1.0+FP+u55",
          P "'TOSA-1.0+FP+u55': u55 (the Ethos-U55 subset) needs the INT profile: add +INT");
    /* duplicates */
    fails("TOSA-1.0+INT+int16+int16", P "'TOSA-1.0+INT+int16+int16': duplicate extension 'int16'");
    fails("TOSA-1.0+INT+INT", P "'TOSA-1.0+INT+INT': duplicate profile 'INT'");
    fails("TOSA-1.0+INT+8k+8k", P "'TOSA-1.0+INT+8k+8k': duplicate level token '8k'");
    fails("TOSA-1.0+INT+u55+u55", P "'TOSA-1.0+INT+u55+u55': duplicate token 'u55'");
    /* unknown tokens with suggestions */
    fails("TOSA-1.0+INT+int17",
          P "'TOSA-1.0+INT+int17': unknown token 'int17': did you mean int16? (expected a profile "
            "INT or FP, the level 8k, u55 or an extension: int16 int4 bf16 fp8e4m3 fp8e5m2 fft "
            "var cf doubleround inexactround dynamic; int64 and shape need TOSA 1.1)");
    fails("TOSA-1.0+INT+dynamc",
          P "'TOSA-1.0+INT+dynamc': unknown token 'dynamc': did you mean dynamic? (expected a "
            "profile INT or FP, the level 8k, u55 or an extension: int16 int4 bf16 fp8e4m3 "
            "fp8e5m2 fft var cf doubleround inexactround dynamic; int64 and shape need TOSA 1.1)");
    fails("TOSA-1.0+FP+fp8",
          P "'TOSA-1.0+FP+fp8': unknown token 'fp8': did you mean fp8e4m3? (expected a profile "
            "INT or FP, the level 8k, u55 or an extension: int16 int4 bf16 fp8e4m3 fp8e5m2 fft "
            "var cf doubleround inexactround dynamic; int64 and shape need TOSA 1.1)");
    fails("TOSA-1.0+INT+foo",
          P "'TOSA-1.0+INT+foo': unknown token 'foo' (expected a profile INT or FP, the level 8k, "
            "u55 or an extension: int16 int4 bf16 fp8e4m3 fp8e5m2 fft var cf doubleround "
            "inexactround dynamic; int64 and shape need TOSA 1.1)");
    fails("TOSA-1.0+INT+8K", P "'TOSA-1.0+INT+8K': unknown token '8K': the level and u55 tokens "
                               "are lower case: did you mean 8k?");
    fails("TOSA-1.0+Int", P "'TOSA-1.0+Int': profiles are upper case: did you mean INT?");
    fails("TOSA-0.80+BI", P "'TOSA-0.80+BI': TOSA 0.80 is a pre-1.0 version; ctosa supports TOSA "
                            "1.0 and the 1.1 draft (e.g. TOSA-1.0+INT)");
    fails("TOSA-1.0+BI", P "'TOSA-1.0+BI': profile 'BI' is from TOSA 0.x; TOSA 1.x profiles are "
                           "INT and FP");
    /* version and layout */
    fails("", "empty spec string: expected TOSA-<major>.<minor>[.<patch>]+<PROFILE>[+<PROFILE>]"
              "[+<token>]..., e.g. TOSA-1.0+INT");
    fails("TOSA-2.0+INT",
          P "'TOSA-2.0+INT': unsupported TOSA version 2.0: ctosa supports 1.0 and 1.1 (draft)");
    fails("TOSA-1.2+INT",
          P "'TOSA-1.2+INT': unsupported TOSA version 1.2: ctosa supports 1.0 and 1.1 (draft)");
    fails("TOSA-1+INT", P "'TOSA-1+INT': bad version '1': expected <major>.<minor>[.<patch>], e.g. "
                          "TOSA-1.0+INT");
    fails("TOSA-1.0.0.0+INT", P "'TOSA-1.0.0.0+INT': bad version '1.0.0.0': expected "
                                "<major>.<minor>[.<patch>], e.g. TOSA-1.0+INT");
    fails("TOSA-1.0.+INT", P "'TOSA-1.0.+INT': bad version '1.0.': expected "
                             "<major>.<minor>[.<patch>], e.g. TOSA-1.0+INT");
    fails("TOSA-1.0.999+INT", P "'TOSA-1.0.999+INT': bad version '1.0.999': patch must be at most 255");
    fails("TOSA-1.0",
          P "'TOSA-1.0': no profile: expected +INT and/or +FP after the version, e.g. TOSA-1.0+INT");
    fails("TOSA-1.0+INT+", P "'TOSA-1.0+INT+': empty token (two '+' in a row, or a '+' at the end)");
    fails("TOSA-1.0++INT", P "'TOSA-1.0++INT': empty token (two '+' in a row, or a '+' at the end)");
    fails("tosa-1.0+INT", P "'tosa-1.0+INT': must start with upper-case \"TOSA-\": did you mean "
                            "TOSA-1.0+INT?");
    fails("1.0+INT", P "'1.0+INT': expected TOSA-<major>.<minor>[.<patch>]+<PROFILE>[+<PROFILE>]"
                       "[+<token>]..., e.g. TOSA-1.0+INT or TOSA-1.0+INT+int16");
    fails("ethos-u55-128", P "'ethos-u55-128': this is a target name, not a spec string: use "
                             "--target ethos-u55-128, or the spec string "
                             "TOSA-1.0+INT+int16+int4+u55");
    fails("TOSA-1.0+INT+mx", P "'TOSA-1.0+INT+mx': mx needs TOSA 1.1 (e.g. TOSA-1.1+FP+mx)");
    fails("TOSA-1.1+INT+mxint8",
          P "'TOSA-1.1+INT+mxint8': extension mxint8 (EXT-MX-INT8) belongs to the FP profile: "
            "add +FP");
    ctosa_spec s;
    CHECK_ERR(ctosa_spec_parse(NULL, &s), CTOSA_ERR_USAGE, "empty spec string");
}

static void target(const char *name, const char *canon) {
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_from_target(name, &s);
    CHECK_MSG(!e, "%s: %s", name, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (e) return;
    char buf[128];
    ctosa_spec_format(&s, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, canon) == 0, "%s -> %s", name, buf);
}

static void test_targets(void) {
    static const char *u55[] = {"ethos-u55-32",  "ethos-u55-64",  "ethos-u55-128",
                                "ethos-u55-256", "ethos-u65-256", "ethos-u65-512"};
    for (size_t i = 0; i < sizeof u55 / sizeof u55[0]; i++) target(u55[i], "TOSA-1.0+INT+int16+int4+u55");
    static const char *u85[] = {"ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024",
                                "ethos-u85-2048"};
    for (size_t i = 0; i < sizeof u85 / sizeof u85[0]; i++) target(u85[i], "TOSA-1.0+INT+int16+int4+cf");
    target("vgf", "TOSA-1.0+FP+INT+int16+int4");
    target("TOSA-1.0+INT", "TOSA-1.0+INT"); /* ExecuTorch accepts spec strings as targets */
    ctosa_spec s;
    CHECK_ERR(ctosa_spec_from_target("ethos-u55-12", &s), CTOSA_ERR_USAGE,
              "unknown target 'ethos-u55-12': did you mean ethos-u55-128? (valid targets: "
              "ethos-u55-32 ethos-u55-64 ethos-u55-128 ethos-u55-256 ethos-u65-256 ethos-u65-512 "
              "ethos-u85-128 ethos-u85-256 ethos-u85-512 ethos-u85-1024 ethos-u85-2048 vgf, or a "
              "spec string such as TOSA-1.0+INT)");
    CHECK_ERR(ctosa_spec_from_target("ethos-u58-256", &s), CTOSA_ERR_USAGE, "did you mean ethos-u55-256?");
    CHECK_ERR(ctosa_spec_from_target("xyz", &s), CTOSA_ERR_USAGE, "unknown target 'xyz' (valid");
    CHECK_ERR(ctosa_spec_from_target(NULL, &s), CTOSA_ERR_USAGE, "unknown target ''");
    const char *sp;
    uint32_t n = 0;
    while (spec_target_name(n, &sp)) n++;
    CHECK(n == 12);
}

/* Hostile inputs: long, odd bytes. Must fail cleanly. */
static void test_hostile(void) {
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    memcpy(big, "TOSA-1.0+INT+", 13);
    ctosa_spec s;
    CHECK_ERR(ctosa_spec_parse(big, &s), CTOSA_ERR_USAGE, "unknown token 'xxx");
    CHECK_ERR(ctosa_spec_parse("TOSA-99999999999999999999.0+INT", &s), CTOSA_ERR_USAGE,
              "unsupported TOSA version");
    CHECK_ERR(ctosa_spec_parse("TOSA-1.0+INT+\xff\xfe", &s), CTOSA_ERR_USAGE, "unknown token");
    CHECK_ERR(ctosa_spec_parse("TOSA-+INT", &s), CTOSA_ERR_USAGE, "bad version ''");
}

/* `ctosa spec` through the CLI. */
static void test_cli(void) {
    const char *ctosa = th_ctosa();
    char *out = NULL;
    int rc = th_run(&out, "'%s' spec TOSA-1.0+INT+INT16", ctosa);
    CHECK(rc == 2);
    CHECK_MSG(out && strstr(out, "extension tokens are lower case: did you mean int16?"), "%s", out);
    free(out);
    rc = th_run(&out, "'%s' spec TOSA-1.0+FP+int64", ctosa);
    CHECK(rc == 2 && out && strstr(out, "int64 needs TOSA 1.1"));
    free(out);
    rc = th_run(&out, "'%s' spec TOSA-1.0.0+INT+FP+fft", ctosa);
    CHECK(rc == 0);
    CHECK_MSG(out && strstr(out, "spec:       TOSA-1.0+FP+INT+fft\n") && strstr(out, "extensions: EXT-FFT") &&
                  strstr(out, "  FFT2D\n") &&
                  strstr(out, "      (i8,i8,i32,i8,i8)->i32 acc i32  [PRO-INT]\n"),
              "%s", out);
    free(out);
    /* INT only: no FFT2D, no fp32 CONV2D */
    rc = th_run(&out, "'%s' spec TOSA-1.0+INT", ctosa);
    CHECK(rc == 0 && out && !strstr(out, "FFT2D") && !strstr(out, "fp32"));
    free(out);
    rc = th_run(&out, "'%s' spec --target ethos-u85-256 --json", ctosa);
    CHECK(rc == 0);
    CHECK_MSG(out && strstr(out, "\"spec\": \"TOSA-1.0+INT+int16+int4+cf\"") &&
                  strstr(out, "\"extensions\": [\"EXT-INT16\", \"EXT-INT4\", "
                              "\"EXT-CONTROLFLOW\"]") &&
                  strstr(out, "{\"name\": \"COND_IF\""),
              "%s", out);
    free(out);
    if (access("/usr/bin/python3", X_OK) == 0) {
        rc = th_run(&out,
                    "'%s' spec TOSA-1.1+FP+INT+int64+shape+8k --json | /usr/bin/python3 -c "
                    "'import json,sys; d=json.load(sys.stdin); "
                    "print(d[\"level\"][\"max_rank\"], d[\"draft\"], len(d[\"operators\"]))'",
                    ctosa);
        CHECK_MSG(rc == 0 && out && strncmp(out, "6 True ", 7) == 0, "%s", out);
        free(out);
    }
    rc = th_run(&out, "'%s' spec --target nope", ctosa);
    CHECK(rc == 2 && out && strstr(out, "unknown target 'nope'") && strstr(out, "vgf"));
    free(out);
    rc = th_run(&out, "'%s' spec --list-targets", ctosa);
    CHECK(rc == 0 && out && strstr(out, "vgf              TOSA-1.0+FP+INT+int16+int4\n"));
    free(out);
    rc = th_run(&out, "'%s' spec", ctosa);
    CHECK(rc == 2);
    free(out);
    rc = th_run(&out, "'%s' spec TOSA-1.0+INT --frobnicate", ctosa);
    CHECK(rc == 2 && out && strstr(out, "unknown option '--frobnicate'"));
    free(out);
    rc = th_run(&out, "'%s' spec --help", ctosa);
    CHECK(rc == 0 && out && strstr(out, "usage: ctosa spec SPEC"));
    free(out);
}

int main(void) {
    RUN(test_research_valid);
    RUN(test_our_valid);
    RUN(test_research_invalid);
    RUN(test_our_invalid);
    RUN(test_targets);
    RUN(test_hostile);
    RUN(test_cli);
    return th_finish();
}
