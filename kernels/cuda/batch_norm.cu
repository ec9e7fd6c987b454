/* batch_norm.cu — FusedBatchNorm and FusedBatchNormGrad (and their V2 and V3) on the GPU through
 * cuDNN's batch normalisation, float32, with the CPU kernels' outputs (kernels/cpu/batch_norm.c):
 * x [..., C] is every dimension but the last a row, given to cuDNN as an NHWC tensor [rows, 1, 1, C]
 * in spatial mode (statistics per channel over the rows).
 *
 * Forward, training: cudnnBatchNormalizationForwardTraining gives y, the batch mean and 1 / sqrt(v +
 * epsilon) (its running averages are not asked for); a small kernel then writes the CPU's outputs
 * from them: batch_mean = reserve_space_1 = m, reserve_space_2 = v (the biased variance, recovered as
 * 1 / inv_std^2 - epsilon in double) and batch_variance = v * n / (n - 1) (v when n == 1). An empty x
 * gives NaN statistics, as on the CPU, and one row is computed by a small kernel (m = x, v = 0). Inference: cudnnBatchNormalizationForwardInference, and the
 * given mean and variance copied to the four statistics outputs.
 * Gradient: 1 / sqrt(reserve_space_2 + epsilon) is computed first, then
 * cudnnBatchNormalizationBackward with the saved mean and that inv_std gives x_backprop,
 * scale_backprop = sum(dy * xhat) and offset_backprop = sum(dy); with is_training false x_backprop is
 * then rewritten as dy * scale * inv_std (cuDNN's backward is the training one). The remaining
 * outputs (reserve spaces) are empty. Shapes are checked by the CPU's functions (engine/ops/nn_ops.c).
 * cuDNN computes its statistics in float32 (the CPU in double): results agree to float32 rounding
 * over the reduction, not bit for bit. Never run on a GPU yet. */
#include <cmath>

#include "common.cuh"

#ifndef TIDE_CUDA_HAVE_CUDNN

#define NO_CUDNN(fn)                                                                                            \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *)                                                     \
    {                                                                                                           \
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "this CUDA kernel module was built without cuDNN "    \
                                 "(meson -Dcudnn_dir=... or $CUDNN_PATH at setup)");                            \
    }
NO_CUDNN(cuda_batch_norm)
NO_CUDNN(cuda_batch_norm_grad)

#else

#include "dnn.cuh"

/* ---------------------------------------------------------------- small kernels */

/* From cuDNN's saved inv_std (in var): rs2 = v, var = the unbiased variance, rs1 = mean. */
__global__ void bn_training_stats(const float *mean, float *var, float *rs1, float *rs2, int64_t c, int64_t rows,
                                  double eps)
{
    CUDA_FOR(k, c) {
        double inv = var[k];
        double v = 1.0 / (inv * inv) - eps;
        if (v < 0)
            v = 0; /* rounding of a zero variance */
        rs1[k] = mean[k];
        rs2[k] = (float)v;
        var[k] = (float)(rows > 1 ? v * (double)rows / (double)(rows - 1) : v);
    }
}

__global__ void bn_fill(float *a, float *b, float *c, float *d, int64_t n, float value)
{
    CUDA_FOR(k, n) a[k] = b[k] = c[k] = d[k] = value;
}

__global__ void bn_inv_std(const float *var, float *inv, int64_t c, double eps)
{
    CUDA_FOR(k, c) inv[k] = (float)(1.0 / sqrt((double)var[k] + eps));
}

/* One row (training): m = x, v = 0, and y by the CPU's formula (offset, or NaN when epsilon is 0). */
__global__ void bn_single_row(const float *x, const float *scale, const float *offset, float *y, float *mean,
                              float *var, float *rs1, float *rs2, int64_t c, double eps)
{
    CUDA_FOR(k, c) {
        float a = (float)((double)scale[k] * (1.0 / sqrt(eps)));
        y[k] = (x[k] - x[k]) * a + offset[k];
        mean[k] = rs1[k] = x[k];
        var[k] = rs2[k] = 0.0f;
    }
}

/* x_backprop in inference: dy * scale * inv_std per channel. */
__global__ void bn_inference_dx(const float *dy, const float *scale, const float *inv, float *dx, int64_t n, int64_t c)
{
    CUDA_FOR(i, n) {
        int64_t k = i % c;
        dx[i] = dy[i] * (scale[k] * inv[k]);
    }
}

/* ---------------------------------------------------------------- shared steps */

/* The attrs, and x (input xi) and the channel vectors (inputs first .. first + n) checked as the CPU
 * checks them; *channels and *rows of x. */
static tide_status bn_check(tide_kernel_ctx *ctx, int xi, int first, const char *const *names, const bool *empty_ok,
                            int n, bool *training, double *eps, int64_t *channels, int64_t *rows)
{
    *training = true;
    *eps = 0.0001;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "is_training", training);
    tide_attrs_get_float(tide_kernel_attrs(ctx), "epsilon", eps);
    const tide_shape *x = tide_tensor_shape(tide_kernel_input(ctx, xi));
    char msg[MSG_MAX];
    if (!tide_nn_check_batch_norm_x(x, channels, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    for (int i = 0; i < n; i++)
        if (!tide_nn_check_channel_vector(tide_tensor_shape(tide_kernel_input(ctx, first + i)), names[i],
                                          empty_ok[i] && *training, x, channels, msg, sizeof msg))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    int64_t total = tide_tensor_num_elements(tide_kernel_input(ctx, xi));
    *rows = *channels > 0 ? total / *channels : 0;
    if (total > INT32_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "x %s has %lld elements, beyond cuDNN's int range",
                                 cuda_shape_str(x), (long long)total);
    if (*eps < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "epsilon %g is negative", *eps);
    return TIDE_OK;
}

/* Outputs [from, num_outputs): the empty reserve spaces. */
static tide_status bn_empty_outputs(tide_kernel_ctx *ctx, int from)
{
    tide_shape empty = {1, {0}};
    for (int i = from; i < tide_kernel_num_outputs(ctx); i++)
        if (!tide_kernel_alloc_output(ctx, i, &empty, false))
            return tide_kernel_status(ctx);
    return TIDE_OK;
}

/* The handle, x's descriptor [rows, 1, 1, C] and the per-channel one cuDNN derives from it. */
static tide_status bn_descriptors(dnn_call &c, int64_t rows, int64_t channels)
{
    int64_t dims[4] = {rows, 1, 1, channels};
    if (c.begin() != TIDE_OK || dnn_nhwc(c.ctx, &c.x, dims) != TIDE_OK)
        return tide_kernel_status(c.ctx);
    DNN(c.ctx, cudnnCreateTensorDescriptor(&c.bn));
    DNN(c.ctx, cudnnDeriveBNTensorDescriptor(c.bn, c.x, CUDNN_BATCHNORM_SPATIAL));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- FusedBatchNorm(V2, V3) */

static tide_status bn_forward(tide_kernel_ctx *ctx)
{
    static const char *const names[] = {"scale", "offset", "mean", "variance"};
    static const bool empty_ok[] = {false, false, true, true};
    bool training;
    double eps;
    int64_t c = 0, rows = 0;
    if (bn_check(ctx, 0, 1, names, empty_ok, 4, &training, &eps, &c, &rows) != TIDE_OK)
        return tide_kernel_status(ctx);
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
    tide_shape vs = {1, {c}};
    float *stat[4];
    for (int i = 0; i < 4; i++) {
        tide_tensor *t = y ? tide_kernel_alloc_output(ctx, i + 1, &vs, false) : NULL;
        if (!t)
            return tide_kernel_status(ctx);
        stat[i] = fptr(t);
    }
    if (bn_empty_outputs(ctx, 5) != TIDE_OK)
        return tide_kernel_status(ctx);
    cudaStream_t s = cuda_begin(ctx);
    if (!s || c == 0)
        return tide_kernel_status(ctx);
    const float *scale = fptr(tide_kernel_input(ctx, 1)), *offset = fptr(tide_kernel_input(ctx, 2));
    const float one = 1.0f, zero = 0.0f;
    if (!training) {
        const float *mean = fptr(tide_kernel_input(ctx, 3)), *var = fptr(tide_kernel_input(ctx, 4));
        for (int i = 0; i < 4; i++)
            if (cuda_check(ctx, cudaMemcpyAsync(stat[i], i % 2 ? var : mean, (size_t)c * 4, cudaMemcpyDeviceToDevice, s),
                           "copying the statistics") != TIDE_OK)
                return tide_kernel_status(ctx);
        if (rows == 0)
            return TIDE_OK;
        dnn_call d(ctx);
        if (bn_descriptors(d, rows, c) != TIDE_OK)
            return tide_kernel_status(ctx);
        DNN(ctx, cudnnBatchNormalizationForwardInference(d.handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x, fptr(x),
                                                         d.x, fptr(y), d.bn, scale, offset, mean, var, eps));
        return TIDE_OK;
    }
    if (rows == 0) { /* no data: no statistics, as on the CPU */
        bn_fill<<<cuda_blocks(c), TIDE_CUDA_THREADS, 0, s>>>(stat[0], stat[1], stat[2], stat[3], c, NAN);
        return cuda_launched(ctx, "the batch norm statistics kernel");
    }
    if (rows == 1) { /* cuDNN's statistics want more than one value per channel */
        bn_single_row<<<cuda_blocks(c), TIDE_CUDA_THREADS, 0, s>>>(fptr(x), scale, offset, fptr(y), stat[0], stat[1],
                                                                   stat[2], stat[3], c, eps);
        return cuda_launched(ctx, "the batch norm single-row kernel");
    }
    dnn_call d(ctx);
    if (bn_descriptors(d, rows, c) != TIDE_OK)
        return tide_kernel_status(ctx);
    /* the saved mean goes to batch_mean, the saved inv_std to batch_variance (rewritten below) */
    DNN(ctx, cudnnBatchNormalizationForwardTraining(d.handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x, fptr(x), d.x,
                                                    fptr(y), d.bn, scale, offset, 1.0, NULL, NULL, eps, stat[0],
                                                    stat[1]));
    bn_training_stats<<<cuda_blocks(c), TIDE_CUDA_THREADS, 0, s>>>(stat[0], stat[1], stat[2], stat[3], c, rows, eps);
    return cuda_launched(ctx, "the batch norm statistics kernel");
}

/* ---------------------------------------------------------------- FusedBatchNormGrad(V2, V3) */

static tide_status bn_backward(tide_kernel_ctx *ctx)
{
    const tide_tensor *dy = tide_kernel_input(ctx, 0), *x = tide_kernel_input(ctx, 1);
    tide_shape merged;
    char msg[MSG_MAX];
    if (!tide_nn_same_shape(tide_tensor_shape(dy), tide_tensor_shape(x), "y_backprop", "x", &merged, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    static const char *const names[] = {"scale", "reserve_space_1", "reserve_space_2"};
    static const bool empty_ok[] = {false, false, false};
    bool training;
    double eps;
    int64_t c = 0, rows = 0;
    if (bn_check(ctx, 1, 2, names, empty_ok, 3, &training, &eps, &c, &rows) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_tensor *dx = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
    tide_shape vs = {1, {c}};
    tide_tensor *dscale = dx ? tide_kernel_alloc_output(ctx, 1, &vs, true) : NULL;
    tide_tensor *doffset = dscale ? tide_kernel_alloc_output(ctx, 2, &vs, true) : NULL;
    if (!doffset || bn_empty_outputs(ctx, 3) != TIDE_OK)
        return tide_kernel_status(ctx);
    if (c == 0 || rows == 0) /* the sums of nothing: zeros */
        return TIDE_OK;
    dnn_call d(ctx);
    if (bn_descriptors(d, rows, c) != TIDE_OK)
        return tide_kernel_status(ctx);
    float *inv = (float *)d.temp(0, c);
    if (!inv)
        return tide_kernel_status(ctx);
    const float *scale = fptr(tide_kernel_input(ctx, 2)), *mean = fptr(tide_kernel_input(ctx, 3));
    bn_inv_std<<<cuda_blocks(c), TIDE_CUDA_THREADS, 0, d.stream>>>(fptr(tide_kernel_input(ctx, 4)), inv, c, eps);
    if (cuda_launched(ctx, "the batch norm inv_std kernel") != TIDE_OK)
        return tide_kernel_status(ctx);
    const float one = 1.0f, zero = 0.0f;
    DNN(ctx, cudnnBatchNormalizationBackward(d.handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x, fptr(x),
                                             d.x, fptr(dy), d.x, fptr(dx), d.bn, scale, fptr(dscale), fptr(doffset),
                                             eps, mean, inv));
    if (training)
        return TIDE_OK;
    int64_t n = rows * c;
    bn_inference_dx<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, d.stream>>>(fptr(dy), scale, inv, fptr(dx), n, c);
    return cuda_launched(ctx, "the batch norm inference gradient kernel");
}

extern "C" tide_status cuda_batch_norm(tide_kernel_ctx *ctx, void *) { return bn_forward(ctx); }
extern "C" tide_status cuda_batch_norm_grad(tide_kernel_ctx *ctx, void *) { return bn_backward(ctx); }

#endif
