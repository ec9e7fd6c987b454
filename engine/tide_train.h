/* tide_train.h — training on top of the core: symbolic gradients, variables with their
 * initializers, initializer kinds and optimizers (engine/gradients.c, engine/train). Everything here
 * builds ordinary ops into a graph, so it appears in the graph, its text and the run log. The
 * conventions of tide_core.h hold. */
#ifndef TIDE_TRAIN_H
#define TIDE_TRAIN_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- gradients (engine/gradients.c) */

/* Extends g backwards from ys: adds the ops computing d(sum of ys[j] * grad_ys[j])/d(xs[i]) and stores
 * their outputs in dxs[i] (dxs[i].node is NULL when no differentiable path leads from xs[i] to any
 * y). grad_ys may be NULL (ones shaped like each y). Gradients of a tensor consumed several times are
 * summed; only ops on a path from xs to ys get gradient ops; StopGradient and integer-valued edges
 * block the flow. Fails, leaving g unchanged, when an op on a path has no registered gradient (the
 * message names the node and op). The new nodes live in the scope "gradients" (made unique). */
tide_status tide_gradients(tide_graph *g, const tide_output *ys, int num_ys, const tide_output *xs,
                           int num_xs, const tide_output *grad_ys, tide_output *dxs, tide_error *err);

/* ---------------------------------------------------------------- variables, initializers, optimizers
 * (engine/train). Built from ordinary ops, so they appear in the graph, its text and the run log. */

/* A Variable node `name` (scope applied) with initial_value's dtype and shape (the shape must be
 * known at graph time), and its initializer: an Assign node "<name>/init" marked with the attr
 * `_initializer = true`. The Variable carries `_trainable` (bool). */
tide_node *tide_variable_new(tide_graph *g, const char *name, tide_output initial_value,
                             bool trainable, tide_error *err);
/* The Variable nodes of g in creation order (only those with _trainable = true if trainable_only).
 * Writes up to max into out (out may be NULL); returns how many there are. */
int tide_graph_variables(const tide_graph *g, bool trainable_only, tide_node **out, int max);
/* A NoOp named "init" (made unique) with a control input on every initializer of g: run it as a
 * target to initialise every variable. */
tide_node *tide_global_variables_initializer(tide_graph *g, tide_error *err);
/* The graph's int64 scalar Variable "global_step" (initialised to 0, not trainable), created on the
 * first call and returned afterwards. */
tide_node *tide_global_step(tide_graph *g, tide_error *err);

typedef enum tide_init_kind {
    TIDE_INIT_ZEROS = 0,
    TIDE_INIT_ONES = 1,
    TIDE_INIT_CONSTANT = 2,         /* value */
    TIDE_INIT_UNIFORM = 3,          /* [lo, hi) */
    TIDE_INIT_NORMAL = 4,           /* mean, stddev */
    TIDE_INIT_TRUNCATED_NORMAL = 5, /* mean, stddev; redrawn beyond two stddevs */
    TIDE_INIT_GLOROT_UNIFORM = 6,   /* limit sqrt(6 / (fan_in + fan_out)) */
    TIDE_INIT_GLOROT_NORMAL = 7,    /* truncated normal, stddev sqrt(2 / (fan_in + fan_out)) / .8796 */
} tide_init_kind;

/* fan_in/fan_out for Glorot: a [in, out] matrix, or a [h, w, in, out] filter (times h*w). */
typedef struct tide_initializer {
    tide_init_kind kind;
    double value, lo, hi, mean, stddev;
    int64_t seed; /* op seed; 0 follows the graph seed rule of the random ops */
} tide_initializer;

/* Defaults: lo -0.05, hi 0.05, mean 0, stddev 0.05 (TensorFlow's), value 0, seed 0. */
void tide_initializer_init(tide_initializer *init, tide_init_kind kind);
/* Builds the ops producing a tensor of dtype and (fully defined) shape as init says. */
tide_output tide_initializer_build(tide_graph *g, const tide_initializer *init, tide_dtype dtype,
                                   const tide_shape *shape, tide_error *err);

typedef enum tide_optimizer_kind {
    TIDE_OPT_SGD = 0,      /* ApplyGradientDescent */
    TIDE_OPT_MOMENTUM = 1, /* ApplyMomentum (nesterov optional) */
    TIDE_OPT_ADAGRAD = 2,  /* ApplyAdagrad */
    TIDE_OPT_RMSPROP = 3,  /* ApplyRMSProp */
    TIDE_OPT_ADAM = 4,     /* ApplyAdam */
} tide_optimizer_kind;

typedef struct tide_optimizer {
    tide_optimizer_kind kind;
    double learning_rate;
    double momentum;            /* Momentum, RMSProp */
    bool nesterov;              /* Momentum */
    double beta1, beta2;        /* Adam */
    double decay;               /* RMSProp's rho */
    double epsilon;             /* Adam, RMSProp */
    double initial_accumulator; /* Adagrad */
} tide_optimizer;

/* TensorFlow's defaults: momentum 0.9, beta1 0.9, beta2 0.999, epsilon 1e-8 (RMSProp 1e-10),
 * decay 0.9, initial_accumulator 0.1, RMSProp momentum 0. */
void tide_optimizer_init(tide_optimizer *opt, tide_optimizer_kind kind, double learning_rate);
/* gradients(loss, vars) and one fused update op per variable (slot variables such as momentum
 * accumulators are created as non-trainable variables "<var>/<Slot>" with their initializers).
 * vars NULL: every trainable variable. Returns a NoOp (the training step to run as a target) that
 * depends on every update and, when global_step is not NULL, increments it after them. */
tide_node *tide_optimizer_minimize(tide_graph *g, const tide_optimizer *opt, tide_output loss,
                                   tide_node *const *vars, int num_vars, tide_node *global_step,
                                   tide_error *err);

#ifdef __cplusplus
}
#endif
#endif
