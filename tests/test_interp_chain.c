/* test_interp_chain.c - element-wise chains fused by the plan
 * (interp_fuse.h) give the bytes of the operators run one by one:
 *  - fp32, int32, int16, int8 and bool chains over broadcasts (one value,
 *    per channel, other dimensions), special values (NaN, infinities, -0,
 *    subnormals, huge), with 1 and 2 threads, against the same graph with
 *    an IDENTITY after every operator (which keeps any group from forming)
 *    and, where the operators have no faster path, against the plain
 *    reference loops;
 *  - intermediates that are block outputs or read after the chain are
 *    stored, and those read twice inside the chain stay right;
 *  - REQUIRE failures (int32 overflow, shifts, division by zero, ABS)
 *    report the message of the unfused run: the earliest operator, at its
 *    first failing element, even when a later operator fails earlier;
 *  - the row API (fz_run_row) on a row of fp32 values with per-channel
 *    constants. */
#include <math.h>

#include "harness.h"
#include "interp/interp_fuse.h"

typedef struct cb {
    ctosa_graph *g;
    ctosa_block *b;
    ctosa_error *e;
    int id;
    bool ident; /* an IDENTITY after every operator */
    int32_t shape[4];
} cb;

static const char *cname(cb *c, const char *p) {
    char buf[32];
    snprintf(buf, sizeof buf, "%s%d", p, c->id++);
    return ctosa_graph_strdup(c->g, buf);
}

static const char *ctensor(cb *c, ctosa_dtype t, const int32_t *shape) {
    const char *n = cname(c, "t");
    if (!c->e) c->e = ctosa_block_add_tensor(c->g, c->b, n, t, 4, shape ? shape : c->shape, NULL);
    return n;
}

static const char *cconst(cb *c, ctosa_dtype t, const int32_t *shape, const void *data, size_t bytes) {
    ctosa_tensor *ct = NULL;
    const char *n = cname(c, "k");
    int32_t one[4] = {1, 1, 1, 1};
    if (!c->e) c->e = ctosa_block_add_tensor(c->g, c->b, n, t, shape ? 4 : 1, shape ? shape : one, &ct);
    if (!c->e) c->e = ctosa_tensor_set_data(c->g, ct, data, bytes, true);
    if (!c->e) c->e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST, 0, NULL, 1, &n, NULL, NULL);
    return n;
}

static const char *kf(cb *c, float v) {
    static const int32_t s1[4] = {1, 1, 1, 1};
    return cconst(c, CTOSA_DTYPE_FP32, s1, &v, 4);
}
static const char *ki(cb *c, int32_t v) {
    static const int32_t s1[4] = {1, 1, 1, 1};
    return cconst(c, CTOSA_DTYPE_INT32, s1, &v, 4);
}
static const char *k8(cb *c, int8_t v) { return cconst(c, CTOSA_DTYPE_INT8, NULL, &v, 1); }

/* An operator with output dtype t and the chain's shape (or ident: then
 * followed by an IDENTITY whose output is returned). */
static const char *cop(cb *c, ctosa_op_kind k, ctosa_dtype t, uint32_t n, const char *const *in,
                       const ctosa_attr *a) {
    const char *o = ctensor(c, t, NULL);
    if (!c->e) c->e = ctosa_block_add_op(c->g, c->b, k, n, in, 1, &o, a, NULL);
    if (!c->ident) return o;
    const char *o2 = ctensor(c, t, NULL);
    if (!c->e) c->e = ctosa_block_add_op(c->g, c->b, CTOSA_OP_IDENTITY, 1, &o, 1, &o2, NULL, NULL);
    return o2;
}
static const char *un(cb *c, ctosa_op_kind k, ctosa_dtype t, const char *x) {
    return cop(c, k, t, 1, &x, NULL);
}
static const char *bin(cb *c, ctosa_op_kind k, ctosa_dtype t, const char *x, const char *y) {
    const char *in[] = {x, y};
    return cop(c, k, t, 2, in, NULL);
}
static const char *mul(cb *c, ctosa_dtype t, const char *x, const char *y, int8_t shift) {
    const char *in[] = {x, y, k8(c, shift)};
    return cop(c, CTOSA_OP_MUL, t, 3, in, NULL);
}
static const char *clampf(cb *c, const char *x, float lo, float hi, bool ignore) {
    ctosa_attr a = {0};
    a.min_val = (ctosa_bytes){(const uint8_t *)ctosa_graph_strdup(c->g, "xxxx"), 4};
    a.max_val = (ctosa_bytes){(const uint8_t *)ctosa_graph_strdup(c->g, "xxxx"), 4};
    memcpy((void *)a.min_val.p, &lo, 4);
    memcpy((void *)a.max_val.p, &hi, 4);
    a.nan_mode = ignore ? CTOSA_NAN_IGNORE : CTOSA_NAN_PROPAGATE;
    return cop(c, CTOSA_OP_CLAMP, CTOSA_DTYPE_FP32, 1, &x, &a);
}
static const char *clampi(cb *c, ctosa_dtype t, const char *x, int32_t lo, int32_t hi) {
    ctosa_attr a = {0};
    int bytes = t == CTOSA_DTYPE_INT8 ? 1 : t == CTOSA_DTYPE_INT16 ? 2 : 4;
    uint8_t *p = (uint8_t *)ctosa_graph_strdup(c->g, "xxxxxxxx");
    memcpy(p, &lo, (size_t)bytes); /* little-endian host */
    memcpy(p + 4, &hi, (size_t)bytes);
    a.min_val = (ctosa_bytes){p, (uint32_t)bytes};
    a.max_val = (ctosa_bytes){p + 4, (uint32_t)bytes};
    return cop(c, CTOSA_OP_CLAMP, t, 1, &x, &a);
}
static const char *sel(cb *c, ctosa_dtype t, const char *k, const char *x, const char *y) {
    const char *in[] = {k, x, y};
    return cop(c, CTOSA_OP_SELECT, t, 3, in, NULL);
}

static void cstart(cb *c, bool ident, int32_t n0, int32_t n1, int32_t n2, int32_t n3) {
    memset(c, 0, sizeof *c);
    c->ident = ident;
    c->shape[0] = n0;
    c->shape[1] = n1;
    c->shape[2] = n2;
    c->shape[3] = n3;
    ctosa_region *r;
    c->e = ctosa_graph_create(CTOSA_VERSION_1_0, &c->g);
    if (!c->e) c->e = ctosa_graph_add_region(c->g, "main", &r);
    if (!c->e) c->e = ctosa_region_add_block(c->g, r, "main", &c->b);
}

static const char *cinput(cb *c, ctosa_dtype t) {
    const char *n = ctensor(c, t, NULL);
    if (!c->e) c->e = ctosa_block_add_input(c->g, c->b, n);
    return n;
}

/* A chain builder: adds the operators reading inputs x (fp32) and y
 * (int32) and returns the names of the outputs (up to 4). */
typedef int (*chain_fn)(cb *c, const char *x, const char *y, const char **outs);

typedef struct result {
    char *err;       /* message, or NULL */
    uint8_t *out[4]; /* output bytes */
    size_t size[4];
    int n;
    uint32_t ran;    /* operators that ran (groups count once) */
    uint32_t groups; /* element-wise groups among them */
} result;

static void result_free(result *r) {
    free(r->err);
    for (int i = 0; i < 4; i++) free(r->out[i]);
    memset(r, 0, sizeof *r);
}

static const float *g_x;
static const int32_t *g_y;

static result run_chain(chain_fn fn, bool ident, int threads, bool reference, const int32_t *shape) {
    result r = {0};
    cb c;
    cstart(&c, ident, shape[0], shape[1], shape[2], shape[3]);
    const char *x = cinput(&c, CTOSA_DTYPE_FP32), *y = cinput(&c, CTOSA_DTYPE_INT32);
    const char *outs[4];
    r.n = fn(&c, x, y, outs);
    for (int i = 0; i < r.n && !c.e; i++) c.e = ctosa_block_add_output(c.g, c.b, outs[i]);
    ctosa_interp *it = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.reference = reference;
    opt.profile = true;
    ctosa_error *e = c.e;
    int64_t sh[4] = {shape[0], shape[1], shape[2], shape[3]};
    size_t cnt = (size_t)shape[0] * (size_t)shape[1] * (size_t)shape[2] * (size_t)shape[3];
    if (!e) e = ctosa_interp_create(c.g, &opt, &it);
    if (!e) e = ctosa_interp_set_input(it, x, CTOSA_DTYPE_FP32, 4, sh, g_x, cnt * 4);
    if (!e) e = ctosa_interp_set_input(it, y, CTOSA_DTYPE_INT32, 4, sh, g_y, cnt * 4);
    if (!e) e = ctosa_interp_run(it);
    if (!e) e = ctosa_interp_run(it); /* twice: nothing kept from the first run matters */
    for (int i = 0; !e && i < r.n; i++) {
        ctosa_interp_tensor t;
        e = ctosa_interp_get_output(it, outs[i], &t);
        if (e) break;
        r.out[i] = malloc(t.size ? t.size : 1);
        memcpy(r.out[i], t.data, t.size);
        r.size[i] = t.size;
    }
    for (uint32_t i = 0; !e && i < ctosa_interp_profile_count(it); i++) {
        ctosa_interp_op_profile pr;
        if (!ctosa_interp_profile_get(it, i, &pr) && pr.runs) {
            r.ran++;
            r.groups += strstr(pr.where, "fused element-wise operators") != NULL;
        }
    }
    if (e) {
        r.err = strdup(ctosa_error_message(e));
        ctosa_error_free(e);
    }
    ctosa_interp_free(it);
    ctosa_graph_free(c.g);
    return r;
}

static bool same(const result *a, const result *b, const char *what) {
    if ((a->err == NULL) != (b->err == NULL) || (a->err && strcmp(a->err, b->err) != 0)) {
        fprintf(stderr, "%s: errors differ:\n  %s\n  %s\n", what, a->err ? a->err : "(none)",
                b->err ? b->err : "(none)");
        return false;
    }
    if (a->err) return true;
    for (int i = 0; i < a->n; i++)
        if (a->size[i] != b->size[i] || memcmp(a->out[i], b->out[i], a->size[i]) != 0) {
            size_t k = 0;
            while (k < a->size[i] && a->out[i][k] == b->out[i][k]) k++;
            fprintf(stderr, "%s: output %d differs at byte %zu\n", what, i, k);
            return false;
        }
    return true;
}

/* Runs fn fused (1 and 2 threads) against the IDENTITY-separated graph
 * (and the reference loops when exact). */
static void check_chain(const char *name, chain_fn fn, const int32_t *shape, bool vs_reference,
                        const char *want_err) {
    result base = run_chain(fn, true, 1, false, shape);
    if (!want_err) CHECK_MSG(!base.err, "%s: the unfused run fails: %s", name, base.err);
    for (int threads = 1; threads <= 2; threads++) {
        result f = run_chain(fn, false, threads, false, shape);
        char what[128];
        snprintf(what, sizeof what, "%s [%d,%d,%d,%d] %d thread(s)", name, shape[0], shape[1], shape[2],
                 shape[3], threads);
        if (!want_err) CHECK_MSG(same(&f, &base, what), "%s: fused differs from unfused", what);
        {
            result ref = run_chain(fn, false, threads, true, shape);
            /* the chain did fuse: far fewer operators ran; not over small
             * tensors, where a group would not pay */
            size_t count = (size_t)shape[0] * (size_t)shape[1] * (size_t)shape[2] * (size_t)shape[3];
            if (!want_err && count >= FZ_MIN_COUNT)
                CHECK_MSG(f.ran * 3 < ref.ran, "%s: %u of %u operators ran", what, f.ran, ref.ran);
            if (!want_err && count < FZ_MIN_COUNT)
                CHECK_MSG(f.groups == 0, "%s: %u groups (small tensors are not grouped)", what, f.groups);
            if (vs_reference || want_err)
                CHECK_MSG(same(&f, &ref, what), "%s: fused differs from the reference loops", what);
            if (want_err)
                CHECK_MSG(f.err && strstr(f.err, want_err), "%s: error '%s' lacks '%s'", what,
                          f.err ? f.err : "(none)", want_err);
            result_free(&ref);
        }
        if (!want_err) CHECK_MSG(!f.err, "%s: %s", what, f.err);
        result_free(&f);
    }
    result_free(&base);
}

#define F CTOSA_DTYPE_FP32
#define I32 CTOSA_DTYPE_INT32
#define I16 CTOSA_DTYPE_INT16
#define I8 CTOSA_DTYPE_INT8
#define B CTOSA_DTYPE_BOOL

static int32_t g_chan;                   /* channels (last dimension) */
static float g_fchan[2048], g_frow[128]; /* per-channel and per-row (dim 1) constants */

/* fp32: every float step, one-value / per-channel / dim-1 broadcasts,
 * an intermediate that is an output, one read twice. */
static int chain_float(cb *c, const char *x, const char *y, const char **outs) {
    int32_t cs[4] = {1, 1, 1, g_chan}, rs[4] = {1, c->shape[1], 1, 1};
    const char *ch = cconst(c, F, cs, g_fchan, (size_t)g_chan * 4);
    const char *rw = cconst(c, F, rs, g_frow, (size_t)c->shape[1] * 4);
    const char *a = mul(c, F, x, kf(c, 0.37f), 0);
    a = bin(c, CTOSA_OP_ADD, F, a, ch);
    const char *m = bin(c, CTOSA_OP_MAXIMUM, F, a, rw);
    const char *fl = un(c, CTOSA_OP_FLOOR, F, m);
    const char *ce = un(c, CTOSA_OP_CEIL, F, a);
    const char *s = bin(c, CTOSA_OP_SUB, F, ce, fl);
    const char *e1 = un(c, CTOSA_OP_EXP, F, clampf(c, a, -80.0f, 80.0f, false));
    const char *sg = un(c, CTOSA_OP_SIGMOID, F, a);
    const char *th = un(c, CTOSA_OP_TANH, F, m);
    const char *er = un(c, CTOSA_OP_ERF, F, s);
    const char *t1 = bin(c, CTOSA_OP_MUL, F, sg, th);
    t1 = bin(c, CTOSA_OP_ADD, F, t1, er);
    t1 = bin(c, CTOSA_OP_MINIMUM, F, t1, e1);
    const char *ab = un(c, CTOSA_OP_ABS, F, a);
    const char *lg = un(c, CTOSA_OP_LOG, F, ab);
    const char *rc = un(c, CTOSA_OP_RECIPROCAL, F, a);
    const char *rq = un(c, CTOSA_OP_RSQRT, F, a);
    const char *ng = un(c, CTOSA_OP_NEGATE, F, rq);
    const char *pw = bin(c, CTOSA_OP_POW, F, ab, kf(c, 0.75f));
    const char *sn = un(c, CTOSA_OP_SIN, F, fl);
    const char *cs2 = un(c, CTOSA_OP_COS, F, fl);
    const char *u = bin(c, CTOSA_OP_ADD, F, lg, rc);
    u = bin(c, CTOSA_OP_MAXIMUM, F, u, ng);
    u = bin(c, CTOSA_OP_ADD, F, u, pw);
    u = bin(c, CTOSA_OP_SUB, F, u, bin(c, CTOSA_OP_MUL, F, sn, cs2));
    const char *cl = clampf(c, u, -3.0f, 5.0f, true);
    ctosa_attr ign = {0};
    ign.nan_mode = CTOSA_NAN_IGNORE;
    const char *in2[] = {cl, x};
    const char *mx = cop(c, CTOSA_OP_MINIMUM, F, 2, in2, &ign);
    const char *gt = bin(c, CTOSA_OP_GREATER, B, mx, t1);
    const char *ge = bin(c, CTOSA_OP_GREATER_EQUAL, B, a, kf(c, 0.0f));
    const char *eq = bin(c, CTOSA_OP_EQUAL, B, fl, ce);
    const char *lo = bin(c, CTOSA_OP_LOGICAL_OR, B, gt, un(c, CTOSA_OP_LOGICAL_NOT, B, eq));
    const char *z = sel(c, F, lo, mx, t1);
    z = sel(c, F, ge, z, fl);
    outs[0] = z;
    outs[1] = un(c, CTOSA_OP_CAST, I32, z);
    outs[2] = un(c, CTOSA_OP_CAST, I8, t1);
    outs[3] = s; /* an intermediate read inside the chain too */
    (void)y;
    return 4;
}

/* Normalisation tails: a per-row scale (dimension 1, repeated along 2 and
 * 3), a per-channel shift, then SiLU (SIGMOID and MUL, fused by the plan
 * into one operator before the groups are made), with an operand
 * broadcast along dimension 2 only ([1, C1, 1, C3]: not affine, so it
 * ends a group) in the middle. */
static int chain_norm_silu(cb *c, const char *x, const char *y, const char **outs) {
    int32_t cs[4] = {1, 1, 1, g_chan}, rs[4] = {1, c->shape[1], 1, 1};
    int32_t ms[4] = {1, c->shape[1], 1, g_chan};
    const char *ch = cconst(c, F, cs, g_fchan, (size_t)g_chan * 4);
    const char *rw = cconst(c, F, rs, g_frow, (size_t)c->shape[1] * 4);
    size_t nm = (size_t)c->shape[1] * (size_t)g_chan;
    float *mv = malloc(nm * 4);
    for (size_t i = 0; i < nm; i++) mv[i] = (float)(i % 17) * 0.125f - 1.0f;
    const char *mid = cconst(c, F, ms, mv, nm * 4);
    free(mv);
    const char *a = bin(c, CTOSA_OP_MUL, F, x, rw);
    a = bin(c, CTOSA_OP_ADD, F, a, ch);
    const char *z = bin(c, CTOSA_OP_MUL, F, a, un(c, CTOSA_OP_SIGMOID, F, a));
    z = bin(c, CTOSA_OP_SUB, F, z, kf(c, 0.25f));
    z = bin(c, CTOSA_OP_MUL, F, z, mid); /* not affine: the group ends before it */
    z = bin(c, CTOSA_OP_ADD, F, z, rw);
    const char *e = un(c, CTOSA_OP_EXP, F, bin(c, CTOSA_OP_SUB, F, z, rw));
    outs[0] = bin(c, CTOSA_OP_MUL, F, e, un(c, CTOSA_OP_SIGMOID, F, e));
    outs[1] = a;
    (void)y;
    return 2;
}

/* int32: checked and wrapping integer steps, casts, selects. */
static int chain_int(cb *c, const char *x, const char *y, const char **outs) {
    int32_t cs[4] = {1, 1, 1, g_chan};
    int32_t chv[2048];
    for (int i = 0; i < g_chan; i++) chv[i] = (i * 7) % 5 + 1;
    const char *ch = cconst(c, I32, cs, chv, (size_t)g_chan * 4);
    const char *a = bin(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, I32, y, ch);
    const char *b = bin(c, CTOSA_OP_ADD, I32, a, ki(c, 12345));
    b = bin(c, CTOSA_OP_SUB, I32, b, un(c, CTOSA_OP_CLZ, I32, y));
    const char *m = mul(c, I32, b, ki(c, 3), 0);
    const char *ms = mul(c, I32, bin(c, CTOSA_OP_BITWISE_AND, I32, y, ki(c, 0xfffff)), ki(c, 12345), 9);
    const char *d = bin(c, CTOSA_OP_INTDIV, I32, ms, ch);
    const char *e = bin(c, CTOSA_OP_BITWISE_XOR, I32, d, m);
    e = bin(c, CTOSA_OP_BITWISE_AND, I32, e, ki(c, 0x7ff0ff));
    e = bin(c, CTOSA_OP_BITWISE_OR, I32, e, un(c, CTOSA_OP_BITWISE_NOT, I32, a));
    e = bin(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, I32, e, ch);
    e = bin(c, CTOSA_OP_LOGICAL_RIGHT_SHIFT, I32, e, ki(c, 3));
    const char *mx = bin(c, CTOSA_OP_MAXIMUM, I32, e, ms);
    const char *mn = bin(c, CTOSA_OP_MINIMUM, I32, mx, ki(c, 1 << 20));
    const char *ab = un(c, CTOSA_OP_ABS, I32, mn);
    const char *ng = un(c, CTOSA_OP_NEGATE, I32, ab);
    const char *cl = clampi(c, I32, ng, -100000, 5000);
    const char *c16 = un(c, CTOSA_OP_CAST, I16, cl);
    const char *c8 = un(c, CTOSA_OP_CAST, I8, cl);
    const char *p8 = mul(c, I32, c8, c8, 0); /* int8 x int8 -> int32 */
    const char *n8in[] = {c8, k8(c, 3), k8(c, -5)};
    const char *n8 = cop(c, CTOSA_OP_NEGATE, I8, 3, n8in, NULL);
    n8 = clampi(c, I8, n8, -100, 90);
    const char *s16 = bin(c, CTOSA_OP_BITWISE_XOR, I16, c16, un(c, CTOSA_OP_CAST, I16, y));
    const char *gt = bin(c, CTOSA_OP_GREATER, B, p8, cl);
    const char *eq = bin(c, CTOSA_OP_EQUAL, B, un(c, CTOSA_OP_CAST, I32, n8), ki(c, 0));
    const char *lx = bin(c, CTOSA_OP_LOGICAL_XOR, B, gt, eq);
    const char *la = bin(c, CTOSA_OP_LOGICAL_AND, B, lx, un(c, CTOSA_OP_CAST, B, y));
    const char *z = sel(c, I32, la, p8, mn);
    const char *fz = un(c, CTOSA_OP_CAST, F, z);
    fz = bin(c, CTOSA_OP_ADD, F, fz, x);
    outs[0] = z;
    outs[1] = fz;
    outs[2] = sel(c, I16, lx, s16, un(c, CTOSA_OP_CAST, I16, n8));
    outs[3] = un(c, CTOSA_OP_CAST, I32, un(c, CTOSA_OP_CAST, I8, x));
    return 4;
}

/* REQUIRE failures: a later operator failing at an earlier element must
 * not hide the earlier operator's failure. */
static int chain_overflow(cb *c, const char *x, const char *y, const char **outs) {
    const char *a = bin(c, CTOSA_OP_ADD, I32, y, ki(c, 2000000000)); /* fails where y > 147483647 */
    const char *b = bin(c, CTOSA_OP_SUB, I32, y, ki(c, 2000000000)); /* fails where y < -147483648 */
    const char *z = bin(c, CTOSA_OP_ADD, I32, a, b);
    outs[0] = z;
    (void)x;
    return 1;
}
static int chain_shift(cb *c, const char *x, const char *y, const char **outs) {
    const char *a = bin(c, CTOSA_OP_BITWISE_AND, I32, y, ki(c, 63));
    const char *b = bin(c, CTOSA_OP_LOGICAL_LEFT_SHIFT, I32, ki(c, 5), a);
    outs[0] = bin(c, CTOSA_OP_ADD, I32, b, ki(c, 1));
    (void)x;
    return 1;
}
static int chain_div(cb *c, const char *x, const char *y, const char **outs) {
    const char *a = bin(c, CTOSA_OP_BITWISE_AND, I32, y, ki(c, 255));
    const char *b = bin(c, CTOSA_OP_INTDIV, I32, ki(c, 1000), a);
    outs[0] = un(c, CTOSA_OP_ABS, I32, bin(c, CTOSA_OP_ADD, I32, b, y));
    (void)x;
    return 1;
}
static int chain_mulshift(cb *c, const char *x, const char *y, const char **outs) {
    const char *a = mul(c, I32, y, ki(c, 1 << 20), 2);
    outs[0] = un(c, CTOSA_OP_NEGATE, I32, a);
    (void)x;
    return 1;
}

/* The row API on a row of fp32 values with per-channel constants:
 * hard-swish x * clamp(x + b[c], 0, 6) * (1/6) against the formula. */
static void row_api(void) {
    float xr[37], b[40], r1[37], r2[37], sixth = 1.0f / 6.0f;
    for (int i = 0; i < 40; i++) b[i] = (float)i * 0.25f - 4.0f;
    for (int i = 0; i < 37; i++) xr[i] = (float)(i * 13 % 29) * 0.5f - 7.0f;
    const size_t c0 = 3; /* the row holds channels 3..39 */
    fz_step s[4] = {
        {.op = FZ_ADD, .t = FZ_F32, .to = FZ_F32, .dst = 2, .src = {0, 1}},
        {.op = FZ_CLAMP, .t = FZ_F32, .to = FZ_F32, .dst = 3, .src = {2}, .flo = 0, .fhi = 6},
        {.op = FZ_MUL, .t = FZ_F32, .to = FZ_F32, .dst = 2, .src = {0, 3}},
        {.op = FZ_MUL, .t = FZ_F32, .to = FZ_F32, .dst = 0, .src = {2, 4}, .one = 2},
    };
    float want[37];
    for (int i = 0; i < 37; i++) {
        float v = xr[i] + b[c0 + (size_t)i];
        v = v < 0 ? 0 : v > 6 ? 6 : v;
        want[i] = xr[i] * v * sixth;
    }
    void *slots[] = {xr, b + c0, r1, r2, &sixth};
    CHECK(fz_run_row(s, 4, slots, 37, NULL));
    CHECK(memcmp(xr, want, sizeof want) == 0);
    for (int op = 0; op < FZ_N_OPS; op++) /* every op has some type */
        CHECK_MSG(fz_supported((fz_op)op, FZ_F32, FZ_F32) || fz_supported((fz_op)op, FZ_I32, FZ_I32) ||
                      fz_supported((fz_op)op, FZ_BOOL, FZ_BOOL) || fz_supported((fz_op)op, FZ_I32, FZ_BOOL) ||
                      fz_supported((fz_op)op, FZ_I8, FZ_I8) || fz_supported((fz_op)op, FZ_F32, FZ_I32),
                  "op %d", op);
}

static void test_chains(void) {
    /* broadcast runs and periods below and above the tile and the length
     * read in place, tensors too small to group */
    static const int32_t shapes[][4] = {{1, 3, 61, 67}, {2, 5, 7, 9},    {1, 1, 1, 1},
                                        {1, 2, 3, 1},   {3, 4, 5, 64},   {2, 3, 5, 300},
                                        {2, 40, 3, 20}, {1, 2, 1, 1030}, {1, 7, 300, 1}};
    size_t max = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        size_t n = (size_t)shapes[k][0] * (size_t)shapes[k][1] * (size_t)shapes[k][2] * (size_t)shapes[k][3];
        max = n > max ? n : max;
    }
    float *xs = malloc(max * 4);
    int32_t *ys = malloc(max * 4);
    uint32_t s = 99;
    static const float special[] = {NAN,        INFINITY,    -INFINITY, -0.0f,      0.0f,  1e-40f,
                                    -1e-42f,    3e38f,       -2.5f,     0.5f,       -0.5f, 1.5f,
                                    8388607.5f, -8388609.0f, 1e9f,      16777217.0f};
    for (size_t i = 0; i < max; i++) {
        s = s * 1103515245u + 12345u;
        xs[i] = (float)((int)(s >> 8) % 200001 - 100000) / 997.0f;
        if (s % 11 == 0) xs[i] = special[(s >> 4) % (sizeof special / sizeof *special)];
        s = s * 1103515245u + 12345u;
        ys[i] = (int32_t)(s ^ (s << 7));
        if (s % 5 == 0) ys[i] = (int32_t)(s >> 20) - 2048;
    }
    for (int i = 0; i < 2048; i++) g_fchan[i] = (float)(i % 128) * 0.37f - 5.0f;
    for (int i = 0; i < 128; i++) g_frow[i] = (float)i * -0.5f;
    g_x = xs;
    g_y = ys;
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        g_chan = shapes[k][3];
        check_chain("float", chain_float, shapes[k], false, NULL);
        check_chain("int", chain_int, shapes[k], false, NULL);
        check_chain("norm silu", chain_norm_silu, shapes[k], false, NULL);
    }
    /* failures: values placed so the second operator fails first */
    {
        static const int32_t sh[4] = {1, 3, 61, 67};
        size_t n = 3 * 61 * 67;
        for (size_t i = 0; i < n; i++) ys[i] = (int32_t)(i % 1000);
        ys[9000] = 147483650; /* the ADD fails here ... */
        ys[100] = -147483650; /* ... the SUB fails here first, but runs after */
        g_chan = sh[3];
        check_chain("overflow", chain_overflow, sh, true,
                    "op #1 ADD 't3': REQUIRE failed at output element 9000");
        for (size_t i = 0; i < n; i++) ys[i] = (int32_t)(i % 31);
        ys[5000] = 40;
        check_chain("shift", chain_shift, sh, true, "REQUIRE failed at output element 5000: shift amount 40");
        for (size_t i = 0; i < n; i++) ys[i] = (int32_t)(i % 255) + 1;
        ys[7777] = 256;
        check_chain("div", chain_div, sh, true,
                    "REQUIRE failed at output element 7777: division of 1000 by zero");
        ys[7777] = 7;
        ys[8000] = INT32_MIN;
        check_chain("abs", chain_div, sh, true, "REQUIRE failed at output element 8000");
        for (size_t i = 0; i < n; i++) ys[i] = (int32_t)(i % 4096);
        ys[6000] = 40000;
        check_chain("mulshift", chain_mulshift, sh, true, "REQUIRE failed at output element 6000");
        /* and the exact ones without failure, against the reference */
        for (size_t i = 0; i < n; i++) ys[i] = (int32_t)(i * 2654435761u);
        g_chan = sh[3];
        check_chain("int vs reference", chain_int, sh, true, NULL);
    }
    free(xs);
    free(ys);
}

int main(void) {
    RUN(row_api);
    RUN(test_chains);
    return th_finish();
}
