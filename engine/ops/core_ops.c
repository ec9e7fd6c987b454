/* core_ops.c — definitions of the ops every graph needs: Const, Placeholder, PlaceholderWithDefault,
 * Identity, Snapshot, StopGradient, PreventGradient, NoOp, and ScalarSummary (a value the run log
 * records under a tag). */
#include "../internal.h"

static tide_status const_shape(tide_shape_ctx *ctx)
{
    tide_tensor *value = NULL;
    tide_dtype dt;
    if (!tide_attrs_get_tensor(tide_shape_attrs(ctx), "value", &value))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "attr 'value' is missing");
    if (tide_attrs_get_type(tide_shape_attrs(ctx), "dtype", &dt) && dt != tide_tensor_dtype(value))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "attr dtype=%s but value is %s",
                                tide_dtype_name(dt), tide_dtype_name(tide_tensor_dtype(value)));
    tide_shape_set_output(ctx, 0, tide_tensor_shape(value));
    return TIDE_OK;
}

static tide_status placeholder_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_unknown();
    tide_attrs_get_shape(tide_shape_attrs(ctx), "shape", &s);
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

/* The shape attr, which the default input must fit; its known dims fill the attr's unknown ones. */
static tide_status placeholder_with_default_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_unknown(), in = tide_shape_input(ctx, 0);
    tide_attrs_get_shape(tide_shape_attrs(ctx), "shape", &s);
    if (!tide_shape_compatible(&s, &in)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "the default input of shape %s does not fit the "
                                "shape attr %s", tide_shape_format(&in, a, sizeof a),
                                tide_shape_format(&s, b, sizeof b));
    }
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static tide_status scalar_summary_shape(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_input(ctx, 0);
    if (s.rank > 0 && tide_shape_num_elements(&s) != 1)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "a scalar summary records one number: value must have one element, not shape %s",
                                tide_shape_format(&s, (char[TIDE_SHAPE_STR_MAX]){0}, TIDE_SHAPE_STR_MAX));
    const char *tag = NULL;
    if (!tide_attrs_get_string(tide_shape_attrs(ctx), "tag", &tag) || !tag[0])
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "a scalar summary needs a non-empty tag");
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static void register_core_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "Const",
        .outputs = {"output: dtype"},
        .attrs = {"value: tensor", "dtype: type"},
        .shape_fn = const_shape,
        .doc = "A constant tensor, the value attr. Its dtype attr is taken from the value.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Placeholder",
        .outputs = {"output: dtype"},
        .attrs = {"dtype: type", "shape: shape = *"},
        .shape_fn = placeholder_shape,
        .doc = "A value fed at run time; running it without a feed is an error. shape may have "
               "unknown dimensions (? in text, -1 in C); fed tensors must match its known ones.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "PlaceholderWithDefault",
        .inputs = {"input: dtype"},
        .outputs = {"output: dtype"},
        .attrs = {"dtype: type", "shape: shape"},
        .shape_fn = placeholder_with_default_shape,
        .doc = "A value that may be fed at run time and is its input when it is not (no copy). The "
               "default input must fit shape, which may have unknown dimensions; a fed tensor must "
               "match its known ones.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Identity",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Returns its input (the same tensor, no copy).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "Snapshot",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Returns its input: TensorFlow's copy of a value that a later update must not change. "
               "tide's tensors are never changed once read (an update of a variable that is still read "
               "writes a new tensor), so no copy is needed.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "PreventGradient",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "message: string = ''"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Returns its input (no copy); differentiating through it fails with an UNIMPLEMENTED "
               "error carrying message (TensorFlow puts it on the second output of "
               "SparseSoftmaxCrossEntropyWithLogits, whose gradient is not defined).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "StopGradient",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Returns its input (no copy), and blocks gradients: tide_gradients treats it as a "
               "constant.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "ScalarSummary",
        .inputs = {"value: T"},
        .outputs = {"summary: T"},
        .attrs = {"tag: string", "T: realnumbertype"},
        .shape_fn = scalar_summary_shape,
        .doc = "Returns value (one number, no copy); the run log records it under tag with the step at "
               "every run that computes it (the summaries table: a loss curve). Fetch it, or make the "
               "training step depend on it.",
        .flags = TIDE_OP_NOT_IN_TF,
        .tf_differences = "TensorFlow's ScalarSummary(tags: string, values: T) -> summary: string takes the "
                          "tags as a string tensor and returns a serialised Summary protocol buffer; tide's "
                          "takes the tag as an attr, returns the value, and writes the run log.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "NoOp",
        .doc = "Does nothing; useful as a target that groups control dependencies.",
    });
}
TIDE_REGISTER(register_core_ops)
