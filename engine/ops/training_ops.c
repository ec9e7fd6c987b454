/* training_ops.c — definitions of the fused optimizer updates, TensorFlow's training ops:
 * ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyRMSProp and ApplyAdam. Each takes the
 * variable and its slot variables (accumulators) through Ref inputs, the hyper-parameters as scalar
 * inputs of the variable's dtype, and the gradient; it updates the variables in one pass and outputs
 * the variable's new value. Only float32 and float64. The kernels are kernels/cpu/training.c; the
 * optimizers that build these ops are engine/train/optimizers.c.
 *
 * The shape functions check what graph time knows: the variable, its slots and the gradient have one
 * shape, every hyper-parameter is a scalar. */
#include "../tide_op.h"

/* The inputs of one update op, in order: [0, num_refs) the variable and its slots, `grad` the
 * gradient (shaped like the variable), every other one a scalar hyper-parameter. */
typedef struct apply_def {
    int num_inputs, num_refs, grad;
    const char *names[10];
} apply_def;

static const apply_def GRADIENT_DESCENT = {3, 1, 2, {"var", "alpha", "delta"}};
static const apply_def MOMENTUM = {5, 2, 3, {"var", "accum", "lr", "grad", "momentum"}};
static const apply_def ADAGRAD = {4, 2, 3, {"var", "accum", "lr", "grad"}};
static const apply_def RMSPROP = {8, 3, 7, {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"}};
static const apply_def ADAM = {10, 3, 9, {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                                          "beta2", "epsilon", "grad"}};

/* Merges shape s into *merged (same rank, each dim known in either or equal); false on a conflict. */
static bool merge_shape(tide_shape *merged, const tide_shape *s)
{
    if (s->rank < 0)
        return true;
    if (merged->rank < 0) {
        *merged = *s;
        return true;
    }
    if (merged->rank != s->rank)
        return false;
    for (int d = 0; d < s->rank; d++) {
        if (merged->dims[d] < 0)
            merged->dims[d] = s->dims[d];
        else if (s->dims[d] >= 0 && s->dims[d] != merged->dims[d])
            return false;
    }
    return true;
}

static tide_status apply_shape(tide_shape_ctx *ctx, const apply_def *def)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (tide_shape_num_inputs(ctx) != def->num_inputs)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "expects %d inputs, got %d", def->num_inputs,
                                tide_shape_num_inputs(ctx));
    tide_shape merged = tide_shape_input(ctx, 0);
    for (int i = 1; i < def->num_inputs; i++) {
        tide_shape s = tide_shape_input(ctx, i);
        if (i < def->num_refs || i == def->grad) {
            tide_shape before = merged;
            if (!merge_shape(&merged, &s))
                return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                        "%s has shape %s but var has shape %s: they must match",
                                        def->names[i], tide_shape_format(&s, a, sizeof a),
                                        tide_shape_format(&before, b, sizeof b));
        } else if (s.rank > 0) {
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s",
                                    def->names[i], tide_shape_format(&s, a, sizeof a));
        }
    }
    tide_shape_set_output(ctx, 0, &merged);
    return TIDE_OK;
}

static tide_status gradient_descent_shape(tide_shape_ctx *ctx) { return apply_shape(ctx, &GRADIENT_DESCENT); }
static tide_status momentum_shape(tide_shape_ctx *ctx) { return apply_shape(ctx, &MOMENTUM); }
static tide_status adagrad_shape(tide_shape_ctx *ctx) { return apply_shape(ctx, &ADAGRAD); }
static tide_status rmsprop_shape(tide_shape_ctx *ctx) { return apply_shape(ctx, &RMSPROP); }
static tide_status adam_shape(tide_shape_ctx *ctx) { return apply_shape(ctx, &ADAM); }

#define T_ATTR "T: {float32, float64}"
#define LOCKING_ATTR "use_locking: bool = false"
#define COMMON_DOC                                                                                  \
    " Scalars are T-typed scalar inputs. The variables must be initialised and have the gradient's "  \
    "shape. The update holds each variable's lock (use_locking is accepted for TensorFlow "          \
    "compatibility; the update always locks). It writes in place when the variable is the only "     \
    "holder of its tensor, else into a new tensor, so a value read earlier never changes."

#define ADAM_INPUTS                                                                                 \
    {"var: Ref(T)", "m: Ref(T)", "v: Ref(T)", "beta1_power: T", "beta2_power: T", "lr: T",          \
     "beta1: T", "beta2: T", "epsilon: T", "grad: T"}
#define ADAM_ATTRS {T_ATTR, LOCKING_ATTR, "use_nesterov: bool = false"}

static void register_training_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "ApplyGradientDescent",
        .inputs = {"var: Ref(T)", "alpha: T", "delta: T"},
        .outputs = {"out: T"},
        .attrs = {T_ATTR, LOCKING_ATTR},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = gradient_descent_shape,
        .doc = "Updates var by gradient descent: var -= alpha * delta; outputs the new value." COMMON_DOC,
    });
    tide_op_register(&(tide_op_spec){
        .name = "ApplyMomentum",
        .inputs = {"var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T", "momentum: T"},
        .outputs = {"out: T"},
        .attrs = {T_ATTR, LOCKING_ATTR, "use_nesterov: bool = false"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = momentum_shape,
        .doc = "Updates var by the momentum scheme: accum = accum * momentum + grad; var -= lr * accum, "
               "or with use_nesterov var -= grad * lr + accum * momentum * lr; outputs the new var."
               COMMON_DOC,
    });
    tide_op_register(&(tide_op_spec){
        .name = "ApplyAdagrad",
        .inputs = {"var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T"},
        .outputs = {"out: T"},
        .attrs = {T_ATTR, LOCKING_ATTR, "update_slots: bool = true"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = adagrad_shape,
        .doc = "Updates var by the Adagrad scheme: accum += grad * grad (not when update_slots is "
               "false); var -= lr * grad / sqrt(accum); outputs the new var (an accumulator at 0 with "
               "a zero gradient gives nan, as in TensorFlow: start it above 0)." COMMON_DOC,
    });
    tide_op_register(&(tide_op_spec){
        .name = "ApplyRMSProp",
        .inputs = {"var: Ref(T)", "ms: Ref(T)", "mom: Ref(T)", "lr: T", "rho: T", "momentum: T",
                   "epsilon: T", "grad: T"},
        .outputs = {"out: T"},
        .attrs = {T_ATTR, LOCKING_ATTR},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = rmsprop_shape,
        .doc = "Updates var by the RMSProp scheme: ms += (grad * grad - ms) * (1 - rho); mom = mom * "
               "momentum + lr * grad / sqrt(ms + epsilon); var -= mom; outputs the new var." COMMON_DOC,
    });
    tide_op_register(&(tide_op_spec){
        .name = "ApplyAdam",
        .inputs = ADAM_INPUTS,
        .outputs = {"out: T"},
        .attrs = ADAM_ATTRS,
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = adam_shape,
        .doc = "Updates var by the Adam scheme: alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power); "
               "m += (grad - m) * (1 - beta1); v += (grad * grad - v) * (1 - beta2); var -= alpha * m / "
               "(sqrt(v) + epsilon), or with use_nesterov var -= alpha * (m * beta1 + grad * (1 - "
               "beta1)) / (sqrt(v) + epsilon); outputs the new var. beta1_power and beta2_power are "
               "beta1^t and beta2^t at step t (the optimizer keeps them in variables)."
               COMMON_DOC,
    });
}
TIDE_REGISTER(register_training_ops)
