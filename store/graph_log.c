/* graph_log.c — graph versions in the run log, stored as differences (schema 4).
 *
 * A session's logged versions form a lineage. Each node row of graph_nodes belongs to a lineage and
 * holds one node as it is from version `added_in` until version `removed_in` (exclusive; NULL while it
 * is current), at its index in the graph (`position`). A version therefore writes only the nodes that
 * are new or changed (renamed, placed on another device, or rolled back and rebuilt) and closes the
 * rows of those that changed or went; the view `nodes` joins them back into whole versions, so that a
 * 100k-node graph extended 21 times costs 100k + 21 rows, not 2.1 M.
 *
 * Two sides:
 *  - the caller's (the thread that drives the graph, or the one that starts a run: under graphs_lock)
 *    remembers per lineage what it sent last (each node's serial, name and assigned device) so that
 *    it formats only the nodes that changed, and builds an ST_GRAPH record numbered `seq`;
 *  - the writer's (st_graph_writer, on the writer thread) remembers per lineage its root version and
 *    the last seq written. A record that does not follow the last one written (an earlier version was
 *    lost with a failed transaction) is skipped and counted, and the caller's side is told to send the
 *    next version whole (`needs_whole`), which closes every open row and writes all nodes again.
 *
 *   caller: seq 1 (whole) ── seq 2 (diff) ── seq 3 (diff) ──...
 *   writer:   root = id1      close + insert    close + insert     (a failed transaction: rollback,
 *                                                                  needs_whole -> the next is whole)
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define PLANS_REMEMBERED 16 /* plans (by their fetch-name arrays) whose placement was logged */

typedef struct logged_node {
    uint64_t serial;      /* tide_node_serial */
    char *name;
    const char *assigned; /* the engine's device name (a stable pointer), NULL if unplaced */
} logged_node;

struct st_lineage {
    struct st_lineage *next;
    const void *session;
    uint64_t seq;           /* versions built so far; the next is seq + 1 */
    uint64_t graph_version; /* tide_graph_version of the latest */
    bool needs_whole;       /* the writer lost a version: the next one is sent whole */
    int num_nodes, cap_nodes;
    logged_node *nodes;
    const void *plans[PLANS_REMEMBERED];
    int next_plan;
};

/* ---------------------------------------------------------------- the caller's side: lineages */

static void lineage_clear(st_lineage *l)
{
    for (int i = 0; i < l->num_nodes; i++)
        free(l->nodes[i].name);
    free(l->nodes);
    const void *session = l->session;
    st_lineage *next = l->next;
    memset(l, 0, sizeof *l);
    l->session = session;
    l->next = next;
}

static st_lineage *find_lineage(tide_store *s, const void *session)
{
    for (st_lineage *l = s->lineages; l; l = l->next)
        if (l->session == session)
            return l;
    return NULL;
}

static st_lineage *get_lineage(tide_store *s, const void *session)
{
    st_lineage *l = find_lineage(s, session);
    if (!l && (l = calloc(1, sizeof *l))) {
        l->session = session;
        l->next = s->lineages;
        s->lineages = l;
    }
    return l;
}

void st_lineage_reset(tide_store *s, const void *session)
{
    pthread_mutex_lock(&s->graphs_lock);
    st_lineage *l = get_lineage(s, session);
    if (l)
        lineage_clear(l);
    pthread_mutex_unlock(&s->graphs_lock);
}

void st_lineages_free(tide_store *s)
{
    while (s->lineages) {
        st_lineage *l = s->lineages;
        s->lineages = l->next;
        lineage_clear(l);
        free(l);
    }
}

/* The writer lost a version of session's lineage: the next is sent whole. */
static void lineage_needs_whole(tide_store *s, const void *session)
{
    pthread_mutex_lock(&s->graphs_lock);
    st_lineage *l = find_lineage(s, session);
    if (l)
        l->needs_whole = true;
    pthread_mutex_unlock(&s->graphs_lock);
}

/* ---------------------------------------------------------------- the caller's side: one node's row */

/* The attrs of one line of graph text ("name = Op(in, ^ctl, a=1, b=[1, 2]) @dev"): the top-level
 * items of the parenthesis that are `identifier=value`, joined by ", ". Malloc'd. */
static char *attrs_of_line(const char *line, size_t len)
{
    st_buf b = {0};
    const char *p = memchr(line, '(', len), *end = line + len;
    int depth = 0;
    bool quoted = false;
    const char *item = p ? p + 1 : end;
    for (const char *q = item; p && q < end; q++) {
        if (quoted) {
            if (*q == '\\' && q + 1 < end)
                q++;
            else if (*q == '"')
                quoted = false;
            continue;
        }
        if (*q == '"') {
            quoted = true;
        } else if (*q == '(' || *q == '[') {
            depth++;
        } else if ((*q == ',' && depth == 0) || (*q == ')' && depth == 0)) {
            while (item < q && isspace((unsigned char)*item))
                item++;
            const char *id = item;
            while (id < q && (isalnum((unsigned char)*id) || *id == '_'))
                id++;
            if (id > item && id < q && *id == '=') {
                if (b.len)
                    st_buf_puts(&b, ", ");
                st_buf_add(&b, item, (size_t)(q - item));
            }
            item = q + 1;
            if (*q == ')')
                break;
        } else if (*q == ')' || *q == ']') {
            depth--;
        }
    }
    return st_buf_take(&b);
}

static char *json_inputs(const tide_node *n)
{
    int k = tide_node_num_inputs(n);
    st_buf b = {0};
    st_buf_puts(&b, "[");
    for (int i = 0; i < k; i++) {
        tide_output in = tide_node_input(n, i);
        char index[32];
        snprintf(index, sizeof index, ":%d", in.index);
        st_buf one = {0};
        st_buf_puts(&one, tide_node_name(in.node));
        st_buf_puts(&one, index);
        char *s = st_buf_take(&one);
        if (i)
            st_buf_puts(&b, ",");
        if (s)
            st_buf_json_string(&b, s);
        else
            b.failed = true;
        free(s);
    }
    st_buf_puts(&b, "]");
    return st_buf_take(&b);
}

static char *json_control_inputs(const tide_node *n)
{
    int k = tide_node_num_control_inputs(n);
    const char **names = calloc((size_t)(k > 0 ? k : 1), sizeof *names);
    if (!names)
        return NULL;
    for (int i = 0; i < k; i++)
        names[i] = tide_node_name(tide_node_control_input(n, i));
    char *s = st_json_strings(names, k);
    free(names);
    return s;
}

void st_node_rec_clear(st_node_rec *n)
{
    free(n->name);
    free(n->op);
    free(n->inputs);
    free(n->control_inputs);
    free(n->attrs);
    free(n->requested_device);
    free(n->assigned_device);
    free(n->line);
}

static bool fill_node(st_node_rec *nr, const tide_node *n, int position)
{
    const char *assigned = tide_node_assigned_device(n);
    nr->position = position;
    nr->line = tide_node_to_text(n);
    nr->name = st_strdup(tide_node_name(n));
    nr->op = st_strdup(tide_node_op(n));
    nr->inputs = json_inputs(n);
    nr->control_inputs = json_control_inputs(n);
    nr->attrs = nr->line ? attrs_of_line(nr->line, strlen(nr->line)) : NULL;
    nr->requested_device = st_strdup(tide_node_requested_device(n));
    nr->assigned_device = assigned ? st_strdup(assigned) : NULL;
    return nr->line && nr->name && nr->op && nr->inputs && nr->control_inputs && nr->attrs && nr->requested_device &&
           (!assigned || nr->assigned_device);
}

/* ---------------------------------------------------------------- the caller's side: what changed */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool contains(const uint64_t *sorted, int n, uint64_t v)
{
    return n > 0 && bsearch(&v, sorted, (size_t)n, sizeof v, cmp_u64) != NULL;
}

/* Whether node n reads (data or control) a node whose serial is in renamed. */
static bool reads_renamed(const tide_node *n, const uint64_t *renamed, int num_renamed)
{
    for (int k = 0; k < tide_node_num_inputs(n); k++)
        if (contains(renamed, num_renamed, tide_node_serial(tide_node_input(n, k).node)))
            return true;
    for (int k = 0; k < tide_node_num_control_inputs(n); k++)
        if (contains(renamed, num_renamed, tide_node_serial(tide_node_control_input(n, k))))
            return true;
    return false;
}

/* Marks changed[i] for every node of g that differs from what l sent last (all of them when whole):
 * new, another node at that index, renamed, placed elsewhere, or reading a renamed node (its inputs
 * name it). Returns how many, or -1 when out of memory. */
static int mark_changed(const st_lineage *l, const tide_graph *g, bool whole, bool *changed)
{
    int n = tide_graph_num_nodes(g), count = 0, num_renamed = 0;
    uint64_t *renamed = NULL;
    for (int i = 0; i < n; i++) {
        const tide_node *node = tide_graph_node_at(g, i);
        const logged_node *old = i < l->num_nodes ? &l->nodes[i] : NULL;
        bool same_node = !whole && old && old->serial == tide_node_serial(node);
        bool same_name = same_node && strcmp(old->name, tide_node_name(node)) == 0;
        changed[i] = !same_name || old->assigned != tide_node_assigned_device(node);
        count += changed[i];
        if (same_node && !same_name) {
            uint64_t *grown = realloc(renamed, sizeof *renamed * ((size_t)num_renamed + 1));
            if (!grown) {
                free(renamed);
                return -1;
            }
            renamed = grown;
            renamed[num_renamed++] = old->serial;
        }
    }
    if (num_renamed) {
        qsort(renamed, (size_t)num_renamed, sizeof *renamed, cmp_u64);
        for (int i = 0; i < n; i++)
            if (!changed[i] && reads_renamed(tide_graph_node_at(g, i), renamed, num_renamed)) {
                changed[i] = true;
                count++;
            }
    }
    free(renamed);
    return count;
}

/* Makes l remember g's nodes as sent (the changed ones are copied). False when out of memory. */
static bool remember(st_lineage *l, const tide_graph *g, const bool *changed)
{
    int n = tide_graph_num_nodes(g);
    for (int i = n; i < l->num_nodes; i++) {
        free(l->nodes[i].name);
        l->nodes[i].name = NULL;
    }
    if (n > l->cap_nodes) {
        int cap = l->cap_nodes ? l->cap_nodes : 64;
        while (cap < n)
            cap *= 2;
        logged_node *grown = realloc(l->nodes, sizeof *grown * (size_t)cap);
        if (!grown)
            return false;
        memset(grown + l->cap_nodes, 0, sizeof *grown * (size_t)(cap - l->cap_nodes));
        l->nodes = grown;
        l->cap_nodes = cap;
    }
    l->num_nodes = n;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (!changed[i])
            continue;
        const tide_node *node = tide_graph_node_at(g, i);
        logged_node *m = &l->nodes[i];
        free(m->name);
        m->name = st_strdup(tide_node_name(node));
        m->serial = tide_node_serial(node);
        m->assigned = tide_node_assigned_device(node);
        ok = ok && m->name;
    }
    return ok;
}

/* Builds the record of l's next version of g. *r is NULL (and the call true) when nothing changed
 * since the version sent last; false when out of memory (l then sends its next version whole). */
static bool build_version(st_lineage *l, const tide_graph *g, const void *session, st_record **r)
{
    *r = NULL;
    int n = tide_graph_num_nodes(g);
    bool whole = l->seq == 0 || l->needs_whole;
    bool *changed = calloc((size_t)(n > 0 ? n : 1), sizeof *changed);
    int count = changed ? mark_changed(l, g, whole, changed) : -1;
    bool ok = count >= 0;
    if (ok && !whole && count == 0 && n == l->num_nodes) {
        l->graph_version = tide_graph_version(g);
        free(changed);
        return true;
    }
    st_record *rec = ok ? calloc(1, sizeof *rec) : NULL;
    if (rec) {
        rec->kind = ST_GRAPH;
        rec->session = session;
        rec->u.graph.version = (int64_t)tide_graph_version(g);
        rec->u.graph.made_at_ns = st_realtime_ns(); /* before the run that follows starts */
        rec->u.graph.whole = whole;
        rec->u.graph.num_nodes = n;
        rec->u.graph.nodes = calloc((size_t)(count > 0 ? count : 1), sizeof *rec->u.graph.nodes);
        ok = rec->u.graph.nodes != NULL;
        for (int i = 0; ok && i < n; i++)
            if (changed[i])
                ok = fill_node(&rec->u.graph.nodes[rec->u.graph.num_changed++], tide_graph_node_at(g, i), i);
    }
    ok = ok && rec && remember(l, g, changed);
    free(changed);
    if (!ok) {
        st_record_free(rec);
        l->needs_whole = true;
        return false;
    }
    rec->u.graph.seq = ++l->seq;
    l->needs_whole = false;
    l->graph_version = tide_graph_version(g);
    *r = rec;
    return true;
}

static bool plan_seen(st_lineage *l, const void *plan)
{
    for (int i = 0; i < PLANS_REMEMBERED; i++)
        if (l->plans[i] == plan)
            return true;
    l->plans[l->next_plan] = plan;
    l->next_plan = (l->next_plan + 1) % PLANS_REMEMBERED;
    return false;
}

void st_graph_before_run(tide_store *s, const tide_run_info *run)
{
    if (!run->session)
        return;
    pthread_mutex_lock(&s->graphs_lock);
    st_lineage *l = find_lineage(s, run->session);
    const tide_graph *g = l ? tide_session_graph(run->session) : NULL;
    /* a plan's name arrays live as long as the plan: a new one may have placed nodes */
    bool new_plan = l && !plan_seen(l, run->fetch_names);
    if (g && (new_plan || l->needs_whole || l->seq == 0 || tide_graph_version(g) != l->graph_version)) {
        st_record *r = NULL;
        if (!build_version(l, g, run->session, &r)) {
            st_note_dropped(s, ST_GRAPH, 1, false);
            st_note_error(s, false, "run log %s: out of memory logging a graph version (the next is logged whole)",
                          s->path);
        } else if (r) {
            st_push(s, r); /* under graphs_lock: versions queue in their order, before this run */
        }
    }
    pthread_mutex_unlock(&s->graphs_lock);
}

int64_t tide_store_log_graph(tide_store *s, const tide_session *session, tide_error *err)
{
    if (!s || !session) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "log_graph: store and session are required");
        return -1;
    }
    pthread_mutex_lock(&s->graphs_lock);
    st_lineage *l = get_lineage(s, session);
    st_record *r = NULL;
    bool ok = l && build_version(l, tide_session_graph(session), session, &r);
    if (ok && !r && (r = calloc(1, sizeof *r))) { /* unchanged: the writer answers the latest version's id */
        r->kind = ST_GRAPH;
        r->session = session;
        r->u.graph.unchanged = true;
        r->u.graph.seq = l->seq;
    }
    st_sync sync;
    if (ok && r)
        st_push_sync(s, r, &sync); /* under graphs_lock: versions queue in their order */
    pthread_mutex_unlock(&s->graphs_lock);
    if (!ok || !r) {
        st_note_dropped(s, ST_GRAPH, 1, false);
        st_note_error(s, false, "run log %s: out of memory logging a graph version", s->path);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory logging a graph version");
        return -1;
    }
    return st_wait_sync(s, &sync, err);
}

/* ---------------------------------------------------------------- the writer's side */

enum { G_INSERT, G_CLOSE_ALL, G_CLOSE_AT, G_CLOSE_FROM, G_NODE, G_COUNT };

static const char *const graph_sql[G_COUNT] = {
    [G_INSERT] = "INSERT INTO graphs(session_id, version, text, lineage, created_at) VALUES (?, ?, '', ?, "
                 "strftime('%Y-%m-%d %H:%M:%f', ?4 / 1e9, 'unixepoch'))",
    [G_CLOSE_ALL] = "UPDATE graph_nodes SET removed_in = ?1 WHERE lineage = ?2 AND removed_in IS NULL",
    [G_CLOSE_AT] = "UPDATE graph_nodes SET removed_in = ?1 WHERE lineage = ?2 AND position = ?3 AND removed_in IS NULL",
    [G_CLOSE_FROM] = "UPDATE graph_nodes SET removed_in = ?1 WHERE lineage = ?2 AND position >= ?3 "
                     "AND removed_in IS NULL",
    [G_NODE] = "INSERT INTO graph_nodes(lineage, added_in, position, name, op, inputs, control_inputs, attrs, "
               "requested_device, assigned_device, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

/* A lineage as the writer knows it: what is written in the open transaction, and what is committed. */
typedef struct written {
    const void *session;
    uint64_t seq, committed_seq;       /* the last version written (0: none) */
    int64_t root, committed_root;      /* graphs.id of the lineage's first version */
    int64_t last_id, committed_last_id;
    bool touched;                      /* written in the open transaction */
} written;

struct st_graph_writer {
    sqlite3 *db;
    sqlite3_stmt *q[G_COUNT];
    written *v;
    int n, cap;
};

st_graph_writer *st_graph_writer_new(sqlite3 *db)
{
    st_graph_writer *gw = calloc(1, sizeof *gw);
    if (!gw)
        return NULL;
    gw->db = db;
    for (int i = 0; i < G_COUNT; i++)
        if (sqlite3_prepare_v3(db, graph_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &gw->q[i], NULL) != SQLITE_OK) {
            st_graph_writer_free(gw);
            return NULL;
        }
    return gw;
}

void st_graph_writer_free(st_graph_writer *gw)
{
    if (!gw)
        return;
    for (int i = 0; i < G_COUNT; i++)
        sqlite3_finalize(gw->q[i]);
    free(gw->v);
    free(gw);
}

static written *find_written(st_graph_writer *gw, const void *session, bool create)
{
    for (int i = 0; i < gw->n; i++)
        if (gw->v[i].session == session)
            return &gw->v[i];
    if (!create)
        return NULL;
    if (gw->n == gw->cap) {
        int cap = gw->cap ? gw->cap * 2 : 8;
        written *grown = realloc(gw->v, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        gw->v = grown;
        gw->cap = cap;
    }
    gw->v[gw->n] = (written){.session = session};
    return &gw->v[gw->n++];
}

static sqlite3_stmt *bound(st_graph_writer *gw, int which)
{
    sqlite3_reset(gw->q[which]);
    sqlite3_clear_bindings(gw->q[which]);
    return gw->q[which];
}

static bool step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    return rc == SQLITE_DONE;
}

static bool close_rows(st_graph_writer *gw, int which, int64_t graph, int64_t root, int position)
{
    sqlite3_stmt *st = bound(gw, which);
    sqlite3_bind_int64(st, 1, graph);
    sqlite3_bind_int64(st, 2, root);
    if (which != G_CLOSE_ALL)
        sqlite3_bind_int(st, 3, position);
    return step_done(st);
}

static bool insert_node(st_graph_writer *gw, const st_node_rec *n, int64_t root, int64_t graph)
{
    sqlite3_stmt *st = bound(gw, G_NODE);
    sqlite3_bind_int64(st, 1, root);
    sqlite3_bind_int64(st, 2, graph);
    sqlite3_bind_int(st, 3, n->position);
    const char *cols[8] = {n->name, n->op, n->inputs, n->control_inputs, n->attrs, n->requested_device,
                           n->assigned_device, n->line};
    for (int c = 0; c < 8; c++)
        sqlite3_bind_text(st, c + 4, cols[c], -1, SQLITE_STATIC);
    return step_done(st);
}

/* Writes the version's rows: the graphs row, the rows it closes and the rows it adds. */
static int64_t write_version(st_graph_writer *gw, const st_record *r, int64_t session_id, written *e, bool new_root,
                             const char **what)
{
    sqlite3_stmt *st = bound(gw, G_INSERT);
    if (session_id > 0)
        sqlite3_bind_int64(st, 1, session_id);
    sqlite3_bind_int64(st, 2, r->u.graph.version);
    if (!new_root)
        sqlite3_bind_int64(st, 3, e->root);
    sqlite3_bind_int64(st, 4, r->u.graph.made_at_ns);
    *what = "inserting a graph version";
    if (!step_done(st))
        return -1;
    int64_t graph = sqlite3_last_insert_rowid(gw->db), root = new_root ? graph : e->root;
    *what = "closing the node rows a graph version changed";
    if (!new_root && r->u.graph.whole && !close_rows(gw, G_CLOSE_ALL, graph, root, 0))
        return -1;
    if (!new_root && !r->u.graph.whole) {
        for (int i = 0; i < r->u.graph.num_changed; i++)
            if (!close_rows(gw, G_CLOSE_AT, graph, root, r->u.graph.nodes[i].position))
                return -1;
        if (!close_rows(gw, G_CLOSE_FROM, graph, root, r->u.graph.num_nodes))
            return -1;
    }
    *what = "inserting a node";
    for (int i = 0; i < r->u.graph.num_changed; i++)
        if (!insert_node(gw, &r->u.graph.nodes[i], root, graph))
            return -1;
    e->root = root;
    return graph;
}

int64_t st_graph_write(st_graph_writer *gw, tide_store *s, st_record *r, int64_t session_id, const char **what)
{
    written *e = find_written(gw, r->session, false);
    *what = "logging a graph version";
    if (r->u.graph.unchanged)
        return e && e->seq == r->u.graph.seq ? e->last_id : 0;
    bool new_root = r->u.graph.seq == 1 || (r->u.graph.whole && (!e || !e->root));
    if (!new_root && !r->u.graph.whole && (!e || e->seq + 1 != r->u.graph.seq)) {
        lineage_needs_whole(s, r->session); /* an earlier version is missing: this one cannot apply */
        return 0;
    }
    if (!e && !(e = find_written(gw, r->session, true)))
        return -1;
    if (!e->touched) { /* what a rollback restores */
        e->touched = true;
        e->committed_seq = e->seq;
        e->committed_root = e->root;
        e->committed_last_id = e->last_id;
    }
    /* a savepoint, so that a statement that fails (a trigger...) leaves no half version behind */
    if (sqlite3_exec(gw->db, "SAVEPOINT graph_version", NULL, NULL, NULL) != SQLITE_OK) {
        *what = "starting a savepoint";
        return -1;
    }
    written before = *e;
    int64_t graph = write_version(gw, r, session_id, e, new_root, what);
    if (graph < 0) {
        *e = before;
        return -1; /* the caller reads the error, then st_graph_write_undo */
    }
    sqlite3_exec(gw->db, "RELEASE graph_version", NULL, NULL, NULL);
    e->seq = r->u.graph.seq;
    e->last_id = graph;
    return graph;
}

void st_graph_write_undo(st_graph_writer *gw, tide_store *s, const st_record *r)
{
    if (!sqlite3_get_autocommit(gw->db))
        sqlite3_exec(gw->db, "ROLLBACK TO graph_version; RELEASE graph_version", NULL, NULL, NULL);
    lineage_needs_whole(s, r->session);
}

void st_graph_writer_rollback(st_graph_writer *gw, tide_store *s, bool lost)
{
    for (int i = 0; i < gw->n; i++) {
        written *e = &gw->v[i];
        if (!e->touched)
            continue;
        e->seq = e->committed_seq;
        e->root = e->committed_root;
        e->last_id = e->committed_last_id;
        e->touched = false;
        if (lost)
            lineage_needs_whole(s, e->session);
    }
}

void st_graph_writer_commit(st_graph_writer *gw)
{
    for (int i = 0; i < gw->n; i++)
        gw->v[i].touched = false;
}
