/* control_flow.c — building control flow into a graph: closing a loop's back edge (the one change a
 * graph allows to a node it already has, since a Merge must exist before the NextIteration that feeds
 * it back). The cond() and while_loop() builders are in cond.c and while_loop.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Shapes inferred again downstream of `from` (nodes created after it that read a node whose shapes
 * changed), into fresh arrays; nothing changes until all succeed. new_shapes[id] is NULL for a node
 * whose shapes stay. */
static tide_status reinfer(tide_graph *g, const tide_node *from, tide_shape **new_shapes, tide_error *err)
{
    bool *changed = calloc((size_t)g->num_nodes + 1, sizeof *changed);
    if (!changed)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    changed[from->id] = true;
    tide_status st = TIDE_OK;
    for (int id = from->id + 1; id < g->num_nodes && st == TIDE_OK; id++) {
        tide_node *n = g->nodes[id];
        bool reads = false;
        for (int i = 0; i < n->num_inputs && !reads; i++)
            reads = changed[n->inputs[i].node->id];
        if (!reads)
            continue;
        tide_shape *in = calloc((size_t)n->num_inputs + 1, sizeof *in);
        tide_dtype *dts = calloc((size_t)n->num_inputs + 1, sizeof *dts);
        const tide_tensor **values = calloc((size_t)n->num_inputs + 1, sizeof *values);
        tide_shape *out = calloc((size_t)n->num_outputs + 1, sizeof *out);
        if (!in || !dts || !values || !out) {
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        } else {
            for (int i = 0; i < n->num_inputs; i++) {
                const tide_node *src = n->inputs[i].node;
                const tide_shape *s = new_shapes[src->id] ? new_shapes[src->id] : src->out_shapes;
                in[i] = s[n->inputs[i].index];
                dts[i] = src->out_dtypes[n->inputs[i].index];
                values[i] = tide__node_const_value(src);
            }
            char who[600];
            snprintf(who, sizeof who, "node '%s' (%s)", n->name, n->op->name);
            st = tide__infer_shapes(n->op, who, n->attrs, in, dts, values, n->num_inputs, n->num_outputs, out, err);
        }
        bool differs = false;
        for (int o = 0; st == TIDE_OK && o < n->num_outputs; o++)
            differs |= !tide_shape_equal(&out[o], &n->out_shapes[o]);
        if (st == TIDE_OK && differs) {
            new_shapes[id] = out;
            changed[id] = true;
            out = NULL;
        }
        free(in);
        free(dts);
        free(values);
        free(out);
    }
    free(changed);
    return st;
}

tide_status tide_graph_close_loop(tide_graph *g, tide_node *merge, int input, tide_output next, tide_error *err)
{
    if (!g || !merge || !next.node || merge->graph != g || next.node->graph != g)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "close_loop: missing graph or node, or a node of another graph");
    if (strcmp(merge->op->name, "Merge") != 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "close_loop: '%s' is a %s, not a Merge", merge->name,
                              merge->op->name);
    if (strcmp(next.node->op->name, "NextIteration") != 0 || next.index != 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "close_loop: a loop closes through a NextIteration's "
                              "output, not '%s:%d' (%s)", next.node->name, next.index, next.node->op->name);
    if (input < 0 || input >= merge->num_inputs)
        return tide_error_set(err, TIDE_OUT_OF_RANGE, "close_loop: Merge '%s' has %d inputs, not an input %d",
                              merge->name, merge->num_inputs, input);
    if (merge->out_dtypes[0] != next.node->out_dtypes[0])
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "close_loop: Merge '%s' is %s but NextIteration '%s' is %s",
                              merge->name, tide_dtype_name(merge->out_dtypes[0]), next.node->name,
                              tide_dtype_name(next.node->out_dtypes[0]));
    if (atomic_load(&merge->used_by_plan))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "close_loop: Merge '%s' has already been run, so its "
                              "inputs are fixed", merge->name);
    /* The Merge's shape must hold for every iteration: relax it to what NextIteration brings, infer
     * again what follows from it, and repeat while the value going round changes (shapes only ever
     * get less specific, so this ends). */
    tide_shape merged = merge->out_shapes[0];
    tide_shape **new_shapes = calloc((size_t)g->num_nodes + 1, sizeof *new_shapes);
    tide_status st = new_shapes ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int round = 0; st == TIDE_OK && round <= TIDE_MAX_RANK + 2; round++) {
        const tide_shape *back = new_shapes[next.node->id] ? new_shapes[next.node->id] : next.node->out_shapes;
        tide_shape relaxed = tide__shape_relax(&merged, &back[0]);
        if (round > 0 && tide_shape_equal(&relaxed, &merged))
            break;
        merged = relaxed;
        for (int id = 0; id < g->num_nodes; id++) {
            free(new_shapes[id]);
            new_shapes[id] = NULL;
        }
        tide_shape *m = malloc(sizeof *m * (size_t)merge->num_outputs);
        if (!m) {
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            break;
        }
        memcpy(m, merge->out_shapes, sizeof *m * (size_t)merge->num_outputs);
        m[0] = merged;
        new_shapes[merge->id] = m;
        st = reinfer(g, merge, new_shapes, err);
    }
    for (int id = 0; st == TIDE_OK && id < g->num_nodes; id++)
        if (new_shapes[id] && atomic_load(&g->nodes[id]->used_by_plan))
            st = tide_error_set(err, TIDE_FAILED_PRECONDITION, "close_loop: the shape of '%s' would change, but "
                                "it has already been run", g->nodes[id]->name);
    if (st == TIDE_OK) {
        pthread_mutex_lock(&g->lock);
        merge->inputs[input] = next;
        for (int id = 0; id < g->num_nodes; id++)
            if (new_shapes[id]) {
                free(g->nodes[id]->out_shapes);
                g->nodes[id]->out_shapes = new_shapes[id];
                new_shapes[id] = NULL;
            }
        g->version++;
        pthread_mutex_unlock(&g->lock);
    } else {
        tide__error_prefix(err, "closing the loop of Merge '%s'", merge->name);
    }
    for (int id = 0; new_shapes && id < g->num_nodes; id++)
        free(new_shapes[id]);
    free(new_shapes);
    return st;
}
