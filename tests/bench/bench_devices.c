/* bench_devices.c — what the simulated accelerator's machinery costs (docs/devices.md):
 *  - sim.chain_us_per_node: a chain of 1,000 scalar Adds placed on /sim:0 (each one a kernel launched
 *    on the device's compute stream, completing asynchronously back to the executor), per node
 *    executed, against the same chain on /cpu:0 in the same run (sim.cpu_chain_us_per_node);
 *  - sim.copy_gb_per_s: 64 MiB host -> device -> host through tide_engine_copy_to_device and
 *    tide_tensor_to_host (bytes moved both ways over the time), and sim.copy_us for a 4-byte tensor
 *    both ways (the fixed cost of a copy: two hand-overs to stream threads and an event).
 * These are the figures behind the simulated device's entries in its cost table (launch_s,
 * copy_latency_s, copy_bytes_per_s). Medians of 15 repetitions. */
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

#define NODES 1000
#define REPS 15

static void check(bool ok, const char *what, tide_error *err)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", what, tide_error_message(err));
        exit(1);
    }
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

/* Median seconds per node of a chain of NODES Adds built on `device`. */
static double chain_us(tide_engine *e, const char *device, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, device);
    tide_node *one = scalar(g, 1.0f, err), *last = one;
    for (int i = 0; i < NODES && last; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Add", NULL);
        tide_node_builder_add_input(b, (tide_output){last, 0});
        tide_node_builder_add_input(b, (tide_output){one, 0});
        last = tide_node_builder_finish(b, err);
    }
    tide_graph_pop_device(g);
    check(last != NULL, "building", err);
    tide_session *s = tide_session_new(e, g, NULL, err);
    double t[REPS];
    for (int r = -3; r < REPS; r++) {
        tide_tensor *out = NULL;
        tide_output o = {last, 0};
        double t0 = bench_now();
        check(tide_session_run(s, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err) == TIDE_OK, "run", err);
        double dt = bench_now() - t0;
        check(*(float *)tide_tensor_data(out) == (float)(NODES + 1), "wrong sum", err);
        tide_tensor_release(out);
        if (r >= 0)
            t[r] = dt;
    }
    tide_run_options traced = {.trace = true}; /* the nodes a run executes, counted */
    tide_step_stats *stats = NULL;
    tide_tensor *out = NULL;
    tide_output o = {last, 0};
    check(tide_session_run(s, &traced, NULL, 0, &o, 1, &out, NULL, 0, &stats, err) == TIDE_OK, "traced run", err);
    int executed = tide_step_stats_count(stats);
    tide_step_stats_free(stats);
    tide_tensor_release(out);
    tide_session_free(s);
    tide_graph_free(g);
    check(executed > NODES, "the chain was not executed node by node", err);
    return bench_median(t, REPS) / executed * 1e6;
}

/* Median seconds of a copy of t to device 1 and back. */
static double round_trip_s(tide_engine *e, const tide_tensor *t, tide_error *err)
{
    double times[REPS];
    for (int r = -2; r < REPS; r++) {
        double t0 = bench_now();
        tide_tensor *on = tide_engine_copy_to_device(e, t, 1, err);
        tide_tensor *back = on ? tide_tensor_to_host(on, err) : NULL;
        double dt = bench_now() - t0;
        check(back && memcmp(tide_tensor_data(back), tide_tensor_data(t), tide_tensor_byte_size(t)) == 0,
              "copy", err);
        tide_tensor_release(on);
        tide_tensor_release(back);
        if (r >= 0)
            times[r] = dt;
    }
    return bench_median(times, REPS);
}

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(2, 0, 1);
    char extra[160];
    double cpu = chain_us(e, "/cpu:0", err), sim = chain_us(e, "/sim:0", err);
    snprintf(extra, sizeof extra, "\"adds\": %d, \"cpu_us_per_node\": %.2f", NODES, cpu);
    bench_emit("sim.chain_us_per_node", sim, "us", extra);
    bench_emit("sim.cpu_chain_us_per_node", cpu, "us", "\"adds\": 1000");

    int64_t n = 16 << 20; /* 64 MiB of float32 */
    float *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)i;
    tide_tensor *big = tide_tensor_new_copy(TIDE_FLOAT32, &(tide_shape){1, {n}}, v, sizeof *v * (size_t)n, err);
    free(v);
    check(big != NULL, "tensor", err);
    double s = round_trip_s(e, big, err);
    snprintf(extra, sizeof extra, "\"bytes\": %lld, \"round_trip_ms\": %.2f", (long long)(2 * 4 * n), s * 1e3);
    bench_emit("sim.copy_gb_per_s", 2.0 * 4.0 * (double)n / s / 1e9, "GB/s", extra);
    float one = 1;
    tide_tensor *small = tide_tensor_new_scalar(TIDE_FLOAT32, &one, err);
    bench_emit("sim.copy_us", round_trip_s(e, small, err) / 2 * 1e6, "us", "\"bytes\": 4, \"per\": \"copy\"");
    tide_tensor_release(small);
    tide_tensor_release(big);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
