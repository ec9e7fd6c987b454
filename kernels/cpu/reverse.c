/* reverse.c — CPU kernels of the reflection ops (engine/ops/reverse_ops.c): ReverseV2 and MirrorPad
 * for every dtype (strings deep-copied), MirrorPadGrad for int32, int64, float32 and float64.
 *
 * Both forward ops are gathers: each output row (every dimension but the last) reads one input row,
 * found by mapping each of the row's coordinates (reversed, or mirrored for MirrorPad); within the
 * row, the elements are copied in order, backwards, or — for MirrorPad — the middle in one memcpy
 * and the reflected ends element by element. Rows are split over the engine's threads.
 * MirrorPadGrad scatters instead (several padded elements add into one input element), so it runs
 * on one thread, in a fixed order: results do not depend on the thread count. */
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/reverse_ops.h"
#include "cpu_util.h"

/* The map of one op over rows of `inner` elements: input shape `in`, output shape `out` (equal for
 * ReverseV2), per dimension whether it is reversed or its padding before. */
typedef struct reflect_job {
    tide_kernel_ctx *ctx;
    const tide_tensor *src;
    tide_tensor *dst;
    tide_shape in, out;
    bool reversed[TIDE_MAX_RANK];     /* ReverseV2 */
    int64_t before[TIDE_MAX_RANK];    /* MirrorPad */
    bool mirror, symmetric;
    size_t esize;
    bool strings;
    bool failed;                      /* a string copy ran out of memory */
} reflect_job;

/* The input index of output index i along dimension d. */
static int64_t source_index(const reflect_job *j, int d, int64_t i)
{
    if (j->mirror)
        return tide_mirror_source(i, j->before[d], j->in.dims[d], j->symmetric);
    return j->reversed[d] ? j->in.dims[d] - 1 - i : i;
}

static void copy_element(reflect_job *j, int64_t to, int64_t from)
{
    if (!j->strings) {
        memcpy((char *)tide_tensor_data(j->dst) + (size_t)to * j->esize,
               (const char *)tide_tensor_data(j->src) + (size_t)from * j->esize, j->esize);
        return;
    }
    const tide_tstring *s = (const tide_tstring *)tide_tensor_data(j->src) + from;
    if (tide_tensor_string_set(j->dst, to, s->data, s->len, NULL) != TIDE_OK)
        j->failed = true;
}

/* Output rows [begin, end). */
static void reflect_rows(int64_t begin, int64_t end, void *arg)
{
    reflect_job *j = arg;
    int r = j->out.rank, last = r - 1;
    int64_t inner = j->out.dims[last], in_inner = j->in.dims[last];
    for (int64_t row = begin; row < end; row++) {
        int64_t rem = row, src_row = 0, stride = 1;
        for (int d = last - 1; d >= 0; d--) { /* the input row this output row reads */
            int64_t i = rem % j->out.dims[d];
            rem /= j->out.dims[d];
            src_row += source_index(j, d, i) * stride;
            stride *= j->in.dims[d];
        }
        int64_t to = row * inner, from = src_row * in_inner;
        if (!j->strings && !j->reversed[last]) { /* the part that is a plain copy, at once */
            int64_t lo = j->mirror ? j->before[last] : 0, n = in_inner;
            memcpy((char *)tide_tensor_data(j->dst) + (size_t)(to + lo) * j->esize,
                   (const char *)tide_tensor_data(j->src) + (size_t)from * j->esize, (size_t)n * j->esize);
            for (int64_t k = 0; k < inner; k++)
                if (k < lo || k >= lo + n)
                    copy_element(j, to + k, from + source_index(j, last, k));
            continue;
        }
        for (int64_t k = 0; k < inner; k++)
            copy_element(j, to + k, from + source_index(j, last, k));
    }
}

static tide_status reflect(tide_kernel_ctx *ctx, reflect_job *j)
{
    j->ctx = ctx;
    j->src = tide_kernel_input(ctx, 0);
    j->in = *tide_tensor_shape(j->src);
    j->esize = tide_dtype_size(tide_tensor_dtype(j->src));
    j->strings = tide_tensor_dtype(j->src) == TIDE_STRING;
    j->dst = tide_kernel_alloc_output(ctx, 0, &j->out, false);
    if (!j->dst)
        return tide_kernel_status(ctx);
    int64_t n = tide_shape_num_elements(&j->out);
    if (n == 0)
        return TIDE_OK;
    if (j->out.rank == 0) { /* a scalar: itself */
        copy_element(j, 0, 0);
    } else {
        int64_t rows = n / j->out.dims[j->out.rank - 1];
        if (j->strings) /* string copies allocate: one thread, so a failure is seen */
            reflect_rows(0, rows, j);
        else
            tide_kernel_parallel_for(ctx, rows, 4.0 + 0.1 * (double)(j->out.dims[j->out.rank - 1] * (int64_t)j->esize),
                                     reflect_rows, j);
    }
    if (j->failed)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory copying strings");
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ReverseV2 */

static tide_status reverse_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_tensor *axis = tide_kernel_input(ctx, 1);
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(axis) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a vector, got shape %s",
                                 tide_shape_format(tide_tensor_shape(axis), a, sizeof a));
    int64_t axes[TIDE_MAX_RANK + 1];
    int64_t n = tide_op_index_values(axis, axes, TIDE_MAX_RANK + 1);
    reflect_job j = {.out = *tide_tensor_shape(x)};
    if (n > TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axis names %lld dimensions, more than %d",
                                 (long long)n, TIDE_MAX_RANK);
    if (!tide_reverse_axes(axes, n, j.out.rank, j.reversed, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    bool any = false;
    for (int d = 0; d < j.out.rank; d++)
        any |= j.reversed[d] && j.out.dims[d] > 1;
    if (!any) { /* nothing moves */
        tide_kernel_set_output(ctx, 0, x);
        return tide_kernel_status(ctx);
    }
    return reflect(ctx, &j);
}

/* ---------------------------------------------------------------- MirrorPad, MirrorPadGrad */

/* Reads the mode attr and paddings (input 1, a [rows, 2] matrix; at most TIDE_MAX_RANK rows read). */
static tide_status read_paddings(tide_kernel_ctx *ctx, bool *symmetric, int64_t pads[2 * TIDE_MAX_RANK],
                                 int64_t *rows)
{
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX];
    if (!tide_mirror_mode(tide_kernel_attrs(ctx), symmetric, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    const tide_tensor *p = tide_kernel_input(ctx, 1);
    const tide_shape *ps = tide_tensor_shape(p);
    if (ps->rank != 2 || ps->dims[1] != 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "paddings must be a [rank, 2] matrix, got shape %s",
                                 tide_shape_format(ps, a, sizeof a));
    *rows = ps->dims[0];
    if (*rows <= TIDE_MAX_RANK) /* more rows than any rank: the row count check refuses them */
        tide_op_index_values(p, pads, 2 * *rows);
    return TIDE_OK;
}

/* The padded shape of `unpadded` into the job, with the paddings before each dimension. */
static tide_status mirror_geometry(tide_kernel_ctx *ctx, const tide_shape *unpadded, const int64_t *pads,
                                   int64_t rows, reflect_job *j)
{
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_mirror_pad_shape(unpadded, pads, rows, j->symmetric, &j->out, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    j->mirror = true;
    for (int d = 0; d < unpadded->rank; d++)
        j->before[d] = pads[2 * d];
    return TIDE_OK;
}

static tide_status mirror_pad_compute(tide_kernel_ctx *ctx)
{
    reflect_job j = {0};
    int64_t pads[2 * TIDE_MAX_RANK], rows;
    tide_status st = read_paddings(ctx, &j.symmetric, pads, &rows);
    if (st == TIDE_OK)
        st = mirror_geometry(ctx, tide_tensor_shape(tide_kernel_input(ctx, 0)), pads, rows, &j);
    return st == TIDE_OK ? reflect(ctx, &j) : st;
}

/* Adds grad into out through the map, in element order; integers wrap (through U). */
#define SCATTER(T, U)                                                                        \
    do {                                                                                     \
        const T *g = tide_tensor_data(grad);                                                 \
        T *o = tide_tensor_data(out);                                                        \
        for (int64_t i = 0; i < n; i++) {                                                    \
            int64_t at = dest(&j, &gs, i);                                                   \
            o[at] = (T)((U)o[at] + (U)g[i]);                                                 \
        }                                                                                    \
    } while (0)

/* The unpadded element padded element i (of shape gs) was copied from. */
static int64_t dest(const reflect_job *j, const tide_shape *gs, int64_t i)
{
    int64_t at = 0, stride = 1;
    for (int d = gs->rank - 1; d >= 0; d--) {
        at += source_index(j, d, i % gs->dims[d]) * stride;
        i /= gs->dims[d];
        stride *= j->in.dims[d];
    }
    return at;
}

static tide_status mirror_pad_grad_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *grad = tide_kernel_input(ctx, 0);
    const tide_shape gs = *tide_tensor_shape(grad);
    reflect_job j = {0};
    int64_t pads[2 * TIDE_MAX_RANK], rows;
    tide_shape unpadded;
    char msg[TIDE_OP_MSG_MAX];
    tide_status st = read_paddings(ctx, &j.symmetric, pads, &rows);
    if (st != TIDE_OK)
        return st;
    if (rows == gs.rank && !tide_mirror_unpad_shape(&gs, pads, rows, &unpadded, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (rows != gs.rank)
        unpadded = gs; /* the row count check below refuses it */
    st = mirror_geometry(ctx, &unpadded, pads, rows, &j);
    if (st != TIDE_OK)
        return st;
    j.in = unpadded;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &unpadded, true);
    if (!out)
        return tide_kernel_status(ctx);
    int64_t n = tide_shape_num_elements(&gs);
    switch (tide_tensor_dtype(grad)) {
    case TIDE_FLOAT32: SCATTER(float, float); break;
    case TIDE_FLOAT64: SCATTER(double, double); break;
    case TIDE_INT32: SCATTER(int32_t, uint32_t); break;
    case TIDE_INT64: SCATTER(int64_t, uint64_t); break;
    default:
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(tide_tensor_dtype(grad)));
    }
    return TIDE_OK;
}

static void register_reverse_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"ReverseV2", reverse_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"MirrorPad", mirror_pad_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"MirrorPadGrad", mirror_pad_grad_compute, NULL, TIDE_KERNEL_EXPENSIVE},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_reverse_kernels)
