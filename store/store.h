/* store.h — the run log: an SQLite file of sessions, graph versions, runs, per-node timings and
 * tensor statistics, fed by the engine's observer interface (tide_engine_add_observer).
 *
 * Conventions are tide.h's: fallible calls take an optional tide_error as their last argument; ids
 * are SQLite row ids (> 0), and 0 (or -1 for int64 ids) means failure with err set.
 *
 * How it works. tide_store_attach adds an observer to an engine. The observer's callbacks run on the
 * engine's threads: they copy what they need into a record (tensor statistics are computed there),
 * push it on a bounded queue and return; when the queue is full the record is dropped and counted
 * (tide_store_dropped) — the engine is never blocked and memory never grows without bound. One
 * background writer thread per store owns the SQLite connection and commits records in batched
 * transactions (up to 256 records or 50 ms each). A crash loses what was not yet committed: at most
 * the last batch and the runs in flight (a run in flight is a runs row whose status is NULL).
 *
 * The schema (version 1) is documented in docs/run-log.md. Several stores, in one process or many,
 * may write to one file at once (WAL mode, a 5 s busy timeout, retries), and any reader (sqlite3)
 * may read it while they write.
 *
 * Threads. A store may be used from any thread; tide_store_close must not race with other calls.
 * Lifetimes: detach a store from an engine (or close the store) before freeing that engine, and do
 * not close a store while a run of an engine it is attached to is in flight.
 */
#ifndef TIDE_STORE_H
#define TIDE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version this build writes (PRAGMA user_version). Files with a newer one are refused. */
#define TIDE_STORE_SCHEMA_VERSION 1

typedef struct tide_store tide_store;

typedef struct tide_store_options {
    int queue_capacity;     /* records waiting for the writer; 0: 4096 */
    size_t value_cap_bytes; /* a watched tensor's value is stored when its byte size <= this;
                               default 1 MiB; 0: never (statistics only) */
    int64_t trace_every;    /* the logging policy for per-node timings: trace the runs whose session
                               step is a multiple of this (steps 0, N, 2N...), on top of the runs the
                               caller traces itself; default 100; 0: only the caller's */
} tide_store_options;

/* Fills the defaults (queue_capacity 4096, value_cap_bytes 1 MiB, trace_every 100). The default
 * policy keeps the log small during long training: every run's row, the watched tensors'
 * statistics (and small values) every step, per-node timings every 100th step. */
void tide_store_options_init(tide_store_options *opts);

/* Opens the run log at path, creating the file if needed, in WAL mode; creates the schema or
 * migrates an older one to TIDE_STORE_SCHEMA_VERSION; refuses a file written by a newer tide. Starts
 * the writer thread. opts may be NULL (defaults). Returns NULL with err set on failure. */
tide_store *tide_store_open(const char *path, const tide_store_options *opts, tide_error *err);

/* Removes the store's observers from every engine still attached, commits everything queued, stops
 * the writer and closes the file. NULL is allowed. */
void tide_store_close(tide_store *s);

/* Blocks until every record queued before the call is committed (visible to other connections).
 * Fails if the writer could not write (the message says why). */
tide_status tide_store_flush(tide_store *s, tide_error *err);

/* Adds a sessions row for session (label may be NULL) with the engine's configuration (threads,
 * device names); returns its id, or -1 with err set. Runs of this session pointer logged afterwards
 * refer to it (a later call for the same pointer — a new session at a reused address — remaps it).
 * Runs of a session never logged have a NULL session_id. Synchronous: waits for the writer. */
int64_t tide_store_log_session(tide_store *s, const tide_session *session, const tide_engine *engine,
                               const char *label, tide_error *err);

/* Adds a graphs row for the session's graph as it is now (its version number and text) and a nodes
 * row per node (op, inputs, control inputs, attrs, requested and assigned device). Call it from the
 * thread that drives the graph, e.g. after each Extend. Returns the graph's row id or -1 with err
 * set. Synchronous. */
int64_t tide_store_log_graph(tide_store *s, const tide_session *session, tide_error *err);

/* Subscribes the store to engine's runs: every run (steps, names, status, error, times), the node
 * timings of traced runs (tide_run_options.trace), and statistics of the watched nodes' outputs.
 * Returns an id (> 0) for tide_store_detach, or 0 with err set. */
int tide_store_attach(tide_store *s, tide_engine *engine, tide_error *err);
/* Stops logging engine's runs that start after the call. Unknown ids are ignored. */
void tide_store_detach(tide_store *s, tide_engine *engine, int id);

/* Adds/removes a node name to/from the watched set: every output of a watched node is logged (its
 * statistics, and its value up to value_cap_bytes) at every run that computes it. Takes effect for
 * runs that start after the call returns, cached plans included. Watching a name twice is allowed;
 * names of nodes that do not exist (yet) are allowed too. */
tide_status tide_store_watch(tide_store *s, const char *node_name, tide_error *err);
void tide_store_unwatch(tide_store *s, const char *node_name);

/* Retention: sets tensors.value to NULL for every run except the keep_last_runs most recent ones of
 * the file (the largest runs.id, whichever process logged them); statistics, histograms and all
 * other rows stay. keep_last_runs 0 clears every value. Goes through the writer, after everything
 * queued before the call, in one transaction. *pruned (may be NULL) receives the number of values
 * cleared. The file does not shrink: SQLite reuses the freed pages; run `sqlite3 FILE 'VACUUM'`
 * (while nothing writes it) to give the space back. A negative keep_last_runs is
 * TIDE_INVALID_ARGUMENT. */
tide_status tide_store_prune_values(tide_store *s, int64_t keep_last_runs, int64_t *pruned, tide_error *err);

/* Records dropped so far: queued when the queue was full, or whose run was itself dropped, or lost
 * to a write that failed. */
int64_t tide_store_dropped(const tide_store *s);

#ifdef __cplusplus
}
#endif
#endif
