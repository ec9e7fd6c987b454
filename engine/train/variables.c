/* variables.c — variables as the training API sees them: a Variable node paired with its initializer
 * (an Assign "<name>/init" marked `_initializer = true`), the listing of a graph's variables, the
 * "init" NoOp that runs every initializer, the global step, and the slot variables optimizers keep
 * beside a variable ("<var>/Momentum", ...).
 *
 * Each call builds its nodes with tide_node_builder_* and, when any of them fails, rolls the graph
 * back to where it was, so a failed call leaves g unchanged. Names: a variable takes the current name
 * scope like any node; the global step and slots are named from the graph's root whatever scope the
 * caller is in ("global_step", "layer1/w/Momentum"), which is why this file sets the scope stack aside
 * (it reaches into the graph's internals for that). */
#include <stdlib.h>
#include <string.h>

#include "train.h"

#define INIT_ATTR "_initializer"
#define TRAINABLE_ATTR "_trainable"

/* ---------------------------------------------------------------- scopes */

/* The scope stack set aside while nodes are built at the root. */
typedef struct saved_scopes {
    char **items;
    int n, cap;
} saved_scopes;

static saved_scopes enter_root(tide_graph *g)
{
    saved_scopes s = {g->scopes, g->num_scopes, g->cap_scopes};
    g->scopes = NULL;
    g->num_scopes = g->cap_scopes = 0;
    return s;
}

static void leave_root(tide_graph *g, saved_scopes s)
{
    while (g->num_scopes > 0)
        tide_graph_pop_scope(g);
    free(g->scopes);
    g->scopes = s.items;
    g->num_scopes = s.n;
    g->cap_scopes = s.cap;
}

/* full minus the current scope prefix: the name to give a builder so that the node is called full. */
static const char *relative_name(tide_graph *g, const char *full)
{
    char *prefix = tide__graph_scope_prefix(g);
    size_t len = prefix ? strlen(prefix) : 0;
    const char *rel = prefix && strncmp(full, prefix, len) == 0 ? full + len : full;
    free(prefix);
    return rel;
}

/* ---------------------------------------------------------------- variables */

static bool attr_is_true(const tide_node *n, const char *attr)
{
    bool v = false;
    return tide_attrs_get_bool(tide_node_attrs(n), attr, &v) && v;
}

static tide_node *build_variable(tide_graph *g, const char *name, tide_dtype dt, const tide_shape *shape,
                                 bool trainable, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Variable", name);
    tide_attrs *attrs = tide_node_builder_attrs(b);
    tide_attrs_set_type(attrs, "dtype", dt);
    tide_attrs_set_shape(attrs, "shape", shape);
    tide_attrs_set_bool(attrs, TRAINABLE_ATTR, trainable);
    return tide_node_builder_finish(b, err);
}

static tide_node *build_initializer(tide_graph *g, tide_node *var, tide_output initial_value, tide_error *err)
{
    char *name = tide__asprintf("%s/init", relative_name(g, tide_node_name(var)));
    if (!name) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    tide_node_builder *b = tide_node_builder_new(g, "Assign", name);
    free(name);
    tide_node_builder_add_input(b, (tide_output){var, 0});
    tide_node_builder_add_input(b, initial_value);
    tide_attrs_set_bool(tide_node_builder_attrs(b), INIT_ATTR, true);
    return tide_node_builder_finish(b, err);
}

tide_node *tide_variable_new(tide_graph *g, const char *name, tide_output initial_value, bool trainable,
                             tide_error *err)
{
    const char *who = name ? name : "(unnamed)";
    if (!g) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "variable '%s': the graph is NULL", who);
        return NULL;
    }
    if (!initial_value.node || initial_value.index < 0 ||
        initial_value.index >= tide_node_num_outputs(initial_value.node)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "variable '%s': the initial value is %s", who,
                       initial_value.node ? "an output the node does not have" : "NULL");
        return NULL;
    }
    tide_dtype dt = tide_node_output_dtype(initial_value.node, initial_value.index);
    tide_shape shape = tide_node_output_shape(initial_value.node, initial_value.index);
    if (!tide_shape_is_fully_defined(&shape)) {
        char s[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "variable '%s': the initial value '%s:%d' has shape %s, which is not fully defined "
                       "(a variable's shape must be known when the graph is built)",
                       who, tide_node_name(initial_value.node), initial_value.index,
                       tide_shape_format(&shape, s, sizeof s));
        return NULL;
    }
    int before = tide_graph_num_nodes(g);
    tide_node *var = build_variable(g, name, dt, &shape, trainable, err);
    if (var && !build_initializer(g, var, initial_value, err)) {
        tide_graph_rollback(g, before, NULL);
        var = NULL;
    }
    return var;
}

int tide_graph_variables(const tide_graph *g, bool trainable_only, tide_node **out, int max)
{
    int count = 0;
    for (int i = 0; g && i < tide_graph_num_nodes(g); i++) {
        tide_node *n = tide_graph_node_at(g, i);
        if (strcmp(tide_node_op(n), "Variable") != 0 || (trainable_only && !attr_is_true(n, TRAINABLE_ATTR)))
            continue;
        if (out && count < max)
            out[count] = n;
        count++;
    }
    return count;
}

tide_node *tide_global_variables_initializer(tide_graph *g, tide_error *err)
{
    if (!g) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_global_variables_initializer: the graph is NULL");
        return NULL;
    }
    char *name = tide_graph_unique_name(g, "init");
    if (!name) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", relative_name(g, name));
    free(name);
    for (int i = 0; i < tide_graph_num_nodes(g); i++)
        if (attr_is_true(tide_graph_node_at(g, i), INIT_ATTR))
            tide_node_builder_add_control_input(b, tide_graph_node_at(g, i));
    return tide_node_builder_finish(b, err);
}

/* ---------------------------------------------------------------- global step and slots */

static bool is_integer_scalar_variable(const tide_node *n)
{
    tide_shape s = tide_node_output_shape(n, 0);
    tide_dtype dt = tide_node_output_dtype(n, 0);
    return strcmp(tide_node_op(n), "Variable") == 0 && s.rank == 0 && (dt == TIDE_INT64 || dt == TIDE_INT32);
}

tide_node *tide_global_step(tide_graph *g, tide_error *err)
{
    if (!g) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_global_step: the graph is NULL");
        return NULL;
    }
    tide_node *existing = tide_graph_node(g, "global_step");
    if (existing) {
        if (is_integer_scalar_variable(existing))
            return existing;
        char s[TIDE_SHAPE_STR_MAX];
        tide_shape shape = tide_node_output_shape(existing, 0);
        tide_error_set(err, TIDE_ALREADY_EXISTS,
                       "the node 'global_step' exists but is not an integer scalar Variable (it is a %s of %s %s)",
                       tide_node_op(existing), tide_dtype_name(tide_node_output_dtype(existing, 0)),
                       tide_shape_format(&shape, s, sizeof s));
        return NULL;
    }
    int before = tide_graph_num_nodes(g);
    saved_scopes saved = enter_root(g);
    int64_t zero = 0;
    tide_tensor *t = tide_tensor_new_scalar(TIDE_INT64, &zero, err);
    tide_node *init = NULL;
    if (t) {
        tide_node_builder *b = tide_node_builder_new(g, "Const", "global_step/initial_value");
        tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_INT64);
        tide_tensor_release(t);
        init = tide_node_builder_finish(b, err);
    }
    tide_node *step = init ? tide_variable_new(g, "global_step", (tide_output){init, 0}, false, err) : NULL;
    leave_root(g, saved);
    if (!step)
        tide_graph_rollback(g, before, NULL);
    return step;
}

tide_node *tide__train_slot(tide_graph *g, const tide_node *var, const char *slot, double value, tide_error *err)
{
    int before = tide_graph_num_nodes(g);
    saved_scopes saved = enter_root(g);
    char *base = tide__asprintf("%s/%s", tide_node_name(var), slot);
    char *name = base ? tide_graph_unique_name(g, base) : NULL;
    char *scope = name ? tide__asprintf("%s/Initializer", name) : NULL;
    tide_node *slot_var = NULL;
    if (!scope) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        tide_initializer init;
        tide_initializer_init(&init, TIDE_INIT_CONSTANT);
        init.value = value;
        tide_shape shape = tide_node_output_shape(var, 0);
        tide_graph_push_scope(g, scope);
        tide_output iv = tide_initializer_build(g, &init, tide_node_output_dtype(var, 0), &shape, err);
        tide_graph_pop_scope(g);
        slot_var = iv.node ? tide_variable_new(g, name, iv, false, err) : NULL;
    }
    leave_root(g, saved);
    free(base);
    free(name);
    free(scope);
    if (!slot_var)
        tide_graph_rollback(g, before, NULL);
    return slot_var;
}
