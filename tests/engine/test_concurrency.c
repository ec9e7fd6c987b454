/* test_concurrency.c — four sessions over one engine, each on its own thread and graph, all updating
 * one variable in a shared container while also running wide graphs on the pool; plus two threads
 * running one session (one plan cache). Run under the sanitizer build too. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

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

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_four_sessions_share_a_container), TH_END};
    return th_main("concurrency", tests);
}
