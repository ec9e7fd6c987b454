/* array_grad.c — gradient functions of the array and shape ops: Reshape, ExpandDims, Squeeze,
 * Transpose, ConcatV2, Concat, Split, Slice, StridedSlice, Pack, Unpack, Tile, Pad, PadV2, Gather,
 * GatherV2, and of the helper ops BroadcastTo, StridedSliceGrad and UnsortedSegmentSum
 * (engine/ops/grad_ops.c); plus the declarations "no gradient flows" for the ops that only look at
 * shapes or make new values (Shape, Rank, Size, Where, Fill, ZerosLike, OnesLike, OneHot, Range,
 * and the integer helper ops).
 *
 * These ops move elements, so each gradient moves them back: Slice is undone by Pad and Pad by
 * Slice, Concat by Slices at the ConcatOffset offsets, Gather by UnsortedSegmentSum (dense, not
 * TensorFlow's IndexedSlices), StridedSlice by StridedSliceGrad. Shapes and index vectors are graph
 * constants whenever they are known at graph time (no Shape node is built then) and computed at run
 * time otherwise, so unknown batch dimensions work. A few gradients need the RANK at graph time
 * (Tile, Gather with axis != 0) and fail with a message saying so when it is unknown. */
#include <stdlib.h>
#include <string.h>

#include "grad_util.h"

/* The value of t when it is a Const node (borrowed), else NULL. */
static const tide_tensor *const_value(tide_output t)
{
    tide_tensor *v = NULL;
    if (t.node && strcmp(tide_node_op(t.node), "Const") == 0)
        tide_attrs_get_tensor(tide_node_attrs(t.node), "value", &v);
    return v;
}

/* Reads an integer Const vector (or scalar) into v[0..cap); its length, or -1 if t is not one. */
static int const_ints(tide_output t, int64_t *v, int cap)
{
    const tide_tensor *c = const_value(t);
    if (!c || tide_tensor_rank(c) > 1 || tide_tensor_num_elements(c) > cap)
        return -1;
    tide_dtype dt = tide_tensor_dtype(c);
    if (dt != TIDE_INT32 && dt != TIDE_INT64)
        return -1;
    for (int64_t i = 0; i < tide_tensor_num_elements(c); i++)
        v[i] = dt == TIDE_INT32 ? ((const int32_t *)tide_tensor_data(c))[i]
                                : ((const int64_t *)tide_tensor_data(c))[i];
    return (int)tide_tensor_num_elements(c);
}

/* op(inputs) with one int attr. */
static tide_node *op_with_int(tide_grad_ctx *ctx, const char *op, const tide_output *in, int n,
                              const char *attr, int64_t v)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, attr, v);
    tide_node *node = tide_grad_node_new(ctx, op, in, n, a);
    tide_attrs_free(a);
    return node;
}

static tide_output transpose(tide_grad_ctx *ctx, tide_output t, const int64_t *perm, int n)
{
    return tide_grad_op2(ctx, "Transpose", t, index_const(ctx, TIDE_INT32, perm, n));
}

/* A gradient that needs x's rank at graph time. */
static int known_rank(tide_grad_ctx *ctx, tide_output x, const char *why)
{
    int rank = shape_of(x).rank;
    if (rank < 0)
        tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "the gradient needs the rank of %s at graph time, "
                        "and it is unknown", why);
    return rank;
}

/* ---------------------------------------------------------------- Reshape, ExpandDims, Squeeze */

/* Ops that only relabel the shape: dx is dy in x's shape. */
static tide_status reshape_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Reshape", DY(0), shape_tensor(ctx, X(0), TIDE_INT32)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- Transpose */

static tide_status transpose_grad(tide_grad_ctx *ctx)
{
    int64_t perm[TIDE_MAX_RANK], inverse[TIDE_MAX_RANK];
    int n = const_ints(X(1), perm, TIDE_MAX_RANK);
    bool valid = n >= 0;
    for (int i = 0; i < n && valid; i++)
        valid = perm[i] >= 0 && perm[i] < n;
    if (!valid) {
        tide_output inv = tide_grad_op1(ctx, "InvertPermutation", X(1));
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Transpose", DY(0), inv));
        return tide_grad_status(ctx);
    }
    for (int i = 0; i < n; i++)
        inverse[perm[i]] = i;
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Transpose", DY(0),
                                            index_const(ctx, dtype_of(X(1)), inverse, n)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- Concat, Split */

/* Static offsets: the axis is a Const and every value's rank and size along it are known. Fills
 * begin[i][..] and size[i][..] (size -1 "to the end" outside the axis). The n values are inputs
 * first.., the axis is input axis_input. */
static bool concat_static(tide_grad_ctx *ctx, int first, int n, int axis_input, int *rank,
                          int64_t (*begin)[TIDE_MAX_RANK], int64_t (*size)[TIDE_MAX_RANK])
{
    int64_t axis, at = 0;
    *rank = shape_of(X(first)).rank;
    if (const_ints(X(axis_input), &axis, 1) != 1 || *rank <= 0)
        return false;
    axis = axis < 0 ? axis + *rank : axis;
    if (axis < 0 || axis >= *rank)
        return false;
    for (int i = 0; i < n; i++) {
        tide_shape s = shape_of(X(first + i));
        if (s.rank != *rank || s.dims[axis] < 0)
            return false;
        for (int d = 0; d < *rank; d++) {
            begin[i][d] = d == axis ? at : 0;
            size[i][d] = d == axis ? s.dims[d] : -1;
        }
        at += s.dims[axis];
    }
    return true;
}

/* Each value gets the Slice of dy where it was placed: at static offsets when they are known at
 * graph time, else at the ConcatOffset of the values' run-time shapes. ConcatV2's values are inputs
 * 0..n-1 and its axis input n; the legacy Concat's axis is input 0 and its values 1..n. */
static tide_status concat_values_grad(tide_grad_ctx *ctx, int first, int axis_input)
{
    int n = tide_node_num_inputs(tide_grad_node(ctx)) - 1, rank;
    if (n == 1) {
        tide_grad_set_dx(ctx, first, DY(0));
        return TIDE_OK;
    }
    int64_t (*begin)[TIDE_MAX_RANK] = calloc((size_t)n, sizeof *begin);
    int64_t (*size)[TIDE_MAX_RANK] = calloc((size_t)n, sizeof *size);
    tide_output *shapes = calloc((size_t)n + 1, sizeof *shapes);
    if (!begin || !size || !shapes) {
        tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else if (concat_static(ctx, first, n, axis_input, &rank, begin, size)) {
        for (int i = 0; i < n; i++)
            if (tide_grad_wants(ctx, first + i))
                tide_grad_set_dx(ctx, first + i, tide_grad_op(ctx, "Slice", (tide_output[]){DY(0),
                                                      index_const(ctx, TIDE_INT32, begin[i], rank),
                                                      index_const(ctx, TIDE_INT32, size[i], rank)}, 3, NULL));
    } else {
        tide_output axis = X(axis_input);
        if (dtype_of(axis) != TIDE_INT32) {
            tide_attrs *a = tide_attrs_new();
            tide_attrs_set_type(a, "DstT", TIDE_INT32);
            axis = tide_grad_op(ctx, "Cast", &axis, 1, a);
            tide_attrs_free(a);
        }
        shapes[0] = axis;
        for (int i = 0; i < n; i++)
            shapes[i + 1] = shape_tensor(ctx, X(first + i), TIDE_INT32);
        tide_node *offsets = tide_grad_node_new(ctx, "ConcatOffset", shapes, n + 1, NULL);
        for (int i = 0; i < n && offsets; i++)
            if (tide_grad_wants(ctx, first + i))
                tide_grad_set_dx(ctx, first + i, tide_grad_op(ctx, "Slice", (tide_output[]){DY(0),
                                                      {offsets, i}, shapes[i + 1]}, 3, NULL));
    }
    free(begin);
    free(size);
    free(shapes);
    return tide_grad_status(ctx);
}

static tide_status concat_v2_grad(tide_grad_ctx *ctx)
{
    return concat_values_grad(ctx, 0, tide_node_num_inputs(tide_grad_node(ctx)) - 1);
}

static tide_status concat_grad(tide_grad_ctx *ctx) { return concat_values_grad(ctx, 1, 0); }

/* Split(axis, value) and SplitV(value, size_splits, axis): the pieces' gradients (zeros where none
 * flows) concatenated back along the axis, to input `value`. */
static tide_status split_pieces_grad(tide_grad_ctx *ctx, int value, tide_output axis)
{
    int n = tide_node_num_outputs(tide_grad_node(ctx));
    tide_output *in = calloc((size_t)n + 1, sizeof *in);
    if (!in)
        return tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < n; i++)
        in[i] = tide_grad_dy_or_zeros(ctx, i);
    in[n] = axis;
    tide_grad_set_dx(ctx, value, n == 1 ? in[0] : tide_grad_op(ctx, "ConcatV2", in, n + 1, NULL));
    free(in);
    return tide_grad_status(ctx);
}

static tide_status split_grad(tide_grad_ctx *ctx) { return split_pieces_grad(ctx, 1, X(0)); }
static tide_status split_v_grad(tide_grad_ctx *ctx) { return split_pieces_grad(ctx, 0, X(2)); }

/* ---------------------------------------------------------------- Pack, Unpack */

static tide_status pack_grad(tide_grad_ctx *ctx)
{
    int n = tide_node_num_inputs(tide_grad_node(ctx));
    int64_t axis = 0;
    tide_attrs_get_int(tide_grad_attrs(ctx), "axis", &axis);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "num", n);
    tide_attrs_set_int(a, "axis", axis);
    tide_output dy = DY(0);
    tide_node *pieces = tide_grad_node_new(ctx, "Unpack", &dy, 1, a);
    tide_attrs_free(a);
    for (int i = 0; i < n && pieces; i++)
        if (tide_grad_wants(ctx, i))
            tide_grad_set_dx(ctx, i, (tide_output){pieces, i});
    return tide_grad_status(ctx);
}

static tide_status unpack_grad(tide_grad_ctx *ctx)
{
    int n = tide_node_num_outputs(tide_grad_node(ctx));
    int64_t axis = 0;
    tide_attrs_get_int(tide_grad_attrs(ctx), "axis", &axis);
    tide_output *in = calloc((size_t)n + 1, sizeof *in);
    if (!in)
        return tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < n; i++)
        in[i] = tide_grad_dy_or_zeros(ctx, i);
    tide_node *packed = op_with_int(ctx, "Pack", in, n, "axis", axis);
    tide_grad_set_dx(ctx, 0, (tide_output){packed, 0});
    free(in);
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- Slice, Pad, StridedSlice */

/* Slice(x, begin, size): dy padded back to x's shape, paddings [begin, dim - begin - size]. */
static tide_status slice_grad(tide_grad_ctx *ctx)
{
    tide_output x = X(0), begin = X(1);
    tide_shape sx = shape_of(x), sy = shape_of(Y(0));
    tide_dtype dt = dtype_of(begin);
    int64_t b[TIDE_MAX_RANK], pad[2 * TIDE_MAX_RANK];
    tide_output paddings;
    if (const_ints(begin, b, TIDE_MAX_RANK) == sx.rank && tide_shape_is_fully_defined(&sx) &&
        tide_shape_is_fully_defined(&sy)) {
        for (int d = 0; d < sx.rank; d++) {
            pad[2 * d] = b[d];
            pad[2 * d + 1] = sx.dims[d] - b[d] - sy.dims[d];
        }
        tide_shape ps = tide_shape_matrix(sx.rank, 2);
        paddings = int_const(ctx, dt, pad, 2 * sx.rank, &ps);
    } else {
        tide_output rest = tide_grad_op2(ctx, "Sub", shape_tensor(ctx, x, dt), begin);
        tide_output after = tide_grad_op2(ctx, "Sub", rest, shape_tensor(ctx, Y(0), dt));
        paddings = (tide_output){op_with_int(ctx, "Pack", (tide_output[]){begin, after}, 2, "axis", 1), 0};
    }
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Pad", DY(0), paddings));
    return tide_grad_status(ctx);
}

/* Pad and PadV2: dx is the slice of dy that x became, starting at paddings[:, 0]. constant_values
 * (PadV2) gets no gradient. */
static tide_status pad_grad(tide_grad_ctx *ctx)
{
    tide_output x = X(0), paddings = X(1), begin;
    tide_dtype dt = dtype_of(paddings);
    int64_t pad[2 * TIDE_MAX_RANK], b[TIDE_MAX_RANK];
    int rank = shape_of(x).rank;
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    if (rank >= 0 && const_ints(paddings, pad, 2 * TIDE_MAX_RANK) == 2 * rank) {
        for (int d = 0; d < rank; d++)
            b[d] = pad[2 * d];
        begin = index_const(ctx, dt, b, rank);
    } else {
        int64_t corner[2] = {0, 0}, column[2] = {-1, 1}, flat = -1;
        tide_output first = tide_grad_op(ctx, "Slice", (tide_output[]){paddings,
                                         index_const(ctx, TIDE_INT32, corner, 2),
                                         index_const(ctx, TIDE_INT32, column, 2)}, 3, NULL);
        begin = tide_grad_op2(ctx, "Reshape", first, index_const(ctx, TIDE_INT32, &flat, 1));
    }
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "Slice", (tide_output[]){DY(0), begin,
                                          shape_tensor(ctx, x, dt)}, 3, NULL));
    return tide_grad_status(ctx);
}

static const char *const STRIDED_MASKS[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                            "shrink_axis_mask"};

/* The forward node's five masks, for a StridedSlice(Grad) built with the same spec. */
static tide_attrs *mask_attrs(tide_grad_ctx *ctx)
{
    tide_attrs *a = tide_attrs_new();
    for (int i = 0; i < 5; i++) {
        int64_t v = 0;
        tide_attrs_get_int(tide_grad_attrs(ctx), STRIDED_MASKS[i], &v);
        tide_attrs_set_int(a, STRIDED_MASKS[i], v);
    }
    return a;
}

static tide_status strided_slice_grad(tide_grad_ctx *ctx)
{
    tide_attrs *a = mask_attrs(ctx);
    tide_output in[5] = {shape_tensor(ctx, X(0), dtype_of(X(1))), X(1), X(2), X(3), DY(0)};
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "StridedSliceGrad", in, 5, a));
    tide_attrs_free(a);
    return tide_grad_status(ctx);
}

/* StridedSliceGrad is linear in dy: its gradient is the same slice of the incoming gradient. */
static tide_status strided_slice_grad_grad(tide_grad_ctx *ctx)
{
    tide_attrs *a = mask_attrs(ctx);
    tide_output in[4] = {DY(0), X(1), X(2), X(3)};
    tide_grad_set_dx(ctx, 4, tide_grad_op(ctx, "StridedSlice", in, 4, a));
    tide_attrs_free(a);
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- Tile, BroadcastTo */

/* dy reshaped to [m0, d0, m1, d1, ...] and summed over the multiples' axes (0, 2, 4, ...). */
static tide_status tile_grad(tide_grad_ctx *ctx)
{
    tide_output x = X(0), multiples = X(1);
    int rank = known_rank(ctx, x, "Tile's input");
    tide_shape sx = shape_of(x);
    tide_dtype dt = dtype_of(multiples);
    int64_t m[TIDE_MAX_RANK], split[2 * TIDE_MAX_RANK], axes[TIDE_MAX_RANK], flat = -1;
    if (rank <= 0) {
        if (rank == 0)
            tide_grad_set_dx(ctx, 0, DY(0));
        return tide_grad_status(ctx);
    }
    tide_output split_shape;
    if (tide_shape_is_fully_defined(&sx) && const_ints(multiples, m, TIDE_MAX_RANK) == rank) {
        for (int d = 0; d < rank; d++) {
            split[2 * d] = m[d];
            split[2 * d + 1] = sx.dims[d];
        }
        split_shape = index_const(ctx, dt, split, 2 * rank);
    } else {
        tide_node *pairs = op_with_int(ctx, "Pack", (tide_output[]){multiples, shape_tensor(ctx, x, dt)}, 2,
                                       "axis", 1);
        split_shape = tide_grad_op2(ctx, "Reshape", (tide_output){pairs, 0},
                                    index_const(ctx, TIDE_INT32, &flat, 1));
    }
    for (int d = 0; d < rank; d++)
        axes[d] = 2 * d;
    tide_output split_dy = tide_grad_op2(ctx, "Reshape", DY(0), split_shape);
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Sum", split_dy, index_const(ctx, TIDE_INT32, axes, rank)));
    return tide_grad_status(ctx);
}

static tide_status broadcast_to_grad(tide_grad_ctx *ctx)
{
    tide_grad_set_dx(ctx, 0, tide_grad_unbroadcast(ctx, DY(0), X(0), Y(0)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- Gather, UnsortedSegmentSum */

/* params.shape[axis] as an int32 scalar: a Const when known. */
static tide_output gathered_dim(tide_grad_ctx *ctx, tide_output params, int axis)
{
    tide_shape s = shape_of(params);
    if (s.rank > axis && s.dims[axis] >= 0)
        return tide_grad_scalar(ctx, TIDE_INT32, (double)s.dims[axis]);
    tide_output in[2] = {tide_grad_op1(ctx, "Shape", params), tide_grad_scalar(ctx, TIDE_INT32, axis)};
    return tide_grad_op(ctx, "Gather", in, 2, NULL);
}

/* Gather(params, indices) and GatherV2(params, indices, axis): dy's slices are summed into the rows
 * of params they came from. Along axis 0 that is UnsortedSegmentSum(dy, indices); along another
 * axis the indices' dims are moved to the front of dy first and params' axis back into place
 * after. GatherV2's axis must be a constant; batch_dims other than 0 are not differentiated. */
static tide_status gather_grad(tide_grad_ctx *ctx)
{
    tide_output params = X(0), indices = X(1);
    int64_t axis = 0, batch_dims = 0;
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    if (tide_node_num_inputs(tide_grad_node(ctx)) > 2 && const_ints(X(2), &axis, 1) != 1)
        return tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "the gradient of GatherV2 needs its axis as a "
                               "constant at graph time");
    tide_attrs_get_int(tide_grad_attrs(ctx), "batch_dims", &batch_dims);
    if (batch_dims != 0)
        return tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "the gradient of GatherV2 with batch_dims %lld "
                               "is not implemented (only batch_dims 0)", (long long)batch_dims);
    int p_rank = axis == 0 ? shape_of(params).rank : known_rank(ctx, params, "Gather's params");
    int i_rank = axis == 0 ? 0 : known_rank(ctx, indices, "Gather's indices");
    if (tide_grad_status(ctx) != TIDE_OK)
        return tide_grad_status(ctx);
    int ax = (int)(axis < 0 ? axis + p_rank : axis);
    tide_output num = gathered_dim(ctx, params, ax);
    if (ax == 0) {
        tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "UnsortedSegmentSum", (tide_output[]){DY(0), indices, num},
                                              3, NULL));
        return tide_grad_status(ctx);
    }
    int64_t to_front[2 * TIDE_MAX_RANK], back[TIDE_MAX_RANK];
    int n = 0, dy_rank = p_rank - 1 + i_rank;
    for (int d = ax; d < ax + i_rank; d++)
        to_front[n++] = d;
    for (int d = 0; d < ax; d++)
        to_front[n++] = d;
    for (int d = ax + i_rank; d < dy_rank; d++)
        to_front[n++] = d;
    for (int d = 0; d < p_rank; d++) /* [N, P0..P(ax-1), inner] -> [P0..P(ax-1), N, inner] */
        back[d] = d < ax ? d + 1 : d == ax ? 0 : d;
    tide_output moved = transpose(ctx, DY(0), to_front, dy_rank);
    tide_output sums = tide_grad_op(ctx, "UnsortedSegmentSum", (tide_output[]){moved, indices, num}, 3, NULL);
    tide_grad_set_dx(ctx, 0, transpose(ctx, sums, back, p_rank));
    return tide_grad_status(ctx);
}

/* UnsortedSegmentSum(data, ids, num): each slice of data gets the row of dy it was added to, and
 * zero when its id is negative (the slice was dropped). */
static tide_status segment_sum_grad(tide_grad_ctx *ctx)
{
    tide_output ids = X(1);
    int d_rank = known_rank(ctx, X(0), "UnsortedSegmentSum's data");
    int i_rank = known_rank(ctx, ids, "UnsortedSegmentSum's segment_ids");
    if (tide_grad_status(ctx) != TIDE_OK)
        return tide_grad_status(ctx);
    tide_output zero_id = tide_grad_scalar(ctx, dtype_of(ids), 0);
    tide_output kept = tide_grad_op2(ctx, "GreaterEqual", ids, zero_id);
    tide_output rows = tide_grad_op2(ctx, "Gather", DY(0), tide_grad_op2(ctx, "Maximum", ids, zero_id));
    for (int d = i_rank; d < d_rank; d++) /* the condition's shape aligned with the slices' */
        kept = tide_grad_op2(ctx, "ExpandDims", kept, tide_grad_scalar(ctx, TIDE_INT32, -1));
    tide_output zero = tide_grad_scalar(ctx, dtype_of(X(0)), 0);
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, "SelectV2", (tide_output[]){kept, rows, zero}, 3, NULL));
    return tide_grad_status(ctx);
}

/* DynamicStitch(indices..., data...): data[m] gets the rows of dy its indices name (Gather), as
 * TensorFlow's gradient: where an index is given twice, every data row it names gets dy's row. */
static tide_status dynamic_stitch_grad(tide_grad_ctx *ctx)
{
    int n = tide_node_num_inputs(tide_grad_node(ctx)) / 2;
    for (int m = 0; m < n; m++)
        if (tide_grad_wants(ctx, n + m))
            tide_grad_set_dx(ctx, n + m, tide_grad_op2(ctx, "Gather", DY(0), X(m)));
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- ReverseV2, MirrorPad */

static tide_status reverse_grad(tide_grad_ctx *ctx)
{
    if (tide_grad_wants(ctx, 0))
        tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "ReverseV2", DY(0), X(1)));
    return tide_grad_status(ctx);
}

/* MirrorPad's gradient sums the reflections back (MirrorPadGrad); MirrorPadGrad is linear, and its
 * gradient pads dy the same way (MirrorPad). Both keep the forward node's mode. */
static tide_status mirror_grad(tide_grad_ctx *ctx)
{
    if (!tide_grad_wants(ctx, 0))
        return TIDE_OK;
    const char *mode = "REFLECT";
    tide_attrs_get_string(tide_grad_attrs(ctx), "mode", &mode);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_string(a, "mode", mode);
    bool forward = strcmp(tide_node_op(tide_grad_node(ctx)), "MirrorPad") == 0;
    tide_grad_set_dx(ctx, 0, tide_grad_op(ctx, forward ? "MirrorPadGrad" : "MirrorPad",
                                          (tide_output[]){DY(0), X(1)}, 2, a));
    tide_attrs_free(a);
    return tide_grad_status(ctx);
}

/* ---------------------------------------------------------------- registration */

static void register_array_gradients(void)
{
    static const grad_entry table[] = {
        {"Reshape", reshape_grad},       {"ExpandDims", reshape_grad},
        {"Squeeze", reshape_grad},       {"Transpose", transpose_grad},
        {"ConcatV2", concat_v2_grad},    {"Concat", concat_grad},
        {"Split", split_grad},           {"SplitV", split_v_grad},
        {"Pack", pack_grad},             {"Unpack", unpack_grad},
        {"Slice", slice_grad},           {"Pad", pad_grad},
        {"PadV2", pad_grad},             {"StridedSlice", strided_slice_grad},
        {"StridedSliceGrad", strided_slice_grad_grad},
        {"Tile", tile_grad},             {"BroadcastTo", broadcast_to_grad},
        {"Gather", gather_grad},         {"GatherV2", gather_grad},
        {"UnsortedSegmentSum", segment_sum_grad},
        {"ReverseV2", reverse_grad},     {"MirrorPad", mirror_grad},
        {"DynamicStitch", dynamic_stitch_grad},
        {"MirrorPadGrad", mirror_grad},
    };
    register_gradients(table, COUNT_OF(table));

    /* Shapes, counts, fills and indices: no gradient flows through them. */
    static const char *const not_differentiable[] = {
        "Shape", "ShapeN", "Rank", "Size", "Where", "Fill", "ZerosLike", "OnesLike", "OneHot", "Range",
        "ReducedShape", "ConcatOffset", "InvertPermutation",
    };
    register_no_gradients(not_differentiable, COUNT_OF(not_differentiable));
}
TIDE_REGISTER(register_array_gradients)
