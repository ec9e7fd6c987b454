/* test_queries.c — the run log's named queries (store/queries.c, store_queries.h): every id on a log
 * written by a real engine and store (a session on two devices, its graph, a traced run and plain ones,
 * a watched scalar fed finite and non-finite values, a ScalarSummary of it), the short device names (SQL
 * short_device()), non-finite values kept in the log and read back (a NaN summary is stored, not NULL),
 * curves per run signature (the fed shapes recorded), the device streams' lanes and the memory per device
 * of a run on the simulated accelerator, the statements for an older schema, and the errors (an unknown
 * id, a wrong number of parameters, a missing file). */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"
#include "store/logged_session.h"

#define NUM_RUNS 5
static const float fed[NUM_RUNS] = {1.5f, INFINITY, -INFINITY, NAN, 2.5f};
static const char *const fed_text[NUM_RUNS] = {"1.5", "Inf", "-Inf", "NaN", "2.5"};

typedef struct fixture {
    logged_session log;
    int64_t graph_id;
} fixture;

/* An engine of `threads` threads, `cpu_devices` CPU devices (0: the default) and `sim_devices` simulated
 * accelerators. */
static tide_engine_options engine_options(int threads, int cpu_devices, int sim_devices)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = threads;
    o.num_cpu_devices = cpu_devices;
    o.num_sim_devices = sim_devices;
    return o;
}

/* One run of l's session feeding x with value (released) and fetching out; returns out's value. */
static tide_tensor *run_once(logged_session *l, tide_node *x, tide_tensor *value, tide_node *out, bool trace)
{
    tide_feed feed = {{x, 0}, value};
    tide_output fetch = {out, 0};
    tide_tensor *got = NULL;
    tide_run_options ro = {.trace = trace};
    tide_error *err = tide_error_new();
    if (tide_session_run(l->session, &ro, &feed, 1, &fetch, 1, &got, NULL, 0, NULL, err) != TIDE_OK)
        fprintf(stderr, "\nthe run failed: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(got);
    tide_error_free(err);
    tide_tensor_release(value);
    return got;
}

/* s: a float32 scalar placeholder; d = Identity(s), watched, on /cpu:1; summ = ScalarSummary(s, tag
 * "s_tag"). Run i feeds fed[i] and fetches summ and d; run 1 (the first) is traced. */
static void fixture_new(fixture *f)
{
    tide_engine_options o = engine_options(2, 2, 0);
    logged_session_begin(&f->log, "tide-queries", &o);
    tide_graph *g = f->log.g;
    tide_node *s = gu_placeholder(g, "s", TIDE_FLOAT32, 0, NULL);
    tide_graph_push_device(g, "/cpu:1");
    tide_node *d = gu_op(g, "Identity", "d", 1, &s);
    tide_graph_pop_device(g);
    tide_node_builder *b = tide_node_builder_new(g, "ScalarSummary", "summ");
    tide_node_builder_add_input(b, (tide_output){s, 0});
    tide_attrs_set_string(tide_node_builder_attrs(b), "tag", "s_tag");
    tide_node *summ = gu_finish(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(summ);
    logged_session_open(&f->log, NULL, "queries");
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_store_watch(f->log.store, "d", err), TIDE_OK);
    for (int i = 0; i < NUM_RUNS; i++) {
        tide_tensor *v = th_f32(0, NULL, &fed[i]);
        tide_feed feed = {{s, 0}, v};
        tide_output outs[2] = {{summ, 0}, {d, 0}};
        tide_tensor *got[2] = {NULL, NULL};
        tide_run_options ro = {.trace = i == 0};
        CU_ASSERT_EQUAL(tide_session_run(f->log.session, &ro, &feed, 1, outs, 2, got, NULL, 0, NULL, err), TIDE_OK);
        tide_tensor_release(got[0]);
        tide_tensor_release(got[1]);
        tide_tensor_release(v);
    }
    f->graph_id = tide_store_log_graph(f->log.store, f->log.session, err);
    CU_ASSERT(f->graph_id > 0);
    CU_ASSERT_EQUAL(tide_store_flush(f->log.store, err), TIDE_OK);
    tide_error_free(err);
}

/* A named query that must succeed. */
static tide_store_table *named(tide_store_query_id q, const char *const *params, int n)
{
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query_named(db_path, q, params, n, 1000, err);
    if (!t)
        fprintf(stderr, "\n%s failed: %s\n", tide_store_query_name(q), tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    tide_error_free(err);
    return t;
}

/* The one cell of a one-row query ("(none)" when there is no row, "NULL" for SQL NULL), copied. */
static char *named_cell(tide_store_query_id q, const char *const *params, int n, int col)
{
    tide_store_table *t = named(q, params, n);
    const char *c = tide_store_table_num_rows(t) ? tide_store_table_cell(t, 0, col) : "(none)";
    char *copy = strdup(c ? c : "(no column)");
    tide_store_table_free(t);
    return copy;
}

static void assert_cell_impl(tide_store_query_id q, const char *const *params, int n, int col, const char *want,
                             int line)
{
    char *got = named_cell(q, params, n, col);
    const char *shown = got ? got : "(out of memory)";
    if (strcmp(shown, want) != 0)
        fprintf(stderr, "\n%s:%d: %s: '%s', want '%s'\n", __FILE__, line, tide_store_query_name(q), shown, want);
    CU_ASSERT_STRING_EQUAL(shown, want);
    free(got);
}
#define ASSERT_CELL(q, params, n, col, want) assert_cell_impl(q, params, n, col, want, __LINE__)

static bool has(const char *haystack, const char *needle)
{
    bool ok = haystack && strstr(haystack, needle);
    if (!ok)
        fprintf(stderr, "\n  '%.300s' does not contain '%s'\n", haystack ? haystack : "(null)", needle);
    return ok;
}

/* The ids, sessions and runs. */
static void test_resolving_ids(void)
{
    fixture f;
    fixture_new(&f);
    const char *one[] = {"1"}, *none[] = {"99"};
    char graph[24];
    snprintf(graph, sizeof graph, "%lld", (long long)f.graph_id);
    ASSERT_CELL(TIDE_STORE_Q_LATEST_SESSION, NULL, 0, 0, "1");
    ASSERT_CELL(TIDE_STORE_Q_LATEST_GRAPH_SESSION, NULL, 0, 0, "1");
    ASSERT_CELL(TIDE_STORE_Q_SESSION_EXISTS, one, 1, 0, "1");
    ASSERT_CELL(TIDE_STORE_Q_SESSION_EXISTS, none, 1, 0, "(none)");
    ASSERT_CELL(TIDE_STORE_Q_SESSION_IDS, NULL, 0, 0, "1");
    ASSERT_CELL(TIDE_STORE_Q_RUN_BRIEF, one, 1, 0, "1"); /* session */
    ASSERT_CELL(TIDE_STORE_Q_RUN_BRIEF, one, 1, 3, "1"); /* traced */
    const char *two[] = {"2"};
    ASSERT_CELL(TIDE_STORE_Q_RUN_BRIEF, two, 1, 3, "0");
    ASSERT_CELL(TIDE_STORE_Q_RUN_BRIEF, none, 1, 0, "(none)");
    const char *latest[] = {"1", "0"};
    ASSERT_CELL(TIDE_STORE_Q_SESSION_GRAPH, latest, 2, 0, graph);
    const char *bad_version[] = {"1", "987654"};
    ASSERT_CELL(TIDE_STORE_Q_SESSION_GRAPH, bad_version, 2, 0, "(none)");
    ASSERT_CELL(TIDE_STORE_Q_LATEST_TRACED_RUN, one, 1, 0, "1");
    ASSERT_CELL(TIDE_STORE_Q_RUN_COUNT, NULL, 0, 0, "5");
    char *state = named_cell(TIDE_STORE_Q_LOG_STATE, NULL, 0, 0);
    long long g = 0, timing = 0, run = 0;
    CU_ASSERT_EQUAL(sscanf(state, "%lld/%lld/%lld", &g, &timing, &run), 3);
    CU_ASSERT(g == f.graph_id && timing > 0 && run == 5);
    free(state);
    logged_session_end(&f.log);
}

/* The graph, its timings and devices: full names where the drawings need them, short in the JSON. */
static void test_graphs_and_timings(void)
{
    fixture f;
    fixture_new(&f);
    char graph[24];
    snprintf(graph, sizeof graph, "%lld", (long long)f.graph_id);
    const char *gp[] = {graph}, *one[] = {"1"};
    tide_store_table *t = named(TIDE_STORE_Q_GRAPH_NODES, gp, 1);
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 7);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 3);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 1, 0), "d");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 1, 6), "/job:localhost/replica:0/task:0/device:cpu:1");
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_TIMINGS, one, 1);
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 10);
    CU_ASSERT(tide_store_table_num_rows(t) >= 2);
    bool saw_d = false;
    for (int i = 0; i < tide_store_table_num_rows(t); i++)
        if (strcmp(tide_store_table_cell(t, i, 0), "d") == 0) {
            saw_d = true;
            CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, i, 2), "/job:localhost/replica:0/task:0/device:cpu:1");
            CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, i, 8), "[]");
            CU_ASSERT(tide_store_table_is_null(t, i, 9)); /* ran by itself */
        }
    CU_ASSERT(saw_d);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_NODE_TIMES, one, 1);
    CU_ASSERT(tide_store_table_num_rows(t) >= 2);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_SESSION_NODE_DEVICES, one, 1);
    CU_ASSERT(tide_store_table_num_rows(t) >= 2);
    tide_store_table_free(t);
    char *devices = named_cell(TIDE_STORE_Q_SESSION_DEVICES, one, 1, 0);
    CU_ASSERT(has(devices, "\"/job:localhost/replica:0/task:0/device:cpu:1\""));
    free(devices);
    char *sessions = named_cell(TIDE_STORE_Q_SESSIONS_JSON, NULL, 0, 0);
    CU_ASSERT(has(sessions, "\"devices\":[\"/cpu:0\",\"/cpu:1\"]"));
    free(sessions);
    const char *node[] = {"d", "1", "1", "0"};
    char *doc = named_cell(TIDE_STORE_Q_NODE_JSON, node, 4, 0);
    CU_ASSERT(has(doc, "\"name\":\"d\"") && has(doc, "\"device\":\"/cpu:1\"") && has(doc, "\"shapes\":\"[]\""));
    free(doc);
    /* SQL short_device(), for :sql too */
    tide_store_table *u = tide_store_query(db_path, "SELECT short_device('/job:localhost/replica:0/task:0/device:cpu:3'), "
                                                    "short_device(NULL), short_device('/job:w/task:1/device:gpu:0')",
                                           1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(u, 0, 0), "/cpu:3");
    CU_ASSERT(tide_store_table_is_null(u, 0, 1));
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(u, 0, 2), "/job:w/task:1/gpu:0");
    tide_store_table_free(u);
    logged_session_end(&f.log);
}

/* The web API's documents are JSON (checked by the web tests in depth): here, that each runs and says
 * what it should. */
static void test_json_documents(void)
{
    fixture f;
    fixture_new(&f);
    const char *status[] = {db_path, "1234", "{\"connections\":0}"}, *one[] = {"1"}, *ab[] = {"1", "2"};
    const char *runs[] = {"0", NULL, "-1", "0", "3"}, *failed[] = {"1", "failed", "-1", "0", "10"};
    char *doc = named_cell(TIDE_STORE_Q_STATUS_JSON, status, 3, 0);
    CU_ASSERT(has(doc, "\"runs\":5") && has(doc, "\"bytes\":1234") && has(doc, "\"server\":{\"connections\":0}"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_RUNS_JSON, runs, 5, 0);
    CU_ASSERT(has(doc, "\"id\":3,") && has(doc, "\"id\":5,") && has(doc, "\"truncated\":true") && !strstr(doc, "\"id\":2,"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_RUNS_JSON, failed, 5, 0);
    CU_ASSERT(has(doc, "{\"runs\":[],\"truncated\":false}"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_RUN_JSON, one, 1, 0);
    CU_ASSERT(has(doc, "\"status\":\"OK\"") && has(doc, "\"traced\":1") && has(doc, "\"feeds\":[\"s:0\"]"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_GRAPHS_JSON, one, 1, 0);
    CU_ASSERT(has(doc, "\"nodes\":3"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_TENSORS_JSON, one, 1, 0);
    CU_ASSERT(has(doc, "\"node\":\"d\"") && has(doc, "\"count\":5"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_COMPARE_JSON, ab, 2, 0);
    CU_ASSERT(has(doc, "\"a\":{\"id\":1") && has(doc, "\"b\":{\"id\":2"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_SCALARS_JSON, one, 1, 0);
    CU_ASSERT(has(doc, "{\"tag\":\"s_tag\",\"kind\":\"summary\",\"points\":5,\"signature_run\":null,"
                       "\"signature\":null,\"curves\":1}"));
    CU_ASSERT(has(doc, "{\"tag\":\"d\",\"kind\":\"watched\",\"points\":5,\"signature_run\":1,"
                       "\"signature\":\"feeds s:0 float32 []\",\"curves\":1}"));
    free(doc);
    tide_store_table *u = tide_store_query(db_path, "SELECT feed_shapes FROM runs WHERE id = 1", 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(u, 0, 0), "[\"float32 []\"]");
    tide_store_table_free(u);
    logged_session_end(&f.log);
}

/* Checks a curve's rows (columns step_col, +1 run, +2 value) against what was fed. */
static void check_fed_values(const tide_store_table *t, int value_col)
{
    CU_ASSERT_EQUAL_FATAL(tide_store_table_num_rows(t), NUM_RUNS);
    for (int i = 0; i < NUM_RUNS; i++) {
        const char *v = tide_store_table_cell(t, i, value_col);
        if (strcmp(v, fed_text[i]) != 0)
            fprintf(stderr, "\n  point %d: '%s', want '%s'\n", i, v, fed_text[i]);
        CU_ASSERT_STRING_EQUAL(v, fed_text[i]);
    }
}

/* Non-finite values stay in the log (a NaN summary is the text 'NaN', not NULL) and come back in the
 * curves: summaries, a watched scalar (its value from its NaN/Inf counts and the stored value's sign),
 * a statistic's history. */
static void test_non_finite_curves(void)
{
    fixture f;
    fixture_new(&f);
    tide_store_table *u = tide_store_query(db_path, "SELECT group_concat(typeof(value), ',') FROM "
                                                    "(SELECT value FROM summaries ORDER BY step)", 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(u, 0, 0), "real,real,real,text,real");
    tide_store_table_free(u);
    const char *summary[] = {"1", "s_tag", NULL, "0"}, *watched[] = {"1", "d", NULL, "0"},
               *as_watched[] = {"1", "d", "watched", "0"};
    tide_store_table *t = named(TIDE_STORE_Q_SCALAR_POINTS, summary, 4);
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 7); /* kind, step, run, value, time, signature_run, signature */
    CU_ASSERT(strtoll(tide_store_table_cell(t, 0, 4), NULL, 10) > 1500000000LL * 1000000000LL); /* ns since the epoch */
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "summary");
    check_fed_values(t, 3);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_SCALAR_POINTS, watched, 4);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "watched");
    check_fed_values(t, 3);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_SCALAR_POINTS, as_watched, 4);
    check_fed_values(t, 3);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 5), "1"); /* the curve's first run */
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 6), "feeds s:0 float32 []");
    tide_store_table_free(t);
    const char *one_session[] = {"1"};
    const char *mean[] = {"d", "0", "0", "mean"}, *nans[] = {"d", "0", "1", "nan_count"}, *std[] = {"d", "0", "1", "std"};
    t = named(TIDE_STORE_Q_TENSOR_HISTORY, mean, 4);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "1"); /* the session found */
    check_fed_values(t, 3);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_TENSOR_HISTORY, nans, 4);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 3, 3), "1");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 1, 3), "0");
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_IMAGE_SUMMARIES, one_session, 1); /* no ImageSummary in this graph */
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 8);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    tide_store_table_free(t);
    const char *hists[] = {"d", "0", "1"};
    t = named(TIDE_STORE_Q_TENSOR_HISTOGRAMS, hists, 3); /* session, step, run, min, max, mean, nans, infs, counts */
    CU_ASSERT_EQUAL(tide_store_table_num_columns(t), 9);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 5);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "1");
    CU_ASSERT(tide_store_table_cell(t, 0, 8)[0] == '[');
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_TENSOR_HISTORY, std, 4); /* over finite elements: none in an infinite scalar */
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 3), "0.0");
    CU_ASSERT(tide_store_table_is_null(t, 1, 3));
    tide_store_table_free(t);
    /* once pruned, an infinity's sign is unknown: NULL, never a guess */
    CU_ASSERT_EQUAL(tide_store_prune_values(f.log.store, 0, NULL, NULL), TIDE_OK);
    t = named(TIDE_STORE_Q_SCALAR_POINTS, watched, 4);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 3), "1.5");
    CU_ASSERT(tide_store_table_is_null(t, 1, 3));
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 3, 3), "NaN");
    tide_store_table_free(t);
    logged_session_end(&f.log);
}

/* A fused group (docs/fusion.md) of a traced run: its root's timing names the members (RUN_TIMINGS,
 * RUN_NODE_TIMES, SESSION_NODE_DEVICES), and /api/node says which group a member ran in; a node run
 * by itself has none. A file of schema 8 (no node_timings.fused) reads with NULL there. */
static void test_fused_groups(void)
{
    tide_engine_options o = engine_options(1, 0, 0);
    logged_session l;
    logged_session_begin(&l, "tide-queries-fused", &o);
    int64_t xd[2] = {2, 3}, bd[1] = {3};
    const float bias[3] = {1, -2, 3}, two = 2;
    tide_node *x = gu_placeholder(l.g, "x", TIDE_FLOAT32, 2, xd);
    tide_node *b = gu_const(l.g, "b", th_f32(1, bd, bias)), *c = gu_const(l.g, "c", th_f32(0, NULL, &two));
    tide_node *h = gu_op(l.g, "BiasAdd", "h", 2, (tide_node *[]){x, b});
    tide_node *r = gu_op(l.g, "Relu", "r", 1, &h);
    tide_node *out = gu_op(l.g, "Mul", "out", 2, (tide_node *[]){r, c});
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    logged_session_open(&l, NULL, "fused");
    const float xv[6] = {1, 2, 3, -4, 5, -6};
    tide_tensor_release(run_once(&l, x, th_f32(2, xd, xv), out, true));
    CU_ASSERT(tide_store_log_graph(l.store, l.session, NULL) > 0);
    CU_ASSERT_EQUAL(tide_store_flush(l.store, NULL), TIDE_OK);
    tide_store_close(l.store);
    l.store = NULL;
    const char *one[] = {"1"};
    tide_store_table *t = named(TIDE_STORE_Q_RUN_TIMINGS, one, 1);
    int roots = 0;
    for (int i = 0; i < tide_store_table_num_rows(t); i++) {
        const char *node = tide_store_table_cell(t, i, 0);
        CU_ASSERT(strcmp(node, "h") != 0 && strcmp(node, "r") != 0); /* no execution of their own */
        if (strcmp(node, "out") == 0) {
            roots++;
            CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, i, 9), "h, r, out");
        } else {
            CU_ASSERT(tide_store_table_is_null(t, i, 9));
        }
    }
    CU_ASSERT_EQUAL(roots, 1);
    tide_store_table_free(t);
    for (int q = 0; q < 2; q++) { /* each timed node's row: only the root's names the group */
        t = named(q ? TIDE_STORE_Q_SESSION_NODE_DEVICES : TIDE_STORE_Q_RUN_NODE_TIMES, one, 1);
        int saw_out = 0;
        for (int i = 0; i < tide_store_table_num_rows(t); i++) {
            bool is_out = strcmp(tide_store_table_cell(t, i, 0), "out") == 0;
            saw_out += is_out;
            if (is_out) {
                CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, i, 3), "h, r, out");
            } else {
                CU_ASSERT(tide_store_table_is_null(t, i, 3));
            }
        }
        CU_ASSERT_EQUAL(saw_out, 1);
        tide_store_table_free(t);
    }
    const char *member[] = {"r", "0", "1", "0"}, *root[] = {"out", "1", "1", "0"}, *alone[] = {"b", "0", "1", "0"};
    char *doc = named_cell(TIDE_STORE_Q_NODE_JSON, member, 4, 0);
    CU_ASSERT(has(doc, "\"fused\":{\"root\":\"out\",\"members\":\"h, r, out\"}"));
    CU_ASSERT(has(doc, "\"time_us\":null")); /* no time of its own */
    free(doc);
    doc = named_cell(TIDE_STORE_Q_NODE_JSON, root, 4, 0);
    CU_ASSERT(has(doc, "\"fused\":{\"root\":\"out\",\"members\":\"h, r, out\"}"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_NODE_JSON, alone, 4, 0);
    CU_ASSERT(has(doc, "\"fused\":null"));
    free(doc);
    /* schema 8: no fused column, the statements written for it */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db_path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "ALTER TABLE node_timings DROP COLUMN fused; PRAGMA user_version = 8", NULL, NULL,
                                 NULL), SQLITE_OK);
    sqlite3_close(db);
    t = named(TIDE_STORE_Q_RUN_TIMINGS, one, 1);
    CU_ASSERT(tide_store_table_num_rows(t) >= 1 && tide_store_table_is_null(t, 0, 9));
    CU_ASSERT(!tide_store_table_is_null(t, 0, 8)); /* shapes are still read */
    tide_store_table_free(t);
    doc = named_cell(TIDE_STORE_Q_NODE_JSON, root, 4, 0);
    CU_ASSERT(has(doc, "\"fused\":null") && has(doc, "\"shapes\":\"[2, 3]\""));
    free(doc);
    t = named(TIDE_STORE_Q_RUN_NODE_TIMES, one, 1);
    for (int i = 0; i < tide_store_table_num_rows(t); i++)
        CU_ASSERT(tide_store_table_is_null(t, i, 3));
    tide_store_table_free(t);
    logged_session_end(&l);
}

/* A traced run on /sim:0 (x fed on the host, three kernels on the device, the result fetched): its kernels
 * are logged on the lane "/sim:0 compute" with their launch times, the _Recvs that copy x in and the
 * result out on "/sim:0 copy h2d" and "/sim:0 copy d2h"; RUN_LANES sums the lanes; the run's memory per
 * device is logged (the device's kernels' peak). Then schema 9: no lanes, no memory, the rest read. */
static void test_device_lanes(void)
{
    tide_engine_options o = engine_options(2, 0, 1);
    logged_session l;
    logged_session_begin(&l, "tide-queries-lanes", &o);
    int64_t xd[1] = {1000};
    tide_node *x = gu_placeholder(l.g, "x", TIDE_FLOAT32, 1, xd);
    tide_graph_push_device(l.g, "/sim:0");
    tide_node *sq = gu_op(l.g, "Square", "sq", 1, &x);
    tide_node *neg = gu_op(l.g, "Neg", "neg", 1, &sq);
    tide_node *out = gu_op(l.g, "Abs", "out", 1, &neg);
    tide_graph_pop_device(l.g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    logged_session_open(&l, NULL, "lanes");
    float xv[1000];
    for (int i = 0; i < 1000; i++)
        xv[i] = (float)i;
    tide_tensor *got = run_once(&l, x, th_f32(1, xd, xv), out, true);
    CU_ASSERT(got && ((const float *)tide_tensor_data(got))[3] == 9.0f);
    tide_tensor_release(got);
    CU_ASSERT_EQUAL(tide_store_flush(l.store, NULL), TIDE_OK);
    tide_store_close(l.store);
    l.store = NULL;
    const char *one[] = {"1"};
    tide_store_table *t = named(TIDE_STORE_Q_RUN_TIMINGS, one, 1), *lanes = named(TIDE_STORE_Q_RUN_TIMING_LANES, one, 1);
    CU_ASSERT_EQUAL_FATAL(tide_store_table_num_rows(lanes), tide_store_table_num_rows(t));
    int compute = 0, h2d = 0, d2h = 0;
    int64_t last_end = 0;
    for (int i = 0; i < tide_store_table_num_rows(t); i++) { /* rows by start time */
        const char *op = tide_store_table_cell(t, i, 1), *lane = tide_store_table_cell(lanes, i, 0);
        if (tide_store_table_is_null(lanes, i, 0)) {
            CU_ASSERT(tide_store_table_is_null(lanes, i, 1)); /* no launch: the thread ran it */
            continue;
        }
        int64_t start = strtoll(tide_store_table_cell(t, i, 5), NULL, 10), end = strtoll(tide_store_table_cell(t, i, 6), NULL, 10);
        int64_t launch = strtoll(tide_store_table_cell(lanes, i, 1), NULL, 10);
        int64_t launch_end = strtoll(tide_store_table_cell(lanes, i, 2), NULL, 10);
        CU_ASSERT(end >= start && launch_end >= launch && start >= launch);
        if (strcmp(lane, "/sim:0 compute") == 0) {
            compute++;
            CU_ASSERT(strcmp(op, "Square") == 0 || strcmp(op, "Neg") == 0 || strcmp(op, "Abs") == 0);
            CU_ASSERT(start >= last_end); /* one kernel at a time in the lane */
            last_end = end;
        } else {
            CU_ASSERT_STRING_EQUAL(op, "_Recv");
            h2d += strcmp(lane, "/sim:0 copy h2d") == 0;
            d2h += strcmp(lane, "/sim:0 copy d2h") == 0;
        }
    }
    CU_ASSERT_EQUAL(compute, 3);
    CU_ASSERT_EQUAL(h2d, 1);
    CU_ASSERT_EQUAL(d2h, 1);
    tide_store_table_free(lanes);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_LANES, one, 1);
    bool saw_compute = false, in_order = true; /* by device; its threads, then its streams */
    char last[64] = "";
    for (int i = 0; i < tide_store_table_num_rows(t); i++) {
        const char *lane = tide_store_table_cell(t, i, 0) ? tide_store_table_cell(t, i, 0) : "";
        bool stream = strstr(lane, " compute") || strstr(lane, " copy ");
        char key[64] = "";
        size_t n = strcspn(lane, " ");
        n = n < sizeof key - 3 ? n : sizeof key - 3;
        memcpy(key, lane, n);
        key[n] = ' ';
        key[n + 1] = stream ? '1' : '0';
        key[n + 2] = '\0';
        in_order &= strcmp(last, key) <= 0;
        snprintf(last, sizeof last, "%s", key);
        if (strcmp(lane, "/sim:0 compute") == 0) {
            saw_compute = true;
            CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, i, 1), "3");
        }
    }
    CU_ASSERT(saw_compute && in_order);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_DEVICE_MEMORY, one, 1);
    CU_ASSERT_EQUAL_FATAL(tide_store_table_num_rows(t), 2);
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 0, 0), "/cpu:0");
    CU_ASSERT_STRING_EQUAL(tide_store_table_cell(t, 1, 0), "/sim:0");
    CU_ASSERT(strtoll(tide_store_table_cell(t, 1, 1), NULL, 10) >= 4000); /* the device's kernels: 1000 floats at least */
    CU_ASSERT(strtoll(tide_store_table_cell(t, 1, 2), NULL, 10) >= 0);
    tide_store_table_free(t);
    /* schema 9: no lanes nor memory; the rest is read */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db_path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "ALTER TABLE node_timings DROP COLUMN lane; ALTER TABLE node_timings DROP COLUMN "
                                 "launch_start_ns; ALTER TABLE node_timings DROP COLUMN launch_end_ns; ALTER TABLE runs "
                                 "DROP COLUMN device_memory; PRAGMA user_version = 9", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    t = named(TIDE_STORE_Q_RUN_TIMING_LANES, one, 1);
    CU_ASSERT(tide_store_table_num_rows(t) >= 5);
    for (int i = 0; i < tide_store_table_num_rows(t); i++)
        CU_ASSERT(tide_store_table_is_null(t, i, 0));
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_DEVICE_MEMORY, one, 1);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    tide_store_table_free(t);
    t = named(TIDE_STORE_Q_RUN_LANES, one, 1);
    for (int i = 0; i < tide_store_table_num_rows(t); i++)
        CU_ASSERT(strstr(tide_store_table_cell(t, i, 0), " thread ") || strstr(tide_store_table_cell(t, i, 0), " caller"));
    tide_store_table_free(t);
    logged_session_end(&l);
}

/* An observer of test_observer_copies that takes every tensor of node "sq": what it saw, and whether
 * each value was on the host with the expected numbers. */
typedef struct sq_seen {
    int count;
    bool on_host_and_right;
} sq_seen;

static bool wants_sq(void *user, const tide_node *node)
{
    (void)user;
    return strcmp(tide_node_name(node), "sq") == 0;
}

static void took_sq(void *user, const tide_run_info *run, const tide_node *node, int output, const tide_tensor *value,
                    const tide_exec_point *at)
{
    (void)run, (void)output, (void)at;
    sq_seen *seen = user;
    if (strcmp(tide_node_name(node), "sq") != 0)
        return;
    const float *v = tide_tensor_is_host_visible(value) ? tide_tensor_data(value) : NULL;
    __atomic_add_fetch(&seen->count, 1, __ATOMIC_SEQ_CST);
    if (!v || v[3] != 9.0f || v[999] != 998001.0f)
        __atomic_store_n(&seen->on_host_and_right, false, __ATOMIC_SEQ_CST);
}

/* One row of SQL's first column as an integer (0 when NULL or absent). */
static int64_t sql_int(const char *sql)
{
    tide_store_table *t = tide_store_query(db_path, sql, 1, NULL);
    int64_t v = t && tide_store_table_num_rows(t) > 0 && tide_store_table_cell(t, 0, 0)
                    ? strtoll(tide_store_table_cell(t, 0, 0), NULL, 10) : 0;
    tide_store_table_free(t);
    return v;
}

/* Copies outside a _Recv are timed (docs/devices.md, GPU timelines): a traced step on /sim:0 that feeds x
 * and fetches out, with sq watched by the run log and taken by a second observer, logs the host copy of
 * sq:0 once (one copy serves both observers) as a row "sq:0", op _CopyToHost, on the lane "/sim:0 copy
 * d2h", its times sane (start <= end, inside the host's wait for it, inside the run); the feed's and the
 * fetch's _Recv copies are on "/sim:0 copy h2d" and "/sim:0 copy d2h". The watched value is logged and
 * the other observer got sq on the host. An untraced run copies sq for its observers without a row. */
static void test_observer_copies(void)
{
    tide_engine_options o = engine_options(2, 0, 1);
    logged_session l;
    logged_session_begin(&l, "tide-queries-copies", &o);
    tide_engine *e = l.engine;
    int64_t xd[1] = {1000};
    tide_node *x = gu_placeholder(l.g, "x", TIDE_FLOAT32, 1, xd);
    tide_graph_push_device(l.g, "/sim:0");
    tide_node *sq = gu_op(l.g, "Square", "sq", 1, &x);
    tide_node *out = gu_op(l.g, "Neg", "out", 1, &sq);
    tide_graph_pop_device(l.g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    logged_session_open(&l, NULL, "copies");
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_store_watch(l.store, "sq", err), TIDE_OK);
    sq_seen seen = {0, true};
    int obs = tide_engine_add_observer(e, &(tide_observer){.user = &seen, .wants_tensors = wants_sq,
                                                           .tensor_produced = took_sq}, err);
    CU_ASSERT(obs > 0);
    float xv[1000];
    for (int i = 0; i < 1000; i++)
        xv[i] = (float)i;
    tide_feed feed = {{x, 0}, th_f32(1, xd, xv)};
    tide_output fetch = {out, 0};
    for (int traced = 1; traced >= 0; traced--) { /* run 1 traced, run 2 not */
        tide_tensor *got = NULL;
        tide_run_options ro = {.trace = traced};
        CU_ASSERT_EQUAL(tide_session_run(l.session, &ro, &feed, 1, &fetch, 1, &got, NULL, 0, NULL, err), TIDE_OK);
        CU_ASSERT(got && ((const float *)tide_tensor_data(got))[3] == -9.0f);
        tide_tensor_release(got);
    }
    tide_tensor_release(feed.value);
    tide_engine_remove_observer(e, obs);
    CU_ASSERT_EQUAL(seen.count, 2);
    CU_ASSERT(seen.on_host_and_right);
    CU_ASSERT_EQUAL(tide_store_flush(l.store, err), TIDE_OK);
    tide_store_close(l.store);
    l.store = NULL;
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings WHERE run_id = 1 AND op = '_CopyToHost'"), 1);
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings WHERE run_id = 1 AND op = '_CopyToHost' AND node = "
                            "'sq:0' AND lane = '/sim:0 copy d2h' AND output_bytes = 4000 AND shapes = '[1000]' AND "
                            "launch_start_ns <= start_ns AND start_ns <= end_ns AND end_ns <= launch_end_ns"), 1);
    /* inside the run: after its first timing and before that plus the run's wall time */
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings c, runs r WHERE c.run_id = 1 AND r.id = 1 AND c.op = "
                            "'_CopyToHost' AND c.launch_start_ns >= (SELECT min(scheduled_ns) FROM node_timings WHERE "
                            "run_id = 1) AND c.end_ns <= (SELECT min(scheduled_ns) FROM node_timings WHERE run_id = 1) "
                            "+ r.wall_ns"), 1);
    /* the copy ran after sq's kernel on the device (ordered after the compute stream) */
    CU_ASSERT_EQUAL(sql_int("SELECT (SELECT start_ns FROM node_timings WHERE run_id = 1 AND node = 'sq:0') >= "
                            "(SELECT end_ns FROM node_timings WHERE run_id = 1 AND node = 'sq')"), 1);
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings WHERE run_id = 1 AND op = '_Recv' AND lane = '/sim:0 "
                            "copy h2d' AND start_ns <= end_ns"), 1);
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings WHERE run_id = 1 AND op = '_Recv' AND lane = '/sim:0 "
                            "copy d2h' AND start_ns <= end_ns"), 1);
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM node_timings WHERE run_id = 2"), 0);
    CU_ASSERT_EQUAL(sql_int("SELECT count(*) FROM tensors WHERE node = 'sq' AND kind = 'watched'"), 2);
    CU_ASSERT_EQUAL(sql_int("SELECT max FROM tensors WHERE node = 'sq' AND run_id = 1"), 998001);
    tide_error_free(err);
    logged_session_end(&l);
}

/* A file of schema 2 (no node_timings.shapes) is read with the statements written for it. */
static void test_older_schema(void)
{
    fixture f;
    fixture_new(&f);
    tide_store_close(f.log.store);
    f.log.store = NULL;
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db_path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, "ALTER TABLE node_timings DROP COLUMN shapes; PRAGMA user_version = 2", NULL, NULL,
                                 NULL), SQLITE_OK);
    sqlite3_close(db);
    const char *one[] = {"1"}, *node[] = {"d", "1", "1", "0"};
    tide_store_table *t = named(TIDE_STORE_Q_RUN_TIMINGS, one, 1);
    CU_ASSERT(tide_store_table_num_rows(t) >= 2);
    CU_ASSERT(tide_store_table_is_null(t, 0, 8));
    tide_store_table_free(t);
    char *doc = named_cell(TIDE_STORE_Q_NODE_JSON, node, 4, 0);
    CU_ASSERT(has(doc, "\"shapes\":null"));
    free(doc);
    doc = named_cell(TIDE_STORE_Q_SCALARS_JSON, one, 1, 0); /* signatures of names only */
    CU_ASSERT(has(doc, "\"signature\":\"feeds s:0\""));
    free(doc);
    logged_session_end(&f.log);
}

static void test_errors(void)
{
    fixture f;
    fixture_new(&f);
    tide_error *err = tide_error_new();
    const char *one[] = {"1"};
    CU_ASSERT_PTR_NULL(tide_store_query_named(db_path, (tide_store_query_id)9999, NULL, 0, 1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT(has(tide_error_message(err), "no query has id 9999"));
    CU_ASSERT_PTR_NULL(tide_store_query_named(db_path, (tide_store_query_id)0, NULL, 0, 1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(tide_store_query_named(db_path, TIDE_STORE_Q_RUN_BRIEF, NULL, 0, 1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT(has(tide_error_message(err), "RUN_BRIEF: takes 1 parameters, not 0"));
    CU_ASSERT_PTR_NULL(tide_store_query_named(db_path, TIDE_STORE_Q_RUN_BRIEF, one, 1, -1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(tide_store_query_named("/nonexistent/runs.db", TIDE_STORE_Q_RUN_COUNT, NULL, 0, 1, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(tide_store_query_name(TIDE_STORE_Q_TENSOR_HISTORY), "TENSOR_HISTORY");
    CU_ASSERT_STRING_EQUAL(tide_store_query_name((tide_store_query_id)9999), "?");
    /* a value is bound, never spliced: a tag made of SQL matches nothing */
    const char *sly[] = {"1", "x' OR '1'='1", NULL, "0"};
    tide_store_table *t = named(TIDE_STORE_Q_SCALAR_POINTS, sly, 4);
    CU_ASSERT_EQUAL(tide_store_table_num_rows(t), 0);
    tide_store_table_free(t);
    tide_error_free(err);
    logged_session_end(&f.log);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_resolving_ids),
        TH_TEST(test_graphs_and_timings),
        TH_TEST(test_json_documents),
        TH_TEST(test_non_finite_curves),
        TH_TEST(test_fused_groups),
        TH_TEST(test_device_lanes),
        TH_TEST(test_observer_copies),
        TH_TEST(test_older_schema),
        TH_TEST(test_errors),
        TH_END,
    };
    return th_main("store named queries", tests);
}
