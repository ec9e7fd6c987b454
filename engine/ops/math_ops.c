/* math_ops.c — definitions of the element-wise math ops: the binary arithmetic ops with NumPy
 * broadcasting (Add/AddV2, Sub, Mul, the divisions Div, RealDiv, FloorDiv, TruncateDiv, the
 * remainders Mod, TruncateMod, FloorMod, Pow, Maximum, Minimum, SquaredDifference), the unary ops
 * (Neg, Abs, Sign, Square, Reciprocal, the roundings and the float-only transcendental functions,
 * tf.math's Expm1, Erf, Erfc, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh among them),
 * ClipByValue, AddN, DivNoNan and the gradient ops SqrtGrad, RsqrtGrad, ReciprocalGrad and InvGrad.
 * Names, attrs and semantics are TensorFlow 1.x's (Mod truncates like C, FloorMod floors
 * like Python); the docs state the integer behaviour (wrapping, rounding, division by zero) the CPU
 * kernels (kernels/cpu/math.c) implement and what differs from TensorFlow. */
#include <stdio.h>

#include "../tide_op.h"

/* Dtype sets. Every kernel of kernels/cpu/math.c covers exactly the set its op declares. */
#define T_ARITH "T: {int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, float64, " \
                "complex64, complex128}"
#define T_REAL "T: {int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, float64}"
#define T_SIGNED "T: {int8, int16, int32, int64, float16, bfloat16, float32, float64}"
#define T_SIGNED_CPLX "T: {int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, " \
                      "complex128}"
#define T_FLOAT "T: {float16, bfloat16, float32, float64}"

/* Output 0 = the NumPy broadcast of inputs x and y. Unknown dims stay unknown unless the other side
 * fixes them (a known dim > 1, or 0: an unknown dim broadcasting against 0 must be 0 or 1). */
static tide_status broadcast_shape(tide_shape_ctx *ctx)
{
    tide_shape x = tide_shape_input(ctx, 0), y = tide_shape_input(ctx, 1), z;
    if (!tide_shape_broadcast(&x, &y, &z)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "incompatible shapes for broadcasting: x is %s, y is %s",
                                tide_shape_format(&x, a, sizeof a), tide_shape_format(&y, b, sizeof b));
    }
    for (int i = 0; i < z.rank; i++) {
        if (z.dims[i] >= 0)
            continue;
        int ix = i - (z.rank - x.rank), iy = i - (z.rank - y.rank);
        if ((ix >= 0 && x.dims[ix] == 0) || (iy >= 0 && y.dims[iy] == 0))
            z.dims[i] = 0;
    }
    tide_shape_set_output(ctx, 0, &z);
    return TIDE_OK;
}

/* AddN: every input must have the same shape; the output is the most specific merge of them. */
static tide_status addn_shape(tide_shape_ctx *ctx)
{
    tide_shape merged = tide_shape_unknown();
    int first_known = -1;
    for (int i = 0; i < tide_shape_num_inputs(ctx); i++) {
        tide_shape s = tide_shape_input(ctx, i);
        if (s.rank < 0)
            continue;
        if (merged.rank < 0) {
            merged = s;
            first_known = i;
            continue;
        }
        if (!tide_shape_compatible(&merged, &s)) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            tide_shape first = tide_shape_input(ctx, first_known);
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "inputs must all have the same shape: input %d is %s but input %d is %s",
                                    first_known, tide_shape_format(&first, a, sizeof a), i,
                                    tide_shape_format(&s, b, sizeof b));
        }
        for (int d = 0; d < s.rank; d++)
            if (merged.dims[d] < 0)
                merged.dims[d] = s.dims[d];
    }
    tide_shape_set_output(ctx, 0, &merged);
    return TIDE_OK;
}

/* The gradient ops SqrtGrad, RsqrtGrad, ReciprocalGrad, InvGrad: y and dy have one shape (no
 * broadcasting, as TensorFlow's), the output has it too (the more specific of the two). */
static tide_status y_dy_shape(tide_shape_ctx *ctx)
{
    tide_shape y = tide_shape_input(ctx, 0), dy = tide_shape_input(ctx, 1);
    if (y.rank >= 0 && dy.rank >= 0 && !tide_shape_compatible(&y, &dy)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "y and dy must have the same shape: y is %s, "
                                "dy is %s", tide_shape_format(&y, a, sizeof a),
                                tide_shape_format(&dy, b, sizeof b));
    }
    tide_shape merged = y.rank >= 0 ? y : dy;
    for (int d = 0; y.rank >= 0 && dy.rank >= 0 && d < merged.rank; d++)
        if (merged.dims[d] < 0)
            merged.dims[d] = dy.dims[d];
    tide_shape_set_output(ctx, 0, &merged);
    return TIDE_OK;
}

/* ClipByValue: t's shape; each bound a scalar or t's shape (TensorFlow's rule). */
static tide_status clip_shape(tide_shape_ctx *ctx)
{
    tide_shape t = tide_shape_input(ctx, 0);
    static const char *const names[] = {"clip_value_min", "clip_value_max"};
    for (int i = 1; i <= 2; i++) {
        tide_shape b = tide_shape_input(ctx, i);
        if (b.rank <= 0 || tide_shape_compatible(&t, &b))
            continue;
        char a[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s of shape %s must be a scalar or have t's "
                                "shape %s", names[i - 1], tide_shape_format(&b, a, sizeof a),
                                tide_shape_format(&t, c, sizeof c));
    }
    tide_shape_set_output(ctx, 0, &t);
    return TIDE_OK;
}

static void binary(const char *name, const char *type_attr, unsigned flags, const char *doc,
                   const char *tf_differences)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T", "y: T"},
        .outputs = {"z: T"},
        .attrs = {type_attr},
        .flags = flags,
        .shape_fn = broadcast_shape,
        .doc = doc,
        .tf_differences = tf_differences,
    });
}

static void unary(const char *name, const char *type_attr, const char *doc, const char *tf_differences)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {type_attr},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = doc,
        .tf_differences = tf_differences,
    });
}

#define BCAST_DOC " x and y broadcast against each other as in NumPy (an error names both shapes)."
#define HALF_DOC " float16 and bfloat16 are computed in float32 and rounded back."

#define NO_COMPLEX "complex64 and complex128 are not supported."
#define DIV_MIN_DOC                                                                         \
    "The most negative integer divided by -1 wraps to itself (TensorFlow's CPU kernel leaves it " \
    "undefined)."

static void register_binary_ops(void)
{
    binary("Add", T_ARITH, TIDE_OP_COMMUTATIVE,
           "Returns x + y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC, "string (concatenation) is not supported.");
    binary("AddV2", T_ARITH, TIDE_OP_COMMUTATIVE,
           "Returns x + y element-wise, as Add (TensorFlow 1.15's `+` emits AddV2)." BCAST_DOC
           " Integer overflow wraps around (two's complement)." HALF_DOC, NULL);
    binary("Sub", T_ARITH, 0,
           "Returns x - y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC, NULL);
    binary("Mul", T_ARITH, TIDE_OP_COMMUTATIVE,
           "Returns x * y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC, NULL);
    binary("Div", T_ARITH, 0,
           "Returns x / y element-wise." BCAST_DOC " Integer division truncates toward zero (as in C "
           "and TensorFlow's Div; Python's // is FloorDiv); an integer division by zero is an "
           "INVALID_ARGUMENT error, and the most negative value divided by -1 wraps to itself. "
           "Floating-point division by zero gives inf or nan (IEEE)." HALF_DOC,
           DIV_MIN_DOC);
    binary("RealDiv", "T: {float16, bfloat16, float32, float64, complex64, complex128}", 0,
           "Returns x / y element-wise for floating-point and complex x and y (what TensorFlow's "
           "truediv emits for them)." BCAST_DOC " Division by zero gives inf or nan (IEEE)." HALF_DOC,
           "integer dtypes are refused at graph time (TensorFlow's op definition admits them, but it "
           "has no CPU kernel for them).");
    binary("FloorDiv", T_REAL, 0,
           "Returns floor(x / y) element-wise, rounding toward negative infinity as Python's //."
           BCAST_DOC " An integer division by zero is an INVALID_ARGUMENT error, and the most "
           "negative value divided by -1 wraps to itself. For floats it is floor(x / y), so a "
           "division by zero gives inf or nan." HALF_DOC, NO_COMPLEX " " DIV_MIN_DOC);
    binary("TruncateDiv", T_REAL, 0,
           "Returns x / y element-wise rounded toward zero, as C's integer division: TruncateDiv(-7, "
           "2) is -3 where FloorDiv gives -4." BCAST_DOC " An integer division by zero is an "
           "INVALID_ARGUMENT error, and the most negative value divided by -1 wraps to itself. For "
           "floats it is trunc(x / y), so a division by zero gives inf or nan." HALF_DOC,
           "TensorFlow has CPU kernels for integers only; tide also computes floats (as trunc(x / y)). "
           NO_COMPLEX " " DIV_MIN_DOC);
    binary("Mod", T_REAL, 0,
           "Returns the truncated remainder of x / y element-wise, as C's % and fmod: the result takes "
           "the sign of x, so that TruncateDiv(x, y) * y + Mod(x, y) == x; Mod(-7, 2) is -1. (Python's "
           "% and tf.mod are FloorMod; Lua's % on tide nodes is FloorMod too.)" BCAST_DOC
           " An integer modulo by zero is an INVALID_ARGUMENT error; the most negative value modulo "
           "-1 is 0. For floats it is fmod, and y == 0 gives nan." HALF_DOC, NULL);
    binary("TruncateMod", T_REAL, 0,
           "Returns the truncated remainder of x / y element-wise, as Mod (C's % and fmod: the sign of "
           "x)." BCAST_DOC " An integer modulo by zero is an INVALID_ARGUMENT error; the most "
           "negative value modulo -1 is 0. For floats y == 0 gives nan." HALF_DOC, NULL);
    binary("FloorMod", T_REAL, 0,
           "Returns the floored remainder of x / y element-wise: the result takes the sign of y, as "
           "Python's %, so that FloorDiv(x, y) * y + FloorMod(x, y) == x; FloorMod(-7, 2) is 1."
           BCAST_DOC " An integer modulo by zero is an INVALID_ARGUMENT error; the most negative "
           "value modulo -1 is 0. For floats it is fmod moved to the sign of y, and y == 0 gives "
           "nan." HALF_DOC, NULL);
    binary("Pow", T_REAL, 0,
           "Returns x raised to the power y element-wise." BCAST_DOC " Integer powers are exact "
           "modulo 2^bits (overflow wraps around), x^0 == 1 (also 0^0); an integer x to a negative "
           "integer power is an INVALID_ARGUMENT error. Floats follow C's pow (a negative x to a "
           "non-integer power gives nan)." HALF_DOC, NO_COMPLEX);
    binary("Maximum", T_REAL, TIDE_OP_COMMUTATIVE,
           "Returns the larger of x and y element-wise." BCAST_DOC " A nan in either operand gives "
           "nan (as NumPy's maximum)." HALF_DOC,
           "a nan in either operand gives nan; TensorFlow's CPU kernel returns one of the operands, "
           "which one depending on their order and on vectorisation.");
    binary("Minimum", T_REAL, TIDE_OP_COMMUTATIVE,
           "Returns the smaller of x and y element-wise." BCAST_DOC " A nan in either operand gives "
           "nan (as NumPy's minimum)." HALF_DOC,
           "a nan in either operand gives nan; TensorFlow's CPU kernel returns one of the operands, "
           "which one depending on their order and on vectorisation.");
    binary("SquaredDifference", T_REAL, TIDE_OP_COMMUTATIVE,
           "Returns (x - y) * (x - y) element-wise." BCAST_DOC " Integer overflow wraps around "
           "(two's complement)." HALF_DOC, NO_COMPLEX);
    binary("DivNoNan", T_FLOAT, 0,
           "Returns x / y element-wise, and 0 where y is 0 (whatever x is, inf and nan included): "
           "what tf.math.divide_no_nan emits, and with it the losses of tf.losses and the means of "
           "tf.metrics in TensorFlow 1.15." BCAST_DOC HALF_DOC, NO_COMPLEX);
}
TIDE_REGISTER(register_binary_ops)

#define NO_COMPLEX_UNARY "complex64 and complex128, which TensorFlow's op also takes, are not supported."

static void register_unary_ops(void)
{
    unary("Neg", T_SIGNED_CPLX,
          "Returns -x element-wise. For integers the negation of the most negative value wraps to "
          "itself (two's complement)." HALF_DOC, NULL);
    unary("Abs", T_SIGNED,
          "Returns |x| element-wise. For integers the absolute value of the most negative value wraps "
          "to itself (two's complement)." HALF_DOC, NULL);
    unary("Sign", T_SIGNED,
          "Returns -1, 0 or 1 element-wise by the sign of x. For floats, -0.0 and 0.0 are returned "
          "unchanged and nan gives nan." HALF_DOC, NO_COMPLEX_UNARY);
    unary("Square", "T: {int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, float64, "
                    "complex64, complex128}",
          "Returns x * x element-wise. Integer overflow wraps around (two's complement)." HALF_DOC, NULL);
    unary("Reciprocal", "T: {float16, bfloat16, float32, float64, complex64, complex128}",
          "Returns 1 / x element-wise. 0 gives inf (with the sign of the zero)." HALF_DOC,
          "integer dtypes are refused at graph time (TensorFlow's op definition admits int32 and "
          "int64, but it has no CPU kernel for them).");
    unary("Inv", "T: {float16, bfloat16, float32, float64, complex64, complex128}",
          "Returns 1 / x element-wise: TensorFlow's deprecated name of Reciprocal." HALF_DOC,
          "integer dtypes are refused at graph time (TensorFlow has no CPU kernel for them).");
    unary("Floor", T_FLOAT,
          "Returns the largest integer not greater than x, element-wise; floats only. -0.0, inf and "
          "nan are returned unchanged." HALF_DOC, NULL);
    unary("Ceil", T_FLOAT,
          "Returns the smallest integer not less than x, element-wise; floats only. -0.5 gives -0.0; "
          "inf and nan are returned unchanged." HALF_DOC, NULL);
    unary("Rint", T_FLOAT,
          "Returns x rounded to the nearest integer element-wise, halves to the even one (rint(2.5) "
          "is 2, rint(-1.5) is -2); floats only." HALF_DOC, NULL);
    unary("Round", "T: {int8, int16, int32, int64, float16, bfloat16, float32, float64}",
          "Returns x rounded to the nearest integer element-wise, halves to the even one (banker's "
          "rounding: Round(0.5) is 0, Round(1.5) is 2, Round(-2.5) is -2). Integers are returned "
          "unchanged." HALF_DOC, NO_COMPLEX_UNARY);
    unary("Sqrt", T_FLOAT,
          "Returns the square root of x element-wise; floats only. A negative x gives nan." HALF_DOC,
          NO_COMPLEX_UNARY);
    unary("Rsqrt", T_FLOAT,
          "Returns 1 / sqrt(x) element-wise; floats only. 0 gives inf and a negative x gives nan."
          HALF_DOC, NO_COMPLEX_UNARY);
    unary("Exp", T_FLOAT,
          "Returns e^x element-wise; floats only. Overflow gives inf." HALF_DOC, NO_COMPLEX_UNARY);
    unary("Log", T_FLOAT,
          "Returns the natural logarithm of x element-wise; floats only. 0 gives -inf and a negative "
          "x gives nan." HALF_DOC, NO_COMPLEX_UNARY);
    unary("Log1p", T_FLOAT,
          "Returns log(1 + x) element-wise, accurate for small x; floats only. -1 gives -inf and "
          "x < -1 gives nan." HALF_DOC, NO_COMPLEX_UNARY);
    unary("Sin", T_FLOAT, "Returns the sine of x (radians) element-wise; floats only." HALF_DOC,
          NO_COMPLEX_UNARY);
    unary("Cos", T_FLOAT, "Returns the cosine of x (radians) element-wise; floats only." HALF_DOC,
          NO_COMPLEX_UNARY);
    unary("Tanh", T_FLOAT, "Returns the hyperbolic tangent of x element-wise; floats only." HALF_DOC,
          NO_COMPLEX_UNARY);
    unary("Sigmoid", T_FLOAT,
          "Returns 1 / (1 + e^-x) element-wise; floats only. Computed without overflow for any x."
          HALF_DOC, NO_COMPLEX_UNARY);
    static const struct {
        const char *name, *doc;
    } libm[] = {
        {"Expm1", "Returns e^x - 1 element-wise, accurate for small x; floats only."},
        {"Erf", "Returns the error function of x element-wise; floats only."},
        {"Erfc", "Returns the complementary error function 1 - erf(x) element-wise, accurate where "
                 "erf(x) is near 1; floats only."},
        {"Tan", "Returns the tangent of x (radians) element-wise; floats only."},
        {"Asin", "Returns the arcsine of x element-wise, in [-pi/2, pi/2]; floats only. |x| > 1 "
                 "gives nan."},
        {"Acos", "Returns the arccosine of x element-wise, in [0, pi]; floats only. |x| > 1 gives "
                 "nan."},
        {"Atan", "Returns the arctangent of x element-wise, in (-pi/2, pi/2); floats only."},
        {"Sinh", "Returns the hyperbolic sine of x element-wise; floats only. Overflow gives inf."},
        {"Cosh", "Returns the hyperbolic cosine of x element-wise; floats only. Overflow gives inf."},
        {"Asinh", "Returns the inverse hyperbolic sine of x element-wise; floats only."},
        {"Acosh", "Returns the inverse hyperbolic cosine of x element-wise, >= 0; floats only. x < 1 "
                  "gives nan."},
        {"Atanh", "Returns the inverse hyperbolic tangent of x element-wise; floats only. +-1 give "
                  "+-inf and |x| > 1 nan."},
    };
    char doc[512];
    for (size_t i = 0; i < sizeof libm / sizeof libm[0]; i++) {
        snprintf(doc, sizeof doc, "%s Computed by the C library's function of the same name (in "
                 "float for float32)." HALF_DOC, libm[i].doc);
        unary(libm[i].name, T_FLOAT, doc, NO_COMPLEX_UNARY);
    }
    tide_op_register(&(tide_op_spec){
        .name = "ClipByValue",
        .inputs = {"t: T", "clip_value_min: T", "clip_value_max: T"},
        .outputs = {"output: T"},
        .attrs = {T_REAL},
        .shape_fn = clip_shape,
        .doc = "Returns max(min(t, clip_value_max), clip_value_min) element-wise, TensorFlow's order: "
               "where min > max the result is min. Each bound is a scalar or has t's shape "
               "(INVALID_ARGUMENT naming both shapes otherwise); a nan in t stays nan." HALF_DOC,
        .tf_differences = NO_COMPLEX,
    });
    tide_op_register(&(tide_op_spec){
        .name = "AddN",
        .inputs = {"inputs: N * T"},
        .outputs = {"sum: T"},
        .attrs = {"N: int >= 1", T_ARITH},
        .flags = TIDE_OP_COMMUTATIVE,
        .shape_fn = addn_shape,
        .doc = "Returns the element-wise sum of N >= 1 tensors of the same shape (no broadcasting: "
               "different shapes are an INVALID_ARGUMENT error). Integer overflow wraps around; the "
               "sum is accumulated in the input order, in the input dtype.",
    });
}
TIDE_REGISTER(register_unary_ops)

/* The gradient ops TensorFlow's own gradients of Sqrt, Rsqrt and Reciprocal (Inv) emit, so that a
 * TensorFlow training graph imports and tide's gradients are written as TensorFlow writes them. */
static void gradient_op(const char *name, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"y: T", "dy: T"},
        .outputs = {"z: T"},
        .attrs = {T_FLOAT},
        .shape_fn = y_dy_shape,
        .doc = doc,
        .tf_differences = NO_COMPLEX_UNARY,
    });
}

#define Y_DY_DOC " y and dy must have the same shape (INVALID_ARGUMENT naming both otherwise)." HALF_DOC

static void register_gradient_ops(void)
{
    gradient_op("SqrtGrad", "The gradient of Sqrt from its output y: 0.5 * dy / y, element-wise." Y_DY_DOC);
    gradient_op("RsqrtGrad", "The gradient of Rsqrt from its output y: -0.5 * (dy * y) * (y * y), "
                "element-wise." Y_DY_DOC);
    gradient_op("ReciprocalGrad", "The gradient of Reciprocal from its output y: -y * y * dy, "
                "element-wise." Y_DY_DOC);
    gradient_op("InvGrad", "The gradient of Inv from its output y: -y * y * dy, element-wise, as "
                "ReciprocalGrad (TensorFlow's deprecated name)." Y_DY_DOC);
}
TIDE_REGISTER(register_gradient_ops)
