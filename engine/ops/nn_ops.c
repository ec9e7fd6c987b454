/* nn_ops.c — definitions of the neural-network ops (TensorFlow 1.x names and semantics), convolution
 * and pooling aside (conv_ops.c):
 *   activations     Relu, Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu and their gradient ops
 *                   ReluGrad, ..., LeakyReluGrad, plus SigmoidGrad and TanhGrad for math_ops.c's
 *                   Sigmoid and Tanh;
 *   softmax family  Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and its sparse variant;
 *   layers          BiasAdd, BiasAddGrad, L2Loss, Dropout, FusedBatchNorm(V2, V3),
 *                   FusedBatchNormGrad(V2, V3).
 * All of them take float32 and float64. The shape checks are shared with the kernels (nn_ops.h), so
 * that graph time and run time refuse the same inputs with the same messages; shape functions work
 * on partial shapes (an unknown batch stays unknown). Kernels: kernels/cpu/activation.c, softmax.c,
 * nn_misc.c, batch_norm.c; gradient functions: engine/grads/nn_grad.c. */
#include <stdio.h>
#include <string.h>

#include "../tide_op.h"
#include "nn_ops.h"
#include "op_util.h"

#define T_FLOAT "T: {float32, float64}"

/* ---------------------------------------------------------------- shared checks (nn_ops.h) */

/* The known one of two dims that must agree, or -1 when both are unknown. */
static int64_t merge_dim(int64_t a, int64_t b) { return a >= 0 ? a : b; }

static bool dims_conflict(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

bool tide_nn_same_shape(const tide_shape *a, const tide_shape *b, const char *name_a,
                        const char *name_b, tide_shape *merged, char *msg, size_t size)
{
    *merged = a->rank >= 0 ? *a : *b;
    bool conflict = a->rank >= 0 && b->rank >= 0 && a->rank != b->rank;
    for (int i = 0; !conflict && a->rank >= 0 && b->rank >= 0 && i < a->rank; i++) {
        conflict = dims_conflict(a->dims[i], b->dims[i]);
        merged->dims[i] = merge_dim(a->dims[i], b->dims[i]);
    }
    if (!conflict)
        return true;
    char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
    snprintf(msg, size, "%s and %s must have the same shape: %s is %s, %s is %s", name_a, name_b,
             name_a, tide_shape_format(a, sa, sizeof sa), name_b, tide_shape_format(b, sb, sizeof sb));
    return false;
}

bool tide_nn_check_logits(const tide_shape *logits, char *msg, size_t size)
{
    if (logits->rank != 0)
        return true;
    snprintf(msg, size, "logits must have rank >= 1 (the last dimension holds the classes), got a "
                        "scalar");
    return false;
}

bool tide_nn_check_xent(const tide_shape *features, const tide_shape *labels, bool sparse,
                        int64_t *batch, int64_t *classes, char *msg, size_t size)
{
    char sf[TIDE_SHAPE_STR_MAX], sl[TIDE_SHAPE_STR_MAX];
    tide_shape_format(features, sf, sizeof sf);
    tide_shape_format(labels, sl, sizeof sl);
    int label_rank = sparse ? 1 : 2;
    if (features->rank >= 0 && features->rank != 2)
        return snprintf(msg, size, "features must be a matrix [batch, classes], got shape %s", sf),
               false;
    if (labels->rank >= 0 && labels->rank != label_rank)
        return snprintf(msg, size,
                        sparse ? "labels must be a vector [batch] of class indices, got shape %s"
                               : "labels must be a matrix [batch, classes] like features, got shape %s",
                        sl), false;
    int64_t fb = features->rank == 2 ? features->dims[0] : -1;
    int64_t fc = features->rank == 2 ? features->dims[1] : -1;
    int64_t lb = labels->rank == label_rank ? labels->dims[0] : -1;
    int64_t lc = !sparse && labels->rank == 2 ? labels->dims[1] : -1;
    if (dims_conflict(fb, lb) || dims_conflict(fc, lc))
        return snprintf(msg, size,
                        sparse ? "labels %s must hold one class index per row of features %s"
                               : "features and labels must have the same shape: features is %s, "
                                 "labels is %s",
                        sparse ? sl : sf, sparse ? sf : sl), false;
    *batch = merge_dim(fb, lb);
    *classes = merge_dim(fc, lc);
    if (*batch > 0 && *classes == 0)
        return snprintf(msg, size, "features %s have no classes: each row needs at least one", sf),
               false;
    return true;
}

bool tide_nn_check_data_format(const char *data_format, char *msg, size_t size)
{
    if (strcmp(data_format, "NHWC") == 0)
        return true;
    snprintf(msg, size, "data_format '%s' is not supported: only 'NHWC' (channels last)", data_format);
    return false;
}

bool tide_nn_check_batch_norm_format(const char *data_format, char *msg, size_t size)
{
    if (strcmp(data_format, "NHWC") == 0 || strcmp(data_format, "NDHWC") == 0)
        return true;
    snprintf(msg, size, "data_format '%s' is not supported: only channels last ('NHWC', 'NDHWC')",
             data_format);
    return false;
}

bool tide_nn_check_batch_norm_types(tide_dtype t, tide_dtype u, char *msg, size_t size)
{
    if (t == u)
        return true;
    snprintf(msg, size, "U (%s) must be T (%s): tide computes a batch normalisation in one dtype",
             tide_dtype_name(u), tide_dtype_name(t));
    return false;
}

bool tide_nn_check_bias_add(const tide_shape *value, const tide_shape *bias, int64_t *channels,
                            char *msg, size_t size)
{
    char sv[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
    tide_shape_format(value, sv, sizeof sv);
    if (value->rank >= 0 && value->rank < 2)
        return snprintf(msg, size, "value must have rank >= 2 ([..., channels]), got shape %s", sv),
               false;
    *channels = value->rank >= 2 ? value->dims[value->rank - 1] : -1;
    if (!bias)
        return true;
    tide_shape_format(bias, sb, sizeof sb);
    if (bias->rank >= 0 && bias->rank != 1)
        return snprintf(msg, size, "bias must be a vector [channels], got shape %s", sb), false;
    int64_t c = bias->rank == 1 ? bias->dims[0] : -1;
    if (dims_conflict(*channels, c))
        return snprintf(msg, size,
                        "bias %s must have one element per channel, the last dimension of value %s",
                        sb, sv), false;
    *channels = merge_dim(*channels, c);
    return true;
}

bool tide_nn_check_dropout_rate(const tide_shape *rate_shape, const double *value, char *msg,
                                size_t size)
{
    char s[TIDE_SHAPE_STR_MAX];
    if (rate_shape->rank > 0)
        return snprintf(msg, size, "rate must be a scalar, got shape %s",
                        tide_shape_format(rate_shape, s, sizeof s)), false;
    if (value && !(*value >= 0 && *value < 1))
        return snprintf(msg, size, "rate must be in [0, 1) (the probability of dropping an element), "
                                   "got %g", *value), false;
    return true;
}

bool tide_nn_check_batch_norm_x(const tide_shape *x, int64_t *channels, char *msg, size_t size)
{
    char s[TIDE_SHAPE_STR_MAX];
    *channels = x->rank >= 2 ? x->dims[x->rank - 1] : -1;
    if (x->rank < 0 || x->rank >= 2)
        return true;
    snprintf(msg, size, "x must have rank >= 2 ([..., channels]), got shape %s",
             tide_shape_format(x, s, sizeof s));
    return false;
}

bool tide_nn_check_channel_vector(const tide_shape *v, const char *name, bool may_be_empty,
                                  const tide_shape *x, int64_t *channels, char *msg, size_t size)
{
    char sv[TIDE_SHAPE_STR_MAX], sx[TIDE_SHAPE_STR_MAX];
    tide_shape_format(v, sv, sizeof sv);
    tide_shape_format(x, sx, sizeof sx);
    if (v->rank >= 0 && v->rank != 1)
        return snprintf(msg, size, "%s must be a vector of one value per channel (the last dimension "
                                   "of x %s), got shape %s", name, sx, sv), false;
    int64_t c = v->rank == 1 ? v->dims[0] : -1;
    if (c == 0 && may_be_empty)
        return true;
    if (dims_conflict(*channels, c))
        return snprintf(msg, size, "%s must have %lld elements, one per channel (the last dimension of "
                                   "x %s), got shape %s%s", name, (long long)*channels, sx, sv,
                        may_be_empty ? " (or be empty in training)" : ""), false;
    *channels = merge_dim(*channels, c);
    return true;
}

/* ---------------------------------------------------------------- shape functions */

static tide_status failed(tide_shape_ctx *ctx, const char *msg)
{
    return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
}

static tide_status pair_shape(tide_shape_ctx *ctx, const char *name_a, const char *name_b)
{
    tide_shape a = tide_shape_input(ctx, 0), b = tide_shape_input(ctx, 1), merged;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_same_shape(&a, &b, name_a, name_b, &merged, msg, sizeof msg))
        return failed(ctx, msg);
    tide_shape_set_output(ctx, 0, &merged);
    return TIDE_OK;
}

static tide_status features_grad_shape(tide_shape_ctx *ctx)
{
    return pair_shape(ctx, "gradients", "features");
}
static tide_status outputs_grad_shape(tide_shape_ctx *ctx)
{
    return pair_shape(ctx, "gradients", "outputs");
}
static tide_status y_dy_shape(tide_shape_ctx *ctx) { return pair_shape(ctx, "y", "dy"); }

static tide_status softmax_shape(tide_shape_ctx *ctx)
{
    tide_shape logits = tide_shape_input(ctx, 0);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_logits(&logits, msg, sizeof msg))
        return failed(ctx, msg);
    tide_shape_set_output(ctx, 0, &logits);
    return TIDE_OK;
}

static tide_status xent_shape(tide_shape_ctx *ctx, bool sparse)
{
    tide_shape f = tide_shape_input(ctx, 0), l = tide_shape_input(ctx, 1);
    int64_t batch, classes;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_xent(&f, &l, sparse, &batch, &classes, msg, sizeof msg))
        return failed(ctx, msg);
    tide_shape loss = tide_shape_vector(batch), backprop = tide_shape_matrix(batch, classes);
    tide_shape_set_output(ctx, 0, &loss);
    tide_shape_set_output(ctx, 1, &backprop);
    return TIDE_OK;
}
static tide_status dense_xent_shape(tide_shape_ctx *ctx) { return xent_shape(ctx, false); }
static tide_status sparse_xent_shape(tide_shape_ctx *ctx) { return xent_shape(ctx, true); }

static tide_status bias_add_shape(tide_shape_ctx *ctx)
{
    const char *format = "NHWC";
    tide_attrs_get_string(tide_shape_attrs(ctx), "data_format", &format);
    tide_shape value = tide_shape_input(ctx, 0), bias = tide_shape_input(ctx, 1);
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_data_format(format, msg, sizeof msg) ||
        !tide_nn_check_bias_add(&value, &bias, &channels, msg, sizeof msg))
        return failed(ctx, msg);
    if (value.rank >= 2)
        value.dims[value.rank - 1] = channels;
    tide_shape_set_output(ctx, 0, &value);
    return TIDE_OK;
}

static tide_status bias_add_grad_shape(tide_shape_ctx *ctx)
{
    const char *format = "NHWC";
    tide_attrs_get_string(tide_shape_attrs(ctx), "data_format", &format);
    tide_shape dy = tide_shape_input(ctx, 0);
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_data_format(format, msg, sizeof msg) ||
        !tide_nn_check_bias_add(&dy, NULL, &channels, msg, sizeof msg))
        return failed(ctx, msg);
    tide_shape out = tide_shape_vector(channels);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

static tide_status dropout_shape(tide_shape_ctx *ctx)
{
    tide_shape x = tide_shape_input(ctx, 0), rate = tide_shape_input(ctx, 1);
    const tide_tensor *known = tide_shape_input_value(ctx, 1);
    double value = known && tide_tensor_num_elements(known) == 1 ? tide_tensor_get_f64(known, 0) : 0;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_dropout_rate(&rate, known ? &value : NULL, msg, sizeof msg))
        return failed(ctx, msg);
    tide_shape_set_output(ctx, 0, &x);
    tide_shape_set_output(ctx, 1, &x);
    return TIDE_OK;
}

/* Checks the channel vectors inputs[first..first+n) named names[]; *channels refined. */
static tide_status check_vectors(tide_shape_ctx *ctx, const tide_shape *x, int first,
                                 const char *const *names, const bool *may_be_empty, int n,
                                 int64_t *channels)
{
    char msg[TIDE_OP_MSG_MAX];
    for (int i = 0; i < n; i++) {
        tide_shape v = tide_shape_input(ctx, first + i);
        if (!tide_nn_check_channel_vector(&v, names[i], may_be_empty[i], x, channels, msg, sizeof msg))
            return failed(ctx, msg);
    }
    return TIDE_OK;
}

/* Output 0 shaped like x, outputs 1..num_vectors-1... per-channel vectors [C], the rest (the
 * gradients' reserve_space_3/4, V3's reserve_space_3) empty [0], as TensorFlow's CPU kernels. */
static void set_batch_norm_outputs(tide_shape_ctx *ctx, tide_shape x, int64_t channels, int vectors)
{
    if (x.rank >= 2)
        x.dims[x.rank - 1] = channels;
    tide_shape_set_output(ctx, 0, &x);
    tide_shape vec = tide_shape_vector(channels), empty = tide_shape_vector(0);
    for (int i = 1; i < tide_shape_num_outputs(ctx); i++)
        tide_shape_set_output(ctx, i, i <= vectors ? &vec : &empty);
}

/* data_format and, for V2/V3, U against T. */
static tide_status batch_norm_attrs(tide_shape_ctx *ctx)
{
    const char *format = "NHWC";
    tide_dtype t, u;
    char msg[TIDE_OP_MSG_MAX];
    tide_attrs_get_string(tide_shape_attrs(ctx), "data_format", &format);
    if (!tide_nn_check_batch_norm_format(format, msg, sizeof msg))
        return failed(ctx, msg);
    if (tide_attrs_get_type(tide_shape_attrs(ctx), "U", &u) && tide_attrs_get_type(tide_shape_attrs(ctx), "T", &t) &&
        !tide_nn_check_batch_norm_types(t, u, msg, sizeof msg))
        return failed(ctx, msg);
    return TIDE_OK;
}

static tide_status batch_norm_shape(tide_shape_ctx *ctx)
{
    bool training = true;
    tide_attrs_get_bool(tide_shape_attrs(ctx), "is_training", &training);
    tide_shape x = tide_shape_input(ctx, 0);
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (batch_norm_attrs(ctx) != TIDE_OK)
        return TIDE_INVALID_ARGUMENT;
    if (!tide_nn_check_batch_norm_x(&x, &channels, msg, sizeof msg))
        return failed(ctx, msg);
    static const char *const names[] = {"scale", "offset", "mean", "variance"};
    const bool empty_ok[] = {false, false, training, training};
    tide_status st = check_vectors(ctx, &x, 1, names, empty_ok, 4, &channels);
    if (st == TIDE_OK)
        set_batch_norm_outputs(ctx, x, channels, 4);
    return st;
}

static tide_status batch_norm_grad_shape(tide_shape_ctx *ctx)
{
    tide_shape dy = tide_shape_input(ctx, 0), x0 = tide_shape_input(ctx, 1), x;
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (batch_norm_attrs(ctx) != TIDE_OK)
        return TIDE_INVALID_ARGUMENT;
    if (!tide_nn_same_shape(&dy, &x0, "y_backprop", "x", &x, msg, sizeof msg) ||
        !tide_nn_check_batch_norm_x(&x, &channels, msg, sizeof msg))
        return failed(ctx, msg);
    static const char *const names[] = {"scale", "reserve_space_1", "reserve_space_2"};
    static const bool empty_ok[] = {false, false, false};
    tide_status st = check_vectors(ctx, &x, 2, names, empty_ok, 3, &channels);
    if (st == TIDE_OK)
        set_batch_norm_outputs(ctx, x, channels, 2);
    return st;
}

/* ---------------------------------------------------------------- activations */

/* An activation, or (grad_in1 set) its gradient op taking gradients and grad_in1 ("features" or
 * "outputs"); alpha: the op has TensorFlow's float attr alpha with this default (LeakyRelu). */
typedef struct activation_def {
    const char *name, *grad_in0, *grad_in1;
    tide_shape_fn grad_shape;
    const char *alpha;
    const char *doc, *tf_differences;
} activation_def;

static void activation(const activation_def *d)
{
    tide_op_register(&(tide_op_spec){
        .name = d->name,
        .inputs = {d->grad_in1 ? d->grad_in0 : "features: T", d->grad_in1},
        .outputs = {d->grad_in1 ? "backprops: T" : "activations: T"},
        .attrs = {T_FLOAT, d->alpha},
        .shape_fn = d->grad_in1 ? d->grad_shape : tide_shape_fn_unchanged,
        .doc = d->doc,
        .tf_differences = d->tf_differences,
    });
}

#define SAME_SHAPE_DOC " Both inputs must have the same shape (INVALID_ARGUMENT otherwise)."
#define NO_HALF "float16 and bfloat16 are not supported."
#define REAL_TF "float32 and float64 only (TensorFlow: every real type)."
#define GRAD(in1, shape) "gradients: T", in1, shape
#define SELU_DOC "scale = 1.0507009873554805, alpha = 1.6732632423543772 (Klambauer et al.)"

static const activation_def ACTIVATIONS[] = {
    {"Relu", .doc = "Returns max(features, 0) element-wise. NaN propagates.", .tf_differences = REAL_TF},
    {"Relu6", .doc = "Returns min(max(features, 0), 6) element-wise. NaN propagates.", .tf_differences = REAL_TF},
    {"Elu", .doc = "Exponential linear unit: features where features >= 0, else exp(features) - 1 "
                   "(computed with expm1), element-wise.", .tf_differences = NO_HALF},
    {"Selu", .doc = "Scaled exponential linear unit: scale * features where features > 0, else "
                    "scale * alpha * (exp(features) - 1), element-wise, with " SELU_DOC ".",
     .tf_differences = NO_HALF},
    {"Softplus", .doc = "Returns log(1 + exp(features)) element-wise, computed without overflow as "
                        "max(features, 0) + log1p(exp(-|features|)).", .tf_differences = NO_HALF},
    {"Softsign", .doc = "Returns features / (1 + |features|) element-wise (an infinite feature gives nan, "
                        "as TensorFlow's).", .tf_differences = NO_HALF},
    {"LeakyRelu", .alpha = "alpha: float = 0.2",
     .doc = "Returns features where features > 0, else alpha * features, element-wise (alpha is an "
            "attr, 0.2 by default).", .tf_differences = NO_HALF},
    {"ReluGrad", GRAD("features: T", features_grad_shape),
     .doc = "The gradient of Relu: gradients where features > 0, else 0." SAME_SHAPE_DOC,
     .tf_differences = REAL_TF},
    {"Relu6Grad", GRAD("features: T", features_grad_shape),
     .doc = "The gradient of Relu6: gradients where 0 < features < 6, else 0." SAME_SHAPE_DOC,
     .tf_differences = REAL_TF},
    {"EluGrad", GRAD("outputs: T", outputs_grad_shape),
     .doc = "The gradient of Elu from its outputs: gradients where outputs >= 0, else gradients * "
            "(outputs + 1)." SAME_SHAPE_DOC, .tf_differences = NO_HALF},
    {"SeluGrad", GRAD("outputs: T", outputs_grad_shape),
     .doc = "The gradient of Selu from its outputs: gradients * scale where outputs > 0, else "
            "gradients * (outputs + scale * alpha)." SAME_SHAPE_DOC, .tf_differences = NO_HALF},
    {"SoftplusGrad", GRAD("features: T", features_grad_shape),
     .doc = "The gradient of Softplus: gradients * sigmoid(features)." SAME_SHAPE_DOC,
     .tf_differences = NO_HALF},
    {"SoftsignGrad", GRAD("features: T", features_grad_shape),
     .doc = "The gradient of Softsign: gradients / (1 + |features|)^2." SAME_SHAPE_DOC,
     .tf_differences = NO_HALF},
    {"LeakyReluGrad", GRAD("features: T", features_grad_shape), .alpha = "alpha: float = 0.2",
     .doc = "The gradient of LeakyRelu: gradients where features > 0, else gradients * alpha."
            SAME_SHAPE_DOC, .tf_differences = NO_HALF},
    {"SigmoidGrad", "y: T", "dy: T", y_dy_shape,
     .doc = "The gradient of Sigmoid from its output y: dy * y * (1 - y)." SAME_SHAPE_DOC,
     .tf_differences = "complex64 and complex128 are not supported."},
    {"TanhGrad", "y: T", "dy: T", y_dy_shape,
     .doc = "The gradient of Tanh from its output y: dy * (1 - y * y)." SAME_SHAPE_DOC,
     .tf_differences = "complex64 and complex128 are not supported."},
};

static void register_activation_ops(void)
{
    for (size_t i = 0; i < sizeof ACTIVATIONS / sizeof ACTIVATIONS[0]; i++)
        activation(&ACTIVATIONS[i]);
}
TIDE_REGISTER(register_activation_ops)

/* ---------------------------------------------------------------- softmax family */

static void register_softmax_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Softmax",
        .inputs = {"logits: T"},
        .outputs = {"softmax: T"},
        .attrs = {T_FLOAT},
        .shape_fn = softmax_shape,
        .doc = "Softmax over the last dimension of logits (any rank >= 1): exp(logits) / "
               "sum(exp(logits)), computed as exp(logits - max) / sum(exp(logits - max)) so that "
               "large logits do not overflow. Sums accumulate in double.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "LogSoftmax",
        .inputs = {"logits: T"},
        .outputs = {"logsoftmax: T"},
        .attrs = {T_FLOAT},
        .shape_fn = softmax_shape,
        .doc = "Log of the softmax over the last dimension of logits (any rank >= 1), computed as "
               "logits - max - log(sum(exp(logits - max))): finite for any finite logits.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "SoftmaxCrossEntropyWithLogits",
        .inputs = {"features: T", "labels: T"},
        .outputs = {"loss: T", "backprop: T"},
        .attrs = {T_FLOAT},
        .shape_fn = dense_xent_shape,
        .doc = "Cross-entropy between softmax(features) and the distributions labels, row by row: "
               "features and labels are [batch, classes]; loss[b] = -sum(labels[b] * "
               "log_softmax(features[b])) and backprop = softmax(features) - labels (the gradient "
               "of loss with respect to features). Numerically stable for large logits. A non-empty "
               "batch needs at least one class.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "SparseSoftmaxCrossEntropyWithLogits",
        .inputs = {"features: T", "labels: Tlabels"},
        .outputs = {"loss: T", "backprop: T"},
        .attrs = {T_FLOAT, "Tlabels: {int32, int64} = int64"},
        .shape_fn = sparse_xent_shape,
        .doc = "Cross-entropy between softmax(features) and one class per row: features are "
               "[batch, classes], labels [batch] class indices; loss[b] = "
               "-log_softmax(features[b])[labels[b]] and backprop = softmax(features) - "
               "one_hot(labels). A label outside [0, classes) is an INVALID_ARGUMENT error naming "
               "the row and the value.",
    });
}
TIDE_REGISTER(register_softmax_ops)

/* ---------------------------------------------------------------- layers */

#define BN_DOC                                                                                    \
    "Batch normalisation of x [..., channels] (rank >= 2; data_format 'NHWC' or 'NDHWC', channels "  \
    "last) per channel: y = (x - m) / sqrt(v + epsilon) * scale + offset. In training m and v are "  \
    "the batch's mean and (biased) variance over every dimension but the last, mean and variance "  \
    "are ignored (they may be empty), batch_variance is the unbiased variance (n / (n - 1) times v, " \
    "for moving averages; v itself when n == 1) and an empty x gives NaN statistics. In inference m " \
    "and v are the inputs mean and variance, returned as batch_mean and batch_variance. "            \
    "reserve_space_1 = m and reserve_space_2 = v (as TensorFlow's CPU kernel) are what the gradient " \
    "op takes. Statistics accumulate in double."
#define BN_GRAD_DOC                                                                               \
    "The gradient of the batch normalisation with respect to x, scale and offset, from the "       \
    "reserve_space_1 (m) and reserve_space_2 (v) it returned: with inv_std = 1 / sqrt(v + "          \
    "epsilon), xhat = (x - m) * inv_std and n the elements per channel, offset_backprop = "          \
    "sum(y_backprop), scale_backprop = sum(y_backprop * xhat), and in training x_backprop = scale * " \
    "inv_std * (y_backprop - (offset_backprop + xhat * scale_backprop) / n) (the batch statistics "   \
    "depend on x); with is_training false x_backprop = y_backprop * scale * inv_std. The last two "    \
    "outputs are empty, as TensorFlow's CPU kernel gives them."
#define BN_TF_DIFFERENCES "float16 and bfloat16 are not supported; float64 is (TensorFlow: float32 only)."
#define BN_V_TF_DIFFERENCES                                                                       \
    "U must equal T; T and U may be float32 or float64 (TensorFlow: T float16, bfloat16 or float32, " \
    "U float32)."

/* FusedBatchNorm and FusedBatchNormGrad, and their V2 and V3 (statistics of type U, and for V3 a
 * third, empty, reserve space), TensorFlow's op definitions on tide's channels-last kernels. */
static void register_batch_norm_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNorm",
        .inputs = {"x: T", "scale: T", "offset: T", "mean: T", "variance: T"},
        .outputs = {"y: T", "batch_mean: T", "batch_variance: T", "reserve_space_1: T", "reserve_space_2: T"},
        .attrs = {T_FLOAT, "epsilon: float = 0.0001", "data_format: string = 'NHWC'", "is_training: bool = true"},
        .shape_fn = batch_norm_shape,
        .doc = BN_DOC,
        .tf_differences = BN_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNormV2",
        .inputs = {"x: T", "scale: U", "offset: U", "mean: U", "variance: U"},
        .outputs = {"y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U", "reserve_space_2: U"},
        .attrs = {T_FLOAT, "U: {float32, float64}", "epsilon: float = 0.0001", "data_format: string = 'NHWC'",
                  "is_training: bool = true"},
        .shape_fn = batch_norm_shape,
        .doc = "FusedBatchNorm with the statistics' dtype U. " BN_DOC,
        .tf_differences = BN_V_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNormV3",
        .inputs = {"x: T", "scale: U", "offset: U", "mean: U", "variance: U"},
        .outputs = {"y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U", "reserve_space_2: U",
                    "reserve_space_3: U"},
        .attrs = {T_FLOAT, "U: {float32, float64}", "epsilon: float = 0.0001", "data_format: string = 'NHWC'",
                  "is_training: bool = true"},
        .shape_fn = batch_norm_shape,
        .doc = "FusedBatchNorm with the statistics' dtype U and an empty reserve_space_3 (what "
               "TensorFlow 1.15's tf.layers.batch_normalization emits). " BN_DOC,
        .tf_differences = BN_V_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNormGrad",
        .inputs = {"y_backprop: T", "x: T", "scale: T", "reserve_space_1: T", "reserve_space_2: T"},
        .outputs = {"x_backprop: T", "scale_backprop: T", "offset_backprop: T", "reserve_space_3: T",
                    "reserve_space_4: T"},
        .attrs = {T_FLOAT, "epsilon: float = 0.0001", "data_format: string = 'NHWC'", "is_training: bool = true"},
        .shape_fn = batch_norm_grad_shape,
        .doc = BN_GRAD_DOC,
        .tf_differences = BN_TF_DIFFERENCES,
    });
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNormGradV2",
        .inputs = {"y_backprop: T", "x: T", "scale: U", "reserve_space_1: U", "reserve_space_2: U"},
        .outputs = {"x_backprop: T", "scale_backprop: U", "offset_backprop: U", "reserve_space_3: U",
                    "reserve_space_4: U"},
        .attrs = {T_FLOAT, "U: {float32, float64}", "epsilon: float = 0.0001", "data_format: string = 'NHWC'",
                  "is_training: bool = true"},
        .shape_fn = batch_norm_grad_shape,
        .doc = "FusedBatchNormGrad with the statistics' dtype U. " BN_GRAD_DOC,
        .tf_differences = BN_V_TF_DIFFERENCES " scale is of type U (TensorFlow: float32).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "FusedBatchNormGradV3",
        .inputs = {"y_backprop: T", "x: T", "scale: U", "reserve_space_1: U", "reserve_space_2: U",
                   "reserve_space_3: U"},
        .outputs = {"x_backprop: T", "scale_backprop: U", "offset_backprop: U", "reserve_space_4: U",
                    "reserve_space_5: U"},
        .attrs = {T_FLOAT, "U: {float32, float64}", "epsilon: float = 0.0001", "data_format: string = 'NHWC'",
                  "is_training: bool = true"},
        .shape_fn = batch_norm_grad_shape,
        .doc = "FusedBatchNormGrad with the statistics' dtype U; reserve_space_3 (FusedBatchNormV3's, "
               "empty) is not read. " BN_GRAD_DOC,
        .tf_differences = BN_V_TF_DIFFERENCES " scale is of type U (TensorFlow: float32).",
    });
}

static void register_layer_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "BiasAdd",
        .inputs = {"value: T", "bias: T"},
        .outputs = {"output: T"},
        .attrs = {T_FLOAT, "data_format: string = 'NHWC'"},
        .shape_fn = bias_add_shape,
        .doc = "Adds bias [channels] to value [..., channels] (rank >= 2) along the last dimension. "
               "Only data_format 'NHWC' (channels last) is supported; other values are refused "
               "when the node is built.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "BiasAddGrad",
        .inputs = {"out_backprop: T"},
        .outputs = {"output: T"},
        .attrs = {T_FLOAT, "data_format: string = 'NHWC'"},
        .shape_fn = bias_add_grad_shape,
        .doc = "The gradient of BiasAdd with respect to bias: out_backprop [..., channels] (rank "
               ">= 2) summed over every dimension but the last, giving [channels]. Sums accumulate "
               "in double.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "L2Loss",
        .inputs = {"t: T"},
        .outputs = {"output: T"},
        .attrs = {T_FLOAT},
        .shape_fn = tide_shape_fn_scalar,
        .doc = "Returns sum(t^2) / 2 as a scalar, accumulated in double (0 for an empty t).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Dropout",
        .inputs = {"x: T", "rate: T"},
        .outputs = {"y: T", "mask: T"},
        .attrs = {T_FLOAT, "seed: int = 0", "seed2: int = 0"},
        .flags = TIDE_OP_STATEFUL | TIDE_OP_NOT_IN_TF,
        .shape_fn = dropout_shape,
        .doc = "Inverted dropout: mask is 0 with probability rate and 1 / (1 - rate) otherwise, drawn "
               "independently per element; y = x * mask, so y has x's expectation. rate is a scalar "
               "in [0, 1) (INVALID_ARGUMENT otherwise). Element i is dropped when the i-th uniform "
               "number RandomUniform would draw with the same seeds is below rate. Seeds follow "
               "the random ops' rule (graph seed and seed/seed2); each run draws new numbers.",
        .tf_differences = "TensorFlow has no Dropout op: tf.nn.dropout builds RandomUniform, GreaterEqual, "
                          "Cast, Mul and RealDiv (or Floor), which import as they are.",
    });
    register_batch_norm_ops();
}
TIDE_REGISTER(register_layer_ops)
