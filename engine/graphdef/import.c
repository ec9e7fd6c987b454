/* import.c — a GraphDef into a tide graph, as tf.import_graph_def does it: node names (under an
 * optional scope), data inputs "node:1" and control inputs "^node", an input map that replaces the
 * GraphDef's tensors by outputs already in the graph, attrs converted by the types the op gives them,
 * requested devices, and `_class` colocation ("loc:@node") as tide's `_colocate_with`.
 *
 * The import is atomic. Everything that can be checked on the GraphDef alone is checked first (names,
 * ops — every unknown op named in one message —, inputs, the input map); then the nodes are built in
 * dependency order (inputs first; the GraphDef's own order otherwise, so a graph tide exported comes
 * back in its creation order), each by a node builder that checks it against its op; the first failure
 * rolls the graph back to what it was. The ordering is an explicit-stack depth-first search, so that a
 * GraphDef of a hundred thousand chained nodes does not exhaust the C stack.
 *
 * A loop's back edge (a Merge reading a NextIteration, control flow v1) is the one input that may come
 * from a node built later: the Merge is built with its other input standing in, and the edge is closed
 * (tide_graph_close_loop) once everything is built; any other cycle is an error that names it.
 *
 * TensorFlow op names that tide spells differently are mapped by a small table (import_aliases),
 * used only when the registry lacks the TensorFlow name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphdef_internal.h"

/* TensorFlow 1.x op -> the tide op with the same inputs, attrs and semantics. */
static const struct {
    const char *tf, *tide;
} import_aliases[] = {
    {"VariableV2", "Variable"},             /* TensorFlow's Variable and VariableV2 differ only in name */
    {"RandomStandardNormal", "RandomNormal"}, /* tf.random.normal's op: mean 0, stddev 1 */
};

typedef enum node_state { NODE_NEW = 0, NODE_OPEN = 1, NODE_BUILT = 2 } node_state;

typedef struct import_node {
    const Tensorflow__NodeDef *def;
    const char *op;          /* the tide op; NULL when unknown */
    tide_op_info info;
    node_state state;
    int stack_at;            /* while open: its place on the ordering stack */
    tide_node *built;
} import_node;

/* A loop's back edge, closed once every node is built: data input `input` of the Merge `merge` reads
 * output `index` of the NextIteration `next` (node indices of the GraphDef). */
typedef struct back_edge {
    int merge, input, next, index;
} back_edge;

typedef struct importer {
    tide_graph *g;
    const Tensorflow__GraphDef *gd;
    const char *source;
    const char *scope;       /* "" or "name/" */
    char *graph_prefix;      /* the graph's own scope prefix ("" or "outer/"), which builders prepend */
    const tide_graphdef_mapping *map;
    int num_map;
    bool clear_devices;
    import_node *nodes;
    int num_nodes;
    int *by_name;            /* node indices sorted by name */
    back_edge *loops;        /* back edges waiting for their NextIteration */
    int num_loops, cap_loops;
    tide_error *err;
} importer;

void tide_graphdef_import_options_init(tide_graphdef_import_options *opts)
{
    memset(opts, 0, sizeof *opts);
}

static tide_status fail(importer *im, tide_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tide_status fail(importer *im, tide_status code, const char *fmt, ...)
{
    char *message = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&message, fmt, ap) < 0)
        message = NULL;
    va_end(ap);
    tide_error_set(im->err, code, "%s: %s", im->source, message ? message : "out of memory");
    free(message);
    return code;
}

/* ---------------------------------------------------------------- names */

static const importer *sort_context;

static int by_name_cmp(const void *a, const void *b)
{
    return strcmp(sort_context->nodes[*(const int *)a].def->name, sort_context->nodes[*(const int *)b].def->name);
}

/* The node named by name[0..len), or -1. */
static int find_node(const importer *im, const char *name, size_t len)
{
    int lo = 0, hi = im->num_nodes - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const char *other = im->nodes[im->by_name[mid]].def->name;
        int c = strncmp(name, other, len);
        if (c == 0 && other[len])
            c = -1;
        if (c == 0)
            return im->by_name[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == '/';
}

static tide_status check_names(importer *im)
{
    for (int i = 0; i < im->num_nodes; i++) {
        const char *name = im->nodes[i].def->name;
        const char *bad = name;
        while (*bad && name_char_ok(*bad))
            bad++;
        if (!name[0])
            return fail(im, TIDE_INVALID_ARGUMENT, "node %d (op %s) has no name", i, im->nodes[i].def->op);
        if (*bad || name[0] == '/' || name[strlen(name) - 1] == '/' || strstr(name, "//"))
            return fail(im, TIDE_INVALID_ARGUMENT, "node name '%s' is not one tide can hold (letters, digits, "
                        "'_', '-', '.' and '/' between scopes)", name);
        im->by_name[i] = i;
    }
    sort_context = im;
    qsort(im->by_name, (size_t)im->num_nodes, sizeof *im->by_name, by_name_cmp);
    for (int i = 1; i < im->num_nodes; i++) {
        const char *a = im->nodes[im->by_name[i - 1]].def->name, *b = im->nodes[im->by_name[i]].def->name;
        if (strcmp(a, b) == 0)
            return fail(im, TIDE_INVALID_ARGUMENT, "two nodes are named '%s' (nodes %d and %d)", a,
                        im->by_name[i - 1], im->by_name[i]);
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ops */

static const char *resolve_op(const char *tf_op, tide_op_info *info)
{
    if (tide_registry_op_info(tf_op, info))
        return info->name;
    for (size_t i = 0; i < sizeof import_aliases / sizeof *import_aliases; i++)
        if (strcmp(import_aliases[i].tf, tf_op) == 0 && tide_registry_op_info(import_aliases[i].tide, info))
            return info->name;
    return NULL;
}

static bool is_library_function(const importer *im, const char *op)
{
    const Tensorflow__FunctionDefLibrary *lib = im->gd->library;
    for (size_t i = 0; lib && i < lib->n_function; i++)
        if (lib->function[i]->signature && strcmp(lib->function[i]->signature->name, op) == 0)
            return true;
    return false;
}

static bool is_unknown_op(const importer *im, int i, const char *op)
{
    return !im->nodes[i].op && strcmp(im->nodes[i].def->op, op) == 0;
}

/* One message naming every unknown op, a node that uses it and whether more do. */
static tide_status check_ops(importer *im)
{
    for (int i = 0; i < im->num_nodes; i++)
        im->nodes[i].op = resolve_op(im->nodes[i].def->op, &im->nodes[i].info);
    char *list = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&list, &len);
    if (!out)
        return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int unknown = 0;
    for (int i = 0; i < im->num_nodes; i++) {
        const char *op = im->nodes[i].def->op;
        bool first_use = is_unknown_op(im, i, op);
        for (int k = 0; k < i && first_use; k++)
            first_use = !is_unknown_op(im, k, op);
        if (!first_use)
            continue;
        bool more = false;
        for (int k = i + 1; k < im->num_nodes && !more; k++)
            more = is_unknown_op(im, k, op);
        fprintf(out, "%s%s (node '%s'%s%s)", unknown++ ? ", " : "", op, im->nodes[i].def->name,
                more ? " and others" : "",
                is_library_function(im, op) ? "; a function of the GraphDef's library: tide does not run functions" : "");
    }
    bool ok = fclose(out) == 0;
    tide_status st = TIDE_OK;
    if (!ok || !list)
        st = fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    else if (unknown)
        st = fail(im, TIDE_NOT_FOUND, "%d op%s that tide does not have: %s (docs/tensorflow.md says what maps to "
                  "what)", unknown, unknown > 1 ? "s" : "", list);
    free(list);
    return st;
}

/* ---------------------------------------------------------------- inputs and the input map */

typedef struct input_ref {
    bool control;
    const char *name;    /* not NUL-terminated: len */
    size_t len;
    int index;
} input_ref;

/* "^node", "node:3" or "node"; false when the index is not a number. */
static bool parse_input(const char *s, input_ref *r)
{
    r->control = s[0] == '^';
    r->name = s + r->control;
    r->index = 0;
    const char *colon = strrchr(r->name, ':');
    r->len = colon ? (size_t)(colon - r->name) : strlen(r->name);
    if (!colon)
        return r->len > 0;
    if (r->control || !colon[1])
        return false;
    char *end;
    long v = strtol(colon + 1, &end, 10);
    if (*end || v < 0 || v > 1 << 20 || colon[1] == '-' || colon[1] == '+')
        return false;
    r->index = (int)v;
    return r->len > 0;
}

/* The input map's entry for a reference, or NULL. */
static const tide_graphdef_mapping *mapping_of(const importer *im, const input_ref *r)
{
    for (int i = 0; i < im->num_map; i++) {
        input_ref key;
        if (parse_input(im->map[i].name, &key) && key.control == r->control && key.index == r->index &&
            key.len == r->len && memcmp(key.name, r->name, r->len) == 0)
            return &im->map[i];
    }
    return NULL;
}

static tide_status check_map(importer *im)
{
    for (int i = 0; i < im->num_map; i++) {
        input_ref key;
        const char *name = im->map[i].name ? im->map[i].name : "";
        if (!parse_input(name, &key))
            return fail(im, TIDE_INVALID_ARGUMENT, "input map entry '%s' is not a tensor ('node' or 'node:1') or a "
                        "control input ('^node')", name);
        if (find_node(im, key.name, key.len) < 0)
            return fail(im, TIDE_NOT_FOUND, "input map entry '%s': the GraphDef has no node '%.*s'", name,
                        (int)key.len, key.name);
        if (!im->map[i].value.node)
            return fail(im, TIDE_INVALID_ARGUMENT, "input map entry '%s' maps to no node", name);
    }
    return TIDE_OK;
}

/* Every input of every node is well formed and names a node of the GraphDef (or is mapped). */
static tide_status check_inputs(importer *im)
{
    for (int i = 0; i < im->num_nodes; i++) {
        const Tensorflow__NodeDef *d = im->nodes[i].def;
        bool control_seen = false;
        for (size_t k = 0; k < d->n_input; k++) {
            input_ref r;
            if (!parse_input(d->input[k], &r))
                return fail(im, TIDE_INVALID_ARGUMENT, "node '%s' (%s): input %zu '%s' is not 'node', 'node:N' or "
                            "'^node'", d->name, d->op, k, d->input[k]);
            if (!r.control && control_seen)
                return fail(im, TIDE_INVALID_ARGUMENT, "node '%s' (%s): data input '%s' comes after a control "
                            "input (control inputs come last)", d->name, d->op, d->input[k]);
            control_seen |= r.control;
            if (!mapping_of(im, &r) && find_node(im, r.name, r.len) < 0)
                return fail(im, TIDE_NOT_FOUND, "node '%s' (%s): input '%s' names no node of the GraphDef%s",
                            d->name, d->op, d->input[k], im->num_map ? " nor of the input map" : "");
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- dependency order */

/* The GraphDef node an input reads (or -1 when the input map replaces it). */
static int dependency(const importer *im, const char *input)
{
    input_ref r;
    parse_input(input, &r);
    return mapping_of(im, &r) ? -1 : find_node(im, r.name, r.len);
}

/* Is this input of n a loop's back edge (a Merge reading a NextIteration)? Control flow lets that one
 * edge point to a node built later: the Merge is built with a stand-in and the edge closed at the end. */
static bool is_back_edge(const importer *im, const import_node *n, const char *input)
{
    if (input[0] == '^' || strcmp(n->op, "Merge") != 0)
        return false;
    int dep = dependency(im, input);
    return dep >= 0 && strcmp(im->nodes[dep].op, "NextIteration") == 0;
}

/* "a -> b -> c -> a" for the open nodes on the stack from `from` on, back to `from`. */
static tide_status cycle_error(importer *im, const int *stack, int depth, int from)
{
    size_t cap = 1024, len = 0;
    char *path = calloc(1, cap);
    for (int s = im->nodes[from].stack_at; path && s < depth; s++) {
        if (im->nodes[stack[s]].state != NODE_OPEN || im->nodes[stack[s]].stack_at != s)
            continue; /* a node waiting to be visited, not one on the path */
        const char *name = im->nodes[stack[s]].def->name;
        if (len + strlen(name) + 8 < cap)
            len += (size_t)snprintf(path + len, cap - len, "%s -> ", name);
    }
    tide_status st = fail(im, TIDE_INVALID_ARGUMENT, "the GraphDef has a cycle: %s%s", path ? path : "",
                          im->nodes[from].def->name);
    free(path);
    return st;
}

static tide_status build_node(importer *im, int index);

/* Builds node `root` after every node it depends on. */
static tide_status build_with_inputs(importer *im, int root, int **stack, int *cap)
{
    int depth = 0;
    (*stack)[depth++] = root;
    while (depth > 0) {
        int top = (*stack)[depth - 1];
        import_node *n = &im->nodes[top];
        if (n->state == NODE_BUILT) {
            depth--;
        } else if (n->state == NODE_OPEN) {
            tide_status st = build_node(im, top);
            if (st != TIDE_OK)
                return st;
            n->state = NODE_BUILT;
            depth--;
        } else {
            n->state = NODE_OPEN;
            n->stack_at = depth - 1;
            if (depth + (int)n->def->n_input > *cap) {
                int grown = 2 * (depth + (int)n->def->n_input);
                int *bigger = realloc(*stack, sizeof *bigger * (size_t)grown);
                if (!bigger)
                    return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
                *stack = bigger;
                *cap = grown;
            }
            for (size_t k = n->def->n_input; k-- > 0;) { /* reversed: the first input is built first */
                if (is_back_edge(im, n, n->def->input[k]))
                    continue;
                int dep = dependency(im, n->def->input[k]);
                if (dep >= 0 && im->nodes[dep].state == NODE_OPEN)
                    return cycle_error(im, *stack, depth, dep);
                if (dep >= 0 && im->nodes[dep].state == NODE_NEW)
                    (*stack)[depth++] = dep;
            }
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- building one node */

/* How many data inputs each of the op's inputs takes: a list input takes its number attr's count
 * (TensorFlow writes N), or what the other inputs leave when it is the only list. */
static bool group_inputs(const import_node *n, int num_data, int *counts)
{
    int fixed = 0, lists = 0;
    for (int a = 0; a < n->info.num_inputs; a++) {
        counts[a] = 1;
        if (!n->info.inputs[a].number_attr) {
            fixed++;
            continue;
        }
        counts[a] = -1;
        for (size_t k = 0; k < n->def->n_attr; k++) {
            const Tensorflow__AttrValue *v = n->def->attr[k]->value;
            if (strcmp(n->def->attr[k]->key, n->info.inputs[a].number_attr) == 0 && v &&
                v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_I && v->i >= 0 && v->i <= num_data)
                counts[a] = (int)v->i;
        }
        if (counts[a] < 0)
            lists++;
        else
            fixed += counts[a];
    }
    for (int a = 0; a < n->info.num_inputs && lists == 1; a++)
        if (counts[a] < 0)
            counts[a] = num_data - fixed, fixed = num_data;
    return lists <= 1 && fixed == num_data;
}

static tide_status node_fail(importer *im, const import_node *n, tide_status code, const char *what)
{
    return fail(im, code, "node '%s' (%s): %s", n->def->name, n->def->op, what);
}

static tide_status add_back_edge(importer *im, int merge, int input, int next, int index)
{
    if (im->num_loops == im->cap_loops) {
        int cap = im->cap_loops ? 2 * im->cap_loops : 8;
        back_edge *grown = realloc(im->loops, sizeof *grown * (size_t)cap);
        if (!grown)
            return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        im->loops = grown;
        im->cap_loops = cap;
    }
    im->loops[im->num_loops++] = (back_edge){merge, input, next, index};
    return TIDE_OK;
}

/* Every back edge becomes the NextIteration's output, now that it exists. */
static tide_status close_loops(importer *im)
{
    for (int i = 0; i < im->num_loops; i++) {
        const back_edge *e = &im->loops[i];
        tide_output next = {im->nodes[e->next].built, e->index};
        if (tide_graph_close_loop(im->g, im->nodes[e->merge].built, e->input, next, im->err) != TIDE_OK) {
            char *message = strdup(tide_error_message(im->err));
            tide_status st = node_fail(im, &im->nodes[e->merge], tide_error_code(im->err),
                                       message ? message : "out of memory");
            free(message);
            return st;
        }
    }
    return TIDE_OK;
}

static tide_status add_inputs(importer *im, const import_node *n, tide_node_builder *b)
{
    const Tensorflow__NodeDef *d = n->def;
    tide_output *data = calloc(d->n_input + 1, sizeof *data);
    int num_data = 0;
    if (!data)
        return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int stand_in = -1;   /* the data input that stands in for back edges until they are closed */
    tide_status st = TIDE_OK;
    for (size_t k = 0; k < d->n_input; k++) {
        input_ref r;
        parse_input(d->input[k], &r);
        const tide_graphdef_mapping *m = mapping_of(im, &r);
        int source = m ? -1 : find_node(im, r.name, r.len);
        tide_output out = m ? m->value : (tide_output){source >= 0 ? im->nodes[source].built : NULL, r.index};
        if (r.control) {
            tide_node_builder_add_control_input(b, out.node);
            continue;
        }
        if (!out.node && is_back_edge(im, n, d->input[k])) /* its NextIteration comes later */
            st = add_back_edge(im, (int)(n - im->nodes), num_data, source, r.index);
        else if (stand_in < 0)
            stand_in = num_data;
        data[num_data++] = out;
    }
    for (int k = 0; k < num_data && st == TIDE_OK; k++)
        if (!data[k].node) {
            if (stand_in < 0)
                st = node_fail(im, n, TIDE_INVALID_ARGUMENT, "a Merge whose every input is a loop's back edge "
                               "(a NextIteration): the loop has no way in");
            else
                data[k] = data[stand_in];
        }
    if (st != TIDE_OK) {
        free(data);
        return st;
    }
    int counts[sizeof n->info.inputs / sizeof n->info.inputs[0]];
    if (!group_inputs(n, num_data, counts)) {
        char what[200];
        snprintf(what, sizeof what, "the op takes %d input%s, the GraphDef gives %d data inputs", n->info.num_inputs,
                 n->info.num_inputs == 1 ? "" : "s", num_data);
        st = node_fail(im, n, TIDE_INVALID_ARGUMENT, what);
    }
    for (int a = 0, at = 0; st == TIDE_OK && a < n->info.num_inputs; at += counts[a], a++)
        tide_node_builder_add_input_list(b, data + at, counts[a]);
    free(data);
    return st;
}

/* "_class": ["loc:@a", ...] -> _colocate_with = the imported name of a. */
static tide_status colocate(importer *im, const import_node *n, const Tensorflow__AttrValue *v, tide_attrs *attrs)
{
    if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || v->list->n_i || v->list->n_f || v->list->n_b)
        return node_fail(im, n, TIDE_INVALID_ARGUMENT, "attr '_class' must be a list of strings \"loc:@node\"");
    for (size_t i = 0; i < v->list->n_s; i++) {
        const ProtobufCBinaryData *s = &v->list->s[i];
        if (s->len < 5 || memcmp(s->data, "loc:@", 5) != 0)
            continue; /* TensorFlow only writes loc:@ entries; other classes mean nothing to placement */
        const char *target = (const char *)s->data + 5;
        size_t len = s->len - 5;
        if (find_node(im, target, len) < 0) {
            char what[300];
            snprintf(what, sizeof what, "is colocated (_class) with '%.*s', which the GraphDef does not have",
                     (int)(len > 200 ? 200 : len), target);
            return node_fail(im, n, TIDE_NOT_FOUND, what);
        }
        if (tide_attrs_type(attrs, "_colocate_with") != TIDE_ATTR_NONE)
            continue; /* tide colocates with one node: the first (TensorFlow lists one group's members) */
        char *full = NULL;
        if (asprintf(&full, "%s%s%.*s", im->graph_prefix, im->scope, (int)len, target) < 0)
            return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        tide_attrs_set_string(attrs, "_colocate_with", full);
        free(full);
    }
    return TIDE_OK;
}

static tide_attr_type op_attr_type(const import_node *n, const char *name)
{
    for (int i = 0; i < n->info.num_attrs; i++)
        if (strcmp(n->info.attrs[i].name, name) == 0)
            return n->info.attrs[i].type;
    return TIDE_ATTR_NONE;
}

static tide_status add_attrs(importer *im, const import_node *n, tide_attrs *attrs)
{
    tide_error *why = tide_error_new();
    if (!why)
        return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_status st = TIDE_OK;
    for (size_t k = 0; st == TIDE_OK && k < n->def->n_attr; k++) {
        const char *key = n->def->attr[k]->key;
        const Tensorflow__AttrValue *v = n->def->attr[k]->value;
        if (!v || strcmp(key, "_output_shapes") == 0)
            continue; /* no value: the attr's default; _output_shapes: what the writer inferred */
        if (strcmp(key, "_class") == 0)
            st = colocate(im, n, v, attrs);
        else if (!graphdef_attr_to_tide(v, op_attr_type(n, key), key, attrs, why))
            st = node_fail(im, n, tide_error_code(why), tide_error_message(why));
    }
    tide_error_free(why);
    return st;
}

static tide_status build_node(importer *im, int index)
{
    import_node *n = &im->nodes[index];
    char *name = NULL;
    if (asprintf(&name, "%s%s", im->scope, n->def->name) < 0)
        return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_node_builder *b = tide_node_builder_new(im->g, n->op, name);
    free(name);
    if (!b)
        return fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_status st = add_inputs(im, n, b);
    if (st == TIDE_OK)
        st = add_attrs(im, n, tide_node_builder_attrs(b));
    if (st != TIDE_OK) {
        tide_node_builder_free(b);
        return st;
    }
    if (n->def->device[0] && !im->clear_devices)
        tide_node_builder_set_device(b, n->def->device);
    n->built = tide_node_builder_finish(b, im->err);
    if (!n->built) { /* the builder's messages name the node, except those about its name */
        char *message = strdup(tide_error_message(im->err));
        if (message && strncmp(message, "node '", 6) != 0)
            st = node_fail(im, n, tide_error_code(im->err), message);
        else
            st = fail(im, tide_error_code(im->err), "%s", message ? message : "out of memory");
        free(message);
    }
    return st;
}

/* ---------------------------------------------------------------- the import */

/* The scope prefix the graph's builders prepend now ("outer/" inside scope("outer", ...)). */
static char *graph_scope_prefix(tide_graph *g)
{
    char *probe = tide_graph_unique_name(g, "graphdef_import_probe");
    char *slash = probe ? strrchr(probe, '/') : NULL;
    if (!probe)
        return NULL;
    if (slash)
        slash[1] = 0;
    else
        probe[0] = 0;
    return probe;
}

static tide_status run_import(importer *im)
{
    tide_status st = check_names(im);
    if (st == TIDE_OK)
        st = check_ops(im);
    if (st == TIDE_OK)
        st = check_map(im);
    if (st == TIDE_OK)
        st = check_inputs(im);
    int cap = 64;
    int *stack = malloc(sizeof *stack * (size_t)cap);
    if (st == TIDE_OK && !stack)
        st = fail(im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; st == TIDE_OK && i < im->num_nodes; i++)
        if (im->nodes[i].state == NODE_NEW)
            st = build_with_inputs(im, i, &stack, &cap);
    free(stack);
    if (st == TIDE_OK)
        st = close_loops(im);
    return st;
}

tide_status tide_graphdef_import(tide_graph *g, const void *data, size_t size, const char *source,
                                 const tide_graphdef_import_options *opts, tide_error *err)
{
    tide_graphdef_import_options defaults;
    if (!opts) {
        tide_graphdef_import_options_init(&defaults);
        opts = &defaults;
    }
    if (!source)
        source = "GraphDef";
    if (!g || (!data && size))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: no graph or no data to import", source);
    tide_error *own = err ? NULL : tide_error_new(); /* messages are built even when the caller passes none */
    if (!err && !own)
        return TIDE_RESOURCE_EXHAUSTED;
    importer im = {.g = g, .source = source, .map = opts->input_map, .num_map = opts->num_input_map,
                   .clear_devices = opts->clear_devices, .err = err ? err : own};
    Tensorflow__GraphDef *gd = graphdef_parse(data ? data : "", size, opts->format, source, im.err);
    tide_status st = gd ? TIDE_OK : tide_error_code(im.err);
    char *scope = NULL;
    if (st == TIDE_OK && opts->scope && opts->scope[0] &&
        asprintf(&scope, "%s%s", opts->scope, opts->scope[strlen(opts->scope) - 1] == '/' ? "" : "/") < 0)
        scope = NULL, st = fail(&im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    im.scope = scope ? scope : "";
    im.gd = gd;
    im.num_nodes = gd ? (int)gd->n_node : 0;
    im.nodes = calloc((size_t)im.num_nodes + 1, sizeof *im.nodes);
    im.by_name = calloc((size_t)im.num_nodes + 1, sizeof *im.by_name);
    im.graph_prefix = graph_scope_prefix(g);
    if (st == TIDE_OK && (!im.nodes || !im.by_name || !im.graph_prefix))
        st = fail(&im, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; st == TIDE_OK && i < im.num_nodes; i++)
        im.nodes[i].def = gd->node[i];
    int mark = tide_graph_num_nodes(g);
    if (st == TIDE_OK)
        st = run_import(&im);
    if (st != TIDE_OK)
        tide_graph_rollback(g, mark, NULL); /* nodes no plan has seen yet: this cannot fail */
    free(im.nodes);
    free(im.by_name);
    free(im.loops);
    free(im.graph_prefix);
    free(scope);
    if (gd)
        tensorflow__graph_def__free_unpacked(gd, NULL);
    tide_error_free(own);
    return st;
}

tide_status tide_graphdef_import_file(tide_graph *g, const char *path, const tide_graphdef_import_options *opts,
                                      tide_error *err)
{
    if (!path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "no GraphDef file named");
    void *data;
    size_t size;
    tide_status st = graphdef_read_file(path, &data, &size, err);
    if (st != TIDE_OK)
        return st;
    tide_graphdef_import_options o;
    if (opts)
        o = *opts;
    else
        tide_graphdef_import_options_init(&o);
    if (o.format == TIDE_GRAPHDEF_AUTO)
        o.format = tide_graphdef_format_of_path(path);
    st = tide_graphdef_import(g, data, size, path, &o, err);
    free(data);
    return st;
}
