/* conv.c — CPU kernels of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (float32, float64;
 * float16 and bfloat16 through the float32 kernels, tide_kernel_compute_in_float32; NHWC data, HWIO
 * filters).
 *
 * Design (measured on the 2-core Zen 3 development VM; tests/bench/bench_conv.c). For the tutorial
 * CNN's second convolution (batch 100, 14x14x32 -> 64, 5x5) im2col + one sgemm per image reached
 * ~52 GFLOP/s on one core (OpenBLAS at M=196, N=64, K=800), a direct kernel that never materialises
 * im2col ~80 (the core's FMA peak measures ~100). So every op here is a DIRECT convolution built on
 * register-blocked micro-kernels:
 *
 *   forward-like: out[p, 0:VB] (+)= sum over k of canvas[row_p + k] * packed_filter[k, 0:VB]
 *       for MR = 6 output pixels p at once and VB = two SIMD vectors of output channels (16
 *       float32 / 8 float64 with AVX2): 12 accumulators, per k two vector loads and six broadcasts —
 *       the shape of a GEMM micro-kernel whose A operand is read straight from the padded image.
 *       With at most VB/4 output channels a "narrow" variant (dot) computes one channel at a time
 *       with vectors along k instead of wasting most of each channel block.
 *   filter-like:  dW[k, 0:VB] += sum over p of canvas[row_p + k] * dy[p, 0:VB]
 *       for MR = 6 consecutive k at once, summed over the pixels of a tile.
 *
 * The "canvas" is the input of one tile of output rows copied into a small zero-padded buffer
 * (L2-sized), so the micro-kernels never test bounds: canvas pixel (i, j) holds source pixel
 * ((i - off_h) / up_h, (j - off_w) / up_w) when that divides and lies inside, else zero.
 *   Conv2D:              canvas = input, off = SAME padding, up = 1; filter packed [cb][k][VB].
 *   Conv2DBackpropInput: a stride-1 convolution of the canvas made of out_backprop upsampled by
 *                        the strides (zeros between rows/columns) and padded by (K - 1) * d - pad
 *                        with the filter flipped in space and transposed in depth, so the same
 *                        forward kernel computes it. With strides > 1 (and no dilation) it runs
 *                        instead as stride_h x stride_w "phases", each a stride-1 convolution
 *                        of dy itself with every stride-th tap, written to every stride-th pixel
 *                        (backprop_input_phases): the upsampled canvas would spend stride_h *
 *                        stride_w times the necessary multiplications on zeros (3x3 stride 2,
 *                        28x28x32 -> 64, batch 100: 12.3 -> 4.8 ms of CPU time, loaded machine).
 *   Conv2DBackpropFilter: Winograd where it applies (below); else stride 1, no dilation and at
 *                        least 8 input channels: conv_filter.c (the
 *                        input and dy read in place, no canvas). Otherwise (or with
 *                        $TIDE_CONV_FILTER_SLICES set), the
 *                        filter-like kernel over the forward canvas, each slice of the batch
 *                        summing into its own partial buffer; the partials are added in slice
 *                        order (conv_slices.c), so results do not depend on thread timing.
 * The reduction dimension k runs over (kh, kw, c) in the filter's order; for each kh (each kw too
 * when dilated) it is a contiguous run of the canvas, a "piece". Pieces are grouped into chunks of
 * at most ~16 KiB (24 KiB with AVX-512) of packed filter, which stay in L1 while every pixel block
 * of the tile passes.
 * Taps that read only the canvas's zero padding are skipped (zeros multiplied cost as much as data,
 * and oneDNN skips them: the CNN's 14x14 5x5 SAME layer has 6 of its 70 row-taps and 6 of its 70
 * column-taps there, 83.6% of the nominal multiply-adds read data). Along the height, output rows
 * whose canvas row for a filter row kh is padding skip that kh (live_rows): the forward-like kernels
 * run each chunk over its live rows only, the filter kernel each piece (+6-7% for all three ops).
 * Along the width (prepare_columns), the output columns fall into classes by the range of filter
 * columns that read data for them (5x5 SAME: columns 0, 1, the middle, 12, 13); the forward-like
 * driver orders a tile's pixels class by class and runs each class with its pieces narrowed to its
 * taps (the micro-kernels take pixel and output pointers, and each piece finds its own weights), and
 * the filter kernel sums each block of k over the columns its filter columns read data for (spans
 * of pixels). The chunk that reads data for every pixel (the middle filter row) runs first and
 * writes the outputs, so the others add without the outputs being zeroed first.
 * Work is split over the engine's threads with tide_kernel_parallel_for, one part per thread of the
 * pool, each part taking units (images, or row tiles of an image when the batch is small) one at a
 * time from a shared counter (share_items; slices of the batch for the filter gradient, conv_slices.c's
 * driver). OpenBLAS
 * is not used, so no second thread pool runs.
 *
 * The micro-kernels are written once with GCC vector extensions and compiled per dtype three times:
 * with 64-byte vectors for AVX-512 (VB = 32 float32 / 16 float64), with 32-byte vectors for
 * AVX2+FMA, and with 16-byte vectors for the baseline ISA (SSE2, NEON), the "portable" kernels; the
 * best the CPU has is chosen at run time, capped as every vectorised kernel is by $TIDE_CPU_ISA
 * (and tide_cpu_isa_limit), and for the convolutions alone by $TIDE_CONV_ISA=portable|avx2|avx512
 * (the tests force every family with it; $TIDE_CONV_PORTABLE, any value, still means portable).
 * On the Zen 5 VM of 2026 (two 512-bit FMA pipes per core: 64 float32 FLOP/cycle with AVX-512, 32
 * with AVX2; tests/bench/bench_fma_peak.c) the AVX-512 kernels run the CNN's second layer at about
 * twice the AVX2 speed, ~235 GFLOP/s of CPU time per core (~94% of the measured peak) for the
 * forward pass and backprop-input, ~210 for backprop-filter (docs/benchmarks.md). Keeping MR = 6
 * (12 of the 32 zmm registers as accumulators) measured the same as MR = 8 or 12.
 *
 * Winograd (conv_winograd.c): stride-1, undilated float32 Conv2D and Conv2DBackpropInput with square
 * 3x3 or 5x5 windows and channel counts that are multiples of 16 run as F(4x4, 3x3) / F(2x2, 5x5)
 * Winograd convolutions when the AVX-512 kernels are chosen (use_winograd): 2.8x (5x5) and 4x (3x3)
 * fewer multiplications than the direct kernels, at a float32 error 3x (5x5) and 8x (3x3) theirs. By
 * default (auto) only 5x5 layers take it: the 3x3 form's error went past the kernel suite's tolerance
 * on one shape. Conv2DBackpropFilter of the same layers runs as F(5x5, 2x2) / F(3x3, 4x4)
 * (conv_winograd_filter.c: 2.8x and 4x fewer multiplications) when its sums have at least 512 terms
 * (batch x output pixels; fewer: its float32 error would come near the suite's tolerance) and its
 * partial sums are not too large, and neither $TIDE_CONV_FILTER_IN_PLACE nor $TIDE_CONV_FILTER_SLICES
 * asks for a direct method. $TIDE_CONV_ALGO=direct|winograd|auto switches it (winograd: 3x3 too);
 * the first layer of the tutorial CNN (one input channel) and every strided, dilated or float64
 * convolution stay direct. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/conv_ops.h"
#include "../../engine/ops/op_util.h"
#include "conv_filter.h"
#include "conv_isa.h"
#include "conv_slices.h"
#include "conv_winograd.h"
#include "cpu_util.h"

#define MR 6                       /* rows (pixels or k) per micro-kernel call */
#define CHUNK_BYTES 16384          /* packed filter per chunk: stays in L1 */
#define CHUNK_BYTES_WIDE 24576     /* the same for 64-byte vectors (AVX-512: 5x5x32 taps, 20 KiB) */
#define CANVAS_BYTES (192 * 1024)  /* a tile's canvas: stays in L2 */
#define TILE_PIXELS 256            /* filter gradient: pixels per pass (their dy stays in L1) */
#define MAX_SLICES 8               /* filter gradient: partial sums */
#define NS_PER_FLOP 0.012          /* cost model for parallel_for: ~80 GFLOP/s per core */


/* A contiguous run of k (same kh, and same kw when dilated) at canvas offset `off` from a pixel's
 * top-left corner, `len` elements long. */
typedef struct conv_piece {
    int64_t off, len;
    int64_t k0; /* the piece's first k */
    int64_t kh; /* its filter row */
    int64_t kw; /* the filter column of element 0 (elements further on: kw + (at + e) / cin) */
    int64_t at; /* element 0's place in its run of (kw, c) */
} conv_piece;

/* Pixels [begin, end) of a tile (row-major), a range the filter-like kernel sums over. */
typedef struct conv_span {
    int64_t begin, end;
} conv_span;

/* ---------------------------------------------------------------- micro-kernels */

/* DEFINE_MICROKERNELS(T, V, SFX) defines, for element type T and its vector type V (VB = two V):
 *   fwd_rows_SFX(R, rows, outs, pieces, n, w, accumulate):
 *       outs[r][0:VB] (+)= sum over the pieces' k of rows[r][off + j] * w[k*VB + 0:VB]
 *       (k = the piece's k0 + j: pieces need not be adjacent in k)
 *   dot_rows_SFX(R, rows, outs, pieces, n, w, accumulate): the same for one channel,
 *       outs[r][0] (+)= sum over k of rows[r][off + j] * w[k] (vectors along k, then a tail)
 *   filt_rows_SFX(R, pix, spans, nspans, off, dy, dy0, dstride, acc):
 *       acc[r*VB + 0:VB] += sum over the spans' pixels p of pix[p][off + r] * dy[(p-dy0)*dstride + 0:VB]
 * for a compile-time R <= MR (the callers below switch on it), keeping the 2*R accumulators in
 * registers. */
#define DEFINE_MICROKERNELS(T, V, SFX, MADD2)                                                         \
    enum { VL_##SFX = (int)(sizeof(V) / sizeof(T)) };                                            \
    INLINE void fwd_rows_##SFX(const int R, const T *const *rows, T *const *outs,                \
                               const conv_piece *pieces, int npieces, const T *w, bool accumulate) \
    {                                                                                            \
        V acc[MR][2];                                                                            \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            acc[r][0] = accumulate ? *(const V *)outs[r] : (V){0};                               \
            acc[r][1] = accumulate ? *(const V *)(outs[r] + VL_##SFX) : (V){0};                  \
        }                                                                                        \
        for (int s = 0; s < npieces; s++) {                                                     \
            const T *a[MR];                                                                      \
            _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) a[r] = rows[r] + pieces[s].off;  \
            const int64_t len = pieces[s].len;                                                   \
            const T *wk = w + pieces[s].k0 * 2 * VL_##SFX;                                       \
            for (int64_t j = 0; j < len; j++, wk += 2 * VL_##SFX) {                              \
                const V w0 = *(const V *)wk, w1 = *(const V *)(wk + VL_##SFX);                  \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                              \
                    MADD2(acc[r][0], acc[r][1], a[r] + j, w0, w1);                               \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            *(V *)outs[r] = acc[r][0];                                                           \
            *(V *)(outs[r] + VL_##SFX) = acc[r][1];                                              \
        }                                                                                        \
    }                                                                                            \
    INLINE void filt_rows_##SFX(const int R, const T *const *pix, const conv_span *spans,        \
                                int nspans, int64_t off, const T *dy, int64_t dy0,               \
                                int64_t dstride, T *acc_mem)                                     \
    {                                                                                            \
        V acc[MR][2];                                                                            \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            acc[r][0] = *(const V *)(acc_mem + r * 2 * VL_##SFX);                                \
            acc[r][1] = *(const V *)(acc_mem + r * 2 * VL_##SFX + VL_##SFX);                     \
        }                                                                                        \
        for (int sp = 0; sp < nspans; sp++) {                                                    \
            const T *d = dy + (spans[sp].begin - dy0) * dstride;                                 \
            for (int64_t p = spans[sp].begin; p < spans[sp].end; p++, d += dstride) {            \
                const T *a = pix[p] + off;                                                       \
                const V d0 = *(const V *)d, d1 = *(const V *)(d + VL_##SFX);                     \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                              \
                {                                                                                \
                    acc[r][0] += a[r] * d0;                                                      \
                    acc[r][1] += a[r] * d1;                                                      \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            *(V *)(acc_mem + r * 2 * VL_##SFX) = acc[r][0];                                      \
            *(V *)(acc_mem + r * 2 * VL_##SFX + VL_##SFX) = acc[r][1];                           \
        }                                                                                        \
    }                                                                                            \
    INLINE void dot_rows_##SFX(const int R, const T *const *rows, T *const *outs,                \
                               const conv_piece *pieces, int npieces, const T *w, bool accumulate) \
    {                                                                                            \
        V acc[MR];                                                                               \
        T tail[MR];                                                                              \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            acc[r] = (V){0};                                                                     \
            tail[r] = accumulate ? *outs[r] : 0;                                                 \
        }                                                                                        \
        for (int s = 0; s < npieces; s++) {                                                     \
            const T *a[MR];                                                                      \
            _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) a[r] = rows[r] + pieces[s].off;  \
            const int64_t len = pieces[s].len;                                                   \
            const T *wk = w + pieces[s].k0;                                                      \
            int64_t j = 0;                                                                       \
            for (; j + VL_##SFX <= len; j += VL_##SFX, wk += VL_##SFX) {                         \
                const V wv = *(const V *)wk;                                                     \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                              \
                    acc[r] += *(const V *)(a[r] + j) * wv;                                       \
            }                                                                                    \
            for (; j < len; j++, wk++)                                                           \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) tail[r] += a[r][j] * *wk;    \
        }                                                                                        \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
        {                                                                                        \
            T sum = tail[r];                                                                     \
            for (int i = 0; i < VL_##SFX; i++)                                                   \
                sum += acc[r][i];                                                                \
            *outs[r] = sum;                                                                      \
        }                                                                                        \
    }

/* The vector types, unaligned and allowed to alias their elements: 32 bytes for AVX2, 16 for the
 * portable kernels (SSE2, NEON: 12 accumulators then fit in 16 registers). */
typedef float vec_f32 __attribute__((vector_size(32), aligned(4), may_alias));
typedef double vec_f64 __attribute__((vector_size(32), aligned(8), may_alias));
typedef float vec16_f32 __attribute__((vector_size(16), aligned(4), may_alias));
typedef double vec16_f64 __attribute__((vector_size(16), aligned(8), may_alias));
typedef float vec64_f32 __attribute__((vector_size(64), aligned(4), may_alias));
typedef double vec64_f64 __attribute__((vector_size(64), aligned(8), may_alias));
/* MADD2(acc0, acc1, x, w0, w1): acc0 += *x * w0, acc1 += *x * w1, x pointing at a scalar. For
 * float32 with AVX-512 (the hot path) the broadcast and the two FMAs are written out in assembly:
 * GCC 12 compiled the C form of the 6-pixel block into vfmadd132ps with ~10 register moves per k
 * (rotating accumulators through the broadcast register); with vfmadd231ps into fixed accumulators
 * the forward pass and backprop-input took 4-5% less CPU time (1 thread, least of 15 interleaved
 * runs, load ~25: 8.69 -> 8.22 ms and 8.82 -> 8.33 ms). The FMA with an embedded broadcast ({1to16},
 * one load per FMA, no broadcast register) was 11% slower than the C form. */
#define MADD2_PLAIN(acc0, acc1, x, w0, w1)                                                       \
    do {                                                                                         \
        acc0 += *(x) * (w0);                                                                     \
        acc1 += *(x) * (w1);                                                                     \
    } while (0)
#if HAVE_X86_DISPATCH
#define MADD2_ZMM_F32(acc0, acc1, x, w0, w1)                                                     \
    do {                                                                                         \
        vec64_f32 b_;                                                                            \
        __asm__("vbroadcastss %1, %0" : "=v"(b_) : "m"(*(x)));                                   \
        __asm__("vfmadd231ps %1, %2, %0" : "+v"(acc0) : "v"(b_), "v"(w0));                       \
        __asm__("vfmadd231ps %1, %2, %0" : "+v"(acc1) : "v"(b_), "v"(w1));                       \
    } while (0)
#else
#define MADD2_ZMM_F32 MADD2_PLAIN
#endif
DEFINE_MICROKERNELS(float, vec64_f32, z32, MADD2_ZMM_F32)
DEFINE_MICROKERNELS(double, vec64_f64, z64, MADD2_PLAIN)
DEFINE_MICROKERNELS(float, vec_f32, f32, MADD2_PLAIN)
DEFINE_MICROKERNELS(double, vec_f64, f64, MADD2_PLAIN)
DEFINE_MICROKERNELS(float, vec16_f32, p32, MADD2_PLAIN)
DEFINE_MICROKERNELS(double, vec16_f64, p64, MADD2_PLAIN)

/* DEFINE_WIDE_FILTER(T, V, SFX): filt4_rows_SFX, the filter-like kernel over FOUR vectors of
 * channels (64 float32 with AVX-512, used when cout is past one block of two): 4*R accumulators
 * (24 of the 32 zmm registers), so each broadcast of the canvas feeds four FMAs instead of two (per
 * pixel: 4 vector loads of dy and R broadcasts for 4*R FMAs). The CNN layer's backprop-filter, in
 * interleaved runs against AVX2 on the loaded machine: 1.84x -> 1.90x AVX2's speed. The same for the
 * forward kernel measured no gain (1.94x -> 1.92x), so it has none. */
#define DEFINE_WIDE_FILTER(T, V, SFX)                                                            \
    INLINE void filt4_rows_##SFX(const int R, const T *const *pix, const conv_span *spans,       \
                                 int nspans, int64_t off, const T *dy, int64_t dy0,              \
                                 int64_t dstride, T *acc_mem)                                    \
    {                                                                                            \
        V acc[MR][4];                                                                            \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)                                  \
                acc[r][v] = *(const V *)(acc_mem + (r * 4 + v) * VL_##SFX);                      \
        for (int sp = 0; sp < nspans; sp++) {                                                    \
            const T *dp = dy + (spans[sp].begin - dy0) * dstride;                                \
            for (int64_t p = spans[sp].begin; p < spans[sp].end; p++, dp += dstride) {           \
                const T *a = pix[p] + off;                                                       \
                V d[4];                                                                          \
                _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) d[v] = *(const V *)(dp + v * VL_##SFX); \
                _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                              \
                    _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] += a[r] * d[v]; \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)                                  \
                *(V *)(acc_mem + (r * 4 + v) * VL_##SFX) = acc[r][v];                            \
    }
DEFINE_WIDE_FILTER(float, vec64_f32, z32)
DEFINE_WIDE_FILTER(double, vec64_f64, z64)

/* The entry points take R at run time and switch to the compile-time instances. */
typedef void (*fwd_block_fn)(int R, const void *const *rows, void *const *outs, const conv_piece *pieces,
                             int npieces, const void *w, bool accumulate);
typedef void (*filt_block_fn)(int R, const void *const *pix, const conv_span *spans, int nspans, int64_t off,
                              const void *dy, int64_t dy0, int64_t dstride, void *acc);

#define SWITCH_ROWS(R, CALL, K)                                                                  \
    switch (R) {                                                                                 \
    case 6: CALL(K, 6); break;                                                                   \
    case 5: CALL(K, 5); break;                                                                   \
    case 4: CALL(K, 4); break;                                                                   \
    case 3: CALL(K, 3); break;                                                                   \
    case 2: CALL(K, 2); break;                                                                   \
    default: CALL(K, 1); break;                                                                  \
    }
#define FWD_CALL(K, R) fwd_rows_##K(R, (const void *)rows, (void *)outs, pieces, npieces, w, accumulate)
#define DOT_CALL(K, R) dot_rows_##K(R, (const void *)rows, (void *)outs, pieces, npieces, w, accumulate)
#define FILT_CALL(K, R) filt_rows_##K(R, (const void *)pix, spans, nspans, off, dy, dy0, dstride, acc)
#define FILT4_CALL(K, R) filt4_rows_##K(R, (const void *)pix, spans, nspans, off, dy, dy0, dstride, acc)

/* The entry points of the micro-kernels with suffix K, compiled with function attributes ATTR. */
#define DEFINE_ENTRY_POINTS(K, ATTR)                                                             \
    ATTR static void fwd_block_##K(int R, const void *const *rows, void *const *outs,            \
                                   const conv_piece *pieces, int npieces, const void *w,         \
                                   bool accumulate)                                              \
    {                                                                                            \
        SWITCH_ROWS(R, FWD_CALL, K)                                                              \
    }                                                                                            \
    ATTR static void dot_block_##K(int R, const void *const *rows, void *const *outs,            \
                                   const conv_piece *pieces, int npieces, const void *w,         \
                                   bool accumulate)                                              \
    {                                                                                            \
        SWITCH_ROWS(R, DOT_CALL, K)                                                              \
    }                                                                                            \
    ATTR static void filt_block_##K(int R, const void *const *pix, const conv_span *spans,       \
                                    int nspans, int64_t off, const void *dy, int64_t dy0,        \
                                    int64_t dstride, void *acc)                                  \
    {                                                                                            \
        SWITCH_ROWS(R, FILT_CALL, K)                                                             \
    }

DEFINE_ENTRY_POINTS(p32, )
DEFINE_ENTRY_POINTS(p64, )
#if HAVE_X86_DISPATCH
DEFINE_ENTRY_POINTS(f32, AVX2_FN)
DEFINE_ENTRY_POINTS(f64, AVX2_FN)
DEFINE_ENTRY_POINTS(z32, AVX512_FN)
DEFINE_ENTRY_POINTS(z64, AVX512_FN)
AVX512_FN static void filt4_block_z32(int R, const void *const *pix, const conv_span *spans, int nspans,
                                      int64_t off, const void *dy, int64_t dy0, int64_t dstride, void *acc)
{
    SWITCH_ROWS(R, FILT4_CALL, z32)
}
AVX512_FN static void filt4_block_z64(int R, const void *const *pix, const conv_span *spans, int nspans,
                                      int64_t off, const void *dy, int64_t dy0, int64_t dstride, void *acc)
{
    SWITCH_ROWS(R, FILT4_CALL, z64)
}
#endif

/* What the drivers need to know about a dtype. */
typedef struct conv_type {
    size_t esize;
    int64_t vb; /* output channels per block: two vectors */
    fwd_block_fn fwd;
    fwd_block_fn dot; /* the narrow variant: one output channel, vectors along k */
    filt_block_fn filt;
    filt_block_fn filt_wide; /* over 2 * vb channels (AVX-512), or NULL */
} conv_type;

/* The micro-kernel family: the instruction set the other vectorised kernels use now
 * (tide_cpu_isa_active: the CPU's best, capped by $TIDE_CPU_ISA and tide_cpu_isa_limit), further
 * capped for the convolutions alone by $TIDE_CONV_ISA ("portable", "avx2" or "avx512"; the tests
 * and bench_conv force each path with it) or $TIDE_CONV_PORTABLE (any value: "portable"). Read at
 * every call, so a benchmark can alternate the paths in one process. */
static conv_isa choose_isa(void)
{
#if HAVE_X86_DISPATCH
    const tide_cpu_isa active = tide_cpu_isa_active();
    const conv_isa best = active == TIDE_ISA_AVX512 ? CONV_AVX512 : active == TIDE_ISA_AVX2 ? CONV_AVX2 : CONV_PORTABLE;
    const char *want = getenv("TIDE_CONV_ISA");
    if (getenv("TIDE_CONV_PORTABLE") || (want && strcmp(want, "portable") == 0))
        return CONV_PORTABLE;
    if (want && strcmp(want, "avx2") == 0 && best > CONV_AVX2)
        return CONV_AVX2;
    return best;
#else
    return CONV_PORTABLE;
#endif
}

static conv_type type_of(tide_dtype dt)
{
    const bool f32 = dt == TIDE_FLOAT32;
    const size_t esize = f32 ? sizeof(float) : sizeof(double);
    switch (choose_isa()) {
#if HAVE_X86_DISPATCH
    case CONV_AVX512:
        return (conv_type){.esize = esize, .vb = 2 * (f32 ? VL_z32 : VL_z64),
                           .fwd = f32 ? fwd_block_z32 : fwd_block_z64,
                           .dot = f32 ? dot_block_z32 : dot_block_z64,
                           .filt = f32 ? filt_block_z32 : filt_block_z64,
                           .filt_wide = f32 ? filt4_block_z32 : filt4_block_z64};
    case CONV_AVX2:
        return (conv_type){.esize = esize, .vb = 2 * (f32 ? VL_f32 : VL_f64),
                           .fwd = f32 ? fwd_block_f32 : fwd_block_f64,
                           .dot = f32 ? dot_block_f32 : dot_block_f64,
                           .filt = f32 ? filt_block_f32 : filt_block_f64};
#endif
    default:
        return (conv_type){.esize = esize, .vb = 2 * (f32 ? VL_p32 : VL_p64),
                           .fwd = f32 ? fwd_block_p32 : fwd_block_p64,
                           .dot = f32 ? dot_block_p32 : dot_block_p64,
                           .filt = f32 ? filt_block_p32 : filt_block_p64};
    }
}

/* ---------------------------------------------------------------- jobs, canvases, pieces */

/* Output columns sharing one range of filter columns that may read source data, [tap_lo, tap_hi):
 * the forward-like kernels run their pixels with the pieces narrowed to those taps. */
typedef struct conv_class {
    int64_t tap_lo, tap_hi;
    int64_t col0, ncols; /* its columns: j->class_cols[col0, col0 + ncols) */
} conv_class;

/* One convolution as the drivers see it: a canvas made from src (see the file comment), moved over
 * by a window of kh x kw taps, producing out_h x out_w pixels of cout channels per image. */
typedef struct conv_job {
    conv_type ty;
    tide_kernel_ctx *ctx;
    int64_t batch;
    const char *src; /* [batch][src_h][src_w][cin] */
    int64_t src_h, src_w, cin;
    int64_t up_h, up_w, off_h, off_w;
    int64_t kh, kw, stride_h, stride_w, dil_h, dil_w;
    int64_t out_h, out_w, cout;
    int64_t canvas_w, k_total;
    int64_t vb, cblocks; /* output channels per block (ty.vb, or 1 when narrow), blocks */
    fwd_block_fn block;  /* forward-like: ty.fwd, or ty.dot when narrow */
    filt_block_fn filt;  /* filter gradient: ty.filt, or ty.filt_wide (vb = 2 * ty.vb) */
    int64_t tile_rows, tiles; /* output rows per tile, tiles per image */
    conv_piece *pieces;
    int npieces;
    int *chunks; /* chunk c is pieces [chunks[c], chunks[c + 1]) */
    int nchunks;
    /* The width's padding (prepare_columns): output columns [tap_cols[2t], tap_cols[2t + 1]) are
     * those whose filter column t may read source data; the columns fall into classes of equal tap
     * ranges, each with the pieces narrowed to its taps. */
    int64_t *tap_cols;
    conv_class *classes;
    int nclasses;
    int64_t *class_cols;      /* class q's columns: class_cols[classes[q].col0 ...], ascending */
    conv_piece *class_pieces; /* class q's pieces: [q * npieces, (q + 1) * npieces), some empty */
    bool *class_live;         /* [q * nchunks + c]: chunk c has a non-empty piece for class q */
    const char *packed; /* forward-like: [cblocks][k_total][vb] */
    char *dst;          /* forward-like: [batch][out_h][out_w][cout], or placed (below) */
    /* A placed output (Conv2DBackpropInput's phases): output pixel (oh, ow) of image n lands at
     * pixel (place_h0 + oh * place_sh, place_w0 + ow * place_sw) of a [batch][place_h][place_w]
     * [cout] tensor; placed is false when that is dst itself (steps 1, no offset). */
    bool placed;
    int64_t place_h, place_w, place_h0, place_w0, place_sh, place_sw;
    const char *dy;     /* filter gradient: [batch][out_h][out_w][cout] */
    int64_t slices;
    _Atomic bool out_of_memory;
    _Atomic int64_t next_item; /* share_items: the next unit to take */
    int64_t items;
} conv_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t canvas_rows(const conv_job *j, int64_t out_rows)
{
    return (out_rows - 1) * j->stride_h + (j->kh - 1) * j->dil_h + 1;
}

static size_t canvas_bytes(const conv_job *j, int64_t out_rows)
{
    return (size_t)(canvas_rows(j, out_rows) * j->canvas_w * j->cin) * j->ty.esize;
}

/* Whether output column ow's filter column t reads a source pixel (not the canvas's padding). */
static bool column_reads_source(const conv_job *j, int64_t ow, int64_t t)
{
    const int64_t at = ow * j->stride_w + t * j->dil_w - j->off_w;
    return at >= 0 && at % j->up_w == 0 && at / j->up_w < j->src_w;
}

/* Piece p narrowed to the filter columns [tap_lo, tap_hi) (elements of other columns dropped; len 0
 * when none is left). */
static conv_piece narrow_piece(const conv_job *j, conv_piece p, int64_t tap_lo, int64_t tap_hi)
{
    const int64_t e0 = min64(p.len, max64(0, (tap_lo - p.kw) * j->cin - p.at));
    const int64_t e1 = min64(p.len, max64(0, (tap_hi - p.kw) * j->cin - p.at));
    p.off += e0;
    p.k0 += e0;
    p.at += e0;
    p.len = max64(0, e1 - e0);
    return p;
}

/* The width direction of the padding: which output columns each filter column reads source data
 * for, and the classes of columns with equal tap ranges, their pieces narrowed (the CNN's 5x5 SAME
 * layer on 14x14: columns 0, 1, 12 and 13 skip 2, 1, 1 and 2 of the 5 taps, 6 of 70 column-taps).
 * $TIDE_CONV_FULL_WIDTH (any value) keeps every tap of every column (one class): the tests compare
 * both, the benchmark alternates them. A range is a hull (dilated or upsampled canvases may have
 * padding between its ends): the zeros inside are multiplied, never data skipped. */
static bool prepare_columns(conv_job *j)
{
    const bool full = getenv("TIDE_CONV_FULL_WIDTH") != NULL;
    const int64_t ow_n = j->out_w;
    j->tap_cols = malloc(sizeof *j->tap_cols * (size_t)(2 * max64(1, j->kw)));
    j->classes = malloc(sizeof *j->classes * (size_t)max64(1, ow_n));
    j->class_cols = malloc(sizeof *j->class_cols * (size_t)max64(1, ow_n));
    int64_t *class_of = malloc(sizeof *class_of * (size_t)max64(1, ow_n));
    if (!j->tap_cols || !j->classes || !j->class_cols || !class_of) {
        free(class_of);
        return false;
    }
    for (int64_t t = 0; t < j->kw; t++) {
        int64_t lo = ow_n, hi = 0;
        for (int64_t ow = 0; ow < ow_n; ow++)
            if (full || column_reads_source(j, ow, t)) {
                lo = min64(lo, ow);
                hi = ow + 1;
            }
        j->tap_cols[2 * t] = hi > lo ? lo : 0;
        j->tap_cols[2 * t + 1] = hi > lo ? hi : 0;
    }
    j->nclasses = 0;
    for (int64_t ow = 0; ow < ow_n; ow++) {
        int64_t tl = j->kw, th = 0;
        for (int64_t t = 0; t < j->kw; t++)
            if (ow >= j->tap_cols[2 * t] && ow < j->tap_cols[2 * t + 1]) {
                tl = min64(tl, t);
                th = t + 1;
            }
        if (th <= tl)
            tl = th = 0;
        int q = 0;
        while (q < j->nclasses && (j->classes[q].tap_lo != tl || j->classes[q].tap_hi != th))
            q++;
        if (q == j->nclasses)
            j->classes[j->nclasses++] = (conv_class){.tap_lo = tl, .tap_hi = th};
        class_of[ow] = q;
        j->classes[q].ncols++;
    }
    for (int q = 0, col0 = 0; q < j->nclasses; q++) {
        j->classes[q].col0 = col0;
        col0 += (int)j->classes[q].ncols;
        j->classes[q].ncols = 0;
    }
    for (int64_t ow = 0; ow < ow_n; ow++) {
        conv_class *c = &j->classes[class_of[ow]];
        j->class_cols[c->col0 + c->ncols++] = ow;
    }
    free(class_of);
    j->class_pieces = malloc(sizeof *j->class_pieces * (size_t)max64(1, j->nclasses * j->npieces));
    j->class_live = calloc((size_t)max64(1, j->nclasses * j->nchunks), sizeof *j->class_live);
    if (!j->class_pieces || !j->class_live)
        return false;
    for (int q = 0; q < j->nclasses; q++)
        for (int c = 0; c < j->nchunks; c++)
            for (int i = j->chunks[c]; i < j->chunks[c + 1]; i++) {
                conv_piece p = narrow_piece(j, j->pieces[i], j->classes[q].tap_lo, j->classes[q].tap_hi);
                j->class_pieces[q * j->npieces + i] = p;
                j->class_live[q * j->nchunks + c] |= p.len > 0;
            }
    return true;
}

/* Fills in the derived fields: canvas width, channel blocks, pieces and chunks of k, tiling. False
 * when out of memory. min_units: split images into row tiles until there are at least this many
 * units. A forward-like job with at most a quarter block of output channels is "narrow": its
 * channels are computed one at a time by the dot kernel (vectors along k) instead of wasting most
 * of a channel block. */
static bool job_prepare(conv_job *j, int64_t min_units, bool forward_like)
{
    j->canvas_w = (j->out_w - 1) * j->stride_w + (j->kw - 1) * j->dil_w + 1;
    j->k_total = j->kh * j->kw * j->cin;
    const bool narrow = forward_like && j->cout * 4 <= j->ty.vb;
    const bool wide = !forward_like && j->ty.filt_wide && j->cout > j->ty.vb;
    j->vb = narrow ? 1 : wide ? 2 * j->ty.vb : j->ty.vb;
    j->block = narrow ? j->ty.dot : j->ty.fwd;
    j->filt = wide ? j->ty.filt_wide : j->ty.filt;
    j->cblocks = (j->cout + j->vb - 1) / j->vb;
    const int64_t bytes_per_k = j->vb * (int64_t)j->ty.esize;
    const int64_t chunk_k = max64(MR, (bytes_per_k > 64 ? CHUNK_BYTES_WIDE : CHUNK_BYTES) / bytes_per_k);
    const bool joined = j->dil_w == 1; /* the kw taps of one kh are one contiguous run */
    const int64_t runs = joined ? j->kh : j->kh * j->kw, run_len = joined ? j->kw * j->cin : j->cin;
    const int64_t per_run = (run_len + chunk_k - 1) / chunk_k;
    j->pieces = malloc(sizeof *j->pieces * (size_t)max64(1, runs * per_run));
    j->chunks = malloc(sizeof *j->chunks * (size_t)(runs * per_run + 1));
    if (!j->pieces || !j->chunks)
        return false;
    j->npieces = j->nchunks = 0;
    int64_t k = 0, in_chunk = chunk_k;
    for (int64_t r = 0; r < runs && run_len > 0; r++) {
        int64_t kh = joined ? r : r / j->kw, kw = joined ? 0 : r % j->kw;
        int64_t base = (kh * j->dil_h * j->canvas_w + kw * j->dil_w) * j->cin;
        for (int64_t at = 0; at < run_len; at += chunk_k) {
            int64_t len = min64(chunk_k, run_len - at);
            if (in_chunk + len > chunk_k) { /* start a new chunk */
                j->chunks[j->nchunks++] = j->npieces;
                in_chunk = 0;
            }
            j->pieces[j->npieces++] = (conv_piece){.off = base + at, .len = len, .k0 = k, .kh = kh,
                                                   .kw = kw, .at = at};
            in_chunk += len;
            k += len;
        }
    }
    j->chunks[j->nchunks] = j->npieces;
    if (!prepare_columns(j))
        return false;
    int64_t rows = j->out_h;
    while (rows > 1 && canvas_bytes(j, rows) > CANVAS_BYTES)
        rows = (rows + 1) / 2;
    if (j->batch < min_units) {
        int64_t want_tiles = (min_units + j->batch - 1) / max64(1, j->batch);
        rows = min64(rows, max64(1, (j->out_h + want_tiles - 1) / want_tiles));
    }
    j->tile_rows = max64(1, rows);
    j->tiles = (j->out_h + j->tile_rows - 1) / j->tile_rows;
    return true;
}

static void job_free(conv_job *j)
{
    free(j->pieces);
    free(j->chunks);
    free(j->tap_cols);
    free(j->classes);
    free(j->class_cols);
    free(j->class_pieces);
    free(j->class_live);
}

/* Copies the source pixels that output rows [oh0, oh0 + out_rows) of image n read into canvas
 * (zeros elsewhere). */
static void build_canvas(const conv_job *j, int64_t n, int64_t oh0, int64_t out_rows, char *canvas)
{
    const size_t es = j->ty.esize, pixel = (size_t)j->cin * es, row_bytes = (size_t)j->canvas_w * pixel;
    const int64_t rows = canvas_rows(j, out_rows);
    memset(canvas, 0, (size_t)rows * row_bytes);
    const char *image = j->src + (size_t)(n * j->src_h * j->src_w) * pixel;
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = oh0 * j->stride_h + r - j->off_h;
        if (t < 0 || t % j->up_h != 0 || t / j->up_h >= j->src_h)
            continue;
        const char *from = image + (size_t)(t / j->up_h * j->src_w) * pixel;
        char *to = canvas + (size_t)r * row_bytes;
        if (j->up_w == 1) {
            int64_t c0 = max64(0, -j->off_w), c1 = min64(j->src_w, j->canvas_w - j->off_w);
            if (c1 > c0)
                memcpy(to + (size_t)(j->off_w + c0) * pixel, from + (size_t)c0 * pixel,
                       (size_t)(c1 - c0) * pixel);
            continue;
        }
        for (int64_t c = 0; c < j->src_w; c++) {
            int64_t at = j->off_w + c * j->up_w;
            if (at >= j->canvas_w)
                break;
            if (at >= 0)
                memcpy(to + (size_t)at * pixel, from + (size_t)c * pixel, pixel);
        }
    }
}

/* pix[p] = the canvas corner of the tile's pixel p (row-major over out_rows x out_w). */
static void pixel_corners(const conv_job *j, const char *canvas, int64_t out_rows, const void **pix)
{
    const size_t pixel = (size_t)j->cin * j->ty.esize;
    for (int64_t r = 0, p = 0; r < out_rows; r++)
        for (int64_t c = 0; c < j->out_w; c++, p++)
            pix[p] = canvas + (size_t)((r * j->stride_h * j->canvas_w + c * j->stride_w)) * pixel;
}

/* Scratch of one parallel_for chunk: the canvas, the pixel corners, a [pixels][vb] buffer, and the
 * forward-like driver's pixels in class order (order, their corners cpix, their outputs outs) or the
 * filter driver's spans. */
typedef struct conv_scratch {
    char *canvas;
    const void **pix;
    char *block;
    int64_t *order;
    const void **cpix;
    void **outs;
    conv_span *spans;
    int64_t *chunk_lo, *chunk_hi; /* the tile's rows each chunk reads data for (chunk_rows) */
} conv_scratch;

static void scratch_free(conv_scratch *s)
{
    free(s->canvas);
    free(s->pix);
    free(s->block);
    free(s->order);
    free(s->cpix);
    free(s->outs);
    free(s->spans);
    free(s->chunk_lo);
    free(s->chunk_hi);
}

static bool scratch_new(conv_job *j, conv_scratch *s, int64_t block_pixels)
{
    const size_t pixels = (size_t)(j->tile_rows * j->out_w);
    s->canvas = malloc(canvas_bytes(j, j->tile_rows) + 64);
    s->pix = malloc(sizeof *s->pix * pixels);
    s->block = malloc((size_t)(block_pixels * j->vb) * j->ty.esize + 64);
    s->order = malloc(sizeof *s->order * pixels);
    s->cpix = malloc(sizeof *s->cpix * pixels);
    s->outs = malloc(sizeof *s->outs * pixels);
    s->spans = malloc(sizeof *s->spans * (size_t)(j->tile_rows + 1));
    s->chunk_lo = malloc(sizeof *s->chunk_lo * (size_t)(j->nchunks + 1));
    s->chunk_hi = malloc(sizeof *s->chunk_hi * (size_t)(j->nchunks + 1));
    if (s->canvas && s->pix && s->block && s->order && s->cpix && s->outs && s->spans && s->chunk_lo && s->chunk_hi)
        return true;
    j->out_of_memory = true;
    scratch_free(s);
    return false;
}

/* ---------------------------------------------------------------- forward-like driver */

/* Output rows [*lo, *hi) of the tile of `rows` rows at oh0 whose canvas row for filter row kh may
 * hold source data (first to last; between them an upsampled canvas has zero rows too). Rows
 * outside read only the canvas's zero padding there: the drivers skip their multiplications (the
 * CNN's 5x5 SAME layer on 14x14 images: 6 of 70 row-taps, 8.6% of the work). */
static void live_rows(const conv_job *j, int64_t oh0, int64_t rows, int64_t kh, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t t = (oh0 + r) * j->stride_h + kh * j->dil_h - j->off_h;
        if (t < 0 || t % j->up_h != 0 || t / j->up_h >= j->src_h)
            continue;
        if (*hi == 0)
            *lo = r;
        *hi = r + 1;
    }
}

/* The rows [*lo, *hi) of the tile that chunk c's pieces read source data for (their rows' union). */
static void chunk_rows(const conv_job *j, int c, int64_t oh0, int64_t rows, int64_t *lo, int64_t *hi)
{
    *lo = rows;
    *hi = 0;
    for (int i = j->chunks[c]; i < j->chunks[c + 1]; i++) {
        int64_t l, h;
        live_rows(j, oh0, rows, j->pieces[i].kh, &l, &h);
        if (h > l) {
            *lo = min64(*lo, l);
            *hi = max64(*hi, h);
        }
    }
    if (*hi <= *lo)
        *lo = *hi = 0;
}

/* The chunk that reads source data for every pixel of the tile (its rows in s->chunk_lo/hi) and
 * every column class, or -1: it runs first and writes the outputs, the others add to them; with none
 * the outputs start at zero. (For a SAME window, the middle filter row.) */
static int lead_chunk(const conv_job *j, const conv_scratch *s, int64_t rows)
{
    for (int c = 0; c < j->nchunks; c++) {
        bool all = s->chunk_lo[c] == 0 && s->chunk_hi[c] == rows;
        for (int q = 0; q < j->nclasses && all; q++)
            all = j->class_live[q * j->nchunks + c];
        if (all)
            return c;
    }
    return -1;
}

/* The tile's pixels in class order (class by class, each class's pixels row-major) and their canvas
 * corners: class q holds positions [rows * col0, rows * (col0 + ncols)). */
static void order_pixels(const conv_job *j, conv_scratch *s, int64_t rows)
{
    int64_t i = 0;
    for (int q = 0; q < j->nclasses; q++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < j->classes[q].ncols; c++)
                s->order[i++] = r * j->out_w + j->class_cols[j->classes[q].col0 + c];
    for (int64_t p = 0; p < i; p++)
        s->cpix[p] = s->pix[s->order[p]];
}

/* n pixels through the micro-kernel in blocks of at most MR, sized evenly (14 pixels: 5 + 5 + 4, not
 * 6 + 6 + 2: a block of R pixels keeps 2R accumulators, and fewer than 8 leave the two FMA pipes'
 * 4-cycle latency uncovered). */
static void run_blocks(const conv_job *j, const void **cpix, void **outs, int64_t n, const conv_piece *pieces,
                       int npieces, const char *w, bool accumulate)
{
    const int64_t blocks = (n + MR - 1) / MR;
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t b0 = n * b / blocks, b1 = n * (b + 1) / blocks;
        j->block((int)(b1 - b0), cpix + b0, outs + b0, pieces, npieces, w, accumulate);
    }
}

/* Output channels [cb*vb, cb*vb + vb) of the tile's pixels (rows at oh0, in class order in s), pixel
 * p's at out + p * ostride: every chunk of k summed, each chunk over only the rows it reads source
 * data for and each column class with its narrowed pieces; the lead chunk first (lead_chunk). */
static void forward_block(const conv_job *j, conv_scratch *s, int64_t rows, int lead, int64_t cb,
                          char *out, int64_t ostride)
{
    const size_t es = j->ty.esize;
    const int64_t pixels = rows * j->out_w;
    for (int64_t p = 0; p < pixels; p++)
        s->outs[p] = out + (size_t)(s->order[p] * ostride) * es;
    if (lead < 0)
        for (int64_t p = 0; p < pixels; p++)
            memset(out + (size_t)(p * ostride) * es, 0, (size_t)j->vb * es);
    const char *w = j->packed + (size_t)(cb * j->k_total * j->vb) * es;
    for (int n = 0; n < j->nchunks; n++) {
        const int c = lead < 0 ? n : n == 0 ? lead : n - 1 < lead ? n - 1 : n;
        const int64_t lo = s->chunk_lo[c], hi = s->chunk_hi[c];
        for (int q = 0; q < j->nclasses && hi > lo; q++) {
            if (!j->class_live[q * j->nchunks + c])
                continue;
            const conv_class *cl = &j->classes[q];
            const int64_t begin = rows * cl->col0 + lo * cl->ncols, end = rows * cl->col0 + hi * cl->ncols;
            run_blocks(j, s->cpix + begin, s->outs + begin, end - begin,
                       &j->class_pieces[q * j->npieces + j->chunks[c]], j->chunks[c + 1] - j->chunks[c], w,
                       c != lead);
        }
    }
}

/* Where output pixel p of the tile at (n, oh0) lands (see conv_job's placed fields). */
static char *placed_pixel(const conv_job *j, int64_t n, int64_t oh0, int64_t p)
{
    const int64_t oh = oh0 + p / j->out_w, ow = p % j->out_w;
    const int64_t at = (n * j->place_h + j->place_h0 + oh * j->place_sh) * j->place_w + j->place_w0 +
                       ow * j->place_sw;
    return j->dst + (size_t)(at * j->cout) * j->ty.esize;
}

static void forward_unit(const conv_job *j, conv_scratch *s, int64_t unit)
{
    const size_t es = j->ty.esize;
    const int64_t n = unit / j->tiles, oh0 = unit % j->tiles * j->tile_rows;
    const int64_t rows = min64(j->tile_rows, j->out_h - oh0), pixels = rows * j->out_w;
    build_canvas(j, n, oh0, rows, s->canvas);
    pixel_corners(j, s->canvas, rows, s->pix);
    order_pixels(j, s, rows);
    for (int c = 0; c < j->nchunks; c++)
        chunk_rows(j, c, oh0, rows, &s->chunk_lo[c], &s->chunk_hi[c]);
    const int lead = lead_chunk(j, s, rows);
    char *dst = j->dst + (size_t)((n * j->out_h + oh0) * j->out_w * j->cout) * es;
    for (int64_t cb = 0; cb < j->cblocks; cb++) {
        const int64_t ncols = min64(j->vb, j->cout - cb * j->vb);
        if (ncols == j->vb && !j->placed) { /* a whole block: straight into the output */
            forward_block(j, s, rows, lead, cb, dst + (size_t)(cb * j->vb) * es, j->cout);
            continue;
        }
        forward_block(j, s, rows, lead, cb, s->block, j->vb);
        for (int64_t p = 0; p < pixels; p++) {
            char *to = j->placed ? placed_pixel(j, n, oh0, p) : dst + (size_t)(p * j->cout) * es;
            memcpy(to + (size_t)(cb * j->vb) * es, s->block + (size_t)(p * j->vb) * es, (size_t)ncols * es);
        }
    }
}

/* Runs fn over `parts` parts on the engine's threads, each part taking items (units) one at
 * a time from the job's counter (next_item) until none is left. parts = the pool's size: the pool's
 * parallel_for counts the calling thread beside its workers, so an expensive kernel run by the
 * executor on the session's thread had 3 threads share the 2 cores of a 2-thread engine, each taking
 * 9 of the CNN layer's 100 images at a time (the last chunk leaving a thread idle). One item at a
 * time, a thread waits at most one item at the end. */
static void share_items(conv_job *j, int64_t items, double cost_per_item, void (*fn)(int64_t, int64_t, void *))
{
    atomic_store(&j->next_item, 0);
    j->items = items;
    const int64_t parts = max64(1, min64(items, tide_kernel_num_threads(j->ctx)));
    tide_kernel_parallel_for(j->ctx, parts, cost_per_item * (double)items / (double)parts, fn, j);
}

/* The next item of share_items for this thread, false when none is left (or the step was cancelled). */
static bool next_item(conv_job *j, int64_t *item)
{
    *item = atomic_fetch_add(&j->next_item, 1);
    return *item < j->items && !tide_kernel_cancelled(j->ctx);
}

/* share_items' part of a forward-like job: tiles ("units") of output rows of one image. */
static void forward_units(int64_t begin, int64_t end, void *arg)
{
    (void)begin;
    (void)end;
    conv_job *j = arg;
    conv_scratch s;
    if (!scratch_new(j, &s, j->tile_rows * j->out_w))
        return;
    for (int64_t u; next_item(j, &u);)
        forward_unit(j, &s, u);
    scratch_free(&s);
}

static double unit_cost(const conv_job *j)
{
    return 2.0 * (double)(j->tile_rows * j->out_w) * (double)(j->k_total * j->cout) * NS_PER_FLOP + 1000.0;
}

/* Runs a prepared forward-like job over every image into j->dst. */
static tide_status forward_run(conv_job *j)
{
    share_items(j, j->batch * j->tiles, unit_cost(j), forward_units);
    if (j->out_of_memory)
        return tide_kernel_error(j->ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the convolution's buffers");
    return tide_kernel_status(j->ctx);
}

/* ---------------------------------------------------------------- filter-gradient driver */

/* Packs dy of pixels [p0, p0 + count) of the tile starting at dy_tile into [cblocks][count][vb]. */
static void pack_dy(const conv_job *j, const char *dy_tile, int64_t p0, int64_t count, char *to)
{
    const size_t es = j->ty.esize, vb = (size_t)j->vb;
    memset(to, 0, (size_t)(j->cblocks * count) * vb * es);
    for (int64_t cb = 0; cb < j->cblocks; cb++) {
        const int64_t ncols = min64(j->vb, j->cout - cb * j->vb);
        for (int64_t p = 0; p < count; p++)
            memcpy(to + (size_t)((cb * count + p) * j->vb) * es,
                   dy_tile + (size_t)((p0 + p) * j->cout + cb * j->vb) * es, (size_t)ncols * es);
    }
}

/* The spans of the tile's pixels [p0, p1) in rows [lo, hi) and columns [c0, c1) (one span when the
 * columns are all of them); returns how many. */
static int pixel_spans(const conv_job *j, int64_t p0, int64_t p1, int64_t lo, int64_t hi, int64_t c0, int64_t c1,
                       conv_span *spans)
{
    int n = 0;
    const int64_t w = j->out_w;
    if (c0 == 0 && c1 == w) {
        lo = max64(lo, p0 / w);
        hi = min64(hi, (p1 + w - 1) / w);
        if (hi > lo)
            spans[n++] = (conv_span){max64(p0, lo * w), min64(p1, hi * w)};
        return n;
    }
    for (int64_t r = lo; r < hi && c1 > c0; r++) {
        const int64_t b = max64(p0, r * w + c0), e = min64(p1, r * w + c1);
        if (e > b)
            spans[n++] = (conv_span){b, e};
    }
    return n;
}

/* Adds the tile's contribution to the partial sums at acc ([cblocks][k_total][vb]). dy is read in
 * place when its rows hold whole channel blocks, else packed first (zeros past cout). Each block of
 * MR k sums over only the pixels it may read source data for: the rows of its filter row (live_rows)
 * and the columns of its filter columns (tap_cols). */
static void filter_unit(const conv_job *j, conv_scratch *s, int64_t unit, char *acc)
{
    const size_t es = j->ty.esize;
    const int64_t n = unit / j->tiles, oh0 = unit % j->tiles * j->tile_rows;
    const int64_t rows = min64(j->tile_rows, j->out_h - oh0), pixels = rows * j->out_w;
    const bool in_place = j->cout % j->vb == 0;
    build_canvas(j, n, oh0, rows, s->canvas);
    pixel_corners(j, s->canvas, rows, s->pix);
    const char *dy_tile = j->dy + (size_t)((n * j->out_h + oh0) * j->out_w * j->cout) * es;
    for (int64_t p0 = 0; p0 < pixels; p0 += TILE_PIXELS) {
        const int64_t count = min64(TILE_PIXELS, pixels - p0);
        if (!in_place)
            pack_dy(j, dy_tile, p0, count, s->block);
        for (int64_t cb = 0; cb < j->cblocks; cb++) {
            const char *dyb = in_place ? dy_tile + (size_t)(cb * j->vb) * es
                                       : s->block + (size_t)(cb * count * j->vb) * es;
            const int64_t dstride = in_place ? j->cout : j->vb, dy0 = in_place ? 0 : p0;
            char *accb = acc + (size_t)(cb * j->k_total * j->vb) * es;
            for (int i = 0; i < j->npieces; i++) {
                const conv_piece *pc = &j->pieces[i];
                int64_t lo, hi;
                live_rows(j, oh0, rows, pc->kh, &lo, &hi);
                for (int64_t r = 0; r < pc->len && hi > lo; r += MR) {
                    const int R = (int)min64(MR, pc->len - r);
                    const int64_t t0 = pc->kw + (pc->at + r) / j->cin, t1 = pc->kw + (pc->at + r + R - 1) / j->cin;
                    int64_t c0 = j->out_w, c1 = 0;
                    for (int64_t t = t0; t <= t1; t++)
                        if (j->tap_cols[2 * t + 1] > j->tap_cols[2 * t]) {
                            c0 = min64(c0, j->tap_cols[2 * t]);
                            c1 = max64(c1, j->tap_cols[2 * t + 1]);
                        }
                    const int nspans = pixel_spans(j, p0, p0 + count, lo, hi, c0, c1, s->spans);
                    if (nspans > 0)
                        j->filt(R, s->pix, s->spans, nspans, pc->off + r, dyb, dy0, dstride,
                                accb + (size_t)((pc->k0 + r) * j->vb) * es);
                }
            }
        }
    }
}

static size_t partial_bytes(const conv_job *j)
{
    return (size_t)(j->cblocks * j->k_total * j->vb) * j->ty.esize;
}

/* A thread's scratch for the filter-gradient slices (tide_conv_slices). */
static void *filter_scratch_new(void *arg)
{
    conv_job *j = arg;
    conv_scratch *s = malloc(sizeof *s);
    if (s && !scratch_new(j, s, TILE_PIXELS * j->cblocks)) {
        free(s);
        return NULL;
    }
    return s;
}

static void filter_scratch_free(void *arg, void *scratch)
{
    (void)arg;
    scratch_free(scratch);
    free(scratch);
}

/* Slice sl of a filter-gradient job: units [sl * units / slices, (sl + 1) * units / slices) summed
 * into its partial (in unit order, whichever thread takes it). */
static void filter_slice(void *arg, void *scratch, int64_t sl, char *acc)
{
    conv_job *j = arg;
    const int64_t units = j->batch * j->tiles;
    memset(acc, 0, partial_bytes(j));
    for (int64_t u = sl * units / j->slices; u < (sl + 1) * units / j->slices; u++)
        if (!tide_kernel_cancelled(j->ctx))
            filter_unit(j, scratch, u, acc);
}

/* Runs a prepared filter-gradient job into out [k_total][cout] (conv_slices.h: the partials of its
 * slices summed in slice order on the threads). */
static tide_status filter_run(conv_job *j, void *out)
{
    const int64_t units = j->batch * j->tiles;
    j->slices = max64(1, min64(units, MAX_SLICES));
    const tide_conv_slices sl = {.ctx = j->ctx, .slices = j->slices, .partial_bytes = partial_bytes(j),
                                 .ns_per_slice = unit_cost(j) * (double)units / (double)j->slices, .arg = j,
                                 .scratch_new = filter_scratch_new, .sum_slice = filter_slice,
                                 .scratch_free = filter_scratch_free};
    char *partials = tide_conv_slices_run(&sl);
    if (!partials)
        return tide_kernel_status(j->ctx);
    const tide_conv_partials p = {.ctx = j->ctx, .es = j->ty.esize, .slices = j->slices, .cblocks = j->cblocks,
                                  .k_total = j->k_total, .vb = j->vb, .cout = j->cout, .partials = partials,
                                  .out = out};
    tide_conv_partials_sum(&p);
    free(partials);
    return tide_kernel_status(j->ctx);
}

/* ---------------------------------------------------------------- filter packing */

/* Conv2D: packed[cb][k][v] = filter[k][cb*vb + v] (zero beyond cout). */
static char *pack_filter(const conv_job *j, const char *filter, const void *unused)
{
    (void)unused;
    const size_t es = j->ty.esize;
    char *packed = calloc(1, (size_t)(j->cblocks * j->k_total * j->vb) * es + 64);
    if (!packed)
        return NULL;
    for (int64_t cb = 0; cb < j->cblocks; cb++) {
        const int64_t ncols = min64(j->vb, j->cout - cb * j->vb);
        for (int64_t k = 0; k < j->k_total; k++)
            memcpy(packed + (size_t)((cb * j->k_total + k) * j->vb) * es,
                   filter + (size_t)(k * j->cout + cb * j->vb) * es, (size_t)ncols * es);
    }
    return packed;
}

/* One float32 or float64 (a memcpy of constant size, inlined: with a call per element, the packing
 * of the CNN layer's 51,200 filter elements, serial before the threads start, was ~0.5% of all of
 * bench_conv's perf samples). */
static inline void copy_element(char *to, const char *from, size_t es)
{
    if (es == sizeof(float))
        memcpy(to, from, sizeof(float));
    else
        memcpy(to, from, sizeof(double));
}

/* Conv2DBackpropInput: the filter [KH][KW][Cin][Cout] flipped in space and transposed in depth,
 * packed with the job's cin = Cout and cout = Cin: packed[cb][k'][v] for k' = (kh', kw', o) is
 * filter[KH-1-kh'][KW-1-kw'][cb*vb + v][o]. */
static char *pack_filter_transposed(const conv_job *j, const char *filter, const void *unused)
{
    (void)unused;
    const size_t es = j->ty.esize;
    const int64_t fin = j->cout, fout = j->cin; /* the filter's own depths */
    char *packed = calloc(1, (size_t)(j->cblocks * j->k_total * j->vb) * es + 64);
    if (!packed)
        return NULL;
    for (int64_t kh = 0; kh < j->kh; kh++)
        for (int64_t kw = 0; kw < j->kw; kw++) {
            const int64_t tap = (j->kh - 1 - kh) * j->kw + (j->kw - 1 - kw);
            for (int64_t o = 0; o < fout; o++) {
                const int64_t k = (kh * j->kw + kw) * fout + o;
                for (int64_t i = 0; i < fin; i++)
                    copy_element(packed + (size_t)(((i / j->vb) * j->k_total + k) * j->vb + i % j->vb) * es,
                                 filter + (size_t)((tap * fin + i) * fout + o) * es, es);
            }
        }
    return packed;
}

/* One phase of Conv2DBackpropInput with strides (see backprop_input_phases): the taps kh0 + sh * i,
 * kw0 + sw * i' of the filter [KH][KW][Cin][Cout] (given in full_kh x full_kw), flipped in space
 * and transposed in depth as pack_filter_transposed does for all taps. */
typedef struct conv_phase {
    int64_t full_kh, full_kw, kh0, kw0, sh, sw;
} conv_phase;

static char *pack_filter_phase(const conv_job *j, const char *filter, const void *phase)
{
    const conv_phase *ph = phase;
    const size_t es = j->ty.esize;
    const int64_t fin = j->cout, fout = j->cin;
    char *packed = calloc(1, (size_t)(j->cblocks * j->k_total * j->vb) * es + 64);
    if (!packed)
        return NULL;
    for (int64_t kh = 0; kh < j->kh; kh++)
        for (int64_t kw = 0; kw < j->kw; kw++) {
            const int64_t tap = (ph->kh0 + ph->sh * (j->kh - 1 - kh)) * ph->full_kw + ph->kw0 +
                                ph->sw * (j->kw - 1 - kw);
            for (int64_t o = 0; o < fout; o++) {
                const int64_t k = (kh * j->kw + kw) * fout + o;
                for (int64_t i = 0; i < fin; i++)
                    copy_element(packed + (size_t)(((i / j->vb) * j->k_total + k) * j->vb + i % j->vb) * es,
                                 filter + (size_t)((tap * fin + i) * fout + o) * es, es);
            }
        }
    return packed;
}

/* ---------------------------------------------------------------- kernels */

#define MIN_UNITS 8 /* split images into row tiles until the threads have this many units */

static tide_status conv_init(tide_kernel_ctx *ctx, void **state)
{
    return tide_conv_kernel_init(ctx, state, false);
}

static tide_status geometry_error(tide_kernel_ctx *ctx, const char *msg)
{
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
}

/* Conv2DBackpropInput (sizes_index 0) and Conv2DBackpropFilter (sizes_index 1): the dims of the
 * input and the filter (one of them given by its size input) and the geometry of the three inputs. */
static tide_status backprop_geometry(tide_kernel_ctx *ctx, int sizes_index, int64_t in[4], int64_t f[4],
                                     tide_conv_geometry *g)
{
    int64_t dy[4];
    tide_status st = sizes_index == 0 ? tide_conv_kernel_size_dims(ctx, 0, "input_sizes", in)
                                      : tide_conv_kernel_input_dims(ctx, 0, "input", in);
    if (st == TIDE_OK)
        st = sizes_index == 1 ? tide_conv_kernel_size_dims(ctx, 1, "filter_sizes", f)
                              : tide_conv_kernel_input_dims(ctx, 1, "filter", f);
    if (st == TIDE_OK)
        st = tide_conv_kernel_input_dims(ctx, 2, "out_backprop", dy);
    if (st != TIDE_OK)
        return st;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_conv_backprop_geometry(tide_kernel_state(ctx), in, f, dy, g, msg, sizeof msg))
        return geometry_error(ctx, msg);
    return TIDE_OK;
}

/* The job of Conv2D and Conv2DBackpropFilter: the input as the canvas source, window as given. */
static conv_job input_job(tide_kernel_ctx *ctx, const tide_conv_geometry *g, const int64_t filter[4],
                          const tide_tensor *input)
{
    return (conv_job){.ty = type_of(tide_tensor_dtype(input)), .ctx = ctx, .batch = g->batch,
                      .src = tide_tensor_data(input), .src_h = g->in_h, .src_w = g->in_w,
                      .cin = g->in_c, .up_h = 1, .up_w = 1, .off_h = g->pad_top,
                      .off_w = g->pad_left, .kh = filter[0], .kw = filter[1],
                      .stride_h = g->win.stride_h, .stride_w = g->win.stride_w,
                      .dil_h = g->win.dilation_h, .dil_w = g->win.dilation_w, .out_h = g->out_h,
                      .out_w = g->out_w, .cout = filter[3]};
}

/* Whether a stride-1 forward-like convolution (r x r window, cin -> cout channels) runs as a Winograd
 * convolution (conv_winograd.c) instead of the direct kernels: float32, no dilation, square 3x3 or
 * 5x5 windows, channel counts multiples of 16 and the AVX-512 kernels chosen (choose_isa, so
 * $TIDE_CONV_ISA=avx2 also means direct). $TIDE_CONV_ALGO=direct turns it off; "winograd" and "auto"
 * (the default) take it wherever it applies: it was faster on every shape measured
 * (docs/benchmarks.md). Read at every call, so a benchmark can alternate the two in one process. */
static bool use_winograd(tide_dtype dt, int64_t kh, int64_t kw, int64_t cin, int64_t cout, int64_t dil_h,
                         int64_t dil_w)
{
    const char *algo = getenv("TIDE_CONV_ALGO");
    if ((algo && strcmp(algo, "direct") == 0) || dt != TIDE_FLOAT32 || kh != kw || dil_h != 1 || dil_w != 1)
        return false;
    /* auto: 5x5 only. F(2x2, 5x5)'s float32 error is ~3x the direct kernels' (a tenth of the kernel
     * suite's tolerance); F(4x4, 3x3)'s is ~8x and went past that tolerance on a 40x40x16 -> 64
     * backprop-input (3.5e-4 against 2.3e-4), so 3x3 takes it only when asked ($TIDE_CONV_ALGO=winograd). */
    if (kh != 5 && !(algo && strcmp(algo, "winograd") == 0))
        return false;
    return choose_isa() == CONV_AVX512 && tide_conv_winograd_supported(kh, cin, cout);
}

/* Packs the filter for a prepared job; arg: what the packing needs beyond the job. */
typedef char *(*pack_fn)(const conv_job *j, const char *filter, const void *arg);

/* Runs a forward-like job (filter packed by pack) into out. */
static tide_status run_forward_job(conv_job *j, const tide_tensor *filter, tide_tensor *out, pack_fn pack,
                                   const void *pack_arg)
{
    char *packed = NULL;
    tide_status st = TIDE_OK;
    if (!job_prepare(j, MIN_UNITS, true) || !(packed = pack(j, tide_tensor_data(filter), pack_arg)))
        st = tide_kernel_error(j->ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the convolution's buffers");
    if (st == TIDE_OK) {
        j->packed = packed;
        j->dst = tide_tensor_data(out);
        st = forward_run(j);
    }
    free(packed);
    job_free(j);
    return st;
}

static tide_status conv2d_compute(tide_kernel_ctx *ctx)
{
    int64_t in[4], f[4];
    tide_status st = tide_conv_kernel_input_dims(ctx, 0, "input", in);
    if (st == TIDE_OK)
        st = tide_conv_kernel_input_dims(ctx, 1, "filter", f);
    if (st != TIDE_OK)
        return st;
    tide_conv_geometry g;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_conv_geometry_make(tide_kernel_state(ctx), in, f, &g, msg, sizeof msg))
        return geometry_error(ctx, msg);
    tide_shape shape = tide_shape_make(4, (const int64_t[4]){g.batch, g.out_h, g.out_w, g.out_c});
    const bool no_terms = f[0] * f[1] * f[2] == 0;
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, no_terms, &st);
    if (!out)
        return st;
    const tide_tensor *input = tide_kernel_input(ctx, 0);
    if (g.win.stride_h == 1 && g.win.stride_w == 1 &&
        use_winograd(tide_tensor_dtype(input), f[0], f[1], f[2], f[3], g.win.dilation_h, g.win.dilation_w)) {
        const tide_winograd_conv wc = {.ctx = ctx, .src = tide_tensor_data(input), .batch = g.batch,
                                       .src_h = g.in_h, .src_w = g.in_w, .cin = f[2], .off_h = g.pad_top,
                                       .off_w = g.pad_left, .r = f[0], .filter = tide_tensor_data(tide_kernel_input(ctx, 1)),
                                       .f_i = f[1] * f[2] * f[3], .f_j = f[2] * f[3], .f_c = f[3], .f_k = 1,
                                       .out_h = g.out_h, .out_w = g.out_w, .cout = f[3], .dst = tide_tensor_data(out)};
        return tide_conv_winograd_run(&wc);
    }
    conv_job j = input_job(ctx, &g, f, input);
    return run_forward_job(&j, tide_kernel_input(ctx, 1), out, pack_filter, NULL);
}

/* Conv2DBackpropInput with strides > 1 and no dilation, without multiplying the zeros of an
 * upsampled dy: input pixel ih = a + sh * t (phase a < sh) receives only the taps kh = kh0 + sh * m,
 * kh0 = (a + pad_top) mod sh, from dy row t + c - m, c = (a + pad_top - kh0) / sh. So each of the
 * sh x sw phases is a stride-1 convolution of dy itself with its M_h x M_w taps flipped (M_h =
 * ceil((KH - kh0) / sh)), placed at every sh-th row and sw-th column of the result: the same
 * multiplications as the forward pass, where the upsampled canvas spent sh * sw times as many. */
static tide_status backprop_input_phases(tide_kernel_ctx *ctx, const tide_conv_geometry *g, const int64_t f[4],
                                         tide_tensor *out)
{
    const tide_tensor *dyt = tide_kernel_input(ctx, 2);
    const int64_t sh = g->win.stride_h, sw = g->win.stride_w;
    tide_status st = TIDE_OK;
    if (f[0] < sh || f[1] < sw) /* some phases have no taps: their pixels stay zero */
        memset(tide_tensor_data(out), 0, (size_t)tide_tensor_num_elements(out) * tide_dtype_size(tide_tensor_dtype(out)));
    for (int64_t a = 0; a < sh && a < g->in_h && st == TIDE_OK; a++)
        for (int64_t b = 0; b < sw && b < g->in_w && st == TIDE_OK; b++) {
            const conv_phase ph = {.full_kh = f[0], .full_kw = f[1], .kh0 = (a + g->pad_top) % sh,
                                   .kw0 = (b + g->pad_left) % sw, .sh = sh, .sw = sw};
            if (ph.kh0 >= f[0] || ph.kw0 >= f[1])
                continue;
            const int64_t mh = (f[0] - ph.kh0 + sh - 1) / sh, mw = (f[1] - ph.kw0 + sw - 1) / sw;
            const int64_t ch = (a + g->pad_top - ph.kh0) / sh, cw = (b + g->pad_left - ph.kw0) / sw;
            conv_job j = {.ty = type_of(tide_tensor_dtype(dyt)), .ctx = ctx, .batch = g->batch,
                          .src = tide_tensor_data(dyt), .src_h = g->out_h, .src_w = g->out_w,
                          .cin = g->out_c, .up_h = 1, .up_w = 1, .off_h = mh - 1 - ch, .off_w = mw - 1 - cw,
                          .kh = mh, .kw = mw, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                          .out_h = (g->in_h - a + sh - 1) / sh, .out_w = (g->in_w - b + sw - 1) / sw,
                          .cout = g->in_c, .placed = true, .place_h = g->in_h, .place_w = g->in_w,
                          .place_h0 = a, .place_w0 = b, .place_sh = sh, .place_sw = sw};
            st = run_forward_job(&j, tide_kernel_input(ctx, 1), out, pack_filter_phase, &ph);
        }
    return st;
}

static tide_status conv2d_backprop_input_compute(tide_kernel_ctx *ctx)
{
    const tide_conv_window *w = tide_kernel_state(ctx);
    int64_t in[4], f[4];
    tide_conv_geometry g;
    tide_status st = backprop_geometry(ctx, 0, in, f, &g);
    if (st != TIDE_OK)
        return st;
    tide_shape shape = tide_shape_make(4, in);
    const bool no_terms = f[0] * f[1] * f[3] * g.out_h * g.out_w == 0;
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, no_terms, &st);
    if (!out)
        return st;
    const bool strided = w->stride_h > 1 || w->stride_w > 1;
    if (strided && w->dilation_h == 1 && w->dilation_w == 1 && !getenv("TIDE_CONV_UPSAMPLED"))
        return backprop_input_phases(ctx, &g, f, out);
    const tide_tensor *dyt = tide_kernel_input(ctx, 2);
    if (!strided && use_winograd(tide_tensor_dtype(dyt), f[0], f[1], f[3], f[2], w->dilation_h, w->dilation_w)) {
        /* The same stride-1 convolution of dy as below, the filter read flipped and transposed. */
        const float *filter = tide_tensor_data(tide_kernel_input(ctx, 1));
        const int64_t f_i = f[1] * f[2] * f[3], f_j = f[2] * f[3];
        const tide_winograd_conv wc = {.ctx = ctx, .src = tide_tensor_data(dyt), .batch = g.batch,
                                       .src_h = g.out_h, .src_w = g.out_w, .cin = f[3],
                                       .off_h = f[0] - 1 - g.pad_top, .off_w = f[1] - 1 - g.pad_left, .r = f[0],
                                       .filter = filter + (f[0] - 1) * f_i + (f[1] - 1) * f_j, .f_i = -f_i,
                                       .f_j = -f_j, .f_c = 1, .f_k = f[3], .out_h = g.in_h, .out_w = g.in_w,
                                       .cout = f[2], .dst = tide_tensor_data(out)};
        return tide_conv_winograd_run(&wc);
    }
    /* A stride-1 convolution over dy upsampled by the strides, flipped filter (file comment); with
     * dilations and strides both, the phases' taps are no arithmetic progressions, and this path
     * spends stride_h * stride_w times the multiplications. */
    conv_job j = {.ty = type_of(tide_tensor_dtype(dyt)), .ctx = ctx, .batch = g.batch,
                  .src = tide_tensor_data(dyt), .src_h = g.out_h, .src_w = g.out_w, .cin = g.out_c,
                  .up_h = w->stride_h, .up_w = w->stride_w,
                  .off_h = (f[0] - 1) * w->dilation_h - g.pad_top,
                  .off_w = (f[1] - 1) * w->dilation_w - g.pad_left, .kh = f[0], .kw = f[1],
                  .stride_h = 1, .stride_w = 1, .dil_h = w->dilation_h, .dil_w = w->dilation_w,
                  .out_h = g.in_h, .out_w = g.in_w, .cout = g.in_c};
    return run_forward_job(&j, tide_kernel_input(ctx, 1), out, pack_filter_transposed, NULL);
}

static tide_status conv2d_backprop_filter_compute(tide_kernel_ctx *ctx)
{
    int64_t in[4], f[4];
    tide_conv_geometry g;
    tide_status st = backprop_geometry(ctx, 1, in, f, &g);
    if (st != TIDE_OK)
        return st;
    tide_shape shape = tide_shape_make(4, f);
    const bool no_terms = g.batch * g.out_h * g.out_w == 0;
    tide_tensor *out = tide_cpu_alloc_result(ctx, &shape, no_terms, &st);
    if (!out)
        return st;
    const tide_tensor *input = tide_kernel_input(ctx, 0);
    const tide_conv_window *w = &g.win;
    const bool direct_asked = getenv("TIDE_CONV_FILTER_IN_PLACE") || getenv("TIDE_CONV_FILTER_SLICES");
    if (w->stride_h == 1 && w->stride_w == 1 && !direct_asked &&
        use_winograd(tide_tensor_dtype(input), f[0], f[1], f[2], f[3], w->dilation_h, w->dilation_w) &&
        tide_conv_winograd_filter_supported(f[0], f[2], f[3], g.batch * g.out_h * g.out_w)) {
        return tide_conv_winograd_filter_run(ctx, &g, f[0], tide_tensor_data(input),
                                             tide_tensor_data(tide_kernel_input(ctx, 2)), tide_tensor_data(out));
    }
    if (tide_conv_filter_direct_fits(&g, f))
        return tide_conv_filter_direct(ctx, &g, f, tide_tensor_dtype(input), choose_isa(), tide_tensor_data(input),
                                       tide_tensor_data(tide_kernel_input(ctx, 2)), tide_tensor_data(out));
    conv_job j = input_job(ctx, &g, f, input);
    j.dy = tide_tensor_data(tide_kernel_input(ctx, 2));
    if (!job_prepare(&j, MAX_SLICES, false)) {
        job_free(&j);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the convolution's buffers");
    }
    st = filter_run(&j, tide_tensor_data(out));
    job_free(&j);
    return st;
}

/* float16 and bfloat16: the float32 kernels over float32 copies, rounded once on store. */
static tide_status conv2d_any(tide_kernel_ctx *ctx) { return tide_kernel_compute_in_float32(ctx, conv2d_compute); }
static tide_status conv2d_backprop_input_any(tide_kernel_ctx *ctx)
{
    return tide_kernel_compute_in_float32(ctx, conv2d_backprop_input_compute);
}
static tide_status conv2d_backprop_filter_any(tide_kernel_ctx *ctx)
{
    return tide_kernel_compute_in_float32(ctx, conv2d_backprop_filter_compute);
}

static void register_conv_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"Conv2D", conv2d_any, conv_init, TIDE_KERNEL_EXPENSIVE},
        {"Conv2DBackpropInput", conv2d_backprop_input_any, conv_init, TIDE_KERNEL_EXPENSIVE},
        {"Conv2DBackpropFilter", conv2d_backprop_filter_any, conv_init, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_conv_kernels)
