/* optimizers.c — tide_optimizer_minimize: the training step of gradient descent, momentum, Adagrad,
 * RMSProp and Adam, built as TensorFlow 1.x's Optimizer.minimize builds it:
 *   1. gradients(loss, vars) (engine/gradients.c), in the scope "gradients[_N]";
 *   2. the optimizer's slot variables beside each variable, non-trainable, with their initializers:
 *      "<var>/Momentum", "<var>/Adagrad", "<var>/RMSProp_ms" and "<var>/RMSProp_mom", "<var>/Adam_m"
 *      and "<var>/Adam_v" (variables.c builds them);
 *   3. under a scope named after the optimizer ("Momentum", made unique): Const scalars for the
 *      hyper-parameters (one set per variable dtype), one fused update op per variable
 *      ("update_<var>/ApplyMomentum", kernels in kernels/cpu/training.c); for Adam the
 *      beta1_power/beta2_power variables, multiplied by beta1/beta2 after the updates;
 *   4. the global step's AssignAdd(1) after every update, and the NoOp "train" (returned) with a
 *      control input on every update.
 * A failure anywhere rolls the graph back to where it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

static const char *const OPTIMIZER_NAMES[] = {"GradientDescent", "Momentum", "Adagrad", "RMSProp", "Adam"};
static const char *const APPLY_OPS[] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad", "ApplyRMSProp",
                                        "ApplyAdam"};

void tide_optimizer_init(tide_optimizer *opt, tide_optimizer_kind kind, double learning_rate)
{
    memset(opt, 0, sizeof *opt);
    opt->kind = kind;
    opt->learning_rate = learning_rate;
    opt->momentum = kind == TIDE_OPT_RMSPROP ? 0.0 : 0.9;
    opt->nesterov = false;
    opt->beta1 = 0.9;
    opt->beta2 = 0.999;
    opt->decay = 0.9;
    opt->epsilon = kind == TIDE_OPT_RMSPROP ? 1e-10 : 1e-8;
    opt->initial_accumulator = 0.1;
}

/* ---------------------------------------------------------------- what one minimize call builds */

#define MAX_HYPER 4

/* The state of one minimize call. Hyper-parameter Consts and Adam's beta powers are made once per
 * variable dtype (index 0 float32, 1 float64). */
typedef struct minimizer {
    tide_graph *g;
    const tide_optimizer *opt;
    tide_error *err;
    tide_output hyper[2][MAX_HYPER];
    tide_node *beta_power[2][2]; /* [dtype][beta1, beta2] */
    tide_node **updates;         /* every update op, then Adam's beta power updates */
    int num_updates;
} minimizer;

static int dtype_slot(tide_dtype dt) { return dt == TIDE_FLOAT64 ? 1 : 0; }

static tide_status out_of_memory(tide_error *err)
{
    return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "minimize: out of memory");
}

/* A scope name under the current one that no node uses yet: base, base_1, base_2, ... (malloc'd). */
static char *fresh_scope(tide_graph *g, const char *base)
{
    char *prefix = tide__graph_scope_prefix(g);
    for (int k = 0; prefix; k++) {
        char *name = k ? tide__asprintf("%s_%d", base, k) : tide__strdup(base);
        char *full = name ? tide__asprintf("%s%s", prefix, name) : NULL;
        bool used = !full;
        size_t len = full ? strlen(full) : 0;
        for (int i = 0; full && i < tide_graph_num_nodes(g) && !used; i++) {
            const char *n = tide_node_name(tide_graph_node_at(g, i));
            used = strncmp(n, full, len) == 0 && (n[len] == 0 || n[len] == '/');
        }
        free(full);
        if (!used || !name) {
            free(prefix);
            return name;
        }
        free(name);
    }
    return NULL;
}

/* ---------------------------------------------------------------- checks */

static tide_status check_optimizer(const tide_optimizer *opt, tide_error *err)
{
    if ((int)opt->kind < 0 || opt->kind > TIDE_OPT_ADAM)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: unknown optimizer kind %d", (int)opt->kind);
    const char *name = OPTIMIZER_NAMES[opt->kind];
    const double values[] = {opt->learning_rate, opt->momentum, opt->beta1, opt->beta2, opt->decay,
                             opt->epsilon, opt->initial_accumulator};
    const char *const names[] = {"learning_rate", "momentum", "beta1", "beta2", "decay", "epsilon",
                                 "initial_accumulator"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (!isfinite(values[i]))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s optimizer: %s is %g, it must be finite", name,
                                  names[i], values[i]);
    if (opt->kind == TIDE_OPT_ADAM && (opt->beta1 < 0 || opt->beta1 >= 1 || opt->beta2 < 0 || opt->beta2 >= 1))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "Adam optimizer: beta1 and beta2 must be in [0, 1), got %g and %g", opt->beta1,
                              opt->beta2);
    if (opt->kind == TIDE_OPT_ADAGRAD && opt->initial_accumulator <= 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "Adagrad optimizer: initial_accumulator must be > 0, got %g", opt->initial_accumulator);
    return TIDE_OK;
}

static tide_status check_variables(tide_graph *g, tide_node *const *vars, int n, tide_error *err)
{
    if (n == 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: there are no trainable variables to update");
    for (int i = 0; i < n; i++) {
        tide_node *v = vars[i];
        if (!v || tide_graph_node(g, tide_node_name(v)) != v || strcmp(tide_node_op(v), "Variable") != 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: vars[%d] (%s) is not a Variable of this graph",
                                  i, v ? tide_node_name(v) : "NULL");
        tide_dtype dt = tide_node_output_dtype(v, 0);
        if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "minimize: variable '%s' is %s; optimizers update float32 and float64 variables",
                                  tide_node_name(v), tide_dtype_name(dt));
        for (int j = 0; j < i; j++)
            if (vars[j] == v)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: variable '%s' is listed twice",
                                      tide_node_name(v));
    }
    return TIDE_OK;
}

static tide_status check_arguments(tide_graph *g, const tide_optimizer *opt, tide_output loss,
                                   tide_node *global_step, tide_error *err)
{
    if (!g || !opt)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: %s is NULL", g ? "the optimizer" : "the graph");
    tide_status st = check_optimizer(opt, err);
    if (st != TIDE_OK)
        return st;
    if (!loss.node || loss.index < 0 || loss.index >= tide_node_num_outputs(loss.node))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: the loss is %s",
                              loss.node ? "an output its node does not have" : "NULL");
    if (!tide_dtype_is_float(tide_node_output_dtype(loss.node, loss.index)))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "minimize: the loss '%s:%d' is %s; it must be a float",
                              tide_node_name(loss.node), loss.index,
                              tide_dtype_name(tide_node_output_dtype(loss.node, loss.index)));
    if (global_step) {
        tide_shape s = tide_node_output_shape(global_step, 0);
        tide_dtype dt = tide_node_output_dtype(global_step, 0);
        if (strcmp(tide_node_op(global_step), "Variable") != 0 || s.rank != 0 ||
            (dt != TIDE_INT64 && dt != TIDE_INT32))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "minimize: the global step '%s' must be an int64 or int32 scalar Variable",
                                  tide_node_name(global_step));
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- building */

/* The hyper-parameters of the update op, in its input order, as Consts of dtype dt (made once). */
static const tide_output *hyper_params(minimizer *m, tide_dtype dt)
{
    tide_output *h = m->hyper[dtype_slot(dt)];
    if (h[0].node)
        return h;
    const tide_optimizer *o = m->opt;
    switch (o->kind) {
    case TIDE_OPT_SGD:
    case TIDE_OPT_ADAGRAD: h[0] = tide__train_scalar(m->g, "learning_rate", dt, o->learning_rate, m->err); break;
    case TIDE_OPT_MOMENTUM:
        h[0] = tide__train_scalar(m->g, "learning_rate", dt, o->learning_rate, m->err);
        h[1] = tide__train_scalar(m->g, "momentum", dt, o->momentum, m->err);
        break;
    case TIDE_OPT_RMSPROP:
        h[0] = tide__train_scalar(m->g, "learning_rate", dt, o->learning_rate, m->err);
        h[1] = tide__train_scalar(m->g, "decay", dt, o->decay, m->err);
        h[2] = tide__train_scalar(m->g, "momentum", dt, o->momentum, m->err);
        h[3] = tide__train_scalar(m->g, "epsilon", dt, o->epsilon, m->err);
        break;
    case TIDE_OPT_ADAM:
        h[0] = tide__train_scalar(m->g, "learning_rate", dt, o->learning_rate, m->err);
        h[1] = tide__train_scalar(m->g, "beta1", dt, o->beta1, m->err);
        h[2] = tide__train_scalar(m->g, "beta2", dt, o->beta2, m->err);
        h[3] = tide__train_scalar(m->g, "epsilon", dt, o->epsilon, m->err);
        break;
    }
    static const int COUNT[] = {1, 2, 1, 4, 4}; /* by optimizer kind */
    for (int i = 0; i < COUNT[o->kind]; i++)
        if (!h[i].node)
            return NULL;
    return h;
}

/* A scalar variable `base` (made unique) of dtype dt starting at value: Adam's beta powers. */
static tide_node *scalar_variable(minimizer *m, const char *base, tide_dtype dt, double value)
{
    char *full = tide_graph_unique_name(m->g, base);
    char *prefix = tide__graph_scope_prefix(m->g);
    const char *name = full && prefix ? full + strlen(prefix) : NULL;
    char *init_name = name ? tide__asprintf("%s/initial_value", name) : NULL;
    tide_output iv = init_name ? tide__train_scalar(m->g, init_name, dt, value, m->err) : (tide_output){NULL, 0};
    tide_node *v = iv.node ? tide_variable_new(m->g, name, iv, false, m->err) : NULL;
    if (!init_name)
        out_of_memory(m->err);
    free(full);
    free(prefix);
    free(init_name);
    return v;
}

/* Adam's beta1_power and beta2_power for dtype dt (made once). */
static tide_node *const *beta_powers(minimizer *m, tide_dtype dt)
{
    tide_node **p = m->beta_power[dtype_slot(dt)];
    if (!p[0]) {
        p[0] = scalar_variable(m, "beta1_power", dt, m->opt->beta1);
        p[1] = p[0] ? scalar_variable(m, "beta2_power", dt, m->opt->beta2) : NULL;
    }
    return p[0] && p[1] ? p : NULL;
}

/* The slot variables of var for the optimizer (n of them, in the update op's input order). */
static int make_slots(minimizer *m, tide_node *var, tide_node **slots)
{
    const tide_optimizer *o = m->opt;
    tide_graph *g = m->g;
    switch (o->kind) {
    case TIDE_OPT_SGD: return 0;
    case TIDE_OPT_MOMENTUM: slots[0] = tide__train_slot(g, var, "Momentum", 0.0, m->err); return slots[0] ? 1 : -1;
    case TIDE_OPT_ADAGRAD:
        slots[0] = tide__train_slot(g, var, "Adagrad", o->initial_accumulator, m->err);
        return slots[0] ? 1 : -1;
    case TIDE_OPT_RMSPROP:
        slots[0] = tide__train_slot(g, var, "RMSProp_ms", 0.0, m->err);
        slots[1] = slots[0] ? tide__train_slot(g, var, "RMSProp_mom", 0.0, m->err) : NULL;
        return slots[1] ? 2 : -1;
    case TIDE_OPT_ADAM:
        slots[0] = tide__train_slot(g, var, "Adam_m", 0.0, m->err);
        slots[1] = slots[0] ? tide__train_slot(g, var, "Adam_v", 0.0, m->err) : NULL;
        return slots[1] ? 2 : -1;
    }
    return -1;
}

/* The update op of var ("update_<var>/Apply...") with its inputs in the op's order. */
static tide_node *update_op(minimizer *m, tide_node *var, tide_node *const *slots, int num_slots, tide_output grad)
{
    tide_dtype dt = tide_node_output_dtype(var, 0);
    const tide_output *h = hyper_params(m, dt);
    tide_node *const *powers = m->opt->kind == TIDE_OPT_ADAM ? beta_powers(m, dt) : NULL;
    if (!h || (m->opt->kind == TIDE_OPT_ADAM && !powers))
        return NULL;
    tide_output in[10];
    int n = 0;
    in[n++] = (tide_output){var, 0};
    for (int i = 0; i < num_slots; i++)
        in[n++] = (tide_output){slots[i], 0};
    switch (m->opt->kind) {
    case TIDE_OPT_SGD: in[n++] = h[0]; in[n++] = grad; break;                     /* alpha, delta */
    case TIDE_OPT_MOMENTUM: in[n++] = h[0]; in[n++] = grad; in[n++] = h[1]; break; /* lr, grad, momentum */
    case TIDE_OPT_ADAGRAD: in[n++] = h[0]; in[n++] = grad; break;                  /* lr, grad */
    case TIDE_OPT_RMSPROP: /* lr, rho, momentum, epsilon, grad */
        memcpy(in + n, h, 4 * sizeof *h);
        n += 4;
        in[n++] = grad;
        break;
    case TIDE_OPT_ADAM: /* beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad */
        in[n++] = (tide_output){powers[0], 0};
        in[n++] = (tide_output){powers[1], 0};
        memcpy(in + n, h, 4 * sizeof *h);
        n += 4;
        in[n++] = grad;
        break;
    }
    char *scope = tide__asprintf("update_%s", tide_node_name(var));
    if (!scope) {
        out_of_memory(m->err);
        return NULL;
    }
    tide_graph_push_scope(m->g, scope);
    free(scope);
    const char *op = APPLY_OPS[m->opt->kind];
    tide_node_builder *b = tide_node_builder_new(m->g, op, op);
    tide_node_builder_add_inputs_flat(b, in, n);
    if (m->opt->kind == TIDE_OPT_MOMENTUM)
        tide_attrs_set_bool(tide_node_builder_attrs(b), "use_nesterov", m->opt->nesterov);
    tide_node *node = tide_node_builder_finish(b, m->err);
    tide_graph_pop_scope(m->g);
    return node;
}

/* Adam, after the updates: beta1_power *= beta1, beta2_power *= beta2 (per dtype). */
static tide_status update_beta_powers(minimizer *m, int num_apply)
{
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2 && m->beta_power[d][k]; k++) {
            tide_node *power = m->beta_power[d][k];
            tide_output beta = m->hyper[d][1 + k];
            tide_node_builder *mul = tide__train_builder(m->g, "Mul", k ? "beta2_power_next" : "beta1_power_next");
            tide_node_builder_add_input(mul, (tide_output){power, 0});
            tide_node_builder_add_input(mul, beta);
            tide_node *next = tide_node_builder_finish(mul, m->err);
            const char *assign_name = k ? "update_beta2_power" : "update_beta1_power";
            tide_node_builder *b = next ? tide__train_builder(m->g, "Assign", assign_name) : NULL;
            if (!b)
                return next ? out_of_memory(m->err) : tide_error_code(m->err);
            tide_node_builder_add_input(b, (tide_output){power, 0});
            tide_node_builder_add_input(b, (tide_output){next, 0});
            for (int i = 0; i < num_apply; i++)
                tide_node_builder_add_control_input(b, m->updates[i]);
            tide_node *assign = tide_node_builder_finish(b, m->err);
            if (!assign)
                return tide_error_code(m->err);
            m->updates[m->num_updates++] = assign;
        }
    return TIDE_OK;
}

/* global_step += 1 after every update. */
static tide_node *increment_step(minimizer *m, tide_node *global_step)
{
    tide_output one = tide__train_scalar(m->g, "one", tide_node_output_dtype(global_step, 0), 1.0, m->err);
    tide_node_builder *b = one.node ? tide__train_builder(m->g, "AssignAdd", "increment_global_step") : NULL;
    if (!b) {
        if (one.node)
            out_of_memory(m->err);
        return NULL;
    }
    tide_node_builder_add_input(b, (tide_output){global_step, 0});
    tide_node_builder_add_input(b, one);
    for (int i = 0; i < m->num_updates; i++)
        tide_node_builder_add_control_input(b, m->updates[i]);
    return tide_node_builder_finish(b, m->err);
}

/* Steps 2-4 of the file's comment, gradients known. Returns the train NoOp. */
static tide_node *build_updates(minimizer *m, tide_node *const *vars, const tide_output *grads, int n,
                                tide_node *global_step)
{
    tide_node *(*slots)[2] = calloc((size_t)n, sizeof *slots);
    int *num_slots = calloc((size_t)n, sizeof *num_slots);
    char *scope = fresh_scope(m->g, OPTIMIZER_NAMES[m->opt->kind]);
    tide_node *train = NULL;
    if (!slots || !num_slots || !scope) {
        out_of_memory(m->err);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if ((num_slots[i] = make_slots(m, vars[i], slots[i])) < 0)
            goto done;
    tide_graph_push_scope(m->g, scope);
    for (int i = 0; i < n && (i == 0 || m->updates[i - 1]); i++)
        m->updates[m->num_updates++] = update_op(m, vars[i], slots[i], num_slots[i], grads[i]);
    bool ok = m->num_updates == n && m->updates[n - 1];
    if (ok && m->opt->kind == TIDE_OPT_ADAM)
        ok = update_beta_powers(m, n) == TIDE_OK;
    tide_node *step = ok && global_step ? increment_step(m, global_step) : NULL;
    tide_node_builder *b = ok && (step || !global_step) ? tide__train_builder(m->g, "NoOp", "train") : NULL;
    if (b) {
        for (int i = 0; i < m->num_updates; i++)
            tide_node_builder_add_control_input(b, m->updates[i]);
        if (step)
            tide_node_builder_add_control_input(b, step);
        train = tide_node_builder_finish(b, m->err);
    } else if (ok && (step || !global_step)) {
        out_of_memory(m->err);
    }
    tide_graph_pop_scope(m->g);
done:
    free(slots);
    free(num_slots);
    free(scope);
    return train;
}

/* gradients(loss, vars). A variable the caller listed must get one; from the implicit list (every
 * trainable variable) those the loss does not reach are dropped, as TensorFlow does, and *n shrinks
 * (vars is then compacted in place); none reached is an error. */
static tide_status compute_gradients(tide_graph *g, tide_output loss, tide_node **vars, int *n, bool listed,
                                     tide_output *grads, tide_error *err)
{
    tide_output *xs = calloc((size_t)*n + 1, sizeof *xs);
    if (!xs)
        return out_of_memory(err);
    for (int i = 0; i < *n; i++)
        xs[i] = (tide_output){vars[i], 0};
    tide_status st = tide_gradients(g, &loss, 1, xs, *n, NULL, grads, err);
    free(xs);
    int kept = 0;
    for (int i = 0; st == TIDE_OK && i < *n; i++) {
        if (!grads[i].node && listed)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                "minimize: variable '%s' gets no gradient: no differentiable path leads from it "
                                "to the loss '%s:%d'", tide_node_name(vars[i]), tide_node_name(loss.node), loss.index);
        else if (grads[i].node) {
            vars[kept] = vars[i];
            grads[kept++] = grads[i];
        }
    }
    if (st == TIDE_OK && kept == 0)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT,
                            "minimize: no trainable variable gets a gradient from the loss '%s:%d'",
                            tide_node_name(loss.node), loss.index);
    *n = kept;
    return st;
}

tide_node *tide_optimizer_minimize(tide_graph *g, const tide_optimizer *opt, tide_output loss,
                                   tide_node *const *vars, int num_vars, tide_node *global_step,
                                   tide_error *err)
{
    if (check_arguments(g, opt, loss, global_step, err) != TIDE_OK)
        return NULL;
    bool listed = vars != NULL;
    if (!listed)
        num_vars = tide_graph_variables(g, true, NULL, 0);
    tide_node **all = calloc((size_t)num_vars + 1, sizeof *all);
    if (!all) {
        out_of_memory(err);
        return NULL;
    }
    if (listed)
        memcpy(all, vars, (size_t)num_vars * sizeof *all);
    else
        tide_graph_variables(g, true, all, num_vars);
    int before = tide_graph_num_nodes(g);
    tide_error *own = err ? NULL : tide_error_new();
    minimizer m = {.g = g, .opt = opt, .err = err ? err : own};
    tide_error_clear(m.err);
    tide_output *grads = calloc((size_t)num_vars + 1, sizeof *grads);
    m.updates = calloc((size_t)num_vars + 4, sizeof *m.updates);
    tide_node *train = NULL;
    if (!m.err || !grads || !m.updates)
        out_of_memory(err);
    else if (check_variables(g, all, num_vars, m.err) == TIDE_OK &&
             compute_gradients(g, loss, all, &num_vars, listed, grads, m.err) == TIDE_OK)
        train = build_updates(&m, all, grads, num_vars, global_step);
    if (!train) {
        if (m.err && tide_error_code(m.err) == TIDE_OK)
            tide_error_set(m.err, TIDE_INTERNAL, "minimize: building the %s update failed",
                           OPTIMIZER_NAMES[opt->kind]);
        tide_graph_rollback(g, before, NULL);
    }
    free(grads);
    free(m.updates);
    free(all);
    tide_error_free(own);
    return train;
}
