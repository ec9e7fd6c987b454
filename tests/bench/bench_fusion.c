/* bench_fusion.c — element-wise fusion (docs/fusion.md) and the memory bandwidth it works against.
 *
 *  - memcpy_gb_per_s: the machine's copy bandwidth in the same run (bytes read + bytes written per
 *    second, a 64 MiB buffer, on 1 and on 2 threads each copying half; the 2-thread figure is the
 *    value, as the engine's kernels use both cores).
 *  - fusion.adam_update_gb_per_s: ApplyAdam over a parameter of 16M float32 (64 MiB) with 2 threads,
 *    one fused kernel already: the bytes it must move per step (var, m, v and grad read; var, m and
 *    v written: 7 x 64 MiB) over its median step time, with pct_of_memcpy beside it.
 *  - fusion.chain_speedup: ReluGrad(dy, Relu(BiasAdd(x, b))) over [128, 512] float32 (a layer's
 *    activation and its gradient; 256 KiB per tensor) fused (one pass, no intermediate tensors) and
 *    unfused (three kernels); fusion.chain_large_speedup the same over [1024, 4096] (16 MiB each), in interleaved rounds of the same process; medians of the rounds. Both wall and process
 *    CPU times and the executions per run (the 3 Consts and 1 group fused, 3 + 3 unfused) are in the line.
 *
 * Quick (well under a minute); prints one JSON line per figure. Timings on a loaded machine are
 * noisy: the coordinator measures on a quiet one. */
#include <pthread.h>
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

#define ROUNDS 7
#define COPY_BYTES ((size_t)64 << 20)
#define ADAM_N ((int64_t)16 << 20)

static void fail(const char *what, tide_error *err)
{
    fprintf(stderr, "bench_fusion: %s: %s\n", what, err ? tide_error_message(err) : "failed");
    exit(1);
}

/* ---------------------------------------------------------------- memcpy */

typedef struct copy_part {
    char *dst;
    const char *src;
    size_t n;
} copy_part;

static void *copy_thread(void *arg)
{
    copy_part *p = arg;
    memcpy(p->dst, p->src, p->n);
    return NULL;
}

/* Median GB/s (read + written) of copying COPY_BYTES with `threads` threads (1 or 2). */
static double memcpy_gb_per_s(char *dst, const char *src, int threads)
{
    double t[ROUNDS];
    for (int r = -1; r < ROUNDS; r++) {
        double t0 = bench_now();
        if (threads == 1) {
            memcpy(dst, src, COPY_BYTES);
        } else {
            copy_part half[2] = {{dst, src, COPY_BYTES / 2}, {dst + COPY_BYTES / 2, src + COPY_BYTES / 2, COPY_BYTES / 2}};
            pthread_t other;
            pthread_create(&other, NULL, copy_thread, &half[1]);
            copy_thread(&half[0]);
            pthread_join(other, NULL);
        }
        if (r >= 0)
            t[r] = bench_now() - t0;
    }
    return 2.0 * (double)COPY_BYTES / bench_median(t, ROUNDS) / 1e9;
}

/* ---------------------------------------------------------------- graph helpers */

static tide_node *constant(tide_graph *g, tide_tensor *value, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_tensor_release(value);
    return tide_node_builder_finish(b, err);
}

static tide_tensor *filled(int rank, const int64_t *dims, float v0, float step, tide_error *err)
{
    tide_shape s = tide_shape_make(rank, dims);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, err);
    if (!t)
        fail("tensor", err);
    float *p = tide_tensor_data(t);
    int64_t n = tide_shape_num_elements(&s);
    for (int64_t i = 0; i < n; i++)
        p[i] = v0 + step * (float)(i % 1000);
    return t;
}

static tide_node *scalar(tide_graph *g, float v, tide_error *err)
{
    return constant(g, filled(0, NULL, v, 0, err), err);
}

static tide_node *op(tide_graph *g, const char *name, tide_node *a, tide_node *b, tide_error *err)
{
    tide_node_builder *nb = tide_node_builder_new(g, name, NULL);
    tide_node_builder_add_input(nb, (tide_output){a, 0});
    if (b)
        tide_node_builder_add_input(nb, (tide_output){b, 0});
    tide_node *n = tide_node_builder_finish(nb, err);
    if (!n)
        fail(name, err);
    return n;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Mean seconds of one of `reps` runs (fetching fetch or running target), after 3 warm-up runs; *cpu
 * (if not NULL): the process's CPU seconds per run meanwhile (all threads: steadier than the wall
 * time on a loaded machine). */
static double time_runs(tide_session *s, tide_node *fetch, tide_node *target, int reps, double *cpu,
                        tide_error *err)
{
    double total = 0, c0 = 0;
    for (int r = -3; r < reps; r++) {
        tide_output o = {fetch, 0};
        tide_tensor *out = NULL;
        if (r == 0)
            c0 = cpu_now();
        double t0 = bench_now();
        if (tide_session_run(s, NULL, NULL, 0, &o, fetch ? 1 : 0, &out, &target, target ? 1 : 0, NULL, err) != TIDE_OK)
            fail("run", err);
        tide_tensor_release(out);
        if (r >= 0)
            total += bench_now() - t0;
    }
    if (cpu)
        *cpu = (cpu_now() - c0) / reps;
    return total / reps;
}

static int executions(tide_session *s, tide_node *fetch, tide_error *err)
{
    tide_run_options o = {.trace = true};
    tide_output f = {fetch, 0};
    tide_tensor *out = NULL;
    tide_step_stats *stats = NULL;
    if (tide_session_run(s, &o, NULL, 0, &f, 1, &out, NULL, 0, &stats, err) != TIDE_OK)
        fail("traced run", err);
    int n = tide_step_stats_count(stats);
    tide_step_stats_free(stats);
    tide_tensor_release(out);
    return n;
}

/* ---------------------------------------------------------------- ApplyAdam */

static void bench_adam(tide_engine *e, double copy2, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    int64_t dims[1] = {ADAM_N};
    tide_node *vars[3];
    const char *names[3] = {"var", "m", "v"};
    for (int i = 0; i < 3; i++) {
        tide_node *c = constant(g, filled(1, dims, i == 2 ? 0.01f : 0.5f, 1e-4f, err), err);
        vars[i] = c ? tide_variable_new(g, names[i], (tide_output){c, 0}, true, err) : NULL;
        if (!vars[i])
            fail("variable", err);
    }
    tide_node *grad = constant(g, filled(1, dims, -0.5f, 1e-3f, err), err);
    tide_node_builder *b = tide_node_builder_new(g, "ApplyAdam", "adam");
    for (int i = 0; i < 3; i++)
        tide_node_builder_add_input(b, (tide_output){vars[i], 0});
    float scalars[6] = {0.9f, 0.999f, 1e-3f, 0.9f, 0.999f, 1e-8f}; /* powers, lr, beta1, beta2, epsilon */
    for (int i = 0; i < 6; i++)
        tide_node_builder_add_input(b, (tide_output){scalar(g, scalars[i], err), 0});
    tide_node_builder_add_input(b, (tide_output){grad, 0});
    tide_node *adam = tide_node_builder_finish(b, err);
    tide_node *init = tide_global_variables_initializer(g, err);
    tide_session *s = adam && init ? tide_session_new(e, g, NULL, err) : NULL;
    if (!s || tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK)
        fail("adam graph", err);
    double t[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        t[r] = time_runs(s, NULL, adam, 3, NULL, err);
    double step = bench_median(t, ROUNDS), bytes = 7.0 * (double)ADAM_N * 4;
    char extra[300];
    snprintf(extra, sizeof extra, "\"elements\": %lld, \"bytes_per_step\": %.0f, \"step_ms\": %.3f, \"threads\": 2, "
             "\"memcpy_gb_per_s\": %.2f, \"pct_of_memcpy\": %.1f", (long long)ADAM_N, bytes, step * 1e3, copy2,
             100.0 * bytes / step / 1e9 / copy2);
    bench_emit("fusion.adam_update_gb_per_s", bytes / step / 1e9, "GB/s", extra);
    tide_session_free(s);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- bias add + ReLU + its gradient */

/* name: the figure; rows x cols float32; runs per round. */
static void bench_chain(tide_engine *e, const char *name, int64_t rows, int64_t cols, int runs, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    int64_t xd[2] = {rows, cols}, bd[1] = {cols};
    tide_node *x = constant(g, filled(2, xd, -1.0f, 0.002f, err), err);
    tide_node *bias = constant(g, filled(1, bd, -0.25f, 0.001f, err), err);
    tide_node *dy = constant(g, filled(2, xd, 0.5f, -0.001f, err), err);
    tide_node *h = op(g, "BiasAdd", x, bias, err);
    tide_node *r = op(g, "Relu", h, NULL, err);
    tide_node *grad = op(g, "ReluGrad", dy, r, err);
    tide_session *fused = tide_session_new(e, g, NULL, err);
    tide_session *plain = tide_session_new(e, g, &(tide_session_options){.no_fusion = true}, err);
    if (!fused || !plain)
        fail("sessions", err);
    int nf = executions(fused, grad, err), np = executions(plain, grad, err);
    double tf[ROUNDS], tp[ROUNDS], cf[ROUNDS], cp[ROUNDS];
    for (int round = 0; round < ROUNDS; round++) { /* interleaved: the machine's state hits both alike */
        tf[round] = time_runs(fused, grad, NULL, runs, &cf[round], err);
        tp[round] = time_runs(plain, grad, NULL, runs, &cp[round], err);
    }
    double mf = bench_median(tf, ROUNDS), mp = bench_median(tp, ROUNDS);
    char extra[400];
    snprintf(extra, sizeof extra, "\"shape\": [%lld, %lld], \"dtype\": \"float32\", \"fused_us\": %.2f, "
             "\"unfused_us\": %.2f, \"fused_cpu_us\": %.2f, \"unfused_cpu_us\": %.2f, \"executions_fused\": %d, "
             "\"executions_unfused\": %d, \"rounds\": %d, \"runs_per_round\": %d, \"threads\": 2", (long long)rows,
             (long long)cols, mf * 1e6, mp * 1e6, bench_median(cf, ROUNDS) * 1e6, bench_median(cp, ROUNDS) * 1e6, nf,
             np, ROUNDS, runs);
    bench_emit(name, mp / mf, "x", extra);
    tide_session_free(fused);
    tide_session_free(plain);
    tide_graph_free(g);
}

int main(void)
{
    tide_error *err = tide_error_new();
    char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
    if (!src || !dst)
        fail("buffers", NULL);
    memset(src, 1, COPY_BYTES);
    memset(dst, 0, COPY_BYTES);
    double copy1 = memcpy_gb_per_s(dst, src, 1), copy2 = memcpy_gb_per_s(dst, src, 2);
    free(src);
    free(dst);
    char extra[200];
    snprintf(extra, sizeof extra, "\"bytes\": %zu, \"threads\": 2, \"one_thread_gb_per_s\": %.2f, "
             "\"counted\": \"read + written\"", COPY_BYTES, copy1);
    bench_emit("memcpy_gb_per_s", copy2, "GB/s", extra);
    tide_engine *e = bench_engine_new(2, 0, 0);
    bench_adam(e, copy2, err);
    bench_chain(e, "fusion.chain_speedup", 128, 512, 300, err);
    bench_chain(e, "fusion.chain_large_speedup", 1024, 4096, 5, err);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
