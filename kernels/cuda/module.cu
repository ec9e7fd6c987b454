/* module.cu — the CUDA kernel module's entry point (libtide_cuda_kernels.so; module_abi.h is the
 * contract): its kernel table in TIDE_CUDA_KERNELS order, the engine functions its kernels call
 * (each forwards through the table the engine handed over, so kernels are written against
 * tide_op.h as the CPU's are), and the helpers of common.cuh. Only tide_cuda_module_open is
 * exported (the module is compiled with hidden visibility). */
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common.cuh"

const tide_cuda_host_api *tide_cuda_api;

/* ---------------------------------------------------------------- the engine's functions */

extern "C" {
#define FORWARD(ret, name, params, args) \
    ret name params { return tide_cuda_api->name args; }
TIDE_CUDA_HOST_FUNCTIONS(FORWARD)
#undef FORWARD

tide_status tide_kernel_error(tide_kernel_ctx *ctx, tide_status code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tide_cuda_api->kernel_error(ctx, code, "%s", msg);
}
}

/* ---------------------------------------------------------------- helpers (common.cuh) */

cudaStream_t cuda_begin(tide_kernel_ctx *ctx)
{
    cudaError_t e = cudaSetDevice(tide_device_ordinal(tide_kernel_device(ctx)));
    if (e != cudaSuccess) {
        cuda_check(ctx, e, "cudaSetDevice");
        return NULL;
    }
    return (cudaStream_t)tide_stream_context(tide_kernel_stream(ctx));
}

tide_status cuda_check(tide_kernel_ctx *ctx, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return TIDE_OK;
    return tide_kernel_error(ctx, e == cudaErrorMemoryAllocation ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                             "%s: CUDA error %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

tide_status cuda_launched(tide_kernel_ctx *ctx, const char *what)
{
    return cuda_check(ctx, cudaGetLastError(), what);
}

const char *cuda_shape_str(const tide_shape *s)
{
    static thread_local char buf[TIDE_SHAPE_STR_MAX];
    return tide_shape_format(s, buf, sizeof buf);
}

int64_t cuda_read_ints(tide_kernel_ctx *ctx, const tide_tensor *t, int64_t *out, int64_t max, const char *what)
{
    tide_dtype dt = tide_tensor_dtype(t);
    int64_t n = tide_tensor_num_elements(t);
    if (dt != TIDE_INT32 && dt != TIDE_INT64) {
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be int32 or int64, got %s", what, tide_dtype_name(dt));
        return -1;
    }
    if (n > max) {
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s has %lld elements, at most %lld are allowed", what,
                          (long long)n, (long long)max);
        return -1;
    }
    const void *host = tide_tensor_data(t); /* an input in host memory (host_inputs): read where it is */
    const void *src = host ? NULL : tide_tensor_device_pointer(t);
    size_t bytes = tide_tensor_byte_size(t);
    int32_t small[64];
    void *dst = dt == TIDE_INT32 ? (void *)small : (void *)out;
    if (n > 64 && dt == TIDE_INT32) {
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s has %lld elements, at most 64 are allowed", what, (long long)n);
        return -1;
    }
    if (n > 0 && host) {
        memcpy(dst, host, bytes); /* no wait for the GPU: nothing on a stream wrote it */
    } else if (n > 0) { /* made in GPU memory: read back, which waits for the stream (and forbids capture) */
        cudaStream_t s = cuda_begin(ctx);
        if (!s)
            return -1;
        if (!src) {
            tide_kernel_error(ctx, TIDE_INTERNAL, "%s is in neither host nor GPU memory", what);
            return -1;
        }
        if (cuda_check(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), what) != TIDE_OK ||
            cuda_check(ctx, cudaStreamSynchronize(s), what) != TIDE_OK)
            return -1;
    }
    if (dt == TIDE_INT32)
        for (int64_t i = 0; i < n; i++)
            out[i] = small[i];
    return n;
}

bool cuda_read_shape(tide_kernel_ctx *ctx, const tide_tensor *t, tide_shape *out, const char *what)
{
    int64_t dims[TIDE_MAX_RANK];
    int64_t rank = cuda_read_ints(ctx, t, dims, TIDE_MAX_RANK, what);
    if (rank < 0)
        return false;
    out->rank = (int)rank;
    for (int k = 0; k < rank; k++) {
        if (dims[k] < 0) {
            tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s[%d] = %lld is negative", what, k, (long long)dims[k]);
            return false;
        }
        out->dims[k] = dims[k];
    }
    return true;
}

bool cuda_read_float(tide_kernel_ctx *ctx, const tide_tensor *t, float *out, const char *what)
{
    if (tide_tensor_dtype(t) != TIDE_FLOAT32 || tide_tensor_num_elements(t) != 1) {
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a float32 scalar, got %s %s", what,
                          tide_dtype_name(tide_tensor_dtype(t)), cuda_shape_str(tide_tensor_shape(t)));
        return false;
    }
    const float *host = (const float *)tide_tensor_data(t);
    if (host) { /* in host memory (tide_kernel_spec.host_inputs: Dropout's rate): no wait for the GPU */
        *out = *host;
        return true;
    }
    cudaStream_t s = cuda_begin(ctx); /* made in GPU memory: read back, waiting for the stream */
    return s && cuda_check(ctx, cudaMemcpyAsync(out, fptr(t), 4, cudaMemcpyDeviceToHost, s), what) == TIDE_OK &&
           cuda_check(ctx, cudaStreamSynchronize(s), what) == TIDE_OK;
}

/* ---------------------------------------------------------------- the table */

void cuda_blas_close(void);
void cuda_dnn_close(void);

static void module_close(void)
{
    cuda_blas_close();
    cuda_dnn_close();
}

#define ENTRY(op, constraints, fn, flags) {op, fn},
static const tide_cuda_kernel_entry kernels[] = {TIDE_CUDA_KERNELS(ENTRY)};
#undef ENTRY

#define STR2(x) #x
#define STR(x) STR2(x)

static const tide_cuda_module module = {
    TIDE_CUDA_ABI_VERSION,
    "sm_90 code + compute_90 PTX, CUDA " STR(__CUDACC_VER_MAJOR__) "." STR(__CUDACC_VER_MINOR__),
    (int)(sizeof kernels / sizeof kernels[0]),
    kernels,
    module_close,
};

extern "C" __attribute__((visibility("default"))) const tide_cuda_module *tide_cuda_module_open(const tide_cuda_host_api *api)
{
    if (api) {
        if (api->version != TIDE_CUDA_ABI_VERSION)
            return NULL;
        tide_cuda_api = api;
    }
    return &module;
}
