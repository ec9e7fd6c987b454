/* bench_queue.c — queue throughput (docs/queues.md): a producer thread runs QueueEnqueueManyV2 of a
 * [1000, 784] float32 batch (a Fashion-MNIST-sized example per row, a Const) into a FIFOQueue of
 * capacity 5,000 while the main thread fetches QueueDequeueManyV2(100), each dequeue copying its
 * 100 rows into a new batch, as training reads it. 2,000 dequeues (about 627 MB) per repeat, median
 * of 3 repeats:
 *   queue.dequeue_many_mb_per_s     MB (1e6 bytes) of batches dequeued per second
 *   queue.dequeue_many_us_per_batch microseconds per dequeue_many(100)
 * The producer and the consumer wait for each other through the queue (no thread held while they
 * wait), so the figure includes the engine's run overhead on both sides. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

#define ROWS 1000
#define FEATURES 784
#define BATCH 100
#define DEQUEUES 2000
#define REPEATS 3

typedef struct producer {
    tide_session *s;
    tide_node *enq;
    atomic_bool stop;
} producer;

static void *produce(void *arg)
{
    producer *p = arg;
    tide_error *err = tide_error_new();
    while (!atomic_load(&p->stop))
        if (tide_session_run(p->s, NULL, NULL, 0, NULL, 0, NULL, &p->enq, 1, NULL, err) != TIDE_OK)
            break; /* closed at the end */
    tide_error_free(err);
    return NULL;
}

static void fail(const char *what, tide_error *err)
{
    fprintf(stderr, "bench_queue: %s: %s\n", what, tide_error_message(err));
    exit(1);
}

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(0, 0, 0);
    tide_graph *g = tide_graph_new();
    tide_dtype dt = TIDE_FLOAT32;
    tide_shape row = tide_shape_vector(FEATURES);
    tide_queue_options o = {.kind = TIDE_QUEUE_FIFO, .capacity = 5000, .num_components = 1, .dtypes = &dt,
                            .shapes = &row, .name = "q"};
    tide_output q = tide_queue_new(g, &o, err);
    tide_tensor *batch = tide_tensor_new(TIDE_FLOAT32, &(tide_shape){2, {ROWS, FEATURES}}, err);
    float *p = tide_tensor_data(batch);
    for (int i = 0; i < ROWS * FEATURES; i++)
        p[i] = (float)(i % 255) / 255.0f;
    tide_node_builder *b = tide_node_builder_new(g, "Const", "batch");
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", batch);
    tide_node *c = tide_node_builder_finish(b, err);
    tide_node *enq = c ? tide_queue_enqueue(g, q, &(tide_output){c, 0}, 1, true, err) : NULL;
    tide_node *deq = enq ? tide_queue_dequeue(g, q, BATCH, false, err) : NULL;
    tide_node *close = deq ? tide_queue_close(g, q, true, err) : NULL;
    if (!close)
        fail("graph", err);
    double mbps[REPEATS], us[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        producer pr = {.s = tide_session_new(e, g, NULL, err), .enq = enq};
        tide_session *s = tide_session_new(e, g, NULL, err);
        atomic_init(&pr.stop, false);
        pthread_t t;
        pthread_create(&t, NULL, produce, &pr);
        tide_output out = {deq, 0};
        double t0 = bench_now();
        for (int i = 0; i < DEQUEUES; i++) {
            tide_tensor *v = NULL;
            if (tide_session_run(s, NULL, NULL, 0, &out, 1, &v, NULL, 0, NULL, err) != TIDE_OK)
                fail("dequeue_many", err);
            if (tide_tensor_dim(v, 0) != BATCH || tide_tensor_dim(v, 1) != FEATURES)
                fail("batch shape", err);
            tide_tensor_release(v);
        }
        double dt_s = bench_now() - t0;
        atomic_store(&pr.stop, true);
        if (tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &close, 1, NULL, err) != TIDE_OK)
            fail("close", err);
        pthread_join(t, NULL);
        mbps[r] = (double)DEQUEUES * BATCH * FEATURES * 4 / 1e6 / dt_s;
        us[r] = dt_s * 1e6 / DEQUEUES;
        tide_session_free(pr.s);
        tide_session_free(s);
        tide_engine_reset_container(e, "", err); /* a new, open queue for the next repeat */
    }
    char extra[160];
    snprintf(extra, sizeof extra, "\"batch\": [%d, %d], \"dtype\": \"float32\", \"dequeues\": %d, \"repeats\": %d",
             BATCH, FEATURES, DEQUEUES, REPEATS);
    bench_emit("queue.dequeue_many_mb_per_s", bench_median(mbps, REPEATS), "MB/s", extra);
    bench_emit("queue.dequeue_many_us_per_batch", bench_median(us, REPEATS), "us", extra);
    tide_tensor_release(batch);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
