/* array_ops.h — what the array family's op definitions (engine/ops/array_ops.c) share with their
 * kernels (kernels/cpu/array.c): StridedSlice's spec resolution and its masks, SplitV's sizes, and
 * axis normalisation with its message, defined once in array_ops.c so that the shape functions and the
 * kernels can never disagree. Engine-private. */
#ifndef TIDE_ARRAY_OPS_H
#define TIDE_ARRAY_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

#define TIDE_SS_NUM_MASKS 5 /* StridedSlice's masks */
#define TIDE_SS_MAX_SPEC 32 /* entries of StridedSlice's begin/end/strides */

/* Reads StridedSlice's five mask attrs (begin_mask, end_mask, ellipsis_mask, new_axis_mask,
 * shrink_axis_mask) into masks, in that order, the order tide_array_strided_slice takes them in;
 * a missing one leaves its entry as it was. */
void tide_array_ss_masks(const tide_attrs *attrs, int64_t masks[TIDE_SS_NUM_MASKS]);

/* StridedSlice's spec (n entries of begin/end/strides and the five masks) resolved against the
 * input shape `in` (known rank; dims may be -1), as TensorFlow's ValidateStridedSliceOp does.
 * begin and end may be NULL when unknown. Fills, per input dimension, dense_begin (the first index
 * read; meaningful where the size is known and > 0) and dense_stride, the processing shape (one
 * size per input dimension, -1 where unknown) and the final shape (new axes added, shrunk axes
 * removed). On failure returns the code with the message in msg. */
tide_status tide_array_strided_slice(const tide_shape *in, int64_t n, const int64_t *begin,
                                     const int64_t *end, const int64_t *strides,
                                     const int64_t masks[TIDE_SS_NUM_MASKS], int64_t *dense_begin,
                                     int64_t *dense_stride, tide_shape *processing,
                                     tide_shape *final, char *msg, size_t msg_size);

/* SplitV's size_splits: n sizes, each >= 0 but for at most one -1, which takes what the others
 * leave of the split dimension's size dim; all of them must add up to dim. Writes the resolved
 * sizes to out. dim -1 (unknown at graph time): only the sizes themselves are checked, and an
 * inferred size stays -1. False with msg written otherwise. */
bool tide_array_split_sizes(const int64_t *sizes, int n, int64_t dim, int64_t *out, char *msg, size_t size);

/* Normalises axis into [0, rank); false if outside [-rank, rank). */
bool tide_array_normalize_axis(int64_t axis, int rank, int64_t *out);

/* Writes the message for an axis outside [-rank, rank) of `what`, of shape s, to msg (report it as
 * TIDE_OUT_OF_RANGE); returns msg. TIDE_OP_MSG_MAX bytes are enough. */
char *tide_array_axis_message(int64_t axis, int rank, const tide_shape *s, const char *what,
                              char *msg, size_t size);

#endif
