/* logic_ops.h — what the logic family's op definitions (engine/ops/logic_ops.c) share with their
 * kernels (kernels/cpu/logic.c): TensorFlow 1.x Select's shape rule, checked with the same message
 * at graph time (on partial shapes) and at run time. Engine-private. */
#ifndef TIDE_LOGIC_OPS_H
#define TIDE_LOGIC_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "../tide_op.h"

/* Select(condition, t, e) of TensorFlow 1.x: t and e have one shape (no broadcasting), and the
 * condition is a scalar, has that shape, or is a vector as long as t's first dimension (it picks
 * whole rows). Unknown ranks and dims (-1) fit anything. False with msg written otherwise. */
bool tide_logic_select_shapes_fit(const tide_shape *c, const tide_shape *t, const tide_shape *e,
                                  char *msg, size_t size);

#endif
