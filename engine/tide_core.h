/* tide_core.h — the core of tide's public C API: status and errors, dtypes, shapes, tensors,
 * attribute values, the engine and its devices, observers, graphs and nodes, sessions. A program that
 * builds a graph by hand and runs it needs only this header (engine/tide.h includes it with the
 * others: training in tide_train.h, file readers in tide_data.h, the op registry in tide_registry.h;
 * writing ops and kernels in tide_op.h).
 *
 * Conventions (they hold for every function of tide's public headers):
 *  - Errors. A fallible call returns a tide_status (TIDE_OK == 0) and takes an optional, caller-owned
 *    tide_error as its LAST argument; on failure the error receives the code and a message that names
 *    the node, the op and the shapes/types involved. Constructors return NULL on failure and fill the
 *    same error object. Passing NULL for the error is allowed: the code is still returned.
 *  - Ownership. Arguments stay the caller's. Objects a call hands back are the caller's to free or
 *    release, unless the prototype says "borrowed". Every free/release function accepts NULL.
 *  - Tensors are reference counted and immutable once shared: whoever keeps one retains it.
 *  - Graphs only grow (except tide_graph_rollback of nodes no plan has used); nodes keep stable
 *    addresses for the life of their graph.
 *  - Threads. An engine, a graph and a session are driven from one thread at a time, except:
 *    tide_session_run may be called concurrently on different sessions over one engine (and on one
 *    session), tide_session_cancel from any thread (it is async-signal-safe), and tensors may be
 *    retained/released anywhere.
 *  - Enum values are explicit and only ever appended: they reach the run log.
 */
#ifndef TIDE_CORE_H
#define TIDE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status and errors */

typedef enum tide_status {
    TIDE_OK = 0,
    TIDE_CANCELLED = 1,
    TIDE_INVALID_ARGUMENT = 3,
    TIDE_DEADLINE_EXCEEDED = 4,
    TIDE_NOT_FOUND = 5,
    TIDE_ALREADY_EXISTS = 6,
    TIDE_RESOURCE_EXHAUSTED = 8,
    TIDE_FAILED_PRECONDITION = 9,
    TIDE_ABORTED = 10,
    TIDE_OUT_OF_RANGE = 11,
    TIDE_UNIMPLEMENTED = 12,
    TIDE_INTERNAL = 13,
    TIDE_UNAVAILABLE = 14,
} tide_status;

typedef struct tide_error tide_error;

tide_error *tide_error_new(void);
void tide_error_free(tide_error *err);
/* The code of the last failure recorded (TIDE_OK if none) and its message ("" if none); borrowed. */
tide_status tide_error_code(const tide_error *err);
const char *tide_error_message(const tide_error *err);
void tide_error_clear(tide_error *err);
/* Records code and a printf-style message; returns code (so `return tide_error_set(...)` works). */
tide_status tide_error_set(tide_error *err, tide_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *tide_status_name(tide_status code);

/* ---------------------------------------------------------------- dtypes */

typedef enum tide_dtype {
    TIDE_INVALID_DTYPE = 0,
    TIDE_BOOL = 1,
    TIDE_INT8 = 2,
    TIDE_INT16 = 3,
    TIDE_INT32 = 4,
    TIDE_INT64 = 5,
    TIDE_UINT8 = 6,
    TIDE_UINT16 = 7,
    TIDE_FLOAT16 = 8,
    TIDE_BFLOAT16 = 9,
    TIDE_FLOAT32 = 10,
    TIDE_FLOAT64 = 11,
    TIDE_COMPLEX64 = 12,
    TIDE_COMPLEX128 = 13,
    TIDE_STRING = 14,
} tide_dtype;
#define TIDE_NUM_DTYPES 15

/* "float32", "int64", ...; NULL for an invalid value. */
const char *tide_dtype_name(tide_dtype dt);
/* Parses a dtype name ("float32", also "float", "double", "half", "bf16"); TIDE_INVALID_DTYPE if unknown. */
tide_dtype tide_dtype_from_name(const char *name);
/* Bytes per element (a string element is a tide_tstring). 0 for an invalid dtype. */
size_t tide_dtype_size(tide_dtype dt);
bool tide_dtype_is_float(tide_dtype dt);    /* float16, bfloat16, float32, float64 */
bool tide_dtype_is_integer(tide_dtype dt);  /* int8..int64, uint8, uint16 */
bool tide_dtype_is_complex(tide_dtype dt);

/* One element of a string tensor: bytes (not necessarily NUL-terminated, though tide adds a NUL). */
typedef struct tide_tstring {
    char *data;
    size_t len;
} tide_tstring;

/* float16 (IEEE binary16) and bfloat16 conversions, round to nearest even. */
uint16_t tide_f32_to_f16(float f);
float tide_f16_to_f32(uint16_t h);
uint16_t tide_f32_to_bf16(float f);
float tide_bf16_to_f32(uint16_t b);

/* ---------------------------------------------------------------- shapes */

#define TIDE_MAX_RANK 8
/* rank == -1: unknown rank. dims[i] == -1: unknown dimension (graph time only). */
typedef struct tide_shape {
    int rank;
    int64_t dims[TIDE_MAX_RANK];
} tide_shape;

tide_shape tide_shape_make(int rank, const int64_t *dims);
tide_shape tide_shape_scalar(void);
tide_shape tide_shape_unknown(void);
tide_shape tide_shape_vector(int64_t n);
tide_shape tide_shape_matrix(int64_t rows, int64_t cols);
bool tide_shape_is_fully_defined(const tide_shape *s);
/* Number of elements; -1 if not fully defined or too large for int64. */
int64_t tide_shape_num_elements(const tide_shape *s);
bool tide_shape_equal(const tide_shape *a, const tide_shape *b);
/* Could a tensor of shape `actual` (fully defined) be given where `expected` (partial) is declared? */
bool tide_shape_compatible(const tide_shape *expected, const tide_shape *actual);
/* Writes "[2, ?, 3]" ("<unknown>" for unknown rank) into buf; returns buf. */
char *tide_shape_format(const tide_shape *s, char *buf, size_t size);
#define TIDE_SHAPE_STR_MAX 160

/* ---------------------------------------------------------------- tensors */

typedef struct tide_tensor tide_tensor;
typedef void (*tide_deallocator)(void *data, size_t bytes, void *arg);

/* A new tensor with refcount 1. Numbers are zero-filled; strings are empty. */
tide_tensor *tide_tensor_new(tide_dtype dt, const tide_shape *shape, tide_error *err);
/* A new tensor whose numeric elements are left uninitialised (strings are empty), for a caller that
 * writes every element before the tensor is shared: a file reader, a gather. */
tide_tensor *tide_tensor_new_uninitialized(tide_dtype dt, const tide_shape *shape, tide_error *err);
/* A new tensor holding a copy of `bytes` bytes at data (must equal elements * dtype size).
 * For TIDE_STRING, data is an array of tide_tstring whose bytes are copied. */
tide_tensor *tide_tensor_new_copy(tide_dtype dt, const tide_shape *shape, const void *data,
                                  size_t bytes, tide_error *err);
/* A rank-0 tensor holding *value (an element of dt). */
tide_tensor *tide_tensor_new_scalar(tide_dtype dt, const void *value, tide_error *err);
/* A tensor over foreign memory; dealloc(data, bytes, arg) is called when the last view goes.
 * Not for TIDE_STRING. */
tide_tensor *tide_tensor_wrap(tide_dtype dt, const tide_shape *shape, void *data, size_t bytes,
                              tide_deallocator dealloc, void *arg, tide_error *err);

tide_tensor *tide_tensor_retain(tide_tensor *t); /* returns t */
void tide_tensor_release(tide_tensor *t);

tide_dtype tide_tensor_dtype(const tide_tensor *t);
int tide_tensor_rank(const tide_tensor *t);
int64_t tide_tensor_dim(const tide_tensor *t, int i);
const tide_shape *tide_tensor_shape(const tide_tensor *t); /* borrowed */
int64_t tide_tensor_num_elements(const tide_tensor *t);
size_t tide_tensor_byte_size(const tide_tensor *t);
/* The elements, contiguous, row-major. Write only to a tensor nobody else holds yet. NULL for a tensor
 * in device memory the host cannot read (an accelerator's: tide_tensor_host_data says so with a
 * message, tide_tensor_to_host copies it); runs hand their callers and observers host tensors only. */
void *tide_tensor_data(const tide_tensor *t);
/* tide_tensor_data, or NULL with an error naming the tensor and its device when the host cannot read it. */
void *tide_tensor_host_data(const tide_tensor *t, tide_error *err);
/* The full name of the device whose memory holds t ("/job:localhost/replica:0/task:0/device:sim:0"),
 * or NULL for host memory no device accounts (tensors made with tide_tensor_new...). Borrowed. */
const char *tide_tensor_device_name(const tide_tensor *t);
/* Whether the host can read t's memory (every tensor but those in an accelerator's memory). */
bool tide_tensor_is_host_visible(const tide_tensor *t);
/* t in host memory: t itself (one more reference) when the host can read it, else a copy made by the
 * device (waits for it). */
tide_tensor *tide_tensor_to_host(const tide_tensor *t, tide_error *err);
/* True when t is the only holder of its buffer (refcount 1, no other view): safe to write in place. */
bool tide_tensor_is_exclusive(const tide_tensor *t);

/* Views sharing t's buffer (no copy). reshape: same element count, at most one -1 dim inferred.
 * slice: rows [begin, end) of the first dimension. */
tide_tensor *tide_tensor_reshape(tide_tensor *t, const tide_shape *shape, tide_error *err);
tide_tensor *tide_tensor_slice(tide_tensor *t, int64_t begin, int64_t end, tide_error *err);
/* A deep copy (new buffer). */
tide_tensor *tide_tensor_copy(const tide_tensor *t, tide_error *err);
/* t converted to dt (every pair of dtypes; strings parse/print numbers): a new tensor, or t itself with
 * one more reference when it already has dtype dt. The rules are in docs/ops.md (Cast). */
tide_tensor *tide_tensor_cast(const tide_tensor *t, tide_dtype dt, tide_error *err);

/* String elements. get: borrowed bytes. set: copies (tensor must be exclusive). */
const char *tide_tensor_string_get(const tide_tensor *t, int64_t i, size_t *len);
tide_status tide_tensor_string_set(tide_tensor *t, int64_t i, const char *data, size_t len,
                                   tide_error *err);

/* Element i converted to double (complex: real part; string: parsed, NaN if not a number). */
double tide_tensor_get_f64(const tide_tensor *t, int64_t i);
/* Same dtype, shape and values (NaN equal to NaN when nan_equal). */
bool tide_tensor_equal(const tide_tensor *a, const tide_tensor *b, bool nan_equal);

/* NumPy-style text, eliding the middle of dimensions longer than 2*edge when the tensor has more than
 * threshold elements (threshold <= 0: never). Returns a malloc'd string (caller frees) or NULL. */
char *tide_tensor_format(const tide_tensor *t, int64_t threshold, int edge);

/* ---------------------------------------------------------------- attribute values */

typedef enum tide_attr_type {
    TIDE_ATTR_NONE = 0,
    TIDE_ATTR_INT = 1,
    TIDE_ATTR_FLOAT = 2,
    TIDE_ATTR_BOOL = 3,
    TIDE_ATTR_STRING = 4,
    TIDE_ATTR_TYPE = 5,
    TIDE_ATTR_SHAPE = 6,
    TIDE_ATTR_TENSOR = 7,
    TIDE_ATTR_INT_LIST = 8,
    TIDE_ATTR_FLOAT_LIST = 9,
    TIDE_ATTR_TYPE_LIST = 10,
    TIDE_ATTR_STRING_LIST = 11,
    TIDE_ATTR_BOOL_LIST = 12,
    TIDE_ATTR_SHAPE_LIST = 13,
    TIDE_ATTR_TENSOR_LIST = 14,
} tide_attr_type;

/* A set of named, typed attribute values (an op's attrs). Setters copy their arguments; a setter
 * replaces any earlier value of the name. */
typedef struct tide_attrs tide_attrs;

tide_attrs *tide_attrs_new(void);
void tide_attrs_free(tide_attrs *a);
tide_attrs *tide_attrs_clone(const tide_attrs *a);
void tide_attrs_set_int(tide_attrs *a, const char *name, int64_t v);
void tide_attrs_set_float(tide_attrs *a, const char *name, double v);
void tide_attrs_set_bool(tide_attrs *a, const char *name, bool v);
void tide_attrs_set_string(tide_attrs *a, const char *name, const char *v);
void tide_attrs_set_type(tide_attrs *a, const char *name, tide_dtype v);
void tide_attrs_set_shape(tide_attrs *a, const char *name, const tide_shape *v);
void tide_attrs_set_tensor(tide_attrs *a, const char *name, tide_tensor *v); /* retains v */
void tide_attrs_set_int_list(tide_attrs *a, const char *name, const int64_t *v, int n);
void tide_attrs_set_float_list(tide_attrs *a, const char *name, const double *v, int n);
void tide_attrs_set_type_list(tide_attrs *a, const char *name, const tide_dtype *v, int n);
void tide_attrs_set_string_list(tide_attrs *a, const char *name, const char *const *v, int n);
void tide_attrs_set_bool_list(tide_attrs *a, const char *name, const bool *v, int n);
void tide_attrs_set_shape_list(tide_attrs *a, const char *name, const tide_shape *v, int n);
void tide_attrs_set_tensor_list(tide_attrs *a, const char *name, tide_tensor *const *v, int n); /* retains */

/* Copies every attr of src into dst (replacing same-named ones). */
void tide_attrs_merge(tide_attrs *dst, const tide_attrs *src);
int tide_attrs_count(const tide_attrs *a);
const char *tide_attrs_name_at(const tide_attrs *a, int i); /* borrowed; i in [0, count) */
tide_attr_type tide_attrs_type(const tide_attrs *a, const char *name); /* NONE if absent */
/* Getters return false (and leave *v alone) when the name is absent or of another type. */
bool tide_attrs_get_int(const tide_attrs *a, const char *name, int64_t *v);
bool tide_attrs_get_float(const tide_attrs *a, const char *name, double *v);
bool tide_attrs_get_bool(const tide_attrs *a, const char *name, bool *v);
bool tide_attrs_get_string(const tide_attrs *a, const char *name, const char **v);
bool tide_attrs_get_type(const tide_attrs *a, const char *name, tide_dtype *v);
bool tide_attrs_get_shape(const tide_attrs *a, const char *name, tide_shape *v);
bool tide_attrs_get_tensor(const tide_attrs *a, const char *name, tide_tensor **v); /* borrowed */
/* Lists: *v borrowed, valid while the attrs live and the name is not set again. */
bool tide_attrs_get_int_list(const tide_attrs *a, const char *name, const int64_t **v, int *n);
bool tide_attrs_get_float_list(const tide_attrs *a, const char *name, const double **v, int *n);
bool tide_attrs_get_type_list(const tide_attrs *a, const char *name, const tide_dtype **v, int *n);
bool tide_attrs_get_string_list(const tide_attrs *a, const char *name, const char *const **v, int *n);
bool tide_attrs_get_bool_list(const tide_attrs *a, const char *name, const bool **v, int *n);
bool tide_attrs_get_shape_list(const tide_attrs *a, const char *name, const tide_shape **v, int *n);
bool tide_attrs_get_tensor_list(const tide_attrs *a, const char *name, tide_tensor *const **v, int *n);

/* ---------------------------------------------------------------- engine */

typedef struct tide_engine tide_engine;
typedef struct tide_graph tide_graph;
typedef struct tide_node tide_node;
typedef struct tide_session tide_session;
typedef struct tide_node_builder tide_node_builder;

/* How nodes without a device request are spread over the devices (white paper §3.2.1). */
typedef enum tide_placement_kind {
    TIDE_PLACEMENT_GREEDY = 0,      /* simulate a step over the cost model; each node where it finishes first */
    TIDE_PLACEMENT_NAIVE = 1,       /* everything on the first device that can run it */
    TIDE_PLACEMENT_ROUND_ROBIN = 2, /* colocation groups dealt to the devices in turn */
} tide_placement_kind;

typedef struct tide_engine_options {
    int num_threads;     /* executor threads; 0: one per core */
    int num_cpu_devices; /* virtual CPU devices /cpu:0..N-1; 0: 1 (or $TIDE_CPU_DEVICES) */
    tide_placement_kind placement; /* default greedy (or $TIDE_PLACEMENT: greedy, naive, round_robin) */
    /* Plans merge duplicate stateless nodes (same op, attrs, inputs and device request: the white
     * paper's common-subexpression elimination, done when a plan is made after each Extend) unless
     * no_cse is set (or $TIDE_CSE=0). The graph keeps every node; a merged node's fetch returns the
     * value its twin computed. */
    bool no_cse;
    /* With several devices, a _Recv starts as late as possible (ALAP: just before the node that needs
     * it would start, by the cost model) unless it is on the critical path, which bounds the memory
     * that received tensors hold. no_alap (or $TIDE_ALAP=0) starts every _Recv at once. */
    bool no_alap;
    /* Plans fuse chains and trees of element-wise ops (bias add, activations, their gradients, the
     * arithmetic of an update) into one item that makes one pass over the data without intermediate
     * tensors (docs/fusion.md) unless no_fusion is set (or $TIDE_FUSION=0); a session may turn it off
     * for its own runs (tide_session_set_fusion). A fetched or watched node is never fused away, and
     * a plan is made without fusion while an attached debugger can stop in it or keeps values (keep
     * mode); with a debugger that watches none of its nodes it is fused (docs/debugger.md). */
    bool no_fusion;
    /* Whole-step capture (docs/devices.md, "Whole-step capture"): a step whose plan runs on one device
     * that can capture (the simulated device, a GPU), with static shapes, is captured into a device
     * graph after two eager runs and replayed from then on; no_capture (or $TIDE_CAPTURE=0) forbids
     * it; a session may turn it off for its own runs (tide_session_set_capture). */
    bool no_capture;
    /* Every float32 tensor that crosses devices travels as bfloat16 (its upper 16 bits; the low
     * mantissa bits are lost) and is restored to float32 on arrival: the white paper's lossy
     * compression (§5.5). Per graph: tide_graph_set_compress_transfers; per tensor: the bool attr
     * "_compress_transfers" on the producing node. Or $TIDE_COMPRESS_TRANSFERS=1. */
    bool compress_transfers;
    /* Simulated accelerators /sim:0..N-1 (or $TIDE_SIM_DEVICES): devices with memory of their own that
     * the host cannot read, one worker thread per stream, asynchronous copies and completion, running
     * the CPU kernels there (docs/devices.md). For testing every path a GPU takes where none exists. */
    int num_sim_devices;
    /* Bytes each accelerator device (sim, gpu) may hold at once; beyond it an allocation fails with
     * RESOURCE_EXHAUSTED naming the node and the sizes (TensorFlow's memory fraction). 0: no limit
     * (or $TIDE_DEVICE_MEMORY_LIMIT, in bytes, with an optional K, M or G suffix). */
    int64_t device_memory_limit;
} tide_engine_options;

void tide_engine_options_init(tide_engine_options *opts);
/* opts may be NULL (defaults). Fails if op or kernel registration failed at load. */
tide_engine *tide_engine_new(const tide_engine_options *opts, tide_error *err);
/* Every session over the engine must be freed first. */
void tide_engine_free(tide_engine *engine);
int tide_engine_num_threads(const tide_engine *engine);
int tide_engine_num_devices(const tide_engine *engine);
/* Full name, "/job:localhost/replica:0/task:0/device:cpu:0"; borrowed; NULL if out of range. */
const char *tide_engine_device_name(const tide_engine *engine, int i);
/* Memory of device i: the bytes held now by tensors its kernels allocated, and the most held at once
 * since the engine started or the last reset. False when i is out of range. */
bool tide_engine_device_memory(const tide_engine *engine, int i, int64_t *in_use, int64_t *peak);
/* Starts the peaks again from the bytes in use now (to measure one step's peak). */
void tide_engine_reset_peak_memory(tide_engine *engine);
/* The memory of device i in detail. Tensors' bytes (in_use, peak: as tide_engine_device_memory) and,
 * for accelerators, what their caching allocator holds: reserved (blocks taken from the device,
 * in use or cached), cached (free blocks kept for reuse), the limit (0: none), allocations served and
 * how many came from the cache. A CPU device's memory is the process's (reserved and cached 0). */
typedef struct tide_device_memory_stats {
    int64_t in_use, peak, reserved, peak_reserved, cached, limit;
    int64_t allocations, cache_hits, failures;
    /* Stream order (docs/devices.md): blocks handed to the compute stream while queued work freed
     * them may still read them, and fresh blocks taken for a copy stream because the cached ones of
     * its size were not yet safe there. */
    int64_t stream_reuses, fresh_for_other_streams;
} tide_device_memory_stats;
bool tide_engine_device_memory_stats(const tide_engine *engine, int i, tide_device_memory_stats *out);
/* How many times the host has waited for device i's work (0 for a CPU device): a step on an
 * accelerator waits where the host needs its data and at its end, not per kernel (docs/devices.md). */
int64_t tide_engine_device_host_waits(const tide_engine *engine, int i);
/* Gives the accelerators' cached free blocks back to their devices. */
void tide_engine_empty_cache(tide_engine *engine);
/* The device type of device i ("cpu", "sim", "gpu"; borrowed), NULL if out of range; and whether the
 * host can read its memory (false for accelerators: their tensors reach the host through copies). */
const char *tide_engine_device_type(const tide_engine *engine, int i);
bool tide_engine_device_host_visible(const tide_engine *engine, int i);
/* A copy of t in the memory of device i (an accelerator's, or host memory for a CPU device): what a
 * program does to put a tensor on a device itself (runs do it for feeds). Waits for the copy. */
tide_tensor *tide_engine_copy_to_device(tide_engine *engine, const tide_tensor *t, int i, tide_error *err);
/* Drops every variable of the named container ("" is the default container). */
tide_status tide_engine_reset_container(tide_engine *engine, const char *container, tide_error *err);
/* Number of variables currently held in a container (0 if the container does not exist). */
int tide_engine_container_size(tide_engine *engine, const char *container);

/* Runs one op eagerly on the engine's first CPU device, outside any graph: attrs may be NULL and
 * type attrs are inferred from the inputs. Fills outputs[0..*num_outputs) (caller releases them). */
tide_status tide_engine_run_op(tide_engine *engine, const char *op, tide_tensor *const *inputs,
                               int num_inputs, const tide_attrs *attrs, tide_tensor **outputs,
                               int max_outputs, int *num_outputs, tide_error *err);

/* ---------------------------------------------------------------- observers */

typedef struct tide_run_info {
    uint64_t run_id;        /* unique in the process */
    const tide_session *session;
    int64_t step;           /* the session's step counter (0, 1, ...) */
    int num_feeds, num_fetches, num_targets;
    const char *const *feed_names;   /* "node:index" */
    const char *const *fetch_names;
    const char *const *target_names;
    bool tracing;           /* node_finished is called for this run */
    /* The fed values, num_feeds of them in feed_names' order (borrowed: valid during run_started and
     * run_ended only). Their dtypes and shapes tell a training step from an evaluation of the same
     * nodes (a batch of 100 rows or a test set of 10,000). */
    const struct tide_feed *feeds;
    /* run_ended only: the most bytes the run's kernels held at once in tensors they allocated on its
     * devices (outputs and temporaries, all devices together; fed values, variables and values passed
     * along in place are not counted). Per device: tide_step_stats_peak_bytes. */
    int64_t peak_bytes;
    /* run_ended only: the memory of each of the engine's devices in this run (num_devices of them, in
     * engine order; borrowed), NULL when unknown (out of memory). */
    int num_devices;
    const struct tide_run_device_memory *device_memory;
} tide_run_info;

/* One device's memory in one run (tide_run_info.device_memory; the run log's runs.device_memory). */
typedef struct tide_run_device_memory {
    const char *device;  /* its full name (borrowed) */
    /* The most bytes the run's kernels held at once on it, in tensors they allocated (peak_bytes for
     * this device alone; 0 for a replayed captured step, whose buffers were allocated at its capture). */
    int64_t peak_bytes;
    /* The bytes held by tensors in its memory when the run ended (tide_engine_device_memory's in_use:
     * variables, kept values, a captured step's buffers, and whatever other runs in flight held then). */
    int64_t held_bytes;
} tide_run_device_memory;

typedef struct tide_node_timing {
    const tide_node *node;
    const char *device;     /* borrowed full device name */
    int thread;             /* executor thread index (-1: the caller's thread) */
    int64_t scheduled_ns, start_ns, end_ns; /* CLOCK_MONOTONIC nanoseconds */
    size_t output_bytes;
    /* The shapes of the outputs this execution produced, "[64, 256]" or "[64, 256] []" for two outputs
     * ("" for none), clipped to the buffer with "..." at the end. */
    char output_shapes[64];
    /* Inside a loop (control flow): the frame instance ("while", "outer:3/inner" for the inner loop's
     * instance of outer iteration 3; borrowed, valid as long as the timing) and the iteration; ""
     * and 0 outside loops. A node inside a loop has one timing per iteration. */
    const char *frame;
    int64_t iteration;
    /* A fused group's execution (docs/fusion.md): node is the group's root and this lists every
     * member, "h, r, out" (the root last; borrowed, valid as long as the session); NULL otherwise. */
    const char *fused;
    /* A kernel queued on an accelerator's stream (docs/devices.md, GPU timelines): the stream it ran in,
     * its lane ("compute"; a _Recv's copy into or out of an accelerator: "copy h2d", "copy d2h" or
     * "copy d2d"; NULL for a node the executor's thread ran itself), and stream_device the full name of
     * the device whose stream it is (a copy out of /sim:0 received on /cpu:0 runs on /sim:0's). start_ns
     * and end_ns are then when it ran on the device's stream (the simulated device's clock is the
     * host's; a GPU's events would be mapped onto it), and launch_start_ns/launch_end_ns when the host
     * launched it (a _Recv: from its start until its value was there). */
    const char *stream;
    const char *stream_device;
    int64_t launch_start_ns, launch_end_ns;
    /* A copy made outside a node (docs/devices.md, GPU timelines): the host copy of an output in an
     * accelerator's memory that observers (the run log's watches, the REPL's) read. `copy` names the
     * tensor it copied ("y:0"; borrowed for the callback), node is the node that made it, stream the
     * copy's lane ("copy d2h") and stream_device the device whose stream ran it; start_ns/end_ns when
     * that stream ran it, launch_start_ns/launch_end_ns the host's wait for it. NULL for a node's own
     * execution. Such timings reach node_finished only (not tide_step_stats). The run log keeps them
     * as rows named after the tensor with op TIDE_COPY_TO_HOST_OP. */
    const char *copy;
} tide_node_timing;

/* The op name under which the run log, the timeline and the Chrome trace show an observer's host copy
 * (tide_node_timing.copy): not an op of the registry. */
#define TIDE_COPY_TO_HOST_OP "_CopyToHost"

/* Where one execution of a node happened (control flow): inside loops the frame instance ("while",
 * "outer:3/inner") and its iteration; "" and 0 outside loops. Borrowed for the callback. */
typedef struct tide_exec_point {
    const char *frame;
    int64_t iteration;
} tide_exec_point;

/* Callbacks come from executor threads concurrently: they must be thread-safe and quick. Any may be
 * NULL. tensor_produced is asked for only for nodes wants_tensors accepted when the plan was made.
 * wants_trace is asked before each run starts (run->tracing says whether the caller asked): when any
 * observer answers true the run is traced as if the caller had set tide_run_options.trace (a logging
 * policy such as "trace every 100th step"). */
typedef struct tide_observer {
    void *user;
    bool (*wants_trace)(void *user, const tide_run_info *run);
    void (*run_started)(void *user, const tide_run_info *run);
    void (*node_finished)(void *user, const tide_run_info *run, const tide_node_timing *timing);
    bool (*wants_tensors)(void *user, const tide_node *node);
    /* Once per execution: a node inside a loop produces its tensors in every iteration (at). */
    void (*tensor_produced)(void *user, const tide_run_info *run, const tide_node *node, int output,
                            const tide_tensor *value, const tide_exec_point *at);
    void (*run_ended)(void *user, const tide_run_info *run, tide_status status, const char *message,
                      int64_t wall_ns);
    /* A fetched tensor, as it is handed to the caller (fetch is its index in the run's fetches). */
    void (*tensor_fetched)(void *user, const tide_run_info *run, int fetch, const tide_tensor *value);
} tide_observer;

/* Returns an id for removal (> 0) or 0 with err set. The observer struct is copied. */
int tide_engine_add_observer(tide_engine *engine, const tide_observer *obs, tide_error *err);
/* Removes an observer and waits for its callbacks in flight: once it returns, none of them runs and
 * none will be called (runs that started before the removal included), so its user data may be
 * freed. It may be called from one of the observer's own callbacks (it does not wait for that one).
 * An unknown id does nothing. */
void tide_engine_remove_observer(tide_engine *engine, int id);

/* ---------------------------------------------------------------- input files */

/* The most bytes tide reads from one input file (a graph text file, a data file of tide_data.h;
 * counted after decompression) unless the caller passes a cap of its own (max_bytes options): a
 * larger or endless input (a gzip bomb, /dev/zero) is an error naming the cap, not exhausted memory.
 * tide_input_max_bytes gives $TIDE_MAX_INPUT_BYTES — a number of bytes, or one with a binary unit
 * K, M, G or T ("8G") — when it is set, else TIDE_DEFAULT_MAX_INPUT_BYTES; it fails (naming the
 * variable) when the variable is malformed or 0. */
#define TIDE_DEFAULT_MAX_INPUT_BYTES ((uint64_t)1 << 30)
/* How every "larger than the cap" message ends: how to raise it. */
#define TIDE_INPUT_CAP_HINT                                                                          \
    "the cap on what tide reads from one input file; raise it with the environment variable "      \
    "TIDE_MAX_INPUT_BYTES (a size such as 8G) or, in C, the max_bytes option"
tide_status tide_input_max_bytes(uint64_t *max_bytes, tide_error *err);
/* Writes bytes for people into buf ("1 GiB", "512 MiB", or "1536 bytes" when no unit divides it
 * exactly); returns buf. */
char *tide_format_bytes(uint64_t bytes, char *buf, size_t size);

/* ---------------------------------------------------------------- graphs and nodes */

/* One output of a node: a small value type. */
typedef struct tide_output {
    tide_node *node;
    int index;
} tide_output;

tide_graph *tide_graph_new(void);
/* Drops the caller's hold on g. Sessions hold their graph too: a graph freed while sessions use it
 * lives on (its nodes stay valid) until the last of them is freed. */
void tide_graph_free(tide_graph *g);
int tide_graph_num_nodes(const tide_graph *g);
tide_node *tide_graph_node_at(const tide_graph *g, int i);          /* borrowed, creation order */
tide_node *tide_graph_node(const tide_graph *g, const char *name);   /* borrowed; NULL if absent */
/* Parses "name" or "name:index"; fills *out. */
tide_status tide_graph_output(const tide_graph *g, const char *spec, tide_output *out,
                              tide_error *err);
/* Increments on every change; plans use it. */
uint64_t tide_graph_version(const tide_graph *g);
/* Removes the nodes created after the graph had `num_nodes` nodes (an aborted extension). Fails if
 * any of them was used by a prepared plan. */
tide_status tide_graph_rollback(tide_graph *g, int num_nodes, tide_error *err);
/* The graph-level random seed (TensorFlow's graph seed); 0 means none set. */
void tide_graph_set_seed(tide_graph *g, int64_t seed);
int64_t tide_graph_seed(const tide_graph *g);
/* Lossy transfer compression for every float32 tensor of this graph that crosses devices (see
 * tide_engine_options.compress_transfers). Applies to plans made afterwards. */
void tide_graph_set_compress_transfers(tide_graph *g, bool on);

/* Name scopes and default devices apply to nodes built while pushed. */
void tide_graph_push_scope(tide_graph *g, const char *scope);
void tide_graph_pop_scope(tide_graph *g);
void tide_graph_push_device(tide_graph *g, const char *device_spec);
void tide_graph_pop_device(tide_graph *g);
/* Gives node n a new name (checked like a builder's name, and free). Fails, changing nothing, once
 * the node has been run (plans and the run log know it by name). The REPL names nodes after the Lua
 * variables they are assigned to. */
tide_status tide_graph_rename_node(tide_graph *g, tide_node *n, const char *name, tide_error *err);
/* A name not used yet: "scope/base", else "scope/base_1", "scope/base_2"... (malloc'd). */
char *tide_graph_unique_name(tide_graph *g, const char *base);

/* The text format (docs/graph-text-format.md): one node per line,
 *   name = Op(input, input:1, ^control, attr=value, ...) @"/device:spec"
 * to_text returns a malloc'd string. extend_text adds every node of text or none. */
char *tide_graph_to_text(const tide_graph *g, tide_error *err);
/* The line of one node in that format, with its '\n' (malloc'd; NULL when out of memory). */
char *tide_node_to_text(const tide_node *n);
tide_status tide_graph_extend_text(tide_graph *g, const char *text, tide_error *err);
/* extend_text of the text in the file at path, read whole first (max_bytes caps its size; 0: the
 * cap of tide_input_max_bytes). A file that is not text (a NUL byte) is refused as soon as it is
 * read; errors name the file (and the line: "PATH line N: ..."). */
tide_status tide_graph_extend_file(tide_graph *g, const char *path, uint64_t max_bytes, tide_error *err);

/* Building one node: new -> add inputs/attrs/device -> finish. finish consumes the builder (also on
 * failure) and adds the node only if it is valid: op known, inputs of the right count and types,
 * attrs known and typed, shapes inferred without conflict, name unique. name may be NULL: the op's
 * name in snake case is used, made unique; a given name is taken as is (scope prefixed) and must be
 * free. */
tide_node_builder *tide_node_builder_new(tide_graph *g, const char *op, const char *name);
void tide_node_builder_add_input(tide_node_builder *b, tide_output in);
void tide_node_builder_add_input_list(tide_node_builder *b, const tide_output *ins, int n);
/* Inputs not grouped by the caller: grouped as the op defines them (non-list inputs take one each, a
 * single list input takes the rest), as tide_engine_run_op does. Don't mix with the grouped calls. */
void tide_node_builder_add_inputs_flat(tide_node_builder *b, const tide_output *ins, int n);
void tide_node_builder_add_control_input(tide_node_builder *b, tide_node *n);
void tide_node_builder_set_device(tide_node_builder *b, const char *device_spec);
tide_attrs *tide_node_builder_attrs(tide_node_builder *b); /* borrowed: set attrs into it */
tide_node *tide_node_builder_finish(tide_node_builder *b, tide_error *err);
void tide_node_builder_free(tide_node_builder *b); /* abandon without finishing */

const char *tide_node_name(const tide_node *n);
const char *tide_node_op(const tide_node *n);
int tide_node_id(const tide_node *n);
/* A number no other node of this process has had or will have (1, 2, ... in creation order): it tells
 * a node from one built later at the same address, after a tide_graph_rollback freed the first. */
uint64_t tide_node_serial(const tide_node *n);
int tide_node_num_inputs(const tide_node *n);
tide_output tide_node_input(const tide_node *n, int i);
int tide_node_num_control_inputs(const tide_node *n);
tide_node *tide_node_control_input(const tide_node *n, int i);
int tide_node_num_outputs(const tide_node *n);
tide_dtype tide_node_output_dtype(const tide_node *n, int i);
tide_shape tide_node_output_shape(const tide_node *n, int i); /* as inferred at Extend time */
const tide_attrs *tide_node_attrs(const tide_node *n);      /* borrowed, defaults filled in */
const char *tide_node_requested_device(const tide_node *n); /* "" if none */
const char *tide_node_assigned_device(const tide_node *n);  /* NULL until placed by a run */
bool tide_node_is_stateful(const tide_node *n);

/* ---------------------------------------------------------------- sessions */

typedef struct tide_session_options {
    int64_t first_step; /* reserved; 0 */
    bool no_fusion;     /* this session's plans fuse no element-wise ops (tide_engine_options.no_fusion) */
    bool no_capture;    /* this session's steps are never captured (tide_engine_options.no_capture) */
} tide_session_options;

/* A session runs subgraphs of g on engine. The session holds g: the caller may tide_graph_free it
 * before the session (the graph then goes with the last session that holds it). Several sessions may
 * share a graph, and run on it at once. opts may be NULL. */
tide_session *tide_session_new(tide_engine *engine, tide_graph *g, const tide_session_options *opts,
                               tide_error *err);
void tide_session_free(tide_session *s);
tide_graph *tide_session_graph(const tide_session *s); /* borrowed */
/* Element-wise fusion for this session's later runs (on unless the engine or the session options
 * turned it off): false plans every node as an item of its own, as the graph says. The session keeps
 * the plans of both settings. fusion_enabled says what the session's runs do now (off when the
 * engine's option is). */
void tide_session_set_fusion(tide_session *s, bool on);
bool tide_session_fusion_enabled(const tide_session *s);
tide_engine *tide_session_engine(const tide_session *s); /* borrowed */

/* Whole-step capture for this session's later runs (on unless the engine or the session options
 * turned it off); turning it off drops the session's graph. capture_enabled: what its runs do now. */
void tide_session_set_capture(tide_session *s, bool on);
bool tide_session_capture_enabled(const tide_session *s);
/* How a step ran: eagerly (the executor, node by node), captured (eagerly, its device's kernels
 * recorded into a graph), or replayed (the graph launched, feeds copied in and fetches out). */
typedef enum tide_step_mode { TIDE_STEP_EAGER = 0, TIDE_STEP_CAPTURED = 1, TIDE_STEP_REPLAYED = 2 } tide_step_mode;
typedef struct tide_capture_status {
    tide_step_mode last;      /* the session's last step (EAGER before any) */
    char why[320];            /* last == EAGER: why it was not captured or replayed ("" when capture is off) */
    char device[64];          /* the graph's device, short ("/sim:0"); "" without a graph */
    int64_t captures, replays; /* steps captured and replayed since the session started */
    int64_t held_bytes;       /* device memory the graph keeps at fixed addresses (its step's tensors) */
    bool has_graph;           /* a graph is held now */
} tide_capture_status;
void tide_session_capture_status(tide_session *s, tide_capture_status *out);
/* Atomic extension of the session's graph by text (see tide_graph_extend_text). */
tide_status tide_session_extend(tide_session *s, const char *text, tide_error *err);

typedef struct tide_feed {
    tide_output output; /* the tensor replaced */
    tide_tensor *value; /* borrowed; retained by the run as needed */
} tide_feed;

typedef struct tide_run_options {
    bool trace;          /* collect per-node timings (tide_run_metadata, observers) */
    int64_t timeout_ms;  /* 0: none */
    /* Set by tide_session_cancel_mark: the run counts cancellations from the mark, not from its own
     * start, so a tide_session_cancel after the mark cancels it even if it came before the run began. */
    bool cancel_from_mark;
    int cancel_mark;
} tide_run_options;

typedef struct tide_step_stats tide_step_stats;

/* Runs the smallest subgraph that computes `fetches` and runs `targets`, with `feeds` replacing the
 * tensors they name. fetch_values[i] receives a new reference for fetches[i] (NULL on failure).
 * opts may be NULL. stats, if not NULL, receives per-node timings when the run is traced (opts->trace,
 * or an observer's wants_trace), else NULL (caller frees) — also when the run fails: the timings of the
 * nodes that ran, which show where it stopped. */
tide_status tide_session_run(tide_session *s, const tide_run_options *opts, const tide_feed *feeds,
                             int num_feeds, const tide_output *fetches, int num_fetches,
                             tide_tensor **fetch_values, tide_node *const *targets, int num_targets,
                             tide_step_stats **stats, tide_error *err);
/* Cancels the session's runs in flight (they fail with TIDE_CANCELLED), waking the kernels they have
 * waiting (a dequeue from an empty queue). Any thread, signal-safe. */
void tide_session_cancel(tide_session *s);
/* Marks opts' run as cancelled by any tide_session_cancel from now on, also one that comes before the
 * run starts. A caller with its own interrupt flag (the REPL's Ctrl-C) takes the mark, then checks the
 * flag, then runs: a cancel after the check is not lost in the gap before the run begins. */
void tide_session_cancel_mark(const tide_session *s, tide_run_options *opts);
/* Closes the session: its runs in flight are cancelled as by tide_session_cancel and every later run
 * fails with TIDE_FAILED_PRECONDITION. Any thread (not from a signal handler). Free it once the runs
 * in flight have returned. */
void tide_session_close(tide_session *s);
bool tide_session_is_closed(const tide_session *s);
int64_t tide_session_step(const tide_session *s); /* runs started so far */
/* The soft-placement warnings of the plans this session has built (a node that asked for a device type
 * without a kernel for it, and where it went instead), oldest first, NULL-terminated. Borrowed: the
 * array and its strings stay valid, unchanged, until the session is freed (a later call that finds
 * new warnings returns a new array). */
int tide_session_warnings(tide_session *s, const char *const **warnings);
/* Number of prepared plans cached (for tests and :info). */
int tide_session_num_plans(const tide_session *s);

int tide_step_stats_count(const tide_step_stats *st);
const tide_node_timing *tide_step_stats_at(const tide_step_stats *st, int i); /* borrowed */
/* The step time that placement predicted for the plan that ran (seconds, by the cost model: the
 * simulated makespan across devices). */
double tide_step_stats_simulated_s(const tide_step_stats *st);
/* The step's peak memory: the most bytes its kernels held at once in tensors they allocated (outputs
 * and temporaries; fed values, variables and values passed along in place are not counted) on the
 * device of engine index `device` (tide_engine_device_name), or on all devices together (device -1).
 * 0 for an unknown device. */
int64_t tide_step_stats_peak_bytes(const tide_step_stats *st, int device);
void tide_step_stats_free(tide_step_stats *st);

/* ---------------------------------------------------------------- devices */

/* A parsed, possibly partial device specification:
 *   /job:NAME/replica:N/task:N/device:TYPE:N, short forms /cpu:0, /gpu:1, cpu:0, /device:CPU:*.
 * Unset parts are NULL/-1; type is lower case. */
typedef struct tide_device_spec {
    char job[32];
    int replica, task;
    char type[16];
    int index;
} tide_device_spec;

tide_status tide_device_spec_parse(const char *text, tide_device_spec *out, tide_error *err);
/* Does the full device name satisfy the partial spec? */
bool tide_device_spec_matches(const tide_device_spec *spec, const tide_device_spec *full);
/* Canonical text of a spec (only its set parts). Returns buf. */
char *tide_device_spec_format(const tide_device_spec *spec, char *buf, size_t size);
/* A device name as tide shows it to people: the local job's prefix (/job:localhost/replica:0/task:0)
 * and every "device:" part dropped, "/job:localhost/replica:0/task:0/device:cpu:1" -> "/cpu:1";
 * another job keeps its parts, "/job:worker/replica:0/task:3/device:gpu:0" ->
 * "/job:worker/replica:0/task:3/gpu:0". full NULL or "" gives "". Writes at most size bytes to buf
 * (cut short, NUL-terminated) and returns buf. The views, the run log's queries (SQL short_device())
 * and the REPL all use it. */
char *tide_device_short_name(const char *full, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
