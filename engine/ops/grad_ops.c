/* grad_ops.c — definitions of the ops that exist for gradients (the gradient functions in
 * engine/grads build them; users rarely do): BroadcastTo, ReducedShape, ProdGrad,
 * UnsortedSegmentSum, StridedSliceGrad, ConcatOffset and InvertPermutation, with TensorFlow's
 * semantics where TensorFlow has the op. CPU kernels: kernels/cpu/grad_support.c.
 *
 * Shape functions give exact shapes when the inputs that decide them (a target shape, a number of
 * segments) are graph-time constants, partial shapes otherwise, and reject what is already known to
 * be wrong with the messages the kernels use. */
#include <stdio.h>

#include "../tide_op.h"
#include "array_ops.h"
#include "op_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

/* Element types of the ops that move or add numbers (no strings). */
#define T_NUMBERS "T: {bool, int8, int16, int32, int64, uint8, uint16, float16, bfloat16, float32, " \
                  "float64, complex64, complex128}"
#define INDEX_TYPES "{int32, int64} = int32"

/* Fails unless input i is (possibly) a vector; what names it. */
static tide_status need_vector(tide_shape_ctx *ctx, int i, const char *what)
{
    tide_shape s = tide_shape_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (s.rank >= 0 && s.rank != 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a vector, got shape %s", what,
                                SHAPE_STR(s, buf));
    return TIDE_OK;
}

/* Fails unless input i is (possibly) a scalar or a vector of axes; what names it. */
static tide_status need_axes(tide_shape_ctx *ctx, int i, const char *what)
{
    tide_shape s = tide_shape_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (s.rank > 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar or a vector, got shape %s",
                                what, SHAPE_STR(s, buf));
    return TIDE_OK;
}

/* The shape whose dims are the values of the shape-vector input i: exact when it is a constant, of
 * known rank when only its length is known, else unknown. Fails on a negative or too long value. */
static tide_status shape_from_input(tide_shape_ctx *ctx, int i, const char *what, tide_shape *out)
{
    tide_status st = need_vector(ctx, i, what);
    if (st != TIDE_OK)
        return st;
    const tide_tensor *v = tide_shape_input_value(ctx, i);
    tide_shape s = tide_shape_input(ctx, i);
    int64_t n = v ? tide_tensor_num_elements(v) : s.rank == 1 ? s.dims[0] : -1;
    *out = tide_shape_unknown();
    if (n < 0)
        return TIDE_OK;
    if (n > TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "%s has %lld entries; at most %d dimensions are supported", what,
                                (long long)n, TIDE_MAX_RANK);
    out->rank = (int)n;
    for (int d = 0; d < out->rank; d++) {
        out->dims[d] = v ? tide_op_int_at(v, d) : -1;
        if (v && out->dims[d] < 0) {
            char buf[TIDE_OP_MSG_MAX];
            int64_t vals[TIDE_MAX_RANK];
            tide_op_index_values(v, vals, TIDE_MAX_RANK);
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s %s has a negative size", what,
                                    tide_op_format_values(vals, n, buf, sizeof buf));
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- BroadcastTo */

static tide_status broadcast_to_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), out;
    tide_status st = shape_from_input(ctx, 1, "shape", &out);
    if (st != TIDE_OK || out.rank < 0 || in.rank < 0) {
        if (st == TIDE_OK)
            tide_shape_set_output(ctx, 0, &out);
        return st;
    }
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (in.rank > out.rank)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot broadcast a tensor of shape %s to shape %s: it has more "
                                "dimensions", SHAPE_STR(in, a), SHAPE_STR(out, b));
    for (int i = 0; i < in.rank; i++) {
        int64_t d = in.dims[i], *o = &out.dims[out.rank - in.rank + i];
        if (d >= 0 && *o >= 0 && d != 1 && d != *o)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "cannot broadcast a tensor of shape %s to shape %s: dimension %d "
                                    "has size %lld, which is neither 1 nor %lld",
                                    SHAPE_STR(in, a), SHAPE_STR(out, b), i, (long long)d, (long long)*o);
        if (*o < 0 && d > 1)
            *o = d; /* the target must equal a dimension that is not 1 */
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ReducedShape */

static tide_status reduced_shape_shape(tide_shape_ctx *ctx)
{
    tide_status st = need_vector(ctx, 0, "input_shape");
    if (st == TIDE_OK)
        st = need_axes(ctx, 1, "axes");
    if (st != TIDE_OK)
        return st;
    tide_shape out = tide_shape_input(ctx, 0);
    if (out.rank < 0)
        out = tide_shape_vector(-1);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ProdGrad */

static tide_status prod_grad_shape(tide_shape_ctx *ctx)
{
    tide_status st = need_axes(ctx, 1, "reduction_indices");
    if (st != TIDE_OK)
        return st;
    tide_shape in = tide_shape_input(ctx, 0);
    tide_shape_set_output(ctx, 0, &in);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- UnsortedSegmentSum */

static tide_status segment_sum_shape(tide_shape_ctx *ctx)
{
    tide_shape data = tide_shape_input(ctx, 0), ids = tide_shape_input(ctx, 1);
    tide_shape ns = tide_shape_input(ctx, 2), out = tide_shape_unknown();
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (ns.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "num_segments must be a scalar, got shape %s",
                                SHAPE_STR(ns, a));
    const tide_tensor *nv = tide_shape_input_value(ctx, 2);
    int64_t num = nv ? tide_op_int_at(nv, 0) : -1;
    if (nv && num < 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "num_segments must be >= 0, got %lld",
                                (long long)num);
    if (data.rank < 0 || ids.rank < 0) {
        tide_shape_set_output(ctx, 0, &out);
        return TIDE_OK;
    }
    bool prefix = ids.rank <= data.rank;
    for (int i = 0; i < ids.rank && prefix; i++)
        prefix = ids.dims[i] < 0 || data.dims[i] < 0 || ids.dims[i] == data.dims[i];
    if (!prefix)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "segment_ids of shape %s must have a shape that begins data's "
                                "shape %s", SHAPE_STR(ids, a), SHAPE_STR(data, b));
    out.rank = 1 + data.rank - ids.rank;
    out.dims[0] = num;
    for (int i = ids.rank; i < data.rank; i++)
        out.dims[1 + i - ids.rank] = data.dims[i];
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- StridedSliceGrad */

static tide_status strided_slice_grad_shape(tide_shape_ctx *ctx)
{
    static const char *const names[] = {"begin", "end", "strides"};
    tide_shape out;
    tide_status st = shape_from_input(ctx, 0, "shape", &out);
    for (int i = 1; i <= 3 && st == TIDE_OK; i++)
        st = need_vector(ctx, i, names[i - 1]);
    if (st != TIDE_OK)
        return st;
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- ConcatOffset */

static tide_status concat_offset_shape(tide_shape_ctx *ctx)
{
    tide_shape dim = tide_shape_input(ctx, 0), len = tide_shape_vector(-1);
    char buf[TIDE_SHAPE_STR_MAX];
    if (dim.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "concat_dim must be a scalar, got shape %s",
                                SHAPE_STR(dim, buf));
    for (int i = 1; i < tide_shape_num_inputs(ctx); i++) {
        tide_status st = need_vector(ctx, i, "every shape");
        if (st != TIDE_OK)
            return st;
        tide_shape s = tide_shape_input(ctx, i);
        if (s.rank == 1 && s.dims[0] >= 0)
            len = s;
    }
    for (int i = 0; i < tide_shape_num_outputs(ctx); i++)
        tide_shape_set_output(ctx, i, &len);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- InvertPermutation */

static tide_status invert_permutation_shape(tide_shape_ctx *ctx)
{
    tide_status st = need_vector(ctx, 0, "x");
    if (st != TIDE_OK)
        return st;
    tide_shape s = tide_shape_input(ctx, 0);
    if (s.rank < 0)
        s = tide_shape_vector(-1);
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- registration */

static const tide_op_spec grad_ops[] = {
    {
        .name = "BroadcastTo",
        .inputs = {"input: T", "shape: Tidx"},
        .outputs = {"output: T"},
        .attrs = {T_NUMBERS, "Tidx: " INDEX_TYPES},
        .shape_fn = broadcast_to_shape,
        .doc = "Broadcasts input to the given shape, NumPy style: input's dimensions are aligned "
               "with the last ones of shape and each must be 1 or equal to its target; missing "
               "leading dimensions are added. Anything else is INVALID_ARGUMENT naming both "
               "shapes. Numbers and bool (no strings).",
    },
    {
        .name = "ReducedShape",
        .inputs = {"input_shape: Tshape", "axes: Tidx"},
        .outputs = {"output: Tshape"},
        .attrs = {"Tshape: " INDEX_TYPES, "Tidx: " INDEX_TYPES},
        .shape_fn = reduced_shape_shape,
        .doc = "The shape a reduction over axes keeps with keep_dims: input_shape with the entries "
               "named by axes (a scalar or vector; negative counts from the end) set to 1. Used by "
               "the gradients of the reductions. An axis outside [-rank, rank) is INVALID_ARGUMENT; "
               "a repeated axis is allowed.",
        .flags = TIDE_OP_NOT_IN_TF,
        .tf_differences = "tide's own helper of the reductions' gradients (TensorFlow builds the same shape "
                          "from Range, FloorMod, DynamicStitch and Fill).",
    },
    {
        .name = "ProdGrad",
        .inputs = {"input: T", "reduction_indices: Tidx", "grad: T"},
        .outputs = {"output: T"},
        .attrs = {"T: {float32, float64}", "Tidx: " INDEX_TYPES},
        .shape_fn = prod_grad_shape,
        .doc = "The gradient of Prod(input, reduction_indices): each element gets the product of "
               "the OTHER elements of its reduction group (computed with prefix and suffix "
               "products, so zeros in the input are exact) times the group's entry of grad, which "
               "holds one value per group (the reduced output's element count, with or without "
               "keep_dims). An axis out of range or repeated, or a grad of the wrong size, is "
               "INVALID_ARGUMENT.",
        .flags = TIDE_OP_NOT_IN_TF,
        .tf_differences = "tide's own helper of Prod's gradient (TensorFlow builds that gradient from "
                          "Cumprod, Reshape and Transpose).",
    },
    {
        .name = "UnsortedSegmentSum",
        .inputs = {"data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"},
        .outputs = {"output: T"},
        .attrs = {"T: {int32, int64, float32, float64}", "Tindices: " INDEX_TYPES,
                  "Tnumsegments: " INDEX_TYPES},
        .shape_fn = segment_sum_shape,
        .doc = "Sums the slices of data into num_segments segments: output[k, ...] is the sum of "
               "data[i..., ...] over the positions i of segment_ids whose id is k (0 where there is "
               "none). segment_ids' shape must begin data's shape, and the output has shape "
               "[num_segments] + data.shape[rank(segment_ids):]. A negative id drops its slice, as in "
               "TensorFlow; an id >= num_segments is INVALID_ARGUMENT naming its position and value. "
               "Sums are accumulated in the order of segment_ids (deterministic); integers wrap.",
    },
    {
        .name = "StridedSliceGrad",
        .inputs = {"shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"},
        .outputs = {"output: T"},
        .attrs = {T_NUMBERS, "Index: " INDEX_TYPES, "begin_mask: int = 0", "end_mask: int = 0",
                  "ellipsis_mask: int = 0", "new_axis_mask: int = 0", "shrink_axis_mask: int = 0"},
        .shape_fn = strided_slice_grad_shape,
        .doc = "The gradient of StridedSlice: a tensor of the given shape, zero except where the "
               "slice StridedSlice(x, begin, end, strides) with the same masks reads x, which receives "
               "the matching element of dy. The spec is resolved exactly as StridedSlice does (same "
               "errors); dy must have the slice's shape (INVALID_ARGUMENT otherwise).",
    },
    {
        .name = "ConcatOffset",
        .inputs = {"concat_dim: int32", "shape: N * int32"},
        .outputs = {"offset: N * int32"},
        .attrs = {"N: int >= 1"},
        .shape_fn = concat_offset_shape,
        .doc = "Where each input of a Concat along concat_dim starts in the result: offset i is 0 "
               "everywhere except at concat_dim, where it is the sum of the previous shapes' sizes "
               "there. The shapes must have the same length and agree outside concat_dim, which is in "
               "[-rank, rank); otherwise INVALID_ARGUMENT (OUT_OF_RANGE for the axis).",
    },
    {
        .name = "InvertPermutation",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: " INDEX_TYPES},
        .shape_fn = invert_permutation_shape,
        .doc = "The inverse of the permutation x (a vector holding each of 0..n-1 once): y[x[i]] = i. "
               "Anything else (a repeat, a value out of range, not a vector) is INVALID_ARGUMENT.",
    },
};

static void register_grad_ops(void)
{
    for (size_t i = 0; i < sizeof grad_ops / sizeof grad_ops[0]; i++)
        tide_op_register(&grad_ops[i]);
}
TIDE_REGISTER(register_grad_ops)
