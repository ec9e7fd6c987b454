/* half.h — float16 and bfloat16 in the GPU kernels: the conversions are the engine's own
 * (engine/half_convert.h, which the CPU uses too: dtype.c, tensor_cast.c), so the GPU rounds as the CPU
 * does to the bit; here, the element types the kernels' templates use. The kernels keep both as
 * uint16_t bits and compute in float32 ("computed in float32 and rounded back", as the CPU's kernels),
 * so NaN payloads and rounding agree with the CPU's. */
#ifndef TIDE_CUDA_HALF_H
#define TIDE_CUDA_HALF_H

#include <stdint.h>

#include "half_convert.h"

#ifdef __CUDACC__
/* float16 and bfloat16 as their bits in the kernels' templates; io<T> loads an element as the value
 * the kernels compute on (float for the float types, the integer itself for integers) and stores one
 * back. */
struct f16 { uint16_t bits; };
struct bf16 { uint16_t bits; };

template <class T> struct io {
    typedef T value;
    __device__ static T load(T x) { return x; }
    __device__ static T store(T x) { return x; }
};
template <> struct io<f16> {
    typedef float value;
    __device__ static float load(f16 x) { return tide_half_to_f32(x.bits); }
    __device__ static f16 store(float x) { return f16{tide_half_from_f32(x)}; }
};
template <> struct io<bf16> {
    typedef float value;
    __device__ static float load(bf16 x) { return tide_bhalf_to_f32(x.bits); }
    __device__ static bf16 store(float x) { return bf16{tide_bhalf_from_f32(x)}; }
};
#endif

#endif
