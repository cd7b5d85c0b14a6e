/*
 * lower_attention.c - the transformer operators of opsets 23 and 24:
 * Attention (scaled dot-product attention with grouped heads, masks, causal
 * masking, softcap and a concatenating KV cache), RotaryEmbedding,
 * TensorScatter (the KV-cache update that writes into a fixed-size cache)
 * and Swish; of opsets 27 and 28 the recurrent layers' operators
 * CausalConvWithState and LinearAttention, and SwiGLU.
 *
 * Attention is computed in FP32 whatever the input precision (FP16/BF16
 * inputs are cast up and the results cast back): the scores and the
 * softmax are where half precision loses the most, and ONNX Runtime's CPU
 * kernel computes them in float as well. The KV-cache outputs are plain
 * concatenations in the input dtype, so they are exact.
 *
 * Grouped-query heads need no repeated K/V: query head h reads kv head
 * h / reps, so Q [B, Hq, S, D] viewed as [B * Hkv, reps * S, D] multiplies
 * K^T [B * Hkv, D, T] in one MATMUL.
 *
 * Order (what ONNX Runtime does and the reference implementation of the
 * definition now says): scores = (Q K^T) * scale, then softcap, then the
 * mask (bool: SELECT against -inf; float: ADD) and the causal/padding
 * masks, then softmax, then the product with V. A row whose every score is
 * -inf (fully masked) yields zeros, not NaN: the row maximum is clamped to
 * the lowest finite float so exp gives 0 everywhere, and the denominator is
 * clamped at 1, which changes no other row (the maximum's own term is
 * exp(0) = 1).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

/* ------------------------------------------------------------- helpers */

static lw_v at_reshape(lower_ctx *c, lw_v a, uint32_t r, const int64_t *s) {
    if (!a.n) return a;
    if (a.r == r && !memcmp(a.s, s, r * sizeof *s)) return a;
    lw_v o = a;
    o.cin = 0;
    o.r = r;
    memcpy(o.s, s, r * sizeof *s);
    o.n = lw_reshape(c, a.n, a.t, r, s);
    return o;
}

static lw_v at_transpose(lower_ctx *c, lw_v a, const int32_t *perm) {
    if (!a.n) return a;
    lw_v o = a;
    o.cin = 0;
    for (uint32_t i = 0; i < a.r; i++) o.s[i] = a.s[perm[i]];
    o.n = lw_transpose(c, a.n, a.t, a.r, a.s, perm);
    return o;
}

/* a[..., from : from + len] along axis. */
static lw_v at_slice(lower_ctx *c, lw_v a, uint32_t axis, int64_t from, int64_t len) {
    if (!a.n) return a;
    if (from == 0 && len == a.s[axis]) return a;
    int64_t st[LOWER_MAX_RANK] = {0}, sz[LOWER_MAX_RANK];
    memcpy(sz, a.s, a.r * sizeof *sz);
    st[axis] = from;
    sz[axis] = len;
    lw_v o = a;
    o.cin = 0;
    o.s[axis] = len;
    o.n = lw_slice(c, a.n, a.t, a.r, a.s, st, sz);
    return o;
}

static lw_v at_concat(lower_ctx *c, uint32_t n, const lw_v *xs, uint32_t axis) {
    const char *names[4];
    lw_v o = xs[0];
    o.cin = 0;
    o.s[axis] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!xs[i].n) return lw_v_none();
        names[i] = xs[i].n;
        o.s[axis] += xs[i].s[axis];
    }
    o.n = lw_concat(c, n, names, o.t, o.r, (int32_t)axis);
    return o;
}

/* REDUCE_<kind> over the last axis, kept as size 1. */
static lw_v at_reduce_last(lower_ctx *c, ctosa_op_kind kind, lw_v a) {
    if (!a.n) return a;
    lw_v o = a;
    o.cin = 0;
    o.n = lw_reduce(c, kind, a.n, a.t, a.r, a.s, (int32_t)a.r - 1, o.s);
    return o;
}

/* Batched MATMUL [N, M, K] x [N, K, W] -> [N, M, W] (float, no zero points). */
static lw_v at_matmul(lower_ctx *c, lw_v a, lw_v b) {
    if (!a.n || !b.n) return lw_v_none();
    lw_v o = a;
    o.cin = 0;
    o.s[2] = b.s[2];
    const char *azp = lw_zero_point(c, a.t, 0), *bzp = lw_zero_point(c, b.t, 0);
    const char *out = lw_tensor(c, o.t, 3, o.s);
    if (!azp || !bzp || !out) return lw_v_none();
    const char *in[4] = {a.n, b.n, azp, bzp};
    if (!lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &out, NULL)) return lw_v_none();
    o.n = out;
    return o;
}

/* Input i as a float value of static shape (or rejects). */
static lower_status at_float_in(lower_ctx *c, uint32_t i, lw_v *v) {
    lower_status st = lw_v_in(c, i, v);
    if (st != LOWER_OK) return st;
    if (!ctosa_dtype_is_float(v->t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, lw_node(c)->inputs[i],
                         "%s: input '%s' is not a float tensor", lw_node(c)->op_type, lw_node(c)->inputs[i]);
    return LOWER_OK;
}

static bool at_wants_output(lower_ctx *c, uint32_t i) {
    const ctosa_onnx_node *n = lw_node(c);
    return n->n_outputs > i && n->outputs[i][0];
}

/* ----------------------------------------------------------- Attention */

/* [B, S, H * D] -> [B, H, S, D]; a 4-D input is returned as is. */
static lw_v at_heads(lower_ctx *c, lw_v x, int64_t heads) {
    if (x.r == 4) return x;
    int64_t s4[4] = {x.s[0], x.s[1], heads, x.s[2] / heads};
    static const int32_t perm[4] = {0, 2, 1, 3};
    return at_transpose(c, at_reshape(c, x, 4, s4), perm);
}

/* The mask input (index 3) as a value of rank 4 whose last axis spans all
 * T keys: a shorter last axis is padded with False / -inf as the
 * definition says. */
static lower_status at_mask(lower_ctx *c, int64_t T, ctosa_dtype ct, lw_v *m) {
    const char *name = lw_node(c)->inputs[3];
    lower_status st = lw_v_in(c, 3, m);
    if (st != LOWER_OK) return st;
    if (m->t != CTOSA_DTYPE_BOOL && !ctosa_dtype_is_float(m->t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, name,
                         "Attention: attn_mask '%s' must be bool or float (integer masks are not supported)",
                         name);
    if (m->r < 1 || m->r > 4 || m->s[m->r - 1] > T)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, name,
                         "Attention: attn_mask '%s' has rank %u / last dimension %lld for %lld keys", name,
                         m->r, (long long)(m->r ? m->s[m->r - 1] : 0), (long long)T);
    if (m->t != CTOSA_DTYPE_BOOL) *m = lw_v_cast(c, *m, ct);
    *m = lw_v_rank(c, *m, 4);
    int64_t pad = T - m->s[3];
    if (pad > 0 && m->n) {
        int64_t pads[8] = {0, 0, 0, 0, 0, 0, 0, pad};
        m->n = lw_pad(c, m->n, m->t, 4, m->s, pads, m->t == CTOSA_DTYPE_BOOL ? 0.0 : -INFINITY);
        m->s[3] = T;
        m->cin = 0;
    }
    return LOWER_OK;
}

static lower_status lower_attention(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    lw_v q, k, v;
    lower_status st;
    if ((st = at_float_in(c, 0, &q)) != LOWER_OK || (st = at_float_in(c, 1, &k)) != LOWER_OK ||
        (st = at_float_in(c, 2, &v)) != LOWER_OK)
        return st;
    if (q.r != k.r || q.r != v.r || (q.r != 3 && q.r != 4))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Attention: Q, K, V must all be 3-D or all 4-D (ranks %u, %u, %u)", q.r, k.r, v.r);
    int64_t Hq, Hkv;
    if (q.r == 3) {
        Hq = lw_attr_int(c, "q_num_heads", 0);
        Hkv = lw_attr_int(c, "kv_num_heads", 0);
        if (Hq < 1 || Hkv < 1 || q.s[2] % Hq || k.s[2] % Hkv || v.s[2] % Hkv)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Attention: 3-D inputs need q_num_heads / kv_num_heads dividing the hidden "
                             "sizes (%lld, %lld)",
                             (long long)Hq, (long long)Hkv);
    } else {
        Hq = q.s[1];
        Hkv = k.s[1];
    }
    if (Hkv < 1 || Hq % Hkv)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Attention: q_num_heads %lld is not a multiple of kv_num_heads %lld", (long long)Hq,
                         (long long)Hkv);
    ctosa_dtype t = q.t, ct = CTOSA_DTYPE_FP32;
    uint32_t in_rank = q.r;
    q = at_heads(c, q, Hq);
    k = at_heads(c, k, Hkv);
    v = at_heads(c, v, Hkv);
    int64_t B = q.s[0], S = q.s[2], D = q.s[3];
    if (k.s[0] != B || v.s[0] != B || k.s[1] != Hkv || v.s[1] != Hkv || k.s[3] != D || v.s[2] != k.s[2])
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Attention: Q, K, V shapes do not agree");

    /* KV cache: present = Concat(past, new) along the sequence axis. */
    bool has_pk = lw_has_input(c, 4), has_pv = lw_has_input(c, 5);
    if (has_pk != has_pv)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Attention: past_key and past_value must be given together");
    int64_t P = 0;
    if (has_pk) {
        lw_v pk, pv;
        if ((st = at_float_in(c, 4, &pk)) != LOWER_OK || (st = at_float_in(c, 5, &pv)) != LOWER_OK) return st;
        if (pk.r != 4 || pv.r != 4 || pk.s[0] != B || pk.s[1] != Hkv || pk.s[3] != D || pv.s[0] != B ||
            pv.s[1] != Hkv || pv.s[2] != pk.s[2] || pv.s[3] != v.s[3])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Attention: past_key / past_value shapes do not fit K / V");
        P = pk.s[2];
        lw_v kk[2] = {lw_v_cast(c, pk, t), k}, vv[2] = {lw_v_cast(c, pv, t), v};
        k = at_concat(c, 2, kk, 2);
        v = at_concat(c, 2, vv, 2);
    }
    if (!k.n || !v.n) return lw_failed(c);
    if (at_wants_output(c, 1)) lw_set_output(c, 1, k.n);
    if (at_wants_output(c, 2)) lw_set_output(c, 2, v.n);
    int64_t T = k.s[2], Dv = v.s[3], reps = Hq / Hkv;

    /* Constant masks: causal (bottom-right aligned after the past keys,
     * or after the valid keys of each batch when nonpad_kv_seqlen is given
     * without a past) and the padding of nonpad_kv_seqlen. */
    bool causal = lw_attr_int(c, "is_causal", 0) != 0;
    const int64_t *nonpad = NULL;
    if (lw_has_input(c, 6)) {
        int64_t nn = lw_const_i64(c, 6, &nonpad);
        if (nn < 0)
            return lw_reject(c, LOWER_NEEDS_CONSTANT, n->inputs[6],
                             "Attention: nonpad_kv_seqlen '%s' must be a compile-time constant",
                             n->inputs[6]);
        if (nn != B)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[6],
                             "Attention: nonpad_kv_seqlen '%s' has %lld values for batch %lld", n->inputs[6],
                             (long long)nn, (long long)B);
    }
    lw_v allow = lw_v_none();
    if (causal || nonpad) {
        int64_t Bm = nonpad ? B : 1, ms[4] = {Bm, 1, S, T};
        uint8_t *mask = arena_alloc(lw_arena(c), (size_t)(Bm * S * T));
        if (!mask) return lw_failed(c);
        for (int64_t b = 0; b < Bm; b++) {
            int64_t off = nonpad && !has_pk ? nonpad[b] - S : P;
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < T; j++)
                    mask[(b * S + i) * T + j] = (!causal || j <= i + off) && (!nonpad || j < nonpad[b]);
        }
        allow.t = CTOSA_DTYPE_BOOL;
        allow.r = 4;
        memcpy(allow.s, ms, sizeof ms);
        allow.n = lw_const(c, CTOSA_DTYPE_BOOL, 4, ms, mask);
    }
    lw_v mask = lw_v_none();
    if (lw_has_input(c, 3) && (st = at_mask(c, T, ct, &mask)) != LOWER_OK) return st;

    /* scores = (Q * scale) K^T, heads grouped per kv head */
    double scale = lw_has_attr(c, "scale") ? lw_attr_float(c, "scale", 1.0f) : 1.0 / sqrt((double)D);
    lw_v qc = lw_v_mulk(c, lw_v_cast(c, q, ct), scale);
    int64_t q3[3] = {B * Hkv, reps * S, D}, k3[3] = {B * Hkv, D, T}, v3[3] = {B * Hkv, T, Dv};
    static const int32_t swap_last[4] = {0, 1, 3, 2};
    lw_v kt = at_reshape(c, at_transpose(c, lw_v_cast(c, k, ct), swap_last), 3, k3);
    int64_t s4[4] = {B, Hq, S, T};
    lw_v sc = at_reshape(c, at_matmul(c, at_reshape(c, qc, 3, q3), kt), 4, s4);
    lw_v qk_out[4];
    qk_out[0] = sc;
    double cap = lw_attr_float(c, "softcap", 0.0f);
    if (cap > 0) sc = lw_v_mulk(c, lw_v_un(c, CTOSA_OP_TANH, lw_v_mulk(c, sc, 1.0 / cap)), cap);
    qk_out[1] = sc;
    if (mask.n && mask.t == CTOSA_DTYPE_BOOL) sc = lw_v_select(c, mask, sc, lw_v_k(c, sc, -INFINITY));
    else if (mask.n) sc = lw_v_add(c, sc, mask);
    if (allow.n) sc = lw_v_select(c, allow, sc, lw_v_k(c, sc, -INFINITY));
    qk_out[2] = sc;

    /* softmax over the keys, zero for fully masked rows */
    lw_v mx =
        lw_v_bin(c, CTOSA_OP_MAXIMUM, at_reduce_last(c, CTOSA_OP_REDUCE_MAX, sc), lw_v_k(c, sc, -FLT_MAX));
    lw_v e = lw_v_un(c, CTOSA_OP_EXP, lw_v_sub(c, sc, mx));
    lw_v sum = lw_v_bin(c, CTOSA_OP_MAXIMUM, at_reduce_last(c, CTOSA_OP_REDUCE_SUM, e), lw_v_k(c, sc, 1.0));
    lw_v p = lw_v_mul(c, e, lw_v_un(c, CTOSA_OP_RECIPROCAL, sum));
    qk_out[3] = p;

    int64_t p3[3] = {B * Hkv, reps * S, T}, y4[4] = {B, Hq, S, Dv};
    lw_v y = at_matmul(c, at_reshape(c, p, 3, p3), at_reshape(c, lw_v_cast(c, v, ct), 3, v3));
    y = at_reshape(c, y, 4, y4);
    if (in_rank == 3) {
        static const int32_t perm[4] = {0, 2, 1, 3};
        int64_t y3[3] = {B, S, Hq * Dv};
        y = at_reshape(c, at_transpose(c, y, perm), 3, y3);
    }
    if ((st = lw_v_out(c, 0, lw_v_cast(c, y, t))) != LOWER_OK) return st;
    if (at_wants_output(c, 3)) {
        int64_t mode = lw_attr_int(c, "qk_matmul_output_mode", 0);
        if (mode < 0 || mode > 3)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Attention: qk_matmul_output_mode=%lld",
                             (long long)mode);
        if ((st = lw_v_out(c, 3, lw_v_cast(c, qk_out[mode], t))) != LOWER_OK) return st;
    }
    return LOWER_OK;
}

/* ----------------------------------------------------- RotaryEmbedding */

/* cos / sin cache (input i) for the rows of the input: [B, S, half] taken
 * directly, or gathered by position_ids (input 3) from [max_pos, half]:
 * at compile time when the ids are constant, else with GATHER. */
static lower_status rope_cache(lower_ctx *c, uint32_t i, int64_t B, int64_t S, int64_t half, ctosa_dtype t,
                               lw_v *out) {
    const ctosa_onnx_node *n = lw_node(c);
    lw_v cache;
    lower_status st = at_float_in(c, i, &cache);
    if (st != LOWER_OK) return st;
    cache = lw_v_cast(c, cache, t);
    if (!lw_has_input(c, 3)) {
        if (cache.r != 3 || cache.s[0] != B || cache.s[1] != S || cache.s[2] != half)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[i],
                             "RotaryEmbedding: without position_ids '%s' must be [%lld, %lld, %lld]",
                             n->inputs[i], (long long)B, (long long)S, (long long)half);
        *out = cache;
        return LOWER_OK;
    }
    if (cache.r != 2 || cache.s[1] != half)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[i],
                         "RotaryEmbedding: with position_ids '%s' must be [max_position, %lld]", n->inputs[i],
                         (long long)half);
    int64_t maxpos = cache.s[0];
    const lower_value *pid = lw_in(c, 3);
    if (!pid || !pid->static_shape || pid->rank != 2 || pid->shape[0] != B || pid->shape[1] != S)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[3],
                         "RotaryEmbedding: position_ids '%s' must be [%lld, %lld]", n->inputs[3],
                         (long long)B, (long long)S);
    const int64_t *ids;
    const double *vals;
    int64_t s3[3] = {B, S, half};
    if (lw_const_i64(c, 3, &ids) == B * S && lw_const_f64(c, i, &vals) == maxpos * half) {
        double *g = arena_alloc(lw_arena(c), (size_t)(B * S * half) * sizeof *g);
        if (!g) return lw_failed(c);
        for (int64_t r = 0; r < B * S; r++) {
            if (ids[r] < 0 || ids[r] >= maxpos)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[3],
                                 "RotaryEmbedding: position id %lld outside the cache of %lld rows",
                                 (long long)ids[r], (long long)maxpos);
            memcpy(g + r * half, vals + ids[r] * half, (size_t)half * sizeof *g);
        }
        out->t = t;
        out->r = 3;
        memcpy(out->s, s3, sizeof s3);
        out->cin = 0;
        out->n = lw_const_from_f64(c, t, 3, s3, g);
        return LOWER_OK;
    }
    /* runtime ids: GATHER rows of the [1, max_pos, half] cache */
    lw_v idv;
    if ((st = lw_v_in(c, 3, &idv)) != LOWER_OK) return st;
    int64_t i2[2] = {1, B * S}, c3[3] = {1, maxpos, half}, o3[3] = {1, B * S, half};
    lw_v idx = lw_v_cast(c, at_reshape(c, idv, 2, i2), CTOSA_DTYPE_INT32);
    lw_v tab = at_reshape(c, cache, 3, c3);
    const char *g = lw_tensor(c, t, 3, o3);
    if (!idx.n || !tab.n || !g) return lw_failed(c);
    const char *in[2] = {tab.n, idx.n};
    if (!lw_op(c, CTOSA_OP_GATHER, 2, in, 1, &g, NULL)) return lw_failed(c);
    lw_v gv = tab;
    gv.n = g;
    memcpy(gv.s, o3, sizeof o3);
    *out = at_reshape(c, gv, 3, s3);
    return LOWER_OK;
}

static lower_status lower_rotary(lower_ctx *c) {
    lw_v x;
    lower_status st = at_float_in(c, 0, &x);
    if (st != LOWER_OK) return st;
    ctosa_dtype t = x.t;
    uint32_t r0 = x.r;
    int64_t in_shape[4];
    memcpy(in_shape, x.s, sizeof in_shape);
    /* work on [B, S, H, D] (3-D input) or [B, H, S, D] (4-D input) */
    if (r0 == 3) {
        int64_t H = lw_attr_int(c, "num_heads", 0);
        if (H < 1 || x.s[2] % H)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "RotaryEmbedding: a 3-D input needs num_heads dividing %lld (num_heads=%lld)",
                             (long long)x.s[2], (long long)H);
        int64_t s4[4] = {x.s[0], x.s[1], H, x.s[2] / H};
        x = at_reshape(c, x, 4, s4);
    } else if (r0 != 4) {
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "RotaryEmbedding: input rank %u (3 or 4)", r0);
    }
    uint32_t seq_ax = r0 == 3 ? 1 : 2;
    int64_t B = x.s[0], S = x.s[seq_ax], D = x.s[3];
    int64_t rot = lw_attr_int(c, "rotary_embedding_dim", 0);
    if (rot == 0) rot = D;
    if (rot < 2 || rot > D || rot % 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "RotaryEmbedding: rotary_embedding_dim=%lld for head size %lld", (long long)rot,
                         (long long)D);
    int64_t half = rot / 2;
    lw_v cs, sn;
    if ((st = rope_cache(c, 1, B, S, half, t, &cs)) != LOWER_OK) return st;
    if ((st = rope_cache(c, 2, B, S, half, t, &sn)) != LOWER_OK) return st;
    /* caches [B, S, half] -> broadcast against the head axis */
    int64_t cb[4] = {B, 1, S, half};
    if (r0 == 3) cb[1] = S, cb[2] = 1;
    cs = at_reshape(c, cs, 4, cb);
    sn = at_reshape(c, sn, 4, cb);
    lw_v xr = at_slice(c, x, 3, 0, rot);
    bool inter = lw_attr_int(c, "interleaved", 0) != 0;
    lw_v x1, x2;
    int64_t s5[5] = {x.s[0], x.s[1], x.s[2], half, 2}, s4h[4] = {x.s[0], x.s[1], x.s[2], half};
    if (inter) {
        lw_v pairs = at_reshape(c, xr, 5, s5);
        x1 = at_reshape(c, at_slice(c, pairs, 4, 0, 1), 4, s4h);
        x2 = at_reshape(c, at_slice(c, pairs, 4, 1, 1), 4, s4h);
    } else {
        x1 = at_slice(c, xr, 3, 0, half);
        x2 = at_slice(c, xr, 3, half, half);
    }
    lw_v re = lw_v_sub(c, lw_v_mul(c, x1, cs), lw_v_mul(c, x2, sn));
    lw_v im = lw_v_add(c, lw_v_mul(c, x1, sn), lw_v_mul(c, x2, cs));
    lw_v rotated;
    if (inter) {
        int64_t s5one[5] = {x.s[0], x.s[1], x.s[2], half, 1};
        lw_v parts[2] = {at_reshape(c, re, 5, s5one), at_reshape(c, im, 5, s5one)};
        int64_t sr[4] = {x.s[0], x.s[1], x.s[2], rot};
        rotated = at_reshape(c, at_concat(c, 2, parts, 4), 4, sr);
    } else {
        lw_v parts[2] = {re, im};
        rotated = at_concat(c, 2, parts, 3);
    }
    lw_v y = rotated;
    if (rot < D) {
        lw_v parts[2] = {rotated, at_slice(c, x, 3, rot, D - rot)};
        y = at_concat(c, 2, parts, 3);
    }
    return lw_v_out(c, 0, at_reshape(c, y, r0, in_shape));
}

/* ------------------------------------------------------- TensorScatter */

/* present = past with update's rows written at write_indices[b] + i along
 * axis (mod the cache length when circular). The cache is viewed as
 * [prefix, M, C] and the update as [prefix, L, C]; SCATTER writes the L
 * rows of every prefix row at once. Write positions must be known at
 * compile time (needs_constant otherwise: run-time positions would be
 * int64 arithmetic feeding SCATTER's indices). */
static lower_status lower_tensor_scatter(lower_ctx *c) {
    const ctosa_onnx_node *n = lw_node(c);
    lw_v past, upd;
    lower_status st;
    if ((st = lw_v_in(c, 0, &past)) != LOWER_OK || (st = lw_v_in(c, 1, &upd)) != LOWER_OK) return st;
    int32_t axis;
    if (!lw_axis(c, lw_attr_int(c, "axis", -2), past.r, "axis", &axis)) return LOWER_REJECT;
    const char *mode = lw_attr_str(c, "mode", "linear");
    bool circular = !strcmp(mode, "circular");
    if (!circular && strcmp(mode, "linear"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "TensorScatter: mode '%s'", mode);
    if (axis == 0 || upd.r != past.r || upd.t != past.t)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "TensorScatter: axis %d / update rank or dtype do not fit the cache", axis);
    for (uint32_t i = 0; i < past.r; i++)
        if (i == (uint32_t)axis ? upd.s[i] > past.s[i] : upd.s[i] != past.s[i])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "TensorScatter: update shape does not fit the cache on axis %u", i);
    int64_t B = past.s[0], M = past.s[axis], L = upd.s[axis], pre = 1, C = 1;
    for (int32_t i = 0; i < axis; i++) pre *= past.s[i];
    for (uint32_t i = (uint32_t)axis + 1; i < past.r; i++) C *= past.s[i];
    const int64_t *wi = NULL;
    if (lw_has_input(c, 2)) {
        if (lw_const_i64(c, 2, &wi) != B)
            return lw_reject(
                c, LOWER_NEEDS_CONSTANT, n->inputs[2],
                "TensorScatter: write_indices '%s' must be a compile-time constant of %lld values",
                n->inputs[2], (long long)B);
    }
    int32_t *idx = arena_alloc(lw_arena(c), (size_t)(pre * L) * sizeof *idx);
    if (!idx) return lw_failed(c);
    int64_t per_b = pre / B;
    for (int64_t p = 0; p < pre; p++)
        for (int64_t i = 0; i < L; i++) {
            int64_t pos = (wi ? wi[p / per_b] : 0) + i;
            if (circular) pos = ((pos % M) + M) % M;
            if (pos < 0 || pos >= M || (circular && L > M))
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                                 "TensorScatter: write position %lld outside the cache of %lld (mode %s)",
                                 (long long)pos, (long long)M, mode);
            idx[p * L + i] = (int32_t)pos;
        }
    int64_t v3[3] = {pre, M, C}, u3[3] = {pre, L, C}, i2[2] = {pre, L};
    lw_v vin = at_reshape(c, past, 3, v3), uin = at_reshape(c, upd, 3, u3);
    const char *ix = lw_const(c, CTOSA_DTYPE_INT32, 2, i2, idx);
    const char *out = lw_tensor(c, past.t, 3, v3);
    if (!vin.n || !uin.n || !ix || !out) return lw_failed(c);
    const char *in[3] = {vin.n, ix, uin.n};
    if (!lw_op(c, CTOSA_OP_SCATTER, 3, in, 1, &out, NULL)) return lw_failed(c);
    lw_v o = vin;
    o.n = out;
    return lw_v_out(c, 0, at_reshape(c, o, past.r, past.s));
}

/* ---------------------------------------------------------------- Swish */

/* x * sigmoid(alpha * x) */
static lw_v at_swish(lower_ctx *c, lw_v x, double alpha) {
    return lw_v_mul(c, x, lw_v_un(c, CTOSA_OP_SIGMOID, lw_v_mulk(c, x, alpha)));
}

static lower_status lower_swish(lower_ctx *c) {
    lw_v x;
    lower_status st = at_float_in(c, 0, &x);
    if (st != LOWER_OK) return st;
    return lw_v_out(c, 0, at_swish(c, x, lw_attr_float(c, "alpha", 1.0f)));
}

/* SwiGLU (opset 28): Swish(A) * B, A and B of one shape (no broadcasting). */
static lower_status lower_swiglu(lower_ctx *c) {
    lw_v a, b;
    lower_status st = at_float_in(c, 0, &a);
    if (st == LOWER_OK) st = at_float_in(c, 1, &b);
    if (st != LOWER_OK) return st;
    if (a.r != b.r || memcmp(a.s, b.s, a.r * sizeof *a.s) || a.t != b.t)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[1],
                         "SwiGLU: A and B must have one shape and dtype (the operator does not broadcast)");
    return lw_v_out(c, 0, lw_v_mul(c, at_swish(c, a, lw_attr_float(c, "alpha", 1.0f)), b));
}

/* ------------------------------------------------- CausalConvWithState */

/* Depthwise causal convolution with a carried state (opset 27): the state
 * (or k - 1 zeros) is concatenated before the input along the length, and
 * output position l is bias + sum_j w[:, 0, j] * padded[:, :, l + j]: k
 * slices, MUL by the per-channel tap weight [1, C, 1], ADD, in FP32 (the
 * definition's reference and ONNX Runtime accumulate in float). The new
 * state is the last k - 1 positions of the padded input, in the input
 * dtype (exact). */
static lower_status lower_causal_conv(lower_ctx *c) {
    const char *op = "CausalConvWithState";
    lw_v x, w, past;
    lower_status st = at_float_in(c, 0, &x);
    if (st == LOWER_OK) st = at_float_in(c, 1, &w);
    if (st != LOWER_OK) return st;
    if (x.r != 3 || w.r != 3 || w.s[0] != x.s[1] || w.s[1] != 1 || w.t != x.t)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[1],
                         "%s: expects input [B, C, L] and weight [C, 1, k] of one dtype", op);
    const char *act = lw_attr_str(c, "activation", "none");
    bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: activation '%s'", op, act);
    int64_t B = x.s[0], C = x.s[1], L = x.s[2], K = w.s[2];
    if (K < 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[1],
                         "%s: kernel size %lld leaves an empty state (TOSA has no empty tensors)", op,
                         (long long)K);
    ctosa_dtype ct = CTOSA_DTYPE_FP32;
    lw_v padded;
    if (lw_has_input(c, 3)) {
        if ((st = at_float_in(c, 3, &past)) != LOWER_OK) return st;
        if (past.r != 3 || past.s[0] != B || past.s[1] != C || past.s[2] != K - 1 || past.t != x.t)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[3],
                             "%s: past_state must be [B, C, k - 1] in the input dtype", op);
        lw_v both[2] = {past, x};
        padded = at_concat(c, 2, both, 2);
    } else {
        int64_t pads[6] = {0, 0, 0, 0, K - 1, 0};
        padded = x;
        padded.cin = 0;
        padded.s[2] += K - 1;
        padded.n = lw_pad(c, x.n, x.t, 3, x.s, pads, 0.0);
    }
    lw_v pf = lw_v_cast(c, padded, ct), acc = lw_v_none();
    const double *wv = NULL;
    bool wconst = lw_const_f64(c, 1, &wv) == C * K;
    int64_t cs[3] = {1, C, 1};
    lw_v wf = wconst ? w : at_reshape(c, lw_v_cast(c, w, ct), 3, (int64_t[]){1, C, K});
    double *tap = arena_alloc(lw_arena(c), (size_t)C * sizeof *tap);
    if (!tap) return lw_failed(c);
    for (int64_t j = 0; j < K; j++) {
        lw_v wj;
        if (wconst) {
            for (int64_t i = 0; i < C; i++) tap[i] = wv[i * K + j];
            wj = (lw_v){lw_const_from_f64(c, ct, 3, cs, tap), ct, 3, {1, C, 1}, 0};
        } else {
            wj = at_slice(c, wf, 2, j, 1);
        }
        lw_v term = lw_v_mul(c, at_slice(c, pf, 2, j, L), wj);
        acc = j ? lw_v_add(c, acc, term) : term;
    }
    if (lw_has_input(c, 2)) {
        lw_v bias;
        if ((st = at_float_in(c, 2, &bias)) != LOWER_OK) return st;
        if (bias.r != 1 || bias.s[0] != C)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, lw_node(c)->inputs[2], "%s: bias must be [C]", op);
        acc = lw_v_add(c, acc, at_reshape(c, lw_v_cast(c, bias, ct), 3, cs));
    }
    if (silu) acc = at_swish(c, acc, 1.0);
    if ((st = lw_v_out(c, 0, lw_v_cast(c, acc, x.t))) != LOWER_OK) return st;
    if (at_wants_output(c, 1)) return lw_v_out(c, 1, at_slice(c, padded, 2, L, K - 1));
    return LOWER_OK;
}

/* ------------------------------------------------------ LinearAttention */

/* Input i ([B, T, H * d]) as [B * H, T, d] in FP32. */
static lw_v at_steps(lower_ctx *c, lw_v x, int64_t heads) {
    int64_t s4[4] = {x.s[0], x.s[1], heads, x.s[2] / heads}, s3[3] = {x.s[0] * heads, x.s[1], x.s[2] / heads};
    static const int32_t perm[4] = {0, 2, 1, 3};
    return at_reshape(c, at_transpose(c, at_reshape(c, lw_v_cast(c, x, CTOSA_DTYPE_FP32), 4, s4), perm), 3,
                      s3);
}

/* Step t of a [BH, T, d] value as [BH, rows, cols] (rows * cols = d). */
static lw_v at_step(lower_ctx *c, lw_v x, int64_t t, int64_t rows, int64_t cols) {
    return at_reshape(c, at_slice(c, x, 1, t, 1), 3, (int64_t[]){x.s[0], rows, cols});
}

/* The recurrence of the definition, unrolled over the static sequence
 * length T with the state S [B * Hkv, dk, dv] in FP32. Per step:
 *   gated rules:  S *= exp(g_t)            (per key dimension or per head)
 *   delta rules:  v_t = beta_t * (v_t - (erase_t * k_t)^T S)   (one MATMUL)
 *   every rule:   S += k_t v_t^T           (a broadcast MUL, rank-1 update)
 *   output:       o_t = (scale * q_t) S    (one MATMUL; the G = Hq / Hkv query
 *                                          heads of a kv head are its rows)
 * then the outputs are concatenated over T. */
static lower_status lower_linear_attention(lower_ctx *c) {
    const char *op = "LinearAttention";
    const ctosa_onnx_node *n = lw_node(c);
    lw_v q, k, v, g = lw_v_none(), beta = lw_v_none(), er = lw_v_none(), S = lw_v_none();
    lower_status st = at_float_in(c, 0, &q);
    if (st == LOWER_OK) st = at_float_in(c, 1, &k);
    if (st == LOWER_OK) st = at_float_in(c, 2, &v);
    if (st != LOWER_OK) return st;
    int64_t Hq = lw_attr_int(c, "q_num_heads", 0), Hkv = lw_attr_int(c, "kv_num_heads", 0);
    if (Hq < 1 || Hkv < 1 || Hq % Hkv)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "%s: q_num_heads %lld must be a positive multiple of kv_num_heads %lld", op,
                         (long long)Hq, (long long)Hkv);
    const char *rule = lw_attr_str(c, "update_rule", "gated_delta");
    bool gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (!gated && !delta && strcmp(rule, "linear"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: update_rule '%s'", op, rule);
    if (q.r != 3 || k.r != 3 || v.r != 3 || k.s[0] != q.s[0] || v.s[0] != q.s[0] || k.s[1] != q.s[1] ||
        v.s[1] != q.s[1] || q.s[2] % Hq || v.s[2] % Hkv || k.s[2] != Hkv * (q.s[2] / Hq))
        return lw_reject(
            c, LOWER_UNSUPPORTED_ATTR, NULL,
            "%s: query, key, value must be [B, T, H * d] with q_num_heads %lld, kv_num_heads %lld", op,
            (long long)Hq, (long long)Hkv);
    int64_t B = q.s[0], T = q.s[1], dk = q.s[2] / Hq, dv = v.s[2] / Hkv, G = Hq / Hkv, BH = B * Hkv;
    if (gated != lw_has_input(c, 4) || delta != lw_has_input(c, 5) || (!delta && lw_has_input(c, 6)))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "%s: update_rule '%s' takes %s decay, %s beta%s",
                         op, rule, gated ? "a" : "no", delta ? "a" : "no", delta ? "" : " and no erase_gate");
    double scale = lw_attr_float(c, "scale", 0.0f);
    if (scale == 0) scale = 1 / sqrt((double)dk);
    int64_t gd = 0;
    if (gated) {
        if ((st = at_float_in(c, 4, &g)) != LOWER_OK) return st;
        gd = g.r == 3 && g.s[0] == B && g.s[1] == T ? g.s[2] / Hkv : 0;
        if (gd * Hkv != (g.r == 3 ? g.s[2] : -1) || (gd != 1 && gd != dk))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[4],
                             "%s: decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k]", op);
        g = at_steps(c, lw_v_un(c, CTOSA_OP_EXP, lw_v_cast(c, g, CTOSA_DTYPE_FP32)), Hkv);
    }
    if (delta) {
        if ((st = at_float_in(c, 5, &beta)) != LOWER_OK) return st;
        if (beta.r != 3 || beta.s[0] != B || beta.s[1] != T || (beta.s[2] != Hkv && beta.s[2] != 1))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[5],
                             "%s: beta must be [B, T, kv_num_heads] or [B, T, 1]", op);
        if (beta.s[2] != Hkv) {
            beta.n = lw_tile(c, beta.n, beta.t, 3, beta.s, (int64_t[]){1, 1, Hkv});
            beta.s[2] = Hkv;
            beta.cin = 0;
        }
        beta = at_steps(c, beta, Hkv);
        if (lw_has_input(c, 6)) {
            if ((st = at_float_in(c, 6, &er)) != LOWER_OK) return st;
            if (er.r != 3 || er.s[0] != B || er.s[1] != T || er.s[2] != Hkv * dk)
                return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[6],
                                 "%s: erase_gate must be [B, T, kv_num_heads * d_k]", op);
            er = at_steps(c, er, Hkv);
        }
    }
    ctosa_dtype state_t = q.t;
    if (lw_has_input(c, 3)) {
        if ((st = at_float_in(c, 3, &S)) != LOWER_OK) return st;
        if (S.r != 4 || S.s[0] != B || S.s[1] != Hkv || S.s[2] != dk || S.s[3] != dv)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, n->inputs[3],
                             "%s: past_state must be [B, kv_num_heads, d_k, d_v]", op);
        state_t = S.t;
        S = at_reshape(c, lw_v_cast(c, S, CTOSA_DTYPE_FP32), 3, (int64_t[]){BH, dk, dv});
    }
    /* q as [BH, T, G * dk] (query head h = kv head h / G, row h % G), scaled once */
    lw_v qs = lw_v_mulk(c, at_steps(c, q, Hkv), scale), ks = at_steps(c, k, Hkv), vs = at_steps(c, v, Hkv);
    const char **outs = arena_alloc(lw_arena(c), (size_t)T * sizeof *outs);
    if (!outs) return lw_failed(c);
    for (int64_t t = 0; t < T; t++) {
        lw_v kc = at_step(c, ks, t, dk, 1), vt = at_step(c, vs, t, 1, dv);
        if (gated && S.n) S = lw_v_mul(c, S, at_step(c, g, t, gd, 1));
        if (delta) {
            if (S.n) {
                lw_v kr = at_step(c, ks, t, 1, dk);
                if (er.n) kr = lw_v_mul(c, kr, at_step(c, er, t, 1, dk));
                vt = lw_v_sub(c, vt, at_matmul(c, kr, S));
            }
            vt = lw_v_mul(c, vt, at_step(c, beta, t, 1, 1));
        }
        lw_v kv = lw_v_mul(c, kc, vt);
        S = S.n ? lw_v_add(c, S, kv) : kv;
        lw_v o = at_matmul(c, at_step(c, qs, t, G, dk), S);
        o = at_reshape(c, o, 3, (int64_t[]){BH, 1, G * dv});
        if (!o.n) return lw_failed(c);
        outs[t] = o.n;
    }
    int64_t os[3] = {BH, T, G * dv}, o4[4] = {B, Hkv, T, G * dv};
    lw_v y = {T > 1 ? lw_concat(c, (uint32_t)T, outs, CTOSA_DTYPE_FP32, 3, 1) : outs[0],
              CTOSA_DTYPE_FP32,
              3,
              {0},
              0};
    memcpy(y.s, os, sizeof os);
    static const int32_t perm[4] = {0, 2, 1, 3};
    y = at_reshape(c, at_transpose(c, at_reshape(c, y, 4, o4), perm), 3, (int64_t[]){B, T, Hq * dv});
    if ((st = lw_v_out(c, 0, lw_v_cast(c, y, q.t))) != LOWER_OK) return st;
    if (at_wants_output(c, 1))
        return lw_v_out(c, 1, lw_v_cast(c, at_reshape(c, S, 4, (int64_t[]){B, Hkv, dk, dv}), state_t));
    return LOWER_OK;
}

const lower_entry lower_table_attention[] = {
    {"Attention", 23, 0, lower_attention},
    {"RotaryEmbedding", 23, 0, lower_rotary},
    {"TensorScatter", 24, 0, lower_tensor_scatter},
    {"Swish", 24, 0, lower_swish},
    {"CausalConvWithState", 27, 0, lower_causal_conv},
    {"LinearAttention", 27, 0, lower_linear_attention},
    {"SwiGLU", 28, 0, lower_swiglu},
    {0},
};
