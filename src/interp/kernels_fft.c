/* kernels_fft.c - FFT2D and RFFT2D (fp32 in and out).
 *
 * The spec's 2-D sum of X[iy][ix] * e^(-+i*2*pi*(iy*oy/H + ix*ox/W))
 * factorises into a DFT along W followed by one along H; both run in double
 * with twiddle tables whose quarter points are exact (so the terms the
 * pseudocode treats as purely real give an exactly zero imaginary part). */
#include <math.h>
#include <stdlib.h>

#include "interp/int_math.h"

static bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* cos/sin of 2*pi*k/n for k < n. */
static void twiddles(int64_t n, double *c, double *s) {
    for (int64_t k = 0; k < n; k++) {
        if (4 * k % n == 0) {
            int64_t q = 4 * k / n; /* quarter turns */
            static const double qc[4] = {1, 0, -1, 0}, qs[4] = {0, 1, 0, -1};
            c[k] = qc[q];
            s[k] = qs[q];
        } else {
            double a = 2.0 * M_PI * (double)k / (double)n;
            c[k] = cos(a);
            s[k] = sin(a);
        }
    }
}

/* out[o] = sum_i in[i] * (cos(a) - sign*i*sin(a)), a = 2*pi*(i*o mod n)/n,
 * strided complex vectors. */
static void dft(int64_t n, int64_t nout, const double *re, const double *im, int64_t stride, double *ore,
                double *oim, int64_t ostride, const double *c, const double *s, double sign) {
    for (int64_t k = 0; k < nout; k++) {
        double sr = 0, si = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t t = (i * k) % n;
            double vr = re[i * stride], vi = im ? im[i * stride] : 0.0;
            double cs = c[t], sn = sign * s[t];
            sr += vr * cs + vi * sn;
            si += -vr * sn + vi * cs;
        }
        ore[k * ostride] = sr;
        oim[k * ostride] = si;
    }
}

static ctosa_error *fft_common(const interp_op *o, bool real_input, bool inverse) {
    uint32_t nin = real_input ? 1 : 2;
    ctosa_error *e = im_need_io(o, nin, 2);
    if (e) return e;
    const itensor *ir = o->in[0], *ii = real_input ? NULL : o->in[1];
    itensor *orr = o->out[0], *oi = o->out[1];
    if (ir->rank != 3 || orr->rank != 3 || oi->rank != 3 || (ii && ii->rank != 3))
        return interp_fail(o, "inputs and outputs must have rank 3");
    if (ir->dtype != CTOSA_DTYPE_FP32 || orr->dtype != CTOSA_DTYPE_FP32 || oi->dtype != CTOSA_DTYPE_FP32 ||
        (ii && ii->dtype != CTOSA_DTYPE_FP32))
        return interp_fail(o, "only fp32 is supported");
    int64_t N = ir->shape[0], H = ir->shape[1], W = ir->shape[2];
    int64_t OW = real_input ? W / 2 + 1 : W;
    if (ii && (ii->shape[0] != N || ii->shape[1] != H || ii->shape[2] != W))
        return interp_fail(o, "input_imag shape differs from input_real");
    for (int i = 0; i < 2; i++) {
        const itensor *t = o->out[i];
        if (t->shape[0] != N || t->shape[1] != H || t->shape[2] != OW)
            return interp_fail(o, "output %d must be [%lld,%lld,%lld]", i, (long long)N, (long long)H,
                               (long long)OW);
    }
    if (!pow2(H) || !pow2(W))
        return interp_fail(o, "height %lld and width %lld must be powers of two", (long long)H, (long long)W);
    if (im_dims(ir, 0, 3) != ir->count || (ii && im_dims(ii, 0, 3) != ii->count) ||
        im_dims(orr, 0, 3) != orr->count || im_dims(oi, 0, 3) != oi->count)
        return interp_fail(o, "tensor element counts do not match their shapes");
    double sign = inverse ? -1.0 : 1.0;
    size_t plane = (size_t)(H * OW);
    double *ch = malloc((size_t)H * sizeof(double)), *sh = malloc((size_t)H * sizeof(double));
    double *cw = malloc((size_t)W * sizeof(double)), *sw = malloc((size_t)W * sizeof(double));
    double *xr = malloc((size_t)W * 2 * sizeof(double));
    double *tr = malloc(plane * sizeof(double)), *ti = malloc(plane * sizeof(double));
    double *yr = malloc((size_t)H * 2 * sizeof(double));
    if (!ch || !sh || !cw || !sw || !xr || !tr || !ti || !yr) {
        e = interp_fail(o, "out of memory");
        goto done;
    }
    twiddles(H, ch, sh);
    twiddles(W, cw, sw);
    for (int64_t n = 0; n < N; n++) {
        const float *sr = (const float *)ir->data + n * H * W;
        const float *si = ii ? (const float *)ii->data + n * H * W : NULL;
        for (int64_t y = 0; y < H; y++) {
            double *xi = xr + W;
            for (int64_t x = 0; x < W; x++) {
                xr[x] = sr[y * W + x];
                xi[x] = si ? si[y * W + x] : 0.0;
            }
            dft(W, OW, xr, si ? xi : NULL, 1, tr + y * OW, ti + y * OW, 1, cw, sw, sign);
        }
        float *dr = (float *)orr->data + n * plane, *di = (float *)oi->data + n * plane;
        for (int64_t x = 0; x < OW; x++) {
            double *rr = yr, *ri = yr + H;
            dft(H, H, tr + x, ti + x, OW, rr, ri, 1, ch, sh, sign);
            for (int64_t y = 0; y < H; y++) {
                dr[y * OW + x] = (float)rr[y];
                di[y * OW + x] = (float)ri[y];
            }
        }
    }
done:
    free(ch);
    free(sh);
    free(cw);
    free(sw);
    free(xr);
    free(tr);
    free(ti);
    free(yr);
    return e;
}

ctosa_error *interp_k_FFT2D(const interp_op *o) { return fft_common(o, false, o->op->attr.inverse); }
ctosa_error *interp_k_RFFT2D(const interp_op *o) { return fft_common(o, true, false); }
