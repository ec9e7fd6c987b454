/* shape_fold.c — constant folding of shape-like subgraphs at graph time, for shape inference.
 *
 * A shape function sees the value of an input only when that input is a Const. Many shapes are
 * computed by small subgraphs whose value is known at graph time all the same: `sum(w*w)` reduces over
 * Range(0, Rank(w*w), 1), and Rank of a tensor of known rank is a constant, so the axes are [0, 1] and
 * the result is a scalar (it was inferred <unknown>, bug 8). When a node is built, this file computes
 * such a value when it can, and the node keeps it (tide__node_const_value hands it to the shape
 * functions of its consumers): Rank of a known rank, Shape and Size of a fully defined shape, and
 * Range over known scalars (by running Range's own kernel). Values are kept small (at most
 * FOLD_MAX_ELEMENTS elements): they exist for shapes and axes, not as a general constant folder. */
#include <string.h>

#include "internal.h"

#define FOLD_MAX_ELEMENTS 64

/* An int32 or int64 tensor of the given rank (0 or 1) holding values[0..n). */
static tide_tensor *int_tensor(tide_dtype dt, int rank, const int64_t *values, int n)
{
    tide_shape shape = rank == 0 ? tide_shape_scalar() : tide_shape_vector(n);
    tide_tensor *t = tide_tensor_new(dt, &shape, NULL);
    for (int i = 0; t && i < n; i++) {
        if (dt == TIDE_INT64)
            ((int64_t *)tide_tensor_data(t))[i] = values[i];
        else
            ((int32_t *)tide_tensor_data(t))[i] = (int32_t)values[i];
    }
    return t;
}

static tide_dtype out_type(const tide_attrs *attrs)
{
    tide_dtype dt = TIDE_INT32;
    tide_attrs_get_type(attrs, "out_type", &dt);
    return dt;
}

tide_tensor *tide__fold_value(const tide_op_def *op, const tide_attrs *attrs, const tide_shape *in_shapes,
                              const tide_tensor *const *in_values, int num_inputs, const tide_shape *out_shape)
{
    const char *name = op->name;
    const tide_shape *in = num_inputs > 0 ? &in_shapes[0] : NULL;
    if (strcmp(name, "Rank") == 0 && in && in->rank >= 0)
        return int_tensor(TIDE_INT32, 0, (int64_t[]){in->rank}, 1);
    if (strcmp(name, "Shape") == 0 && in && tide_shape_is_fully_defined(in))
        return int_tensor(out_type(attrs), 1, in->dims, in->rank);
    if (strcmp(name, "Size") == 0 && in && tide_shape_is_fully_defined(in) && tide_shape_num_elements(in) >= 0)
        return int_tensor(out_type(attrs), 0, (int64_t[]){tide_shape_num_elements(in)}, 1);
    if (strcmp(name, "Range") == 0 && num_inputs == 3 && in_values[0] && in_values[1] && in_values[2] &&
        tide_shape_is_fully_defined(out_shape) && tide_shape_num_elements(out_shape) <= FOLD_MAX_ELEMENTS) {
        tide_tensor *out = NULL;
        int got = 0;
        if (tide_engine_run_op(NULL, name, (tide_tensor *const *)in_values, 3, attrs, &out, 1, &got, NULL) != TIDE_OK)
            return NULL; /* the kernel will say what is wrong when the node runs */
        return out;
    }
    return NULL;
}
