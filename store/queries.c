/* queries.c — the named queries of store_queries.h: the statements the web server, the drawings and the
 * REPL run against a run log, one per id, each written for the current schema and, where an older
 * schema lacks a column, for that schema too. Every value from a caller is a bound parameter.
 *
 * Much of the web API's JSON is built here by SQLite (json_object, json_group_array: every string
 * escaped); the fragments below are shared between those documents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define FEED_SHAPES_SCHEMA 6 /* runs.feed_shapes arrives with this schema version */
#define ITERATIONS_SCHEMA 7  /* node_timings.frame and .iteration arrive with this one */
#define FUSED_SCHEMA 9       /* node_timings.fused arrives with this one */
#define LANES_SCHEMA 10      /* node_timings.lane, launch_*_ns and runs.device_memory arrive with this one */

/* The lane of node_timings row t: its device stream's ("/sim:0 compute"), else its executor thread's. */
#define LANE_OF(lane) \
    "ifnull(" lane ", short_device(device) || CASE WHEN thread < 0 THEN ' caller' ELSE ' thread ' || thread END)"
#define RUN_LANES(lane)                                                                                    \
    "SELECT " LANE_OF(lane) " AS lane, count(*) AS executions, sum(end_ns - start_ns) AS busy_ns, "           \
    "min(start_ns) AS first_ns, max(end_ns) AS last_ns FROM node_timings WHERE run_id = ?1 "                   \
    "GROUP BY 1 ORDER BY CASE WHEN max(" lane " IS NOT NULL) THEN substr(min(" lane "), 1, instr(min(" lane "), ' ') - 1) " \
    "ELSE min(short_device(device)) END, max(" lane " IS NOT NULL), CASE WHEN max(" lane " IS NULL) THEN min(thread) END, 1"

/* A column that holds a JSON array, as JSON (an empty array when it is not one: the file may be damaged). */
#define JSON_ARRAY(x)                                                                                     \
    "json(CASE WHEN json_valid(" x ") THEN CASE WHEN json_type(" x ") = 'array' THEN " x                 \
    " ELSE '[]' END ELSE '[]' END)"
#define STATUS_TEXT(r) "CASE WHEN " r ".status IS NULL THEN 'unfinished' ELSE status_name(" r ".status) END"
#define STARTED(r) "strftime('%Y-%m-%d %H:%M:%f', " r ".started_at_ns / 1e9, 'unixepoch', 'localtime')"

/* A run as /api/run and /api/compare show it (r is the runs row). */
#define RUN_JSON                                                                                          \
    "json_object('id', r.id, 'session', r.session_id, 'step', r.step, 'run_id', r.run_id, 'status', "     \
    STATUS_TEXT("r") ", 'error', r.error, 'wall_ms', round(r.wall_ns / 1e6, 3), 'traced', r.traced, "    \
    "'feeds', " JSON_ARRAY("r.feeds") ", 'fetches', " JSON_ARRAY("r.fetches") ", 'targets', "             \
    JSON_ARRAY("r.targets") ", 'started', " STARTED("r") ", "                                             \
    "'nodes_timed', (SELECT count(*) FROM node_timings WHERE run_id = r.id), "                           \
    "'tensors', (SELECT count(*) FROM tensors WHERE run_id = r.id))"

/* A run as /api/runs lists it. */
#define RUN_SUMMARY_JSON                                                                                  \
    "json_object('id', r.id, 'session', r.session_id, 'step', r.step, 'status', " STATUS_TEXT("r")         \
    ", 'error', r.error, 'wall_ms', round(r.wall_ns / 1e6, 3), 'traced', r.traced, 'fetches', "          \
    JSON_ARRAY("r.fetches") ", 'started', " STARTED("r") ")"

/* The value of a scalar tensor's row t: its mean (the value itself) when finite; else 'NaN', or an
 * infinity whose sign is the stored value's sign bit (the last byte in little-endian order; complex
 * scalars excepted); NULL when that value is gone. */
#define SCALAR_VALUE                                                                                      \
    "CASE WHEN t.mean IS NOT NULL THEN t.mean WHEN t.nan_count > 0 THEN 'NaN' "                          \
    "WHEN t.inf_count > 0 AND t.value IS NOT NULL AND t.dtype NOT LIKE 'complex%' THEN "                  \
    "CASE WHEN hex(substr(t.value, -1, 1)) >= '80' THEN -9e999 ELSE 9e999 END END"

/* Watched scalars are tensors rows of shape [] (any kind: a fetched loss is a curve too); their tag is
 * the node's name, with ":N" for an output N > 0. ScalarSummary nodes' own outputs are curves of the
 * summaries table already (?1 is the session). */
#define SCALAR_TAG "(t.node || CASE WHEN t.output > 0 THEN ':' || t.output ELSE '' END)"
#define NOT_SUMMARY                                                                                        \
    "t.node NOT IN (SELECT n.name FROM nodes n JOIN graphs g ON g.id = n.graph_id WHERE g.session_id = ?1 "  \
    "AND n.op = 'ScalarSummary')"

/* A run's signature (r is the runs row; shapes its feed_shapes column, or NULL for a file without it):
 * what it fed (names, dtypes and shapes) and its targets. A training step and an evaluation of the same
 * node differ by it (a train op as a target; a batch of 100 rows against a test set of 10,000), while a
 * training step that fetches one more summary does not. SIGNATURE_TEXT is the same, to be read. */
#define SIGNATURE(r, shapes) "(ifnull(" r ".feeds, '[]') || ' ' || ifnull(" shapes ", '') || ' ' || ifnull(" r ".targets, '[]'))"
#define SIGNATURE_TEXT(r, shapes)                                                                        \
    "(CASE WHEN json_array_length(" JSON_ARRAY(r ".feeds") ") > 0 THEN 'feeds ' || (SELECT "               \
    "group_concat(f.value || ifnull(' ' || s.value, ''), ', ') FROM json_each(" JSON_ARRAY(r ".feeds") ") f " \
    "LEFT JOIN json_each(" JSON_ARRAY(shapes) ") s ON s.key = f.key) ELSE 'no feeds' END || "                \
    "CASE WHEN json_array_length(" JSON_ARRAY(r ".targets") ") > 0 THEN '; targets ' || (SELECT "          \
    "group_concat(value, ', ') FROM json_each(" JSON_ARRAY(r ".targets") ")) ELSE '' END)"

/* The scalar tensors of session ?1 (tensors rows of shape [], any kind, but ScalarSummary outputs): tag,
 * kind, run and its signature. */
#define SCALAR_ROWS(shapes)                                                                              \
    "SELECT " SCALAR_TAG " AS tag, t.kind, t.run_id, " SIGNATURE("r", shapes) " AS sig FROM tensors t "  \
    "JOIN runs r ON r.id = t.run_id WHERE r.session_id = ?1 AND t.shape = '[]' AND " NOT_SUMMARY

/* /api/scalars: a curve per summary tag, and per (scalar tensor, run signature), labelled by kind:
 * watched when any of its rows is (a watched node may be fetched too), else fetched. */
#define SCALARS_JSON(shapes)                                                                              \
    "WITH t AS (" SCALAR_ROWS(shapes) "), "                                                                  \
    "c AS (SELECT tag, max(kind = 'watched') AS watched, count(DISTINCT run_id) AS n, min(run_id) AS first "   \
    "FROM t GROUP BY tag, sig), "                                                                            \
    "a AS (SELECT s.tag AS tag, 'summary' AS kind, count(DISTINCT s.run_id) AS n, NULL AS first "           \
    "FROM summaries s JOIN runs r ON r.id = s.run_id WHERE r.session_id = ?1 GROUP BY s.tag "                \
    "UNION ALL SELECT tag, CASE WHEN watched THEN 'watched' ELSE 'fetched' END, n, first FROM c) "          \
    "SELECT json_object('tags', (SELECT json_group_array(json_object('tag', a.tag, 'kind', a.kind, "         \
    "'points', a.n, 'signature_run', a.first, 'signature', "                                                 \
    "(SELECT " SIGNATURE_TEXT("r", shapes) " FROM runs r WHERE r.id = a.first), 'curves', "                  \
    "(SELECT count(*) FROM a b WHERE b.tag = a.tag))) FROM (SELECT * FROM a ORDER BY tag, kind = 'summary' DESC, " \
    "first) a))"

/* One curve's points (?1 session, ?2 tag, ?3 kind or NULL, ?4 a run whose signature the tensor curve
 * has; 0: the tag's latest run's): kind, step, run, value, signature_run, signature, one row per run. The
 * summary of that tag when there is one (and kind allows), else the scalar tensor's. */
#define SCALAR_POINTS(shapes)                                                                             \
    "WITH s AS (SELECT 'summary' AS kind, s.step, s.run_id AS run, s.value, r.started_at_ns AS time "       \
    "FROM summaries s "                                                                                     \
    "JOIN runs r ON r.id = s.run_id WHERE r.session_id = ?1 AND s.tag = ?2 AND (?3 IS NULL OR ?3 = 'summary') " \
    "GROUP BY s.run_id), "                                                                                  \
    "k AS (SELECT CASE WHEN ?4 > 0 THEN ?4 ELSE (SELECT max(t.run_id) FROM tensors t JOIN runs r ON r.id = "   \
    "t.run_id WHERE r.session_id = ?1 AND t.shape = '[]' AND " SCALAR_TAG " = CAST(?2 AS TEXT)) END AS run), " \
    "g AS (SELECT " SIGNATURE("r", shapes) " AS sig FROM runs r WHERE r.id = (SELECT run FROM k)), "          \
    "w AS (SELECT max(t.kind) AS kind, t.step, t.run_id AS run, " SCALAR_VALUE " AS value, "                  \
    "r.started_at_ns AS time FROM tensors t "                                                                \
    "JOIN runs r ON r.id = t.run_id WHERE r.session_id = ?1 AND t.shape = '[]' AND " NOT_SUMMARY " AND "       \
    SCALAR_TAG " = CAST(?2 AS TEXT) AND (?3 IS NULL OR ?3 <> 'summary') AND " SIGNATURE("r", shapes)         \
    " = (SELECT sig FROM g) GROUP BY t.run_id), "                                                           \
    "c AS (SELECT kind, step, run, value, time, NULL AS first FROM s UNION ALL SELECT CASE WHEN "              \
    "(SELECT max(kind = 'watched') FROM w) THEN 'watched' ELSE 'fetched' END, step, run, value, time, "       \
    "(SELECT min(run) FROM w) FROM w WHERE NOT EXISTS (SELECT 1 FROM s)) "                                   \
    "SELECT kind, step, run, value, time, first AS signature_run, (SELECT " SIGNATURE_TEXT("r", shapes)        \
    " FROM runs r WHERE r.id = first) AS signature FROM c ORDER BY step, run"

/* The node's effective device (viz.h's rule) and its time in the chosen run (or the latest traced
 * run of the session that timed it). ?2 run (0: none), ?3 session. */
#define NODE_TIMING(col)                                                                                   \
    "(SELECT " col " FROM node_timings t WHERE t.node = n.name AND t.run_id = CASE WHEN ?2 > 0 THEN ?2 ELSE " \
    "(SELECT max(run_id) FROM node_timings WHERE node = n.name AND run_id IN "                                \
    "(SELECT id FROM runs WHERE session_id = ?3 AND traced = 1)) END LIMIT 1)"

/* The fused group a node ran in (docs/fusion.md), from the chosen run (?2) or the latest traced run of
 * the session (?3) that timed it, by itself or in a group: {"root": ..., "members": "h, r, out"}, or
 * NULL when that run ran it by itself. */
#define NODE_FUSED                                                                                         \
    "(SELECT CASE WHEN t.fused IS NULL THEN NULL ELSE json_object('root', t.node, 'members', t.fused) END "  \
    "FROM node_timings t WHERE t.run_id IN (SELECT id FROM runs WHERE session_id = ?3 AND traced = 1 AND "   \
    "(?2 = 0 OR id = ?2)) AND (t.node = n.name OR instr(', ' || t.fused || ', ', ', ' || n.name || ', ') > 0) " \
    "ORDER BY t.run_id DESC LIMIT 1)"

/* /api/node; shapes: the SQL of its output shapes (node_timings.shapes exists from schema 3), fused:
 * of its fused group (NODE_FUSED, from schema 9). ?1 name, ?2 run, ?3 session, ?4 version. */
#define NODE_JSON(shapes, fused)                                                                           \
    "WITH g AS (SELECT id FROM graphs WHERE session_id = ?3 AND (?4 = 0 OR version = ?4) ORDER BY id DESC "  \
    "LIMIT 1) "                                                                                             \
    "SELECT json_object('name', n.name, 'op', n.op, 'attrs', n.attrs, 'inputs', " JSON_ARRAY("n.inputs")    \
    ", 'control_inputs', " JSON_ARRAY("n.control_inputs") ", 'consumers', "                                 \
    "(SELECT json_group_array(c.name) FROM (SELECT c.name FROM nodes c WHERE c.graph_id = n.graph_id AND ("  \
    "EXISTS (SELECT 1 FROM json_each(" JSON_ARRAY("c.inputs") ") i WHERE i.value = n.name OR "              \
    "(substr(i.value, 1, length(n.name) + 1) = n.name || ':' AND substr(i.value, length(n.name) + 2) "     \
    "GLOB '[0-9]*')) "                                                                                      \
    "OR EXISTS (SELECT 1 FROM json_each(" JSON_ARRAY("c.control_inputs") ") i WHERE i.value = n.name "     \
    "OR i.value = '^' || n.name)) ORDER BY c.rowid) c), "                                                   \
    "'requested_device', n.requested_device, 'device', "                                                    \
    "ifnull(short_device(ifnull(" NODE_TIMING("t.device") ", n.assigned_device)), ''), "                    \
    "'shapes', " shapes ", "                                                                                \
    "'time_us', " NODE_TIMING("round((t.end_ns - t.start_ns) / 1e3, 1)") ", 'fused', json(" fused ")) "      \
    "FROM nodes n WHERE n.graph_id = (SELECT id FROM g) AND n.name = CAST(?1 AS TEXT)"

/* The graph a run ran: the latest version of its session logged at or before the run started (or the
 * session's first version when none was). */
#define GRAPH_OF(run)                                                                                     \
    "(SELECT g.id FROM graphs g JOIN runs r ON r.id = " run " WHERE g.session_id = r.session_id ORDER BY "    \
    "g.created_at <= strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch') DESC, "             \
    "CASE WHEN g.created_at <= strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch') "          \
    "THEN -g.id ELSE g.id END LIMIT 1)"

/* The nodes whose field differs between the two graphs x and y. */
#define FIELD_DIFF(field)                                                                                  \
    "SELECT x.name, '" field "' AS field, x." field " AS a, y." field " AS b FROM x JOIN y ON y.name = x.name " \
    "WHERE x." field " IS NOT y." field

/* A statistic of tensors row t: a column, or for a scalar its value (SCALAR_VALUE). ?4 is the stat. */
#define STAT_VALUE                                                                                          \
    "CASE WHEN ?4 IN ('min', 'max', 'mean') AND t.shape = '[]' AND t.mean IS NULL THEN " SCALAR_VALUE         \
    " ELSE CASE ?4 WHEN 'min' THEN t.min WHEN 'max' THEN t.max WHEN 'mean' THEN t.mean WHEN 'std' THEN t.std " \
    "WHEN 'nan_count' THEN t.nan_count WHEN 'inf_count' THEN t.inf_count END END"

typedef struct named_query {
    const char *name;
    int num_params;
    const char *sql;        /* for the current schema */
    int since;              /* the schema version sql needs (0: any) */
    const char *older_sql;  /* for a file of an older schema than since */
    int older_since;        /* the version older_sql needs in turn (0: any) */
    const char *oldest_sql; /* for a file older than that */
} named_query;

static const named_query queries[] = {
    [TIDE_STORE_Q_LATEST_SESSION] = {"LATEST_SESSION", 0, "SELECT max(id) AS id FROM sessions", 0, NULL},
    [TIDE_STORE_Q_LATEST_GRAPH_SESSION] =
        {"LATEST_GRAPH_SESSION", 0,
         "SELECT session_id FROM graphs WHERE session_id IS NOT NULL ORDER BY id DESC LIMIT 1", 0, NULL},
    [TIDE_STORE_Q_SESSION_EXISTS] = {"SESSION_EXISTS", 1, "SELECT id FROM sessions WHERE id = ?1", 0, NULL},
    [TIDE_STORE_Q_RUN_BRIEF] = {"RUN_BRIEF", 1,
                                "SELECT session_id, step, wall_ns, traced, peak_bytes FROM runs WHERE id = ?1", 8,
                                "SELECT session_id, step, wall_ns, traced, NULL AS peak_bytes FROM runs WHERE id = ?1"},
    [TIDE_STORE_Q_SESSION_GRAPH] =
        {"SESSION_GRAPH", 2,
         "SELECT id, version FROM graphs WHERE session_id = ?1 AND (?2 = 0 OR version = ?2) ORDER BY id DESC LIMIT 1",
         0, NULL},
    [TIDE_STORE_Q_LATEST_TRACED_RUN] =
        {"LATEST_TRACED_RUN", 1, "SELECT max(id) AS run FROM runs WHERE session_id = ?1 AND traced = 1", 0, NULL},
    [TIDE_STORE_Q_LOG_STATE] =
        {"LOG_STATE", 0,
         "SELECT ifnull((SELECT max(id) FROM graphs), 0) || '/' || ifnull((SELECT max(rowid) FROM node_timings), 0) "
         "|| '/' || ifnull((SELECT max(id) FROM runs), 0) AS state",
         0, NULL},
    [TIDE_STORE_Q_RUN_COUNT] = {"RUN_COUNT", 0, "SELECT count(*) AS runs FROM runs", 0, NULL},

    [TIDE_STORE_Q_GRAPH_NODES] =
        {"GRAPH_NODES", 1,
         "SELECT name, op, inputs, control_inputs, attrs, requested_device, assigned_device FROM nodes "
         "WHERE graph_id = ?1 ORDER BY rowid",
         0, NULL},
    [TIDE_STORE_Q_RUN_NODE_TIMES] =
        {"RUN_NODE_TIMES", 1,
         "SELECT node, device, sum(end_ns - start_ns) AS time_ns, max(fused) AS fused FROM node_timings "
         "WHERE run_id = ?1 GROUP BY node",
         FUSED_SCHEMA,
         "SELECT node, device, sum(end_ns - start_ns) AS time_ns, NULL AS fused FROM node_timings WHERE run_id = ?1 "
         "GROUP BY node"},
    [TIDE_STORE_Q_SESSION_NODE_DEVICES] =
        {"SESSION_NODE_DEVICES", 1, /* the bare column device comes from the row of max(run_id) */
         "SELECT node, device, max(run_id) AS run, fused FROM node_timings WHERE run_id IN "
         "(SELECT id FROM runs WHERE session_id = ?1 AND traced = 1) GROUP BY node",
         FUSED_SCHEMA,
         "SELECT node, device, max(run_id) AS run, NULL AS fused FROM node_timings WHERE run_id IN "
         "(SELECT id FROM runs WHERE session_id = ?1 AND traced = 1) GROUP BY node"},
    [TIDE_STORE_Q_SESSION_DEVICES] = {"SESSION_DEVICES", 1, "SELECT devices FROM sessions WHERE id = ?1", 0, NULL},
    [TIDE_STORE_Q_RUN_TIMING_ITERATIONS] =
        {"RUN_TIMING_ITERATIONS", 1,
         "SELECT frame, iteration FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid",
         ITERATIONS_SCHEMA,
         "SELECT NULL AS frame, NULL AS iteration FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid"},
    [TIDE_STORE_Q_RUN_TIMING_LANES] =
        {"RUN_TIMING_LANES", 1,
         "SELECT lane, launch_start_ns, launch_end_ns FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid",
         LANES_SCHEMA,
         "SELECT NULL AS lane, NULL AS launch_start_ns, NULL AS launch_end_ns FROM node_timings WHERE run_id = ?1 "
         "ORDER BY start_ns, rowid"},
    [TIDE_STORE_Q_RUN_LANES] = {"RUN_LANES", 1, RUN_LANES("node_timings.lane"), LANES_SCHEMA, RUN_LANES("NULL")},
    [TIDE_STORE_Q_RUN_DEVICE_MEMORY] =
        {"RUN_DEVICE_MEMORY", 1,
         "SELECT short_device(json_extract(d.value, '$.device')) AS device, json_extract(d.value, '$.peak_bytes') "
         "AS peak_bytes, json_extract(d.value, '$.held_bytes') AS held_bytes FROM runs r, json_each("
         JSON_ARRAY("r.device_memory") ") d WHERE r.id = ?1 ORDER BY d.key",
         LANES_SCHEMA,
         "SELECT NULL AS device, NULL AS peak_bytes, NULL AS held_bytes WHERE ?1 IS NULL AND 0"},
    [TIDE_STORE_Q_RUN_TIMINGS] =
        {"RUN_TIMINGS", 1,
         "SELECT node, op, device, thread, scheduled_ns, start_ns, end_ns, output_bytes, shapes, fused "
         "FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid",
         FUSED_SCHEMA,
         "SELECT node, op, device, thread, scheduled_ns, start_ns, end_ns, output_bytes, shapes, NULL AS fused "
         "FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid",
         3,
         "SELECT node, op, device, thread, scheduled_ns, start_ns, end_ns, output_bytes, NULL AS shapes, "
         "NULL AS fused FROM node_timings WHERE run_id = ?1 ORDER BY start_ns, rowid"},

    [TIDE_STORE_Q_STATUS_JSON] =
        {"STATUS_JSON", 3,
         "SELECT json_object('path', CAST(?1 AS TEXT), 'schema', (SELECT user_version FROM pragma_user_version), "
         "'sessions', (SELECT count(*) FROM sessions), 'runs', (SELECT count(*) FROM runs), "
         "'last_run', (SELECT max(id) FROM runs), 'last_graph', (SELECT max(id) FROM graphs), "
         "'unfinished', (SELECT count(*) FROM runs WHERE status IS NULL), 'bytes', ?2, 'server', json(?3))",
         0, NULL},
    [TIDE_STORE_Q_SESSIONS_JSON] =
        {"SESSIONS_JSON", 0,
         "SELECT json_group_array(json_object('id', s.id, 'created_at', s.created_at, 'label', s.label, "
         "'threads', s.threads, 'devices', (SELECT json_group_array(short_device(d.value)) "
         "FROM json_each(" JSON_ARRAY("s.devices") ") d))) FROM (SELECT * FROM sessions ORDER BY id) s",
         0, NULL},
    [TIDE_STORE_Q_RUNS_JSON] =
        {"RUNS_JSON", 5,
         "WITH m AS (SELECT r.id, " RUN_SUMMARY_JSON " AS j FROM runs r "
         "WHERE (?1 = 0 OR r.session_id = ?1) "
         "AND (?2 IS NULL OR (?2 = 'ok' AND r.status = 0) OR (?2 = 'failed' AND r.status <> 0) "
         "OR (?2 = 'unfinished' AND r.status IS NULL)) "
         "AND (?3 < 0 OR r.traced = ?3) AND r.id > ?4 ORDER BY r.id DESC LIMIT ?5 + 1) "
         "SELECT json_object('runs', (SELECT json_group_array(json(j)) FROM "
         "(SELECT * FROM (SELECT * FROM m ORDER BY id DESC LIMIT ?5) ORDER BY id)), "
         "'truncated', json((SELECT CASE WHEN count(*) > ?5 THEN 'true' ELSE 'false' END FROM m)))",
         0, NULL},
    [TIDE_STORE_Q_RUN_JSON] = {"RUN_JSON", 1, "SELECT " RUN_JSON " FROM runs r WHERE r.id = ?1", 0, NULL},
    [TIDE_STORE_Q_GRAPHS_JSON] =
        {"GRAPHS_JSON", 1,
         "SELECT json_group_array(json_object('version', g.version, 'id', g.id, 'created_at', g.created_at, "
         "'nodes', (SELECT count(*) FROM nodes WHERE graph_id = g.id))) "
         "FROM (SELECT * FROM graphs WHERE session_id = ?1 ORDER BY id) g",
         0, NULL},
    [TIDE_STORE_Q_NODE_JSON] = {"NODE_JSON", 4, NODE_JSON(NODE_TIMING("t.shapes"), NODE_FUSED), FUSED_SCHEMA,
                                NODE_JSON(NODE_TIMING("t.shapes"), "NULL"), 3, NODE_JSON("NULL", "NULL")},
    [TIDE_STORE_Q_TENSORS_JSON] =
        {"TENSORS_JSON", 1, /* bare columns (shape, dtype) come from the row of max(run_id): the latest */
         "SELECT json_group_array(json_object('node', node, 'output', output, 'kind', kind, 'count', n, "
         "'first_step', fs, 'last_step', ls, 'shape', " JSON_ARRAY("shape") ", 'dtype', dtype, "
         "'stored', stored)) FROM (SELECT t.node, t.output, t.kind, count(*) AS n, min(t.step) AS fs, "
         "max(t.step) AS ls, max(t.run_id) AS last, t.shape, t.dtype, sum(t.value IS NOT NULL) AS stored "
         "FROM tensors t JOIN runs r ON r.id = t.run_id WHERE r.session_id = ?1 "
         "GROUP BY t.node, t.output, t.kind ORDER BY t.node, t.output, t.kind)",
         0, NULL},
    [TIDE_STORE_Q_COMPARE_JSON] =
        {"COMPARE_JSON", 2,
         "WITH x AS (SELECT rowid AS rid, * FROM nodes WHERE graph_id = " GRAPH_OF("?1") "), "
         "y AS (SELECT rowid AS rid, * FROM nodes WHERE graph_id = " GRAPH_OF("?2") "), "
         "ch AS (" FIELD_DIFF("op") " UNION ALL " FIELD_DIFF("inputs") " UNION ALL " FIELD_DIFF("control_inputs")
         " UNION ALL " FIELD_DIFF("attrs") " UNION ALL " FIELD_DIFF("requested_device") "), "
         "tm AS (SELECT node, max(op) AS op, sum(a_us) AS a_us, sum(b_us) AS b_us FROM ("
         "SELECT node, op, (end_ns - start_ns) / 1e3 AS a_us, NULL AS b_us FROM node_timings WHERE run_id = ?1 "
         "UNION ALL SELECT node, op, NULL, (end_ns - start_ns) / 1e3 FROM node_timings WHERE run_id = ?2) "
         "GROUP BY node) "
         "SELECT json_object("
         "'a', (SELECT " RUN_JSON " FROM runs r WHERE r.id = ?1), "
         "'b', (SELECT " RUN_JSON " FROM runs r WHERE r.id = ?2), "
         "'graph', json_object("
         "'a_graph', " GRAPH_OF("?1") ", 'b_graph', " GRAPH_OF("?2") ", "
         "'added', (SELECT json_group_array(name) FROM (SELECT name FROM y WHERE name NOT IN (SELECT name FROM x) "
         "ORDER BY rid)), "
         "'removed', (SELECT json_group_array(name) FROM (SELECT name FROM x WHERE name NOT IN (SELECT name FROM y) "
         "ORDER BY rid)), "
         "'changed', (SELECT json_group_array(json_object('name', name, 'field', field, 'a', a, 'b', b)) "
         "FROM (SELECT * FROM ch ORDER BY name, field))), "
         "'times', (SELECT json_group_array(json_object('node', node, 'op', op, 'a_us', round(a_us, 1), "
         "'b_us', round(b_us, 1), 'diff_us', round(ifnull(b_us, 0) - ifnull(a_us, 0), 1))) "
         "FROM (SELECT * FROM tm ORDER BY abs(ifnull(b_us, 0) - ifnull(a_us, 0)) DESC, node)))",
         0, NULL},
    [TIDE_STORE_Q_SCALARS_JSON] = {"SCALARS_JSON", 1, SCALARS_JSON("r.feed_shapes"), FEED_SHAPES_SCHEMA,
                                   SCALARS_JSON("NULL")},
    [TIDE_STORE_Q_SCALAR_POINTS] = {"SCALAR_POINTS", 4, SCALAR_POINTS("r.feed_shapes"), FEED_SHAPES_SCHEMA,
                                    SCALAR_POINTS("NULL")},
    [TIDE_STORE_Q_TENSOR_HISTORY] =
        {"TENSOR_HISTORY", 4,
         "WITH s AS (SELECT CASE WHEN ?3 > 0 THEN ?3 ELSE (SELECT r.session_id FROM tensors t JOIN runs r "
         "ON r.id = t.run_id WHERE t.node = ?1 AND t.output = ?2 ORDER BY t.run_id DESC LIMIT 1) END AS id) "
         "SELECT (SELECT id FROM s) AS session, t.step, t.run_id AS run, " STAT_VALUE " AS value, "
         "r.started_at_ns AS time FROM tensors t JOIN runs r ON r.id = t.run_id "
         "WHERE t.node = ?1 AND t.output = ?2 AND r.session_id = (SELECT id FROM s) GROUP BY t.run_id "
         "ORDER BY t.step, t.run_id",
         0, NULL},
    [TIDE_STORE_Q_SESSION_IDS] = {"SESSION_IDS", 0, "SELECT id FROM sessions ORDER BY id", 0, NULL},
    [TIDE_STORE_Q_IMAGE_SUMMARIES] =
        {"IMAGE_SUMMARIES", 1, /* bare columns (shape, dtype) come from the row of max(run_id): the latest */
         "SELECT t.node, (SELECT n.attrs FROM nodes n WHERE n.graph_id = (SELECT max(id) FROM graphs "
         "WHERE session_id = ?1) AND n.name = t.node LIMIT 1) AS attrs, count(*) AS n, min(t.step), "
         "max(t.step), max(t.run_id), t.shape, t.dtype FROM tensors t JOIN runs r ON r.id = t.run_id "
         "WHERE r.session_id = ?1 AND t.kind = 'image' GROUP BY t.node ORDER BY t.node",
         0, NULL},
    [TIDE_STORE_Q_TENSOR_HISTOGRAMS] =
        {"TENSOR_HISTOGRAMS", 3,
         "WITH s AS (SELECT CASE WHEN ?3 > 0 THEN ?3 ELSE (SELECT r.session_id FROM tensors t JOIN runs r "
         "ON r.id = t.run_id WHERE t.node = ?1 AND t.output = ?2 ORDER BY t.run_id DESC LIMIT 1) END AS id) "
         "SELECT (SELECT id FROM s) AS session, t.step, t.run_id AS run, t.min, t.max, t.mean, t.nan_count, "
         "t.inf_count, t.histogram FROM tensors t JOIN runs r ON r.id = t.run_id "
         "WHERE t.node = ?1 AND t.output = ?2 AND r.session_id = (SELECT id FROM s) GROUP BY t.run_id "
         "ORDER BY t.step, t.run_id",
         0, NULL},
};

const char *tide_store_query_name(tide_store_query_id id)
{
    size_t i = (size_t)id;
    return i < sizeof queries / sizeof queries[0] && queries[i].name ? queries[i].name : "?";
}

tide_store_table *tide_store_query_named(const char *path, tide_store_query_id id, const char *const *params,
                                         int num_params, int max_rows, tide_error *err)
{
    size_t i = (size_t)id;
    if (i >= sizeof queries / sizeof queries[0] || !queries[i].sql) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log query: no query has id %d", (int)id);
        return NULL;
    }
    const named_query *q = &queries[i];
    if (num_params != q->num_params || (num_params > 0 && !params) || max_rows < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log query %s: takes %d parameters, not %d (and max_rows >= 0)",
                       q->name, q->num_params, num_params);
        return NULL;
    }
    st_reader r;
    if (st_reader_open(&r, path, err) != TIDE_OK)
        return NULL;
    int version = 0;
    tide_store_table *t = NULL;
    if (st_check_schema(&r, &version, err) == TIDE_OK)
        t = st_reader_run(&r, version < q->older_since && q->oldest_sql ? q->oldest_sql
                               : version < q->since && q->older_sql ? q->older_sql
                                                                    : q->sql,
                          params, num_params, max_rows, err);
    st_reader_close(&r);
    return t;
}
