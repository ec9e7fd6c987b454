/* activation.c — CPU kernels of the activations (engine/ops/nn_ops.c): Relu, Relu6, Elu, Selu,
 * Softplus, Softsign, LeakyRelu and the element-wise gradient ops ReluGrad, Relu6Grad, EluGrad,
 * SeluGrad, SoftplusGrad, SoftsignGrad, LeakyReluGrad, SigmoidGrad, TanhGrad, for float32 and
 * float64. LeakyRelu's alpha attr reaches its loops as their parameter p.
 *
 * Each (op, dtype) is one flat loop stamped out by a macro; a kernel picks its loop in init, writes
 * over an input's buffer when the executor allows it (forward_or_alloc), and splits large tensors
 * with tide_kernel_parallel_for. Loops read element i before writing it, so the output may be
 * exactly an input. Relu, Relu6 and the gradient ops are selects the compiler vectorises; Elu and
 * Softplus call libm (expm1, log1p, exp) and are dearer. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../engine/ops/nn_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

/* As in math.c: GCC's default -O2 cost model leaves loops of unknown length scalar, and without
 * trapping math the float selects (?:) vectorise too. Results are unchanged (no -ffast-math). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h" /* IVDEP (the output may be exactly an input), the ISA variants */

/* Below this many nanoseconds of work a kernel runs inline (parallel_for would too). */
#define INLINE_NS 50000.0

typedef void (*unary_loop)(const void *x, void *y, int64_t n, double p);
typedef void (*binary_loop)(const void *a, const void *b, void *out, int64_t n, double p);

/* name_f32 and name_f64 computing EXPR of x (and of the parameter p, as T). */
#define UNARY_T(name, SFX, T, EXPR) UNARY_FN(name##_##SFX, , , T, EXPR)
#define UNARY_FN(fn, TARGET, ISA, T, EXPR)                                                   \
    TARGET static void fn(const void *px, void *py, int64_t n, double param)                 \
    {                                                                                        \
        const T *xs = px, p = (T)param;                                                      \
        T *ys = py;                                                                          \
        (void)p;                                                                             \
        IVDEP for (int64_t i = 0; i < n; i++) {                                              \
            const T x = xs[i];                                                               \
            ys[i] = (EXPR);                                                                  \
        }                                                                                    \
    }
#define UNARY(name, EXPR) UNARY_T(name, f32, float, EXPR) UNARY_T(name, f64, double, EXPR)

/* name_f32 and name_f64 computing EXPR of a and b (the op's two inputs, in order) and p. */
#define BINARY_T(name, SFX, T, EXPR) BINARY_FN(name##_##SFX, , , T, EXPR)
#define BINARY_FN(fn, TARGET, ISA, T, EXPR)                                                  \
    TARGET static void fn(const void *pa, const void *pb, void *po, int64_t n, double param) \
    {                                                                                        \
        const T *as = pa, *bs = pb, p = (T)param;                                            \
        T *os = po;                                                                          \
        (void)p;                                                                             \
        IVDEP for (int64_t i = 0; i < n; i++) {                                              \
            const T a = as[i], b = bs[i];                                                    \
            os[i] = (EXPR);                                                                  \
        }                                                                                    \
    }
#define BINARY(name, EXPR) BINARY_T(name, f32, float, EXPR) BINARY_T(name, f64, double, EXPR)

/* The same for the loops wider vectors speed up (the selects and arithmetic; not those calling libm,
 * which stay scalar): the ISA variants of cpu_util.h (name_f32_portable, _avx2, _avx512) and a
 * dispatcher under the plain name. Each variant computes the same IEEE operations in the same order,
 * so the results are the same bit for bit (tests/kernels/test_vecwidth.c). Fusion runs these loops
 * over tiles in L1, where the width is what counts (bench_fusion). */
#define UNARY_WIDE_T(name, SFX, T, EXPR)                                                     \
    TIDE_ISA_VARIANTS(UNARY_FN, name##_##SFX, T, EXPR)                                       \
    static void name##_##SFX(const void *px, void *py, int64_t n, double param)              \
    {                                                                                        \
        TIDE_ISA_DISPATCH(name##_##SFX, px, py, n, param);                                   \
    }
#define UNARY_WIDE(name, EXPR) UNARY_WIDE_T(name, f32, float, EXPR) UNARY_WIDE_T(name, f64, double, EXPR)
#define BINARY_WIDE_T(name, SFX, T, EXPR)                                                    \
    TIDE_ISA_VARIANTS(BINARY_FN, name##_##SFX, T, EXPR)                                      \
    static void name##_##SFX(const void *pa, const void *pb, void *po, int64_t n, double param) \
    {                                                                                        \
        TIDE_ISA_DISPATCH(name##_##SFX, pa, pb, po, n, param);                               \
    }
#define BINARY_WIDE(name, EXPR) BINARY_WIDE_T(name, f32, float, EXPR) BINARY_WIDE_T(name, f64, double, EXPR)

/* Selu's constants (TensorFlow's, from Klambauer et al.). */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

/* `x < 0 ? 0 : x` rather than `x > 0 ? x : 0`: a NaN fails the comparison and passes through. */
UNARY_WIDE(relu, x < 0 ? 0 : x)
UNARY_WIDE(relu6, x < 0 ? 0 : x > 6 ? 6 : x)
UNARY(elu, x < 0 ? expm1(x) : x)
UNARY(selu, x > 0 ? SELU_SCALE * x : SELU_SCALE * SELU_ALPHA * expm1(x))
UNARY(softplus, (x > 0 ? x : 0) + log1p(exp(-fabs(x))))
UNARY(softsign, x / (1 + fabs(x)))
UNARY_WIDE(leaky_relu, x > 0 ? x : x * p)

/* sigmoid(x) from e = exp(-|x|) <= 1, which cannot overflow. */
static inline double stable_sigmoid(double x)
{
    double e = exp(-fabs(x)), r = 1 / (1 + e);
    return x >= 0 ? r : e * r;
}

/* The gradient ops: a = gradients (or y), b = features / outputs (or dy). */
BINARY_WIDE(relu_grad, b > 0 ? a : 0)
BINARY_WIDE(relu6_grad, b > 0 && b < 6 ? a : 0)
BINARY_WIDE(elu_grad, b < 0 ? a * (b + 1) : a)
BINARY_WIDE(selu_grad, b > 0 ? a * SELU_SCALE : a * (b + SELU_SCALE * SELU_ALPHA))
BINARY(softplus_grad, a * stable_sigmoid(b))
BINARY(softsign_grad, a / ((1 + fabs(b)) * (1 + fabs(b))))
BINARY_WIDE(leaky_relu_grad, b > 0 ? a : a * p)
BINARY_WIDE(sigmoid_grad, b * a * (1 - a))
BINARY_WIDE(tanh_grad, b * (1 - a * a))

/* ---------------------------------------------------------------- op table */

typedef struct elementwise_op {
    const char *name;
    const char *inputs[2];   /* the op's names of its inputs, for messages (binary ops) */
    unary_loop unary[2];     /* float32, float64; NULL for binary ops */
    binary_loop binary[2];
    double cost;             /* nanoseconds per element */
} elementwise_op;

#define UNARY_OP(op, fn, cost) {op, {NULL, NULL}, {fn##_f32, fn##_f64}, {NULL, NULL}, cost}
#define BINARY_OP(op, in0, in1, fn, cost) {op, {in0, in1}, {NULL, NULL}, {fn##_f32, fn##_f64}, cost}

static const elementwise_op ops[] = {
    UNARY_OP("Relu", relu, 0.3),
    UNARY_OP("Relu6", relu6, 0.3),
    UNARY_OP("Elu", elu, 8.0),
    UNARY_OP("Selu", selu, 8.0),
    UNARY_OP("Softplus", softplus, 20.0),
    UNARY_OP("Softsign", softsign, 1.0),
    UNARY_OP("LeakyRelu", leaky_relu, 0.3),
    BINARY_OP("ReluGrad", "gradients", "features", relu_grad, 0.5),
    BINARY_OP("Relu6Grad", "gradients", "features", relu6_grad, 0.5),
    BINARY_OP("EluGrad", "gradients", "outputs", elu_grad, 0.5),
    BINARY_OP("SeluGrad", "gradients", "outputs", selu_grad, 0.5),
    BINARY_OP("SoftplusGrad", "gradients", "features", softplus_grad, 10.0),
    BINARY_OP("SoftsignGrad", "gradients", "features", softsign_grad, 1.0),
    BINARY_OP("LeakyReluGrad", "gradients", "features", leaky_relu_grad, 0.5),
    BINARY_OP("SigmoidGrad", "y", "dy", sigmoid_grad, 0.5),
    BINARY_OP("TanhGrad", "y", "dy", tanh_grad, 0.5),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- kernels */

typedef struct elementwise_job {
    unary_loop unary;
    binary_loop binary;
    const char *a, *b;
    char *out;
    int64_t size; /* bytes per element */
    double param; /* the alpha attr (LeakyRelu), else 0 */
} elementwise_job;

static void elementwise_range(int64_t begin, int64_t end, void *arg)
{
    const elementwise_job *j = arg;
    int64_t at = begin * j->size;
    if (j->unary)
        j->unary(j->a + at, j->out + at, end - begin, j->param);
    else
        j->binary(j->a + at, j->b + at, j->out + at, end - begin, j->param);
}

static tide_status elementwise_init(tide_kernel_ctx *ctx, void **state)
{
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    const char *name = tide_kernel_op_name(ctx);
    for (size_t i = 0; i < COUNT(ops); i++)
        if (strcmp(ops[i].name, name) == 0) {
            *state = (void *)&ops[i]; /* a static row: nothing to free */
            return TIDE_OK;
        }
    return tide_kernel_error(ctx, TIDE_INTERNAL, "no activation kernel named %s", name);
}

static tide_status elementwise_compute(tide_kernel_ctx *ctx)
{
    const elementwise_op *op = tide_kernel_state(ctx);
    int d = tide_kernel_input_dtype(ctx, 0) == TIDE_FLOAT64;
    tide_tensor *a = tide_kernel_input(ctx, 0), *b = op->unary[0] ? NULL : tide_kernel_input(ctx, 1);
    if (b) {
        tide_shape merged;
        char msg[TIDE_OP_MSG_MAX];
        if (!tide_nn_same_shape(tide_tensor_shape(a), tide_tensor_shape(b), op->inputs[0],
                                op->inputs[1], &merged, msg, sizeof msg))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    }
    /* Write over whichever input nobody else holds (forward_or_alloc has the last word). */
    int in = b && !tide_tensor_is_exclusive(a) && tide_tensor_is_exclusive(b) ? 1 : 0;
    tide_tensor *out = tide_kernel_forward_or_alloc(ctx, in, 0, tide_tensor_shape(a));
    if (!out)
        return tide_kernel_status(ctx);
    elementwise_job j = {op->unary[d], op->binary[d], tide_tensor_data(a),
                         b ? tide_tensor_data(b) : NULL, tide_tensor_data(out),
                         (int64_t)tide_dtype_size(tide_tensor_dtype(a)), 0};
    if (tide_attrs_get_float(tide_kernel_attrs(ctx), "alpha", &j.param))
        j.param = (float)j.param; /* a float attr, as TensorFlow stores it, also for float64 */
    int64_t n = tide_tensor_num_elements(a);
    if ((double)n * op->cost < INLINE_NS)
        elementwise_range(0, n, &j);
    else
        tide_kernel_parallel_for(ctx, n, op->cost, elementwise_range, &j);
    return TIDE_OK;
}

/* Fusion (tide_elementwise): the same loop and parameter; the binary ops want one shape. */
static bool elementwise_loops(tide_kernel_ctx *ctx, tide_elementwise *ew)
{
    const elementwise_op *op = tide_kernel_state(ctx);
    int d = tide_kernel_input_dtype(ctx, 0) == TIDE_FLOAT64;
    *ew = (tide_elementwise){.unary_p = op->unary[d], .binary_p = op->binary[d], .cost = op->cost};
    if (tide_attrs_get_float(tide_kernel_attrs(ctx), "alpha", &ew->param))
        ew->param = (float)ew->param;
    return true;
}

static void register_activation_kernels(void)
{
    /* Not TIDE_KERNEL_EXPENSIVE: large inputs are split by parallel_for inside the kernel, and a
     * kernel the executor runs inline finds its input exclusive and can write over it. */
    for (size_t i = 0; i < COUNT(ops); i++)
        tide_kernel_register(&(tide_kernel_spec){
            .op = ops[i].name,
            .device_type = "cpu",
            .init = elementwise_init,
            .compute = elementwise_compute,
            .elementwise = elementwise_loops,
        });
}
TIDE_REGISTER(register_activation_kernels)
