/* qdq_rnn.c - quantized LSTM, GRU and RNN: a DequantizeLinear ->
 * LSTM / GRU / RNN -> QuantizeLinear group whose weights W, R are int8
 * constants behind DequantizeLinear (per tensor, or per output row) and
 * whose bias B is constant, unrolled over time in integers.
 *
 * Fixed-point formats (the float semantics are ONNX's; ONNX Runtime runs
 * the QDQ model in float with the dequantized weights):
 *   - the hidden state h and every gate value are Q15 in int32 (|h| < 1,
 *     gates in [-1, 1]);
 *   - gate pre-activations are int32 in units of s_g = 2^-12, clamped to
 *     +-8 (where sigmoid and tanh are within 3.4e-4 and 2e-7 of their
 *     limits);
 *   - sigmoid / tanh with 16-bit input and output on PRO-INT alone: the
 *     clamped value + 32768 selects one of 256 segments (>> 8) and the
 *     low 8 bits interpolate linearly between 16-bit knot values read
 *     from four int8 TABLEs (high and low byte of the knot and of the next
 *     knot): interpolation error about 1e-4 (tanh) and 2e-5 (sigmoid);
 *   - the LSTM cell state c is Q15 in int32 (a MUL with shift 15 forms
 *     f c and i g from 64-bit products, so c needs no bound);
 *   - Y is h of every step, RESCALEd once to the output's scale and zero
 *     point.
 * Products: x W^T with the input and weight zero points (MATMUL int8 ->
 * int32; an int16 x is split into high and low bytes, two MATMULs); h R^T
 * the same way on h's two bytes; each accumulator RESCALEd per output row
 * by s_x s_w / s_g (2^-15 s_r / s_g for h); biases added in s_g units.
 * Gate products (f c, i g, o tanh(c), r (h R + Rb), z (h - n)) are MULs
 * with shift 15. Nothing needs EXT-INT16, comparisons or bitwise
 * operators: TOSA-1.0+INT and the Ethos-U55 subset take it.
 *
 * Handled: directions forward / reverse / bidirectional, layout 0, the
 * default activations (LSTM sigmoid / tanh / tanh, GRU sigmoid / tanh,
 * RNN tanh), linear_before_reset 0 and 1, sequence_lens absent or all the
 * sequence length, initial_h / initial_c absent or zero, only Y used.
 * Others (clip, peepholes, other activations, input_forget, Y_h / Y_c)
 * are rejected with the reason. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_build.h"
#include "lower/quant/lower_qdq.h"

#define RNN_Q15 32768.0
#define RNN_SG (1.0 / 4096.0) /* gate pre-activation units: +-8 in int16 range */
#define RNN_CONCAT 64         /* TOSA list limit at level 8K */

typedef enum { QR_RNN, QR_GRU, QR_LSTM } qr_kind;

/* A 16-bit-input table of f on PRO-INT: 257 knots 256 input steps apart,
 * each entry a 16-bit value split over two int8 TABLEs (high byte, low
 * byte - 128), for the knot (base) and the next knot (next). */
typedef struct qr_tab {
    const char *t[4]; /* base hi, base lo, next hi, next lo */
    double ts;        /* entry unit */
} qr_tab;

typedef struct qr_ctx {
    lower_ctx *c;
    qr_tab sig, tanh_;
} qr_ctx;

static const ctosa_dtype I8 = CTOSA_DTYPE_INT8, I16 = CTOSA_DTYPE_INT16, I32 = CTOSA_DTYPE_INT32;

static const char *qr_mul15(lower_ctx *c, const char *a, const char *b, const int64_t *sh) {
    const char *y = lw_tensor(c, I32, 3, sh);
    int64_t one = 1;
    int8_t sv = 15;
    const char *s = lw_const(c, I8, 1, &one, &sv);
    if (!a || !b || !y || !s) return NULL;
    const char *in[3] = {a, b, s};
    return lw_op(c, CTOSA_OP_MUL, 3, in, 1, &y, NULL) ? y : NULL;
}

static const char *qr_slice(lower_ctx *c, const char *x, const int64_t *in, int64_t s0, int64_t s1,
                            int64_t s2, const int64_t *size) {
    int64_t st[3] = {s0, s1, s2};
    return x ? lw_slice(c, x, I32, 3, in, st, size) : NULL;
}

static double f_sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Entries e_j ~ f((-32768 + 256 j) s_g) / ts, j = 0..256, each moved by a
 * quarter of the midpoint errors of its segments (the interpolation error
 * of a curved f is then spread +-err/2), as the int16 TABLE builder does. */
static bool qr_table(lower_ctx *c, double (*f)(double), qr_tab *tb) {
    double fk[257], fm[256], err[256];
    for (int j = 0; j <= 256; j++) fk[j] = f((-32768.0 + 256.0 * j) * RNN_SG);
    for (int j = 0; j < 256; j++) fm[j] = f((-32768.0 + 256.0 * j + 128.0) * RNN_SG);
    tb->ts = 1.0 / 32767.0; /* |f| <= 1 */
    for (int j = 0; j < 256; j++) err[j] = ((fk[j] + fk[j + 1]) / 2 - fm[j]) / tb->ts;
    int32_t e[257];
    for (int j = 0; j <= 256; j++) {
        double corr = j == 0 ? err[0] / 2 : j == 256 ? err[255] / 2 : (err[j - 1] + err[j]) / 4;
        double v = nearbyint(fk[j] / tb->ts - corr);
        e[j] = (int32_t)(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
    }
    int8_t bytes[4][256];
    for (int i = 0; i < 256; i++)
        for (int k = 0; k < 2; k++) {
            int32_t v = e[i + k] + 32768;                  /* 0..65535 */
            bytes[2 * k][i] = (int8_t)(v / 256 - 128);     /* high byte, signed */
            bytes[2 * k + 1][i] = (int8_t)(v % 256 - 128); /* low byte - 128 */
        }
    int64_t n = 256;
    for (int k = 0; k < 4; k++)
        if (!(tb->t[k] = lw_const(c, I8, 1, &n, bytes[k]))) return false;
    return true;
}

static const char *qr_lookup(lower_ctx *c, const char *idx, const char *tc, const int64_t *sh) {
    const char *y = lw_tensor(c, I8, 3, sh);
    if (!idx || !tc || !y) return NULL;
    const char *in[2] = {idx, tc};
    return lw_op(c, CTOSA_OP_TABLE, 2, in, 1, &y, NULL) ? y : NULL;
}

/* The 16-bit value of a (hi, lo) table pair in int32. */
static const char *qr_entry(lower_ctx *c, const char *idx, const char *thi, const char *tlo,
                            const int64_t *sh) {
    double r256 = 256.0, one = 1.0;
    const char *h =
        qdq_rescale_n(c, qr_lookup(c, idx, thi, sh), I8, I32, 3, sh, 1, &r256, 0, 0, false, false);
    const char *l =
        qdq_rescale_n(c, qr_lookup(c, idx, tlo, sh), I8, I32, 3, sh, 1, &one, -128, 0, false, false);
    return h && l ? lw_add(c, h, l, I32, 3, sh) : NULL;
}

static const char *qr_minmax(lower_ctx *c, ctosa_op_kind k, const char *x, double v, const int64_t *sh) {
    const char *b = lw_scalar(c, I32, 3, v), *y = lw_tensor(c, I32, 3, sh);
    if (!x || !b || !y) return NULL;
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.nan_mode = CTOSA_NAN_PROPAGATE;
    const char *in[2] = {x, b};
    return lw_op(c, k, 2, in, 1, &y, &at) ? y : NULL;
}

/* sigmoid / tanh of a pre-activation (int32, s_g units) -> Q15 int32:
 * u = clamp(pre) + 32768, knot idx = u >> 8, frac = u - 256 idx,
 * base 256 + (next - base) frac in Q8 of the entries, one RESCALE. */
static const char *qr_act(qr_ctx *q, const char *pre, bool sig, const int64_t *sh) {
    lower_ctx *c = q->c;
    const qr_tab *tb = sig ? &q->sig : &q->tanh_;
    const char *u =
        qr_minmax(c, CTOSA_OP_MINIMUM, qr_minmax(c, CTOSA_OP_MAXIMUM, pre, -32768.0, sh), 32767.0, sh);
    u = lw_add_scalar(c, u, I32, 3, sh, 32768.0);
    const char *eight = lw_scalar(c, I32, 3, 8.0), *idx = lw_tensor(c, I32, 3, sh);
    if (!u || !eight || !idx) return NULL;
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    const char *in2[2] = {u, eight};
    if (!lw_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, 2, in2, 1, &idx, &at)) return NULL;
    const char *frac = lw_sub(c, u, lw_mul(c, idx, lw_scalar(c, I32, 3, 256.0), I32, 3, sh), I32, 3, sh);
    double one = 1.0;
    const char *i8 = qdq_rescale_n(c, idx, I32, I8, 3, sh, 1, &one, 0, -128, false, false);
    const char *base = qr_entry(c, i8, tb->t[0], tb->t[1], sh),
               *next = qr_entry(c, i8, tb->t[2], tb->t[3], sh);
    const char *v = lw_add(c, lw_mul(c, base, lw_scalar(c, I32, 3, 256.0), I32, 3, sh),
                           lw_mul(c, lw_sub(c, next, base, I32, 3, sh), frac, I32, 3, sh), I32, 3, sh);
    double r = tb->ts * RNN_Q15 / 256.0;
    return qdq_rescale_n(c, v, I32, I32, 3, sh, 1, &r, 0, 0, false, false);
}

/* x [1, rows, K] (int8 with zero point xzp, or int16 / a Q15 int32 value
 * with zero point 0: wide) times the constant int8 wT [1, K, N] (zero
 * point wzp) -> int32 [1, rows, N] in units of x's and w's steps. */
static const char *qr_matmul(lower_ctx *c, const char *x, ctosa_dtype xt, int64_t xzp, int64_t rows,
                             int64_t K, const char *wT, int64_t wzp, int64_t N) {
    int64_t xs[3] = {1, rows, K}, ys[3] = {1, rows, N};
    const char *wz = lw_zero_point(c, I8, wzp);
    if (!x || !wT || !wz) return NULL;
    if (xt == I8) {
        const char *xz = lw_zero_point(c, I8, xzp), *y = lw_tensor(c, I32, 3, ys);
        if (!xz || !y) return NULL;
        const char *in[4] = {x, wT, xz, wz};
        return lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &y, NULL) ? y : NULL;
    }
    /* 16-bit x: hi = (x + 128) >> 8, lo = x - 256 hi, both in int8 */
    double one = 1.0;
    const char *x32 = xt == I32 ? x : qdq_rescale_n(c, x, xt, I32, 3, xs, 1, &one, 0, 0, false, false);
    const char *hi = lw_add_scalar(c, x32, I32, 3, xs, 128.0);
    const char *eight = lw_scalar(c, I32, 3, 8.0), *his = lw_tensor(c, I32, 3, xs);
    if (!hi || !eight || !his) return NULL;
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    const char *in2[2] = {hi, eight};
    if (!lw_op(c, CTOSA_OP_ARITHMETIC_RIGHT_SHIFT, 2, in2, 1, &his, &at)) return NULL;
    const char *lo = lw_sub(c, x32, lw_mul(c, his, lw_scalar(c, I32, 3, 256.0), I32, 3, xs), I32, 3, xs);
    const char *h8 = qdq_rescale_n(c, his, I32, I8, 3, xs, 1, &one, 0, 0, false, false);
    const char *l8 = qdq_rescale_n(c, lo, I32, I8, 3, xs, 1, &one, 0, 0, false, false);
    const char *zz = lw_zero_point(c, I8, 0);
    const char *yh = lw_tensor(c, I32, 3, ys), *yl = lw_tensor(c, I32, 3, ys);
    if (!h8 || !l8 || !zz || !yh || !yl) return NULL;
    const char *ih[4] = {h8, wT, zz, wz}, *il[4] = {l8, wT, zz, wz};
    if (!lw_op(c, CTOSA_OP_MATMUL, 4, ih, 1, &yh, NULL) || !lw_op(c, CTOSA_OP_MATMUL, 4, il, 1, &yl, NULL))
        return NULL;
    return lw_add(c, lw_mul(c, yh, lw_scalar(c, I32, 3, 256.0), I32, 3, ys), yl, I32, 3, ys);
}

/* Weight input i ([D, GH, K] int8 behind a DequantizeLinear): direction
 * d transposed to [1, K, GH] (columns [c0, c0 + n)), its per-row scales. */
static const char *qr_weight(lower_ctx *c, const qx_w *w, int64_t d, int64_t c0, int64_t n, double *scales) {
    int64_t GH = w->shape[1], K = w->shape[2];
    int8_t *t = arena_alloc(lw_arena(c), (size_t)(K * n) + 8);
    if (!t) return NULL;
    for (int64_t j = 0; j < n; j++) {
        for (int64_t k = 0; k < K; k++) t[k * n + j] = w->data[(d * GH + c0 + j) * K + k];
        scales[j] = w->scale[w->n > 1 ? c0 + j : 0];
    }
    int64_t sh[3] = {1, K, n};
    return lw_const(c, I8, 3, sh, t);
}

static bool qr_default_acts(const ctosa_onnx_node *n, qr_kind kind) {
    static const char *const want[3][3] = {{"tanh"}, {"sigmoid", "tanh"}, {"sigmoid", "tanh", "tanh"}};
    uint32_t per = kind == QR_LSTM ? 3 : kind == QR_GRU ? 2 : 1;
    const ctosa_onnx_attr *acts = ctosa_onnx_node_attr(n, "activations");
    if (!acts) return true;
    if (acts->type != CTOSA_ONNX_ATTR_STRINGS) return false;
    for (uint32_t i = 0; i < acts->count; i++) {
        const ctosa_onnx_bytes *b = &acts->strings[i];
        const char *w = want[kind][i % per];
        if (b->n != strlen(w)) return false;
        for (uint64_t k = 0; k < b->n; k++)
            if ((b->p[k] | 0x20) != (uint8_t)w[k]) return false;
    }
    return true;
}

/* Attributes the head rejects by themselves: such a layer is better left
 * as DequantizeLinear -> float layer -> QuantizeLinear (a spec with FP
 * still delegates it). */
bool qdq_rnn_groupable(const ctosa_onnx_node *n) {
    qr_kind kind = !strcmp(n->op_type, "LSTM") ? QR_LSTM : !strcmp(n->op_type, "GRU") ? QR_GRU : QR_RNN;
    if (!qr_default_acts(n, kind)) return false;
    if (kind == QR_LSTM && n->n_inputs > 7 && n->inputs[7][0]) return false;
    for (uint32_t a = 0; a < n->n_attrs; a++) {
        const ctosa_onnx_attr *at = &n->attrs[a];
        if ((!strcmp(at->name, "clip") && at->f != 0.0f) || (!strcmp(at->name, "layout") && at->i != 0) ||
            (!strcmp(at->name, "input_forget") && at->i != 0))
            return false;
    }
    return true;
}

/* Every element of constant input i is v (absent: true). */
static bool qr_const_is(lower_ctx *c, uint32_t i, double v) {
    if (!lw_has_input(c, i)) return true;
    const double *d = NULL;
    int64_t n = lw_const_f64(c, i, &d);
    if (n < 1) return false;
    for (int64_t k = 0; k < n; k++)
        if (d[k] != v) return false;
    return true;
}

lower_status qdq_rnn(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    qr_kind kind = !strcmp(n->op_type, "LSTM") ? QR_LSTM : !strcmp(n->op_type, "GRU") ? QR_GRU : QR_RNN;
    int64_t G = kind == QR_LSTM ? 4 : kind == QR_GRU ? 3 : 1;
    const char *op = n->op_type;
    qx_in a;
    qx_out o;
    if (!qdq_in(c, 0, &a)) return LOWER_REJECT;
    if (a.rank != 3)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: X of rank %u", op, a.rank);
    if (lw_attr_int(c, "layout", 0) != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: layout 1 (batch first)", op);
    if (lw_attr_float(c, "clip", 0.0f) != 0.0f || lw_attr_int(c, "input_forget", 0) != 0 ||
        !qr_default_acts(n, kind))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: clip, input_forget or activations other than the defaults", op);
    if (kind == QR_LSTM && lw_has_input(c, 7))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[7], "quantized LSTM: peepholes");
    if (!qr_const_is(c, 5, 0.0) || (kind == QR_LSTM && !qr_const_is(c, 6, 0.0)))
        return lw_reject(c, LOWER_NEEDS_CONSTANT, n->inputs[5],
                         "quantized %s: initial states other than zero", op);
    const char *dir = lw_attr_str(c, "direction", "forward");
    int64_t D = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool reverse = !strcmp(dir, "reverse");
    bool lbr = kind == QR_GRU && lw_attr_int(c, "linear_before_reset", 0) != 0;
    int64_t S = a.shape[0], B = a.shape[1], I = a.shape[2];
    int64_t H = lw_attr_int(c, "hidden_size", 0);
    qx_w W, R;
    if (!qdq_weight(c, 1, 3, &W) || !qdq_weight(c, 2, 3, &R)) return LOWER_REJECT;
    if (H < 1 || W.rank != 3 || R.rank != 3 || W.shape[0] != D || W.shape[1] != G * H || W.shape[2] != I ||
        R.shape[0] != D || R.shape[1] != G * H || R.shape[2] != H)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: W / R shapes do not match", op);
    if ((W.n > 1 && (W.axis != 1 || W.n != G * H)) || (R.n > 1 && (R.axis != 1 || R.n != G * H)))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "quantized %s: weight scales neither per tensor nor per "
                         "output row",
                         op);
    const double *bias = NULL;
    if (lw_has_input(c, 3) && lw_const_f64(c, 3, &bias) != D * 2 * G * H)
        return lw_reject(c, LOWER_NEEDS_CONSTANT, n->inputs[3], "quantized %s: B must be a constant", op);
    if (lw_has_input(c, 4)) {
        const int64_t *sl = NULL;
        int64_t nl = lw_const_i64(c, 4, &sl);
        bool all = nl == B;
        for (int64_t k = 0; all && k < nl; k++) all = sl[k] == S;
        if (!all)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, n->inputs[4],
                             "quantized %s: sequence_lens other than the "
                             "sequence length",
                             op);
    }
    if (S < 1 || S * D > 4096)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: %lld steps", op, (long long)S);
    if (!qdq_out(c, 4, &o)) return LOWER_REJECT;
    if (o.t == I16 && o.zp != 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "quantized %s: int16 output zero point", op);

    qr_ctx q;
    memset(&q, 0, sizeof q);
    q.c = c;
    if (!qr_table(c, f_sig, &q.sig) || !qr_table(c, tanh, &q.tanh_)) return lw_failed(c);
    int64_t GH = G * H, xs3[3] = {1, S * B, I}, gs[3] = {1, S * B, GH};
    int64_t bh[3] = {1, B, H}, bgh[3] = {1, B, GH};
    const char *x = lw_reshape_if(c, a.x, a.t, 3, a.shape, 3, xs3);
    double *sw = arena_alloc(lw_arena(c), (size_t)GH * sizeof(double) + 8);
    double *rat = arena_alloc(lw_arena(c), (size_t)GH * sizeof(double) + 8);
    double *bq = arena_alloc(lw_arena(c), (size_t)GH * sizeof(double) + 8);
    const char **ys = arena_alloc(lw_arena(c), (size_t)(S * D + 2) * sizeof *ys);
    int64_t *lens = arena_alloc(lw_arena(c), (size_t)(S * D + 2) * sizeof *lens);
    LW_TRY(x && sw && rat && bq && ys && lens);
    const char *dirs[2] = {NULL, NULL};
    for (int64_t d = 0; d < D; d++) {
        /* input projection of every step, in s_g units, with the biases
         * (GRU with linear_before_reset: Rbh stays inside the reset product) */
        const char *wT = qr_weight(c, &W, d, 0, GH, sw);
        LW_TRY(wT);
        const char *gx = qr_matmul(c, x, a.t, a.zp, S * B, I, wT, W.zp, GH);
        for (int64_t j = 0; j < GH; j++) {
            rat[j] = a.s * sw[j] / RNN_SG;
            double b = 0;
            if (bias) {
                b = bias[d * 2 * GH + j];
                if (!(lbr && j >= 2 * H)) b += bias[d * 2 * GH + GH + j];
            }
            bq[j] = nearbyint(b / RNN_SG);
        }
        gx = qdq_rescale_n(c, gx, I32, I32, 3, gs, GH, rat, 0, 0, false, false);
        int64_t bs[3] = {1, 1, GH};
        if (bias) gx = lw_add(c, gx, lw_const_from_f64(c, I32, 3, bs, bq), I32, 3, gs);
        /* recurrent weights: the gates' columns, and the candidate's
         * separately for GRU (its input is r (.) h without linear_before_reset) */
        int64_t nr = kind == QR_GRU && !lbr ? 2 * H : GH;
        double *sr = arena_alloc(lw_arena(c), (size_t)GH * sizeof(double) + 8);
        double *rr = arena_alloc(lw_arena(c), (size_t)GH * sizeof(double) + 8);
        LW_TRY(gx && sr && rr);
        const char *rT = qr_weight(c, &R, d, 0, nr, sr);
        const char *rTn = kind == QR_GRU && !lbr ? qr_weight(c, &R, d, 2 * H, H, sr + 2 * H) : NULL;
        for (int64_t j = 0; j < GH; j++) rr[j] = sr[j] / RNN_Q15 / RNN_SG;
        const char *rbn = NULL; /* GRU: Rbh in s_g units */
        if (kind == QR_GRU && bias) {
            double *v = arena_alloc(lw_arena(c), (size_t)H * sizeof(double) + 8);
            LW_TRY(v);
            for (int64_t j = 0; j < H; j++) v[j] = nearbyint(bias[d * 2 * GH + GH + 2 * H + j] / RNN_SG);
            int64_t s1[3] = {1, 1, H};
            rbn = lbr ? lw_const_from_f64(c, I32, 3, s1, v) : NULL;
        }
        const char *h = NULL, *cs = NULL; /* Q15 int32; NULL: zero */
        for (int64_t step = 0; step < S; step++) {
            int64_t t = (reverse || d == 1) ? S - 1 - step : step;
            const char *pre = qr_slice(c, gx, gs, 0, t * B, 0, bgh);
            int64_t rs[3] = {1, B, nr};
            const char *gh = NULL; /* h R^T in s_g units, [1, B, nr] */
            if (h) {
                gh = qr_matmul(c, h, I32, 0, B, H, rT, R.zp, nr);
                gh = qdq_rescale_n(c, gh, I32, I32, 3, rs, nr, rr, 0, 0, false, false);
                LW_TRY(gh);
            }
            const char *hnew = NULL;
            if (kind != QR_GRU) {
                if (gh) pre = lw_add(c, pre, gh, I32, 3, bgh);
                LW_TRY(pre);
            }
            if (kind == QR_RNN) {
                hnew = qr_act(&q, pre, false, bh);
            } else if (kind == QR_LSTM) {
                const char *gi = qr_act(&q, qr_slice(c, pre, bgh, 0, 0, 0, bh), true, bh);
                const char *go = qr_act(&q, qr_slice(c, pre, bgh, 0, 0, H, bh), true, bh);
                const char *gf = qr_act(&q, qr_slice(c, pre, bgh, 0, 0, 2 * H, bh), true, bh);
                const char *gg = qr_act(&q, qr_slice(c, pre, bgh, 0, 0, 3 * H, bh), false, bh);
                const char *ig = qr_mul15(c, gi, gg, bh);
                cs = cs ? lw_add(c, qr_mul15(c, gf, cs, bh), ig, I32, 3, bh) : ig;
                double r8 = 1.0 / 8.0; /* Q15 -> units of s_g = 2^-12 */
                const char *cg = qdq_rescale_n(c, cs, I32, I32, 3, bh, 1, &r8, 0, 0, false, false);
                hnew = qr_mul15(c, go, qr_act(&q, cg, false, bh), bh);
            } else {
                int64_t s2[3] = {1, B, 2 * H};
                const char *zr = qr_slice(c, pre, bgh, 0, 0, 0, s2);
                if (gh) zr = lw_add(c, zr, qr_slice(c, gh, rs, 0, 0, 0, s2), I32, 3, s2);
                const char *gz = qr_act(&q, qr_slice(c, zr, s2, 0, 0, 0, bh), true, bh);
                const char *gr = qr_act(&q, qr_slice(c, zr, s2, 0, 0, H, bh), true, bh);
                const char *cand = qr_slice(c, pre, bgh, 0, 0, 2 * H, bh);
                if (lbr) {
                    /* r (.) (h Rh + Rbh) */
                    const char *hn = gh ? qr_slice(c, gh, rs, 0, 0, 2 * H, bh) : NULL;
                    const char *hr = hn ? (rbn ? lw_add(c, hn, rbn, I32, 3, bh) : hn) : rbn;
                    if (hr) cand = lw_add(c, cand, qr_mul15(c, gr, hr, bh), I32, 3, bh);
                } else if (h) {
                    /* (r (.) h) Rh; Rbh is in the projection's bias */
                    const char *g2 = qr_matmul(c, qr_mul15(c, gr, h, bh), I32, 0, B, H, rTn, R.zp, H);
                    g2 = qdq_rescale_n(c, g2, I32, I32, 3, bh, H, rr + 2 * H, 0, 0, false, false);
                    cand = lw_add(c, cand, g2, I32, 3, bh);
                }
                const char *gn = qr_act(&q, cand, false, bh);
                /* h' = n + z (h - n) */
                const char *diff = h ? lw_sub(c, h, gn, I32, 3, bh) : lw_mul_scalar(c, gn, I32, 3, bh, -1.0);
                hnew = lw_add(c, gn, qr_mul15(c, gz, diff, bh), I32, 3, bh);
            }
            LW_TRY(hnew);
            h = hnew;
            ys[t] = h;
            lens[t] = 1;
        }
        /* Y of this direction: [S, B, H] -> [S, 1, B, H] */
        uint32_t m = (uint32_t)S;
        while (m > 1) {
            uint32_t k2 = 0;
            for (uint32_t i = 0; i < m; i += RNN_CONCAT) {
                uint32_t cnt = m - i < RNN_CONCAT ? m - i : RNN_CONCAT;
                int64_t tot = 0;
                for (uint32_t j = 0; j < cnt; j++) tot += lens[i + j];
                ys[k2] = cnt == 1 ? ys[i] : lw_concat(c, cnt, ys + i, I32, 3, 0);
                lens[k2++] = tot;
            }
            m = k2;
        }
        int64_t y3[3] = {S, B, H}, y4[4] = {S, 1, B, H};
        dirs[d] = lw_reshape_if(c, ys[0], I32, 3, y3, 4, y4);
        LW_TRY(dirs[d]);
    }
    int64_t ysh[4] = {S, D, B, H};
    const char *y = D == 2 ? lw_concat(c, 2, dirs, I32, 4, 1) : dirs[0];
    double ro = 1.0 / (RNN_Q15 * o.s);
    y = qdq_rescale_n(c, y, I32, o.t, 4, ysh, 1, &ro, 0, o.zp, false, false);
    LW_TRY(y);
    return qdq_finish(c, y, &o, 4, ysh);
}
