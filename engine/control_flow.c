/* control_flow.c — building control flow into a graph: closing a loop's back edge (the one change a
 * graph allows to a node it already has, since a Merge must exist before the NextIteration that feeds
 * it back). The cond() and while_loop() builders are in cond.c and while_loop.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradients.h"

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
                tide__node_free_piece(g->nodes[id], g->nodes[id]->out_shapes);
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

/* ---------------------------------------------------------------- contexts: values from outside */

static tide_node *capture_node(tide_graph *g, tide_cf_context *c, tide_output outer, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, c->kind == TIDE_CF_WHILE ? "Enter" : "Switch", NULL);
    tide_node_builder_add_input(b, outer);
    if (c->kind == TIDE_CF_WHILE) {
        tide_attrs *a = tide_node_builder_attrs(b);
        tide_attrs_set_string(a, "frame_name", c->frame);
        tide_attrs_set_bool(a, "is_constant", true);
        tide_attrs_set_int(a, "parallel_iterations", c->parallel_iterations);
    } else {
        tide_node_builder_add_input(b, c->pred);
    }
    return tide_node_builder_finish(b, err);
}

/* `in` as seen inside context c: itself when built inside, else brought in through the parent context
 * first, then c's Enter (a loop invariant) or Switch (this branch's side), made once per value. */
static tide_output capture(tide_graph *g, tide_cf_context *c, tide_output in, tide_error *err)
{
    if (!c)
        return in;
    /* In a gradient loop, a node the gradient added to the forward side counts as outside, however
     * late it was made (grads/while_grad.c). */
    int side = c->grad ? tide__grad_loop_side(c, in) : GRAD_NOT_FORWARD;
    if (side == GRAD_NOT_FORWARD && in.node->id >= c->first_id && !in.node->cf_hoisted)
        return in;
    for (int i = 0; i < c->num_captures; i++)
        if (c->captures[i].outside.node == in.node && c->captures[i].outside.index == in.index)
            return c->captures[i].inside;
    tide_output inside;
    if (side == GRAD_FORWARD_HERE) { /* a value of the loop this gradient undoes: from its stack */
        inside = tide__grad_loop_pop(g, c, in, err);
    } else {
        tide_cf_context *saved = g->cf_context;
        g->cf_context = c->parent; /* the Enter or Switch itself belongs to the context around */
        tide_output outer = capture(g, c->parent, in, err);
        tide_node *n = outer.node ? capture_node(g, c, outer, err) : NULL;
        g->cf_context = saved;
        inside = (tide_output){n, c->kind == TIDE_CF_WHILE ? 0 : c->branch};
    }
    if (!inside.node)
        return (tide_output){NULL, 0};
    if (c->num_captures == c->cap_captures) { /* grown here: the work above may have captured more */
        int cap = c->cap_captures ? 2 * c->cap_captures : 8;
        tide_cf_capture *grown = realloc(c->captures, sizeof *grown * (size_t)cap);
        if (!grown) {
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            return (tide_output){NULL, 0};
        }
        c->captures = grown;
        c->cap_captures = cap;
    }
    c->captures[c->num_captures++] = (tide_cf_capture){in, inside};
    return inside;
}

tide_status tide__cf_capture_inputs(tide_graph *g, const tide_op_def *def, const int *arg_start, const char *who,
                                    tide_output *inputs, int num_inputs, tide_error *err)
{
    tide_cf_context *c = g->cf_context;
    for (int a = 0; a < def->num_inputs; a++) {
        if (def->inputs[a].is_ref) /* a variable itself, not its value: no Enter or Switch can carry it */
            continue;
        for (int i = arg_start[a]; i < arg_start[a + 1] && i < num_inputs; i++) {
            tide_output in = capture(g, c, inputs[i], err);
            if (!in.node) {
                tide__error_prefix(err, "%s: bringing input '%s' into %s '%s'", who, inputs[i].node->name,
                                   c->kind == TIDE_CF_WHILE ? "loop" : "cond", c->name);
                return tide_error_code(err);
            }
            inputs[i] = in;
        }
    }
    return TIDE_OK;
}

tide_status tide__cf_check_controls(tide_graph *g, const char *who, int num_inputs, tide_node *const *control,
                                    int num_control, tide_node **tie, tide_error *err)
{
    tide_cf_context *c = g->cf_context;
    bool inside_control = false;
    *tie = NULL;
    for (int i = 0; i < num_control; i++) {
        const tide_node *d = control[i];
        if (!d || d->graph != g)
            return TIDE_OK; /* the builder reports it */
        if (d->id >= c->first_id)
            inside_control = true;
        else if (c->kind == TIDE_CF_WHILE)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s inside loop '%s' waits for '%s' from outside "
                                  "the loop: make a value the loop reads depend on it instead", who, c->name, d->name);
    }
    if (num_inputs == 0 && !inside_control) /* no input from inside: tie it to this branch or iteration, */
        *tie = c->pivot;                    /* else it would run once, outside */
    return TIDE_OK;
}

tide_output tide__cf_capture(tide_graph *g, tide_output in, tide_error *err)
{
    return in.node ? capture(g, g->cf_context, in, err) : in;
}

/* ---------------------------------------------------------------- what the builders share */

graph_mark tide__graph_mark(const tide_graph *g)
{
    return (graph_mark){g->num_nodes, g->num_scopes, g->num_devices, g->cf_context};
}

void tide__graph_restore(tide_graph *g, graph_mark m)
{
    g->cf_context = m.context;
    while (g->num_scopes > m.num_scopes)
        tide_graph_pop_scope(g);
    while (g->num_devices > m.num_devices)
        tide_graph_pop_device(g);
    tide_graph_rollback(g, m.num_nodes, NULL); /* nodes made since the mark were run by no plan */
}

/* A scope name under the current one that no node uses yet: "while", "while_1"... (the last part). */
char *tide__unique_scope(tide_graph *g, const char *base)
{
    char *prefix = tide__graph_scope_prefix(g);
    if (!prefix)
        return NULL;
    for (long k = 0;; k++) {
        char *local = k ? tide__asprintf("%s_%ld", base, k) : tide__strdup(base);
        char *full = local ? tide__asprintf("%s%s/", prefix, local) : NULL;
        bool used = !full || tide_graph_node(g, full) != NULL;
        size_t len = full ? strlen(full) : 0;
        for (int i = 0; !used && i < g->num_nodes; i++)
            used = strncmp(g->nodes[i]->name, full, len) == 0 ||
                   (strncmp(g->nodes[i]->name, full, len - 1) == 0 && g->nodes[i]->name[len - 1] == 0);
        free(full);
        if (!used || !local) {
            free(prefix);
            return local;
        }
        free(local);
    }
}

/* One node of op over inputs (no attrs). */
tide_node *tide__cf_op(tide_graph *g, const char *op, const char *name, const tide_output *inputs, int n,
                       tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    tide_node_builder_add_inputs_flat(b, inputs, n);
    return tide_node_builder_finish(b, err);
}

