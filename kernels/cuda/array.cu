/* array.cu — GPU kernels that convert, fill and move data: Cast (from float32, float16, bfloat16,
 * int32, int64 and bool to float32, float16, bfloat16, int32 and int64, with tensor_cast.c's rules,
 * half.h doing the float16/bfloat16 rounding bit for bit as the CPU), Fill, ZerosLike, OnesLike (any
 * element width), Transpose and Slice (movement.cu's strided walk), ConcatV2 (one 2-D device copy per
 * input, no kernel), GatherV2 (any element width, batch_dims 0; an index out of range fails the node
 * naming it, as on the CPU), Reshape, ExpandDims, Squeeze (views), Shape, Size and Const. Axes,
 * perms, begins and sizes are small int tensors the plan put in GPU memory: they are read back
 * first (cuda_read_ints), which waits for the GPU. */
#include <cmath>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "half.h"

/* ---------------------------------------------------------------- Cast */

template <class D> __device__ D to_int(float x);
template <> __device__ int32_t to_int<int32_t>(float x)
{
    return isnan(x) ? 0 : x >= 2147483648.0f ? INT32_MAX : x <= -2147483648.0f ? INT32_MIN : (int32_t)x;
}
template <> __device__ int64_t to_int<int64_t>(float x)
{
    return isnan(x) ? 0 : x >= 9223372036854775808.0f ? INT64_MAX : x <= -9223372036854775808.0f ? INT64_MIN : (int64_t)x;
}

/* Source kinds: a float (float32, or float16/bfloat16 widened exactly) or an integer (bool as 0/1). */
template <class S> struct source {
    static const bool is_float = false;
    __device__ static int64_t as_int(S x) { return (int64_t)x; }
    __device__ static float as_float(S x) { return (float)x; }
};
template <> struct source<float> {
    static const bool is_float = true;
    __device__ static float as_float(float x) { return x; }
};
template <> struct source<f16> {
    static const bool is_float = true;
    __device__ static float as_float(f16 x) { return tide_half_to_f32(x.bits); }
};
template <> struct source<bf16> {
    static const bool is_float = true;
    __device__ static float as_float(bf16 x) { return tide_bhalf_to_f32(x.bits); }
};

/* One element S -> D by tensor_cast.c's rules: float -> integer truncates and saturates (NaN 0),
 * integer -> integer wraps, integer -> float16/bfloat16 rounds once (through round-to-odd steps),
 * float -> float16/bfloat16 rounds to nearest even. */
template <class S, class D> struct converter {
    __device__ static D go(S x)
    {
        typedef source<S> src;
        if constexpr (src::is_float) {
            float v = src::as_float(x);
            if constexpr (std::is_same<D, float>::value)
                return v;
            else if constexpr (std::is_same<D, f16>::value)
                return f16{tide_half_from_f32(v)};
            else if constexpr (std::is_same<D, bf16>::value)
                return bf16{tide_bhalf_from_f32(v)};
            else
                return to_int<D>(v);
        } else {
            if constexpr (std::is_same<D, float>::value)
                return src::as_float(x);
            else if constexpr (std::is_same<D, f16>::value)
                return f16{tide_half_from_i64(src::as_int(x))};
            else if constexpr (std::is_same<D, bf16>::value)
                return bf16{tide_bhalf_from_i64(src::as_int(x))};
            else
                return (D)(uint64_t)src::as_int(x); /* wraps */
        }
    }
};

template <class S, class D> __global__ void cast_kernel(const S *x, D *y, int64_t n)
{
    CUDA_FOR(i, n) y[i] = converter<S, D>::go(x[i]);
}

template <class S> static void cast_from(const void *x, void *y, tide_dtype dst, int64_t n, cudaStream_t s)
{
    unsigned b = cuda_blocks(n);
    const S *in = (const S *)x;
    switch (dst) {
    case TIDE_FLOAT32: cast_kernel<S, float><<<b, TIDE_CUDA_THREADS, 0, s>>>(in, (float *)y, n); break;
    case TIDE_FLOAT16: cast_kernel<S, f16><<<b, TIDE_CUDA_THREADS, 0, s>>>(in, (f16 *)y, n); break;
    case TIDE_BFLOAT16: cast_kernel<S, bf16><<<b, TIDE_CUDA_THREADS, 0, s>>>(in, (bf16 *)y, n); break;
    case TIDE_INT32: cast_kernel<S, int32_t><<<b, TIDE_CUDA_THREADS, 0, s>>>(in, (int32_t *)y, n); break;
    default: cast_kernel<S, int64_t><<<b, TIDE_CUDA_THREADS, 0, s>>>(in, (int64_t *)y, n); break;
    }
}

extern "C" tide_status cuda_cast(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_dtype src = tide_tensor_dtype(x), dst = tide_kernel_output_dtype(ctx, 0);
    if (src == dst) {
        tide_kernel_set_output(ctx, 0, x);
        return TIDE_OK;
    }
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(x);
    if (n == 0)
        return TIDE_OK;
    const void *px = tide_tensor_device_pointer(x);
    void *py = tide_tensor_device_pointer(y);
    switch (src) {
    case TIDE_FLOAT32: cast_from<float>(px, py, dst, n, s); break;
    case TIDE_FLOAT16: cast_from<f16>(px, py, dst, n, s); break;
    case TIDE_BFLOAT16: cast_from<bf16>(px, py, dst, n, s); break;
    case TIDE_INT32: cast_from<int32_t>(px, py, dst, n, s); break;
    case TIDE_INT64: cast_from<int64_t>(px, py, dst, n, s); break;
    default: cast_from<uint8_t>(px, py, dst, n, s); break; /* bool: bytes 0 or 1 */
    }
    return cuda_launched(ctx, "the cast kernel");
}

/* ---------------------------------------------------------------- Fill, ZerosLike, OnesLike */

/* y = *value, or the constant's bits when value is NULL; E is the element's width. */
template <class E> __global__ void fill_kernel(E *y, const E *value, E constant, int64_t n)
{
    E v = value ? *value : constant;
    CUDA_FOR(i, n) y[i] = v;
}

/* Fills y (elements of es bytes) with *value (on the GPU) or the constant's low es bytes. */
static tide_status fill(tide_kernel_ctx *ctx, tide_tensor *y, const void *value, uint64_t constant, cudaStream_t s)
{
    int64_t n = tide_tensor_num_elements(y);
    if (n == 0)
        return TIDE_OK;
    void *p = tide_tensor_device_pointer(y);
    unsigned b = cuda_blocks(n);
    switch (tide_dtype_size(tide_tensor_dtype(y))) {
    case 1: fill_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((uint8_t *)p, (const uint8_t *)value, (uint8_t)constant, n); break;
    case 2: fill_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((uint16_t *)p, (const uint16_t *)value, (uint16_t)constant, n); break;
    case 4: fill_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((uint32_t *)p, (const uint32_t *)value, (uint32_t)constant, n); break;
    default: fill_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((uint64_t *)p, (const uint64_t *)value, constant, n); break;
    }
    return cuda_launched(ctx, "the fill kernel");
}

extern "C" tide_status cuda_fill(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *dims = tide_kernel_input(ctx, 0), *value = tide_kernel_input(ctx, 1);
    if (tide_tensor_shape(dims)->rank != 1 || tide_tensor_shape(value)->rank != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dims must be a vector and value a scalar, got shapes %s "
                                 "and %s", cuda_shape_str(tide_tensor_shape(dims)),
                                 tide_tensor_shape(value)->rank == 0 ? "[]" : "not a scalar");
    tide_shape shape;
    if (!cuda_read_shape(ctx, dims, &shape, "dims"))
        return tide_kernel_status(ctx);
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &shape, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    return s ? fill(ctx, y, tide_tensor_device_pointer(value), 0, s) : tide_kernel_status(ctx);
}

extern "C" tide_status cuda_zeros_like(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(tide_kernel_input(ctx, 0)), true);
    return y ? TIDE_OK : tide_kernel_status(ctx);
}

/* OnesLike: the bits of one in the dtype. */
extern "C" tide_status cuda_ones_like(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(tide_kernel_input(ctx, 0)), false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    tide_dtype dt = tide_tensor_dtype(y);
    uint64_t one = dt == TIDE_FLOAT32 ? 0x3f800000u : dt == TIDE_FLOAT16 ? 0x3c00u : dt == TIDE_BFLOAT16 ? 0x3f80u : 1u;
    return fill(ctx, y, NULL, one, s);
}

/* ---------------------------------------------------------------- strided copies */

static tide_status walk_copy(tide_kernel_ctx *ctx, const tide_tensor *x, const tide_shape *out_shape,
                             const tide_walk *w, int64_t base)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, out_shape, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    return cuda_check(ctx, cuda_walk_launch(tide_dtype_size(tide_tensor_dtype(x)), tide_tensor_device_pointer(x),
                                            tide_tensor_device_pointer(y), w, base, tide_tensor_num_elements(y), s),
                      "the strided copy kernel");
}

cudaError_t cuda_transpose_launch(size_t es, const void *x, void *y, int rank, const int64_t *dims,
                                  const int64_t *perm, cudaStream_t s)
{
    tide_walk w;
    tide_plan_transpose(rank, dims, perm, &w);
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= dims[k];
    return cuda_walk_launch(es, x, y, &w, 0, n, s);
}

extern "C" tide_status cuda_transpose(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t perm[TIDE_MAX_RANK];
    int64_t n = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), perm, TIDE_MAX_RANK, "perm");
    if (n < 0)
        return tide_kernel_status(ctx);
    bool seen[TIDE_MAX_RANK] = {false}, ok = n == in->rank;
    for (int k = 0; ok && k < n; k++) {
        ok = perm[k] >= 0 && perm[k] < n && !seen[perm[k]];
        if (ok)
            seen[perm[k]] = true;
    }
    if (!ok)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "perm (%lld values) is not a permutation of the %d "
                                 "dimensions of x %s", (long long)n, in->rank, cuda_shape_str(in));
    tide_shape out = {in->rank, {0}};
    for (int k = 0; k < in->rank; k++)
        out.dims[k] = in->dims[perm[k]];
    tide_walk w;
    tide_plan_transpose(in->rank, in->dims, perm, &w);
    return walk_copy(ctx, x, &out, &w, 0);
}

extern "C" tide_status cuda_slice(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t begin[TIDE_MAX_RANK], size[TIDE_MAX_RANK];
    int64_t nb = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), begin, TIDE_MAX_RANK, "begin");
    int64_t ns = nb < 0 ? -1 : cuda_read_ints(ctx, tide_kernel_input(ctx, 2), size, TIDE_MAX_RANK, "size");
    if (ns < 0)
        return tide_kernel_status(ctx);
    if (nb != in->rank || ns != in->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "begin and size must have one value per dimension of "
                                 "input %s, got %lld and %lld", cuda_shape_str(in), (long long)nb, (long long)ns);
    int64_t strides[TIDE_MAX_RANK], base = 0;
    tide_plan_strides(in->rank, in->dims, strides);
    tide_shape out = {in->rank, {0}};
    tide_walk w = {in->rank, {0}, {0}};
    for (int k = 0; k < in->rank; k++) {
        int64_t sz = size[k] == -1 ? in->dims[k] - begin[k] : size[k];
        if (begin[k] < 0 || begin[k] > in->dims[k] || sz < 0 || begin[k] + sz > in->dims[k])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "begin[%d] = %lld with size[%d] = %lld is out of range "
                                     "for dimension %d of input %s", k, (long long)begin[k], k, (long long)size[k], k,
                                     cuda_shape_str(in));
        out.dims[k] = w.dims[k] = sz;
        w.stride[k] = strides[k];
        base += begin[k] * strides[k];
    }
    bool empty = false;
    for (int k = 0; k < out.rank; k++)
        empty |= out.dims[k] == 0;
    if (empty)
        w.rank = 0; /* nothing to walk: no division by a zero dim */
    return walk_copy(ctx, x, &out, &w, base);
}

/* ---------------------------------------------------------------- ConcatV2 */

extern "C" tide_status cuda_concat(tide_kernel_ctx *ctx, void *)
{
    int n = tide_kernel_num_inputs(ctx) - 1;
    int64_t axis_v;
    if (cuda_read_ints(ctx, tide_kernel_input(ctx, n), &axis_v, 1, "axis") != 1)
        return tide_kernel_status(ctx) != TIDE_OK ? tide_kernel_status(ctx)
               : tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a scalar");
    const tide_shape *first = tide_tensor_shape(tide_kernel_input(ctx, 0));
    int rank = first->rank;
    int64_t axis = axis_v < 0 ? axis_v + rank : axis_v;
    if (axis < 0 || axis >= rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis %lld is out of range for values of shape %s",
                                 (long long)axis_v, cuda_shape_str(first));
    tide_shape out = *first;
    out.dims[axis] = 0;
    for (int i = 0; i < n; i++) {
        const tide_shape *s = tide_tensor_shape(tide_kernel_input(ctx, i));
        bool ok = s->rank == rank;
        for (int k = 0; ok && k < rank; k++)
            ok = k == axis || s->dims[k] == first->dims[k];
        if (!ok) {
            char a[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "values[%d] of shape %s does not match values[0] %s "
                                     "outside axis %lld", i, tide_shape_format(s, a, sizeof a), cuda_shape_str(first),
                                     (long long)axis);
        }
        out.dims[axis] += s->dims[axis];
    }
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &out, false);
    cudaStream_t st = y ? cuda_begin(ctx) : NULL;
    if (!st)
        return tide_kernel_status(ctx);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++)
        outer *= out.dims[k];
    for (int k = axis + 1; k < rank; k++)
        inner *= out.dims[k];
    size_t es = tide_dtype_size(tide_tensor_dtype(tide_kernel_input(ctx, 0)));
    size_t row = (size_t)(out.dims[axis] * inner) * es, at = 0;
    for (int i = 0; i < n && outer > 0; i++) {
        const tide_tensor *x = tide_kernel_input(ctx, i);
        size_t width = (size_t)(tide_tensor_shape(x)->dims[axis] * inner) * es;
        if (width && cuda_check(ctx, cudaMemcpy2DAsync((char *)tide_tensor_device_pointer(y) + at, row,
                                                       tide_tensor_device_pointer(x), width, width, (size_t)outer,
                                                       cudaMemcpyDeviceToDevice, st), "ConcatV2's copy") != TIDE_OK)
            return tide_kernel_status(ctx);
        at += width;
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- GatherV2 */

template <class E> __global__ void gather_kernel(const E *params, const void *indices, bool idx64, E *out, int64_t n,
                                                int64_t num_indices, int64_t limit, int64_t inner, unsigned long long *bad)
{
    CUDA_FOR(i, n) {
        int64_t in = i % inner, t = i / inner, j = t % num_indices, o = t / num_indices;
        int64_t idx = idx64 ? ((const int64_t *)indices)[j] : ((const int32_t *)indices)[j];
        if (idx < 0 || idx >= limit) {
            atomicMin(bad, (unsigned long long)j);
            out[i] = E(0);
        } else {
            out[i] = params[(o * limit + idx) * inner + in];
        }
    }
}

extern "C" tide_status cuda_gather(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *params = tide_kernel_input(ctx, 0), *indices = tide_kernel_input(ctx, 1);
    const tide_shape *ps = tide_tensor_shape(params), *is = tide_tensor_shape(indices);
    int64_t axis_v, batch_dims = 0;
    tide_attrs_get_int(tide_kernel_attrs(ctx), "batch_dims", &batch_dims);
    if (cuda_read_ints(ctx, tide_kernel_input(ctx, 2), &axis_v, 1, "axis") != 1)
        return tide_kernel_status(ctx) != TIDE_OK ? tide_kernel_status(ctx)
               : tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a scalar");
    int64_t axis = axis_v < 0 ? axis_v + ps->rank : axis_v;
    if (batch_dims != 0)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "batch_dims %lld on the GPU: only 0", (long long)batch_dims);
    if (axis < 0 || axis >= ps->rank || ps->rank + is->rank - 1 > TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis %lld is out of range for params %s (indices %s)",
                                 (long long)axis_v, cuda_shape_str(ps), cuda_shape_str(is));
    tide_shape out = {0, {0}};
    int64_t inner = 1;
    for (int k = 0; k < axis; k++)
        out.dims[out.rank++] = ps->dims[k];
    for (int k = 0; k < is->rank; k++)
        out.dims[out.rank++] = is->dims[k];
    for (int k = (int)axis + 1; k < ps->rank; k++)
        inner *= out.dims[out.rank++] = ps->dims[k];
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &out, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(y), num_indices = tide_tensor_num_elements(indices);
    if (n == 0)
        return TIDE_OK;
    unsigned long long *bad = NULL, found = (unsigned long long)num_indices;
    if (cuda_check(ctx, cudaMallocAsync((void **)&bad, sizeof *bad, s), "GatherV2") != TIDE_OK)
        return tide_kernel_status(ctx);
    cudaMemcpyAsync(bad, &found, sizeof found, cudaMemcpyHostToDevice, s);
    const void *idx = tide_tensor_device_pointer(indices), *src = tide_tensor_device_pointer(params);
    void *dst = tide_tensor_device_pointer(y);
    bool idx64 = tide_tensor_dtype(indices) == TIDE_INT64;
    int64_t limit = ps->dims[axis];
    unsigned b = cuda_blocks(n);
    switch (tide_dtype_size(tide_tensor_dtype(params))) {
    case 1: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint8_t *)src, idx, idx64, (uint8_t *)dst, n, num_indices, limit, inner, bad); break;
    case 2: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint16_t *)src, idx, idx64, (uint16_t *)dst, n, num_indices, limit, inner, bad); break;
    case 4: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint32_t *)src, idx, idx64, (uint32_t *)dst, n, num_indices, limit, inner, bad); break;
    default: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint64_t *)src, idx, idx64, (uint64_t *)dst, n, num_indices, limit, inner, bad); break;
    }
    cudaMemcpyAsync(&found, bad, sizeof found, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(bad, s);
    if (cuda_check(ctx, cudaStreamSynchronize(s), "GatherV2") != TIDE_OK)
        return tide_kernel_status(ctx);
    if (found < (unsigned long long)num_indices)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "indices[%llu] is not in [0, %lld) (axis %lld of params %s)",
                                 found, (long long)ps->dims[axis], (long long)axis, cuda_shape_str(ps));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Reshape, Shape */

/* Reshape: a view of the same GPU memory (the shape, one -1 allowed, read back from the GPU). */
extern "C" tide_status cuda_reshape(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    int64_t dims[TIDE_MAX_RANK];
    int64_t rank = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), dims, TIDE_MAX_RANK, "shape");
    if (rank < 0)
        return tide_kernel_status(ctx);
    tide_shape shape = {(int)rank, {0}};
    for (int k = 0; k < rank; k++) {
        if (dims[k] < -1)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "shape[%d] = %lld: dimensions must be >= 0, or -1 "
                                     "for the one inferred", k, (long long)dims[k]);
        shape.dims[k] = dims[k];
    }
    tide_error *err = tide_error_new();
    tide_tensor *view = tide_tensor_reshape(x, &shape, err);
    tide_status st = view ? TIDE_OK : tide_kernel_error(ctx, tide_error_code(err), "tensor %s: %s",
                                                        cuda_shape_str(tide_tensor_shape(x)), tide_error_message(err));
    tide_error_free(err);
    if (view) {
        tide_kernel_set_output(ctx, 0, view);
        tide_tensor_release(view);
    }
    return st;
}

/* Shape: the input's dims (known on the host) copied into a GPU vector of out_type. */
extern "C" tide_status cuda_shape(tide_kernel_ctx *ctx, void *)
{
    const tide_shape *in = tide_tensor_shape(tide_kernel_input(ctx, 0));
    bool wide = tide_kernel_output_dtype(ctx, 0) == TIDE_INT64;
    tide_shape out = {1, {in->rank}};
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &out, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s || in->rank == 0)
        return tide_kernel_status(ctx);
    int64_t d64[TIDE_MAX_RANK];
    int32_t d32[TIDE_MAX_RANK];
    for (int k = 0; k < in->rank; k++) {
        if (!wide && in->dims[k] > INT32_MAX)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dimension %d of %s does not fit out_type int32", k,
                                     cuda_shape_str(in));
        d64[k] = in->dims[k];
        d32[k] = (int32_t)in->dims[k];
    }
    /* host stack memory: copied to staging before cudaMemcpyAsync returns (pageable), and the device's
     * compute waits for the stream after the kernel anyway */
    return cuda_check(ctx, cudaMemcpyAsync(tide_tensor_device_pointer(y), wide ? (const void *)d64 : (const void *)d32,
                                           (size_t)in->rank * (wide ? 8 : 4), cudaMemcpyHostToDevice, s),
                      "Shape's copy");
}

/* ---------------------------------------------------------------- Size, ExpandDims, Squeeze */

/* Size: the input's element count (known on the host) copied into a GPU scalar of out_type. */
extern "C" tide_status cuda_size(tide_kernel_ctx *ctx, void *)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    int64_t n = tide_tensor_num_elements(x);
    bool wide = tide_kernel_output_dtype(ctx, 0) == TIDE_INT64;
    if (!wide && n > INT32_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%lld elements (shape %s) do not fit in int32: use "
                                 "out_type=int64", (long long)n, cuda_shape_str(tide_tensor_shape(x)));
    tide_shape scalar = {0, {0}};
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &scalar, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    int32_t n32 = (int32_t)n;
    /* host stack memory: pageable, so staged before cudaMemcpyAsync returns (as Shape's copy) */
    return cuda_check(ctx, cudaMemcpyAsync(tide_tensor_device_pointer(y), wide ? (const void *)&n : (const void *)&n32,
                                           wide ? 8 : 4, cudaMemcpyHostToDevice, s), "Size's copy");
}

/* Output 0 as a view of x with shape s (common.cuh). */
tide_status cuda_set_view(tide_kernel_ctx *ctx, tide_tensor *x, const tide_shape *s)
{
    tide_error *err = tide_error_new();
    tide_tensor *view = tide_tensor_reshape(x, s, err);
    tide_status st = view ? TIDE_OK : tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    tide_error_free(err);
    if (view) {
        tide_kernel_set_output(ctx, 0, view);
        tide_tensor_release(view);
    }
    return st;
}

/* ExpandDims: a view with a dimension of 1 inserted at dim (read back from the GPU). */
extern "C" tide_status cuda_expand_dims(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t dim;
    int64_t got = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), &dim, 1, "dim");
    if (got < 0)
        return tide_kernel_status(ctx);
    if (got != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dim must hold exactly one value, got shape %s",
                                 cuda_shape_str(tide_tensor_shape(tide_kernel_input(ctx, 1))));
    if (in->rank >= TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot expand input of shape %s: the result would have "
                                 "rank %d, more than %d", cuda_shape_str(in), in->rank + 1, TIDE_MAX_RANK);
    if (dim < -in->rank - 1 || dim > in->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dim %lld is out of range for input of shape %s: expected "
                                 "one in [%d, %d]", (long long)dim, cuda_shape_str(in), -in->rank - 1, in->rank);
    int at = (int)(dim < 0 ? dim + in->rank + 1 : dim);
    tide_shape s = {in->rank + 1, {0}};
    for (int i = 0, k = 0; i < s.rank; i++)
        s.dims[i] = i == at ? 1 : in->dims[k++];
    return cuda_set_view(ctx, x, &s);
}

/* Squeeze: a view without the dims of size 1 (those of squeeze_dims when given). */
extern "C" tide_status cuda_squeeze(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    const int64_t *dims = NULL;
    int n = 0;
    tide_attrs_get_int_list(tide_kernel_attrs(ctx), "squeeze_dims", &dims, &n);
    bool drop[TIDE_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int64_t d = dims[i];
        if (d < -in->rank || d >= in->rank)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "squeeze_dims[%d] = %lld is out of range for input of "
                                     "shape %s: expected one in [%d, %d)", i, (long long)d, cuda_shape_str(in),
                                     -in->rank, in->rank);
        int ax = (int)(d < 0 ? d + in->rank : d);
        if (in->dims[ax] != 1)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot squeeze dim %d of input of shape %s: its size "
                                     "is %lld, not 1", ax, cuda_shape_str(in), (long long)in->dims[ax]);
        drop[ax] = true;
    }
    tide_shape s = {0, {0}};
    for (int i = 0; i < in->rank; i++)
        if (!(n ? drop[i] : in->dims[i] == 1))
            s.dims[s.rank++] = in->dims[i];
    return cuda_set_view(ctx, x, &s);
}

/* ---------------------------------------------------------------- Const */

/* Const: the value attr copied to the GPU on the node's first run and kept (node_state is the
 * engine's slot for it, released with the kernel); every later run hands out the same tensor, which
 * its readers never write (the slot holds a reference, so it is never exclusive). */
extern "C" tide_status cuda_const(tide_kernel_ctx *ctx, void *node_state)
{
    tide_tensor **slot = (tide_tensor **)node_state;
    tide_tensor *kept = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (kept) {
        tide_kernel_set_output(ctx, 0, kept);
        return TIDE_OK;
    }
    tide_tensor *value = NULL;
    if (!tide_attrs_get_tensor(tide_kernel_attrs(ctx), "value", &value) || !value)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "Const has no value attr");
    cudaStream_t s = cuda_begin(ctx);
    tide_tensor *y = s ? tide_cuda_api->alloc_temp(ctx, tide_tensor_dtype(value), tide_tensor_shape(value)) : NULL;
    if (!y)
        return tide_kernel_status(ctx);
    size_t bytes = tide_tensor_byte_size(value);
    if (bytes && (cuda_check(ctx, cudaMemcpyAsync(tide_tensor_device_pointer(y), tide_tensor_data(value), bytes,
                                                  cudaMemcpyHostToDevice, s), "Const's copy") != TIDE_OK ||
                  cuda_check(ctx, cudaStreamSynchronize(s), "Const's copy") != TIDE_OK)) {
        tide_tensor_release(y);
        return tide_kernel_status(ctx);
    }
    tide_tensor *expected = NULL;
    if (!__atomic_compare_exchange_n(slot, &expected, y, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        tide_tensor_release(y); /* a concurrent run of the node kept its copy first */
        y = expected;
    }
    tide_kernel_set_output(ctx, 0, y);
    return TIDE_OK;
}
