/* bench_vecwidth.c — the element-wise hot loops that dispatch on the instruction set at run time
 * (kernels/cpu/cpu_util.h: portable SSE2, AVX2+FMA, AVX-512), each run through Session.Run with the
 * ISA capped at each level in turn, in interleaved rounds in one process: round r times every op at
 * every ISA before round r + 1 starts, so a neighbour's load falls on all of them alike. Each figure
 * is the median over the rounds (argv[1] rounds, default 15), in nanoseconds per element, for
 * float32 tensors of N elements (argv[2], default 262,000: 1 MB per tensor, in the L2 cache, so the
 * loop's arithmetic shows and not the memory's bandwidth). Per op and ISA one JSON line
 * vecwidth.<op>.<isa>.ns_per_element, and per op vecwidth.<op>.speedup (portable / best ISA).
 * The CPU's best ISA is printed first (vecwidth.isa); ISAs the CPU lacks, or that $TIDE_CPU_ISA caps,
 * are left out. argv[3] runs only the ops whose name contains it: with $TIDE_CPU_ISA, instruction
 * counts per ISA (perf stat -e instructions) on a loaded machine. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../kernels/cpu/cpu_util.h"
#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

/* One benchmarked op: a graph of it over N float32 elements (%1$lld in the text), the node to run,
 * and whether its input x must be positive (roots). Apply ops update Variables set up by `init`. */
typedef struct bench_op {
    const char *name;
    const char *text;
    bool positive;
} bench_op;

#define VAR(n) n " = Variable(dtype=float32, shape=[%1$lld], container=\"\", shared_name=\"bench_vw_" n "\")\n"
#define INIT(n) "i_" n " = Assign(" n ", x)\n"
static const bench_op OPS[] = {
    {"exp", "x = Placeholder(dtype=float32)\n y = Exp(x)\n", false},
    {"sigmoid", "x = Placeholder(dtype=float32)\n y = Sigmoid(x)\n", false},
    {"tanh", "x = Placeholder(dtype=float32)\n y = Tanh(x)\n", false},
    {"sqrt", "x = Placeholder(dtype=float32)\n y = Sqrt(x)\n", true},
    {"rsqrt", "x = Placeholder(dtype=float32)\n y = Rsqrt(x)\n", true},
    {"softmax", "x = Placeholder(dtype=float32)\n r = Reshape(x, s)\n y = Softmax(r)\n"
                "s = Const(value=tensor(int32, [2], [-1, 1000]), dtype=int32)\n", false},
    {"log_softmax", "x = Placeholder(dtype=float32)\n r = Reshape(x, s)\n y = LogSoftmax(r)\n"
                    "s = Const(value=tensor(int32, [2], [-1, 1000]), dtype=int32)\n", false},
#define ROWS "r = Reshape(x, s)\n s = Const(value=tensor(int32, [2], [-1, 1000]), dtype=int32)\n"
#define AXES(v) "a = Const(value=tensor(int32, [" v "]), dtype=int32)\n"
    {"sum_last_axis", "x = Placeholder(dtype=float32)\n" ROWS AXES("1], [1") "y = Sum(r, a)\n", false},
    {"sum_first_axis", "x = Placeholder(dtype=float32)\n" ROWS AXES("1], [0") "y = Sum(r, a)\n", false},
    {"sum_all", "x = Placeholder(dtype=float32)\n" ROWS AXES("2], [0, 1") "y = Sum(r, a)\n", false},
    {"mean_last_axis", "x = Placeholder(dtype=float32)\n" ROWS AXES("1], [1") "y = Mean(r, a)\n", false},
    {"max_last_axis", "x = Placeholder(dtype=float32)\n" ROWS AXES("1], [1") "y = Max(r, a)\n", false},
    {"max_all", "x = Placeholder(dtype=float32)\n" ROWS AXES("2], [0, 1") "y = Max(r, a)\n", false},
    {"min_first_axis", "x = Placeholder(dtype=float32)\n" ROWS AXES("1], [0") "y = Min(r, a)\n", false},
#define SHAPE "x = Placeholder(dtype=float32)\n n = Const(value=tensor(int64, [1], [%1$lld]), dtype=int64)\n"
    {"random_uniform", SHAPE "y = RandomUniform(n, dtype=float32, seed=1, seed2=2)\n", false},
    {"random_normal", SHAPE "y = RandomNormal(n, dtype=float32, seed=1, seed2=2)\n", false},
    {"truncated_normal", SHAPE "y = TruncatedNormal(n, dtype=float32, seed=1, seed2=2)\n", false},
    {"apply_adam",
     "x = Placeholder(dtype=float32)\n" VAR("var") VAR("m") VAR("v") INIT("var") INIT("m") INIT("v")
     "init = NoOp(^i_var, ^i_m, ^i_v)\n"
     "b1p = Const(value=tensor(float32, [], [0.9]), dtype=float32)\n"
     "b2p = Const(value=tensor(float32, [], [0.999]), dtype=float32)\n"
     "lr = Const(value=tensor(float32, [], [0.001]), dtype=float32)\n"
     "b1 = Const(value=tensor(float32, [], [0.9]), dtype=float32)\n"
     "b2 = Const(value=tensor(float32, [], [0.999]), dtype=float32)\n"
     "eps = Const(value=tensor(float32, [], [1e-7]), dtype=float32)\n"
     "y = ApplyAdam(var, m, v, b1p, b2p, lr, b1, b2, eps, x)\n", true},
    {"apply_gradient_descent",
     "x = Placeholder(dtype=float32)\n" VAR("var") INIT("var") "init = NoOp(^i_var)\n"
     "lr = Const(value=tensor(float32, [], [0.001]), dtype=float32)\n"
     "y = ApplyGradientDescent(var, lr, x)\n", false},
};
#define NUM_OPS (sizeof OPS / sizeof OPS[0])
#define NUM_ISAS 3

typedef struct prepared {
    tide_graph *g;
    tide_session *s;
    tide_tensor *x;
    tide_node *y;
} prepared;

static bool prepare(tide_engine *e, const bench_op *op, int64_t n, prepared *p, tide_error *err)
{
    char text[4096];
    snprintf(text, sizeof text, op->text, (long long)n);
    p->g = tide_graph_new();
    if (tide_graph_extend_text(p->g, text, err) != TIDE_OK)
        return false;
    tide_shape shape = tide_shape_vector(n);
    p->x = tide_tensor_new(TIDE_FLOAT32, &shape, err);
    if (!p->x)
        return false;
    float *d = tide_tensor_data(p->x);
    uint32_t seed = 12345;
    for (int64_t i = 0; i < n; i++) { /* [-8, 8), or (0, 8] for roots and Adam's gradient */
        seed = seed * 1664525u + 1013904223u;
        float u = (float)(seed >> 8) / 16777216.0f;
        d[i] = op->positive ? 8.0f * (1.0f - u) : 16.0f * u - 8.0f;
    }
    p->y = tide_graph_node(p->g, "y");
    p->s = tide_session_new(e, p->g, NULL, err);
    if (!p->s)
        return false;
    tide_node *init = tide_graph_node(p->g, "init");
    tide_feed feed = {{tide_graph_node(p->g, "x"), 0}, p->x};
    return !init || tide_session_run(p->s, NULL, &feed, 1, NULL, 0, NULL, &init, 1, NULL, err) == TIDE_OK;
}

/* Seconds of one Session.Run of y (fetched, or run as a target for the Apply ops). */
static double run_once(prepared *p, bool fetch, tide_error *err)
{
    tide_feed feed = {{tide_graph_node(p->g, "x"), 0}, p->x};
    tide_output o = {p->y, 0};
    tide_tensor *out = NULL;
    double t0 = bench_now();
    tide_status st = fetch ? tide_session_run(p->s, NULL, &feed, 1, &o, 1, &out, NULL, 0, NULL, err)
                           : tide_session_run(p->s, NULL, &feed, 1, NULL, 0, NULL, &p->y, 1, NULL, err);
    double t = bench_now() - t0;
    tide_tensor_release(out);
    return st == TIDE_OK ? t : -1;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    int64_t n = argc > 2 ? atoll(argv[2]) : 262000;
    const char *only = argc > 3 ? argv[3] : NULL; /* ops whose name contains this */
    if (rounds < 1 || n < 1000 || n % 1000) {
        fprintf(stderr, "usage: bench_vecwidth [ROUNDS >= 1] [N, a multiple of 1000 (rows of the softmaxes)] [OPS]\n");
        return 2;
    }
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(0, 0, 0);
    int best = (int)tide_cpu_isa_active();
    char extra[256];
    snprintf(extra, sizeof extra, "\"isa\": \"%s\", \"elements\": %lld, \"rounds\": %d", tide_cpu_isa_name(best),
             (long long)n, rounds);
    bench_emit("vecwidth.isa", best, "level (0 portable, 1 avx2, 2 avx512)", extra);
    static prepared p[NUM_OPS];
    bool skip[NUM_OPS];
    for (size_t k = 0; k < NUM_OPS; k++)
        if (!(skip[k] = only && !strstr(OPS[k].name, only)) && !prepare(e, &OPS[k], n, &p[k], err)) {
            fprintf(stderr, "bench_vecwidth: %s: %s\n", OPS[k].name, tide_error_message(err));
            return 1;
        }
    double *t = calloc(NUM_OPS * NUM_ISAS * (size_t)rounds, sizeof *t);
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (size_t k = 0; k < NUM_OPS; k++)
            for (int isa = 0; isa <= best && !skip[k]; isa++) {
                tide_cpu_isa_limit((tide_cpu_isa)isa);
                double s = run_once(&p[k], strncmp(OPS[k].name, "apply", 5) != 0, err);
                if (s < 0) {
                    fprintf(stderr, "bench_vecwidth: %s: %s\n", OPS[k].name, tide_error_message(err));
                    return 1;
                }
                if (r >= 0)
                    t[(k * NUM_ISAS + (size_t)isa) * (size_t)rounds + (size_t)r] = s;
            }
    tide_cpu_isa_limit(TIDE_ISA_AVX512);
    for (size_t k = 0; k < NUM_OPS; k++) {
        if (skip[k])
            continue;
        double ns[NUM_ISAS];
        for (int isa = 0; isa <= best; isa++) {
            ns[isa] = bench_median(&t[(k * NUM_ISAS + (size_t)isa) * (size_t)rounds], rounds) * 1e9 / (double)n;
            char name[96];
            snprintf(name, sizeof name, "vecwidth.%s.%s.ns_per_element", OPS[k].name,
                     tide_cpu_isa_name((tide_cpu_isa)isa));
            snprintf(extra, sizeof extra, "\"elements\": %lld, \"rounds\": %d, \"median_of\": \"interleaved rounds\"",
                     (long long)n, rounds);
            bench_emit(name, ns[isa], "ns", extra);
        }
        char name[96];
        snprintf(name, sizeof name, "vecwidth.%s.speedup", OPS[k].name);
        snprintf(extra, sizeof extra, "\"portable_ns\": %.4g, \"%s_ns\": %.4g", ns[0],
                 tide_cpu_isa_name((tide_cpu_isa)best), ns[best]);
        bench_emit(name, ns[0] / ns[best], "x (portable / best ISA)", extra);
        tide_session_free(p[k].s);
        tide_graph_free(p[k].g);
        tide_tensor_release(p[k].x);
    }
    free(t);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
