/* conv_grad.c — gradient functions of the convolution and pooling ops (engine/ops/conv_ops.c),
 * TensorFlow's formulas, every gradient op taking the forward node's strides, padding, dilations
 * (ksize) and data_format:
 *   Conv2D(x, f)                       dx = Conv2DBackpropInput(shape(x), f, dy)
 *                                      df = Conv2DBackpropFilter(x, shape(f), dy)
 *   Conv2DBackpropInput(s, f, d) = y   df = Conv2DBackpropFilter(dy, shape(f), d)
 *                                      dd = Conv2D(dy, f)
 *   Conv2DBackpropFilter(x, s, d) = y  dx = Conv2DBackpropInput(shape(x), dy, d)
 *                                      dd = Conv2D(x, dy)
 *   DepthwiseConv2dNative and its two backprops: the same, with the depthwise ops
 *   MaxPool(x) = y                     dx = MaxPoolGrad(x, y, dy)
 *   AvgPool(x)                         dx = AvgPoolGrad(shape(x), dy)
 *   AvgPoolGrad(s, g)                  dg = AvgPool(dy) (AvgPoolGrad is linear in g)
 *   ResizeBilinear(x, size)            dx = ResizeBilinearGrad(dy, x)
 * (the two backprop ops are linear in each of their tensor inputs, hence second derivatives of
 * Conv2D). shape(t) is an int32 constant when t's shape is fully known at graph time, else a Shape
 * node. The size inputs get no gradient (integers). MaxPoolGrad has no gradient function
 * (TensorFlow's MaxPoolGradGrad is not implemented): differentiating through it fails by name. */

#include <string.h>

#include "grad_util.h"

/* t's shape as an int32 vector: a constant when known at graph time, else Shape(t). */
static tide_output shape_i32(tide_grad_ctx *ctx, tide_output t)
{
    return shape_tensor(ctx, t, TIDE_INT32);
}

/* The forward node's window attrs (those every op of the family shares), for the gradient ops. */
static tide_attrs *window_attrs(tide_grad_ctx *ctx, bool pool)
{
    static const char *const conv[] = {"strides", "padding", "explicit_paddings", "dilations", "data_format",
                                       NULL};
    static const char *const pooling[] = {"ksize", "strides", "padding", "data_format", NULL};
    const tide_attrs *from = tide_grad_attrs(ctx);
    tide_attrs *a = tide_attrs_new();
    const char *s;
    const int64_t *v;
    int n;
    for (const char *const *name = pool ? pooling : conv; *name; name++) {
        if (tide_attrs_get_string(from, *name, &s))
            tide_attrs_set_string(a, *name, s);
        else if (tide_attrs_get_int_list(from, *name, &v, &n))
            tide_attrs_set_int_list(a, *name, v, n);
    }
    return a;
}

/* Sets input i's gradient to op(inputs) with the forward node's window attrs, when wanted. */
static void gets(tide_grad_ctx *ctx, int i, const char *op, const tide_output *inputs, int n, bool pool)
{
    if (!tide_grad_wants(ctx, i))
        return;
    tide_attrs *a = window_attrs(ctx, pool);
    tide_grad_set_dx(ctx, i, tide_grad_op(ctx, op, inputs, n, a));
    tide_attrs_free(a);
}

/* The three ops of a convolution family: Conv2D's or DepthwiseConv2dNative's, which have the same
 * bilinear structure, so their gradients are built the same way. */
typedef struct conv_family {
    const char *forward, *input, *filter;
} conv_family;

static const conv_family CONV2D = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
static const conv_family DEPTHWISE = {"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                                      "DepthwiseConv2dNativeBackpropFilter"};

static const conv_family *family_of(tide_grad_ctx *ctx)
{
    return strncmp(tide_node_op(tide_grad_node(ctx)), "Depthwise", 9) == 0 ? &DEPTHWISE : &CONV2D;
}

static tide_status conv2d_grad(tide_grad_ctx *ctx)
{
    const conv_family *f = family_of(ctx);
    if (tide_grad_wants(ctx, 0))
        gets(ctx, 0, f->input, (tide_output[]){shape_i32(ctx, X(0)), X(1), DY(0)}, 3, false);
    if (tide_grad_wants(ctx, 1))
        gets(ctx, 1, f->filter, (tide_output[]){X(0), shape_i32(ctx, X(1)), DY(0)}, 3, false);
    return tide_grad_status(ctx);
}

static tide_status conv2d_backprop_input_grad(tide_grad_ctx *ctx)
{
    const conv_family *f = family_of(ctx);
    if (tide_grad_wants(ctx, 1))
        gets(ctx, 1, f->filter, (tide_output[]){DY(0), shape_i32(ctx, X(1)), X(2)}, 3, false);
    gets(ctx, 2, f->forward, (tide_output[]){DY(0), X(1)}, 2, false);
    return tide_grad_status(ctx);
}

static tide_status conv2d_backprop_filter_grad(tide_grad_ctx *ctx)
{
    const conv_family *f = family_of(ctx);
    if (tide_grad_wants(ctx, 0))
        gets(ctx, 0, f->input, (tide_output[]){shape_i32(ctx, X(0)), DY(0), X(2)}, 3, false);
    gets(ctx, 2, f->forward, (tide_output[]){X(0), DY(0)}, 2, false);
    return tide_grad_status(ctx);
}

static tide_status max_pool_grad(tide_grad_ctx *ctx)
{
    gets(ctx, 0, "MaxPoolGrad", (tide_output[]){X(0), Y(0), DY(0)}, 3, true);
    return tide_grad_status(ctx);
}

static tide_status avg_pool_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        gets(ctx, 0, "AvgPoolGrad", (tide_output[]){shape_i32(ctx, X(0)), DY(0)}, 2, true);
    return tide_grad_status(ctx);
}

static tide_status avg_pool_grad_grad(tide_grad_ctx *ctx)
{
    gets(ctx, 1, "AvgPool", (tide_output[]){DY(0)}, 1, true);
    return tide_grad_status(ctx);
}

/* ResizeBilinear: ResizeBilinearGrad of dy onto the images' shape and dtype, same attrs. */
static tide_status resize_bilinear_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "align_corners", attr_bool(ctx, "align_corners", false));
    tide_attrs_set_bool(a, "half_pixel_centers", attr_bool(ctx, "half_pixel_centers", false));
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "ResizeBilinearGrad", (tide_output[]){DY(0), X(0)}, 2, a));
    tide_attrs_free(a);
    return tide_grad_status(ctx);
}

static void register_conv_grads(void)
{
    tide_gradient_register("Conv2D", conv2d_grad);
    tide_gradient_register("Conv2DBackpropInput", conv2d_backprop_input_grad);
    tide_gradient_register("Conv2DBackpropFilter", conv2d_backprop_filter_grad);
    tide_gradient_register("DepthwiseConv2dNative", conv2d_grad);
    tide_gradient_register("DepthwiseConv2dNativeBackpropInput", conv2d_backprop_input_grad);
    tide_gradient_register("DepthwiseConv2dNativeBackpropFilter", conv2d_backprop_filter_grad);
    tide_gradient_register("MaxPool", max_pool_grad);
    tide_gradient_register("AvgPool", avg_pool_grad);
    tide_gradient_register("AvgPoolGrad", avg_pool_grad_grad);
    tide_gradient_register("ResizeBilinear", resize_bilinear_grad);
}
TIDE_REGISTER(register_conv_grads)
