/* cmd_run.c - `ctosa run MODEL.partitioned.onnx --input NAME=FILE...` runs a
 * partitioned model end to end (ctosa/runtime.h); `ctosa run MODEL.tosa [--input NAME=FILE]... [--output NAME=FILE]...
 * [--outputs NAME[,NAME...]] [-o DIR] [--threads N] [--max-memory BYTES] [--runs N]
 * [--profile] [-q]` (also
 * [--plugin LIB.so]...): runs a graph on the reference interpreter. Inputs
 * are .npy or ONNX TensorProto .pb files matched by name; outputs are
 * written as .npy (atomically). --outputs (or an --output naming a tensor
 * that is not a graph output) runs a slice: only the operators the named
 * tensors depend on run, only their constants are paged in, and only the
 * inputs they read must be given. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctosa/custom.h"
#include "ctosa/interp.h"
#include "ctosa/runtime.h"
#include "ctosa/tensor_file.h"
#include "util/util.h"

static const char *CMD = "run";

static void help(void) {
    printf("usage: ctosa run MODEL.tosa [--input NAME=FILE]... [--output NAME=FILE]...\n"
           "                 [--outputs NAME[,NAME...]] [-o DIR] [--runs N] [--profile] [--reference]\n"
           "       ctosa run MODEL.partitioned.onnx [--input NAME=FILE]... [--output NAME=FILE]...\n"
           "                 [-o DIR] [--plugin LIB.so]... [--runs N] [--reference]\n"
           "\n"
           "Runs a TOSA graph on the reference interpreter, or a whole partitioned model\n"
           "written by `ctosa lower` (its .tosa partitions on the interpreter, its CPU\n"
           "nodes on the host executor; <stem>.report.json must be beside it).\n"
           "A single partition accepts a uint8 array for an input its report marks uint8.\n"
           "\n"
           "  --input NAME=FILE    value of graph input NAME: a .npy file or an ONNX\n"
           "                       TensorProto .pb file (every input the run reads\n"
           "                       must be given)\n"
           "  --output NAME=FILE   write tensor NAME to FILE (.npy); NAME is a graph\n"
           "                       output or any other tensor of the main block, which\n"
           "                       is then computed as well\n"
           "  --outputs LIST       compute and write only these tensors (comma-separated\n"
           "                       names, repeatable; graph outputs or intermediates):\n"
           "                       only the operators they depend on run, and inputs\n"
           "                       they do not need may be left out\n"
           "  -o, --output-dir DIR write other outputs to DIR/<name>.npy (default: .),\n"
           "                       characters outside [A-Za-z0-9._-] replaced by _\n"
           "  --threads N          worker threads (default: number of CPUs)\n"
           "  --max-memory SIZE    limit on tensor memory, bytes or with a K, M or G\n"
           "                       suffix (default: physical memory, at most 16G)\n"
           "  --max-iterations N   stop a WHILE_LOOP after N iterations (default 10000000;\n"
           "                       0 = unlimited)\n"
           "  --plugin LIB.so      load a custom-operator plugin whose kernels run the\n"
           "                       graph's CUSTOM operators (repeatable)\n"
           "  --runs N             time the graph: one warm-up run, then N timed runs on\n"
           "                       the same inputs; prints best, median and mean (packed\n"
           "                       weights are kept between runs, as an application\n"
           "                       would); the outputs written are the last run's\n"
           "  --profile            print the time per operator kind and per operator,\n"
           "                       slowest first (a partitioned model: per kind of step\n"
           "                       and per step; with --runs, per timed run); printed\n"
           "                       even with -q\n"
           "  --reference          run the plain loops that follow the specification's\n"
           "                       pseudocode instead of the fast kernels (much slower;\n"
           "                       integer results are identical, float ones may differ\n"
           "                       in the last bits): to check the fast kernels\n"
           "  -q, --quiet          print nothing else on success\n"
           "\n"
           ".npy encodings per TOSA dtype: see docs/interpreter.md (bf16 as <u2 bits,\n"
           "fp8 as |u1 bits, int4 as |i1, int48 as <i8).\n");
}

/* --runs: one warm-up, then runs timed calls of run(arg); the first call's
 * time is the warm-up's. t gets the timed runs' seconds, sorted. */
typedef struct run_timing {
    int runs;     /* timed runs (0: a single untimed-for-statistics run) */
    double first; /* seconds of the first (warm-up) run */
    double *t;    /* runs entries, sorted */
    double *cpu;  /* process CPU seconds of each timed run, sorted */
} run_timing;

static double cpu_seconds(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median_of(const double *v, int n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static ctosa_error *timed_runs(ctosa_error *(*run)(void *), void *arg, void (*after_warmup)(void *),
                               run_timing *rt) {
    double t0 = now_seconds();
    ctosa_error *e = run(arg);
    rt->first = now_seconds() - t0;
    if (e || rt->runs <= 0) return e;
    if (!(rt->t = calloc((size_t)rt->runs, sizeof *rt->t)) ||
        !(rt->cpu = calloc((size_t)rt->runs, sizeof *rt->cpu)))
        return ctosa_error_nomem();
    if (after_warmup) after_warmup(arg);
    for (int i = 0; i < rt->runs; i++) {
        double c0 = cpu_seconds();
        t0 = now_seconds();
        if ((e = run(arg))) return e;
        rt->t[i] = now_seconds() - t0;
        rt->cpu[i] = cpu_seconds() - c0;
    }
    qsort(rt->t, (size_t)rt->runs, sizeof *rt->t, cmp_double);
    qsort(rt->cpu, (size_t)rt->runs, sizeof *rt->cpu, cmp_double);
    return NULL;
}

static void print_timing(const char *model, const run_timing *rt) {
    if (rt->runs <= 0) {
        printf("ran %s in %.3f s", model, rt->first);
        return;
    }
    int n = rt->runs;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += rt->t[i];
    /* process CPU time: on a shared machine a single-threaded run's CPU
     * time is far steadier than its wall time (it includes every worker
     * thread's, so it exceeds wall time with --threads > 1) */
    printf(
        "ran %s: warm-up %.3f ms, %d run%s: best %.3f ms, median %.3f ms, mean %.3f ms, CPU median %.3f ms",
        model, 1e3 * rt->first, n, n == 1 ? "" : "s", 1e3 * rt->t[0], 1e3 * median_of(rt->t, n),
        1e3 * sum / n, 1e3 * median_of(rt->cpu, n));
}

static ctosa_error *interp_run_cb(void *it) { return ctosa_interp_run(it); }
static void interp_reset_cb(void *it) { ctosa_interp_profile_reset(it); }

typedef struct kind_time {
    ctosa_op_kind kind;
    uint32_t ops;
    double s;
} kind_time;

static int cmp_kind(const void *a, const void *b) {
    double x = ((const kind_time *)a)->s, y = ((const kind_time *)b)->s;
    return x > y ? -1 : x < y;
}

static int cmp_prof(const void *a, const void *b) {
    const ctosa_interp_op_profile *x = a, *y = b;
    if (x->seconds != y->seconds) return x->seconds > y->seconds ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The --profile tables: time per operator kind, then per operator (the
 * slowest PROFILE_TOP, and a line for the rest), per run. */
#define PROFILE_TOP 30
static ctosa_error *print_profile(const ctosa_interp *it) {
    uint32_t n = ctosa_interp_profile_count(it);
    ctosa_interp_op_profile *ops = calloc((size_t)n + 1, sizeof *ops);
    kind_time *kinds = calloc((size_t)CTOSA_OP_COUNT + 1, sizeof *kinds);
    if (!ops || !kinds) {
        free(ops);
        free(kinds);
        return ctosa_error_nomem();
    }
    uint32_t m = 0, nk = 0;
    uint64_t runs = 0;
    double total = 0;
    for (uint32_t i = 0; i < n; i++) {
        ctosa_interp_op_profile p;
        ctosa_error_free(ctosa_interp_profile_get(it, i, &p));
        if (!p.runs) continue;
        if (p.runs > runs) runs = p.runs;
        ops[m++] = p;
    }
    /* Per run: an operator inside a slice runs once per graph run. */
    for (uint32_t i = 0; i < m; i++) {
        ops[i].seconds /= (double)runs;
        total += ops[i].seconds;
        uint32_t k = 0;
        while (k < nk && kinds[k].kind != ops[i].kind) k++;
        if (k == nk) kinds[nk++] = (kind_time){ops[i].kind, 0, 0};
        kinds[k].ops++;
        kinds[k].s += ops[i].seconds;
    }
    qsort(kinds, nk, sizeof *kinds, cmp_kind);
    qsort(ops, m, sizeof *ops, cmp_prof);
    double pct = total > 0 ? 100.0 / total : 0;
    printf("profile: %u operators ran, %.3f ms per run in operators (%llu run%s profiled)\n", m, 1e3 * total,
           (unsigned long long)runs, runs == 1 ? "" : "s");
    printf("\n  %-24s %6s %11s %7s\n", "operator kind", "count", "ms/run", "%");
    for (uint32_t k = 0; k < nk; k++) {
        const char *name = ctosa_op_name(kinds[k].kind);
        printf("  %-24s %6u %11.3f %6.1f%%\n", name ? name : "UNKNOWN", kinds[k].ops, 1e3 * kinds[k].s,
               pct * kinds[k].s);
    }
    printf("\n  %11s %7s %8s  operator (slowest first)\n", "ms/run", "%", "cum %");
    double cum = 0;
    uint32_t shown = m < PROFILE_TOP ? m : PROFILE_TOP;
    for (uint32_t i = 0; i < shown; i++) {
        cum += ops[i].seconds;
        printf("  %11.3f %6.1f%% %7.1f%%  %s\n", 1e3 * ops[i].seconds, pct * ops[i].seconds, pct * cum,
               ops[i].where);
    }
    if (m > shown)
        printf("  %11.3f %6.1f%% %7.1f%%  (%u more operators)\n", 1e3 * (total - cum), pct * (total - cum),
               100.0, m - shown);
    free(ops);
    free(kinds);
    return NULL;
}

/* True when path exists and is the same file as one of the command's
 * inputs (the model or an --input file): outputs never overwrite inputs. */
static bool is_an_input(const char *path, const char *model, const cli_binding *ins, int n_ins) {
    struct stat o, st;
    if (stat(path, &o) != 0) return false;
    if (stat(model, &st) == 0 && st.st_dev == o.st_dev && st.st_ino == o.st_ino) return true;
    for (int k = 0; k < n_ins; k++)
        if (stat(ins[k].file, &st) == 0 && st.st_dev == o.st_dev && st.st_ino == o.st_ino) return true;
    return false;
}

static const char *shape_str(uint32_t rank, const int64_t *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* True when the report beside the partition marks tensor name uint8 (it is
 * carried as INT8 holding the same bits). */
static bool report_says_uint8(const ctosa_report *rep, const char *name) {
    ctosa_runtime_tensor t;
    return rep && ctosa_report_tensor(rep, name, &t) && strcmp(t.dtype, "uint8") == 0;
}

static ctosa_error *feed_input(ctosa_interp *it, const ctosa_interp_tensor *info, const char *file,
                               const ctosa_report *rep) {
    ctosa_tensor_file a;
    ctosa_error *e = ctosa_tensor_file_read(file, &a);
    if (e) return ctosa_error_prefix(e, "input '%s'", info->name);
    char want[256], got[256];
    bool same = a.rank == info->rank;
    for (uint32_t i = 0; same && i < a.rank; i++) same = a.shape[i] == info->shape[i];
    if (!same) {
        e = ctosa_error_new(CTOSA_ERR_USAGE,
                            "input '%s': expected shape %s dtype %s, %s has "
                            "shape %s (%s)",
                            info->name, shape_str(info->rank, info->shape, want, sizeof want),
                            ctosa_dtype_short(info->dtype), file, shape_str(a.rank, a.shape, got, sizeof got),
                            a.type_name);
        ctosa_tensor_file_free(&a);
        return e;
    }
    if (info->dtype == CTOSA_DTYPE_INT8 && strcmp(a.type_name, "uint8") == 0 &&
        report_says_uint8(rep, info->name)) {
        e = ctosa_interp_set_input(it, info->name, info->dtype, info->rank, info->shape, a.data, a.size);
        ctosa_tensor_file_free(&a);
        return e ? ctosa_error_prefix(e, "%s", file) : NULL;
    }
    char what[512];
    snprintf(what, sizeof what, "input '%s' (%s)", info->name, file);
    void *host = NULL;
    uint64_t size = 0;
    e = ctosa_tensor_file_to_host(&a, info->dtype, what, &host, &size);
    ctosa_tensor_file_free(&a);
    if (e)
        return ctosa_error_prefix(e, "expected dtype %s shape %s", ctosa_dtype_short(info->dtype),
                                  shape_str(info->rank, info->shape, want, sizeof want));
    e = ctosa_interp_set_input(it, info->name, info->dtype, info->rank, info->shape, host, size);
    free(host);
    if (e && ctosa_error_code(e) != CTOSA_ERR_NOMEM) e = ctosa_error_prefix(e, "%s", file);
    return e;
}

static char *sanitize(const char *name) {
    size_t n = strlen(name);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == '-';
        s[i] = ok ? c : '_';
    }
    s[n] = 0;
    /* "." and ".." would not name a file in DIR */
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || n == 0) {
        free(s);
        return strdup("_");
    }
    return s;
}

static ctosa_error *make_dir(const char *dir) {
    char *p = strdup(dir);
    if (!p) return ctosa_error_nomem();
    for (char *q = p + 1; *q; q++) {
        if (*q != '/') continue;
        *q = 0;
        mkdir(p, 0777);
        *q = '/';
    }
    ctosa_error *e = NULL;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot create directory: %s", dir, strerror(errno));
    free(p);
    return e;
}

/* cli_flag_value that remembers a missing value across several calls. */
static const char *flag(int argc, char **argv, int *i, const char *f, const char *alt, int *missing) {
    int m = 0;
    const char *v = cli_flag_value(argc, argv, i, f, alt, &m);
    if (m) *missing = 1;
    return v;
}

/* cli_fail that points a memory-limit error at the flag that raises it. */
static int run_fail(ctosa_error *e) {
    if (e && ctosa_error_code(e) == CTOSA_ERR_LIMIT && strstr(ctosa_error_message(e), "memory limit")) {
        ctosa_error *n =
            ctosa_error_new(CTOSA_ERR_LIMIT, "%s (raise it with --max-memory)", ctosa_error_message(e));
        if (n) {
            ctosa_error_free(e);
            e = n;
        }
    }
    return cli_fail(CMD, e);
}

/* Appends name to the list unless it is there already. */
static bool add_name(char ***list, uint32_t *n, uint32_t *cap, const char *name, size_t len) {
    for (uint32_t k = 0; k < *n; k++)
        if (strlen((*list)[k]) == len && memcmp((*list)[k], name, len) == 0) return true;
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        char **nl = realloc(*list, nc * sizeof *nl);
        if (!nl) return false;
        *list = nl;
        *cap = nc;
    }
    if (!((*list)[*n] = strndup(name, len))) return false;
    (*n)++;
    return true;
}

/* Adds the comma-separated names of v; false on an empty name (or no
 * memory). */
static bool add_names(char ***list, uint32_t *n, uint32_t *cap, const char *v) {
    for (const char *p = v;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (!len || !add_name(list, n, cap, p, len)) return false;
        if (!c) return true;
        p = c + 1;
    }
}

/* The tensors to compute: the --outputs list (sliced already true) or the
 * main block's outputs, plus every --output NAME. *sliced becomes true when
 * that is not exactly the block's outputs. */
static ctosa_error *choose_outputs(const ctosa_graph *g, const char *model, const cli_binding *outs,
                                   int n_outs, char ***sel, uint32_t *n_sel, uint32_t *cap_sel,
                                   bool *sliced) {
    const ctosa_region *r = ctosa_graph_region_count(g) ? ctosa_graph_region(g, 0) : NULL;
    const ctosa_block *b = r && r->n_blocks ? r->blocks[0] : NULL;
    if (!b) return NULL; /* the interpreter reports it */
    if (!*sliced)
        for (uint32_t i = 0; i < b->n_outputs; i++)
            if (!add_name(sel, n_sel, cap_sel, b->outputs[i], strlen(b->outputs[i])))
                return ctosa_error_nomem();
    for (int k = 0; k < n_outs; k++) {
        bool is_out = false;
        for (uint32_t i = 0; i < b->n_outputs && !is_out; i++)
            is_out = strcmp(b->outputs[i], outs[k].name) == 0;
        if (!is_out && !ctosa_block_find_tensor(g, b, outs[k].name))
            return ctosa_error_new(CTOSA_ERR_USAGE,
                                   "%s: '%s' is not a graph output or a tensor "
                                   "of the main block",
                                   model, outs[k].name);
        if (!is_out) *sliced = true;
        if (!add_name(sel, n_sel, cap_sel, outs[k].name, strlen(outs[k].name))) return ctosa_error_nomem();
    }
    return NULL;
}

/* DIR/<sanitised name>.npy, with a numeric suffix when an earlier output
 * (written[0..n)) took that path; malloc'd. */
static char *output_path(const char *dir, const char *name, char *const *written, uint32_t n) {
    char *s = sanitize(name);
    size_t len = strlen(dir) + (s ? strlen(s) : 0) + 32;
    char *p = malloc(len);
    if (!s || !p) {
        free(s);
        free(p);
        return NULL;
    }
    snprintf(p, len, "%s/%s.npy", dir, s);
    for (uint32_t k = 1; k < 1000000; k++) {
        bool clash = false;
        for (uint32_t j = 0; j < n && !clash; j++) clash = written[j] && strcmp(written[j], p) == 0;
        if (!clash) break;
        snprintf(p, len, "%s/%s_%u.npy", dir, s, k);
    }
    free(s);
    return p;
}

static ctosa_error *runtime_run_cb(void *rt) { return ctosa_runtime_run(rt); }
static void runtime_reset_cb(void *rt) { ctosa_runtime_profile_reset(rt); }

typedef struct step_kind {
    const char *what; /* "partition", or the CPU node's op_type */
    bool deferred;
    uint32_t steps;
    double s;
} step_kind;

static int cmp_step_kind(const void *a, const void *b) {
    double x = ((const step_kind *)a)->s, y = ((const step_kind *)b)->s;
    return x > y ? -1 : x < y;
}

typedef struct step_time {
    const ctosa_runtime_step *st;
    uint32_t index;
    double s;
} step_time;

static int cmp_step_time(const void *a, const void *b) {
    const step_time *x = a, *y = b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* --profile on a partitioned model: time per kind of step (the TOSA
 * partitions, each CPU operator type), then per step, slowest first. */
static ctosa_error *print_step_profile(const ctosa_runtime *rt) {
    uint32_t n = ctosa_runtime_step_count(rt), m = 0, nk = 0;
    step_time *steps = calloc((size_t)n + 1, sizeof *steps);
    step_kind *kinds = calloc((size_t)n + 1, sizeof *kinds);
    if (!steps || !kinds) {
        free(steps);
        free(kinds);
        return ctosa_error_nomem();
    }
    uint64_t runs = 0;
    double total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ctosa_runtime_step *st = ctosa_runtime_step_at(rt, i);
        if (!st->runs) continue;
        if (st->runs > runs) runs = st->runs;
        steps[m++] = (step_time){st, i, st->seconds / (double)st->runs};
    }
    for (uint32_t i = 0; i < m; i++) {
        const ctosa_runtime_step *st = steps[i].st;
        const char *what = st->partition ? "partition" : st->op_type;
        total += steps[i].s;
        uint32_t k = 0;
        while (k < nk && !(kinds[k].deferred == st->deferred && strcmp(kinds[k].what, what) == 0)) k++;
        if (k == nk) kinds[nk++] = (step_kind){what, st->deferred, 0, 0};
        kinds[k].steps++;
        kinds[k].s += steps[i].s;
    }
    qsort(kinds, nk, sizeof *kinds, cmp_step_kind);
    qsort(steps, m, sizeof *steps, cmp_step_time);
    double pct = total > 0 ? 100.0 / total : 0;
    printf("profile: %u steps ran, %.3f ms per run in steps (%llu run%s profiled)\n", m, 1e3 * total,
           (unsigned long long)runs, runs == 1 ? "" : "s");
    printf("\n  %-40s %6s %11s %7s\n", "step kind", "count", "ms/run", "%");
    for (uint32_t k = 0; k < nk; k++) {
        char label[128];
        snprintf(label, sizeof label, "%s%s", kinds[k].what,
                 !strcmp(kinds[k].what, "partition") ? ""
                 : kinds[k].deferred                 ? " (CPU, lowered at run time)"
                                                     : " (CPU)");
        printf("  %-40s %6u %11.3f %6.1f%%\n", label, kinds[k].steps, 1e3 * kinds[k].s, pct * kinds[k].s);
    }
    printf("\n  %11s %7s %8s  step (slowest first)\n", "ms/run", "%", "cum %");
    double cum = 0;
    uint32_t shown = m < PROFILE_TOP ? m : PROFILE_TOP;
    for (uint32_t i = 0; i < shown; i++) {
        const ctosa_runtime_step *st = steps[i].st;
        cum += steps[i].s;
        printf("  %11.3f %6.1f%% %7.1f%%  %s (", 1e3 * steps[i].s, pct * steps[i].s, pct * cum, st->name);
        if (st->partition) printf("partition, %u TOSA operators)\n", st->tosa_ops);
        else printf("%s, CPU%s)\n", st->op_type, st->deferred ? ", lowered at run time" : "");
    }
    if (m > shown)
        printf("  %11.3f %6.1f%% %7.1f%%  (%u more steps)\n", 1e3 * (total - cum), pct * (total - cum), 100.0,
               m - shown);
    free(steps);
    free(kinds);
    return NULL;
}

/* The partitioned-model mode: load (every CPU node checked now), feed,
 * run, write every model output. */
static int run_partitioned(const char *model, const cli_binding *ins, int n_ins, const cli_binding *outs,
                           int n_outs, const char *dir, bool quiet, bool profile,
                           const ctosa_interp_options *iopt, const ctosa_custom_registry *reg,
                           run_timing *timing) {
    ctosa_runtime_options ro;
    ctosa_runtime_options_init(&ro);
    ro.custom_ops = reg;
    ro.threads = iopt->threads;
    ro.max_memory = iopt->max_memory;
    ro.max_iterations = iopt->max_iterations;
    ro.reference = iopt->reference;
    ctosa_runtime *rt = NULL;
    char **written = NULL;
    uint32_t nout = 0;
    int rc = 0;
    ctosa_error *e = ctosa_runtime_load(model, &ro, &rt);
    if (e) {
        rc = run_fail(e);
        goto out;
    }
    uint32_t nin = ctosa_runtime_input_count(rt);
    nout = ctosa_runtime_output_count(rt);
    for (int k = 0; k < n_outs; k++) {
        bool found = false;
        for (uint32_t i = 0; i < nout && !found; i++) {
            ctosa_runtime_tensor info;
            ctosa_error_free(ctosa_runtime_output_info(rt, i, &info));
            found = strcmp(info.name, outs[k].name) == 0;
        }
        if (!found) {
            rc = run_fail(
                ctosa_error_new(CTOSA_ERR_USAGE, "%s: '%s' is not a model output", model, outs[k].name));
            goto out;
        }
    }
    for (int k = 0; k < n_ins; k++) {
        bool found = false;
        for (uint32_t i = 0; i < nin && !found; i++) {
            ctosa_runtime_tensor info;
            ctosa_error_free(ctosa_runtime_input_info(rt, i, &info));
            found = strcmp(info.name, ins[k].name) == 0;
        }
        if (!found) {
            /* the runtime's message lists the inputs */
            rc = run_fail(ctosa_runtime_set_input(rt, ins[k].name, NULL, 0, NULL, NULL, 0));
            goto out;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        ctosa_runtime_tensor info;
        ctosa_error_free(ctosa_runtime_input_info(rt, i, &info));
        const char *file = NULL;
        for (int k = 0; k < n_ins; k++)
            if (strcmp(ins[k].name, info.name) == 0) file = ins[k].file;
        char sbuf[256];
        if (!file) {
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE,
                                          "input '%s' (dtype %s, shape %s) is not given; use "
                                          "--input %s=FILE",
                                          info.name, info.dtype,
                                          shape_str(info.rank, info.shape, sbuf, sizeof sbuf), info.name));
            goto out;
        }
        ctosa_tensor_file a;
        if ((e = ctosa_tensor_file_read(file, &a))) {
            rc = run_fail(ctosa_error_prefix(e, "input '%s'", info.name));
            goto out;
        }
        char what[512];
        snprintf(what, sizeof what, "%s", file);
        e = ctosa_runtime_set_input_file(rt, info.name, &a, what);
        ctosa_tensor_file_free(&a);
        if (e) {
            rc = run_fail(e);
            goto out;
        }
    }
    if ((e = timed_runs(runtime_run_cb, rt, profile ? runtime_reset_cb : NULL, timing))) {
        rc = run_fail(e);
        goto out;
    }
    written = calloc(nout + 1, sizeof *written);
    if (!written) {
        rc = run_fail(ctosa_error_nomem());
        goto out;
    }
    bool dir_made = false;
    for (uint32_t i = 0; i < nout; i++) {
        ctosa_runtime_tensor info, val;
        ctosa_error_free(ctosa_runtime_output_info(rt, i, &info));
        if ((e = ctosa_runtime_get_output(rt, info.name, &val))) {
            rc = run_fail(e);
            goto out;
        }
        const char *given = NULL;
        for (int k = 0; k < n_outs; k++)
            if (strcmp(outs[k].name, info.name) == 0) given = outs[k].file;
        if (!given && !dir_made) {
            if ((e = make_dir(dir))) {
                rc = run_fail(e);
                goto out;
            }
            dir_made = true;
        }
        written[i] = given ? strdup(given) : output_path(dir, info.name, written, i);
        if (!written[i]) {
            rc = run_fail(ctosa_error_nomem());
            goto out;
        }
        if (is_an_input(written[i], model, ins, n_ins)) {
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE,
                                          "output '%s': %s would overwrite an input file (use "
                                          "--output NAME=FILE or -o DIR)",
                                          info.name, written[i]));
            goto out;
        }
        if ((e = ctosa_runtime_tensor_write_npy(written[i], &val))) {
            rc = run_fail(e);
            goto out;
        }
        if (!quiet) {
            char sbuf[256];
            printf("%s: %s %s -> %s\n", info.name, val.dtype,
                   shape_str(val.rank, val.shape, sbuf, sizeof sbuf), written[i]);
        }
    }
    if (!quiet) {
        uint32_t np = 0, nh = 0;
        for (uint32_t i = 0; i < ctosa_runtime_step_count(rt); i++) {
            if (ctosa_runtime_step_at(rt, i)->partition) np++;
            else nh++;
        }
        print_timing(model, timing);
        printf(" (%u partition%s, %u CPU node%s on the host executor)\n", np, np == 1 ? "" : "s", nh,
               nh == 1 ? "" : "s");
    }
    if (profile && (e = print_step_profile(rt))) {
        rc = run_fail(e);
        goto out;
    }
out:
    if (written)
        for (uint32_t i = 0; i < nout; i++) free(written[i]);
    free(written);
    ctosa_runtime_free(rt);
    return rc;
}

#define CLI_RUN_DEFAULT_MAX_MEMORY ((uint64_t)16 << 30)

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *dir = ".";
    cli_binding *ins = calloc((size_t)argc + 1, sizeof *ins);
    cli_binding *outs = calloc((size_t)argc + 1, sizeof *outs);
    int n_ins = 0, n_outs = 0, rc = 0;
    bool quiet = false, profile = false;
    run_timing timing = {0};
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    /* Untrusted graphs: a WHILE_LOOP that never ends is stopped (exit 2). */
    opt.max_iterations = 10000000;
    /* The graph runs once: packed weights kept for a second run would only
     * add memory (the size of all weights for a whole LLM). */
    opt.no_weight_cache = true;
    /* ...and one cannot take more than 16 GiB unless --max-memory allows it
     * (below that, the interpreter's own default: physical memory). */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (uint64_t)pages * (uint64_t)page > CLI_RUN_DEFAULT_MAX_MEMORY)
        opt.max_memory = CLI_RUN_DEFAULT_MAX_MEMORY;
    ctosa_graph *g = NULL;
    ctosa_interp *it = NULL;
    ctosa_custom_registry *reg = NULL;
    ctosa_report *rep = NULL; /* the partition's report, when beside it */
    char **written = NULL;
    uint32_t nout = 0;
    char **sel = NULL; /* the tensors to compute (a slice), when sliced */
    uint32_t n_sel = 0, cap_sel = 0;
    bool sliced = false;
    if (!ins || !outs) {
        rc = run_fail(ctosa_error_nomem());
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help();
            goto done;
        } else if ((v = flag(argc, argv, &i, "--input", NULL, &missing))) {
            if (!cli_split_binding(v, &ins[n_ins])) {
                rc = cli_usage(CMD, "--input expects NAME=FILE, got '%s'", v);
                goto done;
            }
            n_ins++;
        } else if ((v = flag(argc, argv, &i, "--output", NULL, &missing))) {
            if (!cli_split_binding(v, &outs[n_outs])) {
                rc = cli_usage(CMD, "--output expects NAME=FILE, got '%s'", v);
                goto done;
            }
            n_outs++;
        } else if ((v = flag(argc, argv, &i, "--outputs", NULL, &missing))) {
            if (!add_names(&sel, &n_sel, &cap_sel, v)) {
                rc = cli_usage(CMD, "--outputs expects NAME[,NAME...], got '%s'", v);
                goto done;
            }
            sliced = true;
        } else if ((v = flag(argc, argv, &i, "-o", "--output-dir", &missing))) {
            dir = v;
        } else if ((v = flag(argc, argv, &i, "--plugin", NULL, &missing))) {
            ctosa_error *pe = reg ? NULL : ctosa_custom_registry_create(&reg);
            if (!pe) pe = ctosa_custom_registry_load_plugin(reg, v);
            if (pe) {
                rc = run_fail(ctosa_error_prefix(pe, "--plugin"));
                goto done;
            }
        } else if ((v = flag(argc, argv, &i, "--threads", NULL, &missing))) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 1024) {
                rc = cli_usage(CMD, "--threads expects a number from 1 to 1024, got '%s'", v);
                goto done;
            }
            opt.threads = (int)n;
        } else if ((v = flag(argc, argv, &i, "--max-iterations", NULL, &missing))) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || end == v || errno || v[0] == '-') {
                rc = cli_usage(CMD, "--max-iterations expects a number (0 = unlimited), got '%s'", v);
                goto done;
            }
            opt.max_iterations = n;
        } else if ((v = flag(argc, argv, &i, "--max-memory", NULL, &missing))) {
            if (!cli_parse_size(v, &opt.max_memory) || opt.max_memory == 0) {
                rc = cli_usage(CMD, "--max-memory expects a byte count such as 512M, got '%s'", v);
                goto done;
            }
        } else if ((v = flag(argc, argv, &i, "--runs", NULL, &missing))) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 1000000) {
                rc = cli_usage(CMD, "--runs expects a number from 1 to 1000000, got '%s'", v);
                goto done;
            }
            timing.runs = (int)n;
        } else if (!missing && (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0)) {
            quiet = true;
        } else if (!missing && strcmp(argv[i], "--profile") == 0) {
            profile = true;
        } else if (!missing && strcmp(argv[i], "--reference") == 0) {
            opt.reference = true;
        } else if ((rc = cli_model_arg(CMD, "MODEL.tosa", argv[i], missing, &model))) {
            goto done;
        }
    }
    if (!model) {
        rc = cli_usage(CMD, "no MODEL.tosa given");
        goto done;
    }
    for (int k = 0; k < n_outs; k++) {
        if (is_an_input(outs[k].file, model, ins, n_ins)) {
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE, "--output %s=%s would overwrite an input file",
                                          outs[k].name, outs[k].file));
            goto done;
        }
    }
    size_t mlen = strlen(model);
    if (mlen > 5 && strcmp(model + mlen - 5, ".onnx") == 0) {
        if (n_sel) {
            rc = cli_usage(CMD, "--outputs (a slice) applies to a .tosa graph, not to a partitioned model");
            goto done;
        }
        rc = run_partitioned(model, ins, n_ins, outs, n_outs, dir, quiet, profile, &opt, reg, &timing);
        goto done;
    }
    ctosa_error *e = ctosa_report_load_beside(model, &rep);
    if (e) {
        rc = run_fail(e);
        goto done;
    }
    e = ctosa_read_file(model, NULL, &g); /* names the file itself */
    if (e) {
        rc = run_fail(e);
        goto done;
    }
    /* What to compute: the --outputs list, or else the graph's outputs; and
     * every --output NAME too. Anything but exactly the graph's outputs
     * makes a slice. */
    if ((e = choose_outputs(g, model, outs, n_outs, &sel, &n_sel, &cap_sel, &sliced))) {
        rc = run_fail(e);
        goto done;
    }
    /* Timed runs keep the packed weights, as an application running the
     * graph repeatedly would. */
    if (timing.runs > 0) opt.no_weight_cache = false;
    opt.profile = profile;
    if (sliced) {
        opt.outputs = (const char *const *)sel;
        opt.n_outputs = n_sel;
    }
    if ((e = ctosa_interp_create(g, &opt, &it))) {
        rc = run_fail(ctosa_error_prefix(e, "%s", model));
        goto done;
    }
    if (reg && (e = ctosa_custom_registry_attach(reg, it))) {
        rc = run_fail(e);
        goto done;
    }
    /* Every --input and --output must name a graph input/output. */
    uint32_t nin = ctosa_interp_input_count(it);
    nout = ctosa_interp_output_count(it);
    for (int k = 0; k < n_ins; k++) {
        bool found = false;
        for (uint32_t i = 0; i < nin && !found; i++) {
            ctosa_interp_tensor info;
            ctosa_error_free(ctosa_interp_input_info(it, i, &info));
            found = strcmp(info.name, ins[k].name) == 0;
        }
        if (!found) {
            strbuf b;
            sb_init(&b);
            for (uint32_t i = 0; i < nin; i++) {
                ctosa_interp_tensor info;
                ctosa_error_free(ctosa_interp_input_info(it, i, &info));
                sb_printf(&b, "%s'%s'", i ? ", " : "", info.name);
            }
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE,
                                          "%s: '%s' is not a graph input "
                                          "(inputs: %s)",
                                          model, ins[k].name, b.s ? b.s : "none"));
            sb_free(&b);
            goto done;
        }
    }
    for (int k = 0; k < n_outs; k++) {
        bool found = false;
        for (uint32_t i = 0; i < nout && !found; i++) {
            ctosa_interp_tensor info;
            ctosa_error_free(ctosa_interp_output_info(it, i, &info));
            found = strcmp(info.name, outs[k].name) == 0;
        }
        if (!found) { /* cannot happen: choose_outputs selected it */
            rc = run_fail(
                ctosa_error_new(CTOSA_ERR_USAGE, "%s: '%s' is not a graph output", model, outs[k].name));
            goto done;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        ctosa_interp_tensor info;
        ctosa_error_free(ctosa_interp_input_info(it, i, &info));
        const char *file = NULL;
        for (int k = 0; k < n_ins; k++)
            if (strcmp(ins[k].name, info.name) == 0) file = ins[k].file;
        char sbuf[256];
        if (!file && !ctosa_interp_input_used(it, i)) continue; /* a slice that does not read it */
        if (!file) {
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE,
                                          "input '%s' (dtype %s, shape %s) "
                                          "is not given; use --input %s=FILE",
                                          info.name, ctosa_dtype_short(info.dtype),
                                          shape_str(info.rank, info.shape, sbuf, sizeof sbuf), info.name));
            goto done;
        }
        if ((e = feed_input(it, &info, file, rep))) {
            rc = run_fail(e);
            goto done;
        }
    }
    if ((e = timed_runs(interp_run_cb, it, profile ? interp_reset_cb : NULL, &timing))) {
        rc = run_fail(ctosa_error_prefix(e, "%s", model));
        goto done;
    }
    bool dir_made = false;
    written = calloc(nout + 1, sizeof *written);
    if (!written) {
        rc = run_fail(ctosa_error_nomem());
        goto done;
    }
    for (uint32_t i = 0; i < nout; i++) {
        ctosa_interp_tensor info, val;
        ctosa_error_free(ctosa_interp_output_info(it, i, &info));
        if ((e = ctosa_interp_get_output(it, info.name, &val))) {
            rc = run_fail(e);
            goto done;
        }
        const char *path = NULL;
        char *owned = NULL;
        for (int k = 0; k < n_outs; k++)
            if (strcmp(outs[k].name, info.name) == 0) path = outs[k].file;
        if (!path) {
            if (!dir_made && (e = make_dir(dir))) {
                rc = run_fail(e);
                goto done;
            }
            dir_made = true;
            char *s = sanitize(info.name);
            size_t n = strlen(dir) + (s ? strlen(s) : 0) + 32;
            owned = malloc(n);
            if (!s || !owned) {
                free(s);
                free(owned);
                rc = run_fail(ctosa_error_nomem());
                goto done;
            }
            snprintf(owned, n, "%s/%s.npy", dir, s);
            /* Two names that sanitise alike ("a:b", "a/b") must not
             * overwrite each other: later ones get a numeric suffix. */
            for (uint32_t k = 1; k < 1000000; k++) {
                bool clash = false;
                for (uint32_t j = 0; j < i && !clash; j++) clash = strcmp(written[j], owned) == 0;
                if (!clash) break;
                snprintf(owned, n, "%s/%s_%u.npy", dir, s, k);
            }
            if (strcmp(s, info.name) != 0 && !quiet)
                fprintf(stderr, "ctosa run: output '%s' written as %s\n", info.name, owned);
            free(s);
            path = owned;
        }
        if (is_an_input(path, model, ins, n_ins)) {
            rc = run_fail(ctosa_error_new(CTOSA_ERR_USAGE,
                                          "output '%s': %s would overwrite an input "
                                          "file (use --output NAME=FILE or -o DIR)",
                                          info.name, path));
            free(owned);
            goto done;
        }
        e = ctosa_npy_descr(val.dtype) ? ctosa_tensor_file_write_npy(path, &val)
                                       : ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                                         "output '%s': dtype %s cannot be "
                                                         "written as .npy",
                                                         info.name, ctosa_dtype_short(val.dtype));
        if (e) {
            free(owned);
            rc = run_fail(e);
            goto done;
        }
        if (!quiet) {
            char sbuf[256];
            printf("%s: %s %s -> %s\n", info.name, ctosa_dtype_short(val.dtype),
                   shape_str(val.rank, val.shape, sbuf, sizeof sbuf), path);
        }
        if (!(written[i] = strdup(path))) {
            free(owned);
            rc = run_fail(ctosa_error_nomem());
            goto done;
        }
        free(owned);
    }
    if (!quiet) {
        print_timing(model, &timing);
        printf("\n");
    }
    if (profile && (e = print_profile(it))) {
        rc = run_fail(e);
        goto done;
    }
done:
    free(timing.t);
    free(timing.cpu);
    if (written)
        for (uint32_t i = 0; i < nout; i++) free(written[i]);
    free(written);
    for (int k = 0; k < n_ins; k++) free(ins[k].name);
    for (int k = 0; k < n_outs; k++) free(outs[k].name);
    for (uint32_t k = 0; k < n_sel; k++) free(sel[k]);
    free(sel);
    free(ins);
    free(outs);
    ctosa_interp_free(it);
    ctosa_report_free(rep);
    ctosa_custom_registry_free(reg); /* after the interpreter: kernels live in plugins */
    ctosa_graph_free(g);
    return rc;
}
