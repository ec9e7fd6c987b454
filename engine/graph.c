/* graph.c — the graph: nodes in creation order with stable addresses, a name table, name scopes and
 * default devices, unique names, the graph seed, and rollback of an aborted extension. Building one
 * node is node_builder.c; the text format is graph_text.c. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Per-base counters for unique names (base -> next suffix to try), so that naming the 10,000th "add"
 * does not probe 9,999 taken names. */
typedef struct name_counter {
    char *base;
    long next;
} name_counter;

typedef struct name_counters {
    tide_name_table *table; /* base -> name_counter* */
    name_counter **items;
    int count, cap;
} name_counters;

tide_graph *tide_graph_new(void)
{
    tide_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    atomic_init(&g->refs, 1);
    pthread_mutex_init(&g->lock, NULL);
    g->names = tide__names_new();
    if (!g->names) {
        free(g);
        return NULL;
    }
    return g;
}

void tide__node_free_piece(const tide_node *n, void *piece)
{
    uintptr_t at = (uintptr_t)piece, start = (uintptr_t)n;
    if (!(at >= start && at < start + n->block_size))
        free(piece);
}

void tide__node_free(tide_node *n)
{
    if (!n)
        return;
    tide__node_free_piece(n, n->name);
    tide_attrs_free(n->attrs);
    tide__node_free_piece(n, n->inputs);
    tide__node_free_piece(n, n->control);
    tide__node_free_piece(n, n->out_dtypes);
    tide__node_free_piece(n, n->out_shapes);
    tide__node_free_piece(n, n->requested_device);
    tide_tensor_release(n->folded_value);
    free(n);
}

static void free_stack(char **items, int n)
{
    for (int i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

void tide__graph_retain(tide_graph *g) { atomic_fetch_add(&g->refs, 1); }

void tide_graph_free(tide_graph *g) { tide__graph_release(g); }

void tide__graph_release(tide_graph *g)
{
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
        return;
    for (int i = 0; i < g->num_nodes; i++)
        tide__node_free(g->nodes[i]);
    free(g->nodes);
    tide__names_free(g->names);
    free_stack(g->scopes, g->num_scopes);
    free_stack(g->devices, g->num_devices);
    name_counters *c = g->counters;
    if (c) {
        for (int i = 0; i < c->count; i++) {
            free(c->items[i]->base);
            free(c->items[i]);
        }
        free(c->items);
        tide__names_free(c->table);
        free(c);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

int tide_graph_num_nodes(const tide_graph *g) { return g->num_nodes; }
uint64_t tide_graph_version(const tide_graph *g) { return g->version; }
void tide_graph_set_seed(tide_graph *g, int64_t seed) { g->seed = seed; }
int64_t tide_graph_seed(const tide_graph *g) { return g->seed; }
void tide_graph_set_compress_transfers(tide_graph *g, bool on) { g->compress_transfers = on; }

bool tide__input_is_ref(const tide_node *n, int i)
{
    for (int a = 0; a < n->op->num_inputs; a++)
        if (i >= n->arg_start[a] && i < n->arg_start[a + 1])
            return n->op->inputs[a].is_ref;
    return false;
}

tide_node *tide_graph_node_at(const tide_graph *g, int i)
{
    return i >= 0 && i < g->num_nodes ? g->nodes[i] : NULL;
}

tide_node *tide_graph_node(const tide_graph *g, const char *name)
{
    return name ? tide__names_get(g->names, name) : NULL;
}

tide_status tide_graph_output(const tide_graph *g, const char *spec, tide_output *out, tide_error *err)
{
    char name[512];
    snprintf(name, sizeof name, "%s", spec ? spec : "");
    int index = 0;
    char *colon = strrchr(name, ':');
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (*end || end == colon + 1 || v < 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "bad output '%s': expected name or name:index", spec);
        *colon = 0;
        index = (int)v;
    }
    tide_node *n = tide_graph_node(g, name);
    if (!n)
        return tide_error_set(err, TIDE_NOT_FOUND, "no node named '%s' in the graph", name);
    if (index >= n->num_outputs)
        return tide_error_set(err, TIDE_OUT_OF_RANGE, "node '%s' (%s) has %d output%s; %d asked for", name,
                              n->op->name, n->num_outputs, n->num_outputs == 1 ? "" : "s", index);
    *out = (tide_output){n, index};
    return TIDE_OK;
}

void tide__graph_insert(tide_graph *g, tide_node *n)
{
    pthread_mutex_lock(&g->lock);
    if (g->num_nodes == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        tide_node **nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) { /* the builder reserved room first, so this cannot fail in practice */
            pthread_mutex_unlock(&g->lock);
            return;
        }
        g->nodes = nodes;
        g->cap = cap;
    }
    static _Atomic uint64_t last_serial;
    n->id = g->num_nodes;
    n->serial = atomic_fetch_add(&last_serial, 1) + 1;
    n->graph = g;
    g->nodes[g->num_nodes++] = n;
    tide__names_put(g->names, n->name, n);
    g->version++;
    pthread_mutex_unlock(&g->lock);
}

bool tide__graph_reserve(tide_graph *g)
{
    if (g->num_nodes < g->cap)
        return true;
    int cap = g->cap ? g->cap * 2 : 64;
    pthread_mutex_lock(&g->lock);
    tide_node **nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (nodes) {
        g->nodes = nodes;
        g->cap = cap;
    }
    pthread_mutex_unlock(&g->lock);
    return nodes != NULL;
}

tide_status tide_graph_rollback(tide_graph *g, int num_nodes, tide_error *err)
{
    if (num_nodes < 0 || num_nodes > g->num_nodes)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot roll back to %d nodes: the graph has %d",
                              num_nodes, g->num_nodes);
    pthread_mutex_lock(&g->lock);
    for (int i = num_nodes; i < g->num_nodes; i++)
        if (atomic_load(&g->nodes[i]->used_by_plan)) {
            pthread_mutex_unlock(&g->lock);
            return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                                  "cannot roll back: node '%s' has already been run", g->nodes[i]->name);
        }
    for (int i = 0; i < num_nodes; i++) /* only a loop's back edge points forward (tide_graph_close_loop) */
        for (int k = 0; k < g->nodes[i]->num_inputs; k++)
            if (g->nodes[i]->inputs[k].node->id >= num_nodes) {
                pthread_mutex_unlock(&g->lock);
                return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                                      "cannot roll back: node '%s' reads '%s' over a loop's back edge and stays",
                                      g->nodes[i]->name, g->nodes[i]->inputs[k].node->name);
            }
    for (int i = g->num_nodes - 1; i >= num_nodes; i--) {
        tide__names_remove(g->names, g->nodes[i]->name);
        tide__node_free(g->nodes[i]);
    }
    if (g->num_nodes != num_nodes)
        g->version++;
    g->num_nodes = num_nodes;
    pthread_mutex_unlock(&g->lock);
    return TIDE_OK;
}

tide_status tide_graph_rename_node(tide_graph *g, tide_node *n, const char *name, tide_error *err)
{
    if (!g || !n || !name || n->graph != g)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "rename: missing graph, node or name, or the node is of another graph");
    if (strcmp(n->name, name) == 0)
        return TIDE_OK;
    tide_status st = tide__check_node_name(name, err);
    if (st != TIDE_OK)
        return st;
    if (tide_graph_node(g, name))
        return tide_error_set(err, TIDE_ALREADY_EXISTS, "cannot rename '%s' to '%s': that name is taken", n->name, name);
    if (atomic_load(&n->used_by_plan))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "cannot rename '%s': it has already been run", n->name);
    char *copy = tide__strdup(name);
    if (!copy)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory renaming '%s'", n->name);
    pthread_mutex_lock(&g->lock);
    tide__names_remove(g->names, n->name);
    tide__node_free_piece(n, n->name);
    n->name = copy;
    tide__names_put(g->names, n->name, n);
    g->version++;
    pthread_mutex_unlock(&g->lock);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- scopes, devices, names */

static void push(char ***items, int *n, int *cap, const char *s)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        char **grown = realloc(*items, (size_t)c * sizeof *grown);
        if (!grown)
            return;
        *items = grown;
        *cap = c;
    }
    (*items)[(*n)++] = tide__strdup(s ? s : "");
}

static void pop(char **items, int *n)
{
    if (*n > 0)
        free(items[--*n]);
}

void tide_graph_push_scope(tide_graph *g, const char *scope) { push(&g->scopes, &g->num_scopes, &g->cap_scopes, scope); }
void tide_graph_pop_scope(tide_graph *g) { pop(g->scopes, &g->num_scopes); }
void tide_graph_push_device(tide_graph *g, const char *spec) { push(&g->devices, &g->num_devices, &g->cap_devices, spec); }
void tide_graph_pop_device(tide_graph *g) { pop(g->devices, &g->num_devices); }

const char *tide__graph_default_device(const tide_graph *g)
{
    return g->num_devices ? g->devices[g->num_devices - 1] : "";
}

char *tide__graph_scope_prefix(const tide_graph *g)
{
    size_t len = 1;
    for (int i = 0; i < g->num_scopes; i++)
        len += strlen(g->scopes[i]) + 1;
    char *p = malloc(len);
    if (!p)
        return NULL;
    p[0] = 0;
    for (int i = 0; i < g->num_scopes; i++)
        if (g->scopes[i][0]) {
            strcat(p, g->scopes[i]);
            strcat(p, "/");
        }
    return p;
}

static name_counter *counter_for(tide_graph *g, const char *base)
{
    name_counters *c = g->counters;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c || !(c->table = tide__names_new())) {
            free(c);
            return NULL;
        }
        g->counters = c;
    }
    name_counter *nc = tide__names_get(c->table, base);
    if (nc)
        return nc;
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        name_counter **items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items)
            return NULL;
        c->items = items;
        c->cap = cap;
    }
    nc = malloc(sizeof *nc);
    if (!nc || !(nc->base = tide__strdup(base))) {
        free(nc);
        return NULL;
    }
    nc->next = 1;
    c->items[c->count++] = nc;
    tide__names_put(c->table, nc->base, nc);
    return nc;
}

char *tide_graph_unique_name(tide_graph *g, const char *base)
{
    char *prefix = tide__graph_scope_prefix(g);
    char *name = prefix ? tide__asprintf("%s%s", prefix, base) : NULL;
    free(prefix);
    if (!name || !tide_graph_node(g, name))
        return name;
    name_counter *nc = counter_for(g, name);
    long next = nc ? nc->next : 1;
    char *candidate = NULL;
    for (;; next++) {
        free(candidate);
        candidate = tide__asprintf("%s_%ld", name, next);
        if (!candidate || !tide_graph_node(g, candidate))
            break;
    }
    if (nc)
        nc->next = next + 1;
    free(name);
    return candidate;
}

/* ---------------------------------------------------------------- node accessors */

const char *tide_node_name(const tide_node *n) { return n->name; }
const char *tide_node_op(const tide_node *n) { return n->op->name; }
int tide_node_id(const tide_node *n) { return n->id; }
uint64_t tide_node_serial(const tide_node *n) { return n->serial; }
int tide_node_num_inputs(const tide_node *n) { return n->num_inputs; }
int tide_node_num_control_inputs(const tide_node *n) { return n->num_control; }
int tide_node_num_outputs(const tide_node *n) { return n->num_outputs; }
const tide_attrs *tide_node_attrs(const tide_node *n) { return n->attrs; }
const char *tide_node_requested_device(const tide_node *n) { return n->requested_device; }
bool tide_node_is_stateful(const tide_node *n) { return (n->op->flags & TIDE_OP_STATEFUL) != 0; }

const char *tide_node_assigned_device(const tide_node *n)
{
    return atomic_load(&((tide_node *)n)->assigned_device);
}

tide_output tide_node_input(const tide_node *n, int i)
{
    return i >= 0 && i < n->num_inputs ? n->inputs[i] : (tide_output){NULL, -1};
}

tide_node *tide_node_control_input(const tide_node *n, int i)
{
    return i >= 0 && i < n->num_control ? n->control[i] : NULL;
}

tide_dtype tide_node_output_dtype(const tide_node *n, int i)
{
    return i >= 0 && i < n->num_outputs ? n->out_dtypes[i] : TIDE_INVALID_DTYPE;
}

tide_shape tide_node_output_shape(const tide_node *n, int i)
{
    return i >= 0 && i < n->num_outputs ? n->out_shapes[i] : tide_shape_unknown();
}
