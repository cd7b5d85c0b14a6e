/* kernels_depthwise_f32.c - fp32 DEPTHWISE_CONV2D with multiplier 1 and at
 * least 16 channels, any kernel size, stride and dilation.
 *
 * A depthwise output is a chain of KH x KW dependent multiply-adds, so one
 * accumulator per step leaves the FMA units waiting on its latency. Here
 * interior output columns (every tap inside the input row) go eight at a
 * time, eight independent accumulators sharing each tap's weight vector;
 * each still sums bias then its taps in (ky, kx) order, exactly as the
 * per-column loop used for the border columns, so every output has the
 * same bits whichever loop computed it. Channels go 16 per vector; when C
 * is not a multiple of 16 the last block starts at C - 16 and recomputes
 * (with the same bits) channels of the block before it, instead of a scalar
 * tail. Column groups are the outer loop and channel blocks the inner one,
 * so input and output are walked in memory order. */
#include <string.h>

#include "interp/kernels_depthwise_f32.h"

typedef float dwf_vf __attribute__((vector_size(64)));

#define DWF_R 8 /* interior output columns per step */

/* Unaligned load (a macro: a function returning a 64-byte vector would
 * change the ABI between the instruction-set variants). */
#define dwf_ld(p)                    \
    ({                               \
        dwf_vf v_;                   \
        memcpy(&v_, (p), sizeof v_); \
        v_;                          \
    })

/* R neighbouring interior columns from ox on, channels cb..cb+15: every
 * tap reads inside the input row. With KW and SX compile-time constants
 * (and dilation 1 along x) a kernel row's input vectors are loaded once and
 * serve every column and tap that reads them; with KW = 0 the kernel width,
 * stride and dilation are read from g and every multiply-add loads its
 * input. The sums are the same either way. */
static inline IM_INLINE void dwf_group(const dwf_job *j, int64_t n, int64_t y0, int64_t ox, int64_t cb,
                                       float *orow, const int R, const int KW, const int SX) {
    const cgeom *g = j->g;
    const int64_t C = g->IC;
    dwf_vf acc[DWF_R], init = {0};
    if (j->bias) init = dwf_ld(j->bias + cb);
    _Pragma("GCC unroll 8") for (int o = 0; o < R; o++) acc[o] = init;
    for (int64_t ky = 0; ky < g->KH; ky++) {
        int64_t y = y0 + ky * g->dy;
        if (y < 0 || y >= g->IH) continue;
        const float *p = j->in + ((n * g->IH + y) * g->IW + ox * g->sx - g->pl) * C + cb;
        if (KW) {
            const float *wp = j->w + ky * KW * C + cb;
            dwf_vf v[(DWF_R - 1) * 2 + 7];
            _Pragma("GCC unroll 24") for (int i = 0; i < (R - 1) * SX + KW; i++) v[i] = dwf_ld(p + i * C);
            _Pragma("GCC unroll 7") for (int kx = 0; kx < KW; kx++) {
                dwf_vf wv = dwf_ld(wp + kx * C);
                _Pragma("GCC unroll 8") for (int o = 0; o < R; o++) acc[o] += v[o * SX + kx] * wv;
            }
        } else {
            const float *wp = j->w + ky * g->KW * C + cb;
            const int64_t dxc = g->dx * C, sxc = g->sx * C;
            for (int64_t kx = 0; kx < g->KW; kx++, p += dxc) {
                dwf_vf wv = dwf_ld(wp + kx * C);
                _Pragma("GCC unroll 8") for (int o = 0; o < R; o++) acc[o] += dwf_ld(p + o * sxc) * wv;
            }
        }
    }
    _Pragma("GCC unroll 8") for (int o = 0; o < R; o++)
        memcpy(orow + (ox + o) * C + cb, &acc[o], sizeof acc[o]);
}

/* One border column: taps outside the input are skipped. */
static inline IM_INLINE void dwf_border(const dwf_job *j, int64_t n, int64_t y0, int64_t ox, int64_t cb,
                                        float *orow) {
    const cgeom *g = j->g;
    const int64_t C = g->IC;
    dwf_vf acc = {0};
    if (j->bias) acc = dwf_ld(j->bias + cb);
    for (int64_t ky = 0; ky < g->KH; ky++) {
        int64_t y = y0 + ky * g->dy;
        if (y < 0 || y >= g->IH) continue;
        const float *irow = j->in + ((n * g->IH + y) * g->IW) * C + cb;
        const float *wp = j->w + ky * g->KW * C + cb;
        for (int64_t kx = 0; kx < g->KW; kx++) {
            int64_t x = ox * g->sx - g->pl + kx * g->dx;
            if (x < 0 || x >= g->IW) continue;
            acc += dwf_ld(irow + x * C) * dwf_ld(wp + kx * C);
        }
    }
    memcpy(orow + ox * C + cb, &acc, sizeof acc);
}

/* The kernel shapes with a register-reuse group (dilation 1 along x). */
enum { DWF_GEN, DWF_3S1, DWF_3S2, DWF_5S1, DWF_5S2, DWF_7S1, DWF_7S2 };

#define DWF_CASES(R)                                                 \
    switch (mode) {                                                  \
    case DWF_3S1: dwf_group(j, n, y0, ox, cb, orow, R, 3, 1); break; \
    case DWF_3S2: dwf_group(j, n, y0, ox, cb, orow, R, 3, 2); break; \
    case DWF_5S1: dwf_group(j, n, y0, ox, cb, orow, R, 5, 1); break; \
    case DWF_5S2: dwf_group(j, n, y0, ox, cb, orow, R, 5, 2); break; \
    case DWF_7S1: dwf_group(j, n, y0, ox, cb, orow, R, 7, 1); break; \
    case DWF_7S2: dwf_group(j, n, y0, ox, cb, orow, R, 7, 2); break; \
    default: dwf_group(j, n, y0, ox, cb, orow, R, 0, 0); break;      \
    }

static inline IM_INLINE void dwf_rows_impl(void *arg, size_t begin, size_t end) {
    const dwf_job *j = arg;
    const cgeom *g = j->g;
    const int64_t C = g->IC, sx = g->sx, cs = j->c1 ? j->c0 : 0, ce = j->c1 ? j->c1 : C;
    int mode = DWF_GEN;
    if (g->dx == 1 && (sx == 1 || sx == 2) && (g->KW == 3 || g->KW == 5 || g->KW == 7))
        mode = g->KW == 3   ? (sx == 1 ? DWF_3S1 : DWF_3S2)
               : g->KW == 5 ? (sx == 1 ? DWF_5S1 : DWF_5S2)
                            : (sx == 1 ? DWF_7S1 : DWF_7S2);
    /* interior columns [lo, hi): ox*sx - pl >= 0 and ox*sx - pl + (KW-1)*dx < IW */
    int64_t lo = g->pl <= 0 ? 0 : (g->pl + sx - 1) / sx;
    int64_t lim = g->IW - (g->KW - 1) * g->dx + g->pl; /* ox*sx < lim */
    int64_t hi = lim <= 0 ? 0 : (lim + sx - 1) / sx;
    if (hi > g->OW) hi = g->OW;
    if (lo > hi) lo = hi;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->OH, oy = (int64_t)row % g->OH;
        int64_t y0 = oy * g->sy - g->pt;
        float *orow = j->out + ((n * g->OH) + oy) * g->OW * C;
        for (int64_t c0 = cs; c0 < ce; c0 += 16) {
            int64_t cb = c0 + 16 <= C ? c0 : C - 16;
            int64_t ox = 0;
            while (ox < g->OW) {
                /* eight or four interior columns, or one */
                int step = ox < lo || ox >= hi ? 0 : ox + DWF_R <= hi ? DWF_R : ox + 4 <= hi ? 4 : 1;
                if (step == DWF_R) {
                    DWF_CASES(DWF_R)
                } else if (step == 4) {
                    DWF_CASES(4)
                } else if (step == 1) {
                    dwf_group(j, n, y0, ox, cb, orow, 1, 0, 0);
                } else {
                    dwf_border(j, n, y0, ox, cb, orow);
                }
                ox += step ? step : 1;
            }
        }
    }
}
IM_MULTIVERSION(dwf_rows_v, dwf_rows_impl)

void dwf_rows(void *j, size_t begin, size_t end) { dwf_rows_v(j, begin, end); }
