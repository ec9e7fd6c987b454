/* while_loop.c — tide_while_loop (tide_control_flow.h), built as TensorFlow 1.x builds it:
 *
 *   for each loop variable:  Enter -> Merge -> Switch(LoopCond) -> true: Identity -> body -> NextIteration
 *                                       ^                          false: Exit (a result)           |
 *                                       +---------------------------------------------------------+
 *
 * The condition is built from the Merges, the body from the Identities (the first is the loop's pivot:
 * constants made in the body get a control input from it, so they run in every iteration that runs
 * the body). Values the condition or body read from outside enter once as constant Enters (the loop
 * context, control_flow.c). maximum_iterations adds a counter variable of its own. A variable's shape
 * is what it is when the loop starts, or its shape invariant; a body that changes it otherwise is an
 * error that says how to allow it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tide_while_options_init(tide_while_options *opts)
{
    if (opts)
        *opts = (tide_while_options){.parallel_iterations = 10};
}

typedef struct loop {
    tide_graph *g;
    const tide_while_options *opts;
    char *scope, *frame;
    int n, nv;                /* user variables; with the counter of maximum_iterations */
    tide_node **enter, **merge, **sw, **body_in;
    tide_output *next;
    tide_error *err;
} loop;

static tide_node *enter_node(loop *l, tide_output in)
{
    tide_node_builder *b = tide_node_builder_new(l->g, "Enter", NULL);
    tide_node_builder_add_input(b, in);
    tide_attrs *a = tide_node_builder_attrs(b);
    tide_attrs_set_string(a, "frame_name", l->frame);
    tide_attrs_set_int(a, "parallel_iterations", l->opts->parallel_iterations);
    return tide_node_builder_finish(b, l->err);
}

static tide_node *scalar_i32(tide_graph *g, int32_t v, tide_error *err)
{
    tide_tensor *t = tide_tensor_new_scalar(TIDE_INT32, &v, err);
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    if (t) {
        tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_INT32);
    }
    tide_tensor_release(t);
    return t ? tide_node_builder_finish(b, err) : (tide_node_builder_free(b), NULL);
}

/* Enters and Merges, with the Merges' shapes set to the invariants. */
static tide_status open_variables(loop *l, const tide_output *vars)
{
    for (int k = 0; k < l->nv; k++) {
        tide_output init = k < l->n ? vars[k] : (tide_output){scalar_i32(l->g, 0, l->err), 0}; /* the counter: 0 */
        if (!init.node)
            return tide_error_code(l->err);
        if (!(l->enter[k] = enter_node(l, init)))
            return tide_error_code(l->err);
        tide_output pair[2] = {{l->enter[k], 0}, {l->enter[k], 0}}; /* the second: the back edge, closed later */
        tide_node_builder *b = tide_node_builder_new(l->g, "Merge", NULL);
        tide_node_builder_add_input_list(b, pair, 2);
        if (!(l->merge[k] = tide_node_builder_finish(b, l->err)))
            return tide_error_code(l->err);
        if (k < l->n && l->opts->shape_invariants) {
            const tide_shape *inv = &l->opts->shape_invariants[k], *s = &l->merge[k]->out_shapes[0];
            if (!tide_shape_compatible(inv, s)) {
                char a[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
                return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "the shape invariant %s of loop variable %d "
                                      "does not hold for its initial value '%s', of shape %s",
                                      tide_shape_format(inv, a, sizeof a), k, init.node->name, tide_shape_format(s, c, sizeof c));
            }
            l->merge[k]->out_shapes[0] = *inv;
        }
    }
    return TIDE_OK;
}

/* The user's condition (and the counter's), the LoopCond, the Switches and the body's inputs. */
static tide_status build_cond(loop *l, tide_loop_cond_fn cond, void *user)
{
    tide_output *vars = malloc(sizeof *vars * (size_t)l->nv);
    if (!vars)
        return tide_error_set(l->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int k = 0; k < l->nv; k++)
        vars[k] = (tide_output){l->merge[k], 0};
    tide_output pred = {NULL, 0};
    tide_status st = cond(l->g, user, vars, l->n, &pred, l->err);
    free(vars);
    if (st != TIDE_OK)
        return st;
    if (!pred.node || pred.node->graph != l->g || pred.index < 0 || pred.index >= pred.node->num_outputs)
        return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "the condition gave no output of a node of this graph");
    if (!(pred = tide__cf_capture(l->g, pred, l->err)).node)
        return tide_error_code(l->err);
    tide_dtype dt = pred.node->out_dtypes[pred.index];
    const tide_shape *s = &pred.node->out_shapes[pred.index];
    if (dt != TIDE_BOOL || (s->rank > 0 && tide_shape_num_elements(s) != 1)) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "the condition '%s' must be a bool scalar, not %s %s",
                              pred.node->name, tide_dtype_name(dt), tide_shape_format(s, buf, sizeof buf));
    }
    if (l->nv > l->n) { /* and the counter is below maximum_iterations */
        int64_t max = l->opts->maximum_iterations;
        tide_node *limit = scalar_i32(l->g, max > INT32_MAX ? INT32_MAX : (int32_t)max, l->err);
        tide_output less[2] = {{l->merge[l->n], 0}, {limit, 0}};
        tide_node *below = limit ? tide__cf_op(l->g, "Less", NULL, less, 2, l->err) : NULL;
        tide_output both[2] = {pred, {below, 0}};
        tide_node *and = below ? tide__cf_op(l->g, "LogicalAnd", NULL, both, 2, l->err) : NULL;
        if (!and)
            return tide_error_code(l->err);
        pred = (tide_output){and, 0};
    }
    tide_node *lc = tide__cf_op(l->g, "LoopCond", NULL, &pred, 1, l->err);
    for (int k = 0; lc && k < l->nv; k++) {
        tide_output in[2] = {{l->merge[k], 0}, {lc, 0}};
        if (!(l->sw[k] = tide__cf_op(l->g, "Switch", NULL, in, 2, l->err)) ||
            !(l->body_in[k] = tide__cf_op(l->g, "Identity", NULL, &(tide_output){l->sw[k], 1}, 1, l->err)))
            return tide_error_code(l->err);
    }
    return lc ? TIDE_OK : tide_error_code(l->err);
}

static tide_status check_next(loop *l, int k)
{
    tide_output nx = l->next[k];
    if (!nx.node || nx.node->graph != l->g || nx.index < 0 || nx.index >= nx.node->num_outputs)
        return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "the body's value %d is not an output of a node of this graph", k);
    tide_dtype want = l->merge[k]->out_dtypes[0], got = nx.node->out_dtypes[nx.index];
    if (want != got)
        return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "loop variable %d is %s when the loop starts, but the "
                              "body makes it %s ('%s')", k, tide_dtype_name(want), tide_dtype_name(got), nx.node->name);
    const tide_shape *have = &l->merge[k]->out_shapes[0], *now = &nx.node->out_shapes[nx.index];
    if (!tide_shape_compatible(have, now)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        tide_shape_format(have, a, sizeof a);
        tide_shape_format(now, b, sizeof b);
        if (l->opts->shape_invariants)
            return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "loop variable %d has shape %s after an iteration "
                                  "('%s'), outside its shape invariant %s", k, b, nx.node->name, a);
        return tide_error_set(l->err, TIDE_INVALID_ARGUMENT, "loop variable %d has shape %s when the loop starts and "
                              "%s after an iteration ('%s'): give it a shape invariant (shape_invariants, with unknown "
                              "dimensions where it changes)", k, a, b, nx.node->name);
    }
    return TIDE_OK;
}

/* The user's body (and the counter's increment), NextIterations, closed loops. */
static tide_status build_body(loop *l, tide_loop_body_fn body, void *user)
{
    tide_output *vars = malloc(sizeof *vars * (size_t)l->nv);
    if (!vars)
        return tide_error_set(l->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int k = 0; k < l->nv; k++)
        vars[k] = (tide_output){l->body_in[k], 0};
    for (int k = 0; k < l->n; k++)
        l->next[k] = (tide_output){NULL, 0};
    tide_status st = body(l->g, user, vars, l->n, l->next, l->err);
    if (st == TIDE_OK && l->nv > l->n) {
        tide_node *one = scalar_i32(l->g, 1, l->err);
        tide_output add[2] = {vars[l->n], {one, 0}};
        tide_node *inc = one ? tide__cf_op(l->g, "Add", NULL, add, 2, l->err) : NULL;
        st = inc ? TIDE_OK : tide_error_code(l->err);
        l->next[l->n] = (tide_output){inc, 0};
    }
    free(vars);
    for (int k = 0; st == TIDE_OK && k < l->nv; k++) {
        if ((st = check_next(l, k)) != TIDE_OK)
            break;
        if (!(l->next[k] = tide__cf_capture(l->g, l->next[k], l->err)).node) { /* a value from outside: entered */
            st = tide_error_code(l->err);
            break;
        }
        tide_node *nx = tide__cf_op(l->g, "NextIteration", NULL, &l->next[k], 1, l->err);
        st = nx ? tide_graph_close_loop(l->g, l->merge[k], 1, (tide_output){nx, 0}, l->err) : tide_error_code(l->err);
    }
    return st;
}

static tide_status check_args(tide_graph *g, tide_loop_cond_fn cond, tide_loop_body_fn body, const tide_output *vars,
                              int n, const tide_while_options *o, const tide_output *results, tide_error *err)
{
    if (!g || !cond || !body || !vars || !results || n < 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "while_loop: missing graph, condition, body, loop variables "
                              "(at least one) or results array");
    for (int k = 0; k < n; k++)
        if (!vars[k].node || vars[k].node->graph != g || vars[k].index < 0 || vars[k].index >= vars[k].node->num_outputs)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "while_loop: loop variable %d is not an output of a node "
                                  "of this graph", k);
    if (o->parallel_iterations < 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "while_loop: parallel_iterations must be at least 1, not %d",
                              o->parallel_iterations);
    if (o->maximum_iterations < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "while_loop: maximum_iterations must not be negative, not %lld",
                              (long long)o->maximum_iterations);
    return TIDE_OK;
}

tide_status tide_while_loop(tide_graph *g, tide_loop_cond_fn cond, tide_loop_body_fn body, void *user,
                            const tide_output *loop_vars, int n, const tide_while_options *opts, tide_output *results,
                            tide_error *err)
{
    return tide__while_loop(g, cond, body, user, loop_vars, n, opts, results, NULL, err);
}

tide_status tide__while_loop(tide_graph *g, tide_loop_cond_fn cond, tide_loop_body_fn body, void *user,
                             const tide_output *loop_vars, int n, const tide_while_options *opts, tide_output *results,
                             struct grad_loop *grad, tide_error *err)
{
    tide_while_options defaults;
    tide_while_options_init(&defaults);
    if (!opts)
        opts = &defaults;
    else if (opts->parallel_iterations == 0) {
        defaults = *opts;
        defaults.parallel_iterations = 10;
        opts = &defaults;
    }
    tide_status st = check_args(g, cond, body, loop_vars, n, opts, results, err);
    if (st != TIDE_OK)
        return st;
    loop l = {.g = g, .opts = opts, .n = n, .nv = n + (opts->maximum_iterations > 0), .err = err};
    graph_mark mark = tide__graph_mark(g);
    l.scope = opts->name ? tide__strdup(opts->name) : tide__unique_scope(g, "while");
    char *prefix = tide__graph_scope_prefix(g);
    l.frame = l.scope && prefix ? tide__asprintf("%s%s", prefix, l.scope) : NULL;
    free(prefix);
    l.enter = calloc((size_t)l.nv, sizeof *l.enter);
    l.merge = calloc((size_t)l.nv, sizeof *l.merge);
    l.sw = calloc((size_t)l.nv, sizeof *l.sw);
    l.body_in = calloc((size_t)l.nv, sizeof *l.body_in);
    l.next = calloc((size_t)l.nv, sizeof *l.next);
    if (!l.scope || !l.frame || !l.enter || !l.merge || !l.sw || !l.body_in || !l.next)
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_cf_context c = {.kind = TIDE_CF_WHILE, .parent = g->cf_context, .name = l.frame, .frame = l.frame,
                         .parallel_iterations = opts->parallel_iterations, .grad = grad};
    if (st == TIDE_OK) {
        tide_graph_push_scope(g, l.scope);
        c.first_id = g->num_nodes;
        st = open_variables(&l, loop_vars);
    }
    if (st == TIDE_OK) {
        c.pivot = l.merge[0]; /* constants of the condition: every iteration */
        g->cf_context = &c;
        st = build_cond(&l, cond, user);
    }
    if (st == TIDE_OK) {
        c.pivot = l.body_in[0]; /* constants of the body: every iteration that runs it */
        st = build_body(&l, body, user);
    }
    g->cf_context = c.parent;
    for (int k = 0; st == TIDE_OK && k < n; k++) {
        tide_node *e = tide__cf_op(g, "Exit", NULL, &(tide_output){l.sw[k], 0}, 1, err);
        if (!e)
            st = tide_error_code(err);
        else
            results[k] = (tide_output){e, 0};
    }
    if (st == TIDE_OK)
        tide_graph_pop_scope(g);
    else {
        tide__error_prefix(err, "while_loop '%s'", l.frame ? l.frame : "while");
        tide__graph_restore(g, mark);
    }
    free(c.captures);
    free(l.scope);
    free(l.frame);
    free(l.enter);
    free(l.merge);
    free(l.sw);
    free(l.body_in);
    free(l.next);
    return st;
}
