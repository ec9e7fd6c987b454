/* tide_op.h — the API for writing ops and kernels: op definitions (with shape functions), kernel
 * registration per (op, device type, dtypes), and the context a kernel computes in.
 *
 * An op is DEFINED once (engine/ops/<family>.c): its inputs, outputs, attributes with type
 * constraints and defaults, whether it is stateful, its shape function and a doc line. A KERNEL
 * implements an op for one device type and a set of dtypes (kernels/cpu/<family>.c). Both register
 * themselves at load time through TIDE_REGISTER, so the engine never includes a kernel header.
 *
 * Spec strings (parsed at registration; a bad spec fails tide_engine_new with its message):
 *   input/output:  "x: T"          a tensor whose dtype is the type attr T
 *                  "x: float32"    a fixed dtype
 *                  "values: N * T" a list of N tensors of dtype T (N an int attr)
 *                  "ref: Ref(T)"   must come from a Variable node: the kernel gets the variable
 *   attr:          "T: type"  "T: {float32, float64, int32}"  "T: numbertype" (all but bool and
 *                  string) "T: realnumbertype" (no complex) "T: alltypes"
 *                  "N: int >= 1"  "transpose_a: bool = false"  "axis: int = 0"  "alpha: float = 0.2"
 *                  "padding: string = 'SAME'"  "shape: shape"  "value: tensor"  "perm: list(int)"
 *                  "dtype: type = float32"  "dims: list(int) = []"  "names: list(string) = []"
 *                  (list(string), list(bool), list(shape) and list(tensor) take only [] as a default)
 *   An attr with no default is required unless it is a type attr inferred from an input's dtype or
 *   an int attr inferred from a list input's length.
 *
 * Kernel failures: return tide_kernel_error(ctx, CODE, "fmt", ...) — the message is prefixed with
 * the node name and op, so say what is wrong with the values: "incompatible shapes [2,3] and [4]".
 */
#ifndef TIDE_OP_H
#define TIDE_OP_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_OP_MAX_ARGS 12
#define TIDE_OP_MAX_ATTRS 12

/* ---------------------------------------------------------------- load-time registration */

/* TIDE_REGISTER(fn) runs `static void fn(void)` when the library loads. */
#define TIDE_REGISTER(fn)                                                                   \
    static void fn(void);                                                                   \
    __attribute__((constructor)) static void fn##_tide_registrar(void) { fn(); }

/* ---------------------------------------------------------------- op definitions */

enum {
    TIDE_OP_STATEFUL = 1u << 0,  /* has side effects or state: never pruned by CSE, runs each step */
    TIDE_OP_COMMUTATIVE = 1u << 1,
    TIDE_OP_CONTROL_FLOW = 1u << 2, /* Switch, Merge, Enter, Exit, NextIteration, LoopCond: the executor
                                       gives them a meaning beyond their kernel; never merged by CSE */
    TIDE_OP_NOT_IN_TF = 1u << 3, /* tide's own op: TensorFlow 1.x has no op of this name */
};

typedef struct tide_shape_ctx tide_shape_ctx;
typedef tide_status (*tide_shape_fn)(tide_shape_ctx *ctx);

typedef struct tide_op_spec {
    const char *name;                       /* CamelCase, "MatMul" */
    const char *inputs[TIDE_OP_MAX_ARGS];   /* NULL-terminated (by the array's zero fill) */
    const char *outputs[TIDE_OP_MAX_ARGS];
    const char *attrs[TIDE_OP_MAX_ATTRS];
    unsigned flags;
    tide_shape_fn shape_fn;                 /* NULL: outputs of unknown shape */
    const char *doc;                        /* one paragraph; the first sentence is the summary */
    /* TensorFlow fidelity. An op is TensorFlow 1.x's op of the same name (its inputs in TF's order,
     * its attrs by TF's names, its semantics) unless flags has TIDE_OP_NOT_IN_TF. tf_differences
     * says what still differs from TF's op (dtypes covered, edge cases, attr values refused), NULL
     * for nothing; docs/ops.md and docs/tensorflow.md print it. */
    const char *tf_differences;
    /* A friendlier name that bindings also give the op (the REPL's `concat` for ConcatV2, whose
     * generated name would otherwise be the legacy Concat's), or NULL. It wins over a name generated
     * from another op's. */
    const char *alias;
} tide_op_spec;

/* Registers an op (copies what it needs). A malformed spec or a duplicate name is recorded and makes
 * tide_engine_new fail with the message. */
void tide_op_register(const tide_op_spec *spec);

/* ---------------------------------------------------------------- shape inference (graph time) */

int tide_shape_num_inputs(const tide_shape_ctx *ctx);
tide_shape tide_shape_input(const tide_shape_ctx *ctx, int i);      /* may be (partly) unknown */
tide_dtype tide_shape_input_dtype(const tide_shape_ctx *ctx, int i);
/* The value of input i when it is known at graph time (a Const), else NULL. Borrowed. */
const tide_tensor *tide_shape_input_value(const tide_shape_ctx *ctx, int i);
const tide_attrs *tide_shape_attrs(const tide_shape_ctx *ctx);      /* defaults filled in */
int tide_shape_num_outputs(const tide_shape_ctx *ctx);
void tide_shape_set_output(tide_shape_ctx *ctx, int i, const tide_shape *s);
/* Fails shape inference; the message gets the node name and op prefixed. Returns code. */
tide_status tide_shape_error(tide_shape_ctx *ctx, tide_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Ready-made shape functions. */
tide_status tide_shape_fn_unchanged(tide_shape_ctx *ctx); /* every output = input 0's shape */
tide_status tide_shape_fn_broadcast(tide_shape_ctx *ctx); /* output 0 = broadcast of inputs 0, 1 */
tide_status tide_shape_fn_scalar(tide_shape_ctx *ctx);    /* every output is a scalar */

/* NumPy broadcasting of two (partial) shapes. False if they cannot broadcast. */
bool tide_shape_broadcast(const tide_shape *a, const tide_shape *b, tide_shape *out);

/* ---------------------------------------------------------------- kernels */

enum {
    TIDE_KERNEL_EXPENSIVE = 1u << 0, /* worth a thread of its own; otherwise run inline */
    TIDE_KERNEL_ASYNC = 1u << 1,     /* uses compute_async */
    /* Runs even when an input is dead (control flow: the branch a Switch did not take). Other kernels
     * are skipped then and their outputs are dead. Such a kernel asks tide_kernel_input_is_dead. */
    TIDE_KERNEL_SEES_DEAD = 1u << 2,
    /* Must run where the host's memory is (a CPU device): its outputs are host objects that no copy
     * to another memory may carry (a loop stack's handle). Device types that run the CPU's kernels on
     * their own threads (the simulated device) leave such kernels to the CPU. */
    TIDE_KERNEL_HOST_ONLY = 1u << 3,
};

typedef struct tide_kernel_ctx tide_kernel_ctx;

/* What an element-wise kernel offers to fusion (engine/fusion.c): the loop computing its op over n
 * elements of one dtype, for plans that run a chain of such ops tile by tile in one pass. The loop
 * must be the one the kernel's compute uses, so that fused and unfused plans agree bit for bit; it
 * reads element i of every input before writing element i of its output (which may be an input).
 * Exactly one of the four loops is set: unary or binary (x, y of one length), or their variants
 * taking `param` (an attr such as LeakyRelu's alpha). `broadcast` has bit i set when input i may be
 * a scalar or a vector along the last axis (NumPy broadcasting, BiasAdd's bias) rather than of the
 * output's shape; inputs without the bit must have the output's shape (the kernel refuses others).
 * cost: nanoseconds per element, as the kernel tells parallel_for. */
typedef struct tide_elementwise {
    void (*unary)(const void *x, void *y, int64_t n);
    void (*binary)(const void *x, const void *y, void *z, int64_t n);
    void (*unary_p)(const void *x, void *y, int64_t n, double param);
    void (*binary_p)(const void *x, const void *y, void *z, int64_t n, double param);
    double param;
    double cost;
    unsigned broadcast;
} tide_elementwise;

typedef struct tide_kernel_spec {
    const char *op;
    const char *device_type;         /* "cpu", "gpu" (the type in device names; docs/devices.md) */
    /* Restricts type attrs further than the op does, e.g. "T: {float32, float64}"; up to 4 entries,
     * NULL for none. Among several kernels for one (op, device type) the first that fits wins. */
    const char *constraints[4];
    unsigned flags;
    /* Optional, once per node when a plan is made: read attrs, check them, allocate per-node state
     * in *state (freed by destroy). Only the attr, dtype and error calls of ctx are valid here. */
    tide_status (*init)(tide_kernel_ctx *ctx, void **state);
    void (*destroy)(void *state);
    /* Synchronous: computes every output, returns TIDE_OK or tide_kernel_error(...). Any other failure
     * it returns still fails the node (with a message that only names the code), as does an error
     * recorded with tide_kernel_error under a TIDE_OK return. */
    tide_status (*compute)(tide_kernel_ctx *ctx);
    /* Asynchronous (TIDE_KERNEL_ASYNC): starts the work and returns without blocking; the kernel
     * (or whatever it handed the work to) calls tide_kernel_done(ctx, status) exactly once, from any
     * thread, after which ctx must not be touched. */
    void (*compute_async)(tide_kernel_ctx *ctx);
    /* Optional, for element-wise kernels: once per node when a plan is made, after init (the same
     * calls of ctx are valid), fills *loops and returns true when this node's computation is one loop
     * over its elements that fusion may run tile by tile (tide_elementwise); false otherwise. */
    bool (*elementwise)(tide_kernel_ctx *ctx, tide_elementwise *loops);
    /* Inputs the kernel reads on the host (TensorFlow's HostMemory): bit a set for the op's input
     * argument a (every tensor of a list argument). Small arguments a kernel needs before it can launch
     * anything (Dropout's rate, axes, shapes): on an accelerator the plan hands such an input over in
     * host memory, without a copy, when its producer is on the host (a constant, which placement then
     * keeps on the host, or a fed value); one made in the accelerator's memory stays there (the kernel
     * reads it back). Besides these bits, every kernel of an accelerator (gpu, sim) reads the small
     * arguments engine/host_inputs.c lists for its op there; on the CPU every input is in host memory
     * anyway (docs/devices.md, "Host-memory inputs"). */
    unsigned host_inputs;
} tide_kernel_spec;

void tide_kernel_register(const tide_kernel_spec *spec);

/* Node facts. */
const char *tide_kernel_node_name(const tide_kernel_ctx *ctx);
const char *tide_kernel_op_name(const tide_kernel_ctx *ctx);
const tide_attrs *tide_kernel_attrs(const tide_kernel_ctx *ctx);  /* defaults filled in */
void *tide_kernel_state(const tide_kernel_ctx *ctx);              /* what init stored */
int tide_kernel_num_inputs(const tide_kernel_ctx *ctx);
int tide_kernel_num_outputs(const tide_kernel_ctx *ctx);
tide_dtype tide_kernel_output_dtype(const tide_kernel_ctx *ctx, int i);
tide_dtype tide_kernel_input_dtype(const tide_kernel_ctx *ctx, int i);

/* Inputs: borrowed for the duration of compute (retain to keep). */
tide_tensor *tide_kernel_input(const tide_kernel_ctx *ctx, int i);

/* Outputs. alloc: a new tensor of the output's dtype (zero-filled only when zero is true), owned by
 * the context; NULL on failure with the error recorded (return tide_kernel_status(ctx)).
 * forward_or_alloc: reuses input in_index's buffer when this kernel is its last user and dtype and
 * element count match (element-wise ops writing in place), else allocates.
 * set_output: hands over a tensor you made (a view, an input): the context takes a reference. */
tide_tensor *tide_kernel_alloc_output(tide_kernel_ctx *ctx, int i, const tide_shape *shape,
                                      bool zero);
tide_tensor *tide_kernel_forward_or_alloc(tide_kernel_ctx *ctx, int in_index, int out_index,
                                          const tide_shape *shape);
void tide_kernel_set_output(tide_kernel_ctx *ctx, int i, tide_tensor *t);

/* Control flow (white paper §4.4). A dead input is one from a branch that was not taken: only kernels
 * registered with TIDE_KERNEL_SEES_DEAD (and Merge) ever see one, and tide_kernel_input returns NULL
 * for it. set_output_dead makes output i dead: its consumers do not run (Switch's untaken output). */
bool tide_kernel_input_is_dead(const tide_kernel_ctx *ctx, int i);
void tide_kernel_set_output_dead(tide_kernel_ctx *ctx, int i);

/* Failure: records code and message (node and op prefixed); returns code. */
tide_status tide_kernel_error(tide_kernel_ctx *ctx, tide_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tide_status tide_kernel_status(const tide_kernel_ctx *ctx);
/* True once the step was cancelled or failed elsewhere: long kernels should poll and stop. */
bool tide_kernel_cancelled(const tide_kernel_ctx *ctx);
/* Ends an asynchronous compute. On failure pass the code returned by tide_kernel_error. */
void tide_kernel_done(tide_kernel_ctx *ctx, tide_status status);
/* The same, but the kernel's step continues on its device's threads, not inside the caller: for a
 * kernel that finishes another kernel's wait (an enqueue completing a blocked dequeue). */
void tide_kernel_done_later(tide_kernel_ctx *ctx, tide_status status);

/* Waiting without a thread: an asynchronous kernel that waits for an event another run causes (a
 * dequeue from an empty queue) registers fn(arg, code, message) before it waits. The engine calls it
 * once, from another thread, if the step ends early while the kernel waits: another node failed, the
 * run was cancelled (tide_session_cancel, Ctrl-C, tide_session_close) or passed its timeout (a
 * watcher thread sleeps until the deadline: nothing polls). fn must then finish the kernel
 * (tide_kernel_error(ctx, code, "...: %s", message), tide_kernel_done). Returns a token > 0, or 0
 * when the kernel must not wait: the step is ending already, or the kernel runs eagerly (nothing could
 * end the wait); the reason is recorded as the kernel's error: finish with
 * tide_kernel_done(ctx, tide_kernel_status(ctx)). It may be called under the kernel's own lock, and
 * fn may take that lock.
 * When the wait ends otherwise, call tide_kernel_forget_cancel (without that lock) before finishing:
 * true when fn will not be called; false when it was, or runs now (forget then waits for it to
 * return) — the kernel's own bookkeeping under its lock decides which of the two finishes it. */
typedef void (*tide_kernel_cancel_fn)(void *arg, tide_status code, const char *message);
int64_t tide_kernel_on_cancel(tide_kernel_ctx *ctx, tide_kernel_cancel_fn fn, void *arg);
bool tide_kernel_forget_cancel(tide_kernel_ctx *ctx, int64_t token);

/* Seeds for random ops, TensorFlow's rule: graph seed and op seed both 0 -> nondeterministic;
 * op seed 0 -> derived from the graph seed; graph seed 0 -> a fixed default. */
int64_t tide_kernel_graph_seed(const tide_kernel_ctx *ctx);
/* How many threads tide_kernel_parallel_for can spread work over (the engine's pool; 1 when the
 * kernel runs eagerly outside an engine). Kernels that split work into equal parts use it. */
int tide_kernel_num_threads(const tide_kernel_ctx *ctx);
/* Runs fn(begin, end, arg) over [0, n) split into chunks on the engine's threads (and the calling
 * one); cost_per_unit in nanoseconds decides how many chunks are worth it. Blocks until done. */
void tide_kernel_parallel_for(tide_kernel_ctx *ctx, int64_t n, double cost_per_unit,
                              void (*fn)(int64_t begin, int64_t end, void *arg), void *arg);
/* float16 and bfloat16 nodes of a kernel written for float32 (engine/kernel_float32.c): runs compute
 * with every half input converted to float32 and every half output allocated as float32, then rounds
 * those outputs once into the node's (TensorFlow's "computed in float32" for halves). A node without
 * half inputs or outputs runs compute directly. Returns compute's status (errors name the node). */
tide_status tide_kernel_compute_in_float32(tide_kernel_ctx *ctx, tide_status (*compute)(tide_kernel_ctx *ctx));

/* ---------------------------------------------------------------- variables (stateful kernels) */

typedef struct tide_variable tide_variable;

/* The variable of a Variable node, looked up (or created) in its container by the node's
 * container/shared_name attrs. Borrowed for the duration of compute. */
tide_variable *tide_kernel_own_variable(tide_kernel_ctx *ctx);
/* The variable behind a Ref(T) input. Borrowed for the duration of compute. */
tide_variable *tide_kernel_input_variable(tide_kernel_ctx *ctx, int i);
/* The same, for a kernel that replaces the variable's whole value (Assign): the variable takes the
 * declaration (dtype and shape) of this graph's Variable node, even when another graph declared it
 * differently first (the REPL's :reset, then a variable of the same name and another shape), so that
 * an initializer always works. Borrowed for the duration of compute. */
tide_variable *tide_kernel_assigned_variable(tide_kernel_ctx *ctx, int i);

/* A variable holds one tensor (NULL until initialised). Lock around read-modify-write. */
void tide_variable_lock(tide_variable *v);
void tide_variable_unlock(tide_variable *v);
const char *tide_variable_name(const tide_variable *v);
tide_dtype tide_variable_dtype(const tide_variable *v);
/* The declared shape (may be partial) of the Variable node that created the variable or last
 * assigned it; call with the lock held. A Variable node of another declaration must not read a value
 * of another shape: its kernel compares the value with its own "shape" attr. */
tide_shape tide_variable_shape(const tide_variable *v);
/* The current value (borrowed, NULL if uninitialised); call with the lock held. */
tide_tensor *tide_variable_value(tide_variable *v);
/* Replaces the value (retains t, releases the old one); call with the lock held. */
void tide_variable_set_value(tide_variable *v, tide_tensor *t);

/* ---------------------------------------------------------------- resources (stateful kernels outside the engine)
 *
 * An object that lives in one of the engine's containers, shared by every session of the engine that
 * names it (a file reader and its position), dropped with its container (tide_engine_reset_container)
 * or the engine once nobody holds it. A kernel finds it, or makes it, by (container, name) and a
 * type of its own (a static tide_resource_type: another type under that name is an error). */
typedef struct tide_resource_type {
    const char *name;                  /* "reader", for messages */
    void (*destroy)(void *object);     /* the last reference went */
    void (*removed)(void *object);     /* its container was reset while held (wake its waiters); may be NULL */
} tide_resource_type;
typedef struct tide_resource_handle tide_resource_handle;

/* The object named `name` in `container` ("" the default), made by make(arg, err) when missing (make
 * NULL: NOT_FOUND). *object gets it; returns a reference to release with tide_resource_release, or
 * NULL with the kernel's error recorded. make runs under the containers' lock: it must not call back
 * into the engine's containers. */
tide_resource_handle *tide_kernel_resource(tide_kernel_ctx *ctx, const char *container, const char *name,
                                           const tide_resource_type *type, void *(*make)(void *arg, tide_error *err),
                                           void *arg, void **object);
void tide_resource_release(tide_resource_handle *h);

/* ---------------------------------------------------------------- gradient functions
 *
 * A gradient function is registered per op (engine/grads/<family>_grad.c, TIDE_REGISTER). During
 * tide_gradients it is called once for each node on a path from xs to ys, after the gradients
 * flowing into the node's outputs are known (summed). It builds the ops computing the gradient with
 * respect to each input that wants one and hands them over with tide_grad_set_dx; an input left unset
 * gets no gradient. Builders below record the first failure in the context and return a NULL output
 * afterwards (and for NULL inputs), so a function may chain calls and end with
 * `return tide_grad_status(ctx);`. Nodes are named "gradients/<node>_grad/<op>" and inherit the
 * forward node's requested device. Type attrs of built ops are inferred from their inputs.
 */
typedef struct tide_grad_ctx tide_grad_ctx;
typedef tide_status (*tide_grad_fn)(tide_grad_ctx *ctx);

/* fn NULL declares the op not differentiable: no gradient flows through it (as for StopGradient,
 * Shape or ArgMax), which is not an error. An op with no registration at all on a path is an error. */
void tide_gradient_register(const char *op, tide_grad_fn fn);
/* Sorted names of the ops with a gradient function (not those declared not differentiable). */
int tide_registry_gradient_ops(const char *const **names);

tide_graph *tide_grad_graph(const tide_grad_ctx *ctx);
const tide_node *tide_grad_node(const tide_grad_ctx *ctx);   /* the forward node */
const tide_attrs *tide_grad_attrs(const tide_grad_ctx *ctx); /* its attrs, defaults filled in */
tide_output tide_grad_x(const tide_grad_ctx *ctx, int i);    /* forward input i (flat index) */
tide_output tide_grad_y(const tide_grad_ctx *ctx, int i);    /* forward output i */
/* The summed gradient flowing into output i; .node NULL when none flows. */
tide_output tide_grad_dy(const tide_grad_ctx *ctx, int i);
/* Same, or ZerosLike(output i) when none flows. */
tide_output tide_grad_dy_or_zeros(tide_grad_ctx *ctx, int i);
/* Does input i lie on a path from xs (is its gradient wanted)? */
bool tide_grad_wants(const tide_grad_ctx *ctx, int i);
void tide_grad_set_dx(tide_grad_ctx *ctx, int i, tide_output dx);

/* Builds a node of op with inputs given flat (see tide_node_builder_add_inputs_flat); attrs may be
 * NULL. Returns the node (NULL after a failure). */
tide_node *tide_grad_node_new(tide_grad_ctx *ctx, const char *op, const tide_output *inputs, int n,
                              const tide_attrs *attrs);
/* Output 0 of such a node. */
tide_output tide_grad_op(tide_grad_ctx *ctx, const char *op, const tide_output *inputs, int n,
                         const tide_attrs *attrs);
tide_output tide_grad_op1(tide_grad_ctx *ctx, const char *op, tide_output a);
tide_output tide_grad_op2(tide_grad_ctx *ctx, const char *op, tide_output a, tide_output b);
/* A scalar Const of dtype dt holding v. */
tide_output tide_grad_scalar(tide_grad_ctx *ctx, tide_dtype dt, double v);
/* An int32 vector Const. */
tide_output tide_grad_ints(tide_grad_ctx *ctx, const int32_t *v, int n);
/* g is the gradient of a result broadcast from x (against other): sums g over the broadcast dims and
 * reshapes it to x's shape. Static when both shapes are fully known at graph time (nothing built if
 * no broadcast happened), else through Shape and BroadcastGradientArgs. */
tide_output tide_grad_unbroadcast(tide_grad_ctx *ctx, tide_output g, tide_output x, tide_output other);
/* Fails the gradient (message prefixed with the node and op). Returns code. */
tide_status tide_grad_error(tide_grad_ctx *ctx, tide_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tide_status tide_grad_status(const tide_grad_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
