/* conv_winograd.c — Winograd minimal-filtering convolution (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2015) for float32 NHWC on AVX-512: the stride-1 forward-like
 * convolutions of conv.c (Conv2D, and Conv2DBackpropInput as a convolution with the flipped filter)
 * with 3x3 and 5x5 windows, when tide_conv_winograd_supported says so (see conv.c for the choice).
 *
 * Why: the direct kernels run near the FMA peak already (conv.c); F(m x m, r x r) computes an m x m
 * block of outputs from a 6 x 6 block of input (ALPHA = m + r - 1 = 6 for both forms here) with 36
 * multiplications per (input channel, output channel) instead of m^2 r^2: F(2x2, 5x5) 9 per output
 * instead of 25 (2.8x fewer), F(4x4, 3x3) 2.25 instead of 9 (4x fewer). With
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A    (element-wise product (.), summed over input channels)
 * the work per block of tiles is:
 *   1. input transform: each 6x6 input tile d (zeros outside the image), 16 channels per vector:
 *      V[t][e][c] = (B^T d B)[e] for the 36 positions e (a tile's 36 rows together);
 *   2. 36 matrix products M[:][e] = V[:][e] U[e] (tiles x cin times cin x cout), with U[e][c][k] = (G g G^T)[e]
 *      the filter transformed once per call: a 6-tile x 64-channel micro-kernel (24 zmm
 *      accumulators; per input channel four vector loads and six broadcasts), 12 x 32 for 32 channels;
 *   3. output transform: Y = A^T M A per tile and 16 output channels, stored where inside the output.
 * A block's V and M (~384 KiB) stay in L2; U (36 cin cout floats, 288 KiB for 32 -> 64) is shared.
 * The transforms' matrices come from the Cook-Toom construction with points 0, 1, -1, 2, -2 and
 * infinity (both forms share B^T); they were generated and checked in exact rational arithmetic.
 *
 * Numerics: the transforms add and scale values by up to 8, so float32 rounding grows beyond the
 * direct sum's: for the CNN's 5x5x32 layer with values in [-1, 1] the largest difference from a
 * double-precision reference measured about 4x the direct kernel's (tests/kernels/test_conv.c checks
 * both against the same tolerance, and the Winograd path against the direct one on random shapes).
 * Every output element is computed by the same operations whatever the thread split: deterministic. */
#include "conv_winograd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_util.h"
#include "winograd_tile.h"

#define ALPHA WINO_ALPHA             /* side of a transformed tile: m + r - 1 for both forms */
#define POSITIONS WINO_POSITIONS     /* the 36 element-wise products per tile */
#define ROWS 24                      /* block sizes are multiples of every micro-kernel's rows */
#define LANES WINO_LANES
#define BLOCK_BYTES (384 * 1024)     /* V and M of one block of tiles: stay in L2 */
#define MAX_BLOCK_TILES 120

/* G of both forms (ALPHA x r; F(4, 3)'s in the first 3 columns). */
static const float G_F2R5[ALPHA][5] = {
    {1.0f / 4, 0, 0, 0, 0},
    {-1.0f / 6, -1.0f / 6, -1.0f / 6, -1.0f / 6, -1.0f / 6},
    {-1.0f / 6, 1.0f / 6, -1.0f / 6, 1.0f / 6, -1.0f / 6},
    {1.0f / 24, 1.0f / 12, 1.0f / 6, 1.0f / 3, 2.0f / 3},
    {1.0f / 24, -1.0f / 12, 1.0f / 6, -1.0f / 3, 2.0f / 3},
    {0, 0, 0, 0, 1},
};
static const float G_F4R3[ALPHA][5] = {
    {1.0f / 4, 0, 0},
    {-1.0f / 6, -1.0f / 6, -1.0f / 6},
    {-1.0f / 6, 1.0f / 6, -1.0f / 6},
    {1.0f / 24, 1.0f / 12, 1.0f / 6},
    {1.0f / 24, -1.0f / 12, 1.0f / 6},
    {0, 0, 1},
};

bool tide_conv_winograd_supported(int64_t r, int64_t cin, int64_t cout)
{
#if TIDE_ISA_DISPATCH_X86
    return (r == 3 || r == 5) && cin > 0 && cout > 0 && cin % LANES == 0 && cout % LANES == 0 &&
           tide_cpu_isa_active() == TIDE_ISA_AVX512;
#else
    (void)r, (void)cin, (void)cout;
    return false;
#endif
}

#if TIDE_ISA_DISPATCH_X86

#define AVX512 TIDE_TARGET_AVX512
#define INLINE static inline __attribute__((always_inline))

typedef wino_v16 v16;

/* One call's shared state: the transformed filter and the tiles the threads take block by block. */
typedef struct wino_run {
    const tide_winograd_conv *c;
    int m;                     /* outputs per tile side: 2 (r = 5) or 4 (r = 3) */
    const float (*g)[5];       /* G */
    float *u;                  /* U[e][c][k] */
    int64_t tiles_h, tiles_w, tiles, block_tiles, blocks;
    atomic_llong next;         /* next block (then next input channel, for the filter transform) */
    atomic_bool out_of_memory;
} wino_run;

/* ---------------------------------------------------------------- filter transform */

/* U[e][ci][k] for the input channels [c0, c1): U = G g G^T per (ci, k), 16 output channels at a time. */
static AVX512 void transform_filter(const wino_run *w, int64_t c0, int64_t c1, float *g, float *t)
{
    const tide_winograd_conv *c = w->c;
    const int64_t r = c->r, K = c->cout, C = c->cin;
    for (int64_t ci = c0; ci < c1; ci++) {
        for (int64_t i = 0; i < r; i++) /* g[i][j][k]: this channel's taps, gathered */
            for (int64_t j = 0; j < r; j++)
                for (int64_t k = 0; k < K; k++)
                    g[(i * r + j) * K + k] = c->filter[i * c->f_i + j * c->f_j + ci * c->f_c + k * c->f_k];
        for (int a = 0; a < ALPHA; a++) /* t[a][j][k] = sum_i G[a][i] g[i][j][k] */
            for (int64_t j = 0; j < r; j++)
                for (int64_t k = 0; k < K; k += LANES) {
                    v16 s = {0};
                    for (int64_t i = 0; i < r; i++)
                        s += w->g[a][i] * *(const v16 *)(g + (i * r + j) * K + k);
                    *(v16 *)(t + (a * r + j) * K + k) = s;
                }
        for (int a = 0; a < ALPHA; a++) /* U[a][b] = sum_j t[a][j] G[b][j] */
            for (int b = 0; b < ALPHA; b++)
                for (int64_t k = 0; k < K; k += LANES) {
                    v16 s = {0};
                    for (int64_t j = 0; j < r; j++)
                        s += w->g[b][j] * *(const v16 *)(t + (a * r + j) * K + k);
                    *(v16 *)(w->u + ((int64_t)(a * ALPHA + b) * C + ci) * K + k) = s;
                }
    }
}

static void filter_part(int64_t begin, int64_t end, void *arg)
{
    (void)begin, (void)end;
    wino_run *w = arg;
    const int64_t r = w->c->r, K = w->c->cout;
    float *g = malloc(sizeof(float) * (size_t)(r * r * K)), *t = malloc(sizeof(float) * (size_t)(ALPHA * r * K));
    for (int64_t ci; g && t && (ci = atomic_fetch_add(&w->next, 1)) < w->c->cin;)
        transform_filter(w, ci, ci + 1, g, t);
    if (!g || !t)
        atomic_store(&w->out_of_memory, true);
    free(g);
    free(t);
}

/* ---------------------------------------------------------------- input transform */

/* B^T x for one column or row of 6 (the same B^T for both forms). */
INLINE AVX512 void bt6(const v16 *x, int step, v16 *o, int ostep)
{
    const v16 d0 = x[0], d1 = x[step], d2 = x[2 * step], d3 = x[3 * step], d4 = x[4 * step], d5 = x[5 * step];
    o[0] = 4.0f * d0 - 5.0f * d2 + d4;
    o[ostep] = d3 + d4 - 4.0f * (d1 + d2);
    o[2 * ostep] = d4 - d3 + 4.0f * (d1 - d2);
    o[3 * ostep] = d4 - d2 + 2.0f * (d3 - d1);
    o[4 * ostep] = d4 - d2 + 2.0f * (d1 - d3);
    o[5 * ostep] = 4.0f * d1 - 5.0f * d3 + d5;
}

/* The tile's source pixels, NULL outside the image. */
static void tile_pixels(const wino_run *w, int64_t tile, const float **px)
{
    const tide_winograd_conv *c = w->c;
    const int64_t per_image = w->tiles_h * w->tiles_w, n = tile / per_image, ty = tile % per_image / w->tiles_w;
    const int64_t tx = tile % w->tiles_w;
    wino_tile_pixels(c->src, c->src_h, c->src_w, c->cin, n, ty * w->m - c->off_h, tx * w->m - c->off_w, px);
}

/* V[t][e][c] = (B^T d B)[e] for the block's tiles t < count (tile0 + t overall). */
static AVX512 void transform_inputs(const wino_run *w, int64_t tile0, int64_t count, float *v)
{
    const int64_t C = w->c->cin;
    for (int64_t t = 0; t < count; t++) {
        const float *px[POSITIONS];
        tile_pixels(w, tile0 + t, px);
        for (int64_t cv = 0; cv < C; cv += LANES)
            wino_input_tile(bt6, px, cv, v + t * POSITIONS * C + cv, C);
    }
}

/* ---------------------------------------------------------------- the 36 products */

/* out[R rows][16 NV] = a[R rows][C] u[C][16 NV]; rows of a, u, out lda, K, ldo apart (winograd_tile.h). */
INLINE AVX512 void product_tile(const int R, const int NV, int64_t C, int64_t K, const float *a, int64_t lda,
                                const float *u, float *out, int64_t ldo)
{
    wino_products(R, NV, C, a, lda, 1, u, K, out, ldo, false);
}

/* M[t][e] = V[t][e] U[e] for the block's first `rows` tiles t (a multiple of ROWS; 6, 8 or 12 per call:
 * 24 accumulators for 64, 48 or 32 output channels). */
static AVX512 void multiply(const wino_run *w, const float *v, float *m, int64_t rows)
{
    const int64_t C = w->c->cin, K = w->c->cout, lda = POSITIONS * C, ldo = POSITIONS * K;
    for (int e = 0; e < POSITIONS; e++) {
        const float *ve = v + (int64_t)e * C, *ue = w->u + (int64_t)e * C * K;
        float *me = m + (int64_t)e * K;
        for (int64_t k0 = 0; k0 < K; k0 += 4 * LANES) {
            const int64_t nv = K - k0 >= 4 * LANES ? 4 : (K - k0) / LANES, r = nv == 4 ? 6 : nv == 3 ? 8 : 12;
            for (int64_t t = 0; t < rows; t += r) {
                const float *a = ve + t * lda, *u = ue + k0;
                float *out = me + t * ldo + k0;
                switch (nv) {
                case 4: product_tile(6, 4, C, K, a, lda, u, out, ldo); break;
                case 3: product_tile(8, 3, C, K, a, lda, u, out, ldo); break;
                case 2: product_tile(12, 2, C, K, a, lda, u, out, ldo); break;
                default: product_tile(12, 1, C, K, a, lda, u, out, ldo); break;
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- output transform */

/* A^T x for one column or row of 6: the form's m outputs. */
INLINE AVX512 void at6(const int m, const v16 *x, int step, v16 *o, int ostep)
{
    const v16 p0 = x[0], p1 = x[step], p2 = x[2 * step], p3 = x[3 * step], p4 = x[4 * step], p5 = x[5 * step];
    const v16 a = p1 + p2, b = p1 - p2, c = p3 + p4, d = p3 - p4;
    o[0] = p0 + a + c;
    if (m == 2) {
        o[ostep] = b + 2.0f * d + p5;
    } else {
        o[ostep] = b + 2.0f * d;
        o[2 * ostep] = a + 4.0f * c;
        o[3 * ostep] = b + 8.0f * d + p5;
    }
}

/* The block's outputs: Y = A^T M A per tile t < count and 16 output channels, stored inside the output. */
INLINE AVX512 void transform_outputs_m(const int m, const wino_run *w, int64_t tile0, int64_t count,
                                       const float *mm)
{
    const tide_winograd_conv *c = w->c;
    const int64_t K = c->cout, per_image = w->tiles_h * w->tiles_w;
    for (int64_t t = 0; t < count; t++) {
        const int64_t tile = tile0 + t, n = tile / per_image, ty = tile % per_image / w->tiles_w;
        const int64_t oh0 = ty * m, ow0 = tile % w->tiles_w * m;
        const int64_t rows = c->out_h - oh0 < m ? c->out_h - oh0 : m, cols = c->out_w - ow0 < m ? c->out_w - ow0 : m;
        float *y0 = c->dst + ((n * c->out_h + oh0) * c->out_w + ow0) * K;
        for (int64_t kv = 0; kv < K; kv += LANES) {
            v16 p[POSITIONS], s[4 * ALPHA], y[16];
            for (int e = 0; e < POSITIONS; e++)
                p[e] = *(const v16 *)(mm + (t * POSITIONS + e) * K + kv);
            for (int j = 0; j < ALPHA; j++) /* columns: s[i][j] = (A^T p)[i][j] */
                at6(m, p + j, ALPHA, s + j, ALPHA);
            for (int i = 0; i < m; i++) /* rows: y[i][:] = s[i][:] A */
                at6(m, s + i * ALPHA, 1, y + i * m, 1);
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++)
                    *(v16 *)(y0 + (i * c->out_w + j) * K + kv) = y[i * m + j];
        }
    }
}

static AVX512 void transform_outputs(const wino_run *w, int64_t tile0, int64_t count, const float *mm)
{
    if (w->m == 2)
        transform_outputs_m(2, w, tile0, count, mm);
    else
        transform_outputs_m(4, w, tile0, count, mm);
}

/* ---------------------------------------------------------------- driver */

/* A part of the parallel run: blocks of tiles taken one at a time until none is left. */
static void tiles_part(int64_t begin, int64_t end, void *arg)
{
    (void)begin, (void)end;
    wino_run *w = arg;
    const tide_winograd_conv *c = w->c;
    const size_t vbytes = sizeof(float) * (size_t)(POSITIONS * w->block_tiles * c->cin);
    const size_t mbytes = sizeof(float) * (size_t)(POSITIONS * w->block_tiles * c->cout);
    float *v = calloc(1, vbytes), *m = calloc(1, mbytes);
    for (int64_t b; v && m && (b = atomic_fetch_add(&w->next, 1)) < w->blocks && !tide_kernel_cancelled(c->ctx);) {
        const int64_t tile0 = b * w->block_tiles;
        const int64_t count = w->tiles - tile0 < w->block_tiles ? w->tiles - tile0 : w->block_tiles;
        transform_inputs(w, tile0, count, v);
        multiply(w, v, m, (count + ROWS - 1) / ROWS * ROWS);
        transform_outputs(w, tile0, count, m);
    }
    if (!v || !m)
        atomic_store(&w->out_of_memory, true);
    free(v);
    free(m);
}

/* Runs fn over min(items, threads) parts of the engine's pool, the items taken from w->next. */
static void share(wino_run *w, int64_t items, double ns_per_item, void (*fn)(int64_t, int64_t, void *))
{
    atomic_store(&w->next, 0);
    int64_t parts = tide_kernel_num_threads(w->c->ctx);
    parts = parts < items ? parts : items;
    parts = parts > 1 ? parts : 1;
    tide_kernel_parallel_for(w->c->ctx, parts, ns_per_item * (double)items / (double)parts, fn, w);
}

tide_status tide_conv_winograd_run(const tide_winograd_conv *c)
{
    wino_run w = {.c = c, .m = c->r == 5 ? 2 : 4, .g = c->r == 5 ? G_F2R5 : G_F4R3};
    w.tiles_h = (c->out_h + w.m - 1) / w.m;
    w.tiles_w = (c->out_w + w.m - 1) / w.m;
    w.tiles = c->batch * w.tiles_h * w.tiles_w;
    const int64_t per_tile = (int64_t)sizeof(float) * POSITIONS * (c->cin + c->cout);
    w.block_tiles = BLOCK_BYTES / per_tile / ROWS * ROWS;
    w.block_tiles = w.block_tiles < ROWS ? ROWS : w.block_tiles > MAX_BLOCK_TILES ? MAX_BLOCK_TILES : w.block_tiles;
    /* Small batches: blocks small enough that every thread gets several (the last one waits less). */
    const int64_t threads = tide_kernel_num_threads(c->ctx);
    while (w.block_tiles > ROWS && (w.tiles + w.block_tiles - 1) / w.block_tiles < 4 * threads)
        w.block_tiles -= ROWS;
    w.blocks = (w.tiles + w.block_tiles - 1) / w.block_tiles;
    atomic_init(&w.next, 0);
    atomic_init(&w.out_of_memory, false);
    if (w.tiles == 0)
        return TIDE_OK;
    w.u = malloc(sizeof(float) * (size_t)(POSITIONS * c->cin * c->cout));
    if (w.u) {
        share(&w, c->cin, 0.5 * (double)(c->r * c->r + ALPHA * c->r) * (double)(ALPHA * c->cout), filter_part);
        if (!atomic_load(&w.out_of_memory))
            share(&w, w.blocks, 0.1 * (double)(w.block_tiles * POSITIONS * c->cin * c->cout) / 16.0, tiles_part);
    }
    free(w.u);
    if (!w.u || atomic_load(&w.out_of_memory))
        return tide_kernel_error(c->ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the Winograd convolution's buffers");
    return tide_kernel_status(c->ctx);
}

#else

tide_status tide_conv_winograd_run(const tide_winograd_conv *c)
{
    return tide_kernel_error(c->ctx, TIDE_UNIMPLEMENTED, "the Winograd convolution needs x86-64 with AVX-512");
}

#endif
