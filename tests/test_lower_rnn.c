/* test_lower_rnn.c - LSTM, GRU and RNN unrolled to TOSA, against ONNX
 * Runtime's outputs (made by tools/models/make_rnn.py).
 *
 * 1. Option cases (tests/data/lower/rnn/<case>/): one recurrent node each
 *    (directions, sequence_lens, initial states, peepholes, clip,
 *    input_forget, linear_before_reset, layout 1, activation lists with
 *    alpha/beta, run-time weights). Under TOSA-1.0+FP: fully delegated,
 *    one partition, every output within 1e-4 of ORT relative to the
 *    output's magnitude (max |ref|).
 * 2. torch 1.13 networks (tests/models/): kws_gru (conv front end + GRU)
 *    and seq_lstm (2-layer bidirectional LSTM classifier).
 *    fp32: TOSA-1.0+FP, one partition with every node, 20 inputs within
 *    1e-4 of ORT relative to the output magnitude.
 *    qnnpack / onednn (FX post-training quantization, QDQ): under
 *    TOSA-1.0+INT+FP one partition with every node, 20 inputs within
 *    3 output steps of ORT on >= 99% of elements and the same top-1.
 *    Under TOSA-1.0+INT (and ethos-u55-128) the recurrent layer, which
 *    torch's quantizer leaves in float, stays on the CPU with its float
 *    neighbours: asserted, and the fallbacks printed. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower_testutil.h"

#define REL_TOL 1e-4

static ctosa_lower_result *lower(const char *model, const ctosa_spec *spec) {
    ctosa_lower_result *res = NULL;
    char why[1024];
    CHECK_MSG(lt_lower(model, spec, NULL, &res, why, sizeof why), "%s: %s", model, why);
    if (!res) return NULL;
    CHECK_MSG(lt_check_accounting(ctosa_lower_result_summary(res), why, sizeof why), "%s: %s", model, why);
    return res;
}

static void print_fallbacks(const ctosa_lower_summary *s, uint32_t max) {
    for (uint32_t i = 0; i < s->n_fallback && i < max; i++)
        printf("      fallback %s (%s): %s: %.160s\n", s->fallback[i].node, s->fallback[i].op_type,
               s->fallback[i].code, s->fallback[i].reason);
}

/* Runs the partitions with `n_in` graph inputs and returns the value table
 * (caller frees); false on a run error. */
static bool run(const ctosa_lower_summary *s, const ctosa_onnx_graph *g, npy_array *ins, lt_values *vals) {
    char why[512];
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        if (!ins[i].data) continue;
        CHECK_OK(lt_values_put(vals, g->inputs[i].name, &ins[i]));
        memset(&ins[i], 0, sizeof ins[i]);
    }
    lt_run_status rs = lt_run_partitions(s, vals, 1, why, sizeof why);
    CHECK_MSG(rs == LT_RUN_OK, "%s", why);
    return rs == LT_RUN_OK;
}

/* max |got - want| / max |want| (1 when want is all zeros) over float
 * arrays; -1 on a shape mismatch. */
static double rel_diff(const npy_array *got, const npy_array *want) {
    if (!got || got->kind != 'f' || want->kind != 'f' || got->count != want->count) return -1;
    double mag = 0, d = 0;
    for (uint64_t i = 0; i < want->count; i++) mag = fmax(mag, fabs(lt_npy_at(want, i)));
    for (uint64_t i = 0; i < want->count; i++) d = fmax(d, fabs(lt_npy_at(got, i) - lt_npy_at(want, i)));
    return d / (mag > 0 ? mag : 1);
}

static ctosa_spec spec_of(const char *s) {
    ctosa_spec sp;
    memset(&sp, 0, sizeof sp);
    CHECK_OK(ctosa_spec_parse(s, &sp));
    return sp;
}

/* ------------------------------------------------------------ option cases */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void one_case(const char *dir, const char *name) {
    char model[1200], f[1300];
    snprintf(model, sizeof model, "%s/%s/model.onnx", dir, name);
    ctosa_spec sp = spec_of("TOSA-1.0+FP");
    ctosa_lower_result *r = lower(model, &sp);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK_MSG(s->n_fallback == 0 && s->n_partitions == 1, "%s: %u fallback, %u partitions", name,
              s->n_fallback, s->n_partitions);
    if (s->n_fallback) print_fallbacks(s, 3);
    ctosa_onnx_model *m = NULL;
    CHECK_OK(ctosa_onnx_load(model, NULL, &m));
    const ctosa_onnx_graph *g = m ? ctosa_onnx_info(m)->graph : NULL;
    if (!g || s->n_fallback) goto done;
    npy_array ins[8];
    memset(ins, 0, sizeof ins);
    for (uint32_t i = 0; i < g->n_inputs && i < 8; i++) {
        snprintf(f, sizeof f, "%s/%s/input_%u.npy", dir, name, i);
        CHECK_OK(lt_load_array(f, &ins[i]));
    }
    lt_values vals = {0};
    if (run(s, g, ins, &vals)) {
        double worst = 0;
        for (uint32_t o = 0; o < g->n_outputs; o++) {
            npy_array want;
            snprintf(f, sizeof f, "%s/%s/ort_output_%u.npy", dir, name, o);
            CHECK_OK(lt_load_array(f, &want));
            double d = rel_diff(lt_values_get(&vals, g->outputs[o].name), &want);
            CHECK_MSG(d >= 0 && d <= REL_TOL, "%s: output %s: relative difference %.3g", name,
                      g->outputs[o].name, d);
            worst = fmax(worst, d);
            npy_free(&want);
        }
        printf("  %-30s %u node, %u outputs, max relative difference to ORT %.2g\n", name, s->nodes_total,
               g->n_outputs, worst);
    }
    lt_values_free(&vals);
    for (uint32_t i = 0; i < 8; i++) npy_free(&ins[i]);
done:
    ctosa_onnx_free(m);
    ctosa_lower_result_free(r);
}

static void test_cases(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tests/data/lower/rnn", CTOSA_SOURCE_DIR);
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "%s missing", dir);
    if (!d) return;
    char *names[64];
    uint32_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    CHECK(n >= 10);
    for (uint32_t i = 0; i < n; i++) {
        one_case(dir, names[i]);
        free(names[i]);
    }
}

/* ---------------------------------------------------------------- networks */

/* Row k (of `sets`) of a stacked array as its own array (borrowed data). */
static npy_array row(const npy_array *a, int k, int sets) {
    npy_array r = *a;
    uint64_t per = a->count / (uint64_t)sets;
    r.count = per;
    r.data = (uint8_t *)a->data + per * (uint64_t)k * (a->kind == 'f' ? 4 : 1);
    r.rank = a->rank - 1;
    memmove(r.shape, a->shape + 1, r.rank * sizeof r.shape[0]);
    return r;
}

static bool top1_same(const npy_array *got, const npy_array *want) {
    uint64_t ig = 0, iw = 0;
    for (uint64_t i = 1; i < want->count; i++) {
        if (lt_npy_at(got, i) > lt_npy_at(got, ig)) ig = i;
        if (lt_npy_at(want, i) > lt_npy_at(want, iw)) iw = i;
    }
    /* quantized logits tie: any index holding the maximum in both counts */
    return lt_npy_at(want, ig) == lt_npy_at(want, iw) || lt_npy_at(got, iw) == lt_npy_at(got, ig);
}

/* Runs the 20 stored inputs through a fully delegated lowering and compares
 * with ORT's outputs: fp32 relative to the magnitude, quantized in output
 * steps (step > 0). */
static void compare20(const char *net, const char *spec, const ctosa_lower_summary *s,
                      const ctosa_onnx_graph *g, double step) {
    char f[700];
    npy_array xs, ref;
    snprintf(f, sizeof f, "%s/tests/models/%s/inputs_20.npy", CTOSA_SOURCE_DIR, net);
    CHECK_OK(lt_load_array(f, &xs));
    snprintf(f, sizeof f, "%s/tests/models/%s/ort_outputs_20.npy", CTOSA_SOURCE_DIR, net);
    CHECK_OK(lt_load_array(f, &ref));
    int sets = (int)xs.shape[0];
    double mag = 0, maxd = 0;
    uint64_t within = 0, total = 0;
    int top1 = 0;
    for (uint64_t i = 0; i < ref.count; i++) mag = fmax(mag, fabs(lt_npy_at(&ref, i)));
    if (mag == 0) mag = 1;
    for (int k = 0; k < sets; k++) {
        npy_array in = row(&xs, k, sets), want = row(&ref, k, sets), copy;
        copy = in;
        copy.data = malloc(in.count * 4);
        if (!copy.data) break;
        memcpy(copy.data, in.data, in.count * 4);
        lt_values vals = {0};
        npy_array ins[1] = {copy};
        if (run(s, g, ins, &vals)) {
            const npy_array *got = lt_values_get(&vals, g->outputs[0].name);
            CHECK(got && got->count == want.count);
            for (uint64_t i = 0; got && got->count == want.count && i < want.count; i++) {
                double d = fabs(lt_npy_at(got, i) - lt_npy_at(&want, i));
                maxd = fmax(maxd, d);
                within += step > 0 && d / step <= 3.0001;
                total++;
            }
            if (got && got->count == want.count) top1 += top1_same(got, &want);
        }
        npy_free(&ins[0]);
        lt_values_free(&vals);
    }
    if (step > 0) {
        double frac = total ? (double)within / (double)total : 0;
        printf("      %s, %d inputs vs ORT: max %.2f steps, %.2f%% within 3 steps, top-1 %d/%d\n", spec, sets,
               maxd / step, 100 * frac, top1, sets);
        CHECK_MSG(frac >= 0.99, "%s: %.4f within 3 steps", net, frac);
        CHECK_MSG(top1 == sets, "%s: top-1 %d/%d", net, top1, sets);
    } else {
        printf("      %s, %d inputs vs ORT: max |diff| %.3g, relative to magnitude %.3g: %.2g, top-1 %d/%d\n",
               spec, sets, maxd, mag, maxd / mag, top1, sets);
        CHECK_MSG(maxd / mag <= REL_TOL, "%s: relative difference %.3g", net, maxd / mag);
        CHECK_MSG(top1 == sets, "%s: top-1 %d/%d", net, top1, sets);
    }
    npy_free(&xs);
    npy_free(&ref);
}

static bool is_recurrent(const char *op) {
    return !strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN");
}

static void one_net(const char *net, bool quantized) {
    char model[600], f[700];
    snprintf(model, sizeof model, "%s/tests/models/%s/model.onnx", CTOSA_SOURCE_DIR, net);
    ctosa_onnx_model *m = NULL;
    CHECK_OK(ctosa_onnx_load(model, NULL, &m));
    const ctosa_onnx_graph *g = m ? ctosa_onnx_info(m)->graph : NULL;
    if (!g) return;
    double step = 0;
    if (quantized) {
        npy_array sc;
        snprintf(f, sizeof f, "%s/tests/models/%s/output_scale.npy", CTOSA_SOURCE_DIR, net);
        CHECK_OK(lt_load_array(f, &sc));
        step = sc.count == 1 ? lt_npy_at(&sc, 0) : 0;
        npy_free(&sc);
        CHECK(step > 0);
    }
    const char *full = quantized ? "TOSA-1.0+INT+FP" : "TOSA-1.0+FP";
    ctosa_spec sp = spec_of(full);
    ctosa_lower_result *r = lower(model, &sp);
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        printf("  %-20s %s: %u/%u nodes delegated, %u partition(s)\n", net, full, s->nodes_delegated,
               s->nodes_total, s->n_partitions);
        CHECK_MSG(s->n_fallback == 0 && s->n_partitions == 1, "%s: %u fallback, %u partitions", net,
                  s->n_fallback, s->n_partitions);
        print_fallbacks(s, 4);
        if (s->n_fallback == 0 && s->n_partitions == 1) compare20(net, full, s, g, step);
        ctosa_lower_result_free(r);
    }
    if (quantized) {
        /* integer only: the float recurrent layer (and the float shape
         * operators around it) stay on the CPU, everything else delegates */
        static const char *const ints[] = {"TOSA-1.0+INT", "ethos-u55-128"};
        for (int k = 0; k < 2; k++) {
            ctosa_spec is;
            if (k == 0) is = spec_of(ints[k]);
            else CHECK_OK(ctosa_spec_from_target(ints[k], &is));
            r = lower(model, &is);
            if (!r) continue;
            const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
            uint32_t rec = 0, rec_total = 0;
            for (uint32_t i = 0; i < g->n_nodes; i++) rec_total += is_recurrent(g->nodes[i].op_type);
            printf("  %-20s %s: %u/%u nodes delegated, %u partition(s); on the CPU:", net, ints[k],
                   s->nodes_delegated, s->nodes_total, s->n_partitions);
            /* fallback histogram by operator */
            const char *seen[64];
            uint32_t cnt[64], ns = 0;
            for (uint32_t i = 0; i < s->n_fallback; i++) {
                const char *op = s->fallback[i].op_type;
                if (is_recurrent(op)) {
                    rec++;
                    CHECK_MSG(!strcmp(s->fallback[i].code, "not_in_spec"), "%s: %s falls back with %s", net,
                              op, s->fallback[i].code);
                }
                uint32_t j = 0;
                while (j < ns && strcmp(seen[j], op)) j++;
                if (j == ns && ns < 64) seen[ns] = op, cnt[ns++] = 0;
                if (j < ns) cnt[j]++;
            }
            for (uint32_t j = 0; j < ns; j++) printf(" %s x%u", seen[j], cnt[j]);
            printf("\n");
            CHECK_MSG(rec == rec_total, "%s: %u of %u recurrent nodes fall back under %s", net, rec,
                      rec_total, ints[k]);
            CHECK(s->n_partitions >= 1);
            ctosa_lower_result_free(r);
        }
    }
    ctosa_onnx_free(m);
}

static void test_nets(void) {
    static const char *const nets[] = {"kws_gru", "seq_lstm"};
    static const char *const variants[] = {"fp32", "qnnpack", "onednn"};
    for (int n = 0; n < 2; n++)
        for (int v = 0; v < 3; v++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%s", nets[n], variants[v]);
            one_net(name, v > 0);
        }
}

int main(void) {
    RUN(test_cases);
    RUN(test_nets);
    return th_finish();
}
