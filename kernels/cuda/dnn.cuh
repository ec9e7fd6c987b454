/* dnn.cuh — what the cuDNN kernels share (cudnn.cu: convolutions and pooling; batch_norm.cu): one
 * cuDNN handle per GPU, bound to the kernel's stream and used under a lock (calls only enqueue work),
 * the error check that fails the node with cuDNN's message, and dnn_call, which holds everything one
 * kernel's cuDNN call needs (descriptors, scratch tensors of the engine's caching allocator) and
 * releases it when the kernel returns. Defined in cudnn.cu; only compiled with cuDNN. */
#ifndef TIDE_CUDA_DNN_CUH
#define TIDE_CUDA_DNN_CUH

#include <mutex>

#include <cudnn.h>

#include "common.cuh"

#define MAX_GPUS 64
#define MSG_MAX 512

static inline tide_status dnn_failed(tide_kernel_ctx *ctx, cudnnStatus_t st, const char *what)
{
    return tide_kernel_error(ctx, st == CUDNN_STATUS_ALLOC_FAILED ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                             "cuDNN %s: %s", what, cudnnGetErrorString(st));
}

#define DNN(ctx, call)                                                                                          \
    do {                                                                                                        \
        cudnnStatus_t st_ = (call);                                                                             \
        if (st_ != CUDNN_STATUS_SUCCESS)                                                                        \
            return dnn_failed(ctx, st_, #call);                                                                 \
    } while (0)

/* Everything one cuDNN call needs, released by its destructor (descriptors, scratch tensors; the
 * stream is synchronised first when scratch memory was taken, as it goes back to the cache). */
struct dnn_call {
    tide_kernel_ctx *ctx;
    cudaStream_t stream = NULL;
    cudnnHandle_t handle = NULL;
    cudnnTensorDescriptor_t x = NULL, y = NULL, bn = NULL;
    cudnnFilterDescriptor_t w = NULL;
    cudnnConvolutionDescriptor_t conv = NULL;
    cudnnPoolingDescriptor_t pool = NULL;
    tide_tensor *scratch[3] = {NULL, NULL, NULL};
    std::unique_lock<std::mutex> hold;

    explicit dnn_call(tide_kernel_ctx *c);
    ~dnn_call();
    /* The device's handle on the kernel's stream, the lock held from here on. */
    tide_status begin();
    /* A scratch tensor of n elements of dt in slot i (0..2); NULL with the error recorded. */
    void *temp(int i, int64_t n, tide_dtype dt = TIDE_FLOAT32);
};

/* An NHWC descriptor of dims [N, H, W, C] (float32 unless t says otherwise). */
tide_status dnn_nhwc(tide_kernel_ctx *ctx, cudnnTensorDescriptor_t *d, const int64_t dims[4],
                     cudnnDataType_t t = CUDNN_DATA_FLOAT);
/* cuDNN's type of a float32, float16 or bfloat16 tensor's elements. */
static inline cudnnDataType_t dnn_type(tide_dtype dt)
{
    return dt == TIDE_FLOAT16 ? CUDNN_DATA_HALF : dt == TIDE_BFLOAT16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

#endif
