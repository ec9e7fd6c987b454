/* winograd_tile.h — the input side of a 6x6 Winograd tile, shared by conv_winograd.c (Conv2D and
 * Conv2DBackpropInput) and conv_winograd_filter.c (Conv2DBackpropFilter): where a tile's pixels are,
 * and its two-dimensional input transform (each file brings its own one-dimensional B^T: the two use
 * different points). Internal to the CPU kernels; AVX-512 only (TIDE_ISA_DISPATCH_X86). */
#ifndef TIDE_CPU_WINOGRAD_TILE_H
#define TIDE_CPU_WINOGRAD_TILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_util.h"

#define WINO_ALPHA 6                             /* a tile's side */
#define WINO_POSITIONS (WINO_ALPHA * WINO_ALPHA) /* its positions */
#define WINO_LANES 16                            /* float32 per zmm */

/* px[i * 6 + j]: pixel (ih0 + i, iw0 + j) of image n of src [.][h][w][c], NULL outside the image. */
static inline void wino_tile_pixels(const float *src, int64_t h, int64_t w, int64_t c, int64_t n, int64_t ih0,
                                    int64_t iw0, const float **px)
{
    for (int i = 0; i < WINO_ALPHA; i++)
        for (int j = 0; j < WINO_ALPHA; j++) {
            const int64_t ih = ih0 + i, iw = iw0 + j;
            px[i * WINO_ALPHA + j] = ih >= 0 && ih < h && iw >= 0 && iw < w ? src + ((n * h + ih) * w + iw) * c : NULL;
        }
}

#if TIDE_ISA_DISPATCH_X86

typedef float wino_v16 __attribute__((vector_size(64), aligned(4), may_alias));

/* A one-dimensional transform of 6 values x[0], x[step], ... into o[0], o[ostep], ... */
typedef void (*wino_transform6)(const wino_v16 *x, int step, wino_v16 *o, int ostep);

/* out[e * ostride] = (B^T d B)[e] for the 36 positions e of one tile, 16 channels: d the pixels px at
 * channel cv (zeros for NULL), B^T the one-dimensional bt (inlined: a constant at every call). */
static inline __attribute__((always_inline)) TIDE_TARGET_AVX512 void
wino_input_tile(wino_transform6 bt, const float *const *px, int64_t cv, float *out, int64_t ostride)
{
    wino_v16 d[WINO_POSITIONS], s[WINO_POSITIONS];
    for (int e = 0; e < WINO_POSITIONS; e++)
        d[e] = px[e] ? *(const wino_v16 *)(px[e] + cv) : (wino_v16){0};
    for (int j = 0; j < WINO_ALPHA; j++) /* columns: s = B^T d */
        bt(d + j, WINO_ALPHA, s + j, WINO_ALPHA);
    for (int a = 0; a < WINO_ALPHA; a++) /* rows: d = s B */
        bt(s + a * WINO_ALPHA, 1, d + a * WINO_ALPHA, 1);
    for (int e = 0; e < WINO_POSITIONS; e++)
        *(wino_v16 *)(out + e * ostride) = d[e];
}

/* out[r][0:16 NV] (+)= sum over s < steps of a[r * a_row + s * a_step] * b[s * b_step + 0:16 NV] for the
 * rows r < R (R NV <= 48; a compile-time R and NV once inlined): the register-blocked products of both
 * Winograd files (R NV accumulators; per step NV vector loads of b and R broadcasts of a feed R NV FMAs).
 * The sums start at zero; add: they are added to out instead of stored. Rows of out ldo apart. */
static inline __attribute__((always_inline)) TIDE_TARGET_AVX512 void
wino_products(const int R, const int NV, int64_t steps, const float *a, int64_t a_row, int64_t a_step, const float *b,
              int64_t b_step, float *out, int64_t ldo, bool add)
{
    __m512 acc[12][4];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++)
            acc[r][q] = _mm512_setzero_ps();
    for (int64_t s = 0; s < steps; s++, a += a_step, b += b_step) {
        __m512 v[4];
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++)
            v[q] = _mm512_loadu_ps(b + q * WINO_LANES);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            const __m512 x = _mm512_set1_ps(a[r * a_row]);
#pragma GCC unroll 4
            for (int q = 0; q < NV; q++)
                acc[r][q] = _mm512_fmadd_ps(x, v[q], acc[r][q]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++)
            _mm512_storeu_ps(out + r * ldo + q * WINO_LANES,
                             add ? _mm512_add_ps(acc[r][q], _mm512_loadu_ps(out + r * ldo + q * WINO_LANES)) : acc[r][q]);
}

#endif

#endif
