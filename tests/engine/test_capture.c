/* test_capture.c — whole-step capture and replay (engine/step_capture.c) on the simulated device: an
 * MLP trained on /sim:0 by an engine that captures and replays its steps gives, step by step, the
 * same losses bit for bit as an engine that runs every step eagerly, with feeds changing each step;
 * a changed fed shape, an extended graph, a traced run, a replaced variable and the session's switch
 * fall back to eager runs (saying why); an error in a replayed step is reported; plans that are not
 * all on the device, or have a stateful op, are never captured. */
#include <stdlib.h>
#include <string.h>

#include "graph_util.h"

#define BATCH 32
#define IN 12
#define HIDDEN 16
#define CLASSES 4

typedef struct mlp {
    tide_engine *engine;
    tide_graph *g;
    tide_session *s;
    tide_node *x, *y, *loss, *train, *init, *w1;
} mlp;

static tide_node *dense(tide_graph *g, const char *name, tide_node *in, int64_t n_in, int64_t n_out, bool relu)
{
    tide_error *err = tide_error_new();
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_GLOROT_UNIFORM);
    init.seed = 7;
    tide_shape ws = tide_shape_make(2, TH_DIMS(n_in, n_out)), bs = tide_shape_make(1, TH_DIMS(n_out));
    char wname[32], bname[32], mname[32], aname[32], rname[32];
    snprintf(wname, sizeof wname, "%s_w", name);
    snprintf(bname, sizeof bname, "%s_b", name);
    snprintf(mname, sizeof mname, "%s_mm", name);
    snprintf(aname, sizeof aname, "%s_add", name);
    snprintf(rname, sizeof rname, "%s_relu", name);
    tide_node *w = tide_variable_new(g, wname, tide_initializer_build(g, &init, TIDE_FLOAT32, &ws, err), true, err);
    tide_initializer_init(&init, TIDE_INIT_ZEROS);
    tide_node *b = tide_variable_new(g, bname, tide_initializer_build(g, &init, TIDE_FLOAT32, &bs, err), true, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    tide_node *mm = gu_op(g, "MatMul", mname, 2, (tide_node *const[]){in, w});
    tide_node *out = gu_op(g, "BiasAdd", aname, 2, (tide_node *const[]){mm, b});
    tide_error_free(err);
    return relu ? gu_op(g, "Relu", rname, 1, (tide_node *const[]){out}) : out;
}

/* x [BATCH, IN] -> 16 ReLU -> 4 logits, mean sparse cross-entropy, SGD; all on /sim:0. */
static mlp mlp_new(bool capture)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_sim_devices = 1;
    o.no_capture = !capture;
    mlp m = {.engine = th_engine_new(&o), .g = tide_graph_new()};
    tide_error *err = tide_error_new();
    tide_graph_push_device(m.g, "/sim:0");
    m.x = gu_placeholder(m.g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, IN));
    m.y = gu_placeholder(m.g, "y", TIDE_INT32, 1, TH_DIMS(-1));
    tide_node *h = dense(m.g, "l1", m.x, IN, HIDDEN, true);
    m.w1 = tide_graph_node(m.g, "l1_w");
    tide_node *logits = dense(m.g, "l2", h, HIDDEN, CLASSES, false);
    tide_node *xent = gu_op(m.g, "SparseSoftmaxCrossEntropyWithLogits", "xent", 2, (tide_node *const[]){logits, m.y});
    tide_node *axis = gu_const(m.g, "axis", th_i32(1, TH_DIMS(1), (const int32_t[]){0}));
    m.loss = gu_op(m.g, "Mean", "loss", 2, (tide_node *const[]){xent, axis});
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_SGD, 0.1);
    m.train = tide_optimizer_minimize(m.g, &opt, (tide_output){m.loss, 0}, NULL, 0, NULL, err);
    m.init = tide_global_variables_initializer(m.g, err);
    tide_graph_pop_device(m.g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m.train);
    m.s = tide_session_new(m.engine, m.g, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m.s);
    CU_ASSERT_EQUAL(gu_target(m.s, m.init, err), TIDE_OK);
    tide_error_free(err);
    return m;
}

static void mlp_free(mlp *m)
{
    tide_session_free(m->s);
    tide_graph_free(m->g);
    tide_engine_free(m->engine);
}

/* The batch of step `step` (rows of a ramp that moves with the step), labels in [0, CLASSES) or bad. */
static void batch(int step, int rows, int bad_label, tide_tensor **x, tide_tensor **y)
{
    float *xv = malloc(sizeof *xv * (size_t)(rows * IN));
    int32_t *yv = malloc(sizeof *yv * (size_t)rows);
    for (int i = 0; i < rows * IN; i++)
        xv[i] = (float)(((i + 1) * 7919 + step * 104729) % 1000 - 500) / 250.0f;
    for (int r = 0; r < rows; r++)
        yv[r] = (r * 3 + step) % CLASSES;
    if (bad_label)
        yv[rows / 2] = bad_label;
    *x = th_f32(2, TH_DIMS(rows, IN), xv);
    *y = th_i32(1, TH_DIMS(rows), yv);
    free(xv);
    free(yv);
}

/* One training step: the loss (a new host tensor) or NULL with the error in err. */
static tide_tensor *train_step(mlp *m, int step, int rows, int bad_label, tide_error *err)
{
    tide_tensor *x, *y;
    batch(step, rows, bad_label, &x, &y);
    tide_feed feeds[2] = {{{m->x, 0}, x}, {{m->y, 0}, y}};
    tide_output fetch = {m->loss, 0};
    tide_tensor *loss = NULL;
    tide_status st = tide_session_run(m->s, NULL, feeds, 2, &fetch, 1, &loss, &m->train, 1, NULL, err);
    tide_tensor_release(x);
    tide_tensor_release(y);
    CU_ASSERT(st == TIDE_OK || !loss);
    return st == TIDE_OK ? loss : NULL;
}

static bool same_bits(const tide_tensor *a, const tide_tensor *b)
{
    return a && b && tide_tensor_dtype(a) == tide_tensor_dtype(b) &&
           tide_shape_equal(tide_tensor_shape(a), tide_tensor_shape(b)) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

/* A step on both; true when the losses are equal bit for bit. Writes how b's step ran. */
static bool step_both(mlp *a, mlp *b, int step, int rows, tide_capture_status *status)
{
    tide_error *err = tide_error_new();
    tide_tensor *la = train_step(a, step, rows, 0, err), *lb = train_step(b, step, rows, 0, err);
    bool same = same_bits(la, lb);
    if (!same)
        fprintf(stderr, "step %d: eager %.9g, other %.9g (%s)\n", step, la ? *(float *)tide_tensor_data(la) : -1.0,
                lb ? *(float *)tide_tensor_data(lb) : -1.0, tide_error_message(err));
    tide_session_capture_status(b->s, status);
    tide_tensor_release(la);
    tide_tensor_release(lb);
    tide_error_free(err);
    return same;
}

/* n steps on both, from *step on (advanced past them), each with losses equal bit for bit; how b's
 * last step ran (also in *status). */
static tide_step_mode steps_both(mlp *a, mlp *b, int *step, int n, int rows, tide_capture_status *status)
{
    for (int i = 0; i < n; i++, (*step)++)
        CU_ASSERT(step_both(a, b, *step, rows, status));
    return status->last;
}

/* n steps on m alone (their losses dropped); how the last ran. */
static tide_step_mode steps_alone(mlp *m, int n, tide_capture_status *status)
{
    for (int step = 0; step < n; step++) {
        tide_error *err = tide_error_new();
        tide_tensor_release(train_step(m, step, BATCH, 0, err));
        tide_error_free(err);
    }
    tide_session_capture_status(m->s, status);
    return status->last;
}

/* Twenty steps with new feeds each: two warm-ups, a capture, replays; the losses of every step equal
 * the eager engine's bit for bit, and so do the weights at the end. */
static void test_replay_matches_eager(void)
{
    mlp eager = mlp_new(false), cap = mlp_new(true);
    tide_capture_status st;
    for (int step = 0; step < 20; step++) {
        CU_ASSERT(step_both(&eager, &cap, step, BATCH, &st));
        tide_step_mode want = step < 2 ? TIDE_STEP_EAGER : step == 2 ? TIDE_STEP_CAPTURED : TIDE_STEP_REPLAYED;
        CU_ASSERT_EQUAL(st.last, want);
        if (st.last != want)
            fprintf(stderr, "step %d ran %d: %s\n", step, (int)st.last, st.why);
    }
    CU_ASSERT_EQUAL(st.captures, 1);
    CU_ASSERT_EQUAL(st.replays, 17);
    CU_ASSERT(st.has_graph && st.held_bytes > 0);
    CU_ASSERT_STRING_EQUAL(st.device, "/sim:0");
    tide_device_memory_stats mem;
    tide_engine_device_memory_stats(cap.engine, 1, &mem);
    CU_ASSERT(mem.in_use >= st.held_bytes); /* the held tensors count in the device's memory */
    tide_capture_status es;
    tide_session_capture_status(eager.s, &es);
    CU_ASSERT_EQUAL(es.captures + es.replays, 0);
    tide_tensor *wa = gu_fetch(eager.s, eager.w1), *wb = gu_fetch(cap.s, cap.w1);
    CU_ASSERT(same_bits(wa, wb));
    tide_session_capture_status(cap.s, &st); /* another plan: the graph is dropped */
    CU_ASSERT(!st.has_graph && st.last == TIDE_STEP_EAGER);
    tide_tensor_release(wa);
    tide_tensor_release(wb);
    mlp_free(&eager);
    mlp_free(&cap);
}

/* A batch of another size is not what the graph was captured for: eager (saying so), then warm-up,
 * capture and replays at the new size; the losses stay equal to the eager engine's. */
static void test_shape_change_falls_back(void)
{
    mlp eager = mlp_new(false), cap = mlp_new(true);
    tide_capture_status st;
    int step = 0;
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 5, BATCH, &st), TIDE_STEP_REPLAYED);
    CU_ASSERT(step_both(&eager, &cap, step++, 8, &st));
    CU_ASSERT_EQUAL(st.last, TIDE_STEP_EAGER);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.why, "changed from float32 [32, 12] to float32 [8, 12]"));
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 5, 8, &st), TIDE_STEP_REPLAYED);
    CU_ASSERT_EQUAL(st.captures, 2);
    mlp_free(&eager);
    mlp_free(&cap);
}

/* A label out of range in a replayed step: the run fails naming the node, as the eager one does,
 * neither updates the weights, and training goes on equal. */
static void test_error_in_replayed_step(void)
{
    mlp eager = mlp_new(false), cap = mlp_new(true);
    tide_capture_status st;
    int step = 0;
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 4, BATCH, &st), TIDE_STEP_REPLAYED);
    tide_error *ea = tide_error_new(), *eb = tide_error_new();
    tide_tensor *la = train_step(&eager, step, BATCH, 9, ea), *lb = train_step(&cap, step, BATCH, 9, eb);
    step++;
    CU_ASSERT(!la && !lb);
    CU_ASSERT_EQUAL(tide_error_code(eb), tide_error_code(ea));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(eb), "xent"));
    CU_ASSERT_STRING_EQUAL(tide_error_message(eb), tide_error_message(ea));
    tide_session_capture_status(cap.s, &st);
    CU_ASSERT_EQUAL(st.last, TIDE_STEP_EAGER);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.why, "failed"));
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 5, BATCH, &st), TIDE_STEP_REPLAYED);
    tide_error_free(ea);
    tide_error_free(eb);
    mlp_free(&eager);
    mlp_free(&cap);
}

/* A kernel that faults while a graph replays it (a GPU kernel hitting an illegal address inside a
 * CUDA graph; on the simulated device $TIDE_SIM_REPLAY_FAULT names the node): the run fails with the
 * device's message naming the node, fetches nothing, drops the graph (saying why), and the session goes
 * on: the next runs are eager, then captured again, and their losses stay the eager engine's (the
 * faulting MatMul is in the forward pass, replayed before any update). */
static void test_fault_in_replayed_kernel(void)
{
    setenv("TIDE_SIM_REPLAY_FAULT", "l2_mm", 1); /* read when the device opens */
    mlp eager = mlp_new(false), cap = mlp_new(true);
    unsetenv("TIDE_SIM_REPLAY_FAULT");
    tide_capture_status st;
    int step = 0;
    /* eager, eager, captured (a capture runs the kernels eagerly: no fault) */
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 3, BATCH, &st), TIDE_STEP_CAPTURED);
    tide_error *err = tide_error_new();
    tide_tensor *loss = train_step(&cap, step++, BATCH, 0, err);
    CU_ASSERT_PTR_NULL(loss);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'l2_mm'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "illegal memory access"));
    tide_session_capture_status(cap.s, &st);
    CU_ASSERT(st.last == TIDE_STEP_EAGER && !st.has_graph && strstr(st.why, "replayed step failed"));
    CU_ASSERT_EQUAL(st.replays, 0);
    tide_tensor_release(loss);
    /* the faulting step never ran on the eager engine: both skip it */
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 3, BATCH, &st), TIDE_STEP_CAPTURED);
    CU_ASSERT_EQUAL(st.captures, 2);
    tide_error_free(err);
    mlp_free(&eager);
    mlp_free(&cap);
}

/* The engine's default: capture on; $TIDE_CAPTURE=0 turns it off for engines made after. */
static void test_on_by_default(void)
{
    mlp on = mlp_new(true);
    CU_ASSERT(tide_session_capture_enabled(on.s));
    tide_capture_status st;
    CU_ASSERT_EQUAL(steps_alone(&on, 4, &st), TIDE_STEP_REPLAYED);
    mlp_free(&on);
    setenv("TIDE_CAPTURE", "0", 1);
    mlp off = mlp_new(true);
    unsetenv("TIDE_CAPTURE");
    CU_ASSERT(!tide_session_capture_enabled(off.s));
    CU_ASSERT(steps_alone(&off, 4, &st) == TIDE_STEP_EAGER && st.captures == 0);
    mlp_free(&off);
}

/* What drops the graph, and says why: a traced run, an extended graph, a variable assigned by another
 * plan, the session's switch. Every step's loss stays the eager engine's. */
static void test_fallbacks(void)
{
    mlp eager = mlp_new(false), cap = mlp_new(true);
    tide_capture_status st;
    int step = 0;
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 4, BATCH, &st), TIDE_STEP_REPLAYED);
    /* traced */
    tide_error *err = tide_error_new();
    tide_tensor *x, *y, *loss = NULL;
    batch(step, BATCH, 0, &x, &y);
    tide_feed feeds[2] = {{{cap.x, 0}, x}, {{cap.y, 0}, y}};
    tide_run_options ro = {.trace = true};
    tide_step_stats *stats = NULL;
    CU_ASSERT_EQUAL(tide_session_run(cap.s, &ro, feeds, 2, &(tide_output){cap.loss, 0}, 1, &loss, NULL, 0, &stats, err),
                    TIDE_OK);
    tide_session_capture_status(cap.s, &st);
    CU_ASSERT(st.last == TIDE_STEP_EAGER && strstr(st.why, "traced") && !st.has_graph);
    CU_ASSERT(tide_step_stats_count(stats) > 0);
    tide_step_stats_free(stats);
    tide_tensor_release(loss);
    tide_tensor_release(x);
    tide_tensor_release(y);
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 4, BATCH, &st), TIDE_STEP_REPLAYED);
    /* extended */
    gu_scalar_f32(cap.g, "unrelated", 1.0f);
    gu_scalar_f32(eager.g, "unrelated", 1.0f);
    CU_ASSERT(step_both(&eager, &cap, step++, BATCH, &st));
    CU_ASSERT(st.last == TIDE_STEP_EAGER && strstr(st.why, "extended"));
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 3, BATCH, &st), TIDE_STEP_REPLAYED);
    /* a variable re-initialised by another plan (the initializers replace its value) */
    CU_ASSERT_EQUAL(gu_target(cap.s, cap.init, err), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(eager.s, eager.init, err), TIDE_OK);
    CU_ASSERT(step_both(&eager, &cap, step++, BATCH, &st));
    CU_ASSERT_EQUAL(st.last, TIDE_STEP_EAGER);
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 3, BATCH, &st), TIDE_STEP_REPLAYED);
    /* the session's switch */
    tide_session_set_capture(cap.s, false);
    CU_ASSERT(!tide_session_capture_enabled(cap.s));
    tide_session_capture_status(cap.s, &st);
    CU_ASSERT(!st.has_graph);
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 4, BATCH, &st), TIDE_STEP_EAGER);
    tide_session_set_capture(cap.s, true);
    CU_ASSERT_EQUAL(steps_both(&eager, &cap, &step, 4, BATCH, &st), TIDE_STEP_REPLAYED);
    tide_error_free(err);
    mlp_free(&eager);
    mlp_free(&cap);
}

/* Runs the fetch of n four times; the status of the last. */
static void run_four(tide_session *s, tide_node *n, tide_capture_status *st)
{
    for (int i = 0; i < 4; i++) {
        tide_tensor *t = gu_fetch(s, n);
        tide_tensor_release(t);
    }
    tide_session_capture_status(s, st);
}

/* Never captured: a node on the host, a stateful random op, an engine with no_capture. */
static void test_ineligible_plans(void)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_sim_devices = 1;
    tide_engine *e = th_engine_new(&o);
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *a = gu_const(g, "a", th_f32(1, TH_DIMS(3), (const float[]){1, 2, 3}));
    tide_node *sq = gu_op(g, "Square", "sq", 1, (tide_node *const[]){a});
    tide_node *shape = gu_const(g, "shape", th_i32(1, TH_DIMS(1), (const int32_t[]){3}));
    tide_node_builder *rb = tide_node_builder_new(g, "RandomUniform", "noise");
    tide_node_builder_add_input(rb, (tide_output){shape, 0});
    tide_attrs_set_type(tide_node_builder_attrs(rb), "dtype", TIDE_FLOAT32);
    tide_node *noise = gu_finish(rb);
    tide_graph_pop_device(g);
    tide_graph_push_device(g, "/cpu:0");
    tide_node *neg = gu_op(g, "Neg", "neg", 1, (tide_node *const[]){sq});
    tide_node *c = gu_const(g, "c", th_f32(1, TH_DIMS(3), (const float[]){4, 5, 6}));
    tide_graph_pop_device(g);
    tide_graph_push_device(g, "/sim:0");
    tide_node *mul = gu_op(g, "Mul", "mul", 2, (tide_node *const[]){a, c});
    tide_graph_pop_device(g);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_capture_status st;
    run_four(s, sq, &st);
    CU_ASSERT_EQUAL(st.last, TIDE_STEP_REPLAYED);
    run_four(s, neg, &st);
    CU_ASSERT(st.last == TIDE_STEP_EAGER && strstr(st.why, "node 'neg' runs on /cpu:0"));
    run_four(s, noise, &st);
    CU_ASSERT(st.last == TIDE_STEP_EAGER && strstr(st.why, "stateful"));
    run_four(s, mul, &st); /* a constant of the host, copied to the device once, at the capture */
    CU_ASSERT_EQUAL(st.last, TIDE_STEP_REPLAYED);
    tide_tensor *got = gu_fetch(s, mul), *want = th_f32(1, TH_DIMS(3), (const float[]){4, 10, 18});
    CU_ASSERT(same_bits(got, want));
    tide_tensor_release(got);
    tide_tensor_release(want);
    CU_ASSERT_EQUAL(st.captures, 2);
    tide_session_free(s);
    o.no_capture = true;
    tide_engine *off = th_engine_new(&o);
    s = tide_session_new(off, g, NULL, NULL);
    run_four(s, sq, &st);
    CU_ASSERT(st.last == TIDE_STEP_EAGER && st.captures == 0 && !tide_session_capture_enabled(s));
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(off);
    tide_engine_free(e);
}

int main(void)
{
    unsetenv("TIDE_CAPTURE"); /* the engines' default: on */
    unsetenv("TIDE_SIM_REPLAY_FAULT");
    static const th_test tests[] = {TH_TEST(test_replay_matches_eager), TH_TEST(test_shape_change_falls_back),
                                    TH_TEST(test_error_in_replayed_step), TH_TEST(test_fault_in_replayed_kernel),
                                    TH_TEST(test_fallbacks), TH_TEST(test_ineligible_plans),
                                    TH_TEST(test_on_by_default), TH_END};
    return th_main("capture", tests);
}
