/* philox_block.h — one Philox4x32-10 block (Salmon et al., SC'11) and the float conversions of the
 * random kernels, for the GPU (random.cu) and, compiled as C, for the host test that checks them
 * against the CPU's generator (kernels/cpu/philox.h, tests/gpu/test_cuda_host.c): same counter
 * layout (block number in words 0-1, the node's stream in words 2-3), same key schedule. */
#ifndef TIDE_CUDA_PHILOX_BLOCK_H
#define TIDE_CUDA_PHILOX_BLOCK_H

#include "index_plan.h" /* TIDE_HD */

typedef struct tide_philox_key {
    uint32_t k0, k1;
    uint64_t stream;
} tide_philox_key;

TIDE_HD static inline void tide_philox_block_at(tide_philox_key key, uint64_t block, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = (uint32_t)key.stream,
             c3 = (uint32_t)(key.stream >> 32), k0 = key.k0, k1 = key.k1;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* [0, 1) from the top 24 bits; (0, 1] for logarithms. */
TIDE_HD static inline float tide_philox_unit(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }
TIDE_HD static inline float tide_philox_unit_open0(uint32_t w) { return (float)((w >> 8) + 1) * 0x1p-24f; }

#endif
