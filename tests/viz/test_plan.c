/* test_plan.c — the drawing rules of the graph view (viz/plan.c, groups.c, series.c): a training graph
 * built by the engine's own optimizer draws its gradients, optimizer and initialisers as one box each
 * beside the model, without edges to it; repeated structures (per-step nodes, copies of a scope) are
 * one series box, a chain of layers is not; the cap on what is laid out holds for a 6,000-node graph
 * (a drawing of a few boxes in bounded time, where there was a 5 MB, 495,000-point-wide SVG after
 * 5 s), for opening every scope of a large graph, and for a flat level too large to draw node by node;
 * the drawing says what the cap changed. Logs are written through the real store (viz_log.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "viz.h"
#include "viz/viz_check.h"
#include "viz/viz_log.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *draw(const char *path, const tide_viz_graph_options *o, size_t *len)
{
    tide_error *err = tide_error_new();
    char *svg = tide_viz_graph_svg(path, o, len, err);
    if (!svg)
        fprintf(stderr, "graph_svg: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(svg);
    tide_error_free(err);
    return svg;
}

static char *legend(const char *path, const tide_viz_graph_options *o)
{
    tide_error *err = tide_error_new();
    char *json = tide_viz_graph_legend_json(path, o, NULL, err);
    if (!json)
        fprintf(stderr, "legend: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(json);
    tide_error_free(err);
    return json;
}

static bool has_id(const char *svg, const char *id)
{
    char needle[256];
    snprintf(needle, sizeof needle, "id=\"%s\"", id);
    return strstr(svg, needle) != NULL;
}

/* Where the legend says a highlight of name is drawn ("" when nowhere). */
static void expect_highlight(const char *path, const char *name, const char *id)
{
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.highlight = name;
    char *json = legend(path, &o), expr[256];
    snprintf(expr, sizeof expr, "d[\"drawing\"][\"highlight\"] == \"%s\"", id);
    if (json && !py_check(json, false, expr))
        fprintf(stderr, "highlight of %s: expected %s\n", name, id);
    CU_ASSERT(json && py_check(json, false, expr));
    free(json);
}

/* ---------------------------------------------------------------- training groups */

static void fail_on(tide_status st, tide_error *err)
{
    if (st != TIDE_OK)
        fprintf(stderr, "building the graph: %s\n", tide_error_message(err));
    CU_ASSERT_FATAL(st == TIDE_OK);
}

/* A one-layer model trained with Adam and a global step, as tide's optimizer builds it. */
static tide_graph *training_graph(void)
{
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    fail_on(tide_graph_extend_text(g,
                                   "x = Const(value=tensor(float32, [2, 3], [1, 2, 3, 4, 5, 6]), dtype=float32)\n"
                                   "w0 = Const(value=tensor(float32, [3, 2], [1, 0, 0, 1, 1, 1]), dtype=float32)\n",
                                   err),
            err);
    tide_node *w = tide_variable_new(g, "layer/W", (tide_output){tide_graph_node(g, "w0"), 0}, true, err);
    fail_on(w ? TIDE_OK : TIDE_INTERNAL, err);
    fail_on(tide_graph_extend_text(g,
                                   "layer/mm = MatMul(x, layer/W, transpose_a=false, transpose_b=false, T=float32)\n"
                                   "sq = Square(layer/mm, T=float32)\n"
                                   "axes = Const(value=tensor(int32, [2], [0, 1]), dtype=int32)\n"
                                   "loss = Sum(sq, axes, keep_dims=false, T=float32, Tidx=int32)\n",
                                   err),
            err);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    tide_node *step = tide_global_step(g, err);
    tide_node *train = step ? tide_optimizer_minimize(g, &opt, (tide_output){tide_graph_node(g, "loss"), 0}, NULL,
                                                      0, step, err)
                            : NULL;
    fail_on(train ? TIDE_OK : TIDE_INTERNAL, err);
    fail_on(tide_global_variables_initializer(g, err) ? TIDE_OK : TIDE_INTERNAL, err);
    tide_error_free(err);
    return g;
}

static void test_training_groups(void)
{
    viz_log l;
    viz_log_open_graph(&l, 1, training_graph());
    viz_log_close(&l);
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    char *svg = draw(l.path, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(has_id(svg, "group:gradients") && has_id(svg, "group:optimizer") && has_id(svg, "group:init"));
    CU_ASSERT(has_id(svg, "cluster:__training__"));
    CU_ASSERT(has_id(svg, "node:loss") && has_id(svg, "node:x"));
    CU_ASSERT(!has_id(svg, "node:init") && !has_id(svg, "scope:gradients") && !has_id(svg, "scope:Adam"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "nodes, collapsed"));
    /* The model's edges to the groups are summarised, not drawn: every edge with a group at one end has
       a group at the other (Graphviz titles edges "tail->head" with the item's Graphviz name). */
    CU_ASSERT(py_check(svg, true,
                       "all((\"group:\" in t) == (t.count(\"group:\") == 2) for t in "
                       "[e.find(\"{http://www.w3.org/2000/svg}title\").text for e in r.iter() "
                       "if e.get(\"class\") == \"edge\"]) and "
                       "any(e.get(\"class\") == \"edge\" for e in r.iter())"));
    free(svg);
    expect_highlight(l.path, "layer/W/init", "group:init");
    expect_highlight(l.path, "layer/W/Adam_m", "group:optimizer"); /* a slot variable */
    expect_highlight(l.path, "global_step", "group:optimizer");
    expect_highlight(l.path, "gradients", "group:gradients");
    expect_highlight(l.path, "layer/mm", "scope:layer");
    /* dissolving one group puts its nodes back (their scopes collapsed as usual) */
    const char *dissolve[] = {"group:gradients"};
    o.expanded = dissolve;
    o.num_expanded = 1;
    svg = draw(l.path, &o, NULL);
    CU_ASSERT(svg && !has_id(svg, "group:gradients") && has_id(svg, "scope:gradients") &&
              has_id(svg, "group:optimizer"));
    free(svg);
    o.num_expanded = 0;
    o.expand_all = true; /* every scope open: the groups stay boxes */
    svg = draw(l.path, &o, NULL);
    CU_ASSERT(svg && has_id(svg, "group:gradients") && has_id(svg, "cluster:layer") && has_id(svg, "node:layer/mm"));
    free(svg);
    const char *all_groups[] = {"group:gradients", "group:optimizer", "group:init"};
    o.expanded = all_groups; /* ...unless dissolved too */
    o.num_expanded = 3;
    svg = draw(l.path, &o, NULL);
    CU_ASSERT(svg && !strstr(svg, "group:") && has_id(svg, "node:init") && has_id(svg, "cluster:gradients"));
    free(svg);
    viz_log_remove(&l);
}

/* A graph that never trains has no group. */
static void test_no_groups(void)
{
    viz_log l;
    viz_log_open(&l, 1, "a = Const(value=tensor(float32, [], [1]), dtype=float32)\nb = Neg(a, T=float32)\n");
    viz_log_close(&l);
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    char *svg = draw(l.path, &o, NULL);
    CU_ASSERT(svg && !strstr(svg, "group:") && !strstr(svg, "__training__") && has_id(svg, "node:b"));
    free(svg);
    viz_log_remove(&l);
}

/* ---------------------------------------------------------------- series */

static char *series_text(void)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len, "x = Const(value=tensor(float32, [], [1]), dtype=float32)\n");
    for (int i = 1; i <= 12; i++) /* per-step nodes: a series */
        len += (size_t)snprintf(t + len, cap - len, "s_%d = Neg(x, T=float32)\n", i);
    len += (size_t)snprintf(t + len, cap - len, "c = Neg(x, T=float32)\n"); /* a chain: not a series */
    for (int i = 1; i <= 6; i++) {
        char prev[16] = "c";
        if (i > 1)
            snprintf(prev, sizeof prev, "c_%d", i - 1);
        len += (size_t)snprintf(t + len, cap - len, "c_%d = Neg(%s, T=float32)\n", i, prev);
    }
    for (int i = 1; i <= 6; i++) /* copies of a scope: a series of scopes */
        len += (size_t)snprintf(t + len, cap - len, "tower_%d/a = Neg(x, T=float32)\ntower_%d/b = Neg(tower_%d/a, T=float32)\n",
                                i, i, i);
    return t;
}

static void test_series(void)
{
    char *text = series_text();
    viz_log l;
    viz_log_open(&l, 1, text);
    free(text);
    viz_log_close(&l);
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    char *svg = draw(l.path, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(has_id(svg, "series:s_*") && !has_id(svg, "node:s_3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">s_[1&#45;12]</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">12 nodes, collapsed</text>"));
    CU_ASSERT(!has_id(svg, "series:c_*") && has_id(svg, "node:c_1") && has_id(svg, "node:c_6"));
    CU_ASSERT(has_id(svg, "series:tower_*") && !has_id(svg, "scope:tower_2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">6 scopes, 12 nodes, collapsed</text>"));
    free(svg);
    expect_highlight(l.path, "s_7", "series:s_*");
    expect_highlight(l.path, "tower_2/b", "series:tower_*");
    /* listed keys keep a series apart; an opened scope leaves its series (5 copies still make one) */
    const char *apart[] = {"s_*", "tower_3"};
    o.expanded = apart;
    o.num_expanded = 2;
    svg = draw(l.path, &o, NULL);
    CU_ASSERT(svg && !has_id(svg, "series:s_*") && has_id(svg, "node:s_1") && has_id(svg, "node:s_12"));
    CU_ASSERT(svg && has_id(svg, "cluster:tower_3") && has_id(svg, "series:tower_*"));
    CU_ASSERT(svg && strstr(svg, ">5 scopes, 10 nodes, collapsed</text>"));
    free(svg);
    viz_log_remove(&l);
}

/* ---------------------------------------------------------------- the cap */

/* 6,000 nodes: `scopes` top-level scopes of nodes named without a numeric suffix (no series), each a
 * chain of Neg from one Const. scopes 0: all at the top level. */
static char *big_text(int nodes, int scopes)
{
    size_t cap = (size_t)nodes * 80 + 256, len = 0;
    char *t = malloc(cap);
    int per = scopes ? nodes / scopes : nodes;
    for (int i = 0; i < nodes; i++) {
        char scope[32] = "", name[48], prev[48];
        if (scopes)
            snprintf(scope, sizeof scope, "b%03dq/", i / per);
        snprintf(name, sizeof name, "%sv%05dz", scope, i);
        snprintf(prev, sizeof prev, "%sv%05dz", scope, i - 1);
        if (i % per == 0 || i % 2 == 0)
            len += (size_t)snprintf(t + len, cap - len, "%s = Const(value=tensor(float32, [], [1]), dtype=float32)\n", name);
        else
            len += (size_t)snprintf(t + len, cap - len, "%s = Neg(%s, T=float32)\n", name, prev);
    }
    return t;
}

static int items_of(const char *path, const tide_viz_graph_options *o)
{
    char *json = legend(path, o);
    const char *at = json ? strstr(json, "\"items\":") : NULL;
    int n = at ? atoi(at + 8) : -1;
    free(json);
    return n;
}

/* A log of big_text(6000, scopes) drawn with o: the SVG, its size and the seconds it took (printed). */
static char *draw_big(viz_log *l, int scopes, const tide_viz_graph_options *o, size_t *len, double *seconds)
{
    char *text = big_text(6000, scopes);
    viz_log_open(l, 1, text);
    free(text);
    viz_log_close(l);
    double t0 = now_s();
    char *svg = draw(l->path, o, len);
    *seconds = now_s() - t0;
    fprintf(stderr, "6,000 nodes in %d scopes%s: %zu bytes of SVG in %.2f s\n", scopes,
            o->expand_all ? ", all opened" : "", *len, *seconds);
    return svg;
}

/* The acceptance case: a 6,000-node graph used to give a 5 MB SVG 495,000 points wide after 5 s (a
 * blank panel in the browser). It gives a small capped drawing, bundled by op, saying so. */
static void test_cap_flat_6000(void)
{
    viz_log l;
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    size_t len = 0;
    double seconds;
    char *svg = draw_big(&l, 0, &o, &len, &seconds);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(len > 500 && len < 100000);
    CU_ASSERT(seconds < 20); /* a generous bound for sanitizer builds on a loaded machine */
    CU_ASSERT(has_id(svg, "ops:Const") && has_id(svg, "ops:Neg"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">3,000 nodes, collapsed</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "bundled by op"));
    free(svg);
    char *json = legend(l.path, &o);
    CU_ASSERT(json && py_check(json, false, "d[\"drawing\"][\"nodes\"] == 6000 and d[\"drawing\"][\"items\"] <= 600 "
                                            "and len(d[\"drawing\"][\"notes\"]) == 1"));
    free(json);
    viz_log_remove(&l);
}

/* Every scope of 6,000 nodes in 60 scopes opened: as many scopes open as fit under the cap, the others
 * stay collapsed and are named. A smaller cap opens fewer. */
static void test_cap_expand_all(void)
{
    viz_log l;
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.expand_all = true;
    size_t len = 0;
    double seconds;
    char *svg = draw_big(&l, 60, &o, &len, &seconds);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT(seconds < 60);
    CU_ASSERT(has_id(svg, "cluster:b000q") && has_id(svg, "scope:b059q"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "scopes are drawn collapsed: opening them would pass the cap of 600 items"));
    int items = items_of(l.path, &o);
    CU_ASSERT(items > 300 && items <= 600);
    free(svg);
    o.max_items = 150;
    items = items_of(l.path, &o);
    CU_ASSERT(items > 60 && items <= 150);
    o.max_items = -1;
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_viz_graph_svg(l.path, &o, NULL, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "max_items"));
    tide_error_free(err);
    viz_log_remove(&l);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_training_groups),
        TH_TEST(test_no_groups),
        TH_TEST(test_series),
        TH_TEST(test_cap_flat_6000),
        TH_TEST(test_cap_expand_all),
        TH_END,
    };
    return th_main("viz plan", tests);
}
