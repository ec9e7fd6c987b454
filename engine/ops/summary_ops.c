/* summary_ops.c — ImageSummary: a batch of images the run log records under a tag, for the views'
 * image dashboard (ScalarSummary, a value recorded under a tag, is in core_ops.c). Its kernel is in
 * kernels/cpu/summary.c. */
#include "../internal.h"

/* [N, H, W, C] with C 1, 3 or 4 -> uint8 [min(N, max_images), H, W, C]. */
static tide_status image_summary_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_input(ctx, 0);
    const char *tag = NULL;
    int64_t max_images = 3;
    char b[TIDE_SHAPE_STR_MAX];
    if (!tide_attrs_get_string(tide_shape_attrs(ctx), "tag", &tag) || !tag[0])
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "an image summary needs a non-empty tag");
    tide_attrs_get_int(tide_shape_attrs(ctx), "max_images", &max_images);
    if (max_images < 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "max_images must be at least 1, not %lld",
                                (long long)max_images);
    if (s.rank < 0) {
        tide_shape out = tide_shape_make(4, (const int64_t[]){-1, -1, -1, -1});
        tide_shape_set_output(ctx, 0, &out);
        return TIDE_OK;
    }
    if (s.rank != 4 || (s.dims[3] >= 0 && s.dims[3] != 1 && s.dims[3] != 3 && s.dims[3] != 4))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "images must be [batch, height, width, channels] with 1, 3 or 4 channels, not %s",
                                tide_shape_format(&s, b, sizeof b));
    if (s.dims[0] > max_images)
        s.dims[0] = max_images;
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static void register_summary_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "ImageSummary",
        .inputs = {"tensor: T"},
        .outputs = {"summary: uint8"},
        .attrs = {"tag: string", "max_images: int = 3", "T: {uint8, float32, float64} = float32"},
        .shape_fn = image_summary_shape,
        .doc = "Returns the first max_images images of tensor ([batch, height, width, channels], 1, 3 or 4 "
               "channels) as uint8, and the run log records them under tag at every run that computes it "
               "(the views draw them by step). uint8 images are kept as they are; float images are scaled "
               "each on its own as TensorFlow does: all values >= 0, the largest becomes 255; otherwise 0.0 "
               "becomes 128 and the value of largest magnitude 0 or 255. A non-finite value is drawn red.",
        .flags = TIDE_OP_NOT_IN_TF,
        .tf_differences = "TensorFlow's ImageSummary(tag: string, tensor: T) -> summary: string takes the tag "
                          "as a string tensor, returns a serialised Summary protocol buffer of PNG images and "
                          "has a bad_color attr; tide's takes the tag as an attr, returns the uint8 images, "
                          "writes the run log, and draws non-finite values red.",
    });
}
TIDE_REGISTER(register_summary_ops)
