/* bench_gemm.c — tide's own float32 GEMM (kernels/cpu/gemm_avx512.c) against OpenBLAS's cblas_sgemm on
 * the eight products of the MLP's training step (784-512-256-10, batch 128: tests/bench/numpy_mlp.py's
 * shapes and transposes: three forward x @ W, three weight gradients act^T @ delta, two input gradients
 * delta @ W^T).
 *   1. The kernels alone, one thread each (OpenBLAS set to 1 thread), in interleaved rounds, medians:
 *      gemm.mlp.<product>.speedup_vs_openblas with both GFLOP/s, and gemm.mlp.all8.speedup_vs_openblas
 *      for the eight together (the step's GEMM time). Timed by the thread's CPU clock, so that the
 *      time another process takes the core away is not counted (on a quiet machine it is the wall
 *      time; on a loaded one it still counts cache and memory contention).
 *   2. The eight as MatMul ops of one session (the engine's threads split each product, as in
 *      training), one run per product, against cblas_sgemm with OpenBLAS's own threads (one per core,
 *      as NumPy's GEMM ceiling in train_compare.py runs them): gemm.mlp.all8_threaded.steps_per_s for
 *      both and the ratio. Blocks of runs alternate, with a pause after OpenBLAS's that outlasts its
 *      spinning threads (see bench_matmul.c).
 * Without AVX-512 (or with $TIDE_CPU_ISA below it) tide's MatMul uses OpenBLAS itself: the lines say so
 * and part 1 is skipped. Usage: bench_gemm [ROUNDS] (default 15). */
#include <cblas.h>
#include <string.h>
#include <time.h>

#include "../../kernels/cpu/gemm.h"
#include "bench_util.h"
#include "tide.h"

typedef struct product {
    const char *what;
    int m, n, k;
    bool ta, tb;
} product;

#define NPRODUCTS 8
static const product PRODUCTS[NPRODUCTS] = {
    {"fwd1_128x784x512", 128, 512, 784, false, false}, {"fwd2_128x512x256", 128, 256, 512, false, false},
    {"fwd3_128x256x10", 128, 10, 256, false, false},   {"dw1_784x128x512", 784, 512, 128, true, false},
    {"dw2_512x128x256", 512, 256, 128, true, false},   {"dw3_256x128x10", 256, 10, 128, true, false},
    {"dx2_128x256x512", 128, 512, 256, false, true},   {"dx3_128x10x256", 128, 256, 10, false, true},
};

typedef struct operands {
    tide_tensor *a, *b; /* stored as the transposes say: a k x m when ta, b n x k when tb */
    float *c;
} operands;

static tide_tensor *random_matrix(int rows, int cols, uint32_t seed)
{
    tide_shape s = tide_shape_matrix(rows, cols);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    float *d = tide_tensor_data(t);
    for (int64_t i = 0; i < (int64_t)rows * cols; i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return t;
}

static void run_blas(const product *p, const operands *o)
{
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, p->m, p->n,
                p->k, 1.0f, tide_tensor_data(o->a), p->ta ? p->m : p->k, tide_tensor_data(o->b), p->tb ? p->k : p->n,
                0.0f, o->c, p->n);
}

static void run_own(const product *p, const operands *o)
{
    tide_gemm_f32(p->ta, p->tb, p->m, p->n, p->k, tide_tensor_data(o->a), p->ta ? p->m : p->k,
                  tide_tensor_data(o->b), p->tb ? p->k : p->n, o->c, p->n);
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double flops_of(const product *p) { return 2.0 * p->m * p->n * (double)p->k; }

/* Part 1: each product `reps` times per round, tide then OpenBLAS, one thread. */
static void kernels_alone(const operands *ops, int rounds)
{
    const int reps = 20;
    double *own = calloc((size_t)(NPRODUCTS * rounds), sizeof *own);
    double *blas = calloc((size_t)(NPRODUCTS * rounds), sizeof *blas);
    double *own_all = calloc((size_t)rounds, sizeof *own_all), *blas_all = calloc((size_t)rounds, sizeof *blas_all);
    openblas_set_num_threads(1);
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (int i = 0; i < NPRODUCTS; i++) {
            double t0 = thread_cpu_now();
            for (int x = 0; x < reps; x++)
                run_own(&PRODUCTS[i], &ops[i]);
            double t1 = thread_cpu_now();
            for (int x = 0; x < reps; x++)
                run_blas(&PRODUCTS[i], &ops[i]);
            double t2 = thread_cpu_now();
            if (r >= 0) {
                own[i * rounds + r] = (t1 - t0) / reps;
                blas[i * rounds + r] = (t2 - t1) / reps;
                own_all[r] += (t1 - t0) / reps;
                blas_all[r] += (t2 - t1) / reps;
            }
        }
    for (int i = 0; i < NPRODUCTS; i++) {
        const product *p = &PRODUCTS[i];
        double mo = bench_median(own + i * rounds, rounds), mb = bench_median(blas + i * rounds, rounds);
        char name[96], extra[256];
        snprintf(name, sizeof name, "gemm.mlp.%s.speedup_vs_openblas", p->what);
        snprintf(extra, sizeof extra,
                 "\"tide_gflops\": %.1f, \"openblas_gflops\": %.1f, \"m\": %d, \"n\": %d, \"k\": %d, "
                 "\"transpose_a\": %s, \"transpose_b\": %s, \"threads\": 1, \"clock\": \"thread CPU time\", "
                 "\"rounds\": %d",
                 flops_of(p) / mo * 1e-9, flops_of(p) / mb * 1e-9, p->m, p->n, p->k, p->ta ? "true" : "false",
                 p->tb ? "true" : "false", rounds);
        bench_emit(name, mb / mo, "ratio", extra);
    }
    double step_flops = 0;
    for (int i = 0; i < NPRODUCTS; i++)
        step_flops += flops_of(&PRODUCTS[i]);
    double mo = bench_median(own_all, rounds), mb = bench_median(blas_all, rounds);
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"tide_gflops\": %.1f, \"openblas_gflops\": %.1f, \"tide_us\": %.1f, \"openblas_us\": %.1f, "
             "\"threads\": 1, \"clock\": \"thread CPU time\", \"rounds\": %d",
             step_flops / mo * 1e-9, step_flops / mb * 1e-9, mo * 1e6, mb * 1e6, rounds);
    bench_emit("gemm.mlp.all8.speedup_vs_openblas", mb / mo, "ratio", extra);
    free(own);
    free(blas);
    free(own_all);
    free(blas_all);
}

/* Part 2's graph: one MatMul over two Placeholders per product. */
static tide_node *matmul_node(tide_graph *g, const product *p, int i, tide_node **pa, tide_node **pb, tide_error *err)
{
    char name[32];
    tide_node *in[2];
    for (int x = 0; x < 2; x++) {
        snprintf(name, sizeof name, "%c%d", "ab"[x], i);
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
        in[x] = tide_node_builder_finish(b, err);
    }
    snprintf(name, sizeof name, "mm%d", i);
    tide_node_builder *b = tide_node_builder_new(g, "MatMul", name);
    tide_node_builder_add_input(b, (tide_output){in[0], 0});
    tide_node_builder_add_input(b, (tide_output){in[1], 0});
    tide_attrs_set_bool(tide_node_builder_attrs(b), "transpose_a", p->ta);
    tide_attrs_set_bool(tide_node_builder_attrs(b), "transpose_b", p->tb);
    *pa = in[0];
    *pb = in[1];
    return tide_node_builder_finish(b, err);
}

/* Part 2: the eight through Session.Run on the engine's threads vs OpenBLAS's threads. */
static int threaded(tide_engine *e, const operands *ops, int rounds, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_node *mm[NPRODUCTS], *pa[NPRODUCTS], *pb[NPRODUCTS];
    for (int i = 0; i < NPRODUCTS; i++)
        if (!(mm[i] = matmul_node(g, &PRODUCTS[i], i, &pa[i], &pb[i], err)))
            return 1;
    tide_session *s = tide_session_new(e, g, NULL, err);
    if (!s)
        return 1;
    const int reps = 20;
    double *own = calloc((size_t)rounds, sizeof *own), *blas = calloc((size_t)rounds, sizeof *blas);
    for (int r = -1; r < rounds; r++) {
        openblas_set_num_threads(tide_engine_num_threads(e));
        double t0 = bench_now();
        for (int x = 0; x < reps; x++)
            for (int i = 0; i < NPRODUCTS; i++)
                run_blas(&PRODUCTS[i], &ops[i]);
        double t1 = bench_now();
        openblas_set_num_threads(1);
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        double t2 = bench_now();
        for (int x = 0; x < reps; x++)
            for (int i = 0; i < NPRODUCTS; i++) {
                tide_feed feeds[2] = {{{pa[i], 0}, ops[i].a}, {{pb[i], 0}, ops[i].b}};
                tide_output fetch = {mm[i], 0};
                tide_tensor *out = NULL;
                if (tide_session_run(s, NULL, feeds, 2, &fetch, 1, &out, NULL, 0, NULL, err) != TIDE_OK)
                    return 1;
                tide_tensor_release(out);
            }
        double t3 = bench_now();
        if (r >= 0) {
            blas[r] = (t1 - t0) / reps;
            own[r] = (t3 - t2) / reps;
        }
    }
    double mo = bench_median(own, rounds), mb = bench_median(blas, rounds);
    char extra[320];
    snprintf(extra, sizeof extra,
             "\"openblas_steps_per_s\": %.1f, \"tide_steps_per_s\": %.1f, \"threads\": %d, \"rounds\": %d, "
             "\"tide_gemm\": \"%s\", \"method\": \"the 8 products of a step: tide as 8 Session.Run calls of one "
             "MatMul each (engine threads), OpenBLAS as 8 cblas_sgemm calls on its own threads\"",
             1.0 / mb, 1.0 / mo, tide_engine_num_threads(e), rounds,
             tide_gemm_f32_available() ? "own (AVX-512)" : "OpenBLAS");
    bench_emit("gemm.mlp.all8_threaded.ratio_vs_openblas", mb / mo, "ratio", extra);
    free(own);
    free(blas);
    tide_session_free(s);
    tide_graph_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    if (rounds < 1)
        rounds = 1;
    operands ops[NPRODUCTS];
    for (int i = 0; i < NPRODUCTS; i++) {
        const product *p = &PRODUCTS[i];
        ops[i].a = p->ta ? random_matrix(p->k, p->m, 1u + (uint32_t)i) : random_matrix(p->m, p->k, 1u + (uint32_t)i);
        ops[i].b = p->tb ? random_matrix(p->n, p->k, 99u + (uint32_t)i) : random_matrix(p->k, p->n, 99u + (uint32_t)i);
        ops[i].c = aligned_alloc(64, (size_t)p->m * (size_t)p->n * sizeof(float) + 64);
    }
    if (tide_gemm_f32_available())
        kernels_alone(ops, rounds);
    else
        printf("{\"name\": \"gemm.mlp.all8.speedup_vs_openblas\", \"value\": null, \"unit\": \"ratio\", "
               "\"skipped\": \"tide's own GEMM needs AVX-512 (not on this CPU, or $TIDE_CPU_ISA caps it)\"}\n");
    tide_error *err = tide_error_new();
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    tide_engine *e = tide_engine_new(&o, err);
    int rc = !e || threaded(e, ops, rounds, err);
    if (rc)
        fprintf(stderr, "%s\n", tide_error_message(err));
    tide_engine_free(e);
    tide_error_free(err);
    for (int i = 0; i < NPRODUCTS; i++) {
        tide_tensor_release(ops[i].a);
        tide_tensor_release(ops[i].b);
        free(ops[i].c);
    }
    return rc;
}
