/* test_qlinear_exact.c - QuantizeLinear of a float tensor rounds exactly
 * as ONNX defines it: y = saturate(rne(fl32(x / scale)) + zero_point),
 * the float32 division ONNX Runtime does, not x * (1 / scale).
 *
 * Models: tests/data/lower/qlinear_exact/ (make_qlinear.py; uint8, per-
 * channel int8, int16). Inputs are made here: for half-integers k + 1/2
 * across the whole output range, the float nearest (k + 1/2) * scale and its
 * neighbours (where fl(x / s) and x * fl(1/s) fall on different sides of
 * the half-integer, or on it), exact ties, saturation, infinities, zeros,
 * subnormals and random values. The reference is computed here with C's
 * float32 division and rintf. Each model runs twice through the
 * partitioned-model runtime: delegated under TOSA-1.0+INT+FP (the TOSA
 * lowering on the interpreter) and as a CPU node under TOSA-1.0+INT (the
 * host executor). Every output must equal the reference, and the inputs
 * must be ones where x * fl(1/s) gives a different answer somewhere (the
 * test would fail on the product formula). */
#include <limits.h>
#include <math.h>

#include "ctosa/lower.h"
#include "ctosa/runtime.h"
#include "harness.h"
#include "lower_testutil.h"

#define QDIR CTOSA_SOURCE_DIR "/tests/data/lower/qlinear_exact/"
#define MAXC 4

typedef struct qmodel {
    char name[32];
    int nch;
    long lo, hi;
    float scale[MAXC];
    long zp[MAXC];
} qmodel;

static int read_meta(qmodel *m, int max) {
    FILE *f = fopen(QDIR "meta.txt", "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        qmodel *q = &m[n];
        char *p = line;
        int used = 0;
        if (sscanf(p, "%31s %d %ld %ld%n", q->name, &q->nch, &q->lo, &q->hi, &used) != 4 || q->nch > MAXC)
            break;
        p += used;
        for (int c = 0; c < q->nch; c++) {
            q->scale[c] = strtof(p, &p);
            q->zp[c] = strtol(p, &p, 10);
        }
        n++;
    }
    fclose(f);
    return n;
}

static uint32_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* m inputs for one channel of scale s, output range [qlo, qhi] (zero point
 * removed). */
static void make_inputs(float *x, int64_t m, float s, long qlo, long qhi, uint64_t *seed) {
    int64_t i = 0;
    const float specials[] = {0.0f,   -0.0f,   INFINITY, -INFINITY, 1e30f,    -1e30f,
                              1e-40f, -1e-40f, 0.5f * s, -0.5f * s, 1.5f * s, -2.5f * s};
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) x[i++] = specials[k];
    int64_t budget = m * 6 / 10 / 9;
    long range = qhi - qlo + 3;
    for (int64_t j = 0; j < budget; j++) {
        long k = qlo - 1 + (long)(budget > 1 ? (double)j * (double)(range - 1) / (double)(budget - 1) : 0);
        float x0 = (float)(((double)k + 0.5) * (double)s);
        x[i++] = x0;
        float up = x0, dn = x0;
        for (int d = 0; d < 4; d++) {
            up = nextafterf(up, INFINITY);
            dn = nextafterf(dn, -INFINITY);
            x[i++] = up;
            x[i++] = dn;
        }
    }
    double a = ((double)qlo - 3) * s, b = ((double)qhi + 3) * s;
    while (i < m) x[i++] = (float)(a + (b - a) * (lcg(seed) / 4294967296.0));
}

/* ONNX: saturate(rne(fl32(x / s)) + zp); the product formula when `prod`. */
static long quantize_ref(float x, float s, long zp, long lo, long hi, bool prod) {
    volatile float q = prod ? x * (float)(1.0 / (double)s) : x / s;
    float fl = (float)(lo - zp), fh = (float)(hi - zp);
    float c = q < fl ? fl : q > fh ? fh : q;
    return lrintf(c) + zp;
}

static long out_at(const ctosa_runtime_tensor *t, uint64_t i) {
    if (!strcmp(t->dtype, "uint8")) return ((const uint8_t *)t->data)[i];
    if (!strcmp(t->dtype, "int8")) return ((const int8_t *)t->data)[i];
    if (!strcmp(t->dtype, "int16")) return ((const int16_t *)t->data)[i];
    return LONG_MIN;
}

/* Lowers model under spec into a fresh directory, runs x through the
 * runtime and counts elements differing from ref. */
static long run_one(const qmodel *q, const char *spec_s, const float *x, const long *ref, uint64_t n,
                    uint32_t want_delegated) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_s, &spec));
    char model[512], dirname[96];
    snprintf(model, sizeof model, QDIR "%s.onnx", q->name);
    snprintf(dirname, sizeof dirname, "%s_%s", q->name, spec_s);
    const char *dir = th_path(th_tmpdir(), dirname);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    opt.stem = "m";
    ctosa_lower_result *r = NULL;
    CHECK_OK(ctosa_lower_file(model, &spec, &opt, &r));
    if (!r) return -1;
    const ctosa_lower_summary *sm = ctosa_lower_result_summary(r);
    CHECK_MSG(sm->nodes_total == 1 && sm->nodes_delegated == want_delegated,
              "%s under %s: %u of %u delegated", q->name, spec_s, sm->nodes_delegated, sm->nodes_total);
    char why[512];
    CHECK_MSG(lt_validate_all(sm, &spec, why, sizeof why), "%s under %s: %s", q->name, spec_s, why);
    ctosa_lower_result_free(r);
    char pm[700];
    snprintf(pm, sizeof pm, "%s/m.partitioned.onnx", dir);
    ctosa_runtime *rt = NULL;
    CHECK_OK(ctosa_runtime_load(pm, NULL, &rt));
    if (!rt) return -1;
    ctosa_runtime_tensor info;
    CHECK_OK(ctosa_runtime_input_info(rt, 0, &info));
    CHECK_OK(ctosa_runtime_set_input(rt, "x", "float32", info.rank, info.shape, x, n * sizeof(float)));
    CHECK_OK(ctosa_runtime_run(rt));
    ctosa_runtime_tensor y;
    long bad = -1;
    ctosa_error *e = ctosa_runtime_get_output(rt, "y", &y);
    CHECK_OK(e);
    if (!e && y.count == n) {
        bad = 0;
        for (uint64_t i = 0; i < n; i++) {
            long got = out_at(&y, i);
            if (got != ref[i] && bad++ < 5)
                fprintf(stderr, "  %s %s [%llu]: x=%.9g got %ld want %ld\n", q->name, spec_s,
                        (unsigned long long)i, (double)x[i], got, ref[i]);
        }
    }
    ctosa_runtime_free(rt);
    return bad;
}

static void test_models(void) {
    qmodel ms[8];
    int nm = read_meta(ms, 8);
    CHECK_MSG(nm == 3, "meta.txt: %d models", nm);
    uint64_t seed = 20261202;
    for (int k = 0; k < nm; k++) {
        const qmodel *q = &ms[k];
        int64_t per = q->nch == 1 ? (q->hi > 255 ? 8192 : 4096) : 2048;
        uint64_t n = (uint64_t)(per * q->nch);
        float *x = malloc(n * sizeof *x);
        long *ref = malloc(n * sizeof *ref);
        if (!x || !ref) abort();
        long prod_diff = 0, dbl_round = 0;
        for (int c = 0; c < q->nch; c++) {
            make_inputs(x + c * per, per, q->scale[c], q->lo - q->zp[c], q->hi - q->zp[c], &seed);
            for (int64_t i = c * per; i < (c + 1) * per; i++) {
                ref[i] = quantize_ref(x[i], q->scale[c], q->zp[c], q->lo, q->hi, false);
                prod_diff += ref[i] != quantize_ref(x[i], q->scale[c], q->zp[c], q->lo, q->hi, true);
                /* fl(x / s) a half-integer that x / s is not */
                float fq = x[i] / q->scale[c];
                dbl_round += fq - floorf(fq) == 0.5f && (double)x[i] / q->scale[c] != fq;
            }
        }
        /* the inputs must tell the two formulas apart */
        CHECK_MSG(prod_diff >= 10, "%s: only %ld inputs where x * (1/s) rounds differently", q->name,
                  prod_diff);
        CHECK_MSG(dbl_round >= 10, "%s: only %ld inputs where fl(x / s) rounds onto a half-integer", q->name,
                  dbl_round);
        fprintf(stderr, "  %s: %llu values, x * (1/s) differs on %ld, fl(x / s) rounds onto k + 1/2 on %ld\n",
                q->name, (unsigned long long)n, prod_diff, dbl_round);
        long bad = run_one(q, "TOSA-1.0+INT+FP", x, ref, n, 1);
        CHECK_MSG(bad == 0, "%s delegated under TOSA-1.0+INT+FP: %ld of %llu differ", q->name, bad,
                  (unsigned long long)n);
        bad = run_one(q, "TOSA-1.0+INT", x, ref, n, 0);
        CHECK_MSG(bad == 0, "%s on the host executor (TOSA-1.0+INT): %ld of %llu differ", q->name, bad,
                  (unsigned long long)n);
        free(x);
        free(ref);
    }
}

int main(void) {
    RUN(test_models);
    return th_finish();
}
