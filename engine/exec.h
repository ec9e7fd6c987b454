/* exec.h — plans and steps, shared by plan.c (building a pruned plan for one Run signature),
 * executor.c (running a plan once: a step) and session.c (the plan cache and Run).
 *
 * A plan is immutable once built (but for the atomic wants_tensors flags, refreshed when the engine's
 * observers change), so any number of steps may run it at once. Its items are the needed
 * nodes plus one virtual item per feed (producing the fed tensor) and per fetch (a sink that hands the
 * tensor to the caller) — the white paper's feed/fetch rewriting without touching the graph.
 *
 * Invariants (checked by plan_check() in debug builds):
 *  1. every input slot of every item is the destination of exactly one data edge, except Ref inputs,
 *     which name a variable and get no edge (the kernel reaches the variable through ref_sources);
 *  2. initial_pending of an item == number of edges (data + control) that point at it;
 *  3. items with initial_pending 0 are exactly plan->roots;
 *  4. an item's edges are grouped by source output, in output order.
 */
#ifndef TIDE_EXEC_H
#define TIDE_EXEC_H

#include "internal.h"

typedef struct tide_edge {
    int dst;        /* item index */
    int slot;       /* absolute input slot of dst, or -1 for a control edge */
    int output;     /* source output index (-1 for control edges, which come last) */
} tide_edge;

typedef enum item_kind { ITEM_NODE = 0, ITEM_FEED = 1, ITEM_FETCH = 2 } item_kind;

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
    tide_device *device;
    const tide_node **twins;   /* nodes merged into this one by CSE (observers see their tensors too) */
    int num_twins;
} tide_exec_item;

typedef struct tide_plan {
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
    int num_transfers;         /* _Send/_Recv pairs made by partitioning (cross-device tensors) */
    bool uses_rendezvous;      /* has _Send/_Recv items (made or user-built): aborts and end_step needed */
    tide_node **synthetic;     /* the _Send/_Recv nodes the plan made (owned) */
    int num_synthetic;
    char **warnings;           /* soft placements (owned) */
    int num_warnings;
    double simulated_s;        /* the placement's simulated step time */
    int num_merged;            /* nodes merged into a twin by CSE */
    int num_alap_edges;        /* control edges added to start _Recv items as late as possible */
} tide_plan;

/* Builds a plan (pruning, placement, kernels). NULL with err on failure. */
tide_plan *tide__plan_build(tide_engine *e, tide_graph *g, const tide_feed *feeds, int num_feeds,
                            const tide_output *fetches, int num_fetches, tide_node *const *targets,
                            int num_targets, tide_error *err);
void tide__plan_free(tide_plan *p);
/* Asks the engine's observers which nodes' tensors they want. */
void tide__plan_update_observers(tide_plan *p, tide_engine *e);

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
} tide_step_args;

/* Runs one step to completion on the caller's thread and the pool. */
tide_status tide__step_run(const tide_step_args *args, tide_step_stats **stats, tide_error *err);

#endif
