/* random.cu — RandomUniform, RandomNormal and Dropout (float32) on the GPU, drawing the CPU's stream: the node's
 * Philox4x32-10 generator is keyed on the host by the CPU's seed rule (cuda_kernels.c calls
 * tide_philox_seed), each run reserves its blocks there, and block b of the run gives elements
 * 4b..4b+3 exactly as kernels/cpu/random.c maps them (uniform: a word each, top 24 bits; normal:
 * Box-Muller on word pairs (0,1) and (2,3)). Uniforms are bit-identical to the CPU's; normals differ
 * only where CUDA's logf, sqrtf and sincosf round differently from glibc's (a few ulps). Dropout
 * (kernels/cpu/nn_misc.c's rule: element i is dropped when the i-th uniform is below rate, kept ones
 * scaled by 1 / (1 - rate) computed in double on the host) is bit for bit the CPU's; never run on a
 * GPU. */
#include "common.cuh"
#include "philox_block.h"

__global__ void random_kernel(float *out, int64_t n, tide_philox_key key, uint64_t base, bool normal)
{
    CUDA_FOR(b, (n + 3) / 4) {
        uint32_t w[4];
        tide_philox_block_at(key, base + (uint64_t)b, w);
        float v[4];
        if (normal) {
            for (int k = 0; k < 4; k += 2) {
                float r = sqrtf(-2.0f * logf(tide_philox_unit_open0(w[k]))), s, c;
                sincosf(6.283185307179586476925286766559f * tide_philox_unit(w[k + 1]), &s, &c);
                v[k] = r * c;
                v[k + 1] = r * s;
            }
        } else {
            for (int k = 0; k < 4; k++)
                v[k] = tide_philox_unit(w[k]);
        }
        for (int k = 0; k < 4 && b * 4 + k < n; k++)
            out[b * 4 + k] = v[k];
    }
}

/* The node's key and the first of the blocks reserved for n elements (4 a block). */
static tide_philox_key reserve_blocks(void *node_state, int64_t n, uint64_t *base)
{
    uint32_t key[2];
    tide_philox_key k;
    *base = tide_cuda_api->philox_reserve(node_state, (uint64_t)((n + 3) / 4), key, &k.stream);
    k.k0 = key[0];
    k.k1 = key[1];
    return k;
}

static tide_status random_common(tide_kernel_ctx *ctx, void *node_state, bool normal)
{
    tide_shape shape;
    if (!cuda_read_shape(ctx, tide_kernel_input(ctx, 0), &shape, "shape"))
        return tide_kernel_status(ctx);
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &shape, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(y);
    uint64_t base;
    tide_philox_key k = reserve_blocks(node_state, n, &base);
    if (n > 0)
        random_kernel<<<cuda_blocks((n + 3) / 4), TIDE_CUDA_THREADS, 0, s>>>(fptr(y), n, k, base, normal);
    return cuda_launched(ctx, "the Philox kernel");
}

extern "C" tide_status cuda_random_uniform(tide_kernel_ctx *ctx, void *state) { return random_common(ctx, state, false); }
extern "C" tide_status cuda_random_normal(tide_kernel_ctx *ctx, void *state) { return random_common(ctx, state, true); }

__global__ void dropout_kernel(const float *x, float *y, float *mask, int64_t n, tide_philox_key key, uint64_t base,
                               float rate, float scale)
{
    CUDA_FOR(b, (n + 3) / 4) {
        uint32_t w[4];
        tide_philox_block_at(key, base + (uint64_t)b, w);
        for (int k = 0; k < 4 && b * 4 + k < n; k++) {
            int64_t i = b * 4 + k;
            float m = tide_philox_unit(w[k]) < rate ? 0.0f : scale;
            mask[i] = m;
            y[i] = __fmul_rn(x[i], m);
        }
    }
}

/* Dropout(x, rate) -> y, mask; rate is read on the host (the check and the scale). It is a host-memory
 * argument (engine/host_inputs.c): a constant or fed rate arrives in host memory and is read without
 * waiting for the GPU; a rate computed on the GPU is read back (cuda_read_float), which waits. */
extern "C" tide_status cuda_dropout(tide_kernel_ctx *ctx, void *node_state)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0), *r = tide_kernel_input(ctx, 1);
    char msg[256];
    if (!tide_nn_check_dropout_rate(tide_tensor_shape(r), NULL, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    float rate;
    if (!cuda_read_float(ctx, r, &rate, "rate"))
        return tide_kernel_status(ctx);
    double rv = rate;
    if (!tide_nn_check_dropout_rate(tide_tensor_shape(r), &rv, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    const tide_shape *s = tide_tensor_shape(x);
    tide_tensor *mask = tide_kernel_alloc_output(ctx, 1, s, false);
    tide_tensor *y = mask ? tide_kernel_forward_or_alloc(ctx, 0, 0, s) : NULL;
    cudaStream_t st = y ? cuda_begin(ctx) : NULL;
    if (!st)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(x);
    uint64_t base;
    tide_philox_key k = reserve_blocks(node_state, n, &base);
    if (n > 0)
        dropout_kernel<<<cuda_blocks((n + 3) / 4), TIDE_CUDA_THREADS, 0, st>>>(fptr(x), fptr(y), fptr(mask), n, k, base,
                                                                             rate, (float)(1.0 / (1.0 - rv)));
    return cuda_launched(ctx, "Dropout's kernel");
}
