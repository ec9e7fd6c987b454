/* queue_ops.c — definitions of the queue ops (TensorFlow 1.x's V2 names; docs/queues.md): the queue
 * ops FIFOQueueV2, RandomShuffleQueueV2 and PaddingFIFOQueueV2 output a handle naming a queue of the
 * engine's containers (engine/queue.h); QueueEnqueueV2, QueueEnqueueManyV2, QueueDequeueV2,
 * QueueDequeueManyV2, QueueDequeueUpToV2, QueueCloseV2 and QueueSizeV2 take it. Kernels:
 * kernels/cpu/queue.c. */
#include "../internal.h"

#define HANDLE_DIFF "The handle is a scalar string (\"CONTAINER:NAME\"), not a resource; an empty shared_name " \
                    "names the queue after its node, so sessions of one engine share it (TensorFlow makes a "  \
                    "private one)."
#define DEQUEUE_DIFF "Outputs have unknown shapes at graph time (TensorFlow takes them from the queue's " \
                     "handle data); timeout_ms is accepted and ignored, as in TensorFlow: use the run's timeout."

static tide_status batch_size_shape(tide_shape_ctx *ctx)
{
    tide_shape n = tide_shape_input(ctx, 1);
    if (n.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "n must be a scalar (elements per batch)");
    return TIDE_OK;
}

static void register_queue_op(const char *name, const char *attrs_extra[3], const char *doc)
{
    tide_op_spec spec = {
        .name = name,
        .outputs = {"handle: string"},
        .attrs = {"component_types: list(type)", "shapes: list(shape) = []", "capacity: int = -1",
                  "container: string = ''", "shared_name: string = ''"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = tide_shape_fn_scalar,
        .doc = doc,
        .tf_differences = HANDLE_DIFF,
    };
    for (int i = 0; i < 3 && attrs_extra[i]; i++)
        spec.attrs[5 + i] = attrs_extra[i];
    tide_op_register(&spec);
}

static void register_queue_ops(void)
{
    register_queue_op("FIFOQueueV2", (const char *[3]){NULL},
                      "A queue of elements (tuples of tensors of component_types, of shapes when given) served "
                      "first in, first out; capacity bounds it (negative: no limit). Outputs its handle.");
    register_queue_op("PaddingFIFOQueueV2", (const char *[3]){NULL},
                      "A FIFO queue whose shapes may have unknown dimensions (-1): a batch is padded with zeros "
                      "(empty strings) to its largest element. Outputs its handle.");
    register_queue_op("RandomShuffleQueueV2",
                      (const char *[3]){"min_after_dequeue: int = 0", "seed: int = 0", "seed2: int = 0"},
                      "A queue that dequeues its elements in a random order; while open, a dequeue leaves "
                      "min_after_dequeue elements to mix with. seed and seed2 both 0: seeded from the clock. "
                      "Outputs its handle.");
    tide_op_register(&(tide_op_spec){
        .name = "QueueEnqueueV2",
        .inputs = {"handle: string", "components: Tcomponents"},
        .attrs = {"Tcomponents: list(type)", "timeout_ms: int = -1"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Adds one element to the queue, waiting (without a thread) while it is full. Fails with "
               "CANCELLED when the queue is closed.",
        .tf_differences = "timeout_ms is accepted and ignored, as in TensorFlow: use the run's timeout.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueEnqueueManyV2",
        .inputs = {"handle: string", "components: Tcomponents"},
        .attrs = {"Tcomponents: list(type)", "timeout_ms: int = -1"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Adds the rows (along the first dimension, the same for every component) as elements, "
               "waiting for room as needed.",
        .tf_differences = "timeout_ms is accepted and ignored, as in TensorFlow: use the run's timeout.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueDequeueV2",
        .inputs = {"handle: string"},
        .outputs = {"components: component_types"},
        .attrs = {"component_types: list(type)", "timeout_ms: int = -1"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Removes one element, waiting (without a thread) while the queue is empty; OUT_OF_RANGE once "
               "the queue is closed and empty.",
        .tf_differences = DEQUEUE_DIFF,
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueDequeueManyV2",
        .inputs = {"handle: string", "n: int32"},
        .outputs = {"components: component_types"},
        .attrs = {"component_types: list(type)", "timeout_ms: int = -1"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = batch_size_shape,
        .doc = "Removes n elements and outputs them stacked as batches ([n, ...]), waiting until there are n; "
               "OUT_OF_RANGE once the queue is closed with fewer than n left.",
        .tf_differences = DEQUEUE_DIFF,
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueDequeueUpToV2",
        .inputs = {"handle: string", "n: int32"},
        .outputs = {"components: component_types"},
        .attrs = {"component_types: list(type)", "timeout_ms: int = -1"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = batch_size_shape,
        .doc = "As QueueDequeueManyV2, but once the queue is closed returns the fewer elements left (OUT_OF_RANGE "
               "only when none is left).",
        .tf_differences = DEQUEUE_DIFF,
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueCloseV2",
        .inputs = {"handle: string"},
        .attrs = {"cancel_pending_enqueues: bool = false"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Closes the queue: later enqueues fail; dequeues take what is left, then fail with OUT_OF_RANGE. "
               "With cancel_pending_enqueues the enqueues waiting for room fail too.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "QueueSizeV2",
        .inputs = {"handle: string"},
        .outputs = {"size: int32"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = tide_shape_fn_scalar,
        .doc = "The number of elements in the queue now.",
    });
}
TIDE_REGISTER(register_queue_ops)
