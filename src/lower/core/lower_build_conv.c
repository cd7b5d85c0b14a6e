/* lower_build_conv.c - the convolution emission of the builder
 * (lower_build.h): window attributes and the split of a grouped
 * convolution into one operator per group, which the float and the
 * quantized convolutions share. */
#include <string.h>

#include "lower/lower_build.h"

const ctosa_attr *lw_conv_attr_of(lw_conv_attr *b, uint32_t tsp, const lw_dim *dm, ctosa_dtype acc) {
    for (uint32_t i = 0; i < tsp; i++) {
        b->pad[2 * i] = (int32_t)dm[i].pb;
        b->pad[2 * i + 1] = (int32_t)dm[i].pe;
        b->stride[i] = (int32_t)dm[i].s;
        b->dil[i] = (int32_t)dm[i].d;
    }
    memset(&b->a, 0, sizeof b->a);
    b->a.pad = (ctosa_i32s){b->pad, 2 * tsp};
    b->a.stride = (ctosa_i32s){b->stride, tsp};
    b->a.dilation = (ctosa_i32s){b->dil, tsp};
    b->a.acc_type = acc;
    return &b->a;
}

const char *lw_conv_emit(lower_ctx *c, const lw_conv *cv) {
    uint32_t r = cv->rank, ch = r - 1;
    if (!cv->x || !cv->izp || !cv->wzp || cv->group < 1 || r < 3 || r > 5) return NULL;
    int64_t G = cv->group, Cg = cv->in_shape[ch] / G, Mg = cv->out_shape[ch] / G;
    const char **parts = G > 1 ? arena_alloc(lw_arena(c), (size_t)G * sizeof *parts) : NULL;
    if (G > 1 && !parts) return NULL;
    const char *y = NULL;
    for (int64_t g = 0; g < G; g++) {
        const char *w = NULL, *b = NULL;
        if (!cv->operands(c, cv->arg, g, &w, &b) || !w || !b) return NULL;
        const char *xg = cv->x;
        if (G > 1) {
            int64_t s0[5] = {0}, sz[5];
            memcpy(sz, cv->in_shape, r * sizeof *sz);
            s0[ch] = g * Cg;
            sz[ch] = Cg;
            xg = lw_slice(c, cv->x, cv->t, r, cv->in_shape, s0, sz);
        }
        int64_t og[5];
        memcpy(og, cv->out_shape, r * sizeof *og);
        og[ch] = Mg;
        const char *out = lw_tensor(c, cv->acc_t, r, og);
        const char *in[5] = {xg, w, b, cv->izp, cv->wzp};
        if (!xg || !out || !lw_op(c, cv->kind, 5, in, 1, &out, cv->attr)) return NULL;
        y = cv->part ? cv->part(c, cv->arg, g, out, og) : out;
        if (!y) return NULL;
        if (G > 1) parts[g] = y;
    }
    if (G == 1) return y;
    return lw_concat(c, (uint32_t)G, parts, cv->part ? cv->part_t : cv->acc_t, r, (int32_t)ch);
}

const char *lw_stretch(lower_ctx *c, const char *x, ctosa_dtype t, uint32_t rank, int64_t *ls,
                       const int64_t *s, double fill) {
    for (uint32_t i = 0; i + 2 < rank && x; i++) {
        int64_t st = s[i], L = ls[1 + i];
        if (st == 1) continue;
        /* [A, L, 1, B] padded to [A, L, st, B], read as [A, L * st, B] and
         * cut after the last element */
        int64_t A = lw_count(i + 1, ls), B = lw_count(rank - 2 - i, ls + 2 + i);
        int64_t s4[4] = {A, L, 1, B}, s3[3] = {A, L * st, B};
        int64_t pads[8] = {0, 0, 0, 0, 0, st - 1, 0, 0};
        x = lw_reshape(c, x, t, 4, s4);
        x = lw_pad(c, x, t, 4, s4, pads, fill);
        x = x ? lw_reshape(c, x, t, 3, s3) : NULL;
        int64_t z3[3] = {0, 0, 0}, sz3[3] = {A, (L - 1) * st + 1, B};
        x = lw_slice(c, x, t, 3, s3, z3, sz3);
        ls[1 + i] = sz3[1];
        x = x ? lw_reshape(c, x, t, rank, ls) : NULL;
    }
    return x;
}
