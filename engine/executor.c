/* executor.c — runs a plan once (a step). Each item has a pending count of unfinished producers; an
 * item whose count reaches zero is ready. A thread keeps a LIFO stack of ready items and runs them
 * inline (cheap kernels, and one expensive kernel); further expensive items go to the pool, and when
 * the stack grows long while pool threads sit idle, half of it moves to the pool as one batch.
 * Asynchronous kernels return at once and finish later through tide_kernel_done. Timing and
 * observers cost one branch per node when off. The first failure aborts the step: later items are
 * skipped but still counted down, so the step always drains.
 *
 * Control flow (plans with Switch, Merge or loops; step.h has the rules): every ready item comes with
 * the iteration it runs in, values may be dead, and the outputs of Enter, Exit and NextIteration land
 * in other iterations (frames.c). A failed step's skipped items produce dead values there, so that
 * loops stop and every frame drains too. Without control flow the only iteration is the root one and
 * each of these costs one predictable branch per node. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "placement.h"
#include "rendezvous.h"
#include "step.h"
#include "step_capture.h"
#include "step_memory.h"

#define SPLIT_AT 32        /* ready-stack length at which idle pool threads get half of it */
#define MAX_INLINE_OUTPUTS 8

static void rs_init(ready_stack *rs)
{
    rs->items = rs->local;
    rs->n = 0;
    rs->cap = 64;
}

static void rs_free(ready_stack *rs)
{
    if (rs->items != rs->local)
        free(rs->items);
}

bool tide__rs_push(ready_stack *rs, int item, tide_iter *iter)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap * 2;
        ready_item *items = malloc(sizeof *items * (size_t)cap);
        if (!items)
            return false;
        memcpy(items, rs->items, sizeof *items * (size_t)rs->n);
        if (rs->items != rs->local)
            free(rs->items);
        rs->items = items;
        rs->cap = cap;
    }
    rs->items[rs->n++] = (ready_item){item, iter};
    return true;
}

/* The per-node path stays in one function (the compiler stopped inlining these when the debugger's
 * branches were added: ~20 more instructions per node in bench_executor's chain). */
#define HOT static inline __attribute__((always_inline))

HOT bool should_skip(tide_step *step);

/* For kernels that poll (long loops, asynchronous waits): true once the step failed, was cancelled
 * or ran out of time — recording the reason as the step's error. */
bool tide__step_cancelled(struct tide_step *step)
{
    return should_skip(step);
}

struct tide_step_memory *tide__step_memory_of(struct tide_step *step)
{
    return step ? step->memory : NULL;
}

void tide__step_queued_on(struct tide_step *step, struct tide_device *d)
{
    unsigned long long bit = 1ull << (d->index & 63);
    if (step && !(atomic_load_explicit(&step->queued_devices, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(&step->queued_devices, bit, memory_order_relaxed);
}

/* The step's end waits for the work its kernels queued on devices (once per device, not per kernel):
 * a deferred kernel's error fails the step there, and nothing of the step runs after it returns. */
/* After the devices were waited for: a queued kernel's timing says when it ran on its device (its
 * stream is its lane) and when the host launched it; then the observers are told (observe waited). */
static void timings_from_devices(tide_step *step)
{
    const tide_plan_frame *root = &step->plan->frames[0];
    const tide_step_args *a = step->args;
    for (int l = 0; step->spans && l < root->num_items; l++) {
        const tide_device_span *sp = &step->spans[l];
        tide_node_timing *t = &step->root.timings[l];
        if (!sp->stream || !t->node)
            continue;
        t->stream = sp->stream;
        t->stream_device = sp->device ? sp->device : t->device;
        t->launch_start_ns = t->start_ns;
        t->launch_end_ns = t->end_ns;
        if (sp->end_ns > 0) { /* else it did not run (the step failed first): the launch's times stay */
            t->start_ns = sp->start_ns;
            t->end_ns = sp->end_ns;
        }
        for (int o = 0; o < a->num_observers; o++)
            TIDE__OBSERVE(&a->observers[o], node_finished, &a->info, t);
    }
}

static void wait_for_queued_work(tide_step *step)
{
    unsigned long long queued = atomic_load(&step->queued_devices);
    tide_engine *e = step->args->engine;
    for (int i = 0; queued && i < e->num_devices; i++) {
        if (!(queued & (1ull << (i & 63))))
            continue;
        tide_error *err = tide_error_new();
        if (tide_device_synchronize(&e->devices[i], err) != TIDE_OK)
            tide__step_fail(step, tide_error_code(err), err, NULL);
        tide_error_free(err);
    }
}

uint64_t tide__step_run_id(struct tide_step *step)
{
    return step->args->info.run_id;
}

void tide__step_fail(tide_step *step, tide_status code, const tide_error *err, const char *msg)
{
    bool first = false;
    pthread_mutex_lock(&step->lock);
    if (!atomic_load(&step->failed)) {
        if (err)
            tide__error_copy(step->err, err);
        else
            tide_error_set(step->err, code, "%s", msg);
        atomic_store(&step->failed, true);
        first = true;
    }
    pthread_mutex_unlock(&step->lock);
    if (first && step->plan->uses_rendezvous) /* wakes the _Recv items waiting for a _Send that will not come */
        tide__rendezvous_abort(step->args->engine->rendezvous, step->args->info.run_id,
                               tide_error_code(step->err), tide_error_message(step->err));
    if (first) /* wakes the kernels waiting for an event (a queue's dequeue): cancel.h */
        tide__cancel_step_failed(step, tide_error_code(step->err), tide_error_message(step->err));
}

#define fail tide__step_fail

static void run_loop(tide_step *step, ready_stack *rs);

typedef struct batch {
    tide_step *step;
    int n;
    ready_item items[];
} batch;

static void batch_task(void *arg)
{
    batch *b = arg;
    ready_stack rs;
    rs_init(&rs);
    for (int i = 0; i < b->n; i++) /* cannot fail: batches are at most SPLIT_AT / 2 + cap */
        tide__rs_push(&rs, b->items[i].item, b->items[i].iter);
    tide_step *step = b->step;
    free(b);
    run_loop(step, &rs);
    rs_free(&rs);
}

/* Where an item runs: its device's own threads when the engine has several devices, else the pool. */
static tide_threadpool *pool_of(const tide_step *step, int item)
{
    const tide_device *d = step->plan->items[item].device;
    return d && d->pool ? d->pool : step->pool;
}

tide_threadpool *tide__step_pool_of(const tide_step *step, int item) { return pool_of(step, item); }

/* With several devices an item runs only on its device's threads: a thread of another pool (or the
 * caller's thread) hands it over. */
static bool elsewhere(const tide_step *step, int item)
{
    return step->multi_device && pool_of(step, item) != tide__pool_current();
}

static void submit(tide_step *step, const ready_item *items, int n)
{
    batch *b = malloc(sizeof *b + sizeof *items * (size_t)n);
    if (!b) { /* run them here instead */
        ready_stack rs;
        rs_init(&rs);
        for (int i = 0; i < n; i++)
            tide__rs_push(&rs, items[i].item, items[i].iter);
        run_loop(step, &rs);
        rs_free(&rs);
        return;
    }
    b->step = step;
    b->n = n;
    memcpy(b->items, items, sizeof *items * (size_t)n);
    tide__pool_submit(pool_of(step, items[0].item), batch_task, b); /* a batch holds one device's items */
}

/* Is edge e the last one carrying its output's tensor? (Edges are sorted by output.) */
static bool last_data_edge(const tide_exec_item *it, int e)
{
    for (int k = e + 1; k < it->num_edges && it->edges[k].output == it->edges[e].output; k++)
        if (it->edges[k].slot >= 0)
            return false;
    return true;
}

/* Control flow: what edge `edge` carrying `value` (tide__dead for a dead one, NULL on a control edge
 * of a live item) does to its destination's readiness in iteration `to` beyond the slot write. False
 * when the edge must not count down the pending count (step.h: a Merge's data edges). */
static bool arrive(const tide_exec_item *dst, const tide_edge *edge, tide_tensor *value, bool dead, tide_iter *to)
{
    if (!dst->is_merge) {
        if (dead)
            atomic_store_explicit(&to->dead[edge->dst_local], 1, memory_order_relaxed);
        return true;
    }
    if (edge->slot < 0) /* a Merge waits for its control inputs, dead or not */
        return true;
    if (!dead) { /* the first live input makes it ready; a second one (no well-formed loop has it) is ignored */
        TIDE_UNUSED(value);
        return !atomic_exchange_explicit(&to->merge_live[edge->dst_local], 1, memory_order_acq_rel);
    }
    int expected = to->n > 0 && dst->merge_back > 0 ? dst->merge_back : dst->merge_forward;
    int arrived = atomic_fetch_add_explicit(&to->merge_dead[edge->dst_local], 1, memory_order_acq_rel) + 1;
    return arrived == expected && !atomic_load_explicit(&to->merge_live[edge->dst_local], memory_order_acquire);
}

/* Hands each output to its consumers' input slots — the last consumer of an output gets the
 * producer's own reference (moved, and outs[] cleared) when `move`, so a consumer that is the only
 * user of a tensor finds it exclusive and may write in place even when it starts on another thread
 * before the producer's bookkeeping ends — and schedules the consumers that became ready. */
void tide__deliver(tide_step *step, const tide_exec_item *it, tide_tensor **outs, tide_iter *to, bool move,
                   ready_stack *rs)
{
    int kept_expensive = 0;
    bool all_dead = step->control_flow && !outs;
    for (int e = 0; e < it->num_edges; e++) {
        const tide_edge *edge = &it->edges[e];
        tide_tensor *value = all_dead ? tide__dead : edge->output >= 0 && outs ? outs[edge->output] : NULL;
        if (edge->slot >= 0 && value) {
            if (move && outs && last_data_edge(it, e)) {
                to->slots[edge->slot] = value;
                outs[edge->output] = NULL;
            } else {
                to->slots[edge->slot] = tide_tensor_retain(value);
            }
        }
        const tide_exec_item *next = &step->plan->items[edge->dst];
        if (step->control_flow && !arrive(next, edge, value, value == tide__dead, to))
            continue;
        if (atomic_fetch_sub_explicit(&to->pending[edge->dst_local], 1, memory_order_acq_rel) != 1)
            continue;
        if (step->tracing)
            to->timings[edge->dst_local].scheduled_ns = tide__now_ns();
        if (__builtin_expect(step->debugging, 0))
            tide__debug_state(step, edge->dst, TIDE_DEBUG_READY);
        if (elsewhere(step, edge->dst)) {
            submit(step, &(ready_item){edge->dst, to}, 1);
            continue;
        }
        if (next->expensive && (rs->n > 0 || kept_expensive) && tide__pool_idle(pool_of(step, edge->dst)) > 0) {
            submit(step, &(ready_item){edge->dst, to}, 1);
            continue;
        }
        kept_expensive += next->expensive;
        if (!tide__rs_push(rs, edge->dst, to))
            submit(step, &(ready_item){edge->dst, to}, 1);
    }
    if (rs->n >= SPLIT_AT && tide__pool_idle(pool_of(step, rs->items[0].item)) > 0) {
        int half = rs->n / 2;
        submit(step, rs->items, half); /* the oldest half: the bottom of the stack */
        memmove(rs->items, rs->items + half, sizeof *rs->items * (size_t)(rs->n - half));
        rs->n -= half;
    }
}

/* An item's outputs go where its kind says: the same iteration, or (frames.c) another one. */
static void propagate(tide_step *step, const tide_exec_item *it, tide_tensor **outs, tide_iter *iter,
                      ready_stack *rs)
{
    if (it->flow != FLOW_PLAIN)
        tide__frames_propagate(step, it, outs, iter, rs);
    else
        tide__deliver(step, it, outs, iter, true, rs);
}

void tide__iter_item_done(tide_step *step, tide_iter *iter, ready_stack *rs)
{
    if (atomic_fetch_sub_explicit(&iter->outstanding, 1, memory_order_acq_rel) != 1)
        return;
    if (iter != &step->root) {
        tide__frames_iter_over(step, iter, rs);
        return;
    }
    atomic_store(&step->finished_all, true);
    pthread_mutex_lock(&step->lock);
    step->done = true;
    pthread_cond_signal(&step->cond);
    pthread_mutex_unlock(&step->lock);
}

/* "[64, 256] []": the shapes of outs, clipped to size with "..." (buf always terminated). */
static void format_shapes(char *buf, size_t size, tide_tensor *const *outs, int n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; outs && i < n; i++) {
        char one[TIDE_SHAPE_STR_MAX];
        if (outs[i] == tide__dead)
            snprintf(one, sizeof one, "dead");
        else if (outs[i])
            tide_shape_format(tide_tensor_shape(outs[i]), one, sizeof one);
        else
            snprintf(one, sizeof one, "?");
        size_t len = strlen(one) + (i > 0);
        if (at + len >= size) {
            snprintf(buf + (at < size - 4 ? at : size - 4), 4, "...");
            return;
        }
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i > 0 ? " " : "", one);
    }
}

/* A traced step's host copy of output i of `it` for observers (tide_node_timing.copy): told to the
 * observers once the copy ran (span filled), in its stream's lane. */
static void copy_finished(const tide_step *step, const tide_exec_item *it, const tide_iter *iter, int i,
                          const tide_tensor *t, const tide_device_span *span, int64_t launch_start_ns)
{
    const tide_step_args *a = step->args;
    char name[256];
    snprintf(name, sizeof name, "%s:%d", it->node->name, i);
    tide_node_timing ct = {.node = it->node, .device = it->device->name, .thread = tide__pool_thread_index(),
                           .scheduled_ns = launch_start_ns, .start_ns = span->start_ns, .end_ns = span->end_ns,
                           .output_bytes = tide_tensor_byte_size(t),
                           .frame = iter->frame ? tide__frame_path(iter->frame) : "", .iteration = iter->n,
                           .stream = span->stream, .stream_device = span->device ? span->device : it->device->name,
                           .launch_start_ns = launch_start_ns, .launch_end_ns = tide__now_ns(), .copy = name};
    tide_tensor *const one[1] = {(tide_tensor *)t};
    format_shapes(ct.output_shapes, sizeof ct.output_shapes, one, 1);
    for (int o = 0; o < a->num_observers; o++)
        TIDE__OBSERVE(&a->observers[o], node_finished, &a->info, &ct);
}

/* Observers read tensors on the host: an output in an accelerator's memory reaches them as one host copy
 * (made by the device, device_copy.c; NULL when that failed), shared by every observer and released
 * after them. In a traced step the copy is timed in its stream's lane (copy_finished). */
static tide_tensor *for_host(tide_step *step, const tide_exec_item *it, tide_iter *iter, int i, tide_tensor *t)
{
    if (!t->buf->type || t->buf->type->host_visible)
        return tide_tensor_retain(t);
    tide_device_span span = {0};
    int64_t launch_start_ns = tide__now_ns();
    tide_tensor *host = tide__tensor_for_host(t, it->node, step->tracing ? &span : NULL);
    if (host && span.stream && span.start_ns > 0 && span.end_ns >= span.start_ns)
        copy_finished(step, it, iter, i, host, &span, launch_start_ns);
    return host;
}

/* The outputs of one execution as observers see them: each on the host, copied when the first observer
 * takes it. */
typedef struct observed_outputs {
    tide_step *step;
    const tide_exec_item *it;
    tide_iter *iter;
    tide_tensor **outs;
    tide_tensor **hosts;
    bool *made;
} observed_outputs;

static void produced(observed_outputs *v, const tide_observer *obs, const tide_node *node, int i,
                     const tide_exec_point *at)
{
    tide_tensor *t = v->outs[i];
    if (t && !v->made[i]) {
        v->made[i] = true;
        v->hosts[i] = for_host(v->step, v->it, v->iter, i, t);
    }
    if (!t || v->hosts[i])
        obs->tensor_produced(obs->user, &v->step->args->info, node, i, t ? v->hosts[i] : NULL, at);
}

/* The outputs to the observers that want them (out of line: not on the path of a plain step). */
__attribute__((noinline)) static void observe_tensors(tide_step *step, const tide_exec_item *it, tide_iter *iter,
                                                      tide_tensor **outs)
{
    const tide_step_args *a = step->args;
    tide_exec_point at = {iter->frame ? tide__frame_path(iter->frame) : "", iter->n};
    int n = it->kn.num_outputs;
    observed_outputs v = {step, it, iter, outs, calloc((size_t)n + 1, sizeof(tide_tensor *)),
                          calloc((size_t)n + 1, sizeof(bool))};
    if (!v.hosts || !v.made) {
        fprintf(stderr, "tide: out of memory: observers do not see the outputs of node '%s'\n", it->node->name);
        free(v.hosts);
        free(v.made);
        return;
    }
    for (int o = 0; o < a->num_observers; o++) {
        const tide_observer *obs = &a->observers[o].obs;
        if (!obs->tensor_produced || !tide__observer_enter(&a->observers[o]))
            continue;
        for (int i = 0; i < n; i++)
            if (outs[i] != tide__dead)
                produced(&v, obs, it->node, i, &at);
        for (int t = 0; t < it->num_twins; t++) /* the same tensors under the merged nodes' names */
            if (!obs->wants_tensors || obs->wants_tensors(obs->user, it->twins[t]))
                for (int i = 0; i < n; i++)
                    if (outs[i] != tide__dead)
                        produced(&v, obs, it->twins[t], i, &at);
        tide__observer_leave(&a->observers[o]);
    }
    for (int i = 0; i < n; i++)
        tide_tensor_release(v.hosts[i]);
    free(v.hosts);
    free(v.made);
}

static void observe(tide_step *step, const tide_exec_item *it, tide_iter *iter, tide_tensor **outs, size_t bytes)
{
    const tide_step_args *a = step->args;
    if (step->tracing) {
        tide_node_timing *t = &iter->timings[it->local];
        t->node = it->node;
        t->device = it->device->name;
        t->thread = tide__pool_thread_index();
        t->end_ns = tide__now_ns();
        t->output_bytes = bytes;
        t->frame = iter->frame ? tide__frame_path(iter->frame) : "";
        t->iteration = iter->n;
        t->fused = it->fused_members;
        format_shapes(t->output_shapes, sizeof t->output_shapes, outs, it->kn.num_outputs);
        bool queued = iter == &step->root && step->spans && step->spans[it->local].stream;
        for (int o = 0; !queued && o < a->num_observers; o++) /* queued: told at the step's end */
            TIDE__OBSERVE(&a->observers[o], node_finished, &a->info, t);
    }
    if (outs && atomic_load_explicit(&it->wants_tensors, memory_order_relaxed))
        observe_tensors(step, it, iter, outs);
}

HOT void release_inputs(tide_iter *iter, const tide_exec_item *it)
{
    tide_tensor **inputs = iter->slots + it->input_base;
    for (int i = 0; i < it->num_inputs; i++) {
        tide_tensor_release(inputs[i]);
        inputs[i] = NULL;
    }
}

/* After a node's kernel ran (sync or async): bookkeeping, propagation, release. */
/* The rest of complete_node, also for an execution the debugger parked after its kernel. */
HOT void deliver_outputs(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_kernel_ctx *ctx,
                            tide_status st, ready_stack *rs)
{
    if (__builtin_expect(step->debugging, 0)) {
        if (st == TIDE_OK)
            tide__debug_record(step, it, k, iter, ctx->outputs);
        tide__debug_state(step, k, st == TIDE_OK ? TIDE_DEBUG_DONE : TIDE_DEBUG_SKIPPED);
    }
    release_inputs(iter, it);
    if (step->observing && st == TIDE_OK) {
        size_t bytes = 0;
        for (int i = 0; i < it->kn.num_outputs; i++)
            if (ctx->outputs[i] != tide__dead)
                bytes += tide_tensor_byte_size(ctx->outputs[i]);
        observe(step, it, iter, ctx->outputs, bytes);
    }
    if (__builtin_expect(step->args->capture != NULL, 0) && st == TIDE_OK)
        tide__capture_outputs(step->args->capture, it, ctx->outputs);
    propagate(step, it, st == TIDE_OK ? ctx->outputs : NULL, iter, rs);
    for (int i = 0; i < it->kn.num_outputs; i++)
        tide_tensor_release(ctx->outputs[i]);
}

/* After a node's kernel ran (sync or async): bookkeeping, propagation, release. False when the debugger
 * parked the execution there (it completes when resumed: tide__finish_resumed). */
HOT bool complete_node(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_kernel_ctx *ctx,
                          ready_stack *rs)
{
    tide_status st = tide__kernel_ctx_finish(ctx);
    if (st != TIDE_OK) {
        tide_error *err = tide_error_new();
        tide__kernel_ctx_take_error(ctx, err);
        fail(step, st, err, NULL);
        tide_error_free(err);
    } else if (__builtin_expect(step->debugging, 0) && tide__debug_after(step, it, k, iter, ctx, ctx->outputs)) {
        return false;
    }
    deliver_outputs(step, it, k, iter, ctx, st, rs);
    return true;
}

typedef struct async_call {
    tide_kernel_ctx ctx;
    int item;
    tide_iter *iter;
    tide_tensor *outs[];
} async_call;

HOT bool should_skip(tide_step *step)
{
    if (atomic_load_explicit(&step->failed, memory_order_relaxed))
        return true;
    if (atomic_load_explicit(step->args->cancel_gen, memory_order_relaxed) != step->args->cancel_at_start) {
        fail(step, TIDE_CANCELLED, NULL, "the run was cancelled");
        return true;
    }
    int64_t deadline = atomic_load_explicit(&step->deadline_ns, memory_order_relaxed);
    if (deadline && tide__now_ns() > deadline) {
        fail(step, TIDE_DEADLINE_EXCEEDED, NULL, "the run exceeded its timeout");
        return true;
    }
    return false;
}

/* An item that does not run (the step failed, or it is dead): its outputs are dead (with control flow)
 * or missing, and it counts as done. */
static void skip_item(tide_step *step, const tide_exec_item *it, tide_iter *iter, ready_stack *rs)
{
    release_inputs(iter, it);
    propagate(step, it, NULL, iter, rs);
    tide__iter_item_done(step, iter, rs);
}

static void start_async(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter)
{
    async_call *call = calloc(1, sizeof *call + sizeof(tide_tensor *) * (size_t)(it->kn.num_outputs + 1));
    if (!call) {
        fail(step, TIDE_RESOURCE_EXHAUSTED, NULL, "out of memory starting an asynchronous kernel");
        ready_stack rs;
        rs_init(&rs);
        skip_item(step, it, iter, &rs);
        run_loop(step, &rs);
        rs_free(&rs);
        return;
    }
    call->item = k;
    call->iter = iter;
    call->ctx = (tide_kernel_ctx){.kn = &it->kn, .inputs = iter->slots + it->input_base,
                                  .outputs = call->outs, .step = step, .iter = iter,
                                  .item = (struct tide_exec_item *)call};
    if (step->spans && iter == &step->root) /* a _Recv's copy into or out of an accelerator: its lane */
        call->ctx.span = &step->spans[it->local];
    it->kn.kernel->spec.compute_async(&call->ctx);
}

void tide__eager_async_done(tide_kernel_ctx *ctx, tide_status status);

static void async_resume(void *arg)
{
    async_call *call = arg;
    tide_step *step = call->ctx.step;
    tide_iter *iter = call->iter;
    const tide_exec_item *it = &step->plan->items[call->item];
    ready_stack rs;
    rs_init(&rs);
    if (complete_node(step, it, call->item, iter, &call->ctx, &rs)) /* else the debugger parked it: kept */
        tide__iter_item_done(step, iter, &rs);
    free(call);
    run_loop(step, &rs);
    rs_free(&rs);
}

void tide__exec_async_done(struct tide_exec_item *item, struct tide_step *step, tide_kernel_ctx *ctx,
                           tide_status status)
{
    TIDE_UNUSED(status);
    if (!step) {
        tide__eager_async_done(ctx, status);
        return;
    }
    async_call *call = (async_call *)item;
    if (tide__pool_thread_index() >= 0)
        async_resume(call); /* its consumers on other devices are handed over by propagate */
    else /* a foreign thread: continue on the item's threads */
        tide__pool_submit(pool_of(step, call->item), async_resume, call);
}

/* checked: the debugger's before-check was made already (a resumed execution). */
static void run_node(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, ready_stack *rs, bool checked)
{
    if (step->tracing)
        iter->timings[it->local].start_ns = tide__now_ns();
    if (should_skip(step) ||
        (step->control_flow && !it->sees_dead && atomic_load_explicit(&iter->dead[it->local], memory_order_relaxed))) {
        if (__builtin_expect(step->debugging, 0))
            tide__debug_state(step, k, TIDE_DEBUG_SKIPPED);
        skip_item(step, it, iter, rs);
        return;
    }
    if (__builtin_expect(step->debugging, 0)) {
        if (!checked && tide__debug_before(step, it, k, iter))
            return; /* parked: resumed by tide__run_resumed */
        tide__debug_let_go(step, it, iter); /* the kernel may write over inputs only it holds */
    }
    if (it->async) {
        start_async(step, it, k, iter);
        return;
    }
    tide_tensor *local[MAX_INLINE_OUTPUTS] = {0};
    tide_tensor **outs = it->kn.num_outputs <= MAX_INLINE_OUTPUTS
                             ? local : calloc((size_t)it->kn.num_outputs, sizeof *outs);
    if (!outs) {
        fail(step, TIDE_RESOURCE_EXHAUSTED, NULL, "out of memory");
        skip_item(step, it, iter, rs);
        return;
    }
    tide_kernel_ctx ctx = {.kn = &it->kn, .inputs = iter->slots + it->input_base, .outputs = outs,
                           .step = step, .iter = iter};
    if (step->spans && iter == &step->root)
        ctx.span = &step->spans[it->local];
    tide__kernel_ctx_returned(&ctx, it->device->ops->compute(it->device, &it->kn.kernel->spec, &ctx));
    bool completed = complete_node(step, it, k, iter, &ctx, rs); /* parked: debug_step.c copied outs */
    if (outs != local)
        free(outs);
    if (completed)
        tide__iter_item_done(step, iter, rs);
}

void tide__run_resumed(tide_step *step, int k, tide_iter *iter)
{
    ready_stack rs;
    rs_init(&rs);
    run_node(step, &step->plan->items[k], k, iter, &rs, true);
    run_loop(step, &rs);
    rs_free(&rs);
}

static void run_virtual(tide_step *step, const tide_exec_item *it, tide_iter *iter, ready_stack *rs)
{
    if (it->kind == ITEM_FEED) {
        tide_tensor *value = tide_tensor_retain(step->args->feeds[it->index].value); /* the caller's */
        tide__deliver(step, it, &value, iter, true, rs);
        tide_tensor_release(value); /* NULL when the last consumer took it */
    } else { /* fetch */
        tide_tensor **slot = &iter->slots[it->input_base];
        if (*slot == tide__dead) {
            char msg[600];
            snprintf(msg, sizeof msg, "cannot fetch '%s': it was not computed (it lies on a branch of a "
                     "conditional that was not taken)", step->plan->fetch_names[it->index]);
            fail(step, TIDE_INVALID_ARGUMENT, NULL, msg);
            *slot = NULL;
        }
        step->args->fetch_values[it->index] = *slot; /* NULL if the step failed */
        const tide_step_args *a = step->args;
        for (int o = 0; *slot && o < a->num_observers; o++)
            TIDE__OBSERVE(&a->observers[o], tensor_fetched, &a->info, it->index, *slot);
        *slot = NULL;
        tide__deliver(step, it, NULL, iter, true, rs);
    }
    tide__iter_item_done(step, iter, rs);
}

void tide__finish_resumed(tide_step *step, parked *p)
{
    const tide_exec_item *it = &step->plan->items[p->item];
    ready_stack rs;
    rs_init(&rs);
    p->ctx.outputs = p->outs;
    deliver_outputs(step, it, p->item, p->iter, &p->ctx, TIDE_OK, &rs);
    tide__iter_item_done(step, p->iter, &rs);
    run_loop(step, &rs);
    rs_free(&rs);
}

static void run_loop(tide_step *step, ready_stack *rs)
{
    while (rs->n > 0) {
        ready_item r = rs->items[--rs->n];
        const tide_exec_item *it = &step->plan->items[r.item];
        if (it->kind == ITEM_NODE)
            run_node(step, it, r.item, r.iter, rs, false);
        else
            run_virtual(step, it, r.iter, rs);
    }
}

static tide_status check_feeds(const tide_step_args *a, tide_error *err)
{
    const tide_plan *p = a->plan;
    for (int i = 0; i < p->num_feeds; i++) {
        const tide_tensor *v = a->feeds[i].value;
        if (!v)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "the value fed to '%s' is NULL", p->feed_names[i]);
        if (v->dtype != p->feed_dtypes[i] || !tide_shape_compatible(&p->feed_shapes[i], &v->shape)) {
            char a1[TIDE_SHAPE_STR_MAX], a2[TIDE_SHAPE_STR_MAX];
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "cannot feed a %s tensor of shape %s to '%s', which is %s with shape %s",
                                  tide_dtype_name(v->dtype), tide_shape_format(&v->shape, a1, sizeof a1),
                                  p->feed_names[i], tide_dtype_name(p->feed_dtypes[i]),
                                  tide_shape_format(&p->feed_shapes[i], a2, sizeof a2));
        }
    }
    return TIDE_OK;
}

struct tide_step_stats {
    int count;
    tide_node_timing *items;
    double simulated_s; /* the plan's */
    int64_t peak_bytes; /* all devices together */
    int num_devices;
    int64_t *device_peak_bytes;
    char **paths;       /* frame paths the loop timings point into */
    int num_paths;
};

/* The root iteration's timings (root frame items) then the loops' (in the order their iterations
 * ended); the stats take the frame paths those point into. */
static tide_step_stats *collect_stats(tide_step *step)
{
    tide_step_stats *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    const tide_plan_frame *root = &step->plan->frames[0];
    st->items = calloc((size_t)root->num_items + (size_t)step->num_loop_timings + 1, sizeof *st->items);
    st->simulated_s = step->plan->simulated_s;
    st->peak_bytes = tide__step_memory_peak(step->memory, -1);
    st->num_devices = tide__step_memory_num_devices(step->memory);
    st->device_peak_bytes = calloc((size_t)st->num_devices + 1, sizeof *st->device_peak_bytes);
    for (int d = 0; st->device_peak_bytes && d < st->num_devices; d++)
        st->device_peak_bytes[d] = tide__step_memory_peak(step->memory, d);
    for (int l = 0; st->items && l < root->num_items; l++)
        if (step->plan->items[root->items[l]].kind == ITEM_NODE && step->root.timings[l].node)
            st->items[st->count++] = step->root.timings[l];
    for (int i = 0; st->items && i < step->num_loop_timings; i++)
        st->items[st->count++] = step->loop_timings[i];
    st->paths = step->paths;
    st->num_paths = step->num_paths;
    step->paths = NULL;
    step->num_paths = 0;
    return st;
}

int tide_step_stats_count(const tide_step_stats *st) { return st ? st->count : 0; }
double tide_step_stats_simulated_s(const tide_step_stats *st) { return st ? st->simulated_s : 0; }

int64_t tide_step_stats_peak_bytes(const tide_step_stats *st, int device)
{
    if (!st)
        return 0;
    if (device < 0)
        return st->peak_bytes;
    return device < st->num_devices && st->device_peak_bytes ? st->device_peak_bytes[device] : 0;
}

const tide_node_timing *tide_step_stats_at(const tide_step_stats *st, int i)
{
    return st && i >= 0 && i < st->count ? &st->items[i] : NULL;
}

void tide_step_stats_free(tide_step_stats *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->num_paths; i++)
        free(st->paths[i]);
    free(st->paths);
    free(st->items);
    free(st->device_peak_bytes);
    free(st);
}

/* Measured times replace the cost model's guesses in later placements (once per node: root-frame
 * executions only). */
static void record_costs(tide_step *step)
{
    const tide_plan_frame *root = &step->plan->frames[0];
    for (int l = 0; l < root->num_items; l++) {
        const tide_exec_item *it = &step->plan->items[root->items[l]];
        const tide_node_timing *t = &step->root.timings[l];
        if (it->kind == ITEM_NODE && t->node && t->end_ns > t->start_ns)
            tide__cost_record(step->args->engine->cost_table, it->node->name, (double)(t->end_ns - t->start_ns) * 1e-9);
    }
}

/* The root iteration: the step's own pending counts and slots for the root frame's items. */
static bool root_init(tide_step *step)
{
    const tide_plan_frame *f = &step->plan->frames[0];
    tide_iter *r = &step->root;
    r->pending = malloc(sizeof(atomic_int) * ((size_t)f->num_items + 1));
    r->slots = calloc((size_t)f->num_slots + 1, sizeof *r->slots);
    r->timings = step->tracing ? calloc((size_t)f->num_items + 1, sizeof *r->timings) : NULL;
    if (step->tracing && step->args->engine->num_devices > step->args->engine->num_cpu_devices &&
        !(step->spans = calloc((size_t)f->num_items + 1, sizeof *step->spans)))
        return false;
    if (step->control_flow) {
        r->dead = calloc((size_t)f->num_items + 1, sizeof *r->dead);
        r->merge_live = calloc((size_t)f->num_items + 1, sizeof *r->merge_live);
        r->merge_dead = calloc((size_t)f->num_items + 1, sizeof *r->merge_dead);
    }
    if (!r->pending || !r->slots || (step->tracing && !r->timings) ||
        (step->control_flow && (!r->dead || !r->merge_live || !r->merge_dead)))
        return false;
    if (step->control_flow)
        tide__frames_init_pending(step, f, r->pending);
    else
        for (int k = 0; k < f->num_items; k++)
            atomic_init(&r->pending[k], step->plan->items[k].initial_pending);
    atomic_init(&r->outstanding, f->num_items);
    return true;
}

static void root_free(tide_step *step)
{
    tide_iter *r = &step->root;
    if (r->slots) /* a failed step may leave inputs of skipped items */
        for (int s = 0; s < step->plan->frames[0].num_slots; s++)
            tide_tensor_release(r->slots[s]);
    free(r->pending);
    free(r->slots);
    free(r->timings);
    free(step->spans);
    step->spans = NULL;
    free(r->dead);
    free(r->merge_live);
    free(r->merge_dead);
}

/* Runs the roots (on the caller's thread, or their devices' threads) and waits for the step to drain. */
static void run_roots(tide_step *step)
{
    const tide_plan *p = step->plan;
    ready_stack rs;
    rs_init(&rs);
    for (int i = 0; i < p->num_roots; i++)
        if (step->multi_device || !tide__rs_push(&rs, p->roots[i], &step->root)) {
            if (step->tracing)
                step->root.timings[p->items[p->roots[i]].local].scheduled_ns = tide__now_ns();
            submit(step, &(ready_item){p->roots[i], &step->root}, 1); /* several devices: the caller runs nothing itself */
        }
    if (step->tracing)
        for (int i = 0; i < rs.n; i++)
            step->root.timings[p->items[rs.items[i].item].local].scheduled_ns = tide__now_ns();
    run_loop(step, &rs); /* the caller's thread works too */
    rs_free(&rs);
    /* Then it helps with queued work rather than sleep while pool threads may be descheduled
     * (with one device only: several keep their work on their own threads). */
    while (!step->multi_device && !atomic_load(&step->finished_all) &&
           !(step->debugging && __atomic_load_n(&step->parked_head, __ATOMIC_ACQUIRE)) &&
           tide__pool_run_pending(step->pool))
        ;
    pthread_mutex_lock(&step->lock);
    while (!step->done) {
        if (step->parked_head) { /* the debugger stopped the step: the user's turn, on this thread */
            pthread_mutex_unlock(&step->lock);
            tide__debug_present(step);
            pthread_mutex_lock(&step->lock);
            continue;
        }
        pthread_cond_wait(&step->cond, &step->lock);
    }
    pthread_mutex_unlock(&step->lock);
}

tide_status tide__step_run(const tide_step_args *a, tide_step_stats **stats, tide_error *err)
{
    const tide_plan *p = a->plan;
    tide_status st = check_feeds(a, err);
    if (st != TIDE_OK)
        return st;
    tide_step step = {.args = a, .plan = p, .pool = a->engine->pool, .control_flow = p->control_flow};
    step.tracing = a->info.tracing; /* the caller's opts->trace, or an observer's wants_trace */
    step.observing = step.tracing || a->num_observers > 0;
    atomic_init(&step.deadline_ns, 0);
    if (a->opts && a->opts->timeout_ms > 0)
        atomic_store(&step.deadline_ns, a->opts->timeout_ms > (INT64_MAX - tide__now_ns()) / 1000000LL
                                            ? INT64_MAX /* a timeout of centuries: none */
                                            : tide__now_ns() + a->opts->timeout_ms * 1000000LL);
    step.err = tide_error_new();
    /* A debugger that watches none of the plan's nodes, keeps no values and wants no finished step can
     * never stop this step nor look at it: the step runs as without one. */
    step.debugging = a->debugger.entry != NULL &&
                     (atomic_load_explicit(&p->num_debug_watched, memory_order_relaxed) > 0 ||
                      a->debugger.d.keep_values || a->debugger.d.finished);
    step.memory = step.observing ? tide__step_memory_new(a->engine->num_devices) : NULL;
    if (!root_init(&step) || !step.err || (step.debugging && !tide__debug_init(&step)) ||
        (step.observing && !step.memory)) {
        tide__step_memory_release(step.memory);
        root_free(&step);
        tide__debug_free(&step);
        tide_error_free(step.err);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory starting a run");
    }
    atomic_init(&step.failed, false);
    atomic_init(&step.finished_all, false);
    atomic_init(&step.live_frames, 0);
    atomic_init(&step.cancel, NULL);
    pthread_mutex_init(&step.lock, NULL);
    pthread_cond_init(&step.cond, NULL);
    step.multi_device = a->engine->num_devices > 1 && a->engine->devices[0].pool;
    atomic_init(&step.queued_devices, 0);
    if (p->num_items > 0)
        run_roots(&step);
    wait_for_queued_work(&step);
    if (step.spans)
        timings_from_devices(&step);
    if (p->uses_rendezvous) /* values sent but never received (a failed step) are released */
        tide__rendezvous_end_step(a->engine->rendezvous, a->info.run_id);
    tide__cancel_step_end(&step); /* every waiting kernel has finished */
    st = atomic_load(&step.failed) ? tide_error_code(step.err) : TIDE_OK;
    if (st != TIDE_OK) {
        tide__error_copy(err, step.err);
        for (int i = 0; i < p->num_fetches; i++) {
            tide_tensor_release(a->fetch_values[i]);
            a->fetch_values[i] = NULL;
        }
    }
    if (step.tracing)
        record_costs(&step);
    if (a->peak_bytes)
        *a->peak_bytes = tide__step_memory_peak(step.memory, -1);
    for (int d = 0; a->device_memory && d < a->engine->num_devices; d++)
        a->device_memory[d].peak_bytes = tide__step_memory_peak(step.memory, d);
    if (stats)
        *stats = step.tracing ? collect_stats(&step) : NULL;
    tide__step_memory_release(step.memory); /* what the step's values still hold keeps it */
    if (step.debugging)
        tide__debug_finished(&step);
    tide__frames_step_end(&step);
    tide__debug_free(&step);
    root_free(&step);
    pthread_mutex_destroy(&step.lock);
    pthread_cond_destroy(&step.cond);
    tide_error_free(step.err);
    return st;
}
