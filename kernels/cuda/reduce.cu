/* reduce.cu — GPU reductions: Sum, Mean, Max, Min over axes (and BiasAddGrad, a Sum over every axis
 * but the last). index_plan.h splits the input's dims into kept and reduced walks (each merged where
 * contiguous); one thread block computes each output (a grid-stride loop over outputs), its threads
 * striding over the reduced elements and combining through shared memory; few reduced elements per
 * output take one thread per output instead. Sums and means accumulate in double as the CPU's do
 * (float16 and bfloat16 are loaded as float32 and the result rounded back once, as the CPU's);
 * Max and Min propagate NaN. An empty reduction gives 0 (Sum), NaN (Mean), -inf (Max), inf (Min). */
#include <cmath>

#include "common.cuh"
#include "half.h"

enum reduce_kind { REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX, REDUCE_MIN };

template <int K> struct reducer;
template <> struct reducer<REDUCE_SUM> {
    typedef double acc;
    __device__ static acc init() { return 0.0; }
    __device__ static acc add(acc a, float x) { return a + x; }
    __device__ static acc merge(acc a, acc b) { return a + b; }
    __device__ static float finish(acc a, int64_t n) { (void)n; return (float)a; }
};
template <> struct reducer<REDUCE_MEAN> : reducer<REDUCE_SUM> {
    __device__ static float finish(acc a, int64_t n) { return (float)(a / (double)n); }
};
template <> struct reducer<REDUCE_MAX> {
    typedef float acc;
    __device__ static acc init() { return -INFINITY; }
    __device__ static acc add(acc a, float x) { return (x > a || isnan(x)) ? x : a; }
    __device__ static acc merge(acc a, acc b) { return (b > a || isnan(b)) ? b : a; }
    __device__ static float finish(acc a, int64_t n) { (void)n; return a; }
};
template <> struct reducer<REDUCE_MIN> {
    typedef float acc;
    __device__ static acc init() { return INFINITY; }
    __device__ static acc add(acc a, float x) { return (x < a || isnan(x)) ? x : a; }
    __device__ static acc merge(acc a, acc b) { return (b < a || isnan(b)) ? b : a; }
    __device__ static float finish(acc a, int64_t n) { (void)n; return a; }
};

/* One block per output; T is float, f16 or bf16 (loaded as float, the result rounded back once). */
template <int K, class T> __global__ void reduce_blocks(const T *x, T *y, tide_reduce_plan p)
{
    typedef reducer<K> R;
    __shared__ typename R::acc part[TIDE_CUDA_THREADS];
    for (int64_t o = blockIdx.x; o < p.num_outputs; o += gridDim.x) {
        const T *base = x + tide_walk_offset(&p.kept, o);
        typename R::acc a = R::init();
        for (int64_t r = threadIdx.x; r < p.reduce_size; r += blockDim.x)
            a = R::add(a, io<T>::load(base[tide_walk_offset(&p.reduced, r)]));
        part[threadIdx.x] = a;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half /= 2) {
            if ((int)threadIdx.x < half)
                part[threadIdx.x] = R::merge(part[threadIdx.x], part[threadIdx.x + half]);
            __syncthreads();
        }
        if (threadIdx.x == 0)
            y[o] = io<T>::store(R::finish(part[0], p.reduce_size));
        __syncthreads();
    }
}

/* One thread per output (few reduced elements each). */
template <int K, class T> __global__ void reduce_threads(const T *x, T *y, tide_reduce_plan p)
{
    typedef reducer<K> R;
    CUDA_FOR(o, p.num_outputs) {
        const T *base = x + tide_walk_offset(&p.kept, o);
        typename R::acc a = R::init();
        for (int64_t r = 0; r < p.reduce_size; r++)
            a = R::add(a, io<T>::load(base[tide_walk_offset(&p.reduced, r)]));
        y[o] = io<T>::store(R::finish(a, p.reduce_size));
    }
}

template <int K, class T> static void reduce_typed(cudaStream_t s, const T *x, T *y, const tide_reduce_plan &p)
{
    if (p.reduce_size <= 32 || p.num_outputs >= 65536)
        reduce_threads<K><<<cuda_blocks(p.num_outputs), TIDE_CUDA_THREADS, 0, s>>>(x, y, p);
    else
        reduce_blocks<K><<<(unsigned)(p.num_outputs < 65535 ? p.num_outputs : 65535), TIDE_CUDA_THREADS, 0, s>>>(
            x, y, p);
}

template <int K> static tide_status launch(tide_kernel_ctx *ctx, const tide_tensor *x, const bool *reduce,
                                           const tide_shape *out_shape)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, out_shape, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    const tide_shape *in = tide_tensor_shape(x);
    tide_reduce_plan p;
    tide_plan_reduce(in->rank, in->dims, reduce, &p);
    if (p.num_outputs == 0)
        return TIDE_OK;
    tide_dtype dt = tide_tensor_dtype(x);
    if (dt == TIDE_FLOAT16)
        reduce_typed<K>(s, (const f16 *)tide_tensor_device_pointer(x), (f16 *)tide_tensor_device_pointer(y), p);
    else if (dt == TIDE_BFLOAT16)
        reduce_typed<K>(s, (const bf16 *)tide_tensor_device_pointer(x), (bf16 *)tide_tensor_device_pointer(y), p);
    else
        reduce_typed<K>(s, fptr(x), fptr(y), p);
    return cuda_launched(ctx, "the reduction kernel");
}

/* Reads and checks the axes (input 1), then reduces. */
template <int K> static tide_status reduce_op(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t axes[TIDE_PLAN_MAX_RANK * 2];
    int64_t n = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), axes, TIDE_PLAN_MAX_RANK * 2, "reduction_indices");
    if (n < 0)
        return tide_kernel_status(ctx);
    bool reduce[TIDE_PLAN_MAX_RANK] = {false}, keep_dims = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "keep_dims", &keep_dims);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + in->rank : axes[i];
        if (a < 0 || a >= in->rank)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis %lld is out of range for input of shape %s",
                                     (long long)axes[i], cuda_shape_str(in));
        if (reduce[a])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis %lld is given twice", (long long)axes[i]);
        reduce[a] = true;
    }
    tide_shape out = {0, {0}};
    for (int k = 0; k < in->rank; k++)
        if (!reduce[k] || keep_dims)
            out.dims[out.rank++] = reduce[k] ? 1 : in->dims[k];
    return launch<K>(ctx, x, reduce, &out);
}

extern "C" tide_status cuda_sum(tide_kernel_ctx *ctx, void *) { return reduce_op<REDUCE_SUM>(ctx); }
extern "C" tide_status cuda_mean(tide_kernel_ctx *ctx, void *) { return reduce_op<REDUCE_MEAN>(ctx); }
extern "C" tide_status cuda_max(tide_kernel_ctx *ctx, void *) { return reduce_op<REDUCE_MAX>(ctx); }
extern "C" tide_status cuda_min(tide_kernel_ctx *ctx, void *) { return reduce_op<REDUCE_MIN>(ctx); }

/* BiasAddGrad: out_backprop [..., C] summed into [C]. */
extern "C" tide_status cuda_bias_add_grad(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *dy = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(dy);
    if (in->rank < 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "out_backprop must have rank >= 2, got shape %s",
                                 cuda_shape_str(in));
    bool reduce[TIDE_PLAN_MAX_RANK] = {false};
    for (int k = 0; k + 1 < in->rank; k++)
        reduce[k] = true;
    tide_shape out = {1, {in->dims[in->rank - 1]}};
    return launch<REDUCE_SUM>(ctx, dy, reduce, &out);
}
