/* bench_placement.c — the placer's speed: greedy placement (engine/placement.h) of a 10,000-node
 * graph on engines with 2 and 4 CPU devices, median of 5 placements after one warm-up. The graph is
 * 100 Consts [64, 64] and then MatMuls and Adds alternating, each reading two nodes drawn from the
 * 200 before it (a fixed pseudo-random draw), so nodes have inputs on several devices to weigh.
 * Prints placement.nodes_per_s (2 devices; the goal is over 100,000) and
 * placement.nodes_per_s.4_devices, each with the simulated makespans of greedy and naive placement. */
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "placement.h"

#define NODES 10000
#define CONSTS 100
#define WINDOW 200
#define REPS 5

static uint64_t rng = 88172645463325252ULL;

static int draw(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

static void die(const char *what, tide_error *err)
{
    fprintf(stderr, "%s: %s\n", what, tide_error_message(err));
    exit(1);
}

static tide_graph *build_graph(tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_node **nodes = malloc(sizeof *nodes * NODES);
    tide_tensor *value = tide_tensor_new(TIDE_FLOAT32, &(tide_shape){2, {64, 64}}, err);
    if (!g || !nodes || !value)
        die("building the graph", err);
    for (int i = 0; i < NODES; i++) {
        tide_node_builder *b;
        if (i < CONSTS) {
            b = tide_node_builder_new(g, "Const", NULL);
            tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
            tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
        } else {
            b = tide_node_builder_new(g, i % 2 ? "MatMul" : "Add", NULL);
            int lo = i > WINDOW ? i - WINDOW : 0;
            for (int k = 0; k < 2; k++)
                tide_node_builder_add_input(b, (tide_output){nodes[lo + draw(i - lo)], 0});
        }
        nodes[i] = tide_node_builder_finish(b, err);
        if (!nodes[i])
            die("building the graph", err);
    }
    tide_tensor_release(value);
    free(nodes);
    return g;
}

/* Places every node of g (ids are a topological order) REPS times; the median seconds. */
static double time_placement(tide_engine *e, tide_graph *g, const int *order, tide_placement_kind strategy,
                             double *simulated, tide_error *err)
{
    double t[REPS];
    for (int r = -1; r < REPS; r++) {
        tide_placement p;
        double t0 = bench_now();
        if (tide__place(e, g, order, NODES, NULL, NULL, NULL, strategy, NULL, NULL, &p, err) != TIDE_OK)
            die("placement", err);
        double dt = bench_now() - t0;
        *simulated = p.simulated_s;
        tide__placement_clear(&p);
        if (r >= 0)
            t[r] = dt;
    }
    return bench_median(t, REPS);
}

int main(void)
{
    tide_error *err = tide_error_new();
    tide_graph *g = build_graph(err);
    int *order = malloc(sizeof *order * NODES);
    if (!order)
        die("out of memory", err);
    for (int i = 0; i < NODES; i++)
        order[i] = i;
    const int devices[] = {2, 4};
    for (int k = 0; k < 2; k++) {
        tide_engine *e = bench_engine_new(1, devices[k], 0);
        double greedy_s, naive_s;
        double t = time_placement(e, g, order, TIDE_PLACEMENT_GREEDY, &greedy_s, err);
        time_placement(e, g, order, TIDE_PLACEMENT_NAIVE, &naive_s, err);
        char extra[256];
        snprintf(extra, sizeof extra,
                 "\"nodes\": %d, \"devices\": %d, \"median_ms\": %.3f, \"simulated_ms_greedy\": %.3f, "
                 "\"simulated_ms_naive\": %.3f", NODES, devices[k], t * 1e3, greedy_s * 1e3, naive_s * 1e3);
        bench_emit(k == 0 ? "placement.nodes_per_s" : "placement.nodes_per_s.4_devices", NODES / t, "nodes/s",
                   extra);
        tide_engine_free(e);
    }
    free(order);
    tide_graph_free(g);
    tide_error_free(err);
    return 0;
}
