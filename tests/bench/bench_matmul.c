/* bench_matmul.c — what tide adds on top of OpenBLAS: Session.Run of one float32 N x N MatMul (inputs
 * fed, output fetched) against a direct cblas_sgemm of the same size in the same process, runs
 * in alternating blocks, medians compared. Prints matmul.N.ratio_vs_cblas (1.00 = no overhead) and GFLOP/s.
 * tide runs OpenBLAS single-threaded and splits products over its own pool; the baseline gets
 * OpenBLAS's own threads (one per core), as a program calling cblas_sgemm directly would. On a CPU
 * with AVX-512 tide's MatMul runs its own float32 GEMM instead (kernels/cpu/gemm_avx512.c; the
 * "tide_gemm" field says which), so the ratio also holds the two GEMMs' difference in speed;
 * TIDE_CPU_ISA=avx2 measures the overhead over OpenBLAS alone. bench_gemm.c compares the GEMMs. */
#include <cblas.h>
#include <string.h>
#include <time.h>

#include "../../kernels/cpu/gemm.h"
#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

static tide_tensor *random_matrix(int n)
{
    tide_shape s = tide_shape_matrix(n, n);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    float *d = tide_tensor_data(t);
    uint32_t x = 12345;
    for (int64_t i = 0; i < (int64_t)n * n; i++) {
        x = x * 1664525u + 1013904223u;
        d[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    }
    return t;
}

static tide_node *placeholder(tide_graph *g, const char *name, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    return tide_node_builder_finish(b, err);
}

static int bench_size(tide_engine *e, int n, int reps, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_node *a = placeholder(g, "a", err), *b = placeholder(g, "b", err);
    tide_node_builder *nb = tide_node_builder_new(g, "MatMul", "mm");
    tide_node_builder_add_input(nb, (tide_output){a, 0});
    tide_node_builder_add_input(nb, (tide_output){b, 0});
    tide_node *mm = tide_node_builder_finish(nb, err);
    tide_session *s = mm ? tide_session_new(e, g, NULL, err) : NULL;
    if (!s) {
        fprintf(stderr, "%s\n", tide_error_message(err));
        return 1;
    }
    tide_tensor *ta = random_matrix(n), *tb = random_matrix(n);
    float *c = aligned_alloc(64, sizeof(float) * (size_t)n * (size_t)n);
    tide_feed feeds[2] = {{{a, 0}, ta}, {{b, 0}, tb}};
    tide_output fetch = {mm, 0};
    double *t_blas = calloc((size_t)reps, sizeof(double)), *t_tide = calloc((size_t)reps, sizeof(double));
    /* Blocks of runs rather than single runs interleaved: OpenBLAS's threads keep spinning for a while
     * after a call (OPENBLAS_THREAD_TIMEOUT) and would steal the cores from tide's threads right after
     * it; each block of cblas runs is followed by a pause that outlasts the spinning. */
    const int block = reps < 5 ? reps : 5;
    for (int done = -block; done < reps; done += block) {
        openblas_set_num_threads(tide_engine_num_threads(e));
        for (int r = done; r < done + block && r < reps; r++) {
            double t0 = bench_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, tide_tensor_data(ta), n,
                        tide_tensor_data(tb), n, 0.0f, c, n);
            if (r >= 0)
                t_blas[r] = bench_now() - t0;
        }
        openblas_set_num_threads(1);
        nanosleep(&(struct timespec){0, 300000000}, NULL);
        for (int r = done; r < done + block && r < reps; r++) {
            tide_tensor *out = NULL;
            double t0 = bench_now();
            if (tide_session_run(s, NULL, feeds, 2, &fetch, 1, &out, NULL, 0, NULL, err) != TIDE_OK) {
                fprintf(stderr, "%s\n", tide_error_message(err));
                return 1;
            }
            if (r >= 0)
                t_tide[r] = bench_now() - t0;
            tide_tensor_release(out);
        }
    }
    double mb = bench_median(t_blas, reps), mt = bench_median(t_tide, reps);
    double flops = 2.0 * n * n * (double)n;
    char name[64], extra[240];
    snprintf(name, sizeof name, "matmul.%d.ratio_vs_cblas", n);
    snprintf(extra, sizeof extra, "\"tide_gflops\": %.1f, \"cblas_gflops\": %.1f, \"reps\": %d, \"a\": [%d, %d], \"b\": [%d, %d], "
             "\"tide_gemm\": \"%s\"",
             flops / mt * 1e-9, flops / mb * 1e-9, reps, n, n, n, n,
             tide_gemm_f32_available() ? "own (AVX-512)" : "OpenBLAS");
    bench_emit(name, mt / mb, "ratio", extra);
    free(t_blas);
    free(t_tide);
    free(c);
    tide_tensor_release(ta);
    tide_tensor_release(tb);
    tide_session_free(s);
    tide_graph_free(g);
    return 0;
}

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(2, 0, 0);
    int rc = bench_size(e, 256, 201, err) || bench_size(e, 1024, 31, err) || bench_size(e, 2048, 11, err);
    tide_engine_free(e);
    tide_error_free(err);
    return rc;
}
