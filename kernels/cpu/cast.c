/* cast.c — CPU kernel of Cast: every pair of the 14 dtypes through tide_tensor_cast
 * (engine/tensor_cast.c, which states the conversion rules). Casting to the input's own dtype hands
 * the input on without a copy. */
#include "../../engine/tide_op.h"

static tide_status cast_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_dtype to = tide_kernel_output_dtype(ctx, 0); /* DstT, resolved when the node was bound */
    /* No error object on the common path (it would cost a malloc per call); a failure is
     * deterministic, so converting again with one recovers its message. */
    tide_tensor *y = tide_tensor_cast(x, to, NULL);
    if (!y) {
        tide_error *err = tide_error_new();
        y = tide_tensor_cast(x, to, err);
        tide_status code = err ? tide_error_code(err) : TIDE_RESOURCE_EXHAUSTED;
        tide_status st = y ? TIDE_OK
                           : tide_kernel_error(ctx, code != TIDE_OK ? code : TIDE_INTERNAL, "%s",
                                               err ? tide_error_message(err) : "out of memory");
        tide_error_free(err);
        if (!y)
            return st;
    }
    tide_kernel_set_output(ctx, 0, y);
    tide_tensor_release(y);
    return TIDE_OK;
}

static void register_cast_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "Cast", .device_type = "cpu",
                                              .compute = cast_compute});
}
TIDE_REGISTER(register_cast_kernels)
