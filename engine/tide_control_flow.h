/* tide_control_flow.h — conditionals and loops in a graph (white paper §4.4; docs/control-flow.md):
 * tide_cond and tide_while_loop build them from the control-flow ops (Switch, Merge, Enter, Exit,
 * NextIteration, LoopCond), which the executor runs in frames, one per loop instance, iteration
 * after iteration; only the branch a condition takes runs.
 *
 * Building. Both take functions that build the branches or the loop's condition and body with the
 * ordinary graph calls (node builders, ops, even nested conds and loops). While such a function runs,
 * the graph is in a *context*: every value it reads from outside is brought in automatically — into a
 * loop through a constant Enter (a loop invariant, made once however often it is read), into a branch
 * through a Switch on the condition — and a node it makes without inputs (a constant) gets a control
 * input that ties it to the branch or the iteration. Values made inside are for inside: use a loop's
 * results (the Exits tide_while_loop returns) and a cond's (the Merges tide_cond returns) outside.
 *
 * Atomicity: on failure (a function's error, a shape or dtype mismatch) every node built so far is
 * removed and the graph is as it was. The functions must not run sessions or free the graph. Names:
 * the nodes live in a scope "while"/"cond" (made unique, or opts->name); a loop's frame is named after
 * that scope.
 */
#ifndef TIDE_CONTROL_FLOW_H
#define TIDE_CONTROL_FLOW_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds one branch of a cond: fills outs[0..*num_outs) (at most max) with the branch's results.
 * Returns TIDE_OK or an error (in err). */
typedef tide_status (*tide_branch_fn)(tide_graph *g, void *user, tide_output *outs, int max, int *num_outs,
                                      tide_error *err);

/* if pred then true_fn else false_fn, as values: results[i] is the i-th result of the branch taken
 * (a Merge of the two). pred must be a bool scalar. Both branches must give the same number of
 * results of the same dtypes; shapes that differ become unknown dimensions. Only the nodes of the
 * branch taken run. Fills results[0..*num_results) (at most max_results). */
tide_status tide_cond(tide_graph *g, tide_output pred, tide_branch_fn true_fn, tide_branch_fn false_fn, void *user,
                      tide_output *results, int max_results, int *num_results, tide_error *err);

/* The condition of a loop: *pred (a bool scalar) from the loop variables vars[0..n). */
typedef tide_status (*tide_loop_cond_fn)(tide_graph *g, void *user, const tide_output *vars, int n, tide_output *pred,
                                         tide_error *err);
/* The body: next[0..n) from vars[0..n), one new value per loop variable, same dtypes. */
typedef tide_status (*tide_loop_body_fn)(tide_graph *g, void *user, const tide_output *vars, int n, tide_output *next,
                                         tide_error *err);

typedef struct tide_while_options {
    const char *name;            /* the scope and frame name; NULL: "while" made unique */
    int parallel_iterations;     /* iterations that may run at once; 0: 10 */
    int64_t maximum_iterations;  /* > 0: the loop stops after that many iterations at most */
    /* NULL, or one shape per loop variable: what its value may be in any iteration (unknown
     * dimensions where it changes, e.g. [?] for a vector that grows). Without it a variable's shape must
     * stay what it is when the loop starts, and a body that changes it is an error that says so. */
    const tide_shape *shape_invariants;
} tide_while_options;

void tide_while_options_init(tide_while_options *opts);

/* while cond(vars): vars = body(vars) — results[0..n) are the variables' values when cond is first false
 * (the loop's Exits). opts may be NULL. */
tide_status tide_while_loop(tide_graph *g, tide_loop_cond_fn cond, tide_loop_body_fn body, void *user,
                            const tide_output *loop_vars, int n, const tide_while_options *opts, tide_output *results,
                            tide_error *err);

/* Closes a loop by hand: input `input` of the Merge `merge` becomes the output of a NextIteration node,
 * the loop's back edge — the one edge that may point to a later node (tide_while_loop does this for
 * you; importers of TensorFlow graphs need it). Build the Merge with a stand-in for that input
 * (TensorFlow's convention: its Enter twice), then its loop, then close it. The Merge's shape (and what
 * was inferred from it) relaxes to what every iteration brings. Fails, changing nothing, once the Merge
 * has been run, or for a node that is not a Merge or a NextIteration of this graph, or a dtype that
 * differs. */
tide_status tide_graph_close_loop(tide_graph *g, tide_node *merge, int input, tide_output next_iteration,
                                  tide_error *err);

#ifdef __cplusplus
}
#endif
#endif
