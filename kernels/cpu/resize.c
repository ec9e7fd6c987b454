/* resize.c — CPU kernels of ResizeBilinear and ResizeBilinearGrad (engine/ops/resize_ops.c).
 *
 * ResizeBilinear computes, per output pixel, TensorFlow's two horizontal interpolations and one
 * vertical in float32 (any input dtype is read as float32 first), from the weights of
 * tide_resize_weights, rows split over the engine's threads. ResizeBilinearGrad scatters each
 * incoming gradient to the four pixels it came from; images are independent, so each thread owns
 * whole images, accumulating in double and rounding to the output dtype once. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/resize_ops.h"
#include "cpu_util.h"

typedef struct resize_job {
    const tide_tensor *in;
    tide_tensor *out;
    int64_t batch, ih, iw, oh, ow, c;
    const tide_resize_weight *ys, *xs;
    bool failed; /* the gradient's scratch could not be allocated */
} resize_job;

static float pixel(const resize_job *j, int64_t b, int64_t y, int64_t x, int64_t c)
{
    return (float)tide_tensor_get_f64(j->in, ((b * j->ih + y) * j->iw + x) * j->c + c);
}

/* Output rows [begin, end) of the batch * oh rows. */
static void resize_rows(int64_t begin, int64_t end, void *arg)
{
    const resize_job *j = arg;
    float *out = tide_tensor_data(j->out);
    for (int64_t row = begin; row < end; row++) {
        int64_t b = row / j->oh, y = row % j->oh;
        const tide_resize_weight *wy = &j->ys[y];
        for (int64_t x = 0; x < j->ow; x++) {
            const tide_resize_weight *wx = &j->xs[x];
            for (int64_t c = 0; c < j->c; c++) {
                const float top_left = pixel(j, b, wy->lower, wx->lower, c);
                const float top_right = pixel(j, b, wy->lower, wx->upper, c);
                const float bottom_left = pixel(j, b, wy->upper, wx->lower, c);
                const float bottom_right = pixel(j, b, wy->upper, wx->upper, c);
                const float top = top_left + (top_right - top_left) * wx->lerp;
                const float bottom = bottom_left + (bottom_right - bottom_left) * wx->lerp;
                out[((row * j->ow) + x) * j->c + c] = top + (bottom - top) * wy->lerp;
            }
        }
    }
}

/* out[at .. at + n) = v, rounded to out's dtype (float16, bfloat16, float32 or float64). */
static void store(tide_tensor *out, int64_t at, const double *v, int64_t n)
{
    void *d = tide_tensor_data(out);
    for (int64_t i = 0; i < n; i++)
        switch (tide_tensor_dtype(out)) {
        case TIDE_FLOAT64: ((double *)d)[at + i] = v[i]; break;
        case TIDE_FLOAT32: ((float *)d)[at + i] = (float)v[i]; break;
        case TIDE_FLOAT16: ((uint16_t *)d)[at + i] = tide_f32_to_f16((float)v[i]); break;
        default: ((uint16_t *)d)[at + i] = tide_f32_to_bf16((float)v[i]); break;
        }
}

/* Images [begin, end): the gradient of each, scattered from the resized gradient j->in. */
static void resize_grad_images(int64_t begin, int64_t end, void *arg)
{
    resize_job *j = arg;
    int64_t per_image = j->ih * j->iw * j->c;
    double *acc = malloc((size_t)(per_image ? per_image : 1) * sizeof *acc);
    if (!acc) {
        j->failed = true;
        return;
    }
    const float *g = tide_tensor_data(j->in);
    for (int64_t b = begin; b < end; b++) {
        for (int64_t i = 0; i < per_image; i++)
            acc[i] = 0;
        for (int64_t y = 0; y < j->oh; y++)
            for (int64_t x = 0; x < j->ow; x++) {
                const tide_resize_weight *wy = &j->ys[y], *wx = &j->xs[x];
                const float iy = 1.0f - wy->lerp, ix = 1.0f - wx->lerp;
                for (int64_t c = 0; c < j->c; c++) {
                    const float v = g[((b * j->oh + y) * j->ow + x) * j->c + c];
                    acc[(wy->lower * j->iw + wx->lower) * j->c + c] += v * iy * ix;
                    acc[(wy->lower * j->iw + wx->upper) * j->c + c] += v * iy * wx->lerp;
                    acc[(wy->upper * j->iw + wx->lower) * j->c + c] += v * wy->lerp * ix;
                    acc[(wy->upper * j->iw + wx->upper) * j->c + c] += v * wy->lerp * wx->lerp;
                }
            }
        store(j->out, b * per_image, acc, per_image);
    }
    free(acc);
}

/* The weights of both dimensions for (in_h, in_w) -> (out_h, out_w), with the op's attrs. */
static tide_status weights(tide_kernel_ctx *ctx, resize_job *j, tide_resize_weight **ys, tide_resize_weight **xs)
{
    bool align = false, half = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "align_corners", &align);
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "half_pixel_centers", &half);
    *ys = malloc((size_t)(j->oh + 1) * sizeof **ys);
    *xs = malloc((size_t)(j->ow + 1) * sizeof **xs);
    if (!*ys || !*xs)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_resize_weights(j->ih, j->oh, align, half, *ys);
    tide_resize_weights(j->iw, j->ow, align, half, *xs);
    j->ys = *ys;
    j->xs = *xs;
    return TIDE_OK;
}

static tide_status resize_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *img = tide_kernel_input(ctx, 0), *size = tide_kernel_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], msg[TIDE_OP_MSG_MAX];
    if (tide_tensor_rank(img) != 4)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "images must be 4-D [batch, height, width, channels], "
                                 "got shape %s", tide_shape_format(tide_tensor_shape(img), a, sizeof a));
    if (tide_tensor_rank(size) != 1 || tide_tensor_num_elements(size) != 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "size must be a vector of 2 sizes [new_height, "
                                 "new_width], got shape %s", tide_shape_format(tide_tensor_shape(size), a, sizeof a));
    int64_t hw[2];
    tide_op_index_values(size, hw, 2);
    if (!tide_resize_check_size(hw, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    resize_job j = {.in = img, .batch = tide_tensor_dim(img, 0), .ih = tide_tensor_dim(img, 1),
                    .iw = tide_tensor_dim(img, 2), .oh = hw[0], .ow = hw[1], .c = tide_tensor_dim(img, 3)};
    if ((j.ih == 0 || j.iw == 0) && j.batch * j.c > 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot resize images of shape %s: they have no pixels",
                                 tide_shape_format(tide_tensor_shape(img), a, sizeof a));
    tide_shape os = tide_shape_make(4, (int64_t[4]){j.batch, j.oh, j.ow, j.c});
    j.out = tide_kernel_alloc_output(ctx, 0, &os, false);
    if (!j.out)
        return tide_kernel_status(ctx);
    if (tide_shape_num_elements(&os) == 0)
        return TIDE_OK;
    tide_resize_weight *ys = NULL, *xs = NULL;
    tide_status st = weights(ctx, &j, &ys, &xs);
    if (st == TIDE_OK)
        tide_kernel_parallel_for(ctx, j.batch * j.oh, 8.0 * (double)(j.ow * j.c), resize_rows, &j);
    free(ys);
    free(xs);
    return st;
}

static tide_status resize_grad_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *g = tide_kernel_input(ctx, 0), *img = tide_kernel_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(g) != 4 || tide_tensor_rank(img) != 4 || tide_tensor_dim(g, 0) != tide_tensor_dim(img, 0) ||
        tide_tensor_dim(g, 3) != tide_tensor_dim(img, 3))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "grads %s and original_image %s must be 4-D and agree "
                                 "in the batch and the channels",
                                 tide_shape_format(tide_tensor_shape(g), a, sizeof a),
                                 tide_shape_format(tide_tensor_shape(img), b, sizeof b));
    resize_job j = {.in = g, .batch = tide_tensor_dim(img, 0), .ih = tide_tensor_dim(img, 1),
                    .iw = tide_tensor_dim(img, 2), .oh = tide_tensor_dim(g, 1), .ow = tide_tensor_dim(g, 2),
                    .c = tide_tensor_dim(img, 3)};
    if ((j.ih == 0 || j.iw == 0) && tide_tensor_num_elements(g) > 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "original_image %s has no pixels for grads %s",
                                 tide_shape_format(tide_tensor_shape(img), a, sizeof a),
                                 tide_shape_format(tide_tensor_shape(g), b, sizeof b));
    j.out = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(img), true);
    if (!j.out)
        return tide_kernel_status(ctx);
    if (tide_tensor_num_elements(g) == 0 || tide_tensor_num_elements(img) == 0)
        return TIDE_OK;
    tide_resize_weight *ys = NULL, *xs = NULL;
    tide_status st = weights(ctx, &j, &ys, &xs);
    if (st == TIDE_OK)
        tide_kernel_parallel_for(ctx, j.batch, 10.0 * (double)(j.oh * j.ow * j.c), resize_grad_images, &j);
    free(ys);
    free(xs);
    if (st == TIDE_OK && j.failed)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the gradient of one image");
    return st;
}

static void register_resize_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"ResizeBilinear", resize_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"ResizeBilinearGrad", resize_grad_compute, NULL, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_resize_kernels)
