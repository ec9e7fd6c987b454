/* scan_ops.c — definitions of the cumulative ops, TensorFlow 1.x's Cumsum and Cumprod: the running
 * sum or product of x along one axis (a scalar input), inclusive or exclusive (starting from 0 or 1),
 * forward or reversed. The kernels are kernels/cpu/scan.c. The axis is checked against the input's
 * rank at graph time when both are known, and by the kernel always, with the same message
 * (tide_scan_axis). */
#include <stdio.h>

#include "../tide_op.h"
#include "op_util.h"
#include "scan_ops.h"

bool tide_scan_axis(const tide_shape *x, int64_t axis, int *out, char *msg, size_t size)
{
    char s[TIDE_SHAPE_STR_MAX];
    if (x->rank == 0)
        return snprintf(msg, size, "x must have rank >= 1 to scan along an axis, got a scalar"), false;
    if (axis < -x->rank || axis >= x->rank)
        return snprintf(msg, size, "axis %lld is out of range [%d, %d) for x of shape %s", (long long)axis,
                        -x->rank, x->rank, tide_shape_format(x, s, sizeof s)), false;
    *out = (int)(axis < 0 ? axis + x->rank : axis);
    return true;
}

static tide_status scan_shape(tide_shape_ctx *ctx)
{
    tide_shape x = tide_shape_input(ctx, 0), a = tide_shape_input(ctx, 1);
    char msg[TIDE_OP_MSG_MAX], s[TIDE_SHAPE_STR_MAX];
    if (a.rank > 0)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "axis must be a scalar, got shape %s",
                                tide_shape_format(&a, s, sizeof s));
    const tide_tensor *v = tide_shape_input_value(ctx, 1);
    int axis;
    if (x.rank >= 0 && v && tide_tensor_num_elements(v) == 1 &&
        !tide_scan_axis(&x, tide_op_int_at(v, 0), &axis, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape_set_output(ctx, 0, &x);
    return TIDE_OK;
}

#define SCAN_TYPES "T: {int8, int16, int32, int64, uint8, uint16, float32, float64}"
#define SCAN_DOC                                                                                  \
    " along dimension axis (an int32 or int64 scalar in [-rank, rank)). With exclusive the "     \
    "element itself is left out (the first result is the identity), with reverse the scan runs " \
    "from the end: Cumsum([a, b, c]) is [a, a + b, a + b + c], exclusive [0, a, a + b], reverse "  \
    "[a + b + c, b + c, c]. Elements are combined one by one in scan order, in the input dtype " \
    "(integers wrap around)."
#define SCAN_TF "float16, bfloat16 and complex numbers are not supported."

static void register_scan_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Cumsum",
        .inputs = {"x: T", "axis: Tidx"},
        .outputs = {"out: T"},
        .attrs = {"exclusive: bool = false", "reverse: bool = false", SCAN_TYPES,
                  "Tidx: {int32, int64} = int32"},
        .shape_fn = scan_shape,
        .doc = "The cumulative sum of x" SCAN_DOC,
        .tf_differences = SCAN_TF,
    });
    tide_op_register(&(tide_op_spec){
        .name = "Cumprod",
        .inputs = {"x: T", "axis: Tidx"},
        .outputs = {"out: T"},
        .attrs = {"exclusive: bool = false", "reverse: bool = false", SCAN_TYPES,
                  "Tidx: {int32, int64} = int32"},
        .shape_fn = scan_shape,
        .doc = "The cumulative product of x (exclusive starts from 1)" SCAN_DOC,
        .tf_differences = SCAN_TF,
    });
}
TIDE_REGISTER(register_scan_ops)
