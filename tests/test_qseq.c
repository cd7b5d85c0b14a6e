/* test_qtransformer.c - int16-activation (a16w8, EXT-INT16) transformer
 * operators on the integer path: Softmax and LayerNormalization (the
 * decompositions in src/lower/quant/qdq_softmax.c), an attention block,
 * and whole encoders (tools/models/make_qtransformer.py).
 *
 * Per-operator models: tests/data/lower/quant16/ (make_models.py; the
 * references are the float64 QDQ semantics, ONNX Runtime's outputs stored
 * beside them). Each must delegate completely under TOSA-1.0+INT+int16;
 * each output is compared with the reference in output steps against the
 * tolerance stated in the table (why it is what it is: next to it), and
 * with ONNX Runtime within that tolerance plus ORT's own distance from the
 * reference. Without EXT-INT16 the int16 heads fall back with the
 * validator's reason.
 *
 * Encoders: the committed two-layer transformer_small and, when
 * CTOSA_QMODELS_DIR holds it, the full transformer_a16w8: one partition
 * holding every node but the boundary QuantizeLinear / DequantizeLinear
 * under TOSA-1.0+INT+int16, ethos-u85-256 and ethos-u55-128, all nodes
 * under TOSA-1.0+INT+int16+FP; dequantized outputs within 3 output steps
 * of ONNX Runtime on at least 99% of the elements of 20 random inputs,
 * and the same top-1.
 *
 * Recurrent networks (tests/data/lower/qrnn/): the same checks under
 * TOSA-1.0+INT, ethos-u55-128 and ethos-u85-256, every node under
 * TOSA-1.0+INT+FP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lower_testutil.h"

static ctosa_lower_result *lower(const char *model, const char *target) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_from_target(target, &spec));
    ctosa_lower_result *res;
    char why[1024];
    CHECK_MSG(lt_lower(model, &spec, NULL, &res, why, sizeof why), "%s: %s", model, why);
    return res;
}

static int64_t int_at(const npy_array *a, uint64_t i) {
    const uint8_t *p = (const uint8_t *)a->data + i * a->itemsize;
    if (a->itemsize == 1) return a->kind == 'u' ? (int64_t)p[0] : (int64_t)(int8_t)p[0];
    int16_t v;
    memcpy(&v, p, 2);
    return v;
}

typedef struct tol {
    const char *what;
    int max_steps;
} tol;

/* Lowers quant16/name under target: every node delegated; runs it on
 * input_<k>.npy and compares output k with ref_output_k.npy (and
 * ort_output_k.npy) within tols[k]. */
static void run_model(const char *name, const char *target, const tol *tols, uint32_t n_tols) {
    char dir[600], model[700], f[760], why[512];
    snprintf(dir, sizeof dir, "%s/tests/data/lower/quant16/%s", CTOSA_SOURCE_DIR, name);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    ctosa_lower_result *r = lower(model, target);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK_MSG(s->n_fallback == 0 && s->n_partitions >= 1, "%s under %s: %u fallback, %u partitions", name,
              target, s->n_fallback, s->n_partitions);
    for (uint32_t i = 0; i < s->n_fallback && i < 8; i++)
        printf("      fallback %s (%s): %s: %s\n", s->fallback[i].node, s->fallback[i].op_type,
               s->fallback[i].code, s->fallback[i].reason);
    ctosa_onnx_model *m = NULL;
    CHECK_OK(ctosa_onnx_load(model, NULL, &m));
    const ctosa_onnx_graph *g = m ? ctosa_onnx_info(m)->graph : NULL;
    lt_values vals = {0};
    for (uint32_t k = 0; g && k < g->n_inputs; k++) {
        npy_array a;
        snprintf(f, sizeof f, "%s/input_%u.npy", dir, k);
        CHECK_OK(lt_load_array(f, &a));
        CHECK_OK(lt_values_put(&vals, g->inputs[k].name, &a));
    }
    lt_run_status rs =
        g && s->n_fallback == 0 ? lt_run_partitions(s, &vals, 1, why, sizeof why) : LT_RUN_ERROR;
    CHECK_MSG(rs == LT_RUN_OK, "%s: %s", name, why);
    printf("  %s under %s: %u/%u nodes delegated, %u partition(s)\n", name, target, s->nodes_delegated,
           s->nodes_total, s->n_partitions);
    CHECK_MSG(!g || g->n_outputs == n_tols, "%s: %u outputs, %u tolerances", name, g ? g->n_outputs : 0,
              n_tols);
    for (uint32_t o = 0; rs == LT_RUN_OK && g && o < g->n_outputs && o < n_tols; o++) {
        npy_array want, ort;
        snprintf(f, sizeof f, "%s/ref_output_%u.npy", dir, o);
        CHECK_OK(lt_load_array(f, &want));
        const npy_array *got = lt_values_get(&vals, g->outputs[o].name);
        if (!got || !want.data || got->count != want.count) {
            CHECK_MSG(false, "%s: output %u (%s) missing or of another size", name, o, tols[o].what);
            npy_free(&want);
            continue;
        }
        int64_t maxd = 0;
        uint64_t exact = 0;
        for (uint64_t i = 0; i < got->count; i++) {
            int64_t d = llabs(int_at(got, i) - int_at(&want, i));
            if (d > maxd) maxd = d;
            exact += d == 0;
        }
        printf("    %-34s max %lld step(s) (allowed %d), %5.1f%% exact of %llu", tols[o].what,
               (long long)maxd, tols[o].max_steps, 100.0 * (double)exact / (double)got->count,
               (unsigned long long)got->count);
        snprintf(f, sizeof f, "%s/ort_output_%u.npy", dir, o);
        if (access(f, R_OK) == 0 && !lt_load_array(f, &ort)) {
            int64_t maxo = 0, ort_ref = 0;
            for (uint64_t i = 0; ort.count == got->count && i < got->count; i++) {
                int64_t d = llabs(int_at(got, i) - int_at(&ort, i)),
                        e = llabs(int_at(&ort, i) - int_at(&want, i));
                if (d > maxo) maxo = d;
                if (e > ort_ref) ort_ref = e;
            }
            printf("; vs ORT max %lld (ORT vs reference %lld)", (long long)maxo, (long long)ort_ref);
            CHECK_MSG(ort.count == got->count && maxo <= tols[o].max_steps + ort_ref,
                      "%s: output %s is %lld steps from ONNX Runtime", name, tols[o].what, (long long)maxo);
            npy_free(&ort);
        }
        printf("\n");
        CHECK_MSG(maxd <= tols[o].max_steps, "%s: output %s is %lld steps from the reference (allowed %d)",
                  name, tols[o].what, (long long)maxd, tols[o].max_steps);
        npy_free(&want);
    }
    ctosa_onnx_free(m);
    lt_values_free(&vals);
    ctosa_lower_result_free(r);
}

/* int16 Softmax: exp through a 2^-f TABLE (entries 1/32767 of the largest
 * term), the sum and a Newton reciprocal in int32, one RESCALE out. */
static void test_softmax16(void) {
    static const tol tols[] = {
        {"Softmax axis -1", 1},  {"Softmax axis 1", 1},        {"Softmax wide input scale", 1},
        {"Softmax 300 long", 1}, {"Softmax int8 -> int16", 1}, {"Softmax int16 -> int8", 1},
    };
    run_model("softmax16", "TOSA-1.0+INT+int16", tols, sizeof tols / sizeof *tols);
}

/* int16 LayerNormalization: a per-row shift keeps the integer variance in
 * int32, rsqrt to Q29, the normalised value with full precision. */
static void test_layernorm16(void) {
    static const tol tols[] = {
        {"LayerNorm axis -1, gamma/beta", 1},
        {"LayerNorm axes 1,2, DQ gamma", 1},
        {"LayerNorm int8 -> int16", 1},
        {"LayerNorm int16 -> int8", 1},
    };
    run_model("layernorm16", "TOSA-1.0+INT+int16", tols, sizeof tols / sizeof *tols);
}

/* The reference quantises after every stage like the model; one step in
 * an intermediate (scores, probabilities) can move the output by one
 * more. */
static void test_attention16(void) {
    static const tol tols[] = {{"attention output", 2}};
    run_model("attention16", "TOSA-1.0+INT+int16", tols, 1);
    run_model("attention16", "ethos-u85-256", tols, 1);
    run_model("attention16", "ethos-u55-128", tols, 1);
}

/* Without EXT-INT16 the int16 Softmax groups (int16 TABLE) stay on the CPU
 * with the validator's reason; the int16 LayerNormalization needs only
 * int32 arithmetic, an int8 TABLE and RESCALE, so PRO-INT runs it. */
static void test_no_int16(void) {
    char model[700];
    snprintf(model, sizeof model, "%s/tests/data/lower/quant16/softmax16/model.onnx", CTOSA_SOURCE_DIR);
    ctosa_lower_result *r = lower(model, "TOSA-1.0+INT");
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        uint32_t heads = 0, why16 = 0;
        for (uint32_t i = 0; i < s->n_fallback; i++) {
            if (strcmp(s->fallback[i].op_type, "Softmax")) continue;
            heads++;
            why16 += strstr(s->fallback[i].reason, "EXT-INT16") != NULL;
        }
        printf("  softmax16 under TOSA-1.0+INT: %u/%u delegated, %u Softmax on the CPU (%u for EXT-INT16)\n",
               s->nodes_delegated, s->nodes_total, heads, why16);
        CHECK_MSG(heads == 6 && why16 == 6, "softmax16: %u Softmax fell back, %u naming EXT-INT16", heads,
                  why16);
        ctosa_lower_result_free(r);
    }
    static const tol tols[] = {
        {"LayerNorm axis -1, gamma/beta", 1},
        {"LayerNorm axes 1,2, DQ gamma", 1},
        {"LayerNorm int8 -> int16", 1},
        {"LayerNorm int16 -> int8", 1},
    };
    run_model("layernorm16", "TOSA-1.0+INT", tols, sizeof tols / sizeof *tols);
}

/* ------------------------------------------------------ encoders */

/* Greatest element index (first of equals). */
static uint64_t argmax(const float *v, uint64_t n) {
    uint64_t k = 0;
    for (uint64_t i = 1; i < n; i++)
        if (v[i] > v[k]) k = i;
    return k;
}

/* A network folder (model.onnx, inputs_20.npy, ort_outputs_20.npy) under
 * target: one partition, on the CPU only the input QuantizeLinear and the
 * output DequantizeLinear; the 20 inputs quantised as that QuantizeLinear
 * does, the partition run, its int8 / int16 output dequantised and
 * compared with ONNX Runtime in output steps. */
static void qnetwork(const char *dir, const char *name, const char *target) {
    char model[1200], f[1200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    ctosa_lower_result *r = lower(model, target);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    uint32_t q = 0, dq = 0, other = 0;
    for (uint32_t i = 0; i < s->n_fallback; i++) {
        const char *op = s->fallback[i].op_type;
        if (!strcmp(op, "QuantizeLinear")) q++;
        else if (!strcmp(op, "DequantizeLinear")) dq++;
        else {
            other++;
            printf("      fallback %s (%s): %s\n", s->fallback[i].node, op, s->fallback[i].reason);
        }
    }
    printf("  %-18s %-20s %u/%u nodes delegated, %u partition(s), on the CPU: %u Q, %u DQ, %u other\n", name,
           target, s->nodes_delegated, s->nodes_total, s->n_partitions, q, dq, other);
    CHECK_MSG(s->n_partitions == 1 && q == 1 && dq == 1 && other == 0,
              "%s under %s: %u partitions, %u fallback", name, target, s->n_partitions, s->n_fallback);
    if (s->n_partitions != 1) {
        ctosa_lower_result_free(r);
        return;
    }
    const ctosa_lower_partition *p = &s->partitions[0];
    CHECK(p->n_inputs == 1 && p->n_outputs == 1);
    const ctosa_lower_io *pin = &p->inputs[0], *pout = &p->outputs[0];
    bool w16 = !strcmp(pin->dtype, "int16");
    CHECK_MSG(pin->quantized && pout->quantized && !strcmp(pin->dtype, pout->dtype) &&
                  (w16 || !strcmp(pin->dtype, "int8")),
              "%s: partition I/O %s / %s", name, pin->dtype, pout->dtype);
    npy_array xs, ref;
    snprintf(f, sizeof f, "%s/inputs_20.npy", dir);
    CHECK_OK(lt_load_array(f, &xs));
    snprintf(f, sizeof f, "%s/ort_outputs_20.npy", dir);
    CHECK_OK(lt_load_array(f, &ref));
    if (!xs.data || !ref.data || xs.kind != 'f' || ref.kind != 'f' || !pin->quantized) {
        npy_free(&xs);
        npy_free(&ref);
        ctosa_lower_result_free(r);
        return;
    }
    int sets = (int)xs.shape[0];
    uint64_t per_in = xs.count / (uint64_t)sets, per_out = ref.count / (uint64_t)sets;
    int16_t *qin = malloc(per_in * sizeof *qin);
    float *y = malloc(per_out * sizeof *y);
    uint64_t within = 0, total = 0;
    double maxsteps = 0;
    int top1 = 0;
    ctosa_interp_options io;
    ctosa_interp_options_init(&io);
    ctosa_interp *it = NULL;
    CHECK_OK(ctosa_interp_create(p->graph, &io, &it));
    for (int k = 0; it && qin && y && k < sets; k++) {
        const float *x = (const float *)xs.data + per_in * (uint64_t)k;
        for (uint64_t i = 0; i < per_in; i++) {
            float v = nearbyintf(x[i] / (float)pin->scale) + (float)pin->zero_point;
            float lo = w16 ? -32768.0f : -128.0f, hi = w16 ? 32767.0f : 127.0f;
            v = v < lo ? lo : v > hi ? hi : v;
            if (w16) qin[i] = (int16_t)v;
            else ((int8_t *)qin)[i] = (int8_t)v;
        }
        int64_t shape[8];
        for (uint32_t d = 0; d < pin->rank && d < 8; d++) shape[d] = pin->shape[d];
        ctosa_error *e = ctosa_interp_set_input(it, pin->name, w16 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT8,
                                                pin->rank, shape, qin, per_in * (w16 ? 2 : 1));
        if (!e) e = ctosa_interp_run(it);
        ctosa_interp_tensor t;
        if (!e) e = ctosa_interp_get_output(it, pout->name, &t);
        if (!e && t.count != per_out) {
            CHECK_MSG(false, "%s: %llu outputs", name, (unsigned long long)t.count);
            break;
        }
        if (e) {
            CHECK_MSG(false, "%s: %s", name, ctosa_error_message(e));
            ctosa_error_free(e);
            break;
        }
        const float *w = (const float *)ref.data + per_out * (uint64_t)k;
        for (uint64_t i = 0; i < per_out; i++) {
            int64_t qv = w16 ? ((const int16_t *)t.data)[i] : ((const int8_t *)t.data)[i];
            y[i] = (float)((qv - pout->zero_point) * pout->scale);
            double d = fabs((double)y[i] - (double)w[i]) / pout->scale;
            if (d > maxsteps) maxsteps = d;
            within += d <= 3.0001;
            total++;
        }
        top1 += argmax(y, per_out) == argmax(w, per_out);
    }
    ctosa_interp_free(it);
    double frac = total ? (double)within / (double)total : 0;
    printf("      vs ONNX Runtime, %d inputs: max %.2f steps, %.2f%% within 3 steps, top-1 %d/%d\n", sets,
           maxsteps, 100.0 * frac, top1, sets);
    CHECK_MSG(frac >= 0.99, "%s: %.4f within 3 steps", name, frac);
    CHECK_MSG(top1 == sets, "%s: top-1 %d/%d", name, top1, sets);
    free(qin);
    free(y);
    npy_free(&xs);
    npy_free(&ref);
    ctosa_lower_result_free(r);
}

/* Under a spec with FP the boundary Q / DQ lower too: every node. */
static void qnetwork_fp(const char *dir, const char *name, const char *spec) {
    char model[1200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    ctosa_lower_result *r = lower(model, spec);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    printf("  %-18s %-20s %u/%u nodes delegated, %u partition(s)\n", name, spec, s->nodes_delegated,
           s->nodes_total, s->n_partitions);
    CHECK_MSG(s->n_fallback == 0 && s->n_partitions == 1, "%s under %s: %u fallback, %u partitions", name,
              spec, s->n_fallback, s->n_partitions);
    ctosa_lower_result_free(r);
}

static const char *const TARGETS[] = {"TOSA-1.0+INT+int16", "ethos-u85-256", "ethos-u55-128"};

/* transformer_small (committed): two post-norm layers, width 32. */
static void test_transformer_small(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/tests/data/lower/quant16/transformer_small", CTOSA_SOURCE_DIR);
    for (size_t i = 0; i < sizeof TARGETS / sizeof *TARGETS; i++)
        qnetwork(dir, "transformer_small", TARGETS[i]);
    qnetwork_fp(dir, "transformer_small", "TOSA-1.0+INT+int16+FP");
}

/* transformer_a16w8 (width 64, 4 heads) from CTOSA_QMODELS_DIR. */
static void test_transformer_generated(void) {
    const char *root = getenv("CTOSA_QMODELS_DIR");
    char dir[1000], f[1100];
    snprintf(dir, sizeof dir, "%s/transformer_a16w8", root ? root : "");
    snprintf(f, sizeof f, "%s/ort_outputs_20.npy", dir);
    if (!root || !root[0] || access(f, R_OK) != 0) {
        printf("  no transformer_a16w8 in CTOSA_QMODELS_DIR: the full-size encoder is skipped\n");
        return;
    }
    for (size_t i = 0; i < sizeof TARGETS / sizeof *TARGETS; i++)
        qnetwork(dir, "transformer_a16w8", TARGETS[i]);
    qnetwork_fp(dir, "transformer_a16w8", "TOSA-1.0+INT+int16+FP");
}

/* Integer LSTM / GRU / RNN (int8 activations, int8 W / R per output
 * row, int32 B): kws_gru_q (conv front end + GRU), seq_lstm_q (two LSTM
 * layers, the first bidirectional), rnn_mix_q (reverse GRU without
 * linear_before_reset, bidirectional RNN). One partition of every node
 * but the boundary Q / DQ under TOSA-1.0+INT and the Ethos-U targets,
 * every node under TOSA-1.0+INT+FP. */
static void test_qrnn(void) {
    static const char *const nets[] = {"kws_gru_q", "seq_lstm_q", "rnn_mix_q"};
    static const char *const targets[] = {"TOSA-1.0+INT", "ethos-u55-128", "ethos-u85-256"};
    for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
        char dir[700];
        snprintf(dir, sizeof dir, "%s/tests/data/lower/qrnn/%s", CTOSA_SOURCE_DIR, nets[i]);
        for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) qnetwork(dir, nets[i], targets[t]);
        qnetwork_fp(dir, nets[i], "TOSA-1.0+INT+FP");
    }
}

int main(void) {
    RUN(test_softmax16);
    RUN(test_layernorm16);
    RUN(test_attention16);
    RUN(test_no_int16);
    RUN(test_transformer_small);
    RUN(test_transformer_generated);
    RUN(test_qrnn);
    return th_finish();
}
