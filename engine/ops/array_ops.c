/* array_ops.c — definitions of the array manipulation ops (part A): Reshape, Transpose, Concat,
 * Split, Slice, StridedSlice, Pack, Unpack, Tile, Pad and PadV2, with TensorFlow 1.x semantics
 * (kernels in kernels/cpu/array.c).
 *
 * Shape functions work on partial shapes and use the index inputs (shape, perm, axis, begin, ...)
 * when they are graph-time constants; what is already known to be wrong is rejected with the same
 * message the kernel would give. Error codes: an index or axis outside its valid range is
 * OUT_OF_RANGE; everything else (shapes that do not fit, malformed index vectors) is
 * INVALID_ARGUMENT.
 *
 * StridedSlice's spec resolution (masks, ellipsis, new and shrunk axes) lives here once, in
 * tide_array_strided_slice, and the CPU kernel calls it too (declared in array_ops.h): the shape
 * function and the kernel can never disagree. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tide_op.h"
#include "array_ops.h"
#include "op_util.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

/* StridedSlice's masks, indices into the array tide_array_ss_masks fills (in this order). */
enum { SS_BEGIN, SS_END, SS_ELLIPSIS, SS_NEW_AXIS, SS_SHRINK };

/* ---------------------------------------------------------------- helpers */

/* Fails unless input i is (possibly) of rank `rank`; what names it in the message. */
static tide_status expect_rank(tide_shape_ctx *ctx, int i, int rank, const char *what)
{
    tide_shape s = tide_shape_input(ctx, i);
    if (s.rank < 0 || s.rank == rank)
        return TIDE_OK;
    char buf[TIDE_SHAPE_STR_MAX];
    return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be %s, got shape %s", what,
                            rank == 0 ? "a scalar" : rank == 1 ? "a vector" : "a matrix",
                            SHAPE_STR(s, buf));
}

/* The length of vector input i: from its value, else its static shape, else -1. */
static int64_t vector_length(tide_shape_ctx *ctx, int i)
{
    const tide_tensor *v = tide_shape_input_value(ctx, i);
    if (v)
        return tide_tensor_num_elements(v);
    tide_shape s = tide_shape_input(ctx, i);
    return s.rank == 1 ? s.dims[0] : -1;
}

/* Elements of a (partial) shape: 0 when a dimension is 0 (whatever the others), -1 when unknown
 * (or past int64). */
static int64_t known_elements(const tide_shape *s)
{
    int64_t n = 1;
    if (s->rank < 0)
        return -1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0)
            return 0;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0 || __builtin_mul_overflow(n, s->dims[i], &n))
            return -1;
    return n;
}

static tide_shape unknown_dims(int rank)
{
    tide_shape s = tide_shape_unknown();
    if (rank >= 0 && rank <= TIDE_MAX_RANK) {
        s.rank = rank;
        for (int i = 0; i < rank; i++)
            s.dims[i] = -1;
    }
    return s;
}

static tide_status set_all_outputs(tide_shape_ctx *ctx, const tide_shape *s)
{
    for (int i = 0; i < tide_shape_num_outputs(ctx); i++)
        tide_shape_set_output(ctx, i, s);
    return TIDE_OK;
}

/* Normalises axis into [0, rank); false if outside [-rank, rank). Shared with the kernels
 * (array_ops.h). */
bool tide_array_normalize_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return false;
    *out = axis < 0 ? axis + rank : axis;
    return true;
}

/* The message for an axis outside [-rank, rank) of `what`, of shape s. Shared with the kernels
 * (array_ops.h). */
char *tide_array_axis_message(int64_t axis, int rank, const tide_shape *s, const char *what,
                              char *msg, size_t size)
{
    char buf[TIDE_SHAPE_STR_MAX];
    snprintf(msg, size, "axis %lld is out of range [%d, %d) for %s of shape %s", (long long)axis,
             -rank, rank, what, tide_shape_format(s, buf, sizeof buf));
    return msg;
}

static tide_status axis_error(tide_shape_ctx *ctx, int64_t axis, int rank, const tide_shape *s,
                              const char *what)
{
    char msg[TIDE_OP_MSG_MAX];
    return tide_shape_error(ctx, TIDE_OUT_OF_RANGE, "%s",
                            tide_array_axis_message(axis, rank, s, what, msg, sizeof msg));
}

/* ---------------------------------------------------------------- Reshape */

static tide_status reshape_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 1, 1, "shape");
    if (st != TIDE_OK)
        return st;
    tide_shape in = tide_shape_input(ctx, 0);
    int64_t n = vector_length(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (n > TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "shape has %lld dimensions; at most %d are supported", (long long)n,
                                TIDE_MAX_RANK);
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    tide_shape out = unknown_dims((int)n);
    if (!v)
        return set_all_outputs(ctx, &out);
    tide_op_index_values(v, out.dims, TIDE_MAX_RANK);
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < out.rank; i++) {
        if (out.dims[i] < -1 || (out.dims[i] == -1 && unknown >= 0))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "shape %s: sizes must be >= 0, with at most one -1",
                                    tide_op_format_values(out.dims, n, a, sizeof a));
        if (out.dims[i] == -1)
            unknown = i;
        else if (__builtin_mul_overflow(known, out.dims[i], &known))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "shape %s has too many elements",
                                    tide_op_format_values(out.dims, n, a, sizeof a));
    }
    int64_t in_n = known_elements(&in);
    if (unknown >= 0 && known == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot infer the -1 in shape %s: the other sizes multiply to 0",
                                tide_op_format_values(out.dims, n, a, sizeof a));
    if (unknown >= 0 && in_n >= 0) {
        if (in_n % known)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "cannot reshape a tensor of shape %s (%lld elements) into "
                                    "shape %s: %lld is not a multiple of %lld",
                                    SHAPE_STR(in, a), (long long)in_n,
                                    tide_op_format_values(out.dims, n, b, sizeof b), (long long)in_n,
                                    (long long)known);
        out.dims[unknown] = in_n / known;
    } else if (unknown < 0 && in_n >= 0 && in_n != known) {
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot reshape a tensor of shape %s (%lld elements) into shape %s "
                                "(%lld elements)",
                                SHAPE_STR(in, a), (long long)in_n, SHAPE_STR(out, b),
                                (long long)known);
    }
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Transpose */

static tide_status transpose_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 1, 1, "perm");
    if (st != TIDE_OK)
        return st;
    tide_shape x = tide_shape_input(ctx, 0);
    int64_t n = vector_length(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (x.rank >= 0 && n >= 0 && n != x.rank)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "perm has %lld entries but x has rank %d (shape %s)", (long long)n,
                                x.rank, SHAPE_STR(x, a));
    int rank = x.rank >= 0 ? x.rank : n > TIDE_MAX_RANK ? -1 : (int)n;
    tide_shape out = unknown_dims(rank);
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (v && rank >= 0) {
        int64_t perm[TIDE_MAX_RANK];
        tide_op_index_values(v, perm, TIDE_MAX_RANK);
        bool seen[TIDE_MAX_RANK] = {false};
        for (int i = 0; i < rank; i++) {
            if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
                return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                        "perm %s is not a permutation of 0..%d (x shape %s)",
                                        tide_op_format_values(perm, rank, a, sizeof a), rank - 1,
                                        SHAPE_STR(x, b));
            seen[perm[i]] = true;
            out.dims[i] = x.rank >= 0 ? x.dims[perm[i]] : -1;
        }
    } else if (rank <= 1) {
        out = x.rank >= 0 ? x : out;
    }
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Concat and Pack */

/* Merges the shapes of list inputs [first, first + n) into *out: same rank and, unless skip is
 * RANKS_ONLY, equal known dims except on dimension `skip` (-1: none). The messages name both
 * inputs. */
#define RANKS_ONLY (-2)
static tide_status merge_list_shapes(tide_shape_ctx *ctx, int first, int n, int skip, const char *extra,
                                     tide_shape *out)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    int ref = -1;                  /* the first input of known rank */
    int from[TIDE_MAX_RANK] = {0}; /* the input that gave out's known dim d */
    *out = tide_shape_unknown();
    for (int i = first; i < first + n; i++) {
        tide_shape s = tide_shape_input(ctx, i);
        if (s.rank < 0)
            continue;
        if (ref < 0) {
            ref = i;
            *out = s;
            for (int d = 0; d < s.rank; d++)
                from[d] = i;
            continue;
        }
        tide_shape r = tide_shape_input(ctx, ref);
        if (s.rank != r.rank)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "input %d has shape %s, of rank %d, but input %d has shape %s, "
                                    "of rank %d", i, SHAPE_STR(s, a), s.rank, ref, SHAPE_STR(r, b),
                                    r.rank);
        for (int d = 0; d < s.rank && skip != RANKS_ONLY; d++) {
            if (d == skip || s.dims[d] < 0)
                continue;
            if (out->dims[d] >= 0 && out->dims[d] != s.dims[d]) {
                tide_shape o = tide_shape_input(ctx, from[d]);
                return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                        "input %d has shape %s, which does not match input %d's "
                                        "shape %s in dimension %d%s", i, SHAPE_STR(s, a), from[d],
                                        SHAPE_STR(o, b), d, extra);
            }
            if (out->dims[d] < 0)
                from[d] = i;
            out->dims[d] = s.dims[d];
        }
    }
    return TIDE_OK;
}

/* Concatenation of the n values from input `first` on along the scalar input `axis_input`:
 * ConcatV2 (values first, the axis last) and the legacy Concat (the axis first). */
static tide_status concat_values_shape(tide_shape_ctx *ctx, int first, int n, int axis_input)
{
    if (n < 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s needs at least one value",
                                first ? "Concat" : "ConcatV2");
    tide_status st = expect_rank(ctx, axis_input, 0, first ? "concat_dim" : "axis");
    if (st != TIDE_OK)
        return st;
    const tide_tensor *v = tide_shape_input_value(ctx, axis_input);
    int64_t axis = 0;
    if (v)
        tide_op_index_values(v, &axis, 1);
    tide_shape out;
    char extra[64];
    /* First the ranks; with the axis unknown that is all that can be checked. */
    st = merge_list_shapes(ctx, first, n, RANKS_ONLY, "", &out);
    if (st != TIDE_OK || out.rank < 0)
        return st == TIDE_OK ? set_all_outputs(ctx, &out) : st;
    if (out.rank == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "cannot concatenate scalars (use Pack to stack them)");
    if (!v) {
        out = unknown_dims(out.rank);
        return set_all_outputs(ctx, &out);
    }
    if (!tide_array_normalize_axis(axis, out.rank, &axis))
        return axis_error(ctx, axis, out.rank, &out, "values");
    /* Merge again, now skipping only the concatenation axis. */
    snprintf(extra, sizeof extra, " (concatenating on axis %lld)", (long long)axis);
    st = merge_list_shapes(ctx, first, n, (int)axis, extra, &out);
    if (st != TIDE_OK)
        return st;
    int64_t sum = 0;
    for (int i = first; i < first + n && sum >= 0; i++) {
        tide_shape s = tide_shape_input(ctx, i);
        int64_t d = s.rank >= 0 ? s.dims[axis] : -1;
        if (d < 0)
            sum = -1;
        else if (__builtin_add_overflow(sum, d, &sum))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "concatenated size overflows");
    }
    out.dims[axis] = sum;
    return set_all_outputs(ctx, &out);
}

static tide_status concat_v2_shape(tide_shape_ctx *ctx)
{
    int n = tide_shape_num_inputs(ctx) - 1;
    return concat_values_shape(ctx, 0, n, n);
}

static tide_status concat_shape(tide_shape_ctx *ctx)
{
    return concat_values_shape(ctx, 1, tide_shape_num_inputs(ctx) - 1, 0);
}

static tide_status pack_shape(tide_shape_ctx *ctx)
{
    int n = tide_shape_num_inputs(ctx);
    int64_t axis = 0;
    tide_attrs_get_int(tide_shape_attrs(ctx), "axis", &axis);
    if (n < 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "Pack needs at least one value");
    tide_shape in;
    tide_status st = merge_list_shapes(ctx, 0, n, -1, "", &in);
    if (st != TIDE_OK || in.rank < 0)
        return st == TIDE_OK ? set_all_outputs(ctx, &in) : st;
    if (in.rank + 1 > TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "packing rank-%d values gives rank %d; at most %d is supported",
                                in.rank, in.rank + 1, TIDE_MAX_RANK);
    if (!tide_array_normalize_axis(axis, in.rank + 1, &axis))
        return axis_error(ctx, axis, in.rank + 1, &in, "the packed result of values");
    tide_shape out = in;
    out.rank = in.rank + 1;
    for (int d = in.rank; d > axis; d--)
        out.dims[d] = in.dims[d - 1];
    out.dims[axis] = n;
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Split and Unpack */

static tide_status split_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 0, 0, "axis");
    if (st != TIDE_OK)
        return st;
    tide_shape value = tide_shape_input(ctx, 1);
    const tide_tensor *v = tide_shape_input_value(ctx, 0);
    int64_t num = tide_shape_num_outputs(ctx), axis = 0;
    if (num < 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "num_split must be >= 1");
    if (value.rank < 0 || !v) {
        tide_shape out = unknown_dims(value.rank);
        return set_all_outputs(ctx, &out);
    }
    tide_op_index_values(v, &axis, 1);
    if (!tide_array_normalize_axis(axis, value.rank, &axis))
        return axis_error(ctx, axis, value.rank, &value, "value");
    tide_shape out = value;
    int64_t d = value.dims[axis];
    if (d >= 0 && d % num) {
        char a[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "dimension %lld of value (shape %s) has size %lld, which does not "
                                "split evenly into %lld pieces",
                                (long long)axis, SHAPE_STR(value, a), (long long)d, (long long)num);
    }
    out.dims[axis] = d >= 0 ? d / num : -1;
    return set_all_outputs(ctx, &out);
}

bool tide_array_split_sizes(const int64_t *sizes, int n, int64_t dim, int64_t *out, char *msg, size_t size)
{
    char buf[TIDE_OP_MSG_MAX / 2];
    int inferred = -1;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        out[i] = sizes[i];
        if (sizes[i] == -1 && inferred < 0) {
            inferred = i;
            continue;
        }
        if (sizes[i] < 0)
            return snprintf(msg, size, "size_splits %s may hold one -1 (a size inferred from the others) and "
                            "sizes >= 0 otherwise", tide_op_format_values(sizes, n, buf, sizeof buf)), false;
        if (__builtin_add_overflow(sum, sizes[i], &sum))
            return snprintf(msg, size, "size_splits %s add up to more than int64 holds",
                            tide_op_format_values(sizes, n, buf, sizeof buf)), false;
    }
    if (dim < 0)
        return true;
    if (inferred >= 0 && sum <= dim)
        out[inferred] = dim - sum;
    else if (sum != dim || inferred >= 0)
        return snprintf(msg, size, "size_splits %s %s the split dimension's size %lld",
                        tide_op_format_values(sizes, n, buf, sizeof buf),
                        inferred >= 0 ? "leave nothing to infer from" : "do not add up to", (long long)dim), false;
    return true;
}

/* SplitV(value, size_splits, split_dim): pieces of the given sizes along the axis. */
static tide_status split_v_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 2, 0, "split_dim");
    if (st == TIDE_OK)
        st = expect_rank(ctx, 1, 1, "size_splits");
    if (st != TIDE_OK)
        return st;
    tide_shape value = tide_shape_input(ctx, 0);
    const tide_tensor *axis_v = tide_shape_input_value(ctx, 2), *sizes_v = tide_shape_input_value(ctx, 1);
    int n = tide_shape_num_outputs(ctx);
    int64_t axis = 0;
    if (sizes_v && tide_tensor_num_elements(sizes_v) != n)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "size_splits has %lld entries but num_split is %d",
                                (long long)tide_tensor_num_elements(sizes_v), n);
    if (value.rank < 0 || !axis_v) {
        tide_shape out = unknown_dims(value.rank);
        return set_all_outputs(ctx, &out);
    }
    tide_op_index_values(axis_v, &axis, 1);
    if (!tide_array_normalize_axis(axis, value.rank, &axis))
        return axis_error(ctx, axis, value.rank, &value, "value");
    if (!sizes_v) {
        tide_shape out = value;
        out.dims[axis] = -1;
        return set_all_outputs(ctx, &out);
    }
    int64_t *sizes = malloc(2 * (size_t)n * sizeof *sizes), *resolved = sizes + n;
    if (!sizes)
        return tide_shape_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_op_index_values(sizes_v, sizes, n);
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX];
    tide_status st2 = TIDE_OK;
    if (!tide_array_split_sizes(sizes, n, value.dims[axis], resolved, msg, sizeof msg))
        st2 = tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s (value %s, split along dimension %lld)", msg,
                               SHAPE_STR(value, a), (long long)axis);
    for (int i = 0; i < n && st2 == TIDE_OK; i++) {
        tide_shape out = value;
        out.dims[axis] = resolved[i];
        tide_shape_set_output(ctx, i, &out);
    }
    free(sizes);
    return st2;
}

static tide_status unpack_shape(tide_shape_ctx *ctx)
{
    tide_shape value = tide_shape_input(ctx, 0);
    int64_t axis = 0, num = 0;
    tide_attrs_get_int(tide_shape_attrs(ctx), "axis", &axis);
    tide_attrs_get_int(tide_shape_attrs(ctx), "num", &num);
    if (value.rank < 0)
        return set_all_outputs(ctx, &value);
    char a[TIDE_SHAPE_STR_MAX];
    if (value.rank == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "cannot unpack a scalar");
    if (!tide_array_normalize_axis(axis, value.rank, &axis))
        return axis_error(ctx, axis, value.rank, &value, "value");
    if (value.dims[axis] >= 0 && value.dims[axis] != num)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "num=%lld but dimension %lld of value (shape %s) has size %lld",
                                (long long)num, (long long)axis, SHAPE_STR(value, a),
                                (long long)value.dims[axis]);
    tide_shape out = value;
    out.rank--;
    for (int d = (int)axis; d < out.rank; d++)
        out.dims[d] = value.dims[d + 1];
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Slice */

/* Checks begin[i]/size[i] against a known dim; sets *out to the slice's size. */
static tide_status slice_dim(tide_shape_ctx *ctx, const tide_shape *in, int i, const int64_t *b,
                             int64_t s, int64_t *out)
{
    char a[TIDE_SHAPE_STR_MAX];
    int64_t dim = in->rank >= 0 ? in->dims[i] : -1;
    if (s < -1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "size[%d] = %lld is negative (only -1, meaning \"to the end\", is "
                                "allowed)", i, (long long)s);
    *out = s;
    if (!b)
        return TIDE_OK;
    if (*b < 0 || (dim >= 0 && *b > dim))
        return tide_shape_error(ctx, TIDE_OUT_OF_RANGE,
                                "begin[%d] = %lld is out of range for dimension %d of input "
                                "shape %s", i, (long long)*b, i, tide_shape_format(in, a, sizeof a));
    if (dim < 0)
        return TIDE_OK;
    if (s == -1)
        *out = dim - *b;
    else if (s > dim - *b)
        return tide_shape_error(ctx, TIDE_OUT_OF_RANGE,
                                "size[%d] = %lld goes past the end of dimension %d: begin %lld + "
                                "size %lld > %lld (input shape %s)", i, (long long)s, i,
                                (long long)*b, (long long)s, (long long)dim,
                                tide_shape_format(in, a, sizeof a));
    return TIDE_OK;
}

static tide_status slice_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 1, 1, "begin");
    if (st == TIDE_OK)
        st = expect_rank(ctx, 2, 1, "size");
    if (st != TIDE_OK)
        return st;
    tide_shape in = tide_shape_input(ctx, 0);
    int64_t nb = vector_length(ctx, 1), ns = vector_length(ctx, 2);
    char a[TIDE_SHAPE_STR_MAX];
    if ((nb >= 0 && ns >= 0 && nb != ns) || (in.rank >= 0 && nb >= 0 && nb != in.rank) ||
        (in.rank >= 0 && ns >= 0 && ns != in.rank))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "begin has %lld entries and size %lld, but the input has rank %d "
                                "(shape %s)", (long long)nb, (long long)ns, in.rank,
                                SHAPE_STR(in, a));
    int rank = in.rank >= 0 ? in.rank : nb >= 0 ? (int)nb : (int)ns;
    if (rank > TIDE_MAX_RANK)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "begin has %d entries; at most %d "
                                "dimensions are supported", rank, TIDE_MAX_RANK);
    tide_shape out = unknown_dims(rank);
    const tide_tensor *bv = tide_shape_input_value(ctx, 1), *sv = tide_shape_input_value(ctx, 2);
    int64_t begin[TIDE_MAX_RANK], size[TIDE_MAX_RANK];
    if (bv)
        tide_op_index_values(bv, begin, TIDE_MAX_RANK);
    if (sv)
        tide_op_index_values(sv, size, TIDE_MAX_RANK);
    for (int i = 0; i < rank && (bv || sv); i++) {
        st = slice_dim(ctx, &in, i, bv ? &begin[i] : NULL, sv ? size[i] : -1, &out.dims[i]);
        if (st != TIDE_OK)
            return st;
    }
    if (!sv) /* begin alone (checked above) fixes no size */
        out = unknown_dims(rank);
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- StridedSlice */

#define SS_NEW (-1)
#define SS_SHRUNK (-2)

typedef struct ss_dense {
    int rank;
    int64_t begin[TIDE_MAX_RANK], end[TIDE_MAX_RANK], stride[TIDE_MAX_RANK];
    uint64_t begin_mask, end_mask, shrink_mask;
    int gather[TIDE_SS_MAX_SPEC + TIDE_MAX_RANK]; /* final dims: a dense dim, SS_NEW, SS_SHRUNK */
    int num_gather;
} ss_dense;

/* Writes a message for the caller to report; returns code. */
__attribute__((format(printf, 4, 5)))
static tide_status fail_msg(char *msg, size_t size, tide_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return code;
}

/* Expands the sparse spec (with its ellipsis, or an implicit one at the end) to one entry per
 * input dimension (TensorFlow's BuildDenseSpec). */
static tide_status ss_build_dense(int n, const int64_t *begin, const int64_t *end,
                                  const int64_t *strides, const uint64_t *m, ss_dense *d,
                                  char *msg, size_t size)
{
    uint64_t ellipsis = m[SS_ELLIPSIS] & ((1ull << n) - 1); /* n <= TIDE_SS_MAX_SPEC */
    if (ellipsis & (ellipsis - 1))
        return fail_msg(msg, size, TIDE_INVALID_ARGUMENT,
                        "ellipsis_mask %lld has more than one ellipsis", (long long)m[SS_ELLIPSIS]);
    int sparse = n;
    if (!ellipsis)
        ellipsis = 1ull << sparse++; /* an implicit ellipsis after the last entry */
    int after = 0;
    for (int i = 0; i < n; i++)
        if ((1ull << i) > ellipsis && (m[SS_NEW_AXIS] >> i & 1) && !(ellipsis >> i & 1))
            after++;
    int full = 0;
    d->num_gather = 0;
    for (int i = 0; i < sparse; i++) {
        if (ellipsis >> i & 1) {
            int next = d->rank - (sparse - i) + 1 + after;
            for (next = next < d->rank ? next : d->rank; full < next; full++) {
                d->begin[full] = d->end[full] = 0;
                d->stride[full] = 1;
                d->begin_mask |= 1ull << full;
                d->end_mask |= 1ull << full;
                d->gather[d->num_gather++] = full;
            }
        } else if (m[SS_NEW_AXIS] >> i & 1) {
            d->gather[d->num_gather++] = SS_NEW;
        } else {
            if (full >= d->rank)
                return fail_msg(msg, size, TIDE_INVALID_ARGUMENT,
                                "the slice spec has more entries than the input has dimensions "
                                "(%d)", d->rank);
            if (strides[i] == 0)
                return fail_msg(msg, size, TIDE_INVALID_ARGUMENT,
                                "strides[%d] must be non-zero", i);
            bool shrink = m[SS_SHRINK] >> i & 1;
            if (shrink && strides[i] < 0)
                return fail_msg(msg, size, TIDE_INVALID_ARGUMENT,
                                "strides[%d] = %lld: a shrunk axis (an index, not a range) needs "
                                "a positive stride", i, (long long)strides[i]);
            d->begin[full] = begin ? begin[i] : 0;
            d->end[full] = end ? end[i] : 0;
            d->stride[full] = strides[i];
            d->begin_mask |= (m[SS_BEGIN] >> i & 1) << full;
            d->end_mask |= (m[SS_END] >> i & 1) << full;
            d->shrink_mask |= (uint64_t)shrink << full;
            d->gather[d->num_gather++] = shrink ? SS_SHRUNK : full;
            full++;
        }
    }
    return TIDE_OK;
}

static int64_t clamp(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Resolves dense dimension i of known size dim: the first index read (*b, when `known`: begin and
 * end are given) and the slice's size (-1 when it depends on unknown begin/end). */
static tide_status ss_resolve_dim(const ss_dense *d, int i, int64_t dim, bool known, int64_t *b,
                                  int64_t *size, char *msg, size_t msg_size)
{
    int64_t stride = d->stride[i];
    bool bm = d->begin_mask >> i & 1, em = d->end_mask >> i & 1;
    if (d->shrink_mask >> i & 1) {
        *size = 1;
        if (!known)
            return TIDE_OK;
        *b = d->begin[i] < 0 ? dim + d->begin[i] : d->begin[i];
        if (*b < 0 || *b >= dim)
            return fail_msg(msg, msg_size, TIDE_OUT_OF_RANGE,
                            "index %lld is out of bounds for dimension %d of size %lld",
                            (long long)d->begin[i], i, (long long)dim);
        return TIDE_OK;
    }
    int64_t len;
    if (known) {
        /* Python's rules: negative indices count from the end, then clamp to the valid range. */
        int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
        int64_t begin = d->begin[i] < 0 ? dim + d->begin[i] : d->begin[i];
        int64_t end = d->end[i] < 0 ? dim + d->end[i] : d->end[i];
        begin = bm ? (stride > 0 ? lo : hi) : clamp(begin, lo, hi);
        end = em ? (stride > 0 ? hi : lo) : clamp(end, lo, hi);
        len = end - begin;
        *b = begin;
    } else if (bm && em) {
        len = stride > 0 ? dim : -dim;
    } else {
        *size = -1;
        return TIDE_OK;
    }
    *size = len == 0 || (len < 0) != (stride < 0) ? 0 : len / stride + (len % stride != 0);
    return TIDE_OK;
}

/* Reads the five mask attrs in SS_* order; shared with the kernel's init (array_ops.h). */
void tide_array_ss_masks(const tide_attrs *attrs, int64_t masks[TIDE_SS_NUM_MASKS])
{
    static const char *const names[TIDE_SS_NUM_MASKS] = {
        "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    for (int i = 0; i < TIDE_SS_NUM_MASKS; i++)
        tide_attrs_get_int(attrs, names[i], &masks[i]);
}

/* StridedSlice's spec (n entries of begin/end/strides and the five masks) resolved against the
 * input shape `in` (known rank; dims may be -1), as TensorFlow's ValidateStridedSliceOp does.
 * begin and end may be NULL when unknown. Fills, per input dimension, dense_begin (the first index
 * read; meaningful where the size is known and > 0) and dense_stride, the processing shape (one
 * size per input dimension, -1 where unknown) and the final shape (new axes added, shrunk axes
 * removed). On failure returns the code with the message in msg. The kernel calls it too
 * (array_ops.h). */
tide_status tide_array_strided_slice(const tide_shape *in, int64_t n, const int64_t *begin,
                                     const int64_t *end, const int64_t *strides,
                                     const int64_t masks[TIDE_SS_NUM_MASKS], int64_t *dense_begin,
                                     int64_t *dense_stride, tide_shape *processing,
                                     tide_shape *final, char *msg, size_t msg_size)
{
    if (n < 0 || n > TIDE_SS_MAX_SPEC)
        return fail_msg(msg, msg_size, TIDE_INVALID_ARGUMENT,
                        "the slice spec has %lld entries; at most %d are supported", (long long)n,
                        TIDE_SS_MAX_SPEC);
    uint64_t m[TIDE_SS_NUM_MASKS];
    for (int i = 0; i < TIDE_SS_NUM_MASKS; i++)
        m[i] = (uint64_t)masks[i];
    ss_dense d = {.rank = in->rank};
    tide_status st = ss_build_dense((int)n, begin, end, strides, m, &d, msg, msg_size);
    if (st != TIDE_OK)
        return st;
    *processing = unknown_dims(in->rank);
    for (int i = 0; i < in->rank; i++) {
        bool known = begin && end && in->dims[i] >= 0;
        dense_begin[i] = 0;
        dense_stride[i] = d.stride[i];
        if (in->dims[i] < 0 && !(d.shrink_mask >> i & 1))
            continue;
        st = ss_resolve_dim(&d, i, in->dims[i], known, &dense_begin[i], &processing->dims[i], msg,
                            msg_size);
        if (st != TIDE_OK)
            return st;
    }
    *final = tide_shape_scalar();
    for (int g = 0; g < d.num_gather; g++) {
        if (d.gather[g] == SS_SHRUNK)
            continue;
        if (final->rank == TIDE_MAX_RANK)
            return fail_msg(msg, msg_size, TIDE_INVALID_ARGUMENT,
                            "the slice has more than %d dimensions", TIDE_MAX_RANK);
        final->dims[final->rank++] = d.gather[g] == SS_NEW ? 1 : processing->dims[d.gather[g]];
    }
    return TIDE_OK;
}

static tide_status strided_slice_shape(tide_shape_ctx *ctx)
{
    static const char *const names[] = {"begin", "end", "strides"};
    tide_status st = TIDE_OK;
    for (int i = 1; i <= 3 && st == TIDE_OK; i++)
        st = expect_rank(ctx, i, 1, names[i - 1]);
    if (st != TIDE_OK)
        return st;
    int64_t len[3];
    for (int i = 0; i < 3; i++)
        len[i] = vector_length(ctx, i + 1);
    for (int i = 1; i < 3; i++)
        if (len[0] >= 0 && len[i] >= 0 && len[i] != len[0])
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "begin, end and strides must have the same length, got %lld, "
                                    "%lld and %lld", (long long)len[0], (long long)len[1],
                                    (long long)len[2]);
    tide_shape in = tide_shape_input(ctx, 0);
    const tide_tensor *bv = tide_shape_input_value(ctx, 1), *ev = tide_shape_input_value(ctx, 2),
                      *sv = tide_shape_input_value(ctx, 3);
    tide_shape unknown = tide_shape_unknown();
    if (in.rank < 0 || !sv) /* without the strides nothing is known, not even the rank */
        return set_all_outputs(ctx, &unknown);
    int64_t begin[TIDE_SS_MAX_SPEC], end[TIDE_SS_MAX_SPEC], strides[TIDE_SS_MAX_SPEC];
    int64_t masks[TIDE_SS_NUM_MASKS] = {0};
    tide_array_ss_masks(tide_shape_attrs(ctx), masks);
    int64_t n = tide_op_index_values(sv, strides, TIDE_SS_MAX_SPEC);
    if (bv)
        tide_op_index_values(bv, begin, TIDE_SS_MAX_SPEC);
    if (ev)
        tide_op_index_values(ev, end, TIDE_SS_MAX_SPEC);
    int64_t dense_begin[TIDE_MAX_RANK], dense_stride[TIDE_MAX_RANK];
    tide_shape processing, out;
    char msg[256], a[TIDE_SHAPE_STR_MAX];
    st = tide_array_strided_slice(&in, n, bv ? begin : NULL,
                                  ev ? end : NULL, strides, masks, dense_begin, dense_stride,
                                  &processing, &out, msg, sizeof msg);
    if (st != TIDE_OK)
        return tide_shape_error(ctx, st, "%s (input shape %s)", msg, SHAPE_STR(in, a));
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Tile */

static tide_status tile_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 1, 1, "multiples");
    if (st != TIDE_OK)
        return st;
    tide_shape in = tide_shape_input(ctx, 0);
    int64_t n = vector_length(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (in.rank >= 0 && n >= 0 && n != in.rank)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "multiples has %lld entries but the input has rank %d (shape %s)",
                                (long long)n, in.rank, SHAPE_STR(in, a));
    int rank = in.rank >= 0 ? in.rank : n > TIDE_MAX_RANK ? -1 : (int)n;
    tide_shape out = unknown_dims(rank);
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (!v || rank < 0)
        return set_all_outputs(ctx, &out);
    int64_t m[TIDE_MAX_RANK];
    tide_op_index_values(v, m, TIDE_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        int64_t d = in.rank >= 0 ? in.dims[i] : -1;
        if (m[i] < 0)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "multiples %s has a negative entry (input shape %s)",
                                    tide_op_format_values(m, rank, a, sizeof a), SHAPE_STR(in, b));
        if (m[i] == 0 || d == 0)
            out.dims[i] = 0;
        else if (d > 0 && __builtin_mul_overflow(d, m[i], &out.dims[i]))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "tiling shape %s by %s overflows", SHAPE_STR(in, a),
                                    tide_op_format_values(m, rank, b, sizeof b));
    }
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- Pad and PadV2 */

static tide_status pad_shape(tide_shape_ctx *ctx)
{
    tide_status st = expect_rank(ctx, 1, 2, "paddings");
    if (st == TIDE_OK && tide_shape_num_inputs(ctx) > 2)
        st = expect_rank(ctx, 2, 0, "constant_values");
    if (st != TIDE_OK)
        return st;
    tide_shape in = tide_shape_input(ctx, 0), p = tide_shape_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (p.rank == 2 && ((p.dims[1] >= 0 && p.dims[1] != 2) ||
                        (in.rank >= 0 && p.dims[0] >= 0 && p.dims[0] != in.rank)))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "paddings must have shape [rank, 2]; got %s for an input of "
                                "shape %s", SHAPE_STR(p, a), SHAPE_STR(in, b));
    int rank = in.rank;
    if (rank < 0 && p.rank == 2 && p.dims[0] <= TIDE_MAX_RANK)
        rank = (int)p.dims[0]; /* -1 if unknown too */
    tide_shape out = unknown_dims(rank);
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (!v || rank < 0)
        return set_all_outputs(ctx, &out);
    int64_t pad[2 * TIDE_MAX_RANK];
    tide_op_index_values(v, pad, 2 * TIDE_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        int64_t d = in.rank >= 0 ? in.dims[i] : -1;
        if (pad[2 * i] < 0 || pad[2 * i + 1] < 0)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                    "paddings %s has a negative entry (input shape %s)",
                                    tide_op_format_values(pad, 2 * rank, a, sizeof a),
                                    SHAPE_STR(in, b));
        if (d >= 0 && (__builtin_add_overflow(d, pad[2 * i], &out.dims[i]) ||
                       __builtin_add_overflow(out.dims[i], pad[2 * i + 1], &out.dims[i])))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "padding shape %s by %s overflows",
                                    SHAPE_STR(in, a),
                                    tide_op_format_values(pad, 2 * rank, b, sizeof b));
    }
    return set_all_outputs(ctx, &out);
}

/* ---------------------------------------------------------------- registration */

#define INDEX_TYPES "{int32, int64} = int32"
#define INDEX_TYPES64 "{int32, int64} = int64"
#define MOVE_DOC                                                                           \
    " Every dtype is supported and values are moved bit for bit (integers and NaNs unchanged, "  \
    "strings copied deeply)."
#define DTYPES_DOC MOVE_DOC " Index inputs may be int32 or int64."

static const tide_op_spec array_ops[] = {
    {
        .name = "Reshape",
        .inputs = {"tensor: T", "shape: Tshape"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tshape: " INDEX_TYPES},
        .shape_fn = reshape_shape,
        .doc = "Returns tensor with its elements, in row-major order, arranged in the given shape: "
               "a view sharing tensor's buffer, never a copy. shape is a vector of at most 8 "
               "sizes, one of which may be -1 (inferred from the element count); the element "
               "counts must agree. A size below -1, two -1s, a -1 next to sizes multiplying to 0 "
               "and a count mismatch are InvalidArgument errors." DTYPES_DOC,
    },
    {
        .name = "Transpose",
        .inputs = {"x: T", "perm: Tperm"},
        .outputs = {"y: T"},
        .attrs = {"T: alltypes", "Tperm: " INDEX_TYPES},
        .shape_fn = transpose_shape,
        .doc = "Permutes the dimensions of x: dimension i of y is dimension perm[i] of x. perm "
               "must be a permutation of 0..rank-1 (no negative entries); anything else is an "
               "InvalidArgument error. A permutation that moves only size-1 dimensions returns a "
               "view, not a copy." DTYPES_DOC,
    },
    {
        .name = "ConcatV2",
        .inputs = {"values: N * T", "axis: Tidx"},
        .outputs = {"output: T"},
        .attrs = {"N: int >= 1", "T: alltypes", "Tidx: " INDEX_TYPES},
        .shape_fn = concat_v2_shape,
        .doc = "Concatenates the N values along dimension axis (the axis comes last, as tf.concat "
               "emits it). axis is a scalar in [-rank, rank) (negative counts from the end; outside "
               "is OutOfRange). The values must have the same rank (not 0) and the same sizes in "
               "every other dimension, else InvalidArgument naming the input and both shapes. With "
               "N = 1 the input itself is returned." DTYPES_DOC,
        .tf_differences = "N = 1 is accepted (TensorFlow asks for N >= 2).",
        .alias = "concat",
    },
    {
        .name = "Concat",
        .inputs = {"concat_dim: int32", "values: N * T"},
        .outputs = {"output: T"},
        .attrs = {"N: int >= 1", "T: alltypes"},
        .shape_fn = concat_shape,
        .doc = "Concatenates the N values along dimension concat_dim: TensorFlow's legacy Concat, "
               "whose axis comes FIRST (an int32 scalar); otherwise as ConcatV2, which is what "
               "tf.concat emits and what Lua's concat(values, axis) builds." DTYPES_DOC,
        .tf_differences = "N = 1 is accepted (TensorFlow asks for N >= 2).",
    },
    {
        .name = "Split",
        .inputs = {"axis: int32", "value: T"},
        .outputs = {"output: num_split * T"},
        .attrs = {"num_split: int >= 1", "T: alltypes"},
        .shape_fn = split_shape,
        .doc = "Splits value into num_split equal pieces along dimension axis (an int32 scalar "
               "in [-rank, rank), else OutOfRange). The dimension's size must be a multiple of "
               "num_split (else InvalidArgument). Pieces of a split along the outermost "
               "dimension (or after leading size-1 dimensions) are views." MOVE_DOC,
    },
    {
        .name = "SplitV",
        .inputs = {"value: T", "size_splits: Tlen", "split_dim: int32"},
        .outputs = {"output: num_split * T"},
        .attrs = {"num_split: int >= 1", "T: alltypes", "Tlen: " INDEX_TYPES64},
        .shape_fn = split_v_shape,
        .doc = "Splits value along dimension split_dim (an int32 scalar in [-rank, rank), else "
               "OutOfRange) into num_split pieces of the sizes size_splits gives (a vector of "
               "num_split entries). One size may be -1: it is what the others leave. The sizes must "
               "add up to the dimension's size; a second -1, another negative size or sizes that do "
               "not add up are InvalidArgument naming the sizes and the shape. Pieces of a split "
               "along the outermost dimension (or after leading size-1 dimensions) are views." MOVE_DOC,
    },
    {
        .name = "Slice",
        .inputs = {"input: T", "begin: Index", "size: Index"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Index: " INDEX_TYPES},
        .shape_fn = slice_shape,
        .doc = "Extracts the block of input starting at begin with the given size: output[i] = "
               "input[begin + i]. begin and size are vectors with one entry per dimension; size "
               "-1 means everything from begin to the end. begin outside [0, dim] or begin + "
               "size past the end is OutOfRange; a size below -1 or vectors of the wrong length "
               "are InvalidArgument. A contiguous block (only the first dimension sliced, or "
               "leading dimensions of size 1) is returned as a view." DTYPES_DOC,
    },
    {
        .name = "StridedSlice",
        .inputs = {"input: T", "begin: Index", "end: Index", "strides: Index"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Index: " INDEX_TYPES, "begin_mask: int = 0", "end_mask: int = 0",
                  "ellipsis_mask: int = 0", "new_axis_mask: int = 0", "shrink_axis_mask: int = 0"},
        .shape_fn = strided_slice_shape,
        .doc = "NumPy-style slicing, input[begin:end:strides] per entry of the spec, with "
               "TensorFlow's masks: bit i of begin_mask/end_mask ignores begin[i]/end[i] (the "
               "widest range), of ellipsis_mask makes entry i an ellipsis (at most one), of "
               "new_axis_mask inserts a size-1 dimension, of shrink_axis_mask takes the single "
               "index begin[i] and drops the dimension. Without an ellipsis one is implied at the "
               "end. Negative indices count from the end and out-of-range ones are clamped, as in "
               "Python; strides may be negative, never 0. A shrunk index out of bounds is "
               "OutOfRange; a zero stride, a negative stride on a shrunk axis, two ellipses, more "
               "entries than dimensions or vectors of different lengths are InvalidArgument. "
               "Contiguous results are views." DTYPES_DOC,
    },
    {
        .name = "Pack",
        .inputs = {"values: N * T"},
        .outputs = {"output: T"},
        .attrs = {"N: int >= 1", "T: alltypes", "axis: int = 0"},
        .shape_fn = pack_shape,
        .doc = "Stacks the N values, which must all have the same shape (else InvalidArgument "
               "naming the input), into one tensor of one more dimension, inserted at axis: "
               "axis is in [-(rank+1), rank+1) (else OutOfRange)." MOVE_DOC,
    },
    {
        .name = "Unpack",
        .inputs = {"value: T"},
        .outputs = {"output: num * T"},
        .attrs = {"num: int >= 0", "T: alltypes", "axis: int = 0"},
        .shape_fn = unpack_shape,
        .doc = "Unstacks value along dimension axis (in [-rank, rank), else OutOfRange) into num "
               "tensors of one less dimension; num must equal that dimension's size and value "
               "cannot be a scalar (else InvalidArgument). Pieces of the outermost dimension "
               "are views." MOVE_DOC,
    },
    {
        .name = "Tile",
        .inputs = {"input: T", "multiples: Tmultiples"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tmultiples: " INDEX_TYPES},
        .shape_fn = tile_shape,
        .doc = "Repeats input multiples[i] times along dimension i: output[j] = input[j mod "
               "dims]. multiples has one non-negative entry per dimension; a negative entry, a "
               "wrong length or an output size that overflows is InvalidArgument." DTYPES_DOC,
    },
    {
        .name = "Pad",
        .inputs = {"input: T", "paddings: Tpaddings"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tpaddings: " INDEX_TYPES},
        .shape_fn = pad_shape,
        .doc = "Pads input with zeros (empty strings, false): paddings is a [rank, 2] matrix and "
               "dimension i gets paddings[i][0] values before and paddings[i][1] after. A "
               "negative padding or paddings of the wrong shape is InvalidArgument." DTYPES_DOC,
    },
    {
        .name = "PadV2",
        .inputs = {"input: T", "paddings: Tpaddings", "constant_values: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tpaddings: " INDEX_TYPES},
        .shape_fn = pad_shape,
        .doc = "Pad with the fill value given by the scalar constant_values instead of zero "
               "(a non-scalar is InvalidArgument); otherwise as Pad." DTYPES_DOC,
    },
};

static void register_array_ops(void)
{
    for (size_t i = 0; i < sizeof array_ops / sizeof array_ops[0]; i++)
        tide_op_register(&array_ops[i]);
}
TIDE_REGISTER(register_array_ops)
