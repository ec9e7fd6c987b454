/* device_sim_graph.c — capture on the simulated accelerator (tide_device.h, "Capture"): while its
 * compute stream captures, every kernel launched there runs as usual and is then recorded (on the
 * stream's thread) with the device addresses, dtypes and shapes of its inputs and outputs. Launching
 * the graph queues one task on a stream that runs the recorded kernels again, in order, over those
 * addresses: an output a kernel allocates is the captured one (tide_kernel_ctx.preset), and
 * one it takes from elsewhere (a Const's attr, a view) is copied to the captured address. So a replay
 * touches exactly the memory the capture did, as a CUDA graph does; whoever captured keeps that
 * memory alive and in place (step_capture.c). A host function or a copy launched on the stream while
 * it captures cannot be recorded: capture_end then fails, saying so.
 *
 * The recorded tensors are borrowed views of device memory: their buffer belongs to no allocator and
 * is never exclusive (a kernel never writes over an input in place), and the graph frees them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim.h"

typedef struct sim_record {
    const tide_kernel_spec *spec;  /* the CPU kernel */
    const tide_kernel_node *kn;    /* the plan's: read only while a run of the plan launches the graph */
    int num_inputs, num_outputs;   /* kn's (the plan may be freed before the graph) */
    tide_tensor **inputs;          /* kn->num_inputs, NULL for a variable's reference input */
    tide_tensor **outputs;         /* kn->num_outputs */
} sim_record;

struct sim_graph {
    tide_device *device;
    sim_record *records;
    int num_records, cap_records;
    char *refused;                 /* why it cannot be replayed (NULL: it can) */
    tide_status status;            /* the last launch's outcome */
    tide_error *err;
};

static void keep_memory(void *data, size_t bytes, void *arg)
{
    TIDE_UNUSED(data), TIDE_UNUSED(bytes), TIDE_UNUSED(arg);
}

/* A view of t's memory that the graph owns (NULL when out of memory). */
static tide_tensor *borrow(tide_device *d, const tide_tensor *t)
{
    tide_buffer *b = calloc(1, sizeof *b);
    tide_tensor *v = calloc(1, sizeof *v);
    if (!b || !v) {
        free(b);
        free(v);
        return NULL;
    }
    *b = (tide_buffer){.data = (char *)t->buf->data + t->offset, .size = tide_tensor_byte_size(t),
                       .dtype = t->dtype, .dealloc = keep_memory, .device = d, .type = &tide__sim_memory};
    atomic_init(&b->refs, 1);
    *v = (tide_tensor){.dtype = t->dtype, .shape = t->shape, .num_elements = t->num_elements, .buf = b};
    atomic_init(&v->refs, 1);
    return v;
}

static void unborrow(tide_tensor *v)
{
    if (!v)
        return;
    if (v->buf->dealloc != keep_memory) { /* an input in host memory, held (record) */
        tide_tensor_release(v);
        return;
    }
    free(v->buf);
    free(v);
}

void tide__sim_graph_refuse(sim_graph *g, const char *why)
{
    if (!g->refused)
        g->refused = tide__strdup(why);
}

static void refuse_on_thread(sim_graph *g, const char *why, const char *node)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s (node '%s')", why, node);
    tide__sim_graph_refuse(g, msg); /* only the stream's thread records: no lock needed until capture_end */
}

void tide__sim_graph_record(sim_graph *g, tide_device *d, const tide_kernel_spec *k, const tide_kernel_ctx *ctx)
{
    const tide_kernel_node *kn = ctx->kn;
    /* _Send and _Recv only hand tensors over (the copies they cause run on the copy streams): a replay
     * does without them, its feeds and fetches copied in and out by whoever launches it. */
    if (strcmp(kn->op->name, "_Send") == 0 || strcmp(kn->op->name, "_Recv") == 0)
        return;
    if (g->num_records == g->cap_records) {
        int cap = g->cap_records ? 2 * g->cap_records : 64;
        sim_record *grown = realloc(g->records, sizeof *grown * (size_t)cap);
        if (!grown) {
            refuse_on_thread(g, "out of memory recording a kernel", kn->name);
            return;
        }
        g->records = grown;
        g->cap_records = cap;
    }
    sim_record *r = &g->records[g->num_records++];
    *r = (sim_record){.spec = k, .kn = kn, .num_inputs = kn->num_inputs, .num_outputs = kn->num_outputs,
                      .inputs = calloc((size_t)kn->num_inputs + 1, sizeof *r->inputs),
                      .outputs = calloc((size_t)kn->num_outputs + 1, sizeof *r->outputs)};
    if (!r->inputs || !r->outputs) {
        refuse_on_thread(g, "out of memory recording a kernel", kn->name);
        return;
    }
    for (int i = 0; i < kn->num_inputs; i++) {
        const tide_tensor *t = ctx->inputs ? ctx->inputs[i] : NULL;
        if (t == tide__dead) {
            refuse_on_thread(g, "a dead input (control flow) cannot be recorded", kn->name);
            return;
        }
        /* an input the kernel reads in host memory (tide_kernel_spec.host_inputs) is held as it is */
        if (t && !(r->inputs[i] = tide_device_can_read(d, t) ? borrow(d, t) : tide_tensor_retain((tide_tensor *)t))) {
            refuse_on_thread(g, "out of memory recording a kernel", kn->name);
            return;
        }
    }
    for (int i = 0; i < kn->num_outputs; i++) {
        const tide_tensor *t = ctx->outputs[i];
        if (!t || t == tide__dead || !(r->outputs[i] = borrow(d, t))) {
            refuse_on_thread(g, t == tide__dead ? "a dead output (control flow) cannot be recorded"
                                                : "out of memory recording a kernel", kn->name);
            return;
        }
    }
}

static void free_records(sim_graph *g)
{
    for (int r = 0; r < g->num_records; r++) {
        sim_record *rec = &g->records[r];
        for (int i = 0; rec->inputs && i < rec->num_inputs; i++)
            unborrow(rec->inputs[i]);
        for (int i = 0; rec->outputs && i < rec->num_outputs; i++)
            unborrow(rec->outputs[i]);
        free(rec->inputs);
        free(rec->outputs);
    }
    free(g->records);
}

void tide__sim_graph_free(tide_device *d, void *graph)
{
    TIDE_UNUSED(d);
    sim_graph *g = graph;
    if (!g)
        return;
    free_records(g);
    free(g->refused);
    tide_error_free(g->err);
    free(g);
}

tide_status tide__sim_capture_begin(tide_device *d, void *stream, tide_error *err)
{
    sim_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->err = tide_error_new())) {
        free(g);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory starting a capture on %s", d->name);
    }
    g->device = d;
    sim_graph *previous = tide__sim_stream_set_capture(stream, g);
    if (previous) { /* put the running one back */
        tide__sim_stream_set_capture(stream, previous);
        tide__sim_graph_free(d, g);
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "a stream of %s is already capturing", d->name);
    }
    return TIDE_OK;
}

void *tide__sim_capture_end(tide_device *d, void *stream, tide_error *err)
{
    sim_graph *g = tide__sim_stream_set_capture(stream, NULL);
    if (!g) {
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "no stream of %s was capturing", d->name);
        return NULL;
    }
    tide__sim_stream_synchronize(d, stream, err); /* the kernels launched while capturing are recorded */
    if (g->refused) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "%s cannot replay what it captured: %s", d->name, g->refused);
        tide__sim_graph_free(d, g);
        return NULL;
    }
    return g;
}

/* One recorded kernel again; its outputs end at their captured addresses. */
static tide_status replay_one(tide_device *d, const sim_record *r, tide_error *err)
{
    tide_tensor *outs[16] = {0};
    tide_tensor **outputs = r->kn->num_outputs <= 16 ? outs : calloc((size_t)r->kn->num_outputs, sizeof *outputs);
    if (!outputs)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory replaying '%s'", r->kn->name);
    tide_kernel_ctx ctx = {.kn = r->kn, .inputs = r->inputs, .outputs = outputs, .preset = r->outputs};
    const char *fault = tide__sim_replay_fault(d);
    if (fault && strcmp(fault, r->kn->name) == 0) /* what CUDA reports for a kernel faulting in a graph */
        tide_kernel_error(&ctx, TIDE_INTERNAL, "an illegal memory access was encountered in a replayed graph "
                          "of %s (simulated: $TIDE_SIM_REPLAY_FAULT)", d->name);
    else
        tide__kernel_ctx_returned(&ctx, r->spec->compute(&ctx));
    tide_status st = tide__kernel_ctx_finish(&ctx);
    for (int i = 0; st == TIDE_OK && i < r->kn->num_outputs; i++) {
        const tide_tensor *got = outputs[i], *want = r->outputs[i];
        const char *at = (const char *)got->buf->data + got->offset;
        if (at == want->buf->data)
            continue;
        if (got->dtype != want->dtype || !tide_shape_equal(&got->shape, &want->shape)) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            st = tide_kernel_error(&ctx, TIDE_INTERNAL, "replayed, output %d is a %s tensor of shape %s where the "
                                   "capture had %s %s", i, tide_dtype_name(got->dtype),
                                   tide_shape_format(&got->shape, a, sizeof a), tide_dtype_name(want->dtype),
                                   tide_shape_format(&want->shape, b, sizeof b));
            break;
        }
        memmove(want->buf->data, at, want->buf->size); /* a Const's attr, a view: to the captured address */
    }
    if (st != TIDE_OK)
        tide__kernel_ctx_take_error(&ctx, err);
    for (int i = 0; i < r->kn->num_outputs; i++)
        tide_tensor_release(outputs[i]);
    if (outputs != outs)
        free(outputs);
    return st;
}

/* On the stream's thread: every recorded kernel in order, up to the first failure. */
static void replay(void *arg)
{
    sim_graph *g = arg;
    g->status = TIDE_OK;
    for (int r = 0; r < g->num_records && g->status == TIDE_OK; r++)
        g->status = replay_one(g->device, &g->records[r], g->err);
}

tide_status tide__sim_graph_launch(tide_device *d, void *graph, void *stream, tide_error *err)
{
    return tide__sim_launch_device_work(d, stream, replay, graph, err);
}

tide_status tide__sim_graph_result(tide_device *d, void *graph, tide_error *err)
{
    TIDE_UNUSED(d);
    sim_graph *g = graph;
    if (g->status != TIDE_OK)
        tide__error_copy(err, g->err);
    return g->status;
}
