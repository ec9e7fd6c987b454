/* reduce.c — CPU kernels of the reductions: Sum, Prod, Mean, Max, Min, All, Any over a set of axes,
 * and ArgMax, ArgMin over one axis (ops defined in engine/ops/reduce_ops.c). All and Any are Min and
 * Max over the bytes of bools.
 *
 * How a reduction runs:
 *  1. The axes are checked (range, repeats) into a bit mask, and the input's shape is collapsed:
 *     size-1 dims dropped, neighbouring dims that are both reduced or both kept merged. What is left
 *     alternates kept and reduced blocks, e.g. [K, R] (rows), [R, K] (columns), [K, R, K].
 *  2. Nothing to reduce (no axes, or only size-1 axes): the output is a view of the input. An empty
 *     reduction fills the output with the op's identity (0, 1, lowest, highest; NaN for a float Mean).
 *  3. One reduced block: a single pass over (O, R, I) = (outer, reduced, inner) sizes, input element
 *     (o, r, i) at (o * R + r) * I + i. I == 1 is a row pass (each output reduces a contiguous run,
 *     with 8 independent accumulators the compiler packs into SIMD registers); I > 1 is a column pass
 *     (blocks of up to 256 columns accumulated row by row, again vectorisable). Several reduced
 *     blocks: the innermost is reduced first into a buffer of accumulators, and so on (no transpose).
 *  4. Large passes are split over tide_kernel_parallel_for by outputs (rows or column blocks) or, when
 *     there are few outputs, by chunks of the reduced dimension whose partial results are merged in
 *     chunk order. The split depends only on the shape, so results do not depend on the thread count.
 *  5. The float32 and float64 passes of Sum, Prod, Mean, Max and Min are built for the baseline ISA,
 *     AVX2 and AVX-512 and chosen per call (TIDE_ISA_VARIANTS, cpu_util.h): the same lanes combined
 *     in the same order at every width, so the same results, 1.6-8x faster for data in the cache
 *     (tests/bench/bench_vecwidth.c).
 *
 * Accumulators: float32 and float64 sums, products and means accumulate in double (rows in blocks of
 * 4096 over 8 lanes, close to pairwise accuracy), complex in double complex; integer sums and products
 * in unsigned arithmetic of at least the element's width, wrapping modulo 2^bits like TensorFlow;
 * integer means sum exactly (int64 for 8/16-bit types, 128-bit for int32 and int64, so no input can
 * overflow them) and truncate toward zero. float16 and bfloat16 are converted to float32, reduced as
 * float32 and rounded back. Max/Min use x > m, which drops NaN, so float inputs are also scanned for
 * NaN and a NaN result is forced where one was seen.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/reduce_ops.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised, selects of floats too (cpu_util.h: before including it). The
 * lanes of a pass are explicit, so vectorising changes no summation order. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h"

typedef float _Complex cfloat;
typedef double _Complex cdouble;
#ifdef __SIZEOF_INT128__
typedef __int128 wide_int; /* exact sums of int32 and int64 for Mean */
#else
typedef int64_t wide_int; /* (no 128-bit type: exact below 2^63 only) */
#endif

enum { OP_SUM, OP_PROD, OP_MEAN, OP_MAX, OP_MIN, NUM_OPS, OP_ARGMAX = NUM_OPS, OP_ARGMIN };

#define LANES 8          /* independent accumulators of a row pass */
#define ROW_BLOCK 4096   /* row elements per lane block: partial sums are added block by block */
#define COLS 256         /* columns per block of a column pass */
#define NARROW 32        /* column passes over fewer columns regroup rows (col_full) */
#define SMALL 32768      /* elements below which a pass runs inline, without parallel_for */
#define SPLIT 32768      /* elements per chunk when a reduced dimension is split across threads */
#define MAX_CHUNKS 64
#define NS_PER_ELEMENT 0.5

/* ---------------------------------------------------------------- per-dtype passes */

/* A row pass: out[o] = reduce(x[o * xs + r] for r < len), o < rows.
 * A column pass: out[o * os + i] = reduce(x[o * xs + r * rs + i] for r < len), o < rows, i < width.
 * count is the number of elements each output stands for (Mean divides by it). */
typedef void (*row_fn)(const void *x, void *out, int64_t rows, int64_t len, int64_t xs, int64_t count);
typedef void (*col_fn)(const void *x, void *out, int64_t rows, int64_t len, int64_t width, int64_t rs,
                       int64_t xs, int64_t os, int64_t count);

/* Variants of a pass by what it reads and writes: the input dtype or the accumulator type. Passes
 * that write accumulators leave the result unfinished (no Mean division) for a later pass to merge. */
enum { V_DST_ACC = 1, V_SRC_ACC = 2 }; /* bits of a variant */
enum { V_IN_OUT = 0, V_IN_ACC = V_DST_ACC, V_ACC_OUT = V_SRC_ACC, V_ACC_ACC = V_SRC_ACC | V_DST_ACC };

typedef struct reducer {
    row_fn row[4];
    col_fn col[4];
    size_t acc_size;
} reducer;

#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define RMAX(a, b) ((b) > (a) ? (b) : (a)) /* drops NaN: see the NaN scan below */
#define RMIN(a, b) ((b) < (a) ? (b) : (a))
#define FNAN(x) ((x) != (x))
#define INAN(x) 0
#define FIN_CAST(T, a, n) ((T)(a))
#define FIN_MEAN(T, a, n) ((T)((a) / (n)))

#define UNROLL8(S, ...)                                                                            \
    S(0, __VA_ARGS__) S(1, __VA_ARGS__) S(2, __VA_ARGS__) S(3, __VA_ARGS__)                         \
    S(4, __VA_ARGS__) S(5, __VA_ARGS__) S(6, __VA_ARGS__) S(7, __VA_ARGS__)
#define LANE_DECL(k, ACC, INIT) ACC a##k = INIT;
#define LANE_STEP(k, ACC, COMB) a##k = COMB(a##k, (ACC)p[r + k]);
#define COL_STEP(k, ACC, COMB) a[i + k] = COMB(a[i + k], (ACC)p[i + k]);
#define NAN_DECL(k, _) int n##k = 0;
#define NAN_STEP(k, ISNAN) n##k |= ISNAN(p[r + k]);
#define COL_NAN_STEP(k, ISNAN) seen_nan[i + k] |= ISNAN(p[i + k]);

/* Defines NAME_row and NAME_col reading SRC, accumulating in ACC, writing DST = FIN(DST, acc, count).
 * ISNAN tests a SRC element; NANV is the ACC value forced where a NaN was seen. */
#define DEFINE_PASS_AT(NAME, TARGET, ISA, SRC, DST, ACC, INIT, COMB, FIN, ISNAN, NANV)            \
    TARGET static void NAME##_row(const void *xv, void *ov, int64_t rows, int64_t len, int64_t xs,         \
                           int64_t count)                                                           \
    {                                                                                               \
        const SRC *x = xv;                                                                          \
        DST *out = ov;                                                                              \
        (void)count;                                                                                \
        for (int64_t o = 0; o < rows; o++) {                                                        \
            const SRC *p = x + o * xs;                                                              \
            ACC total = INIT;                                                                       \
            int seen_nan = 0;                                                                       \
            for (int64_t b = 0; b < len; b += ROW_BLOCK) {                                          \
                int64_t e = len - b < ROW_BLOCK ? len : b + ROW_BLOCK, r = b;                       \
                UNROLL8(LANE_DECL, ACC, INIT)                                                                  \
                for (; r + LANES <= e; r += LANES) {                                                \
                    UNROLL8(LANE_STEP, ACC, COMB)                                                              \
                }                                                                                   \
                for (; r < e; r++)                                                                  \
                    a0 = COMB(a0, (ACC)p[r]);                                                       \
                a0 = COMB(COMB(COMB(a0, a4), COMB(a2, a6)), COMB(COMB(a1, a5), COMB(a3, a7)));      \
                total = COMB(total, a0);                                                            \
                UNROLL8(NAN_DECL, 0)                                                                \
                for (r = b; r + LANES <= e; r += LANES) {                                           \
                    UNROLL8(NAN_STEP, ISNAN)                                                        \
                }                                                                                   \
                for (; r < e; r++)                                                                  \
                    n0 |= ISNAN(p[r]);                                                              \
                seen_nan |= n0 | n1 | n2 | n3 | n4 | n5 | n6 | n7;                                  \
            }                                                                                       \
            out[o] = FIN(DST, seen_nan ? NANV : total, count);                                      \
        }                                                                                           \
    }                                                                                               \
    TARGET static void NAME##_col(const void *xv, void *ov, int64_t rows, int64_t len, int64_t width, \
                           int64_t rs, int64_t xs, int64_t os, int64_t count)                       \
    {                                                                                               \
        const SRC *x = xv;                                                                          \
        DST *out = ov;                                                                              \
        (void)count;                                                                                \
        for (int64_t o = 0; o < rows; o++)                                                          \
            for (int64_t c = 0; c < width; c += COLS) {                                             \
                int64_t n = width - c < COLS ? width - c : COLS;                                    \
                ACC a[COLS];                                                                        \
                unsigned char seen_nan[COLS];                                                       \
                for (int64_t i = 0; i < n; i++) {                                                   \
                    a[i] = INIT;                                                                    \
                    seen_nan[i] = 0;                                                                \
                }                                                                                   \
                for (int64_t r = 0; r < len; r++) {                                                 \
                    const SRC *p = x + o * xs + r * rs + c;                                         \
                    int64_t i = 0;                                                                  \
                    for (; i + LANES <= n; i += LANES) {                                            \
                        UNROLL8(COL_STEP, ACC, COMB)                                                           \
                    }                                                                               \
                    for (; i < n; i++)                                                              \
                        a[i] = COMB(a[i], (ACC)p[i]);                                               \
                    for (i = 0; i + LANES <= n; i += LANES) {                                       \
                        UNROLL8(COL_NAN_STEP, ISNAN)                                                \
                    }                                                                               \
                    for (; i < n; i++)                                                              \
                        seen_nan[i] |= ISNAN(p[i]);                                                 \
                }                                                                                   \
                DST *q = out + o * os + c;                                                          \
                for (int64_t i = 0; i < n; i++)                                                     \
                    q[i] = FIN(DST, seen_nan[i] ? NANV : a[i], count);                              \
            }                                                                                       \
    }

#define DEFINE_PASS(NAME, ...) DEFINE_PASS_AT(NAME, , , __VA_ARGS__)
/* The float passes of Sum, Prod, Mean, Max and Min in the ISA variants of cpu_util.h, dispatched per
 * call: the same lanes in the same order at every width, so the same results. */
#define ROW_ARGS x, out, rows, len, xs, count
#define COL_ARGS x, out, rows, len, width, rs, xs, os, count
#define DEFINE_PASS_WIDE(NAME, ...)                                                                 \
    TIDE_ISA_VARIANTS(DEFINE_PASS_AT, NAME, __VA_ARGS__)                                            \
    static void NAME##_row(const void *x, void *out, int64_t rows, int64_t len, int64_t xs,         \
                           int64_t count)                                                           \
    {                                                                                               \
        TIDE_ISA_DISPATCH_SFX(NAME, _row, ROW_ARGS);                                                \
    }                                                                                               \
    static void NAME##_col(const void *x, void *out, int64_t rows, int64_t len, int64_t width,      \
                           int64_t rs, int64_t xs, int64_t os, int64_t count)                       \
    {                                                                                               \
        TIDE_ISA_DISPATCH_SFX(NAME, _col, COL_ARGS);                                                \
    }

/* Four passes (input or accumulators in, output or accumulators out) of one op and dtype, each
 * defined by PASS (DEFINE_PASS or DEFINE_PASS_WIDE). */
#define REDUCER4_WITH(PASS, NAME, IN, ACC, INIT, COMB, FIN)                                         \
    PASS(NAME##_io, IN, IN, ACC, INIT, COMB, FIN, INAN, INIT)                                       \
    PASS(NAME##_ia, IN, ACC, ACC, INIT, COMB, FIN_CAST, INAN, INIT)                                 \
    PASS(NAME##_ao, ACC, IN, ACC, INIT, COMB, FIN, INAN, INIT)                                      \
    PASS(NAME##_aa, ACC, ACC, ACC, INIT, COMB, FIN_CAST, INAN, INIT)                                \
    static const reducer NAME = {{NAME##_io_row, NAME##_ia_row, NAME##_ao_row, NAME##_aa_row},      \
                                 {NAME##_io_col, NAME##_ia_col, NAME##_ao_col, NAME##_aa_col},      \
                                 sizeof(ACC)};
/* The accumulator is the input type and the result needs no finishing: one pass serves all four. */
#define REDUCER1_WITH(PASS, NAME, T, INIT, COMB, ISNAN, NANV)                                      \
    PASS(NAME##_p, T, T, T, INIT, COMB, FIN_CAST, ISNAN, NANV)                                      \
    static const reducer NAME = {{NAME##_p_row, NAME##_p_row, NAME##_p_row, NAME##_p_row},          \
                                 {NAME##_p_col, NAME##_p_col, NAME##_p_col, NAME##_p_col},          \
                                 sizeof(T)};
/* The accumulator is the input type but Mean divides at the end. */
#define REDUCER2_WITH(PASS, NAME, T, INIT, COMB, FIN)                                              \
    PASS(NAME##_f, T, T, T, INIT, COMB, FIN, INAN, INIT)                                            \
    PASS(NAME##_p, T, T, T, INIT, COMB, FIN_CAST, INAN, INIT)                                       \
    static const reducer NAME = {{NAME##_f_row, NAME##_p_row, NAME##_f_row, NAME##_p_row},          \
                                 {NAME##_f_col, NAME##_p_col, NAME##_f_col, NAME##_p_col},          \
                                 sizeof(T)};

#define REDUCER4(...) REDUCER4_WITH(DEFINE_PASS, __VA_ARGS__)
#define REDUCER1(...) REDUCER1_WITH(DEFINE_PASS, __VA_ARGS__)
#define REDUCER2(...) REDUCER2_WITH(DEFINE_PASS, __VA_ARGS__)
#define REDUCER4_WIDE(...) REDUCER4_WITH(DEFINE_PASS_WIDE, __VA_ARGS__)
#define REDUCER1_WIDE(...) REDUCER1_WITH(DEFINE_PASS_WIDE, __VA_ARGS__)
#define REDUCER2_WIDE(...) REDUCER2_WITH(DEFINE_PASS_WIDE, __VA_ARGS__)

/* Sum and Prod: floats in double, integers in unsigned arithmetic (wrapping), complex in cdouble. */
#define SUM_PROD(NAME, COMB, INIT)                                                                   \
    REDUCER4_WIDE(NAME##_f32, float, double, INIT, COMB, FIN_CAST)                                   \
    REDUCER1_WIDE(NAME##_f64, double, INIT, COMB, INAN, INIT)                                         \
    REDUCER4(NAME##_i8, int8_t, uint32_t, INIT, COMB, FIN_CAST)                                      \
    REDUCER4(NAME##_i16, int16_t, uint32_t, INIT, COMB, FIN_CAST)                                    \
    REDUCER4(NAME##_i32, int32_t, uint32_t, INIT, COMB, FIN_CAST)                                    \
    REDUCER4(NAME##_i64, int64_t, uint64_t, INIT, COMB, FIN_CAST)                                    \
    REDUCER4(NAME##_u8, uint8_t, uint32_t, INIT, COMB, FIN_CAST)                                     \
    REDUCER4(NAME##_u16, uint16_t, uint32_t, INIT, COMB, FIN_CAST)                                   \
    REDUCER4(NAME##_c64, cfloat, cdouble, INIT, COMB, FIN_CAST)                                      \
    REDUCER1(NAME##_c128, cdouble, INIT, COMB, INAN, INIT)
SUM_PROD(sum, ADD, 0)
SUM_PROD(prod, MUL, 1)

REDUCER4_WIDE(mean_f32, float, double, 0, ADD, FIN_MEAN)
REDUCER2_WIDE(mean_f64, double, 0, ADD, FIN_MEAN)
REDUCER4(mean_i8, int8_t, int64_t, 0, ADD, FIN_MEAN)
REDUCER4(mean_i16, int16_t, int64_t, 0, ADD, FIN_MEAN)
REDUCER4(mean_i32, int32_t, wide_int, 0, ADD, FIN_MEAN)
REDUCER4(mean_i64, int64_t, wide_int, 0, ADD, FIN_MEAN)
REDUCER4(mean_u8, uint8_t, int64_t, 0, ADD, FIN_MEAN)
REDUCER4(mean_u16, uint16_t, int64_t, 0, ADD, FIN_MEAN)
REDUCER4(mean_c64, cfloat, cdouble, 0, ADD, FIN_MEAN)
REDUCER2(mean_c128, cdouble, 0, ADD, FIN_MEAN)

/* Max and Min: the empty result is the lowest (highest) value; floats force NaN where one was seen. */
#define MAX_MIN(NAME, COMB, F_INIT, LIMIT)                                                          \
    REDUCER1_WIDE(NAME##_f32, float, F_INIT, COMB, FNAN, NAN)                                       \
    REDUCER1_WIDE(NAME##_f64, double, F_INIT, COMB, FNAN, NAN)                                      \
    REDUCER1(NAME##_i8, int8_t, LIMIT(INT8), COMB, INAN, 0)                                         \
    REDUCER1(NAME##_i16, int16_t, LIMIT(INT16), COMB, INAN, 0)                                      \
    REDUCER1(NAME##_i32, int32_t, LIMIT(INT32), COMB, INAN, 0)                                      \
    REDUCER1(NAME##_i64, int64_t, LIMIT(INT64), COMB, INAN, 0)                                      \
    REDUCER1(NAME##_u8, uint8_t, LIMIT(UINT8), COMB, INAN, 0)                                       \
    REDUCER1(NAME##_u16, uint16_t, LIMIT(UINT16), COMB, INAN, 0)
#define LOWEST(T) T##_LOWEST
#define HIGHEST(T) T##_MAX
#define INT8_LOWEST INT8_MIN
#define INT16_LOWEST INT16_MIN
#define INT32_LOWEST INT32_MIN
#define INT64_LOWEST INT64_MIN
#define UINT8_LOWEST 0
#define UINT16_LOWEST 0
MAX_MIN(max, RMAX, -INFINITY, LOWEST)
MAX_MIN(min, RMIN, INFINITY, HIGHEST)

#define DTYPE_ROW(NAME)                                                                             \
    {[TIDE_FLOAT32] = &NAME##_f32, [TIDE_FLOAT64] = &NAME##_f64, [TIDE_INT8] = &NAME##_i8,           \
     [TIDE_INT16] = &NAME##_i16,   [TIDE_INT32] = &NAME##_i32,   [TIDE_INT64] = &NAME##_i64,         \
     [TIDE_UINT8] = &NAME##_u8,    [TIDE_UINT16] = &NAME##_u16}
#define DTYPE_ROW_C(NAME)                                                                           \
    {[TIDE_FLOAT32] = &NAME##_f32, [TIDE_FLOAT64] = &NAME##_f64, [TIDE_INT8] = &NAME##_i8,           \
     [TIDE_INT16] = &NAME##_i16,   [TIDE_INT32] = &NAME##_i32,   [TIDE_INT64] = &NAME##_i64,         \
     [TIDE_UINT8] = &NAME##_u8,    [TIDE_UINT16] = &NAME##_u16,  [TIDE_COMPLEX64] = &NAME##_c64,     \
     [TIDE_COMPLEX128] = &NAME##_c128}

/* float16 and bfloat16 have no entry: they go through float32. */
static const reducer *const reducers[NUM_OPS][TIDE_NUM_DTYPES] = {
    [OP_SUM] = DTYPE_ROW_C(sum), [OP_PROD] = DTYPE_ROW_C(prod), [OP_MEAN] = DTYPE_ROW_C(mean),
    [OP_MAX] = DTYPE_ROW(max),   [OP_MIN] = DTYPE_ROW(min),
};

/* ---------------------------------------------------------------- running a pass in parallel */

typedef struct pass_job {
    const reducer *rd;
    int v;                     /* the variant of the pass */
    const char *x;
    char *out, *partial;
    size_t x_size, out_size, acc_size;
    int64_t O, R, I, count;
    int64_t nblk;              /* column blocks per outer index */
    int64_t chunk;             /* reduced elements (rows when I > 1) per chunk of a split pass */
} pass_job;

/* A column pass over whole rows of width I (consecutive rows are contiguous). Narrow rows are
 * regrouped so the inner loop stays long: k consecutive rows read as one row of k * I columns, then
 * the k partial results and the leftover rows' are merged. */
static void col_full(const reducer *rd, int v, size_t x_size, size_t out_size, const void *x, void *out,
                     int64_t rows, int64_t len, int64_t I, int64_t xs, int64_t os, int64_t count)
{
    int64_t k = COLS / I;
    if (I >= NARROW || len < 2 * k) {
        rd->col[v](x, out, rows, len, I, I, xs, os, count);
        return;
    }
    _Alignas(16) unsigned char acc[(COLS + NARROW) * 16]; /* (k + 1) * I accumulators of <= 16 bytes */
    int64_t groups = len / k;
    for (int64_t o = 0; o < rows; o++) {
        const char *xo = (const char *)x + (size_t)(o * xs) * x_size;
        rd->col[v | V_DST_ACC](xo, acc, 1, groups, k * I, k * I, 0, 0, 0);
        rd->col[v | V_DST_ACC](xo + (size_t)(groups * k * I) * x_size, acc + (size_t)(k * I) * rd->acc_size,
                               1, len - groups * k, I, I, 0, 0, 0);
        rd->col[V_SRC_ACC | (v & V_DST_ACC)](acc, (char *)out + (size_t)(o * os) * out_size, 1, k + 1, I, I,
                                             0, 0, count);
    }
}

static void rows_task(int64_t b, int64_t e, void *arg)
{
    const pass_job *j = arg;
    j->rd->row[j->v](j->x + (size_t)(b * j->R) * j->x_size, j->out + (size_t)b * j->out_size, e - b,
                     j->R, j->R, j->count);
}

static void col_blocks_task(int64_t b, int64_t e, void *arg)
{
    const pass_job *j = arg;
    while (b < e) {
        int64_t o = b / j->nblk, end = (o + 1) * j->nblk < e ? (o + 1) * j->nblk : e;
        int64_t c0 = (b - o * j->nblk) * COLS, c1 = (end - o * j->nblk) * COLS;
        if (c1 > j->I)
            c1 = j->I;
        const char *x = j->x + (size_t)(o * j->R * j->I + c0) * j->x_size;
        char *out = j->out + (size_t)(o * j->I + c0) * j->out_size;
        if (c0 == 0 && c1 == j->I)
            col_full(j->rd, j->v, j->x_size, j->out_size, x, out, 1, j->R, j->I, 0, 0, j->count);
        else
            j->rd->col[j->v](x, out, 1, j->R, c1 - c0, j->I, 0, 0, j->count);
        b = end;
    }
}

/* Chunk p of a split pass reduces its slice of R for every output into partial[p]. */
static void chunks_task(int64_t b, int64_t e, void *arg)
{
    const pass_job *j = arg;
    int va = j->v | V_DST_ACC; /* same source, accumulators out */
    for (int64_t p = b; p < e; p++) {
        int64_t r0 = p * j->chunk, len = j->R - r0 < j->chunk ? j->R - r0 : j->chunk;
        char *dst = j->partial + (size_t)(p * j->O * j->I) * j->acc_size;
        if (j->I == 1)
            j->rd->row[va](j->x + (size_t)r0 * j->x_size, dst, j->O, len, j->R, 0);
        else
            col_full(j->rd, va, j->x_size, j->acc_size, j->x + (size_t)(r0 * j->I) * j->x_size, dst, j->O,
                     len, j->I, j->R * j->I, j->I, 0);
    }
}

/* Runs one (O, R, I) pass from src (input dtype or accumulators) to dst (output or accumulators). */
static tide_status run_pass(tide_kernel_ctx *ctx, const reducer *rd, size_t in_size, bool src_acc,
                            bool dst_acc, const void *src, void *dst, int64_t O, int64_t R, int64_t I,
                            int64_t count)
{
    pass_job j = {.rd = rd, .v = (src_acc ? V_SRC_ACC : 0) | (dst_acc ? V_DST_ACC : 0), .x = src, .out = dst,
                  .x_size = src_acc ? rd->acc_size : in_size, .out_size = dst_acc ? rd->acc_size : in_size,
                  .acc_size = rd->acc_size, .O = O, .R = R, .I = I, .count = count,
                  .nblk = (I + COLS - 1) / COLS};
    int64_t total = O * R * I, units = I == 1 ? O : O * j.nblk;
    if (total < SMALL) {
        if (I == 1)
            rd->row[j.v](src, dst, O, R, R, count);
        else
            col_full(rd, j.v, j.x_size, j.out_size, src, dst, O, R, I, R * I, I, count);
        return TIDE_OK;
    }
    int64_t chunk = I == 1 ? SPLIT : (SPLIT + I - 1) / I; /* in units of R */
    if (units >= 16 || R < 2 * chunk) {
        double cost = (double)R * (double)(I == 1 ? 1 : COLS) * NS_PER_ELEMENT;
        tide_kernel_parallel_for(ctx, units, cost, I == 1 ? rows_task : col_blocks_task, &j);
        return TIDE_OK;
    }
    int64_t P = (R + chunk - 1) / chunk;
    if (P > MAX_CHUNKS) {
        P = MAX_CHUNKS;
        chunk = (R + P - 1) / P;
        P = (R + chunk - 1) / chunk;
    }
    j.chunk = chunk;
    j.partial = malloc((size_t)(P * O * I) * rd->acc_size);
    if (!j.partial)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld partial results",
                                 (long long)(P * O * I));
    tide_kernel_parallel_for(ctx, P, (double)(chunk * O * I) * NS_PER_ELEMENT, chunks_task, &j);
    int64_t n = O * I; /* merge the chunks' results in order: a column pass over P rows */
    rd->col[V_SRC_ACC | (j.v & V_DST_ACC)](j.partial, dst, 1, P, n, n, 0, 0, count);
    free(j.partial);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- plans */

/* The input's shape collapsed for one reduction (see the top of the file). */
typedef struct plan {
    int n;                         /* blocks */
    int64_t dims[TIDE_MAX_RANK];
    bool red[TIDE_MAX_RANK];
    int64_t count, in_n, out_n;    /* elements per output, in the input, in the output */
    tide_shape out_shape;
} plan;

static void make_plan(const tide_shape *in, unsigned mask, bool keep_dims, plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->count = pl->in_n = pl->out_n = 1;
    for (int d = 0; d < in->rank; d++) {
        int64_t size = in->dims[d];
        bool red = (mask >> d) & 1;
        pl->in_n = tide_dim_mul(pl->in_n, size);
        if (red)
            pl->count = tide_dim_mul(pl->count, size);
        else
            pl->out_n = tide_dim_mul(pl->out_n, size);
        if (!red || keep_dims)
            pl->out_shape.dims[pl->out_shape.rank++] = red ? 1 : size;
        if (size == 1)
            continue;
        if (pl->n > 0 && pl->red[pl->n - 1] == red) {
            pl->dims[pl->n - 1] = tide_dim_mul(pl->dims[pl->n - 1], size);
        } else {
            pl->dims[pl->n] = size;
            pl->red[pl->n++] = red;
        }
    }
}

/* Removes reduced block j of a plan; its kept neighbours become adjacent and merge. */
static void drop_block(plan *pl, int j)
{
    int gone = 1;
    if (j > 0 && j + 1 < pl->n) {
        pl->dims[j - 1] *= pl->dims[j + 1];
        gone = 2;
    }
    memmove(pl->dims + j, pl->dims + j + gone, (size_t)(pl->n - j - gone) * sizeof pl->dims[0]);
    memmove(pl->red + j, pl->red + j + gone, (size_t)(pl->n - j - gone) * sizeof pl->red[0]);
    pl->n -= gone;
}

/* Reduces every reduced block of the plan, innermost first, through buffers of accumulators (on the
 * stack while small, alternating so a pass never writes what it reads). */
static tide_status run_plan(tide_kernel_ctx *ctx, const reducer *rd, size_t in_size, const void *x,
                            void *out, const plan *plan_in)
{
    _Alignas(16) unsigned char stack[2][2048];
    plan pl = *plan_in;
    const void *src = x;
    void *heap = NULL; /* the malloc'd buffer src points to, if any */
    tide_status st = TIDE_OK;
    for (int stage = 0; st == TIDE_OK; stage++) {
        int j = -1, blocks = 0;
        for (int i = 0; i < pl.n; i++)
            if (pl.red[i]) {
                j = i;
                blocks++;
            }
        int64_t O = 1, I = 1;
        for (int i = 0; i < j; i++)
            O *= pl.dims[i];
        for (int i = j + 1; i < pl.n; i++)
            I *= pl.dims[i];
        size_t bytes = (size_t)(O * I) * rd->acc_size;
        void *dst = blocks == 1 ? out : bytes <= sizeof stack[0] ? stack[stage % 2] : malloc(bytes);
        if (!dst)
            return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld partial results",
                                     (long long)(O * I));
        st = run_pass(ctx, rd, in_size, src != x, blocks > 1, src, dst, O, pl.dims[j], I, pl.count);
        free(heap);
        heap = blocks > 1 && bytes > sizeof stack[0] ? dst : NULL;
        src = dst;
        if (blocks == 1)
            break;
        drop_block(&pl, j);
    }
    free(heap);
    return st;
}

/* ---------------------------------------------------------------- float16 and bfloat16 */

static bool is_half(tide_dtype dt) { return dt == TIDE_FLOAT16 || dt == TIDE_BFLOAT16; }

static float *half_to_float(tide_dtype dt, const uint16_t *h, int64_t n)
{
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (f && dt == TIDE_FLOAT16)
        for (int64_t i = 0; i < n; i++)
            f[i] = tide_f16_to_f32(h[i]);
    else if (f)
        for (int64_t i = 0; i < n; i++)
            f[i] = tide_bf16_to_f32(h[i]);
    return f;
}

static void float_to_half(tide_dtype dt, const float *f, uint16_t *h, int64_t n)
{
    if (dt == TIDE_FLOAT16)
        for (int64_t i = 0; i < n; i++)
            h[i] = tide_f32_to_f16(f[i]);
    else
        for (int64_t i = 0; i < n; i++)
            h[i] = tide_f32_to_bf16(f[i]);
}

static tide_status oom(tide_kernel_ctx *ctx, int64_t n)
{
    return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory converting %lld elements to float32",
                             (long long)n);
}

/* ---------------------------------------------------------------- axes */

/* The reduction axes as a bit mask; the same checks and messages as the shape function. */
static tide_status axes_mask(tide_kernel_ctx *ctx, const tide_shape *in, const tide_tensor *axes,
                             unsigned *mask)
{
    char sb[TIDE_SHAPE_STR_MAX], msg[TIDE_OP_MSG_MAX];
    if (tide_tensor_rank(axes) > 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "reduction_indices must be a scalar or a vector, got shape %s",
                                 tide_shape_format(tide_tensor_shape(axes), sb, sizeof sb));
    if (!tide_reduce_axes_mask(in, axes, mask, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Sum, Prod, Mean, Max, Min */

typedef struct reduce_state {
    int op;
    bool keep_dims;
} reduce_state;

static const reduce_state states[NUM_OPS][2] = {
    {{OP_SUM, false}, {OP_SUM, true}},   {{OP_PROD, false}, {OP_PROD, true}},
    {{OP_MEAN, false}, {OP_MEAN, true}}, {{OP_MAX, false}, {OP_MAX, true}},
    {{OP_MIN, false}, {OP_MIN, true}},
};

/* Writes NaN into every element (float32/64, complex parts; half types get float32 NaN rounded). */
static void fill_nan(tide_dtype dt, void *out, int64_t n)
{
    if (dt == TIDE_FLOAT32 || dt == TIDE_COMPLEX64)
        for (int64_t i = 0; i < n * (dt == TIDE_COMPLEX64 ? 2 : 1); i++)
            ((float *)out)[i] = NAN;
    else if (dt == TIDE_FLOAT64 || dt == TIDE_COMPLEX128)
        for (int64_t i = 0; i < n * (dt == TIDE_COMPLEX128 ? 2 : 1); i++)
            ((double *)out)[i] = NAN;
}

/* An empty reduction: the op's identity everywhere (an error for an integer Mean). */
static tide_status fill_empty(tide_kernel_ctx *ctx, int op, tide_dtype dt, void *out, const plan *pl,
                              const tide_shape *in)
{
    static const char dummy[16];
    if (op == OP_MEAN && !tide_dtype_is_float(dt) && !tide_dtype_is_complex(dt)) {
        char sb[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "the mean of an empty reduction (input shape %s) is undefined for %s: "
                                 "integers have no NaN",
                                 tide_shape_format(in, sb, sizeof sb), tide_dtype_name(dt));
    }
    if (is_half(dt)) {
        float v = NAN;
        if (op != OP_MEAN)
            reducers[op][TIDE_FLOAT32]->row[V_IN_OUT](dummy, &v, 1, 0, 0, 0);
        uint16_t h;
        float_to_half(dt, &v, &h, 1);
        for (int64_t i = 0; i < pl->out_n; i++)
            ((uint16_t *)out)[i] = h;
    } else if (op == OP_MEAN) {
        fill_nan(dt, out, pl->out_n);
    } else {
        reducers[op][dt]->row[V_IN_OUT](dummy, out, pl->out_n, 0, 0, 0);
    }
    return TIDE_OK;
}

/* The output is the input (reshaped when keep_dims drops nothing, or size-1 axes went away). */
static tide_status forward_input(tide_kernel_ctx *ctx, tide_tensor *in, const tide_shape *shape)
{
    if (tide_shape_equal(shape, tide_tensor_shape(in))) {
        tide_kernel_set_output(ctx, 0, in);
        return TIDE_OK;
    }
    tide_tensor *view = tide_tensor_reshape(in, shape, NULL);
    if (!view)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "cannot make a view of the input");
    tide_kernel_set_output(ctx, 0, view);
    tide_tensor_release(view);
    return TIDE_OK;
}

static tide_status reduce_half(tide_kernel_ctx *ctx, int op, tide_dtype dt, const void *x, void *out,
                               const plan *pl)
{
    float *fx = half_to_float(dt, x, pl->in_n);
    float *fo = malloc((size_t)pl->out_n * sizeof *fo);
    tide_status st = fx && fo ? TIDE_OK : oom(ctx, pl->in_n);
    if (st == TIDE_OK)
        st = run_plan(ctx, reducers[op][TIDE_FLOAT32], sizeof(float), fx, fo, pl);
    if (st == TIDE_OK)
        float_to_half(dt, fo, out, pl->out_n);
    free(fx);
    free(fo);
    return st;
}

/* All and Any: Min and Max of the bytes (any non-zero byte is true, so the minimum is non-zero
 * exactly when every byte is, the maximum when one is), then made 0 or 1. An empty All is uint8's
 * highest value, true; an empty Any its lowest, false. */
static tide_status reduce_bool(tide_kernel_ctx *ctx, int op, const void *x, const plan *pl,
                               const tide_shape *in)
{
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &pl->out_shape, false);
    if (!out)
        return tide_kernel_status(ctx);
    uint8_t *o = tide_tensor_data(out);
    tide_status st = pl->count == 0 ? fill_empty(ctx, op, TIDE_UINT8, o, pl, in)
                                    : run_plan(ctx, reducers[op][TIDE_UINT8], 1, x, o, pl);
    for (int64_t i = 0; st == TIDE_OK && i < pl->out_n; i++)
        o[i] = o[i] != 0;
    return st;
}

static tide_status reduce_compute(tide_kernel_ctx *ctx)
{
    const reduce_state *s = tide_kernel_state(ctx);
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *shape = tide_tensor_shape(in);
    tide_dtype dt = tide_tensor_dtype(in);
    unsigned mask;
    tide_status st = axes_mask(ctx, shape, tide_kernel_input(ctx, 1), &mask);
    if (st != TIDE_OK)
        return st;
    plan pl;
    make_plan(shape, mask, s->keep_dims, &pl);
    if (pl.in_n == pl.out_n) /* only size-1 axes (or none) are reduced, or there is no element */
        return forward_input(ctx, in, &pl.out_shape);
    if (dt == TIDE_BOOL) /* All (Min) and Any (Max): only they take bool */
        return reduce_bool(ctx, s->op, tide_tensor_data(in), &pl, shape);
    const reducer *rd = reducers[s->op][is_half(dt) ? TIDE_FLOAT32 : dt];
    if (!rd)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for %s", tide_dtype_name(dt));
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &pl.out_shape, false);
    if (!out)
        return tide_kernel_status(ctx);
    if (pl.count == 0)
        return fill_empty(ctx, s->op, dt, tide_tensor_data(out), &pl, shape);
    if (is_half(dt))
        return reduce_half(ctx, s->op, dt, tide_tensor_data(in), tide_tensor_data(out), &pl);
    return run_plan(ctx, rd, tide_dtype_size(dt), tide_tensor_data(in), tide_tensor_data(out), &pl);
}

static tide_status reduce_init(tide_kernel_ctx *ctx, void **state, int op)
{
    bool keep_dims = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "keep_dims", &keep_dims);
    *state = (void *)&states[op][keep_dims];
    return TIDE_OK;
}

static tide_status sum_init(tide_kernel_ctx *ctx, void **state) { return reduce_init(ctx, state, OP_SUM); }
static tide_status prod_init(tide_kernel_ctx *ctx, void **state) { return reduce_init(ctx, state, OP_PROD); }
static tide_status mean_init(tide_kernel_ctx *ctx, void **state) { return reduce_init(ctx, state, OP_MEAN); }
static tide_status max_init(tide_kernel_ctx *ctx, void **state) { return reduce_init(ctx, state, OP_MAX); }
static tide_status min_init(tide_kernel_ctx *ctx, void **state) { return reduce_init(ctx, state, OP_MIN); }

/* ---------------------------------------------------------------- ArgMax, ArgMin */

/* find: the first index in p[0..len) holding v (the first NaN when v is NaN); rows find their best
 * value with the Max (Min) row pass above, then its place.
 * col: for each column i < width of a block, the first r < len with the best x[r * rs + i]: one
 * pass of branch-free compares that skip NaN, then a rescan of the columns where a NaN was seen.
 * pick: among candidate indices into one row, the best value's (the first on ties). */
typedef int64_t (*find_fn)(const void *p, int64_t len, const void *v);
typedef void (*arg_col_fn)(const void *x, int64_t len, int64_t width, int64_t rs, int64_t *idx);
typedef int64_t (*pick_fn)(const void *row, const int64_t *cands, int64_t n);

typedef struct arg_reducer {
    find_fn find;
    arg_col_fn col[2];  /* ArgMax, ArgMin */
    pick_fn pick[2];
} arg_reducer;

#define GT(v, b) ((v) > (b))
#define LT(v, b) ((v) < (b))

#define DEFINE_ARG_DIR(NAME, T, CMP, ISNAN)                                                         \
    static void NAME##_col_scalar(const void *xv, int64_t len, int64_t width, int64_t rs,           \
                                  int64_t *idx)                                                     \
    {                                                                                               \
        const T *x = xv;                                                                            \
        T best[COLS];                                                                               \
        unsigned char nan[COLS];                                                                    \
        for (int64_t i = 0; i < width; i++) {                                                       \
            best[i] = x[i];                                                                         \
            idx[i] = 0;                                                                             \
            nan[i] = 0;                                                                             \
        }                                                                                           \
        for (int64_t r = 1; r < len; r++) {                                                         \
            const T *p = x + r * rs;                                                                \
            for (int64_t i = 0; i < width; i++) {                                                   \
                T v = p[i];                                                                         \
                bool better = CMP(v, best[i]);                                                      \
                best[i] = better ? v : best[i];                                                     \
                idx[i] = better ? r : idx[i];                                                       \
                nan[i] |= ISNAN(v);                                                                 \
            }                                                                                       \
        }                                                                                           \
        for (int64_t i = 0; i < width; i++)                                                         \
            if (nan[i] && !ISNAN(x[i]))                                                             \
                for (int64_t r = 1; r < len; r++)                                                   \
                    if (ISNAN(x[r * rs + i])) {                                                     \
                        idx[i] = r;                                                                 \
                        break;                                                                      \
                    }                                                                               \
    }                                                                                               \
    static int64_t NAME##_pick(const void *rowv, const int64_t *cands, int64_t n)                  \
    {                                                                                               \
        const T *row = rowv;                                                                        \
        int64_t best = cands[0];                                                                    \
        for (int64_t k = 1; k < n && !ISNAN(row[best]); k++)                                        \
            if (CMP(row[cands[k]], row[best]) || ISNAN(row[cands[k]]))                              \
                best = cands[k];                                                                    \
        return best;                                                                                \
    }

/* float32 and int32 columns, four at a time in SSE-sized vectors (GCC/Clang vector extensions) with
 * int32 row indices: a compare gives a lane mask that selects value and index. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#define VNAN_F(v) ((v) != (v))
#define VNAN_I(v) ((v) & 0)

#define DEFINE_ARG_VEC(NAME, T, VT, CMP, VNAN, ISNAN)                                               \
    static void NAME##_col(const void *xv, int64_t len, int64_t width, int64_t rs, int64_t *idx)    \
    {                                                                                               \
        if (len > INT32_MAX || width < 4) {                                                         \
            NAME##_col_scalar(xv, len, width, rs, idx);                                             \
            return;                                                                                 \
        }                                                                                           \
        const T *x = xv;                                                                            \
        int64_t w4 = width & ~(int64_t)3;                                                           \
        VT best[COLS / 4];                                                                          \
        v4i at[COLS / 4], nan[COLS / 4];                                                            \
        for (int64_t i = 0; i < w4; i += 4) {                                                       \
            memcpy(&best[i / 4], x + i, sizeof(VT));                                                \
            at[i / 4] = (v4i){0, 0, 0, 0};                                                          \
            nan[i / 4] = VNAN(best[i / 4]);                                                         \
        }                                                                                           \
        for (int64_t r = 1; r < len; r++) {                                                         \
            const T *p = x + r * rs;                                                                \
            v4i rv = {(int32_t)r, (int32_t)r, (int32_t)r, (int32_t)r};                              \
            for (int64_t i = 0; i < w4; i += 4) {                                                   \
                VT v;                                                                               \
                memcpy(&v, p + i, sizeof v);                                                        \
                v4i m = (v4i)CMP(v, best[i / 4]);                                                   \
                best[i / 4] = (VT)(((v4i)v & m) | ((v4i)best[i / 4] & ~m));                         \
                at[i / 4] = (rv & m) | (at[i / 4] & ~m);                                            \
                nan[i / 4] |= VNAN(v);                                                              \
            }                                                                                       \
        }                                                                                           \
        for (int64_t i = 0; i < w4; i++) {                                                          \
            idx[i] = at[i / 4][i % 4];                                                              \
            if (nan[i / 4][i % 4] && !ISNAN(x[i]))                                                  \
                for (int64_t r = 1; r < len; r++)                                                   \
                    if (ISNAN(x[r * rs + i])) {                                                     \
                        idx[i] = r;                                                                 \
                        break;                                                                      \
                    }                                                                               \
        }                                                                                           \
        if (w4 < width)                                                                             \
            NAME##_col_scalar(x + w4, len, width - w4, rs, idx + w4);                               \
    }

#define SCALAR_COL(NAME)                                                                            \
    static void NAME##_col(const void *x, int64_t len, int64_t width, int64_t rs, int64_t *idx)     \
    {                                                                                               \
        NAME##_col_scalar(x, len, width, rs, idx);                                                  \
    }
#define DEFINE_ARG(NAME, T, ISNAN, COL_MAX, COL_MIN)                                                \
    static int64_t NAME##_find(const void *pv, int64_t len, const void *vv)                        \
    {                                                                                               \
        const T *p = pv, v = *(const T *)vv;                                                        \
        if (ISNAN(v)) {                                                                             \
            for (int64_t r = 0; r < len; r++)                                                       \
                if (ISNAN(p[r]))                                                                    \
                    return r;                                                                       \
        }                                                                                           \
        for (int64_t r = 0; r < len; r++)                                                           \
            if (p[r] == v)                                                                          \
                return r;                                                                           \
        return 0;                                                                                   \
    }                                                                                               \
    DEFINE_ARG_DIR(NAME##_max, T, GT, ISNAN)                                                        \
    DEFINE_ARG_DIR(NAME##_min, T, LT, ISNAN)                                                        \
    COL_MAX                                                                                         \
    COL_MIN                                                                                         \
    static const arg_reducer NAME = {NAME##_find,                                                   \
                                     {NAME##_max_col, NAME##_min_col},                              \
                                     {NAME##_max_pick, NAME##_min_pick}};

DEFINE_ARG(arg_f32, float, FNAN, DEFINE_ARG_VEC(arg_f32_max, float, v4f, GT, VNAN_F, FNAN),
           DEFINE_ARG_VEC(arg_f32_min, float, v4f, LT, VNAN_F, FNAN))
DEFINE_ARG(arg_i32, int32_t, INAN, DEFINE_ARG_VEC(arg_i32_max, int32_t, v4i, GT, VNAN_I, INAN),
           DEFINE_ARG_VEC(arg_i32_min, int32_t, v4i, LT, VNAN_I, INAN))
DEFINE_ARG(arg_f64, double, FNAN, SCALAR_COL(arg_f64_max), SCALAR_COL(arg_f64_min))
DEFINE_ARG(arg_i8, int8_t, INAN, SCALAR_COL(arg_i8_max), SCALAR_COL(arg_i8_min))
DEFINE_ARG(arg_i16, int16_t, INAN, SCALAR_COL(arg_i16_max), SCALAR_COL(arg_i16_min))
DEFINE_ARG(arg_i64, int64_t, INAN, SCALAR_COL(arg_i64_max), SCALAR_COL(arg_i64_min))
DEFINE_ARG(arg_u8, uint8_t, INAN, SCALAR_COL(arg_u8_max), SCALAR_COL(arg_u8_min))
DEFINE_ARG(arg_u16, uint16_t, INAN, SCALAR_COL(arg_u16_max), SCALAR_COL(arg_u16_min))

static const arg_reducer *const arg_reducers[TIDE_NUM_DTYPES] = DTYPE_ROW(arg);

typedef struct arg_job {
    const arg_reducer *ar;
    const reducer *best;       /* Max or Min of the dtype: the best value of a row */
    int dir;                   /* 0 ArgMax, 1 ArgMin */
    const char *x;
    size_t size;
    int64_t O, R, I, nblk, chunk;
    int64_t *partial;
    void *out;
    bool out32;
} arg_job;

static void put_index(const arg_job *j, int64_t k, int64_t idx)
{
    if (j->out32)
        ((int32_t *)j->out)[k] = (int32_t)idx;
    else
        ((int64_t *)j->out)[k] = idx;
}

/* The best index of row (o, r0 .. r0 + len): the best value by the Max/Min row pass, then its place. */
static int64_t arg_row(const arg_job *j, int64_t o, int64_t r0, int64_t len)
{
    const char *p = j->x + (size_t)(o * j->R + r0) * j->size;
    union { float f; double d; int64_t i; } v; /* one element of any real dtype */
    j->best->row[V_IN_OUT](p, &v, 1, len, len, len);
    return r0 + j->ar->find(p, len, &v);
}

static void arg_rows_task(int64_t b, int64_t e, void *arg)
{
    const arg_job *j = arg;
    for (int64_t o = b; o < e; o++)
        put_index(j, o, arg_row(j, o, 0, j->R));
}

static void arg_chunks_task(int64_t b, int64_t e, void *arg)
{
    const arg_job *j = arg;
    for (int64_t p = b; p < e; p++) {
        int64_t r0 = p * j->chunk, len = j->R - r0 < j->chunk ? j->R - r0 : j->chunk;
        for (int64_t o = 0; o < j->O; o++)
            j->partial[o * MAX_CHUNKS + p] = arg_row(j, o, r0, len);
    }
}

static void arg_cols_task(int64_t b, int64_t e, void *arg)
{
    const arg_job *j = arg;
    int64_t idx[COLS];
    for (int64_t u = b; u < e; u++) {
        int64_t o = u / j->nblk, c = (u % j->nblk) * COLS, w = j->I - c < COLS ? j->I - c : COLS;
        j->ar->col[j->dir](j->x + (size_t)(o * j->R * j->I + c) * j->size, j->R, w, j->I, idx);
        for (int64_t i = 0; i < w; i++)
            put_index(j, o * j->I + c + i, idx[i]);
    }
}

static tide_status arg_run(tide_kernel_ctx *ctx, arg_job *j)
{
    double cost = NS_PER_ELEMENT * 2;
    if (j->I > 1) {
        j->nblk = (j->I + COLS - 1) / COLS;
        tide_kernel_parallel_for(ctx, j->O * j->nblk, cost * (double)(j->R * COLS), arg_cols_task, j);
        return TIDE_OK;
    }
    if (j->O >= 16 || j->R < 2 * SPLIT || j->O * j->R < SMALL) {
        tide_kernel_parallel_for(ctx, j->O, cost * (double)j->R, arg_rows_task, j);
        return TIDE_OK;
    }
    int64_t P = (j->R + SPLIT - 1) / SPLIT;
    P = P > MAX_CHUNKS ? MAX_CHUNKS : P;
    j->chunk = (j->R + P - 1) / P;
    P = (j->R + j->chunk - 1) / j->chunk;
    j->partial = malloc((size_t)(j->O * MAX_CHUNKS) * sizeof *j->partial);
    if (!j->partial)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for partial results");
    tide_kernel_parallel_for(ctx, P, cost * (double)(j->chunk * j->O), arg_chunks_task, j);
    for (int64_t o = 0; o < j->O; o++)
        put_index(j, o, j->ar->pick[j->dir](j->x + (size_t)(o * j->R) * j->size,
                                            j->partial + o * MAX_CHUNKS, P));
    free(j->partial);
    return TIDE_OK;
}

/* Checks the dimension input; *axis receives it normalised. Same messages as the shape function. */
static tide_status arg_axis(tide_kernel_ctx *ctx, const tide_shape *in, const tide_tensor *dim, int *axis)
{
    char sb[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(dim) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dimension must be a scalar, got shape %s",
                                 tide_shape_format(tide_tensor_shape(dim), sb, sizeof sb));
    if (in->rank == 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "the input must have rank >= 1 to reduce along a dimension, got a scalar");
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_reduce_arg_axis(in, tide_op_int_at(dim, 0), axis, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

static tide_status arg_compute(tide_kernel_ctx *ctx)
{
    int dir = *(const int *)tide_kernel_state(ctx) == OP_ARGMAX ? 0 : 1;
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *shape = tide_tensor_shape(in);
    tide_dtype dt = tide_tensor_dtype(in);
    int axis = 0;
    tide_status st = arg_axis(ctx, shape, tide_kernel_input(ctx, 1), &axis);
    if (st != TIDE_OK)
        return st;
    arg_job j = {.dir = dir, .O = 1, .R = shape->dims[axis], .I = 1,
                 .out32 = tide_kernel_output_dtype(ctx, 0) == TIDE_INT32};
    if (j.out32 && j.R > INT32_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "dimension %d has %lld elements: indices do not fit output_type int32", axis,
                                 (long long)j.R);
    tide_shape out_shape = {.rank = 0};
    for (int i = 0; i < shape->rank; i++) {
        if (i != axis)
            out_shape.dims[out_shape.rank++] = shape->dims[i];
        if (i < axis)
            j.O *= shape->dims[i];
        else if (i > axis)
            j.I *= shape->dims[i];
    }
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &out_shape, false);
    if (!out)
        return tide_kernel_status(ctx);
    if (tide_shape_num_elements(&out_shape) == 0)
        return TIDE_OK;
    tide_dtype work = is_half(dt) ? TIDE_FLOAT32 : dt;
    float *fx = is_half(dt) ? half_to_float(dt, tide_tensor_data(in), tide_tensor_num_elements(in)) : NULL;
    if (is_half(dt) && !fx)
        return oom(ctx, tide_tensor_num_elements(in));
    j.ar = arg_reducers[work];
    j.best = reducers[dir ? OP_MIN : OP_MAX][work];
    j.x = fx ? (const char *)fx : tide_tensor_data(in);
    j.size = tide_dtype_size(work);
    j.out = tide_tensor_data(out);
    st = arg_run(ctx, &j);
    free(fx);
    return st;
}

static const int argmax_op = OP_ARGMAX, argmin_op = OP_ARGMIN;

static tide_status argmax_init(tide_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    *state = (void *)&argmax_op;
    return TIDE_OK;
}

static tide_status argmin_init(tide_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    *state = (void *)&argmin_op;
    return TIDE_OK;
}

static void register_reduce_kernels(void)
{
    static const struct {
        const char *op;
        tide_status (*init)(tide_kernel_ctx *, void **);
        tide_status (*compute)(tide_kernel_ctx *);
    } kernels[] = {
        {"Sum", sum_init, reduce_compute},       {"Prod", prod_init, reduce_compute},
        {"Mean", mean_init, reduce_compute},     {"Max", max_init, reduce_compute},
        {"Min", min_init, reduce_compute},       {"ArgMax", argmax_init, arg_compute},
        {"ArgMin", argmin_init, arg_compute},
        {"All", min_init, reduce_compute},       {"Any", max_init, reduce_compute},
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = kernels[i].op, .device_type = "cpu",
                                                  .flags = TIDE_KERNEL_EXPENSIVE,
                                                  .init = kernels[i].init,
                                                  .compute = kernels[i].compute});
}
TIDE_REGISTER(register_reduce_kernels)
