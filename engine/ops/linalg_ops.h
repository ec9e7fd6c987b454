/* linalg_ops.h — what the matrix ops' definitions (engine/ops/linalg_ops.c) share with their
 * kernels (kernels/cpu/linalg.c, matmul.c): the check that an input is a batch of square matrices
 * and BatchMatMul's rule for batch dimensions, defined once in linalg_ops.c so that the shape
 * functions and the kernels give the same messages. Engine-private. */
#ifndef TIDE_LINALG_OPS_H
#define TIDE_LINALG_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "../tide_op.h"

/* Checks that s (possibly partial) is a batch of square matrices as far as known: rank >= 2 and
 * the last two dimensions equal where both are known. False with msg written (TIDE_OP_MSG_MAX
 * bytes are enough) when it is not. */
bool tide_linalg_check_square(const tide_shape *s, char *msg, size_t size);

/* BatchMatMul's rule for batch dimensions bx and by (possibly partial): the same rank and equal
 * dimensions where both are known. True with *merged the more specific of the two; false when they
 * differ. */
bool tide_linalg_same_batches(const tide_shape *bx, const tide_shape *by, tide_shape *merged);

#endif
