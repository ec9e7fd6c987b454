/* control_flow_ops.c — definitions of the control-flow ops of the white paper §4.4, as TensorFlow 1.x
 * names them: Switch and Merge (conditionals), Enter, Exit, NextIteration and LoopCond (loops).
 *
 * What they mean is the executor's business (engine/executor.c, engine/frames.c): a Switch forwards its
 * data to one output and makes the other *dead*; an op with a dead input does not run and its outputs
 * are dead too, except Merge, which forwards its first live input (and is dead only when all are);
 * Enter moves a value into a child execution frame (a loop), Exit back to the parent frame, and
 * NextIteration to the next iteration of the same frame (the back edge that closes a loop, the only
 * cycle a graph may have). The builders cond() and while_loop() (engine/control_flow.c) make them;
 * users rarely need to. Kernels: kernels/cpu/control_flow.c. */
#include "../internal.h"

static tide_status switch_shape(tide_shape_ctx *ctx)
{
    tide_shape pred = tide_shape_input(ctx, 1), data = tide_shape_input(ctx, 0);
    if (pred.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "pred must be a scalar, not shape %s",
                                tide_shape_format(&pred, (char[TIDE_SHAPE_STR_MAX]){0}, TIDE_SHAPE_STR_MAX));
    tide_shape_set_output(ctx, 0, &data);
    tide_shape_set_output(ctx, 1, &data);
    return TIDE_OK;
}

/* Merge's output: the shape every input satisfies (dimensions that differ become unknown). */
static tide_status merge_shape(tide_shape_ctx *ctx)
{
    tide_shape out = tide_shape_input(ctx, 0);
    for (int i = 1; i < tide_shape_num_inputs(ctx); i++) {
        tide_shape s = tide_shape_input(ctx, i);
        out = tide__shape_relax(&out, &s);
    }
    tide_shape_set_output(ctx, 0, &out);
    tide_shape scalar = tide_shape_scalar();
    tide_shape_set_output(ctx, 1, &scalar);
    return TIDE_OK;
}

static tide_status loop_cond_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_input(ctx, 0);
    if (s.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "a loop condition must be a scalar, not shape %s",
                                tide_shape_format(&s, (char[TIDE_SHAPE_STR_MAX]){0}, TIDE_SHAPE_STR_MAX));
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static tide_status enter_shape(tide_shape_ctx *ctx)
{
    const char *frame = NULL;
    if (!tide_attrs_get_string(tide_shape_attrs(ctx), "frame_name", &frame) || !frame[0])
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "an Enter needs a non-empty frame_name (the loop it enters)");
    return tide_shape_fn_unchanged(ctx);
}

static void register_control_flow_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Switch",
        .inputs = {"data: T", "pred: bool"},
        .outputs = {"output_false: T", "output_true: T"},
        .attrs = {"T: alltypes"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = switch_shape,
        .doc = "Forwards data to output_true when pred is true, else to output_false; the other output is "
               "dead, so the ops that read it (the branch not taken) do not run. cond() is built on it.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Merge",
        .inputs = {"inputs: N * T"},
        .outputs = {"output: T", "value_index: int32"},
        .attrs = {"T: alltypes", "N: int >= 1"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = merge_shape,
        .doc = "Forwards the first of its inputs that is alive (value_index says which) as soon as it "
               "arrives, without waiting for the others; dead only when every input is dead. Joins the "
               "branches of a cond, and the entry and back edge of a loop variable.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Enter",
        .inputs = {"data: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "frame_name: string", "is_constant: bool = false",
                  "parallel_iterations: int = 10"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = enter_shape,
        .doc = "Makes data available inside the loop frame frame_name (a child of the frame Enter runs "
               "in): to the first iteration, or to every iteration when is_constant (a loop invariant). "
               "parallel_iterations bounds how many iterations of the frame run at once.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Exit",
        .inputs = {"data: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Makes a value of a loop available to the frame around the loop: the loop's result, "
               "produced by the last iteration.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "NextIteration",
        .inputs = {"data: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Makes data available to the next iteration of its loop: the back edge that feeds a "
               "loop variable's Merge. The only edge allowed to close a cycle.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "LoopCond",
        .inputs = {"input: bool"},
        .outputs = {"output: bool"},
        .flags = TIDE_OP_CONTROL_FLOW,
        .shape_fn = loop_cond_shape,
        .doc = "Returns its input: the condition of a loop, which decides whether another iteration runs "
               "(it drives the loop's Switches).",
    });
}
TIDE_REGISTER(register_control_flow_ops)
