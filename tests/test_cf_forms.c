/* test_cf_forms.c - the two forms of control-flow graphs in a TOSA file.
 *
 * COND_IF and WHILE_LOOP name their sub-graphs (then_graph / else_graph,
 * cond_graph / body_graph). A file may hold each one as a separate region
 * (the form the specification and the official serializer document, and
 * the one ctosa writes) or as a block of the calling region (the form
 * Arm's conformance generator writes; Arm's reference model looks for a
 * region first, then a block). Each graph here is built with the public
 * builder in both forms and must validate, run to the same outputs, write
 * and read back, give the same MLIR text, and pass `ctosa check`, `ctosa
 * dump` (text, JSON, DOT, MLIR) and `ctosa run`. Errors name the block. */
#include <math.h>
#include <stdint.h>

#include "harness.h"

typedef enum { FORM_REGIONS, FORM_BLOCKS } form;
static const char *const form_name[2] = {"regions", "blocks"};

/* The builder state of one graph: the main block and how sub-graphs are
 * placed. */
typedef struct {
    ctosa_graph *g;
    ctosa_region *main_r;
    ctosa_block *main_b;
    form f;
} cfb;

static cfb cfb_new(form f) {
    cfb c = {NULL, NULL, NULL, f};
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &c.g));
    CHECK_OK(ctosa_graph_add_region(c.g, "main", &c.main_r));
    CHECK_OK(ctosa_region_add_block(c.g, c.main_r, "main", &c.main_b));
    return c;
}

static const int32_t S23[2] = {2, 3}, S1[1] = {1};

enum { PLAIN, INPUTS, OUTPUTS };

/* Tensors of block b from a list such as "b:c f:x i:n" (bool[1], fp32[2,3],
 * int32[1]), made the block's inputs or outputs in that order when role
 * says so. */
static void tensors(cfb *c, ctosa_block *b, const char *list, int role) {
    for (const char *p = list; *p;) {
        char kind = p[0], name[32];
        size_t n = strcspn(p + 2, " ");
        snprintf(name, sizeof name, "%.*s", (int)n, p + 2);
        ctosa_dtype dt = kind == 'f' ? CTOSA_DTYPE_FP32 : kind == 'i' ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_BOOL;
        CHECK_OK(
            ctosa_block_add_tensor(c->g, b, name, dt, kind == 'f' ? 2 : 1, kind == 'f' ? S23 : S1, NULL));
        if (role == INPUTS) CHECK_OK(ctosa_block_add_input(c->g, b, name));
        if (role == OUTPUTS) CHECK_OK(ctosa_block_add_output(c->g, b, name));
        p += 2 + n;
        p += *p == ' ';
    }
}

/* A sub-graph called `name` with the given inputs and outputs (lists as
 * for tensors()): a region of its own holding one block of that name, or
 * a block of the main region. */
static ctosa_block *cfb_sub(cfb *c, const char *name, const char *ins, const char *outs) {
    ctosa_region *r = c->main_r;
    if (c->f == FORM_REGIONS) CHECK_OK(ctosa_graph_add_region(c->g, name, &r));
    ctosa_block *b = NULL;
    CHECK_OK(ctosa_region_add_block(c->g, r, name, &b));
    if (b) {
        tensors(c, b, ins, INPUTS);
        tensors(c, b, outs, OUTPUTS);
    }
    return b;
}

static void const_i32(cfb *c, ctosa_block *b, const char *name, int32_t v) {
    static const int32_t one[1] = {1};
    ctosa_tensor *t = NULL;
    CHECK_OK(ctosa_block_add_tensor(c->g, b, name, CTOSA_DTYPE_INT32, 1, one, &t));
    if (t) CHECK_OK(ctosa_tensor_set_data(c->g, t, &v, sizeof v, true));
    const char *out[1] = {name};
    CHECK_OK(ctosa_block_add_op(c->g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
}

static void op(cfb *c, ctosa_block *b, ctosa_op_kind k, const char *a, const char *bb, const char *out) {
    const char *in[2] = {a, bb}, *o[1] = {out};
    CHECK_OK(ctosa_block_add_op(c->g, b, k, bb ? 2 : 1, in, 1, o, NULL, NULL));
}

/* z = COND_IF(c, x, y): THEN_BLOCK a + b; ELSE_BLOCK a - k, where k =
 * ABS(x) is a tensor of the main block the else graph reads. */
static ctosa_graph *build_cond(form f, const char *else_name) {
    cfb c = cfb_new(f);
    ctosa_block *m = c.main_b;
    tensors(&c, m, "b:c f:x f:y", INPUTS);
    tensors(&c, m, "f:k", PLAIN);
    tensors(&c, m, "f:z", OUTPUTS);
    op(&c, m, CTOSA_OP_ABS, "x", NULL, "k");
    ctosa_attr a = {.then_graph = "THEN_BLOCK", .else_graph = else_name};
    const char *in[3] = {"c", "x", "y"}, *out[1] = {"z"};
    CHECK_OK(ctosa_block_add_op(c.g, m, CTOSA_OP_COND_IF, 3, in, 1, out, &a, NULL));

    ctosa_block *t = cfb_sub(&c, "THEN_BLOCK", "f:ta f:tb", "f:tr");
    op(&c, t, CTOSA_OP_ADD, "ta", "tb", "tr");
    ctosa_block *e = cfb_sub(&c, "ELSE_BLOCK", "f:ea f:eb", "f:er");
    op(&c, e, CTOSA_OP_SUB, "ea", "k", "er");
    return c.g;
}

/* (i, acc) = WHILE_LOOP(i0, acc0): COND_BLOCK lim > i (lim a constant of
 * the main block); BODY_BLOCK i + 1 and acc = COND_IF(i > 2, acc) with
 * BIG_BLOCK acc + acc, SMALL_BLOCK |acc|: a control-flow operator inside
 * a called graph, whose own graphs are found from there. For i0 = 0 the
 * result is i = 5, acc = 4 |acc0|. */
static ctosa_graph *build_while(form f) {
    cfb c = cfb_new(f);
    ctosa_block *m = c.main_b;
    tensors(&c, m, "i:i0 f:acc0", INPUTS);
    tensors(&c, m, "i:i f:acc", OUTPUTS);
    const_i32(&c, m, "lim", 5);
    ctosa_attr a = {.cond_graph = "COND_BLOCK", .body_graph = "BODY_BLOCK"};
    const char *in[2] = {"i0", "acc0"}, *out[2] = {"i", "acc"};
    CHECK_OK(ctosa_block_add_op(c.g, m, CTOSA_OP_WHILE_LOOP, 2, in, 2, out, &a, NULL));

    ctosa_block *cb = cfb_sub(&c, "COND_BLOCK", "i:ci f:cacc", "b:go");
    op(&c, cb, CTOSA_OP_GREATER, "lim", "ci", "go");

    ctosa_block *b = cfb_sub(&c, "BODY_BLOCK", "i:bi f:bacc", "i:ni f:nacc");
    tensors(&c, b, "b:big", PLAIN);
    const_i32(&c, b, "one", 1);
    const_i32(&c, b, "two", 2);
    op(&c, b, CTOSA_OP_ADD, "bi", "one", "ni");
    op(&c, b, CTOSA_OP_GREATER, "bi", "two", "big");
    ctosa_attr ai = {.then_graph = "BIG_BLOCK", .else_graph = "SMALL_BLOCK"};
    const char *iin[2] = {"big", "bacc"}, *iout[1] = {"nacc"};
    CHECK_OK(ctosa_block_add_op(c.g, b, CTOSA_OP_COND_IF, 2, iin, 1, iout, &ai, NULL));

    ctosa_block *big = cfb_sub(&c, "BIG_BLOCK", "f:ga", "f:gr");
    op(&c, big, CTOSA_OP_ADD, "ga", "ga", "gr");
    ctosa_block *sm = cfb_sub(&c, "SMALL_BLOCK", "f:sa", "f:sr");
    op(&c, sm, CTOSA_OP_ABS, "sa", NULL, "sr");
    return c.g;
}

static const char *const SPEC = "TOSA-1.0+INT+FP+cf";

/* The validator's report ("" when the graph conforms); caller frees. */
static char *validate(const ctosa_graph *g) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(SPEC, &spec));
    ctosa_error *e = ctosa_validate(g, &spec, NULL);
    char *m = strdup(e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    return m;
}

static ctosa_graph *roundtrip(const ctosa_graph *g, void **buf) {
    size_t n = 0;
    ctosa_graph *r = NULL;
    *buf = NULL;
    CHECK_OK(ctosa_write_memory(g, NULL, buf, &n));
    if (*buf) CHECK_OK(ctosa_read_memory(*buf, n, "roundtrip.tosa", NULL, &r));
    return r;
}

static char *mlir_text(const ctosa_graph *g) {
    char *t = NULL;
    size_t n = 0;
    CHECK_OK(ctosa_mlir_write_memory(g, NULL, &t, &n));
    return t ? t : strdup("");
}

static const float X[6] = {1.5f, -2.0f, 3.25f, -0.5f, 0.0f, 7.0f};
static const float Y[6] = {10.0f, 20.0f, -30.0f, 0.25f, -1.0f, 2.0f};

/* Runs the COND_IF graph with condition cond; z receives 6 floats. With
 * slice, only what z needs runs (ctosa_interp_options.outputs): k, which
 * only the else graph reads, must still be computed. */
static void run_cond_opt(const ctosa_graph *g, uint8_t cond, float *z, bool slice) {
    ctosa_interp *it = NULL;
    memset(z, 0xff, 6 * sizeof *z);
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    static const char *const outs[1] = {"z"};
    if (slice) opt.outputs = outs, opt.n_outputs = 1;
    CHECK_OK(ctosa_interp_create(g, &opt, &it));
    if (!it) return;
    int64_t d1[1] = {1}, d23[2] = {2, 3};
    CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, d1, &cond, 1));
    CHECK_OK(ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 2, d23, X, sizeof X));
    CHECK_OK(ctosa_interp_set_input(it, "y", CTOSA_DTYPE_FP32, 2, d23, Y, sizeof Y));
    CHECK_OK(ctosa_interp_run(it));
    ctosa_interp_tensor t;
    memset(&t, 0, sizeof t);
    CHECK_OK(ctosa_interp_get_output(it, "z", &t));
    if (t.data && t.size == 6 * sizeof *z) memcpy(z, t.data, t.size);
    ctosa_interp_free(it);
}

static void run_cond(const ctosa_graph *g, uint8_t cond, float *z) { run_cond_opt(g, cond, z, false); }

static void run_while(const ctosa_graph *g, int32_t *i, float *acc) {
    ctosa_interp *it = NULL;
    *i = -1;
    memset(acc, 0xff, 6 * sizeof *acc);
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    if (!it) return;
    int64_t d1[1] = {1}, d23[2] = {2, 3};
    int32_t zero = 0;
    CHECK_OK(ctosa_interp_set_input(it, "i0", CTOSA_DTYPE_INT32, 1, d1, &zero, 4));
    CHECK_OK(ctosa_interp_set_input(it, "acc0", CTOSA_DTYPE_FP32, 2, d23, X, sizeof X));
    CHECK_OK(ctosa_interp_run(it));
    ctosa_interp_tensor t;
    memset(&t, 0, sizeof t);
    CHECK_OK(ctosa_interp_get_output(it, "i", &t));
    if (t.data && t.size == 4) memcpy(i, t.data, 4);
    CHECK_OK(ctosa_interp_get_output(it, "acc", &t));
    if (t.data && t.size == 6 * sizeof *acc) memcpy(acc, t.data, t.size);
    ctosa_interp_free(it);
}

static void test_cond_if_forms(void) {
    float want_then[6], want_else[6], z[2][2][6];
    for (int k = 0; k < 6; k++) want_then[k] = X[k] + Y[k], want_else[k] = X[k] - fabsf(X[k]);
    char *mlir[2];
    for (int f = 0; f < 2; f++) {
        ctosa_graph *g = build_cond((form)f, "ELSE_BLOCK");
        char *m = validate(g);
        CHECK_MSG(!*m, "%s form: %s", form_name[f], m);
        free(m);
        run_cond(g, 1, z[f][0]);
        run_cond(g, 0, z[f][1]);
        CHECK_MSG(!memcmp(z[f][0], want_then, sizeof want_then), "%s form: then branch", form_name[f]);
        CHECK_MSG(!memcmp(z[f][1], want_else, sizeof want_else), "%s form: else branch", form_name[f]);
        float zs[6];
        run_cond_opt(g, 0, zs, true);
        CHECK_MSG(!memcmp(zs, want_else, sizeof zs), "%s form: else branch, slice", form_name[f]);
        /* written and read back: the same form, the same results */
        void *buf;
        ctosa_graph *r = roundtrip(g, &buf);
        if (r) {
            CHECK(ctosa_graph_region_count(r) == (f == FORM_REGIONS ? 3u : 1u));
            CHECK(ctosa_graph_region(r, 0)->n_blocks == (f == FORM_REGIONS ? 1u : 3u));
            m = validate(r);
            CHECK_MSG(!*m, "%s form read back: %s", form_name[f], m);
            free(m);
            float zz[6];
            run_cond(r, 1, zz);
            CHECK(!memcmp(zz, want_then, sizeof zz));
            run_cond(r, 0, zz);
            CHECK(!memcmp(zz, want_else, sizeof zz));
        }
        ctosa_graph_free(r);
        free(buf);
        mlir[f] = mlir_text(g);
        CHECK(strstr(mlir[f], "\"tosa.cond_if\"") != NULL);
        ctosa_graph_free(g);
    }
    /* MLIR holds the sub-graphs as regions of the operation either way */
    CHECK_MSG(strcmp(mlir[0], mlir[1]) == 0, "MLIR differs:\n%s\n---\n%s", mlir[0], mlir[1]);
    free(mlir[0]);
    free(mlir[1]);
}

static void test_while_loop_forms(void) {
    float want[6], acc[2][6];
    int32_t i[2];
    for (int k = 0; k < 6; k++) want[k] = 4.0f * fabsf(X[k]);
    char *mlir[2];
    for (int f = 0; f < 2; f++) {
        ctosa_graph *g = build_while((form)f);
        char *m = validate(g);
        CHECK_MSG(!*m, "%s form: %s", form_name[f], m);
        free(m);
        run_while(g, &i[f], acc[f]);
        CHECK_MSG(i[f] == 5, "%s form: i = %d", form_name[f], i[f]);
        CHECK_MSG(!memcmp(acc[f], want, sizeof want), "%s form: acc[0] = %g", form_name[f], acc[f][0]);
        void *buf;
        ctosa_graph *r = roundtrip(g, &buf);
        if (r) {
            CHECK(ctosa_graph_region(r, 0)->n_blocks == (f == FORM_REGIONS ? 1u : 5u));
            m = validate(r);
            CHECK_MSG(!*m, "%s form read back: %s", form_name[f], m);
            free(m);
            int32_t ii;
            float aa[6];
            run_while(r, &ii, aa);
            CHECK(ii == 5 && !memcmp(aa, want, sizeof aa));
        }
        ctosa_graph_free(r);
        free(buf);
        mlir[f] = mlir_text(g);
        CHECK(strstr(mlir[f], "\"tosa.while_loop\"") != NULL);
        ctosa_graph_free(g);
    }
    CHECK_MSG(strcmp(mlir[0], mlir[1]) == 0, "MLIR differs:\n%s\n---\n%s", mlir[0], mlir[1]);
    free(mlir[0]);
    free(mlir[1]);
}

/* Errors in and about called blocks name the block. */
static void test_block_errors(void) {
    /* a name that is neither a region nor a block */
    ctosa_graph *g = build_cond(FORM_BLOCKS, "NO_SUCH_BLOCK");
    char *m = validate(g);
    CHECK_MSG(
        strstr(m, "op #1 COND_IF 'z': else_graph 'NO_SUCH_BLOCK' names no region or block of the graph"),
        "%s", m);
    free(m);
    float z[6];
    ctosa_interp *it = NULL;
    CHECK_OK(ctosa_interp_create(g, NULL, &it));
    if (it) {
        int64_t d1[1] = {1}, d23[2] = {2, 3};
        uint8_t c0 = 0;
        CHECK_OK(ctosa_interp_set_input(it, "c", CTOSA_DTYPE_BOOL, 1, d1, &c0, 1));
        CHECK_OK(ctosa_interp_set_input(it, "x", CTOSA_DTYPE_FP32, 2, d23, X, sizeof X));
        CHECK_OK(ctosa_interp_set_input(it, "y", CTOSA_DTYPE_FP32, 2, d23, Y, sizeof Y));
        CHECK_ERR(ctosa_interp_run(it), CTOSA_ERR_INVALID,
                  "op #1 COND_IF 'z': region or block 'NO_SUCH_BLOCK' does not exist");
        ctosa_interp_free(it);
    }
    ctosa_graph_free(g);
    (void)z;

    /* a problem inside a called block: reported once, naming the block */
    g = build_cond(FORM_BLOCKS, "ELSE_BLOCK");
    ctosa_block *eb = ctosa_graph_region(g, 0)->blocks[2];
    const char *in[1] = {"ea"}, *out[1] = {"er2"};
    CHECK_OK(ctosa_block_add_tensor(g, eb, "er2", CTOSA_DTYPE_INT32, 2, S23, NULL));
    CHECK_OK(ctosa_block_add_op(g, eb, CTOSA_OP_ABS, 1, in, 1, out, NULL, NULL));
    m = validate(g);
    const char *want = "block 'ELSE_BLOCK' op #1 ABS 'er2'";
    const char *hit = strstr(m, want);
    CHECK_MSG(hit && !strstr(hit + 1, want), "%s", m);
    CHECK_MSG(!strstr(m, "THEN_BLOCK"), "%s", m);
    free(m);
    ctosa_graph_free(g);

    /* a block that calls itself */
    g = build_cond(FORM_BLOCKS, "ELSE_BLOCK");
    ctosa_block *tb = ctosa_graph_region(g, 0)->blocks[1];
    static const uint8_t yes = 1;
    ctosa_tensor *ct = NULL;
    CHECK_OK(ctosa_block_add_tensor(g, tb, "tc", CTOSA_DTYPE_BOOL, 1, S1, &ct));
    if (ct) CHECK_OK(ctosa_tensor_set_data(g, ct, &yes, 1, false));
    const char *rin[3] = {"tc", "ta", "tb"}, *rout[1] = {"tr2"};
    CHECK_OK(ctosa_block_add_tensor(g, tb, "tr2", CTOSA_DTYPE_FP32, 2, S23, NULL));
    ctosa_attr a = {.then_graph = "THEN_BLOCK", .else_graph = "ELSE_BLOCK"};
    CHECK_OK(ctosa_block_add_op(g, tb, CTOSA_OP_COND_IF, 3, rin, 1, rout, &a, NULL));
    m = validate(g);
    CHECK_MSG(strstr(m, "block 'THEN_BLOCK' op #1 COND_IF 'tr2': block 'THEN_BLOCK' is called recursively"),
              "%s", m);
    free(m);
    CHECK_ERR(ctosa_interp_create(g, NULL, &it), CTOSA_ERR_INVALID, "block 'THEN_BLOCK' calls itself");
    ctosa_graph_free(g);
}

/* ------------------------------------------------------------------ CLI */

static void write_npy(const char *path, ctosa_dtype dt, uint32_t rank, const int64_t *shape, const void *data,
                      uint64_t count, uint64_t size) {
    ctosa_interp_tensor t = {"v", dt, rank, shape, count, (void *)data, size};
    CHECK_OK(ctosa_tensor_file_write_npy(path, &t));
}

static bool npy_equals(const char *path, const void *want, size_t n) {
    size_t sz = 0;
    unsigned char *p = th_read(path, &sz);
    bool ok = p && sz >= n && memcmp(p + sz - n, want, n) == 0;
    free(p);
    return ok;
}

/* Both forms through the command line: check, every dump format, run. */
static void test_cli(void) {
    const char *dir = th_tmpdir();
    int64_t d1[1] = {1}, d23[2] = {2, 3};
    uint8_t c0 = 0;
    int32_t zero = 0;
    write_npy(th_path(dir, "c.npy"), CTOSA_DTYPE_BOOL, 1, d1, &c0, 1, 1);
    write_npy(th_path(dir, "x.npy"), CTOSA_DTYPE_FP32, 2, d23, X, 6, sizeof X);
    write_npy(th_path(dir, "y.npy"), CTOSA_DTYPE_FP32, 2, d23, Y, 6, sizeof Y);
    write_npy(th_path(dir, "i0.npy"), CTOSA_DTYPE_INT32, 1, d1, &zero, 1, 4);
    float want_else[6], want_acc[6];
    for (int k = 0; k < 6; k++) want_else[k] = X[k] - fabsf(X[k]), want_acc[k] = 4.0f * fabsf(X[k]);
    char *dumps[2][2][4]; /* [graph][form][format] */
    static const char *const fmts[4] = {"text", "json", "dot", "mlir"};
    for (int gi = 0; gi < 2; gi++)
        for (int f = 0; f < 2; f++) {
            ctosa_graph *g = gi ? build_while((form)f) : build_cond((form)f, "ELSE_BLOCK");
            char name[64];
            snprintf(name, sizeof name, "%s_%s.tosa", gi ? "while" : "cond", form_name[f]);
            const char *file = th_path(dir, name);
            CHECK_OK(ctosa_write_file(g, file, NULL));
            ctosa_graph_free(g);
            char *out = NULL;
            int rc = th_run(&out, "'%s' check '%s' --spec %s", th_ctosa(), file, SPEC);
            CHECK_MSG(rc == 0 && strstr(out, "OK, conforms"), "check %s: rc %d: %s", name, rc, out);
            free(out);
            for (int k = 0; k < 4; k++) {
                dumps[gi][f][k] = NULL;
                rc = th_run(&dumps[gi][f][k], "cd '%s' && '%s' dump '%s' --format %s", dir, th_ctosa(), name,
                            fmts[k]);
                CHECK_MSG(rc == 0, "dump --format %s %s: rc %d: %s", fmts[k], name, rc, dumps[gi][f][k]);
            }
            const char *od = th_path(dir, gi ? "out_while" : "out_cond");
            if (gi)
                rc = th_run(&out, "'%s' run '%s' --input i0='%s' --input acc0='%s' -o '%s' -q", th_ctosa(),
                            file, th_path(dir, "i0.npy"), th_path(dir, "x.npy"), od);
            else
                rc = th_run(&out, "'%s' run '%s' --input c='%s' --input x='%s' --input y='%s' -o '%s' -q",
                            th_ctosa(), file, th_path(dir, "c.npy"), th_path(dir, "x.npy"),
                            th_path(dir, "y.npy"), od);
            CHECK_MSG(rc == 0, "run %s: rc %d: %s", name, rc, out);
            free(out);
            if (gi) {
                int32_t five = 5;
                CHECK_MSG(npy_equals(th_path(od, "acc.npy"), want_acc, sizeof want_acc), "run %s: acc", name);
                CHECK_MSG(npy_equals(th_path(od, "i.npy"), &five, 4), "run %s: i", name);
            } else {
                CHECK_MSG(npy_equals(th_path(od, "z.npy"), want_else, sizeof want_else), "run %s: z", name);
            }
        }
    for (int gi = 0; gi < 2; gi++) {
        /* MLIR is the same text for both forms (its loc names the file) */
        const char *a = dumps[gi][0][3], *b = dumps[gi][1][3];
        const char *na = a ? strstr(a, "_regions.tosa") : NULL, *nb = b ? strstr(b, "_blocks.tosa") : NULL;
        CHECK_MSG(na && nb && strncmp(a, b, (size_t)(na - a)) == 0, "dump --format mlir differs by form");
        /* the text dump lists the called blocks in the main region */
        const char *t = dumps[gi][1][0];
        CHECK_MSG(t && strstr(t, gi ? "  block BODY_BLOCK" : "  block THEN_BLOCK") &&
                      !strstr(t, "region THEN_BLOCK"),
                  "%s", t ? t : "");
        /* DOT: the dashed control-flow edge leads to the block's cluster */
        const char *d = dumps[gi][1][2];
        CHECK_MSG(d && strstr(d, gi ? "lhead=\"cluster_r0_b2\", label=\"body_graph\""
                                    : "lhead=\"cluster_r0_b1\", label=\"then_graph\""),
                  "%s", d ? d : "");
        d = dumps[gi][0][2];
        CHECK_MSG(d && strstr(d, gi ? "lhead=\"cluster_r2\", label=\"body_graph\""
                                    : "lhead=\"cluster_r1\", label=\"then_graph\""),
                  "%s", d ? d : "");
        for (int f = 0; f < 2; f++)
            for (int k = 0; k < 4; k++) free(dumps[gi][f][k]);
    }
}

int main(void) {
    RUN(test_cond_if_forms);
    RUN(test_while_loop_forms);
    RUN(test_block_errors);
    RUN(test_cli);
    return th_finish();
}
