/* kernel_ctx.c — the context a kernel computes in: its node's facts, inputs, output allocation
 * (with in-place forwarding), errors that name the node, seeds, parallel loops and variables. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "step_memory.h"

const char *tide_kernel_node_name(const tide_kernel_ctx *ctx) { return ctx->kn->name; }
const char *tide_kernel_op_name(const tide_kernel_ctx *ctx) { return ctx->kn->op->name; }
const tide_attrs *tide_kernel_attrs(const tide_kernel_ctx *ctx) { return ctx->kn->attrs; }
void *tide_kernel_state(const tide_kernel_ctx *ctx) { return ctx->kn->state; }
int tide_kernel_num_inputs(const tide_kernel_ctx *ctx) { return ctx->kn->num_inputs; }
int tide_kernel_num_outputs(const tide_kernel_ctx *ctx) { return ctx->kn->num_outputs; }
int64_t tide_kernel_graph_seed(const tide_kernel_ctx *ctx) { return ctx->kn->graph_seed; }
tide_status tide_kernel_status(const tide_kernel_ctx *ctx) { return ctx->status; }

tide_dtype tide_kernel_output_dtype(const tide_kernel_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->kn->num_outputs ? ctx->kn->out_dtypes[i] : TIDE_INVALID_DTYPE;
}

tide_dtype tide_kernel_input_dtype(const tide_kernel_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->kn->num_inputs ? ctx->kn->in_dtypes[i] : TIDE_INVALID_DTYPE;
}

tide_tensor *tide_kernel_input(const tide_kernel_ctx *ctx, int i)
{
    tide_tensor *t = ctx->inputs && i >= 0 && i < ctx->kn->num_inputs ? ctx->inputs[i] : NULL;
    return t == tide__dead ? NULL : t;
}

bool tide_kernel_input_is_dead(const tide_kernel_ctx *ctx, int i)
{
    return ctx->inputs && i >= 0 && i < ctx->kn->num_inputs && ctx->inputs[i] == tide__dead;
}

static void node_prefix(const tide_kernel_ctx *ctx, tide_error *err)
{
    if (ctx->kn->node)
        tide__error_prefix(err, "node '%s' (%s)", ctx->kn->name, ctx->kn->op->name);
    else
        tide__error_prefix(err, "op %s", ctx->kn->op->name);
}

tide_status tide_kernel_error(tide_kernel_ctx *ctx, tide_status code, const char *fmt, ...)
{
    if (!ctx->err)
        ctx->err = tide_error_new();
    va_list ap;
    va_start(ap, fmt);
    tide__error_vset(ctx->err, code, fmt, ap);
    va_end(ap);
    node_prefix(ctx, ctx->err);
    ctx->status = code;
    return code;
}

static tide_status record_err(tide_kernel_ctx *ctx, tide_error *err)
{
    if (!ctx->err)
        ctx->err = tide_error_new();
    tide__error_copy(ctx->err, err);
    node_prefix(ctx, ctx->err);
    ctx->status = tide_error_code(err);
    return ctx->status;
}

static void set_output(tide_kernel_ctx *ctx, int i, tide_tensor *t)
{
    tide_tensor_release(ctx->outputs[i]);
    ctx->outputs[i] = t;
}

/* A tensor on the kernel's device (its memory counts there); NULL with the error recorded. */
static tide_tensor *alloc_on_device(tide_kernel_ctx *ctx, tide_dtype dt, const tide_shape *shape, bool zero)
{
    tide_device *d = ctx->kn->device;
    tide_tensor *t = d ? d->ops->allocate(d, dt, shape, zero, NULL) : tide__tensor_alloc(dt, shape, zero, NULL);
    if (!t) { /* the rare path: allocate again only to get the message */
        tide_error *err = tide_error_new();
        t = d ? d->ops->allocate(d, dt, shape, zero, err) : tide__tensor_alloc(dt, shape, zero, err);
        if (!t)
            record_err(ctx, err);
        tide_error_free(err);
    }
    if (t && ctx->step) /* an observed step's account (not part of the context: the per-node path stays as it was) */
        tide__step_memory_charge(tide__step_memory_of(ctx->step), t->buf);
    return t;
}

void tide_kernel_set_output_dead(tide_kernel_ctx *ctx, int i)
{
    if (i >= 0 && i < ctx->kn->num_outputs)
        set_output(ctx, i, tide__dead);
}

tide_tensor *tide_kernel_alloc_output(tide_kernel_ctx *ctx, int i, const tide_shape *shape, bool zero)
{
    if (i < 0 || i >= ctx->kn->num_outputs) {
        tide_kernel_error(ctx, TIDE_INTERNAL, "kernel allocated output %d of %d", i, ctx->kn->num_outputs);
        return NULL;
    }
    tide_tensor *t = NULL;
    if (__builtin_expect(ctx->preset != NULL, 0) && ctx->preset[i] && tide_shape_equal(&ctx->preset[i]->shape, shape)) {
        t = tide_tensor_retain(ctx->preset[i]);
        if (zero) /* on the thread of the device whose memory it is (a preset's kernel runs there) */
            memset(tide_tensor_device_pointer(t), 0, tide_tensor_byte_size(t));
    } else {
        t = alloc_on_device(ctx, ctx->kn->out_dtypes[i], shape, zero);
    }
    if (t)
        set_output(ctx, i, t);
    return t;
}

tide_tensor *tide__kernel_alloc_temp(tide_kernel_ctx *ctx, tide_dtype dt, const tide_shape *shape)
{
    return alloc_on_device(ctx, dt, shape, false);
}

tide_tensor *tide_kernel_forward_or_alloc(tide_kernel_ctx *ctx, int in_index, int out_index,
                                          const tide_shape *shape)
{
    tide_tensor *in = tide_kernel_input(ctx, in_index);
    /* Only the executor owns its input references; an eager caller's tensors are never written. */
    if (ctx->step && in && out_index >= 0 && out_index < ctx->kn->num_outputs &&
        in->dtype == ctx->kn->out_dtypes[out_index] && in->dtype != TIDE_STRING &&
        tide_shape_num_elements(shape) == in->num_elements && tide_tensor_is_exclusive(in)) {
        tide_tensor *out;
        if (tide_shape_equal(shape, &in->shape))
            out = tide_tensor_retain(in);
        else
            out = tide__tensor_view(in->buf, in->offset, in->dtype, shape, NULL);
        if (out) {
            set_output(ctx, out_index, out);
            return out;
        }
    }
    return tide_kernel_alloc_output(ctx, out_index, shape, false);
}

void tide_kernel_set_output(tide_kernel_ctx *ctx, int i, tide_tensor *t)
{
    if (i < 0 || i >= ctx->kn->num_outputs || !t) {
        tide_kernel_error(ctx, TIDE_INTERNAL, "kernel set output %d of %d", i, ctx->kn->num_outputs);
        return;
    }
    set_output(ctx, i, tide_tensor_retain(t));
}

uint64_t tide__kernel_step_id(const tide_kernel_ctx *ctx)
{
    if (!ctx->step)
        return 0;
    return tide__step_run_id(ctx->step);
}

struct tide_rendezvous *tide__kernel_rendezvous(const tide_kernel_ctx *ctx)
{
    return ctx->kn->engine ? ctx->kn->engine->rendezvous : NULL;
}

bool tide_kernel_cancelled(const tide_kernel_ctx *ctx)
{
    return ctx->step && tide__step_cancelled((struct tide_step *)ctx->step);
}

tide_status tide__kernel_ctx_returned(tide_kernel_ctx *ctx, tide_status returned)
{
    if (returned != TIDE_OK && ctx->status == TIDE_OK)
        tide_kernel_error(ctx, returned, "the kernel returned %s without a message (tide_kernel_error)",
                          tide_status_name(returned));
    return ctx->status;
}

void tide_kernel_done(tide_kernel_ctx *ctx, tide_status status)
{
    tide__kernel_ctx_returned(ctx, status);
    tide__exec_async_done(ctx->item, ctx->step, ctx, status);
}

/* The threads a kernel may use: its device's share when the engine has several devices. */
static tide_threadpool *kernel_pool(const tide_kernel_ctx *ctx)
{
    if (ctx->kn->device && ctx->kn->device->pool)
        return ctx->kn->device->pool;
    return ctx->kn->engine ? ctx->kn->engine->pool : NULL;
}

int tide_kernel_num_threads(const tide_kernel_ctx *ctx)
{
    int n = kernel_pool(ctx) ? tide__pool_size(kernel_pool(ctx)) : 1;
    return n > 1 ? n : 1;
}

/* A chunk of a parallel loop of a kernel running for a device whose memory the host cannot read (the
 * simulated device's CPU kernels): pool threads work for that device while they run it. */
typedef struct device_chunk {
    void (*fn)(int64_t begin, int64_t end, void *arg);
    void *arg;
    tide_device *device;
} device_chunk;

static void run_device_chunk(int64_t begin, int64_t end, void *arg)
{
    const device_chunk *c = arg;
    tide_device *previous = tide_device_set_current(c->device);
    c->fn(begin, end, c->arg);
    tide_device_set_current(previous);
}

void tide_kernel_parallel_for(tide_kernel_ctx *ctx, int64_t n, double cost_per_unit,
                              void (*fn)(int64_t begin, int64_t end, void *arg), void *arg)
{
    if (n <= 0)
        return;
    double total = cost_per_unit * (double)n;
    if (total < 50000.0 || !ctx->kn->engine) { /* under ~50 us: not worth waking a thread */
        fn(0, n, arg);
        return;
    }
    int64_t min_chunk = (int64_t)(20000.0 / (cost_per_unit > 0 ? cost_per_unit : 1));
    tide_device *d = ctx->kn->device;
    if (d && !d->host_visible) {
        device_chunk c = {fn, arg, d};
        tide__pool_parallel_for(kernel_pool(ctx), n, min_chunk < 1 ? 1 : min_chunk, run_device_chunk, &c);
        return;
    }
    tide__pool_parallel_for(kernel_pool(ctx), n, min_chunk < 1 ? 1 : min_chunk, fn, arg);
}

/* ---------------------------------------------------------------- variables */

static tide_variable *hold(tide_kernel_ctx *ctx, tide_variable *v)
{
    if (v && ctx->num_held < (int)(sizeof ctx->held / sizeof ctx->held[0]))
        ctx->held[ctx->num_held++] = v;
    else if (v) {
        tide__variable_release(v);
        tide_kernel_error(ctx, TIDE_INTERNAL, "too many variables in one kernel");
        return NULL;
    }
    return v;
}

static tide_variable *variable_of(tide_kernel_ctx *ctx, const tide_node *var_node, bool redeclare)
{
    if (!ctx->kn->engine) {
        tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "variables need an engine");
        return NULL;
    }
    const char *container = "", *shared = "";
    tide_dtype dt = TIDE_FLOAT32;
    tide_shape shape = tide_shape_unknown();
    const tide_attrs *attrs = var_node ? var_node->attrs : ctx->kn->attrs;
    tide_attrs_get_string(attrs, "container", &container);
    tide_attrs_get_string(attrs, "shared_name", &shared);
    tide_attrs_get_type(attrs, "dtype", &dt);
    tide_attrs_get_shape(attrs, "shape", &shape);
    const char *name = shared[0] ? shared : var_node ? var_node->name : ctx->kn->name;
    tide_error *err = tide_error_new();
    tide_variable *v = tide__engine_variable(ctx->kn->engine, container, name, dt, &shape, true, redeclare, err);
    if (!v)
        record_err(ctx, err);
    tide_error_free(err);
    return hold(ctx, v);
}

tide_variable *tide_kernel_own_variable(tide_kernel_ctx *ctx)
{
    return variable_of(ctx, ctx->kn->node, false);
}

static tide_variable *ref_variable(tide_kernel_ctx *ctx, int i, bool redeclare)
{
    if (i < 0 || i >= ctx->kn->num_inputs || !ctx->kn->ref_sources || !ctx->kn->ref_sources[i]) {
        tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                          "input %d must come from a Variable node (eager calls cannot update variables)", i);
        return NULL;
    }
    return variable_of(ctx, ctx->kn->ref_sources[i], redeclare);
}

tide_variable *tide_kernel_input_variable(tide_kernel_ctx *ctx, int i) { return ref_variable(ctx, i, false); }

tide_variable *tide_kernel_assigned_variable(tide_kernel_ctx *ctx, int i) { return ref_variable(ctx, i, true); }

/* ---------------------------------------------------------------- lifecycle */

tide_status tide__kernel_node_init(tide_kernel_node *kn, tide_error *err)
{
    kn->state = NULL;
    if (!kn->kernel->spec.init)
        return TIDE_OK;
    tide_kernel_ctx ctx = {.kn = kn, .in_init = true};
    tide_status st = kn->kernel->spec.init(&ctx, &kn->state);
    if (st != TIDE_OK) {
        if (ctx.err)
            tide__error_copy(err, ctx.err);
        else
            tide_error_set(err, st, "node '%s' (%s): kernel init failed", kn->name, kn->op->name);
        tide_error_free(ctx.err);
    }
    return st;
}

void tide__kernel_node_clear(tide_kernel_node *kn)
{
    if (kn->state && kn->kernel && kn->kernel->spec.destroy)
        kn->kernel->spec.destroy(kn->state);
    kn->state = NULL;
}

tide_status tide__kernel_ctx_finish(tide_kernel_ctx *ctx)
{
    for (int i = 0; i < ctx->num_held; i++)
        tide__variable_release(ctx->held[i]);
    ctx->num_held = 0;
    if (ctx->status != TIDE_OK)
        return ctx->status;
    for (int i = 0; i < ctx->kn->num_outputs; i++)
        if (!ctx->outputs[i])
            return tide_kernel_error(ctx, TIDE_INTERNAL, "kernel did not produce output %d", i);
    return TIDE_OK;
}

void tide__kernel_ctx_take_error(tide_kernel_ctx *ctx, tide_error *err)
{
    if (ctx->err)
        tide__error_copy(err, ctx->err);
    else if (ctx->status != TIDE_OK)
        tide_error_set(err, ctx->status, "node '%s' (%s) failed", ctx->kn->name, ctx->kn->op->name);
    tide_error_free(ctx->err);
    ctx->err = NULL;
}
