/* test_alloc_fail.c - the allocation-failure sweep: a lowering (ONNX model
 * -> partitions written to a folder) followed by an interpreter run of every
 * partition, repeated with the Nth allocation failing, for N over the
 * allocations of a clean run. Every run must end either in success or in a
 * clean error (a code and a message), with no crash (the sanitizer build
 * turns a bad access into a failure), no leak (every block allocated during
 * the run is freed afterwards: checked here in every build, and by LSan in
 * the sanitizer build), and no output file left behind by a failed lowering.
 * A success may differ from the clean run: a node whose lowering ran out of
 * memory falls back to the CPU with reason `internal` (counted, reported,
 * not a failure).
 *
 * Allocations counted: every arena_alloc (through util_alloc_fault) and
 * every malloc, calloc, realloc, aligned_alloc and strdup the library calls
 * (the link wraps them: tests/CMakeLists.txt). A "site" is a distinct
 * calling address. By default N takes, for every site the clean run
 * reaches, the first allocation made there, plus a spread of 300 others
 * (100 under the sanitizers); with CTOSA_LONG_TESTS=1 every N, and the
 * quantized model too. CTOSA_ALLOC_FAIL_ONLY=N runs that N alone.
 *
 * cli_lowered_run: lowered graphs not run: through lt_validate_all - the
 * sweep runs every partition itself (zero inputs, one interpreter each)
 * under the injected failures; validating and round-tripping the same
 * model's partitions is test_lower_models' job. */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctosa/interp.h"
#include "ctosa/lower.h"
#include "harness.h"
#include "util/alloc_fault.h"
#include "util/util.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);

/* ------------------------------------------------------- fault injection */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool armed;       /* count (and track) allocations */
static uint64_t count;   /* allocations since arming */
static uint64_t fail_at; /* 1-based allocation to fail; 0 = none */
static uint64_t failed;  /* how many were failed */

/* Live blocks allocated while armed (open addressing, pointer keys). */
#define LIVE_CAP (1u << 20)
static void *live[LIVE_CAP];
static const void *live_pc[LIVE_CAP]; /* where each was allocated */
static uint64_t n_live;
#define TOMB ((void *)1)

static size_t live_slot(void *p) {
    uintptr_t h = (uintptr_t)p;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40) & (LIVE_CAP - 1);
}
static void live_add(void *p, const void *pc) {
    size_t i = live_slot(p);
    while (live[i] && live[i] != TOMB) i = (i + 1) & (LIVE_CAP - 1);
    live[i] = p;
    live_pc[i] = pc;
    n_live++;
}
static void live_del(void *p) {
    size_t i = live_slot(p);
    while (live[i]) {
        if (live[i] == p) {
            live[i] = TOMB;
            n_live--;
            return;
        }
        i = (i + 1) & (LIVE_CAP - 1);
    }
}
static void live_clear(void) {
    memset(live, 0, sizeof live);
    n_live = 0;
}

/* Distinct sites (calling addresses) and the first allocation at each. */
#define SITE_CAP 8192
static const void *site_pc[SITE_CAP];
static uint64_t site_first[SITE_CAP];
static uint32_t n_sites;
static bool record_sites;

static void site_note(const void *pc) {
    uint32_t i = (uint32_t)(((uintptr_t)pc * 0x9E3779B1u) >> 7) & (SITE_CAP - 1);
    for (uint32_t k = 0; k < SITE_CAP; k++, i = (i + 1) & (SITE_CAP - 1)) {
        if (site_pc[i] == pc) return;
        if (!site_pc[i]) {
            site_pc[i] = pc;
            site_first[i] = count;
            n_sites++;
            return;
        }
    }
}

/* One allocation event at pc: true when it must fail. Called with mu held. */
static bool event(const void *pc) {
    if (!armed) return false;
    count++;
    if (record_sites) site_note(pc);
    if (fail_at && count == fail_at) {
        failed++;
        return true;
    }
    return false;
}

static bool arena_hook(const void *site) {
    pthread_mutex_lock(&mu);
    bool f = event(site);
    pthread_mutex_unlock(&mu);
    return f;
}

#define WRAP_ALLOC(call)                                        \
    pthread_mutex_lock(&mu);                                    \
    bool fail_ = event(__builtin_return_address(0));            \
    void *r_ = fail_ ? NULL : (call);                           \
    if (r_ && armed) live_add(r_, __builtin_return_address(0)); \
    pthread_mutex_unlock(&mu);                                  \
    return r_

void *__wrap_malloc(size_t n) { WRAP_ALLOC(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t m) { WRAP_ALLOC(__real_calloc(n, m)); }
void *__wrap_aligned_alloc(size_t a, size_t n) { WRAP_ALLOC(__real_aligned_alloc(a, n)); }
char *__wrap_strdup(const char *s) { WRAP_ALLOC(__real_strdup(s)); }
void *__wrap_realloc(void *p, size_t n) {
    pthread_mutex_lock(&mu);
    bool f = event(__builtin_return_address(0));
    void *r = f ? NULL : __real_realloc(p, n);
    if (r) {
        if (p) live_del(p);
        if (armed) live_add(r, __builtin_return_address(0));
    }
    pthread_mutex_unlock(&mu);
    return r;
}
void __wrap_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&mu);
    live_del(p);
    pthread_mutex_unlock(&mu);
    __real_free(p);
}

static void arm(uint64_t n, bool sites) {
    pthread_mutex_lock(&mu);
    live_clear();
    count = 0;
    failed = 0;
    fail_at = n;
    record_sites = sites;
    armed = true;
    pthread_mutex_unlock(&mu);
}
static void disarm(void) {
    pthread_mutex_lock(&mu);
    armed = false;
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------- scenario */
static char out_dir[1024];

static uint32_t files_in(const char *dir, bool remove) {
    DIR *d = opendir(dir);
    uint32_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        n++;
        if (remove) {
            char p[1400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    if (d) closedir(d);
    return n;
}

/* What a successful run produced, to tell a degraded success. */
typedef struct sig {
    bool lowered; /* ctosa_lower_file succeeded (its files are complete) */
    uint32_t parts, delegated, fallback;
    uint64_t out_sum; /* a checksum of every interpreter output */
} sig;

/* Runs every partition graph with zero inputs. */
static ctosa_error *run_parts(const ctosa_lower_summary *s, sig *g) {
    ctosa_error *e = NULL;
    for (uint32_t p = 0; p < s->n_partitions && !e; p++) {
        ctosa_interp_options io;
        ctosa_interp_options_init(&io);
        io.threads = 1;
        ctosa_interp *it = NULL;
        e = ctosa_interp_create(s->partitions[p].graph, &io, &it);
        for (uint32_t i = 0; !e && i < ctosa_interp_input_count(it); i++) {
            ctosa_interp_tensor t;
            if ((e = ctosa_interp_input_info(it, i, &t))) break;
            void *z = __real_calloc(1, (size_t)t.size + 1);
            e = ctosa_interp_set_input(it, t.name, t.dtype, t.rank, t.shape, z, t.size);
            __real_free(z);
        }
        if (!e) e = ctosa_interp_run(it);
        for (uint32_t i = 0; !e && i < ctosa_interp_output_count(it); i++) {
            ctosa_interp_tensor t;
            if ((e = ctosa_interp_output_info(it, i, &t))) break;
            if ((e = ctosa_interp_get_output(it, t.name, &t))) break;
            const uint8_t *b = t.data;
            for (uint64_t k = 0; k < t.size; k++) g->out_sum = g->out_sum * 31 + b[k];
        }
        ctosa_interp_free(it);
    }
    return e;
}

static ctosa_error *scenario_body(const char *model, const ctosa_spec *spec, sig *g) {
    memset(g, 0, sizeof *g);
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = out_dir;
    opt.stem = "m";
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(model, spec, &opt, &r);
    if (!e) {
        g->lowered = true;
        const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
        g->parts = s->n_partitions;
        g->delegated = s->nodes_delegated;
        g->fallback = s->n_fallback;
        e = run_parts(s, g);
    }
    ctosa_lower_result_free(r);
    return e;
}

/* Each run in a thread of its own: per-thread scratch the kernels keep
 * between calls is freed when the thread ends, so it is not taken for a
 * leak, and every run starts from the same state. */
typedef struct job {
    const char *model;
    const ctosa_spec *spec;
    sig *g;
    ctosa_error *e;
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->e = scenario_body(j->model, j->spec, j->g);
    return NULL;
}

static ctosa_error *scenario(const char *model, const ctosa_spec *spec, sig *g) {
    job j = {model, spec, g, NULL};
    pthread_t th;
    if (pthread_create(&th, NULL, job_main, &j) != 0) return ctosa_error_new(CTOSA_ERR_INTERNAL, "no thread");
    pthread_join(th, NULL);
    return j.e;
}

typedef struct tally {
    uint32_t runs, ok, degraded, errors, leaks, partial, bad_errors;
} tally;

/* One run with allocation n failing (0: none). */
static void one(const char *model, const ctosa_spec *spec, uint64_t n, const sig *want, tally *t) {
    files_in(out_dir, true);
    sig got;
    arm(n, false);
    ctosa_error *e = scenario(model, spec, &got);
    disarm();
    t->runs++;
    if (e) {
        t->errors++;
        const char *msg = ctosa_error_message(e);
        if (ctosa_error_code(e) == CTOSA_OK || !msg || !msg[0]) {
            t->bad_errors++;
            fprintf(stderr, "  allocation %llu failing: error without code or message\n",
                    (unsigned long long)n);
        }
        uint32_t left = got.lowered ? 0 : files_in(out_dir, false);
        if (left) {
            t->partial++;
            if (t->partial <= 10)
                fprintf(stderr, "  allocation %llu failing: %u files left after the error (%s)\n",
                        (unsigned long long)n, left, msg);
        }
        ctosa_error_free(e);
    } else if (want && (got.parts != want->parts || got.delegated != want->delegated ||
                        got.fallback != want->fallback || got.out_sum != want->out_sum)) {
        t->degraded++;
        if (t->degraded <= 10)
            fprintf(stderr,
                    "  allocation %llu failing: success with a different result "
                    "(partitions %u/%u, delegated %u/%u, outputs %s)\n",
                    (unsigned long long)n, got.parts, want->parts, got.delegated, want->delegated,
                    got.out_sum == want->out_sum ? "same" : "differ");
    } else {
        t->ok++;
    }
    /* after the error is freed: what is still live was lost */
    uint64_t leaked = n_live;
    if (leaked) {
        t->leaks++;
        if (t->leaks <= 10) {
            fprintf(stderr, "  allocation %llu failing: %llu blocks not freed, allocated at",
                    (unsigned long long)n, (unsigned long long)leaked);
            for (size_t i = 0; i < LIVE_CAP; i++)
                if (live[i] && live[i] != TOMB) fprintf(stderr, " %p", live_pc[i]);
            fputc('\n', stderr);
        }
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void sweep(const char *name, const char *spec_text) {
    char model[1024];
    snprintf(model, sizeof model, "%s/tests/models/%s/model.onnx", CTOSA_SOURCE_DIR, name);
    snprintf(out_dir, sizeof out_dir, "%s/alloc_fail", th_tmpdir());
    mkdir(out_dir, 0755);
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(spec_text, &spec));
    /* Warm-up (lazily built tables, per-thread scratch), then the clean run
     * that counts allocations and records the sites. */
    sig want;
    util_alloc_fault = arena_hook;
    CHECK_OK(scenario(model, &spec, &want));
    arm(0, true);
    CHECK_OK(scenario(model, &spec, &want));
    disarm();
    uint64_t total = count;
    CHECK_MSG(n_live == 0, "%llu blocks not freed by a clean run", (unsigned long long)n_live);
    CHECK(want.parts > 0 && total > 100);
    const char *lt = getenv("CTOSA_LONG_TESTS");
    bool all = lt && *lt && strcmp(lt, "0") != 0;
    /* The N to fail: the first allocation of every site, plus every
     * allocation (long run) or an even spread of about 500. */
    uint64_t spread = getenv("CTOSA_SANITIZED") ? 100 : 300;
    uint64_t cap = n_sites + (all ? total : spread) + 1, m = 0;
    uint64_t *ns = __real_malloc(cap * sizeof *ns);
    for (uint32_t i = 0; i < SITE_CAP; i++)
        if (site_pc[i]) ns[m++] = site_first[i];
    uint64_t step = all ? 1 : (total + spread - 1) / spread;
    for (uint64_t n = 1; n <= total && m < cap; n += step) ns[m++] = n;
    /* CTOSA_ALLOC_FAIL_ONLY=N: that run alone (to debug one finding). */
    const char *only = getenv("CTOSA_ALLOC_FAIL_ONLY");
    if (only && *only) {
        ns[0] = strtoull(only, NULL, 10);
        m = 1;
    }
    qsort(ns, (size_t)m, sizeof *ns, cmp_u64);
    tally t;
    memset(&t, 0, sizeof t);
    uint64_t prev = 0;
    for (uint64_t i = 0; i < m; i++) {
        if (ns[i] == prev) continue;
        prev = ns[i];
        one(model, &spec, ns[i], &want, &t);
    }
    util_alloc_fault = NULL;
    __real_free(ns);
    files_in(out_dir, true);
    printf("  %s: %llu allocations in a clean run at %u sites; %u runs with one failing: %u clean errors, "
           "%u successes (%u with a different result), %u leaks, %u partial outputs, %u errors without "
           "message\n",
           name, (unsigned long long)total, n_sites, t.runs, t.errors, t.ok + t.degraded, t.degraded, t.leaks,
           t.partial, t.bad_errors);
    CHECK(t.leaks == 0);
    CHECK(t.partial == 0);
    CHECK(t.bad_errors == 0);
    memset(site_pc, 0, sizeof site_pc);
    n_sites = 0;
}

static void test_sweep_float(void) { sweep("mobilenet_v2_x0_25_op13", "TOSA-1.0+FP"); }

/* 4x the allocations of the float model: with CTOSA_LONG_TESTS only. */
static void test_sweep_quant(void) {
    const char *lt = getenv("CTOSA_LONG_TESTS");
    if (!(lt && *lt && strcmp(lt, "0") != 0)) {
        printf("  quantized model: set CTOSA_LONG_TESTS=1 to sweep it\n");
        return;
    }
    sweep("mobilenet_v2_x0_25_qnnpack", "TOSA-1.0+INT");
}

int main(void) {
    RUN(test_sweep_float);
    RUN(test_sweep_quant);
    return th_finish();
}
