/* device_sim.c — the simulated accelerator, device type "sim" (/sim:0, /sim:1...; engine option
 * num_sim_devices or $TIDE_SIM_DEVICES). It is CPU-backed but behaves as a GPU does towards the rest
 * of tide, so that every path a GPU takes is tested on machines without one:
 *  - its own memory space: blocks from malloc through the device's caching allocator (stream-ordered,
 *    device_alloc.c), of a buffer type that is not host-visible, so tide_tensor_data refuses them on
 *    every thread but the device's own, and data reaches the host only through copies;
 *  - four streams (compute, host to device, device to host, device to device), each a worker thread
 *    with a FIFO of tasks: copies and host functions run in launch order, on the device's thread;
 *  - events: a count of records and of completions, which other streams and the host wait for;
 *  - kernels queued as a GPU's are: compute allocates the outputs on the calling thread (their shapes
 *    from the op's shape function over the inputs' shapes, else the graph's static shapes), queues
 *    the kernel on the compute stream and returns; the executor hands the outputs on and releases
 *    the inputs at once, and the kernel later reads and writes them through borrowed views (raw
 *    device memory, as a GPU kernel's pointers), so the allocator may reuse a block while queued work
 *    still reads it. An error there fails the step, which waits for the device once, at its end.
 *    A kernel whose output shapes the host cannot know (they depend on values in device memory), a
 *    stateful or control-flow op, or an eager call runs on the stream while the host waits (counted:
 *    tide_device_host_waits). $TIDE_SIM_DELAY_US slows every kernel down (tests: the host then runs
 *    far ahead of the device); $TIDE_SIM_REPLAY_FAULT=NODE makes that node's kernel fault in every
 *    replay of a captured graph (tests: a GPU kernel's fault inside a CUDA graph). A traced step gets each queued kernel's start and end on the worker's
 *    clock (the host's) and its lane, the compute stream.
 * Capture (device_sim_graph.c): while the compute stream captures, each kernel launched on it runs as
 * usual and is recorded with the addresses of its inputs and outputs; a launch of the graph runs the
 * recorded kernels again, in order, on the stream's thread, over those addresses.
 * Its kernels are the CPU's: when the registry is finalised every synchronous CPU kernel gets a "sim"
 * twin (tide__sim_add_kernels) that runs the CPU kernel on the device's compute stream. There it
 * checks that every input lies in this device's memory (an input anywhere else means the plan missed
 * a copy: an error naming the node and both places), runs the CPU kernel (its outputs are allocated
 * through the device, so in its memory), and moves any output the kernel took from elsewhere (a
 * Const's attr, a variable of the host) into device memory. Kernels of string tensors, of lists of
 * types, asynchronous ones and host-only ones (TIDE_KERNEL_HOST_ONLY) stay on the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "device_sim.h"
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

const tide_buffer_type tide__sim_memory = {
    .name = "sim",
    .host_visible = false,
    .alignment = 64,
    .alloc = sim_alloc,
    .free = sim_free,
};

static const tide_buffer_type *const sim_buffer_types[] = {&tide__sim_memory};

static tide_status sim_stream_launch(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err);
static tide_status launch_task(tide_device *d, sim_stream *s, void (*fn)(void *arg), void *arg, bool host_fn,
                               tide_error *err);

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
    tide_status st = launch_task(d, d->streams[TIDE_STREAM_COMPUTE]->context, zero_task, t, false, err);
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
    /* On the host, allocations are made when kernels are launched, in launch order: a block freed after
     * queued readers were launched is safe for the kernel launched next, as on a GPU. A kernel running
     * on the device's own thread is at an EARLIER point of the stream than the host's latest launch, so
     * it must not take a block the host freed meanwhile (readers queued behind it would find it
     * overwritten): it gets only blocks whose free the stream has passed. */
    bool on_device = tide_device_current() == d;
    tide_tensor *t = tide__device_tensor_alloc_for(d, dt, shape, !on_device, err);
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

struct sim_stream {
    tide_device *device;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    sim_task *head, *tail;
    uint64_t launched, finished;
    bool stop;
    sim_graph *capture;            /* recording (device_sim_graph.c), under lock */
};

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

/* host_fn: work of the caller's (the table's stream_launch, a copy), which a capture cannot record. */
static tide_status launch_task(tide_device *d, sim_stream *s, void (*fn)(void *arg), void *arg, bool host_fn,
                               tide_error *err)
{
    sim_task *t = malloc(sizeof *t);
    if (!t)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory launching work on %s", d->name);
    *t = (sim_task){fn, arg, NULL};
    pthread_mutex_lock(&s->lock);
    if (host_fn && s->capture)
        tide__sim_graph_refuse(s->capture, "a host function or a copy was launched on the stream while it captured");
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

static tide_status sim_stream_launch(tide_device *d, void *stream, void (*fn)(void *arg), void *arg, tide_error *err)
{
    return launch_task(d, stream, fn, arg, true, err);
}

tide_status tide__sim_launch_device_work(tide_device *d, sim_stream *s, void (*fn)(void *arg), void *arg,
                                         tide_error *err)
{
    return launch_task(d, s, fn, arg, false, err);
}

sim_graph *tide__sim_stream_capture(sim_stream *s)
{
    pthread_mutex_lock(&s->lock);
    sim_graph *g = s->capture;
    pthread_mutex_unlock(&s->lock);
    return g;
}

sim_graph *tide__sim_stream_set_capture(sim_stream *s, sim_graph *g)
{
    pthread_mutex_lock(&s->lock);
    sim_graph *previous = s->capture;
    s->capture = g;
    pthread_mutex_unlock(&s->lock);
    return previous;
}

tide_status tide__sim_stream_synchronize(tide_device *d, void *stream, tide_error *err)
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
    tide_status st = launch_task(d, stream, fn, p, false, err);
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
            tide__sim_stream_synchronize(d, d->streams[r]->context, err);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- compute */

/* Input i is one the kernel reads in host memory (engine/host_inputs.c, as a GPU's does): the plan hands
 * it over there when its producer is on the host. */
static bool on_host(tide_device *d, const tide_kernel_ctx *ctx, int i)
{
    const tide_kernel_def *k = ctx->kn->kernel;
    return ctx->kn->node && tide__kernel_host_input(k && k->wraps ? k->wraps : k, d, ctx->kn->node, i);
}

/* Every input in the device's memory, but those the kernel reads on the host (on_host) that are in host
 * memory: anything else is a copy the plan missed. */
static tide_status check_inputs(tide_device *d, tide_kernel_ctx *ctx)
{
    for (int i = 0; i < ctx->kn->num_inputs; i++) {
        const tide_tensor *t = ctx->inputs ? ctx->inputs[i] : NULL;
        if (t && t != tide__dead && !tide_device_can_read(d, t) &&
            !(tide_device_can_read(NULL, t) && on_host(d, ctx, i))) {
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

/* On the compute stream's thread. capture: the graph recording the stream when it was launched. */
static tide_status run_kernel(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx, sim_graph *capture)
{
    if (tide_kernel_cancelled(ctx))
        return tide_kernel_error(ctx, TIDE_CANCELLED, "not run: the step had already failed or was cancelled");
    tide_status st = check_inputs(d, ctx);
    if (st == TIDE_OK)
        st = tide__kernel_ctx_returned(ctx, k->compute(ctx));
    if (st == TIDE_OK)
        st = adopt_outputs(d, ctx);
    if (st == TIDE_OK && capture)
        tide__sim_graph_record(capture, d, k, ctx);
    return st;
}

/* The simulated device's own state: $TIDE_SIM_DELAY_US, a pause before each queued kernel runs (tests:
 * the host then runs far ahead of the device, frees and reallocates while work is queued). */
typedef struct sim_state {
    int delay_us;
    /* $TIDE_SIM_REPLAY_FAULT: the node whose kernel faults whenever a graph replays it, as a GPU kernel
     * that hits an illegal address inside a CUDA graph (tests: a replay's failure), or NULL. */
    char *replay_fault;
    /* Held by a host thread while it queues a kernel (until the launch) and while a kernel runs with
     * the host waiting (from its launch to its end): see run_waiting. */
    pthread_mutex_t launch_lock;
} sim_state;

static tide_status sim_open(tide_device *d, tide_error *err)
{
    sim_state *st = calloc(1, sizeof *st);
    if (!st)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory opening %s", d->name);
    const char *env = getenv("TIDE_SIM_DELAY_US");
    st->delay_us = env ? atoi(env) : 0;
    if (st->delay_us < 0 || st->delay_us > 1000000)
        st->delay_us = 0;
    const char *fault = getenv("TIDE_SIM_REPLAY_FAULT");
    st->replay_fault = fault && *fault ? tide__strdup(fault) : NULL;
    pthread_mutex_init(&st->launch_lock, NULL);
    tide_device_set_context(d, st);
    return TIDE_OK;
}

static void sim_close(tide_device *d)
{
    sim_state *st = tide_device_context(d);
    if (st) {
        pthread_mutex_destroy(&st->launch_lock);
        free(st->replay_fault);
    }
    free(st);
}

const char *tide__sim_replay_fault(tide_device *d)
{
    const sim_state *st = tide_device_context(d);
    return st ? st->replay_fault : NULL;
}

/* The launch lock of d, taken on host threads only (a kernel on the device's own thread that launched
 * and waited would wait for itself anyway). NULL: not taken. */
static pthread_mutex_t *lock_launches(tide_device *d)
{
    sim_state *st = tide_device_context(d);
    if (!st || tide_device_current() == d)
        return NULL;
    pthread_mutex_lock(&st->launch_lock);
    return &st->launch_lock;
}

static void unlock_launches(pthread_mutex_t *lock)
{
    if (lock)
        pthread_mutex_unlock(lock);
}

static void delay(const tide_device *d)
{
    const sim_state *st = tide_device_context(d);
    if (st && st->delay_us > 0)
        usleep((useconds_t)st->delay_us);
}

/* ---------------------------------------------------------------- compute: queued, as a GPU's */

#define MAX_QUEUED_OUTPUTS 8

/* A kernel queued on the compute stream: it reads and writes through borrowed views (raw device
 * memory, as a GPU kernel does), so the executor may release its inputs and outputs meanwhile. */
typedef struct queued_kernel {
    tide_device *device;
    const tide_kernel_spec *spec;
    const tide_kernel_node *kn;
    struct tide_step *step;
    struct tide_iter *iter;
    tide_device_span *span;      /* a traced step's: when it ran (the worker's clock), or NULL */
    tide_tensor **inputs;        /* borrowed views, kn->num_inputs */
    tide_tensor *outputs[MAX_QUEUED_OUTPUTS]; /* borrowed views of the outputs the executor got */
    sim_graph *capture;          /* the stream captured when it was queued: record it */
} queued_kernel;

static void queued_free(queued_kernel *q)
{
    for (int i = 0; q->inputs && i < q->kn->num_inputs; i++)
        tide_tensor_release(q->inputs[i]);
    for (int i = 0; i < q->kn->num_outputs; i++)
        tide_tensor_release(q->outputs[i]);
    free(q->inputs);
    free(q);
}

/* What the CPU kernel made lands in the output the executor already handed on (the same memory when
 * it allocated through the preset; else copied: a Const's value, a forwarded view). */
static tide_status land_outputs(tide_kernel_ctx *ctx, queued_kernel *q)
{
    for (int i = 0; i < q->kn->num_outputs; i++) {
        tide_tensor *made = ctx->outputs[i], *want = q->outputs[i];
        if (tide_tensor_device_pointer(made) == tide_tensor_device_pointer(want) && made->buf->type)
            continue;
        if (made == tide__dead || made->dtype != want->dtype || !tide_shape_equal(&made->shape, &want->shape)) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INTERNAL, "output %d is %s, not the %s inferred when it was queued", i,
                                     made == tide__dead ? "dead" : tide_shape_format(&made->shape, a, sizeof a),
                                     tide_shape_format(&want->shape, b, sizeof b));
        }
        memcpy(tide_tensor_device_pointer(want), (const char *)made->buf->data + made->offset,
               tide_tensor_byte_size(want));
    }
    return TIDE_OK;
}

static void run_queued(void *arg)
{
    queued_kernel *q = arg;
    int64_t start_ns = q->span ? tide__now_ns() : 0;
    delay(q->device); /* a slow device: part of the kernel's time */
    tide_tensor *outs[MAX_QUEUED_OUTPUTS] = {0};
    tide_kernel_ctx ctx = {.kn = q->kn, .inputs = q->inputs, .outputs = outs, .step = q->step, .iter = q->iter,
                           .preset = q->outputs};
    tide_status st = TIDE_OK;
    if (tide_kernel_cancelled(&ctx)) {
        st = TIDE_CANCELLED; /* the step failed already: nothing reads what this would write */
    } else {
        st = tide__kernel_ctx_returned(&ctx, q->spec->compute(&ctx));
        st = st == TIDE_OK ? tide__kernel_ctx_finish(&ctx) : st;
        if (st == TIDE_OK)
            st = land_outputs(&ctx, q);
        if (st == TIDE_OK && q->capture) { /* recorded with the outputs the executor handed on */
            tide_kernel_ctx landed = ctx;
            landed.outputs = q->outputs;
            tide__sim_graph_record(q->capture, q->device, q->spec, &landed);
        }
        if (st != TIDE_OK) { /* fails the step; its end, which waits for this stream, returns the error */
            tide_error *err = tide_error_new();
            tide__kernel_ctx_take_error(&ctx, err);
            tide__step_fail(q->step, st, err, NULL);
            tide_error_free(err);
        }
    }
    for (int i = 0; i < q->kn->num_outputs; i++)
        tide_tensor_release(outs[i]);
    if (q->span && st != TIDE_CANCELLED) { /* read by the step once it waited for this stream */
        q->span->start_ns = start_ns;
        q->span->end_ns = tide__now_ns();
    }
    queued_free(q);
}

/* The output shapes of the node, known on the host before the kernel runs: its shape function over
 * the inputs' shapes, else the graph's static shapes. False when one stays unknown (or the op has
 * state, control flow, dead inputs, too many outputs): the kernel then runs while the host waits. */
static bool queueable(const tide_kernel_ctx *ctx, tide_shape *shapes)
{
    const tide_kernel_node *kn = ctx->kn;
    if (!ctx->step || !kn->node || kn->num_outputs > MAX_QUEUED_OUTPUTS || kn->num_inputs > 64 ||
        (kn->op->flags & (TIDE_OP_STATEFUL | TIDE_OP_CONTROL_FLOW)))
        return false;
    tide_shape in_shapes[64];
    for (int i = 0; i < kn->num_inputs; i++) {
        const tide_tensor *t = ctx->inputs[i];
        if (!t || t == tide__dead)
            return false;
        in_shapes[i] = t->shape;
    }
    tide_error *err = tide_error_new();
    tide_status st = tide__infer_shapes(kn->op, kn->name, kn->attrs, in_shapes, kn->in_dtypes, NULL, kn->num_inputs,
                                        kn->num_outputs, shapes, err);
    tide_error_free(err);
    if (st != TIDE_OK) /* the kernel itself says what is wrong */
        return false;
    for (int i = 0; i < kn->num_outputs; i++) {
        if (tide_shape_is_fully_defined(&shapes[i]))
            continue;
        if (i >= kn->node->num_outputs || !tide_shape_is_fully_defined(&kn->node->out_shapes[i]))
            return false;
        shapes[i] = kn->node->out_shapes[i];
    }
    return true;
}

/* Allocates the outputs (in the compute stream's order), launches the kernel and returns. */
static tide_status queue_kernel(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx, const tide_shape *shapes)
{
    const tide_kernel_node *kn = ctx->kn;
    queued_kernel *q = calloc(1, sizeof *q);
    if (q)
        q->inputs = calloc((size_t)kn->num_inputs + 1, sizeof *q->inputs);
    bool ok = q && q->inputs;
    if (q)
        *q = (queued_kernel){.device = d, .spec = k, .kn = kn, .step = ctx->step, .iter = ctx->iter, .span = ctx->span,
                             .inputs = q->inputs};
    for (int i = 0; ok && i < kn->num_inputs; i++) /* an input in host memory is held until the kernel ran: */
        ok = (q->inputs[i] = tide_device_can_read(d, ctx->inputs[i]) /* only device memory is stream-ordered */
                                 ? tide__tensor_borrowed_view(ctx->inputs[i])
                                 : tide_tensor_retain(ctx->inputs[i])) != NULL;
    for (int i = 0; ok && i < kn->num_outputs; i++) {
        tide_tensor *t = tide_kernel_alloc_output(ctx, i, &shapes[i], false);
        if (!t) { /* the error (out of memory, naming the node) is recorded */
            if (q)
                queued_free(q);
            return ctx->status;
        }
        ok = (q->outputs[i] = tide__tensor_borrowed_view(t)) != NULL;
    }
    if (ok && ctx->span)
        ctx->span->stream = "compute";
    tide_error *err = tide_error_new();
    sim_stream *s = d->streams[TIDE_STREAM_COMPUTE]->context;
    if (ok)
        q->capture = tide__sim_stream_capture(s);
    tide_status st = ok ? launch_task(d, s, run_queued, q, false, err)
                        : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory queueing the kernel");
    if (st != TIDE_OK) {
        if (ctx->span)
            ctx->span->stream = NULL;
        if (q)
            queued_free(q);
        tide_kernel_error(ctx, st, "%s", tide_error_message(err));
    } else {
        tide__step_queued_on(ctx->step, d);
    }
    tide_error_free(err);
    return st;
}

typedef struct kernel_launch {
    tide_device *device;
    const tide_kernel_spec *spec;
    tide_kernel_ctx *ctx;
    sim_graph *capture;            /* the stream captured when it was launched: record it */
    uint64_t frees_before;         /* the allocator's last epoch of frees made before the launch */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    tide_status status;
} kernel_launch;

static void run_sync(void *arg)
{
    kernel_launch *l = arg;
    /* The stream ran everything launched before this kernel: the blocks freed before its launch are
     * no longer read there, so an allocation of the kernel (on this thread, which cannot wait for its
     * own stream) that finds the device full may give them back to it and retry. */
    tide__allocator_synchronized(l->device->allocator, l->frees_before);
    delay(l->device);
    tide_status st = run_kernel(l->device, l->spec, l->ctx, l->capture);
    pthread_mutex_lock(&l->lock);
    l->status = st;
    l->done = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Launched on the compute stream like any kernel, and waited for (a counted wait of the host). The
 * caller holds the device's launch lock from the launch to the end: such a kernel (a variable's update,
 * a kernel forwarding an input) may write an input in place when it holds the only reference, and a
 * queued kernel holds none (borrowed views). Without the lock another host thread could queue, behind
 * this kernel, a reader of the same tensor and release its reference meanwhile: the update would then
 * run in place and the reader, launched with the old value in hand, read the new one (train_mlp_sim's
 * MLP on /sim:0 computed another loss in ~1 run of 4: the gradient MatMul through a weight that its
 * ApplyGradientDescent, queued just before, had already updated). With the lock, a reader either was
 * launched before (the stream runs it first) or still holds its reference (the update copies). */
static tide_status run_waiting(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    sim_stream *s = d->streams[TIDE_STREAM_COMPUTE]->context;
    kernel_launch l = {.device = d, .spec = k, .ctx = ctx, .capture = tide__sim_stream_capture(s),
                       .frees_before = tide__allocator_begin_sync(d->allocator)};
    pthread_mutex_init(&l.lock, NULL);
    pthread_cond_init(&l.cond, NULL);
    tide_error *err = tide_error_new();
    tide__device_count_host_wait(d);
    tide_status st = launch_task(d, s, run_sync, &l, false, err);
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

/* A kernel on the device: queued when its output shapes are known on the host (it returns at once,
 * as a GPU kernel launch does), else run while the host waits (the CPU kernel decides its outputs
 * from input values only the device can read: a GPU kernel reading back an index input waits too). */
static tide_status sim_compute(tide_device *d, const tide_kernel_spec *k, tide_kernel_ctx *ctx)
{
    if (ctx->kn->kernel && ctx->kn->kernel->wraps) /* the executor passes the twin: run the CPU kernel */
        k = &ctx->kn->kernel->wraps->spec;
    tide_shape shapes[MAX_QUEUED_OUTPUTS];
    tide_status st = check_inputs(d, ctx);
    if (st != TIDE_OK)
        return st;
    bool queue = queueable(ctx, shapes);
    if (!queue && strcmp(ctx->kn->op->name, "_Send") == 0) /* hands a reference to the rendezvous: reads no */
        return k->compute(ctx); /* device memory (the _Recv's copy waits for the stream) */
    pthread_mutex_t *lock = lock_launches(d);
    st = queue ? queue_kernel(d, k, ctx, shapes) : run_waiting(d, k, ctx);
    unlock_launches(lock);
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
    .open = sim_open,
    .close = sim_close,
    .allocate = sim_allocate,
    .stream_new = sim_stream_new,
    .stream_free = sim_stream_free,
    .stream_launch = sim_stream_launch,
    .stream_synchronize = tide__sim_stream_synchronize,
    .memcpy_async = sim_memcpy_async,
    .event_new = sim_event_new,
    .event_free = sim_event_free,
    .event_record = sim_event_record,
    .stream_wait_event = sim_stream_wait_event,
    .event_synchronize = sim_event_synchronize,
    .event_query = sim_event_query,
    .compute = sim_compute,
    .synchronize = sim_synchronize,
    .capture_runs_work = true,
    .capture_begin = tide__sim_capture_begin,
    .capture_end = tide__sim_capture_end,
    .graph_launch = tide__sim_graph_launch,
    .graph_result = tide__sim_graph_result,
    .graph_free = tide__sim_graph_free,
};

/* ---------------------------------------------------------------- the CPU's kernels, on the device */

/* The compute of every "sim" kernel (eager calls come here; the executor calls the device's compute):
 * the CPU kernel it wraps, on the node's device. */
static tide_status wrapped_compute(tide_kernel_ctx *ctx)
{
    tide_device *d = ctx->kn->device;
    return d->ops->compute(d, &ctx->kn->kernel->wraps->spec, ctx);
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
            w->spec.compute = wrapped_compute;
            w->spec.compute_async = NULL;
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
