/* conv_winograd_filter.c — Conv2DBackpropFilter as a Winograd convolution for float32 NHWC on
 * AVX-512: the stride-1, undilated 5x5 (and, when asked, 3x3) filter gradients conv.c dispatches here
 * (see conv.c's use_winograd for the choice; conv_filter.c and conv.c's canvas method do the rest).
 *
 * Why: the direct method (conv_filter.c) runs near the FMA peak already, so only fewer multiplications
 * can make it faster. The filter gradient
 *   dW[u, v, c, k] = sum over n, i, j of x[n, i + u - off_h, j + v - off_w, c] * dy[n, i, j, k]
 * cut along dy into m x m blocks ("tiles", m = 2 for r = 5, 4 for r = 3) is a sum over tiles of
 * correlations of a 6 x 6 block of x (ALPHA = m + r - 1) with an m x m "filter" of dy giving an r x r
 * result: Winograd F(r x r, m x m), the transposed form of the forward F(m x m, r x r) with the same six
 * points (winograd_transforms.h):
 *   dW = G^T [ sum over tiles of (A dy A^T) (.) (B^T x B) ] G      (element-wise product (.))
 * so per tile and (c, k) pair 36 multiplications instead of m^2 r^2 (F(5x5, 2x2): 100; F(3x3, 4x4):
 * 144), and the sum over tiles moves inside the transforms: for each of the 36 positions e,
 *   M[e][c][k] = sum over tiles t of X~[e][t][c] * DY~[e][t][k]       (a GEMM with K = tiles)
 * The work per block of tiles (sized so the block's X~ and DY~ stay in L2):
 *   1. input transform: X~[e][t][c] = (B^T d B)[e] for each tile's 6 x 6 pixels d (zeros outside the
 *      image), 16 channels per vector;
 *   2. gradient transform: DY~[e][t][k] = (A g A^T)[e] for each tile's m x m block g of dy (zeros past
 *      its edge);
 *   3. 36 products M[e] += X~[e]^T DY~[e]: a micro-kernel keeping R <= 6 input channels x 64 output
 *      channels (24 zmm) of M[e] in registers over the block's tiles, per tile four vector loads of DY~
 *      and R broadcasts of X~.
 * The tiles (in image order) are cut into at most MAX_SLICES slices by the problem's size alone; each
 * slice sums into its own partial M (36 cin cout floats), the threads taking slices one at a time from
 * a shared counter; then the partials are added in slice order and transformed, dW = G^T M G per
 * (c, 16 k), split over the threads by input channel. So the result depends neither on the number nor
 * on the timing of the threads (deterministic, as the direct kernels are).
 *
 * Numerics: the transforms scale by up to 8 and G^T by fractions, so float32 rounding grows beyond the
 * direct sum's (tests/kernels/test_conv.c checks both against the double-precision reference and
 * against each other; docs/benchmarks.md gives the error on the CNN's layer). */
#include <stdlib.h>
#include <string.h>

#include "conv_slices.h"
#include "conv_winograd.h"
#include "cpu_util.h"
#include "winograd_tile.h"

#define ALPHA WINO_ALPHA              /* side of a transformed tile: m + r - 1 for both forms */
#define POSITIONS WINO_POSITIONS      /* the 36 element-wise products per tile */
#define LANES WINO_LANES
#define MR 6                          /* input channels per micro-kernel call at most */
#define BLOCK_BYTES (384 * 1024)      /* X~ and DY~ of one block of tiles: stay in L2 */
#define MIN_BLOCK_TILES 8
#define MAX_BLOCK_TILES 64
#define MAX_SLICES 8                  /* partial sums */
#define MIN_SLICE_TILES 64            /* smaller batches: fewer slices */
#define PARTIALS_BYTES (64ll << 20)   /* every slice's partial together at most */
#define PREFETCH_TILES 4              /* the transforms ask for the data of the tile this far ahead */
#define MIN_TERMS 512                 /* fewer pixels of dy: the direct method (see the file comment) */

bool tide_conv_winograd_filter_supported(int64_t r, int64_t cin, int64_t cout, int64_t terms)
{
    return terms >= MIN_TERMS && tide_conv_winograd_supported(r, cin, cout) &&
           (int64_t)sizeof(float) * POSITIONS * cin * cout <= PARTIALS_BYTES / MAX_SLICES;
}

#if TIDE_ISA_DISPATCH_X86

#define AVX512 TIDE_TARGET_AVX512
#define INLINE static inline __attribute__((always_inline))

typedef wino_v16 v16;

/* The finite points besides infinity (A's rows 0-4 evaluate a polynomial at them). */
static const float POINTS[ALPHA - 1] = {0, 1, -1, 2, -0.5f};

/* G (ALPHA x r) for these points, of both forms (generated and checked in exact rational arithmetic). */
static const float G_R5[ALPHA][5] = {
    {1, 0, 0, 0, 0},
    {-1.0f / 3, -1.0f / 3, -1.0f / 3, -1.0f / 3, -1.0f / 3},
    {1.0f / 3, -1.0f / 3, 1.0f / 3, -1.0f / 3, 1.0f / 3},
    {1.0f / 15, 2.0f / 15, 4.0f / 15, 8.0f / 15, 16.0f / 15},
    {-16.0f / 15, 8.0f / 15, -4.0f / 15, 2.0f / 15, -1.0f / 15},
    {0, 0, 0, 0, 1},
};
static const float G_R3[ALPHA][5] = {
    {1, 0, 0},
    {-1.0f / 3, -1.0f / 3, -1.0f / 3},
    {1.0f / 3, -1.0f / 3, 1.0f / 3},
    {1.0f / 15, 2.0f / 15, 4.0f / 15},
    {-16.0f / 15, 8.0f / 15, -4.0f / 15},
    {0, 0, 1},
};

/* B^T x for one column or row of 6 (every coefficient exact in binary). */
INLINE AVX512 void bt6(const v16 *x, int step, v16 *o, int ostep)
{
    const v16 d0 = x[0], d1 = x[step], d2 = x[2 * step], d3 = x[3 * step], d4 = x[4 * step], d5 = x[5 * step];
    o[0] = d0 + d4 + 1.5f * (d1 - d3) - 2.0f * d2;
    o[ostep] = d4 - d1 - 2.5f * d2 - 0.5f * d3;
    o[2 * ostep] = d4 + d1 + 0.5f * d2 - 2.5f * d3;
    o[3 * ostep] = d4 - d2 + 0.5f * (d3 - d1);
    o[4 * ostep] = d4 - d2 + 2.0f * (d1 - d3);
    o[5 * ostep] = d5 + d1 + 1.5f * (d2 - d4) - 2.0f * d3;
}

/* A x for one column or row of m: the polynomial with coefficients x[0], x[step], ... x[(m - 1) step]
 * at the finite points, then its leading coefficient (the point at infinity). */
INLINE AVX512 void a6(const int m, const v16 *x, int step, v16 *o, int ostep)
{
    o[0] = x[0];
#pragma GCC unroll 4
    for (int e = 1; e < ALPHA - 1; e++) {
        v16 y = x[(m - 1) * step];
#pragma GCC unroll 4
        for (int i = m - 2; i >= 0; i--)
            y = y * POINTS[e] + x[i * step];
        o[e * ostep] = y;
    }
    o[5 * ostep] = x[(m - 1) * step];
}

/* The op's arguments: x [batch][in_h][in_w][cin], dy [batch][out_h][out_w][cout], dw [r][r][cin][cout]. */
typedef struct wgrad_args {
    tide_kernel_ctx *ctx;
    const float *x, *dy;
    float *dw;
    int64_t batch, in_h, in_w, cin, out_h, out_w, cout;
    int64_t off_h, off_w, r;
} wgrad_args;

/* One call's shared state. */
typedef struct wgrad_run {
    const wgrad_args *g;
    int m;                  /* dy rows and columns per tile: 2 (r = 5) or 4 (r = 3) */
    const float (*gm)[5];   /* G */
    int64_t tiles_h, tiles_w, tiles, block_tiles, slices;
    float *partials;        /* [slices][POSITIONS][cin][cout] */
} wgrad_run;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Tile t: image *n, tile row *ty and column *tx. */
static void tile_place(const wgrad_run *w, int64_t t, int64_t *n, int64_t *ty, int64_t *tx)
{
    const int64_t per_image = w->tiles_h * w->tiles_w;
    *n = t / per_image;
    *ty = t % per_image / w->tiles_w;
    *tx = t % w->tiles_w;
}

/* ---------------------------------------------------------------- transforms */

/* Asks for the bytes [p, p + bytes) in the cache ahead of their use (dy and x come from memory, and a
 * tile's few loads give the hardware prefetchers too little to go on: without this the transforms
 * waited on them most of their time, perf). */
static inline void prefetch_bytes(const float *p, int64_t bytes)
{
    for (int64_t b = 0; b < bytes; b += 64)
        __builtin_prefetch((const char *)p + b, 0, 3);
}

/* Tile t's dy (the m x m block) and the x pixels it reads beyond tile t - 1's (its last m columns). */
static void prefetch_tile(const wgrad_run *w, int64_t t)
{
    const wgrad_args *g = w->g;
    if (t >= w->tiles)
        return;
    int64_t n, ty, tx;
    tile_place(w, t, &n, &ty, &tx);
    const int64_t m = w->m, oh0 = ty * m, ow0 = tx * m, cols = min64(m, g->out_w - ow0);
    for (int64_t i = oh0; i < oh0 + m && i < g->out_h; i++)
        prefetch_bytes(g->dy + ((n * g->out_h + i) * g->out_w + ow0) * g->cout, cols * g->cout * 4);
    const int64_t ih0 = ty * m - g->off_h, iw0 = tx * m - g->off_w + ALPHA - m;
    const int64_t c0 = iw0 < 0 ? 0 : iw0, c1 = min64(iw0 + m, g->in_w);
    for (int64_t i = ih0 < 0 ? 0 : ih0; i < ih0 + ALPHA && i < g->in_h && c1 > c0; i++)
        prefetch_bytes(g->x + ((n * g->in_h + i) * g->in_w + c0) * g->cin, (c1 - c0) * g->cin * 4);
}


/* X~[e][t][c] = (B^T d B)[e] for the block's tiles t < count (tile0 + t overall), rows of X~ cin apart,
 * positions block_tiles rows apart. */
static AVX512 void transform_inputs(const wgrad_run *w, int64_t tile0, int64_t count, float *xt)
{
    const wgrad_args *g = w->g;
    const int64_t C = g->cin, stride_e = w->block_tiles * C;
    for (int64_t t = 0; t < count; t++) {
        int64_t n, ty, tx;
        prefetch_tile(w, tile0 + t + PREFETCH_TILES);
        tile_place(w, tile0 + t, &n, &ty, &tx);
        const float *px[POSITIONS];
        wino_tile_pixels(g->x, g->in_h, g->in_w, C, n, ty * w->m - g->off_h, tx * w->m - g->off_w, px);
        for (int64_t cv = 0; cv < C; cv += LANES)
            wino_input_tile(bt6, px, cv, xt + t * C + cv, stride_e);
    }
}

/* DY~[e][t][k] = (A g A^T)[e] for the block's tiles, g the tile's m x m block of dy (zeros past dy's
 * edge); rows of DY~ cout apart, positions block_tiles rows apart. */
INLINE AVX512 void transform_grads_m(const int m, const wgrad_run *w, int64_t tile0, int64_t count, float *dt)
{
    const wgrad_args *g = w->g;
    const int64_t K = g->cout, stride_e = w->block_tiles * K;
    for (int64_t t = 0; t < count; t++) {
        int64_t n, ty, tx;
        tile_place(w, tile0 + t, &n, &ty, &tx);
        const int64_t oh0 = ty * m, ow0 = tx * m;
        const int64_t rows = min64(m, g->out_h - oh0), cols = min64(m, g->out_w - ow0);
        const float *y0 = g->dy + ((n * g->out_h + oh0) * g->out_w + ow0) * K, *py[16];
#pragma GCC unroll 16
        for (int i = 0; i < m * m; i++)
            py[i] = i / m < rows && i % m < cols ? y0 + (i / m * g->out_w + i % m) * K : NULL;
        float *to = dt + t * K;
        for (int64_t kv = 0; kv < K; kv += LANES) {
            v16 blk[16], h[ALPHA * 4];
#pragma GCC unroll 16
            for (int i = 0; i < m * m; i++)
                blk[i] = py[i] ? *(const v16 *)(py[i] + kv) : (v16){0};
#pragma GCC unroll 4
            for (int j = 0; j < m; j++) /* columns: h[a][j] = (A blk)[a][j] */
                a6(m, blk + j, m, h + j, m);
#pragma GCC unroll 6
            for (int a = 0; a < ALPHA; a++) { /* rows: (h A^T)[a][b], stored at once */
                v16 o[ALPHA];
                a6(m, h + a * m, 1, o, 1);
#pragma GCC unroll 6
                for (int b = 0; b < ALPHA; b++)
                    *(v16 *)(to + (a * ALPHA + b) * stride_e + kv) = o[b];
            }
        }
    }
}

static AVX512 void transform_grads(const wgrad_run *w, int64_t tile0, int64_t count, float *dt)
{
    if (w->m == 2)
        transform_grads_m(2, w, tile0, count, dt);
    else
        transform_grads_m(4, w, tile0, count, dt);
}

/* ---------------------------------------------------------------- the 36 products */

/* acc[R rows][16 NV] (+)= sum over t < count of xt[t][0:R] dyt[t][0:16 NV] (winograd_tile.h): rows of xt
 * C apart, of dyt and acc K apart; zero: store the sums instead of adding them. The block's sum starts
 * at zero in the registers and is added to acc once (a sum over the whole slice in the registers had
 * twice the rounding error on the CNN's layer at batch 2). */
INLINE AVX512 void product_rows(const int R, const int NV, int64_t count, const float *xt, int64_t C, const float *dyt,
                                int64_t K, bool zero, float *acc_mem)
{
    wino_products(R, NV, count, xt, 1, C, dyt, K, acc_mem, K, !zero);
}

#define PRODUCT_CASE(R, NV)                                                                      \
    case R: product_rows(R, NV, count, xt, C, dyt, K, zero, acc); break;
#define DEFINE_PRODUCT(NV)                                                                       \
    static AVX512 void product_##NV(int R, int64_t count, const float *xt, int64_t C, const float *dyt, \
                                    int64_t K, bool zero, float *acc)                            \
    {                                                                                            \
        switch (R) {                                                                             \
            PRODUCT_CASE(6, NV)                                                                  \
            PRODUCT_CASE(5, NV)                                                                  \
            PRODUCT_CASE(4, NV)                                                                  \
            PRODUCT_CASE(3, NV)                                                                  \
            PRODUCT_CASE(2, NV)                                                                  \
        default: product_rows(1, NV, count, xt, C, dyt, K, zero, acc); break;                    \
        }                                                                                        \
    }
DEFINE_PRODUCT(4)
DEFINE_PRODUCT(3)
DEFINE_PRODUCT(2)
DEFINE_PRODUCT(1)

/* M[e] (+)= X~[e]^T DY~[e] over the block's count tiles for the 36 positions e, into partial m. */
static void multiply(const wgrad_run *w, const float *xt, const float *dyt, int64_t count, bool zero, float *m)
{
    const int64_t C = w->g->cin, K = w->g->cout, nb = (C + MR - 1) / MR;
    for (int e = 0; e < POSITIONS; e++) {
        const float *xe = xt + e * w->block_tiles * C, *de = dyt + e * w->block_tiles * K;
        float *me = m + (int64_t)e * C * K;
        for (int64_t k0 = 0; k0 < K; k0 += 4 * LANES) {
            const int64_t nv = min64(4, (K - k0) / LANES);
            for (int64_t b = 0; b < nb; b++) {
                const int64_t c0 = C * b / nb, r = C * (b + 1) / nb - c0;
                const float *x = xe + c0, *d = de + k0;
                float *acc = me + c0 * K + k0;
                switch (nv) {
                case 4: product_4((int)r, count, x, C, d, K, zero, acc); break;
                case 3: product_3((int)r, count, x, C, d, K, zero, acc); break;
                case 2: product_2((int)r, count, x, C, d, K, zero, acc); break;
                default: product_1((int)r, count, x, C, d, K, zero, acc); break;
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- driver */

/* A thread's scratch: one block's transformed x and dy (tide_conv_slices). */
typedef struct wgrad_scratch {
    float *xt, *dyt;
} wgrad_scratch;

static void scratch_free(void *arg, void *scratch)
{
    (void)arg;
    wgrad_scratch *s = scratch;
    free(s->xt);
    free(s->dyt);
    free(s);
}

static void *scratch_new(void *arg)
{
    const wgrad_run *w = arg;
    wgrad_scratch *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->xt = malloc(sizeof(float) * (size_t)(POSITIONS * w->block_tiles * w->g->cin));
    s->dyt = malloc(sizeof(float) * (size_t)(POSITIONS * w->block_tiles * w->g->cout));
    if (s->xt && s->dyt)
        return s;
    scratch_free(arg, s);
    return NULL;
}

/* Slice sl: its tiles block by block, summed into its partial M (the first block stores). */
static void run_slice(void *arg, void *scratch, int64_t sl, char *partial)
{
    const wgrad_run *w = arg;
    const wgrad_scratch *s = scratch;
    const int64_t t0 = sl * w->tiles / w->slices, t1 = (sl + 1) * w->tiles / w->slices;
    for (int64_t tile0 = t0; tile0 < t1 && !tide_kernel_cancelled(w->g->ctx); tile0 += w->block_tiles) {
        const int64_t count = min64(w->block_tiles, t1 - tile0);
        transform_inputs(w, tile0, count, s->xt);
        transform_grads(w, tile0, count, s->dyt);
        multiply(w, s->xt, s->dyt, count, tile0 == t0, (float *)partial);
    }
}

/* dW for input channels [c0, c1): the partials added in slice order, then G^T M G per 16 output channels. */
static AVX512 void finish_rows(const wgrad_run *w, int64_t c0, int64_t c1)
{
    const wgrad_args *g = w->g;
    const int64_t C = g->cin, K = g->cout, r = g->r, slice = POSITIONS * C * K;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t kv = 0; kv < K; kv += LANES) {
            v16 mm[POSITIONS], t[5 * ALPHA];
            const float *at = w->partials + c * K + kv;
            for (int e = 0; e < POSITIONS; e++)
                mm[e] = *(const v16 *)(at + e * C * K);
            for (int64_t s = 1; s < w->slices; s++)
                for (int e = 0; e < POSITIONS; e++)
                    mm[e] += *(const v16 *)(at + s * slice + e * C * K);
            for (int64_t u = 0; u < r; u++) /* columns: t[u][b] = sum over a of w->gm[a][u] M[a][b] */
                for (int b = 0; b < ALPHA; b++) {
                    v16 sum = {0};
                    for (int a = 0; a < ALPHA; a++)
                        if (w->gm[a][u] != 0)
                            sum += w->gm[a][u] * mm[a * ALPHA + b];
                    t[u * ALPHA + b] = sum;
                }
            for (int64_t u = 0; u < r; u++) /* rows: dW[u][v] = sum over b of t[u][b] w->gm[b][v] */
                for (int64_t v = 0; v < r; v++) {
                    v16 sum = {0};
                    for (int b = 0; b < ALPHA; b++)
                        if (w->gm[b][v] != 0)
                            sum += w->gm[b][v] * t[u * ALPHA + b];
                    *(v16 *)(g->dw + ((u * r + v) * C + c) * K + kv) = sum;
                }
        }
}

static void finish_part(int64_t begin, int64_t end, void *arg) { finish_rows(arg, begin, end); }

tide_status tide_conv_winograd_filter_run(tide_kernel_ctx *ctx, const tide_conv_geometry *geo, int64_t r, const float *x,
                                          const float *dy, float *dw)
{
    const wgrad_args args = {.ctx = ctx, .x = x, .dy = dy, .dw = dw, .batch = geo->batch, .in_h = geo->in_h,
                             .in_w = geo->in_w, .cin = geo->in_c, .out_h = geo->out_h, .out_w = geo->out_w,
                             .cout = geo->out_c, .off_h = geo->pad_top, .off_w = geo->pad_left, .r = r};
    const wgrad_args *g = &args;
    wgrad_run w = {.g = g, .m = g->r == 5 ? 2 : 4, .gm = g->r == 5 ? G_R5 : G_R3};
    const int64_t C = g->cin, K = g->cout;
    w.tiles_h = (g->out_h + w.m - 1) / w.m;
    w.tiles_w = (g->out_w + w.m - 1) / w.m;
    w.tiles = g->batch * w.tiles_h * w.tiles_w;
    if (w.tiles == 0) {
        memset(g->dw, 0, sizeof(float) * (size_t)(g->r * g->r * C * K));
        return TIDE_OK;
    }
    const int64_t per_tile = (int64_t)sizeof(float) * POSITIONS * (C + K);
    w.block_tiles = BLOCK_BYTES / per_tile;
    w.block_tiles = w.block_tiles < MIN_BLOCK_TILES ? MIN_BLOCK_TILES : min64(w.block_tiles, MAX_BLOCK_TILES);
    w.slices = w.tiles / MIN_SLICE_TILES;
    w.slices = w.slices < 1 ? 1 : min64(w.slices, MAX_SLICES);
    const tide_conv_slices sl = {.ctx = g->ctx, .slices = w.slices, .partial_bytes = sizeof(float) * (size_t)(POSITIONS * C * K),
                                 .ns_per_slice = 0.1 * (double)(w.tiles / w.slices) * POSITIONS * (double)(C * K) / 16.0,
                                 .arg = &w, .scratch_new = scratch_new, .sum_slice = run_slice,
                                 .scratch_free = scratch_free};
    w.partials = (float *)tide_conv_slices_run(&sl);
    if (w.partials)
        tide_kernel_parallel_for(g->ctx, C, 0.5 * (double)(w.slices * POSITIONS * K), finish_part, &w);
    free(w.partials);
    return tide_kernel_status(g->ctx);
}

#else

tide_status tide_conv_winograd_filter_run(tide_kernel_ctx *ctx, const tide_conv_geometry *geo, int64_t r, const float *x,
                                          const float *dy, float *dw)
{
    (void)geo, (void)r, (void)x, (void)dy, (void)dw;
    return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "the Winograd filter gradient needs x86-64 with AVX-512");
}

#endif
