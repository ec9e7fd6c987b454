/* kernel_float32.c — running a kernel written for float32 on a float16 or bfloat16 node: "computed in
 * float32 and rounded once on store", as TensorFlow's CPU kernels do for halves.
 *
 * tide_kernel_compute_in_float32(ctx, compute) gives compute a context of its own in which every
 * float16 or bfloat16 input is a float32 copy (converted exactly: every half is a float) and every
 * float16 or bfloat16 output has dtype float32; once compute returned, each such output is rounded to
 * the node's dtype into the node's own output (round to nearest even, tide_f32_to_f16 /
 * tide_f32_to_bf16), and other outputs are handed on as they are. The inner context shares the
 * node's name, attrs, state, device, step and thread pool, so the float32 kernel runs exactly as it
 * does for a float32 node (its errors name the node; its temporaries and outputs count in the node's
 * device's memory). A node with no half input or output is computed directly. Used by the matrix
 * products and convolutions (kernels/cpu/matmul.c, conv.c), whose float32 kernels are the optimised
 * ones. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_half(tide_dtype dt) { return dt == TIDE_FLOAT16 || dt == TIDE_BFLOAT16; }

typedef struct convert_job {
    const void *from;
    void *to;
    tide_dtype half; /* float16 or bfloat16 */
    bool widen;      /* half -> float32, else float32 -> half */
} convert_job;

static void convert_range(int64_t begin, int64_t end, void *arg)
{
    const convert_job *j = arg;
    if (j->widen) {
        const uint16_t *h = j->from;
        float *f = j->to;
        if (j->half == TIDE_FLOAT16)
            for (int64_t i = begin; i < end; i++)
                f[i] = tide_f16_to_f32(h[i]);
        else
            for (int64_t i = begin; i < end; i++)
                f[i] = tide_bf16_to_f32(h[i]);
    } else {
        const float *f = j->from;
        uint16_t *h = j->to;
        if (j->half == TIDE_FLOAT16)
            for (int64_t i = begin; i < end; i++)
                h[i] = tide_f32_to_f16(f[i]);
        else
            for (int64_t i = begin; i < end; i++)
                h[i] = tide_f32_to_bf16(f[i]);
    }
}

static void convert(tide_kernel_ctx *ctx, const tide_tensor *from, tide_tensor *to, tide_dtype half, bool widen)
{
    convert_job j = {tide_tensor_data(from), tide_tensor_data(to), half, widen};
    tide_kernel_parallel_for(ctx, tide_tensor_num_elements(from), 2.0, convert_range, &j);
}

/* A float32 copy of the half tensor t on the kernel's device; NULL with the error recorded. */
static tide_tensor *widened(tide_kernel_ctx *ctx, const tide_tensor *t)
{
    tide_tensor *f = tide__kernel_alloc_temp(ctx, TIDE_FLOAT32, &t->shape);
    if (f)
        convert(ctx, t, f, t->dtype, true);
    return f;
}

/* Hands the inner context's outputs to ctx, rounding the half ones. */
static tide_status hand_on_outputs(tide_kernel_ctx *ctx, tide_kernel_ctx *inner)
{
    for (int i = 0; i < ctx->kn->num_outputs; i++) {
        tide_tensor *t = inner->outputs[i];
        if (!t || t == tide__dead) {
            if (t)
                tide_kernel_set_output_dead(ctx, i);
            continue;
        }
        if (!is_half(ctx->kn->out_dtypes[i])) {
            tide_kernel_set_output(ctx, i, t);
            continue;
        }
        tide_tensor *out = tide_kernel_alloc_output(ctx, i, &t->shape, false);
        if (!out)
            return ctx->status;
        convert(ctx, t, out, ctx->kn->out_dtypes[i], false);
    }
    return ctx->status;
}

tide_status tide_kernel_compute_in_float32(tide_kernel_ctx *ctx, tide_status (*compute)(tide_kernel_ctx *ctx))
{
    const tide_kernel_node *kn = ctx->kn;
    bool any = false;
    for (int i = 0; i < kn->num_inputs && !any; i++)
        any = is_half(kn->in_dtypes[i]);
    for (int i = 0; i < kn->num_outputs && !any; i++)
        any = is_half(kn->out_dtypes[i]);
    if (!any)
        return compute(ctx);

    tide_kernel_node inner_kn = *kn;
    tide_dtype *dtypes = calloc((size_t)(kn->num_inputs + kn->num_outputs) + 1, sizeof *dtypes);
    tide_tensor **inputs = calloc((size_t)kn->num_inputs + 1, sizeof *inputs);
    tide_tensor **outputs = calloc((size_t)kn->num_outputs + 1, sizeof *outputs);
    if (!dtypes || !inputs || !outputs) {
        free(dtypes);
        free(inputs);
        free(outputs);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory computing in float32");
    }
    inner_kn.in_dtypes = dtypes;
    inner_kn.out_dtypes = dtypes + kn->num_inputs;
    tide_kernel_ctx inner = *ctx;
    inner.kn = &inner_kn;
    inner.inputs = inputs;
    inner.outputs = outputs;
    inner.status = TIDE_OK;
    inner.err = NULL;
    inner.num_held = 0;
    inner.preset = NULL; /* the node's preset outputs are half: its own outputs take them below */

    tide_status st = TIDE_OK;
    for (int i = 0; i < kn->num_inputs; i++) {
        const bool half = is_half(kn->in_dtypes[i]);
        dtypes[i] = half ? TIDE_FLOAT32 : kn->in_dtypes[i];
        tide_tensor *t = ctx->inputs ? ctx->inputs[i] : NULL;
        if (half && t && t != tide__dead && t->dtype == kn->in_dtypes[i]) {
            if (!(inputs[i] = widened(ctx, t))) {
                st = ctx->status;
                break;
            }
        } else {
            inputs[i] = t && t != tide__dead ? tide_tensor_retain(t) : t;
        }
    }
    for (int i = 0; i < kn->num_outputs; i++)
        inner_kn.out_dtypes[i] = is_half(kn->out_dtypes[i]) ? TIDE_FLOAT32 : kn->out_dtypes[i];

    if (st == TIDE_OK) {
        tide__kernel_ctx_returned(&inner, compute(&inner));
        for (int i = 0; i < inner.num_held; i++) /* variables the float32 kernel held: the node's to release */
            if (ctx->num_held < (int)(sizeof ctx->held / sizeof ctx->held[0]))
                ctx->held[ctx->num_held++] = inner.held[i];
            else
                tide__variable_release(inner.held[i]);
        if (inner.status != TIDE_OK) { /* the message already names the node */
            tide_error_free(ctx->err);
            ctx->err = inner.err;
            inner.err = NULL;
            ctx->status = st = inner.status;
        } else {
            st = hand_on_outputs(ctx, &inner);
        }
    }
    tide_error_free(inner.err);
    for (int i = 0; i < kn->num_inputs; i++)
        if (inputs[i] != tide__dead)
            tide_tensor_release(inputs[i]);
    for (int i = 0; i < kn->num_outputs; i++)
        if (outputs[i] != tide__dead)
            tide_tensor_release(outputs[i]);
    free(dtypes);
    free(inputs);
    free(outputs);
    return st;
}
