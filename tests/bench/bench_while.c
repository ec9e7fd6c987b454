/* bench_while.c — the cost of a loop iteration in the executor (while.us_per_iteration): one Run of a
 * while_loop of 10,000 iterations whose body is three scalar float32 ops (x = x * a + b, i = i + 1)
 * besides the loop's own (Merge, Switch, Identity, LoopCond, Less, NextIteration per variable). Prints
 * the median of the runs as one JSON line; with an argument N, runs N times (tests/bench/while_compare.py
 * interleaves it with the same loop in PyTorch). */
#include <stdlib.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

#define ITERATIONS 10000

static tide_output O(tide_node *n) { return (tide_output){n, 0}; }

static tide_node *op2(tide_graph *g, const char *op, tide_output a, tide_output b)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return tide_node_builder_finish(nb, NULL);
}

static tide_node *scalar(tide_graph *g, tide_dtype dt, double v)
{
    tide_tensor *d = tide_tensor_new_scalar(TIDE_FLOAT64, &v, NULL), *t = tide_tensor_cast(d, dt, NULL);
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_tensor_release(d);
    tide_tensor_release(t);
    return tide_node_builder_finish(b, NULL);
}

static tide_status cond_fn(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    *pred = O(op2(g, "Less", v[0], O(scalar(g, TIDE_INT32, ITERATIONS))));
    return TIDE_OK;
}

static tide_status body_fn(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    next[0] = O(op2(g, "Add", v[0], O(scalar(g, TIDE_INT32, 1))));
    next[1] = O(op2(g, "Add", O(op2(g, "Mul", v[1], O(scalar(g, TIDE_FLOAT32, 0.999)))), O(scalar(g, TIDE_FLOAT32, 0.001))));
    return TIDE_OK;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(2, 0, 0);
    tide_graph *g = tide_graph_new();
    tide_output init[2] = {O(scalar(g, TIDE_INT32, 0)), O(scalar(g, TIDE_FLOAT32, 1))}, res[2];
    if (tide_while_loop(g, cond_fn, body_fn, NULL, init, 2, NULL, res, err) != TIDE_OK) {
        fprintf(stderr, "bench_while: %s\n", tide_error_message(err));
        return 1;
    }
    tide_session *s = tide_session_new(e, g, NULL, err);
    double *t = malloc(sizeof *t * (size_t)(runs + 1));
    int nodes = tide_graph_num_nodes(g);
    float x = 0;
    for (int r = -1; r < runs; r++) { /* the first run makes the plan */
        tide_tensor *out[2] = {NULL, NULL};
        double t0 = bench_now();
        if (tide_session_run(s, NULL, NULL, 0, res, 2, out, NULL, 0, NULL, err) != TIDE_OK) {
            fprintf(stderr, "bench_while: %s\n", tide_error_message(err));
            return 1;
        }
        if (r >= 0)
            t[r] = bench_now() - t0;
        if (*(int32_t *)tide_tensor_data(out[0]) != ITERATIONS) {
            fprintf(stderr, "bench_while: the loop ran %d iterations, not %d\n", *(int32_t *)tide_tensor_data(out[0]),
                    ITERATIONS);
            return 1;
        }
        x = *(float *)tide_tensor_data(out[1]);
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
    }
    char extra[200];
    snprintf(extra, sizeof extra, "\"iterations\": %d, \"graph_nodes\": %d, \"body_ops\": 3, \"runs\": %d, \"x\": %.6g",
             ITERATIONS, nodes, runs, x);
    bench_emit("while.us_per_iteration", bench_median(t, runs) / ITERATIONS * 1e6, "us", extra);
    free(t);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
