/* test_reverse.c — the reflection ops: ReverseV2, MirrorPad and MirrorPadGrad.
 *
 * Expected values are computed here, independently of the kernels: each output element's
 * multi-index is mapped back to the input element it copies, with the reversal and the two mirror
 * modes written out per coordinate; MirrorPadGrad's reference adds every padded element into the
 * element its reference copy came from. Literal tables pin TensorFlow's documented examples
 * (REFLECT does not repeat the edge, SYMMETRIC does). th_run also runs every op through a graph. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const tide_dtype DTYPES[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_UINT8,
                                    TIDE_BOOL, TIDE_FLOAT16, TIDE_COMPLEX128, TIDE_STRING};
#define NUM_DTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

static void release_all(tide_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

/* A tensor of dtype dt holding 1, 2, 3, ... (bools alternate, strings are the numbers' text). */
static tide_tensor *seq(tide_dtype dt, int rank, const int64_t *dims)
{
    tide_shape s = tide_shape_make(rank, dims);
    int64_t n = tide_shape_num_elements(&s);
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = dt == TIDE_BOOL ? (double)(i % 3 == 0) : dt == TIDE_UINT8 ? (double)(i % 250 + 1) : (double)(i + 1);
    tide_tensor *t = th_from_doubles(dt, rank, dims, v, 0.5);
    free(v);
    return t;
}

/* The tensor of shape `out` whose element i is x's element src[i] (strings deep-copied). */
static tide_tensor *gather_ref(const tide_tensor *x, const tide_shape *out, const int64_t *src)
{
    tide_tensor *t = tide_tensor_new(tide_tensor_dtype(x), out, NULL);
    int64_t n = tide_shape_num_elements(out);
    size_t es = tide_dtype_size(tide_tensor_dtype(x));
    for (int64_t i = 0; i < n; i++) {
        if (tide_tensor_dtype(x) == TIDE_STRING) {
            const tide_tstring *s = (const tide_tstring *)tide_tensor_data(x) + src[i];
            tide_tensor_string_set(t, i, s->data, s->len, NULL);
        } else {
            memcpy((char *)tide_tensor_data(t) + (size_t)i * es, (const char *)tide_tensor_data(x) + (size_t)src[i] * es,
                   es);
        }
    }
    return t;
}

static tide_tensor *index_vec(tide_dtype dt, int n, const int64_t *v)
{
    double d[16];
    for (int i = 0; i < n; i++)
        d[i] = (double)v[i];
    return th_from_doubles(dt, 1, (int64_t[]){n}, d, 0);
}

/* ---------------------------------------------------------------- ReverseV2 */

static void check_reverse(tide_tensor *x, int n_axes, const int64_t *axes, tide_dtype adt)
{
    const tide_shape *s = tide_tensor_shape(x);
    bool rev[TIDE_MAX_RANK] = {false};
    for (int i = 0; i < n_axes; i++)
        rev[axes[i] < 0 ? axes[i] + s->rank : axes[i]] = true;
    int64_t n = tide_shape_num_elements(s), *src = calloc((size_t)(n + 1), sizeof *src);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, at = 0, stride = 1;
        for (int d = s->rank - 1; d >= 0; d--) {
            int64_t c = rem % s->dims[d];
            rem /= s->dims[d];
            at += (rev[d] ? s->dims[d] - 1 - c : c) * stride;
            stride *= s->dims[d];
        }
        src[i] = at;
    }
    tide_tensor *want = gather_ref(x, s, src), *in[2] = {x, index_vec(adt, n_axes, axes)};
    tide_tensor *got = th_run1("ReverseV2", in, 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    free(src);
    release_all((tide_tensor *[]){want, in[1], got}, 3);
}

static void test_reverse(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 3, TH_DIMS(2, 3, 4));
        check_reverse(x, 1, TH_DIMS(0), TIDE_INT32);
        check_reverse(x, 1, TH_DIMS(2), TIDE_INT64);
        check_reverse(x, 2, TH_DIMS(-1, 1), TIDE_INT32);
        check_reverse(x, 3, TH_DIMS(0, 1, 2), TIDE_INT64);
        check_reverse(x, 0, NULL, TIDE_INT32);
        tide_tensor *v = seq(DTYPES[d], 1, TH_DIMS(5));
        check_reverse(v, 1, TH_DIMS(0), TIDE_INT32);
        release_all((tide_tensor *[]){x, v}, 2);
    }
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(600, 501)), *e = seq(TIDE_INT64, 2, TH_DIMS(0, 3));
    check_reverse(big, 1, TH_DIMS(1), TIDE_INT32);
    check_reverse(big, 1, TH_DIMS(0), TIDE_INT32);
    check_reverse(e, 2, TH_DIMS(0, 1), TIDE_INT32);
    /* the literal case: [[1, 2, 3], [4, 5, 6]] reversed along both dimensions */
    tide_tensor *m = seq(TIDE_INT32, 2, TH_DIMS(2, 3)), *in[2] = {m, index_vec(TIDE_INT32, 2, TH_DIMS(0, 1))};
    tide_tensor *got = th_run1("ReverseV2", in, 2, NULL);
    tide_tensor *want = th_i32(2, TH_DIMS(2, 3), (int32_t[]){6, 5, 4, 3, 2, 1});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release_all((tide_tensor *[]){big, e, m, in[1], got, want}, 6);
}

static void test_reverse_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    const struct {
        int n;
        int64_t axes[3];
        const char *needle;
    } cases[] = {
        {1, {2}, "axis [2]: 2 is out of range [-2, 2) for a tensor of rank 2"},
        {2, {1, -1}, "axis [1, -1] names dimension 1 twice"},
        {1, {-3}, "out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_tensor *in[2] = {x, index_vec(TIDE_INT32, cases[i].n, cases[i].axes)};
        TH_ASSERT_FAILS("ReverseV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, cases[i].needle);
        tide_tensor_release(in[1]);
    }
    tide_tensor *in[2] = {x, th_i32(0, NULL, (int32_t[]){0})};
    TH_ASSERT_FAILS("ReverseV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, "axis must be a vector, got shape []");
    release_all((tide_tensor *[]){x, in[1]}, 2);
}

/* ---------------------------------------------------------------- MirrorPad */

/* The input coordinate padded coordinate i copies, the two modes written out. */
static int64_t mirror_ref(int64_t i, int64_t before, int64_t size, bool symmetric)
{
    int64_t j = i - before;
    while (j < 0 || j >= size) { /* reflect until inside (one reflection suffices for legal paddings) */
        if (j < 0)
            j = symmetric ? -1 - j : -j;
        else
            j = symmetric ? 2 * size - 1 - j : 2 * size - 2 - j;
    }
    return j;
}

static tide_attrs *mode_attrs(const char *mode)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_string(a, "mode", mode);
    return a;
}

/* Pads x by pads (rank rows of [before, after]) in mode; checks MirrorPad against the reference and
 * MirrorPadGrad (for numbers) against the scatter of a random gradient. */
static void check_mirror(tide_tensor *x, const int64_t *pads, bool symmetric, tide_dtype pdt)
{
    const tide_shape *s = tide_tensor_shape(x);
    tide_shape out = *s;
    for (int d = 0; d < s->rank; d++)
        out.dims[d] += pads[2 * d] + pads[2 * d + 1];
    int64_t n = tide_shape_num_elements(&out), *src = calloc((size_t)(n + 1), sizeof *src);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, at = 0, stride = 1;
        for (int d = out.rank - 1; d >= 0; d--) {
            int64_t c = rem % out.dims[d];
            rem /= out.dims[d];
            at += mirror_ref(c, pads[2 * d], s->dims[d], symmetric) * stride;
            stride *= s->dims[d];
        }
        src[i] = at;
    }
    double pv[2 * TIDE_MAX_RANK];
    for (int i = 0; i < 2 * s->rank; i++)
        pv[i] = (double)pads[i];
    tide_tensor *p = th_from_doubles(pdt, 2, TH_DIMS(s->rank, 2), pv, 0);
    tide_attrs *a = mode_attrs(symmetric ? "SYMMETRIC" : "REFLECT");
    tide_tensor *want = gather_ref(x, &out, src), *got = th_run1("MirrorPad", (tide_tensor *[]){x, p}, 2, a);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_dtype dt = tide_tensor_dtype(x);
    if (dt == TIDE_FLOAT32 || dt == TIDE_FLOAT64 || dt == TIDE_INT32 || dt == TIDE_INT64) {
        tide_tensor *g = seq(dt, out.rank, out.dims);
        int64_t m = tide_tensor_num_elements(x);
        double *sum = calloc((size_t)(m + 1), sizeof *sum);
        for (int64_t i = 0; i < n; i++)
            sum[src[i]] += tide_tensor_get_f64(g, i);
        tide_tensor *gwant = th_from_doubles(dt, s->rank, s->dims, sum, 0);
        tide_tensor *ggot = th_run1("MirrorPadGrad", (tide_tensor *[]){g, p}, 2, a);
        TH_ASSERT_CLOSE(ggot, gwant, 1e-6, 0);
        free(sum);
        release_all((tide_tensor *[]){g, gwant, ggot}, 3);
    }
    free(src);
    tide_attrs_free(a);
    release_all((tide_tensor *[]){p, want, got}, 3);
}

static void test_mirror_pad(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 2, TH_DIMS(3, 4));
        for (int sym = 0; sym < 2; sym++) {
            check_mirror(x, TH_DIMS(1, 2, 3, 0), sym, TIDE_INT32);
            check_mirror(x, TH_DIMS(2, 2 + sym, 0, 3 + sym), sym, TIDE_INT64);
            check_mirror(x, TH_DIMS(0, 0, 0, 0), sym, TIDE_INT32);
        }
        tide_tensor *y = seq(DTYPES[d], 3, TH_DIMS(2, 3, 2));
        check_mirror(y, TH_DIMS(1, 1, 2, 1, 0, 1), false, TIDE_INT32);
        check_mirror(y, TH_DIMS(2, 0, 3, 3, 2, 2), true, TIDE_INT32);
        release_all((tide_tensor *[]){x, y}, 2);
    }
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(300, 200));
    check_mirror(big, TH_DIMS(7, 9, 150, 199), false, TIDE_INT32);
    release_all(&big, 1);
}

/* TensorFlow's documented examples: [[1, 2, 3], [4, 5, 6]] padded by [[1, 1], [2, 2]]. */
static void test_mirror_pad_literal(void)
{
    tide_tensor *x = seq(TIDE_INT32, 2, TH_DIMS(2, 3)), *p = th_i32(2, TH_DIMS(2, 2), (int32_t[]){1, 1, 2, 2});
    tide_attrs *reflect = mode_attrs("REFLECT"), *symmetric = mode_attrs("SYMMETRIC");
    tide_tensor *r = th_run1("MirrorPad", (tide_tensor *[]){x, p}, 2, reflect);
    tide_tensor *s = th_run1("MirrorPad", (tide_tensor *[]){x, p}, 2, symmetric);
    tide_tensor *wr = th_i32(2, TH_DIMS(4, 7), (int32_t[]){6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1,
                                                             6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1});
    tide_tensor *ws = th_i32(2, TH_DIMS(4, 7), (int32_t[]){2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2,
                                                             5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5});
    TH_ASSERT_CLOSE(r, wr, 0, 0);
    TH_ASSERT_CLOSE(s, ws, 0, 0);
    tide_attrs_free(reflect);
    tide_attrs_free(symmetric);
    release_all((tide_tensor *[]){x, p, r, s, wr, ws}, 6);
}

static void test_mirror_pad_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_attrs *reflect = mode_attrs("REFLECT"), *symmetric = mode_attrs("SYMMETRIC"), *bad = mode_attrs("WRAP");
    tide_tensor *p2 = th_i32(2, TH_DIMS(2, 2), (int32_t[]){2, 0, 0, 0});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, p2}), 2, reflect, TIDE_INVALID_ARGUMENT,
                    "paddings [2, 0] of dimension 0 must be between 0 and the size - 1, 1 (REFLECT) for the "
                    "input [2, 3]");
    tide_tensor *p3 = th_i32(2, TH_DIMS(2, 2), (int32_t[]){0, 0, 0, 4});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, p3}), 2, symmetric, TIDE_INVALID_ARGUMENT,
                    "paddings [0, 4] of dimension 1 must be between 0 and the size 3 (SYMMETRIC)");
    tide_tensor *neg = th_i64(2, TH_DIMS(2, 2), (int64_t[]){0, -1, 0, 0});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, neg}), 2, symmetric, TIDE_INVALID_ARGUMENT,
                    "paddings [0, -1] of dimension 0");
    tide_tensor *rows = th_i32(2, TH_DIMS(1, 2), (int32_t[]){0, 0});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, rows}), 2, reflect, TIDE_INVALID_ARGUMENT,
                    "paddings has 1 rows but the input [2, 3] has rank 2");
    tide_tensor *vec = th_i32(1, TH_DIMS(4), (int32_t[]){0, 0, 0, 0});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, vec}), 2, reflect, TIDE_INVALID_ARGUMENT,
                    "paddings must be a [rank, 2] matrix, got shape [4]");
    tide_tensor *ok = th_i32(2, TH_DIMS(2, 2), (int32_t[]){0, 0, 1, 1});
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, ok}), 2, bad, TIDE_INVALID_ARGUMENT,
                    "mode must be 'REFLECT' or 'SYMMETRIC', got 'WRAP'");
    TH_ASSERT_FAILS("MirrorPad", ((tide_tensor *[]){x, ok}), 2, NULL, TIDE_INVALID_ARGUMENT, "mode");
    TH_ASSERT_FAILS("MirrorPadGrad", ((tide_tensor *[]){x, p3}), 2, symmetric, TIDE_INVALID_ARGUMENT,
                    "paddings [0, 4] of dimension 1 do not fit the padded input [2, 3]");
    tide_tensor *s = th_from_doubles(TIDE_STRING, 1, TH_DIMS(2), (double[]){1, 2}, 0);
    TH_ASSERT_FAILS("MirrorPadGrad", ((tide_tensor *[]){s, rows}), 2, reflect, TIDE_INVALID_ARGUMENT, "string");
    tide_attrs_free(reflect);
    tide_attrs_free(symmetric);
    tide_attrs_free(bad);
    release_all((tide_tensor *[]){x, p2, p3, neg, rows, vec, ok, s}, 8);
}

/* Shape inference: known paddings give the padded shape, unknown ones keep the rank. */
static void test_shape_inference(void)
{
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[?, 4])\n"
                                "p = Const(value=tensor(int32, [2, 2], [1, 2, 3, 0]), dtype=int32)\n"
                                "q = Placeholder(dtype=int32, shape=[2, 2])\n"
                                "a = Const(value=tensor(int32, [1], [-1]), dtype=int32)\n"
                                "m = MirrorPad(x, p, mode=\"REFLECT\")\n"
                                "u = MirrorPad(x, q, mode=\"SYMMETRIC\")\n"
                                "r = ReverseV2(x, a)\n"
                                "gp = Placeholder(dtype=float32, shape=[5, 7])\n"
                                "gr = MirrorPadGrad(gp, p, mode=\"SYMMETRIC\")\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "m", 0, 2, TH_DIMS(-1, 7));
    th_assert_output_shape(g, "u", 0, 2, TH_DIMS(-1, -1));
    th_assert_output_shape(g, "r", 0, 2, TH_DIMS(-1, 4));
    th_assert_output_shape(g, "gr", 0, 2, TH_DIMS(2, 4));
    tide_graph_free(g);
    const char *base = "x = Placeholder(dtype=float32, shape=[?, 4])\n"
                       "p = Const(value=tensor(int32, [2, 2], [1, 2, 3, 4]), dtype=int32)\n"
                       "a = Const(value=tensor(int32, [2], [1, -1]), dtype=int32)\n";
    th_assert_graph_fails(base, "m = MirrorPad(x, p, mode=\"REFLECT\")", "paddings [3, 4] of dimension 1");
    th_assert_graph_fails(base, "r = ReverseV2(x, a)", "names dimension 1 twice");
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_reverse),
        TH_TEST(test_reverse_errors),
        TH_TEST(test_mirror_pad),
        TH_TEST(test_mirror_pad_literal),
        TH_TEST(test_mirror_pad_errors),
        TH_TEST(test_shape_inference),
        TH_END,
    };
    return th_main("reverse", tests);
}
