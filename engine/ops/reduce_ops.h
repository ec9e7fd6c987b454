/* reduce_ops.h — what the reductions' op definitions (engine/ops/reduce_ops.c) share with their
 * kernels (kernels/cpu/reduce.c): checking the reduction axes and ArgMax/ArgMin's dimension,
 * defined once in reduce_ops.c so that the shape functions and the kernels accept the same values
 * with the same messages. Engine-private. */
#ifndef TIDE_REDUCE_OPS_H
#define TIDE_REDUCE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* Checks the axes (an int32/int64 tensor of any shape) against an input of known rank `in`; sets
 * bit a of *mask for each axis a, normalised. False with msg written (TIDE_OP_MSG_MAX bytes are
 * enough) when an axis is out of range or repeated. */
bool tide_reduce_axes_mask(const tide_shape *in, const tide_tensor *axes, unsigned *mask, char *msg,
                           size_t size);

/* Checks ArgMax/ArgMin's dimension a against an input of known rank >= 1 `in`; *axis receives it
 * normalised. False with msg written (TIDE_OP_MSG_MAX bytes are enough) when it is out of range or
 * that dimension is empty (there is no index to return). */
bool tide_reduce_arg_axis(const tide_shape *in, int64_t a, int *axis, char *msg, size_t size);

#endif
