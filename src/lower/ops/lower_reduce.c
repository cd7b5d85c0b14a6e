/*
 * lower_reduce.c - ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/
 * SumSquare, ArgMax/ArgMin and TopK.
 *
 * TOSA reduces one axis per operator and keeps it as size 1, so a
 * multi-axis reduction is a chain of REDUCE_* followed by a RESHAPE when
 * keepdims = 0. The composite reductions are built around it:
 *   L1 = sum |x|, L2 = sqrt(sum x*x) (RECIPROCAL(RSQRT(.)), exact at 0),
 *   SumSquare = sum x*x, LogSum = log(sum x), Mean = sum * (1/N),
 *   LogSumExp = m + log(sum exp(x - m)) with m = max over the axes (the
 *   stable form; the plain form overflows for x > 88 in fp32).
 * Bool ReduceMax/ReduceMin (opset 20) map to REDUCE_ANY/REDUCE_ALL.
 * fp16 arithmetic reductions run in fp32 (CAST in and out).
 *
 * ArgMax: TOSA ARGMAX drops the axis and returns the first maximum as i32;
 * select_last_index reverses the axis first and maps i -> K-1-i. ArgMin is
 * ARGMAX of NEGATE (floats) or of BITWISE_NOT (integers: ~x = -x-1 orders
 * exactly reversed and never overflows). ONNX wants int64: under specs with
 * int64 the i32 result is CAST; otherwise the i32 tensor is bound and the
 * framework's int64 rules apply to it.
 *
 * TopK: k rounds of REDUCE_MAX (or MIN) and a lowest-index pick (below);
 * a constant input without NaN is sorted at compile time instead (any k).
 */
#include "lower/lower_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum red_kind {
    RED_SUM,
    RED_MEAN,
    RED_MAX,
    RED_MIN,
    RED_PROD,
    RED_L1,
    RED_L2,
    RED_LOGSUM,
    RED_LOGSUMEXP,
    RED_SUMSQUARE
} red_kind;

/* Chains REDUCE_<op> over the marked axes (keepdims form). */
static const char *reduce_chain(lower_ctx *c, ctosa_op_kind op, const char *x, ctosa_dtype t, uint32_t rank,
                                int64_t *shape, const bool *mark) {
    for (uint32_t i = 0; i < rank && x; i++) {
        if (!mark[i] || shape[i] == 1) continue;
        ctosa_attr a = {0};
        a.axis = (int32_t)i;
        if (op == CTOSA_OP_REDUCE_MAX || op == CTOSA_OP_REDUCE_MIN) a.nan_mode = CTOSA_NAN_PROPAGATE;
        shape[i] = 1;
        x = lw_unary(c, op, x, t, rank, shape, &a);
    }
    return x;
}

static const char *unary(lower_ctx *c, ctosa_op_kind op, const char *x, ctosa_dtype t, uint32_t rank,
                         const int64_t *shape) {
    return x ? lw_unary(c, op, x, t, rank, shape, NULL) : NULL;
}

/* Integer reductions of constant inputs (shape arithmetic such as
 * ReduceProd of a Shape slice): computed here, because TOSA has no integer
 * REDUCE_PRODUCT and folding on the interpreter cannot run it. Wraps like
 * two's complement arithmetic. */
static lower_status const_reduce(lower_ctx *c, const lower_value *v, red_kind kind, const bool *mark,
                                 bool keep) {
    const int64_t *in;
    int64_t n = lw_const_i64(c, 0, &in);
    uint32_t r = v->rank;
    int64_t os[LOWER_MAX_RANK], ks[LOWER_MAX_RANK], stride[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < r; i++) {
        ks[i] = mark[i] ? 1 : v->shape[i];
        if (!mark[i]) os[k++] = v->shape[i];
    }
    int64_t m = lw_count(r, ks);
    size_t es = lw_onnx_elem_size(v->onnx_dtype);
    uint64_t *acc = arena_alloc(lw_arena(c), (size_t)m * sizeof *acc + 1);
    uint8_t *out = arena_alloc(lw_arena(c), (size_t)m * es + 1);
    if (n < 0 || !acc || !out || !es) return lw_failed(c);
    for (int64_t j = 0; j < m; j++) acc[j] = kind == RED_PROD ? 1 : 0;
    bool *first = arena_alloc(lw_arena(c), (size_t)m + 1);
    if (!first) return lw_failed(c);
    memset(first, 1, (size_t)m);
    if (r) stride[r - 1] = 1;
    for (uint32_t i = r; i > 1; i--) stride[i - 2] = stride[i - 1] * ks[i - 1];
    int64_t p[LOWER_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t j = 0;
        for (uint32_t i = 0; i < r; i++)
            if (!mark[i]) j += p[i] * stride[i];
        int64_t x = in[e];
        switch (kind) {
        case RED_SUM: acc[j] += (uint64_t)x; break;
        case RED_L1: acc[j] += (uint64_t)(x < 0 ? -x : x); break;
        case RED_SUMSQUARE: acc[j] += (uint64_t)x * (uint64_t)x; break;
        case RED_PROD: acc[j] *= (uint64_t)x; break;
        case RED_MAX:
            if (first[j] || x > (int64_t)acc[j]) acc[j] = (uint64_t)x;
            break;
        default:
            if (first[j] || x < (int64_t)acc[j]) acc[j] = (uint64_t)x;
            break;
        }
        first[j] = false;
        for (int32_t i = (int32_t)r - 1; i >= 0; i--) {
            if (++p[i] < v->shape[i]) break;
            p[i] = 0;
        }
    }
    for (int64_t j = 0; j < m; j++) {
        int64_t x = (int64_t)acc[j];
        if (es == 8) memcpy(out + 8 * j, &x, 8);
        else if (v->onnx_dtype == CTOSA_ONNX_BOOL) out[j] = x != 0;
        else lw_onnx_encode(v->onnx_dtype, (double)x, out + (size_t)j * es);
    }
    lw_set_output_const(c, 0, v->onnx_dtype, keep ? r : k, keep ? ks : os, out, (uint64_t)m * es);
    return LOWER_OK;
}

static lower_status lower_reduce(lower_ctx *c, red_kind kind) {
    lower_status st = LOWER_REJECT;
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    ctosa_dtype t = v->t;
    bool fl = ctosa_dtype_is_float(t), bl = t == CTOSA_DTYPE_BOOL;
    if (bl && kind != RED_MAX && kind != RED_MIN)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "%s: bool input", nd->op_type);
    if (!fl && (kind == RED_MEAN || kind == RED_L2 || kind == RED_LOGSUM || kind == RED_LOGSUMEXP))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name,
                         "%s: integer input is not supported (needs float math)", nd->op_type);
    int64_t axes_opset = kind == RED_SUM ? 13 : 18;
    const int64_t *axes = NULL;
    int64_t na = -1;
    bool noop = false;
    if (lw_opset(c) >= axes_opset) {
        noop = lw_attr_int(c, "noop_with_empty_axes", 0) != 0;
        if (lw_has_input(c, 1)) {
            na = lw_const_i64(c, 1, &axes);
            if (na < 0)
                return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->inputs[1],
                                 "%s: axes '%s' must be a compile-time constant", nd->op_type, nd->inputs[1]);
        }
    } else {
        na = lw_attr_ints(c, "axes", &axes);
    }
    bool keep = lw_attr_int(c, "keepdims", 1) != 0;
    bool mark[LOWER_MAX_RANK] = {false};
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    if (na <= 0) {
        if (noop) {
            x = lw_unary(c, CTOSA_OP_IDENTITY, x, t, r, v->shape, NULL);
            if (!x) return lw_failed(c);
            lw_set_output(c, 0, x);
            return LOWER_OK;
        }
        for (uint32_t i = 0; i < r; i++) mark[i] = true;
    } else {
        for (int64_t k = 0; k < na; k++) {
            int32_t a;
            if (!lw_axis(c, axes[k], r, "axis", &a)) return LOWER_REJECT;
            mark[a] = true;
        }
    }
    int64_t shape[LOWER_MAX_RANK], red_shape[LOWER_MAX_RANK], n_red = 1;
    memcpy(shape, v->shape, r * sizeof *shape);
    for (uint32_t i = 0; i < r; i++) {
        red_shape[i] = mark[i] ? 1 : shape[i];
        if (mark[i]) n_red *= shape[i];
    }
    if (lw_count(r, shape) == 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "%s: empty input", nd->op_type);
    if (v->data && !lw_onnx_is_float(v->onnx_dtype) && lw_onnx_elem_size(v->onnx_dtype) &&
        (kind == RED_SUM || kind == RED_PROD || kind == RED_MAX || kind == RED_MIN || kind == RED_L1 ||
         kind == RED_SUMSQUARE))
        return const_reduce(c, v, kind, mark, keep);
    /* fp16 sums accumulate in fp16 in TOSA; compute in fp32 and cast back
     * so long reductions keep their precision. */
    ctosa_dtype out_t = t;
    if (t == CTOSA_DTYPE_FP16 && kind != RED_MAX && kind != RED_MIN) {
        x = lw_cast(c, x, t, CTOSA_DTYPE_FP32, r, shape);
        t = CTOSA_DTYPE_FP32;
    }
    ctosa_op_kind op = CTOSA_OP_REDUCE_SUM;
    const char *m = NULL;
    switch (kind) {
    case RED_MAX: op = bl ? CTOSA_OP_REDUCE_ANY : CTOSA_OP_REDUCE_MAX; break;
    case RED_MIN: op = bl ? CTOSA_OP_REDUCE_ALL : CTOSA_OP_REDUCE_MIN; break;
    case RED_PROD: op = CTOSA_OP_REDUCE_PRODUCT; break;
    case RED_L1: x = unary(c, CTOSA_OP_ABS, x, t, r, shape); break;
    case RED_L2:
    case RED_SUMSQUARE: x = lw_mul(c, x, x, t, r, shape); break;
    case RED_LOGSUMEXP: {
        int64_t ms[LOWER_MAX_RANK];
        memcpy(ms, shape, r * sizeof *ms);
        m = reduce_chain(c, CTOSA_OP_REDUCE_MAX, x, t, r, ms, mark);
        if (m) x = lw_binary(c, CTOSA_OP_SUB, x, m, t, r, shape);
        x = unary(c, CTOSA_OP_EXP, x, t, r, shape);
        break;
    }
    default: break;
    }
    if (!x) return lw_failed(c);
    x = reduce_chain(c, op, x, t, r, shape, mark);
    switch (kind) {
    case RED_MEAN:
        if (n_red != 1) x = lw_mul(c, x, lw_scalar(c, t, r, 1.0 / (double)n_red), t, r, shape);
        break;
    case RED_L2:
        x = unary(c, CTOSA_OP_RSQRT, x, t, r, shape);
        x = unary(c, CTOSA_OP_RECIPROCAL, x, t, r, shape);
        break;
    case RED_LOGSUM: x = unary(c, CTOSA_OP_LOG, x, t, r, shape); break;
    case RED_LOGSUMEXP:
        x = unary(c, CTOSA_OP_LOG, x, t, r, shape);
        if (x) x = lw_binary(c, CTOSA_OP_ADD, x, m, t, r, shape);
        break;
    default: break;
    }
    if (x && out_t != t) {
        x = lw_cast(c, x, t, out_t, r, shape);
        t = out_t;
    }
    if (!x) return lw_failed(c);
    if (!keep) {
        int64_t os[LOWER_MAX_RANK];
        uint32_t k = 0;
        for (uint32_t i = 0; i < r; i++)
            if (!mark[i]) os[k++] = shape[i];
        x = lw_reshape(c, x, t, k, os);
    } else if (x == lw_input(c, 0)) {
        x = lw_unary(c, CTOSA_OP_IDENTITY, x, t, r, red_shape, NULL);
    }
    if (!x) return lw_failed(c);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

static lower_status lower_reduce_sum(lower_ctx *c) { return lower_reduce(c, RED_SUM); }
static lower_status lower_reduce_mean(lower_ctx *c) { return lower_reduce(c, RED_MEAN); }
static lower_status lower_reduce_max(lower_ctx *c) { return lower_reduce(c, RED_MAX); }
static lower_status lower_reduce_min(lower_ctx *c) { return lower_reduce(c, RED_MIN); }
static lower_status lower_reduce_prod(lower_ctx *c) { return lower_reduce(c, RED_PROD); }
static lower_status lower_reduce_l1(lower_ctx *c) { return lower_reduce(c, RED_L1); }
static lower_status lower_reduce_l2(lower_ctx *c) { return lower_reduce(c, RED_L2); }
static lower_status lower_reduce_logsum(lower_ctx *c) { return lower_reduce(c, RED_LOGSUM); }
static lower_status lower_reduce_lse(lower_ctx *c) { return lower_reduce(c, RED_LOGSUMEXP); }
static lower_status lower_reduce_sumsq(lower_ctx *c) { return lower_reduce(c, RED_SUMSQUARE); }

/* --------------------------------------------------------- ArgMax/ArgMin */

static lower_status lower_arg(lower_ctx *c, bool is_min) {
    lower_status st = LOWER_REJECT;
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    uint32_t r = v->rank;
    ctosa_dtype t = v->t;
    if (r == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "%s: scalar input", nd->op_type);
    if (t == CTOSA_DTYPE_BOOL)
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "%s: bool input", nd->op_type);
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", 0), r, "axis", &axis)) return LOWER_REJECT;
    bool keep = lw_attr_int(c, "keepdims", 1) != 0;
    bool last = lw_attr_int(c, "select_last_index", 0) != 0;
    int64_t K = v->shape[axis];
    if (lw_count(r, v->shape) == 0)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "%s: empty input", nd->op_type);
    const char *x = lw_input(c, 0);
    if (!x) return lw_failed(c);
    if (is_min) {
        if (ctosa_dtype_is_float(t)) {
            const char *in[3] = {x, lw_zero_point(c, t, 0), lw_zero_point(c, t, 0)};
            const char *o = lw_tensor(c, t, r, v->shape);
            if (!in[1] || !in[2] || !o || !lw_op(c, CTOSA_OP_NEGATE, 3, in, 1, &o, NULL)) return lw_failed(c);
            x = o;
        } else {
            x = lw_unary(c, CTOSA_OP_BITWISE_NOT, x, t, r, v->shape, NULL);
        }
    }
    if (x && last) x = lw_reverse(c, x, t, r, v->shape, axis);
    if (!x) return lw_failed(c);
    int64_t os[LOWER_MAX_RANK], ks[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < r; i++) {
        ks[i] = (int32_t)i == axis ? 1 : v->shape[i];
        if ((int32_t)i != axis) os[k++] = v->shape[i];
    }
    /* TOSA 1.1 with int64 has ARGMAX rows with an i64 output (for every
     * input type) and none for i32 inputs with an i32 output. */
    const ctosa_dtype I =
        lw_tosa_dtype(c, CTOSA_ONNX_INT64) == CTOSA_DTYPE_INT64 ? CTOSA_DTYPE_INT64 : CTOSA_DTYPE_INT32;
    ctosa_attr a = {0};
    a.axis = axis;
    a.nan_mode = CTOSA_NAN_PROPAGATE;
    uint32_t orank = keep ? r : k;
    const int64_t *oshape = keep ? ks : os;
    if (keep && r < LOWER_MAX_RANK) {
        /* keepdims: give the input an extra 1 before the axis, so ARGMAX
         * (which drops the axis) yields the kept shape directly. This keeps
         * the RESHAPE on the input's dtype: an i32 RESHAPE is PRO-INT only. */
        int64_t xs[LOWER_MAX_RANK];
        for (uint32_t i = 0, j = 0; i < r; i++) {
            if ((int32_t)i == axis) xs[j++] = 1;
            xs[j++] = v->shape[i];
        }
        x = lw_reshape(c, x, t, r + 1, xs);
        a.axis = axis + 1;
        x = lw_unary(c, CTOSA_OP_ARGMAX, x, I, r, ks, &a);
    } else {
        x = lw_unary(c, CTOSA_OP_ARGMAX, x, I, k, os, &a);
        if (x && keep) x = lw_reshape(c, x, I, r, ks);
    }
    if (x && last && K > 1)
        x = lw_binary(c, CTOSA_OP_SUB, lw_scalar(c, I, orank, (double)(K - 1)), x, I, orank, oshape);
    if (x && lw_tosa_dtype(c, CTOSA_ONNX_INT64) == CTOSA_DTYPE_INT64)
        x = lw_cast(c, x, I, CTOSA_DTYPE_INT64, orank, oshape);
    if (!x) return lw_failed(c);
    lw_set_output(c, 0, x);
    return LOWER_OK;
}

static lower_status lower_argmax(lower_ctx *c) { return lower_arg(c, false); }
static lower_status lower_argmin(lower_ctx *c) { return lower_arg(c, true); }

/* ----------------------------------------------------------------- TopK */

/* TOSA has no sort: TopK takes k rounds, each picking the extreme value
 * among the elements not yet taken and, among equal ones, the lowest index
 * (ONNX's order for ties):
 *     m     = REDUCE_MAX(SELECT(taken, fill, x))        (MIN when smallest)
 *     pick  = REDUCE_MIN(SELECT(x == m AND NOT taken, iota, L))
 *     taken = taken OR (iota == pick)
 * The taken test keeps values equal to the fill (-inf for largest) right.
 * Values are the m of each round, indices the picks, CONCATenated along the
 * axis. k is limited to TOPK_MAX_K rounds; NaN inputs are not ordered. */
#define TOPK_MAX_K 64

/* One element of an axis being sorted: the key orders it (negated, or
 * bit-inverted for integers, when the largest come first), the index breaks
 * ties the ONNX way. */
typedef struct topk_item {
    double f;
    int64_t i, at;
} topk_item;

static int topk_cmp(const void *pa, const void *pb) {
    const topk_item *a = pa, *b = pb;
    if (a->f != b->f) return a->f < b->f ? -1 : 1;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* TopK of a constant: every slice along the axis sorted now. Returns false
 * when it does not apply (not a constant, NaN, too large). */
static bool topk_fold(lower_ctx *c, const lower_value *v, int32_t axis, int64_t k, bool largest,
                      lower_status *st) {
    const int32_t dt = v->onnx_dtype;
    const bool fl = lw_onnx_is_float(dt);
    const double *xf = NULL;
    const int64_t *xi = NULL;
    int64_t n = fl ? lw_const_f64(c, 0, &xf) : lw_const_i64(c, 0, &xi);
    size_t es = lw_onnx_elem_size(dt);
    if (n < 0 || n > (1 << 24) || !es || dt == CTOSA_ONNX_UINT64) return false;
    for (int64_t i = 0; fl && i < n; i++)
        if (isnan(xf[i])) return false; /* ONNX leaves NaN's place open */
    const int64_t L = v->shape[axis];
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= v->shape[d];
    for (uint32_t d = (uint32_t)axis + 1; d < v->rank; d++) inner *= v->shape[d];
    topk_item *it = arena_alloc(lw_arena(c), (size_t)L * sizeof *it);
    uint8_t *yv = arena_alloc(lw_arena(c), (size_t)(outer * k * inner) * es + 1);
    int64_t *yi = arena_alloc(lw_arena(c), (size_t)(outer * k * inner + 1) * sizeof *yi);
    if (!it || !yv || !yi) {
        *st = lw_failed(c);
        return true;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            for (int64_t j = 0; j < L; j++) {
                int64_t src = (o * L + j) * inner + q;
                it[j] = (topk_item){.at = j};
                if (fl) it[j].f = largest ? -xf[src] : xf[src];
                else it[j].i = largest ? ~xi[src] : xi[src];
            }
            qsort(it, (size_t)L, sizeof *it, topk_cmp);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = (o * k + j) * inner + q, src = (o * L + it[j].at) * inner + q;
                yi[dst] = it[j].at;
                if (fl) lw_onnx_encode(dt, xf[src], yv + (size_t)dst * es);
                else if (es == 8) memcpy(yv + (size_t)dst * es, &xi[src], 8);
                else lw_onnx_encode(dt, (double)xi[src], yv + (size_t)dst * es);
            }
        }
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, v->shape, v->rank * sizeof *os);
    os[axis] = k;
    uint64_t cnt = (uint64_t)(outer * k * inner);
    lw_set_output_const(c, 0, dt, v->rank, os, yv, cnt * es);
    lw_set_output_const(c, 1, CTOSA_ONNX_INT64, v->rank, os, yi, cnt * sizeof *yi);
    *st = LOWER_OK;
    return true;
}

static lower_status lower_topk(lower_ctx *c) {
    lower_status st = LOWER_REJECT;
    const ctosa_onnx_node *nd = lw_node(c);
    const lower_value *v = lw_data_input(c, 0, &st);
    if (!v) return st;
    const uint32_t r = v->rank;
    if (r == 0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, v->name, "TopK: scalar input");
    if (v->t == CTOSA_DTYPE_BOOL) return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, v->name, "TopK: bool input");
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -1), r, "axis", &axis)) return LOWER_REJECT;
    int64_t k;
    if (lw_opset(c) < 10) {
        k = lw_attr_int(c, "k", -1);
    } else {
        const int64_t *kv;
        if (lw_const_i64(c, 1, &kv) != 1)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, nd->n_inputs > 1 ? nd->inputs[1] : NULL,
                             "TopK: k must be a one-element compile-time constant");
        k = kv[0];
    }
    const int64_t L = v->shape[axis];
    if (k < 0 || k > L)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "TopK: k %lld for an axis of %lld", (long long)k,
                         (long long)L);
    if (k == 0) { /* empty results, whatever the values */
        int64_t os[LOWER_MAX_RANK];
        memcpy(os, v->shape, r * sizeof *os);
        os[axis] = 0;
        static const uint8_t none[1];
        lw_set_output_const(c, 0, v->onnx_dtype, r, os, none, 0);
        lw_set_output_const(c, 1, CTOSA_ONNX_INT64, r, os, none, 0);
        return LOWER_OK;
    }
    if (topk_fold(c, v, axis, k, lw_attr_int(c, "largest", 1) != 0, &st)) return st;
    if (k > TOPK_MAX_K)
        return lw_reject(c, LOWER_LEVEL_LIMIT, NULL,
                         "TopK: k %lld needs one round of TOSA operators per element (at most %d)",
                         (long long)k, TOPK_MAX_K);
    const bool largest = lw_attr_int(c, "largest", 1) != 0;
    lw_v x;
    LW_V_IN(c, 0, &x);
    const ctosa_dtype vt = x.t;
    const bool fl = ctosa_dtype_is_float(vt);
    x = lw_v_widen(c, x); /* EQUAL and SELECT on int8/int16 go through int32 */
    /* indices are counted in fp32 for float data (exact below 2^24; no
     * integer rows needed under PRO-FP), in int32 otherwise */
    const ctosa_dtype J = fl ? CTOSA_DTYPE_FP32 : CTOSA_DTYPE_INT32;
    if (fl && L > (1 << 24)) return lw_reject(c, LOWER_LEVEL_LIMIT, NULL, "TopK: axis of %lld", (long long)L);
    lw_v iota = lw_v_none();
    iota.t = J;
    iota.r = r;
    for (uint32_t i = 0; i < r; i++) iota.s[i] = (int32_t)i == axis ? L : 1;
    double *seq = arena_alloc(lw_arena(c), (size_t)L * sizeof *seq);
    if (!seq) return lw_failed(c);
    for (int64_t i = 0; i < L; i++) seq[i] = (double)i;
    iota.n = lw_const_from_f64(c, J, r, iota.s, seq);
    iota.cin = 0;
    double lo, hi;
    if (fl) lo = -INFINITY, hi = INFINITY;
    else lo = -2147483648.0, hi = 2147483647.0;
    lw_v fill = lw_v_k(c, x, largest ? lo : hi), beyond = lw_v_kt(c, J, r, (double)L);
    int64_t ks[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) ks[i] = (int32_t)i == axis ? 1 : v->shape[i];
    const char **vals = arena_alloc(lw_arena(c), (size_t)k * sizeof *vals);
    const char **idxs = arena_alloc(lw_arena(c), (size_t)k * sizeof *idxs);
    if (!vals || !idxs) return lw_failed(c);
    ctosa_attr ra = {0};
    ra.axis = axis;
    ra.nan_mode = CTOSA_NAN_IGNORE;
    lw_v taken = lw_v_none();
    for (int64_t j = 0; j < k; j++) {
        lw_v cand = j ? lw_v_select(c, taken, fill, x) : x;
        lw_v m = cand;
        m.cin = 0;
        memcpy(m.s, ks, sizeof ks);
        m.n = cand.n
                  ? lw_unary(c, largest ? CTOSA_OP_REDUCE_MAX : CTOSA_OP_REDUCE_MIN, cand.n, x.t, r, ks, &ra)
                  : NULL;
        lw_v elig = lw_v_bin(c, CTOSA_OP_EQUAL, cand, m);
        if (j) elig = lw_v_bin(c, CTOSA_OP_LOGICAL_AND, elig, lw_v_un(c, CTOSA_OP_LOGICAL_NOT, taken));
        lw_v at = lw_v_select(c, elig, iota, beyond), pick = at;
        pick.cin = 0;
        memcpy(pick.s, ks, sizeof ks);
        pick.n = at.n ? lw_unary(c, CTOSA_OP_REDUCE_MIN, at.n, J, r, ks, &ra) : NULL;
        if (j + 1 < k) {
            lw_v hit = lw_v_bin(c, CTOSA_OP_EQUAL, iota, pick);
            taken = j ? lw_v_bin(c, CTOSA_OP_LOGICAL_OR, taken, hit) : hit;
        }
        if (!m.n || !pick.n) return lw_failed(c);
        vals[j] = lw_v_narrow(c, m, vt).n;
        idxs[j] = pick.n;
        if (!vals[j]) return lw_failed(c);
    }
    const char *yv = k > 1 ? lw_concat(c, (uint32_t)k, vals, vt, r, axis) : vals[0];
    const char *yi = k > 1 ? lw_concat(c, (uint32_t)k, idxs, J, r, axis) : idxs[0];
    int64_t os[LOWER_MAX_RANK];
    memcpy(os, ks, sizeof os);
    os[axis] = k;
    if (yi && fl) yi = lw_cast(c, yi, J, CTOSA_DTYPE_INT32, r, os);
    if (yi && lw_tosa_dtype(c, CTOSA_ONNX_INT64) == CTOSA_DTYPE_INT64)
        yi = lw_cast(c, yi, CTOSA_DTYPE_INT32, CTOSA_DTYPE_INT64, r, os);
    if (!yv || !yi) return lw_failed(c);
    lw_set_output(c, 0, yv);
    lw_set_output(c, 1, yi);
    return LOWER_OK;
}

const lower_entry lower_table_reduce[] = {
    {"ReduceSum", 1, 0, lower_reduce_sum},
    {"ReduceMean", 1, 0, lower_reduce_mean},
    {"ReduceMax", 1, 0, lower_reduce_max},
    {"ReduceMin", 1, 0, lower_reduce_min},
    {"ReduceProd", 1, 0, lower_reduce_prod},
    {"ReduceL1", 1, 0, lower_reduce_l1},
    {"ReduceL2", 1, 0, lower_reduce_l2},
    {"ReduceLogSum", 1, 0, lower_reduce_logsum},
    {"ReduceLogSumExp", 1, 0, lower_reduce_lse},
    {"ReduceSumSquare", 1, 0, lower_reduce_sumsq},
    {"ArgMax", 1, 0, lower_argmax},
    {"TopK", 1, 0, lower_topk},
    {"ArgMin", 1, 0, lower_argmin},
    {0},
};
