/* step.h — the run-time state of one step, shared by executor.c (running items: readiness, kernels,
 * propagation) and frames.c (the frames and iterations of loops). Nothing else includes it.
 *
 * A step's items run in *iterations*. A plan without loops has one: the root iteration, whose pending
 * counts and input slots are the step's own arrays, so such a step costs what it always did. In a
 * plan with loops, each instance of a loop's frame (one per iteration of the frame around it) holds
 * the iterations that exist at the moment, each with pending counts and slots for the frame's items
 * (exec.h: items are numbered within their frame).
 *
 * Counting (what makes a step end, and a frame end):
 *  - an iteration's `outstanding` starts at the number of its frame's items: each runs exactly once
 *    per iteration, live or dead (plan_frames.c refuses graphs where that would not hold); a child
 *    frame instance started from an iteration counts one more until it ends;
 *  - the root iteration reaching 0 ends the step;
 *  - another iteration reaching 0 is over: frames.c frees it, lets a deferred iteration start
 *    (parallel_iterations), and ends the frame instance once no iteration is left, no value waits for
 *    a later iteration and every Enter has arrived; an ending instance hands its Exits that never
 *    produced a live value to the parent as dead values, then releases its count on the parent.
 *
 * Dead values (control flow): a slot holding tide__dead, or an item's `dead` flag (set by a dead
 * control edge too) makes the item dead: unless it sees dead values (Merge, _Send, _Recv) it does not
 * run and all its outputs are dead. A Merge becomes ready on its first live data input, or once every
 * data input it expects in this iteration arrived dead (pending: its control edges + 1).
 */
#ifndef TIDE_STEP_H
#define TIDE_STEP_H

#include "exec.h"

typedef struct tide_frame tide_frame;
typedef struct tide_step tide_step;

/* One iteration of one frame instance (the root iteration: the step's whole plan without loops). */
typedef struct tide_iter {
    tide_frame *frame;             /* NULL for the root iteration */
    int64_t n;                     /* iteration number within the frame instance (0 for the root) */
    atomic_int *pending;           /* per local item */
    tide_tensor **slots;           /* per local input slot */
    atomic_uchar *dead;            /* per local item: a dead input arrived (plans with control flow) */
    atomic_uchar *merge_live;      /* per local item (Merges): a live data input arrived */
    atomic_int *merge_dead;        /* per local item (Merges): dead data inputs that arrived */
    atomic_int outstanding;        /* items of the frame not finished here + child frames running */
    tide_node_timing *timings;     /* traced steps: per local item */
    tide_frame *children;          /* frame instances started from this iteration (parent frame's lock) */
    bool over;                     /* outstanding reached 0 (frame's lock) */
    struct tide_iter *next_free;
} tide_iter;

/* A ready item and the iteration it runs in. */
typedef struct ready_item {
    int item;
    tide_iter *iter;
} ready_item;

typedef struct ready_stack {
    ready_item *items;
    int n, cap;
    ready_item local[64];
} ready_stack;

/* An execution the debugger parked (tide_debug.h): before its kernel ran, or after (its outputs made,
 * its inputs still in their slots). The caller's thread presents it, then resumes it (debug_step.c). */
typedef struct parked {
    struct parked *next;
    int item;
    tide_iter *iter;
    bool after;
    tide_kernel_ctx ctx;           /* after: the kernel's context; outputs in outs */
    tide_tensor **outs;
    int64_t seq;
    int64_t since_ns;              /* when it was parked (the deadline stands still meanwhile) */
} parked;

struct tide_step {
    const tide_step_args *args;
    const tide_plan *plan;
    tide_threadpool *pool;
    tide_iter root;                /* pending and slots: the root frame's */
    bool control_flow;             /* the plan's: dead values and frames */
    atomic_bool finished_all;      /* the root iteration is over (read without the lock by the caller) */
    atomic_bool failed;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    tide_error *err;
    bool tracing, observing;
    bool multi_device;             /* items run on their devices' own threads (engine with several devices) */
    atomic_llong deadline_ns;      /* 0: none; pushed back by the time spent stopped in the debugger */
    /* Frames (frames.c), under `lock`: timings of finished iterations, frame paths kept for them. */
    tide_node_timing *loop_timings;
    int num_loop_timings, cap_loop_timings;
    char **paths;
    int num_paths, cap_paths;
    atomic_int live_frames;        /* frame instances not yet freed (for the end-of-step check) */
    /* The debugger (debug_step.c), when the run has one: one branch per node otherwise. */
    bool debugging;
    atomic_bool stepping;          /* stop before the next execution */
    atomic_llong executions;       /* started so far (the events' seq) */
    parked *parked_head, *parked_tail; /* waiting to be presented, under lock */
    _Atomic unsigned char *states; /* per item: its tide_debug_node_state (latest execution) */
    /* Per item output (latest_base[item] + i): the latest value, retained; a marker (GONE) once the
     * debugger let go of it so that its last reader could write over it (debug_step.c). Items of the
     * root frame run once a step: their entries are written without a lock; loops' under `lock`. */
    _Atomic(tide_tensor *) *latest;
    tide_exec_point *latest_at;    /* per item (loops: under lock) */
    int *latest_base;
    int *slot_source;              /* per root input slot: the latest[] entry feeding it, or -1 */
    atomic_int readers;            /* threads reading latest[] right now (tide_debug_step_value) */
    atomic_bool stopped;           /* a stop was presented: from then on nothing is let go (tide__debug_let_go) */
    struct tide_tensor_list *let_go_late; /* let go of while someone read: released at the end, under lock */
    /* Observed steps: the account of what its kernels allocate (step_memory.h); NULL otherwise. */
    struct tide_step_memory *memory;
    /* Devices (bit = engine index, < 64) whose kernels queued work that may still be running when they
     * returned: the step waits for them before it ends (tide__step_queued_on). */
    atomic_ullong queued_devices;
    /* Traced steps: per root-frame item, where and when its queued kernel ran (tide_device_span). */
    struct tide_device_span *spans;
    /* The callbacks of kernels waiting for an event, made by the first one (cancel.h); NULL if none. */
    _Atomic(struct tide_cancel_list *) cancel;
};

/* executor.c */
bool tide__rs_push(ready_stack *rs, int item, tide_iter *iter);
/* Hands the outputs of item `it` to its consumers in iteration `to`: the slots and pending counts of
 * `to`, scheduling the consumers that became ready onto rs. outs NULL: every output is dead (in a plan
 * with control flow; nothing in one without). move: the last consumer of an output takes the
 * producer's reference (outs[] cleared); else every consumer gets a new one. */
void tide__deliver(tide_step *step, const tide_exec_item *it, tide_tensor **outs, tide_iter *to, bool move,
                   ready_stack *rs);
/* One item of `iter` is finished. */
void tide__iter_item_done(tide_step *step, tide_iter *iter, ready_stack *rs);
void tide__step_fail(tide_step *step, tide_status code, const tide_error *err, const char *msg);

/* debug_step.c: the debugger's side of a step. init/free: the state and value tables (false: out of
 * memory). before: asked before an execution (true: parked; the caller stops there); after: asked after
 * the kernel, before inputs are released and outputs delivered (true: parked with ctx's outputs).
 * record: an execution ended (its outputs kept as the latest values). present: on the caller's
 * thread, each parked execution in turn (false when none waited). */
bool tide__debug_init(tide_step *step);
void tide__debug_free(tide_step *step);
bool tide__debug_before(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter);
bool tide__debug_after(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_kernel_ctx *ctx,
                       tide_tensor **outs);
void tide__debug_record(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_tensor **outs);
/* Just before item k's kernel runs (in the root frame): the debugger lets go of each input it is the
 * only other holder of, so that the kernel may write over it in place as it would without a debugger. */
void tide__debug_let_go(tide_step *step, const tide_exec_item *it, tide_iter *iter);
bool tide__debug_present(tide_step *step);
/* The step is over: the debugger's `finished`, if it has one, sees it (the caller's thread). */
void tide__debug_finished(tide_step *step);
static inline void tide__debug_state(tide_step *step, int k, tide_debug_node_state s)
{
    atomic_store_explicit(&step->states[k], (unsigned char)s, memory_order_relaxed);
}
/* executor.c, for resuming parked executions: run item k (its before-check already made), or finish
 * one parked after its kernel. */
void tide__run_resumed(tide_step *step, int k, tide_iter *iter);
/* The pool item k runs on (its device's threads with several devices). */
tide_threadpool *tide__step_pool_of(const tide_step *step, int item);
void tide__finish_resumed(tide_step *step, parked *p);

/* frames.c: the frame instance's path ("while", "outer:3/inner"), kept until the step's stats go. */
const char *tide__frame_path(const tide_frame *f);
/* The outputs of an Enter, Exit or NextIteration item that ran in iteration `from`. */
void tide__frames_propagate(tide_step *step, const tide_exec_item *it, tide_tensor **outs, tide_iter *from,
                            ready_stack *rs);
/* A child iteration's outstanding count reached 0. */
void tide__frames_iter_over(tide_step *step, tide_iter *iter, ready_stack *rs);
/* The root iteration's per-item initial pending counts (Merges count differently). */
void tide__frames_init_pending(const tide_step *step, const tide_plan_frame *f, atomic_int *pending);
/* After the step: frees what frames.c still holds (nothing when every frame ended) and hands the
 * loop timings and paths to the caller (for step stats). */
void tide__frames_step_end(tide_step *step);

#endif
