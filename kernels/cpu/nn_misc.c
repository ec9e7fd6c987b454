/* nn_misc.c — CPU kernels of the small layer ops (engine/ops/nn_ops.c): BiasAdd, BiasAddGrad,
 * L2Loss and Dropout, for float32 and float64.
 *
 * BiasAdd adds the bias row by row, writing over value's buffer when allowed. BiasAddGrad (column
 * sums, tide_nn_column_sums of batch_norm.c) and L2Loss (a sum of squares) accumulate in double;
 * L2Loss cuts large inputs into chunks whose partial sums are computed in parallel and then added in
 * chunk order, so the result depends only on the shape, never on the number of threads.
 *
 * Dropout draws its uniform numbers exactly as RandomUniform does (kernels/cpu/random.c): with the
 * same generator (philox.h, keyed by its seed rule), block b giving elements 4b..4b+3 (float32, one
 * 32-bit word each, (w >> 8) * 2^-24) or 2b, 2b+1 (float64, two words each, 53 bits), each run
 * reserving fresh blocks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/nn_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised, selects of floats too (cpu_util.h: before including it and
 * philox.h, whose inline functions must be compiled with the same options to be inlined here). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h"
#include "philox.h"

#define CHUNK_ELEMENTS 32768 /* elements per partial sum of L2Loss */

static tide_status float_only(tide_kernel_ctx *ctx)
{
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt == TIDE_FLOAT32 || dt == TIDE_FLOAT64)
        return TIDE_OK;
    return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                             tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
}

/* BiasAdd and BiasAddGrad: only NHWC, checked once per node (the shape function did too). */
static tide_status bias_init(tide_kernel_ctx *ctx, void **state)
{
    (void)state;
    const char *format = "NHWC";
    tide_attrs_get_string(tide_kernel_attrs(ctx), "data_format", &format);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_data_format(format, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return float_only(ctx);
}

static tide_status l2_init(tide_kernel_ctx *ctx, void **state)
{
    (void)state;
    return float_only(ctx);
}

/* ---------------------------------------------------------------- BiasAdd */

typedef struct bias_job {
    const void *value, *bias;
    void *out;
    int64_t channels;
} bias_job;

/* bias_row: o = v + b over n elements (a row, or for fusion a tile with the bias laid along it), in
 * the ISA variants of cpu_util.h (the same additions at every width). */
#define BIAS_ROW_VARIANT(name, TARGET, ISA, T)                                               \
    TARGET static void name(const void *pv, const void *pb, void *po, int64_t n)             \
    {                                                                                        \
        const T *v = pv, *b = pb;                                                            \
        T *o = po;                                                                           \
        IVDEP for (int64_t k = 0; k < n; k++)                                                \
            o[k] = v[k] + b[k];                                                              \
    }
#define BIAS_ADD(sfx, T)                                                                     \
    TIDE_ISA_VARIANTS(BIAS_ROW_VARIANT, bias_row_##sfx, T)                                   \
    static void bias_row_##sfx(const void *pv, const void *pb, void *po, int64_t n)          \
    {                                                                                        \
        TIDE_ISA_DISPATCH(bias_row_##sfx, pv, pb, po, n);                                    \
    }                                                                                        \
    static void bias_add_##sfx(int64_t begin, int64_t end, void *arg)                        \
    {                                                                                        \
        const bias_job *j = arg;                                                             \
        int64_t c = j->channels;                                                             \
        for (int64_t r = begin; r < end; r++)                                                \
            bias_row_##sfx((const T *)j->value + r * c, j->bias, (T *)j->out + r * c, c);    \
    }
BIAS_ADD(f32, float)
BIAS_ADD(f64, double)

static tide_status bias_add_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *value = tide_kernel_input(ctx, 0), *bias = tide_kernel_input(ctx, 1);
    const tide_shape *vs = tide_tensor_shape(value);
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_bias_add(vs, tide_tensor_shape(bias), &channels, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_tensor *out = tide_kernel_forward_or_alloc(ctx, 0, 0, vs);
    if (!out || channels == 0)
        return tide_kernel_status(ctx);
    bias_job j = {tide_tensor_data(value), tide_tensor_data(bias), tide_tensor_data(out), channels};
    tide_kernel_parallel_for(ctx, tide_tensor_num_elements(value) / channels, 0.3 * (double)channels,
                             tide_tensor_dtype(value) == TIDE_FLOAT32 ? bias_add_f32 : bias_add_f64,
                             &j);
    return TIDE_OK;
}

/* Fusion (tide_elementwise): the row loop, input 1 a bias along the last axis. */
static bool bias_add_elementwise(tide_kernel_ctx *ctx, tide_elementwise *ew)
{
    bool f32 = tide_kernel_input_dtype(ctx, 0) == TIDE_FLOAT32;
    *ew = (tide_elementwise){.binary = f32 ? bias_row_f32 : bias_row_f64, .cost = 0.3, .broadcast = 2u};
    return true;
}

/* ---------------------------------------------------------------- sums of squares (L2Loss) */

/* Chunk k of a flat tensor covers elements [k * CHUNK_ELEMENTS, ...) and writes partial[k]. */
typedef struct squares_job {
    const void *x;
    double *partial;
    int64_t n;
} squares_job;

/* 8 accumulators, so that the additions of a chunk run side by side (and vectorise). */
#define SQUARE_SUMS(sfx, T)                                                                  \
    static void square_sums_##sfx(int64_t begin, int64_t end, void *arg)                     \
    {                                                                                        \
        const squares_job *j = arg;                                                          \
        const T *x = j->x;                                                                   \
        for (int64_t chunk = begin; chunk < end; chunk++) {                                  \
            int64_t i = chunk * CHUNK_ELEMENTS, stop = i + CHUNK_ELEMENTS;                   \
            stop = stop < j->n ? stop : j->n;                                                \
            double lane[8] = {0};                                                            \
            for (; i + 8 <= stop; i += 8)                                                    \
                for (int l = 0; l < 8; l++)                                                  \
                    lane[l] += (double)x[i + l] * x[i + l];                                  \
            for (; i < stop; i++)                                                            \
                lane[0] += (double)x[i] * x[i];                                              \
            j->partial[chunk] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +                \
                                ((lane[4] + lane[5]) + (lane[6] + lane[7]));                 \
        }                                                                                    \
    }
SQUARE_SUMS(f32, float)
SQUARE_SUMS(f64, double)

/* ---------------------------------------------------------------- BiasAddGrad, L2Loss */

static void store(tide_tensor *out, const double *v, int64_t n)
{
    void *d = tide_tensor_data(out);
    for (int64_t i = 0; i < n; i++) {
        if (tide_tensor_dtype(out) == TIDE_FLOAT32)
            ((float *)d)[i] = (float)v[i];
        else
            ((double *)d)[i] = v[i];
    }
}

static tide_status bias_add_grad_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *dy = tide_kernel_input(ctx, 0);
    int64_t channels;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_bias_add(tide_tensor_shape(dy), NULL, &channels, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape vs = tide_shape_vector(channels);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &vs, false);
    if (!out || channels == 0)
        return tide_kernel_status(ctx);
    double *sums = malloc((size_t)channels * sizeof *sums);
    if (!sums)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld sums",
                                 (long long)channels);
    if (!tide_nn_column_sums(ctx, tide_tensor_dtype(dy), tide_tensor_data(dy),
                             tide_tensor_num_elements(dy) / channels, channels, sums)) {
        free(sums);
        return tide_kernel_status(ctx);
    }
    store(out, sums, channels);
    free(sums);
    return TIDE_OK;
}

static tide_status l2_loss_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *t = tide_kernel_input(ctx, 0);
    tide_shape scalar = tide_shape_scalar();
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &scalar, false);
    if (!out)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(t), chunks = (n + CHUNK_ELEMENTS - 1) / CHUNK_ELEMENTS;
    double *partial = calloc((size_t)(chunks ? chunks : 1), sizeof *partial);
    if (!partial)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld partial sums",
                                 (long long)chunks);
    squares_job j = {tide_tensor_data(t), partial, n};
    tide_kernel_parallel_for(ctx, chunks, 0.3 * CHUNK_ELEMENTS,
                             tide_tensor_dtype(t) == TIDE_FLOAT32 ? square_sums_f32 : square_sums_f64,
                             &j);
    double total = 0;
    for (int64_t k = 0; k < chunks; k++) /* in chunk order: the same result on any thread count */
        total += partial[k];
    total /= 2;
    store(out, &total, 1);
    free(partial);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Dropout */

#define LANES TIDE_PHILOX_LANES

/* The generator, keyed once per node by the seed rule of philox.h. */
static tide_status dropout_init(tide_kernel_ctx *ctx, void **state)
{
    if (float_only(ctx) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_philox *gen = malloc(sizeof *gen);
    if (!gen)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the generator");
    tide_philox_seed(gen, ctx);
    *state = gen;
    return TIDE_OK;
}

typedef struct dropout_job {
    const tide_philox *gen;
    uint64_t base; /* the run's first block */
    const void *x;
    void *y, *mask;
    int64_t n;
    double rate, scale; /* scale = 1 / (1 - rate) */
} dropout_job;

/* Blocks are turned into uniform numbers a tile at a time, then one loop the compiler vectorises
 * applies them: mask = u < rate ? 0 : scale, y = x * mask (y may be x). */
#define TILE_BLOCKS 64 /* a multiple of LANES */

#define DROPOUT_TILE(sfx, T, PER, UNIFORM)                                                   \
    static void dropout_##sfx(int64_t begin, int64_t end, void *arg)                         \
    {                                                                                        \
        const dropout_job *j = arg;                                                          \
        const T *x = j->x, rate = (T)j->rate, scale = (T)j->scale;                           \
        T *y = j->y, *mask = j->mask, u[TILE_BLOCKS * PER];                                  \
        for (int64_t b0 = begin; b0 < end; b0 += TILE_BLOCKS) {                              \
            int64_t blocks = end - b0 < TILE_BLOCKS ? end - b0 : TILE_BLOCKS;                \
            for (int64_t g = 0; g < blocks; g += LANES) {                                    \
                uint32_t w[4][LANES];                                                        \
                tide_philox_lanes(j->gen, j->base + (uint64_t)(b0 + g), 1, w);               \
                for (int l = 0; l < LANES; l++)                                              \
                    for (int k = 0; k < PER; k++)                                            \
                        u[(g + l) * PER + k] = UNIFORM;                                      \
            }                                                                                \
            int64_t at = b0 * PER, count = blocks * PER;                                     \
            count = at + count <= j->n ? count : j->n - at;                                  \
            IVDEP for (int64_t i = 0; i < count; i++) {                                      \
                T m = u[i] < rate ? 0 : scale;                                               \
                mask[at + i] = m;                                                            \
                y[at + i] = x[at + i] * m;                                                   \
            }                                                                                \
        }                                                                                    \
    }
/* float32: one word per element; float64: two words, high first. */
DROPOUT_TILE(f32, float, 4, tide_philox_uniform_f32(w[k][l]))
DROPOUT_TILE(f64, double, 2, tide_philox_uniform_f64(w[2 * k][l], w[2 * k + 1][l]))

static tide_status dropout_compute(tide_kernel_ctx *ctx)
{
    tide_philox *gen = tide_kernel_state(ctx);
    tide_tensor *x = tide_kernel_input(ctx, 0), *rate = tide_kernel_input(ctx, 1);
    double rv = tide_tensor_num_elements(rate) == 1 ? tide_tensor_get_f64(rate, 0) : 0;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_dropout_rate(tide_tensor_shape(rate), &rv, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    const tide_shape *s = tide_tensor_shape(x);
    tide_tensor *mask = tide_kernel_alloc_output(ctx, 1, s, false);
    tide_tensor *y = mask ? tide_kernel_forward_or_alloc(ctx, 0, 0, s) : NULL;
    if (!y)
        return tide_kernel_status(ctx);
    int64_t n = tide_tensor_num_elements(x), per = tide_tensor_dtype(x) == TIDE_FLOAT32 ? 4 : 2;
    int64_t blocks = (n + per - 1) / per;
    dropout_job j = {gen, tide_philox_reserve(gen, (uint64_t)blocks), tide_tensor_data(x),
                     tide_tensor_data(y), tide_tensor_data(mask), n, rv, 1 / (1 - rv)};
    tide_kernel_parallel_for(ctx, blocks, 3.0 * (double)per,
                             per == 4 ? dropout_f32 : dropout_f64, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- registration */

static void register_nn_misc_kernels(void)
{
    /* Not TIDE_KERNEL_EXPENSIVE: large inputs are split by parallel_for inside the kernel, and a
     * kernel the executor runs inline finds its input exclusive and can write over it. */
    tide_kernel_register(&(tide_kernel_spec){.op = "BiasAdd", .device_type = "cpu",
                                              .init = bias_init, .compute = bias_add_compute,
                                              .elementwise = bias_add_elementwise});
    tide_kernel_register(&(tide_kernel_spec){.op = "BiasAddGrad", .device_type = "cpu",
                                              .init = bias_init, .compute = bias_add_grad_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "L2Loss", .device_type = "cpu",
                                              .init = l2_init, .compute = l2_loss_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Dropout", .device_type = "cpu",
                                              .init = dropout_init,
                                              .destroy = free, .compute = dropout_compute});
}
TIDE_REGISTER(register_nn_misc_kernels)
