/* state_ops.c — definitions of variables and their updates: Variable, Assign, AssignAdd, AssignSub.
 * A Variable's output is its current value; Assign* take the variable through a Ref input, which must
 * come straight from a Variable node (the placer keeps them on one device). */
#include "../internal.h"

static tide_status variable_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_unknown();
    tide_attrs_get_shape(tide_shape_attrs(ctx), "shape", &s);
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static tide_status assign_shape(tide_shape_ctx *ctx)
{
    tide_shape ref = tide_shape_input(ctx, 0), value = tide_shape_input(ctx, 1);
    bool validate = true;
    tide_attrs_get_bool(tide_shape_attrs(ctx), "validate_shape", &validate);
    if (validate && !tide_shape_compatible(&ref, &value)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot assign a value of shape %s to a variable of shape %s",
                                tide_shape_format(&value, a, sizeof a), tide_shape_format(&ref, b, sizeof b));
    }
    tide_shape_set_output(ctx, 0, &value);
    return TIDE_OK;
}

static tide_status assign_update_shape(tide_shape_ctx *ctx)
{
    tide_shape ref = tide_shape_input(ctx, 0), value = tide_shape_input(ctx, 1);
    if (!tide_shape_compatible(&ref, &value)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "update of shape %s does not match the variable's shape %s",
                                tide_shape_format(&value, a, sizeof a), tide_shape_format(&ref, b, sizeof b));
    }
    tide_shape_set_output(ctx, 0, ref.rank >= 0 ? &ref : &value);
    return TIDE_OK;
}

static void register_state_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Variable",
        .outputs = {"ref: dtype"},
        .attrs = {"shape: shape = *", "dtype: type", "container: string = ''", "shared_name: string = ''"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = variable_shape,
        .doc = "A persistent tensor that outlives runs; its output is the current value. It lives in "
               "the engine's container named by container ('' the default) under shared_name (the "
               "node name if empty), so sessions naming the same variable share it.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Assign",
        .inputs = {"ref: Ref(T)", "value: T"},
        .outputs = {"output_ref: T"},
        .attrs = {"T: alltypes", "validate_shape: bool = true", "use_locking: bool = true"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = assign_shape,
        .doc = "Sets the variable to value and outputs the new value. With validate_shape the value "
               "must match the variable's declared shape.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "AssignAdd",
        .inputs = {"ref: Ref(T)", "value: T"},
        .outputs = {"output_ref: T"},
        .attrs = {"T: numbertype", "use_locking: bool = true"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = assign_update_shape,
        .doc = "Adds value to the variable (same shape) and outputs the new value.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "AssignSub",
        .inputs = {"ref: Ref(T)", "value: T"},
        .outputs = {"output_ref: T"},
        .attrs = {"T: numbertype", "use_locking: bool = true"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = assign_update_shape,
        .doc = "Subtracts value from the variable (same shape) and outputs the new value.",
    });
}
TIDE_REGISTER(register_state_ops)
