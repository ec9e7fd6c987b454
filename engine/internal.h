/* internal.h — structures shared by the engine's own files. Nothing outside engine/ includes this.
 *
 * Map of the engine (one concept per file):
 *   error.c dtype.c shape.c attrs.c         value types
 *   tensor.c tensor_format.c tensor_cast.c  reference-counted tensors over shared buffers
 *   op_spec.c registry.c                    op definitions parsed from spec strings; kernels
 *   bind.c                                  checking a node's inputs/attrs against its op
 *   graph.c node_builder.c graph_text.c     the graph, building nodes, the text format
 *   shape_fold.c                            values known at graph time (Rank, Shape, Range) for shapes
 *   device.c device_registry.c              device names; device types and enumeration at engine start
 *   device_cpu.c device_sim.c               the CPU device; the simulated accelerator (not host-visible)
 *   device_alloc.c device_stream.c          caching allocators of device memory; streams and events
 *   device_copy.c                           copies between memory spaces (transfers, fetches, observers)
 *   engine.c variable.c                     the engine, containers of variables
 *   kernel_ctx.c eager.c                    the context kernels run in; running one op eagerly
 *   plan.c executor.c threadpool.c          pruned plans per signature; running them in parallel
 *   session.c                               sessions: plan cache, Run, cancellation
 *   observers.c                             observers: the runs' snapshots, removal that waits
 */
#ifndef TIDE_INTERNAL_H
#define TIDE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "tide.h"
#include "tide_debug.h"
#include "tide_device.h"
#include "tide_op.h"

#define TIDE_UNUSED(x) ((void)(x))

/* ---------------------------------------------------------------- errors */

/* Appends "prefix: " before the current message of err (used to name nodes). */
void tide__error_prefix(tide_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
tide_status tide__error_vset(tide_error *err, tide_status code, const char *fmt, va_list ap);
/* Copies src's code and message into dst. */
void tide__error_copy(tide_error *dst, const tide_error *src);
char *tide__strdup(const char *s);
char *tide__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t tide__now_ns(void);

/* ---------------------------------------------------------------- shapes */

/* The most specific shape that both a and b satisfy: dimensions that differ become unknown, and a
 * rank that differs makes the rank unknown (a Merge's output, a loop variable across iterations). */
tide_shape tide__shape_relax(const tide_shape *a, const tide_shape *b);

/* ---------------------------------------------------------------- tensors */

typedef struct tide_buffer {
    atomic_int refs;
    void *data;
    size_t size;
    tide_dtype dtype;
    int64_t num_strings;       /* TIDE_STRING: elements whose data this buffer frees */
    tide_deallocator dealloc;  /* NULL: tide's own allocation */
    void *dealloc_arg;
    void *block;               /* non-NULL: buffer lives inside this malloc'd tensor block */
    struct tide_device *device; /* the device whose memory accounting holds size, or NULL */
    /* NULL: host memory (tide's allocator, or wrapped). Else device memory of this buffer type, from
     * `device`'s caching allocator, freed there; not host-visible types refuse host access. */
    const tide_buffer_type *type;
    struct tide_step_memory *step_memory; /* the step whose kernel allocated it, or NULL (step_memory.h) */
} tide_buffer;

struct tide_tensor {
    atomic_int refs;
    tide_dtype dtype;
    tide_shape shape;
    int64_t num_elements;
    tide_buffer *buf;
    size_t offset;             /* bytes into buf->data */
};

/* The value of a dead edge (engine/frames.c): a tensor that is never freed and never reaches users. */
extern tide_tensor *const tide__dead;

/* Can the calling thread touch b's bytes (host memory, or device memory of a host-visible type, or
 * the memory of the device whose work this thread is doing)? */
bool tide__buffer_accessible(const tide_buffer *b);
/* A tensor over `bytes` of device memory at data, of buffer type bt, owned by device d's allocator
 * (freed there with the last view); NULL with err (and data freed) on failure. */
tide_tensor *tide__tensor_over_device_memory(struct tide_device *d, const tide_buffer_type *bt, void *data,
                                             size_t bytes, tide_dtype dt, const tide_shape *shape, tide_error *err);
/* A tensor over t's device memory that neither owns nor accounts it (the simulated device's queued
 * kernels read and write through these, as a GPU kernel through raw pointers: the memory may be freed
 * and reused in stream order meanwhile). Never written in place by a kernel (not exclusive). */
tide_tensor *tide__tensor_borrowed_view(const tide_tensor *t);
/* The message for a host access to device memory that was refused ("the float32 tensor [2, 3] lives in
 * the memory of /sim:0, which the host cannot read: ..."), into err; returns TIDE_FAILED_PRECONDITION. */
tide_status tide__refuse_host_access(const tide_tensor *t, tide_error *err);
struct tide_device_span;
/* t in host memory for an observer: a copy made by its device (waits for it), or NULL after printing
 * why on stderr (naming node). For tensors the host cannot read. span (NULL: untimed) receives the
 * copy's stream and times, as a traced _Recv's does (tide__tensor_copy_to_device_timed). */
tide_tensor *tide__tensor_for_host(const tide_tensor *t, const struct tide_node *node, struct tide_device_span *span);
/* A tensor header over buf (retained) at offset. */
tide_tensor *tide__tensor_view(tide_buffer *buf, size_t offset, tide_dtype dt,
                               const tide_shape *shape, tide_error *err);
/* Allocates without zeroing numbers (strings are still emptied). */
tide_tensor *tide__tensor_alloc(tide_dtype dt, const tide_shape *shape, bool zero, tide_error *err);

/* ---------------------------------------------------------------- attrs */

typedef struct tide_attr_value {
    tide_attr_type type;
    union {
        int64_t i;
        double f;
        bool b;
        char *s;
        tide_dtype t;
        tide_shape shape;
        tide_tensor *tensor;
        struct {
            void *items;
            int n;
        } list;
    } u;
} tide_attr_value;

typedef struct tide_attr_entry {
    char *name;
    tide_attr_value value;
} tide_attr_entry;

struct tide_attrs {
    int count, cap;
    tide_attr_entry *items;
};

const tide_attr_value *tide__attrs_find(const tide_attrs *a, const char *name);
void tide__attrs_set_value(tide_attrs *a, const char *name, const tide_attr_value *v); /* copies */
void tide__attr_value_clear(tide_attr_value *v);
void tide__attr_value_copy(tide_attr_value *dst, const tide_attr_value *src);
/* The list kinds (list(int) ... list(tensor)), whose value is u.list. */
bool tide__attr_type_is_list(tide_attr_type t);
const char *tide__attr_type_name(tide_attr_type t);
/* Same names with bit-for-bit equal values (order does not matter). */
bool tide__attrs_equal(const tide_attrs *a, const tide_attrs *b);

/* ---------------------------------------------------------------- op definitions and registry */

typedef struct tide_arg_def {
    char *name;
    tide_dtype fixed_dtype;    /* TIDE_INVALID_DTYPE if given by type_attr */
    char *type_attr;           /* "T" or NULL */
    char *number_attr;         /* "N" for "N * T" lists, else NULL; for a type list, type_attr's name */
    bool type_list;            /* "components: Tcomponents" with Tcomponents: list(type): a list of inputs
                                  (or outputs) whose dtypes, and so length, the attr gives */
    bool is_ref;
} tide_arg_def;

typedef struct tide_attr_def {
    char *name;
    tide_attr_type type;
    uint32_t allowed_dtypes;   /* bit per dtype for type attrs; 0 = any */
    bool has_min;
    int64_t min;
    bool has_default;
    tide_attr_value default_value;
} tide_attr_def;

typedef struct tide_kernel_def {
    tide_kernel_spec spec;
    char *op_name;
    char *device_type;
    struct {
        char *attr;
        uint32_t allowed;
    } constraints[4];
    int num_constraints;
    const struct tide_kernel_def *wraps; /* a device type's adapter of this CPU kernel (device_sim.c), or NULL */
    struct tide_kernel_def *next;
} tide_kernel_def;

typedef struct tide_op_def {
    char *name;
    int num_inputs, num_outputs, num_attrs;
    tide_arg_def inputs[TIDE_OP_MAX_ARGS];
    tide_arg_def outputs[TIDE_OP_MAX_ARGS];
    tide_attr_def attrs[TIDE_OP_MAX_ATTRS];
    unsigned flags;
    tide_shape_fn shape_fn;
    char *doc;
    char *tf_differences;      /* NULL: none */
    char *alias;               /* NULL: none */
    char *spec_text;           /* "MatMul(a: T, b: T) -> product: T" for help */
    char *attr_text;           /* "T: {float32, ...}; transpose_a: bool = false" */
    tide_kernel_def *kernels;  /* every device type */
} tide_op_def;

/* Parses a spec into def (0 on success, else fills err). */
tide_status tide__op_def_parse(const tide_op_spec *spec, tide_op_def *def, tide_error *err);
void tide__op_def_clear(tide_op_def *def);
const tide_attr_def *tide__op_attr_def(const tide_op_def *def, const char *name);
/* Parses "{float32, int32}", "numbertype"... into a dtype bitmask; 0 on error. */
uint32_t tide__dtype_set_parse(const char *text);

/* Finalises registration once (attaches kernels, records errors); TIDE_OK if the registry is sane. */
tide_status tide__registry_ready(tide_error *err);
const tide_op_def *tide__registry_find(const char *op);
/* Nearest registered op names to a misspelt one, as ", did you mean X?" or "" (static buffer-free:
 * writes into buf). */
const char *tide__registry_suggest(const char *op, char *buf, size_t size);
/* The first kernel of op for device_type that accepts the bound attrs, or NULL. */
const tide_kernel_def *tide__registry_kernel(const tide_op_def *op, const char *device_type,
                                             const tide_attrs *bound);
/* Whether input i (flattened) of node is one kernel k reads in host memory, on a device whose memory the
 * host cannot read (elsewhere every input is in host memory anyway): an argument its spec's host_inputs
 * names, or one of the small arguments host_inputs.c lists for accelerators' kernels. */
bool tide__kernel_host_input(const tide_kernel_def *k, const struct tide_device *device, const tide_node *node, int i);

/* ---------------------------------------------------------------- binding a node to its op */

/* An arena: many small allocations freed together (arena.c). Its storage is not zeroed; an allocation
 * is NULL when out of memory, and the arena stays usable and freeable. Start from {NULL}. */
typedef struct tide_arena {
    struct tide_arena_chunk *chunk; /* the newest */
} tide_arena;
void *tide__arena_alloc(tide_arena *a, size_t size);
char *tide__arena_strndup(tide_arena *a, const char *s, size_t n);
void tide__arena_free(tide_arena *a);

/* What binding found: each op input arg covers inputs [arg_start[i], arg_start[i+1]). */
typedef struct tide_binding {
    int arg_start[TIDE_OP_MAX_ARGS + 1];
    int num_outputs;
    tide_dtype *output_dtypes; /* num_outputs: inline_dtypes when they fit, else malloc'd */
    tide_dtype inline_dtypes[8];
} tide_binding;

/* Checks input dtypes against def (group_sizes[g] inputs per op input arg; NULL: infer), infers
 * type/number attrs into attrs, fills defaults, checks every attr, computes output dtypes.
 * `who` names the node for messages ("node 'x' (Add)"). */
tide_status tide__bind(const tide_op_def *def, const char *who, const tide_dtype *in_dtypes,
                       int num_inputs, const int *group_sizes, int num_groups, tide_attrs *attrs,
                       tide_binding *out, tide_error *err);
void tide__binding_clear(tide_binding *b);

/* Runs def's shape function. in_values[i] may be NULL. out_shapes has b->num_outputs entries. */
tide_status tide__infer_shapes(const tide_op_def *def, const char *who, const tide_attrs *attrs,
                               const tide_shape *in_shapes, const tide_dtype *in_dtypes,
                               const tide_tensor *const *in_values, int num_inputs,
                               int num_outputs, tide_shape *out_shapes, tide_error *err);

/* ---------------------------------------------------------------- graph */

struct tide_node {
    int id;
    uint64_t serial;                 /* tide_node_serial: unique in the process, never reused */
    char *name;
    struct tide_graph *graph;
    const tide_op_def *op;
    tide_attrs *attrs;
    int num_inputs;
    tide_output *inputs;
    int arg_start[TIDE_OP_MAX_ARGS + 1];
    int num_control;
    tide_node **control;
    int num_outputs;
    tide_dtype *out_dtypes;
    tide_shape *out_shapes;
    char *requested_device;          /* "" if none */
    _Atomic(const char *) assigned_device;
    atomic_bool used_by_plan;
    atomic_bool placement_fixed;     /* a Variable's device, chosen once, is kept (placement.c) */
    bool cf_hoisted;                 /* a Const built while a cond or loop was being built, but outside it:
                                        readers inside bring it in like any outside value (control_flow.c) */
    tide_tensor *folded_value;       /* output 0's value known at graph time, or NULL (shape_fold.c) */
    size_t block_size;               /* bytes of the allocation the node heads, which holds its arrays and
                                        strings (node_builder.c); 0 when each is allocated on its own */
};

struct tide_graph {
    atomic_int refs;                 /* the creator's hold (tide_graph_free) and one per session */
    pthread_mutex_t lock;            /* guards growth against concurrent plan building */
    int num_nodes, cap;
    tide_node **nodes;
    struct tide_name_table *names;   /* name -> node */
    uint64_t version;
    int64_t seed;
    bool compress_transfers;         /* tide_graph_set_compress_transfers */
    char **scopes;                   /* stack */
    int num_scopes, cap_scopes;
    char **devices;                  /* stack of default devices */
    int num_devices, cap_devices;
    struct name_counters *counters;  /* base name -> next suffix, for unique names */
    struct tide_cf_context *cf_context; /* innermost cond branch or loop being built (control_flow.c) */
};

/* A cond branch or a loop being built (tide_cond, tide_while_loop): while it is the graph's context,
 * every node built reads values from outside through it (control_flow.c). Contexts nest as the calls
 * do and live only while their builder runs. */
typedef enum tide_cf_kind { TIDE_CF_COND = 0, TIDE_CF_WHILE = 1 } tide_cf_kind;

typedef struct tide_cf_capture {
    tide_output outside, inside;
} tide_cf_capture;

typedef struct tide_cf_context {
    tide_cf_kind kind;
    struct tide_cf_context *parent;
    int first_id;                    /* nodes with this id or more were built inside */
    tide_node *pivot;                /* a node without inputs built inside gets a control input from it */
    const char *name;                /* the cond's or loop's scope, for messages */
    const char *frame;               /* TIDE_CF_WHILE: the frame name */
    int parallel_iterations;         /* TIDE_CF_WHILE */
    tide_output pred;                /* TIDE_CF_COND: the condition */
    int branch;                      /* TIDE_CF_COND: 1 for the true branch, 0 for the false one */
    tide_cf_capture *captures;       /* values from outside, each brought in once */
    int num_captures, cap_captures;
    struct grad_loop *grad;          /* a gradient loop: the forward loop's values come from stacks */
} tide_cf_context;

/* Applies the graph's current context to a node being built (tide_node_builder_finish): every input
 * that is not a Ref (by the op's binding, arg_start) and comes from outside is replaced by the value
 * brought in (an Enter or a Switch, made once per value and context); a node without inputs gets a
 * control input from the pivot; a control input from outside a loop is an error naming both nodes. */
tide_status tide__cf_capture_inputs(tide_graph *g, const tide_op_def *def, const int *arg_start, const char *who,
                                    tide_output *inputs, int num_inputs, tide_error *err);
/* `in` as seen inside the graph's current context (itself when built there or with no context). On
 * failure in.node is NULL and err says why. */
tide_output tide__cf_capture(tide_graph *g, tide_output in, tide_error *err);

/* tide_while_loop whose context is a gradient loop (grads/while_grad.c: forward values from stacks). */
tide_status tide__while_loop(tide_graph *g, tide_loop_cond_fn cond, tide_loop_body_fn body, void *user,
                             const tide_output *loop_vars, int n, const tide_while_options *opts, tide_output *results,
                             struct grad_loop *grad, tide_error *err);

/* What the cond and while_loop builders change on a graph besides nodes; restore puts it all back and
 * removes the nodes made since the mark. */
typedef struct graph_mark {
    int num_nodes, num_scopes, num_devices;
    tide_cf_context *context;
} graph_mark;
graph_mark tide__graph_mark(const tide_graph *g);
void tide__graph_restore(tide_graph *g, graph_mark m);
/* A scope name under the current one that no node uses yet: "while", "while_1"... (the last part;
 * malloc'd). */
char *tide__unique_scope(tide_graph *g, const char *base);
/* One node of op over inputs, no attrs (NULL with err on failure). */
tide_node *tide__cf_op(tide_graph *g, const char *op, const char *name, const tide_output *inputs, int n,
                       tide_error *err);
/* Checks a node's control inputs against the context being built (none from outside a loop); *tie
 * receives the node it must wait for besides, when it has no input from inside (NULL when none). */
tide_status tide__cf_check_controls(tide_graph *g, const char *who, int num_inputs, tide_node *const *control,
                                    int num_control, tide_node **tie, tide_error *err);

/* Whether input i of n is a Ref input: it names a variable, not a value, so it makes no edge (the
 * kernel finds the variable through ref_sources): an Assign does not wait for a read of it. */
bool tide__input_is_ref(const tide_node *n, int i);
/* Is name a valid node name (letters, digits, _ - . and / between scopes)? */
tide_status tide__check_node_name(const char *name, tide_error *err);
/* The value of a Const node (borrowed from its attrs), else NULL: what shape functions may read. */
/* The value of n's output 0 known at graph time: a Const's, or one shape_fold.c computed (borrowed;
 * NULL when unknown). Shape functions see it through tide_shape_input_value. */
const tide_tensor *tide__node_const_value(const tide_node *n);
/* The value of a new node's output 0 when graph time can know it (shape_fold.c: Rank, Shape, Size of
 * known shapes, Range of known scalars); a new tensor, or NULL. */
tide_tensor *tide__fold_value(const tide_op_def *op, const tide_attrs *attrs, const tide_shape *in_shapes,
                              const tide_tensor *const *in_values, int num_inputs, const tide_shape *out_shape);
/* Makes room for one more node (so that insertion cannot fail). */
bool tide__graph_reserve(tide_graph *g);
const char *tide__graph_default_device(const tide_graph *g);
/* Adds a finished node (name checked free by caller); takes ownership. */
void tide__graph_insert(tide_graph *g, tide_node *n);
void tide__node_free(tide_node *n);
/* Frees piece, one of n's arrays or strings, unless it lies in n's own block (block_size): for a field
 * replaced after the node was built. */
void tide__node_free_piece(const tide_node *n, void *piece);
/* A session's hold on its graph: retain when it is made, release when it is freed (the last release
 * of the graph, its creator's tide_graph_free included, destroys it). */
void tide__graph_retain(tide_graph *g);
void tide__graph_release(tide_graph *g);
/* The current scope prefix ("" or "a/b/"). malloc'd. */
char *tide__graph_scope_prefix(const tide_graph *g);
/* tide_graph_extend_text, with messages that say "SOURCE line N" (source: "graph text", a path). */
tide_status tide__graph_extend_text_from(tide_graph *g, const char *text, const char *source, tide_error *err);

/* name -> pointer hash table (open addressing) */
typedef struct tide_name_table tide_name_table;
tide_name_table *tide__names_new(void);
void tide__names_free(tide_name_table *t);
void *tide__names_get(const tide_name_table *t, const char *name);
void tide__names_put(tide_name_table *t, const char *name, void *value); /* name borrowed */
void tide__names_remove(tide_name_table *t, const char *name);

/* ---------------------------------------------------------------- devices */

/* The device interface is engine/tide_device.h (tables per device type, streams, events, copies). */
extern const tide_device_ops tide__cpu_device_ops;
extern const tide_device_ops tide__sim_device_ops;

/* Accounting of a device's memory: a buffer allocated for it adds its size; releasing the buffer
 * subtracts it (tensor.c). bytes_in_use and peak_bytes are read by tide_engine_device_memory. */
void tide__device_account(struct tide_device *d, int64_t bytes);
/* A kernel of the step queued work on d that may still run after it returned (a device whose compute
 * returns once the work is queued): the step synchronises d once before it ends. step may be NULL. */
struct tide_step;
void tide__step_queued_on(struct tide_step *step, struct tide_device *d);
/* Fails the step (the first failure wins); callable from any thread (executor.c). */
void tide__step_fail(struct tide_step *step, tide_status code, const tide_error *err, const char *msg);
/* Counts a wait of the host for device d (tide_device_host_waits). */
void tide__device_count_host_wait(struct tide_device *d);

struct tide_caching_allocator;

struct tide_stream {
    struct tide_device *device;
    void *context;                   /* the device type's stream; NULL for a type without streams */
};

struct tide_event {
    struct tide_device *device;
    void *context;
};

struct tide_device {
    const tide_device_ops *ops;
    char name[128];                  /* full name */
    tide_device_spec spec;
    char type[16];                   /* "cpu" */
    int index;                       /* position in the engine's device list */
    int ordinal;                     /* among the devices of its type: N of /sim:N */
    bool host_visible;               /* ops->buffer_types[0] is host-visible: kernels write host memory */
    atomic_llong bytes_in_use, peak_bytes;
    /* The device's own share of the engine's threads when the engine has several CPU devices (its items
     * and their kernels' parallel loops run only there); NULL with one CPU device (the engine's pool)
     * and for other types (the executor's side of their work runs on the engine's pool). */
    struct tide_threadpool *pool;
    struct tide_caching_allocator *allocator; /* device memory (NULL when host-visible: tensor.c's cache) */
    int64_t memory_limit;            /* bytes (0: none) */
    tide_stream *streams[4];         /* by tide_stream_role; NULL for a type without streams */
    tide_event *compute_done;        /* recorded on the compute stream before copies out of the device */
    pthread_mutex_t event_lock;      /* serialises uses of compute_done */
    atomic_llong host_waits;         /* times the host waited for the device (tide_device_host_waits) */
    void *context;                   /* the type's own state (open/close) */
    bool opened;
};

/* The engine's devices, enumerated from the registered device types (device_registry.c): fills
 * e->devices and e->num_devices (the CPU devices first, /cpu:0 is the host), opens each. */
tide_status tide__devices_open(tide_engine *e, const tide_engine_options *resolved, tide_error *err);
/* Closes and frees them (after every tensor of theirs that the engine held was released; an allocator
 * with blocks still in use stays until its last block is freed). */
void tide__devices_close(tide_engine *e);
/* The kernels of device types that run the CPU's kernels on their own threads (the simulated
 * device): called once when the registry is finalised, with every op. */
void tide__sim_add_kernels(tide_op_def **ops, int num_ops);

/* Caching allocator of one device's memory (device_alloc.c). */
struct tide_caching_allocator *tide__allocator_new(struct tide_device *d, const tide_buffer_type *bt, int64_t limit);
/* Frees the cache; the allocator itself goes once no block is in use (tensors outliving the engine). */
void tide__allocator_close(struct tide_caching_allocator *a);
/* A block of at least `bytes` (NULL with err naming the device and the sizes when over the limit or
 * out of memory). compute_ordered: for work launched on the device's compute stream from now on (a
 * kernel's outputs and temporaries), which may reuse a block freed while queued work still reads it;
 * else (a copy stream's destination, the host) only blocks whose free the compute stream has passed. */
void *tide__allocator_alloc(struct tide_caching_allocator *a, size_t bytes, bool compute_ordered, tide_error *err);
/* Frees a block, ordered on the device's compute stream (device_alloc.c: stream-ordered reuse). */
void tide__allocator_free(struct tide_caching_allocator *a, void *p, size_t bytes);
/* Around a synchronisation of the device's compute stream (tide_device_synchronize...): begin before
 * it starts, synchronized(what begin returned) once it ended; every block freed before is then safe
 * for every stream and the host. */
uint64_t tide__allocator_begin_sync(struct tide_caching_allocator *a);
void tide__allocator_synchronized(struct tide_caching_allocator *a, uint64_t upto);
/* tide_device_tensor_alloc with the allocator's compute_ordered (above): copies allocate their
 * destinations with false. */
tide_tensor *tide__device_tensor_alloc_for(struct tide_device *d, tide_dtype dt, const tide_shape *shape,
                                          bool compute_ordered, tide_error *err);
void tide__allocator_stats(struct tide_caching_allocator *a, tide_device_memory_stats *out);
/* Returns the cached blocks to the device (tide_engine_empty_cache). */
void tide__allocator_empty_cache(struct tide_caching_allocator *a);

/* ---------------------------------------------------------------- variables and containers */

struct tide_variable {
    atomic_int refs;
    pthread_mutex_t lock;
    char *name;
    tide_dtype dtype;   /* the declaration of the node that created or last assigned it (written */
    tide_shape shape;   /* under the engine's containers_lock and the variable's lock) */
    tide_tensor *value;
};

void tide__variable_release(tide_variable *v);

struct tide_resource;
/* A resource other than a variable that a container holds (a queue, a reader): reference counted,
 * typed by its kind (resources.c). Its struct starts with this header. */
typedef struct tide_resource_kind {
    const char *name;                /* "queue", for messages */
    void (*destroy)(struct tide_resource *r);   /* the last reference went */
    /* Its container was reset (or the engine freed) while others may still hold it: wake whoever
     * waits on it (a queue closes and cancels its pending enqueues). May be NULL. */
    void (*removed)(struct tide_resource *r);
} tide_resource_kind;

typedef struct tide_resource {
    atomic_int refs;
    const tide_resource_kind *kind;
    char *name;                      /* its name in the container */
    char *container;
} tide_resource;

typedef struct tide_container {
    char *name;
    tide_name_table *vars;           /* shared_name -> tide_variable* */
    char **keys;                     /* for iteration and freeing */
    int count, cap;
    tide_name_table *resources;      /* name -> tide_resource* (NULL until the first) */
    char **resource_keys;
    int num_resources, cap_resources;
    struct tide_container *next;
} tide_container;

/* The resource `name` of a container: found (it must be of `kind`, else FAILED_PRECONDITION naming
 * both kinds), or made by make(arg, err) when missing and make is not NULL (NOT_FOUND otherwise).
 * make returns a resource with refs 1 and kind set (name and container NULL: the container fills them),
 * called under the containers' lock (it must not call back into containers). Returns
 * a new reference (tide__resource_release) or NULL with err. */
tide_resource *tide__engine_resource(tide_engine *e, const char *container, const char *name,
                                     const tide_resource_kind *kind,
                                     tide_resource *(*make)(void *arg, tide_error *err), void *arg,
                                     tide_error *err);
tide_resource *tide__resource_retain(tide_resource *r);
void tide__resource_release(tide_resource *r);
/* The container of that name, made when missing and create (NULL: absent, or out of memory). Call
 * with the engine's containers_lock held. */
tide_container *tide__find_container(tide_engine *e, const char *name, bool create);
/* container_free's part: tells every resource it was removed, then drops the container's references. */
void tide__container_free_resources(tide_container *c);

/* Looks up or creates (when create) a variable; returns a new reference or NULL with err. */
/* The variable `name` of a container, created when missing and `create`. A node that declares
 * another dtype than the variable's fails (its value may be read as the wrong type), unless
 * `redeclare`: a kernel that replaces the whole value (Assign) makes the variable take its node's
 * declaration (dtype and shape). The caller holds a reference (tide__variable_release). */
tide_variable *tide__engine_variable(tide_engine *e, const char *container, const char *name,
                                     tide_dtype dt, const tide_shape *shape, bool create,
                                     bool redeclare, tide_error *err);

/* ---------------------------------------------------------------- engine */

typedef struct tide_threadpool tide_threadpool;
tide_threadpool *tide__pool_new(int threads);
void tide__pool_free(tide_threadpool *p);
/* Queues fn(arg) on a pool thread. */
void tide__pool_submit(tide_threadpool *p, void (*fn)(void *arg), void *arg);
/* Runs one queued task on the calling thread, if there is one (a waiting caller helps the pool). */
bool tide__pool_run_pending(tide_threadpool *p);
int tide__pool_size(const tide_threadpool *p);
int tide__pool_idle(const tide_threadpool *p);
/* The calling thread's pool index, -1 for a thread not of the pool. */
int tide__pool_thread_index(void);
/* The pool the calling thread belongs to, NULL for a thread of none. */
tide_threadpool *tide__pool_current(void);
/* Runs fn over [0, n) in chunks on the pool and the caller; blocks until done. */
void tide__pool_parallel_for(tide_threadpool *p, int64_t n, int64_t min_chunk,
                             void (*fn)(int64_t begin, int64_t end, void *arg), void *arg);

/* An observer as the engine's list and the runs' snapshots hold it (observers.c). */
typedef struct tide_observer_entry tide_observer_entry;
typedef struct tide_observer_slot {
    int id;
    tide_observer obs;
    tide_observer_entry *entry; /* shared, reference counted: counts the callbacks in flight */
} tide_observer_slot;

/* A run's copy of the engine's observers (*slots NULL, *num 0 when there are none); release it when
 * the run ends. */
void tide__observers_snapshot(tide_engine *e, tide_observer_slot **slots, int *num);
void tide__observers_release(tide_observer_slot *slots, int num);
/* Every callback of a snapshot's observer is made between enter and leave; enter returns false (make
 * no call) once the observer was removed. TIDE__OBSERVE(slot, callback, args...) does both. */
bool tide__observer_enter(const tide_observer_slot *slot);
void tide__observer_leave(const tide_observer_slot *slot);
#define TIDE__OBSERVE(slot, callback, ...)                                          \
    do {                                                                             \
        const tide_observer_slot *observe_slot_ = (slot);                            \
        if (observe_slot_->obs.callback && tide__observer_enter(observe_slot_)) {    \
            observe_slot_->obs.callback(observe_slot_->obs.user, __VA_ARGS__);      \
            tide__observer_leave(observe_slot_);                                     \
        }                                                                            \
    } while (0)
/* Drops the engine's observers (tide_engine_free). */
void tide__observers_free(tide_engine *e);
/* The entries themselves (observers.c), which the debugger shares: new (refcount 1), retain, release;
 * retire marks one removed and waits until no call of it runs but the caller's own; enter/leave
 * bracket one call (enter false: removed, make no call). */
tide_observer_entry *tide__entry_new(void);
void tide__entry_retain(tide_observer_entry *entry);
void tide__entry_release(tide_observer_entry *entry);
void tide__entry_retire(tide_observer_entry *entry);
bool tide__entry_enter(tide_observer_entry *entry);
void tide__entry_leave(tide_observer_entry *entry);

/* The debugger attached to an engine, as the engine holds it and each run's snapshot copies it
 * (debug.c; entry NULL: none). */
typedef struct tide_debugger_slot {
    int id;
    tide_debugger d;
    tide_observer_entry *entry;
} tide_debugger_slot;

/* A run's copy of the engine's debugger (slot->entry NULL when none); release it when the run ends. */
void tide__debugger_snapshot(tide_engine *e, tide_debugger_slot *slot);
void tide__debugger_release(tide_debugger_slot *slot);

struct tide_engine {
    tide_threadpool *pool;
    int num_devices;
    tide_device *devices;
    pthread_mutex_t containers_lock;
    tide_container *containers;
    pthread_mutex_t observers_lock;
    tide_observer_slot *observers;   /* copy-on-write array, readers take a snapshot */
    int num_observers, next_observer_id;
    atomic_int observers_version;
    tide_debugger_slot debugger;     /* under observers_lock; entry NULL when none attached */
    int next_debugger_id;
    atomic_int debugger_version;     /* bumped when it changes: plans ask `watches` again */
    atomic_int live_sessions;
    struct tide_rendezvous *rendezvous; /* where _Send and _Recv of cross-device edges meet (rendezvous.h) */
    struct tide_cost_table *cost_table; /* measured node times for placement (placement.h) */
    int num_cpu_devices;                /* devices[0..num_cpu_devices) are the CPU's; /cpu:0 is the host */
    tide_placement_kind placement;      /* the strategy of every plan */
    bool cse, alap, compress_transfers, fusion; /* plan passes (tide_engine_options: no_cse, no_alap, ...) */
    bool capture;                    /* whole-step capture allowed (no_capture, $TIDE_CAPTURE: step_capture.c) */
    _Atomic(struct tide_watcher *) watcher; /* wakes waiting kernels of cancelled or late runs (cancel.h) */
};

/* ---------------------------------------------------------------- kernels in a node's context */

/* What a kernel needs about its node, prepared once per plan (or per eager call). */
typedef struct tide_kernel_node {
    const char *name;
    const tide_op_def *op;
    const tide_node *node;           /* NULL for eager calls */
    const tide_attrs *attrs;
    const tide_kernel_def *kernel;
    void *state;
    int num_inputs, num_outputs;
    tide_dtype *in_dtypes, *out_dtypes;
    tide_engine *engine;
    tide_device *device;
    int64_t graph_seed;
    const tide_node **ref_sources;   /* per input: the Variable node behind a Ref input, or NULL */
} tide_kernel_node;

struct tide_exec_item;
struct tide_step;

struct tide_kernel_ctx {
    const tide_kernel_node *kn;
    tide_tensor **inputs;
    tide_tensor **outputs;           /* owned references, NULL until set */
    tide_status status;
    tide_error *err;                 /* created on first failure */
    struct tide_step *step;          /* NULL when eager or in init */
    struct tide_exec_item *item;     /* for asynchronous completion */
    struct tide_iter *iter;          /* the frame iteration it computes in (frames.c); NULL outside a step */
    tide_variable *held[4];          /* variables to release after compute */
    int num_held;
    bool in_init;
    /* Outputs allocated before the kernel ran (the simulated device's queued kernels, device_sim.c):
     * tide_kernel_alloc_output hands out preset[i] when dtype and shape fit. NULL: none. */
    tide_tensor *const *preset;
    /* A traced step's record of where and when a queued kernel ran on its device (NULL: not traced,
     * or inside a loop): the device sets stream when it queues the kernel, start_ns/end_ns from its
     * own clock once it ran; the step reads them after it waited for the device. */
    struct tide_device_span *span;
};

typedef struct tide_device_span {
    const char *stream;              /* the lane: "compute", or a copy's ("copy h2d", "copy d2h", "copy d2d") */
    const char *device;              /* the full name of the device whose stream it is; NULL: the node's */
    int64_t start_ns, end_ns;        /* CLOCK_MONOTONIC; 0 when it did not run */
} tide_device_span;

/* tide_tensor_copy_to_device_async for a traced _Recv (device_copy.c): when span is not NULL and the copy
 * runs on a stream, span says which (stream, device) and when the stream ran it: from a host function
 * launched on the stream just before the copy to the copy's completion (for a copy between device types,
 * through host memory, the first hop's stream and both hops' time). */
void tide__tensor_copy_to_device_timed(const tide_tensor *src, tide_device *dst, tide_device_span *span,
                                       tide_copy_done done, void *arg);

/* Prepares kn (kernel lookup already done); runs the kernel's init. */
tide_status tide__kernel_node_init(tide_kernel_node *kn, tide_error *err);
void tide__kernel_node_clear(tide_kernel_node *kn);
/* What a kernel (or its device's compute) returned, or passed to tide_kernel_done: a failure it did
 * not record with tide_kernel_error is recorded now, naming the node and op. Returns ctx's status. */
tide_status tide__kernel_ctx_returned(tide_kernel_ctx *ctx, tide_status returned);
/* After compute: checks outputs are all set; releases held variables. */
tide_status tide__kernel_ctx_finish(tide_kernel_ctx *ctx);
/* Moves the ctx's error into err (prefixing is already done). */
void tide__kernel_ctx_take_error(tide_kernel_ctx *ctx, tide_error *err);
/* For _Send/_Recv: the run id of the step the kernel computes in (0 when eager), and the engine's
 * rendezvous (NULL when eager without an engine). */
uint64_t tide__kernel_step_id(const tide_kernel_ctx *ctx);
struct tide_rendezvous *tide__kernel_rendezvous(const tide_kernel_ctx *ctx);
/* A tensor that is not an output, on the kernel's device (its memory counts there); NULL with the
 * error recorded. The caller releases it. */
tide_tensor *tide__kernel_alloc_temp(tide_kernel_ctx *ctx, tide_dtype dt, const tide_shape *shape);
/* Async completion hook, implemented by the executor. */
void tide__exec_async_done(struct tide_exec_item *item, struct tide_step *step, tide_kernel_ctx *ctx,
                           tide_status status);
bool tide__step_cancelled(struct tide_step *step);
/* Inside a loop: the frame instance ("while:0/inner:3", borrowed for the kernel's run) and the
 * iteration (*iteration) the kernel computes in; "" and 0 outside loops and eagerly. */
const char *tide__kernel_frame(const tide_kernel_ctx *ctx, int64_t *iteration);
/* The run id of a step (tide_run_info.run_id): the rendezvous's step key. */
uint64_t tide__step_run_id(struct tide_step *step);

#endif
