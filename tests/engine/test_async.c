/* test_async.c — asynchronous kernels (the interface queues and Recv will use): test-only ops whose
 * kernels finish on another thread. Checks results, that waiting holds no executor thread, failures,
 * cancellation from another thread, timeouts, and eager calls; and kernels that wait for an event
 * with nothing polling (tide_kernel_on_cancel), woken by the event, a timeout, tide_session_cancel,
 * another node's failure and tide_session_close, with the event and the cancellation racing. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/graph_util.h"
#include "tide_op.h"

typedef struct job {
    tide_kernel_ctx *ctx;
    int mode; /* 0: copy after a delay, 1: fail, 2: wait until cancelled */
} job;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *finish_later(void *arg)
{
    job *j = arg;
    tide_kernel_ctx *ctx = j->ctx;
    int mode = j->mode;
    free(j);
    if (mode == 0) {
        sleep_ms(20);
        tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
        tide_kernel_done(ctx, TIDE_OK);
    } else if (mode == 1) {
        tide_kernel_done(ctx, tide_kernel_error(ctx, TIDE_UNAVAILABLE, "the remote end went away"));
    } else {
        for (int i = 0; i < 10000 && !tide_kernel_cancelled(ctx); i++)
            sleep_ms(1);
        tide_kernel_done(ctx, tide_kernel_error(ctx, TIDE_CANCELLED, "stopped waiting"));
    }
    return NULL;
}

static void start(tide_kernel_ctx *ctx, int mode)
{
    job *j = malloc(sizeof *j);
    j->ctx = ctx;
    j->mode = mode;
    pthread_t t;
    pthread_create(&t, NULL, finish_later, j);
    pthread_detach(t);
}

static void copy_async(tide_kernel_ctx *ctx) { start(ctx, 0); }
static void fail_async(tide_kernel_ctx *ctx) { start(ctx, 1); }
static void wait_async(tide_kernel_ctx *ctx) { start(ctx, 2); }

static void register_test_ops(void)
{
    const char *names[3] = {"TestAsyncCopy", "TestAsyncFail", "TestAsyncWait"};
    void (*fns[3])(tide_kernel_ctx *) = {copy_async, fail_async, wait_async};
    for (int i = 0; i < 3; i++) {
        tide_op_register(&(tide_op_spec){.name = names[i], .inputs = {"x: T"}, .outputs = {"y: T"},
                                         .attrs = {"T: alltypes"}, .shape_fn = tide_shape_fn_unchanged,
                                         .doc = "Test only: an asynchronous kernel."});
        tide_kernel_register(&(tide_kernel_spec){.op = names[i], .device_type = "cpu",
                                                 .flags = TIDE_KERNEL_ASYNC, .compute_async = fns[i]});
    }
}
TIDE_REGISTER(register_test_ops)

/* TestAsyncEvent waits, holding no thread and polling nothing, until TestAsyncSignal runs (it then
 * outputs its input) or its step is cancelled (tide_kernel_on_cancel): the interface queues use. */
typedef struct event_waiter {
    tide_kernel_ctx *ctx;
    int64_t token;
    bool waiting;              /* under event_lock: still in the list */
    struct event_waiter *next;
} event_waiter;

static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static event_waiter *event_waiters;
static atomic_int cancelled_waits;

static bool unlink_waiter(event_waiter *w)
{
    for (event_waiter **at = &event_waiters; *at; at = &(*at)->next)
        if (*at == w) {
            *at = w->next;
            w->waiting = false;
            return true;
        }
    return false;
}

static void event_cancelled(void *arg, tide_status code, const char *message)
{
    event_waiter *w = arg;
    pthread_mutex_lock(&event_lock);
    bool mine = w->waiting && unlink_waiter(w);
    pthread_mutex_unlock(&event_lock);
    if (!mine)
        return; /* the signal took it first: it finishes the kernel */
    atomic_fetch_add(&cancelled_waits, 1);
    tide_kernel_ctx *ctx = w->ctx;
    free(w);
    tide_kernel_done(ctx, tide_kernel_error(ctx, code, "stopped waiting for the event: %s", message));
}

static void event_wait_async(tide_kernel_ctx *ctx)
{
    event_waiter *w = calloc(1, sizeof *w);
    w->ctx = ctx;
    pthread_mutex_lock(&event_lock);
    w->token = tide_kernel_on_cancel(ctx, event_cancelled, w);
    if (w->token == 0) {
        pthread_mutex_unlock(&event_lock);
        free(w);
        tide_kernel_done(ctx, tide_kernel_status(ctx));
        return;
    }
    w->waiting = true;
    w->next = event_waiters;
    event_waiters = w;
    pthread_mutex_unlock(&event_lock);
}

/* Completes every waiter (output: its input). */
static tide_status event_signal(tide_kernel_ctx *ctx)
{
    pthread_mutex_lock(&event_lock);
    event_waiter *list = event_waiters;
    for (event_waiter *w = list; w; w = w->next)
        w->waiting = false;
    event_waiters = NULL;
    pthread_mutex_unlock(&event_lock);
    while (list) {
        event_waiter *w = list;
        list = w->next;
        tide_kernel_forget_cancel(w->ctx, w->token); /* false: a callback runs and will find it taken */
        tide_kernel_set_output(w->ctx, 0, tide_kernel_input(w->ctx, 0));
        tide_kernel_ctx *done = w->ctx;
        free(w);
        tide_kernel_done_later(done, TIDE_OK);
    }
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static int num_event_waiters(void)
{
    pthread_mutex_lock(&event_lock);
    int n = 0;
    for (event_waiter *w = event_waiters; w; w = w->next)
        n++;
    pthread_mutex_unlock(&event_lock);
    return n;
}

static void register_event_ops(void)
{
    tide_op_register(&(tide_op_spec){.name = "TestAsyncEvent", .inputs = {"x: T"}, .outputs = {"y: T"},
                                     .attrs = {"T: alltypes"}, .flags = TIDE_OP_STATEFUL,
                                     .shape_fn = tide_shape_fn_unchanged, .doc = "Test only: waits for TestAsyncSignal."});
    tide_kernel_register(&(tide_kernel_spec){.op = "TestAsyncEvent", .device_type = "cpu",
                                             .flags = TIDE_KERNEL_ASYNC, .compute_async = event_wait_async});
    tide_op_register(&(tide_op_spec){.name = "TestAsyncSignal", .inputs = {"x: T"}, .outputs = {"y: T"},
                                     .attrs = {"T: alltypes"}, .flags = TIDE_OP_STATEFUL,
                                     .shape_fn = tide_shape_fn_unchanged, .doc = "Test only: ends the waits."});
    tide_kernel_register(&(tide_kernel_spec){.op = "TestAsyncSignal", .device_type = "cpu", .compute = event_signal});
}
TIDE_REGISTER(register_event_ops)

static void test_async_chain_and_width(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 3);
    tide_node *last = c;
    for (int i = 0; i < 5; i++) { /* async and sync nodes alternate */
        last = gu_op(g, "TestAsyncCopy", NULL, 1, &last);
        last = gu_op(g, "Identity", NULL, 1, &last);
    }
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "wide");
    for (int i = 0; i < 40; i++)
        tide_node_builder_add_control_input(b, gu_op(g, "TestAsyncCopy", NULL, 1, &c));
    tide_node *wide = gu_finish(b);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *out = gu_fetch(s, last);
    CU_ASSERT(out && *(float *)tide_tensor_data(out) == 3.0f);
    tide_tensor_release(out);
    /* 40 kernels that each wait 20 ms: held threads (2 in the pool) would need >= 400 ms. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(gu_target(s, wide, NULL), TIDE_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (ms >= 250)
        fprintf(stderr, "40 asynchronous 20 ms kernels took %.0f ms\n", ms);
    CU_ASSERT(ms < 250);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_async_failure(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *f = gu_op(g, "TestAsyncFail", "remote", 1, &c);
    tide_node *after = gu_op(g, "Identity", "after", 1, &f);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_output o = {after, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err), TIDE_UNAVAILABLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'remote' (TestAsyncFail): the remote end went away"));
    CU_ASSERT_PTR_NULL(out);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

typedef struct runner {
    tide_session *s;
    tide_node *target;
    tide_status st;
    tide_run_options opts;
    atomic_bool done;
} runner;

static void *run_target(void *arg)
{
    runner *r = arg;
    tide_error *err = tide_error_new();
    r->st = tide_session_run(r->s, &r->opts, NULL, 0, NULL, 0, NULL, &r->target, 1, NULL, err);
    tide_error_free(err);
    atomic_store(&r->done, true);
    return NULL;
}

static void test_cancel_and_timeout(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *w = gu_op(g, "TestAsyncWait", "waits", 1, &c);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    runner r = {.s = s, .target = w};
    pthread_t t;
    pthread_create(&t, NULL, run_target, &r);
    /* From another thread, as Ctrl-C will. A cancel before the run starts does not touch it (a loaded
     * machine may start the thread late): cancel until the run ends. */
    while (!atomic_load(&r.done)) {
        sleep_ms(20);
        tide_session_cancel(s);
    }
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.st, TIDE_CANCELLED);
    /* The session still works afterwards. */
    tide_tensor *v = gu_fetch(s, c);
    CU_ASSERT_PTR_NOT_NULL(v);
    tide_tensor_release(v);
    /* A timeout ends the wait with DEADLINE_EXCEEDED. */
    r.opts.timeout_ms = 30;
    run_target(&r);
    CU_ASSERT_EQUAL(r.st, TIDE_DEADLINE_EXCEEDED);
    tide_session_free(s);
    tide_graph_free(g);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-6;
}

/* Waits until n kernels wait for the event: up to 120 s, as a loaded machine under a sanitizer may
 * start the runner's thread late; a wait that never comes fails the assert below. */
static void wait_for_waiters(int n)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (num_event_waiters() < n && ms_since(&t0) < 120000)
        sleep_ms(1);
    CU_ASSERT_EQUAL(num_event_waiters(), n);
}

/* A waiting kernel is finished by the event (no cancellation involved). */
static void test_wait_event(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 4);
    tide_node *w = gu_op(g, "TestAsyncEvent", "waits", 1, &c);
    tide_node *sig = gu_op(g, "TestAsyncSignal", "signal", 1, &c);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    for (int round = 0; round < 20; round++) {
        runner r = {.s = s, .target = w};
        pthread_t t;
        pthread_create(&t, NULL, run_target, &r);
        wait_for_waiters(1);
        CU_ASSERT_EQUAL(gu_target(s, sig, NULL), TIDE_OK);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(r.st, TIDE_OK);
    }
    tide_session_free(s);
    tide_graph_free(g);
}

/* A wait that nothing polls is ended by a timeout, tide_session_cancel from another thread, a failure
 * of another node of the step, and tide_session_close; eagerly it is refused. */
static void test_wait_cancelled(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *w = gu_op(g, "TestAsyncEvent", "waits", 1, &c);
    tide_node *f = gu_op(g, "TestAsyncFail", "remote", 1, &c);
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "both");
    tide_node_builder_add_control_input(b, w);
    tide_node_builder_add_control_input(b, f);
    tide_node *both = gu_finish(b);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    int cancelled = atomic_load(&cancelled_waits);

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* 300 ms: the wait starts well before the deadline even on a loaded machine under a sanitizer (if the
     * deadline passed first, the executor would stop the run before the node waits: another message). */
    tide_run_options opts = {.timeout_ms = 300};
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, NULL, 0, NULL, &w, 1, NULL, err), TIDE_DEADLINE_EXCEEDED);
    double ms = ms_since(&t0);
    CU_ASSERT(ms >= 295 && ms < 60000); /* not a timing check: the lower bound, and no hang */
    bool woken = strstr(tide_error_message(err), "node 'waits' (TestAsyncEvent): stopped waiting for the event: the "
                                                 "run exceeded its timeout (300 ms)") != NULL;
    CU_ASSERT(woken || strstr(tide_error_message(err), "exceeded its timeout"));
    if (!woken)
        fprintf(stderr, "test_wait_cancelled: the deadline passed before the node waited (a loaded machine)\n");
    CU_ASSERT_EQUAL(atomic_load(&cancelled_waits), cancelled + (woken ? 1 : 0));

    runner r = {.s = s, .target = w};
    pthread_t t;
    pthread_create(&t, NULL, run_target, &r);
    wait_for_waiters(1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tide_session_cancel(s);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.st, TIDE_CANCELLED);
    CU_ASSERT(ms_since(&t0) < 60000); /* woken by the cancel (unwoken, the wait would never end) */

    /* The other node fails: the waiter is woken and the step reports that failure. */
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &both, 1, NULL, err), TIDE_UNAVAILABLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the remote end went away"));
    CU_ASSERT_EQUAL(num_event_waiters(), 0);

    /* Many waiters of one step, all woken by one timeout. */
    tide_node_builder *mb = tide_node_builder_new(g, "NoOp", "many");
    for (int i = 0; i < 50; i++)
        tide_node_builder_add_control_input(mb, gu_op(g, "TestAsyncEvent", NULL, 1, &c));
    tide_node *many = gu_finish(mb);
    opts.timeout_ms = 20;
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, NULL, 0, NULL, &many, 1, NULL, err), TIDE_DEADLINE_EXCEEDED);
    CU_ASSERT_EQUAL(num_event_waiters(), 0);

    pthread_create(&t, NULL, run_target, &r);
    wait_for_waiters(1);
    tide_session_close(s);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.st, TIDE_CANCELLED);
    CU_ASSERT(tide_session_is_closed(s));
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &w, 1, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the session is closed"));

    float v = 5;
    tide_tensor *x = th_f32(0, NULL, &v), *y = NULL;
    CU_ASSERT_EQUAL(tide_engine_run_op(th_engine(), "TestAsyncEvent", &x, 1, NULL, &y, 1, NULL, err),
                    TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "eagerly"));
    tide_tensor_release(x);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* The event and a cancellation race for the same waiter, many times (for ThreadSanitizer too): each
 * run ends once, either way. */
static void test_wait_races(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 2);
    tide_node *w = gu_op(g, "TestAsyncEvent", "waits", 1, &c);
    tide_node *sig = gu_op(g, "TestAsyncSignal", "signal", 1, &c);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_session *other = tide_session_new(th_engine(), g, NULL, NULL);
    int ok = 0, cancelled = 0;
    for (int round = 0; round < 200; round++) {
        runner r = {.s = s, .target = w};
        pthread_t t;
        pthread_create(&t, NULL, run_target, &r);
        wait_for_waiters(1);
        if (round % 2)
            tide_session_cancel(s);
        CU_ASSERT_EQUAL(gu_target(other, sig, NULL), TIDE_OK);
        if (round % 2 == 0)
            tide_session_cancel(s);
        pthread_join(t, NULL);
        CU_ASSERT(r.st == TIDE_OK || r.st == TIDE_CANCELLED);
        ok += r.st == TIDE_OK;
        cancelled += r.st == TIDE_CANCELLED;
    }
    CU_ASSERT_EQUAL(ok + cancelled, 200);
    CU_ASSERT_EQUAL(num_event_waiters(), 0);
    tide_session_free(other);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_async_eager(void)
{
    float v = 5;
    tide_tensor *x = th_f32(0, NULL, &v);
    tide_tensor *y = th_run1("TestAsyncCopy", &x, 1, NULL);
    CU_ASSERT_PTR_EQUAL(y, x);
    tide_tensor_release(y);
    tide_tensor_release(x);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_async_chain_and_width), TH_TEST(test_async_failure),
                                    TH_TEST(test_cancel_and_timeout), TH_TEST(test_async_eager),
                                    TH_TEST(test_wait_event), TH_TEST(test_wait_cancelled),
                                    TH_TEST(test_wait_races), TH_END};
    return th_main("async", tests);
}
