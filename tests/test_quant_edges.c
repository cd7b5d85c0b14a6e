/* test_quant_edges.c - hand-built QDQ edge cases against an exact
 * reference. Models and references: tests/data/lower/quant_edges/
 * (make_edges.py; scales chosen so that the requantisation ratio is an exact
 * float32 number and the reference is computed with exact rationals).
 *
 * Every model is DequantizeLinear -> Conv / Gemm -> QuantizeLinear with
 * integer I/O. Under TOSA-1.0+INT it must be one fully delegated partition
 * whose output equals the ONNX reference (round half to even, ref_onnx.npy)
 * bit for bit: exact ties go to the even neighbour (qdq_rescale_acc). It
 * must differ from ref_tosa.npy (ties rounded half up, what one RESCALE's
 * SINGLE_ROUND gives) in exactly the number of elements meta.txt gives
 * ("differ": the ties whose lower neighbour is even), and nowhere when
 * there are no ties. Covered: zero points at the
 * uint8 / int8 limits on input, weight and output side, saturation, ties of
 * both signs (int8 and uint8), the largest ratio RESCALE takes (just below
 * 2^29, shift 2), ratios > 1, small ratios with shift 50 and 62 (largest),
 * a ratio below 2^-62 (multiplier shifted down), per-channel weights
 * with a 1e-20 channel and a bias at the int32 limit, and ratios that
 * allow ties the weights rule out (odd accumulators, accumulators short of
 * the first tie): meta.txt "tie_tests N" is the number of EQUAL tie tests
 * the lowering must emit (none where no accumulator can tie). A ratio of 2^29
 * (shift 1) cannot be expressed: the model must fall back with
 * unsupported_attribute naming the ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower_testutil.h"

#define EDGE_DIR CTOSA_SOURCE_DIR "/tests/data/lower/quant_edges"

static const char *const models[] = {"conv_u8_zp0_to_255",
                                     "conv_u8_zp255_to_0",
                                     "conv_s8_zpm128_to_127",
                                     "conv_s8_zp127_to_m128",
                                     "conv_wzp_m128",
                                     "conv_wzp_127",
                                     "gemm_ties",
                                     "gemm_ties_u8",
                                     "gemm_ratio_max",
                                     "gemm_ratio_3",
                                     "gemm_ratio_2m20",
                                     "gemm_ratio_2m32",
                                     "gemm_ratio_2m34",
                                     "conv_perchannel_tiny",
                                     "conv_ties_odd_acc",
                                     "conv_ties_out_of_reach",
                                     "gemm_ties_one_channel",
                                     "gemm_ratio_too_large"};

typedef struct meta {
    long ties, differ;
    long tie_tests; /* EQUAL operators the lowering must emit; -1: not checked */
    char fallback[64];
} meta;

static bool read_meta(const char *dir, meta *m) {
    char path[700], key[32], val[64];
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    memset(m, 0, sizeof *m);
    m->tie_tests = -1;
    FILE *f = fopen(path, "r");
    if (!f) return false;
    while (fscanf(f, "%31s %63s", key, val) == 2) {
        if (!strcmp(key, "ties")) m->ties = strtol(val, NULL, 10);
        else if (!strcmp(key, "differ")) m->differ = strtol(val, NULL, 10);
        else if (!strcmp(key, "fallback")) snprintf(m->fallback, sizeof m->fallback, "%s", val);
        else if (!strcmp(key, "tie_tests")) m->tie_tests = strtol(val, NULL, 10);
    }
    fclose(f);
    return true;
}

static uint64_t count_diff(const npy_array *a, const npy_array *b) {
    if (a->count != b->count || a->itemsize != 1 || b->itemsize != 1) return UINT64_MAX;
    uint64_t n = 0;
    for (uint64_t i = 0; i < a->count; i++)
        n += ((const uint8_t *)a->data)[i] != ((const uint8_t *)b->data)[i];
    return n;
}

static void edge(const char *name) {
    char dir[600], path[700], why[512];
    snprintf(dir, sizeof dir, "%s/%s", EDGE_DIR, name);
    meta mt;
    CHECK_MSG(read_meta(dir, &mt), "%s: no meta.txt", name);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT", &spec));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.no_report = true;
    opt.no_partitioned_onnx = true;
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(path, &spec, &opt, &r);
    CHECK_MSG(!e, "%s: %s", name, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (!r) return;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    CHECK_MSG(lt_validate_all(s, &spec, why, sizeof why), "%s: %s", name, why);
    if (mt.fallback[0]) {
        /* the head falls back with the expected code and a reason naming the
         * ratio; its group's Q / DQ go with it */
        bool found = false;
        for (uint32_t i = 0; i < s->n_fallback; i++)
            if (!strcmp(s->fallback[i].op_type, "Gemm") || !strcmp(s->fallback[i].op_type, "Conv")) {
                found = true;
                CHECK_MSG(!strcmp(s->fallback[i].code, mt.fallback), "%s: code %s, want %s", name,
                          s->fallback[i].code, mt.fallback);
                CHECK_MSG(strstr(s->fallback[i].reason, "scale ratio") != NULL, "%s: reason '%s'", name,
                          s->fallback[i].reason);
                printf("  %-24s falls back: %s: %s\n", name, s->fallback[i].code, s->fallback[i].reason);
            }
        CHECK_MSG(found && s->nodes_delegated == 0, "%s: head %s, %u delegated", name,
                  found ? "on the CPU" : "not on the CPU", s->nodes_delegated);
        ctosa_lower_result_free(r);
        return;
    }
    CHECK_MSG(s->n_partitions == 1 && s->n_fallback == 0, "%s: %u partitions, %u fallback", name,
              s->n_partitions, s->n_fallback);
    if (mt.tie_tests >= 0) {
        /* a tie test is emitted only where the accumulators can tie */
        long eq = 0;
        for (uint32_t p = 0; p < s->n_partitions; p++)
            for (uint32_t i = 0; i < s->partitions[p].n_op_counts; i++)
                if (!strcmp(s->partitions[p].op_names[i], "EQUAL")) eq += (long)s->partitions[p].op_counts[i];
        CHECK_MSG(eq == mt.tie_tests, "%s: %ld tie tests (EQUAL), want %ld", name, eq, mt.tie_tests);
    }
    if (s->n_partitions == 1 && s->partitions[0].n_inputs == 1 && s->partitions[0].n_outputs == 1) {
        lt_values vals = {0};
        npy_array x, want_tosa, want_onnx;
        snprintf(path, sizeof path, "%s/input_0.npy", dir);
        CHECK_OK(lt_load_array(path, &x));
        CHECK_OK(lt_values_put(&vals, s->partitions[0].inputs[0].name, &x));
        lt_run_status rs = lt_run_partitions(s, &vals, 1, why, sizeof why);
        CHECK_MSG(rs == LT_RUN_OK, "%s: %s", name, why);
        snprintf(path, sizeof path, "%s/ref_tosa.npy", dir);
        CHECK_OK(lt_load_array(path, &want_tosa));
        snprintf(path, sizeof path, "%s/ref_onnx.npy", dir);
        CHECK_OK(lt_load_array(path, &want_onnx));
        const npy_array *got = lt_values_get(&vals, s->partitions[0].outputs[0].name);
        bool exact = got && lt_compare(got, &want_onnx, 0, 0, NULL, why, sizeof why);
        CHECK_MSG(exact, "%s: vs exact reference: %s", name, got ? why : "no output");
        uint64_t d = got ? count_diff(got, &want_tosa) : UINT64_MAX;
        CHECK_MSG(d == (uint64_t)mt.differ, "%s: %llu elements differ from RESCALE's half-up, want %ld", name,
                  (unsigned long long)d, mt.differ);
        printf("  %-24s delegated, %s (%llu elements; %ld ties, %llu of them sent to the even neighbour "
               "where one RESCALE rounds up)\n",
               name, exact ? "bit-exact" : "DIFFERS", got ? (unsigned long long)got->count : 0ULL, mt.ties,
               (unsigned long long)d);
        npy_free(&want_tosa);
        npy_free(&want_onnx);
        lt_values_free(&vals);
    }
    ctosa_lower_result_free(r);
}

static void test_edges(void) {
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) edge(models[i]);
}

int main(void) {
    RUN(test_edges);
    return th_finish();
}
