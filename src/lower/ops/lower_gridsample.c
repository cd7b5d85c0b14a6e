/*
 * lower_gridsample.c - GridSample on 4-D inputs (2-D sampling grids), modes
 * linear / bilinear and nearest, padding zeros and border, both
 * align_corners settings, with a grid computed at run time.
 *
 * The input becomes a table of pixels X' [N, H * W, C]; each sample point
 * of the grid [N, Ho, Wo, 2] is turned into pixel coordinates in FP32 and
 * then into a row number y * W + x (exact in FP32 for any image TOSA's
 * levels allow), CAST to INT32 and fetched with GATHER ([N, Ho * Wo, C]).
 * Bilinear sampling fetches the four neighbours and weighs them; with
 * zeros padding a neighbour outside the image gets weight 0 (its row
 * number is clamped into the image first, so GATHER never reads outside).
 * Nearest rounds half to even, as the definition (std::nearbyint) does.
 * Reflection padding and cubic sampling fall back naming the attribute.
 */
#include <string.h>

#include "lower/lower_build.h"

typedef struct gs_ctx {
    lower_ctx *c;
    lw_v table;            /* [N, H * W, C] in the input dtype */
    int64_t N, H, W, C, P; /* P = Ho * Wo sample points */
    bool zeros;
} gs_ctx;

/* x rounded to the nearest integer, ties to even. */
static lw_v gs_rint(lower_ctx *c, lw_v x) {
    lw_v t = lw_v_un(c, CTOSA_OP_FLOOR, lw_v_addk(c, x, 0.5));
    lw_v tie = lw_v_bin(c, CTOSA_OP_EQUAL, lw_v_sub(c, t, x), lw_v_k(c, x, 0.5));
    lw_v even = lw_v_mulk(c, lw_v_un(c, CTOSA_OP_FLOOR, lw_v_mulk(c, t, 0.5)), 2.0);
    lw_v odd = lw_v_bin(c, CTOSA_OP_GREATER, lw_v_sub(c, t, even), lw_v_k(c, x, 0.5));
    return lw_v_select(c, lw_v_bin(c, CTOSA_OP_LOGICAL_AND, tie, odd), lw_v_addk(c, t, -1.0), t);
}

/* The pixels at integer coordinates (ix, iy) ([N, P, 1] FP32), times
 * weight w ([N, P, 1] FP32, NULL name: 1): [N, P, C]. */
static lw_v gs_fetch(gs_ctx *g, lw_v ix, lw_v iy, lw_v w) {
    lower_ctx *c = g->c;
    if (g->zeros) {
        lw_v in_x =
            lw_v_bin(c, CTOSA_OP_LOGICAL_AND, lw_v_bin(c, CTOSA_OP_GREATER_EQUAL, ix, lw_v_k(c, ix, 0.0)),
                     lw_v_bin(c, CTOSA_OP_GREATER_EQUAL, lw_v_k(c, ix, (double)(g->W - 1)), ix));
        lw_v in_y =
            lw_v_bin(c, CTOSA_OP_LOGICAL_AND, lw_v_bin(c, CTOSA_OP_GREATER_EQUAL, iy, lw_v_k(c, iy, 0.0)),
                     lw_v_bin(c, CTOSA_OP_GREATER_EQUAL, lw_v_k(c, iy, (double)(g->H - 1)), iy));
        lw_v valid = lw_v_bin(c, CTOSA_OP_LOGICAL_AND, in_x, in_y);
        lw_v one = w.n ? w : lw_v_k(c, ix, 1.0);
        w = lw_v_select(c, valid, one, lw_v_k(c, ix, 0.0));
    }
    /* into the image: a zeros-padded neighbour outside has weight 0, a
     * border-clamped coordinate on the last pixel reaches one past it
     * with weight 0 */
    ix = lw_v_clamp(c, ix, 0, (double)(g->W - 1));
    iy = lw_v_clamp(c, iy, 0, (double)(g->H - 1));
    lw_v row = lw_v_add(c, lw_v_mulk(c, iy, (double)g->W), ix);
    int64_t s2[2] = {g->N, g->P}, s3[3] = {g->N, g->P, g->C};
    /* shaped in FP32: TOSA-1.0+FP has no INT32 RESHAPE */
    const char *r2 = row.n ? lw_reshape(c, row.n, row.t, 2, s2) : NULL;
    const char *ix2 = r2 ? lw_cast(c, r2, row.t, CTOSA_DTYPE_INT32, 2, s2) : NULL;
    const char *out = lw_tensor(c, g->table.t, 3, s3);
    if (!ix2 || !out || !g->table.n) return (lw_v){0};
    const char *in[2] = {g->table.n, ix2};
    if (!lw_op(c, CTOSA_OP_GATHER, 2, in, 1, &out, NULL)) return (lw_v){0};
    lw_v px = g->table;
    px.n = out;
    memcpy(px.s, s3, sizeof s3);
    px.cin = 0;
    return w.n ? lw_v_mul(c, px, lw_v_cast(c, w, px.t)) : px;
}

static lower_status lower_gridsample(lower_ctx *c) {
    lw_v x, grid;
    lower_status st;
    if ((st = lw_v_in(c, 0, &x)) != LOWER_OK || (st = lw_v_in(c, 1, &grid)) != LOWER_OK) return st;
    if (!ctosa_dtype_is_float(x.t) || !ctosa_dtype_is_float(grid.t))
        return lw_reject(c, LOWER_UNSUPPORTED_DTYPE, NULL, "GridSample: input and grid must be float");
    if (x.r != 4 || grid.r != 4 || grid.s[0] != x.s[0] || grid.s[3] != 2)
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "GridSample: only 4-D inputs with a [N, H_out, W_out, 2] grid (ranks %u, %u)", x.r,
                         grid.r);
    const char *mode = lw_attr_str(c, "mode", lw_opset(c) >= 20 ? "linear" : "bilinear");
    const char *pad = lw_attr_str(c, "padding_mode", "zeros");
    bool linear = !strcmp(mode, "linear") || !strcmp(mode, "bilinear");
    if (!linear && strcmp(mode, "nearest"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "GridSample: mode '%s' (linear and nearest only)",
                         mode);
    if (strcmp(pad, "zeros") && strcmp(pad, "border"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL,
                         "GridSample: padding_mode '%s' (zeros and border only)", pad);
    bool align = lw_attr_int(c, "align_corners", 0) != 0;
    gs_ctx g = {c, x, x.s[0], x.s[2], x.s[3], x.s[1], grid.s[1] * grid.s[2], !strcmp(pad, "zeros")};
    static const int32_t to_last[4] = {0, 2, 3, 1};
    int64_t t3[3] = {g.N, g.H * g.W, g.C};
    const char *xt = lw_transpose(c, x.n, x.t, 4, x.s, to_last);
    g.table.n = xt ? lw_reshape(c, xt, x.t, 3, t3) : NULL;
    g.table.r = 3;
    memcpy(g.table.s, t3, sizeof t3);
    g.table.cin = 0;

    /* pixel coordinates [N, P, 1] in FP32 */
    lw_v gf = lw_v_cast(c, grid, CTOSA_DTYPE_FP32);
    int64_t st4[4] = {0, 0, 0, 0}, sz4[4] = {g.N, grid.s[1], grid.s[2], 1}, p3[3] = {g.N, g.P, 1};
    lw_v coord[2];
    for (int k = 0; k < 2; k++) {
        st4[3] = k;
        const char *sl = gf.n ? lw_slice(c, gf.n, gf.t, 4, gf.s, st4, sz4) : NULL;
        lw_v v = gf;
        v.cin = 0;
        v.r = 3;
        memcpy(v.s, p3, sizeof p3);
        v.n = sl ? lw_reshape(c, sl, gf.t, 3, p3) : NULL;
        double len = (double)(k == 0 ? g.W : g.H);
        /* align: (v + 1) / 2 * (len - 1); else ((v + 1) * len - 1) / 2 */
        v = align ? lw_v_mulk(c, lw_v_addk(c, v, 1.0), (len - 1) / 2)
                  : lw_v_addk(c, lw_v_mulk(c, v, len / 2), (len - 1) / 2);
        if (!g.zeros) v = lw_v_clamp(c, v, 0, len - 1);
        coord[k] = v;
    }
    lw_v y;
    if (linear) {
        lw_v x0 = lw_v_un(c, CTOSA_OP_FLOOR, coord[0]), y0 = lw_v_un(c, CTOSA_OP_FLOOR, coord[1]);
        lw_v fx = lw_v_sub(c, coord[0], x0), fy = lw_v_sub(c, coord[1], y0);
        lw_v gx = lw_v_sub(c, lw_v_k(c, fx, 1.0), fx), gy = lw_v_sub(c, lw_v_k(c, fy, 1.0), fy);
        lw_v x1 = lw_v_addk(c, x0, 1.0), y1 = lw_v_addk(c, y0, 1.0);
        y = lw_v_add(
            c,
            lw_v_add(c, gs_fetch(&g, x0, y0, lw_v_mul(c, gx, gy)), gs_fetch(&g, x1, y0, lw_v_mul(c, fx, gy))),
            lw_v_add(c, gs_fetch(&g, x0, y1, lw_v_mul(c, gx, fy)),
                     gs_fetch(&g, x1, y1, lw_v_mul(c, fx, fy))));
    } else {
        lw_v none = {0};
        y = gs_fetch(&g, gs_rint(c, coord[0]), gs_rint(c, coord[1]), none);
    }
    if (!y.n) return lw_failed(c);
    int64_t o4[4] = {g.N, grid.s[1], grid.s[2], g.C};
    static const int32_t to_first[4] = {0, 3, 1, 2};
    const char *r4 = lw_reshape(c, y.n, y.t, 4, o4);
    const char *o = r4 ? lw_transpose(c, r4, y.t, 4, o4, to_first) : NULL;
    LW_TRY(o);
    lw_set_output(c, 0, o);
    return LOWER_OK;
}

const lower_entry lower_table_gridsample[] = {
    {"GridSample", 16, 0, lower_gridsample},
    {0},
};
