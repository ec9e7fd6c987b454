/* pool.c — CPU kernels of MaxPool, MaxPoolGrad, AvgPool and AvgPoolGrad (float32, float64; NHWC).
 *
 * Windows are clipped to the input, so padding never takes part: a SAME window at the border
 * averages only the elements it covers, and a max is taken over real elements only. Every loop
 * runs innermost over the channels, which are contiguous in NHWC, so it vectorises.
 *   MaxPool:     the first element of the window, then v replaces the running maximum when
 *                v > max or v is NaN (a NaN is the maximum and stays).
 *   MaxPoolGrad: the maxima are found again in orig_input with the same scan, tracking for each
 *                channel the position that MaxPool's rule picked: the first NaN, else the first
 *                strictly largest element (TensorFlow's tie rule); each grad element is added there.
 *   AvgPool / AvgPoolGrad: sum / count, and grad / count spread over the window.
 * Forward ops split (image, output row) units over the engine's threads; the gradients, whose
 * windows may overlap between rows, split whole images. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/conv_ops.h"
#include "../../engine/ops/op_util.h"
#include "cpu_util.h"

#define NS_PER_ELEMENT 0.4 /* cost model for parallel_for */

typedef struct pool_job {
    tide_conv_geometry g;
    const char *in;   /* forward: value; MaxPoolGrad: orig_input */
    const char *grad; /* gradients: [batch][out_h][out_w][c] */
    char *out;
} pool_job;

/* The window of output pixel (oh, ow), clipped to the input: rows [*h0, *h1), columns [*w0, *w1). */
static void window(const tide_conv_geometry *g, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                   int64_t *w0, int64_t *w1)
{
    int64_t top = oh * g->win.stride_h - g->pad_top, left = ow * g->win.stride_w - g->pad_left;
    *h0 = top > 0 ? top : 0;
    *w0 = left > 0 ? left : 0;
    *h1 = top + g->win.size_h < g->in_h ? top + g->win.size_h : g->in_h;
    *w1 = left + g->win.size_w < g->in_w ? left + g->win.size_w : g->in_w;
}

/* Channel vectors and the integer vectors their comparisons give: 16 bytes (unaligned), which the
 * baseline x86-64 ISA (SSE2) has compares and blends for; pooling is bound by memory anyway. */
#define VBYTES 16
typedef float vec_f32 __attribute__((vector_size(VBYTES), aligned(4), may_alias));
typedef int32_t mask_f32 __attribute__((vector_size(VBYTES), aligned(4), may_alias));
typedef double vec_f64 __attribute__((vector_size(VBYTES), aligned(8), may_alias));
typedef int64_t mask_f64 __attribute__((vector_size(VBYTES), aligned(8), may_alias));

/* DEFINE_POOL_LOOPS(T, V, M, I, SFX): the four ops' loops for element type T, its vector V, mask
 * vector M and mask element I (the type window positions are tracked in). Each channel loop runs
 * whole vectors, then the remaining channels one by one with the same rule. Units of the forward
 * ops are (image, output row) pairs; units of the gradients are images. */
#define DEFINE_POOL_LOOPS(T, V, M, I, SFX)                                                       \
    enum { VL_##SFX = (int)(VBYTES / sizeof(T)) };                                                   \
    /* o = v where v > o or v is NaN (MaxPool's rule). */                                        \
    static inline void take_max_##SFX(T *o, const T *v, int64_t C)                               \
    {                                                                                            \
        int64_t c = 0;                                                                           \
        for (; c + VL_##SFX <= C; c += VL_##SFX) {                                               \
            const V a = *(const V *)(v + c), b = *(const V *)(o + c);                            \
            const M take = (a > b) | (a != a);                                                   \
            *(V *)(o + c) = (V)((take & (M)a) | (~take & (M)b));                                 \
        }                                                                                        \
        for (; c < C; c++)                                                                       \
            o[c] = v[c] > o[c] || v[c] != v[c] ? v[c] : o[c];                                    \
    }                                                                                            \
    /* Where v beats best (v > best, or v is the first NaN), best = v and arg = at. */          \
    static inline void take_argmax_##SFX(T *best, I *arg, const T *v, I at, int64_t C)           \
    {                                                                                            \
        int64_t c = 0;                                                                           \
        const M at_v = (M){0} + at;                                                              \
        for (; c + VL_##SFX <= C; c += VL_##SFX) {                                               \
            const V a = *(const V *)(v + c), b = *(const V *)(best + c);                         \
            const M take = (a > b) | ((a != a) & (b == b));                                      \
            *(V *)(best + c) = (V)((take & (M)a) | (~take & (M)b));                              \
            *(M *)(arg + c) = (take & at_v) | (~take & *(const M *)(arg + c));                   \
        }                                                                                        \
        for (; c < C; c++)                                                                       \
            if (v[c] > best[c] || (v[c] != v[c] && best[c] == best[c])) {                        \
                best[c] = v[c];                                                                  \
                arg[c] = at;                                                                     \
            }                                                                                    \
    }                                                                                            \
    /* o += v * scale (scale 1: a plain sum). */                                                 \
    static inline void add_scaled_##SFX(T *o, const T *v, T scale, int64_t C)                    \
    {                                                                                            \
        int64_t c = 0;                                                                           \
        for (; c + VL_##SFX <= C; c += VL_##SFX)                                                 \
            *(V *)(o + c) += *(const V *)(v + c) * scale;                                        \
        for (; c < C; c++)                                                                       \
            o[c] += v[c] * scale;                                                                \
    }                                                                                            \
    /* The forward ops (max: MaxPool, else AvgPool) over units (image, output row). */            \
    static inline __attribute__((always_inline)) void pool_rows_##SFX(const pool_job *j, int64_t begin, \
                                                                      int64_t end, bool max)     \
    {                                                                                            \
        const tide_conv_geometry *g = &j->g;                                                     \
        const int64_t C = g->in_c;                                                               \
        for (int64_t u = begin; u < end; u++) {                                                  \
            const int64_t n = u / g->out_h, oh = u % g->out_h;                                   \
            const T *image = (const T *)j->in + n * g->in_h * g->in_w * C;                       \
            T *o = (T *)j->out + u * g->out_w * C;                                               \
            for (int64_t ow = 0; ow < g->out_w; ow++, o += C) {                                  \
                int64_t h0, h1, w0, w1;                                                          \
                window(g, oh, ow, &h0, &h1, &w0, &w1);                                           \
                if (max)                                                                         \
                    memcpy(o, image + (h0 * g->in_w + w0) * C, (size_t)C * sizeof(T));           \
                else                                                                             \
                    memset(o, 0, (size_t)C * sizeof(T));                                         \
                for (int64_t h = h0; h < h1; h++)                                                \
                    for (int64_t w = w0; w < w1; w++)                                            \
                        if (max)                                                                 \
                            take_max_##SFX(o, image + (h * g->in_w + w) * C, C);                 \
                        else                                                                     \
                            add_scaled_##SFX(o, image + (h * g->in_w + w) * C, 1, C);            \
                if (max)                                                                         \
                    continue;                                                                    \
                const T scale = (T)1 / (T)((h1 - h0) * (w1 - w0));                               \
                for (int64_t c = 0; c < C; c++)                                                  \
                    o[c] *= scale;                                                               \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void max_pool_##SFX(int64_t begin, int64_t end, void *arg)                            \
    {                                                                                            \
        pool_rows_##SFX(arg, begin, end, true);                                                  \
    }                                                                                            \
    static void avg_pool_##SFX(int64_t begin, int64_t end, void *arg)                            \
    {                                                                                            \
        pool_rows_##SFX(arg, begin, end, false);                                                 \
    }                                                                                            \
    /* best, argmax: scratch of C elements each. */                                              \
    static void max_pool_grad_image_##SFX(const pool_job *j, int64_t n, T *best, I *argmax)      \
    {                                                                                            \
        const tide_conv_geometry *g = &j->g;                                                     \
        const int64_t C = g->in_c;                                                               \
        const T *image = (const T *)j->in + n * g->in_h * g->in_w * C;                           \
        const T *dy = (const T *)j->grad + n * g->out_h * g->out_w * C;                          \
        T *dx = (T *)j->out + n * g->in_h * g->in_w * C;                                         \
        memset(dx, 0, (size_t)(g->in_h * g->in_w * C) * sizeof(T));                              \
        for (int64_t oh = 0; oh < g->out_h; oh++)                                                \
            for (int64_t ow = 0; ow < g->out_w; ow++, dy += C) {                                 \
                int64_t h0, h1, w0, w1;                                                          \
                window(g, oh, ow, &h0, &h1, &w0, &w1);                                           \
                const I first = (I)(h0 * g->in_w + w0);                                          \
                memcpy(best, image + first * C, (size_t)C * sizeof(T));                          \
                for (int64_t c = 0; c < C; c++)                                                  \
                    argmax[c] = first;                                                           \
                for (int64_t h = h0; h < h1; h++)                                                \
                    for (int64_t w = w0; w < w1; w++)                                            \
                        take_argmax_##SFX(best, argmax, image + (h * g->in_w + w) * C,           \
                                          (I)(h * g->in_w + w), C);                              \
                for (int64_t c = 0; c < C; c++)                                                  \
                    dx[argmax[c] * C + c] += dy[c];                                              \
            }                                                                                    \
    }                                                                                            \
    /* Where no window overlaps another, each element is written once: dy where it is the first   \
     * element equal to the window's maximum m (the first NaN when m is NaN), else 0. Elements no   \
     * window covers are zeroed first (zero_first). m: scratch of C elements. */                   \
    static void max_pool_grad_tiled_image_##SFX(const pool_job *j, int64_t n, T *m, bool zero_first) \
    {                                                                                            \
        const tide_conv_geometry *g = &j->g;                                                     \
        const int64_t C = g->in_c;                                                               \
        const T *image = (const T *)j->in + n * g->in_h * g->in_w * C;                           \
        const T *dy = (const T *)j->grad + n * g->out_h * g->out_w * C;                          \
        T *dx = (T *)j->out + n * g->in_h * g->in_w * C;                                         \
        if (zero_first)                                                                          \
            memset(dx, 0, (size_t)(g->in_h * g->in_w * C) * sizeof(T));                          \
        for (int64_t oh = 0; oh < g->out_h; oh++)                                                \
            for (int64_t ow = 0; ow < g->out_w; ow++, dy += C) {                                 \
                int64_t h0, h1, w0, w1;                                                          \
                window(g, oh, ow, &h0, &h1, &w0, &w1);                                           \
                memcpy(m, image + (h0 * g->in_w + w0) * C, (size_t)C * sizeof(T));               \
                for (int64_t h = h0; h < h1; h++)                                                \
                    for (int64_t w = w0; w < w1; w++)                                            \
                        take_max_##SFX(m, image + (h * g->in_w + w) * C, C);                     \
                int64_t c = 0;                                                                   \
                for (; c + VL_##SFX <= C; c += VL_##SFX) {                                       \
                    const V mv = *(const V *)(m + c);                                            \
                    const M g_ = *(const M *)(dy + c), m_nan = mv != mv;                         \
                    M taken = (M){0};                                                            \
                    for (int64_t h = h0; h < h1; h++)                                            \
                        for (int64_t w = w0; w < w1; w++) {                                      \
                            const V v = *(const V *)(image + (h * g->in_w + w) * C + c);         \
                            const M sel = ((v == mv) | ((v != v) & m_nan)) & ~taken;             \
                            *(M *)(dx + (h * g->in_w + w) * C + c) = sel & g_;                   \
                            taken |= sel;                                                        \
                        }                                                                        \
                }                                                                                \
                for (; c < C; c++) {                                                             \
                    bool taken = false;                                                          \
                    for (int64_t h = h0; h < h1; h++)                                            \
                        for (int64_t w = w0; w < w1; w++) {                                      \
                            const T v = image[(h * g->in_w + w) * C + c];                        \
                            const bool sel = !taken && (v == m[c] || (v != v && m[c] != m[c]));  \
                            dx[(h * g->in_w + w) * C + c] = sel ? dy[c] : 0;                     \
                            taken = taken || sel;                                                \
                        }                                                                        \
                }                                                                                \
            }                                                                                    \
    }                                                                                            \
    static void avg_pool_grad_##SFX(int64_t begin, int64_t end, void *arg)                       \
    {                                                                                            \
        const pool_job *j = arg;                                                                 \
        const tide_conv_geometry *g = &j->g;                                                     \
        const int64_t C = g->in_c;                                                               \
        for (int64_t n = begin; n < end; n++) {                                                  \
            const T *dy = (const T *)j->grad + n * g->out_h * g->out_w * C;                      \
            T *dx = (T *)j->out + n * g->in_h * g->in_w * C;                                     \
            memset(dx, 0, (size_t)(g->in_h * g->in_w * C) * sizeof(T));                          \
            for (int64_t oh = 0; oh < g->out_h; oh++)                                            \
                for (int64_t ow = 0; ow < g->out_w; ow++, dy += C) {                             \
                    int64_t h0, h1, w0, w1;                                                      \
                    window(g, oh, ow, &h0, &h1, &w0, &w1);                                       \
                    const T scale = (T)1 / (T)((h1 - h0) * (w1 - w0));                           \
                    for (int64_t h = h0; h < h1; h++)                                            \
                        for (int64_t w = w0; w < w1; w++)                                        \
                            add_scaled_##SFX(dx + (h * g->in_w + w) * C, dy, scale, C);          \
                }                                                                                \
        }                                                                                        \
    }

DEFINE_POOL_LOOPS(float, vec_f32, mask_f32, int32_t, f32)
DEFINE_POOL_LOOPS(double, vec_f64, mask_f64, int64_t, f64)

/* MaxPoolGrad's units: images; each parallel_for chunk has its own best/argmax scratch, and a
 * failed allocation sets out_of_memory. */
typedef struct max_grad_job {
    pool_job pj;
    bool f32;
    bool tiled;     /* no two windows overlap */
    bool uncovered; /* tiled, and some elements lie in no window */
    _Atomic bool out_of_memory;
} max_grad_job;

static void max_pool_grad_units(int64_t begin, int64_t end, void *arg)
{
    max_grad_job *m = arg;
    const size_t C = (size_t)m->pj.g.in_c + 1;
    void *best = malloc(C * sizeof(double)), *argmax = malloc(C * sizeof(int64_t));
    if (!best || !argmax)
        m->out_of_memory = true;
    for (int64_t n = begin; n < end && best && argmax; n++) {
        if (m->tiled && m->f32)
            max_pool_grad_tiled_image_f32(&m->pj, n, best, m->uncovered);
        else if (m->tiled)
            max_pool_grad_tiled_image_f64(&m->pj, n, best, m->uncovered);
        else if (m->f32)
            max_pool_grad_image_f32(&m->pj, n, best, argmax);
        else
            max_pool_grad_image_f64(&m->pj, n, best, argmax);
    }
    free(best);
    free(argmax);
}

/* Do the windows tile the input without overlapping, and do they cover all of it? */
static void classify_windows(max_grad_job *m)
{
    const tide_conv_geometry *g = &m->pj.g;
    m->tiled = g->win.stride_h >= g->win.size_h && g->win.stride_w >= g->win.size_w;
    bool covered = g->win.stride_h == g->win.size_h && g->win.stride_w == g->win.size_w &&
                   g->out_h * g->win.stride_h - g->pad_top >= g->in_h &&
                   g->out_w * g->win.stride_w - g->pad_left >= g->in_w;
    m->uncovered = !covered;
}

/* ---------------------------------------------------------------- kernels */

static tide_status pool_init(tide_kernel_ctx *ctx, void **state)
{
    return tide_conv_kernel_init(ctx, state, true);
}

static double window_cost(const tide_conv_geometry *g)
{
    return (double)(g->win.size_h * g->win.size_w * g->in_c) * NS_PER_ELEMENT + 50.0;
}

static tide_status pool_forward(tide_kernel_ctx *ctx, bool max)
{
    int64_t in[4];
    tide_status st = tide_conv_kernel_input_dims(ctx, 0, "value", in);
    if (st != TIDE_OK)
        return st;
    pool_job j = {.in = tide_tensor_data(tide_kernel_input(ctx, 0))};
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_pool_geometry(tide_kernel_state(ctx), in, NULL, NULL, &j.g, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape shape = tide_shape_make(4, (const int64_t[4]){j.g.batch, j.g.out_h, j.g.out_w, j.g.out_c});
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, false, &st);
    if (!out)
        return st;
    j.out = tide_tensor_data(out);
    const bool f32 = tide_tensor_dtype(out) == TIDE_FLOAT32;
    void (*fn)(int64_t, int64_t, void *) = max ? (f32 ? max_pool_f32 : max_pool_f64)
                                               : (f32 ? avg_pool_f32 : avg_pool_f64);
    tide_kernel_parallel_for(ctx, j.g.batch * j.g.out_h, window_cost(&j.g) * (double)j.g.out_w, fn, &j);
    return TIDE_OK;
}

static tide_status max_pool_compute(tide_kernel_ctx *ctx) { return pool_forward(ctx, true); }
static tide_status avg_pool_compute(tide_kernel_ctx *ctx) { return pool_forward(ctx, false); }

static tide_status max_pool_grad_compute(tide_kernel_ctx *ctx)
{
    int64_t in[4], y[4], dy[4];
    tide_status st = tide_conv_kernel_input_dims(ctx, 0, "orig_input", in);
    if (st == TIDE_OK)
        st = tide_conv_kernel_input_dims(ctx, 1, "orig_output", y);
    if (st == TIDE_OK)
        st = tide_conv_kernel_input_dims(ctx, 2, "grad", dy);
    if (st != TIDE_OK)
        return st;
    max_grad_job m = {.pj = {.in = tide_tensor_data(tide_kernel_input(ctx, 0)),
                             .grad = tide_tensor_data(tide_kernel_input(ctx, 2))}};
    char msg[TIDE_OP_MSG_MAX];
    const tide_conv_window *w = tide_kernel_state(ctx);
    if (!tide_pool_geometry(w, in, y, "orig_output", &m.pj.g, msg, sizeof msg) ||
        !tide_pool_geometry(w, in, dy, "grad", &m.pj.g, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (in[1] * in[2] > INT32_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "images of %lld x %lld pixels are too large (at most 2^31 - 1 pixels)",
                                 (long long)in[1], (long long)in[2]);
    tide_shape shape = tide_shape_make(4, in);
    const bool no_windows = m.pj.g.out_h * m.pj.g.out_w * m.pj.g.in_c == 0;
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, no_windows, &st); /* else zeroed per image */
    if (!out)
        return st;
    m.pj.out = tide_tensor_data(out);
    m.f32 = tide_tensor_dtype(out) == TIDE_FLOAT32;
    classify_windows(&m);
    tide_kernel_parallel_for(ctx, m.pj.g.batch,
                             window_cost(&m.pj.g) * (double)(m.pj.g.out_h * m.pj.g.out_w),
                             max_pool_grad_units, &m);
    if (m.out_of_memory)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    return TIDE_OK;
}

static tide_status avg_pool_grad_compute(tide_kernel_ctx *ctx)
{
    int64_t in[4], dy[4];
    tide_status st = tide_conv_kernel_size_dims(ctx, 0, "orig_input_shape", in);
    if (st == TIDE_OK)
        st = tide_conv_kernel_input_dims(ctx, 1, "grad", dy);
    if (st != TIDE_OK)
        return st;
    pool_job j = {.grad = tide_tensor_data(tide_kernel_input(ctx, 1))};
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_pool_geometry(tide_kernel_state(ctx), in, dy, "grad", &j.g, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape shape = tide_shape_make(4, in);
    const bool no_windows = j.g.out_h * j.g.out_w * j.g.in_c == 0;
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, no_windows, &st); /* else zeroed per image */
    if (!out)
        return st;
    j.out = tide_tensor_data(out);
    const bool f32 = tide_tensor_dtype(out) == TIDE_FLOAT32;
    tide_kernel_parallel_for(ctx, j.g.batch, window_cost(&j.g) * (double)(j.g.out_h * j.g.out_w),
                             f32 ? avg_pool_grad_f32 : avg_pool_grad_f64, &j);
    return TIDE_OK;
}

static void register_pool_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"MaxPool", max_pool_compute, pool_init, TIDE_KERNEL_EXPENSIVE},
        {"MaxPoolGrad", max_pool_grad_compute, pool_init, TIDE_KERNEL_EXPENSIVE},
        {"AvgPool", avg_pool_compute, pool_init, TIDE_KERNEL_EXPENSIVE},
        {"AvgPoolGrad", avg_pool_grad_compute, pool_init, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_pool_kernels)
