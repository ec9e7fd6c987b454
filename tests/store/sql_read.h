/* sql_read.h — the store tests read the run log as a user would, with a plain SQLite connection: the
 * first column of a query's first row as an integer, a double or text. Header-only. */
#ifndef TIDE_TEST_SQL_READ_H
#define TIDE_TEST_SQL_READ_H

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first column of the first row as an integer (-12345 when there is no row or on error; an error
 * is printed). */
static inline int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -12345;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fprintf(stderr, "query failed: %s: %s\n", sql, sqlite3_errmsg(db));
    else if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The same as a double (NaN for NULL; -12345 when there is no row or on error). */
static inline double q_double(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    double v = -12345;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The same as text, malloc'd: "<null>" for NULL, "<none>" when there is no row, "<error: ...>" when the
 * query is refused. */
static inline char *q_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        char error[512];
        snprintf(error, sizeof error, "<error: %s>", sqlite3_errmsg(db));
        v = strdup(error);
    } else if (sqlite3_step(st) == SQLITE_ROW)
        v = strdup(sqlite3_column_type(st, 0) == SQLITE_NULL ? "<null>" : (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v ? v : strdup("<none>");
}

#endif
