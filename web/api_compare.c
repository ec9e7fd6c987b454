/* api_compare.c — /api/compare?a=&b=: two runs side by side. Their rows (as /api/run), the difference
 * between the graphs they ran (nodes added, removed, and changed field by field) and the per-node
 * kernel times of both (traced runs), sorted by the size of the difference.
 *
 * The graph a run ran is the latest version of its session logged at or before the run started (or
 * the session's first version when none was). */
#include <inttypes.h>
#include <stdio.h>

#include "web_internal.h"

#define GRAPH_OF(run)                                                                                     \
    "(SELECT g.id FROM graphs g JOIN runs r ON r.id = " run " WHERE g.session_id = r.session_id ORDER BY "    \
    "g.created_at <= strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch') DESC, "             \
    "CASE WHEN g.created_at <= strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch') "          \
    "THEN -g.id ELSE g.id END LIMIT 1)"

/* The fields compared, as (name, column) rows. */
#define FIELD_DIFF(field)                                                                                  \
    "SELECT x.name, '" field "' AS field, x." field " AS a, y." field " AS b FROM x JOIN y ON y.name = x.name " \
    "WHERE x." field " IS NOT y." field

void web_api_compare(web_request *rq, web_reply *out)
{
    int64_t a, b;
    if (!web_arg_run(rq, out, "a", true, &a) || !web_arg_run(rq, out, "b", true, &b))
        return;
    static const char sql[] =
        "WITH x AS (SELECT rowid AS rid, * FROM nodes WHERE graph_id = " GRAPH_OF("?1") "), "
        "y AS (SELECT rowid AS rid, * FROM nodes WHERE graph_id = " GRAPH_OF("?2") "), "
        "ch AS (" FIELD_DIFF("op") " UNION ALL " FIELD_DIFF("inputs") " UNION ALL " FIELD_DIFF("control_inputs")
        " UNION ALL " FIELD_DIFF("attrs") " UNION ALL " FIELD_DIFF("requested_device") "), "
        "tm AS (SELECT node, max(op) AS op, sum(a_us) AS a_us, sum(b_us) AS b_us FROM ("
        "SELECT node, op, (end_ns - start_ns) / 1e3 AS a_us, NULL AS b_us FROM node_timings WHERE run_id = ?1 "
        "UNION ALL SELECT node, op, NULL, (end_ns - start_ns) / 1e3 FROM node_timings WHERE run_id = ?2) "
        "GROUP BY node) "
        "SELECT json_object("
        "'a', (SELECT " WEB_SQL_RUN_JSON " FROM runs r WHERE r.id = ?1), "
        "'b', (SELECT " WEB_SQL_RUN_JSON " FROM runs r WHERE r.id = ?2), "
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
        "FROM (SELECT * FROM tm ORDER BY abs(ifnull(b_us, 0) - ifnull(a_us, 0)) DESC, node)))";
    char ba[24], bb[24];
    const char *p[] = {web_itoa(ba, a), web_itoa(bb, b)};
    web_sql_reply(rq, out, sql, p, 2, "no such runs");
}
