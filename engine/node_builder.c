/* node_builder.c — building one node: collect op, name, inputs, control inputs, attrs and device,
 * then finish() checks everything against the op definition (binding, Ref inputs, device syntax,
 * shape inference) and only then adds the node. A failed finish leaves the graph untouched. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct tide_node_builder {
    tide_graph *graph;
    char *op, *name, *device;
    tide_output *inputs;
    int num_inputs, cap_inputs;
    int *groups;
    int num_groups, cap_groups;
    tide_node **control;
    int num_control, cap_control;
    tide_attrs *attrs;
    bool oom, flat;
};

static bool grow(void **items, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int c = *cap ? *cap * 2 : 4;
    while (c < need)
        c *= 2;
    void *p = realloc(*items, (size_t)c * size);
    if (!p)
        return false;
    *items = p;
    *cap = c;
    return true;
}

tide_node_builder *tide_node_builder_new(tide_graph *g, const char *op, const char *name)
{
    tide_node_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->graph = g;
    b->op = tide__strdup(op ? op : "");
    b->name = name ? tide__strdup(name) : NULL;
    b->attrs = tide_attrs_new();
    if (!b->op || !b->attrs || (name && !b->name))
        b->oom = true;
    return b;
}

void tide_node_builder_free(tide_node_builder *b)
{
    if (!b)
        return;
    free(b->op);
    free(b->name);
    free(b->device);
    free(b->inputs);
    free(b->groups);
    free(b->control);
    tide_attrs_free(b->attrs);
    free(b);
}

void tide_node_builder_add_input_list(tide_node_builder *b, const tide_output *ins, int n)
{
    if (!b || n < 0)
        return;
    if (!grow((void **)&b->inputs, &b->cap_inputs, b->num_inputs + n, sizeof *b->inputs) ||
        !grow((void **)&b->groups, &b->cap_groups, b->num_groups + 1, sizeof *b->groups)) {
        b->oom = true;
        return;
    }
    for (int i = 0; i < n; i++)
        b->inputs[b->num_inputs++] = ins[i];
    b->groups[b->num_groups++] = n;
}

void tide_node_builder_add_input(tide_node_builder *b, tide_output in)
{
    tide_node_builder_add_input_list(b, &in, 1);
}

void tide_node_builder_add_inputs_flat(tide_node_builder *b, const tide_output *ins, int n)
{
    if (!b)
        return;
    b->flat = true;
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, ins[i]);
}

void tide_node_builder_add_control_input(tide_node_builder *b, tide_node *n)
{
    if (!b)
        return;
    if (!grow((void **)&b->control, &b->cap_control, b->num_control + 1, sizeof *b->control)) {
        b->oom = true;
        return;
    }
    b->control[b->num_control++] = n;
}

void tide_node_builder_set_device(tide_node_builder *b, const char *spec)
{
    if (!b)
        return;
    free(b->device);
    b->device = tide__strdup(spec ? spec : "");
}

tide_attrs *tide_node_builder_attrs(tide_node_builder *b)
{
    return b ? b->attrs : NULL;
}

/* "MatMul" -> "matmul": the default base name of a node. */
static char *default_base(const char *op)
{
    char *s = tide__strdup(op);
    for (char *c = s; c && *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return s;
}

tide_status tide__check_node_name(const char *name, tide_error *err)
{
    if (!name[0])
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a node name cannot be empty");
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '/' || *c == '-' || *c == '.'))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "bad node name '%s': use letters, digits, '_', '-', '.' and '/' (scopes)", name);
    if (name[0] == '/' || name[strlen(name) - 1] == '/' || strstr(name, "//"))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "bad node name '%s': empty scope", name);
    return TIDE_OK;
}

static tide_status check_inputs(const tide_node_builder *b, const char *who, tide_error *err)
{
    for (int i = 0; i < b->num_inputs; i++) {
        tide_output in = b->inputs[i];
        if (!in.node)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: input %d is NULL", who, i);
        if (in.node->graph != b->graph)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: input %d ('%s') belongs to another graph",
                                  who, i, in.node->name);
        if (in.index < 0 || in.index >= in.node->num_outputs)
            return tide_error_set(err, TIDE_OUT_OF_RANGE, "%s: input %d asks for output %d of '%s' (%s), which has %d",
                                  who, i, in.index, in.node->name, in.node->op->name, in.node->num_outputs);
    }
    for (int i = 0; i < b->num_control; i++)
        if (!b->control[i] || b->control[i]->graph != b->graph)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: control input %d is not a node of this graph",
                                  who, i);
    return TIDE_OK;
}

static tide_status check_refs(const tide_op_def *def, const int *arg_start, const tide_node_builder *b,
                              const char *who, tide_error *err)
{
    for (int a = 0; a < def->num_inputs; a++) {
        if (!def->inputs[a].is_ref)
            continue;
        for (int i = arg_start[a]; i < arg_start[a + 1]; i++) {
            const tide_node *src = b->inputs[i].node;
            if (strcmp(src->op->name, "Variable") != 0)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "%s: input '%s' must come from a Variable, got '%s' (%s)", who,
                                      def->inputs[a].name, src->name, src->op->name);
        }
    }
    return TIDE_OK;
}

const tide_tensor *tide__node_const_value(const tide_node *n)
{
    tide_tensor *t = NULL;
    if (strcmp(n->op->name, "Const") == 0)
        tide_attrs_get_tensor(n->attrs, "value", &t);
    return t ? t : n->folded_value;
}

/* Everything that can fail, before anything is added. On success *out is the new node. */
static tide_status build(tide_node_builder *b, const tide_op_def *def, const char *name, tide_node **out,
                         tide_error *err)
{
    char who[600];
    snprintf(who, sizeof who, "node '%s' (%s)", name, def->name);
    tide_status st = check_inputs(b, who, err);
    if (st != TIDE_OK)
        return st;
    int n = b->num_inputs;
    tide_dtype *dts = calloc((size_t)n + 1, sizeof *dts);
    tide_shape *shapes = calloc((size_t)n + 1, sizeof *shapes);
    const tide_tensor **values = calloc((size_t)n + 1, sizeof *values);
    tide_node *node = calloc(1, sizeof *node);
    tide_binding bind = {0};
    if (!dts || !shapes || !values || !node)
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; st == TIDE_OK && i < n; i++) {
        tide_output in = b->inputs[i];
        dts[i] = in.node->out_dtypes[in.index];
        shapes[i] = in.node->out_shapes[in.index];
        values[i] = tide__node_const_value(in.node);
    }
    if (st == TIDE_OK)
        st = tide__bind(def, who, dts, n, b->flat ? NULL : b->groups, b->num_groups, b->attrs, &bind, err);
    if (st == TIDE_OK)
        st = check_refs(def, bind.arg_start, b, who, err);
    if (st == TIDE_OK && b->graph->cf_context) /* inside a cond or loop being built: bring values in */
        st = tide__cf_capture_inputs(b->graph, def, bind.arg_start, who, b->inputs, n, err);
    const char *device = b->device ? b->device : tide__graph_default_device(b->graph);
    tide_device_spec spec;
    if (st == TIDE_OK && (st = tide_device_spec_parse(device, &spec, err)) != TIDE_OK)
        tide__error_prefix(err, "%s", who);
    if (st == TIDE_OK) {
        node->out_shapes = calloc((size_t)bind.num_outputs + 1, sizeof *node->out_shapes);
        if (!node->out_shapes)
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (st == TIDE_OK)
        st = tide__infer_shapes(def, who, b->attrs, shapes, dts, values, n, bind.num_outputs,
                                node->out_shapes, err);
    if (st == TIDE_OK && bind.num_outputs == 1)
        node->folded_value = tide__fold_value(def, b->attrs, shapes, values, n, &node->out_shapes[0]);
    if (st == TIDE_OK) {
        node->name = tide__strdup(name);
        node->op = def;
        node->attrs = b->attrs;
        b->attrs = NULL;
        node->num_inputs = n;
        node->inputs = b->inputs;
        b->inputs = NULL;
        memcpy(node->arg_start, bind.arg_start, sizeof node->arg_start);
        node->num_control = b->num_control;
        node->control = b->control;
        b->control = NULL;
        node->num_outputs = bind.num_outputs;
        node->out_dtypes = bind.output_dtypes;
        bind.output_dtypes = NULL;
        node->requested_device = tide__strdup(device);
        atomic_init(&node->assigned_device, NULL);
        atomic_init(&node->used_by_plan, false);
        *out = node;
        node = NULL;
    }
    tide__binding_clear(&bind);
    tide__node_free(node);
    free(dts);
    free(shapes);
    free(values);
    return st;
}

/* Building a node inside a cond or loop may make others first (the Enters or Switches that bring its
 * inputs in), which may take the unique name it had chosen: a chosen name is chosen again then; a
 * name the caller gave is refused as any name already in use. */
static tide_status rename_if_taken(tide_node_builder *b, const tide_op_def *def, tide_node *node, tide_error *err)
{
    const tide_node *other = tide_graph_node(b->graph, node->name);
    if (b->name)
        return tide_error_set(err, TIDE_ALREADY_EXISTS, "node name '%s' is already used (by a %s node)", node->name,
                              other->op->name);
    char *base = default_base(def->name);
    char *name = base ? tide_graph_unique_name(b->graph, base) : NULL;
    free(base);
    if (!name)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    free(node->name);
    node->name = name;
    return TIDE_OK;
}

tide_node *tide_node_builder_finish(tide_node_builder *b, tide_error *err)
{
    if (!b) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "node builder is NULL");
        return NULL;
    }
    tide_node *node = NULL;
    char *name = NULL;
    const tide_op_def *def = NULL;
    tide_status st = TIDE_OK;
    if (b->oom || !tide__graph_reserve(b->graph))
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory building a %s node", b->op);
    if (st == TIDE_OK && !(def = tide__registry_find(b->op))) {
        char hint[128];
        st = tide_error_set(err, TIDE_NOT_FOUND, "unknown op '%s'%s", b->op,
                            tide__registry_suggest(b->op, hint, sizeof hint));
    }
    if (st == TIDE_OK) {
        if (b->name) {
            char *prefix = tide__graph_scope_prefix(b->graph);
            name = prefix ? tide__asprintf("%s%s", prefix, b->name) : NULL;
            free(prefix);
        } else {
            char *base = default_base(def->name);
            name = base ? tide_graph_unique_name(b->graph, base) : NULL;
            free(base);
        }
        if (!name)
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (st == TIDE_OK)
        st = tide__check_node_name(name, err);
    if (st == TIDE_OK && tide_graph_node(b->graph, name)) {
        tide_node *other = tide_graph_node(b->graph, name);
        st = tide_error_set(err, TIDE_ALREADY_EXISTS, "node name '%s' is already used (by a %s node)", name,
                            other->op->name);
    }
    /* A constant built inside a cond or loop is made outside it: a loop then enters it once instead of
     * running it in every iteration, and a branch switches it in only where it is read. */
    bool hoist = b->graph->cf_context && b->num_inputs == 0 && b->num_control == 0 && strcmp(def->name, "Const") == 0;
    struct tide_cf_context *context = b->graph->cf_context;
    if (hoist)
        b->graph->cf_context = NULL;
    if (st == TIDE_OK && b->graph->cf_context) {
        char who[600];
        snprintf(who, sizeof who, "node '%s' (%s)", name, def->name);
        st = tide__cf_check_controls(b->graph, who, b->num_inputs, &b->control, &b->num_control, &b->cap_control, err);
    }
    if (st == TIDE_OK)
        st = build(b, def, name, &node, err);
    b->graph->cf_context = context;
    if (st == TIDE_OK && tide_graph_node(b->graph, name) && (st = rename_if_taken(b, def, node, err)) != TIDE_OK) {
        tide__node_free(node);
        node = NULL;
    }
    if (st == TIDE_OK) {
        node->cf_hoisted = hoist;
        tide__graph_insert(b->graph, node);
    }
    free(name);
    tide_node_builder_free(b);
    return st == TIDE_OK ? node : NULL;
}
