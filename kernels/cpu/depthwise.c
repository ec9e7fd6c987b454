/* depthwise.c — CPU kernels of DepthwiseConv2dNative and its two gradient ops (engine/ops/conv_ops.c),
 * float32 and float64, NHWC input and [KH, KW, C, M] filters.
 *
 * Direct loops over the taps, accumulating in double: each output element (n, i, j, c * M + m) is
 * the sum over (kh, kw) of input[n, i*sh + kh*dh - pad_top, j*sw + kw*dw - pad_left, c] * filter[kh,
 * kw, c, m], taps outside the input skipped. The input gradient gathers the same products the
 * other way round (for each input pixel, the output pixels whose window covered it), the filter
 * gradient sums them over the batch; each parallel chunk owns its outputs (output rows, input rows,
 * or filter channels), so no two threads write one element and results do not depend on the thread
 * count. Depthwise layers are small next to the full convolutions of kernels/cpu/conv.c; these loops
 * favour being plainly right over speed. */
#include <stdbool.h>
#include <stdint.h>

#include "../../engine/ops/conv_ops.h"
#include "../../engine/ops/op_util.h"
#include "cpu_util.h"

typedef struct dw_job {
    tide_conv_geometry g;
    int64_t mult;                      /* M, the channel multiplier */
    bool f32;
    const void *x, *f, *dy;            /* what the op reads (NULL where it does not) */
    void *out;
} dw_job;

static double at(const void *p, bool f32, int64_t i) { return f32 ? ((const float *)p)[i] : ((const double *)p)[i]; }

static void put(void *p, bool f32, int64_t i, double v)
{
    if (f32)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* The input coordinate that output coordinate o reads with tap k along one dimension (may be
 * outside [0, size)). */
static int64_t tap(int64_t o, int64_t k, int64_t stride, int64_t dilation, int64_t pad) { return o * stride + k * dilation - pad; }

#define X_AT(n, ih, iw, c) ((((n) * g->in_h + (ih)) * g->in_w + (iw)) * g->in_c + (c))
#define F_AT(kh, kw, c, m) ((((kh) * g->win.size_w + (kw)) * g->in_c + (c)) * j->mult + (m))
#define Y_AT(n, oh, ow, oc) ((((n) * g->out_h + (oh)) * g->out_w + (ow)) * g->out_c + (oc))

/* Forward: output rows [begin, end) of the N * OH rows. */
static void forward_rows(int64_t begin, int64_t end, void *arg)
{
    const dw_job *j = arg;
    const tide_conv_geometry *g = &j->g;
    const tide_conv_window *w = &g->win;
    for (int64_t row = begin; row < end; row++) {
        int64_t n = row / g->out_h, oh = row % g->out_h;
        for (int64_t ow = 0; ow < g->out_w; ow++)
            for (int64_t c = 0; c < g->in_c; c++)
                for (int64_t m = 0; m < j->mult; m++) {
                    double sum = 0;
                    for (int64_t kh = 0; kh < w->size_h; kh++) {
                        int64_t ih = tap(oh, kh, w->stride_h, w->dilation_h, g->pad_top);
                        if (ih < 0 || ih >= g->in_h)
                            continue;
                        for (int64_t kw = 0; kw < w->size_w; kw++) {
                            int64_t iw = tap(ow, kw, w->stride_w, w->dilation_w, g->pad_left);
                            if (iw >= 0 && iw < g->in_w)
                                sum += at(j->x, j->f32, X_AT(n, ih, iw, c)) * at(j->f, j->f32, F_AT(kh, kw, c, m));
                        }
                    }
                    put(j->out, j->f32, Y_AT(n, oh, ow, c * j->mult + m), sum);
                }
    }
}

/* Input gradient: input rows [begin, end) of the N * H rows, each from the outputs that read it. */
static void input_rows(int64_t begin, int64_t end, void *arg)
{
    const dw_job *j = arg;
    const tide_conv_geometry *g = &j->g;
    const tide_conv_window *w = &g->win;
    for (int64_t row = begin; row < end; row++) {
        int64_t n = row / g->in_h, ih = row % g->in_h;
        for (int64_t iw = 0; iw < g->in_w; iw++)
            for (int64_t c = 0; c < g->in_c; c++) {
                double sum = 0;
                for (int64_t kh = 0; kh < w->size_h; kh++) {
                    int64_t num = ih + g->pad_top - kh * w->dilation_h; /* = oh * stride_h */
                    if (num < 0 || num % w->stride_h || num / w->stride_h >= g->out_h)
                        continue;
                    int64_t oh = num / w->stride_h;
                    for (int64_t kw = 0; kw < w->size_w; kw++) {
                        int64_t numw = iw + g->pad_left - kw * w->dilation_w;
                        if (numw < 0 || numw % w->stride_w || numw / w->stride_w >= g->out_w)
                            continue;
                        int64_t ow = numw / w->stride_w;
                        for (int64_t m = 0; m < j->mult; m++)
                            sum += at(j->dy, j->f32, Y_AT(n, oh, ow, c * j->mult + m)) *
                                   at(j->f, j->f32, F_AT(kh, kw, c, m));
                    }
                }
                put(j->out, j->f32, X_AT(n, ih, iw, c), sum);
            }
    }
}

/* Filter gradient: channels [begin, end), each summed over the batch and every output pixel. */
static void filter_channels(int64_t begin, int64_t end, void *arg)
{
    const dw_job *j = arg;
    const tide_conv_geometry *g = &j->g;
    const tide_conv_window *w = &g->win;
    for (int64_t c = begin; c < end; c++)
        for (int64_t kh = 0; kh < w->size_h; kh++)
            for (int64_t kw = 0; kw < w->size_w; kw++)
                for (int64_t m = 0; m < j->mult; m++) {
                    double sum = 0;
                    for (int64_t n = 0; n < g->batch; n++)
                        for (int64_t oh = 0; oh < g->out_h; oh++) {
                            int64_t ih = tap(oh, kh, w->stride_h, w->dilation_h, g->pad_top);
                            if (ih < 0 || ih >= g->in_h)
                                continue;
                            for (int64_t ow = 0; ow < g->out_w; ow++) {
                                int64_t iw = tap(ow, kw, w->stride_w, w->dilation_w, g->pad_left);
                                if (iw >= 0 && iw < g->in_w)
                                    sum += at(j->x, j->f32, X_AT(n, ih, iw, c)) *
                                           at(j->dy, j->f32, Y_AT(n, oh, ow, c * j->mult + m));
                            }
                        }
                    put(j->out, j->f32, F_AT(kh, kw, c, m), sum);
                }
}

static tide_status dw_init(tide_kernel_ctx *ctx, void **state) { return tide_conv_kernel_init(ctx, state, false); }

/* Reads the three shapes (sizes_index: which input is a size vector, -1 for none), checks them
 * and fills the job; *out_shape is the op's output shape. */
static tide_status dw_prepare(tide_kernel_ctx *ctx, int sizes_index, dw_job *j, tide_shape *out_shape)
{
    const tide_conv_window *w = tide_kernel_state(ctx);
    int64_t in[4], f[4], dy[4];
    tide_status st = sizes_index == 0 ? tide_conv_kernel_size_dims(ctx, 0, "input_sizes", in)
                                      : tide_conv_kernel_input_dims(ctx, 0, "input", in);
    if (st == TIDE_OK)
        st = sizes_index == 1 ? tide_conv_kernel_size_dims(ctx, 1, "filter_sizes", f)
                              : tide_conv_kernel_input_dims(ctx, 1, "filter", f);
    if (st == TIDE_OK && sizes_index >= 0)
        st = tide_conv_kernel_input_dims(ctx, 2, "out_backprop", dy);
    if (st != TIDE_OK)
        return st;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_depthwise_geometry(w, in, f, sizes_index >= 0 ? dy : NULL, &j->g, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    j->mult = f[3];
    j->f32 = tide_kernel_input_dtype(ctx, sizes_index == 1 ? 0 : 1) == TIDE_FLOAT32;
    const int64_t *dims = sizes_index < 0 ? (const int64_t[4]){j->g.batch, j->g.out_h, j->g.out_w, j->g.out_c}
                          : sizes_index == 0 ? in : f;
    *out_shape = tide_shape_make(4, dims);
    return TIDE_OK;
}

/* Runs fn over its units (output rows, input rows or channels, by sizes_index), `work` nanoseconds
 * per multiply-add. */
static tide_status dw_run(tide_kernel_ctx *ctx, int sizes_index, void (*fn)(int64_t, int64_t, void *), double work)
{
    dw_job j = {0};
    tide_shape os;
    tide_status st = dw_prepare(ctx, sizes_index, &j, &os);
    if (st != TIDE_OK)
        return st;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, false);
    if (!out)
        return tide_kernel_status(ctx);
    j.out = tide_tensor_data(out);
    j.x = sizes_index == 0 ? NULL : tide_tensor_data(tide_kernel_input(ctx, 0));
    j.f = sizes_index == 1 ? NULL : tide_tensor_data(tide_kernel_input(ctx, 1));
    j.dy = sizes_index >= 0 ? tide_tensor_data(tide_kernel_input(ctx, 2)) : NULL;
    const tide_conv_geometry *g = &j.g;
    int64_t n = sizes_index < 0 ? g->batch * g->out_h : sizes_index == 0 ? g->batch * g->in_h : g->in_c;
    if (tide_shape_num_elements(&os) == 0 || n == 0)
        return TIDE_OK;
    /* every op does the forward convolution's multiply-adds: N * OH * OW * C * M * KH * KW */
    double macs = (double)(g->batch * g->out_h * g->out_w * g->out_c) * (double)(g->win.size_h * g->win.size_w);
    tide_kernel_parallel_for(ctx, n, work * macs / (double)n, fn, &j);
    return TIDE_OK;
}

static tide_status forward_compute(tide_kernel_ctx *ctx) { return dw_run(ctx, -1, forward_rows, 1.0); }
static tide_status input_compute(tide_kernel_ctx *ctx) { return dw_run(ctx, 0, input_rows, 1.0); }
static tide_status filter_compute(tide_kernel_ctx *ctx) { return dw_run(ctx, 1, filter_channels, 4.0); }

static void register_depthwise_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"DepthwiseConv2dNative", forward_compute, dw_init, TIDE_KERNEL_EXPENSIVE},
        {"DepthwiseConv2dNativeBackpropInput", input_compute, dw_init, TIDE_KERNEL_EXPENSIVE},
        {"DepthwiseConv2dNativeBackpropFilter", filter_compute, dw_init, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_depthwise_kernels)
