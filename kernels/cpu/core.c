/* core.c — CPU kernels of the core ops: Const, Placeholder, PlaceholderWithDefault, Identity,
 * Snapshot, StopGradient, PreventGradient, ScalarSummary, NoOp. */
#include "../../engine/tide_op.h"

static tide_status const_init(tide_kernel_ctx *ctx, void **state)
{
    tide_tensor *value = NULL;
    if (!tide_attrs_get_tensor(tide_kernel_attrs(ctx), "value", &value))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'value' is missing");
    *state = value; /* borrowed from the node's attrs, which outlive the plan */
    return TIDE_OK;
}

static tide_status const_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_state(ctx));
    return TIDE_OK;
}

static tide_status placeholder_compute(tide_kernel_ctx *ctx)
{
    tide_shape s = tide_shape_unknown();
    tide_dtype dt = TIDE_INVALID_DTYPE;
    tide_attrs_get_shape(tide_kernel_attrs(ctx), "shape", &s);
    tide_attrs_get_type(tide_kernel_attrs(ctx), "dtype", &dt);
    char buf[TIDE_SHAPE_STR_MAX];
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                             "you must feed a value for this placeholder (dtype %s, shape %s)",
                             tide_dtype_name(dt), tide_shape_format(&s, buf, sizeof buf));
}

static tide_status identity_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static tide_status noop_compute(tide_kernel_ctx *ctx)
{
    (void)ctx;
    return TIDE_OK;
}

static void register_core_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "Const", .device_type = "cpu",
                                              .init = const_init, .compute = const_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Placeholder", .device_type = "cpu",
                                              .compute = placeholder_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Identity", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "PlaceholderWithDefault", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "StopGradient", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "PreventGradient", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Snapshot", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "ScalarSummary", .device_type = "cpu",
                                              .compute = identity_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "NoOp", .device_type = "cpu",
                                              .compute = noop_compute});
}
TIDE_REGISTER(register_core_kernels)
