/* tide_device.h — writing a device backend: the table of functions a device type fills in (ggml's
 * backend interface is the model), the kinds of memory it offers, its streams and events, and the
 * registry through which an engine finds the devices of every type when it starts. The CPU device
 * (engine/device_cpu.c), the simulated accelerator (engine/device_sim.c) and the CUDA device
 * (kernels/cuda/) implement it; the planner, the executor and the transfer kernels use only this.
 * docs/devices.md describes the whole design; this header is its contract.
 *
 * Memory. A device type lists its buffer types: kinds of memory, each host-visible or not. The first
 * is where the device's kernels put their outputs. A tensor in memory that is not host-visible cannot
 * be read by the host (tide_tensor_data returns NULL and tide_tensor_host_data says why) except on the
 * device's own threads (the simulated device's stream threads, while they run its work): data moves
 * between memory spaces only through copies. Each accelerator device allocates through a caching
 * allocator (device_alloc.c): freed blocks are kept by size class for the next allocation, the bytes
 * held by tensors are accounted (tide_engine_device_memory), and an optional limit turns an
 * allocation beyond it into a clear RESOURCE_EXHAUSTED error.
 *
 * Stream-ordered memory. Device memory is freed in the order of the device's compute stream: a
 * tensor may be released (its block freed) as soon as the kernels that read it are QUEUED there, not
 * run. Such a block is reused at once by allocations for later compute-stream work (kernel outputs,
 * tide_device_tensor_alloc: launch order makes it safe, as in PyTorch's caching allocator), and by a
 * copy stream or the host only once the compute stream has passed the free (an event the allocator
 * records, or a synchronisation of the device or its compute stream). So: work launched on another
 * stream, or a host function, must hold its tensors until it ran (copies do), and a backend must not
 * touch, on the host, memory it just allocated before its compute stream reached that point (zero it
 * with a memset queued on the compute stream).
 *
 * Streams and events. A stream is an ordered queue of work on one device: copies and host functions
 * launched on it run one after another, in launch order. An event marks a point in a stream's work:
 * recording it on a stream makes it complete once everything launched there before has run; another
 * stream can wait for it (work launched there afterwards starts only when the event completes), and
 * the host can synchronize on it or query it. A device type without streams (the CPU: every call
 * does its work before returning) leaves those functions NULL and the generic tide_stream_* calls
 * below then run the work at once, so callers write one path for every device.
 *
 * Compute. A kernel registered for the device type runs through the type's compute (synchronous:
 * the kernel's work has run, or is queued on the device's compute stream in order, when it returns)
 * or compute_async (it returns at once and the kernel completes later through tide_kernel_done).
 * A compute that returns with work still queued calls tide__step_queued_on (engine/internal.h) so
 * that the step waits for the device once, at its end, instead of after every kernel; its outputs
 * are allocated before it returns, and an error the queued work hits fails the step there. In a
 * traced step it may fill the kernel context's span (the stream and the device's start and end of
 * the kernel): the node's timing then shows it on the stream's lane (docs/devices.md).
 *
 * Capture (optional: a type without it leaves the four functions NULL). Between capture_begin and
 * capture_end on a stream, the kernels launched on it are recorded into a graph that graph_launch runs
 * again later on a stream, in the recorded order, over the same device memory (the same addresses:
 * whoever captures keeps every buffer the recorded work touches alive and in place while the graph
 * lives; docs/devices.md, "Whole-step capture"). Work that cannot be recorded (a host function, a
 * copy from memory the graph would not own) makes capture_end fail with a message saying what it was.
 * capture_runs_work says when recorded work runs: true (the simulated device) while it is captured
 * too, false (CUDA) only when the graph is launched. graph_launch is asynchronous; graph_result, after
 * the stream synchronized, is the outcome of the last launch (a kernel's failure names its node).
 *
 * Threads: every function here may be called from any thread unless it says otherwise. */
#ifndef TIDE_DEVICE_H
#define TIDE_DEVICE_H

#include "tide_op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_device tide_device; /* one device of an engine: /cpu:0, /sim:1, /gpu:0 */
typedef struct tide_stream tide_stream; /* an ordered queue of work on one device */
typedef struct tide_event tide_event;   /* a point in a stream's work */

/* A kind of memory a device type offers. */
typedef struct tide_buffer_type {
    const char *name;           /* "cpu", "sim", "gpu", "gpu_host" */
    bool host_visible;          /* the host reads and writes it directly */
    size_t alignment;           /* of every block alloc returns (a power of two) */
    /* Raw memory for the device's caching allocator: NULL when the device has no more. */
    void *(*alloc)(tide_device *d, size_t bytes);
    void (*free)(tide_device *d, void *p, size_t bytes);
} tide_buffer_type;

typedef enum tide_copy_kind {
    TIDE_COPY_HOST_TO_DEVICE = 0,
    TIDE_COPY_DEVICE_TO_HOST = 1,
    TIDE_COPY_DEVICE_TO_DEVICE = 2, /* between two devices of one type, or within one device */
} tide_copy_kind;

/* What the placer's cost model assumes of a device type (placement.h). */
typedef struct tide_device_cost {
    double flops_per_s;          /* arithmetic speed of one device */
    double bytes_per_s;          /* memory bandwidth */
    double launch_s;             /* fixed cost per kernel (launch, hand-over to the device's thread) */
    double copy_bytes_per_s;     /* host <-> device copies (0 for host-visible memory: nothing is copied) */
    double copy_latency_s;       /* fixed cost per copy */
} tide_device_cost;

/* A device type's table. Functions that a type does not need are NULL (see above: streams). */
typedef struct tide_device_ops {
    const char *type;            /* the type in device names, lower case: "cpu", "sim", "gpu" */
    const char *description;     /* one line for docs and --help */
    const tide_buffer_type *const *buffer_types; /* [0]: where the type's kernels put their outputs */
    int num_buffer_types;
    tide_device_cost cost;

    /* Enumeration, when an engine starts: how many devices of this type it gets (0: none, which is not
     * an error: a machine without a GPU). opts are the engine's, with environment defaults applied. */
    int (*count)(const tide_engine_options *opts);
    /* Per-device state, after the engine filled in the device's name and ordinal; close undoes it once
     * the device's memory is no longer used. May be NULL. */
    tide_status (*open)(tide_device *d, tide_error *err);
    void (*close)(tide_device *d);

    /* A tensor in memory of buffer type [0], for a kernel's output or a copy's destination; zeroed
     * when zero. NULL with err filled (out of memory names the device, the bytes and the tensor). */
    tide_tensor *(*allocate)(tide_device *d, tide_dtype dt, const tide_shape *shape, bool zero, tide_error *err);

    /* Streams: an opaque context each. launch runs fn(arg) on the host once the work launched on the
     * stream before it has run (fn must not block on the same stream). */
    void *(*stream_new)(tide_device *d, tide_error *err);
    void (*stream_free)(tide_device *d, void *stream);
    tide_status (*stream_launch)(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err);
    tide_status (*stream_synchronize)(tide_device *d, void *stream, tide_error *err);
    /* Copies bytes in stream order. Host memory given to a copy must stay valid until it ran. */
    tide_status (*memcpy_async)(tide_device *d, void *stream, tide_copy_kind kind, void *dst, const void *src,
                                size_t bytes, tide_error *err);

    /* Events: an opaque context each. */
    void *(*event_new)(tide_device *d, tide_error *err);
    void (*event_free)(tide_device *d, void *event);
    tide_status (*event_record)(tide_device *d, void *event, void *stream, tide_error *err);
    tide_status (*stream_wait_event)(tide_device *d, void *stream, void *event, tide_error *err);
    tide_status (*event_synchronize)(tide_device *d, void *event, tide_error *err);
    bool (*event_query)(tide_device *d, void *event);

    /* Running a kernel spec on the device (see above). */
    tide_status (*compute)(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx);
    void (*compute_async)(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx);
    /* Waits until every stream of the device is idle. */
    tide_status (*synchronize)(tide_device *d, tide_error *err);

    /* Capture (see above; all NULL: the type cannot capture). */
    bool capture_runs_work;
    tide_status (*capture_begin)(tide_device *d, void *stream, tide_error *err);
    void *(*capture_end)(tide_device *d, void *stream, tide_error *err); /* a graph, or NULL with err */
    tide_status (*graph_launch)(tide_device *d, void *graph, void *stream, tide_error *err);
    tide_status (*graph_result)(tide_device *d, void *graph, tide_error *err);
    void (*graph_free)(tide_device *d, void *graph);
} tide_device_ops;

/* Registers a device type (from a load-time constructor, like kernels). Engines created afterwards
 * enumerate its devices: the CPU's first, then the other types by name. A second type of the same
 * name is an error that tide_engine_new reports. */
void tide_device_type_register(const tide_device_ops *ops);

/* ---------------------------------------------------------------- a device's facts */

const char *tide_device_name(const tide_device *d);        /* full: /job:localhost/replica:0/task:0/device:sim:0 */
const char *tide_device_type(const tide_device *d);        /* "sim" */
int tide_device_ordinal(const tide_device *d);             /* N of /sim:N */
const tide_device_ops *tide_device_get_ops(const tide_device *d);
bool tide_device_host_visible(const tide_device *d);       /* its buffer type [0] is host-visible */
/* The bytes the device may hold (tide_engine_options.device_memory_limit; 0: no limit of tide's). */
int64_t tide_device_memory_limit(const tide_device *d);
void *tide_device_context(const tide_device *d);           /* what open stored with set_context */
void tide_device_set_context(tide_device *d, void *context);

/* The device's streams, made when the engine opened it (NULL for a type without streams): kernels run
 * on the compute stream; copies into the device on host_to_device, out of it on device_to_host,
 * between devices on device_to_device. */
typedef enum tide_stream_role {
    TIDE_STREAM_COMPUTE = 0,
    TIDE_STREAM_HOST_TO_DEVICE = 1,
    TIDE_STREAM_DEVICE_TO_HOST = 2,
    TIDE_STREAM_DEVICE_TO_DEVICE = 3,
} tide_stream_role;
tide_stream *tide_device_stream(const tide_device *d, tide_stream_role role);

/* The device whose work the calling thread is doing now (set by a device's own threads while they
 * run its streams: only there may its memory be touched directly), or NULL. */
tide_device *tide_device_current(void);
/* For a backend's threads: the device they work for (NULL: none). Returns the previous one. */
tide_device *tide_device_set_current(tide_device *d);

/* A new tensor in d's memory (buffer type [0]) through its caching allocator; the bytes count
 * towards the device's memory and its limit. Not zeroed. For a backend's allocate. */
tide_tensor *tide_device_tensor_alloc(tide_device *d, tide_dtype dt, const tide_shape *shape, tide_error *err);
/* The device memory of t (its first element), for a backend's kernels and copies; NULL when t is in
 * host memory. Never dereferenced by the host for memory that is not host-visible. */
void *tide_tensor_device_pointer(const tide_tensor *t);
/* The device whose memory holds t (NULL: host memory no device accounts, e.g. a tensor made with
 * tide_tensor_new). */
tide_device *tide_tensor_get_device(const tide_tensor *t);

/* ---------------------------------------------------------------- streams and events, any device */

/* These call the device type's functions, or (types without streams: the CPU) do the work at once:
 * a stream of such a device is a placeholder whose work runs when it is launched. */
tide_stream *tide_stream_new(tide_device *d, tide_error *err);
void tide_stream_free(tide_stream *s);
tide_device *tide_stream_device(const tide_stream *s);
void *tide_stream_context(const tide_stream *s);           /* the backend's own (cudaStream_t...) */
tide_status tide_stream_launch(tide_stream *s, void (*fn)(void *arg), void *arg, tide_error *err);
tide_status tide_stream_synchronize(tide_stream *s, tide_error *err);
tide_status tide_stream_memcpy_async(tide_stream *s, tide_copy_kind kind, void *dst, const void *src, size_t bytes,
                                     tide_error *err);
tide_event *tide_event_new(tide_device *d, tide_error *err);
void tide_event_free(tide_event *e);
tide_status tide_event_record(tide_event *e, tide_stream *s, tide_error *err);
tide_status tide_stream_wait_event(tide_stream *s, tide_event *e, tide_error *err);
tide_status tide_event_synchronize(tide_event *e, tide_error *err);
bool tide_event_query(tide_event *e);

/* Waits until every stream of d is idle (at once for a type without streams). */
tide_status tide_device_synchronize(tide_device *d, tide_error *err);
/* How many times the host has waited for d: tide_device_synchronize, tide_stream_synchronize,
 * tide_event_synchronize, a waiting copy (tide_tensor_copy_to_device) out of d, a synchronous compute
 * that waited for its kernel. A step on an accelerator waits where the host needs its data (fetches,
 * observers, host-side kernels) and once at its end, never per kernel (docs/devices.md). */
int64_t tide_device_host_waits(const tide_device *d);

/* ---------------------------------------------------------------- capture (device_graph.c) */

typedef struct tide_device_graph tide_device_graph; /* recorded work of one stream, replayable */

/* Can d's type capture (its four capture functions are there)? */
bool tide_device_can_capture(const tide_device *d);
/* These call the type's functions (an error naming the device for a type without capture). */
tide_status tide_stream_capture_begin(tide_stream *s, tide_error *err);
tide_device_graph *tide_stream_capture_end(tide_stream *s, tide_error *err);
tide_status tide_device_graph_launch(tide_device_graph *g, tide_stream *s, tide_error *err);
tide_status tide_device_graph_result(tide_device_graph *g, tide_error *err);
void tide_device_graph_free(tide_device_graph *g);

/* ---------------------------------------------------------------- copies between memory spaces */

/* Called once a copy finished: status TIDE_OK and a new tensor (the callee's), or the error. */
typedef void (*tide_copy_done)(void *arg, tide_status status, tide_tensor *copy, const char *message);

/* Copies src into memory of device dst (a host-visible device, or NULL: host memory that no device
 * accounts), asynchronously, ordered after the work already queued on src's device: on the source's
 * device_to_host stream, the destination's host_to_device stream, or the source's device_to_device
 * stream. done runs once, possibly before this returns, on whichever thread finished the copy. When
 * src is already readable where dst needs it (host memory to a host-visible device), done gets src
 * itself with one more reference. src is retained until the copy has run. */
void tide_tensor_copy_to_device_async(const tide_tensor *src, tide_device *dst, tide_copy_done done, void *arg);
/* The same, waiting for the copy. */
tide_tensor *tide_tensor_copy_to_device(const tide_tensor *src, tide_device *dst, tide_error *err);
/* Can kernels of device d read t where it lies (d's own memory, or host memory for a host-visible d)? */
bool tide_device_can_read(const tide_device *d, const tide_tensor *t);

/* ---------------------------------------------------------------- for kernels */

/* The device a kernel runs on, and its compute stream (NULL on the CPU). */
tide_device *tide_kernel_device(const tide_kernel_ctx *ctx);
tide_stream *tide_kernel_stream(const tide_kernel_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
