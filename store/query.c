/* query.c — reading the run log: the queries of the REPL (:sql, :runs, :run, :tensor, :log) and of the
 * web views. Every call opens its own read-only connection to the file (SQLITE_OPEN_READONLY, PRAGMA
 * query_only, a busy timeout), runs one statement and closes it, so that a query never disturbs a
 * store's writer (WAL readers do not block writers, nor writers readers) and may read a file that
 * other processes are writing. Results come back as tables of text (struct tide_store_table), which
 * tide_store_table_format lays out for a terminal, or, for a logged tensor, as a record whose value is
 * decoded from the stored bytes with the logged dtype and shape.
 *
 * Defence in depth for user SQL: only statements that start with a query keyword (SELECT, WITH, VALUES,
 * PRAGMA, EXPLAIN) and that SQLite itself calls read-only (sqlite3_stmt_readonly) are run; ATTACH and
 * DETACH are refused by an authorizer; and the connection is read-only with query_only set, so that a
 * statement that slipped through still cannot write. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "store_internal.h"

#define BUSY_TIMEOUT_MS 5000
#define MAX_HIST_BINS 1024 /* what a logged histogram may hold (tide writes 30) */

/* ---------------------------------------------------------------- tables */

/* A result: column names and num_rows * num_columns cells, row-major, each malloc'd text. */
struct tide_store_table {
    int num_columns, num_rows, cap_rows;
    char **columns;
    char **cells;
    unsigned char *nulls; /* 1 where the value was SQL NULL; same layout as cells */
    bool truncated;
};

void tide_store_table_free(tide_store_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->num_columns; i++)
        free(t->columns[i]);
    for (int i = 0; i < t->num_rows * t->num_columns; i++)
        free(t->cells[i]);
    free(t->columns);
    free(t->cells);
    free(t->nulls);
    free(t);
}

int tide_store_table_num_columns(const tide_store_table *t) { return t ? t->num_columns : 0; }
int tide_store_table_num_rows(const tide_store_table *t) { return t ? t->num_rows : 0; }
bool tide_store_table_truncated(const tide_store_table *t) { return t && t->truncated; }

const char *tide_store_table_column(const tide_store_table *t, int col)
{
    return t && col >= 0 && col < t->num_columns ? t->columns[col] : NULL;
}

const char *tide_store_table_cell(const tide_store_table *t, int row, int col)
{
    if (!t || row < 0 || row >= t->num_rows || col < 0 || col >= t->num_columns)
        return NULL;
    return t->cells[row * t->num_columns + col];
}

bool tide_store_table_is_null(const tide_store_table *t, int row, int col)
{
    if (!t || row < 0 || row >= t->num_rows || col < 0 || col >= t->num_columns)
        return false;
    return t->nulls[row * t->num_columns + col] != 0;
}

/* Reverses the order of the rows (queries that take the newest rows first, shown oldest first). */
static void table_reverse(tide_store_table *t)
{
    int n = t->num_columns;
    for (int a = 0, b = t->num_rows - 1; a < b; a++, b--)
        for (int c = 0; c < n; c++) {
            char *cell = t->cells[a * n + c];
            t->cells[a * n + c] = t->cells[b * n + c];
            t->cells[b * n + c] = cell;
            unsigned char null = t->nulls[a * n + c];
            t->nulls[a * n + c] = t->nulls[b * n + c];
            t->nulls[b * n + c] = null;
        }
}

/* ---------------------------------------------------------------- the read-only connection */


/* SQLite's progress handler: a non-zero return interrupts the statement. */
static int check_cancel(void *user)
{
    const st_reader *r = user;
    return r->cancel && *r->cancel;
}

static int authorize(void *user, int action, const char *a, const char *b, const char *db, const char *trigger)
{
    (void)a, (void)b, (void)db, (void)trigger;
    st_reader *r = user;
    if (action == SQLITE_ATTACH || action == SQLITE_DETACH) {
        snprintf(r->denied, sizeof r->denied, "%s", action == SQLITE_ATTACH ? "ATTACH" : "DETACH");
        return SQLITE_DENY;
    }
    return SQLITE_OK;
}

/* SQL function short_device(name): the device name as people read it (tide_device_short_name); NULL
 * for NULL. */
static void sql_short_device(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const unsigned char *full = sqlite3_value_text(argv[0]);
    if (!full) {
        sqlite3_result_null(ctx);
        return;
    }
    char buf[256];
    sqlite3_result_text(ctx, tide_device_short_name((const char *)full, buf, sizeof buf), -1, SQLITE_TRANSIENT);
}

/* SQL function status_name(code): the tide_status's name; NULL for NULL. */
static void sql_status_name(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_text(ctx, tide_status_name((tide_status)sqlite3_value_int(argv[0])), -1, SQLITE_STATIC);
}

tide_status st_reader_open(st_reader *r, const char *path, tide_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (!path || !*path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log: no file name given");
    struct stat st;
    if (stat(path, &st) != 0)
        return tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_UNAVAILABLE, "run log %s: %s", path,
                              strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "run log %s is not a file", path);
    int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK) {
        tide_error_set(err, TIDE_UNAVAILABLE, "cannot open run log %s: %s", path,
                       r->db ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
        sqlite3_close(r->db);
        r->db = NULL;
        return TIDE_UNAVAILABLE;
    }
    sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(r->db, 0);
    if (sqlite3_exec(r->db, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function(r->db, "status_name", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                sql_status_name, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function(r->db, "short_device", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                sql_short_device, NULL, NULL) != SQLITE_OK) {
        tide_error_set(err, TIDE_UNAVAILABLE, "cannot open run log %s: %s", path, sqlite3_errmsg(r->db));
        sqlite3_close(r->db);
        r->db = NULL;
        return TIDE_UNAVAILABLE;
    }
    sqlite3_set_authorizer(r->db, authorize, r);
    sqlite3_progress_handler(r->db, 1000, check_cancel, r);
    return TIDE_OK;
}

void st_reader_close(st_reader *r)
{
    sqlite3_close(r->db);
    r->db = NULL;
}

/* Turns the connection's last failure into err: SQL errors are SQLite's message after "sql: ". */
static void sql_error(st_reader *r, tide_error *err)
{
    int code = sqlite3_errcode(r->db);
    if (code == SQLITE_NOTADB)
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "run log %s is not an SQLite database", r->path);
    else if (code == SQLITE_INTERRUPT)
        tide_error_set(err, TIDE_CANCELLED, "sql: the query was cancelled");
    else if (r->denied[0])
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "sql: %s is not allowed: queries only read the run log",
                       r->denied);
    else if (code == SQLITE_BUSY || code == SQLITE_LOCKED || code == SQLITE_CANTOPEN || code == SQLITE_IOERR)
        tide_error_set(err, TIDE_UNAVAILABLE, "sql: %s (run log %s)", sqlite3_errmsg(r->db), r->path);
    else if (code == SQLITE_NOMEM)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "sql: %s", sqlite3_errmsg(r->db));
    else
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "sql: %s", sqlite3_errmsg(r->db));
}

/* ---------------------------------------------------------------- running a statement */

static char *cell_text(sqlite3_stmt *st, int col, unsigned char *null)
{
    *null = 0;
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
        *null = 1;
        return strdup("NULL");
    case SQLITE_BLOB: {
        char buf[48];
        snprintf(buf, sizeof buf, "<blob %d bytes>", sqlite3_column_bytes(st, col));
        return strdup(buf);
    }
    default: {
        const unsigned char *text = sqlite3_column_text(st, col);
        return strdup(text ? (const char *)text : "");
    }
    }
}

static bool add_row(tide_store_table *t, sqlite3_stmt *st)
{
    int n = t->num_columns;
    if (t->num_rows == t->cap_rows) {
        int cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **cells = realloc(t->cells, (size_t)cap * (size_t)(n ? n : 1) * sizeof *cells);
        if (cells)
            t->cells = cells;
        unsigned char *nulls = cells ? realloc(t->nulls, (size_t)cap * (size_t)(n ? n : 1)) : NULL;
        if (!nulls)
            return false;
        t->nulls = nulls;
        t->cap_rows = cap;
    }
    int base = t->num_rows * n;
    for (int c = 0; c < n; c++) {
        t->cells[base + c] = cell_text(st, c, &t->nulls[base + c]);
        if (!t->cells[base + c]) {
            while (c-- > 0)
                free(t->cells[base + c]);
            return false;
        }
    }
    t->num_rows++;
    return true;
}

/* Steps st to the end, keeping up to max_rows rows. NULL with err set on failure. */
static tide_store_table *collect(st_reader *r, sqlite3_stmt *st, int max_rows, tide_error *err)
{
    tide_store_table *t = calloc(1, sizeof *t);
    int n = sqlite3_column_count(st);
    if (t)
        t->columns = calloc((size_t)(n ? n : 1), sizeof *t->columns);
    bool ok = t && t->columns;
    for (int c = 0; ok && c < n; c++, t->num_columns++) {
        const char *name = sqlite3_column_name(st, c);
        ok = (t->columns[c] = strdup(name ? name : "?")) != NULL;
    }
    while (ok) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            return t;
        if (rc != SQLITE_ROW) {
            sql_error(r, err);
            tide_store_table_free(t);
            return NULL;
        }
        if (t->num_rows >= max_rows) {
            t->truncated = true;
            return t;
        }
        ok = add_row(t, st);
    }
    tide_store_table_free(t);
    tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading the run log %s", r->path);
    return NULL;
}

/* A parameter of a named query: text when text is not NULL, else the integer. */
typedef struct param {
    const char *text;
    int64_t i;
} param;

/* Prepares sql (ours: one statement) with its parameters; NULL with err set on failure. */
static sqlite3_stmt *prepare(st_reader *r, const char *sql, const param *p, int np, tide_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_error(r, err);
        return NULL;
    }
    for (int i = 0; i < np; i++) {
        if (p[i].text)
            sqlite3_bind_text(st, i + 1, p[i].text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, i + 1, p[i].i);
    }
    return st;
}

/* Runs one of our own queries on an open reader. */
static tide_store_table *run_named(st_reader *r, const char *sql, const param *p, int np, int max_rows,
                                   tide_error *err)
{
    sqlite3_stmt *st = prepare(r, sql, p, np, err);
    tide_store_table *t = st ? collect(r, st, max_rows, err) : NULL;
    sqlite3_finalize(st);
    return t;
}

/* ---------------------------------------------------------------- user SQL */

/* The first keyword of sql, after whitespace, comments and opening parentheses, into buf. */
static void first_keyword(const char *sql, char *buf, size_t size)
{
    const char *p = sql;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == '(')
            p++;
        if (p[0] == '-' && p[1] == '-') {
            p += strcspn(p, "\n");
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            break;
        }
    }
    size_t n = 0;
    while (n + 1 < size && isalpha((unsigned char)p[n])) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
}

static bool is_query_keyword(const char *word)
{
    static const char *const allowed[] = {"SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcasecmp(word, allowed[i]) == 0)
            return true;
    return false;
}

/* True when something other than whitespace, ';' and comments follows the first statement. */
static bool more_statements(sqlite3 *db, const char *tail)
{
    while (tail && *tail) {
        sqlite3_stmt *next = NULL;
        const char *rest = NULL;
        int rc = sqlite3_prepare_v2(db, tail, -1, &next, &rest);
        sqlite3_finalize(next);
        if (rc != SQLITE_OK || next)
            return true;
        if (!rest || rest == tail)
            break;
        tail = rest;
    }
    return false;
}

tide_store_table *tide_store_query(const char *path, const char *sql, int max_rows, tide_error *err)
{
    return tide_store_query_cancellable(path, sql, max_rows, NULL, err);
}

/* An integer written as SQLite would print it (optional '-', digits, no leading zero: "12", "-3", "0")
 * is bound as an integer; anything else ("007", "+1", "1e3", "x") as text, so that a name made of
 * digits still matches itself. */
static bool is_integer_text(const char *s, int64_t *value)
{
    if (!s || !*s)
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    char canonical[24];
    snprintf(canonical, sizeof canonical, "%lld", v);
    if (errno || *end || strcmp(canonical, s) != 0)
        return false;
    *value = v;
    return true;
}

/* Binds params[i] to ?i+1: NULL as NULL, a plainly written integer as an integer, else as text. */
static void bind_texts(sqlite3_stmt *st, const char *const *params, int num_params)
{
    for (int i = 0; i < num_params; i++) {
        int64_t v;
        if (!params[i])
            sqlite3_bind_null(st, i + 1);
        else if (is_integer_text(params[i], &v))
            sqlite3_bind_int64(st, i + 1, v);
        else
            sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_STATIC);
    }
}

tide_store_table *st_reader_run(st_reader *r, const char *sql, const char *const *params, int num_params, int max_rows,
                                tide_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_error(r, err);
        return NULL;
    }
    tide_store_table *t = NULL;
    if (sqlite3_bind_parameter_count(st) != num_params)
        tide_error_set(err, TIDE_INTERNAL, "run log query: the statement has %d parameters but %d values were given",
                       sqlite3_bind_parameter_count(st), num_params);
    else {
        bind_texts(st, params, num_params);
        t = collect(r, st, max_rows, err);
    }
    sqlite3_finalize(st);
    return t;
}

static tide_store_table *user_query(const char *path, const char *sql, const char *const *params, int num_params,
                                    int max_rows, const volatile sig_atomic_t *cancel, tide_error *err);

tide_store_table *tide_store_query_bound(const char *path, const char *sql, const char *const *params,
                                         int num_params, int max_rows, tide_error *err)
{
    if (num_params < 0 || (num_params > 0 && !params)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "query: num_params must be >= 0 and params given");
        return NULL;
    }
    return user_query(path, sql, params, num_params, max_rows, NULL, err);
}

tide_store_table *tide_store_query_cancellable(const char *path, const char *sql, int max_rows,
                                               const volatile sig_atomic_t *cancel, tide_error *err)
{
    return user_query(path, sql, NULL, 0, max_rows, cancel, err);
}

static tide_store_table *user_query(const char *path, const char *sql, const char *const *params, int num_params,
                                    int max_rows, const volatile sig_atomic_t *cancel, tide_error *err)
{
    if (!sql || max_rows < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "query: a statement and max_rows >= 0 are required");
        return NULL;
    }
    st_reader r;
    if (st_reader_open(&r, path, err) != TIDE_OK)
        return NULL;
    r.cancel = cancel;
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    tide_store_table *t = NULL;
    char word[16];
    first_keyword(sql, word, sizeof word);
    int rc = sqlite3_prepare_v2(r.db, sql, -1, &st, &tail);
    if (rc != SQLITE_OK)
        sql_error(&r, err);
    else if (!st)
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "sql: no statement given");
    else if (more_statements(r.db, tail))
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "sql: one statement at a time (something follows the first statement: '%.40s')", tail);
    else if (!is_query_keyword(word) || !sqlite3_stmt_readonly(st))
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "sql: only statements that read are allowed (SELECT, WITH, VALUES, PRAGMA, EXPLAIN): "
                       "the run log is opened read-only");
    else if (sqlite3_bind_parameter_count(st) != num_params)
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "sql: the statement has %d parameters but %d values were given",
                       sqlite3_bind_parameter_count(st), num_params);
    else {
        bind_texts(st, params, num_params);
        t = collect(&r, st, max_rows, err);
    }
    sqlite3_finalize(st);
    st_reader_close(&r);
    return t;
}

/* ---------------------------------------------------------------- named queries */

#define STATUS_TEXT "CASE WHEN r.status IS NULL THEN 'unfinished' ELSE status_name(r.status) END"
#define LOCAL_TIME(ns) "strftime('%Y-%m-%d %H:%M:%f', " ns " / 1e9, 'unixepoch', 'localtime')"

/* Fails with a clear message when the file is not a run log of a schema this build reads; *version
 * (may be NULL) receives its schema version. */
tide_status st_check_schema(st_reader *r, int *version_out, tide_error *err)
{
    tide_store_table *t = run_named(r, "PRAGMA user_version", NULL, 0, 1, err);
    if (!t)
        return tide_error_code(err) ? tide_error_code(err) : TIDE_INTERNAL;
    int version = t->num_rows ? atoi(tide_store_table_cell(t, 0, 0)) : 0;
    tide_store_table_free(t);
    if (version_out)
        *version_out = version;
    if (version <= 0)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "%s is not a tide run log (it has no schema)", r->path);
    if (version > TIDE_STORE_SCHEMA_VERSION)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                              "run log %s has schema version %d, newer than this build of tide knows (%d)", r->path,
                              version, TIDE_STORE_SCHEMA_VERSION);
    return TIDE_OK;
}

/* Opens path, checks its schema and runs one named query. */
static tide_store_table *named_query(const char *path, const char *sql, const param *p, int np, int max_rows,
                                     tide_error *err)
{
    st_reader r;
    if (st_reader_open(&r, path, err) != TIDE_OK)
        return NULL;
    tide_store_table *t = st_check_schema(&r, NULL, err) == TIDE_OK ? run_named(&r, sql, p, np, max_rows, err) : NULL;
    st_reader_close(&r);
    return t;
}

tide_store_table *tide_store_query_runs(const char *path, int last_n, tide_error *err)
{
    if (last_n < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "query_runs: last_n is %d, must be >= 0", last_n);
        return NULL;
    }
    static const char sql[] =
        "SELECT r.id, r.session_id AS session, r.step, " STATUS_TEXT " AS status, round(r.wall_ns / 1e6, 3) "
        "AS wall_ms, r.traced, r.fetches, " LOCAL_TIME("r.started_at_ns") " AS started "
        "FROM runs r ORDER BY r.id DESC";
    tide_store_table *t = named_query(path, sql, NULL, 0, last_n, err);
    if (t)
        table_reverse(t);
    return t;
}

tide_store_table *tide_store_query_run(const char *path, int64_t run_id, tide_error *err)
{
    static const char sql[] =
        "SELECT r.id, r.session_id AS session, r.step, r.run_id, " STATUS_TEXT " AS status, r.error, "
        "round(r.wall_ns / 1e6, 3) AS wall_ms, r.traced, r.feeds, r.fetches, r.targets, "
        LOCAL_TIME("r.started_at_ns") " AS started, "
        "(SELECT count(*) FROM node_timings WHERE run_id = r.id) AS nodes_timed, "
        "(SELECT count(*) FROM tensors WHERE run_id = r.id) AS tensors "
        "FROM runs r WHERE r.id = CASE WHEN ?1 > 0 THEN ?1 ELSE (SELECT max(id) FROM runs) END";
    param p = {NULL, run_id};
    tide_store_table *t = named_query(path, sql, &p, 1, 1, err);
    if (t && t->num_rows == 0) {
        tide_store_table_free(t);
        if (run_id > 0)
            tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no run %" PRId64, path, run_id);
        else
            tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no runs yet", path);
        return NULL;
    }
    return t;
}

tide_store_table *tide_store_query_slowest_nodes(const char *path, int64_t run_id, int limit, tide_error *err)
{
    if (limit < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "query_slowest_nodes: limit is %d, must be >= 0", limit);
        return NULL;
    }
    static const char sql[] =
        "SELECT t.node, t.op, short_device(t.device) AS device, t.thread, "
        "round((t.end_ns - t.start_ns) / 1e3, 1) AS time_us, "
        "round(100.0 * (t.end_ns - t.start_ns) / r.wall_ns, 1) AS pct_of_wall "
        "FROM node_timings t JOIN runs r ON r.id = t.run_id WHERE t.run_id = ?1 "
        "ORDER BY t.end_ns - t.start_ns DESC, t.start_ns";
    param p = {NULL, run_id};
    return named_query(path, sql, &p, 1, limit, err);
}

/* The totals; `summaries` counts the summaries table that came with schema version 2. */
#define TOTALS_SQL(summaries)                                                                                  \
    "SELECT (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM runs) AS runs, "                \
    "(SELECT count(*) FROM runs WHERE traced) AS traced_runs, "                                                \
    "(SELECT count(*) FROM runs WHERE status <> 0) AS failed_runs, "                                           \
    "(SELECT count(*) FROM node_timings) AS node_timings, (SELECT count(*) FROM tensors) AS tensors, "         \
    "(SELECT count(*) FROM tensors WHERE value IS NOT NULL) AS stored_values, "                                \
    "(SELECT ifnull(sum(length(value)), 0) FROM tensors) AS value_bytes, " summaries " AS summaries, "          \
    "(SELECT " LOCAL_TIME("min(started_at_ns)") " FROM runs) AS first_run, "                                    \
    "(SELECT " LOCAL_TIME("max(started_at_ns)") " FROM runs) AS last_run"

tide_store_table *tide_store_query_totals(const char *path, tide_error *err)
{
    st_reader r;
    if (st_reader_open(&r, path, err) != TIDE_OK)
        return NULL;
    int version = 0;
    tide_store_table *t = NULL;
    if (st_check_schema(&r, &version, err) == TIDE_OK)
        t = run_named(&r, version >= 2 ? TOTALS_SQL("(SELECT count(*) FROM summaries)") : TOTALS_SQL("0"), NULL, 0,
                      1, err);
    st_reader_close(&r);
    return t;
}

/* ---------------------------------------------------------------- a logged tensor */

void tide_store_tensor_free(tide_store_tensor *t)
{
    if (!t)
        return;
    free(t->node);
    free(t->dtype_name);
    free(t->histogram);
    tide_tensor_release(t->value);
    free(t);
}

/* "[2, 3]" (as tide_shape_format writes it; "[]" for a scalar) -> shape. False if malformed. */
static bool parse_shape(const char *text, tide_shape *shape)
{
    shape->rank = 0;
    const char *p = text;
    if (*p++ != '[')
        return false;
    while (*p == ' ')
        p++;
    if (*p == ']')
        return p[1] == '\0';
    for (;;) {
        char *end = NULL;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno || d < 0 || shape->rank >= TIDE_MAX_RANK)
            return false;
        shape->dims[shape->rank++] = d;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ']')
            return p[1] == '\0';
        if (*p++ != ',')
            return false;
        while (*p == ' ')
            p++;
    }
}

/* "[1,0,3]" -> counts (malloc'd). False if malformed. */
static bool parse_histogram(const char *text, tide_store_tensor *t)
{
    t->num_bins = 0;
    const char *p = text;
    if (*p++ != '[')
        return false;
    t->histogram = calloc(MAX_HIST_BINS, sizeof *t->histogram);
    if (!t->histogram)
        return false;
    while (*p && *p != ']' && t->num_bins < MAX_HIST_BINS) {
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            return false;
        t->histogram[t->num_bins++] = v;
        p = end;
        if (*p == ',')
            p++;
    }
    return *p == ']';
}

static char *column_strdup(sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    return strdup(s ? (const char *)s : "");
}

/* Fills t's value from the blob in column col, decoded with t's dtype and shape. */
static tide_status decode_value(sqlite3_stmt *st, int col, tide_store_tensor *t, const char *path, tide_error *err)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return TIDE_OK;
    size_t bytes = (size_t)sqlite3_column_bytes(st, col);
    const void *data = sqlite3_column_blob(st, col);
    int64_t n = tide_shape_num_elements(&t->shape);
    size_t want = n >= 0 ? (size_t)n * tide_dtype_size(t->dtype) : 0;
    if (t->dtype == TIDE_INVALID_DTYPE || t->dtype == TIDE_STRING || n < 0 || bytes != want)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                              "run log %s: the value of %s:%d at step %" PRId64 " has %zu bytes, which is not "
                              "a %s tensor of shape %s",
                              path, t->node, t->output, t->step, bytes, t->dtype_name,
                              (const char *)sqlite3_column_text(st, 4));
    static const char empty[1];
    t->value = tide_tensor_new_copy(t->dtype, &t->shape, data ? data : empty, bytes, err);
    return t->value ? TIDE_OK : tide_error_code(err);
}

/* Reads the row of the tensor query into t. */
static tide_status read_tensor_row(sqlite3_stmt *st, tide_store_tensor *t, const char *path, tide_error *err)
{
    t->run = sqlite3_column_int64(st, 0);
    t->session = sqlite3_column_int64(st, 1);
    t->step = sqlite3_column_int64(st, 2);
    t->dtype_name = column_strdup(st, 3);
    if (!t->dtype_name)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading the run log %s", path);
    t->dtype = tide_dtype_from_name(t->dtype_name);
    const char *shape = (const char *)sqlite3_column_text(st, 4);
    if (!shape || !parse_shape(shape, &t->shape))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "run log %s: %s:%d at step %" PRId64
                              " has a malformed shape '%s'", path, t->node, t->output, t->step, shape ? shape : "");
    t->has_stats = sqlite3_column_type(st, 5) != SQLITE_NULL;
    t->min = sqlite3_column_double(st, 5);
    t->max = sqlite3_column_double(st, 6);
    t->mean = sqlite3_column_double(st, 7);
    t->std = sqlite3_column_double(st, 8);
    t->nan_count = sqlite3_column_int64(st, 9);
    t->inf_count = sqlite3_column_int64(st, 10);
    const char *hist = (const char *)sqlite3_column_text(st, 11);
    if (hist && !parse_histogram(hist, t))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "run log %s: %s:%d at step %" PRId64
                              " has a malformed histogram", path, t->node, t->output, t->step);
    return decode_value(st, 12, t, path, err);
}

/* The session of the most recent value of node:output; -1 (err set) when it was never logged. */
static int64_t latest_session(st_reader *r, const char *node, int output, tide_error *err)
{
    param p[2] = {{node, 0}, {NULL, output}};
    tide_store_table *t = run_named(r, "SELECT ifnull(r.session_id, 0) FROM tensors t JOIN runs r ON r.id = t.run_id "
                                       "WHERE t.node = ?1 AND t.output = ?2 ORDER BY t.run_id DESC LIMIT 1",
                                    p, 2, 1, err);
    int64_t session = -1;
    if (t && t->num_rows == 1)
        session = strtoll(tide_store_table_cell(t, 0, 0), NULL, 10);
    else if (t)
        tide_error_set(err, TIDE_NOT_FOUND, "run log %s holds no value of %s:%d", r->path, node, output);
    tide_store_table_free(t);
    return session;
}

/* The error when a session has values of node:output but none at or before step. */
static void not_found_before(st_reader *r, const char *node, int output, int64_t session, int64_t step,
                             tide_error *err)
{
    param p[3] = {{node, 0}, {NULL, output}, {NULL, session}};
    tide_store_table *t = run_named(r, "SELECT min(t.step) FROM tensors t JOIN runs r ON r.id = t.run_id "
                                       "WHERE t.node = ?1 AND t.output = ?2 AND ifnull(r.session_id, 0) = ?3",
                                    p, 3, 1, NULL);
    const char *first = t && t->num_rows == 1 && !t->nulls[0] ? tide_store_table_cell(t, 0, 0) : NULL;
    if (first)
        tide_error_set(err, TIDE_NOT_FOUND, "run log %s: no value of %s:%d at step %" PRId64 " or before in "
                       "session %" PRId64 " (the first is at step %s)", r->path, node, output, step, session, first);
    else
        tide_error_set(err, TIDE_NOT_FOUND, "run log %s: session %" PRId64 " holds no value of %s:%d", r->path,
                       session, node, output);
    tide_store_table_free(t);
}

static tide_store_tensor *tensor_query(st_reader *r, const char *node, int output, int64_t session, int64_t step,
                                       tide_error *err)
{
    if (session == 0 && (session = latest_session(r, node, output, err)) < 0)
        return NULL;
    static const char sql[] =
        "SELECT t.run_id, ifnull(r.session_id, 0), t.step, t.dtype, t.shape, t.min, t.max, t.mean, t.std, "
        "t.nan_count, t.inf_count, t.histogram, t.value FROM tensors t JOIN runs r ON r.id = t.run_id "
        "WHERE t.node = ?1 AND t.output = ?2 AND ifnull(r.session_id, 0) = ?3 AND (?4 < 0 OR t.step <= ?4) "
        "ORDER BY t.step DESC, t.run_id DESC, t.value IS NOT NULL DESC LIMIT 1";
    param p[4] = {{node, 0}, {NULL, output}, {NULL, session}, {NULL, step}};
    sqlite3_stmt *st = prepare(r, sql, p, 4, err);
    if (!st)
        return NULL;
    tide_store_tensor *t = NULL;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        not_found_before(r, node, output, session, step, err);
    } else if (rc != SQLITE_ROW) {
        sql_error(r, err);
    } else {
        t = calloc(1, sizeof *t);
        tide_status status = TIDE_RESOURCE_EXHAUSTED;
        if (t && (t->node = strdup(node))) {
            t->output = output;
            status = read_tensor_row(st, t, r->path, err);
        } else {
            tide_error_set(err, status, "out of memory reading the run log %s", r->path);
        }
        if (status != TIDE_OK) {
            tide_store_tensor_free(t);
            t = NULL;
        }
    }
    sqlite3_finalize(st);
    return t;
}

tide_store_tensor *tide_store_query_tensor(const char *path, const char *node, int output, int64_t session,
                                           int64_t step, tide_error *err)
{
    if (!node || !*node || output < 0 || session < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "query_tensor: a node name, output >= 0 and session >= 0 "
                                                   "are required");
        return NULL;
    }
    st_reader r;
    if (st_reader_open(&r, path, err) != TIDE_OK)
        return NULL;
    tide_store_tensor *t = st_check_schema(&r, NULL, err) == TIDE_OK ? tensor_query(&r, node, output, session, step, err)
                                                            : NULL;
    st_reader_close(&r);
    return t;
}

/* ---------------------------------------------------------------- the table as text */

/* Characters (UTF-8 code points) in s. */
static int utf8_chars(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Writes s clipped to max characters ("..." marks a cut), control characters as spaces, padded with
 * spaces to width characters (on the left when right_align). */
static void put_cell(FILE *out, const char *s, int max, int width, bool right_align)
{
    int chars = utf8_chars(s), keep = chars <= max ? chars : max > 3 ? max - 3 : max;
    int shown = keep + (chars > max && max > 3 ? 3 : 0);
    if (right_align)
        fprintf(out, "%*s", width - shown, "");
    int k = 0;
    for (const char *p = s; *p; p++) {
        bool starts = ((unsigned char)*p & 0xC0) != 0x80;
        if (starts && k++ == keep)
            break;
        fputc((unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p, out);
    }
    if (chars > max && max > 3)
        fputs("...", out);
    if (!right_align && width > shown)
        fprintf(out, "%*s", width - shown, "");
}

static bool looks_numeric(const char *s)
{
    char *end = NULL;
    strtod(s, &end);
    return end != s && *end == '\0';
}

char *tide_store_table_format(const tide_store_table *t, int max_cell_chars, bool with_count)
{
    char *text = NULL;
    size_t len = 0;
    if (!t)
        return NULL;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    int n = t->num_columns, max = max_cell_chars > 0 ? max_cell_chars : 1;
    int *width = calloc((size_t)(n ? n : 1), sizeof *width);
    bool *numeric = calloc((size_t)(n ? n : 1), sizeof *numeric);
    for (int c = 0; width && numeric && c < n; c++) {
        int w = utf8_chars(t->columns[c]);
        width[c] = w < max ? w : max;
        int numbers = 0, others = 0;
        for (int row = 0; row < t->num_rows; row++) {
            const char *cell = t->cells[row * n + c];
            int cw = utf8_chars(cell);
            width[c] = cw > width[c] ? (cw < max ? cw : max) : width[c];
            if (t->nulls[row * n + c])
                continue;
            if (looks_numeric(cell))
                numbers++;
            else
                others++;
        }
        numeric[c] = numbers > 0 && others == 0;
    }
    for (int row = -1; width && numeric && n > 0 && row < t->num_rows; row++)
        for (int c = 0; c < n; c++) {
            const char *cell = row < 0 ? t->columns[c] : t->cells[row * n + c];
            bool last = c == n - 1;
            put_cell(out, cell, max, last && !numeric[c] ? 0 : width[c], numeric[c]);
            fputs(last ? "\n" : "  ", out);
        }
    if (with_count && t->truncated)
        fprintf(out, "(first %d of more rows)\n", t->num_rows);
    else if (with_count)
        fprintf(out, "(%d row%s)\n", t->num_rows, t->num_rows == 1 ? "" : "s");
    bool ok = width && numeric;
    free(width);
    free(numeric);
    if (fclose(out) != 0 || !ok) {
        free(text);
        return NULL;
    }
    return text;
}
