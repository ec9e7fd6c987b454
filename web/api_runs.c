/* api_runs.c — the endpoints about the log as a whole and its runs: /api/status, /api/sessions,
 * /api/runs and /api/run (docs/web.md).
 *
 * Each answer is one JSON document built by SQLite (json_object, json_group_array: every string
 * escaped) in one of store's named queries, whose values from the URL are bound parameters. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "web_internal.h"

#define RUNS_DEFAULT_LIMIT 200
#define RUNS_MAX_LIMIT 5000

/* The server's own counts and limits (guard.c), as a JSON object. */
static void server_json(web_request *rq, char *buf, size_t size)
{
    web_guard_counts c;
    web_guard_counts_get(rq->w->guard, &c);
    int64_t hits, misses;
    web_cache_counts(rq->w, &hits, &misses);
    const web_limits *l = &rq->w->limits;
    snprintf(buf, size,
             "{\"connections\":%" PRId64 ",\"in_header\":%" PRId64 ",\"accepted\":%" PRId64 ",\"refused\":%" PRId64 ",\"evicted\":%" PRId64
             ",\"timed_out\":%" PRId64 ",\"max_connections\":%d,\"max_per_address\":%d,\"header_timeout_ms\":%"
             PRId64 ",\"reply_timeout_ms\":%" PRId64 ",\"drawings_cached\":%" PRId64 ",\"drawings_drawn\":%" PRId64 "}",
             c.open, c.in_header, c.accepted, c.refused, c.evicted, c.timed_out, l->max_connections, l->max_per_address,
             l->header_timeout_ms, l->reply_timeout_ms, hits, misses);
}

void web_api_status(web_request *rq, web_reply *out)
{
    struct stat st;
    char path_wal[4096], buf[24], server[512];
    int64_t bytes = stat(rq->db, &st) == 0 ? (int64_t)st.st_size : 0;
    snprintf(path_wal, sizeof path_wal, "%s-wal", rq->db);
    if (stat(path_wal, &st) == 0)
        bytes += (int64_t)st.st_size;
    server_json(rq, server, sizeof server);
    const char *p[] = {rq->db, web_itoa(buf, bytes), server};
    web_query_reply(rq, out, TIDE_STORE_Q_STATUS_JSON, p, 3, "no status");
}

void web_api_sessions(web_request *rq, web_reply *out)
{
    web_query_reply(rq, out, TIDE_STORE_Q_SESSIONS_JSON, NULL, 0, "no sessions");
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
    char b[4][24];
    const char *p[] = {web_itoa(b[0], session), status, web_itoa(b[1], traced), web_itoa(b[2], since),
                       web_itoa(b[3], limit)};
    web_query_reply(rq, out, TIDE_STORE_Q_RUNS_JSON, p, 5, "no runs");
}

void web_api_run(web_request *rq, web_reply *out)
{
    int64_t id;
    if (!web_arg_run(rq, out, "id", true, &id))
        return;
    char b[24];
    const char *p[] = {web_itoa(b, id)};
    web_query_reply(rq, out, TIDE_STORE_Q_RUN_JSON, p, 1, "no such run");
}
