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

/* C = op(A) op(B), single-threaded, row-major: op(A) is m x k, op(B) k x n, C m x n with row stride
 * ldc (C is written, never read first: beta = 0). ta: A is stored k x m (row stride lda), else m x k;
 * tb: B is stored n x k (row stride ldb), else k x n. k == 0 writes zeros. Returns false (and writes
 * nothing) when its packing buffer cannot be allocated. */
bool tide_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc);

#endif
