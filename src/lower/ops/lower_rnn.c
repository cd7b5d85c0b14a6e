/*
 * lower_rnn.c - the recurrent operators RNN, GRU and LSTM, unrolled over
 * time.
 *
 * TOSA has no loop an NPU compiler accepts in the base profiles, so every
 * time step becomes its own operators; the sequence length must be static.
 * Per direction:
 *   - the input projection of every step at once: one MATMUL
 *     [1, S*B, I] x [1, I, G*H] plus the summed biases (Wb + Rb), then a
 *     SLICE per step;
 *   - per step the recurrent MATMUL [1, B, H] x [1, H, G*H], the gates
 *     (clip, then the activation functions), the state update;
 *   - Y is the CONCAT of the step outputs, Y_h / Y_c the last state.
 * Weights transposed at compile time when constant (the usual case), with
 * TRANSPOSE operators otherwise.
 *
 * Gate order is ONNX's: LSTM i o f c, GRU z r h. LSTM peepholes P are
 * (i, o, f). GRU with linear_before_reset keeps Rbh inside the reset
 * product: h = g(Xt Wh + Wbh + r (.) (Ht-1 Rh + Rbh)).
 *
 * sequence_lens must be constant (it decides the unrolled shape of the
 * computation). Batch rows whose sequence ended keep their state and
 * output zeros; the reverse direction starts each row at its own last
 * step. Rows are picked from per-step tensors by SLICE + CONCAT at compile
 * time (rnn_pick), so equal lengths cost nothing.
 *
 * Activation functions follow ONNX's list (case-insensitive names);
 * activation_alpha / activation_beta are consumed, in order, only by the
 * functions that take them (LeakyRelu, ThresholdedRelu, Elu: alpha;
 * Affine, ScaledTanh, HardSigmoid: alpha and beta), with the defaults of
 * the corresponding operators when a list runs out - how ONNX Runtime
 * reads them. LSTM input_forget couples the gates as f = 1 - i (ONNX
 * Runtime's reading; the operator text defines no formula).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_build.h"

#define RNN_MAX_ACT 6     /* 3 functions (LSTM) x 2 directions */
#define RNN_CONCAT_MAX 64 /* TOSA MAX_TENSOR_LIST_SIZE at level 8K */

typedef enum { RNN_PLAIN, RNN_GRU, RNN_LSTM } rnn_kind;

typedef enum {
    RA_RELU,
    RA_TANH,
    RA_SIGMOID,
    RA_AFFINE,
    RA_LEAKY,
    RA_THRESH,
    RA_SCALED_TANH,
    RA_HARD_SIGMOID,
    RA_ELU,
    RA_SOFTSIGN,
    RA_SOFTPLUS
} rnn_act_fn;

typedef struct rnn_act {
    rnn_act_fn fn;
    double alpha, beta;
} rnn_act;

/* One activation name: its function, how many of alpha / beta it takes,
 * and their defaults. */
static const struct {
    const char *name;
    rnn_act_fn fn;
    int n_alpha, n_beta;
    double alpha, beta;
} RNN_ACTS[] = {
    {"relu", RA_RELU, 0, 0, 0, 0},
    {"tanh", RA_TANH, 0, 0, 0, 0},
    {"sigmoid", RA_SIGMOID, 0, 0, 0, 0},
    {"affine", RA_AFFINE, 1, 1, 1.0, 0.0},
    {"leakyrelu", RA_LEAKY, 1, 0, 0.01, 0},
    {"thresholdedrelu", RA_THRESH, 1, 0, 1.0, 0},
    {"scaledtanh", RA_SCALED_TANH, 1, 1, 1.0, 1.0},
    {"hardsigmoid", RA_HARD_SIGMOID, 1, 1, 0.2, 0.5},
    {"elu", RA_ELU, 1, 0, 1.0, 0},
    {"softsign", RA_SOFTSIGN, 0, 0, 0, 0},
    {"softplus", RA_SOFTPLUS, 0, 0, 0, 0},
};

/* CONST_SHAPE operands shared by the SLICEs of one node (the unrolled
 * steps repeat the same starts and sizes; one constant each keeps the
 * graph small). */
typedef struct rnn_shape_ent {
    int64_t v[3];
    const char *name;
} rnn_shape_ent;
typedef struct rnn_shapes {
    uint32_t n, cap;
    rnn_shape_ent *e;
} rnn_shapes;

/* Everything fixed about one node. */
typedef struct rnn_cfg {
    rnn_kind kind;
    const char *op;
    uint32_t G;         /* gates: 1, 3, 4 */
    uint32_t n_act;     /* activations per direction: 1, 2, 3 */
    int64_t S, B, I, H; /* steps, batch, input size, hidden size */
    uint32_t nd;        /* directions */
    bool reverse_only;
    int64_t layout;
    ctosa_dtype t;
    double clip; /* <= 0: none */
    bool input_forget, lbr;
    rnn_act act[RNN_MAX_ACT];
    const int64_t *lens; /* per batch row; NULL when every row has S steps */
    rnn_shapes *shapes;  /* per lowering run */
} rnn_cfg;

/* ------------------------------------------------------------ helpers */

static lw_v rv(const char *n, ctosa_dtype t, int64_t d0, int64_t d1, int64_t d2) {
    lw_v v;
    memset(&v, 0, sizeof v);
    v.n = n;
    v.t = t;
    v.r = 3;
    v.s[0] = d0;
    v.s[1] = d1;
    v.s[2] = d2;
    return v;
}

/* A zero tensor (all-zero bytes are 0.0 in every float encoding). */
static const char *rnn_zeros(lower_ctx *c, ctosa_dtype t, uint32_t rank, const int64_t *shape) {
    uint64_t n = (uint64_t)lw_count(rank, shape), bytes = 0;
    if (!ctosa_dtype_storage_size(t, n, &bytes)) return NULL;
    void *p = arena_zalloc(lw_arena(c), (size_t)bytes + 8);
    return p ? lw_const(c, t, rank, shape, p) : NULL;
}

static const char *rnn_shape(lower_ctx *c, rnn_shapes *sc, const int64_t *v) {
    for (uint32_t i = 0; i < sc->n; i++)
        if (!memcmp(sc->e[i].v, v, sizeof sc->e[i].v)) return sc->e[i].name;
    if (sc->n == sc->cap) {
        uint32_t cap = sc->cap ? 2 * sc->cap : 64;
        rnn_shape_ent *e = arena_alloc(lw_arena(c), cap * sizeof *e);
        if (!e) return NULL;
        if (sc->n) memcpy(e, sc->e, sc->n * sizeof *e);
        sc->e = e;
        sc->cap = cap;
    }
    const char *name = lw_shape(c, 3, v);
    if (!name) return NULL;
    memcpy(sc->e[sc->n].v, v, sizeof sc->e[sc->n].v);
    sc->e[sc->n++].name = name;
    return name;
}

/* SLICE of a rank-3 tensor with shared start / size operands. */
static const char *rnn_slice(lower_ctx *c, const rnn_cfg *k, const char *x, const int64_t *in,
                             const int64_t *st, const int64_t *sz) {
    if (!x) return NULL;
    if (!memcmp(in, sz, 3 * sizeof *sz) && !st[0] && !st[1] && !st[2]) return x;
    const char *a = rnn_shape(c, k->shapes, st), *b = rnn_shape(c, k->shapes, sz);
    const char *out = lw_tensor(c, k->t, 3, sz);
    if (!a || !b || !out) return NULL;
    const char *ins[3] = {x, a, b};
    return lw_op(c, CTOSA_OP_SLICE, 3, ins, 1, &out, NULL) ? out : NULL;
}

/* x[:, :, off:off+len] of a [1, B, n] value. */
static lw_v rnn_cols(lower_ctx *c, const rnn_cfg *k, lw_v x, int64_t off, int64_t len) {
    int64_t st[3] = {0, 0, off}, sz[3] = {x.s[0], x.s[1], len};
    return rv(rnn_slice(c, k, x.n, x.s, st, sz), x.t, sz[0], sz[1], sz[2]);
}

/* CONCAT of n values along axis, in groups no longer than the TOSA list
 * limit. Every value has shape `each` except along axis. */
static const char *rnn_concat(lower_ctx *c, uint32_t n, const char **xs, int64_t *lens_axis, ctosa_dtype t,
                              uint32_t rank, const int64_t *each, int32_t axis) {
    if (n == 0) return NULL;
    while (n > 1) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i += RNN_CONCAT_MAX) {
            uint32_t k = n - i < RNN_CONCAT_MAX ? n - i : RNN_CONCAT_MAX;
            int64_t shp[LOWER_MAX_RANK], tot = 0;
            memcpy(shp, each, rank * sizeof *shp);
            int64_t *la = lens_axis;
            for (uint32_t j = 0; j < k; j++) tot += la[i + j];
            shp[axis] = tot;
            xs[m] = lw_concat(c, k, xs + i, t, rank, axis);
            la[m] = tot;
            m++;
        }
        n = m;
    }
    return xs[0];
}

/* Row b of the result is row b of src[idx[b]], or zeros when idx[b] < 0.
 * Every src has shape [1, B, n]. Runs of rows from one source are one
 * SLICE; a single source for every row is returned as it is. */
static lw_v rnn_pick(lower_ctx *c, const rnn_cfg *k, const lw_v *src, const int32_t *idx, int64_t B,
                     int64_t n) {
    ctosa_dtype t = k->t;
    bool same = true;
    for (int64_t b = 1; b < B; b++)
        if (idx[b] != idx[0]) same = false;
    if (same && idx[0] >= 0) return src[idx[0]];
    const char **parts = arena_alloc(lw_arena(c), (size_t)B * sizeof *parts);
    int64_t *plen = arena_alloc(lw_arena(c), (size_t)B * sizeof *plen);
    if (!parts || !plen) return rv(NULL, t, 1, B, n);
    uint32_t np = 0;
    for (int64_t b = 0; b < B;) {
        int64_t e = b + 1;
        while (e < B && idx[e] == idx[b]) e++;
        int64_t sh[3] = {1, e - b, n};
        if (idx[b] < 0) {
            parts[np] = rnn_zeros(c, t, 3, sh);
        } else {
            int64_t st[3] = {0, b, 0};
            parts[np] = rnn_slice(c, k, src[idx[b]].n, src[idx[b]].s, st, sh);
        }
        plen[np++] = e - b;
        b = e;
    }
    int64_t each[3] = {1, B, n};
    return rv(rnn_concat(c, np, parts, plen, t, 3, each, 1), t, 1, B, n);
}

/* MATMUL [1, M, K] x [1, K, N] -> [1, M, N] in the float dtype t; zp is
 * the (shared) zero-point operand, made by the caller once. */
static lw_v rnn_matmul(lower_ctx *c, lw_v a, lw_v w, const char *zp) {
    ctosa_dtype t = a.t, ot = t == CTOSA_DTYPE_BF16 ? CTOSA_DTYPE_FP32 : t;
    int64_t os[3] = {1, a.s[1], w.s[2]};
    const char *out = lw_tensor(c, ot, 3, os);
    if (!a.n || !w.n || !zp || !out) return rv(NULL, t, os[0], os[1], os[2]);
    const char *in[4] = {a.n, w.n, zp, zp};
    if (!lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &out, NULL)) out = NULL;
    if (out && ot != t) out = lw_cast(c, out, ot, t, 3, os);
    return rv(out, t, os[0], os[1], os[2]);
}

static lw_v rnn_act_apply(lower_ctx *c, const rnn_act *a, lw_v x) {
    switch (a->fn) {
    case RA_RELU: return lw_v_clamp(c, x, 0.0, INFINITY);
    case RA_TANH: return lw_v_un(c, CTOSA_OP_TANH, x);
    case RA_SIGMOID: return lw_v_un(c, CTOSA_OP_SIGMOID, x);
    case RA_AFFINE: return lw_v_addk(c, lw_v_mulk(c, x, a->alpha), a->beta);
    case RA_LEAKY: {
        lw_v ax = lw_v_mulk(c, x, a->alpha);
        if (a->alpha >= 0 && a->alpha <= 1) return lw_v_bin(c, CTOSA_OP_MAXIMUM, x, ax);
        return lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, x, 0), x), ax, x);
    }
    case RA_THRESH:
        return lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, x, lw_v_k(c, x, a->alpha)), x, lw_v_k(c, x, 0));
    case RA_SCALED_TANH: return lw_v_mulk(c, lw_v_un(c, CTOSA_OP_TANH, lw_v_mulk(c, x, a->beta)), a->alpha);
    case RA_HARD_SIGMOID: return lw_v_clamp(c, lw_v_addk(c, lw_v_mulk(c, x, a->alpha), a->beta), 0.0, 1.0);
    case RA_ELU: {
        lw_v neg = lw_v_mulk(c, lw_v_addk(c, lw_v_un(c, CTOSA_OP_EXP, x), -1.0), a->alpha);
        return lw_v_select(c, lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, x, 0), x), neg, x);
    }
    case RA_SOFTSIGN: return lw_v_fdiv(c, x, lw_v_addk(c, lw_v_un(c, CTOSA_OP_ABS, x), 1.0));
    case RA_SOFTPLUS: {
        /* max(x, 0) + log(1 + exp(-|x|)): no overflow for large x */
        lw_v nax = lw_v_un(c, CTOSA_OP_NEGATE, lw_v_un(c, CTOSA_OP_ABS, x));
        lw_v l = lw_v_un(c, CTOSA_OP_LOG, lw_v_addk(c, lw_v_un(c, CTOSA_OP_EXP, nax), 1.0));
        return lw_v_add(c, lw_v_clamp(c, x, 0.0, INFINITY), l);
    }
    }
    return x;
}

/* Gate pre-activation: clip (when set), then the activation. */
static lw_v rnn_gate(lower_ctx *c, const rnn_cfg *k, const rnn_act *a, lw_v x) {
    if (k->clip > 0) x = lw_v_clamp(c, x, -k->clip, k->clip);
    return rnn_act_apply(c, a, x);
}

/* ----------------------------------------------------------- attributes */

static lower_status rnn_read_acts(lower_ctx *c, rnn_cfg *k) {
    static const rnn_act_fn dflt[3][3] = {
        {RA_TANH, RA_TANH, RA_TANH},    /* RNN: f */
        {RA_SIGMOID, RA_TANH, RA_TANH}, /* GRU: f g */
        {RA_SIGMOID, RA_TANH, RA_TANH}, /* LSTM: f g h */
    };
    uint32_t want = k->n_act * k->nd;
    const ctosa_onnx_attr *acts = ctosa_onnx_node_attr(lw_node(c), "activations");
    const float *al = NULL, *be = NULL;
    int64_t nal = lw_attr_floats(c, "activation_alpha", &al);
    int64_t nbe = lw_attr_floats(c, "activation_beta", &be);
    if (nal < 0) nal = 0;
    if (nbe < 0) nbe = 0;
    if (!acts) {
        for (uint32_t i = 0; i < want; i++) k->act[i].fn = dflt[k->kind][i % k->n_act];
        return LOWER_OK;
    }
    if (acts->type != CTOSA_ONNX_ATTR_STRINGS || acts->count != want)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: activations has %u entries, expected %u (%u per direction)", k->op,
                         acts->type == CTOSA_ONNX_ATTR_STRINGS ? acts->count : 0, want, k->n_act);
    int64_t ia = 0, ib = 0;
    for (uint32_t i = 0; i < want; i++) {
        char name[32];
        const ctosa_onnx_bytes *s = &acts->strings[i];
        size_t n = s->n < sizeof name - 1 ? (size_t)s->n : sizeof name - 1;
        for (size_t j = 0; j < n; j++) name[j] = (char)tolower(s->p[j]);
        name[n] = 0;
        size_t a = 0;
        while (a < sizeof RNN_ACTS / sizeof RNN_ACTS[0] && strcmp(RNN_ACTS[a].name, name) != 0) a++;
        if (a == sizeof RNN_ACTS / sizeof RNN_ACTS[0] || s->n >= sizeof name)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: activation '%.*s' is not one ONNX defines",
                             k->op, (int)n, (const char *)s->p);
        k->act[i].fn = RNN_ACTS[a].fn;
        k->act[i].alpha = RNN_ACTS[a].alpha;
        k->act[i].beta = RNN_ACTS[a].beta;
        if (RNN_ACTS[a].n_alpha && ia < nal) k->act[i].alpha = al[ia++];
        if (RNN_ACTS[a].n_beta && ib < nbe) k->act[i].beta = be[ib++];
    }
    return LOWER_OK;
}

/* Reads attributes and shapes; *X gets the input. */
static lower_status rnn_config(lower_ctx *c, rnn_kind kind, rnn_cfg *k, const lower_value **Xo) {
    static const char *const names[] = {"RNN", "GRU", "LSTM"};
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->op = names[kind];
    k->G = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
    k->n_act = kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1;
    lower_status st;
    const lower_value *X = lw_data_input(c, 0, &st);
    if (!X) return st;
    *Xo = X;
    if (X->t != CTOSA_DTYPE_FP32 && X->t != CTOSA_DTYPE_FP16 && X->t != CTOSA_DTYPE_BF16)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL,
                         "%s: input is %s; recurrent layers are lowered in float only (fp32, fp16, bf16)",
                         k->op, ctosa_dtype_short(X->t));
    k->t = X->t;
    if (X->rank != 3)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: X has rank %u, not 3", k->op, X->rank);
    k->layout = lw_opset(c) >= 14 ? lw_attr_int(c, "layout", 0) : 0;
    if (k->layout != 0 && k->layout != 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: layout %lld", k->op, (long long)k->layout);
    k->S = k->layout ? X->shape[1] : X->shape[0];
    k->B = k->layout ? X->shape[0] : X->shape[1];
    k->I = X->shape[2];
    const char *dir = lw_attr_str(c, "direction", "forward");
    if (!strcmp(dir, "forward")) k->nd = 1;
    else if (!strcmp(dir, "reverse")) k->nd = 1, k->reverse_only = true;
    else if (!strcmp(dir, "bidirectional")) k->nd = 2;
    else return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: direction '%s'", k->op, dir);
    if (k->S < 1 || k->B < 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: empty sequence or batch", k->op);
    const lower_value *W = lw_data_input(c, 1, &st);
    if (!W) return st;
    const lower_value *R = lw_data_input(c, 2, &st);
    if (!R) return st;
    int64_t H = lw_attr_int(c, "hidden_size", R->rank == 3 ? R->shape[2] : -1);
    k->H = H;
    if (H < 1 || W->rank != 3 || R->rank != 3 || W->shape[0] != k->nd || W->shape[1] != k->G * H ||
        W->shape[2] != k->I || R->shape[0] != k->nd || R->shape[1] != k->G * H || R->shape[2] != H)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: W / R shapes do not match %u direction(s), hidden_size %lld, input size %lld",
                         k->op, k->nd, (long long)H, (long long)k->I);
    if (W->t != k->t || R->t != k->t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "%s: W / R dtypes differ from X", k->op);
    if (lw_has_attr(c, "clip")) k->clip = lw_attr_float(c, "clip", 0.0f);
    if (lw_has_attr(c, "clip") && !(k->clip > 0))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: clip %g is not positive", k->op, k->clip);
    k->input_forget = kind == RNN_LSTM && lw_attr_int(c, "input_forget", 0) != 0;
    k->lbr = kind == RNN_GRU && lw_attr_int(c, "linear_before_reset", 0) != 0;
    if ((st = rnn_read_acts(c, k))) return st;
    /* optional inputs: 3 B, 4 sequence_lens, 5 initial_h, 6 initial_c, 7 P */
    int64_t bshape[2] = {k->nd, 2 * k->G * H};
    int64_t hshape[3] = {k->layout ? k->B : k->nd, k->layout ? k->nd : k->B, H};
    int64_t pshape[2] = {k->nd, 3 * H};
    for (uint32_t i = 3; i < lw_n_inputs(c) && i < 8; i++) {
        if (!lw_has_input(c, i) || i == 4) continue;
        if (i >= 6 && kind != RNN_LSTM) continue;
        const lower_value *v = lw_data_input(c, i, &st);
        if (!v) return st;
        const int64_t *want = i == 3 ? bshape : i == 7 ? pshape : hshape;
        uint32_t wr = i == 3 || i == 7 ? 2 : 3;
        if (v->t != k->t || v->rank != wr || memcmp(v->shape, want, wr * sizeof *want) != 0)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: input %u ('%s') has the wrong shape or dtype", k->op, i,
                             lw_node(c)->inputs[i]);
    }
    if (lw_has_input(c, 4)) {
        const int64_t *L;
        int64_t n = lw_const_i64(c, 4, &L);
        if (n < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, lw_node(c)->inputs[4],
                             "%s: sequence_lens must be a constant (it decides the unrolled steps)", k->op);
        if (n != k->B)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "%s: sequence_lens has %lld entries, batch is %lld", k->op, (long long)n,
                             (long long)k->B);
        bool all = true;
        for (int64_t b = 0; b < n; b++) {
            if (L[b] < 0 || L[b] > k->S)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "%s: sequence_lens[%lld] = %lld outside [0, %lld]", k->op, (long long)b,
                                 (long long)L[b], (long long)k->S);
            if (L[b] != k->S) all = false;
        }
        k->lens = all ? NULL : L;
    }
    return LOWER_OK;
}

/* ---------------------------------------------------------- operands */

/* Input i ([nd, rows, cols]) for direction d, transposed: [1, cols, rows'] where
 * rows' are rows [r0, r0 + nr). */
static lw_v rnn_weight_t(lower_ctx *c, const rnn_cfg *k, uint32_t i, uint32_t d, int64_t r0, int64_t nr) {
    const lower_value *W = lw_in(c, i);
    int64_t rows = W->shape[1], cols = W->shape[2];
    const double *v;
    int64_t n = lw_const_f64(c, i, &v);
    int64_t os[3] = {1, cols, nr};
    if (n == W->shape[0] * rows * cols) {
        double *buf = arena_alloc(lw_arena(c), (size_t)(cols * nr) * sizeof *buf);
        if (!buf) return rv(NULL, k->t, 1, cols, nr);
        const double *src = v + (size_t)d * (size_t)(rows * cols);
        for (int64_t r = 0; r < nr; r++)
            for (int64_t q = 0; q < cols; q++) buf[q * nr + r] = src[(r0 + r) * cols + q];
        return rv(lw_const_from_f64(c, k->t, 3, os, buf), k->t, 1, cols, nr);
    }
    int64_t st[3] = {d, r0, 0}, sz[3] = {1, nr, cols};
    const char *s = lw_slice(c, lw_input(c, i), k->t, 3, W->shape, st, sz);
    int32_t perm[3] = {0, 2, 1};
    return rv(s ? lw_transpose(c, s, k->t, 3, sz, perm) : NULL, k->t, 1, cols, nr);
}

/* Elements [off, off + len) of row d of a [nd, n] input as [1, 1, len];
 * when `off2` >= 0 the elements [off2, off2 + len) are added (Wb + Rb). */
static lw_v rnn_vec(lower_ctx *c, const rnn_cfg *k, uint32_t i, uint32_t d, int64_t off, int64_t off2,
                    int64_t len) {
    const lower_value *V = lw_in(c, i);
    int64_t os[3] = {1, 1, len};
    const double *v;
    int64_t n = lw_const_f64(c, i, &v);
    if (n == V->shape[0] * V->shape[1]) {
        double *buf = arena_alloc(lw_arena(c), (size_t)len * sizeof *buf);
        if (!buf) return rv(NULL, k->t, 1, 1, len);
        const double *row = v + (size_t)d * (size_t)V->shape[1];
        for (int64_t j = 0; j < len; j++) buf[j] = row[off + j] + (off2 >= 0 ? row[off2 + j] : 0.0);
        return rv(lw_const_from_f64(c, k->t, 3, os, buf), k->t, 1, 1, len);
    }
    const char *x = lw_input(c, i);
    int64_t sz[2] = {1, len}, s1[2] = {d, off};
    lw_v a =
        rv(lw_reshape_if(c, lw_slice(c, x, k->t, 2, V->shape, s1, sz), k->t, 2, sz, 3, os), k->t, 1, 1, len);
    if (off2 < 0) return a;
    int64_t s2[2] = {d, off2};
    lw_v b =
        rv(lw_reshape_if(c, lw_slice(c, x, k->t, 2, V->shape, s2, sz), k->t, 2, sz, 3, os), k->t, 1, 1, len);
    return lw_v_add(c, a, b);
}

/* initial_h / initial_c (input i) for direction d as [1, B, H]; zeros when absent. */
static lw_v rnn_init_state(lower_ctx *c, const rnn_cfg *k, uint32_t i, uint32_t d) {
    int64_t os[3] = {1, k->B, k->H};
    if (!lw_has_input(c, i)) return rv(rnn_zeros(c, k->t, 3, os), k->t, 1, k->B, k->H);
    const lower_value *V = lw_in(c, i);
    const char *x = lw_input(c, i);
    if (k->layout == 0) {
        int64_t st[3] = {d, 0, 0};
        return rv(lw_slice(c, x, k->t, 3, V->shape, st, os), k->t, 1, k->B, k->H);
    }
    int64_t st[3] = {0, d, 0}, sz[3] = {k->B, 1, k->H};
    const char *s = lw_slice(c, x, k->t, 3, V->shape, st, sz);
    return rv(lw_reshape_if(c, s, k->t, 3, sz, 3, os), k->t, 1, k->B, k->H);
}

/* ---------------------------------------------------------- one direction */

/* Runs direction d (reverse when `rev`); writes the per-time outputs
 * y[t] ([1, B, H], zeros past a row's length), and the final states. */
static lower_status rnn_direction(lower_ctx *c, const rnn_cfg *k, const char *x_sbi, uint32_t d, bool rev,
                                  lw_v *y, lw_v *h_last, lw_v *c_last) {
    ctosa_dtype t = k->t;
    int64_t S = k->S, B = k->B, H = k->H, GH = (int64_t)k->G * H;
    const rnn_act *act = k->act + d * k->n_act;
    /* input projection of every step, biases included */
    int64_t xs[3] = {1, S * B, k->I};
    lw_v x3 = rv(lw_reshape_if(c, x_sbi, t, 3, (int64_t[3]){S, B, k->I}, 3, xs), t, 1, S * B, k->I);
    const char *zp = lw_zero_point(c, t, 0);
    lw_v xw = rnn_matmul(c, x3, rnn_weight_t(c, k, 1, d, 0, GH), zp);
    lw_v rb_h = {0};
    if (lw_has_input(c, 3)) {
        if (k->lbr) {
            /* Rbh stays inside the reset product */
            lw_v b1 = rnn_vec(c, k, 3, d, 0, GH, 2 * H);
            lw_v b2 = rnn_vec(c, k, 3, d, 2 * H, -1, H);
            const char *bl[2] = {b1.n, b2.n};
            int64_t bls[2] = {2 * H, H};
            lw_v bias = rv(rnn_concat(c, 2, bl, bls, t, 3, (int64_t[3]){1, 1, GH}, 2), t, 1, 1, GH);
            xw = lw_v_add(c, xw, bias);
            rb_h = rnn_vec(c, k, 3, d, GH + 2 * H, -1, H);
        } else {
            xw = lw_v_add(c, xw, rnn_vec(c, k, 3, d, 0, GH, GH));
        }
    }
    lw_v *xw_t = arena_alloc(lw_arena(c), (size_t)S * sizeof *xw_t);
    int32_t *idx = arena_alloc(lw_arena(c), (size_t)(B > 2 ? B : 2) * sizeof *idx);
    lw_v *hs = arena_alloc(lw_arena(c), (size_t)S * sizeof *hs);
    if (!xw_t || !idx || !hs) return lw_failed(c);
    lw_v xw3 = rv(lw_reshape_if(c, xw.n, t, 3, xw.s, 3, (int64_t[3]){S, B, GH}), t, S, B, GH);
    for (int64_t s = 0; s < S; s++) {
        int64_t st[3] = {s, 0, 0}, sz[3] = {1, B, GH};
        xw_t[s] = rv(rnn_slice(c, k, xw3.n, xw3.s, st, sz), t, 1, B, GH);
    }
    /* recurrent weights: GRU splits off Rh (it multiplies r (.) H) */
    bool gru_split = k->kind == RNN_GRU;
    lw_v rt = rnn_weight_t(c, k, 2, d, 0, gru_split ? 2 * H : GH);
    lw_v rh = gru_split ? rnn_weight_t(c, k, 2, d, 2 * H, H) : (lw_v){0};
    lw_v pi = {0}, po = {0}, pf = {0};
    bool peep = k->kind == RNN_LSTM && lw_n_inputs(c) > 7 && lw_has_input(c, 7);
    if (peep) {
        pi = rnn_vec(c, k, 7, d, 0, -1, H);
        po = rnn_vec(c, k, 7, d, H, -1, H);
        pf = rnn_vec(c, k, 7, d, 2 * H, -1, H);
    }
    lw_v h = rnn_init_state(c, k, 5, d);
    lw_v cs = k->kind == RNN_LSTM ? rnn_init_state(c, k, 6, d) : (lw_v){0};
    for (int64_t it = 0; it < S; it++) {
        /* the input of this iteration, per row (reverse: each row from its own end) */
        bool any = false;
        for (int64_t b = 0; b < B; b++) {
            int64_t L = k->lens ? k->lens[b] : S;
            int64_t tt = rev ? L - 1 - it : it;
            idx[b] = it < L ? (int32_t)tt : -1;
            if (it < L) any = true;
        }
        if (!any) break; /* every row has ended */
        for (int64_t b = 0; b < B; b++)
            if (idx[b] < 0) idx[b] = 0; /* ended rows: any input, the state is kept */
        lw_v xin = rnn_pick(c, k, xw_t, idx, B, GH);
        lw_v hn, cn = {0};
        if (k->kind == RNN_PLAIN) {
            hn = rnn_gate(c, k, &act[0], lw_v_add(c, xin, rnn_matmul(c, h, rt, zp)));
        } else if (k->kind == RNN_GRU) {
            lw_v zr = lw_v_add(c, rnn_cols(c, k, xin, 0, 2 * H), rnn_matmul(c, h, rt, zp));
            zr = rnn_gate(c, k, &act[0], zr); /* z and r share f: one activation */
            lw_v z = rnn_cols(c, k, zr, 0, H), r = rnn_cols(c, k, zr, H, H);
            lw_v hx = rnn_cols(c, k, xin, 2 * H, H);
            lw_v hr;
            if (k->lbr) {
                hr = rnn_matmul(c, h, rh, zp);
                if (rb_h.n) hr = lw_v_add(c, hr, rb_h);
                hr = lw_v_mul(c, r, hr);
            } else {
                hr = rnn_matmul(c, lw_v_mul(c, r, h), rh, zp);
            }
            lw_v hh = rnn_gate(c, k, &act[1], lw_v_add(c, hx, hr));
            /* (1 - z) (.) hh + z (.) h = hh + z (.) (h - hh) */
            hn = lw_v_add(c, hh, lw_v_mul(c, z, lw_v_sub(c, h, hh)));
        } else {
            lw_v g = lw_v_add(c, xin, rnn_matmul(c, h, rt, zp));
            lw_v gc = rnn_cols(c, k, g, 3 * H, H);
            lw_v i_, o_ = {0}, f_;
            bool fused = !peep && !k->input_forget;
            if (fused) {
                /* i, o, f are adjacent and share f: one activation */
                lw_v iof = rnn_gate(c, k, &act[0], rnn_cols(c, k, g, 0, 3 * H));
                i_ = rnn_cols(c, k, iof, 0, H);
                o_ = rnn_cols(c, k, iof, H, H);
                f_ = rnn_cols(c, k, iof, 2 * H, H);
            } else {
                lw_v gi = rnn_cols(c, k, g, 0, H);
                if (peep) gi = lw_v_add(c, gi, lw_v_mul(c, pi, cs));
                i_ = rnn_gate(c, k, &act[0], gi);
                if (k->input_forget) {
                    f_ = lw_v_sub(c, lw_v_k(c, i_, 1.0), i_);
                } else {
                    lw_v gf = rnn_cols(c, k, g, 2 * H, H);
                    if (peep) gf = lw_v_add(c, gf, lw_v_mul(c, pf, cs));
                    f_ = rnn_gate(c, k, &act[0], gf);
                }
            }
            lw_v c_ = rnn_gate(c, k, &act[1], gc);
            cn = lw_v_add(c, lw_v_mul(c, f_, cs), lw_v_mul(c, i_, c_));
            if (!fused) {
                lw_v go = rnn_cols(c, k, g, H, H);
                if (peep) go = lw_v_add(c, go, lw_v_mul(c, po, cn));
                o_ = rnn_gate(c, k, &act[0], go);
            }
            hn = lw_v_mul(c, o_, rnn_act_apply(c, &act[2], cn));
        }
        hs[it] = hn;
        if (k->lens) {
            /* rows that have ended keep their state */
            lw_v two[2] = {hn, h};
            for (int64_t b = 0; b < B; b++) idx[b] = it < k->lens[b] ? 0 : 1;
            h = rnn_pick(c, k, two, idx, B, H);
            if (k->kind == RNN_LSTM) {
                lw_v twoc[2] = {cn, cs};
                cs = rnn_pick(c, k, twoc, idx, B, H);
            }
        } else {
            h = hn;
            cs = cn;
        }
    }
    /* per-time outputs: Y[tt][b] = output of iteration it with tt = it
     * (forward) or L_b - 1 - it (reverse); zeros past L_b */
    for (int64_t tt = 0; tt < S; tt++) {
        for (int64_t b = 0; b < B; b++) {
            int64_t L = k->lens ? k->lens[b] : S;
            idx[b] = tt < L ? (int32_t)(rev ? L - 1 - tt : tt) : -1;
        }
        y[tt] = rnn_pick(c, k, hs, idx, B, H);
    }
    /* a row of length 0 ends with zero states (ONNX Runtime), not the initial ones */
    bool empty = false;
    for (int64_t b = 0; k->lens && b < B; b++) {
        idx[b] = k->lens[b] == 0 ? -1 : 0;
        if (k->lens[b] == 0) empty = true;
    }
    if (empty) {
        h = rnn_pick(c, k, &h, idx, B, H);
        if (k->kind == RNN_LSTM) cs = rnn_pick(c, k, &cs, idx, B, H);
    }
    *h_last = h;
    if (c_last) *c_last = cs;
    return LOWER_OK;
}

/* --------------------------------------------------------------- node */

static lower_status lower_rnn_common(lower_ctx *c, rnn_kind kind) {
    rnn_cfg k;
    const lower_value *X = NULL;
    lower_status st = rnn_config(c, kind, &k, &X);
    if (st) return st;
    rnn_shapes shapes = {0, 0, NULL};
    k.shapes = &shapes;
    ctosa_dtype t = k.t;
    int64_t S = k.S, B = k.B, H = k.H;
    const char *x = lw_input(c, 0);
    if (k.layout == 1) {
        int32_t perm[3] = {1, 0, 2};
        x = lw_transpose(c, x, t, 3, X->shape, perm);
    }
    uint32_t nd = k.nd;
    const ctosa_onnx_node *n = lw_node(c);
    bool want_y = n->n_outputs > 0 && n->outputs[0][0];
    /* per direction: S outputs [1, B, H] and the final states */
    lw_v *y = arena_alloc(lw_arena(c), (size_t)(nd * S) * sizeof *y);
    lw_v hl[2], cl[2];
    if (!y) return lw_failed(c);
    for (uint32_t d = 0; d < nd; d++) {
        bool rev = k.reverse_only || d == 1;
        if ((st = rnn_direction(c, &k, x, d, rev, y + d * S, &hl[d], kind == RNN_LSTM ? &cl[d] : NULL)))
            return st;
    }
    if (want_y) {
        /* [S * nd, B, H] from the S * nd pieces [1, B, H] (time-major),
         * RESHAPE [S, nd, B, H]; layout 1 -> [B, S, nd, H] */
        const char **parts = arena_alloc(lw_arena(c), (size_t)(nd * S) * sizeof *parts);
        int64_t *plen = arena_alloc(lw_arena(c), (size_t)(nd * S) * sizeof *plen);
        if (!parts || !plen) return lw_failed(c);
        for (int64_t s = 0; s < S; s++) {
            const char *dd[2];
            int64_t dl[2] = {1, 1};
            for (uint32_t d = 0; d < nd; d++) dd[d] = y[d * S + s].n;
            int64_t each[3] = {nd, B, H};
            parts[s] = rnn_concat(c, nd, dd, dl, t, 3, each, 0);
            plen[s] = nd;
        }
        int64_t y3[3] = {S * nd, B, H}, ys[4] = {S, nd, B, H};
        const char *yy = rnn_concat(c, (uint32_t)S, parts, plen, t, 3, y3, 0);
        yy = lw_reshape_if(c, yy, t, 3, y3, 4, ys);
        if (k.layout == 1) {
            int32_t perm[4] = {2, 0, 1, 3};
            yy = lw_transpose(c, yy, t, 4, ys, perm);
        }
        LW_TRY(yy);
        lw_set_output(c, 0, yy);
    }
    for (uint32_t o = 1; o < (kind == RNN_LSTM ? 3u : 2u); o++) {
        if (n->n_outputs <= o || !n->outputs[o][0]) continue;
        lw_v *st_ = o == 1 ? hl : cl;
        const char *dd[2];
        int64_t dl[2] = {1, 1};
        for (uint32_t d = 0; d < nd; d++) dd[d] = st_[d].n;
        int64_t each[3] = {nd, B, H};
        const char *v = rnn_concat(c, nd, dd, dl, t, 3, each, 0);
        if (k.layout == 1) {
            int32_t perm[3] = {1, 0, 2};
            v = lw_transpose(c, v, t, 3, each, perm);
        }
        LW_TRY(v);
        lw_set_output(c, o, v);
    }
    return LOWER_OK;
}

static lower_status lower_rnn(lower_ctx *c) { return lower_rnn_common(c, RNN_PLAIN); }
static lower_status lower_gru(lower_ctx *c) { return lower_rnn_common(c, RNN_GRU); }
static lower_status lower_lstm(lower_ctx *c) { return lower_rnn_common(c, RNN_LSTM); }

const lower_entry lower_table_rnn[] = {
    {"RNN", 7, 0, lower_rnn},
    {"GRU", 7, 0, lower_gru},
    {"LSTM", 7, 0, lower_lstm},
    {0, 0, 0, 0},
};
