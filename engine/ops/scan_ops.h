/* scan_ops.h — what the cumulative ops' definitions (engine/ops/scan_ops.c) share with their kernels
 * (kernels/cpu/scan.c): the check of the scan axis, with one message at graph and run time.
 * Engine-private. */
#ifndef TIDE_SCAN_OPS_H
#define TIDE_SCAN_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* axis against x (of known rank): x not a scalar, axis in [-rank, rank); *out gets it normalised.
 * False with msg written otherwise. */
bool tide_scan_axis(const tide_shape *x, int64_t axis, int *out, char *msg, size_t size);

#endif
