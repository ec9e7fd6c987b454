/* model.c — the graph model of viz/: one graph version read from the run log (nodes, their inputs
 * resolved to indices, consumer counts), each node's effective device (the contract in viz.h: the
 * chosen run's timings, else the latest traced run of the session that timed it, else the assigned
 * device), its kernel time in the colour run and the fused group it ran in there. Also the small shared helpers: the name table, the
 * JSON string-array reader, integer-bound queries. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_internal.h"

/* ---------------------------------------------------------------- the name table */

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static bool map_grow(vz_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(cap, sizeof *keys);
    int *values = calloc(cap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_str(m->keys[i]) & (cap - 1);
        while (keys[j])
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

bool vz_map_put(vz_map *m, const char *key, int value)
{
    if ((m->count + 1) * 2 > m->cap && !map_grow(m))
        return false;
    size_t j = hash_str(key) & (m->cap - 1);
    while (m->keys[j] && strcmp(m->keys[j], key) != 0)
        j = (j + 1) & (m->cap - 1);
    if (!m->keys[j])
        m->count++;
    m->keys[j] = key;
    m->values[j] = value;
    return true;
}

int vz_map_get(const vz_map *m, const char *key)
{
    if (!m->cap || !key)
        return -1;
    size_t j = hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0)
            return m->values[j];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void vz_map_free(vz_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- small helpers */

tide_store_table *vz_query(const char *db_path, tide_store_query_id q, const int64_t *params, int n, int max_rows,
                           tide_error *err)
{
    char text[4][24];
    const char *p[4];
    for (int i = 0; i < n && i < 4; i++) {
        snprintf(text[i], sizeof text[i], "%" PRId64, params[i]);
        p[i] = text[i];
    }
    return tide_store_query_named(db_path, q, p, n, max_rows, err);
}

int64_t vz_cell_int(const tide_store_table *t, int row, int col)
{
    const char *c = tide_store_table_cell(t, row, col);
    if (!c || tide_store_table_is_null(t, row, col))
        return 0;
    return strtoll(c, NULL, 10);
}

bool vz_json_strings(const char *json, bool (*fn)(void *user, const char *s), void *user)
{
    if (!json)
        return true;
    char *buf = malloc(strlen(json) + 1);
    if (!buf)
        return false;
    const char *p = json;
    bool ok = true;
    while (*p == ' ' || *p == '\t' || *p == '\n')
        p++;
    if (*p++ != '[') {
        free(buf);
        return true;
    }
    while (ok) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
            p++;
        if (*p != '"')
            break;
        size_t n = 0;
        for (p++; *p && *p != '"'; p++) {
            if (*p != '\\') {
                buf[n++] = *p;
                continue;
            }
            p++;
            if (!*p)
                break;
            if (*p == 'u' && strlen(p) >= 5) {
                unsigned v = (unsigned)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
                buf[n++] = v > 0 && v < 0x80 ? (char)v : '?';
                p += 4;
            } else {
                buf[n++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
            }
        }
        buf[n] = '\0';
        if (*p == '"')
            p++;
        ok = fn(user, buf);
    }
    free(buf);
    return ok;
}

/* Natural order: runs of digits compare as numbers. */
int vz_natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            char *ea, *eb;
            unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
            if (x != y)
                return x < y ? -1 : 1;
            a = ea;
            b = eb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return *a ? 1 : *b ? -1 : 0;
}

/* Checks options shared by every graph call. */
static tide_status vz_check_options(const tide_viz_graph_options *o, tide_error *err)
{
    if (!o)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: the options are required");
    if (o->session < 0 || o->version < 0 || o->run < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: session, version and run must be >= 0 "
                              "(0: the latest)");
    if (o->num_expanded < 0 || (o->num_expanded > 0 && !o->expanded))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: %d expanded scopes but no list", o->num_expanded);
    for (int i = 0; i < o->num_expanded; i++)
        if (!o->expanded[i])
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: expanded scope %d is NULL", i);
    if (o->aux_degree < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: aux_degree must be >= 0 (0: 6), not %d",
                              o->aux_degree);
    if (o->max_items < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: max_items must be >= 0 (0: the default cap), not %d",
                              o->max_items);
    if (o->color != TIDE_VIZ_COLOR_DEVICE && o->color != TIDE_VIZ_COLOR_TIME)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: unknown colour mode %d (device or time)",
                              (int)o->color);
    return TIDE_OK;
}

void tide_viz_graph_options_init(tide_viz_graph_options *o)
{
    memset(o, 0, sizeof *o);
    o->color = TIDE_VIZ_COLOR_DEVICE;
}

/* ---------------------------------------------------------------- loading a graph version */

static bool keep_table(vz_model *m, tide_store_table *t)
{
    if (m->num_tables == (int)(sizeof m->tables / sizeof m->tables[0])) {
        tide_store_table_free(t);
        return false;
    }
    m->tables[m->num_tables++] = t;
    return true;
}

/* Column col of a one-row query as an integer; *found false when there is no row or it is NULL. */
static tide_status query_one(const vz_model *m, tide_store_query_id q, const int64_t *params, int n, int col,
                             int64_t *out, bool *found, tide_error *err)
{
    tide_store_table *t = vz_query(m->db_path, q, params, n, 1, err);
    if (!t)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    *found = tide_store_table_num_rows(t) > 0 && !tide_store_table_is_null(t, 0, col);
    *out = *found ? vz_cell_int(t, 0, col) : 0;
    tide_store_table_free(t);
    return TIDE_OK;
}

/* Session, graph id and version, the run for colours. */
static tide_status resolve_ids(vz_model *m, const tide_viz_graph_options *o, tide_error *err)
{
    bool found = false;
    int64_t v;
    tide_status st;
    if (o->session == 0) {
        st = query_one(m, TIDE_STORE_Q_LATEST_GRAPH_SESSION, NULL, 0, 0, &m->session, &found, err);
        if (st == TIDE_OK && !found)
            return tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no graph of a logged session", m->db_path);
    } else {
        m->session = o->session;
        st = query_one(m, TIDE_STORE_Q_SESSION_EXISTS, &o->session, 1, 0, &v, &found, err);
        if (st == TIDE_OK && !found)
            return tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no session %" PRId64, m->db_path, o->session);
    }
    if (st != TIDE_OK)
        return st;
    int64_t p[2] = {m->session, o->version};
    st = query_one(m, TIDE_STORE_Q_SESSION_GRAPH, p, 2, 0, &m->graph_id, &found, err);
    if (st == TIDE_OK && !found && o->version)
        return tide_error_set(err, TIDE_NOT_FOUND, "session %" PRId64 " has no graph version %" PRId64 " in %s",
                              m->session, o->version, m->db_path);
    if (st == TIDE_OK && !found)
        return tide_error_set(err, TIDE_NOT_FOUND, "session %" PRId64 " has no graph in %s", m->session, m->db_path);
    if (st == TIDE_OK)
        st = query_one(m, TIDE_STORE_Q_SESSION_GRAPH, p, 2, 1, &m->version, &found, err);
    if (st != TIDE_OK)
        return st;
    if (o->run) {
        st = query_one(m, TIDE_STORE_Q_RUN_BRIEF, &o->run, 1, 3, &v, &found, err);
        if (st == TIDE_OK && !found)
            return tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no run %" PRId64, m->db_path, o->run);
        if (st == TIDE_OK && !v && o->color == TIDE_VIZ_COLOR_TIME)
            return tide_error_set(err, TIDE_NOT_FOUND, "run %" PRId64 " was not traced: it has no node times",
                                  o->run);
        m->run = o->run;
        return st;
    }
    st = query_one(m, TIDE_STORE_Q_LATEST_TRACED_RUN, &m->session, 1, 0, &m->run, &found, err);
    if (st == TIDE_OK && !found && o->color == TIDE_VIZ_COLOR_TIME)
        return tide_error_set(err, TIDE_NOT_FOUND, "session %" PRId64 " has no traced run to colour by time",
                              m->session);
    return st;
}

typedef struct input_ctx {
    vz_model *m;
    int *list;
    int count;
    bool strip_index;
} input_ctx;

static bool add_input(void *user, const char *s)
{
    input_ctx *c = user;
    char name[1024];
    snprintf(name, sizeof name, "%s", s);
    char *colon = c->strip_index ? strrchr(name, ':') : NULL;
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1))
        *colon = '\0';
    c->list[c->count++] = vz_map_get(&c->m->by_name, name);
    return true;
}

/* A JSON array has at most (commas + 1) strings: an upper bound for the index array. */
static int count_items(const char *json)
{
    int n = 1;
    for (const char *p = json ? json : ""; *p; p++)
        n += *p == ',';
    return n;
}

static bool parse_edges(vz_model *m, vz_node *n)
{
    input_ctx c = {m, NULL, 0, true};
    n->producers = malloc((size_t)count_items(n->inputs_json) * sizeof(int));
    n->controls = malloc((size_t)count_items(n->controls_json) * sizeof(int));
    if (!n->producers || !n->controls)
        return false;
    c.list = n->producers;
    if (!vz_json_strings(n->inputs_json, add_input, &c))
        return false;
    n->num_producers = c.count;
    c = (input_ctx){m, n->controls, 0, false};
    if (!vz_json_strings(n->controls_json, add_input, &c))
        return false;
    n->num_controls = c.count;
    return true;
}

/* Consumers: distinct nodes taking data or control from each node. */
static bool count_consumers(vz_model *m)
{
    int *stamp = malloc((size_t)(m->num_nodes ? m->num_nodes : 1) * sizeof *stamp);
    if (!stamp)
        return false;
    for (int i = 0; i < m->num_nodes; i++)
        stamp[i] = -1;
    for (int i = 0; i < m->num_nodes; i++) {
        vz_node *n = &m->nodes[i];
        for (int k = 0; k < n->num_producers + n->num_controls; k++) {
            int p = k < n->num_producers ? n->producers[k] : n->controls[k - n->num_producers];
            if (p >= 0 && stamp[p] != i) {
                stamp[p] = i;
                m->nodes[p].num_consumers++;
            }
        }
    }
    free(stamp);
    return true;
}

static tide_status load_nodes(vz_model *m, tide_error *err)
{
    tide_store_table *t = vz_query(m->db_path, TIDE_STORE_Q_GRAPH_NODES, &m->graph_id, 1, 1 << 24, err);
    if (!t)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    keep_table(m, t);
    m->num_nodes = tide_store_table_num_rows(t);
    m->nodes = calloc((size_t)(m->num_nodes ? m->num_nodes : 1), sizeof *m->nodes);
    if (!m->nodes)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading graph %" PRId64, m->graph_id);
    for (int i = 0; i < m->num_nodes; i++) {
        vz_node *n = &m->nodes[i];
        n->name = tide_store_table_cell(t, i, 0);
        n->op = tide_store_table_cell(t, i, 1);
        n->inputs_json = tide_store_table_cell(t, i, 2);
        n->controls_json = tide_store_table_cell(t, i, 3);
        n->attrs = tide_store_table_is_null(t, i, 4) ? "" : tide_store_table_cell(t, i, 4);
        n->requested = tide_store_table_is_null(t, i, 5) ? "" : tide_store_table_cell(t, i, 5);
        n->assigned = tide_store_table_is_null(t, i, 6) ? NULL : tide_store_table_cell(t, i, 6);
        n->device = n->assigned ? n->assigned : "";
        n->time_ns = -1;
        if (!vz_map_put(&m->by_name, n->name, i))
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading graph %" PRId64, m->graph_id);
    }
    for (int i = 0; i < m->num_nodes; i++)
        if (!parse_edges(m, &m->nodes[i]))
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading graph %" PRId64, m->graph_id);
    if (!count_consumers(m))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading graph %" PRId64, m->graph_id);
    return TIDE_OK;
}

/* Marks the members of the fused group whose root's timing row r of t names them (column 3: "h, r,
 * out"). Names are split at ", " (a node's name has neither commas nor spaces); names not in this
 * version are skipped. */
static void mark_fused(vz_model *m, const tide_store_table *t, int r)
{
    const char *root = tide_store_table_cell(t, r, 0), *members = tide_store_table_cell(t, r, 3);
    char name[1024];
    int marked = 0;
    for (const char *at = members; at && *at;) {
        const char *end = strstr(at, ", ");
        size_t n = end ? (size_t)(end - at) : strlen(at);
        if (n < sizeof name) {
            memcpy(name, at, n);
            name[n] = '\0';
            int i = vz_map_get(&m->by_name, name);
            if (i >= 0 && !m->nodes[i].fused_root) {
                m->nodes[i].fused_root = root;
                m->nodes[i].fused_members = members;
                marked++;
            }
        }
        at = end ? end + 2 : at + n;
    }
    if (marked > 0) {
        m->num_fused_groups++;
        m->num_fused_nodes += marked;
    }
}

/* Sets device (and time and fused groups, for the colour run) from a timings table: node, device,
 * time_ns or run, fused. Only nodes not yet resolved take a device. */
static void apply_timings(vz_model *m, const tide_store_table *t, bool *resolved, bool times)
{
    for (int r = 0; r < tide_store_table_num_rows(t); r++) {
        if (times && !tide_store_table_is_null(t, r, 3))
            mark_fused(m, t, r);
        int i = vz_map_get(&m->by_name, tide_store_table_cell(t, r, 0));
        if (i < 0)
            continue; /* _Send/_Recv, or a node of another version */
        if (times) {
            m->nodes[i].time_ns = vz_cell_int(t, r, 2);
            if (m->nodes[i].time_ns < 0)
                m->nodes[i].time_ns = 0;
        }
        if (!resolved[i] && !tide_store_table_is_null(t, r, 1)) {
            m->nodes[i].device = tide_store_table_cell(t, r, 1);
            resolved[i] = true;
        }
    }
}

static tide_status load_timings(vz_model *m, tide_error *err)
{
    bool *resolved = calloc((size_t)(m->num_nodes ? m->num_nodes : 1), sizeof *resolved);
    if (!resolved)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading node timings");
    tide_status st = TIDE_OK;
    if (m->run) {
        tide_store_table *t = vz_query(m->db_path, TIDE_STORE_Q_RUN_NODE_TIMES, &m->run, 1, 1 << 24, err);
        if (!t)
            st = err ? tide_error_code(err) : TIDE_INTERNAL;
        else if (keep_table(m, t))
            apply_timings(m, t, resolved, true);
    }
    int unresolved = 0;
    for (int i = 0; i < m->num_nodes; i++)
        unresolved += !resolved[i];
    if (st == TIDE_OK && unresolved) {
        tide_store_table *t = vz_query(m->db_path, TIDE_STORE_Q_SESSION_NODE_DEVICES, &m->session, 1, 1 << 24, err);
        if (!t)
            st = err ? tide_error_code(err) : TIDE_INTERNAL;
        else if (keep_table(m, t))
            apply_timings(m, t, resolved, false);
    }
    free(resolved);
    m->time_min_ns = m->time_max_ns = -1;
    for (int i = 0; i < m->num_nodes; i++) {
        int64_t t = m->nodes[i].time_ns;
        if (t >= 0 && (m->time_min_ns < 0 || t < m->time_min_ns))
            m->time_min_ns = t;
        if (t > m->time_max_ns)
            m->time_max_ns = t;
    }
    return st;
}

/* The palette (palette.c): the session's devices, then the other effective devices of the nodes. */
static tide_status load_devices(vz_model *m, tide_error *err)
{
    tide_status st = vz_palette_load(&m->palette, m->db_path, m->session, err);
    bool ok = st == TIDE_OK;
    for (int i = 0; ok && i < m->num_nodes; i++)
        ok = vz_palette_add(&m->palette, m->nodes[i].device);
    if (st == TIDE_OK && !ok)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory loading devices");
    if (st != TIDE_OK)
        return st;
    vz_palette_finish(&m->palette);
    m->num_devices = m->palette.num;
    for (int i = 0; i < m->num_nodes; i++) {
        vz_node *n = &m->nodes[i];
        n->device_index = vz_palette_index(&m->palette, n->device);
        m->any_unplaced |= n->device_index < 0;
    }
    return TIDE_OK;
}

tide_status vz_model_load(vz_model *m, const char *db_path, const tide_viz_graph_options *o, tide_error *err)
{
    memset(m, 0, sizeof *m);
    m->db_path = db_path;
    if (!db_path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph: the run log's path is required");
    tide_status st = vz_check_options(o, err);
    if (st == TIDE_OK)
        st = resolve_ids(m, o, err);
    if (st == TIDE_OK)
        st = load_nodes(m, err);
    if (st == TIDE_OK)
        st = load_timings(m, err);
    if (st == TIDE_OK)
        st = load_devices(m, err);
    return st;
}

void vz_model_free(vz_model *m)
{
    for (int i = 0; i < m->num_nodes; i++) {
        free(m->nodes[i].producers);
        free(m->nodes[i].controls);
    }
    free(m->nodes);
    vz_map_free(&m->by_name);
    vz_palette_free(&m->palette);
    for (int i = 0; i < m->num_tables; i++)
        tide_store_table_free(m->tables[i]);
    memset(m, 0, sizeof *m);
}
