/* sendrecv_ops.c — definitions of _Send and _Recv, the two halves of a tensor crossing devices. The
 * plan's partition pass makes them (users never do: the leading '_' says so); they meet in the
 * engine's rendezvous under (send_device, recv_device, tensor_name, the run's id). Kernels:
 * kernels/cpu/sendrecv.c. */
#include "../internal.h"

static tide_status recv_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_unknown();
    tide_attrs_get_shape(tide_shape_attrs(ctx), "shape", &s);
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static void register_sendrecv_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "_Send",
        .inputs = {"tensor: T"},
        .attrs = {"T: alltypes", "tensor_name: string", "send_device: string", "recv_device: string",
                  "compress: bool = false"},
        .flags = TIDE_OP_STATEFUL | TIDE_OP_NOT_IN_TF,
        .doc = "Internal (made by the plan for a tensor that crosses devices, not by users): hands tensor "
               "to the _Recv with the same tensor_name, send_device and recv_device in the same run, "
               "through the engine's rendezvous. In one process the tensor passes by reference, "
               "without a copy. Fails when the run was aborted or the tensor was already sent. With compress, a "
               "float32 tensor travels as bfloat16 (its upper 16 bits: lossy, white paper §5.5).",
        .tf_differences = "TensorFlow's internal _Send and _Recv also carry send_device_incarnation and "
                          "client_terminated and are never in a GraphDef a user writes; tide's are made by "
                          "its own plans only.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "_Recv",
        .outputs = {"tensor: T"},
        .attrs = {"T: type", "tensor_name: string", "send_device: string", "recv_device: string",
                  "shape: shape = *", "compress: bool = false"},
        .flags = TIDE_OP_STATEFUL | TIDE_OP_NOT_IN_TF,
        .shape_fn = recv_shape,
        .doc = "Internal (made by the plan for a tensor that crosses devices, not by users): the tensor "
               "that the _Send with the same tensor_name, send_device and recv_device sends in the same "
               "run. Asynchronous: no thread waits while the value is on its way; when the run fails "
               "elsewhere it ends with that error. shape is the sent tensor's shape as known when the "
               "plan was made. With compress, a float32 tensor arrives as bfloat16 and is restored to float32 "
               "(the low 16 bits of each value are zero).",
        .tf_differences = "TensorFlow's internal _Send and _Recv also carry send_device_incarnation and "
                          "client_terminated and are never in a GraphDef a user writes; tide's are made by "
                          "its own plans only.",
    });
}
TIDE_REGISTER(register_sendrecv_ops)
