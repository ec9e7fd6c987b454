/* plan.c — what the graph drawing shows, decided before Graphviz is touched (so it runs outside the
 * Graphviz lock), in passes:
 *   1. scopes: every name scope of every node name;
 *   2. groups: the gradients, the optimizer's updates and the initialisers (groups.c) become one box
 *      each in a "training" column beside the model, unless dissolved ("group:NAME" listed among the
 *      expanded names; expand_all opens scopes, not groups); their edges to the model are summarised (counted in the box's
 *      label), not drawn, so that the forward path reads top to bottom;
 *   3. auxiliary nodes: more consumers in the model than aux_degree, drawn apart with a stub next to
 *      each consumer;
 *   4. opening scopes under the cap: the top level, then each requested scope in breadth-first order
 *      while the items laid out stay within max_items; a scope that does not fit stays collapsed
 *      (capped, and the drawing says so); a top level too large for the cap bundles its nodes by op;
 *      series (series.c) make repeated structures one box;
 *   5. items: one per entry of each open cluster (a node, a collapsed scope, a series or a bundle);
 *   6. edges: merged per pair of items, stubs for auxiliary producers (within the cap);
 *   7. the item (or open scope) a highlight names.
 * When the plan would cost dot too much to lay out (layout_cost.c: items plus the virtual nodes of long
 * edges, over VZ_MAX_LAYOUT_COST), the largest smaller cap whose plan fits is searched (bisection, a
 * plan per try: tens of milliseconds each), and the drawing says so.
 *
 * Invariants of a finished plan:
 *   1. every node of the model has exactly one item (node_item[i] >= 0): itself, its collapsed scope,
 *      its series or bundle, its group, or (aux) itself in the aux cluster;
 *   2. an item's cluster is an open scope (or VZ_ROOT, VZ_AUX_CLUSTER, VZ_SIDE_CLUSTER), and every
 *      ancestor of that scope is open too;
 *   3. edges join two different items, at most one edge per ordered pair;
 *   4. num_items <= max_items, except for the top level's own bundles (at most one per op). */
#include <inttypes.h>
#include <stdarg.h>
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
        size_t j = (size_t)((uint64_t)m->keys[i] * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
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

int *vz_imap_slot(vz_imap *m, int64_t key)
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

void vz_imap_free(vz_imap *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- 1. scopes */

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
    sc->depth = parent >= 0 ? p->scopes[parent].depth + 1 : 0;
    sc->item = -1;
    sc->one_node = -1;
    sc->num_items = -1;
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

/* The scopes asked open: the listed ones and their ancestors, or all; listed series keys ("x_*"). */
static bool mark_requested(vz_plan *p, const tide_viz_graph_options *o)
{
    for (int s = 0; s < p->num_scopes; s++)
        p->scopes[s].requested = o->expand_all;
    for (int k = 0; k < o->num_expanded; k++) {
        const char *name = o->expanded[k];
        size_t len = strlen(name);
        if (len >= 2 && strcmp(name + len - 2, "_*") == 0 && !vz_map_put(&p->ungrouped, name, 1))
            return false;
        for (int s = vz_map_get(&p->scope_by_name, name); !o->expand_all && s >= 0; s = p->scopes[s].parent)
            p->scopes[s].requested = true;
    }
    return true;
}

/* ---------------------------------------------------------------- 2. groups, 3. aux nodes */

const char *vz_group_name(vz_group g)
{
    static const char *const names[VZ_NUM_GROUPS] = {"", "gradients", "optimizer", "init"};
    return g > 0 && g < VZ_NUM_GROUPS ? names[g] : "";
}

static bool listed(const tide_viz_graph_options *o, const char *prefix, const char *name)
{
    size_t n = strlen(prefix);
    for (int k = 0; k < o->num_expanded; k++)
        if (strncmp(o->expanded[k], prefix, n) == 0 && strcmp(o->expanded[k] + n, name) == 0)
            return true;
    return false;
}

/* Groups not dissolved, with at least two nodes, keep their nodes. */
static bool assign_groups(vz_plan *p, const tide_viz_graph_options *o)
{
    const vz_model *m = p->m;
    if (!vz_classify_groups(m, p->group))
        return false;
    int count[VZ_NUM_GROUPS] = {0};
    for (int i = 0; i < m->num_nodes; i++)
        count[p->group[i]]++;
    bool keep[VZ_NUM_GROUPS] = {false};
    for (int g = 1; g < VZ_NUM_GROUPS; g++)
        keep[g] = count[g] >= 2 && !listed(o, "group:", vz_group_name((vz_group)g));
    for (int i = 0; i < m->num_nodes; i++)
        if (!keep[p->group[i]])
            p->group[i] = VZ_GROUP_NONE;
    return true;
}

/* Aux nodes: more distinct consumers in the model (outside the groups) than aux_degree. */
static bool find_aux(vz_plan *p, int aux_degree)
{
    const vz_model *m = p->m;
    int *stamp = malloc((size_t)(m->num_nodes ? m->num_nodes : 1) * sizeof *stamp);
    int *consumers = calloc((size_t)(m->num_nodes ? m->num_nodes : 1), sizeof *consumers);
    bool ok = stamp && consumers;
    for (int i = 0; ok && i < m->num_nodes; i++)
        stamp[i] = -1;
    for (int i = 0; ok && i < m->num_nodes; i++) {
        const vz_node *n = &m->nodes[i];
        if (p->group[i] != VZ_GROUP_NONE)
            continue;
        for (int k = 0; k < n->num_producers + n->num_controls; k++) {
            int src = k < n->num_producers ? n->producers[k] : n->controls[k - n->num_producers];
            if (src >= 0 && stamp[src] != i) {
                stamp[src] = i;
                consumers[src]++;
            }
        }
    }
    for (int i = 0; ok && i < m->num_nodes; i++) {
        p->is_aux[i] = p->group[i] == VZ_GROUP_NONE && consumers[i] > aux_degree;
        p->any_aux |= p->is_aux[i];
        p->used += p->is_aux[i];
    }
    free(stamp);
    free(consumers);
    return ok;
}

/* Visible nodes (in the model, not aux) per scope subtree. */
static void count_visible(vz_plan *p)
{
    for (int i = 0; i < p->m->num_nodes; i++) {
        if (p->group[i] != VZ_GROUP_NONE || p->is_aux[i])
            continue;
        for (int s = p->node_scope[i]; s >= 0; s = p->scopes[s].parent) {
            p->scopes[s].visible++;
            p->scopes[s].one_node = i;
        }
    }
}

/* ---------------------------------------------------------------- 4. opening scopes under the cap */

/* Opens scope s if its contents fit in what is left of the cap (bundling its nodes by op if that
 * makes them fit). */
static bool try_open(vz_plan *p, int s, bool *opened)
{
    int items;
    *opened = false;
    if (!vz_cluster_count(p, s, false, &items))
        return false;
    if (p->used + items - 1 > p->max_items) {
        if (!vz_cluster_count(p, s, true, &items))
            return false;
        p->scopes[s].op_bundles = true;
    }
    if (p->used + items - 1 > p->max_items) {
        p->scopes[s].op_bundles = false;
        p->scopes[s].capped = true;
        p->num_capped++;
        return true;
    }
    p->scopes[s].expanded = *opened = true;
    p->scopes[s].num_items = items;
    p->used += items - 1; /* its box becomes its contents */
    return true;
}

static bool open_scopes(vz_plan *p)
{
    int n = p->m->num_nodes, items;
    int *queue = malloc((size_t)(p->num_scopes + 1) * sizeof *queue), head = 0, tail = 0;
    bool ok = queue && vz_cluster_count(p, VZ_ROOT, false, &items);
    if (ok && p->used + items > p->max_items) {
        ok = vz_cluster_count(p, VZ_ROOT, true, &items);
        p->root_bundled = true;
    }
    p->used += items;
    queue[tail++] = VZ_ROOT;
    while (ok && head < tail) {
        int c = queue[head++], b, e;
        vz_cluster_range(p, c, &b, &e);
        for (int k = b; ok && k < e; k++) {
            int entry = p->entries.list[k];
            bool opened = false;
            if (entry < n || !p->scopes[entry - n].requested || p->entries.series[k] >= 0)
                continue;
            ok = try_open(p, entry - n, &opened);
            if (opened)
                queue[tail++] = entry - n;
        }
    }
    free(queue);
    return ok;
}

/* ---------------------------------------------------------------- 5. items */

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
    it->device_index = -1;
    it->max_time_ns = -1;
    return p->num_items++;
}

/* The item of a series or bundle: its key and the first line of its label. */
static int series_item(vz_plan *p, int s, int c)
{
    vz_series *se = &p->series[s];
    if (se->item >= 0)
        return se->item;
    int it = add_item(p, se->kind, -1, -1, c);
    if (it < 0)
        return -1;
    const char *scope = c >= 0 ? p->scopes[c].name : "", *sep = c >= 0 ? "/" : "";
    char *key = NULL, *label = NULL;
    int r1, r2;
    if (se->kind == VZ_ITEM_SERIES) {
        r1 = asprintf(&key, "%s%s%s_*", scope, sep, se->base);
        if (se->lo < 0)
            r2 = asprintf(&label, "%s[_1-%lld]", se->base, se->hi);
        else
            r2 = asprintf(&label, "%s_[%lld-%lld]", se->base, se->lo, se->hi);
    } else {
        r1 = asprintf(&key, "%s%s%s", scope, sep, se->base[0] ? se->base : "*");
        r2 = asprintf(&label, "%s", se->base[0] ? se->base : "scopes");
    }
    p->items[it].key = r1 < 0 ? NULL : key;
    p->items[it].label = r2 < 0 ? NULL : label;
    p->items[it].members = se->members;
    p->items[it].member_scopes = se->member_scopes;
    if (!p->items[it].key || !p->items[it].label)
        return -1;
    return se->item = it;
}

/* Items for the entries of open cluster c; entry_item[k] gets the item of entry k. */
static bool cluster_items(vz_plan *p, int c, int *entry_item)
{
    int n = p->m->num_nodes, b, e;
    vz_cluster_range(p, c, &b, &e);
    for (int k = b; k < e; k++) {
        int entry = p->entries.list[k], s = p->entries.series[k], it = -1;
        if (s >= 0) {
            it = series_item(p, s, c);
        } else if (entry < n) {
            it = add_item(p, VZ_ITEM_NODE, entry, -1, c);
        } else {
            vz_scope *sc = &p->scopes[entry - n];
            if (sc->expanded)
                continue;
            if (sc->visible == 1)
                it = add_item(p, VZ_ITEM_NODE, sc->one_node, -1, c);
            else
                it = sc->item = add_item(p, VZ_ITEM_SCOPE, -1, entry - n, c);
        }
        if (it < 0)
            return false;
        entry_item[k] = it;
    }
    return true;
}

/* The outermost collapsed scope holding scope s (s included), or VZ_ROOT when all are open. */
static int collapsed_ancestor(const vz_plan *p, int s)
{
    int found = VZ_ROOT;
    for (; s >= 0; s = p->scopes[s].parent)
        if (!p->scopes[s].expanded)
            found = s;
    return found;
}

static bool group_items(vz_plan *p)
{
    for (int g = 0; g < VZ_NUM_GROUPS; g++)
        p->group_item[g] = -1;
    for (int i = 0; i < p->m->num_nodes; i++) {
        int g = p->group[i];
        if (g == VZ_GROUP_NONE || p->group_item[g] >= 0)
            continue;
        int it = add_item(p, VZ_ITEM_GROUP, -1, -1, VZ_SIDE_CLUSTER);
        if (it < 0)
            return false;
        p->items[it].group = g;
        p->items[it].key = strdup(vz_group_name((vz_group)g));
        p->items[it].label = strdup(g == VZ_GROUP_INIT ? "initialisers" : vz_group_name((vz_group)g));
        if (!p->items[it].key || !p->items[it].label)
            return false;
        p->group_item[g] = it;
        p->used++;
    }
    return true;
}

static bool make_items(vz_plan *p)
{
    const vz_model *m = p->m;
    int n = m->num_nodes;
    int *entry_item = malloc((size_t)(n + p->num_scopes + 1) * sizeof *entry_item);
    bool ok = entry_item && cluster_items(p, VZ_ROOT, entry_item);
    for (int s = 0; ok && s < p->num_scopes; s++)
        if (p->scopes[s].expanded)
            ok = cluster_items(p, s, entry_item);
    for (int i = 0; ok && i < n; i++) {
        int it;
        if (p->group[i] != VZ_GROUP_NONE) {
            it = p->group_item[p->group[i]];
        } else if (p->is_aux[i]) {
            it = add_item(p, VZ_ITEM_NODE, i, -1, VZ_AUX_CLUSTER);
        } else {
            int c = collapsed_ancestor(p, p->node_scope[i]);
            it = entry_item[p->entries.pos[c < 0 ? i : n + c]];
        }
        ok = it >= 0;
        p->node_item[i] = it;
    }
    free(entry_item);
    return ok;
}

/* Each item's node count, majority device (ties: the first in palette order, unplaced last) and
 * slowest node. */
static bool item_stats(vz_plan *p)
{
    const vz_model *m = p->m;
    int nd = m->num_devices + 1; /* the last slot: unplaced */
    int *counts = calloc((size_t)p->num_items * (size_t)nd + 1, sizeof *counts);
    if (!counts)
        return false;
    for (int i = 0; i < m->num_nodes; i++) {
        vz_item *it = &p->items[p->node_item[i]];
        int d = m->nodes[i].device_index;
        counts[(size_t)p->node_item[i] * (size_t)nd + (size_t)(d < 0 ? nd - 1 : d)]++;
        it->nodes++;
        if (m->nodes[i].time_ns > it->max_time_ns)
            it->max_time_ns = m->nodes[i].time_ns;
    }
    for (int it = 0; it < p->num_items; it++) {
        int best = 0;
        for (int d = 1; d < nd; d++)
            if (counts[(size_t)it * (size_t)nd + (size_t)d] > counts[(size_t)it * (size_t)nd + (size_t)best])
                best = d;
        p->items[it].device_index = best == nd - 1 ? -1 : best;
    }
    free(counts);
    return true;
}

/* ---------------------------------------------------------------- 6. edges */

static bool add_edge(vz_plan *p, int from, int to, bool data)
{
    if (from == to)
        return true;
    int *slot = vz_imap_slot(&p->edge_by_pair, (int64_t)from * INT32_MAX + to);
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

/* The stub of aux node a next to consumer item c (made on first use, in c's cluster); -1 when out of
 * memory, -2 when the cap leaves no room for it. */
static int stub_for(vz_plan *p, int a, int c)
{
    int *slot = vz_imap_slot(&p->stub_by_pair, (int64_t)a * INT32_MAX + c);
    if (!slot)
        return -1;
    if (*slot < 0) {
        if (p->used >= p->max_items)
            return -2;
        int cluster = p->items[c].cluster == VZ_AUX_CLUSTER ? VZ_ROOT : p->items[c].cluster;
        int s = add_item(p, VZ_ITEM_STUB, a, -1, cluster);
        if (s < 0)
            return -1;
        p->items[s].consumer = c;
        p->used++;
        *slot = s;
    }
    return *slot;
}

/* One edge between two items of the drawing: a group's edges to the model are counted, not drawn;
 * an aux producer feeds a stub instead; edges into aux nodes are left out (they would pull the aux
 * column into the graph). */
static bool connect_pair(vz_plan *p, int src, int dst, bool data)
{
    int from = p->node_item[src], to = p->node_item[dst];
    vz_item *f = &p->items[from], *t = &p->items[to];
    if (from == to)
        return true;
    if (f->kind == VZ_ITEM_GROUP && t->kind == VZ_ITEM_GROUP)
        return add_edge(p, from, to, data);
    if (f->kind == VZ_ITEM_GROUP || t->kind == VZ_ITEM_GROUP) {
        f->out_edges += f->kind == VZ_ITEM_GROUP;
        t->in_edges += t->kind == VZ_ITEM_GROUP;
        return true;
    }
    if (p->is_aux[dst])
        return true;
    if (p->is_aux[src]) {
        int stub = stub_for(p, src, to);
        if (stub == -2) {
            p->stubs_dropped++;
            return true;
        }
        return stub >= 0 && add_edge(p, stub, to, data);
    }
    return add_edge(p, from, to, data);
}

static bool connect(vz_plan *p)
{
    const vz_model *m = p->m;
    for (int i = 0; i < m->num_nodes; i++) {
        const vz_node *n = &m->nodes[i];
        for (int k = 0; k < n->num_producers + n->num_controls; k++) {
            int src = k < n->num_producers ? n->producers[k] : n->controls[k - n->num_producers];
            if (src >= 0 && !connect_pair(p, src, i, k < n->num_producers))
                return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- 7. the highlight */

/* The item (or open cluster) to outline for a node or scope name. */
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
    if (p->scopes[s].expanded) {
        p->highlight_cluster = s;
        return TIDE_OK;
    }
    /* A collapsed scope: the item of one of its nodes (a visible one first: the box that holds it). */
    size_t len = strlen(name);
    int any = -1;
    for (int k = 0; k < p->m->num_nodes; k++) {
        const char *n = p->m->nodes[k].name;
        if (strncmp(n, name, len) != 0 || n[len] != '/')
            continue;
        if (any < 0)
            any = k;
        if (p->group[k] == VZ_GROUP_NONE && !p->is_aux[k]) {
            any = k;
            break;
        }
    }
    p->highlight_item = any >= 0 ? p->node_item[any] : -1;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- the plan */

/* One plan with cap max_items (passes 1-6). */
static bool build_once(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, int max_items)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->color = o->color;
    p->max_items = max_items;
    size_t n = (size_t)(m->num_nodes ? m->num_nodes : 1);
    p->node_scope = malloc(n * sizeof *p->node_scope);
    p->node_item = malloc(n * sizeof *p->node_item);
    p->group = calloc(n, sizeof *p->group);
    p->is_aux = calloc(n, sizeof *p->is_aux);
    bool ok = p->node_scope && p->node_item && p->group && p->is_aux && collect_scopes(p) &&
              mark_requested(p, o) && assign_groups(p, o) && group_items(p) &&
              find_aux(p, o->aux_degree ? o->aux_degree : 6);
    if (ok)
        count_visible(p);
    return ok && vz_entries_build(p) && open_scopes(p) && make_items(p) && item_stats(p) && connect(p);
}

/* Builds the plan with cap max_items; false when out of memory. */
static bool build_costed(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, int max_items, int asked)
{
    if (!build_once(p, m, o, max_items) || (p->layout_cost = vz_plan_layout_cost(p)) < 0)
        return false;
    p->asked_max_items = asked;
    return true;
}

tide_status vz_plan_build(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, tide_error *err)
{
    int asked = o->max_items > 0 ? o->max_items : VZ_DEFAULT_MAX_ITEMS;
    bool ok = build_costed(p, m, o, asked, asked);
    if (ok && p->layout_cost > VZ_MAX_LAYOUT_COST && asked > VZ_MIN_ITEMS) {
        /* Too costly to lay out: the largest cap (to within a tenth) whose plan fits. */
        int fits = VZ_MIN_ITEMS, too_much = asked;
        while (ok && too_much - fits > (fits / 10 > 5 ? fits / 10 : 5)) {
            int mid = fits + (too_much - fits) / 2;
            vz_plan_free(p);
            ok = build_costed(p, m, o, mid, asked);
            if (ok && p->layout_cost <= VZ_MAX_LAYOUT_COST)
                fits = mid;
            else
                too_much = mid;
        }
        if (ok && p->max_items != fits) {
            vz_plan_free(p);
            ok = build_costed(p, m, o, fits, asked);
        }
    }
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
    vz_map_free(&p->ungrouped);
    for (int i = 0; i < p->num_items; i++) {
        free(p->items[i].key);
        free(p->items[i].label);
    }
    free(p->items);
    free(p->edges);
    vz_imap_free(&p->edge_by_pair);
    vz_imap_free(&p->stub_by_pair);
    free(p->entries.start);
    free(p->entries.list);
    free(p->entries.series);
    free(p->entries.pos);
    free(p->entries.pair_start);
    free(p->entries.pairs);
    for (int s = 0; s < p->num_series; s++)
        free(p->series[s].base);
    free(p->series);
    free(p->node_scope);
    free(p->node_item);
    free(p->group);
    free(p->is_aux);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------- names of what is drawn */

static const char *item_prefix(vz_item_kind kind)
{
    static const char *const prefixes[] = {"node:", "scope:", "stub:", "series:", "ops:", "group:"};
    return prefixes[kind];
}

/* The name an item is known by after its prefix: a node's or scope's name, or the key. */
static const char *item_name(const vz_plan *p, const vz_item *it)
{
    if (it->kind == VZ_ITEM_SCOPE)
        return p->scopes[it->scope].name;
    if (it->kind == VZ_ITEM_NODE || it->kind == VZ_ITEM_STUB)
        return p->m->nodes[it->node].name;
    return it->key;
}

/* s with every '&' written "&amp;" (see graph_svg.c). Malloc'd. */
static char *amp_escape(const char *s)
{
    size_t n = strlen(s), extra = 0;
    for (size_t i = 0; i < n; i++)
        extra += s[i] == '&' ? 4 : 0;
    char *out = malloc(n + extra + 1), *q = out;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '&') {
            memcpy(q, "&amp;", 5);
            q += 5;
        } else {
            *q++ = s[i];
        }
    }
    if (out)
        *q = '\0';
    return out;
}

char *vz_item_id(const vz_plan *p, const vz_item *it, bool for_graphviz)
{
    char *id = NULL;
    int r;
    if (it->kind == VZ_ITEM_STUB) {
        const vz_item *c = &p->items[it->consumer];
        bool plain = c->kind == VZ_ITEM_NODE || c->kind == VZ_ITEM_SCOPE;
        r = asprintf(&id, "stub:%s@%s%s", item_name(p, it), plain ? "" : item_prefix(c->kind), item_name(p, c));
    } else {
        r = asprintf(&id, "%s%s", item_prefix(it->kind), item_name(p, it));
    }
    if (r < 0)
        return NULL;
    if (!for_graphviz)
        return id;
    char *escaped = amp_escape(id);
    free(id);
    return escaped;
}

/* Appends a line to *text (malloc'd); false when out of memory. */
static bool add_note(char **text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool add_note(char **text, const char *fmt, ...)
{
    va_list ap;
    char *line = NULL, *joined = NULL;
    va_start(ap, fmt);
    int r = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (r < 0)
        return false;
    r = asprintf(&joined, "%s%s%s", *text, **text ? "\n" : "", line);
    free(line);
    if (r < 0)
        return false;
    free(*text);
    *text = joined;
    return true;
}

char *vz_plan_notes(const vz_plan *p)
{
    char *text = strdup(""), names[256] = "";
    bool ok = text != NULL, more = false;
    size_t len = 0;
    int bundled = 0;
    for (int s = 0; s < p->num_scopes; s++) {
        const vz_scope *sc = &p->scopes[s];
        bundled += sc->expanded && sc->op_bundles;
        if (sc->capped && len + strlen(sc->name) + 3 < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", sc->name);
        else if (sc->capped)
            more = true;
    }
    if (ok && p->max_items < p->asked_max_items)
        ok = add_note(&text, "The cap is %d items, not %d: the drawing would have long edges across many ranks, "
                      "slow to lay out.", p->max_items, p->asked_max_items);
    if (ok && p->root_bundled)
        ok = add_note(&text, "The top level is too large to draw node by node (the cap is %d items): its nodes "
                      "are bundled by op.", p->max_items);
    if (ok && p->num_capped)
        ok = add_note(&text, "%d scope%s drawn collapsed: opening %s would pass the cap of %d items (%s%s).",
                      p->num_capped, p->num_capped == 1 ? " is" : "s are", p->num_capped == 1 ? "it" : "them",
                      p->max_items, names, more ? ", ..." : "");
    if (ok && bundled)
        ok = add_note(&text, "%d open scope%s too large to draw node by node: %s nodes are bundled by op.",
                      bundled, bundled == 1 ? " is" : "s are", bundled == 1 ? "its" : "their");
    if (ok && p->stubs_dropped)
        ok = add_note(&text, "%d edge%s of auxiliary nodes %s not drawn (the cap of %d items).", p->stubs_dropped,
                      p->stubs_dropped == 1 ? "" : "s", p->stubs_dropped == 1 ? "is" : "are", p->max_items);
    if (!ok) {
        free(text);
        return NULL;
    }
    return text;
}
