/* test_nn.c — the neural-network ops: activations and their gradient ops, Softmax, LogSoftmax, the
 * two cross-entropy ops, BiasAdd, BiasAddGrad, L2Loss, Dropout, FusedBatchNorm(Grad), and the
 * gradient functions of engine/grads/nn_grad.c through tide_gradients.
 *
 * Expected values are computed here, independently of the kernels: the textbook formulas evaluated in
 * long double on the exact input values (softmax as exp(x) / sum(exp(x)) with no shift — long double
 * holds e^11000 — so the large-logit cases check the kernels' stabilisation against an unstabilised
 * reference), batch normalisation's gradient by central differences of a reference forward pass, and
 * Dropout's mask from RandomUniform's numbers under the same seeds. th_run also runs every op through
 * a graph session and checks it agrees exactly with the eager run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---------------------------------------------------------------- helpers */

static const tide_dtype FLOATS[] = {TIDE_FLOAT32, TIDE_FLOAT64};

static int64_t count(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

static tide_tensor *make(tide_dtype dt, int rank, const int64_t *dims, const double *v)
{
    return th_from_doubles(dt, rank, dims, v, 0);
}

/* A tensor of n values uniform in [lo, hi). */
static tide_tensor *rand_tensor(tide_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    int64_t n = count(rank, dims);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = th_rand(lo, hi);
    tide_tensor *t = make(dt, rank, dims, v);
    free(v);
    return t;
}

static double val(const tide_tensor *t, int64_t i) { return tide_tensor_get_f64(t, i); }

static void release_all(tide_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(t[i]);
}

/* Tolerances for results computed in dtype dt from exact inputs. */
static double rtol_of(tide_dtype dt) { return dt == TIDE_FLOAT32 ? 2e-6 : 1e-12; }
static double atol_of(tide_dtype dt) { return dt == TIDE_FLOAT32 ? 1e-6 : 1e-14; }

/* Asserts got equals want[] (shape rank/dims) within the dtype's tolerances times `slack`. */
static void expect_impl(const tide_tensor *got, tide_dtype dt, int rank, const int64_t *dims,
                        const double *want, double slack, const char *file, int line)
{
    tide_tensor *w = make(dt, rank, dims, want);
    th_assert_close_impl(got, w, rtol_of(dt) * slack, atol_of(dt) * slack, file, line);
    tide_tensor_release(w);
}
#define EXPECT(got, dt, rank, dims, want, slack) \
    expect_impl(got, dt, rank, dims, want, slack, __FILE__, __LINE__)

static tide_status run_op(const char *op, tide_tensor *const *in, int n, const tide_attrs *attrs,
                          tide_tensor **out, int num_out)
{
    tide_error *err = tide_error_new();
    tide_status st = th_run(op, in, n, attrs, out, num_out, err);
    if (st != TIDE_OK)
        fprintf(stderr, "%s: %s\n", op, tide_error_message(err));
    tide_error_free(err);
    return st;
}

/* ---------------------------------------------------------------- graph helpers */

/* Runs a graph given as text in a fresh session: feeds by node name, fetches "node" or "node:i". */
static tide_status run_text(const char *text, const char *const *feed_names, tide_tensor **feed_values,
                            int num_feeds, const char *const *fetch_names, int num_fetches,
                            tide_tensor **out, tide_error *err)
{
    tide_graph *g = th_graph_of(text);
    if (!g)
        return TIDE_INVALID_ARGUMENT;
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    tide_feed feeds[8];
    tide_output fetches[8];
    for (int i = 0; i < num_feeds; i++)
        feeds[i] = (tide_feed){{tide_graph_node(g, feed_names[i]), 0}, feed_values[i]};
    tide_status st = TIDE_OK;
    for (int i = 0; i < num_fetches && st == TIDE_OK; i++)
        st = tide_graph_output(g, fetch_names[i], &fetches[i], err);
    if (st == TIDE_OK)
        st = s ? tide_session_run(s, NULL, feeds, num_feeds, fetches, num_fetches, out, NULL, 0, NULL,
                                  err)
               : tide_error_code(err);
    tide_session_free(s);
    tide_graph_free(g);
    return st;
}

/* ---------------------------------------------------------------- activations */

static double ref_relu(double x) { return isnan(x) ? x : x > 0 ? x : 0; }
static double ref_relu6(double x) { return isnan(x) ? x : x < 0 ? 0 : x > 6 ? 6 : x; }
static double ref_elu(double x) { return x >= 0 ? x : (double)(expl(x) - 1); }
static double ref_softplus(double x) { return (double)logl(1 + expl(x)); }
/* Selu's constants as Klambauer et al. give them (and TensorFlow uses). */
#define SELU_SCALE_REF 1.0507009873554804934193349852946L
#define SELU_ALPHA_REF 1.6732632423543772848170429916717L
static double ref_selu(double x)
{
    return (double)(x > 0 ? SELU_SCALE_REF * x : SELU_SCALE_REF * SELU_ALPHA_REF * (expl(x) - 1));
}
static double ref_softsign(double x) { return x / (1 + fabs(x)); }
/* LeakyRelu with its default alpha 0.2, which TensorFlow stores as a float. */
static double ref_leaky_relu(double x) { return x > 0 ? x : x * (double)0.2f; }

typedef double (*ref_fn)(double);

static void check_unary(const char *op, ref_fn ref, tide_dtype dt, const double *xv, int64_t n)
{
    tide_tensor *x = make(dt, 1, TH_DIMS(n), xv);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++)
        want[i] = ref(val(x, i));
    tide_tensor *y = th_run1(op, &x, 1, NULL);
    EXPECT(y, dt, 1, TH_DIMS(n), want, 1);
    free(want);
    tide_tensor_release(x);
    tide_tensor_release(y);
}

static void test_activations(void)
{
    static const struct {
        const char *op;
        ref_fn ref;
    } ops[] = {{"Relu", ref_relu},         {"Relu6", ref_relu6},       {"Elu", ref_elu},
               {"Softplus", ref_softplus}, {"Selu", ref_selu},         {"Softsign", ref_softsign},
               {"LeakyRelu", ref_leaky_relu}};
    enum { N = 64 };
    double xv[N] = {0, -0.0, 6, 6.5, -1e-30, 1e-30, 5.999, -20, 20, 80, -80, 1, -1};
    for (int i = 13; i < N; i++)
        xv[i] = th_rand(-9, 9);
    for (size_t d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            check_unary(ops[k].op, ops[k].ref, FLOATS[d], xv, N);
    /* NaN passes through Relu and Relu6; large inputs of Softplus do not overflow */
    double special[] = {NAN, 500, -500};
    for (size_t d = 0; d < 2; d++) {
        tide_tensor *x = make(FLOATS[d], 1, TH_DIMS(3), special);
        tide_tensor *r = th_run1("Relu", &x, 1, NULL), *r6 = th_run1("Relu6", &x, 1, NULL);
        tide_tensor *sp = th_run1("Softplus", &x, 1, NULL);
        CU_ASSERT(isnan(val(r, 0)) && isnan(val(r6, 0)));
        CU_ASSERT_EQUAL(val(r, 1), 500);
        CU_ASSERT_EQUAL(val(r6, 1), 6);
        CU_ASSERT_EQUAL(val(sp, 1), 500);
        CU_ASSERT(val(sp, 2) >= 0 && val(sp, 2) < 1e-200);
        tide_tensor *all[] = {x, r, r6, sp};
        release_all(all, 4);
    }
    /* LeakyRelu's alpha attr; Softsign at the infinities is inf / inf: nan, as TensorFlow's */
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_float(a, "alpha", 0.01);
    double lv[] = {-3, 2, -0.5, 0, INFINITY, -INFINITY};
    for (size_t d = 0; d < 2; d++) {
        tide_tensor *x = make(FLOATS[d], 1, TH_DIMS(6), lv), *y = th_run1("LeakyRelu", &x, 1, a);
        double w[6];
        for (int i = 0; i < 6; i++)
            w[i] = lv[i] > 0 ? lv[i] : lv[i] * (double)0.01f;
        EXPECT(y, FLOATS[d], 1, TH_DIMS(6), w, 1);
        tide_tensor *ss = th_run1("Softsign", &x, 1, NULL);
        CU_ASSERT(isnan(val(ss, 4)) && isnan(val(ss, 5)) && val(ss, 3) == 0 && fabs(val(ss, 1) - 2.0 / 3) < 1e-7);
        tide_tensor *all[] = {x, y, ss};
        release_all(all, 3);
    }
    tide_attrs_free(a);
}

/* Large tensors go through parallel_for: the same values as the reference everywhere. */
static void test_activations_large(void)
{
    enum { N = 300001 };
    double *xv = malloc(N * sizeof *xv);
    for (int i = 0; i < N; i++)
        xv[i] = th_rand(-8, 8);
    check_unary("Relu", ref_relu, TIDE_FLOAT32, xv, N);
    check_unary("Elu", ref_elu, TIDE_FLOAT32, xv, N);
    check_unary("Softplus", ref_softplus, TIDE_FLOAT64, xv, 20000);
    check_unary("Selu", ref_selu, TIDE_FLOAT64, xv, N);
    check_unary("LeakyRelu", ref_leaky_relu, TIDE_FLOAT32, xv, N);
    free(xv);
}

typedef double (*ref2_fn)(double a, double b);

static double ref_relu_grad(double g, double f) { return f > 0 ? g : 0; }
static double ref_relu6_grad(double g, double f) { return f > 0 && f < 6 ? g : 0; }
static double ref_elu_grad(double g, double out) { return out < 0 ? g * (out + 1) : g; }
static double ref_softplus_grad(double g, double f) { return (double)(g / (1 + expl(-f))); }
static double ref_sigmoid_grad(double y, double dy) { return dy * y * (1 - y); }
static double ref_tanh_grad(double y, double dy) { return dy * (1 - y * y); }
static double ref_selu_grad(double g, double out)
{
    return (double)(out > 0 ? g * SELU_SCALE_REF : g * (out + SELU_SCALE_REF * SELU_ALPHA_REF));
}
static double ref_softsign_grad(double g, double f) { return g / ((1 + fabs(f)) * (1 + fabs(f))); }
static double ref_leaky_relu_grad(double g, double f) { return f > 0 ? g : g * (double)0.2f; }

static void test_activation_grads(void)
{
    static const struct {
        const char *op;
        ref2_fn ref;
        double lo, hi; /* range of the second input (features) or the first (y) */
    } ops[] = {
        {"ReluGrad", ref_relu_grad, -3, 3},       {"Relu6Grad", ref_relu6_grad, -2, 8},
        {"EluGrad", ref_elu_grad, -1, 3},         {"SoftplusGrad", ref_softplus_grad, -30, 30},
        {"SigmoidGrad", ref_sigmoid_grad, 0, 1},  {"TanhGrad", ref_tanh_grad, -1, 1},
        {"SeluGrad", ref_selu_grad, -1.7, 3},     {"SoftsignGrad", ref_softsign_grad, -30, 30},
        {"LeakyReluGrad", ref_leaky_relu_grad, -3, 3},
    };
    enum { N = 40 };
    for (size_t d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            bool y_first = strcmp(ops[k].op, "SigmoidGrad") == 0 || strcmp(ops[k].op, "TanhGrad") == 0;
            double a[N], b[N], want[N];
            for (int i = 0; i < N; i++) {
                double ranged = th_rand(ops[k].lo, ops[k].hi), other = th_rand(-2, 2);
                a[i] = y_first ? ranged : other;
                b[i] = y_first ? other : ranged;
            }
            if (!y_first) { /* the boundaries: gradient 0 at features 0 (and 6 for Relu6) */
                b[0] = 0;
                b[1] = 6;
                b[2] = -0.0;
            }
            tide_tensor *in[2] = {make(FLOATS[d], 2, TH_DIMS(5, 8), a), make(FLOATS[d], 2, TH_DIMS(5, 8), b)};
            for (int i = 0; i < N; i++)
                want[i] = ops[k].ref(val(in[0], i), val(in[1], i));
            tide_tensor *out = th_run1(ops[k].op, in, 2, NULL);
            EXPECT(out, FLOATS[d], 2, TH_DIMS(5, 8), want, 1);
            if (strncmp(ops[k].op, "Relu", 4) == 0) { /* the kink itself gets 0 */
                CU_ASSERT_EQUAL(val(out, 0), 0);
                CU_ASSERT_EQUAL(val(out, 2), 0);
            }
            release_all(in, 2);
            tide_tensor_release(out);
        }
}

static void test_activation_errors(void)
{
    tide_tensor *in[2] = {th_f32(2, TH_DIMS(2, 3), NULL), th_f32(2, TH_DIMS(3, 2), NULL)};
    TH_ASSERT_FAILS("ReluGrad", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "gradients and features must have the same shape: gradients is [2, 3], "
                    "features is [3, 2]");
    TH_ASSERT_FAILS("EluGrad", in, 2, NULL, TIDE_INVALID_ARGUMENT, "outputs is [3, 2]");
    TH_ASSERT_FAILS("TanhGrad", in, 2, NULL, TIDE_INVALID_ARGUMENT, "y is [2, 3], dy is [3, 2]");
    release_all(in, 2);
    tide_tensor *i = th_i32(1, TH_DIMS(2), (int32_t[]){1, -1});
    TH_ASSERT_FAILS("Relu", &i, 1, NULL, TIDE_INVALID_ARGUMENT, "int32");
    tide_tensor_release(i);
    /* the same check at run time, when the graph could not know the shapes */
    const char *text = "g = Placeholder(dtype=float64)\n f = Placeholder(dtype=float64)\n"
                       "r = Relu6Grad(g, f)\n";
    tide_tensor *feeds[2] = {th_f64(1, TH_DIMS(4), NULL), th_f64(1, TH_DIMS(5), NULL)}, *out = NULL;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(run_text(text, (const char *[]){"g", "f"}, feeds, 2, (const char *[]){"r"}, 1,
                             &out, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "gradients is [4], features is [5]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'r'"));
    tide_error_free(err);
    release_all(feeds, 2);
}

/* ---------------------------------------------------------------- softmax family */

/* Reference softmax and log-softmax of rows of c values, unshifted, in long double. */
static void ref_softmax_rows(const tide_tensor *x, int64_t rows, int64_t c, double *sm, double *lsm)
{
    for (int64_t r = 0; r < rows; r++) {
        long double sum = 0;
        for (int64_t k = 0; k < c; k++)
            sum += expl((long double)val(x, r * c + k));
        for (int64_t k = 0; k < c; k++) {
            long double e = expl((long double)val(x, r * c + k));
            if (sm)
                sm[r * c + k] = (double)(e / sum);
            if (lsm)
                lsm[r * c + k] = (double)logl(e / sum);
        }
    }
}

static void check_softmax(tide_dtype dt, int rank, const int64_t *dims, double lo, double hi,
                          double base)
{
    int64_t n = count(rank, dims), c = dims[rank - 1], rows = c ? n / c : 0;
    double *v = malloc((size_t)(n + 1) * sizeof *v), *sm = malloc((size_t)(n + 1) * sizeof *sm);
    double *lsm = malloc((size_t)(n + 1) * sizeof *lsm);
    for (int64_t i = 0; i < n; i++)
        v[i] = base + th_rand(lo, hi);
    tide_tensor *x = make(dt, rank, dims, v);
    ref_softmax_rows(x, rows, c, sm, lsm);
    tide_tensor *y = th_run1("Softmax", &x, 1, NULL), *ly = th_run1("LogSoftmax", &x, 1, NULL);
    EXPECT(y, dt, rank, dims, sm, 4);
    /* log-softmax: absolute error relative to the largest |logit| involved */
    tide_tensor *want = make(dt, rank, dims, lsm);
    double scale = fabs(base) + fmax(fabs(lo), fabs(hi)) + 1;
    TH_ASSERT_CLOSE(ly, want, rtol_of(dt) * 4, atol_of(dt) * 4 * scale);
    tide_tensor *all[] = {x, y, ly, want};
    release_all(all, 4);
    free(v);
    free(sm);
    free(lsm);
}

static void test_softmax(void)
{
    for (size_t d = 0; d < 2; d++) {
        check_softmax(FLOATS[d], 1, TH_DIMS(7), -3, 3, 0);
        check_softmax(FLOATS[d], 2, TH_DIMS(5, 10), -5, 5, 0);
        check_softmax(FLOATS[d], 3, TH_DIMS(2, 3, 4), -5, 5, 0);
        check_softmax(FLOATS[d], 2, TH_DIMS(4, 6), -20, 20, 1000);  /* exp would overflow */
        check_softmax(FLOATS[d], 2, TH_DIMS(4, 6), -20, 20, -1000); /* and underflow */
        check_softmax(FLOATS[d], 2, TH_DIMS(6, 19), -400, 400, 0);  /* spread beyond exp's range */
        check_softmax(FLOATS[d], 2, TH_DIMS(3, 1), -5, 5, 0);       /* one class: 1 and 0 */
        check_softmax(FLOATS[d], 2, TH_DIMS(700, 33), -4, 4, 0);    /* rows in parallel */
    }
    /* empty batch, no classes */
    for (size_t d = 0; d < 2; d++) {
        tide_tensor *e1 = make(FLOATS[d], 2, TH_DIMS(0, 5), NULL), *e2 = make(FLOATS[d], 2, TH_DIMS(3, 0), NULL);
        tide_tensor *o1 = th_run1("Softmax", &e1, 1, NULL), *o2 = th_run1("LogSoftmax", &e2, 1, NULL);
        TH_ASSERT_SHAPE(o1, 2, TH_DIMS(0, 5));
        TH_ASSERT_SHAPE(o2, 2, TH_DIMS(3, 0));
        tide_tensor *all[] = {e1, e2, o1, o2};
        release_all(all, 4);
    }
    /* a NaN spoils its row only; a scalar has no classes */
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), (float[]){1, NAN, 2, 1, 2, 3});
    tide_tensor *y = th_run1("Softmax", &x, 1, NULL);
    CU_ASSERT(isnan(val(y, 0)) && isnan(val(y, 1)) && isnan(val(y, 2)));
    CU_ASSERT(fabs(val(y, 3) + val(y, 4) + val(y, 5) - 1) < 1e-6);
    tide_tensor *s = th_f32(0, NULL, (float[]){1});
    TH_ASSERT_FAILS("Softmax", &s, 1, NULL, TIDE_INVALID_ARGUMENT, "logits must have rank >= 1");
    TH_ASSERT_FAILS("LogSoftmax", &s, 1, NULL, TIDE_INVALID_ARGUMENT, "got a scalar");
    tide_tensor *all[] = {x, y, s};
    release_all(all, 3);
}

/* Reference cross-entropy: loss[r] = -sum(l * log(softmax)), backprop = softmax - l. */
static void ref_xent(const tide_tensor *f, const double *labels, int64_t rows, int64_t c,
                     double *loss, double *backprop)
{
    double *lsm = malloc((size_t)(rows * c + 1) * sizeof *lsm);
    ref_softmax_rows(f, rows, c, backprop, lsm);
    for (int64_t r = 0; r < rows; r++) {
        long double sum = 0;
        for (int64_t k = 0; k < c; k++) {
            sum -= (long double)labels[r * c + k] * lsm[r * c + k];
            backprop[r * c + k] -= labels[r * c + k];
        }
        loss[r] = (double)sum;
    }
    free(lsm);
}

static void check_xent(tide_dtype dt, int64_t rows, int64_t c, double base, bool sparse,
                       tide_dtype label_dt)
{
    int64_t n = rows * c;
    double *fv = malloc((size_t)(n + 1) * sizeof *fv), *lv = calloc((size_t)(n + 1), sizeof *lv);
    double *loss = malloc((size_t)(rows + 1) * sizeof *loss), *bp = malloc((size_t)(n + 1) * sizeof *bp);
    double *idx = malloc((size_t)(rows + 1) * sizeof *idx);
    for (int64_t i = 0; i < n; i++)
        fv[i] = base + th_rand(-6, 6);
    for (int64_t r = 0; r < rows; r++) {
        idx[r] = floor(th_rand(0, (double)c));
        double total = 0;
        for (int64_t k = 0; k < c; k++)
            total += lv[r * c + k] = sparse ? (k == (int64_t)idx[r]) : th_rand(0, 1);
        for (int64_t k = 0; k < c && !sparse; k++)
            lv[r * c + k] /= total;
    }
    tide_tensor *f = make(dt, 2, TH_DIMS(rows, c), fv);
    tide_tensor *l = sparse ? make(label_dt, 1, TH_DIMS(rows), idx) : make(dt, 2, TH_DIMS(rows, c), lv);
    if (!sparse) /* the labels as rounded to dt */
        for (int64_t i = 0; i < n; i++)
            lv[i] = val(l, i);
    ref_xent(f, lv, rows, c, loss, bp);
    tide_tensor *in[2] = {f, l}, *out[2] = {NULL, NULL};
    CU_ASSERT_EQUAL(run_op(sparse ? "SparseSoftmaxCrossEntropyWithLogits" : "SoftmaxCrossEntropyWithLogits",
                           in, 2, NULL, out, 2), TIDE_OK);
    tide_tensor *want_loss = make(dt, 1, TH_DIMS(rows), loss);
    TH_ASSERT_CLOSE(out[0], want_loss, rtol_of(dt) * 8, atol_of(dt) * 8 * (fabs(base) + 10));
    EXPECT(out[1], dt, 2, TH_DIMS(rows, c), bp, 4);
    tide_tensor *all[] = {f, l, out[0], out[1], want_loss};
    release_all(all, 5);
    free(fv);
    free(lv);
    free(loss);
    free(bp);
    free(idx);
}

static void test_xent(void)
{
    for (size_t d = 0; d < 2; d++) {
        check_xent(FLOATS[d], 6, 10, 0, false, TIDE_INVALID_DTYPE);
        check_xent(FLOATS[d], 4, 7, 5000, false, TIDE_INVALID_DTYPE);  /* huge logits */
        check_xent(FLOATS[d], 4, 7, -5000, false, TIDE_INVALID_DTYPE);
        check_xent(FLOATS[d], 500, 40, 0, false, TIDE_INVALID_DTYPE);  /* rows in parallel */
        check_xent(FLOATS[d], 6, 10, 0, true, TIDE_INT32);
        check_xent(FLOATS[d], 6, 10, 0, true, TIDE_INT64);
        check_xent(FLOATS[d], 5, 3, 3000, true, TIDE_INT64);
        check_xent(FLOATS[d], 500, 40, 0, true, TIDE_INT32);
        check_xent(FLOATS[d], 3, 1, 0, true, TIDE_INT32);               /* one class: loss 0 */
    }
    /* a batch of 0 rows gives empty outputs */
    tide_tensor *in[2] = {th_f32(2, TH_DIMS(0, 4), NULL), th_f32(2, TH_DIMS(0, 4), NULL)}, *out[2];
    CU_ASSERT_EQUAL(run_op("SoftmaxCrossEntropyWithLogits", in, 2, NULL, out, 2), TIDE_OK);
    TH_ASSERT_SHAPE(out[0], 1, TH_DIMS(0));
    TH_ASSERT_SHAPE(out[1], 2, TH_DIMS(0, 4));
    release_all(out, 2);
    tide_tensor_release(in[1]);
    in[1] = th_i64(1, TH_DIMS(0), NULL);
    CU_ASSERT_EQUAL(run_op("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, out, 2), TIDE_OK);
    TH_ASSERT_SHAPE(out[0], 1, TH_DIMS(0));
    TH_ASSERT_SHAPE(out[1], 2, TH_DIMS(0, 4));
    release_all(out, 2);
    release_all(in, 2);
}

static void test_xent_errors(void)
{
    float fv[12] = {0};
    tide_tensor *f = th_f32(2, TH_DIMS(3, 4), fv);
    tide_tensor *bad[] = {th_i32(1, TH_DIMS(3), (int32_t[]){0, 4, 1}),
                          th_i64(1, TH_DIMS(3), (int64_t[]){0, 1, -1}),
                          th_i64(1, TH_DIMS(3), (int64_t[]){3, 1, 5000000000LL})};
    const char *needles[] = {"label 4 of row 1 is outside [0, 4) (the classes of features [3, 4])",
                             "label -1 of row 2 is outside [0, 4)", "label 5000000000 of row 2"};
    for (int i = 0; i < 3; i++) {
        tide_tensor *in[2] = {f, bad[i]};
        TH_ASSERT_FAILS("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                        needles[i]);
    }
    release_all(bad, 3);
    tide_tensor *wrong[] = {th_f32(2, TH_DIMS(3, 5), NULL), th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}),
                            th_f32(1, TH_DIMS(4), NULL), th_f32(2, TH_DIMS(2, 0), NULL),
                            th_i32(1, TH_DIMS(2), (int32_t[]){0, 0})};
    tide_tensor *dense[2] = {f, wrong[0]}, *sparse[2] = {f, wrong[1]}, *vec[2] = {wrong[2], wrong[2]};
    tide_tensor *empty[2] = {wrong[3], wrong[3]}, *empty_sparse[2] = {wrong[3], wrong[4]};
    TH_ASSERT_FAILS("SoftmaxCrossEntropyWithLogits", dense, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "features and labels must have the same shape: features is [3, 4], labels is [3, 5]");
    TH_ASSERT_FAILS("SparseSoftmaxCrossEntropyWithLogits", sparse, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "labels [2] must hold one class index per row of features [3, 4]");
    TH_ASSERT_FAILS("SoftmaxCrossEntropyWithLogits", vec, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "features must be a matrix [batch, classes], got shape [4]");
    TH_ASSERT_FAILS("SoftmaxCrossEntropyWithLogits", empty, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "features [2, 0] have no classes");
    TH_ASSERT_FAILS("SparseSoftmaxCrossEntropyWithLogits", empty_sparse, 2, NULL,
                    TIDE_INVALID_ARGUMENT, "have no classes");
    release_all(wrong, 5);
    /* at run time in a graph, where the shapes were unknown */
    const char *text = "f = Placeholder(dtype=float32)\n l = Placeholder(dtype=int32)\n"
                       "x = SparseSoftmaxCrossEntropyWithLogits(f, l)\n";
    tide_tensor *feeds[2] = {f, th_i32(1, TH_DIMS(3), (int32_t[]){2, 2, 9})}, *out[2] = {NULL, NULL};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(run_text(text, (const char *[]){"f", "l"}, feeds, 2, (const char *[]){"x", "x:1"},
                             2, out, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "label 9 of row 2 is outside [0, 4)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'x'"));
    tide_error_free(err);
    release_all(feeds, 2);
}

/* ---------------------------------------------------------------- BiasAdd, BiasAddGrad, L2Loss */

static void check_bias_add(tide_dtype dt, int rank, const int64_t *dims)
{
    int64_t n = count(rank, dims), c = dims[rank - 1];
    tide_tensor *in[2] = {rand_tensor(dt, rank, dims, -5, 5), rand_tensor(dt, 1, &c, -5, 5)};
    double *want = malloc((size_t)(n + 1) * sizeof *want);
    for (int64_t i = 0; i < n; i++)
        want[i] = val(in[0], i) + val(in[1], i % c);
    tide_tensor *out = th_run1("BiasAdd", in, 2, NULL);
    EXPECT(out, dt, rank, dims, want, 1);
    /* BiasAddGrad of the same tensor: sums over all but the last dimension */
    double *sums = calloc((size_t)(c + 1), sizeof *sums);
    long double *acc = calloc((size_t)(c + 1), sizeof *acc);
    for (int64_t i = 0; i < n; i++)
        acc[i % c] += val(in[0], i);
    for (int64_t k = 0; k < c; k++)
        sums[k] = (double)acc[k];
    tide_tensor *g = th_run1("BiasAddGrad", in, 1, NULL);
    tide_tensor *wg = make(dt, 1, &c, sums);
    TH_ASSERT_CLOSE(g, wg, rtol_of(dt), atol_of(dt) * 5 * sqrt((double)(n / (c ? c : 1)) + 1));
    tide_tensor *all[] = {in[0], in[1], out, g, wg};
    release_all(all, 5);
    free(want);
    free(sums);
    free(acc);
}

static void test_bias_add(void)
{
    for (size_t d = 0; d < 2; d++) {
        check_bias_add(FLOATS[d], 2, TH_DIMS(4, 3));
        check_bias_add(FLOATS[d], 3, TH_DIMS(2, 3, 5));
        check_bias_add(FLOATS[d], 4, TH_DIMS(2, 3, 4, 6));
        check_bias_add(FLOATS[d], 2, TH_DIMS(1, 1));
        check_bias_add(FLOATS[d], 2, TH_DIMS(0, 3));         /* empty batch: sums are 0 */
        check_bias_add(FLOATS[d], 2, TH_DIMS(3000, 37));     /* sums by chunks of rows, parallel */
        check_bias_add(FLOATS[d], 2, TH_DIMS(70000, 1));
        check_bias_add(FLOATS[d], 2, TH_DIMS(1400, 1500));   /* rows per chunk raised: <= 64 chunks */
        check_bias_add(FLOATS[d], 2, TH_DIMS(3, 50000));     /* wide rows: sums by blocks of columns */
    }
    tide_tensor *v = th_f32(2, TH_DIMS(2, 5), NULL), *b4 = th_f32(1, TH_DIMS(4), NULL);
    tide_tensor *v1 = th_f32(1, TH_DIMS(5), NULL), *b2 = th_f32(2, TH_DIMS(1, 5), NULL);
    TH_ASSERT_FAILS("BiasAdd", ((tide_tensor *[]){v, b4}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "bias [4] must have one element per channel, the last dimension of value [2, 5]");
    TH_ASSERT_FAILS("BiasAdd", ((tide_tensor *[]){v1, v1}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "value must have rank >= 2 ([..., channels]), got shape [5]");
    TH_ASSERT_FAILS("BiasAdd", ((tide_tensor *[]){v, b2}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "bias must be a vector [channels], got shape [1, 5]");
    TH_ASSERT_FAILS("BiasAddGrad", &v1, 1, NULL, TIDE_INVALID_ARGUMENT, "got shape [5]");
    tide_attrs *nchw = tide_attrs_new();
    tide_attrs_set_string(nchw, "data_format", "NCHW");
    TH_ASSERT_FAILS("BiasAdd", ((tide_tensor *[]){v, v1}), 2, nchw, TIDE_INVALID_ARGUMENT,
                    "data_format 'NCHW' is not supported: only 'NHWC' (channels last)");
    TH_ASSERT_FAILS("BiasAddGrad", &v, 1, nchw, TIDE_INVALID_ARGUMENT, "data_format 'NCHW'");
    tide_attrs_free(nchw);
    tide_tensor *all[] = {v, b4, v1, b2};
    release_all(all, 4);
}

static void test_l2_loss(void)
{
    static const int64_t sizes[] = {0, 1, 7, 1000, 250001};
    for (size_t d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int64_t n = sizes[s];
            tide_tensor *t = rand_tensor(FLOATS[d], 1, &n, -3, 3);
            long double sum = 0;
            for (int64_t i = 0; i < n; i++)
                sum += (long double)val(t, i) * val(t, i);
            double want = (double)(sum / 2);
            tide_tensor *out = th_run1("L2Loss", &t, 1, NULL);
            EXPECT(out, FLOATS[d], 0, NULL, &want, 1);
            tide_tensor_release(t);
            tide_tensor_release(out);
        }
    tide_tensor *t = th_f64(3, TH_DIMS(2, 1, 2), (double[]){1, -2, 3, 0.5});
    tide_tensor *out = th_run1("L2Loss", &t, 1, NULL);
    EXPECT(out, TIDE_FLOAT64, 0, NULL, ((double[]){7.125}), 1);
    tide_tensor_release(t);
    tide_tensor_release(out);
}

/* ---------------------------------------------------------------- Dropout */

static tide_attrs *seeds(int64_t seed, int64_t seed2)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "seed", seed);
    tide_attrs_set_int(a, "seed2", seed2);
    return a;
}

/* The uniform numbers RandomUniform draws with these seeds for n elements of dt. */
static tide_tensor *uniforms(tide_dtype dt, int64_t n, tide_attrs *a)
{
    tide_attrs *u = tide_attrs_clone(a);
    tide_attrs_set_type(u, "dtype", dt);
    tide_tensor *shape = th_i32(1, TH_DIMS(1), (int32_t[]){(int32_t)n});
    tide_tensor *out = th_run1("RandomUniform", &shape, 1, u);
    tide_attrs_free(u);
    tide_tensor_release(shape);
    return out;
}

static void check_dropout(tide_dtype dt, int64_t n, double rate)
{
    tide_attrs *a = seeds(7, 3);
    tide_tensor *in[2] = {rand_tensor(dt, 1, &n, -4, 4), make(dt, 0, NULL, &rate)}, *out[2] = {0};
    CU_ASSERT_EQUAL_FATAL(run_op("Dropout", in, 2, a, out, 2), TIDE_OK);
    tide_tensor *u = uniforms(dt, n, a);
    double r = val(in[1], 0), *mask = malloc((size_t)(n + 1) * sizeof *mask);
    double *y = malloc((size_t)(n + 1) * sizeof *y);
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; i++) {
        mask[i] = val(u, i) < r ? 0 : 1 / (1 - r);
        y[i] = val(in[0], i) * mask[i];
        dropped += mask[i] == 0;
    }
    EXPECT(out[1], dt, 1, &n, mask, 1);
    EXPECT(out[0], dt, 1, &n, y, 2);
    if (n >= 10000) /* the fraction dropped is rate, within 5 standard deviations */
        CU_ASSERT(fabs((double)dropped / (double)n - r) < 5 * sqrt(r * (1 - r) / (double)n) + 1e-12);
    tide_tensor *all[] = {in[0], in[1], out[0], out[1], u};
    release_all(all, 5);
    tide_attrs_free(a);
    free(mask);
    free(y);
}

static void test_dropout(void)
{
    for (size_t d = 0; d < 2; d++) {
        check_dropout(FLOATS[d], 1, 0.5);
        check_dropout(FLOATS[d], 13, 0.3);       /* a partial last block */
        check_dropout(FLOATS[d], 0, 0.3);
        check_dropout(FLOATS[d], 100003, 0.25);  /* blocks in parallel */
        check_dropout(FLOATS[d], 20000, 0.9);
        check_dropout(FLOATS[d], 1000, 0);       /* nothing dropped: mask 1, y = x */
    }
    /* rate outside [0, 1), or not a scalar */
    tide_tensor *x = th_f32(1, TH_DIMS(4), NULL);
    static const float bad_rates[] = {1, -0.25f, NAN, 7};
    for (int i = 0; i < 4; i++) {
        tide_tensor *rate = th_f32(0, NULL, &bad_rates[i]);
        TH_ASSERT_FAILS("Dropout", ((tide_tensor *[]){x, rate}), 2, NULL, TIDE_INVALID_ARGUMENT,
                        "rate must be in [0, 1) (the probability of dropping an element), got");
        tide_tensor_release(rate);
    }
    tide_tensor *vec = th_f32(1, TH_DIMS(2), (float[]){0.1f, 0.2f});
    TH_ASSERT_FAILS("Dropout", ((tide_tensor *[]){x, vec}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "rate must be a scalar, got shape [2]");
    tide_tensor_release(vec);
    tide_tensor_release(x);
    th_assert_graph_fails("x = Placeholder(dtype=float32)\n"
                       "r = Const(value=tensor(float32, [], [1.5]), dtype=float32)\n",
                       "d = Dropout(x, r)", "got 1.5");
}

/* A stateful op: each run of one node draws new numbers; a graph seed makes runs repeatable. */
static void test_dropout_runs(void)
{
    const char *text = "x = Const(value=tensor(float32, [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]), dtype=float32)\n"
                       "r = Const(value=tensor(float32, [], [0.5]), dtype=float32)\n"
                       "d = Dropout(x, r)\n";
    for (int seeded = 0; seeded < 2; seeded++) {
        tide_graph *g = th_graph_of(text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        if (seeded)
            tide_graph_set_seed(g, 42);
        tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
        tide_output mask = {tide_graph_node(g, "d"), 1};
        tide_tensor *runs[6];
        for (int i = 0; i < 6; i++)
            CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &mask, 1, &runs[i], NULL, 0, NULL, NULL),
                            TIDE_OK);
        bool all_same = true;
        for (int i = 1; i < 6; i++)
            all_same = all_same && tide_tensor_equal(runs[0], runs[i], false);
        CU_ASSERT_FALSE(all_same); /* 6 runs of 8 fair coins: equal with probability 2^-40 */
        for (int i = 0; i < 8; i++)
            CU_ASSERT(val(runs[0], i) == 0 || val(runs[0], i) == 2);
        tide_session_free(s);
        if (seeded) { /* a new session over the graph repeats the first run */
            tide_session *again = tide_session_new(th_engine(), g, NULL, NULL);
            tide_tensor *first = NULL;
            CU_ASSERT_EQUAL(tide_session_run(again, NULL, NULL, 0, &mask, 1, &first, NULL, 0, NULL, NULL),
                            TIDE_OK);
            CU_ASSERT(first && tide_tensor_equal(first, runs[0], false));
            tide_tensor_release(first);
            tide_session_free(again);
        }
        release_all(runs, 6);
        tide_graph_free(g);
    }
}

/* ---------------------------------------------------------------- FusedBatchNorm */

/* The reference forward pass in long double over [rows, c]: y, and the statistics used. */
typedef struct bn_ref {
    int64_t rows, c;
    bool training;
    double eps;
} bn_ref;

static void ref_batch_norm(const bn_ref *p, const long double *x, const long double *scale,
                           const long double *offset, const long double *mean_in,
                           const long double *var_in, long double *y, long double *mean,
                           long double *var)
{
    for (int64_t k = 0; k < p->c; k++) {
        long double m = 0, v = 0;
        if (p->training) {
            for (int64_t r = 0; r < p->rows; r++)
                m += x[r * p->c + k];
            m /= p->rows;
            for (int64_t r = 0; r < p->rows; r++)
                v += (x[r * p->c + k] - m) * (x[r * p->c + k] - m);
            v /= p->rows;
        } else {
            m = mean_in[k];
            v = var_in[k];
        }
        for (int64_t r = 0; r < p->rows; r++)
            y[r * p->c + k] = (x[r * p->c + k] - m) / sqrtl(v + p->eps) * scale[k] + offset[k];
        if (mean)
            mean[k] = m;
        if (var)
            var[k] = v;
    }
}

static long double *to_long(const tide_tensor *t)
{
    int64_t n = tide_tensor_num_elements(t);
    long double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = val(t, i);
    return v;
}

static double *to_double(const long double *v, int64_t n)
{
    double *d = malloc((size_t)(n + 1) * sizeof *d);
    for (int64_t i = 0; i < n; i++)
        d[i] = (double)v[i];
    return d;
}

/* FusedBatchNorm, V2 or V3 (op) against the reference: y, the batch statistics, and the reserve
 * spaces TensorFlow's CPU kernel saves: the mean and the biased variance (V3's third one empty). */
static void check_batch_norm_op(const char *op, tide_dtype dt, int rank, const int64_t *dims, bool training,
                                double eps)
{
    int64_t n = count(rank, dims), c = dims[rank - 1], rows = n / c;
    tide_tensor *in[5] = {rand_tensor(dt, rank, dims, 2, 6), rand_tensor(dt, 1, &c, 0.5, 2),
                          rand_tensor(dt, 1, &c, -1, 1), rand_tensor(dt, 1, &c, -1, 1),
                          rand_tensor(dt, 1, &c, 0.5, 3)};
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "is_training", training);
    tide_attrs_set_float(a, "epsilon", eps);
    if (rank == 5)
        tide_attrs_set_string(a, "data_format", "NDHWC");
    int n_out = strcmp(op, "FusedBatchNormV3") == 0 ? 6 : 5;
    tide_tensor *out[6] = {0};
    CU_ASSERT_EQUAL_FATAL(run_op(op, in, 5, a, out, n_out), TIDE_OK);
    long double *x = to_long(in[0]), *scale = to_long(in[1]), *offset = to_long(in[2]);
    long double *mi = to_long(in[3]), *vi = to_long(in[4]);
    long double *y = malloc((size_t)n * sizeof *y), *m = malloc((size_t)c * sizeof *m);
    long double *v = malloc((size_t)c * sizeof *v);
    bn_ref p = {rows, c, training, eps};
    ref_batch_norm(&p, x, scale, offset, mi, vi, y, m, v);
    double *yd = to_double(y, n), *md = to_double(m, c), *vd = to_double(v, c);
    double *unbiased = malloc((size_t)c * sizeof *unbiased);
    for (int64_t k = 0; k < c; k++)
        unbiased[k] = training && rows > 1 ? (double)(v[k] * rows / (rows - 1)) : vd[k];
    EXPECT(out[0], dt, rank, dims, yd, 20);
    EXPECT(out[1], dt, 1, &c, md, 4);
    EXPECT(out[2], dt, 1, &c, unbiased, 20);
    EXPECT(out[3], dt, 1, &c, md, 4);
    EXPECT(out[4], dt, 1, &c, vd, 20);
    if (n_out == 6)
        TH_ASSERT_SHAPE(out[5], 1, TH_DIMS(0));
    release_all(in, 5);
    release_all(out, n_out);
    tide_attrs_free(a);
    void *blocks[] = {x, scale, offset, mi, vi, y, m, v, yd, md, vd, unbiased};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        free(blocks[i]);
}

static void check_batch_norm(tide_dtype dt, int rank, const int64_t *dims, bool training, double eps)
{
    check_batch_norm_op("FusedBatchNorm", dt, rank, dims, training, eps);
}

static void test_batch_norm(void)
{
    for (size_t d = 0; d < 2; d++)
        for (int training = 0; training < 2; training++) {
            check_batch_norm(FLOATS[d], 2, TH_DIMS(8, 3), training, 0.001);
            check_batch_norm(FLOATS[d], 4, TH_DIMS(2, 3, 4, 5), training, 1e-5);
            check_batch_norm(FLOATS[d], 2, TH_DIMS(1, 4), training, 0.01); /* n = 1: unbiased = v */
            check_batch_norm(FLOATS[d], 2, TH_DIMS(5000, 30), training, 0.001); /* chunked */
            check_batch_norm(FLOATS[d], 2, TH_DIMS(7, 2500), training, 0.001);  /* by columns */
            check_batch_norm_op("FusedBatchNormV2", FLOATS[d], 4, TH_DIMS(2, 3, 4, 5), training, 1e-3);
            check_batch_norm_op("FusedBatchNormV3", FLOATS[d], 4, TH_DIMS(2, 3, 4, 5), training, 1e-4);
            check_batch_norm_op("FusedBatchNormV3", FLOATS[d], 5, TH_DIMS(2, 2, 3, 4, 5), training, 1e-4);
        }
    /* training ignores mean and variance, which may be empty; an empty x gives NaN statistics */
    tide_tensor *x = th_f64(2, TH_DIMS(2, 2), (double[]){1, 10, 3, 30});
    tide_tensor *ones = th_f64(1, TH_DIMS(2), (double[]){1, 1}), *zeros = th_f64(1, TH_DIMS(2), NULL);
    tide_tensor *none = th_f64(1, TH_DIMS(0), NULL), *out[5];
    CU_ASSERT_EQUAL(run_op("FusedBatchNorm", ((tide_tensor *[]){x, ones, zeros, none, none}), 5, NULL,
                           out, 5), TIDE_OK);
    double s1 = 1 / sqrt(1 + 0.0001), s2 = 1 / sqrt(100 + 0.0001); /* TensorFlow's default epsilon */
    EXPECT(out[0], TIDE_FLOAT64, 2, TH_DIMS(2, 2), ((double[]){-s1, -10 * s2, s1, 10 * s2}), 1);
    EXPECT(out[1], TIDE_FLOAT64, 1, TH_DIMS(2), ((double[]){2, 20}), 1);
    EXPECT(out[2], TIDE_FLOAT64, 1, TH_DIMS(2), ((double[]){2, 200}), 1); /* unbiased */
    release_all(out, 5);
    tide_tensor *empty = th_f64(2, TH_DIMS(0, 2), NULL);
    CU_ASSERT_EQUAL(run_op("FusedBatchNorm", ((tide_tensor *[]){empty, ones, zeros, ones, ones}), 5,
                           NULL, out, 5), TIDE_OK);
    TH_ASSERT_SHAPE(out[0], 2, TH_DIMS(0, 2));
    CU_ASSERT(isnan(val(out[1], 0)) && isnan(val(out[2], 1)) && isnan(val(out[3], 0)));
    release_all(out, 5);
    tide_tensor *all[] = {x, ones, zeros, none, empty};
    release_all(all, 5);
}

static void test_batch_norm_errors(void)
{
    tide_tensor *x = th_f32(3, TH_DIMS(2, 2, 3), NULL), *v3 = th_f32(1, TH_DIMS(3), NULL);
    tide_tensor *v2 = th_f32(1, TH_DIMS(2), NULL), *v0 = th_f32(1, TH_DIMS(0), NULL);
    tide_tensor *x1 = th_f32(1, TH_DIMS(3), NULL), *m = th_f32(2, TH_DIMS(1, 3), NULL);
    TH_ASSERT_FAILS("FusedBatchNorm", ((tide_tensor *[]){x, v2, v3, v3, v3}), 5, NULL,
                    TIDE_INVALID_ARGUMENT,
                    "scale must have 3 elements, one per channel (the last dimension of x [2, 2, 3]), "
                    "got shape [2]");
    TH_ASSERT_FAILS("FusedBatchNorm", ((tide_tensor *[]){x, v3, v3, v2, v3}), 5, NULL,
                    TIDE_INVALID_ARGUMENT, "mean must have 3 elements");
    TH_ASSERT_FAILS("FusedBatchNorm", ((tide_tensor *[]){x1, v3, v3, v3, v3}), 5, NULL,
                    TIDE_INVALID_ARGUMENT, "x must have rank >= 2 ([..., channels]), got shape [3]");
    TH_ASSERT_FAILS("FusedBatchNorm", ((tide_tensor *[]){x, v3, m, v3, v3}), 5, NULL,
                    TIDE_INVALID_ARGUMENT, "offset must be a vector of one value per channel");
    tide_attrs *inference = tide_attrs_new();
    tide_attrs_set_bool(inference, "is_training", false);
    TH_ASSERT_FAILS("FusedBatchNorm", ((tide_tensor *[]){x, v3, v3, v0, v0}), 5, inference,
                    TIDE_INVALID_ARGUMENT, "mean must have 3 elements");
    tide_attrs_free(inference);
    tide_tensor *xg = th_f32(3, TH_DIMS(2, 2, 2), NULL);
    TH_ASSERT_FAILS("FusedBatchNormGrad", ((tide_tensor *[]){xg, x, v3, v3, v3}), 5, NULL,
                    TIDE_INVALID_ARGUMENT,
                    "y_backprop and x must have the same shape: y_backprop is [2, 2, 2], x is [2, 2, 3]");
    TH_ASSERT_FAILS("FusedBatchNormGrad", ((tide_tensor *[]){x, x, v3, v3, v2}), 5, NULL,
                    TIDE_INVALID_ARGUMENT, "reserve_space_2 must have 3 elements");
    /* channels first is refused, in the forward and the gradient op; U must be T */
    tide_attrs *nchw = tide_attrs_new();
    tide_attrs_set_string(nchw, "data_format", "NCHW");
    TH_ASSERT_FAILS("FusedBatchNormV3", ((tide_tensor *[]){x, v3, v3, v3, v3}), 5, nchw, TIDE_INVALID_ARGUMENT,
                    "data_format 'NCHW' is not supported: only channels last ('NHWC', 'NDHWC')");
    TH_ASSERT_FAILS("FusedBatchNormGrad", ((tide_tensor *[]){x, x, v3, v3, v3}), 5, nchw, TIDE_INVALID_ARGUMENT,
                    "data_format 'NCHW' is not supported");
    tide_attrs_free(nchw);
    tide_tensor *d3 = th_f64(1, TH_DIMS(3), NULL);
    TH_ASSERT_FAILS("FusedBatchNormV3", ((tide_tensor *[]){x, d3, d3, d3, d3}), 5, NULL, TIDE_INVALID_ARGUMENT,
                    "U (float64) must be T (float32)");
    tide_tensor *all[] = {x, v3, v2, v0, x1, m, xg, d3};
    release_all(all, 8);
}

/* FusedBatchNormGrad against central differences of the reference forward pass: for the loss
 * L = sum(dy * y), dL/dx, dL/dscale and dL/doffset. */
static void check_batch_norm_grad(bool training)
{
    enum { ROWS = 6, C = 3, N = ROWS * C };
    const double eps = 0.001, h = 1e-6;
    tide_dtype dt = TIDE_FLOAT64;
    tide_tensor *x = rand_tensor(dt, 2, TH_DIMS(ROWS, C), -2, 2), *scale = rand_tensor(dt, 1, TH_DIMS(C), 0.5, 2);
    tide_tensor *offset = rand_tensor(dt, 1, TH_DIMS(C), -1, 1), *mean = rand_tensor(dt, 1, TH_DIMS(C), -1, 1);
    tide_tensor *var = rand_tensor(dt, 1, TH_DIMS(C), 0.5, 2), *dy = rand_tensor(dt, 2, TH_DIMS(ROWS, C), -1, 1);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "is_training", training);
    tide_attrs_set_float(a, "epsilon", eps); /* the gradient op takes the forward op's epsilon */
    tide_tensor *fwd[6] = {0}, *grad[5] = {0};
    CU_ASSERT_EQUAL_FATAL(run_op("FusedBatchNorm", ((tide_tensor *[]){x, scale, offset, mean, var}),
                                 5, a, fwd, 5), TIDE_OK);
    CU_ASSERT_EQUAL_FATAL(run_op("FusedBatchNormGrad", ((tide_tensor *[]){dy, x, scale, fwd[3], fwd[4]}),
                                 5, a, grad, 5), TIDE_OK);
    TH_ASSERT_SHAPE(grad[3], 1, TH_DIMS(0)); /* reserve_space_3 and _4: empty, as TensorFlow's */
    TH_ASSERT_SHAPE(grad[4], 1, TH_DIMS(0));
    /* the V3 pair gives the same gradients (its reserve_space_3 is not read) */
    tide_tensor *fwd3[6] = {0}, *grad3[5] = {0};
    CU_ASSERT_EQUAL_FATAL(run_op("FusedBatchNormV3", ((tide_tensor *[]){x, scale, offset, mean, var}),
                                 5, a, fwd3, 6), TIDE_OK);
    CU_ASSERT_EQUAL_FATAL(run_op("FusedBatchNormGradV3",
                                 ((tide_tensor *[]){dy, x, scale, fwd3[3], fwd3[4], fwd3[5]}), 6, a, grad3, 5),
                          TIDE_OK);
    for (int i = 0; i < 3; i++)
        TH_ASSERT_CLOSE(grad3[i], grad[i], 0, 0);
    release_all(fwd3, 6);
    release_all(grad3, 5);
    /* perturb every element of x, scale and offset in turn */
    long double *p[3] = {to_long(x), to_long(scale), to_long(offset)};
    long double *mi = to_long(mean), *vi = to_long(var), y[N];
    double want[3][N];
    int64_t sizes[3] = {N, C, C};
    bn_ref ref = {ROWS, C, training, eps};
    for (int which = 0; which < 3; which++)
        for (int64_t i = 0; i < sizes[which]; i++) {
            long double saved = p[which][i], loss[2];
            for (int side = 0; side < 2; side++) {
                p[which][i] = saved + (side ? h : -h);
                ref_batch_norm(&ref, p[0], p[1], p[2], mi, vi, y, NULL, NULL);
                loss[side] = 0;
                for (int k = 0; k < N; k++)
                    loss[side] += y[k] * val(dy, k);
            }
            p[which][i] = saved;
            want[which][i] = (double)((loss[1] - loss[0]) / (2 * h));
        }
    for (int which = 0; which < 3; which++) {
        tide_tensor *w = make(dt, which ? 1 : 2, which ? TH_DIMS(C) : TH_DIMS(ROWS, C), want[which]);
        TH_ASSERT_CLOSE(grad[which], w, 1e-7, 1e-8);
        tide_tensor_release(w);
    }
    for (int i = 0; i < 3; i++)
        free(p[i]);
    free(mi);
    free(vi);
    tide_tensor *all[] = {x, scale, offset, mean, var, dy};
    release_all(all, 6);
    release_all(fwd, 5);
    release_all(grad, 5);
    tide_attrs_free(a);
}

/* Large and float32: FusedBatchNormGrad against the same op in float64 on the same values (the
 * float64 kernel being checked against finite differences above). */
static void check_batch_norm_grad_f32(int64_t rows, int64_t c)
{
    tide_tensor *in64[5] = {rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(rows, c), -2, 2),
                            rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(rows, c), 1, 3),
                            rand_tensor(TIDE_FLOAT64, 1, &c, 0.5, 2), rand_tensor(TIDE_FLOAT64, 1, &c, 1, 3),
                            rand_tensor(TIDE_FLOAT64, 1, &c, 0.5, 1)};
    tide_tensor *in32[5], *out64[5], *out32[5];
    for (int i = 0; i < 5; i++) {
        in32[i] = tide_tensor_cast(in64[i], TIDE_FLOAT32, NULL);
        tide_tensor_release(in64[i]);
        in64[i] = tide_tensor_cast(in32[i], TIDE_FLOAT64, NULL);
    }
    CU_ASSERT_EQUAL(run_op("FusedBatchNormGrad", in64, 5, NULL, out64, 5), TIDE_OK);
    CU_ASSERT_EQUAL(run_op("FusedBatchNormGrad", in32, 5, NULL, out32, 5), TIDE_OK);
    for (int i = 0; i < 3; i++) {
        tide_tensor *as32 = tide_tensor_cast(out64[i], TIDE_FLOAT32, NULL);
        TH_ASSERT_CLOSE(out32[i], as32, 1e-5, i ? 1e-3 : 1e-5);
        tide_tensor_release(as32);
    }
    release_all(in64, 5);
    release_all(in32, 5);
    release_all(out64, 5);
    release_all(out32, 5);
}

static void test_batch_norm_grad(void)
{
    check_batch_norm_grad(true);
    check_batch_norm_grad(false);
    check_batch_norm_grad_f32(3000, 20); /* sums by chunks of rows */
    check_batch_norm_grad_f32(5, 3000);  /* sums by blocks of columns */
}

/* ---------------------------------------------------------------- graph-time shapes */

static void test_shape_inference(void)
{
    const char *base = "a = Placeholder(dtype=float32, shape=[?, 10])\n"
                       "b = Placeholder(dtype=int32, shape=[?])\n"
                       "c = Placeholder(dtype=float32, shape=[5])\n"
                       "d = Placeholder(dtype=float32, shape=[?, ?])\n"
                       "e = Placeholder(dtype=float32, shape=*)\n"
                       "f = Placeholder(dtype=float32, shape=[])\n"
                       "h = Placeholder(dtype=float32, shape=[?, 4, 4, 5])\n"
                       "l = Placeholder(dtype=float32, shape=[32, ?])\n"
                       "v = Placeholder(dtype=float32, shape=[0])\n";
    char text[4096];
    snprintf(text, sizeof text, "%s%s", base,
             "sm = Softmax(a)\n lsm = LogSoftmax(h)\n xe = SoftmaxCrossEntropyWithLogits(a, l)\n"
             "sx = SparseSoftmaxCrossEntropyWithLogits(a, b, Tlabels=int32)\n"
             "ba = BiasAdd(d, c)\n bh = BiasAdd(h, c)\n bg = BiasAddGrad(h)\n bgd = BiasAddGrad(d)\n"
             "l2 = L2Loss(a)\n dr = Dropout(h, f)\n re = Relu(e)\n rg = ReluGrad(a, d)\n"
             "sg = SigmoidGrad(e, d)\n"
             "bn = FusedBatchNorm(h, c, c, v, v)\n bi = FusedBatchNorm(d, c, c, c, c, is_training=false)\n"
             "bng = FusedBatchNormGrad(h, h, c, c, c)\n");
    tide_graph *g = th_graph_of(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "sm", 0, 2, TH_DIMS(-1, 10));
    th_assert_output_shape(g, "lsm", 0, 4, TH_DIMS(-1, 4, 4, 5));
    th_assert_output_shape(g, "xe", 0, 1, TH_DIMS(32));
    th_assert_output_shape(g, "xe", 1, 2, TH_DIMS(32, 10));
    th_assert_output_shape(g, "sx", 0, 1, TH_DIMS(-1));
    th_assert_output_shape(g, "sx", 1, 2, TH_DIMS(-1, 10));
    th_assert_output_shape(g, "ba", 0, 2, TH_DIMS(-1, 5));
    th_assert_output_shape(g, "bh", 0, 4, TH_DIMS(-1, 4, 4, 5));
    th_assert_output_shape(g, "bg", 0, 1, TH_DIMS(5));
    th_assert_output_shape(g, "bgd", 0, 1, TH_DIMS(-1));
    th_assert_output_shape(g, "l2", 0, 0, NULL);
    th_assert_output_shape(g, "dr", 0, 4, TH_DIMS(-1, 4, 4, 5));
    th_assert_output_shape(g, "dr", 1, 4, TH_DIMS(-1, 4, 4, 5));
    th_assert_output_shape(g, "re", 0, -1, NULL);
    th_assert_output_shape(g, "rg", 0, 2, TH_DIMS(-1, 10));
    th_assert_output_shape(g, "sg", 0, 2, TH_DIMS(-1, -1));
    th_assert_output_shape(g, "bn", 0, 4, TH_DIMS(-1, 4, 4, 5));
    for (int i = 1; i < 5; i++)
        th_assert_output_shape(g, "bn", i, 1, TH_DIMS(5));
    th_assert_output_shape(g, "bi", 0, 2, TH_DIMS(-1, 5));
    th_assert_output_shape(g, "bi", 4, 1, TH_DIMS(5));
    th_assert_output_shape(g, "bng", 0, 4, TH_DIMS(-1, 4, 4, 5));
    th_assert_output_shape(g, "bng", 2, 1, TH_DIMS(5));
    tide_graph_free(g);
    th_assert_graph_fails(base, "x = Softmax(f)", "logits must have rank >= 1");
    th_assert_graph_fails(base, "x = SoftmaxCrossEntropyWithLogits(a, h)",
                       "labels must be a matrix [batch, classes] like features, got shape [?, 4, 4, 5]");
    th_assert_graph_fails(base, "x = SoftmaxCrossEntropyWithLogits(a, c)", "got shape [5]");
    th_assert_graph_fails(base, "x = SparseSoftmaxCrossEntropyWithLogits(a, a)", "int");
    th_assert_graph_fails(base, "x = BiasAdd(a, c)",
                       "bias [5] must have one element per channel, the last dimension of value [?, 10]");
    th_assert_graph_fails(base, "x = BiasAdd(h, c, data_format=\"NCHW\")", "data_format 'NCHW' is not supported");
    th_assert_graph_fails(base, "x = BiasAddGrad(c)", "value must have rank >= 2");
    th_assert_graph_fails(base, "x = ReluGrad(a, h)", "gradients is [?, 10], features is [?, 4, 4, 5]");
    th_assert_graph_fails(base, "x = Dropout(a, c)", "rate must be a scalar, got shape [5]");
    th_assert_graph_fails(base, "x = FusedBatchNorm(a, c, c, c, c)", "scale must have 10 elements");
    th_assert_graph_fails(base, "x = FusedBatchNorm(d, c, c, v, v, is_training=false)",
                       "mean must have 5 elements");
    th_assert_graph_fails(base, "x = FusedBatchNormGrad(a, h, c, c, c)", "y_backprop and x must have the same shape");
}

/* Ops chained in a graph, where the executor lets kernels write over intermediate buffers. */
static void test_graph_chain(void)
{
    const char *text = "x = Placeholder(dtype=float32)\n b = Placeholder(dtype=float32)\n"
                       "n = Neg(x)\n ba = BiasAdd(n, b)\n r = Relu(ba)\n s = Softmax(r)\n"
                       "e = Elu(n)\n eg = EluGrad(x, e)\n";
    enum { R = 3, C = 4 };
    tide_tensor *feeds[2] = {rand_tensor(TIDE_FLOAT32, 2, TH_DIMS(R, C), -2, 2),
                             rand_tensor(TIDE_FLOAT32, 1, TH_DIMS(C), -1, 1)}, *out[2] = {0};
    double relu[R * C], sm[R * C], eg[R * C];
    for (int i = 0; i < R * C; i++) {
        float ba = -(float)val(feeds[0], i) + (float)val(feeds[1], i % C);
        relu[i] = ba > 0 ? ba : 0;
        double e = ref_elu(-val(feeds[0], i));
        eg[i] = e < 0 ? val(feeds[0], i) * (e + 1) : val(feeds[0], i);
    }
    tide_tensor *rt = make(TIDE_FLOAT32, 2, TH_DIMS(R, C), relu);
    ref_softmax_rows(rt, R, C, sm, NULL);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(run_text(text, (const char *[]){"x", "b"}, feeds, 2, (const char *[]){"s", "eg"}, 2,
                             out, err), TIDE_OK);
    EXPECT(out[0], TIDE_FLOAT32, 2, TH_DIMS(R, C), sm, 4);
    EXPECT(out[1], TIDE_FLOAT32, 2, TH_DIMS(R, C), eg, 4);
    tide_error_free(err);
    release_all(feeds, 2);
    release_all(out, 2);
    tide_tensor_release(rt);
}

/* The multi-output kernels writing over a buffer the executor owns (Neg's output, used once). */
static void test_graph_in_place(void)
{
    enum { R = 4, C = 5, N = R * C };
    const char *text = "x = Placeholder(dtype=float64)\n l = Placeholder(dtype=int32)\n"
                       "one = Const(value=tensor(float64, [5], [1, 1, 1, 1, 1]), dtype=float64)\n"
                       "zero = Const(value=tensor(float64, [5], [0, 0, 0, 0, 0]), dtype=float64)\n"
                       "rate = Const(value=tensor(float64, [], [0.5]), dtype=float64)\n"
                       "n1 = Neg(x)\n xe = SparseSoftmaxCrossEntropyWithLogits(n1, l)\n"
                       "n2 = Neg(x)\n d = Dropout(n2, rate, seed=5)\n"
                       "n3 = Neg(x)\n bn = FusedBatchNorm(n3, one, zero, one, one, epsilon=0.5, is_training=false)\n";
    tide_tensor *feeds[2] = {rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(R, C), -3, 3),
                             th_i32(1, TH_DIMS(R), (int32_t[]){4, 0, 2, 2})}, *out[5] = {0};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(run_text(text, (const char *[]){"x", "l"}, feeds, 2,
                                   (const char *[]){"xe", "xe:1", "d", "d:1", "bn"}, 5, out, err),
                          TIDE_OK);
    tide_tensor *neg = th_f64(2, TH_DIMS(R, C), NULL);
    for (int i = 0; i < N; i++)
        ((double *)tide_tensor_data(neg))[i] = -val(feeds[0], i);
    double sm[N], lsm[N], loss[R], bp[N], y[N], bn[N];
    ref_softmax_rows(neg, R, C, sm, lsm);
    for (int i = 0; i < N; i++) {
        bool hit = i % C == (int)val(feeds[1], i / C);
        bp[i] = sm[i] - hit;
        if (hit)
            loss[i / C] = -lsm[i];
        y[i] = -val(feeds[0], i) * val(out[3], i);
        bn[i] = (-val(feeds[0], i) - 1) / sqrt(1.5);
    }
    EXPECT(out[0], TIDE_FLOAT64, 1, TH_DIMS(R), loss, 100);
    EXPECT(out[1], TIDE_FLOAT64, 2, TH_DIMS(R, C), bp, 100);
    EXPECT(out[2], TIDE_FLOAT64, 2, TH_DIMS(R, C), y, 1);
    EXPECT(out[4], TIDE_FLOAT64, 2, TH_DIMS(R, C), bn, 10);
    for (int i = 0; i < N; i++)
        CU_ASSERT(val(out[3], i) == 0 || val(out[3], i) == 2);
    tide_error_free(err);
    release_all(feeds, 2);
    release_all(out, 5);
    tide_tensor_release(neg);
}

/* ---------------------------------------------------------------- gradient functions */

/* A gradient problem: the graph `text` (its Placeholders fed by name), ys weighted by grad_ys (NULL
 * entries or array: ones), differentiated with respect to xs; dxs then `extra` tensors are fetched
 * in ONE run into out. */
typedef struct grad_case {
    const char *text;
    const char *const *feed_names;
    tide_tensor **feeds;
    int num_feeds;
    const char *const *ys, *const *grad_ys;
    int num_ys;
    const char *const *xs;
    int num_xs;
    const char *const *extra;
    int num_extra;
} grad_case;

static tide_status grad_run(const grad_case *c, tide_tensor **out, tide_error *err)
{
    tide_graph *g = th_graph_of(c->text);
    if (!g)
        return TIDE_INVALID_ARGUMENT;
    tide_output ys[4], gys[4], xs[8], fetches[16];
    tide_feed feeds[8];
    tide_status st = TIDE_OK;
    for (int i = 0; i < c->num_ys && st == TIDE_OK; i++) {
        st = tide_graph_output(g, c->ys[i], &ys[i], err);
        gys[i] = (tide_output){NULL, 0};
        if (st == TIDE_OK && c->grad_ys && c->grad_ys[i])
            st = tide_graph_output(g, c->grad_ys[i], &gys[i], err);
    }
    for (int i = 0; i < c->num_xs && st == TIDE_OK; i++)
        st = tide_graph_output(g, c->xs[i], &xs[i], err);
    if (st == TIDE_OK)
        st = tide_gradients(g, ys, c->num_ys, xs, c->num_xs, gys, fetches, err);
    for (int i = 0; i < c->num_xs && st == TIDE_OK; i++)
        if (!fetches[i].node) {
            fprintf(stderr, "no gradient for %s\n", c->xs[i]);
            st = TIDE_NOT_FOUND;
        }
    for (int i = 0; i < c->num_extra && st == TIDE_OK; i++)
        st = tide_graph_output(g, c->extra[i], &fetches[c->num_xs + i], err);
    for (int i = 0; i < c->num_feeds; i++)
        feeds[i] = (tide_feed){{tide_graph_node(g, c->feed_names[i]), 0}, c->feeds[i]};
    tide_session *s = st == TIDE_OK ? tide_session_new(th_engine(), g, NULL, err) : NULL;
    if (st == TIDE_OK)
        st = s ? tide_session_run(s, NULL, feeds, c->num_feeds, fetches, c->num_xs + c->num_extra, out,
                                  NULL, 0, NULL, err)
               : tide_error_code(err);
    if (st != TIDE_OK)
        fprintf(stderr, "grad_run: %s\n", tide_error_message(err));
    tide_session_free(s);
    tide_graph_free(g);
    return st;
}

static double sigmoid_ref(double x) { return (double)(1 / (1 + expl(-x))); }

/* d(sum(w * f(x)))/dx = w * f'(x) for each activation, with f' derived by hand. */
static void test_grad_activations(void)
{
    static const struct {
        const char *op;
    } ops[] = {{"Relu"}, {"Relu6"}, {"Elu"}, {"Softplus"}, {"Sigmoid"}, {"Tanh"}};
    enum { N = 9 };
    double xv[N] = {-3, -0.5, 0.25, 1, 5.5, 6.5, -7, 2, 0.75}, wv[N];
    for (int i = 0; i < N; i++)
        wv[i] = th_rand(-2, 2);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, "x = Placeholder(dtype=float64)\n w = Placeholder(dtype=float64)\n"
                                    "y = %s(x)\n", ops[k].op);
        tide_tensor *feeds[2] = {th_f64(1, TH_DIMS(N), xv), th_f64(1, TH_DIMS(N), wv)}, *dx = NULL;
        grad_case c = {text, (const char *[]){"x", "w"}, feeds, 2, (const char *[]){"y"},
                       (const char *[]){"w"}, 1, (const char *[]){"x"}, 1, NULL, 0};
        CU_ASSERT_EQUAL(grad_run(&c, &dx, NULL), TIDE_OK);
        double want[N];
        for (int i = 0; i < N; i++) {
            double x = xv[i], d;
            switch (k) {
            case 0: d = x > 0; break;
            case 1: d = x > 0 && x < 6; break;
            case 2: d = x < 0 ? exp(x) : 1; break;
            case 3: d = sigmoid_ref(x); break;
            case 4: d = sigmoid_ref(x) * (1 - sigmoid_ref(x)); break;
            default: d = 1 / (cosh(x) * cosh(x)); break;
            }
            want[i] = wv[i] * d;
        }
        EXPECT(dx, TIDE_FLOAT64, 1, TH_DIMS(N), want, 100);
        release_all(feeds, 2);
        tide_tensor_release(dx);
    }
}

/* Softmax and LogSoftmax of a rank-3 input, against their Jacobians: for s = softmax(x) of a row,
 * ds_j/dx_i = s_j (delta_ij - s_i) and dlog(s_j)/dx_i = delta_ij - s_i. */
static void test_grad_softmax(void)
{
    enum { R = 4, C = 3, N = R * C };
    tide_tensor *feeds[2] = {rand_tensor(TIDE_FLOAT64, 3, TH_DIMS(2, 2, C), -3, 3),
                             rand_tensor(TIDE_FLOAT64, 3, TH_DIMS(2, 2, C), -1, 1)};
    double s[N], want_sm[N], want_lsm[N];
    ref_softmax_rows(feeds[0], R, C, s, NULL);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < C; i++) {
            long double a = 0, b = 0;
            for (int j = 0; j < C; j++) {
                double w = val(feeds[1], r * C + j), sj = s[r * C + j], si = s[r * C + i];
                a += w * sj * ((i == j) - si);
                b += w * ((i == j) - si);
            }
            want_sm[r * C + i] = (double)a;
            want_lsm[r * C + i] = (double)b;
        }
    const char *ops[] = {"Softmax", "LogSoftmax"};
    const double *wants[] = {want_sm, want_lsm};
    for (int k = 0; k < 2; k++) {
        char text[256];
        snprintf(text, sizeof text, "x = Placeholder(dtype=float64)\n w = Placeholder(dtype=float64)\n"
                                    "y = %s(x)\n", ops[k]);
        tide_tensor *dx = NULL;
        grad_case c = {text, (const char *[]){"x", "w"}, feeds, 2, (const char *[]){"y"},
                       (const char *[]){"w"}, 1, (const char *[]){"x"}, 1, NULL, 0};
        CU_ASSERT_EQUAL(grad_run(&c, &dx, NULL), TIDE_OK);
        EXPECT(dx, TIDE_FLOAT64, 3, TH_DIMS(2, 2, C), wants[k], 100);
        tide_tensor_release(dx);
    }
    release_all(feeds, 2);
}

/* The cross-entropies, loss weighted by w[b]: dfeatures = w[b] * (softmax - labels), dense
 * dlabels = -w[b] * log_softmax; a gradient into backprop is refused, leaving the graph as it was. */
static void test_grad_xent(void)
{
    enum { B = 3, C = 4, N = B * C };
    double lv[N], onehot[N] = {0}, s[N], ls[N];
    int64_t idx[B] = {2, 0, 3};
    for (int i = 0; i < N; i++)
        lv[i] = th_rand(0, 1);
    for (int b = 0; b < B; b++)
        onehot[b * C + idx[b]] = 1;
    tide_tensor *feeds[3] = {rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(B, C), -3, 3), th_f64(2, TH_DIMS(B, C), lv),
                             rand_tensor(TIDE_FLOAT64, 1, TH_DIMS(B), -2, 2)};
    ref_softmax_rows(feeds[0], B, C, s, ls);
    double want_f[N], want_l[N], want_sf[N];
    for (int i = 0; i < N; i++) {
        double w = val(feeds[2], i / C);
        want_f[i] = w * (s[i] - lv[i]);
        want_l[i] = -w * ls[i];
        want_sf[i] = w * (s[i] - onehot[i]);
    }
    const char *dense = "f = Placeholder(dtype=float64)\n l = Placeholder(dtype=float64)\n"
                        "w = Placeholder(dtype=float64)\n x = SoftmaxCrossEntropyWithLogits(f, l)\n";
    tide_tensor *out[2] = {NULL, NULL};
    grad_case c = {dense, (const char *[]){"f", "l", "w"}, feeds, 3, (const char *[]){"x"},
                   (const char *[]){"w"}, 1, (const char *[]){"f", "l"}, 2, NULL, 0};
    CU_ASSERT_EQUAL(grad_run(&c, out, NULL), TIDE_OK);
    EXPECT(out[0], TIDE_FLOAT64, 2, TH_DIMS(B, C), want_f, 100);
    EXPECT(out[1], TIDE_FLOAT64, 2, TH_DIMS(B, C), want_l, 100);
    release_all(out, 2);
    char sparse[512];
    snprintf(sparse, sizeof sparse, "f = Placeholder(dtype=float64)\n w = Placeholder(dtype=float64)\n"
             "l = Const(value=tensor(int64, [3], [%lld, %lld, %lld]), dtype=int64)\n"
             "x = SparseSoftmaxCrossEntropyWithLogits(f, l)\n",
             (long long)idx[0], (long long)idx[1], (long long)idx[2]);
    tide_tensor *sfeeds[2] = {feeds[0], feeds[2]};
    grad_case sc = {sparse, (const char *[]){"f", "w"}, sfeeds, 2, (const char *[]){"x"},
                    (const char *[]){"w"}, 1, (const char *[]){"f"}, 1, NULL, 0};
    CU_ASSERT_EQUAL(grad_run(&sc, out, NULL), TIDE_OK);
    EXPECT(out[0], TIDE_FLOAT64, 2, TH_DIMS(B, C), want_sf, 100);
    tide_tensor_release(out[0]);
    /* differentiating the backprop output fails and adds nothing */
    tide_graph *g = th_graph_of(dense);
    int before = tide_graph_num_nodes(g);
    tide_output y = {tide_graph_node(g, "x"), 1}, x = {tide_graph_node(g, "f"), 0}, dx;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_gradients(g, &y, 1, &x, 1, NULL, &dx, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "output 1 (backprop)"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_error_free(err);
    tide_graph_free(g);
    release_all(feeds, 3);
}

/* loss = L2Loss(BiasAdd(v, b)): dv = v + b, db = sum over rows of (v + b). */
static void test_grad_bias_add_l2(void)
{
    enum { R = 2, H = 3, C = 4, N = R * H * C };
    tide_tensor *feeds[2] = {rand_tensor(TIDE_FLOAT64, 3, TH_DIMS(R, H, C), -2, 2),
                             rand_tensor(TIDE_FLOAT64, 1, TH_DIMS(C), -1, 1)}, *out[2] = {0};
    double dv[N], db[C] = {0};
    for (int i = 0; i < N; i++) {
        dv[i] = val(feeds[0], i) + val(feeds[1], i % C);
        db[i % C] += dv[i];
    }
    const char *text = "v = Placeholder(dtype=float64)\n b = Placeholder(dtype=float64)\n"
                       "y = BiasAdd(v, b)\n loss = L2Loss(y)\n";
    grad_case c = {text, (const char *[]){"v", "b"}, feeds, 2, (const char *[]){"loss"}, NULL, 1,
                   (const char *[]){"v", "b"}, 2, NULL, 0};
    CU_ASSERT_EQUAL(grad_run(&c, out, NULL), TIDE_OK);
    EXPECT(out[0], TIDE_FLOAT64, 3, TH_DIMS(R, H, C), dv, 10);
    EXPECT(out[1], TIDE_FLOAT64, 1, TH_DIMS(C), db, 10);
    release_all(out, 2);
    release_all(feeds, 2);
}

/* Dropout: the mask and the gradient of sum(y * w) fetched in one run: dx = w * mask. */
static void test_grad_dropout(void)
{
    enum { N = 1000 };
    tide_tensor *feeds[2] = {rand_tensor(TIDE_FLOAT32, 2, TH_DIMS(10, 100), -2, 2),
                             rand_tensor(TIDE_FLOAT32, 2, TH_DIMS(10, 100), -2, 2)}, *out[2] = {0};
    const char *text = "x = Placeholder(dtype=float32)\n w = Placeholder(dtype=float32)\n"
                       "r = Const(value=tensor(float32, [], [0.4]), dtype=float32)\n"
                       "d = Dropout(x, r)\n yw = Mul(d, w)\n";
    grad_case c = {text, (const char *[]){"x", "w"}, feeds, 2, (const char *[]){"yw"}, NULL, 1,
                   (const char *[]){"x"}, 1, (const char *[]){"d:1"}, 1};
    CU_ASSERT_EQUAL_FATAL(grad_run(&c, out, NULL), TIDE_OK);
    double want[N];
    int zeros = 0;
    for (int i = 0; i < N; i++) {
        want[i] = val(feeds[1], i) * val(out[1], i);
        zeros += val(out[1], i) == 0;
    }
    CU_ASSERT(zeros > 300 && zeros < 500); /* rate 0.4 of 1000: 400 +- 80 at 5 sigma */
    EXPECT(out[0], TIDE_FLOAT32, 2, TH_DIMS(10, 100), want, 1);
    release_all(out, 2);
    release_all(feeds, 2);
}

/* FusedBatchNorm through tide_gradients against central differences of the reference forward pass
 * (training), and the inference cases that are refused. */
static void test_grad_batch_norm(void)
{
    enum { R = 5, C = 2, N = R * C };
    const double eps = 0.001, h = 1e-6;
    tide_tensor *feeds[4] = {rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(R, C), -2, 2),
                             rand_tensor(TIDE_FLOAT64, 1, TH_DIMS(C), 0.5, 2),
                             rand_tensor(TIDE_FLOAT64, 1, TH_DIMS(C), -1, 1),
                             rand_tensor(TIDE_FLOAT64, 2, TH_DIMS(R, C), -1, 1)}, *out[3] = {0};
    const char *text = "x = Placeholder(dtype=float64)\n s = Placeholder(dtype=float64)\n"
                       "o = Placeholder(dtype=float64)\n w = Placeholder(dtype=float64)\n"
                       "e = Const(value=tensor(float64, [0], []), dtype=float64)\n"
                       "bn = FusedBatchNorm(x, s, o, e, e, epsilon=0.001)\n";
    grad_case c = {text, (const char *[]){"x", "s", "o", "w"}, feeds, 4, (const char *[]){"bn"},
                   (const char *[]){"w"}, 1, (const char *[]){"x", "s", "o"}, 3, NULL, 0};
    CU_ASSERT_EQUAL_FATAL(grad_run(&c, out, NULL), TIDE_OK);
    long double *p[3] = {to_long(feeds[0]), to_long(feeds[1]), to_long(feeds[2])}, y[N];
    int64_t sizes[3] = {N, C, C};
    bn_ref ref = {R, C, true, eps};
    for (int which = 0; which < 3; which++) {
        double want[N];
        for (int64_t i = 0; i < sizes[which]; i++) {
            long double saved = p[which][i], loss[2];
            for (int side = 0; side < 2; side++) {
                p[which][i] = saved + (side ? h : -h);
                ref_batch_norm(&ref, p[0], p[1], p[2], NULL, NULL, y, NULL, NULL);
                loss[side] = 0;
                for (int k = 0; k < N; k++)
                    loss[side] += y[k] * val(feeds[3], k);
            }
            p[which][i] = saved;
            want[i] = (double)((loss[1] - loss[0]) / (2 * h));
        }
        tide_tensor *w = make(TIDE_FLOAT64, which ? 1 : 2, which ? TH_DIMS(C) : TH_DIMS(R, C), want);
        TH_ASSERT_CLOSE(out[which], w, 1e-7, 1e-8);
        tide_tensor_release(w);
    }
    for (int i = 0; i < 3; i++)
        free(p[i]);
    release_all(out, 3);
    release_all(feeds, 4);
    /* refused: the gradient of a statistic, and of the moving mean in inference */
    const char *base = "x = Placeholder(dtype=float32, shape=[4, 2])\n"
                       "v = Const(value=tensor(float32, [2], [1, 2]), dtype=float32)\n"
                       "m = Placeholder(dtype=float32, shape=[2])\n"
                       "bn = FusedBatchNorm(x, v, v, m, v, is_training=%s)\n";
    const char *cases[][3] = {{"true", "bn:1", "output 1 (batch_mean)"},
                              {"false", "bn", "with respect to its mean and variance inputs"}};
    for (int k = 0; k < 2; k++) {
        char text2[512];
        snprintf(text2, sizeof text2, base, cases[k][0]);
        tide_graph *g = th_graph_of(text2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        tide_output y0, xs[2] = {{tide_graph_node(g, "x"), 0}, {tide_graph_node(g, "m"), 0}}, dxs[2];
        tide_graph_output(g, cases[k][1], &y0, NULL);
        tide_error *err = tide_error_new();
        CU_ASSERT_EQUAL(tide_gradients(g, &y0, 1, xs, 2, NULL, dxs, err), TIDE_UNIMPLEMENTED);
        if (!strstr(tide_error_message(err), cases[k][2]))
            fprintf(stderr, "expected \"%s\" in: %s\n", cases[k][2], tide_error_message(err));
        CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), cases[k][2]));
        tide_error_free(err);
        tide_graph_free(g);
    }
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_activations),
        TH_TEST(test_activations_large),
        TH_TEST(test_activation_grads),
        TH_TEST(test_activation_errors),
        TH_TEST(test_softmax),
        TH_TEST(test_xent),
        TH_TEST(test_xent_errors),
        TH_TEST(test_bias_add),
        TH_TEST(test_l2_loss),
        TH_TEST(test_dropout),
        TH_TEST(test_dropout_runs),
        TH_TEST(test_batch_norm),
        TH_TEST(test_batch_norm_errors),
        TH_TEST(test_batch_norm_grad),
        TH_TEST(test_shape_inference),
        TH_TEST(test_graph_chain),
        TH_TEST(test_graph_in_place),
        TH_TEST(test_grad_activations),
        TH_TEST(test_grad_softmax),
        TH_TEST(test_grad_xent),
        TH_TEST(test_grad_bias_add_l2),
        TH_TEST(test_grad_dropout),
        TH_TEST(test_grad_batch_norm),
        TH_END,
    };
    return th_main("nn", tests);
}
