/* common.cuh — what every .cu file of the CUDA kernel module shares: the engine's kernel API (through
 * module.cu's forwarding functions, module_abi.h), the kernel's device and stream, CUDA error
 * checks that fail the node with CUDA's message, reading small index tensors (axes, shapes, perms)
 * that live in GPU memory, and launch sizes. Kernels are float32 unless they say otherwise. */
#ifndef TIDE_CUDA_COMMON_CUH
#define TIDE_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "index_plan.h"
#include "module_abi.h"

#define TIDE_CUDA_THREADS 256

/* The entry points of TIDE_CUDA_KERNELS, defined in the .cu files. */
#define TIDE_CUDA_DECLARE(op, constraints, fn, flags) tide_status fn(tide_kernel_ctx *ctx, void *node_state);
extern "C" {
TIDE_CUDA_KERNELS(TIDE_CUDA_DECLARE)
}
#undef TIDE_CUDA_DECLARE

/* The table the engine gave (module.cu). */
extern const tide_cuda_host_api *tide_cuda_api;

/* The kernel's compute stream, after making its device current; NULL with the error recorded. */
cudaStream_t cuda_begin(tide_kernel_ctx *ctx);
/* TIDE_OK, or the node's error naming what failed and CUDA's message. */
tide_status cuda_check(tide_kernel_ctx *ctx, cudaError_t e, const char *what);
/* After launches: cudaGetLastError as cuda_check. */
tide_status cuda_launched(tide_kernel_ctx *ctx, const char *what);
/* Copies an int32 or int64 tensor of at most max elements (on the GPU or in host memory) into out;
 * returns its element count, or -1 with the error recorded (what names the input). Synchronises the
 * kernel's stream when the tensor is on the GPU. */
int64_t cuda_read_ints(tide_kernel_ctx *ctx, const tide_tensor *t, int64_t *out, int64_t max, const char *what);
/* A shape held by an int tensor (a random op's shape, Fill's dims): its values, none negative; false
 * with the error recorded. */
bool cuda_read_shape(tide_kernel_ctx *ctx, const tide_tensor *t, tide_shape *out, const char *what);
/* The same for one float32 scalar. */
bool cuda_read_float(tide_kernel_ctx *ctx, const tide_tensor *t, float *out, const char *what);
/* y = x transposed by perm (x of dims, elements of es bytes), enqueued on s (array.cu). */
cudaError_t cuda_transpose_launch(size_t es, const void *x, void *y, int rank, const int64_t *dims,
                                  const int64_t *perm, cudaStream_t s);
/* y = x walked by w from base (n elements of es bytes: 1, 2, 4 or 8), enqueued on s (movement.cu). */
cudaError_t cuda_walk_launch(size_t es, const void *x, void *y, const tide_walk *w, int64_t base, int64_t n,
                             cudaStream_t s);
/* y = x padded by p, the padding *fill (a device scalar) or 0 when fill is NULL (movement.cu). */
cudaError_t cuda_pad_launch(size_t es, const void *x, void *y, const tide_pad_plan *p, const void *fill, cudaStream_t s);
/* Pooling computed directly where cuDNN cannot pad evenly (pool.cu; float32, bit for bit the CPU's):
 * what 0 MaxPool and 1 AvgPool (x -> out), 2 MaxPoolGrad (x = orig_input, dy -> out), 3 AvgPoolGrad
 * (dy -> out), enqueued on s. */
cudaError_t cuda_pool_direct_launch(int what, const tide_conv_geometry *g, const float *x, const float *dy,
                                    float *out, cudaStream_t s);
/* "[2, 3]" of a shape, for messages (a static buffer per thread). */
const char *cuda_shape_str(const tide_shape *s);
/* Output 0 of ctx as a view of x with shape s (same number of elements; no copy). */
tide_status cuda_set_view(tide_kernel_ctx *ctx, tide_tensor *x, const tide_shape *s);

static inline float *fptr(const tide_tensor *t) { return (float *)tide_tensor_device_pointer(t); }
static inline unsigned cuda_blocks(int64_t n)
{
    int64_t b = (n + TIDE_CUDA_THREADS - 1) / TIDE_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}
/* A grid-stride loop over [0, n). */
#define CUDA_FOR(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#endif
