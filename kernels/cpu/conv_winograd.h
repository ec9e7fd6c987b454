/* conv_winograd.h — Winograd minimal-filtering convolutions for float32 on AVX-512, the cheaper
 * algorithm conv.c dispatches its stride-1 convolutions to: the forward-like ones (Conv2D and
 * Conv2DBackpropInput, conv_winograd.c) and the filter gradient (Conv2DBackpropFilter,
 * conv_winograd_filter.c). Kernels only. */
#ifndef TIDE_CPU_CONV_WINOGRAD_H
#define TIDE_CPU_CONV_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/ops/conv_ops.h"
#include "tide_op.h"

/* One stride-1, undilated r x r convolution in NHWC:
 *   dst[n, oh, ow, k] = sum over i, j < r and c < cin of src[n, oh - off_h + i, ow - off_w + j, c] * w(i, j, c, k)
 * with source pixels outside [0, src_h) x [0, src_w) read as zeros, and tap w(i, j, c, k) at
 * filter[i * f_i + j * f_j + c * f_c + k * f_k] (the strides may be negative: backprop-input reads the
 * forward filter flipped and transposed in place). dst is written whole. */
typedef struct tide_winograd_conv {
    tide_kernel_ctx *ctx; /* for the engine's threads, cancellation and errors */
    const float *src;
    int64_t batch, src_h, src_w, cin;
    int64_t off_h, off_w;
    int64_t r;
    const float *filter;
    int64_t f_i, f_j, f_c, f_k;
    int64_t out_h, out_w, cout;
    float *dst;
} tide_winograd_conv;

/* Whether the Winograd path can run a convolution of this window and these channel counts on this CPU
 * now: r = 3 (F(4x4, 3x3)) or r = 5 (F(2x2, 5x5)), cin and cout multiples of 16, and the AVX-512
 * kernels active (tide_cpu_isa_active). The caller checks stride 1, no dilation, float32. */
bool tide_conv_winograd_supported(int64_t r, int64_t cin, int64_t cout);

/* Runs c (which tide_conv_winograd_supported accepted) on the engine's threads. Deterministic: every
 * output element is computed by the same operations in the same order whatever the thread split.
 * Returns TIDE_OK, or an error set on c->ctx (out of memory, cancelled). */
tide_status tide_conv_winograd_run(const tide_winograd_conv *c);

/* Whether the Winograd filter gradient takes this window, these channel counts and this many terms per
 * sum (batch x out_h x out_w) on this CPU now: tide_conv_winograd_supported's conditions, partial sums
 * of a bounded size (36 cin cout floats per slice of the batch: larger layers stay direct), and enough
 * terms that its float32 error stays well inside the kernel suite's tolerance (which grows with them;
 * conv_winograd_filter.c). */
bool tide_conv_winograd_filter_supported(int64_t r, int64_t cin, int64_t cout, int64_t terms);

/* Conv2DBackpropFilter of a stride-1, undilated r x r convolution of geometry g (which
 * tide_conv_winograd_filter_supported accepted) in NHWC / HWIO:
 *   dw[i, j, c, k] = sum over n, oh, ow of x[n, oh - pad_top + i, ow - pad_left + j, c] * dy[n, oh, ow, k]
 * with input pixels outside the input read as zeros; dw [r, r, in_c, out_c] is written whole, on the
 * engine's threads. Deterministic: the batch is cut into slices by its size alone, each summed into its
 * own partial, and the partials are added in slice order. Returns TIDE_OK, or an error set on ctx (out
 * of memory). */
tide_status tide_conv_winograd_filter_run(tide_kernel_ctx *ctx, const tide_conv_geometry *g, int64_t r, const float *x,
                                          const float *dy, float *dw);

#endif
