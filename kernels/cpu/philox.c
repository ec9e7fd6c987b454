/* philox.c — the seed rule of the CPU kernels' Philox generator (philox.h states it): a node's key
 * and stream from the graph seed, its seed/seed2 attrs and its name, or from the system's entropy
 * when no seed is set. The generator itself is inline in philox.h. */
#include <stdatomic.h>
#include <sys/random.h>
#include <time.h>

#include "philox.h"

#define DEFAULT_GRAPH_SEED 87654321 /* the graph seed when only the op seed is set */

/* SplitMix64's finaliser. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* 128 unpredictable bits: the kernel's entropy, else the clock, an address and a counter. */
static void entropy(uint64_t out[2])
{
    if (getrandom(out, 2 * sizeof(uint64_t), GRND_NONBLOCK) == (ssize_t)(2 * sizeof(uint64_t)))
        return;
    static _Atomic uint64_t calls;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    out[0] = mix64(t ^ (uint64_t)(uintptr_t)out);
    out[1] = mix64(out[0] ^ atomic_fetch_add(&calls, 1) ^ 0x5851f42d4c957f2dULL);
}

void tide_philox_seed(tide_philox *gen, tide_kernel_ctx *ctx)
{
    int64_t g = tide_kernel_graph_seed(ctx), seed = 0, seed2 = 0;
    tide_attrs_get_int(tide_kernel_attrs(ctx), "seed", &seed);
    tide_attrs_get_int(tide_kernel_attrs(ctx), "seed2", &seed2);
    uint64_t key, stream;
    if (g == 0 && seed == 0 && seed2 == 0) {
        uint64_t e[2];
        entropy(e);
        key = e[0];
        stream = e[1];
    } else {
        uint64_t s = (uint64_t)seed;
        if (seed == 0 && seed2 == 0)
            s = fnv1a(tide_kernel_node_name(ctx));
        if (g == 0)
            g = DEFAULT_GRAPH_SEED;
        key = mix64(mix64((uint64_t)g) ^ s);
        stream = mix64(key ^ mix64((uint64_t)seed2 + 0x9e3779b97f4a7c15ULL));
    }
    gen->key[0] = (uint32_t)key;
    gen->key[1] = (uint32_t)(key >> 32);
    gen->stream = stream;
    atomic_init(&gen->next_block, 0);
}
