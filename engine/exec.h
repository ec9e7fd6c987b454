/* exec.h — plans and steps, shared by plan.c (building a pruned plan for one Run signature),
 * plan_frames.c (the execution frames of a plan with loops), executor.c (running a plan once: a
 * step), frames.c (a step's frames and iterations at run time) and session.c (the plan cache and Run).
 *
 * A plan is immutable once built (but for the atomic wants_tensors flags, refreshed when the engine's
 * observers change), so any number of steps may run it at once. Its items are the needed
 * nodes plus one virtual item per feed (producing the fed tensor) and per fetch (a sink that hands the
 * tensor to the caller) — the white paper's feed/fetch rewriting without touching the graph.
 *
 * Frames (white paper §4.4; docs/control-flow.md). Every item executes in one static *frame*: the
 * root frame (0), or the frame of a loop, entered through Enter items. An item of the root frame runs
 * once per step; an item of a loop's frame runs once per iteration of each instance of that frame
 * (a loop nested in another runs once per iteration of the outer one). Pending counts and input slots
 * are therefore numbered per frame: an item's `local` index and its `input_base` count within its
 * frame, and so do an edge's `dst_local` and `slot`. In a plan without loops there is only the root
 * frame and local numbers equal global ones. Where an item's outputs land depends on its kind:
 * an Enter's in its child frame (iteration 0, or every iteration for a constant Enter), an Exit's
 * in the parent frame, a NextIteration's in the next iteration of its own frame, anything else's in
 * the same frame and iteration.
 *
 * Invariants (checked by plan_check() in debug builds):
 *  1. every input slot of every item is the destination of exactly one data edge, except Ref inputs,
 *     which name a variable and get no edge (the kernel reaches the variable through ref_sources);
 *  2. initial_pending of an item == number of edges (data + control) that point at it;
 *  3. items with initial_pending 0 are exactly plan->roots, and all are in the root frame;
 *  4. an item's edges are grouped by source output, in output order;
 *  5. an edge lands in the frame its source's kind says (above) and that frame is its destination's.
 */
#ifndef TIDE_EXEC_H
#define TIDE_EXEC_H

#include "internal.h"

typedef struct tide_edge {
    int dst;        /* item index */
    int slot;       /* input slot of dst within dst's frame, or -1 for a control edge */
    int output;     /* source output index (-1 for control edges, which come last) */
    int dst_local;  /* dst's index within its frame */
} tide_edge;

typedef enum item_kind { ITEM_NODE = 0, ITEM_FEED = 1, ITEM_FETCH = 2 } item_kind;

/* What the executor does with an item beyond running its kernel (frames.c). */
typedef enum item_flow {
    FLOW_PLAIN = 0,      /* outputs land in the same frame and iteration */
    FLOW_ENTER = 1,      /* outputs land in iteration 0 of a child frame */
    FLOW_CONST_ENTER = 2,/* outputs land in every iteration of a child frame (a loop invariant) */
    FLOW_EXIT = 3,       /* outputs land in the parent frame, once (the live one, else dead at the end) */
    FLOW_NEXT = 4,       /* outputs land in the next iteration of the same frame */
} item_flow;

typedef struct tide_exec_item {
    item_kind kind;
    int index;                 /* feed or fetch index for virtual items */
    tide_kernel_node kn;       /* ITEM_NODE: the kernel and its facts */
    const tide_node *node;     /* ITEM_NODE */
    int input_base;            /* first input slot */
    int num_inputs;
    int initial_pending;
    int num_edges;
    tide_edge *edges;
    bool expensive, async;
    atomic_bool wants_tensors; /* an observer asked for this node's tensors (refreshed when observers change) */
    atomic_bool debug_watched; /* the debugger's `watches` accepted it (refreshed when the debugger changes) */
    tide_device *device;
    const tide_node **twins;   /* nodes merged into this one by CSE (observers see their tensors too) */
    int num_twins;
    struct tide_fusion *fused; /* a fused group's item (fusion.h): node is its root, kn runs the group
                                  (kn.state is this); NULL for others */
    const char *fused_members; /* its members' names, "h, r, out" (the timings' `fused`); NULL for others */
    /* Control flow (plan_frames.c; all 0 in a plan without Switch, Merge or loops). */
    int frame;                 /* the static frame the item runs in */
    int local;                 /* index within its frame */
    uint8_t flow;              /* item_flow */
    bool is_merge;             /* ready on its first live data input (or when all are dead) */
    bool sees_dead;            /* runs even with a dead input (Merge, _Send, _Recv) */
    int child;                 /* FLOW_ENTER, FLOW_CONST_ENTER: the frame its outputs land in */
    int flow_index;            /* FLOW_EXIT: index among its frame's exits; FLOW_CONST_ENTER: among the
                                  child's constant enters */
    int merge_control;         /* is_merge: control edges into it */
    int merge_forward;         /* is_merge: data inputs from its own iteration (or an Enter) */
    int merge_back;            /* is_merge: data inputs from a NextIteration (iterations after the first) */
} tide_exec_item;

/* A static frame of a plan: the root frame (index 0), or a loop's frame, entered by Enter items
 * whose frame_name names it, from a parent frame. */
typedef struct tide_plan_frame {
    char *name;                /* "" for the root frame, else the Enters' frame_name */
    int parent;                /* -1 for the root */
    int parallel_iterations;   /* iterations of one instance running at once (the first Enter's attr) */
    int num_items;             /* items that run in this frame (their local indices: 0..num_items-1) */
    int num_slots;             /* input slots of those items */
    int num_enters;            /* Enter items whose outputs land here (each runs once per instance) */
    int num_const_enters;      /* of which constant */
    int num_exits;             /* Exit items that run here */
    int *items;                /* num_items: the item of each local index */
    int *init_pending;         /* num_items: pending count an iteration starts with (a Merge: its control
                                  edges + 1, see step.h) */
} tide_plan_frame;

typedef struct tide_plan {
    uint64_t serial;           /* unique in the process, never reused (a freed plan's address may be) */
    char *key;
    int num_items;
    tide_exec_item *items;
    int num_slots;
    int num_roots;
    int *roots;
    int num_feeds, num_fetches, num_targets;
    int *feed_items;           /* item of each feed */
    tide_dtype *feed_dtypes;
    tide_shape *feed_shapes;   /* declared shape of each fed output */
    char **feed_names, **fetch_names, **target_names;
    int observers_version;     /* wants_tensors computed for this version */
    int debugger_version;      /* debug_watched computed for this version */
    atomic_int num_debug_watched; /* ... and how many items it watches: none (and no keep mode), no
                                     execution of the plan can stop, and steps run as without a debugger */
    int num_transfers;         /* _Send/_Recv pairs made by partitioning (cross-device tensors) */
    bool uses_rendezvous;      /* has _Send/_Recv items (made or user-built): aborts and end_step needed */
    tide_node **synthetic;     /* the _Send/_Recv nodes the plan made (owned) */
    int num_synthetic;
    char **warnings;           /* soft placements (owned) */
    int num_warnings;
    double simulated_s;        /* the placement's simulated step time */
    int num_merged;            /* nodes merged into a twin by CSE */
    int num_fused_groups;      /* items that run a fused group of element-wise nodes (fusion.h) */
    int num_fused_nodes;       /* the nodes in those groups */
    bool control_flow;         /* has control-flow ops: dead tensors and frames (frames.c) */
    int num_frames;            /* static frames, the root first (1 without loops) */
    tide_plan_frame *frames;
    int num_alap_edges;        /* control edges added to start _Recv items as late as possible */
    /* session.c's cache, under the session's lock: */
    int fusion_version;        /* the observers' version a fused plan was made for; -1 unfused */
    int debug_version;         /* the debugger's version a fused plan was made for; -1: unfused or none */
    int runs;                  /* runs using the plan now */
    bool evicted;              /* out of the cache: the last of those runs frees it */
    bool warnings_shown;       /* a tide_session_warnings view lists its warnings */
} tide_plan;

/* Builds a plan (pruning, placement, kernels). fuse: fuse element-wise groups (fusion.h), keeping
 * the nodes debugger watches (NULL: none attached) out of them. NULL with err on failure. */
tide_plan *tide__plan_build(tide_engine *e, tide_graph *g, const tide_feed *feeds, int num_feeds,
                            const tide_output *fetches, int num_fetches, tide_node *const *targets,
                            int num_targets, bool fuse, const tide_debugger_slot *debugger, tide_error *err);
void tide__plan_free(tide_plan *p);
/* Asks the engine's observers which nodes' tensors they want. */
void tide__plan_update_observers(tide_plan *p, tide_engine *e);
/* Asks a run's debugger (its snapshot) which nodes it watches, when its version changed. */
void tide__plan_update_debugger(tide_plan *p, tide_engine *e, const tide_debugger_slot *d);

/* Everything one Run needs beyond the plan. */
typedef struct tide_step_args {
    tide_engine *engine;
    tide_session *session;
    const tide_plan *plan;
    const tide_feed *feeds;
    tide_tensor **fetch_values;
    const tide_run_options *opts;
    const atomic_int *cancel_gen;  /* the session's cancellation counter */
    int cancel_at_start;
    tide_run_info info;
    tide_observer_slot *observers; /* snapshot, may be NULL */
    int num_observers;
    tide_debugger_slot debugger;   /* snapshot; entry NULL: no debugger */
    int64_t *peak_bytes;           /* observed steps: receives the step's peak (tide_run_info.peak_bytes) */
    tide_run_device_memory *device_memory; /* observed steps: receives each device's peak (engine order) */
    struct tide_step_capture *capture; /* a step being captured: its items' outputs go to step_capture.c */
} tide_step_args;

/* Runs one step to completion on the caller's thread and the pool. */
tide_status tide__step_run(const tide_step_args *args, tide_step_stats **stats, tide_error *err);

/* Pass 4b (plan_frames.c): the frame of every node item in items[0..num_node_items), in topological
 * order (a NextIteration's edge to its Merge is the only back edge and is not followed). node_item maps
 * a graph node id to its item, -1 when not needed; fed outputs (is_fed) come from the root frame.
 * Checks that values cross frames only through Enter and Exit (each error names the nodes), sets
 * plan->control_flow, the items' flow facts and plan->frames (counts are finished by
 * tide__plan_number_frames once every item exists). */
tide_status tide__plan_assign_frames(tide_plan *p, int num_node_items, const int *node_item,
                                     bool (*is_fed)(void *arg, const tide_node *n, int index), void *arg,
                                     tide_error *err);
/* The frame an output of item k lands in (the item's own frame, or its Enter's child frame, or its
 * Exit's parent frame). */
int tide__plan_landing_frame(const tide_plan *p, int k);
/* Numbers each item within its frame (local, input_base) and counts each frame's items, slots, enters
 * and exits: after every item, synthetic ones included, has its frame. */
tide_status tide__plan_number_frames(tide_plan *p, tide_error *err);
/* Once every edge is wired: each frame's item list and initial pending counts. */
tide_status tide__plan_finish_frames(tide_plan *p, tide_error *err);

#endif
