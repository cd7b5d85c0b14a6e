/* bench_lower_llm.c - how fast and how lean `ctosa lower` is on a large
 * LLM-shaped model, measured against copying its weights once.
 *
 *     build/bench/bench_lower_llm [--model DIR | --preset NAME [--int8] [--layers N]]
 *                                 [--spec SPEC]... [--rounds N] [--work DIR]
 *                                 [--ctosa PATH] [--keep]
 *
 * --model DIR  a folder made by tools/models/make_llm.py (model.onnx +
 *              model.bin); without it the model is generated into
 *              WORK/llm-PRESET[-int8] with Debian's /usr/bin/python3
 *              (numpy + onnx) unless that folder already has one.
 * --spec       lowering spec(s), default TOSA-1.1+FP+int64 (fp32) or
 *              TOSA-1.0+INT+FP and TOSA-1.0+INT (int8 models).
 * --rounds     rounds per spec (default 3); figures are best and median.
 * --work       scratch folder (default $TMPDIR or /tmp); outputs and the
 *              cp copy go there and are deleted at the end (--keep keeps
 *              the last round's lowering output).
 *
 * Per round, each step in a fresh child process, so ru_maxrss from wait4()
 * is that step's own peak RSS:
 *   cp      `cp model.bin WORK/cp.bin` (coreutils: copy_file_range)
 *   lower   `ctosa lower model.onnx --spec SPEC -o WORK/out -q`
 * sync() runs before each step, outside the timing; the page cache is warm
 * for both (it cannot be dropped without root), so both measure the copy
 * of cached pages to new file pages, the thing lowering has to do too.
 * After the rounds, on the largest .tosa written: open + verify in this
 * process (ctosa_read_file: map, verify every table, decode the graph),
 * and the `ctosa info` and `ctosa check --spec SPEC` commands as children.
 * Prints per spec: wall time, peak RSS, output sizes, cp time and the
 * median of the per-round lower/cp ratios. Never fails on slowness. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "ctosa/ctosa.h"
#include "bench_clock.h"

#define MAX_SPECS 8
#define MAX_ROUNDS 50

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "bench_lower_llm: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(1);
}

typedef struct run {
    double wall;
    double rss_mib;
    int status;
} run;

/* Runs argv as a child (stdout/stderr to /dev/null unless show); wall time
 * and the child's peak RSS. */
static run run_child(char *const argv[], bool show) {
    run r = {0};
    sync();
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        if (!show) {
            int nul = open("/dev/null", O_WRONLY);
            if (nul >= 0) {
                dup2(nul, 1);
                dup2(nul, 2);
            }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) die("wait4: %s", strerror(errno));
    r.wall = bench_now() - t0;
    r.rss_mib = (double)ru.ru_maxrss / 1024.0;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(const double *v, int n) {
    double t[MAX_ROUNDS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}
static double best(const double *v, int n) {
    double b = v[0];
    for (int i = 1; i < n; i++) b = v[i] < b ? v[i] : b;
    return b;
}

static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void rm_rf(const char *dir) {
    char *argv[] = {"/bin/rm", "-rf", (char *)dir, NULL};
    run_child(argv, true);
}

/* Sum of the sizes of the files in dir; the largest .tosa in big. */
static uint64_t dir_sizes(const char *dir, char *big, size_t nbig, uint64_t *tosa_total, int *n_tosa) {
    DIR *d = opendir(dir);
    uint64_t total = 0, bigsz = 0;
    *tosa_total = 0;
    *n_tosa = 0;
    big[0] = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[2 * PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        uint64_t s = file_size(p);
        total += s;
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".tosa") == 0) {
            *tosa_total += s;
            (*n_tosa)++;
            if (s >= bigsz && strlen(p) < nbig) {
                bigsz = s;
                memcpy(big, p, strlen(p) + 1);
            }
        }
    }
    closedir(d);
    return total;
}

int main(int argc, char **argv) {
    const char *model = NULL, *preset = "1b", *layers = NULL, *work = getenv("TMPDIR");
    const char *specs[MAX_SPECS];
    int n_specs = 0, rounds = 3;
    bool int8 = false, keep = false;
    char ctosa_bin[PATH_MAX] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--model") && more) model = argv[++i];
        else if (!strcmp(a, "--preset") && more) preset = argv[++i];
        else if (!strcmp(a, "--layers") && more) layers = argv[++i];
        else if (!strcmp(a, "--int8")) int8 = true;
        else if (!strcmp(a, "--keep")) keep = true;
        else if (!strcmp(a, "--spec") && more && n_specs < MAX_SPECS) specs[n_specs++] = argv[++i];
        else if (!strcmp(a, "--rounds") && more) rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--work") && more) work = argv[++i];
        else if (!strcmp(a, "--ctosa") && more) snprintf(ctosa_bin, sizeof ctosa_bin, "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: bench_lower_llm [--model DIR | --preset NAME [--int8] [--layers N]] "
                            "[--spec SPEC]... [--rounds N] [--work DIR] [--ctosa PATH] [--keep]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) die("--rounds must be 1..%s", "50");
    if (!work || !work[0]) work = "/tmp";
    if (!ctosa_bin[0]) { /* build/bench/bench_lower_llm -> build/ctosa */
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) die("cannot find myself: %s", strerror(errno));
        self[n] = 0;
        snprintf(ctosa_bin, sizeof ctosa_bin, "%s/../ctosa", dirname(self));
    }
    if (access(ctosa_bin, X_OK) != 0) die("no ctosa binary at %s (use --ctosa)", ctosa_bin);

    char mdir[PATH_MAX], onnx[PATH_MAX + 16], bin[PATH_MAX + 16];
    if (model) {
        snprintf(mdir, sizeof mdir, "%s", model);
    } else {
        snprintf(mdir, sizeof mdir, "%s/llm-%s%s%s%s", work, preset, layers ? "-l" : "", layers ? layers : "",
                 int8 ? "-int8" : "");
    }
    snprintf(onnx, sizeof onnx, "%s/model.onnx", mdir);
    snprintf(bin, sizeof bin, "%s/model.bin", mdir);
    if (!model && (access(onnx, R_OK) != 0 || access(bin, R_OK) != 0)) {
        char script[PATH_MAX + 64], src[PATH_MAX];
        snprintf(src, sizeof src, "%s", __FILE__); /* <src>/bench/bench_lower_llm.c */
        char *d = dirname(dirname(src));
        snprintf(script, sizeof script, "%s/tools/models/make_llm.py", d);
        char *gargv[16];
        int k = 0;
        gargv[k++] = "/usr/bin/python3";
        gargv[k++] = script;
        gargv[k++] = "--preset";
        gargv[k++] = (char *)preset;
        if (layers) {
            gargv[k++] = "--layers";
            gargv[k++] = (char *)layers;
        }
        if (int8) gargv[k++] = "--int8";
        gargv[k++] = "--out";
        gargv[k++] = mdir;
        gargv[k] = NULL;
        printf("generating %s (make_llm.py --preset %s%s%s%s)\n", mdir, preset, layers ? " --layers " : "",
               layers ? layers : "", int8 ? " --int8" : "");
        fflush(stdout);
        run g = run_child(gargv, true);
        if (g.status)
            die("make_llm.py failed (needs /usr/bin/python3 with numpy and onnx): status %s", "!= 0");
        printf("generated in %.1f s, generator peak RSS %.0f MiB\n", g.wall, g.rss_mib);
    }
    uint64_t bin_size = file_size(bin), onnx_size = file_size(onnx);
    if (!bin_size) die("%s: missing or empty", bin);
    if (!n_specs) {
        bool is_int8 = int8 || strstr(mdir, "int8");
        if (is_int8) {
            specs[n_specs++] = "TOSA-1.0+INT+FP";
            specs[n_specs++] = "TOSA-1.0+INT";
        } else {
            specs[n_specs++] = "TOSA-1.1+FP+int64";
        }
    }
    printf("model %s: model.onnx %.1f KB, model.bin %.1f MB; %d round(s) per spec, warm page cache\n", mdir,
           (double)onnx_size / 1e3, (double)bin_size / 1e6, rounds);

    char cpdst[PATH_MAX + 16], outdir[PATH_MAX + 16];
    snprintf(cpdst, sizeof cpdst, "%s/bench_lower_llm.cp.bin", work);
    snprintf(outdir, sizeof outdir, "%s/bench_lower_llm.out", work);
    /* warm the page cache with one untimed copy */
    {
        char *cargv[] = {"/bin/cp", bin, cpdst, NULL};
        run_child(cargv, true);
        unlink(cpdst);
    }
    for (int si = 0; si < n_specs; si++) {
        double cp_t[MAX_ROUNDS], lo_t[MAX_ROUNDS], ratio[MAX_ROUNDS], lo_rss = 0, cp_rss = 0;
        uint64_t total = 0, tosa_total = 0;
        int n_tosa = 0, status = 0;
        char big[PATH_MAX];
        for (int r = 0; r < rounds; r++) {
            rm_rf(outdir);
            char *cargv[] = {"/bin/cp", bin, cpdst, NULL};
            run c = run_child(cargv, true);
            if (c.status) die("cp failed into %s", cpdst);
            unlink(cpdst);
            char *largv[] = {ctosa_bin, "lower", onnx, "--spec", (char *)specs[si], "-o", outdir, "-q", NULL};
            run l = run_child(largv, r == 0);
            status = l.status;
            cp_t[r] = c.wall;
            lo_t[r] = l.wall;
            ratio[r] = l.wall / c.wall;
            lo_rss = l.rss_mib > lo_rss ? l.rss_mib : lo_rss;
            cp_rss = c.rss_mib > cp_rss ? c.rss_mib : cp_rss;
            total = dir_sizes(outdir, big, sizeof big, &tosa_total, &n_tosa);
            if (status > 1) break; /* 1 = some nodes fell back: still a result */
        }
        printf("\n== %s  (ctosa lower exit %d)\n", specs[si], status);
        printf("cp      best %7.3f s  median %7.3f s  %7.0f MB/s  peak RSS %7.1f MiB\n", best(cp_t, rounds),
               median(cp_t, rounds), (double)bin_size / 1e6 / median(cp_t, rounds), cp_rss);
        printf("lower   best %7.3f s  median %7.3f s  %7.0f MB/s  peak RSS %7.1f MiB\n", best(lo_t, rounds),
               median(lo_t, rounds), (double)bin_size / 1e6 / median(lo_t, rounds), lo_rss);
        printf("        all rounds (lower/cp):");
        for (int r = 0; r < rounds; r++) printf(" %.3f/%.3f", lo_t[r], cp_t[r]);
        printf("\nratio   median of per-round lower/cp %.2fx, best/best %.2fx  (target <= 2x; RSS target <= "
               "512 MiB)\n",
               median(ratio, rounds), best(lo_t, rounds) / best(cp_t, rounds));
        printf("output  %.1f MB in total; %d .tosa file(s), %.1f MB\n", (double)total / 1e6, n_tosa,
               (double)tosa_total / 1e6);
        if (big[0]) {
            double t0 = bench_now();
            ctosa_graph *g = NULL;
            ctosa_error *e = ctosa_read_file(big, NULL, &g);
            double t_open = bench_now() - t0;
            printf("open    %s: ctosa_read_file (map + verify + decode) %.1f ms%s%s\n", big, t_open * 1e3,
                   e ? ": " : "", e ? ctosa_error_message(e) : "");
            ctosa_error_free(e);
            ctosa_graph_free(g);
            char *iargv[] = {ctosa_bin, "info", big, NULL};
            run inf = run_child(iargv, false);
            char *kargv[] = {ctosa_bin, "check", big, "--spec", (char *)specs[si], NULL};
            run chk = run_child(kargv, false);
            printf("info    %.3f s (exit %d, peak RSS %.1f MiB)\n", inf.wall, inf.status, inf.rss_mib);
            printf("check   %.3f s (exit %d, peak RSS %.1f MiB)  (targets: open < 100 ms, check < 5 s)\n",
                   chk.wall, chk.status, chk.rss_mib);
        }
        if (!keep || si + 1 < n_specs) rm_rf(outdir);
    }
    return 0;
}
