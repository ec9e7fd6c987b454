/* test_scan.c — the cumulative ops Cumsum and Cumprod. Expected values come from reference loops
 * written here over every element's multi-index (in long double for floats, 128-bit integers
 * reduced to the dtype's width for integers), for every axis, exclusive and reverse, plus
 * TensorFlow's documented examples as literal tables and the errors a user can cause. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef __int128 i128;

static const tide_dtype DTYPES[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_INT8, TIDE_UINT16};
#define NUM_DTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

static void release_all(tide_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

/* v reduced to the integer dtype's width (two's complement). */
static double wrap(i128 v, tide_dtype dt)
{
    int bits = (int)tide_dtype_size(dt) * 8;
    unsigned __int128 m = ((unsigned __int128)1 << bits) - 1, u = (unsigned __int128)v & m;
    bool is_signed = dt != TIDE_UINT8 && dt != TIDE_UINT16;
    if (is_signed && (u >> (bits - 1)))
        return (double)((i128)u - ((i128)1 << bits));
    return (double)u;
}

static tide_attrs *scan_attrs(bool exclusive, bool reverse)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "exclusive", exclusive);
    tide_attrs_set_bool(a, "reverse", reverse);
    return a;
}

/* The reference scan: for each output element, combine the x elements of its line that come before
 * it in scan order (and itself unless exclusive), in that order. */
static tide_tensor *ref_scan(const tide_tensor *x, int axis, bool prod, bool exclusive, bool reverse)
{
    const tide_shape *s = tide_tensor_shape(x);
    tide_dtype dt = tide_tensor_dtype(x);
    bool flt = tide_dtype_is_float(dt);
    int64_t n = tide_shape_num_elements(s), len = s->dims[axis], stride = 1;
    for (int d = axis + 1; d < s->rank; d++)
        stride *= s->dims[d];
    double *w = malloc((size_t)(n + 1) * sizeof *w);
    for (int64_t i = 0; i < n; i++) {
        int64_t pos = i / stride % len, base = i - pos * stride;
        long double fa = prod ? 1 : 0;
        i128 ia = prod ? 1 : 0;
        for (int64_t step = 0; step < len; step++) {
            int64_t k = reverse ? len - 1 - step : step;
            bool before = reverse ? k > pos : k < pos;
            if (!before && !(k == pos && !exclusive))
                continue;
            double v = tide_tensor_get_f64(x, base + k * stride);
            if (flt) { /* rounded to the dtype after each step, as the kernel does */
                fa = prod ? fa * v : fa + v;
                fa = dt == TIDE_FLOAT32 ? (long double)(float)fa : (long double)(double)fa;
            } else {
                ia = (i128)wrap(prod ? ia * (i128)v : ia + (i128)v, dt);
            }
        }
        w[i] = flt ? (double)fa : (double)ia;
    }
    tide_tensor *t = th_from_doubles(dt, s->rank, s->dims, w, 0);
    free(w);
    return t;
}

static tide_tensor *random_tensor(tide_dtype dt, int rank, const int64_t *dims, bool prod)
{
    tide_shape s = tide_shape_make(rank, dims);
    int64_t n = tide_shape_num_elements(&s);
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        if (tide_dtype_is_float(dt))
            v[i] = prod ? th_rand(0.5, 1.5) : th_rand(-10, 10);
        else
            v[i] = dt == TIDE_UINT16 ? floor(th_rand(0, 9)) : floor(th_rand(-9, 9));
    }
    tide_tensor *t = th_from_doubles(dt, rank, dims, v, 0);
    free(v);
    return t;
}

static void check_scan(const char *op, tide_dtype dt, int rank, const int64_t *dims, int64_t axis, tide_dtype adt)
{
    bool prod = strcmp(op, "Cumprod") == 0;
    tide_tensor *x = random_tensor(dt, rank, dims, prod);
    int ax = (int)(axis < 0 ? axis + rank : axis);
    for (int e = 0; e < 2; e++)
        for (int r = 0; r < 2; r++) {
            double av = (double)axis;
            tide_tensor *a = th_from_doubles(adt, 0, NULL, &av, 0);
            tide_attrs *attrs = scan_attrs(e, r);
            tide_tensor *got = th_run1(op, (tide_tensor *[]){x, a}, 2, attrs), *want = ref_scan(x, ax, prod, e, r);
            TH_ASSERT_CLOSE(got, want, dt == TIDE_FLOAT32 ? 1e-6 : 1e-14, 0);
            release_all((tide_tensor *[]){a, got, want}, 3);
            tide_attrs_free(attrs);
        }
    tide_tensor_release(x);
}

static void test_scans(void)
{
    const char *ops[] = {"Cumsum", "Cumprod"};
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < NUM_DTYPES; d++) {
            check_scan(ops[o], DTYPES[d], 1, TH_DIMS(7), 0, TIDE_INT32);
            check_scan(ops[o], DTYPES[d], 3, TH_DIMS(2, 3, 4), 0, TIDE_INT64);
            check_scan(ops[o], DTYPES[d], 3, TH_DIMS(2, 3, 4), 1, TIDE_INT32);
            check_scan(ops[o], DTYPES[d], 3, TH_DIMS(2, 3, 4), -1, TIDE_INT32);
            check_scan(ops[o], DTYPES[d], 2, TH_DIMS(3, 0), 0, TIDE_INT32);
        }
    check_scan("Cumsum", TIDE_FLOAT64, 2, TH_DIMS(300, 257), 1, TIDE_INT32); /* split over threads */
    check_scan("Cumsum", TIDE_FLOAT32, 2, TH_DIMS(1000, 3), 0, TIDE_INT32);
}

/* TensorFlow's documented examples, and integers wrapping. */
static void test_scan_literals(void)
{
    tide_tensor *x = th_f64(1, TH_DIMS(3), (double[]){2, 3, 5}), *a = th_i32(0, NULL, (int32_t[]){0});
    const struct {
        const char *op;
        bool exclusive, reverse;
        double want[3];
    } cases[] = {
        {"Cumsum", false, false, {2, 5, 10}}, {"Cumsum", true, false, {0, 2, 5}},
        {"Cumsum", false, true, {10, 8, 5}},  {"Cumsum", true, true, {8, 5, 0}},
        {"Cumprod", false, false, {2, 6, 30}}, {"Cumprod", true, false, {1, 2, 6}},
        {"Cumprod", false, true, {30, 15, 5}}, {"Cumprod", true, true, {15, 5, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_attrs *attrs = scan_attrs(cases[i].exclusive, cases[i].reverse);
        tide_tensor *got = th_run1(cases[i].op, (tide_tensor *[]){x, a}, 2, attrs);
        tide_tensor *want = th_f64(1, TH_DIMS(3), cases[i].want);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        release_all((tide_tensor *[]){got, want}, 2);
        tide_attrs_free(attrs);
    }
    tide_tensor *big = th_i32(1, TH_DIMS(3), (int32_t[]){INT32_MAX, 1, 2});
    tide_tensor *got = th_run1("Cumsum", (tide_tensor *[]){big, a}, 2, NULL);
    tide_tensor *want = th_i32(1, TH_DIMS(3), (int32_t[]){INT32_MAX, INT32_MIN, INT32_MIN + 2});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release_all((tide_tensor *[]){x, a, big, got, want}, 5);
}

static void test_scan_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), NULL), *s = th_f32(0, NULL, (float[]){1});
    tide_tensor *a2 = th_i32(0, NULL, (int32_t[]){2}), *av = th_i32(1, TH_DIMS(1), (int32_t[]){0});
    TH_ASSERT_FAILS("Cumsum", ((tide_tensor *[]){x, a2}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "axis 2 is out of range [-2, 2) for x of shape [2, 3]");
    TH_ASSERT_FAILS("Cumprod", ((tide_tensor *[]){x, av}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "axis must be a scalar, got shape [1]");
    TH_ASSERT_FAILS("Cumsum", ((tide_tensor *[]){s, a2}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "x must have rank >= 1 to scan along an axis, got a scalar");
    tide_tensor *c = th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(2), NULL);
    TH_ASSERT_FAILS("Cumsum", ((tide_tensor *[]){c, a2}), 2, NULL, TIDE_INVALID_ARGUMENT, "complex64");
    /* at graph time from a Const axis; by the kernel when the axis is only fed at run time */
    th_assert_graph_fails("x = Placeholder(dtype=float32, shape=[2, 3])\n"
                          "a = Const(value=tensor(int32, [], [-3]), dtype=int32)\n",
                          "y = Cumsum(x, a)", "axis -3 is out of range [-2, 2)");
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32)\n a = Placeholder(dtype=int32)\n y = Cumsum(x, a)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_error *err = tide_error_new();
    tide_session *sess = tide_session_new(th_engine(), g, NULL, err);
    tide_output y = {tide_graph_node(g, "y"), 0};
    tide_feed feeds[2] = {{{tide_graph_node(g, "x"), 0}, x}, {{tide_graph_node(g, "a"), 0}, a2}};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(sess, NULL, feeds, 2, &y, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "axis 2 is out of range [-2, 2) for x of shape [2, 3]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'y'"));
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
    release_all((tide_tensor *[]){x, s, a2, av, c}, 5);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_scans),
        TH_TEST(test_scan_literals),
        TH_TEST(test_scan_errors),
        TH_END,
    };
    return th_main("scan", tests);
}
