/* pool.cu — MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad computed directly, a thread per element
 * (pool_direct.h: the CPU's rules and order of operations, checked against the CPU kernels on the host
 * by test_cuda_host), for the geometries cuDNN's pooling cannot express: padding it cannot place
 * evenly (SAME with an odd total, e.g. a 3 x 3 window at stride 2 over an even size: none before, one
 * after), where cuDNN's symmetric padding would give another output size; cudnn.cu's pool_setup sends
 * those here. Pooling windows are small and this path serves only such shapes, so each thread walks
 * its window (or the windows covering its element) itself. float32; never run on a GPU. */
#include "common.cuh"
#include "pool_direct.h"

__global__ void pool_forward_direct(const float *x, float *y, tide_pool_geo g, int64_t total, bool max)
{
    CUDA_FOR(i, total) y[i] = tide_pool_forward_at(&g, x, i, max);
}

__global__ void pool_backward_direct(const float *x, const float *dy, float *dx, tide_pool_geo g, int64_t total,
                                     bool max)
{
    CUDA_FOR(i, total) dx[i] = tide_pool_backward_at(&g, x, dy, i, max);
}

cudaError_t cuda_pool_direct_launch(int what, const tide_conv_geometry *geometry, const float *x, const float *dy,
                                    float *out, cudaStream_t s)
{
    const tide_conv_geometry &k = *geometry;
    tide_pool_geo g = {k.in_h, k.in_w, k.in_c, k.out_h, k.out_w, k.win.size_h, k.win.size_w, k.win.stride_h,
                       k.win.stride_w, k.pad_top, k.pad_left};
    bool max = what == 0 || what == 2;
    int64_t total = what < 2 ? k.batch * k.out_h * k.out_w * k.in_c : k.batch * k.in_h * k.in_w * k.in_c;
    if (total == 0)
        return cudaSuccess;
    if (what < 2)
        pool_forward_direct<<<cuda_blocks(total), TIDE_CUDA_THREADS, 0, s>>>(x, out, g, total, max);
    else
        pool_backward_direct<<<cuda_blocks(total), TIDE_CUDA_THREADS, 0, s>>>(x, dy, out, g, total, max);
    return cudaGetLastError();
}
