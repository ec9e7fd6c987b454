/* random_ops.c — definitions of the random ops: RandomUniform, RandomNormal, TruncatedNormal,
 * RandomUniformInt and RandomShuffle (TensorFlow 1.x semantics; kernels in kernels/cpu/random.c).
 *
 * All are stateful: each run of a node draws fresh numbers from a Philox4x32-10 stream whose key
 * comes from the graph seed and the op's seed/seed2 attrs (TensorFlow's rule, see SEED_DOC below).
 * Shape functions take the output shape from the `shape` input: exactly when it is a graph-time
 * constant, else its rank when the vector's length is known. */
#include <stdio.h>

#include "../tide_op.h"
#include "op_util.h"
#include "random_ops.h"

#define SEED_DOC                                                                                   \
    " Seeds follow TensorFlow 1.x: with neither a graph seed nor an op seed (seed = seed2 = 0) the "  \
    "numbers differ on every plan and process; with a graph seed and no op seed the op seed is "     \
    "derived from the node name; with an op seed and no graph seed the graph seed is 87654321. A "   \
    "node's stream advances with each run, so repeated runs give fresh numbers and the whole "       \
    "sequence is reproducible from the seeds; an eager call starts a fresh stream each time, so "    \
    "eager calls with the same seeds return the same numbers."

#define SHAPE_DOC                                                                                  \
    " The shape input is a vector of int32 or int64 holding at most 8 non-negative dimensions; a "  \
    "non-vector, a negative dimension or more than 8 dimensions is an InvalidArgument error."

/* Shared with the kernels (kernels/cpu/random.c), which read and check their shape input with it;
 * see random_ops.h. */
bool tide_random_output_shape(const tide_shape *in, const tide_tensor *v, tide_shape *out, char *msg,
                              size_t size)
{
    char buf[TIDE_SHAPE_STR_MAX];
    *out = tide_shape_unknown();
    if (in->rank >= 0 && in->rank != 1)
        return snprintf(msg, size, "shape must be a vector of int32 or int64, got a tensor of shape %s",
                        tide_shape_format(in, buf, sizeof buf)), false;
    int64_t n = in->rank == 1 ? in->dims[0] : -1;
    if (v)
        n = tide_tensor_num_elements(v);
    if (n > TIDE_MAX_RANK)
        return snprintf(msg, size, "shape has %lld dimensions; at most %d are supported", (long long)n,
                        TIDE_MAX_RANK), false;
    if (n < 0)
        return true;
    out->rank = (int)n;
    for (int i = 0; i < out->rank; i++)
        out->dims[i] = -1;
    if (!v)
        return true;
    tide_op_index_values(v, out->dims, TIDE_MAX_RANK);
    int64_t count = 1;
    bool empty = false; /* a zero dimension makes any shape empty, however big the others */
    for (int i = 0; i < out->rank; i++)
        empty |= out->dims[i] == 0;
    for (int i = 0; i < out->rank; i++) {
        if (out->dims[i] < 0)
            return snprintf(msg, size, "shape %s has a negative dimension",
                            tide_op_format_values(out->dims, n, buf, sizeof buf)), false;
        if (!empty && __builtin_mul_overflow(count, out->dims[i], &count))
            return snprintf(msg, size, "shape %s has too many elements",
                            tide_op_format_values(out->dims, n, buf, sizeof buf)), false;
    }
    return true;
}

/* The output shape the `shape` input (input 0) asks for: exact when its value is known, else of
 * known rank when the vector's length is known, else unknown. Rejects what is already wrong. */
static tide_status shape_from_input(tide_shape_ctx *ctx, tide_shape *out)
{
    tide_shape in = tide_shape_input(ctx, 0);
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_random_output_shape(&in, tide_shape_input_value(ctx, 0), out, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    return TIDE_OK;
}

static tide_status random_shape(tide_shape_ctx *ctx)
{
    tide_shape out;
    tide_status st = shape_from_input(ctx, &out);
    if (st == TIDE_OK)
        tide_shape_set_output(ctx, 0, &out);
    return st;
}

/* Fully known with no zero dimension (tide_shape_num_elements could overflow on huge dims). */
static bool known_nonempty(const tide_shape *s)
{
    bool ok = s->rank >= 0;
    for (int i = 0; ok && i < s->rank; i++)
        ok = s->dims[i] > 0;
    return ok;
}

/* Reads a known scalar of int32/int64 into *v. */
static bool known_scalar(const tide_shape_ctx *ctx, int i, int64_t *v)
{
    const tide_tensor *t = tide_shape_input_value(ctx, i);
    if (!t || tide_tensor_num_elements(t) != 1)
        return false;
    *v = tide_op_int_at(t, 0);
    return true;
}

static tide_status uniform_int_shape(tide_shape_ctx *ctx)
{
    static const char *const names[] = {"shape", "minval", "maxval"};
    char buf[TIDE_SHAPE_STR_MAX];
    tide_shape out;
    tide_status st = shape_from_input(ctx, &out);
    if (st != TIDE_OK)
        return st;
    for (int i = 1; i <= 2; i++) {
        tide_shape s = tide_shape_input(ctx, i);
        if (s.rank > 0)
            return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s",
                                    names[i], tide_shape_format(&s, buf, sizeof buf));
    }
    int64_t lo, hi;
    /* Like TensorFlow, an empty output does not need a valid range. */
    if (known_nonempty(&out) && known_scalar(ctx, 1, &lo) && known_scalar(ctx, 2, &hi) &&
        lo >= hi)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "need minval < maxval, got %lld >= %lld",
                                (long long)lo, (long long)hi);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* The float random ops share everything but their name and doc: a shape in, dtype values out, seeds. */
static void register_random_float_op(const char *name, const char *doc)
{
    tide_op_register(&(tide_op_spec){
        .name = name,
        .inputs = {"shape: T"},
        .outputs = {"output: dtype"},
        .attrs = {"dtype: {float16, bfloat16, float32, float64}", "seed: int = 0", "seed2: int = 0",
                  "T: {int32, int64} = int32"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = random_shape,
        .doc = doc,
    });
}

static void register_random_ops(void)
{
    register_random_float_op(
        "RandomUniform",
        "Outputs random values uniformly distributed in [0, 1) in a tensor of the given shape. "
        "float32 values are multiples of 2^-24 and float64 ones of 2^-53 (from two 32-bit "
        "words); float16 and bfloat16 take 10 and 7 random mantissa bits as TensorFlow does, "
        "so 1.0 is never produced." SHAPE_DOC SEED_DOC);
    register_random_float_op(
        "RandomNormal",
        "Outputs random values from the standard normal distribution (mean 0, standard "
        "deviation 1) in a tensor of the given shape. Box-Muller on Philox output: float16, "
        "bfloat16 and float32 are computed in float32 from 24-bit uniforms (|x| < 5.8), "
        "float64 in double from 53-bit uniforms." SHAPE_DOC SEED_DOC);
    register_random_float_op(
        "TruncatedNormal",
        "Outputs random values from a standard normal distribution truncated to [-2, 2]: "
        "values more than 2 standard deviations from the mean are dropped and re-drawn, so "
        "the result has mean 0 and standard deviation about 0.88." SHAPE_DOC SEED_DOC);
    tide_op_register(&(tide_op_spec){
        .name = "RandomUniformInt",
        .inputs = {"shape: T", "minval: Tout", "maxval: Tout"},
        .outputs = {"output: Tout"},
        .attrs = {"Tout: {int32, int64}", "seed: int = 0", "seed2: int = 0",
                  "T: {int32, int64} = int32"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = uniform_int_shape,
        .doc = "Outputs random integers uniformly distributed in [minval, maxval) in a tensor of "
               "the given shape. minval and maxval are scalars with minval < maxval (an "
               "InvalidArgument error otherwise, unless the output is empty); any range of the "
               "dtype works, up to the full int64 one. Each value maps 64 (int32) or 128 (int64) "
               "random bits onto the range by multiply-shift, so the bias is below 2^-32 (int32) "
               "and 2^-64 (int64)." SHAPE_DOC SEED_DOC,
    });
    tide_op_register(&(tide_op_spec){
        .name = "RandomShuffle",
        .inputs = {"value: T"},
        .outputs = {"output: T"},
        .attrs = {"T: alltypes", "seed: int = 0", "seed2: int = 0"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Randomly shuffles a tensor along its first dimension: row i of the output is row "
               "p(i) of value for a uniformly random permutation p (Fisher-Yates with 64-bit "
               "multiply-shift draws, bias below n/2^64 for n rows). Works for every dtype; strings "
               "are copied. A scalar, or a tensor with fewer than two rows, is returned as is."
               SEED_DOC,
    });
}
TIDE_REGISTER(register_random_ops)
