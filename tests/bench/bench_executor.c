/* bench_executor.c — the executor's cost per node, on two shapes of graph with 10,000 scalar float32
 * Adds: a chain (each Add waits for the previous one: pure scheduling latency) and a wide graph (all
 * independent: ready-queue throughput, two pool threads). One Run per repetition; medians reported.
 * Prints executor.chain_us_per_node and executor.wide_us_per_node: a run's median time over the nodes
 * it executed, counted from a traced run (nodes_executed in the JSON line), so that what plans merge
 * or prune cannot go unnoticed. The wide Adds each read a constant of their own (one + k_i): 10,000
 * identical one + one were merged into one node by CSE, which made the figure 0.003 us "per node"
 * (bug 10); the wide run executes 10,000 Adds and their 10,000 constants. */
#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

#define NODES 10000
#define REPS 31

static tide_node *build(tide_graph *g, const char *op, tide_output *ins, int n, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, ins[i]);
    return tide_node_builder_finish(b, err);
}

static tide_node *scalar(tide_graph *g, float v, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_tensor *t = tide_tensor_new_scalar(TIDE_FLOAT32, &v, err);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_tensor_release(t);
    return tide_node_builder_finish(b, err);
}

/* The number of nodes one Run fetching `fetch` (if not NULL) or running `target` executes, from the
 * timings of a traced run. */
static int nodes_executed(tide_session *s, tide_node *fetch, tide_node *target, tide_error *err)
{
    tide_run_options opts = {.trace = true};
    tide_output o = {fetch, 0};
    tide_tensor *out = NULL;
    tide_step_stats *stats = NULL;
    if (tide_session_run(s, &opts, NULL, 0, &o, fetch ? 1 : 0, &out, &target, target ? 1 : 0, &stats, err) != TIDE_OK) {
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
        exit(1);
    }
    int n = tide_step_stats_count(stats);
    tide_step_stats_free(stats);
    tide_tensor_release(out);
    return n;
}

/* Median seconds of one Run fetching `fetch` (if not NULL) or running `target`. */
static double time_runs(tide_session *s, tide_node *fetch, tide_node *target, float *result, tide_error *err)
{
    double t[REPS];
    for (int r = -3; r < REPS; r++) { /* 3 warm-up runs build and cache the plan */
        tide_tensor *out = NULL;
        tide_output o = {fetch, 0};
        double t0 = bench_now();
        tide_status st = tide_session_run(s, NULL, NULL, 0, &o, fetch ? 1 : 0, &out, &target, target ? 1 : 0,
                                          NULL, err);
        double dt = bench_now() - t0;
        if (st != TIDE_OK) {
            fprintf(stderr, "run failed: %s\n", tide_error_message(err));
            exit(1);
        }
        if (out)
            *result = *(float *)tide_tensor_data(out);
        tide_tensor_release(out);
        if (r >= 0)
            t[r] = dt;
    }
    return bench_median(t, REPS);
}

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(2, 0, 0);
    /* Chain: a_0 = one, a_i = a_{i-1} + one. */
    tide_graph *g = tide_graph_new();
    tide_node *one = scalar(g, 1.0f, err);
    tide_node *last = one;
    for (int i = 0; i < NODES && last; i++) {
        tide_output ins[2] = {{last, 0}, {one, 0}};
        last = build(g, "Add", ins, 2, err);
    }
    /* Wide: NODES independent Adds one + k_i (k_i a constant of its own, so that no two are alike), grouped
     * under a NoOp by control edges. */
    tide_node_builder *nb = tide_node_builder_new(g, "NoOp", "wide");
    for (int i = 0; i < NODES && last; i++) {
        tide_node *k = scalar(g, (float)(i + 2), err); /* none equal to one: it would merge */
        tide_output ins[2] = {{one, 0}, {k, 0}};
        tide_node *n = k ? build(g, "Add", ins, 2, err) : NULL;
        if (!n)
            last = NULL;
        tide_node_builder_add_control_input(nb, n);
    }
    tide_node *wide = last ? tide_node_builder_finish(nb, err) : NULL;
    if (!last || !wide) {
        fprintf(stderr, "building failed: %s\n", tide_error_message(err));
        return 1;
    }
    tide_session *s = tide_session_new(e, g, NULL, err);
    float result = 0;
    double chain = time_runs(s, last, NULL, &result, err);
    if (result != (float)(NODES + 1)) {
        fprintf(stderr, "chain computed %g, expected %d\n", result, NODES + 1);
        return 1;
    }
    char extra[200];
    int executed = nodes_executed(s, last, NULL, err);
    snprintf(extra, sizeof extra, "\"adds\": %d, \"nodes_executed\": %d, \"threads\": 2, \"median_run_ms\": %.3f",
             NODES, executed, chain * 1e3);
    bench_emit("executor.chain_us_per_node", chain / executed * 1e6, "us", extra);
    double w = time_runs(s, NULL, wide, &result, err);
    executed = nodes_executed(s, NULL, wide, err);
    if (executed < 2 * NODES) {
        fprintf(stderr, "the wide run executed %d nodes, expected at least %d: were nodes merged?\n", executed, 2 * NODES);
        return 1;
    }
    snprintf(extra, sizeof extra, "\"adds\": %d, \"nodes_executed\": %d, \"threads\": 2, \"median_run_ms\": %.3f",
             NODES, executed, w * 1e3);
    bench_emit("executor.wide_us_per_node", w / executed * 1e6, "us", extra);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
