/* schema.c — the run log's schema and its migrations. PRAGMA user_version holds the schema version
 * of a file; migrations[i] takes a file from version i to i + 1, all in one IMMEDIATE transaction so
 * that two processes opening a new file at once do not both migrate it. docs/run-log.md documents
 * every table and column: change both together, and only ever by appending a migration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Version 0 -> 1: the first schema. */
static const char migrate_0_to_1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
    "CREATE TABLE sessions(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),\n"
    "  label TEXT, threads INTEGER, devices TEXT);\n"
    "CREATE TABLE graphs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  session_id INTEGER REFERENCES sessions(id),\n"
    "  version INTEGER NOT NULL,\n"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),\n"
    "  text TEXT NOT NULL);\n"
    "CREATE TABLE nodes(\n"
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id),\n"
    "  name TEXT NOT NULL, op TEXT NOT NULL, inputs TEXT, control_inputs TEXT, attrs TEXT,\n"
    "  requested_device TEXT, assigned_device TEXT,\n"
    "  PRIMARY KEY (graph_id, name));\n"
    "CREATE TABLE runs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  session_id INTEGER REFERENCES sessions(id),\n"
    "  step INTEGER NOT NULL, run_id INTEGER NOT NULL,\n"
    "  started_at_ns INTEGER, wall_ns INTEGER, status INTEGER, error TEXT,\n"
    "  feeds TEXT, fetches TEXT, targets TEXT, traced INTEGER NOT NULL DEFAULT 0);\n"
    "CREATE INDEX runs_by_session_step ON runs(session_id, step);\n"
    "CREATE TABLE node_timings(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  node TEXT NOT NULL, op TEXT, device TEXT, thread INTEGER,\n"
    "  scheduled_ns INTEGER, start_ns INTEGER, end_ns INTEGER, output_bytes INTEGER);\n"
    "CREATE INDEX node_timings_by_run ON node_timings(run_id);\n"
    "CREATE TABLE tensors(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL, node TEXT NOT NULL, output INTEGER NOT NULL,\n"
    "  dtype TEXT NOT NULL, shape TEXT NOT NULL,\n"
    "  min REAL, max REAL, mean REAL, std REAL,\n"
    "  nan_count INTEGER NOT NULL, inf_count INTEGER NOT NULL,\n"
    "  histogram TEXT, value BLOB);\n"
    "CREATE INDEX tensors_by_node_step ON tensors(node, output, step);\n"
    "CREATE INDEX tensors_by_run ON tensors(run_id);\n"
    "INSERT INTO meta(key, value) VALUES ('schema', 'tide run log'),\n"
    "  ('created_at', strftime('%Y-%m-%d %H:%M:%f', 'now'));\n";

/* Version 1 -> 2: fetched tensors are logged beside watched ones (tensors.kind), and scalar
 * summaries (the ScalarSummary op) get their own table. */
static const char migrate_1_to_2[] =
    "ALTER TABLE tensors ADD COLUMN kind TEXT NOT NULL DEFAULT 'watched';\n"
    "CREATE TABLE summaries(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL, tag TEXT NOT NULL, value REAL);\n"
    "CREATE INDEX summaries_by_tag_step ON summaries(tag, step);\n"
    "CREATE INDEX summaries_by_run ON summaries(run_id);\n";

/* Version 2 -> 3: each timed node execution records the shapes of the outputs it produced. */
static const char migrate_2_to_3[] = "ALTER TABLE node_timings ADD COLUMN shapes TEXT;\n";

/* Version 3 -> 4: graph versions as differences. A node row (graph_nodes) belongs to a lineage (the
 * graph versions of one session, named by the graphs.id of its first) and holds one node as it is from
 * version added_in until removed_in (exclusive; NULL while current). graphs.lineage is that first
 * version's id (NULL: the version is the first of its lineage). The view `nodes` gives every version
 * whole, with the columns the table had (its rowid: the node's index in the graph), and inserting into
 * it still works (a version written whole, as before); `graph_texts` gives each version's text (the
 * rows of earlier files keep theirs in graphs.text; versions logged from now on have '' there). The
 * rows of earlier files are moved over, each version its own lineage. */
static const char migrate_3_to_4[] =
    "CREATE TABLE graph_nodes(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  lineage INTEGER NOT NULL REFERENCES graphs(id),\n"
    "  added_in INTEGER NOT NULL REFERENCES graphs(id),\n"
    "  removed_in INTEGER REFERENCES graphs(id),\n"
    "  position INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL, op TEXT NOT NULL, inputs TEXT, control_inputs TEXT, attrs TEXT,\n"
    "  requested_device TEXT, assigned_device TEXT, line TEXT);\n"
    "INSERT INTO graph_nodes(lineage, added_in, position, name, op, inputs, control_inputs, attrs,\n"
    "  requested_device, assigned_device)\n"
    "  SELECT graph_id, graph_id, rowid, name, op, inputs, control_inputs, attrs, requested_device,\n"
    "  assigned_device FROM nodes ORDER BY rowid;\n"
    "DROP TABLE nodes;\n"
    "CREATE INDEX graph_nodes_by_lineage ON graph_nodes(lineage, added_in);\n"
    "CREATE INDEX graph_nodes_by_name ON graph_nodes(lineage, name);\n"
    "CREATE INDEX graph_nodes_current ON graph_nodes(lineage, position) WHERE removed_in IS NULL;\n"
    "ALTER TABLE graphs ADD COLUMN lineage INTEGER REFERENCES graphs(id);\n"
    "CREATE VIEW nodes(graph_id, name, op, inputs, control_inputs, attrs, requested_device, assigned_device,\n"
    "  rowid) AS\n"
    "  SELECT g.id, n.name, n.op, n.inputs, n.control_inputs, n.attrs, n.requested_device, n.assigned_device,\n"
    "  n.position FROM graphs g JOIN graph_nodes n ON n.lineage = ifnull(g.lineage, g.id)\n"
    "  AND n.added_in <= g.id AND (n.removed_in IS NULL OR n.removed_in > g.id);\n"
    "CREATE TRIGGER nodes_insert INSTEAD OF INSERT ON nodes BEGIN\n"
    "  INSERT INTO graph_nodes(lineage, added_in, position, name, op, inputs, control_inputs, attrs,\n"
    "  requested_device, assigned_device) VALUES (NEW.graph_id, NEW.graph_id,\n"
    "  (SELECT count(*) FROM graph_nodes WHERE lineage = NEW.graph_id), NEW.name, NEW.op, NEW.inputs,\n"
    "  NEW.control_inputs, NEW.attrs, NEW.requested_device, NEW.assigned_device);\n"
    "END;\n"
    "CREATE VIEW graph_texts(graph_id, text) AS\n"
    "  SELECT g.id, CASE WHEN g.text <> '' THEN g.text ELSE\n"
    "  (SELECT '# tide graph v1: ' || count(*) || ' nodes' || char(10) || ifnull(group_concat(line, ''), '')\n"
    "  FROM (SELECT n.line FROM graph_nodes n WHERE n.lineage = ifnull(g.lineage, g.id) AND n.added_in <= g.id\n"
    "  AND (n.removed_in IS NULL OR n.removed_in > g.id) ORDER BY n.position)) END\n"
    "  FROM graphs g;\n";

/* Version 4 -> 5: the name index of graph_nodes holds added_in too, so that finding a node of one
 * version by its name (the node page) is one index search, not a walk over the lineage's rows (0.1 s
 * -> 5 ms for a 100k-node graph). */
static const char migrate_4_to_5[] =
    "DROP INDEX graph_nodes_by_name;\n"
    "CREATE INDEX graph_nodes_by_name ON graph_nodes(lineage, name, added_in);\n";

/* Version 5 -> 6: each run records the dtypes and shapes it fed (its signature, with its feeds and
 * targets: a training step apart from an evaluation of the same node). */
static const char migrate_5_to_6[] = "ALTER TABLE runs ADD COLUMN feed_shapes TEXT;\n";

/* Version 6 -> 7: a node inside a while loop executes once per iteration: its timings and tensors say
 * which (the loop's frame instance, e.g. "while" or "outer:3/inner", and the iteration from 0; NULL
 * outside loops). */
static const char migrate_6_to_7[] = "ALTER TABLE node_timings ADD COLUMN frame TEXT;\n"
                                     "ALTER TABLE node_timings ADD COLUMN iteration INTEGER;\n"
                                     "ALTER TABLE tensors ADD COLUMN frame TEXT;\n"
                                     "ALTER TABLE tensors ADD COLUMN iteration INTEGER;\n";

/* Version 7 -> 8: each run records its peak memory: the most bytes its kernels held at once in the
 * tensors they allocated (tide_run_info.peak_bytes; NULL for runs logged before, or whose end was lost). */
static const char migrate_7_to_8[] = "ALTER TABLE runs ADD COLUMN peak_bytes INTEGER;\n";

/* Version 8 -> 9: a fused group of element-wise nodes (docs/fusion.md) executes once, as its root: its
 * timing names the members ("h, r, out", the root last; NULL for a node that ran by itself). */
static const char migrate_8_to_9[] = "ALTER TABLE node_timings ADD COLUMN fused TEXT;\n";

/* Version 9 -> 10: device timelines and memory per device. A kernel queued on an accelerator's stream (or a
 * _Recv's copy into or out of one) ran in a lane of its own, "/sim:0 compute", "/gpu:0 copy h2d" (NULL:
 * the executor thread of `thread` ran it), at start_ns..end_ns on the device, launched by the host at
 * launch_start_ns..launch_end_ns; each run records its memory per device (a JSON array). */
static const char migrate_9_to_10[] = "ALTER TABLE node_timings ADD COLUMN lane TEXT;\n"
                                      "ALTER TABLE node_timings ADD COLUMN launch_start_ns INTEGER;\n"
                                      "ALTER TABLE node_timings ADD COLUMN launch_end_ns INTEGER;\n"
                                      "ALTER TABLE runs ADD COLUMN device_memory TEXT;\n";

static const char *const migrations[TIDE_STORE_SCHEMA_VERSION] = {migrate_0_to_1, migrate_1_to_2, migrate_2_to_3,
                                                                   migrate_3_to_4, migrate_4_to_5, migrate_5_to_6,
                                                                   migrate_6_to_7, migrate_7_to_8, migrate_8_to_9,
                                                                   migrate_9_to_10};

static tide_status sql_fail(sqlite3 *db, const char *path, const char *what, tide_error *err)
{
    return tide_error_set(err, TIDE_INTERNAL, "run log %s: %s: %s", path, what, sqlite3_errmsg(db));
}

static int read_user_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *version = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The names of the tables of a file whose user_version is 0 (malloc'd, ", "-separated; "" when it
 * has none: a new file), NULL when out of memory or unreadable. */
static char *table_names(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    st_buf b = {0};
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name", -1,
                           &st, NULL) != SQLITE_OK)
        return NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (b.len)
            st_buf_puts(&b, ", ");
        st_buf_puts(&b, (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    char *names = st_buf_take(&b);
    if (rc != SQLITE_DONE) {
        free(names);
        return NULL;
    }
    return names;
}

/* Whether a file with a schema version is a tide run log (its meta table says so). */
static bool is_tide_log(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool yes = sqlite3_prepare_v2(db, "SELECT 1 FROM meta WHERE key = 'schema' AND value = 'tide run log'", -1, &st,
                                  NULL) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

/* Refuses a database that is not a tide run log: one without a schema version that has tables, or one
 * with a version whose meta table does not name tide. Its tables are not touched. */
static tide_status check_is_run_log(sqlite3 *db, const char *path, int version, tide_error *err)
{
    if (version > 0) {
        if (is_tide_log(db))
            return TIDE_OK;
        return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                              "%s is an SQLite database but not a tide run log (it has schema version %d and no "
                              "tide meta table); give --log another file",
                              path, version);
    }
    char *names = table_names(db);
    if (!names)
        return sql_fail(db, path, "not a readable SQLite database", err);
    tide_status st = TIDE_OK;
    if (names[0])
        st = tide_error_set(err, TIDE_FAILED_PRECONDITION,
                            "%s is an SQLite database but not a tide run log (its tables: %.200s); tide leaves it "
                            "as it is: give --log another file",
                            path, names);
    free(names);
    return st;
}

tide_status st_schema_migrate(sqlite3 *db, const char *path, tide_error *err)
{
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, path, "cannot lock the file to check its schema", err);
    int version = 0;
    tide_status st = TIDE_OK;
    if (read_user_version(db, &version) != SQLITE_OK) {
        st = sql_fail(db, path, "not a readable SQLite database", err);
    } else if (version > TIDE_STORE_SCHEMA_VERSION) {
        st = tide_error_set(err, TIDE_FAILED_PRECONDITION,
                            "run log %s has schema version %d, newer than this build of tide knows "
                            "(%d): open it with a newer tide",
                            path, version, TIDE_STORE_SCHEMA_VERSION);
    } else if (version < 0) {
        st = tide_error_set(err, TIDE_FAILED_PRECONDITION,
                            "run log %s has an invalid schema version %d", path, version);
    } else {
        st = check_is_run_log(db, path, version, err);
    }
    for (; st == TIDE_OK && version < TIDE_STORE_SCHEMA_VERSION; version++) {
        char *msg = NULL;
        if (sqlite3_exec(db, migrations[version], NULL, NULL, &msg) != SQLITE_OK) {
            st = tide_error_set(err, TIDE_FAILED_PRECONDITION,
                                "run log %s: migrating the schema from version %d to %d failed: %s "
                                "(is it a tide run log?)",
                                path, version, version + 1, msg ? msg : "unknown error");
        }
        sqlite3_free(msg);
        if (st == TIDE_OK) {
            char pragma[64];
            snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", version + 1);
            if (sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK)
                st = sql_fail(db, path, "setting the schema version", err);
        }
    }
    if (st == TIDE_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        st = sql_fail(db, path, "committing the schema", err);
    if (st != TIDE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}
