/* test_viz.c — viz/: the graph SVG (collapsed scopes, expanded clusters, aux nodes and stubs, fills
 * by the device each node ran on and by time, highlight, hostile names escaped, well-formed XML),
 * the legend and /api/graph JSON, the timeline JSON (lanes, transfers), the Chrome trace (valid JSON,
 * metadata, slices, flows), the JSON builder, errors (missing file, session, version, run, bad
 * options), and renders from several threads at once. The log is written by a real engine with two
 * CPU devices through the real store; a second graph version with hostile names is added to the file
 * with SQL, as a tampered log would be. Structural checks parse the output with python3's json and
 * xml.etree (python3 is needed: meson itself runs on it). */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"
#include "viz.h"
#include "viz/viz_check.h"
#include "viz/viz_log.h"

static const char graph_text[] =
    "x = Const(value=tensor(float32, [2, 2], [1, 2, 3, 4]), dtype=float32)\n"
    "scale = Const(value=tensor(float32, [2, 2], [1, 1, 1, 1]), dtype=float32)\n"
    "tower0/w = Const(value=tensor(float32, [2, 2], [1, 0, 0, 1]), dtype=float32)\n"
    "tower0/mm = MatMul(x, tower0/w, transpose_a=false, transpose_b=false, T=float32)\n"
    "tower0/a = Mul(tower0/mm, scale, T=float32)\n"
    "tower0/b = Add(tower0/a, scale, T=float32)\n"
    "tower1/w = Const(value=tensor(float32, [2, 2], [0, 1, 1, 0]), dtype=float32)\n"
    "tower1/dense/mm = MatMul(x, tower1/w, transpose_a=false, transpose_b=false, T=float32)\n"
    "tower1/dense/relu = Relu(tower1/dense/mm, T=float32)\n"
    "tower1/a = Mul(tower1/dense/relu, scale, T=float32)\n"
    "tower1/b = Add(tower1/a, scale, T=float32)\n"
    "sum = Add(tower0/b, tower1/b, T=float32)\n";

#define HOSTILE_VERSION 777
static viz_log vlog, hostile;
static int64_t last_run;

/* ---------------------------------------------------------------- helpers */

static int64_t sql_int(const char *sql)
{
    tide_error *err = tide_error_new();
    tide_store_table *t = tide_store_query(vlog.path, sql, 1, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int64_t v = tide_store_table_num_rows(t) ? strtoll(tide_store_table_cell(t, 0, 0), NULL, 10) : -1;
    tide_store_table_free(t);
    tide_error_free(err);
    return v;
}

/* A second log whose graph holds names no engine accepts (a tampered file): a graph version
 * HOSTILE_VERSION added with SQL to a log of a one-node graph. */
static void add_hostile_log(void)
{
    viz_log_open(&hostile, 1, "x = Const(value=tensor(float32, [], [1]), dtype=float32)\n");
    viz_log_close(&hostile);
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(hostile.path, &db) == SQLITE_OK);
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO graphs(session_id, version, text) VALUES (%lld, %d, '');"
             "INSERT INTO nodes(graph_id, name, op, inputs, control_inputs, attrs, requested_device) VALUES"
             " ((SELECT max(id) FROM graphs), 'x', 'Const', '[]', '[]', 'dtype=float32', ''),"
             " ((SELECT max(id) FROM graphs), '<script>alert(1)</script>', 'Evil\"Op<b>', '[\"x:0\"]', '[]', 'a=<b>', ''),"
             " ((SELECT max(id) FROM graphs), 'ev<i>l/a&amp;b', 'Identity', '[\"<script>alert(1)</script>:0\"]', '[]', '', ''),"
             " ((SELECT max(id) FROM graphs), 'ev<i>l/back\\N\\slash', 'Identity', '[\"ev<i>l/a&amp;b:0\"]', '[]', '', '');",
             (long long)hostile.session_id, HOSTILE_VERSION);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fprintf(stderr, "tampering: %s\n", msg);
    CU_ASSERT_PTR_NULL(msg);
    sqlite3_free(msg);
    sqlite3_close(db);
}

static void setup_log(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    viz_log_open(&vlog, 2, graph_text);
    viz_log_run(&vlog, "sum", 3);
    last_run = sql_int("SELECT max(id) FROM runs");
    add_hostile_log();
}

static char *svg_of_path(const char *path, const tide_viz_graph_options *o)
{
    tide_error *err = tide_error_new();
    size_t len = 0;
    char *svg = tide_viz_graph_svg(path, o, &len, err);
    if (!svg)
        fprintf(stderr, "graph_svg: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(svg);
    if (svg)
        CU_ASSERT_EQUAL(len, strlen(svg));
    tide_error_free(err);
    return svg;
}

static char *svg_of(const tide_viz_graph_options *o)
{
    return svg_of_path(vlog.path, o);
}

/* The fill of the first shape after `id="ID"` in svg (the node's shape), or "". */
static const char *fill_of(const char *svg, const char *id, char *buf)
{
    char needle[256];
    snprintf(needle, sizeof needle, "id=\"%s\"", id);
    const char *at = strstr(svg, needle), *f = at ? strstr(at, "fill=\"") : NULL;
    buf[0] = '\0';
    if (f)
        snprintf(buf, 8, "%s", f + 6);
    return buf;
}

/* ---------------------------------------------------------------- the graph */

static void test_collapsed_and_expanded(void)
{
    setup_log();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    char *svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(strncmp(svg, "<?xml", 5) == 0 || strncmp(svg, "<svg", 4) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "</svg>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"scope:tower0\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"scope:tower1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"node:x\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"node:sum\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">4 nodes</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">5 nodes</text>"));
    CU_ASSERT_PTR_NULL(strstr(svg, "node:tower0/mm"));
    CU_ASSERT_PTR_NULL(strstr(svg, "cluster:"));
    CU_ASSERT(py_check(svg, true, "\"scope:tower0\" in ids and \"node:tower1/a\" not in ids and "
                                   "any(e.get(\"class\") == \"node\" and e.get(\"id\") == \"node:x\" for e in r.iter())"));
    free(svg);

    const char *open[] = {"tower1/dense"}; /* opens tower1 too */
    o.expanded = open;
    o.num_expanded = 1;
    svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"cluster:tower1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"cluster:tower1/dense\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"node:tower1/dense/relu\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"scope:tower0\""));
    CU_ASSERT_PTR_NULL(strstr(svg, "id=\"node:tower0/mm\""));
    CU_ASSERT(py_check(svg, true, "any(e.get(\"class\") == \"cluster\" and e.get(\"id\") == \"cluster:tower1/dense\" "
                                   "for e in r.iter())"));
    free(svg);

    o.num_expanded = 0;
    o.expand_all = true;
    svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"cluster:tower0\""));
    CU_ASSERT_PTR_NULL(strstr(svg, "scope:"));
    CU_ASSERT(py_check(svg, true, "len([i for i in ids if i.startswith(\"node:\")]) == 12"));
    free(svg);
}

/* Every node's fill is the colour of the device the engine placed it on. */
static void test_device_fills(void)
{
    setup_log();
    static const char *const palette[2] = {"#4e79a7", "#f28e2b"};
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.expand_all = true;
    char *svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    int used[2] = {0, 0};
    for (int i = 0; i < tide_graph_num_nodes(vlog.graph); i++) {
        const tide_node *n = tide_graph_node_at(vlog.graph, i);
        const char *dev = tide_node_assigned_device(n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
        int d = dev[strlen(dev) - 1] - '0';
        CU_ASSERT_FATAL(d == 0 || d == 1);
        used[d]++;
        char id[160], fill[8];
        snprintf(id, sizeof id, "node:%s", tide_node_name(n));
        CU_ASSERT_STRING_EQUAL(fill_of(svg, id, fill), palette[d]);
    }
    CU_ASSERT(used[0] > 0 && used[1] > 0); /* both devices ran nodes: the fills differ */
    free(svg);
    /* collapsed scopes take their majority device's colour */
    tide_viz_graph_options_init(&o);
    svg = svg_of(&o);
    char fill[8];
    CU_ASSERT(strcmp(fill_of(svg, "scope:tower0", fill), palette[0]) == 0 ||
              strcmp(fill_of(svg, "scope:tower0", fill), palette[1]) == 0);
    free(svg);
}

static void test_aux_nodes(void)
{
    setup_log();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.aux_degree = 3; /* scale has 4 consumers */
    o.expand_all = true;
    char *svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"cluster:__aux__\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">auxiliary<"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"node:scale\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"stub:scale@tower0/a\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"stub:scale@tower1/b\""));
    CU_ASSERT_PTR_NULL(strstr(svg, "<title>scale&#45;&gt;")); /* no edge leaves scale itself */
    free(svg);
    /* collapsed: one stub per consumer item (the scope) */
    o.expand_all = false;
    svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "id=\"stub:scale@tower0\""));
    CU_ASSERT(py_check(svg, true, "len([i for i in ids if i.startswith(\"stub:\")]) == 2"));
    free(svg);
    /* with the default degree (6) nothing is auxiliary */
    o.aux_degree = 0;
    svg = svg_of(&o);
    CU_ASSERT_PTR_NULL(strstr(svg, "__aux__"));
    CU_ASSERT_PTR_NULL(strstr(svg, "stub:"));
    free(svg);
}

static void test_hostile_names(void)
{
    setup_log();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.version = HOSTILE_VERSION;
    for (int expand = 0; expand < 2; expand++) {
        o.expand_all = expand;
        char *svg = svg_of_path(hostile.path, &o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
        CU_ASSERT_PTR_NULL(strstr(svg, "<script"));
        CU_ASSERT_PTR_NULL(strstr(svg, "<b>"));
        CU_ASSERT_PTR_NULL(strstr(svg, "<i>"));
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;"));
        CU_ASSERT(py_check(svg, true, expand ? "\"node:<script>alert(1)</script>\" in ids and "
                                               "\"cluster:ev<i>l\" in ids and \"node:ev<i>l/a&amp;b\" in ids and "
                                               "\"node:ev<i>l/back\\\\N\\\\slash\" in ids"
                                             : "\"scope:ev<i>l\" in ids and not any(e.tag.endswith(\"script\") "
                                               "for e in r.iter())"));
        free(svg);
    }
    size_t len;
    char *json = tide_viz_graph_json(hostile.path, &o, &len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_PTR_NULL(strstr(json, "<"));
    CU_ASSERT(py_check(json, false, "[n[\"name\"] for n in d[\"nodes\"]][1] == \"<script>alert(1)</script>\" and "
                                    "d[\"nodes\"][2][\"inputs\"] == [\"<script>alert(1)</script>:0\"]"));
    free(json);
}

/* The outline of a highlight: a <style> rule at the top of the SVG naming the item's id. */
static bool outlined(const char *svg, const char *id)
{
    char rule[256];
    snprintf(rule, sizeof rule, "g[id=\"%s\"] > ellipse", id);
    const char *style = strstr(svg, "<style>"), *end = style ? strstr(style, "</style>") : NULL;
    const char *at = style ? strstr(style, rule) : NULL;
    return at && at < end && strstr(end, "#ff0000") == NULL && strstr(style, "#ff0000") < end;
}

static void test_highlight_and_time(void)
{
    setup_log();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.highlight = "tower1/dense/mm"; /* inside collapsed tower1: the scope is outlined */
    char *svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(outlined(svg, "scope:tower1"));
    CU_ASSERT(!outlined(svg, "node:x")); /* x is not outlined */
    CU_ASSERT(py_check(svg, true, "\"scope:tower1\" in ids")); /* still well-formed */
    /* the same drawing without highlight, outlined afterwards without a new layout: the same text */
    o.highlight = NULL;
    size_t plain_len = 0, marked_len = 0;
    char *plain = tide_viz_graph_svg(vlog.path, &o, &plain_len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_PTR_NULL(strstr(plain, "<style>"));
    o.highlight = "tower1/dense/mm";
    char *marked = tide_viz_graph_highlight(vlog.path, &o, plain, plain_len, &marked_len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(marked);
    CU_ASSERT_EQUAL(marked_len, strlen(marked));
    CU_ASSERT_STRING_EQUAL(marked, svg);
    free(marked);
    /* it only reads the plan: any text with an <svg> element gets the rule, hostile ids escaped */
    o.highlight = "tower0/mm";
    static const char fake[] = "<svg a=\"1\"><g/></svg>";
    marked = tide_viz_graph_highlight(vlog.path, &o, fake, strlen(fake), NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL(marked);
    CU_ASSERT(marked && strncmp(marked, "<svg a=\"1\">\n<style>g[id=\"scope:tower0\"]", 39) == 0 &&
              strstr(marked, "</style><g/></svg>"));
    free(marked);
    free(plain);
    free(svg);
    o.color = TIDE_VIZ_COLOR_TIME;
    o.expand_all = true;
    o.highlight = "tower0"; /* an expanded scope: its cluster is outlined */
    svg = svg_of(&o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    char fill[8];
    static const char *const reds = "#fee5d9 #fcae91 #fb6a4a #de2d26 #a50f15";
    CU_ASSERT(fill_of(svg, "node:tower0/mm", fill)[0] == '#'); /* "" (not found) is in every string */
    CU_ASSERT_PTR_NOT_NULL(strstr(reds, fill));
    CU_ASSERT(fill_of(svg, "node:sum", fill)[0] == '#');
    CU_ASSERT_PTR_NOT_NULL(strstr(reds, fill));
    CU_ASSERT(outlined(svg, "cluster:tower0"));
    free(svg);
    /* a hostile name is escaped in the rule (CSS string and XML text) */
    tide_viz_graph_options_init(&o);
    o.version = HOSTILE_VERSION;
    o.expand_all = true;
    o.highlight = "ev<i>l/a&amp;b";
    svg = svg_of_path(hostile.path, &o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "g[id=\"node:ev&lt;i&gt;l/a&amp;amp;b\"]"));
    CU_ASSERT(py_check(svg, true, "any(e.tag.endswith(\"style\") and \"node:ev<i>l/a&amp;b\" in e.text for e in r.iter())"));
    free(svg);
}

static void test_legend_and_graph_json(void)
{
    setup_log();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    size_t len = 0;
    char *legend = tide_viz_graph_legend_json(vlog.path, &o, &len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(legend);
    CU_ASSERT_EQUAL(len, strlen(legend));
    CU_ASSERT_PTR_NOT_NULL(strstr(legend, "{\"label\":\"/cpu:0\",\"color\":\"#4e79a7\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(legend, "{\"label\":\"/cpu:1\",\"color\":\"#f28e2b\"}"));
    CU_ASSERT(py_check(legend, false, "d[\"mode\"] == \"device\" and len(d[\"entries\"]) == 2"));
    free(legend);
    o.color = TIDE_VIZ_COLOR_TIME;
    legend = tide_viz_graph_legend_json(vlog.path, &o, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(legend);
    CU_ASSERT_PTR_NOT_NULL(strstr(legend, "\"label\":\"0-"));
    CU_ASSERT(py_check(legend, false, "d[\"mode\"] == \"time\" and len(d[\"entries\"]) == 6 and "
                                      "all(e[\"label\"].endswith(\"\\u00b5s\") for e in d[\"entries\"][:5]) and "
                                      "d[\"entries\"][5][\"label\"] == \"not timed\""));
    free(legend);
    o.color = TIDE_VIZ_COLOR_DEVICE;
    o.run = last_run;
    char *json = tide_viz_graph_json(vlog.path, &o, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "len(d[\"nodes\"]) == 12 and d[\"version\"] > 0 and "
                                    "all(n[\"device\"] in (\"/cpu:0\", \"/cpu:1\") for n in d[\"nodes\"]) and "
                                    "[n for n in d[\"nodes\"] if n[\"name\"] == \"sum\"][0][\"inputs\"] == "
                                    "[\"tower0/b:0\", \"tower1/b:0\"]"));
    free(json);
}

/* ---------------------------------------------------------------- timeline and trace */

static void test_timeline(void)
{
    setup_log();
    int64_t runs[2] = {last_run - 1, last_run};
    size_t len = 0;
    char *json = tide_viz_timeline_json(vlog.path, runs, 2, &len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_EQUAL(len, strlen(json));
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"device\":\"/cpu:1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "_send_to_cpu"));
    CU_ASSERT(py_check(json, false,
                       "len(d[\"runs\"]) == 2 and all(len(r[\"lanes\"]) > 1 and len(r[\"transfers\"]) > 0 and "
                       "r[\"lanes\"] == sorted(r[\"lanes\"], key=lambda l: (l[\"device\"], l[\"thread\"])) and "
                       "all(0 <= e[\"lane\"] < len(r[\"lanes\"]) and 0 <= e[\"start_us\"] <= e[\"end_us\"] and "
                       "e[\"scheduled_us\"] >= 0 for e in r[\"events\"]) and "
                       "min(min(e[\"start_us\"], e[\"scheduled_us\"]) for e in r[\"events\"]) == 0 and "
                       "all(t[\"tensor\"].endswith(\":0\") and t[\"send_lane\"] != t[\"recv_lane\"] and "
                       "r[\"lanes\"][t[\"send_lane\"]][\"device\"] != r[\"lanes\"][t[\"recv_lane\"]][\"device\"] "
                       "for t in r[\"transfers\"]) for r in d[\"runs\"]) and "
                       "d[\"runs\"][0][\"id\"] + 1 == d[\"runs\"][1][\"id\"]"));
    /* A _Recv is asynchronous and waits within its span, until its _Send ended; nothing else waits. */
    CU_ASSERT(py_check(json, false,
                       "all((e[\"op\"] == \"_Recv\") == e[\"async\"] and 0 <= e[\"wait_us\"] <= "
                       "e[\"end_us\"] - e[\"start_us\"] + 1e-6 and (e[\"async\"] or e[\"wait_us\"] == 0) "
                       "for r in d[\"runs\"] for e in r[\"events\"]) and "
                       "all(abs(r[\"events\"][[i for i, e in enumerate(r[\"events\"]) if e[\"node\"].startswith(t[\"tensor\"] + "
                       "\"/_recv_on_\")][0]][\"wait_us\"] - max(0, min(t[\"send_end_us\"], t[\"recv_end_us\"]) - "
                       "[e for e in r[\"events\"] if e[\"node\"].startswith(t[\"tensor\"] + \"/_recv_on_\")][0][\"start_us\"])) < 0.01 "
                       "for r in d[\"runs\"] for t in r[\"transfers\"])"));
    free(json);
}

/* A while loop's body node runs once per iteration: the timeline has one event per execution, each with
 * its frame and iteration (schema 7), and so does the Chrome trace; nodes outside the loop have none. */
static tide_status count_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user, (void)n;
    tide_node *five = tide_graph_node(g, "five");
    tide_node_builder *b = tide_node_builder_new(g, "Less", NULL);
    tide_node_builder_add_input(b, v[0]);
    tide_node_builder_add_input(b, (tide_output){five, 0});
    pred->node = tide_node_builder_finish(b, err);
    pred->index = 0;
    return pred->node ? TIDE_OK : TIDE_INTERNAL;
}

static tide_status count_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user, (void)n;
    tide_node_builder *b = tide_node_builder_new(g, "Add", "step");
    tide_node_builder_add_input(b, v[0]);
    tide_node_builder_add_input(b, (tide_output){tide_graph_node(g, "one"), 0});
    next->node = tide_node_builder_finish(b, err);
    next->index = 0;
    return next->node ? TIDE_OK : TIDE_INTERNAL;
}

static void test_loop_iterations(void)
{
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "zero = Const(value=tensor(float32, [], [0]), dtype=float32)\n"
                                                    "one = Const(value=tensor(float32, [], [1]), dtype=float32)\n"
                                                    "five = Const(value=tensor(float32, [], [5]), dtype=float32)\n",
                                                 err), TIDE_OK);
    tide_output zero = {tide_graph_node(g, "zero"), 0}, result;
    tide_while_options wo;
    tide_while_options_init(&wo);
    wo.name = "count";
    CU_ASSERT_EQUAL_FATAL(tide_while_loop(g, count_cond, count_body, NULL, &zero, 1, &wo, &result, err), TIDE_OK);
    viz_log l;
    viz_log_open_graph(&l, 1, g);
    viz_log_run(&l, tide_node_name(result.node), 1);
    viz_log_close(&l);
    int64_t run = 1;
    char *json = tide_viz_timeline_json(l.path, &run, 1, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false,
                       "sorted(e[\"iteration\"] for e in d[\"runs\"][0][\"events\"] if e[\"node\"] == \"count/step\") "
                       "== [0, 1, 2, 3, 4] and all(e[\"frame\"] == \"count\" for e in d[\"runs\"][0][\"events\"] "
                       "if e[\"node\"] == \"count/step\") and all(\"iteration\" not in e and \"frame\" not in e "
                       "for e in d[\"runs\"][0][\"events\"] if e[\"node\"] in (\"zero\", \"one\", \"five\"))"));
    free(json);
    json = tide_viz_chrome_trace(l.path, run, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false,
                       "sorted(e[\"args\"][\"iteration\"] for e in d[\"traceEvents\"] if e.get(\"name\") == "
                       "\"count/step\" and e.get(\"ph\") == \"X\") == [0, 1, 2, 3, 4]"));
    free(json);
    viz_log_remove(&l);
    tide_error_free(err);
}

static void test_chrome_trace(void)
{
    setup_log();
    size_t len = 0;
    char *json = tide_viz_chrome_trace(vlog.path, last_run, &len, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_EQUAL(len, strlen(json));
    CU_ASSERT(strncmp(json, "{\"traceEvents\":[", 16) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"displayTimeUnit\":\"ms\""));
    CU_ASSERT(py_check(json, false,
                       "set(e[\"ph\"] for e in d[\"traceEvents\"]) == {\"M\", \"X\", \"s\", \"f\", \"C\"} and "
                       "sorted(e[\"args\"][\"name\"] for e in d[\"traceEvents\"] if e[\"name\"] == \"process_name\") "
                       "== [\"/cpu:0\", \"/cpu:1\"] and "
                       "len([e for e in d[\"traceEvents\"] if e[\"ph\"] == \"s\"]) == "
                       "len([e for e in d[\"traceEvents\"] if e[\"ph\"] == \"f\" and e[\"bp\"] == \"e\"]) and "
                       "all(e[\"dur\"] >= 0 and e[\"ts\"] >= 0 and \"op\" in e[\"args\"] and \"bytes\" in e[\"args\"] "
                       "for e in d[\"traceEvents\"] if e[\"ph\"] == \"X\") and "
                       "any(e[\"name\"] == \"sum\" for e in d[\"traceEvents\"] if e[\"ph\"] == \"X\") and "
                       "d[\"otherData\"][\"peak_bytes\"] > 0")); /* the step's peak memory (runs.peak_bytes) */
    free(json);
}

/* ---------------------------------------------------------------- fused groups */

/* A traced run that fused h = BiasAdd(x, b), r = Relu(h), out = r * two (docs/fusion.md): the drawing
 * outlines the three and says so in their labels (members "fused into out", the root "fused group of
 * 3"), the legend counts the group, /api/graph names each node's root, and the timeline and the Chrome
 * trace name the members on the root's execution. A run without fusion marks nothing. */
static void test_fused_groups(void)
{
    viz_log fl;
    viz_log_open(&fl, 1, "x = Const(value=tensor(float32, [2, 3], [1, -2, 3, -4, 5, -6]), dtype=float32)\n"
                         "b = Const(value=tensor(float32, [3], [1, 2, 3]), dtype=float32)\n"
                         "two = Const(value=tensor(float32, [], [2]), dtype=float32)\n"
                         "h = BiasAdd(x, b, T=float32)\n"
                         "r = Relu(h, T=float32)\n"
                         "out = Mul(r, two, T=float32)\n");
    viz_log_run(&fl, "out", 1);
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    char *svg = svg_of_path(fl.path, &o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    int members = 0;
    for (const char *at = svg; (at = strstr(at, ">fused into out<")) != NULL; at++)
        members++;
    CU_ASSERT_EQUAL(members, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">fused group of 3<"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "stroke=\"#e8590c\""));
    char fill[16];
    CU_ASSERT_STRING_EQUAL(fill_of(svg, "node:h", fill), "#4e79a7"); /* still its device's fill */
    CU_ASSERT(py_check(svg, true, "True"));
    free(svg);
    char *legend = tide_viz_graph_legend_json(fl.path, &o, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(legend);
    CU_ASSERT_PTR_NOT_NULL(strstr(legend, "\"fused\":{\"groups\":1,\"nodes\":3,\"color\":\"#e8590c\"}"));
    free(legend);
    char *json = tide_viz_graph_json(fl.path, &o, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "{n[\"name\"]: n[\"fused\"] for n in d[\"nodes\"]} == "
                                    "{\"x\": None, \"b\": None, \"two\": None, \"h\": \"out\", \"r\": \"out\", "
                                    "\"out\": \"out\"}"));
    free(json);
    int64_t run = 0;
    tide_store_table *t = tide_store_query(fl.path, "SELECT max(id) FROM runs", 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    run = strtoll(tide_store_table_cell(t, 0, 0), NULL, 10);
    tide_store_table_free(t);
    json = tide_viz_timeline_json(fl.path, &run, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "[(e[\"node\"], e[\"fused\"]) for e in d[\"runs\"][0][\"events\"] if "
                                    "e[\"fused\"]] == [(\"out\", \"h, r, out\")] and not any(e[\"node\"] in "
                                    "(\"h\", \"r\") for e in d[\"runs\"][0][\"events\"])"));
    free(json);
    json = tide_viz_chrome_trace(fl.path, run, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "[e[\"args\"][\"fused\"] for e in d[\"traceEvents\"] if e[\"ph\"] == \"X\" "
                                    "and \"fused\" in e[\"args\"]] == [\"h, r, out\"]"));
    free(json);
    /* the same graph run with fusion off: a new traced run, nothing marked */
    tide_session_set_fusion(fl.session, false);
    viz_log_run(&fl, "out", 1);
    svg = svg_of_path(fl.path, &o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NULL(strstr(svg, "fused"));
    free(svg);
    viz_log_close(&fl);
    viz_log_remove(&fl);
}

/* A run on /sim:0: the device's compute stream and its device-to-host copy stream (the fetched value's
 * _Recv) are lanes of their own, after the host's threads, labelled "/sim:0 compute" and "/sim:0 copy d2h";
 * the kernels there carry their launch; the run's memory per device is in the JSON. The trace puts the
 * lanes on tracks of /sim:0's process named by their streams, and the memory on counter tracks. s is
 * watched: its host copy for the run log is an event "s:0" (op _CopyToHost) on the copy d2h lane, inside
 * the run, marked as a copy as the _Recv's is, and a slice on that track of the trace. */
static void test_device_lanes(void)
{
    setenv("TIDE_SIM_DEVICES", "1", 1);
    viz_log sl;
    viz_log_open(&sl, 1, "x = Const(value=tensor(float32, [2, 3], [1, -2, 3, -4, 5, -6]), dtype=float32)\n"
                         "s = Square(x, T=float32) @\"/sim:0\"\n"
                         "out = Neg(s, T=float32) @\"/sim:0\"\n"
                         "back = Identity(out, T=float32) @\"/cpu:0\"\n");
    unsetenv("TIDE_SIM_DEVICES");
    CU_ASSERT_EQUAL(tide_store_watch(sl.store, "s", NULL), TIDE_OK); /* its host copy for the run log: timed */
    viz_log_run(&sl, "back", 1);
    tide_store_table *t = tide_store_query(sl.path, "SELECT max(id) FROM runs", 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int64_t run = strtoll(tide_store_table_cell(t, 0, 0), NULL, 10);
    tide_store_table_free(t);
    char *json = tide_viz_timeline_json(sl.path, &run, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "[l[\"label\"] for l in d[\"runs\"][0][\"lanes\"] if l[\"stream\"]] == "
                                    "[\"/sim:0 compute\", \"/sim:0 copy d2h\"]"));
    CU_ASSERT(py_check(json, false, "(lambda L: [i for i, l in enumerate(L) if l[\"stream\"]] == "
                                    "list(range(len(L) - 2, len(L))) and all(l[\"device\"] == \"/sim:0\" for l in "
                                    "L if l[\"stream\"]))(d[\"runs\"][0][\"lanes\"])"));
    CU_ASSERT(py_check(json, false, "(lambda r: all(r[\"lanes\"][e[\"lane\"]][\"label\"] == \"/sim:0 compute\" and "
                                    "e[\"launch_start_us\"] <= e[\"start_us\"] <= e[\"end_us\"] for e in r[\"events\"] "
                                    "if e[\"node\"] in (\"s\", \"out\")) and [r[\"lanes\"][e[\"lane\"]][\"label\"] for e "
                                    "in r[\"events\"] if e[\"op\"] == \"_Recv\"] == [\"/sim:0 copy d2h\"])(d[\"runs\"][0])"));
    /* copies are marked: the watched s's host copy (named after the tensor, op _CopyToHost) and the fetch's
     * _Recv, both on the copy lane, inside the run; the kernels are not copies */
    CU_ASSERT(py_check(json, false, "(lambda r: [(e[\"node\"], r[\"lanes\"][e[\"lane\"]][\"label\"]) for e in "
                                    "r[\"events\"] if e[\"op\"] == \"_CopyToHost\"] == [(\"s:0\", \"/sim:0 copy d2h\")] "
                                    "and all(e[\"copy\"] == (e[\"op\"] in (\"_CopyToHost\", \"_Recv\")) for e in "
                                    "r[\"events\"]) and all(0 <= e[\"launch_start_us\"] <= e[\"start_us\"] <= "
                                    "e[\"end_us\"] <= e[\"launch_end_us\"] <= r[\"wall_us\"] for e in r[\"events\"] if "
                                    "e[\"op\"] == \"_CopyToHost\"))(d[\"runs\"][0])"));
    CU_ASSERT(py_check(json, false, "[m[\"device\"] for m in d[\"runs\"][0][\"device_memory\"]] == [\"/cpu:0\", "
                                    "\"/sim:0\"] and d[\"runs\"][0][\"device_memory\"][1][\"peak_bytes\"] >= 24"));
    free(json);
    json = tide_viz_chrome_trace(sl.path, run, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(py_check(json, false, "(lambda E: (lambda sim: sim is not None and {e[\"args\"][\"name\"] for e in E if "
                                    "e[\"name\"] == \"thread_name\" and e[\"pid\"] == sim} >= {\"compute\", \"copy d2h\"} and "
                                    "any(e[\"ph\"] == \"X\" and e[\"name\"] == \"out\" and e[\"pid\"] == sim and e[\"tid\"] >= 1000 "
                                    "for e in E) and any(e[\"ph\"] == \"C\" and e[\"name\"] == \"peak bytes\" and e[\"pid\"] == sim "
                                    "for e in E))(next((e[\"pid\"] for e in E if e[\"name\"] == \"process_name\" and "
                                    "e[\"args\"][\"name\"] == \"/sim:0\"), None)))(d[\"traceEvents\"])"));
    /* the host copy is a slice on /sim:0's copy d2h track, marked as a copy */
    CU_ASSERT(py_check(json, false, "(lambda E: (lambda sim: sim is not None and (lambda tid: any(e[\"ph\"] == \"X\" and "
                                    "e[\"name\"] == \"s:0\" and e[\"cat\"] == \"_CopyToHost\" and e[\"args\"][\"copy\"] and "
                                    "e[\"pid\"] == sim and e[\"tid\"] == tid for e in E))(next((e[\"tid\"] for e in E if "
                                    "e[\"name\"] == \"thread_name\" and e[\"pid\"] == sim and e[\"args\"][\"name\"] == "
                                    "\"copy d2h\"), None)))(next((e[\"pid\"] for e in E if e[\"name\"] == \"process_name\" and "
                                    "e[\"args\"][\"name\"] == \"/sim:0\"), None)))(d[\"traceEvents\"])"));
    free(json);
    viz_log_close(&sl);
    viz_log_remove(&sl);
}

/* ---------------------------------------------------------------- errors */

static void expect_error(char *got, tide_error *err, tide_status code, const char *needle)
{
    CU_ASSERT_PTR_NULL(got);
    free(got);
    CU_ASSERT_EQUAL(tide_error_code(err), code);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "expected a message containing '%s', got '%s'\n", needle, tide_error_message(err));
        CU_FAIL("message");
    }
    tide_error_clear(err);
}

static void test_errors(void)
{
    setup_log();
    tide_error *err = tide_error_new();
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    int64_t run = 424242;
    expect_error(tide_viz_graph_svg("/nonexistent/tide.db", &o, NULL, err), err, TIDE_NOT_FOUND, "/nonexistent/tide.db");
    expect_error(tide_viz_timeline_json("/nonexistent/tide.db", &run, 1, NULL, err), err, TIDE_NOT_FOUND, "tide.db");
    o.session = 999;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no session 999");
    expect_error(tide_viz_graph_legend_json(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no session 999");
    expect_error(tide_viz_graph_json(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no session 999");
    o.session = 0;
    o.version = 31337;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no graph version 31337");
    o.version = 0;
    o.run = run;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no run 424242");
    expect_error(tide_viz_timeline_json(vlog.path, &run, 1, NULL, err), err, TIDE_NOT_FOUND, "no run 424242");
    expect_error(tide_viz_chrome_trace(vlog.path, run, NULL, err), err, TIDE_NOT_FOUND, "no run 424242");
    o.run = 0;
    o.highlight = "no/such/node";
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "no node or scope named 'no/such/node'");
    o.highlight = NULL;
    o.aux_degree = -1;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_INVALID_ARGUMENT, "aux_degree");
    o.aux_degree = 0;
    o.num_expanded = 2;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_INVALID_ARGUMENT, "expanded");
    o.num_expanded = 0;
    o.color = (tide_viz_color)7;
    expect_error(tide_viz_graph_legend_json(vlog.path, &o, NULL, err), err, TIDE_INVALID_ARGUMENT, "colour");
    expect_error(tide_viz_graph_svg(vlog.path, NULL, NULL, err), err, TIDE_INVALID_ARGUMENT, "options");
    expect_error(tide_viz_timeline_json(vlog.path, &run, 0, NULL, err), err, TIDE_INVALID_ARGUMENT, "runs");
    /* a run that was not traced: no timings, no trace */
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(vlog.path, &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db, "INSERT INTO runs(id, step, run_id, traced) VALUES (5000, 99, 99, 0)", NULL, NULL,
                           NULL) == SQLITE_OK);
    sqlite3_close(db);
    expect_error(tide_viz_chrome_trace(vlog.path, 5000, NULL, err), err, TIDE_NOT_FOUND, "not traced");
    int64_t untraced = 5000;
    char *json = tide_viz_timeline_json(vlog.path, &untraced, 1, NULL, err);
    CU_ASSERT_PTR_NOT_NULL(json);
    CU_ASSERT(json && strstr(json, "\"lanes\":[],\"events\":[],\"transfers\":[]"));
    free(json);
    o.run = 5000;
    o.color = TIDE_VIZ_COLOR_TIME;
    expect_error(tide_viz_graph_svg(vlog.path, &o, NULL, err), err, TIDE_NOT_FOUND, "not traced");
    o.run = 0; /* a session that never ran: nothing to colour by time */
    expect_error(tide_viz_graph_svg(hostile.path, &o, NULL, err), err, TIDE_NOT_FOUND,
                 "has no traced run to colour by time");
    tide_error_free(err);
}

/* ---------------------------------------------------------------- the JSON builder */

static void test_json_builder(void)
{
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "s");
    tide_json_string(&j, "a\"b\\c\n\x01</script>&\xe2\x80\xa8");
    tide_json_key(&j, "bad");
    tide_json_string(&j, "x\xff\xc3(y");
    tide_json_key(&j, "list");
    tide_json_begin_array(&j);
    tide_json_int(&j, -12);
    tide_json_double(&j, 0.1);
    tide_json_double(&j, 1.0 / 0.0);
    tide_json_double(&j, -1.0 / 0.0);
    tide_json_double(&j, NAN);
    tide_json_bool(&j, true);
    tide_json_null(&j);
    tide_json_raw(&j, "[1,2]");
    tide_json_string(&j, NULL);
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    size_t len = 0;
    char *s = tide_json_take(&j, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(len, strlen(s));
    CU_ASSERT_STRING_EQUAL(s, "{\"s\":\"a\\\"b\\\\c\\u000a\\u0001\\u003c/script\\u003e\\u0026\\u2028\","
                              "\"bad\":\"x\\ufffd\\ufffd(y\",\"list\":[-12,0.1,\"Infinity\",\"-Infinity\",\"NaN\",true,null,"
                              "[1,2],null]}");
    CU_ASSERT(py_check(s, false, "d[\"s\"] == \"a\\\"b\\\\c\\n\\x01</script>&\\u2028\""));
    free(s);
    /* misuse fails and yields NULL: a value without a key, an unclosed container, a stray end */
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_int(&j, 1);
    CU_ASSERT(tide_json_failed(&j));
    CU_ASSERT_PTR_NULL(tide_json_take(&j, NULL));
    tide_json_init(&j);
    tide_json_begin_array(&j);
    CU_ASSERT_PTR_NULL(tide_json_take(&j, NULL));
    tide_json_init(&j);
    tide_json_end_array(&j);
    CU_ASSERT(tide_json_failed(&j));
    tide_json_free(&j);
    tide_json_init(&j);
    for (int i = 0; i <= TIDE_JSON_MAX_DEPTH; i++)
        tide_json_begin_array(&j);
    CU_ASSERT(tide_json_failed(&j));
    tide_json_free(&j);
    char *q = tide_json_quote("<\"x\">");
    CU_ASSERT_STRING_EQUAL(q, "\"\\u003c\\\"x\\\"\\u003e\"");
    free(q);
}

/* ---------------------------------------------------------------- threads */

static void *render_thread(void *arg)
{
    intptr_t ok = 1;
    for (int i = 0; i < 3; i++) {
        tide_viz_graph_options o;
        tide_viz_graph_options_init(&o);
        o.expand_all = (i + (intptr_t)arg) % 2;
        char *svg = tide_viz_graph_svg(vlog.path, &o, NULL, NULL);
        ok &= svg && strstr(svg, "id=\"node:sum\"") != NULL;
        free(svg);
        char *trace = tide_viz_chrome_trace(vlog.path, last_run, NULL, NULL);
        ok &= trace != NULL;
        free(trace);
    }
    return (void *)ok;
}

static void test_threads(void)
{
    setup_log();
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, render_thread, (void *)i) == 0);
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        CU_ASSERT(ok == (void *)1);
    }
}

/* TIDE_VIZ_TEST_KEEP=1 keeps the two logs (their paths are printed) for a look with sqlite3. */
static void cleanup(void)
{
    const char *keep = getenv("TIDE_VIZ_TEST_KEEP");
    if (keep && strcmp(keep, "1") == 0) {
        fprintf(stderr, "kept %s and %s\n", vlog.path, hostile.path);
        return;
    }
    if (vlog.store) {
        viz_log_close(&vlog);
        viz_log_remove(&vlog);
        viz_log_remove(&hostile);
    }
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_json_builder),
        TH_TEST(test_loop_iterations),
        TH_TEST(test_collapsed_and_expanded),
        TH_TEST(test_device_fills),
        TH_TEST(test_aux_nodes),
        TH_TEST(test_hostile_names),
        TH_TEST(test_highlight_and_time),
        TH_TEST(test_legend_and_graph_json),
        TH_TEST(test_timeline),
        TH_TEST(test_chrome_trace),
        TH_TEST(test_device_lanes),
        TH_TEST(test_fused_groups),
        TH_TEST(test_threads),
        TH_TEST(test_errors),
        TH_END,
    };
    int rc = th_main("viz", tests);
    cleanup();
    return rc;
}
