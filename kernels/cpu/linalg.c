/* linalg.c — CPU kernels of MatrixInverse and MatrixDeterminant, through LAPACK's LU factorisation
 * (getrf, getri) as OpenBLAS ships it. No lapacke header is installed, so the Fortran entry points
 * are declared here (every argument by pointer; none takes a character, so no hidden lengths).
 *
 * LAPACK is column-major: a row-major buffer holding B is, to LAPACK, B^T. Inversion and the
 * determinant commute with transposition, so a row-major copy of B inverted in place by getrf+getri
 * holds inv(B) row-major, and det(B^T) = det(B). MatrixInverse's adjoint copies B^H into the output
 * first. Batches of small matrices are spread over the engine's threads (OpenBLAS runs their
 * factorisations single-threaded); big ones go one after another using OpenBLAS's threads. */
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/linalg_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void cgetrf_(const int *m, const int *n, float complex *a, const int *lda, int *ipiv, int *info);
void zgetrf_(const int *m, const int *n, double complex *a, const int *lda, int *ipiv, int *info);
void sgetri_(const int *n, float *a, const int *lda, const int *ipiv, float *work, const int *lwork,
             int *info);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work,
             const int *lwork, int *info);
void cgetri_(const int *n, float complex *a, const int *lda, const int *ipiv, float complex *work,
             const int *lwork, int *info);
void zgetri_(const int *n, double complex *a, const int *lda, const int *ipiv, double complex *work,
             const int *lwork, int *info);

/* Matrices up to this size are factorised in parallel batches; bigger ones one at a time. */
#define PARALLEL_BATCH_MAX_N 128
/* getri's workspace per matrix row: its block size (ILAENV gives 64 for these routines). */
#define GETRI_BLOCK 64

typedef struct lu_job {
    tide_kernel_ctx *ctx;
    tide_dtype dt;
    const char *in;
    char *out;
    int n;              /* matrix size */
    int64_t batches;
    size_t esize;       /* bytes per element */
    bool adjoint;       /* MatrixInverse: invert the adjoint */
    int lwork;          /* getri workspace, elements */
    atomic_llong bad;   /* smallest batch element found singular; LLONG_MAX while none */
    atomic_int failed;  /* a chunk ran out of memory (1) or LAPACK rejected an argument (2) */
} lu_job;

static void note_singular(lu_job *j, int64_t b)
{
    long long cur = atomic_load(&j->bad);
    while (b < cur && !atomic_compare_exchange_weak(&j->bad, &cur, (long long)b)) {
    }
}

/* ---------------------------------------------------------------- MatrixInverse */

static inline float conj_f32(float v) { return v; }
static inline double conj_f64(double v) { return v; }

/* Inverts batch elements [b0, b1) of j, using ipiv (n ints) and work (lwork elements). Returns the
 * first singular one, -1 if none, -2 if LAPACK rejected an argument. */
#define DEFINE_INVERT(NAME, T, GETRF, GETRI, CONJ)                                              \
    static int64_t NAME(const lu_job *j, int64_t b0, int64_t b1, int *ipiv, void *work)         \
    {                                                                                           \
        const int n = j->n, lwork = j->lwork;                                                   \
        const int64_t nn = (int64_t)n * n;                                                      \
        for (int64_t b = b0; b < b1 && !tide_kernel_cancelled(j->ctx); b++) {                   \
            const T *src = (const T *)j->in + b * nn;                                           \
            T *dst = (T *)j->out + b * nn;                                                      \
            if (j->adjoint) {                                                                   \
                for (int r = 0; r < n; r++)                                                     \
                    for (int c = 0; c < n; c++)                                                 \
                        dst[(int64_t)r * n + c] = CONJ(src[(int64_t)c * n + r]);                \
            } else {                                                                            \
                memcpy(dst, src, (size_t)nn * sizeof(T));                                       \
            }                                                                                   \
            int info = 0;                                                                       \
            GETRF(&n, &n, dst, &n, ipiv, &info);                                                \
            if (info == 0)                                                                      \
                GETRI(&n, dst, &n, ipiv, work, &lwork, &info);                                  \
            if (info != 0)                                                                      \
                return info > 0 ? b : -2;                                                       \
        }                                                                                       \
        return -1;                                                                              \
    }

DEFINE_INVERT(invert_f32, float, sgetrf_, sgetri_, conj_f32)
DEFINE_INVERT(invert_f64, double, dgetrf_, dgetri_, conj_f64)
DEFINE_INVERT(invert_c64, float complex, cgetrf_, cgetri_, conjf)
DEFINE_INVERT(invert_c128, double complex, zgetrf_, zgetri_, conj)

static void invert_chunk(int64_t b0, int64_t b1, void *arg)
{
    lu_job *j = arg;
    int *ipiv = malloc((size_t)j->n * sizeof *ipiv);
    void *work = malloc((size_t)j->lwork * j->esize);
    int64_t r = -1;
    if (!ipiv || !work) {
        atomic_store(&j->failed, 1);
    } else {
        switch (j->dt) {
        case TIDE_FLOAT32: r = invert_f32(j, b0, b1, ipiv, work); break;
        case TIDE_FLOAT64: r = invert_f64(j, b0, b1, ipiv, work); break;
        case TIDE_COMPLEX64: r = invert_c64(j, b0, b1, ipiv, work); break;
        case TIDE_COMPLEX128: r = invert_c128(j, b0, b1, ipiv, work); break;
        default: break; /* the op allows no other dtype */
        }
    }
    if (r >= 0)
        note_singular(j, r);
    else if (r == -2)
        atomic_store(&j->failed, 2);
    free(ipiv);
    free(work);
}

/* ---------------------------------------------------------------- MatrixDeterminant */

/* Multiplies the scaled product (*m) * 2^(*e) by d, keeping |m| in [0.5, 1) so that no intermediate
 * product overflows or underflows. */
static inline void scaled_mul(double *m, int64_t *e, double d)
{
    int ex = 0;
    *m = frexp(*m * d, &ex);
    *e += ex;
}

static inline void scaled_cmul(double complex *m, int64_t *e, double complex d)
{
    double complex p = *m * d;
    double s = fmax(fabs(creal(p)), fabs(cimag(p)));
    int ex = 0;
    if (s > 0 && isfinite(s))
        frexp(s, &ex);
    *m = CMPLX(ldexp(creal(p), -ex), ldexp(cimag(p), -ex));
    *e += ex;
}

/* m * 2^e, with e clamped so ldexp's int cannot overflow (beyond ±100000 the result is 0 or inf). */
static inline double unscale(double m, int64_t e)
{
    return ldexp(m, (int)(e > 100000 ? 100000 : e < -100000 ? -100000 : e));
}

/* A double narrowed to float, out-of-range values becoming ±inf explicitly. */
static inline float to_f32(double v)
{
    return v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
}

static inline double to_f64(double v) { return v; }

static inline bool row_swapped(const int *ipiv, int i) { return ipiv[i] != i + 1; }

/* Determinants of batch elements [b0, b1): each copied to lu (n*n elements) and factorised. A zero
 * pivot (info > 0) gives 0. Returns false if LAPACK rejected an argument. */
#define DEFINE_DET_REAL(NAME, T, GETRF, NARROW)                                                 \
    static bool NAME(const lu_job *j, int64_t b0, int64_t b1, int *ipiv, T *lu)                 \
    {                                                                                           \
        const int n = j->n;                                                                     \
        const int64_t nn = (int64_t)n * n;                                                      \
        T *out = (T *)j->out;                                                                   \
        for (int64_t b = b0; b < b1 && !tide_kernel_cancelled(j->ctx); b++) {                   \
            memcpy(lu, (const T *)j->in + b * nn, (size_t)nn * sizeof(T));                      \
            int info = 0;                                                                       \
            GETRF(&n, &n, lu, &n, ipiv, &info);                                                 \
            if (info < 0)                                                                       \
                return false;                                                                   \
            double m = 1.0;                                                                     \
            int64_t e = 0;                                                                      \
            bool neg = false;                                                                   \
            for (int i = 0; i < n && info == 0; i++) {                                          \
                scaled_mul(&m, &e, (double)lu[(int64_t)i * n + i]);                             \
                neg ^= row_swapped(ipiv, i);                                                    \
            }                                                                                   \
            out[b] = info > 0 ? (T)0 : NARROW(neg ? -unscale(m, e) : unscale(m, e));            \
        }                                                                                       \
        return true;                                                                            \
    }

#define DEFINE_DET_COMPLEX(NAME, T, GETRF, NARROW)                                              \
    static bool NAME(const lu_job *j, int64_t b0, int64_t b1, int *ipiv, T *lu)                 \
    {                                                                                           \
        const int n = j->n;                                                                     \
        const int64_t nn = (int64_t)n * n;                                                      \
        T *out = (T *)j->out;                                                                   \
        for (int64_t b = b0; b < b1 && !tide_kernel_cancelled(j->ctx); b++) {                   \
            memcpy(lu, (const T *)j->in + b * nn, (size_t)nn * sizeof(T));                      \
            int info = 0;                                                                       \
            GETRF(&n, &n, lu, &n, ipiv, &info);                                                 \
            if (info < 0)                                                                       \
                return false;                                                                   \
            double complex m = 1.0;                                                             \
            int64_t e = 0;                                                                      \
            bool neg = false;                                                                   \
            for (int i = 0; i < n && info == 0; i++) {                                          \
                scaled_cmul(&m, &e, (double complex)lu[(int64_t)i * n + i]);                    \
                neg ^= row_swapped(ipiv, i);                                                    \
            }                                                                                   \
            double re = unscale(neg ? -creal(m) : creal(m), e);                                 \
            double im = unscale(neg ? -cimag(m) : cimag(m), e);                                 \
            out[b] = info > 0 ? (T)0 : CMPLX(NARROW(re), NARROW(im));                           \
        }                                                                                       \
        return true;                                                                            \
    }

DEFINE_DET_REAL(det_f32, float, sgetrf_, to_f32)
DEFINE_DET_REAL(det_f64, double, dgetrf_, to_f64)
DEFINE_DET_COMPLEX(det_c64, float complex, cgetrf_, to_f32)
DEFINE_DET_COMPLEX(det_c128, double complex, zgetrf_, to_f64)

static void det_chunk(int64_t b0, int64_t b1, void *arg)
{
    lu_job *j = arg;
    int *ipiv = malloc((size_t)j->n * sizeof *ipiv);
    void *lu = malloc((size_t)j->n * (size_t)j->n * j->esize);
    bool ok = true;
    if (!ipiv || !lu) {
        atomic_store(&j->failed, 1);
    } else {
        switch (j->dt) {
        case TIDE_FLOAT32: ok = det_f32(j, b0, b1, ipiv, lu); break;
        case TIDE_FLOAT64: ok = det_f64(j, b0, b1, ipiv, lu); break;
        case TIDE_COMPLEX64: ok = det_c64(j, b0, b1, ipiv, lu); break;
        case TIDE_COMPLEX128: ok = det_c128(j, b0, b1, ipiv, lu); break;
        default: break; /* the op allows no other dtype */
        }
    }
    if (!ok)
        atomic_store(&j->failed, 2);
    free(ipiv);
    free(lu);
}

/* ---------------------------------------------------------------- shared driver */

/* Checks that input is a batch of square matrices LAPACK can take; fills j's sizes. */
static tide_status square_batch(tide_kernel_ctx *ctx, const tide_tensor *in, lu_job *j)
{
    const tide_shape *s = tide_tensor_shape(in);
    char buf[TIDE_SHAPE_STR_MAX], msg[TIDE_OP_MSG_MAX];
    if (!tide_linalg_check_square(s, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    int64_t r = s->dims[s->rank - 2];
    if (r > INT_MAX / GETRI_BLOCK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "matrices of shape %s are too large for LAPACK",
                                 tide_shape_format(s, buf, sizeof buf));
    j->ctx = ctx;
    j->dt = tide_tensor_dtype(in);
    j->in = tide_tensor_data(in);
    j->n = (int)r;
    j->esize = tide_dtype_size(j->dt);
    j->batches = 1;
    for (int i = 0; i < s->rank - 2; i++)
        j->batches *= s->dims[i];
    atomic_init(&j->bad, LLONG_MAX);
    atomic_init(&j->failed, 0);
    return TIDE_OK;
}

/* Runs chunk over every batch element of j: in parallel for small matrices, else in order. */
static tide_status run_batches(tide_kernel_ctx *ctx, lu_job *j, void (*chunk)(int64_t, int64_t, void *))
{
    double n = j->n;
    if (j->n <= PARALLEL_BATCH_MAX_N)
        tide_kernel_parallel_for(ctx, j->batches, 0.1 * n * n * n + 300.0, chunk, j);
    else
        chunk(0, j->batches, j);
    if (atomic_load(&j->failed) == 1)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for LAPACK workspace");
    if (atomic_load(&j->failed) == 2)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "LAPACK rejected an argument (n = %d)", j->n);
    if (tide_kernel_cancelled(ctx))
        return tide_kernel_error(ctx, TIDE_CANCELLED, "cancelled");
    return TIDE_OK;
}

/* "[1, 0]": the batch coordinates of flat batch element b of shape s. */
static char *batch_coords(const tide_shape *s, int64_t b, char *buf, size_t size)
{
    int nb = s->rank - 2;
    int64_t coords[TIDE_MAX_RANK];
    for (int i = nb - 1; i >= 0; i--) {
        coords[i] = b % s->dims[i];
        b /= s->dims[i];
    }
    tide_shape c = tide_shape_make(nb, coords);
    return tide_shape_format(&c, buf, size);
}

static tide_status inverse_init(tide_kernel_ctx *ctx, void **state)
{
    static bool flags[2] = {false, true}; /* shared, never written: nothing to free */
    bool adjoint = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "adjoint", &adjoint);
    *state = &flags[adjoint ? 1 : 0];
    return TIDE_OK;
}

static tide_status inverse_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *in = tide_kernel_input(ctx, 0);
    lu_job j;
    tide_status st = square_batch(ctx, in, &j);
    if (st != TIDE_OK)
        return st;
    const bool *adjoint = tide_kernel_state(ctx);
    j.adjoint = *adjoint;
    j.lwork = j.n * GETRI_BLOCK > 1 ? j.n * GETRI_BLOCK : 1;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(in), false);
    if (!out)
        return tide_kernel_status(ctx);
    if (j.n == 0 || j.batches == 0)
        return TIDE_OK;
    j.out = tide_tensor_data(out);
    st = run_batches(ctx, &j, invert_chunk);
    long long bad = atomic_load(&j.bad);
    if (st == TIDE_OK && bad != LLONG_MAX) {
        const tide_shape *s = tide_tensor_shape(in);
        char sh[TIDE_SHAPE_STR_MAX], co[TIDE_SHAPE_STR_MAX];
        tide_shape_format(s, sh, sizeof sh);
        if (s->rank == 2)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "matrix is not invertible: the %s input has a zero pivot in its "
                                     "LU factorization", sh);
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "matrix is not invertible: batch element %s (flat index %lld) of the "
                                 "%s input has a zero pivot in its LU factorization",
                                 batch_coords(s, bad, co, sizeof co), bad, sh);
    }
    return st;
}

#define FILL_ONES(T, p, n)              \
    do {                                \
        T *o = (T *)(p);                \
        for (int64_t i = 0; i < (n); i++) \
            o[i] = (T)1;                \
    } while (0)

static void fill_ones(tide_dtype dt, void *p, int64_t n)
{
    switch (dt) {
    case TIDE_FLOAT32: FILL_ONES(float, p, n); break;
    case TIDE_FLOAT64: FILL_ONES(double, p, n); break;
    case TIDE_COMPLEX64: FILL_ONES(float complex, p, n); break;
    case TIDE_COMPLEX128: FILL_ONES(double complex, p, n); break;
    default: break; /* the op allows no other dtype */
    }
}

static tide_status determinant_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *in = tide_kernel_input(ctx, 0);
    lu_job j;
    tide_status st = square_batch(ctx, in, &j);
    if (st != TIDE_OK)
        return st;
    tide_shape os = *tide_tensor_shape(in);
    os.rank -= 2;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, false);
    if (!out)
        return tide_kernel_status(ctx);
    j.out = tide_tensor_data(out);
    if (j.n == 0) { /* the empty product: every determinant is 1 */
        fill_ones(j.dt, j.out, j.batches);
        return TIDE_OK;
    }
    return j.batches ? run_batches(ctx, &j, det_chunk) : TIDE_OK;
}

static void register_linalg_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "MatrixInverse", .device_type = "cpu",
                                              .flags = TIDE_KERNEL_EXPENSIVE, .init = inverse_init,
                                              .compute = inverse_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "MatrixDeterminant", .device_type = "cpu",
                                              .flags = TIDE_KERNEL_EXPENSIVE,
                                              .compute = determinant_compute});
}
TIDE_REGISTER(register_linalg_kernels)
