/* shape.c — CPU kernels of the shape, index and fill ops defined in engine/ops/shape_ops.c: Gather,
 * Fill, ZerosLike, OnesLike, Shape, Rank, Size, Where, ExpandDims, Squeeze, OneHot and Range.
 *
 * Most of these move elements without looking at them, so they switch (once, outside the loops) on
 * the element SIZE — 1, 2, 4, 8 or 16 bytes — rather than on the dtype: one loop serves int32 and
 * float32 alike. Strings are copied element by element, since each owns its bytes. ExpandDims and
 * Squeeze return views of their input (no copy). Attrs are read once per node, in init. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "../../engine/ops/shape_ops.h"
#include "../../engine/tide_op.h"
#include "cpu_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(s, buf, sizeof buf)

typedef struct elem16 {
    uint64_t lo, hi;
} elem16;

/* ---------------------------------------------------------------- shared helpers */

/* dst[0..n) = *value for elements of es bytes (not strings). */
static void fill_elems(void *dst, int64_t n, const void *value, size_t es)
{
#define FILL(type)                                                                          \
    do {                                                                                    \
        type v, *d = dst;                                                                   \
        memcpy(&v, value, sizeof v);                                                        \
        for (int64_t i = 0; i < n; i++)                                                     \
            d[i] = v;                                                                       \
    } while (0)
    static const unsigned char zero[16];
    if (es <= sizeof zero && memcmp(value, zero, es) == 0) {
        memset(dst, 0, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: memset(dst, *(const unsigned char *)value, (size_t)n); break;
    case 2: FILL(uint16_t); break;
    case 4: FILL(uint32_t); break;
    case 8: FILL(uint64_t); break;
    case 16: FILL(elem16); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)dst + (size_t)i * es, value, es);
    }
#undef FILL
}

typedef struct fill_job {
    char *dst;
    const void *value;
    size_t es;
} fill_job;

static void fill_chunk(int64_t begin, int64_t end, void *arg)
{
    const fill_job *j = arg;
    fill_elems(j->dst + (size_t)begin * j->es, end - begin, j->value, j->es);
}

/* fill_elems split over the engine's threads when it is big. */
static void fill_parallel(tide_kernel_ctx *ctx, void *dst, int64_t n, const void *value, size_t es)
{
    fill_job j = {dst, value, es};
    tide_kernel_parallel_for(ctx, n, 0.08 * (double)es, fill_chunk, &j);
}

/* out's string i = *s (copied). */
static tide_status set_string(tide_kernel_ctx *ctx, tide_tensor *out, int64_t i, const tide_tstring *s)
{
    if (tide_tensor_string_set(out, i, s->data ? s->data : "", s->len, NULL) != TIDE_OK)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory copying a string of %zu bytes",
                                 s->len);
    return TIDE_OK;
}

/* Hands out a view of x with shape s (or x itself when the shape is the same). */
static tide_status set_view(tide_kernel_ctx *ctx, tide_tensor *x, const tide_shape *s)
{
    if (tide_shape_equal(s, tide_tensor_shape(x))) {
        tide_kernel_set_output(ctx, 0, x);
        return tide_kernel_status(ctx);
    }
    tide_tensor *v = tide_tensor_reshape(x, s, NULL);
    if (!v) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "cannot make a view of shape %s",
                                 SHAPE_STR(s, buf));
    }
    tide_kernel_set_output(ctx, 0, v);
    tide_tensor_release(v);
    return tide_kernel_status(ctx);
}

static tide_status need_scalar(tide_kernel_ctx *ctx, int i, const char *what)
{
    const tide_shape *s = tide_tensor_shape(tide_kernel_input(ctx, i));
    char buf[TIDE_SHAPE_STR_MAX];
    if (s->rank != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s", what,
                                 SHAPE_STR(s, buf));
    return TIDE_OK;
}

/* init for kernels whose only attr is "axis": the state is an int64_t. */
static tide_status axis_init(tide_kernel_ctx *ctx, void **state)
{
    int64_t *axis = malloc(sizeof *axis);
    if (!axis)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    *axis = 0;
    if (!tide_attrs_get_int(tide_kernel_attrs(ctx), "axis", axis)) {
        free(axis);
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'axis' is missing");
    }
    *state = axis;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Gather */

/* Output viewed as [outer, m, row]: output row (o, k) is params row (o, indices[ib + k]) of
 * [outer, limit, row], where ib = (o / per_batch) * m: with batch dims each batch of per_batch outer
 * rows reads its own m indices (without, per_batch == outer and ib stays 0). Rows are row_bytes long
 * and copied with memcpy (a fixed size for the common small rows). */
typedef struct gather_job {
    const char *src;
    char *dst;
    const void *idx;
    bool idx64;
    int64_t m, limit, per_batch;
    size_t row_bytes;
} gather_job;

#define GATHER_ROWS(ITYPE, BYTES)                                                           \
    do {                                                                                    \
        const ITYPE *idx = (const ITYPE *)j->idx + ib;                                      \
        for (int64_t r = begin; r < end; r++) {                                             \
            memcpy(j->dst + (size_t)r * (BYTES),                                            \
                   j->src + (size_t)(o * j->limit + (int64_t)idx[k]) * (BYTES), (BYTES));   \
            if (++k == j->m) {                                                              \
                k = 0;                                                                      \
                if (++o % j->per_batch == 0)                                                \
                    idx += j->m;                                                            \
            }                                                                               \
        }                                                                                   \
    } while (0)

#define GATHER_SIZES(ITYPE)                                                                 \
    switch (j->row_bytes) {                                                                 \
    case 1: GATHER_ROWS(ITYPE, 1); break;                                                   \
    case 2: GATHER_ROWS(ITYPE, 2); break;                                                   \
    case 4: GATHER_ROWS(ITYPE, 4); break;                                                   \
    case 8: GATHER_ROWS(ITYPE, 8); break;                                                   \
    case 16: GATHER_ROWS(ITYPE, 16); break;                                                 \
    default: GATHER_ROWS(ITYPE, j->row_bytes); break;                                       \
    }

static void gather_rows(int64_t begin, int64_t end, void *arg)
{
    const gather_job *j = arg;
    int64_t o = begin / j->m, k = begin % j->m, ib = o / j->per_batch * j->m;
    if (j->idx64)
        GATHER_SIZES(int64_t)
    else
        GATHER_SIZES(int32_t)
}

/* "[1, 0]": the position of flat element i in shape s ("" for a scalar). */
static char *format_position(const tide_shape *s, int64_t i, char *buf, size_t size)
{
    int64_t pos[TIDE_MAX_RANK];
    for (int d = s->rank - 1; d >= 0; d--) {
        pos[d] = s->dims[d] ? i % s->dims[d] : 0;
        i = s->dims[d] ? i / s->dims[d] : 0;
    }
    size_t at = 0;
    buf[0] = 0;
    for (int d = 0; d < s->rank && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld%s", d ? ", " : "[", (long long)pos[d],
                               d == s->rank - 1 ? "]" : "");
    return buf;
}

/* Every index in [0, limit)? A branch-free pass first; the position only when one is bad. */
static tide_status gather_check(tide_kernel_ctx *ctx, const tide_tensor *indices, int64_t limit, int axis)
{
    int64_t m = tide_tensor_num_elements(indices), bad = -1;
    bool any = false;
    if (tide_tensor_dtype(indices) == TIDE_INT64) {
        const int64_t *x = tide_tensor_data(indices);
        for (int64_t i = 0; i < m; i++)
            any |= (uint64_t)x[i] >= (uint64_t)limit;
    } else {
        const int32_t *x = tide_tensor_data(indices);
        for (int64_t i = 0; i < m; i++)
            any |= (uint64_t)(int64_t)x[i] >= (uint64_t)limit;
    }
    if (!any)
        return TIDE_OK;
    for (int64_t i = 0; i < m && bad < 0; i++)
        if (tide_op_int_at(indices, i) < 0 || tide_op_int_at(indices, i) >= limit)
            bad = i;
    char pos[TIDE_SHAPE_STR_MAX];
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                             "indices%s = %lld is out of range: params has %lld entries along axis %d, so "
                             "an index must be in [0, %lld)",
                             format_position(tide_tensor_shape(indices), bad, pos, sizeof pos),
                             (long long)tide_op_int_at(indices, bad), (long long)limit, axis,
                             (long long)limit);
}

static tide_status gather_strings(tide_kernel_ctx *ctx, const gather_job *j, int64_t rows, int64_t inner,
                                  tide_tensor *out)
{
    const tide_tstring *src = (const tide_tstring *)j->src;
    for (int64_t r = 0, o = 0, k = 0; r < rows; r++) {
        int64_t ib = o / j->per_batch * j->m;
        int64_t from = (o * j->limit + tide_op_int_at(tide_kernel_input(ctx, 1), ib + k)) * inner;
        for (int64_t e = 0; e < inner; e++)
            if (set_string(ctx, out, r * inner + e, &src[from + e]) != TIDE_OK)
                return tide_kernel_status(ctx);
        if (++k == j->m) {
            k = 0;
            o++;
        }
    }
    return TIDE_OK;
}

/* Gather and GatherV2 along axis with batch_dims leading batch dimensions (both as given). */
static tide_status gather_along(tide_kernel_ctx *ctx, int64_t axis, int64_t batch_dims)
{
    tide_tensor *params = tide_kernel_input(ctx, 0), *indices = tide_kernel_input(ctx, 1);
    const tide_shape *ps = tide_tensor_shape(params), *is = tide_tensor_shape(indices);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX], msg[256];
    int ax, bd;
    if (!tide_shape_ops_gather_axes(ps->rank, is->rank, axis, batch_dims, &ax, &bd, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s (params %s, indices %s)", msg,
                                 SHAPE_STR(ps, a), SHAPE_STR(is, b));
    int64_t outer = 1, inner = 1, batches = 1;
    tide_shape os = {.rank = 0};
    for (int i = 0; i < ax; i++) {
        if (i < bd && ps->dims[i] != is->dims[i])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "params %s and indices %s differ in batch dimension %d",
                                     SHAPE_STR(ps, a), SHAPE_STR(is, b), i);
        if (i < bd)
            batches *= ps->dims[i];
        outer *= os.dims[os.rank++] = ps->dims[i];
    }
    for (int i = bd; i < is->rank; i++)
        os.dims[os.rank++] = is->dims[i];
    for (int i = ax + 1; i < ps->rank; i++)
        inner *= os.dims[os.rank++] = ps->dims[i];
    gather_job j = {.src = tide_tensor_data(params), .idx = tide_tensor_data(indices),
                    .idx64 = tide_tensor_dtype(indices) == TIDE_INT64,
                    .m = batches ? tide_tensor_num_elements(indices) / batches : 0, .limit = ps->dims[ax],
                    .per_batch = batches && outer ? outer / batches : 1,
                    .row_bytes = (size_t)inner * tide_dtype_size(tide_tensor_dtype(params))};
    if (gather_check(ctx, indices, j.limit, ax) != TIDE_OK)
        return tide_kernel_status(ctx);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, false);
    if (!out)
        return tide_kernel_status(ctx);
    int64_t rows = outer * j.m;
    if (tide_tensor_num_elements(out) == 0)
        return TIDE_OK;
    j.dst = tide_tensor_data(out);
    if (tide_tensor_dtype(out) == TIDE_STRING)
        return gather_strings(ctx, &j, rows, inner, out);
    tide_kernel_parallel_for(ctx, rows, 2.0 + 0.08 * (double)j.row_bytes, gather_rows, &j);
    return TIDE_OK;
}

static tide_status gather_compute(tide_kernel_ctx *ctx) { return gather_along(ctx, 0, 0); }

static tide_status gather_v2_compute(tide_kernel_ctx *ctx)
{
    tide_status st = need_scalar(ctx, 2, "axis");
    if (st != TIDE_OK)
        return st;
    int64_t batch_dims = 0;
    tide_attrs_get_int(tide_kernel_attrs(ctx), "batch_dims", &batch_dims);
    return gather_along(ctx, tide_op_int_at(tide_kernel_input(ctx, 2), 0), batch_dims);
}

/* ---------------------------------------------------------------- Fill, ZerosLike, OnesLike */

static tide_status fill_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *dims = tide_kernel_input(ctx, 0), *value = tide_kernel_input(ctx, 1);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(dims) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dims must be a vector, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(dims), buf));
    if (need_scalar(ctx, 1, "value") != TIDE_OK)
        return tide_kernel_status(ctx);
    int64_t rank = tide_tensor_num_elements(dims), total = 1;
    if (rank > TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "dims has %lld elements, more than the maximum rank %d", (long long)rank,
                                 TIDE_MAX_RANK);
    tide_shape s = {.rank = (int)rank};
    bool empty = false, overflow = false;
    for (int i = 0; i < s.rank; i++) {
        s.dims[i] = tide_op_int_at(dims, i);
        if (s.dims[i] < 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dims[%d] = %lld must be non-negative", i,
                                     (long long)s.dims[i]);
        empty = empty || s.dims[i] == 0;
        overflow = overflow || (s.dims[i] > 0 && total > INT64_MAX / s.dims[i]);
        if (!overflow)
            total *= s.dims[i];
    }
    if (overflow && !empty) /* a zero anywhere makes the product 0 */
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dims %s have too many elements",
                                 SHAPE_STR(&s, buf));
    total = empty ? 0 : total;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &s, false);
    if (!out)
        return tide_kernel_status(ctx);
    if (tide_tensor_dtype(out) == TIDE_STRING) {
        const tide_tstring *v = tide_tensor_data(value);
        for (int64_t i = 0; i < total; i++)
            if (set_string(ctx, out, i, v) != TIDE_OK)
                return tide_kernel_status(ctx);
        return TIDE_OK;
    }
    fill_parallel(ctx, tide_tensor_data(out), total, tide_tensor_data(value),
                  tide_dtype_size(tide_tensor_dtype(out)));
    return TIDE_OK;
}

static tide_status zeros_like_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    if (tide_tensor_dtype(x) == TIDE_STRING) { /* a new string tensor holds empty strings */
        tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
        return tide_kernel_status(ctx);
    }
    tide_tensor *out = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    if (!out)
        return tide_kernel_status(ctx);
    static const unsigned char zero;
    fill_parallel(ctx, tide_tensor_data(out), (int64_t)tide_tensor_byte_size(out), &zero, 1);
    return TIDE_OK;
}

/* The bytes of the value 1 in dtype dt; false for dtypes without one (string). */
static bool one_of(tide_dtype dt, unsigned char one[16])
{
    memset(one, 0, 16);
    switch (dt) {
    case TIDE_BOOL: case TIDE_INT8: case TIDE_UINT8: one[0] = 1; return true;
    case TIDE_INT16: case TIDE_UINT16: *(uint16_t *)one = 1; return true;
    case TIDE_INT32: *(int32_t *)one = 1; return true;
    case TIDE_INT64: *(int64_t *)one = 1; return true;
    case TIDE_FLOAT16: *(uint16_t *)one = tide_f32_to_f16(1.0f); return true;
    case TIDE_BFLOAT16: *(uint16_t *)one = tide_f32_to_bf16(1.0f); return true;
    case TIDE_FLOAT32: case TIDE_COMPLEX64: *(float *)one = 1.0f; return true;
    case TIDE_FLOAT64: case TIDE_COMPLEX128: *(double *)one = 1.0; return true;
    default: return false;
    }
}

static tide_status ones_like_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    _Alignas(16) unsigned char one[16];
    if (!one_of(tide_tensor_dtype(x), one))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "OnesLike has no value 1 for dtype %s",
                                 tide_dtype_name(tide_tensor_dtype(x)));
    tide_tensor *out = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    if (!out)
        return tide_kernel_status(ctx);
    fill_parallel(ctx, tide_tensor_data(out), tide_tensor_num_elements(out), one,
                  tide_dtype_size(tide_tensor_dtype(out)));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Shape, Rank, Size */

/* Shape and ShapeN: output k is the shape of input k. */
static tide_status shape_compute(tide_kernel_ctx *ctx)
{
    for (int k = 0; k < tide_kernel_num_inputs(ctx); k++) {
        const tide_shape *s = tide_tensor_shape(tide_kernel_input(ctx, k));
        bool i32 = tide_kernel_output_dtype(ctx, k) == TIDE_INT32;
        for (int i = 0; i < s->rank && i32; i++)
            if (s->dims[i] > INT32_MAX) {
                char buf[TIDE_SHAPE_STR_MAX];
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                         "dimension %d of shape %s does not fit in int32: use out_type=int64", i,
                                         SHAPE_STR(s, buf));
            }
        tide_shape os = tide_shape_vector(s->rank);
        tide_tensor *out = tide_kernel_alloc_output(ctx, k, &os, false);
        if (!out)
            return tide_kernel_status(ctx);
        void *d = tide_tensor_data(out);
        for (int i = 0; i < s->rank; i++) {
            if (i32)
                ((int32_t *)d)[i] = (int32_t)s->dims[i];
            else
                ((int64_t *)d)[i] = s->dims[i];
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- DynamicStitch */

/* Checks the pairs, returns the merged shape in *out (rows: max index + 1). */
static tide_status stitch_shape(tide_kernel_ctx *ctx, int n, tide_shape *out)
{
    tide_shape inner = tide_shape_unknown(), s;
    int64_t rows = 0;
    char msg[TIDE_OP_MSG_MAX];
    for (int m = 0; m < n; m++) {
        const tide_tensor *ind = tide_kernel_input(ctx, m);
        if (!tide_shape_ops_stitch_inner(tide_tensor_shape(ind), tide_tensor_shape(tide_kernel_input(ctx, n + m)),
                                         m ? &inner : NULL, m, &s, msg, sizeof msg))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
        if (m == 0)
            inner = s;
        const int32_t *v = tide_tensor_data(ind);
        for (int64_t i = 0; i < tide_tensor_num_elements(ind); i++) {
            if (v[i] < 0)
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "indices[%d] holds %d at position %lld: "
                                         "indices must not be negative", m, v[i], (long long)i);
            if (v[i] >= rows)
                rows = (int64_t)v[i] + 1;
        }
    }
    if (inner.rank >= TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "the merged result would have rank %d, more than %d",
                                 inner.rank + 1, TIDE_MAX_RANK);
    out->rank = inner.rank + 1;
    out->dims[0] = rows;
    for (int d = 0; d < inner.rank; d++)
        out->dims[d + 1] = inner.dims[d];
    return TIDE_OK;
}

static tide_status dynamic_stitch_compute(tide_kernel_ctx *ctx)
{
    int n = tide_kernel_num_inputs(ctx) / 2;
    tide_shape os;
    tide_status st = stitch_shape(ctx, n, &os);
    if (st != TIDE_OK)
        return st;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, true);
    if (!out)
        return tide_kernel_status(ctx);
    int64_t slice = os.dims[0] ? tide_shape_num_elements(&os) / os.dims[0] : 0;
    tide_dtype dt = tide_tensor_dtype(out);
    size_t bytes = (size_t)slice * tide_dtype_size(dt);
    for (int m = 0; m < n; m++) {
        const tide_tensor *ind = tide_kernel_input(ctx, m), *data = tide_kernel_input(ctx, n + m);
        const int32_t *v = tide_tensor_data(ind);
        for (int64_t i = 0; i < tide_tensor_num_elements(ind); i++) {
            if (dt != TIDE_STRING) {
                memcpy((char *)tide_tensor_data(out) + (size_t)v[i] * bytes,
                       (const char *)tide_tensor_data(data) + (size_t)i * bytes, bytes);
                continue;
            }
            const tide_tstring *from = (const tide_tstring *)tide_tensor_data(data) + i * slice;
            for (int64_t e = 0; e < slice; e++)
                if (set_string(ctx, out, (int64_t)v[i] * slice + e, &from[e]) != TIDE_OK)
                    return tide_kernel_status(ctx);
        }
    }
    return TIDE_OK;
}

/* BroadcastGradientArgs: the axes (of the broadcast result, aligned right) each operand's gradient
 * is summed over. */
static tide_status broadcast_gradient_args_compute(tide_kernel_ctx *ctx)
{
    int64_t dims[2][TIDE_MAX_RANK];
    int rank[2];
    bool i32 = tide_kernel_input_dtype(ctx, 0) == TIDE_INT32;
    for (int k = 0; k < 2; k++) {
        const tide_tensor *t = tide_kernel_input(ctx, k);
        rank[k] = (int)tide_tensor_num_elements(t);
        if (tide_tensor_rank(t) != 1 || rank[k] > TIDE_MAX_RANK)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "s%d must be a shape vector of at most %d "
                                     "dims", k, TIDE_MAX_RANK);
        for (int i = 0; i < rank[k]; i++)
            dims[k][i] = i32 ? ((const int32_t *)tide_tensor_data(t))[i]
                             : ((const int64_t *)tide_tensor_data(t))[i];
    }
    int out_rank = rank[0] > rank[1] ? rank[0] : rank[1];
    int64_t axes[2][TIDE_MAX_RANK];
    int n[2] = {0, 0};
    for (int i = 0; i < out_rank; i++) {
        int64_t d[2];
        for (int k = 0; k < 2; k++) {
            int j = i - (out_rank - rank[k]);
            d[k] = j >= 0 ? dims[k][j] : -1; /* -1: the operand lacks this axis */
        }
        int64_t out = d[0] == 1 || d[0] == -1 ? (d[1] == -1 ? 1 : d[1]) : d[0];
        if (d[0] > 1 && d[1] > 1 && d[0] != d[1])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "shapes do not broadcast: axis %d has "
                                     "sizes %lld and %lld", i, (long long)d[0], (long long)d[1]);
        for (int k = 0; k < 2; k++)
            if (d[k] == -1 || (d[k] == 1 && out != 1))
                axes[k][n[k]++] = i;
    }
    for (int k = 0; k < 2; k++) {
        tide_shape os = tide_shape_vector(n[k]);
        tide_tensor *o = tide_kernel_alloc_output(ctx, k, &os, false);
        if (!o)
            return tide_kernel_status(ctx);
        for (int i = 0; i < n[k]; i++) {
            if (i32)
                ((int32_t *)tide_tensor_data(o))[i] = (int32_t)axes[k][i];
            else
                ((int64_t *)tide_tensor_data(o))[i] = axes[k][i];
        }
    }
    return TIDE_OK;
}

static tide_status rank_compute(tide_kernel_ctx *ctx)
{
    tide_shape scalar = {.rank = 0};
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &scalar, false);
    if (!out)
        return tide_kernel_status(ctx);
    *(int32_t *)tide_tensor_data(out) = tide_tensor_rank(tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static tide_status size_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    int64_t n = tide_tensor_num_elements(x);
    bool i32 = tide_kernel_output_dtype(ctx, 0) == TIDE_INT32;
    if (i32 && n > INT32_MAX) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "%lld elements (shape %s) do not fit in int32: use out_type=int64",
                                 (long long)n, SHAPE_STR(tide_tensor_shape(x), buf));
    }
    tide_shape scalar = {.rank = 0};
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &scalar, false);
    if (!out)
        return tide_kernel_status(ctx);
    if (i32)
        *(int32_t *)tide_tensor_data(out) = (int32_t)n;
    else
        *(int64_t *)tide_tensor_data(out) = n;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ExpandDims, Squeeze */

static tide_status expand_dims_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0), *d = tide_kernel_input(ctx, 1);
    const tide_shape *in = tide_tensor_shape(x);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_num_elements(d) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "dim must hold exactly one value, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(d), buf));
    if (in->rank >= TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot expand input of shape %s: the result would have rank %d, "
                                 "more than %d",
                                 SHAPE_STR(in, buf), in->rank + 1, TIDE_MAX_RANK);
    int64_t dim = tide_op_int_at(d, 0);
    if (dim < -in->rank - 1 || dim > in->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "dim %lld is out of range for input of shape %s: expected one in [%d, %d]",
                                 (long long)dim, SHAPE_STR(in, buf), -in->rank - 1, in->rank);
    int at = (int)(dim < 0 ? dim + in->rank + 1 : dim);
    tide_shape s = {.rank = in->rank + 1};
    for (int i = 0, k = 0; i < s.rank; i++)
        s.dims[i] = i == at ? 1 : in->dims[k++];
    return set_view(ctx, x, &s);
}

typedef struct squeeze_state {
    int n;
    int64_t dims[]; /* squeeze_dims as given */
} squeeze_state;

static tide_status squeeze_init(tide_kernel_ctx *ctx, void **state)
{
    const int64_t *dims = NULL;
    int n = 0;
    tide_attrs_get_int_list(tide_kernel_attrs(ctx), "squeeze_dims", &dims, &n);
    squeeze_state *st = malloc(sizeof *st + (size_t)n * sizeof st->dims[0]);
    if (!st)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    st->n = n;
    if (n)
        memcpy(st->dims, dims, (size_t)n * sizeof st->dims[0]);
    *state = st;
    return TIDE_OK;
}

static tide_status squeeze_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(x);
    const squeeze_state *st = tide_kernel_state(ctx);
    bool drop[TIDE_MAX_RANK] = {false};
    char buf[TIDE_SHAPE_STR_MAX];
    for (int i = 0; i < st->n; i++) {
        int64_t d = st->dims[i];
        if (d < -in->rank || d >= in->rank)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "squeeze_dims[%d] = %lld is out of range for input of shape %s: "
                                     "expected one in [%d, %d)",
                                     i, (long long)d, SHAPE_STR(in, buf), -in->rank, in->rank);
        int ax = (int)(d < 0 ? d + in->rank : d);
        if (in->dims[ax] != 1)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "cannot squeeze dim %d of input of shape %s: its size is %lld, not 1",
                                     ax, SHAPE_STR(in, buf), (long long)in->dims[ax]);
        drop[ax] = true;
    }
    tide_shape s = {.rank = 0};
    for (int i = 0; i < in->rank; i++)
        if (!(st->n ? drop[i] : in->dims[i] == 1))
            s.dims[s.rank++] = in->dims[i];
    return set_view(ctx, x, &s);
}

/* ---------------------------------------------------------------- OneHot */

/* Output viewed as [prefix, depth, suffix]; indices as [prefix, suffix]. Each prefix row is filled
 * with off, then on is written where the index falls in [0, depth). */
typedef struct one_hot_job {
    char *dst;
    const void *ind;
    tide_dtype ti;
    const void *on, *off;
    size_t es;
    int64_t depth, suffix;
} one_hot_job;

#define ONE_HOT_SCATTER(ITYPE, BYTES)                                                       \
    do {                                                                                    \
        const ITYPE *ind = j->ind;                                                          \
        for (int64_t p = begin; p < end; p++)                                               \
            for (int64_t s = 0; s < j->suffix; s++) {                                       \
                uint64_t v = (uint64_t)(int64_t)ind[p * j->suffix + s];                     \
                if (v < (uint64_t)j->depth)                                                 \
                    memcpy(j->dst + (size_t)((p * j->depth + (int64_t)v) * j->suffix + s) * (BYTES), \
                           j->on, (BYTES));                                                 \
            }                                                                               \
    } while (0)

#define ONE_HOT_SIZES(ITYPE)                                                                \
    switch (j->es) {                                                                        \
    case 1: ONE_HOT_SCATTER(ITYPE, 1); break;                                               \
    case 2: ONE_HOT_SCATTER(ITYPE, 2); break;                                               \
    case 4: ONE_HOT_SCATTER(ITYPE, 4); break;                                               \
    case 8: ONE_HOT_SCATTER(ITYPE, 8); break;                                               \
    default: ONE_HOT_SCATTER(ITYPE, j->es); break;                                          \
    }

static void one_hot_rows(int64_t begin, int64_t end, void *arg)
{
    const one_hot_job *j = arg;
    int64_t row = j->depth * j->suffix;
    fill_elems(j->dst + (size_t)(begin * row) * j->es, (end - begin) * row, j->off, j->es);
    if (j->ti == TIDE_INT64)
        ONE_HOT_SIZES(int64_t)
    else if (j->ti == TIDE_INT32)
        ONE_HOT_SIZES(int32_t)
    else
        ONE_HOT_SIZES(uint8_t)
}

static tide_status one_hot_strings(tide_kernel_ctx *ctx, const one_hot_job *j, int64_t prefix,
                                   tide_tensor *out)
{
    const tide_tensor *ind = tide_kernel_input(ctx, 0);
    for (int64_t p = 0, at = 0; p < prefix; p++)
        for (int64_t d = 0; d < j->depth; d++)
            for (int64_t s = 0; s < j->suffix; s++, at++) {
                bool hot = tide_op_int_at(ind, p * j->suffix + s) == d;
                if (set_string(ctx, out, at, hot ? j->on : j->off) != TIDE_OK)
                    return tide_kernel_status(ctx);
            }
    return TIDE_OK;
}

static tide_status one_hot_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *ind = tide_kernel_input(ctx, 0);
    const tide_shape *in = tide_tensor_shape(ind);
    int64_t axis = *(const int64_t *)tide_kernel_state(ctx);
    char buf[TIDE_SHAPE_STR_MAX];
    if (need_scalar(ctx, 1, "depth") || need_scalar(ctx, 2, "on_value") || need_scalar(ctx, 3, "off_value"))
        return tide_kernel_status(ctx);
    int64_t depth = *(const int32_t *)tide_tensor_data(tide_kernel_input(ctx, 1));
    if (depth < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "depth must be non-negative, got %lld",
                                 (long long)depth);
    if (axis < -1 || axis > in->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "axis must be -1 or in [0, %d] for indices of shape %s, got %lld", in->rank,
                                 SHAPE_STR(in, buf), (long long)axis);
    if (in->rank >= TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "indices of shape %s give a result of rank %d, more than %d",
                                 SHAPE_STR(in, buf), in->rank + 1, TIDE_MAX_RANK);
    int at = axis < 0 ? in->rank : (int)axis;
    int64_t prefix = 1, suffix = 1;
    tide_shape s = {.rank = in->rank + 1};
    for (int i = 0, k = 0; i < s.rank; i++) {
        s.dims[i] = i == at ? depth : in->dims[k++];
        if (i != at)
            *(i < at ? &prefix : &suffix) *= s.dims[i];
    }
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &s, false);
    if (!out)
        return tide_kernel_status(ctx);
    one_hot_job j = {.dst = tide_tensor_data(out), .ind = tide_tensor_data(ind), .ti = tide_tensor_dtype(ind),
                     .on = tide_tensor_data(tide_kernel_input(ctx, 2)),
                     .off = tide_tensor_data(tide_kernel_input(ctx, 3)),
                     .es = tide_dtype_size(tide_tensor_dtype(out)), .depth = depth, .suffix = suffix};
    if (tide_tensor_num_elements(out) == 0)
        return TIDE_OK;
    if (tide_tensor_dtype(out) == TIDE_STRING)
        return one_hot_strings(ctx, &j, prefix, out);
    double cost = (double)(depth * suffix) * 0.08 * (double)j.es + (double)suffix;
    tide_kernel_parallel_for(ctx, prefix, cost, one_hot_rows, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Range */

typedef struct range_job {
    void *dst;
    tide_dtype dt;
    double fs, fd;      /* start, delta of a float range */
    uint64_t is, id;    /* start, delta of an integer range, two's complement */
} range_job;

static void range_chunk(int64_t begin, int64_t end, void *arg)
{
    const range_job *j = arg;
    switch (j->dt) {
    case TIDE_FLOAT32:
        for (int64_t i = begin; i < end; i++)
            ((float *)j->dst)[i] = (float)(j->fs + (double)i * j->fd);
        break;
    case TIDE_FLOAT64:
        for (int64_t i = begin; i < end; i++)
            ((double *)j->dst)[i] = j->fs + (double)i * j->fd;
        break;
    case TIDE_INT32: /* every element lies in [start, limit): the truncation is exact */
        for (int64_t i = begin; i < end; i++)
            ((int32_t *)j->dst)[i] = (int32_t)(uint32_t)(j->is + (uint64_t)i * j->id);
        break;
    default: /* int64; modulo 2^64 arithmetic lands exactly on the in-range value */
        for (int64_t i = begin; i < end; i++)
            ((int64_t *)j->dst)[i] = (int64_t)(j->is + (uint64_t)i * j->id);
        break;
    }
}

static tide_status range_compute(tide_kernel_ctx *ctx)
{
    static const char *const names[3] = {"start", "limit", "delta"};
    const tide_tensor *v[3];
    for (int i = 0; i < 3; i++) {
        if (need_scalar(ctx, i, names[i]) != TIDE_OK)
            return tide_kernel_status(ctx);
        v[i] = tide_kernel_input(ctx, i);
    }
    int64_t n = 0;
    char msg[256];
    if (!tide_shape_ops_range_count(v, &n, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape s = tide_shape_vector(n);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &s, false);
    if (!out)
        return tide_kernel_status(ctx);
    range_job j = {.dst = tide_tensor_data(out), .dt = tide_tensor_dtype(out)};
    if (j.dt == TIDE_FLOAT32 || j.dt == TIDE_FLOAT64) {
        j.fs = tide_tensor_get_f64(v[0], 0);
        j.fd = tide_tensor_get_f64(v[2], 0);
    } else {
        j.is = (uint64_t)tide_op_int_at(v[0], 0);
        j.id = (uint64_t)tide_op_int_at(v[2], 0);
    }
    tide_kernel_parallel_for(ctx, n, 0.5, range_chunk, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- registration */

/* ---------------------------------------------------------------- Where */

/* mask[i] = input element i is not zero, by dtype: bytes for bool, values for numbers (so -0.0 is
 * zero and nan is not), the bits without the sign for the 16-bit floats, either part for complex. */
#define NONZERO_LOOP(T, TEST)                                                                      \
    do {                                                                                           \
        const T *v = x;                                                                            \
        for (int64_t i = 0; i < n; i++)                                                            \
            mask[i] = (uint8_t)(TEST);                                                             \
    } while (0)

static void nonzero_mask(tide_dtype dt, const void *x, int64_t n, uint8_t *mask)
{
    switch (dt) {
    case TIDE_BOOL: case TIDE_INT8: case TIDE_UINT8: NONZERO_LOOP(uint8_t, v[i] != 0); break;
    case TIDE_INT16: case TIDE_UINT16: NONZERO_LOOP(uint16_t, v[i] != 0); break;
    case TIDE_FLOAT16: case TIDE_BFLOAT16: NONZERO_LOOP(uint16_t, (v[i] & 0x7fffu) != 0); break;
    case TIDE_INT32: NONZERO_LOOP(int32_t, v[i] != 0); break;
    case TIDE_INT64: NONZERO_LOOP(int64_t, v[i] != 0); break;
    case TIDE_FLOAT32: NONZERO_LOOP(float, v[i] != 0); break;
    case TIDE_FLOAT64: NONZERO_LOOP(double, v[i] != 0); break;
    case TIDE_COMPLEX64: NONZERO_LOOP(float, v[2 * i] != 0 || v[2 * i + 1] != 0); break;
    case TIDE_COMPLEX128: NONZERO_LOOP(double, v[2 * i] != 0 || v[2 * i + 1] != 0); break;
    default: memset(mask, 0, (size_t)n); break; /* the op admits no other dtype */
    }
}

static tide_status where_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(x);
    int64_t n = tide_tensor_num_elements(x), count = 0;
    uint8_t *mask = malloc((size_t)n + 1);
    if (!mask)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory (%lld elements)", (long long)n);
    nonzero_mask(tide_tensor_dtype(x), tide_tensor_data(x), n, mask);
    for (int64_t i = 0; i < n; i++)
        count += mask[i];
    tide_shape out_shape = tide_shape_matrix(count, s->rank);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &out_shape, false);
    if (!out) {
        free(mask);
        return tide_kernel_status(ctx);
    }
    int64_t *rows = tide_tensor_data(out), coord[TIDE_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (mask[i]) {
            memcpy(rows, coord, (size_t)s->rank * sizeof *coord);
            rows += s->rank;
        }
        for (int d = s->rank - 1; d >= 0 && ++coord[d] == s->dims[d]; d--) /* the next coordinate */
            coord[d] = 0;
    }
    free(mask);
    return TIDE_OK;
}

static void register_shape_kernels(void)
{
    static const tide_cpu_kernel kernels[] = {
        {"Gather", gather_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"GatherV2", gather_v2_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"Fill", fill_compute, NULL, 0},
        {"ZerosLike", zeros_like_compute, NULL, 0},
        {"OnesLike", ones_like_compute, NULL, 0},
        {"Shape", shape_compute, NULL, 0},
        {"ShapeN", shape_compute, NULL, 0},
        {"DynamicStitch", dynamic_stitch_compute, NULL, 0},
        {"Rank", rank_compute, NULL, 0},
        {"BroadcastGradientArgs", broadcast_gradient_args_compute, NULL, 0},
        {"Size", size_compute, NULL, 0},
        {"Where", where_compute, NULL, 0},
        {"ExpandDims", expand_dims_compute, NULL, 0},
        {"Squeeze", squeeze_compute, squeeze_init, 0},
        {"OneHot", one_hot_compute, axis_init, TIDE_KERNEL_EXPENSIVE},
        {"Range", range_compute, NULL, 0},
    };
    tide_cpu_register_kernels(kernels, sizeof kernels / sizeof kernels[0]);
}
TIDE_REGISTER(register_shape_kernels)
