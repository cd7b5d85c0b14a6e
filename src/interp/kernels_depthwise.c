/* kernels_depthwise.c - DEPTHWISE_CONV2D: a channel-vectorised direct
 * loop for fp32 and the integer types (int8 on VPDPBUSD, or read directly
 * into fp32 sums, when the sums provably fit), on the geometry and helpers
 * of kernels_conv.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/kernels_conv.h"
#include "interp/kernels_depthwise_f32.h"
#include "util/floatfmt.h"

/* ------------------------------------------------------------ DEPTHWISE */

typedef struct dw_ctx {
    const cgeom *g;
    const cargs *c;
    const float *bias; /* fp32 output: OC values, else NULL */
    const int16_t *in16;
    const int32_t *w32;
    void *acc;
    bool acc64;
    bool tail_only; /* blocked loops: only the channels past the last full 16 */
    /* fp32 3x3 loops: the full channel blocks of [c0, c1) only, and the
     * channel tail only when c1 is C (c1 0: every channel) */
    int64_t c0, c1;
} dw_ctx;

/* Output columns [lo, hi) whose tap at kernel column offset base = kx*dx -
 * pad_left reads inside the input row (x = ox*sx + base in [0, IW)). */
static inline void dw_cols(const cgeom *g, int64_t base, int64_t *lo, int64_t *hi) {
    int64_t l = base >= 0 ? 0 : (-base + g->sx - 1) / g->sx;
    int64_t h = g->IW - base <= 0 ? 0 : (g->IW - base + g->sx - 1) / g->sx;
    if (h > g->OW) h = g->OW;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

typedef float dw_vf __attribute__((vector_size(64)));
typedef int32_t dw_vi __attribute__((vector_size(64)));
typedef int16_t dw_vh __attribute__((vector_size(32)));
#define DW_MAX_TAPS 49 /* up to 7x7 kernels use the register-blocked loops */

/* Depthwise with multiplier 1, channels in blocks of 16: one output vector
 * accumulates all taps in a register, the block's tap weights stay in
 * registers across the whole output row. Channels past the last full block
 * take the scalar loop at the end. */
static inline IM_INLINE void dw_f_blocked_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    const float *in = d->c->in->data, *w = d->c->w->data;
    float *out = d->c->out->data;
    const int64_t C = g->IC, KH = g->KH, KW = g->KW;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        float *orow = out + ((n * g->OH) + oy) * g->OW * C;
        for (int64_t cb = d->tail_only ? C - C % 16 : 0; cb < C; cb += 16) {
            int64_t nc = C - cb < 16 ? C - cb : 16;
            if (nc == 16) {
                dw_vf wv[DW_MAX_TAPS], bv = {0};
                for (int64_t t = 0; t < KH * KW; t++) memcpy(&wv[t], w + t * C + cb, sizeof(dw_vf));
                if (d->bias) memcpy(&bv, d->bias + cb, sizeof bv);
                for (int64_t ox = 0; ox < g->OW; ox++) {
                    dw_vf acc = bv;
                    for (int64_t ky = 0; ky < KH; ky++) {
                        int64_t y = oy * g->sy - g->pt + ky * g->dy;
                        if (y < 0 || y >= g->IH) continue;
                        const float *irow = in + ((n * g->IH + y) * g->IW) * C + cb;
                        for (int64_t kx = 0; kx < KW; kx++) {
                            int64_t x = ox * g->sx - g->pl + kx * g->dx;
                            if (x < 0 || x >= g->IW) continue;
                            dw_vf v;
                            memcpy(&v, irow + x * C, sizeof v);
                            acc += v * wv[ky * KW + kx];
                        }
                    }
                    memcpy(orow + ox * C + cb, &acc, sizeof acc);
                }
            } else {
                for (int64_t ox = 0; ox < g->OW; ox++)
                    for (int64_t c = cb; c < C; c++) {
                        float acc = d->bias ? d->bias[c] : 0.0f;
                        for (int64_t ky = 0; ky < KH; ky++) {
                            int64_t y = oy * g->sy - g->pt + ky * g->dy;
                            if (y < 0 || y >= g->IH) continue;
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t x = ox * g->sx - g->pl + kx * g->dx;
                                if (x < 0 || x >= g->IW) continue;
                                acc += in[((n * g->IH + y) * g->IW + x) * C + c] * w[(ky * KW + kx) * C + c];
                            }
                        }
                        orow[ox * C + c] = acc;
                    }
            }
        }
    }
}
IM_MULTIVERSION(dw_f_blocked, dw_f_blocked_impl)

/* The same for the integer path with int32 accumulators (d->acc). */
static inline IM_INLINE void dw_i_blocked_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    const int16_t *in = d->in16;
    const int32_t *w = d->w32;
    const int64_t C = g->IC, KH = g->KH, KW = g->KW;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        int32_t *orow = (int32_t *)d->acc + ((n * g->OH) + oy) * g->OW * C;
        for (int64_t cb = d->tail_only ? C - C % 16 : 0; cb < C; cb += 16) {
            int64_t nc = C - cb < 16 ? C - cb : 16;
            if (nc == 16) {
                dw_vi wv[DW_MAX_TAPS];
                for (int64_t t = 0; t < KH * KW; t++) memcpy(&wv[t], w + t * C + cb, sizeof(dw_vi));
                for (int64_t ox = 0; ox < g->OW; ox++) {
                    dw_vi acc = {0};
                    for (int64_t ky = 0; ky < KH; ky++) {
                        int64_t y = oy * g->sy - g->pt + ky * g->dy;
                        if (y < 0 || y >= g->IH) continue;
                        const int16_t *irow = in + ((n * g->IH + y) * g->IW) * C + cb;
                        for (int64_t kx = 0; kx < KW; kx++) {
                            int64_t x = ox * g->sx - g->pl + kx * g->dx;
                            if (x < 0 || x >= g->IW) continue;
                            dw_vh v;
                            memcpy(&v, irow + x * C, sizeof v);
                            acc += __builtin_convertvector(v, dw_vi) * wv[ky * KW + kx];
                        }
                    }
                    memcpy(orow + ox * C + cb, &acc, sizeof acc);
                }
            } else {
                for (int64_t ox = 0; ox < g->OW; ox++)
                    for (int64_t c = cb; c < C; c++) {
                        int32_t acc = 0;
                        for (int64_t ky = 0; ky < KH; ky++) {
                            int64_t y = oy * g->sy - g->pt + ky * g->dy;
                            if (y < 0 || y >= g->IH) continue;
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t x = ox * g->sx - g->pl + kx * g->dx;
                                if (x < 0 || x >= g->IW) continue;
                                acc += (int32_t)in[((n * g->IH + y) * g->IW + x) * C + c] *
                                       w[(ky * KW + kx) * C + c];
                            }
                        }
                        orow[ox * C + c] = acc;
                    }
            }
        }
    }
}
IM_MULTIVERSION(dw_i_blocked, dw_i_blocked_impl)

/* 3x3 depthwise, multiplier 1, float: the nine weight vectors live in
 * registers and interior output columns run without bounds checks. Border
 * columns and a channel tail fall back to the per-tap checked loop. */
#define DW3_BODY(VT, LOADV, ACC_INIT, OUT_T)                                                                \
    for (size_t row = begin; row < end; row++) {                                                            \
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;                                        \
        OUT_T *orow = (OUT_T *)outp + ((n * g->OH) + oy) * g->OW * C;                                       \
        int64_t base0 = -g->pl, sx = g->sx, dxc = g->dx * C;                                                \
        /* interior: x = ox*sx - pl >= 0 and x + 2*dx < IW */                                               \
        int64_t lo = base0 >= 0 ? 0 : (-base0 + sx - 1) / sx;                                               \
        int64_t lim = g->IW - 2 * g->dx - base0; /* ox*sx < lim */                                          \
        int64_t hi = lim <= 0 ? 0 : (lim + sx - 1) / sx;                                                    \
        if (hi > g->OW) hi = g->OW;                                                                         \
        if (lo > hi) lo = hi;                                                                               \
        for (int64_t cb = cb0; cb + 16 <= cb1; cb += 16) {                                                  \
            VT wv[9], init = {0};                                                                           \
            _Pragma("GCC unroll 9") for (int t = 0; t < 9; t++) memcpy(&wv[t], w + t * C + cb, sizeof(VT)); \
            ACC_INIT;                                                                                       \
            const IN_T *rp[3];                                                                              \
            _Pragma("GCC unroll 3") for (int ky = 0; ky < 3; ky++) {                                        \
                int64_t y = oy * g->sy - g->pt + ky * g->dy;                                                \
                rp[ky] = y >= 0 && y < g->IH ? in + ((n * g->IH + y) * g->IW) * C + cb : NULL;              \
            }                                                                                               \
            for (int64_t ox = 0; ox < g->OW; ox++) {                                                        \
                VT acc = init;                                                                              \
                int64_t x0 = ox * sx + base0;                                                               \
                if (ox >= lo && ox < hi) {                                                                  \
                    _Pragma("GCC unroll 3") for (int ky = 0; ky < 3; ky++) {                                \
                        if (!rp[ky]) continue;                                                              \
                        const IN_T *p = rp[ky] + x0 * C;                                                    \
                        acc += LOADV(p) * wv[ky * 3] + LOADV(p + dxc) * wv[ky * 3 + 1] +                    \
                               LOADV(p + 2 * dxc) * wv[ky * 3 + 2];                                         \
                    }                                                                                       \
                } else {                                                                                    \
                    _Pragma("GCC unroll 3") for (int ky = 0; ky < 3; ky++) {                                \
                        if (!rp[ky]) continue;                                                              \
                        _Pragma("GCC unroll 3") for (int kx = 0; kx < 3; kx++) {                            \
                            int64_t x = x0 + kx * g->dx;                                                    \
                            if (x < 0 || x >= g->IW) continue;                                              \
                            acc += LOADV(rp[ky] + x * C) * wv[ky * 3 + kx];                                 \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
                memcpy(orow + ox * C + cb, &acc, sizeof acc);                                               \
            }                                                                                               \
        }                                                                                                   \
    }

/* Unaligned vector loads (macros: a function returning a 64-byte vector
 * would change the ABI between the ISA variants). */
#define dw_ldf(p)                    \
    ({                               \
        dw_vf v_;                    \
        memcpy(&v_, (p), sizeof v_); \
        v_;                          \
    })
#define dw_ldh(p)                           \
    ({                                      \
        dw_vh h_;                           \
        memcpy(&h_, (p), sizeof h_);        \
        __builtin_convertvector(h_, dw_vi); \
    })

static inline IM_INLINE void dw3_f_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    typedef float IN_T;
    const float *in = d->c->in->data, *w = d->c->w->data;
    void *outp = d->c->out->data;
    const int64_t C = g->IC, cb0 = d->c1 ? d->c0 : 0, cb1 = d->c1 ? d->c1 : C;
    DW3_BODY(dw_vf, dw_ldf, if (d->bias) memcpy(&init, d->bias + cb, sizeof init), float)
}
IM_MULTIVERSION(dw3_f, dw3_f_impl)

/* 3x3, stride 1, dilation 1, float (the MobileNet case): interior output
 * columns in groups of four, so the six input vectors of a kernel row are
 * loaded once and feed twelve multiply-adds into four independent
 * accumulators. Each output sums its taps in the same order as dw3_f. */
static inline IM_INLINE void dw3s1_f_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    const float *in = d->c->in->data, *w = d->c->w->data;
    float *out = d->c->out->data;
    const int64_t C = g->IC, pl = g->pl, cb0 = d->c1 ? d->c0 : 0, cb1 = d->c1 ? d->c1 : C;
    /* interior: ox - pl >= 0 and ox - pl + 2 < IW */
    int64_t lo = pl, hi = g->IW - 2 + pl;
    if (hi > g->OW) hi = g->OW;
    if (lo > hi) lo = hi;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        float *orow = out + ((n * g->OH) + oy) * g->OW * C;
        for (int64_t cb = cb0; cb + 16 <= cb1; cb += 16) {
            dw_vf wv[9], init = {0};
            _Pragma("GCC unroll 9") for (int t = 0; t < 9; t++) memcpy(&wv[t], w + t * C + cb, sizeof(dw_vf));
            if (d->bias) memcpy(&init, d->bias + cb, sizeof init);
            const float *rp[3];
            int nr = 0;
            dw_vf rw[9];
            for (int ky = 0; ky < 3; ky++) {
                int64_t y = oy * g->sy - g->pt + ky;
                if (y < 0 || y >= g->IH) continue;
                rp[nr] = in + ((n * g->IH + y) * g->IW) * C + cb;
                rw[nr * 3] = wv[ky * 3];
                rw[nr * 3 + 1] = wv[ky * 3 + 1];
                rw[nr * 3 + 2] = wv[ky * 3 + 2];
                nr++;
            }
            for (int64_t ox = 0; ox < g->OW; ox++) {
                if (ox == lo) {
                    for (; ox + 4 <= hi; ox += 4) {
                        dw_vf a0 = init, a1 = init, a2 = init, a3 = init;
                        for (int r = 0; r < nr; r++) {
                            const float *p = rp[r] + (ox - pl) * C;
                            dw_vf v0 = dw_ldf(p), v1 = dw_ldf(p + C), v2 = dw_ldf(p + 2 * C);
                            dw_vf v3 = dw_ldf(p + 3 * C), v4 = dw_ldf(p + 4 * C), v5 = dw_ldf(p + 5 * C);
                            dw_vf w0 = rw[r * 3], w1 = rw[r * 3 + 1], w2 = rw[r * 3 + 2];
                            a0 += v0 * w0 + v1 * w1 + v2 * w2;
                            a1 += v1 * w0 + v2 * w1 + v3 * w2;
                            a2 += v2 * w0 + v3 * w1 + v4 * w2;
                            a3 += v3 * w0 + v4 * w1 + v5 * w2;
                        }
                        float *o = orow + ox * C + cb;
                        memcpy(o, &a0, sizeof a0);
                        memcpy(o + C, &a1, sizeof a1);
                        memcpy(o + 2 * C, &a2, sizeof a2);
                        memcpy(o + 3 * C, &a3, sizeof a3);
                    }
                    if (ox >= g->OW) break;
                }
                dw_vf acc = init;
                int64_t x0 = ox - pl;
                if (ox >= lo && ox < hi) {
                    for (int r = 0; r < nr; r++) {
                        const float *p = rp[r] + x0 * C;
                        acc += dw_ldf(p) * rw[r * 3] + dw_ldf(p + C) * rw[r * 3 + 1] +
                               dw_ldf(p + 2 * C) * rw[r * 3 + 2];
                    }
                } else {
                    for (int r = 0; r < nr; r++)
                        for (int kx = 0; kx < 3; kx++) {
                            int64_t x = x0 + kx;
                            if (x < 0 || x >= g->IW) continue;
                            acc += dw_ldf(rp[r] + x * C) * rw[r * 3 + kx];
                        }
                }
                memcpy(orow + ox * C + cb, &acc, sizeof acc);
            }
        }
    }
}
IM_MULTIVERSION(dw3s1_f, dw3s1_f_impl)

static inline IM_INLINE void dw3_i_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    typedef int16_t IN_T;
    const int16_t *in = d->in16;
    const int32_t *w = d->w32;
    void *outp = d->acc;
    const int64_t C = g->IC, cb0 = 0, cb1 = C;
    DW3_BODY(dw_vi, dw_ldh, (void)0, int32_t)
}
IM_MULTIVERSION(dw3_i, dw3_i_impl)

/* Runs the 3x3 fast loop on full channel blocks, then the generic blocked
 * loop (which also handles the channel tail) when C is not a multiple of 16. */
static void dw_f_tail(void *arg, size_t begin, size_t end) {
    dw_ctx t = *(const dw_ctx *)arg;
    t.tail_only = true;
    dw_f_blocked(&t, begin, end);
}
static void dw_i_tail(void *arg, size_t begin, size_t end) {
    dw_ctx t = *(const dw_ctx *)arg;
    t.tail_only = true;
    dw_i_blocked(&t, begin, end);
}
static void dw3_f_rows(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    if (d->g->IC >= 16 && d->g->sx == 1 && d->g->dx == 1 && d->g->dy == 1) dw3s1_f(arg, begin, end);
    else if (d->g->IC >= 16) dw3_f(arg, begin, end);
    if (d->g->IC % 16 && (!d->c1 || d->c1 == d->g->IC)) dw_f_tail(arg, begin, end);
}
static void dw3_i_rows(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    if (d->g->IC >= 16) dw3_i(arg, begin, end);
    if (d->g->IC % 16) dw_i_tail(arg, begin, end);
}

/* Output rows (n, oy) of the fp32-accumulating depthwise convolution. Taps
 * are the outer loop and output pixels the inner one, so a tap's weights
 * stay in registers across the row and no pixel needs a bounds check; the
 * channel loop is contiguous in input, weight and output. */
static inline IM_INLINE void dw_float_rows_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    const float *in = d->c->in->data, *w = d->c->w->data;
    float *out = d->c->out->data;
    const int64_t C = g->IC, M = g->M, OC = g->OC, sx = g->sx;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        float *orow = out + ((n * g->OH) + oy) * g->OW * OC;
        for (int64_t ox = 0; ox < g->OW; ox++) {
            if (d->bias) memcpy(orow + ox * OC, d->bias, (size_t)OC * sizeof(float));
            else memset(orow + ox * OC, 0, (size_t)OC * sizeof(float));
        }
        for (int64_t ky = 0; ky < g->KH; ky++) {
            int64_t y = oy * g->sy - g->pt + ky * g->dy;
            if (y < 0 || y >= g->IH) continue;
            const float *irow = in + (n * g->IH + y) * g->IW * C;
            for (int64_t kx = 0; kx < g->KW; kx++) {
                int64_t base = kx * g->dx - g->pl, lo, hi;
                dw_cols(g, base, &lo, &hi);
                const float *restrict wp = w + (ky * g->KW + kx) * OC;
                if (M == 1) {
                    for (int64_t ox = lo; ox < hi; ox++) {
                        const float *restrict ip = irow + (ox * sx + base) * C;
                        float *restrict op = orow + ox * OC;
                        for (int64_t ch = 0; ch < C; ch++) op[ch] += ip[ch] * wp[ch];
                    }
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) {
                        const float *restrict ip = irow + (ox * sx + base) * C;
                        float *restrict op = orow + ox * OC;
                        for (int64_t ch = 0; ch < C; ch++)
                            for (int64_t m = 0; m < M; m++) op[ch * M + m] += ip[ch] * wp[ch * M + m];
                    }
                }
            }
        }
    }
}
IM_MULTIVERSION(dw_float_rows, dw_float_rows_impl)

static inline IM_INLINE void dw_int_rows_impl(void *arg, size_t begin, size_t end) {
    const dw_ctx *d = arg;
    const cgeom *g = d->g;
    const int64_t C = g->IC, M = g->M, OC = g->OC, sx = g->sx;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        size_t rbase = (size_t)(((n * g->OH) + oy) * g->OW * OC);
        int32_t *o32 = (int32_t *)d->acc + rbase;
        int64_t *o64 = (int64_t *)d->acc + rbase;
        if (d->acc64) memset(o64, 0, (size_t)(g->OW * OC) * 8);
        else memset(o32, 0, (size_t)(g->OW * OC) * 4);
        for (int64_t ky = 0; ky < g->KH; ky++) {
            int64_t y = oy * g->sy - g->pt + ky * g->dy;
            if (y < 0 || y >= g->IH) continue;
            const int16_t *irow = d->in16 + (n * g->IH + y) * g->IW * C;
            for (int64_t kx = 0; kx < g->KW; kx++) {
                int64_t base = kx * g->dx - g->pl, lo, hi;
                dw_cols(g, base, &lo, &hi);
                const int32_t *restrict wp = d->w32 + (ky * g->KW + kx) * OC;
                for (int64_t ox = lo; ox < hi; ox++) {
                    const int16_t *restrict ip = irow + (ox * sx + base) * C;
                    if (d->acc64) {
                        int64_t *restrict op = o64 + ox * OC;
                        for (int64_t ch = 0; ch < C; ch++)
                            for (int64_t m = 0; m < M; m++)
                                op[ch * M + m] += (int64_t)ip[ch] * wp[ch * M + m];
                    } else if (M == 1) {
                        int32_t *restrict op = o32 + ox * OC;
                        for (int64_t ch = 0; ch < C; ch++) op[ch] += (int32_t)ip[ch] * wp[ch];
                    } else {
                        int32_t *restrict op = o32 + ox * OC;
                        for (int64_t ch = 0; ch < C; ch++)
                            for (int64_t m = 0; m < M; m++)
                                op[ch * M + m] += (int32_t)ip[ch] * wp[ch * M + m];
                    }
                }
            }
        }
    }
}
IM_MULTIVERSION(dw_int_rows, dw_int_rows_impl)

/* int8 depthwise, multiplier 1, straight from the int8 tensor: sixteen
 * channels per vector, bytes widened to fp32 as they are loaded, products
 * with the weights minus their zero point summed in fp32 registers and the
 * bias added to the int32 result. Every partial sum is an integer below
 * 2^24 (taps * 128 * 255 for sum(x * w), taps * 255 * 255 for sum((x -
 * izp) * w), taps <= 258), so fp32 adds them exactly in any order: interior
 * pixels sum x * w and subtract izp * sum(w) once, border pixels (some taps
 * in the padding, which contributes zero) subtract izp per tap. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* GCC scalarises the int8 -> fp32 vector conversion, so this path is
 * written for AVX-512 (VPMOVSXBD + VCVTDQ2PS) and taken only there. */
#define dw_ldb(p) ((dw_vf)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p)))))

typedef struct dw8_ctx {
    const cgeom *g;
    const int8_t *in;
    const float *w;      /* (w - wzp), [KH * KW][C] */
    const float *zsw;    /* izp * sum over taps of (w - wzp), [C] */
    const int32_t *bias; /* [C] */
    int32_t *out;
    float izp;
    kg_requant *rq; /* a fused RESCALE: bytes into rq->out instead of out */
    bool tail_only; /* only the channels past the last full 16 (dwq_rows did the rest) */
} dw8_ctx;

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) static void dw8_rows(void *arg, size_t begin,
                                                                                   size_t end) {
    const dw8_ctx *d = arg;
    const cgeom *g = d->g;
    const int8_t *in = d->in;
    const float *w = d->w;
    const int64_t C = g->IC, KH = g->KH, KW = g->KW, sx = g->sx, dxc = g->dx * C;
    /* interior columns: every kx tap inside the row */
    int64_t lo = g->pl > 0 ? (g->pl + sx - 1) / sx : 0;
    int64_t lim = g->IW - (KW - 1) * g->dx + g->pl; /* ox * sx < lim */
    int64_t hi = lim <= 0 ? 0 : (lim + sx - 1) / sx;
    if (hi > g->OW) hi = g->OW;
    if (lo > hi) lo = hi;
    const dw_vf zv = (dw_vf){0} + d->izp;
    kg_requant *rq = d->rq;
    const __m512i rzp = _mm512_set1_epi32(rq ? rq->ozp : 0), rlo = _mm512_set1_epi32(rq ? rq->lo : 0),
                  rhi = _mm512_set1_epi32(rq ? rq->hi : 0);
    __mmask16 rbad = 0;
    bool rbad1 = false;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        int32_t *orow = d->out + ((n * g->OH) + oy) * g->OW * C;
        uint8_t *orow8 = rq ? rq->out + ((n * g->OH) + oy) * g->OW * C : NULL;
        const int8_t *rp[DW_MAX_TAPS];
        bool all_rows = true;
        for (int64_t ky = 0; ky < KH; ky++) {
            int64_t y = oy * g->sy - g->pt + ky * g->dy;
            rp[ky] = y >= 0 && y < g->IH ? in + ((n * g->IH + y) * g->IW) * C : NULL;
            all_rows &= rp[ky] != NULL;
        }
        int64_t cb = d->tail_only ? C - C % 16 : 0;
        for (; cb + 16 <= C; cb += 16) {
            dw_vf wv[DW_MAX_TAPS], zsw;
            dw_vi bv;
            for (int64_t t = 0; t < KH * KW; t++) memcpy(&wv[t], w + t * C + cb, sizeof(dw_vf));
            memcpy(&zsw, d->zsw + cb, sizeof zsw);
            memcpy(&bv, d->bias + cb, sizeof bv);
            for (int64_t ox = 0; ox < g->OW; ox++) {
                dw_vf acc = {0};
                int64_t x0 = ox * sx - g->pl;
                if (all_rows && ox >= lo && ox < hi) {
                    for (int64_t ky = 0; ky < KH; ky++) {
                        const int8_t *p = rp[ky] + x0 * C + cb;
                        for (int64_t kx = 0; kx < KW; kx++) acc += dw_ldb(p + kx * dxc) * wv[ky * KW + kx];
                    }
                    acc -= zsw;
                } else {
                    for (int64_t ky = 0; ky < KH; ky++) {
                        if (!rp[ky]) continue;
                        for (int64_t kx = 0; kx < KW; kx++) {
                            int64_t x = x0 + kx * g->dx;
                            if (x < 0 || x >= g->IW) continue;
                            acc += (dw_ldb(rp[ky] + x * C + cb) - zv) * wv[ky * KW + kx];
                        }
                    }
                }
                dw_vi r = __builtin_convertvector(acc, dw_vi) + bv;
                if (rq) {
                    __m512i rv;
                    memcpy(&rv, &r, sizeof rv);
                    _mm_storeu_si128((__m128i *)(orow8 + ox * C + cb),
                                     _mm512_cvtepi32_epi8(kg_rqs16(rv, rq, cb / 16, rzp, rlo, rhi, &rbad)));
                } else {
                    memcpy(orow + ox * C + cb, &r, sizeof r);
                }
            }
        }
        for (; cb < C; cb++) /* channel tail */
            for (int64_t ox = 0; ox < g->OW; ox++) {
                float acc = 0;
                int64_t x0 = ox * sx - g->pl;
                for (int64_t ky = 0; ky < KH; ky++) {
                    if (!rp[ky]) continue;
                    for (int64_t kx = 0; kx < KW; kx++) {
                        int64_t x = x0 + kx * g->dx;
                        if (x < 0 || x >= g->IW) continue;
                        acc += ((float)rp[ky][x * C + cb] - d->izp) * w[(ky * KW + kx) * C + cb];
                    }
                }
                int32_t v = (int32_t)acc + d->bias[cb];
                if (rq) orow8[ox * C + cb] = (uint8_t)kg_rq1(v, rq, cb / 16, (int)(cb % 16), &rbad1);
                else orow[ox * C + cb] = v;
            }
    }
    if (rbad || rbad1) __atomic_store_n(&rq->bad, 1, __ATOMIC_RELAXED);
}

/* int8 depthwise, multiplier 1, on VPDPBUSD (unsigned byte times signed
 * byte, four products summed into each int32 lane): the kernel row's taps
 * are taken four at a time, so a 3x3 kernel costs three instructions per
 * sixteen outputs. The input row is turned once into the instruction's
 * layout: for output column ox and tap group gi, sixteen channels times the
 * four input bytes at x = ox*sx - pl + (4gi + j)*dx, j < 4, each as x + 128
 * (the sign bit flipped), with izp + 128 in the padding and a weight of 0
 * past the kernel's width. The padding so contributes (izp + 128) * w like
 * an input equal to the zero point, and the sum is corrected once per
 * channel: acc = bias - (128 + izp) * sum(w - wzp) + sum((x + 128) * (w -
 * wzp)), which is bias + sum((x - izp) * (w - wzp)) over the taps inside
 * the input, exactly (no partial sum can leave int32 under the bias bound
 * dw_run_int8 checks). Prepared rows are kept per worker in KH * dy slots
 * (the rows one output row reads fall in distinct slots), so with stride 1
 * each input row is prepared once per chunk of output rows. */
typedef struct dwq_ctx {
    const cgeom *g;
    const int8_t *in;
    const int8_t *wq;    /* [C16 / 16][KH][G] blocks of 16 lanes x 4 bytes */
    const int32_t *ib;   /* bias - (128 + izp) * sum over taps of (w - wzp), [C16] */
    const uint8_t *padq; /* a prepared row of padding: qbytes of izp + 128 */
    int32_t *out;
    int64_t C16, G, qbytes;
    uint8_t pad64[64]; /* (izp + 128) ^ 0x80, which is izp as a byte */
    bool vbmi;         /* dwq_prep_vbmi */
    kg_requant *rq;
    dw8_ctx *tail; /* channels past C16, or NULL */
    int failed;
} dwq_ctx;

/* The four input pointers of output column ox, tap group gi of input row
 * src (pst: bytes per 16-channel block, 0 for the padding vector). */
static inline __attribute__((always_inline)) void dwq_ptrs(const dwq_ctx *d, const int8_t *src, int64_t ox,
                                                           int64_t gi, const int8_t *p[4], int64_t pst[4]) {
    const cgeom *g = d->g;
    for (int j = 0; j < 4; j++) {
        int64_t x = ox * g->sx - g->pl + (4 * gi + j) * g->dx;
        bool in = x >= 0 && x < g->IW;
        p[j] = in ? src + x * g->IC : (const int8_t *)d->pad64;
        pst[j] = in ? 16 : 0;
    }
}

/* 16-channel blocks [c0, C16) of one column and tap group into o (block
 * cb at o + cb / 16 * step): four loads, eight unpacks. */
static inline __attribute__((always_inline)) void dwq_cols16(const int8_t *const p[4], const int64_t pst[4],
                                                             uint8_t *o, int64_t step, int64_t c0,
                                                             int64_t C16) {
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (int64_t cb = c0; cb < C16; cb += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(p[0] + cb / 16 * pst[0]));
        __m128i b = _mm_loadu_si128((const __m128i *)(p[1] + cb / 16 * pst[1]));
        __m128i c = _mm_loadu_si128((const __m128i *)(p[2] + cb / 16 * pst[2]));
        __m128i e = _mm_loadu_si128((const __m128i *)(p[3] + cb / 16 * pst[3]));
        __m128i abl = _mm_unpacklo_epi8(a, b), abh = _mm_unpackhi_epi8(a, b);
        __m128i cel = _mm_unpacklo_epi8(c, e), ceh = _mm_unpackhi_epi8(c, e);
        __m128i *ov = (__m128i *)(o + cb / 16 * step);
        _mm_storeu_si128(ov, _mm_xor_si128(_mm_unpacklo_epi16(abl, cel), flip));
        _mm_storeu_si128(ov + 1, _mm_xor_si128(_mm_unpackhi_epi16(abl, cel), flip));
        _mm_storeu_si128(ov + 2, _mm_xor_si128(_mm_unpacklo_epi16(abh, ceh), flip));
        _mm_storeu_si128(ov + 3, _mm_xor_si128(_mm_unpackhi_epi16(abh, ceh), flip));
    }
}

/* Input row (n, y) in dwq layout into q. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void dwq_prep(const dwq_ctx *d, int64_t n,
                                                                          int64_t y, uint8_t *restrict q) {
    const cgeom *g = d->g;
    const int64_t OW = g->OW, G = d->G, step = OW * G * 64;
    const int8_t *src = d->in + (n * g->IH + y) * g->IW * g->IC;
    for (int64_t ox = 0; ox < OW; ox++)
        for (int64_t gi = 0; gi < G; gi++) {
            const int8_t *p[4];
            int64_t pst[4];
            dwq_ptrs(d, src, ox, gi, p, pst);
            dwq_cols16(p, pst, q + (ox * G + gi) * 64, step, 0, d->C16);
        }
}

/* The same with AVX512-VBMI: 64 channels per step, each 16-channel block
 * put together by two two-table byte permutes and a byte blend (against
 * eight unpacks per 16 channels); the channels past the last multiple of
 * 64 as above. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
dwq_prep_vbmi(const dwq_ctx *d, int64_t n, int64_t y, uint8_t *restrict q) {
    const cgeom *g = d->g;
    const int64_t OW = g->OW, G = d->G, step = OW * G * 64, C16 = d->C16, C64 = C16 - C16 % 64;
    const int8_t *src = d->in + (n * g->IH + y) * g->IW * g->IC;
    /* block k, lane i: bytes 0, 1 from (a, b)[16k + i], bytes 2, 3 from
     * (c, e)[16k + i]; one index table picks (x, y)[16k + i] for both
     * halves of every lane */
    __m512i ix[4];
    for (int k = 0; k < 4; k++) {
        int8_t t[64];
        for (int i = 0; i < 16; i++) {
            t[4 * i] = t[4 * i + 2] = (int8_t)(16 * k + i);
            t[4 * i + 1] = t[4 * i + 3] = (int8_t)(64 + 16 * k + i);
        }
        ix[k] = _mm512_loadu_si512(t);
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __mmask64 upper = 0xCCCCCCCCCCCCCCCCull; /* bytes 2 and 3 of every lane */
    for (int64_t ox = 0; ox < OW; ox++)
        for (int64_t gi = 0; gi < G; gi++) {
            const int8_t *p[4];
            int64_t pst[4];
            dwq_ptrs(d, src, ox, gi, p, pst);
            uint8_t *o = q + (ox * G + gi) * 64;
            for (int64_t cb = 0; cb < C64; cb += 64) {
                __m512i a = _mm512_loadu_si512(p[0] + cb / 16 * pst[0]);
                __m512i b = _mm512_loadu_si512(p[1] + cb / 16 * pst[1]);
                __m512i c = _mm512_loadu_si512(p[2] + cb / 16 * pst[2]);
                __m512i e = _mm512_loadu_si512(p[3] + cb / 16 * pst[3]);
                for (int k = 0; k < 4; k++) {
                    __m512i ab = _mm512_permutex2var_epi8(a, ix[k], b);
                    __m512i ce = _mm512_permutex2var_epi8(c, ix[k], e);
                    _mm512_storeu_si512(o + (cb / 16 + k) * step,
                                        _mm512_xor_si512(_mm512_mask_mov_epi8(ab, upper, ce), flip));
                }
            }
            dwq_cols16(p, pst, o, step, C64, C16);
        }
}

#define DWQ_UNROLL 4
/* Store modes of dwq_rows_x (one compiled loop each): int32 sums, or the
 * fused RESCALE's bytes through kg_rqf16n with a saturating store, through
 * kg_rqf16, or through the general kg_rqs16. */
enum { DWQ_I32, DWQ_SAT, DWQ_FAST, DWQ_GEN };

/* Output rows [begin, end): KHc and Gc are the kernel height and tap
 * groups when known at compile time (the 3x3 case: every loop unrolled,
 * weights and sums in registers), else 0 (taken from the geometry). The
 * prepared rows and padq have DWQ_UNROLL * G * 64 spare bytes at the end,
 * so the last columns are computed DWQ_UNROLL at a time too (the extra
 * sums are never stored). */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))) void
dwq_rows_x(dwq_ctx *d, size_t begin, size_t end, const int KHc, const int Gc, const int mode) {
    const cgeom *g = d->g;
    const int64_t KH = KHc ? KHc : g->KH, G = Gc ? Gc : d->G, OW = g->OW, S = KH * g->dy;
    const int64_t qb = d->qbytes + DWQ_UNROLL * G * 64;
    uint8_t *buf = malloc((size_t)(S * qb) + 64);
    int64_t *tags = malloc((size_t)S * sizeof(int64_t));
    if (!buf || !tags) {
        free(buf);
        free(tags);
        __atomic_store_n(&d->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t s = 0; s < S; s++) tags[s] = -1;
    kg_requant *rq = d->rq;
    const __m512i rzp = _mm512_set1_epi32(rq ? rq->ozp : 0), rlo = _mm512_set1_epi32(rq ? rq->lo : 0),
                  rhi = _mm512_set1_epi32(rq ? rq->hi : 0);
    __mmask16 rbad = 0;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        const uint8_t *q[DW_MAX_TAPS];
        for (int64_t ky = 0; ky < KH; ky++) {
            int64_t y = oy * g->sy - g->pt + ky * g->dy;
            if (y < 0 || y >= g->IH) {
                q[ky] = d->padq;
                continue;
            }
            int64_t s = y % S, tag = n * g->IH + y;
            if (tags[s] != tag) {
                if (d->vbmi) dwq_prep_vbmi(d, n, y, buf + s * qb);
                else dwq_prep(d, n, y, buf + s * qb);
                tags[s] = tag;
            }
            q[ky] = buf + s * qb;
        }
        int32_t *orow = d->out + ((n * g->OH) + oy) * OW * g->IC;
        uint8_t *orow8 = rq ? rq->out + ((n * g->OH) + oy) * OW * g->IC : NULL;
        for (int64_t cb = 0; cb < d->C16; cb += 16) {
            __m512i wv[DW_MAX_TAPS * 2];
            const int64_t KG = KH * G;
            for (int64_t t = 0; t < KG; t++) wv[t] = _mm512_loadu_si512(d->wq + (cb / 16 * KG + t) * 64);
            const __m512i ibv = _mm512_loadu_si512(d->ib + cb);
            kg_rqf rf = {0};
            if (mode == DWQ_SAT || mode == DWQ_FAST) kg_rqf_load(&rf, rq->blk + cb / 16);
            const int64_t blk = cb / 16 * OW * G * 64;
            const uint8_t *qr[DW_MAX_TAPS];
            for (int64_t ky = 0; ky < KH; ky++) qr[ky] = q[ky] + blk;
            for (int64_t ox = 0; ox < OW; ox += DWQ_UNROLL) {
                const int nu = OW - ox < DWQ_UNROLL ? (int)(OW - ox) : DWQ_UNROLL;
                __m512i acc[DWQ_UNROLL];
                _Pragma("GCC unroll 4") for (int i = 0; i < DWQ_UNROLL; i++) acc[i] = ibv;
                for (int64_t ky = 0; ky < KH; ky++) {
                    const uint8_t *p = qr[ky] + ox * G * 64;
                    for (int64_t gi = 0; gi < G; gi++) {
                        const __m512i w = wv[ky * G + gi];
                        _Pragma("GCC unroll 4") for (int i = 0; i < DWQ_UNROLL; i++) acc[i] =
                            _mm512_dpbusd_epi32(acc[i], _mm512_loadu_si512(p + (i * G + gi) * 64), w);
                    }
                }
                _Pragma("GCC unroll 4") for (int i = 0; i < DWQ_UNROLL; i++) {
                    if (i >= nu) break;
                    const int64_t at = (ox + i) * g->IC + cb;
                    if (mode == DWQ_SAT)
                        _mm_storeu_si128((__m128i *)(orow8 + at),
                                         _mm512_cvtsepi32_epi8(kg_rqf16n(acc[i], &rf, rzp)));
                    else if (mode == DWQ_FAST)
                        _mm_storeu_si128((__m128i *)(orow8 + at),
                                         _mm512_cvtepi32_epi8(kg_rqf16(acc[i], &rf, rzp, rlo, rhi)));
                    else if (mode == DWQ_GEN)
                        _mm_storeu_si128(
                            (__m128i *)(orow8 + at),
                            _mm512_cvtepi32_epi8(kg_rqs16(acc[i], rq, cb / 16, rzp, rlo, rhi, &rbad)));
                    else _mm512_storeu_si512(orow + at, acc[i]);
                }
            }
        }
    }
    if (rbad) __atomic_store_n(&rq->bad, 1, __ATOMIC_RELAXED);
    free(buf);
    free(tags);
    if (d->tail) dw8_rows(d->tail, begin, end);
}

#define DWQ_MODES(NAME, KHc, Gc)                                                               \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))) static void NAME( \
        dwq_ctx *d, size_t begin, size_t end) {                                                \
        const kg_requant *rq = d->rq;                                                          \
        if (!rq) dwq_rows_x(d, begin, end, KHc, Gc, DWQ_I32);                                  \
        else if (rq->sat) dwq_rows_x(d, begin, end, KHc, Gc, DWQ_SAT);                         \
        else if (rq->fast) dwq_rows_x(d, begin, end, KHc, Gc, DWQ_FAST);                       \
        else dwq_rows_x(d, begin, end, KHc, Gc, DWQ_GEN);                                      \
    }
DWQ_MODES(dwq_rows_3x1, 3, 1)
DWQ_MODES(dwq_rows_any, 0, 0)

static void dwq_rows(void *arg, size_t begin, size_t end) {
    dwq_ctx *d = arg;
    if (d->g->KH == 3 && d->G == 1) dwq_rows_3x1(d, begin, end);
    else dwq_rows_any(d, begin, end);
}
/* The dwq weights of a constant weight tensor, prepared once and kept in
 * the op cache: [64-byte header: fits][sum over taps of (w - wzp), C16
 * int32, padded to 64 bytes][wq]. NULL when out of memory; *fits false
 * when some weight minus its zero point is not a signed byte. */
enum { DW_CACHE_Q8 = 16 }; /* op cache tag (kernels_conv.c uses 1..4) */
static const char *dwq_weights(const interp_op *o, const cgeom *g, const cargs *c, int64_t C16, int64_t G,
                               bool *fits) {
    const int64_t C = g->IC, KH = g->KH, KW = g->KW;
    size_t ssz = ((size_t)C16 * sizeof(int32_t) + 63) & ~(size_t)63, wsz = (size_t)(C16 * KH * G * 4);
    int64_t key[KG_CACHE_KEY] = {DW_CACHE_Q8, C, KH, KW, c->wzp, 0};
    const char *blk = c->w->is_const ? kg_cache_find(o, key) : NULL;
    if (!blk) {
        char *p = c->w->is_const ? kg_cache_new(o, key, 64 + ssz + wsz) : NULL;
        if (!p) p = kg_scratch(3, 64 + ssz + wsz);
        if (!p) return NULL;
        int64_t ok = 1;
        int32_t *sw = (int32_t *)(p + 64);
        int8_t *wq = (int8_t *)(p + 64 + ssz);
        memset(wq, 0, wsz);
        const int8_t *w8 = c->w->data;
        for (int64_t ch = 0; ch < C16; ch++) {
            int32_t s = 0;
            for (int64_t ky = 0; ky < KH; ky++)
                for (int64_t kx = 0; kx < KW; kx++) {
                    int32_t v = (int32_t)(w8[(ky * KW + kx) * C + ch] - c->wzp);
                    ok &= v >= -128 && v <= 127;
                    s += v;
                    wq[((ch / 16 * KH + ky) * G + kx / 4) * 64 + (ch % 16) * 4 + kx % 4] = (int8_t)v;
                }
            sw[ch] = s;
        }
        memcpy(p, &ok, sizeof ok);
        blk = p;
    }
    int64_t ok;
    memcpy(&ok, blk, sizeof ok);
    *fits = ok != 0;
    return blk;
}
#endif

/* Rows [0, n) as parts contiguous ranges, one per interp_parallel_for item. */
typedef struct dwq_split {
    void (*fn)(void *, size_t, size_t);
    void *arg;
    size_t n, parts;
} dwq_split;

static void dwq_parts(void *arg, size_t begin, size_t end) {
    const dwq_split *sp = arg;
    for (size_t i = begin; i < end; i++) {
        size_t b = sp->n * i / sp->parts, e = sp->n * (i + 1) / sp->parts;
        if (e > b) sp->fn(sp->arg, b, e);
    }
}

/* Runs the int8 paths above when they apply (int8 in, int32 out,
 * multiplier 1, at most DW_MAX_TAPS taps, and a bias that cannot overflow
 * int32 with a sum below 2^24, so neither REQUIRE of the epilogue can
 * fail); *done false otherwise. */
static ctosa_error *dw_run_int8(const interp_op *o, const cgeom *g, const cargs *c, bool par, bool *done) {
    *done = false;
#if defined(__x86_64__) && defined(__GNUC__)
    if (o->reference || im_isa() != 2 || c->in->dtype != CTOSA_DTYPE_INT8 ||
        c->out->dtype != CTOSA_DTYPE_INT32 || g->M != 1 || g->KH * g->KW > DW_MAX_TAPS ||
        c->acc != CTOSA_DTYPE_INT32)
        return NULL;
    const int64_t C = g->IC, T = g->KH * g->KW;
    const int32_t *b = c->bias->data;
    bool b1 = c->bias->count == 1;
    for (int64_t j = 0; j < (b1 ? 1 : C); j++)
        if (llabs((long long)b[j]) > INT32_MAX - (INT64_C(1) << 24)) return NULL;
    /* the VPDPBUSD path when every weight minus its zero point is a signed
     * byte and the padding value izp + 128 an unsigned one */
    dwq_ctx q = {.g = g, .in = c->in->data, .out = c->out->data, .C16 = C - C % 16, .G = (g->KW + 3) / 4};
    const char *qw = NULL;
    if (kg_q8_isa() == KG_Q8_AVX512VNNI && q.C16 > 0 && c->izp >= -128 && c->izp <= 127) {
        bool fits;
        if (!(qw = dwq_weights(o, g, c, q.C16, q.G, &fits))) return interp_conv_nomem(o);
        if (!fits) qw = NULL;
    }
    bool use_q = qw != NULL;
    /* the fp32 path's operands: every channel, or the tail past C16 */
    int64_t c0 = use_q ? q.C16 : 0;
    float *wf = malloc((size_t)(T * C + C) * sizeof(float));
    int32_t *bias = malloc((size_t)C * sizeof(int32_t));
    uint8_t *padq = NULL;
    if (use_q) {
        q.qbytes = q.C16 * g->OW * q.G * 4;
        memset(q.pad64, (int)(uint8_t)(int8_t)c->izp, sizeof q.pad64);
        q.vbmi = __builtin_cpu_supports("avx512vbmi");
        padq = malloc((size_t)(q.qbytes + DWQ_UNROLL * q.G * 64));
    }
    if (!wf || !bias || (use_q && !padq)) {
        free(wf);
        free(bias);
        free(padq);
        return interp_conv_nomem(o);
    }
    float *zsw = wf + T * C;
    const int8_t *w8 = c->w->data;
    for (int64_t ch = 0; ch < C; ch++) bias[ch] = b[b1 ? 0 : ch];
    for (int64_t ch = c0; ch < C; ch++) {
        int64_t sw = 0;
        for (int64_t t = 0; t < T; t++) {
            int64_t v = (int64_t)w8[t * C + ch] - c->wzp;
            wf[t * C + ch] = (float)v;
            sw += v;
        }
        zsw[ch] = (float)(c->izp * sw);
    }
    dw8_ctx d = {.g = g,
                 .in = c->in->data,
                 .w = wf,
                 .zsw = zsw,
                 .bias = bias,
                 .out = c->out->data,
                 .izp = (float)c->izp,
                 .tail_only = use_q};
    int32_t *ib = NULL;
    if (use_q) {
        /* ib = bias - (128 + izp) * sum(w - wzp), into the bias buffer */
        size_t ssz = ((size_t)q.C16 * sizeof(int32_t) + 63) & ~(size_t)63;
        const int32_t *sw = (const int32_t *)(qw + 64);
        if (!(ib = malloc((size_t)q.C16 * sizeof(int32_t)))) {
            free(wf), free(bias), free(padq);
            return interp_conv_nomem(o);
        }
        for (int64_t ch = 0; ch < q.C16; ch++)
            ib[ch] = (int32_t)(bias[ch] - (128 + c->izp) * (int64_t)sw[ch]);
        memset(padq, (int)(uint8_t)(c->izp + 128), (size_t)(q.qbytes + DWQ_UNROLL * q.G * 64));
        q.wq = (const int8_t *)(qw + 64 + ssz);
        q.ib = ib;
        q.padq = padq;
        q.tail = C % 16 ? &d : NULL;
    }
    size_t nrows = (size_t)(g->N * g->OH);
    void (*fn)(void *, size_t, size_t) = use_q ? dwq_rows : dw8_rows;
    void *arg = use_q ? (void *)&q : (void *)&d;
    /* one contiguous range of rows per thread: a worker prepares each
     * input row it reads once, where the pool's smaller chunks would
     * prepare the rows at every chunk's edges again (with stride 1 and a
     * chunk of one output row, three input rows for one) */
    int nt = par ? interp_threads(o->ctx) : 1;
    dwq_split sp = {fn, arg, nrows, (size_t)(nt > 0 ? nt : 1)};
    if (nrows < sp.parts) sp.parts = nrows;
    /* a fused RESCALE (interp_op.rescale) is applied as the rows are
     * stored; if a value breaks its REQUIRE the int32 output is computed
     * after all and the RESCALE runs and reports it */
    kg_requant rq;
    if (o->rescale && interp_rescale_requant(o->rescale, C, &rq)) {
        d.rq = q.rq = &rq;
        if (sp.parts > 1) interp_parallel_for(o->ctx, sp.parts, dwq_parts, &sp);
        else fn(arg, 0, nrows);
        d.rq = q.rq = NULL;
        o->rescale->done = !rq.bad && !q.failed;
    }
    if (!o->rescale || !o->rescale->done) {
        q.failed = 0;
        if (sp.parts > 1) interp_parallel_for(o->ctx, sp.parts, dwq_parts, &sp);
        else fn(arg, 0, nrows);
    }
    free(wf);
    free(bias);
    free(ib);
    free(padq);
    if (q.failed) return interp_conv_nomem(o);
    *done = true;
#else
    (void)o, (void)g, (void)c, (void)par;
#endif
    return NULL;
}

/* A fused CLAMP or SiLU (interp_op.post) on fp32 output rows, applied by
 * the same worker right after it computed them (the rows are still in
 * cache). */
typedef struct dw_post_job {
    void (*fn)(void *, size_t, size_t);
    void *d;
    const interp_post *post;
    float *out;
    size_t row_elems;
} dw_post_job;

static void dw_post_rows(void *arg, size_t begin, size_t end) {
    const dw_post_job *j = arg;
    j->fn(j->d, begin, end);
    kg_post_rows(j->post, j->out + begin * j->row_elems, (end - begin) * j->row_elems);
}

/* A layer of few output rows (7x7, 14x14) split into too few items to
 * share among the threads: items are (row, channel part) instead, parts of
 * whole 16-channel blocks, the channel tail (C not a multiple of 16) with
 * the last part (dwf_rows recomputes its last full block there, with the
 * same bits: that block stays in the same part, so no two threads write an
 * element). A fused post is applied to the part's channels of each pixel
 * once the part is done. */
typedef struct dw_split {
    void (*fn)(void *, size_t, size_t); /* dw3_f_rows on a dw_ctx, or dwf_rows on a dwf_job */
    const dw_ctx *d;
    const dwf_job *fj;
    int64_t parts, blocks, C, OW; /* blocks: full 16-channel blocks, split over parts */
    const interp_post *post;
    float *out;
} dw_split;

static void dw_split_items(void *arg, size_t begin, size_t end) {
    const dw_split *s = arg;
    for (size_t i = begin; i < end; i++) {
        const int64_t row = (int64_t)i / s->parts, p = (int64_t)i % s->parts;
        const int64_t c0 = p * s->blocks / s->parts * 16;
        const int64_t c1 = p + 1 == s->parts ? s->C : (p + 1) * s->blocks / s->parts * 16;
        if (s->fj) {
            dwf_job j = *s->fj;
            j.c0 = c0;
            j.c1 = c1;
            s->fn(&j, (size_t)row, (size_t)row + 1);
        } else {
            dw_ctx d = *s->d;
            d.c0 = c0;
            d.c1 = c1;
            s->fn(&d, (size_t)row, (size_t)row + 1);
        }
        if (s->post)
            for (int64_t ox = 0; ox < s->OW; ox++)
                kg_post_rows(s->post, s->out + (row * s->OW + ox) * s->C + c0, (size_t)(c1 - c0));
    }
}

/* Channel parts per row for dw_split_items: enough items for every thread
 * to take several (1: split rows only). */
static int64_t dw_channel_parts(const interp_op *o, const cgeom *g, size_t nrows) {
    const int64_t want = 8 * (int64_t)interp_threads(o->ctx), blocks = g->IC / 16;
    if ((int64_t)nrows >= want) return 1;
    int64_t parts = (want + (int64_t)nrows - 1) / (int64_t)nrows;
    return parts < blocks ? parts : blocks;
}

ctosa_error *interp_k_DEPTHWISE_CONV2D(const interp_op *o) {
    cargs c;
    ctosa_error *e = interp_conv_common(o, &c, 4);
    if (e) return e;
    const ctosa_attr *a = &o->op->attr;
    if ((e = interp_conv_vec(o, "pad", a->pad, 4)) || (e = interp_conv_vec(o, "stride", a->stride, 2)) ||
        (e = interp_conv_vec(o, "dilation", a->dilation, 2)))
        return e;
    /* weight [KH, KW, C, M], output channels C*M */
    cgeom g = {.kind = CK_DEPTHWISE,
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
               .KH = c.w->shape[0],
               .KW = c.w->shape[1],
               .M = c.w->shape[3],
               .sd = 1,
               .sy = a->stride.v[0],
               .sx = a->stride.v[1],
               .dd = 1,
               .dy = a->dilation.v[0],
               .dx = a->dilation.v[1],
               .pt = a->pad.v[0],
               .pl = a->pad.v[2]};
    if (c.w->shape[2] != g.IC || g.OC != g.IC * g.M || c.out->shape[0] != g.N)
        return interp_fail(
            o, "weight [%lld,%lld,%lld,%lld] does not match input channels %lld and output channels %lld",
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
    if (c.out->count == 0) return NULL;
    if (o->reference)
        return ctosa_dtype_is_float(c.in->dtype) ? interp_conv_ref_float(o, &g, &c)
                                                 : interp_conv_ref_int(o, &g, &c);
    size_t nrows = (size_t)(g.N * g.OH);
    dw_ctx d = {.g = &g, .c = &c};
    /* memory-bound: parallel only when there is enough to share */
    bool par = interp_par_worth(o->ctx, (double)c.out->count * (double)(g.KH * g.KW));
    if (ctosa_dtype_is_float(c.in->dtype)) {
        if (c.acc != CTOSA_DTYPE_FP32) return interp_conv_ref_float(o, &g, &c);
        float *bias = NULL;
        if (c.out->dtype == CTOSA_DTYPE_FP32) {
            if (!(bias = malloc((size_t)g.OC * sizeof(float)))) return interp_conv_nomem(o);
            const float *b = c.bias->data;
            for (int64_t i = 0; i < g.OC; i++) bias[i] = b[c.bias->count == 1 ? 0 : i];
        }
        d.bias = bias;
        dwf_job fj = {&g, c.in->data, c.w->data, bias, c.out->data, 0, 0};
        void (*fn)(void *, size_t, size_t) = g.M != 1                     ? dw_float_rows
                                             : g.KH == 3 && g.KW == 3     ? dw3_f_rows
                                             : g.IC >= 16                 ? dwf_rows
                                             : g.KH * g.KW <= DW_MAX_TAPS ? dw_f_blocked
                                                                          : dw_float_rows;
        void *arg = fn == dwf_rows ? (void *)&fj : (void *)&d;
        dw_post_job pj = {fn, arg, o->post, c.out->data, (size_t)(g.OW * g.OC)};
        int64_t parts =
            par && g.IC >= 16 && (fn == dw3_f_rows || fn == dwf_rows) ? dw_channel_parts(o, &g, nrows) : 1;
        if (parts > 1) {
            dw_split s = {fn,
                          &d,
                          fn == dwf_rows ? &fj : NULL,
                          parts,
                          g.IC / 16,
                          g.IC,
                          g.OW,
                          c.out->dtype == CTOSA_DTYPE_FP32 ? o->post : NULL,
                          c.out->data};
            interp_parallel_for(o->ctx, nrows * (size_t)parts, dw_split_items, &s);
        } else {
            if (o->post && c.out->dtype == CTOSA_DTYPE_FP32) {
                fn = dw_post_rows;
                arg = &pj;
            }
            if (par) interp_parallel_for(o->ctx, nrows, fn, arg);
            else fn(arg, 0, nrows);
        }
        free(bias);
        if (c.out->dtype != CTOSA_DTYPE_FP32) {
            interp_conv_float_epilogue(&c, g.OC);
            interp_post_apply(o->post, c.out->data, c.out->count);
        }
        return NULL;
    }
    if (c.in->dtype == CTOSA_DTYPE_INT8 && (double)(g.KH * g.KW) * 255.0 * 255.0 < 16777216.0) {
        bool done;
        if ((e = dw_run_int8(o, &g, &c, par, &done)) || done) return e;
    }
    if (c.in->dtype == CTOSA_DTYPE_INT8) {
        /* int8: every partial sum of KH*KW products stays below 2^24 when
         * KH*KW <= 258, so the float loops compute the integer sums exactly */
        /* bound with the type range (|x - zp| <= 255) so no scan is needed
         * for kernels up to 16x16 */
        if ((double)(g.KH * g.KW) * 255.0 * 255.0 < 16777216.0) {
            float *inf = kg_scratch(0, c.in->count * sizeof(float));
            float *wf = kg_scratch(1, c.w->count * sizeof(float));
            float *tmp = kg_scratch(2, c.out->count * sizeof(float));
            if (!inf || !wf || !tmp) {
                e = interp_conv_nomem(o);
            } else {
                kg_cvt_i8_f32(c.in->data, c.in->count, (int32_t)c.izp, inf);
                kg_cvt_i8_f32(c.w->data, c.w->count, (int32_t)c.wzp, wf);
                cargs fc = c;
                itensor fin = *c.in, fw = *c.w, fo = *c.out;
                fin.data = inf;
                fw.data = wf;
                fo.data = tmp;
                fc.in = &fin;
                fc.w = &fw;
                fc.out = &fo;
                dw_ctx fd = {.g = &g, .c = &fc};
                void (*fn)(void *, size_t, size_t) = g.M != 1                     ? dw_float_rows
                                                     : g.KH == 3 && g.KW == 3     ? dw3_f_rows
                                                     : g.KH * g.KW <= DW_MAX_TAPS ? dw_f_blocked
                                                                                  : dw_float_rows;
                if (par) interp_parallel_for(o->ctx, nrows, fn, &fd);
                else fn(&fd, 0, nrows);
                e = interp_conv_int_epilogue(o, &c, tmp, ACC_F32, g.OC);
            }
            return e;
        }
    }
    int64_t amax = 0, wmax = 0;
    int16_t *in16 = interp_conv_in16(c.in, c.izp, &amax);
    int32_t *w32 = malloc((size_t)(c.w->count ? c.w->count : 1) * sizeof(int32_t));
    bool acc64 = c.acc == CTOSA_DTYPE_INT48;
    void *acc = NULL;
    if (in16 && w32) {
        for (uint64_t i = 0; i < c.w->count; i++) {
            w32[i] = (int32_t)(((const int8_t *)c.w->data)[i] - c.wzp);
            int64_t v = w32[i] < 0 ? -(int64_t)w32[i] : w32[i];
            wmax = v > wmax ? v : wmax;
        }
        if ((double)(g.KH * g.KW) * (double)amax * (double)wmax > 2147483647.0) acc64 = true;
        acc = malloc((size_t)c.out->count * (acc64 ? 8 : 4));
    }
    if (!in16 || !w32 || !acc) e = interp_conv_nomem(o);
    else {
        d.in16 = in16;
        d.w32 = w32;
        d.acc = acc;
        d.acc64 = acc64;
        void (*fn)(void *, size_t, size_t) = acc64 || g.M != 1            ? dw_int_rows
                                             : g.KH == 3 && g.KW == 3     ? dw3_i_rows
                                             : g.KH * g.KW <= DW_MAX_TAPS ? dw_i_blocked
                                                                          : dw_int_rows;
        if (par) interp_parallel_for(o->ctx, nrows, fn, &d);
        else fn(&d, 0, nrows);
        e = interp_conv_int_epilogue(o, &c, acc, acc64 ? ACC_I64 : ACC_I32, g.OC);
    }
    free(in16);
    free(w32);
    free(acc);
    return e;
}
