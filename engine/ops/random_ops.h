/* random_ops.h — what the random family's op definitions (engine/ops/random_ops.c) share with their
 * kernels (kernels/cpu/random.c): reading and checking the `shape` input, defined once in
 * random_ops.c so that the shape function and the kernels give the same shapes and messages.
 * Engine-private. */
#ifndef TIDE_RANDOM_OPS_H
#define TIDE_RANDOM_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "../tide_op.h"

/* The output shape a `shape` input asks for, from that input's (possibly partial) shape `in` and its
 * value v (NULL when not known): exact when v is given, of known rank when only the vector's length
 * is known, else unknown. Rejects what is already wrong (not a vector, more than TIDE_MAX_RANK
 * dimensions, a negative dimension, too many elements): false with msg written (TIDE_OP_MSG_MAX
 * bytes are enough). */
bool tide_random_output_shape(const tide_shape *in, const tide_tensor *v, tide_shape *out, char *msg,
                              size_t size);

#endif
