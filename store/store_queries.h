/* store_queries.h — the named queries of the run log: every statement that the web server, the drawings
 * (viz/) and the REPL run against a log, owned by store/ so that the SQL of the schema lives in one part
 * (store/queries.c). Included by store.h.
 *
 * A query is named by its id. Its parameters are text, bound as tide_store_query_bound binds them (a
 * plainly written integer as an integer, NULL as NULL, anything else as text: never spliced into SQL);
 * their number must be the query's (below, in order). Each call opens its own read-only connection (as
 * every query of store.h), checks the file's schema and runs the statement written for it, so a log of
 * an older schema is read as it is (a column it lacks comes back NULL). Results are tables of text
 * (store.h); "(no row)" below means an empty table, not an error. Device names in results are short
 * ("/cpu:0", tide_device_short_name) unless a column says "full".
 *
 * The *_JSON queries answer one row of one column holding a JSON document (built by SQLite: every
 * string escaped), the document of the web endpoint of the same name (docs/web.md), or NULL when what
 * they describe does not exist. */
#ifndef TIDE_STORE_QUERIES_H
#define TIDE_STORE_QUERIES_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_store_table tide_store_table;

typedef enum tide_store_query_id {
    /* ------------------------------------------------ resolving ids */
    /* (): id, the latest session (NULL when the log has none). */
    TIDE_STORE_Q_LATEST_SESSION = 1,
    /* (): session_id of the latest graph logged for a logged session (no row when none). */
    TIDE_STORE_Q_LATEST_GRAPH_SESSION = 2,
    /* (session): id when the session exists (no row otherwise). */
    TIDE_STORE_Q_SESSION_EXISTS = 3,
    /* (run): session_id, step, wall_ns, traced (0/1) of the run (no row when it does not exist). */
    TIDE_STORE_Q_RUN_BRIEF = 4,
    /* (session, version): id, version of the session's latest graph with that version number (version 0:
     * of any; no row when none). */
    TIDE_STORE_Q_SESSION_GRAPH = 5,
    /* (session): run, the session's latest traced run (NULL when none). */
    TIDE_STORE_Q_LATEST_TRACED_RUN = 6,
    /* (): state, "G/T/R": the largest graph id, node_timings rowid and run id (a drawing of "the
     * latest" changes when it does). */
    TIDE_STORE_Q_LOG_STATE = 7,
    /* (): runs, the number of runs in the log. */
    TIDE_STORE_Q_RUN_COUNT = 8,

    /* ------------------------------------------------ graphs and timings (viz/) */
    /* (graph): name, op, inputs (JSON), control_inputs (JSON), attrs, requested_device, assigned_device
     * (full; NULL when not placed), one row per node in the order they were logged. */
    TIDE_STORE_Q_GRAPH_NODES = 9,
    /* (run): node, device (full), time_ns (the sum of its executions' kernel times), fused (the members
     * of the fused group it ran as the root of, "h, r, out"; NULL before schema 9 and for a node run by
     * itself), one row per node the traced run timed. */
    TIDE_STORE_Q_RUN_NODE_TIMES = 10,
    /* (session): node, device (full), run, fused: for each node, the device (and fused group, as in
     * TIDE_STORE_Q_RUN_NODE_TIMES) of its latest timing in a traced run of the session. */
    TIDE_STORE_Q_SESSION_NODE_DEVICES = 11,
    /* (session): devices, the JSON array of the session's full device names (NULL when not logged). */
    TIDE_STORE_Q_SESSION_DEVICES = 12,
    /* (run): node, op, device (full), thread, scheduled_ns, start_ns, end_ns, output_bytes, shapes (NULL
     * before schema 3), fused (a fused group's members, "h, r, out", the node its root; NULL before
     * schema 9 and for a node run by itself), one row per execution, by start time. */
    TIDE_STORE_Q_RUN_TIMINGS = 13,

    /* ------------------------------------------------ the web API's documents (one cell of JSON) */
    /* (path, bytes, server): /api/status; path and bytes (the file's size) and server (a JSON object)
     * come from the caller. */
    TIDE_STORE_Q_STATUS_JSON = 14,
    /* (): /api/sessions. */
    TIDE_STORE_Q_SESSIONS_JSON = 15,
    /* (session or 0: all, status: ok/failed/unfinished or NULL, traced: 0/1 or -1, since, limit): /api/runs,
     * the latest limit runs after id since, oldest first, and whether more matched. */
    TIDE_STORE_Q_RUNS_JSON = 16,
    /* (run): /api/run. */
    TIDE_STORE_Q_RUN_JSON = 17,
    /* (session): /api/graphs. */
    TIDE_STORE_Q_GRAPHS_JSON = 18,
    /* (name, run or 0, session, version or 0): /api/node without its "tensor" (NULL for no such node). */
    TIDE_STORE_Q_NODE_JSON = 19,
    /* (session): /api/tensors. */
    TIDE_STORE_Q_TENSORS_JSON = 20,
    /* (a, b): /api/compare. */
    TIDE_STORE_Q_COMPARE_JSON = 21,
    /* (session): /api/scalars: a curve per summary tag, and per scalar tensor and run signature (what
     * its runs fed, with shapes, and their targets): {"tags":[{"tag","kind","points","signature_run",
     * "signature","curves"}]}. */
    TIDE_STORE_Q_SCALARS_JSON = 22,

    /* ------------------------------------------------ curves (rows; the web server downsamples them) */
    /* (session, tag, kind: summary/watched/fetched or NULL, signature_run or 0): kind, step, run, value,
     * time (the run's start, ns since the epoch), signature_run, signature, one row per run in step
     * order: the summary tagged tag when there is one (and kind is NULL or summary), else the scalar
     * tensor named tag (a node's name, "name:N" for output N > 0) in the runs whose signature is
     * signature_run's (0: the signature of its latest run). kind is watched when any of the curve's
     * rows is, else fetched; signature_run is the curve's first run (NULL for a summary). value is a
     * number, "Inf", "-Inf" or "NaN" (see TIDE_STORE_Q_TENSOR_HISTORY for a tensor's), NULL when
     * unknown. */
    TIDE_STORE_Q_SCALAR_POINTS = 23,
    /* (node, output, session or 0: the latest that logged it, stat: min/max/mean/std/nan_count/inf_count):
     * session, step, run, value, time (the run's start, ns since the epoch), one row per run in step
     * order. min, max, mean and std are over the finite elements (NULL when there is none) except for a scalar tensor, whose value they are
     * ("NaN", "Inf", "-Inf" from its NaN/Inf counts and stored value; NULL when an infinity's value
     * was pruned and its sign is unknown). */
    TIDE_STORE_Q_TENSOR_HISTORY = 24,

    /* ------------------------------------------------ the views' device colours (viz/palette.c) */
    /* (): id of every session, in order. */
    TIDE_STORE_Q_SESSION_IDS = 25,

    /* ------------------------------------------------ histograms over steps (the tensor page) */
    /* (node, output, session or 0: the latest that logged it): session, step, run, min, max, mean,
     * nan_count, inf_count, histogram (the JSON array of counts in equal bins from min to max over the
     * finite elements; NULL when none), one row per run in step order. */
    TIDE_STORE_Q_TENSOR_HISTOGRAMS = 26,
    /* (session): node, attrs (the ImageSummary node's, in the session's latest graph; NULL when not
     * there), count, first_step, last_step, last_run, shape and dtype (of the latest): one row per
     * ImageSummary node whose images the session logged (tensors of kind 'image'), by node name. */
    TIDE_STORE_Q_IMAGE_SUMMARIES = 27,

    /* ------------------------------------------------ loop iterations (viz/timeline.c) */
    /* (run): frame, iteration, one row per execution in TIDE_STORE_Q_RUN_TIMINGS's order (the same
     * rows): the loop frame instance and iteration of each, NULL outside loops and before schema 7. */
    TIDE_STORE_Q_RUN_TIMING_ITERATIONS = 28,

    /* ------------------------------------------------ device lanes and memory (viz/timeline.c, :run) */
    /* (run): lane, launch_start_ns, launch_end_ns, one row per execution in TIDE_STORE_Q_RUN_TIMINGS's
     * order (the same rows): the device stream's lane a kernel ran in ("/sim:0 compute", "/sim:0 copy
     * h2d") and when the host launched it; NULL for an execution an executor thread ran, and before
     * schema 10. */
    TIDE_STORE_Q_RUN_TIMING_LANES = 29,
    /* (run): lane, executions, busy_ns (the sum of their end - start), first_ns and last_ns (the first
     * start and the last end, monotonic ns): one row per lane of the traced run, by device: its executor
     * threads' ("/cpu:0 thread 1", "/cpu:0 caller") by thread, then its streams' by name. */
    TIDE_STORE_Q_RUN_LANES = 30,
    /* (run): device (short), peak_bytes, held_bytes: the run's memory per device (runs.device_memory), in
     * the engine's device order; no row when the log does not say (before schema 10, a run's end lost). */
    TIDE_STORE_Q_RUN_DEVICE_MEMORY = 31,
} tide_store_query_id;

/* Runs query id on the log at path with params (num_params of them, the query's) and keeps up to
 * max_rows rows. Returns a new table, or NULL with err set: the errors of tide_store_query (a missing
 * file TIDE_NOT_FOUND, not a run log TIDE_FAILED_PRECONDITION, ...); an unknown id or a wrong number of
 * parameters is TIDE_INVALID_ARGUMENT. */
tide_store_table *tide_store_query_named(const char *path, tide_store_query_id id, const char *const *params,
                                         int num_params, int max_rows, tide_error *err);
/* The query's name ("LATEST_SESSION"), for messages; "?" for an unknown id. */
const char *tide_store_query_name(tide_store_query_id id);

#ifdef __cplusplus
}
#endif
#endif
