/* elementwise.cu — every element-wise GPU kernel from one template over functors: a functor is the
 * math of one element (a __device__ call operator), and unary() / binary() do the rest once for all
 * ops: shape checks, output allocation (in place when the engine allows), broadcasting through
 * index_plan.h's plan (inputs of the output's shape, or a scalar, take a linear kernel; anything
 * else the general one, which decomposes each output index into the merged dims), launch and error
 * checks. The functors follow the CPU kernels' formulas (kernels/cpu/math.c, activation.c): the
 * same NaN rules for Maximum/Minimum, Relu and Sign; results may differ from the CPU's in the last
 * bits where CUDA's math library rounds differently (expf, logf, tanhf, powf...). */
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "half.h"

/* No integer version of an op (its kernel list entry admits float types only). */
struct no_int {};

/* ---------------------------------------------------------------- the template */

template <class T, class F> __global__ void unary_kernel(const T *x, T *y, int64_t n, F f)
{
    CUDA_FOR(i, n) y[i] = io<T>::store(f(io<T>::load(x[i])));
}

/* a and b walked linearly with steps 0 or 1 (same shape, or one side a scalar). */
template <class T, class F> __global__ void binary_linear(const T *a, const T *b, T *z, int64_t n, int64_t sa,
                                                          int64_t sb, F f)
{
    CUDA_FOR(i, n) z[i] = io<T>::store(f(io<T>::load(a[i * sa]), io<T>::load(b[i * sb])));
}

template <class T, class F> __global__ void binary_broadcast(const T *a, const T *b, T *z, tide_bcast p, F f)
{
    CUDA_FOR(i, p.num_elements) {
        int64_t oa, ob;
        tide_bcast_offsets(&p, i, &oa, &ob);
        z[i] = io<T>::store(f(io<T>::load(a[oa]), io<T>::load(b[ob])));
    }
}

/* Calls go.run<T>() for the storage type of dt with the float functor f for float32, float16 and
 * bfloat16, the integer one i for int32 and int64 (unless it is no_int). */
template <class F, class I, class Go> static tide_status by_dtype(tide_kernel_ctx *ctx, tide_dtype dt, Go go, F f, I i)
{
    switch (dt) {
    case TIDE_FLOAT32: return go.template run<float>(f);
    case TIDE_FLOAT16: return go.template run<f16>(f);
    case TIDE_BFLOAT16: return go.template run<bf16>(f);
    default: break;
    }
    if constexpr (!std::is_same<I, no_int>::value) {
        if (dt == TIDE_INT32)
            return go.template run<int32_t>(i);
        if (dt == TIDE_INT64)
            return go.template run<int64_t>(i);
    }
    return tide_kernel_error(ctx, TIDE_INTERNAL, "no GPU element-wise kernel for %s", tide_dtype_name(dt));
}

struct unary_go {
    const tide_tensor *x;
    tide_tensor *y;
    int64_t n;
    cudaStream_t s;
    template <class T, class F> tide_status run(F f)
    {
        unary_kernel<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>((const T *)tide_tensor_device_pointer(x),
                                                                  (T *)tide_tensor_device_pointer(y), n, f);
        return TIDE_OK;
    }
};

template <class F, class I = no_int> static tide_status unary(tide_kernel_ctx *ctx, F f = F(), I i = I())
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(x);
    if (n > 0 && by_dtype(ctx, tide_tensor_dtype(x), unary_go{x, y, n, s}, f, i) != TIDE_OK)
        return tide_kernel_status(ctx);
    return cuda_launched(ctx, "the element-wise kernel");
}

/* The output shape of broadcasting a and b (both fully known); false when they do not broadcast. */
static bool broadcast_shape(const tide_shape *a, const tide_shape *b, tide_shape *out)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    out->rank = rank;
    for (int k = 0; k < rank; k++) {
        int ka = k - (rank - a->rank), kb = k - (rank - b->rank);
        int64_t x = ka >= 0 ? a->dims[ka] : 1, y = kb >= 0 ? b->dims[kb] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        out->dims[k] = x == 1 ? y : x;
    }
    return true;
}

struct binary_go {
    const void *a, *b;
    void *z;
    const tide_bcast *plan;
    cudaStream_t s;
    template <class T, class F> tide_status run(F f)
    {
        const T *pa = (const T *)a, *pb = (const T *)b;
        T *pz = (T *)z;
        int64_t n = plan->num_elements;
        if (plan->rank == 0) /* one element */
            binary_linear<<<1, 1, 0, s>>>(pa, pb, pz, 1, 0, 0, f);
        else if (plan->rank == 1)
            binary_linear<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>(pa, pb, pz, n, plan->stride_a[0],
                                                                       plan->stride_b[0], f);
        else
            binary_broadcast<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>(pa, pb, pz, *plan, f);
        return TIDE_OK;
    }
};

/* The shapes checked, the output allocated (in place when the engine allows) and the kernel of the
 * inputs' dtype launched; f and i the float and integer functors' values when they carry state. */
template <class F, class I = no_int> static tide_status binary(tide_kernel_ctx *ctx, F f = F(), I i = I())
{
    const tide_tensor *a = tide_kernel_input(ctx, 0), *b = tide_kernel_input(ctx, 1);
    const tide_shape *sa = tide_tensor_shape(a), *sb = tide_tensor_shape(b);
    tide_shape shape;
    tide_bcast plan;
    if (!broadcast_shape(sa, sb, &shape) || !tide_bcast_plan(sa->rank, sa->dims, sb->rank, sb->dims, &plan)) {
        char x[TIDE_SHAPE_STR_MAX], y[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "incompatible shapes %s and %s",
                                 tide_shape_format(sa, x, sizeof x), tide_shape_format(sb, y, sizeof y));
    }
    int in_place = tide_tensor_num_elements(a) == plan.num_elements ? 0 : 1;
    tide_tensor *z = tide_kernel_forward_or_alloc(ctx, in_place, 0, &shape);
    cudaStream_t s = z ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    if (plan.num_elements == 0)
        return TIDE_OK;
    binary_go go{tide_tensor_device_pointer(a), tide_tensor_device_pointer(b), tide_tensor_device_pointer(z), &plan, s};
    if (by_dtype(ctx, tide_tensor_dtype(a), go, f, i) != TIDE_OK)
        return tide_kernel_status(ctx);
    return cuda_launched(ctx, "the broadcasting kernel");
}

/* ---------------------------------------------------------------- the functors */

#define FUNCTOR1(name, EXPR) \
    struct name { __device__ float operator()(float x) const { return EXPR; } };
#define FUNCTOR2(name, EXPR) \
    struct name { __device__ float operator()(float x, float y) const { return EXPR; } };

FUNCTOR2(add_f, x + y)
FUNCTOR2(sub_f, x - y)
FUNCTOR2(mul_f, x * y)
FUNCTOR2(div_f, x / y)
FUNCTOR2(maximum_f, (x > y || isnan(x)) ? x : y)
FUNCTOR2(minimum_f, (x < y || isnan(x)) ? x : y)
FUNCTOR2(squared_difference_f, (x - y) * (x - y))
FUNCTOR2(pow_f, powf(x, y))
FUNCTOR2(div_no_nan_f, y == 0.0f ? 0.0f : x / y)
FUNCTOR2(relu_grad_f, y > 0.0f ? x : 0.0f)           /* (gradients, features) */
FUNCTOR2(sigmoid_grad_f, y * x * (1.0f - x))         /* (y, dy) */
FUNCTOR2(tanh_grad_f, y * (1.0f - x * x))            /* (y, dy) */
FUNCTOR2(sqrt_grad_f, 0.5f * y / x)                  /* (y, dy) */
FUNCTOR2(rsqrt_grad_f, -0.5f * (y * x) * (x * x))    /* (y, dy) */
FUNCTOR2(reciprocal_grad_f, -x * x * y)              /* (y, dy) */

FUNCTOR1(neg_f, -x)
FUNCTOR1(abs_f, fabsf(x))
FUNCTOR1(sign_f, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x)
FUNCTOR1(square_f, x * x)
FUNCTOR1(reciprocal_f, 1.0f / x)
FUNCTOR1(sqrt_f, sqrtf(x))
FUNCTOR1(rsqrt_f, 1.0f / sqrtf(x))
FUNCTOR1(exp_f, expf(x))
FUNCTOR1(log_f, logf(x))
FUNCTOR1(log1p_f, log1pf(x))
FUNCTOR1(tanh_f, tanhf(x))
FUNCTOR1(sigmoid_f, 1.0f / (1.0f + expf(-x)))
FUNCTOR1(relu_f, x < 0.0f ? 0.0f : x)
FUNCTOR1(floor_f, floorf(x))
FUNCTOR1(ceil_f, ceilf(x))
FUNCTOR1(sin_f, sinf(x))
FUNCTOR1(cos_f, cosf(x))
FUNCTOR1(softplus_f, (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))))

/* Integers: + - * and negation wrap (two's complement, in unsigned arithmetic), as on the CPU. */
template <class V> __device__ V wrap(typename std::make_unsigned<V>::type u) { return (V)u; }
#define INT_FUNCTOR1(name, EXPR) \
    struct name { template <class V> __device__ V operator()(V x) const { typedef typename std::make_unsigned<V>::type U; (void)sizeof(U); return EXPR; } };
#define INT_FUNCTOR2(name, EXPR) \
    struct name { template <class V> __device__ V operator()(V x, V y) const { typedef typename std::make_unsigned<V>::type U; (void)sizeof(U); return EXPR; } };

INT_FUNCTOR2(add_i, wrap<V>((U)x + (U)y))
INT_FUNCTOR2(sub_i, wrap<V>((U)x - (U)y))
INT_FUNCTOR2(mul_i, wrap<V>((U)x * (U)y))
INT_FUNCTOR2(maximum_i, x > y ? x : y)
INT_FUNCTOR2(minimum_i, x < y ? x : y)
INT_FUNCTOR2(squared_difference_i, wrap<V>(((U)x - (U)y) * ((U)x - (U)y)))
INT_FUNCTOR1(neg_i, wrap<V>(0 - (U)x))
INT_FUNCTOR1(abs_i, x < 0 ? wrap<V>(0 - (U)x) : x)
INT_FUNCTOR1(sign_i, (V)(x > 0 ? 1 : x < 0 ? -1 : 0))
INT_FUNCTOR1(square_i, wrap<V>((U)x * (U)x))

/* Integer division, truncating toward zero; the most negative value divided by -1 wraps to itself; a
 * division by zero raises the flag at `zero` (the node then fails, as the CPU's refuses it). */
struct div_i {
    int *zero;
    template <class V> __device__ V operator()(V x, V y) const
    {
        if (y == 0) {
            atomicExch(zero, 1);
            return 0;
        }
        return y == -1 ? wrap<V>(0 - (typename std::make_unsigned<V>::type)x) : x / y;
    }
};

/* ---------------------------------------------------------------- the kernels of the list */

#define BINARY_KERNEL(fn, F) \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *) { return binary<F>(ctx); }
#define UNARY_KERNEL(fn, F) \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *) { return unary<F>(ctx); }
#define BINARY_KERNEL_INT(fn, F, I) \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *) { return binary<F, I>(ctx); }
#define UNARY_KERNEL_INT(fn, F, I) \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *) { return unary<F, I>(ctx); }

BINARY_KERNEL_INT(cuda_add, add_f, add_i)
BINARY_KERNEL_INT(cuda_sub, sub_f, sub_i)
BINARY_KERNEL_INT(cuda_mul, mul_f, mul_i)
BINARY_KERNEL_INT(cuda_maximum, maximum_f, maximum_i)
BINARY_KERNEL_INT(cuda_minimum, minimum_f, minimum_i)
BINARY_KERNEL_INT(cuda_squared_difference, squared_difference_f, squared_difference_i)
BINARY_KERNEL(cuda_real_div, div_f)
BINARY_KERNEL(cuda_pow, pow_f)
BINARY_KERNEL(cuda_div_no_nan, div_no_nan_f)
BINARY_KERNEL(cuda_relu_grad, relu_grad_f)
BINARY_KERNEL(cuda_sigmoid_grad, sigmoid_grad_f)
BINARY_KERNEL(cuda_tanh_grad, tanh_grad_f)
BINARY_KERNEL(cuda_sqrt_grad, sqrt_grad_f)
BINARY_KERNEL(cuda_rsqrt_grad, rsqrt_grad_f)
BINARY_KERNEL(cuda_reciprocal_grad, reciprocal_grad_f)

UNARY_KERNEL_INT(cuda_neg, neg_f, neg_i)
UNARY_KERNEL_INT(cuda_abs, abs_f, abs_i)
UNARY_KERNEL_INT(cuda_sign, sign_f, sign_i)
UNARY_KERNEL_INT(cuda_square, square_f, square_i)
UNARY_KERNEL(cuda_reciprocal, reciprocal_f)
UNARY_KERNEL(cuda_sqrt, sqrt_f)
UNARY_KERNEL(cuda_rsqrt, rsqrt_f)
UNARY_KERNEL(cuda_exp, exp_f)
UNARY_KERNEL(cuda_log, log_f)
UNARY_KERNEL(cuda_log1p, log1p_f)
UNARY_KERNEL(cuda_tanh, tanh_f)
UNARY_KERNEL(cuda_sigmoid, sigmoid_f)
UNARY_KERNEL(cuda_relu, relu_f)
UNARY_KERNEL(cuda_floor, floor_f)
UNARY_KERNEL(cuda_ceil, ceil_f)
UNARY_KERNEL(cuda_sin, sin_f)
UNARY_KERNEL(cuda_cos, cos_f)
UNARY_KERNEL(cuda_softplus, softplus_f)

/* Div: floats as RealDiv; integers truncating, a division by zero failing the node after the kernel
 * (a flag in GPU memory read back, which waits for the GPU). */
extern "C" tide_status cuda_div(tide_kernel_ctx *ctx, void *)
{
    tide_dtype dt = tide_tensor_dtype(tide_kernel_input(ctx, 0));
    if (dt != TIDE_INT32 && dt != TIDE_INT64)
        return binary<div_f>(ctx);
    cudaStream_t s = cuda_begin(ctx);
    int *flag = NULL, zero = 0;
    if (!s || cuda_check(ctx, cudaMallocAsync((void **)&flag, sizeof *flag, s), "Div") != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_status st = cuda_check(ctx, cudaMemsetAsync(flag, 0, sizeof *flag, s), "Div");
    if (st == TIDE_OK)
        st = binary<div_f, div_i>(ctx, div_f(), div_i{flag});
    cudaError_t back = cudaMemcpyAsync(&zero, flag, sizeof zero, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(flag, s);
    if (st != TIDE_OK || cuda_check(ctx, back, "Div") != TIDE_OK ||
        cuda_check(ctx, cudaStreamSynchronize(s), "Div") != TIDE_OK)
        return tide_kernel_status(ctx);
    if (zero)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "integer division by zero (y %s has a zero)",
                                 cuda_shape_str(tide_tensor_shape(tide_kernel_input(ctx, 1))));
    return TIDE_OK;
}

/* BiasAdd: value [..., C] + bias [C], the broadcasting template with the bias's shape checked first. */
extern "C" tide_status cuda_bias_add(tide_kernel_ctx *ctx, void *node_state)
{
    (void)node_state;
    const tide_shape *v = tide_tensor_shape(tide_kernel_input(ctx, 0)), *b = tide_tensor_shape(tide_kernel_input(ctx, 1));
    const char *format = "NHWC";
    tide_attrs_get_string(tide_kernel_attrs(ctx), "data_format", &format);
    if (strcmp(format, "NHWC") != 0)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "data_format '%s' on the GPU: only NHWC", format);
    if (v->rank < 2 || b->rank != 1 || b->dims[0] != v->dims[v->rank - 1]) {
        char x[TIDE_SHAPE_STR_MAX], y[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "bias of shape %s must be a vector of the last "
                                 "dimension of value %s (rank >= 2)", tide_shape_format(b, y, sizeof y),
                                 tide_shape_format(v, x, sizeof x));
    }
    return binary<add_f>(ctx);
}
