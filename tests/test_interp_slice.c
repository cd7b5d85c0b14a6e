/* test_interp_slice.c - running a slice of a graph (ctosa_interp_options
 * .outputs, `ctosa run --outputs`) and lazy, zero-copy constants.
 *
 * The graph, fp32:
 *     a   = ADD(x, w1)               [1,1,1024]
 *     m   = MUL(a, a)                [1,1,1024]
 *     r   = MATMUL(m, w3, zp, zp)    [1,1,4]      w3 [1,1024,4]
 *     b   = ADD(y, w2)               [1,1,1024]   (the part a slice of m, r skips)
 *     q   = REDUCE_SUM(b, axis 2)    [1,1,1]
 *     out = ADD(r, q)                [1,1,4]      the graph's only output
 * Values are small integers, so every result is exact.
 *
 * The proof that nothing outside the slice is touched: the file is written
 * with the external layout and 4096-byte data alignment (each constant on
 * its own pages), copied into page-aligned memory, and the pages of w2 are
 * made inaccessible (PROT_NONE) before running the slice (and the pages of
 * every weight before reading and validating). Any access to them -
 * verifier, validator, interpreter planning, loading or running - would
 * crash the test. And a constant requested as an output
 * comes back as a pointer into that memory (no copy). */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "tensorfile/tensorfile.h"

#define N 1024
#define W 4

static float X[N], Y[N], W1[N], W2[N], W3[N * W];

static void fill(void) {
    for (int i = 0; i < N; i++) {
        X[i] = (float)(i % 7 - 3);
        Y[i] = (float)(i % 3);
        W1[i] = (float)(i % 5);
        W2[i] = (float)(i % 4 - 1);
        for (int j = 0; j < W; j++) W3[i * W + j] = (float)((i + j) % 3 - 1);
    }
}

static void expect(float *m, float *r, float *out) {
    for (int i = 0; i < N; i++) m[i] = (X[i] + W1[i]) * (X[i] + W1[i]);
    float q = 0;
    for (int i = 0; i < N; i++) q += Y[i] + W2[i];
    for (int j = 0; j < W; j++) {
        float s = 0;
        for (int i = 0; i < N; i++) s += m[i] * W3[i * W + j];
        r[j] = s;
        out[j] = s + q;
    }
}

static ctosa_graph *build(void) {
    ctosa_graph *g;
    ctosa_region *rg;
    ctosa_block *b;
    ctosa_tensor *t;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &rg));
    CHECK_OK(ctosa_region_add_block(g, rg, "main", &b));
    int32_t v[3] = {1, 1, N}, w3s[3] = {1, N, W}, o[3] = {1, 1, W}, s1[3] = {1, 1, 1}, one[1] = {1};
    const char *acts[] = {"x", "y", "a", "m", "b"};
    for (int i = 0; i < 5; i++) CHECK_OK(ctosa_block_add_tensor(g, b, acts[i], CTOSA_DTYPE_FP32, 3, v, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "r", CTOSA_DTYPE_FP32, 3, o, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "out", CTOSA_DTYPE_FP32, 3, o, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "q", CTOSA_DTYPE_FP32, 3, s1, NULL));
    struct {
        const char *name;
        const int32_t *shape;
        uint32_t rank;
        ctosa_dtype dt;
        const void *p;
        uint64_t n;
    } cs[] = {
        {"w1", v, 3, CTOSA_DTYPE_FP32, W1, sizeof W1},
        {"w2", v, 3, CTOSA_DTYPE_FP32, W2, sizeof W2},
        {"w3", w3s, 3, CTOSA_DTYPE_FP32, W3, sizeof W3},
        {"zp", one, 1, CTOSA_DTYPE_FP32, (const float[]){0}, 4},
        {"shift", one, 1, CTOSA_DTYPE_INT8, (const int8_t[]){0}, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        CHECK_OK(ctosa_block_add_tensor(g, b, cs[i].name, cs[i].dt, cs[i].rank, cs[i].shape, &t));
        CHECK_OK(ctosa_tensor_set_data(g, t, cs[i].p, cs[i].n, true));
        CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, &cs[i].name, NULL, NULL));
    }
#define OP(kind, n, outname, attr, ...)                                        \
    do {                                                                       \
        const char *in_[] = {__VA_ARGS__}, *out_[] = {outname};                \
        CHECK_OK(ctosa_block_add_op(g, b, kind, n, in_, 1, out_, attr, NULL)); \
    } while (0)
    ctosa_attr ax = {0};
    ax.axis = 2;
    OP(CTOSA_OP_ADD, 2, "a", NULL, "x", "w1");
    OP(CTOSA_OP_MUL, 3, "m", NULL, "a", "a", "shift");
    OP(CTOSA_OP_MATMUL, 4, "r", NULL, "m", "w3", "zp", "zp");
    OP(CTOSA_OP_ADD, 2, "b", NULL, "y", "w2");
    OP(CTOSA_OP_REDUCE_SUM, 1, "q", &ax, "b");
    OP(CTOSA_OP_ADD, 2, "out", NULL, "r", "q");
#undef OP
    CHECK_OK(ctosa_block_add_input(g, b, "x"));
    CHECK_OK(ctosa_block_add_input(g, b, "y"));
    CHECK_OK(ctosa_block_add_output(g, b, "out"));
    return g;
}

static const char *write_model(void) {
    static char path[4096];
    snprintf(path, sizeof path, "%s", th_path(th_tmpdir(), "slice.tosa"));
    ctosa_graph *g = build();
    ctosa_write_options wo;
    ctosa_write_options_init(&wo);
    wo.layout = CTOSA_LAYOUT_EXTERNAL;
    wo.data_alignment = 4096;
    CHECK_OK(ctosa_write_file(g, path, &wo));
    ctosa_graph_free(g);
    return path;
}

static bool same_floats(const void *got, const float *want, size_t n) {
    return got && memcmp(got, want, n * sizeof(float)) == 0;
}

static void set_input(ctosa_interp *it, const char *name, const float *v) {
    int64_t shp[3] = {1, 1, N};
    CHECK_OK(ctosa_interp_set_input(it, name, CTOSA_DTYPE_FP32, 3, shp, v, sizeof(float) * N));
}

/* The model in page-aligned memory with w2's pages inaccessible. */
static void test_slice_lazy_constants(void) {
    const char *path = write_model();
    size_t size = 0;
    unsigned char *file = th_read(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    long page = sysconf(_SC_PAGESIZE);
    size_t mapped = (size + (size_t)page - 1) & ~((size_t)page - 1);
    unsigned char *mem = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED);
    if (mem == MAP_FAILED) {
        free(file);
        return;
    }
    memcpy(mem, file, size);
    free(file);
    /* Where w2 lies: read the file once normally. */
    ctosa_graph *g0;
    CHECK_OK(ctosa_read_memory(mem, size, "slice.tosa", NULL, &g0));
    const ctosa_block *b0 = ctosa_graph_region(g0, 0)->blocks[0];
    const char *wn[3] = {"w1", "w2", "w3"};
    size_t woff[3], wsize[3] = {sizeof W1, sizeof W2, sizeof W3};
    for (int i = 0; i < 3; i++) {
        const ctosa_tensor *w = ctosa_block_find_tensor(g0, b0, wn[i]);
        CHECK(w && w->data.kind == CTOSA_DATA_MEMORY && w->data.size == wsize[i]);
        woff[i] = w ? (size_t)((const unsigned char *)w->data.ptr - mem) : 0;
        CHECK(woff[i] % (size_t)page == 0 && wsize[i] % (size_t)page == 0);
    }
    ctosa_graph_free(g0);
    /* Reading and validating touch no weight at all. */
    CHECK(mprotect(mem, mapped, PROT_READ) == 0);
    for (int i = 0; i < 3; i++) CHECK(mprotect(mem + woff[i], wsize[i], PROT_NONE) == 0);
    ctosa_graph *g;
    CHECK_OK(ctosa_read_memory(mem, size, "slice.tosa", NULL, &g));
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+FP", &spec));
    CHECK_OK(ctosa_validate(g, &spec, NULL));
    /* The slice reads w1 and w3; w2 stays poisoned from here on. */
    CHECK(mprotect(mem + woff[0], wsize[0], PROT_READ) == 0);
    CHECK(mprotect(mem + woff[2], wsize[2], PROT_READ) == 0);

    float m[N], r[W], out[W];
    expect(m, r, out);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = 1;
    const char *sel[] = {"m", "r", "w3", "x"};
    opt.outputs = sel;
    opt.n_outputs = 4;
    ctosa_interp *it = NULL;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (it) {
        CHECK(ctosa_interp_input_count(it) == 2 && ctosa_interp_output_count(it) == 4);
        CHECK(ctosa_interp_input_used(it, 0) && !ctosa_interp_input_used(it, 1));
        ctosa_interp_tensor info;
        CHECK_OK(ctosa_interp_output_info(it, 1, &info));
        CHECK(strcmp(info.name, "r") == 0 && info.rank == 3 && info.shape[2] == W);
        /* nothing set yet: x is required, y is not */
        CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_USAGE, "input 'x'");
        set_input(it, "x", X);
        CHECK_OK(ctosa_interp_run(it)); /* y never given */
        ctosa_interp_tensor t;
        CHECK_OK(ctosa_interp_get_output(it, "m", &t));
        CHECK(t.count == N && same_floats(t.data, m, N));
        CHECK_OK(ctosa_interp_get_output(it, "r", &t));
        CHECK(t.count == W && same_floats(t.data, r, W));
        CHECK_OK(ctosa_interp_get_output(it, "x", &t));
        CHECK(same_floats(t.data, X, N));
        /* a constant comes back in place: a pointer into the file's bytes */
        CHECK_OK(ctosa_interp_get_output(it, "w3", &t));
        CHECK((unsigned char *)t.data >= mem && (unsigned char *)t.data < mem + size);
        CHECK(same_floats(t.data, W3, (size_t)N * W));
        CHECK_ERR(ctosa_interp_get_output(it, "out", &t), CTOSA_ERR_USAGE, "not an output");
        /* setting the unused input is allowed (and ignored by the slice) */
        set_input(it, "y", Y);
        CHECK_OK(ctosa_interp_run(it));
        CHECK_OK(ctosa_interp_get_output(it, "r", &t));
        CHECK(same_floats(t.data, r, W));
        ctosa_interp_free(it);
    }
    /* unknown names are refused up front */
    const char *bad[] = {"r", "nope"};
    opt.outputs = bad;
    opt.n_outputs = 2;
    it = NULL;
    CHECK_ERR(ctosa_interp_create(g, &opt, &it), CTOSA_ERR_USAGE, "'nope' is not a tensor");
    CHECK(it == NULL);
    ctosa_graph_free(g);

    /* The whole graph needs w2: from the intact file, out is exact. */
    CHECK(mprotect(mem, mapped, PROT_READ) == 0);
    CHECK_OK(ctosa_read_memory(mem, size, "slice.tosa", NULL, &g));
    opt.outputs = NULL;
    opt.n_outputs = 0;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (it) {
        CHECK(ctosa_interp_input_used(it, 0) && ctosa_interp_input_used(it, 1));
        set_input(it, "x", X);
        CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_USAGE, "input 'y'");
        set_input(it, "y", Y);
        CHECK_OK(ctosa_interp_run(it));
        ctosa_interp_tensor t;
        CHECK_OK(ctosa_interp_get_output(it, "out", &t));
        CHECK(same_floats(t.data, out, W));
        ctosa_interp_free(it);
    }
    /* Graph output plus an intermediate: everything runs, both exact. */
    const char *both[] = {"out", "m"};
    opt.outputs = both;
    opt.n_outputs = 2;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (it) {
        CHECK(ctosa_interp_input_used(it, 1));
        set_input(it, "x", X);
        set_input(it, "y", Y);
        CHECK_OK(ctosa_interp_run(it));
        ctosa_interp_tensor t;
        CHECK_OK(ctosa_interp_get_output(it, "out", &t));
        CHECK(same_floats(t.data, out, W));
        CHECK_OK(ctosa_interp_get_output(it, "m", &t));
        CHECK(same_floats(t.data, m, N));
        ctosa_interp_free(it);
    }
    ctosa_graph_free(g);
    munmap(mem, mapped);
}

static void write_npy_f32(const char *path, const float *v) {
    int64_t shp[3] = {1, 1, N};
    CHECK_OK(npy_write_file(path, "<f4", 3, shp, v, sizeof(float) * N));
}

static bool npy_equals(const char *path, const float *want, size_t n) {
    npy_array a;
    ctosa_error *e = npy_read_file(path, &a);
    if (e) {
        fprintf(stderr, "%s: %s\n", path, ctosa_error_message(e));
        ctosa_error_free(e);
        return false;
    }
    bool ok = a.kind == 'f' && a.itemsize == 4 && a.count == n && same_floats(a.data, want, n);
    npy_free(&a);
    return ok;
}

/* The same through `ctosa run`. */
static void test_cli(void) {
    const char *path = write_model();
    const char *dir = th_tmpdir();
    char xin[4096], yin[4096];
    snprintf(xin, sizeof xin, "%s", th_path(dir, "x.npy"));
    snprintf(yin, sizeof yin, "%s", th_path(dir, "y.npy"));
    write_npy_f32(xin, X);
    write_npy_f32(yin, Y);
    float m[N], r[W], out[W];
    expect(m, r, out);
    char *log = NULL;
    /* slice: y not given, intermediates written to DIR/<name>.npy */
    int rc =
        th_run(&log, "'%s' run '%s' --input x='%s' --outputs m,r -o '%s/s1'", th_ctosa(), path, xin, dir);
    CHECK_MSG(rc == 0, "%s", log ? log : "");
    CHECK(log && strstr(log, "m: fp32 [1,1,1024]") && strstr(log, "r: fp32 [1,1,4]") && !strstr(log, "out:"));
    free(log);
    char p[4096];
    snprintf(p, sizeof p, "%s/s1/m.npy", dir);
    CHECK(npy_equals(p, m, N));
    snprintf(p, sizeof p, "%s/s1/r.npy", dir);
    CHECK(npy_equals(p, r, W));
    snprintf(p, sizeof p, "%s/s1/out.npy", dir);
    CHECK(access(p, F_OK) != 0);
    /* --output naming an intermediate: graph output and it, whole graph */
    rc = th_run(&log, "'%s' run '%s' --input x='%s' --input y='%s' --output m='%s/mm.npy' -o '%s/s2' -q",
                th_ctosa(), path, xin, yin, dir, dir);
    CHECK_MSG(rc == 0, "%s", log ? log : "");
    free(log);
    snprintf(p, sizeof p, "%s/mm.npy", dir);
    CHECK(npy_equals(p, m, N));
    snprintf(p, sizeof p, "%s/s2/out.npy", dir);
    CHECK(npy_equals(p, out, W));
    /* the whole graph still needs y */
    rc = th_run(&log, "'%s' run '%s' --input x='%s' -o '%s/s3'", th_ctosa(), path, xin, dir);
    CHECK(rc == 2 && log && strstr(log, "input 'y'") && strstr(log, "is not given"));
    free(log);
    /* unknown names: exit 2 naming them */
    rc = th_run(&log, "'%s' run '%s' --input x='%s' --outputs r,nope -o '%s/s4'", th_ctosa(), path, xin, dir);
    CHECK(rc == 2 && log && strstr(log, "'nope' is not a tensor"));
    free(log);
    rc = th_run(&log, "'%s' run '%s' --input x='%s' --output nope='%s/n.npy'", th_ctosa(), path, xin, dir);
    CHECK(rc == 2 && log && strstr(log, "'nope' is not a graph output or a tensor"));
    free(log);
    rc = th_run(&log, "'%s' run '%s' --input x='%s' --outputs 'r,,m'", th_ctosa(), path, xin);
    CHECK(rc == 2 && log && strstr(log, "--outputs expects"));
    free(log);
}

static void add_t(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype dt, ctosa_tensor **t) {
    int32_t d[1] = {2};
    CHECK_OK(ctosa_block_add_tensor(g, b, name, dt, 1, d, t));
}

static void add_op(ctosa_graph *g, ctosa_block *b, ctosa_op_kind k, const ctosa_attr *a, uint32_t ni,
                   const char *const *in, uint32_t no, const char *const *out) {
    CHECK_OK(ctosa_block_add_op(g, b, k, ni, in, no, out, a, NULL));
}

static ctosa_error *run_i32(ctosa_interp *it, const char *in, const int32_t *x, const char *out, int32_t *y) {
    int64_t d[1] = {2};
    ctosa_error *e = ctosa_interp_set_input(it, in, CTOSA_DTYPE_INT32, 1, d, x, 8);
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_tensor t;
    if (!e) e = ctosa_interp_get_output(it, out, &t);
    if (!e) memcpy(y, t.data, 8);
    return e;
}

/* A region may read a tensor of the calling block by name without it being
 * an input of COND_IF (MLIR-produced graphs do): the slice must keep its
 * producer. main: t = ADD(x, x); u = SUB(z, z) (outside the slice);
 * y = COND_IF(c, x) with then: r = ADD(a, t), else: r = IDENTITY(a). */
static void test_slice_control_flow(void) {
    ctosa_graph *g;
    ctosa_region *rm, *rt, *re;
    ctosa_block *m, *th, *el;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &rm));
    CHECK_OK(ctosa_region_add_block(g, rm, "main", &m));
    CHECK_OK(ctosa_graph_add_region(g, "then", &rt));
    CHECK_OK(ctosa_region_add_block(g, rt, "then", &th));
    CHECK_OK(ctosa_graph_add_region(g, "else", &re));
    CHECK_OK(ctosa_region_add_block(g, re, "else", &el));
    int32_t d1[1] = {1};
    CHECK_OK(ctosa_block_add_tensor(g, m, "c", CTOSA_DTYPE_BOOL, 1, d1, NULL));
    const char *mt[] = {"x", "z", "t", "u", "y"};
    for (int i = 0; i < 5; i++) add_t(g, m, mt[i], CTOSA_DTYPE_INT32, NULL);
    add_op(g, m, CTOSA_OP_ADD, NULL, 2, (const char *[]){"x", "x"}, 1, (const char *[]){"t"});
    add_op(g, m, CTOSA_OP_SUB, NULL, 2, (const char *[]){"z", "z"}, 1, (const char *[]){"u"});
    ctosa_attr at = {0};
    at.then_graph = "then";
    at.else_graph = "else";
    add_op(g, m, CTOSA_OP_COND_IF, &at, 2, (const char *[]){"c", "x"}, 1, (const char *[]){"y"});
    CHECK_OK(ctosa_block_add_input(g, m, "c"));
    CHECK_OK(ctosa_block_add_input(g, m, "x"));
    CHECK_OK(ctosa_block_add_input(g, m, "z"));
    CHECK_OK(ctosa_block_add_output(g, m, "y"));
    CHECK_OK(ctosa_block_add_output(g, m, "u"));
    add_t(g, th, "a", CTOSA_DTYPE_INT32, NULL);
    add_t(g, th, "r", CTOSA_DTYPE_INT32, NULL);
    add_op(g, th, CTOSA_OP_ADD, NULL, 2, (const char *[]){"a", "t"}, 1, (const char *[]){"r"});
    CHECK_OK(ctosa_block_add_input(g, th, "a"));
    CHECK_OK(ctosa_block_add_output(g, th, "r"));
    add_t(g, el, "a", CTOSA_DTYPE_INT32, NULL);
    add_t(g, el, "r", CTOSA_DTYPE_INT32, NULL);
    add_op(g, el, CTOSA_OP_IDENTITY, NULL, 1, (const char *[]){"a"}, 1, (const char *[]){"r"});
    CHECK_OK(ctosa_block_add_input(g, el, "a"));
    CHECK_OK(ctosa_block_add_output(g, el, "r"));

    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = 1;
    const char *sel[] = {"y"};
    opt.outputs = sel;
    opt.n_outputs = 1;
    ctosa_interp *it = NULL;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (it) {
        CHECK(ctosa_interp_input_used(it, 0) && ctosa_interp_input_used(it, 1) &&
              !ctosa_interp_input_used(it, 2));
        int64_t dc[1] = {1};
        uint8_t c1 = 1;
        CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, dc, &c1, 1));
        int32_t x[2] = {3, -4}, y[2] = {0, 0};
        CHECK_OK(run_i32(it, "x", x, "y", y));
        CHECK(y[0] == 9 && y[1] == -12); /* x + (x + x) */
        ctosa_interp_free(it);
    }
    ctosa_graph_free(g);
}

/* Variables carry state without a data edge: a slice that reads one keeps
 * every operator writing it. v starts at 100; s = VARIABLE_READ(v) + x;
 * VARIABLE_WRITE(v, s); then v = 2 * v (IDENTITY of v, ADD, IDENTITY to v). */
static void test_slice_variables(void) {
    ctosa_graph *g;
    ctosa_region *rm;
    ctosa_block *m;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &rm));
    CHECK_OK(ctosa_region_add_block(g, rm, "main", &m));
    ctosa_tensor *v;
    add_t(g, m, "v", CTOSA_DTYPE_INT32, &v);
    v->variable = true;
    v->variable_name = "state";
    int32_t init[2] = {100, 7};
    CHECK_OK(ctosa_tensor_set_data(g, v, init, 8, true));
    const char *names[] = {"x", "r", "s", "w", "s2"};
    for (int i = 0; i < 5; i++) add_t(g, m, names[i], CTOSA_DTYPE_INT32, NULL);
    add_op(g, m, CTOSA_OP_VARIABLE_READ, NULL, 1, (const char *[]){"v"}, 1, (const char *[]){"r"});
    add_op(g, m, CTOSA_OP_ADD, NULL, 2, (const char *[]){"r", "x"}, 1, (const char *[]){"s"});
    add_op(g, m, CTOSA_OP_VARIABLE_WRITE, NULL, 2, (const char *[]){"v", "s"}, 0, NULL);
    add_op(g, m, CTOSA_OP_IDENTITY, NULL, 1, (const char *[]){"v"}, 1, (const char *[]){"w"});
    add_op(g, m, CTOSA_OP_ADD, NULL, 2, (const char *[]){"w", "w"}, 1, (const char *[]){"s2"});
    add_op(g, m, CTOSA_OP_IDENTITY, NULL, 1, (const char *[]){"s2"}, 1, (const char *[]){"v"});
    CHECK_OK(ctosa_block_add_input(g, m, "x"));
    CHECK_OK(ctosa_block_add_output(g, m, "s2"));
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = 1;
    const char *sel[] = {"s"};
    opt.outputs = sel;
    opt.n_outputs = 1;
    ctosa_interp *it = NULL;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (it) {
        int32_t x[2] = {5, 1}, s[2] = {0, 0};
        CHECK_OK(run_i32(it, "x", x, "s", s));
        CHECK(s[0] == 105 && s[1] == 8);
        CHECK_OK(run_i32(it, "x", x, "s", s)); /* v became 2 * (v + x) */
        CHECK(s[0] == 215 && s[1] == 17);
        ctosa_interp_free(it);
    }
    ctosa_graph_free(g);
}

int main(void) {
    fill();
    RUN(test_slice_lazy_constants);
    RUN(test_cli);
    RUN(test_slice_control_flow);
    RUN(test_slice_variables);
    return th_finish();
}
