/* test_resize.c — ResizeBilinear and ResizeBilinearGrad. Expected values: TensorFlow's documented
 * behaviour as literal tables (the three pixel conventions on a 2x2 image), a reference written
 * here in double from TensorFlow's formulas for random images of every size relation (up, down,
 * to 1), and the adjoint identity sum(dy * resize(x)) == sum(x * ResizeBilinearGrad(dy)), which
 * ties the gradient to the forward op independently of how either is computed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void release_all(tide_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

static tide_attrs *resize_attrs(bool align, bool half)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "align_corners", align);
    tide_attrs_set_bool(a, "half_pixel_centers", half);
    return a;
}

static void literal(bool align, bool half, const float *want16)
{
    tide_tensor *x = th_f32(4, TH_DIMS(1, 2, 2, 1), (float[]){1, 2, 3, 4}), *size = th_i32(1, TH_DIMS(2), (int32_t[]){4, 4});
    tide_attrs *a = resize_attrs(align, half);
    tide_tensor *got = th_run1("ResizeBilinear", (tide_tensor *[]){x, size}, 2, a);
    tide_tensor *want = th_f32(4, TH_DIMS(1, 4, 4, 1), want16);
    TH_ASSERT_CLOSE(got, want, 1e-6, 1e-6);
    release_all((tide_tensor *[]){x, size, got, want}, 4);
    tide_attrs_free(a);
}

static void test_resize_literals(void)
{
    /* legacy: source o * in / out = 0, 0.5, 1, 1.5; the last clamps to the edge */
    literal(false, false, (float[]){1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4});
    /* align_corners: the corners coincide, source o * (in - 1) / (out - 1) */
    const float t = 1.0f / 3, u = 2.0f / 3;
    literal(true, false, (float[]){1, 1 + t, 1 + u, 2, 1 + 2 * t, 1 + 3 * t, 1 + 4 * t, 2 + 2 * t,
                                   2 + t, 2 + 2 * t, 2 + 3 * t, 3 + t, 3, 3 + t, 3 + u, 4});
    /* half_pixel_centers: source (o + 0.5) * 0.5 - 0.5 = -0.25, 0.25, 0.75, 1.25 */
    literal(false, true, (float[]){1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                                   2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

/* TensorFlow's formulas in double: the bilinear value of output pixel (y, x) of one channel plane. */
static double ref_pixel(const double *img, int64_t ih, int64_t iw, int64_t y, int64_t x, double sy, double sx,
                        bool half, int64_t c, int64_t nc)
{
    double fy = half ? (y + 0.5) * sy - 0.5 : y * sy, fx = half ? (x + 0.5) * sx - 0.5 : x * sx;
    int64_t y0 = (int64_t)floor(fy) > 0 ? (int64_t)floor(fy) : 0, x0 = (int64_t)floor(fx) > 0 ? (int64_t)floor(fx) : 0;
    int64_t y1 = (int64_t)ceil(fy) < ih - 1 ? (int64_t)ceil(fy) : ih - 1;
    int64_t x1 = (int64_t)ceil(fx) < iw - 1 ? (int64_t)ceil(fx) : iw - 1;
    double ly = fy - floor(fy), lx = fx - floor(fx);
#define P(yy, xx) img[((yy) * iw + (xx)) * nc + c]
    double top = P(y0, x0) + (P(y0, x1) - P(y0, x0)) * lx, bottom = P(y1, x0) + (P(y1, x1) - P(y1, x0)) * lx;
#undef P
    return top + (bottom - top) * ly;
}

static void check_resize(tide_dtype dt, int64_t b, int64_t ih, int64_t iw, int64_t c, int64_t oh, int64_t ow,
                         bool align, bool half)
{
    int64_t n = b * ih * iw * c, m = b * oh * ow * c;
    double *v = malloc((size_t)n * sizeof *v), *w = malloc((size_t)m * sizeof *w);
    for (int64_t i = 0; i < n; i++)
        v[i] = tide_dtype_is_float(dt) ? th_rand(-5, 5) : floor(th_rand(0, 100));
    tide_tensor *x = th_from_doubles(dt, 4, TH_DIMS(b, ih, iw, c), v, 0);
    for (int64_t i = 0; i < n; i++)
        v[i] = tide_tensor_get_f64(x, i); /* what the dtype holds */
    double sy = align && oh > 1 ? (double)(ih - 1) / (double)(oh - 1) : (double)ih / (double)oh;
    double sx = align && ow > 1 ? (double)(iw - 1) / (double)(ow - 1) : (double)iw / (double)ow;
    for (int64_t k = 0; k < b; k++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t xx = 0; xx < ow; xx++)
                for (int64_t ch = 0; ch < c; ch++)
                    w[((k * oh + y) * ow + xx) * c + ch] = ref_pixel(v + k * ih * iw * c, ih, iw, y, xx, sy, sx, half, ch, c);
    tide_tensor *size = th_i32(1, TH_DIMS(2), (int32_t[]){(int32_t)oh, (int32_t)ow});
    tide_tensor *want = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(b, oh, ow, c), w, 0);
    tide_attrs *a = resize_attrs(align, half);
    tide_tensor *got = th_run1("ResizeBilinear", (tide_tensor *[]){x, size}, 2, a);
    TH_ASSERT_CLOSE(got, want, 1e-5, 1e-4);
    /* the gradient is the adjoint: <dy, resize(x)> == <x, grad(dy)> */
    if (tide_dtype_is_float(dt) && got) {
        double *g = malloc((size_t)m * sizeof *g);
        for (int64_t i = 0; i < m; i++)
            g[i] = th_rand(-1, 1);
        tide_tensor *dy = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(b, oh, ow, c), g, 0);
        tide_tensor *dx = th_run1("ResizeBilinearGrad", (tide_tensor *[]){dy, x}, 2, a);
        double lhs = 0, rhs = 0, mag = 0;
        for (int64_t i = 0; i < m; i++)
            lhs += tide_tensor_get_f64(dy, i) * tide_tensor_get_f64(got, i);
        for (int64_t i = 0; dx && i < n; i++) {
            rhs += v[i] * tide_tensor_get_f64(dx, i);
            mag += fabs(v[i] * tide_tensor_get_f64(dx, i));
        }
        CU_ASSERT(dx && tide_tensor_dtype(dx) == dt);
        /* dx is rounded to dt: float16 holds about 3 digits of each term */
        CU_ASSERT_DOUBLE_EQUAL(lhs, rhs, (dt == TIDE_FLOAT16 ? 1e-3 : 1e-5) * (1 + mag));
        free(g);
        release_all((tide_tensor *[]){dy, dx}, 2);
    }
    free(v);
    free(w);
    release_all((tide_tensor *[]){x, size, want, got}, 4);
    tide_attrs_free(a);
}

static void test_resize_random(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_UINT8, TIDE_INT32, TIDE_FLOAT16};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int mode = 0; mode < 3; mode++) {
            bool align = mode == 1, half = mode == 2;
            check_resize(dts[d], 2, 5, 7, 3, 11, 4, align, half);  /* taller, narrower */
            check_resize(dts[d], 1, 8, 8, 2, 3, 5, align, half);   /* smaller */
            check_resize(dts[d], 1, 3, 4, 1, 1, 1, align, half);   /* to one pixel */
            check_resize(dts[d], 1, 1, 1, 2, 4, 3, align, half);   /* from one pixel */
        }
    check_resize(TIDE_FLOAT32, 4, 28, 28, 3, 56, 40, false, true); /* split over threads */
}

static void test_resize_errors(void)
{
    tide_tensor *x = th_f32(4, TH_DIMS(1, 2, 2, 1), NULL), *x3 = th_f32(3, TH_DIMS(2, 2, 1), NULL);
    tide_tensor *s0 = th_i32(1, TH_DIMS(2), (int32_t[]){0, 3}), *s3 = th_i32(1, TH_DIMS(3), (int32_t[]){1, 2, 3});
    tide_tensor *ok = th_i32(1, TH_DIMS(2), (int32_t[]){2, 2});
    TH_ASSERT_FAILS("ResizeBilinear", ((tide_tensor *[]){x, s0}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "size [0, 3] must hold two positive sizes [new_height, new_width]");
    TH_ASSERT_FAILS("ResizeBilinear", ((tide_tensor *[]){x, s3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "size must be a vector of 2 sizes [new_height, new_width], got shape [3]");
    TH_ASSERT_FAILS("ResizeBilinear", ((tide_tensor *[]){x3, ok}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "images must be 4-D [batch, height, width, channels], got shape [2, 2, 1]");
    tide_tensor *g = th_f32(4, TH_DIMS(2, 2, 2, 1), NULL);
    TH_ASSERT_FAILS("ResizeBilinearGrad", ((tide_tensor *[]){g, x}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "differ in the batch or the channels");
    tide_tensor *gi = th_i32(4, TH_DIMS(1, 2, 2, 1), NULL);
    TH_ASSERT_FAILS("ResizeBilinearGrad", ((tide_tensor *[]){x, gi}), 2, NULL, TIDE_INVALID_ARGUMENT, "int32");
    release_all((tide_tensor *[]){x, x3, s0, s3, ok, g, gi}, 7);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_resize_literals),
        TH_TEST(test_resize_random),
        TH_TEST(test_resize_errors),
        TH_END,
    };
    return th_main("resize", tests);
}
