/* kernels_conv.c - CONV2D, CONV3D, TRANSPOSE_CONV2D (DEPTHWISE_CONV2D is in
 * kernels_depthwise.c, on the geometry and helpers of kernels_conv.h).
 *
 * All four share one geometry (2-D ops are 3-D with depth 1) and three
 * execution paths:
 *  - fp32 accumulation: the indirect GEMM engine (kernels_gemm.c) for
 *    CONV/TRANSPOSE_CONV, a channel-vectorised direct loop for DEPTHWISE;
 *  - integer: inputs converted once to int16 with the zero point removed,
 *    int32 accumulation when the sum provably fits, int64 otherwise (INT48
 *    accumulators, or INT32 with a final range check);
 *  - fp16 accumulation: a direct loop rounding every product and sum to fp16
 *    as the pseudocode does (slow, exact).
 * Padding contributes nothing (the pseudocode skips out-of-range taps).
 * interp_op.reference runs the plain loops (interp_conv_ref_float, interp_conv_ref_int) for
 * every type, so the differential tests can check each fast path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/kernels_conv.h"
#include "interp/kernels_gemm.h"
#include "util/floatfmt.h"

/* ------------------------------------------------------ checks and setup */

ctosa_error *interp_conv_vec(const interp_op *o, const char *name, ctosa_i32s v, uint32_t n) {
    if (v.n != n || (n && !v.v)) return interp_fail(o, "attribute %s needs %u values, has %u", name, n, v.n);
    return NULL;
}

static bool c_count_ok(const itensor *t) { return im_dims(t, 0, t->rank) == t->count; }

/* Checks inputs, dtypes, zero points and accumulator type shared by all
 * four ops. */
ctosa_error *interp_conv_common(const interp_op *o, cargs *c, uint32_t in_rank) {
    ctosa_error *e = im_need_io(o, 5, 1);
    if (e) return e;
    c->in = o->in[0];
    c->w = o->in[1];
    c->bias = o->in[2];
    c->out = o->out[0];
    if (c->in->rank != in_rank || c->w->rank != in_rank || c->out->rank != in_rank)
        return interp_fail(o, "input, weight and output must have rank %u (have %u, %u, %u)", in_rank,
                           c->in->rank, c->w->rank, c->out->rank);
    if (c->bias->rank != 1) return interp_fail(o, "bias must have rank 1");
    if (!c_count_ok(c->in) || !c_count_ok(c->w) || !c_count_ok(c->out) || !c_count_ok(c->bias))
        return interp_fail(o, "tensor element counts do not match their shapes");
    ctosa_dtype ti = c->in->dtype, tw = c->w->dtype, to = c->out->dtype;
    if (!im_scalar_i(o->in[3], &c->izp) && !(ctosa_dtype_is_float(ti) && o->in[3]->count == 1))
        return interp_fail(o, "input_zp must be a one-element tensor");
    if (!im_scalar_i(o->in[4], &c->wzp) && !(ctosa_dtype_is_float(tw) && o->in[4]->count == 1))
        return interp_fail(o, "weight_zp must be a one-element tensor");
    if (ctosa_dtype_is_float(o->in[3]->dtype)) {
        float f = ((const float *)o->in[3]->data)[0];
        c->izp = f != 0.0f; /* only zero is allowed: any other value is an error below */
    }
    if (ctosa_dtype_is_float(o->in[4]->dtype)) {
        float f = ((const float *)o->in[4]->data)[0];
        c->wzp = f != 0.0f;
    }
    if (ti != CTOSA_DTYPE_INT8 && c->izp != 0)
        return interp_fail(o, "input_zp must be 0 for %s input", ctosa_dtype_short(ti));
    if (tw != CTOSA_DTYPE_INT8 && c->wzp != 0)
        return interp_fail(o, "weight_zp must be 0 for %s weight", ctosa_dtype_short(tw));
    if (c->bias->dtype != to)
        return interp_fail(o, "bias type %s differs from output type %s", ctosa_dtype_short(c->bias->dtype),
                           ctosa_dtype_short(to));
    ctosa_dtype acc = o->op->attr.acc_type;
    if (ti == CTOSA_DTYPE_INT8) {
        if (tw != CTOSA_DTYPE_INT8 && tw != CTOSA_DTYPE_INT4)
            return interp_fail(o, "int8 input needs int8 or int4 weight");
        if (acc != CTOSA_DTYPE_INT32 || to != CTOSA_DTYPE_INT32)
            return interp_fail(o, "int8 input needs acc_type and output int32");
    } else if (ti == CTOSA_DTYPE_INT16) {
        if (tw != CTOSA_DTYPE_INT8) return interp_fail(o, "int16 input needs int8 weight");
        if (acc != CTOSA_DTYPE_INT48 || to != CTOSA_DTYPE_INT48)
            return interp_fail(o, "int16 input needs acc_type and output int48");
    } else if (ctosa_dtype_is_float(ti)) {
        if (tw != ti)
            return interp_fail(o, "weight type %s differs from input type %s", ctosa_dtype_short(tw),
                               ctosa_dtype_short(ti));
        if (!ctosa_dtype_is_float(to)) return interp_fail(o, "output must be floating point");
        if (acc != CTOSA_DTYPE_FP32 && acc != CTOSA_DTYPE_FP16)
            return interp_fail(o, "acc_type %s is not valid for %s input",
                               ctosa_dtype_short(acc) ? ctosa_dtype_short(acc) : "?", ctosa_dtype_short(ti));
        if (acc == CTOSA_DTYPE_FP16 && ti != CTOSA_DTYPE_FP16 && ti != CTOSA_DTYPE_FP8E4M3 &&
            ti != CTOSA_DTYPE_FP8E5M2)
            return interp_fail(o, "acc_type fp16 is not valid for %s input", ctosa_dtype_short(ti));
    } else {
        return interp_fail(o, "input type %s is not supported", ctosa_dtype_short(ti));
    }
    c->acc = acc;
    return NULL;
}

/* OH == (IH - 1 + pads - (K - 1) * dil) / stride + 1 with exact division. */
ctosa_error *interp_conv_out_dim(const interp_op *o, const char *what, int64_t in, int64_t pa, int64_t pb,
                                 int64_t k, int64_t dil, int64_t s, int64_t out) {
    int64_t num = in - 1 + pa + pb - (k - 1) * dil;
    if (num < 0 || num % s != 0)
        return interp_fail(
            o,
            "%s: (%lld - 1 + %lld + %lld - (%lld - 1) * %lld) is not a non-negative multiple of stride %lld",
            what, (long long)in, (long long)pa, (long long)pb, (long long)k, (long long)dil, (long long)s);
    if (num / s + 1 != out)
        return interp_fail(o, "output %s is %lld, expected %lld", what, (long long)out,
                           (long long)(num / s + 1));
    return NULL;
}

/* ------------------------------------------------------ generic helpers */

typedef struct rows_ctx {
    const cgeom *g;
    const char *base; /* input, fp32 or int16 */
    size_t esz;
    const void *zero;
    /* a K chunk: taps [t0, t1), channels from c0 (t1 == 0: every tap) */
    int64_t t0, t1, c0;
} rows_ctx;

/* Row pointers for output pixels m0 .. m0+nrows-1: the pixel index is
 * decomposed once and then stepped, since divisions per row would cost more
 * than the pointer arithmetic itself. */
static void c_rows(const void *rc, int64_t m0, int64_t nrows, const void **ptrs) {
    const rows_ctx *r = rc;
    const cgeom *g = r->g;
    int64_t ox = m0 % g->OW, t = m0 / g->OW;
    int64_t oy = t % g->OH;
    t /= g->OH;
    int64_t od = t % g->OD, n = t / g->OD;
    int64_t t0 = r->t0, t1 = r->t1 ? r->t1 : INT64_MAX;
    size_t coff = (size_t)r->c0 * r->esz;
    const char *zero = (const char *)r->zero + coff;
    /* every tap of a 2-D window inside the input: the taps' offsets from
     * the window's corner, computed once */
    enum { C_ROWS_TOFF = 64 };
    ptrdiff_t toff[C_ROWS_TOFF];
    const int64_t T = g->KH * g->KW;
    bool fast = g->kind != CK_TRANSPOSE && g->KD == 1 && t0 == 0 && !r->t1 && T <= C_ROWS_TOFF;
    for (int64_t ky = 0, tt = 0; fast && ky < g->KH; ky++)
        for (int64_t kx = 0; kx < g->KW; kx++, tt++)
            toff[tt] = (ptrdiff_t)((ky * g->dy * g->IW + kx * g->dx) * g->IC) * (ptrdiff_t)r->esz;
    const int64_t ey = (g->KH - 1) * g->dy, ex = (g->KW - 1) * g->dx;
    int i = 0;
    for (int64_t row = 0; row < nrows; row++) {
        int64_t tap = 0;
        int64_t z0 = od * g->sd - g->pd, y0 = oy * g->sy - g->pt, x0 = ox * g->sx - g->pl;
        if (fast && z0 >= 0 && z0 < g->ID && y0 >= 0 && y0 + ey < g->IH && x0 >= 0 && x0 + ex < g->IW) {
            const char *pb =
                r->base + (size_t)((((n * g->ID + z0) * g->IH + y0) * g->IW + x0) * g->IC) * r->esz + coff;
            for (int64_t tt = 0; tt < T; tt++) ptrs[i++] = pb + toff[tt];
        } else if (g->kind == CK_TRANSPOSE) {
            for (int64_t ky = 0; ky < g->KH; ky++)
                for (int64_t kx = 0; kx < g->KW; kx++, tap++) {
                    if (tap < t0 || tap >= t1) continue;
                    int64_t z, y, x;
                    if (cg_in(g, od, oy, ox, 0, ky, kx, &z, &y, &x))
                        ptrs[i++] = r->base + (size_t)(((n * g->IH + y) * g->IW + x) * g->IC) * r->esz + coff;
                    else ptrs[i++] = zero;
                }
        } else {
            for (int64_t kd = 0; kd < g->KD; kd++) {
                int64_t z = z0 + kd * g->dd;
                bool zin = z >= 0 && z < g->ID;
                for (int64_t ky = 0; ky < g->KH; ky++) {
                    int64_t y = y0 + ky * g->dy;
                    bool yin = zin && y >= 0 && y < g->IH;
                    const char *rowp =
                        yin ? r->base + (size_t)(((n * g->ID + z) * g->IH + y) * g->IW * g->IC) * r->esz +
                                  coff
                            : zero;
                    for (int64_t kx = 0; kx < g->KW; kx++, tap++) {
                        if (tap < t0 || tap >= t1) continue;
                        int64_t x = x0 + kx * g->dx;
                        ptrs[i++] = yin && x >= 0 && x < g->IW ? rowp + (size_t)(x * g->IC) * r->esz : zero;
                    }
                }
            }
        }
        if (++ox == g->OW) {
            ox = 0;
            if (++oy == g->OH) {
                oy = 0;
                if (++od == g->OD) {
                    od = 0;
                    n++;
                }
            }
        }
    }
}

ctosa_error *interp_conv_nomem(const interp_op *o) { return interp_fail(o, "out of memory"); }

/* fp16 accumulation (and any float case the fast paths skip): every
 * product and partial sum is rounded to acc_type. */
ctosa_error *interp_conv_ref_float(const interp_op *o, const cgeom *g, const cargs *c) {
    const float *in = c->in->data, *w = c->w->data, *bias = c->bias->data;
    float *out = c->out->data;
    ctosa_dtype acc_t = c->acc, to = c->out->dtype;
    int64_t ntap = g->KD * g->KH * g->KW;
    int64_t nic = g->kind == CK_DEPTHWISE ? 1 : g->IC;
    int64_t BC = c->bias->count;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t od = 0; od < g->OD; od++)
            for (int64_t oy = 0; oy < g->OH; oy++)
                for (int64_t ox = 0; ox < g->OW; ox++)
                    for (int64_t oc = 0; oc < g->OC; oc++) {
                        double acc = 0;
                        int64_t tap = 0;
                        for (int64_t kd = 0; kd < g->KD; kd++)
                            for (int64_t ky = 0; ky < g->KH; ky++)
                                for (int64_t kx = 0; kx < g->KW; kx++, tap++) {
                                    int64_t z, y, x;
                                    if (!cg_in(g, od, oy, ox, kd, ky, kx, &z, &y, &x)) continue;
                                    for (int64_t i = 0; i < nic; i++) {
                                        int64_t ic = g->kind == CK_DEPTHWISE ? oc / g->M : i;
                                        double a =
                                            in[(((n * g->ID + z) * g->IH + y) * g->IW + x) * g->IC + ic];
                                        double p =
                                            ff_round_to_double(acc_t, a * (double)w[c_widx(g, oc, tap, i)]);
                                        acc = ff_round_to_double(acc_t, acc + p);
                                    }
                                }
                        (void)ntap;
                        float r = ff_round_to_double(to, acc);
                        r = ff_round_to_double(to, (double)r + bias[BC == 1 ? 0 : oc]);
                        out[(((n * g->OD + od) * g->OH + oy) * g->OW + ox) * g->OC + oc] = r;
                    }
    interp_post_apply(o->post, out, c->out->count);
    return NULL;
}

/* Adds bias in the output type (rounding twice as the pseudocode does)
 * after an fp32 accumulation that left raw sums in out. */
void interp_conv_float_epilogue(const cargs *c, int64_t OC) {
    float *out = c->out->data;
    const float *bias = c->bias->data;
    ctosa_dtype to = c->out->dtype;
    bool b1 = c->bias->count == 1;
    for (uint64_t i = 0; i < c->out->count; i++) {
        int64_t oc = (int64_t)(i % (uint64_t)OC);
        float r = ff_round_to(to, out[i]);
        out[i] = ff_round_to_double(to, (double)r + bias[b1 ? 0 : oc]);
    }
}

/* ------------------------------------------- CONV / TRANSPOSE via GEMM */

typedef struct wget_ctx {
    const cgeom *g;
    const int8_t *w;
    int64_t wzp;
} wget_ctx;

static int32_t c_wget(const void *cc, int64_t k, int64_t n) {
    const wget_ctx *c = cc;
    int64_t K = c->g->KD * c->g->KH * c->g->KW * c->g->IC;
    return (int32_t)(c->w[n * K + k] - c->wzp);
}

enum { CW_FLOAT = 1, CW_INT8 = 2, CW_INT16 = 3, CW_Q8 = 4 }; /* op cache tags */

/* Small input-channel convolutions (RGB stems: 3 channels, 3x3 to 11x11): an
 * indirect tap of only IC floats starves the GEMM micro-kernel, so for each
 * row block the engine asks for, the KD*KH*KW*IC patch of every output pixel is
 * copied into one contiguous row (zeros for padding) of a per-thread buffer
 * and the GEMM runs with a single tap of K values. The engine computes all
 * column panels of a row block right after asking for its rows, in the same
 * thread, so the buffer is still intact (and in L1) when it is read. The
 * packed weights are unchanged (k = tap*IC + ic). */
typedef struct c_patch_ctx {
    const cgeom *g;
    const float *in;
    int64_t K;
    int *failed; /* set when a thread could not get its buffer */
} c_patch_ctx;

#define C_PATCH_MAX_K 1024 /* patch rows of up to 4 KiB (AlexNet's 11x11x3 stem: 363 values) */
static const float c_patch_zero[C_PATCH_MAX_K];

static void c_patch_ptrs(const void *rc, int64_t m0, int64_t nrows, const void **ptrs) {
    const c_patch_ctx *p = rc;
    const cgeom *g = p->g;
    const int64_t IC = g->IC, K = p->K;
    float *buf = kg_scratch(5, (size_t)(nrows * K) * sizeof(float));
    if (!buf) {
        __atomic_store_n(p->failed, 1, __ATOMIC_RELAXED);
        for (int64_t r = 0; r < nrows; r++) ptrs[r] = c_patch_zero;
        return;
    }
    /* the pixel index covers depth too (CONV3D): decompose all four */
    int64_t ox = m0 % g->OW, t = m0 / g->OW;
    int64_t oy = t % g->OH;
    t /= g->OH;
    int64_t od = t % g->OD, n = t / g->OD;
    float *dst = buf;
    for (int64_t r = 0; r < nrows; r++) {
        ptrs[r] = dst;
        int64_t x0 = ox * g->sx - g->pl, y0 = oy * g->sy - g->pt, z0 = od * g->sd - g->pd;
        for (int64_t kd = 0; kd < g->KD; kd++) {
            int64_t z = z0 + kd * g->dd;
            bool zin = z >= 0 && z < g->ID;
            for (int64_t ky = 0; ky < g->KH; ky++) {
                int64_t y = y0 + ky * g->dy;
                bool yin = zin && y >= 0 && y < g->IH;
                const float *irow =
                    yin ? p->in + (size_t)(((n * g->ID + z) * g->IH + y) * g->IW) * (size_t)IC : NULL;
                if (IC == 3 && g->dx == 1 && yin && x0 >= 0 && x0 + g->KW <= g->IW) {
                    memcpy(dst, irow + x0 * 3, (size_t)(g->KW * 3) * sizeof(float));
                    dst += g->KW * 3;
                    continue;
                }
                for (int64_t kx = 0; kx < g->KW; kx++, dst += IC) {
                    int64_t x = x0 + kx * g->dx;
                    if (yin && x >= 0 && x < g->IW) {
                        for (int64_t i = 0; i < IC; i++) dst[i] = irow[x * IC + i];
                    } else {
                        for (int64_t i = 0; i < IC; i++) dst[i] = 0.0f;
                    }
                }
            }
        }
        if (++ox == g->OW) {
            ox = 0;
            if (++oy == g->OH) {
                oy = 0;
                if (++od == g->OD) {
                    od = 0;
                    n++;
                }
            }
        }
    }
}

static ctosa_error *c_run_gemm_float(const interp_op *o, const cgeom *g, const cargs *c) {
    int64_t T = g->KD * g->KH * g->KW, K = T * g->IC;
    size_t pbytes = kg_pack_elems(K, g->OC) * sizeof(float);
    /* constant weights are packed once and kept in the operator's cache */
    int64_t key[KG_CACHE_KEY] = {CW_FLOAT, K, g->OC, g->kind, 0, 0};
    const float *bp = c->w->is_const ? kg_cache_find(o, key) : NULL;
    float *fresh = NULL;
    if (!bp) {
        fresh = c->w->is_const ? kg_cache_new(o, key, pbytes) : NULL;
        if (!fresh) fresh = kg_scratch(4, pbytes);
    }
    float *zero = calloc((size_t)(g->IC > 0 ? g->IC : 1), sizeof(float));
    float *bias = NULL;
    bool fp32_out = c->out->dtype == CTOSA_DTYPE_FP32;
    if (fp32_out) bias = malloc((size_t)g->OC * sizeof(float));
    if ((!bp && !fresh) || !zero || (fp32_out && !bias)) {
        free(zero);
        free(bias);
        return interp_conv_nomem(o);
    }
    if (!bp) {
        kg_pack_f_par(o->ctx, fresh, K, g->OC, c->w->data, 1, K);
        bp = fresh;
    }
    if (fp32_out) {
        const float *b = c->bias->data;
        for (int64_t i = 0; i < g->OC; i++) bias[i] = b[c->bias->count == 1 ? 0 : i];
    }
    rows_ctx rc = {.g = g, .base = c->in->data, .esz = sizeof(float), .zero = zero};
    kg_job job = {.M = g->N * g->OD * g->OH * g->OW,
                  .N = g->OC,
                  .Kt = g->IC,
                  .T = (int32_t)T,
                  .rows = c_rows,
                  .rctx = &rc,
                  .bpack = bp,
                  .bias = bias,
                  .out = c->out->data,
                  .ldo = g->OC,
                  .post = fp32_out ? o->post : NULL};
    int patch_failed = 0;
    c_patch_ctx pc = {.g = g, .in = c->in->data, .K = K, .failed = &patch_failed};
    if (g->kind == CK_CONV && g->IC <= 4 && T > 1 && K <= C_PATCH_MAX_K) {
        job.Kt = K;
        job.T = 1;
        job.rows = c_patch_ptrs;
        job.rctx = &pc;
    }
    bool ok = kg_run_f(o->ctx, &job) && !patch_failed;
    free(zero);
    free(bias);
    if (!ok) return interp_conv_nomem(o);
    if (!fp32_out) {
        interp_conv_float_epilogue(c, g->OC);
        interp_post_apply(o->post, c->out->data, c->out->count);
    }
    return NULL;
}

/* Converts the input to int16 with the zero point removed; returns the
 * largest magnitude seen. */
int16_t *interp_conv_in16(const itensor *t, int64_t zp, int64_t *maxabs) {
    int16_t *d = malloc((size_t)(t->count ? t->count : 1) * sizeof(int16_t));
    if (!d) return NULL;
    int32_t mn = 0, mx = 0;
    /* typed loops (vectorisable): int8 minus zp, or int16 (zp is 0) */
    if (t->dtype == CTOSA_DTYPE_INT8) {
        const int8_t *s = t->data;
        int16_t z = (int16_t)zp;
        for (uint64_t i = 0; i < t->count; i++) {
            int16_t v = (int16_t)(s[i] - z);
            d[i] = v;
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
    } else {
        const int16_t *s = t->data;
        for (uint64_t i = 0; i < t->count; i++) {
            d[i] = s[i];
            mn = s[i] < mn ? s[i] : mn;
            mx = s[i] > mx ? s[i] : mx;
        }
    }
    *maxabs = -(int64_t)mn > mx ? -(int64_t)mn : mx;
    return d;
}

/* Final integer step: out = acc + bias, REQUIRE that both fit the
 * accumulator / output type. acc holds n_out values (int32 or int64),
 * rows of OC channels. */

ctosa_error *interp_conv_int_epilogue(const interp_op *o, const cargs *c, const void *acc, int acc_kind,
                                      int64_t OC) {
    ctosa_dtype to = c->out->dtype;
    int64_t lo, hi;
    im_range_s(to, &lo, &hi);
    bool b1 = c->bias->count == 1;
    uint64_t rows = OC > 0 ? c->out->count / (uint64_t)OC : 0;
    if (to == CTOSA_DTYPE_INT32 && acc_kind != ACC_I32 && OC > 0) {
        int32_t *b32 = malloc((size_t)OC * sizeof(int32_t));
        if (!b32) return interp_conv_nomem(o);
        for (int64_t j = 0; j < OC; j++) b32[j] = ((const int32_t *)c->bias->data)[b1 ? 0 : j];
        bool ok = acc_kind == ACC_F32 ? kg_bias_f32_i32(acc, rows, (size_t)OC, b32, c->out->data)
                                      : kg_bias_i64_i32(acc, rows, (size_t)OC, b32, c->out->data);
        free(b32);
        if (!ok) return interp_fail(o, "accumulator or bias add overflows int32 (REQUIRE failed)");
        return NULL;
    }
    int64_t *bias = malloc((size_t)(OC > 0 ? OC : 1) * sizeof(int64_t));
    if (!bias) return interp_conv_nomem(o);
    for (int64_t j = 0; j < OC; j++) bias[j] = im_load_i(to, c->bias->data, b1 ? 0 : (size_t)j);
    bool ok_acc = true, ok_out = true;
    uint64_t bad = 0;
    for (uint64_t r = 0; r < rows && ok_acc && ok_out; r++) {
        size_t base = (size_t)(r * (uint64_t)OC);
        for (int64_t j = 0; j < OC; j++) {
            int64_t a = acc_kind == ACC_I64   ? ((const int64_t *)acc)[base + j]
                        : acc_kind == ACC_I32 ? ((const int32_t *)acc)[base + j]
                                              : (int64_t)((const float *)acc)[base + j];
            int64_t v = a + bias[j];
            ok_acc &= a >= lo && a <= hi;
            ok_out &= v >= lo && v <= hi;
            if (to == CTOSA_DTYPE_INT32) ((int32_t *)c->out->data)[base + j] = (int32_t)v;
            else ((int64_t *)c->out->data)[base + j] = v;
        }
        bad = base;
    }
    free(bias);
    if (!ok_acc)
        return interp_fail(o, "accumulator overflows %s in output row at element %llu (REQUIRE failed)",
                           ctosa_dtype_short(c->acc), (unsigned long long)bad);
    if (!ok_out)
        return interp_fail(o, "bias add overflows %s in output row at element %llu (REQUIRE failed)",
                           ctosa_dtype_short(to), (unsigned long long)bad);
    return NULL;
}

/* int8 x int8/int4 on the fp32 engine, exactly: every product is an
 * integer below 2^16 in magnitude, so a chunk of K terms whose worst-case
 * sum stays below 2^24 is computed without any rounding in fp32 (all
 * partial sums are exactly representable). K is split into such chunks,
 * each chunk's float result is converted and added in int64. */
static ctosa_error *c_run_int8_float(const interp_op *o, const cgeom *g, const cargs *c) {
    int64_t amax, wmax;
    int64_t T = g->KD * g->KH * g->KW, IC = g->IC, K = T * IC, OC = g->OC;
    int64_t M = g->N * g->OD * g->OH * g->OW;
    int64_t kc;
    /* large temporaries live in per-thread scratch (no page faults per call) */
    float *inf = kg_scratch(0, c->in->count * sizeof(float));
    float *wf = kg_scratch(1, c->w->count * sizeof(float));
    float *zero = calloc((size_t)(IC > 0 ? IC : 1), sizeof(float));
    float *bp = NULL;
    float *tmp = kg_scratch(2, c->out->count * sizeof(float));
    int64_t *acc = kg_scratch(3, c->out->count * sizeof(int64_t));
    ctosa_error *e = NULL;
    if (!inf || !wf || !zero || !tmp || !acc) {
        e = interp_conv_nomem(o);
        goto done;
    }
    amax = kg_cvt_i8_f32(c->in->data, c->in->count, (int32_t)c->izp, inf);
    /* Constant weights: the chunks are planned for the worst input the
     * zero point allows (|x - zp| <= max(127 - zp, zp + 128)), so the
     * packed chunks do not depend on the input and are kept in the
     * operator's cache. Sums stay exact either way, so results are the
     * same as with chunks sized from the actual input. */
    const float *cached = NULL;
    float *cfill = NULL;
    int64_t key[KG_CACHE_KEY] = {CW_INT8, K, OC, c->izp, c->wzp, g->kind};
    if (c->w->is_const) {
        const float *cp = kg_cache_find(o, key);
        if (cp) {
            memcpy(&wmax, cp, sizeof wmax); /* first 64 bytes: wmax */
            cached = cp + 16;
        }
    }
    if (!cached) wmax = kg_cvt_i8_f32(c->w->data, c->w->count, (int32_t)c->wzp, wf);
    if (c->w->is_const) amax = 127 - c->izp > c->izp + 128 ? 127 - c->izp : c->izp + 128;
    int64_t prod = amax * wmax > 0 ? amax * wmax : 1;
    kc = ((INT64_C(1) << 24) - 1) / prod; /* >= 258 */
    /* chunks: whole taps when a tap's channels fit, else channel slices */
    int64_t tpc = IC <= kc ? (IC > 0 ? kc / IC : T) : 1, cpc = IC <= kc ? IC : kc;
    if (tpc < 1) tpc = 1;
    if (c->w->is_const && !cached) {
        size_t total = 0; /* every chunk's packed size */
        for (int64_t t0 = 0; t0 < T; t0 += tpc) {
            int64_t t1 = t0 + tpc < T ? t0 + tpc : T;
            for (int64_t c0 = 0; c0 < IC || (IC == 0 && c0 == 0); c0 += cpc > 0 ? cpc : 1) {
                int64_t nc = IC - c0 < cpc ? IC - c0 : cpc;
                total += kg_pack_elems((t1 - t0) * nc, OC);
                if (IC == 0) break;
            }
        }
        float *blk = kg_cache_new(o, key, (total + 16) * sizeof(float));
        if (blk) {
            memcpy(blk, &wmax, sizeof wmax);
            cfill = blk + 16;
        }
    }
    if (!cached && !cfill) {
        bp = kg_scratch(4, kg_pack_elems(kc < K ? kc : K, OC) * sizeof(float));
        if (!bp) {
            e = interp_conv_nomem(o);
            goto done;
        }
    }
    /* one chunk (the usual case): its exact float sums go straight to the
     * epilogue, no int64 accumulation pass */
    bool single = tpc >= T && (cpc >= IC || IC == 0);
    if (!single) memset(acc, 0, c->out->count * sizeof(int64_t));
    size_t coff = 0; /* offset of the chunk in the cached block */
    for (int64_t t0 = 0; t0 < T; t0 += tpc) {
        int64_t t1 = t0 + tpc < T ? t0 + tpc : T;
        for (int64_t c0 = 0; c0 < IC || (IC == 0 && c0 == 0); c0 += cpc > 0 ? cpc : 1) {
            int64_t nc = IC - c0 < cpc ? IC - c0 : cpc;
            int64_t kk = (t1 - t0) * nc;
            /* B chunk: rows (t, c) for t in [t0,t1), c in [c0, c0+nc) */
            /* k' = (t - t0) * nc + (c - c0) is contiguous in the original K
             * because either nc == IC (c0 = 0) or the chunk is one tap */
            if (cached) {
                bp = (float *)(cached + coff);
            } else {
                if (cfill) bp = cfill + coff;
                kg_pack_f_par(o->ctx, bp, kk, OC, wf + t0 * IC + c0, 1, K);
            }
            coff += kg_pack_elems(kk, OC);
            rows_ctx rc = {g, (const char *)inf, sizeof(float), zero, t0, t1, c0};
            kg_job job = {.M = M,
                          .N = OC,
                          .Kt = nc,
                          .T = (int32_t)(t1 - t0),
                          .rows = c_rows,
                          .rctx = &rc,
                          .bpack = bp,
                          .out = tmp,
                          .ldo = OC};
            if (!kg_run_f(o->ctx, &job)) {
                e = interp_conv_nomem(o);
                goto done;
            }
            if (!single)
                for (uint64_t i = 0; i < c->out->count; i++) acc[i] += (int64_t)tmp[i];
            if (IC == 0) break;
        }
    }
    e = single ? interp_conv_int_epilogue(o, c, tmp, ACC_F32, OC)
               : interp_conv_int_epilogue(o, c, acc, ACC_I64, OC);
done:
    free(zero);
    return e;
}

/* int8 x int8/int4 on the dot-product engine (kernels_qgemm.c), when the
 * CPU has one, every weight minus its zero point fits int8, and no sum can
 * leave int32: K * max|x - izp| * max|w - wzp| + max|bias| <= INT32_MAX, so
 * neither REQUIRE of the epilogue can fail and the wrapping int32 sums are
 * exact. *done is false when it does not apply (the caller then takes the
 * fp32 path). Channels are padded to a multiple of 4 (the instruction's
 * group) in a copy of bytes x + 128, or, with a multiple of 4 channels,
 * the tiles read the input itself and flip the sign bits (kg_job.xa);
 * padding taps read a row of the zero point, which the column-sum
 * correction cancels like any other value equal to it. A 1x1 convolution
 * with stride 1 and no padding reads every pixel once in order: its rows
 * are one stride apart (kg_rows_flat). With nchw (the NCHW tensor of a
 * TRANSPOSE offered to the convolution, interp_op.pre) the copy is made
 * from it and the convolution's input is not read. */
static ctosa_error *c_run_int8_q8(const interp_op *o, const cgeom *g, const cargs *c, const itensor *nchw,
                                  bool *done) {
    *done = false;
    if (kg_q8_isa() == KG_Q8_NONE || g->kind == CK_DEPTHWISE || c->out->dtype != CTOSA_DTYPE_INT32 ||
        c->izp < -128 || c->izp > 127) /* padding rows hold a byte of izp */
        return NULL;
    int64_t T = g->KD * g->KH * g->KW, IC = g->IC, IC4 = (IC + 3) & ~(int64_t)3, OC = g->OC;
    int64_t K = T * IC;
    if (IC4 > INT32_MAX / 64 || T > INT32_MAX) return NULL;
    /* constant weights: [wmax, ok][colsum OC][packed] in the op cache */
    size_t csz = ((size_t)OC * sizeof(int32_t) + 63) & ~(size_t)63;
    size_t pbytes = kg_q8_pack_bytes(T, IC4, OC);
    int64_t key[KG_CACHE_KEY] = {CW_Q8, K, OC, c->wzp, g->kind, IC4};
    const char *blk = c->w->is_const ? kg_cache_find(o, key) : NULL;
    int64_t wmax = 0;
    if (blk) {
        int64_t hdr[2];
        memcpy(hdr, blk, sizeof hdr);
        if (!hdr[1]) return NULL; /* weights known not to fit int8 */
        wmax = hdr[0];
    } else {
        char *nb = c->w->is_const ? kg_cache_new(o, key, 64 + csz + pbytes) : NULL;
        char *p = nb ? nb : kg_scratch(4, 64 + csz + pbytes);
        if (!p) return interp_conv_nomem(o);
        bool ok = kg_q8_pack((int8_t *)(p + 64 + csz), T, IC, IC4, OC, c->w->data, K, 1, c->wzp,
                             (int32_t *)(p + 64), &wmax);
        int64_t hdr[2] = {wmax, ok};
        memcpy(p, hdr, sizeof hdr);
        if (!ok) return NULL;
        blk = p;
    }
    const int32_t *colsum = (const int32_t *)(blk + 64);
    const int8_t *bpk = (const int8_t *)(blk + 64 + csz);
    uint64_t pixels = IC > 0 ? c->in->count / (uint64_t)IC : 0;
    uint8_t *in8 = kg_scratch(0, (size_t)(pixels * (uint64_t)IC4) + 64);
    uint8_t *zero = malloc((size_t)IC4 + 64);
    int32_t *ib = malloc((size_t)(OC > 0 ? OC : 1) * sizeof(int32_t));
    ctosa_error *e = NULL;
    if (!in8 || !zero || !ib) {
        e = interp_conv_nomem(o);
        goto out;
    }
    int64_t bmax = 0;
    bool b1 = c->bias->count == 1;
    const int32_t *bias = c->bias->data;
    for (int64_t j = 0; j < (b1 ? 1 : OC); j++) bmax = llabs(bias[j]) > bmax ? llabs(bias[j]) : bmax;
    /* the input's values are scanned only when the zero point's worst case
     * (|x - izp| <= max(127 - izp, izp + 128)) could pass int32 */
    int64_t aworst = 127 - c->izp > c->izp + 128 ? 127 - c->izp : c->izp + 128;
    bool scan = (double)K * (double)aworst * (double)wmax + (double)bmax > 2147483647.0;
    /* channels a multiple of 4 and no scan: the tiles read the int8 input
     * itself and flip its sign bits in registers (kg_job.xa) */
    bool xa = IC == IC4 && !scan;
    if (xa) in8 = (uint8_t *)c->in->data;
    int64_t amax = 0;
    if (nchw) { /* the copy from the NCHW tensor (the scan reads values in any layout) */
        if (scan)
            amax = kg_q8_convert(nchw->data, (size_t)pixels, (size_t)IC, (size_t)IC4, (int32_t)c->izp, in8,
                                 true);
        kg_q8_convert_nchw(nchw->data, (size_t)g->N, (size_t)IC, (size_t)(g->IH * g->IW), (size_t)IC4, in8);
    } else if (!xa) {
        amax =
            kg_q8_convert(c->in->data, (size_t)pixels, (size_t)IC, (size_t)IC4, (int32_t)c->izp, in8, scan);
    }
    if (scan && (double)K * (double)amax * (double)wmax + (double)bmax > 2147483647.0) goto out;
    memset(zero, (int)(uint8_t)(xa ? c->izp : c->izp + 128), (size_t)IC4 + 64);
    /* ibias = bias - (128 + izp) * colsum, in wrapping int32 */
    for (int64_t j = 0; j < OC; j++)
        ib[j] = (int32_t)((uint32_t)bias[b1 ? 0 : j] - (uint32_t)(128 + c->izp) * (uint32_t)colsum[j]);
    cgeom g4 = *g;
    g4.IC = IC4; /* c_rows steps pixels by the padded channel count */
    rows_ctx rc = {.g = &g4, .base = (const char *)in8, .esz = 1, .zero = zero};
    kg_job job = {.M = g->N * g->OD * g->OH * g->OW,
                  .N = OC,
                  .Kt = IC4,
                  .T = (int32_t)T,
                  .rows = c_rows,
                  .rctx = &rc,
                  .bpack = bpk,
                  .out = c->out->data,
                  .ldo = OC,
                  .ibias = ib,
                  .xa = xa};
    kg_flat fr = {in8, IC4};
    if (T == 1 && g->kind != CK_TRANSPOSE && g->sd == 1 && g->sy == 1 && g->sx == 1 && g->pd == 0 &&
        g->pt == 0 && g->pl == 0 && g->OD == g->ID && g->OH == g->IH && g->OW == g->IW) {
        job.rows = kg_rows_flat;
        job.rctx = &fr;
    }
    /* a fused RESCALE: the tiles are requantised as they are stored; if a
     * value breaks its REQUIRE the int32 output is computed after all and
     * the RESCALE runs (and reports it) */
    kg_requant rq;
    if (o->rescale && interp_rescale_requant(o->rescale, OC, &rq)) {
        job.rq = &rq;
        bool ran = kg_run_q8(o->ctx, &job);
        if (!ran) {
            e = interp_conv_nomem(o);
            goto out;
        }
        if (!rq.bad) {
            o->rescale->done = true;
            *done = true;
            goto out;
        }
        job.rq = NULL;
    }
    if (!kg_run_q8(o->ctx, &job)) e = interp_conv_nomem(o);
    else *done = true;
out:
    free(zero);
    free(ib);
    return e;
}

static ctosa_error *c_run_gemm_int(const interp_op *o, const cgeom *g, const cargs *c) {
    int64_t T = g->KD * g->KH * g->KW, K = T * g->IC;
    int64_t amax = 0, wmax = 0;
    int16_t *in16 = interp_conv_in16(c->in, c->izp, &amax);
    size_t pbytes = kg_pack_elems(K, g->OC) * sizeof(int32_t);
    /* constant weights: [wmax, 64-byte header][packed] kept in the op cache */
    int64_t key[KG_CACHE_KEY] = {CW_INT16, K, g->OC, c->wzp, g->kind, 0};
    const int32_t *cached = c->w->is_const ? kg_cache_find(o, key) : NULL;
    int32_t *blk = NULL, *bp = NULL;
    if (cached) {
        memcpy(&wmax, cached, sizeof wmax);
    } else {
        blk = c->w->is_const ? kg_cache_new(o, key, pbytes + 64) : NULL;
        bp = blk ? NULL : aligned_alloc(64, (pbytes + 64) & ~(size_t)63);
    }
    int16_t *zero = calloc((size_t)(g->IC > 0 ? g->IC : 1), sizeof(int16_t));
    if (!in16 || (!cached && !blk && !bp) || !zero) {
        free(in16);
        free(bp);
        free(zero);
        return interp_conv_nomem(o);
    }
    const int32_t *bpk = cached ? cached + 16 : blk ? blk + 16 : bp;
    if (!cached) {
        wget_ctx wc = {g, c->w->data, c->wzp};
        kg_pack_i((int32_t *)bpk, K, g->OC, c_wget, &wc);
        for (uint64_t i = 0; i < c->w->count; i++) {
            int64_t v = llabs((int64_t)((const int8_t *)c->w->data)[i] - c->wzp);
            if (v > wmax) wmax = v;
        }
        if (blk) memcpy(blk, &wmax, sizeof wmax);
    }
    /* int32 accumulation is exact when no partial sum can pass 2^31 */
    bool acc64 = c->acc == CTOSA_DTYPE_INT48 || (double)K * (double)amax * (double)wmax > 2147483647.0;
    void *acc = malloc((size_t)(c->out->count ? c->out->count : 1) * (acc64 ? 8 : 4));
    ctosa_error *e = NULL;
    if (!acc) {
        e = interp_conv_nomem(o);
    } else {
        rows_ctx rc = {.g = g, .base = (const char *)in16, .esz = sizeof(int16_t), .zero = zero};
        kg_job job = {.M = g->N * g->OD * g->OH * g->OW,
                      .N = g->OC,
                      .Kt = g->IC,
                      .T = (int32_t)T,
                      .rows = c_rows,
                      .rctx = &rc,
                      .bpack = bpk,
                      .out = acc,
                      .ldo = g->OC,
                      .acc64 = acc64};
        if (!kg_run_i(o->ctx, &job)) e = interp_conv_nomem(o);
        else e = interp_conv_int_epilogue(o, c, acc, acc64 ? ACC_I64 : ACC_I32, g->OC);
    }
    free(acc);
    free(in16);
    free(bp);
    free(zero);
    return e;
}

/* Integer reference: int64 sums of (x - izp) * (w - wzp), one output at a
 * time in the pseudocode's order; the epilogue checks the ranges. */
ctosa_error *interp_conv_ref_int(const interp_op *o, const cgeom *g, const cargs *c) {
    int64_t *acc = malloc((size_t)(c->out->count ? c->out->count : 1) * sizeof(int64_t));
    if (!acc) return interp_conv_nomem(o);
    int64_t nic = g->kind == CK_DEPTHWISE ? 1 : g->IC;
    ctosa_dtype ti = c->in->dtype, tw = c->w->dtype;
    size_t oi = 0;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t od = 0; od < g->OD; od++)
            for (int64_t oy = 0; oy < g->OH; oy++)
                for (int64_t ox = 0; ox < g->OW; ox++)
                    for (int64_t oc = 0; oc < g->OC; oc++) {
                        int64_t s = 0, tap = 0;
                        for (int64_t kd = 0; kd < g->KD; kd++)
                            for (int64_t ky = 0; ky < g->KH; ky++)
                                for (int64_t kx = 0; kx < g->KW; kx++, tap++) {
                                    int64_t z, y, x;
                                    if (!cg_in(g, od, oy, ox, kd, ky, kx, &z, &y, &x)) continue;
                                    for (int64_t i = 0; i < nic; i++) {
                                        int64_t ic = g->kind == CK_DEPTHWISE ? oc / g->M : i;
                                        size_t ii =
                                            (size_t)((((n * g->ID + z) * g->IH + y) * g->IW + x) * g->IC +
                                                     ic);
                                        s += (im_load_i(ti, c->in->data, ii) - c->izp) *
                                             (im_load_i(tw, c->w->data, c_widx(g, oc, tap, i)) - c->wzp);
                                    }
                                }
                        acc[oi++] = s;
                    }
    ctosa_error *e = interp_conv_int_epilogue(o, c, acc, ACC_I64, g->OC);
    free(acc);
    return e;
}

/* Runs the TRANSPOSE offered to this convolution (interp_op.pre), which
 * fills its input. */
static ctosa_error *c_pre_run(const interp_op *o) {
    const interp_fused_pre *f = o->pre;
    interp_op t = {.ctx = o->ctx,
                   .op = f->op,
                   .index = o->index,
                   .where = f->where,
                   .in = f->in,
                   .n_in = 1,
                   .out = f->out,
                   .n_out = 1,
                   .reference = o->reference};
    return f->fn(&t);
}

static ctosa_error *c_dispatch(const interp_op *o, const cgeom *g, const cargs *c) {
    if (c->out->count == 0) return NULL;
    /* the offered TRANSPOSE: the engine's padded copy of an input whose
     * channels are not a multiple of 4 reads the NCHW tensor itself; every
     * other path reads the convolution's input, which it then fills first */
    const itensor *x = o->pre ? o->pre->in[0] : NULL;
    const itensor *nchw = x && c->in->dtype == CTOSA_DTYPE_INT8 && x->dtype == CTOSA_DTYPE_INT8 &&
                                  g->IC % 4 != 0 && x->rank == 4 && x->shape[0] == g->N &&
                                  x->shape[1] == g->IC && x->shape[2] == g->IH && x->shape[3] == g->IW
                              ? x
                              : NULL;
    ctosa_error *e;
    if (x && !nchw && (e = c_pre_run(o))) return e;
    if (o->reference)
        return ctosa_dtype_is_float(c->in->dtype) ? interp_conv_ref_float(o, g, c)
                                                  : interp_conv_ref_int(o, g, c);
    if (ctosa_dtype_is_float(c->in->dtype)) {
        if (c->acc == CTOSA_DTYPE_FP32) return c_run_gemm_float(o, g, c);
        return interp_conv_ref_float(o, g, c);
    }
    if (c->in->dtype == CTOSA_DTYPE_INT8) {
        bool done;
        if ((e = c_run_int8_q8(o, g, c, nchw, &done)) || done) return e;
        if (nchw && (e = c_pre_run(o))) return e;
        return c_run_int8_float(o, g, c);
    }
    return c_run_gemm_int(o, g, c);
}

ctosa_error *interp_k_CONV2D(const interp_op *o) {
    cargs c;
    ctosa_error *e = interp_conv_common(o, &c, 4);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    if ((e = interp_conv_vec(o, "pad", a->pad, 4)) || (e = interp_conv_vec(o, "stride", a->stride, 2)) ||
        (e = interp_conv_vec(o, "dilation", a->dilation, 2)))
        return e;
    cgeom g = {.kind = CK_CONV,
               .N = c.in->shape[0],
               .ID = 1,
               .IH = c.in->shape[1],
               .IW = c.in->shape[2],
               .IC = c.in->shape[3],
               .OD = 1,
               .OH = c.out->shape[1],
               .OW = c.out->shape[2],
               .OC = c.out->shape[3],
               .KD = 1,
               .KH = c.w->shape[1],
               .KW = c.w->shape[2],
               .M = 1,
               .sd = 1,
               .sy = a->stride.v[0],
               .sx = a->stride.v[1],
               .dd = 1,
               .dy = a->dilation.v[0],
               .dx = a->dilation.v[1],
               .pd = 0,
               .pt = a->pad.v[0],
               .pl = a->pad.v[2]};
    if (c.w->shape[0] != g.OC || c.w->shape[3] != g.IC || c.out->shape[0] != g.N)
        return interp_fail(
            o, "weight [%lld,%lld,%lld,%lld] does not match input channels %lld / output channels %lld",
            (long long)c.w->shape[0], (long long)c.w->shape[1], (long long)c.w->shape[2],
            (long long)c.w->shape[3], (long long)g.IC, (long long)g.OC);
    if (c.bias->count != (uint64_t)g.OC && c.bias->count != 1)
        return interp_fail(o, "bias has %llu elements, expected %lld or 1", (unsigned long long)c.bias->count,
                           (long long)g.OC);
    if (a->pad.v[0] < 0 || a->pad.v[1] < 0 || a->pad.v[2] < 0 || a->pad.v[3] < 0)
        return interp_fail(o, "negative pad");
    if (g.sy < 1 || g.sx < 1) return interp_fail(o, "stride must be >= 1");
    if (g.dy < 1 || g.dx < 1) return interp_fail(o, "dilation must be >= 1");
    if ((e = interp_conv_out_dim(o, "height", g.IH, a->pad.v[0], a->pad.v[1], g.KH, g.dy, g.sy, g.OH)) ||
        (e = interp_conv_out_dim(o, "width", g.IW, a->pad.v[2], a->pad.v[3], g.KW, g.dx, g.sx, g.OW)))
        return e;
    return c_dispatch(o, &g, &c);
}

ctosa_error *interp_k_CONV3D(const interp_op *o) {
    cargs c;
    ctosa_error *e = interp_conv_common(o, &c, 5);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    if ((e = interp_conv_vec(o, "pad", a->pad, 6)) || (e = interp_conv_vec(o, "stride", a->stride, 3)) ||
        (e = interp_conv_vec(o, "dilation", a->dilation, 3)))
        return e;
    cgeom g = {.kind = CK_CONV,
               .N = c.in->shape[0],
               .ID = c.in->shape[1],
               .IH = c.in->shape[2],
               .IW = c.in->shape[3],
               .IC = c.in->shape[4],
               .OD = c.out->shape[1],
               .OH = c.out->shape[2],
               .OW = c.out->shape[3],
               .OC = c.out->shape[4],
               .KD = c.w->shape[1],
               .KH = c.w->shape[2],
               .KW = c.w->shape[3],
               .M = 1,
               .sd = a->stride.v[0],
               .sy = a->stride.v[1],
               .sx = a->stride.v[2],
               .dd = a->dilation.v[0],
               .dy = a->dilation.v[1],
               .dx = a->dilation.v[2],
               .pd = a->pad.v[0],
               .pt = a->pad.v[2],
               .pl = a->pad.v[4]};
    if (c.w->shape[0] != g.OC || c.w->shape[4] != g.IC || c.out->shape[0] != g.N)
        return interp_fail(o, "weight shape does not match input channels %lld / output channels %lld",
                           (long long)g.IC, (long long)g.OC);
    if (c.bias->count != (uint64_t)g.OC && c.bias->count != 1)
        return interp_fail(o, "bias has %llu elements, expected %lld or 1", (unsigned long long)c.bias->count,
                           (long long)g.OC);
    for (int i = 0; i < 6; i++)
        if (a->pad.v[i] < 0) return interp_fail(o, "negative pad");
    if (g.sd < 1 || g.sy < 1 || g.sx < 1) return interp_fail(o, "stride must be >= 1");
    if (g.dd < 1 || g.dy < 1 || g.dx < 1) return interp_fail(o, "dilation must be >= 1");
    if ((e = interp_conv_out_dim(o, "depth", g.ID, a->pad.v[0], a->pad.v[1], g.KD, g.dd, g.sd, g.OD)) ||
        (e = interp_conv_out_dim(o, "height", g.IH, a->pad.v[2], a->pad.v[3], g.KH, g.dy, g.sy, g.OH)) ||
        (e = interp_conv_out_dim(o, "width", g.IW, a->pad.v[4], a->pad.v[5], g.KW, g.dx, g.sx, g.OW)))
        return e;
    return c_dispatch(o, &g, &c);
}

ctosa_error *interp_k_TRANSPOSE_CONV2D(const interp_op *o) {
    cargs c;
    ctosa_error *e = interp_conv_common(o, &c, 4);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    if ((e = interp_conv_vec(o, "out_pad", a->out_pad, 4)) ||
        (e = interp_conv_vec(o, "stride", a->stride, 2)))
        return e;
    cgeom g = {.kind = CK_TRANSPOSE,
               .N = c.in->shape[0],
               .ID = 1,
               .IH = c.in->shape[1],
               .IW = c.in->shape[2],
               .IC = c.in->shape[3],
               .OD = 1,
               .OH = c.out->shape[1],
               .OW = c.out->shape[2],
               .OC = c.out->shape[3],
               .KD = 1,
               .KH = c.w->shape[1],
               .KW = c.w->shape[2],
               .M = 1,
               .sd = 1,
               .sy = a->stride.v[0],
               .sx = a->stride.v[1],
               .dd = 1,
               .dy = 1,
               .dx = 1,
               .pt = a->out_pad.v[0],
               .pl = a->out_pad.v[2]};
    if (c.w->shape[0] != g.OC || c.w->shape[3] != g.IC || c.out->shape[0] != g.N)
        return interp_fail(o, "weight shape does not match input channels %lld / output channels %lld",
                           (long long)g.IC, (long long)g.OC);
    if (c.bias->count != (uint64_t)g.OC && c.bias->count != 1)
        return interp_fail(o, "bias has %llu elements, expected %lld or 1", (unsigned long long)c.bias->count,
                           (long long)g.OC);
    const int32_t *op = a->out_pad.v;
    if (op[0] <= -g.KH || op[1] <= -g.KH || op[2] <= -g.KW || op[3] <= -g.KW)
        return interp_fail(o, "out_pad must be greater than minus the kernel size");
    if (g.sy < 1 || g.sx < 1) return interp_fail(o, "stride must be >= 1");
    if (g.OH != (g.IH - 1) * g.sy + op[0] + op[1] + g.KH)
        return interp_fail(o, "output height %lld, expected %lld", (long long)g.OH,
                           (long long)((g.IH - 1) * g.sy + op[0] + op[1] + g.KH));
    if (g.OW != (g.IW - 1) * g.sx + op[2] + op[3] + g.KW)
        return interp_fail(o, "output width %lld, expected %lld", (long long)g.OW,
                           (long long)((g.IW - 1) * g.sx + op[2] + op[3] + g.KW));
    return c_dispatch(o, &g, &c);
}
