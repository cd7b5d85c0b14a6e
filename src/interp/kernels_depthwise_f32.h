/* kernels_depthwise_f32.h - the fp32 DEPTHWISE_CONV2D row kernel for
 * multiplier 1 and at least 16 channels (kernels_depthwise_f32.c). Private
 * to src/interp. */
#ifndef CTOSA_INTERP_KERNELS_DEPTHWISE_F32_H
#define CTOSA_INTERP_KERNELS_DEPTHWISE_F32_H

#include "interp/kernels_conv.h"

typedef struct dwf_job {
    const cgeom *g;    /* g->M == 1, g->IC >= 16, g->OC == g->IC */
    const float *in;   /* [N, IH, IW, C] */
    const float *w;    /* [KH, KW, C] */
    const float *bias; /* C values, or NULL for zero */
    float *out;        /* [N, OH, OW, C] */
    /* channels [c0, c1) only: c0 a multiple of 16, and at least one full
     * block of 16 (c1 0: every channel) */
    int64_t c0, c1;
} dwf_job;

/* Output rows [begin, end) of the (n, oy) rows of j (a dwf_job *), for
 * interp_parallel_for. Every output is bias + the taps in (ky, kx) order,
 * one multiply-add each, taps in the padding skipped: the bits of the plain
 * per-output loop, whatever the stride, dilation or kernel size. */
void dwf_rows(void *j, size_t begin, size_t end);

#endif
