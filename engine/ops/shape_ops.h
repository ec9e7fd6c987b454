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

/* Gather's geometry, for params of rank p_rank and indices of rank i_rank (the ranks must be known):
 * checks axis (in [-p_rank, p_rank)) and batch_dims (in [-i_rank, i_rank), below p_rank and not
 * past the axis: TensorFlow's GatherV2 rules) and normalises them into *ax and *bd. False with msg
 * written when they do not fit, or when the result would have more than TIDE_MAX_RANK dims. */
bool tide_shape_ops_gather_axes(int p_rank, int i_rank, int64_t axis, int64_t batch_dims, int *ax,
                                int *bd, char *msg, size_t size);

/* DynamicStitch's pair m: data of shape indices + slice, *inner gets the slice's shape (unknown when
 * a rank is); first_inner (data[0]'s slice, or NULL) must be compatible with it. Partial shapes (-1)
 * fit anything. False with msg written otherwise. */
bool tide_shape_ops_stitch_inner(const tide_shape *indices, const tide_shape *data, const tide_shape *first_inner,
                                 int m, tide_shape *inner, char *msg, size_t size);

#endif
