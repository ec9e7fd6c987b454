/* debugger_bad.c — `:break if has_inf_or_nan`: finding the first bad node and saying what it is.
 *
 * A node is a bad origin when one of its outputs holds a NaN or an infinity while every input it
 * read was finite (or came from a node the breakpoint ignores): the first node, in execution order,
 * where the non-finite values start, not one of the many that only pass them on. Its consumers wait
 * while it is parked, so the origin stops before anything downstream of it. The check runs on the
 * executor thread that ran the node (C only: tide_tensor_has_inf_or_nan over its outputs, a vectorised
 * pass over the exponent bits, and over its inputs only when an output is bad; the whole health
 * summaries only for the stop's message). Transfers between devices (_Send, _Recv) only carry values: they are
 * never origins. Nor is an op that makes finite values of finite inputs whatever they are (a ReLU, a
 * reshape, a max, a tanh: finite_preserving below): its outputs are not even looked at, unless it
 * reads an ignored node (whose non-finite values count as finite: then it may be the origin). That
 * saves the pass over a good part of a network's values (the ReLUs and their gradients).
 *
 * Gradient nodes are the ones gradients() built: their names are "gradients[_N]/<forward>_grad/...".
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

static bool ignored(const repl_breakpoint *bp, const char *name)
{
    for (int i = 0; i < bp->num_ignore; i++)
        if (fnmatch(bp->ignore[i], name, 0) == 0)
            return true;
    return false;
}

/* Ops whose outputs are finite whenever their inputs are, for any finite values and attributes
 * (sorted, for bsearch): they pick, move or clamp values, or map R into a bounded range. Not in it:
 * anything that adds or multiplies (overflow), divides, exponentiates, takes logs or roots, casts
 * (float64 to float32 overflows), averages, or scales by an attribute (LeakyRelu, Elu). _Send and
 * _Recv carry values between devices. */
static const char *const finite_preserving[] = {
    "Abs", "BroadcastTo", "Ceil", "Concat", "ConcatV2", "ExpandDims", "Floor", "Gather", "GatherV2",
    "Identity", "IdentityN", "Max", "MaxPool", "Maximum", "Min", "Minimum", "Neg", "OnesLike", "Pack",
    "Relu", "Relu6", "ReluGrad", "Reshape", "Reverse", "ReverseV2", "Rint", "Round", "Select", "SelectV2",
    "Sigmoid", "Sign", "Slice", "Snapshot", "Softsign", "Split", "SplitV", "Squeeze", "StopGradient",
    "StridedSlice", "Tanh", "Tile", "Transpose", "Unpack", "ZerosLike", "_Recv", "_Send",
};

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether an op makes non-finite values only of non-finite inputs (so it is never an origin). */
static bool preserves_finite(const char *op)
{
    return bsearch(&op, finite_preserving, sizeof finite_preserving / sizeof finite_preserving[0],
                   sizeof finite_preserving[0], compare_names) != NULL;
}

/* Whether one of node's inputs comes from a node bp ignores. */
static bool reads_ignored(const repl_breakpoint *bp, const tide_node *node)
{
    for (int i = 0; bp->num_ignore > 0 && i < tide_node_num_inputs(node); i++) {
        tide_output in = tide_node_input(node, i);
        if (in.node && ignored(bp, tide_node_name(in.node)))
            return true;
    }
    return false;
}

bool repl_bad_origin(const repl_breakpoint *bp, const tide_debug_event *ev)
{
    if (!ev->after || ignored(bp, tide_node_name(ev->node)))
        return false;
    const char *op = tide_node_op(ev->node);
    if (preserves_finite(op) && (strcmp(op, "_Send") == 0 || strcmp(op, "_Recv") == 0 || !reads_ignored(bp, ev->node)))
        return false;
    bool bad = false;
    for (int i = 0; i < ev->num_outputs && !bad; i++)
        bad = tide_tensor_has_inf_or_nan(ev->outputs[i]);
    if (!bad)
        return false;
    for (int i = 0; i < ev->num_inputs; i++) {
        if (i >= tide_node_num_inputs(ev->node))
            break;
        tide_output in = tide_node_input(ev->node, i);
        if (in.node && ignored(bp, tide_node_name(in.node)))
            continue; /* an expected non-finite value: the node that reads it is to blame for what it makes */
        if (tide_tensor_has_inf_or_nan(ev->inputs[i]))
            return false; /* passed on from upstream */
    }
    return true;
}

bool repl_is_gradient_node(const char *name, char *of, size_t size)
{
    if (of && size)
        of[0] = '\0';
    if (strncmp(name, "gradients", 9) != 0)
        return false;
    const char *s = name + 9;
    if (*s == '_') {
        s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s != '/')
        return false;
    s++;
    const char *grad = strstr(s, "_grad");
    if (of && grad && grad > s)
        snprintf(of, size, "%.*s", (int)(grad - s), s);
    return true;
}

void repl_format_health(const tide_tensor *t, char *buf, size_t size)
{
    char shape[TIDE_SHAPE_STR_MAX];
    tide_health h;
    if (!t) {
        snprintf(buf, size, "(dead)");
        return;
    }
    tide_shape_format(tide_tensor_shape(t), shape, sizeof shape);
    if (!tide_tensor_health(t, &h)) {
        snprintf(buf, size, "%s%s (no numbers)", tide_dtype_name(tide_tensor_dtype(t)), shape);
        return;
    }
    char counts[160] = "";
    if (tide_health_bad(&h))
        snprintf(counts, sizeof counts, ", %lld nan, %lld -inf, %lld +inf", (long long)h.nan, (long long)h.neg_inf,
                 (long long)h.pos_inf);
    snprintf(buf, size, "%s%s: %lld elements%s; finite: min %.6g max %.6g mean %.6g std %.6g (%lld <0, %lld =0, %lld >0)",
             tide_dtype_name(tide_tensor_dtype(t)), shape, (long long)h.elements, counts, h.min, h.max, h.mean, h.std,
             (long long)h.negative, (long long)h.zero, (long long)h.positive);
}

char *repl_bad_message(const tide_debug_event *ev)
{
    size_t cap = 4096;
    char *msg = malloc(cap), line[512];
    if (!msg)
        return NULL;
    const char *name = tide_node_name(ev->node);
    char of[256];
    bool grad = repl_is_gradient_node(name, of, sizeof of);
    char kind[320];
    if (grad && of[0])
        snprintf(kind, sizeof kind, "a gradient node (backward pass, of '%s')", of);
    else
        snprintf(kind, sizeof kind, grad ? "a gradient node (backward pass)" : "a forward node");
    int n = snprintf(msg, cap, "first bad node: '%s' (%s), %s, made non-finite values from finite inputs\n", name,
                     tide_node_op(ev->node), kind);
    for (int i = 0; i < ev->num_outputs && n < (int)cap; i++) {
        repl_format_health(ev->outputs[i], line, sizeof line);
        n += snprintf(msg + n, cap - (size_t)n, "  output %d: %s\n", i, line);
    }
    for (int i = 0; i < ev->num_inputs && n < (int)cap; i++) {
        tide_output in = i < tide_node_num_inputs(ev->node) ? tide_node_input(ev->node, i) : (tide_output){0};
        repl_format_health(ev->inputs[i], line, sizeof line);
        n += snprintf(msg + n, cap - (size_t)n, "  input %d '%s:%d': %s\n", i, in.node ? tide_node_name(in.node) : "?",
                      in.index, line);
    }
    return msg;
}
