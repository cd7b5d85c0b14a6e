/*
 * lower_activation.c - ONNX activation operators -> TOSA.
 *
 * Relu Clip LeakyRelu PRelu Sigmoid Tanh HardSigmoid HardSwish Gelu Elu
 * Celu Selu Softplus Softsign ThresholdedRelu Shrink Mish.
 *
 * CLAMP where the bounds are constants (float, int8, int16); int32/int64
 * have no CLAMP rows and use MAXIMUM/MINIMUM (lw_v_clamp decides). Clip with
 * non-constant min/max (opset 11+ inputs) uses MAXIMUM/MINIMUM against the
 * bound tensors. The smooth activations are written with EXP/LOG/TANH/ERF:
 *   Softplus  max(x, 0) + log(1 + exp(-|x|))   (no overflow for large x)
 *   Gelu      0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh"
 *             0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   Mish      x tanh(softplus(x))
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

static lw_v gt(lower_ctx *c, lw_v a, lw_v b) { return lw_v_bin(c, CTOSA_OP_GREATER, a, b); }
static lw_v maxk(lower_ctx *c, lw_v a, double v) { return lw_v_bin(c, CTOSA_OP_MAXIMUM, a, lw_v_k(c, a, v)); }
static lw_v mink(lower_ctx *c, lw_v a, double v) { return lw_v_bin(c, CTOSA_OP_MINIMUM, a, lw_v_k(c, a, v)); }
static lw_v expm1_(lower_ctx *c, lw_v x) { return lw_v_addk(c, lw_v_un(c, CTOSA_OP_EXP, x), -1.0); }

static lw_v softplus_(lower_ctx *c, lw_v x) {
    lw_v nax = lw_v_un(c, CTOSA_OP_NEGATE, lw_v_un(c, CTOSA_OP_ABS, x));
    lw_v l = lw_v_un(c, CTOSA_OP_LOG, lw_v_addk(c, lw_v_un(c, CTOSA_OP_EXP, nax), 1.0));
    return lw_v_add(c, maxk(c, x, 0.0), l);
}

#define ONE_INPUT(c, x)                         \
    lw_v x;                                     \
    do {                                        \
        lower_status st_ = lw_v_in((c), 0, &x); \
        if (st_) return st_;                    \
    } while (0)

static lower_status lower_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    return lw_v_out(c, 0, lw_v_clamp(c, x, 0.0, INFINITY));
}

/* Clip-1..10: min/max attributes. */
static lower_status lower_clip_attr(lower_ctx *c) {
    ONE_INPUT(c, x);
    double lo = lw_has_attr(c, "min") ? (double)lw_attr_float(c, "min", 0) : -INFINITY;
    double hi = lw_has_attr(c, "max") ? (double)lw_attr_float(c, "max", 0) : INFINITY;
    return lw_v_out(c, 0, lw_v_clamp(c, x, lo, hi));
}

/* Clip-11+: optional min / max inputs. Constant scalars -> CLAMP; anything
 * else -> MAXIMUM / MINIMUM with the bound tensor. */
static lower_status lower_clip_in(lower_ctx *c) {
    ONE_INPUT(c, x);
    double bound[2] = {-INFINITY, INFINITY};
    bool dyn[2] = {false, false};
    uint32_t n = lw_n_inputs(c);
    for (uint32_t i = 1; i < 3 && i < n; i++) {
        if (!lw_has_input(c, i)) continue;
        const double *v;
        int64_t k = lw_const_f64(c, i, &v);
        if (k == 1) bound[i - 1] = v[0];
        else dyn[i - 1] = true;
    }
    if (!dyn[0] && !dyn[1]) return lw_v_out(c, 0, lw_v_clamp(c, x, bound[0], bound[1]));
    bool fl = ctosa_dtype_is_float(x.t);
    lw_v r = fl ? x : lw_v_widen(c, x);
    for (uint32_t i = 0; i < 2; i++) {
        lw_v b;
        if (dyn[i]) {
            lower_status st = lw_v_in(c, i + 1, &b);
            if (st) return st;
            if (b.t != x.t)
                return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "Clip: bound is %s, input %s",
                                 ctosa_dtype_short(b.t), ctosa_dtype_short(x.t));
            lw_v v2[2] = {x, b};
            if ((st = lw_v_bcast(c, 2, v2))) return st;
            if (!fl) b = lw_v_widen(c, b);
        } else if (isinf(bound[i])) {
            continue;
        } else {
            b = lw_v_k(c, r, bound[i]);
        }
        r = lw_v_bin(c, i == 0 ? CTOSA_OP_MAXIMUM : CTOSA_OP_MINIMUM, r, b);
    }
    return lw_v_out(c, 0, lw_v_narrow(c, r, x.t));
}

/* LeakyRelu: max(x, alpha x) when 0 <= alpha <= 1, else a SELECT. */
static lower_status lower_leaky_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 0.01f);
    lw_v ax = lw_v_mulk(c, x, alpha);
    if (alpha >= 0 && alpha <= 1) return lw_v_out(c, 0, lw_v_bin(c, CTOSA_OP_MAXIMUM, x, ax));
    return lw_v_out(c, 0, lw_v_select(c, gt(c, lw_v_k(c, x, 0), x), ax, x));
}

/* PRelu: x < 0 ? slope x : x, slope broadcast to x (unidirectional). */
static lower_status lower_prelu(lower_ctx *c) {
    lw_v x, s;
    lower_status st = lw_v_in(c, 0, &x);
    if (st) return st;
    if ((st = lw_v_in(c, 1, &s))) return st;
    if (s.t != x.t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "PRelu: slope is %s, input %s", ctosa_dtype_short(s.t),
                         ctosa_dtype_short(x.t));
    lw_v v[2] = {x, s};
    if ((st = lw_v_bcast(c, 2, v))) return st;
    bool fl = ctosa_dtype_is_float(x.t);
    lw_v wx = fl ? x : lw_v_widen(c, x), ws = fl ? s : lw_v_widen(c, s);
    lw_v r = lw_v_select(c, gt(c, lw_v_k(c, wx, 0), wx), lw_v_mul(c, wx, ws), wx);
    return lw_v_out(c, 0, lw_v_narrow(c, r, x.t));
}

static lower_status lower_sigmoid(lower_ctx *c) {
    ONE_INPUT(c, x);
    return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_SIGMOID, x));
}

static lower_status lower_tanh(lower_ctx *c) {
    ONE_INPUT(c, x);
    return lw_v_out(c, 0, lw_v_un(c, CTOSA_OP_TANH, x));
}

static lower_status lower_hard_sigmoid(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 0.2f), beta = lw_attr_float(c, "beta", 0.5f);
    return lw_v_out(c, 0, lw_v_clamp(c, lw_v_addk(c, lw_v_mulk(c, x, alpha), beta), 0.0, 1.0));
}

static lower_status lower_hard_swish(lower_ctx *c) {
    ONE_INPUT(c, x);
    lw_v g = lw_v_clamp(c, lw_v_addk(c, lw_v_mulk(c, x, 1.0 / 6.0), 0.5), 0.0, 1.0);
    return lw_v_out(c, 0, lw_v_mul(c, x, g));
}

static lower_status lower_gelu(lower_ctx *c) {
    ONE_INPUT(c, x);
    const char *ap = lw_attr_str(c, "approximate", "none");
    lw_v inner;
    if (!ap || strcmp(ap, "none") == 0) {
        inner = lw_v_un(c, CTOSA_OP_ERF, lw_v_mulk(c, x, 0.70710678118654752440));
    } else if (strcmp(ap, "tanh") == 0) {
        lw_v x3 = lw_v_mul(c, lw_v_mul(c, x, x), x);
        lw_v u = lw_v_add(c, x, lw_v_mulk(c, x3, 0.044715));
        inner = lw_v_un(c, CTOSA_OP_TANH, lw_v_mulk(c, u, 0.79788456080286535588));
    } else {
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gelu: approximate='%s' is not none or tanh", ap);
    }
    return lw_v_out(c, 0, lw_v_mul(c, lw_v_mulk(c, x, 0.5), lw_v_addk(c, inner, 1.0)));
}

static lower_status lower_elu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    lw_v neg = lw_v_mulk(c, expm1_(c, x), alpha);
    return lw_v_out(c, 0, lw_v_select(c, gt(c, lw_v_k(c, x, 0), x), neg, x));
}

static lower_status lower_celu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    if (alpha == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Celu: alpha must not be 0");
    lw_v e = lw_v_mulk(c, expm1_(c, lw_v_mulk(c, x, 1.0 / alpha)), alpha);
    return lw_v_out(c, 0, lw_v_add(c, maxk(c, x, 0.0), mink(c, e, 0.0)));
}

static lower_status lower_selu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.67326319217681884765625f);
    double gamma = lw_attr_float(c, "gamma", 1.05070102214813232421875f);
    lw_v neg = lw_v_mulk(c, expm1_(c, x), alpha);
    lw_v r = lw_v_select(c, gt(c, x, lw_v_k(c, x, 0)), x, neg);
    return lw_v_out(c, 0, lw_v_mulk(c, r, gamma));
}

static lower_status lower_softplus(lower_ctx *c) {
    ONE_INPUT(c, x);
    return lw_v_out(c, 0, softplus_(c, x));
}

static lower_status lower_softsign(lower_ctx *c) {
    ONE_INPUT(c, x);
    lw_v d = lw_v_addk(c, lw_v_un(c, CTOSA_OP_ABS, x), 1.0);
    return lw_v_out(c, 0, lw_v_fdiv(c, x, d));
}

static lower_status lower_thresholded_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    return lw_v_out(c, 0, lw_v_select(c, gt(c, x, lw_v_k(c, x, alpha)), x, lw_v_k(c, x, 0)));
}

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0. Integer inputs
 * are computed in fp32 (lambd and bias are float attributes) and CAST back. */
static lower_status lower_shrink(lower_ctx *c) {
    ONE_INPUT(c, x);
    double bias = lw_attr_float(c, "bias", 0.0f), lambd = lw_attr_float(c, "lambd", 0.5f);
    lw_v w = ctosa_dtype_is_float(x.t) ? x : lw_v_cast(c, x, CTOSA_DTYPE_FP32);
    lw_v lo = gt(c, lw_v_k(c, w, -lambd), w);
    lw_v hi = gt(c, w, lw_v_k(c, w, lambd));
    lw_v r = lw_v_select(c, lo, lw_v_addk(c, w, bias),
                         lw_v_select(c, hi, lw_v_addk(c, w, -bias), lw_v_k(c, w, 0)));
    if (!ctosa_dtype_is_float(x.t)) {
        /* ONNX reference casts the float result: truncation toward zero */
        lw_v neg = gt(c, lw_v_k(c, r, 0), r);
        r = lw_v_select(c, neg, lw_v_un(c, CTOSA_OP_CEIL, r), lw_v_un(c, CTOSA_OP_FLOOR, r));
    }
    return lw_v_out(c, 0, lw_v_cast(c, r, x.t));
}

static lower_status lower_mish(lower_ctx *c) {
    ONE_INPUT(c, x);
    return lw_v_out(c, 0, lw_v_mul(c, x, lw_v_un(c, CTOSA_OP_TANH, softplus_(c, x))));
}

const lower_entry lower_table_activation[] = {
    {"Relu", 1, 0, lower_relu},
    {"Clip", 1, 10, lower_clip_attr},
    {"Clip", 11, 0, lower_clip_in},
    {"LeakyRelu", 1, 0, lower_leaky_relu},
    {"PRelu", 7, 0, lower_prelu},
    {"Sigmoid", 1, 0, lower_sigmoid},
    {"Tanh", 1, 0, lower_tanh},
    {"HardSigmoid", 1, 0, lower_hard_sigmoid},
    {"HardSwish", 14, 0, lower_hard_swish},
    {"Gelu", 20, 0, lower_gelu},
    {"Elu", 1, 0, lower_elu},
    {"Celu", 12, 0, lower_celu},
    {"Selu", 1, 0, lower_selu},
    {"Softplus", 1, 0, lower_softplus},
    {"Softsign", 1, 0, lower_softsign},
    {"ThresholdedRelu", 10, 0, lower_thresholded_relu},
    {"Shrink", 9, 0, lower_shrink},
    {"Mish", 18, 0, lower_mish},
    {0, 0, 0, 0},
};
