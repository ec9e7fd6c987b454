/* random.c — CPU kernels of the random ops (RandomUniform, RandomNormal, TruncatedNormal,
 * RandomUniformInt, RandomShuffle). Their generator is Philox4x32-10 (philox.h, which states the
 * seed rule): each node keys its own in init, and each run reserves the blocks it consumes.
 *
 * How blocks become values (each run starts at its first reserved block, b = 0, 1, ...):
 *   uniform float32/16/bf16: block b gives elements 4b..4b+3, one 32-bit word each; float64: block b
 *   gives elements 2b, 2b+1 from words (0,1) and (2,3), high word first.
 *   normal: Box-Muller on the same uniforms, pairs (z0, z1) per two uniforms.
 *   truncated normal: groups of 4 (2 for float64) elements get 16 blocks each, drawn in order
 *   until the group is full (its 64 or 32 candidates hold too few within (-2, 2) with probability
 *   below 1e-39; the group would then go on into the next group's blocks).
 *   uniform int: int32 elements take 64 bits (2 per block), int64 ones 128 bits (1 per block),
 *   words in order, high first.
 *   shuffle: for i = n-1 down to 1, row i swaps with row floor(x * (i+1) / 2^64), x the next 64
 *   bits: words (0,1) then (2,3) of consecutive blocks.
 * Blocks are computed 8 at a time (independent lanes the compiler can interleave); outputs too small
 * for that take them one by one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/random_ops.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised (cpu_util.h: before including it): Philox's lanes. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "cpu_util.h"
#include "philox.h"

__extension__ typedef unsigned __int128 u128;

#define TRUNC_RESERVE 16 /* blocks reserved per group of truncated normals */
#define LANES TIDE_PHILOX_LANES

/* ---------------------------------------------------------------- per-node state */

typedef struct rng_state {
    tide_philox gen;
    tide_dtype dtype; /* the output's */
} rng_state;

static tide_status rng_init(tide_kernel_ctx *ctx, void **state)
{
    rng_state *r = malloc(sizeof *r);
    if (!r)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the generator");
    tide_philox_seed(&r->gen, ctx);
    r->dtype = tide_kernel_output_dtype(ctx, 0);
    *state = r;
    return TIDE_OK;
}

static void rng_destroy(void *state) { free(state); }

/* ---------------------------------------------------------------- the shape input */

/* The output shape held by input 0 (the same checks and messages as the op's shape function). */
static tide_status read_shape(tide_kernel_ctx *ctx, tide_shape *out)
{
    const tide_tensor *t = tide_kernel_input(ctx, 0);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_random_output_shape(tide_tensor_shape(t), t, out, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- conversions of random bits */

/* Uniform numbers in [0, 1) are tide_philox_uniform_f32 and _f64 (philox.h, which Dropout uses
 * too); those in (0, 1], whose logarithms are finite: */
static inline float f01_open0(uint32_t x) { return (float)((x >> 8) + 1) * 0x1p-24f; }
static inline double d01_open0(uint32_t hi, uint32_t lo)
{
    return (double)(((((uint64_t)hi << 32) | lo) >> 11) + 1) * 0x1p-53;
}

#define TWO_PI 6.283185307179586476925286766559

/* Four standard normals from one block (float), by Box-Muller on word pairs (0,1) and (2,3). */
static inline void normals_f(const uint32_t w[4], float z[4])
{
    for (int k = 0; k < 4; k += 2) {
        float r = sqrtf(-2.0f * logf(f01_open0(w[k]))), s, c;
        sincosf((float)TWO_PI * tide_philox_uniform_f32(w[k + 1]), &s, &c);
        z[k] = r * c;
        z[k + 1] = r * s;
    }
}

/* Two standard normals from one block (double). */
static inline void normals_d(const uint32_t w[4], double z[2])
{
    double r = sqrt(-2.0 * log(d01_open0(w[0], w[1]))), s, c;
    sincos(TWO_PI * tide_philox_uniform_f64(w[2], w[3]), &s, &c);
    z[0] = r * c;
    z[1] = r * s;
}

/* ---------------------------------------------------------------- filling outputs in parallel */

typedef struct gen_job {
    const rng_state *r;
    uint64_t base;      /* the run's first block */
    void *out;
    int64_t n;          /* elements */
    int64_t lo;         /* RandomUniformInt: minval */
    uint64_t range;     /* and maxval - minval */
} gen_job;

/* count (<= LANES) blocks into w: all lanes at once when full, else one by one (small outputs). */
static inline __attribute__((always_inline)) void philox_some(const tide_philox *gen, uint64_t first, uint64_t stride, int64_t count,
                               uint32_t w[4][LANES])
{
    if (count == LANES) {
        tide_philox_lanes(gen, first, stride, w);
        return;
    }
    for (int64_t l = 0; l < count; l++) {
        uint32_t one[4];
        tide_philox_block(gen, first + (uint64_t)l * stride, one);
        for (int k = 0; k < 4; k++)
            w[k][l] = one[k];
    }
}

/* For units b in [begin, end) (a unit is block base + b*STRIDE and the PER elements it yields):
 * FILL sets v[0..PER) from w (the unit's block), then v is stored at element b*PER as STORE(v[k]),
 * the last unit only up to n. Blocks are computed LANES at a time. */
#define FOR_UNITS(type, vtype, PER, STRIDE, FILL, STORE)                                       \
    do {                                                                                       \
        type *o_ = j->out;                                                                     \
        for (int64_t b0_ = begin; b0_ < end; b0_ += LANES) {                                   \
            uint32_t ws_[4][LANES];                                                            \
            int64_t lanes_ = end - b0_ < LANES ? end - b0_ : LANES;                            \
            philox_some(&j->r->gen, j->base + (uint64_t)b0_ * (STRIDE), (STRIDE), lanes_, ws_); \
            for (int64_t l_ = 0; l_ < lanes_; l_++) {                                          \
                int64_t b = b0_ + l_, at_ = b * (PER);                                         \
                uint32_t w[4] = {ws_[0][l_], ws_[1][l_], ws_[2][l_], ws_[3][l_]};              \
                vtype v[4];                                                                    \
                FILL;                                                                          \
                if (at_ + (PER) <= j->n)                                                       \
                    for (int k = 0; k < (PER); k++)                                            \
                        o_[at_ + k] = STORE(v[k]);                                             \
                else                                                                           \
                    for (int64_t k = 0; at_ + k < j->n; k++)                                   \
                        o_[at_ + k] = STORE(v[k]);                                             \
            }                                                                                  \
        }                                                                                      \
    } while (0)
#define FOR_BLOCKS(type, vtype, PER, FILL, STORE) FOR_UNITS(type, vtype, PER, 1, FILL, STORE)

#define AS_IS(x) (x)

static inline __attribute__((always_inline)) void uniform_fill(int64_t begin, int64_t end, void *arg)
{
    const gen_job *j = arg;
    switch (j->r->dtype) {
    case TIDE_FLOAT32:
        FOR_BLOCKS(float, float, 4, for (int k = 0; k < 4; k++) v[k] = tide_philox_uniform_f32(w[k]), AS_IS);
        break;
    case TIDE_FLOAT64:
        FOR_BLOCKS(double, double, 2,
                   (v[0] = tide_philox_uniform_f64(w[0], w[1]), v[1] = tide_philox_uniform_f64(w[2], w[3])),
                   AS_IS);
        break;
    case TIDE_FLOAT16: /* k / 2^10 and k / 2^7 convert exactly */
        FOR_BLOCKS(uint16_t, float, 4, for (int k = 0; k < 4; k++) v[k] = (float)(w[k] & 0x3ff) * 0x1p-10f,
                   tide_f32_to_f16);
        break;
    case TIDE_BFLOAT16:
        FOR_BLOCKS(uint16_t, float, 4, for (int k = 0; k < 4; k++) v[k] = (float)(w[k] & 0x7f) * 0x1p-7f,
                   tide_f32_to_bf16);
        break;
    default: break;
    }
}

static inline __attribute__((always_inline)) void normal_fill(int64_t begin, int64_t end, void *arg)
{
    const gen_job *j = arg;
    switch (j->r->dtype) {
    case TIDE_FLOAT32: FOR_BLOCKS(float, float, 4, normals_f(w, v), AS_IS); break;
    case TIDE_FLOAT64: FOR_BLOCKS(double, double, 2, normals_d(w, v), AS_IS); break;
    case TIDE_FLOAT16: FOR_BLOCKS(uint16_t, float, 4, normals_f(w, v), tide_f32_to_f16); break;
    case TIDE_BFLOAT16: FOR_BLOCKS(uint16_t, float, 4, normals_f(w, v), tide_f32_to_bf16); break;
    default: break;
    }
}

/* Group g's normals within (-2, 2): from w, its first block, then (rarely) its next reserved ones. */
static void truncated_group_f(const gen_job *j, int64_t g, const uint32_t w0[4], float v[4])
{
    int got = 0;
    for (uint64_t k = 0; got < 4; k++) {
        uint32_t w[4];
        float z[4];
        if (k == 0)
            memcpy(w, w0, sizeof w);
        else
            tide_philox_block(&j->r->gen, j->base + (uint64_t)g * TRUNC_RESERVE + k, w);
        normals_f(w, z);
        for (int i = 0; i < 4 && got < 4; i++)
            if (fabsf(z[i]) < 2.0f)
                v[got++] = z[i];
    }
}

static void truncated_group_d(const gen_job *j, int64_t g, const uint32_t w0[4], double v[2])
{
    int got = 0;
    for (uint64_t k = 0; got < 2; k++) {
        uint32_t w[4];
        double z[2];
        if (k == 0)
            memcpy(w, w0, sizeof w);
        else
            tide_philox_block(&j->r->gen, j->base + (uint64_t)g * TRUNC_RESERVE + k, w);
        normals_d(w, z);
        for (int i = 0; i < 2 && got < 2; i++)
            if (fabs(z[i]) < 2.0)
                v[got++] = z[i];
    }
}

static inline __attribute__((always_inline)) void truncated_fill(int64_t begin, int64_t end, void *arg)
{
    const gen_job *j = arg;
    switch (j->r->dtype) {
    case TIDE_FLOAT32: FOR_UNITS(float, float, 4, TRUNC_RESERVE, truncated_group_f(j, b, w, v), AS_IS); break;
    case TIDE_FLOAT64: FOR_UNITS(double, double, 2, TRUNC_RESERVE, truncated_group_d(j, b, w, v), AS_IS); break;
    case TIDE_FLOAT16:
        FOR_UNITS(uint16_t, float, 4, TRUNC_RESERVE, truncated_group_f(j, b, w, v), tide_f32_to_f16);
        break;
    case TIDE_BFLOAT16:
        FOR_UNITS(uint16_t, float, 4, TRUNC_RESERVE, truncated_group_f(j, b, w, v), tide_f32_to_bf16);
        break;
    default: break;
    }
}

/* floor(x * range / 2^64) for a 64-bit x and floor(x * range / 2^128) for a 128-bit one: an offset
 * in [0, range) with bias at most range / 2^64 (resp. 2^128). */
static inline uint64_t scale64(uint32_t hi, uint32_t lo, uint64_t range)
{
    return (uint64_t)(((u128)(((uint64_t)hi << 32) | lo) * range) >> 64);
}
static inline uint64_t scale128(const uint32_t w[4], uint64_t range)
{
    uint64_t xh = ((uint64_t)w[0] << 32) | w[1], xl = ((uint64_t)w[2] << 32) | w[3];
    u128 t = (u128)xh * range + (((u128)xl * range) >> 64);
    return (uint64_t)(t >> 64);
}

static inline __attribute__((always_inline)) void uniform_int_fill(int64_t begin, int64_t end, void *arg)
{
    const gen_job *j = arg;
    /* lo + offset < maxval, so the int32 sum fits; int64 wraps through uint64 (no overflow). */
    int64_t lo = j->lo;
    uint64_t range = j->range;
    if (j->r->dtype == TIDE_INT32)
        FOR_BLOCKS(int32_t, int64_t, 2,
                   (v[0] = lo + (int64_t)scale64(w[0], w[1], range),
                    v[1] = lo + (int64_t)scale64(w[2], w[3], range)),
                   (int32_t));
    else
        FOR_BLOCKS(int64_t, uint64_t, 1, v[0] = (uint64_t)lo + scale128(w, range), (int64_t));
}

/* Each fill in the ISA variants of cpu_util.h (Philox's lanes vectorise at each width; the words and
 * so the numbers are the same), and its dispatcher, the chunk function of parallel_for. */
#define CHUNK_VARIANT(name, TARGET, ISA, FILL)                                                 \
    TARGET static void name(int64_t begin, int64_t end, void *arg) { FILL(begin, end, arg); }
#define CHUNK(name, FILL)                                                                      \
    TIDE_ISA_VARIANTS(CHUNK_VARIANT, name, FILL)                                               \
    static void name(int64_t begin, int64_t end, void *arg) { TIDE_ISA_DISPATCH(name, begin, end, arg); }
CHUNK(uniform_chunk, uniform_fill)
CHUNK(normal_chunk, normal_fill)
CHUNK(truncated_chunk, truncated_fill)
CHUNK(uniform_int_chunk, uniform_int_fill)

/* ---------------------------------------------------------------- kernels */

typedef enum { GEN_UNIFORM, GEN_NORMAL, GEN_TRUNCATED } gen_kind;

/* Allocates output 0 of the shape input 0 holds, reserves the blocks and fills it. */
static tide_status generate(tide_kernel_ctx *ctx, gen_kind kind, int64_t lo, uint64_t range,
                            bool is_int)
{
    tide_shape shape;
    if (read_shape(ctx, &shape) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &shape, false);
    if (!out)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(out);
    if (n == 0)
        return TIDE_OK;
    rng_state *r = tide_kernel_state(ctx);
    bool wide = r->dtype == TIDE_FLOAT64 || r->dtype == TIDE_INT64;
    int64_t per = is_int ? (r->dtype == TIDE_INT64 ? 1 : 2) : wide ? 2 : 4;
    int64_t units = (n + per - 1) / per; /* blocks, or groups for truncated normals */
    uint64_t blocks = (uint64_t)units * (kind == GEN_TRUNCATED ? TRUNC_RESERVE : 1);
    gen_job job = {.r = r, .base = tide_philox_reserve(&r->gen, blocks), .out = tide_tensor_data(out),
                   .n = n, .lo = lo, .range = range};
    static const double cost[] = {[GEN_UNIFORM] = 15, [GEN_NORMAL] = 60, [GEN_TRUNCATED] = 80}; /* ns per unit */
    void (*fn)(int64_t, int64_t, void *) = is_int ? uniform_int_chunk
                                           : kind == GEN_UNIFORM ? uniform_chunk
                                           : kind == GEN_NORMAL  ? normal_chunk
                                                                 : truncated_chunk;
    tide_kernel_parallel_for(ctx, units, cost[kind], fn, &job);
    return TIDE_OK;
}

static tide_status uniform_compute(tide_kernel_ctx *ctx) { return generate(ctx, GEN_UNIFORM, 0, 0, false); }
static tide_status normal_compute(tide_kernel_ctx *ctx) { return generate(ctx, GEN_NORMAL, 0, 0, false); }
static tide_status truncated_compute(tide_kernel_ctx *ctx) { return generate(ctx, GEN_TRUNCATED, 0, 0, false); }

static tide_status uniform_int_compute(tide_kernel_ctx *ctx)
{
    static const char *const names[] = {"shape", "minval", "maxval"};
    int64_t v[3];
    for (int i = 1; i <= 2; i++) {
        const tide_tensor *t = tide_kernel_input(ctx, i);
        if (tide_tensor_rank(t) != 0) {
            char buf[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s",
                                     names[i], tide_shape_format(tide_tensor_shape(t), buf, sizeof buf));
        }
        v[i] = tide_op_int_at(t, 0);
    }
    if (v[1] >= v[2]) { /* like TensorFlow, an empty output needs no valid range */
        tide_shape shape;
        if (read_shape(ctx, &shape) != TIDE_OK)
            return tide_kernel_status(ctx);
        bool empty = false;
        for (int i = 0; i < shape.rank; i++)
            empty |= shape.dims[i] == 0;
        if (!empty)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "need minval < maxval, got %lld >= %lld",
                                     (long long)v[1], (long long)v[2]);
        return tide_kernel_alloc_output(ctx, 0, &shape, false) ? TIDE_OK : tide_kernel_status(ctx);
    }
    return generate(ctx, GEN_UNIFORM, v[1], (uint64_t)v[2] - (uint64_t)v[1], true);
}

/* ---------------------------------------------------------------- RandomShuffle */

/* 64-bit draws, two per block ((word 0, word 1) then (2, 3)), from consecutive blocks starting at
 * `block`, computed LANES blocks at a time. */
typedef struct draws {
    const tide_philox *gen;
    uint64_t block, end; /* the next block to compute, the end of the reserved ones */
    uint64_t x[2 * LANES];
    int used;
} draws;

/* A uniform index in [0, bound). */
static inline int64_t draw_below(draws *d, int64_t bound)
{
    if (d->used == 2 * LANES) {
        uint32_t w[4][LANES];
        int64_t count = d->end - d->block < LANES ? (int64_t)(d->end - d->block) : LANES;
        philox_some(d->gen, d->block, 1, count, w);
        d->block += (uint64_t)count;
        for (int l = 0; l < count; l++) {
            d->x[2 * l] = ((uint64_t)w[0][l] << 32) | w[1][l];
            d->x[2 * l + 1] = ((uint64_t)w[2][l] << 32) | w[3][l];
        }
        d->used = 0;
    }
    return (int64_t)(((u128)d->x[d->used++] * (uint64_t)bound) >> 64);
}

#define SHUFFLE_TYPED(type)                              \
    do {                                                 \
        type *p = data;                                  \
        for (int64_t i = rows - 1; i > 0; i--) {         \
            int64_t k = draw_below(&d, i + 1);           \
            type t = p[i];                               \
            p[i] = p[k];                                 \
            p[k] = t;                                    \
        }                                                \
    } while (0)

/* Fisher-Yates over rows of row_bytes bytes, in place. */
static void shuffle_rows(rng_state *r, void *data, int64_t rows, size_t row_bytes)
{
    uint64_t blocks = (uint64_t)rows / 2; /* rows - 1 draws, two per block */
    draws d = {.gen = &r->gen, .block = tide_philox_reserve(&r->gen, blocks), .used = 2 * LANES};
    d.end = d.block + blocks;
    switch ((uintptr_t)data % row_bytes == 0 ? row_bytes : 0) { /* a forwarded view may be unaligned */
    case 1: SHUFFLE_TYPED(uint8_t); return;
    case 2: SHUFFLE_TYPED(uint16_t); return;
    case 4: SHUFFLE_TYPED(uint32_t); return;
    case 8: SHUFFLE_TYPED(uint64_t); return;
    default: break;
    }
    for (int64_t i = rows - 1; i > 0; i--) {
        int64_t k = draw_below(&d, i + 1);
        if (k == i)
            continue;
        char *a = (char *)data + (size_t)i * row_bytes, *b = (char *)data + (size_t)k * row_bytes;
        for (size_t at = 0; at < row_bytes;) { /* swap through a stack buffer */
            char tmp[256];
            size_t m = row_bytes - at < sizeof tmp ? row_bytes - at : sizeof tmp;
            memcpy(tmp, a + at, m);
            memcpy(a + at, b + at, m);
            memcpy(b + at, tmp, m);
            at += m;
        }
    }
}

/* Deep-copies the strings of `in` into the fresh `out`. */
static tide_status copy_strings(tide_kernel_ctx *ctx, const tide_tensor *in, tide_tensor *out)
{
    tide_error *err = tide_error_new();
    int64_t n = tide_tensor_num_elements(in);
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *s = tide_tensor_string_get(in, i, &len);
        if (tide_tensor_string_set(out, i, s, len, err) != TIDE_OK) {
            tide_status st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
            tide_error_free(err);
            return st;
        }
    }
    tide_error_free(err);
    return TIDE_OK;
}

static tide_status shuffle_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    int64_t rows = tide_tensor_rank(in) > 0 ? tide_tensor_dim(in, 0) : 0;
    if (rows <= 1) {
        tide_kernel_set_output(ctx, 0, in);
        return tide_kernel_status(ctx);
    }
    tide_dtype dt = tide_tensor_dtype(in);
    tide_tensor *out = dt == TIDE_STRING
                           ? tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(in), false)
                           : tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(in));
    if (!out)
        return tide_kernel_status(ctx);
    if (dt == TIDE_STRING) {
        if (copy_strings(ctx, in, out) != TIDE_OK)
            return tide_kernel_status(ctx);
    } else if (tide_tensor_data(out) != tide_tensor_data(in)) {
        memcpy(tide_tensor_data(out), tide_tensor_data(in), tide_tensor_byte_size(in));
    }
    size_t row_bytes = tide_tensor_byte_size(out) / (size_t)rows;
    if (row_bytes)
        shuffle_rows(tide_kernel_state(ctx), tide_tensor_data(out), rows, row_bytes);
    return TIDE_OK;
}

static void register_random_kernels(void)
{
    static const struct {
        const char *op;
        tide_status (*compute)(tide_kernel_ctx *);
    } kernels[] = {
        {"RandomUniform", uniform_compute},   {"RandomNormal", normal_compute},
        {"TruncatedNormal", truncated_compute}, {"RandomUniformInt", uniform_int_compute},
        {"RandomShuffle", shuffle_compute},
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = kernels[i].op, .device_type = "cpu",
                                                  .flags = TIDE_KERNEL_EXPENSIVE, .init = rng_init,
                                                  .destroy = rng_destroy, .compute = kernels[i].compute});
}
TIDE_REGISTER(register_random_kernels)
