/* writer.c — the store's writer thread: the only user of the SQLite connection once the store is
 * open. It takes records off the queue in batches (up to ST_BATCH_MAX records, waiting at most
 * ST_BATCH_LINGER_NS for a batch to fill unless someone waits on a synchronous record) and writes each
 * batch in one IMMEDIATE transaction with statements prepared once. It keeps two maps: session
 * pointer -> sessions.id and the engine's run id -> runs.id of the runs in flight.
 *
 *   queue ──pop batch──> BEGIN IMMEDIATE ──insert each──> COMMIT ──> wake synchronous callers
 *                         (busy: retried)                  (fails: batch dropped and counted)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

enum {
    Q_BEGIN, Q_COMMIT, Q_ROLLBACK, Q_SESSION, Q_GRAPH, Q_NODE, Q_RUN, Q_RUN_END, Q_TIMING, Q_TENSOR,
    Q_PRUNE, Q_SUMMARY, Q_COUNT
};

static const char *const sql[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_SESSION] = "INSERT INTO sessions(label, threads, devices) VALUES (?, ?, ?)",
    [Q_GRAPH] = "INSERT INTO graphs(session_id, version, text) VALUES (?, ?, ?)",
    [Q_NODE] = "INSERT INTO nodes(graph_id, name, op, inputs, control_inputs, attrs, requested_device, "
               "assigned_device) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_RUN] = "INSERT INTO runs(session_id, step, run_id, started_at_ns, wall_ns, status, error, feeds, "
              "fetches, targets, traced) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_RUN_END] = "UPDATE runs SET wall_ns = ?, status = ?, error = ? WHERE id = ?",
    [Q_TIMING] = "INSERT INTO node_timings(run_id, node, op, device, thread, scheduled_ns, start_ns, end_ns, "
                 "output_bytes, shapes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_TENSOR] = "INSERT INTO tensors(run_id, step, node, output, dtype, shape, min, max, mean, std, "
                 "nan_count, inf_count, histogram, value, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_SUMMARY] = "INSERT INTO summaries(run_id, step, tag, value) VALUES (?, ?, ?, ?)",
    /* runs.id grows with every run logged, by any store writing the file: the newest are the largest */
    [Q_PRUNE] = "UPDATE tensors SET value = NULL WHERE value IS NOT NULL AND run_id NOT IN "
                "(SELECT id FROM runs ORDER BY id DESC LIMIT ?)",
};

#define MAX_RUNS_IN_FLIGHT 4096 /* runs whose end record was dropped are forgotten beyond this */
#define BEGIN_ATTEMPTS 6        /* each waits up to the busy timeout */

typedef struct key_id {
    uint64_t key;
    int64_t id;
} key_id;

/* A small map kept as an array: it holds the sessions of the process and the runs in flight. */
typedef struct id_map {
    key_id *v;
    int n, cap;
} id_map;

typedef struct writer {
    tide_store *s;
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
    id_map sessions, runs;
    char error[256]; /* the first failure of the current batch */
} writer;

static int map_find(const id_map *m, uint64_t key)
{
    for (int i = m->n - 1; i >= 0; i--)
        if (m->v[i].key == key)
            return i;
    return -1;
}

static void map_put(id_map *m, uint64_t key, int64_t id, int max)
{
    int i = map_find(m, key);
    if (i >= 0) {
        m->v[i].id = id;
        return;
    }
    if (m->n >= max) { /* forget the oldest */
        memmove(m->v, m->v + 1, (size_t)(m->n - 1) * sizeof *m->v);
        m->n--;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        key_id *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v)
            return;
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = (key_id){key, id};
}

static void map_remove(id_map *m, int i)
{
    m->v[i] = m->v[--m->n];
}

/* ---------------------------------------------------------------- statements */

static void fail(writer *w, const char *what)
{
    if (!w->error[0])
        snprintf(w->error, sizeof w->error, "run log %s: %s: %s", w->s->path, what, sqlite3_errmsg(w->db));
}

static sqlite3_stmt *stmt(writer *w, int which)
{
    sqlite3_stmt *st = w->q[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

/* Steps a bound statement to completion; false (and w->error) on failure. */
static bool done(writer *w, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        fail(w, what); /* before the reset, which may clear the message */
    sqlite3_reset(st);
    return rc == SQLITE_DONE;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static void bind_id(sqlite3_stmt *st, int i, int64_t id)
{
    if (id > 0)
        sqlite3_bind_int64(st, i, id);
    else
        sqlite3_bind_null(st, i);
}

static int64_t session_id(writer *w, const void *session)
{
    int i = map_find(&w->sessions, (uint64_t)(uintptr_t)session);
    return i >= 0 ? w->sessions.v[i].id : 0;
}

/* ---------------------------------------------------------------- one record */

static bool write_session(writer *w, st_record *r)
{
    sqlite3_stmt *st = stmt(w, Q_SESSION);
    bind_text(st, 1, r->u.session.label);
    sqlite3_bind_int(st, 2, r->u.session.threads);
    bind_text(st, 3, r->u.session.devices);
    if (!done(w, st, "inserting a session"))
        return false;
    r->sync->id = sqlite3_last_insert_rowid(w->db);
    map_put(&w->sessions, (uint64_t)(uintptr_t)r->session, r->sync->id, 1 << 30);
    return true;
}

static bool write_graph(writer *w, st_record *r)
{
    sqlite3_stmt *st = stmt(w, Q_GRAPH);
    bind_id(st, 1, session_id(w, r->session));
    sqlite3_bind_int64(st, 2, r->u.graph.version);
    bind_text(st, 3, r->u.graph.text);
    if (!done(w, st, "inserting a graph"))
        return false;
    int64_t graph = sqlite3_last_insert_rowid(w->db);
    for (int i = 0; i < r->u.graph.num_nodes; i++) {
        const st_node_rec *n = &r->u.graph.nodes[i];
        st = stmt(w, Q_NODE);
        sqlite3_bind_int64(st, 1, graph);
        const char *cols[7] = {n->name, n->op, n->inputs, n->control_inputs, n->attrs, n->requested_device,
                               n->assigned_device};
        for (int c = 0; c < 7; c++)
            bind_text(st, c + 2, cols[c]);
        if (!done(w, st, "inserting a node"))
            return false;
    }
    r->sync->id = graph;
    return true;
}

static bool insert_run(writer *w, st_record *r, bool ended)
{
    sqlite3_stmt *st = stmt(w, Q_RUN);
    bind_id(st, 1, session_id(w, r->session));
    sqlite3_bind_int64(st, 2, r->step);
    sqlite3_bind_int64(st, 3, (int64_t)r->run_id);
    sqlite3_bind_int64(st, 4, r->u.run.started_at_ns);
    if (ended) {
        sqlite3_bind_int64(st, 5, r->u.run.wall_ns);
        sqlite3_bind_int(st, 6, r->u.run.status);
        bind_text(st, 7, r->u.run.error);
    }
    bind_text(st, 8, r->u.run.feeds);
    bind_text(st, 9, r->u.run.fetches);
    bind_text(st, 10, r->u.run.targets);
    sqlite3_bind_int(st, 11, r->u.run.traced);
    return done(w, st, "inserting a run");
}

static bool write_run_start(writer *w, st_record *r)
{
    if (!insert_run(w, r, false))
        return false;
    map_put(&w->runs, r->run_id, sqlite3_last_insert_rowid(w->db), MAX_RUNS_IN_FLIGHT);
    return true;
}

static bool write_run_end(writer *w, st_record *r)
{
    int i = map_find(&w->runs, r->run_id);
    if (i < 0) /* its start was dropped */
        return insert_run(w, r, true);
    sqlite3_stmt *st = stmt(w, Q_RUN_END);
    sqlite3_bind_int64(st, 1, r->u.run.wall_ns);
    sqlite3_bind_int(st, 2, r->u.run.status);
    bind_text(st, 3, r->u.run.error);
    sqlite3_bind_int64(st, 4, w->runs.v[i].id);
    map_remove(&w->runs, i);
    return done(w, st, "updating a run");
}

/* The runs.id of a record's run; 0 when the run's start was dropped (the record is dropped too). */
static int64_t run_row(writer *w, const st_record *r)
{
    int i = map_find(&w->runs, r->run_id);
    return i >= 0 ? w->runs.v[i].id : 0;
}

static bool write_timing(writer *w, st_record *r, bool *dropped)
{
    int64_t run = run_row(w, r);
    if (!run) {
        *dropped = true;
        return true;
    }
    sqlite3_stmt *st = stmt(w, Q_TIMING);
    sqlite3_bind_int64(st, 1, run);
    bind_text(st, 2, r->u.timing.node);
    bind_text(st, 3, r->u.timing.op);
    bind_text(st, 4, r->u.timing.device);
    sqlite3_bind_int(st, 5, r->u.timing.thread);
    sqlite3_bind_int64(st, 6, r->u.timing.scheduled_ns);
    sqlite3_bind_int64(st, 7, r->u.timing.start_ns);
    sqlite3_bind_int64(st, 8, r->u.timing.end_ns);
    sqlite3_bind_int64(st, 9, r->u.timing.output_bytes);
    bind_text(st, 10, r->u.timing.shapes);
    return done(w, st, "inserting a node timing");
}

static bool write_tensor(writer *w, st_record *r, bool *dropped)
{
    int64_t run = run_row(w, r);
    if (!run) {
        *dropped = true;
        return true;
    }
    sqlite3_stmt *st = stmt(w, Q_TENSOR);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, r->step);
    bind_text(st, 3, r->u.tensor.node);
    sqlite3_bind_int(st, 4, r->u.tensor.output);
    bind_text(st, 5, r->u.tensor.dtype);
    bind_text(st, 6, r->u.tensor.shape);
    if (r->u.tensor.has_stats) {
        sqlite3_bind_double(st, 7, r->u.tensor.min);
        sqlite3_bind_double(st, 8, r->u.tensor.max);
        sqlite3_bind_double(st, 9, r->u.tensor.mean);
        sqlite3_bind_double(st, 10, r->u.tensor.std);
    }
    sqlite3_bind_int64(st, 11, r->u.tensor.nan_count);
    sqlite3_bind_int64(st, 12, r->u.tensor.inf_count);
    bind_text(st, 13, r->u.tensor.histogram);
    if (r->u.tensor.value)
        sqlite3_bind_blob64(st, 14, r->u.tensor.value, r->u.tensor.value_len, SQLITE_STATIC);
    bind_text(st, 15, r->u.tensor.fetched ? "fetched" : "watched");
    return done(w, st, "inserting a tensor");
}

static bool write_summary(writer *w, st_record *r, bool *dropped)
{
    int64_t run = run_row(w, r);
    if (!run) {
        *dropped = true;
        return true;
    }
    sqlite3_stmt *st = stmt(w, Q_SUMMARY);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, r->step);
    bind_text(st, 3, r->u.summary.tag);
    if (isnan(r->u.summary.value)) /* SQLite stores a NaN double as NULL: keep it, as the text 'NaN' */
        sqlite3_bind_text(st, 4, "NaN", -1, SQLITE_STATIC);
    else
        sqlite3_bind_double(st, 4, r->u.summary.value);
    return done(w, st, "inserting a summary");
}

static bool write_prune(writer *w, st_record *r)
{
    sqlite3_stmt *st = stmt(w, Q_PRUNE);
    sqlite3_bind_int64(st, 1, r->u.prune.keep_last_runs);
    if (!done(w, st, "pruning tensor values"))
        return false;
    r->sync->id = sqlite3_changes(w->db);
    return true;
}

static bool write_record(writer *w, st_record *r, bool *dropped)
{
    switch (r->kind) {
    case ST_RUN_START: return write_run_start(w, r);
    case ST_RUN_END: return write_run_end(w, r);
    case ST_TIMING: return write_timing(w, r, dropped);
    case ST_TENSOR: return write_tensor(w, r, dropped);
    case ST_SESSION: return write_session(w, r);
    case ST_GRAPH: return write_graph(w, r);
    case ST_FLUSH: r->sync->id = 0; return true;
    case ST_PRUNE: return write_prune(w, r);
    case ST_SUMMARY: return write_summary(w, r, dropped);
    }
    return false;
}

/* ---------------------------------------------------------------- one batch */

/* Steps a BEGIN or COMMIT, retrying while another connection holds the lock (BUSY; for BEGIN also
 * LOCKED); false after recording the failure. */
static bool step_retrying(writer *w, int q, bool retry_locked, const char *what)
{
    for (int attempt = 0; attempt < BEGIN_ATTEMPTS; attempt++) {
        int rc = sqlite3_step(stmt(w, q));
        sqlite3_reset(w->q[q]);
        if (rc == SQLITE_DONE)
            return true;
        if (rc != SQLITE_BUSY && !(retry_locked && rc == SQLITE_LOCKED))
            break;
    }
    fail(w, what);
    return false;
}

static bool begin(writer *w)
{
    return step_retrying(w, Q_BEGIN, true, "starting a transaction");
}

static bool commit(writer *w)
{
    if (step_retrying(w, Q_COMMIT, false, "committing"))
        return true;
    sqlite3_step(stmt(w, Q_ROLLBACK));
    sqlite3_reset(w->q[Q_ROLLBACK]);
    return false;
}

/* Writes the records in one transaction; fills the sync of each synchronous one (the caller wakes
 * them). Asynchronous records that fail, or whose run is unknown, are counted as dropped; if the
 * transaction fails, all of them are. */
static void write_batch(writer *w, st_record *batch)
{
    w->error[0] = '\0';
    int64_t dropped = 0, async = 0;
    bool ok = begin(w);
    for (st_record *r = batch; r; r = r->next) {
        async += !r->sync;
        bool skip = false;
        if (ok && write_record(w, r, &skip)) {
            dropped += skip;
        } else if (r->sync) {
            r->sync->status = TIDE_INTERNAL;
            snprintf(r->sync->message, sizeof r->sync->message, "%s", w->error);
        } else {
            dropped++;
        }
    }
    if (ok && !commit(w)) {
        w->runs.n = 0; /* their rows were rolled back */
        dropped = async;
        for (st_record *r = batch; r; r = r->next)
            if (r->sync && r->sync->status == TIDE_OK) {
                r->sync->status = TIDE_UNAVAILABLE;
                snprintf(r->sync->message, sizeof r->sync->message, "%s", w->error);
            }
    }
    if (dropped)
        atomic_fetch_add(&w->s->dropped, dropped);
    if (w->error[0]) {
        pthread_mutex_lock(&w->s->lock);
        snprintf(w->s->last_error, sizeof w->s->last_error, "%s", w->error);
        pthread_mutex_unlock(&w->s->lock);
    }
}

/* ---------------------------------------------------------------- the thread */

static bool wants_batch_now(const tide_store *s)
{
    return s->stop || s->paused || s->queued >= ST_BATCH_MAX || s->syncs_queued > 0;
}

/* Pops up to ST_BATCH_MAX records (synchronous ones included); called with the lock held. */
static st_record *pop_batch(tide_store *s)
{
    st_record *first = s->head, *last = NULL;
    int n = 0;
    for (st_record *r = first; r && n < ST_BATCH_MAX; r = r->next, n++) {
        last = r;
        if (!r->sync)
            s->queued--;
        else
            s->syncs_queued--;
    }
    s->head = last->next;
    if (!s->head)
        s->tail = NULL;
    last->next = NULL;
    return first;
}

static void run_loop(writer *w)
{
    tide_store *s = w->s;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && (!s->head || s->paused))
            pthread_cond_wait(&s->nonempty, &s->lock);
        if (!s->head)
            break; /* stopping, and everything is written */
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += ST_BATCH_LINGER_NS;
        deadline.tv_sec += deadline.tv_nsec / 1000000000L;
        deadline.tv_nsec %= 1000000000L;
        while (!wants_batch_now(s))
            if (pthread_cond_timedwait(&s->nonempty, &s->lock, &deadline) != 0)
                break;
        if (s->paused && !s->stop)
            continue;
        st_record *batch = pop_batch(s);
        pthread_mutex_unlock(&s->lock);
        write_batch(w, batch);
        pthread_mutex_lock(&s->lock);
        bool woke = false;
        for (st_record *r = batch; r; r = r->next)
            if (r->sync) {
                r->sync->done = true; /* the caller's: not touched after this */
                r->sync = NULL;
                woke = true;
            }
        if (woke)
            pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->lock);
        while (batch) {
            st_record *next = batch->next;
            st_record_free(batch);
            batch = next;
        }
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
}

void *st_writer_main(void *arg)
{
    writer w = {.s = arg, .db = ((tide_store *)arg)->db};
    bool ok = true;
    for (int i = 0; i < Q_COUNT && ok; i++)
        ok = sqlite3_prepare_v3(w.db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &w.q[i], NULL) == SQLITE_OK;
    if (!ok) { /* the schema is ours, so this is a bug or a damaged file: answer everyone, drop all */
        fail(&w, "preparing statements");
        pthread_mutex_lock(&w.s->lock);
        snprintf(w.s->last_error, sizeof w.s->last_error, "%s", w.error);
        pthread_mutex_unlock(&w.s->lock);
    }
    if (ok)
        run_loop(&w);
    else
        for (;;) {
            pthread_mutex_lock(&w.s->lock);
            while (!w.s->stop && !w.s->head)
                pthread_cond_wait(&w.s->nonempty, &w.s->lock);
            st_record *batch = w.s->head ? pop_batch(w.s) : NULL;
            for (st_record *r = batch; r; r = r->next)
                if (r->sync) {
                    r->sync->status = TIDE_INTERNAL;
                    snprintf(r->sync->message, sizeof r->sync->message, "%s", w.error);
                    r->sync->done = true;
                    r->sync = NULL;
                } else {
                    atomic_fetch_add(&w.s->dropped, 1);
                }
            pthread_cond_broadcast(&w.s->done);
            bool stop = w.s->stop && !w.s->head;
            pthread_mutex_unlock(&w.s->lock);
            while (batch) {
                st_record *next = batch->next;
                st_record_free(batch);
                batch = next;
            }
            if (stop)
                break;
        }
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(w.q[i]);
    free(w.sessions.v);
    free(w.runs.v);
    return NULL;
}
