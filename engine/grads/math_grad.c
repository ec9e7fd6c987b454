/* math_grad.c — gradient functions of the element-wise math ops (engine/ops/math_ops.c) and of
 * Cast, Select, SelectV2 and Identity, with TensorFlow's math; and the declarations "no gradient flows" for
 * the comparisons, logical ops, integer-only arithmetic, the random ops and the stateful core ops.
 *
 * Binary ops broadcast, so each operand's gradient is summed back to its own shape with
 * tide_grad_unbroadcast (static when the shapes are known). Only the inputs that want a gradient
 * (tide_grad_wants) get ops. The functions cover real dtypes: where TensorFlow conjugates for complex
 * numbers (products, quotients, squares) the gradient of a complex op fails with UNIMPLEMENTED
 * instead of giving a wrong value. Sigmoid and Tanh are in nn_grad.c. */
#include "grad_util.h"

/* ---------------------------------------------------------------- binary ops */

/* Hands gx (the gradient of the broadcast result with respect to x = input 0) and gy (for y =
 * input 1) to the inputs, each summed back to its operand's shape. Either may be NULL-noded when
 * its input does not want a gradient. */
static tide_status set_binary(tide_grad_ctx *ctx, tide_output gx, tide_output gy)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_unbroadcast(ctx, gx, X(0), X(1)));
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_unbroadcast(ctx, gy, X(1), X(0)));
    return tide_grad_status(ctx);
}

static tide_status add_grad(tide_grad_ctx *ctx)
{
    return set_binary(ctx, DY(0), DY(0));
}

static tide_status sub_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_unbroadcast(ctx, DY(0), X(0), X(1)));
    if (tide_grad_wants(ctx, 1)) /* negate after summing: the smaller tensor */
        tide_grad_set_dx(ctx, 1, tide_grad_op1(ctx, "Neg", tide_grad_unbroadcast(ctx, DY(0), X(1), X(0))));
    return tide_grad_status(ctx);
}

static tide_status mul_grad(tide_grad_ctx *ctx)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    tide_output gx = tide_grad_wants(ctx, 0) ? tide_grad_op2(ctx, "Mul", DY(0), X(1)) : NONE;
    tide_output gy = tide_grad_wants(ctx, 1) ? tide_grad_op2(ctx, "Mul", X(0), DY(0)) : NONE;
    return set_binary(ctx, gx, gy);
}

/* z = x / y: dx = dz / y, dy = -dz * z / y. */
static tide_status div_grad(tide_grad_ctx *ctx)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    tide_output gx = NONE, gy = NONE;
    if (tide_grad_wants(ctx, 0))
        gx = tide_grad_op2(ctx, "Div", DY(0), X(1));
    if (tide_grad_wants(ctx, 1))
        gy = tide_grad_op1(ctx, "Neg", tide_grad_op2(ctx, "Div", tide_grad_op2(ctx, "Mul", DY(0), Y(0)),
                                                     X(1)));
    return set_binary(ctx, gx, gy);
}

/* z = DivNoNan(x, y) (TensorFlow's gradient): dx = DivNoNan(dz, y), dy = dz * DivNoNan(DivNoNan(-x, y),
 * y); both 0 where y is 0. */
static tide_status div_no_nan_grad(tide_grad_ctx *ctx)
{
    tide_output gx = NONE, gy = NONE;
    if (tide_grad_wants(ctx, 0))
        gx = tide_grad_op2(ctx, "DivNoNan", DY(0), X(1));
    if (tide_grad_wants(ctx, 1)) {
        tide_output q = tide_grad_op2(ctx, "DivNoNan", tide_grad_op1(ctx, "Neg", X(0)), X(1));
        gy = tide_grad_op2(ctx, "Mul", DY(0), tide_grad_op2(ctx, "DivNoNan", q, X(1)));
    }
    return set_binary(ctx, gx, gy);
}

/* z = x^y: dx = dz * y * x^(y-1); dy = dz * z * log(x) where x > 0 and 0 elsewhere (TensorFlow's
 * convention). log is only taken of positive values, so no NaN is ever computed. */
static tide_status pow_grad(tide_grad_ctx *ctx)
{
    tide_output x = X(0), y = X(1), gx = NONE, gy = NONE;
    if (tide_grad_wants(ctx, 0)) {
        tide_output y1 = tide_grad_op2(ctx, "Sub", y, scalar_like(ctx, y, 1));
        gx = tide_grad_op2(ctx, "Mul", DY(0), tide_grad_op2(ctx, "Mul", y, tide_grad_op2(ctx, "Pow", x, y1)));
    }
    if (tide_grad_wants(ctx, 1)) {
        tide_output positive = tide_grad_op2(ctx, "Greater", x, scalar_like(ctx, x, 0));
        tide_output safe_x = tide_grad_op(ctx, "SelectV2", (tide_output[]){positive, x, scalar_like(ctx, x, 1)},
                                          3, NULL);
        tide_output log_x = tide_grad_op(ctx, "SelectV2",
                                         (tide_output[]){positive, tide_grad_op1(ctx, "Log", safe_x),
                                                         scalar_like(ctx, x, 0)}, 3, NULL);
        gy = tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", DY(0), Y(0)), log_x);
    }
    return set_binary(ctx, gx, gy);
}

/* z = x - q * y with q = FloorDiv(x, y) (FloorMod) or TruncateDiv(x, y) (Mod, TruncateMod), which
 * is piecewise constant: dx = dz, dy = -dz * q (TensorFlow's FloorMod gradient). */
static tide_status remainder_grad(tide_grad_ctx *ctx, const char *quotient)
{
    if (!tide_dtype_is_float(dtype_of(X(0))))
        return TIDE_OK; /* integer remainders carry no gradient */
    tide_output gy = NONE;
    if (tide_grad_wants(ctx, 1))
        gy = tide_grad_op1(ctx, "Neg", tide_grad_op2(ctx, "Mul", DY(0), tide_grad_op2(ctx, quotient, X(0), X(1))));
    return set_binary(ctx, DY(0), gy);
}

static tide_status floor_mod_grad(tide_grad_ctx *ctx) { return remainder_grad(ctx, "FloorDiv"); }
static tide_status truncate_mod_grad(tide_grad_ctx *ctx) { return remainder_grad(ctx, "TruncateDiv"); }

/* z = (x - y)^2: dx = 2 (x - y) dz, dy = -dx (each summed back to its operand's shape). */
static tide_status squared_difference_grad(tide_grad_ctx *ctx)
{
    tide_output d = tide_grad_op2(ctx, "Sub", X(0), X(1));
    tide_output gx = tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", DY(0), d), scalar_like(ctx, d, 2));
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_unbroadcast(ctx, gx, X(0), X(1)));
    if (tide_grad_wants(ctx, 1)) /* negate after summing: the smaller tensor */
        tide_grad_set_dx(ctx, 1, tide_grad_op1(ctx, "Neg", tide_grad_unbroadcast(ctx, gx, X(1), X(0))));
    return tide_grad_status(ctx);
}

/* ClipByValue(t, lo, hi): t gets dy where lo <= t <= hi, lo where t < lo, hi where t > hi (each
 * bound summed back to its shape: a scalar bound sums over t), TensorFlow's rule. */
static tide_status clip_by_value_grad(tide_grad_ctx *ctx)
{
    tide_output t = X(0), dy = DY(0), zero = scalar_like(ctx, DY(0), 0);
    tide_output below = tide_grad_op2(ctx, "Less", t, X(1)), above = tide_grad_op2(ctx, "Greater", t, X(2));
    if (tide_grad_wants(ctx, 0)) {
        tide_output outside = tide_grad_op2(ctx, "LogicalOr", below, above);
        tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "SelectV2", (tide_output[]){outside, zero, dy}, 3, NULL));
    }
    tide_output masks[2] = {below, above};
    for (int i = 1; i <= 2; i++)
        if (tide_grad_wants(ctx, i)) {
            tide_output g = tide_grad_op(ctx, "SelectV2", (tide_output[]){masks[i - 1], dy, zero}, 3, NULL);
            tide_grad_set_dx(ctx, i, tide_grad_unbroadcast(ctx, g, X(i), t));
        }
    return tide_grad_status(ctx);
}

/* Maximum (Minimum): the gradient goes to x where x >= y (x <= y), else to y; ties go to x. */
static tide_status extremum_grad(tide_grad_ctx *ctx, const char *compare)
{
    tide_output pick_x = tide_grad_op2(ctx, compare, X(0), X(1));
    tide_output zero = scalar_like(ctx, DY(0), 0), gx = NONE, gy = NONE;
    if (tide_grad_wants(ctx, 0))
        gx = tide_grad_op(ctx, "SelectV2", (tide_output[]){pick_x, DY(0), zero}, 3, NULL);
    if (tide_grad_wants(ctx, 1))
        gy = tide_grad_op(ctx, "SelectV2", (tide_output[]){pick_x, zero, DY(0)}, 3, NULL);
    return set_binary(ctx, gx, gy);
}

static tide_status maximum_grad(tide_grad_ctx *ctx) { return extremum_grad(ctx, "GreaterEqual"); }
static tide_status minimum_grad(tide_grad_ctx *ctx) { return extremum_grad(ctx, "LessEqual"); }

static tide_status add_n_grad(tide_grad_ctx *ctx)
{
    for (int i = 0; i < tide_node_num_inputs(tide_grad_node(ctx)); i++)
        if (tide_grad_wants(ctx, i))
            tide_grad_set_dx(ctx, i, DY(0));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- unary ops */

/* dx = dy * factor. */
static tide_status set_scaled(tide_grad_ctx *ctx, tide_output factor)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", DY(0), factor));
    return tide_grad_status(ctx);
}

static tide_status identity_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, DY(0));
    return TIDE_OK;
}

/* PreventGradient: a gradient must not flow here; the error carries the node's message. */
static tide_status prevent_gradient_grad(tide_grad_ctx *ctx)
{
    const char *message = "";
    tide_attrs_get_string(tide_grad_attrs(ctx), "message", &message);
    return tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "a gradient flows through PreventGradient%s%s",
                           message[0] ? ": " : "", message);
}

static tide_status neg_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op1(ctx, "Neg", DY(0)));
    return tide_grad_status(ctx);
}

static tide_status abs_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, tide_grad_op1(ctx, "Sign", X(0))); }

/* Sign is piecewise constant: its gradient is zero (at 0 too, as TensorFlow). */
static tide_status sign_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op1(ctx, "ZerosLike", X(0)));
    return tide_grad_status(ctx);
}

static tide_status square_grad(tide_grad_ctx *ctx)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    return set_scaled(ctx, tide_grad_op2(ctx, "Mul", X(0), scalar_like(ctx, X(0), 2)));
}

/* Sqrt, Rsqrt, Reciprocal and Inv: dx = SqrtGrad(y, dy), RsqrtGrad(y, dy), ReciprocalGrad(y, dy),
 * InvGrad(y, dy), the gradient ops TensorFlow's own gradients emit. */
static tide_status output_gradient_op(tide_grad_ctx *ctx, const char *op)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, op, Y(0), DY(0)));
    return tide_grad_status(ctx);
}

static tide_status sqrt_grad(tide_grad_ctx *ctx) { return output_gradient_op(ctx, "SqrtGrad"); }
static tide_status rsqrt_grad(tide_grad_ctx *ctx) { return output_gradient_op(ctx, "RsqrtGrad"); }
static tide_status reciprocal_grad(tide_grad_ctx *ctx) { return output_gradient_op(ctx, "ReciprocalGrad"); }
static tide_status inv_grad(tide_grad_ctx *ctx) { return output_gradient_op(ctx, "InvGrad"); }

/* Second order (TensorFlow's formulas), a = y the forward output, b = dy, dz the gradient into the
 * op's output z:
 *   SqrtGrad        z = 0.5 b / a:    da = -(dz / a) * z,      db = 0.5 * dz / a
 *   RsqrtGrad       z = -0.5 b a^3:   da = -1.5 * dz * b * a^2, db = RsqrtGrad(a, dz)
 *   ReciprocalGrad  z = -a^2 b:       da = -2 * dz * b * a,    db = ReciprocalGrad(a, dz) */
static tide_status sqrt_grad_grad(tide_grad_ctx *ctx)
{
    tide_output ga = tide_grad_op2(ctx, "RealDiv", DY(0), X(0));
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", tide_grad_op1(ctx, "Neg", ga), Y(0)));
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, "Mul", scalar_like(ctx, ga, 0.5), ga));
    return tide_grad_status(ctx);
}

static tide_status rsqrt_grad_grad(tide_grad_ctx *ctx)
{
    tide_output a = X(0), b = X(1), dz = DY(0);
    if (tide_grad_wants(ctx, 0)) {
        tide_output g = tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", scalar_like(ctx, a, -1.5), dz), b);
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", g, tide_grad_op1(ctx, "Square", a)));
    }
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, "RsqrtGrad", a, dz));
    return tide_grad_status(ctx);
}

static tide_status reciprocal_grad_grad(tide_grad_ctx *ctx)
{
    tide_output a = X(0), b = X(1), dz = DY(0);
    if (tide_grad_wants(ctx, 0)) {
        tide_output g = tide_grad_op2(ctx, "Mul", tide_grad_op2(ctx, "Mul", dz, scalar_like(ctx, a, -2)), b);
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", g, a));
    }
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op2(ctx, tide_node_op(tide_grad_node(ctx)), a, dz));
    return tide_grad_status(ctx);
}

static tide_status exp_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, Y(0)); }

static tide_status log_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Div", DY(0), X(0)));
    return tide_grad_status(ctx);
}

static tide_status log1p_grad(tide_grad_ctx *ctx)
{
    tide_output one_plus_x = tide_grad_op2(ctx, "Add", X(0), scalar_like(ctx, X(0), 1));
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Div", DY(0), one_plus_x));
    return tide_grad_status(ctx);
}

static tide_status sin_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, tide_grad_op1(ctx, "Cos", X(0))); }

static tide_status cos_grad(tide_grad_ctx *ctx)
{
    return set_scaled(ctx, tide_grad_op1(ctx, "Neg", tide_grad_op1(ctx, "Sin", X(0))));
}

/* tf.math's functions, TensorFlow's gradients:
 *   Expm1 dy * exp(x)          Tan   dy / cos(x)^2          Erf, Erfc  +-dy * 2/sqrt(pi) * exp(-x^2)
 *   Asin  dy / sqrt(1 - x^2)   Acos  -dy / sqrt(1 - x^2)    Atan       dy / (1 + x^2)
 *   Sinh  dy * cosh(x)         Cosh  dy * sinh(x)
 *   Asinh dy / cosh(y)         Acosh dy / sinh(y)           Atanh      dy / (1 - x^2) */
static tide_output one_minus_square(tide_grad_ctx *ctx, tide_output x, bool plus)
{
    return tide_grad_op2(ctx, plus ? "Add" : "Sub", scalar_like(ctx, x, 1), tide_grad_op1(ctx, "Square", x));
}

static tide_status set_divided(tide_grad_ctx *ctx, tide_output divisor)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "RealDiv", DY(0), divisor));
    return tide_grad_status(ctx);
}

static tide_status expm1_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, tide_grad_op1(ctx, "Exp", X(0))); }
static tide_status tan_grad(tide_grad_ctx *ctx)
{
    return set_divided(ctx, tide_grad_op1(ctx, "Square", tide_grad_op1(ctx, "Cos", X(0))));
}
static tide_status erf_like_grad(tide_grad_ctx *ctx, double sign)
{
    tide_output e = tide_grad_op1(ctx, "Exp", tide_grad_op1(ctx, "Neg", tide_grad_op1(ctx, "Square", X(0))));
    return set_scaled(ctx, tide_grad_op2(ctx, "Mul", scalar_like(ctx, X(0), sign * 1.1283791670955126), e));
}
static tide_status erf_grad(tide_grad_ctx *ctx) { return erf_like_grad(ctx, 1); }
static tide_status erfc_grad(tide_grad_ctx *ctx) { return erf_like_grad(ctx, -1); }
static tide_status asin_grad(tide_grad_ctx *ctx)
{
    return set_divided(ctx, tide_grad_op1(ctx, "Sqrt", one_minus_square(ctx, X(0), false)));
}
static tide_status acos_grad(tide_grad_ctx *ctx)
{
    tide_output d = tide_grad_op1(ctx, "Sqrt", one_minus_square(ctx, X(0), false));
    tide_grad_set_dx(ctx, 0, tide_grad_op1(ctx, "Neg", tide_grad_op2(ctx, "RealDiv", DY(0), d)));
    return tide_grad_status(ctx);
}
static tide_status atan_grad(tide_grad_ctx *ctx) { return set_divided(ctx, one_minus_square(ctx, X(0), true)); }
static tide_status sinh_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, tide_grad_op1(ctx, "Cosh", X(0))); }
static tide_status cosh_grad(tide_grad_ctx *ctx) { return set_scaled(ctx, tide_grad_op1(ctx, "Sinh", X(0))); }
static tide_status asinh_grad(tide_grad_ctx *ctx) { return set_divided(ctx, tide_grad_op1(ctx, "Cosh", Y(0))); }
static tide_status acosh_grad(tide_grad_ctx *ctx) { return set_divided(ctx, tide_grad_op1(ctx, "Sinh", Y(0))); }
static tide_status atanh_grad(tide_grad_ctx *ctx) { return set_divided(ctx, one_minus_square(ctx, X(0), false)); }

/* ---------------------------------------------------------------- Cast, Select */

/* Between floating-point (or complex) dtypes the gradient is cast back; to or from an integer or
 * bool no gradient flows (such an edge carries no gradient anyway). */
static tide_status cast_grad(tide_grad_ctx *ctx)
{
    tide_dtype src = dtype_of(X(0)), dst = dtype_of(Y(0));
    bool src_ok = tide_dtype_is_float(src) || tide_dtype_is_complex(src);
    bool dst_ok = tide_dtype_is_float(dst) || tide_dtype_is_complex(dst);
    if (!src_ok || !dst_ok || !tide_grad_wants(ctx, 0))
        return TIDE_OK;
    if (tide_dtype_is_complex(dst) && !tide_dtype_is_complex(src))
        return tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "the gradient of a cast from %s to %s is not "
                               "supported", tide_dtype_name(src), tide_dtype_name(dst));
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", src);
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "Cast", (tide_output[]){DY(0)}, 1, a));
    tide_attrs_free(a);
    return tide_grad_status(ctx);
}

/* SelectV2(c, t, e): t gets dy where c holds, e where it does not; each summed back to its own
 * shape (the three operands broadcast to the output's shape). The condition gets nothing. */
static tide_status select_v2_grad(tide_grad_ctx *ctx)
{
    tide_output c = X(0), dy = DY(0), zero = scalar_like(ctx, DY(0), 0);
    if (tide_grad_wants(ctx, 1)) {
        tide_output g = tide_grad_op(ctx, "SelectV2", (tide_output[]){c, dy, zero}, 3, NULL);
        tide_grad_set_dx(ctx, 1, tide_grad_unbroadcast(ctx, g, X(1), Y(0)));
    }
    if (tide_grad_wants(ctx, 2)) {
        tide_output g = tide_grad_op(ctx, "SelectV2", (tide_output[]){c, zero, dy}, 3, NULL);
        tide_grad_set_dx(ctx, 2, tide_grad_unbroadcast(ctx, g, X(2), Y(0)));
    }
    return tide_grad_status(ctx);
}

/* Select(c, t, e) (1.x): t, e and dy have one shape, so the same Select with zeros routes dy. */
static tide_status select_grad(tide_grad_ctx *ctx)
{
    tide_output c = X(0), dy = DY(0), zeros = tide_grad_op1(ctx, "ZerosLike", DY(0));
    if (tide_grad_wants(ctx, 1))
        tide_grad_set_dx(ctx, 1, tide_grad_op(ctx, "Select", (tide_output[]){c, dy, zeros}, 3, NULL));
    if (tide_grad_wants(ctx, 2))
        tide_grad_set_dx(ctx, 2, tide_grad_op(ctx, "Select", (tide_output[]){c, zeros, dy}, 3, NULL));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- registration */

static void register_math_gradients(void)
{
    static const grad_entry table[] = {
        {"Add", add_grad},         {"Sub", sub_grad},         {"Mul", mul_grad},
        {"Div", div_grad},         {"Pow", pow_grad},         {"Maximum", maximum_grad},
        {"Minimum", minimum_grad}, {"AddN", add_n_grad},      {"Identity", identity_grad},
        {"PlaceholderWithDefault", identity_grad}, {"Snapshot", identity_grad},
        {"PreventGradient", prevent_gradient_grad},
        {"Neg", neg_grad},         {"Abs", abs_grad},         {"Sign", sign_grad},
        {"Square", square_grad},   {"Sqrt", sqrt_grad},       {"Rsqrt", rsqrt_grad},
        {"Exp", exp_grad},         {"Log", log_grad},         {"Log1p", log1p_grad},
        {"Sin", sin_grad},         {"Cos", cos_grad},         {"Cast", cast_grad},
        {"Select", select_grad},   {"SelectV2", select_v2_grad},
        {"AddV2", add_grad},       {"RealDiv", div_grad},     {"FloorMod", floor_mod_grad},
        {"Mod", truncate_mod_grad}, {"TruncateMod", truncate_mod_grad},
        {"SquaredDifference", squared_difference_grad},
        {"Reciprocal", reciprocal_grad}, {"Inv", inv_grad},
        {"SqrtGrad", sqrt_grad_grad}, {"RsqrtGrad", rsqrt_grad_grad},
        {"ReciprocalGrad", reciprocal_grad_grad}, {"InvGrad", reciprocal_grad_grad},
        {"DivNoNan", div_no_nan_grad},
        {"Expm1", expm1_grad},     {"Tan", tan_grad},         {"Erf", erf_grad},
        {"Erfc", erfc_grad},       {"Asin", asin_grad},       {"Acos", acos_grad},
        {"Atan", atan_grad},       {"Sinh", sinh_grad},       {"Cosh", cosh_grad},
        {"Asinh", asinh_grad},     {"Acosh", acosh_grad},     {"Atanh", atanh_grad},
        {"ClipByValue", clip_by_value_grad},
    };
    register_gradients(table, COUNT_OF(table));

    /* No gradient flows through these: their outputs are bool or integer-valued (comparisons, logic,
     * the integer divisions and roundings, which are piecewise constant), random draws, or state
     * (variables and their updates, the optimizers' fused updates included). */
    static const char *const not_differentiable[] = {
        "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
        "LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite", "FloorDiv", "TruncateDiv",
        "Floor", "Ceil", "Round", "Rint",
        "RandomUniform", "RandomNormal", "TruncatedNormal", "RandomUniformInt", "RandomShuffle",
        "Const", "Placeholder", "Variable", "Assign", "AssignAdd", "AssignSub", "NoOp", "ScalarSummary", "ImageSummary",
        "ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad", "ApplyRMSProp", "ApplyAdam",
    };
    register_no_gradients(not_differentiable, COUNT_OF(not_differentiable));
}
TIDE_REGISTER(register_math_gradients)
