/* tide_queue.h — queues and input pipelines in a graph (white paper §4.6; docs/queues.md): building
 * queue ops (TensorFlow's FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue and their enqueue, dequeue,
 * close and size ops), queue runners (background threads that run enqueue ops until the queue is
 * closed or an error) and a coordinator that stops them cleanly (TensorFlow's tf.train.Coordinator).
 * The conventions of tide_core.h hold.
 *
 * A queue is a resource of the engine, found by its container and shared_name (by default its
 * node's name), shared by every session of the engine that runs a node naming it, as variables are.
 * Blocking enqueues and dequeues hold no thread while they wait, and end when the queue is closed
 * (a dequeue from a closed queue with too few elements fails with TIDE_OUT_OF_RANGE), when the run
 * is cancelled (tide_session_cancel, Ctrl-C, tide_session_close) or passes its timeout.
 */
#ifndef TIDE_QUEUE_API_H
#define TIDE_QUEUE_API_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tide_queue_kind {
    TIDE_QUEUE_FIFO = 0,           /* FIFOQueueV2: first in, first out */
    TIDE_QUEUE_RANDOM_SHUFFLE = 1, /* RandomShuffleQueueV2: dequeues elements in a random order */
    TIDE_QUEUE_PADDING_FIFO = 2,   /* PaddingFIFOQueueV2: shapes may have unknown dimensions; a batch is
                                      padded with zeros (empty strings) to its largest element */
} tide_queue_kind;

typedef struct tide_queue_options {
    tide_queue_kind kind;
    int64_t capacity;           /* elements it holds at most; <= 0: unbounded */
    int num_components;         /* tensors per element (>= 1) */
    const tide_dtype *dtypes;   /* num_components */
    const tide_shape *shapes;   /* NULL: any shapes (a batch then needs elements of one shape); else
                                   num_components shapes, fully defined but for PADDING_FIFO */
    int64_t min_after_dequeue;  /* RANDOM_SHUFFLE: elements left for mixing while the queue is open */
    int64_t seed;               /* RANDOM_SHUFFLE: 0 -> the graph seed, or the clock if none */
    const char *shared_name;    /* NULL: the node's name */
    const char *container;      /* NULL: the default container "" (no ':' in it) */
    const char *name;           /* the node's name (must be free), NULL: a unique one from the op's name */
} tide_queue_options;

/* Builds the queue op; returns its handle (a scalar string naming the queue), .node NULL on failure.
 * Every other builder takes that handle (or a value that was fed or passed through from it: then the
 * dequeue builders need the queue node, so pass the handle as built). */
tide_output tide_queue_new(tide_graph *g, const tide_queue_options *opts, tide_error *err);

/* Enqueues one element (QueueEnqueueV2) or, many, the rows of each component along the first
 * dimension as elements (QueueEnqueueManyV2). Returns the node (a target), NULL on failure. */
tide_node *tide_queue_enqueue(tide_graph *g, tide_output queue, const tide_output *components, int n, bool many,
                              tide_error *err);
/* Dequeues one element (n < 0: QueueDequeueV2), or n elements as batches (QueueDequeueManyV2; up_to:
 * QueueDequeueUpToV2, which returns what is left once the queue is closed). The node's outputs are
 * the components, with the shapes the queue declares (a batch: [n, ...]). NULL on failure. */
tide_node *tide_queue_dequeue(tide_graph *g, tide_output queue, int64_t n, bool up_to, tide_error *err);
/* QueueCloseV2 (a target). cancel_pending_enqueues: enqueues waiting for room fail too. */
tide_node *tide_queue_close(tide_graph *g, tide_output queue, bool cancel_pending_enqueues, tide_error *err);
/* QueueSizeV2: an int32 scalar, the elements in the queue now. */
tide_output tide_queue_size(tide_graph *g, tide_output queue, tide_error *err);

/* ---------------------------------------------------------------- coordinator and queue runners */

/* A coordinator (tf.train.Coordinator): threads ask should_stop; anyone may request_stop, with the
 * error that made it stop (the first one is kept); join waits for the queue runners started with it
 * and returns that error. Thread-safe. */
typedef struct tide_coordinator tide_coordinator;

tide_coordinator *tide_coordinator_new(tide_error *err);
/* Frees it after stopping and joining the runners still started with it. */
void tide_coordinator_free(tide_coordinator *c);
/* Asks every thread to stop. why NULL or TIDE_OK: a normal stop; else the first error wins. */
void tide_coordinator_request_stop(tide_coordinator *c, const tide_error *why);
bool tide_coordinator_should_stop(const tide_coordinator *c);
/* Blocks until a stop is requested or timeout_ms passes (< 0: no timeout); true when stopping. */
bool tide_coordinator_wait_for_stop(tide_coordinator *c, int64_t timeout_ms);
/* Requests a stop, waits for every runner started with c, and returns the error of the first
 * request_stop that had one (TIDE_OK otherwise, also when the runners ended because their queues
 * closed or their readers ran out). Runners left alone end on their own: join waits for them. */
tide_status tide_coordinator_join(tide_coordinator *c, tide_error *err);

/* A queue runner (tf.train.QueueRunner): one thread per enqueue op runs it again and again in a
 * session of its own over the engine and graph of `session` (so that Ctrl-C, which cancels the
 * user's runs, leaves the pipeline running). A thread ends when its run fails: TIDE_OUT_OF_RANGE (a
 * reader ran out, the queue was closed) or TIDE_CANCELLED after a stop are normal ends; any other
 * error requests a stop of the coordinator with it. When the last thread has ended the runner runs
 * close_op (the queue closes: consumers get what is left, then OUT_OF_RANGE); on a stop it runs
 * cancel_op (close with cancel_pending_enqueues, which wakes enqueues blocked on a full queue).
 * close_op and cancel_op may be NULL. */
typedef struct tide_queue_runner tide_queue_runner;

tide_queue_runner *tide_queue_runner_new(tide_node *const *enqueue_ops, int num_enqueue_ops, tide_node *close_op,
                                         tide_node *cancel_op, tide_error *err);
/* Starts the threads (once). The runner must stay alive while they run: free it after join. */
tide_status tide_queue_runner_start(tide_queue_runner *r, tide_session *session, tide_coordinator *c,
                                    tide_error *err);
/* Runs of the enqueue ops that succeeded so far, all threads together. */
int64_t tide_queue_runner_runs(const tide_queue_runner *r);
/* Stops (requests a stop of its coordinator) and joins its threads first when it was started. */
void tide_queue_runner_free(tide_queue_runner *r);

#ifdef __cplusplus
}
#endif
#endif
