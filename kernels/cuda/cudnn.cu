/* cudnn.cu — Conv2D, its two gradients, MaxPool, AvgPool and their gradients through cuDNN, NHWC as
 * tide's tensors are. The geometry (strides, dilations, SAME/VALID/EXPLICIT padding, output sizes)
 * is computed and checked by the same functions as the CPU's (engine/ops/conv_ops.c); cuDNN takes one
 * padding per side pair, so a convolution whose padding is uneven in a way that changes the output
 * (SAME with an odd total, e.g. stride 2 over an even size with an odd window) pads x explicitly into
 * a scratch tensor (movement.cu's pad kernel) and convolves it without padding; its input gradient is
 * computed for the padded input and cropped. Pooling with such padding runs pool.cu's direct kernels
 * (the CPU's rules, bit for bit; never run on a GPU). TensorFlow's filters are [KH, KW, Cin, Cout]; cuDNN's NHWC filters
 * are [Cout, KH, KW, Cin], so filters are transposed into a scratch tensor (and filter gradients
 * back). Algorithms come from cuDNN's heuristics (the _v7 queries: no timing runs); their workspace is
 * a scratch tensor of the engine's caching allocator. $TIDE_GPU_TF32=1 allows TF32 tensor cores
 * (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION); the default is FMA math in float32. The convolutions also
 * take float16 and bfloat16 data (CUDNN_DATA_HALF / CUDNN_DATA_BFLOAT16 with a float32 compute type:
 * cuDNN's pseudo-half configurations, tensor-core math; never run on a GPU).
 * Built only when meson found cuDNN (option cudnn_dir or $CUDNN_PATH); otherwise these kernels fail
 * with a message saying so. */
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common.cuh"


#ifndef TIDE_CUDA_HAVE_CUDNN

void cuda_dnn_close(void) {}

#define NO_CUDNN(fn)                                                                                            \
    extern "C" tide_status fn(tide_kernel_ctx *ctx, void *)                                                     \
    {                                                                                                           \
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "this CUDA kernel module was built without cuDNN "    \
                                 "(meson -Dcudnn_dir=... or $CUDNN_PATH at setup)");                            \
    }
NO_CUDNN(cuda_conv2d)
NO_CUDNN(cuda_conv2d_backprop_input)
NO_CUDNN(cuda_conv2d_backprop_filter)
NO_CUDNN(cuda_max_pool)
NO_CUDNN(cuda_avg_pool)
NO_CUDNN(cuda_max_pool_grad)
NO_CUDNN(cuda_avg_pool_grad)

#else

#include "dnn.cuh"

static std::mutex dnn_lock;
static cudnnHandle_t handles[MAX_GPUS];

void cuda_dnn_close(void)
{
    std::lock_guard<std::mutex> hold(dnn_lock);
    for (int i = 0; i < MAX_GPUS; i++)
        if (handles[i]) {
            cudnnDestroy(handles[i]);
            handles[i] = NULL;
        }
}

static bool tf32_wanted(void)
{
    const char *v = getenv("TIDE_GPU_TF32");
    return v && strcmp(v, "1") == 0;
}

dnn_call::dnn_call(tide_kernel_ctx *c) : ctx(c), hold(dnn_lock, std::defer_lock) {}

dnn_call::~dnn_call()
{
    if (stream && (scratch[0] || scratch[1] || scratch[2]))
        cudaStreamSynchronize(stream); /* the scratch blocks go back to the cache: let the GPU finish */
    for (tide_tensor *t : scratch)
        if (t)
            tide_tensor_release(t);
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bn) cudnnDestroyTensorDescriptor(bn);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
}

tide_status dnn_call::begin()
{
    stream = cuda_begin(ctx);
    if (!stream)
        return tide_kernel_status(ctx);
    int gpu = tide_device_ordinal(tide_kernel_device(ctx));
    if (gpu < 0 || gpu >= MAX_GPUS)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "GPU %d: cuDNN handles are kept for %d GPUs", gpu, MAX_GPUS);
    hold.lock();
    if (!handles[gpu])
        DNN(ctx, cudnnCreate(&handles[gpu]));
    handle = handles[gpu];
    DNN(ctx, cudnnSetStream(handle, stream));
    return TIDE_OK;
}

void *dnn_call::temp(int i, int64_t n, tide_dtype dt)
{
    tide_shape s = {1, {n > 0 ? n : 1}};
    scratch[i] = tide_cuda_api->alloc_temp(ctx, dt, &s);
    return scratch[i] ? tide_tensor_device_pointer(scratch[i]) : NULL;
}

tide_status dnn_nhwc(tide_kernel_ctx *ctx, cudnnTensorDescriptor_t *d, const int64_t dims[4], cudnnDataType_t t)
{
    DNN(ctx, cudnnCreateTensorDescriptor(d));
    DNN(ctx, cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NHWC, t, (int)dims[0], (int)dims[3],
                                        (int)dims[1], (int)dims[2]));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- convolutions */

/* The geometry of the call (input dims, filter dims, and for gradients out_backprop's), checked. cuDNN
 * pads both sides of a dimension alike: where that would not give tide's output size (SAME with an odd
 * total padding, uneven EXPLICIT padding), x is padded explicitly into a scratch tensor of dims
 * `padded` (tide's padding before, what the last window needs after) and convolved without padding. */
struct conv_shape {
    int64_t in[4], filter[4], out[4];
    tide_conv_geometry g;
    bool explicit_pad;
    int64_t padded[4];
    tide_dtype dt; /* of the data: float32, float16 or bfloat16 */
};

/* Windows over an input of size `in` padded by `pad` on both sides. */
static int64_t even_windows(int64_t in, int64_t pad, int64_t size, int64_t dilation, int64_t stride)
{
    int64_t span = in + 2 * pad - ((size - 1) * dilation + 1);
    return span < 0 ? 0 : span / stride + 1;
}

/* The padding after x that the last window needs (none when it ends inside x or its padding before). */
static int64_t pad_after(int64_t in, int64_t before, int64_t out, int64_t size, int64_t dilation, int64_t stride)
{
    int64_t after = (out - 1) * stride + (size - 1) * dilation + 1 - in - before;
    return after > 0 ? after : 0;
}

static void conv_plan_padding(conv_shape *s)
{
    const tide_conv_geometry &g = s->g;
    s->explicit_pad = even_windows(g.in_h, g.pad_top, g.win.size_h, g.win.dilation_h, g.win.stride_h) != g.out_h ||
                      even_windows(g.in_w, g.pad_left, g.win.size_w, g.win.dilation_w, g.win.stride_w) != g.out_w;
    s->padded[0] = s->in[0], s->padded[3] = s->in[3];
    s->padded[1] = g.in_h + g.pad_top + pad_after(g.in_h, g.pad_top, g.out_h, g.win.size_h, g.win.dilation_h, g.win.stride_h);
    s->padded[2] = g.in_w + g.pad_left + pad_after(g.in_w, g.pad_left, g.out_w, g.win.size_w, g.win.dilation_w, g.win.stride_w);
}

/* Descriptors of x (padded explicitly or not), filter (KRSC), y and the convolution, checking that cuDNN
 * gives tide's output size. */
static tide_status conv_descriptors(dnn_call &c, const conv_shape &s)
{
    tide_kernel_ctx *ctx = c.ctx;
    const tide_conv_geometry &g = s.g;
    const cudnnDataType_t t = dnn_type(s.dt);
    if (dnn_nhwc(ctx, &c.x, s.explicit_pad ? s.padded : s.in, t) != TIDE_OK || dnn_nhwc(ctx, &c.y, s.out, t) != TIDE_OK)
        return tide_kernel_status(ctx);
    DNN(ctx, cudnnCreateFilterDescriptor(&c.w));
    DNN(ctx, cudnnSetFilter4dDescriptor(c.w, t, CUDNN_TENSOR_NHWC, (int)s.filter[3], (int)s.filter[2],
                                        (int)s.filter[0], (int)s.filter[1]));
    DNN(ctx, cudnnCreateConvolutionDescriptor(&c.conv));
    int pad_h = s.explicit_pad ? 0 : (int)g.pad_top, pad_w = s.explicit_pad ? 0 : (int)g.pad_left;
    DNN(ctx, cudnnSetConvolution2dDescriptor(c.conv, pad_h, pad_w, (int)g.win.stride_h, (int)g.win.stride_w,
                                             (int)g.win.dilation_h, (int)g.win.dilation_w, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT)); /* float32 accumulation for halves too */
    /* halves: tensor cores (products of halves are exact in float32, sums in float32) */
    DNN(ctx, cudnnSetConvolutionMathType(c.conv, s.dt != TIDE_FLOAT32 ? CUDNN_TENSOR_OP_MATH
                                                 : tf32_wanted() ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                                                 : CUDNN_FMA_MATH));
    int n, ch, h, w;
    DNN(ctx, cudnnGetConvolution2dForwardOutputDim(c.conv, c.x, c.w, &n, &ch, &h, &w));
    if (h != g.out_h || w != g.out_w)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "cuDNN's output %d x %d is not tide's %lld x %lld (input %lld x "
                                 "%lld%s, window %lld x %lld, strides %lld, %lld)", h, w, (long long)g.out_h,
                                 (long long)g.out_w, (long long)g.in_h, (long long)g.in_w,
                                 s.explicit_pad ? ", padded explicitly" : "", (long long)g.win.size_h,
                                 (long long)g.win.size_w, (long long)g.win.stride_h, (long long)g.win.stride_w);
    return TIDE_OK;
}

/* Reads the window attrs and the dims of the call's tensors. what: 0 forward (input, filter), 1
 * backprop input (input_sizes read from GPU memory, filter, out_backprop), 2 backprop filter (input,
 * filter_sizes, out_backprop). */
static tide_status conv_setup(tide_kernel_ctx *ctx, int what, conv_shape *s)
{
    tide_conv_window win;
    char msg[MSG_MAX];
    if (!tide_conv_read_attrs(tide_kernel_attrs(ctx), &win, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    static const char *const names[3][2] = {{"input", "filter"}, {"input_sizes", "filter"}, {"input", "filter_sizes"}};
    for (int i = 0; i < 2; i++) {
        int64_t *dims = i == 0 ? s->in : s->filter;
        const tide_tensor *t = tide_kernel_input(ctx, i);
        bool sizes = (what == 1 && i == 0) || (what == 2 && i == 1);
        if (sizes) {
            int64_t got = cuda_read_ints(ctx, t, dims, 4, names[what][i]);
            if (got < 0)
                return tide_kernel_status(ctx);
            if (got != 4)
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must hold 4 values, got %lld", names[what][i],
                                         (long long)got);
        } else if (!tide_conv_input_dims(tide_tensor_shape(t), names[what][i], dims, msg, sizeof msg)) {
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
        }
    }
    bool ok;
    if (what == 0) {
        ok = tide_conv_geometry_make(&win, s->in, s->filter, &s->g, msg, sizeof msg);
    } else {
        if (!tide_conv_input_dims(tide_tensor_shape(tide_kernel_input(ctx, 2)), "out_backprop", s->out, msg, sizeof msg))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
        ok = tide_conv_backprop_geometry(&win, s->in, s->filter, s->out, &s->g, msg, sizeof msg);
    }
    if (!ok)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    s->out[0] = s->g.batch, s->out[1] = s->g.out_h, s->out[2] = s->g.out_w, s->out[3] = s->g.out_c;
    s->dt = tide_tensor_dtype(tide_kernel_input(ctx, what == 1 ? 1 : 0));
    for (int k = 0; k < 4; k++)
        if (s->in[k] > INT32_MAX || s->filter[k] > INT32_MAX || s->out[k] > INT32_MAX)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dimensions beyond cuDNN's int range");
    conv_plan_padding(s);
    return TIDE_OK;
}

static const int64_t to_krsc[4] = {3, 0, 1, 2}, to_hwio[4] = {1, 2, 3, 0};

/* The workspace of an algorithm (slot 1), or NULL for none; false when it could not be had. */
static bool workspace(dnn_call &c, size_t bytes, void **ws)
{
    *ws = bytes ? c.temp(1, (int64_t)(bytes + 3) / 4) : NULL;
    return !bytes || *ws;
}

/* The algorithm cuDNN's heuristics rank first for `what` (0 forward, 1 backward data, 2 backward
 * filter), its workspace, and the call; x is the input (forward, backward filter), w the filter (or its
 * gradient) in KRSC, out the output (forward) or the input's gradient (backward data). */
static tide_status conv_call(dnn_call &c, int what, const void *x, void *w, void *out)
{
    tide_kernel_ctx *ctx = c.ctx;
    const float one = 1.0f, zero = 0.0f; /* float scaling for float32, float16 and bfloat16 data */
    const void *dy = tide_tensor_device_pointer(tide_kernel_input(ctx, 2));
    int found = 0;
    size_t bytes = 0;
    void *ws;
    if (what == 0) {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        DNN(ctx, cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x, c.w, c.conv, c.y, 8, &found, perf));
        if (found >= 1)
            DNN(ctx, cudnnGetConvolutionForwardWorkspaceSize(c.handle, c.x, c.w, c.conv, c.y, perf[0].algo, &bytes));
        if (found >= 1 && workspace(c, bytes, &ws))
            DNN(ctx, cudnnConvolutionForward(c.handle, &one, c.x, x, c.w, w, c.conv, perf[0].algo, ws, bytes, &zero, c.y,
                                             out));
    } else if (what == 1) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[8];
        DNN(ctx, cudnnGetConvolutionBackwardDataAlgorithm_v7(c.handle, c.w, c.y, c.conv, c.x, 8, &found, perf));
        if (found >= 1)
            DNN(ctx, cudnnGetConvolutionBackwardDataWorkspaceSize(c.handle, c.w, c.y, c.conv, c.x, perf[0].algo, &bytes));
        if (found >= 1 && workspace(c, bytes, &ws))
            DNN(ctx, cudnnConvolutionBackwardData(c.handle, &one, c.w, w, c.y, dy, c.conv, perf[0].algo, ws, bytes, &zero,
                                                  c.x, out));
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
        DNN(ctx, cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.handle, c.x, c.y, c.conv, c.w, 8, &found, perf));
        if (found >= 1)
            DNN(ctx, cudnnGetConvolutionBackwardFilterWorkspaceSize(c.handle, c.x, c.y, c.conv, c.w, perf[0].algo, &bytes));
        if (found >= 1 && workspace(c, bytes, &ws))
            DNN(ctx, cudnnConvolutionBackwardFilter(c.handle, &one, c.x, x, c.y, dy, c.conv, perf[0].algo, ws, bytes,
                                                    &zero, c.w, w));
    }
    if (found < 1)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "cuDNN offers no algorithm for this convolution");
    return tide_kernel_status(ctx);
}

/* x padded explicitly into scratch slot 2 (conv_shape); NULL with the error recorded. */
static void *pad_input(dnn_call &c, const conv_shape &s, const void *x)
{
    void *xp = c.temp(2, s.padded[0] * s.padded[1] * s.padded[2] * s.padded[3], s.dt);
    if (!xp)
        return NULL;
    const int64_t before[4] = {0, s.g.pad_top, s.g.pad_left, 0};
    int64_t after[4];
    for (int k = 0; k < 4; k++)
        after[k] = s.padded[k] - s.in[k] - before[k];
    tide_pad_plan p;
    tide_plan_pad(4, s.in, before, after, &p);
    return cuda_check(c.ctx, cuda_pad_launch(tide_dtype_size(s.dt), x, xp, &p, NULL, c.stream), "the explicit padding") ==
                   TIDE_OK
               ? xp
               : NULL;
}

/* The gradient of the padded input (in scratch slot 2) cropped to the input's (out). */
static tide_status crop_input(dnn_call &c, const conv_shape &s, const void *dxp, void *out)
{
    int64_t strides[4];
    tide_plan_strides(4, s.padded, strides);
    tide_walk w = {4, {s.in[0], s.in[1], s.in[2], s.in[3]}, {strides[0], strides[1], strides[2], strides[3]}};
    int64_t base = s.g.pad_top * strides[1] + s.g.pad_left * strides[2];
    return cuda_check(c.ctx, cuda_walk_launch(tide_dtype_size(s.dt), dxp, out, &w, base,
                                              s.in[0] * s.in[1] * s.in[2] * s.in[3], c.stream),
                      "the padded gradient's crop");
}

/* Conv2D (what 0: input, filter), Conv2DBackpropInput (1: input_sizes, filter, out_backprop) and
 * Conv2DBackpropFilter (2: input, filter_sizes, out_backprop). */
static tide_status conv(tide_kernel_ctx *ctx, int what)
{
    conv_shape s;
    if (conv_setup(ctx, what, &s) != TIDE_OK)
        return tide_kernel_status(ctx);
    const int64_t *dims = what == 0 ? s.out : what == 1 ? s.in : s.filter;
    tide_shape shape = {4, {dims[0], dims[1], dims[2], dims[3]}};
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &shape, what != 0);
    if (!out)
        return tide_kernel_status(ctx);
    if (tide_tensor_num_elements(out) == 0 || (what && tide_tensor_num_elements(tide_kernel_input(ctx, 2)) == 0))
        return TIDE_OK;
    dnn_call c(ctx);
    if (c.begin() != TIDE_OK || conv_descriptors(c, s) != TIDE_OK)
        return tide_kernel_status(ctx);
    const size_t es = tide_dtype_size(s.dt);
    void *w = c.temp(0, s.filter[0] * s.filter[1] * s.filter[2] * s.filter[3], s.dt);
    if (!w)
        return tide_kernel_status(ctx);
    if (what != 2 && cuda_check(ctx, cuda_transpose_launch(es, tide_tensor_device_pointer(tide_kernel_input(ctx, 1)), w, 4,
                                                           s.filter, to_krsc, c.stream), "the filter's transpose") != TIDE_OK)
        return tide_kernel_status(ctx);
    const void *x = what == 1 ? NULL : tide_tensor_device_pointer(tide_kernel_input(ctx, 0));
    void *result = tide_tensor_device_pointer(out);
    if (s.explicit_pad && what != 1 && !(x = pad_input(c, s, x)))
        return tide_kernel_status(ctx);
    if (s.explicit_pad && what == 1 &&
        !(result = c.temp(2, s.padded[0] * s.padded[1] * s.padded[2] * s.padded[3], s.dt)))
        return tide_kernel_status(ctx);
    if (conv_call(c, what, x, w, result) != TIDE_OK)
        return tide_kernel_status(ctx);
    if (what == 1)
        return s.explicit_pad ? crop_input(c, s, result, tide_tensor_device_pointer(out)) : TIDE_OK;
    if (what == 0)
        return TIDE_OK;
    int64_t krsc[4] = {s.filter[3], s.filter[0], s.filter[1], s.filter[2]};
    return cuda_check(ctx, cuda_transpose_launch(es, w, tide_tensor_device_pointer(out), 4, krsc, to_hwio, c.stream),
                      "the filter gradient's transpose");
}

extern "C" tide_status cuda_conv2d(tide_kernel_ctx *ctx, void *) { return conv(ctx, 0); }
extern "C" tide_status cuda_conv2d_backprop_input(tide_kernel_ctx *ctx, void *) { return conv(ctx, 1); }
extern "C" tide_status cuda_conv2d_backprop_filter(tide_kernel_ctx *ctx, void *) { return conv(ctx, 2); }

/* ---------------------------------------------------------------- pooling */

/* Descriptors for pooling input dims in (pooled: out) with the window attrs; checks the geometry as
 * the CPU does. *direct: cuDNN's even padding would not give tide's output size, so pool.cu's direct
 * kernels compute it (over *g). */
static tide_status pool_setup(dnn_call &c, bool max, const int64_t in[4], const int64_t *pooled, int64_t out[4],
                              tide_conv_geometry *geometry, bool *direct)
{
    tide_kernel_ctx *ctx = c.ctx;
    tide_conv_window win;
    tide_conv_geometry &g = *geometry;
    char msg[MSG_MAX];
    *direct = false;
    if (!tide_pool_read_attrs(tide_kernel_attrs(ctx), &win, msg, sizeof msg) ||
        !tide_pool_geometry(&win, in, pooled, "grad", &g, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    out[0] = g.batch, out[1] = g.out_h, out[2] = g.out_w, out[3] = g.out_c;
    if (c.begin() != TIDE_OK || dnn_nhwc(ctx, &c.x, in) != TIDE_OK || dnn_nhwc(ctx, &c.y, out) != TIDE_OK)
        return tide_kernel_status(ctx);
    DNN(ctx, cudnnCreatePoolingDescriptor(&c.pool));
    DNN(ctx, cudnnSetPooling2dDescriptor(c.pool, max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                         CUDNN_PROPAGATE_NAN, (int)win.size_h, (int)win.size_w, (int)g.pad_top,
                                         (int)g.pad_left, (int)win.stride_h, (int)win.stride_w));
    int n, ch, h, w;
    DNN(ctx, cudnnGetPooling2dForwardOutputDim(c.pool, c.x, &n, &ch, &h, &w));
    *direct = h != g.out_h || w != g.out_w;
    return TIDE_OK;
}

static tide_status pool_forward(tide_kernel_ctx *ctx, bool max)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    int64_t in[4], out[4];
    char msg[MSG_MAX];
    if (!tide_conv_input_dims(tide_tensor_shape(x), "value", in, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    dnn_call c(ctx);
    tide_conv_geometry g;
    bool direct;
    if (pool_setup(c, max, in, NULL, out, &g, &direct) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_shape shape = {4, {out[0], out[1], out[2], out[3]}};
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, &shape, false);
    if (!y)
        return tide_kernel_status(ctx);
    if (tide_tensor_num_elements(y) == 0)
        return TIDE_OK;
    if (direct)
        return cuda_check(ctx, cuda_pool_direct_launch(max ? 0 : 1, &g, fptr(x), NULL, fptr(y), c.stream),
                          "the direct pooling kernel");
    const float one = 1.0f, zero = 0.0f;
    DNN(ctx, cudnnPoolingForward(c.handle, c.pool, &one, c.x, fptr(x), &zero, c.y, fptr(y)));
    return TIDE_OK;
}

extern "C" tide_status cuda_max_pool(tide_kernel_ctx *ctx, void *) { return pool_forward(ctx, true); }
extern "C" tide_status cuda_avg_pool(tide_kernel_ctx *ctx, void *) { return pool_forward(ctx, false); }

/* MaxPoolGrad (orig_input, orig_output, grad) and AvgPoolGrad (orig_input_shape, grad). */
static tide_status pool_backward(tide_kernel_ctx *ctx, bool max)
{
    const tide_tensor *grad = tide_kernel_input(ctx, max ? 2 : 1);
    int64_t in[4], out[4], pooled[4];
    char msg[MSG_MAX];
    if (max && !tide_conv_input_dims(tide_tensor_shape(tide_kernel_input(ctx, 0)), "orig_input", in, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (!max) {
        int64_t got = cuda_read_ints(ctx, tide_kernel_input(ctx, 0), in, 4, "orig_input_shape");
        if (got < 0)
            return tide_kernel_status(ctx);
        if (got != 4)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "orig_input_shape must hold 4 values, got %lld",
                                     (long long)got);
    }
    if (!tide_conv_input_dims(tide_tensor_shape(grad), "grad", pooled, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    dnn_call c(ctx);
    tide_conv_geometry g;
    bool direct;
    if (pool_setup(c, max, in, pooled, out, &g, &direct) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_shape shape = {4, {in[0], in[1], in[2], in[3]}};
    tide_tensor *dx = tide_kernel_alloc_output(ctx, 0, &shape, true);
    if (!dx)
        return tide_kernel_status(ctx);
    if (tide_tensor_num_elements(dx) == 0 || tide_tensor_num_elements(grad) == 0)
        return TIDE_OK;
    if (direct)
        return cuda_check(ctx, cuda_pool_direct_launch(max ? 2 : 3, &g, max ? fptr(tide_kernel_input(ctx, 0)) : NULL,
                                                       fptr(grad), fptr(dx), c.stream),
                          "the direct pooling gradient kernel");
    const float one = 1.0f, zero = 0.0f;
    /* average pooling reads neither y nor x: cuDNN still wants pointers, so grad and dx stand in */
    const float *x = max ? fptr(tide_kernel_input(ctx, 0)) : fptr(dx), *y = max ? fptr(tide_kernel_input(ctx, 1)) : fptr(grad);
    DNN(ctx, cudnnPoolingBackward(c.handle, c.pool, &one, c.y, y, c.y, fptr(grad), c.x, x, &zero, c.x, fptr(dx)));
    return TIDE_OK;
}

extern "C" tide_status cuda_max_pool_grad(tide_kernel_ctx *ctx, void *) { return pool_backward(ctx, true); }
extern "C" tide_status cuda_avg_pool_grad(tide_kernel_ctx *ctx, void *) { return pool_backward(ctx, false); }

#endif
