/* queue_build.c — the C builders of queue ops (tide_queue.h): a queue op from tide_queue_options,
 * and the enqueue, dequeue, close and size ops over its handle. A dequeue needs the queue's dtypes
 * (component_types): it reads them from the queue node that made the handle. */
#include <string.h>

#include "internal.h"
#include "tide_queue.h"

static const char *queue_op(tide_queue_kind kind)
{
    return kind == TIDE_QUEUE_RANDOM_SHUFFLE ? "RandomShuffleQueueV2"
           : kind == TIDE_QUEUE_PADDING_FIFO ? "PaddingFIFOQueueV2"
                                             : "FIFOQueueV2";
}

tide_output tide_queue_new(tide_graph *g, const tide_queue_options *o, tide_error *err)
{
    tide_output none = {0};
    if (!o || o->num_components < 1 || !o->dtypes || (int)o->kind < 0 || o->kind > TIDE_QUEUE_PADDING_FIFO) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_queue_new: options with a kind and at least one "
                       "component dtype are needed");
        return none;
    }
    tide_node_builder *b = tide_node_builder_new(g, queue_op(o->kind), o->name); /* NULL: a unique name */
    tide_attrs *a = tide_node_builder_attrs(b);
    tide_attrs_set_type_list(a, "component_types", o->dtypes, o->num_components);
    if (o->shapes)
        tide_attrs_set_shape_list(a, "shapes", o->shapes, o->num_components);
    tide_attrs_set_int(a, "capacity", o->capacity > 0 ? o->capacity : -1);
    if (o->container)
        tide_attrs_set_string(a, "container", o->container);
    if (o->shared_name)
        tide_attrs_set_string(a, "shared_name", o->shared_name);
    if (o->kind == TIDE_QUEUE_RANDOM_SHUFFLE) {
        tide_attrs_set_int(a, "min_after_dequeue", o->min_after_dequeue);
        tide_attrs_set_int(a, "seed", o->seed);
    }
    tide_node *n = tide_node_builder_finish(b, err);
    return (tide_output){n, 0};
}

/* The component dtypes of the queue op behind handle. */
static bool component_types(tide_output queue, const tide_dtype **types, int *n, tide_error *err)
{
    const char *op = queue.node ? tide_node_op(queue.node) : "";
    if (!queue.node || (strcmp(op, "FIFOQueueV2") && strcmp(op, "RandomShuffleQueueV2") &&
                        strcmp(op, "PaddingFIFOQueueV2"))) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a dequeue needs the queue op's handle (from tide_queue_new), "
                       "not %s%s%s", queue.node ? "node '" : "nothing", queue.node ? tide_node_name(queue.node) : "",
                       queue.node ? "'" : "");
        return false;
    }
    return tide_attrs_get_type_list(tide_node_attrs(queue.node), "component_types", types, n);
}

tide_node *tide_queue_enqueue(tide_graph *g, tide_output queue, const tide_output *components, int n, bool many,
                              tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, many ? "QueueEnqueueManyV2" : "QueueEnqueueV2", NULL);
    tide_node_builder_add_input(b, queue);
    tide_node_builder_add_input_list(b, components, n);
    return tide_node_builder_finish(b, err);
}

tide_node *tide_queue_dequeue(tide_graph *g, tide_output queue, int64_t n, bool up_to, tide_error *err)
{
    const tide_dtype *types;
    int num;
    if (!component_types(queue, &types, &num, err))
        return NULL;
    const char *op = n < 0 ? "QueueDequeueV2" : up_to ? "QueueDequeueUpToV2" : "QueueDequeueManyV2";
    tide_output count = {0};
    if (n >= 0) {
        int32_t v = (int32_t)n;
        if (n > INT32_MAX) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "a batch of %lld elements is too large", (long long)n);
            return NULL;
        }
        tide_tensor *t = tide_tensor_new_scalar(TIDE_INT32, &v, err);
        if (!t)
            return NULL;
        tide_node_builder *cb = tide_node_builder_new(g, "Const", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(cb), "dtype", TIDE_INT32);
        tide_attrs_set_tensor(tide_node_builder_attrs(cb), "value", t);
        tide_tensor_release(t);
        count.node = tide_node_builder_finish(cb, err);
        if (!count.node)
            return NULL;
    }
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(b, queue);
    if (n >= 0)
        tide_node_builder_add_input(b, count);
    tide_attrs_set_type_list(tide_node_builder_attrs(b), "component_types", types, num);
    return tide_node_builder_finish(b, err);
}

tide_node *tide_queue_close(tide_graph *g, tide_output queue, bool cancel_pending_enqueues, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "QueueCloseV2", NULL);
    tide_node_builder_add_input(b, queue);
    tide_attrs_set_bool(tide_node_builder_attrs(b), "cancel_pending_enqueues", cancel_pending_enqueues);
    return tide_node_builder_finish(b, err);
}

tide_output tide_queue_size(tide_graph *g, tide_output queue, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "QueueSizeV2", NULL);
    tide_node_builder_add_input(b, queue);
    return (tide_output){tide_node_builder_finish(b, err), 0};
}
