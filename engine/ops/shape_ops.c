/* shape_ops.c — definitions of the array ops about shapes, indices and fills: Gather, GatherV2,
 * DynamicStitch, Fill, ZerosLike, OnesLike, Shape, ShapeN, Rank, Size, Where, ExpandDims, Squeeze,
 * OneHot and Range (TensorFlow 1.x semantics; the CPU kernels are in kernels/cpu/shape.c).
 *
 * The shape functions give exact output shapes when the inputs that decide them are graph-time
 * constants (Fill's dims, ExpandDims' dim, OneHot's depth, Range's bounds), partial shapes otherwise,
 * and reject what is already known to be wrong with the same messages the kernels use. Index VALUES
 * (Gather's indices) are only checked by the kernels, as in TensorFlow. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "../tide_op.h"
#include "op_util.h"
#include "shape_ops.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

/* Fails unless input i is a scalar (or of unknown rank). */
static tide_status need_scalar(tide_shape_ctx *ctx, int i, const char *what)
{
    tide_shape s = tide_shape_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (s.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s", what,
                                SHAPE_STR(s, buf));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Gather */

bool tide_shape_ops_gather_axes(int p_rank, int i_rank, int64_t axis, int64_t batch_dims, int *ax,
                                int *bd, char *msg, size_t size)
{
    if (p_rank == 0)
        return snprintf(msg, size, "params must be at least 1-dimensional, got a scalar"), false;
    if (axis < -p_rank || axis >= p_rank)
        return snprintf(msg, size, "axis %lld is out of range for params of rank %d: expected one in "
                        "[%d, %d)", (long long)axis, p_rank, -p_rank, p_rank), false;
    *ax = (int)(axis < 0 ? axis + p_rank : axis);
    if (batch_dims != 0 && (batch_dims < -i_rank || batch_dims >= i_rank))
        return snprintf(msg, size, "batch_dims %lld is out of range for indices of rank %d: expected "
                        "one in [%d, %d)", (long long)batch_dims, i_rank, -i_rank, i_rank), false;
    *bd = (int)(batch_dims < 0 ? batch_dims + i_rank : batch_dims);
    if (*bd > *ax)
        return snprintf(msg, size, "batch_dims %d must not be greater than axis %d", *bd, *ax), false;
    if (p_rank - 1 + i_rank - *bd > TIDE_MAX_RANK)
        return snprintf(msg, size, "params of rank %d and indices of rank %d give a result of rank "
                        "%d, more than %d", p_rank, i_rank, p_rank - 1 + i_rank - *bd,
                        TIDE_MAX_RANK), false;
    return true;
}

/* Gather (axis 0, no batch dims) and GatherV2 (axis the scalar input 2, batch_dims an attr):
 * params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]. */
static tide_status gather_shape(tide_shape_ctx *ctx)
{
    tide_shape p = tide_shape_input(ctx, 0), ind = tide_shape_input(ctx, 1), out = tide_shape_unknown();
    int64_t axis = 0, batch_dims = 0;
    bool axis_known = true;
    tide_attrs_get_int(tide_shape_attrs(ctx), "batch_dims", &batch_dims);
    if (tide_shape_num_inputs(ctx) > 2) {
        tide_status st = need_scalar(ctx, 2, "axis");
        if (st != TIDE_OK)
            return st;
        const tide_tensor *v = tide_shape_input_value(ctx, 2);
        axis_known = v && tide_tensor_num_elements(v) == 1;
        if (axis_known)
            axis = tide_op_int_at(v, 0);
    }
    if (p.rank == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "params must be at least 1-dimensional, got a scalar");
    if (p.rank < 0 || ind.rank < 0) {
        tide_shape_set_output(ctx, 0, &out);
        return TIDE_OK;
    }
    char msg[256], a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    int ax, bd;
    if (!axis_known) { /* the rank is all that is known */
        if (!tide_shape_ops_gather_axes(p.rank, ind.rank, -1, batch_dims, &ax, &bd, msg, sizeof msg))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s (params %s, indices %s)", msg,
                                    SHAPE_STR(p, a), SHAPE_STR(ind, b));
        out = tide_shape_unknown();
        out.rank = p.rank - 1 + ind.rank - bd;
        for (int i = 0; i < out.rank; i++)
            out.dims[i] = -1;
        tide_shape_set_output(ctx, 0, &out);
        return TIDE_OK;
    }
    if (!tide_shape_ops_gather_axes(p.rank, ind.rank, axis, batch_dims, &ax, &bd, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s (params %s, indices %s)", msg,
                                SHAPE_STR(p, a), SHAPE_STR(ind, b));
    for (int i = 0; i < bd; i++)
        if (p.dims[i] >= 0 && ind.dims[i] >= 0 && p.dims[i] != ind.dims[i])
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "params %s and indices %s differ in batch dimension %d",
                                    SHAPE_STR(p, a), SHAPE_STR(ind, b), i);
    out.rank = 0;
    for (int i = 0; i < ax; i++)
        out.dims[out.rank++] = p.dims[i] >= 0 || i >= bd ? p.dims[i] : ind.dims[i];
    for (int i = bd; i < ind.rank; i++)
        out.dims[out.rank++] = ind.dims[i];
    for (int i = ax + 1; i < p.rank; i++)
        out.dims[out.rank++] = p.dims[i];
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Fill */

static tide_status fill_shape(tide_shape_ctx *ctx)
{
    tide_shape d = tide_shape_input(ctx, 0), out = tide_shape_unknown();
    char buf[TIDE_SHAPE_STR_MAX];
    if (d.rank >= 0 && d.rank != 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "dims must be a vector, got shape %s",
                                SHAPE_STR(d, buf));
    tide_status st = need_scalar(ctx, 1, "value");
    if (st != TIDE_OK)
        return st;
    const tide_tensor *dims = tide_shape_input_value(ctx, 0);
    int64_t rank = dims ? tide_tensor_num_elements(dims) : d.rank == 1 ? d.dims[0] : -1;
    if (rank > TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "dims has %lld elements, more than the maximum rank %d", (long long)rank,
                                TIDE_MAX_RANK);
    if (rank >= 0) {
        out.rank = (int)rank;
        bool empty = false, overflow = false;
        int64_t total = 1;
        for (int i = 0; i < out.rank; i++) {
            out.dims[i] = dims ? tide_op_int_at(dims, i) : -1;
            if (dims && out.dims[i] < 0)
                return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "dims[%d] = %lld must be non-negative",
                                        i, (long long)out.dims[i]);
            empty = empty || out.dims[i] == 0;
            overflow = overflow || (out.dims[i] > 0 && total > INT64_MAX / out.dims[i]);
            if (!overflow && out.dims[i] > 0)
                total *= out.dims[i];
        }
        if (overflow && !empty) /* a zero anywhere makes the product 0 */
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "dims %s have too many elements",
                                    SHAPE_STR(out, buf));
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Shape, Rank, Size */

/* Shape and ShapeN: output i is the vector of input i's rank. */
static tide_status shape_shape(tide_shape_ctx *ctx)
{
    for (int i = 0; i < tide_shape_num_inputs(ctx); i++) {
        tide_shape in = tide_shape_input(ctx, i);
        tide_shape out = tide_shape_vector(in.rank >= 0 ? in.rank : -1);
        tide_shape_set_output(ctx, i, &out);
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- DynamicStitch */

bool tide_shape_ops_stitch_inner(const tide_shape *indices, const tide_shape *data, const tide_shape *first_inner,
                                 int m, tide_shape *inner, char *msg, size_t size)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX], c[TIDE_SHAPE_STR_MAX];
    *inner = tide_shape_unknown();
    if (indices->rank < 0 || data->rank < 0)
        return true;
    bool prefix = data->rank >= indices->rank;
    for (int d = 0; prefix && d < indices->rank; d++)
        prefix = indices->dims[d] < 0 || data->dims[d] < 0 || indices->dims[d] == data->dims[d];
    if (!prefix)
        return snprintf(msg, size, "data[%d] of shape %s must start with the shape of indices[%d], %s", m,
                        tide_shape_format(data, a, sizeof a), m, tide_shape_format(indices, b, sizeof b)), false;
    inner->rank = data->rank - indices->rank;
    for (int d = 0; d < inner->rank; d++)
        inner->dims[d] = data->dims[indices->rank + d];
    if (first_inner && first_inner->rank >= 0 && !tide_shape_compatible(first_inner, inner))
        return snprintf(msg, size, "data[%d] of shape %s holds slices of shape %s, but data[0]'s are %s", m,
                        tide_shape_format(data, a, sizeof a), tide_shape_format(inner, b, sizeof b),
                        tide_shape_format(first_inner, c, sizeof c)), false;
    return true;
}

/* [max index + 1] + the slices' shape: the first dim is known when every indices input is a Const. */
static tide_status dynamic_stitch_shape(tide_shape_ctx *ctx)
{
    int n = tide_shape_num_inputs(ctx) / 2;
    tide_shape inner = tide_shape_unknown(), s;
    int64_t rows = 0;
    char msg[TIDE_OP_MSG_MAX];
    for (int m = 0; m < n; m++) {
        tide_shape ind = tide_shape_input(ctx, m), data = tide_shape_input(ctx, n + m);
        if (!tide_shape_ops_stitch_inner(&ind, &data, &inner, m, &s, msg, sizeof msg))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
        if (inner.rank < 0)
            inner = s;
        for (int d = 0; d < inner.rank && s.rank == inner.rank; d++)
            if (inner.dims[d] < 0)
                inner.dims[d] = s.dims[d];
        const tide_tensor *v = tide_shape_input_value(ctx, m);
        for (int64_t i = 0; v && rows >= 0 && i < tide_tensor_num_elements(v); i++)
            if (tide_op_int_at(v, i) >= rows)
                rows = tide_op_int_at(v, i) + 1;
        if (!v)
            rows = -1;
    }
    tide_shape out = tide_shape_unknown();
    if (inner.rank >= 0 && inner.rank < TIDE_MAX_RANK) {
        out.rank = inner.rank + 1;
        out.dims[0] = rows;
        for (int d = 0; d < inner.rank; d++)
            out.dims[d + 1] = inner.dims[d];
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ExpandDims, Squeeze */

static tide_status expand_dims_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), d = tide_shape_input(ctx, 1), out = tide_shape_unknown();
    char a[TIDE_SHAPE_STR_MAX];
    if (tide_shape_num_elements(&d) >= 0 && tide_shape_num_elements(&d) != 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "dim must hold exactly one value, got shape %s",
                                SHAPE_STR(d, a));
    if (in.rank >= TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot expand input of shape %s: the result would have rank %d, "
                                "more than %d",
                                SHAPE_STR(in, a), in.rank + 1, TIDE_MAX_RANK);
    const tide_tensor *dv = tide_shape_input_value(ctx, 1);
    int64_t dim = 0;
    if (in.rank >= 0 && dv && tide_tensor_num_elements(dv) == 1) {
        dim = tide_op_int_at(dv, 0);
        if (dim < -in.rank - 1 || dim > in.rank)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "dim %lld is out of range for input of shape %s: "
                                    "expected one in [%d, %d]",
                                    (long long)dim, SHAPE_STR(in, a), -in.rank - 1, in.rank);
        int at = (int)(dim < 0 ? dim + in.rank + 1 : dim);
        out.rank = in.rank + 1;
        for (int i = 0, k = 0; i < out.rank; i++)
            out.dims[i] = i == at ? 1 : in.dims[k++];
    } else if (in.rank >= 0) { /* the rank is known, not where the new dim goes */
        out.rank = in.rank + 1;
        for (int i = 0; i < out.rank; i++)
            out.dims[i] = -1;
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

static tide_status squeeze_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), out = tide_shape_unknown();
    const int64_t *sq = NULL;
    int n = 0;
    tide_attrs_get_int_list(tide_shape_attrs(ctx), "squeeze_dims", &sq, &n);
    char a[TIDE_SHAPE_STR_MAX];
    bool drop[TIDE_MAX_RANK] = {false};
    if (in.rank < 0)
        goto done;
    for (int i = 0; i < n; i++) {
        if (sq[i] < -in.rank || sq[i] >= in.rank)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "squeeze_dims[%d] = %lld is out of range for input of shape %s: "
                                    "expected one in [%d, %d)",
                                    i, (long long)sq[i], SHAPE_STR(in, a), -in.rank, in.rank);
        int ax = (int)(sq[i] < 0 ? sq[i] + in.rank : sq[i]);
        if (in.dims[ax] >= 0 && in.dims[ax] != 1)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "cannot squeeze dim %d of input of shape %s: its size is %lld, not 1",
                                    ax, SHAPE_STR(in, a), (long long)in.dims[ax]);
        drop[ax] = true;
    }
    for (int i = 0; i < in.rank && n == 0; i++) {
        if (in.dims[i] < 0)
            goto done; /* an unknown dim may or may not be 1: the rank is unknown */
        drop[i] = in.dims[i] == 1;
    }
    out.rank = 0;
    for (int i = 0; i < in.rank; i++)
        if (!drop[i])
            out.dims[out.rank++] = in.dims[i];
done:
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- OneHot */

static tide_status one_hot_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), out = tide_shape_unknown();
    int64_t axis = -1, depth = -1;
    tide_attrs_get_int(tide_shape_attrs(ctx), "axis", &axis);
    char a[TIDE_SHAPE_STR_MAX];
    tide_status st = need_scalar(ctx, 1, "depth");
    if (st == TIDE_OK)
        st = need_scalar(ctx, 2, "on_value");
    if (st == TIDE_OK)
        st = need_scalar(ctx, 3, "off_value");
    if (st != TIDE_OK)
        return st;
    const tide_tensor *dv = tide_shape_input_value(ctx, 1);
    if (dv && tide_tensor_num_elements(dv) == 1) {
        depth = tide_op_int_at(dv, 0);
        if (depth < 0)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "depth must be non-negative, got %lld",
                                    (long long)depth);
    }
    if (axis < -1 && in.rank < 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be -1 or non-negative, got %lld",
                                (long long)axis);
    if (axis < -1 || (in.rank >= 0 && axis > in.rank))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "axis must be -1 or in [0, %d] for indices of shape %s, got %lld",
                                in.rank, SHAPE_STR(in, a), (long long)axis);
    if (in.rank >= TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "indices of shape %s give a result of rank %d, more than %d",
                                SHAPE_STR(in, a), in.rank + 1, TIDE_MAX_RANK);
    if (in.rank >= 0) {
        int at = axis < 0 ? in.rank : (int)axis;
        out.rank = in.rank + 1;
        for (int i = 0, k = 0; i < out.rank; i++)
            out.dims[i] = i == at ? depth : in.dims[k++];
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- Range */

/* The element count of Range: ceil((limit - start) / delta), TensorFlow's rules (start must not be
 * past limit in delta's direction). Integers count exactly in 64 bits without overflow; float32
 * divides in float and float64 in double, as TensorFlow does. Shared with the kernel
 * (kernels/cpu/shape.c) through shape_ops.h. False with msg written on error. */
bool tide_shape_ops_range_count(const tide_tensor *const v[3], int64_t *n, char *msg, size_t size)
{
    tide_dtype dt = tide_tensor_dtype(v[0]);
    const void *p0 = tide_tensor_data(v[0]), *p1 = tide_tensor_data(v[1]), *p2 = tide_tensor_data(v[2]);
    if (dt == TIDE_FLOAT32 || dt == TIDE_FLOAT64) {
        double s = dt == TIDE_FLOAT32 ? *(const float *)p0 : *(const double *)p0;
        double l = dt == TIDE_FLOAT32 ? *(const float *)p1 : *(const double *)p1;
        double d = dt == TIDE_FLOAT32 ? *(const float *)p2 : *(const double *)p2;
        if (!isfinite(s) || !isfinite(l) || !isfinite(d))
            return snprintf(msg, size, "start %g, limit %g and delta %g must be finite", s, l, d), false;
        if (d == 0)
            return snprintf(msg, size, "delta must not be 0 (start %g, limit %g)", s, l), false;
        if (d > 0 ? s > l : s < l)
            return snprintf(msg, size, "start %g must be %s limit %g when delta is %g", s,
                            d > 0 ? "<=" : ">=", l, d), false;
        double q = dt == TIDE_FLOAT32 ? ceilf(fabsf(((float)l - (float)s) / (float)d))
                                      : ceil(fabs((l - s) / d));
        if (!(q <= 0x1p62))
            return snprintf(msg, size, "range from %g to %g by %g has too many elements", s, l, d), false;
        *n = (int64_t)q;
        return true;
    }
    int64_t s = tide_op_int_at(v[0], 0), l = tide_op_int_at(v[1], 0), d = tide_op_int_at(v[2], 0);
    if (d == 0)
        return snprintf(msg, size, "delta must not be 0 (start %lld, limit %lld)", (long long)s,
                        (long long)l), false;
    if (d > 0 ? s > l : s < l)
        return snprintf(msg, size, "start %lld must be %s limit %lld when delta is %lld", (long long)s,
                        d > 0 ? "<=" : ">=", (long long)l, (long long)d), false;
    uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
    uint64_t step = d > 0 ? (uint64_t)d : 0 - (uint64_t)d;
    uint64_t count = span / step + (span % step != 0);
    if (count > (uint64_t)INT64_MAX)
        return snprintf(msg, size, "range from %lld to %lld by %lld has too many elements", (long long)s,
                        (long long)l, (long long)d), false;
    *n = (int64_t)count;
    return true;
}

static tide_status range_shape(tide_shape_ctx *ctx)
{
    static const char *const names[3] = {"start", "limit", "delta"};
    const tide_tensor *v[3];
    bool known = true;
    for (int i = 0; i < 3; i++) {
        tide_status st = need_scalar(ctx, i, names[i]);
        if (st != TIDE_OK)
            return st;
        v[i] = tide_shape_input_value(ctx, i);
        known = known && v[i] && tide_tensor_num_elements(v[i]) == 1;
    }
    tide_shape out = tide_shape_vector(-1);
    char msg[256];
    if (known && !tide_shape_ops_range_count(v, &out.dims[0], msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- registration */

static void register_gather_fill_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Gather",
        .inputs = {"params: Tparams", "indices: Tindices"},
        .outputs = {"output: Tparams"},
        .attrs = {"validate_indices: bool = true", "Tparams: alltypes", "Tindices: {int32, int64}"},
        .shape_fn = gather_shape,
        .doc = "Gathers slices of params along its first dimension at the given indices: output "
               "shape = indices.shape + params.shape[1:]. params must not be a scalar. Every index "
               "must be in [0, params.shape[0]): a negative or too large one is INVALID_ARGUMENT "
               "naming its value, its position in indices and the valid range (validate_indices is "
               "accepted; indices are always checked, as TensorFlow's CPU kernel does). All dtypes, "
               "strings included. Along another axis: GatherV2.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "GatherV2",
        .inputs = {"params: Tparams", "indices: Tindices", "axis: Taxis"},
        .outputs = {"output: Tparams"},
        .attrs = {"batch_dims: int = 0", "Tparams: alltypes", "Tindices: {int32, int64}",
                  "Taxis: {int32, int64}"},
        .shape_fn = gather_shape,
        .doc = "Gathers slices of params along dimension axis (a scalar input) at the given indices "
               "(what tf.gather emits): output shape = params.shape[:axis] + "
               "indices.shape[batch_dims:] + params.shape[axis+1:]. axis may be negative (counted from "
               "the end) and must be in [-rank, rank) of params, which must not be a scalar. With "
               "batch_dims = b > 0 (negative counts from indices' rank) the first b dimensions of "
               "params and indices are batch dimensions of equal sizes and each batch gathers from "
               "its own slice of params; b must be below indices' rank and not above axis. Every "
               "index must be in [0, params.shape[axis]): a negative or too large one is "
               "INVALID_ARGUMENT naming its value, its position in indices and the valid range. All "
               "dtypes, strings included.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Fill",
        .inputs = {"dims: index_type", "value: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "index_type: {int32, int64} = int32"},
        .shape_fn = fill_shape,
        .doc = "A tensor of shape dims with every element equal to value. dims is a vector of at most "
               "8 non-negative sizes (a negative size, or sizes whose product overflows int64, is "
               "INVALID_ARGUMENT); value must be a scalar. All dtypes, strings included.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "ZerosLike",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "A tensor of zeros with the shape and dtype of x (false for bool, empty strings for "
               "string). Writes in place over x when nothing else uses it.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "OnesLike",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: {bool, int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, "
                  "float64, complex64, complex128}"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "A tensor of ones with the shape and dtype of x (true for bool, 1+0i for complex); "
               "numbers and bool only, a string x is INVALID_ARGUMENT. Writes in place over x when "
               "nothing else uses it.",
    });
}
TIDE_REGISTER(register_gather_fill_ops)

static tide_status broadcast_gradient_args_shape(tide_shape_ctx *ctx)
{
    for (int i = 0; i < 2; i++) {
        tide_shape in = tide_shape_input(ctx, i);
        if (in.rank >= 0 && in.rank != 1) {
            char buf[TIDE_SHAPE_STR_MAX];
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "s%d must be a shape vector, got shape %s",
                                    i, tide_shape_format(&in, buf, sizeof buf));
        }
    }
    tide_shape out = tide_shape_vector(-1);
    tide_shape_set_output(ctx, 0, &out);
    tide_shape_set_output(ctx, 1, &out);
    return TIDE_OK;
}

/* Where: [?, rank of input] (how many elements are true is known only at run time). */
static tide_status where_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0);
    tide_shape out = tide_shape_matrix(-1, in.rank >= 0 ? in.rank : -1);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

static void register_shape_query_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "BroadcastGradientArgs",
        .inputs = {"s0: T", "s1: T"},
        .outputs = {"r0: T", "r1: T"},
        .attrs = {"T: {int32, int64} = int32"},
        .shape_fn = broadcast_gradient_args_shape,
        .doc = "For gradients of broadcasting ops: given the shapes s0 and s1 of two operands, r0 and "
               "r1 are the axes of the broadcast result over which each operand's gradient must be "
               "summed (an axis where the operand is absent or has size 1 while the result does not). "
               "Shapes that cannot broadcast are INVALID_ARGUMENT.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Shape",
        .inputs = {"input: T"},
        .outputs = {"output: out_type"},
        .attrs = {"T: alltypes", "out_type: {int32, int64} = int32"},
        .shape_fn = shape_shape,
        .doc = "The shape of input as a vector of rank(input) sizes. With out_type int32 a dimension "
               "larger than 2^31-1 is INVALID_ARGUMENT (use out_type=int64).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "ShapeN",
        .inputs = {"input: N * T"},
        .outputs = {"output: N * out_type"},
        .attrs = {"N: int >= 1", "T: alltypes", "out_type: {int32, int64} = int32"},
        .shape_fn = shape_shape,
        .doc = "The shapes of N tensors of one dtype, as Shape gives each (what TensorFlow's ConcatV2 "
               "gradient builds).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "DynamicStitch",
        .inputs = {"indices: N * int32", "data: N * T"},
        .outputs = {"merged: T"},
        .attrs = {"N: int >= 1", "T: alltypes"},
        .shape_fn = dynamic_stitch_shape,
        .doc = "Interleaves the slices of the data tensors by their indices: merged[indices[m][i], ...] = "
               "data[m][i, ...], taken in order of m and then i, so a later value of an index wins. "
               "data[m]'s shape must start with indices[m]'s, and the slices (the rest) must have one shape "
               "for every m; merged is [max index + 1] + that shape, and rows no index names are zero. A "
               "negative index is INVALID_ARGUMENT naming it. Every dtype, strings included.",
        .tf_differences = "TensorFlow leaves the rows no index names as they happen to be; tide fills them "
                          "with zeros.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Rank",
        .inputs = {"input: T"},
        .outputs = {"output: int32"},
        .attrs = {"T: alltypes"},
        .shape_fn = tide_shape_fn_scalar,
        .doc = "The number of dimensions of input, an int32 scalar (0 for a scalar). Never fails.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Size",
        .inputs = {"input: T"},
        .outputs = {"output: out_type"},
        .attrs = {"T: alltypes", "out_type: {int32, int64} = int32"},
        .shape_fn = tide_shape_fn_scalar,
        .doc = "The number of elements of input, a scalar (1 for a scalar, 0 if any dimension is 0). "
               "With out_type int32 a count larger than 2^31-1 is INVALID_ARGUMENT (use out_type=int64).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Where",
        .inputs = {"input: T"},
        .outputs = {"index: int64"},
        .attrs = {"T: {bool, int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, "
                  "float64, complex64, complex128} = bool"},
        .shape_fn = where_shape,
        .doc = "The coordinates of the true (non-zero) elements of input, one row each in row-major "
               "order: an int64 matrix [number of true elements, rank of input] (what tf.where with "
               "one argument and tf.boolean_mask emit). A float is true when it is not 0 (-0.0 is "
               "false, nan true); a complex number when either part is not 0. A scalar input gives "
               "[1, 0] or [0, 0].",
    });
    tide_op_register(&(tide_op_spec){
        .name = "ExpandDims",
        .inputs = {"input: T", "dim: Tdim"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tdim: {int32, int64} = int32"},
        .shape_fn = expand_dims_shape,
        .doc = "Inserts a dimension of size 1 into input's shape at index dim; a view, no copy. dim "
               "holds exactly one integer in [-rank-1, rank] (negative counts from the end: -1 appends); "
               "anything else, or a result of rank above 8, is INVALID_ARGUMENT.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Squeeze",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "squeeze_dims: list(int) = []"},
        .shape_fn = squeeze_shape,
        .doc = "Removes dimensions of size 1 from input's shape; a view, no copy. With squeeze_dims "
               "empty every size-1 dimension goes; otherwise exactly the listed ones (each in "
               "[-rank, rank), negative counts from the end), and a listed dimension whose size is not "
               "1, or an index out of range, is INVALID_ARGUMENT.",
    });
}
TIDE_REGISTER(register_shape_query_ops)

static void register_one_hot_range_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "OneHot",
        .inputs = {"indices: TI", "depth: int32", "on_value: T", "off_value: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "TI: {uint8, int32, int64} = int64", "axis: int = -1"},
        .shape_fn = one_hot_shape,
        .doc = "A one-hot encoding of indices: a new dimension of size depth is inserted at axis (-1: "
               "last), and output is on_value where its index along that dimension equals the "
               "corresponding element of indices, off_value elsewhere. An index outside [0, depth) "
               "(negative included) gives an all-off row, as in TensorFlow. depth must be a "
               "non-negative scalar, on_value and off_value scalars, axis -1 or in [0, rank(indices)]; "
               "otherwise INVALID_ARGUMENT.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Range",
        .inputs = {"start: Tidx", "limit: Tidx", "delta: Tidx"},
        .outputs = {"output: Tidx"},
        .attrs = {"Tidx: {float32, float64, int32, int64} = int32"},
        .shape_fn = range_shape,
        .doc = "The sequence start, start + delta, ... up to but excluding limit: a vector of "
               "ceil((limit - start) / delta) elements (float32 divides in float, float64 in double, as "
               "TensorFlow does), element i being start + i * delta (floats computed in double "
               "precision, not by repeated addition). All three must be scalars. delta 0, start past "
               "limit in delta's direction (start > limit with delta > 0, or start < limit with "
               "delta < 0), or a non-finite float is INVALID_ARGUMENT, as in TensorFlow; start == limit "
               "gives an empty vector. Integer counts are exact over the whole int64 range (no overflow).",
    });
}
TIDE_REGISTER(register_one_hot_range_ops)
