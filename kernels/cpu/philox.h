/* philox.h — the random generator of the CPU kernels that draw random numbers (random.c's random
 * ops, nn_misc.c's Dropout): Philox4x32-10 (Salmon et al., SC'11), the counter-based generator
 * TensorFlow uses. Block c of a stream is philox(counter c, key), so any part of a stream can be
 * computed without the rest, in parallel and exactly. Kernels only.
 *
 * Seeds (TensorFlow 1.x's rule), resolved once per node by tide_philox_seed in the kernel's init:
 *   graph seed g = tide_kernel_graph_seed (0: none); op seed = the seed/seed2 attrs, "set" when
 *   either is non-zero.
 *   - neither set: key and stream come from getrandom() (clock and address if that fails);
 *   - g set, op seed not: seed = FNV-1a 64 of the node name (so nodes differ), seed2 = 0;
 *   - op seed set, g not: g = 87654321.
 *   key    = mix(mix(g) ^ seed)                         (Philox key words: low, high 32 bits)
 *   stream = mix(key ^ mix(seed2 + 0x9e3779b97f4a7c15)) (counter words 2 and 3)
 *   where mix is SplitMix64's finaliser. Counter words 0-1 count blocks: the node's state holds the
 *   next unused block, and each run reserves the blocks it consumes with one atomic fetch-add
 *   (tide_philox_reserve), so runs of one node (also concurrent ones) never share numbers. Eager
 *   calls build a fresh state, so they start at block 0 every time.
 *
 * Kernels drawing with the same seeds and the same conversion of words to values draw the same
 * numbers: Dropout's uniforms are RandomUniform's. */
#ifndef TIDE_CPU_PHILOX_H
#define TIDE_CPU_PHILOX_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../../engine/tide_op.h"

/* Blocks tide_philox_lanes computes at once. */
#define TIDE_PHILOX_LANES 8

/* One node's generator: its key and stream, and the next block no run has reserved yet. */
typedef struct tide_philox {
    uint32_t key[2];
    uint64_t stream;             /* counter words 2 (low) and 3 (high) */
    _Atomic uint64_t next_block; /* counter words 0-1 of the next unused block */
} tide_philox;

/* Keys gen by the seed rule above from ctx's graph seed, seed/seed2 attrs and node name; its first
 * block is 0. Cannot fail. */
void tide_philox_seed(tide_philox *gen, tide_kernel_ctx *ctx);

/* The first of `blocks` consecutive blocks reserved for this run. */
static inline uint64_t tide_philox_reserve(tide_philox *gen, uint64_t blocks)
{
    return atomic_fetch_add_explicit(&gen->next_block, blocks, memory_order_relaxed);
}

/* One of the ten rounds on counter words c0..c3 with round key (k0, k1). */
static inline void tide_philox_round(uint32_t *c0, uint32_t *c1, uint32_t *c2, uint32_t *c3, uint32_t k0,
                                     uint32_t k1)
{
    uint64_t p0 = (uint64_t)0xD2511F53u * *c0, p1 = (uint64_t)0xCD9E8D57u * *c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ *c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ *c3 ^ k1;
    *c1 = (uint32_t)p1;
    *c3 = (uint32_t)p0;
    *c0 = n0;
    *c2 = n2;
}

/* The four words of one block. */
static inline void tide_philox_block(const tide_philox *gen, uint64_t block, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32);
    uint32_t c2 = (uint32_t)gen->stream, c3 = (uint32_t)(gen->stream >> 32);
    uint32_t k0 = gen->key[0], k1 = gen->key[1];
    for (int round = 0; round < 10; round++) {
        tide_philox_round(&c0, &c1, &c2, &c3, k0, k1);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Blocks first, first + stride, ... (TIDE_PHILOX_LANES of them) at once: the lanes are independent,
 * so the rounds interleave (or vectorise) instead of waiting on one block's multiply chain.
 * w[word][lane]. */
static inline __attribute__((always_inline)) void tide_philox_lanes(const tide_philox *gen, uint64_t first, uint64_t stride,
                                     uint32_t w[4][TIDE_PHILOX_LANES])
{
    uint32_t c0[TIDE_PHILOX_LANES], c1[TIDE_PHILOX_LANES], c2[TIDE_PHILOX_LANES], c3[TIDE_PHILOX_LANES];
    for (int l = 0; l < TIDE_PHILOX_LANES; l++) {
        uint64_t b = first + (uint64_t)l * stride;
        c0[l] = (uint32_t)b;
        c1[l] = (uint32_t)(b >> 32);
        c2[l] = (uint32_t)gen->stream;
        c3[l] = (uint32_t)(gen->stream >> 32);
    }
    uint32_t k0 = gen->key[0], k1 = gen->key[1];
    for (int round = 0; round < 10; round++) {
        for (int l = 0; l < TIDE_PHILOX_LANES; l++)
            tide_philox_round(&c0[l], &c1[l], &c2[l], &c3[l], k0, k1);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    memcpy(w[0], c0, sizeof c0);
    memcpy(w[1], c1, sizeof c1);
    memcpy(w[2], c2, sizeof c2);
    memcpy(w[3], c3, sizeof c3);
}

/* Uniform numbers in [0, 1) from random words: float32 from the top 24 bits of a word, float64
 * from the top 53 of two (hi, lo). */
static inline float tide_philox_uniform_f32(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }
static inline double tide_philox_uniform_f64(uint32_t hi, uint32_t lo)
{
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

#endif
