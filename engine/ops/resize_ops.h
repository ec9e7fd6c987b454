/* resize_ops.h — what ResizeBilinear's definition (engine/ops/resize_ops.c) shares with its kernels
 * (kernels/cpu/resize.c): the size input's check and TensorFlow's interpolation weights, computed
 * once, the same way at graph and run time. Engine-private. */
#ifndef TIDE_RESIZE_OPS_H
#define TIDE_RESIZE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One output coordinate's neighbours in the input and the weight of the upper one. */
typedef struct tide_resize_weight {
    int64_t lower, upper;
    float lerp;
} tide_resize_weight;

/* TensorFlow's bilinear weights for out coordinates over in (float arithmetic, as TensorFlow's CPU
 * kernel): scale = (in - 1) / (out - 1) with align_corners (and out > 1), else in / out; the source
 * coordinate is (o + 0.5) * scale - 0.5 with half_pixel_centers, else o * scale; lower =
 * max(floor(src), 0), upper = min(ceil(src), in - 1), lerp = src - floor(src). */
void tide_resize_weights(int64_t in, int64_t out, bool align_corners, bool half_pixel_centers,
                         tide_resize_weight *w);

/* The size values [new_height, new_width]: both positive. False with msg written otherwise. */
bool tide_resize_check_size(const int64_t size[2], char *msg, size_t msg_size);

#endif
