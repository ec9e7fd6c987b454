/* cpu_util.h — helpers shared by the CPU kernel families: NumPy broadcasting of two operands walked
 * row by row, registering a family's table of kernels, and the pieces of vectorised loops (IVDEP,
 * float32 exp, arrays of square roots). Kernels only; the engine never includes this.
 *
 * Vectorised files. GCC 12 at -O2 (the default build) vectorises only with its "very cheap" cost
 * model, which leaves loops of unknown length scalar; files whose loops are what they are for say
 *     #pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic"[, "no-trapping-math"])
 * (without trapping math the selects (?:) of float loops vectorise too; results are unchanged, no
 * -ffast-math). Such a file sets the pragma BEFORE including this header: GCC does not inline a
 * floating-point function compiled with other options than its caller's, so the inline functions
 * below must be compiled with the file's options. */
#ifndef TIDE_CPU_UTIL_H
#define TIDE_CPU_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../engine/tide_op.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Broadcasting a and b to out. After tide_bcast_init the shapes are collapsed (adjacent dims that
 * broadcast the same way are merged), so `rank` may be smaller than either input's.
 *   same:      a, b and out have identical shapes: index i is i in all three
 *   a_scalar / b_scalar: one side has exactly one element
 * Otherwise walk `rows` rows of `inner` elements: tide_bcast_row(bc, r, &ia, &ib) gives the element
 * offsets of row r's first element in a and b, and a_inner/b_inner (0 or 1) the step within a row. */
typedef struct tide_bcast {
    tide_shape out;          /* the broadcast shape, uncollapsed (allocate the output with this) */
    int64_t out_n;           /* elements of out */
    bool same, a_scalar, b_scalar;
    int rank;                /* collapsed rank (>= 1 unless out_n == 0 or scalar) */
    int64_t dims[TIDE_MAX_RANK];
    int64_t a_strides[TIDE_MAX_RANK], b_strides[TIDE_MAX_RANK]; /* 0 where broadcast */
    int64_t inner, rows, a_inner, b_inner;
} tide_bcast;

/* False if the shapes cannot broadcast (then write the error yourself with both shapes). */
bool tide_bcast_init(tide_bcast *bc, const tide_shape *a, const tide_shape *b);
void tide_bcast_row(const tide_bcast *bc, int64_t row, int64_t *a_off, int64_t *b_off);

/* One row of a family's kernel table (see tide_cpu_register_kernels). */
typedef struct tide_cpu_kernel {
    const char *op;
    tide_status (*compute)(tide_kernel_ctx *ctx);
    tide_status (*init)(tide_kernel_ctx *ctx, void **state); /* NULL: no per-node state */
    unsigned flags;                                          /* TIDE_KERNEL_* */
} tide_cpu_kernel;

/* Registers table[0..n) for device type "cpu" with no dtype constraints; the state a kernel's init
 * stores is freed with free(). */
void tide_cpu_register_kernels(const tide_cpu_kernel *table, size_t n);

/* Output 0 of the given shape, all zeros when no term contributes to it (no_terms). NULL when there
 * is nothing to compute: then *st is TIDE_OK (no terms, or an empty output) or the allocation's
 * failure. */
tide_tensor *tide_cpu_alloc_result(tide_kernel_ctx *ctx, const tide_shape *shape, bool no_terms,
                                   tide_status *st);

/* `IVDEP for (...)`: no iteration of the loop depends on another. Kernels write outputs that may be
 * exactly one of their inputs (in place), never a partial overlap, so their element loops are. */
#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define IVDEP
#endif

/* float32 exp without a call, so that loops of it vectorise (libm's cannot be), as TensorFlow's
 * Eigen kernels do: Cephes' expf reduction and polynomial, within 1 ulp; 2^n is applied in two
 * halves so results stay right down to the denormals and overflow to inf; NaN stays NaN. */
static inline float tide_fast_expf(float x)
{
    float xc = x < 90.0f ? x : 90.0f; /* n fits an int, results are still inf or 0; nan -> 90 */
    xc = xc > -110.0f ? xc : -110.0f;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(x / ln 2) */
    float r = xc - n * 0.693359375f - n * -2.12194440e-4f;           /* x - n ln 2, |r| <= ln2/2 */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t k = (int32_t)n, k1 = k / 2, k2 = k - k1;
    uint32_t b1 = (uint32_t)(k1 + 127) << 23, b2 = (uint32_t)(k2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return isnan(x) ? x : y * s1 * s2;
}

/* tide_sqrt_f32 / _f64(x, y, n, reciprocal): y[i] = sqrt(x[i]), or 1 / sqrt(x[i]), for i < n,
 * correctly rounded; y may be x. C's sqrt may set errno, which keeps a compiler's loop scalar; SSE2
 * computes the same roots several at a time, the scalar loop the rest. */
#if defined(__SSE2__)
#define TIDE_SQRT_SSE2(V, PS)                                                                \
    for (; i + (int64_t)(sizeof(V) / sizeof *x) <= n; i += (int64_t)(sizeof(V) / sizeof *x)) { \
        V v = _mm_sqrt_##PS(_mm_loadu_##PS(x + i));                                          \
        _mm_storeu_##PS(y + i, reciprocal ? _mm_div_##PS(_mm_set1_##PS(1), v) : v);          \
    }
#else
#define TIDE_SQRT_SSE2(V, PS)
#endif
#define TIDE_DEFINE_SQRT(SFX, T, SQRT, V, PS)                                                \
    static inline void tide_sqrt_##SFX(const T *x, T *y, int64_t n, bool reciprocal)         \
    {                                                                                        \
        int64_t i = 0;                                                                       \
        TIDE_SQRT_SSE2(V, PS)                                                                \
        for (; i < n; i++)                                                                   \
            y[i] = reciprocal ? (T)1 / SQRT(x[i]) : SQRT(x[i]);                              \
    }
TIDE_DEFINE_SQRT(f32, float, sqrtf, __m128, ps)
TIDE_DEFINE_SQRT(f64, double, sqrt, __m128d, pd)

/* a * b for dimension products, saturating at INT64_MAX instead of overflowing: an empty tensor may
 * have huge other dimensions ([1e12, 0, 1e12]); the allocation of any such real output then fails
 * cleanly. */
static inline int64_t tide_dim_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

#endif
