/* test_topk.c — the ranking ops TopKV2, InTopK and InTopKV2. Expected values are computed here: a
 * selection loop picks each row's largest remaining entry (the lowest index among equals, nan above
 * numbers), and InTopK's answers are counted by hand; TensorFlow's documented tie rule (classes tied
 * at the boundary are all in) is pinned by a literal case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void release_all(tide_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

/* Is a ranked above b (values va, vb at indices ia, ib)? */
static bool above(double va, int64_t ia, double vb, int64_t ib)
{
    if (isnan(va) != isnan(vb))
        return isnan(va);
    if (!isnan(va) && va != vb)
        return va > vb;
    return ia < ib;
}

static void check_top_k(tide_dtype dt, int rank, const int64_t *dims, int64_t k, const double *v)
{
    tide_tensor *x = th_from_doubles(dt, rank, dims, v, 0), *kt = th_i32(0, NULL, (int32_t[]){(int32_t)k});
    int64_t n = dims[rank - 1], rows = tide_tensor_num_elements(x) / (n ? n : 1);
    double *wv = malloc((size_t)(rows * k + 1) * sizeof *wv), *wi = malloc((size_t)(rows * k + 1) * sizeof *wi);
    bool *taken = calloc((size_t)(n + 1), sizeof *taken);
    for (int64_t r = 0; r < rows; r++) {
        memset(taken, 0, (size_t)(n + 1) * sizeof *taken);
        for (int64_t c = 0; c < k; c++) {
            int64_t best = -1;
            for (int64_t i = 0; i < n; i++)
                if (!taken[i] && (best < 0 || above(tide_tensor_get_f64(x, r * n + i), i,
                                                    tide_tensor_get_f64(x, r * n + best), best)))
                    best = i;
            taken[best] = true;
            wv[r * k + c] = tide_tensor_get_f64(x, r * n + best);
            wi[r * k + c] = (double)best;
        }
    }
    int64_t od[8];
    memcpy(od, dims, (size_t)rank * sizeof *od);
    od[rank - 1] = k;
    tide_tensor *want_v = th_from_doubles(dt, rank, od, wv, 0), *want_i = th_from_doubles(TIDE_INT32, rank, od, wi, 0);
    tide_tensor *out[2] = {0};
    CU_ASSERT_EQUAL_FATAL(th_run("TopKV2", (tide_tensor *[]){x, kt}, 2, NULL, out, 2, NULL), TIDE_OK);
    TH_ASSERT_CLOSE(out[0], want_v, 0, 0);
    TH_ASSERT_CLOSE(out[1], want_i, 0, 0);
    free(wv);
    free(wi);
    free(taken);
    release_all((tide_tensor *[]){x, kt, want_v, want_i, out[0], out[1]}, 6);
}

static void test_top_k(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_INT8, TIDE_FLOAT16};
    double v[60];
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (int i = 0; i < 60; i++) /* few distinct values: many ties */
            v[i] = floor(th_rand(-5, 5));
        check_top_k(dts[d], 2, TH_DIMS(6, 10), 3, v);
        check_top_k(dts[d], 3, TH_DIMS(2, 3, 10), 10, v);
        check_top_k(dts[d], 1, TH_DIMS(10), 0, v);
        check_top_k(dts[d], 2, TH_DIMS(60, 1), 1, v);
    }
    /* nan ranks first; -inf, inf and signed zeros in order */
    double s[6] = {1, NAN, -INFINITY, INFINITY, -0.0, 2};
    check_top_k(TIDE_FLOAT64, 1, TH_DIMS(6), 6, s);
    /* int64 values a double cannot tell apart */
    tide_tensor *x = th_i64(1, TH_DIMS(3), (int64_t[]){(1LL << 60) + 1, (1LL << 60) + 3, (1LL << 60) + 2});
    tide_tensor *k = th_i32(0, NULL, (int32_t[]){2}), *out[2] = {0};
    CU_ASSERT_EQUAL_FATAL(th_run("TopKV2", (tide_tensor *[]){x, k}, 2, NULL, out, 2, NULL), TIDE_OK);
    tide_tensor *wi = th_i32(1, TH_DIMS(2), (int32_t[]){1, 2});
    TH_ASSERT_CLOSE(out[1], wi, 0, 0);
    release_all((tide_tensor *[]){x, k, out[0], out[1], wi}, 5);
    /* large rows, split over threads */
    double *big = malloc(200 * 500 * sizeof *big);
    for (int i = 0; i < 200 * 500; i++)
        big[i] = th_rand(-1, 1);
    check_top_k(TIDE_FLOAT32, 2, TH_DIMS(200, 500), 7, big);
    free(big);
}

static void test_top_k_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), NULL), *k4 = th_i32(0, NULL, (int32_t[]){4});
    tide_tensor *kn = th_i32(0, NULL, (int32_t[]){-1}), *kv = th_i32(1, TH_DIMS(1), (int32_t[]){1});
    tide_tensor *s = th_f32(0, NULL, (float[]){1}), *k1 = th_i32(0, NULL, (int32_t[]){1});
    tide_tensor *out[2];
    TH_ASSERT_FAILS("TopKV2", ((tide_tensor *[]){x, k4}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "input of shape [2, 3] has fewer than k = 4 entries in its last dimension");
    TH_ASSERT_FAILS("TopKV2", ((tide_tensor *[]){x, kn}), 2, NULL, TIDE_INVALID_ARGUMENT, "k must be >= 0, got -1");
    TH_ASSERT_FAILS("TopKV2", ((tide_tensor *[]){x, kv}), 2, NULL, TIDE_INVALID_ARGUMENT, "k must be a scalar");
    TH_ASSERT_FAILS("TopKV2", ((tide_tensor *[]){s, k1}), 2, NULL, TIDE_INVALID_ARGUMENT, "input must have rank >= 1");
    tide_tensor *b = th_tensor(TIDE_BOOL, 1, TH_DIMS(2), NULL);
    CU_ASSERT_NOT_EQUAL(th_run("TopKV2", (tide_tensor *[]){b, k1}, 2, NULL, out, 2, NULL), TIDE_OK);
    /* the kernel's own check, k known only at run time */
    tide_graph *g = th_graph_of("x = Placeholder(dtype=float32, shape=[2, 3])\n k = Placeholder(dtype=int32)\n"
                                "t = TopKV2(x, k)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_error *err = tide_error_new();
    tide_session *sess = tide_session_new(th_engine(), g, NULL, err);
    tide_output t = {tide_graph_node(g, "t"), 1};
    tide_feed feeds[2] = {{{tide_graph_node(g, "x"), 0}, x}, {{tide_graph_node(g, "k"), 0}, k4}};
    tide_tensor *got = NULL;
    CU_ASSERT_EQUAL(tide_session_run(sess, NULL, feeds, 2, &t, 1, &got, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "fewer than k = 4 entries"));
    tide_session_free(sess);
    tide_graph_free(g);
    tide_error_free(err);
    release_all((tide_tensor *[]){x, k4, kn, kv, s, k1, b}, 7);
}

/* ---------------------------------------------------------------- InTopK */

static void test_in_top_k(void)
{
    /* row 0: target 1 (0.8) is the largest; row 1: target 0 (0.3) has two above it; row 2: target 2
     * ties with class 0 at the boundary of k = 2 (both count as in); row 3: an out-of-range target;
     * row 4: a nan prediction for the target */
    float p[5 * 3] = {0.1f, 0.8f, 0.1f, 0.3f, 0.4f, 0.5f, 0.5f, 0.9f, 0.5f, 0.2f, 0.3f, 0.4f, NAN, 0.1f, 0.2f};
    tide_tensor *pred = th_f32(2, TH_DIMS(5, 3), p);
    const struct {
        int64_t k;
        bool want[5];
    } cases[] = {
        {1, {true, false, false, false, false}},
        {2, {true, false, true, false, false}},
        {3, {true, true, true, false, false}},
        {0, {false, false, false, false, false}},
    };
    for (int t64 = 0; t64 < 2; t64++) {
        tide_tensor *targets = t64 ? th_i64(1, TH_DIMS(5), (int64_t[]){1, 0, 2, 7, 0})
                                   : th_i32(1, TH_DIMS(5), (int32_t[]){1, 0, 2, -1, 0});
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            double w[5];
            for (int i = 0; i < 5; i++)
                w[i] = cases[c].want[i];
            tide_tensor *want = th_from_doubles(TIDE_BOOL, 1, TH_DIMS(5), w, 0);
            tide_attrs *a = tide_attrs_new();
            tide_attrs_set_int(a, "k", cases[c].k);
            tide_tensor *got = th_run1("InTopK", (tide_tensor *[]){pred, targets}, 2, a);
            TH_ASSERT_CLOSE(got, want, 0, 0);
            double kd = (double)cases[c].k;
            tide_tensor *kt = th_from_doubles(t64 ? TIDE_INT64 : TIDE_INT32, 0, NULL, &kd, 0);
            tide_tensor *got2 = th_run1("InTopKV2", (tide_tensor *[]){pred, targets, kt}, 3, NULL);
            TH_ASSERT_CLOSE(got2, want, 0, 0);
            release_all((tide_tensor *[]){want, got, kt, got2}, 4);
            tide_attrs_free(a);
        }
        tide_tensor_release(targets);
    }
    tide_tensor *short_t = th_i32(1, TH_DIMS(4), (int32_t[]){0, 0, 0, 0}), *k1 = th_i32(0, NULL, (int32_t[]){1});
    TH_ASSERT_FAILS("InTopKV2", ((tide_tensor *[]){pred, short_t, k1}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "predictions [5, 3] and targets [4] differ in the batch size");
    tide_tensor *p64 = th_f64(2, TH_DIMS(5, 3), NULL);
    TH_ASSERT_FAILS("InTopKV2", ((tide_tensor *[]){p64, short_t, k1}), 3, NULL, TIDE_INVALID_ARGUMENT, "float64");
    release_all((tide_tensor *[]){pred, short_t, k1, p64}, 4);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_top_k),
        TH_TEST(test_top_k_errors),
        TH_TEST(test_in_top_k),
        TH_END,
    };
    return th_main("topk", tests);
}
