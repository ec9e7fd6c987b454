/* math_ops.c — definitions of the element-wise math ops: the binary arithmetic ops with NumPy
 * broadcasting (Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Maximum, Minimum), the unary ops (Neg, Abs,
 * Sign, Square and the float-only transcendental functions) and AddN. Semantics follow TensorFlow
 * 1.x; the docs state the integer behaviour (wrapping, rounding, division by zero) the CPU kernels
 * (kernels/cpu/math.c) implement. */
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

static void binary(const char *name, const char *type_attr, unsigned flags, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T", "y: T"},
        .outputs = {"z: T"},
        .attrs = {type_attr},
        .flags = flags,
        .shape_fn = broadcast_shape,
        .doc = doc,
    });
}

static void unary(const char *name, const char *type_attr, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {type_attr},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = doc,
    });
}

#define BCAST_DOC " x and y broadcast against each other as in NumPy (an error names both shapes)."
#define HALF_DOC " float16 and bfloat16 are computed in float32 and rounded back."

static void register_binary_ops(void)
{
    binary("Add", T_ARITH, TIDE_OP_COMMUTATIVE,
           "Returns x + y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC);
    binary("Sub", T_ARITH, 0,
           "Returns x - y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC);
    binary("Mul", T_ARITH, TIDE_OP_COMMUTATIVE,
           "Returns x * y element-wise." BCAST_DOC " Integer overflow wraps around (two's complement)."
           HALF_DOC);
    binary("Div", T_ARITH, 0,
           "Returns x / y element-wise." BCAST_DOC " Integer division truncates toward zero (as in C); "
           "an integer division by zero is an INVALID_ARGUMENT error, and the most negative value "
           "divided by -1 wraps to itself. Floating-point division by zero gives inf or nan (IEEE)."
           HALF_DOC);
    binary("FloorDiv", T_REAL, 0,
           "Returns floor(x / y) element-wise, rounding toward negative infinity as Python's //."
           BCAST_DOC " An integer division by zero is an INVALID_ARGUMENT error, and the most "
           "negative value divided by -1 wraps to itself. For floats it is floor(x / y), so a "
           "division by zero gives inf or nan." HALF_DOC);
    binary("Mod", T_REAL, 0,
           "Returns the floored remainder of x / y element-wise: the result takes the sign of y, as "
           "TensorFlow's FloorMod and Python's %, so that FloorDiv(x, y) * y + Mod(x, y) == x."
           BCAST_DOC " An integer modulo by zero is an INVALID_ARGUMENT error; the most negative "
           "value modulo -1 is 0. For floats it is fmod adjusted to the sign of y, and y == 0 gives "
           "nan." HALF_DOC);
    binary("Pow", T_REAL, 0,
           "Returns x raised to the power y element-wise." BCAST_DOC " Integer powers are exact "
           "modulo 2^bits (overflow wraps around), x^0 == 1 (also 0^0); an integer x to a negative "
           "integer power is an INVALID_ARGUMENT error. Floats follow C's pow (a negative x to a "
           "non-integer power gives nan)." HALF_DOC);
    binary("Maximum", T_REAL, TIDE_OP_COMMUTATIVE,
           "Returns the larger of x and y element-wise." BCAST_DOC " A nan in either operand gives "
           "nan (as NumPy's maximum)." HALF_DOC);
    binary("Minimum", T_REAL, TIDE_OP_COMMUTATIVE,
           "Returns the smaller of x and y element-wise." BCAST_DOC " A nan in either operand gives "
           "nan (as NumPy's minimum)." HALF_DOC);
}
TIDE_REGISTER(register_binary_ops)

static void register_unary_ops(void)
{
    unary("Neg", T_SIGNED_CPLX,
          "Returns -x element-wise. For integers the negation of the most negative value wraps to "
          "itself (two's complement)." HALF_DOC);
    unary("Abs", T_SIGNED,
          "Returns |x| element-wise. For integers the absolute value of the most negative value wraps "
          "to itself (two's complement)." HALF_DOC);
    unary("Sign", T_SIGNED,
          "Returns -1, 0 or 1 element-wise by the sign of x. For floats, -0.0 and 0.0 are returned "
          "unchanged and nan gives nan." HALF_DOC);
    unary("Square", "T: {int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, float64, "
                    "complex64, complex128}",
          "Returns x * x element-wise. Integer overflow wraps around (two's complement)." HALF_DOC);
    unary("Sqrt", T_FLOAT,
          "Returns the square root of x element-wise; floats only. A negative x gives nan." HALF_DOC);
    unary("Rsqrt", T_FLOAT,
          "Returns 1 / sqrt(x) element-wise; floats only. 0 gives inf and a negative x gives nan."
          HALF_DOC);
    unary("Exp", T_FLOAT,
          "Returns e^x element-wise; floats only. Overflow gives inf." HALF_DOC);
    unary("Log", T_FLOAT,
          "Returns the natural logarithm of x element-wise; floats only. 0 gives -inf and a negative "
          "x gives nan." HALF_DOC);
    unary("Log1p", T_FLOAT,
          "Returns log(1 + x) element-wise, accurate for small x; floats only. -1 gives -inf and "
          "x < -1 gives nan." HALF_DOC);
    unary("Sin", T_FLOAT, "Returns the sine of x (radians) element-wise; floats only." HALF_DOC);
    unary("Cos", T_FLOAT, "Returns the cosine of x (radians) element-wise; floats only." HALF_DOC);
    unary("Tanh", T_FLOAT, "Returns the hyperbolic tangent of x element-wise; floats only." HALF_DOC);
    unary("Sigmoid", T_FLOAT,
          "Returns 1 / (1 + e^-x) element-wise; floats only. Computed without overflow for any x."
          HALF_DOC);
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
