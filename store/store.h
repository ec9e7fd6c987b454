/* store.h — the run log: an SQLite file of sessions, graph versions, runs, per-node timings and
 * tensor statistics, fed by the engine's observer interface (tide_engine_add_observer).
 *
 * Conventions are tide.h's: fallible calls take an optional tide_error as their last argument; ids
 * are SQLite row ids (> 0), and 0 (or -1 for int64 ids) means failure with err set.
 *
 * How it works. tide_store_attach adds an observer to an engine. The observer's callbacks run on the
 * engine's threads: they copy what they need into a record (tensor statistics are computed there),
 * push it on a bounded queue and return. One background writer thread per store owns the SQLite
 * connection and commits records in batched transactions (256 records or 50 ms each, up to 4,096 when
 * it falls behind). A full queue never grows memory without bound: a record that finds it full waits
 * for room (at most wait_ms: nothing is dropped because training is fast or a traced run of a large
 * graph has more timings than the queue holds; the engine slows down to the writer's pace), and is
 * dropped (and reported) only when the writer made no room in that time. A crash loses what was not
 * yet committed: at most the last batch and the runs in flight (a run in flight is a runs row whose
 * status is NULL).
 *
 * Nothing is lost silently. Every record that does not reach the file (dropped from a full queue,
 * lost with a transaction that failed: a full disk, a read-only file, a trigger that refuses it...)
 * is counted by kind, with the first and the latest error message, in tide_store_health; its
 * `events` counter grows at each problem, so that the owner can poll it after every run and tell the
 * user at once. A run whose end record was lost gets status 2 (UNKNOWN, with an error saying so) when
 * the store closes, never a NULL status that would pass for "unfinished"; when even that cannot be
 * written (a disk that stays full), the close names those runs (tide_store_close_with_health).
 *
 * Graph versions are stored as differences (schema 4): a node row is written once and shared by every
 * version that has it unchanged; the view `nodes` still gives every version whole. A logged session's
 * graph is logged again, when it changed, before the first run that uses it.
 *
 * The schema (version 6) is documented in docs/run-log.md. Several stores, in one process or many,
 * may write to one file at once (WAL mode, a busy handler that retries with backoff for 5 s, then the
 * transaction is retried): no run is lost to another writer's lock. Any reader (sqlite3) may read it
 * while they write.
 *
 * Threads. A store may be used from any thread; tide_store_close must not race with other calls.
 * Lifetimes: detach a store from an engine (or close the store) before freeing that engine, and do
 * not close a store while a run of an engine it is attached to is in flight.
 */
#ifndef TIDE_STORE_H
#define TIDE_STORE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version this build writes (PRAGMA user_version). Files with a newer one are refused. */
#define TIDE_STORE_SCHEMA_VERSION 10

typedef struct tide_store tide_store;
typedef struct tide_store_health tide_store_health; /* below: what the store could not record */

typedef struct tide_store_options {
    int queue_capacity;     /* data records (timings, tensors, summaries) waiting for the writer, and as
                               many run records; 0: 65536 */
    size_t queue_bytes;     /* the most bytes the waiting data records may hold (tensor values...);
                               0: 256 MiB */
    int64_t wait_ms;        /* how long a record waits for room in a full queue before it is dropped
                               (and reported); default 30000; 0: never waits. After a wait in vain
                               the next records drop at once until the writer has emptied half the
                               queue */
    size_t value_cap_bytes; /* a watched tensor's value is stored when its byte size <= this;
                               default 1 MiB; 0: never (statistics only) */
    int64_t trace_every;    /* the logging policy for per-node timings: trace the runs whose session
                               step is a multiple of this (steps 0, N, 2N...), on top of the runs the
                               caller traces itself; default 100; 0: only the caller's */
} tide_store_options;

/* Fills the defaults (queue_capacity 65536, queue_bytes 256 MiB, wait_ms 30 s, value_cap_bytes
 * 1 MiB, trace_every 100). The default
 * policy keeps the log small during long training: every run's row, the watched tensors'
 * statistics (and small values) every step, per-node timings every 100th step. */
void tide_store_options_init(tide_store_options *opts);

/* Opens the run log at path, creating the file if needed, in WAL mode; creates the schema or
 * migrates an older one to TIDE_STORE_SCHEMA_VERSION; refuses a file written by a newer tide, and an
 * SQLite database that is not a tide run log (TIDE_FAILED_PRECONDITION: its tables are not touched).
 * Starts the writer thread. opts may be NULL (defaults). Returns NULL with err set on failure. */
tide_store *tide_store_open(const char *path, const tide_store_options *opts, tide_error *err);

/* Removes the store's observers from every engine still attached, commits everything queued, marks
 * the runs whose end was lost (status UNKNOWN), stops the writer and closes the file. NULL is allowed.
 * What was lost is in tide_store_health until the call: read it (after a flush) before closing, or
 * close with tide_store_close_with_health. */
void tide_store_close(tide_store *s);
/* tide_store_close, and *out (may be NULL; all zero for a NULL store) receives the health as the close
 * left it: what its own last writes could not do included. Those give every run whose start is in the
 * file its status (its end, written late, or UNKNOWN); when they fail too (a disk that stays full),
 * those runs read as unfinished in the file: runs_unfinished counts them and unfinished_runs names them,
 * so that the caller can tell the user which runs of the file are wrong. */
void tide_store_close_with_health(tide_store *s, tide_store_health *out);

/* Blocks until every record queued before the call is committed (visible to other connections), the
 * ends of runs that a failed transaction or a full queue kept back included (the runs whose end is
 * lost beyond recall get status UNKNOWN only at the close: runs may be in flight until then). Fails if
 * the writer could not write (the message says why); records lost before are reported by
 * tide_store_health, not here. */
tide_status tide_store_flush(tide_store *s, tide_error *err);

/* Adds a sessions row for session (label may be NULL) with the engine's configuration (threads,
 * device names); returns its id, or -1 with err set. Runs of this session pointer logged afterwards
 * refer to it (a later call for the same pointer — a new session at a reused address — remaps it).
 * Runs of a session never logged have a NULL session_id. Synchronous: waits for the writer. */
int64_t tide_store_log_session(tide_store *s, const tide_session *session, const tide_engine *engine,
                               const char *label, tide_error *err);

/* Logs the session's graph as it is now, as a graph version (a graphs row) that differs from the
 * previous version of this session in the node rows (graph_nodes: op, inputs, control inputs, attrs,
 * requested and assigned device, its text line) that are new or changed; when nothing changed since the
 * previous version (nodes, names, assigned devices) no row is added and that version's id returned.
 * Call it from the thread that drives the graph, e.g. after each Extend. A logged session's graph is
 * also logged automatically before the first run after it changed (and after a new plan placed its
 * nodes), so calling this is needed only for graphs that are not run. Returns the graph's row id or
 * -1 with err set. Synchronous. */
int64_t tide_store_log_graph(tide_store *s, const tide_session *session, tide_error *err);

/* Subscribes the store to engine's runs: every run (steps, names, status, error, times), the node
 * timings of traced runs (tide_run_options.trace), and statistics of the watched nodes' outputs.
 * Returns an id (> 0) for tide_store_detach, or 0 with err set. */
int tide_store_attach(tide_store *s, tide_engine *engine, tide_error *err);
/* Stops logging engine's runs that start after the call. Unknown ids are ignored. */
void tide_store_detach(tide_store *s, tide_engine *engine, int id);

/* Adds/removes a node name to/from the watched set: every output of a watched node is logged (its
 * statistics, and its value up to value_cap_bytes) at every run that computes it. A name with *, ?
 * or [...] is a shell glob matched against whole node names ("*loss*"; a scope's nodes: its name, a
 * slash and a star). Takes effect for runs that start after the call returns, cached plans included. Watching a name twice is allowed; names of
 * nodes that do not exist (yet) are allowed too. unwatch removes the entry given (a glob, or a name),
 * not the nodes another entry matches. */
tide_status tide_store_watch(tide_store *s, const char *node_name, tide_error *err);
void tide_store_unwatch(tide_store *s, const char *node_name);

/* Logs one tensor of a run of an attached engine as a tensors row of kind "dumped" (the step
 * debugger's :dump, docs/debugger.md), the way a watched one is: statistics, and the value when it
 * holds at most value_cap_bytes; at (may be NULL) is its loop iteration. The run may be in progress
 * or over (then only run_id, session and step of *run are read; its row is found in the file).
 * Thread-safe; queued as the other records (a lost one is counted). */
void tide_store_log_dumped(tide_store *s, const tide_run_info *run, const char *node, int output,
                           const tide_tensor *value, const tide_exec_point *at);

/* Retention: sets tensors.value to NULL for every run except the keep_last_runs most recent ones of
 * the file (the largest runs.id, whichever process logged them); statistics, histograms and all
 * other rows stay. keep_last_runs 0 clears every value. Goes through the writer, after everything
 * queued before the call, in one transaction. *pruned (may be NULL) receives the number of values
 * cleared. The file does not shrink: SQLite reuses the freed pages; run `sqlite3 FILE 'VACUUM'`
 * (while nothing writes it) to give the space back. A negative keep_last_runs is
 * TIDE_INVALID_ARGUMENT. */
tide_status tide_store_prune_values(tide_store *s, int64_t keep_last_runs, int64_t *pruned, tide_error *err);

/* ---------------------------------------------------------------- what could not be recorded */

/* The kinds of records that tide_store_health counts. Values are explicit and only appended. */
typedef enum tide_store_record_kind {
    TIDE_STORE_RUNS = 0,      /* a run's start or end record (its row) */
    TIDE_STORE_TIMINGS = 1,   /* a node timing of a traced run */
    TIDE_STORE_TENSORS = 2,   /* a watched or fetched tensor */
    TIDE_STORE_SUMMARIES = 3, /* a ScalarSummary value */
    TIDE_STORE_GRAPHS = 4,    /* a graph version */
    TIDE_STORE_SESSIONS = 5,  /* a sessions row */
} tide_store_record_kind;
#define TIDE_STORE_NUM_RECORD_KINDS 6
#define TIDE_STORE_MESSAGE_MAX 320

/* What a store could not record since it was opened. */
typedef struct tide_store_health {
    uint64_t events;        /* grows with every problem: a new value means something new went wrong */
    int64_t dropped;        /* records that are not in the file, all kinds */
    int64_t dropped_by_kind[TIDE_STORE_NUM_RECORD_KINDS];
    int64_t queue_full;     /* of them, dropped because the queue was full (the writer fell behind) */
    int64_t failed_writes;  /* transactions or statements that failed (their records are counted above) */
    int64_t runs_unknown;   /* runs whose end was lost: logged with status 2 (UNKNOWN) */
    int64_t runs_unfinished; /* runs that read as unfinished (status NULL) in the file though they ended:
                                their status could not be written at all (set by the close) */
    char unfinished_runs[TIDE_STORE_MESSAGE_MAX]; /* those runs: "id 812 (step 811), ..., and N more" */
    char first_error[TIDE_STORE_MESSAGE_MAX];  /* the first problem's message; "" when none */
    char latest_error[TIDE_STORE_MESSAGE_MAX]; /* the latest problem's message */
} tide_store_health;

/* Copies what the store could not record so far into *out (all zero for NULL). Any thread. */
void tide_store_health_get(const tide_store *s, tide_store_health *out);
/* tide_store_health.events alone: one atomic load, for polling after every run. */
uint64_t tide_store_events(const tide_store *s);
/* True when nothing was lost and no write failed. */
bool tide_store_health_ok(const tide_store_health *h);
/* "12 records lost (node timings 10, tensors 2), 1 failed write": a malloc'd line without the
 * messages (the caller frees; NULL when out of memory). */
char *tide_store_health_format(const tide_store_health *h);
/* "runs", "node timings", "tensors"... (static). */
const char *tide_store_record_kind_name(tide_store_record_kind kind);

/* Records lost so far, all kinds (tide_store_health.dropped). */
int64_t tide_store_dropped(const tide_store *s);

/* ---------------------------------------------------------------- the policy, changed while running */

/* Sets the trace period (tide_store_options.trace_every) and the value cap (value_cap_bytes) of an open
 * store. They take effect for runs that start after the call returns (a run in flight may log its
 * tensors under either cap). every < 0 is taken as 0 (only the caller's traces); 1 traces every run.
 * The getters return the current values. */
void tide_store_set_trace_every(tide_store *s, int64_t every);
void tide_store_set_value_cap(tide_store *s, size_t bytes);
int64_t tide_store_trace_every(const tide_store *s);
size_t tide_store_value_cap(const tide_store *s);
/* The watched names, in the order they were watched: a malloc'd array of malloc'd strings ending with
 * NULL (free it with tide_store_names_free), *count (may be NULL) receives their number. NULL when out
 * of memory. */
char **tide_store_watched(tide_store *s, int *count);
void tide_store_names_free(char **names);

/* ---------------------------------------------------------------- reading the log (query.c)
 *
 * Queries open their own read-only connection to a log file (SQLITE_OPEN_READONLY, PRAGMA query_only,
 * a 5 s busy timeout) for the one call, so they may run on any thread, on any log file, while stores in
 * this or other processes write it (WAL: readers see what was committed when the query starts). A
 * store's own records become visible once committed: tide_store_flush first to see the latest runs.
 * Results are tables of text (the REPL prints them; the web views serve them). Errors: a missing or
 * unreadable file is TIDE_NOT_FOUND/TIDE_UNAVAILABLE, a file that is not an SQLite database
 * TIDE_FAILED_PRECONDITION, an SQL error TIDE_INVALID_ARGUMENT whose message is SQLite's prefixed
 * with "sql: ". */

typedef struct tide_store_table tide_store_table;

/* Runs ONE read-only SQL statement (a SELECT, a read-only PRAGMA; trailing whitespace, ';' and
 * comments are allowed, a second statement is not) and keeps its first max_rows rows (max_rows >= 0)
 * as text: NULL as "NULL" (see tide_store_table_is_null), a blob as "<blob N bytes>", numbers as
 * SQLite prints them. Statements that would write (INSERT, UPDATE, DELETE, DROP, CREATE, PRAGMA
 * assignments, VACUUM...) and ATTACH/DETACH are refused. SQL may use status_name(code), which gives
 * a tide_status's name ("OK", "INVALID_ARGUMENT"), and short_device(name), a device's short name
 * ("/cpu:0"). Returns a new table, or NULL with err set. */
tide_store_table *tide_store_query(const char *path, const char *sql, int max_rows, tide_error *err);
/* The same, stopping with TIDE_CANCELLED ("sql: the query was cancelled") soon after *cancel becomes
 * non-zero (a flag a SIGINT handler sets, for example); cancel may be NULL. */
tide_store_table *tide_store_query_cancellable(const char *path, const char *sql, int max_rows,
                                               const volatile sig_atomic_t *cancel, tide_error *err);
/* The same with parameters: params[i] (NULL: SQL NULL) is bound to ?i+1 (or the i+1-th named
 * parameter), as an integer when it is an integer written plainly ("-12"; not "007" or "+1"), else as
 * text; never spliced into the SQL, so values from a user (an URL, a prompt) are safe. The number of
 * values must match the statement's. */
tide_store_table *tide_store_query_bound(const char *path, const char *sql, const char *const *params,
                                         int num_params, int max_rows, tide_error *err);
void tide_store_table_free(tide_store_table *t);
int tide_store_table_num_columns(const tide_store_table *t);
const char *tide_store_table_column(const tide_store_table *t, int col); /* borrowed; NULL if out of range */
int tide_store_table_num_rows(const tide_store_table *t);
/* The cell's text (borrowed; NULL if out of range) and whether the value was SQL NULL. */
const char *tide_store_table_cell(const tide_store_table *t, int row, int col);
bool tide_store_table_is_null(const tide_store_table *t, int row, int col);
/* True when the statement had more rows than were kept. */
bool tide_store_table_truncated(const tide_store_table *t);
/* The table as aligned text: a header line, one line per row, columns separated by two spaces
 * (numeric columns right-aligned), cells longer than max_cell_chars characters (UTF-8) clipped with
 * "...", control characters shown as spaces; then, with_count, "(N rows)", or "(first N of more rows)"
 * when truncated. A malloc'd string (the caller frees), NULL when out of memory. */
char *tide_store_table_format(const tide_store_table *t, int max_cell_chars, bool with_count);

/* The named queries of the REPL and the web views. */

/* The last_n most recent runs of the file (all sessions), oldest first: id, session, step, status
 * (its name; "unfinished" while in flight or after a crash), wall_ms, traced (0/1), fetches (JSON),
 * started (local time, YYYY-MM-DD HH:MM:SS.SSS). truncated says whether older runs exist. last_n >= 0. */
tide_store_table *tide_store_query_runs(const char *path, int last_n, tide_error *err);
/* One run (runs.id = run_id; run_id 0: the latest) as a one-row table: id, session, step, run_id (the
 * engine's), status, error, wall_ms, traced, feeds, fetches, targets, started, nodes_timed (rows in
 * node_timings), tensors (rows in tensors). TIDE_NOT_FOUND when there is no such run. */
tide_store_table *tide_store_query_run(const char *path, int64_t run_id, tide_error *err);
/* The limit slowest nodes of a traced run (by kernel time, end_ns - start_ns): node, op, device
 * (its short name, tide_device_short_name: "/cpu:0"), thread, time_us, pct_of_wall (that time
 * as a percentage of the run's wall time). No rows for a run that was not traced. */
tide_store_table *tide_store_query_slowest_nodes(const char *path, int64_t run_id, int limit, tide_error *err);
/* One row of counts: sessions, runs, traced_runs, failed_runs, node_timings, tensors, stored_values
 * (tensors whose value is stored), value_bytes, summaries (rows of the summaries table), first_run,
 * last_run (local times, NULL when no run). */
tide_store_table *tide_store_query_totals(const char *path, tide_error *err);

/* A logged tensor: the statistics of one output of a node at one run (watched, or fetched when the
 * store logs fetches) and, when it was stored (within the value cap and not pruned), its value. */
typedef struct tide_store_tensor {
    int64_t run;             /* runs.id */
    int64_t session;         /* sessions.id; 0 when the run's session was not logged */
    int64_t step;            /* the session's step */
    char *node;              /* the node's name (malloc'd) */
    int output;
    tide_dtype dtype;        /* TIDE_INVALID_DTYPE when the file names a dtype this build lacks */
    char *dtype_name;        /* as logged (malloc'd) */
    tide_shape shape;
    bool has_stats;          /* false when no element was finite (or for strings) */
    double min, max, mean, std;
    int64_t nan_count, inf_count;
    int64_t *histogram;      /* num_bins counts of the finite elements, equal bins from min to max */
    int num_bins;
    tide_tensor *value;      /* the stored value (the store's reference), NULL when not stored */
} tide_store_tensor;

/* The value logged for output `output` of node `node` at session step `step` of session `session`: the
 * latest step <= step that has one (step < 0: the latest logged). session 0: the session of the most
 * recent value of that output in the file. The value's bytes are decoded with the logged dtype and
 * shape (bit-equal to the tensor the run produced). Returns a new record (free it with
 * tide_store_tensor_free), or NULL with err set: TIDE_NOT_FOUND when nothing matches (the message says
 * whether the output was never logged or only after `step`). */
tide_store_tensor *tide_store_query_tensor(const char *path, const char *node, int output, int64_t session,
                                           int64_t step, tide_error *err);
void tide_store_tensor_free(tide_store_tensor *t);

#ifdef __cplusplus
}
#endif

#include "store_queries.h" /* the named queries of the views and the REPL */

#endif
