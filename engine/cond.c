/* cond.c — tide_cond (tide_control_flow.h): if pred then true_fn() else false_fn(), as a Switch on the
 * condition for every value a branch reads from outside (made by the branch's context, control_flow.c)
 * and a Merge for every result. Only the branch taken runs: the other's Switch outputs are dead, and
 * so is everything computed from them, up to the Merges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static tide_status check_pred(tide_output pred, const char *what, tide_error *err)
{
    if (!pred.node)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: the condition is missing", what);
    tide_dtype dt = pred.node->out_dtypes[pred.index];
    const tide_shape *s = &pred.node->out_shapes[pred.index];
    if (dt != TIDE_BOOL)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: the condition '%s' must be a bool scalar, not %s",
                              what, pred.node->name, tide_dtype_name(dt));
    if (s->rank > 0 && tide_shape_num_elements(s) != 1) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: the condition '%s' must be a bool scalar, not of shape %s",
                              what, pred.node->name, tide_shape_format(s, buf, sizeof buf));
    }
    return TIDE_OK;
}

/* Runs one branch inside its context; its results (those from outside too) are seen through it. */
static tide_status branch(tide_graph *g, const char *scope, tide_output pred, int side, tide_branch_fn fn, void *user,
                          tide_output *outs, int max, int *n, tide_error *err)
{
    tide_output sw_in[2] = {pred, pred};
    tide_node *sw = tide__cf_op(g, "Switch", side ? "switch_t" : "switch_f", sw_in, 2, err);
    tide_node *pivot = sw ? tide__cf_op(g, "Identity", side ? "pivot_t" : "pivot_f", &(tide_output){sw, side}, 1, err) : NULL;
    if (!pivot)
        return tide_error_code(err);
    tide_cf_context c = {.kind = TIDE_CF_COND, .parent = g->cf_context, .first_id = pivot->id, .pivot = pivot,
                         .name = scope, .pred = pred, .branch = side};
    g->cf_context = &c;
    *n = 0;
    tide_status st = fn(g, user, outs, max, n, err);
    if (st == TIDE_OK && (*n < 0 || *n > max))
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "the branch gave %d results, not 0 to %d", *n, max);
    for (int i = 0; st == TIDE_OK && i < *n; i++) {
        if (!outs[i].node || outs[i].node->graph != g || outs[i].index < 0 || outs[i].index >= outs[i].node->num_outputs)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "result %d is not an output of a node of this graph", i);
        else if (!(outs[i] = tide__cf_capture(g, outs[i], err)).node) /* a value from outside: this side's */
            st = tide_error_code(err);
    }
    g->cf_context = c.parent;
    free(c.captures);
    if (st != TIDE_OK)
        tide__error_prefix(err, "cond '%s', %s branch", scope, side ? "true" : "false");
    return st;
}

tide_status tide_cond(tide_graph *g, tide_output pred, tide_branch_fn true_fn, tide_branch_fn false_fn, void *user,
                      tide_output *results, int max_results, int *num_results, tide_error *err)
{
    if (num_results)
        *num_results = 0;
    if (!g || !true_fn || !false_fn || !results || max_results < 0 || !num_results)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "cond: missing graph, branch, or results array");
    tide_status st = check_pred(pred, "cond", err);
    if (st != TIDE_OK)
        return st;
    graph_mark mark = tide__graph_mark(g);
    char *scope = tide__unique_scope(g, "cond");
    if (!scope)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_graph_push_scope(g, scope);
    tide_output *t = calloc((size_t)max_results + 1, sizeof *t), *f = calloc((size_t)max_results + 1, sizeof *f);
    int nt = 0, nf = 0;
    if (!t || !f)
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK && !(pred = tide__cf_capture(g, pred, err)).node) /* as seen where the cond is */
        st = tide_error_code(err);
    if (st == TIDE_OK)
        st = branch(g, scope, pred, 1, true_fn, user, t, max_results, &nt, err);
    if (st == TIDE_OK)
        st = branch(g, scope, pred, 0, false_fn, user, f, max_results, &nf, err);
    if (st == TIDE_OK && nt != nf)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cond '%s': the true branch gives %d results, the false "
                            "branch %d", scope, nt, nf);
    for (int i = 0; st == TIDE_OK && i < nt; i++) {
        tide_dtype dt = t[i].node->out_dtypes[t[i].index], df = f[i].node->out_dtypes[f[i].index];
        if (dt != df) {
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cond '%s': result %d is %s in the true branch and %s "
                                "in the false one", scope, i, tide_dtype_name(dt), tide_dtype_name(df));
            break;
        }
        tide_output pair[2] = {f[i], t[i]}; /* value_index 0: false, 1: true, as TensorFlow's cond */
        tide_node_builder *b = tide_node_builder_new(g, "Merge", NULL);
        tide_node_builder_add_input_list(b, pair, 2);
        tide_node *m = tide_node_builder_finish(b, err);
        if (!m)
            st = tide_error_code(err);
        else
            results[i] = (tide_output){m, 0};
    }
    free(t);
    free(f);
    free(scope);
    if (st != TIDE_OK) {
        tide__graph_restore(g, mark);
        return st;
    }
    tide_graph_pop_scope(g);
    *num_results = nt;
    return TIDE_OK;
}
