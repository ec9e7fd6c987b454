/* matmul.cu — MatMul and BatchMatMul through cuBLAS (SGEMM, strided batched for BatchMatMul; float16
 * and bfloat16 through cublasGemmEx / cublasGemmStridedBatchedEx with float32 accumulation
 * (CUBLAS_COMPUTE_32F), the product rounded once on store as on the CPU; never run on a GPU). Row-major
 * tensors are column-major transposes, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with
 * the operands swapped, and no copy. One cuBLAS handle per GPU, made on first use and bound to the
 * device's compute stream; calls on it are serialised by a lock (they only enqueue work).
 * $TIDE_GPU_TF32=1 lets cuBLAS use TF32 tensor cores for float32 (about 10 bits of mantissa in the
 * products: 455 TFLOP/s against 51 on an H200); the default is exact float32 FMA. */
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <cublas_v2.h>

#include "common.cuh"

#define MAX_GPUS 64

static std::mutex blas_lock;
static cublasHandle_t handles[MAX_GPUS];

void cuda_blas_close(void)
{
    std::lock_guard<std::mutex> hold(blas_lock);
    for (int i = 0; i < MAX_GPUS; i++)
        if (handles[i]) {
            cublasDestroy(handles[i]);
            handles[i] = NULL;
        }
}

static bool tf32_wanted(void)
{
    const char *v = getenv("TIDE_GPU_TF32");
    return v && strcmp(v, "1") == 0;
}

/* With blas_lock held: the handle of the kernel's GPU, on stream s; NULL with the error recorded. */
static cublasHandle_t handle_for(tide_kernel_ctx *ctx, cudaStream_t s)
{
    int gpu = tide_device_ordinal(tide_kernel_device(ctx));
    if (gpu < 0 || gpu >= MAX_GPUS) {
        tide_kernel_error(ctx, TIDE_INTERNAL, "GPU %d: cuBLAS handles are kept for %d GPUs", gpu, MAX_GPUS);
        return NULL;
    }
    if (!handles[gpu]) {
        cublasStatus_t st = cublasCreate(&handles[gpu]);
        if (st != CUBLAS_STATUS_SUCCESS) {
            tide_kernel_error(ctx, st == CUBLAS_STATUS_ALLOC_FAILED ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                              "cublasCreate: %s", cublasGetStatusString(st));
            handles[gpu] = NULL;
            return NULL;
        }
        cublasSetMathMode(handles[gpu], tf32_wanted() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    }
    cublasSetStream(handles[gpu], s);
    return handles[gpu];
}

/* cuBLAS's type of dt's elements (float32, float16, bfloat16). */
static cudaDataType_t blas_type(tide_dtype dt)
{
    return dt == TIDE_FLOAT16 ? CUDA_R_16F : dt == TIDE_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* C [batch, m, n] = op(A) op(B), row-major, batches strided by m*k, k*n and m*n elements of dtype dt. */
static tide_status gemm(tide_kernel_ctx *ctx, tide_dtype dt, const void *a, const void *b, void *c, int64_t batch,
                        int64_t m, int64_t n, int64_t k, bool ta, bool tb)
{
    cudaStream_t s = cuda_begin(ctx);
    if (!s)
        return tide_kernel_status(ctx);
    if (m == 0 || n == 0 || batch == 0)
        return TIDE_OK;
    if (k == 0)
        return cuda_check(ctx, cudaMemsetAsync(c, 0, (size_t)(batch * m * n) * tide_dtype_size(dt), s),
                          "zeroing the product");
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "matrix dimensions %lld x %lld x %lld (batch %lld) "
                                 "exceed cuBLAS's int range", (long long)m, (long long)k, (long long)n, (long long)batch);
    const float one = 1.0f, zero = 0.0f;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    std::lock_guard<std::mutex> hold(blas_lock);
    cublasHandle_t h = handle_for(ctx, s);
    if (!h)
        return tide_kernel_status(ctx);
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t st;
    if (dt == TIDE_FLOAT32)
        st = batch == 1 ? cublasSgemm(h, opb, opa, (int)n, (int)m, (int)k, &one, (const float *)b, ldb,
                                      (const float *)a, lda, &zero, (float *)c, (int)n)
                        : cublasSgemmStridedBatched(h, opb, opa, (int)n, (int)m, (int)k, &one, (const float *)b, ldb,
                                                    k * n, (const float *)a, lda, m * k, &zero, (float *)c, (int)n,
                                                    m * n, (int)batch);
    else { /* halves: float32 accumulation, tensor cores where cuBLAS finds them worth it */
        cudaDataType_t t = blas_type(dt);
        st = batch == 1 ? cublasGemmEx(h, opb, opa, (int)n, (int)m, (int)k, &one, b, t, ldb, a, t, lda, &zero, c, t,
                                       (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                        : cublasGemmStridedBatchedEx(h, opb, opa, (int)n, (int)m, (int)k, &one, b, t, ldb, k * n, a, t,
                                                     lda, m * k, &zero, c, t, (int)n, m * n, (int)batch,
                                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "cuBLAS %s GEMM %lld x %lld x %lld: %s", tide_dtype_name(dt),
                                 (long long)m, (long long)k, (long long)n, cublasGetStatusString(st));
    return TIDE_OK;
}

extern "C" tide_status cuda_matmul(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *a = tide_kernel_input(ctx, 0), *b = tide_kernel_input(ctx, 1);
    const tide_shape *sa = tide_tensor_shape(a), *sb = tide_tensor_shape(b);
    bool ta = false, tb = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "transpose_a", &ta);
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "transpose_b", &tb);
    if (sa->rank != 2 || sb->rank != 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "a %s and b %s must be matrices", cuda_shape_str(sa),
                                 cuda_shape_str(sb));
    int64_t m = ta ? sa->dims[1] : sa->dims[0], k = ta ? sa->dims[0] : sa->dims[1];
    int64_t k2 = tb ? sb->dims[1] : sb->dims[0], n = tb ? sb->dims[0] : sb->dims[1];
    if (k != k2) {
        char x[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "inner dimensions differ: a %s (transpose_a=%s) gives %lld "
                                 "columns, b %s (transpose_b=%s) gives %lld rows", tide_shape_format(sa, x, sizeof x),
                                 ta ? "true" : "false", (long long)k, cuda_shape_str(sb), tb ? "true" : "false",
                                 (long long)k2);
    }
    tide_shape out = {2, {m, n}};
    tide_tensor *c = tide_kernel_alloc_output(ctx, 0, &out, false);
    if (!c)
        return tide_kernel_status(ctx);
    return gemm(ctx, tide_tensor_dtype(a), tide_tensor_device_pointer(a), tide_tensor_device_pointer(b),
                tide_tensor_device_pointer(c), 1, m, n, k, ta, tb);
}

extern "C" tide_status cuda_batch_matmul(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0), *y = tide_kernel_input(ctx, 1);
    const tide_shape *sx = tide_tensor_shape(x), *sy = tide_tensor_shape(y);
    bool adj_x = false, adj_y = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "adj_x", &adj_x);
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "adj_y", &adj_y);
    int r = sx->rank;
    bool ok = r >= 2 && sy->rank == r;
    int64_t batch = 1;
    for (int i = 0; ok && i < r - 2; i++) {
        ok = sx->dims[i] == sy->dims[i];
        batch *= sx->dims[i];
    }
    int64_t m = 0, k = 0, k2 = 0, n = 0;
    if (ok) {
        m = adj_x ? sx->dims[r - 1] : sx->dims[r - 2], k = adj_x ? sx->dims[r - 2] : sx->dims[r - 1];
        k2 = adj_y ? sy->dims[r - 1] : sy->dims[r - 2], n = adj_y ? sy->dims[r - 2] : sy->dims[r - 1];
        ok = k == k2;
    }
    if (!ok) {
        char a[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "incompatible shapes: x %s%s and y %s%s (same rank >= 2, "
                                 "same batch dimensions)", tide_shape_format(sx, a, sizeof a), adj_x ? " adjoint" : "",
                                 cuda_shape_str(sy), adj_y ? " adjoint" : "");
    }
    tide_shape out = *sx;
    out.dims[r - 2] = m;
    out.dims[r - 1] = n;
    tide_tensor *z = tide_kernel_alloc_output(ctx, 0, &out, false);
    if (!z)
        return tide_kernel_status(ctx);
    return gemm(ctx, tide_tensor_dtype(x), tide_tensor_device_pointer(x), tide_tensor_device_pointer(y),
                tide_tensor_device_pointer(z), batch, m, n, k, adj_x, adj_y);
}
