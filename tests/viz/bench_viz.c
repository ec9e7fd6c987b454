/* bench_viz.c — rendering speed of the graph view (viz.graph5000_ms): a 5,001-node graph (50 blocks x
 * 10 layers x 10 Adds, all using one shared constant, which is therefore auxiliary) logged through the
 * real store with one traced run, then drawn collapsed by scope (the default view) several times; the
 * median is the result (goal: under 2,000 ms). The fully expanded drawing is timed once, for
 * information (viz.graph5000_expanded_ms; set TIDE_VIZ_BENCH_EXPANDED=0 to skip it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_util.h"
#include "viz.h"
#include "viz/viz_log.h"

#define BLOCKS 50
#define LAYERS 10
#define PER_LAYER 10

static char *graph_text(void)
{
    size_t cap = (size_t)BLOCKS * LAYERS * PER_LAYER * 128 + 256, len = 0;
    char *text = malloc(cap), prev[64] = "";
    if (!text)
        return NULL;
    len += (size_t)snprintf(text + len, cap - len, "one = Const(value=tensor(float32, [], [1]), dtype=float32)\n");
    for (int b = 0; b < BLOCKS; b++)
        for (int l = 0; l < LAYERS; l++)
            for (int i = 0; i < PER_LAYER; i++) {
                char name[64];
                snprintf(name, sizeof name, "block%02d/layer%d/add%d", b, l, i);
                if (!prev[0])
                    len += (size_t)snprintf(text + len, cap - len,
                                            "%s = Const(value=tensor(float32, [], [0]), dtype=float32)\n", name);
                else
                    len += (size_t)snprintf(text + len, cap - len, "%s = Add(%s, one, T=float32)\n", name, prev);
                snprintf(prev, sizeof prev, "%s", name);
            }
    return text;
}

static double render_ms(const char *path, bool expand_all, size_t *bytes)
{
    tide_viz_graph_options o;
    tide_viz_graph_options_init(&o);
    o.expand_all = expand_all;
    tide_error *err = tide_error_new();
    double t0 = bench_now();
    char *svg = tide_viz_graph_svg(path, &o, bytes, err);
    double ms = (bench_now() - t0) * 1e3;
    if (!svg) {
        fprintf(stderr, "bench_viz: %s\n", tide_error_message(err));
        exit(1);
    }
    free(svg);
    tide_error_free(err);
    return ms;
}

int main(void)
{
    char *text = graph_text();
    if (!text)
        return 1;
    viz_log log;
    viz_log_open(&log, 1, text);
    free(text);
    char last[64];
    snprintf(last, sizeof last, "block%02d/layer%d/add%d", BLOCKS - 1, LAYERS - 1, PER_LAYER - 1);
    viz_log_run(&log, last, 1);
    int nodes = tide_graph_num_nodes(log.graph);
    viz_log_close(&log);

    enum { REPEATS = 7 };
    double ms[REPEATS];
    size_t bytes = 0;
    for (int i = 0; i < REPEATS; i++)
        ms[i] = render_ms(log.path, false, &bytes);
    char extra[160];
    snprintf(extra, sizeof extra, "\"nodes\": %d, \"svg_bytes\": %zu, \"repeats\": %d, \"goal_ms\": 2000", nodes,
             bytes, REPEATS);
    bench_emit("viz.graph5000_ms", bench_median(ms, REPEATS), "ms", extra);
    const char *expanded = getenv("TIDE_VIZ_BENCH_EXPANDED");
    if (!expanded || strcmp(expanded, "0") != 0) {
        double t = render_ms(log.path, true, &bytes);
        snprintf(extra, sizeof extra, "\"nodes\": %d, \"svg_bytes\": %zu, \"note\": \"every scope expanded\"", nodes,
                 bytes);
        bench_emit("viz.graph5000_expanded_ms", t, "ms", extra);
    }
    viz_log_remove(&log);
    return 0;
}
