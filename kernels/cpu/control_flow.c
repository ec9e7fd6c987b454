/* control_flow.c — CPU kernels of the control-flow ops (engine/ops/control_flow_ops.c). They move no
 * bytes: Switch hands its data to one output and marks the other dead; Merge hands on the live input;
 * Enter, Exit, NextIteration and LoopCond return their input, and the executor decides which frame and
 * iteration the value lands in (engine/frames.c). */
#include <stdbool.h>

#include "../../engine/tide_op.h"

static tide_status switch_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *pred = tide_kernel_input(ctx, 1);
    if (tide_tensor_num_elements(pred) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "pred must hold one bool, not %lld values",
                                 (long long)tide_tensor_num_elements(pred));
    int taken = *(const bool *)tide_tensor_data(pred) ? 1 : 0;
    tide_kernel_set_output(ctx, taken, tide_kernel_input(ctx, 0));
    tide_kernel_set_output_dead(ctx, 1 - taken);
    return TIDE_OK;
}

/* The executor runs a Merge once one input is alive (or all are dead): the first live one wins. */
static tide_status merge_compute(tide_kernel_ctx *ctx)
{
    for (int i = 0; i < tide_kernel_num_inputs(ctx); i++) {
        tide_tensor *in = tide_kernel_input(ctx, i);
        if (!in)
            continue; /* dead, or not arrived in this iteration */
        int32_t index = i;
        tide_tensor *which = tide_tensor_new_scalar(TIDE_INT32, &index, NULL);
        if (!which)
            return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        tide_kernel_set_output(ctx, 0, in);
        tide_kernel_set_output(ctx, 1, which);
        tide_tensor_release(which);
        return TIDE_OK;
    }
    tide_kernel_set_output_dead(ctx, 0);
    tide_kernel_set_output_dead(ctx, 1);
    return TIDE_OK;
}

static tide_status forward_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static void register_control_flow_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "Switch", .device_type = "cpu", .compute = switch_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Merge", .device_type = "cpu", .flags = TIDE_KERNEL_SEES_DEAD,
                                              .compute = merge_compute});
    static const char *const forwarders[] = {"Enter", "Exit", "NextIteration", "LoopCond"};
    for (int i = 0; i < 4; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = forwarders[i], .device_type = "cpu",
                                                  .compute = forward_compute});
}
TIDE_REGISTER(register_control_flow_kernels)
