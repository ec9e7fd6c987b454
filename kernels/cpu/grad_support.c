/* grad_support.c — CPU kernels of the ops that exist for gradients (definitions in
 * engine/ops/grad_ops.c): BroadcastTo, ReducedShape, ProdGrad, UnsortedSegmentSum, StridedSliceGrad,
 * ConcatOffset and InvertPermutation.
 *
 * BroadcastTo and StridedSliceGrad move elements without looking at them, so they work by element
 * size for every numeric dtype. BroadcastTo walks the output as rows of the collapsed broadcast
 * (tide_bcast): a row is either a copy of an input row or one input element repeated.
 * StridedSliceGrad resolves its spec with the same function as StridedSlice
 * (tide_array_strided_slice), so a gradient scatters exactly where the forward slice read.
 * ProdGrad multiplies, for each element, the prefix and suffix products of its reduction group
 * (in double), which is exact with zeros in the input, unlike dividing the product by the element.
 * UnsortedSegmentSum adds slices in the order of the ids, so results never depend on threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/array_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/ops/reduce_ops.h"
#include "../../engine/tide_op.h"
#include "cpu_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(s, buf, sizeof buf)

/* ---------------------------------------------------------------- helpers */

/* Reads input i, which must be a vector of at most cap int32/int64 entries, into out. */
static tide_status index_vector(tide_kernel_ctx *ctx, int i, const char *name, int64_t *out, int cap,
                                int *n)
{
    const tide_tensor *t = tide_kernel_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(t) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a vector, got shape %s", name,
                                 SHAPE_STR(tide_tensor_shape(t), buf));
    int64_t len = tide_tensor_dim(t, 0);
    if (len > cap)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "%s has %lld entries; at most %d are supported", name, (long long)len, cap);
    tide_op_index_values(t, out, len);
    *n = (int)len;
    return TIDE_OK;
}

/* Reads the shape-vector input i (sizes >= 0, at most TIDE_MAX_RANK of them) into *s. */
static tide_status shape_input(tide_kernel_ctx *ctx, int i, const char *name, tide_shape *s)
{
    int n;
    tide_status st = index_vector(ctx, i, name, s->dims, TIDE_MAX_RANK, &n);
    if (st != TIDE_OK)
        return st;
    s->rank = n;
    for (int d = 0; d < n; d++)
        if (s->dims[d] < 0) {
            char buf[TIDE_OP_MSG_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s %s has a negative size", name,
                                     tide_op_format_values(s->dims, n, buf, sizeof buf));
        }
    return TIDE_OK;
}

/* Row-major strides in elements. */
static void contiguous_strides(const tide_shape *s, int64_t *strides)
{
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dims[i];
    }
}

/* dst[0..n) = copies of the es-byte element at src. */
static void repeat_element(char *dst, const char *src, int64_t n, size_t es)
{
    switch (es) {
    case 4: {
        uint32_t v, *d = (uint32_t *)dst;
        memcpy(&v, src, 4);
        for (int64_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    case 8: {
        uint64_t v, *d = (uint64_t *)dst;
        memcpy(&v, src, 8);
        for (int64_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)i * es, src, es);
    }
}

/* ---------------------------------------------------------------- BroadcastTo */

typedef struct broadcast_job {
    tide_bcast bc;
    const char *src;
    char *dst;
    size_t es;
} broadcast_job;

static void broadcast_rows(int64_t begin, int64_t end, void *arg)
{
    const broadcast_job *j = arg;
    size_t row_bytes = (size_t)j->bc.inner * j->es;
    for (int64_t r = begin; r < end; r++) {
        int64_t ia, ib;
        tide_bcast_row(&j->bc, r, &ia, &ib);
        char *dst = j->dst + (size_t)r * row_bytes;
        if (j->bc.a_inner)
            memcpy(dst, j->src + (size_t)ia * j->es, row_bytes);
        else
            repeat_element(dst, j->src + (size_t)ia * j->es, j->bc.inner, j->es);
    }
}

/* Does `in` broadcast to exactly `to` (dims aligned at the end, each 1 or equal)? */
static bool broadcasts_to(const tide_shape *in, const tide_shape *to)
{
    if (in->rank > to->rank)
        return false;
    for (int i = 0; i < in->rank; i++) {
        int64_t d = in->dims[i], t = to->dims[to->rank - in->rank + i];
        if (d != 1 && d != t)
            return false;
    }
    return true;
}

static tide_status broadcast_to_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *is = tide_tensor_shape(in);
    tide_shape target;
    tide_status st = shape_input(ctx, 1, "shape", &target);
    if (st != TIDE_OK)
        return st;
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (!broadcasts_to(is, &target))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot broadcast a tensor of shape %s to shape %s: each of its "
                                 "dimensions, aligned with the last ones of the target, must be 1 or "
                                 "equal to it", SHAPE_STR(is, a), SHAPE_STR(&target, b));
    int64_t n = tide_shape_num_elements(&target);
    if (n == tide_tensor_num_elements(in)) { /* only size-1 dims added: a view */
        tide_tensor *view = tide_tensor_reshape(in, &target, NULL);
        if (!view)
            return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        tide_kernel_set_output(ctx, 0, view);
        tide_tensor_release(view);
        return TIDE_OK;
    }
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &target, false);
    if (!out)
        return tide_kernel_status(ctx);
    if (n == 0)
        return TIDE_OK;
    broadcast_job j = {.src = tide_tensor_data(in), .dst = tide_tensor_data(out),
                       .es = tide_dtype_size(tide_tensor_dtype(in))};
    tide_bcast_init(&j.bc, is, &target);
    tide_kernel_parallel_for(ctx, j.bc.rows, 1.0 + 0.2 * (double)j.bc.inner, broadcast_rows, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ReducedShape */

static tide_status reduced_shape_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *shape = tide_kernel_input(ctx, 0), *axes = tide_kernel_input(ctx, 1);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(shape) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "input_shape must be a vector, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(shape), buf));
    if (tide_tensor_rank(axes) > 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "axes must be a scalar or a vector, got "
                                 "shape %s", SHAPE_STR(tide_tensor_shape(axes), buf));
    int64_t rank = tide_tensor_dim(shape, 0);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(shape), false);
    if (!out)
        return tide_kernel_status(ctx);
    memcpy(tide_tensor_data(out), tide_tensor_data(shape), tide_tensor_byte_size(shape));
    bool is64 = tide_tensor_dtype(out) == TIDE_INT64;
    for (int64_t i = 0; i < tide_tensor_num_elements(axes); i++) {
        int64_t a = tide_op_int_at(axes, i);
        if (a < -rank || a >= rank)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "axis %lld is out of range for a shape of %lld dimensions; "
                                     "expected an axis in [%lld, %lld)", (long long)a, (long long)rank,
                                     (long long)-rank, (long long)rank);
        a = a < 0 ? a + rank : a;
        if (is64)
            ((int64_t *)tide_tensor_data(out))[a] = 1;
        else
            ((int32_t *)tide_tensor_data(out))[a] = 1;
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ProdGrad */

/* Input element (group g, member r) is at koff[g] + roff[r]; grad[g] is the group's gradient. */
typedef struct prod_grad_job {
    const int64_t *koff, *roff;
    int64_t members;
    const void *x, *grad;
    void *out;
    bool f64;
} prod_grad_job;

/* Prefix products go into the output, then a backward pass multiplies in the suffix products and
 * the group's gradient; both products run in double (one rounding per pass for float32). */
#define PROD_GRAD_GROUP(TYPE)                                                               \
    do {                                                                                    \
        const TYPE *x = j->x;                                                               \
        TYPE *out = j->out;                                                                 \
        double prefix = 1, suffix = (double)((const TYPE *)j->grad)[g];                     \
        for (int64_t r = 0; r < j->members; r++) {                                          \
            out[base + j->roff[r]] = (TYPE)prefix;                                          \
            prefix *= (double)x[base + j->roff[r]];                                         \
        }                                                                                   \
        for (int64_t r = j->members - 1; r >= 0; r--) {                                     \
            out[base + j->roff[r]] = (TYPE)((double)out[base + j->roff[r]] * suffix);       \
            suffix *= (double)x[base + j->roff[r]];                                         \
        }                                                                                   \
    } while (0)

static void prod_grad_groups(int64_t begin, int64_t end, void *arg)
{
    const prod_grad_job *j = arg;
    for (int64_t g = begin; g < end; g++) {
        const int64_t base = j->koff[g];
        if (j->f64)
            PROD_GRAD_GROUP(double);
        else
            PROD_GRAD_GROUP(float);
    }
}

/* Offsets of every combination of the dims of s selected (or not, by `want`) by mask, in row-major
 * order of those dims: count entries written to off (malloc'd). */
static int64_t *combination_offsets(const tide_shape *s, unsigned mask, bool want, int64_t *count)
{
    int64_t strides[TIDE_MAX_RANK], dims[TIDE_MAX_RANK], steps[TIDE_MAX_RANK], n = 1;
    int k = 0;
    contiguous_strides(s, strides);
    for (int d = 0; d < s->rank; d++)
        if (((mask >> d) & 1) == want) {
            dims[k] = s->dims[d];
            steps[k++] = strides[d];
            n *= s->dims[d];
        }
    int64_t *off = malloc((size_t)(n ? n : 1) * sizeof *off);
    if (!off)
        return NULL;
    int64_t idx[TIDE_MAX_RANK] = {0}, at = 0;
    for (int64_t i = 0; i < n; i++) {
        off[i] = at;
        for (int d = k - 1; d >= 0; d--) { /* odometer */
            at += steps[d];
            if (++idx[d] < dims[d])
                break;
            at -= steps[d] * dims[d];
            idx[d] = 0;
        }
    }
    *count = n;
    return off;
}

static tide_status prod_grad_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0), *axes = tide_kernel_input(ctx, 1);
    const tide_tensor *grad = tide_kernel_input(ctx, 2);
    const tide_shape *xs = tide_tensor_shape(x);
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    unsigned mask;
    if (tide_tensor_rank(axes) > 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "reduction_indices must be a scalar or "
                                 "a vector, got shape %s", SHAPE_STR(tide_tensor_shape(axes), a));
    if (!tide_reduce_axes_mask(xs, axes, &mask, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    prod_grad_job j = {.x = tide_tensor_data(x), .grad = tide_tensor_data(grad),
                       .f64 = tide_tensor_dtype(x) == TIDE_FLOAT64};
    int64_t groups;
    int64_t *koff = combination_offsets(xs, mask, false, &groups);
    int64_t *roff = combination_offsets(xs, mask, true, &j.members);
    tide_tensor *out = koff && roff ? tide_kernel_alloc_output(ctx, 0, xs, false) : NULL;
    tide_status st = TIDE_OK;
    if (!koff || !roff)
        st = tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    else if (!out)
        st = tide_kernel_status(ctx);
    else if (tide_tensor_num_elements(grad) != groups)
        st = tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                               "grad has shape %s (%lld elements) but reducing input %s gives %lld "
                               "values", SHAPE_STR(tide_tensor_shape(grad), a),
                               (long long)tide_tensor_num_elements(grad), SHAPE_STR(xs, b),
                               (long long)groups);
    if (st == TIDE_OK && tide_tensor_num_elements(x) > 0) {
        j.koff = koff;
        j.roff = roff;
        j.out = tide_tensor_data(out);
        tide_kernel_parallel_for(ctx, groups, 2.0 + 3.0 * (double)j.members, prod_grad_groups, &j);
    }
    free(koff);
    free(roff);
    return st;
}

/* ---------------------------------------------------------------- UnsortedSegmentSum */

#define SEGMENT_ADD(TYPE, UTYPE)                                                            \
    do {                                                                                    \
        const TYPE *src = tide_tensor_data(data);                                           \
        TYPE *dst = tide_tensor_data(out);                                                  \
        for (int64_t i = 0; i < m; i++) {                                                   \
            int64_t id = tide_op_int_at(ids, i);                                            \
            if (id < 0)                                                                     \
                continue;                                                                   \
            TYPE *row = dst + id * inner;                                                   \
            const TYPE *from = src + i * inner;                                             \
            for (int64_t e = 0; e < inner; e++)                                             \
                row[e] = (TYPE)((UTYPE)row[e] + (UTYPE)from[e]);                            \
        }                                                                                   \
    } while (0)

/* Every id below num? The first bad one's position is reported. */
static tide_status segment_check(tide_kernel_ctx *ctx, const tide_tensor *ids, int64_t num)
{
    for (int64_t i = 0; i < tide_tensor_num_elements(ids); i++) {
        int64_t id = tide_op_int_at(ids, i);
        if (id >= num)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "segment_ids[%lld] (flat) = %lld is out of range: num_segments "
                                     "is %lld, so an id must be < %lld (negative ids are dropped)",
                                     (long long)i, (long long)id, (long long)num, (long long)num);
    }
    return TIDE_OK;
}

/* Checks the shapes; fills the output's shape and the slice size. */
static tide_status segment_shapes(tide_kernel_ctx *ctx, const tide_tensor *data, const tide_tensor *ids,
                                  int64_t num, tide_shape *os, int64_t *inner)
{
    const tide_shape *ds = tide_tensor_shape(data), *is = tide_tensor_shape(ids);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    bool prefix = is->rank <= ds->rank;
    for (int i = 0; i < is->rank && prefix; i++)
        prefix = is->dims[i] == ds->dims[i];
    if (!prefix)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "segment_ids of shape %s must have a shape that begins data's shape %s",
                                 SHAPE_STR(is, a), SHAPE_STR(ds, b));
    if (num < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "num_segments must be >= 0, got %lld",
                                 (long long)num);
    os->rank = 1 + ds->rank - is->rank;
    os->dims[0] = num;
    *inner = 1;
    for (int i = is->rank; i < ds->rank; i++)
        *inner *= os->dims[1 + i - is->rank] = ds->dims[i];
    return TIDE_OK;
}

static tide_status segment_sum_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *data = tide_kernel_input(ctx, 0), *ids = tide_kernel_input(ctx, 1);
    const tide_tensor *nt = tide_kernel_input(ctx, 2);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(nt) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "num_segments must be a scalar, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(nt), buf));
    int64_t num = tide_op_int_at(nt, 0), inner = 1, m = tide_tensor_num_elements(ids);
    tide_shape os;
    tide_status st = segment_shapes(ctx, data, ids, num, &os, &inner);
    if (st == TIDE_OK)
        st = segment_check(ctx, ids, num);
    if (st != TIDE_OK)
        return st;
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, true);
    if (!out)
        return tide_kernel_status(ctx);
    switch (tide_tensor_dtype(data)) {
    case TIDE_FLOAT32: SEGMENT_ADD(float, float); break;
    case TIDE_FLOAT64: SEGMENT_ADD(double, double); break;
    case TIDE_INT32: SEGMENT_ADD(int32_t, uint32_t); break;
    case TIDE_INT64: SEGMENT_ADD(int64_t, uint64_t); break;
    default:
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "dtype %s is not supported",
                                 tide_dtype_name(tide_tensor_dtype(data)));
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- StridedSliceGrad */

static tide_status masks_init(tide_kernel_ctx *ctx, void **state)
{
    int64_t *masks = calloc(TIDE_SS_NUM_MASKS, sizeof *masks);
    if (!masks)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_array_ss_masks(tide_kernel_attrs(ctx), masks);
    *state = masks;
    return TIDE_OK;
}

/* Copies the dense slice `from` (row-major over the processing shape) into `to` (shape `whole`) at
 * index begin[d] + i * stride[d] along each dimension d. */
static void scatter_slice(char *to, const tide_shape *whole, const char *from, const tide_shape *proc,
                          const int64_t *begin, const int64_t *stride, size_t es)
{
    int64_t strides[TIDE_MAX_RANK], idx[TIDE_MAX_RANK] = {0}, at = 0;
    int r = proc->rank;
    contiguous_strides(whole, strides);
    for (int d = 0; d < r; d++)
        at += begin[d] * strides[d];
    int64_t n = tide_shape_num_elements(proc), inner = r ? proc->dims[r - 1] : 1;
    int64_t step = r ? stride[r - 1] * strides[r - 1] : 0;
    for (int64_t i = 0; i < n; i += inner) {
        for (int64_t e = 0; e < inner; e++)
            memcpy(to + (size_t)(at + e * step) * es, from + (size_t)(i + e) * es, es);
        for (int d = r - 2; d >= 0; d--) { /* odometer over the outer dims */
            at += stride[d] * strides[d];
            if (++idx[d] < proc->dims[d])
                break;
            at -= stride[d] * strides[d] * proc->dims[d];
            idx[d] = 0;
        }
    }
}

static tide_status strided_slice_grad_compute(tide_kernel_ctx *ctx)
{
    static const char *const names[3] = {"begin", "end", "strides"};
    const tide_tensor *dy = tide_kernel_input(ctx, 4);
    tide_shape whole, proc, final;
    int64_t spec[3][TIDE_SS_MAX_SPEC], dense_begin[TIDE_MAX_RANK], dense_stride[TIDE_MAX_RANK];
    int n[3];
    tide_status st = shape_input(ctx, 0, "shape", &whole);
    for (int i = 0; i < 3 && st == TIDE_OK; i++)
        st = index_vector(ctx, i + 1, names[i], spec[i], TIDE_SS_MAX_SPEC, &n[i]);
    if (st != TIDE_OK)
        return st;
    if (n[1] != n[0] || n[2] != n[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "begin, end and strides must have the same length, got %d, %d and %d",
                                 n[0], n[1], n[2]);
    char msg[256], a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    st = tide_array_strided_slice(&whole, n[0], spec[0], spec[1], spec[2], tide_kernel_state(ctx),
                                  dense_begin, dense_stride, &proc, &final, msg, sizeof msg);
    if (st != TIDE_OK)
        return tide_kernel_error(ctx, st, "%s (input shape %s)", msg, SHAPE_STR(&whole, a));
    if (!tide_shape_equal(tide_tensor_shape(dy), &final))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "dy has shape %s but the slice of an input of shape %s has shape %s",
                                 SHAPE_STR(tide_tensor_shape(dy), a), SHAPE_STR(&whole, b),
                                 SHAPE_STR(&final, msg));
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &whole, true);
    if (!out)
        return tide_kernel_status(ctx);
    if (tide_shape_num_elements(&proc) > 0)
        scatter_slice(tide_tensor_data(out), &whole, tide_tensor_data(dy), &proc, dense_begin,
                      dense_stride, tide_dtype_size(tide_tensor_dtype(dy)));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ConcatOffset */

/* Checks shape i against shape 0 (same length, same sizes outside axis). */
static tide_status offset_check(tide_kernel_ctx *ctx, int i, const int64_t *s0, int n0, const int64_t *s,
                                int n, int64_t axis)
{
    char a[TIDE_OP_MSG_MAX], b[TIDE_OP_MSG_MAX];
    bool ok = n == n0;
    for (int d = 0; d < n && ok; d++)
        ok = d == axis || s[d] == s0[d];
    if (ok)
        return TIDE_OK;
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                             "shape %d %s does not match shape 0 %s outside the concatenation "
                             "dimension %lld", i, tide_op_format_values(s, n, a, sizeof a),
                             tide_op_format_values(s0, n0, b, sizeof b), (long long)axis);
}

static tide_status concat_offset_compute(tide_kernel_ctx *ctx)
{
    int num = tide_kernel_num_inputs(ctx) - 1, n0, n;
    const tide_tensor *dim = tide_kernel_input(ctx, 0);
    int64_t s0[TIDE_MAX_RANK], s[TIDE_MAX_RANK], axis, at = 0;
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(dim) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "concat_dim must be a scalar, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(dim), buf));
    tide_status st = index_vector(ctx, 1, "shape 0", s0, TIDE_MAX_RANK, &n0);
    if (st != TIDE_OK)
        return st;
    if (!tide_array_normalize_axis(tide_op_int_at(dim, 0), n0, &axis))
        return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE,
                                 "concat_dim %lld is out of range [%d, %d) for shapes of %d dimensions",
                                 (long long)tide_op_int_at(dim, 0), -n0, n0, n0);
    for (int i = 0; i < num; i++) {
        st = index_vector(ctx, i + 1, "every shape", s, TIDE_MAX_RANK, &n);
        if (st == TIDE_OK)
            st = offset_check(ctx, i, s0, n0, s, n, axis);
        tide_shape os = tide_shape_vector(n);
        tide_tensor *out = st == TIDE_OK ? tide_kernel_alloc_output(ctx, i, &os, true) : NULL;
        if (!out)
            return st != TIDE_OK ? st : tide_kernel_status(ctx);
        ((int32_t *)tide_tensor_data(out))[axis] = (int32_t)at;
        at += s[axis];
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- InvertPermutation */

static tide_status invert_permutation_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(x) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "x must be a vector, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(x), buf));
    int64_t n = tide_tensor_dim(x, 0);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
    bool *seen = calloc((size_t)(n ? n : 1), 1);
    tide_status st = out ? TIDE_OK : tide_kernel_status(ctx);
    if (st == TIDE_OK && !seen)
        st = tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    bool is64 = tide_tensor_dtype(x) == TIDE_INT64;
    for (int64_t i = 0; i < n && st == TIDE_OK; i++) {
        int64_t v = tide_op_int_at(x, i);
        if (v < 0 || v >= n || seen[v]) {
            st = tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                   "x[%lld] = %lld: x is not a permutation of 0..%lld (%s)", (long long)i,
                                   (long long)v, (long long)n - 1,
                                   v < 0 || v >= n ? "out of range" : "repeated");
            break;
        }
        seen[v] = true;
        if (is64)
            ((int64_t *)tide_tensor_data(out))[v] = i;
        else
            ((int32_t *)tide_tensor_data(out))[v] = (int32_t)i;
    }
    free(seen);
    return st;
}

/* ---------------------------------------------------------------- registration */

static void register_grad_support_kernels(void)
{
    static const tide_cpu_kernel kernels[] = {
        {"BroadcastTo", broadcast_to_compute, NULL, 0},
        {"ReducedShape", reduced_shape_compute, NULL, 0},
        {"ProdGrad", prod_grad_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"UnsortedSegmentSum", segment_sum_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"StridedSliceGrad", strided_slice_grad_compute, masks_init, 0},
        {"ConcatOffset", concat_offset_compute, NULL, 0},
        {"InvertPermutation", invert_permutation_compute, NULL, 0},
    };
    tide_cpu_register_kernels(kernels, sizeof kernels / sizeof kernels[0]);
}
TIDE_REGISTER(register_grad_support_kernels)
