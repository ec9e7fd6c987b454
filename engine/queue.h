/* queue.h — queues (white paper §4.6): FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue as typed
 * resources in the engine's containers (resources.c), shared by every session of the engine that
 * names them. Used by the queue kernels (kernels/cpu/queue.c); the op definitions are in
 * engine/ops/queue_ops.c and the C builders in queue_build.c (tide_queue.h).
 *
 * A queue holds elements: tuples of num_components tensors of the queue's dtypes (and shapes, when
 * it has them). Blocking operations are asynchronous kernels: an enqueue into a full queue and a
 * dequeue from an empty one become *attempts* in the queue's two waiting lists and hold no thread.
 * Attempts are served in order (TensorFlow's rule): the first waiting dequeue takes elements as
 * they come, and those behind it wait for it. Whatever changes the queue (an enqueue, a dequeue, a
 * close, a cancelled attempt) serves the lists again under the queue's lock; the attempts it
 * finishes are completed after the lock is released, on their own devices' threads.
 *
 * A waiting attempt registers a cancellation callback (tide_kernel_on_cancel): a failure elsewhere in
 * its step, tide_session_cancel (Ctrl-C), tide_session_close and the run's timeout end it, and what it
 * had taken goes back to the front of the queue. Close: later enqueues fail (CANCELLED); dequeues
 * take what is left, and once too little is left fail with OUT_OF_RANGE (dequeue_up_to returns a
 * smaller batch first); with cancel_pending_enqueues the waiting enqueues fail too. A queue whose
 * container is reset closes that way, so nothing waits on it for ever.
 *
 * The handle a queue op outputs is a scalar string "CONTAINER:NAME" (the container's name may not
 * hold ':'); the other queue ops find the queue by it.
 */
#ifndef TIDE_QUEUE_H
#define TIDE_QUEUE_H

#include "internal.h"
#include "tide_queue.h"

#define TIDE_QUEUE_MAX_COMPONENTS 64

typedef struct tide_queue_config {
    tide_queue_kind kind;
    int num_components;
    tide_dtype dtypes[TIDE_QUEUE_MAX_COMPONENTS];
    int num_shapes;                   /* 0 (none) or num_components */
    tide_shape shapes[TIDE_QUEUE_MAX_COMPONENTS];
    int64_t capacity;                 /* < 0: unbounded */
    int64_t min_after_dequeue;        /* random shuffle: elements a dequeue leaves while the queue is open */
    int64_t seed, seed2;              /* random shuffle: both 0 -> a seed from the clock */
} tide_queue_config;

typedef struct tide_queue tide_queue;

/* Reads a queue op's attrs (component_types, shapes, capacity, ...) into cfg; checks them (the
 * message names what is wrong). */
tide_status tide__queue_config_from_attrs(const tide_attrs *attrs, tide_queue_kind kind, tide_queue_config *cfg,
                                          tide_error *err);
/* The queue `name` of `container`, made with cfg when missing; an existing one must have cfg's kind,
 * dtypes and shapes (TensorFlow's shared queues: the message names both). New reference. */
tide_queue *tide__queue_open(tide_engine *e, const char *container, const char *name, const tide_queue_config *cfg,
                             tide_error *err);
/* The queue a handle names (new reference), or NULL with err. */
tide_queue *tide__queue_from_handle(tide_engine *e, const tide_tensor *handle, tide_error *err);
/* A new handle tensor "CONTAINER:NAME" for q. */
tide_tensor *tide__queue_handle(const tide_queue *q, tide_error *err);
void tide__queue_release(tide_queue *q);
const tide_queue_config *tide__queue_config(const tide_queue *q);
const char *tide__queue_name(const tide_queue *q);

/* Asynchronous operations: each finishes ctx exactly once (tide_kernel_done), at once or later.
 * enqueue: the components are the kernel's inputs from first_input on (many: each a batch along its
 * first dimension). dequeue: n < 0 one element (outputs of the element's shapes); else a batch of n
 * (up_to: fewer once the queue is closed). */
void tide__queue_enqueue(tide_queue *q, tide_kernel_ctx *ctx, int first_input, bool many);
void tide__queue_dequeue(tide_queue *q, tide_kernel_ctx *ctx, int64_t n, bool up_to);
/* Closes q (idempotent; a later close may add cancel_pending_enqueues). */
void tide__queue_close(tide_queue *q, bool cancel_pending_enqueues);
int64_t tide__queue_size(tide_queue *q);
bool tide__queue_is_closed(tide_queue *q);

#endif
