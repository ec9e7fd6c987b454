/* queue_runner.c — queue runners and their coordinator (tide_queue.h; TensorFlow's tf.train.QueueRunner
 * and tf.train.Coordinator). A runner starts one thread per enqueue op, each running it again and
 * again in a session of its own (so that cancelling the user's session, Ctrl-C, leaves the pipeline
 * alone), and one monitor thread that, when the coordinator is asked to stop, cancels those sessions
 * (which wakes enqueues blocked on a full queue or readers) and runs cancel_op; after the last
 * enqueue thread ends it runs close_op, so that consumers get what is left and then OUT_OF_RANGE.
 * The coordinator keeps the first error a thread stopped with; join waits for every runner. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "tide_queue.h"

struct tide_coordinator {
    pthread_mutex_t lock;
    pthread_cond_t changed;       /* a stop was requested, or a runner ended */
    bool stop;
    tide_error *error;            /* the first error a stop came with (NULL: none) */
    tide_queue_runner **runners;  /* started with it, for join */
    int num_runners, cap_runners;
};

typedef struct runner_thread {
    tide_queue_runner *r;
    tide_node *op;
    tide_session *session;
    pthread_t thread;
} runner_thread;

struct tide_queue_runner {
    tide_node **ops;
    int num_ops;
    tide_node *close_op, *cancel_op;
    tide_coordinator *coord;
    tide_session *control;        /* runs close_op and cancel_op */
    runner_thread *threads;
    pthread_t monitor;
    int live;                     /* enqueue threads still running (coordinator's lock) */
    int num_started;              /* enqueue threads created */
    bool started, joined, has_monitor;
    atomic_llong runs;
};

/* ---------------------------------------------------------------- coordinator */

tide_coordinator *tide_coordinator_new(tide_error *err)
{
    tide_coordinator *c = calloc(1, sizeof *c);
    if (!c) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    return c;
}

void tide_coordinator_request_stop(tide_coordinator *c, const tide_error *why)
{
    pthread_mutex_lock(&c->lock);
    if (why && tide_error_code(why) != TIDE_OK && !c->error && (c->error = tide_error_new()))
        tide__error_copy(c->error, why);
    c->stop = true;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

bool tide_coordinator_should_stop(const tide_coordinator *c)
{
    tide_coordinator *m = (tide_coordinator *)c;
    pthread_mutex_lock(&m->lock);
    bool stop = m->stop;
    pthread_mutex_unlock(&m->lock);
    return stop;
}

bool tide_coordinator_wait_for_stop(tide_coordinator *c, int64_t timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ms >= 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        if (timeout_ms < 0)
            pthread_cond_wait(&c->changed, &c->lock);
        else if (pthread_cond_timedwait(&c->changed, &c->lock, &until) != 0)
            break;
    }
    bool stop = c->stop;
    pthread_mutex_unlock(&c->lock);
    return stop;
}

static void runner_join(tide_queue_runner *r);

tide_status tide_coordinator_join(tide_coordinator *c, tide_error *err)
{
    tide_coordinator_request_stop(c, NULL);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        tide_queue_runner *r = NULL;
        for (int i = 0; i < c->num_runners && !r; i++)
            if (!c->runners[i]->joined)
                r = c->runners[i];
        pthread_mutex_unlock(&c->lock);
        if (!r)
            break;
        runner_join(r);
    }
    pthread_mutex_lock(&c->lock);
    tide_status st = c->error ? tide_error_code(c->error) : TIDE_OK;
    if (c->error && err)
        tide__error_copy(err, c->error);
    pthread_mutex_unlock(&c->lock);
    return st;
}

void tide_coordinator_free(tide_coordinator *c)
{
    if (!c)
        return;
    tide_coordinator_join(c, NULL);
    for (int i = 0; i < c->num_runners; i++)
        c->runners[i]->coord = NULL;
    free(c->runners);
    tide_error_free(c->error);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* ---------------------------------------------------------------- runner threads */

static void run_op(tide_session *s, tide_node *op)
{
    if (!op)
        return;
    tide_error *err = tide_error_new();
    tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &op, 1, NULL, err); /* a closed queue closes again: fine */
    tide_error_free(err);
}

static void *enqueue_main(void *arg)
{
    runner_thread *t = arg;
    tide_queue_runner *r = t->r;
    tide_coordinator *c = r->coord;
    tide_error *err = tide_error_new();
    while (!tide_coordinator_should_stop(c)) {
        tide_status st = tide_session_run(t->session, NULL, NULL, 0, NULL, 0, NULL, &t->op, 1, NULL, err);
        if (st == TIDE_OK) {
            atomic_fetch_add(&r->runs, 1);
            continue;
        }
        /* OUT_OF_RANGE (a reader ran out, its input queue closed) and CANCELLED (this queue closed, or a
         * stop cancelled the session) end the thread normally; anything else stops everyone. */
        if (st != TIDE_OUT_OF_RANGE && st != TIDE_CANCELLED)
            tide_coordinator_request_stop(c, err);
        break;
    }
    tide_error_free(err);
    pthread_mutex_lock(&c->lock);
    bool last = --r->live == 0;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    if (last)
        run_op(r->control, r->close_op);
    return NULL;
}

/* Waits for a stop, or for every enqueue thread to end; on a stop cancels their runs (waking enqueues
 * blocked on a full queue) and runs cancel_op. */
static void *monitor_main(void *arg)
{
    tide_queue_runner *r = arg;
    tide_coordinator *c = r->coord;
    pthread_mutex_lock(&c->lock);
    while (!c->stop && r->live > 0)
        pthread_cond_wait(&c->changed, &c->lock);
    bool stopping = c->stop && r->live > 0;
    pthread_mutex_unlock(&c->lock);
    if (stopping) {
        for (int i = 0; i < r->num_ops; i++)
            tide_session_cancel(r->threads[i].session);
        run_op(r->control, r->cancel_op);
    }
    return NULL;
}

tide_queue_runner *tide_queue_runner_new(tide_node *const *enqueue_ops, int num_enqueue_ops, tide_node *close_op,
                                         tide_node *cancel_op, tide_error *err)
{
    if (num_enqueue_ops < 1 || !enqueue_ops) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a queue runner needs at least one enqueue op");
        return NULL;
    }
    for (int i = 0; i < num_enqueue_ops; i++)
        if (!enqueue_ops[i]) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "enqueue op %d is NULL", i);
            return NULL;
        }
    tide_queue_runner *r = calloc(1, sizeof *r);
    if (r && !(r->ops = malloc(sizeof *r->ops * (size_t)num_enqueue_ops))) {
        free(r);
        r = NULL;
    }
    if (!r) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    memcpy(r->ops, enqueue_ops, sizeof *r->ops * (size_t)num_enqueue_ops);
    r->num_ops = num_enqueue_ops;
    r->close_op = close_op;
    r->cancel_op = cancel_op;
    atomic_init(&r->runs, 0);
    return r;
}

static tide_status add_runner(tide_coordinator *c, tide_queue_runner *r, tide_error *err)
{
    pthread_mutex_lock(&c->lock);
    if (c->num_runners == c->cap_runners) {
        int cap = c->cap_runners ? c->cap_runners * 2 : 4;
        tide_queue_runner **grown = realloc(c->runners, sizeof *grown * (size_t)cap);
        if (!grown) {
            pthread_mutex_unlock(&c->lock);
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        }
        c->runners = grown;
        c->cap_runners = cap;
    }
    c->runners[c->num_runners++] = r;
    r->live = r->num_ops;
    pthread_mutex_unlock(&c->lock);
    return TIDE_OK;
}

tide_status tide_queue_runner_start(tide_queue_runner *r, tide_session *session, tide_coordinator *c, tide_error *err)
{
    if (r->started)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "the queue runner was started already");
    if (!session || !c)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a queue runner starts with a session and a coordinator");
    tide_engine *e = tide_session_engine(session);
    tide_graph *g = tide_session_graph(session);
    r->threads = calloc((size_t)r->num_ops, sizeof *r->threads);
    if (!r->threads)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    bool ok = (r->control = tide_session_new(e, g, NULL, err)) != NULL;
    for (int i = 0; ok && i < r->num_ops; i++) {
        r->threads[i] = (runner_thread){.r = r, .op = r->ops[i]};
        ok = (r->threads[i].session = tide_session_new(e, g, NULL, err)) != NULL;
    }
    if (ok)
        ok = add_runner(c, r, err) == TIDE_OK;
    if (!ok) {
        for (int i = 0; i < r->num_ops; i++)
            tide_session_free(r->threads[i].session);
        tide_session_free(r->control);
        free(r->threads);
        r->threads = NULL;
        r->control = NULL;
        return tide_error_code(err) != TIDE_OK ? tide_error_code(err) : TIDE_RESOURCE_EXHAUSTED;
    }
    r->coord = c;
    r->started = true;
    int created = 0;
    while (created < r->num_ops &&
           pthread_create(&r->threads[created].thread, NULL, enqueue_main, &r->threads[created]) == 0)
        created++;
    if (created < r->num_ops) { /* the process is out of threads: stop what started, and say so */
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "could not start queue runner thread %d of %d", created + 1,
                       r->num_ops);
        pthread_mutex_lock(&c->lock);
        r->live -= r->num_ops - created;
        pthread_mutex_unlock(&c->lock);
        tide_coordinator_request_stop(c, err);
    }
    r->num_started = created;
    r->has_monitor = pthread_create(&r->monitor, NULL, monitor_main, r) == 0;
    if (!r->has_monitor && created == r->num_ops) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "could not start the queue runner's monitor thread");
        tide_coordinator_request_stop(c, err);
        for (int i = 0; i < r->num_ops; i++)
            tide_session_cancel(r->threads[i].session);
    }
    return created == r->num_ops && r->has_monitor ? TIDE_OK : TIDE_RESOURCE_EXHAUSTED;
}

static void runner_join(tide_queue_runner *r)
{
    if (!r->started || r->joined)
        return;
    for (int i = 0; i < r->num_started; i++)
        pthread_join(r->threads[i].thread, NULL);
    if (r->has_monitor)
        pthread_join(r->monitor, NULL);
    r->joined = true;
}

int64_t tide_queue_runner_runs(const tide_queue_runner *r) { return atomic_load(&((tide_queue_runner *)r)->runs); }

void tide_queue_runner_free(tide_queue_runner *r)
{
    if (!r)
        return;
    if (r->started && !r->joined && r->coord) {
        tide_coordinator_request_stop(r->coord, NULL);
        runner_join(r);
    }
    for (int i = 0; r->threads && i < r->num_ops; i++)
        tide_session_free(r->threads[i].session);
    tide_session_free(r->control);
    if (r->coord) { /* forget it in its coordinator */
        tide_coordinator *c = r->coord;
        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < c->num_runners; i++)
            if (c->runners[i] == r)
                c->runners[i] = c->runners[--c->num_runners];
        pthread_mutex_unlock(&c->lock);
    }
    free(r->threads);
    free(r->ops);
    free(r);
}
