/* conv_filter.c — Conv2DBackpropFilter with the input and out_backprop read in place ("direct"),
 * chosen by conv.c for stride-1, undilated convolutions whose input has at least MIN_CHANNELS
 * channels. The former method (a canvas per tile, blocks of k along a whole filter row) stays in
 * conv.c for the others: with stride 2 (3x3, 28x28x32 -> 64, batch 100) this one took 7% more CPU
 * time (4.32 vs 4.05 ms, one thread, loaded machine), its spans one row of 14 pixels each.
 * $TIDE_CONV_FILTER_IN_PLACE (any value) takes this one wherever the channels allow (strides and
 * dilations included: the tests check both), $TIDE_CONV_FILTER_SLICES never.
 *
 * dW[kh, kw, c, o] = sum over (n, oh, ow) of x[n, ih, iw, c] * dy[n, oh, ow, o], ih = oh * sh + kh * dh -
 * pad_top, iw = ow * sw + kw * dw - pad_left inside the input. For one tap (kh, kw) the output pixels
 * whose input pixel lies inside form a rectangle, rows x columns (the padding is never multiplied),
 * and along it x advances by sw * C per column: the micro-kernel reads x and dy where they are, with
 * no canvas and no im2col:
 *     acc[r, 0:VB] += sum over the spans' pixels p of x_p[c0 + r] * dy_p[0:VB]
 * for a "block" of R <= MR consecutive channels c0.. of one tap and VB output channels: four vectors
 * (64 float32) with AVX-512 when cout is past two, else two; its 4R (2R) accumulators stay in
 * registers over every span of a call, each pixel costing VB / VL vector loads of dy and R broadcasts
 * of x. A tap's channels are cut into blocks of even sizes (32 = 5 + 5 + 6 + 5 + 5 + 6), so no block
 * straddles two taps (whose valid rectangles differ); with fewer than MIN_CHANNELS channels the blocks
 * would be too small to keep the FMA pipes busy, and conv.c's canvas method runs instead.
 *
 * Work: the batch is cut into at most MAX_SLICES slices of units (whole images, or row tiles of a
 * large image), each summing every block into its own partial buffer of dW; each thread takes slices
 * one at a time from a shared counter, and the partials are added in slice order (on the threads,
 * rows of k split; the driver and the sum are conv_slices.c's, shared with conv.c's canvas method and
 * the Winograd filter gradient), so the result depends neither on the number nor on the timing of the
 * threads. A
 * slice is walked in groups of units whose x and dy fit together in GROUP_BYTES (the L2 cache):
 * every block passes over a group before the next one is read, so the batch is read from memory
 * once. (Splitting k over the threads instead, each summing its blocks over the whole batch with no
 * partials, read the batch once per part: 3 parts took 10% more CPU time than 1 on the loaded
 * machine.) A tap's spans over a group are one per unit when x and dy run on from row to row
 * (stride 1, every column inside), else one per row. dy is read in place when cout is a multiple of
 * VB, else each group's dy is packed for the block's channels (zeros past cout). The first group of a
 * slice stores its sums instead of adding them, so no partial is zeroed.
 *
 * Measured on the 2-core Zen 5 VM, loaded (docs/benchmarks.md): the tutorial CNN's second layer
 * (batch 100, 14x14x32 -> 64, 5x5 SAME) took 8.0 ms of CPU time against 8.74 with the canvas method
 * (least of 21 interleaved runs, one thread), which copied every image into a padded canvas,
 * zeroed its partials, and ran blocks straddling two filter columns over the union of their pixels;
 * the micro-kernel is now ~89% of the op's samples (perf), against 85%. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv_filter.h"
#include "conv_isa.h"
#include "conv_slices.h"
#include "cpu_util.h"

#define MR 6                      /* channels per block at most */
#define MIN_CHANNELS 8            /* fewer input channels: conv.c's canvas method */
#define GROUP_BYTES (256 * 1024)  /* x and dy of a group of units: stays in L2 */
#define MAX_SLICES 8              /* partial sums (slices of the batch) */
#define NS_PER_FLOP 0.006         /* cost model for parallel_for: ~160 GFLOP/s per core */


/* n pixels: the first one's x (at channel 0 of the pixel) and dy; the next ones xstride and dstride
 * elements further on. */
typedef struct filt_span {
    const char *x, *dy;
    int64_t n;
} filt_span;

/* ---------------------------------------------------------------- micro-kernels */

typedef float vec64_f32 __attribute__((vector_size(64), aligned(4), may_alias));
typedef double vec64_f64 __attribute__((vector_size(64), aligned(8), may_alias));
typedef float vec32_f32 __attribute__((vector_size(32), aligned(4), may_alias));
typedef double vec32_f64 __attribute__((vector_size(32), aligned(8), may_alias));
typedef float vec16_f32 __attribute__((vector_size(16), aligned(4), may_alias));
typedef double vec16_f64 __attribute__((vector_size(16), aligned(8), may_alias));

/* MADD(acc, x, d, NV): acc[0:NV] += *x * d[0:NV], x pointing at a scalar. For float32 with AVX-512
 * the broadcast and the FMAs are written out in assembly (into fixed accumulators): GCC 12 compiles
 * the C form with register moves rotating an accumulator through the broadcast register, and in a
 * loop over data in L1 the assembly form ran 229 GFLOP/s on one core against 200-216 for the C
 * (bench_fma_peak's ceiling: 244; loaded machine). */
#define MADD_PLAIN(acc, x, d, NV)                                                                \
    do {                                                                                         \
        _Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++)(acc)[v_] += *(x) * (d)[v_];   \
    } while (0)
#if HAVE_X86_DISPATCH
#define MADD_ZMM_F32(acc, x, d, NV)                                                              \
    do {                                                                                         \
        vec64_f32 b_;                                                                            \
        __asm__("vbroadcastss %1, %0" : "=v"(b_) : "m"(*(x)));                                   \
        _Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++)                                \
            __asm__("vfmadd231ps %1, %2, %0" : "+v"((acc)[v_]) : "v"(b_), "v"((d)[v_]));         \
    } while (0)
#else
#define MADD_ZMM_F32 MADD_PLAIN
#endif

/* DEFINE_FILTER_KERNEL(T, V, SFX, NV, MADD): filt<NV>_rows_SFX(R, spans, nspans, off, xstride,
 * dstride, acc) adds to acc[r * NV * VL + 0 : NV * VL], r < R (a compile-time R once inlined),
 *     sum over the spans' pixels of x[off + r] * dy[0 : NV * VL]. */
#define DEFINE_FILTER_KERNEL(T, V, SFX, NV, MADD)                                                \
    INLINE void filt##NV##_rows_##SFX(const int R, const filt_span *spans, int nspans, int64_t off, \
                                      int64_t xstride, int64_t dstride, bool zero, T *acc_mem)   \
    {                                                                                            \
        enum { VL = (int)(sizeof(V) / sizeof(T)) };                                              \
        V acc[MR][NV];                                                                           \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
                acc[r][v] = zero ? (V){0} : *(const V *)(acc_mem + (r * NV + v) * VL);           \
        for (int s = 0; s < nspans; s++) {                                                       \
            const T *a = (const T *)spans[s].x + off, *d = (const T *)spans[s].dy;               \
            for (int64_t i = spans[s].n; i > 0; i--, a += xstride, d += dstride) {               \
                V dv[NV];                                                                        \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) dv[v] = *(const V *)(d + v * VL); \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) MADD(acc[r], a + r, dv, NV); \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
                *(V *)(acc_mem + (r * NV + v) * VL) = acc[r][v];                                 \
    }

DEFINE_FILTER_KERNEL(float, vec64_f32, z32, 4, MADD_ZMM_F32)
DEFINE_FILTER_KERNEL(float, vec64_f32, z32, 2, MADD_ZMM_F32)
DEFINE_FILTER_KERNEL(double, vec64_f64, z64, 4, MADD_PLAIN)
DEFINE_FILTER_KERNEL(double, vec64_f64, z64, 2, MADD_PLAIN)
DEFINE_FILTER_KERNEL(float, vec32_f32, f32, 2, MADD_PLAIN)
DEFINE_FILTER_KERNEL(double, vec32_f64, f64, 2, MADD_PLAIN)
DEFINE_FILTER_KERNEL(float, vec16_f32, p32, 2, MADD_PLAIN)
DEFINE_FILTER_KERNEL(double, vec16_f64, p64, 2, MADD_PLAIN)

/* The entry points take R at run time and switch to the compile-time instances. */
typedef void (*filt_fn)(int R, const filt_span *spans, int nspans, int64_t off, int64_t xstride, int64_t dstride,
                        bool zero, void *acc);

#define FILT_CASE(K, R)                                                                          \
    case R: K(R, spans, nspans, off, xstride, dstride, zero, acc); break;
#define DEFINE_ENTRY_POINT(NAME, K, ATTR)                                                        \
    ATTR static void NAME(int R, const filt_span *spans, int nspans, int64_t off, int64_t xstride, \
                          int64_t dstride, bool zero, void *acc)                                 \
    {                                                                                            \
        switch (R) {                                                                             \
            FILT_CASE(K, 6)                                                                      \
            FILT_CASE(K, 5)                                                                      \
            FILT_CASE(K, 4)                                                                      \
            FILT_CASE(K, 3)                                                                      \
            FILT_CASE(K, 2)                                                                      \
        default: K(1, spans, nspans, off, xstride, dstride, zero, acc); break;                   \
        }                                                                                        \
    }

DEFINE_ENTRY_POINT(filt2_p32, filt2_rows_p32, )
DEFINE_ENTRY_POINT(filt2_p64, filt2_rows_p64, )
#if HAVE_X86_DISPATCH
DEFINE_ENTRY_POINT(filt2_f32, filt2_rows_f32, AVX2_FN)
DEFINE_ENTRY_POINT(filt2_f64, filt2_rows_f64, AVX2_FN)
DEFINE_ENTRY_POINT(filt2_z32, filt2_rows_z32, AVX512_FN)
DEFINE_ENTRY_POINT(filt4_z32, filt4_rows_z32, AVX512_FN)
DEFINE_ENTRY_POINT(filt2_z64, filt2_rows_z64, AVX512_FN)
DEFINE_ENTRY_POINT(filt4_z64, filt4_rows_z64, AVX512_FN)
#endif

/* The kernel of family isa for dtype dt over cout output channels, and its VB (*vb). */
static filt_fn choose_kernel(tide_dtype dt, conv_isa isa, int64_t cout, int64_t *vb)
{
    const bool f32 = dt == TIDE_FLOAT32;
    switch (isa) {
#if HAVE_X86_DISPATCH
    case CONV_AVX512: {
        const int64_t vl = f32 ? 16 : 8;
        const bool wide = cout > 2 * vl;
        *vb = (wide ? 4 : 2) * vl;
        return wide ? (f32 ? filt4_z32 : filt4_z64) : (f32 ? filt2_z32 : filt2_z64);
    }
    case CONV_AVX2:
        *vb = f32 ? 16 : 8;
        return f32 ? filt2_f32 : filt2_f64;
#endif
    default:
        *vb = f32 ? 8 : 4;
        return f32 ? filt2_p32 : filt2_p64;
    }
}

/* ---------------------------------------------------------------- the job */

/* R channels c0.. of tap (kh, kw) against output channels [cb * vb, cb * vb + vb). */
typedef struct filt_block {
    int64_t cb, kh, kw, c0, r;
} filt_block;

typedef struct filt_job {
    tide_kernel_ctx *ctx;
    size_t es;
    filt_fn fn;
    const char *x, *dy;
    char *out;
    int64_t batch, in_h, in_w, cin, out_h, out_w, cout, kh, kw, sh, sw, dh, dw, pad_top, pad_left;
    int64_t vb, cblocks;
    bool pack;                 /* cout is no multiple of vb: dy packed per group and channel block */
    int64_t *row_lo, *row_hi;  /* per filter row: the output rows whose input row is inside */
    int64_t *col_lo, *col_hi;  /* per filter column: the same for the columns */
    filt_block *blocks;
    int64_t nblocks, k_total;
    int64_t tile_rows, tiles, units, group_units;
    int64_t slices;   /* partial sums: slice s sums units [s * units / slices, (s + 1) * units / slices) */
} filt_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* [*lo, *hi): the outputs o < n whose input o * stride + t * dilation - pad lies in [0, size). */
static void inside_range(int64_t n, int64_t stride, int64_t t, int64_t dilation, int64_t pad, int64_t size,
                         int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int64_t o = 0; o < n; o++) {
        const int64_t at = o * stride + t * dilation - pad;
        if (at < 0 || at >= size)
            continue;
        if (*hi == 0)
            *lo = o;
        *hi = o + 1;
    }
}

/* How many blocks a tap's cin channels are cut into (sizes even, at most MR). */
static int64_t channel_blocks(int64_t cin) { return (cin + MR - 1) / MR; }

bool tide_conv_filter_direct_fits(const tide_conv_geometry *g, const int64_t filter[4])
{
    if (getenv("TIDE_CONV_FILTER_SLICES") || g->in_c < MIN_CHANNELS || filter[0] * filter[1] * filter[3] <= 0 ||
        g->batch * g->out_h * g->out_w <= 0)
        return false;
    const tide_conv_window *w = &g->win;
    return getenv("TIDE_CONV_FILTER_IN_PLACE") ||
           (w->stride_h == 1 && w->stride_w == 1 && w->dilation_h == 1 && w->dilation_w == 1);
}

/* The blocks in k order: channel blocks of cout, taps, channel blocks of the input. */
static bool make_blocks(filt_job *j)
{
    const int64_t nb = channel_blocks(j->cin);
    j->nblocks = j->cblocks * j->kh * j->kw * nb;
    j->blocks = malloc(sizeof *j->blocks * (size_t)j->nblocks);
    if (!j->blocks)
        return false;
    int64_t i = 0;
    for (int64_t cb = 0; cb < j->cblocks; cb++)
        for (int64_t kh = 0; kh < j->kh; kh++)
            for (int64_t kw = 0; kw < j->kw; kw++)
                for (int64_t b = 0; b < nb; b++)
                    j->blocks[i++] = (filt_block){cb, kh, kw, j->cin * b / nb, j->cin * (b + 1) / nb - j->cin * b / nb};
    return true;
}

static size_t partial_bytes(const filt_job *j)
{
    return (size_t)(j->cblocks * j->k_total * j->vb) * j->es;
}

static void job_free(filt_job *j)
{
    free(j->row_lo);
    free(j->row_hi);
    free(j->col_lo);
    free(j->col_hi);
    free(j->blocks);
}

/* The valid ranges, the blocks, the units and groups, the slices. False when out of memory. */
static bool job_prepare(filt_job *j)
{
    j->cblocks = (j->cout + j->vb - 1) / j->vb;
    j->pack = j->cout % j->vb != 0;
    j->row_lo = malloc(sizeof *j->row_lo * (size_t)j->kh);
    j->row_hi = malloc(sizeof *j->row_hi * (size_t)j->kh);
    j->col_lo = malloc(sizeof *j->col_lo * (size_t)j->kw);
    j->col_hi = malloc(sizeof *j->col_hi * (size_t)j->kw);
    if (!j->row_lo || !j->row_hi || !j->col_lo || !j->col_hi)
        return false;
    for (int64_t t = 0; t < j->kh; t++)
        inside_range(j->out_h, j->sh, t, j->dh, j->pad_top, j->in_h, &j->row_lo[t], &j->row_hi[t]);
    for (int64_t t = 0; t < j->kw; t++)
        inside_range(j->out_w, j->sw, t, j->dw, j->pad_left, j->in_w, &j->col_lo[t], &j->col_hi[t]);
    j->k_total = j->kh * j->kw * j->cin;
    if (!make_blocks(j))
        return false;
    const int64_t dy_row = j->out_w * (j->pack ? j->vb * j->cblocks : j->cout);
    const int64_t image = (j->out_h * dy_row + j->in_h * j->in_w * j->cin) * (int64_t)j->es;
    if (image <= GROUP_BYTES) {
        j->tile_rows = max64(1, j->out_h);
        j->group_units = max64(1, GROUP_BYTES / max64(1, image));
    } else {
        const int64_t row = (dy_row + j->sh * j->in_w * j->cin) * (int64_t)j->es;
        j->tile_rows = max64(1, min64(j->out_h, GROUP_BYTES / row));
        j->group_units = 1;
    }
    j->tiles = (j->out_h + j->tile_rows - 1) / j->tile_rows;
    j->units = j->batch * j->tiles;
    j->slices = max64(1, min64(j->units, MAX_SLICES));
    return true;
}

/* ---------------------------------------------------------------- a thread's work */

typedef struct filt_scratch {
    filt_span *spans; /* [group_units * tile_rows] */
    char *packed;     /* [group_units][tile_rows][out_w][vb] when the job packs dy */
} filt_scratch;

static size_t packed_bytes(const filt_job *j)
{
    return (size_t)(j->group_units * j->tile_rows * j->out_w * j->vb) * j->es;
}

/* Unit u: image *n, output rows [*oh0, *oh0 + *rows). */
static void unit_rows(const filt_job *j, int64_t u, int64_t *n, int64_t *oh0, int64_t *rows)
{
    *n = u / j->tiles;
    *oh0 = u % j->tiles * j->tile_rows;
    *rows = min64(j->tile_rows, j->out_h - *oh0);
}

/* dy of units [u0, u1), output channels of block cb, into s->packed (zeros past cout). */
static void pack_group(const filt_job *j, filt_scratch *s, int64_t u0, int64_t u1, int64_t cb)
{
    const int64_t ncols = min64(j->vb, j->cout - cb * j->vb);
    memset(s->packed, 0, packed_bytes(j));
    for (int64_t u = u0; u < u1; u++) {
        int64_t n, oh0, rows;
        unit_rows(j, u, &n, &oh0, &rows);
        for (int64_t p = 0; p < rows * j->out_w; p++)
            memcpy(s->packed + (size_t)(((u - u0) * j->tile_rows * j->out_w + p) * j->vb) * j->es,
                   j->dy + (size_t)(((n * j->out_h + oh0) * j->out_w + p) * j->cout + cb * j->vb) * j->es,
                   (size_t)ncols * j->es);
    }
}

/* The spans of block b's tap over units [u0, u1) (see the file comment); returns how many. */
static int group_spans(const filt_job *j, filt_scratch *s, int64_t u0, int64_t u1, const filt_block *b)
{
    const int64_t c0 = j->col_lo[b->kw], c1 = j->col_hi[b->kw];
    const size_t xstride = (size_t)(j->sw * j->cin) * j->es;
    const size_t dstride = (size_t)(j->pack ? j->vb : j->cout) * j->es;
    int nspans = 0;
    for (int64_t u = u0; u < u1 && c1 > c0; u++) {
        int64_t n, oh0, rows;
        unit_rows(j, u, &n, &oh0, &rows);
        const int64_t r0 = max64(oh0, j->row_lo[b->kh]), r1 = min64(oh0 + rows, j->row_hi[b->kh]);
        for (int64_t oh = r0; oh < r1; oh++) {
            const int64_t ih = oh * j->sh + b->kh * j->dh - j->pad_top;
            const int64_t iw = c0 * j->sw + b->kw * j->dw - j->pad_left;
            const char *x = j->x + (size_t)(((n * j->in_h + ih) * j->in_w + iw) * j->cin) * j->es;
            const char *dy = j->pack ? s->packed + (size_t)((((u - u0) * j->tile_rows + oh - oh0) * j->out_w + c0) *
                                                            j->vb) * j->es
                                     : j->dy + (size_t)(((n * j->out_h + oh) * j->out_w + c0) * j->cout +
                                                        b->cb * j->vb) * j->es;
            filt_span *last = nspans > 0 ? &s->spans[nspans - 1] : NULL;
            if (last && last->x + (size_t)last->n * xstride == x && last->dy + (size_t)last->n * dstride == dy)
                last->n += c1 - c0;
            else
                s->spans[nspans++] = (filt_span){x, dy, c1 - c0};
        }
    }
    return nspans;
}

/* Slice sl: every block summed over the slice's units, group by group, into its partial acc
 * (tide_conv_slices). */
static void run_slice(void *arg, void *scratch, int64_t sl, char *acc)
{
    filt_job *j = arg;
    filt_scratch *s = scratch;
    const size_t es = j->es;
    const int64_t xstride = j->sw * j->cin, dstride = j->pack ? j->vb : j->cout;
    const int64_t end = (sl + 1) * j->units / j->slices;
    for (int64_t u0 = sl * j->units / j->slices; u0 < end && !tide_kernel_cancelled(j->ctx); u0 += j->group_units) {
        const int64_t u1 = min64(end, u0 + j->group_units);
        const bool first = u0 == sl * j->units / j->slices;
        int64_t packed_cb = -1;
        const filt_block *spans_of = NULL;
        int nspans = 0;
        for (int64_t b = 0; b < j->nblocks; b++) {
            const filt_block *blk = &j->blocks[b];
            if (j->pack && blk->cb != packed_cb) {
                pack_group(j, s, u0, u1, blk->cb);
                packed_cb = blk->cb;
            }
            if (!spans_of || spans_of->cb != blk->cb || spans_of->kh != blk->kh || spans_of->kw != blk->kw) {
                nspans = group_spans(j, s, u0, u1, blk);
                spans_of = blk;
            }
            const int64_t k = (blk->kh * j->kw + blk->kw) * j->cin + blk->c0;
            j->fn((int)blk->r, s->spans, nspans, blk->c0, xstride, dstride, first,
                  acc + (size_t)((blk->cb * j->k_total + k) * j->vb) * es);
        }
    }
}

/* A thread's scratch (tide_conv_slices). */
static void *scratch_new(void *arg)
{
    const filt_job *j = arg;
    filt_scratch *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    *s = (filt_scratch){.spans = malloc(sizeof *s->spans * (size_t)max64(1, j->group_units * j->tile_rows)),
                        .packed = j->pack ? malloc(packed_bytes(j) + 64) : NULL};
    if (s->spans && (!j->pack || s->packed))
        return s;
    free(s->spans);
    free(s->packed);
    free(s);
    return NULL;
}

static void scratch_free(void *arg, void *scratch)
{
    (void)arg;
    filt_scratch *s = scratch;
    free(s->spans);
    free(s->packed);
    free(s);
}

tide_status tide_conv_filter_direct(tide_kernel_ctx *ctx, const tide_conv_geometry *g, const int64_t filter[4],
                                    tide_dtype dt, conv_isa isa, const void *x, const void *dy, void *out)
{
    filt_job j = {.ctx = ctx, .es = dt == TIDE_FLOAT32 ? sizeof(float) : sizeof(double), .x = x, .dy = dy,
                  .out = out, .batch = g->batch, .in_h = g->in_h, .in_w = g->in_w, .cin = g->in_c,
                  .out_h = g->out_h, .out_w = g->out_w, .cout = filter[3], .kh = filter[0], .kw = filter[1],
                  .sh = g->win.stride_h, .sw = g->win.stride_w, .dh = g->win.dilation_h,
                  .dw = g->win.dilation_w, .pad_top = g->pad_top, .pad_left = g->pad_left};
    j.fn = choose_kernel(dt, isa, j.cout, &j.vb);
    if (!job_prepare(&j)) {
        job_free(&j);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the filter gradient's buffers");
    }
    double flops = 0; /* per unit */
    for (int64_t b = 0; b < j.nblocks; b++) {
        const filt_block *blk = &j.blocks[b];
        flops += 2.0 * (double)(blk->r * j.vb) * (double)((j.row_hi[blk->kh] - j.row_lo[blk->kh]) *
                                                          (j.col_hi[blk->kw] - j.col_lo[blk->kw])) / (double)j.tiles;
    }
    const tide_conv_slices sl = {.ctx = ctx, .slices = j.slices, .partial_bytes = partial_bytes(&j),
                                 .ns_per_slice = flops * (double)j.units * NS_PER_FLOP / (double)j.slices, .arg = &j,
                                 .scratch_new = scratch_new, .sum_slice = run_slice, .scratch_free = scratch_free};
    char *partials = tide_conv_slices_run(&sl);
    if (partials) {
        const tide_conv_partials p = {.ctx = ctx, .es = j.es, .slices = j.slices, .cblocks = j.cblocks,
                                      .k_total = j.k_total, .vb = j.vb, .cout = j.cout, .partials = partials,
                                      .out = out};
        tide_conv_partials_sum(&p);
    }
    free(partials);
    job_free(&j);
    return tide_kernel_status(ctx);
}
