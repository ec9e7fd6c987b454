/* cpu_util.h — helpers shared by the CPU kernel families: NumPy broadcasting of two operands walked
 * row by row, registering a family's table of kernels, and the pieces of vectorised loops (IVDEP,
 * float32 exp, arrays of square roots) and their run-time choice of instruction set (below). Kernels
 * only; the engine never includes this.
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

/* Run-time choice of instruction set. The build targets the baseline ISA (plain x86-64: SSE2), so the
 * loops that pay from wider vectors are compiled again for AVX2+FMA and AVX-512 (F, VL, BW, DQ) with
 * GCC's target attribute, and a dispatcher picks one per call:
 *
 *     #define MY_LOOP(name, TARGET, ISA, T) TARGET static void name(const T *x, T *y, int64_t n) {...}
 *     TIDE_ISA_VARIANTS(MY_LOOP, exp_f32, float)  -> exp_f32_portable, exp_f32_avx2, exp_f32_avx512
 *     static void exp_f32(const float *x, float *y, int64_t n) { TIDE_ISA_DISPATCH(exp_f32, x, y, n); }
 *
 * TARGET is the function attribute, ISA the suffix of ISA-specific helpers (empty, _avx2, _avx512:
 * TIDE_ISA_FN(tide_sqrt_f32, ISA)). The static inline helpers here (tide_fast_expf...) inline into
 * every variant, so one loop body is auto-vectorised at each width. No -ffp-contract (ISO C mode):
 * no multiply-add is fused, so the variants compute the same operations in the same order as the
 * portable loop, and element-wise results are bit-identical (tests/kernels/test_vecwidth.c).
 *
 * The ISA used is the best the CPU has (cpuid, once), capped by $TIDE_CPU_ISA (portable, avx2 or
 * avx512, read once: TIDE_CPU_ISA=portable forces the portable loops everywhere) and by
 * tide_cpu_isa_limit (tests and benchmarks compare the variants in one process). Elsewhere than
 * x86-64 with GCC or clang there is only the portable variant. */
typedef enum tide_cpu_isa {
    TIDE_ISA_PORTABLE = 0,
    TIDE_ISA_AVX2 = 1,   /* AVX2 + FMA */
    TIDE_ISA_AVX512 = 2, /* AVX-512 F, VL, BW, DQ (and AVX2 + FMA) */
} tide_cpu_isa;

/* What the CPU supports (detected once; thread-safe). */
tide_cpu_isa tide_cpu_isa_supported(void);
/* What the vectorised loops use now: the supported ISA capped by $TIDE_CPU_ISA and the limit. */
tide_cpu_isa tide_cpu_isa_active(void);
/* Caps the ISA at `max` for every kernel of the process from now on (TIDE_ISA_AVX512: no cap but the
 * CPU's and $TIDE_CPU_ISA's); returns the previous cap. For tests and benchmarks, between runs. */
tide_cpu_isa tide_cpu_isa_limit(tide_cpu_isa max);
/* "portable", "avx2", "avx512". */
const char *tide_cpu_isa_name(tide_cpu_isa isa);

#define TIDE_ISA_FN(name, ISA) name##ISA
#if defined(__x86_64__) && defined(__GNUC__)
#define TIDE_ISA_DISPATCH_X86 1
#include <immintrin.h>
#define TIDE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#if defined(__clang__)
#define TIDE_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512dq")))
#else /* GCC would otherwise prefer 256-bit vectors in AVX-512 code */
#define TIDE_TARGET_AVX512                                                                   \
    __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")))
#endif
#define TIDE_ISA_VARIANTS(DEFINE, name, ...)                                                 \
    DEFINE(name##_portable, , , __VA_ARGS__)                                                 \
    DEFINE(name##_avx2, TIDE_TARGET_AVX2, _avx2, __VA_ARGS__)                                \
    DEFINE(name##_avx512, TIDE_TARGET_AVX512, _avx512, __VA_ARGS__)
/* Families where AVX-512 does not pay (measured) stop at AVX2: name_portable and name_avx2 only. */
#define TIDE_ISA_VARIANTS_TO_AVX2(DEFINE, name, ...)                                         \
    DEFINE(name##_portable, , , __VA_ARGS__)                                                 \
    DEFINE(name##_avx2, TIDE_TARGET_AVX2, _avx2, __VA_ARGS__)
#define TIDE_ISA_DISPATCH_TO_AVX2(name, ...)                                                 \
    (tide_cpu_isa_active() >= TIDE_ISA_AVX2 ? name##_avx2(__VA_ARGS__) : name##_portable(__VA_ARGS__))
/* TIDE_ISA_DISPATCH_SFX calls name_<isa>SFX: for families whose DEFINE makes several functions. */
#define TIDE_ISA_DISPATCH_SFX(name, SFX, ...)                                                \
    do {                                                                                     \
        switch (tide_cpu_isa_active()) {                                                     \
        case TIDE_ISA_AVX512: name##_avx512##SFX(__VA_ARGS__); break;                        \
        case TIDE_ISA_AVX2: name##_avx2##SFX(__VA_ARGS__); break;                            \
        default: name##_portable##SFX(__VA_ARGS__); break;                                   \
        }                                                                                    \
    } while (0)
#else
#define TIDE_ISA_DISPATCH_X86 0
#define TIDE_ISA_VARIANTS(DEFINE, name, ...) DEFINE(name##_portable, , , __VA_ARGS__)
#define TIDE_ISA_DISPATCH_SFX(name, SFX, ...) name##_portable##SFX(__VA_ARGS__)
#define TIDE_ISA_VARIANTS_TO_AVX2(DEFINE, name, ...) DEFINE(name##_portable, , , __VA_ARGS__)
#define TIDE_ISA_DISPATCH_TO_AVX2(name, ...) name##_portable(__VA_ARGS__)
#endif
#define TIDE_ISA_DISPATCH(name, ...) TIDE_ISA_DISPATCH_SFX(name, , __VA_ARGS__)

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
 * computes the same roots several at a time, the scalar loop the rest. The _avx2 and _avx512
 * versions (for loops of those targets, see TIDE_ISA_VARIANTS) take 8 and 16 floats at a time: the
 * same correctly rounded roots and quotients, so the same results. */
#define TIDE_SQRT_BLOCK(V, W, LOADU, SQRT, DIV, SET1, STOREU)                                \
    for (; i + (W) <= n; i += (W)) {                                                         \
        V v = SQRT(LOADU(x + i));                                                            \
        STOREU(y + i, reciprocal ? DIV(SET1(1), v) : v);                                     \
    }
#if defined(__SSE2__)
#define TIDE_SQRT_SSE2(V, PS)                                                                \
    TIDE_SQRT_BLOCK(V, (int64_t)(sizeof(V) / sizeof *x), _mm_loadu_##PS, _mm_sqrt_##PS,       \
                    _mm_div_##PS, _mm_set1_##PS, _mm_storeu_##PS)
#else
#define TIDE_SQRT_SSE2(V, PS)
#endif
#define TIDE_DEFINE_SQRT(SFX, TARGET, T, SQRT, BLOCKS)                                       \
    TARGET static inline void tide_sqrt_##SFX(const T *x, T *y, int64_t n, bool reciprocal)  \
    {                                                                                        \
        int64_t i = 0;                                                                       \
        BLOCKS                                                                               \
        for (; i < n; i++)                                                                   \
            y[i] = reciprocal ? (T)1 / SQRT(x[i]) : SQRT(x[i]);                              \
    }
TIDE_DEFINE_SQRT(f32, , float, sqrtf, TIDE_SQRT_SSE2(__m128, ps))
TIDE_DEFINE_SQRT(f64, , double, sqrt, TIDE_SQRT_SSE2(__m128d, pd))
#if TIDE_ISA_DISPATCH_X86
TIDE_DEFINE_SQRT(f32_avx2, TIDE_TARGET_AVX2, float, sqrtf,
                 TIDE_SQRT_BLOCK(__m256, 8, _mm256_loadu_ps, _mm256_sqrt_ps, _mm256_div_ps,
                                 _mm256_set1_ps, _mm256_storeu_ps))
TIDE_DEFINE_SQRT(f64_avx2, TIDE_TARGET_AVX2, double, sqrt,
                 TIDE_SQRT_BLOCK(__m256d, 4, _mm256_loadu_pd, _mm256_sqrt_pd, _mm256_div_pd,
                                 _mm256_set1_pd, _mm256_storeu_pd))
TIDE_DEFINE_SQRT(f32_avx512, TIDE_TARGET_AVX512, float, sqrtf,
                 TIDE_SQRT_BLOCK(__m512, 16, _mm512_loadu_ps, _mm512_sqrt_ps, _mm512_div_ps,
                                 _mm512_set1_ps, _mm512_storeu_ps))
TIDE_DEFINE_SQRT(f64_avx512, TIDE_TARGET_AVX512, double, sqrt,
                 TIDE_SQRT_BLOCK(__m512d, 8, _mm512_loadu_pd, _mm512_sqrt_pd, _mm512_div_pd,
                                 _mm512_set1_pd, _mm512_storeu_pd))
#endif

/* a * b for dimension products, saturating at INT64_MAX instead of overflowing: an empty tensor may
 * have huge other dimensions ([1e12, 0, 1e12]); the allocation of any such real output then fails
 * cleanly. */
static inline int64_t tide_dim_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

#endif
