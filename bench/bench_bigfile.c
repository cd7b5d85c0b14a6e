/* bench_bigfile.c - the tools on a TOSA file over 2 GB shaped like a lowered
 * 1B-parameter LLM.
 *
 *     build-rel/bench/bench_bigfile [DIR] [--keep] [--layers N] [--hidden H]
 *                 [--ffn F] [--vocab V] [--tokens T] [--ctosa PATH] [--full]
 *                 [--rounds N] [--spec SPEC]
 *     build-rel/bench/bench_bigfile --make FILE.tosa [--external] [same sizes]
 *
 * DIR defaults to $TMPDIR or /tmp; a fresh ctosa-bigfile-XXXXXX folder is
 * made there and removed at the end unless --keep. --make only writes the
 * model to FILE.tosa (and FILE.tokens.npy / FILE.mask.npy beside it) and
 * exits: tests/cli_bigfile.sh uses that (--external forces the external
 * layout for a small model).
 *
 * The graph (TOSA 1.0, fp32) is what a lowered decoder-only LLM looks like:
 * an embedding table read by GATHER with the int32 token ids, then per
 * layer an RMSNorm by primitives (MUL, REDUCE_SUM, MUL by 1/H, ADD eps,
 * RSQRT, MUL, MUL by gamma), q/k/v/o MATMULs with [1,H,H] weights,
 * single-head causal attention (TRANSPOSE, MATMUL, scale, ADD the mask
 * input, softmax by REDUCE_MAX/SUB/EXP/REDUCE_SUM/RECIPROCAL/MUL), the
 * residual ADD, a second RMSNorm and a SiLU-gated MLP (gate/up [1,H,F],
 * down [1,F,H], SIGMOID, MUL), and finally an RMSNorm and the [1,H,V]
 * output projection to "logits". Defaults H=2048 F=5632 V=32000 L=16 T=8:
 * 953M parameters, 3.8 GB of fp32 weights, every weight a CONST tensor.
 *
 * Weights are byte ranges of one pool file of pseudo-random floats (uniform
 * in +-0.04; 512 MiB, or 4x the largest weight when that is less) that the
 * graph refers to with
 * ctosa_tensor_set_data_file, so building costs little memory and the
 * writer streams them with copy_file_range. Steps, each in its own process
 * (peak RSS per step):
 *
 *   write      build the graph and ctosa_write_file (external layout: the
 *              file passes 2 GiB)
 *   open       ctosa_read_file (map + full verify + decode), best of rounds
 *   info       `ctosa info FILE`
 *   check      `ctosa check FILE --spec TOSA-1.0+FP`
 *   dump       `ctosa dump FILE > /dev/null`
 *   run-slice  `ctosa run FILE --input tokens=... --input mask=... --outputs
 *              l0.out`: the embedding GATHER and layer 0 only
 *   run-q      `ctosa run FILE --input tokens=... --outputs l0.attn.q`: the
 *              GATHER, the first RMSNorm and the q projection (the mask
 *              input is not needed, so not given)
 *   open-cold, slice-cold  the same after dropping the file from the page
 *              cache: only the flatbuffer part / the slice's weights are read
 *   run-full   (with --full) `ctosa run` of the whole graph
 *
 * Not a test: it prints figures and never fails on slowness. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
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

/* The pool of weight bytes: 4x the largest weight, at least 1 MiB, at
 * most 512 MiB (so small models for tests write little). */
static uint64_t POOL_BYTES = UINT64_C(512) << 20;

typedef struct cfg {
    int layers, hidden, ffn, vocab, tokens;
    bool external; /* force the external layout (small files) */
} cfg;

static char pool_path[1200];

static void die(const char *what, ctosa_error *e) { bench_die("bench_bigfile", what, e); }

/* ----------------------------------------------------------- the graph */

typedef struct gb {
    ctosa_graph *g;
    ctosa_block *b;
    uint64_t n_weights, params;
} gb;

static void tensor(gb *s, const char *name, ctosa_dtype dt, uint32_t rank, const int32_t *shape) {
    ctosa_error *e = ctosa_block_add_tensor(s->g, s->b, name, dt, rank, shape, NULL);
    if (e) die(name, e);
}

static void op(gb *s, ctosa_op_kind k, uint32_t n, const char *const *in, const char *out,
               const ctosa_attr *a) {
    const char *o[] = {out};
    ctosa_error *e = ctosa_block_add_op(s->g, s->b, k, n, in, 1, o, a, NULL);
    if (e) die(out, e);
}

/* A small constant from memory (copied into the graph). */
static void const_mem(gb *s, const char *name, ctosa_dtype dt, uint32_t rank, const int32_t *shape,
                      const void *p, uint64_t n) {
    ctosa_tensor *t;
    ctosa_error *e = ctosa_block_add_tensor(s->g, s->b, name, dt, rank, shape, &t);
    if (!e) e = ctosa_tensor_set_data(s->g, t, p, n, true);
    if (e) die(name, e);
    op(s, CTOSA_OP_CONST, 0, NULL, name, NULL);
}

/* An fp32 weight [1,rows,cols] taken from the pool file: a different
 * 64-byte aligned window for each weight. */
static void weight(gb *s, const char *name, int32_t rows, int32_t cols) {
    int32_t shp[3] = {1, rows, cols};
    uint64_t bytes = (uint64_t)rows * (uint64_t)cols * 4;
    if (bytes > POOL_BYTES) die("weight larger than the pool", NULL);
    uint64_t span = POOL_BYTES - bytes, h = (s->n_weights + 1) * UINT64_C(0x9E3779B97F4A7C15);
    uint64_t off = span ? ((h >> 11) % span) & ~UINT64_C(63) : 0;
    ctosa_tensor *t;
    ctosa_error *e = ctosa_block_add_tensor(s->g, s->b, name, CTOSA_DTYPE_FP32, 3, shp, &t);
    if (!e) e = ctosa_tensor_set_data_file(s->g, t, pool_path, -1, off, bytes);
    if (e) die(name, e);
    op(s, CTOSA_OP_CONST, 0, NULL, name, NULL);
    s->n_weights++;
    s->params += (uint64_t)rows * (uint64_t)cols;
}

/* Activation [1,T,C] (name is copied by the builder). */
static const char *act(gb *s, char *buf, const char *fmt, int l, int32_t t, int32_t c) {
    snprintf(buf, 128, fmt, l);
    int32_t shp[3] = {1, t, c};
    tensor(s, buf, CTOSA_DTYPE_FP32, 3, shp);
    return buf;
}

static void binary(gb *s, ctosa_op_kind k, const char *a, const char *b, const char *out) {
    if (k == CTOSA_OP_MUL) {
        const char *in[] = {a, b, "shift0"};
        op(s, k, 3, in, out, NULL);
    } else {
        const char *in[] = {a, b};
        op(s, k, 2, in, out, NULL);
    }
}

static void unary(gb *s, ctosa_op_kind k, const char *a, const char *out) {
    const char *in[] = {a};
    op(s, k, 1, in, out, NULL);
}

static void matmul(gb *s, const char *a, const char *b, const char *out) {
    const char *in[] = {a, b, "zp0", "zp0"};
    op(s, CTOSA_OP_MATMUL, 4, in, out, NULL);
}

static void reduce(gb *s, ctosa_op_kind k, const char *a, const char *out) {
    ctosa_attr at = {0};
    at.axis = 2;
    const char *in[] = {a};
    op(s, k, 1, in, out, &at);
}

/* RMSNorm of x [1,T,H] by primitives; pfx names the intermediates. */
static void rmsnorm(gb *s, const cfg *c, int l, const char *pfx, const char *x, const char *out) {
    char sq[128], ss[128], ms[128], me[128], r[128], xn[128], g[128], fmt[96];
    int32_t T = c->tokens, H = c->hidden;
    snprintf(fmt, sizeof fmt, "l%%d.%s.sq", pfx);
    act(s, sq, fmt, l, T, H);
    snprintf(fmt, sizeof fmt, "l%%d.%s.sumsq", pfx);
    act(s, ss, fmt, l, T, 1);
    snprintf(fmt, sizeof fmt, "l%%d.%s.mean", pfx);
    act(s, ms, fmt, l, T, 1);
    snprintf(fmt, sizeof fmt, "l%%d.%s.meaneps", pfx);
    act(s, me, fmt, l, T, 1);
    snprintf(fmt, sizeof fmt, "l%%d.%s.rstd", pfx);
    act(s, r, fmt, l, T, 1);
    snprintf(fmt, sizeof fmt, "l%%d.%s.xn", pfx);
    act(s, xn, fmt, l, T, H);
    snprintf(g, sizeof g, "l%d.%s.gamma", l, pfx);
    int32_t gs[3] = {1, 1, H};
    float *ones = malloc((size_t)H * 4);
    for (int i = 0; i < H; i++) ones[i] = 1.0f + 0.001f * (float)(i % 7);
    const_mem(s, g, CTOSA_DTYPE_FP32, 3, gs, ones, (uint64_t)H * 4);
    free(ones);
    binary(s, CTOSA_OP_MUL, x, x, sq);
    reduce(s, CTOSA_OP_REDUCE_SUM, sq, ss);
    binary(s, CTOSA_OP_MUL, ss, "inv_hidden", ms);
    binary(s, CTOSA_OP_ADD, ms, "eps", me);
    unary(s, CTOSA_OP_RSQRT, me, r);
    binary(s, CTOSA_OP_MUL, x, r, xn);
    binary(s, CTOSA_OP_MUL, xn, g, out);
}

static ctosa_graph *build_graph(const cfg *c, uint64_t *params) {
    gb s = {0};
    ctosa_region *r;
    ctosa_error *e;
    if ((e = ctosa_graph_create(CTOSA_VERSION_1_0, &s.g)) || (e = ctosa_graph_add_region(s.g, "main", &r)) ||
        (e = ctosa_region_add_block(s.g, r, "main", &s.b)))
        die("build", e);
    int32_t T = c->tokens, H = c->hidden, F = c->ffn, V = c->vocab;
    int32_t tok_shape[2] = {1, T}, mask_shape[3] = {1, T, T}, one[1] = {1}, s111[3] = {1, 1, 1};
    tensor(&s, "tokens", CTOSA_DTYPE_INT32, 2, tok_shape);
    tensor(&s, "mask", CTOSA_DTYPE_FP32, 3, mask_shape);
    if ((e = ctosa_block_add_input(s.g, s.b, "tokens")) || (e = ctosa_block_add_input(s.g, s.b, "mask")))
        die("build", e);
    float zero = 0, inv_h = 1.0f / (float)H, eps = 1e-5f, scale = 1.0f / sqrtf((float)H);
    int8_t shift0 = 0;
    const_mem(&s, "zp0", CTOSA_DTYPE_FP32, 1, one, &zero, 4);
    const_mem(&s, "shift0", CTOSA_DTYPE_INT8, 1, one, &shift0, 1);
    const_mem(&s, "inv_hidden", CTOSA_DTYPE_FP32, 3, s111, &inv_h, 4);
    const_mem(&s, "eps", CTOSA_DTYPE_FP32, 3, s111, &eps, 4);
    const_mem(&s, "attn_scale", CTOSA_DTYPE_FP32, 3, s111, &scale, 4);
    weight(&s, "embed.table", V, H);
    char x[128], buf[128];
    act(&s, x, "embed%.0d", 0, T, H);
    const char *gin[] = {"embed.table", "tokens"};
    op(&s, CTOSA_OP_GATHER, 2, gin, x, NULL);
    for (int l = 0; l < c->layers; l++) {
        char h1[128], q[128], k[128], v[128], kt[128], sc[128], ss[128], sm[128], mx[128];
        char sh[128], ex[128], sum[128], rs[128], p[128], at[128], o[128], x1[128], h2[128];
        char gt[128], up[128], sg[128], si[128], gu[128], dn[128], out[128], w[128];
        act(&s, h1, "l%d.attn_norm.out", l, T, H);
        rmsnorm(&s, c, l, "attn_norm", x, h1);
        const char *names[4] = {"q", "k", "v", "o"};
        char *dst[4] = {q, k, v, o};
        for (int i = 0; i < 3; i++) {
            snprintf(w, sizeof w, "l%d.attn.w%s", l, names[i]);
            weight(&s, w, H, H);
            snprintf(buf, sizeof buf, "l%%d.attn.%s", names[i]);
            act(&s, dst[i], buf, l, T, H);
            matmul(&s, h1, w, dst[i]);
        }
        snprintf(kt, sizeof kt, "l%d.attn.kT", l);
        int32_t kts[3] = {1, H, T};
        tensor(&s, kt, CTOSA_DTYPE_FP32, 3, kts);
        ctosa_attr ta = {0};
        int32_t perms[3] = {0, 2, 1};
        ta.perms = (ctosa_i32s){perms, 3};
        const char *tin[] = {k};
        op(&s, CTOSA_OP_TRANSPOSE, 1, tin, kt, &ta);
        act(&s, sc, "l%d.attn.scores", l, T, T);
        matmul(&s, q, kt, sc);
        act(&s, ss, "l%d.attn.scaled", l, T, T);
        binary(&s, CTOSA_OP_MUL, sc, "attn_scale", ss);
        act(&s, sm, "l%d.attn.masked", l, T, T);
        binary(&s, CTOSA_OP_ADD, ss, "mask", sm);
        act(&s, mx, "l%d.attn.max", l, T, 1);
        reduce(&s, CTOSA_OP_REDUCE_MAX, sm, mx);
        act(&s, sh, "l%d.attn.shifted", l, T, T);
        binary(&s, CTOSA_OP_SUB, sm, mx, sh);
        act(&s, ex, "l%d.attn.exp", l, T, T);
        unary(&s, CTOSA_OP_EXP, sh, ex);
        act(&s, sum, "l%d.attn.sum", l, T, 1);
        reduce(&s, CTOSA_OP_REDUCE_SUM, ex, sum);
        act(&s, rs, "l%d.attn.rsum", l, T, 1);
        unary(&s, CTOSA_OP_RECIPROCAL, sum, rs);
        act(&s, p, "l%d.attn.probs", l, T, T);
        binary(&s, CTOSA_OP_MUL, ex, rs, p);
        act(&s, at, "l%d.attn.ctx", l, T, H);
        matmul(&s, p, v, at);
        snprintf(w, sizeof w, "l%d.attn.wo", l);
        weight(&s, w, H, H);
        act(&s, o, "l%d.attn.out", l, T, H);
        matmul(&s, at, w, o);
        act(&s, x1, "l%d.resid1", l, T, H);
        binary(&s, CTOSA_OP_ADD, x, o, x1);
        act(&s, h2, "l%d.mlp_norm.out", l, T, H);
        rmsnorm(&s, c, l, "mlp_norm", x1, h2);
        snprintf(w, sizeof w, "l%d.mlp.wgate", l);
        weight(&s, w, H, F);
        act(&s, gt, "l%d.mlp.gate", l, T, F);
        matmul(&s, h2, w, gt);
        snprintf(w, sizeof w, "l%d.mlp.wup", l);
        weight(&s, w, H, F);
        act(&s, up, "l%d.mlp.up", l, T, F);
        matmul(&s, h2, w, up);
        act(&s, sg, "l%d.mlp.sigmoid", l, T, F);
        unary(&s, CTOSA_OP_SIGMOID, gt, sg);
        act(&s, si, "l%d.mlp.silu", l, T, F);
        binary(&s, CTOSA_OP_MUL, gt, sg, si);
        act(&s, gu, "l%d.mlp.gated", l, T, F);
        binary(&s, CTOSA_OP_MUL, si, up, gu);
        snprintf(w, sizeof w, "l%d.mlp.wdown", l);
        weight(&s, w, F, H);
        act(&s, dn, "l%d.mlp.down", l, T, H);
        matmul(&s, gu, w, dn);
        act(&s, out, "l%d.out", l, T, H);
        binary(&s, CTOSA_OP_ADD, x1, dn, out);
        snprintf(x, sizeof x, "%s", out);
    }
    char fin[128], logits[128];
    act(&s, fin, "final_norm.out%.0d", 0, T, H);
    rmsnorm(&s, c, c->layers, "final_norm", x, fin);
    weight(&s, "lm_head", H, V);
    act(&s, logits, "logits%.0d", 0, T, V);
    matmul(&s, fin, "lm_head", logits);
    if ((e = ctosa_block_add_output(s.g, s.b, "logits"))) die("build", e);
    if (params) *params = s.params;
    return s.g;
}

/* Writes the pool of pseudo-random weights (uniform in +-0.04). */
static void make_pool(const char *path) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die(path, NULL);
    size_t chunk = (size_t)8 << 20;
    float *buf = malloc(chunk);
    if (!buf) die("malloc", NULL);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint64_t off = 0; off < POOL_BYTES; off += chunk) {
        if (chunk > POOL_BYTES - off) chunk = (size_t)(POOL_BYTES - off);
        for (size_t i = 0; i < chunk / 4; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = ((float)(x >> 40) / (float)(1 << 24) * 2.0f - 1.0f) * 0.04f;
        }
        if (write(fd, buf, chunk) != (ssize_t)chunk) die("write pool", NULL);
    }
    free(buf);
    close(fd);
}

/* .npy v1.0 writer for the two inputs (header padded to 64 bytes). */
static void write_npy(const char *path, const char *descr, const int32_t *shape, int rank, const void *data,
                      size_t bytes) {
    char hdr[128], dims[64] = "";
    size_t n = 0;
    for (int i = 0; i < rank; i++) n += (size_t)snprintf(dims + n, sizeof dims - n, "%d, ", shape[i]);
    if (rank > 1) dims[n - 2] = 0; /* "1, 8" */
    int len =
        snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) die(path, NULL);
    uint16_t hl = (uint16_t)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    if (fclose(f) != 0) die(path, NULL);
}

static void write_inputs(const cfg *c, const char *tok_path, const char *mask_path) {
    int32_t T = c->tokens;
    int32_t *tok = malloc((size_t)T * 4);
    float *mask = malloc((size_t)T * (size_t)T * 4);
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 7919 + 13) % c->vocab);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) mask[i * T + j] = j <= i ? 0.0f : -1e9f;
    int32_t ts[2] = {1, T}, ms[3] = {1, T, T};
    write_npy(tok_path, "<i4", ts, 2, tok, (size_t)T * 4);
    write_npy(mask_path, "<f4", ms, 3, mask, (size_t)T * (size_t)T * 4);
    free(tok);
    free(mask);
}

/* ------------------------------------------------------------ steps */

typedef struct result {
    double seconds;
    uint64_t bytes;
    long rss_kib;
    int status; /* exit status (0 ok) */
} result;

static char tosa_path[1200], tok_path[1300], mask_path[1300], out_path[1300];
static cfg C;

/* Runs fn in a child process: wall time and peak RSS of the child. */
static result in_child(void (*fn)(result *)) {
    int pfd[2];
    if (pipe(pfd) != 0) die("pipe", NULL);
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid == 0) {
        close(pfd[0]);
        result r = {0};
        fn(&r);
        if (write(pfd[1], &r, sizeof r) != (ssize_t)sizeof r) _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    result r = {0};
    ssize_t n = read(pfd[0], &r, sizeof r);
    close(pfd[0]);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) die("wait4", NULL);
    if (n != (ssize_t)sizeof r || !WIFEXITED(st) || WEXITSTATUS(st) != 0) r.status = -1;
    if (r.seconds == 0) r.seconds = bench_now() - t0;
    r.rss_kib = ru.ru_maxrss;
    return r;
}

/* Runs a command (stdout to out_file or /dev/null): wall time, RSS, exit. */
static result spawn(char *const argv[], const char *out_file) {
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid == 0) {
        int fd = open(out_file ? out_file : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) die("wait4", NULL);
    result r = {0};
    r.seconds = bench_now() - t0;
    r.rss_kib = ru.ru_maxrss;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (out_file) {
        struct stat sb;
        if (stat(out_file, &sb) == 0) r.bytes = (uint64_t)sb.st_size;
    }
    return r;
}

static void step_write(result *r) {
    double t0 = bench_now();
    uint64_t params;
    ctosa_graph *g = build_graph(&C, &params);
    ctosa_error *e = ctosa_write_file(g, tosa_path, NULL);
    if (e) die("write", e);
    r->seconds = bench_now() - t0;
    r->bytes = params;
    ctosa_graph_free(g);
}

static void step_open(result *r) {
    double t0 = bench_now();
    ctosa_graph *g;
    ctosa_error *e = ctosa_read_file(tosa_path, NULL, &g);
    if (e) die("read", e);
    r->seconds = bench_now() - t0;
    r->bytes = ctosa_graph_file_info(g).flatbuffer_size;
    ctosa_graph_free(g);
}

/* Drops the file's pages from the page cache (clean pages only: it was
 * synced), so the next step reads what it needs from the disk. */
static void evict(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static void line(const char *name, const result *r, const char *extra) {
    printf("%-10s %9.3f s   peak RSS %8.1f MiB   exit %d%s%s\n", name, r->seconds, r->rss_kib / 1024.0,
           r->status, extra ? "   " : "", extra ? extra : "");
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
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

static int intarg(const char *v, const char *flag) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > 1000000) {
        fprintf(stderr, "bench_bigfile: %s wants a positive number, not '%s'\n", flag, v);
        exit(2);
    }
    return (int)n;
}

int main(int argc, char **argv) {
    C = (cfg){.layers = 16, .hidden = 2048, .ffn = 5632, .vocab = 32000, .tokens = 8};
    const char *base = NULL, *make = NULL, *spec = "TOSA-1.0+FP";
    bool keep = false, full = false;
    int rounds = 3;
    char ctosa_bin[1200];
    /* default CLI: the ctosa built next to this program (build/bench/..) */
    snprintf(ctosa_bin, sizeof ctosa_bin, "%s", argv[0]);
    char *slash = strrchr(ctosa_bin, '/');
    if (slash) snprintf(slash + 1, sizeof ctosa_bin - (size_t)(slash + 1 - ctosa_bin), "../ctosa");
    else snprintf(ctosa_bin, sizeof ctosa_bin, "../ctosa");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--keep") == 0) keep = true;
        else if (strcmp(a, "--full") == 0) full = true;
        else if (strcmp(a, "--external") == 0) C.external = true;
        else if (v && strcmp(a, "--layers") == 0) C.layers = intarg(v, a), i++;
        else if (v && strcmp(a, "--hidden") == 0) C.hidden = intarg(v, a), i++;
        else if (v && strcmp(a, "--ffn") == 0) C.ffn = intarg(v, a), i++;
        else if (v && strcmp(a, "--vocab") == 0) C.vocab = intarg(v, a), i++;
        else if (v && strcmp(a, "--tokens") == 0) C.tokens = intarg(v, a), i++;
        else if (v && strcmp(a, "--rounds") == 0) rounds = intarg(v, a), i++;
        else if (v && strcmp(a, "--ctosa") == 0) snprintf(ctosa_bin, sizeof ctosa_bin, "%s", v), i++;
        else if (v && strcmp(a, "--spec") == 0) spec = v, i++;
        else if (v && strcmp(a, "--make") == 0) make = v, i++;
        else if (a[0] != '-' && !base) base = a;
        else {
            fprintf(stderr, "usage: bench_bigfile [DIR] [--keep] [--full] [--layers N] [--hidden H] "
                            "[--ffn F] [--vocab V] [--tokens T] [--rounds N] [--ctosa PATH] "
                            "[--spec SPEC]\n       bench_bigfile --make FILE.tosa [--external] "
                            "[sizes]\n");
            return 2;
        }
    }
    if (rounds > 20) rounds = 20;
    {
        uint64_t H = (uint64_t)C.hidden, F = (uint64_t)C.ffn, V = (uint64_t)C.vocab, big = H * V;
        if (H * F > big) big = H * F;
        if (H * H > big) big = H * H;
        uint64_t want = 4 * 4 * big;
        if (want < (UINT64_C(1) << 20)) want = UINT64_C(1) << 20;
        if (want < POOL_BYTES) POOL_BYTES = (want + 63) & ~UINT64_C(63);
        if (4 * big > POOL_BYTES) {
            fprintf(stderr, "bench_bigfile: a weight of %llu bytes does not fit the 512 MiB pool\n",
                    (unsigned long long)(4 * big));
            return 2;
        }
    }
    char dir[1100];
    if (make) {
        /* pool beside the output, removed afterwards */
        snprintf(tosa_path, sizeof tosa_path, "%s", make);
        snprintf(pool_path, sizeof pool_path, "%s.pool.tmp", make);
        snprintf(tok_path, sizeof tok_path, "%s.tokens.npy", make);
        snprintf(mask_path, sizeof mask_path, "%s.mask.npy", make);
        make_pool(pool_path);
        uint64_t params;
        ctosa_graph *g = build_graph(&C, &params);
        ctosa_write_options wo;
        ctosa_write_options_init(&wo);
        if (C.external) wo.layout = CTOSA_LAYOUT_EXTERNAL;
        ctosa_error *e = ctosa_write_file(g, tosa_path, &wo);
        ctosa_graph_free(g);
        unlink(pool_path);
        if (e) die("write", e);
        write_inputs(&C, tok_path, mask_path);
        printf("%s: %llu parameters\n", make, (unsigned long long)params);
        return 0;
    }
    if (!base) base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/ctosa-bigfile-XXXXXX", base);
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    snprintf(pool_path, sizeof pool_path, "%s/pool.bin", dir);
    snprintf(tosa_path, sizeof tosa_path, "%s/llm.tosa", dir);
    snprintf(tok_path, sizeof tok_path, "%s/tokens.npy", dir);
    snprintf(mask_path, sizeof mask_path, "%s/mask.npy", dir);
    snprintf(out_path, sizeof out_path, "%s/l0_out.npy", dir);
    if (access(ctosa_bin, X_OK) != 0) {
        fprintf(stderr, "bench_bigfile: %s is not executable (give --ctosa PATH)\n", ctosa_bin);
        return 2;
    }
    printf("bench_bigfile: layers %d hidden %d ffn %d vocab %d tokens %d; files in %s\n", C.layers, C.hidden,
           C.ffn, C.vocab, C.tokens, dir);
    printf("load average at the start: %s", loadavg());
    double t0 = bench_now();
    make_pool(pool_path);
    printf("pool       %9.3f s   (%.1f MiB of pseudo-random fp32, untimed below)\n", bench_now() - t0,
           POOL_BYTES / 1048576.0);
    write_inputs(&C, tok_path, mask_path);
    sync();

    result w = in_child(step_write);
    struct stat st;
    if (w.status != 0 || stat(tosa_path, &st) != 0) die("write failed", NULL);
    char extra[256];
    snprintf(extra, sizeof extra, "%llu bytes (%.2f GiB), %llu parameters", (unsigned long long)st.st_size,
             st.st_size / 1073741824.0, (unsigned long long)w.bytes);
    line("write", &w, extra);
    sync();

    result best = {0};
    for (int i = 0; i < rounds; i++) {
        result r = in_child(step_open);
        if (i == 0 || r.seconds < best.seconds) best = r;
    }
    snprintf(extra, sizeof extra, "best of %d; flatbuffer part %llu bytes", rounds,
             (unsigned long long)best.bytes);
    line("open", &best, extra);

    char *info_argv[] = {ctosa_bin, "info", tosa_path, NULL};
    char *check_argv[] = {ctosa_bin, "check", tosa_path, "--spec", (char *)spec, NULL};
    char *dump_argv[] = {ctosa_bin, "dump", tosa_path, NULL};
    char tok_arg[1400], mask_arg[1400], out_arg[1400];
    snprintf(tok_arg, sizeof tok_arg, "tokens=%s", tok_path);
    snprintf(mask_arg, sizeof mask_arg, "mask=%s", mask_path);
    snprintf(out_arg, sizeof out_arg, "l0.out=%s", out_path);
    char *slice_argv[] = {ctosa_bin,   "run",    tosa_path,  "--input", tok_arg, "--input", mask_arg,
                          "--outputs", "l0.out", "--output", out_arg,   "-q",    NULL};
    char q_arg[1400];
    snprintf(q_arg, sizeof q_arg, "l0.attn.q=%s/l0_q.npy", dir);
    char *qslice_argv[] = {ctosa_bin,   "run",      tosa_path, "--input", tok_arg, "--outputs",
                           "l0.attn.q", "--output", q_arg,     "-q",      NULL};
    char dump_out[1300];
    snprintf(dump_out, sizeof dump_out, "%s/dump.txt", dir);

    result r = {0};
    for (int i = 0; i < rounds; i++) {
        result x = spawn(info_argv, NULL);
        if (i == 0 || x.seconds < r.seconds) r = x;
    }
    line("info", &r, "best; whole process");
    for (int i = 0; i < rounds; i++) {
        result x = spawn(check_argv, NULL);
        if (i == 0 || x.seconds < r.seconds) r = x;
    }
    snprintf(extra, sizeof extra, "best; --spec %s", spec);
    line("check", &r, extra);
    for (int i = 0; i < rounds; i++) {
        result x = spawn(dump_argv, dump_out);
        if (i == 0 || x.seconds < r.seconds) r = x;
    }
    snprintf(extra, sizeof extra, "best; %llu bytes of text", (unsigned long long)r.bytes);
    line("dump", &r, extra);
    for (int i = 0; i < rounds; i++) {
        result x = spawn(slice_argv, NULL);
        if (i == 0 || x.seconds < r.seconds) r = x;
    }
    line("run-slice", &r, "best; --outputs l0.out (GATHER + layer 0, its 7 weight matrices)");
    for (int i = 0; i < rounds; i++) {
        result x = spawn(qslice_argv, NULL);
        if (i == 0 || x.seconds < r.seconds) r = x;
    }
    line("run-q", &r, "best; --outputs l0.attn.q (GATHER, RMSNorm, one MATMUL; no mask given)");
    if (full) {
        char logits_arg[1400];
        snprintf(logits_arg, sizeof logits_arg, "logits=%s/logits.npy", dir);
        char *full_argv[] = {ctosa_bin, "run",      tosa_path,  "--input", tok_arg, "--input",
                             mask_arg,  "--output", logits_arg, "-q",      NULL};
        r = spawn(full_argv, NULL);
        line("run-full", &r, "whole graph, once");
    }
    /* Cold page cache: what opening and a slice read from the disk. */
    evict(tosa_path);
    r = in_child(step_open);
    line("open-cold", &r, "page cache dropped first (posix_fadvise DONTNEED)");
    evict(tosa_path);
    r = spawn(slice_argv, NULL);
    line("slice-cold", &r, "--outputs l0.out, page cache dropped first");
    printf("load average at the end: %s", loadavg());
    if (keep) {
        unlink(pool_path);
        printf("kept %s\n", dir);
    } else {
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    return 0;
}
