/* nn_grad.c — gradient functions of the neural-network ops (engine/ops/nn_ops.c) and of Sigmoid and
 * Tanh (math_ops.c), with TensorFlow's math:
 *   Relu, Relu6, Elu   ReluGrad / Relu6Grad / EluGrad of dy and the op's output
 *   Selu               SeluGrad(dy, y)
 *   Softplus, Softsign SoftplusGrad(dy, x), SoftsignGrad(dy, x)
 *   LeakyRelu          LeakyReluGrad(dy, x) with the forward node's alpha
 *   Sigmoid, Tanh      SigmoidGrad(y, dy), TanhGrad(y, dy)
 *   Softmax            (dy - sum(dy * y, -1, keep_dims)) * y
 *   LogSoftmax         dy - exp(y) * sum(dy, -1, keep_dims)
 *   cross-entropies    dfeatures = dloss[:, None] * backprop; dense labels: -dloss[:, None] *
 *                      LogSoftmax(features). A gradient flowing into backprop is refused.
 *   BiasAdd            dvalue = dy, dbias = BiasAddGrad(dy)
 *   L2Loss             x * dy
 *   Dropout            dy * mask (rate gets none)
 *   TopKV2             dy scattered back to the entries the values came from (UnsortedSegmentSum)
 *   FusedBatchNorm     FusedBatchNormGrad from the saved statistics; gradients flowing into the
 *                      statistics outputs are refused, and so, in inference, are gradients with
 *                      respect to the mean and variance inputs.
 * Second order, the gradient ops of these (g their incoming gradient, dz the gradient flowing into
 * their output); each is linear in g, so d/dg is the same op applied to dz:
 *   ReluGrad(g, x), Relu6Grad(g, x), LeakyReluGrad(g, x)
 *                                     dg = the same op of (dz, x) (and alpha); dx = 0
 *   EluGrad(g, out)                   dg = EluGrad(dz, out); dout = dz * g where out < 0, else 0
 *   SoftplusGrad(g, x)                dg = SoftplusGrad(dz, x); dx = SigmoidGrad(sigmoid(x), dz * g)
 *   SigmoidGrad(y, g)                 dy = dz * g * (1 - 2y); dg = SigmoidGrad(y, dz)
 *   TanhGrad(y, g)                    dy = -2 * dz * g * y; dg = TanhGrad(y, dz)
 *   BiasAddGrad(g)                    dg = dz broadcast back to g's shape (channels last)
 * FusedBatchNormGrad, SeluGrad and SoftsignGrad have no gradient function: second derivatives of
 * FusedBatchNorm, Selu and Softsign are not supported (differentiating through them fails by name). */
#include <stdio.h>
#include <string.h>

#include "grad_util.h"

/* Sets input 0's gradient to op(a, b) when it is wanted. */
static tide_status input0_gets(tide_grad_ctx *ctx, const char *op, tide_output a, tide_output b)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, op, a, b));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- activations */

static tide_status relu_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "ReluGrad", DY(0), Y(0)); }
static tide_status relu6_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "Relu6Grad", DY(0), Y(0)); }
static tide_status elu_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "EluGrad", DY(0), Y(0)); }
static tide_status softplus_grad(tide_grad_ctx *ctx)
{
    return input0_gets(ctx, "SoftplusGrad", DY(0), X(0));
}
static tide_status sigmoid_grad(tide_grad_ctx *ctx)
{
    return input0_gets(ctx, "SigmoidGrad", Y(0), DY(0));
}
static tide_status tanh_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "TanhGrad", Y(0), DY(0)); }
static tide_status selu_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "SeluGrad", DY(0), Y(0)); }
static tide_status softsign_grad(tide_grad_ctx *ctx)
{
    return input0_gets(ctx, "SoftsignGrad", DY(0), X(0));
}

/* op(a, b) with the forward node's alpha attr (LeakyRelu's). */
static tide_output with_alpha(tide_grad_ctx *ctx, const char *op, tide_output a, tide_output b)
{
    tide_attrs *attrs = tide_attrs_new();
    double alpha;
    if (tide_attrs_get_float(tide_grad_attrs(ctx), "alpha", &alpha))
        tide_attrs_set_float(attrs, "alpha", alpha);
    tide_output out = tide_grad_op(ctx, op, (tide_output[]){a, b}, 2, attrs);
    tide_attrs_free(attrs);
    return out;
}

static tide_status leaky_relu_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, with_alpha(ctx, "LeakyReluGrad", DY(0), X(0)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- softmax family */

/* sum(t, axis -1) with the axis kept, so that it broadcasts against t. */
static tide_output sum_last_kept(tide_grad_ctx *ctx, tide_output t)
{
    tide_attrs *keep = tide_attrs_new();
    tide_attrs_set_bool(keep, "keep_dims", true);
    static const int32_t last = -1;
    tide_output in[2] = {t, tide_grad_ints(ctx, &last, 1)};
    tide_output sum = tide_grad_op(ctx, "Sum", in, 2, keep);
    tide_attrs_free(keep);
    return sum;
}

static tide_status softmax_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    tide_output y = Y(0), dy = DY(0);
    tide_output centred = tide_grad_op2(ctx, "Sub", dy, sum_last_kept(ctx, tide_grad_op2(ctx, "Mul", dy, y)));
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", centred, y));
    return tide_grad_status(ctx);
}

static tide_status log_softmax_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    tide_output softmax = tide_grad_op1(ctx, "Exp", Y(0));
    tide_output spread = tide_grad_op2(ctx, "Mul", softmax, sum_last_kept(ctx, DY(0)));
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Sub", DY(0), spread));
    return tide_grad_status(ctx);
}

/* Both cross-entropies: features get dloss[:, None] * backprop; dense labels, when wanted,
 * -dloss[:, None] * LogSoftmax(features). */
static tide_status xent_grad(tide_grad_ctx *ctx)
{
    if (DY(1).node)
        return tide_grad_error(ctx, TIDE_UNIMPLEMENTED,
                               "a gradient flows into output 1 (backprop), whose own gradient is not "
                               "supported; differentiate output 0 (loss)");
    tide_output dloss = DY(0);
    if (!dloss.node)
        return TIDE_OK;
    static const int32_t last = -1;
    tide_output column = tide_grad_op2(ctx, "ExpandDims", dloss, tide_grad_ints(ctx, &last, 1));
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", column, Y(1)));
    bool dense = strcmp(tide_node_op(tide_grad_node(ctx)), "SoftmaxCrossEntropyWithLogits") == 0;
    if (dense && tide_grad_wants(ctx, 1)) {
        tide_output log_p = tide_grad_op1(ctx, "LogSoftmax", X(0));
        tide_grad_set_dx(ctx, 1, tide_grad_op1(ctx, "Neg", tide_grad_op2(ctx, "Mul", column, log_p)));
    }
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- layers */

static tide_status bias_add_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, DY(0));
    if (tide_grad_wants(ctx, 1)) {
        const char *format = "NHWC";
        tide_attrs_get_string(tide_grad_attrs(ctx), "data_format", &format);
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_string(a, "data_format", format);
        tide_output dy = DY(0);
        tide_grad_set_dx(ctx, 1, tide_grad_op(ctx, "BiasAddGrad", &dy, 1, a));
        tide_attrs_free(a);
    }
    return tide_grad_status(ctx);
}

static tide_status l2_loss_grad(tide_grad_ctx *ctx) { return input0_gets(ctx, "Mul", X(0), DY(0)); }

/* The mask does not depend on x: a gradient flowing into it changes nothing. */
static tide_status dropout_grad(tide_grad_ctx *ctx)
{
    if (!DY(0).node)
        return TIDE_OK;
    return input0_gets(ctx, "Mul", DY(0), Y(1));
}

/* FusedBatchNorm (V2, V3): FusedBatchNormGrad (V2, V3) from the reserve spaces, with the forward
 * node's epsilon, data_format and is_training. */
static tide_status fused_batch_norm_grad(tide_grad_ctx *ctx)
{
    static const char *const stats[] = {"batch_mean", "batch_variance", "reserve_space_1",
                                        "reserve_space_2", "reserve_space_3"};
    int n_out = tide_node_num_outputs(tide_grad_node(ctx));
    for (int i = 1; i < n_out; i++)
        if (DY(i).node)
            return tide_grad_error(ctx, TIDE_UNIMPLEMENTED,
                                   "a gradient flows into output %d (%s): gradients of the batch "
                                   "statistics are not supported, only of y", i, stats[i - 1]);
    bool training = attr_bool(ctx, "is_training", true);
    if (!training && (tide_grad_wants(ctx, 3) || tide_grad_wants(ctx, 4)))
        return tide_grad_error(ctx, TIDE_UNIMPLEMENTED,
                               "gradient of FusedBatchNorm with is_training=false with respect to "
                               "its mean and variance inputs is not supported");
    if (!DY(0).node || !(tide_grad_wants(ctx, 0) || tide_grad_wants(ctx, 1) || tide_grad_wants(ctx, 2)))
        return TIDE_OK;
    tide_attrs *a = tide_attrs_new();
    const char *format = "NHWC";
    double eps = 0.0001;
    tide_attrs_get_string(tide_grad_attrs(ctx), "data_format", &format);
    tide_attrs_get_float(tide_grad_attrs(ctx), "epsilon", &eps);
    tide_attrs_set_bool(a, "is_training", training);
    tide_attrs_set_string(a, "data_format", format);
    tide_attrs_set_float(a, "epsilon", eps);
    const char *op = tide_node_op(tide_grad_node(ctx));
    char grad_op[32];
    snprintf(grad_op, sizeof grad_op, "FusedBatchNormGrad%s", op + strlen("FusedBatchNorm"));
    tide_output in[6] = {DY(0), X(0), X(1), Y(3), Y(4), n_out > 5 ? Y(5) : NONE};
    tide_node *g = tide_grad_node_new(ctx, grad_op, in, n_out > 5 ? 6 : 5, a);
    tide_attrs_free(a);
    for (int i = 0; g && i < 3; i++)
        if (tide_grad_wants(ctx, i))
            tide_grad_set_dx(ctx, i, (tide_output){g, i});
    return tide_grad_status(ctx);
}

/* TopKV2: each value's gradient goes back to the input entry it came from, zeros elsewhere (the
 * indices output gets none). Built on the flattened input: the entry of row r, column c is r * n + c
 * with n = size(x) / rows and rows = size(indices) / k, all at run time. */
static tide_status top_k_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0) || !DY(0).node)
        return TIDE_OK;
    tide_output x = X(0), one = tide_grad_scalar(ctx, TIDE_INT32, 1), flat = tide_grad_ints(ctx, (int32_t[]){-1}, 1);
    tide_output k = tide_grad_op2(ctx, "Maximum", X(1), one);
    tide_output count = tide_grad_op1(ctx, "Size", Y(1)), size = tide_grad_op1(ctx, "Size", x);
    tide_output rows = tide_grad_op2(ctx, "Maximum", tide_grad_op2(ctx, "FloorDiv", count, k), one);
    tide_output n = tide_grad_op2(ctx, "FloorDiv", size, rows);
    tide_output at = tide_grad_op(ctx, "Range", (tide_output[]){tide_grad_scalar(ctx, TIDE_INT32, 0), count, one},
                                  3, NULL);
    tide_output target = tide_grad_op2(ctx, "Add", tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "FloorDiv", at, k), n),
                                       tide_grad_op2(ctx, "Reshape", Y(1), flat));
    tide_output sums = tide_grad_op(ctx, "UnsortedSegmentSum",
                                    (tide_output[]){tide_grad_op2(ctx, "Reshape", DY(0), flat), target, size}, 3, NULL);
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Reshape", sums, tide_grad_op1(ctx, "Shape", x)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- second order: the gradient ops */

/* ReluGrad(g, x), Relu6Grad(g, x) and LeakyReluGrad(g, x) scale g by a factor that depends on
 * which side of the kinks x is: piecewise constant in x (its gradient is zero, as TensorFlow's,
 * kinks included). */
static tide_status piecewise_linear_grad_grad(tide_grad_ctx *ctx)
{
    tide_output x = X(1);
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, with_alpha(ctx, tide_node_op(tide_grad_node(ctx)), DY(0), x));
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op1(ctx, "ZerosLike", x));
    return tide_grad_status(ctx);
}

/* EluGrad(g, out) = g * (out + 1) where out < 0, else g. */
static tide_status elu_grad_grad(tide_grad_ctx *ctx)
{
    tide_output g = X(0), out = X(1), dz = DY(0);
    input0_gets(ctx, "EluGrad", dz, out);
    if (tide_grad_wants(ctx, 1)) {
        tide_output zero = scalar_like(ctx, out, 0);
        tide_output negative = tide_grad_op2(ctx, "Less", out, zero);
        tide_output dout = tide_grad_op(ctx, "SelectV2",
                                        (tide_output[]){negative, tide_grad_op2(ctx, "Mul", dz, g), zero},
                                        3, NULL);
        tide_grad_set_dx(ctx, 1, dout);
    }
    return tide_grad_status(ctx);
}

/* SoftplusGrad(g, x) = g * sigmoid(x); sigmoid' = sigmoid * (1 - sigmoid), which SigmoidGrad
 * computes from sigmoid(x) without overflowing where exp(|x|) would. */
static tide_status softplus_grad_grad(tide_grad_ctx *ctx)
{
    tide_output g = X(0), x = X(1), dz = DY(0);
    input0_gets(ctx, "SoftplusGrad", dz, x);
    if (tide_grad_wants(ctx, 1)) {
        tide_output s = tide_grad_op1(ctx, "Sigmoid", x);
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, "SigmoidGrad", s, tide_grad_op2(ctx, "Mul", dz, g)));
    }
    return tide_grad_status(ctx);
}

/* SigmoidGrad(y, g) = g * y * (1 - y). */
static tide_status sigmoid_grad_grad(tide_grad_ctx *ctx)
{
    tide_output y = X(0), g = X(1), dz = DY(0);
    if (tide_grad_wants(ctx, 0)) {
        tide_output two_y = tide_grad_op2(ctx, "Add", y, y);
        tide_output one_minus_2y = tide_grad_op2(ctx, "Sub", scalar_like(ctx, y, 1), two_y);
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", dz, g), one_minus_2y));
    }
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, "SigmoidGrad", y, dz));
    return tide_grad_status(ctx);
}

/* TanhGrad(y, g) = g * (1 - y * y). */
static tide_status tanh_grad_grad(tide_grad_ctx *ctx)
{
    tide_output y = X(0), g = X(1), dz = DY(0);
    if (tide_grad_wants(ctx, 0)) {
        tide_output minus_2y = tide_grad_op2(ctx, "Mul", scalar_like(ctx, y, -2), y);
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", dz, g), minus_2y));
    }
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, "TanhGrad", y, dz));
    return tide_grad_status(ctx);
}

/* BiasAddGrad sums g [..., channels] down to [channels]: each element of g gets its channel's dz.
 * Channels are last (BiasAddGrad accepts no other data_format), so dz broadcasts as it is. */
static tide_status bias_add_grad_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0)) {
        tide_output shape = shape_tensor(ctx, X(0), TIDE_INT32);
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "BroadcastTo", DY(0), shape));
    }
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- registration */

static void register_nn_gradients(void)
{
    static const grad_entry table[] = {
        {"Relu", relu_grad},
        {"Relu6", relu6_grad},
        {"Elu", elu_grad},
        {"Softplus", softplus_grad},
        {"Selu", selu_grad},
        {"Softsign", softsign_grad},
        {"LeakyRelu", leaky_relu_grad},
        {"Sigmoid", sigmoid_grad},
        {"Tanh", tanh_grad},
        {"Softmax", softmax_grad},
        {"LogSoftmax", log_softmax_grad},
        {"SoftmaxCrossEntropyWithLogits", xent_grad},
        {"SparseSoftmaxCrossEntropyWithLogits", xent_grad},
        {"BiasAdd", bias_add_grad},
        {"L2Loss", l2_loss_grad},
        {"Dropout", dropout_grad},
        {"TopKV2", top_k_grad},
        {"FusedBatchNorm", fused_batch_norm_grad}, {"FusedBatchNormV2", fused_batch_norm_grad},
        {"FusedBatchNormV3", fused_batch_norm_grad},
        {"ReluGrad", piecewise_linear_grad_grad},
        {"Relu6Grad", piecewise_linear_grad_grad},
        {"LeakyReluGrad", piecewise_linear_grad_grad},
        {"EluGrad", elu_grad_grad},
        {"SoftplusGrad", softplus_grad_grad},
        {"SigmoidGrad", sigmoid_grad_grad},
        {"TanhGrad", tanh_grad_grad},
        {"BiasAddGrad", bias_add_grad_grad},
    };
    register_gradients(table, COUNT_OF(table));
    static const char *const not_differentiable[] = {"InTopK", "InTopKV2"}; /* bool results */
    register_no_gradients(not_differentiable, COUNT_OF(not_differentiable));
}
TIDE_REGISTER(register_nn_gradients)
