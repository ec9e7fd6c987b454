/* debug_step.c — the debugger's side of a running step (tide_debug.h; the executor calls in from
 * executor.c): the checks before and after an execution, parking an execution, presenting a stop to
 * the debugger on the caller's thread and resuming, each node's state, the latest value of every output
 * produced so far, and overriding a value at a stop.
 *
 *   check says PAUSE -> parked (queued under the step's lock, state "stopped here")
 *     -> the caller's thread (waiting in run_roots) takes it: paused() -> resume / step / abort
 *     -> the execution goes on on its device's threads: its kernel (parked before) or the delivery of
 *        its outputs (parked after); the deadline is pushed back by the time spent stopped.
 *
 * The values a stop can show (latest[]): each output is kept (one more reference, no copy) when its
 * node ends, but only while the executor holds it too. Just before a kernel runs, the debugger lets go
 * of every input that nothing else but that kernel's input slot holds (tide__debug_let_go): the kernel
 * may then write its output over it in place, and the buffer goes back to the allocator's cache when
 * it would without a debugger, as the executor's speed needs (not for the inputs of a node the debugger
 * watches: its check after it ran sees them as they were). Such a value is gone from then on, and
 * :print says so (as gdb's "optimized out"), never showing what was written over it. In the root frame
 * each item runs once a step, so its entries are written by the one thread that ran it, without a lock;
 * a reader (tide_debug_step_value) announces itself in `readers`, and a value let go of meanwhile is
 * released at the step's end instead (the two sides' sequentially consistent accesses make one of them
 * see the other). Loops' items run many times a step: their entries change under the step's lock and
 * are never let go of.
 *
 * Only steps run with a debugger attached come here (step->debugging): the rest of the executor pays
 * one branch per node for it. */
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>

#include "fusion.h" /* a fused item's inputs (tide_debug_step_set_value) */
#include "step.h"

struct tide_debug_step {
    tide_step *step;
    parked *at;
};

/* What latest[] holds for a value the debugger let go of (never dereferenced). */
static tide_tensor gone_marker;
#define GONE (&gone_marker)

typedef struct tide_tensor_list {
    struct tide_tensor_list *next;
    tide_tensor *t;
} tide_tensor_list;

/* Which latest[] entry feeds each input slot of the root frame (-1: none, e.g. a feed). */
static bool map_slot_sources(tide_step *step)
{
    const tide_plan *p = step->plan;
    int slots = p->frames[0].num_slots;
    step->slot_source = malloc(sizeof(int) * ((size_t)slots + 1));
    if (!step->slot_source)
        return false;
    for (int i = 0; i < slots; i++)
        step->slot_source[i] = -1;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        for (int e = 0; it->kind == ITEM_NODE && it->frame == 0 && e < it->num_edges; e++) {
            const tide_edge *edge = &it->edges[e];
            if (edge->slot >= 0 && edge->slot < slots && p->items[edge->dst].frame == 0)
                step->slot_source[edge->slot] = step->latest_base[k] + edge->output;
        }
    }
    return true;
}

bool tide__debug_init(tide_step *step)
{
    const tide_plan *p = step->plan;
    step->states = calloc((size_t)p->num_items + 1, sizeof *step->states);
    step->latest_base = malloc(sizeof(int) * ((size_t)p->num_items + 1));
    step->latest_at = calloc((size_t)p->num_items + 1, sizeof *step->latest_at);
    if (!step->states || !step->latest_base || !step->latest_at)
        return false;
    int total = 0;
    for (int k = 0; k < p->num_items; k++) {
        step->latest_base[k] = total;
        total += p->items[k].kind == ITEM_NODE ? p->items[k].kn.num_outputs : 0;
        atomic_init(&step->states[k], (unsigned char)(p->items[k].initial_pending == 0 && p->items[k].frame == 0
                                                          ? TIDE_DEBUG_READY : TIDE_DEBUG_WAITING));
    }
    step->latest = calloc((size_t)total + 1, sizeof *step->latest); /* all NULL: not produced yet */
    atomic_init(&step->stepping, false);
    atomic_init(&step->executions, 0);
    atomic_init(&step->readers, 0);
    step->let_go_late = NULL;
    atomic_init(&step->stopped, false);
    return step->latest != NULL && map_slot_sources(step);
}

void tide__debug_free(tide_step *step)
{
    if (step->latest) {
        const tide_plan *p = step->plan;
        for (int k = 0; k < p->num_items; k++)
            for (int i = 0; p->items[k].kind == ITEM_NODE && i < p->items[k].kn.num_outputs; i++) {
                tide_tensor *t = atomic_load(&step->latest[step->latest_base[k] + i]);
                if (t != GONE)
                    tide_tensor_release(t);
            }
    }
    for (tide_tensor_list *l = step->let_go_late, *next; l; l = next) {
        next = l->next;
        tide_tensor_release(l->t);
        free(l);
    }
    free(step->states);
    free(step->latest);
    free(step->latest_base);
    free(step->latest_at);
    free(step->slot_source);
    step->states = NULL;
    step->latest = NULL;
    step->latest_base = NULL;
    step->latest_at = NULL;
    step->slot_source = NULL;
    step->let_go_late = NULL;
}

static tide_exec_point point_of(const tide_iter *iter)
{
    return (tide_exec_point){iter->frame ? tide__frame_path(iter->frame) : "", iter->n};
}

/* The event of an execution; inputs and outputs into the arrays given (dead ones NULL). */
static tide_debug_event event_of(const tide_step *step, const tide_exec_item *it, const tide_iter *iter, bool after,
                                 int64_t seq, tide_tensor **outs, const tide_tensor **in, const tide_tensor **out)
{
    for (int i = 0; i < it->num_inputs; i++) {
        tide_tensor *t = iter->slots[it->input_base + i];
        in[i] = t == tide__dead ? NULL : t;
    }
    for (int i = 0; after && i < it->kn.num_outputs; i++)
        out[i] = outs[i] == tide__dead ? NULL : outs[i];
    return (tide_debug_event){&step->args->info, it->node, it->device->name, point_of(iter), after, seq,
                              it->num_inputs, in, after ? it->kn.num_outputs : 0, after ? out : NULL};
}

static tide_debug_action ask(tide_step *step, const tide_exec_item *it, const tide_iter *iter, bool after,
                             int64_t seq, tide_tensor **outs)
{
    const tide_debugger_slot *d = &step->args->debugger;
    int ni = it->num_inputs, no = after ? it->kn.num_outputs : 0;
    const tide_tensor *local[16], **in = ni + no <= 16 ? local : malloc(sizeof *in * (size_t)(ni + no + 1));
    if (!in || !tide__entry_enter(d->entry)) {
        if (in != local)
            free(in);
        return TIDE_DEBUG_CONTINUE;
    }
    tide_debug_event ev = event_of(step, it, iter, after, seq, outs, in, in + ni);
    tide_debug_action a = d->d.check(d->d.user, &ev);
    tide__entry_leave(d->entry);
    if (in != local)
        free(in);
    return a;
}

static void park(tide_step *step, parked *p)
{
    p->since_ns = tide__now_ns();
    tide__debug_state(step, p->item, TIDE_DEBUG_STOPPED);
    pthread_mutex_lock(&step->lock);
    if (step->parked_tail)
        step->parked_tail->next = p;
    else
        __atomic_store_n(&step->parked_head, p, __ATOMIC_RELEASE);
    step->parked_tail = p;
    pthread_cond_signal(&step->cond); /* the caller's thread presents it */
    pthread_mutex_unlock(&step->lock);
}

static bool act(tide_step *step, tide_debug_action a, parked *p)
{
    if (a == TIDE_DEBUG_ABORT)
        tide__step_fail(step, TIDE_CANCELLED, NULL, "aborted in the debugger");
    if (a != TIDE_DEBUG_PAUSE)
        return false;
    park(step, p);
    return true;
}

bool tide__debug_before(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter)
{
    int64_t seq = atomic_fetch_add_explicit(&step->executions, 1, memory_order_relaxed) + 1;
    tide__debug_state(step, k, TIDE_DEBUG_RUNNING);
    bool stepped = atomic_load_explicit(&step->stepping, memory_order_relaxed) &&
                   atomic_exchange(&step->stepping, false);
    if (!stepped && (step->args->debugger.d.after_only ||
                     !atomic_load_explicit(&it->debug_watched, memory_order_relaxed)))
        return false;
    tide_debug_action a = stepped ? TIDE_DEBUG_PAUSE : ask(step, it, iter, false, seq, NULL);
    if (a != TIDE_DEBUG_PAUSE)
        return act(step, a, NULL);
    parked *p = calloc(1, sizeof *p);
    if (!p)
        return false; /* out of memory: no stop, the run goes on */
    *p = (parked){.item = k, .iter = iter, .seq = seq};
    return act(step, a, p);
}

bool tide__debug_after(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_kernel_ctx *ctx,
                       tide_tensor **outs)
{
    if (!atomic_load_explicit(&it->debug_watched, memory_order_relaxed))
        return false;
    int64_t seq = atomic_load_explicit(&step->executions, memory_order_relaxed);
    tide_debug_action a = ask(step, it, iter, true, seq, outs);
    if (a != TIDE_DEBUG_PAUSE)
        return act(step, a, NULL);
    parked *p = calloc(1, sizeof *p);
    tide_tensor **copy = p ? malloc(sizeof *copy * ((size_t)it->kn.num_outputs + 1)) : NULL;
    if (!copy) {
        free(p);
        return false;
    }
    memcpy(copy, outs, sizeof *copy * (size_t)it->kn.num_outputs); /* the parked execution owns them now */
    *p = (parked){.item = k, .iter = iter, .after = true, .ctx = *ctx, .outs = copy, .seq = seq};
    p->ctx.outputs = copy;
    return act(step, a, p);
}

/* Releases t, which was taken out of latest[] (seq_cst): now, unless a reader may have loaded it
 * before (then at the step's end). */
static void release_taken(tide_step *step, tide_tensor *t)
{
    if (!t || t == GONE)
        return;
    if (atomic_load(&step->readers) == 0) {
        tide_tensor_release(t);
        return;
    }
    tide_tensor_list *l = malloc(sizeof *l);
    pthread_mutex_lock(&step->lock);
    if (l) {
        *l = (tide_tensor_list){step->let_go_late, t};
        step->let_go_late = l;
    }
    pthread_mutex_unlock(&step->lock);
    if (!l) { /* out of memory: wait for the readers rather than free under them */
        while (atomic_load(&step->readers) > 0)
            sched_yield();
        tide_tensor_release(t);
    }
}

/* The entry of item k's output: a new reference, GONE, or NULL; its execution point to *at. */
static tide_tensor *read_latest(tide_step *step, int k, int output, tide_exec_point *at)
{
    _Atomic(tide_tensor *) *entry = &step->latest[step->latest_base[k] + output];
    tide_tensor *v;
    if (step->plan->items[k].frame == 0) {
        atomic_fetch_add(&step->readers, 1);
        v = atomic_load(entry);
        if (v != GONE)
            tide_tensor_retain(v);
        atomic_fetch_sub(&step->readers, 1);
        if (at)
            *at = (tide_exec_point){"", 0};
        return v;
    }
    pthread_mutex_lock(&step->lock);
    v = tide_tensor_retain(atomic_load(entry));
    if (at)
        *at = step->latest_at[k];
    pthread_mutex_unlock(&step->lock);
    return v;
}

void tide__debug_record(tide_step *step, const tide_exec_item *it, int k, tide_iter *iter, tide_tensor **outs)
{
    _Atomic(tide_tensor *) *entry = &step->latest[step->latest_base[k]];
    if (it->frame == 0) { /* runs once a step, and only this thread writes its entries now; one may hold an
                           * override set at a stop after this node (tide_debug_step_set_value): replace it */
        for (int i = 0; i < it->kn.num_outputs; i++) {
            tide_tensor *old = atomic_load_explicit(&entry[i], memory_order_relaxed);
            atomic_store(&entry[i], tide_tensor_retain(outs[i]));
            release_taken(step, old);
        }
        return;
    }
    pthread_mutex_lock(&step->lock);
    for (int i = 0; i < it->kn.num_outputs; i++)
        tide_tensor_release(atomic_exchange(&entry[i], tide_tensor_retain(outs[i])));
    step->latest_at[k] = point_of(iter);
    pthread_mutex_unlock(&step->lock);
}

void tide__debug_let_go(tide_step *step, const tide_exec_item *it, tide_iter *iter)
{
    if (iter != &step->root || atomic_load_explicit(&it->debug_watched, memory_order_relaxed))
        return; /* a watched node's check after it ran sees its inputs as they were */
    if (atomic_load_explicit(&step->stopped, memory_order_relaxed) || step->args->debugger.d.keep_values)
        return; /* once the step has stopped (or keeping all), every value stays printable until the step ends */
    for (int i = 0; i < it->num_inputs; i++) {
        tide_tensor *t = iter->slots[it->input_base + i];
        int source = step->slot_source[it->input_base + i];
        if (!t || t == tide__dead || source < 0 || atomic_load_explicit(&t->refs, memory_order_relaxed) != 2)
            continue; /* others hold it too (or nothing to let go of): nobody writes over it */
        tide_tensor *expected = t;
        if (atomic_compare_exchange_strong(&step->latest[source], &expected, GONE))
            release_taken(step, t);
    }
}

/* ---------------------------------------------------------------- presenting a stop */

static void resume_task(void *arg)
{
    parked *p = arg;
    tide_step *step = (tide_step *)p->ctx.step; /* set for every parked execution (present) */
    if (p->after)
        tide__finish_resumed(step, p);
    else
        tide__run_resumed(step, p->item, p->iter);
    free(p->outs);
    free(p);
}

bool tide__debug_present(tide_step *step)
{
    pthread_mutex_lock(&step->lock);
    parked *p = step->parked_head;
    if (p) {
        __atomic_store_n(&step->parked_head, p->next, __ATOMIC_RELEASE);
        if (!p->next)
            step->parked_tail = NULL;
    }
    pthread_mutex_unlock(&step->lock);
    if (!p)
        return false;
    const tide_exec_item *it = &step->plan->items[p->item];
    const tide_debugger_slot *d = &step->args->debugger;
    tide_debug_command cmd = TIDE_DEBUG_RESUME;
    if (tide__entry_enter(d->entry)) {
        int ni = it->num_inputs, no = p->after ? it->kn.num_outputs : 0;
        const tide_tensor **in = malloc(sizeof *in * (size_t)(ni + no + 1));
        if (in) {
            tide_debug_event ev = event_of(step, it, p->iter, p->after, p->seq, p->outs, in, in + ni);
            atomic_store(&step->stopped, true);
            tide_debug_step view = {step, p};
            cmd = d->d.paused(d->d.user, &view, &ev);
            free(in);
        }
        tide__entry_leave(d->entry);
    }
    /* What the debugger watches may have changed at the stop (a breakpoint set there): the rest of this
     * step asks again, as the next step would. */
    if (cmd != TIDE_DEBUG_ABORT_RUN)
        tide__plan_update_debugger((tide_plan *)step->plan, step->args->engine, d);
    int64_t deadline = atomic_load(&step->deadline_ns); /* the clock stood still while stopped */
    if (deadline && deadline < INT64_MAX - (tide__now_ns() - p->since_ns))
        atomic_store(&step->deadline_ns, deadline + (tide__now_ns() - p->since_ns));
    if (cmd == TIDE_DEBUG_ABORT_RUN)
        tide__step_fail(step, TIDE_CANCELLED, NULL, "aborted in the debugger");
    else if (cmd == TIDE_DEBUG_STEP)
        atomic_store(&step->stepping, true);
    tide__debug_state(step, p->item, p->after ? TIDE_DEBUG_RUNNING : TIDE_DEBUG_READY);
    p->ctx.step = step;
    tide__pool_submit(tide__step_pool_of(step, p->item), resume_task, p);
    return true;
}

void tide__debug_finished(tide_step *step)
{
    const tide_debugger_slot *d = &step->args->debugger;
    if (!d->d.finished || !tide__entry_enter(d->entry))
        return;
    tide_debug_step view = {step, NULL}; /* no stop: nothing to resume or set */
    d->d.finished(d->d.user, &view);
    tide__entry_leave(d->entry);
}

/* ---------------------------------------------------------------- the stopped step, for the debugger */

static int item_of(const tide_step *step, const tide_node *node)
{
    const tide_plan *p = step->plan;
    for (int k = 0; node && k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind != ITEM_NODE)
            continue;
        if (it->node == node)
            return k;
        for (int t = 0; t < it->num_twins; t++) /* merged into it by CSE: its values are this item's */
            if (it->twins[t] == node)
                return k;
    }
    return -1;
}

/* The feed of node's output `output` in this run (any output: -1), or NULL: a fed node does not run,
 * its value is the caller's (held by the caller for the whole run). */
static const tide_feed *feed_of(const tide_step *step, const tide_node *node, int output)
{
    for (int i = 0; node && i < step->plan->num_feeds; i++) {
        const tide_feed *f = &step->args->feeds[i];
        if (f->output.node == node && (output < 0 || f->output.index == output))
            return f;
    }
    return NULL;
}

const tide_run_info *tide_debug_step_run(const tide_debug_step *s) { return &s->step->args->info; }
int64_t tide_debug_step_executions(const tide_debug_step *s) { return atomic_load(&s->step->executions); }

tide_debug_node_state tide_debug_step_node_state(const tide_debug_step *s, const tide_node *node)
{
    int k = item_of(s->step, node);
    if (k < 0)
        return feed_of(s->step, node, -1) ? TIDE_DEBUG_DONE : TIDE_DEBUG_NOT_IN_STEP;
    return (tide_debug_node_state)atomic_load(&s->step->states[k]);
}

tide_status tide_debug_step_value(const tide_debug_step *s, const tide_node *node, int output, tide_tensor **value,
                                  tide_exec_point *at, tide_error *err)
{
    *value = NULL;
    tide_step *step = s->step;
    int k = item_of(step, node);
    const tide_feed *fed = k < 0 ? feed_of(step, node, output) : NULL;
    if (fed) { /* the caller's value */
        if (at)
            *at = (tide_exec_point){"", 0};
        *value = tide_tensor_to_host(fed->value, err);
        return *value ? TIDE_OK : tide_error_code(err);
    }
    if (!node || k < 0)
        return tide_error_set(err, TIDE_NOT_FOUND, "'%s' does not run in this step", node ? node->name : "(null)");
    if (output < 0 || output >= step->plan->items[k].kn.num_outputs)
        return tide_error_set(err, TIDE_OUT_OF_RANGE, "'%s' has %d outputs, not an output %d", node->name,
                              step->plan->items[k].kn.num_outputs, output);
    tide_tensor *v = NULL;
    if (s->at && s->at->after && s->at->item == k) { /* stopped right after it: its fresh outputs */
        v = s->at->outs[output];
        if (at)
            *at = point_of(s->at->iter);
        v = tide_tensor_retain(v);
    } else {
        v = read_latest(step, k, output, at);
    }
    if (v == GONE)
        return tide_error_set(err, TIDE_NOT_FOUND, "'%s:%d' is gone: every node that reads it has started, and the "
                              "debugger keeps no copies (a breakpoint on '%s' stops while it is there)", node->name,
                              output, node->name);
    if (!v)
        return tide_error_set(err, TIDE_NOT_FOUND, "'%s:%d' has not been computed yet in this step (%s)", node->name,
                              output, tide_debug_node_state_name(tide_debug_step_node_state(s, node)));
    if (v == tide__dead)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "'%s:%d' is dead in this step (a branch not taken)",
                              node->name, output);
    if (!tide_tensor_is_host_visible(v)) { /* in an accelerator's memory: the caller gets a host copy */
        *value = tide_tensor_to_host(v, err);
        tide_tensor_release(v);
        return *value ? TIDE_OK : tide_error_code(err);
    }
    *value = v;
    return TIDE_OK;
}

/* visit(value) for node and the nodes CSE merged into it; value: a new reference, taken. */
static void visit_value(const tide_exec_item *it, const tide_node *node, int output, tide_tensor *v,
                        const tide_exec_point *at, tide_debug_value_visit visit, void *user)
{
    if (!v || v == GONE || v == tide__dead) {
        if (v == tide__dead)
            tide_tensor_release(v); /* read_latest retains the marker as any value */
        return;
    }
    tide_tensor *host = tide_tensor_is_host_visible(v) ? tide_tensor_retain(v) : tide_tensor_to_host(v, NULL);
    tide_tensor_release(v);
    if (!host)
        return; /* a device that cannot copy it back now: skipped, as a value not produced */
    visit(user, node, output, host, at);
    for (int t = 0; it && t < it->num_twins; t++)
        visit(user, it->twins[t], output, host, at);
    tide_tensor_release(host);
}

void tide_debug_step_each_value(const tide_debug_step *s, tide_debug_value_visit visit, void *user)
{
    tide_step *step = s->step;
    const tide_plan *p = step->plan;
    tide_exec_point root = {"", 0};
    for (int i = 0; i < p->num_feeds; i++) {
        const tide_feed *f = &step->args->feeds[i];
        visit_value(NULL, f->output.node, f->output.index, tide_tensor_retain(f->value), &root, visit, user);
    }
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        for (int i = 0; it->kind == ITEM_NODE && i < it->kn.num_outputs; i++) {
            tide_exec_point at = root;
            tide_tensor *v;
            if (s->at && s->at->after && s->at->item == k) { /* stopped right after it: its fresh outputs */
                v = tide_tensor_retain(s->at->outs[i]);
                at = point_of(s->at->iter);
            } else {
                v = read_latest(step, k, i, &at);
            }
            visit_value(it, it->node, i, v, &at, visit, user);
        }
    }
}

tide_status tide_debug_step_set_value(tide_debug_step *s, const tide_node *node, int output, tide_tensor *value,
                                      tide_error *err)
{
    parked *p = s->at;
    tide_step *step = s->step;
    if (!p || !node || !value)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "set_value: no stop, node or value");
    const tide_exec_item *it = &step->plan->items[p->item];
    tide_tensor **slot = NULL;
    if (p->after && item_of(step, node) == p->item) { /* an output of the node stopped after */
        if (output >= 0 && output < it->kn.num_outputs)
            slot = &p->outs[output];
    } else if (!p->after) { /* an input of the node stopped before, named by its producer */
        /* a fused group's item (a stop in a plan fused before a breakpoint was set) reads its externals */
        const tide_node *wired = it->fused ? &it->fused->wiring : it->node;
        for (int i = 0; i < it->num_inputs && i < wired->num_inputs && !slot; i++)
            if (wired->inputs[i].node == node && wired->inputs[i].index == output)
                slot = &p->iter->slots[it->input_base + i];
    }
    if (!slot)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "cannot set '%s:%d' here: only an output of the node the "
                              "step stopped after, or a value the node it stopped before reads ('%s', stopped %s)",
                              node->name, output, it->node->name, p->after ? "after it ran" : "before it runs");
    if (*slot && *slot != tide__dead && tide_tensor_dtype(*slot) != tide_tensor_dtype(value))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "'%s:%d' is %s; the value given is %s", node->name, output,
                              tide_dtype_name(tide_tensor_dtype(*slot)), tide_dtype_name(tide_tensor_dtype(value)));
    tide_tensor *placed = NULL; /* the value where the replaced one lived (an accelerator's memory) */
    if (*slot && *slot != tide__dead && tide_tensor_get_device(*slot) &&
        !tide_device_can_read(tide_tensor_get_device(*slot), value)) {
        if (!(placed = tide_tensor_copy_to_device(value, tide_tensor_get_device(*slot), err)))
            return tide_error_code(err);
        value = placed;
    }
    tide_tensor_release(*slot);
    *slot = tide_tensor_retain(value);
    if (p->after) { /* what :print shows from now on (its consumers have not read it: still kept) */
        _Atomic(tide_tensor *) *latest = &step->latest[step->latest_base[p->item] + output];
        if (it->frame == 0) {
            release_taken(step, atomic_exchange(latest, tide_tensor_retain(value)));
        } else {
            pthread_mutex_lock(&step->lock);
            tide_tensor_release(atomic_exchange(latest, tide_tensor_retain(value)));
            pthread_mutex_unlock(&step->lock);
        }
    }
    tide_tensor_release(placed);
    return TIDE_OK;
}
