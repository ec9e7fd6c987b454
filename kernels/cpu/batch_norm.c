/* batch_norm.c — CPU kernels of FusedBatchNorm and FusedBatchNormGrad and of their V2 and V3
 * (engine/ops/nn_ops.c), for float32 and float64, x viewed as [rows, channels] (every dimension but
 * the last is a row). As TensorFlow's CPU kernels, the forward op saves the mean and the (biased)
 * variance as reserve_space_1 and _2, and the gradient op computes 1 / sqrt(v + epsilon) from them;
 * the other reserve spaces are empty.
 *
 * Statistics are per-channel column sums accumulated in double, in two passes for the variance
 * (the mean first, then the squares of x - mean: no cancellation). Large inputs are cut into
 * chunks of whole rows whose partial sums are computed in parallel and added in chunk order, so
 * results depend only on the shape, never on the number of threads. The outputs are then one
 * element-wise pass with per-channel coefficients, split by rows:
 *   forward   y = (x - m) * (scale * inv_std) + offset
 *   gradient  x_backprop = dy * k + (x - m) * c2 + c1, with k = scale * inv_std and, in training,
 *             c1 = -k * sum(dy) / n, c2 = -k * inv_std * sum(dy * xhat) / n (0 in inference). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/nn_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#define CHUNK_ELEMENTS 32768 /* elements per task of a statistics pass */
#define MAX_CHUNKS 64        /* row chunks of a statistics pass, at most */
#define COLUMN_BLOCK 1024    /* channels per task of a pass split by columns */
#define WIDE_ROWS 2048       /* channels from which a pass is split by columns */

/* `IVDEP for (...)`: the loop's output may be exactly one of its inputs (an in-place write). */
#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

enum { PASS_SUM, PASS_CENTERED_SQUARES, PASS_GRAD_SUMS };

/* One statistics pass over [rows, channels], accumulating per channel in double:
 *   PASS_SUM               sum(x)
 *   PASS_CENTERED_SQUARES  sum((x - mean)^2)
 *   PASS_GRAD_SUMS         sum(dy), and into the second half sum(dy * (x - mean) * inv_std)
 * It is split one of two ways, both fixed by the shape alone: wide rows by blocks of columns (each
 * task sums every row of its columns straight into the totals), narrow ones by chunks of rows (each
 * task sums its rows into a partial array; the partials are then added in chunk order). */
typedef struct stats_job {
    int pass;
    const void *x, *dy;
    const double *mean, *inv_std; /* per channel (the centred passes) */
    double *sums;                 /* totals: channels values (2 * channels for PASS_GRAD_SUMS) */
    double *partial;              /* row chunks: `width` values per chunk */
    int64_t rows, channels, rows_per_chunk;
} stats_job;

static int64_t pass_width(const stats_job *j)
{
    return j->pass == PASS_GRAD_SUMS ? 2 * j->channels : j->channels;
}

/* Adds rows [r0, r1) of channels [k0, k1) into acc[k] (and acc[channels + k] for the gradient
 * sums). */
#define STATS_RANGE(sfx, T)                                                                  \
    static void stats_range_##sfx(const stats_job *j, int64_t r0, int64_t r1, int64_t k0,     \
                                  int64_t k1, double *acc)                                   \
    {                                                                                        \
        int64_t c = j->channels;                                                             \
        const double *m = j->mean, *s = j->inv_std;                                          \
        double *acc2 = acc + c;                                                              \
        for (int64_t r = r0; r < r1; r++) {                                                  \
            const T *x = (const T *)j->x + r * c;                                            \
            if (j->pass == PASS_SUM) {                                                       \
                for (int64_t k = k0; k < k1; k++)                                            \
                    acc[k] += x[k];                                                          \
            } else if (j->pass == PASS_CENTERED_SQUARES) {                                   \
                for (int64_t k = k0; k < k1; k++) {                                          \
                    double d = x[k] - m[k];                                                  \
                    acc[k] += d * d;                                                         \
                }                                                                            \
            } else {                                                                         \
                const T *dy = (const T *)j->dy + r * c;                                      \
                for (int64_t k = k0; k < k1; k++) {                                          \
                    acc[k] += dy[k];                                                         \
                    acc2[k] += (double)dy[k] * ((x[k] - m[k]) * s[k]);                       \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    static void stats_rows_##sfx(int64_t begin, int64_t end, void *arg)                      \
    {                                                                                        \
        const stats_job *j = arg;                                                            \
        for (int64_t chunk = begin; chunk < end; chunk++) {                                  \
            double *acc = j->partial + chunk * pass_width(j);                                \
            int64_t r0 = chunk * j->rows_per_chunk, r1 = r0 + j->rows_per_chunk;             \
            memset(acc, 0, (size_t)pass_width(j) * sizeof *acc);                             \
            stats_range_##sfx(j, r0, r1 < j->rows ? r1 : j->rows, 0, j->channels, acc);      \
        }                                                                                    \
    }                                                                                        \
    static void stats_columns_##sfx(int64_t begin, int64_t end, void *arg)                   \
    {                                                                                        \
        const stats_job *j = arg;                                                            \
        for (int64_t block = begin; block < end; block++) {                                  \
            int64_t k0 = block * COLUMN_BLOCK, k1 = k0 + COLUMN_BLOCK;                       \
            stats_range_##sfx(j, 0, j->rows, k0, k1 < j->channels ? k1 : j->channels,        \
                              j->sums);                                                      \
        }                                                                                    \
    }
STATS_RANGE(f32, float)
STATS_RANGE(f64, double)

/* Runs one statistics pass; j->sums (pass_width values) receives the totals. False when out of
 * memory (error recorded). */
static bool run_stats(tide_kernel_ctx *ctx, stats_job *j, bool f32)
{
    int64_t c = j->channels, width = pass_width(j);
    double ns = 0.4 * (double)(width / c); /* per element */
    memset(j->sums, 0, (size_t)width * sizeof *j->sums);
    if (j->rows == 0 || c == 0)
        return true;
    if (c >= WIDE_ROWS) {
        tide_kernel_parallel_for(ctx, (c + COLUMN_BLOCK - 1) / COLUMN_BLOCK,
                                 ns * (double)(j->rows * COLUMN_BLOCK),
                                 f32 ? stats_columns_f32 : stats_columns_f64, j);
        return true;
    }
    int64_t per = CHUNK_ELEMENTS / c;
    if ((j->rows + per - 1) / per > MAX_CHUNKS)
        per = (j->rows + MAX_CHUNKS - 1) / MAX_CHUNKS;
    int64_t chunks = (j->rows + per - 1) / per;
    j->partial = malloc((size_t)(chunks * width) * sizeof *j->partial);
    if (!j->partial) {
        tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld partial sums",
                          (long long)(chunks * width));
        return false;
    }
    j->rows_per_chunk = per;
    tide_kernel_parallel_for(ctx, chunks, ns * (double)(per * c), f32 ? stats_rows_f32 : stats_rows_f64,
                             j);
    for (int64_t chunk = 0; chunk < chunks; chunk++)
        for (int64_t k = 0; k < width; k++)
            j->sums[k] += j->partial[chunk * width + k];
    free(j->partial);
    return true;
}

/* Shared with BiasAddGrad (nn_ops.h). */
bool tide_nn_column_sums(tide_kernel_ctx *ctx, tide_dtype dt, const void *x, int64_t rows,
                         int64_t width, double *sums)
{
    stats_job j = {.pass = PASS_SUM, .x = x, .sums = sums, .rows = rows, .channels = width};
    return run_stats(ctx, &j, dt == TIDE_FLOAT32);
}

/* ---------------------------------------------------------------- the element-wise pass */

/* out = (dy ? dy * k : 0) + (x - m) * a + b per channel; coefficients already in T. */
typedef struct apply_job {
    const void *x, *dy;
    void *out;
    const void *k, *m, *a, *b;
    int64_t channels;
} apply_job;

#define APPLY_PASS(sfx, T)                                                                   \
    static void apply_##sfx(int64_t begin, int64_t end, void *arg)                           \
    {                                                                                        \
        const apply_job *j = arg;                                                            \
        const T *k = j->k, *m = j->m, *a = j->a, *b = j->b;                                  \
        int64_t c = j->channels;                                                             \
        for (int64_t r = begin; r < end; r++) {                                              \
            const T *x = (const T *)j->x + r * c;                                            \
            T *o = (T *)j->out + r * c;                                                      \
            if (j->dy) {                                                                     \
                const T *dy = (const T *)j->dy + r * c;                                      \
                IVDEP for (int64_t q = 0; q < c; q++)                                        \
                    o[q] = dy[q] * k[q] + (x[q] - m[q]) * a[q] + b[q];                       \
            } else {                                                                         \
                IVDEP for (int64_t q = 0; q < c; q++)                                        \
                    o[q] = (x[q] - m[q]) * a[q] + b[q];                                      \
            }                                                                                \
        }                                                                                    \
    }
APPLY_PASS(f32, float)
APPLY_PASS(f64, double)

/* ---------------------------------------------------------------- helpers */

static bool is_f32(const tide_tensor *t) { return tide_tensor_dtype(t) == TIDE_FLOAT32; }

static void read_vector(const tide_tensor *t, double *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = is_f32(t) ? ((const float *)tide_tensor_data(t))[i]
                           : ((const double *)tide_tensor_data(t))[i];
}

static void write_vector(tide_tensor *t, const double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (is_f32(t))
            ((float *)tide_tensor_data(t))[i] = (float)v[i];
        else
            ((double *)tide_tensor_data(t))[i] = v[i];
    }
}

/* Checks x (input xi) and the channel vectors (inputs first .. first + n) against each other. */
static tide_status check_inputs(tide_kernel_ctx *ctx, int xi, int first, const char *const *names,
                                const bool *empty_ok, int n, int64_t *channels)
{
    const tide_shape *x = tide_tensor_shape(tide_kernel_input(ctx, xi));
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_batch_norm_x(x, channels, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    for (int i = 0; i < n; i++)
        if (!tide_nn_check_channel_vector(tide_tensor_shape(tide_kernel_input(ctx, first + i)),
                                          names[i], empty_ok[i], x, channels, msg, sizeof msg))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

/* Per-channel scratch in double: `count` arrays of c values, one allocation (caller frees [0]). */
static double *scratch(tide_kernel_ctx *ctx, int64_t c, int count)
{
    double *p = calloc((size_t)(c > 0 ? c : 1) * (size_t)count, sizeof *p);
    if (!p)
        tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld channels",
                          (long long)c);
    return p;
}

/* The element-wise pass: coefficients converted to the tensor's dtype, rows split over threads. */
static tide_status apply(tide_kernel_ctx *ctx, const tide_tensor *x, const tide_tensor *dy,
                         tide_tensor *out, const double *coef, int64_t c)
{
    bool f32 = is_f32(x);
    size_t size = f32 ? sizeof(float) : sizeof(double);
    char *typed = malloc((size_t)(4 * (c > 0 ? c : 1)) * size);
    if (!typed)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for %lld channels",
                                 (long long)c);
    for (int64_t i = 0; i < 4 * c; i++) {
        if (f32)
            ((float *)typed)[i] = (float)coef[i];
        else
            ((double *)typed)[i] = coef[i];
    }
    apply_job j = {tide_tensor_data(x), dy ? tide_tensor_data(dy) : NULL, tide_tensor_data(out),
                   typed, typed + (size_t)c * size, typed + (size_t)(2 * c) * size,
                   typed + (size_t)(3 * c) * size, c};
    int64_t rows = c > 0 ? tide_tensor_num_elements(x) / c : 0;
    tide_kernel_parallel_for(ctx, rows, 0.5 * (double)c, f32 ? apply_f32 : apply_f64, &j);
    free(typed);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- FusedBatchNorm */

/* Training statistics: mean[c], var[c] (biased) of x over its rows. */
static bool batch_statistics(tide_kernel_ctx *ctx, const tide_tensor *x, int64_t c, double *mean,
                             double *var)
{
    int64_t rows = tide_tensor_num_elements(x) / c;
    stats_job j = {.pass = PASS_SUM, .x = tide_tensor_data(x), .sums = mean, .rows = rows,
                   .channels = c};
    if (!run_stats(ctx, &j, is_f32(x)))
        return false;
    for (int64_t k = 0; k < c; k++)
        mean[k] /= (double)rows;
    j.pass = PASS_CENTERED_SQUARES;
    j.mean = mean;
    j.sums = var;
    if (!run_stats(ctx, &j, is_f32(x)))
        return false;
    for (int64_t k = 0; k < c; k++)
        var[k] /= (double)rows;
    return true;
}

/* Outputs [from, num_outputs): the empty reserve spaces. */
static tide_status empty_outputs(tide_kernel_ctx *ctx, int from)
{
    tide_shape empty = tide_shape_vector(0);
    for (int i = from; i < tide_kernel_num_outputs(ctx); i++)
        if (!tide_kernel_alloc_output(ctx, i, &empty, false))
            return tide_kernel_status(ctx);
    return TIDE_OK;
}

static tide_status batch_norm_compute(tide_kernel_ctx *ctx)
{
    bool training = true;
    double eps = 0.0001;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "is_training", &training);
    tide_attrs_get_float(tide_kernel_attrs(ctx), "epsilon", &eps);
    static const char *const names[] = {"scale", "offset", "mean", "variance"};
    const bool empty_ok[] = {false, false, training, training};
    int64_t c;
    if (check_inputs(ctx, 0, 1, names, empty_ok, 4, &c) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    tide_shape vs = tide_shape_vector(c);
    tide_tensor *stats[4];
    for (int i = 0; i < 4; i++)
        stats[i] = y ? tide_kernel_alloc_output(ctx, i + 1, &vs, false) : NULL;
    /* m, v, unbiased v, inv_std, scale, offset, then the 4 coefficient arrays of apply */
    double *w = stats[3] ? scratch(ctx, c, 10) : NULL;
    if (!w)
        return tide_kernel_status(ctx);
    double *m = w, *v = w + c, *unbiased = w + 2 * c, *inv_std = w + 3 * c, *scale = w + 4 * c;
    double *offset = w + 5 * c, *coef = w + 6 * c;
    int64_t n = tide_tensor_num_elements(x), rows = c > 0 ? n / c : 0;
    if (!training) {
        read_vector(tide_kernel_input(ctx, 3), m, c);
        read_vector(tide_kernel_input(ctx, 4), v, c);
        memcpy(unbiased, v, (size_t)c * sizeof *v);
    } else if (rows == 0) {
        for (int64_t k = 0; k < 3 * c; k++)
            w[k] = NAN; /* no data: no statistics, as TensorFlow */
    } else if (!batch_statistics(ctx, x, c, m, v)) {
        free(w);
        return tide_kernel_status(ctx);
    } else {
        for (int64_t k = 0; k < c; k++)
            unbiased[k] = rows > 1 ? v[k] * (double)rows / (double)(rows - 1) : v[k];
    }
    read_vector(tide_kernel_input(ctx, 1), scale, c);
    read_vector(tide_kernel_input(ctx, 2), offset, c);
    for (int64_t k = 0; k < c; k++) {
        inv_std[k] = 1 / sqrt(v[k] + eps);
        coef[k] = 0;                             /* k: no dy term */
        coef[c + k] = m[k];                      /* m */
        coef[2 * c + k] = scale[k] * inv_std[k]; /* a */
        coef[3 * c + k] = offset[k];             /* b */
    }
    const double *out_values[4] = {m, unbiased, m, v};
    for (int i = 0; i < 4; i++)
        write_vector(stats[i], out_values[i], c);
    tide_status st = apply(ctx, x, NULL, y, coef, c);
    free(w);
    return st == TIDE_OK ? empty_outputs(ctx, 5) : st;
}

/* ---------------------------------------------------------------- FusedBatchNormGrad */

static tide_status batch_norm_grad_compute(tide_kernel_ctx *ctx)
{
    bool training = true;
    double eps = 0.0001;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "is_training", &training);
    tide_attrs_get_float(tide_kernel_attrs(ctx), "epsilon", &eps);
    tide_tensor *dy = tide_kernel_input(ctx, 0), *x = tide_kernel_input(ctx, 1);
    tide_shape merged;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_same_shape(tide_tensor_shape(dy), tide_tensor_shape(x), "y_backprop", "x", &merged,
                            msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    static const char *const names[] = {"scale", "reserve_space_1", "reserve_space_2"};
    static const bool empty_ok[] = {false, false, false};
    int64_t c;
    if (check_inputs(ctx, 1, 2, names, empty_ok, 3, &c) != TIDE_OK)
        return tide_kernel_status(ctx);
    int fwd = !tide_tensor_is_exclusive(dy) && tide_tensor_is_exclusive(x) ? 1 : 0;
    tide_tensor *dx = tide_kernel_forward_or_alloc(ctx, fwd, 0, tide_tensor_shape(x));
    tide_shape vs = tide_shape_vector(c);
    tide_tensor *dscale = dx ? tide_kernel_alloc_output(ctx, 1, &vs, false) : NULL;
    tide_tensor *doffset = dscale ? tide_kernel_alloc_output(ctx, 2, &vs, false) : NULL;
    /* scale, m, inv_std, sums (2c), then the 4 coefficient arrays of apply (k, m, a, b) */
    double *w = doffset ? scratch(ctx, c, 9) : NULL;
    if (!w)
        return tide_kernel_status(ctx);
    double *scale = w, *m = w + c, *inv_std = w + 2 * c, *sums = w + 3 * c, *coef = w + 5 * c;
    read_vector(tide_kernel_input(ctx, 2), scale, c);
    read_vector(tide_kernel_input(ctx, 3), m, c);
    read_vector(tide_kernel_input(ctx, 4), inv_std, c); /* the variance, for now */
    for (int64_t k = 0; k < c; k++)
        inv_std[k] = 1 / sqrt(inv_std[k] + eps);
    int64_t rows = c > 0 ? tide_tensor_num_elements(x) / c : 0;
    stats_job j = {.pass = PASS_GRAD_SUMS, .x = tide_tensor_data(x), .dy = tide_tensor_data(dy),
                   .mean = m, .inv_std = inv_std, .sums = sums, .rows = rows, .channels = c};
    if (!run_stats(ctx, &j, is_f32(x))) {
        free(w);
        return tide_kernel_status(ctx);
    }
    const double *sum_dy = sums, *sum_dy_xhat = sums + c;
    for (int64_t k = 0; k < c; k++) {
        double gain = scale[k] * inv_std[k];
        coef[k] = gain;
        coef[c + k] = m[k];
        coef[2 * c + k] = training && rows ? -gain * inv_std[k] * sum_dy_xhat[k] / (double)rows : 0;
        coef[3 * c + k] = training && rows ? -gain * sum_dy[k] / (double)rows : 0;
    }
    write_vector(dscale, sum_dy_xhat, c);
    write_vector(doffset, sum_dy, c);
    tide_status st = apply(ctx, x, dy, dx, coef, c);
    free(w);
    return st == TIDE_OK ? empty_outputs(ctx, 3) : st;
}

/* float32 or float64, channels last, and for V2/V3 statistics of x's dtype (the shape function
 * checked the same at graph time). */
static tide_status batch_norm_init(tide_kernel_ctx *ctx, void **state)
{
    (void)state;
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0), u;
    const char *format = "NHWC";
    char msg[TIDE_OP_MSG_MAX];
    if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    tide_attrs_get_string(tide_kernel_attrs(ctx), "data_format", &format);
    if (!tide_nn_check_batch_norm_format(format, msg, sizeof msg) ||
        (tide_attrs_get_type(tide_kernel_attrs(ctx), "U", &u) &&
         !tide_nn_check_batch_norm_types(dt, u, msg, sizeof msg)))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

static void register_batch_norm_kernels(void)
{
    /* Not TIDE_KERNEL_EXPENSIVE: large inputs are split by parallel_for inside the kernel, and a
     * kernel the executor runs inline finds its input exclusive and can write over it. */
    static const char *const forward[] = {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"};
    static const char *const backward[] = {"FusedBatchNormGrad", "FusedBatchNormGradV2",
                                           "FusedBatchNormGradV3"};
    for (int i = 0; i < 3; i++) {
        tide_kernel_register(&(tide_kernel_spec){.op = forward[i], .device_type = "cpu",
                                                  .init = batch_norm_init, .compute = batch_norm_compute});
        tide_kernel_register(&(tide_kernel_spec){.op = backward[i], .device_type = "cpu",
                                                  .init = batch_norm_init,
                                                  .compute = batch_norm_grad_compute});
    }
}
TIDE_REGISTER(register_batch_norm_kernels)
