/* resize_ops.c — definitions of the image resizing ops, TensorFlow 1.x's ResizeBilinear (what
 * tf.image.resize_images / tf.image.resize_bilinear emit) and its gradient ResizeBilinearGrad, on NHWC
 * images, with TensorFlow's interpolation weights (tide_resize_weights). Kernels:
 * kernels/cpu/resize.c. */
#include <math.h>
#include <stdio.h>

#include "../tide_op.h"
#include "op_util.h"
#include "resize_ops.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

void tide_resize_weights(int64_t in, int64_t out, bool align_corners, bool half_pixel_centers,
                         tide_resize_weight *w)
{
    const float scale = align_corners && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
    for (int64_t o = 0; o < out; o++) {
        const float src = half_pixel_centers ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
        const float lower = floorf(src);
        w[o].lower = (int64_t)lower > 0 ? (int64_t)lower : 0;
        w[o].upper = (int64_t)ceilf(src) < in - 1 ? (int64_t)ceilf(src) : in - 1;
        w[o].lerp = src - lower;
    }
}

bool tide_resize_check_size(const int64_t size[2], char *msg, size_t msg_size)
{
    if (size[0] > 0 && size[1] > 0)
        return true;
    snprintf(msg, msg_size, "size [%lld, %lld] must hold two positive sizes [new_height, new_width]",
             (long long)size[0], (long long)size[1]);
    return false;
}

/* ResizeBilinear: [batch, new_height, new_width, channels], the new sizes known when size is a Const. */
static tide_status resize_shape(tide_shape_ctx *ctx)
{
    tide_shape img = tide_shape_input(ctx, 0), size = tide_shape_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], msg[TIDE_OP_MSG_MAX];
    if (img.rank >= 0 && img.rank != 4)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "images must be 4-D [batch, height, width, channels], "
                                "got shape %s", SHAPE_STR(img, a));
    if (size.rank >= 0 && (size.rank != 1 || (size.dims[0] >= 0 && size.dims[0] != 2)))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "size must be a vector of 2 sizes [new_height, "
                                "new_width], got shape %s", SHAPE_STR(size, a));
    int64_t hw[2] = {-1, -1};
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (v && tide_tensor_num_elements(v) == 2) {
        tide_op_index_values(v, hw, 2);
        if (!tide_resize_check_size(hw, msg, sizeof msg))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    }
    tide_shape out = tide_shape_make(4, (int64_t[4]){img.rank == 4 ? img.dims[0] : -1, hw[0], hw[1],
                                                     img.rank == 4 ? img.dims[3] : -1});
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ResizeBilinearGrad: original_image's shape; grads [batch, h, w, channels] agreeing with it. */
static tide_status resize_grad_shape(tide_shape_ctx *ctx)
{
    tide_shape g = tide_shape_input(ctx, 0), img = tide_shape_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if ((g.rank >= 0 && g.rank != 4) || (img.rank >= 0 && img.rank != 4))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "grads %s and original_image %s must be 4-D [batch, "
                                "height, width, channels]", SHAPE_STR(g, a), SHAPE_STR(img, b));
    for (int d = 0; d < 4 && g.rank == 4 && img.rank == 4; d += 3)
        if (g.dims[d] >= 0 && img.dims[d] >= 0 && g.dims[d] != img.dims[d])
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "grads %s and original_image %s differ in the "
                                    "batch or the channels", SHAPE_STR(g, a), SHAPE_STR(img, b));
    tide_shape_set_output(ctx, 0, &img);
    return TIDE_OK;
}

#define RESIZE_ATTRS "align_corners: bool = false", "half_pixel_centers: bool = false"
#define RESIZE_DOC                                                                                \
    "With align_corners the corner pixels of input and output coincide (scale (in - 1) / (out - " \
    "1)), else scale is in / out; with half_pixel_centers pixel centres are at .5 (the source of " \
    "output o is (o + 0.5) * scale - 0.5), else at integers (o * scale). Weights are computed in " \
    "float32, as TensorFlow's CPU kernel does."

static void register_resize_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "ResizeBilinear",
        .inputs = {"images: T", "size: int32"},
        .outputs = {"resized_images: float32"},
        .attrs = {"T: {int8, uint8, int16, uint16, int32, int64, float16, bfloat16, float32, float64}",
                  RESIZE_ATTRS},
        .shape_fn = resize_shape,
        .doc = "Resizes images [batch, height, width, channels] to size [new_height, new_width] by "
               "bilinear interpolation between the four nearest input pixels (float32 results whatever "
               "the input dtype). " RESIZE_DOC " Sizes that are not positive, or images that are not "
               "4-D, are INVALID_ARGUMENT.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "ResizeBilinearGrad",
        .inputs = {"grads: float32", "original_image: T"},
        .outputs = {"output: T"},
        .attrs = {"T: {float16, bfloat16, float32, float64}", RESIZE_ATTRS},
        .shape_fn = resize_grad_shape,
        .doc = "The gradient of ResizeBilinear with respect to its images: each element of grads (shaped "
               "like the resized images) is shared among the four input pixels it was interpolated from, "
               "by their weights, and summed; the result has original_image's shape (only its shape is "
               "read). " RESIZE_DOC,
    });
}
TIDE_REGISTER(register_resize_ops)
