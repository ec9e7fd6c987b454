/* test_concurrency.c — four sessions over one engine, each on its own thread and graph, all updating
 * one variable in a shared container while also running wide graphs on the pool; plus two threads
 * running one session (one plan cache); removing an observer while runs call it from the executor's
 * threads (it waits for the callbacks in flight; none comes after). Run under the sanitizer builds
 * too, ThreadSanitizer included. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "graph_util.h"

#define THREADS 4
#define STEPS 500
#define WIDTH 64

typedef struct worker {
    tide_session *session;
    tide_node *inc, *wide, *product;
    int failures, wrong;
} worker;

/* A graph with the shared counter, its increment, and WIDTH independent Identity nodes grouped by a NoOp. */
static void build(tide_graph *g, worker *w)
{
    tide_node *var = gu_variable(g, "total", TIDE_FLOAT32, 0, NULL, "concurrency");
    tide_node *one = gu_scalar_f32(g, "one", 1);
    tide_node *ins[2] = {var, one};
    w->inc = gu_op(g, "AssignAdd", "inc", 2, ins);
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "wide");
    for (int i = 0; i < WIDTH; i++)
        tide_node_builder_add_control_input(b, gu_op(g, "Identity", NULL, 1, &one));
    tide_node_builder_add_control_input(b, w->inc);
    w->wide = gu_finish(b);
    /* Some real work for the pool: (ones 64x64 . ones 64x64) summed = 64^3. */
    float ones[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        ones[i] = 1;
    tide_node *m = gu_const(g, "ones", th_f32(2, TH_DIMS(64, 64), ones));
    tide_node *mm[2] = {m, m};
    tide_node *p = gu_op(g, "MatMul", "mm", 2, mm);
    int32_t axes[2] = {0, 1};
    tide_node *ax = gu_const(g, "axes", th_i32(1, TH_DIMS(2), axes));
    tide_node *sum_in[2] = {p, ax};
    w->product = gu_op(g, "Sum", "total_of_product", 2, sum_in);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    tide_error *err = tide_error_new();
    for (int i = 0; i < STEPS; i++) {
        tide_node *target = i % 2 ? w->wide : w->inc; /* both increment once */
        if (tide_session_run(w->session, NULL, NULL, 0, NULL, 0, NULL, &target, 1, NULL, err) != TIDE_OK)
            w->failures++;
        if (i % 10 == 0) {
            tide_output o = {w->product, 0};
            tide_tensor *v = NULL;
            if (tide_session_run(w->session, NULL, NULL, 0, &o, 1, &v, NULL, 0, NULL, err) != TIDE_OK)
                w->failures++;
            else if (*(float *)tide_tensor_data(v) != 64.0f * 64 * 64)
                w->wrong++;
            tide_tensor_release(v);
        }
    }
    tide_error_free(err);
    return NULL;
}

static void test_four_sessions_share_a_container(void)
{
    tide_engine *e = th_engine();
    tide_graph *graphs[THREADS];
    worker workers[THREADS];
    memset(workers, 0, sizeof workers);
    for (int t = 0; t < THREADS; t++) {
        graphs[t] = tide_graph_new();
        build(graphs[t], &workers[t]);
        workers[t].session = tide_session_new(e, graphs[t], NULL, NULL);
    }
    /* Initialise through the first session. */
    tide_graph *init_graph = tide_graph_new();
    tide_node *var = gu_variable(init_graph, "total", TIDE_FLOAT32, 0, NULL, "concurrency");
    tide_node *zero = gu_scalar_f32(init_graph, "zero", 0);
    tide_node *ins[2] = {var, zero};
    tide_node *init = gu_op(init_graph, "Assign", "init", 2, ins);
    tide_session *init_session = tide_session_new(e, init_graph, NULL, NULL);
    CU_ASSERT_EQUAL(gu_target(init_session, init, NULL), TIDE_OK);

    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, run_worker, &workers[t]);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        CU_ASSERT_EQUAL(workers[t].failures, 0);
        CU_ASSERT_EQUAL(workers[t].wrong, 0);
    }
    tide_tensor *total = gu_fetch(init_session, var);
    CU_ASSERT_EQUAL(*(float *)tide_tensor_data(total), (float)(THREADS * STEPS));
    tide_tensor_release(total);

    /* Two threads on one session share its plan cache. */
    worker same[2] = {workers[0], workers[0]};
    same[0].failures = same[1].failures = 0;
    for (int t = 0; t < 2; t++)
        pthread_create(&threads[t], NULL, run_worker, &same[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    CU_ASSERT_EQUAL(same[0].failures + same[1].failures, 0);
    total = gu_fetch(init_session, var);
    CU_ASSERT_EQUAL(*(float *)tide_tensor_data(total), (float)((THREADS + 2) * STEPS));
    tide_tensor_release(total);
    CU_ASSERT_EQUAL(tide_session_num_plans(workers[0].session), 3);

    tide_session_free(init_session);
    tide_graph_free(init_graph);
    for (int t = 0; t < THREADS; t++) {
        tide_session_free(workers[t].session);
        tide_graph_free(graphs[t]);
    }
    tide_engine_reset_container(e, "concurrency", NULL);
}

/* An observer whose node_finished takes a while, and notes any call that begins or ends after
 * tide_engine_remove_observer returned. */
typedef struct slow_observer {
    tide_engine *engine;
    int id;
    atomic_int calls, late_calls, ended;
    atomic_bool removal_returned;
    bool remove_itself_at_run_end;
} slow_observer;

static void slow_node_finished(void *user, const tide_run_info *run, const tide_node_timing *timing)
{
    (void)run, (void)timing;
    slow_observer *k = user;
    if (atomic_load(&k->removal_returned))
        atomic_fetch_add(&k->late_calls, 1);
    atomic_fetch_add(&k->calls, 1);
    nanosleep(&(struct timespec){0, 200000}, NULL);
    if (atomic_load(&k->removal_returned))
        atomic_fetch_add(&k->late_calls, 1);
}

static void slow_run_ended(void *user, const tide_run_info *run, tide_status st, const char *m, int64_t w)
{
    (void)run, (void)st, (void)m, (void)w;
    slow_observer *k = user;
    atomic_fetch_add(&k->ended, 1);
    if (k->remove_itself_at_run_end) /* from inside its own callback: must not wait for itself */
        tide_engine_remove_observer(k->engine, k->id);
}

typedef struct traced_runner {
    tide_session *session;
    tide_node *last;
    int runs, failures;
} traced_runner;

static void *run_traced(void *arg)
{
    traced_runner *r = arg;
    tide_run_options opts = {.trace = true};
    for (int i = 0; i < r->runs; i++) {
        tide_tensor *out = NULL;
        tide_output fetch = {r->last, 0};
        if (tide_session_run(r->session, &opts, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, NULL) != TIDE_OK)
            r->failures++;
        tide_tensor_release(out);
    }
    return NULL;
}

/* A chain of n Identity nodes after a constant (distinct nodes: CSE merges none). */
static tide_node *identity_chain(tide_graph *g, int n)
{
    tide_node *last = gu_scalar_f32(g, "start", 1);
    for (int i = 0; i < n; i++)
        last = gu_op(g, "Identity", NULL, 1, &last);
    return last;
}

static void test_remove_observer_waits_for_callbacks(void)
{
    tide_engine *e = th_engine();
    tide_graph *g = tide_graph_new();
    traced_runner runners[2];
    tide_node *last = identity_chain(g, 200);
    slow_observer k = {.engine = e};
    tide_observer obs = {.user = &k, .node_finished = slow_node_finished};
    k.id = tide_engine_add_observer(e, &obs, NULL);
    CU_ASSERT(k.id > 0);
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) {
        runners[t] = (traced_runner){tide_session_new(e, g, NULL, NULL), last, 4, 0};
        pthread_create(&threads[t], NULL, run_traced, &runners[t]);
    }
    while (atomic_load(&k.calls) < 50) /* the runs are calling it now */
        nanosleep(&(struct timespec){0, 100000}, NULL);
    tide_engine_remove_observer(e, k.id);
    atomic_store(&k.removal_returned, true);
    int calls_at_removal = atomic_load(&k.calls);
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    CU_ASSERT_EQUAL(atomic_load(&k.late_calls), 0);
    CU_ASSERT_EQUAL(atomic_load(&k.calls), calls_at_removal);
    CU_ASSERT(calls_at_removal < 2 * 4 * 200); /* removed while the runs were going on */
    for (int t = 0; t < 2; t++) {
        CU_ASSERT_EQUAL(runners[t].failures, 0);
        tide_session_free(runners[t].session);
    }
    tide_engine_remove_observer(e, k.id); /* a second removal does nothing */

    /* An observer that removes itself from its own run_ended callback. */
    slow_observer self = {.engine = e, .remove_itself_at_run_end = true};
    tide_observer self_obs = {.user = &self, .node_finished = slow_node_finished, .run_ended = slow_run_ended};
    self.id = tide_engine_add_observer(e, &self_obs, NULL);
    traced_runner once = {tide_session_new(e, g, NULL, NULL), last, 2, 0};
    run_traced(&once);
    CU_ASSERT_EQUAL(once.failures, 0);
    CU_ASSERT_EQUAL(atomic_load(&self.ended), 1);       /* the second run no longer saw it */
    CU_ASSERT_EQUAL(atomic_load(&self.calls), 200 + 1); /* the chain and its constant, once */
    tide_session_free(once.session);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_four_sessions_share_a_container),
                                    TH_TEST(test_remove_observer_waits_for_callbacks), TH_END};
    return th_main("concurrency", tests);
}
