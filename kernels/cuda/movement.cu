/* movement.cu — GPU kernels that move elements without looking at them, for every dtype of 1, 2, 4 or
 * 8 bytes: one gather template (each output element read from the input element index_plan.h's plan
 * names, or a fill value where the plan says padding) over four plans: a strided walk (Transpose,
 * Slice, StridedSlice, the crop of a padded convolution gradient), padding (Pad, PadV2, the explicit
 * padding of convolutions), tiling (Tile) and broadcasting (BroadcastTo). StridedSlice resolves its
 * spec and masks with the CPU's function (engine/ops/array_ops.c), so both devices accept the same
 * specs with the same messages. Small index inputs (multiples, paddings, shapes, begin/end/strides)
 * are read back from GPU memory first, which waits for the GPU. PadV2's constant is read by the
 * kernel itself. Never run on a GPU yet. */
#include <cstdio>
#include <cstring>

#include "common.cuh"

#define MSG_MAX 512

/* ---------------------------------------------------------------- the template */

struct walk_source {
    tide_walk w;
    __device__ int64_t operator()(int64_t i) const { return tide_walk_offset(&w, i); }
};
struct pad_source {
    tide_pad_plan p;
    __device__ int64_t operator()(int64_t i) const { return tide_pad_source(&p, i); }
};
struct tile_source {
    tide_tile_plan p;
    __device__ int64_t operator()(int64_t i) const { return tide_tile_source(&p, i); }
};
struct bcast_source {
    tide_bcast b;
    __device__ int64_t operator()(int64_t i) const
    {
        int64_t oa, ob;
        tide_bcast_offsets(&b, i, &oa, &ob);
        return oa;
    }
};

/* y[i] = x[base + source(i)], or *fill (0 when fill is NULL) where the source is -1. */
template <class E, class S> __global__ void gather_kernel(const E *x, E *y, S source, int64_t base, int64_t n,
                                                          const E *fill)
{
    E pad = fill ? *fill : E(0);
    CUDA_FOR(i, n) {
        int64_t o = source(i);
        y[i] = o < 0 ? pad : x[base + o];
    }
}

template <class S> static cudaError_t gather_launch(size_t es, const void *x, void *y, S source, int64_t base,
                                                    int64_t n, const void *fill, cudaStream_t s)
{
    if (n <= 0)
        return cudaSuccess;
    unsigned b = cuda_blocks(n);
    switch (es) {
    case 1: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, source, base, n, (const uint8_t *)fill); break;
    case 2: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, source, base, n, (const uint16_t *)fill); break;
    case 4: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint32_t *)x, (uint32_t *)y, source, base, n, (const uint32_t *)fill); break;
    case 8: gather_kernel<<<b, TIDE_CUDA_THREADS, 0, s>>>((const uint64_t *)x, (uint64_t *)y, source, base, n, (const uint64_t *)fill); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t cuda_walk_launch(size_t es, const void *x, void *y, const tide_walk *w, int64_t base, int64_t n,
                             cudaStream_t s)
{
    return gather_launch(es, x, y, walk_source{*w}, base, n, NULL, s);
}

cudaError_t cuda_pad_launch(size_t es, const void *x, void *y, const tide_pad_plan *p, const void *fill, cudaStream_t s)
{
    int64_t n = 1;
    for (int k = 0; k < p->rank; k++)
        n *= p->out_dims[k];
    return gather_launch(es, x, y, pad_source{*p}, 0, n, fill, s);
}

/* Allocates output 0 of shape out and runs the gather with source; false with the error recorded. */
template <class S> static tide_status gather_output(tide_kernel_ctx *ctx, const tide_tensor *x, const tide_shape *out,
                                                    S source, int64_t base, const void *fill, const char *what)
{
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, out, false);
    cudaStream_t s = y ? cuda_begin(ctx) : NULL;
    if (!s)
        return tide_kernel_status(ctx);
    size_t es = tide_dtype_size(tide_tensor_dtype(x));
    return cuda_check(ctx, gather_launch(es, tide_tensor_device_pointer(x), tide_tensor_device_pointer(y), source, base,
                                         tide_tensor_num_elements(y), fill, s), what);
}

/* "[1, 2]" of n values, for messages (a static buffer per thread). */
static const char *values_str(const int64_t *v, int64_t n)
{
    static thread_local char buf[256];
    size_t at = 0;
    buf[at++] = '[';
    for (int64_t i = 0; i < n && at < sizeof buf - 24; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%lld", i ? ", " : "", (long long)v[i]);
    snprintf(buf + at, sizeof buf - at, "]");
    return buf;
}

/* ---------------------------------------------------------------- Tile */

extern "C" tide_status cuda_tile(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t mult[TIDE_MAX_RANK];
    int64_t n = cuda_read_ints(ctx, tide_kernel_input(ctx, 1), mult, TIDE_MAX_RANK, "multiples");
    if (n < 0)
        return tide_kernel_status(ctx);
    if (n != in->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "multiples has %lld entries but the input has rank %d "
                                 "(shape %s)", (long long)n, in->rank, cuda_shape_str(in));
    tide_shape out = *in;
    bool same = true;
    for (int k = 0; k < in->rank; k++) {
        if (mult[k] < 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "multiples %s has a negative entry (input shape %s)",
                                     values_str(mult, n), cuda_shape_str(in));
        if (__builtin_mul_overflow(in->dims[k], mult[k], &out.dims[k]))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "tiling shape %s by %s overflows", cuda_shape_str(in),
                                     values_str(mult, n));
        same &= mult[k] == 1;
    }
    if (same) {
        tide_kernel_set_output(ctx, 0, x);
        return TIDE_OK;
    }
    tide_tile_plan p;
    tide_plan_tile(in->rank, in->dims, mult, &p);
    return gather_output(ctx, x, &out, tile_source{p}, 0, NULL, "the tile kernel");
}

/* ---------------------------------------------------------------- Pad, PadV2 */

extern "C" tide_status cuda_pad(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    const tide_tensor *pt = tide_kernel_input(ctx, 1);
    const tide_shape *ps = tide_tensor_shape(pt);
    if (ps->rank != 2 || ps->dims[0] != in->rank || ps->dims[1] != 2) {
        char a[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "paddings must have shape [rank, 2]; got %s for an input "
                                 "of shape %s", tide_shape_format(ps, a, sizeof a), cuda_shape_str(in));
    }
    const tide_tensor *cv = tide_kernel_num_inputs(ctx) > 2 ? tide_kernel_input(ctx, 2) : NULL;
    if (cv && tide_tensor_shape(cv)->rank != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "constant_values must be a scalar, got shape %s",
                                 cuda_shape_str(tide_tensor_shape(cv)));
    int64_t pad[2 * TIDE_MAX_RANK];
    if (in->rank > 0 && cuda_read_ints(ctx, pt, pad, 2 * TIDE_MAX_RANK, "paddings") < 0)
        return tide_kernel_status(ctx);
    int64_t before[TIDE_MAX_RANK], after[TIDE_MAX_RANK], check;
    bool none = true;
    for (int k = 0; k < in->rank; k++) {
        before[k] = pad[2 * k], after[k] = pad[2 * k + 1];
        if (before[k] < 0 || after[k] < 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "paddings %s has a negative entry (input shape %s)",
                                     values_str(pad, 2 * in->rank), cuda_shape_str(in));
        if (__builtin_add_overflow(in->dims[k], before[k], &check) || __builtin_add_overflow(check, after[k], &check))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "padding shape %s by %s overflows", cuda_shape_str(in),
                                     values_str(pad, 2 * in->rank));
        none &= before[k] == 0 && after[k] == 0;
    }
    if (none) {
        tide_kernel_set_output(ctx, 0, x);
        return TIDE_OK;
    }
    tide_pad_plan p;
    tide_plan_pad(in->rank, in->dims, before, after, &p);
    tide_shape out = {in->rank, {0}};
    for (int k = 0; k < in->rank; k++)
        out.dims[k] = p.out_dims[k];
    return gather_output(ctx, x, &out, pad_source{p}, 0, cv ? tide_tensor_device_pointer(cv) : NULL, "the pad kernel");
}

/* ---------------------------------------------------------------- BroadcastTo */

extern "C" tide_status cuda_broadcast_to(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    tide_shape target;
    if (!cuda_read_shape(ctx, tide_kernel_input(ctx, 1), &target, "shape"))
        return tide_kernel_status(ctx);
    bool ok = in->rank <= target.rank;
    for (int k = 0; ok && k < in->rank; k++) {
        int64_t d = in->dims[in->rank - 1 - k], t = target.dims[target.rank - 1 - k];
        ok = d == t || d == 1;
    }
    tide_bcast plan;
    if (!ok || !tide_bcast_plan(in->rank, in->dims, target.rank, target.dims, &plan)) {
        char a[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot broadcast a tensor of shape %s to shape %s: each "
                                 "of its dimensions, aligned with the last ones of the target, must be 1 or equal to it",
                                 cuda_shape_str(in), tide_shape_format(&target, a, sizeof a));
    }
    if (plan.num_elements == tide_tensor_num_elements(x)) /* only size-1 dims added: a view */
        return cuda_set_view(ctx, x, &target);
    return gather_output(ctx, x, &target, bcast_source{plan}, 0, NULL, "the broadcast kernel");
}

/* ---------------------------------------------------------------- StridedSlice */

extern "C" tide_status cuda_strided_slice(tide_kernel_ctx *ctx, void *)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    int64_t spec[3][TIDE_SS_MAX_SPEC], n[3];
    static const char *const names[3] = {"begin", "end", "strides"};
    for (int i = 0; i < 3; i++)
        if ((n[i] = cuda_read_ints(ctx, tide_kernel_input(ctx, i + 1), spec[i], TIDE_SS_MAX_SPEC, names[i])) < 0)
            return tide_kernel_status(ctx);
    if (n[1] != n[0] || n[2] != n[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "begin, end and strides must have the same length, got "
                                 "%lld, %lld and %lld", (long long)n[0], (long long)n[1], (long long)n[2]);
    int64_t masks[TIDE_SS_NUM_MASKS] = {0}, begin[TIDE_MAX_RANK], stride[TIDE_MAX_RANK];
    tide_array_ss_masks(tide_kernel_attrs(ctx), masks);
    tide_shape processing, out;
    char msg[MSG_MAX];
    tide_status st = tide_array_strided_slice(in, n[0], spec[0], spec[1], spec[2], masks, begin, stride, &processing,
                                              &out, msg, sizeof msg);
    if (st != TIDE_OK)
        return tide_kernel_error(ctx, st, "%s (input shape %s)", msg, cuda_shape_str(in));
    int64_t in_strides[TIDE_MAX_RANK], base = 0, count = 1;
    tide_plan_strides(in->rank, in->dims, in_strides);
    tide_walk w = {in->rank, {0}, {0}};
    for (int k = 0; k < in->rank; k++) {
        w.dims[k] = processing.dims[k];
        w.stride[k] = processing.dims[k] > 1 ? stride[k] * in_strides[k] : 0;
        count *= processing.dims[k];
        if (processing.dims[k] > 0)
            base += begin[k] * in_strides[k];
    }
    if (count == 0)
        w.rank = 0; /* nothing to walk: no division by a zero dim */
    return gather_output(ctx, x, &out, walk_source{w}, base, NULL, "the strided slice kernel");
}
