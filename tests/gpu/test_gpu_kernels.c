/* test_gpu_kernels.c — every GPU kernel against the CPU kernel on the same random inputs (suite 'gpu').
 * Each case builds a graph of Placeholders (fed on /cpu:0) and the op under test asked for the device,
 * runs it there and on /cpu:0 in fresh sessions, checks that the node really ran on the device (soft
 * placement would otherwise compare the CPU with itself) and compares every output within the case's
 * tolerance: exact for data movement, casts and uniforms; 1e-6 relative for + - * / and reductions
 * (one float rounding, sums in double on both); 2e-5 relative plus 1e-6 for CUDA's math library
 * (expf, logf, tanhf, powf...), softmax and normals; matrix products and convolutions 1e-4 relative
 * plus 1e-4 times the reduced length (other summation orders in float32); float16 and bfloat16 exact
 * where float32 is, one step of the type (1e-3, 8e-3 relative) for CUDA's math library and for the
 * half matrix products and convolutions (cuBLAS GemmEx and cuDNN with float32 accumulation, plus
 * 1e-6 per reduced element); integers exact. Errors the GPU kernels
 * raise themselves (a bad sparse label, a gather index out of range) are checked for their
 * messages; convolutions whose padding cuDNN cannot place evenly (padded explicitly on the GPU) are
 * compared as the others. Then the fused optimizers on variables, the gradients of a small
 * network on the device against the CPU's and against float32 central differences computed on the
 * device.
 *
 * The device is /gpu:0, or $TIDE_GPU_TEST_DEVICE: with /sim:0 the same cases run on the simulated
 * accelerator (the CPU's kernels), which checks the test itself on machines without a GPU. Reports
 * skipped (77) when the engine has no such device. Nothing of it has run on a GPU yet. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *device = "/gpu:0";
static tide_engine *engine;

/* ---------------------------------------------------------------- inputs */

static tide_tensor *uniform(double lo, double hi, int rank, const int64_t *dims)
{
    tide_shape s = tide_shape_make(rank, dims);
    int64_t n = tide_shape_num_elements(&s);
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)th_rand(lo, hi);
    tide_tensor *t = th_f32(rank, dims, v);
    free(v);
    return t;
}
#define U(lo, hi, ...) uniform(lo, hi, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), TH_DIMS(__VA_ARGS__))
#define SCALAR(v) th_f32(0, NULL, (const float[]){v})
#define I32(...) th_i32(1, TH_DIMS(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)), (const int32_t[]){__VA_ARGS__})
#define I32_SCALAR(v) th_i32(0, NULL, (const int32_t[]){v})

/* ---------------------------------------------------------------- running one op on a device */

/* Runs op on `where` with inputs fed through Placeholders; outs[0..n_out) get the fetched outputs.
 * *placed gets the device the op's node ran on (a copy). */
static tide_status run_on(const char *where, const char *op, tide_tensor *const *in, int n, const tide_attrs *attrs,
                          tide_tensor **outs, int n_out, char *placed, size_t placed_size, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_feed feeds[8];
    tide_output ins[8];
    tide_status st = TIDE_OK;
    for (int i = 0; i < n && st == TIDE_OK; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(in[i]));
        tide_node_builder_set_device(b, "/cpu:0");
        tide_node *p = tide_node_builder_finish(b, err);
        st = p ? TIDE_OK : tide_error_code(err);
        ins[i] = (tide_output){p, 0};
        feeds[i] = (tide_feed){{p, 0}, in[i]};
    }
    tide_node *node = NULL;
    if (st == TIDE_OK) {
        tide_node_builder *b = tide_node_builder_new(g, op, "op");
        tide_node_builder_add_inputs_flat(b, ins, n);
        if (attrs)
            tide_attrs_merge(tide_node_builder_attrs(b), attrs);
        tide_node_builder_set_device(b, where);
        node = tide_node_builder_finish(b, err);
        st = node ? TIDE_OK : tide_error_code(err);
    }
    if (st == TIDE_OK) {
        tide_session *s = tide_session_new(engine, g, NULL, err);
        tide_output fetches[8];
        for (int i = 0; i < n_out; i++)
            fetches[i] = (tide_output){node, i};
        st = s ? tide_session_run(s, NULL, feeds, n, fetches, n_out, outs, NULL, 0, NULL, err) : tide_error_code(err);
        const char *d = tide_node_assigned_device(node);
        snprintf(placed, placed_size, "%s", d ? d : "(not placed)");
        tide_session_free(s);
    }
    tide_graph_free(g);
    return st;
}

/* op on the device and on the CPU, outputs compared within rtol + atol. */
static void compare_impl(const char *op, tide_tensor **in, int n, tide_attrs *attrs, int n_out, double rtol,
                         double atol, const char *file, int line)
{
    tide_tensor *dev[8] = {0}, *cpu[8] = {0};
    char placed[256], cpu_placed[256];
    tide_error *err = tide_error_new();
    tide_status st = run_on(device, op, in, n, attrs, dev, n_out, placed, sizeof placed, err);
    if (st != TIDE_OK)
        fprintf(stderr, "%s:%d: %s on %s failed: %s\n", file, line, op, device, tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_status cst = run_on("/cpu:0", op, in, n, attrs, cpu, n_out, cpu_placed, sizeof cpu_placed, err);
    CU_ASSERT_EQUAL(cst, TIDE_OK);
    if (st == TIDE_OK) {
        char type[8];
        snprintf(type, sizeof type, "%.3s", device + 1); /* "gpu" of "/gpu:0", "sim" of "/sim:0" */
        bool there = strstr(placed, type) != NULL;
        if (!there)
            fprintf(stderr, "%s:%d: %s ran on %s, not %s (no kernel there?)\n", file, line, op, placed, device);
        CU_ASSERT(there);
    }
    if (st == TIDE_OK && cst == TIDE_OK)
        for (int i = 0; i < n_out; i++) {
            if (getenv("TIDE_TEST_VERBOSE"))
                fprintf(stderr, "%s:%d: %s output %d\n", file, line, op, i);
            th_assert_close_impl(dev[i], cpu[i], rtol, atol, file, line);
        }
    for (int i = 0; i < n_out; i++) {
        tide_tensor_release(dev[i]);
        tide_tensor_release(cpu[i]);
    }
    for (int i = 0; i < n; i++)
        tide_tensor_release(in[i]);
    tide_attrs_free(attrs);
    tide_error_free(err);
}
#define COMPARE(op, in, attrs, n_out, rtol, atol) \
    compare_impl(op, in, (int)(sizeof in / sizeof in[0]), attrs, n_out, rtol, atol, __FILE__, __LINE__)

/* op on the device must fail with code and a message containing needle. */
static void fails_impl(const char *op, tide_tensor **in, int n, tide_attrs *attrs, tide_status code,
                       const char *needle, const char *file, int line)
{
    tide_tensor *out[4] = {0};
    char placed[256];
    tide_error *err = tide_error_new();
    tide_status st = run_on(device, op, in, n, attrs, out, 1, placed, sizeof placed, err);
    bool ok = st == code && strstr(tide_error_message(err), needle);
    if (!ok)
        fprintf(stderr, "%s:%d: %s on %s: status %d, message '%s'; expected %d with '%s'\n", file, line, op, device,
                st, tide_error_message(err), code, needle);
    CU_ASSERT(ok);
    tide_tensor_release(out[0]);
    for (int i = 0; i < n; i++)
        tide_tensor_release(in[i]);
    tide_attrs_free(attrs);
    tide_error_free(err);
}
#define FAILS(op, in, attrs, code, needle) \
    fails_impl(op, in, (int)(sizeof in / sizeof in[0]), attrs, code, needle, __FILE__, __LINE__)

static tide_attrs *attrs_of(const char *bools, bool value)
{
    tide_attrs *a = tide_attrs_new();
    if (bools)
        tide_attrs_set_bool(a, bools, value);
    return a;
}

/* ---------------------------------------------------------------- element-wise */

typedef struct binary_case {
    const char *op;
    double lo, hi; /* both inputs */
    double rtol;
} binary_case;

static const binary_case binaries[] = {
    {"Add", -4, 4, 0},        {"AddV2", -4, 4, 0},    {"Sub", -4, 4, 0},       {"Mul", -4, 4, 0},
    {"Div", 0.5, 4, 1e-6},    {"RealDiv", 0.5, 4, 1e-6}, {"Maximum", -4, 4, 0}, {"Minimum", -4, 4, 0},
    {"SquaredDifference", -4, 4, 1e-6}, {"Pow", 0.5, 2, 2e-5}, {"DivNoNan", 0.5, 4, 1e-6},
    {"ReluGrad", -4, 4, 0},   {"SigmoidGrad", 0.1, 0.9, 1e-6}, {"TanhGrad", -0.9, 0.9, 1e-6},
    {"SqrtGrad", 0.5, 4, 1e-6}, {"RsqrtGrad", 0.5, 4, 1e-6}, {"ReciprocalGrad", 0.5, 4, 1e-6},
};

static void test_binary(void)
{
    for (size_t i = 0; i < sizeof binaries / sizeof binaries[0]; i++) {
        const binary_case *c = &binaries[i];
        bool grad = strstr(c->op, "Grad") != NULL; /* the gradient ops take equal shapes */
        tide_tensor *same[] = {U(c->lo, c->hi, 1000), U(c->lo, c->hi, 1000)};
        COMPARE(c->op, same, NULL, 1, c->rtol, 1e-7);
        if (grad)
            continue;
        tide_tensor *rows[] = {U(c->lo, c->hi, 64, 128), U(c->lo, c->hi, 128)};
        COMPARE(c->op, rows, NULL, 1, c->rtol, 1e-7);
        tide_tensor *both[] = {U(c->lo, c->hi, 3, 1, 5), U(c->lo, c->hi, 4, 1)};
        COMPARE(c->op, both, NULL, 1, c->rtol, 1e-7);
        tide_tensor *scalar[] = {SCALAR((float)((c->lo + c->hi) / 2)), U(c->lo, c->hi, 7, 3)};
        COMPARE(c->op, scalar, NULL, 1, c->rtol, 1e-7);
    }
    tide_tensor *bad[] = {U(-1, 1, 3, 4), U(-1, 1, 5)};
    FAILS("Add", bad, NULL, TIDE_INVALID_ARGUMENT, "[3, 4]");
}

typedef struct unary_case {
    const char *op;
    double lo, hi;
    double rtol;
} unary_case;

static const unary_case unaries[] = {
    {"Neg", -4, 4, 0},        {"Abs", -4, 4, 0},         {"Sign", -4, 4, 0},      {"Square", -4, 4, 0},
    {"Reciprocal", 0.5, 4, 1e-6}, {"Sqrt", 0, 9, 1e-6},  {"Rsqrt", 0.5, 9, 2e-5}, {"Exp", -8, 8, 2e-5},
    {"Log", 0.01, 9, 2e-5},   {"Log1p", -0.5, 9, 2e-5},  {"Tanh", -4, 4, 2e-5},   {"Sigmoid", -8, 8, 2e-5},
    {"Relu", -4, 4, 0},       {"Floor", -4, 4, 0},       {"Ceil", -4, 4, 0},      {"Sin", -4, 4, 2e-5},
    {"Cos", -4, 4, 2e-5},     {"Softplus", -8, 8, 2e-5},
};

static void test_unary(void)
{
    for (size_t i = 0; i < sizeof unaries / sizeof unaries[0]; i++) {
        tide_tensor *in[] = {U(unaries[i].lo, unaries[i].hi, 33, 31)};
        COMPARE(unaries[i].op, in, NULL, 1, unaries[i].rtol, 1e-6);
    }
    tide_tensor *bias[] = {U(-2, 2, 32, 10), U(-2, 2, 10)};
    COMPARE("BiasAdd", bias, NULL, 1, 0, 0);
    tide_tensor *bias4[] = {U(-2, 2, 2, 5, 5, 3), U(-2, 2, 3)};
    COMPARE("BiasAdd", bias4, NULL, 1, 0, 0);
}

/* ---------------------------------------------------------------- reductions */

static void test_reductions(void)
{
    static const char *const ops[] = {"Sum", "Mean", "Max", "Min"};
    for (size_t o = 0; o < 4; o++) {
        for (int keep = 0; keep < 2; keep++) {
            tide_tensor *a0[] = {U(-2, 2, 4, 5, 6), I32(0)};
            COMPARE(ops[o], a0, attrs_of("keep_dims", keep), 1, 1e-6, 1e-6);
            tide_tensor *a02[] = {U(-2, 2, 4, 5, 6), I32(0, -1)};
            COMPARE(ops[o], a02, attrs_of("keep_dims", keep), 1, 1e-6, 1e-6);
            tide_tensor *all[] = {U(-2, 2, 4, 5, 6), I32(0, 1, 2)};
            COMPARE(ops[o], all, attrs_of("keep_dims", keep), 1, 1e-6, 1e-6);
        }
        tide_tensor *rows[] = {U(-2, 2, 1000, 300), I32(1)}; /* a block per output */
        COMPARE(ops[o], rows, NULL, 1, 1e-6, 1e-5);
        tide_tensor *cols[] = {U(-2, 2, 1000, 300), I32(0)};
        COMPARE(ops[o], cols, NULL, 1, 1e-6, 1e-5);
        tide_tensor *none[] = {U(-2, 2, 3, 4), th_i32(1, TH_DIMS(0), NULL)};
        COMPARE(ops[o], none, NULL, 1, 0, 0);
    }
    tide_tensor *bias_grad[] = {U(-2, 2, 128, 10)};
    COMPARE("BiasAddGrad", bias_grad, NULL, 1, 1e-6, 1e-5);
    tide_tensor *bad[] = {U(-2, 2, 3, 4), I32(2)};
    FAILS("Sum", bad, NULL, TIDE_INVALID_ARGUMENT, "out of range");
}

/* ---------------------------------------------------------------- matrices */

static void test_matmul(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            tide_tensor *in[] = {ta ? U(-1, 1, 128, 64) : U(-1, 1, 64, 128), tb ? U(-1, 1, 32, 128) : U(-1, 1, 128, 32)};
            tide_attrs *a = tide_attrs_new();
            tide_attrs_set_bool(a, "transpose_a", ta);
            tide_attrs_set_bool(a, "transpose_b", tb);
            COMPARE("MatMul", in, a, 1, 1e-4, 128 * 1e-6);
        }
    tide_tensor *odd[] = {U(-1, 1, 513, 257), U(-1, 1, 257, 129)};
    COMPARE("MatMul", odd, NULL, 1, 1e-4, 257 * 1e-6);
    tide_tensor *empty_k[] = {U(-1, 1, 4, 0), U(-1, 1, 0, 3)};
    COMPARE("MatMul", empty_k, NULL, 1, 0, 0);
    for (int adj = 0; adj < 4; adj++) {
        tide_tensor *in[] = {adj & 1 ? U(-1, 1, 3, 2, 5, 4) : U(-1, 1, 3, 2, 4, 5),
                             adj & 2 ? U(-1, 1, 3, 2, 6, 5) : U(-1, 1, 3, 2, 5, 6)};
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_bool(a, "adj_x", adj & 1);
        tide_attrs_set_bool(a, "adj_y", adj & 2);
        COMPARE("BatchMatMul", in, a, 1, 1e-5, 1e-5);
    }
    tide_tensor *bad[] = {U(-1, 1, 4, 5), U(-1, 1, 4, 5)};
    FAILS("MatMul", bad, NULL, TIDE_INVALID_ARGUMENT, "inner dimensions differ");
}

/* ---------------------------------------------------------------- softmax and cross-entropy */

static void test_softmax(void)
{
    tide_tensor *sm[] = {U(-5, 5, 32, 10)};
    COMPARE("Softmax", sm, NULL, 1, 2e-5, 1e-7);
    tide_tensor *wide[] = {U(-5, 5, 3, 4, 1000)};
    COMPARE("Softmax", wide, NULL, 1, 2e-5, 1e-8);
    tide_tensor *lsm[] = {U(-5, 5, 32, 10)};
    COMPARE("LogSoftmax", lsm, NULL, 1, 2e-5, 1e-6);
    tide_tensor *labels = U(0, 1, 32, 10);
    tide_tensor *xent[] = {U(-5, 5, 32, 10), labels};
    COMPARE("SoftmaxCrossEntropyWithLogits", xent, NULL, 2, 2e-5, 1e-6);
    tide_tensor *sparse[] = {U(-5, 5, 32, 10), I32(0, 9, 3, 4, 5, 6, 7, 8, 1, 2, 0, 9, 3, 4, 5, 6, 7, 8, 1, 2, 0, 9, 3,
                                                    4, 5, 6, 7, 8, 1, 2, 5, 5)};
    COMPARE("SparseSoftmaxCrossEntropyWithLogits", sparse, NULL, 2, 2e-5, 1e-6);
    tide_tensor *bad[] = {U(-5, 5, 3, 10), I32(0, 10, 3)};
    FAILS("SparseSoftmaxCrossEntropyWithLogits", bad, NULL, TIDE_INVALID_ARGUMENT, "label 10 of row 1 is outside [0, 10)");
}

/* ---------------------------------------------------------------- convolutions and pooling */

static tide_attrs *conv_attrs(int stride, const char *padding, int dilation)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", TH_DIMS(1, stride, stride, 1), 4);
    tide_attrs_set_int_list(a, "dilations", TH_DIMS(1, dilation, dilation, 1), 4);
    tide_attrs_set_string(a, "padding", padding);
    return a;
}

static tide_attrs *pool_attrs(int k, int stride, const char *padding)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "ksize", TH_DIMS(1, k, k, 1), 4);
    tide_attrs_set_int_list(a, "strides", TH_DIMS(1, stride, stride, 1), 4);
    tide_attrs_set_string(a, "padding", padding);
    return a;
}

static void test_conv(void)
{
    static const struct {
        int stride, dilation;
        const char *padding;
    } shapes[] = {{1, 1, "SAME"}, {1, 1, "VALID"}, {2, 1, "VALID"}, {1, 2, "SAME"}, {3, 1, "SAME"}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int s = shapes[i].stride, d = shapes[i].dilation;
        const char *p = shapes[i].padding;
        tide_tensor *fwd[] = {U(-1, 1, 2, 9, 9, 3), U(-1, 1, 3, 3, 3, 4)};
        COMPARE("Conv2D", fwd, conv_attrs(s, p, d), 1, 1e-4, 27 * 1e-6);
        /* the output's size for these geometries: SAME ceil(9 / s); VALID (9 - 3) / s + 1 */
        int64_t out = strcmp(p, "SAME") == 0 ? (9 + s - 1) / s : (9 - (3 - 1) * d - 1) / s + 1;
        tide_tensor *bin[] = {I32(2, 9, 9, 3), U(-1, 1, 3, 3, 3, 4), U(-1, 1, 2, out, out, 4)};
        COMPARE("Conv2DBackpropInput", bin, conv_attrs(s, p, d), 1, 1e-4, 36 * 1e-6);
        tide_tensor *bf[] = {U(-1, 1, 2, 9, 9, 3), I32(3, 3, 3, 4), U(-1, 1, 2, out, out, 4)};
        COMPARE("Conv2DBackpropFilter", bf, conv_attrs(s, p, d), 1, 1e-4, 2 * out * out * 1e-6);
    }
    /* padding cuDNN cannot place evenly, padded explicitly on the GPU: SAME with stride 2 over 8 (a
     * total of 1: none before, 1 after), SAME with a 4 x 4 window over 9 (1 before, 2 after), and
     * EXPLICIT (1, 2) x (2, 0) */
    static const struct {
        int64_t size, k, stride, out;
        const char *padding;
    } uneven[] = {{8, 3, 2, 4, "SAME"}, {9, 4, 1, 9, "SAME"}, {7, 3, 1, 8, "EXPLICIT"}};
    for (size_t i = 0; i < sizeof uneven / sizeof uneven[0]; i++) {
        int64_t n = uneven[i].size, k = uneven[i].k, o = uneven[i].out;
        bool expl = strcmp(uneven[i].padding, "EXPLICIT") == 0;
        int64_t ow = expl ? 7 + 2 - 3 + 1 : o; /* EXPLICIT: height 7 + 1 + 2 - 3 + 1, width 7 + 2 + 0 - 3 + 1 */
        for (int what = 0; what < 3; what++) {
            tide_attrs *a = conv_attrs((int)uneven[i].stride, uneven[i].padding, 1);
            if (expl)
                tide_attrs_set_int_list(a, "explicit_paddings", TH_DIMS(0, 0, 1, 2, 2, 0, 0, 0), 8);
            if (what == 0) {
                tide_tensor *in[] = {U(-1, 1, 2, n, n, 3), uniform(-1, 1, 4, TH_DIMS(k, k, 3, 4))};
                COMPARE("Conv2D", in, a, 1, 1e-4, (double)(k * k * 3) * 1e-6);
            } else if (what == 1) {
                tide_tensor *in[] = {th_i32(1, TH_DIMS(4), (const int32_t[]){2, (int32_t)n, (int32_t)n, 3}),
                                     uniform(-1, 1, 4, TH_DIMS(k, k, 3, 4)), uniform(-1, 1, 4, TH_DIMS(2, o, ow, 4))};
                COMPARE("Conv2DBackpropInput", in, a, 1, 1e-4, (double)(k * k * 4) * 1e-6);
            } else {
                tide_tensor *in[] = {U(-1, 1, 2, n, n, 3),
                                     th_i32(1, TH_DIMS(4), (const int32_t[]){(int32_t)k, (int32_t)k, 3, 4}),
                                     uniform(-1, 1, 4, TH_DIMS(2, o, ow, 4))};
                COMPARE("Conv2DBackpropFilter", in, a, 1, 1e-4, (double)(2 * o * ow) * 1e-6);
            }
        }
    }
}

/* MaxPool, AvgPool and their gradients over 2 x 8 x 8 x 3, cuDNN's where its even padding fits, pool.cu's
 * direct kernels where it does not (the CPU's rules and order: exact for the maxima, 1e-6 for averages). */
static void test_pool(void)
{
    static const struct {
        int k, stride;
        const char *padding;
    } pools[] = {{2, 2, "VALID"}, {3, 1, "SAME"}, {3, 2, "VALID"},
                 /* padding cuDNN cannot place evenly (pool.cu's direct kernels): 0 before and 1 after; 1 and 2 */
                 {3, 2, "SAME"}, {4, 1, "SAME"}};
    for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
        int k = pools[i].k, s = pools[i].stride;
        const char *p = pools[i].padding;
        int64_t out = strcmp(p, "SAME") == 0 ? (8 + s - 1) / s : (8 - k) / s + 1;
        tide_tensor *mp[] = {U(-1, 1, 2, 8, 8, 3)};
        COMPARE("MaxPool", mp, pool_attrs(k, s, p), 1, 0, 0);
        tide_tensor *ap[] = {U(-1, 1, 2, 8, 8, 3)};
        COMPARE("AvgPool", ap, pool_attrs(k, s, p), 1, 1e-6, 1e-7);
        tide_tensor *agrad[] = {I32(2, 8, 8, 3), U(-1, 1, 2, out, out, 3)};
        COMPARE("AvgPoolGrad", agrad, pool_attrs(k, s, p), 1, 1e-6, 1e-7);
        /* MaxPoolGrad needs the forward output: made on the CPU here */
        tide_tensor *x = U(-1, 1, 2, 8, 8, 3);
        tide_attrs *pa = pool_attrs(k, s, p);
        tide_tensor *y = th_run1("MaxPool", &x, 1, pa);
        tide_attrs_free(pa);
        tide_tensor *mgrad[] = {x, y, U(-1, 1, 2, out, out, 3)};
        COMPARE("MaxPoolGrad", mgrad, pool_attrs(k, s, p), 1, 0, 0);
    }
}

/* ---------------------------------------------------------------- batch normalisation */

static tide_attrs *bn_attrs(bool training, double epsilon)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "is_training", training);
    tide_attrs_set_float(a, "epsilon", epsilon);
    return a;
}

/* The forward ops (training and inference, rows 1 and many) and the gradients, against the CPU's
 * (statistics in double there, float32 in cuDNN: 1e-4 relative, and for the sums over rows 1e-5 per
 * row absolute). */
static void test_batch_norm(void)
{
    static const char *const fwd[] = {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"};
    static const char *const grad[] = {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"};
    for (int v = 0; v < 3; v++) {
        int n_out = v == 2 ? 6 : 5;
        tide_tensor *train4[] = {U(-2, 3, 4, 5, 5, 3), U(0.5, 2, 3), U(-1, 1, 3), th_f32(1, TH_DIMS(0), NULL),
                                 th_f32(1, TH_DIMS(0), NULL)};
        COMPARE(fwd[v], train4, bn_attrs(true, 1e-3), n_out, 1e-4, 1e-5);
        tide_tensor *train2[] = {U(-2, 3, 300, 70), U(0.5, 2, 70), U(-1, 1, 70), U(-1, 1, 70), U(0.5, 1, 70)};
        COMPARE(fwd[v], train2, bn_attrs(true, 1e-4), n_out, 1e-4, 1e-5);
        tide_tensor *one_row[] = {U(-2, 3, 1, 6), U(0.5, 2, 6), U(-1, 1, 6), th_f32(1, TH_DIMS(0), NULL),
                                  th_f32(1, TH_DIMS(0), NULL)};
        COMPARE(fwd[v], one_row, bn_attrs(true, 1e-3), n_out, 1e-5, 1e-6);
        tide_tensor *infer[] = {U(-2, 3, 2, 4, 4, 5), U(0.5, 2, 5), U(-1, 1, 5), U(-1, 1, 5), U(0.2, 2, 5)};
        COMPARE(fwd[v], infer, bn_attrs(false, 1e-3), n_out, 1e-5, 1e-6);
        for (int training = 0; training < 2; training++) {
            int extra = v == 2 ? 1 : 0; /* V3's reserve_space_3 (empty, not read) */
            tide_tensor *g[6] = {U(-1, 1, 4, 6, 6, 8), U(-2, 3, 4, 6, 6, 8), U(0.5, 2, 8), U(-0.5, 0.5, 8),
                                 U(0.5, 2, 8), th_f32(1, TH_DIMS(0), NULL)};
            compare_impl(grad[v], g, 5 + extra, bn_attrs(training, 1e-3), 3, 1e-4, 144 * 1e-6, __FILE__, __LINE__);
            if (!extra)
                tide_tensor_release(g[5]);
        }
    }
    tide_tensor *bad[] = {U(-1, 1, 4, 3), U(0.5, 2, 4), U(-1, 1, 3), th_f32(1, TH_DIMS(0), NULL),
                          th_f32(1, TH_DIMS(0), NULL)};
    FAILS("FusedBatchNorm", bad, bn_attrs(true, 1e-3), TIDE_INVALID_ARGUMENT, "scale");
}

/* ---------------------------------------------------------------- data movement, casts, fills */

static void test_data(void)
{
    tide_tensor *to_int[] = {U(-1e10, 1e10, 100)};
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", TIDE_INT32);
    COMPARE("Cast", to_int, a, 1, 0, 0);
    tide_tensor *to_i64[] = {U(-100, 100, 100)};
    a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", TIDE_INT64);
    COMPARE("Cast", to_i64, a, 1, 0, 0);
    tide_tensor *to_f[] = {I32(-7, 0, 3, 2147483647, -2147483647 - 1)};
    a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", TIDE_FLOAT32);
    COMPARE("Cast", to_f, a, 1, 0, 0);
    tide_tensor *fill[] = {I32(3, 4, 5), SCALAR(2.5f)};
    COMPARE("Fill", fill, NULL, 1, 0, 0);
    tide_tensor *zeros[] = {U(-1, 1, 6, 7)};
    COMPARE("ZerosLike", zeros, NULL, 1, 0, 0);
    tide_tensor *ones[] = {U(-1, 1, 6, 7)};
    COMPARE("OnesLike", ones, NULL, 1, 0, 0);
    tide_tensor *tr[] = {U(-1, 1, 2, 3, 4, 5), I32(3, 1, 0, 2)};
    COMPARE("Transpose", tr, NULL, 1, 0, 0);
    tide_tensor *tr2[] = {U(-1, 1, 300, 200), I32(1, 0)};
    COMPARE("Transpose", tr2, NULL, 1, 0, 0);
    tide_tensor *slice[] = {U(-1, 1, 5, 6, 7), I32(1, 0, 2), I32(3, -1, 4)};
    COMPARE("Slice", slice, NULL, 1, 0, 0);
    tide_tensor *concat[] = {U(-1, 1, 4, 2, 3), U(-1, 1, 4, 5, 3), U(-1, 1, 4, 1, 3), I32_SCALAR(1)};
    COMPARE("ConcatV2", concat, NULL, 1, 0, 0);
    tide_tensor *concat_last[] = {U(-1, 1, 4, 2), U(-1, 1, 4, 5), I32_SCALAR(-1)};
    COMPARE("ConcatV2", concat_last, NULL, 1, 0, 0);
    tide_tensor *gather[] = {U(-1, 1, 10, 4), I32(9, 0, 3, 3, 7), I32_SCALAR(0)};
    COMPARE("GatherV2", gather, NULL, 1, 0, 0);
    tide_tensor *gather1[] = {U(-1, 1, 3, 10, 4), th_i64(2, TH_DIMS(2, 2), (const int64_t[]){1, 9, 0, 2}),
                              I32_SCALAR(1)};
    COMPARE("GatherV2", gather1, NULL, 1, 0, 0);
    tide_tensor *bad[] = {U(-1, 1, 10, 4), I32(9, 10), I32_SCALAR(0)};
    FAILS("GatherV2", bad, NULL, TIDE_INVALID_ARGUMENT, "[0, 10)");
    tide_tensor *reshape[] = {U(-1, 1, 2, 3, 4), I32(-1, 4)};
    COMPARE("Reshape", reshape, NULL, 1, 0, 0);
    tide_tensor *shape[] = {U(-1, 1, 2, 3, 4)};
    a = tide_attrs_new();
    tide_attrs_set_type(a, "out_type", TIDE_INT64);
    COMPARE("Shape", shape, a, 1, 0, 0);
    tide_tensor *shape32[] = {U(-1, 1, 5, 1)};
    COMPARE("Shape", shape32, NULL, 1, 0, 0);
    tide_tensor *bad_reshape[] = {U(-1, 1, 2, 3), I32(4, -1)};
    FAILS("Reshape", bad_reshape, NULL, TIDE_INVALID_ARGUMENT, "reshape");
}

/* StridedSlice's spec with its masks (begin, end, ellipsis, new axis, shrink axis). */
static tide_attrs *ss_attrs(int begin_mask, int end_mask, int ellipsis, int new_axis, int shrink)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "begin_mask", begin_mask);
    tide_attrs_set_int(a, "end_mask", end_mask);
    tide_attrs_set_int(a, "ellipsis_mask", ellipsis);
    tide_attrs_set_int(a, "new_axis_mask", new_axis);
    tide_attrs_set_int(a, "shrink_axis_mask", shrink);
    return a;
}

static tide_tensor *ints32(int rank, const int64_t *dims)
{
    tide_shape s = tide_shape_make(rank, dims);
    int64_t n = tide_shape_num_elements(&s);
    int32_t *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (int32_t)th_rand(-1000, 1000);
    tide_tensor *t = th_i32(rank, dims, v);
    free(v);
    return t;
}
#define INTS(...) ints32((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), TH_DIMS(__VA_ARGS__))

/* The data movement added for the examples and the padded convolutions: StridedSlice, Tile, Pad,
 * PadV2, BroadcastTo, ExpandDims, Squeeze, Size, and Transpose/Slice/ConcatV2/Reshape on int32
 * (every kernel here moves bytes: exact). */
static void test_movement(void)
{
    tide_tensor *ss[] = {U(-1, 1, 5, 6, 7), I32(1, 0, 2), I32(4, 6, 7), I32(1, 2, 1)};
    COMPARE("StridedSlice", ss, ss_attrs(0, 0, 0, 0, 0), 1, 0, 0);
    tide_tensor *ss_neg[] = {U(-1, 1, 5, 6, 7), I32(4, -1, 6), I32(0, 0, 0), I32(-1, -2, -3)};
    COMPARE("StridedSlice", ss_neg, ss_attrs(0, 2, 0, 0, 0), 1, 0, 0);
    tide_tensor *ss_masks[] = {U(-1, 1, 5, 6, 7), I32(0, 2, 0), I32(0, 3, 0), I32(1, 1, 1)};
    COMPARE("StridedSlice", ss_masks, ss_attrs(1, 1, 4, 0, 2), 1, 0, 0); /* [:, 2, ...] */
    tide_tensor *ss_new[] = {INTS(4, 6), I32(0, 1, 0), I32(0, 5, 0), I32(1, 2, 1)};
    COMPARE("StridedSlice", ss_new, ss_attrs(5, 5, 0, 1, 0), 1, 0, 0); /* [newaxis, 1:5:2, :] */
    tide_tensor *ss_empty[] = {U(-1, 1, 5, 6), I32(3, 0), I32(3, 6), I32(1, 1)};
    COMPARE("StridedSlice", ss_empty, ss_attrs(0, 0, 0, 0, 0), 1, 0, 0);
    tide_tensor *ss_bad[] = {U(-1, 1, 5, 6), I32(0, 0), I32(5, 6), I32(1, 0)};
    FAILS("StridedSlice", ss_bad, ss_attrs(0, 0, 0, 0, 0), TIDE_INVALID_ARGUMENT, "stride");

    tide_tensor *tile[] = {U(-1, 1, 2, 3), I32(2, 3)};
    COMPARE("Tile", tile, NULL, 1, 0, 0);
    tide_tensor *tile3[] = {INTS(2, 1, 3), I32(1, 4, 2)};
    COMPARE("Tile", tile3, NULL, 1, 0, 0);
    tide_tensor *tile_bad[] = {U(-1, 1, 2, 3), I32(2, -1)};
    FAILS("Tile", tile_bad, NULL, TIDE_INVALID_ARGUMENT, "negative");

    tide_tensor *pad[] = {U(-1, 1, 3, 4), th_i32(2, TH_DIMS(2, 2), (const int32_t[]){1, 2, 0, 3})};
    COMPARE("Pad", pad, NULL, 1, 0, 0);
    tide_tensor *pad4[] = {U(-1, 1, 2, 5, 5, 3), th_i64(2, TH_DIMS(4, 2), (const int64_t[]){0, 0, 0, 1, 1, 1, 0, 0})};
    COMPARE("Pad", pad4, NULL, 1, 0, 0);
    tide_tensor *pad_v2[] = {INTS(3, 4), th_i32(2, TH_DIMS(2, 2), (const int32_t[]){2, 0, 1, 1}),
                             th_i32(0, NULL, (const int32_t[]){7})};
    COMPARE("PadV2", pad_v2, NULL, 1, 0, 0);
    tide_tensor *pad_bad[] = {U(-1, 1, 3, 4), th_i32(2, TH_DIMS(2, 2), (const int32_t[]){1, -2, 0, 3})};
    FAILS("Pad", pad_bad, NULL, TIDE_INVALID_ARGUMENT, "negative");

    tide_tensor *bt[] = {U(-1, 1, 3, 1), I32(2, 3, 4)};
    COMPARE("BroadcastTo", bt, NULL, 1, 0, 0);
    tide_tensor *bt_view[] = {U(-1, 1, 3), I32(1, 3)};
    COMPARE("BroadcastTo", bt_view, NULL, 1, 0, 0);
    tide_tensor *bt_int[] = {INTS(1, 5), I32(4, 5)};
    COMPARE("BroadcastTo", bt_int, NULL, 1, 0, 0);
    tide_tensor *bt_bad[] = {U(-1, 1, 3, 2), I32(3, 4)};
    FAILS("BroadcastTo", bt_bad, NULL, TIDE_INVALID_ARGUMENT, "cannot broadcast");

    tide_tensor *ed[] = {U(-1, 1, 3, 4), I32_SCALAR(-1)};
    COMPARE("ExpandDims", ed, NULL, 1, 0, 0);
    tide_tensor *ed_bad[] = {U(-1, 1, 3, 4), I32_SCALAR(3)};
    FAILS("ExpandDims", ed_bad, NULL, TIDE_INVALID_ARGUMENT, "out of range");
    tide_tensor *sq[] = {U(-1, 1, 1, 3, 1, 4)};
    COMPARE("Squeeze", sq, NULL, 1, 0, 0);
    tide_tensor *sq_some[] = {INTS(1, 3, 1, 4)};
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "squeeze_dims", TH_DIMS(-2), 1);
    COMPARE("Squeeze", sq_some, a, 1, 0, 0);
    tide_tensor *sq_bad[] = {U(-1, 1, 1, 3)};
    a = tide_attrs_new();
    tide_attrs_set_int_list(a, "squeeze_dims", TH_DIMS(1), 1);
    FAILS("Squeeze", sq_bad, a, TIDE_INVALID_ARGUMENT, "not 1");
    tide_tensor *size[] = {U(-1, 1, 3, 4, 5)};
    COMPARE("Size", size, NULL, 1, 0, 0);
    tide_tensor *size64[] = {INTS(7)};
    a = tide_attrs_new();
    tide_attrs_set_type(a, "out_type", TIDE_INT64);
    COMPARE("Size", size64, a, 1, 0, 0);

    tide_tensor *tr[] = {INTS(2, 3, 4), I32(2, 0, 1)};
    COMPARE("Transpose", tr, NULL, 1, 0, 0);
    tide_tensor *sl[] = {INTS(5, 6), I32(1, 2), I32(3, -1)};
    COMPARE("Slice", sl, NULL, 1, 0, 0);
    tide_tensor *cc[] = {INTS(4, 2), INTS(4, 3), I32_SCALAR(1)};
    COMPARE("ConcatV2", cc, NULL, 1, 0, 0);
    tide_tensor *rs[] = {INTS(4, 6), I32(3, -1)};
    COMPARE("Reshape", rs, NULL, 1, 0, 0);
}

/* Const on the device: copied there on the first run and kept; three runs of one session give the
 * value each time (the second and third hand out the kept copy). */
static void test_const(void)
{
    static const tide_dtype types[] = {TIDE_FLOAT32, TIDE_INT32, TIDE_INT64};
    for (int t = 0; t < 3; t++) {
        tide_tensor *value = types[t] == TIDE_FLOAT32 ? U(-1, 1, 3, 5)
                             : types[t] == TIDE_INT32 ? INTS(4)
                                                      : th_i64(1, TH_DIMS(2), (const int64_t[]){1LL << 40, -3});
        tide_error *err = tide_error_new();
        tide_graph *g = tide_graph_new();
        tide_node_builder *b = tide_node_builder_new(g, "Const", "c");
        tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", types[t]);
        tide_node_builder_set_device(b, device);
        tide_node *c = tide_node_builder_finish(b, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        tide_session *s = tide_session_new(engine, g, NULL, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        for (int run = 0; run < 3; run++) {
            tide_tensor *out = NULL;
            tide_output fetch = {c, 0};
            tide_status st = tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err);
            if (st != TIDE_OK)
                fprintf(stderr, "Const on %s, run %d: %s\n", device, run, tide_error_message(err));
            CU_ASSERT_EQUAL(st, TIDE_OK);
            if (out)
                TH_ASSERT_CLOSE(out, value, 0, 0);
            tide_tensor_release(out);
        }
        const char *placed = tide_node_assigned_device(c);
        char type[8];
        snprintf(type, sizeof type, "%.3s", device + 1);
        CU_ASSERT(placed && strstr(placed, type));
        tide_session_free(s);
        tide_graph_free(g);
        tide_tensor_release(value);
        tide_error_free(err);
    }
}

static void test_random(void)
{
    static const char *const ops[] = {"RandomUniform", "RandomNormal"};
    for (int o = 0; o < 2; o++) {
        tide_tensor *in[] = {I32(33, 17)}; /* 561 values: the last block only partly used */
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_type(a, "dtype", TIDE_FLOAT32);
        tide_attrs_set_int(a, "seed", 42);
        tide_attrs_set_int(a, "seed2", 7);
        COMPARE(ops[o], in, a, 1, o ? 2e-5 : 0, o ? 1e-6 : 0);
    }
}

/* t cast to dt on the CPU (t released). */
static tide_tensor *as_dtype(tide_tensor *t, tide_dtype dt)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", dt);
    tide_tensor *out = th_run1("Cast", &t, 1, a);
    tide_attrs_free(a);
    tide_tensor_release(t);
    return out;
}

static tide_attrs *cast_to(tide_dtype dt)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", dt);
    return a;
}

/* float16 and bfloat16 through the element-wise template, the reductions and Cast (computed in float32
 * and rounded back on both devices: exact where float32 is; one rounding step of the type where CUDA's
 * math library may round float32 differently), and int32/int64 element-wise arithmetic (exact; integer
 * division truncating, by zero an error), Fill, OnesLike and GatherV2 of other dtypes. */
static void test_other_dtypes(void)
{
    static const tide_dtype halves[] = {TIDE_FLOAT16, TIDE_BFLOAT16};
    for (int h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        double ulp = dt == TIDE_FLOAT16 ? 1e-3 : 8e-3; /* one step of the type, relative */
        static const char *const exact2[] = {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "SquaredDifference"};
        for (int i = 0; i < 7; i++) {
            tide_tensor *in[] = {as_dtype(U(0.5, 4, 64, 33), dt), as_dtype(U(0.5, 4, 33), dt)};
            COMPARE(exact2[i], in, NULL, 1, 0, 0);
        }
        static const char *const exact1[] = {"Neg", "Abs", "Sign", "Square", "Sqrt", "Floor", "Ceil", "Reciprocal"};
        for (int i = 0; i < 8; i++) {
            bool positive = !strcmp(exact1[i], "Sqrt") || !strcmp(exact1[i], "Reciprocal");
            tide_tensor *in[] = {as_dtype(positive ? U(0.25, 4, 500) : U(-4, 4, 500), dt)};
            COMPARE(exact1[i], in, NULL, 1, 0, 0);
        }
        static const char *const math1[] = {"Exp", "Log", "Tanh", "Sigmoid", "Sin", "Cos", "Rsqrt"};
        for (int i = 0; i < 7; i++) {
            tide_tensor *in[] = {as_dtype(U(0.25, 4, 500), dt)};
            COMPARE(math1[i], in, NULL, 1, ulp, 1e-6);
        }
        static const char *const reductions[] = {"Sum", "Mean", "Max", "Min"};
        for (int i = 0; i < 4; i++) {
            tide_tensor *rows[] = {as_dtype(U(-2, 2, 200, 70), dt), I32(1)};
            COMPARE(reductions[i], rows, NULL, 1, 0, 0);
            tide_tensor *cols[] = {as_dtype(U(-2, 2, 200, 70), dt), I32(0)};
            COMPARE(reductions[i], cols, NULL, 1, 0, 0);
        }
        tide_tensor *to_half[] = {U(-70000, 70000, 1000)}; /* beyond float16's range: inf */
        COMPARE("Cast", to_half, cast_to(dt), 1, 0, 0);
        tide_tensor *tiny[] = {U(-1e-6, 1e-6, 1000)}; /* float16's subnormals */
        COMPARE("Cast", tiny, cast_to(dt), 1, 0, 0);
        tide_tensor *from_half[] = {as_dtype(U(-1000, 1000, 300), dt)};
        COMPARE("Cast", from_half, cast_to(TIDE_FLOAT32), 1, 0, 0);
        tide_tensor *half_to_int[] = {as_dtype(U(-1000, 1000, 300), dt)};
        COMPARE("Cast", half_to_int, cast_to(TIDE_INT32), 1, 0, 0);
        tide_tensor *int_to_half[] = {th_i64(1, TH_DIMS(5), (const int64_t[]){2049, -2051, 65519, 65520,
                                                                             (1LL << 53) + 3})};
        COMPARE("Cast", int_to_half, cast_to(dt), 1, 0, 0);
        tide_tensor *ones[] = {as_dtype(U(-1, 1, 9), dt)};
        COMPARE("OnesLike", ones, NULL, 1, 0, 0);
    }
    tide_tensor *f16_to_bf16[] = {as_dtype(U(-100, 100, 300), TIDE_FLOAT16)};
    COMPARE("Cast", f16_to_bf16, cast_to(TIDE_BFLOAT16), 1, 0, 0);

    static const char *const ints2[] = {"Add", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "Div"};
    for (int i = 0; i < 7; i++) {
        tide_tensor *in32[] = {INTS(40, 7), I32(3, -2, 7, 1, -1, 5, 100)};
        COMPARE(ints2[i], in32, NULL, 1, 0, 0);
        tide_tensor *in64[] = {th_i64(1, TH_DIMS(4), (const int64_t[]){INT64_MAX, INT64_MIN, -7, 1LL << 40}),
                               th_i64(0, NULL, (const int64_t[]){-1})}; /* wraps: MAX + -1, MIN * -1, MIN / -1 */
        COMPARE(ints2[i], in64, NULL, 1, 0, 0);
    }
    static const char *const ints1[] = {"Neg", "Abs", "Sign", "Square"};
    for (int i = 0; i < 4; i++) {
        tide_tensor *in[] = {th_i32(1, TH_DIMS(5), (const int32_t[]){INT32_MIN, -5, 0, 7, 50000})};
        COMPARE(ints1[i], in, NULL, 1, 0, 0);
    }
    tide_tensor *div0[] = {INTS(6), I32(1, 2, 0, 4, 5, 6)};
    FAILS("Div", div0, NULL, TIDE_INVALID_ARGUMENT, "division by zero");
    tide_tensor *cast_wrap[] = {th_i64(1, TH_DIMS(3), (const int64_t[]){(1LL << 33) + 5, -1, INT64_MIN})};
    COMPARE("Cast", cast_wrap, cast_to(TIDE_INT32), 1, 0, 0);
    tide_tensor *fill[] = {I32(3, 4), th_i64(0, NULL, (const int64_t[]){-(1LL << 40)})};
    COMPARE("Fill", fill, NULL, 1, 0, 0);
    tide_tensor *ones_int[] = {INTS(3, 3)};
    COMPARE("OnesLike", ones_int, NULL, 1, 0, 0);
    tide_tensor *zeros_int[] = {INTS(3, 3)};
    COMPARE("ZerosLike", zeros_int, NULL, 1, 0, 0);
    tide_tensor *gather[] = {th_i64(2, TH_DIMS(4, 2), (const int64_t[]){1, 2, 3, 4, 5, 6, 7, 8}), I32(3, 0, 0),
                             I32_SCALAR(0)};
    COMPARE("GatherV2", gather, NULL, 1, 0, 0);
}

/* ---------------------------------------------------------------- float16 and bfloat16 products */

/* MatMul, BatchMatMul and the convolutions in float16 and bfloat16: cuBLAS's GemmEx and cuDNN's half
 * data with float32 accumulation against the CPU's float32 kernels rounded once. The float32 sums
 * differ by their order (K 1e-6); each side rounds once: one step of the type relative (2^-10,
 * 2^-7). The convolutions include one that cuDNN cannot pad evenly (2-byte explicit padding and crop). */
static void test_half_products(void)
{
    static const tide_dtype halves[] = {TIDE_FLOAT16, TIDE_BFLOAT16};
    for (int h = 0; h < 2; h++) {
        tide_dtype dt = halves[h];
        double step = dt == TIDE_FLOAT16 ? 1e-3 : 8e-3;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                tide_tensor *in[] = {as_dtype(ta ? U(-1, 1, 128, 64) : U(-1, 1, 64, 128), dt),
                                     as_dtype(tb ? U(-1, 1, 32, 128) : U(-1, 1, 128, 32), dt)};
                tide_attrs *a = tide_attrs_new();
                tide_attrs_set_bool(a, "transpose_a", ta);
                tide_attrs_set_bool(a, "transpose_b", tb);
                COMPARE("MatMul", in, a, 1, step, 128 * 1e-6 + 1e-6);
            }
        tide_tensor *bmm[] = {as_dtype(U(-1, 1, 3, 2, 4, 40), dt), as_dtype(U(-1, 1, 3, 2, 40, 6), dt)};
        COMPARE("BatchMatMul", bmm, NULL, 1, step, 40 * 1e-6 + 1e-6);
        static const struct {
            int64_t size, stride, out;
            const char *padding;
        } geo[] = {{9, 1, 9, "SAME"}, {8, 2, 4, "SAME"}}; /* the second: padding 0 before, 1 after */
        for (size_t i = 0; i < sizeof geo / sizeof geo[0]; i++) {
            int64_t n = geo[i].size, o = geo[i].out;
            int s = (int)geo[i].stride;
            tide_tensor *fwd[] = {as_dtype(U(-1, 1, 2, n, n, 8), dt), as_dtype(U(-1, 1, 3, 3, 8, 16), dt)};
            COMPARE("Conv2D", fwd, conv_attrs(s, geo[i].padding, 1), 1, step, 72 * 1e-6 + 1e-6);
            tide_tensor *bin[] = {th_i32(1, TH_DIMS(4), (const int32_t[]){2, (int32_t)n, (int32_t)n, 8}),
                                  as_dtype(U(-1, 1, 3, 3, 8, 16), dt), as_dtype(uniform(-1, 1, 4, TH_DIMS(2, o, o, 16)), dt)};
            COMPARE("Conv2DBackpropInput", bin, conv_attrs(s, geo[i].padding, 1), 1, step, 144 * 1e-6 + 1e-6);
            tide_tensor *bf[] = {as_dtype(U(-1, 1, 2, n, n, 8), dt), I32(3, 3, 8, 16),
                                 as_dtype(uniform(-1, 1, 4, TH_DIMS(2, o, o, 16)), dt)};
            COMPARE("Conv2DBackpropFilter", bf, conv_attrs(s, geo[i].padding, 1), 1, step,
                    (double)(2 * o * o) * 1e-6 + 1e-6);
        }
    }
}

/* ---------------------------------------------------------------- optimizers on variables */

/* var (and Adam's m, v) initialised from fed values, one update on `where`; the new values fetched. */
static tide_status run_update(const char *where, bool adam, tide_tensor *const *values, tide_tensor *grad,
                              tide_tensor **out, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, where);
    int nvars = adam ? 3 : 1;
    tide_node *vars[3];
    tide_feed feeds[4];
    tide_status st = TIDE_OK;
    for (int k = 0; k < nvars && st == TIDE_OK; k++) {
        char name[32]; /* variables live in the engine: one name per device and kind */
        snprintf(name, sizeof name, "%s_%.3s_v%d", adam ? "adam" : "sgd", where + 1, k);
        tide_node_builder *p = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(p), "dtype", TIDE_FLOAT32);
        tide_attrs_set_shape(tide_node_builder_attrs(p), "shape", tide_tensor_shape(values[k]));
        tide_node_builder_set_device(p, "/cpu:0");
        tide_node *ph = tide_node_builder_finish(p, err);
        vars[k] = ph ? tide_variable_new(g, name, (tide_output){ph, 0}, true, err) : NULL;
        st = vars[k] ? TIDE_OK : tide_error_code(err);
        feeds[k] = (tide_feed){{ph, 0}, values[k]};
    }
    tide_node *gp = NULL;
    if (st == TIDE_OK) {
        tide_node_builder *p = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(p), "dtype", TIDE_FLOAT32);
        tide_node_builder_set_device(p, "/cpu:0");
        gp = tide_node_builder_finish(p, err);
        feeds[nvars] = (tide_feed){{gp, 0}, grad};
        st = gp ? TIDE_OK : tide_error_code(err);
    }
    tide_node *update = NULL;
    if (st == TIDE_OK) {
        static const float adam_h[] = {0.9f, 0.999f, 0.01f, 0.9f, 0.999f, 1e-7f}; /* b1^t, b2^t, lr, b1, b2, eps */
        tide_output ins[10];
        int n = 0;
        for (int k = 0; k < nvars; k++)
            ins[n++] = (tide_output){vars[k], 0};
        for (int h = 0; h < (adam ? 6 : 1); h++) {
            tide_tensor *v = th_f32(0, NULL, adam ? &adam_h[h] : (const float[]){0.1f});
            tide_node_builder *c = tide_node_builder_new(g, "Const", NULL);
            tide_attrs_set_tensor(tide_node_builder_attrs(c), "value", v);
            tide_attrs_set_type(tide_node_builder_attrs(c), "dtype", TIDE_FLOAT32);
            tide_node *cn = tide_node_builder_finish(c, err);
            tide_tensor_release(v);
            ins[n++] = (tide_output){cn, 0};
        }
        ins[n++] = (tide_output){gp, 0};
        tide_node_builder *b = tide_node_builder_new(g, adam ? "ApplyAdam" : "ApplyGradientDescent", "update");
        tide_node_builder_add_inputs_flat(b, ins, n);
        update = tide_node_builder_finish(b, err);
        st = update ? TIDE_OK : tide_error_code(err);
    }
    tide_node *init = st == TIDE_OK ? tide_global_variables_initializer(g, err) : NULL;
    tide_session *s = init ? tide_session_new(engine, g, NULL, err) : NULL;
    st = s ? tide_session_run(s, NULL, feeds, nvars, NULL, 0, NULL, &init, 1, NULL, err) : tide_error_code(err);
    if (st == TIDE_OK) {
        tide_output fetch[3];
        for (int k = 0; k < nvars; k++)
            fetch[k] = (tide_output){vars[k], 0};
        st = tide_session_run(s, NULL, &feeds[nvars], 1, NULL, 0, NULL, &update, 1, NULL, err);
        if (st == TIDE_OK)
            st = tide_session_run(s, NULL, NULL, 0, fetch, nvars, out, NULL, 0, NULL, err);
        const char *placed = tide_node_assigned_device(update);
        char type[8];
        snprintf(type, sizeof type, "%.3s", where + 1);
        if (st == TIDE_OK && (!placed || !strstr(placed, type)))
            st = tide_error_set(err, TIDE_INTERNAL, "the update ran on %s, not %s", placed ? placed : "?", where);
    }
    tide_session_free(s);
    tide_graph_pop_device(g);
    tide_graph_free(g);
    return st;
}

static void test_optimizers(void)
{
    for (int adam = 0; adam < 2; adam++) {
        tide_tensor *values[3] = {U(-1, 1, 20, 30), U(-1, 1, 20, 30), U(0, 1, 20, 30)};
        tide_tensor *grad = U(-1, 1, 20, 30), *dev[3] = {0}, *cpu[3] = {0};
        tide_error *err = tide_error_new();
        tide_status st = run_update(device, adam, values, grad, dev, err);
        if (st != TIDE_OK)
            fprintf(stderr, "%s on %s: %s\n", adam ? "ApplyAdam" : "ApplyGradientDescent", device, tide_error_message(err));
        CU_ASSERT_EQUAL(st, TIDE_OK);
        CU_ASSERT_EQUAL(run_update("/cpu:0", adam, values, grad, cpu, err), TIDE_OK);
        for (int k = 0; k < (adam ? 3 : 1); k++) {
            if (dev[k] && cpu[k])
                TH_ASSERT_CLOSE(dev[k], cpu[k], 1e-6, 1e-7);
            tide_tensor_release(dev[k]);
            tide_tensor_release(cpu[k]);
        }
        for (int k = 0; k < 3; k++)
            tide_tensor_release(values[k]);
        tide_tensor_release(grad);
        tide_error_free(err);
    }
}

/* ---------------------------------------------------------------- Assign, AssignAdd, AssignSub */

/* A variable of value's dtype initialised on `where` from a fed value (Assign there), then `op` (AssignAdd
 * or AssignSub) by delta twice: out[0] is the first update's output, which the caller then holds, so the
 * second update must copy on write; out[1] is the variable after it. */
static tide_status run_assign(const char *where, const char *op, tide_tensor *value, tide_tensor *delta,
                              tide_tensor **out, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, where);
    tide_node *ph[2];
    for (int k = 0; k < 2; k++) {
        tide_node_builder *p = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(p), "dtype", tide_tensor_dtype(value));
        tide_attrs_set_shape(tide_node_builder_attrs(p), "shape", tide_tensor_shape(value));
        tide_node_builder_set_device(p, "/cpu:0");
        ph[k] = tide_node_builder_finish(p, err);
    }
    char name[64]; /* variables live in the engine: one name per device, op and dtype */
    snprintf(name, sizeof name, "%s_%.3s_%s", op, where + 1, tide_dtype_name(tide_tensor_dtype(value)));
    tide_node *var = ph[0] && ph[1] ? tide_variable_new(g, name, (tide_output){ph[0], 0}, false, err) : NULL, *update = NULL;
    if (var) {
        tide_node_builder *b = tide_node_builder_new(g, op, "update");
        tide_node_builder_add_inputs_flat(b, (tide_output[]){{var, 0}, {ph[1], 0}}, 2);
        update = tide_node_builder_finish(b, err);
    }
    tide_node *init = update ? tide_global_variables_initializer(g, err) : NULL;
    tide_session *s = init ? tide_session_new(engine, g, NULL, err) : NULL;
    tide_status st = s ? tide_session_run(s, NULL, (tide_feed[]){{{ph[0], 0}, value}}, 1, NULL, 0, NULL, &init, 1, NULL, err)
                       : tide_error_code(err);
    tide_feed feed = {{ph[1], 0}, delta};
    if (st == TIDE_OK)
        st = tide_session_run(s, NULL, &feed, 1, &(tide_output){update, 0}, 1, &out[0], NULL, 0, NULL, err);
    if (st == TIDE_OK)
        st = tide_session_run(s, NULL, &feed, 1, NULL, 0, NULL, &update, 1, NULL, err);
    if (st == TIDE_OK)
        st = tide_session_run(s, NULL, NULL, 0, &(tide_output){var, 0}, 1, &out[1], NULL, 0, NULL, err);
    char init_name[80], type[8];
    snprintf(init_name, sizeof init_name, "%s/init", name);
    snprintf(type, sizeof type, "%.3s", where + 1);
    tide_node *assign = tide_graph_node(g, init_name);
    const char *placed[2] = {tide_node_assigned_device(update), assign ? tide_node_assigned_device(assign) : NULL};
    for (int k = 0; k < 2 && st == TIDE_OK; k++)
        if (!placed[k] || !strstr(placed[k], type))
            st = tide_error_set(err, TIDE_INTERNAL, "the %s ran on %s, not %s", k ? "initial Assign" : op,
                                placed[k] ? placed[k] : "?", where);
    tide_session_free(s);
    tide_graph_pop_device(g);
    tide_graph_free(g);
    return st;
}

/* Assign of every dtype the GPU updates (int64: a global step), AssignAdd and AssignSub in place and
 * copying on write, exact against the CPU (halves computed in float32 and rounded, integers wrapping). */
static void test_state_updates(void)
{
    static const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_INT32, TIDE_INT64};
    static const char *const ops[] = {"AssignAdd", "AssignSub"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int o = 0; o < 2; o++) {
            tide_dtype dt = types[t];
            tide_tensor *value, *delta;
            if (dt == TIDE_INT64) { /* wraps both ways */
                value = th_i64(1, TH_DIMS(4), (const int64_t[]){INT64_MAX, INT64_MIN, 7, -7});
                delta = th_i64(1, TH_DIMS(4), (const int64_t[]){1, 1, 1LL << 62, -(1LL << 62)});
            } else if (dt == TIDE_INT32) {
                value = th_i32(1, TH_DIMS(4), (const int32_t[]){INT32_MAX, INT32_MIN, 7, -7});
                delta = th_i32(1, TH_DIMS(4), (const int32_t[]){1, 1, 1 << 30, -(1 << 30)});
            } else {
                value = as_dtype(U(-4, 4, 30, 7), dt);
                delta = as_dtype(U(-4, 4, 30, 7), dt);
            }
            tide_tensor *dev[2] = {0}, *cpu[2] = {0};
            tide_error *err = tide_error_new();
            tide_status st = run_assign(device, ops[o], value, delta, dev, err);
            if (st != TIDE_OK)
                fprintf(stderr, "%s %s on %s: %s\n", ops[o], tide_dtype_name(dt), device, tide_error_message(err));
            CU_ASSERT_EQUAL(st, TIDE_OK);
            CU_ASSERT_EQUAL(run_assign("/cpu:0", ops[o], value, delta, cpu, err), TIDE_OK);
            for (int k = 0; k < 2; k++) {
                if (dev[k] && cpu[k])
                    TH_ASSERT_CLOSE(dev[k], cpu[k], 0, 0);
                tide_tensor_release(dev[k]);
                tide_tensor_release(cpu[k]);
            }
            tide_tensor_release(value);
            tide_tensor_release(delta);
            tide_error_free(err);
        }
}

/* ---------------------------------------------------------------- Dropout */

/* Dropout draws the CPU's uniforms with the CPU's seeds: y and mask exact; a bad rate fails on the device. */
static void test_dropout(void)
{
    static const float rates[] = {0.0f, 0.3f, 0.9f};
    for (int r = 0; r < 3; r++) {
        tide_tensor *in[] = {U(-2, 2, 37, 19), SCALAR(rates[r])}; /* 703 elements: a last block partly used */
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_int(a, "seed", 42);
        tide_attrs_set_int(a, "seed2", 7 + r);
        COMPARE("Dropout", in, a, 2, 0, 0);
    }
    tide_tensor *bad[] = {U(-2, 2, 5), SCALAR(1.5f)};
    FAILS("Dropout", bad, NULL, TIDE_INVALID_ARGUMENT, "rate must be in [0, 1)");
}

/* A node of g: op with inputs, on `where` (NULL: wherever placement puts it). */
static tide_node *node_on(tide_graph *g, const char *op, const char *name, tide_output *ins, int n, tide_attrs *attrs,
                          const char *where, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    tide_node_builder_add_inputs_flat(b, ins, n);
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    if (where)
        tide_node_builder_set_device(b, where);
    return tide_node_builder_finish(b, err);
}

/* Dropout's rate is a host-memory input of its kernel on the device (tide_kernel_spec.host_inputs): made
 * on the host — a constant (which placement then keeps on /cpu:0) or a fed value — it reaches the kernel
 * without a transfer (no _Recv of it in the traced step); made on the device (an Identity there) it stays
 * in device memory and the kernel reads it back. y and mask are the CPU's, bit for bit, every way. */
static void test_dropout_rate_on_host(void)
{
    tide_tensor *x = U(-2, 2, 37, 19), *cpu[2] = {0};
    tide_tensor *cpu_in[] = {tide_tensor_retain(x), SCALAR(0.3f)};
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "seed", 42);
    tide_attrs_set_int(a, "seed2", 9);
    char placed[256];
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(run_on("/cpu:0", "Dropout", cpu_in, 2, a, cpu, 2, placed, sizeof placed, err), TIDE_OK);
    for (int how = 0; how < 3; how++) { /* the rate: a constant, fed, made on the device */
        tide_graph *g = tide_graph_new();
        tide_node_builder *pb = tide_node_builder_new(g, "Placeholder", "x");
        tide_attrs_set_type(tide_node_builder_attrs(pb), "dtype", TIDE_FLOAT32);
        tide_node_builder_set_device(pb, "/cpu:0");
        tide_node *px = tide_node_builder_finish(pb, err);
        tide_tensor *rv = SCALAR(0.3f);
        tide_node *rate = NULL;
        if (how == 1) {
            tide_node_builder *rb = tide_node_builder_new(g, "Placeholder", "rate");
            tide_attrs_set_type(tide_node_builder_attrs(rb), "dtype", TIDE_FLOAT32);
            tide_node_builder_set_device(rb, "/cpu:0");
            rate = tide_node_builder_finish(rb, err);
        } else {
            tide_attrs *ca = tide_attrs_new();
            tide_attrs_set_tensor(ca, "value", rv);
            tide_attrs_set_type(ca, "dtype", TIDE_FLOAT32);
            rate = node_on(g, "Const", "rate", NULL, 0, ca, NULL, err);
            tide_attrs_free(ca);
            if (how == 2)
                rate = node_on(g, "Identity", "rate_on_device", (tide_output[]){{rate, 0}}, 1, NULL, device, err);
        }
        tide_node *drop = node_on(g, "Dropout", "drop", (tide_output[]){{px, 0}, {rate, 0}}, 2, a, device, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(drop);
        tide_session *s = tide_session_new(engine, g, NULL, err);
        tide_feed feeds[2] = {{{px, 0}, x}, {{rate, 0}, rv}};
        tide_output fetches[2] = {{drop, 0}, {drop, 1}};
        tide_tensor *got[2] = {0};
        tide_step_stats *stats = NULL;
        tide_run_options ro = {.trace = true};
        tide_status st = tide_session_run(s, &ro, feeds, how == 1 ? 2 : 1, fetches, 2, got, NULL, 0, &stats, err);
        if (st != TIDE_OK)
            fprintf(stderr, "Dropout on %s (rate %s): %s\n", device, how == 0 ? "constant" : how == 1 ? "fed" : "on the device",
                    tide_error_message(err));
        CU_ASSERT_EQUAL(st, TIDE_OK);
        int rate_copies = 0;
        for (int i = 0; i < tide_step_stats_count(stats); i++) {
            const char *name = tide_node_name(tide_step_stats_at(stats, i)->node);
            rate_copies += strncmp(name, "rate", 4) == 0 && strstr(name, "/_recv_on_") != NULL;
        }
        const char *drop_at = tide_node_assigned_device(drop), *rate_at = tide_node_assigned_device(rate);
        CU_ASSERT(drop_at && strstr(drop_at, device + 1 /* "gpu:0" */) != NULL);
        if (how < 2) /* made on the host: handed over uncopied */
            CU_ASSERT_EQUAL(rate_copies, 0);
        if (how == 0) /* a constant is evaluated on the host (a fed one is not placed: it does not run) */
            CU_ASSERT(rate_at && strstr(rate_at, "cpu:0") != NULL);
        for (int o = 0; st == TIDE_OK && o < 2; o++)
            th_assert_close_impl(got[o], cpu[o], 0, 0, __FILE__, __LINE__);
        for (int o = 0; o < 2; o++)
            tide_tensor_release(got[o]);
        tide_step_stats_free(stats);
        tide_tensor_release(rv);
        tide_session_free(s);
        tide_graph_free(g);
    }
    for (int o = 0; o < 2; o++)
        tide_tensor_release(cpu[o]);
    tide_tensor_release(x);
    for (int i = 0; i < 2; i++)
        tide_tensor_release(cpu_in[i]);
    tide_attrs_free(a);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- gradients on the device */

/* loss = SoftmaxCrossEntropy(Relu(x W + b) W2, labels) summed, built on `where`; *dxs gets d loss /
 * d (x, W, b, W2) evaluated there; with `shift` (>= 0), element shift of W is moved by h first. */
static tide_status network(const char *where, tide_tensor *const *in, int shift, float h, tide_tensor **grads,
                           double *loss_out, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_status st = TIDE_OK;
    tide_node *ph[5];
    tide_feed feeds[5];
    tide_tensor *w = NULL;
    for (int i = 0; i < 5 && st == TIDE_OK; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
        tide_node_builder_set_device(b, "/cpu:0");
        ph[i] = tide_node_builder_finish(b, err);
        st = ph[i] ? TIDE_OK : tide_error_code(err);
        tide_tensor *v = in[i];
        if (i == 1 && shift >= 0) {
            w = tide_tensor_copy(in[1], err);
            ((float *)tide_tensor_data(w))[shift] += h;
            v = w;
        }
        feeds[i] = (tide_feed){{ph[i], 0}, v};
    }
    tide_graph_push_device(g, where);
    tide_node *loss = NULL;
    if (st == TIDE_OK) {
        const char *ops[] = {"MatMul", "BiasAdd", "Relu", "MatMul", "SoftmaxCrossEntropyWithLogits", "Sum"};
        tide_output cur = {ph[0], 0};
        tide_tensor *axis = I32(0);
        tide_node *ax = NULL;
        {
            tide_node_builder *c = tide_node_builder_new(g, "Const", NULL);
            tide_attrs_set_tensor(tide_node_builder_attrs(c), "value", axis);
            tide_attrs_set_type(tide_node_builder_attrs(c), "dtype", TIDE_INT32);
            ax = tide_node_builder_finish(c, err);
        }
        tide_tensor_release(axis);
        tide_output second[] = {{ph[1], 0}, {ph[2], 0}, {NULL, 0}, {ph[3], 0}, {ph[4], 0}, {ax, 0}};
        for (int k = 0; k < 6 && st == TIDE_OK; k++) {
            tide_node_builder *b = tide_node_builder_new(g, ops[k], NULL);
            tide_output two[2] = {cur, second[k]};
            tide_node_builder_add_inputs_flat(b, two, second[k].node ? 2 : 1);
            tide_node *n = tide_node_builder_finish(b, err);
            st = n ? TIDE_OK : tide_error_code(err);
            cur = (tide_output){n, 0};
        }
        loss = cur.node;
    }
    tide_output dxs[4] = {{0}}, xs[4] = {{ph[0], 0}, {ph[1], 0}, {ph[2], 0}, {ph[3], 0}}, y = {loss, 0};
    if (st == TIDE_OK && grads)
        st = tide_gradients(g, &y, 1, xs, 4, NULL, dxs, err);
    tide_graph_pop_device(g);
    tide_session *s = st == TIDE_OK ? tide_session_new(engine, g, NULL, err) : NULL;
    if (s) {
        tide_output fetch[5] = {y, dxs[0], dxs[1], dxs[2], dxs[3]};
        tide_tensor *out[5] = {0};
        st = tide_session_run(s, NULL, feeds, 5, fetch, grads ? 5 : 1, out, NULL, 0, NULL, err);
        if (st == TIDE_OK) {
            *loss_out = tide_tensor_get_f64(out[0], 0);
            for (int i = 0; i < 4 && grads; i++)
                grads[i] = out[i + 1];
        }
        tide_tensor_release(out[0]);
        const char *placed = tide_node_assigned_device(loss);
        char type[8];
        snprintf(type, sizeof type, "%.3s", where + 1);
        if (st == TIDE_OK && (!placed || !strstr(placed, type)))
            st = tide_error_set(err, TIDE_INTERNAL, "the loss ran on %s, not %s", placed ? placed : "?", where);
        tide_session_free(s);
    } else if (st == TIDE_OK) {
        st = tide_error_code(err);
    }
    tide_tensor_release(w);
    tide_graph_free(g);
    return st;
}

static void test_gradients(void)
{
    tide_tensor *labels = U(0.1, 1, 16, 5); /* rows summing to 1: backprop is then the true gradient */
    float *l = tide_tensor_data(labels);
    for (int r = 0; r < 16; r++) {
        float sum = 0;
        for (int c = 0; c < 5; c++)
            sum += l[r * 5 + c];
        for (int c = 0; c < 5; c++)
            l[r * 5 + c] /= sum;
    }
    tide_tensor *in[5] = {U(-1, 1, 16, 12), U(-0.5, 0.5, 12, 8), U(-0.1, 0.1, 8), U(-0.5, 0.5, 8, 5), labels};
    tide_tensor *dev[4] = {0}, *cpu[4] = {0};
    double loss_dev = 0, loss_cpu = 0;
    tide_error *err = tide_error_new();
    tide_status st = network(device, in, -1, 0, dev, &loss_dev, err);
    if (st != TIDE_OK)
        fprintf(stderr, "gradients on %s: %s\n", device, tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    CU_ASSERT_EQUAL_FATAL(network("/cpu:0", in, -1, 0, cpu, &loss_cpu, err), TIDE_OK);
    CU_ASSERT(fabs(loss_dev - loss_cpu) <= 1e-5 * fabs(loss_cpu));
    for (int i = 0; i < 4; i++)
        TH_ASSERT_CLOSE(dev[i], cpu[i], 1e-4, 1e-6);
    /* d loss / d W against float32 central differences computed on the device (h = 1e-2: float32).
     * Moving W[r][c] by h moves the pre-activations z[i][c] = (x W + b)[i][c] by h x[i][r]: where that
     * crosses 0 the difference straddles a ReLU kink and measures no derivative, so such elements
     * (found on the host from the inputs) are skipped, and most must remain. */
    const float *sym = tide_tensor_data(dev[1]);
    const float *x = tide_tensor_data(in[0]), *w = tide_tensor_data(in[1]), *b = tide_tensor_data(in[2]);
    int bad = 0, checked = 0;
    for (int j = 0; j < 96; j += 7) {
        int r = j / 8, c = j % 8;
        bool kink = false;
        for (int i = 0; i < 16 && !kink; i++) {
            double z = b[c];
            for (int k = 0; k < 12; k++)
                z += (double)x[i * 12 + k] * w[k * 8 + c];
            kink = fabs(z) <= 1e-2 * fabs(x[i * 12 + r]) * 1.01;
        }
        if (kink)
            continue;
        checked++;
        double up = 0, down = 0;
        CU_ASSERT_EQUAL(network(device, in, j, 1e-2f, NULL, &up, err), TIDE_OK);
        CU_ASSERT_EQUAL(network(device, in, j, -1e-2f, NULL, &down, err), TIDE_OK);
        double num = (up - down) / 2e-2;
        if (fabs(num - sym[j]) > 2e-3 + 2e-2 * fabs(num)) {
            fprintf(stderr, "dW[%d]: symbolic %g, numeric %g on %s\n", j, sym[j], num, device);
            bad++;
        }
    }
    CU_ASSERT(checked >= 7); /* of 14 */
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < 4; i++) {
        tide_tensor_release(dev[i]);
        tide_tensor_release(cpu[i]);
    }
    for (int i = 0; i < 5; i++)
        tide_tensor_release(in[i]);
    tide_error_free(err);
}

int main(void)
{
    const char *want = getenv("TIDE_GPU_TEST_DEVICE");
    if (want && want[0])
        device = want;
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    if (strstr(device, "sim"))
        o.num_sim_devices = 1;
    engine = tide_engine_new(&o, NULL);
    bool found = false;
    for (int i = 0; engine && i < tide_engine_num_devices(engine); i++) {
        char name[64];
        tide_device_short_name(tide_engine_device_name(engine, i), name, sizeof name);
        found |= strcmp(name, device) == 0;
    }
    if (!found) {
        printf("skip: no %s (the CUDA device type found no GPU: no NVIDIA driver, runtime or device)\n", device);
        tide_engine_free(engine);
        return 77;
    }
    static const th_test tests[] = {TH_TEST(test_binary),    TH_TEST(test_unary),   TH_TEST(test_reductions),
                                    TH_TEST(test_matmul),    TH_TEST(test_softmax), TH_TEST(test_conv),
                                    TH_TEST(test_pool),
                                    TH_TEST(test_half_products), TH_TEST(test_batch_norm),
                                    TH_TEST(test_data),      TH_TEST(test_movement),
                                    TH_TEST(test_const),     TH_TEST(test_other_dtypes),
                                    TH_TEST(test_random),  TH_TEST(test_optimizers),
                                    TH_TEST(test_state_updates), TH_TEST(test_dropout),
                                    TH_TEST(test_dropout_rate_on_host),
                                    TH_TEST(test_gradients), TH_END};
    int rc = th_main("gpu_kernels", tests);
    tide_engine_free(engine);
    return rc;
}
