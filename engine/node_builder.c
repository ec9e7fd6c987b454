/* node_builder.c — building one node: collect op, name, inputs, control inputs, attrs and device,
 * then finish() checks everything against the op definition (binding, Ref inputs, device syntax,
 * shape inference) and only then adds the node. A failed finish leaves the graph untouched.
 *
 * Building is cheap enough for graphs of millions of nodes: the builder is one allocation (its op
 * and name copied behind it, a few inputs and control inputs held inline), finish formats nothing
 * unless a check fails, and the node is one allocation holding its arrays and strings (node_new). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { INLINE_ITEMS = 4,   /* inputs, groups and control inputs a builder holds without an allocation */
       STACK_INPUTS = 8 }; /* inputs whose dtypes, shapes and values finish keeps on the stack */

struct tide_node_builder {
    tide_graph *graph;
    const char *op, *name; /* copies, in text[]; name NULL when none was given */
    char *device;
    tide_output *inputs;
    int num_inputs, cap_inputs;
    int *groups;
    int num_groups, cap_groups;
    tide_node **control;
    int num_control, cap_control;
    tide_attrs *attrs;
    bool oom, flat;
    tide_output inline_inputs[INLINE_ITEMS];
    int inline_groups[INLINE_ITEMS];
    tide_node *inline_control[INLINE_ITEMS];
    char text[]; /* op '\0' name '\0' */
};

/* Room for `need` items in *items (inline_items first, then the heap). */
static bool grow(void **items, void *inline_items, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int c = *cap * 2;
    while (c < need)
        c *= 2;
    void *p = *items == inline_items ? malloc((size_t)c * size) : realloc(*items, (size_t)c * size);
    if (!p)
        return false;
    if (*items == inline_items)
        memcpy(p, inline_items, (size_t)*cap * size);
    *items = p;
    *cap = c;
    return true;
}

tide_node_builder *tide_node_builder_new(tide_graph *g, const char *op, const char *name)
{
    op = op ? op : "";
    size_t op_size = strlen(op) + 1, name_size = name ? strlen(name) + 1 : 0;
    tide_node_builder *b = calloc(1, sizeof *b + op_size + name_size);
    if (!b)
        return NULL;
    b->graph = g;
    b->op = memcpy(b->text, op, op_size);
    b->name = name ? memcpy(b->text + op_size, name, name_size) : NULL;
    b->inputs = b->inline_inputs;
    b->groups = b->inline_groups;
    b->control = b->inline_control;
    b->cap_inputs = b->cap_groups = b->cap_control = INLINE_ITEMS;
    b->attrs = tide_attrs_new();
    b->oom = !b->attrs;
    return b;
}

void tide_node_builder_free(tide_node_builder *b)
{
    if (!b)
        return;
    free(b->device);
    if (b->inputs != b->inline_inputs)
        free(b->inputs);
    if (b->groups != b->inline_groups)
        free(b->groups);
    if (b->control != b->inline_control)
        free(b->control);
    tide_attrs_free(b->attrs);
    free(b);
}

void tide_node_builder_add_input_list(tide_node_builder *b, const tide_output *ins, int n)
{
    if (!b || n < 0)
        return;
    if (!grow((void **)&b->inputs, b->inline_inputs, &b->cap_inputs, b->num_inputs + n, sizeof *b->inputs) ||
        !grow((void **)&b->groups, b->inline_groups, &b->cap_groups, b->num_groups + 1, sizeof *b->groups)) {
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
    if (!grow((void **)&b->control, b->inline_control, &b->cap_control, b->num_control + 1, sizeof *b->control)) {
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
    b->oom |= !b->device;
}

tide_attrs *tide_node_builder_attrs(tide_node_builder *b)
{
    return b ? b->attrs : NULL;
}

/* The default name of a node: its op's in lower case ("MatMul" -> "matmul"), made unique. */
static char *default_name(tide_graph *g, const tide_op_def *def)
{
    char base[128];
    size_t len = strnlen(def->name, sizeof base - 1);
    for (size_t i = 0; i < len; i++)
        base[i] = (char)tolower((unsigned char)def->name[i]);
    base[len] = 0;
    return tide_graph_unique_name(g, base);
}

/* The node's full name: the name given under the graph's scopes, or a unique one made from the op's.
 * Borrowed from the builder when no scope applies, else new in *made (the caller frees it); NULL when
 * out of memory. */
static const char *full_name(const tide_node_builder *b, const tide_op_def *def, char **made)
{
    *made = NULL;
    if (!b->name)
        return *made = default_name(b->graph, def);
    if (b->graph->num_scopes == 0)
        return b->name;
    char *prefix = tide__graph_scope_prefix(b->graph);
    *made = prefix ? tide__asprintf("%s%s", prefix, b->name) : NULL;
    free(prefix);
    return *made;
}

/* "node 'NAME' (OP)", the subject of every message about the node being built, cut to fit `size`.
 * Made for every node and read only when a check fails, so it is copied, not printed. */
static const char *describe(char *who, size_t size, const char *name, const char *op)
{
    const char *parts[] = {"node '", name, "' (", op, ")"};
    size_t at = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        size_t len = strnlen(parts[i], size - 1 - at);
        memcpy(who + at, parts[i], len);
        at += len;
    }
    who[at] = 0;
    return who;
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

/* What binding and shape inference read of a node's inputs: on the stack for a few inputs. */
typedef struct input_facts {
    tide_dtype *dtypes;
    tide_shape *shapes;
    const tide_tensor **values;
    tide_dtype stack_dtypes[STACK_INPUTS];
    tide_shape stack_shapes[STACK_INPUTS];
    const tide_tensor *stack_values[STACK_INPUTS];
} input_facts;

static void facts_clear(input_facts *f)
{
    if (f->dtypes != f->stack_dtypes) {
        free(f->dtypes);
        free(f->shapes);
        free(f->values);
    }
}

static bool facts_gather(input_facts *f, const tide_output *inputs, int n)
{
    f->dtypes = f->stack_dtypes;
    f->shapes = f->stack_shapes;
    f->values = f->stack_values;
    if (n > STACK_INPUTS) {
        f->dtypes = calloc((size_t)n, sizeof *f->dtypes);
        f->shapes = calloc((size_t)n, sizeof *f->shapes);
        f->values = calloc((size_t)n, sizeof *f->values);
        if (!f->dtypes || !f->shapes || !f->values) {
            facts_clear(f);
            return false;
        }
    }
    for (int i = 0; i < n; i++) {
        tide_output in = inputs[i];
        f->dtypes[i] = in.node->out_dtypes[in.index];
        f->shapes[i] = in.node->out_shapes[in.index];
        f->values[i] = tide__node_const_value(in.node);
    }
    return true;
}

static size_t align_up(size_t at, size_t align)
{
    return (at + align - 1) / align * align;
}

/* A node with room for its inputs, control inputs, output shapes and dtypes, name and requested device
 * in the same allocation, which block_size covers: tide__node_free frees with the node what lies in
 * it, and on their own the pieces replaced since (a rename, a loop closed). No inputs or no control
 * inputs leave those arrays NULL. */
static tide_node *node_new(int num_inputs, int num_control, int num_outputs, const char *name, const char *device)
{
    size_t inputs_at = align_up(sizeof(tide_node), _Alignof(tide_output));
    size_t control_at = align_up(inputs_at + sizeof(tide_output) * (size_t)num_inputs, _Alignof(tide_node *));
    size_t shapes_at = align_up(control_at + sizeof(tide_node *) * (size_t)num_control, _Alignof(tide_shape));
    size_t dtypes_at = align_up(shapes_at + sizeof(tide_shape) * (size_t)num_outputs, _Alignof(tide_dtype));
    size_t name_at = dtypes_at + sizeof(tide_dtype) * (size_t)num_outputs;
    size_t name_size = strlen(name) + 1, device_at = name_at + name_size, device_size = strlen(device) + 1;
    char *block = calloc(1, device_at + device_size);
    if (!block)
        return NULL;
    tide_node *node = (tide_node *)block;
    node->block_size = device_at + device_size;
    node->inputs = num_inputs ? (tide_output *)(block + inputs_at) : NULL;
    node->control = num_control ? (tide_node **)(block + control_at) : NULL;
    node->out_shapes = (tide_shape *)(block + shapes_at);
    node->out_dtypes = (tide_dtype *)(block + dtypes_at);
    node->name = memcpy(block + name_at, name, name_size);
    node->requested_device = memcpy(block + device_at, device, device_size);
    return node;
}

/* The node, its checks passed: it takes the builder's attrs and copies the rest. */
static void node_fill(tide_node *node, tide_node_builder *b, const tide_op_def *def, const tide_binding *bind)
{
    node->op = def;
    node->attrs = b->attrs;
    b->attrs = NULL;
    node->num_inputs = b->num_inputs;
    if (b->num_inputs)
        memcpy(node->inputs, b->inputs, sizeof *node->inputs * (size_t)b->num_inputs);
    memcpy(node->arg_start, bind->arg_start, sizeof node->arg_start);
    node->num_control = b->num_control;
    if (b->num_control)
        memcpy(node->control, b->control, sizeof *node->control * (size_t)b->num_control);
    node->num_outputs = bind->num_outputs;
    if (bind->num_outputs)
        memcpy(node->out_dtypes, bind->output_dtypes, sizeof *node->out_dtypes * (size_t)bind->num_outputs);
    atomic_init(&node->assigned_device, NULL);
    atomic_init(&node->used_by_plan, false);
}

/* Everything that can fail, before anything is added. On success *out is the new node. */
static tide_status build(tide_node_builder *b, const tide_op_def *def, const char *name, tide_node **out,
                         tide_error *err)
{
    char who[600];
    describe(who, sizeof who, name, def->name);
    tide_status st = check_inputs(b, who, err);
    if (st != TIDE_OK)
        return st;
    int n = b->num_inputs;
    input_facts facts;
    if (!facts_gather(&facts, b->inputs, n))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_binding bind;
    st = tide__bind(def, who, facts.dtypes, n, b->flat ? NULL : b->groups, b->num_groups, b->attrs, &bind, err);
    if (st == TIDE_OK)
        st = check_refs(def, bind.arg_start, b, who, err);
    if (st == TIDE_OK && b->graph->cf_context) /* inside a cond or loop being built: bring values in */
        st = tide__cf_capture_inputs(b->graph, def, bind.arg_start, who, b->inputs, n, err);
    const char *device = b->device ? b->device : tide__graph_default_device(b->graph);
    tide_device_spec spec;
    if (st == TIDE_OK && (st = tide_device_spec_parse(device, &spec, err)) != TIDE_OK)
        tide__error_prefix(err, "%s", who);
    tide_node *node = NULL;
    if (st == TIDE_OK && !(node = node_new(n, b->num_control, bind.num_outputs, name, device)))
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK)
        st = tide__infer_shapes(def, who, b->attrs, facts.shapes, facts.dtypes, facts.values, n, bind.num_outputs,
                                node->out_shapes, err);
    if (st == TIDE_OK && bind.num_outputs == 1)
        node->folded_value = tide__fold_value(def, b->attrs, facts.shapes, facts.values, n, &node->out_shapes[0]);
    if (st == TIDE_OK) {
        node_fill(node, b, def, &bind);
        *out = node;
        node = NULL;
    }
    tide__binding_clear(&bind);
    tide__node_free(node);
    facts_clear(&facts);
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
    char *name = default_name(b->graph, def);
    if (!name)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide__node_free_piece(node, node->name);
    node->name = name;
    return TIDE_OK;
}

/* Inside a cond or loop being built: control inputs from outside a loop are refused, and a node with
 * no input from inside is tied to the branch or iteration. */
static tide_status check_context_controls(tide_node_builder *b, const tide_op_def *def, const char *name,
                                          tide_error *err)
{
    char who[600];
    tide_node *tie = NULL;
    tide_status st = tide__cf_check_controls(b->graph, describe(who, sizeof who, name, def->name), b->num_inputs,
                                             b->control, b->num_control, &tie, err);
    if (st == TIDE_OK && tie) {
        tide_node_builder_add_control_input(b, tie);
        if (b->oom)
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    return st;
}

tide_node *tide_node_builder_finish(tide_node_builder *b, tide_error *err)
{
    if (!b) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "node builder is NULL");
        return NULL;
    }
    tide_node *node = NULL;
    char *made_name = NULL;
    const char *name = NULL;
    const tide_op_def *def = NULL;
    tide_status st = TIDE_OK;
    if (b->oom || !tide__graph_reserve(b->graph))
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory building a %s node", b->op);
    if (st == TIDE_OK && !(def = tide__registry_find(b->op))) {
        char hint[128];
        st = tide_error_set(err, TIDE_NOT_FOUND, "unknown op '%s'%s", b->op,
                            tide__registry_suggest(b->op, hint, sizeof hint));
    }
    if (st == TIDE_OK && !(name = full_name(b, def, &made_name)))
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK)
        st = tide__check_node_name(name, err);
    if (st == TIDE_OK && tide_graph_node(b->graph, name)) {
        tide_node *other = tide_graph_node(b->graph, name);
        st = tide_error_set(err, TIDE_ALREADY_EXISTS, "node name '%s' is already used (by a %s node)", name,
                            other->op->name);
    }
    /* A constant built inside a cond or loop is made outside it: a loop then enters it once instead of
     * running it in every iteration, and a branch switches it in only where it is read. */
    bool hoist = st == TIDE_OK && b->graph->cf_context && b->num_inputs == 0 && b->num_control == 0 && strcmp(def->name, "Const") == 0;
    struct tide_cf_context *context = b->graph->cf_context;
    if (hoist)
        b->graph->cf_context = NULL;
    if (st == TIDE_OK && b->graph->cf_context)
        st = check_context_controls(b, def, name, err);
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
    free(made_name);
    tide_node_builder_free(b);
    return st == TIDE_OK ? node : NULL;
}
