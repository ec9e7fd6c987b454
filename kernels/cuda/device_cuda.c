/* device_cuda.c — the CUDA device type, "gpu" (/gpu:0, /gpu:1...), behind the device interface
 * (engine/tide_device.h): GPU memory from cudaMalloc through the engine's caching allocator (not
 * host-visible), four CUDA streams per device, CUDA events, cudaMemcpyAsync copies, host functions on
 * streams (cudaLaunchHostFunc). Built only where nvcc is found (meson option cuda).
 *
 * The binary runs everywhere: the CUDA runtime is opened at engine start with dlopen, and only on a
 * machine whose NVIDIA driver is loaded (/proc/driver/nvidia/version); elsewhere, or when the runtime
 * or a GPU is missing, the type has no devices and the engine is CPU only, without an error.
 *
 * The kernels for "gpu" are registered by cuda_kernels.c and computed by the CUDA kernel module
 * (libtide_cuda_kernels.so, nvcc-built), which is loaded here when a GPU is found; an op without a
 * GPU kernel is placed on the CPU by soft placement, with a warning. None of this has run on a GPU
 * yet: no GPU was lent while it was written (docs/devices.md; tests/gpu/run_gpu_checks.sh is the
 * script for a machine that has one). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../../engine/internal.h"
#include "cuda_kernels.h"
#include "device_cuda_graph.h"

/* ---------------------------------------------------------------- the runtime, opened at run time */

#define CUDA_FUNCTIONS(X)                                                                                   \
    X(cudaGetDeviceCount, (int *))                                                                          \
    X(cudaSetDevice, (int))                                                                                 \
    X(cudaMalloc, (void **, size_t))                                                                        \
    X(cudaFree, (void *))                                                                                   \
    X(cudaStreamCreateWithFlags, (cudaStream_t *, unsigned int))                                            \
    X(cudaStreamDestroy, (cudaStream_t))                                                                    \
    X(cudaStreamSynchronize, (cudaStream_t))                                                                \
    X(cudaLaunchHostFunc, (cudaStream_t, cudaHostFn_t, void *))                                             \
    X(cudaMemcpyAsync, (void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t))                   \
    X(cudaMemsetAsync, (void *, int, size_t, cudaStream_t))                                                 \
    X(cudaEventCreateWithFlags, (cudaEvent_t *, unsigned int))                                              \
    X(cudaEventDestroy, (cudaEvent_t))                                                                      \
    X(cudaEventRecord, (cudaEvent_t, cudaStream_t))                                                         \
    X(cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned int))                                       \
    X(cudaEventSynchronize, (cudaEvent_t))                                                                  \
    X(cudaEventQuery, (cudaEvent_t))                                                                        \
    X(cudaEventElapsedTime, (float *, cudaEvent_t, cudaEvent_t))                                            \
    X(cudaDeviceSynchronize, (void))

typedef const char *(*error_string_fn)(cudaError_t);

static struct {
    pthread_once_t once;
    void *lib;
    error_string_fn error_string;
#define FIELD(name, args) cudaError_t (*name) args;
    CUDA_FUNCTIONS(FIELD)
#undef FIELD
} rt = {.once = PTHREAD_ONCE_INIT};

static void open_runtime(void)
{
    if (access("/proc/driver/nvidia/version", R_OK) != 0) /* no driver: do not touch the runtime */
        return;
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
    for (size_t i = 0; !rt.lib && i < sizeof names / sizeof names[0]; i++)
        rt.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!rt.lib)
        return;
    bool ok = (rt.error_string = (error_string_fn)dlsym(rt.lib, "cudaGetErrorString")) != NULL;
#define LOAD(name, args) ok = ok && (*(void **)&rt.name = dlsym(rt.lib, #name)) != NULL;
    CUDA_FUNCTIONS(LOAD)
#undef LOAD
    if (!ok) {
        dlclose(rt.lib);
        rt.lib = NULL;
    }
}

/* The error of a failed CUDA call, naming the call and the device; TIDE_INTERNAL. */
static tide_status failed(tide_error *err, const tide_device *d, const char *call, cudaError_t e)
{
    char name[64];
    tide_device_short_name(tide_device_name(d), name, sizeof name);
    return tide_error_set(err, e == cudaErrorMemoryAllocation ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                          "%s on %s: %s", call, name, rt.error_string(e));
}

#define CALL(d, err, expr)                                                                                  \
    do {                                                                                                    \
        cudaError_t e_ = rt.expr;                                                                           \
        if (e_ != cudaSuccess)                                                                              \
            return failed(err, d, #expr, e_);                                                               \
    } while (0)

/* Every call that depends on the current device sets it first (any thread may call). */
static cudaError_t on(const tide_device *d)
{
    return rt.cudaSetDevice(tide_device_ordinal(d));
}

/* ---------------------------------------------------------------- memory */

static void *gpu_alloc(tide_device *d, size_t bytes)
{
    void *p = NULL;
    return on(d) == cudaSuccess && rt.cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void gpu_free(tide_device *d, void *p, size_t bytes)
{
    TIDE_UNUSED(bytes);
    if (on(d) == cudaSuccess)
        rt.cudaFree(p);
}

static const tide_buffer_type gpu_memory = {
    .name = "gpu", .host_visible = false, .alignment = 256, .alloc = gpu_alloc, .free = gpu_free,
};

static const tide_buffer_type *const gpu_buffer_types[] = {&gpu_memory};

static tide_tensor *gpu_allocate(tide_device *d, tide_dtype dt, const tide_shape *shape, bool zero, tide_error *err)
{
    if (dt == TIDE_STRING) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "%s holds no string tensors", tide_device_name(d));
        return NULL;
    }
    tide_tensor *t = tide_device_tensor_alloc(d, dt, shape, err);
    if (t && zero) { /* ordered before the kernels of the compute stream that will write it */
        cudaStream_t s = tide_stream_context(tide_device_stream(d, TIDE_STREAM_COMPUTE));
        cudaError_t e = rt.cudaMemsetAsync(tide_tensor_device_pointer(t), 0, tide_tensor_byte_size(t), s);
        if (e != cudaSuccess) {
            failed(err, d, "cudaMemsetAsync", e);
            tide_tensor_release(t);
            return NULL;
        }
    }
    return t;
}

/* ---------------------------------------------------------------- streams and events */

static void *gpu_stream_new(tide_device *d, tide_error *err)
{
    cudaStream_t s = NULL;
    cudaError_t e = on(d);
    if (e == cudaSuccess)
        e = rt.cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        failed(err, d, "cudaStreamCreateWithFlags", e);
        return NULL;
    }
    return s;
}

static void gpu_stream_free(tide_device *d, void *stream)
{
    if (on(d) == cudaSuccess) {
        rt.cudaStreamSynchronize(stream);
        rt.cudaStreamDestroy(stream);
    }
}

static tide_status gpu_stream_launch(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err)
{
    CALL(d, err, cudaLaunchHostFunc(stream, fn, arg));
    return TIDE_OK;
}

static tide_status gpu_stream_synchronize(tide_device *d, void *stream, tide_error *err)
{
    CALL(d, err, cudaStreamSynchronize(stream));
    return TIDE_OK;
}

static tide_status gpu_memcpy_async(tide_device *d, void *stream, tide_copy_kind kind, void *dst, const void *src,
                                    size_t bytes, tide_error *err)
{
    static const enum cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                                cudaMemcpyDeviceToDevice};
    if (!bytes)
        return TIDE_OK;
    CALL(d, err, cudaMemcpyAsync(dst, src, bytes, kinds[kind], stream));
    return TIDE_OK;
}

static void *gpu_event_new(tide_device *d, tide_error *err)
{
    cudaEvent_t ev = NULL;
    cudaError_t e = on(d);
    if (e == cudaSuccess)
        e = rt.cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        failed(err, d, "cudaEventCreateWithFlags", e);
        return NULL;
    }
    return ev;
}

static void gpu_event_free(tide_device *d, void *event)
{
    TIDE_UNUSED(d);
    rt.cudaEventDestroy(event);
}

static tide_status gpu_event_record(tide_device *d, void *event, void *stream, tide_error *err)
{
    CALL(d, err, cudaEventRecord(event, stream));
    return TIDE_OK;
}

static tide_status gpu_stream_wait_event(tide_device *d, void *stream, void *event, tide_error *err)
{
    CALL(d, err, cudaStreamWaitEvent(stream, event, 0));
    return TIDE_OK;
}

static tide_status gpu_event_synchronize(tide_device *d, void *event, tide_error *err)
{
    CALL(d, err, cudaEventSynchronize(event));
    return TIDE_OK;
}

static bool gpu_event_query(tide_device *d, void *event)
{
    TIDE_UNUSED(d);
    return rt.cudaEventQuery(event) == cudaSuccess;
}

/* ---------------------------------------------------------------- timelines: CUDA events per kernel */

/* A traced step's kernels (kernel ctx .span): two timing events around each launch on the compute
 * stream, resolved once the device was synchronised (the step's end) into host-clock times: the
 * elapsed time from a reference event recorded with the step's first traced kernel, whose host time
 * is taken right after it was recorded (so the device's times are late by however long the GPU took
 * to reach that event: the lane's shape is exact, its offset approximate). Never run on a GPU. */
typedef struct gpu_span {
    tide_device_span *span;
    cudaEvent_t start, end;
} gpu_span;

typedef struct gpu_timeline {
    pthread_mutex_t lock;
    cudaEvent_t ref;
    int64_t ref_host_ns;
    gpu_span *spans;
    int n, cap;
} gpu_timeline;

static tide_status gpu_open(tide_device *d, tide_error *err)
{
    gpu_timeline *tl = calloc(1, sizeof *tl);
    if (!tl)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory opening %s", tide_device_name(d));
    pthread_mutex_init(&tl->lock, NULL);
    tide_device_set_context(d, tl);
    return TIDE_OK;
}

/* Writes the resolved times into the spans and drops the events. Lock held; the device is idle. */
static void resolve_spans(gpu_timeline *tl)
{
    for (int i = 0; i < tl->n; i++) {
        gpu_span *g = &tl->spans[i];
        float start_ms = 0, end_ms = 0;
        if (rt.cudaEventElapsedTime(&start_ms, tl->ref, g->start) == cudaSuccess &&
            rt.cudaEventElapsedTime(&end_ms, tl->ref, g->end) == cudaSuccess) {
            g->span->start_ns = tl->ref_host_ns + (int64_t)((double)start_ms * 1e6);
            g->span->end_ns = tl->ref_host_ns + (int64_t)((double)end_ms * 1e6);
        }
        rt.cudaEventDestroy(g->start);
        rt.cudaEventDestroy(g->end);
    }
    if (tl->n > 0)
        rt.cudaEventDestroy(tl->ref);
    tl->n = 0;
}

static void gpu_close(tide_device *d)
{
    gpu_timeline *tl = tide_device_context(d);
    if (!tl)
        return;
    resolve_spans(tl); /* the device was synchronised before its streams closed */
    free(tl->spans);
    pthread_mutex_destroy(&tl->lock);
    free(tl);
}

static cudaEvent_t timing_event(cudaStream_t s)
{
    cudaEvent_t ev = NULL;
    if (rt.cudaEventCreateWithFlags(&ev, cudaEventDefault) != cudaSuccess)
        return NULL;
    if (rt.cudaEventRecord(ev, s) != cudaSuccess) {
        rt.cudaEventDestroy(ev);
        return NULL;
    }
    return ev;
}

/* Launches k with timing events around it when the step is traced; else just launches it. */
static tide_status launch_timed(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    gpu_timeline *tl = tide_device_context(d);
    if (!ctx->span || !tl || on(d) != cudaSuccess)
        return k->compute(ctx);
    cudaStream_t s = tide_stream_context(tide_device_stream(d, TIDE_STREAM_COMPUTE));
    pthread_mutex_lock(&tl->lock);
    if (tl->n == tl->cap) {
        int cap = tl->cap ? 2 * tl->cap : 64;
        gpu_span *grown = realloc(tl->spans, sizeof *grown * (size_t)cap);
        if (grown) {
            tl->spans = grown;
            tl->cap = cap;
        }
    }
    bool room = tl->n < tl->cap;
    if (room && tl->n == 0) {
        tl->ref = timing_event(s);
        tl->ref_host_ns = tide__now_ns();
        room = tl->ref != NULL;
    }
    cudaEvent_t start = room ? timing_event(s) : NULL;
    tide_status st = k->compute(ctx);
    cudaEvent_t end = start ? timing_event(s) : NULL;
    if (start && end) {
        tl->spans[tl->n++] = (gpu_span){ctx->span, start, end};
        ctx->span->stream = "compute";
    } else {
        if (start)
            rt.cudaEventDestroy(start);
        if (room && tl->n == 0 && tl->ref)
            rt.cudaEventDestroy(tl->ref);
    }
    pthread_mutex_unlock(&tl->lock);
    return st;
}

static tide_status gpu_synchronize(tide_device *d, tide_error *err)
{
    if (on(d) != cudaSuccess)
        return tide_error_set(err, TIDE_INTERNAL, "cannot select %s", tide_device_name(d));
    CALL(d, err, cudaDeviceSynchronize());
    gpu_timeline *tl = tide_device_context(d);
    if (tl) {
        pthread_mutex_lock(&tl->lock);
        resolve_spans(tl);
        pthread_mutex_unlock(&tl->lock);
    }
    return TIDE_OK;
}

/* Kernels for "gpu" enqueue their work on the compute stream (tide_kernel_stream) and return: the
 * executor releases their inputs at once, and the caching allocator reuses those blocks only for later
 * compute-stream work until the stream passed the free (stream-ordered memory, device_alloc.c). In a
 * step, nothing waits here: the step synchronises the device once at its end (tide__step_queued_on),
 * where an error a kernel hit on the GPU fails the step with CUDA's message; copies to the host are
 * ordered after the queued kernels by an event. An eager call (no step) waits for its kernel, so that
 * its error is its own. Never run on a GPU. */
static bool sync_each_kernel; /* $TIDE_GPU_SYNC_EACH_KERNEL=1: the old way, for measuring what it cost */
static pthread_once_t sync_each_once = PTHREAD_ONCE_INIT;

static void read_sync_each(void)
{
    const char *v = getenv("TIDE_GPU_SYNC_EACH_KERNEL");
    sync_each_kernel = v && strcmp(v, "1") == 0;
}

static tide_status gpu_compute(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    pthread_once(&sync_each_once, read_sync_each);
    tide_status st = ctx->step && !sync_each_kernel ? launch_timed(d, k, ctx) : k->compute(ctx);
    if (st != TIDE_OK)
        return st;
    if (ctx->step && !sync_each_kernel) {
        tide__step_queued_on(ctx->step, d);
        return TIDE_OK;
    }
    cudaStream_t s = tide_stream_context(tide_device_stream(d, TIDE_STREAM_COMPUTE));
    tide__device_count_host_wait(d);
    cudaError_t e = rt.cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        char name[64];
        tide_device_short_name(tide_device_name(d), name, sizeof name);
        return tide_kernel_error(ctx, TIDE_INTERNAL, "CUDA error in the kernel on %s: %s", name, rt.error_string(e));
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- enumeration */

static void warn_without_module(void)
{
    const char *why = tide__cuda_kernels_load();
    if (why)
        fprintf(stderr, "tide: found a GPU but not the CUDA kernel module, so every GPU kernel will fail: %s\n", why);
}

static int gpu_count(const tide_engine_options *opts)
{
    TIDE_UNUSED(opts);
    pthread_once(&rt.once, open_runtime);
    int n = 0;
    if (!rt.lib || rt.cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    static pthread_once_t told = PTHREAD_ONCE_INIT;
    if (n > 0) /* the kernels (cuda_kernels.c); without them the GPUs still hold tensors and copy them */
        pthread_once(&told, warn_without_module);
    return n;
}

static const tide_device_ops gpu_device_ops = {
    .type = "gpu",
    .description = "an NVIDIA GPU through the CUDA runtime: its own memory, CUDA streams and events",
    .buffer_types = gpu_buffer_types,
    .num_buffer_types = 1,
    /* H200-class guesses, not measured here: 50 TFLOP/s fp32, 4 TB/s, 5 us per launch; PCIe-class copies */
    .cost = {.flops_per_s = 50e12, .bytes_per_s = 4e12, .launch_s = 5e-6, .copy_bytes_per_s = 25e9,
             .copy_latency_s = 10e-6},
    .count = gpu_count,
    .open = gpu_open,
    .close = gpu_close,
    .allocate = gpu_allocate,
    .stream_new = gpu_stream_new,
    .stream_free = gpu_stream_free,
    .stream_launch = gpu_stream_launch,
    .stream_synchronize = gpu_stream_synchronize,
    .memcpy_async = gpu_memcpy_async,
    .event_new = gpu_event_new,
    .event_free = gpu_event_free,
    .event_record = gpu_event_record,
    .stream_wait_event = gpu_stream_wait_event,
    .event_synchronize = gpu_event_synchronize,
    .event_query = gpu_event_query,
    .compute = gpu_compute,
    .synchronize = gpu_synchronize,
    /* CUDA graphs (device_cuda_graph.c; never run on a GPU) */
    .capture_runs_work = false,
    .capture_begin = tide__gpu_capture_begin,
    .capture_end = tide__gpu_capture_end,
    .graph_launch = tide__gpu_graph_launch,
    .graph_result = tide__gpu_graph_result,
    .graph_free = tide__gpu_graph_free,
};

static void register_gpu_device(void)
{
    tide_device_type_register(&gpu_device_ops);
}
TIDE_REGISTER(register_gpu_device)
