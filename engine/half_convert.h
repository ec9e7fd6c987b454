/* half_convert.h — float16 and bfloat16 to and from float32, and the round-to-odd steps that narrow
 * an int64 or a double to them with a single rounding: the one definition the CPU (dtype.c's
 * tide_f32_to_f16 / tide_f16_to_f32 / tide_f32_to_bf16 / tide_bf16_to_f32, tensor_cast.c's casts) and
 * the GPU kernels (kernels/cuda/half.h) share, so that both round to the same bits. Static inline C
 * that a C compiler builds for the host and nvcc for the device (TIDE_HALF_HD). Narrowing rounds to
 * nearest even, overflows to inf, keeps subnormals, and makes a NaN a quiet NaN; widening is exact.
 * tests/engine/test_basics.c checks every function against rounding done by plain arithmetic. */
#ifndef TIDE_HALF_CONVERT_H
#define TIDE_HALF_CONVERT_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TIDE_HALF_HD __host__ __device__
#else
#define TIDE_HALF_HD
#endif

TIDE_HALF_HD static inline uint32_t tide_half_f32_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

TIDE_HALF_HD static inline float tide_half_bits_f32(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

TIDE_HALF_HD static inline uint16_t tide_half_from_f32(float f)
{
    uint32_t x = tide_half_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float v = tide_half_bits_f32(ax) * 16777216.0f; /* scaled by 2^24: the subnormal's integer mantissa */
        return (uint16_t)(sign | (uint16_t)nearbyintf(v));
    }
    uint32_t mant_odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + mant_odd; /* rebias the exponent (-112 << 23) and round to nearest even */
    return (uint16_t)(sign | (uint16_t)(ax >> 13));
}

TIDE_HALF_HD static inline float tide_half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float v = (float)mant / 16777216.0f; /* mant * 2^-24 */
        return sign ? -v : v;
    }
    if (exp == 31)
        return tide_half_bits_f32(sign | 0x7f800000u | (mant << 13));
    return tide_half_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

TIDE_HALF_HD static inline uint16_t tide_bhalf_from_f32(float f)
{
    uint32_t x = tide_half_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* nan: keep it a quiet nan */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

TIDE_HALF_HD static inline float tide_bhalf_to_f32(uint16_t b)
{
    return tide_half_bits_f32((uint32_t)b << 16);
}

/* x rounded to float "to odd": x itself when exact, else the odd one of the two floats around x
 * (truncation toward zero with the last bit set). Rounding that to nearest in a format at least two
 * bits narrower (float16, bfloat16) gives the correctly rounded result: no double rounding. Beyond
 * FLT_MAX it gives FLT_MAX, which both narrow formats round to inf; NaN stays NaN. Branch-free. */
TIDE_HALF_HD static inline float tide_half_f64_to_f32_odd(double x)
{
    float f = (float)x;
    uint32_t b = tide_half_f32_bits(f);
    b -= fabs((double)f) > fabs(x); /* rounded away from zero: step back toward it */
    b |= (double)f != x;            /* inexact: sticky last bit */
    return tide_half_bits_f32(b);
}

/* x as a double rounded to odd (exact up to 2^53; beyond, truncated with a sticky last bit). */
TIDE_HALF_HD static inline double tide_half_i64_to_f64_odd(int64_t x)
{
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    if (u <= ((uint64_t)1 << 53))
        return (double)x;
#ifdef __CUDA_ARCH__
    int shift = 11 - __clzll((long long)u);
#else
    int shift = 11 - __builtin_clzll(u); /* bits beyond the 53 a double keeps */
#endif
    uint64_t kept = (u >> shift) | ((u & (((uint64_t)1 << shift) - 1)) != 0);
    double d = ldexp((double)kept, shift);
    return x < 0 ? -d : d;
}

/* An integer to float16 / bfloat16, rounded once. */
TIDE_HALF_HD static inline uint16_t tide_half_from_i64(int64_t x)
{
    return tide_half_from_f32(tide_half_f64_to_f32_odd(tide_half_i64_to_f64_odd(x)));
}

TIDE_HALF_HD static inline uint16_t tide_bhalf_from_i64(int64_t x)
{
    return tide_bhalf_from_f32(tide_half_f64_to_f32_odd(tide_half_i64_to_f64_odd(x)));
}

#endif
