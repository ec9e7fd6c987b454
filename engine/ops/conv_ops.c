/* conv_ops.c — definitions of the 2-D convolution and pooling ops, TensorFlow's names and semantics
 * on NHWC data with HWIO filters: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter,
 * DepthwiseConv2dNative and its two backprops, MaxPool,
 * MaxPoolGrad, AvgPool, AvgPoolGrad; and the geometry helpers of conv_ops.h that their shape
 * functions and kernels (kernels/cpu/conv.c, kernels/cpu/pool.c) share.
 *
 * The shape functions reject malformed attrs (strides of the wrong length, NCHW, bad paddings)
 * at graph time, give exact output shapes as far as the inputs are known (the size inputs of the
 * gradient ops when they are graph-time constants), and check whatever is already known to be
 * inconsistent with the messages the kernels use at run time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tide_op.h"
#include "conv_ops.h"
#include "op_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

/* ---------------------------------------------------------------- attrs */

/* Reads a list(int) attr that must hold 4 positive entries with 1 in the batch and depth places. */
static bool read_four(const tide_attrs *attrs, const char *name, const char *meaning, int64_t *h,
                      int64_t *w, char *msg, size_t size)
{
    const int64_t *v = NULL;
    int n = 0;
    char buf[128];
    if (!tide_attrs_get_int_list(attrs, name, &v, &n))
        return snprintf(msg, size, "attr %s is missing: give [1, %s_height, %s_width, 1]", name,
                        meaning, meaning), false;
    if (n != 4)
        return snprintf(msg, size, "%s must have 4 entries [1, %s_height, %s_width, 1] (NHWC), got %s",
                        name, meaning, meaning, tide_op_format_values(v, n, buf, sizeof buf)), false;
    for (int i = 0; i < 4; i++)
        if (v[i] < 1 || v[i] > INT32_MAX)
            return snprintf(msg, size, "%s must be positive and at most %d, got %s", name, INT32_MAX,
                            tide_op_format_values(v, n, buf, sizeof buf)), false;
    if (v[0] != 1 || v[3] != 1)
        return snprintf(msg, size,
                        "%s in the batch and depth dimensions must be 1, got %s (only spatial %ss "
                        "are supported)", name, tide_op_format_values(v, n, buf, sizeof buf),
                        meaning), false;
    *h = v[1];
    *w = v[2];
    return true;
}

/* explicit_paddings [0, 0, top, bottom, left, right, 0, 0] (NHWC) into w->pad. */
static bool read_explicit(const tide_attrs *attrs, tide_conv_window *w, char *msg, size_t size)
{
    const int64_t *v = NULL;
    int n = 0;
    char buf[160];
    tide_attrs_get_int_list(attrs, "explicit_paddings", &v, &n);
    if (!w->explicit_padding) {
        if (n != 0)
            return snprintf(msg, size, "explicit_paddings %s is given but padding is not 'EXPLICIT'",
                            tide_op_format_values(v, n, buf, sizeof buf)), false;
        return true;
    }
    if (n != 8)
        return snprintf(msg, size, "padding 'EXPLICIT' needs explicit_paddings of 8 entries [0, 0, top, "
                        "bottom, left, right, 0, 0] (NHWC), got %s",
                        tide_op_format_values(v, n, buf, sizeof buf)), false;
    for (int i = 0; i < 8; i++)
        if (v[i] < 0 || v[i] > INT32_MAX || ((i < 2 || i >= 6) && v[i] != 0))
            return snprintf(msg, size, "explicit_paddings must be non-negative, at most %d, and 0 for "
                            "the batch and depth dimensions, got %s", INT32_MAX,
                            tide_op_format_values(v, n, buf, sizeof buf)), false;
    for (int i = 0; i < 4; i++)
        w->pad[i] = v[2 + i];
    return true;
}

/* padding (SAME, VALID, and for convolutions EXPLICIT) and data_format, common to every op of the
 * family. */
static bool read_layout(const tide_attrs *attrs, bool conv, tide_conv_window *w, char *msg, size_t size)
{
    const char *padding = NULL, *format = "NHWC";
    tide_attrs_get_string(attrs, "data_format", &format);
    if (strcmp(format, "NHWC") != 0)
        return snprintf(msg, size,
                        "data_format '%s' is not supported: tide's convolutions and pooling take "
                        "NHWC data only (transpose NCHW data with Transpose perm [0, 2, 3, 1])",
                        format), false;
    if (!tide_attrs_get_string(attrs, "padding", &padding))
        return snprintf(msg, size, "attr padding is missing: give 'SAME' or 'VALID'"), false;
    w->same = strcmp(padding, "SAME") == 0;
    w->explicit_padding = conv && strcmp(padding, "EXPLICIT") == 0;
    if (!w->same && !w->explicit_padding && strcmp(padding, "VALID") != 0)
        return snprintf(msg, size, "padding must be %s, got '%s'",
                        conv ? "'SAME', 'VALID' or 'EXPLICIT'" : "'SAME' or 'VALID'", padding), false;
    return !conv || read_explicit(attrs, w, msg, size);
}

bool tide_conv_read_attrs(const tide_attrs *attrs, tide_conv_window *w, char *msg, size_t size)
{
    memset(w, 0, sizeof *w);
    w->dilation_h = w->dilation_w = 1;
    if (!read_four(attrs, "strides", "stride", &w->stride_h, &w->stride_w, msg, size))
        return false;
    if (tide_attrs_type(attrs, "dilations") != TIDE_ATTR_NONE &&
        !read_four(attrs, "dilations", "dilation", &w->dilation_h, &w->dilation_w, msg, size))
        return false;
    return read_layout(attrs, true, w, msg, size);
}

bool tide_pool_read_attrs(const tide_attrs *attrs, tide_conv_window *w, char *msg, size_t size)
{
    memset(w, 0, sizeof *w);
    w->dilation_h = w->dilation_w = 1;
    return read_four(attrs, "ksize", "window", &w->size_h, &w->size_w, msg, size) &&
           read_four(attrs, "strides", "stride", &w->stride_h, &w->stride_w, msg, size) &&
           read_layout(attrs, false, w, msg, size);
}

/* ---------------------------------------------------------------- geometry */

bool tide_conv_output_dim(int64_t in, int64_t window, int64_t stride, int64_t dilation, bool same,
                          const int64_t *explicit, const char *dim, int64_t *out, int64_t *pad_before,
                          char *msg, size_t size)
{
    *out = -1;
    *pad_before = explicit ? explicit[0] : 0;
    if (in < 0 || window < 0)
        return true;
    int64_t given = in;
    if (explicit)
        in += explicit[0] + explicit[1]; /* each at most INT32_MAX: no overflow */
    int64_t eff, total, rounded;
    if (__builtin_mul_overflow(window - 1, dilation, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
        __builtin_add_overflow(in, stride - 1, &rounded))
        return snprintf(msg, size, "the %s geometry (input %lld, window %lld, stride %lld, dilation %lld) "
                        "overflows 64 bits", dim, (long long)in, (long long)window, (long long)stride,
                        (long long)dilation), false;
    if (same) {
        *out = rounded / stride;
        if (__builtin_mul_overflow(*out - 1, stride, &total) || __builtin_add_overflow(total, eff, &total))
            return snprintf(msg, size, "the %s geometry (input %lld, window %lld, stride %lld) overflows 64 bits",
                            dim, (long long)in, (long long)window, (long long)stride), false;
        total -= in;
        *pad_before = *out > 0 && total > 0 ? total / 2 : 0;
        return true;
    }
    if (eff > in) {
        char padded[96] = "with VALID padding";
        if (explicit)
            snprintf(padded, sizeof padded, "padded by %lld and %lld (EXPLICIT)", (long long)explicit[0],
                     (long long)explicit[1]);
        if (dilation > 1)
            return snprintf(msg, size,
                            "the window (%lld with dilation %lld, spanning %lld) is larger than the "
                            "input's %s %lld %s", (long long)window, (long long)dilation, (long long)eff,
                            dim, (long long)given, padded), false;
        return snprintf(msg, size, "the window (%lld) is larger than the input's %s %lld %s",
                        (long long)window, dim, (long long)given, padded), false;
    }
    *out = (in - eff) / stride + 1;
    return true;
}

/* out = [N, OH, OW, c] for a window over input [N, H, W, .]. */
static bool spatial(const tide_conv_window *w, const int64_t in[4], int64_t out_c,
                    tide_conv_geometry *g, char *msg, size_t size)
{
    *g = (tide_conv_geometry){.batch = in[0], .in_h = in[1], .in_w = in[2], .in_c = in[3],
                              .out_c = out_c, .win = *w};
    return tide_conv_output_dim(in[1], w->size_h, w->stride_h, w->dilation_h, w->same,
                                w->explicit_padding ? &w->pad[0] : NULL, "height", &g->out_h,
                                &g->pad_top, msg, size) &&
           tide_conv_output_dim(in[2], w->size_w, w->stride_w, w->dilation_w, w->same,
                                w->explicit_padding ? &w->pad[2] : NULL, "width", &g->out_w,
                                &g->pad_left, msg, size);
}

static bool agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

bool tide_conv_geometry_make(const tide_conv_window *w, const int64_t input[4],
                             const int64_t filter[4], tide_conv_geometry *g, char *msg, size_t size)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    tide_shape si = tide_shape_make(4, input), sf = tide_shape_make(4, filter);
    if (!agree(input[3], filter[2]))
        return snprintf(msg, size,
                        "the input's depth %lld differs from the filter's input depth %lld: input %s "
                        "(NHWC), filter %s ([height, width, in, out])", (long long)input[3],
                        (long long)filter[2], SHAPE_STR(si, a), SHAPE_STR(sf, b)), false;
    if (filter[0] == 0 || filter[1] == 0)
        return snprintf(msg, size, "the filter's height and width must be at least 1, got filter %s",
                        SHAPE_STR(sf, b)), false;
    tide_conv_window fw = *w;
    fw.size_h = filter[0];
    fw.size_w = filter[1];
    if (spatial(&fw, input, filter[3], g, msg, size))
        return true;
    size_t used = strlen(msg);
    snprintf(msg + used, size - used, ": input %s, filter %s", SHAPE_STR(si, a), SHAPE_STR(sf, b));
    return false;
}

bool tide_conv_backprop_geometry(const tide_conv_window *w, const int64_t input[4],
                                 const int64_t filter[4], const int64_t out_backprop[4],
                                 tide_conv_geometry *g, char *msg, size_t size)
{
    if (!tide_conv_geometry_make(w, input, filter, g, msg, size))
        return false;
    const int64_t want[4] = {g->batch, g->out_h, g->out_w, g->out_c};
    for (int i = 0; i < 4; i++)
        if (!agree(want[i], out_backprop[i])) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
            char d[TIDE_SHAPE_STR_MAX];
            tide_shape sd = tide_shape_make(4, out_backprop), sw = tide_shape_make(4, want);
            tide_shape si = tide_shape_make(4, input), sf = tide_shape_make(4, filter);
            snprintf(msg, size,
                     "out_backprop has shape %s, but the convolution of input %s with filter %s "
                     "gives %s", SHAPE_STR(sd, a), SHAPE_STR(si, b), SHAPE_STR(sf, c),
                     SHAPE_STR(sw, d));
            return false;
        }
    return true;
}

bool tide_depthwise_geometry(const tide_conv_window *w, const int64_t input[4], const int64_t filter[4],
                             const int64_t *out_backprop, tide_conv_geometry *g, char *msg, size_t size)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX], d[TIDE_SHAPE_STR_MAX];
    tide_shape si = tide_shape_make(4, input), sf = tide_shape_make(4, filter);
    if (!agree(input[3], filter[2]))
        return snprintf(msg, size, "the input's depth %lld differs from the filter's %lld: input %s (NHWC), "
                        "filter %s ([height, width, in, multiplier])", (long long)input[3], (long long)filter[2],
                        SHAPE_STR(si, a), SHAPE_STR(sf, b)), false;
    if (filter[0] == 0 || filter[1] == 0)
        return snprintf(msg, size, "the filter's height and width must be at least 1, got filter %s",
                        SHAPE_STR(sf, b)), false;
    tide_conv_window fw = *w;
    fw.size_h = filter[0];
    fw.size_w = filter[1];
    int64_t depth = input[3] >= 0 ? input[3] : filter[2];
    int64_t out_c = depth < 0 || filter[3] < 0 ? -1 : depth * filter[3];
    if (!spatial(&fw, input, out_c, g, msg, size)) {
        size_t used = strlen(msg);
        snprintf(msg + used, size - used, ": input %s, filter %s", SHAPE_STR(si, a), SHAPE_STR(sf, b));
        return false;
    }
    const int64_t want[4] = {g->batch, g->out_h, g->out_w, g->out_c};
    for (int i = 0; out_backprop && i < 4; i++)
        if (!agree(want[i], out_backprop[i])) {
            tide_shape sd = tide_shape_make(4, out_backprop), sw = tide_shape_make(4, want);
            return snprintf(msg, size, "out_backprop has shape %s, but the depthwise convolution of input %s "
                            "with filter %s gives %s", SHAPE_STR(sd, a), SHAPE_STR(si, b), SHAPE_STR(sf, c),
                            SHAPE_STR(sw, d)), false;
        }
    return true;
}

bool tide_pool_geometry(const tide_conv_window *w, const int64_t input[4], const int64_t *pooled,
                        const char *pooled_name, tide_conv_geometry *g, char *msg, size_t size)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
    tide_shape si = tide_shape_make(4, input);
    if (!spatial(w, input, input[3], g, msg, size)) {
        size_t used = strlen(msg);
        snprintf(msg + used, size - used, ": input %s, window %lld x %lld", SHAPE_STR(si, a),
                 (long long)w->size_h, (long long)w->size_w);
        return false;
    }
    if (!pooled)
        return true;
    const int64_t want[4] = {g->batch, g->out_h, g->out_w, g->out_c};
    for (int i = 0; i < 4; i++)
        if (!agree(want[i], pooled[i])) {
            tide_shape sp = tide_shape_make(4, pooled), sw = tide_shape_make(4, want);
            snprintf(msg, size, "%s has shape %s, but pooling input %s gives %s", pooled_name,
                     SHAPE_STR(sp, a), SHAPE_STR(si, b), SHAPE_STR(sw, c));
            return false;
        }
    return true;
}

/* ---------------------------------------------------------------- operands */

bool tide_conv_input_dims(const tide_shape *s, const char *what, int64_t dims[4], char *msg, size_t size)
{
    char buf[TIDE_SHAPE_STR_MAX];
    if (s->rank >= 0 && s->rank != 4)
        return snprintf(msg, size, "%s must have rank 4 (%s), got shape %s", what,
                        strcmp(what, "filter") == 0 ? "[height, width, in, out]" : "NHWC",
                        SHAPE_STR(*s, buf)), false;
    for (int d = 0; d < 4; d++)
        dims[d] = s->rank == 4 ? s->dims[d] : -1;
    return true;
}

bool tide_conv_size_dims(const tide_shape *s, const tide_tensor *value, const char *what, int64_t dims[4],
                         char *msg, size_t size)
{
    char buf[TIDE_SHAPE_STR_MAX];
    if (s->rank >= 0 && (s->rank != 1 || (s->dims[0] >= 0 && s->dims[0] != 4)))
        return snprintf(msg, size, "%s must be a vector of 4 sizes, got shape %s", what,
                        SHAPE_STR(*s, buf)), false;
    for (int d = 0; d < 4; d++)
        dims[d] = -1;
    if (!value)
        return true;
    tide_op_index_values(value, dims, 4);
    for (int d = 0; d < 4; d++)
        if (dims[d] < 0)
            return snprintf(msg, size, "%s must not be negative, got %s", what,
                            tide_op_format_values(dims, 4, buf, sizeof buf)), false;
    return true;
}

/* The window attrs of a convolution (pool false) or pooling op. */
static bool read_window(const tide_attrs *attrs, bool pool, tide_conv_window *w, char *msg, size_t size)
{
    return pool ? tide_pool_read_attrs(attrs, w, msg, size) : tide_conv_read_attrs(attrs, w, msg, size);
}

/* ---------------------------------------------------------------- the checks in kernels */

static tide_status kernel_fail(tide_kernel_ctx *ctx, const char *msg)
{
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
}

tide_status tide_conv_kernel_init(tide_kernel_ctx *ctx, void **state, bool pool)
{
    tide_conv_window *w = malloc(sizeof *w);
    char msg[TIDE_OP_MSG_MAX];
    if (!w)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    *state = w;
    if (!read_window(tide_kernel_attrs(ctx), pool, w, msg, sizeof msg))
        return kernel_fail(ctx, msg);
    return TIDE_OK;
}

tide_status tide_conv_kernel_input_dims(tide_kernel_ctx *ctx, int i, const char *what, int64_t dims[4])
{
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_conv_input_dims(tide_tensor_shape(tide_kernel_input(ctx, i)), what, dims, msg, sizeof msg))
        return kernel_fail(ctx, msg);
    return TIDE_OK;
}

tide_status tide_conv_kernel_size_dims(tide_kernel_ctx *ctx, int i, const char *what, int64_t dims[4])
{
    const tide_tensor *t = tide_kernel_input(ctx, i);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_conv_size_dims(tide_tensor_shape(t), t, what, dims, msg, sizeof msg))
        return kernel_fail(ctx, msg);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- shape functions */

static tide_status shape_fail(tide_shape_ctx *ctx, const char *msg)
{
    return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
}

/* The dims of input i when its rank is 4 or unknown (then all -1); fails otherwise. */
static tide_status rank4(tide_shape_ctx *ctx, int i, const char *what, int64_t dims[4])
{
    tide_shape s = tide_shape_input(ctx, i);
    char msg[TIDE_OP_MSG_MAX];
    return tide_conv_input_dims(&s, what, dims, msg, sizeof msg) ? TIDE_OK : shape_fail(ctx, msg);
}

/* A size input (int32 [4]): its values when it is a graph-time constant, else -1s; fails when its
 * shape or values are already known to be wrong. */
static tide_status size_input(tide_shape_ctx *ctx, int i, const char *what, int64_t dims[4])
{
    tide_shape s = tide_shape_input(ctx, i);
    char msg[TIDE_OP_MSG_MAX];
    return tide_conv_size_dims(&s, tide_shape_input_value(ctx, i), what, dims, msg, sizeof msg)
               ? TIDE_OK
               : shape_fail(ctx, msg);
}

static tide_status window_attrs(tide_shape_ctx *ctx, bool pool, tide_conv_window *w)
{
    char msg[TIDE_OP_MSG_MAX];
    return read_window(tide_shape_attrs(ctx), pool, w, msg, sizeof msg) ? TIDE_OK : shape_fail(ctx, msg);
}

static void set_output4(tide_shape_ctx *ctx, const int64_t dims[4])
{
    tide_shape out = tide_shape_make(4, dims);
    tide_shape_set_output(ctx, 0, &out);
}

/* Conv2D (input, filter) and MaxPool, AvgPool (value): [N, OH, OW, C] of the window's geometry. */
static tide_status forward_shape(tide_shape_ctx *ctx, bool pool)
{
    tide_conv_window w;
    int64_t in[4], f[4];
    tide_status st = window_attrs(ctx, pool, &w);
    if (st == TIDE_OK)
        st = rank4(ctx, 0, pool ? "value" : "input", in);
    if (st == TIDE_OK && !pool)
        st = rank4(ctx, 1, "filter", f);
    if (st != TIDE_OK)
        return st;
    tide_conv_geometry g;
    char msg[TIDE_OP_MSG_MAX];
    if (pool ? !tide_pool_geometry(&w, in, NULL, NULL, &g, msg, sizeof msg)
             : !tide_conv_geometry_make(&w, in, f, &g, msg, sizeof msg))
        return shape_fail(ctx, msg);
    set_output4(ctx, (const int64_t[4]){g.batch, g.out_h, g.out_w, g.out_c});
    return TIDE_OK;
}

static tide_status conv2d_shape(tide_shape_ctx *ctx) { return forward_shape(ctx, false); }
static tide_status pool_shape(tide_shape_ctx *ctx) { return forward_shape(ctx, true); }

/* Conv2DBackpropInput (sizes_index 0) and Conv2DBackpropFilter (sizes_index 1): the size input
 * gives the output's shape; the other two inputs fill in what it leaves unknown. */
static tide_status conv_backprop_shape(tide_shape_ctx *ctx, int sizes_index)
{
    tide_conv_window w;
    int64_t in[4], f[4], dy[4];
    tide_status st = window_attrs(ctx, false, &w);
    if (st == TIDE_OK)
        st = sizes_index == 0 ? size_input(ctx, 0, "input_sizes", in) : rank4(ctx, 0, "input", in);
    if (st == TIDE_OK)
        st = sizes_index == 1 ? size_input(ctx, 1, "filter_sizes", f) : rank4(ctx, 1, "filter", f);
    if (st == TIDE_OK)
        st = rank4(ctx, 2, "out_backprop", dy);
    if (st != TIDE_OK)
        return st;
    tide_conv_geometry g;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_conv_backprop_geometry(&w, in, f, dy, &g, msg, sizeof msg))
        return shape_fail(ctx, msg);
    if (sizes_index == 0) {
        in[0] = in[0] >= 0 ? in[0] : dy[0];
        in[3] = in[3] >= 0 ? in[3] : f[2];
        set_output4(ctx, in);
    } else {
        f[2] = f[2] >= 0 ? f[2] : in[3];
        f[3] = f[3] >= 0 ? f[3] : dy[3];
        set_output4(ctx, f);
    }
    return TIDE_OK;
}

static tide_status conv2d_backprop_input_shape(tide_shape_ctx *ctx) { return conv_backprop_shape(ctx, 0); }
static tide_status conv2d_backprop_filter_shape(tide_shape_ctx *ctx) { return conv_backprop_shape(ctx, 1); }

/* DepthwiseConv2dNative (sizes_index -1) and its BackpropInput (0) and BackpropFilter (1). */
static tide_status depthwise_shape(tide_shape_ctx *ctx, int sizes_index)
{
    tide_conv_window w;
    int64_t in[4], f[4], dy[4];
    tide_status st = window_attrs(ctx, false, &w);
    if (st == TIDE_OK)
        st = sizes_index == 0 ? size_input(ctx, 0, "input_sizes", in) : rank4(ctx, 0, "input", in);
    if (st == TIDE_OK)
        st = sizes_index == 1 ? size_input(ctx, 1, "filter_sizes", f) : rank4(ctx, 1, "filter", f);
    if (st == TIDE_OK && sizes_index >= 0)
        st = rank4(ctx, 2, "out_backprop", dy);
    if (st != TIDE_OK)
        return st;
    tide_conv_geometry g;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_depthwise_geometry(&w, in, f, sizes_index >= 0 ? dy : NULL, &g, msg, sizeof msg))
        return shape_fail(ctx, msg);
    if (sizes_index < 0) {
        set_output4(ctx, (const int64_t[4]){g.batch, g.out_h, g.out_w, g.out_c});
    } else if (sizes_index == 0) {
        in[0] = in[0] >= 0 ? in[0] : dy[0];
        in[3] = in[3] >= 0 ? in[3] : f[2];
        set_output4(ctx, in);
    } else {
        f[2] = f[2] >= 0 ? f[2] : in[3];
        set_output4(ctx, f);
    }
    return TIDE_OK;
}

static tide_status depthwise_forward_shape(tide_shape_ctx *ctx) { return depthwise_shape(ctx, -1); }
static tide_status depthwise_input_shape(tide_shape_ctx *ctx) { return depthwise_shape(ctx, 0); }
static tide_status depthwise_filter_shape(tide_shape_ctx *ctx) { return depthwise_shape(ctx, 1); }

/* MaxPoolGrad (orig_input, orig_output, grad) and AvgPoolGrad (orig_input_shape, grad): the output
 * has the original input's shape. */
static tide_status pool_grad_shape(tide_shape_ctx *ctx, bool max)
{
    tide_conv_window w;
    int64_t in[4], y[4], dy[4];
    tide_status st = window_attrs(ctx, true, &w);
    if (st == TIDE_OK)
        st = max ? rank4(ctx, 0, "orig_input", in) : size_input(ctx, 0, "orig_input_shape", in);
    if (st == TIDE_OK && max)
        st = rank4(ctx, 1, "orig_output", y);
    if (st == TIDE_OK)
        st = rank4(ctx, max ? 2 : 1, "grad", dy);
    if (st != TIDE_OK)
        return st;
    tide_conv_geometry g;
    char msg[TIDE_OP_MSG_MAX];
    if ((max && !tide_pool_geometry(&w, in, y, "orig_output", &g, msg, sizeof msg)) ||
        !tide_pool_geometry(&w, in, dy, "grad", &g, msg, sizeof msg))
        return shape_fail(ctx, msg);
    if (!max) {
        in[0] = in[0] >= 0 ? in[0] : dy[0];
        in[3] = in[3] >= 0 ? in[3] : dy[3];
    }
    set_output4(ctx, in);
    return TIDE_OK;
}

static tide_status max_pool_grad_shape(tide_shape_ctx *ctx) { return pool_grad_shape(ctx, true); }
static tide_status avg_pool_grad_shape(tide_shape_ctx *ctx) { return pool_grad_shape(ctx, false); }

/* ---------------------------------------------------------------- registration */

#define CONV_ATTRS                                                                                \
    "T: {float16, bfloat16, float32, float64}", "strides: list(int)", "use_cudnn_on_gpu: bool = true",               \
        "padding: string", "explicit_paddings: list(int) = []", "data_format: string = 'NHWC'",   \
        "dilations: list(int) = [1, 1, 1, 1]"
#define POOL_ATTRS                                                                                \
    "T: {float32, float64}", "ksize: list(int)", "strides: list(int)", "padding: string",         \
        "data_format: string = 'NHWC'"
#define CONV_ATTR_DOC                                                                             \
    "strides [1, sh, sw, 1] moves the window; dilations [1, dh, dw, 1] spaces the filter taps; "  \
    "padding 'VALID' (no padding, the window must fit), 'SAME' (output ceil(size / stride), "     \
    "zeros added evenly, the extra one after) or 'EXPLICIT' (explicit_paddings [0, 0, top, "      \
    "bottom, left, right, 0, 0] zeros); data_format must be 'NHWC'; use_cudnn_on_gpu is "         \
    "accepted and ignored (there is no cuDNN on a CPU). float16 and bfloat16 are computed in "    \
    "float32 and rounded once (on the CPU by the float32 kernels; on a GPU by cuDNN with float32 " \
    "accumulation). "
#define DEPTHWISE_ATTRS                                                                           \
    "T: {float32, float64}", "strides: list(int)", "padding: string",                             \
        "data_format: string = 'NHWC'", "dilations: list(int) = [1, 1, 1, 1]"
#define DEPTHWISE_ATTR_DOC                                                                        \
    "strides, dilations and padding ('SAME' or 'VALID') as Conv2D's; data_format must be 'NHWC'; " \
    "shapes that do not fit are INVALID_ARGUMENT naming them."
#define CONV_TF_DIFFERENCES                                                                       \
    "data_format 'NCHW' is refused at graph time (tide's convolutions take NHWC only)."
#define DEPTHWISE_TF_DIFFERENCES                                                                  \
    "float16 and bfloat16 are not supported; " CONV_TF_DIFFERENCES
#define POOL_TF_DIFFERENCES                                                                       \
    "float16 and bfloat16 are not supported; data_format 'NCHW' (and 'NCHW_VECT_C') is refused at " \
    "graph time (NHWC only)."
#define POOL_ATTR_DOC                                                                             \
    "ksize [1, kh, kw, 1] is the window, strides [1, sh, sw, 1] moves it; padding 'VALID' or "    \
    "'SAME' as for Conv2D (padding is never part of a window); data_format must be 'NHWC'. "

static void register_conv_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Conv2D",
        .inputs = {"input: T", "filter: T"},
        .outputs = {"output: T"},
        .attrs = {CONV_ATTRS},
        .shape_fn = conv2d_shape,
        .doc = "2-D convolution (cross-correlation, as in TensorFlow) of input [N, H, W, Cin] with "
               "filter [KH, KW, Cin, Cout], giving [N, OH, OW, Cout]: output[n, i, j, o] = sum over "
               "kh, kw, c of input[n, i*sh + kh*dh - pad_top, j*sw + kw*dw - pad_left, c] * "
               "filter[kh, kw, c, o], with zeros outside the input. " CONV_ATTR_DOC
               "Malformed attrs fail at graph time; differing depths or a filter larger than a "
               "VALID input are INVALID_ARGUMENT naming both shapes. The CPU kernels are direct (no "
               "im2col), with AVX-512 or AVX2/FMA micro-kernels chosen at run time by what the CPU has.",
        .tf_differences = CONV_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "Conv2DBackpropInput",
        .inputs = {"input_sizes: int32", "filter: T", "out_backprop: T"},
        .outputs = {"output: T"},
        .attrs = {CONV_ATTRS},
        .shape_fn = conv2d_backprop_input_shape,
        .doc = "The gradient of Conv2D with respect to its input: given the input's shape "
               "input_sizes [N, H, W, Cin], the filter and the gradient out_backprop [N, OH, OW, "
               "Cout] of Conv2D's output, returns the [N, H, W, Cin] gradient (a transposed "
               "convolution). Attrs as Conv2D's; out_backprop must have the shape Conv2D would "
               "give, else INVALID_ARGUMENT naming the shapes.",
        .tf_differences = CONV_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "Conv2DBackpropFilter",
        .inputs = {"input: T", "filter_sizes: int32", "out_backprop: T"},
        .outputs = {"output: T"},
        .attrs = {CONV_ATTRS},
        .shape_fn = conv2d_backprop_filter_shape,
        .doc = "The gradient of Conv2D with respect to its filter: given the input [N, H, W, Cin], "
               "the filter's shape filter_sizes [KH, KW, Cin, Cout] and the gradient out_backprop "
               "[N, OH, OW, Cout] of Conv2D's output, returns the [KH, KW, Cin, Cout] gradient, "
               "summed over the batch. Attrs as Conv2D's; out_backprop must have the shape Conv2D "
               "would give, else INVALID_ARGUMENT naming the shapes.",
        .tf_differences = CONV_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "DepthwiseConv2dNative",
        .inputs = {"input: T", "filter: T"},
        .outputs = {"output: T"},
        .attrs = {DEPTHWISE_ATTRS},
        .shape_fn = depthwise_forward_shape,
        .doc = "Depthwise 2-D convolution: each input channel c is convolved with its own filters "
               "filter[:, :, c, m] (m < M, the channel multiplier), giving [N, OH, OW, C * M]: "
               "output[n, i, j, c * M + m] = sum over kh, kw of input[n, i*sh + kh*dh - pad_top, "
               "j*sw + kw*dw - pad_left, c] * filter[kh, kw, c, m]. " DEPTHWISE_ATTR_DOC,
        .tf_differences = DEPTHWISE_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "DepthwiseConv2dNativeBackpropInput",
        .inputs = {"input_sizes: int32", "filter: T", "out_backprop: T"},
        .outputs = {"output: T"},
        .attrs = {DEPTHWISE_ATTRS},
        .shape_fn = depthwise_input_shape,
        .doc = "The gradient of DepthwiseConv2dNative with respect to its input [N, H, W, C] "
               "(input_sizes), from the filter and out_backprop [N, OH, OW, C * M]. "
               DEPTHWISE_ATTR_DOC,
        .tf_differences = DEPTHWISE_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "DepthwiseConv2dNativeBackpropFilter",
        .inputs = {"input: T", "filter_sizes: int32", "out_backprop: T"},
        .outputs = {"output: T"},
        .attrs = {DEPTHWISE_ATTRS},
        .shape_fn = depthwise_filter_shape,
        .doc = "The gradient of DepthwiseConv2dNative with respect to its filter [KH, KW, C, M] "
               "(filter_sizes), from the input and out_backprop, summed over the batch. "
               DEPTHWISE_ATTR_DOC,
        .tf_differences = DEPTHWISE_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "MaxPool",
        .inputs = {"value: T"},
        .outputs = {"output: T"},
        .attrs = {POOL_ATTRS},
        .shape_fn = pool_shape,
        .doc = "Max pooling of value [N, H, W, C]: each output element is the largest element of "
               "its window, per channel. " POOL_ATTR_DOC
               "A NaN in a window is the window's maximum.",
        .tf_differences = POOL_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "MaxPoolGrad",
        .inputs = {"orig_input: T", "orig_output: T", "grad: T"},
        .outputs = {"output: T"},
        .attrs = {POOL_ATTRS},
        .shape_fn = max_pool_grad_shape,
        .doc = "The gradient of MaxPool: each element of grad (shaped like MaxPool's output) is "
               "added to the element of orig_input that was its window's maximum; with ties, to "
               "the first one in row-major window order (TensorFlow's rule); a NaN counts as the "
               "maximum. The result is shaped like orig_input. orig_output only has its shape "
               "checked: the maxima are found again in orig_input.",
        .tf_differences = POOL_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "AvgPool",
        .inputs = {"value: T"},
        .outputs = {"output: T"},
        .attrs = {POOL_ATTRS},
        .shape_fn = pool_shape,
        .doc = "Average pooling of value [N, H, W, C]: each output element is the mean of its "
               "window, per channel; with SAME padding a window at the border averages only the "
               "input elements it covers (TensorFlow's rule). " POOL_ATTR_DOC,
        .tf_differences = POOL_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "AvgPoolGrad",
        .inputs = {"orig_input_shape: int32", "grad: T"},
        .outputs = {"output: T"},
        .attrs = {POOL_ATTRS},
        .shape_fn = avg_pool_grad_shape,
        .doc = "The gradient of AvgPool: each element of grad (shaped like AvgPool's output) is "
               "divided by the number of input elements its window covers and added to each of "
               "them. orig_input_shape [N, H, W, C] is the shape of AvgPool's input and of the "
               "result.",
        .tf_differences = POOL_TF_DIFFERENCES,
    });
}
TIDE_REGISTER(register_conv_ops)
