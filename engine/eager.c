/* eager.c — runs one op outside any graph, on the engine's first CPU device: the same binding, shape
 * inference and kernels a graph node gets. Tests compare it with the graph path; the REPL will use it
 * for host-side tensor arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct eager_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
} eager_wait;

static __thread eager_wait *current_wait; /* the eager call this thread is waiting for */

void tide__eager_async_done(tide_kernel_ctx *ctx, tide_status status)
{
    TIDE_UNUSED(status);
    eager_wait *w = (eager_wait *)ctx->item; /* eager calls keep their waiter in item */
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static tide_status compute(tide_kernel_ctx *ctx)
{
    const tide_kernel_spec *spec = &ctx->kn->kernel->spec;
    if (!(spec->flags & TIDE_KERNEL_ASYNC) || !spec->compute_async)
        return spec->compute(ctx);
    eager_wait w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    ctx->item = (struct tide_exec_item *)&w;
    current_wait = &w;
    spec->compute_async(ctx);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    current_wait = NULL;
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    return ctx->status;
}

/* Output shapes the shape function knows must match what the kernel produced. */
static tide_status check_shapes(const char *who, tide_tensor **outs, const tide_shape *inferred, int n,
                                tide_error *err)
{
    for (int i = 0; i < n; i++)
        if (outs[i] == tide__dead)
            return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                                  "%s: output %d is dead (a branch not taken): control flow means something "
                                  "only in a graph, not eagerly", who, i);
        else if (!tide_shape_compatible(&inferred[i], &outs[i]->shape)) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            return tide_error_set(err, TIDE_INTERNAL,
                                  "%s: output %d has shape %s but shape inference said %s", who, i,
                                  tide_shape_format(&outs[i]->shape, a, sizeof a),
                                  tide_shape_format(&inferred[i], b, sizeof b));
        }
    return TIDE_OK;
}

tide_status tide_engine_run_op(tide_engine *engine, const char *op, tide_tensor *const *inputs,
                               int num_inputs, const tide_attrs *attrs, tide_tensor **outputs,
                               int max_outputs, int *num_outputs, tide_error *err)
{
    if (num_outputs)
        *num_outputs = 0;
    const tide_op_def *def = tide__registry_find(op);
    if (!def) {
        char hint[128];
        return tide_error_set(err, TIDE_NOT_FOUND, "unknown op '%s'%s", op ? op : "(null)",
                              tide__registry_suggest(op ? op : "", hint, sizeof hint));
    }
    char who[160];
    snprintf(who, sizeof who, "op %s", def->name);
    for (int i = 0; i < num_inputs; i++)
        if (!inputs[i])
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: input %d is NULL", who, i);
    tide_attrs *bound = tide_attrs_clone(attrs);
    tide_dtype in_dt[64];
    tide_shape in_shape[64];
    if (num_inputs > 64) {
        tide_attrs_free(bound);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: more than 64 inputs", who);
    }
    for (int i = 0; i < num_inputs; i++) {
        in_dt[i] = inputs[i]->dtype;
        in_shape[i] = inputs[i]->shape;
    }
    tide_binding b;
    tide_status st = tide__bind(def, who, in_dt, num_inputs, NULL, 0, bound, &b, err);
    if (st != TIDE_OK) {
        tide_attrs_free(bound);
        return st;
    }
    tide_shape *inferred = calloc((size_t)b.num_outputs + 1, sizeof *inferred);
    tide_tensor **outs = calloc((size_t)b.num_outputs + 1, sizeof *outs);
    const tide_kernel_def *k = tide__registry_kernel(def, "cpu", bound);
    if (!inferred || !outs) {
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else if (b.num_outputs > max_outputs) {
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s has %d outputs, room for %d given", who,
                            b.num_outputs, max_outputs);
    } else {
        st = tide__infer_shapes(def, who, bound, in_shape, in_dt, (const tide_tensor *const *)inputs,
                                num_inputs, b.num_outputs, inferred, err);
    }
    if (st == TIDE_OK && !k) {
        tide_dtype t = TIDE_INVALID_DTYPE;
        tide_attrs_get_type(bound, "T", &t);
        st = tide_error_set(err, TIDE_UNIMPLEMENTED, "%s: no cpu kernel%s%s", who,
                            t ? " for T=" : "", t ? tide_dtype_name(t) : "");
    }
    tide_kernel_node kn = {.name = def->name, .op = def, .attrs = bound, .kernel = k,
                           .num_inputs = num_inputs, .num_outputs = b.num_outputs,
                           .in_dtypes = in_dt, .out_dtypes = b.output_dtypes, .engine = engine,
                           .device = engine ? &engine->devices[0] : NULL};
    if (st == TIDE_OK)
        st = tide__kernel_node_init(&kn, err);
    if (st == TIDE_OK) {
        tide_kernel_ctx ctx = {.kn = &kn, .inputs = (tide_tensor **)inputs, .outputs = outs};
        tide__kernel_ctx_returned(&ctx, compute(&ctx));
        st = tide__kernel_ctx_finish(&ctx);
        if (st != TIDE_OK)
            tide__kernel_ctx_take_error(&ctx, err);
        if (st == TIDE_OK)
            st = check_shapes(who, outs, inferred, b.num_outputs, err);
        tide__kernel_node_clear(&kn);
    }
    for (int i = 0; i < b.num_outputs; i++) {
        if (st == TIDE_OK)
            outputs[i] = outs[i];
        else
            tide_tensor_release(outs[i]);
    }
    if (st == TIDE_OK && num_outputs)
        *num_outputs = b.num_outputs;
    free(outs);
    free(inferred);
    tide__binding_clear(&b);
    tide_attrs_free(bound);
    return st;
}
