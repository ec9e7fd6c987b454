/* api_runs.c — the endpoints about the log as a whole and its runs: /api/status, /api/sessions,
 * /api/runs, /api/run, and the scalar curves /api/scalars and /api/scalar (docs/web.md).
 *
 * Each answer is one JSON document built by SQLite (json_object, json_group_array: every string
 * escaped) from one query whose values from the URL are bound parameters. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "web_internal.h"

#define RUNS_DEFAULT_LIMIT 200
#define RUNS_MAX_LIMIT 5000

/* The columns of a run as /api/runs lists it (r is the runs row). */
#define RUN_SUMMARY_JSON                                                                                  \
    "json_object('id', r.id, 'session', r.session_id, 'step', r.step, 'status', "                         \
    "CASE WHEN r.status IS NULL THEN 'unfinished' ELSE status_name(r.status) END, 'error', r.error, "      \
    "'wall_ms', round(r.wall_ns / 1e6, 3), 'traced', r.traced, 'fetches', " WEB_SQL_JSON_ARRAY("r.fetches") \
    ", 'started', strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch', 'localtime'))"

/* The server's own counts and limits (guard.c), as a JSON object. */
static void server_json(web_request *rq, char *buf, size_t size)
{
    web_guard_counts c;
    web_guard_counts_get(rq->w->guard, &c);
    const web_limits *l = &rq->w->limits;
    snprintf(buf, size,
             "{\"connections\":%" PRId64 ",\"accepted\":%" PRId64 ",\"refused\":%" PRId64 ",\"evicted\":%" PRId64
             ",\"timed_out\":%" PRId64 ",\"max_connections\":%d,\"max_per_address\":%d,\"header_timeout_ms\":%"
             PRId64 ",\"reply_timeout_ms\":%" PRId64 "}",
             c.open, c.accepted, c.refused, c.evicted, c.timed_out, l->max_connections, l->max_per_address,
             l->header_timeout_ms, l->reply_timeout_ms);
}

void web_api_status(web_request *rq, web_reply *out)
{
    static const char sql[] =
        "SELECT json_object('path', CAST(?1 AS TEXT), 'schema', (SELECT user_version FROM pragma_user_version), "
        "'sessions', (SELECT count(*) FROM sessions), 'runs', (SELECT count(*) FROM runs), "
        "'last_run', (SELECT max(id) FROM runs), 'last_graph', (SELECT max(id) FROM graphs), "
        "'unfinished', (SELECT count(*) FROM runs WHERE status IS NULL), 'bytes', ?2, 'server', json(?3))";
    struct stat st;
    char path_wal[4096], buf[24], server[512];
    int64_t bytes = stat(rq->db, &st) == 0 ? (int64_t)st.st_size : 0;
    snprintf(path_wal, sizeof path_wal, "%s-wal", rq->db);
    if (stat(path_wal, &st) == 0)
        bytes += (int64_t)st.st_size;
    server_json(rq, server, sizeof server);
    const char *p[] = {rq->db, web_itoa(buf, bytes), server};
    web_sql_reply(rq, out, sql, p, 3, "no status");
}

void web_api_sessions(web_request *rq, web_reply *out)
{
    static const char sql[] =
        "SELECT json_group_array(json_object('id', s.id, 'created_at', s.created_at, 'label', s.label, "
        "'threads', s.threads, 'devices', (SELECT json_group_array(" WEB_SQL_SHORT_DEVICE("d.value") ") "
        "FROM json_each(" WEB_SQL_JSON_ARRAY("s.devices") ") d))) "
        "FROM (SELECT * FROM sessions ORDER BY id) s";
    web_sql_reply(rq, out, sql, NULL, 0, "no sessions");
}

void web_api_runs(web_request *rq, web_reply *out)
{
    static const char *const statuses[] = {"ok", "failed", "unfinished", NULL};
    int64_t session, traced, since, limit;
    const char *status;
    if (!web_arg_int(rq, out, "session", 0, 0, INT64_MAX, &session) ||
        !web_arg_choice(rq, out, "status", statuses, &status) ||
        !web_arg_int(rq, out, "traced", -1, 0, 1, &traced) || !web_arg_int(rq, out, "since", 0, 0, INT64_MAX, &since) ||
        !web_arg_int(rq, out, "limit", RUNS_DEFAULT_LIMIT, 1, RUNS_MAX_LIMIT, &limit))
        return;
    static const char sql[] =
        "WITH m AS (SELECT r.id, " RUN_SUMMARY_JSON " AS j FROM runs r "
        "WHERE (?1 = 0 OR r.session_id = ?1) "
        "AND (?2 IS NULL OR (?2 = 'ok' AND r.status = 0) OR (?2 = 'failed' AND r.status <> 0) "
        "OR (?2 = 'unfinished' AND r.status IS NULL)) "
        "AND (?3 < 0 OR r.traced = ?3) AND r.id > ?4 ORDER BY r.id DESC LIMIT ?5 + 1) "
        "SELECT json_object('runs', (SELECT json_group_array(json(j)) FROM "
        "(SELECT * FROM (SELECT * FROM m ORDER BY id DESC LIMIT ?5) ORDER BY id)), "
        "'truncated', json((SELECT CASE WHEN count(*) > ?5 THEN 'true' ELSE 'false' END FROM m)))";
    char b[4][24];
    const char *p[] = {web_itoa(b[0], session), status, web_itoa(b[1], traced), web_itoa(b[2], since),
                       web_itoa(b[3], limit)};
    web_sql_reply(rq, out, sql, p, 5, "no runs");
}

void web_api_run(web_request *rq, web_reply *out)
{
    int64_t id;
    if (!web_arg_run(rq, out, "id", true, &id))
        return;
    static const char sql[] = "SELECT " WEB_SQL_RUN_JSON " FROM runs r WHERE r.id = ?1";
    char b[24];
    const char *p[] = {web_itoa(b, id)};
    web_sql_reply(rq, out, sql, p, 1, "no such run");
}

/* Watched scalars are tensors rows of shape [] (any kind: a fetched loss is a curve too); their tag is
 * the node's name, with ":N" for an output N > 0. */
#define SCALAR_TAG "(t.node || CASE WHEN t.output > 0 THEN ':' || t.output ELSE '' END)"
/* ScalarSummary nodes' own outputs (fetched with the step) are curves of the summaries table already. */
#define NOT_SUMMARY                                                                                        \
    "t.node NOT IN (SELECT n.name FROM nodes n JOIN graphs g ON g.id = n.graph_id WHERE g.session_id = ?1 "  \
    "AND n.op = 'ScalarSummary')"

void web_api_scalars(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!web_arg_session(rq, out, &session))
        return;
    static const char sql[] =
        "SELECT json_object('tags', (SELECT json_group_array(json_object('tag', tag, 'kind', kind, 'points', n)) "
        "FROM (SELECT s.tag AS tag, 'summary' AS kind, count(DISTINCT s.run_id) AS n FROM summaries s "
        "JOIN runs r ON r.id = s.run_id WHERE r.session_id = ?1 GROUP BY s.tag "
        "UNION ALL SELECT " SCALAR_TAG " AS tag, 'watched' AS kind, count(DISTINCT t.run_id) AS n FROM tensors t "
        "JOIN runs r ON r.id = t.run_id WHERE r.session_id = ?1 AND t.shape = '[]' AND " NOT_SUMMARY
        " GROUP BY t.node, t.output ORDER BY kind, tag)))";
    char b[24];
    const char *p[] = {web_itoa(b, session)};
    web_sql_reply(rq, out, sql, p, 1, "no scalars");
}

void web_api_scalar(web_request *rq, web_reply *out)
{
    static const char *const kinds[] = {"summary", "watched", NULL};
    const char *tag, *kind;
    int64_t session;
    if (!web_arg_required(rq, out, "tag", &tag) || !web_arg_choice(rq, out, "kind", kinds, &kind) ||
        !web_arg_session(rq, out, &session))
        return;
    /* Without kind: the summary of that tag if there is one, else the watched scalar. One point per run. */
    static const char sql[] =
        "WITH s AS (SELECT s.step, s.run_id AS run, s.value FROM summaries s JOIN runs r ON r.id = s.run_id "
        "WHERE r.session_id = ?1 AND s.tag = ?2 AND (?3 IS NULL OR ?3 = 'summary') GROUP BY s.run_id), "
        "w AS (SELECT t.step, t.run_id AS run, t.mean AS value FROM tensors t JOIN runs r ON r.id = t.run_id "
        "WHERE r.session_id = ?1 AND t.shape = '[]' AND " NOT_SUMMARY " AND " SCALAR_TAG " = CAST(?2 AS TEXT) "
        "AND (?3 IS NULL OR ?3 = 'watched') GROUP BY t.run_id), "
        "c AS (SELECT * FROM s UNION ALL SELECT * FROM w WHERE NOT EXISTS (SELECT 1 FROM s)) "
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM c) THEN json_object('tag', CAST(?2 AS TEXT), 'kind', "
        "CASE WHEN EXISTS (SELECT 1 FROM s) THEN 'summary' ELSE 'watched' END, 'points', "
        "(SELECT json_group_array(json_object('step', step, 'run', run, 'value', value)) "
        "FROM (SELECT * FROM c ORDER BY step, run))) END";
    char b[24];
    const char *p[] = {web_itoa(b, session), tag, kind};
    char msg[160];
    snprintf(msg, sizeof msg, "no scalar '%.100s' in session %" PRId64, tag, session);
    web_sql_reply(rq, out, sql, p, 3, msg);
}
