/* test_stream_memory.c — stream-ordered device memory (engine/device_alloc.c) on the simulated
 * accelerator, whose compute stream is a worker thread that we hold back with a gate so that "work
 * queued but not yet run" is a state the test controls:
 *  - a block freed while queued compute work may still read it is handed AT ONCE to the next
 *    allocation for the compute stream (launch order makes that safe, as on a GPU);
 *  - an allocation for another stream (a copy's destination) never gets such a block: it gets fresh
 *    memory until the compute stream passed the free (an event the allocator recorded, or a
 *    synchronisation of the device), then the cached block again;
 *  - the hazard itself: queued work reads a block the host freed, a copy into the device follows;
 *    the work must still read the old bytes (an allocator that handed the block to the copy stream
 *    fails this, and TSan reports the race);
 *  - out of memory with such blocks cached waits for the stream before giving them back;
 *  - runs: kernels on the device are queued and return (the host waits for the device once per step,
 *    at its end, when the step's fetches come back through copies), also with $TIDE_SIM_DELAY_US making
 *    every kernel slow so that the host frees and reallocates far ahead of the device: the same bits
 *    as on the CPU, and blocks really were reused while queued work could still read them;
 *  - training: an MLP's weights updated in place on the device while the executor's two threads
 *    launch kernels, 60 steps at 50 us per kernel, bit for bit with the CPU after every step;
 *  - a variable's update runs after the step's other readers of its value (plan.c, pass 6a): in place
 *    even when a reader is slow, and with no edge where none is needed;
 *  - an error a queued kernel hits on the device fails the step, naming the node; the next step runs;
 *  - traced runs: the device's kernels have timings on its compute stream's lane, from the device's
 *    clock, in order within the lane, after their launch; the _Recvs that copy the fed value in and the
 *    fetched value out have timings on the device's copy lanes, within their own span. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "graph_util.h"

/* A task that holds the stream until the gate opens. */
static void hold_until_open(void *arg)
{
    atomic_int *gate = arg;
    while (!atomic_load(gate))
        usleep(100);
}

/* Queued "kernel": sums n floats at p once it runs (p is raw device memory, as a GPU kernel's is). */
typedef struct sum_task {
    const float *p;
    int n;
    double sum;
    atomic_int ran;
} sum_task;

static void sum_floats(void *arg)
{
    sum_task *t = arg;
    double s = 0;
    for (int i = 0; i < t->n; i++)
        s += t->p[i];
    t->sum = s;
    atomic_store(&t->ran, 1);
}

static void mark_ran(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
}

static tide_tensor *device_vector(tide_device *d, int n, bool compute_ordered)
{
    tide_error *err = tide_error_new();
    tide_tensor *t = tide__device_tensor_alloc_for(d, TIDE_FLOAT32, &(tide_shape){1, {n}}, compute_ordered, err);
    if (!t)
        fprintf(stderr, "%s\n", tide_error_message(err));
    tide_error_free(err);
    return t;
}

static tide_device_memory_stats stats_of(tide_engine *e)
{
    tide_device_memory_stats s;
    tide_engine_device_memory_stats(e, 1, &s);
    return s;
}

static void test_same_stream_reuses_at_once(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_device *d = &e->devices[1];
    tide_stream *compute = tide_device_stream(d, TIDE_STREAM_COMPUTE);
    tide_error *err = tide_error_new();
    atomic_int gate = 0;
    CU_ASSERT_EQUAL(tide_stream_launch(compute, hold_until_open, &gate, err), TIDE_OK);
    tide_tensor *a = device_vector(d, 1000, true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    void *pa = tide_tensor_device_pointer(a);
    tide_tensor_release(a); /* queued work could still read it: the stream is held */
    tide_tensor *b = device_vector(d, 1000, true);
    CU_ASSERT_PTR_EQUAL(tide_tensor_device_pointer(b), pa); /* later work on the same stream: at once */
    CU_ASSERT_EQUAL(stats_of(e).stream_reuses, 1);
    CU_ASSERT_EQUAL(stats_of(e).fresh_for_other_streams, 0);
    atomic_store(&gate, 1);
    CU_ASSERT_EQUAL(tide_device_synchronize(d, err), TIDE_OK);
    tide_tensor_release(b);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_other_streams_wait_for_the_free(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_device *d = &e->devices[1];
    tide_stream *compute = tide_device_stream(d, TIDE_STREAM_COMPUTE);
    tide_error *err = tide_error_new();
    atomic_int gate = 0, passed = 0;
    CU_ASSERT_EQUAL(tide_stream_launch(compute, hold_until_open, &gate, err), TIDE_OK);
    tide_tensor *a = device_vector(d, 1000, true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    void *pa = tide_tensor_device_pointer(a);
    tide_tensor_release(a);
    tide_tensor *c = device_vector(d, 1000, false); /* a copy stream's: not the block */
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_EQUAL(tide_tensor_device_pointer(c), pa);
    CU_ASSERT_EQUAL(stats_of(e).fresh_for_other_streams, 1);
    tide_tensor_release(c); /* now two blocks of the class wait */

    /* The stream passes the free: the allocator's event says so, without a synchronisation. */
    int64_t waits = tide_device_host_waits(d);
    atomic_store(&gate, 1);
    CU_ASSERT_EQUAL(tide_stream_launch(compute, mark_ran, &passed, err), TIDE_OK);
    while (!atomic_load(&passed))
        usleep(100);
    usleep(1000);
    tide_tensor *again = device_vector(d, 1000, false);
    CU_ASSERT_PTR_EQUAL(tide_tensor_device_pointer(again), pa);
    CU_ASSERT_EQUAL(tide_device_host_waits(d), waits); /* the host never waited */
    tide_tensor_release(again);

    /* A synchronisation of the device makes every earlier free safe at once. */
    atomic_store(&gate, 0);
    CU_ASSERT_EQUAL(tide_stream_launch(compute, hold_until_open, &gate, err), TIDE_OK);
    tide_tensor *x = device_vector(d, 3000, true);
    void *px = tide_tensor_device_pointer(x);
    tide_tensor_release(x);
    atomic_store(&gate, 1);
    CU_ASSERT_EQUAL(tide_device_synchronize(d, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_device_host_waits(d), waits + 1);
    tide_tensor *y = device_vector(d, 3000, false);
    CU_ASSERT_PTR_EQUAL(tide_tensor_device_pointer(y), px);
    tide_tensor_release(y);
    tide_error_free(err);
    tide_engine_free(e);
}

/* The hazard: queued work reads a block the host freed; a copy into the device follows at once. */
static void test_copy_never_overwrites_queued_reads(void)
{
    enum { N = 4096 };
    tide_engine *e = th_sim_engine(1, 0);
    tide_device *d = &e->devices[1];
    tide_stream *compute = tide_device_stream(d, TIDE_STREAM_COMPUTE);
    tide_error *err = tide_error_new();
    float *ones = malloc(sizeof *ones * N), *twos = malloc(sizeof *twos * N);
    for (int i = 0; i < N; i++)
        ones[i] = 1.0f, twos[i] = 2.0f;
    tide_tensor *host_ones = th_f32(1, TH_DIMS(N), ones), *host_twos = th_f32(1, TH_DIMS(N), twos);
    for (int round = 0; round < 20; round++) {
        tide_tensor *a = tide_engine_copy_to_device(e, host_ones, 1, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(tide_device_synchronize(d, err), TIDE_OK);
        atomic_int gate = 0;
        sum_task sum = {.p = tide_tensor_device_pointer(a), .n = N};
        atomic_init(&sum.ran, 0);
        CU_ASSERT_EQUAL(tide_stream_launch(compute, hold_until_open, &gate, err), TIDE_OK);
        CU_ASSERT_EQUAL(tide_stream_launch(compute, sum_floats, &sum, err), TIDE_OK);
        tide_tensor_release(a); /* as the executor does once the reading kernel is queued */
        tide_tensor *b = tide_engine_copy_to_device(e, host_twos, 1, err); /* runs on the host-to-device stream */
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        atomic_store(&gate, 1);
        CU_ASSERT_EQUAL(tide_device_synchronize(d, err), TIDE_OK);
        CU_ASSERT(atomic_load(&sum.ran));
        CU_ASSERT_EQUAL(sum.sum, (double)N); /* the ones it was queued to read, not the copy's twos */
        tide_tensor_release(b);
    }
    tide_tensor_release(host_ones);
    tide_tensor_release(host_twos);
    free(ones);
    free(twos);
    tide_error_free(err);
    tide_engine_free(e);
}

/* Out of memory with unsafe blocks cached: wait for the stream, give them back, then allocate. */
static void test_out_of_memory_waits_for_the_stream(void)
{
    tide_engine *e = th_sim_engine(1, 64 << 10);
    tide_device *d = &e->devices[1];
    tide_stream *compute = tide_device_stream(d, TIDE_STREAM_COMPUTE);
    tide_error *err = tide_error_new();
    atomic_int gate = 0;
    tide_tensor *a = device_vector(d, 10000, true); /* 40 000 bytes of 65 536 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(tide_stream_launch(compute, hold_until_open, &gate, err), TIDE_OK);
    tide_tensor_release(a);
    atomic_store(&gate, 1); /* the wait below returns once the stream ran it */
    int64_t waits = tide_device_host_waits(d);
    tide_tensor *b = device_vector(d, 12000, false); /* another class: needs the cached block's room */
    CU_ASSERT_PTR_NOT_NULL(b);
    CU_ASSERT_EQUAL(tide_device_host_waits(d), waits + 1);
    tide_tensor_release(b);
    tide_error_free(err);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- runs */

/* x [16, 32] (fed) -> MatMul w -> 6 x (Add b, Relu, Square, Tanh) -> Sum over axis 0: a static-shape
 * chain of stateless ops (29 kernels with the 3 Consts), all on `dev` (NULL: the CPU); fetches the Sum. */
static tide_tensor *run_chain(tide_engine *e, const char *dev, const tide_tensor *xv, int runs, bool trace,
                              tide_step_stats **stats)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    if (dev)
        tide_graph_push_device(g, dev);
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(16, 32));
    float wv[32 * 8], bv[8];
    for (int i = 0; i < 32 * 8; i++)
        wv[i] = (float)((i * 37) % 17 - 8) / 8.0f;
    for (int i = 0; i < 8; i++)
        bv[i] = (float)i / 16.0f - 0.2f;
    tide_node *w = gu_const(g, "w", th_f32(2, TH_DIMS(32, 8), wv));
    tide_node *b = gu_const(g, "b", th_f32(1, TH_DIMS(8), bv));
    tide_node *h = gu_op(g, "MatMul", "mm", 2, (tide_node *[]){x, w});
    for (int layer = 0; layer < 6; layer++) { /* intermediates freed and reallocated every layer */
        char name[32];
        snprintf(name, sizeof name, "add%d", layer);
        h = gu_op(g, "Add", name, 2, (tide_node *[]){h, b});
        snprintf(name, sizeof name, "relu%d", layer);
        h = gu_op(g, "Relu", name, 1, (tide_node *[]){h});
        snprintf(name, sizeof name, "sq%d", layer);
        h = gu_op(g, "Square", name, 1, (tide_node *[]){h});
        snprintf(name, sizeof name, "tanh%d", layer);
        h = gu_op(g, "Tanh", name, 1, (tide_node *[]){h});
    }
    tide_node *axis = gu_const(g, "axis", th_i32(0, NULL, (const int32_t[]){0}));
    tide_node *sum = gu_op(g, "Sum", "sum", 2, (tide_node *[]){h, axis});
    if (dev)
        tide_graph_pop_device(g);
    tide_session *sess = tide_session_new(e, g, NULL, err);
    tide_feed feed = {{x, 0}, (tide_tensor *)xv};
    tide_output fetch = {sum, 0};
    tide_run_options opts = {.trace = trace};
    tide_tensor *out = NULL;
    for (int r = 0; r < runs; r++) {
        tide_tensor_release(out);
        out = NULL;
        if (stats && *stats)
            tide_step_stats_free(*stats);
        tide_status st = tide_session_run(sess, &opts, &feed, 1, &fetch, 1, &out, NULL, 0, stats, err);
        if (st != TIDE_OK)
            fprintf(stderr, "run: %s\n", tide_error_message(err));
        CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    }
    if (dev) {
        const char *assigned = tide_node_assigned_device(h);
        CU_ASSERT(assigned && strstr(assigned, "device:sim:0"));
    }
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
    return out;
}

static tide_tensor *input_16x32(void)
{
    float v[16 * 32];
    for (int i = 0; i < 16 * 32; i++)
        v[i] = (float)((i * 7919) % 1000 - 500) / 700.0f;
    return th_f32(2, TH_DIMS(16, 32), v);
}

static void check_queued_runs(int delay_us)
{
    char delay[16];
    snprintf(delay, sizeof delay, "%d", delay_us);
    setenv("TIDE_SIM_DELAY_US", delay, 1); /* read when the device opens */
    tide_engine *cpu = th_sim_engine(1, 0), *e = th_sim_engine(1, 0);
    unsetenv("TIDE_SIM_DELAY_US");
    tide_tensor *xv = input_16x32();
    tide_tensor *want = run_chain(cpu, NULL, xv, 1, false, NULL);
    tide_tensor *got = run_chain(e, "/sim:0", xv, 1, false, NULL); /* the first run fills the allocator's cache */
    CU_ASSERT(th_same_bits(want, got));
    tide_tensor_release(got);
    int64_t waits = tide_engine_device_host_waits(e, 1);
    tide_device_memory_stats before = stats_of(e);
    got = run_chain(e, "/sim:0", xv, 5, false, NULL);
    CU_ASSERT(th_same_bits(want, got));
    /* One wait per step: its end (the fetch comes back through a copy that waits for nothing on the host). */
    CU_ASSERT_EQUAL(tide_engine_device_host_waits(e, 1) - waits, 5);
    if (delay_us > 0) /* the host ran ahead: blocks went to later kernels while queued ones could still read them */
        CU_ASSERT(stats_of(e).stream_reuses > before.stream_reuses);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(xv);
    tide_engine_free(e);
    tide_engine_free(cpu);
}

/* The pattern of train_mlp_sim's step: a two-layer MLP's weights updated in place by
 * ApplyGradientDescent on the device (a stateful kernel: it runs while the host waits), its loss and
 * a prediction fetched and its inputs fed every step, the executor's two threads launching kernels at
 * once. Weights, losses and predictions must be the CPU's bit for bit after every step. This caught
 * the update of a weight in place while a gradient MatMul launched behind it by the other host thread
 * still had to read the old value (it held only a borrowed view, so the weight looked unshared):
 * at 50 us per kernel, differing weights within a few steps in most runs. */
#define MLP_BATCH 32
#define MLP_IN 24
#define MLP_HIDDEN 48
#define MLP_OUT 10

typedef struct mlp_run {
    tide_graph *g;
    tide_session *s;
    tide_node *x, *t, *w1, *w2, *loss, *y, *train;
} mlp_run;

static tide_tensor *filled(int rows, int cols, int seed, float scale)
{
    float *v = malloc(sizeof *v * (size_t)(rows * cols));
    for (int i = 0; i < rows * cols; i++)
        v[i] = (float)((i * 7919 + seed * 104729) % 2001 - 1000) / 1000.0f * scale;
    tide_tensor *out = cols > 0 && rows > 0 ? th_f32(2, TH_DIMS(rows, cols), v) : NULL;
    free(v);
    return out;
}

static bool mlp_build(mlp_run *m, tide_engine *e, const char *dev)
{
    tide_error *err = tide_error_new();
    m->g = tide_graph_new();
    if (dev)
        tide_graph_push_device(m->g, dev);
    m->x = gu_placeholder(m->g, "x", TIDE_FLOAT32, 2, TH_DIMS(MLP_BATCH, MLP_IN));
    m->t = gu_placeholder(m->g, "t", TIDE_FLOAT32, 2, TH_DIMS(MLP_BATCH, MLP_OUT));
    tide_node *w1v = gu_const(m->g, "w1v", filled(MLP_IN, MLP_HIDDEN, 1, 0.3f));
    tide_node *w2v = gu_const(m->g, "w2v", filled(MLP_HIDDEN, MLP_OUT, 2, 0.3f));
    tide_node *b1v = gu_const(m->g, "b1v", th_f32(1, TH_DIMS(MLP_HIDDEN), (float[MLP_HIDDEN]){0.01f, -0.02f}));
    m->w1 = tide_variable_new(m->g, "w1", (tide_output){w1v, 0}, true, err);
    m->w2 = tide_variable_new(m->g, "w2", (tide_output){w2v, 0}, true, err);
    tide_node *b1 = tide_variable_new(m->g, "b1", (tide_output){b1v, 0}, true, err);
    tide_node *xw = gu_op(m->g, "MatMul", "xw1", 2, (tide_node *[]){m->x, m->w1});
    tide_node *h = gu_op(m->g, "Relu", "h", 1, (tide_node *[]){gu_op(m->g, "Add", "xw1b", 2, (tide_node *[]){xw, b1})});
    m->y = gu_op(m->g, "MatMul", "y", 2, (tide_node *[]){h, m->w2});
    tide_node *diff = gu_op(m->g, "Sub", "diff", 2, (tide_node *[]){m->y, m->t});
    tide_node *axes = gu_const(m->g, "axes", th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}));
    m->loss = gu_op(m->g, "Sum", "loss", 2, (tide_node *[]){gu_op(m->g, "Square", "sq", 1, &diff), axes});
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_SGD, 2e-3);
    m->train = tide_optimizer_minimize(m->g, &opt, (tide_output){m->loss, 0}, NULL, 0, NULL, err);
    tide_node *init = m->train ? tide_global_variables_initializer(m->g, err) : NULL;
    if (dev)
        tide_graph_pop_device(m->g);
    m->s = init ? tide_session_new(e, m->g, NULL, err) : NULL;
    bool ok = m->s && gu_target(m->s, init, err) == TIDE_OK;
    if (!ok)
        fprintf(stderr, "mlp on %s: %s\n", dev ? dev : "the host", tide_error_message(err));
    tide_error_free(err);
    return ok;
}

/* One training step on batch `step`: the loss and the prediction (fetched), then the weights. */
static bool mlp_step(mlp_run *m, int step, tide_tensor *out[4])
{
    tide_error *err = tide_error_new();
    tide_tensor *xv = filled(MLP_BATCH, MLP_IN, 10 + step % 5, 1.0f), *tv = filled(MLP_BATCH, MLP_OUT, 20 + step % 3, 1.0f);
    tide_feed feeds[2] = {{{m->x, 0}, xv}, {{m->t, 0}, tv}};
    tide_output fetches[2] = {{m->loss, 0}, {m->y, 0}};
    bool ok = tide_session_run(m->s, NULL, feeds, 2, fetches, 2, out, &m->train, 1, NULL, err) == TIDE_OK;
    ok = ok && (out[2] = gu_fetch(m->s, m->w1)) && (out[3] = gu_fetch(m->s, m->w2));
    if (!ok)
        fprintf(stderr, "mlp step %d: %s\n", step, tide_error_message(err));
    tide_tensor_release(xv);
    tide_tensor_release(tv);
    tide_error_free(err);
    return ok;
}

static void test_training_steps_match_the_cpu(void)
{
    setenv("TIDE_SIM_DELAY_US", "50", 1); /* read when the device opens */
    tide_engine *cpu = th_sim_engine(1, 0), *e = th_sim_engine(1, 0);
    unsetenv("TIDE_SIM_DELAY_US");
    mlp_run host = {0}, sim = {0};
    CU_ASSERT_FATAL(mlp_build(&host, cpu, NULL) && mlp_build(&sim, e, "/sim:0"));
    CU_ASSERT(strstr(tide_node_assigned_device(sim.w1), "device:sim:0") != NULL);
    int first_difference = -1;
    for (int step = 0; step < 60 && first_difference < 0; step++) {
        tide_tensor *want[4] = {0}, *got[4] = {0};
        bool ran = mlp_step(&host, step, want) && mlp_step(&sim, step, got);
        CU_ASSERT_FATAL(ran);
        for (int i = 0; i < 4 && first_difference < 0; i++)
            if (!th_same_bits(want[i], got[i]))
                first_difference = step;
        for (int i = 0; i < 4; i++) {
            tide_tensor_release(want[i]);
            tide_tensor_release(got[i]);
        }
    }
    if (first_difference >= 0)
        fprintf(stderr, "the MLP on /sim:0 left the CPU's results at step %d\n", first_difference);
    CU_ASSERT_EQUAL(first_difference, -1);
    tide_session_free(sim.s);
    tide_session_free(host.s);
    tide_graph_free(sim.g);
    tide_graph_free(host.g);
    tide_engine_free(e);
    tide_engine_free(cpu);
}

/* ---------------------------------------------------------------- updates after unordered reads */

static tide_node *fill_2d(tide_graph *g, const char *name, int64_t rows, int64_t cols, float value)
{
    char dims_name[64], value_name[64];
    snprintf(dims_name, sizeof dims_name, "%s_dims", name);
    snprintf(value_name, sizeof value_name, "%s_value", name);
    tide_node *dims = gu_const(g, dims_name, th_i32(1, TH_DIMS(2), (const int32_t[]){(int32_t)rows, (int32_t)cols}));
    return gu_op(g, "Fill", name, 2, (tide_node *const[]){dims, gu_scalar_f32(g, value_name, value)});
}

/* Where variable `name`'s value lies now (device or host memory). */
static const void *variable_address(tide_engine *e, const char *name)
{
    tide_shape shape = tide_shape_make(2, TH_DIMS(64, 64));
    tide_variable *v = tide__engine_variable(e, "", name, TIDE_FLOAT32, &shape, false, false, NULL);
    if (!v)
        return NULL;
    tide_variable_lock(v);
    const tide_tensor *t = tide_variable_value(v);
    const void *at = t ? (const char *)t->buf->data + t->offset : NULL;
    tide_variable_unlock(v);
    tide__variable_release(v);
    return at;
}

/* A weight w [64, 64] (all 1) on `device`, updated by ApplyGradientDescent(w, 1, g) with g = (x w) / 256
 * (x all 1: every element of w times 0.75 per step, exact in float32), and read a second time by
 * late = z w, which nothing orders against the update (as the gradient MatMul dh = dy w' beside w's
 * update): z is all 1 too but comes from a slow MatMul on /cpu:0 ([64, 65536] x [65536, 64]), so
 * `late` gets w's value at the step's start and starts long after the update could. The plan orders
 * the update after `late` (plan.c, pass 6a): every step `late` reads the old weight (64 * 0.75^k) and the
 * update is in place (w's address never changes). Before that ordering the update found w's value
 * held by `late`'s input slot and copied it every step (a new address each step). On /sim:0 the
 * kernels are queued; `delay_us` slows each down. */
static void check_update_after_unordered_read(const char *device, int delay_us)
{
    char delay[16];
    snprintf(delay, sizeof delay, "%d", delay_us);
    setenv("TIDE_SIM_DELAY_US", delay, 1);
    tide_engine *e = th_sim_engine(1, 0);
    unsetenv("TIDE_SIM_DELAY_US");
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_graph_push_device(g, "/cpu:0");
    tide_node *z = gu_op(g, "MatMul", "z", 2, (tide_node *const[]){fill_2d(g, "za", 64, 65536, 1.0f / 256),
                                                                     fill_2d(g, "zb", 65536, 64, 1.0f / 256)});
    tide_graph_pop_device(g);
    tide_graph_push_device(g, device);
    tide_node *w = gu_variable(g, "w", TIDE_FLOAT32, 2, TH_DIMS(64, 64), NULL);
    tide_node *init = gu_op(g, "Assign", "init", 2, (tide_node *const[]){w, fill_2d(g, "ones", 64, 64, 1.0f)});
    tide_node *early = gu_op(g, "MatMul", "early", 2, (tide_node *const[]){fill_2d(g, "x", 64, 64, 1.0f), w});
    tide_node *grad = gu_op(g, "Mul", "grad", 2, (tide_node *const[]){early, gu_scalar_f32(g, "scale", 1.0f / 256)});
    tide_node *update = gu_op(g, "ApplyGradientDescent", "update", 3,
                              (tide_node *const[]){w, gu_scalar_f32(g, "lr", 1.0f), grad});
    tide_node *late = gu_op(g, "MatMul", "late", 2, (tide_node *const[]){z, w});
    tide_graph_pop_device(g);
    tide_session *s = tide_session_new(e, g, NULL, err);
    CU_ASSERT_EQUAL_FATAL(gu_target(s, init, err), TIDE_OK);
    const void *at = variable_address(e, "w");
    CU_ASSERT_PTR_NOT_NULL(at);
    int moved = 0, wrong = 0;
    float want = 64.0f;
    for (int step = 0; step < 8; step++, want *= 0.75f) {
        tide_tensor *got = NULL;
        tide_output fetch = {late, 0};
        CU_ASSERT_EQUAL_FATAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &got, &update, 1, NULL, err), TIDE_OK);
        const float *v = tide_tensor_data(got);
        wrong += v[0] != want || v[64 * 64 - 1] != want;
        moved += variable_address(e, "w") != at;
        at = variable_address(e, "w");
        tide_tensor_release(got);
    }
    if (moved || wrong)
        fprintf(stderr, "\n  %s: w moved (copy on write) in %d of 8 steps; late read a wrong value in %d\n", device,
                moved, wrong);
    CU_ASSERT_EQUAL(moved, 0);
    CU_ASSERT_EQUAL(wrong, 0);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_update_after_unordered_read_cpu(void) { check_update_after_unordered_read("/cpu:0", 0); }
static void test_update_after_unordered_read_sim(void) { check_update_after_unordered_read("/sim:0", 0); }
static void test_update_after_unordered_read_slow_sim(void) { check_update_after_unordered_read("/sim:0", 200); }

/* The control edges into `update` from the nodes pass 6a ordered before it, of the plan running the
 * targets on g; -1 when the plan cannot be built. */
static int ordering_edges_into(tide_engine *e, tide_graph *g, tide_node *const *targets, int n, const tide_node *update)
{
    tide_error *err = tide_error_new();
    tide_plan *p = tide__plan_build(e, g, NULL, 0, NULL, 0, targets, n, false, NULL, err);
    CU_ASSERT_PTR_NOT_NULL(p);
    if (!p)
        fprintf(stderr, "\n  plan: %s\n", tide_error_message(err));
    int count = p ? 0 : -1;
    for (int k = 0; p && k < p->num_items; k++)
        for (int e2 = 0; p->items[k].kind == ITEM_NODE && e2 < p->items[k].num_edges; e2++) {
            const tide_edge *edge = &p->items[k].edges[e2];
            count += edge->slot < 0 && p->items[edge->dst].kind == ITEM_NODE && p->items[edge->dst].node == update;
        }
    tide__plan_free(p);
    tide_error_free(err);
    return count;
}

/* Pass 6a adds an edge only where a reader of the variable and its update are unordered: none when
 * the only reader is the update's own gradient (w <- w - w * 0.5: the Mul precedes the update
 * already), one for a reader beside the update. None in a plan with control flow: a reader in an
 * untaken branch is dead and a control edge would carry that to the update, which would then not
 * run; here w is read by Mul(w, Switch(x, false):1) and must still be updated. */
static void test_update_ordered_only_where_needed(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_node *w = gu_variable(g, "w", TIDE_FLOAT32, 1, TH_DIMS(4), NULL);
    tide_node *init = gu_op(g, "Assign", "init", 2,
                            (tide_node *const[]){w, gu_const(g, "w0", th_f32(1, TH_DIMS(4), (const float[]){8, 8, 8, 8}))});
    tide_node *grad = gu_op(g, "Mul", "grad", 2, (tide_node *const[]){w, gu_scalar_f32(g, "half", 0.5f)});
    tide_node *update = gu_op(g, "ApplyGradientDescent", "update", 3,
                              (tide_node *const[]){w, gu_scalar_f32(g, "lr", 1.0f), grad});
    tide_node *beside = gu_op(g, "Neg", "beside", 1, (tide_node *const[]){w});
    bool no = false;
    tide_node *sw = gu_op(g, "Switch", "sw", 2, (tide_node *const[]){gu_scalar_f32(g, "x", 2.0f),
                                                                        gu_const(g, "pred", th_tensor(TIDE_BOOL, 0, NULL, &no))});
    tide_node_builder *b = tide_node_builder_new(g, "Mul", "in_untaken_branch");
    tide_node_builder_add_input(b, (tide_output){w, 0});
    tide_node_builder_add_input(b, (tide_output){sw, 1});
    tide_node *dead_reader = gu_finish(b);
    CU_ASSERT_EQUAL(ordering_edges_into(e, g, &update, 1, update), 0);
    CU_ASSERT_EQUAL(ordering_edges_into(e, g, (tide_node *const[]){update, beside}, 2, update), 1);
    CU_ASSERT_EQUAL(ordering_edges_into(e, g, (tide_node *const[]){update, dead_reader}, 2, update), 0);
    tide_session *s = tide_session_new(e, g, NULL, err);
    CU_ASSERT_EQUAL_FATAL(gu_target(s, init, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, (tide_node *const[]){update, dead_reader}, 2,
                                     NULL, err), TIDE_OK);
    tide_tensor *got = gu_fetch(s, w);
    CU_ASSERT(got && ((const float *)tide_tensor_data(got))[0] == 4.0f); /* 8 - 8 * 0.5 */
    tide_tensor_release(got);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_runs_queue_kernels(void) { check_queued_runs(0); }
static void test_runs_with_a_slow_device(void) { check_queued_runs(300); }

/* GatherV2's output shape is known before it runs, its bad index only when it runs on the device. */
static void test_queued_kernel_error_fails_the_step(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *params = gu_const(g, "params", th_f32(1, TH_DIMS(4), (const float[]){1, 2, 3, 4}));
    tide_node *idx = gu_placeholder(g, "idx", TIDE_INT32, 1, TH_DIMS(2));
    tide_node *axis = gu_const(g, "axis", th_i32(0, NULL, (const int32_t[]){0}));
    tide_node *gather = gu_op(g, "GatherV2", "gather", 3, (tide_node *[]){params, idx, axis});
    tide_node *out = gu_op(g, "Relu", "after", 1, (tide_node *[]){gather});
    tide_graph_pop_device(g);
    tide_session *s = tide_session_new(e, g, NULL, err);
    tide_output fetch = {out, 0};
    tide_tensor *bad = th_i32(1, TH_DIMS(2), (const int32_t[]){1, 9}), *good = th_i32(1, TH_DIMS(2), (const int32_t[]){3, 0});
    tide_tensor *v = NULL;
    tide_feed feed = {{idx, 0}, bad};
    CU_ASSERT_NOT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &v, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "gather"));
    feed.value = good;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &v, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT(v && ((const float *)tide_tensor_data(v))[0] == 4.0f && ((const float *)tide_tensor_data(v))[1] == 1.0f);
    tide_tensor_release(v);
    tide_tensor_release(bad);
    tide_tensor_release(good);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- timelines */

static void test_traced_runs_have_device_lanes(void)
{
    setenv("TIDE_SIM_DELAY_US", "200", 1);
    tide_engine *e = th_sim_engine(1, 0);
    unsetenv("TIDE_SIM_DELAY_US");
    tide_tensor *xv = input_16x32();
    tide_step_stats *stats = NULL;
    tide_tensor *got = run_chain(e, "/sim:0", xv, 2, true, &stats);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stats);
    int on_lane = 0, copies_in = 0, copies_out = 0;
    int64_t last_end = 0;
    bool ordered = true, after_launch = true, on_device = true, copies_within = true;
    const tide_node_timing *lane[64];
    for (int i = 0; i < tide_step_stats_count(stats); i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        if (!t->stream)
            continue;
        CU_ASSERT_PTR_NOT_NULL_FATAL(t->stream_device);
        CU_ASSERT_PTR_NOT_NULL(strstr(t->stream_device, "device:sim:0"));
        if (strncmp(t->stream, "copy ", 5) == 0) { /* a _Recv's copy (run_chain freed the graph: no node names here) */
            copies_in += strcmp(t->stream, "copy h2d") == 0 && strstr(t->device, "device:sim:0");
            copies_out += strcmp(t->stream, "copy d2h") == 0 && strstr(t->device, "device:cpu:0");
            copies_within &= t->launch_start_ns <= t->start_ns && t->start_ns <= t->end_ns && t->end_ns <= t->launch_end_ns;
            continue;
        }
        CU_ASSERT_STRING_EQUAL(t->stream, "compute");
        on_device &= strstr(t->device, "device:sim:0") != NULL;
        after_launch &= t->start_ns >= t->launch_start_ns && t->launch_end_ns >= t->launch_start_ns &&
                        t->end_ns - t->start_ns >= 200000; /* the device's own time, its delay included */
        if (on_lane < 64)
            lane[on_lane] = t;
        on_lane++;
    }
    /* every kernel of the chain: 2 Consts, MatMul, 24 element-wise ops, Sum (its axes, a constant it reads in
     * host memory, are evaluated on /cpu:0: docs/devices.md, "Host-memory inputs") */
    CU_ASSERT_EQUAL(on_lane, 28);
    CU_ASSERT_EQUAL(copies_in, 1);  /* the fed x, into /sim:0 on its host-to-device stream */
    CU_ASSERT_EQUAL(copies_out, 1); /* the fetched sum, out of /sim:0 on its device-to-host stream */
    CU_ASSERT(copies_within);
    CU_ASSERT(on_device);
    CU_ASSERT(after_launch);
    /* One stream runs one kernel at a time: sorted by start, each ends before the next starts. */
    for (int i = 0; i < on_lane && i < 64; i++)
        for (int k = i + 1; k < on_lane && k < 64; k++)
            if (lane[k]->start_ns < lane[i]->start_ns) {
                const tide_node_timing *tmp = lane[i];
                lane[i] = lane[k];
                lane[k] = tmp;
            }
    for (int i = 0; i < on_lane && i < 64; i++) {
        ordered &= lane[i]->start_ns >= last_end;
        last_end = lane[i]->end_ns;
    }
    CU_ASSERT(ordered);
    tide_step_stats_free(stats);
    tide_tensor_release(got);
    tide_tensor_release(xv);
    tide_engine_free(e);
}

int main(void)
{
    unsetenv("TIDE_SIM_DEVICES");
    unsetenv("TIDE_DEVICE_MEMORY_LIMIT");
    unsetenv("TIDE_SIM_DELAY_US");
    static const th_test tests[] = {TH_TEST(test_same_stream_reuses_at_once),
                                    TH_TEST(test_other_streams_wait_for_the_free),
                                    TH_TEST(test_copy_never_overwrites_queued_reads),
                                    TH_TEST(test_out_of_memory_waits_for_the_stream),
                                    TH_TEST(test_runs_queue_kernels), TH_TEST(test_runs_with_a_slow_device),
                                    TH_TEST(test_training_steps_match_the_cpu),
                                    TH_TEST(test_update_after_unordered_read_cpu),
                                    TH_TEST(test_update_after_unordered_read_sim),
                                    TH_TEST(test_update_after_unordered_read_slow_sim),
                                    TH_TEST(test_update_ordered_only_where_needed),
                                    TH_TEST(test_queued_kernel_error_fails_the_step),
                                    TH_TEST(test_traced_runs_have_device_lanes), TH_END};
    return th_main("stream_memory", tests);
}
