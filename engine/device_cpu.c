/* device_cpu.c — the CPU device type: host memory (tensor.c's allocator and its cache of large
 * buffers, shared by every CPU device of the process; each device accounts the bytes its kernels
 * allocate), kernels run on the calling executor thread, and no streams: whatever it is asked to do
 * is done before the call returns, so the generic stream and event calls run the work at once. An
 * engine has at least one CPU device; /cpu:0 is the host, where feeds come from and fetches go. */
#include "internal.h"

static const tide_buffer_type cpu_memory = {
    .name = "cpu",
    .host_visible = true,
    .alignment = 64, /* tensor.c's; large blocks come from its cache, not through alloc */
};

static const tide_buffer_type *const cpu_buffer_types[] = {&cpu_memory};

/* Host memory, accounted to the device: each virtual CPU device has its own figures. */
static tide_tensor *cpu_allocate(tide_device *d, tide_dtype dt, const tide_shape *shape, bool zero,
                                 tide_error *err)
{
    tide_tensor *t = tide__tensor_alloc(dt, shape, zero, err);
    if (t && d) {
        t->buf->device = d;
        tide__device_account(d, (int64_t)t->buf->size);
    }
    return t;
}

static tide_status cpu_compute(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    TIDE_UNUSED(d); /* on the calling executor thread */
    return k->compute(ctx);
}

static int cpu_count(const tide_engine_options *opts)
{
    return opts->num_cpu_devices > 0 ? opts->num_cpu_devices : 1;
}

const tide_device_ops tide__cpu_device_ops = {
    .type = "cpu",
    .description = "the host's cores: host memory, kernels on the executor's threads",
    .buffer_types = cpu_buffer_types,
    .num_buffer_types = 1,
    /* one core of this machine's class: 20 GFLOP/s, 10 GB/s; a node costs ~1 us to schedule */
    .cost = {.flops_per_s = 20e9, .bytes_per_s = 10e9, .launch_s = 1e-6},
    .count = cpu_count,
    .allocate = cpu_allocate,
    .compute = cpu_compute,
};
