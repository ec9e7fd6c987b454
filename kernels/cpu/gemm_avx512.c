/* gemm_avx512.c — tide's own float32 matrix product for CPUs with AVX-512 (see gemm.h).
 *
 * Why: Debian's OpenBLAS picks its Haswell (AVX2) kernels on the Zen 5 machine of 2026, whose two
 * 512-bit FMA pipes per core give twice that peak (tests/bench/bench_fma_peak.c); the MLP's step is
 * almost all products (docs/benchmarks.md, issue 19).
 *
 * How, the BLIS structure with a 14 x 32 micro-kernel: C[14 rows, 32 columns] is held in 28 zmm
 * accumulators; per step of k it loads two vectors of packed B and broadcasts 14 elements of A
 * (each broadcast feeds two FMAs; 28 FMAs against 16 loads keep both FMA pipes busy). Around it:
 *   for each block of KC steps of k (k cut into equal blocks of at most KC):
 *     for each block of NC columns: pack B's KC x NC block into strips of 32 columns, k-major
 *       (pb[strip][k][0:32], zero past n), so a strip (<= 32 KiB) stays in L1;
 *       for each block of MC rows (A's block stays in L2):
 *         A transposed (stored k x m): pack it into strips of 14 rows, k-major (pa[strip][k][0:14]);
 *         not transposed: the micro-kernel broadcasts straight from A's rows (no copy needed);
 *         for each strip of B: for each strip of 14 rows: the micro-kernel, which writes C on
 *         the first block of k and adds to it on the others.
 * B transposed (stored n x k) is packed through 16 x 16 transposes in registers. Ragged edges: the
 * last strip of rows runs a micro-kernel compiled for its row count (1..14), the last strip of
 * columns stores through a mask (and, at most 16 wide, runs with one vector per row). Every output element is a sum over k in increasing order, one FMA
 * per term, whatever the thread split (callers cut C into blocks, not k). */
#include "gemm.h"

#include <stdint.h>
#include <string.h>

#include "cpu_util.h"

#define MR TIDE_GEMM_MR
#define NR TIDE_GEMM_NR
#define KC 256       /* steps of k per block: a B strip is KC x 32 floats = 32 KiB (L1 is 48 KiB) */
#define NC 512       /* columns per packed block of B: KC x NC = 512 KiB (L2 is 1 MiB) */
#define MC (12 * MR) /* rows per block of A: 168 x KC floats = 168 KiB */

bool tide_gemm_f32_suits(int64_t m, int64_t n) { return m >= 8 && n >= 8 && m * n >= 1024; }

#if TIDE_ISA_DISPATCH_X86

#define AVX512 TIDE_TARGET_AVX512
#define INLINE static inline __attribute__((always_inline))

/* One tile: C[R, 16 V] (+)= A[R, kc] B[kc, 16 V], A's element (r, k) at a[r * a_row + k * a_step], B a
 * packed strip (32 wide; V = 1 uses its first 16 columns only, for strips of at most 16 columns). R, V,
 * a_row and a_step are compile-time constants where the caller is, so the loops unroll into the R V
 * accumulators. m0, m1: the columns of C's two halves that exist. */
INLINE AVX512 void tile(const int R, const int V, int64_t kc, const float *a, int64_t a_row, int64_t a_step,
                        const float *b, float *c, int64_t ldc, bool accumulate, __mmask16 m0, __mmask16 m1)
{
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
        c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = V == 2 ? _mm512_load_ps(b + 16) : b0;
#pragma GCC unroll 14
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(a[r * a_row]);
            c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
            if (V == 2)
                c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
        }
        a += a_step;
        b += NR;
    }
#pragma GCC unroll 14
    for (int r = 0; r < R; r++) {
        float *row = c + r * ldc;
        if (accumulate)
            c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, row));
        _mm512_mask_storeu_ps(row, m0, c0[r]);
        if (V == 2) {
            if (accumulate)
                c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, row + 16));
            _mm512_mask_storeu_ps(row + 16, m1, c1[r]);
        }
    }
}

/* The tile for a strip of R rows: A packed (a_row 1, a_step MR) or A's own rows (a_row lda, step 1). */
#define TILE_CASE(R)                                                                             \
    case R:                                                                                      \
        if (packed_a && wide)                                                                    \
            tile(R, 2, kc, a, 1, MR, b, c, ldc, accumulate, m0, m1);                             \
        else if (packed_a)                                                                       \
            tile(R, 1, kc, a, 1, MR, b, c, ldc, accumulate, m0, m1);                             \
        else if (wide)                                                                           \
            tile(R, 2, kc, a, lda, 1, b, c, ldc, accumulate, m0, m1);                            \
        else                                                                                     \
            tile(R, 1, kc, a, lda, 1, b, c, ldc, accumulate, m0, m1);                            \
        break;

/* wide: the strip has more than 16 columns (two vectors of C per row). */
static AVX512 void tile_rows(int rows, bool wide, int64_t kc, const float *a, int64_t lda, bool packed_a,
                             const float *b, float *c, int64_t ldc, bool accumulate, __mmask16 m0, __mmask16 m1)
{
    switch (rows) {
        TILE_CASE(1) TILE_CASE(2) TILE_CASE(3) TILE_CASE(4) TILE_CASE(5) TILE_CASE(6) TILE_CASE(7)
        TILE_CASE(8) TILE_CASE(9) TILE_CASE(10) TILE_CASE(11) TILE_CASE(12) TILE_CASE(13) TILE_CASE(14)
    default: break; /* callers pass 1..MR */
    }
}

static __mmask16 mask_of(int64_t count) /* the first count (0..16) lanes */
{
    return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1u);
}

/* Transposes 16 vectors in place: r[i][j] becomes r[j][i]. */
INLINE AVX512 void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* u[4i + c]: column c of each 4-column lane, rows 4i..4i+3 */
        u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) { /* t: lanes 0, 2 (0x88) and 1, 3 (0xDD) of rows 0-7 and 8-15 */
        t[c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);          /* columns 0..3 */
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);      /* columns 8..11 */
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88); /* columns 4..7 */
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD); /* columns 12..15 */
    }
}

/* Packs op(B)[kc rows from pc, nc columns from jc] into strips of NR columns, k-major, zero past nc.
 * tb: B is stored n x k, so its rows are op(B)'s columns: 16 x 16 blocks go through transpose16. */
static AVX512 void pack_b(bool tb, const float *b, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t nc,
                          float *pb)
{
    for (int64_t js = 0; js < nc; js += NR, pb += kc * NR) {
        for (int half = 0; half < 2; half++) {
            int64_t j0 = js + 16 * half, cols = nc - j0 < 0 ? 0 : nc - j0 < 16 ? nc - j0 : 16;
            if (!tb) {
                const __mmask16 m = mask_of(cols);
                const float *src = b + pc * ldb + jc + j0;
                for (int64_t k = 0; k < kc; k++)
                    _mm512_store_ps(pb + k * NR + 16 * half, _mm512_maskz_loadu_ps(m, src + k * ldb));
                continue;
            }
            for (int64_t k0 = 0; k0 < kc; k0 += 16) {
                const int64_t ks = kc - k0 < 16 ? kc - k0 : 16;
                const __mmask16 m = mask_of(ks);
                __m512 r[16];
                for (int64_t j = 0; j < 16; j++)
                    r[j] = j < cols ? _mm512_maskz_loadu_ps(m, b + (jc + j0 + j) * ldb + pc + k0)
                                    : _mm512_setzero_ps();
                transpose16(r);
                for (int64_t kk = 0; kk < ks; kk++)
                    _mm512_store_ps(pb + (k0 + kk) * NR + 16 * half, r[kk]);
            }
        }
    }
}

/* Packs op(A)[mc rows from ic, kc columns from pc] for A stored k x m (transposed) into strips of MR
 * rows, k-major: pa[strip][k][0:MR] (the last strip's rows past mc are left unset: never read). */
static AVX512 void pack_a_transposed(const float *a, int64_t lda, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
                                     float *pa)
{
    for (int64_t is = 0; is < mc; is += MR, pa += kc * MR) {
        const __mmask16 m = mask_of(mc - is < MR ? mc - is : MR);
        const float *src = a + pc * lda + ic + is;
        for (int64_t k = 0; k < kc; k++)
            _mm512_mask_storeu_ps(pa + k * MR, m, _mm512_maskz_loadu_ps(m, src + k * lda));
    }
}

typedef struct gemm_args {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    const float *a, *b;
    float *c;
} gemm_args;

/* Rows [ic, ic + mc) of C's columns [jc, jc + nc) for the k block [pc, pc + kc), B packed in pb. */
static AVX512 void gemm_block(const gemm_args *g, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t ic,
                              int64_t mc, const float *pb, float *pa)
{
    if (g->ta)
        pack_a_transposed(g->a, g->lda, ic, mc, pc, kc, pa);
    for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = nc - jr < NR ? nc - jr : NR;
        const __mmask16 m0 = mask_of(cols), m1 = mask_of(cols > 16 ? cols - 16 : 0);
        const float *b = pb + jr * kc;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            const int rows = (int)(mc - ir < MR ? mc - ir : MR);
            const float *a = g->ta ? pa + ir * kc : g->a + (ic + ir) * g->lda + pc;
            tile_rows(rows, cols > 16, kc, a, g->lda, g->ta, b, g->c + (ic + ir) * g->ldc + jc + jr, g->ldc, pc > 0, m0, m1);
        }
    }
}

static AVX512 void gemm_run(const gemm_args *g, float *pb, float *pa)
{
    const int64_t kblocks = (g->k + KC - 1) / KC, kstep = (g->k + kblocks - 1) / kblocks;
    for (int64_t pc = 0; pc < g->k; pc += kstep) {
        const int64_t kc = g->k - pc < kstep ? g->k - pc : kstep;
        for (int64_t jc = 0; jc < g->n; jc += NC) {
            const int64_t nc = g->n - jc < NC ? g->n - jc : NC;
            pack_b(g->tb, g->b, g->ldb, pc, kc, jc, nc, pb);
            for (int64_t ic = 0; ic < g->m; ic += MC)
                gemm_block(g, pc, kc, jc, nc, ic, g->m - ic < MC ? g->m - ic : MC, pb, pa);
        }
    }
}

bool tide_gemm_f32_available(void) { return tide_cpu_isa_active() >= TIDE_ISA_AVX512; }

bool tide_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return true;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++)
            memset(c + i * ldc, 0, (size_t)n * sizeof(float));
        return true;
    }
    const int64_t kc = k < KC ? k : KC, nc = ((n < NC ? n : NC) + NR - 1) / NR * NR;
    const int64_t mc = ta ? ((m < MC ? m : MC) + MR - 1) / MR * MR : 0;
    /* B's packed block, then A's (transposed A only), 64-byte aligned for the aligned loads. A tensor
     * of the engine's, whose buffer cache hands the same memory back every step: a fresh malloc of
     * this size would be fresh pages, a page fault per 4 KiB on every call
     * (tests/engine/test_memory.c's test_steady_steps_page_faults). */
    tide_shape shape = tide_shape_vector(kc * nc + kc * mc + 16);
    tide_tensor *scratch = tide_tensor_new_uninitialized(TIDE_FLOAT32, &shape, NULL);
    if (!scratch)
        return false;
    float *buf = (float *)(((uintptr_t)tide_tensor_data(scratch) + 63) & ~(uintptr_t)63);
    gemm_args g = {ta, tb, m, n, k, lda, ldb, ldc, a, b, c};
    gemm_run(&g, buf, buf + kc * nc);
    tide_tensor_release(scratch);
    return true;
}

#else /* no AVX-512 build: OpenBLAS does every product */

bool tide_gemm_f32_available(void) { return false; }

bool tide_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc)
{
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc;
    return false;
}

#endif
