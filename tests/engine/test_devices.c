/* test_devices.c — the device interface (engine/tide_device.h) on the simulated accelerator, which
 * has memory of its own that the host cannot read, streams that are worker threads, events and
 * asynchronous completion (engine/device_sim.c):
 *  - enumeration: /cpu:0 first, then /sim:0.., from the engine option or $TIDE_SIM_DEVICES (a bad
 *    value is a clear error; none = CPU only);
 *  - memory: tensors know their device, host access to device memory is refused with a message,
 *    the caching allocator's accounting (in use, peak, reserved, cached, hits), emptying the cache,
 *    and the memory limit (a clear RESOURCE_EXHAUSTED, in a run naming the node);
 *  - copies host -> device, device -> device, device -> host, bit for bit;
 *  - streams run their work in launch order; an event orders one stream after another and the host
 *    waits for it; a device's own threads may touch its memory;
 *  - runs across host and device: feeds go in and fetches come out through the copies the plan
 *    inserts, cross-device edges both ways, the same bits as on the CPU, observers see host copies,
 *    variables and a gradient-descent step placed on the device;
 *  - the step debugger on a device's nodes: health summaries, values as host copies, overrides;
 *  - the cost model's figures per device type, and greedy placement keeping small work on the host. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "graph_util.h"
#include "placement.h"

static tide_tensor *ramp(int64_t rows, int64_t cols, float scale)
{
    float *v = malloc(sizeof *v * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        v[i] = scale * (float)((i * 7919) % 1000 - 500) / 500.0f;
    tide_tensor *t = th_f32(2, TH_DIMS(rows, cols), v);
    free(v);
    return t;
}

/* Fetches output 0 of n in s (no feeds) and compares it bit for bit with the float32 vector want. */
static bool fetches_vector(tide_session *s, tide_node *n, int64_t count, const float *want)
{
    tide_tensor *got = gu_fetch(s, n);
    tide_tensor *expected = th_f32(1, TH_DIMS(count), want);
    bool same = th_same_bits(got, expected);
    tide_tensor_release(got);
    tide_tensor_release(expected);
    return same;
}

/* ---------------------------------------------------------------- enumeration */

static void test_enumeration(void)
{
    tide_engine *e = th_sim_engine(2, 0);
    CU_ASSERT_EQUAL(tide_engine_num_devices(e), 3);
    CU_ASSERT_STRING_EQUAL(tide_engine_device_name(e, 0), "/job:localhost/replica:0/task:0/device:cpu:0");
    CU_ASSERT_STRING_EQUAL(tide_engine_device_name(e, 1), "/job:localhost/replica:0/task:0/device:sim:0");
    CU_ASSERT_STRING_EQUAL(tide_engine_device_name(e, 2), "/job:localhost/replica:0/task:0/device:sim:1");
    CU_ASSERT_STRING_EQUAL(tide_engine_device_type(e, 0), "cpu");
    CU_ASSERT_STRING_EQUAL(tide_engine_device_type(e, 2), "sim");
    CU_ASSERT(tide_engine_device_host_visible(e, 0));
    CU_ASSERT(!tide_engine_device_host_visible(e, 1));
    CU_ASSERT_PTR_NULL(tide_engine_device_type(e, 3));
    tide_device *d = &e->devices[2];
    CU_ASSERT_EQUAL(tide_device_ordinal(d), 1);
    CU_ASSERT_PTR_NOT_NULL(tide_device_stream(d, TIDE_STREAM_COMPUTE));
    CU_ASSERT_PTR_NULL(tide_device_stream(&e->devices[0], TIDE_STREAM_COMPUTE)); /* the CPU has none */
    tide_engine_free(e);

    setenv("TIDE_SIM_DEVICES", "1", 1);
    e = th_sim_engine(0, 0);
    CU_ASSERT_EQUAL(tide_engine_num_devices(e), 2);
    tide_engine_free(e);
    setenv("TIDE_SIM_DEVICES", "two", 1);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_engine_new(NULL, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "TIDE_SIM_DEVICES='two'"));
    setenv("TIDE_DEVICE_MEMORY_LIMIT", "12X", 1);
    unsetenv("TIDE_SIM_DEVICES");
    CU_ASSERT_PTR_NULL(tide_engine_new(NULL, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "TIDE_DEVICE_MEMORY_LIMIT='12X'"));
    unsetenv("TIDE_DEVICE_MEMORY_LIMIT");
    tide_error_free(err);
    e = th_sim_engine(0, 0); /* none asked for: CPU only, no error */
    CU_ASSERT_EQUAL(tide_engine_num_devices(e), 1);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- memory and copies */

static void test_copies_and_refused_host_access(void)
{
    tide_engine *e = th_sim_engine(2, 0);
    tide_error *err = tide_error_new();
    tide_tensor *host = ramp(3, 5, 1.0f);
    tide_tensor *on0 = tide_engine_copy_to_device(e, host, 1, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(on0);
    CU_ASSERT_PTR_NULL(tide_tensor_data(on0)); /* not on this thread: the host cannot read it */
    CU_ASSERT(!tide_tensor_is_host_visible(on0));
    CU_ASSERT_STRING_EQUAL(tide_tensor_device_name(on0), "/job:localhost/replica:0/task:0/device:sim:0");
    CU_ASSERT_PTR_NULL(tide_tensor_host_data(on0, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the float32 tensor [3, 5] lives in the memory of /sim:0"));
    CU_ASSERT_PTR_NULL(tide_tensor_copy(on0, err)); /* host-side helpers refuse too, with the message */
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "which the host cannot read"));
    CU_ASSERT_PTR_NULL(tide_tensor_format(on0, 0, 3));
    CU_ASSERT(!tide_tensor_equal(on0, on0, true));

    tide_tensor *on1 = tide_engine_copy_to_device(e, on0, 2, err); /* device to device */
    CU_ASSERT_PTR_NOT_NULL_FATAL(on1);
    CU_ASSERT_PTR_EQUAL(tide_tensor_get_device(on1), &e->devices[2]);
    tide_tensor *back = tide_tensor_to_host(on1, err);
    CU_ASSERT(th_same_bits(back, host));
    CU_ASSERT(tide_tensor_is_host_visible(back));
    tide_tensor *same = tide_tensor_to_host(host, err); /* already on the host: itself */
    CU_ASSERT_PTR_EQUAL(same, host);
    tide_tensor *to_cpu = tide_engine_copy_to_device(e, on0, 0, err); /* onto the CPU device: host memory */
    CU_ASSERT(th_same_bits(to_cpu, host));
    CU_ASSERT_STRING_EQUAL(tide_tensor_device_name(to_cpu), tide_engine_device_name(e, 0));
    tide_tensor *text = tide_tensor_new(TIDE_STRING, &(tide_shape){0, {0}}, err); /* "" */
    if (text) { /* strings do not go to device memory */
        CU_ASSERT_PTR_NULL(tide_engine_copy_to_device(e, text, 1, err));
        CU_ASSERT_EQUAL(tide_error_code(err), TIDE_UNIMPLEMENTED);
        tide_tensor_release(text);
    }
    CU_ASSERT_PTR_NULL(tide_engine_copy_to_device(e, host, 7, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "no such device"));
    tide_tensor_release(same);
    tide_tensor_release(to_cpu);
    tide_tensor_release(back);
    tide_tensor_release(on1);
    tide_tensor_release(on0);
    tide_tensor_release(host);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_memory_accounting(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_error *err = tide_error_new();
    tide_tensor *host = ramp(100, 100, 1.0f); /* 40,000 bytes */
    tide_device_memory_stats s0, s1, s2, s3;
    CU_ASSERT(tide_engine_device_memory_stats(e, 1, &s0));
    CU_ASSERT_EQUAL(s0.in_use, 0);
    tide_tensor *a = tide_engine_copy_to_device(e, host, 1, err);
    tide_tensor *b = tide_engine_copy_to_device(e, host, 1, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT(tide_engine_device_memory_stats(e, 1, &s1));
    CU_ASSERT_EQUAL(s1.in_use, 80000);
    CU_ASSERT(s1.peak >= 80000);
    CU_ASSERT(s1.reserved >= 80000 && s1.reserved <= 80000 + 2 * 256);
    CU_ASSERT_EQUAL(s1.cached, 0);
    int64_t in_use = 0, peak = 0;
    CU_ASSERT(tide_engine_device_memory(e, 1, &in_use, &peak)); /* the older call agrees */
    CU_ASSERT_EQUAL(in_use, 80000);
    tide_tensor_release(a);
    CU_ASSERT(tide_engine_device_memory_stats(e, 1, &s2));
    CU_ASSERT_EQUAL(s2.in_use, 40000);
    CU_ASSERT_EQUAL(s2.reserved, s1.reserved); /* the block is kept for the next allocation */
    CU_ASSERT(s2.cached >= 40000);
    /* A copy's destination takes a freed block once the compute stream passed the free (stream-ordered
     * memory, docs/devices.md): after a synchronisation here. */
    CU_ASSERT_EQUAL(tide_device_synchronize(&e->devices[1], err), TIDE_OK);
    a = tide_engine_copy_to_device(e, host, 1, err); /* the same size class: from the cache */
    CU_ASSERT(tide_engine_device_memory_stats(e, 1, &s3));
    CU_ASSERT_EQUAL(s3.cache_hits, s2.cache_hits + 1);
    CU_ASSERT_EQUAL(s3.reserved, s1.reserved);
    CU_ASSERT_EQUAL(s3.peak, s1.peak);
    tide_tensor_release(a);
    tide_tensor_release(b);
    tide_engine_empty_cache(e);
    CU_ASSERT(tide_engine_device_memory_stats(e, 1, &s3));
    CU_ASSERT_EQUAL(s3.in_use, 0);
    CU_ASSERT_EQUAL(s3.reserved, 0);
    CU_ASSERT_EQUAL(s3.cached, 0);
    CU_ASSERT_EQUAL(s3.peak_reserved, s1.reserved);
    tide_engine_reset_peak_memory(e);
    CU_ASSERT(tide_engine_device_memory(e, 1, &in_use, &peak));
    CU_ASSERT_EQUAL(peak, 0);
    tide_tensor_release(host);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_memory_limit(void)
{
    tide_engine *e = th_sim_engine(1, 100000);
    tide_error *err = tide_error_new();
    tide_tensor *small = ramp(100, 100, 1.0f), *big = ramp(200, 200, 1.0f); /* 40,000 and 160,000 bytes */
    tide_tensor *a = tide_engine_copy_to_device(e, small, 1, err);
    CU_ASSERT_PTR_NOT_NULL(a);
    CU_ASSERT_PTR_NULL(tide_engine_copy_to_device(e, big, 1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_RESOURCE_EXHAUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "out of memory on /sim:0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "limit of 97.7 KiB"));
    tide_device_memory_stats s;
    tide_engine_device_memory_stats(e, 1, &s);
    CU_ASSERT_EQUAL(s.failures, 1);
    CU_ASSERT_EQUAL(s.limit, 100000);

    /* In a run: a fed value that does not fit fails its copy in (the feed's _Recv is named); an output
     * that does not fit fails its node, named; the step ends and the next one runs. */
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, -1));
    tide_node *multiples = gu_const(g, "multiples", th_i32(1, TH_DIMS(2), (const int32_t[]){2, 2}));
    tide_node *tiled = gu_op(g, "Tile", "wide_tile", 2, (tide_node *const[]){x, multiples});
    tide_node *y = gu_op(g, "Relu", "relu", 1, &x);
    tide_graph_pop_device(g);
    tide_session *sess = tide_session_new(e, g, NULL, err);
    tide_feed feed = {{x, 0}, big};
    tide_output fetch = {y, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(sess, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_RESOURCE_EXHAUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'x:0/_recv_on_sim0' (_Recv): copying to /sim:0: a "
                                                           "float32 tensor [200, 200]: out of memory on /sim:0"));
    tide_tensor_release(a);
    feed.value = small;
    fetch = (tide_output){tiled, 0};
    CU_ASSERT_EQUAL(tide_session_run(sess, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_RESOURCE_EXHAUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "wide_tile"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "out of memory on /sim:0: allocating 156.2 KiB"));
    if (getenv("TIDE_TEST_VERBOSE"))
        printf("\n%s\n", tide_error_message(err));
    fetch = (tide_output){y, 0};
    CU_ASSERT_EQUAL(tide_session_run(sess, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT(tide_tensor_is_host_visible(out));
    tide_tensor_release(out);
    tide_session_free(sess);
    tide_graph_free(g);
    tide_tensor_release(small);
    tide_tensor_release(big);
    tide_error_free(err);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- streams and events */

typedef struct order_log {
    pthread_mutex_t lock;
    int entries[256];
    int n;
    atomic_int gate; /* a task waits while 0 */
    tide_device *device; /* the device whose memory a task checks it may touch */
    bool touched;
} order_log;

typedef struct order_task {
    order_log *log;
    int id;
} order_task;

static void append(void *arg)
{
    order_task *t = arg;
    pthread_mutex_lock(&t->log->lock);
    t->log->entries[t->log->n++] = t->id;
    pthread_mutex_unlock(&t->log->lock);
}

static void wait_for_gate(void *arg)
{
    order_task *t = arg;
    while (!atomic_load(&t->log->gate))
        usleep(100);
    t->log->touched = tide_device_current() == t->log->device;
    append(arg);
}

static void test_streams_and_events(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_device *d = &e->devices[1];
    tide_error *err = tide_error_new();
    order_log log = {.lock = PTHREAD_MUTEX_INITIALIZER, .device = d};
    order_task tasks[200];
    for (int i = 0; i < 200; i++)
        tasks[i] = (order_task){&log, i};

    /* One stream: launch order. */
    tide_stream *s = tide_stream_new(d, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(tide_stream_launch(s, append, &tasks[i], err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_synchronize(s, err), TIDE_OK);
    CU_ASSERT_EQUAL(log.n, 100);
    bool in_order = true;
    for (int i = 0; i < log.n; i++)
        in_order &= log.entries[i] == i;
    CU_ASSERT(in_order);

    /* An event: stream b's work waits for stream a's, which waits for the gate. */
    log.n = 0;
    tide_stream *a = tide_stream_new(d, err), *b = tide_stream_new(d, err);
    tide_event *ev = tide_event_new(d, err);
    CU_ASSERT_FATAL(a && b && ev);
    CU_ASSERT(tide_event_query(ev)); /* never recorded: complete */
    CU_ASSERT_EQUAL(tide_stream_launch(a, wait_for_gate, &tasks[1], err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_event_record(ev, a, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_wait_event(b, ev, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_launch(b, append, &tasks[2], err), TIDE_OK);
    usleep(20000);
    CU_ASSERT(!tide_event_query(ev));
    pthread_mutex_lock(&log.lock);
    CU_ASSERT_EQUAL(log.n, 0); /* b has not run past the event */
    pthread_mutex_unlock(&log.lock);
    atomic_store(&log.gate, 1);
    CU_ASSERT_EQUAL(tide_event_synchronize(ev, err), TIDE_OK);
    CU_ASSERT(tide_event_query(ev));
    CU_ASSERT_EQUAL(tide_stream_synchronize(b, err), TIDE_OK);
    CU_ASSERT_EQUAL(log.n, 2);
    CU_ASSERT(log.entries[0] == 1 && log.entries[1] == 2);
    CU_ASSERT(log.touched); /* the stream's thread works for the device */
    CU_ASSERT_PTR_NULL(tide_device_current()); /* this one does not */

    /* Copies on a stream, in order with its other work; an event of another device is refused. */
    float src[4] = {1, 2, 3, 4};
    tide_tensor *t = tide_device_tensor_alloc(d, TIDE_FLOAT32, &(tide_shape){1, {4}}, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(tide_stream_memcpy_async(a, TIDE_COPY_HOST_TO_DEVICE, tide_tensor_device_pointer(t), src,
                                             sizeof src, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_synchronize(a, err), TIDE_OK); /* streams are not ordered among themselves */
    tide_tensor *host = tide_tensor_to_host(t, err);
    CU_ASSERT(host && memcmp(tide_tensor_data(host), src, sizeof src) == 0);
    tide_event *cpu_event = tide_event_new(&e->devices[0], err);
    CU_ASSERT_EQUAL(tide_event_record(cpu_event, a, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_device_synchronize(d, err), TIDE_OK);
    tide_event_free(cpu_event);
    tide_tensor_release(host);
    tide_tensor_release(t);
    tide_event_free(ev);
    tide_stream_free(a);
    tide_stream_free(b);
    tide_stream_free(s);
    tide_error_free(err);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- runs across host and device */

/* x (fed) -> MatMul with w (a Const) -> Relu -> Sum, placed by dev[] (NULL: anywhere); fetches the
 * Relu and the Sum. */
static void run_mlp_layer(tide_engine *e, const char *const dev[4], tide_tensor *xv, tide_tensor **relu,
                          tide_tensor **sum)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    if (dev[0])
        tide_graph_push_device(g, dev[0]);
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(16, 32));
    if (dev[0])
        tide_graph_pop_device(g);
    tide_node *w = gu_const(g, "w", ramp(32, 8, 0.5f));
    tide_node_builder *mb = tide_node_builder_new(g, "MatMul", "mm");
    tide_node_builder_add_input(mb, (tide_output){x, 0});
    tide_node_builder_add_input(mb, (tide_output){w, 0});
    if (dev[1])
        tide_node_builder_set_device(mb, dev[1]);
    tide_node *mm = gu_finish(mb);
    tide_node_builder *rb = tide_node_builder_new(g, "Relu", "relu");
    tide_node_builder_add_input(rb, (tide_output){mm, 0});
    if (dev[2])
        tide_node_builder_set_device(rb, dev[2]);
    tide_node *r = gu_finish(rb);
    tide_node *axis = gu_const(g, "axis", th_i32(0, NULL, (const int32_t[]){0}));
    tide_node_builder *sb = tide_node_builder_new(g, "Sum", "sum");
    tide_node_builder_add_input(sb, (tide_output){r, 0});
    tide_node_builder_add_input(sb, (tide_output){axis, 0});
    if (dev[3])
        tide_node_builder_set_device(sb, dev[3]);
    tide_node *s = gu_finish(sb);
    tide_session *sess = tide_session_new(e, g, NULL, err);
    tide_feed feed = {{x, 0}, xv};
    tide_output fetches[2] = {{r, 0}, {s, 0}};
    tide_tensor *outs[2] = {NULL, NULL};
    tide_status st = tide_session_run(sess, NULL, &feed, 1, fetches, 2, outs, NULL, 0, NULL, err);
    if (st != TIDE_OK)
        fprintf(stderr, "run: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    *relu = outs[0];
    *sum = outs[1];
    if (dev[1] && strstr(dev[1], "sim")) {
        const char *assigned = tide_node_assigned_device(mm);
        CU_ASSERT(assigned && strstr(assigned, "device:sim:"));
    }
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
}

static void test_runs_across_host_and_device(void)
{
    tide_engine *cpu = th_sim_engine(0, 0), *e = th_sim_engine(2, 0);
    tide_tensor *xv = ramp(16, 32, 2.0f), *want_r, *want_s;
    static const char *const none[4] = {NULL, NULL, NULL, NULL};
    run_mlp_layer(cpu, none, xv, &want_r, &want_s);
    static const char *const placements[][4] = {
        {"/sim:0", "/sim:0", "/sim:0", "/sim:0"}, /* all on the device: feed in, fetches out */
        {NULL, "/sim:0", "/cpu:0", "/sim:1"},     /* device -> host -> other device */
        {NULL, "/sim:0", "/sim:1", "/cpu:0"},     /* device -> device */
        {"/cpu:0", "/cpu:0", "/sim:1", "/sim:1"}, /* host -> device */
    };
    for (size_t p = 0; p < sizeof placements / sizeof placements[0]; p++) {
        tide_tensor *r = NULL, *s = NULL;
        for (int again = 0; again < 2; again++) { /* twice: the cached plan and warm allocator */
            tide_tensor_release(r);
            tide_tensor_release(s);
            run_mlp_layer(e, placements[p], xv, &r, &s);
            CU_ASSERT(tide_tensor_is_host_visible(r) && tide_tensor_is_host_visible(s));
            CU_ASSERT(th_same_bits(r, want_r));
            CU_ASSERT(th_same_bits(s, want_s));
        }
        tide_tensor_release(r);
        tide_tensor_release(s);
    }
    tide_device_memory_stats st;
    tide_engine_device_memory_stats(e, 1, &st);
    CU_ASSERT(st.allocations > 0 && st.cache_hits > 0);
    CU_ASSERT_EQUAL(st.in_use, 0); /* nothing of the device's left once the runs ended */
    tide_tensor_release(want_r);
    tide_tensor_release(want_s);
    tide_tensor_release(xv);
    tide_engine_free(e);
    tide_engine_free(cpu);
}

/* Observers read what a device made through host copies. */
typedef struct seen {
    atomic_int produced, readable;
} seen;

static bool wants_all(void *user, const tide_node *n)
{
    TIDE_UNUSED(user), TIDE_UNUSED(n);
    return true;
}

static void on_tensor(void *user, const tide_run_info *run, const tide_node *node, int output, const tide_tensor *v,
                      const tide_exec_point *at)
{
    TIDE_UNUSED(run), TIDE_UNUSED(node), TIDE_UNUSED(output), TIDE_UNUSED(at);
    seen *s = user;
    atomic_fetch_add(&s->produced, 1);
    if (tide_tensor_data(v) && tide_tensor_is_host_visible(v))
        atomic_fetch_add(&s->readable, 1);
}

static void test_observers_get_host_copies(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_error *err = tide_error_new();
    seen s = {0};
    tide_observer obs = {.user = &s, .wants_tensors = wants_all, .tensor_produced = on_tensor};
    int id = tide_engine_add_observer(e, &obs, err);
    CU_ASSERT(id > 0);
    tide_tensor *xv = ramp(16, 32, 1.0f), *r, *sum;
    static const char *const all_sim[4] = {"/sim:0", "/sim:0", "/sim:0", "/sim:0"};
    run_mlp_layer(e, all_sim, xv, &r, &sum);
    CU_ASSERT(atomic_load(&s.produced) >= 5); /* w, mm, relu, axis, sum (and the transfers) */
    CU_ASSERT_EQUAL(atomic_load(&s.produced), atomic_load(&s.readable));
    tide_engine_remove_observer(e, id);
    tide_tensor_release(r);
    tide_tensor_release(sum);
    tide_tensor_release(xv);
    tide_error_free(err);
    tide_engine_free(e);
}

/* A variable on the device, updated in place by gradient descent there: v <- v - 0.5 * v, 3 times. */
static void test_variable_on_device(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *v = gu_variable(g, "v", TIDE_FLOAT32, 1, TH_DIMS(4), NULL);
    tide_node *init = gu_const(g, "init", th_f32(1, TH_DIMS(4), (const float[]){1, 2, 4, 8}));
    tide_node *assign = gu_op(g, "Assign", "assign", 2, (tide_node *const[]){v, init});
    tide_node *half = gu_scalar_f32(g, "half", 0.5f);
    tide_node *step = gu_op(g, "Mul", "step", 2, (tide_node *const[]){v, half});
    tide_node *update = gu_op(g, "AssignSub", "update", 2, (tide_node *const[]){v, step});
    tide_graph_pop_device(g);
    tide_session *s = tide_session_new(e, g, NULL, err);
    CU_ASSERT_EQUAL(gu_target(s, assign, err), TIDE_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(gu_target(s, update, err), TIDE_OK);
    CU_ASSERT(fetches_vector(s, v, 4, (const float[]){0.125f, 0.25f, 0.5f, 1.0f}));
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    tide_engine_free(e);
}

/* One graph of the variable "v" on a device (its value lives in that device's memory). */
typedef struct placed_variable {
    tide_graph *g;
    tide_session *s;
    tide_node *v, *assign, *add, *twice;
} placed_variable;

/* v, an Assign of `init`, an AssignAdd of ones and v * 2, all on `device`, in a graph of their own. */
static placed_variable place_variable(tide_engine *e, const char *device, const float init[4])
{
    placed_variable p = {.g = tide_graph_new()};
    tide_graph_push_device(p.g, device);
    p.v = gu_variable(p.g, "v", TIDE_FLOAT32, 1, TH_DIMS(4), NULL);
    tide_node *value = gu_const(p.g, "value", th_f32(1, TH_DIMS(4), init));
    tide_node *ones = gu_const(p.g, "ones", th_f32(1, TH_DIMS(4), (const float[]){1, 1, 1, 1}));
    p.assign = gu_op(p.g, "Assign", "assign", 2, (tide_node *const[]){p.v, value});
    p.add = gu_op(p.g, "AssignAdd", "add", 2, (tide_node *const[]){p.v, ones});
    tide_node *two = gu_scalar_f32(p.g, "two", 2.0f);
    p.twice = gu_op(p.g, "Mul", "twice", 2, (tide_node *const[]){p.v, two});
    tide_graph_pop_device(p.g);
    p.s = tide_session_new(e, p.g, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p.s);
    return p;
}

static void release_placed(placed_variable *p)
{
    tide_session_free(p->s);
    tide_graph_free(p->g);
}

/* Runs `target` of graph t (when not NULL), then fetches n of graph r and compares it with want. */
static bool fetches(placed_variable *t, tide_node *target, placed_variable *r, tide_node *n, const float want[4])
{
    tide_error *err = tide_error_new();
    bool ok = !target || gu_target(t->s, target, err) == TIDE_OK;
    if (!ok)
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
    tide_error_free(err);
    return ok && fetches_vector(r->s, n, 4, want);
}

/* Variables are shared by name in the engine: one whose value lives in /sim:0's memory is assigned,
 * updated and read by kernels of /cpu:0 and /sim:1 (other graphs placing the same name elsewhere),
 * and back. The CPU's Assign once wrote in place into the device's memory through a NULL pointer. */
static void test_variable_shared_across_devices(void)
{
    tide_engine *e = th_sim_engine(2, 0);
    placed_variable sim0 = place_variable(e, "/sim:0", (const float[]){1, 2, 3, 4});
    placed_variable cpu = place_variable(e, "/cpu:0", (const float[]){10, 20, 30, 40});
    placed_variable sim1 = place_variable(e, "/sim:1", (const float[]){5, 6, 7, 8});
    /* written on the device, replaced from the host */
    CU_ASSERT(fetches(&sim0, sim0.assign, &sim0, sim0.v, (const float[]){1, 2, 3, 4}));
    CU_ASSERT(fetches(&cpu, cpu.assign, &cpu, cpu.v, (const float[]){10, 20, 30, 40}));
    CU_ASSERT(fetches(&sim0, NULL, &sim0, sim0.twice, (const float[]){20, 40, 60, 80}));
    /* on the device again, read and updated by the host's kernels */
    CU_ASSERT(fetches(&sim0, sim0.assign, &cpu, cpu.v, (const float[]){1, 2, 3, 4}));
    CU_ASSERT(fetches(&sim0, sim0.assign, &cpu, cpu.twice, (const float[]){2, 4, 6, 8}));
    CU_ASSERT(fetches(&sim0, sim0.assign, &cpu, cpu.v, (const float[]){1, 2, 3, 4}));
    CU_ASSERT(fetches(&cpu, cpu.add, &cpu, cpu.v, (const float[]){2, 3, 4, 5}));
    CU_ASSERT(fetches(&sim0, sim0.add, &sim0, sim0.v, (const float[]){3, 4, 5, 6}));
    /* between two devices */
    CU_ASSERT(fetches(&sim0, sim0.assign, &sim1, sim1.twice, (const float[]){2, 4, 6, 8}));
    CU_ASSERT(fetches(&sim0, sim0.assign, &sim1, sim1.v, (const float[]){1, 2, 3, 4}));
    CU_ASSERT(fetches(&sim1, sim1.add, &sim0, sim0.v, (const float[]){2, 3, 4, 5}));
    CU_ASSERT(fetches(&sim1, sim1.assign, &sim0, sim0.twice, (const float[]){10, 12, 14, 16}));
    CU_ASSERT(fetches(&sim0, sim0.add, &sim1, sim1.v, (const float[]){6, 7, 8, 9}));
    CU_ASSERT(fetches(&sim1, sim1.assign, &sim1, sim1.v, (const float[]){5, 6, 7, 8}));
    CU_ASSERT(fetches(&sim0, sim0.assign, &cpu, cpu.v, (const float[]){1, 2, 3, 4}));
    /* a fused optimizer update does not move the value: an error naming the variable and both devices */
    tide_graph_push_device(cpu.g, "/cpu:0");
    tide_node *alpha = gu_scalar_f32(cpu.g, "alpha", 0.5f);
    tide_node *grad = gu_const(cpu.g, "grad", th_f32(1, TH_DIMS(4), (const float[]){2, 2, 2, 2}));
    tide_node *descend = gu_op(cpu.g, "ApplyGradientDescent", "descend", 3, (tide_node *const[]){cpu.v, alpha, grad});
    tide_graph_pop_device(cpu.g);
    tide_error *err = tide_error_new();
    CU_ASSERT(fetches(&sim0, sim0.assign, &sim0, sim0.v, (const float[]){1, 2, 3, 4}));
    CU_ASSERT_EQUAL(gu_target(cpu.s, descend, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "variable 'v' (var) holds its value in the memory of "
                                                           "/sim:0, not of /cpu:0"));
    CU_ASSERT(fetches(&cpu, cpu.assign, &cpu, cpu.v, (const float[]){10, 20, 30, 40}));
    CU_ASSERT(fetches(&cpu, descend, &sim0, sim0.v, (const float[]){9, 19, 29, 39}));
    tide_error_free(err);
    release_placed(&sim1);
    release_placed(&cpu);
    release_placed(&sim0);
    tide_engine_free(e);
}

/* Variable `name` (in container, NULL: the default one) of n float32s filled with `value` by an Assign,
 * all on `device`, in graph g. */
static tide_node *filled_variable(tide_graph *g, const char *device, const char *name, const char *container,
                                  int64_t n, float value, tide_node **assign)
{
    char node_name[64];
    tide_graph_push_device(g, device);
    tide_node *v = gu_variable(g, name, TIDE_FLOAT32, 1, TH_DIMS(n), container);
    snprintf(node_name, sizeof node_name, "%s_dims", name);
    tide_node *dims = gu_const(g, node_name, th_i32(1, TH_DIMS(1), (const int32_t[]){(int32_t)n}));
    snprintf(node_name, sizeof node_name, "%s_value", name);
    tide_node *fill_value = gu_scalar_f32(g, node_name, value);
    snprintf(node_name, sizeof node_name, "%s_fill", name);
    tide_node *fill = gu_op(g, "Fill", node_name, 2, (tide_node *const[]){dims, fill_value});
    snprintf(node_name, sizeof node_name, "%s_assign", name);
    *assign = gu_op(g, "Assign", node_name, 2, (tide_node *const[]){v, fill});
    tide_graph_pop_device(g);
    return v;
}

/* A Variable read on a device its value's copy does not fit on (the device memory limit): the step
 * fails with a message naming the variable and both devices, and the value stays where it was. */
static void test_variable_read_copy_fails(void)
{
    enum { N = 160 * 1024 }; /* 640 KiB of float32: one fits in a device's 1 MiB, two do not */
    tide_engine *e = th_sim_engine(2, 1 << 20);
    tide_graph *g0 = tide_graph_new(), *g1 = tide_graph_new();
    tide_node *fill_v, *fill_w, *read_v;
    tide_node *v0 = filled_variable(g0, "/sim:0", "v", NULL, N, 1.5f, &fill_v);
    filled_variable(g1, "/sim:1", "w", "scratch", N, 2.5f, &fill_w); /* /sim:1 holds w's 640 KiB */
    tide_graph_push_device(g1, "/sim:1");
    tide_node *v1 = gu_variable(g1, "v", TIDE_FLOAT32, 1, TH_DIMS(N), NULL); /* v again, read on /sim:1 */
    read_v = gu_op(g1, "Sum", "sum_v", 2, (tide_node *const[]){v1, gu_const(g1, "axis", th_i32(0, NULL, (const int32_t[]){0}))});
    tide_graph_pop_device(g1);
    tide_session *s0 = tide_session_new(e, g0, NULL, NULL), *s1 = tide_session_new(e, g1, NULL, NULL);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(gu_target(s0, fill_v, err), TIDE_OK);
    CU_ASSERT_EQUAL_FATAL(gu_target(s1, fill_w, err), TIDE_OK);
    tide_output fetch = {read_v, 0};
    tide_tensor *sum = NULL;
    tide_status st = tide_session_run(s1, NULL, NULL, 0, &fetch, 1, &sum, NULL, 0, NULL, err);
    CU_ASSERT_EQUAL(st, TIDE_RESOURCE_EXHAUSTED);
    CU_ASSERT_PTR_NULL(sum);
    const char *message = tide_error_message(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(message, "variable 'v'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(message, "in the memory of /sim:0; copying it to /sim:1"));
    if (st == TIDE_OK || !strstr(message, "copying it to /sim:1"))
        fprintf(stderr, "\n  read of v on /sim:1: status %d, '%s'\n", st, message);
    tide_tensor_release(sum);
    /* v is unchanged on /sim:0. */
    tide_tensor *got = gu_fetch(s0, v0);
    CU_ASSERT(got && tide_tensor_num_elements(got) == N && ((const float *)tide_tensor_data(got))[N - 1] == 1.5f);
    tide_tensor_release(got);
    /* Once w is dropped, its block is only cached by /sim:1's allocator: the copy's allocation gives the
     * cache back to the device and is retried, instead of refusing with "0 bytes held, 640.5 KiB
     * reserved". */
    CU_ASSERT_EQUAL(tide_engine_reset_container(e, "scratch", err), TIDE_OK);
    st = tide_session_run(s1, NULL, NULL, 0, &fetch, 1, &sum, NULL, 0, NULL, err);
    CU_ASSERT_EQUAL(st, TIDE_OK);
    if (st != TIDE_OK)
        fprintf(stderr, "\n  read of v on /sim:1 once w was dropped: '%s'\n", tide_error_message(err));
    CU_ASSERT(sum && *(const float *)tide_tensor_data(sum) == 1.5f * N);
    tide_tensor_release(sum);
    tide_error_free(err);
    tide_session_free(s1);
    tide_graph_free(g1);
    tide_session_free(s0);
    tide_graph_free(g0);
    tide_engine_free(e);
}

/* The step debugger on a device: health summaries of a device's tensors, values read as host copies
 * while stopped, and a host value put in place of a device's output reaching its consumer there. */
typedef struct debug_probe {
    const tide_node *watched;
    double health_max;
    bool value_ok, set_ok, readable;
} debug_probe;

static bool watch_one(void *user, const tide_node *n)
{
    return n == ((debug_probe *)user)->watched;
}

static tide_debug_action check_sq(void *user, const tide_debug_event *ev)
{
    debug_probe *p = user;
    if (!ev->after)
        return TIDE_DEBUG_CONTINUE;
    tide_health h;
    if (tide_tensor_health(ev->outputs[0], &h))
        p->health_max = h.max;
    return TIDE_DEBUG_PAUSE;
}

static tide_debug_command paused_sq(void *user, tide_debug_step *step, const tide_debug_event *ev)
{
    TIDE_UNUSED(ev);
    debug_probe *p = user;
    tide_tensor *v = NULL;
    tide_error *err = tide_error_new();
    if (tide_debug_step_value(step, p->watched, 0, &v, NULL, err) == TIDE_OK) {
        const float *f = tide_tensor_data(v);
        p->readable = tide_tensor_is_host_visible(v);
        p->value_ok = f && f[0] == 1 && f[1] == 4 && f[2] == 9;
    }
    tide_tensor_release(v);
    tide_tensor *override = th_f32(1, TH_DIMS(3), (const float[]){10, 20, 30});
    p->set_ok = tide_debug_step_set_value(step, p->watched, 0, override, err) == TIDE_OK;
    tide_tensor_release(override);
    tide_error_free(err);
    return TIDE_DEBUG_RESUME;
}

static void test_debugger_on_device(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *x = gu_const(g, "x", th_f32(1, TH_DIMS(3), (const float[]){1, 2, 3}));
    tide_node *sq = gu_op(g, "Square", "sq", 1, &x);
    tide_node *neg = gu_op(g, "Neg", "neg", 1, &sq);
    tide_graph_pop_device(g);
    debug_probe probe = {.watched = sq};
    tide_debugger d = {.user = &probe, .watches = watch_one, .check = check_sq, .paused = paused_sq};
    tide_error *err = tide_error_new();
    int id = tide_engine_attach_debugger(e, &d, err);
    CU_ASSERT(id > 0);
    tide_session *s = tide_session_new(e, g, NULL, err);
    CU_ASSERT(fetches_vector(s, neg, 3, (const float[]){-10, -20, -30}));
    CU_ASSERT_EQUAL(probe.health_max, 9.0);
    CU_ASSERT(probe.value_ok && probe.readable && probe.set_ok);
    tide_engine_detach_debugger(e, id);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    tide_engine_free(e);
}

/* The cost model knows the device type: a small node costs the simulated device's launch overhead
 * there, and greedy placement keeps an unplaced graph off the device (copies and launches cost more
 * than they save), while a node asked for there goes there with its feed copied in. */
static void test_cost_model_per_type(void)
{
    tide_engine *e = th_sim_engine(1, 0);
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(4, 4));
    tide_node *y = gu_op(g, "Relu", "relu", 1, &x);
    tide_node *z = gu_op(g, "Neg", "neg", 1, &y);
    tide_cost_model m;
    tide__cost_model_default(&m);
    double on_cpu = tide__cost_estimate(&m, e->cost_table, y, &e->devices[0]);
    double on_sim = tide__cost_estimate(&m, e->cost_table, y, &e->devices[1]);
    CU_ASSERT(on_sim >= tide__sim_device_ops.cost.launch_s && on_sim > 10 * on_cpu);
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(e, g, NULL, err);
    tide_tensor *xv = ramp(4, 4, 1.0f), *out = NULL;
    tide_feed feed = {{x, 0}, xv};
    tide_output fetch = {z, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(y), tide_engine_device_name(e, 0));
    CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(z), tide_engine_device_name(e, 0));
    tide_tensor_release(out);
    tide_session_free(s);
    tide_graph_free(g);
    tide_tensor_release(xv);
    tide_error_free(err);
    tide_engine_free(e);
}

int main(void)
{
    unsetenv("TIDE_SIM_DEVICES");
    unsetenv("TIDE_DEVICE_MEMORY_LIMIT");
    static const th_test tests[] = {TH_TEST(test_enumeration), TH_TEST(test_copies_and_refused_host_access),
                                    TH_TEST(test_memory_accounting), TH_TEST(test_memory_limit),
                                    TH_TEST(test_streams_and_events), TH_TEST(test_runs_across_host_and_device),
                                    TH_TEST(test_observers_get_host_copies), TH_TEST(test_variable_on_device),
                                    TH_TEST(test_variable_shared_across_devices), TH_TEST(test_variable_read_copy_fails),
                                    TH_TEST(test_debugger_on_device), TH_TEST(test_cost_model_per_type), TH_END};
    return th_main("devices", tests);
}
