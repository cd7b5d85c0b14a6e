/* bench_serialize.c - how fast and how lean the TOSA writer (and reader) are.
 *
 *     build/bench/bench_serialize [DIR [REPEATS]]   (DIR default: $TMPDIR or /tmp,
 *                                                    REPEATS default 5)
 *
 * Graph: 200 int8 constants totalling 1 GiB (each with a CONST op) plus a
 * chain of 2000 ADD ops on [1,16] int32 tensors. Steps,
 * each in a fresh child process so that peak RSS is per step:
 *
 *   cp        `cp` of the 1 GiB constants file (the yardstick)
 *   write-mem constants in one malloc'd buffer, borrowed by the graph
 *             (ctosa_tensor_set_data copy=false), ctosa_write_file
 *   write-file constants as byte ranges of the 1 GiB file
 *             (ctosa_tensor_set_data_file), ctosa_write_file
 *   read      ctosa_read_file (map + verify + decode) and a walk over every
 *             tensor (names, shapes, data pointers); then, separately, the
 *             same plus a checksum of every constant byte
 *
 * Prints wall time, MB/s and peak RSS (ru_maxrss of the child) per step. The
 * page cache is warm for every step (the source file was just written) and
 * sync() runs between steps, outside the timings. All files are deleted at
 * the end. Not a test: it never fails on slowness, it reports. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctosa/ctosa.h"
#include "bench_clock.h"

#define N_CONST 200
#define N_ADD 2000
#define TOTAL (1ull << 30)
#define PER (TOTAL / N_CONST) /* 5,368,709 bytes */

static char dir[1024], src[1100];

static void die(const char *what, ctosa_error *e) { bench_die("bench_serialize", what, e); }

/* The graph; data from mem (borrowed) when mem != NULL, else from src. */
static ctosa_graph *build(const uint8_t *mem) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    ctosa_error *e;
    if ((e = ctosa_graph_create(CTOSA_VERSION_1_0, &g)) || (e = ctosa_graph_add_region(g, "main", &r)) ||
        (e = ctosa_region_add_block(g, r, "main", &b)))
        die("build", e);
    char name[64], name2[64];
    for (int i = 0; i < N_CONST; i++) {
        snprintf(name, sizeof name, "const_%d", i);
        int32_t n = (int32_t)PER;
        ctosa_tensor *t;
        const char *out[] = {name};
        if ((e = ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_INT8, 1, &n, &t)) ||
            (e = mem ? ctosa_tensor_set_data(g, t, mem + (uint64_t)i * PER, PER, false)
                     : ctosa_tensor_set_data_file(g, t, src, -1, (uint64_t)i * PER, PER)) ||
            (e = ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL)))
            die("build", e);
    }
    int32_t shp[2] = {1, 16};
    for (int i = 0; i <= N_ADD; i++) {
        snprintf(name, sizeof name, "act_%d", i);
        if ((e = ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_INT32, 2, shp, NULL))) die("build", e);
    }
    for (int i = 0; i < N_ADD; i++) {
        snprintf(name, sizeof name, "act_%d", i);
        snprintf(name2, sizeof name2, "act_%d", i + 1);
        const char *in[] = {name, name}, *out[] = {name2};
        if ((e = ctosa_block_add_op(g, b, CTOSA_OP_ADD, 2, in, 1, out, NULL, NULL))) die("build", e);
    }
    if ((e = ctosa_block_add_input(g, b, "act_0")) || (e = ctosa_block_add_output(g, b, "act_2000")))
        die("build", e);
    return g;
}

/* Result a child sends back through a pipe. */
typedef struct step_result {
    double seconds; /* the timed part */
    double extra;   /* untimed preparation (e.g. loading constants) */
    uint64_t bytes; /* bytes produced/consumed */
    uint64_t check; /* checksum or count, for the report */
    int ok;
} step_result;

typedef void (*step_fn)(step_result *r, const char *arg);

/* Runs fn in a child; returns its result and peak RSS in KiB. */
static step_result run_step(step_fn fn, const char *arg, long *maxrss_kib) {
    sync();
    int pfd[2];
    if (pipe(pfd) != 0) die("pipe", NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid == 0) {
        close(pfd[0]);
        step_result r = {0};
        fn(&r, arg);
        if (write(pfd[1], &r, sizeof r) != (ssize_t)sizeof r) _exit(3);
        _exit(r.ok ? 0 : 2);
    }
    close(pfd[1]);
    step_result r = {0};
    ssize_t n = read(pfd[0], &r, sizeof r);
    close(pfd[0]);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) die("wait4", NULL);
    if (n != (ssize_t)sizeof r || !WIFEXITED(st) || WEXITSTATUS(st) != 0) r.ok = 0;
    *maxrss_kib = ru.ru_maxrss;
    return r;
}

static void step_cp(step_result *r, const char *out) {
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, out);
    double t0 = bench_now();
    /* exec directly so the measured RSS is cp's own */
    pid_t pid = fork();
    if (pid == 0) {
        execlp("cp", "cp", src, out, (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    wait4(pid, &st, 0, &ru);
    r->seconds = bench_now() - t0;
    r->bytes = (uint64_t)N_CONST * PER;
    r->check = (uint64_t)ru.ru_maxrss;
    r->ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void step_write_mem(step_result *r, const char *out) {
    double t0 = bench_now();
    uint8_t *mem = malloc(TOTAL);
    int fd = open(src, O_RDONLY);
    if (!mem || fd < 0) die("load", NULL);
    for (uint64_t off = 0; off < TOTAL;) {
        ssize_t n = pread(fd, mem + off, TOTAL - off > (1u << 26) ? (1u << 26) : TOTAL - off, (off_t)off);
        if (n <= 0) die("load", NULL);
        off += (uint64_t)n;
    }
    close(fd);
    ctosa_graph *g = build(mem);
    double t1 = bench_now();
    ctosa_error *e = ctosa_write_file(g, out, NULL);
    double t2 = bench_now();
    if (e) die("write", e);
    struct stat st;
    stat(out, &st);
    r->extra = t1 - t0;
    r->seconds = t2 - t1;
    r->bytes = (uint64_t)st.st_size;
    r->ok = 1;
    ctosa_graph_free(g);
    free(mem);
}

static void step_write_file(step_result *r, const char *out) {
    double t0 = bench_now();
    ctosa_graph *g = build(NULL);
    double t1 = bench_now();
    ctosa_error *e = ctosa_write_file(g, out, NULL);
    double t2 = bench_now();
    if (e) die("write", e);
    struct stat st;
    stat(out, &st);
    r->extra = t1 - t0;
    r->seconds = t2 - t1;
    r->bytes = (uint64_t)st.st_size;
    r->ok = 1;
    ctosa_graph_free(g);
}

static void read_common(step_result *r, const char *in, bool touch) {
    double t0 = bench_now();
    ctosa_graph *g;
    ctosa_error *e = ctosa_read_file(in, NULL, &g);
    if (e) die("read", e);
    uint64_t n = 0, bytes = 0, sum = 0;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        const ctosa_region *rg = ctosa_graph_region(g, ri);
        for (uint32_t bi = 0; bi < rg->n_blocks; bi++) {
            const ctosa_block *b = rg->blocks[bi];
            for (uint32_t i = 0; i < b->n_tensors; i++) {
                const ctosa_tensor *t = b->tensors[i];
                n += strlen(t->name) + t->rank;
                for (uint32_t d = 0; d < t->rank; d++) n += (uint64_t)t->shape[d];
                if (t->data.kind == CTOSA_DATA_MEMORY) {
                    bytes += t->data.size;
                    if (touch) {
                        const uint8_t *p = t->data.ptr;
                        uint64_t s = 0;
                        for (uint64_t k = 0; k < t->data.size; k++) s += p[k];
                        sum += s;
                    }
                }
            }
            n += b->n_ops;
        }
    }
    double t1 = bench_now();
    r->seconds = t1 - t0;
    r->bytes = bytes;
    r->check = touch ? sum : n;
    r->ok = bytes == (uint64_t)N_CONST * PER;
    ctosa_graph_free(g);
}

static void step_read(step_result *r, const char *in) { read_common(r, in, false); }
static void step_read_touch(step_result *r, const char *in) { read_common(r, in, true); }

static bool same_files(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    static uint8_t ba[1 << 20], bb[1 << 20];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na) != 0) same = false;
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static void report(const char *name, const step_result *r, long rss_kib, double cp_s) {
    double mb = r->bytes / 1e6;
    printf("%-11s %8.3f s %9.0f MB/s  peak RSS %7.1f MiB", name, r->seconds,
           r->seconds > 0 ? mb / r->seconds : 0, rss_kib / 1024.0);
    if (cp_s > 0) printf("  %.2fx cp", r->seconds / cp_s);
    if (r->extra > 0) printf("  (prep %.2f s untimed)", r->extra);
    if (!r->ok) printf("  FAILED");
    printf("\n");
}

static const char *loadavg(void) {
    static char buf[128] = "?\n";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) strcpy(buf, "?\n");
        fclose(f);
    }
    return buf;
}

/* Median (by time) of n results. */
static step_result median(const step_result *rs, int n) {
    int idx[16];
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && rs[idx[j]].seconds < rs[idx[j - 1]].seconds; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    return rs[idx[n / 2]];
}

static void summary(const char *name, const step_result *rs, const long *rss, int n, double cp_s,
                    step_result *med, long *max_rss) {
    *max_rss = 0;
    for (int i = 0; i < n; i++)
        if (rss[i] > *max_rss) *max_rss = rss[i];
    *med = median(rs, n);
    report(name, med, *max_rss, cp_s);
    double best = rs[0].seconds;
    for (int i = 1; i < n; i++)
        if (rs[i].seconds < best) best = rs[i].seconds;
    printf("            best %.3f s, all [", best);
    for (int i = 0; i < n; i++) printf("%s%.3f", i ? " " : "", rs[i].seconds);
    printf("] s\n");
}

static void step_write_file_keep(const char *a_out, const char *b_out) {
    bool same = same_files(a_out, b_out);
    struct stat st;
    stat(b_out, &st);
    printf("write-mem and write-file outputs identical: %s (%lld bytes)\n", same ? "yes" : "NO",
           (long long)st.st_size);
    unlink(a_out);
}

int main(int argc, char **argv) {
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 15) reps = 5;
    const char *base = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/ctosa-bench-XXXXXX", base);
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    snprintf(src, sizeof src, "%s/consts.bin", dir);
    char cp_out[1200], a_out[1200], b_out[1200];
    snprintf(cp_out, sizeof cp_out, "%s/cp.bin", dir);
    snprintf(a_out, sizeof a_out, "%s/mem.tosa", dir);
    snprintf(b_out, sizeof b_out, "%s/file.tosa", dir);

    /* 1 GiB of pseudo-random constants (xorshift; incompressible enough). */
    int fd = open(src, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0) die(src, NULL);
    uint64_t *chunk = malloc(1 << 23), x = 0x9E3779B97F4A7C15ull;
    for (uint64_t off = 0; off < TOTAL; off += 1 << 23) {
        for (size_t i = 0; i < (1 << 23) / 8; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk[i] = x;
        }
        if (write(fd, chunk, 1 << 23) != 1 << 23) die("write consts", NULL);
    }
    free(chunk);
    close(fd);

    printf("bench_serialize: %d int8 constants (%llu bytes) + %d ADD ops, files in %s\n", N_CONST,
           (unsigned long long)TOTAL, N_ADD, dir);
    printf("load average at the start: %s", loadavg());
    printf("cp, write-mem and write-file run in turn, %d rounds, each in a fresh process; "
           "the median is shown, all times in brackets\n",
           reps);
    step_result rc[16], ra[16], rb[16], rr[16], rt[16];
    long sc[16], sa[16], sb[16], sr[16], st_[16];
    for (int i = 0; i < reps; i++) {
        rc[i] = run_step(step_cp, cp_out, &sc[i]);
        sc[i] = (long)rc[i].check; /* cp ran as a grandchild: its own peak */
        unlink(cp_out);
        /* like cp, start without an old output to replace */
        unlink(a_out);
        unlink(b_out);
        ra[i] = run_step(step_write_mem, a_out, &sa[i]);
        rb[i] = run_step(step_write_file, b_out, &sb[i]);
    }
    step_result cp, a, b, rd, rsum;
    long rss_a, rss_b, rss;
    summary("cp", rc, sc, reps, 0, &cp, &rss);
    summary("write-mem", ra, sa, reps, cp.seconds, &a, &rss_a);
    summary("write-file", rb, sb, reps, cp.seconds, &b, &rss_b);
    /* Rounds are close in time, so the ratio within a round is less
     * exposed to load from other processes than the ratio of medians. */
    double qa[16], qb[16];
    for (int i = 0; i < reps; i++) {
        qa[i] = ra[i].seconds / rc[i].seconds;
        qb[i] = rb[i].seconds / rc[i].seconds;
    }
    for (int i = 1; i < reps; i++)
        for (int j = i; j > 0; j--) {
            double t;
            if (qa[j] < qa[j - 1]) t = qa[j], qa[j] = qa[j - 1], qa[j - 1] = t;
            if (qb[j] < qb[j - 1]) t = qb[j], qb[j] = qb[j - 1], qb[j - 1] = t;
        }
    double ratio_a = qa[reps / 2], ratio_b = qb[reps / 2];
    printf("median of per-round ratios to cp: write-mem %.2fx, write-file %.2fx\n", ratio_a, ratio_b);
    step_write_file_keep(a_out, b_out);
    for (int i = 0; i < reps; i++) {
        rr[i] = run_step(step_read, b_out, &sr[i]);
        rt[i] = run_step(step_read_touch, b_out, &st_[i]);
    }
    summary("read+walk", rr, sr, reps, 0, &rd, &rss);
    summary("read+sum", rt, st_, reps, 0, &rsum, &rss);
    printf("load average at the end: %s", loadavg());
    printf("targets: write <= 1.5x cp (median per-round ratio): mem %s, file %s; "
           "RSS mem <= 1 GiB + 64 MiB: %s; RSS file <= 64 MiB: %s\n",
           ratio_a <= 1.5 ? "met" : "MISSED", ratio_b <= 1.5 ? "met" : "MISSED",
           rss_a <= (long)((TOTAL >> 10) + 64 * 1024) ? "met" : "MISSED",
           rss_b <= 64 * 1024 ? "met" : "MISSED");
    unlink(b_out);
    unlink(src);
    rmdir(dir);
    return 0;
}
