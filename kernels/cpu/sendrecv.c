/* sendrecv.c — CPU kernels of _Send and _Recv (engine/ops/sendrecv_ops.c): the two ends of a tensor
 * crossing devices, meeting in the engine's rendezvous (engine/rendezvous.h) under the key
 * (send_device, recv_device, tensor_name, the run's id). _Send is synchronous: it leaves a reference
 * to its input. _Recv is asynchronous: it asks for the value and returns; the rendezvous calls back
 * (on the _Send's thread, or at once when the value was already there) and the callback completes
 * the kernel; a tensor in a memory space the _Recv's device cannot read (an accelerator's, or the host's
 * for an accelerator) is copied there first, asynchronously. Unlike the other kernels these reach the engine's private side (the step's run id and
 * the rendezvous), so they include rendezvous.h.
 *
 * Lossy compression (attr compress, set by the plan: white paper §5.5): a float32 tensor travels as
 * bfloat16, its upper 16 bits (truncated, not rounded, as the paper does), made on the sending
 * device; the _Recv restores float32 with zero low bits on the receiving device.
 *
 * Control flow: both run when their input is dead (TIDE_KERNEL_SEES_DEAD), and the dead marker travels
 * through the rendezvous so that the _Recv's consumers on the other device are dead too; inside a loop
 * the key names the frame instance and iteration. */
#include <stdlib.h>

#include "../../engine/rendezvous.h"

/* Per node: the key's device and tensor names, borrowed from the node's attrs (they outlive the
 * plan), and for _Recv the shape the plan expects (unknown for _Send). */
typedef struct transfer_key {
    const char *tensor, *send_device, *recv_device;
    tide_shape shape;
    bool compress;
} transfer_key;

static tide_status key_init(tide_kernel_ctx *ctx, void **state)
{
    const tide_attrs *a = tide_kernel_attrs(ctx);
    transfer_key k = {NULL, NULL, NULL, tide_shape_unknown(), false};
    if (!tide_attrs_get_string(a, "tensor_name", &k.tensor) || !k.tensor[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'tensor_name' is missing or empty");
    if (!tide_attrs_get_string(a, "send_device", &k.send_device) || !k.send_device[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'send_device' is missing or empty");
    if (!tide_attrs_get_string(a, "recv_device", &k.recv_device) || !k.recv_device[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'recv_device' is missing or empty");
    tide_attrs_get_shape(a, "shape", &k.shape);
    tide_attrs_get_bool(a, "compress", &k.compress);
    transfer_key *p = malloc(sizeof *p);
    if (!p)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    *p = k;
    *state = p;
    return TIDE_OK;
}

static void key_destroy(void *state) { free(state); }

/* The rendezvous key of this node in this step; false (error recorded) outside a session's step. */
static bool key_of(tide_kernel_ctx *ctx, tide_rendezvous_key *key, tide_rendezvous **r)
{
    const transfer_key *k = tide_kernel_state(ctx);
    *r = tide__kernel_rendezvous(ctx);
    *key = (tide_rendezvous_key){k->send_device, k->recv_device, k->tensor, tide__kernel_step_id(ctx), NULL, 0};
    key->frame = tide__kernel_frame(ctx, &key->iteration);
    if (!*r || key->step == 0) {
        tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                          "%s runs only in a session's run (it meets its partner there), not eagerly",
                          tide_kernel_op_name(ctx));
        return false;
    }
    return true;
}

/* float32 -> its upper 16 bits (bfloat16 by truncation), on the sending device. */
static tide_tensor *compress(tide_kernel_ctx *ctx, const tide_tensor *x)
{
    tide_tensor *c = tide__kernel_alloc_temp(ctx, TIDE_BFLOAT16, tide_tensor_shape(x));
    if (!c)
        return NULL;
    const uint32_t *src = tide_tensor_data(x);
    uint16_t *dst = tide_tensor_data(c);
    for (int64_t i = 0, n = tide_tensor_num_elements(x); i < n; i++)
        dst[i] = (uint16_t)(src[i] >> 16);
    return c;
}

static tide_status send_compute(tide_kernel_ctx *ctx)
{
    tide_rendezvous_key key;
    tide_rendezvous *r;
    if (!key_of(ctx, &key, &r))
        return tide_kernel_status(ctx);
    tide_tensor *value = tide_kernel_input_is_dead(ctx, 0) ? tide__dead : tide_kernel_input(ctx, 0), *packed = NULL;
    if (((const transfer_key *)tide_kernel_state(ctx))->compress && tide_tensor_dtype(value) == TIDE_FLOAT32) {
        if (!(packed = compress(ctx, value)))
            return tide_kernel_status(ctx);
        value = packed;
    }
    tide_error *err = tide_error_new();
    tide_status st = tide__rendezvous_send(r, &key, value, err);
    if (st != TIDE_OK)
        tide_kernel_error(ctx, st, "%s", err ? tide_error_message(err) : "the send failed");
    tide_error_free(err);
    tide_tensor_release(packed); /* the rendezvous holds its own reference */
    return st;
}

/* bfloat16 -> float32 with zero low bits, as the output of the _Recv (on the receiving device). */
static tide_status decompress(tide_kernel_ctx *ctx, const tide_tensor *packed)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(packed), false);
    if (!y)
        return tide_kernel_status(ctx);
    const uint16_t *src = tide_tensor_data(packed);
    uint32_t *dst = tide_tensor_data(y);
    for (int64_t i = 0, n = tide_tensor_num_elements(packed); i < n; i++)
        dst[i] = (uint32_t)src[i] << 16;
    return TIDE_OK;
}

/* A copy between memory spaces finished: completes the _Recv kernel with it. */
static void copy_done(void *arg, tide_status status, tide_tensor *copy, const char *message)
{
    tide_kernel_ctx *ctx = arg;
    if (status != TIDE_OK) {
        char device[128];
        tide_device_short_name(tide_device_name(tide_kernel_device(ctx)), device, sizeof device);
        tide_kernel_done(ctx, tide_kernel_error(ctx, status, "copying to %s: %s", device, message ? message : "failed"));
        return;
    }
    tide_kernel_set_output(ctx, 0, copy);
    tide_tensor_release(copy);
    tide_kernel_done(ctx, TIDE_OK);
}

/* The rendezvous's callback: completes the _Recv kernel (ctx must not be touched after done). */
static void recv_done(void *arg, tide_status status, tide_tensor *value, const char *message)
{
    tide_kernel_ctx *ctx = arg;
    if (status != TIDE_OK) {
        tide_kernel_done(ctx, tide_kernel_error(ctx, status, "%s", message ? message : "the receive failed"));
        return;
    }
    if (value == tide__dead) { /* from a branch not taken: dead here too */
        tide_kernel_set_output_dead(ctx, 0);
        tide_kernel_done(ctx, TIDE_OK);
        return;
    }
    const transfer_key *k = tide_kernel_state(ctx);
    bool packed = k->compress && tide_kernel_output_dtype(ctx, 0) == TIDE_FLOAT32;
    tide_dtype want = packed ? TIDE_BFLOAT16 : tide_kernel_output_dtype(ctx, 0);
    const tide_shape *expected = &k->shape;
    if (tide_tensor_dtype(value) != want || !tide_shape_compatible(expected, tide_tensor_shape(value))) {
        char got[TIDE_SHAPE_STR_MAX], exp[TIDE_SHAPE_STR_MAX];
        tide_shape_format(tide_tensor_shape(value), got, sizeof got);
        tide_shape_format(expected, exp, sizeof exp);
        tide_status st = tide_kernel_error(ctx, TIDE_INTERNAL, "received a %s tensor of shape %s where %s %s "
                                           "was expected", tide_dtype_name(tide_tensor_dtype(value)), got,
                                           tide_dtype_name(want), exp);
        tide_tensor_release(value);
        tide_kernel_done(ctx, st);
        return;
    }
    if (!packed && !tide_device_can_read(tide_kernel_device(ctx), value)) {
        /* into or out of an accelerator's memory: the device copies it, asynchronously (in a traced
         * step the copy's stream and time become the _Recv's timing: its lane is the copy stream's) */
        tide__tensor_copy_to_device_timed(value, tide_kernel_device(ctx), ctx->span, copy_done, ctx);
        tide_tensor_release(value);
        return;
    }
    tide_status st = TIDE_OK;
    if (packed)
        st = decompress(ctx, value);
    else
        tide_kernel_set_output(ctx, 0, value); /* takes its own reference: no copy */
    tide_tensor_release(value);
    tide_kernel_done(ctx, st);
}

static void recv_compute_async(tide_kernel_ctx *ctx)
{
    tide_rendezvous_key key;
    tide_rendezvous *r;
    if (!key_of(ctx, &key, &r)) {
        tide_kernel_done(ctx, tide_kernel_status(ctx));
        return;
    }
    tide__rendezvous_recv(r, &key, recv_done, ctx);
}

static void register_sendrecv_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "_Send", .device_type = "cpu", .flags = TIDE_KERNEL_SEES_DEAD,
                                              .init = key_init, .destroy = key_destroy, .compute = send_compute});
    /* _Recv is the same on every device type: what arrives in another memory space is copied
     * (tide_tensor_copy_to_device_async, on the devices' streams). The simulated device runs the
     * CPU's _Send on its own stream (device_sim.c wraps synchronous CPU kernels). */
    static const char *const recv_types[] = {"cpu", "sim", "gpu"};
    for (int i = 0; i < 3; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = "_Recv", .device_type = recv_types[i],
                                                  .flags = TIDE_KERNEL_ASYNC | TIDE_KERNEL_SEES_DEAD,
                                                  .init = key_init, .destroy = key_destroy,
                                                  .compute_async = recv_compute_async});
}
TIDE_REGISTER(register_sendrecv_kernels)
