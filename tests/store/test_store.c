/* test_store.c — the run log: schema creation, reopening and migration (and refusing newer files),
 * runs, graph versions, node timings and watched tensors logged through a real engine, retention
 * (pruning values), back-pressure, a reader during writes, two stores writing one file at once, and
 * the example queries of docs/run-log.md. Every check reads the file through a second SQLite
 * connection, as a user would. */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/graph_util.h"
#include "store/sql_read.h"
#include "store/temp_db.h"
#include "store.h"
#include "store_internal.h"

/* ---------------------------------------------------------------- helpers */

static sqlite3 *reader(void)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    return db;
}

static void assert_text_impl(sqlite3 *db, const char *sql, const char *want, int line)
{
    char *got = q_text(db, sql);
    bool same = got && want && strcmp(got, want) == 0;
    if (!same)
        fprintf(stderr, "\n%s:%d: %s\n  got  %s\n  want %s\n", __FILE__, line, sql, got ? got : "(null)",
                want ? want : "(null)");
    CU_ASSERT(same);
    free(got);
}
#define ASSERT_TEXT(db, sql, want) assert_text_impl(db, sql, want, __LINE__)

static tide_store *open_store(const tide_store_options *opts)
{
    tide_error *err = tide_error_new();
    tide_store *s = tide_store_open(db_path, opts, err);
    if (!s)
        fprintf(stderr, "open failed: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(s);
    tide_error_free(err);
    return s;
}

/* A store that traces only the runs the caller traces (no trace_every policy). */
static tide_store *open_store_caller_traces(void)
{
    tide_store_options o;
    tide_store_options_init(&o);
    o.trace_every = 0;
    return open_store(&o);
}

static void flush(tide_store *s)
{
    tide_error *err = tide_error_new();
    tide_status st = tide_store_flush(s, err);
    if (st != TIDE_OK)
        fprintf(stderr, "flush failed: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_error_free(err);
}

static tide_engine *new_engine(int threads)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = threads;
    tide_engine *e = tide_engine_new(&o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    return e;
}

/* x: float32[2, 2] placeholder; a: const [[1, 2], [3, 4]]; m = MatMul(a, a); y = Add(m, a);
 * z = Add(x, a). */
typedef struct fixture {
    tide_engine *engine;
    tide_graph *g;
    tide_session *session;
    tide_node *x, *a, *m, *y, *z;
} fixture;

static void fixture_new(fixture *f, int threads)
{
    f->engine = new_engine(threads);
    f->g = tide_graph_new();
    f->x = gu_placeholder(f->g, "x", TIDE_FLOAT32, 2, TH_DIMS(2, 2));
    f->a = gu_const(f->g, "a", th_f32(2, TH_DIMS(2, 2), (float[]){1, 2, 3, 4}));
    f->m = gu_op(f->g, "MatMul", "m", 2, (tide_node *[]){f->a, f->a});
    f->y = gu_op(f->g, "Add", "y", 2, (tide_node *[]){f->m, f->a});
    f->z = gu_op(f->g, "Add", "z", 2, (tide_node *[]){f->x, f->a});
    f->session = tide_session_new(f->engine, f->g, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->session);
}

static void fixture_free(fixture *f)
{
    tide_session_free(f->session);
    tide_graph_free(f->g);
    tide_engine_free(f->engine);
}

/* Fetches output 0 of n; traced when trace. Returns the status; err may be NULL. */
static tide_status run_fetch(fixture *f, tide_node *n, bool trace, tide_step_stats **stats, tide_error *err)
{
    tide_run_options o = {.trace = trace};
    tide_output out = {n, 0};
    tide_tensor *v = NULL;
    tide_status st = tide_session_run(f->session, &o, NULL, 0, &out, 1, &v, NULL, 0, stats, err);
    tide_tensor_release(v);
    return st;
}

/* ---------------------------------------------------------------- schema */

static void test_open_creates_schema(void)
{
    temp_db_new("tide-store");
    tide_store *s = open_store(NULL);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    ASSERT_TEXT(db, "PRAGMA journal_mode", "wal");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                              "('meta', 'sessions', 'graphs', 'graph_nodes', 'runs', 'node_timings', 'tensors', "
                              "'summaries')"),
                    8);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name IN "
                              "('nodes', 'graph_texts')"),
                    2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE "
                              "'sqlite_%'"),
                    9);
    ASSERT_TEXT(db, "SELECT value FROM meta WHERE key = 'schema'", "tide run log");
    CU_ASSERT_EQUAL(tide_store_dropped(s), 0);
    sqlite3_close(db);
    tide_store_close(s);
    temp_db_remove();
}

static void test_reopen_keeps_data(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT_EQUAL(tide_store_log_session(s, f.session, f.engine, "first", NULL), 1);
    tide_store_close(s);
    s = open_store(NULL);
    CU_ASSERT_EQUAL(tide_store_log_session(s, f.session, f.engine, NULL, NULL), 2);
    tide_store_close(s);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sessions"), 2);
    ASSERT_TEXT(db, "SELECT label FROM sessions WHERE id = 1", "first");
    ASSERT_TEXT(db, "SELECT label FROM sessions WHERE id = 2", "<null>");
    CU_ASSERT_EQUAL(q_int(db, "SELECT threads FROM sessions WHERE id = 1"), 1);
    ASSERT_TEXT(db, "SELECT devices FROM sessions WHERE id = 1",
                "[\"/job:localhost/replica:0/task:0/device:cpu:0\"]");
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    sqlite3_close(db);
    fixture_free(&f);
    temp_db_remove();
}

static void make_file(const char *sql)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db_path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_newer_version_refused(void)
{
    temp_db_new("tide-store");
    make_file("CREATE TABLE future(x); PRAGMA user_version = 99;");
    tide_error *err = tide_error_new();
    tide_store *s = tide_store_open(db_path, NULL, err);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "schema version 99, newer than this build"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), db_path));
    tide_store_close(s);
    tide_error_free(err);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), 99); /* left alone */
    sqlite3_close(db);
    temp_db_remove();
}

/* A file as tide wrote it at schema version 1 (a frozen copy of that schema: never edit it), with one
 * session, run and watched tensor. */
static const char schema_v1_file[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE sessions(id INTEGER PRIMARY KEY, created_at TEXT NOT NULL DEFAULT "
    "  (strftime('%Y-%m-%d %H:%M:%f', 'now')), label TEXT, threads INTEGER, devices TEXT);"
    "CREATE TABLE graphs(id INTEGER PRIMARY KEY, session_id INTEGER REFERENCES sessions(id), version INTEGER "
    "  NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), text TEXT NOT NULL);"
    "CREATE TABLE nodes(graph_id INTEGER NOT NULL REFERENCES graphs(id), name TEXT NOT NULL, op TEXT NOT NULL, "
    "  inputs TEXT, control_inputs TEXT, attrs TEXT, requested_device TEXT, assigned_device TEXT,"
    "  PRIMARY KEY (graph_id, name));"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, session_id INTEGER REFERENCES sessions(id), step INTEGER NOT NULL, "
    "  run_id INTEGER NOT NULL, started_at_ns INTEGER, wall_ns INTEGER, status INTEGER, error TEXT, feeds TEXT, "
    "  fetches TEXT, targets TEXT, traced INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX runs_by_session_step ON runs(session_id, step);"
    "CREATE TABLE node_timings(run_id INTEGER NOT NULL REFERENCES runs(id), node TEXT NOT NULL, op TEXT, "
    "  device TEXT, thread INTEGER, scheduled_ns INTEGER, start_ns INTEGER, end_ns INTEGER, output_bytes INTEGER);"
    "CREATE INDEX node_timings_by_run ON node_timings(run_id);"
    "CREATE TABLE tensors(run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, node TEXT NOT NULL, "
    "  output INTEGER NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL, min REAL, max REAL, mean REAL, std REAL, "
    "  nan_count INTEGER NOT NULL, inf_count INTEGER NOT NULL, histogram TEXT, value BLOB);"
    "CREATE INDEX tensors_by_node_step ON tensors(node, output, step);"
    "CREATE INDEX tensors_by_run ON tensors(run_id);"
    "INSERT INTO meta(key, value) VALUES ('schema', 'tide run log');"
    "INSERT INTO sessions(label, threads, devices) VALUES ('old', 2, '[]');"
    "INSERT INTO runs(session_id, step, run_id, status) VALUES (1, 0, 7, 0);"
    "INSERT INTO tensors(run_id, step, node, output, dtype, shape, min, max, mean, std, nan_count, inf_count) "
    "  VALUES (1, 0, 'loss', 0, 'float32', '[]', 0.5, 0.5, 0.5, 0, 0, 0);"
    "PRAGMA user_version = 1;";

/* Every earlier version migrates: version 1 gains tensors.kind and the summaries table (2), then
 * node_timings.shapes (3), graph_nodes (4), a wider name index (5), runs.feed_shapes (6, NULL in the
 * old rows), loop frames (7), runs.peak_bytes (8, NULL in the old rows), node_timings.fused (9), then the
 * device lanes and memory (10: node_timings.lane and launch times, runs.device_memory, NULL in the old rows),
 * and keeps its rows; the migrated file takes new records. */
static void test_version1_migrates(void)
{
    temp_db_new("tide-store");
    make_file(schema_v1_file);
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tide_store_log_session(s, f.session, f.engine, "new", NULL), 2);
    tide_store_close(s);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM pragma_table_info('node_timings') WHERE name = 'shapes'"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM pragma_table_info('node_timings') WHERE name IN "
                              "('frame', 'iteration')"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM pragma_table_info('tensors') WHERE name IN "
                              "('frame', 'iteration')"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE run_id = 7 AND feed_shapes IS NULL"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE run_id = 7 AND peak_bytes IS NULL"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM pragma_table_info('node_timings') WHERE name = 'fused'"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM pragma_table_info('node_timings') WHERE name IN "
                              "('lane', 'launch_start_ns', 'launch_end_ns')"), 3);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE run_id = 7 AND device_memory IS NULL"), 1);
    ASSERT_TEXT(db, "SELECT label FROM sessions WHERE id = 1", "old");
    ASSERT_TEXT(db, "SELECT kind FROM tensors WHERE node = 'loss'", "watched");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM summaries"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sessions"), 2);
    ASSERT_TEXT(db, "PRAGMA integrity_check", "ok");
    sqlite3_close(db);
    fixture_free(&f);
    temp_db_remove();
}

static void test_version0_migrates(void)
{
    temp_db_new("tide-store");
    make_file("CREATE TABLE t(x); DROP TABLE t;"); /* a valid file, user_version 0, no tables */
    tide_store *s = open_store(NULL);
    tide_store_close(s);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 0);
    sqlite3_close(db);
    temp_db_remove();

    temp_db_new("tide-store"); /* version 0 but someone else's tables: refused, untouched */
    make_file("CREATE TABLE runs(x);");
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_store_open(db_path, NULL, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "is an SQLite database but not a tide run log (its "
                                                           "tables: runs)"));
    db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sqlite_master"), 1);
    sqlite3_close(db);
    tide_error_free(err);
    temp_db_remove();

    CU_ASSERT_PTR_NULL(tide_store_open("/nonexistent-dir/x/runs.db", NULL, NULL));
    CU_ASSERT_PTR_NULL(tide_store_open("", NULL, NULL));
    tide_store_close(NULL);
}

/* ---------------------------------------------------------------- runs and graphs */

static void test_runs_logged(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store *s = open_store_caller_traces();
    int att = tide_store_attach(s, f.engine, NULL);
    CU_ASSERT(att > 0);
    int64_t sid = tide_store_log_session(s, f.session, f.engine, "runs", NULL);
    int64_t gid = tide_store_log_graph(s, f.session, NULL);
    CU_ASSERT(sid > 0 && gid > 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    tide_error *err = tide_error_new();
    tide_status failed = run_fetch(&f, f.z, false, NULL, err); /* x is not fed */
    CU_ASSERT_NOT_EQUAL(failed, TIDE_OK);
    flush(s);

    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 4);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(DISTINCT session_id) FROM runs"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT session_id FROM runs LIMIT 1"), sid);
    ASSERT_TEXT(db, "SELECT group_concat(step, ',') FROM (SELECT step FROM runs ORDER BY id)", "0,1,2,3");
    ASSERT_TEXT(db, "SELECT group_concat(status, ',') FROM (SELECT status FROM runs ORDER BY id LIMIT 3)",
                "0,0,0");
    CU_ASSERT_EQUAL(q_int(db, "SELECT status FROM runs WHERE step = 3"), failed);
    ASSERT_TEXT(db, "SELECT error FROM runs WHERE step = 3", tide_error_message(err));
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE error IS NULL"), 3);
    ASSERT_TEXT(db, "SELECT fetches FROM runs WHERE step = 0", "[\"y:0\"]");
    ASSERT_TEXT(db, "SELECT feeds || targets FROM runs WHERE step = 0", "[][]");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE wall_ns > 0 AND started_at_ns > 1600000000e9 "
                              "AND traced = 0"),
                    4);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(DISTINCT run_id) FROM runs"), 4);
    /* Each run's peak memory: m = a·a is the one tensor its kernels allocate (2×2 float32), y = m + a
     * is computed in place (m dies with it); the failed run allocated nothing. */
    ASSERT_TEXT(db, "SELECT group_concat(peak_bytes, ',') FROM (SELECT peak_bytes FROM runs ORDER BY id)",
                "16,16,16,0");

    /* the graph version logged by the caller, before any run */
    char *text = tide_graph_to_text(f.g, NULL);
    ASSERT_TEXT(db, "SELECT text FROM graph_texts WHERE graph_id = 1", text);
    free(text);
    CU_ASSERT_EQUAL(gid, 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT version FROM graphs WHERE id = 1"), (int64_t)tide_graph_version(f.g));
    CU_ASSERT_EQUAL(q_int(db, "SELECT session_id FROM graphs WHERE id = 1"), sid);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(DISTINCT session_id) FROM graphs"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM nodes WHERE graph_id = 1"), tide_graph_num_nodes(f.g));
    ASSERT_TEXT(db, "SELECT op || ' ' || inputs || ' ' || control_inputs FROM nodes WHERE name = 'm' AND graph_id = 1",
                "MatMul [\"a:0\",\"a:0\"] []");
    ASSERT_TEXT(db, "SELECT attrs FROM nodes WHERE name = 'm' AND graph_id = 1",
                "transpose_a=false, transpose_b=false, T=float32");
    ASSERT_TEXT(db, "SELECT attrs FROM nodes WHERE name = 'x' AND graph_id = 1", "dtype=float32, shape=[2, 2]");
    ASSERT_TEXT(db, "SELECT requested_device || '|' || ifnull(assigned_device, 'none') FROM nodes WHERE name = 'y' "
                    "AND graph_id = 1",
                "|none");
    ASSERT_TEXT(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = 1 ORDER BY rowid)",
                "x,a,m,y,z");

    /* each first run of a new plan logged a version with the devices it placed, before the run: the rows
     * of the nodes it did not change are shared */
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graphs"), 3);
    ASSERT_TEXT(db, "SELECT assigned_device FROM nodes WHERE name = 'y' AND graph_id = 2",
                tide_node_assigned_device(f.y));
    ASSERT_TEXT(db, "SELECT ifnull(assigned_device, 'none') FROM nodes WHERE name = 'z' AND graph_id = 2", "none");
    ASSERT_TEXT(db, "SELECT assigned_device FROM nodes WHERE name = 'z' AND graph_id = 3",
                tide_node_assigned_device(f.z));
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM nodes"), 15);
    CU_ASSERT(q_int(db, "SELECT count(*) FROM graph_nodes") < 15);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graphs g JOIN runs r ON r.step = 0 WHERE g.id = 2 AND "
                              "g.created_at <= strftime('%Y-%m-%d %H:%M:%f', r.started_at_ns / 1e9, 'unixepoch')"),
                    1);
    text = tide_graph_to_text(f.g, NULL);
    ASSERT_TEXT(db, "SELECT text FROM graph_texts WHERE graph_id = 3", text);
    free(text);

    /* nothing changed since: the caller's call returns the latest version */
    CU_ASSERT_EQUAL(tide_store_log_graph(s, f.session, NULL), 3);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graphs"), 3);

    /* detached: no more runs */
    tide_store_detach(s, f.engine, att);
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 4);
    CU_ASSERT_EQUAL(tide_store_dropped(s), 0);
    sqlite3_close(db);
    tide_error_free(err);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* The default policy traces every 100th step (0, 100, ...); trace_every = 3 traces steps 0, 3, 6 on
 * top of what the caller traces, and the caller then gets the step stats too. */
static void test_trace_policy(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store_options o;
    tide_store_options_init(&o);
    CU_ASSERT_EQUAL(o.trace_every, 100);
    o.trace_every = 3;
    tide_store *s = open_store(&o);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    for (int step = 0; step < 8; step++) {
        tide_step_stats *stats = NULL;
        CU_ASSERT_EQUAL(run_fetch(&f, f.y, step == 4, &stats, NULL), TIDE_OK);
        bool traced = step % 3 == 0 || step == 4;
        CU_ASSERT_EQUAL(stats != NULL, traced);
        tide_step_stats_free(stats);
    }
    flush(s);
    sqlite3 *db = reader();
    ASSERT_TEXT(db, "SELECT group_concat(step, ',') FROM (SELECT step FROM runs WHERE traced = 1 ORDER BY step)",
                "0,3,4,6");
    ASSERT_TEXT(db, "SELECT group_concat(step, ',') FROM (SELECT DISTINCT r.step FROM node_timings t JOIN runs r "
                    "ON r.id = t.run_id ORDER BY r.step)",
                "0,3,4,6");
    sqlite3_close(db);
    tide_store_close(s);
    /* A negative period is taken as 0 (only the caller's traces); the default is 100. */
    o.trace_every = -5;
    s = open_store(&o);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    tide_step_stats *stats = NULL;
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, &stats, NULL), TIDE_OK); /* session step 8 */
    CU_ASSERT_PTR_NULL(stats);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

static void test_traced_timings(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store *s = open_store_caller_traces();
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    tide_step_stats *stats = NULL;
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK); /* untraced: no timings */
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, true, &stats, NULL), TIDE_OK);
    flush(s);
    sqlite3 *db = reader();
    int n = tide_step_stats_count(stats);
    CU_ASSERT(n >= 3); /* a, m, y */
    CU_ASSERT_EQUAL(q_int(db, "SELECT traced FROM runs WHERE step = 1"), 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings"), n);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings t JOIN runs r ON r.id = t.run_id "
                              "WHERE r.step = 1"),
                    n);
    for (int i = 0; i < n; i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT op || '|' || device FROM node_timings WHERE node = '%s'",
                 tide_node_name(t->node));
        char want[256];
        snprintf(want, sizeof want, "%s|%s", tide_node_op(t->node), t->device);
        ASSERT_TEXT(db, sql, want);
    }
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings WHERE end_ns >= start_ns AND start_ns >= "
                              "scheduled_ns AND scheduled_ns > 0"),
                    n);
    CU_ASSERT_EQUAL(q_int(db, "SELECT output_bytes FROM node_timings WHERE node = 'm'"), 16);
    ASSERT_TEXT(db, "SELECT shapes FROM node_timings WHERE node = 'm'", "[2, 2]"); /* what the run produced */
    /* docs/run-log.md: the slowest ops over the last 100 steps */
    const char *slowest = "SELECT t.op, count(*) AS n, sum(t.end_ns - t.start_ns) / 1e3 AS total_us "
                          "FROM node_timings t JOIN runs r ON r.id = t.run_id "
                          "WHERE r.id IN (SELECT id FROM runs ORDER BY id DESC LIMIT 100) "
                          "GROUP BY t.op ORDER BY total_us DESC LIMIT 10";
    char count_ops[512];
    snprintf(count_ops, sizeof count_ops, "SELECT count(*) FROM (%s)", slowest);
    CU_ASSERT_EQUAL(q_int(db, count_ops), 3); /* Const, MatMul, Add */
    sqlite3_close(db);
    tide_step_stats_free(stats);
    tide_store_close(s); /* closing detaches */
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, true, NULL, NULL), TIDE_OK);
    fixture_free(&f);
    temp_db_remove();
}

/* A loop of 5 iterations: i < 5 ? i + 1, its body's Add named "step" (made in the body, so it runs
 * once per iteration). */
static tide_output add_named(tide_graph *g, const char *name, tide_output a, tide_output b)
{
    tide_node_builder *nb = tide_node_builder_new(g, "Add", name);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return (tide_output){gu_finish(nb), 0};
}

static tide_status five_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user, (void)n, (void)err;
    tide_node_builder *b = tide_node_builder_new(g, "Less", NULL);
    tide_node_builder_add_input(b, v[0]);
    tide_node_builder_add_input(b, (tide_output){gu_scalar_f32(g, NULL, 5), 0});
    *pred = (tide_output){gu_finish(b), 0};
    return TIDE_OK;
}

static tide_status five_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user, (void)n, (void)err;
    next[0] = add_named(g, "step", v[0], (tide_output){gu_scalar_f32(g, NULL, 1), 0});
    return TIDE_OK;
}

/* Timings and tensors of a node inside a while loop carry the loop's frame and the iteration (schema
 * 7); those of nodes outside loops have NULL there. */
static void test_loop_iterations(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_output zero = {gu_scalar_f32(f.g, "zero", 0), 0}, result;
    tide_while_options wo;
    tide_while_options_init(&wo);
    wo.name = "count";
    CU_ASSERT_EQUAL_FATAL(tide_while_loop(f.g, five_cond, five_body, NULL, &zero, 1, &wo, &result, NULL), TIDE_OK);
    tide_store *s = open_store_caller_traces();
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_watch(s, "count/step", NULL), TIDE_OK);
    tide_output out = result;
    tide_tensor *v = NULL;
    tide_run_options o = {.trace = true};
    CU_ASSERT_EQUAL(tide_session_run(f.session, &o, NULL, 0, &out, 1, &v, NULL, 0, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_tensor_get_f64(v, 0), 5);
    tide_tensor_release(v);
    flush(s);
    sqlite3 *db = reader();
    ASSERT_TEXT(db, "SELECT group_concat(iteration, ',') FROM (SELECT iteration FROM node_timings "
                    "WHERE node = 'count/step' ORDER BY iteration)", "0,1,2,3,4");
    ASSERT_TEXT(db, "SELECT DISTINCT frame FROM node_timings WHERE node = 'count/step'", "count");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings WHERE node = 'zero' AND frame IS NULL "
                              "AND iteration IS NULL"), 1);
    ASSERT_TEXT(db, "SELECT group_concat(iteration || '=' || max, ',') FROM (SELECT iteration, max FROM tensors "
                    "WHERE node = 'count/step' ORDER BY iteration)", "0=1.0,1=2.0,2=3.0,3=4.0,4=5.0");
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* ---------------------------------------------------------------- tensors */

static void test_watched_tensors(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_tensor *c = th_f32(0, NULL, (float[]){2.5f});
    tide_node *scalar = gu_const(f.g, "scalar", c);
    tide_store_options opts;
    tide_store_options_init(&opts);
    opts.value_cap_bytes = 8; /* the scalar's value is kept, z's (16 bytes) is not */
    tide_store *s = open_store(&opts);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    float xv[4] = {0.5f, NAN, INFINITY, -5};
    tide_tensor *x = th_f32(2, TH_DIMS(2, 2), xv);
    tide_feed feed = {{f.x, 0}, x};
    tide_output outs[2] = {{f.z, 0}, {scalar, 0}};
    tide_tensor *vals[2] = {NULL, NULL};
    /* a first run caches the plan before anything is watched */
    CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, outs, 2, vals, NULL, 0, NULL, NULL), TIDE_OK);
    for (int i = 0; i < 2; i++)
        tide_tensor_release(vals[i]);
    CU_ASSERT_EQUAL(tide_store_watch(s, "z", NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_watch(s, "scalar", NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_watch(s, "z", NULL), TIDE_OK); /* twice: fine */
    CU_ASSERT_EQUAL(tide_store_watch(s, "", NULL), TIDE_INVALID_ARGUMENT);
    tide_tensor *z = NULL; /* z's value at step 1, to compare */
    for (int step = 1; step <= 2; step++) {
        CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, outs, 2, vals, NULL, 0, NULL, NULL),
                        TIDE_OK);
        if (step == 1)
            z = tide_tensor_retain(vals[0]);
        tide_tensor_release(vals[0]);
        tide_tensor_release(vals[1]);
    }
    flush(s);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND node = 'z'"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND step = 0"), 0);
    ASSERT_TEXT(db, "SELECT dtype || ' ' || shape || ' ' || output FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1",
                "float32 [2, 2] 0");
    /* z = x + a = [1.5, nan, inf, -1]: finite values 1.5 and -1 */
    double finite[2] = {0.5 + 1, -5 + 4}, mean = (finite[0] + finite[1]) / 2;
    double sd = sqrt(((finite[0] - mean) * (finite[0] - mean) + (finite[1] - mean) * (finite[1] - mean)) / 2);
    CU_ASSERT_DOUBLE_EQUAL(q_double(db, "SELECT min FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1"), -1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(q_double(db, "SELECT max FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1"), 1.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(q_double(db, "SELECT mean FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1"), mean, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(q_double(db, "SELECT std FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1"), sd, 1e-12);
    ASSERT_TEXT(db, "SELECT nan_count || ' ' || inf_count FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1", "1 1");
    ASSERT_TEXT(db, "SELECT histogram FROM tensors WHERE kind = 'watched' AND node = 'z' AND step = 1",
                "[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND node = 'z' AND value IS NULL"), 2);
    /* every fetched value is logged too (three runs, two fetches), values under the cap (8 bytes) */
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'fetched'"), 6);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'fetched' AND node = 'scalar' AND "
                              "length(value) = 4 AND step IN (0, 1, 2)"),
                    3);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'fetched' AND node = 'z' AND value IS NULL "
                              "AND nan_count = 1 AND inf_count = 1"),
                    3);
    /* the scalar: value kept (4 bytes <= 8), bytes exact */
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, "SELECT value, histogram, std FROM tensors WHERE kind = 'watched' AND node = 'scalar'", -1,
                                       &st, NULL),
                    SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_bytes(st, 0), 4);
    float got = 0;
    if (sqlite3_column_bytes(st, 0) == 4)
        memcpy(&got, sqlite3_column_blob(st, 0), 4);
    CU_ASSERT_EQUAL(got, 2.5f);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(st, 1),
                           "[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]");
    CU_ASSERT_EQUAL(sqlite3_column_double(st, 2), 0);
    sqlite3_finalize(st);
    /* docs/run-log.md: a tensor's mean across steps; when it first contained NaN */
    ASSERT_TEXT(db, "SELECT group_concat(step || ':' || mean, ' ') FROM (SELECT t.step, t.mean FROM tensors t "
                    "JOIN runs r ON r.id = t.run_id WHERE t.kind = 'watched' AND t.node = 'z' AND t.output = 0 ORDER BY t.step)",
                "1:0.25 2:0.25");
    ASSERT_TEXT(db, "SELECT step FROM (SELECT r.step, datetime(r.started_at_ns / 1e9, 'unixepoch') AS at "
                    "FROM tensors t JOIN runs r ON r.id = t.run_id "
                    "WHERE t.kind = 'watched' AND t.node = 'z' AND t.nan_count > 0 ORDER BY r.id LIMIT 1)",
                "1");
    tide_store_close(s);
    sqlite3_close(db);
    temp_db_remove();

    /* the default cap keeps z's value, byte for byte; unwatch stops logging */
    temp_db_new("tide-store");
    s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_watch(s, "z", NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, outs, 1, vals, NULL, 0, NULL, NULL), TIDE_OK);
    tide_tensor_release(vals[0]);
    tide_store_unwatch(s, "z");
    tide_store_unwatch(s, "never-watched");
    CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, outs, 1, vals, NULL, 0, NULL, NULL), TIDE_OK);
    tide_tensor_release(vals[0]);
    flush(s);
    db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched'"), 1);
    CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, "SELECT value FROM tensors WHERE kind = 'watched'", -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL((size_t)sqlite3_column_bytes(st, 0), tide_tensor_byte_size(z));
    if ((size_t)sqlite3_column_bytes(st, 0) == tide_tensor_byte_size(z))
        CU_ASSERT_EQUAL(memcmp(sqlite3_column_blob(st, 0), tide_tensor_data(z), tide_tensor_byte_size(z)), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    tide_store_close(s);
    tide_tensor_release(z);
    tide_tensor_release(x);
    fixture_free(&f);
    temp_db_remove();
}

/* A watched name may be a glob (fnmatch): "*" watches every node of the fixture's run; a name
 * watched by itself and by a glob stays watched when the glob is unwatched. */
static void test_watched_globs(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    tide_tensor *x = th_f32(2, TH_DIMS(2, 2), (float[]){1, 2, 3, 4});
    tide_feed feed = {{f.x, 0}, x};
    tide_output out = {f.y, 0};
    tide_tensor *v = NULL;
    CU_ASSERT_EQUAL(tide_store_watch(s, "[my]", NULL), TIDE_OK); /* m and y, not a */
    CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, &out, 1, &v, NULL, 0, NULL, NULL), TIDE_OK);
    tide_tensor_release(v);
    flush(s);
    sqlite3 *db = reader();
    ASSERT_TEXT(db, "SELECT group_concat(node, ' ') FROM (SELECT node FROM tensors WHERE kind = 'watched' "
                    "ORDER BY node)", "m y");
    sqlite3_close(db);
    CU_ASSERT_EQUAL(tide_store_watch(s, "a", NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_watch(s, "*", NULL), TIDE_OK);
    tide_store_unwatch(s, "*");
    tide_store_unwatch(s, "[my]");
    CU_ASSERT_EQUAL(tide_session_run(f.session, NULL, &feed, 1, &out, 1, &v, NULL, 0, NULL, NULL), TIDE_OK);
    tide_tensor_release(v);
    flush(s);
    db = reader();
    ASSERT_TEXT(db, "SELECT group_concat(node, ' ') FROM (SELECT node FROM tensors WHERE kind = 'watched' "
                    "AND step = 1 ORDER BY node)", "a");
    sqlite3_close(db);
    tide_store_close(s);
    tide_tensor_release(x);
    fixture_free(&f);
    temp_db_remove();
}

/* Integer tensors get statistics too (through tide_tensor_get_f64). */
static void test_integer_tensor_stats(void)
{
    temp_db_new("tide-store");
    tide_engine *e = new_engine(1);
    tide_graph *g = tide_graph_new();
    int32_t v[5] = {3, -1, 4, 1, 5};
    tide_node *k = gu_const(g, "k", th_i32(1, TH_DIMS(5), v));
    tide_session *sess = tide_session_new(e, g, NULL, NULL);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, e, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_watch(s, "k", NULL), TIDE_OK);
    tide_tensor *out = gu_fetch(sess, k);
    tide_tensor_release(out);
    flush(s);
    sqlite3 *db = reader();
    ASSERT_TEXT(db, "SELECT dtype || ' ' || shape || ' ' || min || ' ' || max || ' ' || mean FROM tensors WHERE kind = 'watched'",
                "int32 [5] -1.0 5.0 2.4");
    double m = 2.4, ss = 0;
    for (int i = 0; i < 5; i++)
        ss += (v[i] - m) * (v[i] - m);
    CU_ASSERT_DOUBLE_EQUAL(q_double(db, "SELECT std FROM tensors WHERE kind = 'watched'"), sqrt(ss / 5), 1e-12);
    /* bins of width 0.2 from -1: 3 -> 20, 4 -> 25, 1 -> 10, 5 -> the last */
    ASSERT_TEXT(db, "SELECT histogram FROM tensors WHERE kind = 'watched'",
                "[1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,1,0,0,0,1]");
    sqlite3_close(db);
    tide_store_close(s);
    tide_session_free(sess);
    tide_graph_free(g);
    tide_engine_free(e);
    temp_db_remove();
}

/* ScalarSummary nodes land in the summaries table (tag, step, value) at every run that computes them,
 * watched or not; a summary that runs as a dependency of a target counts too. */
static void test_summaries(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_node *mean_axes = gu_const(f.g, "axes", th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}));
    tide_node *mean = gu_op(f.g, "Mean", "mean_y", 2, (tide_node *[]){f.y, mean_axes});
    tide_node_builder *b = tide_node_builder_new(f.g, "ScalarSummary", "loss_summary");
    tide_node_builder_add_input(b, (tide_output){mean, 0});
    tide_attrs_set_string(tide_node_builder_attrs(b), "tag", "loss");
    tide_node *summary = gu_finish(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(summary);
    tide_node *after = gu_op(f.g, "Identity", "after", 1, &summary);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_fetch(&f, summary, false, NULL, NULL), TIDE_OK);
    tide_run_options o = {0};
    CU_ASSERT_EQUAL(tide_session_run(f.session, &o, NULL, 0, NULL, 0, NULL, &after, 1, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK); /* no summary in this run */
    flush(s);
    sqlite3 *db = reader();
    /* y = a @ a + a = [[8, 12], [18, 26]]: mean 16 */
    ASSERT_TEXT(db, "SELECT group_concat(step || ':' || tag || '=' || value, ' ') FROM "
                    "(SELECT * FROM summaries ORDER BY step)",
                "0:loss=16.0 1:loss=16.0 2:loss=16.0 3:loss=16.0");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM summaries s JOIN runs r ON r.id = s.run_id WHERE r.status = 0"), 4);
    /* docs/run-log.md: a loss curve */
    ASSERT_TEXT(db, "SELECT group_concat(value, ',') FROM (SELECT step, value FROM summaries WHERE tag = 'loss' "
                    "ORDER BY step)",
                "16.0,16.0,16.0,16.0");
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* ---------------------------------------------------------------- retention */

static void test_prune_values(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_watch(s, "y", NULL), TIDE_OK);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    /* no flush: prune comes after everything queued before it */
    int64_t pruned = -1;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_store_prune_values(s, 2, &pruned, err), TIDE_OK);
    CU_ASSERT_EQUAL(pruned, 6); /* the watched and the fetched y of runs 0-2 */
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched'"), 5);
    ASSERT_TEXT(db, "SELECT group_concat(step || ':' || (value IS NOT NULL), ' ') FROM "
                    "(SELECT step, value FROM tensors WHERE kind = 'watched' ORDER BY step)",
                "0:0 1:0 2:0 3:1 4:1");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND length(value) = 16"), 2);
    /* statistics stay: y = a @ a + a = [[8, 12], [18, 26]] */
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND min = 8 AND max = 26 AND mean = 16 AND "
                              "histogram IS NOT NULL AND shape = '[2, 2]'"),
                    5);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 5);

    /* again: nothing left to clear; more than there are: nothing */
    CU_ASSERT_EQUAL(tide_store_prune_values(s, 2, &pruned, err), TIDE_OK);
    CU_ASSERT_EQUAL(pruned, 0);
    CU_ASSERT_EQUAL(tide_store_prune_values(s, 1000, NULL, err), TIDE_OK);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND value IS NOT NULL"), 2);

    /* a negative count is refused and changes nothing */
    CU_ASSERT_EQUAL(tide_store_prune_values(s, -1, &pruned, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "keep_last_runs"));
    CU_ASSERT_EQUAL(pruned, 0);
    CU_ASSERT_EQUAL(tide_store_prune_values(NULL, 1, NULL, NULL), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND value IS NOT NULL"), 2);

    /* new runs keep their values; 0 clears everything */
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_prune_values(s, 1, &pruned, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(pruned, 4);
    CU_ASSERT_EQUAL(q_int(db, "SELECT step FROM tensors WHERE kind = 'watched' AND value IS NOT NULL"), 5);
    CU_ASSERT_EQUAL(tide_store_prune_values(s, 0, &pruned, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(pruned, 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE kind = 'watched' AND value IS NULL AND mean = 16"), 6);
    /* VACUUM from another connection works on the file (the store is idle) */
    CU_ASSERT_EQUAL(sqlite3_exec(db, "VACUUM", NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(tide_store_dropped(s), 0);
    sqlite3_close(db);
    tide_error_free(err);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* ---------------------------------------------------------------- graph versions as differences */

/* The node names of version `graph` in graph order, comma-separated (malloc'd). */
static char *version_names(sqlite3 *db, int64_t graph)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = %lld "
                              "ORDER BY rowid)", (long long)graph);
    return q_text(db, sql);
}

static void assert_version_is(sqlite3 *db, int64_t graph, const tide_graph *g, int line)
{
    st_buf want = {0};
    for (int i = 0; i < tide_graph_num_nodes(g); i++) {
        if (i)
            st_buf_puts(&want, ",");
        st_buf_puts(&want, tide_node_name(tide_graph_node_at(g, i)));
    }
    char *w = st_buf_take(&want), *got = version_names(db, graph);
    if (strcmp(got, w) != 0)
        fprintf(stderr, "\n%s:%d: version %lld\n  got  %s\n  want %s\n", __FILE__, line, (long long)graph, got, w);
    CU_ASSERT_STRING_EQUAL(got, w);
    free(got);
    free(w);
    char sql[96], *text = tide_graph_to_text(g, NULL);
    snprintf(sql, sizeof sql, "SELECT text FROM graph_texts WHERE graph_id = %lld", (long long)graph);
    assert_text_impl(db, sql, text, line);
    free(text);
}
#define ASSERT_VERSION_IS(db, graph, g) assert_version_is(db, graph, g, __LINE__)

/* A large graph extended by one node 21 times (the repro, smaller): each version is whole in
 * the view, and the rows stored grow by one per version, not by the graph's size. */
static void test_graph_versions_share_rows(void)
{
    enum { NODES = 20000, EXTENSIONS = 21 };
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_node *last = f.a;
    for (int i = 0; i < NODES - 5; i++)
        last = gu_op(f.g, "Identity", NULL, 1, (tide_node *[]){last});
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_log_session(s, f.session, f.engine, "big", NULL) > 0);
    int64_t first = tide_store_log_graph(s, f.session, NULL);
    for (int i = 0; i < EXTENSIONS; i++) {
        last = gu_op(f.g, "Identity", NULL, 1, (tide_node *[]){last});
        CU_ASSERT(tide_store_log_graph(s, f.session, NULL) > first);
    }
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(tide_store_health_ok(&h));
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graphs"), EXTENSIONS + 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graph_nodes"), NODES + EXTENSIONS);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM nodes WHERE graph_id = (SELECT max(id) FROM graphs)"),
                    NODES + EXTENSIONS);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM nodes WHERE graph_id = 1"), NODES);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM nodes"),
                    (int64_t)NODES * (EXTENSIONS + 1) + EXTENSIONS * (EXTENSIONS + 1) / 2);
    ASSERT_VERSION_IS(db, EXTENSIONS + 1, f.g);
    /* a reader's lookup of one node by name stays an index search */
    ASSERT_TEXT(db, "SELECT op FROM nodes WHERE graph_id = 3 AND name = 'm'", "MatMul");
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT op FROM nodes WHERE graph_id = 3 AND name = 'm'",
                                       -1, &st, NULL),
                    SQLITE_OK);
    bool by_name = false;
    while (st && sqlite3_step(st) == SQLITE_ROW)
        by_name = by_name || strstr((const char *)sqlite3_column_text(st, 3), "graph_nodes_by_name (lineage=? AND "
                                                                             "name=? AND added_in<?)");
    sqlite3_finalize(st);
    CU_ASSERT(by_name);
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* Renamed nodes (and the inputs of their consumers), rolled-back nodes rebuilt at the same index, and a
 * new session at a freed session's address: every version reads back as the graph was. */
static void test_graph_versions_follow_changes(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_log_session(s, f.session, f.engine, "changes", NULL) > 0);
    tide_node *t = gu_op(f.g, "Neg", "t", 1, (tide_node *[]){f.y});
    tide_node *u = gu_op(f.g, "Neg", "u", 1, (tide_node *[]){t});
    int64_t v1 = tide_store_log_graph(s, f.session, NULL);
    CU_ASSERT_EQUAL(tide_graph_rename_node(f.g, t, "renamed_t", NULL), TIDE_OK);
    int64_t v2 = tide_store_log_graph(s, f.session, NULL);
    int n = tide_graph_num_nodes(f.g);
    CU_ASSERT_EQUAL(tide_graph_rollback(f.g, n - 1, NULL), TIDE_OK); /* u goes */
    (void)u;
    tide_node *w = gu_op(f.g, "Abs", "u", 1, (tide_node *[]){t}); /* another node where u was, same name */
    int64_t v3 = tide_store_log_graph(s, f.session, NULL);
    CU_ASSERT_EQUAL(tide_graph_rollback(f.g, n - 2, NULL), TIDE_OK); /* the graph shrinks */
    int64_t v4 = tide_store_log_graph(s, f.session, NULL);
    CU_ASSERT(v1 > 0 && v2 > v1 && v3 > v2 && v4 > v3);
    flush(s);
    sqlite3 *db = reader();
    ASSERT_TEXT(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = 1 ORDER BY rowid)",
                "x,a,m,y,z,t,u");
    ASSERT_TEXT(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = 2 ORDER BY rowid)",
                "x,a,m,y,z,renamed_t,u");
    ASSERT_TEXT(db, "SELECT inputs FROM nodes WHERE graph_id = 2 AND name = 'u'", "[\"renamed_t:0\"]");
    ASSERT_TEXT(db, "SELECT op || ' ' || inputs FROM nodes WHERE graph_id = 3 AND name = 'u'", "Abs [\"renamed_t:0\"]");
    ASSERT_TEXT(db, "SELECT op FROM nodes WHERE graph_id = 2 AND name = 'u'", "Neg");
    ASSERT_VERSION_IS(db, 4, f.g);
    (void)w;
    /* the rows: 7 whole, 2 for the rename (t and its consumer u), 1 for the rebuilt u, none to shrink */
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graph_nodes"), 10);

    /* a new session at the address of a freed one starts a new lineage */
    tide_session_free(f.session);
    f.session = tide_session_new(f.engine, f.g, NULL, NULL);
    CU_ASSERT(tide_store_log_session(s, f.session, f.engine, "again", NULL) > 0);
    int64_t v5 = tide_store_log_graph(s, f.session, NULL);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM graphs WHERE lineage IS NULL"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT session_id FROM graphs WHERE id = (SELECT max(id) FROM graphs)"), 2);
    ASSERT_VERSION_IS(db, v5, f.g);
    /* rows written whole by hand (as before schema 4) still read back through the view */
    CU_ASSERT_EQUAL(sqlite3_exec(db, "INSERT INTO graphs(session_id, version, text) VALUES (NULL, 1, '');"
                                     "INSERT INTO nodes(graph_id, name, op, inputs, control_inputs, attrs) VALUES "
                                     "((SELECT max(id) FROM graphs), 'p', 'Const', '[]', '[]', ''),"
                                     "((SELECT max(id) FROM graphs), 'q', 'Neg', '[\"p:0\"]', '[]', '');",
                                 NULL, NULL, NULL),
                    SQLITE_OK);
    ASSERT_TEXT(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = "
                    "(SELECT max(id) FROM graphs) ORDER BY rowid)",
                "p,q");
    ASSERT_TEXT(db, "PRAGMA integrity_check", "ok");
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* A version-3 file's graph versions (whole rows in the nodes table, the text in graphs.text) migrate:
 * the view gives them as they were, and new versions are logged as differences beside them. */
static void test_version3_graphs_migrate(void)
{
    temp_db_new("tide-store");
    make_file(schema_v1_file);
    tide_store_close(open_store(NULL)); /* to the latest version through 2, 3, 4... */
    temp_db_remove();
    temp_db_new("tide-store");
    make_file(schema_v1_file);
    make_file("INSERT INTO graphs(session_id, version, text) VALUES (1, 3, '# tide graph v1: 2 nodes\nb = Const()\n"
              "a = Neg(b)\n');"
              "INSERT INTO nodes(graph_id, name, op, inputs, control_inputs, attrs) VALUES "
              "(1, 'b', 'Const', '[]', '[]', ''), (1, 'a', 'Neg', '[\"b:0\"]', '[]', '');"
              "ALTER TABLE tensors ADD COLUMN kind TEXT NOT NULL DEFAULT 'watched';"
              "CREATE TABLE summaries(run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, tag TEXT "
              "NOT NULL, value REAL);"
              "CREATE INDEX summaries_by_tag_step ON summaries(tag, step);"
              "CREATE INDEX summaries_by_run ON summaries(run_id);"
              "ALTER TABLE node_timings ADD COLUMN shapes TEXT;"
              "PRAGMA user_version = 3;");
    fixture f;
    fixture_new(&f, 1);
    tide_store *s = open_store(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(tide_store_log_session(s, f.session, f.engine, "new", NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_log_graph(s, f.session, NULL), 2);
    tide_store_close(s);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    ASSERT_TEXT(db, "SELECT group_concat(name || ' ' || op || ' ' || inputs, ',') FROM (SELECT * FROM nodes WHERE "
                    "graph_id = 1 ORDER BY rowid)",
                "b Const [],a Neg [\"b:0\"]");
    ASSERT_TEXT(db, "SELECT text FROM graph_texts WHERE graph_id = 1", "# tide graph v1: 2 nodes\nb = Const()\na = Neg(b)\n");
    ASSERT_VERSION_IS(db, 2, f.g);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'nodes' AND type = 'view'"), 1);
    ASSERT_TEXT(db, "PRAGMA integrity_check", "ok");
    sqlite3_close(db);
    fixture_free(&f);
    temp_db_remove();
}

/* ---------------------------------------------------------------- what the log could not record */

/* A trigger that refuses runs: every run record is lost and counted, with the trigger's message; the
 * timings and tensors of those runs are counted too (their run is not in the file). */
static void test_trigger_refusing_runs_is_told(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store *s = open_store(NULL);
    make_file("CREATE TRIGGER no_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'runs are not welcome'); END;");
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_events(s), 0);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(run_fetch(&f, f.y, true, NULL, NULL), TIDE_OK);
    flush(s);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(h.events > 0);
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_RUNS], 10); /* the starts and the ends */
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_TENSORS], 5);
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_TIMINGS], 15);
    CU_ASSERT_EQUAL(h.queue_full, 0);
    CU_ASSERT(h.failed_writes > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.first_error, "inserting a run: runs are not welcome"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.first_error, db_path));
    char *line = tide_store_health_format(&h);
    CU_ASSERT_STRING_EQUAL(line, "30 records lost (runs 10, node timings 15, tensors 5), 1 failed write");
    free(line);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 0);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "DROP TRIGGER no_runs", NULL, NULL, NULL), SQLITE_OK);
    /* the log works again, and the counts stay */
    uint64_t events = tide_store_events(s);
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 1);
    CU_ASSERT_EQUAL(tide_store_events(s), events);
    CU_ASSERT_EQUAL(tide_store_dropped(s), 30);
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* ---------------------------------------------------------------- back-pressure and concurrency */

static void test_back_pressure(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store_options opts;
    tide_store_options_init(&opts);
    opts.queue_capacity = 4;
    opts.wait_ms = 0; /* no record waits for room */
    tide_store *s = open_store(&opts);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_watch(s, "y", NULL), TIDE_OK);
    tide__store_pause_writer(s, true);
    for (int i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(run_fetch(&f, f.y, true, NULL, NULL), TIDE_OK);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(h.dropped > 0);
    CU_ASSERT(h.dropped <= 50 * 8); /* per run: start, 3 timings, 2 tensors (watched, fetched), end */
    CU_ASSERT_EQUAL(h.dropped, h.queue_full);
    CU_ASSERT(h.dropped_by_kind[TIDE_STORE_TIMINGS] > 0 && h.dropped_by_kind[TIDE_STORE_RUNS] > 0);
    CU_ASSERT(h.events > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.first_error, "the writer fell behind and its queue (4 records) was full"));
    tide__store_pause_writer(s, false);
    flush(s);
    sqlite3 *db = reader();
    /* every run has its row and its status: the ends that found no room were noted and written late */
    int64_t runs = q_int(db, "SELECT count(*) FROM runs");
    CU_ASSERT_EQUAL(runs, 50);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 50);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
    /* the queue drains: new runs are logged again */
    CU_ASSERT_EQUAL(run_fetch(&f, f.y, false, NULL, NULL), TIDE_OK);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), runs + 1);
    CU_ASSERT_EQUAL(q_int(db, "SELECT step FROM runs ORDER BY id DESC LIMIT 1"), 50);
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

/* Resumes the paused writer of arg (a tide_store) after 200 ms. */
static void *resume_later(void *arg)
{
    usleep(200 * 1000);
    tide__store_pause_writer(arg, false);
    return NULL;
}

/* A traced run whose timings alone outnumber the queue (a 100k-node graph in the default queue of
 * 65,536 records; here 60 nodes in a queue of 8) loses none of them: timings, like run records, wait
 * for room while the writer makes progress. */
static void test_timings_wait_for_room(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_node *chain = f.a;
    for (int i = 0; i < 60; i++) {
        char name[32];
        snprintf(name, sizeof name, "chain_%d", i);
        chain = gu_op(f.g, "Add", name, 2, (tide_node *[]){chain, f.a});
    }
    tide_store_options opts;
    tide_store_options_init(&opts);
    opts.queue_capacity = 8;
    opts.trace_every = 0;
    tide_store *s = open_store(&opts);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    tide_session_set_fusion(f.session, false); /* 61 executions, not two fused groups of Adds */
    tide__store_pause_writer(s, true);
    pthread_t resumer;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&resumer, NULL, resume_later, s), 0);
    tide_step_stats *stats = NULL;
    CU_ASSERT_EQUAL(run_fetch(&f, chain, true, &stats, NULL), TIDE_OK);
    pthread_join(resumer, NULL);
    flush(s);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT_EQUAL(h.dropped, 0);
    CU_ASSERT_EQUAL(h.events, 0);
    int n = tide_step_stats_count(stats);
    CU_ASSERT(n >= 61);
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings"), n);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 1);
    sqlite3_close(db);
    tide_step_stats_free(stats);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

typedef struct runner {
    fixture *f;
    tide_store *s;
    int runs;
} runner;

static void *run_many(void *arg)
{
    runner *r = arg;
    for (int i = 0; i < r->runs; i++) {
        if (run_fetch(r->f, r->f->y, i % 2 == 0, NULL, NULL) != TIDE_OK)
            return (void *)1;
        if (i % 20 == 19 && tide_store_flush(r->s, NULL) != TIDE_OK)
            return (void *)1;
    }
    return NULL;
}

static void test_reader_while_writing(void)
{
    temp_db_new("tide-store");
    fixture f;
    fixture_new(&f, 2);
    tide_store *s = open_store(NULL);
    CU_ASSERT(tide_store_attach(s, f.engine, NULL) > 0);
    runner r = {&f, s, 300};
    pthread_t t;
    pthread_create(&t, NULL, run_many, &r);
    sqlite3 *db = reader(); /* no busy timeout: WAL readers must never see "locked" */
    int reads = 0, errors = 0;
    int64_t last = 0;
    bool monotonic = true;
    void *res = NULL;
    for (;;) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM runs r JOIN node_timings t ON t.run_id = r.id", -1,
                                    &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t n = sqlite3_column_int64(st, 0);
            monotonic = monotonic && n >= last;
            last = n;
            reads++;
        } else {
            fprintf(stderr, "reader: %s\n", sqlite3_errmsg(db));
            errors++;
        }
        sqlite3_finalize(st);
        if (pthread_tryjoin_np(t, &res) == 0)
            break;
    }
    CU_ASSERT_PTR_NULL(res);
    CU_ASSERT_EQUAL(errors, 0);
    CU_ASSERT(reads > 0);
    CU_ASSERT(monotonic);
    flush(s);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 300);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 300);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(DISTINCT run_id) FROM node_timings"), 150);
    CU_ASSERT_EQUAL(tide_store_dropped(s), 0);
    sqlite3_close(db);
    tide_store_close(s);
    fixture_free(&f);
    temp_db_remove();
}

typedef struct writer_arg {
    fixture f;
    int64_t dropped;
    bool ok;
} writer_arg;

static void *store_and_run(void *arg)
{
    writer_arg *w = arg;
    tide_error *err = tide_error_new();
    tide_store *s = tide_store_open(db_path, NULL, err); /* both open (and migrate) at once */
    if (!s)
        fprintf(stderr, "open failed: %s\n", tide_error_message(err));
    tide_error_free(err);
    if (!s)
        return NULL;
    w->ok = tide_store_attach(s, w->f.engine, NULL) > 0 &&
            tide_store_log_session(s, w->f.session, w->f.engine, "concurrent", NULL) > 0;
    runner r = {&w->f, s, 200};
    w->ok = w->ok && run_many(&r) == NULL && tide_store_flush(s, NULL) == TIDE_OK;
    w->dropped = tide_store_dropped(s);
    tide_store_close(s);
    return NULL;
}

static void test_two_stores_one_file(void)
{
    temp_db_new("tide-store");
    writer_arg w[2] = {0};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        fixture_new(&w[i].f, 1);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, store_and_run, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT(w[i].ok);
        CU_ASSERT_EQUAL(w[i].dropped, 0);
        fixture_free(&w[i].f);
    }
    sqlite3 *db = reader();
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM sessions"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs"), 400);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM (SELECT session_id, count(*) AS n, max(step) AS m FROM runs "
                              "GROUP BY session_id HAVING n = 200 AND m = 199)"),
                    2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings t LEFT JOIN runs r ON r.id = t.run_id "
                              "WHERE r.traced IS NOT 1"),
                    0);
    sqlite3_close(db);
    temp_db_remove();
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_open_creates_schema),
        TH_TEST(test_reopen_keeps_data),
        TH_TEST(test_newer_version_refused),
        TH_TEST(test_version0_migrates), TH_TEST(test_version1_migrates), TH_TEST(test_summaries),
        TH_TEST(test_runs_logged),
        TH_TEST(test_traced_timings), TH_TEST(test_loop_iterations),
        TH_TEST(test_trace_policy),
        TH_TEST(test_watched_tensors), TH_TEST(test_watched_globs),
        TH_TEST(test_integer_tensor_stats),
        TH_TEST(test_prune_values),
        TH_TEST(test_graph_versions_share_rows),
        TH_TEST(test_graph_versions_follow_changes),
        TH_TEST(test_version3_graphs_migrate),
        TH_TEST(test_trigger_refusing_runs_is_told),
        TH_TEST(test_back_pressure),
        TH_TEST(test_timings_wait_for_room),
        TH_TEST(test_reader_while_writing),
        TH_TEST(test_two_stores_one_file),
        TH_END,
    };
    return th_main("store", tests);
}
