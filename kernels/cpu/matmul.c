/* matmul.c — CPU kernels of MatMul, BatchMatMulV2 and BatchMatMul (V2 with equal batch dimensions).
 *
 * Both reduce to one job: `batches` products C[M,N] = op(A) op(B), where op transposes (and for
 * BatchMatMul's complex adjoints conjugates) as the attrs say. How a job runs:
 *   - float32/float64/complex64/complex128 go to BLAS (cblas_?gemm, row-major, transposes passed as
 *     flags, beta = 0 so the output is never zero-filled or copied). A product too small for BLAS's
 *     call overhead to pay (M*N*K <= SMALL_WORK, real types only) takes the loops below instead.
 *     float32 products take tide's own GEMM instead of cblas_sgemm where the CPU has AVX-512
 *     (gemm_avx512.c; $TIDE_CPU_ISA=avx2 or portable keeps them on OpenBLAS) and the output is
 *     large enough for it to win (tide_gemm_f32_suits: at least 8 x 8 and 1024 elements): Debian's
 *     OpenBLAS runs its AVX2 kernels on AVX-512 CPUs, and the own GEMM ran the MLP's products at
 *     about twice its speed per core (docs/benchmarks.md). If its packing buffer cannot be allocated, the block
 *     goes to cblas_sgemm after all.
 *     OpenBLAS runs single-threaded (set when the library loads): one thread pool, the engine's, so
 *     OpenBLAS's own threads never spin beside the executor's on the same cores. Batches are spread
 *     over the engine's threads; a single large product is cut into one block of output columns
 *     (or rows, whichever dimension is longer) per thread, each its own gemm call.
 *   - int32/int64 use blocked i-k-j loops computed in the unsigned type of the same width, so an
 *     overflowing sum wraps around (two's complement) instead of being undefined. The rows of all
 *     batches are split over the engine's threads.
 *   - float16/bfloat16 run the float32 path on float32 copies of the operands, the product rounded
 *     once on store (tide_kernel_compute_in_float32): float32 multiply-adds, as TensorFlow's CPU
 *     kernels compute halves.
 * An inner dimension of 0 gives zeros; an empty output does no work and never reaches BLAS. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "../../engine/ops/linalg_ops.h"
#include "../../engine/tide_op.h"
#include "cpu_util.h"
#include "gemm.h"

/* Products with at most this many multiply-adds skip BLAS: below it (about 6 x 6 x 6) the loops beat
 * the ~100 ns a cblas call costs (measured on the 2-core development machine). */
#define SMALL_WORK 256
/* Batches of products with less work (multiply-adds) than this are not worth spreading over threads. */
#define BLAS_SERIAL_WORK 262144.0
/* A single product is split over the threads only above this much work: below it, waking a second
 * thread costs more than it saves (measured with tests/bench/bench_matmul and /tmp experiments: at
 * 256^3 = 1.7e7 a split ran at 51 GFLOP/s against 85 unsplit; at 100x784x512 = 4e7 splitting gains
 * 35%). */
#define BLAS_SPLIT_WORK 3.0e7
/* The same for the own GEMM. 4e6 (50 us of one core) split the MLP's 128 x 256 x 512 products too, but
 * then train_mlp_sim's run on /sim:0 differed from the host's in 3 runs of 8 (8 of 8 the same at
 * 3e7; loaded machine, 2026-12-02): a product split over the pool while the simulated device runs it
 * is suspected (the own GEMM's results do not depend on the split), cause not found yet. Until it is,
 * the threshold stays OpenBLAS's. */
#define OWN_SPLIT_WORK 3.0e7
/* Tile of the loops: KC rows of B by NC columns (a packed tile is at most 64 KiB of int64). */
#define KC 64
#define NC 128

/* The attrs of a node, parsed once in init: which operand is transposed (adjoint for BatchMatMul). */
typedef struct mm_config {
    bool ta, tb;
    bool equal_batches; /* BatchMatMul (the first version): batch dimensions must agree */
} mm_config;

/* By ta + 2 tb + 4 equal_batches. */
static mm_config configs[8] = {{false, false, false}, {true, false, false}, {false, true, false},
                               {true, true, false},   {false, false, true}, {true, false, true},
                               {false, true, true},   {true, true, true}};

typedef struct mm_job {
    tide_dtype dt;
    const char *a, *b; /* the inputs' data */
    char *c;           /* the output's data */
    int64_t m, n, k;
    bool ta, tb;       /* transposed operands */
    bool conj;         /* complex adjoints: transposed operands are also conjugated */
    size_t esize;      /* bytes per element */
    int64_t batches;
    tide_bcast bc;     /* batch broadcasting (BatchMatMul); unused when batches == 1 */
    bool own_gemm;     /* float32 through tide_gemm_f32 rather than cblas_sgemm */
} mm_job;

/* ---------------------------------------------------------------- loops (integers, small floats) */

/* c[0, n) += a * b[0, n), unrolled by 8 so that GCC vectorises it at -O2 (restrict parameters keep
 * that true once inlined). UT is an unsigned type for the integers (wrap-around, no undefined
 * overflow) and the float type itself for the floats. */
#define DEFINE_AXPY(NAME, UT)                                                                   \
    static inline void NAME(UT *restrict c, const UT *restrict b, UT a, int64_t n)              \
    {                                                                                           \
        int64_t j = 0;                                                                          \
        for (; j + 8 <= n; j += 8) {                                                            \
            c[j] += a * b[j];                                                                   \
            c[j + 1] += a * b[j + 1];                                                           \
            c[j + 2] += a * b[j + 2];                                                           \
            c[j + 3] += a * b[j + 3];                                                           \
            c[j + 4] += a * b[j + 4];                                                           \
            c[j + 5] += a * b[j + 5];                                                           \
            c[j + 6] += a * b[j + 6];                                                           \
            c[j + 7] += a * b[j + 7];                                                           \
        }                                                                                       \
        for (; j < n; j++)                                                                      \
            c[j] += a * b[j];                                                                   \
    }

/* C rows [i0, i1) = op(A) op(B), i-k-j order over KC x NC tiles of B so a tile and a row of C stay in
 * cache; a transposed B is packed tile by tile so the inner loop always runs along contiguous rows. */
#define DEFINE_MM_LOOP(NAME, UT, AXPY)                                                          \
    DEFINE_AXPY(AXPY, UT)                                                                       \
    static void NAME(const UT *a, const UT *b, UT *c, int64_t m, int64_t n, int64_t k, bool ta,  \
                     bool tb, int64_t i0, int64_t i1)                                            \
    {                                                                                            \
        UT pack[KC * NC];                                                                        \
        for (int64_t i = i0; i < i1; i++)                                                        \
            memset(c + i * n, 0, (size_t)n * sizeof(UT));                                        \
        for (int64_t jc = 0; jc < n; jc += NC) {                                                 \
            int64_t nc = n - jc < NC ? n - jc : NC;                                              \
            for (int64_t kc = 0; kc < k; kc += KC) {                                             \
                int64_t kl = k - kc < KC ? k - kc : KC, ldp = n;                                 \
                const UT *tile = b + kc * n + jc;                                                \
                if (tb) {                                                                        \
                    for (int64_t j = 0; j < nc; j++)                                             \
                        for (int64_t kk = 0; kk < kl; kk++)                                      \
                            pack[kk * nc + j] = b[(jc + j) * k + kc + kk];                       \
                    tile = pack;                                                                 \
                    ldp = nc;                                                                    \
                }                                                                                \
                for (int64_t i = i0; i < i1; i++)                                                \
                    for (int64_t kk = 0; kk < kl; kk++)                                          \
                        AXPY(c + i * n + jc, tile + kk * ldp,                                    \
                             ta ? a[(kc + kk) * m + i] : a[i * k + kc + kk], nc);                \
            }                                                                                    \
        }                                                                                        \
    }

DEFINE_MM_LOOP(mm_loop_f32, float, axpy_f32)
DEFINE_MM_LOOP(mm_loop_f64, double, axpy_f64)
DEFINE_MM_LOOP(mm_loop_u32, uint32_t, axpy_u32)
DEFINE_MM_LOOP(mm_loop_u64, uint64_t, axpy_u64)

/* Offsets (in matrices) of batch `batch`'s operands. */
static void batch_operands(const mm_job *j, int64_t batch, int64_t *ia, int64_t *ib)
{
    if (j->batches == 1) {
        *ia = *ib = 0;
        return;
    }
    int64_t row = batch / j->bc.inner, col = batch % j->bc.inner;
    tide_bcast_row(&j->bc, row, ia, ib);
    *ia += col * j->bc.a_inner;
    *ib += col * j->bc.b_inner;
}

/* Rows [i0, i1) of batch `batch` by the loops. Signed integers are read and written through their
 * unsigned counterparts, which C allows to alias them. */
static void loop_rows(const mm_job *j, int64_t batch, int64_t i0, int64_t i1)
{
    int64_t ia, ib;
    batch_operands(j, batch, &ia, &ib);
    const void *a = j->a + (size_t)(ia * j->m * j->k) * j->esize;
    const void *b = j->b + (size_t)(ib * j->k * j->n) * j->esize;
    void *c = j->c + (size_t)(batch * j->m * j->n) * j->esize;
    switch (j->dt) {
    case TIDE_FLOAT32: mm_loop_f32(a, b, c, j->m, j->n, j->k, j->ta, j->tb, i0, i1); break;
    case TIDE_FLOAT64: mm_loop_f64(a, b, c, j->m, j->n, j->k, j->ta, j->tb, i0, i1); break;
    case TIDE_INT32: mm_loop_u32(a, b, c, j->m, j->n, j->k, j->ta, j->tb, i0, i1); break;
    case TIDE_INT64: mm_loop_u64(a, b, c, j->m, j->n, j->k, j->ta, j->tb, i0, i1); break;
    default: break; /* mm_run sends no other dtype here */
    }
}

/* parallel_for body over the rows of all batches: unit u is row u % M of batch u / M. */
static void loop_units(int64_t begin, int64_t end, void *arg)
{
    const mm_job *j = arg;
    while (begin < end) {
        int64_t batch = begin / j->m, i0 = begin % j->m;
        int64_t i1 = i0 + (end - begin) < j->m ? i0 + (end - begin) : j->m;
        loop_rows(j, batch, i0, i1);
        begin += i1 - i0;
    }
}

/* ---------------------------------------------------------------- BLAS */

/* Block [i0, i1) x [j0, j1) of batch `batch`'s output: one gemm call over the matching rows of op(A)
 * and columns of op(B), written in place into the full output (ldc = N). */
static void blas_block(const mm_job *j, int64_t batch, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    int64_t ia, ib;
    batch_operands(j, batch, &ia, &ib);
    const int lda = (int)(j->ta ? j->m : j->k), ldb = (int)(j->tb ? j->k : j->n), ldc = (int)j->n;
    /* Row i of op(A) starts at a + i*lda (not transposed) or a + i (transposed); column j of op(B)
     * at b + j (not transposed) or b + j*ldb (transposed). */
    const char *a = j->a + (size_t)(ia * j->m * j->k + (j->ta ? i0 : i0 * lda)) * j->esize;
    const char *b = j->b + (size_t)(ib * j->k * j->n + (j->tb ? j0 * ldb : j0)) * j->esize;
    char *c = j->c + (size_t)(batch * j->m * j->n + i0 * ldc + j0) * j->esize;
    const int m = (int)(i1 - i0), n = (int)(j1 - j0), k = (int)j->k; /* mm_run checked they fit */
    const enum CBLAS_TRANSPOSE trans = j->conj ? CblasConjTrans : CblasTrans;
    const enum CBLAS_TRANSPOSE op_a = j->ta ? trans : CblasNoTrans, op_b = j->tb ? trans : CblasNoTrans;
    static const float one_c[2] = {1.0f, 0.0f}, zero_c[2] = {0.0f, 0.0f};
    static const double one_z[2] = {1.0, 0.0}, zero_z[2] = {0.0, 0.0};
    switch (j->dt) {
    case TIDE_FLOAT32:
        if (j->own_gemm && tide_gemm_f32(j->ta, j->tb, m, n, k, (const float *)a, lda, (const float *)b, ldb,
                                         (float *)c, ldc))
            break;
        cblas_sgemm(CblasRowMajor, op_a, op_b, m, n, k, 1.0f, (const float *)a, lda, (const float *)b, ldb,
                    0.0f, (float *)c, ldc);
        break;
    case TIDE_FLOAT64:
        cblas_dgemm(CblasRowMajor, op_a, op_b, m, n, k, 1.0, (const double *)a, lda, (const double *)b, ldb,
                    0.0, (double *)c, ldc);
        break;
    case TIDE_COMPLEX64:
        cblas_cgemm(CblasRowMajor, op_a, op_b, m, n, k, one_c, a, lda, b, ldb, zero_c, c, ldc);
        break;
    case TIDE_COMPLEX128:
        cblas_zgemm(CblasRowMajor, op_a, op_b, m, n, k, one_z, a, lda, b, ldb, zero_z, c, ldc);
        break;
    default: break; /* mm_run sends no other dtype here */
    }
}

static void blas_batches(int64_t begin, int64_t end, void *arg)
{
    const mm_job *j = arg;
    for (int64_t b = begin; b < end; b++)
        blas_block(j, b, 0, j->m, 0, j->n);
}

/* A single product cut into `parts` blocks along its longer output dimension (a multiple of 16 wide,
 * so each block keeps BLAS's vector width; of the own GEMM's tile, 14 rows or 32 columns); unit p is
 * block p. */
typedef struct mm_split {
    const mm_job *job;
    int64_t parts;
} mm_split;

static void blas_split(int64_t begin, int64_t end, void *arg)
{
    const mm_split *sp = arg;
    const mm_job *j = sp->job;
    bool by_rows = j->m >= j->n;
    int64_t len = by_rows ? j->m : j->n;
    int64_t unit = !j->own_gemm ? 16 : by_rows ? TIDE_GEMM_MR : TIDE_GEMM_NR;
    int64_t step = ((len + sp->parts - 1) / sp->parts + unit - 1) / unit * unit;
    for (int64_t p = begin; p < end; p++) {
        int64_t lo = p * step, hi = lo + step < len ? lo + step : len;
        if (lo >= hi)
            continue;
        if (by_rows)
            blas_block(j, 0, lo, hi, 0, j->n);
        else
            blas_block(j, 0, 0, j->m, lo, hi);
    }
}

/* OpenBLAS threads nothing itself: parallelism comes from the engine's pool (see the top comment). */
static void single_threaded_blas(void) { openblas_set_num_threads(1); }
TIDE_REGISTER(single_threaded_blas)

/* ---------------------------------------------------------------- running a job */

static bool is_blas_type(tide_dtype dt)
{
    return dt == TIDE_FLOAT32 || dt == TIDE_FLOAT64 || dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128;
}

/* Allocates the output (shape out) and computes every batch of j into it. */
static tide_status mm_run(tide_kernel_ctx *ctx, mm_job *j, const tide_shape *out)
{
    const double work = (double)j->m * (double)j->n * (double)j->k;
    const bool fits_blas = j->m <= INT_MAX && j->n <= INT_MAX && j->k <= INT_MAX;
    const bool blas = is_blas_type(j->dt) &&
                      (tide_dtype_is_complex(j->dt) || (work > SMALL_WORK && fits_blas));
    if (blas && !fits_blas) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "output %s: a dimension over %d is too large for BLAS",
                                 tide_shape_format(out, buf, sizeof buf), INT_MAX);
    }
    const bool empty = j->batches == 0 || j->m == 0 || j->n == 0;
    tide_tensor *t = tide_kernel_alloc_output(ctx, 0, out, blas && j->k == 0 && !empty);
    if (!t)
        return tide_kernel_status(ctx);
    if (empty || (blas && j->k == 0))
        return TIDE_OK;
    j->c = tide_tensor_data(t);
    j->esize = tide_dtype_size(j->dt);
    j->own_gemm = j->dt == TIDE_FLOAT32 && tide_gemm_f32_available() && tide_gemm_f32_suits(j->m, j->n);
    if (!blas)
        tide_kernel_parallel_for(ctx, j->batches * j->m, 0.5 * (double)j->n * (double)j->k + 1.0,
                                 loop_units, j);
    else if (j->batches > 1 || work < (j->own_gemm ? OWN_SPLIT_WORK : BLAS_SPLIT_WORK) ||
             tide_kernel_num_threads(ctx) < 2)
        tide_kernel_parallel_for(ctx, j->batches, 0.05 * work + 200.0, blas_batches, j);
    else {
        mm_split sp = {j, tide_kernel_num_threads(ctx)};
        tide_kernel_parallel_for(ctx, sp.parts, 0.05 * work / (double)sp.parts + 200.0, blas_split, &sp);
    }
    return TIDE_OK;
}

static tide_status mm_init(tide_kernel_ctx *ctx, void **state, const char *flag_a, const char *flag_b)
{
    bool ta = false, tb = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), flag_a, &ta);
    tide_attrs_get_bool(tide_kernel_attrs(ctx), flag_b, &tb);
    bool equal_batches = strcmp(tide_kernel_op_name(ctx), "BatchMatMul") == 0;
    /* shared and never written: nothing to free */
    *state = &configs[(ta ? 1 : 0) + (tb ? 2 : 0) + (equal_batches ? 4 : 0)];
    return TIDE_OK;
}

static const char *yes_no(bool v) { return v ? "true" : "false"; }

/* ---------------------------------------------------------------- MatMul */

static tide_status matmul_init(tide_kernel_ctx *ctx, void **state)
{
    return mm_init(ctx, state, "transpose_a", "transpose_b");
}

static tide_status matmul_compute(tide_kernel_ctx *ctx)
{
    const mm_config *cfg = tide_kernel_state(ctx);
    const tide_tensor *a = tide_kernel_input(ctx, 0), *b = tide_kernel_input(ctx, 1);
    const tide_shape *sa = tide_tensor_shape(a), *sb = tide_tensor_shape(b);
    char x[TIDE_SHAPE_STR_MAX], y[TIDE_SHAPE_STR_MAX];
    if (sa->rank != 2 || sb->rank != 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "inputs must be matrices (rank 2): a has shape %s, b has shape %s",
                                 tide_shape_format(sa, x, sizeof x), tide_shape_format(sb, y, sizeof y));
    mm_job j = {.dt = tide_tensor_dtype(a), .a = tide_tensor_data(a), .b = tide_tensor_data(b),
                .ta = cfg->ta, .tb = cfg->tb, .batches = 1};
    j.m = sa->dims[cfg->ta ? 1 : 0];
    j.k = sa->dims[cfg->ta ? 0 : 1];
    j.n = sb->dims[cfg->tb ? 0 : 1];
    if (sb->dims[cfg->tb ? 1 : 0] != j.k)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "inner dimensions differ: a %s (transpose_a=%s) gives %lld columns, "
                                 "b %s (transpose_b=%s) gives %lld rows",
                                 tide_shape_format(sa, x, sizeof x), yes_no(cfg->ta), (long long)j.k,
                                 tide_shape_format(sb, y, sizeof y), yes_no(cfg->tb),
                                 (long long)sb->dims[cfg->tb ? 1 : 0]);
    tide_shape out = tide_shape_matrix(j.m, j.n);
    return mm_run(ctx, &j, &out);
}

/* ---------------------------------------------------------------- BatchMatMul */

static tide_status batch_matmul_init(tide_kernel_ctx *ctx, void **state)
{
    return mm_init(ctx, state, "adj_x", "adj_y");
}

static tide_status batch_matmul_compute(tide_kernel_ctx *ctx)
{
    const mm_config *cfg = tide_kernel_state(ctx);
    const tide_tensor *x = tide_kernel_input(ctx, 0), *y = tide_kernel_input(ctx, 1);
    const tide_shape *sx = tide_tensor_shape(x), *sy = tide_tensor_shape(y);
    char bx[TIDE_SHAPE_STR_MAX], by[TIDE_SHAPE_STR_MAX];
    tide_shape_format(sx, bx, sizeof bx);
    tide_shape_format(sy, by, sizeof by);
    if (sx->rank < 2 || sy->rank < 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "inputs must have rank >= 2: x has shape %s, y has shape %s", bx, by);
    const int rx = sx->rank, ry = sy->rank;
    mm_job j = {.dt = tide_tensor_dtype(x), .a = tide_tensor_data(x), .b = tide_tensor_data(y),
                .ta = cfg->ta, .tb = cfg->tb, .conj = tide_dtype_is_complex(tide_tensor_dtype(x))};
    j.m = sx->dims[rx - (cfg->ta ? 1 : 2)];
    j.k = sx->dims[rx - (cfg->ta ? 2 : 1)];
    j.n = sy->dims[ry - (cfg->tb ? 2 : 1)];
    int64_t ky = sy->dims[ry - (cfg->tb ? 1 : 2)];
    if (ky != j.k)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "inner dimensions differ: x %s (adj_x=%s) gives %lld columns, "
                                 "y %s (adj_y=%s) gives %lld rows", bx, yes_no(cfg->ta),
                                 (long long)j.k, by, yes_no(cfg->tb), (long long)ky);
    tide_shape batch_x = tide_shape_make(rx - 2, sx->dims), batch_y = tide_shape_make(ry - 2, sy->dims);
    tide_shape same;
    if (cfg->equal_batches && !tide_linalg_same_batches(&batch_x, &batch_y, &same))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "batch dimensions differ: x %s, y %s "
                                 "(BatchMatMul does not broadcast them; BatchMatMulV2 does)", bx, by);
    if (!tide_bcast_init(&j.bc, &batch_x, &batch_y))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "batch dimensions do not broadcast: x %s, y %s", bx, by);
    tide_shape out = j.bc.out;
    out.dims[out.rank] = j.m;
    out.dims[out.rank + 1] = j.n;
    out.rank += 2;
    j.batches = j.bc.out_n;
    return mm_run(ctx, &j, &out);
}

/* ---------------------------------------------------------------- float16 and bfloat16 */

static tide_status matmul_any(tide_kernel_ctx *ctx) { return tide_kernel_compute_in_float32(ctx, matmul_compute); }
static tide_status batch_matmul_any(tide_kernel_ctx *ctx)
{
    return tide_kernel_compute_in_float32(ctx, batch_matmul_compute);
}

static void register_matmul_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "MatMul", .device_type = "cpu",
                                              .flags = TIDE_KERNEL_EXPENSIVE, .init = matmul_init,
                                              .compute = matmul_any});
    static const char *const batch_ops[] = {"BatchMatMulV2", "BatchMatMul"};
    for (int i = 0; i < 2; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = batch_ops[i], .device_type = "cpu",
                                                  .flags = TIDE_KERNEL_EXPENSIVE,
                                                  .init = batch_matmul_init,
                                                  .compute = batch_matmul_any});
}
TIDE_REGISTER(register_matmul_kernels)
