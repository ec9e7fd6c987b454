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
 *  - out of memory with such blocks cached waits for the stream before giving them back. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "graph_util.h"

static tide_engine *sim_engine(int64_t limit)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_sim_devices = 1;
    o.device_memory_limit = limit;
    return th_engine_new(&o);
}

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
    tide_engine *e = sim_engine(0);
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
    tide_engine *e = sim_engine(0);
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
    tide_engine *e = sim_engine(0);
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
    tide_engine *e = sim_engine(64 << 10);
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

int main(void)
{
    unsetenv("TIDE_SIM_DEVICES");
    unsetenv("TIDE_DEVICE_MEMORY_LIMIT");
    static const th_test tests[] = {TH_TEST(test_same_stream_reuses_at_once),
                                    TH_TEST(test_other_streams_wait_for_the_free),
                                    TH_TEST(test_copy_never_overwrites_queued_reads),
                                    TH_TEST(test_out_of_memory_waits_for_the_stream), TH_END};
    return th_main("stream_memory", tests);
}
