/* scan.c — CPU kernels of Cumsum and Cumprod (engine/ops/scan_ops.c) for the integer types and
 * float32/float64. x is viewed as [outer, n, inner] around the scan axis; each outer block is scanned
 * row by row (a row of `inner` contiguous elements combined with the previous result row, which
 * vectorises), so the combination order along the axis is the scan order, exactly as the docs say.
 * Blocks are split over the engine's threads. Integers wrap through their unsigned type. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/scan_ops.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "cpu_util.h"

typedef struct scan_job {
    const char *x;
    char *y;
    int64_t n, inner;
    bool exclusive, reverse;
    void (*loop)(const struct scan_job *j, int64_t outer_begin, int64_t outer_end);
} scan_job;

/* name_T scanning blocks [ob, oe) with COMBINE(a, b) and the identity IDENT. */
#define SCAN_LOOP(name, T, U, COMBINE, IDENT)                                                 \
    static void name(const scan_job *j, int64_t ob, int64_t oe)                               \
    {                                                                                         \
        const int64_t n = j->n, inner = j->inner;                                             \
        for (int64_t o = ob; o < oe; o++) {                                                   \
            const T *x = (const T *)j->x + o * n * inner;                                     \
            T *y = (T *)j->y + o * n * inner;                                                 \
            for (int64_t step = 0; step < n; step++) {                                        \
                const int64_t k = j->reverse ? n - 1 - step : step;                           \
                const int64_t prev = j->reverse ? k + 1 : k - 1;                              \
                T *yk = y + k * inner;                                                        \
                if (step == 0) {                                                              \
                    for (int64_t c = 0; c < inner; c++)                                       \
                        yk[c] = j->exclusive ? (T)(IDENT) : x[k * inner + c];                 \
                    continue;                                                                 \
                }                                                                             \
                const T *yp = y + prev * inner, *xs = x + (j->exclusive ? prev : k) * inner;  \
                IVDEP for (int64_t c = 0; c < inner; c++) {                                   \
                    const U a = (U)yp[c], b = (U)xs[c];                                       \
                    yk[c] = (T)(COMBINE);                                                     \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

#define SCAN_TYPES(X, op, COMBINE, IDENT)                                                     \
    X(op##_i8, int8_t, uint32_t, COMBINE, IDENT) X(op##_i16, int16_t, uint32_t, COMBINE, IDENT) \
    X(op##_i32, int32_t, uint32_t, COMBINE, IDENT) X(op##_i64, int64_t, uint64_t, COMBINE, IDENT) \
    X(op##_u8, uint8_t, uint32_t, COMBINE, IDENT) X(op##_u16, uint16_t, uint32_t, COMBINE, IDENT) \
    X(op##_f32, float, float, COMBINE, IDENT) X(op##_f64, double, double, COMBINE, IDENT)
SCAN_TYPES(SCAN_LOOP, cumsum, a + b, 0)
SCAN_TYPES(SCAN_LOOP, cumprod, a * b, 1)

typedef void (*scan_loop)(const scan_job *j, int64_t ob, int64_t oe);
#define SCAN_TABLE(op)                                                                        \
    {[TIDE_INT8] = op##_i8,     [TIDE_INT16] = op##_i16,   [TIDE_INT32] = op##_i32,           \
     [TIDE_INT64] = op##_i64,   [TIDE_UINT8] = op##_u8,    [TIDE_UINT16] = op##_u16,          \
     [TIDE_FLOAT32] = op##_f32, [TIDE_FLOAT64] = op##_f64}
static const scan_loop cumsum_loops[TIDE_NUM_DTYPES] = SCAN_TABLE(cumsum);
static const scan_loop cumprod_loops[TIDE_NUM_DTYPES] = SCAN_TABLE(cumprod);

static void scan_range(int64_t begin, int64_t end, void *arg)
{
    const scan_job *j = arg;
    j->loop(j, begin, end);
}

static tide_status scan_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0), *a = tide_kernel_input(ctx, 1);
    const tide_shape *s = tide_tensor_shape(x);
    char msg[TIDE_OP_MSG_MAX], buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(a) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a scalar, got shape %s",
                                 tide_shape_format(tide_tensor_shape(a), buf, sizeof buf));
    int axis;
    if (!tide_scan_axis(s, tide_op_int_at(a, 0), &axis, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_dtype dt = tide_tensor_dtype(x);
    const scan_loop *loops = strcmp(tide_kernel_op_name(ctx), "Cumsum") == 0 ? cumsum_loops : cumprod_loops;
    if (dt <= TIDE_INVALID_DTYPE || dt >= TIDE_NUM_DTYPES || !loops[dt])
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s", tide_dtype_name(dt));
    tide_tensor *y = tide_kernel_alloc_output(ctx, 0, s, false); /* not in place: exclusive reads x behind */
    if (!y)
        return tide_kernel_status(ctx);
    scan_job j = {.x = tide_tensor_data(x), .y = tide_tensor_data(y), .n = s->dims[axis], .loop = loops[dt]};
    j.inner = 1;
    for (int d = axis + 1; d < s->rank; d++)
        j.inner *= s->dims[d];
    int64_t outer = 1;
    for (int d = 0; d < axis; d++)
        outer *= s->dims[d];
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "exclusive", &j.exclusive);
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "reverse", &j.reverse);
    if (tide_tensor_num_elements(y) == 0)
        return TIDE_OK;
    tide_kernel_parallel_for(ctx, outer, 1.0 * (double)(j.n * j.inner), scan_range, &j);
    return TIDE_OK;
}

static void register_scan_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"Cumsum", scan_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"Cumprod", scan_compute, NULL, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_scan_kernels)
