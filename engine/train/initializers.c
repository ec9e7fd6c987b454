/* initializers.c — the ops that produce a variable's initial value (tide_initializer_build): zeros,
 * ones and constants as Fill, random values as RandomUniform / RandomNormal / TruncatedNormal scaled
 * and shifted by Mul and Add, and Glorot's uniform and normal initializers, whose range follows from
 * the shape's fans as TensorFlow's VarianceScaling computes them (_compute_fans):
 *   rank 0: fan_in = fan_out = 1;  rank 1: both = dims[0];  rank 2 [in, out]: dims[0], dims[1];
 *   rank >= 3 [..., in, out] (a convolution filter): dims[-2] and dims[-1], each times the product
 *   of the leading (receptive field) dims.
 * Everything is built from ordinary ops, so it appears in the graph, its text and the run log; a
 * failed build leaves the graph as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* TensorFlow's constant for the standard deviation of a standard normal truncated to [-2, 2]. */
#define TRUNCATED_NORMAL_STDDEV 0.87962566103423978

static const char *const KIND_NAMES[] = {"zeros", "ones", "constant", "uniform", "normal",
                                         "truncated normal", "Glorot uniform", "Glorot normal"};

void tide_initializer_init(tide_initializer *init, tide_init_kind kind)
{
    memset(init, 0, sizeof *init);
    init->kind = kind;
    init->lo = -0.05;
    init->hi = 0.05;
    init->mean = 0.0;
    init->stddev = 0.05;
}

/* ---------------------------------------------------------------- building blocks */

tide_node_builder *tide__train_builder(tide_graph *g, const char *op, const char *base)
{
    char *full = tide_graph_unique_name(g, base);
    char *prefix = tide__graph_scope_prefix(g);
    tide_node_builder *b = full && prefix ? tide_node_builder_new(g, op, full + strlen(prefix)) : NULL;
    free(full);
    free(prefix);
    return b;
}

/* A Const node holding value (consumed: released here), named base (made unique). */
static tide_output const_node(tide_graph *g, const char *base, tide_tensor *value, tide_error *err)
{
    tide_output out = {NULL, 0};
    if (!value)
        return out;
    tide_node_builder *b = tide__train_builder(g, "Const", base);
    if (!b) {
        tide_tensor_release(value);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return out;
    }
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    out.node = tide_node_builder_finish(b, err);
    return out;
}

tide_output tide__train_scalar(tide_graph *g, const char *base, tide_dtype dt, double v, tide_error *err)
{
    tide_tensor *f64 = tide_tensor_new_scalar(TIDE_FLOAT64, &v, err);
    tide_tensor *t = f64 ? tide_tensor_cast(f64, dt, err) : NULL;
    tide_tensor_release(f64);
    return const_node(g, base, t, err);
}

/* An int64 vector Const holding the dims of shape. */
static tide_output dims_node(tide_graph *g, const tide_shape *shape, tide_error *err)
{
    int64_t n = shape->rank;
    tide_shape vs = tide_shape_vector(n);
    tide_tensor *t = tide_tensor_new_copy(TIDE_INT64, &vs, shape->dims, (size_t)n * sizeof(int64_t), err);
    return const_node(g, "shape", t, err);
}

/* op(a, b), named after the op; {NULL} when an input is missing or the build fails. */
static tide_output binary_node(tide_graph *g, const char *op, tide_output a, tide_output b, tide_error *err)
{
    tide_output out = {NULL, 0};
    if (!a.node || !b.node)
        return out;
    tide_node_builder *nb = tide__train_builder(g, op, strcmp(op, "Mul") == 0 ? "mul" : "add");
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    out.node = tide_node_builder_finish(nb, err);
    return out;
}

/* ---------------------------------------------------------------- the initializers */

/* Fill(shape, value). */
static tide_output constant(tide_graph *g, tide_dtype dt, const tide_shape *shape, double value, tide_error *err)
{
    tide_output dims = dims_node(g, shape, err);
    tide_output v = dims.node ? tide__train_scalar(g, "value", dt, value, err) : (tide_output){NULL, 0};
    tide_output out = {NULL, 0};
    if (!v.node)
        return out;
    tide_node_builder *b = tide__train_builder(g, "Fill", "fill");
    tide_node_builder_add_input(b, dims);
    tide_node_builder_add_input(b, v);
    tide_attrs_set_type(tide_node_builder_attrs(b), "index_type", TIDE_INT64);
    out.node = tide_node_builder_finish(b, err);
    return out;
}

/* random_op(shape) * scale + offset (the Mul and Add only where they change something); the random
 * node is called name. */
static tide_output random_scaled(tide_graph *g, const char *random_op, const char *name, tide_dtype dt,
                                 const tide_shape *shape, int64_t seed, double scale, double offset, tide_error *err)
{
    tide_output out = dims_node(g, shape, err);
    if (!out.node)
        return out;
    tide_node_builder *b = tide__train_builder(g, random_op, name);
    tide_node_builder_add_input(b, out);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_attrs_set_type(tide_node_builder_attrs(b), "T", TIDE_INT64);
    tide_attrs_set_int(tide_node_builder_attrs(b), "seed", seed);
    out.node = tide_node_builder_finish(b, err);
    if (out.node && scale != 1.0)
        out = binary_node(g, "Mul", out, tide__train_scalar(g, "scale", dt, scale, err), err);
    if (out.node && offset != 0.0)
        out = binary_node(g, "Add", out, tide__train_scalar(g, "offset", dt, offset, err), err);
    return out;
}

/* TensorFlow's fans (see the top of the file); sizes are known (the shape is fully defined). */
static void compute_fans(const tide_shape *s, double *fan_in, double *fan_out)
{
    if (s->rank == 0) {
        *fan_in = *fan_out = 1.0;
    } else if (s->rank == 1) {
        *fan_in = *fan_out = (double)s->dims[0];
    } else {
        double receptive = 1.0;
        for (int i = 0; i < s->rank - 2; i++)
            receptive *= (double)s->dims[i];
        *fan_in = (double)s->dims[s->rank - 2] * receptive;
        *fan_out = (double)s->dims[s->rank - 1] * receptive;
    }
}

/* Glorot's variance 2 / (fan_in + fan_out), guarded as TensorFlow does against empty shapes. */
static double glorot_variance(const tide_shape *shape)
{
    double fan_in, fan_out;
    compute_fans(shape, &fan_in, &fan_out);
    return 1.0 / fmax(1.0, (fan_in + fan_out) / 2.0);
}

/* What the user can get wrong: the shape, the dtype for random values, non-finite parameters. */
static tide_status check_request(const tide_initializer *init, tide_dtype dt, const tide_shape *shape,
                                 tide_error *err)
{
    char s[TIDE_SHAPE_STR_MAX];
    if ((int)init->kind < 0 || init->kind > TIDE_INIT_GLOROT_NORMAL)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "unknown initializer kind %d", (int)init->kind);
    const char *what = KIND_NAMES[init->kind];
    if (!tide_dtype_name(dt))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s initializer: invalid dtype %d", what, (int)dt);
    if (!shape || !tide_shape_is_fully_defined(shape))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s initializer: the shape %s is not fully defined (every dimension must be known)",
                              what, shape ? tide_shape_format(shape, s, sizeof s) : "(NULL)");
    if (init->kind >= TIDE_INIT_UNIFORM && !tide_dtype_is_float(dt))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s initializer: random values need a float dtype (float16, bfloat16, float32, "
                              "float64), got %s", what, tide_dtype_name(dt));
    if (init->kind == TIDE_INIT_CONSTANT && isnan(init->value) && !tide_dtype_is_float(dt))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "constant initializer: nan is not a %s value",
                              tide_dtype_name(dt));
    if (init->kind == TIDE_INIT_UNIFORM && !(isfinite(init->lo) && isfinite(init->hi) && init->lo <= init->hi))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "uniform initializer: needs finite lo <= hi, got lo %g, hi %g", init->lo, init->hi);
    if ((init->kind == TIDE_INIT_NORMAL || init->kind == TIDE_INIT_TRUNCATED_NORMAL) &&
        !(isfinite(init->mean) && isfinite(init->stddev) && init->stddev >= 0))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s initializer: needs a finite mean and a finite stddev >= 0, got mean %g, "
                              "stddev %g", what, init->mean, init->stddev);
    return TIDE_OK;
}

static tide_output build(tide_graph *g, const tide_initializer *init, tide_dtype dt, const tide_shape *shape,
                         tide_error *err)
{
    switch (init->kind) {
    case TIDE_INIT_ZEROS: return constant(g, dt, shape, 0.0, err);
    case TIDE_INIT_ONES: return constant(g, dt, shape, 1.0, err);
    case TIDE_INIT_CONSTANT: return constant(g, dt, shape, init->value, err);
    case TIDE_INIT_UNIFORM:
        return random_scaled(g, "RandomUniform", "random_uniform", dt, shape, init->seed, init->hi - init->lo,
                             init->lo, err);
    case TIDE_INIT_NORMAL:
        return random_scaled(g, "RandomNormal", "random_normal", dt, shape, init->seed, init->stddev, init->mean,
                             err);
    case TIDE_INIT_TRUNCATED_NORMAL:
        return random_scaled(g, "TruncatedNormal", "truncated_normal", dt, shape, init->seed, init->stddev,
                             init->mean, err);
    case TIDE_INIT_GLOROT_UNIFORM: {
        double limit = sqrt(3.0 * glorot_variance(shape));
        return random_scaled(g, "RandomUniform", "random_uniform", dt, shape, init->seed, 2.0 * limit, -limit, err);
    }
    case TIDE_INIT_GLOROT_NORMAL:
        return random_scaled(g, "TruncatedNormal", "truncated_normal", dt, shape, init->seed,
                             sqrt(glorot_variance(shape)) / TRUNCATED_NORMAL_STDDEV, 0.0, err);
    }
    return (tide_output){NULL, 0};
}

tide_output tide_initializer_build(tide_graph *g, const tide_initializer *init, tide_dtype dtype,
                                   const tide_shape *shape, tide_error *err)
{
    tide_output none = {NULL, 0};
    if (!g || !init) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_initializer_build: %s is NULL", g ? "init" : "the graph");
        return none;
    }
    if (check_request(init, dtype, shape, err) != TIDE_OK)
        return none;
    int before = tide_graph_num_nodes(g);
    tide_output out = build(g, init, dtype, shape, err);
    if (!out.node) {
        if (tide_error_code(err) == TIDE_OK)
            tide_error_set(err, TIDE_INTERNAL, "%s initializer: building the ops failed", KIND_NAMES[init->kind]);
        tide_graph_rollback(g, before, NULL);
    }
    return out;
}
