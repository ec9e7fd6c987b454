/* summary.c — the CPU kernel of ImageSummary (engine/ops/summary_ops.c): the first max_images images
 * of a [batch, height, width, channels] tensor as uint8, float images scaled each on its own as
 * TensorFlow's ImageSummary scales them, non-finite values red. */
#include <math.h>
#include <string.h>

#include "cpu_util.h"

/* TensorFlow's rule for one float image: all finite values >= 0, the largest becomes 255; otherwise
 * 0.0 becomes 128 and the value of largest magnitude 0 or 255 (127 steps each way). */
static void scale_of(const tide_tensor *x, int64_t from, int64_t n, double *scale, double *offset)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = from; i < from + n; i++) {
        double v = tide_tensor_get_f64(x, i);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    if (lo > hi) { /* no finite value */
        *scale = 0;
        *offset = 0;
    } else if (lo >= 0) {
        *scale = hi > 0 ? 255.0 / hi : 0;
        *offset = 0;
    } else {
        double m = fmax(fabs(lo), fabs(hi));
        *scale = m > 0 ? 127.0 / m : 0;
        *offset = 128;
    }
}

/* The red of a non-finite pixel, channel c of channels. */
static uint8_t bad_color(int c, int64_t channels)
{
    if (channels == 1)
        return 255;
    return c == 0 || c == 3 ? 255 : 0;
}

static tide_status image_summary_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_shape s = *tide_tensor_shape(x);
    char b[TIDE_SHAPE_STR_MAX];
    if (s.rank != 4 || (s.dims[3] != 1 && s.dims[3] != 3 && s.dims[3] != 4))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "images must be [batch, height, width, channels] with 1, 3 or 4 channels, not %s",
                                 tide_shape_format(&s, b, sizeof b));
    int64_t max_images = 3;
    tide_attrs_get_int(tide_kernel_attrs(ctx), "max_images", &max_images);
    if (s.dims[0] > max_images)
        s.dims[0] = max_images;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &s, false);
    if (!out)
        return tide_kernel_status(ctx);
    uint8_t *o = tide_tensor_data(out);
    int64_t per_image = s.dims[1] * s.dims[2] * s.dims[3], channels = s.dims[3];
    bool is_uint8 = tide_tensor_dtype(x) == TIDE_UINT8;
    for (int64_t n = 0; n < s.dims[0]; n++) {
        int64_t from = n * per_image;
        if (is_uint8) {
            memcpy(o + from, (const uint8_t *)tide_tensor_data(x) + from, (size_t)per_image);
            continue;
        }
        double scale, offset;
        scale_of(x, from, per_image, &scale, &offset);
        for (int64_t i = 0; i < per_image; i++) {
            double v = tide_tensor_get_f64(x, from + i);
            o[from + i] = isfinite(v) ? (uint8_t)fmin(255, fmax(0, round(v * scale + offset)))
                                      : bad_color((int)(i % channels), channels);
        }
    }
    return TIDE_OK;
}

static void register_summary_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "ImageSummary", .device_type = "cpu",
                                              .compute = image_summary_compute});
}
TIDE_REGISTER(register_summary_kernels)
