/* loop_stack_ops.c — definitions of the stacks that carry a loop's forward values to its gradient
 * (engine/grads/while_grad.c makes them; users do not, as the leading '_' says). The forward loop
 * pushes a value with the index of its iteration; the gradient loop, running the iterations in
 * reverse, pops each by that index. Indexed rather than last-in-first-out, so iterations that run in
 * parallel may push in any order. A value that was dead in its iteration (a branch not taken) is
 * popped as dead. Kernels: kernels/cpu/loop_stack.c. */
#include "../internal.h"

static tide_status pop_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_unknown();
    tide_attrs_get_shape(tide_shape_attrs(ctx), "shape", &s); /* the forward value's, as inferred */
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static void register_loop_stack_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "_LoopStack",
        .outputs = {"handle: int64"},
        .attrs = {"elem_type: type", "stack_name: string = ''"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = tide_shape_fn_scalar,
        .doc = "Internal (made by the gradient of a while loop): a new, empty stack of elem_type tensors "
               "for one run, indexed by iteration; handle names it (an int64 scalar that is only meaningful "
               "to _LoopStackPush and _LoopStackPop).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "_LoopStackPush",
        .inputs = {"handle: int64", "index: int32", "value: T"},
        .attrs = {"T: alltypes"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Internal (made by the gradient of a while loop): keeps value at index (the forward "
               "iteration); a dead value is kept as dead; does nothing when index is dead (an iteration "
               "that does not run the body).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "_LoopStackPop",
        .inputs = {"handle: int64", "index: int32"},
        .outputs = {"value: elem_type"},
        .attrs = {"elem_type: type", "shape: shape = *"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = pop_shape,
        .doc = "Internal (made by the gradient of a while loop): the value pushed at index, removed from "
               "the stack (dead if it was dead). Fails when nothing was pushed there.",
    });
}
TIDE_REGISTER(register_loop_stack_ops)
