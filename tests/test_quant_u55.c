/* test_quant_u55.c - quantized models under the Ethos-U targets.
 *
 * 1. The committed mobilenet_v2_x0_25 QDQ models (qnnpack, onednn) under
 *    ethos-u55-128, ethos-u65-256 and ethos-u85-256: nothing in them breaks
 *    a U55 rule, so they delegate exactly as under TOSA-1.0+INT (1131/1135:
 *    only the boundary Q, DQ and the DQ's two Constants on the CPU).
 * 2. QDQ models with what U55 cannot run (tests/data/lower/quant_u55/):
 *    a quantized Gather (GATHER) and a 4x4 stride-4 MaxPool (U55 pooling
 *    strides are 1..3) stay on the CPU under ethos-u55-128 / u65 with code
 *    not_in_spec and the U55 reason, together with their group's Q and DQ;
 *    under ethos-u85-256 they are delegated. In a Conv -> MaxPool s4 -> Conv
 *    chain the convolutions are still delegated (two partitions), and running
 *    the two partitions with the pool on the CPU gives exactly the output of
 *    the single TOSA-1.0+INT partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower_testutil.h"

#define U55_DATA CTOSA_SOURCE_DIR "/tests/data/lower/quant_u55"

static ctosa_lower_result *lower_t(const char *model, const char *target) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_from_target(target, &spec));
    ctosa_lower_result *res;
    char why[1024];
    CHECK_MSG(lt_lower(model, &spec, NULL, &res, why, sizeof why), "%s under %s: %s", model, target, why);
    return res;
}

static void test_mobilenet_targets(void) {
    static const char *const models[] = {"mobilenet_v2_x0_25_qnnpack", "mobilenet_v2_x0_25_onednn"};
    static const char *const targets[] = {"ethos-u55-128", "ethos-u65-256", "ethos-u85-256"};
    for (size_t m = 0; m < 2; m++)
        for (size_t t = 0; t < 3; t++) {
            char path[600];
            snprintf(path, sizeof path, "%s/tests/models/%s/model.onnx", CTOSA_SOURCE_DIR, models[m]);
            ctosa_lower_result *r = lower_t(path, targets[t]);
            if (!r) continue;
            const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
            uint32_t other = 0;
            for (uint32_t i = 0; i < s->n_fallback; i++) {
                const char *op = s->fallback[i].op_type;
                if (strcmp(op, "QuantizeLinear") && strcmp(op, "DequantizeLinear") &&
                    strcmp(op, "Constant")) {
                    other++;
                    printf("    unexpected fallback %s: %s\n", s->fallback[i].node, s->fallback[i].reason);
                }
            }
            CHECK_MSG(s->n_partitions == 1 && s->nodes_delegated == 1131 && s->nodes_total == 1135 &&
                          other == 0,
                      "%s under %s: %u/%u delegated, %u partitions, %u unexpected fallbacks", models[m],
                      targets[t], s->nodes_delegated, s->nodes_total, s->n_partitions, other);
            printf("  %-28s %-14s %u/%u delegated, %u partition\n", models[m], targets[t], s->nodes_delegated,
                   s->nodes_total, s->n_partitions);
            ctosa_lower_result_free(r);
        }
}

/* Under the U55 targets node `node` falls back with not_in_spec and a reason
 * containing `reason`; its group's Q/DQ fall back with it; under u85 all is
 * delegated. */
static void u55_case(const char *file, const char *node, const char *reason, uint32_t total) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", U55_DATA, file);
    static const char *const targets[] = {"ethos-u55-128", "ethos-u55-32", "ethos-u65-512"};
    for (size_t t = 0; t < 3; t++) {
        ctosa_lower_result *r = lower_t(path, targets[t]);
        if (!r) continue;
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        bool found = false;
        uint32_t qdq = 0, other = 0;
        for (uint32_t i = 0; i < s->n_fallback; i++) {
            const ctosa_lower_fallback *f = &s->fallback[i];
            if (!strcmp(f->node, node)) {
                found = true;
                CHECK_MSG(!strcmp(f->code, "not_in_spec"), "%s: code %s", node, f->code);
                CHECK_MSG(strstr(f->reason, "Ethos-U55 subset (u55)") && strstr(f->reason, reason),
                          "%s: reason '%s'", node, f->reason);
                if (t == 0) printf("  %-16s %-14s %s: %s\n", file, targets[t], f->code, f->reason);
            } else if (!strcmp(f->op_type, "QuantizeLinear") || !strcmp(f->op_type, "DequantizeLinear")) {
                qdq++;
            } else {
                other++;
            }
        }
        CHECK_MSG(found && qdq == 2 && other == 0, "%s under %s: %s %s, %u Q/DQ, %u other fallbacks", file,
                  targets[t], node, found ? "on CPU" : "not on CPU", qdq, other);
        CHECK_MSG(s->nodes_delegated == total - 3, "%s under %s: %u delegated of %u", file, targets[t],
                  s->nodes_delegated, total);
        ctosa_lower_result_free(r);
    }
    ctosa_lower_result *r = lower_t(path, "ethos-u85-256");
    if (r) {
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        CHECK_MSG(s->n_fallback == 0 && s->nodes_delegated == total, "%s under ethos-u85-256: %u fallback",
                  file, s->n_fallback);
        ctosa_lower_result_free(r);
    }
}

static void test_u55_reasons(void) {
    u55_case("gather.onnx", "gather", "no gather on Ethos-U55", 3);
    u55_case("maxpool_s4.onnx", "pool", "MAX_POOL2D with kernel 4x4 and stride 4x4", 3);
}

static npy_array *find_val(lt_values *v, const char *name) { return (npy_array *)lt_values_get(v, name); }

static void test_u55_chain(void) {
    char path[600], why[512];
    snprintf(path, sizeof path, "%s/chain.onnx", U55_DATA);
    ctosa_lower_result *ri = lower_t(path, "TOSA-1.0+INT");
    ctosa_lower_result *ru = lower_t(path, "ethos-u55-128");
    if (!ri || !ru) goto out;
    const ctosa_lower_summary *si = ctosa_lower_result_summary(ri), *su = ctosa_lower_result_summary(ru);
    CHECK_MSG(si->n_partitions == 1 && si->n_fallback == 0, "INT: %u partitions %u fallback",
              si->n_partitions, si->n_fallback);
    CHECK_MSG(su->n_partitions == 2 && su->n_fallback == 3 && su->nodes_delegated == 11,
              "u55: %u partitions, %u fallback, %u delegated", su->n_partitions, su->n_fallback,
              su->nodes_delegated);
    if (si->n_partitions != 1 || su->n_partitions != 2) goto out;
    /* input: random int8 */
    npy_array x = {.kind = 'i', .itemsize = 1, .rank = 4, .shape = {1, 2, 16, 16}, .count = 512};
    x.data = malloc(512);
    if (!x.data) goto out;
    uint32_t seed = 12345;
    for (int i = 0; i < 512; i++) {
        seed = seed * 1103515245u + 12345u;
        ((int8_t *)x.data)[i] = (int8_t)(seed >> 24);
    }
    npy_array x2 = x;
    x2.data = malloc(512);
    if (!x2.data) {
        free(x.data);
        goto out;
    }
    memcpy(x2.data, x.data, 512);
    lt_values vi = {0}, vu = {0};
    CHECK_OK(lt_values_put(&vi, "x", &x));
    CHECK_OK(lt_values_put(&vu, "x", &x2));
    CHECK_MSG(lt_run_partitions(si, &vi, 1, why, sizeof why) == LT_RUN_OK, "INT run: %s", why);
    /* u55: partition 0, then the CPU's DequantizeLinear -> MaxPool 4x4 s4 ->
     * QuantizeLinear (same scale and zero point: a max over int8 values),
     * then partition 1 */
    ctosa_lower_summary s0 = *su;
    s0.n_partitions = 1;
    CHECK_MSG(lt_run_partitions(&s0, &vu, 1, why, sizeof why) == LT_RUN_OK, "u55 part 0: %s", why);
    const ctosa_lower_partition *p0 = &su->partitions[0], *p1 = &su->partitions[1];
    const npy_array *mid = p0->n_outputs == 1 ? lt_values_get(&vu, p0->outputs[0].name) : NULL;
    CHECK_MSG(mid && mid->count == 4 * 16 * 16 && p1->n_inputs == 1, "partition 0 output");
    if (mid && mid->count == 4 * 16 * 16 && p1->n_inputs == 1) {
        npy_array pooled = {.kind = 'i', .itemsize = 1, .rank = 4, .shape = {1, 4, 4, 4}, .count = 64};
        pooled.data = malloc(64);
        if (pooled.data) {
            const int8_t *m = mid->data;
            for (int c = 0; c < 4; c++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++) {
                        int8_t best = -128;
                        for (int a = 0; a < 4; a++)
                            for (int b = 0; b < 4; b++) {
                                int8_t v = m[(c * 16 + i * 4 + a) * 16 + j * 4 + b];
                                if (v > best) best = v;
                            }
                        ((int8_t *)pooled.data)[(c * 4 + i) * 4 + j] = best;
                    }
            CHECK_OK(lt_values_put(&vu, p1->inputs[0].name, &pooled));
            ctosa_lower_summary s1 = *su;
            s1.partitions = p1;
            s1.n_partitions = 1;
            CHECK_MSG(lt_run_partitions(&s1, &vu, 1, why, sizeof why) == LT_RUN_OK, "u55 part 1: %s", why);
            const npy_array *a = find_val(&vi, si->partitions[0].outputs[0].name);
            const npy_array *b = p1->n_outputs ? find_val(&vu, p1->outputs[0].name) : NULL;
            bool same = a && b && lt_compare(b, a, 0, 0, NULL, why, sizeof why);
            CHECK_MSG(same, "u55 split vs INT: %s", a && b ? why : "missing output");
            printf("  chain.onnx: u55 delegates %u/%u nodes in 2 partitions (MaxPool s4 on the CPU); output "
                   "%s\n",
                   su->nodes_delegated, su->nodes_total, same ? "identical to TOSA-1.0+INT" : "DIFFERS");
        }
    }
    lt_values_free(&vi);
    lt_values_free(&vu);
out:
    ctosa_lower_result_free(ri);
    ctosa_lower_result_free(ru);
}

int main(void) {
    RUN(test_mobilenet_targets);
    RUN(test_u55_reasons);
    RUN(test_u55_chain);
    return th_finish();
}
