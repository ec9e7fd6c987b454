/* bench_executor.c — the executor's cost per node, on two shapes of graph with 10,000 scalar float32
 * Adds: a chain (each Add waits for the previous one: pure scheduling latency) and a wide graph (all
 * independent: ready-queue throughput, two pool threads). One Run per repetition; medians reported.
 * Prints executor.chain_us_per_node and executor.wide_us_per_node. */
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
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    tide_engine *e = tide_engine_new(&o, err);
    if (!e) {
        fprintf(stderr, "%s\n", tide_error_message(err));
        return 1;
    }
    /* Chain: a_0 = one, a_i = a_{i-1} + one. */
    tide_graph *g = tide_graph_new();
    tide_node *one = scalar(g, 1.0f, err);
    tide_node *last = one;
    for (int i = 0; i < NODES && last; i++) {
        tide_output ins[2] = {{last, 0}, {one, 0}};
        last = build(g, "Add", ins, 2, err);
    }
    /* Wide: NODES independent one + one, grouped under a NoOp by control edges. */
    tide_node_builder *nb = tide_node_builder_new(g, "NoOp", "wide");
    for (int i = 0; i < NODES && last; i++) {
        tide_output ins[2] = {{one, 0}, {one, 0}};
        tide_node *n = build(g, "Add", ins, 2, err);
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
    char extra[160];
    snprintf(extra, sizeof extra, "\"nodes\": %d, \"threads\": 2, \"median_run_ms\": %.3f", NODES, chain * 1e3);
    bench_emit("executor.chain_us_per_node", chain / NODES * 1e6, "us", extra);
    double w = time_runs(s, NULL, wide, &result, err);
    snprintf(extra, sizeof extra, "\"nodes\": %d, \"threads\": 2, \"median_run_ms\": %.3f", NODES, w * 1e3);
    bench_emit("executor.wide_us_per_node", w / NODES * 1e6, "us", extra);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
