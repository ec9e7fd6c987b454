/* series.c — repeated structures of a graph drawn as one box, as TensorBoard's series: in a cluster (the
 * top level or an open scope), siblings named base, base_1, base_2, ... (nodes or scopes) become one
 * item "base_[1-999]" when there are at least VZ_SERIES_MIN of them and no edge joins two of them (a
 * chain of layers "block_1 -> block_2 -> ..." is the model's structure, not a repetition; the summaries
 * a training loop adds at every step, the copies of gradients()'s scope, one_hot's constants are). A
 * scope the user opened, and a series whose key ("layer1/add_*") is listed among the expanded names,
 * stay apart. When a cluster's contents do not fit under the cap, its remaining nodes are bundled by op
 * ("4,001 Const nodes") and, as a last resort, its remaining scopes into one box.
 *
 * The entries of a cluster are what its open contents are before series: its visible nodes and its
 * child scopes that hold visible nodes (vz_entries in viz_plan.h). Edges between entries are found once
 * per plan at the deepest scope holding both ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_plan.h"

static bool visible_node(const vz_plan *p, int i)
{
    return p->group[i] == VZ_GROUP_NONE && !p->is_aux[i];
}

static int slot_of(int cluster)
{
    return cluster + 1; /* VZ_ROOT (-1) is slot 0 */
}

void vz_cluster_range(const vz_plan *p, int c, int *begin, int *end)
{
    *begin = p->entries.start[slot_of(c)];
    *end = p->entries.start[slot_of(c) + 1];
}

int vz_entry_series(const vz_plan *p, int c, int entry_pos)
{
    (void)c;
    return p->entries.series[entry_pos];
}

/* The deepest cluster holding nodes u and v, and the entries of that cluster they are in. */
static int common_cluster(const vz_plan *p, int u, int v, int *eu, int *ev)
{
    int n = p->m->num_nodes, a = p->node_scope[u], b = p->node_scope[v];
    *eu = u;
    *ev = v;
    while (a != b) {
        int da = a >= 0 ? p->scopes[a].depth : -1, db = b >= 0 ? p->scopes[b].depth : -1;
        if (da >= db) {
            *eu = n + a;
            a = p->scopes[a].parent;
        } else {
            *ev = n + b;
            b = p->scopes[b].parent;
        }
    }
    return a;
}

/* Calls fn for each edge between two visible nodes (producer, consumer). */
static void each_visible_edge(vz_plan *p, void (*fn)(vz_plan *p, int u, int v, int pass), int pass)
{
    const vz_model *m = p->m;
    for (int v = 0; v < m->num_nodes; v++) {
        if (!visible_node(p, v))
            continue;
        const vz_node *n = &m->nodes[v];
        for (int k = 0; k < n->num_producers + n->num_controls; k++) {
            int u = k < n->num_producers ? n->producers[k] : n->controls[k - n->num_producers];
            if (u >= 0 && u != v && visible_node(p, u))
                fn(p, u, v, pass);
        }
    }
}

static void add_pair(vz_plan *p, int u, int v, int pass)
{
    int eu, ev, c = common_cluster(p, u, v, &eu, &ev);
    vz_entries *e = &p->entries;
    if (pass == 0) {
        e->pair_start[slot_of(c) + 1] += 2;
    } else {
        int at = e->pair_start[slot_of(c)];
        e->pairs[at] = eu;
        e->pairs[at + 1] = ev;
        e->pair_start[slot_of(c)] += 2;
    }
}

/* Prefix sums of counts stored one slot ahead: afterwards start[s] is where slot s begins. */
static void prefix(int *start, int slots)
{
    for (int s = 1; s <= slots; s++)
        start[s] += start[s - 1];
}

bool vz_entries_build(vz_plan *p)
{
    const vz_model *m = p->m;
    int n = m->num_nodes, slots = p->num_scopes + 1;
    vz_entries *e = &p->entries;
    e->start = calloc((size_t)slots + 1, sizeof *e->start);
    e->pair_start = calloc((size_t)slots + 1, sizeof *e->pair_start);
    e->list = malloc((size_t)(n + p->num_scopes + 1) * sizeof *e->list);
    e->series = malloc((size_t)(n + p->num_scopes + 1) * sizeof *e->series);
    e->pos = malloc((size_t)(n + p->num_scopes + 1) * sizeof *e->pos);
    if (!e->start || !e->pair_start || !e->list || !e->series || !e->pos)
        return false;
    for (int i = 0; i < n; i++)
        if (visible_node(p, i))
            e->start[slot_of(p->node_scope[i]) + 1]++;
    for (int s = 0; s < p->num_scopes; s++)
        if (p->scopes[s].visible > 0)
            e->start[slot_of(p->scopes[s].parent) + 1]++;
    prefix(e->start, slots);
    int *fill = malloc((size_t)slots * sizeof *fill);
    if (!fill)
        return false;
    memcpy(fill, e->start, (size_t)slots * sizeof *fill);
    for (int i = 0; i < n; i++)
        if (visible_node(p, i))
            e->list[fill[slot_of(p->node_scope[i])]++] = i;
    for (int s = 0; s < p->num_scopes; s++)
        if (p->scopes[s].visible > 0)
            e->list[fill[slot_of(p->scopes[s].parent)]++] = n + s;
    free(fill);
    for (int k = 0; k < e->start[slots]; k++) {
        e->series[k] = -1;
        e->pos[e->list[k]] = k;
    }
    each_visible_edge(p, add_pair, 0);
    prefix(e->pair_start, slots);
    e->pairs = malloc((size_t)(e->pair_start[slots] ? e->pair_start[slots] : 1) * sizeof *e->pairs);
    if (!e->pairs)
        return false;
    each_visible_edge(p, add_pair, 1); /* moves each pair_start[s] to the end of slot s... */
    for (int s = slots; s > 0; s--)    /* ...so shift them back to the beginnings */
        e->pair_start[s] = e->pair_start[s - 1];
    e->pair_start[0] = 0;
    return true;
}

/* ---------------------------------------------------------------- series of one cluster */

/* The last name part of an entry. */
static const char *entry_name(const vz_plan *p, int entry)
{
    int n = p->m->num_nodes;
    const char *name = entry < n ? p->m->nodes[entry].name : p->scopes[entry - n].name;
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

/* Splits "add_17" into its base length (3) and number (17); a name without a numeric suffix is its
 * own base (number -1). */
static size_t split_name(const char *s, long long *number)
{
    size_t len = strlen(s);
    const char *us = strrchr(s, '_');
    *number = -1;
    if (!us || us == s || !us[1] || strspn(us + 1, "0123456789") != strlen(us + 1) || strlen(us + 1) > 15)
        return len;
    *number = strtoll(us + 1, NULL, 10);
    return (size_t)(us - s);
}

static int add_series(vz_plan *p, int c, vz_item_kind kind, const char *base, size_t len)
{
    if (p->num_series == p->cap_series) {
        int cap = p->cap_series ? p->cap_series * 2 : 32;
        vz_series *s = realloc(p->series, (size_t)cap * sizeof *s);
        if (!s)
            return -1;
        p->series = s;
        p->cap_series = cap;
    }
    vz_series *s = &p->series[p->num_series];
    memset(s, 0, sizeof *s);
    s->cluster = c;
    s->kind = kind;
    s->item = -1;
    s->lo = s->hi = -2; /* none yet */
    s->uniform_op = true;
    if (!(s->base = malloc(len + 1)))
        return -1;
    memcpy(s->base, base, len);
    s->base[len] = '\0';
    return p->num_series++;
}

/* The key of a series ("layer1/add_*"), as listed in expand= to keep it apart. Malloc'd. */
static char *series_key(const vz_plan *p, int c, const char *base)
{
    char *key = NULL;
    if (asprintf(&key, "%s%s%s_*", c >= 0 ? p->scopes[c].name : "", c >= 0 ? "/" : "", base) < 0)
        return NULL;
    return key;
}

static void add_member(vz_plan *p, vz_series *s, int entry, long long number)
{
    int n = p->m->num_nodes;
    s->members++;
    if (entry >= n) {
        s->member_scopes++;
        s->uniform_op = false;
    } else if (!s->op) {
        s->op = p->m->nodes[entry].op;
    } else if (strcmp(s->op, p->m->nodes[entry].op) != 0) {
        s->uniform_op = false;
    }
    long long v = number < 0 ? -1 : number;
    if (s->lo == -2 || v < s->lo)
        s->lo = v;
    if (v > s->hi)
        s->hi = v;
}

/* The candidate series by base name of the entries [b, e); cand[k - b] gets its index or -1. */
static bool find_candidates(vz_plan *p, int c, int b, int e, int *cand)
{
    vz_map by_base = {0};
    int first = p->num_series;
    bool ok = true;
    for (int k = b; ok && k < e; k++) {
        int entry = p->entries.list[k];
        cand[k - b] = -1;
        if (entry >= p->m->num_nodes && p->scopes[entry - p->m->num_nodes].requested)
            continue; /* an opened scope stays apart */
        long long number;
        const char *name = entry_name(p, entry);
        size_t len = split_name(name, &number);
        char base[256];
        snprintf(base, sizeof base, "%.*s", (int)(len < sizeof base ? len : sizeof base - 1), name);
        int s = vz_map_get(&by_base, base);
        if (s < 0) {
            s = add_series(p, c, VZ_ITEM_SERIES, base, strlen(base));
            ok = s >= 0 && vz_map_put(&by_base, p->series[s].base, s);
        }
        if (ok) {
            add_member(p, &p->series[s], entry, number);
            cand[k - b] = s;
        }
    }
    vz_map_free(&by_base);
    for (int s = first; ok && s < p->num_series; s++) {
        char *key = series_key(p, c, p->series[s].base);
        ok = key != NULL;
        p->series[s].live = ok && p->series[s].members >= VZ_SERIES_MIN && p->series[s].hi >= 0 &&
                            vz_map_get(&p->ungrouped, key) < 0;
        free(key);
    }
    return ok;
}

/* A series whose members are joined by an edge is a chain, not a repetition. */
static void drop_chains(vz_plan *p, int c, int b, const int *cand)
{
    const vz_entries *e = &p->entries;
    int slot = slot_of(c);
    for (int k = e->pair_start[slot]; k < e->pair_start[slot + 1]; k += 2) {
        int su = cand[e->pos[e->pairs[k]] - b], sv = cand[e->pos[e->pairs[k + 1]] - b];
        if (su >= 0 && su == sv)
            p->series[su].live = false;
    }
}

/* Bundles the entries of [b, e) not in a series: nodes by op (level >= 1), scopes into one (level 2). */
static bool bundle(vz_plan *p, int c, int b, int e, int level)
{
    vz_map by_op = {0};
    int n = p->m->num_nodes, scopes = -1, first = p->num_series;
    bool ok = true;
    for (int k = b; ok && k < e; k++) {
        int entry = p->entries.list[k], s;
        if (p->entries.series[k] >= 0)
            continue;
        if (entry >= n) {
            if (level < 2)
                continue;
            if (scopes < 0 && (scopes = add_series(p, c, VZ_ITEM_OPS, "", 0)) < 0)
                ok = false;
            s = scopes;
        } else {
            const char *op = p->m->nodes[entry].op;
            if ((s = vz_map_get(&by_op, op)) < 0) {
                s = add_series(p, c, VZ_ITEM_OPS, op, strlen(op));
                ok = s >= 0 && vz_map_put(&by_op, p->series[s].base, s);
            }
        }
        if (ok) {
            add_member(p, &p->series[s], entry, 0);
            p->entries.series[k] = s;
        }
    }
    vz_map_free(&by_op);
    /* A bundle of one is drawn as itself. */
    for (int k = b; ok && k < e; k++) {
        int s = p->entries.series[k];
        if (s >= 0 && p->series[s].kind == VZ_ITEM_OPS && p->series[s].members < 2)
            p->entries.series[k] = -1;
    }
    for (int s = first; s < p->num_series; s++)
        p->series[s].live = p->series[s].members >= 2;
    return ok;
}

/* Series of a cluster are made afresh at each count: the previous ones die. */
static void forget(vz_plan *p, int b, int e)
{
    for (int k = b; k < e; k++) {
        int s = p->entries.series[k];
        if (s >= 0)
            p->series[s].live = false;
        p->entries.series[k] = -1;
    }
}

bool vz_cluster_count(vz_plan *p, int c, bool op_bundles, int *items)
{
    int b, e, first = p->num_series;
    vz_cluster_range(p, c, &b, &e);
    forget(p, b, e);
    int *cand = malloc((size_t)(e > b ? e - b : 1) * sizeof *cand);
    if (!cand || !find_candidates(p, c, b, e, cand)) {
        free(cand);
        return false;
    }
    drop_chains(p, c, b, cand);
    for (int k = b; k < e; k++)
        p->entries.series[k] = cand[k - b] >= 0 && p->series[cand[k - b]].live ? cand[k - b] : -1;
    free(cand);
    for (int level = op_bundles ? 1 : 0;; level++) {
        if (level > 0 && !bundle(p, c, b, e, level))
            return false;
        int count = 0;
        for (int k = b; k < e; k++)
            count += p->entries.series[k] < 0;
        for (int s = first; s < p->num_series; s++)
            count += p->series[s].live;
        *items = count;
        if (level == 0 || level == 2 || count <= p->max_items)
            return true;
    }
}
