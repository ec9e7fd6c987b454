/* reverse_ops.c — definitions of the ops that reflect a tensor, TensorFlow 1.x's names and semantics:
 * ReverseV2 (reverse along some dimensions), MirrorPad (pad with the input's own reflection) and
 * MirrorPadGrad (its gradient: the reflected parts summed back), and the checks of reverse_ops.h that
 * their shape functions and kernels (kernels/cpu/reverse.c) share. */
#include <stdio.h>
#include <string.h>

#include "../tide_op.h"
#include "op_util.h"
#include "reverse_ops.h"

#define SHAPE_STR(s, buf) tide_shape_format(&(s), buf, sizeof buf)

bool tide_reverse_axes(const int64_t *axes, int64_t n, int rank, bool reversed[TIDE_MAX_RANK], char *msg,
                       size_t size)
{
    char buf[TIDE_OP_MSG_MAX / 2];
    memset(reversed, 0, TIDE_MAX_RANK * sizeof *reversed);
    for (int64_t i = 0; i < n; i++) {
        if (axes[i] < -rank || axes[i] >= rank)
            return snprintf(msg, size, "axis %s: %lld is out of range [%d, %d) for a tensor of rank %d",
                            tide_op_format_values(axes, n, buf, sizeof buf), (long long)axes[i], -rank, rank,
                            rank), false;
        int d = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
        if (reversed[d])
            return snprintf(msg, size, "axis %s names dimension %d twice",
                            tide_op_format_values(axes, n, buf, sizeof buf), d), false;
        reversed[d] = true;
    }
    return true;
}

bool tide_mirror_mode(const tide_attrs *attrs, bool *symmetric, char *msg, size_t size)
{
    const char *mode = NULL;
    if (!tide_attrs_get_string(attrs, "mode", &mode))
        return snprintf(msg, size, "attr mode is missing: give 'REFLECT' or 'SYMMETRIC'"), false;
    *symmetric = strcmp(mode, "SYMMETRIC") == 0;
    if (!*symmetric && strcmp(mode, "REFLECT") != 0)
        return snprintf(msg, size, "mode must be 'REFLECT' or 'SYMMETRIC', got '%s'", mode), false;
    return true;
}

bool tide_mirror_pad_shape(const tide_shape *in, const int64_t *paddings, int64_t n_rows, bool symmetric,
                           tide_shape *out, char *msg, size_t size)
{
    char s[TIDE_SHAPE_STR_MAX];
    if (n_rows != in->rank)
        return snprintf(msg, size, "paddings has %lld rows but the input %s has rank %d: give one [before, "
                        "after] row per dimension", (long long)n_rows, tide_shape_format(in, s, sizeof s),
                        in->rank), false;
    *out = *in;
    for (int d = 0; d < in->rank; d++) {
        int64_t before = paddings[2 * d], after = paddings[2 * d + 1], dim = in->dims[d];
        int64_t most = dim < 0 ? INT64_MAX : symmetric ? dim : dim - 1;
        if (before < 0 || after < 0 || before > most || after > most)
            return snprintf(msg, size, "paddings [%lld, %lld] of dimension %d must be between 0 and %s %lld "
                            "(%s) for the input %s", (long long)before, (long long)after, d,
                            symmetric ? "the size" : "the size - 1,", (long long)(most < 0 ? 0 : most),
                            symmetric ? "SYMMETRIC" : "REFLECT", tide_shape_format(in, s, sizeof s)), false;
        out->dims[d] = dim < 0 ? -1 : dim + before + after;
    }
    return true;
}

bool tide_mirror_unpad_shape(const tide_shape *padded, const int64_t *paddings, int64_t n_rows,
                             tide_shape *out, char *msg, size_t size)
{
    char s[TIDE_SHAPE_STR_MAX];
    *out = *padded;
    for (int d = 0; d < padded->rank && d < n_rows; d++) {
        if (padded->dims[d] < 0)
            continue;
        out->dims[d] = padded->dims[d] - paddings[2 * d] - paddings[2 * d + 1];
        if (out->dims[d] < 0 || paddings[2 * d] < 0 || paddings[2 * d + 1] < 0)
            return snprintf(msg, size, "paddings [%lld, %lld] of dimension %d do not fit the padded input %s",
                            (long long)paddings[2 * d], (long long)paddings[2 * d + 1], d,
                            tide_shape_format(padded, s, sizeof s)), false;
    }
    return true;
}

/* ---------------------------------------------------------------- shape functions */

static tide_status reverse_shape(tide_shape_ctx *ctx)
{
    tide_shape in = tide_shape_input(ctx, 0), axis = tide_shape_input(ctx, 1);
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX];
    if (axis.rank >= 0 && axis.rank != 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a vector, got shape %s",
                                SHAPE_STR(axis, a));
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (v && in.rank >= 0) {
        int64_t axes[TIDE_MAX_RANK + 1];
        int64_t n = tide_op_index_values(v, axes, TIDE_MAX_RANK + 1);
        bool reversed[TIDE_MAX_RANK];
        if (n > TIDE_MAX_RANK)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "axis names %lld dimensions, more than %d",
                                    (long long)n, TIDE_MAX_RANK);
        if (!tide_reverse_axes(axes, n, in.rank, reversed, msg, sizeof msg))
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    }
    tide_shape_set_output(ctx, 0, &in);
    return TIDE_OK;
}

/* MirrorPad (grad false): input padded; MirrorPadGrad: grad unpadded. */
static tide_status mirror_shape(tide_shape_ctx *ctx, bool grad)
{
    tide_shape in = tide_shape_input(ctx, 0), p = tide_shape_input(ctx, 1), out = tide_shape_unknown();
    char msg[TIDE_OP_MSG_MAX], a[TIDE_SHAPE_STR_MAX];
    bool symmetric;
    if (!tide_mirror_mode(tide_shape_attrs(ctx), &symmetric, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (p.rank >= 0 && (p.rank != 2 || (p.dims[1] >= 0 && p.dims[1] != 2)))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "paddings must be a [rank, 2] matrix, got shape %s",
                                SHAPE_STR(p, a));
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    if (in.rank < 0 || !v) {
        for (int d = 0; d < in.rank; d++)
            in.dims[d] = -1;
        tide_shape_set_output(ctx, 0, &in);
        return TIDE_OK;
    }
    int64_t pads[2 * TIDE_MAX_RANK];
    int64_t n = tide_op_index_values(v, pads, 2 * TIDE_MAX_RANK) / 2;
    tide_shape unpadded = in;
    if (grad && !tide_mirror_unpad_shape(&in, pads, n, &unpadded, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (!tide_mirror_pad_shape(&unpadded, pads, n, symmetric, &out, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape_set_output(ctx, 0, grad ? &unpadded : &out);
    return TIDE_OK;
}

static tide_status mirror_pad_shape(tide_shape_ctx *ctx) { return mirror_shape(ctx, false); }
static tide_status mirror_pad_grad_shape(tide_shape_ctx *ctx) { return mirror_shape(ctx, true); }

/* ---------------------------------------------------------------- registration */

#define MIRROR_DOC                                                                                \
    "paddings is a [rank, 2] matrix of [before, after] per dimension (int32 or int64); mode "     \
    "'REFLECT' mirrors without repeating the edge ([1, 2, 3] padded by 2 before: [3, 2, 1, 2, 3]) " \
    "and allows at most size - 1 on a side, 'SYMMETRIC' repeats it ([2, 1, 1, 2, 3]) and allows "  \
    "at most the size; other paddings are INVALID_ARGUMENT naming them and the shape."

static void register_reverse_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "ReverseV2",
        .inputs = {"tensor: T", "axis: Tidx"},
        .outputs = {"output: T"},
        .attrs = {"Tidx: {int32, int64} = int32", "T: alltypes"},
        .shape_fn = reverse_shape,
        .doc = "Reverses tensor along the dimensions axis names (a vector; negative counts from the end; "
               "an empty axis copies nothing and returns tensor). An axis out of range or named twice is "
               "INVALID_ARGUMENT. Every dtype, strings included.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "MirrorPad",
        .inputs = {"input: T", "paddings: Tpaddings"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "Tpaddings: {int32, int64} = int32", "mode: string"},
        .shape_fn = mirror_pad_shape,
        .doc = "Pads input with its own reflection along every dimension. " MIRROR_DOC " Every dtype, "
               "strings included.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "MirrorPadGrad",
        .inputs = {"input: T", "paddings: Tpaddings"},
        .outputs = {"output: T"},
        .attrs = {"T: {int32, int64, float32, float64}", "Tpaddings: {int32, int64} = int32", "mode: string"},
        .shape_fn = mirror_pad_grad_shape,
        .doc = "The gradient of MirrorPad: input has the padded shape, and each of its elements is added "
               "to the element of the unpadded result that MirrorPad copied there (the reflected ones "
               "included). " MIRROR_DOC,
        .tf_differences = "int32, int64, float32 and float64 only (TensorFlow's op definition takes every "
                          "dtype).",
    });
}
TIDE_REGISTER(register_reverse_ops)
