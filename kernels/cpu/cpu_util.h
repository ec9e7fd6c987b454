/* cpu_util.h — helpers shared by the CPU kernel families: NumPy broadcasting of two operands walked
 * row by row, and registering a family's table of kernels. Kernels only; the engine never includes
 * this. */
#ifndef TIDE_CPU_UTIL_H
#define TIDE_CPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../engine/tide_op.h"

/* Broadcasting a and b to out. After tide_bcast_init the shapes are collapsed (adjacent dims that
 * broadcast the same way are merged), so `rank` may be smaller than either input's.
 *   same:      a, b and out have identical shapes: index i is i in all three
 *   a_scalar / b_scalar: one side has exactly one element
 * Otherwise walk `rows` rows of `inner` elements: tide_bcast_row(bc, r, &ia, &ib) gives the element
 * offsets of row r's first element in a and b, and a_inner/b_inner (0 or 1) the step within a row. */
typedef struct tide_bcast {
    tide_shape out;          /* the broadcast shape, uncollapsed (allocate the output with this) */
    int64_t out_n;           /* elements of out */
    bool same, a_scalar, b_scalar;
    int rank;                /* collapsed rank (>= 1 unless out_n == 0 or scalar) */
    int64_t dims[TIDE_MAX_RANK];
    int64_t a_strides[TIDE_MAX_RANK], b_strides[TIDE_MAX_RANK]; /* 0 where broadcast */
    int64_t inner, rows, a_inner, b_inner;
} tide_bcast;

/* False if the shapes cannot broadcast (then write the error yourself with both shapes). */
bool tide_bcast_init(tide_bcast *bc, const tide_shape *a, const tide_shape *b);
void tide_bcast_row(const tide_bcast *bc, int64_t row, int64_t *a_off, int64_t *b_off);

/* One row of a family's kernel table (see tide_cpu_register_kernels). */
typedef struct tide_cpu_kernel {
    const char *op;
    tide_status (*compute)(tide_kernel_ctx *ctx);
    tide_status (*init)(tide_kernel_ctx *ctx, void **state); /* NULL: no per-node state */
    unsigned flags;                                          /* TIDE_KERNEL_* */
} tide_cpu_kernel;

/* Registers table[0..n) for device type "cpu" with no dtype constraints; the state a kernel's init
 * stores is freed with free(). */
void tide_cpu_register_kernels(const tide_cpu_kernel *table, size_t n);

#endif
