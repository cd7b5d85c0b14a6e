/*
 * lower_matmul.c - MatMul, Gemm and matmul-shaped Einsum.
 *
 * TOSA MATMUL is batched rank 3: [N,H,C] x [N,C,W] -> [N,H,W]. ONNX
 * operands are reshaped (batch dims flattened, rank-1 operands promoted per
 * numpy rules) and broadcast batch dims are TILEd first.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_build.h"

static const char *mm_transpose(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank,
                                const int64_t *shape, const int32_t *perm) {
    if (!x) return NULL;
    bool ident = true;
    for (uint32_t i = 0; i < rank; i++)
        if (perm[i] != (int32_t)i) ident = false;
    return ident ? x : lw_transpose(c, x, t, rank, shape, perm);
}

/* MATMUL of a [Nb,M,K] and b [Nb,K,N] in dtype t; result [Nb,M,N] in t. */
static const char *mm_emit(lower_ctx *c, const char *a, const char *b, ctosa_dtype t, int64_t Nb, int64_t M,
                           int64_t N) {
    if (!a || !b) return NULL;
    ctosa_dtype ot = t;
    if (t == CTOSA_DTYPE_BF16) ot = CTOSA_DTYPE_FP32;
    else if (!ctosa_dtype_is_float(t)) ot = t == CTOSA_DTYPE_INT16 ? CTOSA_DTYPE_INT48 : CTOSA_DTYPE_INT32;
    int64_t os[3] = {Nb, M, N};
    const char *azp = lw_zero_point(c, t, 0), *bzp = lw_zero_point(c, t, 0);
    const char *out = lw_tensor(c, ot, 3, os);
    if (!azp || !bzp || !out) return NULL;
    const char *in[4] = {a, b, azp, bzp};
    if (!lw_op(c, CTOSA_OP_MATMUL, 4, in, 1, &out, NULL)) return NULL;
    if (ot != t) out = lw_cast(c, out, ot, t, 3, os);
    return out;
}

/* Brings operand x (shape s of rank r = nb + 2 after padding) to batch
 * shape bs by TILE, then reshapes to [prod(bs), s[r-2], s[r-1]]. */
static const char *mm_batch(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t r0, const int64_t *s0,
                            uint32_t nb, const int64_t *bs, int64_t *out3) {
    int64_t s[LOWER_MAX_RANK + 2];
    uint32_t r = nb + 2;
    for (uint32_t i = 0; i < r; i++) s[i] = 1;
    for (uint32_t i = 0; i < r0; i++) s[r - r0 + i] = s0[i];
    x = lw_reshape_if(c, x, t, r0, s0, r, s);
    bool tile = false;
    int64_t mult[LOWER_MAX_RANK + 2];
    for (uint32_t i = 0; i < r; i++) {
        mult[i] = i < nb && s[i] != bs[i] ? bs[i] : 1;
        if (mult[i] != 1) tile = true;
    }
    if (tile && x) {
        int64_t ts[LOWER_MAX_RANK + 2];
        for (uint32_t i = 0; i < r; i++) ts[i] = s[i] * mult[i];
        const char *m = lw_shape(c, r, mult);
        const char *out = lw_tensor(c, t, r, ts);
        if (!m || !out) return NULL;
        const char *in[2] = {x, m};
        x = lw_op(c, CTOSA_OP_TILE, 2, in, 1, &out, NULL) ? out : NULL;
        memcpy(s, ts, r * sizeof *s);
    }
    out3[0] = lw_count(nb, s);
    out3[1] = s[r - 2];
    out3[2] = s[r - 1];
    return lw_reshape_if(c, x, t, r, s, 3, out3);
}

static lower_status lower_matmul(lower_ctx *c) {
    lower_status st;
    const lower_value *A = lw_data_input(c, 0, &st);
    if (!A) return st;
    const lower_value *B = lw_data_input(c, 1, &st);
    if (!B) return st;
    if (A->rank < 1 || B->rank < 1)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "MatMul: scalar operands");
    ctosa_dtype t = A->t;
    int64_t as[LOWER_MAX_RANK], bsh[LOWER_MAX_RANK];
    uint32_t ra = A->rank, rb = B->rank;
    memcpy(as, A->shape, ra * sizeof *as);
    memcpy(bsh, B->shape, rb * sizeof *bsh);
    bool sq_a = false, sq_b = false;
    if (ra == 1) {
        as[1] = as[0];
        as[0] = 1;
        ra = 2;
        sq_a = true;
    }
    if (rb == 1) {
        bsh[1] = 1;
        rb = 2;
        sq_b = true;
    }
    int64_t M = as[ra - 2], K = as[ra - 1], N = bsh[rb - 1];
    if (bsh[rb - 2] != K)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "MatMul: inner dimensions %lld and %lld differ",
                         (long long)K, (long long)bsh[rb - 2]);
    uint32_t nb = (ra > rb ? ra : rb) - 2;
    if (nb + 2 > LOWER_MAX_RANK) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "MatMul: rank too large");
    int64_t bs[LOWER_MAX_RANK];
    bool b_has_batch = false;
    for (uint32_t i = 0; i < nb; i++) {
        int64_t da = (int32_t)i - (int32_t)(nb - (ra - 2)) >= 0 ? as[i - (nb - (ra - 2))] : 1;
        int64_t db = (int32_t)i - (int32_t)(nb - (rb - 2)) >= 0 ? bsh[i - (nb - (rb - 2))] : 1;
        if (da != db && da != 1 && db != 1)
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "MatMul: batch dimensions %lld and %lld do not broadcast", (long long)da,
                             (long long)db);
        bs[i] = da > db ? da : db;
        if (db != 1) b_has_batch = true;
    }
    const char *a = lw_input(c, 0), *b = lw_input(c, 1);
    if (a && B->t != t) return lw_reject(c, LOWER_MIXED_WIDTH, NULL, "MatMul: operand dtypes differ");
    const char *y;
    int64_t ys[3];
    if (!b_has_batch) {
        /* B shared by every batch: one [1, batch*M, K] x [1, K, N] */
        int64_t a3[3] = {1, lw_count(nb, bs) * M, K}, b3[3] = {1, K, N};
        a = lw_reshape_if(c, a, t, A->rank, A->shape, 3, a3);
        b = lw_reshape_if(c, b, t, B->rank, B->shape, 3, b3);
        y = mm_emit(c, a, b, t, 1, a3[1], N);
        ys[0] = 1;
        ys[1] = a3[1];
        ys[2] = N;
    } else {
        int64_t a3[3], b3[3];
        a = mm_batch(c, a, t, ra, as, nb, bs, a3);
        b = mm_batch(c, b, t, rb, bsh, nb, bs, b3);
        y = mm_emit(c, a, b, t, a3[0], M, N);
        ys[0] = a3[0];
        ys[1] = M;
        ys[2] = N;
    }
    int64_t os[LOWER_MAX_RANK];
    uint32_t orank = 0;
    for (uint32_t i = 0; i < nb; i++) os[orank++] = bs[i];
    if (!sq_a) os[orank++] = M;
    if (!sq_b) os[orank++] = N;
    y = lw_reshape_if(c, y, t, 3, ys, orank, os);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ------------------------------------------------------------------ Gemm */

static lower_status lower_gemm(lower_ctx *c) {
    lower_status st;
    const lower_value *A = lw_data_input(c, 0, &st);
    if (!A) return st;
    const lower_value *B = lw_data_input(c, 1, &st);
    if (!B) return st;
    if (A->rank != 2 || B->rank != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gemm: operands must have rank 2 (have %u, %u)",
                         A->rank, B->rank);
    ctosa_dtype t = A->t;
    bool ta = lw_attr_int(c, "transA", 0) != 0, tb = lw_attr_int(c, "transB", 0) != 0;
    double alpha = lw_attr_float(c, "alpha", 1.0f), beta = lw_attr_float(c, "beta", 1.0f);
    int64_t M = ta ? A->shape[1] : A->shape[0], K = ta ? A->shape[0] : A->shape[1];
    int64_t K2 = tb ? B->shape[1] : B->shape[0], N = tb ? B->shape[0] : B->shape[1];
    if (K != K2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gemm: inner dimensions %lld and %lld differ",
                         (long long)K, (long long)K2);
    int64_t a3[3] = {1, A->shape[0], A->shape[1]};
    const char *a = lw_reshape(c, lw_input(c, 0), t, 3, a3);
    int32_t p021[3] = {0, 2, 1};
    if (ta) a = lw_transpose(c, a, t, 3, a3, p021);
    lw_wsrc ws;
    const char *b;
    int64_t b3[3] = {1, K, N};
    bool alpha_done = false;
    if (lw_wsrc_init(c, 1, &ws) && ws.n == K * N) {
        /* constant B: transposed (and scaled by alpha) at compile time */
        if (alpha != 1.0 && ws.raw) {
            ws.raw = NULL;
            ws.esz = sizeof(double);
            if (lw_const_f64(c, 1, &ws.f64) != ws.n) return lw_failed(c);
        }
        /* large raw weights: a streamed (transposed) view of the model's
         * bytes instead of a copy */
        int64_t bsrc[2] = {tb ? N : K, tb ? K : N};
        int32_t perm[2] = {tb ? 1 : 0, tb ? 0 : 1};
        b = lw_wconst_stream(c, &ws, 3, b3, 0, 2, bsrc, perm);
        if (!b) {
            void *buf = lw_wbuf(c, &ws, K * N);
            if (!buf) return lw_failed(c);
            for (int64_t k = 0; k < K; k++)
                for (int64_t n = 0; n < N; n++) lw_wcopy(&ws, buf, k * N + n, tb ? n * K + k : k * N + n);
            if (!ws.raw)
                for (int64_t i = 0; i < K * N; i++) ((double *)buf)[i] *= alpha;
            b = lw_wconst(c, &ws, 3, b3, buf);
        }
        alpha_done = true;
    } else {
        int64_t bs3[3] = {1, B->shape[0], B->shape[1]};
        b = lw_reshape(c, lw_input(c, 1), B->t, 3, bs3);
        if (tb) b = lw_transpose(c, b, B->t, 3, bs3, p021);
    }
    const char *y = mm_emit(c, a, b, t, 1, M, N);
    int64_t ys[2] = {M, N}, y3[3] = {1, M, N};
    y = lw_reshape_if(c, y, t, 3, y3, 2, ys);
    if (!alpha_done) y = lw_mul_scalar(c, y, t, 2, ys, alpha);
    if (lw_has_input(c, 2) && beta != 0.0) {
        const lower_value *C = lw_data_input(c, 2, &st);
        if (!C) return st;
        if (C->rank > 2) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gemm: C has rank %u", C->rank);
        int64_t cs[2] = {1, 1};
        for (uint32_t i = 0; i < C->rank; i++) cs[2 - C->rank + i] = C->shape[i];
        if ((cs[0] != 1 && cs[0] != M) || (cs[1] != 1 && cs[1] != N))
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Gemm: C does not broadcast to [%lld, %lld]",
                             (long long)M, (long long)N);
        const double *cv = NULL;
        int64_t cn = lw_const_f64(c, 2, &cv);
        const char *cc;
        if (cn == cs[0] * cs[1]) {
            double *buf = arena_alloc(lw_arena(c), (size_t)(cn ? cn : 1) * sizeof(double));
            if (!buf) return lw_failed(c);
            for (int64_t i = 0; i < cn; i++) buf[i] = beta * cv[i];
            cc = lw_const_from_f64(c, t, 2, cs, buf);
        } else {
            cc = lw_input(c, 2);
            if (cc && C->t != t) cc = lw_cast(c, cc, C->t, t, C->rank, C->shape);
            cc = lw_reshape_if(c, cc, t, C->rank, C->shape, 2, cs);
            cc = lw_mul_scalar(c, cc, t, 2, cs, beta);
        }
        y = lw_add(c, y, cc, t, 2, ys);
    }
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

/* ---------------------------------------------------------------- Einsum */

/* Parses one operand's letters; false on ellipsis / invalid characters. */
static bool es_term(const char *s, size_t n, char *out, uint32_t *len) {
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == ' ') continue;
        if (!isalpha((unsigned char)ch) || k >= LOWER_MAX_RANK) return false;
        for (uint32_t j = 0; j < k; j++)
            if (out[j] == ch) return false; /* repeated letter: a diagonal */
        out[k++] = ch;
    }
    *len = k;
    return true;
}

static int es_find(const char *s, uint32_t n, char ch) {
    for (uint32_t i = 0; i < n; i++)
        if (s[i] == ch) return (int)i;
    return -1;
}

/* Sums out the letters of operand x that appear nowhere else, removing
 * them; updates letters/shape. */
static const char *es_sum_unique(lower_ctx *c, const char *x, ctosa_dtype t, char *let, uint32_t *n,
                                 int64_t *shape, const char *other, uint32_t no, const char *outl,
                                 uint32_t nout) {
    uint32_t mask = 0;
    for (uint32_t i = 0; i < *n; i++)
        if (es_find(other, no, let[i]) < 0 && es_find(outl, nout, let[i]) < 0) mask |= 1u << i;
    if (!mask || !x) return x;
    int64_t rs[LOWER_MAX_RANK];
    x = lw_reduce_axes(c, CTOSA_OP_REDUCE_SUM, x, t, *n, shape, mask, false, rs);
    uint32_t k = 0;
    int64_t ns[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < *n; i++)
        if (!(mask & (1u << i))) {
            let[k] = let[i];
            ns[k++] = shape[i];
        }
    x = lw_reshape_if(c, x, t, *n, rs, k, ns);
    memcpy(shape, ns, k * sizeof *ns);
    *n = k;
    return x;
}

/* Rewrites an equation with "..." into one with letters: each operand's
 * ellipsis becomes its trailing k of E unused upper-case letters (E = the
 * largest ellipsis rank, right-aligned as numpy broadcasts them). An
 * implicit output becomes explicit: ellipsis letters, then the letters
 * seen once, alphabetically. Returns false when it cannot. */
static bool es_expand(const char *eq, uint32_t nin, const uint32_t *ranks, char *out, size_t cap) {
    if (!strstr(eq, "...")) {
        snprintf(out, cap, "%s", eq);
        return strlen(eq) < cap;
    }
    char pool[LOWER_MAX_RANK];
    uint32_t np = 0;
    for (char ch = 'Z'; ch >= 'A' && np < LOWER_MAX_RANK; ch--)
        if (!strchr(eq, ch)) pool[np++] = ch;
    const char *arrow = strstr(eq, "->");
    size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
    /* ellipsis rank of each operand */
    uint32_t ek[2] = {0, 0}, E = 0, op = 0, letters = 0;
    bool has_e[2] = {false, false};
    for (size_t i = 0; i <= lhs; i++) {
        if (i == lhs || eq[i] == ',') {
            if (op >= nin || op >= 2) return false;
            if (has_e[op]) {
                if (ranks[op] < letters) return false;
                ek[op] = ranks[op] - letters;
                if (ek[op] > E) E = ek[op];
            }
            op++;
            letters = 0;
        } else if (!strncmp(eq + i, "...", 3)) {
            has_e[op < 2 ? op : 1] = true;
            i += 2;
        } else if (isalpha((unsigned char)eq[i])) {
            letters++;
        }
    }
    if (E > np) return false;
    size_t k = 0;
    op = 0;
#define ES_PUT(ch)                      \
    do {                                \
        if (k + 1 >= cap) return false; \
        out[k++] = (ch);                \
    } while (0)
    for (size_t i = 0; i < lhs; i++) {
        if (eq[i] == ',') op++;
        if (!strncmp(eq + i, "...", 3)) {
            for (uint32_t j = E - ek[op]; j < E; j++) ES_PUT(pool[j]);
            i += 2;
        } else {
            ES_PUT(eq[i]);
        }
    }
    ES_PUT('-');
    ES_PUT('>');
    if (arrow) {
        for (const char *p = arrow + 2; *p; p++) {
            if (!strncmp(p, "...", 3)) {
                for (uint32_t j = 0; j < E; j++) ES_PUT(pool[j]);
                p += 2;
            } else {
                ES_PUT(*p);
            }
        }
    } else {
        for (uint32_t j = 0; j < E; j++) ES_PUT(pool[j]);
        for (char ch = 'a'; ch <= 'z'; ch++) {
            int cnt = 0;
            for (size_t i = 0; i < lhs; i++) cnt += eq[i] == ch;
            if (cnt == 1) ES_PUT(ch);
        }
    }
#undef ES_PUT
    out[k] = 0;
    return true;
}

static lower_status lower_einsum(lower_ctx *c) {
    const char *eq0 = lw_attr_str(c, "equation", NULL);
    if (!eq0) return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Einsum: equation is missing");
    uint32_t nin = lw_n_inputs(c);
    uint32_t ranks[2] = {0, 0};
    for (uint32_t i = 0; i < nin && i < 2; i++) {
        lower_status st;
        const lower_value *v = lw_data_input(c, i, &st);
        if (!v) return st;
        ranks[i] = v->rank;
    }
    char eqbuf[256];
    if (!es_expand(eq0, nin, ranks, eqbuf, sizeof eqbuf))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Einsum: equation '%s' is not matmul-shaped (ellipsis does not fit the ranks)", eq0);
    const char *eq = eqbuf;
    const char *arrow = strstr(eq, "->");
    const char *comma = strchr(eq, ',');
    char la[LOWER_MAX_RANK], lb[LOWER_MAX_RANK], lo[LOWER_MAX_RANK];
    uint32_t na = 0, nbl = 0, no = 0;
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    bool ok = nin >= 1 && nin <= 2;
    if (ok && nin == 2) {
        ok = comma && (size_t)(comma - eq) < lhs_len && !strchr(comma + 1, ',') &&
             es_term(eq, (size_t)(comma - eq), la, &na) &&
             es_term(comma + 1, lhs_len - (size_t)(comma - eq) - 1, lb, &nbl);
    } else if (ok) {
        ok = !comma && es_term(eq, lhs_len, la, &na);
    }
    if (ok && arrow) {
        ok = es_term(arrow + 2, strlen(arrow + 2), lo, &no);
    } else if (ok) {
        /* implicit output: letters seen once, alphabetical */
        for (char ch = 'A'; ch <= 'z'; ch++) {
            int cnt = (es_find(la, na, ch) >= 0) + (nin == 2 && es_find(lb, nbl, ch) >= 0);
            if (cnt == 1 && no < LOWER_MAX_RANK) lo[no++] = ch;
        }
    }
    for (uint32_t i = 0; ok && i < no; i++)
        if (es_find(la, na, lo[i]) < 0 && (nin < 2 || es_find(lb, nbl, lo[i]) < 0)) ok = false;
    if (!ok)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "Einsum: equation '%s' is not matmul-shaped (one or two operands, no "
                         "repeated letters)",
                         eq0);
    lower_status st;
    const lower_value *A = lw_data_input(c, 0, &st);
    if (!A) return st;
    ctosa_dtype t = A->t;
    if (A->rank != na)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Einsum: '%s' does not match input rank %u", eq0,
                         A->rank);
    int64_t sa[LOWER_MAX_RANK], sb[LOWER_MAX_RANK];
    memcpy(sa, A->shape, na * sizeof *sa);
    const char *a = lw_input(c, 0);
    if (nin == 1) {
        a = es_sum_unique(c, a, t, la, &na, sa, "", 0, lo, no);
        int32_t perm[LOWER_MAX_RANK];
        for (uint32_t i = 0; i < no; i++) perm[i] = es_find(la, na, lo[i]);
        const char *y = mm_transpose(c, a, t, na, sa, perm);
        LW_TRY(y);
        lw_set_output(c, 0, y);
        return LOWER_OK;
    }
    const lower_value *B = lw_data_input(c, 1, &st);
    if (!B) return st;
    if (B->rank != nbl)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Einsum: '%s' does not match input rank %u", eq0,
                         B->rank);
    memcpy(sb, B->shape, nbl * sizeof *sb);
    const char *b = lw_input(c, 1);
    a = es_sum_unique(c, a, t, la, &na, sa, lb, nbl, lo, no);
    b = es_sum_unique(c, b, t, lb, &nbl, sb, la, na, lo, no);
    /* classify letters */
    char bat[LOWER_MAX_RANK], fa[LOWER_MAX_RANK], fb[LOWER_MAX_RANK], con[LOWER_MAX_RANK];
    uint32_t nbat = 0, nfa = 0, nfb = 0, ncon = 0;
    for (uint32_t i = 0; i < na; i++) {
        int jb = es_find(lb, nbl, la[i]);
        bool inout = es_find(lo, no, la[i]) >= 0;
        if (jb >= 0 && sb[jb] != sa[i])
            return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                             "Einsum: '%s': dimension '%c' is %lld and %lld (broadcasting not handled)", eq0,
                             la[i], (long long)sa[i], (long long)sb[jb]);
        if (jb >= 0 && inout) bat[nbat++] = la[i];
        else if (jb >= 0) con[ncon++] = la[i];
        else fa[nfa++] = la[i];
    }
    for (uint32_t i = 0; i < nbl; i++)
        if (es_find(la, na, lb[i]) < 0) fb[nfb++] = lb[i];
    int64_t Nb = 1, M = 1, K = 1, N = 1;
    int32_t pa[LOWER_MAX_RANK], pb[LOWER_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < nbat; i++) {
        pa[k++] = es_find(la, na, bat[i]);
        Nb *= sa[pa[k - 1]];
    }
    for (uint32_t i = 0; i < nfa; i++) {
        pa[k++] = es_find(la, na, fa[i]);
        M *= sa[pa[k - 1]];
    }
    for (uint32_t i = 0; i < ncon; i++) {
        pa[k++] = es_find(la, na, con[i]);
        K *= sa[pa[k - 1]];
    }
    k = 0;
    for (uint32_t i = 0; i < nbat; i++) pb[k++] = es_find(lb, nbl, bat[i]);
    for (uint32_t i = 0; i < ncon; i++) pb[k++] = es_find(lb, nbl, con[i]);
    for (uint32_t i = 0; i < nfb; i++) {
        pb[k++] = es_find(lb, nbl, fb[i]);
        N *= sb[pb[k - 1]];
    }
    int64_t tsa[LOWER_MAX_RANK], tsb[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < na; i++) tsa[i] = sa[pa[i]];
    for (uint32_t i = 0; i < nbl; i++) tsb[i] = sb[pb[i]];
    a = mm_transpose(c, a, t, na, sa, pa);
    b = mm_transpose(c, b, t, nbl, sb, pb);
    int64_t a3[3] = {Nb, M, K}, b3[3] = {Nb, K, N};
    a = lw_reshape_if(c, a, t, na, tsa, 3, a3);
    b = lw_reshape_if(c, b, t, nbl, tsb, 3, b3);
    const char *y = mm_emit(c, a, b, t, Nb, M, N);
    /* [batch..., freeA..., freeB...] then to the output order */
    char ml[LOWER_MAX_RANK * 2];
    int64_t ms[LOWER_MAX_RANK * 2];
    uint32_t nm = 0;
    for (uint32_t i = 0; i < nbat; i++) {
        ml[nm] = bat[i];
        ms[nm++] = sa[es_find(la, na, bat[i])];
    }
    for (uint32_t i = 0; i < nfa; i++) {
        ml[nm] = fa[i];
        ms[nm++] = sa[es_find(la, na, fa[i])];
    }
    for (uint32_t i = 0; i < nfb; i++) {
        ml[nm] = fb[i];
        ms[nm++] = sb[es_find(lb, nbl, fb[i])];
    }
    if (nm != no || nm > LOWER_MAX_RANK)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Einsum: equation '%s' not handled", eq0);
    int64_t y3[3] = {Nb, M, N};
    y = lw_reshape_if(c, y, t, 3, y3, nm, ms);
    int32_t po[LOWER_MAX_RANK];
    for (uint32_t i = 0; i < no; i++) po[i] = es_find(ml, nm, lo[i]);
    y = mm_transpose(c, y, t, nm, ms, po);
    LW_TRY(y);
    lw_set_output(c, 0, y);
    return LOWER_OK;
}

const lower_entry lower_table_matmul[] = {
    {"MatMul", 1, 0, lower_matmul},
    {"Gemm", 7, 0, lower_gemm},
    {"Einsum", 12, 0, lower_einsum},
    {0},
};
