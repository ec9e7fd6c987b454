/* op_util.h — helpers shared by the op definitions of several families (engine/ops/<family>_ops.c)
 * and by their kernels (kernels/<device>/<family>.c), so that a shape function and its kernel read
 * index inputs and word their messages the same way: reading integer index tensors as int64_t, and
 * formatting index values for messages. Engine-private: not part of the public API (tide.h,
 * tide_op.h); kernels may include it, the engine never includes a kernel header. */
#ifndef TIDE_OP_UTIL_H
#define TIDE_OP_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* Room for any message the family helpers (shape_ops.h, array_ops.h, ...) write into a caller's
 * buffer: a sentence with a few shapes or value lists, each at most TIDE_SHAPE_STR_MAX. */
#define TIDE_OP_MSG_MAX 512

/* Element i of an integer tensor (int32, int64, uint8) as int64; 0 for other dtypes, which no
 * index input accepts. */
int64_t tide_op_int_at(const tide_tensor *t, int64_t i);

/* Reads an int32/int64 vector (or scalar) into out[0..cap); returns its length (may exceed cap). */
int64_t tide_op_index_values(const tide_tensor *v, int64_t *out, int64_t cap);

/* "[2, -1]": index values as given (negatives kept, unlike tide_shape_format). Returns buf. */
char *tide_op_format_values(const int64_t *v, int64_t n, char *buf, size_t size);

#endif
