/* conv_ops.h — the geometry of 2-D convolution and pooling, shared by the op definitions
 * (engine/ops/conv_ops.c, whose shape functions use it) and their CPU kernels (kernels/cpu/conv.c,
 * kernels/cpu/pool.c), so that graph-time and run-time checks agree word for word: reading and
 * checking the strides/dilations/ksize/padding/data_format attrs, TensorFlow's output-size and
 * padding rules, and the consistency of the shapes given to the gradient ops. Engine-private, like
 * op_util.h: kernels may include it.
 *
 * TensorFlow's rules, per spatial dimension, for an input of size `in` and a window of size k with
 * dilation d (effective size (k - 1) * d + 1) moved by stride s:
 *   VALID: out = (in - eff) / s + 1, and the window must fit (eff <= in); no padding.
 *   SAME:  out = ceil(in / s); total padding max((out - 1) * s + eff - in, 0), of which the smaller
 *          half goes before (top/left) and the rest after.
 * Dimensions may be -1 (unknown) at graph time: whatever they decide is then -1 too, and only what
 * is known is checked. */
#ifndef TIDE_CONV_OPS_H
#define TIDE_CONV_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* How a window moves over NHWC data: a filter's or a pooling window's size, strides, dilations
 * and padding. */
typedef struct tide_conv_window {
    int64_t size_h, size_w;         /* pooling: from ksize; convolution: from the filter */
    int64_t stride_h, stride_w;
    int64_t dilation_h, dilation_w; /* 1 for pooling */
    bool same;                      /* padding 'SAME' (else 'VALID' or 'EXPLICIT') */
    bool explicit_padding;          /* padding 'EXPLICIT': the four pads below (convolutions only) */
    int64_t pad[4];                 /* EXPLICIT: top, bottom, left, right */
} tide_conv_window;

/* Everything a convolution or pooling kernel needs to know about one call. */
typedef struct tide_conv_geometry {
    int64_t batch, in_h, in_w, in_c;   /* the input (NHWC) */
    int64_t out_h, out_w, out_c;       /* the output (NHWC); out_c = in_c for pooling */
    int64_t pad_top, pad_left;         /* implicit zero rows/columns before the input */
    tide_conv_window win;
} tide_conv_geometry;

/* Reads Conv2D's attrs (strides, dilations, padding, explicit_paddings, data_format; TensorFlow's
 * use_cudnn_on_gpu means nothing on a CPU and is not read) into *w (sizes left 0). False, with a
 * message in msg, when they are malformed: lists of other than 4 entries, non-positive values, a
 * stride or dilation other than 1 in the batch or depth dimension, a padding other than
 * SAME/VALID/EXPLICIT, explicit_paddings other than 8 non-negative entries with zeros for the
 * batch and depth dimensions (or given without EXPLICIT), a data_format other than NHWC. */
bool tide_conv_read_attrs(const tide_attrs *attrs, tide_conv_window *w, char *msg, size_t size);

/* Reads the pooling attrs (ksize, strides, padding, data_format) the same way; ksize gives the
 * window size. Pooling over the batch or depth dimension is rejected. */
bool tide_pool_read_attrs(const tide_attrs *attrs, tide_conv_window *w, char *msg, size_t size);

/* One spatial dimension (named `dim`, "height" or "width", for messages): *out and *pad_before
 * for an input of size in, padded SAME, or by explicit[0] before and explicit[1] after when
 * explicit is not NULL, else not at all (VALID). False with a message when the window is larger than
 * the (padded) input. */
bool tide_conv_output_dim(int64_t in, int64_t window, int64_t stride, int64_t dilation, bool same,
                          const int64_t *explicit, const char *dim, int64_t *out, int64_t *pad_before,
                          char *msg, size_t size);

/* Conv2D: the geometry of filter [KH, KW, Cin, Cout] over input [N, H, W, Cin] moved as w says
 * (its sizes are taken from the filter). False with a message when the depths differ or the filter
 * does not fit. */
bool tide_conv_geometry_make(const tide_conv_window *w, const int64_t input[4],
                             const int64_t filter[4], tide_conv_geometry *g, char *msg, size_t size);

/* The gradient ops: as tide_conv_geometry_make, and also checks that out_backprop has the shape
 * the convolution gives, [N, OH, OW, Cout]. */
bool tide_conv_backprop_geometry(const tide_conv_window *w, const int64_t input[4],
                                 const int64_t filter[4], const int64_t out_backprop[4],
                                 tide_conv_geometry *g, char *msg, size_t size);

/* DepthwiseConv2dNative: the geometry of filter [KH, KW, C, M] over input [N, H, W, C] (out_c =
 * C * M); when out_backprop is not NULL, also checks that it has the output's shape [N, OH, OW,
 * C * M] (the gradient ops). False with a message naming the shapes otherwise. */
bool tide_depthwise_geometry(const tide_conv_window *w, const int64_t input[4], const int64_t filter[4],
                             const int64_t *out_backprop, tide_conv_geometry *g, char *msg, size_t size);

/* Pooling: the geometry of window w over input [N, H, W, C]. When pooled is not NULL, also checks
 * that it has the pooled shape [N, OH, OW, C] (the grad or orig_output of MaxPoolGrad and
 * AvgPoolGrad; pooled_name names it in the message). */
bool tide_pool_geometry(const tide_conv_window *w, const int64_t input[4], const int64_t *pooled,
                        const char *pooled_name, tide_conv_geometry *g, char *msg, size_t size);

/* An input that must have rank 4, named `what` for messages (a "filter" is [height, width, in, out],
 * anything else NHWC): its dims, all -1 when its rank is unknown. False with a message otherwise. */
bool tide_conv_input_dims(const tide_shape *s, const char *what, int64_t dims[4], char *msg, size_t size);

/* A size input of the gradient ops (int32 [4], e.g. Conv2DBackpropInput's input_sizes) of shape s:
 * its values, all -1 when value is NULL (not known at graph time). False with a message when its
 * shape cannot be [4] or a value is negative. */
bool tide_conv_size_dims(const tide_shape *s, const tide_tensor *value, const char *what, int64_t dims[4],
                         char *msg, size_t size);

/* For the kernels (any device): the checks above, failing with tide_kernel_error. The init of a
 * convolution (pool false) or pooling kernel reads the window attrs into a malloc'd
 * tide_conv_window, its state (freed with free()). The others read input i of the call. */
tide_status tide_conv_kernel_init(tide_kernel_ctx *ctx, void **state, bool pool);
tide_status tide_conv_kernel_input_dims(tide_kernel_ctx *ctx, int i, const char *what, int64_t dims[4]);
tide_status tide_conv_kernel_size_dims(tide_kernel_ctx *ctx, int i, const char *what, int64_t dims[4]);

#endif
