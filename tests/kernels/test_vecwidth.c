/* test_vecwidth.c — the loops that dispatch on the instruction set at run time (kernels/cpu/cpu_util.h:
 * portable, AVX2+FMA, AVX-512): the detection and its caps ($TIDE_CPU_ISA, tide_cpu_isa_limit), and
 * every vector path forced on and compared with the portable path on the same inputs: random data
 * mixed with edge values (NaN, +-inf, +-0, denormals, the limits of exp's range) at sizes that are not
 * multiples of the vector width: the element-wise ops, the softmaxes, the reductions and the
 * optimizer updates; and the random ops' streams. The variants compute the same operations in the same order (no
 * fused multiply-add), so results must be bit-identical (NaN equals NaN). Also the error of the
 * float32 exp, sigmoid and tanh against double-precision libm over the float range, in ulp.
 *
 * Tests that compare paths skip (th_skip) on a CPU without AVX2: there is nothing to compare. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/cpu/cpu_util.h"
#include "harness.h"

static const int64_t SIZES[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 100, 257, 1000, 4099};
#define NUM_SIZES (sizeof SIZES / sizeof SIZES[0])

/* Edge values first, then random values in [lo, hi). */
static const double EDGES[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, -1e-40, 1e-310, FLT_MIN,
                               FLT_MAX, -FLT_MAX, 88.72, 88.73, 89.0, -87.3, -103.0, -104.0, -110.0,
                               -200.0, 1e-4, -3e-4, 9.0, -9.5, 1.0, -1.0};
#define NUM_EDGES (sizeof EDGES / sizeof EDGES[0])

/* A deterministic pseudo-random double in [lo, hi): rng_reset makes the runs of one comparison see
 * the same inputs at every ISA. */
static uint64_t rng_state = 88172645463325252u;
static void rng_reset(void) { rng_state = 88172645463325252u; }
static double rng(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) * 0x1p-53;
}

static tide_tensor *edge_tensor(tide_dtype dt, int rank, const int64_t *dims, double lo, double hi, bool edges)
{
    int64_t n = rank == 1 ? dims[0] : dims[0] * dims[1];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = edges && i < (int64_t)NUM_EDGES ? EDGES[(i * 7) % NUM_EDGES] : rng(lo, hi);
    tide_tensor *t = th_from_doubles(dt, rank, dims, v, 0);
    free(v);
    return t;
}

/* True if a and b hold the same bits in every element, NaN matching any NaN. */
static bool same_bits(const tide_tensor *a, const tide_tensor *b)
{
    int64_t n = tide_tensor_num_elements(a);
    if (n != tide_tensor_num_elements(b) || tide_tensor_dtype(a) != tide_tensor_dtype(b))
        return false;
    bool f32 = tide_tensor_dtype(a) == TIDE_FLOAT32;
    const char *pa = tide_tensor_data((tide_tensor *)a), *pb = tide_tensor_data((tide_tensor *)b);
    if (!f32 && tide_tensor_dtype(a) != TIDE_FLOAT64) /* integers: every bit */
        return memcmp(pa, pb, (size_t)n * tide_dtype_size(tide_tensor_dtype(a))) == 0;
    for (int64_t i = 0; i < n; i++) {
        double x = f32 ? ((const float *)pa)[i] : ((const double *)pa)[i];
        double y = f32 ? ((const float *)pb)[i] : ((const double *)pb)[i];
        size_t sz = f32 ? 4 : 8;
        if (!(isnan(x) && isnan(y)) && memcmp(pa + (size_t)i * sz, pb + (size_t)i * sz, sz) != 0) {
            fprintf(stderr, "element %lld of %lld differs: %.9g vs %.9g\n", (long long)i, (long long)n, x, y);
            return false;
        }
    }
    return true;
}

/* The ISAs above portable that this CPU has; skips the test (returns 0) when there are none. */
static int wide_isas(void)
{
    tide_cpu_isa best = tide_cpu_isa_active();
    if (best == TIDE_ISA_PORTABLE)
        th_skip("the CPU has no AVX2 (or $TIDE_CPU_ISA=portable): no vector path to compare");
    return (int)best;
}

/* ---------------------------------------------------------------- detection */

static void test_detection_and_caps(void)
{
    tide_cpu_isa sup = tide_cpu_isa_supported();
#if TIDE_ISA_DISPATCH_X86
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    CU_ASSERT_EQUAL(sup >= TIDE_ISA_AVX2, avx2);
    if (sup == TIDE_ISA_AVX512)
        CU_ASSERT(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"));
#else
    CU_ASSERT_EQUAL(sup, TIDE_ISA_PORTABLE);
#endif
    const char *env = getenv("TIDE_CPU_ISA");
    if (env && !strcmp(env, "portable"))
        CU_ASSERT_EQUAL(tide_cpu_isa_active(), TIDE_ISA_PORTABLE);
    if (env && !strcmp(env, "avx2"))
        CU_ASSERT(tide_cpu_isa_active() <= TIDE_ISA_AVX2);
    if (!env)
        CU_ASSERT_EQUAL(tide_cpu_isa_active(), sup);
    tide_cpu_isa before = tide_cpu_isa_limit(TIDE_ISA_PORTABLE);
    CU_ASSERT_EQUAL(before, TIDE_ISA_AVX512);
    CU_ASSERT_EQUAL(tide_cpu_isa_active(), TIDE_ISA_PORTABLE);
    tide_cpu_isa_limit(TIDE_ISA_AVX2);
    CU_ASSERT(tide_cpu_isa_active() <= TIDE_ISA_AVX2);
    tide_cpu_isa_limit(TIDE_ISA_AVX512);
    CU_ASSERT_STRING_EQUAL(tide_cpu_isa_name(TIDE_ISA_AVX2), "avx2");
}

/* ---------------------------------------------------------------- element-wise and row ops */

/* Runs op on inputs at every ISA and checks each output against the portable one. */
static void compare_op_attrs(const char *op, tide_tensor *const *in, int num_in, const tide_attrs *attrs,
                             int num_out, int best)
{
    tide_tensor *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL};
    tide_cpu_isa_limit(TIDE_ISA_PORTABLE);
    tide_error *err = tide_error_new();
    if (th_run(op, in, num_in, attrs, want, num_out, err) != TIDE_OK)
        fprintf(stderr, "%s: %s\n", op, tide_error_message(err));
    tide_error_free(err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want[0]);
    for (int isa = TIDE_ISA_AVX2; isa <= best; isa++) {
        tide_cpu_isa_limit((tide_cpu_isa)isa);
        CU_ASSERT_EQUAL_FATAL(th_run(op, in, num_in, attrs, got, num_out, NULL), TIDE_OK);
        for (int k = 0; k < num_out; k++) {
            if (!same_bits(got[k], want[k])) {
                fprintf(stderr, "%s output %d: %s differs from portable (%lld elements)\n", op, k,
                        tide_cpu_isa_name((tide_cpu_isa)isa), (long long)tide_tensor_num_elements(in[0]));
                CU_FAIL("a vector path differs from the portable path");
            }
            tide_tensor_release(got[k]);
        }
    }
    tide_cpu_isa_limit(TIDE_ISA_AVX512);
    for (int k = 0; k < num_out; k++)
        tide_tensor_release(want[k]);
}

static void compare_op(const char *op, tide_tensor *const *in, int num_in, int num_out, int best)
{
    compare_op_attrs(op, in, num_in, NULL, num_out, best);
}

static void test_unary_ops_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    static const char *const ops[] = {"Exp", "Sigmoid", "Tanh", "Sqrt", "Rsqrt"};
    for (int dt = 0; dt < 2; dt++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (size_t s = 0; s < NUM_SIZES; s++) {
                bool root = o >= 3;
                tide_tensor *x = edge_tensor(dt ? TIDE_FLOAT64 : TIDE_FLOAT32, 1, &SIZES[s], root ? 0 : -100,
                                             root ? 1e6 : 100, true);
                compare_op(ops[o], &x, 1, 1, best);
                tide_tensor_release(x);
            }
}

/* The arithmetic, selects and activations with wide variants (math.c's BIN_LOOPS_WIDE, activation.c's
 * UNARY_WIDE / BINARY_WIDE, BiasAdd's rows; fusion runs the same loops over its tiles): both inputs
 * full (vv), and a scalar on either side (sv, vs) for the math ops. */
static void test_binary_and_activation_ops_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    static const char *const binary[] = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum",
                                         "SquaredDifference", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"};
    static const char *const pairs[] = {"ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad", "LeakyReluGrad",
                                        "SigmoidGrad", "TanhGrad"};
    static const char *const unary[] = {"Relu", "Relu6", "LeakyRelu"};
    int64_t one = 1;
    for (int dt = 0; dt < 2; dt++)
        for (size_t s = 0; s < NUM_SIZES; s++) {
            tide_dtype type = dt ? TIDE_FLOAT64 : TIDE_FLOAT32;
            tide_tensor *x = edge_tensor(type, 1, &SIZES[s], -10, 10, true);
            tide_tensor *y = edge_tensor(type, 1, &SIZES[s], -10, 10, s % 2 == 0);
            tide_tensor *c = edge_tensor(type, 1, &one, 0.25, 4, false);
            for (size_t o = 0; o < sizeof binary / sizeof binary[0]; o++) {
                compare_op(binary[o], (tide_tensor *[]){x, y}, 2, 1, best);
                if (o >= 7) /* the gradient ops want one shape */
                    continue;
                compare_op(binary[o], (tide_tensor *[]){c, y}, 2, 1, best);
                compare_op(binary[o], (tide_tensor *[]){x, c}, 2, 1, best);
            }
            for (size_t o = 0; o < sizeof pairs / sizeof pairs[0]; o++)
                compare_op(pairs[o], (tide_tensor *[]){x, y}, 2, 1, best);
            for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++)
                compare_op(unary[o], &x, 1, 1, best);
            int64_t dims[2] = {3, SIZES[s]};
            tide_tensor *v = edge_tensor(type, 2, dims, -10, 10, true);
            compare_op("BiasAdd", (tide_tensor *[]){v, y}, 2, 1, best);
            tide_tensor_release(v);
            tide_tensor_release(x);
            tide_tensor_release(y);
            tide_tensor_release(c);
        }
}

static void test_softmax_ops_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    static const int64_t classes[] = {1, 3, 10, 17, 33, 1000};
    for (int dt = 0; dt < 2; dt++)
        for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++)
            for (int edges = 0; edges < 2; edges++) {
                tide_dtype type = dt ? TIDE_FLOAT64 : TIDE_FLOAT32;
                int64_t dims[2] = {5, classes[c]};
                tide_tensor *x = edge_tensor(type, 2, dims, -30, 30, edges), *l = edge_tensor(type, 2, dims, 0, 1, false);
                int32_t idx[5];
                for (int r = 0; r < 5; r++)
                    idx[r] = (int32_t)((r * 7) % classes[c]);
                tide_tensor *sparse = th_i32(1, dims, idx);
                compare_op("Softmax", &x, 1, 1, best);
                compare_op("LogSoftmax", &x, 1, 1, best);
                compare_op("SoftmaxCrossEntropyWithLogits", (tide_tensor *[]){x, l}, 2, 2, best);
                compare_op("SparseSoftmaxCrossEntropyWithLogits", (tide_tensor *[]){x, sparse}, 2, 2, best);
                tide_tensor_release(x);
                tide_tensor_release(l);
                tide_tensor_release(sparse);
            }
}

/* Sum, Mean, Max, Min over the last axis, the first and all axes, float32 and float64: rows of the
 * sizes above, with and without edge values (a NaN must reach the result of its row or column). */
static void test_reductions_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    static const int32_t axes[3][2] = {{1, 1}, {0, 0}, {0, 1}};
    static const int64_t rows[] = {1, 3, 40};
    for (int dt = 0; dt < 2; dt++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                for (size_t s = 0; s < NUM_SIZES; s++)
                    for (int a = 0; a < 3; a++) {
                        int64_t dims[2] = {rows[r], SIZES[s]};
                        bool prod = o == 4;
                        tide_tensor *x = edge_tensor(dt ? TIDE_FLOAT64 : TIDE_FLOAT32, 2, dims, prod ? 0.5 : -100,
                                                     prod ? 1.5 : 100, (s + (size_t)a) % 2 == 0);
                        tide_tensor *ax = th_i32(1, TH_DIMS(a == 2 ? 2 : 1), axes[a]);
                        compare_op(ops[o], (tide_tensor *[]){x, ax}, 2, 1, best);
                        tide_tensor_release(x);
                        tide_tensor_release(ax);
                    }
}

/* The random ops draw the same streams at every ISA (Philox's lanes vectorised): every dtype, seeded,
 * at sizes that leave partial blocks and partial groups of lanes. */
static void test_random_streams_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    static const char *const ops[] = {"RandomUniform", "RandomNormal", "TruncatedNormal"};
    static const tide_dtype dtypes[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16};
    for (size_t s = 0; s < NUM_SIZES; s++) {
        int64_t n = SIZES[s] * 3, one = 1;
        tide_tensor *shape = th_i64(1, &one, &n);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
                tide_attrs *a = tide_attrs_new();
                tide_attrs_set_type(a, "dtype", dtypes[d]);
                tide_attrs_set_int(a, "seed", 7 + (int64_t)s);
                tide_attrs_set_int(a, "seed2", 3);
                compare_op_attrs(ops[o], &shape, 1, a, 1, best);
                tide_attrs_free(a);
            }
        for (int wide = 0; wide < 2; wide++) {
            int64_t lo = -5, hi = 1000003;
            int32_t lo32 = -5, hi32 = 1000003;
            tide_tensor *in[3] = {shape, wide ? th_i64(0, NULL, &lo) : th_i32(0, NULL, &lo32),
                                  wide ? th_i64(0, NULL, &hi) : th_i32(0, NULL, &hi32)};
            tide_attrs *a = tide_attrs_new();
            tide_attrs_set_int(a, "seed", 11);
            tide_attrs_set_int(a, "seed2", (int64_t)s);
            compare_op_attrs("RandomUniformInt", in, 3, a, 1, best);
            tide_attrs_free(a);
            tide_tensor_release(in[1]);
            tide_tensor_release(in[2]);
        }
        tide_tensor_release(shape);
    }
}

/* ---------------------------------------------------------------- optimizer updates */

/* One optimizer op: its inputs in order, "@k" for ref k (var, then slots), "g" for the gradient and
 * scalar literals otherwise; attrs appended to the call. */
typedef struct apply_case {
    const char *op;
    int num_refs;
    const char *inputs;
    const char *attrs;
} apply_case;

static const apply_case APPLY_CASES[] = {
    {"ApplyGradientDescent", 1, "@0, 0.1, g", ""},
    {"ApplyMomentum", 2, "@0, @1, 0.05, g, 0.9", ""},
    {"ApplyMomentum", 2, "@0, @1, 0.05, g, 0.9", ", use_nesterov=true"},
    {"ApplyAdagrad", 2, "@0, @1, 0.1, g", ""},
    {"ApplyAdagrad", 2, "@0, @1, 0.1, g", ", update_slots=false"},
    {"ApplyRMSProp", 3, "@0, @1, @2, 0.01, 0.9, 0.5, 0.05, g", ""},
    {"ApplyAdam", 3, "@0, @1, @2, 0.9, 0.999, 0.01, 0.9, 0.999, 0.001, g", ""},
    {"ApplyAdam", 3, "@0, @1, @2, 0.9, 0.999, 0.01, 0.9, 0.999, 0.001, g", ", use_nesterov=true"},
};

/* The graph text of c over n elements of dtype dt: Variables r0.. set from Placeholders p0.. by
 * `init`, the gradient Placeholder g, the update `apply`. */
static char *apply_text(const apply_case *c, const char *dt, int64_t n, int run)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    for (int k = 0; k < c->num_refs; k++)
        len += (size_t)snprintf(t + len, cap - len,
                                "r%d = Variable(dtype=%s, shape=[%lld], container=\"\", shared_name=\"vw%d_%d\")\n"
                                "p%d = Placeholder(dtype=%s)\n a%d = Assign(r%d, p%d)\n",
                                k, dt, (long long)n, run, k, k, dt, k, k, k);
    len += (size_t)snprintf(t + len, cap - len, "init = NoOp(%s%s%s)\n g = Placeholder(dtype=%s)\n",
                            "^a0", c->num_refs > 1 ? ", ^a1" : "", c->num_refs > 2 ? ", ^a2" : "", dt);
    len += (size_t)snprintf(t + len, cap - len, "apply = %s(", c->op);
    int scalar = 0;
    for (const char *p = c->inputs; *p;) {
        const char *end = strchr(p, ',');
        size_t w = end ? (size_t)(end - p) : strlen(p);
        char item[32];
        snprintf(item, sizeof item, "%.*s", (int)w, p);
        if (item[0] == '@')
            len += (size_t)snprintf(t + len, cap - len, "r%s", item + 1);
        else if (!strcmp(item, "g"))
            len += (size_t)snprintf(t + len, cap - len, "g");
        else {
            len += (size_t)snprintf(t + len, cap - len, "h%d", scalar);
            char line[128];
            snprintf(line, sizeof line, "h%d = Const(value=tensor(%s, [], [%s]), dtype=%s)\n", scalar++, dt, item, dt);
            memmove(t + strlen(line), t, len + 1); /* scalars go first: Consts before the call */
            memcpy(t, line, strlen(line));
            len += strlen(line);
        }
        if (end)
            len += (size_t)snprintf(t + len, cap - len, ", ");
        p = end ? end + 2 : p + w;
    }
    snprintf(t + len, cap - len, "%s)\n", c->attrs);
    return t;
}

/* Runs three steps of c at the current ISA from the same initial values and gradients; returns the
 * final value of every ref (out[0..num_refs)). */
static void run_apply(const apply_case *c, tide_dtype dt, int64_t n, int run, tide_tensor **out)
{
    char *text = apply_text(c, dt == TIDE_FLOAT32 ? "float32" : "float64", n, run);
    tide_graph *g = th_graph_of(text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_feed feeds[3];
    for (int k = 0; k < c->num_refs; k++) { /* slots positive: accumulators, mean squares */
        char name[16];
        snprintf(name, sizeof name, "p%d", k);
        feeds[k] = (tide_feed){{tide_graph_node(g, name), 0}, edge_tensor(dt, 1, &n, k ? 0.01 : -1, 1, false)};
    }
    tide_node *init = tide_graph_node(g, "init"), *apply = tide_graph_node(g, "apply");
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, feeds, c->num_refs, NULL, 0, NULL, &init, 1, NULL, err), TIDE_OK);
    for (int step = 0; step < 3; step++) {
        tide_feed gf = {{tide_graph_node(g, "g"), 0}, edge_tensor(dt, 1, &n, -1, 1, step == 2)};
        CU_ASSERT_EQUAL(tide_session_run(s, NULL, &gf, 1, NULL, 0, NULL, &apply, 1, NULL, err), TIDE_OK);
        tide_tensor_release(gf.value);
    }
    for (int k = 0; k < c->num_refs; k++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        tide_output o = {tide_graph_node(g, name), 0};
        out[k] = NULL;
        CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &o, 1, &out[k], NULL, 0, NULL, err), TIDE_OK);
        tide_tensor_release(feeds[k].value);
    }
    if (tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "%s: %s\n", c->op, tide_error_message(err));
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    CU_ASSERT_EQUAL(tide_engine_reset_container(th_engine(), "", NULL), TIDE_OK);
}

static void test_optimizer_updates_match_portable(void)
{
    int best = wide_isas();
    if (!best)
        return;
    int run = 0;
    for (size_t c = 0; c < sizeof APPLY_CASES / sizeof APPLY_CASES[0]; c++)
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < NUM_SIZES; s++) {
                const apply_case *ac = &APPLY_CASES[c];
                tide_dtype dt = d ? TIDE_FLOAT64 : TIDE_FLOAT32;
                tide_tensor *want[3], *got[3];
                tide_cpu_isa_limit(TIDE_ISA_PORTABLE);
                rng_reset();
                run_apply(ac, dt, SIZES[s], run++, want);
                for (int isa = TIDE_ISA_AVX2; isa <= best; isa++) {
                    tide_cpu_isa_limit((tide_cpu_isa)isa);
                    rng_reset();
                    run_apply(ac, dt, SIZES[s], run++, got);
                    for (int k = 0; k < ac->num_refs; k++) {
                        if (!same_bits(got[k], want[k])) {
                            fprintf(stderr, "%s%s ref %d: %s differs from portable (%lld elements)\n", ac->op,
                                    ac->attrs, k, tide_cpu_isa_name((tide_cpu_isa)isa), (long long)SIZES[s]);
                            CU_FAIL("a vector path of an optimizer update differs from the portable path");
                        }
                        tide_tensor_release(got[k]);
                    }
                }
                tide_cpu_isa_limit(TIDE_ISA_AVX512);
                for (int k = 0; k < ac->num_refs; k++)
                    tide_tensor_release(want[k]);
            }
}

/* ---------------------------------------------------------------- accuracy against libm */

/* Floats as integers ordered like the values, so that b - a counts the floats between (ulp). */
static int64_t ordered(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

/* Every 257th float32 (about 16.7 million, all signs and exponents); the largest distance in ulp
 * between op's result (at the best ISA) and `reference` in double rounded to float. NaN in, NaN out;
 * a NaN where the reference has a number fails. */
static int64_t max_ulp(const char *op, double (*reference)(double))
{
    const int64_t stride = 257, n = (int64_t)(UINT64_C(1) << 32) / stride;
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)(i * stride);
        memcpy(&v[i], &bits, sizeof bits);
    }
    tide_tensor *x = th_f32(1, &n, v), *y = th_run1(op, &x, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    const float *got = tide_tensor_data(y);
    int64_t worst = 0, worst_at = 0;
    for (int64_t i = 0; i < n; i++) {
        float want = (float)reference((double)v[i]);
        if (isnan(v[i]) || isnan(want)) {
            if (isnan(want) != isnan(got[i]))
                CU_FAIL("NaN where libm has a number, or a number where it has NaN");
            continue;
        }
        int64_t d = llabs(ordered(got[i]) - ordered(want));
        if (d > worst)
            worst = d, worst_at = i;
    }
    printf("\n    %s: at most %lld ulp from double-precision libm over every 257th float (%s; worst at x = %.9g)",
           op, (long long)worst, tide_cpu_isa_name(tide_cpu_isa_active()), v[worst_at]);
    tide_tensor_release(x);
    tide_tensor_release(y);
    free(v);
    return worst;
}

static double sigmoid_ref(double x) { return 1 / (1 + exp(-x)); }

/* The bounds the ops' documentation states (docs/ops.md, kernels/cpu/cpu_util.h and math.c). */
static void test_float32_accuracy_against_libm(void)
{
    CU_ASSERT(max_ulp("Exp", exp) <= 1);
    CU_ASSERT(max_ulp("Sigmoid", sigmoid_ref) <= 3);
    CU_ASSERT(max_ulp("Tanh", tanh) <= 7);
    printf("\n");
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_detection_and_caps),
        TH_TEST(test_unary_ops_match_portable),
        TH_TEST(test_binary_and_activation_ops_match_portable),
        TH_TEST(test_softmax_ops_match_portable),
        TH_TEST(test_reductions_match_portable),
        TH_TEST(test_random_streams_match_portable),
        TH_TEST(test_optimizer_updates_match_portable),
        TH_TEST(test_float32_accuracy_against_libm),
        TH_END,
    };
    return th_main("vecwidth", tests);
}
