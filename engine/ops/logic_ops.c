/* logic_ops.c — definitions of comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual),
 * logical ops (LogicalAnd, LogicalOr, LogicalNot), the float classifications IsNan, IsInf and
 * IsFinite, Select, SelectV2 and Cast. Binary ops broadcast NumPy-style; SelectV2 broadcasts all three operands, Select is TensorFlow 1.x's (one shape, or a
 * vector condition picking whole rows). */
#include <stdio.h>

#include "../tide_op.h"
#include "logic_ops.h"

/* Equal/NotEqual: with incompatible_shape_error=false, shapes that cannot broadcast give a scalar, so
 * a partially known pair may end up either way (unknown shape). */
static tide_status equality_shape(tide_shape_ctx *ctx)
{
    bool strict = true;
    tide_attrs_get_bool(tide_shape_attrs(ctx), "incompatible_shape_error", &strict);
    if (strict)
        return tide_shape_fn_broadcast(ctx);
    tide_shape a = tide_shape_input(ctx, 0), b = tide_shape_input(ctx, 1), o;
    if (!tide_shape_broadcast(&a, &b, &o))
        o = tide_shape_scalar();
    else if (!tide_shape_is_fully_defined(&a) || !tide_shape_is_fully_defined(&b))
        o = tide_shape_unknown();
    tide_shape_set_output(ctx, 0, &o);
    return TIDE_OK;
}

/* a and b may be the same shape (unknown ranks and dims fit anything). */
static bool same_shape_fits(const tide_shape *a, const tide_shape *b)
{
    if (a->rank < 0 || b->rank < 0)
        return true;
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d])
            return false;
    return true;
}

bool tide_logic_select_shapes_fit(const tide_shape *c, const tide_shape *t, const tide_shape *e,
                                  char *msg, size_t size)
{
    char sc[TIDE_SHAPE_STR_MAX], st[TIDE_SHAPE_STR_MAX], se[TIDE_SHAPE_STR_MAX];
    tide_shape_format(c, sc, sizeof sc);
    tide_shape_format(t, st, sizeof st);
    tide_shape_format(e, se, sizeof se);
    if (!same_shape_fits(t, e))
        return snprintf(msg, size, "t %s and e %s must have the same shape (Select does not "
                        "broadcast; SelectV2 does)", st, se), false;
    if (c->rank <= 0 || same_shape_fits(c, t))
        return true;
    const tide_shape *data = t->rank >= 0 ? t : e;
    if (c->rank == 1 && data->rank >= 1 &&
        (c->dims[0] < 0 || data->dims[0] < 0 || c->dims[0] == data->dims[0]))
        return true;
    return snprintf(msg, size, "condition %s must be a scalar, have the shape of t %s, or be a vector "
                    "as long as t's first dimension (picking whole rows); SelectV2 broadcasts",
                    sc, st), false;
}

/* Select (1.x): the merge of t's and e's shapes (and the condition's when it has their rank). */
static tide_status select_v1_shape(tide_shape_ctx *ctx)
{
    tide_shape c = tide_shape_input(ctx, 0), t = tide_shape_input(ctx, 1), e = tide_shape_input(ctx, 2);
    char msg[512];
    if (!tide_logic_select_shapes_fit(&c, &t, &e, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape o = t.rank >= 0 ? t : e;
    for (int d = 0; d < o.rank; d++) {
        if (o.dims[d] < 0 && e.rank == o.rank)
            o.dims[d] = e.dims[d];
        if (o.dims[d] < 0 && (c.rank == o.rank || (c.rank == 1 && d == 0)))
            o.dims[d] = c.dims[d];
    }
    tide_shape_set_output(ctx, 0, &o);
    return TIDE_OK;
}

static tide_status select_shape(tide_shape_ctx *ctx)
{
    tide_shape c = tide_shape_input(ctx, 0), t = tide_shape_input(ctx, 1),
               e = tide_shape_input(ctx, 2), ct, o;
    if (!tide_shape_broadcast(&c, &t, &ct) || !tide_shape_broadcast(&ct, &e, &o)) {
        char sc[TIDE_SHAPE_STR_MAX], st[TIDE_SHAPE_STR_MAX], se[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "condition %s, t %s and e %s do not broadcast to one shape",
                                tide_shape_format(&c, sc, sizeof sc), tide_shape_format(&t, st, sizeof st),
                                tide_shape_format(&e, se, sizeof se));
    }
    tide_shape_set_output(ctx, 0, &o);
    return TIDE_OK;
}

static void register_comparison(const char *name, const char *types, unsigned flags, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T", "y: T"},
        .outputs = {"z: bool"},
        .attrs = {types},
        .flags = flags,
        .shape_fn = tide_shape_fn_broadcast,
        .doc = doc,
    });
}

static void register_equality(const char *name, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"x: T", "y: T"},
        .outputs = {"z: bool"},
        .attrs = {"T: alltypes", "incompatible_shape_error: bool = true"},
        .flags = TIDE_OP_COMMUTATIVE,
        .shape_fn = equality_shape,
        .doc = doc,
    });
}

#define ORDERING_DOC(what)                                                                         \
    "Returns the truth value of " what " element-wise, with NumPy broadcasting. Real numbers "       \
    "only: integers compare exactly in their own type (int64 too, never through float); floats, "   \
    "float16 and bfloat16 included, as IEEE values: NaN compares false, -0 equals +0. Shapes that " \
    "do not broadcast are an INVALID_ARGUMENT error."

static void register_logic_ops(void)
{
    register_equality("Equal",
                      "Returns the truth value of (x == y) element-wise, with NumPy broadcasting. Every "
                      "dtype: integers compare exactly, floats as IEEE values (NaN is unequal to "
                      "everything, -0 equals +0), complex numbers part by part, strings byte by byte, bools "
                      "as truth values. Shapes that do not broadcast are an INVALID_ARGUMENT error, unless "
                      "incompatible_shape_error=false: then the result is the scalar false.");
    register_equality("NotEqual",
                      "Returns the truth value of (x != y) element-wise, with NumPy broadcasting: exactly "
                      "the negation of Equal (NaN != anything is true). Shapes that do not broadcast are an "
                      "INVALID_ARGUMENT error, unless incompatible_shape_error=false: then the result is "
                      "the scalar true.");
    register_comparison("Less", "T: realnumbertype", 0, ORDERING_DOC("(x < y)"));
    register_comparison("LessEqual", "T: realnumbertype", 0, ORDERING_DOC("(x <= y)"));
    register_comparison("Greater", "T: realnumbertype", 0, ORDERING_DOC("(x > y)"));
    register_comparison("GreaterEqual", "T: realnumbertype", 0, ORDERING_DOC("(x >= y)"));
    tide_op_register(&(tide_op_spec){
        .name = "LogicalAnd",
        .inputs = {"x: bool", "y: bool"},
        .outputs = {"z: bool"},
        .flags = TIDE_OP_COMMUTATIVE,
        .shape_fn = tide_shape_fn_broadcast,
        .doc = "Returns the truth value of (x AND y) element-wise, with NumPy broadcasting (any "
               "non-zero byte counts as true). Shapes that do not broadcast are an INVALID_ARGUMENT "
               "error.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "LogicalOr",
        .inputs = {"x: bool", "y: bool"},
        .outputs = {"z: bool"},
        .flags = TIDE_OP_COMMUTATIVE,
        .shape_fn = tide_shape_fn_broadcast,
        .doc = "Returns the truth value of (x OR y) element-wise, with NumPy broadcasting (any "
               "non-zero byte counts as true). Shapes that do not broadcast are an INVALID_ARGUMENT "
               "error.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "LogicalNot",
        .inputs = {"x: bool"},
        .outputs = {"y: bool"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Returns the truth value of (NOT x) element-wise (any non-zero byte counts as true).",
    });
    static const struct {
        const char *name, *doc;
    } classifications[] = {
        {"IsNan", "Returns which elements of x are nan, element-wise (either sign, any payload)."},
        {"IsInf", "Returns which elements of x are inf or -inf, element-wise."},
        {"IsFinite", "Returns which elements of x are finite (neither inf, -inf nor nan), "
                     "element-wise: what tf.math.reduce_logsumexp and tf.debugging.check_numerics "
                     "build on."},
    };
    for (size_t i = 0; i < sizeof classifications / sizeof classifications[0]; i++)
        tide_op_register(&(tide_op_spec){
            .name = classifications[i].name,
            .inputs = {"x: T"},
            .outputs = {"y: bool"},
            .attrs = {"T: {float16, bfloat16, float32, float64}"},
            .shape_fn = tide_shape_fn_unchanged,
            .doc = classifications[i].doc,
        });
    tide_op_register(&(tide_op_spec){
        .name = "Select",
        .inputs = {"condition: bool", "t: T", "e: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = select_v1_shape,
        .doc = "Picks from t where condition is true and from e where it is false, as TensorFlow "
               "1.x's Select (tf.where with three arguments): t and e must have the same shape, and "
               "the condition is a scalar (choosing all of t or all of e), has their shape (choosing "
               "element by element), or is a vector as long as their first dimension, which picks "
               "whole rows: Select([T, F, T], A, B) with 3x3 A and B takes rows 0 and 2 of A and row 1 "
               "of B. Anything else is an INVALID_ARGUMENT error naming the shapes (SelectV2 "
               "broadcasts). Every dtype; values are copied bit for bit (any non-zero condition byte "
               "counts as true); a scalar condition passes the chosen operand on without a copy.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "SelectV2",
        .inputs = {"condition: bool", "t: T", "e: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = select_shape,
        .doc = "Picks elements from t where condition is true and from e where it is false; the three "
               "operands broadcast NumPy-style to the output's shape (tf.where_v2). Every dtype; values "
               "are copied bit for bit (any non-zero condition byte counts as true). A single "
               "condition passes the chosen operand on without a copy when it has the output's "
               "shape. Shapes that do not broadcast are an INVALID_ARGUMENT error.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Cast",
        .inputs = {"x: SrcT"},
        .outputs = {"y: DstT"},
        .attrs = {"SrcT: alltypes", "DstT: alltypes", "Truncate: bool = false"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Converts x to dtype DstT, between any two dtypes (Truncate is accepted and ignored). "
               "Same dtype: x itself. Float to integer truncates toward zero and saturates at the "
               "target's limits, NaN gives 0; integer to integer of another width or signedness wraps "
               "(two's complement); anything to bool is x != 0 (NaN is true); to float16/bfloat16 "
               "rounds to nearest even once; complex to real keeps the real part, real to complex has "
               "imaginary part 0. Numbers become the shortest text that reads back the same (\"%.9g\" "
               "at most for float32, \"%.17g\" for float64, integers exactly, \"true\"/\"false\", "
               "\"(re+imj)\"); strings are parsed whole (surrounding white space allowed; integers "
               "within range; bool from true/false/1/0): text that is not such a number is an "
               "INVALID_ARGUMENT error naming the element's index and text.",
    });
}
TIDE_REGISTER(register_logic_ops)
