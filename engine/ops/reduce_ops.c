/* reduce_ops.c — definitions of the reductions: Sum, Mean, Max, Min, Prod (over a set of axes given
 * as a tensor) and ArgMax, ArgMin (over one axis), with TensorFlow 1.x signatures.
 *
 * Shape functions: when the axes are a graph-time constant the output shape is exact (with
 * keep_dims); otherwise it is as precise as the shapes allow: with keep_dims the input's rank (size-1
 * dims stay 1), without it rank - k when the axes are a vector of known length k (axes may not
 * repeat, so k axes remove k dims), else unknown. What is already known to be wrong is rejected with
 * the shapes named: axes of rank > 1, an axis out of range, a repeated axis, more axes than dims, an
 * ArgMax over an empty dimension. The kernels (kernels/cpu/reduce.c) check the same at run time,
 * with the same messages. */
#include <stdio.h>
#include <string.h>

#include "../tide_op.h"
#include "op_util.h"
#include "reduce_ops.h"

/* Checks the constant axes against an input of known rank; sets bit a of *mask for each axis a.
 * The kernels check their axes with it too (reduce_ops.h). */
bool tide_reduce_axes_mask(const tide_shape *in, const tide_tensor *axes, unsigned *mask, char *msg,
                           size_t size)
{
    char sb[TIDE_SHAPE_STR_MAX];
    int rank = in->rank;
    *mask = 0;
    for (int64_t i = 0; i < tide_tensor_num_elements(axes); i++) {
        int64_t a = tide_op_int_at(axes, i);
        if (a < -rank || a >= rank)
            return snprintf(msg, size,
                            "axis %lld is out of range for an input of rank %d (shape %s); "
                            "expected an axis in [%d, %d)",
                            (long long)a, rank, tide_shape_format(in, sb, sizeof sb), -rank, rank), false;
        int n = (int)(a < 0 ? a + rank : a);
        if (*mask & (1u << n))
            return snprintf(msg, size,
                            "axis %lld is repeated in the reduction axes (it is axis %d of the "
                            "rank-%d input of shape %s)",
                            (long long)a, n, rank, tide_shape_format(in, sb, sizeof sb)), false;
        *mask |= 1u << n;
    }
    return true;
}

/* Checks ArgMax/ArgMin's dimension a against an input of known rank >= 1; *axis receives it
 * normalised. The kernels check their dimension with it too (reduce_ops.h). */
bool tide_reduce_arg_axis(const tide_shape *in, int64_t a, int *axis, char *msg, size_t size)
{
    char sb[TIDE_SHAPE_STR_MAX];
    if (a < -in->rank || a >= in->rank)
        return snprintf(msg, size,
                        "dimension %lld is out of range for an input of rank %d (shape %s); "
                        "expected a dimension in [%d, %d)",
                        (long long)a, in->rank, tide_shape_format(in, sb, sizeof sb), -in->rank,
                        in->rank), false;
    *axis = (int)(a < 0 ? a + in->rank : a);
    if (in->dims[*axis] == 0)
        return snprintf(msg, size,
                        "dimension %d of the input (shape %s) is empty: there is no index to return",
                        *axis, tide_shape_format(in, sb, sizeof sb)), false;
    return true;
}

/* Output shape when the axes are not known at graph time. */
static tide_status unknown_axes_shape(tide_shape_ctx *ctx, const tide_shape *in, const tide_shape *ax,
                                      bool keep_dims, tide_shape *out)
{
    *out = tide_shape_unknown();
    if (in->rank < 0)
        return TIDE_OK;
    if (keep_dims) {
        *out = *in;
        for (int i = 0; i < in->rank; i++)
            out->dims[i] = in->dims[i] == 1 ? 1 : -1;
        return TIDE_OK;
    }
    int64_t k = ax->rank == 0 ? 1 : ax->rank == 1 ? ax->dims[0] : -1;
    if (k < 0)
        return TIDE_OK;
    if (k > in->rank) {
        char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "%lld reduction axes (shape %s) cannot all be distinct axes of an input "
                                "of rank %d (shape %s)",
                                (long long)k, tide_shape_format(ax, sa, sizeof sa), in->rank,
                                tide_shape_format(in, sb, sizeof sb));
    }
    if (k == 0) {
        *out = *in;
        return TIDE_OK;
    }
    out->rank = in->rank - (int)k;
    for (int i = 0; i < out->rank; i++)
        out->dims[i] = -1;
    return TIDE_OK;
}

static tide_status reduce_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), ax = tide_shape_input(ctx, 1), out;
    bool keep_dims = false;
    tide_attrs_get_bool(tide_shape_attrs(ctx), "keep_dims", &keep_dims);
    if (ax.rank > 1) {
        char sa[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "reduction_indices must be a scalar or a vector, got shape %s",
                                tide_shape_format(&ax, sa, sizeof sa));
    }
    const tide_tensor *axes = tide_shape_input_value(ctx, 1);
    if (!axes || in.rank < 0) {
        tide_status st = unknown_axes_shape(ctx, &in, &ax, keep_dims, &out);
        if (st == TIDE_OK)
            tide_shape_set_output(ctx, 0, &out);
        return st;
    }
    unsigned mask;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_reduce_axes_mask(&in, axes, &mask, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    out.rank = 0;
    for (int i = 0; i < in.rank; i++) {
        if (!(mask & (1u << i)))
            out.dims[out.rank++] = in.dims[i];
        else if (keep_dims)
            out.dims[out.rank++] = 1;
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

static tide_status arg_reduce_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), dim = tide_shape_input(ctx, 1), out = tide_shape_unknown();
    char sa[TIDE_SHAPE_STR_MAX];
    if (dim.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "dimension must be a scalar, got shape %s",
                                tide_shape_format(&dim, sa, sizeof sa));
    if (in.rank == 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "the input must have rank >= 1 to reduce along a dimension, got a scalar");
    const tide_tensor *d = tide_shape_input_value(ctx, 1);
    if (in.rank > 0 && d && tide_tensor_num_elements(d) == 1) {
        int n;
        char msg[TIDE_OP_MSG_MAX];
        if (!tide_reduce_arg_axis(&in, tide_op_int_at(d, 0), &n, msg, sizeof msg))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
        out.rank = 0;
        for (int i = 0; i < in.rank; i++)
            if (i != n)
                out.dims[out.rank++] = in.dims[i];
    } else if (in.rank > 0) {
        out.rank = in.rank - 1;
        for (int i = 0; i < out.rank; i++)
            out.dims[i] = -1;
    }
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

#define REDUCE_AXES_DOC                                                                            \
    " reduction_indices (int32 or int64) is a scalar or a vector of axes; negative axes count from " \
    "the end; an empty vector reduces nothing (the output equals the input). An axis out of range "  \
    "or given twice is an INVALID_ARGUMENT error. With keep_dims the reduced axes stay as size-1 "   \
    "dims."

static void register_reduce(const char *name, const char *types, const char *doc)
{
    char t_attr[64];
    snprintf(t_attr, sizeof t_attr, "T: %s", types);
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"input: T", "reduction_indices: Tidx"},
        .outputs = {"output: T"},
        .attrs = {"keep_dims: bool = false", t_attr, "Tidx: {int32, int64} = int32"},
        .shape_fn = reduce_shape,
        .doc = doc,
    });
}

static void register_arg_reduce(const char *name, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"input: T", "dimension: Tidx"},
        .outputs = {"output: output_type"},
        .attrs = {"T: realnumbertype", "Tidx: {int32, int64} = int32",
                  "output_type: {int32, int64} = int64"},
        .shape_fn = arg_reduce_shape,
        .doc = doc,
    });
}

static void register_reduce_ops(void)
{
    register_reduce(
        "Sum", "numbertype",
        "Sums the elements of input along the given axes." REDUCE_AXES_DOC
        " An empty reduction gives 0. Integer sums wrap around modulo 2^bits (two's complement), as "
        "in TensorFlow; float32 and complex64 sums accumulate in double, float16/bfloat16 in float32 "
        "via double.");
    register_reduce(
        "Prod", "numbertype",
        "Multiplies the elements of input along the given axes." REDUCE_AXES_DOC
        " An empty reduction gives 1. Integer products wrap around modulo 2^bits (two's complement); "
        "float32 and complex64 products accumulate in double.");
    register_reduce(
        "Mean", "numbertype",
        "Averages the elements of input along the given axes." REDUCE_AXES_DOC
        " Floats: the sum (accumulated in double) divided by the count; an empty reduction gives NaN. "
        "Integers: the exact sum (it never overflows: 128-bit for int32 and int64) divided by the "
        "count, truncated toward zero; an empty reduction of integers is an INVALID_ARGUMENT error "
        "(there is no integer NaN).");
    register_reduce(
        "Max", "realnumbertype",
        "The maximum of the elements of input along the given axes." REDUCE_AXES_DOC
        " NaN propagates: a reduction that meets a NaN gives NaN. An empty reduction gives the "
        "lowest value of the dtype (-inf for floats, e.g. -2147483648 for int32), as in TensorFlow.");
    register_reduce(
        "Min", "realnumbertype",
        "The minimum of the elements of input along the given axes." REDUCE_AXES_DOC
        " NaN propagates: a reduction that meets a NaN gives NaN. An empty reduction gives the "
        "highest value of the dtype (+inf for floats, e.g. 2147483647 for int32), as in TensorFlow.");
    static const struct {
        const char *name, *doc;
    } logical[] = {
        {"All", "The logical AND of the elements of input along the given axes (any non-zero byte is "
                "true; the results are 0 or 1)." REDUCE_AXES_DOC " An empty reduction gives true."},
        {"Any", "The logical OR of the elements of input along the given axes (any non-zero byte is "
                "true; the results are 0 or 1)." REDUCE_AXES_DOC " An empty reduction gives false."},
    };
    for (int i = 0; i < 2; i++)
        tide_op_register(&(tide_op_spec){
            .name = logical[i].name,
            .inputs = {"input: bool", "reduction_indices: Tidx"},
            .outputs = {"output: bool"},
            .attrs = {"keep_dims: bool = false", "Tidx: {int32, int64} = int32"},
            .shape_fn = reduce_shape,
            .doc = logical[i].doc,
        });
    register_arg_reduce(
        "ArgMax",
        "The index of the largest element of input along dimension (a scalar int32 or int64, "
        "negative counts from the end); the output drops that dimension. Ties give the smallest "
        "index; a NaN counts as larger than any number (the first NaN's index is returned). The "
        "dimension must be in range and not empty (INVALID_ARGUMENT otherwise); with output_type "
        "int32 its size must fit in int32.");
    register_arg_reduce(
        "ArgMin",
        "The index of the smallest element of input along dimension (a scalar int32 or int64, "
        "negative counts from the end); the output drops that dimension. Ties give the smallest "
        "index; a NaN counts as smaller than any number (the first NaN's index is returned). The "
        "dimension must be in range and not empty (INVALID_ARGUMENT otherwise); with output_type "
        "int32 its size must fit in int32.");
}
TIDE_REGISTER(register_reduce_ops)
