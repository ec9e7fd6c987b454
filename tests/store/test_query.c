/* test_query.c — reading the run log (store/query.c): user SQL through a read-only connection (rows as
 * text, NULLs and blobs, truncation, the table as text), the refusal of every kind of writing
 * statement, errors (bad SQL, two statements, a missing file, a file that is not a database), the named
 * queries of the REPL (runs, one run, its slowest nodes, the totals), logged tensors read back
 * bit-equal to what the runs produced (several dtypes, step selection, sessions, pruned and capped
 * values), queries while a writer writes, and the policy setters (trace period, value cap) and the
 * watched list. The logs are written by a real engine and store. */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/graph_util.h"
#include "store/logged_session.h"

/* ---------------------------------------------------------------- helpers */

/* x: float32[2, 2] placeholder; a: const [[1, 2], [3, 4]]; m = MatMul(a, a); y = Add(m, a);
 * z = Add(x, a); casts of z to float64, float16, int32, bool and complex64 (z_f64, ...). */
#define NUM_CASTS 5
static const tide_dtype cast_dtypes[NUM_CASTS] = {TIDE_FLOAT64, TIDE_FLOAT16, TIDE_INT32, TIDE_BOOL,
                                                  TIDE_COMPLEX64};
static const char *const cast_names[NUM_CASTS] = {"z_f64", "z_f16", "z_i32", "z_bool", "z_c64"};

typedef struct fixture {
    logged_session log;
    tide_node *x, *a, *m, *y, *z, *casts[NUM_CASTS];
} fixture;

static tide_node *cast(tide_graph *g, const char *name, tide_node *in, tide_dtype dt)
{
    tide_node_builder *b = tide_node_builder_new(g, "Cast", name);
    tide_node_builder_add_input(b, (tide_output){in, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", dt);
    return gu_finish(b);
}

/* A fresh log file with a store (tracing every trace_every-th run) attached to a fresh engine and a
 * logged session. */
static void fixture_new(fixture *f, int64_t trace_every)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    logged_session_begin(&f->log, "tide-query", &o);
    tide_graph *g = f->log.g;
    f->x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(2, 2));
    f->a = gu_const(g, "a", th_f32(2, TH_DIMS(2, 2), (float[]){1, 2, 3, 4}));
    f->m = gu_op(g, "MatMul", "m", 2, (tide_node *[]){f->a, f->a});
    f->y = gu_op(g, "Add", "y", 2, (tide_node *[]){f->m, f->a});
    f->z = gu_op(g, "Add", "z", 2, (tide_node *[]){f->x, f->a});
    for (int i = 0; i < NUM_CASTS; i++)
        f->casts[i] = cast(g, cast_names[i], f->z, cast_dtypes[i]);
    tide_store_options so;
    tide_store_options_init(&so);
    so.trace_every = trace_every;
    logged_session_open(&f->log, &so, "query");
}

static void flush(tide_store *s)
{
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
}

/* Fetches y (traced when trace); returns the status. */
static tide_status run_y(fixture *f, bool trace)
{
    tide_run_options o = {.trace = trace};
    tide_output out = {f->y, 0};
    tide_tensor *v = NULL;
    tide_status st = tide_session_run(f->log.session, &o, NULL, 0, &out, 1, &v, NULL, 0, NULL, NULL);
    tide_tensor_release(v);
    return st;
}

/* Feeds x = k * [1, -2, 0.5, 3] and fetches z and its casts into vals[0..NUM_CASTS] (new references). */
static void run_z(fixture *f, float k, tide_tensor **vals)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 2), (float[]){k, -2 * k, 0.5f * k, 3 * k});
    tide_feed feed = {{f->x, 0}, x};
    tide_output outs[1 + NUM_CASTS] = {{f->z, 0}};
    for (int i = 0; i < NUM_CASTS; i++)
        outs[i + 1] = (tide_output){f->casts[i], 0};
    CU_ASSERT_EQUAL(tide_session_run(f->log.session, NULL, &feed, 1, outs, 1 + NUM_CASTS, vals, NULL, 0, NULL, NULL),
                    TIDE_OK);
    tide_tensor_release(x);
}

static void release_all(tide_tensor **v, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(v[i]);
}

/* tide_store_query that must succeed. */
static tide_store_table *query(const char *sql, int max_rows)
{
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query(db_path, sql, max_rows, err);
    if (!t)
        fprintf(stderr, "\nquery failed: %s: %s\n", sql, tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(t);
    tide_error_free(err);
    return t;
}

/* The one cell of a one-cell query, as an integer (-12345 on failure). */
static int64_t query_int(const char *sql)
{
    tide_store_table *t = query(sql, 1);
    const char *cell = tide_store_table_cell(t, 0, 0);
    int64_t v = cell ? strtoll(cell, NULL, 10) : -12345;
    tide_store_table_free(t);
    return v;
}

/* The cell of column `name` in row `row`, or NULL. */
static const char *cell_of(const tide_store_table *t, int row, const char *name)
{
    for (int c = 0; c < tide_store_table_num_columns(t); c++)
        if (strcmp(tide_store_table_column(t, c), name) == 0)
            return tide_store_table_cell(t, row, c);
    return NULL;
}

static bool contains(const char *haystack, const char *needle)
{
    bool ok = haystack && strstr(haystack, needle);
    if (!ok)
        fprintf(stderr, "\n  '%s' does not contain '%s'\n", haystack ? haystack : "(null)", needle);
    return ok;
}

/* Asserts that sql fails with code and a message containing needle. */
static void assert_query_fails_impl(const char *path, const char *sql, tide_status code, const char *needle,
                                    int line)
{
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query(path, sql, 10, err);
    if (t || tide_error_code(err) != code || !strstr(tide_error_message(err), needle))
        fprintf(stderr, "\n%s:%d: %s\n  got %s: %s\n  want %s containing '%s'\n", __FILE__, line, sql,
                tide_status_name(tide_error_code(err)), tide_error_message(err), tide_status_name(code), needle);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_EQUAL(tide_error_code(err), code);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), needle));
    tide_store_table_free(t);
    tide_error_free(err);
}
#define ASSERT_QUERY_FAILS(sql, code, needle) assert_query_fails_impl(db_path, sql, code, needle, __LINE__)

/* ---------------------------------------------------------------- user SQL */

static void test_query_rows(void)
{
    fixture f;
    fixture_new(&f, 0);
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "z", NULL), TIDE_OK);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(run_y(&f, i == 2), TIDE_OK);
    tide_tensor *vals[1 + NUM_CASTS];
    run_z(&f, 1, vals);
    release_all(vals, 1 + NUM_CASTS);
    flush(f.log.store);

    tide_store_table *t = query("SELECT id, step, error, status_name(status) AS st, 1.5 AS half, x'0102' AS b "
                                "FROM runs ORDER BY id;  -- the runs\n", 100);
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 6);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 6);
    CU_ASSERT_FALSE(tide_store_table_truncated(t));
    CU_ASSERT_STRING_EQUAL(tide_store_table_column(t, 3), "st");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 4, 1), "4");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 2), "NULL");
    CU_ASSERT(tide_store_table_is_null(t, 0, 2));
    CU_ASSERT_FALSE(tide_store_table_is_null(t, 0, 1));
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 3), "OK");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 4), "1.5");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 5), "<blob 2 bytes>");
    CU_ASSERT_PTR_NULL(tide_store_table_cell(t, 6, 0));
    CU_ASSERT_PTR_NULL(tide_store_table_cell(t, 0, 6));
    CU_ASSERT_PTR_NULL(tide_store_table_cell(t, -1, 0));
    CU_ASSERT_PTR_NULL(tide_store_table_column(t, 6));
    tide_store_table_free(t);

    /* truncation: max_rows rows are kept, and the flag says more existed */
    t = query("SELECT step FROM runs ORDER BY step", 3);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 3);
    CU_ASSERT(tide_store_table_truncated(t));
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 2, 0), "2");
    tide_store_table_free(t);
    t = query("SELECT step FROM runs", 6); /* exactly as many: not truncated */
    CU_ASSERT_FALSE(tide_store_table_truncated(t));
    tide_store_table_free(t);
    t = query("SELECT step FROM runs", 0);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    CU_ASSERT(tide_store_table_truncated(t));
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 1);
    tide_store_table_free(t);
    t = query("SELECT step FROM runs WHERE step > 100", 10);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    CU_ASSERT_FALSE(tide_store_table_truncated(t));
    tide_store_table_free(t);

    /* the stored value is a blob of z's 16 bytes; a traced run has timings */
    CU_ASSERT_EQUAL(query_int("SELECT length(value) FROM tensors WHERE node = 'z'"), 16);
    CU_ASSERT(query_int("SELECT count(*) FROM node_timings t JOIN runs r ON r.id = t.run_id WHERE r.step = 2") >= 3);
    CU_ASSERT_EQUAL(query_int("PRAGMA query_only"), 1); /* the reader's own connection */
    t = query("PRAGMA table_info(runs)", 100);          /* read-only pragmas are fine */
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 15); /* runs has 15 columns in schema 10 */
    tide_store_table_free(t);
    logged_session_end(&f.log);
}

static void test_table_format(void)
{
    fixture f;
    fixture_new(&f, 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    flush(f.log.store);
    tide_store_table *t = query("SELECT step, 'x' || step AS name, NULL AS empty, "
                                "'a very long text that goes on and on past forty characters' AS long, "
                                "'line' || char(10) || 'two' AS ctl FROM runs ORDER BY step", 100);
    char *text = tide_store_table_format(t, 40, true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    const char *want = "step  name  empty  long                                      ctl\n"
                       "   0  x0    NULL   a very long text that goes on and on ...  line two\n"
                       "   1  x1    NULL   a very long text that goes on and on ...  line two\n"
                       "   2  x2    NULL   a very long text that goes on and on ...  line two\n"
                       "(3 rows)\n";
    if (text && strcmp(text, want) != 0)
        fprintf(stderr, "\ngot:\n%s\nwant:\n%s\n", text, want);
    CU_ASSERT_STRING_EQUAL(text, want);
    free(text);
    tide_store_table_free(t);

    t = query("SELECT 'µµµµµ' AS u UNION ALL SELECT 'ab'", 1); /* UTF-8 counted by characters */
    text = tide_store_table_format(t, 4, true);
    CU_ASSERT_STRING_EQUAL(text, "u\nµ...\n(first 1 of more rows)\n");
    free(text);
    tide_store_table_free(t);
    t = query("SELECT 1 AS one", 10);
    text = tide_store_table_format(t, 40, true);
    CU_ASSERT_STRING_EQUAL(text, "one\n  1\n(1 row)\n");
    free(text);
    tide_store_table_free(t);
    CU_ASSERT_PTR_NULL(tide_store_table_format(NULL, 40, true));
    logged_session_end(&f.log);
}

/* Every kind of writing statement is refused, and the file stays as it was. */
static void test_read_only(void)
{
    fixture f;
    fixture_new(&f, 0);
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    flush(f.log.store);
    static const char *const writes[] = {
        "INSERT INTO runs(step, run_id) VALUES (99, 99)",
        "UPDATE runs SET step = 7",
        "DELETE FROM runs",
        "REPLACE INTO meta VALUES ('schema', 'x')",
        "DROP TABLE runs",
        "CREATE TABLE evil(x)",
        "CREATE TEMP TABLE t(x)",
        "ALTER TABLE runs ADD COLUMN x",
        "PRAGMA user_version = 7",
        "PRAGMA journal_mode = DELETE",
        "VACUUM",
        "BEGIN IMMEDIATE",
        "WITH n AS (SELECT 1) INSERT INTO runs(step, run_id) SELECT 5, 5 FROM n",
        "  /* a comment */ DELETE FROM tensors",
    };
    for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++)
        ASSERT_QUERY_FAILS(writes[i], TIDE_INVALID_ARGUMENT, "sql: ");
    char sql[256];
    snprintf(sql, sizeof sql, "ATTACH '%s/other.db' AS other", dir);
    ASSERT_QUERY_FAILS(sql, TIDE_INVALID_ARGUMENT, "ATTACH is not allowed");
    CU_ASSERT_EQUAL(access(sql + 8, F_OK), -1); /* nothing was created */
    snprintf(sql, sizeof sql, "VACUUM INTO '%s/copy.db'", dir);
    ASSERT_QUERY_FAILS(sql, TIDE_INVALID_ARGUMENT, "only statements that read");
    snprintf(sql, sizeof sql, "%s/copy.db", dir);
    CU_ASSERT_EQUAL(access(sql, F_OK), -1);
    ASSERT_QUERY_FAILS("DETACH main", TIDE_INVALID_ARGUMENT, "sql: ");
    /* the file is as it was */
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs"), 2);
    CU_ASSERT_EQUAL(query_int("SELECT sum(step) FROM runs"), 1);
    CU_ASSERT_EQUAL(query_int("PRAGMA user_version"), TIDE_STORE_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM sqlite_master WHERE name = 'evil'"), 0);
    /* and the store writes on */
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    flush(f.log.store);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs"), 3);
    logged_session_end(&f.log);
}

static void test_query_errors(void)
{
    fixture f;
    fixture_new(&f, 0);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    flush(f.log.store);
    ASSERT_QUERY_FAILS("SELEKT 1", TIDE_INVALID_ARGUMENT, "sql: near \"SELEKT\": syntax error");
    ASSERT_QUERY_FAILS("SELECT nope FROM runs", TIDE_INVALID_ARGUMENT, "sql: no such column: nope");
    ASSERT_QUERY_FAILS("SELECT * FROM nowhere", TIDE_INVALID_ARGUMENT, "sql: no such table: nowhere");
    ASSERT_QUERY_FAILS("SELECT 1; SELECT 2", TIDE_INVALID_ARGUMENT, "one statement at a time");
    ASSERT_QUERY_FAILS("SELECT 1; DROP TABLE runs", TIDE_INVALID_ARGUMENT, "one statement at a time");
    ASSERT_QUERY_FAILS("SELECT 1; garbage", TIDE_INVALID_ARGUMENT, "one statement at a time");
    ASSERT_QUERY_FAILS("", TIDE_INVALID_ARGUMENT, "no statement");
    ASSERT_QUERY_FAILS("  -- only a comment", TIDE_INVALID_ARGUMENT, "no statement");
    tide_store_table *t = query("SELECT 1; ; -- trailing\n /* and this */", 1); /* not a second statement */
    tide_store_table_free(t);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs"), 1);

    char path[200];
    snprintf(path, sizeof path, "%s/missing.db", dir);
    assert_query_fails_impl(path, "SELECT 1", TIDE_NOT_FOUND, "missing.db: No such file or directory", __LINE__);
    CU_ASSERT_EQUAL(access(path, F_OK), -1); /* not created */
    assert_query_fails_impl(dir, "SELECT 1", TIDE_FAILED_PRECONDITION, "is not a file", __LINE__);
    assert_query_fails_impl("", "SELECT 1", TIDE_INVALID_ARGUMENT, "no file name", __LINE__);
    snprintf(path, sizeof path, "%s/text.db", dir);
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("this is not an SQLite database, only some text that is long enough to have a header\n", fp);
    fclose(fp);
    assert_query_fails_impl(path, "SELECT 1 FROM sqlite_master", TIDE_FAILED_PRECONDITION,
                            "is not an SQLite database", __LINE__);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_store_query_runs(path, 5, err));
    CU_ASSERT(contains(tide_error_message(err), "is not an SQLite database"));
    unlink(path);
    /* an SQLite file that is not a run log: fine for SQL, refused by the named queries */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL(sqlite3_open(path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (42)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    tide_store_table *other = tide_store_query(path, "SELECT x FROM t", 5, err);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(other, 0, 0), "42");
    tide_store_table_free(other);
    CU_ASSERT_PTR_NULL(tide_store_query_run(path, 1, err));
    CU_ASSERT(contains(tide_error_message(err), "is not a tide run log"));
    unlink(path);
    CU_ASSERT_PTR_NULL(tide_store_query(db_path, NULL, 5, err));
    CU_ASSERT_PTR_NULL(tide_store_query(db_path, "SELECT 1", -1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(tide_store_query_runs(db_path, -1, err));
    CU_ASSERT_PTR_NULL(tide_store_query_tensor(db_path, "", 0, 0, -1, err));
    /* a cancelled query stops (the flag a SIGINT handler would set) */
    volatile sig_atomic_t cancel = 1;
    const char *forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n";
    CU_ASSERT_PTR_NULL(tide_store_query_cancellable(db_path, forever, 1, &cancel, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_CANCELLED);
    CU_ASSERT(contains(tide_error_message(err), "sql: the query was cancelled"));
    cancel = 0;
    t = tide_store_query_cancellable(db_path, "SELECT 7", 1, &cancel, err);
    CU_ASSERT(t && strcmp(tide_store_table_cell(t, 0, 0), "7") == 0);
    tide_store_table_free(t);
    tide_store_table_free(NULL);
    tide_store_tensor_free(NULL);
    tide_error_free(err);
    logged_session_end(&f.log);
}

/* ---------------------------------------------------------------- named queries */

/* Nine runs: steps 0-7 fetch y (step 6 traced), step 8 fails (x is not fed). */
static void nine_runs(fixture *f)
{
    fixture_new(f, 0);
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(run_y(f, i == 6), TIDE_OK);
    tide_output zo = {f->z, 0};
    tide_tensor *v = NULL;
    tide_error *err = tide_error_new();
    CU_ASSERT_NOT_EQUAL(tide_session_run(f->log.session, NULL, NULL, 0, &zo, 1, &v, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'x'"));
    tide_error_free(err);
    flush(f->log.store);
}

static void test_named_runs(void)
{
    fixture f;
    nine_runs(&f);
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query_runs(db_path, 4, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 4);
    CU_ASSERT(tide_store_table_truncated(t)); /* 9 runs */
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "step"), "5"); /* oldest first, the newest last */
    CU_ASSERT_STRING_EQUAL(cell_of(t, 3, "step"), "8");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 3, "status"), "INVALID_ARGUMENT");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "status"), "OK");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 1, "traced"), "1");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "traced"), "0");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "fetches"), "[\"y:0\"]");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "session"), "1");
    CU_ASSERT(strtod(cell_of(t, 0, "wall_ms"), NULL) > 0);
    CU_ASSERT_EQUAL(strlen(cell_of(t, 0, "started")), 23); /* YYYY-MM-DD HH:MM:SS.SSS */
    tide_store_table_free(t);
    t = tide_store_query_runs(db_path, 20, err);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 9);
    CU_ASSERT_FALSE(tide_store_table_truncated(t));
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "id"), "1");
    tide_store_table_free(t);

    /* one run; 0 is the latest; a missing one is NOT_FOUND */
    t = tide_store_query_run(db_path, 7, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "step"), "6");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "traced"), "1");
    int timed = atoi(cell_of(t, 0, "nodes_timed"));
    CU_ASSERT(timed >= 3); /* a, m, y */
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "error"), "NULL");
    tide_store_table_free(t);
    t = tide_store_query_run(db_path, 0, err);
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "id"), "9");
    CU_ASSERT(contains(cell_of(t, 0, "error"), "'x'"));
    tide_store_table_free(t);
    CU_ASSERT_PTR_NULL(tide_store_query_run(db_path, 99, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    CU_ASSERT(contains(tide_error_message(err), "has no run 99"));
    tide_error_free(err);
    logged_session_end(&f.log);
}

static void test_slowest_nodes_and_totals(void)
{
    fixture f;
    nine_runs(&f);
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query_run(db_path, 7, err);
    int timed = t ? atoi(cell_of(t, 0, "nodes_timed")) : -1;
    tide_store_table_free(t);

    /* the slowest nodes of the traced run: sorted, limited */
    t = tide_store_query_slowest_nodes(db_path, 7, 10, err);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), timed);
    CU_ASSERT_FALSE(tide_store_table_truncated(t));
    bool sorted = true;
    for (int i = 1; i < tide_store_table_num_rows(t); i++)
        sorted = sorted && strtod(cell_of(t, i - 1, "time_us"), NULL) >= strtod(cell_of(t, i, "time_us"), NULL);
    CU_ASSERT(sorted);
    CU_ASSERT_STRING_EQUAL(tide_store_table_column(t, 0), "node");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "device"), "/cpu:0");
    CU_ASSERT(strtod(cell_of(t, 0, "pct_of_wall"), NULL) <= 100.0);
    tide_store_table_free(t);
    t = tide_store_query_slowest_nodes(db_path, 7, 1, err);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 1);
    CU_ASSERT(tide_store_table_truncated(t));
    tide_store_table_free(t);
    t = tide_store_query_slowest_nodes(db_path, 1, 10, err); /* not traced */
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    tide_store_table_free(t);

    /* a run in flight (or cut short by a crash) shows as unfinished */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "INSERT INTO runs(step, run_id) VALUES (100, 1000)", NULL, NULL, NULL),
                    SQLITE_OK);
    sqlite3_close(db);
    t = tide_store_query_runs(db_path, 1, err);
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "status"), "unfinished");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "wall_ms"), "NULL");
    tide_store_table_free(t);

    t = tide_store_query_totals(db_path, err);
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "sessions"), "1");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "runs"), "10");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "traced_runs"), "1");
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "failed_runs"), "1");
    CU_ASSERT_EQUAL(atoi(cell_of(t, 0, "node_timings")), timed);
    /* (fetched values may be logged: compare with the tables themselves) */
    CU_ASSERT_EQUAL(atoi(cell_of(t, 0, "tensors")), query_int("SELECT count(*) FROM tensors"));
    CU_ASSERT_EQUAL(atoi(cell_of(t, 0, "stored_values")), query_int("SELECT count(value) FROM tensors"));
    CU_ASSERT_EQUAL(atoi(cell_of(t, 0, "value_bytes")), query_int("SELECT ifnull(sum(length(value)), 0) FROM tensors"));
    CU_ASSERT_STRING_EQUAL(cell_of(t, 0, "summaries"), "0");
    CU_ASSERT_EQUAL(strlen(cell_of(t, 0, "last_run")), 23);
    tide_store_table_free(t);
    tide_error_free(err);
    logged_session_end(&f.log);
}

/* ---------------------------------------------------------------- logged tensors */

static tide_store_tensor *tensor_at(const char *node, int output, int64_t session, int64_t step)
{
    tide_error *err = tide_error_new();
    tide_store_tensor *t = tide_store_query_tensor(db_path, node, output, session, step, err);
    if (!t)
        fprintf(stderr, "\nquery_tensor %s:%d at %lld failed: %s\n", node, output, (long long)step,
                tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(t);
    tide_error_free(err);
    return t;
}

/* The value read back is the run's tensor, bit for bit. */
static void assert_same_bits(const tide_store_tensor *t, const tide_tensor *want)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->value);
    CU_ASSERT_EQUAL(tide_tensor_dtype(t->value), tide_tensor_dtype(want));
    CU_ASSERT_EQUAL(t->dtype, tide_tensor_dtype(want));
    CU_ASSERT(tide_shape_equal(tide_tensor_shape(t->value), tide_tensor_shape(want)));
    CU_ASSERT_EQUAL(tide_tensor_byte_size(t->value), tide_tensor_byte_size(want));
    if (tide_tensor_byte_size(t->value) == tide_tensor_byte_size(want))
        CU_ASSERT_EQUAL(memcmp(tide_tensor_data(t->value), tide_tensor_data(want), tide_tensor_byte_size(want)), 0);
}

static void test_tensor_round_trip(void)
{
    fixture f;
    fixture_new(&f, 0);
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "z", NULL), TIDE_OK);
    for (int i = 0; i < NUM_CASTS; i++)
        CU_ASSERT_EQUAL(tide_store_watch(f.log.store, cast_names[i], NULL), TIDE_OK);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* step 0: nothing watched runs */
    tide_tensor *at[4][1 + NUM_CASTS];      /* steps 1, 2, 3, 4: x scaled by 1, 2, 3, NaN */
    for (int k = 0; k < 4; k++)
        run_z(&f, k < 3 ? (float)(k + 1) : NAN, at[k]);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* step 5 */
    flush(f.log.store);

    for (int k = 0; k < 4; k++) {
        tide_store_tensor *t = tensor_at("z", 0, 0, k + 1);
        if (!t)
            continue;
        CU_ASSERT_EQUAL(t->step, k + 1);
        CU_ASSERT_EQUAL(t->session, 1);
        CU_ASSERT_STRING_EQUAL(t->dtype_name, "float32");
        CU_ASSERT_EQUAL(t->shape.rank, 2);
        assert_same_bits(t, at[k][0]);
        tide_store_tensor_free(t);
        for (int i = 0; i < NUM_CASTS; i++) {
            t = tensor_at(cast_names[i], 0, 0, k + 1);
            if (t)
                assert_same_bits(t, at[k][i + 1]);
            tide_store_tensor_free(t);
        }
    }
    /* statistics: step 2, z = 2 * [1, -2, 0.5, 3] + [1, 2, 3, 4] = [3, -2, 4, 10] */
    tide_store_tensor *t = tensor_at("z", 0, 0, 2);
    CU_ASSERT(t && t->has_stats);
    if (t) {
        CU_ASSERT_DOUBLE_EQUAL(t->min, -2, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(t->max, 10, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(t->mean, 3.75, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(t->std, sqrt((0.5625 + 33.0625 + 0.0625 + 39.0625) / 4), 1e-9);
        CU_ASSERT_EQUAL(t->num_bins, 30);
        int64_t sum = 0;
        for (int b = 0; b < t->num_bins; b++)
            sum += t->histogram[b];
        CU_ASSERT_EQUAL(sum, 4);
        CU_ASSERT_EQUAL(t->histogram[0], 1);
        CU_ASSERT_EQUAL(t->histogram[29], 1);
    }
    tide_store_tensor_free(t);
    /* step 4 holds NaN everywhere: no statistics, the NaNs counted, the value still bit-equal */
    t = tensor_at("z", 0, 0, 4);
    CU_ASSERT(t && !t->has_stats && t->nan_count == 4 && t->inf_count == 0);
    tide_store_tensor_free(t);

    /* step selection: the latest logged step <= STEP; < 0 the latest; before the first: NOT_FOUND */
    t = tensor_at("z", 0, 0, 5); /* step 5 did not compute z: step 4 */
    CU_ASSERT(t && t->step == 4);
    tide_store_tensor_free(t);
    t = tensor_at("z", 0, 0, -1);
    CU_ASSERT(t && t->step == 4 && t->run == 5);
    tide_store_tensor_free(t);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_store_query_tensor(db_path, "z", 0, 0, 0, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    CU_ASSERT(contains(tide_error_message(err), "no value of z:0 at step 0 or before in session 1 (the first is "
                                                "at step 1)"));
    CU_ASSERT_PTR_NULL(tide_store_query_tensor(db_path, "m", 0, 0, -1, err)); /* neither watched nor fetched */
    CU_ASSERT(contains(tide_error_message(err), "holds no value of m:0"));
    CU_ASSERT_PTR_NULL(tide_store_query_tensor(db_path, "z", 1, 0, -1, err)); /* z has one output */
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NULL(tide_store_query_tensor(db_path, "z", 0, 7, -1, err)); /* no such session */
    CU_ASSERT(contains(tide_error_message(err), "session 7 holds no value of z:0"));
    tide_error_free(err);
    for (int k = 0; k < 4; k++)
        release_all(at[k], 1 + NUM_CASTS);
    logged_session_end(&f.log);
}

/* Two sessions log z: session 0 means the latest one's; pruned and capped values come back as NULL
 * with their statistics. */
static void test_tensor_sessions_and_values(void)
{
    fixture f;
    fixture_new(&f, 0);
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "z", NULL), TIDE_OK);
    tide_tensor *first[1 + NUM_CASTS], *second[1 + NUM_CASTS];
    run_z(&f, 1, first); /* session 1, step 0 */
    tide_session *other = tide_session_new(f.log.engine, f.log.g, NULL, NULL);
    CU_ASSERT(tide_store_log_session(f.log.store, other, f.log.engine, "other", NULL) == 2);
    tide_session *keep = f.log.session;
    f.log.session = other;
    run_z(&f, 5, second); /* session 2, step 0 */
    f.log.session = keep;
    flush(f.log.store);
    tide_store_tensor *t = tensor_at("z", 0, 0, 0);
    CU_ASSERT(t && t->session == 2);
    if (t)
        assert_same_bits(t, second[0]);
    tide_store_tensor_free(t);
    t = tensor_at("z", 0, 1, 0);
    CU_ASSERT(t && t->session == 1);
    if (t)
        assert_same_bits(t, first[0]);
    tide_store_tensor_free(t);

    /* pruned: statistics stay, the value goes */
    CU_ASSERT_EQUAL(tide_store_prune_values(f.log.store, 1, NULL, NULL), TIDE_OK);
    t = tensor_at("z", 0, 1, 0);
    CU_ASSERT(t && !t->value && t->has_stats && t->max == 7);
    tide_store_tensor_free(t);
    /* over the cap: never stored */
    tide_store_set_value_cap(f.log.store, 8);
    release_all(first, 1 + NUM_CASTS);
    run_z(&f, 1, first); /* session 1, step 1: 16 bytes > 8 */
    flush(f.log.store);
    t = tensor_at("z", 0, 1, -1);
    CU_ASSERT(t && t->step == 1 && !t->value && t->has_stats);
    tide_store_tensor_free(t);
    release_all(first, 1 + NUM_CASTS);
    release_all(second, 1 + NUM_CASTS);
    tide_session_free(other);
    logged_session_end(&f.log);
}

/* ---------------------------------------------------------------- while a writer writes */

typedef struct runner {
    fixture *f;
    int runs;
    bool ok;
} runner;

static void *run_many(void *arg)
{
    runner *r = arg;
    r->ok = true;
    for (int i = 0; i < r->runs && r->ok; i++) {
        r->ok = run_y(r->f, i % 5 == 0) == TIDE_OK;
        if (i % 25 == 24)
            r->ok = r->ok && tide_store_flush(r->f->log.store, NULL) == TIDE_OK;
    }
    return NULL;
}

static void test_query_while_writing(void)
{
    fixture f;
    fixture_new(&f, 0);
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "y", NULL), TIDE_OK);
    runner r = {&f, 400, false};
    pthread_t thread;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&thread, NULL, run_many, &r), 0);
    int queries = 0, failures = 0;
    int64_t last = 0;
    bool monotonic = true;
    tide_error *err = tide_error_new();
    for (bool done = false; !done;) {
        done = pthread_tryjoin_np(thread, NULL) == 0; /* one more round after the writer ends */
        tide_store_table *t = tide_store_query(db_path, "SELECT count(*) FROM runs WHERE status IS NOT NULL", 1,
                                               err);
        tide_store_table *runs = tide_store_query_runs(db_path, 20, err);
        tide_store_table *sum = tide_store_query_totals(db_path, err);
        if (!t || !runs || !sum) {
            fprintf(stderr, "\nquery while writing: %s\n", tide_error_message(err));
            failures++;
        } else {
            int64_t n = strtoll(tide_store_table_cell(t, 0, 0), NULL, 10);
            monotonic = monotonic && n >= last;
            last = n;
            queries++;
        }
        tide_store_table_free(t);
        tide_store_table_free(runs);
        tide_store_table_free(sum);
    }
    CU_ASSERT(r.ok);
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT(queries > 1);
    CU_ASSERT(monotonic);
    flush(f.log.store);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs WHERE status = 0"), 400);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs WHERE traced = 1"), 80);
    tide_store_tensor *t = tensor_at("y", 0, 0, 250);
    CU_ASSERT(t && t->step == 250 && t->value && t->mean == 16);
    tide_store_tensor_free(t);
    tide_error_free(err);
    logged_session_end(&f.log);
}

/* ---------------------------------------------------------------- the policy setters and :watch */

static void test_policy_setters(void)
{
    fixture f;
    fixture_new(&f, 100);
    CU_ASSERT_EQUAL(tide_store_trace_every(f.log.store), 100);
    CU_ASSERT_EQUAL(tide_store_value_cap(f.log.store), 1u << 20);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* step 0: traced by the default policy */
    tide_store_set_trace_every(f.log.store, 1);
    CU_ASSERT_EQUAL(tide_store_trace_every(f.log.store), 1);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* steps 1-3: every run */
    tide_store_set_trace_every(f.log.store, 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_y(&f, i == 1), TIDE_OK); /* steps 4-6: only the caller's (5) */
    tide_store_set_trace_every(f.log.store, 4);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* steps 7-9: 8 */
    tide_store_set_trace_every(f.log.store, -3);
    CU_ASSERT_EQUAL(tide_store_trace_every(f.log.store), 0);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK); /* step 10: not traced */
    flush(f.log.store);
    tide_store_table *t = query("SELECT group_concat(step, ',') FROM (SELECT DISTINCT r.step FROM node_timings n "
                                "JOIN runs r ON r.id = n.run_id ORDER BY r.step)", 1);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "0,1,2,3,5,8");
    tide_store_table_free(t);
    CU_ASSERT_EQUAL(query_int("SELECT count(*) FROM runs WHERE traced = 1"), 6);

    /* the value cap: 0 keeps none, a larger one keeps them again */
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "y", NULL), TIDE_OK);
    tide_store_set_value_cap(f.log.store, 0);
    CU_ASSERT_EQUAL(tide_store_value_cap(f.log.store), 0);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    tide_store_set_value_cap(f.log.store, 16);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    tide_store_set_value_cap(f.log.store, 15);
    CU_ASSERT_EQUAL(run_y(&f, false), TIDE_OK);
    flush(f.log.store);
    t = query("SELECT group_concat(value IS NOT NULL, ',') FROM (SELECT value FROM tensors WHERE kind = 'watched' "
              "ORDER BY step)", 1);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "0,1,0");
    tide_store_table_free(t);

    /* the watched list */
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "z", NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_watch(f.log.store, "not-yet", NULL), TIDE_OK);
    int n = -1;
    char **names = tide_store_watched(f.log.store, &n);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT(names && strcmp(names[0], "y") == 0 && strcmp(names[1], "z") == 0 && strcmp(names[2], "not-yet") == 0);
    CU_ASSERT(names && names[3] == NULL);
    tide_store_names_free(names);
    tide_store_unwatch(f.log.store, "y");
    names = tide_store_watched(f.log.store, &n);
    CU_ASSERT_EQUAL(n, 2);
    tide_store_names_free(names);
    names = tide_store_watched(NULL, &n);
    CU_ASSERT(names && !names[0] && n == 0);
    tide_store_names_free(names);
    tide_store_set_trace_every(NULL, 1);
    CU_ASSERT_EQUAL(tide_store_trace_every(NULL), 0);
    logged_session_end(&f.log);
}

/* tide_store_query_bound: values are bound, never spliced; integers as integers; counts checked. */
static void test_bound_parameters(void)
{
    fixture f;
    fixture_new(&f, 1);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(run_y(&f, true), TIDE_OK);
    flush(f.log.store);
    tide_error *err = tide_error_new();
    const char *p1[] = {"1", "y"};
    tide_store_table *t = tide_store_query_bound(db_path, "SELECT count(*) FROM node_timings WHERE run_id > ?1 AND node = ?2",
                                                 p1, 2, 10, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "2");
    tide_store_table_free(t);
    /* an injection attempt is just a name that matches nothing */
    const char *p2[] = {"y' OR '1'='1"};
    t = tide_store_query_bound(db_path, "SELECT count(*) FROM node_timings WHERE node = ?", p2, 1, 10, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "0");
    tide_store_table_free(t);
    /* integers bind as integers (LIMIT needs one), NULL as NULL */
    const char *p3[] = {"2", NULL};
    t = tide_store_query_bound(db_path, "SELECT id, ?2 IS NULL FROM runs ORDER BY id LIMIT ?1", p3, 2, 10, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 2);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 1), "1");
    tide_store_table_free(t);
    /* digits with a leading zero are text: a name "007" is not the number 7 */
    const char *p4[] = {"007", "7"};
    t = tide_store_query_bound(db_path, "SELECT typeof(?1), typeof(?2), ?1 = '007'", p4, 2, 10, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "text");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 1), "integer");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 2), "1");
    tide_store_table_free(t);
    /* a count that does not match, and writes, are refused */
    CU_ASSERT_PTR_NULL(tide_store_query_bound(db_path, "SELECT ?1, ?2", p3, 1, 10, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "2 parameters but 1"));
    CU_ASSERT_PTR_NULL(tide_store_query_bound(db_path, "DELETE FROM runs WHERE id = ?", p3, 1, 10, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(tide_store_query_bound(db_path, "SELECT ?", NULL, 1, 10, err));
    tide_error_free(err);
    logged_session_end(&f.log);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_query_rows),
        TH_TEST(test_table_format),
        TH_TEST(test_read_only),
        TH_TEST(test_query_errors),
        TH_TEST(test_named_runs),
        TH_TEST(test_slowest_nodes_and_totals),
        TH_TEST(test_tensor_round_trip),
        TH_TEST(test_tensor_sessions_and_values),
        TH_TEST(test_query_while_writing),
        TH_TEST(test_policy_setters),
        TH_TEST(test_bound_parameters),
        TH_END,
    };
    return th_main("store query", tests);
}
