/* test_memory.c — the memory of a step: the peak a traced or observed step reports (tensors its kernels
 * allocate, live at once) on graphs whose peak is computed by hand here, per device and in total, in
 * the step statistics and in what observers get at the end of a run. */
#include <malloc.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>

#include "graph_util.h"

#define N 1000                  /* elements of the fed vector */
#define V ((int64_t)N * 4)      /* its bytes (float32) */

/* Runs fetch (output 0 of node `fetch_name` of g) traced, feeding x with N floats; returns the stats
 * (caller frees) and checks the run succeeded. */
static tide_step_stats *traced_run(tide_session *s, tide_graph *g, const char *fetch_name)
{
    float data[N];
    for (int i = 0; i < N; i++)
        data[i] = (float)i;
    tide_tensor *xv = th_f32(1, TH_DIMS(N), data), *out = NULL;
    tide_feed feed = {{tide_graph_node(g, "x"), 0}, xv};
    tide_output fetch = {tide_graph_node(g, fetch_name), 0};
    tide_run_options opts = {.trace = true};
    tide_step_stats *st = NULL;
    tide_error *err = tide_error_new();
    tide_status code = tide_session_run(s, &opts, &feed, 1, &fetch, 1, &out, NULL, 0, &st, err);
    if (code != TIDE_OK)
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(code, TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(st);
    tide_tensor_release(out);
    tide_tensor_release(xv);
    tide_error_free(err);
    return st;
}

#define AXIS "axis = Const(value=tensor(int32, [], [0]), dtype=int32)\n"

/* A chain whose sizes double: a = -x (V bytes, new: the caller holds x), b = [a a] (2V), c = [b b]
 * (4V), d = sum(c) (4 bytes). Each value dies once its consumer ran: the peak is while c is computed,
 * b (2V) and c (4V) live at once = 6V; the fed x and the Const axis are not the step's. */
static void test_peak_of_a_chain(void)
{
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[1000])\n" AXIS
                                "a = Neg(x)\n"
                                "b = ConcatV2([a, a], axis)\n"
                                "c = ConcatV2([b, b], axis)\n"
                                "d = Sum(c, axis)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_step_stats *st = traced_run(s, g, "d");
    CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, -1), 6 * V);
    CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, 0), 6 * V); /* one device: all of it */
    CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, 1), 0);    /* no such device */
    tide_step_stats_free(st);
    /* Fetching c instead: it outlives the step, the peak is the same. */
    st = traced_run(s, g, "c");
    CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, -1), 6 * V);
    tide_step_stats_free(st);
    tide_session_free(s);
    tide_graph_free(g);
}

/* A diamond: a = -x (V) feeds two branches, b1 = [a a] (2V) and b2 = [a a a] (3V), joined by
 * c = [b1 b2] (5V). Whatever order the branches run in, both are live when c is made, and a is gone
 * by then (its last reader ran): peak = 2V + 3V + 5V = 10V (before, at most a + b1 + b2 = 6V). */
static void test_peak_of_a_diamond(void)
{
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[1000])\n" AXIS
                                "a = Neg(x)\n"
                                "b1 = ConcatV2([a, a], axis)\n"
                                "b2 = ConcatV2([a, a, a], axis)\n"
                                "c = ConcatV2([b1, b2], axis)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    for (int round = 0; round < 20; round++) { /* two pool threads: the branches may run at once */
        tide_step_stats *st = traced_run(s, g, "c");
        CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, -1), 10 * V);
        tide_step_stats_free(st);
    }
    tide_session_free(s);
    tide_graph_free(g);
}

/* Element-wise ops whose input dies with them write in place: -(-(-(-x))) allocates one vector (the
 * first Neg's: the caller holds x), the other three reuse it. */
static void test_in_place_chain_allocates_once(void)
{
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[1000])\n"
                                "a = Neg(x)\n"
                                "b = Neg(a)\n"
                                "c = Relu(b)\n"
                                "d = Neg(c)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_step_stats *st = traced_run(s, g, "d");
    CU_ASSERT_EQUAL(tide_step_stats_peak_bytes(st, -1), V);
    tide_step_stats_free(st);
    tide_session_free(s);
    tide_graph_free(g);
}

static atomic_llong observed_peak = -1;

static void remember_peak(void *user, const tide_run_info *run, tide_status status, const char *message,
                          int64_t wall_ns)
{
    (void)user, (void)status, (void)message, (void)wall_ns;
    atomic_store(&observed_peak, run->peak_bytes);
}

/* Observers get the peak of every run at its end, traced or not. */
static void test_observers_get_the_peak(void)
{
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[1000])\n" AXIS
                                "a = Neg(x)\n"
                                "b = ConcatV2([a, a], axis)\n"
                                "c = ConcatV2([b, b], axis)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_engine *e = tide_engine_new(NULL, NULL);
    tide_observer obs = {.run_ended = remember_peak};
    int id = tide_engine_add_observer(e, &obs, NULL);
    CU_ASSERT(id > 0);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    float data[N] = {0};
    tide_tensor *xv = th_f32(1, TH_DIMS(N), data), *out = NULL;
    tide_feed feed = {{tide_graph_node(g, "x"), 0}, xv};
    tide_output fetch = {tide_graph_node(g, "c"), 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(atomic_load(&observed_peak), 6 * V); /* b + c */
    tide_tensor_release(out);
    tide_tensor_release(xv);
    tide_session_free(s);
    tide_engine_remove_observer(e, id);
    tide_engine_free(e);
    tide_graph_free(g);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}
#endif

#define WARM_UP_STEPS 10
#define STEADY_STEPS 30
#define FAULTS_PER_STEADY_STEP_MAX 2

/* Steady training steps take no fresh memory from the system. The system allocator is first told to
 * map every allocation of 64 KiB and more fresh from the kernel and to unmap it when freed (mallopt:
 * glibc's worst case, which it otherwise reaches for buffers above 32 MiB or after trimming), so a
 * buffer the engine allocated anew each step would cost a page fault per 4 KiB it touches: here the
 * step's large tensors (x·W1, its ReLU and their gradients, 128 KiB each; W1's gradient, 256 KiB)
 * made 132 faults per step with tensor.c's caches disabled. With them, a steady step takes its
 * buffers from last step's memory and makes no fault at all most of the time; measured over 30 steps
 * after 10 of warm-up, 1 to 7 in all, once 30 in one step (the odd page of the heap, a thread's
 * stack). The bound, 2 per step on average, passes those and fails fresh allocation (132 per step);
 * it mostly fails the free-and-retake of middle-sized buffers (8 KiB to 16 KiB here) that tensor.c's
 * middle free lists replaced: 50 to 99 faults in 30 steps without them (bursts of 8 or 9 pages as
 * glibc's per-thread heaps gave back and took again their top). Two dense layers trained with SGD. */
static void test_steady_steps_page_faults(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    th_skip("a sanitizer's allocator stands in for the engine's buffer cache (tensor.c): page faults measure it");
    return;
#else
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(128, 256));
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_UNIFORM);
    tide_shape s1 = tide_shape_make(2, TH_DIMS(256, 256)), s2 = tide_shape_make(2, TH_DIMS(256, 16));
    tide_node *w1 = tide_variable_new(g, "w1", tide_initializer_build(g, &init, TIDE_FLOAT32, &s1, err), true, err);
    tide_node *w2 = tide_variable_new(g, "w2", tide_initializer_build(g, &init, TIDE_FLOAT32, &s2, err), true, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w2);
    tide_node *h = gu_op(g, "Relu", "h", 1, (tide_node *[]){gu_op(g, "MatMul", "xw1", 2, (tide_node *[]){x, w1})});
    tide_node *y = gu_op(g, "MatMul", "y", 2, (tide_node *[]){h, w2});
    tide_node *axes = gu_const(g, "axes", th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}));
    tide_node *loss = gu_op(g, "Sum", "loss", 2, (tide_node *[]){gu_op(g, "Square", "sq", 1, &y), axes});
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_SGD, 1e-4);
    tide_node *train = tide_optimizer_minimize(g, &opt, (tide_output){loss, 0}, NULL, 0, NULL, err);
    tide_node *init_all = tide_global_variables_initializer(g, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(train);
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    CU_ASSERT_EQUAL(gu_target(s, init_all, err), TIDE_OK);
    float *data = malloc(sizeof *data * 128 * 256);
    for (int i = 0; i < 128 * 256; i++)
        data[i] = (float)th_rand(-1, 1);
    tide_tensor *xv = th_f32(2, TH_DIMS(128, 256), data);
    free(data);
    tide_feed feed = {{x, 0}, xv};
    long before = 0;
    for (int step = 0; step < WARM_UP_STEPS + STEADY_STEPS; step++) {
        if (step == WARM_UP_STEPS)
            before = minor_faults();
        if (tide_session_run(s, NULL, &feed, 1, NULL, 0, NULL, &train, 1, NULL, err) != TIDE_OK) {
            fprintf(stderr, "step %d failed: %s\n", step, tide_error_message(err));
            CU_FAIL("a training step failed");
            break;
        }
    }
    long faults = minor_faults() - before;
    if (faults > STEADY_STEPS * FAULTS_PER_STEADY_STEP_MAX || getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "%ld minor page faults in %d steady steps\n", faults, STEADY_STEPS);
    CU_ASSERT(faults <= STEADY_STEPS * FAULTS_PER_STEADY_STEP_MAX);
    tide_tensor_release(xv);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
#endif
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_peak_of_a_chain), TH_TEST(test_peak_of_a_diamond),
                                    TH_TEST(test_in_place_chain_allocates_once),
                                    TH_TEST(test_observers_get_the_peak), TH_TEST(test_steady_steps_page_faults),
                                    TH_END};
    return th_main("memory", tests);
}
