/* math.c — CPU kernels of the element-wise math ops (engine/ops/math_ops.c): the binary ops with
 * NumPy broadcasting (the divisions and remainders with TensorFlow's rounding: Div, TruncateDiv, Mod
 * and TruncateMod toward zero, FloorDiv and FloorMod toward negative infinity), the unary ops,
 * ClipByValue, AddN, DivNoNan and the gradient ops SqrtGrad, RsqrtGrad, ReciprocalGrad and InvGrad
 * (binary ops on two inputs of one shape), for every dtype their ops declare.
 *
 * Layout. Each (op, dtype) gets tight loops stamped out by macros: a binary op has three, vv (x and
 * y both advance), sv (x is one value) and vs (y is one value); a unary op has one. They sit in
 * tables indexed by dtype: a kernel finds its op in init, picks the loops by dtype once per call
 * (the dtype switch stays outside every loop), and a broadcast walk calls one loop per output row.
 * float16/bfloat16 loops convert chunks to float32 and reuse the float32 loops.
 *
 * No undefined behaviour on any input: integer arithmetic that may overflow goes through unsigned
 * types (so it wraps, two's complement), the most negative value divided by -1 is special-cased, and
 * integer division, modulo and power check y before computing anything (division by zero, negative
 * exponents are errors). Outputs reuse an input's buffer when the executor allows it; loops are
 * written so that z may be exactly x or y (never a partial overlap). */
#include <stdint.h>
#include <string.h>
#include <tgmath.h>

#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised, selects of floats too (cpu_util.h: before including it). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h"

/* Below this many nanoseconds of work a kernel runs inline (parallel_for would too). */
#define INLINE_NS 50000.0

/* ---------------------------------------------------------------- dtype lists */

/* X(op, suffix, C type, unsigned type integer arithmetic wraps in / float type, dtype). Small
 * integers wrap in uint32_t: uint16_t * uint16_t would overflow the int it promotes to. */
#define SINTS(X, op)                                                                        \
    X(op, i8, int8_t, uint32_t, TIDE_INT8) X(op, i16, int16_t, uint32_t, TIDE_INT16)        \
    X(op, i32, int32_t, uint32_t, TIDE_INT32) X(op, i64, int64_t, uint64_t, TIDE_INT64)
#define UINTS(X, op) X(op, u8, uint8_t, uint32_t, TIDE_UINT8) X(op, u16, uint16_t, uint32_t, TIDE_UINT16)
#define FLOATS(X, op) X(op, f32, float, float, TIDE_FLOAT32) X(op, f64, double, double, TIDE_FLOAT64)
#define HALVES(X, op)                                                                       \
    X(op, f16, uint16_t, float, TIDE_FLOAT16) X(op, bf16, uint16_t, float, TIDE_BFLOAT16)
#define CPLX(X, op)                                                                         \
    X(op, c64, float complex, float, TIDE_COMPLEX64) X(op, c128, double complex, double, TIDE_COMPLEX128)

/* ---------------------------------------------------------------- loop generators */

typedef void (*bin_loop)(const void *x, const void *y, void *z, int64_t n);
typedef struct bin_loops {
    bin_loop vv, sv, vs;
} bin_loops;
typedef void (*un_loop)(const void *x, void *y, int64_t n);

/* name_vv, name_sv, name_vs computing EXPR of x and y (both of type T). */
#define BIN_LOOPS(name, T, EXPR) BIN_LOOPS_AT(name, , T, EXPR)
#define BIN_LOOPS_AT(name, TARGET, T, EXPR)                                                 \
    TARGET static void name##_vv(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        const T *xs = px, *ys = py;                                                         \
        T *zs = pz;                                                                         \
        IVDEP for (int64_t i = 0; i < n; i++) {                                             \
            const T x = xs[i], y = ys[i];                                                   \
            zs[i] = (EXPR);                                                                 \
        }                                                                                   \
    }                                                                                       \
    TARGET static void name##_sv(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        const T x = *(const T *)px, *ys = py;                                               \
        T *zs = pz;                                                                         \
        IVDEP for (int64_t i = 0; i < n; i++) {                                             \
            const T y = ys[i];                                                              \
            zs[i] = (EXPR);                                                                 \
        }                                                                                   \
    }                                                                                       \
    TARGET static void name##_vs(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        const T *xs = px, y = *(const T *)py;                                               \
        T *zs = pz;                                                                         \
        IVDEP for (int64_t i = 0; i < n; i++) {                                             \
            const T x = xs[i];                                                              \
            zs[i] = (EXPR);                                                                 \
        }                                                                                   \
    }

/* BIN_LOOPS in the ISA variants of cpu_util.h (name_portable_vv, name_avx2_vv, ...) and dispatchers
 * under the plain names: for the float arithmetic and selects, which wider vectors speed up (the same
 * IEEE operations at every width: bit-identical results). Fusion runs them over tiles in L1. */
#define BIN_LOOPS_VARIANT(name, TARGET, ISA, T, EXPR) BIN_LOOPS_AT(name, TARGET, T, EXPR)
#define BIN_LOOPS_WIDE(name, T, EXPR)                                                       \
    TIDE_ISA_VARIANTS(BIN_LOOPS_VARIANT, name, T, EXPR)                                     \
    static void name##_vv(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        TIDE_ISA_DISPATCH_SFX(name, _vv, px, py, pz, n);                                    \
    }                                                                                       \
    static void name##_sv(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        TIDE_ISA_DISPATCH_SFX(name, _sv, px, py, pz, n);                                    \
    }                                                                                       \
    static void name##_vs(const void *px, const void *py, void *pz, int64_t n)              \
    {                                                                                       \
        TIDE_ISA_DISPATCH_SFX(name, _vs, px, py, pz, n);                                    \
    }

/* name computing EXPR of x (of type T). */
#define UN_LOOP(name, T, EXPR)                                                              \
    static void name(const void *px, void *py, int64_t n)                                   \
    {                                                                                       \
        const T *xs = px;                                                                   \
        T *ys = py;                                                                         \
        IVDEP for (int64_t i = 0; i < n; i++) {                                             \
            const T x = xs[i];                                                              \
            ys[i] = (EXPR);                                                                 \
        }                                                                                   \
    }

/* UN_LOOP in the ISA variants of cpu_util.h (name_portable, name_avx2, name_avx512) and a
 * dispatcher under the plain name: for the loops wider vectors speed up (tests/bench/bench_vecwidth.c
 * measures each; the others stay at the baseline width). */
#define UN_LOOP_VARIANT(name, TARGET, ISA, T, EXPR)                                        \
    TARGET UN_LOOP(name, T, EXPR)
#define UN_LOOP_WIDE(name, T, EXPR)                                                         \
    TIDE_ISA_VARIANTS(UN_LOOP_VARIANT, name, T, EXPR)                                       \
    static void name(const void *px, void *py, int64_t n) { TIDE_ISA_DISPATCH(name, px, py, n); }

/* float16 / bfloat16: chunks converted to float32, computed by the float32 loop, rounded back. */
#define HALF_CHUNK 256
enum { KIND_VV, KIND_SV, KIND_VS };

static void half_to_f32(bool bf16, const uint16_t *h, float *f, int m)
{
    if (bf16)
        for (int k = 0; k < m; k++)
            f[k] = tide_bf16_to_f32(h[k]);
    else
        for (int k = 0; k < m; k++)
            f[k] = tide_f16_to_f32(h[k]);
}

static void f32_to_half(bool bf16, const float *f, uint16_t *h, int m)
{
    if (bf16)
        for (int k = 0; k < m; k++)
            h[k] = tide_f32_to_bf16(f[k]);
    else
        for (int k = 0; k < m; k++)
            h[k] = tide_f32_to_f16(f[k]);
}

static void half_bin(bin_loop f32, int kind, bool bf16, const void *px, const void *py, void *pz,
                     int64_t n)
{
    const uint16_t *xs = px, *ys = py;
    uint16_t *zs = pz;
    float a[HALF_CHUNK], b[HALF_CHUNK];
    if (kind == KIND_SV)
        half_to_f32(bf16, xs, a, 1);
    if (kind == KIND_VS)
        half_to_f32(bf16, ys, b, 1);
    for (int64_t i = 0; i < n; i += HALF_CHUNK) {
        int m = n - i < HALF_CHUNK ? (int)(n - i) : HALF_CHUNK;
        if (kind != KIND_SV)
            half_to_f32(bf16, xs + i, a, m);
        if (kind != KIND_VS)
            half_to_f32(bf16, ys + i, b, m);
        float *out = kind == KIND_SV ? b : a;
        f32(a, b, out, m);
        f32_to_half(bf16, out, zs + i, m);
    }
}

static void half_un(un_loop f32, bool bf16, const void *px, void *py, int64_t n)
{
    const uint16_t *xs = px;
    uint16_t *ys = py;
    float a[HALF_CHUNK];
    for (int64_t i = 0; i < n; i += HALF_CHUNK) {
        int m = n - i < HALF_CHUNK ? (int)(n - i) : HALF_CHUNK;
        half_to_f32(bf16, xs + i, a, m);
        f32(a, a, m);
        f32_to_half(bf16, a, ys + i, m);
    }
}

#define HALF_BIN(op, s, T, U, DT)                                                            \
    static void op##_##s##_vv(const void *x, const void *y, void *z, int64_t n)              \
    {                                                                                        \
        half_bin(op##_f32_vv, KIND_VV, DT == TIDE_BFLOAT16, x, y, z, n);                     \
    }                                                                                        \
    static void op##_##s##_sv(const void *x, const void *y, void *z, int64_t n)              \
    {                                                                                        \
        half_bin(op##_f32_sv, KIND_SV, DT == TIDE_BFLOAT16, x, y, z, n);                     \
    }                                                                                        \
    static void op##_##s##_vs(const void *x, const void *y, void *z, int64_t n)              \
    {                                                                                        \
        half_bin(op##_f32_vs, KIND_VS, DT == TIDE_BFLOAT16, x, y, z, n);                     \
    }
#define HALF_UN(op, s, T, U, DT)                                                             \
    static void op##_##s(const void *x, void *y, int64_t n)                                  \
    {                                                                                        \
        half_un(op##_f32, DT == TIDE_BFLOAT16, x, y, n);                                     \
    }

#define BIN_ENTRY(op, s, T, U, DT) [DT] = {op##_##s##_vv, op##_##s##_sv, op##_##s##_vs},
#define UN_ENTRY(op, s, T, U, DT) [DT] = op##_##s,

/* ---------------------------------------------------------------- binary ops */

/* Add, Sub, Mul: integers wrap through U; floats and complex numbers as C computes them. */
#define ADD_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)((U)x + (U)y))
#define ADD_NUM(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x + y)
#define ADD_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, x + y)
#define SUB_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)((U)x - (U)y))
#define SUB_NUM(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x - y)
#define SUB_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, x - y)
#define MUL_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)((U)x * (U)y))
#define MUL_NUM(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x * y)
#define MUL_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, x * y)

/* Div truncates; y != 0 was checked; MIN / -1 wraps to MIN (negation through U). */
#define DIV_SINT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, y == -1 ? (T)(0u - (U)x) : (T)(x / y))
#define DIV_UINT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)(x / y))
#define DIV_NUM(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x / y)
#define DIV_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, x / y)

/* FloorDiv: the truncated quotient, one less when the division was inexact and the signs differ. */
#define FLOORDIV_SINT(op, s, T, U, DT)                                                       \
    BIN_LOOPS(op##_##s, T,                                                                   \
              y == -1 ? (T)(0u - (U)x) : (T)(x / y - ((x % y != 0) & ((x < 0) != (y < 0)))))
#define FLOORDIV_FLT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, floor(x / y))

/* TruncateDiv on floats: the quotient rounded toward zero (integers use DIV_SINT / DIV_UINT). */
#define TRUNCDIV_FLT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, trunc(x / y))

/* FloorMod: the C remainder moved into y's sign. */
#define FLOORMOD_SINT(op, s, T, U, DT)                                                       \
    static inline T floormod_##s(T x, T y)                                                   \
    {                                                                                        \
        if (y == -1)                                                                         \
            return 0;                                                                        \
        T r = (T)(x % y);                                                                    \
        return r != 0 && ((r < 0) != (y < 0)) ? (T)(r + y) : r;                              \
    }                                                                                        \
    BIN_LOOPS(op##_##s, T, floormod_##s(x, y))
#define FLOORMOD_FLT(op, s, T, U, DT)                                                        \
    static inline T floormod_##s(T x, T y)                                                   \
    {                                                                                        \
        T r = fmod(x, y);                                                                    \
        return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;                                   \
    }                                                                                        \
    BIN_LOOPS(op##_##s, T, floormod_##s(x, y))
/* Mod and TruncateMod: C's remainder (the sign of x); MIN % -1 is 0 (C leaves it undefined). */
#define TRUNCMOD_SINT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, y == -1 ? (T)0 : (T)(x % y))
#define TRUNCMOD_FLT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, fmod(x, y))
#define MOD_UINT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)(x % y))

/* SquaredDifference: integers wrap through U. */
#define SQDIFF_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, (T)(((U)x - (U)y) * ((U)x - (U)y)))
#define SQDIFF_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, (x - y) * (x - y))

/* Pow on integers: square-and-multiply in U (wraps); y >= 0 was checked for signed types. */
#define POW_INT(op, s, T, U, DT)                                                             \
    static inline T ipow_##s(T x, T y)                                                       \
    {                                                                                        \
        U base = (U)x, r = 1;                                                                \
        for (uint64_t e = (uint64_t)y; e; e >>= 1) {                                         \
            if (e & 1)                                                                       \
                r *= base;                                                                   \
            base *= base;                                                                    \
        }                                                                                    \
        return (T)r;                                                                         \
    }                                                                                        \
    BIN_LOOPS(op##_##s, T, ipow_##s(x, y))
#define POW_FLT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, pow(x, y))

/* Maximum, Minimum: nan wins (x is nan, or the comparison fails and y, possibly nan, is taken). */
#define MAX_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x > y ? x : y)
#define MAX_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, (x > y || isnan(x)) ? x : y)
#define MIN_INT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, x < y ? x : y)
#define MIN_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, (x < y || isnan(x)) ? x : y)

SINTS(ADD_INT, add) UINTS(ADD_INT, add) FLOATS(ADD_FLT, add) CPLX(ADD_NUM, add) HALVES(HALF_BIN, add)
SINTS(SUB_INT, sub) UINTS(SUB_INT, sub) FLOATS(SUB_FLT, sub) CPLX(SUB_NUM, sub) HALVES(HALF_BIN, sub)
SINTS(MUL_INT, mul) UINTS(MUL_INT, mul) FLOATS(MUL_FLT, mul) CPLX(MUL_NUM, mul) HALVES(HALF_BIN, mul)
SINTS(DIV_SINT, div) UINTS(DIV_UINT, div) FLOATS(DIV_FLT, div) CPLX(DIV_NUM, div) HALVES(HALF_BIN, div)
SINTS(FLOORDIV_SINT, floordiv) UINTS(DIV_UINT, floordiv) FLOATS(FLOORDIV_FLT, floordiv)
HALVES(HALF_BIN, floordiv)
FLOATS(TRUNCDIV_FLT, truncdiv) HALVES(HALF_BIN, truncdiv)
SINTS(FLOORMOD_SINT, floormod) UINTS(MOD_UINT, floormod) FLOATS(FLOORMOD_FLT, floormod)
HALVES(HALF_BIN, floormod)
SINTS(TRUNCMOD_SINT, truncmod) UINTS(MOD_UINT, truncmod) FLOATS(TRUNCMOD_FLT, truncmod)
HALVES(HALF_BIN, truncmod)
SINTS(SQDIFF_INT, sqdiff) UINTS(SQDIFF_INT, sqdiff) FLOATS(SQDIFF_FLT, sqdiff) HALVES(HALF_BIN, sqdiff)
SINTS(POW_INT, pow) UINTS(POW_INT, pow) FLOATS(POW_FLT, pow) HALVES(HALF_BIN, pow)
SINTS(MAX_INT, maximum) UINTS(MAX_INT, maximum) FLOATS(MAX_FLT, maximum) HALVES(HALF_BIN, maximum)
SINTS(MIN_INT, minimum) UINTS(MIN_INT, minimum) FLOATS(MIN_FLT, minimum) HALVES(HALF_BIN, minimum)
/* DivNoNan: 0 where y is 0, whatever x is. */
#define DIVNONAN_FLT(op, s, T, U, DT) BIN_LOOPS(op##_##s, T, y == 0 ? (T)0 : x / y)
FLOATS(DIVNONAN_FLT, divnonan) HALVES(HALF_BIN, divnonan)
/* The gradient ops of y = Sqrt, Rsqrt, Reciprocal (x here is y, y is dy), in TensorFlow's order of
 * operations (Eigen's scalar_*_gradient_op), so that results round as TensorFlow's do. */
#define SQRTGRAD_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, (T)0.5 * y / x)
#define RSQRTGRAD_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, (T)-0.5 * (y * x) * (x * x))
#define RECIPGRAD_FLT(op, s, T, U, DT) BIN_LOOPS_WIDE(op##_##s, T, -x * x * y)
FLOATS(SQRTGRAD_FLT, sqrtgrad) HALVES(HALF_BIN, sqrtgrad)
FLOATS(RSQRTGRAD_FLT, rsqrtgrad) HALVES(HALF_BIN, rsqrtgrad)
FLOATS(RECIPGRAD_FLT, recipgrad) HALVES(HALF_BIN, recipgrad)

#define ARITH_TABLE(op)                                                                      \
    static const bin_loops op##_loops[TIDE_NUM_DTYPES] = {                                   \
        SINTS(BIN_ENTRY, op) UINTS(BIN_ENTRY, op) FLOATS(BIN_ENTRY, op) HALVES(BIN_ENTRY, op) \
        CPLX(BIN_ENTRY, op)};
#define REAL_TABLE(op)                                                                       \
    static const bin_loops op##_loops[TIDE_NUM_DTYPES] = {                                   \
        SINTS(BIN_ENTRY, op) UINTS(BIN_ENTRY, op) FLOATS(BIN_ENTRY, op) HALVES(BIN_ENTRY, op)};
ARITH_TABLE(add)
ARITH_TABLE(sub)
ARITH_TABLE(mul)
ARITH_TABLE(div)
REAL_TABLE(floordiv)
REAL_TABLE(floormod)
REAL_TABLE(truncmod)
REAL_TABLE(sqdiff)
/* TruncateDiv: integers truncate like Div. */
static const bin_loops truncdiv_loops[TIDE_NUM_DTYPES] = {
    SINTS(BIN_ENTRY, div) UINTS(BIN_ENTRY, div) FLOATS(BIN_ENTRY, truncdiv) HALVES(BIN_ENTRY, truncdiv)};
REAL_TABLE(pow)
REAL_TABLE(maximum)
REAL_TABLE(minimum)
#define FLOAT_BIN_TABLE(op)                                                                  \
    static const bin_loops op##_loops[TIDE_NUM_DTYPES] = {FLOATS(BIN_ENTRY, op) HALVES(BIN_ENTRY, op)};
FLOAT_BIN_TABLE(divnonan)
FLOAT_BIN_TABLE(sqrtgrad)
FLOAT_BIN_TABLE(rsqrtgrad)
FLOAT_BIN_TABLE(recipgrad)

/* ---------------------------------------------------------------- unary ops */

#define NEG_INT(op, s, T, U, DT) UN_LOOP(op##_##s, T, (T)(0u - (U)x))
#define NEG_NUM(op, s, T, U, DT) UN_LOOP(op##_##s, T, -x)
#define ABS_INT(op, s, T, U, DT) UN_LOOP(op##_##s, T, x < 0 ? (T)(0u - (U)x) : x)
#define ABS_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, fabs(x))
#define SIGN_INT(op, s, T, U, DT) UN_LOOP(op##_##s, T, (T)((x > 0) - (x < 0)))
#define SIGN_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, x > 0 ? (T)1 : x < 0 ? (T)-1 : x)
#define SQUARE_INT(op, s, T, U, DT) UN_LOOP(op##_##s, T, (T)((U)x * (U)x))
#define SQUARE_NUM(op, s, T, U, DT) UN_LOOP(op##_##s, T, x * x)
/* Sqrt, Rsqrt: tide_sqrt_f32/_f64 (SSE2, AVX2 or AVX-512 by the CPU, correctly rounded). */
#define SQRT_LOOP_VARIANT(name, TARGET, ISA, SFX, RECIP)                                    \
    TARGET static void name(const void *px, void *py, int64_t n)                             \
    {                                                                                        \
        TIDE_ISA_FN(tide_sqrt_##SFX, ISA)(px, py, n, RECIP);                                 \
    }
#define SQRT_LOOP(name, SFX, RECIP)                                                          \
    TIDE_ISA_VARIANTS(SQRT_LOOP_VARIANT, name, SFX, RECIP)                                   \
    static void name(const void *px, void *py, int64_t n) { TIDE_ISA_DISPATCH(name, px, py, n); }
/* float32 exp (tide_fast_expf), tanh and sigmoid: branch-free approximations the compiler
 * vectorises (libm's calls cannot be), as TensorFlow's Eigen kernels do. tanh: Eigen's 13/6
 * rational approximation, within 7 ulp (tanh rounds to +-1 beyond +-9). Measured against libm in
 * double over every 257th float32 (tests/kernels/test_vecwidth.c): exp 1 ulp, sigmoid 3, tanh 6. */
static inline float fast_tanhf(float x)
{
    float c = x > 9.0f ? 9.0f : x < -9.0f ? -9.0f : x, c2 = c * c;
    float p = -2.76076847742355e-16f;
    p = p * c2 + 2.00018790482477e-13f;
    p = p * c2 + -8.60467152213735e-11f;
    p = p * c2 + 5.12229709037114e-08f;
    p = p * c2 + 1.48572235717979e-05f;
    p = p * c2 + 6.37261928875436e-04f;
    p = p * c2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * c2 + 1.18534705686654e-04f;
    q = q * c2 + 2.26843463243900e-03f;
    q = q * c2 + 4.89352518554385e-03f;
    return fabs(x) < 0.0004f ? x : c * p / q; /* tiny x (and +-0): tanh x == x */
}

static inline float fast_sigmoidf(float x)
{
    float e = tide_fast_expf(-fabs(x)), r = 1.0f / (1.0f + e);
    return x >= 0 ? r : e * r;
}

/* Reciprocal; the roundings (Round and Rint: halves to even, C's rint in the default rounding mode;
 * integers are already round). */
#define RECIP_NUM(op, s, T, U, DT) UN_LOOP(op##_##s, T, 1 / x)
#define FLOOR_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, floor(x))
#define CEIL_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, ceil(x))
#define RINT_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, rint(x))
#define SAME_INT(op, s, T, U, DT) UN_LOOP(op##_##s, T, x)
#define LOG_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, log(x))
#define LOG1P_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, log1p(x))
#define SIN_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, sin(x))
#define COS_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, cos(x))
/* tf.math's other functions, libm's (the float versions for float32, through tgmath.h). */
#define LIBM_FLT(op, s, T, U, DT) UN_LOOP(op##_##s, T, op(x))
#define LIBM_OPS(X)                                                                          \
    X(expm1) X(erf) X(erfc) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh)
#define LIBM_LOOPS(op) FLOATS(LIBM_FLT, op) HALVES(HALF_UN, op)
LIBM_OPS(LIBM_LOOPS)
/* Sigmoid from e = exp(-|x|) <= 1, which cannot overflow: 1/(1+e) for x >= 0, e/(1+e) below. */
static inline double sigmoid_d(double x)
{
    double e = exp(-fabs(x)), r = 1 / (1 + e);
    return x >= 0 ? r : e * r;
}

SINTS(NEG_INT, neg) FLOATS(NEG_NUM, neg) CPLX(NEG_NUM, neg) HALVES(HALF_UN, neg)
SINTS(ABS_INT, abs) FLOATS(ABS_FLT, abs) HALVES(HALF_UN, abs)
SINTS(SIGN_INT, sign) FLOATS(SIGN_FLT, sign) HALVES(HALF_UN, sign)
SINTS(SQUARE_INT, square) UINTS(SQUARE_INT, square) FLOATS(SQUARE_NUM, square) CPLX(SQUARE_NUM, square)
HALVES(HALF_UN, square)
FLOATS(RECIP_NUM, reciprocal) CPLX(RECIP_NUM, reciprocal) HALVES(HALF_UN, reciprocal)
FLOATS(FLOOR_FLT, floor) HALVES(HALF_UN, floor)
FLOATS(CEIL_FLT, ceil) HALVES(HALF_UN, ceil)
FLOATS(RINT_FLT, rint) HALVES(HALF_UN, rint)
SINTS(SAME_INT, round)
SQRT_LOOP(sqrt_f32, f32, false)
SQRT_LOOP(sqrt_f64, f64, false)
SQRT_LOOP(rsqrt_f32, f32, true)
SQRT_LOOP(rsqrt_f64, f64, true)
HALVES(HALF_UN, sqrt)
HALVES(HALF_UN, rsqrt)
UN_LOOP_WIDE(exp_f32, float, tide_fast_expf(x))
UN_LOOP(exp_f64, double, exp(x))
HALVES(HALF_UN, exp)
FLOATS(LOG_FLT, log) HALVES(HALF_UN, log)
FLOATS(LOG1P_FLT, log1p) HALVES(HALF_UN, log1p)
FLOATS(SIN_FLT, sin) HALVES(HALF_UN, sin)
FLOATS(COS_FLT, cos) HALVES(HALF_UN, cos)
UN_LOOP_WIDE(tanh_f32, float, fast_tanhf(x))
UN_LOOP(tanh_f64, double, tanh(x))
HALVES(HALF_UN, tanh)
UN_LOOP_WIDE(sigmoid_f32, float, fast_sigmoidf(x))
UN_LOOP(sigmoid_f64, double, sigmoid_d(x))
HALVES(HALF_UN, sigmoid)

static const un_loop neg_loops[TIDE_NUM_DTYPES] = {SINTS(UN_ENTRY, neg) FLOATS(UN_ENTRY, neg)
                                                       HALVES(UN_ENTRY, neg) CPLX(UN_ENTRY, neg)};
static const un_loop abs_loops[TIDE_NUM_DTYPES] = {SINTS(UN_ENTRY, abs) FLOATS(UN_ENTRY, abs)
                                                       HALVES(UN_ENTRY, abs)};
static const un_loop sign_loops[TIDE_NUM_DTYPES] = {SINTS(UN_ENTRY, sign) FLOATS(UN_ENTRY, sign)
                                                        HALVES(UN_ENTRY, sign)};
static const un_loop square_loops[TIDE_NUM_DTYPES] = {
    SINTS(UN_ENTRY, square) UINTS(UN_ENTRY, square) FLOATS(UN_ENTRY, square) HALVES(UN_ENTRY, square)
    CPLX(UN_ENTRY, square)};
static const un_loop reciprocal_loops[TIDE_NUM_DTYPES] = {
    FLOATS(UN_ENTRY, reciprocal) HALVES(UN_ENTRY, reciprocal) CPLX(UN_ENTRY, reciprocal)};
static const un_loop round_loops[TIDE_NUM_DTYPES] = {SINTS(UN_ENTRY, round) FLOATS(UN_ENTRY, rint)
                                                         HALVES(UN_ENTRY, rint)};
#define FLOAT_TABLE(op)                                                                      \
    static const un_loop op##_loops[TIDE_NUM_DTYPES] = {FLOATS(UN_ENTRY, op) HALVES(UN_ENTRY, op)};
FLOAT_TABLE(floor)
FLOAT_TABLE(ceil)
FLOAT_TABLE(rint)
FLOAT_TABLE(sqrt)
FLOAT_TABLE(rsqrt)
FLOAT_TABLE(exp)
FLOAT_TABLE(log)
FLOAT_TABLE(log1p)
FLOAT_TABLE(sin)
FLOAT_TABLE(cos)
FLOAT_TABLE(tanh)
FLOAT_TABLE(sigmoid)
LIBM_OPS(FLOAT_TABLE)

/* ---------------------------------------------------------------- checks of y */

/* The index of the first element of p[0..n) that is zero (want_negative: negative), or -1. Floats
 * are never rejected: they divide per IEEE. */
#define FIND(T, COND)                                                                        \
    do {                                                                                     \
        const T *v = p;                                                                      \
        for (int64_t i = 0; i < n; i++)                                                      \
            if (COND)                                                                        \
                return i;                                                                    \
        return -1;                                                                           \
    } while (0)

static int64_t find_zero(tide_dtype dt, const void *p, int64_t n)
{
    switch (dt) {
    case TIDE_INT8: FIND(int8_t, v[i] == 0);
    case TIDE_INT16: FIND(int16_t, v[i] == 0);
    case TIDE_INT32: FIND(int32_t, v[i] == 0);
    case TIDE_INT64: FIND(int64_t, v[i] == 0);
    case TIDE_UINT8: FIND(uint8_t, v[i] == 0);
    case TIDE_UINT16: FIND(uint16_t, v[i] == 0);
    default: return -1;
    }
}

static int64_t find_negative(tide_dtype dt, const void *p, int64_t n)
{
    switch (dt) {
    case TIDE_INT8: FIND(int8_t, v[i] < 0);
    case TIDE_INT16: FIND(int16_t, v[i] < 0);
    case TIDE_INT32: FIND(int32_t, v[i] < 0);
    case TIDE_INT64: FIND(int64_t, v[i] < 0);
    default: return -1;
    }
}

/* ---------------------------------------------------------------- op tables */

typedef struct binary_op {
    const char *name;
    const bin_loops *loops;                          /* indexed by dtype */
    int64_t (*bad_y)(tide_dtype, const void *, int64_t); /* NULL or finds a y element refused */
    const char *bad_y_what;                          /* what is wrong with it */
    double cost;                                     /* nanoseconds per element */
    unsigned flags;
    const char *same_shape[2]; /* the inputs' names when they must have one shape, else NULL */
} binary_op;

#define BROADCAST {NULL, NULL}
#define Y_DY {"y", "dy"}

static const binary_op binary_ops[] = {
    {"Add", add_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"Sub", sub_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"Mul", mul_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"AddV2", add_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"Div", div_loops, find_zero, "integer division by zero", 4.0, 0, BROADCAST},
    {"RealDiv", div_loops, NULL, NULL, 4.0, 0, BROADCAST}, /* floats and complex numbers only */
    {"FloorDiv", floordiv_loops, find_zero, "integer division by zero", 6.0, 0, BROADCAST},
    {"TruncateDiv", truncdiv_loops, find_zero, "integer division by zero", 6.0, 0, BROADCAST},
    {"Mod", truncmod_loops, find_zero, "integer modulo by zero", 8.0, 0, BROADCAST},
    {"TruncateMod", truncmod_loops, find_zero, "integer modulo by zero", 8.0, 0, BROADCAST},
    {"FloorMod", floormod_loops, find_zero, "integer modulo by zero", 8.0, 0, BROADCAST},
    {"SquaredDifference", sqdiff_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"Pow", pow_loops, find_negative, "integers to negative integer powers are not allowed", 20.0,
     TIDE_KERNEL_EXPENSIVE, BROADCAST},
    {"Maximum", maximum_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"Minimum", minimum_loops, NULL, NULL, 1.0, 0, BROADCAST},
    {"DivNoNan", divnonan_loops, NULL, NULL, 4.0, 0, BROADCAST},
    {"SqrtGrad", sqrtgrad_loops, NULL, NULL, 4.0, 0, Y_DY},
    {"RsqrtGrad", rsqrtgrad_loops, NULL, NULL, 1.0, 0, Y_DY},
    {"ReciprocalGrad", recipgrad_loops, NULL, NULL, 1.0, 0, Y_DY},
    {"InvGrad", recipgrad_loops, NULL, NULL, 1.0, 0, Y_DY},
};

typedef struct unary_op {
    const char *name;
    const un_loop *loops; /* indexed by dtype */
    double cost;          /* nanoseconds per element */
    unsigned flags;
} unary_op;

static const unary_op unary_ops[] = {
    {"Neg", neg_loops, 0.5, 0},
    {"Abs", abs_loops, 0.5, 0},
    {"Sign", sign_loops, 0.5, 0},
    {"Square", square_loops, 0.5, 0},
    {"Reciprocal", reciprocal_loops, 1.0, 0},
    {"Inv", reciprocal_loops, 1.0, 0},
    {"Floor", floor_loops, 0.5, 0},
    {"Ceil", ceil_loops, 0.5, 0},
    {"Rint", rint_loops, 0.5, 0},
    {"Round", round_loops, 0.5, 0},
    {"Sqrt", sqrt_loops, 2.0, 0},
    {"Rsqrt", rsqrt_loops, 3.0, 0},
    {"Exp", exp_loops, 4.0, TIDE_KERNEL_EXPENSIVE},
    {"Log", log_loops, 8.0, TIDE_KERNEL_EXPENSIVE},
    {"Log1p", log1p_loops, 12.0, TIDE_KERNEL_EXPENSIVE},
    {"Sin", sin_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Cos", cos_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Tanh", tanh_loops, 6.0, TIDE_KERNEL_EXPENSIVE},
    {"Sigmoid", sigmoid_loops, 6.0, TIDE_KERNEL_EXPENSIVE},
    {"Expm1", expm1_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Erf", erf_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Erfc", erfc_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Tan", tan_loops, 15.0, TIDE_KERNEL_EXPENSIVE},
    {"Asin", asin_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Acos", acos_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Atan", atan_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Sinh", sinh_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Cosh", cosh_loops, 10.0, TIDE_KERNEL_EXPENSIVE},
    {"Asinh", asinh_loops, 15.0, TIDE_KERNEL_EXPENSIVE},
    {"Acosh", acosh_loops, 15.0, TIDE_KERNEL_EXPENSIVE},
    {"Atanh", atanh_loops, 15.0, TIDE_KERNEL_EXPENSIVE},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- binary kernel */

/* One broadcast binary computation, split over output elements by parallel_for. */
typedef struct bin_job {
    const bin_loops *f;
    const tide_bcast *bc; /* NULL: flat, x and y advance by x_step, y_step (0 or 1) */
    bin_loop flat;
    int64_t x_step, y_step;
    const char *x, *y;
    char *z;
    int64_t size; /* bytes per element */
} bin_job;

/* Output elements [begin, end) row by row. Collapsed, the innermost dim never broadcasts both x and
 * y (an output dim of size 1 is dropped), so one of them advances along a row. */
static void bin_rows(const bin_job *j, int64_t begin, int64_t end)
{
    const tide_bcast *bc = j->bc;
    int64_t sz = j->size, inner = bc->inner, row = begin / inner, col = begin % inner;
    bin_loop fn = bc->a_inner ? (bc->b_inner ? j->f->vv : j->f->vs) : j->f->sv;
    while (begin < end) {
        int64_t len = inner - col < end - begin ? inner - col : end - begin, xo, yo;
        tide_bcast_row(bc, row, &xo, &yo);
        xo += col * bc->a_inner;
        yo += col * bc->b_inner;
        fn(j->x + xo * sz, j->y + yo * sz, j->z + begin * sz, len);
        begin += len;
        col = 0;
        row++;
    }
}

static void bin_range(int64_t begin, int64_t end, void *arg)
{
    const bin_job *j = arg;
    if (j->bc)
        bin_rows(j, begin, end);
    else
        j->flat(j->x + begin * j->x_step * j->size, j->y + begin * j->y_step * j->size,
                j->z + begin * j->size, end - begin);
}

static tide_status binary_init(tide_kernel_ctx *ctx, void **state)
{
    const char *name = tide_kernel_op_name(ctx);
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    for (size_t i = 0; i < COUNT(binary_ops); i++)
        if (strcmp(binary_ops[i].name, name) == 0) {
            if (dt <= TIDE_INVALID_DTYPE || dt >= TIDE_NUM_DTYPES || !binary_ops[i].loops[dt].vv)
                break;
            *state = (void *)&binary_ops[i];
            return TIDE_OK;
        }
    return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                             tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
}

/* Refuses y when the op's check finds a bad element (integer division by zero, ...). */
static tide_status check_y(tide_kernel_ctx *ctx, const binary_op *op, const tide_tensor *y)
{
    int64_t bad = op->bad_y(tide_tensor_dtype(y), tide_tensor_data(y), tide_tensor_num_elements(y));
    if (bad < 0)
        return TIDE_OK;
    char s[TIDE_SHAPE_STR_MAX];
    tide_shape_format(tide_tensor_shape(y), s, sizeof s);
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s: element %lld of y (shape %s) is %.0f",
                             op->bad_y_what, (long long)bad, s, tide_tensor_get_f64(y, bad));
}

/* Which input to write the output over: one laid out like the output (x_fits, y_fits: it has as
 * many elements), preferring one nobody else holds; forward_or_alloc still decides whether it may. */
static int forward_candidate(const tide_tensor *x, const tide_tensor *y, bool x_fits, bool y_fits)
{
    return y_fits && x != y && (!x_fits || !tide_tensor_is_exclusive(x)) && tide_tensor_is_exclusive(y);
}

static tide_status binary_broadcast(tide_kernel_ctx *ctx, const binary_op *op, tide_tensor *x,
                                    tide_tensor *y)
{
    tide_bcast bc;
    if (!tide_bcast_init(&bc, tide_tensor_shape(x), tide_tensor_shape(y))) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "incompatible shapes for broadcasting: x is %s, y is %s",
                                 tide_shape_format(tide_tensor_shape(x), a, sizeof a),
                                 tide_shape_format(tide_tensor_shape(y), b, sizeof b));
    }
    if (op->bad_y && bc.out_n > 0 && check_y(ctx, op, y) != TIDE_OK)
        return tide_kernel_status(ctx);
    int fwd = forward_candidate(x, y, tide_tensor_num_elements(x) == bc.out_n,
                                tide_tensor_num_elements(y) == bc.out_n);
    tide_tensor *z = tide_kernel_forward_or_alloc(ctx, fwd, 0, &bc.out);
    if (!z)
        return tide_kernel_status(ctx);
    if (bc.out_n == 0)
        return TIDE_OK;
    tide_dtype dt = tide_tensor_dtype(x);
    const bin_loops *f = &op->loops[dt];
    bin_job j = {.f = f, .x = tide_tensor_data(x), .y = tide_tensor_data(y), .z = tide_tensor_data(z),
                 .size = (int64_t)tide_dtype_size(dt), .x_step = 1, .y_step = 1};
    if (bc.a_scalar && !bc.b_scalar) {
        j.flat = f->sv;
        j.x_step = 0;
    } else if (bc.b_scalar && !bc.a_scalar) {
        j.flat = f->vs;
        j.y_step = 0;
    } else if (bc.a_scalar && bc.b_scalar) {
        j.flat = f->vv; /* [1,1] with [1]: one element each */
    } else {
        j.bc = &bc;
    }
    tide_kernel_parallel_for(ctx, bc.out_n, op->cost, bin_range, &j);
    return TIDE_OK;
}

static tide_status binary_compute(tide_kernel_ctx *ctx)
{
    const binary_op *op = tide_kernel_state(ctx);
    tide_tensor *x = tide_kernel_input(ctx, 0), *y = tide_kernel_input(ctx, 1);
    const tide_shape *xs = tide_tensor_shape(x);
    if (!tide_shape_equal(xs, tide_tensor_shape(y)) && op->same_shape[0]) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s and %s must have the same shape: %s is "
                                 "%s, %s is %s", op->same_shape[0], op->same_shape[1], op->same_shape[0],
                                 tide_shape_format(xs, a, sizeof a), op->same_shape[1],
                                 tide_shape_format(tide_tensor_shape(y), b, sizeof b));
    }
    if (!tide_shape_equal(xs, tide_tensor_shape(y)))
        return binary_broadcast(ctx, op, x, y);
    /* Same shapes (scalars included): the hot path, one flat loop. */
    int64_t n = tide_tensor_num_elements(x);
    if (op->bad_y && n > 0 && check_y(ctx, op, y) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_tensor *z = tide_kernel_forward_or_alloc(ctx, forward_candidate(x, y, true, true), 0, xs);
    if (!z)
        return tide_kernel_status(ctx);
    const bin_loops *f = &op->loops[tide_tensor_dtype(x)];
    if ((double)n * op->cost < INLINE_NS) {
        f->vv(tide_tensor_data(x), tide_tensor_data(y), tide_tensor_data(z), n);
        return TIDE_OK;
    }
    bin_job j = {.f = f, .flat = f->vv, .x_step = 1, .y_step = 1, .x = tide_tensor_data(x),
                 .y = tide_tensor_data(y), .z = tide_tensor_data(z),
                 .size = (int64_t)tide_dtype_size(tide_tensor_dtype(x))};
    tide_kernel_parallel_for(ctx, n, op->cost, bin_range, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- unary kernel */

typedef struct un_job {
    un_loop fn;
    const char *x;
    char *y;
    int64_t size;
} un_job;

static void un_range(int64_t begin, int64_t end, void *arg)
{
    const un_job *j = arg;
    j->fn(j->x + begin * j->size, j->y + begin * j->size, end - begin);
}

static tide_status unary_init(tide_kernel_ctx *ctx, void **state)
{
    const char *name = tide_kernel_op_name(ctx);
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    for (size_t i = 0; i < COUNT(unary_ops); i++)
        if (strcmp(unary_ops[i].name, name) == 0) {
            if (dt <= TIDE_INVALID_DTYPE || dt >= TIDE_NUM_DTYPES || !unary_ops[i].loops[dt])
                break;
            *state = (void *)&unary_ops[i];
            return TIDE_OK;
        }
    return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                             tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
}

static tide_status unary_compute(tide_kernel_ctx *ctx)
{
    const unary_op *op = tide_kernel_state(ctx);
    tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    if (!y)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(x);
    un_loop fn = op->loops[tide_tensor_dtype(x)];
    if ((double)n * op->cost < INLINE_NS) {
        fn(tide_tensor_data(x), tide_tensor_data(y), n);
        return TIDE_OK;
    }
    un_job j = {fn, tide_tensor_data(x), tide_tensor_data(y),
                (int64_t)tide_dtype_size(tide_tensor_dtype(x))};
    tide_kernel_parallel_for(ctx, n, op->cost, un_range, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- fusion (tide_elementwise) */

/* float32 and float64 offer their vv loop (a scalar operand reaches it splatted along a tile: the
 * same expression per element as the sv and vs loops), broadcasting where the op does. The checks of
 * y never refuse a float. */
static bool binary_elementwise(tide_kernel_ctx *ctx, tide_elementwise *ew)
{
    const binary_op *op = tide_kernel_state(ctx);
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
        return false;
    *ew = (tide_elementwise){.binary = op->loops[dt].vv, .cost = op->cost, .broadcast = op->same_shape[0] ? 0u : 3u};
    return true;
}

static bool unary_elementwise(tide_kernel_ctx *ctx, tide_elementwise *ew)
{
    const unary_op *op = tide_kernel_state(ctx);
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
        return false;
    *ew = (tide_elementwise){.unary = op->loops[dt], .cost = op->cost};
    return true;
}

/* ---------------------------------------------------------------- AddN */

/* Elements per block: every input is added into a block before the next, so it stays in cache. */
#define ADDN_BLOCK 512

typedef struct addn_job {
    tide_kernel_ctx *ctx;
    bin_loop add;
    int n_in;
    bool z_is_later_input; /* z is input k >= 2's buffer: sum a block aside, then store it */
    char *z;
    int64_t size;
} addn_job;

/* Sums blocks of [begin, end) in input order (so the result never depends on forwarding). */
static void addn_range(int64_t begin, int64_t end, void *arg)
{
    const addn_job *j = arg;
    _Alignas(16) char tmp[ADDN_BLOCK * 16];
    for (int64_t at = begin; at < end; at += ADDN_BLOCK) {
        int64_t m = end - at < ADDN_BLOCK ? end - at : ADDN_BLOCK, off = at * j->size;
        char *dst = j->z_is_later_input ? tmp : j->z + off;
        const char *in0 = tide_tensor_data(tide_kernel_input(j->ctx, 0));
        const char *in1 = tide_tensor_data(tide_kernel_input(j->ctx, 1));
        j->add(in0 + off, in1 + off, dst, m);
        for (int k = 2; k < j->n_in; k++)
            j->add(dst, (const char *)tide_tensor_data(tide_kernel_input(j->ctx, k)) + off, dst, m);
        if (dst == tmp)
            memcpy(j->z + off, tmp, (size_t)(m * j->size));
    }
}

static tide_status addn_init(tide_kernel_ctx *ctx, void **state)
{
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt <= TIDE_INVALID_DTYPE || dt >= TIDE_NUM_DTYPES || !add_loops[dt].vv)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    *state = (void *)&add_loops[dt];
    return TIDE_OK;
}

static tide_status addn_compute(tide_kernel_ctx *ctx)
{
    const bin_loops *add = tide_kernel_state(ctx);
    int n_in = tide_kernel_num_inputs(ctx);
    if (n_in < 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "needs at least one input");
    tide_tensor *first = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(first);
    int fwd = -1;
    for (int k = 0; k < n_in; k++) {
        tide_tensor *in = tide_kernel_input(ctx, k);
        if (!tide_shape_equal(s, tide_tensor_shape(in))) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "inputs must all have the same shape: input 0 is %s but input %d is %s",
                                     tide_shape_format(s, a, sizeof a), k,
                                     tide_shape_format(tide_tensor_shape(in), b, sizeof b));
        }
        if (fwd < 0 && tide_tensor_is_exclusive(in))
            fwd = k;
    }
    if (n_in == 1) {
        tide_kernel_set_output(ctx, 0, first);
        return tide_kernel_status(ctx);
    }
    tide_tensor *z = tide_kernel_forward_or_alloc(ctx, fwd < 0 ? 0 : fwd, 0, s);
    if (!z)
        return tide_kernel_status(ctx);
    int64_t n = tide_shape_num_elements(s);
    addn_job j = {.ctx = ctx, .add = add->vv, .n_in = n_in, .z = tide_tensor_data(z),
                  .size = (int64_t)tide_dtype_size(tide_tensor_dtype(first))};
    /* Writing over input 0 or 1 is safe (each element is read before it is written); over a later
     * input, the running sum would overwrite it before it is added. */
    j.z_is_later_input = fwd >= 2 && tide_tensor_data(z) == tide_tensor_data(tide_kernel_input(ctx, fwd));
    tide_kernel_parallel_for(ctx, n, 1.0 * (n_in - 1), addn_range, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ClipByValue */

/* y[i] = max(min(t[i], hi), lo) with TensorFlow's order (lo wins when lo > hi; nan stays): the
 * bounds advance by lo_step / hi_step (0: a scalar, 1: t's shape). */
#define CLIP_LOOP(name, T)                                                                   \
    static void name(const void *pt, const void *plo, const void *phi, void *py, int64_t n,  \
                     int64_t lo_step, int64_t hi_step)                                        \
    {                                                                                        \
        const T *t = pt, *lo = plo, *hi = phi;                                               \
        T *y = py;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                    \
            const T h = hi[i * hi_step], l = lo[i * lo_step];                                \
            T v = h < t[i] ? h : t[i];                                                       \
            y[i] = v < l ? l : v;                                                            \
        }                                                                                    \
    }
typedef void (*clip_loop)(const void *, const void *, const void *, void *, int64_t, int64_t, int64_t);
CLIP_LOOP(clip_i8, int8_t)
CLIP_LOOP(clip_i16, int16_t)
CLIP_LOOP(clip_i32, int32_t)
CLIP_LOOP(clip_i64, int64_t)
CLIP_LOOP(clip_u8, uint8_t)
CLIP_LOOP(clip_u16, uint16_t)
CLIP_LOOP(clip_f32, float)
CLIP_LOOP(clip_f64, double)

/* float16 / bfloat16: each element through float32 (exact: the clip only picks one of three). */
static void clip_half(bool bf16, const uint16_t *t, const uint16_t *lo, const uint16_t *hi, uint16_t *y,
                      int64_t n, int64_t lo_step, int64_t hi_step)
{
    for (int64_t i = 0; i < n; i++) {
        float a[3];
        half_to_f32(bf16, &t[i], &a[0], 1);
        half_to_f32(bf16, &lo[i * lo_step], &a[1], 1);
        half_to_f32(bf16, &hi[i * hi_step], &a[2], 1);
        float v = a[2] < a[0] ? a[2] : a[0];
        v = v < a[1] ? a[1] : v;
        f32_to_half(bf16, &v, &y[i], 1);
    }
}

static tide_status clip_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *t = tide_kernel_input(ctx, 0), *bound[2] = {tide_kernel_input(ctx, 1), tide_kernel_input(ctx, 2)};
    static const char *const names[] = {"clip_value_min", "clip_value_max"};
    int64_t n = tide_tensor_num_elements(t), step[2];
    for (int i = 0; i < 2; i++) {
        const tide_shape *b = tide_tensor_shape(bound[i]);
        step[i] = b->rank == 0 ? 0 : 1;
        if (b->rank != 0 && !tide_shape_equal(b, tide_tensor_shape(t))) {
            char a[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s of shape %s must be a scalar or have "
                                     "t's shape %s", names[i], tide_shape_format(b, a, sizeof a),
                                     tide_shape_format(tide_tensor_shape(t), c, sizeof c));
        }
    }
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(t));
    if (!y)
        return tide_kernel_status(ctx);
    const void *pt = tide_tensor_data(t), *lo = tide_tensor_data(bound[0]), *hi = tide_tensor_data(bound[1]);
    void *py = tide_tensor_data(y);
    static const clip_loop loops[TIDE_NUM_DTYPES] = {
        [TIDE_INT8] = clip_i8,   [TIDE_INT16] = clip_i16,  [TIDE_INT32] = clip_i32,   [TIDE_INT64] = clip_i64,
        [TIDE_UINT8] = clip_u8,  [TIDE_UINT16] = clip_u16, [TIDE_FLOAT32] = clip_f32, [TIDE_FLOAT64] = clip_f64};
    tide_dtype dt = tide_tensor_dtype(t);
    if (dt == TIDE_FLOAT16 || dt == TIDE_BFLOAT16)
        clip_half(dt == TIDE_BFLOAT16, pt, lo, hi, py, n, step[0], step[1]);
    else if (dt > TIDE_INVALID_DTYPE && dt < TIDE_NUM_DTYPES && loops[dt])
        loops[dt](pt, lo, hi, py, n, step[0], step[1]);
    else
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s", tide_dtype_name(dt));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- registration */

static void register_math_kernels(void)
{
    for (size_t i = 0; i < COUNT(binary_ops); i++)
        tide_kernel_register(&(tide_kernel_spec){.op = binary_ops[i].name, .device_type = "cpu",
                                                  .flags = binary_ops[i].flags, .init = binary_init,
                                                  .compute = binary_compute, .elementwise = binary_elementwise});
    for (size_t i = 0; i < COUNT(unary_ops); i++)
        tide_kernel_register(&(tide_kernel_spec){.op = unary_ops[i].name, .device_type = "cpu",
                                                  .flags = unary_ops[i].flags, .init = unary_init,
                                                  .compute = unary_compute, .elementwise = unary_elementwise});
    tide_kernel_register(&(tide_kernel_spec){.op = "AddN", .device_type = "cpu", .init = addn_init,
                                              .compute = addn_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "ClipByValue", .device_type = "cpu",
                                              .compute = clip_compute});
}
TIDE_REGISTER(register_math_kernels)
