/* test_queue.c — queues (engine/queue.c, docs/queues.md): FIFO order, batches, enqueue_many, several
 * producers and consumers over one queue (every element exactly once), close with blocked dequeuers
 * (OUT_OF_RANGE) and blocked enqueuers (cancel_pending_enqueues), dequeue_up_to's smaller last
 * batch, a blocked dequeue ended by a timeout, by tide_session_cancel and by SIGINT (a handler that
 * cancels, as the REPL's Ctrl-C does), waits that hold no thread, a RandomShuffleQueue's output is a
 * permutation (and min_after_dequeue holds), a PaddingFIFOQueue pads, sharing across sessions, and
 * the errors a user can cause. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../harness.h"
#include "graph_util.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static tide_output fifo(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims,
                        int64_t capacity)
{
    tide_shape s = tide_shape_make(rank, dims);
    tide_queue_options o = {.kind = TIDE_QUEUE_FIFO, .capacity = capacity, .num_components = 1, .dtypes = &dt,
                            .shapes = rank >= 0 ? &s : NULL, .name = name};
    tide_error *err = tide_error_new();
    tide_output q = tide_queue_new(g, &o, err);
    if (!q.node)
        fprintf(stderr, "queue: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(q.node);
    tide_error_free(err);
    return q;
}

/* An enqueue (many: enqueue_many) of a placeholder x of dtype dt. */
static tide_node *enqueue_of(tide_graph *g, tide_output q, tide_node *x, bool many)
{
    tide_error *err = tide_error_new();
    tide_node *n = tide_queue_enqueue(g, q, &(tide_output){x, 0}, 1, many, err);
    if (!n)
        fprintf(stderr, "enqueue: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(n);
    tide_error_free(err);
    return n;
}

static tide_node *dequeue_of(tide_graph *g, tide_output q, int64_t n, bool up_to)
{
    tide_error *err = tide_error_new();
    tide_node *d = tide_queue_dequeue(g, q, n, up_to, err);
    if (!d)
        fprintf(stderr, "dequeue: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(d);
    tide_error_free(err);
    return d;
}

static tide_status feed_run(tide_session *s, tide_node *ph, tide_tensor *v, tide_node *target, tide_error *err)
{
    tide_feed f = {{ph, 0}, v};
    return tide_session_run(s, NULL, &f, 1, NULL, 0, NULL, &target, 1, NULL, err);
}

static tide_status enqueue_i32(tide_session *s, tide_node *ph, tide_node *enq, int32_t v)
{
    tide_tensor *t = th_i32(0, NULL, &v);
    tide_error *err = tide_error_new();
    tide_status st = feed_run(s, ph, t, enq, err);
    tide_tensor_release(t);
    tide_error_free(err);
    return st;
}

/* Fetches output 0 of n with run options; the status, and the value in *out. */
static tide_status fetch(tide_session *s, const tide_run_options *opts, tide_node *n, tide_tensor **out,
                         tide_error *err)
{
    *out = NULL;
    return tide_session_run(s, opts, NULL, 0, &(tide_output){n, 0}, 1, out, NULL, 0, NULL, err);
}

static int32_t fetch_i32(tide_session *s, tide_node *n)
{
    tide_tensor *t;
    tide_error *err = tide_error_new();
    tide_status st = fetch(s, NULL, n, &t, err);
    if (st != TIDE_OK)
        fprintf(stderr, "fetch: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    int32_t v = *(int32_t *)tide_tensor_data(t);
    tide_tensor_release(t);
    tide_error_free(err);
    return v;
}

static void test_fifo_order_and_batches(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "order", TIDE_INT32, 0, NULL, 100);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *xs = gu_placeholder(g, "xs", TIDE_INT32, 1, (int64_t[]){-1});
    tide_node *enq = enqueue_of(g, q, x, false), *enq_many = enqueue_of(g, q, xs, true);
    tide_node *deq = dequeue_of(g, q, -1, false), *deq3 = dequeue_of(g, q, 3, false);
    tide_error *err = tide_error_new();
    tide_output size = tide_queue_size(g, q, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    for (int32_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, i), TIDE_OK);
    int32_t rows[] = {4, 5, 6};
    tide_tensor *batch = th_i32(1, (int64_t[]){3}, rows);
    CU_ASSERT_EQUAL(feed_run(s, xs, batch, enq_many, err), TIDE_OK);
    tide_tensor_release(batch);
    CU_ASSERT_EQUAL(fetch_i32(s, size.node), 7);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 0);
    tide_tensor *t;
    CU_ASSERT_EQUAL_FATAL(fetch(s, NULL, deq3, &t, err), TIDE_OK);
    th_assert_shape_impl(t, 1, (int64_t[]){3}, __FILE__, __LINE__);
    int32_t *v = tide_tensor_data(t);
    CU_ASSERT(v[0] == 1 && v[1] == 2 && v[2] == 3);
    tide_tensor_release(t);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 4);
    CU_ASSERT_EQUAL(fetch_i32(s, size.node), 2);
    /* A second session over the same engine sees the same queue (shared by name). */
    tide_session *other = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(fetch_i32(other, deq), 5);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 6);
    tide_session_free(other);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- producers and consumers */

typedef struct worker {
    tide_session *s;
    tide_node *ph, *op;
    int first, count;          /* producers: the values first .. first+count-1 */
    int64_t sum, got;          /* consumers: what they dequeued until OUT_OF_RANGE */
    tide_status end;
    int32_t *seen;             /* consumers: counts per value (shared, atomically) */
} worker;

static void *produce(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < w->count; i++) {
        tide_status st = enqueue_i32(w->s, w->ph, w->op, w->first + i);
        CU_ASSERT_EQUAL(st, TIDE_OK);
    }
    return NULL;
}

static void *consume(void *arg)
{
    worker *w = arg;
    tide_error *err = tide_error_new();
    for (;;) {
        tide_tensor *t;
        tide_status st = fetch(w->s, NULL, w->op, &t, err);
        if (st != TIDE_OK) {
            w->end = st;
            break;
        }
        int32_t v = *(int32_t *)tide_tensor_data(t);
        __atomic_fetch_add(&w->seen[v], 1, __ATOMIC_RELAXED);
        w->sum += v;
        w->got++;
        tide_tensor_release(t);
    }
    tide_error_free(err);
    return NULL;
}

/* 4 producers and 4 consumers (each its own session) over a queue of capacity 5: producers wait for
 * room and consumers for elements, all holding no thread; closing ends the consumers with
 * OUT_OF_RANGE once it is empty. Every value arrives exactly once. */
static void test_producers_and_consumers(void)
{
    enum { PRODUCERS = 4, CONSUMERS = 4, EACH = 300 };
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "many_hands", TIDE_INT32, 0, NULL, 5);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, -1, false);
    tide_error *err = tide_error_new();
    tide_node *close = tide_queue_close(g, q, false, err);
    int32_t *seen = calloc(PRODUCERS * EACH, sizeof *seen);
    worker p[PRODUCERS], c[CONSUMERS];
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        c[i] = (worker){.s = tide_session_new(th_engine(), g, NULL, NULL), .op = deq, .seen = seen};
        pthread_create(&ct[i], NULL, consume, &c[i]);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (worker){.s = tide_session_new(th_engine(), g, NULL, NULL), .ph = x, .op = enq, .first = i * EACH,
                        .count = EACH};
        pthread_create(&pt[i], NULL, produce, &p[i]);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(gu_target(s, close, err), TIDE_OK);
    int64_t got = 0, sum = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        pthread_join(ct[i], NULL);
        CU_ASSERT_EQUAL(c[i].end, TIDE_OUT_OF_RANGE);
        got += c[i].got;
        sum += c[i].sum;
        tide_session_free(c[i].s);
    }
    for (int i = 0; i < PRODUCERS; i++)
        tide_session_free(p[i].s);
    CU_ASSERT_EQUAL(got, PRODUCERS * EACH);
    CU_ASSERT_EQUAL(sum, (int64_t)PRODUCERS * EACH * (PRODUCERS * EACH - 1) / 2);
    int wrong = 0;
    for (int v = 0; v < PRODUCERS * EACH; v++)
        wrong += seen[v] != 1;
    CU_ASSERT_EQUAL(wrong, 0);
    /* Closed: an enqueue fails with CANCELLED and says so. */
    int32_t one = 1;
    tide_tensor *t = th_i32(0, NULL, &one);
    CU_ASSERT_EQUAL(feed_run(s, x, t, enq, err), TIDE_CANCELLED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "FIFOQueue 'many_hands' is closed"));
    tide_tensor_release(t);
    free(seen);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- close, timeouts, cancellation */

typedef struct run_arg {
    tide_session *s;
    tide_node *node;
    tide_run_options opts;
    tide_status st;
    tide_tensor *value;
    char message[512];
    atomic_bool done;
} run_arg;

static void *run_fetch(void *arg)
{
    run_arg *r = arg;
    tide_error *err = tide_error_new();
    r->st = fetch(r->s, &r->opts, r->node, &r->value, err);
    snprintf(r->message, sizeof r->message, "%s", tide_error_message(err));
    tide_error_free(err);
    atomic_store(&r->done, true);
    return NULL;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-6;
}

/* Blocked dequeuers (more of them than the engine has threads: waiting holds none) are woken by
 * close: one gets the last element, a dequeue_up_to the smaller batch, the rest OUT_OF_RANGE. */
static void test_close_wakes_dequeuers(void)
{
    enum { WAITERS = 24 };
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "closing", TIDE_INT32, 0, NULL, -1);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, -1, false);
    tide_error *err = tide_error_new();
    tide_node *close = tide_queue_close(g, q, false, err);
    tide_output size = tide_queue_size(g, q, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    run_arg r[WAITERS];
    pthread_t t[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        r[i] = (run_arg){.s = s, .node = deq};
        pthread_create(&t[i], NULL, run_fetch, &r[i]);
    }
    sleep_ms(100);
    /* They all wait; the engine still runs other work (size) meanwhile. */
    CU_ASSERT_EQUAL(fetch_i32(s, size.node), 0);
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 42), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(s, close, err), TIDE_OK);
    int ok = 0, out_of_range = 0;
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(t[i], NULL);
        if (r[i].st == TIDE_OK) {
            ok++;
            CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(r[i].value), 42);
            tide_tensor_release(r[i].value);
        } else if (r[i].st == TIDE_OUT_OF_RANGE) {
            out_of_range++;
            CU_ASSERT_PTR_NOT_NULL(strstr(r[i].message, "FIFOQueue 'closing' is closed and has insufficient "
                                                        "elements (requested 1, current size 0)"));
        }
    }
    CU_ASSERT_EQUAL(ok, 1);
    CU_ASSERT_EQUAL(out_of_range, WAITERS - 1);

    /* A second queue: 3 elements, then close: dequeue_many(5) fails and gives them back, dequeue_up_to(5)
     * returns the 3. */
    tide_graph *g2 = tide_graph_new();
    tide_output q2 = fifo(g2, "closing2", TIDE_INT32, 0, NULL, -1);
    tide_node *x2 = gu_placeholder(g2, "x", TIDE_INT32, 0, NULL);
    tide_node *enq2 = enqueue_of(g2, q2, x2, false);
    tide_node *many2 = dequeue_of(g2, q2, 5, false), *up_to2 = dequeue_of(g2, q2, 5, true);
    tide_node *close2 = tide_queue_close(g2, q2, false, err);
    tide_session *s2 = tide_session_new(th_engine(), g2, NULL, NULL);
    run_arg waiting = {.s = s2, .node = many2};
    pthread_t wt;
    pthread_create(&wt, NULL, run_fetch, &waiting);
    for (int32_t i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(enqueue_i32(s2, x2, enq2, i), TIDE_OK);
    sleep_ms(50);
    CU_ASSERT_EQUAL(gu_target(s2, close2, err), TIDE_OK);
    pthread_join(wt, NULL);
    CU_ASSERT_EQUAL(waiting.st, TIDE_OUT_OF_RANGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(waiting.message, "(requested 5, current size 3)"));
    tide_tensor *v;
    CU_ASSERT_EQUAL_FATAL(fetch(s2, NULL, up_to2, &v, err), TIDE_OK);
    th_assert_shape_impl(v, 1, (int64_t[]){3}, __FILE__, __LINE__);
    int32_t *e = tide_tensor_data(v);
    CU_ASSERT(e[0] == 0 && e[1] == 1 && e[2] == 2); /* in order: the failed batch gave them back in front */
    tide_tensor_release(v);
    CU_ASSERT_EQUAL(fetch(s2, NULL, up_to2, &v, err), TIDE_OUT_OF_RANGE);
    tide_session_free(s2);
    tide_graph_free(g2);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

typedef struct feeder {
    tide_session *s;
    tide_node *x, *enq;
    int32_t value;
    tide_run_options opts;
    tide_status st;
    char message[512];
} feeder;

static void *run_enqueue(void *arg)
{
    feeder *f = arg;
    tide_tensor *t = th_i32(0, NULL, &f->value);
    tide_error *err = tide_error_new();
    tide_feed feed = {{f->x, 0}, t};
    f->st = tide_session_run(f->s, &f->opts, &feed, 1, NULL, 0, NULL, &f->enq, 1, NULL, err);
    snprintf(f->message, sizeof f->message, "%s", tide_error_message(err));
    tide_error_free(err);
    tide_tensor_release(t);
    return NULL;
}

/* An enqueue blocked on a full queue: close leaves it waiting (TensorFlow's rule: it may still
 * complete), close with cancel_pending_enqueues fails it with CANCELLED; what is queued can still be
 * dequeued, then OUT_OF_RANGE. A second blocked enqueue completes when a dequeue makes room. */
static void test_close_cancels_pending_enqueues(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "full", TIDE_INT32, 0, NULL, 1);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, -1, false);
    tide_error *err = tide_error_new();
    tide_node *close = tide_queue_close(g, q, false, err), *cancel = tide_queue_close(g, q, true, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 1), TIDE_OK);
    feeder f = {.s = s, .x = x, .enq = enq, .value = 2};
    pthread_t th;
    pthread_create(&th, NULL, run_enqueue, &f);
    sleep_ms(50);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 1); /* makes room: the waiting enqueue completes */
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(f.st, TIDE_OK);
    f.value = 3;
    pthread_create(&th, NULL, run_enqueue, &f);
    sleep_ms(200);
    CU_ASSERT_EQUAL(gu_target(s, close, err), TIDE_OK);
    sleep_ms(50);
    CU_ASSERT_EQUAL(gu_target(s, cancel, err), TIDE_OK);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(f.st, TIDE_CANCELLED);
    /* (on a loaded machine the enqueue may start only after the close: then it is refused at once) */
    CU_ASSERT(strstr(f.message, "closed with cancel_pending_enqueues") || strstr(f.message, "'full' is closed"));
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 2);
    tide_tensor *t;
    CU_ASSERT_EQUAL(fetch(s, NULL, deq, &t, err), TIDE_OUT_OF_RANGE);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A blocked dequeue ends at its run's timeout, by tide_session_cancel from another thread, and by
 * SIGINT through a handler that cancels (the REPL's Ctrl-C); the queue is usable afterwards and the
 * element that comes later goes to the next dequeue. A blocked enqueue ends at its timeout too. */
static tide_session *sigint_session;
static void on_sigint(int sig)
{
    (void)sig;
    tide_session_cancel(sigint_session);
}

static atomic_bool sigint_done;
static void *send_sigint(void *arg)
{
    (void)arg;
    while (!atomic_load(&sigint_done)) { /* a signal before the run starts does not touch it */
        sleep_ms(100);
        kill(getpid(), SIGINT);
    }
    return NULL;
}

static void test_timeout_cancel_and_sigint(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "patience", TIDE_INT32, 0, NULL, 1);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, -1, false);
    tide_node *deq_many = dequeue_of(g, q, 2, false);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *t;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tide_run_options opts = {.timeout_ms = 300}; /* the wait starts well before it, even under a sanitizer */
    CU_ASSERT_EQUAL(fetch(s, &opts, deq, &t, err), TIDE_DEADLINE_EXCEEDED);
    double ms = ms_since(&t0);
    CU_ASSERT(ms >= 295 && ms < 60000); /* not a timing check: the lower bound, and no hang */
    /* (had the deadline passed before the dequeue waited, the executor would have said it instead) */
    CU_ASSERT(strstr(tide_error_message(err), "waiting to dequeue from queue 'patience': the run exceeded its "
                                               "timeout (300 ms)") ||
              strstr(tide_error_message(err), "exceeded its timeout"));

    /* dequeue_many took one element, then timed out: the element goes back. */
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 7), TIDE_OK);
    CU_ASSERT_EQUAL(fetch(s, &opts, deq_many, &t, err), TIDE_DEADLINE_EXCEEDED);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 7);

    run_arg r = {.s = s, .node = deq};
    pthread_t th;
    pthread_create(&th, NULL, run_fetch, &r);
    /* A cancel before the run starts does not touch it: cancel until it ends. */
    while (!atomic_load(&r.done)) {
        sleep_ms(50);
        tide_session_cancel(s);
    }
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(r.st, TIDE_CANCELLED);

    sigint_session = s;
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    atomic_store(&sigint_done, false);
    pthread_create(&th, NULL, send_sigint, NULL);
    CU_ASSERT_EQUAL(fetch(s, NULL, deq, &t, err), TIDE_CANCELLED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cancelled"));
    atomic_store(&sigint_done, true);
    pthread_join(th, NULL);
    sigaction(SIGINT, &old, NULL);

    /* The next element goes to the next dequeue, not to a cancelled one. */
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 9), TIDE_OK);
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 9);

    /* A full queue: the enqueue waits, and its timeout ends it. */
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 10), TIDE_OK);
    feeder f = {.s = s, .x = x, .enq = enq, .value = 11, .opts = {.timeout_ms = 300}};
    run_enqueue(&f);
    CU_ASSERT_EQUAL(f.st, TIDE_DEADLINE_EXCEEDED);
    CU_ASSERT(strstr(f.message, "waiting to enqueue into queue 'patience'") || strstr(f.message, "exceeded its timeout"));
    CU_ASSERT_EQUAL(fetch_i32(s, deq), 10);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A cancel that comes after the caller's mark but before its run starts (the REPL's Ctrl-C landing
 * between its interrupted check and tide_session_run) cancels the run: the blocked dequeue ends
 * CANCELLED, not at the safety timeout. A mark taken after the cancel leaves the run alone. */
static void test_cancel_between_mark_and_run(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "gap", TIDE_INT32, 0, NULL, 1);
    tide_node *x = gu_placeholder(g, "x", TIDE_INT32, 0, NULL);
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, -1, false);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *t = NULL;
    tide_run_options opts = {.timeout_ms = 5000}; /* only against a hang: the cancel must end it first */
    tide_session_cancel_mark(s, &opts);
    tide_session_cancel(s);
    CU_ASSERT_EQUAL(fetch(s, &opts, deq, &t, err), TIDE_CANCELLED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cancelled"));

    tide_run_options fresh = {.timeout_ms = 5000};
    tide_session_cancel_mark(s, &fresh);
    CU_ASSERT_EQUAL(enqueue_i32(s, x, enq, 5), TIDE_OK);
    CU_ASSERT_EQUAL(fetch(s, &fresh, deq, &t, err), TIDE_OK);
    CU_ASSERT(t && *(const int32_t *)tide_tensor_data(t) == 5);
    tide_tensor_release(t);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* Resetting the container closes the queue: a blocked dequeue ends (OUT_OF_RANGE), the handle no longer
 * finds it (NOT_FOUND naming the container), and running the queue op again makes a new one. */
static void test_container_reset(void)
{
    tide_graph *g = tide_graph_new();
    tide_dtype dt = TIDE_INT32;
    tide_queue_options o = {.kind = TIDE_QUEUE_FIFO, .num_components = 1, .dtypes = &dt, .container = "pipeline",
                            .name = "resettable"};
    tide_error *err = tide_error_new();
    tide_output q = tide_queue_new(g, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q.node);
    tide_node *deq = dequeue_of(g, q, -1, false);
    tide_output size = tide_queue_size(g, q, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    run_arg r = {.s = s, .node = deq};
    pthread_t th;
    pthread_create(&th, NULL, run_fetch, &r);
    while (!atomic_load(&r.done)) { /* a reset before the run starts leaves it a new queue: reset again */
        sleep_ms(50);
        tide_status st = tide_engine_reset_container(th_engine(), "pipeline", err);
        CU_ASSERT(st == TIDE_OK || st == TIDE_NOT_FOUND); /* NOT_FOUND: the queue op has not run yet */
    }
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(r.st, TIDE_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(fetch_i32(s, size.node), 0); /* the queue op ran again: a new, empty queue */
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A RandomShuffleQueue's output is a permutation of its input, another order than FIFO's, the same
 * order for the same seed; while open it keeps min_after_dequeue elements. */
static void shuffled(int64_t seed, const char *name, int32_t *out, int n)
{
    tide_graph *g = tide_graph_new();
    tide_dtype dt = TIDE_INT32;
    tide_shape scalar = tide_shape_scalar();
    tide_queue_options o = {.kind = TIDE_QUEUE_RANDOM_SHUFFLE, .num_components = 1, .dtypes = &dt, .shapes = &scalar,
                            .capacity = 1000, .min_after_dequeue = 10, .seed = seed, .name = name};
    tide_error *err = tide_error_new();
    tide_output q = tide_queue_new(g, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q.node);
    tide_node *xs = gu_placeholder(g, "xs", TIDE_INT32, 1, (int64_t[]){-1});
    tide_node *enq = enqueue_of(g, q, xs, true), *deq = dequeue_of(g, q, -1, false);
    tide_node *close = tide_queue_close(g, q, false, err);
    tide_output size = tide_queue_size(g, q, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    int32_t *in = malloc(sizeof *in * (size_t)n);
    for (int i = 0; i < n; i++)
        in[i] = i;
    tide_tensor *t = th_i32(1, (int64_t[]){n}, in);
    CU_ASSERT_EQUAL(feed_run(s, xs, t, enq, err), TIDE_OK);
    tide_tensor_release(t);
    for (int i = 0; i < n - 10; i++)
        out[i] = fetch_i32(s, deq);
    CU_ASSERT_EQUAL(fetch_i32(s, size.node), 10);
    tide_tensor *none;
    tide_run_options opts = {.timeout_ms = 30};
    CU_ASSERT_EQUAL(fetch(s, &opts, deq, &none, err), TIDE_DEADLINE_EXCEEDED); /* 10 are kept while open */
    CU_ASSERT_EQUAL(gu_target(s, close, err), TIDE_OK);
    for (int i = n - 10; i < n; i++)
        out[i] = fetch_i32(s, deq);
    free(in);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_random_shuffle_permutation(void)
{
    enum { N = 200 };
    int32_t a[N], b[N], c[N];
    shuffled(7, "shuffle_a", a, N);
    shuffled(7, "shuffle_b", b, N);
    shuffled(8, "shuffle_c", c, N);
    int count[N] = {0}, in_order = 0;
    for (int i = 0; i < N; i++) {
        CU_ASSERT_FATAL(a[i] >= 0 && a[i] < N);
        count[a[i]]++;
        in_order += a[i] == i;
    }
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += count[i] != 1;
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(in_order < N / 4);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a, c, sizeof a), 0);
}

/* PaddingFIFOQueue: vectors of lengths 1..3 come out as a [3, 3] batch padded with zeros. */
static void test_padding(void)
{
    tide_graph *g = tide_graph_new();
    tide_dtype dt = TIDE_FLOAT32;
    tide_shape any_len = tide_shape_make(1, (int64_t[]){-1});
    tide_queue_options o = {.kind = TIDE_QUEUE_PADDING_FIFO, .num_components = 1, .dtypes = &dt, .shapes = &any_len,
                            .name = "padded"};
    tide_error *err = tide_error_new();
    tide_output q = tide_queue_new(g, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q.node);
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 1, (int64_t[]){-1});
    tide_node *enq = enqueue_of(g, q, x, false), *deq = dequeue_of(g, q, 3, false);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    float v[3] = {1, 2, 3};
    for (int n = 1; n <= 3; n++) {
        tide_tensor *t = th_f32(1, (int64_t[]){n}, v);
        CU_ASSERT_EQUAL(feed_run(s, x, t, enq, err), TIDE_OK);
        tide_tensor_release(t);
    }
    tide_tensor *got;
    CU_ASSERT_EQUAL_FATAL(fetch(s, NULL, deq, &got, err), TIDE_OK);
    float want[9] = {1, 0, 0, 1, 2, 0, 1, 2, 3};
    tide_tensor *w = th_f32(2, (int64_t[]){3, 3}, want);
    th_assert_close_impl(got, w, 0, 0, __FILE__, __LINE__);
    tide_tensor_release(w);
    tide_tensor_release(got);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* What a user can get wrong, each with a message that says what. */
static void test_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "strict", TIDE_FLOAT32, 1, (int64_t[]){2}, 10);
    tide_node *xf = gu_placeholder(g, "xf", TIDE_FLOAT32, -1, NULL);
    tide_node *xi = gu_placeholder(g, "xi", TIDE_INT32, -1, NULL);
    tide_node *enq_f = enqueue_of(g, q, xf, false), *enq_i = enqueue_of(g, q, xi, false);
    tide_node *enq_many = enqueue_of(g, q, xf, true);
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    float three[3] = {1, 2, 3};
    tide_tensor *t3 = th_f32(1, (int64_t[]){3}, three);
    CU_ASSERT_EQUAL(feed_run(s, xf, t3, enq_f, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "queue 'strict': component 0 has shape [3], but the queue "
                                                            "holds [2]"));
    CU_ASSERT_EQUAL(feed_run(s, xf, t3, enq_many, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "component 0 (one row) has shape []"));
    int32_t two[2] = {1, 2};
    tide_tensor *ti = th_i32(1, (int64_t[]){2}, two);
    CU_ASSERT_EQUAL(feed_run(s, xi, ti, enq_i, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "component 0 has dtype int32, but the queue holds float32"));
    tide_tensor_release(t3);
    tide_tensor_release(ti);

    /* The same shared name with another declaration. */
    tide_dtype dt = TIDE_INT32;
    tide_queue_options o = {.kind = TIDE_QUEUE_FIFO, .num_components = 1, .dtypes = &dt, .shared_name = "strict",
                            .name = "impostor"};
    tide_output other = tide_queue_new(g, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other.node);
    tide_tensor *h;
    CU_ASSERT_EQUAL(fetch(s, NULL, q.node, &h, err), TIDE_OK);
    tide_tensor_release(h);
    CU_ASSERT_EQUAL(fetch(s, NULL, other.node, &h, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "queue 'strict' of container '' exists as a FIFOQueue"));

    /* Options refused when the node is built. */
    tide_queue_options bad = {.kind = TIDE_QUEUE_RANDOM_SHUFFLE, .num_components = 1, .dtypes = &dt, .capacity = 5,
                              .min_after_dequeue = 5};
    tide_output b = tide_queue_new(g, &bad, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b.node); /* checked when it runs */
    CU_ASSERT_EQUAL(fetch(s, NULL, b.node, &h, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "min_after_dequeue (5) must be below capacity (5)"));
    bad = (tide_queue_options){.kind = TIDE_QUEUE_PADDING_FIFO, .num_components = 1, .dtypes = &dt};
    b = tide_queue_new(g, &bad, err);
    CU_ASSERT_EQUAL(fetch(s, NULL, b.node, &h, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "a PaddingFIFOQueue needs shapes"));
    CU_ASSERT_PTR_NULL(tide_queue_dequeue(g, (tide_output){xf, 0}, -1, false, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "a dequeue needs the queue op's handle"));

    /* A blocked dequeue run eagerly is refused (nothing could end the wait). */
    tide_tensor *handle;
    CU_ASSERT_EQUAL(fetch(s, NULL, q.node, &handle, err), TIDE_OK);
    tide_attrs *attrs = tide_attrs_new();
    tide_dtype f32 = TIDE_FLOAT32;
    tide_attrs_set_type_list(attrs, "component_types", &f32, 1);
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_engine_run_op(th_engine(), "QueueDequeueV2", &handle, 1, attrs, &out, 1, NULL, err),
                    TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "eagerly"));
    tide_attrs_free(attrs);
    tide_tensor_release(handle);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- queue runners */

static tide_node *const_i32(tide_graph *g, int32_t v)
{
    return gu_const(g, NULL, th_i32(0, NULL, &v));
}

/* Two runner threads enqueue a counter's next values (AssignAdd) into a queue of capacity 4; the user
 * dequeues 200 of them (all different), then stops: the threads blocked on the full queue end, join
 * returns OK. A runner whose enqueue fails for another reason stops the coordinator with that error.
 * A queue closed by the user ends the runner's threads normally. */
static void test_queue_runner(void)
{
    tide_graph *g = tide_graph_new();
    tide_output q = fifo(g, "fed", TIDE_INT32, 0, NULL, 4);
    tide_node *counter = gu_variable(g, "counter", TIDE_INT32, 0, NULL, NULL);
    tide_node *init = gu_op(g, "Assign", "init", 2, (tide_node *[]){counter, const_i32(g, 0)});
    tide_node *next = gu_op(g, "AssignAdd", "next", 2, (tide_node *[]){counter, const_i32(g, 1)});
    tide_node *enq = enqueue_of(g, q, next, false), *deq = dequeue_of(g, q, -1, false);
    tide_error *err = tide_error_new();
    tide_node *close = tide_queue_close(g, q, false, err), *cancel = tide_queue_close(g, q, true, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(gu_target(s, init, err), TIDE_OK);
    tide_coordinator *c = tide_coordinator_new(err);
    tide_queue_runner *r = tide_queue_runner_new((tide_node *[]){enq, enq}, 2, close, cancel, err);
    CU_ASSERT_EQUAL_FATAL(tide_queue_runner_start(r, s, c, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_queue_runner_start(r, s, c, err), TIDE_FAILED_PRECONDITION);
    bool seen[300] = {false};
    int dup = 0;
    for (int i = 0; i < 200; i++) {
        int32_t v = fetch_i32(s, deq);
        CU_ASSERT_FATAL(v >= 1 && v < 300);
        dup += seen[v];
        seen[v] = true;
    }
    CU_ASSERT_EQUAL(dup, 0);
    CU_ASSERT(!tide_coordinator_should_stop(c));
    CU_ASSERT_EQUAL(tide_coordinator_join(c, err), TIDE_OK); /* requests the stop, wakes the blocked enqueues */
    CU_ASSERT(tide_coordinator_should_stop(c));
    CU_ASSERT(tide_queue_runner_runs(r) >= 200);
    tide_queue_runner_free(r);
    tide_coordinator_free(c);

    /* The user closes the queue: the runner's threads end (CANCELLED is a normal end), no error. */
    tide_graph *g2 = tide_graph_new();
    tide_output q2 = fifo(g2, "fed2", TIDE_INT32, 0, NULL, 2);
    tide_node *one = const_i32(g2, 1);
    tide_node *enq2 = enqueue_of(g2, q2, one, false);
    tide_node *close2 = tide_queue_close(g2, q2, true, err);
    tide_session *s2 = tide_session_new(th_engine(), g2, NULL, NULL);
    c = tide_coordinator_new(err);
    r = tide_queue_runner_new(&enq2, 1, close2, close2, err);
    CU_ASSERT_EQUAL_FATAL(tide_queue_runner_start(r, s2, c, err), TIDE_OK);
    sleep_ms(30);
    CU_ASSERT_EQUAL(gu_target(s2, close2, err), TIDE_OK);
    CU_ASSERT(!tide_coordinator_wait_for_stop(c, 50));
    CU_ASSERT_EQUAL(tide_coordinator_join(c, err), TIDE_OK);
    tide_queue_runner_free(r);
    tide_coordinator_free(c);

    /* An enqueue that fails (a float into an int32 queue) stops the coordinator with its error. */
    tide_node *wrong = gu_scalar_f32(g2, "wrong", 1);
    tide_output q3 = fifo(g2, "fed3", TIDE_INT32, 0, NULL, 2);
    tide_node *enq3 = enqueue_of(g2, q3, wrong, false);
    c = tide_coordinator_new(err);
    r = tide_queue_runner_new(&enq3, 1, NULL, NULL, err);
    CU_ASSERT_EQUAL_FATAL(tide_queue_runner_start(r, s2, c, err), TIDE_OK);
    CU_ASSERT(tide_coordinator_wait_for_stop(c, 120000)); /* returns at the stop: the bound only ends a hang */
    CU_ASSERT_EQUAL(tide_coordinator_join(c, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "component 0 has dtype float32, but the queue holds int32"));
    tide_queue_runner_free(r);
    tide_coordinator_free(c);
    CU_ASSERT_PTR_NULL(tide_queue_runner_new(NULL, 0, NULL, NULL, err));
    tide_session_free(s2);
    tide_graph_free(g2);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_fifo_order_and_batches), TH_TEST(test_producers_and_consumers),
                                    TH_TEST(test_close_wakes_dequeuers), TH_TEST(test_close_cancels_pending_enqueues),
                                    TH_TEST(test_timeout_cancel_and_sigint),
                                    TH_TEST(test_cancel_between_mark_and_run), TH_TEST(test_container_reset),
                                    TH_TEST(test_random_shuffle_permutation), TH_TEST(test_padding),
                                    TH_TEST(test_errors), TH_TEST(test_queue_runner), TH_END};
    return th_main("queue", tests);
}
