/* softmax.c — CPU kernels of the softmax family (engine/ops/nn_ops.c): Softmax, LogSoftmax,
 * SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits, for float32 and float64.
 *
 * All four work row by row over the last dimension (the classes), rows split across threads with
 * tide_kernel_parallel_for. A row is shifted by its maximum before exp, so exp never overflows and
 * the largest term is exp(0) = 1; the sum of exponentials accumulates in double. With m the row's
 * maximum and s = sum(exp(x - m)) (float32 exp: tide_fast_expf, within 1 ulp, vectorised at the
 * CPU's width, see TIDE_ISA_VARIANTS in cpu_util.h):
 *   softmax = exp(x - m) / s        log_softmax = x - m - log(s)
 *   loss = -sum(labels * log_softmax)   backprop = softmax - labels (one_hot(label) when sparse)
 * A NaN anywhere in a row makes the whole row NaN; +inf logits give NaN (inf - inf), as in
 * TensorFlow. The sparse op checks every label before computing anything. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../engine/ops/nn_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised, selects of floats too (cpu_util.h: before including it). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h"

#define NS_PER_CLASS 8.0 /* cost of one element of a row (an exp and a few flops) */

enum { KIND_SOFTMAX, KIND_LOG_SOFTMAX, KIND_XENT, KIND_SPARSE_XENT };

/* One kernel call: `rows` rows of `classes` elements. */
typedef struct rows_job {
    int kind;
    const void *x;         /* logits / features */
    const void *labels;    /* dense: like x; sparse: [rows] of labels_dtype */
    tide_dtype labels_dtype;
    void *y;               /* softmax / log_softmax / backprop */
    void *loss;            /* [rows] (cross-entropy) */
    int64_t classes;
} rows_job;

static inline int64_t label_at(const rows_job *j, int64_t r)
{
    return j->labels_dtype == TIDE_INT32 ? ((const int32_t *)j->labels)[r]
                                         : ((const int64_t *)j->labels)[r];
}

#define LANES 8  /* independent accumulators of a row reduction (they vectorise) */
#define TILE 256 /* exponentials computed ahead of a sum that does not keep them */

/* The row functions of one dtype: T the element type, EXP its exp. Reductions run over LANES
 * accumulators (sums in double) and add them in a fixed order. */
#define ROW_FUNCTIONS(sfx, TARGET, ISA, T, EXP)                                                         \
    TARGET static inline T row_max_##sfx(const T *x, int64_t c)                                      \
    {                                                                                         \
        T lane[LANES];                                                                        \
        for (int l = 0; l < LANES; l++)                                                       \
            lane[l] = x[0];                                                                   \
        int64_t k = 0;                                                                        \
        for (; k + LANES <= c; k += LANES)                                                    \
            for (int l = 0; l < LANES; l++)                                                   \
                lane[l] = x[k + l] > lane[l] ? x[k + l] : lane[l];                            \
        for (; k < c; k++)                                                                    \
            lane[0] = x[k] > lane[0] ? x[k] : lane[0];                                        \
        T m = lane[0];                                                                        \
        for (int l = 1; l < LANES; l++)                                                       \
            m = lane[l] > m ? lane[l] : m;                                                    \
        return m;                                                                             \
    }                                                                                         \
    /* sum(a[k] * (b ? b[k] - shift : 1)) in double. */                                       \
    TARGET static inline double row_sum_##sfx(const T *a, const T *b, T shift, int64_t c)            \
    {                                                                                         \
        double lane[LANES] = {0};                                                             \
        int64_t k = 0;                                                                        \
        if (b) {                                                                              \
            for (; k + LANES <= c; k += LANES)                                                \
                for (int l = 0; l < LANES; l++)                                               \
                    lane[l] += (double)a[k + l] * (b[k + l] - shift);                         \
            for (; k < c; k++)                                                                \
                lane[0] += (double)a[k] * (b[k] - shift);                                     \
        } else {                                                                              \
            for (; k + LANES <= c; k += LANES)                                                \
                for (int l = 0; l < LANES; l++)                                               \
                    lane[l] += a[k + l];                                                      \
            for (; k < c; k++)                                                                \
                lane[0] += a[k];                                                              \
        }                                                                                     \
        return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +                                  \
               ((lane[4] + lane[5]) + (lane[6] + lane[7]));                                   \
    }                                                                                         \
    /* y[k] = exp(x[k] - m) (y may be x); returns their sum. */                               \
    TARGET static inline double row_exp_##sfx(const T *x, T m, T *y, int64_t c)                     \
    {                                                                                         \
        IVDEP for (int64_t k = 0; k < c; k++)                                                 \
            y[k] = EXP(x[k] - m);                                                             \
        return row_sum_##sfx(y, NULL, 0, c);                                                  \
    }                                                                                         \
    /* sum(exp(z)) without keeping the exponentials. */                                       \
    TARGET static inline double row_sum_exp_##sfx(const T *z, int64_t c)                             \
    {                                                                                         \
        T tmp[TILE];                                                                          \
        double s = 0;                                                                         \
        for (int64_t k0 = 0; k0 < c; k0 += TILE) {                                            \
            int64_t n = c - k0 < TILE ? c - k0 : TILE;                                        \
            for (int64_t k = 0; k < n; k++)                                                   \
                tmp[k] = EXP(z[k0 + k]);                                                      \
            s += row_sum_##sfx(tmp, NULL, 0, n);                                              \
        }                                                                                     \
        return s;                                                                             \
    }                                                                                         \
    TARGET static inline void row_scale_##sfx(T *y, T factor, int64_t c)                             \
    {                                                                                         \
        for (int64_t k = 0; k < c; k++)                                                       \
            y[k] *= factor;                                                                   \
    }                                                                                         \
    TARGET static void rows_##sfx(const rows_job *j, int64_t begin, int64_t end)                     \
    {                                                                                         \
        int64_t c = j->classes;                                                               \
        for (int64_t r = begin; r < end; r++) {                                               \
            const T *x = (const T *)j->x + r * c;                                             \
            T *y = (T *)j->y + r * c, m = row_max_##sfx(x, c);                                \
            if (j->kind == KIND_LOG_SOFTMAX) {                                                \
                IVDEP for (int64_t k = 0; k < c; k++)                                         \
                    y[k] = x[k] - m;                                                          \
                T log_s = (T)log(row_sum_exp_##sfx(y, c));                                    \
                for (int64_t k = 0; k < c; k++)                                               \
                    y[k] -= log_s;                                                            \
            } else if (j->kind == KIND_XENT) {                                                \
                /* loss = sum(l * (log s - (x - m))): the sums over x before y (maybe x) */   \
                const T *l = (const T *)j->labels + r * c;                                    \
                double sum_l = row_sum_##sfx(l, NULL, 0, c);                                  \
                double sum_lx = row_sum_##sfx(l, x, m, c);                                    \
                double s = row_exp_##sfx(x, m, y, c);                                         \
                T inv = (T)(1 / s);                                                           \
                IVDEP for (int64_t k = 0; k < c; k++)                                         \
                    y[k] = y[k] * inv - l[k];                                                 \
                ((T *)j->loss)[r] = (T)(log(s) * sum_l - sum_lx);                             \
            } else {                                                                          \
                int64_t label = j->kind == KIND_SPARSE_XENT ? label_at(j, r) : 0;             \
                T x_label = x[label]; /* read before y (maybe x) is written */                \
                double s = row_exp_##sfx(x, m, y, c);                                         \
                row_scale_##sfx(y, (T)(1 / s), c);                                            \
                if (j->kind == KIND_SPARSE_XENT) {                                            \
                    ((T *)j->loss)[r] = (T)(log(s) - ((double)x_label - (double)m));          \
                    y[label] -= 1;                                                            \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

/* float32 in the ISA variants of cpu_util.h (its exp vectorises at each width); float64 calls libm's
 * exp, which no width speeds up. */
TIDE_ISA_VARIANTS(ROW_FUNCTIONS, f32, float, tide_fast_expf)
ROW_FUNCTIONS(f64, , , double, exp)

static void f32_range(int64_t begin, int64_t end, void *arg) { TIDE_ISA_DISPATCH(rows_f32, arg, begin, end); }
static void f64_range(int64_t begin, int64_t end, void *arg) { rows_f64(arg, begin, end); }

static tide_status check_dtype(tide_kernel_ctx *ctx, void **state)
{
    (void)state;
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    return TIDE_OK;
}

static void run_rows(tide_kernel_ctx *ctx, rows_job *j, int64_t rows, tide_dtype dt)
{
    tide_kernel_parallel_for(ctx, rows, NS_PER_CLASS * (double)(j->classes + 1),
                             dt == TIDE_FLOAT32 ? f32_range : f64_range, j);
}

/* ---------------------------------------------------------------- Softmax, LogSoftmax */

static tide_status softmax_common(tide_kernel_ctx *ctx, int kind)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(x);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_logits(s, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_tensor *y = tide_kernel_forward_or_alloc(ctx, 0, 0, s);
    if (!y)
        return tide_kernel_status(ctx);
    int64_t classes = s->dims[s->rank - 1];
    if (classes == 0)
        return TIDE_OK;
    rows_job j = {.kind = kind, .x = tide_tensor_data(x), .y = tide_tensor_data(y), .classes = classes};
    run_rows(ctx, &j, tide_tensor_num_elements(x) / classes, tide_tensor_dtype(x));
    return TIDE_OK;
}

static tide_status softmax_compute(tide_kernel_ctx *ctx) { return softmax_common(ctx, KIND_SOFTMAX); }
static tide_status log_softmax_compute(tide_kernel_ctx *ctx)
{
    return softmax_common(ctx, KIND_LOG_SOFTMAX);
}

/* ---------------------------------------------------------------- cross-entropy */

/* The first row whose label is outside [0, classes), or -1. */
static int64_t find_bad_label(const rows_job *j, int64_t rows)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t label = label_at(j, r);
        if (label < 0 || label >= j->classes)
            return r;
    }
    return -1;
}

static tide_status xent_common(tide_kernel_ctx *ctx, bool sparse)
{
    tide_tensor *f = tide_kernel_input(ctx, 0), *l = tide_kernel_input(ctx, 1);
    const tide_shape *fs = tide_tensor_shape(f);
    int64_t rows, classes;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_nn_check_xent(fs, tide_tensor_shape(l), sparse, &rows, &classes, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    rows_job j = {.kind = sparse ? KIND_SPARSE_XENT : KIND_XENT, .x = tide_tensor_data(f),
                  .labels = tide_tensor_data(l), .labels_dtype = tide_tensor_dtype(l),
                  .classes = classes};
    int64_t bad = sparse ? find_bad_label(&j, rows) : -1;
    if (bad >= 0) {
        char s[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "label %lld of row %lld is outside [0, %lld) (the classes of "
                                 "features %s)", (long long)label_at(&j, bad), (long long)bad,
                                 (long long)classes, tide_shape_format(fs, s, sizeof s));
    }
    tide_shape loss_shape = tide_shape_vector(rows);
    tide_tensor *loss = tide_kernel_alloc_output(ctx, 0, &loss_shape, false);
    /* backprop may take the features' buffer: a row reads what it needs of x before writing y */
    tide_tensor *backprop = loss ? tide_kernel_forward_or_alloc(ctx, 0, 1, fs) : NULL;
    if (!backprop)
        return tide_kernel_status(ctx);
    j.loss = tide_tensor_data(loss);
    j.y = tide_tensor_data(backprop);
    run_rows(ctx, &j, rows, tide_tensor_dtype(f));
    return TIDE_OK;
}

static tide_status xent_compute(tide_kernel_ctx *ctx) { return xent_common(ctx, false); }
static tide_status sparse_xent_compute(tide_kernel_ctx *ctx) { return xent_common(ctx, true); }

static void register_softmax_kernels(void)
{
    static const struct {
        const char *op;
        tide_status (*compute)(tide_kernel_ctx *);
    } kernels[] = {
        {"Softmax", softmax_compute},
        {"LogSoftmax", log_softmax_compute},
        {"SoftmaxCrossEntropyWithLogits", xent_compute},
        {"SparseSoftmaxCrossEntropyWithLogits", sparse_xent_compute},
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = kernels[i].op, .device_type = "cpu",
                                                  .init = check_dtype,
                                                  .compute = kernels[i].compute});
}
TIDE_REGISTER(register_softmax_kernels)
