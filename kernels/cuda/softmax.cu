/* softmax.cu — Softmax, LogSoftmax and the two softmax cross-entropies on the GPU, one thread block
 * per row of the last dimension (the classes), as the CPU's kernels/cpu/softmax.c: the row is shifted
 * by its maximum, the sum of exponentials accumulates in double, softmax = exp(x - m) / s,
 * log_softmax = x - m - log(s), loss = -sum(labels * log_softmax), backprop = softmax - labels
 * (one_hot(label) when sparse). The sparse op checks its labels on the GPU and fails, naming the
 * first bad row, before anything is written, as the CPU's does. Shapes are checked by the same
 * functions as the CPU's (engine/ops/nn_ops.c). */
#include <cmath>

#include "common.cuh"

#define MSG_MAX 512

enum { KIND_SOFTMAX, KIND_LOG_SOFTMAX, KIND_XENT, KIND_SPARSE_XENT };

/* Block-wide reduction of one value per thread (max when is_max, else sum); every thread gets it. */
template <class T> __device__ T block_reduce(T v, bool is_max)
{
    __shared__ T part[TIDE_CUDA_THREADS];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            T o = part[threadIdx.x + half];
            part[threadIdx.x] = is_max ? ((o > part[threadIdx.x] || isnan(o)) ? o : part[threadIdx.x])
                                       : part[threadIdx.x] + o;
        }
        __syncthreads();
    }
    T r = part[0];
    __syncthreads();
    return r;
}

/* kind: what to write. out: softmax / log_softmax / backprop; loss: per row (xent); labels: dense
 * [rows, classes] floats or sparse indices (int32 when labels32, else int64). */
__global__ void rows_kernel(int kind, const float *x, float *out, float *loss, const void *labels, bool labels32,
                            int64_t rows, int64_t classes)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *row = x + r * classes;
        float *o = out + r * classes;
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
            m = (row[c] > m || isnan(row[c])) ? row[c] : m;
        m = block_reduce<float>(m, true);
        double s = 0;
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
            s += exp((double)(row[c] - m));
        s = block_reduce<double>(s, false);
        float log_s = (float)log(s);
        int64_t label = -1;
        if (kind == KIND_SPARSE_XENT)
            label = labels32 ? ((const int32_t *)labels)[r] : ((const int64_t *)labels)[r];
        double l = 0;
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
            float shifted = row[c] - m, log_p = shifted - log_s;
            if (kind == KIND_SOFTMAX) {
                o[c] = (float)(exp((double)shifted) / s);
            } else if (kind == KIND_LOG_SOFTMAX) {
                o[c] = log_p;
            } else {
                float y = kind == KIND_XENT ? ((const float *)labels)[r * classes + c] : (c == label ? 1.0f : 0.0f);
                o[c] = (float)(exp((double)shifted) / s) - y;
                if (y != 0.0f)
                    l -= (double)y * log_p;
            }
        }
        if (kind == KIND_XENT || kind == KIND_SPARSE_XENT) {
            l = block_reduce<double>(l, false);
            if (threadIdx.x == 0)
                loss[r] = (float)l;
        }
    }
}

/* The first row whose label is outside [0, classes) into *bad (which starts at rows). */
__global__ void find_bad_label(const void *labels, bool labels32, int64_t rows, int64_t classes,
                               unsigned long long *bad)
{
    CUDA_FOR(r, rows) {
        int64_t label = labels32 ? ((const int32_t *)labels)[r] : ((const int64_t *)labels)[r];
        if (label < 0 || label >= classes)
            atomicMin(bad, (unsigned long long)r);
    }
}

static unsigned row_blocks(int64_t rows) { return (unsigned)(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535); }

static tide_status softmax_common(tide_kernel_ctx *ctx, int kind)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(x);
    char msg[MSG_MAX];
    if (!tide_nn_check_logits(s, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, s);
    cudaStream_t st = y ? cuda_begin(ctx) : NULL;
    if (!st)
        return tide_kernel_status(ctx);
    int64_t classes = s->dims[s->rank - 1], rows = classes ? tide_tensor_num_elements(x) / classes : 0;
    if (rows > 0)
        rows_kernel<<<row_blocks(rows), TIDE_CUDA_THREADS, 0, st>>>(kind, fptr(x), fptr(y), NULL, NULL, false, rows,
                                                                    classes);
    return cuda_launched(ctx, "the softmax kernel");
}

static tide_status xent_common(tide_kernel_ctx *ctx, bool sparse)
{
    const tide_tensor *f = tide_kernel_input(ctx, 0), *l = tide_kernel_input(ctx, 1);
    int64_t rows, classes;
    char msg[MSG_MAX];
    if (!tide_nn_check_xent(tide_tensor_shape(f), tide_tensor_shape(l), sparse, &rows, &classes, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    bool labels32 = tide_tensor_dtype(l) == TIDE_INT32;
    cudaStream_t st = cuda_begin(ctx);
    if (!st)
        return tide_kernel_status(ctx);
    if (sparse && rows > 0) {
        unsigned long long *bad = NULL, found = (unsigned long long)rows;
        if (cuda_check(ctx, cudaMallocAsync((void **)&bad, sizeof *bad, st), "label check") != TIDE_OK)
            return tide_kernel_status(ctx);
        cudaMemcpyAsync(bad, &found, sizeof found, cudaMemcpyHostToDevice, st);
        find_bad_label<<<cuda_blocks(rows), TIDE_CUDA_THREADS, 0, st>>>(tide_tensor_device_pointer(l), labels32, rows,
                                                                        classes, bad);
        cudaMemcpyAsync(&found, bad, sizeof found, cudaMemcpyDeviceToHost, st);
        cudaFreeAsync(bad, st);
        if (cuda_check(ctx, cudaStreamSynchronize(st), "label check") != TIDE_OK)
            return tide_kernel_status(ctx);
        if (found < (unsigned long long)rows) {
            int64_t label = 0;
            size_t size = labels32 ? 4 : 8;
            cudaMemcpy(&label, (const char *)tide_tensor_device_pointer(l) + found * size, size, cudaMemcpyDeviceToHost);
            if (labels32)
                label = (int32_t)label;
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "label %lld of row %llu is outside [0, %lld) (the "
                                     "classes of features %s)", (long long)label, found, (long long)classes,
                                     cuda_shape_str(tide_tensor_shape(f)));
        }
    }
    tide_shape loss_shape = {1, {rows}}, back_shape = {2, {rows, classes}};
    tide_tensor *loss = tide_kernel_alloc_output(ctx, 0, &loss_shape, false);
    tide_tensor *back = loss ? tide_kernel_alloc_output(ctx, 1, &back_shape, false) : NULL;
    if (!back)
        return tide_kernel_status(ctx);
    if (rows > 0)
        rows_kernel<<<row_blocks(rows), TIDE_CUDA_THREADS, 0, st>>>(sparse ? KIND_SPARSE_XENT : KIND_XENT, fptr(f),
                                                                    fptr(back), fptr(loss), tide_tensor_device_pointer(l),
                                                                    labels32, rows, classes);
    return cuda_launched(ctx, "the cross-entropy kernel");
}

extern "C" tide_status cuda_softmax(tide_kernel_ctx *ctx, void *) { return softmax_common(ctx, KIND_SOFTMAX); }
extern "C" tide_status cuda_log_softmax(tide_kernel_ctx *ctx, void *) { return softmax_common(ctx, KIND_LOG_SOFTMAX); }
extern "C" tide_status cuda_softmax_xent(tide_kernel_ctx *ctx, void *) { return xent_common(ctx, false); }
extern "C" tide_status cuda_sparse_softmax_xent(tide_kernel_ctx *ctx, void *) { return xent_common(ctx, true); }
