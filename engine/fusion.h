/* fusion.h — element-wise fusion, shared by plan.c (which calls the pass), fusion.c (finding the
 * groups and making their items) and fusion_run.c (running a group); debug_step.c reads a group's
 * externals. Nothing else includes it.
 *
 * A *group* is a set of element-wise nodes on one CPU device (kernels that offer a tide_elementwise
 * loop, float32 or float64, all of one dtype) whose output shape is the group's shape S (the root's:
 * the one member whose value leaves the group), where every member but the root has all its
 * consumers inside the group and is neither fetched nor watched, and no member has control inputs.
 * The group becomes one plan item: its node is the root (so timings, observers and errors name it),
 * its inputs the group's *external* values (each a full tensor of shape S, a scalar, or a vector
 * along S's last axis), and its kernel evaluates the members' own loops tile by tile (a few hundred
 * elements, in registers that stay in L1) into the root's output, without intermediate tensors.
 *
 * Shapes are checked when the group runs: when the externals do not have the shapes the plan
 * assumed (unknown dimensions that turned out to broadcast, or a user's shape error), the group runs
 * its members' kernels one after the other instead, exactly as an unfused plan would: same results,
 * and an error names the member that failed. */
#ifndef TIDE_FUSION_H
#define TIDE_FUSION_H

#include "exec.h"

#define TIDE_FUSION_MAX_MEMBERS 32
#define TIDE_FUSION_MAX_EXTERNALS 16
#define TIDE_FUSION_MAX_REGS 16

/* The kind of an external value. */
typedef enum fusion_kind { FUSION_FULL = 0, FUSION_SCALAR = 1, FUSION_BIAS = 2 } fusion_kind;

typedef struct fusion_member {
    const tide_node *node;
    tide_kernel_node kn;        /* the member's own kernel, initialised (the fallback runs it) */
    tide_elementwise ew;
    int num_in;
    int in[2];                  /* value of each input: < num_ext an external, else num_ext + member */
    int reg;                    /* the tile register its output goes to; -1 for the root */
    bool expensive;
} fusion_member;

typedef struct tide_fusion {
    int num_members;            /* in topological order; the last one is the root */
    fusion_member *members;
    int num_ext;
    tide_output *ext;           /* the external values, in input slot order */
    uint8_t *ext_kind;          /* fusion_kind of each */
    int num_regs;
    tide_dtype dtype;
    double cost;                /* nanoseconds per element, for parallel_for: the dearest member's (on
                                   tiles in L1 the cheap loops cost little beside it; the sum of the
                                   members' costs split [128, 512] chains over two threads, which cost
                                   more than it saved: bench_fusion) */
    tide_node wiring;           /* what plan.c wires for the item: inputs = ext, no control inputs */
    char *members_text;         /* "a, b, c": the members' names, the root last */
} tide_fusion;

/* What the pass needs from the plan builder. Items [0, num_node_items) are the nodes (in topological
 * order), then feeds, fetches. */
typedef struct tide_fuse_args {
    tide_engine *engine;
    tide_graph *graph;
    int num_node_items;         /* in, and out: fewer after fusing */
    int *node_item;             /* graph node id -> item; members are mapped to their group's item */
    const tide_output *fetches;
    int num_fetches;
    bool (*is_fed)(void *arg, const tide_node *n, int index);
    void *arg;
    const tide_debugger_slot *debugger; /* the run's debugger (NULL: none): a plan with a node it watches is not fused */
} tide_fuse_args;

/* The pass (before partitioning and wiring; nothing in plans with control flow): finds the groups
 * and replaces each by one item, removing its members' items. */
tide_status tide__plan_fuse(tide_plan *p, tide_fuse_args *a, tide_error *err);

/* fusion_run.c: the kernel of a group's item, and its state's destructor. */
tide_status tide__fusion_compute(tide_kernel_ctx *ctx);
void tide__fusion_free(void *fusion);

#endif
