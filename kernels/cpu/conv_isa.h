/* conv_isa.h — the function attributes the direct convolution kernels (conv.c, conv_filter.c) compile
 * their AVX2 and AVX-512 variants with. Unlike cpu_util.h's TIDE_TARGET_* they ask GCC to contract
 * a*b+c into FMAs (it does not in ISO C mode unless told so per function), which these kernels' speed
 * and their tested results rely on. Kernels only. */
#ifndef TIDE_CPU_CONV_ISA_H
#define TIDE_CPU_CONV_ISA_H

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_DISPATCH 1
#if defined(__clang__)
#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#else
#define AVX2_FN __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#define AVX512_FN __attribute__((target("avx512f,avx2,fma"), optimize("fp-contract=fast")))
#endif
#else
#define HAVE_X86_DISPATCH 0
#endif
#define INLINE static inline __attribute__((always_inline))

#endif
