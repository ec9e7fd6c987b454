/* step_capture.c — whole-step capture and replay (PyTorch's CUDA-graph mode, for every step). A
 * session's step whose plan runs all its kernels on one device that can capture (tide_device.h,
 * "Capture"), with the fed values crossing in from the host and the fetched ones out, runs eagerly
 * twice (the caching allocator warms up), is then captured (its kernels recorded into a device graph
 * while every tensor its device's items make is held at its address), and is replayed from then on:
 * the fed values are copied into the captured input buffers, the graph is launched, and the fetched
 * values are copied out of the captured output buffers, all on the device's compute stream, with no
 * work of the executor. Variables are updated in place at their addresses (a capture during which one
 * was replaced instead, by copy on write, is refused). The rules, what falls back to eager and why:
 * docs/devices.md, "Whole-step capture".
 *
 * A session holds one graph at most, for one plan: a run of another plan (other feeds, fetches or
 * targets, fusion switched, a debugger's plans) drops it. So does a run the graph cannot serve (other
 * fed shapes, a graph extended since, a variable replaced, a watch, tracing, a debugger, a timeout);
 * that run and the next two run eagerly before the plan is captured again. Steps of one session that
 * run at once: the one that finds the state busy runs eagerly and changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step_capture.h"

#define WARMUP_RUNS 2 /* eager runs of a plan before it is captured */

typedef struct pinned_variable {
    tide_variable *var;           /* a reference */
    const tide_tensor *value;     /* its value at capture (not retained: the variable holds it) */
} pinned_variable;

struct tide_step_capture {
    pthread_mutex_t lock;         /* held by the step that uses the state; a step finding it held runs eagerly */
    pthread_mutex_t held_lock;    /* tide__capture_outputs, from the executor's threads */
    /* The plan the facts are about, and its static verdict. The session may free the plan while its
     * facts stay here (it evicts plans no run can find again): `plan` is dereferenced only while a run
     * of the plan whose serial is plan_serial holds it, and the counts are kept. */
    const tide_plan *plan;
    uint64_t plan_serial;
    int num_feeds, num_fetches;
    bool eligible;
    char why_not[320];
    tide_device *device;
    int *feed_recv;               /* per feed: its _Recv item on the device (-1: not consumed there) */
    int *fetch_item, *fetch_output; /* per fetch: the item (and output) on the device that makes it */
    int warm;                     /* eager runs of the plan since its graph was dropped */
    /* The graph and what it keeps in place. */
    tide_device_graph *graph;
    int graph_nodes;              /* the graph's nodes at capture: an extension drops it */
    tide_dtype *feed_dtypes;
    tide_shape *feed_shapes;
    tide_tensor **feed_buffers;   /* retained */
    tide_tensor **fetch_buffers;  /* retained, but for a variable's value (fetch_borrowed) */
    bool *fetch_borrowed;
    tide_tensor **held;           /* every tensor the device's items made in the captured step */
    int num_held, cap_held;
    bool held_failed;
    pinned_variable *vars;
    int num_vars;
    int64_t held_bytes;
    /* What tide_session_capture_status says. */
    tide_step_mode last;
    char why[320];
    int64_t captures, replays;
};

tide_step_capture *tide__capture_new(void)
{
    tide_step_capture *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->held_lock, NULL);
    return c;
}

/* ---------------------------------------------------------------- dropping */

static void release_held(tide_step_capture *c)
{
    for (int i = 0; i < c->num_held; i++)
        tide_tensor_release(c->held[i]);
    free(c->held);
    c->held = NULL;
    c->num_held = c->cap_held = 0;
    c->held_failed = false;
    c->held_bytes = 0;
    int nf = c->num_feeds, no = c->num_fetches;
    for (int i = 0; c->feed_buffers && i < nf; i++)
        tide_tensor_release(c->feed_buffers[i]);
    for (int i = 0; c->fetch_buffers && c->fetch_borrowed && i < no; i++)
        if (!c->fetch_borrowed[i])
            tide_tensor_release(c->fetch_buffers[i]);
    if (c->feed_buffers)
        memset(c->feed_buffers, 0, sizeof *c->feed_buffers * (size_t)nf);
    if (c->fetch_buffers) {
        memset(c->fetch_buffers, 0, sizeof *c->fetch_buffers * (size_t)no);
        memset(c->fetch_borrowed, 0, sizeof *c->fetch_borrowed * (size_t)no);
    }
    for (int i = 0; i < c->num_vars; i++)
        tide__variable_release(c->vars[i].var);
    free(c->vars);
    c->vars = NULL;
    c->num_vars = 0;
}

/* The graph first (its recorded work points into the held memory), then the memory. */
static void drop_graph(tide_step_capture *c)
{
    tide_device_graph_free(c->graph);
    c->graph = NULL;
    release_held(c);
    c->warm = 0;
}

static void forget_plan(tide_step_capture *c)
{
    drop_graph(c);
    free(c->feed_recv);
    free(c->fetch_item);
    free(c->fetch_output);
    free(c->feed_dtypes);
    free(c->feed_shapes);
    free(c->feed_buffers);
    free(c->fetch_buffers);
    free(c->fetch_borrowed);
    c->feed_recv = c->fetch_item = c->fetch_output = NULL;
    c->feed_dtypes = NULL;
    c->feed_shapes = NULL;
    c->feed_buffers = c->fetch_buffers = NULL;
    c->fetch_borrowed = NULL;
    c->plan = NULL;
    c->plan_serial = 0;
    c->num_feeds = c->num_fetches = 0;
    c->device = NULL;
    c->eligible = false;
}

void tide__capture_drop(tide_step_capture *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    drop_graph(c);
    pthread_mutex_unlock(&c->lock);
}

void tide__capture_free(tide_step_capture *c)
{
    if (!c)
        return;
    forget_plan(c);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->held_lock);
    free(c);
}

/* ---------------------------------------------------------------- which plans can be captured */

static bool is_op(const tide_exec_item *it, const char *op)
{
    return it->kind == ITEM_NODE && strcmp(it->node->op->name, op) == 0;
}

static bool is_transfer(const tide_exec_item *it)
{
    return it->kind == ITEM_NODE && it->node->id < 0 && (is_op(it, "_Send") || is_op(it, "_Recv"));
}

static const char *attr_string(const tide_exec_item *it, const char *name)
{
    const char *v = "";
    tide_attrs_get_string(it->node->attrs, name, &v);
    return v;
}

/* The _Recv item that meets _Send item s (same tensor and devices), or -1. */
static int partner(const tide_plan *p, int s)
{
    const tide_exec_item *send = &p->items[s];
    for (int k = 0; k < p->num_items; k++)
        if (is_transfer(&p->items[k]) && is_op(&p->items[k], "_Recv") &&
            strcmp(attr_string(&p->items[k], "tensor_name"), attr_string(send, "tensor_name")) == 0 &&
            strcmp(attr_string(&p->items[k], "recv_device"), attr_string(send, "recv_device")) == 0 &&
            strcmp(attr_string(&p->items[k], "send_device"), attr_string(send, "send_device")) == 0)
            return k;
    return -1;
}

static const char *short_name(const tide_device *d, char *buf, size_t size)
{
    return tide_device_short_name(d->name, buf, size);
}

#define REFUSE(...) (snprintf(c->why_not, sizeof c->why_not, __VA_ARGS__), false)

static bool same_device(tide_step_capture *c, tide_device *d, const char *node)
{
    char a[64], b[64];
    if (d->host_visible || !tide_device_can_capture(d))
        return REFUSE("node '%s' runs on %s, which cannot capture (only a step all on one simulated device or "
                      "GPU is captured)", node, short_name(d, a, sizeof a));
    if (c->device && c->device != d)
        return REFUSE("the step runs on two devices (%s and %s)", short_name(c->device, a, sizeof a),
                      short_name(d, b, sizeof b));
    c->device = d;
    return true;
}

/* A stateful op other than a variable and its updates: a replay would repeat it (the same random
 * numbers) or skip its host side (a queue, a print). */
static bool replayable_op(const tide_exec_item *it)
{
    const tide_op_def *op = it->node->op;
    if (!(op->flags & TIDE_OP_STATEFUL) || strcmp(op->name, "Variable") == 0)
        return true;
    for (int i = 0; i < op->num_inputs; i++)
        if (op->inputs[i].is_ref)
            return true;
    return false;
}

/* Whether edge e of an item ends in an input that a kernel on an accelerator reads in host memory
 * (engine/host_inputs.c: an axis, a shape, Dropout's rate), handed over without a transfer. */
static bool to_host_input(const tide_plan *p, const tide_edge *e)
{
    const tide_exec_item *dst = &p->items[e->dst];
    return e->slot >= 0 && dst->kind == ITEM_NODE &&
           tide__kernel_host_input(dst->kn.kernel, dst->device, dst->node, e->slot - dst->input_base);
}

/* A Const of the host whose value goes only to devices: through a _Send (a GPU has no Const kernel),
 * copied there at the capture into a buffer the graph holds and never again, or straight into inputs
 * the device's kernels read on the host, which the graph records with the value (it never changes). */
static bool host_constant(const tide_plan *p, int k)
{
    const tide_exec_item *it = &p->items[k];
    if (!is_op(it, "Const") || !it->device->host_visible)
        return false;
    for (int e = 0; e < it->num_edges; e++)
        if (it->edges[e].slot >= 0 && !(is_transfer(&p->items[it->edges[e].dst]) &&
                                         is_op(&p->items[it->edges[e].dst], "_Send")) &&
            !to_host_input(p, &it->edges[e]))
            return false;
    return true;
}

/* A fed value read on the host by a kernel of the device (a host-memory input, without a transfer): a
 * replay would keep the value of the capture (the kernel read it when it was launched). */
static bool fed_to_host_inputs(tide_step_capture *c, const tide_plan *p)
{
    for (int k = 0; k < p->num_items; k++)
        for (int e = 0; p->items[k].kind == ITEM_FEED && e < p->items[k].num_edges; e++)
            if (to_host_input(p, &p->items[k].edges[e]))
                return REFUSE("the fed value '%s' is read on the host by node '%s' (a host-memory input): a "
                              "replay would keep the value fed at the capture", p->feed_names[p->items[k].index],
                              p->items[p->items[k].edges[e].dst].node->name);
    return true;
}

/* A _Send of the host carrying feed f (or a host constant) to the device (its _Recv there gives the
 * feed's buffer). */
static bool feed_transfer(tide_step_capture *c, const tide_plan *p, int s, const int *producer)
{
    const tide_exec_item *send = &p->items[s];
    int src = producer[send->input_base], r = partner(p, s);
    if (src < 0 || r < 0 || (p->items[src].kind != ITEM_FEED && !host_constant(p, src)))
        return REFUSE("the tensor '%s' crosses from the host to %s inside the step (only fed values and "
                      "constants may)", attr_string(send, "tensor_name"), r >= 0 ? p->items[r].device->name : "a device");
    if (!same_device(c, p->items[r].device, p->items[r].node->name))
        return false;
    if (p->items[src].kind == ITEM_FEED)
        c->feed_recv[p->items[src].index] = r;
    return true;
}

/* A _Send of the device whose _Recv on the host hands the tensor to fetches only. */
static bool fetch_transfer(tide_step_capture *c, const tide_plan *p, int s, const int *producer,
                           const int *producer_output)
{
    const tide_exec_item *send = &p->items[s];
    int r = partner(p, s), src = producer[send->input_base];
    bool to_fetches = r >= 0 && p->items[r].device->host_visible && src >= 0;
    for (int e = 0; to_fetches && e < p->items[r].num_edges; e++)
        to_fetches = p->items[r].edges[e].slot < 0 || p->items[p->items[r].edges[e].dst].kind == ITEM_FETCH;
    if (!to_fetches)
        return REFUSE("the tensor '%s' crosses from %s to the host for another node (only fetched values may)",
                      attr_string(send, "tensor_name"), send->device->name);
    for (int e = 0; e < p->items[r].num_edges; e++)
        if (p->items[r].edges[e].slot >= 0) {
            int f = p->items[p->items[r].edges[e].dst].index;
            c->fetch_item[f] = src;
            c->fetch_output[f] = producer_output[send->input_base];
        }
    return same_device(c, send->device, send->node->name);
}

static bool check_items(tide_step_capture *c, const tide_plan *p, const int *producer, const int *producer_output)
{
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind != ITEM_NODE)
            continue;
        if (is_transfer(it)) {
            if (is_op(it, "_Recv"))
                continue; /* judged with its _Send */
            bool ok = it->device->host_visible ? feed_transfer(c, p, k, producer)
                                               : fetch_transfer(c, p, k, producer, producer_output);
            if (!ok)
                return false;
            continue;
        }
        if (host_constant(p, k))
            continue;
        if (!same_device(c, it->device, it->node->name))
            return false;
        if (!replayable_op(it))
            return REFUSE("node '%s' (%s) is stateful: a replay would repeat what it did at capture", it->node->name,
                          it->node->op->name);
    }
    return true;
}

/* The plan's verdict into c (eligible, or why_not), with its feeds' and fetches' items. */
static void analyse(tide_step_capture *c, const tide_plan *p)
{
    c->plan = p;
    c->plan_serial = p->serial;
    c->num_feeds = p->num_feeds;
    c->num_fetches = p->num_fetches;
    c->why_not[0] = 0;
    size_t nf = (size_t)p->num_feeds + 1, no = (size_t)p->num_fetches + 1;
    c->feed_recv = malloc(sizeof(int) * nf);
    c->fetch_item = malloc(sizeof(int) * no);
    c->fetch_output = calloc(no, sizeof(int));
    c->feed_dtypes = calloc(nf, sizeof *c->feed_dtypes);
    c->feed_shapes = calloc(nf, sizeof *c->feed_shapes);
    c->feed_buffers = calloc(nf, sizeof *c->feed_buffers);
    c->fetch_buffers = calloc(no, sizeof *c->fetch_buffers);
    c->fetch_borrowed = calloc(no, sizeof *c->fetch_borrowed);
    int *producer = malloc(sizeof(int) * ((size_t)p->num_slots + 1));
    int *producer_output = malloc(sizeof(int) * ((size_t)p->num_slots + 1));
    if (!c->feed_recv || !c->fetch_item || !c->fetch_output || !c->feed_dtypes || !c->feed_shapes ||
        !c->feed_buffers || !c->fetch_buffers || !c->fetch_borrowed || !producer || !producer_output) {
        snprintf(c->why_not, sizeof c->why_not, "out of memory");
    } else if (p->control_flow) {
        snprintf(c->why_not, sizeof c->why_not, "the step has control flow (conditionals or loops)");
    } else {
        for (int i = 0; i < p->num_feeds; i++)
            c->feed_recv[i] = -1;
        for (int i = 0; i < p->num_fetches; i++)
            c->fetch_item[i] = -1;
        for (int s = 0; s < p->num_slots; s++)
            producer[s] = producer_output[s] = -1;
        for (int k = 0; k < p->num_items; k++)
            for (int e = 0; e < p->items[k].num_edges; e++)
                if (p->items[k].edges[e].slot >= 0) {
                    producer[p->items[k].edges[e].slot] = k;
                    producer_output[p->items[k].edges[e].slot] = p->items[k].edges[e].output;
                }
        c->eligible = check_items(c, p, producer, producer_output) && fed_to_host_inputs(c, p);
        for (int f = 0; c->eligible && f < p->num_fetches; f++)
            if (c->fetch_item[f] < 0)
                c->eligible = REFUSE("the fetch '%s' is not made on the device (a fed value, or nothing to capture)",
                                     p->fetch_names[f]);
        if (c->eligible && !c->device)
            c->eligible = REFUSE("the step runs no kernel on a device");
    }
    free(producer);
    free(producer_output);
}

/* ---------------------------------------------------------------- what a run needs */

/* Why this run cannot use a graph (NULL: it can). */
static const char *run_excluded(tide_step_capture *c, const tide_step_args *a, char *buf, size_t size)
{
    const tide_plan *p = a->plan;
    if (a->debugger.entry)
        return "a debugger is attached";
    if (a->info.tracing)
        return "the step is traced (a replay has no per-node timings)";
    if (a->opts && a->opts->timeout_ms > 0)
        return "the run has a timeout (a replayed graph cannot be stopped part way)";
    for (int k = 0; k < p->num_items; k++)
        if (atomic_load_explicit(&p->items[k].wants_tensors, memory_order_relaxed)) {
            snprintf(buf, size, "an observer watches the tensors of '%s'", p->items[k].node->name);
            return buf;
        }
    for (int f = 0; f < p->num_feeds; f++) {
        const tide_tensor *v = a->feeds[f].value;
        if (!v)
            return "a fed value is NULL";
        if (v->buf->type) {
            snprintf(buf, size, "the value fed to '%s' lies in device memory", p->feed_names[f]);
            return buf;
        }
    }
    TIDE_UNUSED(c);
    return NULL;
}

static tide_variable *lookup_variable(tide_engine *e, const tide_node *n)
{
    const char *container = "", *shared = "";
    tide_dtype dt = TIDE_FLOAT32;
    tide_shape shape = tide_shape_unknown();
    tide_attrs_get_string(n->attrs, "container", &container);
    tide_attrs_get_string(n->attrs, "shared_name", &shared);
    tide_attrs_get_type(n->attrs, "dtype", &dt);
    tide_attrs_get_shape(n->attrs, "shape", &shape);
    tide_error *err = tide_error_new();
    tide_variable *v = tide__engine_variable(e, container, shared[0] ? shared : n->name, dt, &shape, false, false, err);
    tide_error_free(err);
    return v;
}

static const tide_tensor *value_of(tide_variable *v)
{
    tide_variable_lock(v);
    const tide_tensor *t = tide_variable_value(v);
    tide_variable_unlock(v);
    return t;
}

/* The name of a pinned variable whose value is no longer the one captured, or NULL. */
static const char *variable_replaced(const tide_step_capture *c)
{
    for (int i = 0; i < c->num_vars; i++)
        if (value_of(c->vars[i].var) != c->vars[i].value)
            return tide_variable_name(c->vars[i].var);
    return NULL;
}

/* Why the graph cannot serve this run (NULL: it can). */
static const char *graph_stale(tide_step_capture *c, const tide_step_args *a, char *buf, size_t size)
{
    const tide_plan *p = a->plan;
    tide_graph *g = tide_session_graph(a->session);
    if (g->num_nodes != c->graph_nodes)
        return "the graph was extended since the capture";
    for (int f = 0; f < p->num_feeds; f++) {
        const tide_tensor *v = a->feeds[f].value;
        if (v->dtype != c->feed_dtypes[f] || !tide_shape_equal(&v->shape, &c->feed_shapes[f])) {
            char was[TIDE_SHAPE_STR_MAX], now[TIDE_SHAPE_STR_MAX];
            snprintf(buf, size, "the value fed to '%s' changed from %s %s to %s %s since the capture", p->feed_names[f],
                     tide_dtype_name(c->feed_dtypes[f]), tide_shape_format(&c->feed_shapes[f], was, sizeof was),
                     tide_dtype_name(v->dtype), tide_shape_format(&v->shape, now, sizeof now));
            return buf;
        }
    }
    const char *replaced = variable_replaced(c);
    if (replaced) {
        snprintf(buf, size, "variable '%s' holds another tensor than at the capture (assigned or restored)", replaced);
        return buf;
    }
    return NULL;
}

/* ---------------------------------------------------------------- capture */

static bool variable_backed(const tide_step_capture *c, const tide_tensor *t)
{
    for (int i = 0; i < c->num_vars; i++)
        if (c->vars[i].value && c->vars[i].value->buf == t->buf)
            return true;
    return false;
}

static void hold(tide_step_capture *c, tide_tensor *t)
{
    for (int i = 0; i < c->num_held; i++)
        if (c->held[i] == t)
            return;
    if (c->num_held == c->cap_held) {
        int cap = c->cap_held ? 2 * c->cap_held : 64;
        tide_tensor **grown = realloc(c->held, sizeof *grown * (size_t)cap);
        if (!grown) {
            c->held_failed = true;
            return;
        }
        c->held = grown;
        c->cap_held = cap;
    }
    bool new_buffer = true;
    for (int i = 0; i < c->num_held && new_buffer; i++)
        new_buffer = c->held[i]->buf != t->buf;
    if (new_buffer)
        c->held_bytes += (int64_t)t->buf->size;
    c->held[c->num_held++] = tide_tensor_retain(t);
}

void tide__capture_outputs(tide_step_capture *c, const tide_exec_item *it, tide_tensor *const *outs)
{
    if (it->device != c->device)
        return; /* the host's ends of the feeds' and fetches' transfers */
    int k = (int)(it - c->plan->items);
    pthread_mutex_lock(&c->held_lock);
    for (int i = 0; i < it->kn.num_outputs; i++)
        if (outs[i] && outs[i] != tide__dead && !variable_backed(c, outs[i]))
            hold(c, outs[i]);
    for (int f = 0; f < c->plan->num_feeds; f++)
        if (c->feed_recv[f] == k && !c->feed_buffers[f])
            c->feed_buffers[f] = tide_tensor_retain(outs[0]);
    for (int f = 0; f < c->plan->num_fetches; f++)
        if (c->fetch_item[f] == k && !c->fetch_buffers[f]) {
            tide_tensor *t = outs[c->fetch_output[f]];
            c->fetch_borrowed[f] = variable_backed(c, t);
            c->fetch_buffers[f] = c->fetch_borrowed[f] ? t : tide_tensor_retain(t);
        }
    pthread_mutex_unlock(&c->held_lock);
}

/* The variables the plan reads, with their values now (false: one is missing: the step will say). */
static bool pin_variables(tide_step_capture *c, tide_engine *e)
{
    const tide_plan *p = c->plan;
    c->vars = calloc((size_t)p->num_items + 1, sizeof *c->vars);
    if (!c->vars)
        return false;
    for (int k = 0; k < p->num_items; k++) {
        if (!is_op(&p->items[k], "Variable"))
            continue;
        tide_variable *v = lookup_variable(e, p->items[k].node);
        if (!v)
            return false;
        c->vars[c->num_vars++] = (pinned_variable){v, value_of(v)};
        if (!c->vars[c->num_vars - 1].value)
            return false;
    }
    return true;
}

static tide_status replay(tide_step_capture *c, const tide_step_args *a, tide_error *err);

static void set_why(tide_step_capture *c, const char *fmt, const char *detail)
{
    snprintf(c->why, sizeof c->why, fmt, detail);
}

/* The step run eagerly while its device's compute stream captures; then the graph kept, or refused
 * (the plan then runs eagerly from now on, c->why_not saying why). */
static tide_status capture_step(tide_step_capture *c, tide_step_args *a, tide_step_stats **stats, tide_error *err)
{
    tide_stream *s = tide_device_stream(c->device, TIDE_STREAM_COMPUTE);
    tide_error *cerr = tide_error_new();
    bool pinned = pin_variables(c, a->engine);
    if (!pinned || tide_stream_capture_begin(s, cerr) != TIDE_OK) {
        set_why(c, "%s", pinned ? tide_error_message(cerr) : "a variable of the step has no value yet");
        release_held(c);
        tide_error_free(cerr);
        return tide__step_run(a, stats, err);
    }
    a->capture = c;
    tide_status st = tide__step_run(a, stats, err);
    a->capture = NULL;
    tide_device_graph *g = tide_stream_capture_end(s, cerr);
    const char *replaced = st == TIDE_OK && g ? variable_replaced(c) : NULL;
    bool ran = c->device->ops->capture_runs_work;
    if (st != TIDE_OK || !g || replaced || c->held_failed) {
        if (st == TIDE_OK && !g)
            snprintf(c->why_not, sizeof c->why_not, "capturing it failed: %s", tide_error_message(cerr));
        else if (replaced)
            snprintf(c->why_not, sizeof c->why_not, "variable '%s' was replaced rather than updated in place during "
                     "the captured step (copy on write: another reader held its value)", replaced);
        else if (st == TIDE_OK)
            snprintf(c->why_not, sizeof c->why_not, "out of memory holding the step's tensors");
        c->eligible = st != TIDE_OK && ran; /* a failed step is retried; a refused capture is not */
        set_why(c, "%s", st != TIDE_OK ? "the step being captured failed" : c->why_not);
        tide_device_graph_free(g);
        drop_graph(c);
        tide_error_free(cerr);
        if (ran)
            return st;
        for (int i = 0; i < a->plan->num_fetches; i++) { /* nothing ran: the step again, eagerly */
            tide_tensor_release(a->fetch_values[i]);
            a->fetch_values[i] = NULL;
        }
        return tide__step_run(a, stats, err);
    }
    tide_error_free(cerr);
    c->graph = g;
    c->graph_nodes = tide_session_graph(a->session)->num_nodes;
    for (int f = 0; f < a->plan->num_feeds; f++) {
        c->feed_dtypes[f] = a->feeds[f].value->dtype;
        c->feed_shapes[f] = a->feeds[f].value->shape;
    }
    c->captures++;
    c->last = TIDE_STEP_CAPTURED;
    c->why[0] = 0;
    if (ran)
        return TIDE_OK;
    for (int i = 0; i < a->plan->num_fetches; i++) { /* recorded only: the graph runs the step */
        tide_tensor_release(a->fetch_values[i]);
        a->fetch_values[i] = NULL;
    }
    return replay(c, a, err);
}

/* ---------------------------------------------------------------- replay */

static tide_status copy_feeds_in(tide_step_capture *c, const tide_step_args *a, tide_stream *s, tide_error *err)
{
    for (int f = 0; f < a->plan->num_feeds; f++) {
        const tide_tensor *v = a->feeds[f].value;
        tide_tensor *dst = c->feed_buffers[f];
        if (dst && tide_stream_memcpy_async(s, TIDE_COPY_HOST_TO_DEVICE, tide_tensor_device_pointer(dst),
                                            (const char *)v->buf->data + v->offset, tide_tensor_byte_size(v),
                                            err) != TIDE_OK)
            return tide_error_code(err);
    }
    return TIDE_OK;
}

static tide_status copy_fetches_out(tide_step_capture *c, const tide_step_args *a, tide_stream *s, tide_error *err)
{
    for (int f = 0; f < a->plan->num_fetches; f++) {
        const tide_tensor *src = c->fetch_buffers[f];
        tide_tensor *out = tide__tensor_alloc(src->dtype, &src->shape, false, err);
        if (!out)
            return tide_error_code(err);
        a->fetch_values[f] = out;
        if (tide_stream_memcpy_async(s, TIDE_COPY_DEVICE_TO_HOST, out->buf->data, tide_tensor_device_pointer(src),
                                     tide_tensor_byte_size(src), err) != TIDE_OK)
            return tide_error_code(err);
    }
    return TIDE_OK;
}

/* Feeds in, the graph, fetches out, on the device's compute stream; then waits for it. */
static tide_status replay(tide_step_capture *c, const tide_step_args *a, tide_error *err)
{
    tide_stream *s = tide_device_stream(c->device, TIDE_STREAM_COMPUTE);
    tide_status st = copy_feeds_in(c, a, s, err);
    if (st == TIDE_OK)
        st = tide_device_graph_launch(c->graph, s, err);
    if (st == TIDE_OK)
        st = copy_fetches_out(c, a, s, err);
    tide_error *serr = tide_error_new();
    tide_status synced = tide_stream_synchronize(s, serr); /* what was launched has run, even after a failure */
    if (st == TIDE_OK && synced != TIDE_OK) {
        tide__error_copy(err, serr);
        st = synced;
    }
    tide_error_free(serr);
    if (st == TIDE_OK)
        st = tide_device_graph_result(c->graph, err);
    const char *replaced = st == TIDE_OK ? variable_replaced(c) : NULL;
    if (st != TIDE_OK || replaced) { /* the values are right when a replay replaced a variable, not the graph */
        set_why(c, "%s", st != TIDE_OK ? "the replayed step failed" : "a variable was replaced during the replay");
        drop_graph(c);
    }
    if (st != TIDE_OK) {
        for (int i = 0; i < a->plan->num_fetches; i++) {
            tide_tensor_release(a->fetch_values[i]);
            a->fetch_values[i] = NULL;
        }
        return st;
    }
    for (int o = 0; o < a->num_observers; o++)
        for (int f = 0; f < a->plan->num_fetches; f++)
            TIDE__OBSERVE(&a->observers[o], tensor_fetched, &a->info, f, a->fetch_values[f]);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- a step */

static tide_status eager(tide_step_capture *c, tide_step_args *a, tide_step_stats **stats, tide_error *err)
{
    tide_status st = tide__step_run(a, stats, err);
    c->last = TIDE_STEP_EAGER;
    return st;
}

static tide_status run_locked(tide_step_capture *c, bool on, tide_step_args *a, tide_step_stats **stats,
                              tide_error *err)
{
    char buf[320];
    if (!on) {
        forget_plan(c);
        c->why[0] = 0;
        return eager(c, a, stats, err);
    }
    if (a->plan->serial != c->plan_serial) {
        forget_plan(c);
        analyse(c, a->plan);
    }
    if (!c->eligible) {
        set_why(c, "%s", c->why_not);
        return eager(c, a, stats, err);
    }
    const char *why = run_excluded(c, a, buf, sizeof buf);
    if (!why && c->graph)
        why = graph_stale(c, a, buf, sizeof buf);
    if (why) { /* this eager run counts as the first of the warm-up */
        drop_graph(c);
        set_why(c, "%s", why);
        tide_status st = eager(c, a, stats, err);
        c->warm += st == TIDE_OK;
        return st;
    }
    if (c->graph) {
        tide_status st = replay(c, a, err);
        if (st == TIDE_OK) {
            c->replays++;
            c->last = TIDE_STEP_REPLAYED;
            c->why[0] = 0;
        } else {
            c->last = TIDE_STEP_EAGER; /* c->why says it failed */
        }
        return st;
    }
    if (c->warm < WARMUP_RUNS) {
        snprintf(c->why, sizeof c->why, "warming up (eager run %d of %d before the capture)", c->warm + 1, WARMUP_RUNS);
        tide_status st = eager(c, a, stats, err);
        c->warm += st == TIDE_OK;
        return st;
    }
    return capture_step(c, a, stats, err);
}

tide_status tide__capture_run(tide_step_capture *c, bool on, tide_step_args *a, tide_step_stats **stats,
                              tide_error *err)
{
    if (!c || pthread_mutex_trylock(&c->lock) != 0) /* another step of the session holds it: eagerly */
        return tide__step_run(a, stats, err);
    tide_status st = run_locked(c, on, a, stats, err);
    pthread_mutex_unlock(&c->lock);
    return st;
}

void tide__capture_status(tide_step_capture *c, tide_capture_status *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    out->last = c->last;
    snprintf(out->why, sizeof out->why, "%s", c->last == TIDE_STEP_EAGER ? c->why : "");
    if (c->graph && c->device)
        short_name(c->device, out->device, sizeof out->device);
    out->captures = c->captures;
    out->replays = c->replays;
    out->held_bytes = c->graph ? c->held_bytes : 0;
    out->has_graph = c->graph != NULL;
    pthread_mutex_unlock(&c->lock);
}
