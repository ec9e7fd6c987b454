/* control_flow_grad.c — gradients of a cond's ops (white paper §4.4). A Merge forwards the input that
 * was taken, so its gradient goes to that input only: dy switched on "value_index == i", dead for the
 * others. A Switch routed data to one side, so its gradient is whichever side's gradient is alive: a
 * Merge of the two, with zeros standing in for a side that has none (zeros of that side's output,
 * which are dead when that side was not taken, so the Merge still picks the live one). The loop ops
 * (Enter, Exit, NextIteration) have no per-op gradient: a while loop is differentiated as a whole
 * (while_grad.c); LoopCond is a bool. */
#include "grad_util.h"

static tide_status merge_grad(tide_grad_ctx *ctx)
{
    tide_output dy = DY(0);
    if (!dy.node)
        return TIDE_OK;
    int n = tide_node_num_inputs(tide_grad_node(ctx));
    for (int i = 0; i < n; i++) {
        if (!tide_grad_wants(ctx, i))
            continue;
        tide_output taken = tide_grad_op2(ctx, "Equal", Y(1), tide_grad_scalar(ctx, TIDE_INT32, i));
        tide_node *sw = tide_grad_node_new(ctx, "Switch", (tide_output[]){dy, taken}, 2, NULL);
        tide_grad_set_dx(ctx, i, (tide_output){sw, 1});
    }
    return tide_grad_status(ctx);
}

static tide_status switch_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    tide_output sides[2];
    for (int k = 0; k < 2; k++)
        sides[k] = tide_grad_dy_or_zeros(ctx, k);
    tide_node *m = tide_grad_node_new(ctx, "Merge", sides, 2, NULL);
    tide_grad_set_dx(ctx, 0, (tide_output){m, 0});
    return tide_grad_status(ctx);
}

static void register_control_flow_gradients(void)
{
    tide_gradient_register("Merge", merge_grad);
    tide_gradient_register("Switch", switch_grad);
    tide_gradient_register("LoopCond", NULL);
}
TIDE_REGISTER(register_control_flow_gradients)
