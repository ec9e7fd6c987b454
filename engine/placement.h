/* placement.h — choosing a device for every node of a plan (DESIGN.md §3, white paper §3.2.1).
 *
 * The plan builder (plan.c) calls tide__place once per plan, after pruning and ordering, with the
 * needed nodes in topological order. Placement happens in four steps:
 *   1. Requests. A node's device request is its own, or its scope's default (already folded into
 *      node->requested_device at build time); "" means any device. A malformed request never gets
 *      here (the builder refuses it).
 *   2. Colocation groups (union-find). A node that takes a Ref input joins its Variable's group (so
 *      Assign*, the optimizers' Apply* ops and the variable live on one device); a node with the attr
 *      `_colocate_with = "name"` joins the group of node `name` (if that node is needed by the plan).
 *      Every member's request must be satisfiable by one device: two members requesting devices that
 *      no single device matches is an INVALID_ARGUMENT error naming both nodes and both requests.
 *   3. Candidates per group: the devices that match every member's request AND have a kernel for
 *      every member. None matches a request at all: INVALID_ARGUMENT naming the node, its request and
 *      the engine's devices (hard placement error). Requests match devices but those have no kernel
 *      for some member (e.g. a /gpu request for a CPU-only op): SOFT placement — the candidates become
 *      every device with kernels for all members, and a warning is recorded ("node 'x' (Op) requested
 *      /gpu:0, which has no kernel for it: placed on /cpu:0"). No device at all has the kernel:
 *      UNIMPLEMENTED naming the op and dtype.
 *   4. A strategy picks one candidate per group:
 *      - TIDE_PLACEMENT_GREEDY (default): the white paper's greedy heuristic. Simulate execution in
 *        topological order; each device executes one node at a time. For the next group (placed when
 *        its first member in topological order comes up; the whole group goes to the chosen device),
 *        for each candidate device d: start = max(ready time of d, max over inputs (finish time of
 *        the input + transfer cost when the input's device != d)); finish = start + compute cost on
 *        d. Choose the device with the earliest finish (ties: the lower device index). Costs come
 *        from tide__cost_estimate.
 *      - TIDE_PLACEMENT_NAIVE: every group on the first candidate (the first device that fits).
 *      - TIDE_PLACEMENT_ROUND_ROBIN: group k (in order of first appearance) on candidate k mod n.
 *
 * The cost model. tide__cost_estimate gives a node's compute time in seconds on a device from its
 * inferred shapes: FLOPs (MatMul 2mnk, Conv2D 2·out·kh·kw·cin, elementwise ops one per output
 * element, reductions one per input element, Const/Placeholder/Variable/NoOp ~0) over a device speed
 * (tide_cost_model.flops_per_s), plus the bytes it reads and writes over memory bandwidth
 * (bytes_per_s), plus a fixed per-node overhead. Unknown dimensions count as 1 (documented: the
 * model is a guess until measured). A measured time replaces the estimate when the engine has one
 * for the node name (tide__cost_record, fed from traced runs' step stats: an exponential moving
 * average). Transfer cost of an edge between two devices: latency + bytes / transfer_bytes_per_s
 * (between virtual CPU devices of one process nothing is copied: latency only), plus for each end in
 * an accelerator's memory that device type's copy latency and bytes over its copy bandwidth.
 * The model's speeds are the CPU's; on an accelerator a node costs what its type's table says
 * (tide_device_ops.cost: FLOP/s, bytes/s, launch overhead per kernel).
 */
#ifndef TIDE_PLACEMENT_H
#define TIDE_PLACEMENT_H

#include "internal.h"

/* Device speeds the cost model assumes (defaults: one CPU core — 20 GFLOP/s, 10 GB/s memory,
 * transfers between virtual CPU devices 2 µs latency and no copy). */
typedef struct tide_cost_model {
    double flops_per_s, bytes_per_s;
    double node_overhead_s;
    double transfer_latency_s, transfer_bytes_per_s; /* bytes_per_s 0: transfers copy nothing */
} tide_cost_model;

void tide__cost_model_default(tide_cost_model *m);

/* Measured times (seconds, a moving average per node name), kept by the engine across plans. */
typedef struct tide_cost_table tide_cost_table;
tide_cost_table *tide__cost_table_new(void);
void tide__cost_table_free(tide_cost_table *t);
/* Thread-safe. Records one measurement of node `name` (seconds). */
void tide__cost_record(tide_cost_table *t, const char *name, double seconds);
/* Thread-safe. The measured time of `name`, or a negative number when none is recorded. */
double tide__cost_measured(const tide_cost_table *t, const char *name);

/* The estimated compute time of node n on device d, in seconds (measured when table has it). */
double tide__cost_estimate(const tide_cost_model *m, const tide_cost_table *table, const tide_node *n,
                           const tide_device *d);
/* The bytes of output `index` of n as inferred (unknown dimensions count as 1). */
double tide__output_bytes(const tide_node *n, int index);

typedef struct tide_placement {
    tide_device **device;      /* per position in `order`: the chosen device */
    char **warnings;           /* soft placements, malloc'd strings */
    int num_warnings;
    double simulated_s;        /* the simulated makespan of one step under the chosen placement */
} tide_placement;

/* Places nodes order[0..n) (graph node ids, topological order; every producer of a needed input is
 * in order or fed). fed(node id, output) says whether an input is fed (a fed tensor is available at
 * time 0 on the device of its consumer: no transfer). Fills out (device array of n entries, malloc'd;
 * free with tide__placement_clear). Writes each node's assigned device (atomic_store on
 * node->assigned_device) only on success.
 * When the plan merged duplicate nodes (CSE), canonical[id] (by graph node id; id itself when not
 * merged) is the node a merged one was replaced by, and an input from a merged node is read as coming
 * from its canonical node; canonical may be NULL. model NULL: the default cost model. */
tide_status tide__place(tide_engine *e, const tide_graph *g, const int *order, int n, const int *canonical,
                        bool (*fed)(void *arg, const tide_node *node, int output), void *fed_arg,
                        tide_placement_kind strategy, const tide_cost_model *model,
                        const tide_cost_table *table, tide_placement *out, tide_error *err);
void tide__placement_clear(tide_placement *p);

#endif
