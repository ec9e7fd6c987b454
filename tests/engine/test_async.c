/* test_async.c — asynchronous kernels (the interface queues and Recv will use): test-only ops whose
 * kernels finish on another thread. Checks results, that waiting holds no executor thread, failures,
 * cancellation from another thread, timeouts, and eager calls. */
#include <pthread.h>
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
} runner;

static void *run_target(void *arg)
{
    runner *r = arg;
    tide_error *err = tide_error_new();
    r->st = tide_session_run(r->s, &r->opts, NULL, 0, NULL, 0, NULL, &r->target, 1, NULL, err);
    tide_error_free(err);
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
    sleep_ms(50);
    tide_session_cancel(s); /* from another thread, as Ctrl-C will */
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
                                    TH_TEST(test_cancel_and_timeout), TH_TEST(test_async_eager), TH_END};
    return th_main("async", tests);
}
