/* reduce_grad.c — gradient functions of the reductions Sum, Mean, Max, Min and Prod and of the scans
 * Cumsum and Cumprod (ArgMax, ArgMin, All and Any are declared not differentiable).
 *
 * Each starts from dy in the "kept" shape: x's shape with the reduced axes set to 1, which is the
 * output's shape under keep_dims. That shape is a Const when x's shape and the axes are known at
 * graph time, else ReducedShape(Shape(x), axes) at run time. Then:
 *   Sum   dx = BroadcastTo(dy_kept, shape(x))
 *   Mean  dx = BroadcastTo(dy_kept / (size(x) / size(y)), shape(x))   (divided before broadcasting)
 *   Max, Min  dx = dy_kept * [x == y_kept] / (number of such x in the group): ties share equally,
 *         as in TensorFlow
 *   Prod  dx = ProdGrad(x, axes, dy): the product of the other members of each group (prefix and
 *         suffix products), exact with zeros in the input. */
#include <stdint.h>
#include <string.h>

#include "grad_util.h"

/* The reduction axes when they are a Const, normalised against rank, as a bit mask; false when
 * they are not known at graph time (or not valid: the forward op reports that). */
static bool const_axes(tide_output axes, int rank, unsigned *mask)
{
    tide_tensor *v = NULL;
    if (rank < 0 || strcmp(tide_node_op(axes.node), "Const") != 0 ||
        !tide_attrs_get_tensor(tide_node_attrs(axes.node), "value", &v))
        return false;
    *mask = 0;
    for (int64_t i = 0; i < tide_tensor_num_elements(v); i++) {
        int64_t a = tide_tensor_dtype(v) == TIDE_INT64 ? ((const int64_t *)tide_tensor_data(v))[i]
                                                       : ((const int32_t *)tide_tensor_data(v))[i];
        if (a < -rank || a >= rank)
            return false;
        *mask |= 1u << (a < 0 ? a + rank : a);
    }
    return true;
}

/* The kept shape of the reduction of x (input 0) over the axes (input 1): a Const when the axes are
 * and the dims they keep are known (the reduced ones may be unknown: they become 1). */
static tide_output kept_shape(tide_grad_ctx *ctx)
{
    tide_shape s = shape_of(X(0));
    int32_t dims[TIDE_MAX_RANK];
    unsigned mask;
    bool known = const_axes(X(1), s.rank, &mask);
    for (int i = 0; known && i < s.rank; i++) {
        dims[i] = mask >> i & 1 ? 1 : (int32_t)s.dims[i];
        known = dims[i] >= 0 && (mask >> i & 1 || s.dims[i] <= INT32_MAX);
    }
    if (known)
        return tide_grad_ints(ctx, dims, s.rank);
    return tide_grad_op2(ctx, "ReducedShape", tide_grad_op1(ctx, "Shape", X(0)), X(1));
}

/* t (the output y or its gradient) in the kept shape: as is under keep_dims, else reshaped. */
static tide_output in_kept_shape(tide_grad_ctx *ctx, tide_output t, tide_output *kept)
{
    if (attr_bool(ctx, "keep_dims", false))
        return t;
    if (!kept->node)
        *kept = kept_shape(ctx);
    return tide_grad_op2(ctx, "Reshape", t, *kept);
}

static tide_status sum_grad(tide_grad_ctx *ctx)
{
    tide_output kept = {0};
    tide_output g = in_kept_shape(ctx, DY(0), &kept);
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "BroadcastTo", g, shape_tensor(ctx, X(0), TIDE_INT32)));
    return tide_grad_status(ctx);
}

/* size(x) / size(y) in x's dtype: a Const when both are known, else computed (size(y) at least 1,
 * so an empty output divides nothing by zero). */
static tide_output group_size(tide_grad_ctx *ctx)
{
    tide_shape sx = shape_of(X(0)), sy = shape_of(Y(0));
    tide_dtype dt = dtype_of(X(0));
    int64_t nx = tide_shape_num_elements(&sx), ny = tide_shape_num_elements(&sy);
    if (nx >= 0 && ny >= 0)
        return tide_grad_scalar(ctx, dt, ny ? (double)nx / (double)ny : 1.0);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "out_type", TIDE_INT64);
    tide_output size_x = tide_grad_op(ctx, "Size", (tide_output[]){X(0)}, 1, a);
    tide_output size_y = tide_grad_op(ctx, "Size", (tide_output[]){Y(0)}, 1, a);
    tide_attrs_free(a);
    size_y = tide_grad_op2(ctx, "Maximum", size_y, tide_grad_scalar(ctx, TIDE_INT64, 1));
    a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", dt);
    tide_output ratio = tide_grad_op2(ctx, "Div", size_x, size_y);
    tide_output out = tide_grad_op(ctx, "Cast", &ratio, 1, a);
    tide_attrs_free(a);
    return out;
}

static tide_status mean_grad(tide_grad_ctx *ctx)
{
    tide_output kept = {0};
    tide_output g = tide_grad_op2(ctx, "Div", in_kept_shape(ctx, DY(0), &kept), group_size(ctx));
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "BroadcastTo", g, shape_tensor(ctx, X(0), TIDE_INT32)));
    return tide_grad_status(ctx);
}

/* Max and Min: the gradient goes to the elements equal to the result, shared equally among ties. */
static tide_status extremum_grad(tide_grad_ctx *ctx)
{
    tide_output kept = {0};
    tide_output y = in_kept_shape(ctx, Y(0), &kept), g = in_kept_shape(ctx, DY(0), &kept);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", dtype_of(X(0)));
    tide_output hit = tide_grad_op2(ctx, "Equal", y, X(0));
    tide_output chosen = tide_grad_op(ctx, "Cast", &hit, 1, a);
    tide_attrs_free(a);
    a = tide_attrs_new();
    tide_attrs_set_bool(a, "keep_dims", true);
    tide_output ties = tide_grad_op(ctx, "Sum", (tide_output[]){chosen, X(1)}, 2, a);
    tide_attrs_free(a);
    tide_output share = tide_grad_op2(ctx, "Div", g, ties); /* small: one value per group */
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", chosen, share));
    return tide_grad_status(ctx);
}

static tide_status prod_grad(tide_grad_ctx *ctx)
{
    tide_output in[3] = {X(0), X(1), DY(0)};
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "ProdGrad", in, 3, NULL));
    return tide_grad_status(ctx);
}

/* Cumsum(t) with the forward node's exclusive and the scan direction given. */
static tide_output cumsum(tide_grad_ctx *ctx, tide_output t, bool reverse)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "exclusive", attr_bool(ctx, "exclusive", false));
    tide_attrs_set_bool(a, "reverse", reverse);
    tide_output out = tide_grad_op(ctx, "Cumsum", (tide_output[]){t, X(1)}, 2, a);
    tide_attrs_free(a);
    return out;
}

/* Cumsum: each x[i] enters the results from i on (or up to i, reversed): dx is dy summed the other
 * way. Cumprod: TensorFlow's formula, Cumsum(y * dy) the other way divided by x, which needs x != 0
 * (a zero gives inf or nan, as in TensorFlow). */
static tide_status cumsum_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, cumsum(ctx, DY(0), !attr_bool(ctx, "reverse", false)));
    return tide_grad_status(ctx);
}

static tide_status cumprod_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    tide_output summed = cumsum(ctx, tide_grad_op2(ctx, "Mul", Y(0), DY(0)), !attr_bool(ctx, "reverse", false));
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "RealDiv", summed, X(0)));
    return tide_grad_status(ctx);
}

static void register_reduce_gradients(void)
{
    tide_gradient_register("Sum", sum_grad);
    tide_gradient_register("Mean", mean_grad);
    tide_gradient_register("Max", extremum_grad);
    tide_gradient_register("Min", extremum_grad);
    tide_gradient_register("Prod", prod_grad);
    tide_gradient_register("Cumsum", cumsum_grad);
    tide_gradient_register("Cumprod", cumprod_grad);
    tide_gradient_register("ArgMax", NULL);
    tide_gradient_register("ArgMin", NULL);
    tide_gradient_register("All", NULL); /* bool */
    tide_gradient_register("Any", NULL);
}
TIDE_REGISTER(register_reduce_gradients)
