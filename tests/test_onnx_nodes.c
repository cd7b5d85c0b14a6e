/* test_onnx_nodes.c - ONNX lowering acceptance: every ONNX node test of Debian's
 * libonnx-testdata (/usr/share/libonnx-testdata/data/node, 932 tests)
 * through ctosa_lower_file (in memory) under TOSA-1.0+FP and
 * TOSA-1.0+INT+FP, then the delegated partitions on the interpreter,
 * compared with the expected outputs.
 *
 * Per test and spec the result is one of
 *   pass      every node delegated (in partitions or folded), partitions
 *             valid, outputs match (rtol 1e-3, atol 1e-5; ints exact)
 *   fallback  some node stays on the CPU with a reason code (clean)
 *   failure   lower_error (ctosa_lower_file failed), accounting (a node
 *             missing/twice, empty reason), internal_error (a fallback with
 *             that code: a bug, not a limitation), invalid_tosa (a partition fails
 *             ctosa_validate), run_error, mismatch, crash (the test process
 *             died: signal, sanitizer report, timeout)
 * Inputs that a lowering needs constant (fallback code needs_constant) are
 * bound from test_data_set_0/input_N.pb (graph input order) and lowering is
 * retried, as `ctosa lower --bind` would.
 *
 * The rule asserted: a test whose operator is on the list of lowered operators
 * passes under at least one spec and fails under none, or is listed in
 * tests/onnx_node_exceptions.txt with its reason; every other test
 * (other operators, "_expanded" function bodies) has no failure. A listed
 * exception that now passes is printed as a note.
 *
 * Each test runs in a forked child (so a crash is reported against the test
 * and the run goes on), several at a time.
 *
 * Usage: test_onnx_nodes [options] [SUBSTRING...]
 *   -v                 print every test's result
 *   --table            print the per-operator table (tools/node_report.sh)
 *   -q                 do not print each unexpected failure
 *   --write-exceptions FILE   write the current failures as an exceptions list
 *   --exceptions FILE  exceptions list (default tests/onnx_node_exceptions.txt)
 *   --data DIR         node test folder (default /usr/share/libonnx-testdata/data/node)
 *   --extra-spec SPEC  also lower under SPEC, report-only (counted in the
 *                      per-spec table; its failures are printed as notes)
 *   -j N               parallel tests (default: number of CPUs)
 *   --sample N         run every Nth test only (default 1: all; the full run
 *                      takes seconds, under ASan too, so CI does not sample)
 * SUBSTRING arguments keep only tests whose name contains one of them.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lower/lower.h"
#include "lower_testutil.h"

#define DEFAULT_DATA "/usr/share/libonnx-testdata/data/node"
#define RTOL 1e-3
#define ATOL 1e-5
#define MAX_INPUT_BYTES (64u << 20) /* skip tests with bigger input data */
#define CHILD_TIMEOUT 120           /* seconds per test (both specs) */
#define REASON_CAP 400

/* The lowered operators, with the lowering family that owns them. */
static const struct {
    const char *op, *family;
} LISTED[] = {
#define EW(o) \
    { o, "elementwise" }
#define CV(o) \
    { o, "conv/matmul/norm" }
#define DM(o) \
    { o, "layout/gather/reduce" }
#define ST(o) \
    { o, "structural" }
#define RN(o) \
    { o, "recurrent" }
    EW("Abs"),
    EW("Acos"),
    EW("Acosh"),
    EW("Add"),
    EW("And"),
    EW("Asin"),
    EW("Asinh"),
    EW("Atan"),
    EW("Atanh"),
    EW("BitShift"),
    EW("BitwiseAnd"),
    EW("BitwiseNot"),
    EW("BitwiseOr"),
    EW("BitwiseXor"),
    EW("Cast"),
    EW("CastLike"),
    EW("Ceil"),
    EW("Celu"),
    EW("Clip"),
    EW("Cos"),
    EW("Cosh"),
    EW("Div"),
    EW("Elu"),
    EW("Equal"),
    EW("Erf"),
    EW("Exp"),
    EW("Floor"),
    EW("Gelu"),
    EW("Greater"),
    EW("GreaterOrEqual"),
    EW("HardSigmoid"),
    EW("HardSwish"),
    EW("IsInf"),
    EW("IsNaN"),
    EW("LeakyRelu"),
    EW("Less"),
    EW("LessOrEqual"),
    EW("Log"),
    EW("Max"),
    EW("Mean"),
    EW("Min"),
    EW("Mish"),
    EW("Mod"),
    EW("Mul"),
    EW("Neg"),
    EW("Not"),
    EW("Or"),
    EW("Pow"),
    EW("PRelu"),
    EW("Reciprocal"),
    EW("Relu"),
    EW("Round"),
    EW("Selu"),
    EW("Shrink"),
    EW("Sigmoid"),
    EW("Sign"),
    EW("Sin"),
    EW("Sinh"),
    EW("Softplus"),
    EW("Softsign"),
    EW("Sqrt"),
    EW("Sub"),
    EW("Sum"),
    EW("Tan"),
    EW("Tanh"),
    EW("ThresholdedRelu"),
    EW("Where"),
    EW("Xor"),
    CV("AveragePool"),
    CV("BatchNormalization"),
    CV("Conv"),
    CV("ConvTranspose"),
    CV("DepthToSpace"),
    CV("Einsum"),
    CV("Gemm"),
    CV("GlobalAveragePool"),
    CV("GlobalMaxPool"),
    CV("GroupNormalization"),
    CV("Hardmax"),
    CV("InstanceNormalization"),
    CV("LayerNormalization"),
    CV("LogSoftmax"),
    CV("LpNormalization"),
    CV("LRN"),
    CV("MatMul"),
    CV("MaxPool"),
    CV("MeanVarianceNormalization"),
    CV("Resize"),
    CV("RMSNormalization"),
    CV("Softmax"),
    CV("SpaceToDepth"),
    CV("Upsample"),
    DM("ArgMax"),
    DM("ArgMin"),
    DM("Concat"),
    DM("CumSum"),
    DM("Expand"),
    DM("EyeLike"),
    DM("Gather"),
    DM("GatherElements"),
    DM("GatherND"),
    DM("GridSample"),
    DM("OneHot"),
    DM("Pad"),
    DM("Compress"),
    DM("NonMaxSuppression"),
    DM("NonZero"),
    DM("Range"),
    DM("RoiAlign"),
    DM("ReduceL1"),
    DM("ReduceL2"),
    DM("ReduceLogSum"),
    DM("ReduceLogSumExp"),
    DM("ReduceMax"),
    DM("ReduceMean"),
    DM("ReduceMin"),
    DM("ReduceProd"),
    DM("ReduceSum"),
    DM("ReduceSumSquare"),
    DM("Scatter"),
    DM("ScatterElements"),
    DM("ScatterND"),
    DM("Slice"),
    DM("Split"),
    DM("Tile"),
    DM("TopK"),
    DM("Trilu"),
    ST("Constant"),
    ST("ConstantOfShape"),
    ST("Dropout"),
    ST("Flatten"),
    ST("Identity"),
    ST("Reshape"),
    ST("Shape"),
    ST("Size"),
    ST("Squeeze"),
    ST("Transpose"),
    ST("Unsqueeze"),
    RN("GRU"),
    RN("LSTM"),
    RN("RNN"),
#undef EW
#undef CV
#undef DM
#undef ST
#undef RN
};
#define N_LISTED (sizeof LISTED / sizeof LISTED[0])

static const char *listed_family(const char *op) {
    for (size_t i = 0; i < N_LISTED; i++)
        if (strcmp(LISTED[i].op, op) == 0) return LISTED[i].family;
    return NULL;
}

/* The two specs of the acceptance rule, plus an optional report-only one
 * (--extra-spec, e.g. TOSA-1.1+FP+INT+int64 to exercise the int64 paths
 * that TOSA 1.0 cannot carry). */
#define N_SPECS 2
#define MAX_SPECS 3
static const char *SPECS[MAX_SPECS] = {"TOSA-1.0+FP", "TOSA-1.0+INT+FP", NULL};
static int g_n_specs = N_SPECS;

/* Result of one test under one spec. Order: worse failures later. */
typedef enum rstat {
    R_NONE = 0, /* not run (skipped) */
    R_PASS,
    R_FALLBACK,
    R_MISMATCH,
    R_RUN_ERROR,
    R_INTERNAL, /* a fallback with code internal_error: a lowering bug */
    R_LOWER_ERROR,
    R_ACCOUNTING,
    R_INVALID,
    R_CRASH,
    R_COUNT
} rstat;
static const char *const RNAME[] = {"skipped",      "pass",           "fallback",    "mismatch",
                                    "run_error",    "internal_error", "lower_error", "accounting",
                                    "invalid_tosa", "crash"};

typedef struct spec_result {
    rstat st;
    uint32_t delegated, total, partitions, binds;
    char code[48];           /* fallback: first reason code */
    char reason[REASON_CAP]; /* fallback reason or failure detail */
} spec_result;

typedef struct test_case {
    char *name;
    char op[64];        /* the operator under test ("" when several) */
    const char *family; /* listed family or NULL */
    bool lowered;       /* its operator has a lowering (lower_find) at the model's opset */
    bool expanded;
    bool skipped;
    char skip_reason[128];
    spec_result r[MAX_SPECS];
    /* verdict */
    bool failed;
    char fail_kind[32];
    char fail_reason[REASON_CAP + 64];
    const char *exception; /* reason from the exceptions list, or NULL */
} test_case;

static const char *g_data = DEFAULT_DATA;
static ctosa_spec g_specs[MAX_SPECS];

/* ------------------------------------------------------------ one test */

static void one_line(char *s) {
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

static void set_reason(spec_result *r, rstat st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_reason(spec_result *r, rstat st, const char *fmt, ...) {
    r->st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    one_line(r->reason);
}

/* Graph inputs that are not initializers, in order: input_N.pb is the
 * N-th of them. */
static uint32_t data_inputs(const ctosa_onnx_graph *g, const char **names, uint32_t cap) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_inputs && n < cap; i++) {
        bool init = false;
        for (uint32_t k = 0; k < g->n_initializers && !init; k++)
            init = strcmp(g->initializers[k].name, g->inputs[i].name) == 0;
        if (!init) names[n++] = g->inputs[i].name;
    }
    return n;
}

static int input_index(const char *const *names, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return (int)i;
    return -1;
}

#define MAX_IO 64

/* Graph inputs to bind (indices into the data inputs). */
typedef struct binder {
    uint32_t n;
    int idx[MAX_IO];
} binder;

/* Adds every graph input named by a fallback entry with this code; returns
 * how many were new. */
static uint32_t add_binds(binder *b, const ctosa_lower_summary *sum, const char *const *in_names,
                          uint32_t n_in, const char *code) {
    uint32_t added = 0;
    for (uint32_t f = 0; f < sum->n_fallback; f++) {
        const ctosa_lower_fallback *fb = &sum->fallback[f];
        if (!fb->code || !fb->input || strcmp(fb->code, code) != 0) continue;
        int k = input_index(in_names, n_in, fb->input);
        if (k < 0) continue;
        bool have = false;
        for (uint32_t i = 0; i < b->n && !have; i++) have = b->idx[i] == k;
        if (have || b->n >= MAX_IO) continue;
        b->idx[b->n++] = k;
        added++;
    }
    return added;
}

/* Lowers with the binds of b, then keeps binding needs_constant graph
 * inputs and lowering again while that adds binds (a few rounds). */
static ctosa_error *lower_bound(const char *dir, const char *model, int s, const char *const *in_names,
                                uint32_t n_in, binder *b, ctosa_lower_result **out) {
    static char files[MAX_IO][4200];
    ctosa_lower_bind binds[MAX_IO];
    ctosa_lower_result *res = NULL;
    /* Each round adds at least one bind (lowerings report one problem per
     * node), so this ends; the last lowering always has every bind. */
    for (int round = 0;; round++) {
        for (uint32_t i = 0; i < b->n; i++) {
            snprintf(files[i], sizeof files[i], "%s/test_data_set_0/input_%d.pb", dir, b->idx[i]);
            binds[i].name = in_names[b->idx[i]];
            binds[i].file = files[i];
        }
        ctosa_lower_options opt;
        ctosa_lower_options_init(&opt);
        opt.output_dir = NULL;
        opt.no_report = true;
        opt.no_partitioned_onnx = true;
        opt.n_binds = b->n;
        opt.binds = binds;
        ctosa_lower_result_free(res);
        res = NULL;
        ctosa_error *e = ctosa_lower_file(model, &g_specs[s], &opt, &res);
        if (e) {
            ctosa_lower_result_free(res);
            return e;
        }
        if (round >= 16 || !add_binds(b, ctosa_lower_result_summary(res), in_names, n_in, "needs_constant"))
            break;
    }
    *out = res;
    return NULL;
}

/* Lowers and checks test dir under spec s; fills r. */
static void run_spec(const char *dir, const ctosa_onnx_graph *g, int s, spec_result *r) {
    char model[4096], file[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    const char *in_names[MAX_IO];
    uint32_t n_in = data_inputs(g, in_names, MAX_IO);

    /* First bind what a lowering says must be constant (needs_constant).
     * Then, if int64 graph inputs were refused for lack of int64 in the
     * spec (int64_not_enabled), try binding those too: TOSA 1.0 has no
     * int64 run-time tensor, and in real models such inputs (indices,
     * axes, shapes) are constants. That result is kept only when it
     * delegates more nodes; otherwise the first one (and its reason)
     * stands. */
    binder b1 = {0};
    ctosa_lower_result *res = NULL;
    ctosa_error *le = lower_bound(dir, model, s, in_names, n_in, &b1, &res);
    if (le) {
        set_reason(r, R_LOWER_ERROR, "%s%s", b1.n ? "(with --bind) " : "", ctosa_error_message(le));
        ctosa_error_free(le);
        return;
    }
    const ctosa_lower_summary *sum = ctosa_lower_result_summary(res);
    binder b2 = b1;
    if (add_binds(&b2, sum, in_names, n_in, "int64_not_enabled")) {
        ctosa_lower_result *res2 = NULL;
        le = lower_bound(dir, model, s, in_names, n_in, &b2, &res2);
        if (le) {
            set_reason(r, R_LOWER_ERROR, "(with --bind of int64 inputs) %s", ctosa_error_message(le));
            ctosa_error_free(le);
            ctosa_lower_result_free(res);
            return;
        }
        const ctosa_lower_summary *sum2 = ctosa_lower_result_summary(res2);
        if (sum2->nodes_delegated > sum->nodes_delegated) {
            ctosa_lower_result_free(res);
            res = res2, sum = sum2, b1 = b2;
        } else {
            ctosa_lower_result_free(res2);
        }
    }
    uint32_t n_binds = b1.n;
    r->delegated = sum->nodes_delegated;
    r->total = sum->nodes_total;
    r->partitions = sum->n_partitions;
    r->binds = n_binds;

    char why[2048];
    if (!lt_check_accounting_graph(sum, g, why, sizeof why)) {
        set_reason(r, R_ACCOUNTING, "%s", why);
        goto done;
    }
    if (!lt_validate_all(sum, &g_specs[s], why, sizeof why)) {
        set_reason(r, R_INVALID, "%s", why);
        goto done;
    }
    for (uint32_t f = 0; f < sum->n_fallback; f++)
        if (!strcmp(sum->fallback[f].code, "internal_error")) {
            set_reason(r, R_INTERNAL, "%s: %s", sum->fallback[f].node, sum->fallback[f].reason);
            goto done;
        }
    if (sum->n_fallback > 0) {
        const ctosa_lower_fallback *fb = &sum->fallback[0];
        r->st = R_FALLBACK;
        snprintf(r->code, sizeof r->code, "%s", fb->code);
        set_reason(r, R_FALLBACK, "%s: %s: %s", fb->op_type ? fb->op_type : "?", fb->code, fb->reason);
        goto done;
    }

    /* Fully delegated: run the partitions and compare every graph output. */
    lt_values vals = {0};
    for (uint32_t i = 0; i < n_in; i++) {
        snprintf(file, sizeof file, "%s/test_data_set_0/input_%u.pb", dir, i);
        npy_array a;
        ctosa_error *e = lt_load_array(file, &a);
        if (e) { /* e.g. a sequence input: fine as long as no partition reads it */
            ctosa_error_free(e);
            continue;
        }
        e = lt_values_put(&vals, in_names[i], &a);
        if (e) ctosa_error_free(e);
    }
    lt_run_status rs = lt_run_partitions(sum, &vals, 1, why, sizeof why);
    if (rs != LT_RUN_OK) {
        set_reason(r, R_RUN_ERROR, "%s", why);
        lt_values_free(&vals);
        goto done;
    }
    r->st = R_PASS;
    for (uint32_t o = 0; o < g->n_outputs && r->st == R_PASS; o++) {
        const char *name = g->outputs[o].name;
        snprintf(file, sizeof file, "%s/test_data_set_0/output_%u.pb", dir, o);
        npy_array want;
        ctosa_error *e = lt_load_array(file, &want);
        if (e) {
            set_reason(r, R_RUN_ERROR, "reference %s", ctosa_error_message(e));
            ctosa_error_free(e);
            break;
        }
        const npy_array *got = lt_values_get(&vals, name);
        if (!got)
            set_reason(r, R_MISMATCH,
                       "graph output '%s' is produced by no partition "
                       "(folded outputs cannot be checked)",
                       name);
        else if (!lt_compare(got, &want, RTOL, ATOL, NULL, why, sizeof why))
            set_reason(r, R_MISMATCH, "output '%s': %s", name, why);
        npy_free(&want);
    }
    lt_values_free(&vals);
done:
    ctosa_lower_result_free(res);
}

/* Child: both specs, results written to fd as text lines
 * "R <spec> <status> <delegated> <total> <partitions> <binds> <code>\t<reason>". */
static void child_run(const char *dir, const ctosa_onnx_graph *g, int fd) {
    for (int s = 0; s < g_n_specs; s++) {
        spec_result r;
        memset(&r, 0, sizeof r);
        run_spec(dir, g, s, &r);
        char line[REASON_CAP + 200];
        int n = snprintf(line, sizeof line, "R %d %d %u %u %u %u %s\t%s\n", s, (int)r.st, r.delegated,
                         r.total, r.partitions, r.binds, r.code[0] ? r.code : "-", r.reason);
        if (n > (int)sizeof line) n = (int)sizeof line;
        if (write(fd, line, (size_t)n) < 0) break;
    }
}

/* ------------------------------------------------------------ the driver */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint64_t dir_bytes(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint64_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        char p[4400];
        snprintf(p, sizeof p, "%s/%.255s", dir, de->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) n += (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}

/* Reads the model once in the parent: the operator under test. */
static void describe(test_case *t) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/model.onnx", g_data, t->name);
    size_t len = strlen(t->name);
    t->expanded = len > 9 && strcmp(t->name + len - 9, "_expanded") == 0;
    ctosa_onnx_model *m = NULL;
    ctosa_error *e = ctosa_onnx_load(p, NULL, &m);
    if (e) {
        /* Not a skip: the lowering must report it cleanly; the child does. */
        ctosa_error_free(e);
        return;
    }
    const ctosa_onnx_graph *g = ctosa_onnx_info(m)->graph;
    /* The operator: the one non-Constant op type (a test may build its
     * constant inputs with Constant nodes). */
    const char *op = NULL;
    bool several = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Constant") == 0 && g->n_nodes > 1) continue;
        if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) several = true;
        if (!op) op = n->op_type;
        else if (strcmp(op, n->op_type) != 0) several = true;
    }
    if (op && !several && !t->expanded) {
        snprintf(t->op, sizeof t->op, "%s", op);
        t->family = listed_family(op);
        int64_t opset = 1;
        const ctosa_onnx_model_info *info = ctosa_onnx_info(m);
        for (uint32_t i = 0; i < info->n_opsets; i++)
            if (!info->opsets[i].domain[0] || !strcmp(info->opsets[i].domain, "ai.onnx"))
                opset = info->opsets[i].version;
        t->lowered = lower_find("", op, opset) != NULL;
    }
    ctosa_onnx_free(m);
}

static void parse_child(test_case *t, char *buf) {
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int s, st;
        unsigned del, tot, parts, binds;
        char code[48];
        int off = 0;
        if (sscanf(line, "R %d %d %u %u %u %u %47s%n", &s, &st, &del, &tot, &parts, &binds, code, &off) !=
                7 ||
            s < 0 || s >= g_n_specs || st < 0 || st >= R_COUNT)
            continue;
        spec_result *r = &t->r[s];
        r->st = (rstat)st;
        r->delegated = del, r->total = tot, r->partitions = parts, r->binds = binds;
        snprintf(r->code, sizeof r->code, "%s", strcmp(code, "-") ? code : "");
        const char *rs = line + off;
        if (*rs == '\t') rs++;
        snprintf(r->reason, sizeof r->reason, "%s", rs);
    }
}

typedef struct running {
    pid_t pid;
    int fd;
    size_t test;
    char *buf;
    size_t len, cap;
} running;

static void drain(running *rn) {
    for (;;) {
        if (rn->cap - rn->len < 1024) {
            size_t nc = rn->cap ? rn->cap * 2 : 8192;
            char *nb = realloc(rn->buf, nc);
            if (!nb) return;
            rn->buf = nb, rn->cap = nc;
        }
        ssize_t k = read(rn->fd, rn->buf + rn->len, rn->cap - rn->len - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        rn->len += (size_t)k;
    }
    if (rn->buf) rn->buf[rn->len] = 0;
}

static void run_all(test_case *tests, size_t n, int jobs) {
    running *rn = calloc((size_t)jobs, sizeof *rn);
    int active = 0;
    size_t next = 0;
    while (next < n || active > 0) {
        while (active < jobs && next < n) {
            test_case *t = &tests[next];
            if (t->skipped) {
                next++;
                continue;
            }
            int pfd[2];
            if (pipe(pfd) != 0) {
                perror("pipe");
                exit(1);
            }
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                exit(1);
            }
            if (pid == 0) {
                close(pfd[0]);
                alarm(CHILD_TIMEOUT);
                char dir[4096], p[4200];
                snprintf(dir, sizeof dir, "%s/%s", g_data, t->name);
                snprintf(p, sizeof p, "%s/model.onnx", dir);
                ctosa_onnx_model *m = NULL;
                ctosa_error *e = ctosa_onnx_load(p, NULL, &m);
                if (e) {
                    /* The lowering must still refuse it cleanly. */
                    ctosa_error_free(e);
                    static const ctosa_onnx_graph empty = {0};
                    child_run(dir, &empty, pfd[1]);
                } else {
                    child_run(dir, ctosa_onnx_info(m)->graph, pfd[1]);
                    ctosa_onnx_free(m);
                }
                close(pfd[1]);
                /* The parent's bookkeeping is only reachable from this
                 * frame's locals, which LeakSanitizer may not see as roots
                 * at exit: free it so the child's leak check stays exact. */
                free(rn);
                exit(0); /* exit, not _exit: LeakSanitizer checks the child */
            }
            close(pfd[1]);
            int slot = 0;
            while (rn[slot].pid) slot++;
            rn[slot] = (running){.pid = pid, .fd = pfd[0], .test = next};
            active++;
            next++;
        }
        /* Children write at most a few KB (under the pipe buffer), so
         * reading after the exit cannot deadlock. */
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < jobs; i++) {
            if (rn[i].pid != pid) continue;
            test_case *t = &tests[rn[i].test];
            drain(&rn[i]);
            close(rn[i].fd);
            if (rn[i].buf) parse_child(t, rn[i].buf);
            bool bad_exit = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            if (bad_exit) {
                char how[128];
                if (WIFSIGNALED(status))
                    snprintf(how, sizeof how, "killed by signal %d%s", WTERMSIG(status),
                             WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
                else snprintf(how, sizeof how, "exit status %d (sanitizer report?)", WEXITSTATUS(status));
                for (int s = 0; s < g_n_specs; s++)
                    if (t->r[s].st == R_NONE || s == g_n_specs - 1) {
                        set_reason(&t->r[s], R_CRASH, "%s", how);
                        break;
                    }
            }
            free(rn[i].buf);
            memset(&rn[i], 0, sizeof rn[i]);
            active--;
            break;
        }
    }
    free(rn);
}

/* ------------------------------------------------------------ verdicts */

static void verdict(test_case *t) {
    rstat worst = R_NONE;
    int worst_s = 0;
    bool passed = false;
    for (int s = 0; s < N_SPECS; s++) {
        if (t->r[s].st >= R_MISMATCH && t->r[s].st > worst) worst = t->r[s].st, worst_s = s;
        if (t->r[s].st == R_PASS) passed = true;
    }
    if (worst >= R_MISMATCH) {
        t->failed = true;
        snprintf(t->fail_kind, sizeof t->fail_kind, "%s", RNAME[worst]);
        snprintf(t->fail_reason, sizeof t->fail_reason, "%s: %s", SPECS[worst_s], t->r[worst_s].reason);
    } else if (t->family && !passed) {
        /* A listed operator that no spec delegated: say why (the wider spec
         * first: it has the integer rows too). */
        int s = N_SPECS - 1;
        t->failed = true;
        snprintf(t->fail_kind, sizeof t->fail_kind, "not_delegated");
        snprintf(t->fail_reason, sizeof t->fail_reason, "%s", t->r[s].reason);
    }
}

/* The exceptions list: "test_name <spaces> reason" per line, # comments. */
typedef struct exc_list {
    size_t n;
    char **names, **reasons;
    bool *used;
} exc_list;

static void load_exceptions(const char *path, exc_list *x) {
    memset(x, 0, sizeof *x);
    size_t size;
    unsigned char *raw = th_read(path, &size);
    if (!raw) return;
    char *buf = malloc(size + 1); /* th_read does not terminate */
    if (!buf) {
        free(raw);
        return;
    }
    memcpy(buf, raw, size);
    buf[size] = 0;
    free(raw);
    size_t cap = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t') line++;
        if (!*line || *line == '#') continue;
        char *sp = line;
        while (*sp && *sp != ' ' && *sp != '\t') sp++;
        char *reason = sp;
        if (*sp) {
            *sp = 0;
            reason = sp + 1;
            while (*reason == ' ' || *reason == '\t') reason++;
        }
        if (x->n == cap) {
            cap = cap ? cap * 2 : 256;
            x->names = realloc(x->names, cap * sizeof *x->names);
            x->reasons = realloc(x->reasons, cap * sizeof *x->reasons);
        }
        x->names[x->n] = strdup(line);
        x->reasons[x->n] = strdup(reason);
        x->n++;
    }
    x->used = calloc(x->n ? x->n : 1, 1);
    free(buf);
}

static const char *find_exception(exc_list *x, const char *name) {
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->names[i], name) == 0) {
            x->used[i] = true;
            return x->reasons[i];
        }
    return NULL;
}

static void free_exceptions(exc_list *x) {
    for (size_t i = 0; i < x->n; i++) free(x->names[i]), free(x->reasons[i]);
    free(x->names);
    free(x->reasons);
    free(x->used);
}

static int write_exceptions(const char *path, const test_case *tests, size_t n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f, "# Documented exceptions of the ONNX node-test acceptance run.\n"
               "# One test per line: the test name, a tab, then why it is not fully\n"
               "# delegated and matching: \"not_delegated: OP: CODE: reason\" (the first\n"
               "# fallback under TOSA-1.0+INT+FP) or \"KIND: SPEC: detail\" for a failure.\n"
               "# Regenerate with\n"
               "#   build/tests/test_onnx_nodes --write-exceptions tests/onnx_node_exceptions.txt\n"
               "# and review the diff: see docs/lowering.md, \"Acceptance\".\n#\n# Counts:");
    /* Counts by reason code (not_delegated) or failure kind. */
    const char *seen[64];
    unsigned cnt[64], n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tests[i].failed) continue;
        const char *key = strcmp(tests[i].fail_kind, "not_delegated") == 0 && tests[i].r[1].code[0]
                              ? tests[i].r[1].code
                              : tests[i].fail_kind;
        unsigned j = 0;
        while (j < n_seen && strcmp(seen[j], key) != 0) j++;
        if (j == n_seen && n_seen < 64) seen[n_seen] = key, cnt[n_seen++] = 0;
        if (j < n_seen) cnt[j]++;
    }
    for (unsigned j = 0; j < n_seen; j++) fprintf(f, "%s %u %s", j ? "," : "", cnt[j], seen[j]);
    fprintf(f, "\n");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tests[i].failed) continue;
        fprintf(f, "%s\t%s: %s\n", tests[i].name, tests[i].fail_kind, tests[i].fail_reason);
        k++;
    }
    fclose(f);
    fprintf(stderr, "wrote %zu exceptions to %s\n", k, path);
    return 0;
}

/* Per-operator table (tools/node_report.sh). */
static void print_table(const test_case *tests, size_t n) {
    printf("%-24s %-22s %5s %7s %7s %8s %6s  %s\n", "operator", "family", "tests", "pass_FP", "pass_IF",
           "fallback", "failed", "first reason (INT+FP)");
    /* operators in order of first appearance in the sorted test list */
    for (size_t i = 0; i < n; i++) {
        const char *op = tests[i].op[0] ? tests[i].op : (tests[i].expanded ? "(expanded)" : "(multi-op)");
        bool first = true;
        for (size_t k = 0; k < i && first; k++) {
            const char *o2 = tests[k].op[0] ? tests[k].op : (tests[k].expanded ? "(expanded)" : "(multi-op)");
            if (strcmp(o2, op) == 0) first = false;
        }
        if (!first) continue;
        unsigned cnt = 0, p0 = 0, p1 = 0, fb = 0, fail = 0;
        const char *reason = "";
        for (size_t k = i; k < n; k++) {
            const char *o2 = tests[k].op[0] ? tests[k].op : (tests[k].expanded ? "(expanded)" : "(multi-op)");
            if (strcmp(o2, op) != 0 || tests[k].skipped) continue;
            cnt++;
            p0 += tests[k].r[0].st == R_PASS;
            p1 += tests[k].r[1].st == R_PASS;
            bool any_pass = tests[k].r[0].st == R_PASS || tests[k].r[1].st == R_PASS;
            if (tests[k].failed && strcmp(tests[k].fail_kind, "not_delegated") != 0) fail++;
            else if (!any_pass) fb++;
            if (!reason[0] && !any_pass)
                reason = tests[k].failed ? tests[k].fail_reason : tests[k].r[1].reason;
        }
        if (!cnt) continue;
        printf("%-24s %-22s %5u %7u %7u %8u %6u  %.110s\n", op, tests[i].family ? tests[i].family : "-", cnt,
               p0, p1, fb, fail, reason);
    }
}

int main(int argc, char **argv) {
    const char *exc_path = CTOSA_SOURCE_DIR "/tests/onnx_node_exceptions.txt";
    const char *write_path = NULL;
    bool verbose = false, table = false, quiet = false;
    int jobs = cpu_count();
    int sample = 1;
    const char *filters[64];
    int n_filters = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = true;
        else if (!strcmp(argv[i], "--table")) table = true;
        else if (!strcmp(argv[i], "-q")) quiet = true;
        else if (!strcmp(argv[i], "--write-exceptions") && i + 1 < argc) write_path = argv[++i];
        else if (!strcmp(argv[i], "--exceptions") && i + 1 < argc) exc_path = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) g_data = argv[++i];
        else if (!strcmp(argv[i], "--extra-spec") && i + 1 < argc) {
            SPECS[N_SPECS] = argv[++i];
            g_n_specs = N_SPECS + 1;
        } else if (!strcmp(argv[i], "-j") && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sample") && i + 1 < argc) sample = atoi(argv[++i]);
        else if (argv[i][0] != '-' && n_filters < 64) filters[n_filters++] = argv[i];
        else {
            fprintf(stderr,
                    "usage: %s [-v] [-q] [--table] [--write-exceptions FILE] [--exceptions "
                    "FILE] [--data DIR] [--extra-spec SPEC] [-j N] [--sample N] "
                    "[SUBSTRING...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (jobs < 1) jobs = 1;
    if (sample < 1) sample = 1;
    if (write_path && (sample != 1 || n_filters)) {
        fprintf(stderr, "--write-exceptions needs the full run (no --sample, no filters)\n");
        return 2;
    }
    for (int s = 0; s < g_n_specs; s++) {
        ctosa_error *e = ctosa_spec_parse(SPECS[s], &g_specs[s]);
        if (e) {
            fprintf(stderr, "%s\n", ctosa_error_message(e));
            return 1;
        }
    }

    DIR *d = opendir(g_data);
    if (!d) th_skip("%s: %s (install Debian's libonnx-testdata)", g_data, strerror(errno));
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "test_", 5) != 0) continue;
        bool keep = n_filters == 0;
        for (int f = 0; f < n_filters && !keep; f++) keep = strstr(de->d_name, filters[f]) != NULL;
        if (!keep) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (!n) th_skip("%s: no tests%s", g_data, n_filters ? " match the filter" : "");
    qsort(names, n, sizeof *names, cmp_str);
    test_case *tests = calloc(n, sizeof *tests);
    size_t n_run = 0;
    for (size_t i = 0; i < n; i++) {
        test_case *t = &tests[i];
        t->name = names[i];
        describe(t);
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/test_data_set_0", g_data, t->name);
        uint64_t bytes = dir_bytes(p);
        if (i % (size_t)sample != 0) {
            t->skipped = true;
            snprintf(t->skip_reason, sizeof t->skip_reason, "sampled out (every %dth)", sample);
        } else if (bytes > MAX_INPUT_BYTES) {
            t->skipped = true;
            snprintf(t->skip_reason, sizeof t->skip_reason, "test data %llu bytes",
                     (unsigned long long)bytes);
        } else n_run++;
    }
    free(names);

    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    fprintf(stderr, "running %zu of %zu node tests from %s, %d at a time%s\n", n_run, n, g_data, jobs,
            sample > 1 ? " (sampled)" : "");
    run_all(tests, n, jobs);
    gettimeofday(&t1, NULL);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_usec - t0.tv_usec) / 1e6;

    exc_list exc;
    load_exceptions(exc_path, &exc);
    unsigned per[MAX_SPECS][R_COUNT] = {{0}};
    unsigned listed = 0, listed_pass = 0, listed_exc = 0, other = 0, other_ok = 0;
    unsigned unexpected = 0, fixed = 0, excepted = 0;
    for (size_t i = 0; i < n; i++) {
        test_case *t = &tests[i];
        if (t->skipped) continue;
        for (int s = 0; s < g_n_specs; s++) per[s][t->r[s].st]++;
        /* The extra spec is report-only: its failures are notes. */
        for (int s = N_SPECS; s < g_n_specs; s++)
            if (t->r[s].st >= R_MISMATCH)
                printf("note: %s under %s (report-only): %s: %s\n", t->name, SPECS[s], RNAME[t->r[s].st],
                       t->r[s].reason);
        verdict(t);
        t->exception = find_exception(&exc, t->name);
        if (t->family) listed++;
        else other++;
        th_checks++;
        /* the list must follow the lowerings: an operator that gains one
         * is held to the same rule as the others */
        if (t->lowered && !t->family) {
            th_failures++;
            unexpected++;
            printf("FAIL %s: %s has a lowering but is missing from LISTED (test_onnx_nodes.c)\n", t->name,
                   t->op);
        }
        if (!t->failed) {
            if (t->family) listed_pass++;
            else other_ok++;
            if (t->exception) {
                fixed++;
                printf("note: %s passes now but is listed as an exception (%s)\n", t->name, t->exception);
            }
        } else if (t->exception) {
            excepted++;
            if (t->family) listed_exc++;
            if (verbose) printf("exception %s: %s: %s\n", t->name, t->fail_kind, t->fail_reason);
        } else {
            unexpected++;
            th_failures++;
            if (!quiet)
                printf("FAIL %s [%s] %s: %s\n", t->name, t->op[0] ? t->op : "-", t->fail_kind,
                       t->fail_reason);
        }
        if (verbose && !t->failed)
            printf("ok   %s [%s] FP:%s INT+FP:%s%s%s\n", t->name, t->op[0] ? t->op : "-", RNAME[t->r[0].st],
                   RNAME[t->r[1].st], g_n_specs > N_SPECS ? " extra:" : "",
                   g_n_specs > N_SPECS ? RNAME[t->r[N_SPECS].st] : "");
        if (verbose && t->failed && g_n_specs > N_SPECS)
            printf("     %s under %s: %s\n", t->name, SPECS[N_SPECS], RNAME[t->r[N_SPECS].st]);
    }

    if (table) print_table(tests, n);
    printf("\n%-16s %5s %8s %8s %9s %8s %11s %10s %12s %5s %5s\n", "spec", "pass", "fallback", "mismatch",
           "run_error", "internal", "lower_error", "accounting", "invalid_tosa", "crash", "tests");
    for (int s = 0; s < g_n_specs; s++) {
        unsigned tot = 0;
        for (int k = R_PASS; k < R_COUNT; k++) tot += per[s][k];
        printf("%-16s %5u %8u %8u %9u %8u %11u %10u %12u %5u %5u\n", SPECS[s], per[s][R_PASS],
               per[s][R_FALLBACK], per[s][R_MISMATCH], per[s][R_RUN_ERROR], per[s][R_INTERNAL],
               per[s][R_LOWER_ERROR], per[s][R_ACCOUNTING], per[s][R_INVALID], per[s][R_CRASH], tot);
    }
    /* Per family of listed operators: tests, delegated+matching per spec,
     * and how many are exceptions. */
    static const char *const FAMILIES[] = {"elementwise", "conv/matmul/norm", "layout/gather/reduce",
                                           "structural",  "recurrent",        NULL};
    printf("\n%-22s %6s %8s %8s %8s %10s %9s\n", "family (listed ops)", "tests", "pass_FP", "pass_IF",
           "pass_any", "exceptions", "failures");
    for (int f = 0; f <= 5; f++) {
        unsigned c = 0, p0 = 0, p1 = 0, pa = 0, ex = 0, fl = 0;
        for (size_t i = 0; i < n; i++) {
            const test_case *t = &tests[i];
            if (t->skipped) continue;
            if (f < 5 ? !(t->family && !strcmp(t->family, FAMILIES[f])) : t->family != NULL) continue;
            c++;
            p0 += t->r[0].st == R_PASS;
            p1 += t->r[1].st == R_PASS;
            pa += !t->failed;
            ex += t->failed && t->exception;
            fl += t->failed && !t->exception;
        }
        printf("%-22s %6u %8u %8u %8u %10u %9u\n", f < 5 ? FAMILIES[f] : "(other, expanded)", c, p0, p1, pa,
               ex, fl);
    }
    printf("\nlisted-operator tests: %u, delegated+matching %u, documented exceptions %u\n", listed,
           listed_pass, listed_exc);
    printf("other tests (unlisted ops, _expanded): %u, clean %u\n", other, other_ok);
    printf("exceptions used %u (list has %zu), listed exceptions that pass now %u\n", excepted, exc.n, fixed);
    printf("%u passed, %u failed (unexpected), %u exceptions, %zu skipped, %.1f s\n", listed_pass + other_ok,
           unexpected, excepted, n - n_run, secs);

    int rc = 0;
    if (write_path) rc = write_exceptions(write_path, tests, n);
    free_exceptions(&exc);
    for (size_t i = 0; i < n; i++) free(tests[i].name);
    free(tests);
    if (rc) return rc;
    return th_finish();
}
