/* bench_viz.c — speed of the graph view on realistic training graphs, built by the engine's own API and
 * logged through the real store:
 *   - viz.graph5000_ms: a ~5,000-node training graph (12 blocks of 10 dense layers with variables,
 *     gradients(), Adam's slots and updates, the initialisers, a global step, and 600 summaries a training
 *     loop added one per step), drawn as the graph page first shows it (scopes collapsed, training groups
 *     and series boxed); the median of several draws (goal: under 2,000 ms);
 *   - viz.graph5000_expanded_ms: the same with every scope asked open (the groups stay boxes);
 *   - viz.graph5000_everything_ms: every scope open and every group dissolved: the cap decides;
 *   - viz.graph5000_highlight_ms: outlining a node on that drawing without a new layout (the plan only);
 *   - viz.graph30000_expanded_ms: a 30,000-node graph of 300 scopes, every scope asked open (it took
 *     45.7 s and gave 24 MB of SVG before the cap).
 * Each line says what was drawn: nodes, items laid out, SVG bytes, and whether the cap changed it.
 * TIDE_VIZ_BENCH_LARGE=0 skips the 30,000-node graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_util.h"
#include "viz.h"
#include "viz/viz_log.h"

#define BLOCKS 12
#define LAYERS 10
#define WIDTH 8
#define SUMMARIES 600

static void must(bool ok, const char *what, tide_error *err)
{
    if (!ok) {
        fprintf(stderr, "bench_viz: %s: %s\n", what, tide_error_message(err));
        exit(1);
    }
}

/* One dense layer "block_B/layer_L": relu(matmul(in, W) + b), W and b variables. Returns its output. */
static const char *dense(tide_graph *g, int b, int l, const char *in, tide_error *err)
{
    static char out[64];
    char scope[48], text[1024], name[96];
    snprintf(scope, sizeof scope, "block_%d/layer_%d", b, l);
    char w[WIDTH * WIDTH * 5 + 1] = "", z[WIDTH * 3 + 1] = "";
    for (int i = 0; i < WIDTH * WIDTH; i++)
        strcat(w, i ? ", 0.1" : "0.1");
    for (int i = 0; i < WIDTH; i++)
        strcat(z, i ? ", 0" : "0");
    snprintf(text, sizeof text, "%s/w0 = Const(value=tensor(float32, [%d, %d], [%s]), dtype=float32)\n"
             "%s/b0 = Const(value=tensor(float32, [%d], [%s]), dtype=float32)\n",
             scope, WIDTH, WIDTH, w, scope, WIDTH, z);
    must(tide_graph_extend_text(g, text, err) == TIDE_OK, "layer constants", err);
    char wname[96], bname[96];
    snprintf(wname, sizeof wname, "%s/W", scope);
    snprintf(bname, sizeof bname, "%s/b", scope);
    snprintf(name, sizeof name, "%s/w0", scope);
    must(tide_variable_new(g, wname, (tide_output){tide_graph_node(g, name), 0}, true, err) != NULL, "W", err);
    snprintf(name, sizeof name, "%s/b0", scope);
    must(tide_variable_new(g, bname, (tide_output){tide_graph_node(g, name), 0}, true, err) != NULL, "b", err);
    snprintf(text, sizeof text,
             "%s/mm = MatMul(%s, %s, transpose_a=false, transpose_b=false, T=float32)\n"
             "%s/add = Add(%s/mm, %s, T=float32)\n%s/relu = Relu(%s/add, T=float32)\n",
             scope, in, wname, scope, scope, bname, scope, scope);
    must(tide_graph_extend_text(g, text, err) == TIDE_OK, "layer", err);
    snprintf(out, sizeof out, "%s/relu", scope);
    return out;
}

static tide_graph *training_graph(void)
{
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    char text[512], x[WIDTH * 4 * 2 + 1] = "";
    for (int i = 0; i < 2 * WIDTH; i++)
        strcat(x, i ? ", 1" : "1");
    snprintf(text, sizeof text, "x = Const(value=tensor(float32, [2, %d], [%s]), dtype=float32)\n", WIDTH, x);
    must(tide_graph_extend_text(g, text, err) == TIDE_OK, "x", err);
    char in[64] = "x";
    for (int b = 0; b < BLOCKS; b++)
        for (int l = 0; l < LAYERS; l++)
            snprintf(in, sizeof in, "%s", dense(g, b, l, in, err));
    snprintf(text, sizeof text, "sq = Square(%s, T=float32)\naxes = Const(value=tensor(int32, [2], [0, 1]), "
             "dtype=int32)\nloss = Sum(sq, axes, keep_dims=false, T=float32, Tidx=int32)\n", in);
    must(tide_graph_extend_text(g, text, err) == TIDE_OK, "loss", err);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.001);
    tide_node *step = tide_global_step(g, err);
    must(step && tide_optimizer_minimize(g, &opt, (tide_output){tide_graph_node(g, "loss"), 0}, NULL, 0, step, err),
         "minimize", err);
    must(tide_global_variables_initializer(g, err) != NULL, "init", err);
    /* what `run({train, summary("loss", loss)})` in a loop leaves behind: one summary per step */
    for (int i = 0; i < SUMMARIES; i++) {
        snprintf(text, sizeof text, "scalarsummary%s%.0d = ScalarSummary(loss, tag=\"loss\", T=float32)\n",
                 i ? "_" : "", i);
        must(tide_graph_extend_text(g, text, err) == TIDE_OK, "summary", err);
    }
    tide_error_free(err);
    return g;
}

/* 30,000 nodes in 300 scopes of 100 Neg chains each. */
static tide_graph *large_graph(void)
{
    tide_error *err = tide_error_new();
    tide_graph *g = tide_graph_new();
    char line[160];
    for (int s = 0; s < 300; s++)
        for (int i = 0; i < 100; i++) {
            if (i == 0)
                snprintf(line, sizeof line, "s%03dx/n000 = Const(value=tensor(float32, [], [1]), dtype=float32)\n", s);
            else
                snprintf(line, sizeof line, "s%03dx/n%03d = Neg(s%03dx/n%03d, T=float32)\n", s, i, s, i - 1);
            must(tide_graph_extend_text(g, line, err) == TIDE_OK, "large graph", err);
        }
    tide_error_free(err);
    return g;
}

typedef struct drawn {
    size_t bytes;
    int items, notes;
    long long cost;
} drawn;

static double draw_ms(const char *path, const tide_viz_graph_options *o, drawn *d)
{
    tide_error *err = tide_error_new();
    double t0 = bench_now();
    char *svg = tide_viz_graph_svg(path, o, &d->bytes, err);
    double ms = (bench_now() - t0) * 1e3;
    must(svg != NULL, "draw", err);
    char *legend = tide_viz_graph_legend_json(path, o, NULL, err);
    must(legend != NULL, "legend", err);
    const char *items = strstr(legend, "\"items\":"), *notes = strstr(legend, "\"notes\":[");
    const char *cost = strstr(legend, "\"layout_cost\":");
    d->items = items ? atoi(items + 8) : -1;
    d->cost = cost ? atoll(cost + 14) : -1;
    d->notes = notes && notes[9] != ']';
    free(legend);
    free(svg);
    tide_error_free(err);
    return ms;
}

static void emit(const char *name, double ms, int nodes, const drawn *d, const char *note)
{
    char extra[400];
    snprintf(extra, sizeof extra, "\"nodes\": %d, \"items_drawn\": %d, \"layout_cost\": %lld, \"svg_bytes\": %zu, "
             "\"capped\": %s, \"note\": \"%s\"", nodes, d->items, d->cost, d->bytes, d->notes ? "true" : "false", note);
    bench_emit(name, ms, "ms", extra);
}

int main(void)
{
    viz_log log;
    viz_log_open_graph(&log, 1, training_graph());
    int nodes = tide_graph_num_nodes(log.graph);
    viz_log_close(&log);

    enum { REPEATS = 7 };
    double ms[REPEATS];
    drawn d = {0};
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    for (int i = 0; i < REPEATS; i++)
        ms[i] = draw_ms(log.path, &o, &d);
    emit("viz.graph5000_ms", bench_median(ms, REPEATS), nodes, &d,
         "the page's first view: scopes collapsed, training groups and series boxed; median of 7; goal 2000");
    o.expand_all = true;
    double t = draw_ms(log.path, &o, &d);
    emit("viz.graph5000_expanded_ms", t, nodes, &d, "every scope asked open (the training groups stay boxes)");
    const char *dissolve[] = {"group:gradients", "group:optimizer", "group:init"};
    o.expanded = dissolve;
    o.num_expanded = 3;
    t = draw_ms(log.path, &o, &d);
    emit("viz.graph5000_everything_ms", t, nodes, &d, "every scope open and every group dissolved: the cap decides");
    o.num_expanded = 0;
    /* highlight: the plan only, on a drawing already made */
    o.expand_all = false;
    draw_ms(log.path, &o, &d);
    tide_error *err = tide_error_new();
    size_t len = 0;
    char *svg = tide_viz_graph_svg(log.path, &o, &len, err);
    must(svg != NULL, "draw", err);
    o.highlight = "block_7/layer_3/mm";
    for (int i = 0; i < REPEATS; i++) {
        double t0 = bench_now();
        char *marked = tide_viz_graph_highlight(log.path, &o, svg, len, NULL, err);
        ms[i] = (bench_now() - t0) * 1e3;
        must(marked != NULL, "highlight", err);
        free(marked);
    }
    d.bytes = len;
    emit("viz.graph5000_highlight_ms", bench_median(ms, REPEATS), nodes, &d,
         "outlining a node on the drawing without a new layout; median of 7");
    free(svg);
    tide_error_free(err);
    viz_log_remove(&log);

    const char *large = getenv("TIDE_VIZ_BENCH_LARGE");
    if (!large || strcmp(large, "0") != 0) {
        viz_log_open_graph(&log, 1, large_graph());
        nodes = tide_graph_num_nodes(log.graph);
        viz_log_close(&log);
        tide_viz_graph_options_init(&o);
        o.expand_all = true;
        t = draw_ms(log.path, &o, &d);
        emit("viz.graph30000_expanded_ms", t, nodes, &d,
             "300 scopes of 100 nodes, every scope asked open (45.7 s and 24 MB before the cap)");
        viz_log_remove(&log);
    }
    return 0;
}
