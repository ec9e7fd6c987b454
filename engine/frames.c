/* frames.c — the frames and iterations of loops while a step runs (white paper §4.4; the counting
 * rules are in step.h, the static frames in plan_frames.c).
 *
 * A frame instance is made when the first of its Enters runs, in some iteration of the frame around
 * it (the parent iteration, which it holds open until it ends). It owns the iterations that exist:
 *
 *     made by  ->  iteration 0 (with the instance)      iteration k+1 (a live NextIteration of k)
 *     over when    all its items ran (outstanding 0)    same
 *
 * at most parallel_iterations of them at once: a value for an iteration beyond that window waits in
 * `waiting` until an older iteration is over, as does a dead NextIteration value for an iteration not
 * made yet (made later by a live one of the same iteration, it gets it; if none comes, it is dropped).
 * Loop invariants (constant Enters) reach every iteration: those made before they arrive when they
 * arrive, later ones when they are made. An Exit's live value goes to the parent iteration at once; an
 * Exit that never had one (a loop that was itself on a branch not taken, or a step that failed) sends
 * a dead value when the instance ends, which is when no iteration is left, nothing waits and every
 * Enter has arrived.
 *
 * Locks: each instance has one, guarding its window, waiting list, invariants, exits and the child
 * lists of its iterations (the root iteration's children are under the step's lock). Deliveries into
 * the instance's iterations happen under it; nothing takes a parent's lock while holding a child's,
 * except that making a child takes the parent's lock alone first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"

typedef struct waiting_value {
    struct waiting_value *next;
    int64_t iteration;               /* the iteration it is for */
    const tide_exec_item *item;      /* the NextIteration that produced it */
    tide_tensor *value;              /* owned; tide__dead for a dead one */
} waiting_value;

struct tide_frame {
    const tide_plan_frame *def;
    tide_frame *parent;              /* NULL: started from the root iteration */
    tide_iter *parent_iter;
    tide_frame *sibling;             /* the next instance started from parent_iter */
    const char *path;                /* "while", "outer:3/inner" (owned by the step's path list) */
    pthread_mutex_t lock;
    int enters_arrived;
    int64_t base, next;              /* iterations [base, next) were made; window[i % P], NULL once over */
    int live;                        /* made and not over */
    tide_iter **window;
    tide_tensor **invariants;        /* per constant Enter: its value once arrived */
    const tide_exec_item **invariant_items;
    bool *exit_delivered;
    waiting_value *waiting;
    tide_iter *free_iters;
};

const char *tide__frame_path(const tide_frame *f) { return f->path; }

const char *tide__kernel_frame(const tide_kernel_ctx *ctx, int64_t *iteration)
{
    const tide_iter *it = ctx->iter;
    *iteration = it && it->frame ? it->n : 0;
    return it && it->frame ? it->frame->path : "";
}

void tide__frames_init_pending(const tide_step *step, const tide_plan_frame *f, atomic_int *pending)
{
    TIDE_UNUSED(step);
    for (int l = 0; l < f->num_items; l++)
        atomic_init(&pending[l], f->init_pending[l]);
}

/* ---------------------------------------------------------------- iterations */

/* One allocation: the header, slots, timings, pending and Merge counters, dead flags. */
static tide_iter *iter_alloc(tide_step *step, const tide_plan_frame *f)
{
    size_t n = (size_t)f->num_items + 1, ns = (size_t)f->num_slots + 1;
    size_t nt = step->tracing ? n : 0;
    size_t bytes = sizeof(tide_iter) + ns * sizeof(tide_tensor *) + nt * sizeof(tide_node_timing) +
                   n * (sizeof(atomic_int) * 2 + sizeof(atomic_uchar) * 2);
    tide_iter *it = calloc(1, bytes);
    if (!it)
        return NULL;
    char *at = (char *)(it + 1);
    it->slots = (tide_tensor **)at;
    at += ns * sizeof(tide_tensor *);
    it->timings = nt ? (tide_node_timing *)at : NULL;
    at += nt * sizeof(tide_node_timing);
    it->pending = (atomic_int *)at;
    at += n * sizeof(atomic_int);
    it->merge_dead = (atomic_int *)at;
    at += n * sizeof(atomic_int);
    it->dead = (atomic_uchar *)at;
    at += n * sizeof(atomic_uchar);
    it->merge_live = (atomic_uchar *)at;
    return it;
}

/* A fresh (or recycled) iteration n of frame fr, pending counts set, not yet in the window. */
static tide_iter *iter_make(tide_step *step, tide_frame *fr, int64_t n)
{
    const tide_plan_frame *f = fr->def;
    tide_iter *it = fr->free_iters;
    if (it) {
        fr->free_iters = it->next_free;
        memset(it->dead, 0, (size_t)f->num_items + 1);
        memset(it->merge_live, 0, (size_t)f->num_items + 1);
        if (it->timings)
            memset(it->timings, 0, sizeof *it->timings * ((size_t)f->num_items + 1));
    } else if (!(it = iter_alloc(step, f))) {
        return NULL;
    }
    it->frame = fr;
    it->n = n;
    it->children = NULL;
    it->over = false;
    it->next_free = NULL;
    for (int l = 0; l < f->num_items; l++) {
        atomic_init(&it->pending[l], f->init_pending[l]);
        atomic_init(&it->merge_dead[l], 0);
    }
    atomic_init(&it->outstanding, f->num_items);
    return it;
}

/* The timings of an iteration that is over join the step's (traced steps). */
static void keep_timings(tide_step *step, const tide_iter *it)
{
    const tide_plan_frame *f = it->frame->def;
    pthread_mutex_lock(&step->lock);
    for (int l = 0; l < f->num_items; l++) {
        if (!it->timings[l].node)
            continue;
        if (step->num_loop_timings == step->cap_loop_timings) {
            int cap = step->cap_loop_timings ? 2 * step->cap_loop_timings : 256;
            tide_node_timing *grown = realloc(step->loop_timings, sizeof *grown * (size_t)cap);
            if (!grown)
                break; /* traces are best effort: the step itself is not failed for them */
            step->loop_timings = grown;
            step->cap_loop_timings = cap;
        }
        step->loop_timings[step->num_loop_timings++] = it->timings[l];
    }
    pthread_mutex_unlock(&step->lock);
}

/* Releases what an iteration still holds and keeps it for reuse (frame's lock held). */
static void iter_retire(tide_step *step, tide_frame *fr, tide_iter *it)
{
    for (int s = 0; s < fr->def->num_slots; s++) {
        tide_tensor_release(it->slots[s]); /* a Merge's ignored inputs, a failed step's leftovers */
        it->slots[s] = NULL;
    }
    if (it->timings)
        keep_timings(step, it);
    it->next_free = fr->free_iters;
    fr->free_iters = it;
}

static tide_iter *window_at(const tide_frame *fr, int64_t n)
{
    return n >= fr->base && n < fr->next ? fr->window[n % fr->def->parallel_iterations] : NULL;
}

/* The outputs of item `it` (one output) as an array deliverable to an iteration. */
static void deliver_value(tide_step *step, const tide_exec_item *it, tide_tensor *value, tide_iter *to, bool move,
                          ready_stack *rs)
{
    tide_tensor *outs[1] = {value};
    tide__deliver(step, it, outs, to, move, rs);
    if (move)
        tide_tensor_release(outs[0]); /* NULL when a consumer took it */
}

/* Makes iteration `next` (frame's lock held): into the window, the invariants that arrived, and the
 * values waiting for it. False when out of memory (the step fails). */
static bool open_iteration(tide_step *step, tide_frame *fr, ready_stack *rs)
{
    int64_t n = fr->next;
    tide_iter *it = iter_make(step, fr, n);
    if (!it) {
        tide__step_fail(step, TIDE_RESOURCE_EXHAUSTED, NULL, "out of memory starting a loop iteration");
        return false;
    }
    fr->next++;
    if (fr->def->num_items == 0) { /* nothing runs in it (an Enter nobody reads): over at once */
        iter_retire(step, fr, it);
        return true;
    }
    fr->window[n % fr->def->parallel_iterations] = it;
    fr->live++;
    for (int c = 0; c < fr->def->num_const_enters; c++)
        if (fr->invariants[c])
            deliver_value(step, fr->invariant_items[c], fr->invariants[c], it, false, rs);
    for (waiting_value **w = &fr->waiting; *w;) {
        waiting_value *v = *w;
        if (v->iteration != n) {
            w = &v->next;
            continue;
        }
        *w = v->next;
        deliver_value(step, v->item, v->value, it, true, rs);
        free(v);
    }
    return true;
}

static bool waiting_live_for(const tide_frame *fr, int64_t n)
{
    for (const waiting_value *v = fr->waiting; v; v = v->next)
        if (v->iteration == n && v->value != tide__dead)
            return true;
    return false;
}

/* Drops the dead values waiting for iteration n, which will not be made (frame's lock held). */
static void drop_waiting(tide_frame *fr, int64_t n)
{
    for (waiting_value **w = &fr->waiting; *w;) {
        waiting_value *v = *w;
        if (v->iteration == n) {
            *w = v->next;
            tide_tensor_release(v->value);
            free(v);
        } else {
            w = &v->next;
        }
    }
}

/* ---------------------------------------------------------------- frame instances */

static tide_frame *frame_make(tide_step *step, tide_iter *parent_iter, int def_index)
{
    const tide_plan_frame *f = &step->plan->frames[def_index];
    tide_frame *fr = calloc(1, sizeof *fr);
    if (!fr)
        return NULL;
    fr->def = f;
    fr->parent = parent_iter->frame;
    fr->parent_iter = parent_iter;
    fr->window = calloc((size_t)f->parallel_iterations, sizeof *fr->window);
    fr->invariants = calloc((size_t)f->num_const_enters + 1, sizeof *fr->invariants);
    fr->invariant_items = calloc((size_t)f->num_const_enters + 1, sizeof *fr->invariant_items);
    fr->exit_delivered = calloc((size_t)f->num_exits + 1, sizeof *fr->exit_delivered);
    char *path = fr->parent ? tide__asprintf("%s:%lld/%s", fr->parent->path, (long long)parent_iter->n, f->name)
                            : tide__strdup(f->name);
    pthread_mutex_lock(&step->lock); /* the step keeps every path: timings point into them (never called
                                        with the step's lock held: see child_of) */
    bool kept = false;
    if (path && step->num_paths == step->cap_paths) {
        int cap = step->cap_paths ? 2 * step->cap_paths : 8;
        char **grown = realloc(step->paths, sizeof *grown * (size_t)cap);
        if (grown) {
            step->paths = grown;
            step->cap_paths = cap;
        }
    }
    if (path && step->num_paths < step->cap_paths) {
        step->paths[step->num_paths++] = path;
        kept = true;
    }
    pthread_mutex_unlock(&step->lock);
    if (!kept)
        free(path);
    if (!fr->window || !fr->invariants || !fr->invariant_items || !fr->exit_delivered || !kept) {
        free(fr->window);
        free(fr->invariants);
        free(fr->invariant_items);
        free(fr->exit_delivered);
        free(fr);
        return NULL;
    }
    fr->path = path;
    pthread_mutex_init(&fr->lock, NULL);
    atomic_fetch_add(&step->live_frames, 1);
    return fr;
}

static pthread_mutex_t *children_lock(tide_step *step, tide_iter *iter)
{
    return iter->frame ? &iter->frame->lock : &step->lock;
}

/* The instance of frame def_index started from parent_iter, made (with its iteration 0) on first use;
 * it holds parent_iter open. NULL when out of memory (the step fails). */
static tide_frame *child_of(tide_step *step, tide_iter *parent_iter, int def_index, ready_stack *rs)
{
    pthread_mutex_t *lock = children_lock(step, parent_iter);
    const tide_plan_frame *def = &step->plan->frames[def_index];
    tide_frame *fr = NULL, *made = NULL;
    for (int attempt = 0; attempt < 2 && !fr; attempt++) {
        pthread_mutex_lock(lock);
        for (fr = parent_iter->children; fr && fr->def != def;)
            fr = fr->sibling;
        if (!fr && made) { /* link the one made below, unless another Enter linked one meanwhile */
            fr = made;
            made = NULL;
            fr->sibling = parent_iter->children;
            parent_iter->children = fr;
            atomic_fetch_add_explicit(&parent_iter->outstanding, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(lock);
        if (!fr && attempt == 0 && !(made = frame_make(step, parent_iter, def_index)))
            break; /* made outside the lock: frame_make takes the step's lock, the root's children lock */
    }
    if (made) { /* lost the race: never used */
        atomic_fetch_sub(&step->live_frames, 1);
        pthread_mutex_destroy(&made->lock);
        free(made->window);
        free(made->invariants);
        free(made->invariant_items);
        free(made->exit_delivered);
        free(made);
    }
    if (!fr) {
        tide__step_fail(step, TIDE_RESOURCE_EXHAUSTED, NULL, "out of memory entering a loop");
        return NULL;
    }
    pthread_mutex_lock(&fr->lock);
    if (fr->next == 0)
        open_iteration(step, fr, rs);
    pthread_mutex_unlock(&fr->lock);
    return fr;
}

static bool frame_finished(const tide_frame *fr)
{
    return fr->live == 0 && !fr->waiting && fr->enters_arrived == fr->def->num_enters;
}

/* The instance is over: Exits that never produced a live value send dead ones, then it lets go of its
 * parent iteration. */
static void frame_end(tide_step *step, tide_frame *fr, ready_stack *rs)
{
    const tide_plan_frame *f = fr->def;
    for (int l = 0; l < f->num_items; l++) {
        const tide_exec_item *it = &step->plan->items[f->items[l]];
        if (it->flow == FLOW_EXIT && !fr->exit_delivered[it->flow_index])
            tide__deliver(step, it, NULL, fr->parent_iter, true, rs); /* NULL: dead */
    }
    tide_iter *parent_iter = fr->parent_iter;
    pthread_mutex_t *lock = children_lock(step, parent_iter);
    pthread_mutex_lock(lock);
    for (tide_frame **c = &parent_iter->children; *c; c = &(*c)->sibling)
        if (*c == fr) {
            *c = fr->sibling;
            break;
        }
    pthread_mutex_unlock(lock);
    for (int c = 0; c < f->num_const_enters; c++)
        tide_tensor_release(fr->invariants[c]);
    for (tide_iter *it = fr->free_iters; it;) {
        tide_iter *next = it->next_free;
        free(it);
        it = next;
    }
    pthread_mutex_destroy(&fr->lock);
    free(fr->window);
    free(fr->invariants);
    free(fr->invariant_items);
    free(fr->exit_delivered);
    free(fr);
    atomic_fetch_sub(&step->live_frames, 1);
    tide__iter_item_done(step, parent_iter, rs);
}

/* ---------------------------------------------------------------- what control-flow items produce */

/* The functions below take over the reference to value. */
static void enter(tide_step *step, const tide_exec_item *it, tide_tensor *value, tide_iter *from, ready_stack *rs)
{
    tide_frame *fr = child_of(step, from, it->child, rs);
    if (!fr) {
        tide_tensor_release(value);
        return;
    }
    pthread_mutex_lock(&fr->lock);
    fr->enters_arrived++;
    if (it->flow == FLOW_CONST_ENTER) { /* every iteration, those to come too */
        fr->invariants[it->flow_index] = tide_tensor_retain(value);
        fr->invariant_items[it->flow_index] = it;
        for (int64_t n = fr->base; n < fr->next; n++) {
            tide_iter *to = window_at(fr, n);
            if (to)
                deliver_value(step, it, value, to, false, rs);
        }
    } else if (window_at(fr, 0)) {
        deliver_value(step, it, value, window_at(fr, 0), true, rs);
        value = NULL;
    }
    tide_tensor_release(value);
    bool finished = frame_finished(fr);
    pthread_mutex_unlock(&fr->lock);
    if (finished)
        frame_end(step, fr, rs);
}

static void leave(tide_step *step, const tide_exec_item *it, tide_tensor *value, tide_iter *from, ready_stack *rs)
{
    if (value == tide__dead)
        return; /* the loop goes on (or the frame's end sends it dead); the dead value is immortal */
    tide_frame *fr = from->frame;
    pthread_mutex_lock(&fr->lock);
    bool twice = fr->exit_delivered[it->flow_index];
    fr->exit_delivered[it->flow_index] = true;
    pthread_mutex_unlock(&fr->lock);
    if (twice) {
        tide_tensor_release(value);
        char msg[600];
        snprintf(msg, sizeof msg, "node '%s' (Exit) produced a value in two iterations of loop frame '%s' "
                 "(a loop's Exits take their value from the Switch that ends it)", it->node->name, fr->path);
        tide__step_fail(step, TIDE_INVALID_ARGUMENT, NULL, msg);
        return;
    }
    deliver_value(step, it, value, fr->parent_iter, true, rs);
}

static void next_iteration(tide_step *step, const tide_exec_item *it, tide_tensor *value, tide_iter *from,
                           ready_stack *rs)
{
    tide_frame *fr = from->frame;
    int64_t n = from->n + 1;
    pthread_mutex_lock(&fr->lock);
    tide_iter *to = window_at(fr, n);
    if (!to && n == fr->next && value != tide__dead && fr->next - fr->base < fr->def->parallel_iterations &&
        open_iteration(step, fr, rs))
        to = window_at(fr, n);
    if (to) {
        deliver_value(step, it, value, to, true, rs);
    } else if (n >= fr->next) { /* beyond the window, or dead before any live one: it waits */
        waiting_value *w = malloc(sizeof *w);
        if (w) {
            *w = (waiting_value){fr->waiting, n, it, value};
            fr->waiting = w;
        } else {
            tide_tensor_release(value);
            tide__step_fail(step, TIDE_RESOURCE_EXHAUSTED, NULL, "out of memory in a loop");
        }
    } else {
        tide_tensor_release(value); /* cannot happen: the iteration it is for needs it */
    }
    pthread_mutex_unlock(&fr->lock);
}

void tide__frames_propagate(tide_step *step, const tide_exec_item *it, tide_tensor **outs, tide_iter *from,
                            ready_stack *rs)
{
    tide_tensor *value = outs && outs[0] ? outs[0] : tide__dead; /* NULL: a failed step's missing output */
    if (outs)
        outs[0] = NULL; /* taken over: the consumer in the other iteration may get it alone */
    switch (it->flow) {
    case FLOW_ENTER:
    case FLOW_CONST_ENTER:
        enter(step, it, value, from, rs);
        break;
    case FLOW_EXIT:
        leave(step, it, value, from, rs);
        break;
    case FLOW_NEXT:
        next_iteration(step, it, value, from, rs);
        break;
    default:
        tide__deliver(step, it, outs, from, true, rs);
    }
}

void tide__frames_iter_over(tide_step *step, tide_iter *iter, ready_stack *rs)
{
    tide_frame *fr = iter->frame;
    pthread_mutex_lock(&fr->lock);
    int p = fr->def->parallel_iterations;
    int64_t n = iter->n;
    fr->window[n % p] = NULL;
    fr->live--;
    iter_retire(step, fr, iter);
    while (fr->base < fr->next && !fr->window[fr->base % p])
        fr->base++;
    /* Iteration n + 1 will get no more values from n: made if a live value waits for it (and the
     * window allows), else its waiting dead values go. Room in the window may also let one start. */
    if (fr->next == n + 1 && !waiting_live_for(fr, n + 1))
        drop_waiting(fr, n + 1);
    while (fr->waiting && waiting_live_for(fr, fr->next) && fr->next - fr->base < p)
        if (!open_iteration(step, fr, rs))
            break;
    bool finished = frame_finished(fr);
    pthread_mutex_unlock(&fr->lock);
    if (finished)
        frame_end(step, fr, rs);
}

void tide__frames_step_end(tide_step *step)
{
    for (int i = 0; i < step->num_paths; i++)
        free(step->paths[i]);
    free(step->paths);
    free(step->loop_timings);
    step->paths = NULL;
    step->loop_timings = NULL;
    step->num_paths = step->num_loop_timings = 0;
}
