/* log_commands.c — the ':' commands over the run log (docs/run-log.md): :runs, :run, :tensor, :sql
 * (read-only queries through store/query.c), and the logging policy: :trace, :watch, :unwatch, :prune,
 * :log. commands.c holds their table entries (names, usage, help) and dispatches to the handlers
 * declared in commands.h. Every one fails with a clear message when the REPL runs without a log.
 *
 * It also tells the user what the log could not record (tide_store_health): a warning on stderr as
 * soon as a run ends after a loss (then at most every LOG_WARN_EVERY_NS while losses go on), after
 * every entry (at the prompt, after committing the log: before the next prompt), a summary at the end
 * (main.c then makes a script's exit status 3 unless --log-best-effort), and the counts in :log. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "repl.h"
#include "store.h"

#define LOG_CELL_CHARS 40    /* run-log tables clip their cells at this many characters */
#define SQL_MAX_ROWS 100     /* :sql prints at most this many rows */
#define DEFAULT_RUNS 20      /* :runs lists this many runs */
#define SLOWEST_NODES 10     /* :run lists this many of a traced run's nodes */
#define DEFAULT_KEEP_RUNS 100 /* :prune keeps the values of this many runs */
#define LOG_WARN_EVERY_NS (10 * 1000000000LL) /* while losses go on, a warning at most this often */

/* ---------------------------------------------------------------- the run log: shared helpers */

/* The run log's path; NULL (after saying so, and why) when the REPL runs without one. */
static const char *log_path(repl *r)
{
    if (r->store && r->opts.log_path)
        return r->opts.log_path;
    fprintf(stderr, "the run log is off (%s); restart with --log FILE\n",
            r->opts.log_off_reason ? r->opts.log_off_reason : "started with --no-log");
    return NULL;
}

/* ---------------------------------------------------------------- what the log lost */

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Tells the user, in one line on stderr, of what the log lost when something new was lost since the
 * last time; right_now ignores the rate limit (LOG_WARN_EVERY_NS) of repeated warnings. */
static void tell_losses(repl *r, bool right_now)
{
    if (!r->store) /* closed by repl_log_finish: told there */
        return;
    uint64_t events = tide_store_events(r->store);
    if (events == r->log_events_told)
        return;
    int64_t now = monotonic_ns();
    if (!right_now && r->log_events_told != 0 && now - r->log_told_at_ns < LOG_WARN_EVERY_NS)
        return;
    tide_store_health h;
    tide_store_health_get(r->store, &h);
    char *counts = tide_store_health_format(&h);
    fflush(stdout);
    fprintf(stderr, "warning: %s — so far %s (:log shows the counts)\n", h.latest_error,
            counts ? counts : "records lost");
    free(counts);
    r->log_events_told = h.events;
    r->log_told_at_ns = now;
}

void repl_log_flush(repl *r)
{
    tide_error_clear(r->err);
    tide_store_flush(r->store, r->err); /* a failure is in the log's health: told below */
    tide_error_clear(r->err);
    tell_losses(r, true);
}

static void run_ended(void *user, const tide_run_info *run, tide_status status, const char *message,
                      int64_t wall_ns)
{
    (void)run, (void)status, (void)message, (void)wall_ns;
    tell_losses(user, false);
}

tide_status repl_log_watch_start(repl *r, tide_error *err)
{
    tide_observer watcher = {.user = r, .run_ended = run_ended};
    r->log_watcher = tide_engine_add_observer(r->engine, &watcher, err);
    return r->log_watcher > 0 ? TIDE_OK : tide_error_code(err);
}

void repl_log_after_entry(repl *r)
{
    if (!r->store)
        return;
    if (r->opts.interactive)
        repl_log_flush(r);
    else
        tell_losses(r, true);
}

bool repl_log_finish(repl *r)
{
    if (!r->store)
        return false;
    tide_store_health h; /* as the close left it: its last writes (the runs' final statuses) included */
    tide_store_close_with_health(r->store, &h);
    r->store = NULL;
    if (tide_store_health_ok(&h))
        return false;
    char *counts = tide_store_health_format(&h);
    fflush(stdout);
    fprintf(stderr, "tide: the run log %s is incomplete: %s; the first problem: %s\n", r->opts.log_path,
            counts ? counts : "records lost", h.first_error);
    free(counts);
    r->log_events_told = h.events;
    return true;
}

/* The path of a log to query, after committing what the store has queued, so that a query sees this
 * session's latest runs. A failed flush is reported and the query goes on with what is there. */
static const char *log_for_query(repl *r)
{
    const char *path = log_path(r);
    if (path)
        repl_log_flush(r);
    return path;
}

static bool is_glob(const char *name)
{
    return strpbrk(name, "*?[") != NULL;
}

/* Whether `name` is an entry of the watched set (as_node: whether an entry, a name or a glob, matches
 * the node called name). */
static bool is_watched(repl *r, const char *name, bool as_node)
{
    char **watched = tide_store_watched(r->store, NULL);
    bool found = false;
    for (int i = 0; watched && watched[i]; i++)
        found = found || strcmp(watched[i], name) == 0 ||
                (as_node && is_glob(watched[i]) && fnmatch(watched[i], name, 0) == 0);
    tide_store_names_free(watched);
    return found;
}

/* A whole number in [min, max] (a size with K, M or G for KiB, MiB, GiB when units). */
static bool parse_number(const char *word, int64_t min, int64_t max, bool units, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(word, &end, 10);
    if (end == word || errno)
        return false;
    int shift = 0;
    if (units && *end) {
        const char *suffixes = "KMG";
        const char *at = strchr(suffixes, toupper((unsigned char)*end));
        shift = at ? 10 * (int)(at - suffixes + 1) : -1;
        end += at ? 1 : 0;
        if (at && (*end == 'i' || *end == 'I'))
            end++;
        if (at && (*end == 'B' || *end == 'b'))
            end++;
    }
    if (*end || shift < 0 || v > (max >> shift) || v < min)
        return false;
    *out = (int64_t)v << shift;
    return *out >= min && *out <= max;
}

/* "1.5 MiB" */
static void format_bytes(double bytes, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* Prints a query's table (cells clipped at cell_chars characters) with its "(N rows)" line replaced
 * by `footer` when footer is not NULL (by nothing when it is ""). */
static void print_table_clipped(const tide_store_table *t, const char *footer, int cell_chars)
{
    char *text = tide_store_table_format(t, cell_chars, footer == NULL);
    if (!text) {
        fputs("out of memory formatting the table\n", stderr);
        return;
    }
    fputs(text, stdout);
    if (footer && footer[0])
        puts(footer);
    free(text);
}

static void print_table(const tide_store_table *t, const char *footer)
{
    print_table_clipped(t, footer, LOG_CELL_CHARS);
}

/* The cell of column `name` in row 0 ("" when absent). */
static const char *cell(const tide_store_table *t, const char *name)
{
    for (int c = 0; c < tide_store_table_num_columns(t); c++)
        if (strcmp(tide_store_table_column(t, c), name) == 0)
            return tide_store_table_cell(t, 0, c) ? tide_store_table_cell(t, 0, c) : "";
    return "";
}

/* ---------------------------------------------------------------- :runs, :run, :sql */

repl_result repl_cmd_runs(repl *r, int argc, char **argv)
{
    int64_t n = DEFAULT_RUNS;
    const char *path = log_for_query(r);
    if (!path)
        return REPL_FAILED;
    if (argc > 1 && !parse_number(argv[1], 1, 1000000, false, &n)) {
        fprintf(stderr, ":runs N: N is how many runs to list (1 or more), not '%s'\n", argv[1]);
        return REPL_FAILED;
    }
    tide_error_clear(r->err);
    tide_store_table *t = tide_store_query_runs(path, (int)n, r->err);
    tide_store_table *count = t && tide_store_table_truncated(t)
                                  ? tide_store_query_named(path, TIDE_STORE_Q_RUN_COUNT, NULL, 0, 1, r->err) : NULL;
    if (!t || (tide_store_table_truncated(t) && !count)) {
        fprintf(stderr, ":runs: %s\n", tide_error_message(r->err));
        tide_store_table_free(t);
        return REPL_FAILED;
    }
    int rows = tide_store_table_num_rows(t);
    char footer[128];
    if (tide_store_table_truncated(t))
        snprintf(footer, sizeof footer, "(the last %d of %s runs; :runs N lists more, :run ID shows one)", rows,
                 tide_store_table_cell(count, 0, 0));
    else
        snprintf(footer, sizeof footer, "(%d run%s; :run ID shows one)", rows, rows == 1 ? "" : "s");
    if (rows == 0)
        printf("no runs logged yet in %s: every run() is logged\n", path);
    else
        print_table(t, footer);
    tide_store_table_free(count);
    tide_store_table_free(t);
    return REPL_DONE;
}

void repl_print_capture(repl *r)
{
    tide_capture_status st;
    tide_session_capture_status(r->session, &st);
    static const char *const how[] = {"eager", "captured", "replayed"};
    printf("  capture: the session's last step was %s", how[st.last]);
    if (st.last == TIDE_STEP_EAGER && st.why[0])
        printf(" (%s)", st.why);
    if (st.has_graph) {
        char bytes[32];
        format_bytes((double)st.held_bytes, bytes, sizeof bytes);
        printf("; a graph on %s holds %s, %lld replays so far", st.device, bytes, (long long)st.replays);
    }
    putchar('\n');
}

/* The lines of :run above the slowest nodes. */
static void print_run(const tide_store_table *t)
{
    const char *session = cell(t, "session");
    printf("run %s: step %s of session %s, %s", cell(t, "id"), cell(t, "step"),
           strcmp(session, "NULL") == 0 ? "(not logged)" : session, cell(t, "status"));
    if (strcmp(cell(t, "wall_ms"), "NULL") != 0)
        printf(", %s ms", cell(t, "wall_ms"));
    printf(", started %s\n", cell(t, "started"));
    if (strcmp(cell(t, "error"), "NULL") != 0)
        printf("  error: %s\n", cell(t, "error"));
    printf("  fetches %s, feeds %s, targets %s\n", cell(t, "fetches"), cell(t, "feeds"), cell(t, "targets"));
    printf("  tensors logged: %s\n", cell(t, "tensors"));
}

/* The run's peak memory (runs.peak_bytes: NULL in files older than schema 8, or when its end was lost). */
static void print_peak(const char *path, const char *id)
{
    const char *params[] = {id};
    tide_store_table *t = tide_store_query_named(path, TIDE_STORE_Q_RUN_BRIEF, params, 1, 1, NULL);
    if (t && tide_store_table_num_rows(t) > 0 && !tide_store_table_is_null(t, 0, 4)) {
        char bytes[32];
        format_bytes(strtod(tide_store_table_cell(t, 0, 4), NULL), bytes, sizeof bytes);
        printf("  peak memory: %s (tensors its kernels allocated, live at once)\n", bytes);
    }
    tide_store_table_free(t);
}

/* The run's memory per device (runs.device_memory: schema 10 on, not when its end was lost), one line. */
static void print_device_memory(const char *path, const char *id)
{
    const char *params[] = {id};
    tide_store_table *t = tide_store_query_named(path, TIDE_STORE_Q_RUN_DEVICE_MEMORY, params, 1, 4096, NULL);
    int n = t ? tide_store_table_num_rows(t) : 0;
    for (int i = 0; i < n; i++) {
        char peak[32], held[32];
        format_bytes(strtod(tide_store_table_cell(t, i, 1), NULL), peak, sizeof peak);
        format_bytes(strtod(tide_store_table_cell(t, i, 2), NULL), held, sizeof held);
        printf("%s%s peak %s, held %s", i ? "; " : "  memory per device (its kernels' peak; held at the end): ",
               tide_store_table_cell(t, i, 0), peak, held);
    }
    if (n)
        putchar('\n');
    tide_store_table_free(t);
}

/* A traced run's lanes: each executor thread and device stream, what ran there and how long it was busy. */
static void print_lanes(const char *path, const char *id)
{
    const char *params[] = {id};
    tide_store_table *t = tide_store_query_named(path, TIDE_STORE_Q_RUN_LANES, params, 1, 4096, NULL);
    int n = t ? tide_store_table_num_rows(t) : 0;
    if (n)
        printf("  lanes (executor threads, device streams):\n");
    for (int i = 0; i < n; i++) {
        double busy_us = strtod(tide_store_table_cell(t, i, 2), NULL) / 1e3;
        double span_us = (strtod(tide_store_table_cell(t, i, 4), NULL) - strtod(tide_store_table_cell(t, i, 3), NULL)) / 1e3;
        printf("    %-24s %6s executions, busy %.1f us of %.1f us\n", tide_store_table_cell(t, i, 0),
               tide_store_table_cell(t, i, 1), busy_us, span_us);
    }
    tide_store_table_free(t);
}

repl_result repl_cmd_run(repl *r, int argc, char **argv)
{
    int64_t id = 0;
    const char *path = log_for_query(r);
    if (!path)
        return REPL_FAILED;
    if (argc > 1 && !parse_number(argv[1], 1, INT64_MAX, false, &id)) {
        fprintf(stderr, ":run ID: ID is a run's id as :runs lists it, not '%s'\n", argv[1]);
        return REPL_FAILED;
    }
    tide_error_clear(r->err);
    tide_store_table *t = tide_store_query_run(path, id, r->err);
    if (!t) {
        fprintf(stderr, ":run: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    print_run(t);
    if (argc == 1) /* the latest run: how the session's last step ran */
        repl_print_capture(r);
    int64_t run = strtoll(cell(t, "id"), NULL, 10);
    print_peak(path, cell(t, "id"));
    print_device_memory(path, cell(t, "id"));
    bool traced = strcmp(cell(t, "traced"), "1") == 0;
    tide_store_table *slowest = traced ? tide_store_query_slowest_nodes(path, run, SLOWEST_NODES, r->err) : NULL;
    if (!traced)
        printf("  not traced: no node timings (:trace on traces every run; run(..., {trace=true}) one)\n");
    else if (!slowest)
        fprintf(stderr, ":run: %s\n", tide_error_message(r->err));
    else if (tide_store_table_num_rows(slowest) == 0)
        printf("  traced, but no node timings were logged (no node ran, or :log counts them as dropped)\n");
    else {
        print_lanes(path, cell(t, "id"));
        printf("  traced: %s nodes timed; the slowest:\n", cell(t, "nodes_timed"));
        print_table(slowest, "");
    }
    bool ok = !traced || slowest;
    tide_store_table_free(slowest);
    tide_store_table_free(t);
    return ok ? REPL_DONE : REPL_FAILED;
}

/* ":sql -w N QUERY" (or --width N): the cell width, and *query after the option; LOG_CELL_CHARS
 * without it, INT_MAX for 0 (cells whole). -1 for a bad option. */
static int sql_cell_width(const char *line, const char **query)
{
    *query = line;
    size_t opt = strncmp(line, "--width", 7) == 0 && isspace((unsigned char)line[7]) ? 7
                 : strncmp(line, "-w", 2) == 0 && (isspace((unsigned char)line[2]) || isdigit((unsigned char)line[2])) ? 2
                                                                                                                   : 0;
    if (!opt)
        return LOG_CELL_CHARS;
    char *end = NULL;
    errno = 0;
    long width = strtol(line + opt, &end, 10);
    if (end == line + opt || errno || width < 0 || width > 100000 || !isspace((unsigned char)*end))
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    *query = end;
    return width == 0 ? INT_MAX : (int)width;
}

repl_result repl_cmd_sql(repl *r, int argc, char **argv)
{
    (void)argc;
    const char *query;
    int width = sql_cell_width(argv[1], &query);
    if (width < 0 || !*query) {
        fputs("usage: :sql [-w N] QUERY (-w N: cells up to N characters, 0: whole; the default is 40)\n", stderr);
        return REPL_FAILED;
    }
    const char *path = log_for_query(r);
    if (!path)
        return REPL_FAILED;
    tide_error_clear(r->err);
    tide_store_table *t = tide_store_query_cancellable(path, query, SQL_MAX_ROWS, &r->interrupted, r->err);
    if (!t) {
        fprintf(stderr, "%s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    print_table_clipped(t, NULL, width);
    tide_store_table_free(t);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :tensor */

/* "name" or "name:k" -> name (malloc'd) and output; false for a bad index. */
static bool split_output(const char *word, char **name, int *output)
{
    const char *colon = strrchr(word, ':');
    int64_t k = 0;
    *output = 0;
    if (colon && colon != word && colon[1] && parse_number(colon + 1, 0, INT32_MAX, false, &k)) {
        *output = (int)k;
        *name = strndup(word, (size_t)(colon - word));
    } else if (colon) {
        return false;
    } else {
        *name = strdup(word);
    }
    return *name != NULL;
}

/* The histogram as one line of block characters (empty bins blank) between the range's ends. */
static void print_histogram(const tide_store_tensor *t)
{
    static const char *const blocks[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    int64_t top = 0;
    for (int b = 0; b < t->num_bins; b++)
        top = t->histogram[b] > top ? t->histogram[b] : top;
    if (!t->has_stats || top == 0)
        return;
    printf("  histogram  %.6g |", t->min);
    for (int b = 0; b < t->num_bins; b++) {
        int64_t c = t->histogram[b];
        fputs(c == 0 ? " " : blocks[(c * 8 + top - 1) / top - 1], stdout);
    }
    printf("| %.6g  (%d bins; the fullest holds %" PRId64 ")\n", t->max, t->num_bins, top);
}

static void print_logged_tensor(const tide_store_tensor *t, int64_t asked)
{
    char shape[TIDE_SHAPE_STR_MAX];
    tide_shape_format(&t->shape, shape, sizeof shape);
    printf("%s:%d at step %" PRId64, t->node, t->output, t->step);
    if (asked >= 0 && asked != t->step)
        printf(" (the latest logged at or before step %" PRId64 ")", asked);
    printf(", run %" PRId64 " of session %" PRId64 ": %s %s\n", t->run, t->session, t->dtype_name, shape);
    char *text = t->value ? tide_tensor_format(t->value, 1000, 3) : NULL;
    if (text)
        printf("%s\n", text);
    else if (!t->value)
        puts("(value not stored: larger than the value cap, pruned, or a string; statistics below)");
    free(text);
    int64_t n = tide_shape_num_elements(&t->shape);
    printf("  shape %s, dtype %s, %" PRId64 " element%s\n", shape, t->dtype_name, n, n == 1 ? "" : "s");
    if (t->has_stats)
        printf("  min %.6g  max %.6g  mean %.6g  std %.6g\n", t->min, t->max, t->mean, t->std);
    else
        puts("  no finite element: no min, max, mean or std");
    printf("  NaN %" PRId64 "  Inf %" PRId64 "\n", t->nan_count, t->inf_count);
    print_histogram(t);
}

repl_result repl_cmd_tensor(repl *r, int argc, char **argv)
{
    const char *path = log_for_query(r);
    if (!path)
        return REPL_FAILED;
    int64_t step = -1;
    if (argc > 2 && !parse_number(argv[2], 0, INT64_MAX, false, &step)) {
        fprintf(stderr, ":tensor NODE STEP: STEP is a step number (0 or more), not '%s'\n", argv[2]);
        return REPL_FAILED;
    }
    char *name = NULL;
    int output = 0;
    if (!split_output(argv[1], &name, &output)) {
        fprintf(stderr, ":tensor: '%s' is not a node name or NAME:OUTPUT\n", argv[1]);
        free(name);
        return REPL_FAILED;
    }
    tide_error_clear(r->err);
    tide_store_tensor *t = tide_store_query_tensor(path, name, output, 0, step, r->err);
    if (t) {
        print_logged_tensor(t, step);
    } else {
        fprintf(stderr, ":tensor: %s", tide_error_message(r->err));
        if (tide_error_code(r->err) == TIDE_NOT_FOUND && !is_watched(r, name, true))
            fprintf(stderr, "; :watch %s logs it from the next run on", name);
        fputc('\n', stderr);
    }
    tide_store_tensor_free(t);
    free(name);
    return t ? REPL_DONE : REPL_FAILED;
}

/* ---------------------------------------------------------------- :trace, :watch, :unwatch */

static void print_trace_policy(int64_t every)
{
    if (every == 0)
        puts("trace: only the runs traced by the caller (run(..., {trace=true})) record per-node timings");
    else if (every == 1)
        puts("trace: every run records per-node timings (:trace off stops)");
    else
        printf("trace: steps that are multiples of %" PRId64 " (0, %" PRId64 ", ...) record "
               "per-node timings, and runs traced by the caller\n", every, every);
}

repl_result repl_cmd_trace(repl *r, int argc, char **argv)
{
    if (!log_path(r))
        return REPL_FAILED;
    int64_t every = -1;
    if (argc == 1)
        every = tide_store_trace_every(r->store);
    else if (argc == 2 && strcmp(argv[1], "on") == 0)
        every = 1;
    else if (argc == 2 && strcmp(argv[1], "off") == 0)
        every = 0;
    else if (argc == 3 && strcmp(argv[1], "every") == 0 && !parse_number(argv[2], 0, INT64_MAX, false, &every))
        every = -1;
    if (every < 0) {
        fputs("usage: :trace [on|off|every N] (on: every run; off: only run(..., {trace=true}); every N: "
              "steps 0, N, 2N...)\n", stderr);
        return REPL_FAILED;
    }
    if (argc > 1)
        tide_store_set_trace_every(r->store, every);
    print_trace_policy(every);
    return REPL_DONE;
}

/* Prints the watched names to out. */
static void print_watched(repl *r, FILE *out)
{
    int n = 0;
    char **names = tide_store_watched(r->store, &n);
    if (!names)
        fputs("out of memory listing the watched nodes\n", out);
    else if (n == 0)
        fputs("no node is watched (:watch NODE logs its value and statistics at every run)\n", out);
    else
        fprintf(out, "watched (%d):", n);
    for (int i = 0; i < n; i++)
        fprintf(out, " %s", names[i]);
    if (n > 0)
        fputc('\n', out);
    tide_store_names_free(names);
}

repl_result repl_cmd_watch(repl *r, int argc, char **argv)
{
    if (!log_path(r))
        return REPL_FAILED;
    if (argc == 1) {
        print_watched(r, stdout);
        return REPL_DONE;
    }
    const char *name = argv[1];
    if (strchr(name, ':')) {
        fprintf(stderr, ":watch takes a node name (every output of the node is logged), not '%s'\n", name);
        return REPL_FAILED;
    }
    tide_error_clear(r->err);
    if (tide_store_watch(r->store, name, r->err) != TIDE_OK) {
        fprintf(stderr, ":watch: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    const tide_node *n = tide_graph_node(r->graph, name);
    if (is_glob(name)) {
        int matched = 0, total = tide_graph_num_nodes(r->graph);
        for (int i = 0; i < total; i++)
            matched += fnmatch(name, tide_node_name(tide_graph_node_at(r->graph, i)), 0) == 0;
        if (matched == 0)
            fprintf(stderr, "warning: no node matches '%s' yet; nodes that match it are logged once they run\n",
                    name);
        else
            printf("'%s' matches %d node%s now (and nodes added later that match it)\n", name, matched,
                   matched == 1 ? "" : "s");
    } else if (!n)
        fprintf(stderr, "warning: there is no node '%s' yet; it is watched anyway and logged once a node of "
                        "that name runs\n", name);
    else if (strcmp(tide_node_op(n), "Placeholder") == 0)
        fprintf(stderr, "note: a fed placeholder is not computed, so '%s' logs nothing; watch a node that "
                        "consumes it\n", name);
    printf("watching %s: its value and statistics are logged at every run that computes it (:tensor %s "
           "[STEP] shows them)\n", name, name);
    return REPL_DONE;
}

repl_result repl_cmd_unwatch(repl *r, int argc, char **argv)
{
    if (!log_path(r))
        return REPL_FAILED;
    if (argc == 1) {
        print_watched(r, stdout);
        return REPL_DONE;
    }
    if (!is_watched(r, argv[1], false)) {
        fprintf(stderr, "'%s' is not watched; ", argv[1]);
        print_watched(r, stderr);
        return REPL_FAILED;
    }
    tide_store_unwatch(r->store, argv[1]);
    printf("stopped watching %s (what was logged stays in the log)\n", argv[1]);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :prune, :log */

repl_result repl_cmd_prune(repl *r, int argc, char **argv)
{
    if (!log_path(r))
        return REPL_FAILED;
    int64_t keep = DEFAULT_KEEP_RUNS, pruned = 0;
    if (argc > 1 && !parse_number(argv[1], 0, INT64_MAX, false, &keep)) {
        fprintf(stderr, ":prune KEEP: KEEP is how many of the latest runs keep their values (0 or more), not "
                        "'%s'\n", argv[1]);
        return REPL_FAILED;
    }
    tide_error_clear(r->err);
    if (tide_store_prune_values(r->store, keep, &pruned, r->err) != TIDE_OK) {
        fprintf(stderr, ":prune: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    printf("cleared %" PRId64 " stored value%s: the last %" PRId64 " run%s keep theirs; statistics stay\n", pruned,
           pruned == 1 ? "" : "s", keep, keep == 1 ? "" : "s");
    return REPL_DONE;
}

/* The bytes of the log file and its WAL. */
static double log_file_bytes(const char *path)
{
    struct stat st;
    double bytes = stat(path, &st) == 0 ? (double)st.st_size : 0;
    size_t n = strlen(path) + 8;
    char *wal = malloc(n);
    if (wal) {
        snprintf(wal, n, "%s-wal", path);
        bytes += stat(wal, &st) == 0 ? (double)st.st_size : 0;
    }
    free(wal);
    return bytes;
}

static void print_log_policy(repl *r)
{
    char cap[32];
    size_t bytes = tide_store_value_cap(r->store);
    format_bytes((double)bytes, cap, sizeof cap);
    fputs("  ", stdout);
    print_trace_policy(tide_store_trace_every(r->store));
    if (bytes == 0)
        puts("  values: none stored (statistics only; :log cap BYTES stores values up to that size)");
    else
        printf("  values: stored up to %s each (:log cap BYTES changes it)\n", cap);
    fputs("  ", stdout);
    print_watched(r, stdout);
}

/* What the log lost, with the first and latest problems. */
static void print_log_health(repl *r)
{
    tide_store_health h;
    tide_store_health_get(r->store, &h);
    if (tide_store_health_ok(&h)) {
        puts("  lost: nothing (every record so far is in the file)");
        return;
    }
    char *counts = tide_store_health_format(&h);
    printf("  lost: %s\n", counts ? counts : "(out of memory)");
    free(counts);
    printf("  first problem: %s\n", h.first_error);
    if (strcmp(h.first_error, h.latest_error) != 0)
        printf("  latest problem: %s\n", h.latest_error);
    r->log_events_told = h.events;
}

repl_result repl_cmd_log(repl *r, int argc, char **argv)
{
    const char *path = log_for_query(r);
    if (!path)
        return REPL_FAILED;
    int64_t cap = 0;
    if (argc > 1) {
        if (argc != 3 || strcmp(argv[1], "cap") != 0 || !parse_number(argv[2], 0, INT64_MAX, true, &cap)) {
            fputs("usage: :log [cap BYTES] (BYTES: a size such as 0, 4096, 64K or 1M)\n", stderr);
            return REPL_FAILED;
        }
        tide_store_set_value_cap(r->store, (size_t)cap);
        char text[32];
        format_bytes((double)cap, text, sizeof text);
        /* The store reads the cap as it logs each tensor: from now on, the rest of a stopped run and
         * :dump included. */
        if (cap == 0)
            puts("values: none stored from now on (statistics only; also for :dump and the rest of a stopped run)");
        else
            printf("values: stored up to %s each from now on (also for :dump and the rest of a stopped run)\n", text);
        return REPL_DONE;
    }
    tide_error_clear(r->err);
    tide_store_table *t = tide_store_query_totals(path, r->err);
    if (!t) {
        fprintf(stderr, ":log: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    char size[32], values[32], *real = realpath(path, NULL);
    format_bytes(log_file_bytes(path), size, sizeof size);
    format_bytes(strtod(cell(t, "value_bytes"), NULL), values, sizeof values);
    printf("run log: %s (%s with its WAL)\n", real ? real : path, size);
    printf("  sessions %s, runs %s (%s traced, %s failed), node timings %s\n", cell(t, "sessions"), cell(t, "runs"),
           cell(t, "traced_runs"), cell(t, "failed_runs"), cell(t, "node_timings"));
    printf("  tensors %s (%s values stored, %s), summaries %s\n", cell(t, "tensors"), cell(t, "stored_values"), values,
           cell(t, "summaries"));
    print_log_policy(r);
    print_log_health(r);
    free(real);
    tide_store_table_free(t);
    return REPL_DONE;
}

