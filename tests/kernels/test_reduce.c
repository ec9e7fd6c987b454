/* test_reduce.c — the reductions: Sum, Prod, Mean, Max, Min, All, Any, ArgMax, ArgMin. Every result
 * is checked against a brute-force reference written here (every input element is folded into the output its
 * kept coordinates name): in double for floating types, in 64-bit integers for integer types (Sum and
 * Prod wrapping modulo 2^64 and then truncated to the dtype, Mean truncated toward zero).
 *
 * Tolerances: float32 results must be the double reference rounded to float32 (relative 2e-7, about
 * one ulp, which a float32 accumulator would not meet on the large sums); float64 1e-12 relative;
 * float16 one ulp (1e-3), bfloat16 one ulp (8e-3); integers exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAXN (1 << 21)

/* ---------------------------------------------------------------- tensors of any dtype */

/* A tensor of dt from doubles (integers truncated to the dtype's width, complex: imaginary 0). */
static tide_tensor *make(tide_dtype dt, int rank, const int64_t *dims, const double *v)
{
    return th_from_doubles(dt, rank, dims, v, 0);
}

static bool is_int(tide_dtype dt) { return tide_dtype_is_integer(dt); }

/* Random test values, exactly representable in dt. Prod gets values near 1 (floats) or small
 * magnitudes (integers), so products stay meaningful. */
static double rand_value(tide_dtype dt, const char *op)
{
    bool prod = strcmp(op, "Prod") == 0;
    if (is_int(dt)) {
        bool uns = dt == TIDE_UINT8 || dt == TIDE_UINT16;
        if (prod) { /* one of -3, -2, -1, 1, 2, 3 (1..6 unsigned): products wrap, never vanish */
            double k = floor(th_rand(0, 6));
            return uns ? k + 1 : k < 3 ? k - 3 : k - 2;
        }
        return floor(th_rand(uns ? 0 : -60, 61));
    }
    double x = prod ? th_rand(0.5, 1.5) : th_rand(-1, 1);
    if (dt == TIDE_FLOAT32 || dt == TIDE_COMPLEX64)
        return (float)x;
    if (dt == TIDE_FLOAT16)
        return tide_f16_to_f32(tide_f32_to_f16((float)x));
    if (dt == TIDE_BFLOAT16)
        return tide_bf16_to_f32(tide_f32_to_bf16((float)x));
    return x;
}

static double tol_for(tide_dtype dt)
{
    switch (dt) {
    case TIDE_FLOAT32: case TIDE_COMPLEX64: return 2e-7;
    case TIDE_FLOAT64: case TIDE_COMPLEX128: return 1e-12;
    case TIDE_FLOAT16: return 1e-3;
    case TIDE_BFLOAT16: return 8e-3;
    default: return 0;
    }
}

static tide_tensor *axes_tensor(tide_dtype tidx, int n, const int64_t *ax, bool scalar)
{
    double v[TIDE_MAX_RANK + 4] = {0};
    for (int i = 0; i < n; i++)
        v[i] = (double)ax[i];
    return scalar ? make(tidx, 0, NULL, v) : make(tidx, 1, TH_DIMS(n), v);
}

static tide_attrs *keep_attrs(bool keep)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "keep_dims", keep);
    return a;
}

/* Runs op(x, axes) with keep_dims; NULL on failure (the harness reports it). */
static tide_tensor *reduce(const char *op, tide_tensor *x, tide_tensor *axes, bool keep)
{
    tide_attrs *a = keep_attrs(keep);
    tide_tensor *in[2] = {x, axes};
    tide_tensor *out = th_run1(op, in, 2, a);
    tide_attrs_free(a);
    return out;
}

/* ---------------------------------------------------------------- the reference */

static int64_t num_elements(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* The output position of input element i: its coordinates on the kept axes, row-major. */
static int64_t out_index(int64_t i, int rank, const int64_t *dims, unsigned mask)
{
    int64_t coord[TIDE_MAX_RANK], o = 0;
    for (int d = rank - 1; d >= 0; d--) {
        coord[d] = i % dims[d];
        i /= dims[d];
    }
    for (int d = 0; d < rank; d++)
        if (!(mask & (1u << d)))
            o = o * dims[d] + coord[d];
    return o;
}

/* Integer results of the last ref_reduce, exact. */
static int64_t ref_int[MAXN];

/* Reference reduction of x into out (floats: long double accumulators, NaN sticky for Max/Min) and
 * ref_int (integers: int64, Sum and Prod wrapping modulo 2^64, Mean truncated toward zero). Returns
 * the number of outputs; *count receives the elements per output. */
static int64_t ref_reduce(const char *op, bool ints, int rank, const int64_t *dims, unsigned mask,
                          const double *x, double *out, int64_t *count)
{
    static long double acc[MAXN];
    int64_t n = num_elements(rank, dims), m = 1;
    for (int d = 0; d < rank; d++)
        if (!(mask & (1u << d)))
            m *= dims[d];
    *count = m ? n / m : 0;
    bool sum = strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0, mul = strcmp(op, "Prod") == 0;
    bool max = strcmp(op, "Max") == 0;
    for (int64_t o = 0; o < m; o++) {
        acc[o] = mul ? 1 : sum ? 0 : max ? -INFINITY : INFINITY;
        ref_int[o] = mul ? 1 : sum ? 0 : max ? INT64_MIN : INT64_MAX;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t o = out_index(i, rank, dims, mask);
        long double v = x[i];
        int64_t iv = ints ? (int64_t)x[i] : 0;
        if (sum) {
            acc[o] += v;
            ref_int[o] = (int64_t)((uint64_t)ref_int[o] + (uint64_t)iv);
        } else if (mul) {
            acc[o] *= v;
            ref_int[o] = (int64_t)((uint64_t)ref_int[o] * (uint64_t)iv);
        } else if (max) {
            acc[o] = isnan(acc[o]) || isnan(v) ? NAN : v > acc[o] ? v : acc[o];
            ref_int[o] = iv > ref_int[o] ? iv : ref_int[o];
        } else {
            acc[o] = isnan(acc[o]) || isnan(v) ? NAN : v < acc[o] ? v : acc[o];
            ref_int[o] = iv < ref_int[o] ? iv : ref_int[o];
        }
    }
    for (int64_t o = 0; o < m; o++) {
        if (strcmp(op, "Mean") == 0 && ints)
            ref_int[o] /= *count;
        out[o] = (double)(strcmp(op, "Mean") == 0 ? acc[o] / *count : acc[o]);
    }
    return m;
}

/* The expected tensor of the last ref_reduce: out (floats) or ref_int (integers, truncated to dt). */
static tide_tensor *expected(tide_dtype dt, int rank, const int64_t *dims, const double *out)
{
    if (!is_int(dt))
        return make(dt, rank, dims, out);
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    void *d = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        int64_t v = ref_int[i];
        switch (dt) {
        case TIDE_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
        case TIDE_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
        case TIDE_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
        case TIDE_INT64: ((int64_t *)d)[i] = v; break;
        case TIDE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
        case TIDE_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
        default: break;
        }
    }
    return t;
}

typedef struct axis_case {
    int n;
    int64_t ax[TIDE_MAX_RANK];
    bool scalar; /* axes given as a scalar (n == 1) */
} axis_case;

static unsigned case_mask(const axis_case *c, int rank)
{
    unsigned m = 0;
    for (int i = 0; i < c->n; i++)
        m |= 1u << (c->ax[i] < 0 ? c->ax[i] + rank : c->ax[i]);
    return m;
}

/* Runs op on random data of the shape over one axis set and compares with the reference. */
static void check_case(const char *op, tide_dtype dt, int rank, const int64_t *dims, const axis_case *c,
                       bool keep, tide_dtype tidx)
{
    static double x[MAXN], want[MAXN];
    int64_t n = num_elements(rank, dims), count;
    for (int64_t i = 0; i < n; i++)
        x[i] = rand_value(dt, op);
    tide_tensor *in = make(dt, rank, dims, x), *axes = axes_tensor(tidx, c->n, c->ax, c->scalar);
    tide_tensor *got = reduce(op, in, axes, keep);
    unsigned mask = case_mask(c, rank);
    ref_reduce(op, is_int(dt), rank, dims, mask, x, want, &count);
    int64_t odims[TIDE_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < rank; d++)
        if (!(mask & (1u << d)) || keep)
            odims[orank++] = mask & (1u << d) ? 1 : dims[d];
    tide_tensor *expect = expected(dt, orank, odims, want);
    TH_ASSERT_CLOSE(got, expect, tol_for(dt), 1e-12);
    tide_tensor_release(in);
    tide_tensor_release(axes);
    tide_tensor_release(got);
    tide_tensor_release(expect);
}

/* Every axis set of a rank-3 shape [2, 3, 4], with and without keep_dims, int32 and int64 axes. */
static void check_rank3(const char *op, tide_dtype dt)
{
    static const axis_case cases[] = {
        {0, {0}, false},       {1, {0}, false},     {1, {1}, false},     {1, {2}, false},
        {1, {-1}, false},      {1, {1}, true},      {1, {-3}, true},     {2, {0, 2}, false},
        {2, {2, 0}, false},    {2, {-3, -1}, false}, {2, {0, 1}, false}, {2, {1, -1}, false},
        {3, {0, 1, 2}, false}, {3, {2, -2, 0}, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int keep = 0; keep < 2; keep++)
            check_case(op, dt, 3, TH_DIMS(2, 3, 4), &cases[i], keep, i % 2 ? TIDE_INT64 : TIDE_INT32);
}

/* Shapes whose axis sets are not contiguous (several passes), and size-1 dims. */
static void check_shapes(const char *op, tide_dtype dt)
{
    static const axis_case r4[] = {{2, {0, 2}, false}, {2, {1, 3}, false}, {2, {0, 3}, false},
                                   {3, {0, 1, 3}, false}, {3, {0, 2, 3}, false}, {2, {1, 2}, false},
                                   {1, {3}, false}, {1, {0}, false}};
    for (size_t i = 0; i < sizeof r4 / sizeof r4[0]; i++)
        check_case(op, dt, 4, TH_DIMS(2, 3, 4, 5), &r4[i], i % 2, TIDE_INT32);
    static const axis_case r5[] = {{3, {0, 2, 4}, false}, {2, {1, 3}, false},
                                   {5, {0, 1, 2, 3, 4}, false}, {2, {0, 4}, false}};
    for (size_t i = 0; i < sizeof r5 / sizeof r5[0]; i++)
        check_case(op, dt, 5, TH_DIMS(2, 3, 2, 3, 2), &r5[i], i % 2, TIDE_INT64);
    static const axis_case ones[] = {{1, {1}, false}, {2, {0, 1}, false}, {2, {1, 2}, false},
                                     {1, {0}, false}};
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) {
        check_case(op, dt, 3, TH_DIMS(3, 1, 4), &ones[i], i % 2, TIDE_INT32);
        check_case(op, dt, 3, TH_DIMS(1, 5, 1), &ones[i], (i + 1) % 2, TIDE_INT32);
    }
    check_case(op, dt, 1, TH_DIMS(37), &(axis_case){1, {0}, true}, false, TIDE_INT32);
    check_case(op, dt, 2, TH_DIMS(5, 19), &(axis_case){1, {-1}, false}, false, TIDE_INT32);
    check_case(op, dt, 2, TH_DIMS(19, 21), &(axis_case){1, {0}, false}, true, TIDE_INT64);
}

static const tide_dtype all_real[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_INT8,
                                      TIDE_INT16, TIDE_UINT8, TIDE_UINT16, TIDE_FLOAT16, TIDE_BFLOAT16};
#define NUM_REAL (sizeof all_real / sizeof all_real[0])

/* Every real dtype; Sum, Prod and Mean also complex (real-valued data here: the paths and shapes;
 * test_complex checks complex arithmetic). */
static void check_op_all_dtypes(const char *op)
{
    for (size_t i = 0; i < NUM_REAL; i++) {
        check_rank3(op, all_real[i]);
        check_shapes(op, all_real[i]);
    }
    if (strcmp(op, "Max") && strcmp(op, "Min"))
        for (tide_dtype dt = TIDE_COMPLEX64; dt <= TIDE_COMPLEX128; dt++) {
            check_rank3(op, dt);
            check_shapes(op, dt);
        }
}

/* All and Any against AND and OR over the groups out_index forms: every axis subset of shapes of
 * rank 1 to 4 and a large one (parallel passes), bytes 0, 1, 2 and 255 (any non-zero byte is true)
 * mostly false, even or mostly true, with and without keep_dims; empty groups give true and false. */
static void check_all_any(int rank, const int64_t *dims, unsigned mask, double p_true, bool keep)
{
    int64_t n = num_elements(rank, dims), out_dims[TIDE_MAX_RANK], m = 1, nax = 0, ax[TIDE_MAX_RANK];
    int out_rank = 0;
    for (int d = 0; d < rank; d++) {
        if (mask & (1u << d))
            ax[nax++] = d;
        if (!(mask & (1u << d)) || keep)
            out_dims[out_rank++] = mask & (1u << d) ? 1 : dims[d];
        if (!(mask & (1u << d)))
            m *= dims[d];
    }
    tide_tensor *x = th_tensor(TIDE_BOOL, rank, dims, NULL);
    tide_tensor *axes = axes_tensor(TIDE_INT32, (int)nax, ax, false);
    uint8_t *xb = tide_tensor_data(x), *all = malloc((size_t)m + 1), *any = malloc((size_t)m + 1);
    static const uint8_t trues[] = {1, 2, 255};
    for (int64_t i = 0; i < n; i++)
        xb[i] = th_rand(0, 1) < p_true ? trues[(int)th_rand(0, 3)] : 0;
    memset(all, 1, (size_t)m);
    memset(any, 0, (size_t)m);
    for (int64_t i = 0; i < n; i++) {
        int64_t o = out_index(i, rank, dims, mask);
        all[o] &= xb[i] != 0;
        any[o] |= xb[i] != 0;
    }
    for (int k = 0; k < 2; k++) {
        tide_tensor *got = reduce(k ? "Any" : "All", x, axes, keep);
        tide_tensor *want = th_tensor(TIDE_BOOL, out_rank, out_dims, k ? any : all);
        TH_ASSERT_SHAPE(got, out_rank, out_dims);
        /* canonical 0/1 where a reduction ran (a reduction over nothing may hand the input on) */
        bool reduced = nax > 0 && n > m;
        CU_ASSERT(got && (reduced ? tide_tensor_equal(got, want, true) : true));
        for (int64_t i = 0; got && !reduced && i < m; i++)
            CU_ASSERT((((uint8_t *)tide_tensor_data(got))[i] != 0) == ((k ? any : all)[i] != 0));
        tide_tensor_release(got);
        tide_tensor_release(want);
    }
    tide_tensor_release(x);
    tide_tensor_release(axes);
    free(all);
    free(any);
}

static void test_all_any(void)
{
    static const int64_t shapes[][4] = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}};
    const double p[] = {0.05, 0.5, 0.95};
    for (int r = 1; r <= 4; r++)
        for (unsigned mask = 0; mask < (1u << r); mask++)
            for (int k = 0; k < 3; k++)
                check_all_any(r, shapes[r - 1], mask, p[k], (mask + (unsigned)k) % 2);
    check_all_any(2, TH_DIMS(300, 500), 1u, 0.999, false);  /* columns: mostly true, some false */
    check_all_any(2, TH_DIMS(300, 500), 2u, 0.001, true);   /* rows */
    check_all_any(1, TH_DIMS(100000), 1u, 0.99999, false); /* one long group, split across threads */
    check_all_any(3, TH_DIMS(2, 0, 3), 2u, 0.5, false);     /* empty groups: All true, Any false */
    check_all_any(3, TH_DIMS(2, 0, 3), 5u, 0.5, true);      /* an empty output */
    /* bool only */
    tide_tensor *f = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(3), NULL);
    tide_tensor *axes = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *in[2] = {f, axes};
    TH_ASSERT_FAILS("All", in, 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype float32");
    tide_tensor_release(f);
    tide_tensor_release(axes);
}

static void test_sum_axes(void) { check_op_all_dtypes("Sum"); }
static void test_prod_axes(void) { check_op_all_dtypes("Prod"); }
static void test_mean_axes(void) { check_op_all_dtypes("Mean"); }
static void test_max_axes(void) { check_op_all_dtypes("Max"); }
static void test_min_axes(void) { check_op_all_dtypes("Min"); }

/* ---------------------------------------------------------------- exact values */

static void assert_i64(tide_tensor *got, int64_t n, const int64_t *want)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL(tide_tensor_dtype(got), TIDE_INT64);
    CU_ASSERT_EQUAL(tide_tensor_num_elements(got), n);
    if (tide_tensor_dtype(got) == TIDE_INT64 && tide_tensor_num_elements(got) == n)
        for (int64_t i = 0; i < n; i++)
            CU_ASSERT_EQUAL(((const int64_t *)tide_tensor_data(got))[i], want[i]);
}

/* op over all of a vector of dt; the result as a double. */
static double reduce_vector(const char *op, tide_dtype dt, int n, const double *v)
{
    tide_tensor *x = make(dt, 1, TH_DIMS(n), v), *axes = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *got = reduce(op, x, axes, false);
    double r = got ? tide_tensor_get_f64(got, 0) : -12345;
    if (got)
        CU_ASSERT_EQUAL(tide_tensor_rank(got), 0);
    tide_tensor_release(x);
    tide_tensor_release(axes);
    tide_tensor_release(got);
    return r;
}

static void test_integer_wraparound(void)
{
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_INT32, 2, (double[]){INT32_MAX, 1}), INT32_MIN);
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_INT32, 2, (double[]){INT32_MIN, -1}), INT32_MAX);
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_INT8, 2, (double[]){100, 100}), -56);
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_UINT8, 2, (double[]){200, 100}), 44);
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_INT16, 3, (double[]){30000, 30000, 10000}), 4464);
    CU_ASSERT_EQUAL(reduce_vector("Prod", TIDE_INT32, 2, (double[]){65536, 65536}), 0);
    CU_ASSERT_EQUAL(reduce_vector("Prod", TIDE_INT16, 2, (double[]){300, 300}), 24464);
    CU_ASSERT_EQUAL(reduce_vector("Prod", TIDE_UINT16, 2, (double[]){65535, 65535}), 1);
    CU_ASSERT_EQUAL(reduce_vector("Prod", TIDE_INT8, 3, (double[]){-128, -1, 1}), -128);
    /* int64 exactly: INT64_MAX + 1 wraps to INT64_MIN; INT64_MAX * 2 wraps to -2. */
    tide_tensor *axes = axes_tensor(TIDE_INT32, 0, NULL, false);
    int64_t big[] = {INT64_MAX, 1, INT64_MAX, 2};
    tide_tensor *x = th_i64(2, TH_DIMS(2, 2), big);
    tide_tensor *all = axes_tensor(TIDE_INT32, 1, TH_DIMS(1), true);
    tide_tensor *s = reduce("Sum", x, all, false), *p = reduce("Prod", x, all, false);
    assert_i64(s, 2, (int64_t[]){INT64_MIN, INT64_MIN + 1});
    assert_i64(p, 2, (int64_t[]){INT64_MAX, -2});
    tide_tensor *same = reduce("Sum", x, axes, false); /* no axes: the input unchanged */
    assert_i64(same, 4, big);
    tide_tensor_release(x);
    tide_tensor_release(all);
    tide_tensor_release(axes);
    tide_tensor_release(s);
    tide_tensor_release(p);
    tide_tensor_release(same);
}

static void test_integer_mean(void)
{
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT32, 2, (double[]){-7, 0}), -3); /* toward zero */
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT32, 2, (double[]){7, 0}), 3);
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT32, 3, (double[]){-1, -1, 1}), 0);
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT8, 2, (double[]){127, 127}), 127); /* no overflow */
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT8, 3, (double[]){-128, -128, -127}), -127);
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_UINT8, 3, (double[]){255, 255, 254}), 254);
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_INT32, 2, (double[]){INT32_MAX, INT32_MAX}), INT32_MAX);
    /* int64: the exact (128-bit) sum, so large values do not overflow. */
    int64_t v[] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MIN, INT64_MIN, INT64_MIN + 1};
    tide_tensor *x = th_i64(2, TH_DIMS(2, 3), v), *ax = axes_tensor(TIDE_INT64, 1, TH_DIMS(-1), true);
    tide_tensor *m = reduce("Mean", x, ax, true);
    TH_ASSERT_SHAPE(m, 2, TH_DIMS(2, 1));
    assert_i64(m, 2, (int64_t[]){INT64_MAX, INT64_MIN + 1}); /* (3 * MIN + 1) / 3 = MIN + 1/3 */
    tide_tensor_release(x);
    tide_tensor_release(ax);
    tide_tensor_release(m);
}

static void test_integer_limits(void)
{
    int64_t v[] = {INT64_MAX - 1, INT64_MAX, INT64_MIN + 1, INT64_MIN};
    tide_tensor *x = th_i64(1, TH_DIMS(4), v), *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), false);
    tide_tensor *mx = reduce("Max", x, ax, false), *mn = reduce("Min", x, ax, false);
    assert_i64(mx, 1, (int64_t[]){INT64_MAX});
    assert_i64(mn, 1, (int64_t[]){INT64_MIN});
    tide_tensor_release(x);
    tide_tensor_release(ax);
    tide_tensor_release(mx);
    tide_tensor_release(mn);
    CU_ASSERT_EQUAL(reduce_vector("Max", TIDE_UINT16, 3, (double[]){65535, 0, 7}), 65535);
    CU_ASSERT_EQUAL(reduce_vector("Min", TIDE_INT8, 3, (double[]){-128, 127, 0}), -128);
}

/* ---------------------------------------------------------------- NaN and infinities */

static void test_nan_propagation(void)
{
    const tide_dtype fts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16};
    for (size_t t = 0; t < 4; t++) {
        tide_dtype dt = fts[t];
        CU_ASSERT(isnan(reduce_vector("Max", dt, 3, (double[]){1, NAN, 3})));
        CU_ASSERT(isnan(reduce_vector("Min", dt, 3, (double[]){1, NAN, 3})));
        CU_ASSERT(isnan(reduce_vector("Max", dt, 3, (double[]){NAN, 1, 3})));
        CU_ASSERT(isnan(reduce_vector("Sum", dt, 2, (double[]){NAN, 1})));
        CU_ASSERT(isnan(reduce_vector("Mean", dt, 2, (double[]){1, NAN})));
        CU_ASSERT_EQUAL(reduce_vector("Max", dt, 2, (double[]){-INFINITY, -INFINITY}), -INFINITY);
        CU_ASSERT_EQUAL(reduce_vector("Min", dt, 2, (double[]){INFINITY, 5}), 5);
    }
    /* A NaN anywhere in a long row (lanes and tail), and in one column of several. */
    static double v[1000];
    for (int pos = 0; pos < 1000; pos += 111) {
        for (int i = 0; i < 1000; i++)
            v[i] = i == pos ? NAN : th_rand(-1, 1);
        CU_ASSERT(isnan(reduce_vector("Max", TIDE_FLOAT32, 1000, v)));
        int n = pos + 1 + pos % 7 < 1000 ? pos + 1 + pos % 7 : 1000; /* NaN at varied distances from the end */
        CU_ASSERT(isnan(reduce_vector("Min", TIDE_FLOAT64, n, v)));
    }
    double m[] = {1, 2, 3, NAN, 5, 6, 7, 8, 9, 10, 11, 12}; /* [4, 3], NaN in column 0 */
    tide_tensor *x = make(TIDE_FLOAT32, 2, TH_DIMS(4, 3), m), *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *mx = reduce("Max", x, ax, false), *mn = reduce("Min", x, ax, false);
    tide_tensor *wmx = make(TIDE_FLOAT32, 1, TH_DIMS(3), (double[]){NAN, 11, 12});
    tide_tensor *wmn = make(TIDE_FLOAT32, 1, TH_DIMS(3), (double[]){NAN, 2, 3});
    TH_ASSERT_CLOSE(mx, wmx, 0, 0);
    TH_ASSERT_CLOSE(mn, wmn, 0, 0);
    tide_tensor *all[] = {x, ax, mx, mn, wmx, wmn};
    for (int i = 0; i < 6; i++)
        tide_tensor_release(all[i]);
}

/* ---------------------------------------------------------------- empty tensors */

/* op over axes of a tensor of shape dims (holding no element) equals the value fill everywhere. */
static void check_empty(const char *op, tide_dtype dt, int rank, const int64_t *dims, int nax,
                        const int64_t *ax, bool keep, int orank, const int64_t *odims, double fill)
{
    tide_tensor *x = th_tensor(dt, rank, dims, NULL), *axes = axes_tensor(TIDE_INT32, nax, ax, false);
    tide_tensor *got = reduce(op, x, axes, keep);
    TH_ASSERT_SHAPE(got, orank, odims);
    static double want[64];
    for (int i = 0; i < 64; i++)
        want[i] = fill;
    tide_tensor *expect = make(dt, orank, odims, want);
    if (dt == TIDE_INT32 && (fill == INFINITY || fill == -INFINITY)) { /* make() cannot say INT32_MIN */
        tide_tensor_release(expect);
        expect = th_tensor(dt, orank, odims, NULL);
        for (int64_t i = 0; i < tide_tensor_num_elements(expect); i++)
            ((int32_t *)tide_tensor_data(expect))[i] = fill > 0 ? INT32_MAX : INT32_MIN;
    }
    TH_ASSERT_CLOSE(got, expect, 0, 0);
    tide_tensor_release(x);
    tide_tensor_release(axes);
    tide_tensor_release(got);
    tide_tensor_release(expect);
}

static void test_empty_reductions(void)
{
    const int64_t *d03 = TH_DIMS(0, 3);
    check_empty("Sum", TIDE_FLOAT32, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), 0);
    check_empty("Sum", TIDE_FLOAT32, 2, d03, 1, TH_DIMS(0), true, 2, TH_DIMS(1, 3), 0);
    check_empty("Sum", TIDE_FLOAT32, 2, d03, 1, TH_DIMS(1), false, 1, TH_DIMS(0), 0);
    check_empty("Sum", TIDE_INT64, 2, d03, 2, TH_DIMS(0, 1), false, 0, NULL, 0);
    check_empty("Sum", TIDE_COMPLEX64, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), 0);
    check_empty("Prod", TIDE_FLOAT64, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), 1);
    check_empty("Prod", TIDE_INT32, 2, d03, 1, TH_DIMS(-2), false, 1, TH_DIMS(3), 1);
    check_empty("Prod", TIDE_FLOAT16, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, 1);
    check_empty("Max", TIDE_FLOAT32, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), -INFINITY);
    check_empty("Min", TIDE_FLOAT64, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), INFINITY);
    check_empty("Max", TIDE_BFLOAT16, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), -INFINITY);
    check_empty("Max", TIDE_INT32, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), -INFINITY);
    check_empty("Min", TIDE_INT32, 2, d03, 1, TH_DIMS(0), true, 2, TH_DIMS(1, 3), INFINITY);
    check_empty("Min", TIDE_UINT8, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, 255);
    check_empty("Max", TIDE_UINT16, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, 0);
    check_empty("Max", TIDE_INT8, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, -128);
    check_empty("Mean", TIDE_FLOAT32, 2, d03, 1, TH_DIMS(0), false, 1, TH_DIMS(3), NAN);
    check_empty("Mean", TIDE_FLOAT64, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, NAN);
    check_empty("Mean", TIDE_FLOAT16, 1, TH_DIMS(0), 1, TH_DIMS(0), false, 0, NULL, NAN);
    check_empty("Mean", TIDE_INT32, 2, d03, 1, TH_DIMS(1), false, 1, TH_DIMS(0), 0); /* no output */
    check_empty("Sum", TIDE_FLOAT32, 3, TH_DIMS(2, 0, 3), 2, TH_DIMS(0, 2), false, 1, TH_DIMS(0), 0);
    check_empty("Max", TIDE_FLOAT32, 3, TH_DIMS(2, 0, 3), 1, TH_DIMS(1), false, 2, TH_DIMS(2, 3), -INFINITY);
    /* complex Mean of nothing: NaN in both parts */
    tide_tensor *x = th_tensor(TIDE_COMPLEX128, 1, TH_DIMS(0), NULL), *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *m = reduce("Mean", x, ax, false);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT(isnan(((double *)tide_tensor_data(m))[0]) && isnan(((double *)tide_tensor_data(m))[1]));
    tide_tensor_release(m);
    /* an integer Mean of nothing is an error */
    tide_tensor *xi = th_tensor(TIDE_INT32, 2, d03, NULL), *a0 = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *in[] = {xi, a0};
    TH_ASSERT_FAILS("Mean", in, 2, NULL, TIDE_INVALID_ARGUMENT, "integers have no NaN");
    TH_ASSERT_FAILS("Mean", in, 2, NULL, TIDE_INVALID_ARGUMENT, "[0, 3]");
    tide_tensor *all[] = {x, ax, xi, a0};
    for (int i = 0; i < 4; i++)
        tide_tensor_release(all[i]);
}

/* ---------------------------------------------------------------- shapes, scalars, identity */

static void test_scalars_and_identity(void)
{
    tide_tensor *s = th_f32(0, NULL, (float[]){2.5f}), *none = axes_tensor(TIDE_INT32, 0, NULL, false);
    const char *ops[] = {"Sum", "Prod", "Mean", "Max", "Min"};
    for (int i = 0; i < 5; i++) {
        tide_tensor *got = reduce(ops[i], s, none, i % 2);
        TH_ASSERT_CLOSE(got, s, 0, 0);
        tide_tensor_release(got);
    }
    /* size-1 axes reduce nothing: the values pass through, the shape follows keep_dims */
    tide_tensor *x = th_f32(3, TH_DIMS(2, 1, 3), (float[]){1, 2, 3, 4, 5, 6});
    tide_tensor *a1 = axes_tensor(TIDE_INT64, 1, TH_DIMS(1), false);
    tide_tensor *got = reduce("Max", x, a1, false), *kept = reduce("Mean", x, a1, true);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(2, 3));
    TH_ASSERT_SHAPE(kept, 3, TH_DIMS(2, 1, 3));
    if (got)
        CU_ASSERT_EQUAL(((float *)tide_tensor_data(got))[4], 5.0f);
    TH_ASSERT_CLOSE(kept, x, 0, 0);
    /* a scalar axis of a scalar is out of range */
    tide_tensor *a0 = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *in[] = {s, a0};
    TH_ASSERT_FAILS("Sum", in, 2, NULL, TIDE_INVALID_ARGUMENT, "out of range for an input of rank 0");
    tide_tensor *all[] = {s, none, x, a1, got, kept, a0};
    for (int i = 0; i < 7; i++)
        tide_tensor_release(all[i]);
}

/* ---------------------------------------------------------------- complex */

static void test_complex(void)
{
    /* [[1+2i, 3-1i, 0.5i], [2, -1+1i, 4-4i]] */
    const double re[] = {1, 3, 0, 2, -1, 4}, im[] = {2, -1, 0.5, 0, 1, -4};
    for (int w = 0; w < 2; w++) {
        tide_dtype dt = w ? TIDE_COMPLEX128 : TIDE_COMPLEX64;
        tide_tensor *x = th_tensor(dt, 2, TH_DIMS(2, 3), NULL);
        for (int i = 0; i < 6; i++) {
            if (w)
                ((double *)tide_tensor_data(x))[2 * i] = re[i], ((double *)tide_tensor_data(x))[2 * i + 1] = im[i];
            else
                ((float *)tide_tensor_data(x))[2 * i] = (float)re[i], ((float *)tide_tensor_data(x))[2 * i + 1] = (float)im[i];
        }
        for (int axis = 0; axis < 2; axis++) {
            int64_t m = axis ? 2 : 3, len = axis ? 3 : 2;
            const char *ops[] = {"Sum", "Prod", "Mean"};
            for (int k = 0; k < 3; k++) {
                tide_tensor *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(axis), true);
                tide_tensor *got = reduce(ops[k], x, ax, false);
                tide_tensor *want = th_tensor(dt, 1, TH_DIMS(m), NULL);
                for (int64_t o = 0; o < m; o++) {
                    double sr = k == 1, si = 0;
                    for (int64_t r = 0; r < len; r++) {
                        int64_t i = axis ? o * 3 + r : r * 3 + o;
                        if (k == 1) {
                            double t = sr * re[i] - si * im[i];
                            si = sr * im[i] + si * re[i];
                            sr = t;
                        } else {
                            sr += re[i], si += im[i];
                        }
                    }
                    if (k == 2)
                        sr /= (double)len, si /= (double)len;
                    if (w)
                        ((double *)tide_tensor_data(want))[2 * o] = sr, ((double *)tide_tensor_data(want))[2 * o + 1] = si;
                    else
                        ((float *)tide_tensor_data(want))[2 * o] = (float)sr, ((float *)tide_tensor_data(want))[2 * o + 1] = (float)si;
                }
                TH_ASSERT_CLOSE(got, want, tol_for(dt), 1e-12);
                tide_tensor_release(ax);
                tide_tensor_release(got);
                tide_tensor_release(want);
            }
        }
        tide_tensor *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true), *in[] = {x, ax};
        TH_ASSERT_FAILS("Max", in, 2, NULL, TIDE_INVALID_ARGUMENT, "complex");
        TH_ASSERT_FAILS("ArgMin", in, 2, NULL, TIDE_INVALID_ARGUMENT, "complex");
        tide_tensor_release(ax);
        tide_tensor_release(x);
    }
}

/* ---------------------------------------------------------------- large inputs */

/* A large float32 input in [0, 1) (so a float32 accumulator would drift), reduced over axes. */
static void check_large(const char *op, tide_dtype dt, int rank, const int64_t *dims, int nax,
                        const int64_t *ax, double rtol)
{
    static double x[MAXN], want[MAXN];
    int64_t n = num_elements(rank, dims), count;
    CU_ASSERT_FATAL(n <= MAXN);
    bool prod = strcmp(op, "Prod") == 0;
    for (int64_t i = 0; i < n; i++) {
        double v = prod ? th_rand(0.9999, 1.0001) : th_rand(0, 1);
        x[i] = is_int(dt) ? floor(v * 2000 - 1000) : dt == TIDE_FLOAT32 ? (float)v : v;
    }
    tide_tensor *in = make(dt, rank, dims, x), *axes = axes_tensor(TIDE_INT32, nax, ax, false);
    tide_tensor *got = reduce(op, in, axes, false);
    axis_case c = {.n = nax};
    memcpy(c.ax, ax, (size_t)nax * sizeof *ax);
    unsigned mask = case_mask(&c, rank);
    int64_t m = ref_reduce(op, is_int(dt), rank, dims, mask, x, want, &count);
    int64_t odims[TIDE_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < rank; d++)
        if (!(mask & (1u << d)))
            odims[orank++] = dims[d];
    tide_tensor *expect = expected(dt, orank, odims, want);
    CU_ASSERT_EQUAL(tide_tensor_num_elements(expect), m);
    TH_ASSERT_CLOSE(got, expect, rtol, 1e-12);
    tide_tensor_release(in);
    tide_tensor_release(axes);
    tide_tensor_release(got);
    tide_tensor_release(expect);
}

static void test_large_sums(void)
{
    const int64_t *sq = TH_DIMS(1000, 1000);
    check_large("Sum", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(0), 2e-7);      /* columns, split over rows */
    check_large("Sum", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(1), 2e-7);      /* rows, in parallel */
    check_large("Sum", TIDE_FLOAT32, 2, sq, 2, TH_DIMS(0, 1), 2e-7);   /* everything, split */
    check_large("Sum", TIDE_FLOAT32, 2, TH_DIMS(3, 300000), 1, TH_DIMS(1), 2e-7); /* few long rows */
    check_large("Sum", TIDE_FLOAT32, 2, TH_DIMS(300000, 3), 1, TH_DIMS(0), 2e-7); /* few long columns */
    check_large("Sum", TIDE_FLOAT32, 3, TH_DIMS(100, 100, 100), 2, TH_DIMS(0, 2), 2e-7); /* two passes */
    check_large("Sum", TIDE_FLOAT32, 3, TH_DIMS(100, 100, 100), 1, TH_DIMS(1), 2e-7);  /* column blocks */
    check_large("Sum", TIDE_FLOAT64, 2, sq, 1, TH_DIMS(0), 1e-12);
    check_large("Sum", TIDE_FLOAT64, 1, TH_DIMS(2000000), 1, TH_DIMS(0), 1e-12);
    check_large("Sum", TIDE_INT32, 2, sq, 1, TH_DIMS(0), 0);
    check_large("Sum", TIDE_INT64, 2, sq, 2, TH_DIMS(0, 1), 0);
}

static void test_large_others(void)
{
    const int64_t *sq = TH_DIMS(1000, 1000);
    check_large("Mean", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(0), 2e-7);
    check_large("Mean", TIDE_FLOAT32, 2, sq, 2, TH_DIMS(0, 1), 2e-7);
    check_large("Mean", TIDE_INT32, 2, TH_DIMS(4, 250000), 1, TH_DIMS(1), 0);
    check_large("Max", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(1), 0);
    check_large("Max", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(0), 0);
    check_large("Min", TIDE_FLOAT64, 2, TH_DIMS(2, 500000), 1, TH_DIMS(1), 0);
    check_large("Min", TIDE_INT32, 3, TH_DIMS(100, 100, 100), 2, TH_DIMS(0, 2), 0);
    check_large("Prod", TIDE_FLOAT64, 2, TH_DIMS(4, 100000), 1, TH_DIMS(1), 1e-10); /* 1e5 roundings */
    check_large("Prod", TIDE_FLOAT32, 2, sq, 1, TH_DIMS(0), 2e-7);
}

/* A float32 accumulator would fail this: 2^24 + 1 + 1 + ... */
static void test_float32_accuracy(void)
{
    static double v[4097];
    v[0] = 16777216.0;
    for (int i = 1; i < 4097; i++)
        v[i] = 1.0;
    CU_ASSERT_EQUAL(reduce_vector("Sum", TIDE_FLOAT32, 4097, v), 16777216.0 + 4096.0);
    CU_ASSERT_EQUAL(reduce_vector("Mean", TIDE_FLOAT32, 4097, v), (float)((16777216.0 + 4096.0) / 4097.0));
}

/* ---------------------------------------------------------------- ArgMax, ArgMin */

static tide_tensor *arg(const char *op, tide_tensor *x, int64_t dim, tide_dtype tidx, tide_dtype out_type)
{
    tide_tensor *d = make(tidx, 0, NULL, (double[]){(double)dim});
    tide_attrs *a = NULL;
    if (out_type != TIDE_INVALID_DTYPE) {
        a = tide_attrs_new();
        tide_attrs_set_type(a, "output_type", out_type);
    }
    tide_tensor *in[] = {x, d};
    tide_tensor *got = th_run1(op, in, 2, a);
    tide_attrs_free(a);
    tide_tensor_release(d);
    return got;
}

/* Reference arg reduction: the first index with the best value (NaN counts as best). */
static void ref_arg(bool max, int rank, const int64_t *dims, int axis, const double *x, double *out)
{
    int64_t O = 1, R = dims[axis], I = 1;
    for (int d = 0; d < axis; d++)
        O *= dims[d];
    for (int d = axis + 1; d < rank; d++)
        I *= dims[d];
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t best = 0;
            for (int64_t r = 1; r < R; r++) {
                double v = x[(o * R + r) * I + i], b = x[(o * R + best) * I + i];
                if (isnan(b))
                    break;
                if (isnan(v) || (max ? v > b : v < b))
                    best = r;
            }
            out[o * I + i] = (double)best;
        }
}

static void check_arg(const char *op, tide_dtype dt, int rank, const int64_t *dims, int64_t dim,
                      tide_dtype out_type, int distinct)
{
    static double x[MAXN], want[MAXN];
    int64_t n = num_elements(rank, dims);
    for (int64_t i = 0; i < n; i++) /* few distinct values: many ties */
        x[i] = floor(th_rand(0, distinct)) - (is_int(dt) && dt != TIDE_UINT8 && dt != TIDE_UINT16 ? distinct / 2 : 0);
    tide_tensor *in = make(dt, rank, dims, x);
    tide_tensor *got = arg(op, in, dim, dim % 2 ? TIDE_INT64 : TIDE_INT32, out_type);
    int axis = (int)(dim < 0 ? dim + rank : dim);
    ref_arg(strcmp(op, "ArgMax") == 0, rank, dims, axis, x, want);
    int64_t odims[TIDE_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < rank; d++)
        if (d != axis)
            odims[orank++] = dims[d];
    tide_tensor *expect = make(out_type == TIDE_INT32 ? TIDE_INT32 : TIDE_INT64, orank, odims, want);
    TH_ASSERT_CLOSE(got, expect, 0, 0);
    tide_tensor_release(in);
    tide_tensor_release(got);
    tide_tensor_release(expect);
}

static void test_argmax_argmin(void)
{
    const char *ops[] = {"ArgMax", "ArgMin"};
    for (int k = 0; k < 2; k++)
        for (size_t t = 0; t < NUM_REAL; t++) {
            tide_dtype ot = t % 2 ? TIDE_INT32 : TIDE_INVALID_DTYPE; /* default: int64 */
            for (int64_t d = -3; d < 3; d++)
                check_arg(ops[k], all_real[t], 3, TH_DIMS(4, 5, 6), d, ot, 7);
            check_arg(ops[k], all_real[t], 1, TH_DIMS(1), 0, ot, 3);
            check_arg(ops[k], all_real[t], 1, TH_DIMS(77), 0, ot, 100);
            check_arg(ops[k], all_real[t], 2, TH_DIMS(3, 300), 0, ot, 5);
        }
    /* ties pick the first index; the output dtype follows output_type */
    tide_tensor *x = th_f32(1, TH_DIMS(5), (float[]){3, 1, 3, 1, 2});
    tide_tensor *mx = arg("ArgMax", x, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    tide_tensor *mn = arg("ArgMin", x, -1, TIDE_INT64, TIDE_INT32);
    assert_i64(mx, 1, (int64_t[]){0});
    CU_ASSERT_PTR_NOT_NULL_FATAL(mn);
    CU_ASSERT_EQUAL(tide_tensor_dtype(mn), TIDE_INT32);
    CU_ASSERT_EQUAL(((int32_t *)tide_tensor_data(mn))[0], 1);
    tide_tensor_release(x);
    tide_tensor_release(mx);
    tide_tensor_release(mn);
}

static void test_arg_nan_and_empty(void)
{
    tide_tensor *x = th_f64(1, TH_DIMS(5), (double[]){1, NAN, 5, NAN, -2});
    tide_tensor *mx = arg("ArgMax", x, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    tide_tensor *mn = arg("ArgMin", x, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    assert_i64(mx, 1, (int64_t[]){1});
    assert_i64(mn, 1, (int64_t[]){1});
    /* NaN in columns: [3, 2] with NaN at (2, 0) */
    tide_tensor *c = th_f32(2, TH_DIMS(3, 2), (float[]){1, 2, 9, 1, NAN, 0});
    tide_tensor *cm = arg("ArgMax", c, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    assert_i64(cm, 2, (int64_t[]){2, 0});
    /* NaN in some of 5 columns (the vectorised column path): first NaN wins, also in row 0 */
    tide_tensor *w = th_f32(2, TH_DIMS(3, 5), (float[]){1, 2, 3, 4, NAN, 7, 8, 0, NAN, 5, 2, NAN, 9, NAN, 6});
    tide_tensor *wmx = arg("ArgMax", w, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    tide_tensor *wmn = arg("ArgMin", w, 0, TIDE_INT64, TIDE_INVALID_DTYPE);
    assert_i64(wmx, 5, (int64_t[]){1, 2, 2, 1, 0});
    assert_i64(wmn, 5, (int64_t[]){0, 2, 1, 1, 0});
    tide_tensor_release(w);
    tide_tensor_release(wmx);
    tide_tensor_release(wmn);
    /* an empty output is fine; an empty reduced dimension is not */
    tide_tensor *e = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(0, 3), NULL);
    tide_tensor *ge = arg("ArgMax", e, 1, TIDE_INT32, TIDE_INVALID_DTYPE);
    TH_ASSERT_SHAPE(ge, 1, TH_DIMS(0));
    tide_tensor *d0 = make(TIDE_INT32, 0, NULL, (double[]){0}), *in[] = {e, d0};
    TH_ASSERT_FAILS("ArgMax", in, 2, NULL, TIDE_INVALID_ARGUMENT, "dimension 0 of the input (shape [0, 3]) is empty");
    tide_tensor *all[] = {x, mx, mn, c, cm, e, ge, d0};
    for (int i = 0; i < 8; i++)
        tide_tensor_release(all[i]);
}

static void test_arg_large(void)
{
    check_arg("ArgMax", TIDE_FLOAT32, 2, TH_DIMS(1000, 1000), 1, TIDE_INVALID_DTYPE, 1000000);
    check_arg("ArgMin", TIDE_FLOAT32, 2, TH_DIMS(1000, 1000), 0, TIDE_INT32, 1000000);
    check_arg("ArgMax", TIDE_INT32, 2, TH_DIMS(2, 500000), -1, TIDE_INVALID_DTYPE, 50); /* split rows */
    check_arg("ArgMin", TIDE_FLOAT64, 1, TH_DIMS(1000000), 0, TIDE_INVALID_DTYPE, 1000000);
    /* the best value planted at the end of a long vector, and a NaN planted after it */
    static double v[1000000];
    for (int i = 0; i < 1000000; i++)
        v[i] = th_rand(-1, 1);
    v[999999] = 2;
    tide_tensor *x = make(TIDE_FLOAT32, 1, TH_DIMS(1000000), v);
    tide_tensor *g = arg("ArgMax", x, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    assert_i64(g, 1, (int64_t[]){999999});
    ((float *)tide_tensor_data(x))[700001] = NAN;
    ((float *)tide_tensor_data(x))[900001] = NAN;
    tide_tensor *gn = arg("ArgMin", x, 0, TIDE_INT32, TIDE_INVALID_DTYPE);
    assert_i64(gn, 1, (int64_t[]){700001});
    tide_tensor_release(x);
    tide_tensor_release(g);
    tide_tensor_release(gn);
}

/* ---------------------------------------------------------------- errors */

static void test_reduce_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    struct {
        tide_tensor *axes;
        const char *needle;
    } bad[] = {
        {axes_tensor(TIDE_INT32, 1, TH_DIMS(2), false), "axis 2 is out of range for an input of rank 2 (shape [2, 3])"},
        {axes_tensor(TIDE_INT64, 1, TH_DIMS(-3), true), "axis -3 is out of range for an input of rank 2"},
        {axes_tensor(TIDE_INT32, 2, TH_DIMS(0, -2), false), "axis -2 is repeated"},
        {axes_tensor(TIDE_INT64, 3, TH_DIMS(1, 0, 1), false), "axis 1 is repeated in the reduction axes (it is axis 1 of the rank-2"},
        {make(TIDE_INT32, 2, TH_DIMS(1, 1), (double[]){0}), "reduction_indices must be a scalar or a vector, got shape [1, 1]"},
        {axes_tensor(TIDE_INT64, 1, TH_DIMS(INT64_MIN), true), "out of range"},
        {make(TIDE_FLOAT32, 1, TH_DIMS(1), (double[]){0}), "Tidx"},
        {make(TIDE_INT16, 1, TH_DIMS(1), (double[]){0}), "int16"},
    };
    const char *ops[] = {"Sum", "Prod", "Mean", "Max", "Min"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tide_tensor *in[] = {x, bad[i].axes};
        for (int k = 0; k < 5; k++)
            TH_ASSERT_FAILS(ops[k], in, 2, NULL, TIDE_INVALID_ARGUMENT, bad[i].needle);
        tide_tensor_release(bad[i].axes);
    }
    tide_tensor *ax = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    tide_tensor *b = th_tensor(TIDE_BOOL, 1, TH_DIMS(2), NULL), *s = th_tensor(TIDE_STRING, 1, TH_DIMS(2), NULL);
    tide_tensor *in_b[] = {b, ax}, *in_s[] = {s, ax}, *in_x[] = {x, ax};
    TH_ASSERT_FAILS("Sum", in_b, 2, NULL, TIDE_INVALID_ARGUMENT, "input 'input' has dtype bool");
    TH_ASSERT_FAILS("Max", in_s, 2, NULL, TIDE_INVALID_ARGUMENT, "dtype string");
    TH_ASSERT_FAILS("Sum", in_x, 1, NULL, TIDE_INVALID_ARGUMENT, "expects 2 inputs");
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "keep_dims", 1);
    TH_ASSERT_FAILS("Sum", in_x, 2, a, TIDE_INVALID_ARGUMENT, "keep_dims");
    tide_attrs_free(a);
    a = tide_attrs_new();
    tide_attrs_set_type(a, "Tidx", TIDE_INT64); /* does not match the int32 axes */
    TH_ASSERT_FAILS("Mean", in_x, 2, a, TIDE_INVALID_ARGUMENT, "reduction_indices");
    tide_attrs_free(a);
    tide_tensor *all[] = {x, ax, b, s};
    for (int i = 0; i < 4; i++)
        tide_tensor_release(all[i]);
}

static void test_arg_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    tide_tensor *d2 = make(TIDE_INT32, 0, NULL, (double[]){2}), *dm3 = make(TIDE_INT64, 0, NULL, (double[]){-3});
    tide_tensor *dv = make(TIDE_INT32, 1, TH_DIMS(1), (double[]){0}), *d0 = make(TIDE_INT32, 0, NULL, (double[]){0});
    tide_tensor *s = th_f32(0, NULL, (float[]){1});
    tide_tensor *in1[] = {x, d2}, *in2[] = {x, dm3}, *in3[] = {x, dv}, *in4[] = {s, d0};
    const char *ops[] = {"ArgMax", "ArgMin"};
    for (int k = 0; k < 2; k++) {
        TH_ASSERT_FAILS(ops[k], in1, 2, NULL, TIDE_INVALID_ARGUMENT,
                        "dimension 2 is out of range for an input of rank 2 (shape [2, 3])");
        TH_ASSERT_FAILS(ops[k], in2, 2, NULL, TIDE_INVALID_ARGUMENT, "dimension -3 is out of range");
        TH_ASSERT_FAILS(ops[k], in3, 2, NULL, TIDE_INVALID_ARGUMENT, "dimension must be a scalar, got shape [1]");
        TH_ASSERT_FAILS(ops[k], in4, 2, NULL, TIDE_INVALID_ARGUMENT, "got a scalar");
    }
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "output_type", TIDE_FLOAT32);
    tide_tensor *ok[] = {x, d0};
    TH_ASSERT_FAILS("ArgMax", ok, 2, a, TIDE_INVALID_ARGUMENT, "output_type=float32 is not allowed");
    tide_attrs_free(a);
    tide_tensor *b = th_tensor(TIDE_BOOL, 1, TH_DIMS(2), NULL), *inb[] = {b, d0};
    TH_ASSERT_FAILS("ArgMin", inb, 2, NULL, TIDE_INVALID_ARGUMENT, "dtype bool");
    tide_tensor *all[] = {x, d2, dm3, dv, d0, s, b};
    for (int i = 0; i < 7; i++)
        tide_tensor_release(all[i]);
}

/* ---------------------------------------------------------------- graph time and graph runs */

/* The inferred shape of node `name` after adding text to a fresh graph; rank -2 if that failed, with
 * the message copied to msg. */
static tide_shape infer(const char *text, const char *name, char *msg, size_t size)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_shape s = tide_shape_unknown();
    s.rank = -2;
    msg[0] = 0;
    if (tide_graph_extend_text(g, text, err) == TIDE_OK)
        s = tide_node_output_shape(tide_graph_node(g, name), 0);
    else
        snprintf(msg, size, "%s", tide_error_message(err));
    tide_error_free(err);
    tide_graph_free(g);
    return s;
}

static void check_infer(const char *text, int rank, const int64_t *dims)
{
    char msg[512], a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    tide_shape got = infer(text, "r", msg, sizeof msg), want = tide_shape_make(rank, dims);
    want.rank = rank;
    bool ok = tide_shape_equal(&got, &want);
    if (!ok)
        fprintf(stderr, "shape of r is %s, expected %s %s\n  in: %s\n", tide_shape_format(&got, a, sizeof a),
                tide_shape_format(&want, b, sizeof b), msg, text);
    CU_ASSERT(ok);
}

static void check_infer_fails(const char *text, const char *needle)
{
    char msg[512];
    tide_shape got = infer(text, "r", msg, sizeof msg);
    bool ok = got.rank == -2 && strstr(msg, needle);
    if (!ok)
        fprintf(stderr, "expected a graph-time error containing \"%s\", got \"%s\"\n  in: %s\n", needle, msg, text);
    CU_ASSERT(ok);
}

#define X_Q34 "x = Placeholder(dtype=float32, shape=[?, 3, 4])\n"
#define X_Q14 "x = Placeholder(dtype=float32, shape=[?, 1, 4])\n"

static void test_shape_inference(void)
{
    /* constant axes: exact shapes */
    check_infer(X_Q34 "a = Const(value=tensor(int32, [1], [1]), dtype=int32)\nr = Sum(x, a)\n", 2, TH_DIMS(-1, 4));
    check_infer(X_Q34 "a = Const(value=tensor(int64, [1], [1]), dtype=int64)\nr = Mean(x, a, keep_dims=true)\n",
                3, TH_DIMS(-1, 1, 4));
    check_infer(X_Q34 "a = Const(value=tensor(int32, [], [-1]), dtype=int32)\nr = Max(x, a)\n", 2, TH_DIMS(-1, 3));
    check_infer(X_Q34 "a = Const(value=tensor(int32, [2], [0, 2]), dtype=int32)\nr = Prod(x, a)\n", 1, TH_DIMS(3));
    check_infer(X_Q34 "a = Const(value=tensor(int32, [0], []), dtype=int32)\nr = Min(x, a)\n", 3, TH_DIMS(-1, 3, 4));
    check_infer(X_Q34 "a = Const(value=tensor(int32, [3], [2, 0, 1]), dtype=int32)\nr = Sum(x, a)\n", 0, NULL);
    /* axes known only by shape */
    check_infer(X_Q14 "a = Placeholder(dtype=int32, shape=[2])\nr = Sum(x, a)\n", 1, TH_DIMS(-1));
    check_infer(X_Q14 "a = Placeholder(dtype=int32, shape=[])\nr = Sum(x, a)\n", 2, TH_DIMS(-1, -1));
    check_infer(X_Q14 "a = Placeholder(dtype=int32, shape=[0])\nr = Sum(x, a)\n", 3, TH_DIMS(-1, 1, 4));
    check_infer(X_Q14 "a = Placeholder(dtype=int32, shape=[?])\nr = Sum(x, a, keep_dims=true)\n", 3, TH_DIMS(-1, 1, -1));
    check_infer(X_Q14 "a = Placeholder(dtype=int32, shape=[?])\nr = Sum(x, a)\n", -1, NULL);
    check_infer("x = Placeholder(dtype=float32)\na = Const(value=tensor(int32, [1], [0]), dtype=int32)\n"
                "r = Sum(x, a)\n", -1, NULL);
    /* what is already known to be wrong */
    check_infer_fails(X_Q34 "a = Const(value=tensor(int32, [1], [3]), dtype=int32)\nr = Sum(x, a)\n",
                      "axis 3 is out of range for an input of rank 3 (shape [?, 3, 4])");
    check_infer_fails(X_Q34 "a = Const(value=tensor(int64, [2], [1, -2]), dtype=int64)\nr = Max(x, a)\n",
                      "axis -2 is repeated");
    check_infer_fails(X_Q34 "a = Placeholder(dtype=int32, shape=[2, 1])\nr = Sum(x, a)\n",
                      "reduction_indices must be a scalar or a vector, got shape [2, 1]");
    check_infer_fails(X_Q34 "a = Placeholder(dtype=int32, shape=[4])\nr = Mean(x, a)\n",
                      "4 reduction axes (shape [4]) cannot all be distinct axes of an input of rank 3");
    /* ArgMax and ArgMin */
    check_infer("x = Placeholder(dtype=float32, shape=[?, 5])\nd = Const(value=tensor(int32, [], [1]), dtype=int32)\n"
                "r = ArgMax(x, d)\n", 1, TH_DIMS(-1));
    check_infer("x = Placeholder(dtype=float32, shape=[2, 5, 7])\nd = Const(value=tensor(int64, [], [-2]), dtype=int64)\n"
                "r = ArgMin(x, d, output_type=int32)\n", 2, TH_DIMS(2, 7));
    check_infer("x = Placeholder(dtype=float32, shape=[2, 5, 7])\nd = Placeholder(dtype=int32)\n"
                "r = ArgMax(x, d)\n", 2, TH_DIMS(-1, -1));
    check_infer_fails("x = Placeholder(dtype=float32, shape=[3, 0])\nd = Const(value=tensor(int32, [], [1]), dtype=int32)\n"
                      "r = ArgMax(x, d)\n", "dimension 1 of the input (shape [3, 0]) is empty");
    check_infer_fails("x = Placeholder(dtype=float32, shape=[3, 2])\nd = Const(value=tensor(int32, [], [2]), dtype=int32)\n"
                      "r = ArgMin(x, d)\n", "dimension 2 is out of range for an input of rank 2");
    check_infer_fails("x = Placeholder(dtype=float32, shape=[3])\nd = Placeholder(dtype=int32, shape=[1])\n"
                      "r = ArgMax(x, d)\n", "dimension must be a scalar, got shape [1]");
    check_infer_fails("x = Placeholder(dtype=float32, shape=[])\nd = Placeholder(dtype=int32)\nr = ArgMax(x, d)\n",
                      "got a scalar");
}

/* Runs op in a graph whose inputs are fed to shapeless Placeholders (so only the kernel sees the
 * values) and asserts it fails with a message containing needle. */
static void graph_fails(const char *op, tide_tensor *const *inputs, int n, const char *needle)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_feed feeds[4];
    tide_output ins[4];
    for (int i = 0; i < n; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(inputs[i]));
        tide_node *p = tide_node_builder_finish(b, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        ins[i] = (tide_output){p, 0};
        feeds[i] = (tide_feed){{p, 0}, inputs[i]};
    }
    tide_node_builder *b = tide_node_builder_new(g, op, "r");
    tide_node_builder_add_inputs_flat(b, ins, n);
    tide_node *node = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(node);
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    tide_tensor *out = NULL;
    tide_status st = tide_session_run(s, NULL, feeds, n, &(tide_output){node, 0}, 1, &out, NULL, 0, NULL, err);
    bool ok = st == TIDE_INVALID_ARGUMENT && strstr(tide_error_message(err), needle);
    if (!ok)
        fprintf(stderr, "%s in a graph: expected an error containing \"%s\", got %s: %s\n", op, needle,
                tide_status_name(st), tide_error_message(err));
    CU_ASSERT(ok);
    tide_tensor_release(out);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_run_time_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    tide_tensor *a2 = axes_tensor(TIDE_INT32, 1, TH_DIMS(2), false), *dup = axes_tensor(TIDE_INT64, 2, TH_DIMS(1, -1), false);
    tide_tensor *a22 = make(TIDE_INT32, 2, TH_DIMS(1, 1), (double[]){0}), *am3 = axes_tensor(TIDE_INT32, 1, TH_DIMS(-3), true);
    graph_fails("Sum", (tide_tensor *[]){x, a2}, 2, "node 'r' (Sum): axis 2 is out of range for an input of rank 2 (shape [2, 3])");
    graph_fails("Max", (tide_tensor *[]){x, am3}, 2, "axis -3 is out of range");
    graph_fails("Prod", (tide_tensor *[]){x, dup}, 2, "axis -1 is repeated in the reduction axes (it is axis 1");
    graph_fails("Min", (tide_tensor *[]){x, a22}, 2, "reduction_indices must be a scalar or a vector, got shape [1, 1]");
    tide_tensor *e = th_tensor(TIDE_INT16, 2, TH_DIMS(0, 3), NULL), *a0 = axes_tensor(TIDE_INT32, 1, TH_DIMS(0), true);
    graph_fails("Mean", (tide_tensor *[]){e, a0}, 2, "(input shape [0, 3]) is undefined for int16");
    tide_tensor *d2 = make(TIDE_INT32, 0, NULL, (double[]){2}), *dv = make(TIDE_INT64, 1, TH_DIMS(1), (double[]){0});
    tide_tensor *s = th_f32(0, NULL, (float[]){1}), *ef = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(3, 0), NULL);
    tide_tensor *d1 = make(TIDE_INT32, 0, NULL, (double[]){1});
    graph_fails("ArgMax", (tide_tensor *[]){x, d2}, 2, "node 'r' (ArgMax): dimension 2 is out of range for an input of rank 2");
    graph_fails("ArgMin", (tide_tensor *[]){x, dv}, 2, "dimension must be a scalar, got shape [1]");
    graph_fails("ArgMax", (tide_tensor *[]){s, a0}, 2, "got a scalar");
    graph_fails("ArgMin", (tide_tensor *[]){ef, d1}, 2, "dimension 1 of the input (shape [3, 0]) is empty");
    tide_tensor *all[] = {x, a2, dup, a22, am3, e, a0, d2, dv, s, ef, d1};
    for (int i = 0; i < 12; i++)
        tide_tensor_release(all[i]);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_sum_axes),
        TH_TEST(test_prod_axes),
        TH_TEST(test_mean_axes),
        TH_TEST(test_max_axes),
        TH_TEST(test_min_axes),
        TH_TEST(test_all_any),
        TH_TEST(test_integer_wraparound),
        TH_TEST(test_integer_mean),
        TH_TEST(test_integer_limits),
        TH_TEST(test_nan_propagation),
        TH_TEST(test_empty_reductions),
        TH_TEST(test_scalars_and_identity),
        TH_TEST(test_complex),
        TH_TEST(test_large_sums),
        TH_TEST(test_large_others),
        TH_TEST(test_float32_accuracy),
        TH_TEST(test_argmax_argmin),
        TH_TEST(test_arg_nan_and_empty),
        TH_TEST(test_arg_large),
        TH_TEST(test_reduce_errors),
        TH_TEST(test_arg_errors),
        TH_TEST(test_shape_inference),
        TH_TEST(test_run_time_errors),
        TH_END,
    };
    return th_main("reduce", tests);
}
