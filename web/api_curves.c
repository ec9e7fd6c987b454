/* api_curves.c — the endpoints of curves over steps: /api/scalars (the curves a session has),
 * /api/scalar (one curve: a summary tag, or a scalar tensor in the runs of one signature) and
 * /api/tensor/history (a statistic of a logged tensor across steps). docs/web.md has the JSON shapes.
 *
 * A curve comes from the log as one row per run (store's named queries) and is bounded here: past
 * max_points points (default 1000, at most 10,000) it is downsampled. The rule: the first and the last
 * points stay; the points between are cut into (max_points - 2) / 2 buckets of consecutive points, and
 * each bucket keeps its smallest and its largest value, in step order (a spike survives; NaN counts as
 * larger than any number, so a bucket with a NaN keeps it; a bucket of unknown values keeps its first).
 * Values are numbers, or the strings "NaN", "Infinity", "-Infinity" (JSON has no such numbers), or null
 * when the log does not know them. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_internal.h"

#define CURVE_DEFAULT_POINTS 1000
#define CURVE_MAX_POINTS 10000
#define CURVE_MAX_ROWS (1 << 24) /* rows read from the log for one curve */

typedef struct curve_point {
    const char *step, *run, *time; /* the table's text of integers; NULL for SQL NULL */
    double value;
    bool known; /* false: NULL in the log */
} curve_point;

/* A value cell: a number, "Inf", "-Inf" or "NaN" (SQLite's text of a REAL infinity; tide's text of NaN). */
static bool cell_value(const tide_store_table *t, int row, int col, double *v)
{
    const char *c = tide_store_table_cell(t, row, col);
    if (!c || tide_store_table_is_null(t, row, col))
        return false;
    *v = strcmp(c, "NaN") == 0 ? NAN : strcmp(c, "Inf") == 0 ? INFINITY : strcmp(c, "-Inf") == 0 ? -INFINITY
                                                                                                : strtod(c, NULL);
    return true;
}

/* Whether a's value ranks above b's (NaN above every number, unknown below everything). */
static bool ranks_above(const curve_point *a, const curve_point *b)
{
    if (!a->known || !b->known)
        return a->known && !b->known;
    if (isnan(a->value) || isnan(b->value))
        return isnan(a->value) && !isnan(b->value);
    return a->value > b->value;
}

/* Marks the points to keep (at most max, see the top of the file); returns how many. */
static int64_t downsample(const curve_point *p, int64_t n, int64_t max, bool *keep)
{
    if (n <= max) {
        for (int64_t i = 0; i < n; i++)
            keep[i] = true;
        return n;
    }
    memset(keep, 0, (size_t)n * sizeof *keep);
    keep[0] = keep[n - 1] = true;
    int64_t inner = n - 2, buckets = (max - 2) / 2, kept = 2;
    for (int64_t b = 0; b < buckets; b++) {
        int64_t from = 1 + b * inner / buckets, to = 1 + (b + 1) * inner / buckets;
        int64_t lo = from, hi = from;
        for (int64_t i = from + 1; i < to; i++) {
            if (ranks_above(&p[i], &p[hi]))
                hi = i;
            if (p[i].known && (!p[lo].known || ranks_above(&p[lo], &p[i])))
                lo = i;
        }
        if (to > from) {
            kept += !keep[lo] + (hi != lo && !keep[hi]);
            keep[lo] = keep[hi] = true;
        }
    }
    return kept;
}

/* An integer column's text (SQLite's), or null. */
static void write_integer(tide_json *j, const char *text)
{
    if (text)
        tide_json_int(j, strtoll(text, NULL, 10));
    else
        tide_json_null(j);
}

static void write_value(tide_json *j, const curve_point *p)
{
    if (p->known)
        tide_json_double(j, p->value); /* "NaN", "Infinity", "-Infinity" for the non-finite */
    else
        tide_json_null(j);
}

/* Writes "points" (downsampled to max), "total" and "downsampled" from the table's columns step, run,
 * value and, with times, time (ns since the epoch, written as seconds). False when out of memory (j is
 * then failed). */
static bool write_points(tide_json *j, const tide_store_table *t, int step_col, int64_t max, bool times)
{
    int64_t n = tide_store_table_num_rows(t);
    curve_point *p = calloc((size_t)(n ? n : 1), sizeof *p);
    bool *keep = calloc((size_t)(n ? n : 1), sizeof *keep);
    if (!p || !keep) {
        free(p);
        free(keep);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        p[i].step = tide_store_table_is_null(t, (int)i, step_col) ? NULL : tide_store_table_cell(t, (int)i, step_col);
        p[i].run = tide_store_table_is_null(t, (int)i, step_col + 1) ? NULL
                                                                     : tide_store_table_cell(t, (int)i, step_col + 1);
        p[i].known = cell_value(t, (int)i, step_col + 2, &p[i].value);
        p[i].time = tide_store_table_is_null(t, (int)i, step_col + 3) ? NULL
                                                                      : tide_store_table_cell(t, (int)i, step_col + 3);
    }
    int64_t kept = downsample(p, n, max, keep);
    tide_json_key(j, "points");
    tide_json_begin_array(j);
    for (int64_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        tide_json_begin_object(j);
        tide_json_key(j, "step");
        write_integer(j, p[i].step);
        tide_json_key(j, "run");
        write_integer(j, p[i].run);
        tide_json_key(j, "value");
        write_value(j, &p[i]);
        if (times) {
            tide_json_key(j, "time");
            if (p[i].time)
                tide_json_double(j, (double)strtoll(p[i].time, NULL, 10) / 1e9);
            else
                tide_json_null(j);
        }
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
    tide_json_key(j, "total");
    tide_json_int(j, n);
    tide_json_key(j, "downsampled");
    tide_json_bool(j, kept < n);
    free(p);
    free(keep);
    return true;
}

/* The builder's document as the reply, or 500 when a step ran out of memory. */
static void reply_curve(web_reply *out, tide_json *j, bool ok)
{
    if (ok) {
        web_reply_builder(out, j);
        return;
    }
    tide_json_free(j);
    web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
}

/* max_points, and time=1: each point also says when its run started (for an x axis by wall time). */
static bool curve_args(web_request *rq, web_reply *out, int64_t *max, bool *times)
{
    int64_t t;
    if (!web_arg_int(rq, out, "max_points", CURVE_DEFAULT_POINTS, 4, CURVE_MAX_POINTS, max) ||
        !web_arg_int(rq, out, "time", 0, 0, 1, &t))
        return false;
    *times = t == 1;
    return true;
}

void web_api_scalars(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!web_arg_session(rq, out, &session))
        return;
    char b[24];
    const char *p[] = {web_itoa(b, session)};
    web_query_reply(rq, out, TIDE_STORE_Q_SCALARS_JSON, p, 1, "no scalars");
}

void web_api_scalar(web_request *rq, web_reply *out)
{
    static const char *const kinds[] = {"summary", "watched", "fetched", NULL};
    const char *tag, *kind;
    int64_t session, max, like;
    bool times;
    if (!web_arg_required(rq, out, "tag", &tag) || !web_arg_choice(rq, out, "kind", kinds, &kind) ||
        !web_arg_session(rq, out, &session) || !curve_args(rq, out, &max, &times) ||
        !web_arg_run(rq, out, "signature_run", false, &like))
        return;
    char b[2][24];
    const char *p[] = {web_itoa(b[0], session), tag, kind, web_itoa(b[1], like)};
    tide_store_table *t = web_query(rq, out, TIDE_STORE_Q_SCALAR_POINTS, p, 4, CURVE_MAX_ROWS);
    if (!t)
        return;
    if (tide_store_table_num_rows(t) == 0) {
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no scalar '%.100s' in session %" PRId64 "%s", tag, session,
                        like ? " in runs like that run" : "");
        tide_store_table_free(t);
        return;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "tag");
    tide_json_string(&j, tag);
    tide_json_key(&j, "kind");
    tide_json_string(&j, tide_store_table_cell(t, 0, 0));
    tide_json_key(&j, "signature_run");
    write_integer(&j, tide_store_table_is_null(t, 0, 5) ? NULL : tide_store_table_cell(t, 0, 5));
    tide_json_key(&j, "signature");
    tide_json_string(&j, tide_store_table_is_null(t, 0, 6) ? NULL : tide_store_table_cell(t, 0, 6));
    bool ok = write_points(&j, t, 1, max, times);
    tide_json_end_object(&j);
    tide_store_table_free(t);
    reply_curve(out, &j, ok);
}

void web_api_tensor_history(web_request *rq, web_reply *out)
{
    static const char *const stats[] = {"min", "max", "mean", "std", "nan_count", "inf_count", NULL};
    const char *node, *stat;
    int64_t output, session, max;
    bool times;
    if (!web_arg_required(rq, out, "node", &node) || !web_arg_int(rq, out, "output", 0, 0, 1 << 20, &output) ||
        !web_arg_int(rq, out, "session", 0, 0, INT64_MAX, &session) ||
        !web_arg_choice(rq, out, "stat", stats, &stat) || !curve_args(rq, out, &max, &times))
        return;
    if (!stat)
        stat = "mean";
    char b[2][24];
    const char *p[] = {node, web_itoa(b[0], output), web_itoa(b[1], session), stat};
    tide_store_table *t = web_tensor_rows(rq, out, TIDE_STORE_Q_TENSOR_HISTORY, p, 4, node, output, session);
    if (!t)
        return;
    tide_json j;
    tide_json_init(&j);
    web_tensor_doc_begin(&j, node, output, t);
    tide_json_key(&j, "stat");
    tide_json_string(&j, stat);
    bool ok = write_points(&j, t, 1, max, times);
    tide_json_end_object(&j);
    tide_store_table_free(t);
    reply_curve(out, &j, ok);
}
