/* bind.c — checks a node (or an eager call) against its op definition: input counts and dtypes,
 * inference of type and length attrs, defaults, attr types and constraints, output dtypes; and runs
 * the op's shape function. Every message names the node and op ("who"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* "a, b, values...": the op's inputs, for a message (made only when one is). */
static const char *arg_names(const tide_op_def *def, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < def->num_inputs && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s%s", i ? ", " : "", def->inputs[i].name,
                               def->inputs[i].number_attr ? "..." : "");
    return buf;
}

static tide_status group_inputs(const tide_op_def *def, const char *who, int num_inputs,
                                const int *group_sizes, int num_groups, const tide_attrs *attrs,
                                int *start, tide_error *err)
{
    char names[256];
    if (group_sizes) {
        if (num_groups != def->num_inputs)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s expects %d input%s (%s), got %d",
                                  who, def->num_inputs, def->num_inputs == 1 ? "" : "s",
                                  arg_names(def, names, sizeof names), num_groups);
        start[0] = 0;
        for (int i = 0; i < num_groups; i++) {
            if (!def->inputs[i].number_attr && group_sizes[i] != 1)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "%s: input '%s' takes one tensor, got a list of %d", who,
                                      def->inputs[i].name, group_sizes[i]);
            start[i + 1] = start[i] + group_sizes[i];
        }
        return TIDE_OK;
    }
    int lists = 0;
    bool same_length = true; /* every list has the same number attr (DynamicStitch's N) */
    const char *number = NULL;
    for (int i = 0; i < def->num_inputs; i++)
        if (def->inputs[i].number_attr) {
            same_length = same_length && (!number || strcmp(number, def->inputs[i].number_attr) == 0);
            number = def->inputs[i].number_attr;
            lists++;
        }
    int fixed = def->num_inputs - lists;
    if (lists > 1 && (!same_length || num_inputs < fixed || (num_inputs - fixed) % lists != 0))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s has several list inputs: give the inputs grouped", who);
    if ((lists == 0 && num_inputs != fixed) || (lists > 0 && num_inputs < fixed))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s expects %s%d input%s (%s), got %d",
                              who, lists ? "at least " : "", fixed, fixed == 1 ? "" : "s",
                              arg_names(def, names, sizeof names), num_inputs);
    int at = 0, list_length = lists ? (num_inputs - fixed) / lists : 0;
    for (int i = 0; i < def->num_inputs; i++) {
        start[i] = at;
        at += def->inputs[i].number_attr ? list_length : 1;
    }
    start[def->num_inputs] = at;
    TIDE_UNUSED(attrs);
    return TIDE_OK;
}

static const char *dt_name(tide_dtype dt)
{
    const char *n = tide_dtype_name(dt);
    return n ? n : "invalid";
}

static void allowed_names(uint32_t set, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int d = 1; d < TIDE_NUM_DTYPES && at < size; d++)
        if (set & (1u << d))
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? ", " : "", dt_name((tide_dtype)d));
}

/* A type-list input ("components: Tcomponents"): the attr, when given, must list the inputs' dtypes;
 * else it is inferred from them. */
static tide_status bind_type_list(const tide_arg_def *arg, const char *who, const tide_dtype *in, int n,
                                  tide_attrs *attrs, tide_error *err)
{
    const tide_dtype *want;
    int num_want;
    if (!tide_attrs_get_type_list(attrs, arg->type_attr, &want, &num_want)) {
        tide_attrs_set_type_list(attrs, arg->type_attr, in, n);
        return TIDE_OK;
    }
    if (num_want != n)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: attr %s lists %d dtype%s but input '%s' has %d "
                              "tensor%s", who, arg->type_attr, num_want, num_want == 1 ? "" : "s", arg->name, n,
                              n == 1 ? "" : "s");
    for (int k = 0; k < n; k++)
        if (in[k] != want[k])
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: input '%s' element %d has dtype %s, but %s "
                                  "says %s", who, arg->name, k, dt_name(in[k]), arg->type_attr, dt_name(want[k]));
    return TIDE_OK;
}

static tide_status bind_inputs(const tide_op_def *def, const char *who, const tide_dtype *in,
                               const int *start, tide_attrs *attrs, tide_error *err)
{
    for (int a = 0; a < def->num_inputs; a++) {
        const tide_arg_def *arg = &def->inputs[a];
        int n = start[a + 1] - start[a];
        if (arg->type_list) {
            tide_status st = bind_type_list(arg, who, in + start[a], n, attrs, err);
            if (st != TIDE_OK)
                return st;
            continue;
        }
        if (arg->number_attr) {
            int64_t want;
            if (tide_attrs_get_int(attrs, arg->number_attr, &want) && want != n)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "%s: attr %s=%lld but input '%s' has %d tensors", who,
                                      arg->number_attr, (long long)want, arg->name, n);
            tide_attrs_set_int(attrs, arg->number_attr, n);
        }
        for (int k = 0; k < n; k++) {
            tide_dtype got = in[start[a] + k];
            tide_dtype want = arg->fixed_dtype;
            if (arg->type_attr && !tide_attrs_get_type(attrs, arg->type_attr, &want)) {
                const tide_attr_def *ad = tide__op_attr_def(def, arg->type_attr);
                if (ad->allowed_dtypes && !(ad->allowed_dtypes & (1u << got))) {
                    char allowed[512];
                    allowed_names(ad->allowed_dtypes, allowed, sizeof allowed);
                    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                          "%s: input '%s' has dtype %s, but %s must be one of {%s}",
                                          who, arg->name, dt_name(got), arg->type_attr, allowed);
                }
                tide_attrs_set_type(attrs, arg->type_attr, got);
                want = got;
            }
            if (got != want)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "%s: input '%s'%s has dtype %s, expected %s%s%s", who,
                                      arg->name, n > 1 ? " (an element)" : "", dt_name(got),
                                      dt_name(want), arg->type_attr ? " like " : "",
                                      arg->type_attr ? "the other inputs" : "");
        }
    }
    return TIDE_OK;
}

static tide_status check_attrs(const tide_op_def *def, const char *who, tide_attrs *attrs,
                               tide_error *err)
{
    for (int i = 0; i < attrs->count; i++) {
        const char *name = attrs->items[i].name;
        if (name[0] == '_')
            continue; /* TensorFlow's convention: "_"-prefixed attrs are annotations any node may carry */
        if (!tide__op_attr_def(def, name)) {
            char list[512];
            size_t at = 0;
            list[0] = 0;
            for (int k = 0; k < def->num_attrs && at < sizeof list; k++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", k ? ", " : "",
                                       def->attrs[k].name);
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: unknown attr '%s' (%s has %s%s)",
                                  who, name, def->name, def->num_attrs ? "" : "no attrs",
                                  list);
        }
    }
    for (int i = 0; i < def->num_attrs; i++) {
        const tide_attr_def *ad = &def->attrs[i];
        tide_attr_value *v = (tide_attr_value *)tide__attrs_find(attrs, ad->name);
        if (!v) {
            if (!ad->has_default)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: missing attr '%s' (%s)",
                                      who, ad->name, tide__attr_type_name(ad->type));
            tide__attrs_set_value(attrs, ad->name, &ad->default_value);
            continue;
        }
        if (v->type == TIDE_ATTR_INT && ad->type == TIDE_ATTR_FLOAT) {
            v->u.f = (double)v->u.i;
            v->type = TIDE_ATTR_FLOAT;
        }
        if (v->type == TIDE_ATTR_INT_LIST && ad->type == TIDE_ATTR_SHAPE && v->u.list.n <= TIDE_MAX_RANK) {
            tide_shape s = tide_shape_make(v->u.list.n, v->u.list.items);
            tide__attr_value_clear(v);
            v->type = TIDE_ATTR_SHAPE;
            v->u.shape = s;
        }
        if (v->type != ad->type)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: attr '%s' must be a %s, got a %s",
                                  who, ad->name, tide__attr_type_name(ad->type),
                                  tide__attr_type_name(v->type));
        if (ad->type == TIDE_ATTR_TYPE && ad->allowed_dtypes && !(ad->allowed_dtypes & (1u << v->u.t))) {
            char allowed[512];
            allowed_names(ad->allowed_dtypes, allowed, sizeof allowed);
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "%s: attr %s=%s is not allowed; expected one of {%s}", who,
                                  ad->name, dt_name(v->u.t), allowed);
        }
        if (ad->has_min && ad->type == TIDE_ATTR_INT && v->u.i < ad->min)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: attr %s=%lld must be >= %lld",
                                  who, ad->name, (long long)v->u.i, (long long)ad->min);
    }
    return TIDE_OK;
}

static tide_status bind_outputs(const tide_op_def *def, const char *who, const tide_attrs *attrs,
                                tide_binding *out, tide_error *err)
{
    int total = 0;
    int64_t counts[TIDE_OP_MAX_ARGS];
    for (int a = 0; a < def->num_outputs; a++) {
        counts[a] = 1;
        const tide_dtype *types = NULL;
        int num_types = 0;
        if (def->outputs[a].type_list) {
            if (!tide_attrs_get_type_list(attrs, def->outputs[a].type_attr, &types, &num_types))
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: attr '%s' is needed", who,
                                      def->outputs[a].type_attr);
            counts[a] = num_types;
        } else if (def->outputs[a].number_attr)
            tide_attrs_get_int(attrs, def->outputs[a].number_attr, &counts[a]);
        if (counts[a] < 0 || counts[a] > 1 << 16)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: bad output count %lld", who,
                                  (long long)counts[a]);
        total += (int)counts[a];
    }
    out->num_outputs = total;
    size_t fits = sizeof out->inline_dtypes / sizeof *out->inline_dtypes;
    out->output_dtypes = (size_t)total <= fits ? out->inline_dtypes : malloc((size_t)total * sizeof(tide_dtype));
    if (!out->output_dtypes)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int at = 0;
    for (int a = 0; a < def->num_outputs; a++) {
        tide_dtype dt = def->outputs[a].fixed_dtype;
        if (def->outputs[a].type_list) {
            const tide_dtype *types;
            int n;
            tide_attrs_get_type_list(attrs, def->outputs[a].type_attr, &types, &n);
            for (int k = 0; k < n; k++, at++)
                out->output_dtypes[at] = types[k];
            continue;
        }
        if (def->outputs[a].type_attr && !tide_attrs_get_type(attrs, def->outputs[a].type_attr, &dt))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: attr '%s' is needed", who,
                                  def->outputs[a].type_attr);
        for (int64_t k = 0; k < counts[a]; k++, at++)
            out->output_dtypes[at] = dt;
    }
    return TIDE_OK;
}

tide_status tide__bind(const tide_op_def *def, const char *who, const tide_dtype *in_dtypes,
                       int num_inputs, const int *group_sizes, int num_groups, tide_attrs *attrs,
                       tide_binding *out, tide_error *err)
{
    memset(out, 0, sizeof *out);
    tide_status st = group_inputs(def, who, num_inputs, group_sizes, num_groups, attrs,
                                  out->arg_start, err);
    if (st == TIDE_OK)
        st = bind_inputs(def, who, in_dtypes, out->arg_start, attrs, err);
    if (st == TIDE_OK)
        st = check_attrs(def, who, attrs, err);
    if (st == TIDE_OK)
        st = bind_outputs(def, who, attrs, out, err);
    if (st != TIDE_OK)
        tide__binding_clear(out);
    return st;
}

void tide__binding_clear(tide_binding *b)
{
    if (b->output_dtypes != b->inline_dtypes)
        free(b->output_dtypes);
    b->output_dtypes = NULL;
}

/* ---------------------------------------------------------------- shape inference */

struct tide_shape_ctx {
    const char *who;
    const tide_attrs *attrs;
    const tide_shape *in_shapes;
    const tide_dtype *in_dtypes;
    const tide_tensor *const *in_values;
    int num_inputs, num_outputs;
    tide_shape *out;
    tide_error *err;
};

int tide_shape_num_inputs(const tide_shape_ctx *ctx) { return ctx->num_inputs; }
int tide_shape_num_outputs(const tide_shape_ctx *ctx) { return ctx->num_outputs; }
const tide_attrs *tide_shape_attrs(const tide_shape_ctx *ctx) { return ctx->attrs; }

tide_shape tide_shape_input(const tide_shape_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->num_inputs ? ctx->in_shapes[i] : tide_shape_unknown();
}

tide_dtype tide_shape_input_dtype(const tide_shape_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->num_inputs ? ctx->in_dtypes[i] : TIDE_INVALID_DTYPE;
}

const tide_tensor *tide_shape_input_value(const tide_shape_ctx *ctx, int i)
{
    return ctx->in_values && i >= 0 && i < ctx->num_inputs ? ctx->in_values[i] : NULL;
}

void tide_shape_set_output(tide_shape_ctx *ctx, int i, const tide_shape *s)
{
    if (i >= 0 && i < ctx->num_outputs)
        ctx->out[i] = *s;
}

tide_status tide_shape_error(tide_shape_ctx *ctx, tide_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tide__error_vset(ctx->err, code, fmt, ap);
    va_end(ap);
    tide__error_prefix(ctx->err, "%s", ctx->who);
    return code;
}

tide_status tide_shape_fn_unchanged(tide_shape_ctx *ctx)
{
    tide_shape s = tide_shape_input(ctx, 0);
    for (int i = 0; i < ctx->num_outputs; i++)
        ctx->out[i] = s;
    return TIDE_OK;
}

tide_status tide_shape_fn_scalar(tide_shape_ctx *ctx)
{
    for (int i = 0; i < ctx->num_outputs; i++)
        ctx->out[i] = tide_shape_scalar();
    return TIDE_OK;
}

tide_status tide_shape_fn_broadcast(tide_shape_ctx *ctx)
{
    tide_shape a = tide_shape_input(ctx, 0), b = tide_shape_input(ctx, 1), o;
    if (!tide_shape_broadcast(&a, &b, &o)) {
        char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "incompatible shapes %s and %s",
                                tide_shape_format(&a, sa, sizeof sa),
                                tide_shape_format(&b, sb, sizeof sb));
    }
    for (int i = 0; i < ctx->num_outputs; i++)
        ctx->out[i] = o;
    return TIDE_OK;
}

tide_status tide__infer_shapes(const tide_op_def *def, const char *who, const tide_attrs *attrs,
                               const tide_shape *in_shapes, const tide_dtype *in_dtypes,
                               const tide_tensor *const *in_values, int num_inputs,
                               int num_outputs, tide_shape *out_shapes, tide_error *err)
{
    for (int i = 0; i < num_outputs; i++)
        out_shapes[i] = tide_shape_unknown();
    if (!def->shape_fn)
        return TIDE_OK;
    tide_shape_ctx ctx = {who, attrs, in_shapes, in_dtypes, in_values, num_inputs, num_outputs,
                          out_shapes, err};
    return def->shape_fn(&ctx);
}
