/* writer.c — the store's writer thread: the only user of the SQLite connection once the store is
 * open. It takes records off the queue in batches (ST_BATCH_MIN records, or up to ST_BATCH_MAX when it
 * is behind, waiting at most ST_BATCH_LINGER_NS for a batch to fill unless someone waits on a
 * synchronous record) and writes each batch in one IMMEDIATE transaction with statements prepared
 * once. It keeps two maps: session pointer -> sessions.id, and the engine's run id -> the runs row of
 * the runs in flight (and of runs whose end is known but not yet written).
 *
 *   queue ──pop batch──> BEGIN IMMEDIATE ──late ends, each record──> COMMIT ──> wake synchronous callers
 *                         (busy: backoff)   (a statement fails: that      (fails: the batch is retried
 *                                            record is lost, counted)      once if the error may pass,
 *                                                                          else lost and counted)
 *
 * Nothing is lost without a word: every record that does not reach the file is counted by kind in the
 * store's health (health.c) with the error message. When a transaction fails, the runs it started are
 * forgotten again, and the ends it carried of runs started earlier are kept (status and wall time) and
 * written with a later batch, so that those runs do not pass for unfinished. At the end, a run whose
 * start is written but whose end never came (lost beyond recall) gets status 2, UNKNOWN. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

enum {
    Q_BEGIN, Q_COMMIT, Q_ROLLBACK, Q_SESSION, Q_RUN, Q_RUN_END, Q_RUN_ROW, Q_TIMING, Q_TENSOR, Q_PRUNE, Q_SUMMARY,
    Q_COUNT
};

static const char *const sql[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_SESSION] = "INSERT INTO sessions(label, threads, devices) VALUES (?, ?, ?)",
    [Q_RUN] = "INSERT INTO runs(session_id, step, run_id, started_at_ns, wall_ns, status, error, feeds, "
              "fetches, targets, traced, feed_shapes, peak_bytes, device_memory) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_RUN_END] = "UPDATE runs SET wall_ns = ?, status = ?, error = ?, peak_bytes = ?, device_memory = ? WHERE id = ?",
    [Q_RUN_ROW] = "SELECT id FROM runs WHERE session_id = ? AND step = ? AND run_id = ?",
    [Q_TIMING] = "INSERT INTO node_timings(run_id, node, op, device, thread, scheduled_ns, start_ns, end_ns, "
                 "output_bytes, shapes, frame, iteration, fused, lane, launch_start_ns, launch_end_ns) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_TENSOR] = "INSERT INTO tensors(run_id, step, node, output, dtype, shape, min, max, mean, std, "
                 "nan_count, inf_count, histogram, value, kind, frame, iteration) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [Q_SUMMARY] = "INSERT INTO summaries(run_id, step, tag, value) VALUES (?, ?, ?, ?)",
    /* runs.id grows with every run logged, by any store writing the file: the newest are the largest */
    [Q_PRUNE] = "UPDATE tensors SET value = NULL WHERE value IS NOT NULL AND run_id NOT IN "
                "(SELECT id FROM runs ORDER BY id DESC LIMIT ?)",
};

#define MAX_RUNS_KNOWN 65536  /* runs in flight or with an end to write; the oldest are forgotten beyond */
#define BEGIN_ATTEMPTS 6      /* each waits up to the busy timeout */
#define RETRY_DELAY_NS (10 * 1000000L)

#define STATUS_UNKNOWN 2 /* TensorFlow's UNKNOWN: what tide_status_name calls a code it lacks */
#define ERROR_LOST_END "UNKNOWN: the run log lost the end of this run (see the log's warnings)"
#define ERROR_LOST_MESSAGE "(the error message was lost: the run log could not write it in time)"

enum { OUT_WRITTEN = 0, OUT_SKIPPED = 1, OUT_FAILED = 2 };

/* A run the writer knows: its row (0: none written yet) and, once its end is known but not written
 * (the transaction that carried it failed, or the queue had no room for it), that end. */
typedef struct run_entry {
    uint64_t run_id;
    int64_t row, step;
    bool ended;
    st_lost_end end;
} run_entry;

typedef struct run_map {
    run_entry *v;
    int n, cap;
} run_map;

typedef struct session_entry {
    const void *session;
    int64_t id;
} session_entry;

typedef struct writer {
    tide_store *s;
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
    st_graph_writer *graphs;
    session_entry *sessions;
    int num_sessions, cap_sessions;
    run_map runs, saved;  /* saved: the map before the open transaction, restored if it fails */
    char error[256];      /* the first failure of the current attempt */
    int error_code;       /* its SQLite result code */
} writer;

/* ---------------------------------------------------------------- the maps */

static int run_find(const run_map *m, uint64_t run_id)
{
    for (int i = m->n - 1; i >= 0; i--)
        if (m->v[i].run_id == run_id)
            return i;
    return -1;
}

static bool run_put(run_map *m, run_entry e)
{
    int i = run_find(m, e.run_id);
    if (i >= 0) {
        m->v[i] = e;
        return true;
    }
    if (m->n >= MAX_RUNS_KNOWN) { /* forget the oldest */
        memmove(m->v, m->v + 1, (size_t)(m->n - 1) * sizeof *m->v);
        m->n--;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        run_entry *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v)
            return false;
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = e;
    return true;
}

static void run_remove(run_map *m, int i) { memmove(m->v + i, m->v + i + 1, (size_t)(m->n - i - 1) * sizeof *m->v); m->n--; }

/* to = from (false when out of memory: to is then emptied) */
static bool run_copy(run_map *to, const run_map *from)
{
    if (to->cap < from->n) {
        run_entry *v = realloc(to->v, (size_t)from->n * sizeof *v);
        if (!v) {
            to->n = 0;
            return false;
        }
        to->v = v;
        to->cap = from->n;
    }
    if (from->n)
        memcpy(to->v, from->v, (size_t)from->n * sizeof *from->v);
    to->n = from->n;
    return true;
}

static int64_t session_id(writer *w, const void *session)
{
    for (int i = w->num_sessions - 1; i >= 0; i--)
        if (w->sessions[i].session == session)
            return w->sessions[i].id;
    return 0;
}

static void session_put(writer *w, const void *session, int64_t id)
{
    for (int i = 0; i < w->num_sessions; i++)
        if (w->sessions[i].session == session) {
            w->sessions[i].id = id;
            return;
        }
    if (w->num_sessions == w->cap_sessions) {
        int cap = w->cap_sessions ? w->cap_sessions * 2 : 8;
        session_entry *v = realloc(w->sessions, (size_t)cap * sizeof *v);
        if (!v)
            return; /* its runs get a NULL session_id */
        w->sessions = v;
        w->cap_sessions = cap;
    }
    w->sessions[w->num_sessions++] = (session_entry){session, id};
}

/* ---------------------------------------------------------------- statements */

static void fail(writer *w, const char *what)
{
    if (!w->error[0]) {
        w->error_code = sqlite3_extended_errcode(w->db);
        snprintf(w->error, sizeof w->error, "run log %s: %s: %s", w->s->path, what, sqlite3_errmsg(w->db));
    }
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

static void bind_text(sqlite3_stmt *st, int i, const char *s) { sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC); }

static void bind_id(sqlite3_stmt *st, int i, int64_t id)
{
    if (id > 0)
        sqlite3_bind_int64(st, i, id);
    else
        sqlite3_bind_null(st, i);
}

/* ---------------------------------------------------------------- runs */

typedef struct run_fields {
    const void *session;
    uint64_t run_id;
    int64_t step, started_at_ns, wall_ns, peak_bytes;
    int status;
    bool ended, traced;
    const char *error, *feeds, *fetches, *targets, *feed_shapes;
    const char *device_memory; /* NULL: unknown */
} run_fields;

static bool insert_run(writer *w, const run_fields *f)
{
    sqlite3_stmt *st = stmt(w, Q_RUN);
    bind_id(st, 1, session_id(w, f->session));
    sqlite3_bind_int64(st, 2, f->step);
    sqlite3_bind_int64(st, 3, (int64_t)f->run_id);
    sqlite3_bind_int64(st, 4, f->started_at_ns);
    if (f->ended) {
        sqlite3_bind_int64(st, 5, f->wall_ns);
        sqlite3_bind_int(st, 6, f->status);
        bind_text(st, 7, f->error);
        sqlite3_bind_int64(st, 13, f->peak_bytes);
        bind_text(st, 14, f->device_memory);
    }
    bind_text(st, 8, f->feeds);
    bind_text(st, 9, f->fetches);
    bind_text(st, 10, f->targets);
    sqlite3_bind_int(st, 11, f->traced);
    bind_text(st, 12, f->feed_shapes);
    return done(w, st, "inserting a run");
}

/* wall_ns and peak_bytes < 0, device_memory NULL: unknown (NULL). */
static bool update_run_end(writer *w, int64_t row, int64_t wall_ns, int64_t peak_bytes, const char *device_memory,
                           int status, const char *error)
{
    sqlite3_stmt *st = stmt(w, Q_RUN_END);
    if (wall_ns >= 0)
        sqlite3_bind_int64(st, 1, wall_ns);
    sqlite3_bind_int(st, 2, status);
    bind_text(st, 3, error);
    if (peak_bytes >= 0)
        sqlite3_bind_int64(st, 4, peak_bytes);
    bind_text(st, 5, device_memory);
    sqlite3_bind_int64(st, 6, row);
    return done(w, st, "updating a run");
}

static run_fields fields_of(const st_record *r, bool ended)
{
    return (run_fields){.session = r->session, .run_id = r->run_id, .step = r->step,
                        .started_at_ns = r->u.run.started_at_ns, .wall_ns = r->u.run.wall_ns,
                        .peak_bytes = r->u.run.peak_bytes, .status = r->u.run.status, .ended = ended, .traced = r->u.run.traced,
                        .error = r->u.run.error, .feeds = r->u.run.feeds, .fetches = r->u.run.fetches,
                        .targets = r->u.run.targets, .feed_shapes = r->u.run.feed_shapes,
                        .device_memory = r->u.run.device_memory};
}

#define END_LOOKAHEAD 32 /* records searched after a run's start for its end, to write the row once */

/* The end record of r's run among the next few records of the batch, or NULL. */
static st_record *end_in_batch(st_record *r)
{
    st_record *next = r->next;
    for (int k = 0; next && k < END_LOOKAHEAD; next = next->next, k++)
        if (next->kind == ST_RUN_END && next->run_id == r->run_id)
            return next;
    return NULL;
}

/* A run's start: its row, with its end's fields at once when the end is in the same batch (one
 * INSERT instead of an INSERT and an UPDATE; the end record then only forgets the run). */
static bool write_run_start(writer *w, st_record *r)
{
    st_record *end = end_in_batch(r);
    run_fields f = end ? fields_of(end, true) : fields_of(r, false);
    if (end) {
        f.started_at_ns = r->u.run.started_at_ns;
        end->u.run.written_with_start = true;
    }
    if (!insert_run(w, &f))
        return false;
    run_put(&w->runs, (run_entry){.run_id = r->run_id, .row = sqlite3_last_insert_rowid(w->db), .step = r->step});
    return true;
}

static bool write_run_end(writer *w, st_record *r)
{
    int i = run_find(&w->runs, r->run_id);
    if (r->u.run.written_with_start && i >= 0 && w->runs.v[i].row) {
        run_remove(&w->runs, i);
        return true;
    }
    if (i < 0 || !w->runs.v[i].row) { /* its start was dropped: the end makes the whole row */
        run_fields f = fields_of(r, true);
        return insert_run(w, &f);
    }
    if (!update_run_end(w, w->runs.v[i].row, r->u.run.wall_ns, r->u.run.peak_bytes, r->u.run.device_memory,
                        r->u.run.status, r->u.run.error))
        return false;
    run_remove(&w->runs, i);
    return true;
}

/* Writes the ends known but not written (a failed transaction's, or noted when the queue was full).
 * One that fails is given up (it was reported when it was lost). False when the transaction is gone. */
static bool write_late_ends(writer *w)
{
    for (int i = 0; i < w->runs.n;) {
        run_entry *e = &w->runs.v[i];
        if (!e->ended) {
            i++;
            continue;
        }
        const char *error = e->end.status == TIDE_OK ? NULL : ERROR_LOST_MESSAGE;
        bool ok;
        if (e->row) {
            ok = update_run_end(w, e->row, e->end.wall_ns, e->end.peak_bytes, NULL, e->end.status, error);
        } else {
            run_fields f = {.session = e->end.session, .run_id = e->run_id, .step = e->end.step,
                            .started_at_ns = e->end.started_at_ns, .wall_ns = e->end.wall_ns,
                            .peak_bytes = e->end.peak_bytes,
                            .status = e->end.status, .ended = true, .traced = e->end.traced, .error = error};
            ok = insert_run(w, &f);
        }
        if (!ok && sqlite3_get_autocommit(w->db))
            return false;
        run_remove(&w->runs, i);
    }
    return true;
}

/* Gives status UNKNOWN to every run whose start is written and whose end will never come (called
 * when the store closes: no run is in flight then). Returns how many. */
static int64_t mark_unknown_ends(writer *w)
{
    int64_t n = 0;
    for (int i = 0; i < w->runs.n; i++)
        if (w->runs.v[i].row && !w->runs.v[i].ended)
            n += update_run_end(w, w->runs.v[i].row, -1, -1, NULL, STATUS_UNKNOWN, ERROR_LOST_END);
    return n;
}

/* Moves the ends noted by st_push (no room in the queue) into the map, to be written late. */
static void take_lost_ends(writer *w)
{
    tide_store *s = w->s;
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < s->num_lost_ends; k++) {
        const st_lost_end *end = &s->lost_ends[k];
        int i = run_find(&w->runs, end->run_id);
        run_entry e = {.run_id = end->run_id, .row = i >= 0 ? w->runs.v[i].row : 0, .step = end->step, .ended = true,
                       .end = *end};
        run_put(&w->runs, e);
    }
    s->num_lost_ends = 0;
    pthread_mutex_unlock(&s->lock);
}

/* ---------------------------------------------------------------- the other records */

static bool write_session(writer *w, st_record *r)
{
    sqlite3_stmt *st = stmt(w, Q_SESSION);
    bind_text(st, 1, r->u.session.label);
    sqlite3_bind_int(st, 2, r->u.session.threads);
    bind_text(st, 3, r->u.session.devices);
    if (!done(w, st, "inserting a session"))
        return false;
    r->sync->id = sqlite3_last_insert_rowid(w->db);
    session_put(w, r->session, r->sync->id);
    return true;
}

/* The runs.id of a record's run; 0 when the run's start was dropped (the record is skipped too). The
 * map forgets a run once its end is written: a tensor logged after that (the debugger's :dump of a
 * finished run, tide_store_log_dumped) finds its row in the file. */
static int64_t run_row(writer *w, const st_record *r)
{
    int i = run_find(&w->runs, r->run_id);
    if (i >= 0 || r->kind != ST_TENSOR)
        return i >= 0 ? w->runs.v[i].row : 0;
    int64_t session = session_id(w, r->session), row = 0;
    sqlite3_stmt *st = stmt(w, Q_RUN_ROW);
    sqlite3_bind_int64(st, 1, session);
    sqlite3_bind_int64(st, 2, r->step);
    sqlite3_bind_int64(st, 3, (int64_t)r->run_id);
    if (session && sqlite3_step(st) == SQLITE_ROW)
        row = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return row;
}

static bool write_timing(writer *w, st_record *r, int64_t run)
{
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
    if (r->u.timing.frame) { /* NULL columns outside loops */
        bind_text(st, 11, r->u.timing.frame);
        sqlite3_bind_int64(st, 12, r->u.timing.iteration);
    }
    if (r->u.timing.fused) /* NULL for a node that ran by itself */
        bind_text(st, 13, r->u.timing.fused);
    if (r->u.timing.lane) { /* NULL for a node an executor thread ran */
        bind_text(st, 14, r->u.timing.lane);
        sqlite3_bind_int64(st, 15, r->u.timing.launch_start_ns);
        sqlite3_bind_int64(st, 16, r->u.timing.launch_end_ns);
    }
    return done(w, st, "inserting a node timing");
}

static bool write_tensor(writer *w, st_record *r, int64_t run)
{
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
    bind_text(st, 15, r->u.tensor.kind);
    if (r->u.tensor.frame) {
        bind_text(st, 16, r->u.tensor.frame);
        sqlite3_bind_int64(st, 17, r->u.tensor.iteration);
    }
    return done(w, st, "inserting a tensor");
}

static bool write_summary(writer *w, st_record *r, int64_t run)
{
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

static bool write_graph(writer *w, st_record *r)
{
    const char *what = "logging a graph version";
    int64_t id = st_graph_write(w->graphs, w->s, r, session_id(w, r->session), &what);
    if (id < 0) {
        fail(w, what);
        st_graph_write_undo(w->graphs, w->s, r);
        return false;
    }
    if (id == 0) {
        r->outcome = OUT_SKIPPED;
        if (r->sync)
            snprintf(r->sync->message, sizeof r->sync->message,
                     "run log %s: an earlier version of this graph could not be written; the next is logged whole",
                     w->s->path);
    } else if (r->sync) {
        r->sync->id = id;
    }
    return true;
}

/* Writes one record; false when its statement failed (w->error says why). A record whose run is not in
 * the file is skipped (outcome OUT_SKIPPED). */
static bool write_record(writer *w, st_record *r)
{
    int64_t run = 0;
    if (r->kind == ST_TIMING || r->kind == ST_TENSOR || r->kind == ST_SUMMARY) {
        if (!(run = run_row(w, r))) {
            r->outcome = OUT_SKIPPED;
            return true;
        }
    }
    switch (r->kind) {
    case ST_RUN_START: return write_run_start(w, r);
    case ST_RUN_END: return write_run_end(w, r);
    case ST_TIMING: return write_timing(w, r, run);
    case ST_TENSOR: return write_tensor(w, r, run);
    case ST_SUMMARY: return write_summary(w, r, run);
    case ST_SESSION: return write_session(w, r);
    case ST_GRAPH: return write_graph(w, r);
    case ST_FLUSH: r->sync->id = 0; return true;
    case ST_PRUNE: return write_prune(w, r);
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
        if (rc == SQLITE_DONE) {
            sqlite3_reset(w->q[q]);
            return true;
        }
        if ((rc & 0xff) != SQLITE_BUSY && !(retry_locked && (rc & 0xff) == SQLITE_LOCKED)) {
            fail(w, what);
            sqlite3_reset(w->q[q]);
            return false;
        }
        sqlite3_reset(w->q[q]);
    }
    fail(w, what);
    return false;
}

static void rollback(writer *w)
{
    if (!sqlite3_get_autocommit(w->db)) {
        sqlite3_step(stmt(w, Q_ROLLBACK));
        sqlite3_reset(w->q[Q_ROLLBACK]);
    }
}

/* One attempt at the batch in one transaction. Sets each record's outcome; false when the transaction
 * failed as a whole (nothing of it is in the file). */
static bool try_batch(writer *w, st_record *batch)
{
    w->error[0] = '\0';
    w->error_code = SQLITE_OK;
    for (st_record *r = batch; r; r = r->next) {
        r->outcome = OUT_WRITTEN;
        if (r->kind == ST_RUN_END)
            r->u.run.written_with_start = false;
    }
    if (!step_retrying(w, Q_BEGIN, true, "starting a transaction"))
        return false;
    if (!write_late_ends(w)) {
        rollback(w);
        return false;
    }
    for (st_record *r = batch; r; r = r->next)
        if (!write_record(w, r)) {
            r->outcome = OUT_FAILED;
            if (sqlite3_get_autocommit(w->db)) /* SQLite rolled the transaction back (full disk, I/O...) */
                return false;
        }
    if (step_retrying(w, Q_COMMIT, false, "committing"))
        return true;
    rollback(w);
    return false;
}

/* Errors that may pass if the batch is tried again: another connection's lock, an I/O error. */
static bool may_pass(int code)
{
    int primary = code & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_PROTOCOL ||
           (primary == SQLITE_IOERR && code != SQLITE_IOERR_NOMEM);
}

/* After a transaction failed as a whole: the runs it started are not in the file, and the ends it
 * carried of runs started earlier are kept to be written later. */
static void keep_ends_of_failed(writer *w, st_record *batch)
{
    for (st_record *r = batch; r; r = r->next)
        if (r->kind == ST_RUN_END) {
            int i = run_find(&w->runs, r->run_id);
            if (i >= 0)
                w->runs.v[i] = (run_entry){.run_id = r->run_id, .row = w->runs.v[i].row, .step = r->step,
                                           .ended = true, .end = st_lost_end_of(r)};
        }
}

/* Counts what the batch lost, says why, and answers the synchronous records. */
static void account(writer *w, st_record *batch, bool failed_whole)
{
    int64_t lost = 0, skipped = 0;
    for (st_record *r = batch; r; r = r->next) {
        bool is_lost = failed_whole || r->outcome != OUT_WRITTEN;
        if (r->sync && is_lost) {
            r->sync->status = failed_whole ? TIDE_UNAVAILABLE : TIDE_INTERNAL;
            if (!r->sync->message[0] || failed_whole)
                snprintf(r->sync->message, sizeof r->sync->message, "%s",
                         w->error[0] ? w->error : "run log: the record could not be written");
        }
        if (is_lost && st_kind_counted_as(r->kind) >= 0) {
            st_note_dropped(w->s, r->kind, 1, false);
            lost++;
            skipped += !failed_whole && r->outcome == OUT_SKIPPED;
        }
    }
    if (w->error[0])
        st_note_error(w->s, true, "%s (%lld record%s lost)", w->error, (long long)lost, lost == 1 ? "" : "s");
    else if (skipped)
        st_note_error(w->s, false,
                      "run log %s: %lld record%s skipped: the run (or the graph version) they belong to is not in the "
                      "file", w->s->path, (long long)skipped, skipped == 1 ? " was" : "s were");
}

static void write_batch(writer *w, st_record *batch)
{
    take_lost_ends(w);
    bool ok = false, saved = false;
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        if (attempt > 0)
            nanosleep(&(struct timespec){0, RETRY_DELAY_NS}, NULL);
        saved = run_copy(&w->saved, &w->runs);
        ok = try_batch(w, batch);
        if (!ok) {
            if (saved)
                run_copy(&w->runs, &w->saved);
            else
                w->runs.n = 0; /* out of memory: forget the runs rather than refer to rolled-back rows */
            bool retry = attempt == 0 && may_pass(w->error_code);
            if (w->graphs)
                st_graph_writer_rollback(w->graphs, w->s, !retry);
            if (!retry)
                break;
        }
    }
    if (ok && w->graphs)
        st_graph_writer_commit(w->graphs);
    if (!ok)
        keep_ends_of_failed(w, batch);
    account(w, batch, !ok);
}

#define UNFINISHED_NAMED 12 /* runs named one by one when their status cannot be written at the end */

/* The final writes failed: every run whose start is in the file reads as unfinished there. Names them
 * (runs.id and step, the first UNFINISHED_NAMED) in the health, so that the owner tells the user which. */
static void note_unfinished(writer *w)
{
    char names[TIDE_STORE_MESSAGE_MAX] = "";
    size_t used = 0;
    int64_t n = 0;
    for (int i = 0; i < w->runs.n; i++) {
        const run_entry *e = &w->runs.v[i];
        if (!e->row)
            continue;
        if (n < UNFINISHED_NAMED && used < sizeof names) {
            int k = snprintf(names + used, sizeof names - used, "%sid %lld (step %lld)", n ? ", " : "",
                             (long long)e->row, (long long)e->step);
            used += k > 0 ? (size_t)k : 0;
        }
        n++;
    }
    if (n > UNFINISHED_NAMED && used < sizeof names)
        snprintf(names + used, sizeof names - used, ", and %lld more", (long long)(n - UNFINISHED_NAMED));
    st_note_error(w->s, true, "%s (the status of %lld run%s could not be written: the file shows %s as unfinished: %s)",
                  w->error[0] ? w->error : "run log: closing", (long long)n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
                  names);
    st_note_runs_unfinished(w->s, n, names);
}

/* At the end: the ends noted last, then UNKNOWN for the runs whose end never came. When that cannot be
 * written either, the runs concerned are named (note_unfinished). */
static void write_final(writer *w)
{
    take_lost_ends(w);
    if (w->runs.n == 0)
        return;
    w->error[0] = '\0';
    int64_t unknown = 0;
    bool saved = run_copy(&w->saved, &w->runs);
    bool ok = step_retrying(w, Q_BEGIN, true, "starting a transaction") && write_late_ends(w) &&
              ((unknown = mark_unknown_ends(w)), !sqlite3_get_autocommit(w->db)) &&
              step_retrying(w, Q_COMMIT, false, "committing");
    if (!ok) {
        rollback(w);
        if (saved) /* the ends written in the transaction rolled back are not in the file either */
            run_copy(&w->runs, &w->saved);
        note_unfinished(w);
        return;
    }
    st_note_runs_unknown(w->s, unknown);
}

/* ---------------------------------------------------------------- the thread */

bool st_wants_batch_now(const tide_store *s)
{
    return s->stop || s->paused || s->queued + s->queued_runs >= ST_BATCH_MIN || s->syncs_queued > 0 ||
           s->waiting > 0; /* a record waits for room */
}

/* Pops a batch (synchronous records included): ST_BATCH_MIN records, up to ST_BATCH_MAX when the writer
 * is behind. Called with the lock held; makes room for the records that wait. */
static st_record *pop_batch(tide_store *s)
{
    int limit = s->queued + s->queued_runs > ST_BATCH_MIN ? ST_BATCH_MAX : ST_BATCH_MIN;
    st_record *first = s->head, *last = NULL;
    int n = 0;
    for (st_record *r = first; r && n < limit; r = r->next, n++) {
        last = r;
        if (r->sync)
            s->syncs_queued--;
        else if (r->kind == ST_RUN_START || r->kind == ST_RUN_END)
            s->queued_runs--;
        else if (r->kind != ST_GRAPH) {
            s->queued--;
            s->queued_bytes -= st_record_bytes(r);
        }
    }
    s->head = last->next;
    if (!s->head)
        s->tail = NULL;
    last->next = NULL;
    if (s->runs_behind && s->queued_runs < s->opts.queue_capacity / 2)
        s->runs_behind = false;
    if (s->data_behind && s->queued < s->opts.queue_capacity / 2 && s->queued_bytes < s->opts.queue_bytes / 2)
        s->data_behind = false;
    if (s->waiting)
        pthread_cond_broadcast(&s->room);
    return first;
}

static void free_batch(st_record *batch)
{
    while (batch) {
        st_record *next = batch->next;
        st_record_free(batch);
        batch = next;
    }
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
        while (!st_wants_batch_now(s))
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
        free_batch(batch);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    write_final(w);
}

/* The statements could not be prepared (a damaged file?): answer everyone, count everything lost. */
static void refuse_loop(writer *w)
{
    tide_store *s = w->s;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->stop && !s->head)
            pthread_cond_wait(&s->nonempty, &s->lock);
        st_record *batch = s->head ? pop_batch(s) : NULL;
        for (st_record *r = batch; r; r = r->next) {
            st_note_dropped(s, r->kind, 1, false);
            if (r->sync) {
                r->sync->status = TIDE_INTERNAL;
                snprintf(r->sync->message, sizeof r->sync->message, "%s", w->error);
                r->sync->done = true;
                r->sync = NULL;
            }
        }
        pthread_cond_broadcast(&s->done);
        bool stop = s->stop && !s->head;
        pthread_mutex_unlock(&s->lock);
        free_batch(batch);
        if (stop)
            break;
    }
}

void *st_writer_main(void *arg)
{
    writer w = {.s = arg, .db = ((tide_store *)arg)->db};
    bool ok = true;
    for (int i = 0; i < Q_COUNT && ok; i++)
        ok = sqlite3_prepare_v3(w.db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &w.q[i], NULL) == SQLITE_OK;
    if (ok && !(w.graphs = st_graph_writer_new(w.db)))
        ok = false;
    if (!ok) { /* the schema is ours, so this is a bug or a damaged file */
        fail(&w, "preparing statements");
        st_note_error(w.s, true, "%s", w.error);
        refuse_loop(&w);
    } else {
        run_loop(&w);
    }
    st_graph_writer_free(w.graphs);
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(w.q[i]);
    free(w.sessions);
    free(w.runs.v);
    free(w.saved.v);
    return NULL;
}
