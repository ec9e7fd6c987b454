/* conv_filter.h — between conv.c and conv_filter.c: the micro-kernel families the convolutions
 * choose from, and Conv2DBackpropFilter read in place (conv_filter.c says how). Internal to the CPU
 * kernels. */
#ifndef TIDE_KERNELS_CPU_CONV_FILTER_H
#define TIDE_KERNELS_CPU_CONV_FILTER_H

#include <stdbool.h>

#include "../../engine/ops/conv_ops.h"

/* The micro-kernel families, best last. */
typedef enum conv_isa { CONV_PORTABLE, CONV_AVX2, CONV_AVX512 } conv_isa;

/* Whether tide_conv_filter_direct computes this geometry: at least 8 input channels (its blocks of k
 * stay inside one filter column), something to sum, stride 1 and no dilation (any, while
 * $TIDE_CONV_FILTER_IN_PLACE is set); never while $TIDE_CONV_FILTER_SLICES is set (conv.c's canvas
 * method, which the tests and benchmarks compare). */
bool tide_conv_filter_direct_fits(const tide_conv_geometry *g, const int64_t filter[4]);

/* Conv2DBackpropFilter of input x [batch, in_h, in_w, in_c] and out_backprop dy [batch, out_h,
 * out_w, cout] (float32 or float64 as dt says) into out [kh, kw, in_c, cout] with the micro-kernels
 * of family isa; a status with the context's error set on failure (out of memory). */
tide_status tide_conv_filter_direct(tide_kernel_ctx *ctx, const tide_conv_geometry *g, const int64_t filter[4],
                                    tide_dtype dt, conv_isa isa, const void *x, const void *dy, void *out);

#endif
