/* test_summary.c — ImageSummary (engine/ops/summary_ops.c, kernels/cpu/summary.c): float images scaled
 * each on its own as TensorFlow scales them (all >= 0: the largest 255; else 0.0 at 128 and the largest
 * magnitude at 0 or 255), uint8 kept, max_images, non-finite values red, eager and graph agreeing
 * (th_run), the output's shape at graph time, and the errors: a bad rank or channel count, an empty tag,
 * max_images < 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static tide_attrs *summary_attrs(const char *tag, int64_t max_images)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_string(a, "tag", tag);
    if (max_images)
        tide_attrs_set_int(a, "max_images", max_images);
    return a;
}

static void expect_bytes(const tide_tensor *t, const uint8_t *want, int64_t n)
{
    CU_ASSERT_EQUAL_FATAL(tide_tensor_dtype(t), TIDE_UINT8);
    CU_ASSERT_EQUAL_FATAL(tide_tensor_num_elements(t), n);
    const uint8_t *got = tide_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "element %lld: got %u, want %u\n", (long long)i, got[i], want[i]);
            CU_FAIL("pixel");
            return;
        }
}

static void test_float_scaling(void)
{
    /* two 1 x 3 gray images: all >= 0 (the largest -> 255), and with negatives (0 -> 128). */
    float v[6] = {0, 0.5f, 2, -1, 0, 0.5f};
    tide_tensor *x = th_f32(4, TH_DIMS(2, 1, 3, 1), v);
    tide_attrs *a = summary_attrs("img", 0);
    tide_tensor *out = th_run1("ImageSummary", &x, 1, a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    TH_ASSERT_SHAPE(out, 4, TH_DIMS(2, 1, 3, 1));
    const uint8_t want[6] = {0, 64, 255, 1, 128, 192}; /* 0.5*127.5 rounds to 64; -1*127+128, 0.5*127+128 */
    expect_bytes(out, want, 6);
    tide_tensor_release(out);
    tide_tensor_release(x);
    tide_attrs_free(a);
}

static void test_uint8_max_images_and_bad_color(void)
{
    uint8_t u[8] = {1, 2, 3, 4, 250, 251, 252, 253};
    tide_tensor *x = th_tensor(TIDE_UINT8, 4, TH_DIMS(4, 1, 2, 1), u);
    tide_attrs *a = summary_attrs("u", 2);
    tide_attrs_set_type(a, "T", TIDE_UINT8);
    tide_tensor *out = th_run1("ImageSummary", &x, 1, a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    TH_ASSERT_SHAPE(out, 4, TH_DIMS(2, 1, 2, 1)); /* the first max_images images */
    expect_bytes(out, u, 4);
    tide_tensor_release(out);
    tide_tensor_release(x);
    tide_attrs_free(a);
    /* RGB with a NaN and an infinity: those pixels red */
    float v[6] = {NAN, 1, 1, 1, 1, INFINITY};
    x = th_f32(4, TH_DIMS(1, 1, 2, 3), v);
    a = summary_attrs("rgb", 0);
    out = th_run1("ImageSummary", &x, 1, a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    const uint8_t want[6] = {255, 255, 255, 255, 255, 0};
    expect_bytes(out, want, 6);
    tide_tensor_release(out);
    tide_tensor_release(x);
    tide_attrs_free(a);
}

static void test_shapes_and_errors(void)
{
    /* graph time: the output is uint8 [min(batch, max_images), H, W, C] */
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[5, 8, 8, 3])\n"
                                "s = ImageSummary(x, tag=\"inputs\", max_images=2, T=float32)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "s", 0, 4, TH_DIMS(2, 8, 8, 3));
    tide_graph_free(g);
    const char *base = "x = Placeholder(dtype=float32, shape=[5, 8, 8, 2])\ny = Placeholder(dtype=float32, shape=[8, 8])\n";
    th_assert_graph_fails(base, "s = ImageSummary(x, tag=\"t\", T=float32)", "with 1, 3 or 4 channels, not [5, 8, 8, 2]");
    th_assert_graph_fails(base, "s = ImageSummary(y, tag=\"t\", T=float32)", "[batch, height, width, channels]");
    th_assert_graph_fails(base, "s = ImageSummary(y, tag=\"\", T=float32)", "non-empty tag");
    th_assert_graph_fails(base, "s = ImageSummary(y, tag=\"t\", max_images=0, T=float32)", "max_images must be at least 1");
    /* run time: a fed shape the op cannot draw */
    float v[4] = {1, 2, 3, 4};
    tide_tensor *x = th_f32(2, TH_DIMS(2, 2), v);
    tide_attrs *a = summary_attrs("t", 0);
    TH_ASSERT_FAILS("ImageSummary", &x, 1, a, TIDE_INVALID_ARGUMENT, "[batch, height, width, channels]");
    tide_tensor_release(x);
    tide_attrs_free(a);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_float_scaling),
        TH_TEST(test_uint8_max_images_and_bad_color),
        TH_TEST(test_shapes_and_errors),
        TH_END,
    };
    return th_main("ImageSummary", tests);
}
