/* device_sim.c — the simulated accelerator, device type "sim" (/sim:0, /sim:1...; engine option
 * num_sim_devices or $TIDE_SIM_DEVICES). It is CPU-backed but behaves as a GPU does towards the rest
 * of tide, so that every path a GPU takes is tested on machines without one:
 *  - its own memory space: blocks from malloc through the device's caching allocator, of a buffer
 *    type that is not host-visible, so tide_tensor_data refuses them on every thread but the
 *    device's own, and data reaches the host only through copies;
 *  - four streams (compute, host to device, device to host, device to device), each a worker thread
 *    with a FIFO of tasks: copies and host functions run in launch order, on the device's thread;
 *  - events: a count of records and of completions, which other streams and the host wait for;
 *  - asynchronous compute: a kernel is launched on the compute stream and completes later through
 *    tide_kernel_done, from that stream's thread.
 * Its kernels are the CPU's: when the registry is finalised every synchronous CPU kernel gets a "sim"
 * twin (tide__sim_add_kernels) whose compute_async launches the CPU kernel on the device's compute
 * stream. There it checks that every input lies in this device's memory (an input anywhere else means
 * the plan missed a copy: an error naming the node and both places), runs the CPU kernel (its outputs
 * are allocated through the device, so in its memory), and moves any output the kernel took from
 * elsewhere (a Const's attr, a variable of the host) into device memory. Kernels of string tensors,
 * of lists of types, asynchronous ones and host-only ones (TIDE_KERNEL_HOST_ONLY) stay on the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "step_memory.h"

/* ---------------------------------------------------------------- memory */

static void *sim_alloc(tide_device *d, size_t bytes)
{
    TIDE_UNUSED(d);
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static void sim_free(tide_device *d, void *p, size_t bytes)
{
    TIDE_UNUSED(d), TIDE_UNUSED(bytes);
    free(p);
}

static const tide_buffer_type sim_memory = {
    .name = "sim",
    .host_visible = false,
    .alignment = 64,
    .alloc = sim_alloc,
    .free = sim_free,
};

static const tide_buffer_type *const sim_buffer_types[] = {&sim_memory};

static tide_status sim_stream_launch(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err);

static void zero_task(void *arg)
{
    tide_tensor *t = arg;
    memset(t->buf->data, 0, t->buf->size);
    tide_tensor_release(t);
}

/* Zeroes t as a GPU's memset does: in the compute stream's order (the block may have been freed by
 * work still queued there), at once on the stream's own thread. */
static tide_status zero_on_stream(tide_device *d, tide_tensor *t, tide_error *err)
{
    if (tide_device_current() == d) {
        memset(t->buf->data, 0, t->buf->size);
        return TIDE_OK;
    }
    tide_tensor_retain(t);
    tide_status st = sim_stream_launch(d, d->streams[TIDE_STREAM_COMPUTE]->context, zero_task, t, err);
    if (st != TIDE_OK)
        tide_tensor_release(t);
    return st;
}

static tide_tensor *sim_allocate(tide_device *d, tide_dtype dt, const tide_shape *shape, bool zero, tide_error *err)
{
    if (dt == TIDE_STRING) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "%s holds no string tensors", d->name);
        return NULL;
    }
    tide_tensor *t = tide_device_tensor_alloc(d, dt, shape, err);
    if (t && zero && zero_on_stream(d, t, err) != TIDE_OK) {
        tide_tensor_release(t);
        return NULL;
    }
    return t;
}

/* ---------------------------------------------------------------- streams: a worker thread each */

typedef struct sim_task {
    void (*fn)(void *arg);
    void *arg;
    struct sim_task *next;
} sim_task;

typedef struct sim_stream {
    tide_device *device;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    sim_task *head, *tail;
    uint64_t launched, finished;
    bool stop;
} sim_stream;

static void *stream_worker(void *arg)
{
    sim_stream *s = arg;
    tide_device_set_current(s->device); /* this thread may touch the device's memory */
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->work, &s->lock);
        if (!s->head)
            break;
        sim_task *t = s->head;
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&s->lock);
        s->finished++;
        pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *sim_stream_new(tide_device *d, tide_error *err)
{
    sim_stream *s = calloc(1, sizeof *s);
    if (!s) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    s->device = d;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, stream_worker, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->work);
        pthread_cond_destroy(&s->idle);
        free(s);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot start a stream thread of %s", d->name);
        return NULL;
    }
    return s;
}

/* Runs what was launched, then ends the thread. */
static void sim_stream_free(tide_device *d, void *stream)
{
    TIDE_UNUSED(d);
    sim_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free(s);
}

static tide_status sim_stream_launch(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err)
{
    sim_stream *s = stream;
    sim_task *t = malloc(sizeof *t);
    if (!t)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory launching work on %s", d->name);
    *t = (sim_task){fn, arg, NULL};
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->launched++;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    return TIDE_OK;
}

static tide_status sim_stream_synchronize(tide_device *d, void *stream, tide_error *err)
{
    TIDE_UNUSED(d), TIDE_UNUSED(err);
    sim_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    uint64_t until = s->launched;
    while (s->finished < until)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return TIDE_OK;
}

typedef struct sim_copy {
    void *dst;
    const void *src;
    size_t bytes;
} sim_copy;

static void run_copy(void *arg)
{
    sim_copy *c = arg;
    memcpy(c->dst, c->src, c->bytes);
    free(c);
}

static tide_status sim_memcpy_async(tide_device *d, void *stream, tide_copy_kind kind, void *dst, const void *src,
                                    size_t bytes, tide_error *err)
{
    TIDE_UNUSED(kind); /* CPU-backed: every kind is a memcpy on the stream's thread */
    if (!bytes)
        return TIDE_OK;
    sim_copy *c = malloc(sizeof *c);
    if (!c)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory launching a copy on %s", d->name);
    *c = (sim_copy){dst, src, bytes};
    tide_status st = sim_stream_launch(d, stream, run_copy, c, err);
    if (st != TIDE_OK)
        free(c);
    return st;
}

/* ---------------------------------------------------------------- events */

/* recorded counts the records; completed the highest record a stream reached. Reference counted: a
 * stream's task may outlive the caller's event_free. */
typedef struct sim_event {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t recorded, completed;
} sim_event;

typedef struct event_point {
    sim_event *event;
    uint64_t target;
} event_point;

static void event_release(sim_event *e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
}

static void *sim_event_new(tide_device *d, tide_error *err)
{
    sim_event *e = calloc(1, sizeof *e);
    if (!e) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory making an event of %s", d->name);
        return NULL;
    }
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    return e;
}

static void sim_event_free(tide_device *d, void *event)
{
    TIDE_UNUSED(d);
    event_release(event);
}

static void event_reached(void *arg)
{
    event_point *p = arg;
    pthread_mutex_lock(&p->event->lock);
    if (p->event->completed < p->target)
        p->event->completed = p->target;
    pthread_cond_broadcast(&p->event->cond);
    pthread_mutex_unlock(&p->event->lock);
    event_release(p->event);
    free(p);
}

static void event_await(void *arg)
{
    event_point *p = arg;
    pthread_mutex_lock(&p->event->lock);
    while (p->event->completed < p->target)
        pthread_cond_wait(&p->event->cond, &p->event->lock);
    pthread_mutex_unlock(&p->event->lock);
    event_release(p->event);
    free(p);
}

/* Launches fn on stream with the point (event, target) as argument. */
static tide_status launch_point(tide_device *d, void *stream, sim_event *e, uint64_t target, void (*fn)(void *),
                                tide_error *err)
{
    event_point *p = malloc(sizeof *p);
    if (!p)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory on %s", d->name);
    atomic_fetch_add(&e->refs, 1);
    *p = (event_point){e, target};
    tide_status st = sim_stream_launch(d, stream, fn, p, err);
    if (st != TIDE_OK) {
        event_release(e);
        free(p);
    }
    return st;
}

static tide_status sim_event_record(tide_device *d, void *event, void *stream, tide_error *err)
{
    sim_event *e = event;
    pthread_mutex_lock(&e->lock);
    uint64_t target = ++e->recorded;
    pthread_mutex_unlock(&e->lock);
    return launch_point(d, stream, e, target, event_reached, err);
}

/* Work launched on stream after this waits for the event's last record (none: nothing to wait for). */
static tide_status sim_stream_wait_event(tide_device *d, void *stream, void *event, tide_error *err)
{
    sim_event *e = event;
    pthread_mutex_lock(&e->lock);
    uint64_t target = e->recorded;
    bool reached = e->completed >= target;
    pthread_mutex_unlock(&e->lock);
    return reached ? TIDE_OK : launch_point(d, stream, e, target, event_await, err);
}

static tide_status sim_event_synchronize(tide_device *d, void *event, tide_error *err)
{
    TIDE_UNUSED(d), TIDE_UNUSED(err);
    sim_event *e = event;
    pthread_mutex_lock(&e->lock);
    uint64_t target = e->recorded;
    while (e->completed < target)
        pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
    return TIDE_OK;
}

static bool sim_event_query(tide_device *d, void *event)
{
    TIDE_UNUSED(d);
    sim_event *e = event;
    pthread_mutex_lock(&e->lock);
    bool reached = e->completed >= e->recorded;
    pthread_mutex_unlock(&e->lock);
    return reached;
}

static tide_status sim_synchronize(tide_device *d, tide_error *err)
{
    for (int r = 0; r < 4; r++)
        if (d->streams[r])
            sim_stream_synchronize(d, d->streams[r]->context, err);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- compute */

/* The node's inputs must lie in this device's memory: anything else is a copy the plan missed. */
static tide_status check_inputs(tide_device *d, tide_kernel_ctx *ctx)
{
    for (int i = 0; i < ctx->kn->num_inputs; i++) {
        const tide_tensor *t = ctx->inputs ? ctx->inputs[i] : NULL;
        if (t && t != tide__dead && !tide_device_can_read(d, t)) {
            char here[64], there[64];
            tide_device_short_name(d->name, here, sizeof here);
            tide_device_short_name(t->buf->device ? t->buf->device->name : "host", there, sizeof there);
            return tide_kernel_error(ctx, TIDE_INTERNAL, "input %d lies in the memory of %s, not of %s, where the "
                                     "node runs (no copy was made for it)", i, there, here);
        }
    }
    return TIDE_OK;
}

/* Outputs the CPU kernel took from elsewhere (a Const's attr, a host variable) move into device memory. */
static tide_status adopt_outputs(tide_device *d, tide_kernel_ctx *ctx)
{
    for (int i = 0; i < ctx->kn->num_outputs; i++) {
        tide_tensor *t = ctx->outputs[i];
        if (!t || t == tide__dead || tide_device_can_read(d, t))
            continue;
        tide_error *err = tide_error_new();
        tide_tensor *moved = sim_allocate(d, t->dtype, &t->shape, false, err);
        if (!moved) {
            tide_status st = tide_kernel_error(ctx, tide_error_code(err), "output %d: %s", i, tide_error_message(err));
            tide_error_free(err);
            return st;
        }
        tide_error_free(err);
        tide__step_memory_charge(tide__step_memory_of(ctx->step), moved->buf);
        memcpy(moved->buf->data, (const char *)t->buf->data + t->offset, tide_tensor_byte_size(t));
        tide_tensor_release(t);
        ctx->outputs[i] = moved;
    }
    return TIDE_OK;
}

/* On the compute stream's thread. */
static tide_status run_kernel(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    if (tide_kernel_cancelled(ctx))
        return tide_kernel_error(ctx, TIDE_CANCELLED, "not run: the step had already failed or was cancelled");
    tide_status st = check_inputs(d, ctx);
    if (st == TIDE_OK)
        st = tide__kernel_ctx_returned(ctx, k->compute(ctx));
    if (st == TIDE_OK)
        st = adopt_outputs(d, ctx);
    return st;
}

typedef struct kernel_launch {
    tide_device *device;
    const tide_kernel_spec *spec;
    tide_kernel_ctx *ctx;
    /* synchronous compute: the caller waits here */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    tide_status status;
} kernel_launch;

static void run_async(void *arg)
{
    kernel_launch *l = arg;
    tide_kernel_ctx *ctx = l->ctx;
    tide_status st = run_kernel(l->device, l->spec, ctx);
    free(l);
    tide_kernel_done(ctx, st);
}

static void sim_compute_async(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    kernel_launch *l = malloc(sizeof *l);
    tide_error *err = tide_error_new();
    tide_status st = l ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (l) {
        *l = (kernel_launch){.device = d, .spec = k, .ctx = ctx};
        st = sim_stream_launch(d, d->streams[TIDE_STREAM_COMPUTE]->context, run_async, l, err);
    }
    if (st != TIDE_OK) {
        free(l);
        tide_kernel_error(ctx, st, "%s", tide_error_message(err));
        tide_error_free(err);
        tide_kernel_done(ctx, st);
        return;
    }
    tide_error_free(err);
}

static void run_sync(void *arg)
{
    kernel_launch *l = arg;
    tide_status st = run_kernel(l->device, l->spec, l->ctx);
    pthread_mutex_lock(&l->lock);
    l->status = st;
    l->done = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Synchronous: launched on the compute stream like any kernel, and waited for. */
static tide_status sim_compute(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    kernel_launch l = {.device = d, .spec = k, .ctx = ctx};
    pthread_mutex_init(&l.lock, NULL);
    pthread_cond_init(&l.cond, NULL);
    tide_error *err = tide_error_new();
    tide_status st = sim_stream_launch(d, d->streams[TIDE_STREAM_COMPUTE]->context, run_sync, &l, err);
    if (st == TIDE_OK) {
        pthread_mutex_lock(&l.lock);
        while (!l.done)
            pthread_cond_wait(&l.cond, &l.lock);
        pthread_mutex_unlock(&l.lock);
        st = l.status;
    } else {
        tide_kernel_error(ctx, st, "%s", tide_error_message(err));
    }
    tide_error_free(err);
    pthread_mutex_destroy(&l.lock);
    pthread_cond_destroy(&l.cond);
    return st;
}

static int sim_count(const tide_engine_options *opts)
{
    return opts->num_sim_devices;
}

const tide_device_ops tide__sim_device_ops = {
    .type = "sim",
    .description = "a simulated accelerator: memory the host cannot read, streams on worker threads, "
                   "asynchronous copies and completion, the CPU's kernels",
    .buffer_types = sim_buffer_types,
    .num_buffer_types = 1,
    /* The CPU's kernels at the CPU's speed, behind two thread hand-overs per kernel, and memcpy copies
     * into fresh memory: bench_devices measured 15-24 us per node of a chain, 22 us per small copy and
     * 0.8 GB/s for 64 MiB round trips on a loaded machine (docs/benchmarks.md). */
    .cost = {.flops_per_s = 20e9, .bytes_per_s = 10e9, .launch_s = 20e-6, .copy_bytes_per_s = 2e9,
             .copy_latency_s = 20e-6},
    .count = sim_count,
    .allocate = sim_allocate,
    .stream_new = sim_stream_new,
    .stream_free = sim_stream_free,
    .stream_launch = sim_stream_launch,
    .stream_synchronize = sim_stream_synchronize,
    .memcpy_async = sim_memcpy_async,
    .event_new = sim_event_new,
    .event_free = sim_event_free,
    .event_record = sim_event_record,
    .stream_wait_event = sim_stream_wait_event,
    .event_synchronize = sim_event_synchronize,
    .event_query = sim_event_query,
    .compute = sim_compute,
    .compute_async = sim_compute_async,
    .synchronize = sim_synchronize,
};

/* ---------------------------------------------------------------- the CPU's kernels, on the device */

/* The compute_async of every "sim" kernel: the CPU kernel it wraps, launched on the node's device. */
static void wrapped_compute_async(tide_kernel_ctx *ctx)
{
    tide_device *d = ctx->kn->device;
    d->ops->compute_async(d, &ctx->kn->kernel->wraps->spec, ctx);
}

/* Can the CPU kernel k of op run on the simulated device? Into *c its type constraints without string
 * (false when they do not fit in the four a kernel has). */
static bool wrappable(const tide_op_def *op, const tide_kernel_def *k, tide_kernel_def *c)
{
    if (strcmp(k->device_type, "cpu") != 0 || !k->spec.compute || (k->spec.flags & (TIDE_KERNEL_ASYNC | TIDE_KERNEL_HOST_ONLY)))
        return false;
    for (int i = 0; i < op->num_inputs + op->num_outputs; i++) {
        const tide_arg_def *a = i < op->num_inputs ? &op->inputs[i] : &op->outputs[i - op->num_inputs];
        if (a->fixed_dtype == TIDE_STRING)
            return false;
    }
    c->num_constraints = k->num_constraints;
    for (int i = 0; i < k->num_constraints; i++)
        c->constraints[i] = k->constraints[i];
    const uint32_t no_string = ((1u << TIDE_NUM_DTYPES) - 2) & ~(1u << TIDE_STRING);
    for (int a = 0; a < op->num_attrs; a++) {
        const tide_attr_def *def = &op->attrs[a];
        if (def->type == TIDE_ATTR_TYPE_LIST)
            return false;
        if (def->type != TIDE_ATTR_TYPE)
            continue;
        int at = -1;
        for (int i = 0; i < c->num_constraints; i++)
            if (strcmp(c->constraints[i].attr, def->name) == 0)
                at = i;
        if (at < 0) {
            if (c->num_constraints == 4)
                return false;
            at = c->num_constraints++;
            c->constraints[at].attr = def->name;
            c->constraints[at].allowed = def->allowed_dtypes ? def->allowed_dtypes : no_string;
        }
        c->constraints[at].allowed &= no_string;
    }
    return true;
}

void tide__sim_add_kernels(tide_op_def **ops, int num_ops)
{
    for (int o = 0; o < num_ops; o++) {
        tide_kernel_def *last = NULL, *wrapped = NULL, **tail = &wrapped;
        for (tide_kernel_def *k = ops[o]->kernels; k; k = k->next) {
            last = k;
            tide_kernel_def c = {0};
            if (!wrappable(ops[o], k, &c))
                continue;
            tide_kernel_def *w = calloc(1, sizeof *w);
            if (!w)
                return; /* out of memory at load: the op stays CPU only */
            *w = c;
            w->spec = k->spec;
            w->spec.device_type = "sim";
            w->spec.compute = NULL;
            w->spec.compute_async = wrapped_compute_async;
            w->spec.flags |= TIDE_KERNEL_ASYNC;
            w->op_name = k->op_name;
            w->device_type = "sim";
            w->wraps = k;
            *tail = w;
            tail = &w->next;
        }
        if (last)
            last->next = wrapped;
    }
}
