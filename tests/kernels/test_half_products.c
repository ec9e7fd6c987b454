/* test_half_products.c — float16 and bfloat16 MatMul, BatchMatMulV2, BatchMatMul, Conv2D,
 * Conv2DBackpropInput and Conv2DBackpropFilter on the CPU (the float32 kernels over float32 copies,
 * rounded once on store: engine/kernel_float32.c).
 *
 * Inputs are random halves, so that their float32 copies hold the same values. Each case checks:
 *   - rounded once: the half result is bit for bit the float32 kernel's result on those values
 *     rounded to the half type (tolerance 0), eagerly and in a graph (th_run1 checks both agree);
 *   - against float64: |half - float64| <= u |float64| + K 1e-6, u the type's unit roundoff (2^-11 for
 *     float16, 2^-8 for bfloat16: the one rounding) and K 1e-6 the float32 sums' error over K terms.
 * Shape functions accept the half types; the symbolic gradients of a half MatMul, BatchMatMulV2 and
 * Conv2D, run in the half type, against the same gradients of the float32 graph on the same values,
 * within one step of the half type (2^-10, 2^-7 relative) plus K 1e-6: each gradient op rounds once;
 * BatchMatMulV2's broadcast sums add the four rounded products of a batch: 16 u absolute more. The ops that still refuse
 * halves (DepthwiseConv2dNative) say so at graph time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const tide_dtype halves[] = {TIDE_FLOAT16, TIDE_BFLOAT16};

static double unit_roundoff(tide_dtype dt) { return dt == TIDE_FLOAT16 ? ldexp(1, -11) : ldexp(1, -8); }

/* A tensor of dtype dt with random values in [-1, 1) rounded to dt. */
static tide_tensor *random_half(tide_dtype dt, int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = th_rand(-1, 1);
    tide_tensor *t = th_from_doubles(dt, rank, dims, v, 0);
    free(v);
    return t;
}
#define RH(dt, ...) random_half(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), TH_DIMS(__VA_ARGS__))
#define SIZES(...) th_i32(1, TH_DIMS(4), (const int32_t[]){__VA_ARGS__})

/* t converted to dt (half types widened exactly; integer inputs kept). */
static tide_tensor *as(const tide_tensor *t, tide_dtype dt)
{
    tide_dtype from = tide_tensor_dtype(t);
    if (from != TIDE_FLOAT16 && from != TIDE_BFLOAT16 && from != TIDE_FLOAT32)
        return tide_tensor_retain((tide_tensor *)t);
    tide_error *err = tide_error_new();
    tide_tensor *c = tide_tensor_cast(t, dt, err);
    if (!c)
        fprintf(stderr, "cast: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    tide_error_free(err);
    return c;
}

/* op on the half inputs in[0..n) (released here) against the float32 and float64 kernels; k: the
 * terms of each output's sum. */
static void check_impl(const char *op, tide_tensor **in, int n, tide_attrs *attrs, int64_t k, const char *file,
                       int line)
{
    tide_dtype dt = tide_tensor_dtype(in[0]) == TIDE_INT32 ? tide_tensor_dtype(in[1]) : tide_tensor_dtype(in[0]);
    tide_tensor *f32[4], *f64[4];
    for (int i = 0; i < n; i++) {
        f32[i] = as(in[i], TIDE_FLOAT32);
        f64[i] = as(in[i], TIDE_FLOAT64);
    }
    tide_tensor *got = th_run1(op, in, n, attrs);
    tide_tensor *want32 = th_run1(op, f32, n, attrs);
    tide_tensor *want64 = th_run1(op, f64, n, attrs);
    if (!got || !want32 || !want64)
        fprintf(stderr, "%s:%d: %s (%s) failed to run\n", file, line, op, tide_dtype_name(dt));
    CU_ASSERT_FATAL(got && want32 && want64);
    CU_ASSERT_EQUAL(tide_tensor_dtype(got), dt);
    tide_tensor *rounded = as(want32, dt);
    th_assert_close_impl(got, rounded, 0, 0, file, line);
    tide_tensor *got64 = as(got, TIDE_FLOAT64);
    th_assert_close_impl(got64, want64, unit_roundoff(dt), 1e-6 * (double)k, file, line);
    tide_tensor_release(got64);
    tide_tensor_release(rounded);
    tide_tensor_release(got);
    tide_tensor_release(want32);
    tide_tensor_release(want64);
    for (int i = 0; i < n; i++) {
        tide_tensor_release(in[i]);
        tide_tensor_release(f32[i]);
        tide_tensor_release(f64[i]);
    }
    tide_attrs_free(attrs);
}
#define CHECK(op, in, attrs, k) check_impl(op, in, (int)(sizeof in / sizeof in[0]), attrs, k, __FILE__, __LINE__)

static tide_attrs *two_flags(const char *a, bool va, const char *b, bool vb)
{
    tide_attrs *at = tide_attrs_new();
    tide_attrs_set_bool(at, a, va);
    tide_attrs_set_bool(at, b, vb);
    return at;
}

static tide_attrs *conv_attrs(int stride, const char *padding)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", TH_DIMS(1, stride, stride, 1), 4);
    tide_attrs_set_string(a, "padding", padding);
    return a;
}

/* ---------------------------------------------------------------- products */

static void test_matmul_rounds_float32_once(void)
{
    for (size_t h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                tide_tensor *small[] = {ta ? RH(dt, 7, 5) : RH(dt, 5, 7), tb ? RH(dt, 3, 7) : RH(dt, 7, 3)};
                CHECK("MatMul", small, two_flags("transpose_a", ta, "transpose_b", tb), 7);
                /* large enough for BLAS or the own GEMM, split over the threads */
                tide_tensor *large[] = {ta ? RH(dt, 300, 96) : RH(dt, 96, 300), tb ? RH(dt, 200, 300) : RH(dt, 300, 200)};
                CHECK("MatMul", large, two_flags("transpose_a", ta, "transpose_b", tb), 300);
            }
        tide_tensor *empty_k[] = {RH(dt, 4, 0), RH(dt, 0, 3)};
        CHECK("MatMul", empty_k, NULL, 0);
    }
}

static void test_batch_matmul_rounds_float32_once(void)
{
    for (size_t h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        for (int adj = 0; adj < 4; adj++) {
            tide_tensor *in[] = {adj & 1 ? RH(dt, 3, 2, 9, 4) : RH(dt, 3, 2, 4, 9),
                                 adj & 2 ? RH(dt, 3, 2, 6, 9) : RH(dt, 3, 2, 9, 6)};
            CHECK("BatchMatMul", in, two_flags("adj_x", adj & 1, "adj_y", adj & 2), 9);
        }
        tide_tensor *bcast[] = {RH(dt, 2, 1, 4, 33), RH(dt, 3, 33, 5)};
        CHECK("BatchMatMulV2", bcast, NULL, 33);
    }
}

static void test_conv_rounds_float32_once(void)
{
    static const struct {
        int stride;
        const char *padding;
        int64_t out;
    } geo[] = {{1, "SAME", 9}, {2, "SAME", 5}, {2, "VALID", 4}};
    for (size_t h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        for (size_t i = 0; i < sizeof geo / sizeof geo[0]; i++) {
            int s = geo[i].stride;
            int64_t o = geo[i].out;
            tide_tensor *fwd[] = {RH(dt, 2, 9, 9, 5), RH(dt, 3, 3, 5, 8)};
            CHECK("Conv2D", fwd, conv_attrs(s, geo[i].padding), 45);
            tide_tensor *bin[] = {SIZES(2, 9, 9, 5), RH(dt, 3, 3, 5, 8), RH(dt, 2, o, o, 8)};
            CHECK("Conv2DBackpropInput", bin, conv_attrs(s, geo[i].padding), 72);
            tide_tensor *bf[] = {RH(dt, 2, 9, 9, 5), SIZES(3, 3, 5, 8), RH(dt, 2, o, o, 8)};
            CHECK("Conv2DBackpropFilter", bf, conv_attrs(s, geo[i].padding), 2 * o * o);
        }
    }
}

/* ---------------------------------------------------------------- graphs: shapes and gradients */

static void test_shape_functions_take_halves(void)
{
    tide_graph *g = th_graph_of("a = Placeholder(dtype=float16, shape=[?, 7])\n"
                                "b = Placeholder(dtype=float16, shape=[7, 3])\n"
                                "m = MatMul(a, b)\n"
                                "x = Placeholder(dtype=bfloat16, shape=[2, 4, 3, 5])\n"
                                "y = Placeholder(dtype=bfloat16, shape=[4, 5, 6])\n"
                                "bm = BatchMatMulV2(x, y)\n"
                                "img = Placeholder(dtype=bfloat16, shape=[?, 9, 9, 5])\n"
                                "f = Placeholder(dtype=bfloat16, shape=[3, 3, 5, 8])\n"
                                "c = Conv2D(img, f, strides=[1, 2, 2, 1], padding=\"SAME\")\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "m", 0, 2, TH_DIMS(-1, 3));
    th_assert_output_shape(g, "bm", 0, 4, TH_DIMS(2, 4, 3, 6));
    th_assert_output_shape(g, "c", 0, 4, TH_DIMS(-1, 5, 5, 8));
    tide_graph_free(g);
    th_assert_graph_fails("x = Placeholder(dtype=float16, shape=[1, 5, 5, 2])\n"
                          "f = Placeholder(dtype=float16, shape=[3, 3, 2, 1])\n",
                          "d = DepthwiseConv2dNative(x, f, strides=[1, 1, 1, 1], padding=\"SAME\")\n", "float16");
}

/* The gradients of y (graph text defining y from placeholders x0, x1 of dtype %s) with respect to x0
 * and x1 for the output gradient dy, run with the given feeds; dx[0..2] receive them. */
static void gradients_of(const char *body, tide_dtype dt, tide_tensor *const *x, tide_tensor *dy, tide_tensor **dx)
{
    char text[2048];
    snprintf(text, sizeof text, body, tide_dtype_name(dt), tide_dtype_name(dt), tide_dtype_name(dt));
    tide_graph *g = th_graph_of(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_error *err = tide_error_new();
    tide_output y, d[2], xs[2] = {{tide_graph_node(g, "x0"), 0}, {tide_graph_node(g, "x1"), 0}};
    tide_output g_out = {tide_graph_node(g, "dy"), 0};
    tide_session *s = NULL;
    tide_status st = tide_graph_output(g, "y", &y, err);
    if (st == TIDE_OK)
        st = tide_gradients(g, &y, 1, xs, 2, &g_out, d, err);
    if (st == TIDE_OK && (s = tide_session_new(th_engine(), g, NULL, err)))
        st = tide_session_run(s, NULL, (tide_feed[]){{xs[0], x[0]}, {xs[1], x[1]}, {g_out, dy}}, 3, d, 2, dx, NULL, 0,
                              NULL, err);
    if (st != TIDE_OK || !s)
        fprintf(stderr, "gradients (%s): %s\n", tide_dtype_name(dt), tide_error_message(err));
    CU_ASSERT_FATAL(st == TIDE_OK && s);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
}

/* atol: what the half graph's extra roundings may add (its broadcast sums). */
static void check_gradients(const char *body, tide_dtype dt, tide_tensor *x0, tide_tensor *x1, tide_tensor *dy,
                            double atol)
{
    tide_tensor *xh[2] = {x0, x1}, *x32[2] = {as(x0, TIDE_FLOAT32), as(x1, TIDE_FLOAT32)};
    tide_tensor *dy32 = as(dy, TIDE_FLOAT32);
    tide_tensor *dh[2] = {0}, *d32[2] = {0};
    gradients_of(body, dt, xh, dy, dh);
    gradients_of(body, TIDE_FLOAT32, x32, dy32, d32);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(tide_tensor_dtype(dh[i]), dt);
        tide_tensor *widened = as(dh[i], TIDE_FLOAT32);
        TH_ASSERT_CLOSE(widened, d32[i], 2 * unit_roundoff(dt), atol);
        tide_tensor_release(widened);
        tide_tensor_release(dh[i]);
        tide_tensor_release(d32[i]);
        tide_tensor_release(xh[i]);
        tide_tensor_release(x32[i]);
    }
    tide_tensor_release(dy);
    tide_tensor_release(dy32);
}

static void test_gradients_in_half_match_float32(void)
{
    for (size_t h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        check_gradients("x0 = Placeholder(dtype=%s, shape=[6, 10])\nx1 = Placeholder(dtype=%s, shape=[10, 4])\n"
                        "dy = Placeholder(dtype=%s, shape=[6, 4])\ny = MatMul(x0, x1)\n",
                        dt, RH(dt, 6, 10), RH(dt, 10, 4), RH(dt, 6, 4), 10 * 1e-6);
        check_gradients("x0 = Placeholder(dtype=%s, shape=[2, 1, 3, 7])\nx1 = Placeholder(dtype=%s, shape=[4, 7, 5])\n"
                        "dy = Placeholder(dtype=%s, shape=[2, 4, 3, 5])\ny = BatchMatMulV2(x0, x1)\n",
                        dt, RH(dt, 2, 1, 3, 7), RH(dt, 4, 7, 5), RH(dt, 2, 4, 3, 5), 4 * 4 * unit_roundoff(dt));
        check_gradients("x0 = Placeholder(dtype=%s, shape=[2, 8, 8, 3])\nx1 = Placeholder(dtype=%s, shape=[3, 3, 3, 4])\n"
                        "dy = Placeholder(dtype=%s, shape=[2, 4, 4, 4])\n"
                        "y = Conv2D(x0, x1, strides=[1, 2, 2, 1], padding=\"SAME\")\n",
                        dt, RH(dt, 2, 8, 8, 3), RH(dt, 3, 3, 3, 4), RH(dt, 2, 4, 4, 4), 36 * 1e-6);
    }
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_matmul_rounds_float32_once),
        TH_TEST(test_batch_matmul_rounds_float32_once),
        TH_TEST(test_conv_rounds_float32_once),
        TH_TEST(test_shape_functions_take_halves),
        TH_TEST(test_gradients_in_half_match_float32),
        TH_END,
    };
    return th_main("half_products", tests);
}
