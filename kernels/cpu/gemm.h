/* gemm.h — tide's own float32 matrix product (gemm_avx512.c), used by the MatMul family (matmul.c)
 * in place of OpenBLAS's sgemm where the CPU has AVX-512. Kernels only. */
#ifndef TIDE_CPU_GEMM_H
#define TIDE_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* Rows and columns of C one micro-kernel call computes: callers splitting a product over threads cut
 * it at multiples of these so that no part gets a ragged tile it need not have. */
#define TIDE_GEMM_MR 14
#define TIDE_GEMM_NR 32

/* True when tide_gemm_f32 may be called: the CPU runs AVX-512 and the active ISA
 * (tide_cpu_isa_active: $TIDE_CPU_ISA, tide_cpu_isa_limit) allows it. */
bool tide_gemm_f32_available(void);

/* Whether tide_gemm_f32 beats OpenBLAS's sgemm on a product with an m x n output: at least 8 rows,
 * 8 columns and 1024 elements. Below that its packing and its 14 x 32 tile cost more than they
 * save: a sweep of m, n in 1..512 and k = 16, 256, all four transposes, one thread, thread CPU time
 * (load ~25) found it up to 4x slower than OpenBLAS on 1..4-row or -column products (which
 * OpenBLAS runs as matrix-vector products), about even around 16 x 16 or 128 x 8, and 0.5-0.9x
 * OpenBLAS's time from 16 x 64, 64 x 16 and 8 x 512 on. */
bool tide_gemm_f32_suits(int64_t m, int64_t n);

/* C = op(A) op(B), single-threaded, row-major: op(A) is m x k, op(B) k x n, C m x n with row stride
 * ldc (C is written, never read first: beta = 0). ta: A is stored k x m (row stride lda), else m x k;
 * tb: B is stored n x k (row stride ldb), else k x n. k == 0 writes zeros. Returns false (and writes
 * nothing) when its packing buffer cannot be allocated. */
bool tide_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc);

#endif
