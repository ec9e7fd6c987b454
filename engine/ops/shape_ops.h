/* shape_ops.h — what the shape family's op definitions (engine/ops/shape_ops.c) share with their
 * kernels (kernels/cpu/shape.c): logic that must give the same result and the same message at graph
 * time and at run time is defined once, in shape_ops.c. Engine-private. */
#ifndef TIDE_SHAPE_OPS_H
#define TIDE_SHAPE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* The element count of Range: ceil((limit - start) / delta), TensorFlow's rules (start must not be
 * past limit in delta's direction). v holds the scalars start, limit and delta. Integers count
 * exactly in 64 bits without overflow; float32 divides in float and float64 in double, as
 * TensorFlow does. False with msg written on error. */
bool tide_shape_ops_range_count(const tide_tensor *const v[3], int64_t *n, char *msg, size_t size);

#endif
