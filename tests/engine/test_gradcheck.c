/* test_gradcheck.c — every gradient function against finite differences, generated over the
 * registry, plus the ops that exist for gradients (engine/ops/grad_ops.c) against reference loops.
 *
 * The checker: for every op returned by tide_registry_gradient_ops there must be at least one case
 * in the tables below (test_every_gradient_has_a_case fails naming the op otherwise: a new op is
 * checked the moment its gradient is registered). A case gives the fed inputs (float64
 * placeholders x0, x1, ...; their shapes, how their values are drawn, a placeholder shape with
 * unknown dimensions where the dynamic code paths should run) and the graph text that defines the
 * node "y" of the op under test with its attrs and constant inputs. The check builds
 *     loss = sum over the chosen float outputs k of Sum(y:k * W_k)
 * with fixed random weights W_k, asks tide_gradients for d loss / d x_i (the float64 inputs) and
 * evaluates it in a session; the numeric gradient is the central difference
 * (loss(x + h e_j) - loss(x - h e_j)) / 2h of the same loss through the same session, with
 * h = 1e-6 max(1, |x_j|). They must agree within |sym - num| <= 1e-6 + 1e-5 |num| (cases with a
 * float32 step state their own). A failure names the op, the case, the input, the element and
 * both values.
 *
 * Values are drawn away from the points where an op is not differentiable (kinks, ties, poles),
 * which finite differences cannot check; what happens AT such points is tested by hand below:
 * ties of Max/Min (shared equally) and of Maximum/Minimum (to x), Pow's exponent gradient where
 * x <= 0 (zero), Prod with zeros, Cast to integers (no gradient). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"
#include "tide_op.h"

/* ---------------------------------------------------------------- the case tables' vocabulary */

#define GC_MAX_INPUTS 5
#define GC_MAX_OUTPUTS 16
#define GC_H 1e-6    /* step, relative to max(1, |x|) */
#define GC_ATOL 1e-6 /* |sym - num| <= GC_ATOL + GC_RTOL |num| */
#define GC_RTOL 1e-5

typedef enum gc_gen {
    GEN_UNIFORM,  /* uniform in [lo, hi) (default [-1, 1)) */
    GEN_AWAY,     /* |v| uniform in [lo, hi) (default [0.3, 2)), random sign: away from 0 */
    GEN_DISTINCT, /* values spread evenly over [lo, hi) (default [-2, 2)), shuffled; distinct across
                   * every DISTINCT input of the case, so no two are within the step of each other */
    GEN_COND,     /* batches of well-conditioned square matrices: 2 I + uniform(-0.3, 0.3) */
    GEN_SIMPLEX,  /* rows (last dimension) of positive values summing to 1: distributions */
    GEN_VALUES,   /* the given values */
} gc_gen;

typedef struct gc_input {
    const char *dims;     /* the fed tensor's dims: "[2, 3]", "[]" */
    const char *declared; /* the placeholder's shape attr when it is not dims: "[?, 3]", "*" */
    gc_gen gen;
    double lo, hi;
    const double *values; /* GEN_VALUES */
    tide_dtype dtype;     /* 0: float64, checked; TIDE_INT32/INT64: an index fed at run time */
} gc_input;

typedef struct gc_case {
    const char *op;                 /* the op of node y */
    const char *label;
    gc_input in[GC_MAX_INPUTS];     /* placeholders x0, x1, ... */
    const char *body;               /* graph text defining y (and its constant inputs) */
    unsigned outputs;               /* bit k: y:k enters the loss; 0: every float output */
    double h, tol;                  /* 0: GC_H, and GC_ATOL/GC_RTOL */
} gc_case;

#define U(d) {.dims = d}
#define UQ(d, decl) {.dims = d, .declared = decl}
#define RANGE(d, l, h) {.dims = d, .lo = l, .hi = h}
#define RANGEQ(d, decl, l, h) {.dims = d, .declared = decl, .lo = l, .hi = h}
#define POS(d) RANGE(d, 0.5, 2)
#define POSQ(d, decl) RANGEQ(d, decl, 0.5, 2)
#define AWAY(d) {.dims = d, .gen = GEN_AWAY}
#define DIST(d) {.dims = d, .gen = GEN_DISTINCT}
#define DISTQ(d, decl) {.dims = d, .declared = decl, .gen = GEN_DISTINCT}
#define DISTR(d, l, h) {.dims = d, .gen = GEN_DISTINCT, .lo = l, .hi = h}
#define COND(d) {.dims = d, .gen = GEN_COND}
#define CONDQ(d, decl) {.dims = d, .declared = decl, .gen = GEN_COND}
#define SIMPLEX(d) {.dims = d, .gen = GEN_SIMPLEX}
#define SIMPLEXQ(d, decl) {.dims = d, .declared = decl, .gen = GEN_SIMPLEX}
#define VALS(d, ...) {.dims = d, .gen = GEN_VALUES, .values = (const double[]){__VA_ARGS__}}
#define IDX(d, ...) \
    {.dims = d, .gen = GEN_VALUES, .values = (const double[]){__VA_ARGS__}, .dtype = TIDE_INT32}
#define IDX64(d, ...) \
    {.dims = d, .gen = GEN_VALUES, .values = (const double[]){__VA_ARGS__}, .dtype = TIDE_INT64}

/* Constant inputs, in the graph text format. */
#define I32(name, dims, vals) name " = Const(value=tensor(int32, " dims ", " vals "), dtype=int32)\n"
#define I64(name, dims, vals) name " = Const(value=tensor(int64, " dims ", " vals "), dtype=int64)\n"
#define F64(name, dims, vals) name " = Const(value=tensor(float64, " dims ", " vals "), dtype=float64)\n"
#define BOOLS(name, dims, vals) name " = Const(value=tensor(bool, " dims ", " vals "), dtype=bool)\n"

/* The tables list op, label, inputs and body positionally and the rarer fields by name. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* ---------------------------------------------------------------- element-wise math */

static const gc_case math_cases[] = {
    {"Add", "same shape", {U("[2, 3]"), U("[2, 3]")}, "y = Add(x0, x1)"},
    {"Add", "row broadcast", {U("[2, 3]"), U("[3]")}, "y = Add(x0, x1)"},
    {"Add", "both broadcast", {U("[2, 1]"), U("[1, 3]")}, "y = Add(x0, x1)"},
    {"Add", "scalar", {U("[]"), U("[2, 2]")}, "y = Add(x0, x1)"},
    {"Add", "unknown batch", {UQ("[4, 3]", "[?, 3]"), U("[3]")}, "y = Add(x0, x1)"},
    {"Add", "unknown rank and dims", {UQ("[2, 3]", "*"), UQ("[2, 1]", "[?, ?]")}, "y = Add(x0, x1)"},
    {"Add", "one input twice", {U("[3]")}, "y = Add(x0, x0)"},
    {"Sub", "same shape", {U("[2, 3]"), U("[2, 3]")}, "y = Sub(x0, x1)"},
    {"Sub", "both broadcast", {U("[3, 1]"), U("[1, 2]")}, "y = Sub(x0, x1)"},
    {"Sub", "unknown batch", {U("[2]"), UQ("[3, 2]", "[?, 2]")}, "y = Sub(x0, x1)"},
    {"Mul", "same shape", {U("[2, 3]"), U("[2, 3]")}, "y = Mul(x0, x1)"},
    {"Mul", "broadcast", {U("[2, 1, 3]"), U("[4, 1]")}, "y = Mul(x0, x1)"},
    {"Mul", "unknown batch", {UQ("[3, 2]", "[?, 2]"), UQ("[1, 2]", "[?, 2]")}, "y = Mul(x0, x1)"},
    {"Mul", "square by itself", {U("[4]")}, "y = Mul(x0, x0)"},
    {"Div", "same shape", {U("[2, 3]"), AWAY("[2, 3]")}, "y = Div(x0, x1)"},
    {"Div", "broadcast", {U("[3]"), AWAY("[2, 1]")}, "y = Div(x0, x1)"},
    {"Div", "unknown batch", {UQ("[3, 2]", "[?, 2]"), AWAY("[]")}, "y = Div(x0, x1)"},
    {"Pow", "positive base", {POS("[2, 3]"), RANGE("[2, 3]", -2, 2)}, "y = Pow(x0, x1)"},
    {"Pow", "broadcast", {POS("[2, 1]"), RANGE("[3]", -2, 2)}, "y = Pow(x0, x1)"},
    {"Pow", "unknown batch", {POSQ("[3, 2]", "[?, 2]"), RANGE("[2]", -1, 3)}, "y = Pow(x0, x1)"},
    {"Pow", "negative and zero base, integer exponents", {VALS("[2, 3]", -1.5, 0, 2, -0.7, 1.2, 0)},
     F64("e", "[3]", "[2, 3, 2]") "y = Pow(x0, e)"},
    {"Maximum", "same shape", {DIST("[2, 3]"), DIST("[2, 3]")}, "y = Maximum(x0, x1)"},
    {"Maximum", "broadcast", {DIST("[2, 3]"), DIST("[3]")}, "y = Maximum(x0, x1)"},
    {"Maximum", "unknown batch", {DISTQ("[3, 2]", "[?, 2]"), DIST("[]")}, "y = Maximum(x0, x1)"},
    {"Minimum", "same shape", {DIST("[2, 3]"), DIST("[2, 3]")}, "y = Minimum(x0, x1)"},
    {"Minimum", "broadcast", {DIST("[2, 1]"), DIST("[1, 3]")}, "y = Minimum(x0, x1)"},
    {"Minimum", "unknown batch", {DIST("[2]"), DISTQ("[3, 2]", "[?, 2]")}, "y = Minimum(x0, x1)"},
    {"AddN", "three inputs", {U("[2, 3]"), U("[2, 3]"), U("[2, 3]")}, "y = AddN([x0, x1, x2])"},
    {"AddN", "one input twice", {UQ("[2, 2]", "[?, 2]"), U("[2, 2]")}, "y = AddN([x0, x1, x0])"},
    {"Neg", "matrix", {U("[2, 3]")}, "y = Neg(x0)"},
    {"Abs", "away from 0", {AWAY("[2, 3]")}, "y = Abs(x0)"},
    {"Abs", "unknown batch", {{.dims = "[3, 2]", .declared = "[?, 2]", .gen = GEN_AWAY}}, "y = Abs(x0)"},
    {"Sign", "away from 0", {AWAY("[2, 3]")}, "y = Sign(x0)"},
    {"Square", "matrix", {U("[2, 3]")}, "y = Square(x0)"},
    {"Square", "unknown rank", {UQ("[3]", "*")}, "y = Square(x0)"},
    {"Sqrt", "positive", {POS("[2, 3]")}, "y = Sqrt(x0)"},
    {"Rsqrt", "positive", {POS("[2, 3]")}, "y = Rsqrt(x0)"},
    {"Rsqrt", "unknown batch", {POSQ("[2, 2]", "[?, 2]")}, "y = Rsqrt(x0)"},
    {"Exp", "matrix", {U("[2, 3]")}, "y = Exp(x0)"},
    {"Log", "positive", {POS("[2, 3]")}, "y = Log(x0)"},
    {"Log", "unknown batch", {POSQ("[3, 1]", "[?, 1]")}, "y = Log(x0)"},
    {"Log1p", "above -1", {RANGE("[2, 3]", -0.5, 2)}, "y = Log1p(x0)"},
    {"Sin", "matrix", {RANGE("[2, 3]", -3, 3)}, "y = Sin(x0)"},
    {"Cos", "matrix", {RANGE("[2, 3]", -3, 3)}, "y = Cos(x0)"},
    {"Identity", "matrix", {U("[2, 3]")}, "y = Identity(x0)"},
    {"PlaceholderWithDefault", "its default", {U("[2, 3]")},
     "y = PlaceholderWithDefault(x0, dtype=float64, shape=[?, 3])"},
    /* float64 -> float32 -> float64: both Casts' gradients; the loss is linear, so a large step
     * costs no accuracy while it keeps float32's rounding small relative to it */
    {"Cast", "float64 to float32 and back", {U("[2, 3]")},
     "f = Cast(x0, DstT=float32)\ny = Cast(f, DstT=float64)", .h = 1e-2, .tol = 1e-5},
    {"Select", "same shapes", {U("[2, 3]"), U("[2, 3]")},
     BOOLS("c", "[2, 3]", "[true, false, true, false, false, true]") "y = Select(c, x0, x1)"},
    {"Select", "a vector condition picks rows", {U("[3, 2]"), UQ("[3, 2]", "[?, 2]")},
     BOOLS("c", "[3]", "[true, false, true]") "y = Select(c, x0, x1)"},
    {"Select", "scalar condition", {U("[2, 2]"), U("[2, 2]")},
     BOOLS("c", "[]", "[false]") "y = Select(c, x0, x1)"},
    {"SelectV2", "same shapes", {U("[2, 3]"), U("[2, 3]")},
     BOOLS("c", "[2, 3]", "[true, false, true, false, false, true]") "y = SelectV2(c, x0, x1)"},
    {"SelectV2", "broadcast operands", {U("[2, 3]"), U("[3]")},
     BOOLS("c", "[2, 1]", "[true, false]") "y = SelectV2(c, x0, x1)"},
    {"SelectV2", "broadcast condition, unknown batch", {UQ("[2, 3]", "[?, 3]"), U("[]")},
     BOOLS("c", "[3]", "[false, true, true]") "y = SelectV2(c, x0, x1)"},
    {"AddV2", "broadcast", {U("[2, 3]"), U("[3]")}, "y = AddV2(x0, x1)"},
    {"RealDiv", "broadcast", {U("[2, 3]"), AWAY("[3]")}, "y = RealDiv(x0, x1)"},
    {"RealDiv", "unknown batch", {UQ("[3, 2]", "[?, 2]"), AWAY("[]")}, "y = RealDiv(x0, x1)"},
    /* remainders: values away from the jumps at integer quotients (x0 / x1 = -3.4, 1.7, -0.6, 2.25...) */
    {"FloorMod", "broadcast", {VALS("[2, 3]", -6.8, 3.4, -1.2, 4.5, -0.7, 7.3), VALS("[3]", 2, 2, -2)},
     "y = FloorMod(x0, x1)"},
    {"Mod", "broadcast", {VALS("[2, 3]", -6.8, 3.4, -1.2, 4.5, -0.7, 7.3), VALS("[3]", 2, 2, -2)},
     "y = Mod(x0, x1)"},
    {"TruncateMod", "scalar divisor", {VALS("[4]", -6.8, 3.4, -1.2, 4.5), VALS("[]", -1.6)},
     "y = TruncateMod(x0, x1)"},
    {"SquaredDifference", "same shape", {U("[2, 3]"), U("[2, 3]")}, "y = SquaredDifference(x0, x1)"},
    {"SquaredDifference", "both broadcast", {U("[2, 1]"), UQ("[1, 3]", "[?, 3]")},
     "y = SquaredDifference(x0, x1)"},
    {"Reciprocal", "away from 0", {AWAY("[2, 3]")}, "y = Reciprocal(x0)"},
    {"Inv", "away from 0", {AWAY("[3]")}, "y = Inv(x0)"},
    /* tf.math's functions, inside their domains and away from their poles */
    {"Expm1", "matrix", {RANGE("[2, 3]", -2, 2)}, "y = Expm1(x0)"},
    {"Erf", "matrix", {RANGE("[2, 3]", -2, 2)}, "y = Erf(x0)"},
    {"Erfc", "unknown batch", {RANGEQ("[3, 2]", "[?, 2]", -2, 2)}, "y = Erfc(x0)"},
    {"Tan", "away from the poles", {RANGE("[2, 3]", -1.2, 1.2)}, "y = Tan(x0)"},
    {"Asin", "inside (-1, 1)", {RANGE("[2, 3]", -0.9, 0.9)}, "y = Asin(x0)"},
    {"Acos", "inside (-1, 1)", {RANGE("[2, 3]", -0.9, 0.9)}, "y = Acos(x0)"},
    {"Atan", "matrix", {RANGE("[2, 3]", -3, 3)}, "y = Atan(x0)"},
    {"Sinh", "matrix", {RANGE("[2, 3]", -2, 2)}, "y = Sinh(x0)"},
    {"Cosh", "matrix", {RANGE("[2, 3]", -2, 2)}, "y = Cosh(x0)"},
    {"Asinh", "matrix", {RANGE("[2, 3]", -3, 3)}, "y = Asinh(x0)"},
    {"Acosh", "above 1", {RANGE("[2, 3]", 1.2, 4)}, "y = Acosh(x0)"},
    {"Atanh", "inside (-1, 1)", {RANGE("[2, 3]", -0.9, 0.9)}, "y = Atanh(x0)"},
    /* the gradient ops of Sqrt, Rsqrt, Reciprocal and Inv, from their output y (away from 0) */
    {"SqrtGrad", "y positive", {POS("[2, 3]"), U("[2, 3]")}, "y = SqrtGrad(x0, x1)"},
    {"SqrtGrad", "unknown batch", {POSQ("[3, 2]", "[?, 2]"), U("[3, 2]")}, "y = SqrtGrad(x0, x1)"},
    {"RsqrtGrad", "y positive", {POS("[2, 3]"), U("[2, 3]")}, "y = RsqrtGrad(x0, x1)"},
    {"RsqrtGrad", "unknown batch", {POS("[3, 2]"), UQ("[3, 2]", "[?, 2]")}, "y = RsqrtGrad(x0, x1)"},
    {"ReciprocalGrad", "both signs", {AWAY("[2, 3]"), U("[2, 3]")}, "y = ReciprocalGrad(x0, x1)"},
    {"InvGrad", "both signs", {AWAY("[3]"), U("[3]")}, "y = InvGrad(x0, x1)"},
    /* second order through the forward ops: the gradient of (the gradient of Sqrt at x) */
    {"SqrtGrad", "second derivative of Sqrt", {POS("[4]")},
     "s = Sqrt(x0)\n" F64("g", "[4]", "[0.5, -1, 2, 0.25]") "y = SqrtGrad(s, g)"},
    {"DivNoNan", "broadcast", {U("[2, 3]"), AWAY("[3]")}, "y = DivNoNan(x0, x1)"},
    {"DivNoNan", "unknown batch", {UQ("[3, 2]", "[?, 2]"), AWAY("[]")}, "y = DivNoNan(x0, x1)"},
    /* where y is 0 the result and both gradients are 0: x gets nothing from those elements */
    {"DivNoNan", "zeros in y", {U("[2, 2]")},
     F64("d", "[2, 2]", "[0, 2, -0.5, 0]") "y = DivNoNan(x0, d)"},
    /* t on both sides of the bounds and inside, away from them; scalar and tensor bounds */
    {"ClipByValue", "scalar bounds", {VALS("[2, 3]", -1.5, -0.2, 0.3, 0.9, 1.7, -0.8), VALS("[]", -0.5),
                                      VALS("[]", 1.0)}, "y = ClipByValue(x0, x1, x2)"},
    {"ClipByValue", "tensor bounds", {VALS("[4]", -1.5, 0.2, 2.5, 0.7), VALS("[4]", -1, -1, 0, 1),
                                      VALS("[4]", 1, 1, 2, 2)}, "y = ClipByValue(x0, x1, x2)"},
};

/* ---------------------------------------------------------------- array and shape ops */

static const gc_case array_cases[] = {
    {"Reshape", "matrix to matrix", {U("[2, 3]")}, I32("s", "[2]", "[3, 2]") "y = Reshape(x0, s)"},
    {"Reshape", "unknown batch to vector", {UQ("[4, 3]", "[?, 3]")},
     I32("s", "[1]", "[-1]") "y = Reshape(x0, s)"},
    {"Reshape", "shape fed at run time", {U("[2, 3]"), IDX("[2]", 3, 2)}, "y = Reshape(x0, x1)"},
    {"ExpandDims", "middle", {U("[2, 3]")}, I32("d", "[]", "[1]") "y = ExpandDims(x0, d)"},
    {"ExpandDims", "last, unknown batch", {UQ("[3, 2]", "[?, 2]")},
     I32("d", "[]", "[-1]") "y = ExpandDims(x0, d)"},
    {"Squeeze", "one dim", {U("[2, 1, 3]")}, "y = Squeeze(x0, squeeze_dims=[1])"},
    {"Squeeze", "every size-1 dim", {U("[1, 3, 1]")}, "y = Squeeze(x0)"},
    {"Squeeze", "unknown batch", {UQ("[3, 1, 2]", "[?, 1, 2]")}, "y = Squeeze(x0, squeeze_dims=[-2])"},
    {"Transpose", "matrix", {U("[2, 3]")}, I32("p", "[2]", "[1, 0]") "y = Transpose(x0, p)"},
    {"Transpose", "rank 3", {U("[2, 3, 4]")}, I32("p", "[3]", "[2, 0, 1]") "y = Transpose(x0, p)"},
    {"Transpose", "perm fed at run time", {U("[2, 3, 2]"), IDX("[3]", 1, 2, 0)}, "y = Transpose(x0, x1)"},
    {"Transpose", "unknown batch, int64 perm", {UQ("[3, 2]", "[?, 2]")},
     I64("p", "[2]", "[1, 0]") "y = Transpose(x0, p)"},
    {"ConcatV2", "axis 0", {U("[2, 3]"), U("[1, 3]")}, I32("a", "[]", "[0]") "y = ConcatV2([x0, x1], a)"},
    {"ConcatV2", "axis 1, three values", {U("[2, 1]"), U("[2, 3]"), U("[2, 2]")},
     I32("a", "[]", "[1]") "y = ConcatV2([x0, x1, x2], a)"},
    {"ConcatV2", "axis -1", {U("[2, 2]"), U("[2, 1]")}, I32("a", "[]", "[-1]") "y = ConcatV2([x0, x1], a)"},
    {"ConcatV2", "unknown batch, known sizes on the axis", {UQ("[3, 2]", "[?, 2]"), UQ("[3, 1]", "[?, 1]")},
     I32("a", "[]", "[1]") "y = ConcatV2([x0, x1], a)"},
    {"ConcatV2", "unknown sizes on the axis", {UQ("[2, 2]", "[?, 2]"), UQ("[1, 2]", "[?, 2]")},
     I32("a", "[]", "[0]") "y = ConcatV2([x0, x1], a)"},
    {"ConcatV2", "axis fed at run time", {U("[2, 2]"), U("[2, 3]"), IDX("[]", 1)}, "y = ConcatV2([x0, x1], x2)"},
    {"ConcatV2", "int64 axis fed at run time", {U("[1, 2]"), U("[2, 2]"), IDX64("[]", 0)},
     "y = ConcatV2([x0, x1], x2)"},
    {"ConcatV2", "one value", {U("[2, 2]")}, I32("a", "[]", "[0]") "y = ConcatV2([x0], a)"},
    {"ConcatV2", "one input twice", {U("[2]"), U("[1]")}, I32("a", "[]", "[0]") "y = ConcatV2([x0, x1, x0], a)"},
    {"Concat", "legacy: axis first", {U("[2, 3]"), U("[2, 1]")},
     I32("a", "[]", "[1]") "y = Concat(a, [x0, x1])"},
    {"Concat", "legacy: axis fed at run time", {IDX("[]", 0), U("[1, 2]"), UQ("[2, 2]", "[?, 2]")},
     "y = Concat(x0, [x1, x2])"},
    {"Split", "three pieces on axis 1", {U("[2, 6]")}, I32("a", "[]", "[1]") "y = Split(a, x0, num_split=3)"},
    {"Split", "loss on one piece only", {U("[4, 3]")}, I32("a", "[]", "[0]") "y = Split(a, x0, num_split=2)",
     .outputs = 0x2},
    {"SplitV", "an inferred size, loss on two pieces", {U("[2, 7]")},
     I64("s", "[3]", "[2, -1, 1]") I32("a", "[]", "[1]") "y = SplitV(x0, s, a, num_split=3)", .outputs = 0x5},
    {"SplitV", "unknown batch", {UQ("[4, 3]", "[?, 3]")},
     I32("s", "[2]", "[1, 3]") I32("a", "[]", "[0]") "y = SplitV(x0, s, a, num_split=2)"},
    {"Split", "unknown batch", {UQ("[3, 4]", "[?, 4]")},
     I32("a", "[]", "[-1]") "y = Split(a, x0, num_split=2)"},
    {"Slice", "block", {U("[3, 4]")},
     I32("b", "[2]", "[1, 0]") I32("s", "[2]", "[1, -1]") "y = Slice(x0, b, s)"},
    {"Slice", "unknown batch", {UQ("[3, 4]", "[?, 4]")}, I32("b", "[2]", "[1, 1]") I32("s", "[2]", "[-1, 2]")
     "y = Slice(x0, b, s)"},
    {"Slice", "begin fed at run time", {U("[3, 3]"), IDX("[2]", 0, 1)},
     I32("s", "[2]", "[2, 2]") "y = Slice(x0, x1, s)"},
    {"Slice", "int64 indices", {U("[2, 3, 2]")}, I64("b", "[3]", "[0, 1, 1]") I64("s", "[3]", "[2, 2, 1]")
     "y = Slice(x0, b, s)"},
    {"StridedSlice", "range and step", {U("[4, 5]")},
     I32("b", "[2]", "[1, 0]") I32("e", "[2]", "[3, 5]") I32("s", "[2]", "[1, 2]")
     "y = StridedSlice(x0, b, e, s)"},
    {"StridedSlice", "negative strides, masks", {U("[4, 5]")},
     I32("b", "[2]", "[0, 4]") I32("e", "[2]", "[0, 0]") I32("s", "[2]", "[-1, -2]")
     "y = StridedSlice(x0, b, e, s, begin_mask=1, end_mask=1)"},
    {"StridedSlice", "shrink and new axis", {U("[4, 5]")},
     I32("b", "[3]", "[2, 0, 1]") I32("e", "[3]", "[3, 0, 4]") I32("s", "[3]", "[1, 1, 1]")
     "y = StridedSlice(x0, b, e, s, new_axis_mask=2, shrink_axis_mask=1)"},
    {"StridedSlice", "ellipsis", {U("[2, 3, 4]")},
     I32("b", "[2]", "[0, 1]") I32("e", "[2]", "[0, 2]") I32("s", "[2]", "[1, 1]")
     "y = StridedSlice(x0, b, e, s, ellipsis_mask=1, shrink_axis_mask=2)"},
    {"StridedSlice", "unknown batch, clamped", {UQ("[4, 5]", "[?, 5]")},
     I32("b", "[2]", "[1, -10]") I32("e", "[2]", "[0, 3]") I32("s", "[2]", "[1, 1]")
     "y = StridedSlice(x0, b, e, s, end_mask=1)"},
    {"StridedSlice", "spec fed at run time", {U("[3, 4]"), IDX64("[2]", 2, 3), IDX64("[2]", 0, 0)},
     I64("s", "[2]", "[-1, -1]") "y = StridedSlice(x0, x1, x2, s)"},
    {"Pack", "axis 0", {U("[2, 3]"), U("[2, 3]"), U("[2, 3]")}, "y = Pack([x0, x1, x2])"},
    {"Pack", "axis 1", {U("[2, 3]"), U("[2, 3]")}, "y = Pack([x0, x1], axis=1)"},
    {"Pack", "axis -1, unknown batch", {UQ("[2, 2]", "[?, 2]"), U("[2, 2]")},
     "y = Pack([x0, x1, x0], axis=-1)"},
    {"Unpack", "axis 0", {U("[3, 2]")}, "y = Unpack(x0, num=3)"},
    {"Unpack", "axis 1, loss on two pieces", {U("[2, 3, 2]")}, "y = Unpack(x0, num=3, axis=1)", .outputs = 0x5},
    {"Unpack", "unknown batch", {UQ("[3, 2]", "[?, 2]")}, "y = Unpack(x0, num=2, axis=-1)"},
    {"Tile", "matrix", {U("[2, 3]")}, I32("m", "[2]", "[2, 1]") "y = Tile(x0, m)"},
    {"Tile", "rank 3", {U("[2, 1, 3]")}, I32("m", "[3]", "[1, 3, 2]") "y = Tile(x0, m)"},
    {"Tile", "unknown batch", {UQ("[2, 3]", "[?, 3]")}, I32("m", "[2]", "[2, 2]") "y = Tile(x0, m)"},
    {"Tile", "multiples fed at run time", {U("[3]"), IDX64("[1]", 3)}, "y = Tile(x0, x1)"},
    {"Pad", "constant paddings", {U("[2, 3]")}, I32("p", "[2, 2]", "[1, 0, 2, 1]") "y = Pad(x0, p)"},
    {"Pad", "unknown batch", {UQ("[2, 3]", "[?, 3]")}, I32("p", "[2, 2]", "[0, 2, 1, 1]") "y = Pad(x0, p)"},
    {"Pad", "paddings fed at run time", {U("[2, 2]"), IDX("[2, 2]", 1, 1, 0, 2)}, "y = Pad(x0, x1)"},
    {"PadV2", "constant value", {U("[2, 3]")}, I64("p", "[2, 2]", "[1, 1, 0, 1]") F64("v", "[]", "[2.5]")
     "y = PadV2(x0, p, v)"},
    {"PadV2", "unknown rank", {UQ("[3]", "*")}, I32("p", "[1, 2]", "[2, 1]") F64("v", "[]", "[-1]")
     "y = PadV2(x0, p, v)"},
    {"Gather", "axis 0 with repeats", {U("[4, 3]")}, I32("i", "[3]", "[2, 0, 2]") "y = Gather(x0, i)"},
    {"Gather", "indices of rank 2", {U("[3, 2]")}, I32("i", "[2, 2]", "[0, 2, 1, 0]") "y = Gather(x0, i)"},
    {"GatherV2", "axis 1", {U("[2, 4, 3]")}, I32("i", "[3]", "[3, 3, 0]") I32("a", "[]", "[1]")
     "y = GatherV2(x0, i, a)"},
    {"GatherV2", "axis -1, indices of rank 2", {U("[2, 3]")}, I64("i", "[2, 2]", "[2, 0, 1, 1]")
     I64("a", "[]", "[-1]") "y = GatherV2(x0, i, a)"},
    {"GatherV2", "axis 0, unknown rows", {UQ("[4, 2]", "[?, 2]")}, I32("i", "[3]", "[1, 3, 1]")
     I32("a", "[]", "[0]") "y = GatherV2(x0, i, a)"},
    {"Gather", "unknown rows", {UQ("[4, 2]", "[?, 2]")}, I32("i", "[3]", "[1, 3, 1]") "y = Gather(x0, i)"},
    {"Gather", "indices fed at run time", {U("[3, 2]"), IDX("[4]", 2, 2, 1, 0)}, "y = Gather(x0, x1)"},
    {"ReverseV2", "two axes", {U("[2, 3, 2]")}, I32("a", "[2]", "[0, -1]") "y = ReverseV2(x0, a)"},
    {"ReverseV2", "unknown batch", {UQ("[3, 2]", "[?, 2]")}, I64("a", "[1]", "[0]") "y = ReverseV2(x0, a)"},
    {"MirrorPad", "REFLECT", {U("[3, 4]")},
     I32("p", "[2, 2]", "[2, 1, 0, 3]") "y = MirrorPad(x0, p, mode=\"REFLECT\")"},
    {"MirrorPad", "SYMMETRIC, unknown batch", {UQ("[2, 3]", "[?, 3]")},
     I64("p", "[2, 2]", "[2, 1, 3, 0]") "y = MirrorPad(x0, p, mode=\"SYMMETRIC\")"},
    {"MirrorPadGrad", "linear in its input", {U("[5, 6]")},
     I32("p", "[2, 2]", "[1, 1, 2, 1]") "y = MirrorPadGrad(x0, p, mode=\"REFLECT\")"},
    {"DynamicStitch", "two lists, a gap", {U("[2, 3]"), U("[1, 3]")},
     I32("i0", "[2]", "[4, 0]") I32("i1", "[1]", "[2]") "y = DynamicStitch([i0, i1], [x0, x1])"},
    {"Snapshot", "matrix", {U("[2, 3]")}, "y = Snapshot(x0)"},
    {"BroadcastTo", "vector to matrix", {U("[3]")}, I32("s", "[2]", "[2, 3]") "y = BroadcastTo(x0, s)"},
    {"BroadcastTo", "column", {U("[2, 1]")}, I64("s", "[3]", "[2, 2, 3]") "y = BroadcastTo(x0, s)"},
    {"BroadcastTo", "shape fed at run time", {U("[1, 3]"), IDX("[2]", 2, 3)}, "y = BroadcastTo(x0, x1)"},
    {"UnsortedSegmentSum", "rows, a dropped one", {U("[4, 2]")},
     I32("i", "[4]", "[0, 2, 0, -1]") I32("n", "[]", "[3]") "y = UnsortedSegmentSum(x0, i, n)"},
    {"UnsortedSegmentSum", "ids of rank 2", {U("[2, 2, 3]")},
     I64("i", "[2, 2]", "[1, 0, 1, 1]") I64("n", "[]", "[2]") "y = UnsortedSegmentSum(x0, i, n)"},
    {"StridedSliceGrad", "linear in dy", {U("[2, 3]")},
     I32("shape", "[2]", "[4, 5]") I32("b", "[2]", "[1, 0]") I32("e", "[2]", "[3, 5]") I32("s", "[2]", "[1, 2]")
     "y = StridedSliceGrad(shape, b, e, s, x0)"},
};

/* ---------------------------------------------------------------- reductions */

static const gc_case reduce_cases[] = {
    {"Sum", "rows", {U("[2, 3]")}, I32("a", "[1]", "[1]") "y = Sum(x0, a)"},
    {"Sum", "two axes, keep_dims", {U("[2, 3, 2]")},
     I32("a", "[2]", "[0, 2]") "y = Sum(x0, a, keep_dims=true)"},
    {"Sum", "everything", {U("[2, 3]")}, I32("a", "[2]", "[1, 0]") "y = Sum(x0, a)"},
    {"Sum", "no axes", {U("[2, 2]")}, I32("a", "[0]", "[]") "y = Sum(x0, a)"},
    {"Sum", "scalar negative axis", {U("[3, 2]")}, I64("a", "[]", "[-1]") "y = Sum(x0, a)"},
    {"Sum", "unknown batch", {UQ("[3, 2]", "[?, 2]")}, I32("a", "[1]", "[0]") "y = Sum(x0, a)"},
    {"Sum", "axes fed at run time", {U("[2, 3]"), IDX("[1]", 1)}, "y = Sum(x0, x1)"},
    {"Mean", "rows", {U("[2, 3]")}, I32("a", "[1]", "[1]") "y = Mean(x0, a)"},
    {"Mean", "two axes, keep_dims", {U("[2, 3, 2]")},
     I32("a", "[2]", "[0, 2]") "y = Mean(x0, a, keep_dims=true)"},
    {"Mean", "everything, unknown batch", {UQ("[3, 2]", "[?, 2]")},
     I32("a", "[2]", "[0, 1]") "y = Mean(x0, a)"},
    {"Mean", "axes fed at run time", {UQ("[2, 3]", "*"), IDX("[]", 0)}, "y = Mean(x0, x1)"},
    {"Max", "rows", {DIST("[2, 3]")}, I32("a", "[1]", "[1]") "y = Max(x0, a)"},
    {"Max", "two axes, keep_dims", {DIST("[2, 3, 2]")},
     I32("a", "[2]", "[0, 2]") "y = Max(x0, a, keep_dims=true)"},
    {"Max", "everything, unknown batch", {DISTQ("[3, 2]", "[?, 2]")},
     I32("a", "[2]", "[0, 1]") "y = Max(x0, a)"},
    {"Max", "axes fed at run time", {DIST("[2, 3]"), IDX("[1]", 0)}, "y = Max(x0, x1)"},
    {"Min", "rows", {DIST("[2, 3]")}, I32("a", "[1]", "[1]") "y = Min(x0, a)"},
    {"Min", "columns, keep_dims", {DIST("[3, 2]")}, I32("a", "[1]", "[0]") "y = Min(x0, a, keep_dims=true)"},
    {"Min", "unknown batch", {DISTQ("[3, 2]", "[?, 2]")}, I32("a", "[1]", "[-1]") "y = Min(x0, a)"},
    {"Cumsum", "rows", {U("[2, 4]")}, I32("a", "[]", "[1]") "y = Cumsum(x0, a)"},
    {"Cumsum", "exclusive, reversed, axis 0", {U("[3, 2]")}, I64("a", "[]", "[0]")
     "y = Cumsum(x0, a, exclusive=true, reverse=true)"},
    {"Cumprod", "away from 0", {AWAY("[2, 4]")}, I32("a", "[]", "[-1]") "y = Cumprod(x0, a)"},
    {"Cumprod", "exclusive, reversed", {AWAY("[3, 2]")}, I32("a", "[]", "[0]")
     "y = Cumprod(x0, a, exclusive=true, reverse=true)"},
    {"Prod", "rows", {RANGE("[2, 3]", -2, 2)}, I32("a", "[1]", "[1]") "y = Prod(x0, a)"},
    {"Prod", "a zero in a group", {VALS("[2, 3]", 1.5, 0, -2, 0.5, 3, -1)}, I32("a", "[1]", "[1]")
     "y = Prod(x0, a)"},
    {"Prod", "two zeros in a group", {VALS("[3, 2]", 0, 2, 0, -1, 1.5, 0.5)}, I32("a", "[1]", "[0]")
     "y = Prod(x0, a)"},
    {"Prod", "two axes, keep_dims", {RANGE("[2, 3, 2]", 0.5, 1.5)}, I32("a", "[2]", "[0, 2]")
     "y = Prod(x0, a, keep_dims=true)"},
    {"Prod", "unknown batch, axes fed at run time", {UQ("[3, 2]", "[?, 2]"), IDX("[1]", 0)},
     "y = Prod(x0, x1)"},
};

/* ---------------------------------------------------------------- linear algebra */

static const gc_case linalg_cases[] = {
    {"MatMul", "plain", {U("[2, 3]"), U("[3, 4]")}, "y = MatMul(x0, x1)"},
    {"MatMul", "transpose_a", {U("[3, 2]"), U("[3, 4]")}, "y = MatMul(x0, x1, transpose_a=true)"},
    {"MatMul", "transpose_b", {U("[2, 3]"), U("[4, 3]")}, "y = MatMul(x0, x1, transpose_b=true)"},
    {"MatMul", "both transposed", {U("[3, 2]"), U("[4, 3]")},
     "y = MatMul(x0, x1, transpose_a=true, transpose_b=true)"},
    {"MatMul", "unknown batch", {UQ("[3, 2]", "[?, 2]"), U("[2, 2]")}, "y = MatMul(x0, x1)"},
    {"MatMul", "one operand twice", {U("[3, 3]")}, "y = MatMul(x0, x0, transpose_b=true)"},
    {"BatchMatMulV2", "plain", {U("[2, 2, 3]"), U("[2, 3, 2]")}, "y = BatchMatMulV2(x0, x1)"},
    {"BatchMatMulV2", "adj_x", {U("[2, 3, 2]"), U("[2, 3, 2]")}, "y = BatchMatMulV2(x0, x1, adj_x=true)"},
    {"BatchMatMulV2", "adj_y", {U("[2, 2, 3]"), U("[2, 2, 3]")}, "y = BatchMatMulV2(x0, x1, adj_y=true)"},
    {"BatchMatMulV2", "both adjoint", {U("[2, 3, 2]"), U("[2, 2, 3]")},
     "y = BatchMatMulV2(x0, x1, adj_x=true, adj_y=true)"},
    {"BatchMatMulV2", "broadcast matrix", {U("[2, 3]"), U("[2, 3, 2]")}, "y = BatchMatMulV2(x0, x1)"},
    {"BatchMatMulV2", "broadcast batch dims", {U("[2, 1, 2, 3]"), U("[3, 3, 2]")},
     "y = BatchMatMulV2(x0, x1)"},
    {"BatchMatMulV2", "unknown batch", {UQ("[2, 2, 3]", "[?, 2, 3]"), UQ("[1, 3, 2]", "[?, 3, 2]")},
     "y = BatchMatMulV2(x0, x1)"},
    {"BatchMatMul", "plain", {U("[2, 2, 3]"), U("[2, 3, 2]")}, "y = BatchMatMul(x0, x1)"},
    {"BatchMatMul", "both adjoint, unknown batch", {UQ("[2, 3, 2]", "[?, 3, 2]"), U("[2, 2, 3]")},
     "y = BatchMatMul(x0, x1, adj_x=true, adj_y=true)"},
    {"BatchMatMul", "adj_y, rank 4", {U("[2, 1, 2, 3]"), U("[2, 1, 4, 3]")},
     "y = BatchMatMul(x0, x1, adj_y=true)"},
    {"MatrixInverse", "3 x 3", {COND("[3, 3]")}, "y = MatrixInverse(x0)"},
    {"MatrixInverse", "batch, adjoint", {COND("[2, 2, 2]")}, "y = MatrixInverse(x0, adjoint=true)"},
    {"MatrixInverse", "unknown batch", {CONDQ("[2, 3, 3]", "[?, 3, 3]")}, "y = MatrixInverse(x0)"},
    {"MatrixDeterminant", "3 x 3", {COND("[3, 3]")}, "y = MatrixDeterminant(x0)"},
    {"MatrixDeterminant", "batch", {COND("[2, 2, 2]")}, "y = MatrixDeterminant(x0)"},
    {"MatrixDeterminant", "unknown batch", {CONDQ("[3, 2, 2]", "[?, 2, 2]")}, "y = MatrixDeterminant(x0)"},
};

/* ---------------------------------------------------------------- neural-network ops */

static const gc_case nn_cases[] = {
    {"Relu", "away from 0", {DIST("[2, 4]")}, "y = Relu(x0)"},
    {"Relu", "unknown batch", {DISTQ("[3, 2]", "[?, 2]")}, "y = Relu(x0)"},
    {"Relu6", "away from 0 and 6", {DISTR("[3, 4]", -3, 9)}, "y = Relu6(x0)"},
    {"Elu", "both sides", {RANGE("[2, 4]", -2, 2)}, "y = Elu(x0)"},
    {"Softplus", "both sides", {RANGE("[2, 4]", -3, 3)}, "y = Softplus(x0)"},
    {"Selu", "away from the kink", {AWAY("[2, 4]")}, "y = Selu(x0)"},
    {"Softsign", "away from the kink", {AWAY("[2, 4]")}, "y = Softsign(x0)"},
    {"LeakyRelu", "away from the kink, alpha 0.3", {AWAY("[2, 4]")}, "y = LeakyRelu(x0, alpha=0.3)"},
    {"Sigmoid", "matrix", {RANGE("[2, 3]", -3, 3)}, "y = Sigmoid(x0)"},
    {"Sigmoid", "unknown batch", {RANGEQ("[3, 2]", "[?, 2]", -3, 3)}, "y = Sigmoid(x0)"},
    {"Tanh", "matrix", {RANGE("[2, 3]", -2, 2)}, "y = Tanh(x0)"},
    {"Softmax", "rows", {RANGE("[2, 4]", -2, 2)}, "y = Softmax(x0)"},
    {"Softmax", "rank 3", {RANGE("[2, 2, 3]", -2, 2)}, "y = Softmax(x0)"},
    {"Softmax", "unknown batch", {RANGEQ("[3, 3]", "[?, 3]", -2, 2)}, "y = Softmax(x0)"},
    {"LogSoftmax", "rows", {RANGE("[2, 4]", -2, 2)}, "y = LogSoftmax(x0)"},
    {"LogSoftmax", "rank 3, unknown batch", {RANGEQ("[2, 2, 3]", "[?, 2, 3]", -2, 2)}, "y = LogSoftmax(x0)"},
    {"SoftmaxCrossEntropyWithLogits", "features and labels", {RANGE("[3, 4]", -2, 2), SIMPLEX("[3, 4]")},
     "y = SoftmaxCrossEntropyWithLogits(x0, x1)", .outputs = 0x1},
    {"SoftmaxCrossEntropyWithLogits", "unknown batch",
     {RANGEQ("[2, 3]", "[?, 3]", -2, 2), SIMPLEXQ("[2, 3]", "[?, 3]")},
     "y = SoftmaxCrossEntropyWithLogits(x0, x1)", .outputs = 0x1},
    {"SparseSoftmaxCrossEntropyWithLogits", "int32 labels", {RANGE("[3, 4]", -2, 2)},
     I32("l", "[3]", "[1, 0, 3]") "y = SparseSoftmaxCrossEntropyWithLogits(x0, l)", .outputs = 0x1},
    {"SparseSoftmaxCrossEntropyWithLogits", "int64 labels, unknown batch", {RANGEQ("[2, 3]", "[?, 3]", -2, 2)},
     I64("l", "[2]", "[2, 2]") "y = SparseSoftmaxCrossEntropyWithLogits(x0, l)", .outputs = 0x1},
    {"TopKV2", "distinct values", {DIST("[3, 5]")}, I32("k", "[]", "[2]") "y = TopKV2(x0, k)", .outputs = 0x1},
    {"TopKV2", "k fed at run time, unknown batch", {DISTQ("[2, 4]", "[?, 4]"), IDX("[]", 3)},
     "y = TopKV2(x0, x1)", .outputs = 0x1},
    {"BiasAdd", "matrix", {U("[2, 3]"), U("[3]")}, "y = BiasAdd(x0, x1)"},
    {"BiasAdd", "rank 3, unknown batch", {UQ("[2, 2, 3]", "[?, 2, 3]"), U("[3]")}, "y = BiasAdd(x0, x1)"},
    {"L2Loss", "matrix", {U("[2, 3]")}, "y = L2Loss(x0)"},
    {"FusedBatchNorm", "training, rank 2", {RANGE("[4, 3]", -2, 2), RANGE("[3]", 0.5, 1.5), U("[3]")},
     F64("m", "[0]", "[]") F64("v", "[0]", "[]") "y = FusedBatchNorm(x0, x1, x2, m, v)", .outputs = 0x1},
    {"FusedBatchNorm", "training, rank 4", {RANGE("[2, 2, 2, 2]", -2, 2), RANGE("[2]", 0.5, 1.5), U("[2]")},
     F64("m", "[0]", "[]") F64("v", "[0]", "[]") "y = FusedBatchNorm(x0, x1, x2, m, v, epsilon=0.01)",
     .outputs = 0x1},
    {"FusedBatchNormV2", "training, rank 4", {RANGE("[2, 2, 2, 2]", -2, 2), RANGE("[2]", 0.5, 1.5), U("[2]")},
     F64("m", "[0]", "[]") F64("v", "[0]", "[]") "y = FusedBatchNormV2(x0, x1, x2, m, v, epsilon=0.01)",
     .outputs = 0x1},
    {"FusedBatchNormV3", "training, rank 5", {RANGE("[2, 1, 2, 2, 2]", -2, 2), RANGE("[2]", 0.5, 1.5), U("[2]")},
     F64("m", "[0]", "[]") F64("v", "[0]", "[]")
     "y = FusedBatchNormV3(x0, x1, x2, m, v, epsilon=0.01, data_format=\"NDHWC\")", .outputs = 0x1},
    /* second order: the gradient ops; features and Elu's outputs away from the kinks (0, and 6) */
    {"ReluGrad", "features away from 0", {U("[2, 4]"), AWAY("[2, 4]")}, "y = ReluGrad(x0, x1)"},
    {"ReluGrad", "unknown batch",
     {UQ("[3, 2]", "[?, 2]"), {.dims = "[3, 2]", .declared = "[?, 2]", .gen = GEN_AWAY}}, "y = ReluGrad(x0, x1)"},
    {"LeakyReluGrad", "features away from 0", {U("[2, 4]"), AWAY("[2, 4]")},
     "y = LeakyReluGrad(x0, x1, alpha=0.1)"},
    {"Relu6Grad", "features on the three sides of 0 and 6",
     {U("[2, 4]"), VALS("[2, 4]", -2.5, 0.3, 6.4, 3.2, -0.4, 5.5, 8.1, 1.7)}, "y = Relu6Grad(x0, x1)"},
    {"EluGrad", "outputs on both sides of 0",
     {U("[2, 4]"), VALS("[2, 4]", -0.9, 0.3, -0.5, 1.5, 0.8, -0.2, 2.0, -0.7)}, "y = EluGrad(x0, x1)"},
    {"EluGrad", "unknown rank", {UQ("[3]", "*"), VALS("[3]", -0.6, 0.4, -0.1)}, "y = EluGrad(x0, x1)"},
    {"SoftplusGrad", "both sides", {U("[2, 4]"), RANGE("[2, 4]", -3, 3)}, "y = SoftplusGrad(x0, x1)"},
    {"SoftplusGrad", "unknown batch", {UQ("[3, 2]", "[?, 2]"), RANGE("[3, 2]", -3, 3)},
     "y = SoftplusGrad(x0, x1)"},
    {"SigmoidGrad", "y in (0, 1)", {RANGE("[2, 3]", 0.05, 0.95), U("[2, 3]")}, "y = SigmoidGrad(x0, x1)"},
    {"SigmoidGrad", "unknown batch", {RANGEQ("[3, 2]", "[?, 2]", 0.05, 0.95), U("[3, 2]")},
     "y = SigmoidGrad(x0, x1)"},
    {"TanhGrad", "y in (-1, 1)", {RANGE("[2, 3]", -0.95, 0.95), U("[2, 3]")}, "y = TanhGrad(x0, x1)"},
    {"TanhGrad", "unknown batch", {RANGE("[2, 3]", -0.95, 0.95), UQ("[2, 3]", "[?, 3]")},
     "y = TanhGrad(x0, x1)"},
    {"BiasAddGrad", "matrix", {U("[4, 3]")}, "y = BiasAddGrad(x0)"},
    {"BiasAddGrad", "rank 3, unknown batch", {UQ("[2, 2, 3]", "[?, 2, 3]")}, "y = BiasAddGrad(x0)"},
    {"BiasAddGrad", "rank 4, unknown rank", {UQ("[2, 1, 2, 3]", "*")}, "y = BiasAddGrad(x0)"},
};

/* ---------------------------------------------------------------- convolution and pooling */

static const gc_case conv_cases[] = {
    {"Conv2D", "SAME, stride 1", {U("[2, 4, 4, 2]"), U("[3, 3, 2, 2]")},
     "y = Conv2D(x0, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"Conv2D", "VALID, stride 2", {U("[1, 5, 5, 2]"), U("[2, 2, 2, 3]")},
     "y = Conv2D(x0, x1, strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"Conv2D", "SAME, stride 2, odd size", {U("[1, 5, 5, 1]"), U("[3, 3, 1, 2]")},
     "y = Conv2D(x0, x1, strides=[1, 2, 2, 1], padding=\"SAME\")"},
    {"Conv2D", "dilation 2", {U("[1, 5, 5, 1]"), U("[2, 2, 1, 2]")},
     "y = Conv2D(x0, x1, strides=[1, 1, 1, 1], padding=\"VALID\", dilations=[1, 2, 2, 1])"},
    {"Conv2D", "unknown batch", {UQ("[2, 3, 3, 1]", "[?, 3, 3, 1]"), U("[2, 2, 1, 2]")},
     "y = Conv2D(x0, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"Conv2D", "EXPLICIT padding, stride 2", {U("[1, 4, 5, 2]"), U("[3, 2, 2, 2]")},
     "y = Conv2D(x0, x1, strides=[1, 2, 1, 1], padding=\"EXPLICIT\", "
     "explicit_paddings=[0, 0, 2, 1, 0, 3, 0, 0], use_cudnn_on_gpu=false)"},
    /* ResizeBilinear's output is float32 for every input dtype, so the loss is float32: a large
     * step (the op is linear in the image) keeps the rounding out of the differences */
    {"ResizeBilinear", "up and down, legacy", {U("[2, 3, 4, 2]")}, I32("s", "[2]", "[5, 3]") "y = ResizeBilinear(x0, s)",
     .h = 1e-1, .tol = 1e-4},
    {"ResizeBilinear", "align_corners", {U("[1, 4, 3, 1]")}, I32("s", "[2]", "[2, 5]")
     "y = ResizeBilinear(x0, s, align_corners=true)", .h = 1e-1, .tol = 1e-4},
    {"ResizeBilinear", "half_pixel_centers", {U("[1, 3, 3, 2]")}, I32("s", "[2]", "[4, 2]")
     "y = ResizeBilinear(x0, s, half_pixel_centers=true)", .h = 1e-1, .tol = 1e-4},
    {"DepthwiseConv2dNative", "SAME, multiplier 2", {U("[2, 4, 4, 2]"), U("[3, 3, 2, 2]")},
     "y = DepthwiseConv2dNative(x0, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"DepthwiseConv2dNative", "VALID, stride 2, dilation", {U("[1, 6, 5, 3]"), U("[2, 2, 3, 1]")},
     "y = DepthwiseConv2dNative(x0, x1, strides=[1, 2, 1, 1], padding=\"VALID\", dilations=[1, 1, 2, 1])"},
    {"DepthwiseConv2dNativeBackpropInput", "linear in filter and dy", {U("[3, 3, 2, 2]"), U("[1, 4, 4, 4]")},
     I32("s", "[4]", "[1, 4, 4, 2]")
     "y = DepthwiseConv2dNativeBackpropInput(s, x0, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"DepthwiseConv2dNativeBackpropFilter", "linear in input and dy", {U("[1, 4, 4, 2]"), U("[1, 2, 2, 4]")},
     I32("s", "[4]", "[2, 2, 2, 2]")
     "y = DepthwiseConv2dNativeBackpropFilter(x0, s, x1, strides=[1, 2, 2, 1], padding=\"SAME\")"},
    {"Conv2DBackpropInput", "SAME, stride 1", {U("[3, 3, 2, 2]"), U("[1, 4, 4, 2]")},
     I32("s", "[4]", "[1, 4, 4, 2]")
     "y = Conv2DBackpropInput(s, x0, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"Conv2DBackpropInput", "VALID, stride 2", {U("[2, 2, 1, 2]"), U("[2, 2, 2, 2]")},
     I32("s", "[4]", "[2, 5, 5, 1]")
     "y = Conv2DBackpropInput(s, x0, x1, strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"Conv2DBackpropFilter", "SAME, stride 1", {U("[1, 4, 4, 2]"), U("[1, 4, 4, 2]")},
     I32("s", "[4]", "[3, 3, 2, 2]")
     "y = Conv2DBackpropFilter(x0, s, x1, strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"Conv2DBackpropFilter", "VALID, stride 2", {U("[2, 5, 5, 1]"), U("[2, 2, 2, 2]")},
     I32("s", "[4]", "[2, 2, 1, 2]")
     "y = Conv2DBackpropFilter(x0, s, x1, strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"MaxPool", "2x2 stride 2", {DIST("[1, 4, 4, 2]")},
     "y = MaxPool(x0, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"MaxPool", "3x3 stride 2 SAME, overlapping", {DIST("[1, 5, 5, 1]")},
     "y = MaxPool(x0, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding=\"SAME\")"},
    {"MaxPool", "unknown batch", {DISTQ("[2, 2, 2, 1]", "[?, 2, 2, 1]")},
     "y = MaxPool(x0, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"AvgPool", "2x2 stride 2", {U("[1, 4, 4, 2]")},
     "y = AvgPool(x0, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"AvgPool", "3x3 stride 2 SAME, partial windows", {U("[1, 5, 5, 1]")},
     "y = AvgPool(x0, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding=\"SAME\")"},
    {"AvgPool", "unknown batch", {UQ("[2, 3, 3, 1]", "[?, 3, 3, 1]")},
     "y = AvgPool(x0, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding=\"SAME\")"},
    {"AvgPoolGrad", "2x2 stride 2", {U("[1, 2, 2, 2]")},
     I32("s", "[4]", "[1, 4, 4, 2]")
     "y = AvgPoolGrad(s, x0, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding=\"VALID\")"},
    {"AvgPoolGrad", "3x3 stride 2 SAME, partial windows", {U("[1, 3, 3, 1]")},
     I32("s", "[4]", "[1, 5, 5, 1]")
     "y = AvgPoolGrad(s, x0, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding=\"SAME\")"},
};

/* ---------------------------------------------------------------- control flow (a cond's ops; whole
 * loops are checked in test_control_flow_grad.c) */

static const gc_case control_flow_cases[] = {
    {"Switch", "true side", {U("[2, 3]")}, BOOLS("p", "[]", "[true]") "y = Switch(x0, p)", .outputs = 2},
    {"Switch", "false side", {U("[2, 3]")}, BOOLS("p", "[]", "[false]") "y = Switch(x0, p)", .outputs = 1},
    {"Merge", "true branch taken", {U("[3]")},
     BOOLS("p", "[]", "[true]") F64("two", "[]", "[2]")
     "s = Switch(x0, p)\na = Mul(s, two)\nb = Sin(s:1)\ny = Merge([a, b])", .outputs = 1},
    {"Merge", "false branch taken", {U("[3]")},
     BOOLS("p", "[]", "[false]") F64("two", "[]", "[2]")
     "s = Switch(x0, p)\na = Mul(s, two)\nb = Sin(s:1)\ny = Merge([a, b])", .outputs = 1},
    {"Merge", "a value from outside in one branch", {U("[2, 2]"), U("[2, 2]")},
     BOOLS("p", "[]", "[true]")
     "s = Switch(x0, p)\nt = Switch(x1, p)\nb = Mul(s:1, t:1)\ny = Merge([s, b])", .outputs = 1},
};

#pragma GCC diagnostic pop

/* Ops with a gradient that the checker cannot check, each with the reason. */
static const struct {
    const char *op, *reason;
} unchecked_ops[] = {
    {"Dropout", "random: each run draws a new mask, so finite differences see a different function; "
                "tests/kernels/test_nn.c checks its gradient against the mask fetched in the same run"},
    {"PreventGradient", "its gradient function refuses, by design; test_gradient_errors checks the message"},
};

#define TABLE(t) {t, sizeof t / sizeof t[0]}
static const struct {
    const gc_case *cases;
    size_t n;
} all_tables[] = {TABLE(math_cases), TABLE(array_cases), TABLE(reduce_cases), TABLE(linalg_cases),
                  TABLE(nn_cases), TABLE(conv_cases), TABLE(control_flow_cases)};

/* ---------------------------------------------------------------- the checker */

typedef struct gc_run {
    const gc_case *c;
    tide_graph *g;
    int num_in;
    tide_tensor *values[GC_MAX_INPUTS];
    tide_output xs[GC_MAX_INPUTS];
    tide_output loss;
    tide_session *s;
    tide_error *err;
} gc_run;

__attribute__((format(printf, 2, 3)))
static void gc_fail(const gc_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\ngradcheck %s [%s]: ", r->c->op, r->c->label);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    CU_FAIL("gradient check failed (details above)");
}

static bool is_checked(const gc_input *in) { return in->dtype == TIDE_INVALID_DTYPE; }

/* "[2, 3]" -> rank 2, dims {2, 3}. */
static int parse_dims(const char *text, int64_t *dims)
{
    int rank = 0;
    for (const char *p = text; *p && rank < TIDE_MAX_RANK;) {
        char *end;
        if (*p >= '0' && *p <= '9') {
            dims[rank++] = strtoll(p, &end, 10);
            p = end;
        } else {
            p++;
        }
    }
    return rank;
}

static void default_range(const gc_input *in, double *lo, double *hi)
{
    static const double defaults[][2] = {[GEN_UNIFORM] = {-1, 1}, [GEN_AWAY] = {0.3, 2},
                                         [GEN_DISTINCT] = {-2, 2}};
    *lo = in->lo, *hi = in->hi;
    if (*lo == *hi && in->gen <= GEN_DISTINCT)
        *lo = defaults[in->gen][0], *hi = defaults[in->gen][1];
}

/* Fills v[0..n) for input `in` of the given dims. distinct[] is the case's shuffled pool of
 * distinct values (consumed from *next). */
static void draw_values(const gc_input *in, int rank, const int64_t *dims, double *v, int64_t n,
                        const double *distinct, int64_t *next)
{
    double lo, hi;
    default_range(in, &lo, &hi);
    int64_t cols = rank ? dims[rank - 1] : 1;
    for (int64_t i = 0; i < n; i++) {
        switch (in->gen) {
        case GEN_UNIFORM: v[i] = th_rand(lo, hi); break;
        case GEN_AWAY: v[i] = th_rand(lo, hi) * (th_rand(0, 1) < 0.5 ? -1 : 1); break;
        case GEN_DISTINCT: v[i] = lo + (hi - lo) * distinct[(*next)++]; break;
        case GEN_COND: v[i] = ((i / cols) % cols == i % cols ? 2 : 0) + th_rand(-0.3, 0.3); break;
        case GEN_SIMPLEX: v[i] = th_rand(0.1, 1); break;
        case GEN_VALUES: v[i] = in->values[i]; break;
        }
    }
    for (int64_t row = 0; in->gen == GEN_SIMPLEX && row < n / cols; row++) {
        double sum = 0;
        for (int64_t j = 0; j < cols; j++)
            sum += v[row * cols + j];
        for (int64_t j = 0; j < cols; j++)
            v[row * cols + j] /= sum;
    }
}

/* A pool of n distinct values in (0, 1), evenly spaced and shuffled, off round numbers. */
static double *distinct_pool(int64_t n)
{
    double *pool = malloc((size_t)(n ? n : 1) * sizeof *pool);
    for (int64_t i = 0; pool && i < n; i++)
        pool[i] = ((double)i + 0.5 + 0.0137) / ((double)n + 0.05);
    for (int64_t i = n - 1; pool && i > 0; i--) {
        int64_t j = (int64_t)th_rand(0, (double)i + 1);
        double t = pool[i];
        pool[i] = pool[j > i ? i : j];
        pool[j > i ? i : j] = t;
    }
    return pool;
}

static bool make_values(gc_run *r)
{
    int64_t dims[TIDE_MAX_RANK], total = 0, next = 0;
    for (r->num_in = 0; r->num_in < GC_MAX_INPUTS && r->c->in[r->num_in].dims; r->num_in++) {
        const gc_input *in = &r->c->in[r->num_in];
        int rank = parse_dims(in->dims, dims);
        tide_shape s = tide_shape_make(rank, dims);
        if (in->gen == GEN_DISTINCT)
            total += tide_shape_num_elements(&s);
    }
    double *pool = distinct_pool(total);
    for (int i = 0; i < r->num_in && pool; i++) {
        const gc_input *in = &r->c->in[i];
        int rank = parse_dims(in->dims, dims);
        tide_shape s = tide_shape_make(rank, dims);
        int64_t n = tide_shape_num_elements(&s);
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v)
            break;
        draw_values(in, rank, dims, v, n, pool, &next);
        r->values[i] = th_from_doubles(is_checked(in) ? TIDE_FLOAT64 : in->dtype, rank, dims, v, 0);
        free(v);
    }
    free(pool);
    for (int i = 0; i < r->num_in; i++)
        if (!r->values[i])
            return false;
    return true;
}

/* Placeholders x0, x1, ... then the case's body. */
static bool build_graph(gc_run *r)
{
    size_t size = strlen(r->c->body) + 128 * GC_MAX_INPUTS;
    char *text = malloc(size);
    if (!text)
        return false;
    size_t at = 0;
    for (int i = 0; i < r->num_in; i++) {
        const gc_input *in = &r->c->in[i];
        at += (size_t)snprintf(text + at, size - at, "x%d = Placeholder(dtype=%s, shape=%s)\n", i,
                               tide_dtype_name(is_checked(in) ? TIDE_FLOAT64 : in->dtype),
                               in->declared ? in->declared : in->dims);
    }
    snprintf(text + at, size - at, "%s\n", r->c->body);
    tide_status st = tide_graph_extend_text(r->g, text, r->err);
    free(text);
    if (st != TIDE_OK) {
        gc_fail(r, "building the graph failed: %s", tide_error_message(r->err));
        return false;
    }
    for (int i = 0; i < r->num_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        r->xs[i] = (tide_output){tide_graph_node(r->g, name), 0};
    }
    tide_node *y = tide_graph_node(r->g, "y");
    if (!y || strcmp(tide_node_op(y), r->c->op) != 0) {
        gc_fail(r, "the case's graph has no node y of op %s", r->c->op);
        return false;
    }
    return true;
}

static int make_feeds(const gc_run *r, tide_feed *feeds, int replace, tide_tensor *with)
{
    for (int i = 0; i < r->num_in; i++)
        feeds[i] = (tide_feed){r->xs[i], i == replace ? with : r->values[i]};
    return r->num_in;
}

/* The outputs of y in the loss. */
static int loss_outputs(const gc_run *r, tide_output *outs)
{
    tide_node *y = tide_graph_node(r->g, "y");
    int n = 0;
    for (int k = 0; k < tide_node_num_outputs(y) && n < GC_MAX_OUTPUTS; k++) {
        bool chosen = r->c->outputs ? (r->c->outputs >> k & 1) : true;
        if (chosen && tide_dtype_is_float(tide_node_output_dtype(y, k)))
            outs[n++] = (tide_output){y, k};
    }
    return n;
}

static tide_output add_op(gc_run *r, const char *op, const tide_output *in, int n, bool list)
{
    tide_node_builder *b = tide_node_builder_new(r->g, op, NULL);
    if (list)
        tide_node_builder_add_input_list(b, in, n);
    else
        for (int i = 0; i < n; i++)
            tide_node_builder_add_input(b, in[i]);
    return (tide_output){gu_finish(b), 0};
}

/* loss = sum_k Sum(y:k * W_k), the weights shaped like the outputs of a first run. */
static bool build_loss(gc_run *r)
{
    tide_output outs[GC_MAX_OUTPUTS], terms[GC_MAX_OUTPUTS];
    tide_tensor *vals[GC_MAX_OUTPUTS] = {NULL};
    tide_feed feeds[GC_MAX_INPUTS];
    int n = loss_outputs(r, outs);
    tide_session *s = tide_session_new(th_engine(), r->g, NULL, r->err);
    tide_status st = s ? tide_session_run(s, NULL, feeds, make_feeds(r, feeds, -1, NULL), outs, n, vals,
                                          NULL, 0, NULL, r->err)
                       : TIDE_INTERNAL;
    tide_session_free(s);
    if (st != TIDE_OK || n == 0) {
        gc_fail(r, "running the op failed: %s", n ? tide_error_message(r->err) : "no float output");
        return false;
    }
    for (int k = 0; k < n; k++) {
        int64_t m = tide_tensor_num_elements(vals[k]);
        int rank = tide_tensor_rank(vals[k]);
        /* in the output's dtype: float64 but for ops whose output is float32 whatever the input */
        double *wv = malloc((size_t)(m ? m : 1) * sizeof *wv);
        for (int64_t i = 0; wv && i < m; i++)
            wv[i] = th_rand(-1, 1);
        tide_tensor *w = wv ? th_from_doubles(tide_tensor_dtype(vals[k]), rank, tide_tensor_shape(vals[k])->dims, wv, 0)
                            : NULL;
        free(wv);
        int32_t axes[TIDE_MAX_RANK];
        for (int d = 0; d < rank; d++)
            axes[d] = d;
        tide_output weight = {gu_const(r->g, NULL, w), 0};
        tide_output weighted = add_op(r, "Mul", (tide_output[]){outs[k], weight}, 2, false);
        tide_output axes_node = {gu_const(r->g, NULL, th_i32(1, TH_DIMS(rank), axes)), 0};
        terms[k] = add_op(r, "Sum", (tide_output[]){weighted, axes_node}, 2, false);
        tide_tensor_release(vals[k]);
    }
    r->loss = n == 1 ? terms[0] : add_op(r, "AddN", terms, n, true);
    return r->loss.node != NULL;
}

static double run_loss(gc_run *r, int replace, tide_tensor *with, bool *ok)
{
    tide_feed feeds[GC_MAX_INPUTS];
    tide_tensor *out = NULL;
    int n = make_feeds(r, feeds, replace, with);
    if (tide_session_run(r->s, NULL, feeds, n, &r->loss, 1, &out, NULL, 0, NULL, r->err) != TIDE_OK) {
        gc_fail(r, "evaluating the loss failed: %s", tide_error_message(r->err));
        *ok = false;
        return NAN;
    }
    double v = tide_tensor_get_f64(out, 0);
    tide_tensor_release(out);
    return v;
}

/* The central difference of the loss along element j of input i. */
static double numeric_derivative(gc_run *r, int i, int64_t j, bool *ok)
{
    double x = tide_tensor_get_f64(r->values[i], j);
    double h = (r->c->h ? r->c->h : GC_H) * fmax(1.0, fabs(x)), sum[2];
    for (int side = 0; side < 2; side++) {
        tide_tensor *t = tide_tensor_copy(r->values[i], NULL);
        ((double *)tide_tensor_data(t))[j] = side ? x - h : x + h;
        sum[side] = run_loss(r, i, t, ok);
        tide_tensor_release(t);
    }
    return (sum[0] - sum[1]) / (2 * h);
}

/* Compares one input's symbolic gradient (NULL: none, i.e. zero) with the numeric one. */
static bool compare_input(gc_run *r, int i, const tide_tensor *sym)
{
    double atol = r->c->tol ? r->c->tol : GC_ATOL, rtol = r->c->tol ? r->c->tol : GC_RTOL;
    int64_t n = tide_tensor_num_elements(r->values[i]);
    bool ok = true;
    int failures = 0;
    if (sym && (!tide_shape_equal(tide_tensor_shape(sym), tide_tensor_shape(r->values[i])) ||
                tide_tensor_dtype(sym) != TIDE_FLOAT64)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        gc_fail(r, "the gradient of x%d is %s %s, the input %s float64", i,
                tide_dtype_name(tide_tensor_dtype(sym)), tide_shape_format(tide_tensor_shape(sym), a, sizeof a),
                tide_shape_format(tide_tensor_shape(r->values[i]), b, sizeof b));
        return false;
    }
    for (int64_t j = 0; j < n && ok; j++) {
        double num = numeric_derivative(r, i, j, &ok), s = sym ? tide_tensor_get_f64(sym, j) : 0;
        if (ok && !(fabs(s - num) <= atol + rtol * fabs(num)) && failures++ < 3)
            gc_fail(r, "input x%d element %lld (value %.6g): symbolic %.10g, numeric %.10g%s", i, (long long)j,
                    tide_tensor_get_f64(r->values[i], j), s, num, sym ? "" : " (no gradient built)");
    }
    return ok && failures == 0;
}

/* Builds the loss and its symbolic gradients, then compares them input by input. */
static bool check_gradients(gc_run *r)
{
    tide_output xs[GC_MAX_INPUTS], dxs[GC_MAX_INPUTS];
    int idx[GC_MAX_INPUTS], nx = 0;
    for (int i = 0; i < r->num_in; i++)
        if (is_checked(&r->c->in[i])) {
            idx[nx] = i;
            xs[nx++] = r->xs[i];
        }
    if (tide_gradients(r->g, &r->loss, 1, xs, nx, NULL, dxs, r->err) != TIDE_OK) {
        gc_fail(r, "tide_gradients failed: %s", tide_error_message(r->err));
        return false;
    }
    tide_output fetch[GC_MAX_INPUTS];
    tide_tensor *sym[GC_MAX_INPUTS] = {NULL};
    tide_feed feeds[GC_MAX_INPUTS];
    int nf = 0;
    for (int k = 0; k < nx; k++)
        if (dxs[k].node)
            fetch[nf++] = dxs[k];
    r->s = tide_session_new(th_engine(), r->g, NULL, r->err);
    if (!r->s || tide_session_run(r->s, NULL, feeds, make_feeds(r, feeds, -1, NULL), fetch, nf, sym, NULL, 0,
                                  NULL, r->err) != TIDE_OK) {
        gc_fail(r, "evaluating the gradients failed: %s", tide_error_message(r->err));
        return false;
    }
    bool ok = true;
    for (int k = 0, f = 0; k < nx; k++)
        ok = compare_input(r, idx[k], dxs[k].node ? sym[f++] : NULL) && ok;
    for (int f = 0; f < nf; f++)
        tide_tensor_release(sym[f]);
    return ok;
}

static bool check_case(const gc_case *c)
{
    gc_run r = {.c = c, .g = tide_graph_new(), .err = tide_error_new()};
    bool ok = make_values(&r) && build_graph(&r) && build_loss(&r) && check_gradients(&r);
    tide_session_free(r.s);
    tide_graph_free(r.g);
    tide_error_free(r.err);
    for (int i = 0; i < r.num_in; i++)
        tide_tensor_release(r.values[i]);
    return ok;
}

static bool op_registered(const char *op)
{
    const char *const *names;
    int n = tide_registry_op_names(&names);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], op) == 0)
            return true;
    return false;
}

/* Runs every case of a table. A case for an op that is not registered fails (a stale case would
 * otherwise pass without checking anything); the coverage test below demands a case for every op
 * that has a gradient. */
static void check_table(const gc_case *cases, size_t n)
{
    th_engine();
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!op_registered(cases[i].op)) {
            fprintf(stderr, "\n  gradient case for op %s, which is not registered", cases[i].op);
            CU_FAIL("gradient case for an unregistered op");
            failed++;
            continue;
        }
        if (check_case(&cases[i]))
            passed++;
        else
            failed++;
    }
    if (getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "(%d cases passed, %d failed) ", passed, failed);
}

#define CHECK_TABLE(t) check_table(t, sizeof t / sizeof *t)
static void test_math_gradients(void) { CHECK_TABLE(math_cases); }
static void test_array_gradients(void) { CHECK_TABLE(array_cases); }
static void test_reduce_gradients(void) { CHECK_TABLE(reduce_cases); }
static void test_linalg_gradients(void) { CHECK_TABLE(linalg_cases); }
static void test_nn_gradients(void) { CHECK_TABLE(nn_cases); }
static void test_conv_gradients(void) { CHECK_TABLE(conv_cases); }
static void test_control_flow_gradients(void) { CHECK_TABLE(control_flow_cases); }

static bool has_case(const char *op)
{
    for (size_t t = 0; t < sizeof all_tables / sizeof *all_tables; t++)
        for (size_t i = 0; i < all_tables[t].n; i++)
            if (strcmp(all_tables[t].cases[i].op, op) == 0)
                return true;
    for (size_t i = 0; i < sizeof unchecked_ops / sizeof *unchecked_ops; i++)
        if (strcmp(unchecked_ops[i].op, op) == 0) {
            if (getenv("TIDE_TEST_VERBOSE"))
                fprintf(stderr, "\n  (%s is not checked here: %s)", op, unchecked_ops[i].reason);
            return true;
        }
    return false;
}

/* Every op with a gradient function has a case (or a stated reason why it cannot have one). */
static void test_every_gradient_has_a_case(void)
{
    th_engine();
    const char *const *names;
    int n = tide_registry_gradient_ops(&names);
    CU_ASSERT(n > 40);
    for (int i = 0; i < n; i++)
        if (!has_case(names[i])) {
            fprintf(stderr, "\nno gradient-check case for op %s: add one to tests/engine/test_gradcheck.c",
                    names[i]);
            CU_FAIL("an op with a gradient has no gradient-check case (named above)");
        }
}

/* ---------------------------------------------------------------- gradients at the edge cases */

/* d loss / d x for loss = Sum(op(x...) * 1), x0 fed with values; the others given as Consts in the
 * body. Returns the gradient of x0 (NULL when none is built). */
static tide_tensor *gradient_of(const char *body, int rank, const int64_t *dims, const double *values)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    char text[1024];
    tide_shape s = tide_shape_make(rank, dims);
    char shape[TIDE_SHAPE_STR_MAX];
    snprintf(text, sizeof text, "x0 = Placeholder(dtype=float64, shape=%s)\n%s\n",
             tide_shape_format(&s, shape, sizeof shape), body);
    tide_tensor *x = th_f64(rank, dims, values), *dx = NULL;
    tide_output y, d;
    tide_session *sess = NULL;
    if (tide_graph_extend_text(g, text, err) == TIDE_OK && tide_graph_output(g, "y", &y, err) == TIDE_OK &&
        tide_gradients(g, &y, 1, &(tide_output){tide_graph_node(g, "x0"), 0}, 1, NULL, &d, err) == TIDE_OK &&
        d.node && (sess = tide_session_new(th_engine(), g, NULL, err)))
        tide_session_run(sess, NULL, &(tide_feed){{tide_graph_node(g, "x0"), 0}, x}, 1, &d, 1, &dx, NULL, 0,
                         NULL, err);
    if (tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "\ngradient_of failed: %s\n", tide_error_message(err));
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
    tide_tensor_release(x);
    return dx;
}

static void assert_gradient(const char *body, int rank, const int64_t *dims, const double *x,
                            const double *want)
{
    tide_tensor *dx = gradient_of(body, rank, dims, x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dx);
    tide_tensor *expected = th_f64(rank, dims, want);
    TH_ASSERT_CLOSE(dx, expected, 1e-12, 1e-12);
    tide_tensor_release(dx);
    tide_tensor_release(expected);
}

/* Max/Min share the gradient equally among the elements equal to the result. */
static void test_reduction_ties(void)
{
    const double x[6] = {1, 3, 3, 2, 2, 2};
    const double max_rows[6] = {0, 0.5, 0.5, 1. / 3, 1. / 3, 1. / 3};
    assert_gradient(I32("a", "[1]", "[1]") I32("b", "[1]", "[0]") "m = Max(x0, a)\ny = Sum(m, b)", 2,
                    TH_DIMS(2, 3), x, max_rows);
    const double min_cols[6] = {1, 0, 0, 0, 1, 1}; /* columns (1,2) (3,2) (3,2): the 2s win */
    assert_gradient(I32("a", "[1]", "[0]") I32("b", "[2]", "[0, 1]") "m = Min(x0, a, keep_dims=true)\n"
                    "y = Sum(m, b)", 2, TH_DIMS(2, 3), x, min_cols);
    const double all_equal[4] = {0.25, 0.25, 0.25, 0.25};
    assert_gradient(I32("a", "[2]", "[0, 1]") "y = Max(x0, a)", 2, TH_DIMS(2, 2), (const double[]){7, 7, 7, 7},
                    all_equal);
}

/* Maximum/Minimum give a tie's gradient to x (the first operand), none to y. */
static void test_elementwise_ties(void)
{
    const double x[3] = {1, 2, 3};
    const double to_x[3] = {1, 1, 1}, to_y[3] = {0, 1, 1};
    assert_gradient(F64("c", "[3]", "[1, 5, -1]") I32("a", "[1]", "[0]") "m = Maximum(x0, c)\ny = Sum(m, a)",
                    1, TH_DIMS(3), x, (const double[]){1, 0, 1});
    assert_gradient(F64("c", "[3]", "[1, 2, 3]") I32("a", "[1]", "[0]") "m = Minimum(x0, c)\ny = Sum(m, a)",
                    1, TH_DIMS(3), x, to_x);
    assert_gradient(F64("c", "[3]", "[1, 0, 0]") I32("a", "[1]", "[0]") "m = Maximum(c, x0)\ny = Sum(m, a)",
                    1, TH_DIMS(3), x, to_y);
}

/* Pow: the exponent's gradient is 0 where x <= 0 (TensorFlow's convention), never NaN; the base's
 * gradient at 0 is y * 0^(y-1). */
static void test_pow_at_nonpositive_base(void)
{
    const double e[3] = {2, 3, 0.5};
    const double want_e[3] = {0, 0, sqrt(3.0) * log(3.0)};
    assert_gradient(F64("b", "[3]", "[-2, 0, 3]") I32("a", "[1]", "[0]") "p = Pow(b, x0)\ny = Sum(p, a)", 1,
                    TH_DIMS(3), e, want_e);
    const double base[3] = {-2, 0, 3};
    const double want_b[3] = {2 * -2.0, 0, 0.5 / sqrt(3.0)};
    assert_gradient(F64("e", "[3]", "[2, 3, 0.5]") I32("a", "[1]", "[0]") "p = Pow(x0, e)\ny = Sum(p, a)", 1,
                    TH_DIMS(3), base, want_b);
}

/* Prod: each element gets the product of the others, exactly, also when some are 0. */
static void test_prod_with_zeros(void)
{
    const double x[8] = {2, 0, 3, 4, 0, 5, 0, 6};
    /* rows (2, 0, 3, 4): the zero gets 24, the others 0; (0, 5, 0, 6): everything 0 */
    const double want[8] = {0, 24, 0, 0, 0, 0, 0, 0};
    assert_gradient(I32("a", "[1]", "[1]") I32("b", "[1]", "[0]") "p = Prod(x0, a)\ny = Sum(p, b)", 2,
                    TH_DIMS(2, 4), x, want);
    const double one[3] = {0, 7, 0.5}, want_one[3] = {3.5, 0, 0};
    assert_gradient(I32("a", "[]", "[0]") "y = Prod(x0, a)", 1, TH_DIMS(3), one, want_one);
}

/* d/dx of sum(d/dx sum(op(x))): the elementwise second derivative of activation op, through
 * tide_gradients applied twice (the gradient ops' own gradients). NULL on failure. */
static tide_tensor *second_derivative_of(const char *op, int64_t n, const double *values)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    char text[256];
    snprintf(text, sizeof text, "x = Placeholder(dtype=float64, shape=[%lld])\ny = %s(x)", (long long)n, op);
    tide_tensor *x = th_f64(1, &n, values), *d2x = NULL;
    tide_output y, x_out, dx, ddx;
    tide_session *sess = NULL;
    if (tide_graph_extend_text(g, text, err) == TIDE_OK && tide_graph_output(g, "y", &y, err) == TIDE_OK &&
        tide_graph_output(g, "x", &x_out, err) == TIDE_OK &&
        tide_gradients(g, &y, 1, &x_out, 1, NULL, &dx, err) == TIDE_OK &&
        tide_gradients(g, &dx, 1, &x_out, 1, NULL, &ddx, err) == TIDE_OK && ddx.node &&
        (sess = tide_session_new(th_engine(), g, NULL, err)))
        tide_session_run(sess, NULL, &(tide_feed){x_out, x}, 1, &ddx, 1, &d2x, NULL, 0, NULL, err);
    if (tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "\nsecond_derivative_of(%s) failed: %s\n", op, tide_error_message(err));
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
    tide_tensor_release(x);
    return d2x;
}

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* Second derivatives of the activations against their closed forms, at moderate and saturated
 * values (away from the kinks of Relu, Relu6 and Elu, where they are 0 or undefined). */
static void test_second_derivatives(void)
{
    static const char *const ops[] = {"Relu", "Relu6", "Elu", "Softplus", "Sigmoid", "Tanh"};
    const double x[8] = {-30, -3.5, -1.2, -0.3, 0.4, 2.5, 7, 25};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        double want[8];
        for (int i = 0; i < 8; i++) {
            double s = sigmoid(x[i]), t = tanh(x[i]);
            switch (k) {
            case 0: case 1: want[i] = 0; break;                   /* piecewise linear */
            case 2: want[i] = x[i] < 0 ? exp(x[i]) : 0; break;    /* Elu */
            case 3: want[i] = s * (1 - s); break;                 /* Softplus */
            case 4: want[i] = s * (1 - s) * (1 - 2 * s); break;   /* Sigmoid */
            default: want[i] = -2 * t * (1 - t * t); break;       /* Tanh */
            }
        }
        tide_tensor *got = second_derivative_of(ops[k], 8, x);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        tide_tensor *expected = th_f64(1, TH_DIMS(8), want);
        TH_ASSERT_CLOSE(got, expected, 1e-10, 1e-12);
        tide_tensor_release(got);
        tide_tensor_release(expected);
    }
}

/* Cast: no gradient flows through an integer cast; between floats it comes back in the source dtype. */
static void test_cast_gradients(void)
{
    tide_tensor *none = gradient_of("i = Cast(x0, DstT=int32)\ny = Cast(i, DstT=float64)", 1, TH_DIMS(2),
                                    (const double[]){1.5, -2});
    CU_ASSERT_PTR_NULL(none);
    tide_tensor_release(none);
    tide_tensor *dx = gradient_of("f = Cast(x0, DstT=float32)\nh = Cast(f, DstT=float16)\n"
                                  "y = Cast(h, DstT=float64)", 1, TH_DIMS(2), (const double[]){1.5, -2});
    CU_ASSERT_PTR_NOT_NULL_FATAL(dx);
    CU_ASSERT_EQUAL(tide_tensor_dtype(dx), TIDE_FLOAT64);
    CU_ASSERT_DOUBLE_EQUAL(tide_tensor_get_f64(dx, 0), 1, 0);
    tide_tensor_release(dx);
}

/* ---------------------------------------------------------------- lean gradient graphs */

/* How many nodes of op were added to g since it had `from` nodes. */
static int count_new(const tide_graph *g, int from, const char *op)
{
    int n = 0;
    for (int i = from; i < tide_graph_num_nodes(g); i++)
        n += strcmp(tide_node_op(tide_graph_node_at(g, i)), op) == 0;
    return n;
}

/* Builds text, differentiates y with respect to the placeholders named, returns the graph (the
 * caller frees it) and the node count before tide_gradients in *before. */
static tide_graph *differentiate(const char *text, const char *const *xs, int nx, int *before)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_output y, in[4], d[4];
    for (int i = 0; i < nx; i++)
        in[i] = (tide_output){NULL, 0};
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, text, err), TIDE_OK);
    CU_ASSERT_EQUAL_FATAL(tide_graph_output(g, "y", &y, err), TIDE_OK);
    for (int i = 0; i < nx; i++)
        in[i] = (tide_output){tide_graph_node(g, xs[i]), 0};
    *before = tide_graph_num_nodes(g);
    if (tide_gradients(g, &y, 1, in, nx, NULL, d, err) != TIDE_OK)
        fprintf(stderr, "\ndifferentiate: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_OK);
    tide_error_free(err);
    return g;
}

/* Only the inputs that want a gradient get ops; known shapes make constants, not Shape ops. */
static void test_gradients_are_lean(void)
{
    int before;
    const char *a[] = {"a"}, *x[] = {"x"};
    tide_graph *g = differentiate("a = Placeholder(dtype=float32, shape=[2, 3])\n"
                                  "b = Placeholder(dtype=float32, shape=[3, 4])\ny = MatMul(a, b)", a, 1,
                                  &before);
    CU_ASSERT_EQUAL(count_new(g, before, "MatMul"), 1); /* da only; nothing for b */
    tide_graph_free(g);
    g = differentiate("x = Placeholder(dtype=float32, shape=[2, 3])\n" F64("unused", "[]", "[0]")
                      I32("ax", "[1]", "[1]") "y = Sum(x, ax)", x, 1, &before);
    CU_ASSERT_EQUAL(count_new(g, before, "Shape"), 0);
    CU_ASSERT_EQUAL(count_new(g, before, "ReducedShape"), 0);
    CU_ASSERT_EQUAL(count_new(g, before, "BroadcastTo"), 1);
    tide_graph_free(g);
    g = differentiate("x = Placeholder(dtype=float32, shape=[?, 3])\n" I32("ax", "[1]", "[1]")
                      "y = Sum(x, ax)", x, 1, &before);
    CU_ASSERT_EQUAL(count_new(g, before, "ReducedShape"), 1); /* the batch is only known at run time */
    tide_graph_free(g);
    g = differentiate("x = Placeholder(dtype=float32, shape=[?, 3])\n" I32("ax", "[1]", "[0]")
                      "y = Mean(x, ax)", x, 1, &before);
    CU_ASSERT_EQUAL(count_new(g, before, "ReducedShape"), 0); /* the unknown dim is the reduced one */
    tide_graph_free(g);
    g = differentiate("x = Placeholder(dtype=float32, shape=[2, 3])\n" F64("c", "[]", "[2]")
                      "m = Cast(x, DstT=float64)\ny = Mul(m, c)", x, 1, &before);
    CU_ASSERT_EQUAL(count_new(g, before, "Mul"), 1); /* nothing for the constant */
    CU_ASSERT_EQUAL(count_new(g, before, "Shape"), 0);
    tide_graph_free(g);
    g = differentiate("x = Placeholder(dtype=float32, shape=[4, 3])\n" I32("i", "[2]", "[3, 1]")
                      I32("p", "[2]", "[1, 0]") I32("a", "[]", "[1]")
                      "t = Transpose(x, p)\ny = GatherV2(t, i, a)", x, 1, &before);
    CU_ASSERT_EQUAL(count_new(g, before, "InvertPermutation"), 0); /* a constant perm is inverted here */
    CU_ASSERT_EQUAL(count_new(g, before, "UnsortedSegmentSum"), 1);
    tide_graph_free(g);
}

/* A gradient that needs a rank unknown at graph time says so, and leaves the graph as it was. */
static void test_gradient_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "x = Placeholder(dtype=float64)\n"
                                                 "m = Placeholder(dtype=int32)\ny = Tile(x, m)", err), TIDE_OK);
    int before = tide_graph_num_nodes(g);
    tide_output y = {tide_graph_node(g, "y"), 0}, x = {tide_graph_node(g, "x"), 0}, d;
    CU_ASSERT_EQUAL(tide_gradients(g, &y, 1, &x, 1, NULL, &d, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "rank"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "Tile"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "c = Placeholder(dtype=complex128, shape=[2])\n"
                                                 "z = Mul(c, c)", err), TIDE_OK);
    tide_output z = {tide_graph_node(g, "z"), 0}, c = {tide_graph_node(g, "c"), 0};
    CU_ASSERT_EQUAL(tide_gradients(g, &z, 1, &c, 1, NULL, &d, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "complex"));
    /* GatherV2: an axis known only at run time, batch dims */
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "p = Placeholder(dtype=float64, shape=[2, 3])\n"
                                                 "i = Placeholder(dtype=int32, shape=[2, 2])\n"
                                                 "a = Placeholder(dtype=int32, shape=[])\n"
                                                 "g1 = GatherV2(p, i, a)\n"
                                                 "one = Const(value=tensor(int32, [], [1]), dtype=int32)\n"
                                                 "g2 = GatherV2(p, i, one, batch_dims=1)", err), TIDE_OK);
    tide_output p = {tide_graph_node(g, "p"), 0}, g1 = {tide_graph_node(g, "g1"), 0};
    tide_output g2 = {tide_graph_node(g, "g2"), 0};
    CU_ASSERT_EQUAL(tide_gradients(g, &g1, 1, &p, 1, NULL, &d, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "needs its axis as a constant"));
    CU_ASSERT_EQUAL(tide_gradients(g, &g2, 1, &p, 1, NULL, &d, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "batch_dims 1 is not implemented"));
    /* PreventGradient refuses, with its message */
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "pg = PreventGradient(p, message=\"no second derivative\")\n"
                                                 "pgs = Square(pg)", err), TIDE_OK);
    tide_output pgs = {tide_graph_node(g, "pgs"), 0};
    CU_ASSERT_EQUAL(tide_gradients(g, &pgs, 1, &p, 1, NULL, &d, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "a gradient flows through PreventGradient: no "
                                                           "second derivative"));
    tide_graph_free(g);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- the ops that exist for gradients */

static const tide_dtype FLOAT_TYPES[] = {TIDE_FLOAT32, TIDE_FLOAT64};

static double *random_doubles(int64_t n, double lo, double hi)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = th_rand(lo, hi);
    return v;
}

/* The position of row-major element i in dims. */
static void unflatten(int64_t i, int rank, const int64_t *dims, int64_t *pos)
{
    for (int d = rank - 1; d >= 0; d--) {
        pos[d] = i % dims[d];
        i /= dims[d];
    }
}

static void test_broadcast_to(void)
{
    const int64_t in_dims[3] = {3, 1, 2}, out_dims[4] = {2, 3, 4, 2};
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64};
    double *v = random_doubles(6, -50, 50);
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        tide_tensor *in[2] = {th_from_doubles(types[t], 3, in_dims, v, 0),
                              th_i32(1, TH_DIMS(4), (const int32_t[]){2, 3, 4, 2})};
        tide_tensor *got = th_run1("BroadcastTo", in, 2, NULL);
        double want[48];
        int64_t pos[4];
        for (int64_t i = 0; i < 48; i++) { /* out[a, b, c, d] = in[b, 0, d] */
            unflatten(i, 4, out_dims, pos);
            want[i] = tide_tensor_get_f64(in[0], pos[1] * 2 + pos[3]);
        }
        tide_tensor *expected = th_from_doubles(types[t], 4, out_dims, want, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        TH_ASSERT_CLOSE(got, expected, 0, 0);
        tide_tensor_release(got);
        tide_tensor_release(expected);
        tide_tensor_release(in[0]);
        tide_tensor_release(in[1]);
    }
    free(v);
    /* a scalar; leading size-1 dims only (a view); an empty target */
    tide_tensor *in[2] = {th_f64(0, NULL, (const double[]){2.5}),
                          th_i64(1, TH_DIMS(2), (const int64_t[]){2, 2})};
    tide_tensor *got = th_run1("BroadcastTo", in, 2, NULL);
    tide_tensor *want = th_f64(2, TH_DIMS(2, 2), (const double[]){2.5, 2.5, 2.5, 2.5});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[0]), tide_tensor_release(in[1]);
    in[0] = th_f32(1, TH_DIMS(3), (const float[]){1, 2, 3});
    in[1] = th_i32(1, TH_DIMS(3), (const int32_t[]){1, 1, 3});
    got = th_run1("BroadcastTo", in, 2, NULL);
    want = th_f32(3, TH_DIMS(1, 1, 3), (const float[]){1, 2, 3});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[1]);
    in[1] = th_i32(1, TH_DIMS(2), (const int32_t[]){0, 3});
    got = th_run1("BroadcastTo", in, 2, NULL);
    CU_ASSERT_PTR_NOT_NULL(got);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(0, 3));
    tide_tensor_release(got), tide_tensor_release(in[1]);
    in[1] = th_i32(1, TH_DIMS(2), (const int32_t[]){2, 4});
    TH_ASSERT_FAILS("BroadcastTo", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "cannot broadcast a tensor of shape [3] to shape [2, 4]");
    tide_tensor_release(in[1]);
    in[1] = th_i32(1, TH_DIMS(2), (const int32_t[]){-1, 3});
    TH_ASSERT_FAILS("BroadcastTo", in, 2, NULL, TIDE_INVALID_ARGUMENT, "negative size");
    tide_tensor_release(in[1]);
    tide_tensor_release(in[0]);
    /* at graph time: a constant target gives the exact shape, a wrong one fails there */
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, "x = Placeholder(dtype=float32, shape=[?, 1])\n"
                                           I32("s", "[3]", "[5, 2, 4]") "y = BroadcastTo(x, s)", err), TIDE_OK);
    tide_shape s = tide_node_output_shape(tide_graph_node(g, "y"), 0);
    CU_ASSERT(s.rank == 3 && s.dims[0] == 5 && s.dims[1] == 2 && s.dims[2] == 4);
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, I32("t", "[1]", "[4]") "z = BroadcastTo(y, t)", err),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "more dimensions"));
    tide_graph_free(g);
    tide_error_free(err);
}

static void test_reduced_shape(void)
{
    tide_tensor *in[2] = {th_i32(1, TH_DIMS(3), (const int32_t[]){2, 3, 4}),
                          th_i64(1, TH_DIMS(2), (const int64_t[]){0, -1})};
    tide_tensor *got = th_run1("ReducedShape", in, 2, NULL);
    tide_tensor *want = th_i32(1, TH_DIMS(3), (const int32_t[]){1, 3, 1});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[1]);
    in[1] = th_i32(0, NULL, (const int32_t[]){3});
    TH_ASSERT_FAILS("ReducedShape", in, 2, NULL, TIDE_INVALID_ARGUMENT, "axis 3 is out of range");
    tide_tensor_release(in[1]), tide_tensor_release(in[0]);
    in[0] = th_i64(1, TH_DIMS(2), (const int64_t[]){5, 6});
    in[1] = th_i32(1, TH_DIMS(0), NULL);
    got = th_run1("ReducedShape", in, 2, NULL);
    want = th_i64(1, TH_DIMS(2), (const int64_t[]){5, 6});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[1]), tide_tensor_release(in[0]);
}

/* ProdGrad against the product of the other members of each group, computed by brute force. */
static void test_prod_grad_kernel(void)
{
    const int64_t dims[3] = {2, 3, 2};
    for (size_t t = 0; t < 2; t++) {
        double *x = random_doubles(12, -2, 2), *g = random_doubles(3, -1, 1), want[12];
        x[4] = 0; /* a zero in group 2... */
        int64_t pi[3], pj[3];
        for (int64_t i = 0; i < 12; i++) { /* axes 0 and 2 reduced: the group is the middle index */
            unflatten(i, 3, dims, pi);
            double p = 1;
            for (int64_t j = 0; j < 12; j++) {
                unflatten(j, 3, dims, pj);
                if (j != i && pj[1] == pi[1])
                    p *= x[j];
            }
            want[i] = p * g[pi[1]];
        }
        tide_tensor *in[3] = {th_from_doubles(FLOAT_TYPES[t], 3, dims, x, 0),
                              th_i32(1, TH_DIMS(2), (const int32_t[]){0, -1}),
                              th_from_doubles(FLOAT_TYPES[t], 3, TH_DIMS(1, 3, 1), g, 0)};
        tide_tensor *got = th_run1("ProdGrad", in, 3, NULL);
        tide_tensor *expected = th_from_doubles(FLOAT_TYPES[t], 3, dims, want, 0);
        TH_ASSERT_CLOSE(got, expected, FLOAT_TYPES[t] == TIDE_FLOAT32 ? 1e-6 : 1e-14, 1e-7);
        tide_tensor_release(got), tide_tensor_release(expected), tide_tensor_release(in[2]);
        in[2] = th_from_doubles(FLOAT_TYPES[t], 1, TH_DIMS(2), g, 0);
        TH_ASSERT_FAILS("ProdGrad", in, 3, NULL, TIDE_INVALID_ARGUMENT, "grad has shape [2] (2 elements)");
        tide_tensor_release(in[1]);
        in[1] = th_i32(1, TH_DIMS(2), (const int32_t[]){0, 0});
        TH_ASSERT_FAILS("ProdGrad", in, 3, NULL, TIDE_INVALID_ARGUMENT, "repeated");
        for (int k = 0; k < 3; k++)
            tide_tensor_release(in[k]);
        free(x), free(g);
    }
}

static void test_unsorted_segment_sum(void)
{
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64};
    const int64_t ids[5] = {1, -1, 3, 1, 0};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        double *data = random_doubles(10, -20, 20), want[8] = {0};
        for (int i = 0; i < 10; i++)
            data[i] = round(data[i]); /* exact in every dtype */
        for (int i = 0; i < 5; i++)
            for (int e = 0; ids[i] >= 0 && e < 2; e++)
                want[ids[i] * 2 + e] += data[i * 2 + e];
        tide_tensor *in[3] = {th_from_doubles(types[t], 2, TH_DIMS(5, 2), data, 0), th_i64(1, TH_DIMS(5), ids),
                              th_i32(0, NULL, (const int32_t[]){4})};
        tide_tensor *got = th_run1("UnsortedSegmentSum", in, 3, NULL);
        tide_tensor *expected = th_from_doubles(types[t], 2, TH_DIMS(4, 2), want, 0);
        TH_ASSERT_CLOSE(got, expected, 0, 0);
        tide_tensor_release(got), tide_tensor_release(expected), tide_tensor_release(in[2]);
        in[2] = th_i32(0, NULL, (const int32_t[]){3});
        TH_ASSERT_FAILS("UnsortedSegmentSum", in, 3, NULL, TIDE_INVALID_ARGUMENT,
                        "segment_ids[2] (flat) = 3 is out of range: num_segments is 3");
        tide_tensor_release(in[2]);
        in[2] = th_i32(0, NULL, (const int32_t[]){-2});
        TH_ASSERT_FAILS("UnsortedSegmentSum", in, 3, NULL, TIDE_INVALID_ARGUMENT, "num_segments must be >= 0");
        tide_tensor_release(in[2]), tide_tensor_release(in[1]);
        in[1] = th_i32(1, TH_DIMS(4), (const int32_t[]){0, 0, 0, 0});
        in[2] = th_i32(0, NULL, (const int32_t[]){1});
        TH_ASSERT_FAILS("UnsortedSegmentSum", in, 3, NULL, TIDE_INVALID_ARGUMENT,
                        "must have a shape that begins");
        for (int k = 0; k < 3; k++)
            tide_tensor_release(in[k]);
        free(data);
    }
    /* ids of rank 2 over rank-3 data; no ids at all */
    tide_tensor *in[3] = {th_f64(3, TH_DIMS(2, 2, 1), (const double[]){1, 2, 3, 4}),
                          th_i32(2, TH_DIMS(2, 2), (const int32_t[]){1, 1, 0, 1}),
                          th_i32(0, NULL, (const int32_t[]){2})};
    tide_tensor *got = th_run1("UnsortedSegmentSum", in, 3, NULL);
    tide_tensor *want = th_f64(2, TH_DIMS(2, 1), (const double[]){3, 7});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[0]), tide_tensor_release(in[1]);
    in[0] = th_f64(2, TH_DIMS(0, 3), NULL);
    in[1] = th_i32(1, TH_DIMS(0), NULL);
    got = th_run1("UnsortedSegmentSum", in, 3, NULL);
    want = th_f64(2, TH_DIMS(2, 3), (const double[]){0, 0, 0, 0, 0, 0});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want);
    for (int k = 0; k < 3; k++)
        tide_tensor_release(in[k]);
}

typedef struct ss_spec {
    int rank;
    int64_t dims[4];
    int n;
    int32_t begin[4], end[4], strides[4];
    int64_t masks[5]; /* begin, end, ellipsis, new_axis, shrink_axis */
} ss_spec;

static tide_attrs *ss_attrs(const ss_spec *sp)
{
    static const char *const names[5] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                         "shrink_axis_mask"};
    tide_attrs *a = tide_attrs_new();
    for (int i = 0; i < 5; i++)
        tide_attrs_set_int(a, names[i], sp->masks[i]);
    return a;
}

/* StridedSliceGrad scatters dy exactly where StridedSlice reads: slicing an iota (element p holds
 * p) tells which input element each slice element is, independently of the gradient kernel. */
static void check_strided_slice_grad(const ss_spec *sp, tide_dtype dt)
{
    tide_shape s = tide_shape_make(sp->rank, sp->dims);
    int64_t n = tide_shape_num_elements(&s), rank = sp->rank, len = sp->n;
    double *iota = malloc((size_t)n * sizeof *iota);
    for (int64_t i = 0; i < n; i++)
        iota[i] = (double)i;
    tide_attrs *a = ss_attrs(sp);
    tide_tensor *spec[3] = {th_i32(1, &len, sp->begin), th_i32(1, &len, sp->end), th_i32(1, &len, sp->strides)};
    tide_tensor *x = th_from_doubles(TIDE_FLOAT64, sp->rank, sp->dims, iota, 0);
    tide_tensor *fwd[4] = {x, spec[0], spec[1], spec[2]};
    tide_tensor *where = th_run1("StridedSlice", fwd, 4, a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(where);
    int64_t m = tide_tensor_num_elements(where);
    double *dy = random_doubles(m, -1, 1), *want = calloc((size_t)n, sizeof *want);
    for (int64_t j = 0; j < m; j++)
        want[(int64_t)tide_tensor_get_f64(where, j)] += dy[j];
    tide_tensor *in[5] = {th_i32(1, &rank, NULL), spec[0], spec[1], spec[2],
                          th_from_doubles(dt, tide_tensor_rank(where), tide_tensor_shape(where)->dims, dy, 0)};
    for (int d = 0; d < sp->rank; d++)
        ((int32_t *)tide_tensor_data(in[0]))[d] = (int32_t)sp->dims[d];
    tide_tensor *got = th_run1("StridedSliceGrad", in, 5, a);
    tide_tensor *expected = th_from_doubles(dt, sp->rank, sp->dims, want, 0);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    tide_tensor_release(in[4]);
    in[4] = th_tensor(dt, 1, TH_DIMS(m + 1), NULL); /* one element too many */
    TH_ASSERT_FAILS("StridedSliceGrad", in, 5, a, TIDE_INVALID_ARGUMENT, "dy has shape");
    tide_tensor_release(got), tide_tensor_release(expected), tide_tensor_release(where), tide_tensor_release(x);
    for (int k = 0; k < 5; k++)
        tide_tensor_release(in[k]);
    tide_attrs_free(a);
    free(iota), free(dy), free(want);
}

static void test_strided_slice_grad(void)
{
    static const ss_spec specs[] = {
        {2, {4, 5}, 2, {1, 0}, {3, 5}, {1, 2}, {0}},                    /* x[1:3, ::2] */
        {2, {4, 5}, 2, {0, 4}, {0, 0}, {-1, -2}, {1, 1, 0, 0, 0}},      /* x[::-1, 4:0:-2] */
        {2, {4, 5}, 3, {2, 0, 1}, {3, 0, 4}, {1, 1, 1}, {0, 0, 0, 2, 1}}, /* x[2, None, 1:4] */
        {3, {2, 3, 4}, 2, {0, 1}, {0, 2}, {1, 1}, {0, 0, 1, 0, 2}},     /* x[..., 1] */
        {3, {2, 3, 4}, 1, {-10}, {10}, {1}, {0}},                      /* clamped */
        {2, {3, 3}, 2, {2, 0}, {1, 3}, {1, 1}, {0}},                    /* empty: 2:1 */
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t t = 0; t < 2; t++)
            check_strided_slice_grad(&specs[i], FLOAT_TYPES[t]);
    /* one by hand: x[1:4:2, ::-2] of a [4, 3] */
    tide_tensor *in[5] = {th_i32(1, TH_DIMS(2), (const int32_t[]){4, 3}),
                          th_i32(1, TH_DIMS(2), (const int32_t[]){1, 0}),
                          th_i32(1, TH_DIMS(2), (const int32_t[]){4, 0}),
                          th_i32(1, TH_DIMS(2), (const int32_t[]){2, -2}),
                          th_f32(2, TH_DIMS(2, 2), (const float[]){1, 2, 3, 4})};
    ss_spec sp = {.masks = {2, 2, 0, 0, 0}};
    tide_attrs *a = ss_attrs(&sp);
    tide_tensor *got = th_run1("StridedSliceGrad", in, 5, a);
    tide_tensor *want = th_f32(2, TH_DIMS(4, 3), (const float[]){0, 0, 0, 2, 0, 1, 0, 0, 0, 4, 0, 3});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in[3]);
    in[3] = th_i32(1, TH_DIMS(2), (const int32_t[]){2, 0});
    TH_ASSERT_FAILS("StridedSliceGrad", in, 5, a, TIDE_INVALID_ARGUMENT, "strides[1] must be non-zero");
    for (int k = 0; k < 5; k++)
        tide_tensor_release(in[k]);
    tide_attrs_free(a);
}

static void test_concat_offset(void)
{
    tide_tensor *in[4] = {th_i32(0, NULL, (const int32_t[]){-2}),
                          th_i32(1, TH_DIMS(3), (const int32_t[]){2, 3, 4}),
                          th_i32(1, TH_DIMS(3), (const int32_t[]){2, 5, 4}),
                          th_i32(1, TH_DIMS(3), (const int32_t[]){2, 1, 4})};
    tide_tensor *out[3] = {NULL};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(th_run("ConcatOffset", in, 4, NULL, out, 3, err), TIDE_OK);
    const int32_t want[3][3] = {{0, 0, 0}, {0, 3, 0}, {0, 8, 0}};
    for (int i = 0; i < 3; i++) {
        tide_tensor *w = th_i32(1, TH_DIMS(3), want[i]);
        TH_ASSERT_CLOSE(out[i], w, 0, 0);
        tide_tensor_release(w), tide_tensor_release(out[i]);
    }
    tide_tensor_release(in[2]);
    in[2] = th_i32(1, TH_DIMS(3), (const int32_t[]){3, 5, 4});
    TH_ASSERT_FAILS("ConcatOffset", in, 4, NULL, TIDE_INVALID_ARGUMENT,
                    "shape 1 [3, 5, 4] does not match shape 0 [2, 3, 4]");
    tide_tensor_release(in[0]);
    in[0] = th_i32(0, NULL, (const int32_t[]){3});
    TH_ASSERT_FAILS("ConcatOffset", in, 4, NULL, TIDE_OUT_OF_RANGE, "concat_dim 3 is out of range");
    for (int k = 0; k < 4; k++)
        tide_tensor_release(in[k]);
    tide_error_free(err);
}

static void test_invert_permutation(void)
{
    tide_tensor *in = th_i32(1, TH_DIMS(4), (const int32_t[]){2, 0, 3, 1});
    tide_tensor *got = th_run1("InvertPermutation", &in, 1, NULL);
    tide_tensor *want = th_i32(1, TH_DIMS(4), (const int32_t[]){1, 3, 0, 2});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in);
    in = th_i64(1, TH_DIMS(3), (const int64_t[]){0, 2, 1});
    got = th_run1("InvertPermutation", &in, 1, NULL);
    want = th_i64(1, TH_DIMS(3), (const int64_t[]){0, 2, 1});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got), tide_tensor_release(want), tide_tensor_release(in);
    in = th_i32(1, TH_DIMS(3), (const int32_t[]){0, 2, 2});
    TH_ASSERT_FAILS("InvertPermutation", &in, 1, NULL, TIDE_INVALID_ARGUMENT,
                    "x[2] = 2: x is not a permutation of 0..2 (repeated)");
    tide_tensor_release(in);
    in = th_i32(1, TH_DIMS(2), (const int32_t[]){0, 5});
    TH_ASSERT_FAILS("InvertPermutation", &in, 1, NULL, TIDE_INVALID_ARGUMENT, "out of range");
    tide_tensor_release(in);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_every_gradient_has_a_case),
        TH_TEST(test_math_gradients),
        TH_TEST(test_array_gradients),
        TH_TEST(test_reduce_gradients),
        TH_TEST(test_linalg_gradients),
        TH_TEST(test_nn_gradients),
        TH_TEST(test_conv_gradients), TH_TEST(test_control_flow_gradients),
        TH_TEST(test_reduction_ties),
        TH_TEST(test_elementwise_ties),
        TH_TEST(test_pow_at_nonpositive_base),
        TH_TEST(test_prod_with_zeros),
        TH_TEST(test_cast_gradients),
        TH_TEST(test_second_derivatives),
        TH_TEST(test_gradients_are_lean),
        TH_TEST(test_gradient_errors),
        TH_TEST(test_broadcast_to),
        TH_TEST(test_reduced_shape),
        TH_TEST(test_prod_grad_kernel),
        TH_TEST(test_unsorted_segment_sum),
        TH_TEST(test_strided_slice_grad),
        TH_TEST(test_concat_offset),
        TH_TEST(test_invert_permutation),
        TH_END,
    };
    return th_main("gradcheck", tests);
}
