/* test_opt_rescale.c - the RESCALE chain merging of the lowering's clean-up
 * pass (src/lower/opt/opt_rescale.c). Chains of two or three RESCALEs with
 * random types, unsigned flags, zero points, rounding modes and scales
 * (unit scales and the zero-point pairs quantized lowerings emit made
 * likely) are built with the builder and passed through
 * lw_finalize_graph(); for each chain:
 *   - the result validates under TOSA-1.0+INT+int16 (with both rounding extensions) whenever the chain did,
 *   - every input value of 8- and 16-bit inputs (and the extremes plus
 *     random values of int32 inputs) gives the same output bytes, and the
 *     same REQUIRE failures chunk by chunk, before and after,
 *   - intermediate results read elsewhere (a graph output) survive.
 * The lowered QDQ pattern int32 -> int8 -> uint8 -> int8 must come down to
 * one RESCALE, and a unit rescale between equal types to none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/ctosa.h"
#include "ctosa/interp.h"
#include "harness.h"
#include "lower/lower_internal.h"

static uint64_t g_rng;
static uint32_t rnd(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static int64_t rndi(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

typedef struct chain {
    ctosa_graph *g;
    ctosa_block *b;
    uint32_t counter;
    const char *in, *out[3];
    uint32_t n_out;
    int32_t shape[2];
} chain;

static const char *name(chain *c, const char *hint) {
    char buf[48];
    snprintf(buf, sizeof buf, "%s_%u", hint, c->counter++);
    return ctosa_graph_strdup(c->g, buf);
}

static const char *cnst(chain *c, ctosa_dtype dt, uint32_t n, const int64_t *v) {
    const char *nm = name(c, "c");
    int32_t shp[1] = {(int32_t)n};
    int b = dt == CTOSA_DTYPE_INT8 ? 1 : dt == CTOSA_DTYPE_INT16 ? 2 : 4;
    uint8_t *raw = malloc((size_t)n * (size_t)b);
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < b; k++) raw[i * (uint32_t)b + (uint32_t)k] = (uint8_t)((uint64_t)v[i] >> (8 * k));
    ctosa_tensor *t;
    CHECK_OK(ctosa_block_add_tensor(c->g, c->b, nm, dt, 1, shp, &t));
    CHECK_OK(ctosa_tensor_set_data(c->g, t, raw, (size_t)n * (size_t)b, true));
    CHECK_OK(ctosa_block_add_op(c->g, c->b, CTOSA_OP_CONST, 0, NULL, 1, &nm, NULL, NULL));
    free(raw);
    return nm;
}

typedef struct rs {
    ctosa_dtype ti, to;
    bool iu, ou, scale32, per_channel;
    ctosa_rounding_mode round;
    int64_t izp, ozp; /* as stored (signed bits) */
    uint32_t nc;
    int64_t mult[8], shift[8];
} rs;

static const char *add_rescale(chain *c, const char *x, const rs *r) {
    int64_t izp = r->izp, ozp = r->ozp;
    const char *ins[5] = {x, cnst(c, r->scale32 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT16, r->nc, r->mult),
                          cnst(c, CTOSA_DTYPE_INT8, r->nc, r->shift), cnst(c, r->ti, 1, &izp),
                          cnst(c, r->to, 1, &ozp)};
    const char *y = name(c, "y");
    CHECK_OK(ctosa_block_add_tensor(c->g, c->b, y, r->to, 2, c->shape, NULL));
    ctosa_attr a;
    memset(&a, 0, sizeof a);
    a.scale32 = r->scale32;
    a.rounding_mode = r->round;
    a.per_channel = r->per_channel;
    a.input_unsigned = r->iu;
    a.output_unsigned = r->ou;
    CHECK_OK(ctosa_block_add_op(c->g, c->b, CTOSA_OP_RESCALE, 5, ins, 1, &y, &a, NULL));
    return y;
}

static ctosa_dtype pick_type(void) {
    uint32_t k = rnd() % 10;
    return k < 6 ? CTOSA_DTYPE_INT8 : k < 8 ? CTOSA_DTYPE_INT16 : CTOSA_DTYPE_INT32;
}

/* A zero point for (t, unsigned): extremes, the usual QDQ values, random. */
static int64_t pick_zp(ctosa_dtype t, bool u) {
    if (t == CTOSA_DTYPE_INT8) {
        static const int64_t s8[] = {-128, -1, 0, 1, 2, 127, -126};
        static const int64_t u8[] = {0, 128, 130, 255, 127, 1};
        uint32_t k = rnd() % 8;
        if (u) return k < 6 ? u8[k] : rndi(0, 255);
        return k < 7 ? s8[k] : rndi(-128, 127);
    }
    if (t == CTOSA_DTYPE_INT16 && u) return rnd() % 2 ? 32768 : 0;
    return 0;
}

/* One random RESCALE reading type ti (with unsigned flag iu). */
static void pick_rescale(rs *r, ctosa_dtype ti, bool iu, uint32_t channels) {
    memset(r, 0, sizeof *r);
    r->ti = ti;
    r->iu = iu;
    r->to = pick_type();
    if (r->iu && r->to == CTOSA_DTYPE_INT32) r->to = CTOSA_DTYPE_INT8;
    r->ou = !r->iu && ti != CTOSA_DTYPE_INT32 && r->to != CTOSA_DTYPE_INT32 && rnd() % 2;
    r->scale32 = ti == CTOSA_DTYPE_INT32 || rnd() % 4 != 0;
    r->round = !r->scale32 ? CTOSA_ROUND_SINGLE : rnd() % 3 == 0 ? CTOSA_ROUND_DOUBLE : CTOSA_ROUND_SINGLE;
    if (rnd() % 8 == 0) r->round = CTOSA_ROUND_INEXACT;
    r->per_channel = rnd() % 3 == 0;
    r->nc = r->per_channel ? channels : 1;
    bool unit = rnd() % 3 != 0;
    for (uint32_t ch = 0; ch < r->nc; ch++) {
        if (unit) {
            r->shift[ch] = r->scale32 ? (rnd() % 2 ? 30 : rndi(2, 30)) : rndi(2, 14);
            r->mult[ch] = INT64_C(1) << r->shift[ch];
        } else {
            r->shift[ch] = rndi(2, r->scale32 ? 40 : 30);
            r->mult[ch] = r->scale32 ? rndi(1 << 29, INT32_MAX) : rndi(1 << 13, 32767);
            if (rnd() % 4 == 0) r->shift[ch] = rndi(2, 62);
        }
    }
    int64_t iz = pick_zp(ti, iu), oz = pick_zp(r->to, r->ou);
    r->izp = ti == CTOSA_DTYPE_INT8 ? (int8_t)iz : ti == CTOSA_DTYPE_INT16 ? (int16_t)iz : iz;
    r->ozp = r->to == CTOSA_DTYPE_INT8 ? (int8_t)oz : r->to == CTOSA_DTYPE_INT16 ? (int16_t)oz : oz;
}

static uint32_t count_rescales(const ctosa_graph *g) {
    const ctosa_block *b = ctosa_graph_region(g, 0)->blocks[0];
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->n_ops; i++) n += b->ops[i]->kind == CTOSA_OP_RESCALE;
    return n;
}

/* Input values: chunk k of the domain of (t, unsigned), rows x C. */
static void fill_input(void *d, ctosa_dtype t, bool u, uint64_t chunk, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = chunk * n + i;
        if (t == CTOSA_DTYPE_INT8) ((uint8_t *)d)[i] = (uint8_t)v;
        else if (t == CTOSA_DTYPE_INT16) ((uint16_t *)d)[i] = (uint16_t)v;
        else {
            static const int32_t ext[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1, INT32_MAX - 1};
            int32_t x = v < 7 ? ext[v] : (int32_t)(rnd() ^ (rnd() << 16));
            if (v >= 7 && rnd() % 2) x >>= rnd() % 31;
            ((int32_t *)d)[i] = x;
        }
    }
    (void)u;
}

typedef struct tally {
    uint32_t chains, valid, merged, fewer, failing_chunks;
} tally;

/* Runs both graphs over the domain in chunks; same bytes and same
 * failures. */
static void compare_runs(const ctosa_graph *g, const ctosa_graph *fg, const chain *c, ctosa_dtype ti, bool iu,
                         tally *t, const char *what) {
    ctosa_interp *a = NULL, *b = NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = 1;
    CHECK_OK(ctosa_interp_create(g, &opt, &a));
    CHECK_OK(ctosa_interp_create(fg, &opt, &b));
    if (!a || !b) goto out;
    uint64_t n = (uint64_t)c->shape[0] * (uint64_t)c->shape[1];
    uint64_t domain = ti == CTOSA_DTYPE_INT8 ? 256 : ti == CTOSA_DTYPE_INT16 ? 65536 : 4096;
    int es = ti == CTOSA_DTYPE_INT8 ? 1 : ti == CTOSA_DTYPE_INT16 ? 2 : 4;
    void *d = malloc(n * (uint64_t)es);
    int64_t shp[2] = {c->shape[0], c->shape[1]};
    for (uint64_t k = 0; k < domain / n; k++) {
        fill_input(d, ti, iu, k, n);
        CHECK_OK(ctosa_interp_set_input(a, c->in, ti, 2, shp, d, n * (uint64_t)es));
        CHECK_OK(ctosa_interp_set_input(b, c->in, ti, 2, shp, d, n * (uint64_t)es));
        ctosa_error *ea = ctosa_interp_run(a), *eb = ctosa_interp_run(b);
        CHECK_MSG((ea == NULL) == (eb == NULL), "%s chunk %llu: before %s, after %s", what,
                  (unsigned long long)k, ea ? ctosa_error_message(ea) : "ok",
                  eb ? ctosa_error_message(eb) : "ok");
        t->failing_chunks += ea != NULL;
        if (!ea && !eb)
            for (uint32_t i = 0; i < c->n_out; i++) {
                ctosa_interp_tensor ta, tb;
                CHECK_OK(ctosa_interp_get_output(a, c->out[i], &ta));
                CHECK_OK(ctosa_interp_get_output(b, c->out[i], &tb));
                bool same = ta.size == tb.size && ta.dtype == tb.dtype && !memcmp(ta.data, tb.data, ta.size);
                CHECK_MSG(same, "%s chunk %llu: output %u differs", what, (unsigned long long)k, i);
            }
        ctosa_error_free(ea);
        ctosa_error_free(eb);
    }
    free(d);
out:
    ctosa_interp_free(a);
    ctosa_interp_free(b);
}

static void chain_init(chain *c, ctosa_dtype ti, int32_t rows, int32_t cols) {
    memset(c, 0, sizeof *c);
    ctosa_region *r;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &c->g));
    CHECK_OK(ctosa_graph_add_region(c->g, "main", &r));
    CHECK_OK(ctosa_region_add_block(c->g, r, "main", &c->b));
    c->shape[0] = rows;
    c->shape[1] = cols;
    c->in = name(c, "x");
    CHECK_OK(ctosa_block_add_tensor(c->g, c->b, c->in, ti, 2, c->shape, NULL));
    CHECK_OK(ctosa_block_add_input(c->g, c->b, c->in));
}

static void finish(chain *c, const rs *first, tally *t, const char *what, uint32_t expect_rescales) {
    for (uint32_t i = 0; i < c->n_out; i++) CHECK_OK(ctosa_block_add_output(c->g, c->b, c->out[i]));
    ctosa_spec sp;
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT+int16+doubleround+inexactround", &sp));
    ctosa_error *e = ctosa_validate(c->g, &sp, NULL);
    bool valid = e == NULL;
    ctosa_error_free(e);
    ctosa_graph *fg = NULL;
    CHECK_OK(lw_finalize_graph(NULL, c->g, c->b, 1, &c->in, c->n_out, c->out, c->out, &fg));
    if (!fg) return;
    t->chains++;
    if (valid) {
        t->valid++;
        e = ctosa_validate(fg, &sp, NULL);
        CHECK_MSG(e == NULL, "%s: invalid after the pass: %s", what, e ? ctosa_error_message(e) : "");
        ctosa_error_free(e);
        uint32_t before = count_rescales(c->g), after = count_rescales(fg);
        t->merged += before - after;
        t->fewer += after < before;
        if (expect_rescales != UINT32_MAX)
            CHECK_MSG(after == expect_rescales, "%s: %u RESCALEs left, expected %u", what, after,
                      expect_rescales);
        compare_runs(c->g, fg, c, first->ti, first->iu, t, what);
    }
    ctosa_graph_free(fg);
}

static void test_random_chains(void) {
    tally t = {0};
    g_rng = 0x5eed0001;
    int n = getenv("CTOSA_LONG_TESTS") ? 3000 : 400;
    for (int i = 0; i < n; i++) {
        ctosa_dtype ti = pick_type();
        bool iu = ti != CTOSA_DTYPE_INT32 && rnd() % 3 == 0;
        uint32_t cols = (uint32_t)(1u << (rnd() % 3)); /* 1, 2 or 4 channels */
        int32_t rows = (int32_t)((ti == CTOSA_DTYPE_INT8 ? 256 : 4096) / cols);
        chain c;
        chain_init(&c, ti, rows, (int32_t)cols);
        rs r[3];
        uint32_t len = 2 + rnd() % 2;
        const char *x = c.in;
        char what[160];
        int w = snprintf(what, sizeof what, "chain %d:", i);
        for (uint32_t k = 0; k < len; k++) {
            pick_rescale(&r[k], k ? r[k - 1].to : ti, k ? r[k - 1].ou : iu, cols);
            /* the next link reads what this one wrote, as a lowering would
             * (mostly; sometimes the other way) */
            x = add_rescale(&c, x, &r[k]);
            if (k + 1 < len && rnd() % 5 == 0) c.out[c.n_out++] = x; /* also read elsewhere */
            w += snprintf(what + w, sizeof what - (size_t)w, " %s%s->%s%s", r[k].iu ? "u" : "",
                          ctosa_dtype_short(r[k].ti), r[k].ou ? "u" : "", ctosa_dtype_short(r[k].to));
        }
        c.out[c.n_out++] = x;
        finish(&c, &r[0], &t, what, UINT32_MAX);
        ctosa_graph_free(c.g);
    }
    printf("random chains: %u built, %u valid, %u with fewer RESCALEs (%u removed), %u failing chunks "
           "compared\n",
           t.chains, t.valid, t.fewer, t.merged, t.failing_chunks);
    /* not vacuous: merges happen and failures are exercised */
    CHECK(t.fewer >= (uint32_t)n / 20);
    CHECK(t.failing_chunks > 0);
}

/* The chain quantized lowerings emit after a convolution: int32 -> int8
 * per channel, int8 -> uint8 (QuantizeLinear's type), uint8 -> int8 (the
 * next operator's input). */
static void test_qdq_chain(void) {
    tally t = {0};
    chain c;
    chain_init(&c, CTOSA_DTYPE_INT32, 1024, 4);
    rs a = {.ti = CTOSA_DTYPE_INT32,
            .to = CTOSA_DTYPE_INT8,
            .scale32 = true,
            .round = CTOSA_ROUND_DOUBLE,
            .per_channel = true,
            .nc = 4,
            .izp = 0,
            .ozp = 2,
            .mult = {1135566592, 1333182720, 1073741824, 2000000000},
            .shift = {38, 37, 36, 40}};
    rs b = {.ti = CTOSA_DTYPE_INT8,
            .to = CTOSA_DTYPE_INT8,
            .ou = true,
            .scale32 = true,
            .round = CTOSA_ROUND_SINGLE,
            .nc = 1,
            .izp = 0,
            .ozp = -128,
            .mult = {1 << 30},
            .shift = {30}};
    rs d = {.ti = CTOSA_DTYPE_INT8,
            .to = CTOSA_DTYPE_INT8,
            .iu = true,
            .scale32 = true,
            .round = CTOSA_ROUND_SINGLE,
            .nc = 1,
            .izp = -126 /* 130 */,
            .ozp = 2,
            .mult = {1 << 30},
            .shift = {30}};
    const char *y = add_rescale(&c, c.in, &a);
    y = add_rescale(&c, y, &b);
    c.out[c.n_out++] = add_rescale(&c, y, &d);
    finish(&c, &a, &t, "qdq chain", 1);
    ctosa_graph_free(c.g);

    /* the same with the uint8 tensor also read elsewhere: the first two
     * stay, the last one disappears (reads the int8 result directly) */
    chain_init(&c, CTOSA_DTYPE_INT32, 1024, 4);
    y = add_rescale(&c, c.in, &a);
    y = add_rescale(&c, y, &b);
    c.out[c.n_out++] = y;
    c.out[c.n_out++] = add_rescale(&c, y, &d);
    finish(&c, &a, &t, "qdq chain, uint8 read elsewhere", 2);
    ctosa_graph_free(c.g);

    /* uint8 -> int8 -> int32 (an ADD operand): one RESCALE reading uint8
     * is not allowed with int32 output, so both stay */
    chain_init(&c, CTOSA_DTYPE_INT8, 64, 4);
    rs u = d;
    rs w = {.ti = CTOSA_DTYPE_INT8,
            .to = CTOSA_DTYPE_INT32,
            .scale32 = true,
            .round = CTOSA_ROUND_SINGLE,
            .nc = 1,
            .izp = 2,
            .ozp = 0,
            .mult = {1 << 30},
            .shift = {10}};
    y = add_rescale(&c, c.in, &u);
    c.out[c.n_out++] = add_rescale(&c, y, &w);
    finish(&c, &u, &t, "uint8 -> int8 -> int32", 2);
    ctosa_graph_free(c.g);

    /* int8 -> int8 unit rescale with equal zero points: an identity */
    chain_init(&c, CTOSA_DTYPE_INT8, 64, 4);
    rs id = {.ti = CTOSA_DTYPE_INT8,
             .to = CTOSA_DTYPE_INT8,
             .scale32 = true,
             .round = CTOSA_ROUND_SINGLE,
             .nc = 1,
             .izp = 5,
             .ozp = 5,
             .mult = {1 << 20},
             .shift = {20}};
    y = add_rescale(&c, c.in, &id);
    c.out[c.n_out++] = add_rescale(&c, y, &w);
    finish(&c, &id, &t, "identity then int32", 1);
    ctosa_graph_free(c.g);
}

int main(void) {
    RUN(test_qdq_chain);
    RUN(test_random_chains);
    return th_finish();
}
