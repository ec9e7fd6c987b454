/* topk_ops.c — definitions of the ranking ops, TensorFlow 1.x's TopKV2 (the k largest entries of
 * each row and their indices) and InTopK / InTopKV2 (whether each row's target class is among its k
 * largest predictions). The kernels are kernels/cpu/topk.c. */
#include <stdio.h>

#include "../tide_op.h"
#include "op_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

/* TopKV2: input [..., n], k a scalar; values and indices [..., k] (k known when a Const). */
static tide_status top_k_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), ks = tide_shape_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX];
    if (ks.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "k must be a scalar, got shape %s", SHAPE_STR(ks, a));
    if (in.rank == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "input must have rank >= 1, got a scalar");
    const tide_tensor *kv = tide_shape_input_value(ctx, 1);
    int64_t k = kv && tide_tensor_num_elements(kv) == 1 ? tide_op_int_at(kv, 0) : -1;
    if (kv && k < 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "k must be >= 0, got %lld", (long long)k);
    if (in.rank > 0 && k >= 0 && in.dims[in.rank - 1] >= 0 && in.dims[in.rank - 1] < k)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "input of shape %s has fewer than k = %lld entries "
                                "in its last dimension", SHAPE_STR(in, a), (long long)k);
    if (in.rank > 0)
        in.dims[in.rank - 1] = k;
    tide_shape_set_output(ctx, 0, &in);
    tide_shape_set_output(ctx, 1, &in);
    return TIDE_OK;
}

/* InTopK(V2): predictions [batch, classes], targets [batch]; the result [batch]. */
static tide_status in_top_k_shape(tide_shape_ctx *ctx)
{
    tide_shape p = tide_shape_input(ctx, 0), t = tide_shape_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if ((p.rank >= 0 && p.rank != 2) || (t.rank >= 0 && t.rank != 1))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "predictions must be a matrix [batch, classes] and "
                                "targets a vector [batch], got %s and %s", SHAPE_STR(p, a), SHAPE_STR(t, b));
    int64_t batch = p.rank == 2 ? p.dims[0] : -1;
    if (t.rank == 1 && t.dims[0] >= 0) {
        if (batch >= 0 && batch != t.dims[0])
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "predictions %s and targets %s differ in the batch "
                                    "size", SHAPE_STR(p, a), SHAPE_STR(t, b));
        batch = t.dims[0];
    }
    if (tide_shape_num_inputs(ctx) > 2) {
        tide_shape ks = tide_shape_input(ctx, 2);
        if (ks.rank > 0)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "k must be a scalar, got shape %s",
                                    SHAPE_STR(ks, a));
    }
    tide_shape out = tide_shape_vector(batch);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

#define IN_TOP_K_DOC                                                                              \
    "Whether each row's target class is among the k largest predictions: out[b] is true when "    \
    "fewer than k classes of row b have a prediction larger than predictions[b, targets[b]] "     \
    "(ties straddling the boundary all count as in, as TensorFlow's), false when the target is "  \
    "out of [0, classes) or its prediction is not finite. predictions is [batch, classes] "       \
    "float32, targets [batch]; other shapes are INVALID_ARGUMENT."

static void register_topk_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "TopKV2",
        .inputs = {"input: T", "k: int32"},
        .outputs = {"values: T", "indices: int32"},
        .attrs = {"sorted: bool = true", "T: realnumbertype"},
        .shape_fn = top_k_shape,
        .doc = "The k largest entries of each row of input (its last dimension) and their indices "
               "along it, largest first; of equal entries the lower index comes first; nan counts as "
               "larger than any number. k is an int32 scalar in [0, n]; anything else is "
               "INVALID_ARGUMENT. With sorted false the results are sorted all the same.",
        .tf_differences = "TensorFlow's CPU kernel orders nan inconsistently (tide: above every number) and "
                          "leaves the order unspecified with sorted false (tide: sorted anyway).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "InTopK",
        .inputs = {"predictions: float32", "targets: T"},
        .outputs = {"precision: bool"},
        .attrs = {"k: int", "T: {int32, int64} = int32"},
        .shape_fn = in_top_k_shape,
        .doc = IN_TOP_K_DOC " k is an attr here (InTopKV2 takes it as an input).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "InTopKV2",
        .inputs = {"predictions: float32", "targets: T", "k: T"},
        .outputs = {"precision: bool"},
        .attrs = {"T: {int32, int64} = int32"},
        .shape_fn = in_top_k_shape,
        .doc = IN_TOP_K_DOC " k is a scalar input (what tf.nn.in_top_k emits).",
    });
}
TIDE_REGISTER(register_topk_ops)
