/* conv_winograd.h — Winograd minimal-filtering convolution for float32 on AVX-512 (conv_winograd.c),
 * the cheaper algorithm conv.c dispatches its stride-1 forward-like convolutions to (Conv2D and
 * Conv2DBackpropInput). Kernels only. */
#ifndef TIDE_CPU_CONV_WINOGRAD_H
#define TIDE_CPU_CONV_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

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

#endif
