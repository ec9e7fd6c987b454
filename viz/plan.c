/* plan.c — what the graph drawing shows, decided before Graphviz is touched (so it runs outside the
 * Graphviz lock): the name scopes, which are expanded (clusters) and which collapsed (one item each),
 * the auxiliary nodes (more consumers than aux_degree) drawn apart with a stub per consumer, the
 * items' colours, and the merged edges between items. graph_svg.c turns a plan into cgraph objects.
 *
 * Invariants of a finished plan:
 *   1. every node of the model has exactly one item (node_item[i] >= 0): itself, its collapsed
 *      scope, or (aux) itself in the aux cluster;
 *   2. an item's cluster is an expanded scope (or VZ_ROOT, or VZ_AUX_CLUSTER for aux nodes), and every
 *      ancestor of that scope is expanded too;
 *   3. edges join two different items, at most one edge per ordered pair. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_plan.h"

/* ---------------------------------------------------------------- an int64 -> int hash table */

static bool imap_grow(vz_imap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    int64_t *keys = malloc(cap * sizeof *keys);
    int *values = malloc(cap * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return false;
    }
    for (size_t i = 0; i < cap; i++)
        keys[i] = -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] < 0)
            continue;
        size_t j = (size_t)(m->keys[i] * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
        while (keys[j] >= 0)
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return true;
}

/* The slot of key (>= 0); NULL when out of memory. A new key's value is -1. */
static int *imap_slot(vz_imap *m, int64_t key)
{
    if ((m->count + 1) * 2 > m->cap && !imap_grow(m))
        return NULL;
    size_t j = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ull >> 17) & (m->cap - 1);
    while (m->keys[j] >= 0 && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (m->keys[j] < 0) {
        m->keys[j] = key;
        m->values[j] = -1;
        m->count++;
    }
    return &m->values[j];
}

static void imap_free(vz_imap *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- scopes */

static int find_or_add_scope(vz_plan *p, const char *name, int parent)
{
    int s = vz_map_get(&p->scope_by_name, name);
    if (s >= 0)
        return s;
    if (p->num_scopes == p->cap_scopes) {
        int cap = p->cap_scopes ? p->cap_scopes * 2 : 64;
        vz_scope *sc = realloc(p->scopes, (size_t)cap * sizeof *sc);
        if (!sc)
            return -1;
        p->scopes = sc;
        p->cap_scopes = cap;
        /* the map borrows the names, which do not move */
    }
    vz_scope *sc = &p->scopes[p->num_scopes];
    memset(sc, 0, sizeof *sc);
    sc->name = strdup(name);
    sc->parent = parent;
    sc->item = -1;
    sc->max_time_ns = -1;
    if (!sc->name || !vz_map_put(&p->scope_by_name, sc->name, p->num_scopes)) {
        free(sc->name);
        return -1;
    }
    return p->num_scopes++;
}

/* Adds every scope of every node name ("a/b/c": "a" and "a/b"). */
static bool collect_scopes(vz_plan *p)
{
    size_t cap = 256;
    char *buf = malloc(cap);
    bool ok = buf != NULL;
    for (int i = 0; ok && i < p->m->num_nodes; i++) {
        const char *name = p->m->nodes[i].name;
        size_t len = strlen(name);
        if (len + 1 > cap) {
            char *b = realloc(buf, cap = len + 1);
            if (!(ok = b != NULL))
                break;
            buf = b;
        }
        memcpy(buf, name, len + 1);
        int parent = VZ_ROOT;
        for (char *slash = strchr(buf, '/'); ok && slash; slash = strchr(slash + 1, '/')) {
            if (slash == buf || slash[1] == '\0')
                continue; /* no empty scope names (a damaged log) */
            *slash = '\0';
            parent = find_or_add_scope(p, buf, parent);
            ok = parent >= 0;
            *slash = '/';
        }
        p->node_scope[i] = parent;
    }
    free(buf);
    return ok;
}

/* Marks the expanded scopes: the listed ones and their ancestors, or all. */
static void mark_expanded(vz_plan *p, const tide_viz_graph_options *o)
{
    for (int s = 0; s < p->num_scopes; s++)
        p->scopes[s].expanded = o->expand_all;
    for (int k = 0; !o->expand_all && k < o->num_expanded; k++)
        for (int s = vz_map_get(&p->scope_by_name, o->expanded[k]); s >= 0; s = p->scopes[s].parent)
            p->scopes[s].expanded = true;
}

/* The outermost collapsed scope holding the scope s (s itself included), or VZ_ROOT when s and all
 * its ancestors are expanded. */
static int collapsed_ancestor(const vz_plan *p, int s)
{
    int found = VZ_ROOT;
    for (; s >= 0; s = p->scopes[s].parent)
        if (!p->scopes[s].expanded)
            found = s;
    return found;
}

/* ---------------------------------------------------------------- items */

static int add_item(vz_plan *p, vz_item_kind kind, int node, int scope, int cluster)
{
    if (p->num_items == p->cap_items) {
        int cap = p->cap_items ? p->cap_items * 2 : 256;
        vz_item *it = realloc(p->items, (size_t)cap * sizeof *it);
        if (!it)
            return -1;
        p->items = it;
        p->cap_items = cap;
    }
    vz_item *it = &p->items[p->num_items];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->node = node;
    it->scope = scope;
    it->cluster = cluster;
    return p->num_items++;
}

/* Items for the nodes: aux nodes apart, visible nodes, collapsed scopes (one item each, or the
 * node itself when the scope holds a single node). */
static bool place_nodes(vz_plan *p, int aux_degree)
{
    const vz_model *m = p->m;
    for (int i = 0; i < m->num_nodes; i++) {
        p->node_item[i] = -1;
        p->is_aux[i] = m->nodes[i].num_consumers > aux_degree;
        int c = p->is_aux[i] ? VZ_ROOT : collapsed_ancestor(p, p->node_scope[i]);
        p->node_collapsed[i] = c;
        if (c >= 0) {
            p->scopes[c].nodes++;
            if (m->nodes[i].time_ns > p->scopes[c].max_time_ns)
                p->scopes[c].max_time_ns = m->nodes[i].time_ns;
        }
    }
    for (int i = 0; i < m->num_nodes; i++) {
        int c = p->node_collapsed[i], item;
        if (p->is_aux[i])
            item = add_item(p, VZ_ITEM_NODE, i, -1, VZ_AUX_CLUSTER);
        else if (c < 0)
            item = add_item(p, VZ_ITEM_NODE, i, -1, p->node_scope[i]);
        else if (p->scopes[c].nodes == 1)
            item = add_item(p, VZ_ITEM_NODE, i, -1, p->scopes[c].parent);
        else if ((item = p->scopes[c].item) < 0)
            item = p->scopes[c].item = add_item(p, VZ_ITEM_SCOPE, -1, c, p->scopes[c].parent);
        if (item < 0)
            return false;
        p->node_item[i] = item;
        p->any_aux |= p->is_aux[i];
    }
    return true;
}

/* The majority device of each collapsed scope's nodes (ties: the first in palette order, unplaced last). */
static bool scope_devices(vz_plan *p)
{
    const vz_model *m = p->m;
    int nd = m->num_devices + 1; /* the last slot: unplaced */
    int *counts = calloc((size_t)p->num_items * (size_t)nd + 1, sizeof *counts);
    if (!counts)
        return false;
    for (int i = 0; i < m->num_nodes; i++) {
        int d = m->nodes[i].device_index;
        counts[(size_t)p->node_item[i] * (size_t)nd + (size_t)(d < 0 ? nd - 1 : d)]++;
    }
    for (int it = 0; it < p->num_items; it++) {
        if (p->items[it].kind != VZ_ITEM_SCOPE)
            continue;
        int best = 0;
        for (int d = 1; d < nd; d++)
            if (counts[(size_t)it * (size_t)nd + (size_t)d] > counts[(size_t)it * (size_t)nd + (size_t)best])
                best = d;
        p->scopes[p->items[it].scope].device_index = best == nd - 1 ? -1 : best;
    }
    free(counts);
    return true;
}

/* ---------------------------------------------------------------- edges */

static bool add_edge(vz_plan *p, int from, int to, bool data)
{
    if (from == to)
        return true;
    int *slot = imap_slot(&p->edge_by_pair, (int64_t)from * INT32_MAX + to);
    if (!slot)
        return false;
    if (*slot < 0) {
        if (p->num_edges == p->cap_edges) {
            int cap = p->cap_edges ? p->cap_edges * 2 : 256;
            vz_edge *e = realloc(p->edges, (size_t)cap * sizeof *e);
            if (!e)
                return false;
            p->edges = e;
            p->cap_edges = cap;
        }
        p->edges[p->num_edges] = (vz_edge){from, to, 0, false};
        *slot = p->num_edges++;
    }
    p->edges[*slot].count++;
    p->edges[*slot].data |= data;
    return true;
}

/* The stub of aux node a next to consumer item c (made on first use, in c's cluster). */
static int stub_for(vz_plan *p, int a, int c)
{
    int *slot = imap_slot(&p->stub_by_pair, (int64_t)a * INT32_MAX + c);
    if (!slot)
        return -1;
    if (*slot < 0) {
        int cluster = p->items[c].cluster == VZ_AUX_CLUSTER ? VZ_ROOT : p->items[c].cluster;
        int s = add_item(p, VZ_ITEM_STUB, a, -1, cluster);
        if (s < 0)
            return -1;
        p->items[s].consumer = c;
        *slot = s;
    }
    return *slot;
}

/* One edge per (producer item, consumer item) pair; an aux producer feeds a stub instead; edges into
 * aux nodes are left out (they would pull the aux column into the graph). */
static bool connect(vz_plan *p)
{
    const vz_model *m = p->m;
    for (int i = 0; i < m->num_nodes; i++) {
        if (p->is_aux[i])
            continue;
        const vz_node *n = &m->nodes[i];
        int to = p->node_item[i];
        for (int k = 0; k < n->num_producers + n->num_controls; k++) {
            bool data = k < n->num_producers;
            int src = data ? n->producers[k] : n->controls[k - n->num_producers];
            if (src < 0)
                continue;
            int from = p->is_aux[src] ? stub_for(p, src, to) : p->node_item[src];
            if (from < 0 || !add_edge(p, from, to, data))
                return false;
        }
    }
    return true;
}

/* The item (or expanded cluster) to outline for a node or scope name. */
static tide_status find_highlight(vz_plan *p, const char *name, tide_error *err)
{
    p->highlight_item = -1;
    p->highlight_cluster = VZ_ROOT;
    if (!name || !name[0])
        return TIDE_OK;
    int i = vz_map_get(&p->m->by_name, name);
    if (i >= 0) {
        p->highlight_item = p->node_item[i];
        return TIDE_OK;
    }
    int s = vz_map_get(&p->scope_by_name, name);
    if (s < 0)
        return tide_error_set(err, TIDE_NOT_FOUND, "graph version %" PRId64 " of session %" PRId64
                              " has no node or scope named '%s'", p->m->version, p->m->session, name);
    int c = collapsed_ancestor(p, s);
    if (c < 0) {
        p->highlight_cluster = s;
        return TIDE_OK;
    }
    if (p->scopes[c].item >= 0) {
        p->highlight_item = p->scopes[c].item;
        return TIDE_OK;
    }
    for (int k = 0; k < p->m->num_nodes; k++) /* a scope of one node, drawn as that node */
        if (p->node_collapsed[k] == c)
            p->highlight_item = p->node_item[k];
    return TIDE_OK;
}

tide_status vz_plan_build(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, tide_error *err)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->color = o->color;
    size_t n = (size_t)(m->num_nodes ? m->num_nodes : 1);
    p->node_scope = malloc(n * sizeof *p->node_scope);
    p->node_item = malloc(n * sizeof *p->node_item);
    p->node_collapsed = malloc(n * sizeof *p->node_collapsed);
    p->is_aux = calloc(n, sizeof *p->is_aux);
    bool ok = p->node_scope && p->node_item && p->node_collapsed && p->is_aux && collect_scopes(p);
    if (ok)
        mark_expanded(p, o);
    ok = ok && place_nodes(p, o->aux_degree ? o->aux_degree : 6) && scope_devices(p) && connect(p);
    if (!ok)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory drawing graph version %" PRId64,
                              m->version);
    return find_highlight(p, o->highlight, err);
}

void vz_plan_free(vz_plan *p)
{
    for (int s = 0; s < p->num_scopes; s++)
        free(p->scopes[s].name);
    free(p->scopes);
    vz_map_free(&p->scope_by_name);
    free(p->items);
    free(p->edges);
    imap_free(&p->edge_by_pair);
    imap_free(&p->stub_by_pair);
    free(p->node_scope);
    free(p->node_item);
    free(p->node_collapsed);
    free(p->is_aux);
    memset(p, 0, sizeof *p);
}
