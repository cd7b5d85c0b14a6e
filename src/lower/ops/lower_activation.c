/*
 * lower_activation.c - ONNX activation operators -> TOSA.
 *
 * Relu Clip LeakyRelu PRelu Sigmoid Tanh HardSigmoid HardSwish Gelu Elu
 * Celu Selu Softplus Softsign ThresholdedRelu Shrink Mish.
 *
 * CLAMP where the bounds are constants (float, int8, int16); int32/int64
 * have no CLAMP rows and use MAXIMUM/MINIMUM (ew_clamp decides). Clip with
 * non-constant min/max (opset 11+ inputs) uses MAXIMUM/MINIMUM against the
 * bound tensors. The smooth activations are written with EXP/LOG/TANH/ERF:
 *   Softplus  max(x, 0) + log(1 + exp(-|x|))   (no overflow for large x)
 *   Gelu      0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh"
 *             0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   Mish      x tanh(softplus(x))
 */
#include <math.h>
#include <string.h>

#include "lower/lower_ew.h"

static ew_v gt(lower_ctx *c, ew_v a, ew_v b) { return ew_bin(c, CTOSA_OP_GREATER, a, b); }
static ew_v maxk(lower_ctx *c, ew_v a, double v) {
    return ew_bin(c, CTOSA_OP_MAXIMUM, a, ew_k(c, a, v));
}
static ew_v mink(lower_ctx *c, ew_v a, double v) {
    return ew_bin(c, CTOSA_OP_MINIMUM, a, ew_k(c, a, v));
}
static ew_v expm1_(lower_ctx *c, ew_v x) { return ew_addk(c, ew_un(c, CTOSA_OP_EXP, x), -1.0); }

static ew_v softplus_(lower_ctx *c, ew_v x) {
    ew_v nax = ew_un(c, CTOSA_OP_NEGATE, ew_un(c, CTOSA_OP_ABS, x));
    ew_v l = ew_un(c, CTOSA_OP_LOG, ew_addk(c, ew_un(c, CTOSA_OP_EXP, nax), 1.0));
    return ew_add(c, maxk(c, x, 0.0), l);
}

#define ONE_INPUT(c, x)                       \
    ew_v x;                                   \
    do {                                      \
        lower_status st_ = ew_in((c), 0, &x); \
        if (st_) return st_;                  \
    } while (0)

static lower_status lower_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    return ew_out(c, 0, ew_clamp(c, x, 0.0, INFINITY));
}

/* Clip-1..10: min/max attributes. */
static lower_status lower_clip_attr(lower_ctx *c) {
    ONE_INPUT(c, x);
    double lo = lw_has_attr(c, "min") ? (double)lw_attr_float(c, "min", 0) : -INFINITY;
    double hi = lw_has_attr(c, "max") ? (double)lw_attr_float(c, "max", 0) : INFINITY;
    return ew_out(c, 0, ew_clamp(c, x, lo, hi));
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
    if (!dyn[0] && !dyn[1]) return ew_out(c, 0, ew_clamp(c, x, bound[0], bound[1]));
    bool fl = ctosa_dtype_is_float(x.t);
    ew_v r = fl ? x : ew_widen(c, x);
    for (uint32_t i = 0; i < 2; i++) {
        ew_v b;
        if (dyn[i]) {
            lower_status st = ew_in(c, i + 1, &b);
            if (st) return st;
            if (b.t != x.t)
                return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "Clip: bound is %s, input %s",
                                 ctosa_dtype_short(b.t), ctosa_dtype_short(x.t));
            ew_v v2[2] = {x, b};
            if ((st = ew_bcast(c, 2, v2))) return st;
            if (!fl) b = ew_widen(c, b);
        } else if (isinf(bound[i])) {
            continue;
        } else {
            b = ew_k(c, r, bound[i]);
        }
        r = ew_bin(c, i == 0 ? CTOSA_OP_MAXIMUM : CTOSA_OP_MINIMUM, r, b);
    }
    return ew_out(c, 0, ew_narrow(c, r, x.t));
}

/* LeakyRelu: max(x, alpha x) when 0 <= alpha <= 1, else a SELECT. */
static lower_status lower_leaky_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 0.01f);
    ew_v ax = ew_mulk(c, x, alpha);
    if (alpha >= 0 && alpha <= 1) return ew_out(c, 0, ew_bin(c, CTOSA_OP_MAXIMUM, x, ax));
    return ew_out(c, 0, ew_select(c, gt(c, ew_k(c, x, 0), x), ax, x));
}

/* PRelu: x < 0 ? slope x : x, slope broadcast to x (unidirectional). */
static lower_status lower_prelu(lower_ctx *c) {
    ew_v x, s;
    lower_status st = ew_in(c, 0, &x);
    if (st) return st;
    if ((st = ew_in(c, 1, &s))) return st;
    if (s.t != x.t)
        return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "PRelu: slope is %s, input %s",
                         ctosa_dtype_short(s.t), ctosa_dtype_short(x.t));
    ew_v v[2] = {x, s};
    if ((st = ew_bcast(c, 2, v))) return st;
    bool fl = ctosa_dtype_is_float(x.t);
    ew_v wx = fl ? x : ew_widen(c, x), ws = fl ? s : ew_widen(c, s);
    ew_v r = ew_select(c, gt(c, ew_k(c, wx, 0), wx), ew_mul(c, wx, ws), wx);
    return ew_out(c, 0, ew_narrow(c, r, x.t));
}

static lower_status lower_sigmoid(lower_ctx *c) {
    ONE_INPUT(c, x);
    return ew_out(c, 0, ew_un(c, CTOSA_OP_SIGMOID, x));
}

static lower_status lower_tanh(lower_ctx *c) {
    ONE_INPUT(c, x);
    return ew_out(c, 0, ew_un(c, CTOSA_OP_TANH, x));
}

static lower_status lower_hard_sigmoid(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 0.2f), beta = lw_attr_float(c, "beta", 0.5f);
    return ew_out(c, 0, ew_clamp(c, ew_addk(c, ew_mulk(c, x, alpha), beta), 0.0, 1.0));
}

static lower_status lower_hard_swish(lower_ctx *c) {
    ONE_INPUT(c, x);
    ew_v g = ew_clamp(c, ew_addk(c, ew_mulk(c, x, 1.0 / 6.0), 0.5), 0.0, 1.0);
    return ew_out(c, 0, ew_mul(c, x, g));
}

static lower_status lower_gelu(lower_ctx *c) {
    ONE_INPUT(c, x);
    const char *ap = lw_attr_str(c, "approximate", "none");
    ew_v inner;
    if (!ap || strcmp(ap, "none") == 0) {
        inner = ew_un(c, CTOSA_OP_ERF, ew_mulk(c, x, 0.70710678118654752440));
    } else if (strcmp(ap, "tanh") == 0) {
        ew_v x3 = ew_mul(c, ew_mul(c, x, x), x);
        ew_v u = ew_add(c, x, ew_mulk(c, x3, 0.044715));
        inner = ew_un(c, CTOSA_OP_TANH, ew_mulk(c, u, 0.79788456080286535588));
    } else {
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gelu: approximate='%s' is not none or tanh", ap);
    }
    return ew_out(c, 0, ew_mul(c, ew_mulk(c, x, 0.5), ew_addk(c, inner, 1.0)));
}

static lower_status lower_elu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    ew_v neg = ew_mulk(c, expm1_(c, x), alpha);
    return ew_out(c, 0, ew_select(c, gt(c, ew_k(c, x, 0), x), neg, x));
}

static lower_status lower_celu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    if (alpha == 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Celu: alpha must not be 0");
    ew_v e = ew_mulk(c, expm1_(c, ew_mulk(c, x, 1.0 / alpha)), alpha);
    return ew_out(c, 0, ew_add(c, maxk(c, x, 0.0), mink(c, e, 0.0)));
}

static lower_status lower_selu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.67326319217681884765625f);
    double gamma = lw_attr_float(c, "gamma", 1.05070102214813232421875f);
    ew_v neg = ew_mulk(c, expm1_(c, x), alpha);
    ew_v r = ew_select(c, gt(c, x, ew_k(c, x, 0)), x, neg);
    return ew_out(c, 0, ew_mulk(c, r, gamma));
}

static lower_status lower_softplus(lower_ctx *c) {
    ONE_INPUT(c, x);
    return ew_out(c, 0, softplus_(c, x));
}

static lower_status lower_softsign(lower_ctx *c) {
    ONE_INPUT(c, x);
    ew_v d = ew_addk(c, ew_un(c, CTOSA_OP_ABS, x), 1.0);
    return ew_out(c, 0, ew_fdiv(c, x, d));
}

static lower_status lower_thresholded_relu(lower_ctx *c) {
    ONE_INPUT(c, x);
    double alpha = lw_attr_float(c, "alpha", 1.0f);
    return ew_out(c, 0, ew_select(c, gt(c, x, ew_k(c, x, alpha)), x, ew_k(c, x, 0)));
}

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0. Integer inputs
 * are computed in fp32 (lambd and bias are float attributes) and CAST back. */
static lower_status lower_shrink(lower_ctx *c) {
    ONE_INPUT(c, x);
    double bias = lw_attr_float(c, "bias", 0.0f), lambd = lw_attr_float(c, "lambd", 0.5f);
    ew_v w = ctosa_dtype_is_float(x.t) ? x : ew_cast(c, x, CTOSA_DTYPE_FP32);
    ew_v lo = gt(c, ew_k(c, w, -lambd), w);
    ew_v hi = gt(c, w, ew_k(c, w, lambd));
    ew_v r = ew_select(c, lo, ew_addk(c, w, bias),
                       ew_select(c, hi, ew_addk(c, w, -bias), ew_k(c, w, 0)));
    if (!ctosa_dtype_is_float(x.t)) {
        /* ONNX reference casts the float result: truncation toward zero */
        ew_v neg = gt(c, ew_k(c, r, 0), r);
        r = ew_select(c, neg, ew_un(c, CTOSA_OP_CEIL, r), ew_un(c, CTOSA_OP_FLOOR, r));
    }
    return ew_out(c, 0, ew_cast(c, r, x.t));
}

static lower_status lower_mish(lower_ctx *c) {
    ONE_INPUT(c, x);
    return ew_out(c, 0, ew_mul(c, x, ew_un(c, CTOSA_OP_TANH, softplus_(c, x))));
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
