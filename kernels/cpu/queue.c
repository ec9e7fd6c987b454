/* queue.c — CPU kernels of the queue ops (engine/ops/queue_ops.c). They find their queue in the
 * engine's containers and call the queue's operations (engine/queue.h), which is why they include
 * the engine's private queue header, as sendrecv.c does the rendezvous's. The enqueues and dequeues
 * are asynchronous: they finish at once when they can, else when the queue serves them, is closed,
 * or their run ends early. */
#include <string.h>

#include "../../engine/queue.h"

static tide_status open_queue(tide_kernel_ctx *ctx, tide_queue_kind kind)
{
    const tide_attrs *a = tide_kernel_attrs(ctx);
    const char *container = "", *shared = "";
    tide_attrs_get_string(a, "container", &container);
    tide_attrs_get_string(a, "shared_name", &shared);
    if (strchr(container, ':'))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "container '%s': a queue's container may not hold ':'",
                                 container);
    const char *name = shared[0] ? shared : tide_kernel_node_name(ctx);
    tide_queue_config cfg;
    tide_error *err = tide_error_new();
    tide_status st = tide__queue_config_from_attrs(a, kind, &cfg, err);
    tide_queue *q = st == TIDE_OK ? tide__queue_open(ctx->kn->engine, container, name, &cfg, err) : NULL;
    tide_tensor *handle = q ? tide__queue_handle(q, err) : NULL;
    tide__queue_release(q);
    if (!handle) {
        st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
        tide_error_free(err);
        return st;
    }
    tide_error_free(err);
    tide_kernel_set_output(ctx, 0, handle);
    tide_tensor_release(handle);
    return TIDE_OK;
}

static tide_status fifo_compute(tide_kernel_ctx *ctx) { return open_queue(ctx, TIDE_QUEUE_FIFO); }
static tide_status padding_compute(tide_kernel_ctx *ctx) { return open_queue(ctx, TIDE_QUEUE_PADDING_FIFO); }
static tide_status shuffle_compute(tide_kernel_ctx *ctx) { return open_queue(ctx, TIDE_QUEUE_RANDOM_SHUFFLE); }

/* The queue input 0 names (new reference), or NULL with the kernel's error recorded. */
static tide_queue *queue_of(tide_kernel_ctx *ctx)
{
    tide_error *err = tide_error_new();
    tide_queue *q = tide__queue_from_handle(ctx->kn->engine, tide_kernel_input(ctx, 0), err);
    if (!q)
        tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    tide_error_free(err);
    return q;
}

static void enqueue(tide_kernel_ctx *ctx, bool many)
{
    tide_queue *q = queue_of(ctx);
    if (!q) {
        tide_kernel_done(ctx, tide_kernel_status(ctx));
        return;
    }
    tide__queue_enqueue(q, ctx, 1, many); /* the attempt holds its own reference */
    tide__queue_release(q);
}

static void enqueue_async(tide_kernel_ctx *ctx) { enqueue(ctx, false); }
static void enqueue_many_async(tide_kernel_ctx *ctx) { enqueue(ctx, true); }

/* The dequeue's outputs must be the queue's dtypes (the node's component_types). */
static bool outputs_match(tide_kernel_ctx *ctx, tide_queue *q)
{
    const tide_queue_config *cfg = tide__queue_config(q);
    int n = tide_kernel_num_outputs(ctx);
    bool same = n == cfg->num_components;
    for (int i = 0; same && i < n; i++)
        same = tide_kernel_output_dtype(ctx, i) == cfg->dtypes[i];
    if (!same)
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "component_types (%d output%s) do not match the dtypes of "
                          "queue '%s' (%d component%s)", n, n == 1 ? "" : "s", tide__queue_name(q),
                          cfg->num_components, cfg->num_components == 1 ? "" : "s");
    return same;
}

static void dequeue(tide_kernel_ctx *ctx, bool batch, bool up_to)
{
    tide_queue *q = queue_of(ctx);
    int64_t n = -1;
    if (q && batch) {
        tide_tensor *nt = tide_kernel_input(ctx, 1);
        n = (int64_t)tide_tensor_get_f64(nt, 0);
        if (tide_tensor_num_elements(nt) != 1 || n < 0)
            tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "n must be one number >= 0 (elements per batch), not %lld",
                              (long long)n);
    }
    if (!q || tide_kernel_status(ctx) != TIDE_OK || !outputs_match(ctx, q)) {
        tide__queue_release(q);
        tide_kernel_done(ctx, tide_kernel_status(ctx));
        return;
    }
    tide__queue_dequeue(q, ctx, n, up_to);
    tide__queue_release(q);
}

static void dequeue_async(tide_kernel_ctx *ctx) { dequeue(ctx, false, false); }
static void dequeue_many_async(tide_kernel_ctx *ctx) { dequeue(ctx, true, false); }
static void dequeue_up_to_async(tide_kernel_ctx *ctx) { dequeue(ctx, true, true); }

static tide_status close_compute(tide_kernel_ctx *ctx)
{
    tide_queue *q = queue_of(ctx);
    if (!q)
        return tide_kernel_status(ctx);
    bool cancel = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "cancel_pending_enqueues", &cancel);
    tide__queue_close(q, cancel);
    tide__queue_release(q);
    return TIDE_OK;
}

static tide_status size_compute(tide_kernel_ctx *ctx)
{
    tide_queue *q = queue_of(ctx);
    if (!q)
        return tide_kernel_status(ctx);
    int64_t n = tide__queue_size(q);
    tide__queue_release(q);
    tide_tensor *t = tide_kernel_alloc_output(ctx, 0, &(tide_shape){.rank = 0}, false);
    if (!t)
        return tide_kernel_status(ctx);
    *(int32_t *)tide_tensor_data(t) = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
    return TIDE_OK;
}

static void register_queue_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "FIFOQueueV2", .device_type = "cpu", .compute = fifo_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "PaddingFIFOQueueV2", .device_type = "cpu",
                                             .compute = padding_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "RandomShuffleQueueV2", .device_type = "cpu",
                                             .compute = shuffle_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueEnqueueV2", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = enqueue_async});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueEnqueueManyV2", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = enqueue_many_async});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueDequeueV2", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = dequeue_async});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueDequeueManyV2", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = dequeue_many_async});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueDequeueUpToV2", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = dequeue_up_to_async});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueCloseV2", .device_type = "cpu", .compute = close_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "QueueSizeV2", .device_type = "cpu", .compute = size_compute});
}
TIDE_REGISTER(register_queue_kernels)
