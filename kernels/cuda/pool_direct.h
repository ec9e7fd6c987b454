/* pool_direct.h — one element of MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad computed directly, in C
 * that nvcc compiles for the device (pool.cu: the geometries cuDNN's pooling cannot pad evenly) and a C
 * compiler for the host, so that tests/gpu/test_cuda_host.c checks it against the CPU kernels bit for
 * bit on machines without a GPU.
 *
 * The CPU's rules (kernels/cpu/pool.c) in the CPU's order of operations: windows are clipped to the
 * input (padding never takes part); MaxPool starts from the window's first element and takes v where
 * v > max or v is NaN; AvgPool sums the window row by row and multiplies by 1 / count. The gradients
 * are gathers: input element i walks the windows that cover it in output order, as the CPU's scatter
 * adds into it, adding dy where i is the window's argmax (the first NaN, else the first strictly
 * largest element: the CPU's scan) or dy * (1 / count). On the device the sums and products are
 * __fadd_rn / __fmul_rn, which nvcc never fuses into a multiply-add (the CPU's loops are not fused:
 * ISO C, no -ffp-contract). float32, NHWC. */
#ifndef TIDE_CUDA_POOL_DIRECT_H
#define TIDE_CUDA_POOL_DIRECT_H

#include <stdbool.h>

#include "index_plan.h" /* TIDE_HD */

#ifdef __CUDA_ARCH__
#define TIDE_POOL_ADD(a, b) __fadd_rn(a, b)
#define TIDE_POOL_MUL(a, b) __fmul_rn(a, b)
#define TIDE_POOL_INV(n) __fdiv_rn(1.0f, (float)(n))
#else
#define TIDE_POOL_ADD(a, b) ((a) + (b))
#define TIDE_POOL_MUL(a, b) ((a) * (b))
#define TIDE_POOL_INV(n) (1.0f / (float)(n))
#endif

/* The geometry: input [., ih, iw, c], output [., oh, ow, c], window kh x kw moved by sh, sw, with pt
 * rows and pl columns of padding before the input. */
typedef struct tide_pool_geo {
    int64_t ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl;
} tide_pool_geo;

/* The window of output (oh, ow) clipped to the input: rows [h0, h1), columns [w0, w1). */
TIDE_HD static inline void tide_pool_window(const tide_pool_geo *g, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                                            int64_t *w0, int64_t *w1)
{
    int64_t top = oh * g->sh - g->pt, left = ow * g->sw - g->pl;
    *h0 = top > 0 ? top : 0;
    *w0 = left > 0 ? left : 0;
    *h1 = top + g->kh < g->ih ? top + g->kh : g->ih;
    *w1 = left + g->kw < g->iw ? left + g->kw : g->iw;
}

/* The outputs whose windows cover input position p along one dimension: [*lo, *hi] (empty if lo > hi). */
TIDE_HD static inline void tide_pool_covering(int64_t p, int64_t pad, int64_t k, int64_t s, int64_t outs, int64_t *lo,
                                              int64_t *hi)
{
    int64_t first = p + pad - k + 1; /* the first window start that still reaches p */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    *hi = (p + pad) / s;
    if (*hi > outs - 1)
        *hi = outs - 1;
}

/* Output element i (NHWC over [batch, oh, ow, c]) of MaxPool (max) or AvgPool over x. */
TIDE_HD static inline float tide_pool_forward_at(const tide_pool_geo *g, const float *x, int64_t i, bool max)
{
    int64_t c = i % g->c, r = i / g->c, ow = r % g->ow;
    r /= g->ow;
    int64_t oh = r % g->oh, n = r / g->oh, h0, h1, w0, w1;
    tide_pool_window(g, oh, ow, &h0, &h1, &w0, &w1);
    const float *img = x + n * g->ih * g->iw * g->c + c;
    float acc = max ? img[(h0 * g->iw + w0) * g->c] : 0.0f;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) {
            float v = img[(h * g->iw + w) * g->c];
            if (!max)
                acc = TIDE_POOL_ADD(acc, v);
            else if (v > acc || v != v)
                acc = v;
        }
    return max ? acc : TIDE_POOL_MUL(acc, TIDE_POOL_INV((h1 - h0) * (w1 - w0)));
}

/* Input element i (NHWC over [batch, ih, iw, c]) of MaxPoolGrad (max: x is orig_input) or AvgPoolGrad
 * (x unused) from dy, the gradient of the pooled output. */
TIDE_HD static inline float tide_pool_backward_at(const tide_pool_geo *g, const float *x, const float *dy, int64_t i,
                                                  bool max)
{
    int64_t c = i % g->c, r = i / g->c, w = r % g->iw;
    r /= g->iw;
    int64_t h = r % g->ih, n = r / g->ih, oh0, oh1, ow0, ow1;
    tide_pool_covering(h, g->pt, g->kh, g->sh, g->oh, &oh0, &oh1);
    tide_pool_covering(w, g->pl, g->kw, g->sw, g->ow, &ow0, &ow1);
    const float *img = max ? x + n * g->ih * g->iw * g->c + c : 0;
    const float *grad = dy + n * g->oh * g->ow * g->c + c;
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; oh++)
        for (int64_t ow = ow0; ow <= ow1; ow++) {
            int64_t h0, h1, w0, w1;
            tide_pool_window(g, oh, ow, &h0, &h1, &w0, &w1);
            float d = grad[(oh * g->ow + ow) * g->c];
            if (!max) {
                acc = TIDE_POOL_ADD(acc, TIDE_POOL_MUL(d, TIDE_POOL_INV((h1 - h0) * (w1 - w0))));
                continue;
            }
            float best = img[(h0 * g->iw + w0) * g->c];
            int64_t at_h = h0, at_w = w0;
            for (int64_t hh = h0; hh < h1; hh++)
                for (int64_t ww = w0; ww < w1; ww++) {
                    float v = img[(hh * g->iw + ww) * g->c];
                    if (v > best || (v != v && best == best)) {
                        best = v;
                        at_h = hh;
                        at_w = ww;
                    }
                }
            if (at_h == h && at_w == w)
                acc = TIDE_POOL_ADD(acc, d);
        }
    return acc;
}

#endif
