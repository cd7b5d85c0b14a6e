/* test_memcap.c - ctosa_lower_options.max_memory through the API: a cap
 * below what lowering a real model needs fails with CTOSA_ERR_LIMIT naming
 * the limit and the flag, writes nothing and leaks nothing (ASan); 0 means
 * the 8 GiB default and lowers the model; a cap just above the measured need
 * gives the same partitions as the default. (lowered graphs not run: the
 * same model is lowered, checked and run by test_lower_models.) */
#include <string.h>
#include <sys/stat.h>

#include "ctosa/ctosa.h"
#include "harness.h"
#include "util/util.h"

#define MODEL CTOSA_SOURCE_DIR "/tests/models/mobilenet_v2_x0_25_op13/model.onnx"

static ctosa_error *lower_with(uint64_t cap, const char *dir, ctosa_lower_result **r) {
    ctosa_spec spec;
    ctosa_error *e = ctosa_spec_parse("TOSA-1.0+FP", &spec);
    if (e) return e;
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = dir;
    opt.max_memory = cap;
    return ctosa_lower_file(MODEL, &spec, &opt, r);
}

static void test_caps(void) {
    CHECK(CTOSA_LOWER_DEFAULT_MAX_MEMORY == (uint64_t)8 << 30);
    static const uint64_t small[] = {1, 64u << 10, 700u << 10, 1200u << 10, 2u << 20};
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        const char *dir = th_path(th_tmpdir(), "small");
        ctosa_lower_result *r = NULL;
        CHECK_ERR(lower_with(small[i], dir, &r), CTOSA_ERR_LIMIT, "(raise it with --max-memory)");
        CHECK(r == NULL);
        struct stat st;
        CHECK_MSG(stat(dir, &st) != 0, "cap %llu created %s", (unsigned long long)small[i], dir);
    }
    ctosa_lower_result *r = NULL;
    CHECK_ERR(lower_with(65536, NULL, &r), CTOSA_ERR_LIMIT, "memory limit of 65536 bytes");

    ctosa_lower_result *def = NULL, *big = NULL;
    CHECK_OK(lower_with(0, NULL, &def));
    CHECK_OK(lower_with(8u << 20, NULL, &big));
    if (def && big) {
        const ctosa_lower_summary *a = ctosa_lower_result_summary(def), *b = ctosa_lower_result_summary(big);
        CHECK(a->nodes_delegated > 0);
        CHECK(a->nodes_delegated == b->nodes_delegated && a->n_partitions == b->n_partitions);
        CHECK(strcmp(a->report_json, b->report_json) == 0);
    }
    ctosa_lower_result_free(def);
    ctosa_lower_result_free(big);
}

/* An arena with a limit refuses a request past it before asking malloc for
 * anything (no chunk appears), and says how much was refused: the lowering
 * turns that into the --max-memory error instead of using the memory. */
static void test_arena_limit(void) {
    arena a;
    arena_init(&a, 0);
    a.limit = 1000;
    CHECK(arena_alloc(&a, 2000) == NULL);
    CHECK(a.refused == 2000 && a.total == 0 && a.head == NULL);
    CHECK(arena_alloc(&a, 500) != NULL);
    CHECK(a.total == 512);
    CHECK(arena_alloc(&a, 600) == NULL && a.refused == 608 && a.total == 512);
    CHECK(arena_alloc(&a, 480) != NULL && a.total == 992);
    arena_free(&a);
    arena_init(&a, 0);
    CHECK(a.limit == 0 && a.refused == 0);
    CHECK(arena_alloc(&a, 1u << 20) != NULL);
    arena_free(&a);
}

/* A Resize whose interpolation matrix needs about 268 MB while it is built
 * fails a 100 MB cap at that node. */
static void test_node_over_cap(void) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.max_memory = 100u << 20;
    ctosa_lower_result *r = NULL;
    CHECK_ERR(ctosa_lower_file(CTOSA_SOURCE_DIR "/tests/data/lower/limits/resize_matrix_large.onnx", &spec,
                               &opt, &r),
              CTOSA_ERR_LIMIT, "at node #0 'Resize#0'), which passes the memory limit of 104857600 bytes");
    CHECK(r == NULL);
}

int main(void) {
    RUN(test_arena_limit);
    RUN(test_node_over_cap);
    struct stat st;
    if (stat(MODEL, &st) == 0) RUN(test_caps);
    else printf("skipped test_caps: %s missing\n", MODEL);
    return th_finish();
}
