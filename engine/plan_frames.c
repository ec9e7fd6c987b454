/* plan_frames.c — the execution frames of a plan (white paper §4.4; exec.h says what a frame is).
 *
 * Every node runs in the frame its inputs come from: a node without inputs in the root frame; an
 * Enter's output lands in the child frame named by its frame_name attr (a child of the frame the Enter
 * runs in), an Exit's in the parent of its frame, anything else's in its own frame. All inputs of a
 * node, data and control, must land in the same frame: a value enters a loop only through an Enter and
 * leaves it only through an Exit. NextIteration's edge to its Merge is the back edge of a loop: plan.c
 * orders the items without it, and here it must stay within one frame.
 *
 * The executor counts on each iteration of a frame running every item of the frame exactly once (live
 * or dead), so two shapes are refused with a message: a value of a non-constant Enter (it reaches the
 * first iteration only) or of a NextIteration (it reaches the later ones only) read by anything but a
 * Merge. Placement keeps such a Merge with its Enter and NextIteration (placement.c), so those edges
 * never cross devices either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

static bool is_op(const tide_exec_item *it, const char *op)
{
    return it->kind == ITEM_NODE && strcmp(it->node->op->name, op) == 0;
}

int tide__plan_landing_frame(const tide_plan *p, int k)
{
    const tide_exec_item *it = &p->items[k];
    switch (it->flow) {
    case FLOW_ENTER:
    case FLOW_CONST_ENTER:
        return it->child;
    case FLOW_EXIT:
        return p->frames[it->frame].parent;
    default:
        return it->frame;
    }
}

/* "the root frame" or "loop frame 'while'" for messages (buf). */
static const char *frame_text(const tide_plan *p, int f, char *buf, size_t size)
{
    if (f == 0)
        snprintf(buf, size, "the root frame (outside every loop)");
    else
        snprintf(buf, size, "loop frame '%s'", p->frames[f].name);
    return buf;
}

/* The child frame named `name` of `parent`, made when new. -1 when out of memory. */
static int child_frame(tide_plan *p, int parent, const char *name, int64_t parallel)
{
    for (int f = 1; f < p->num_frames; f++)
        if (p->frames[f].parent == parent && strcmp(p->frames[f].name, name) == 0)
            return f;
    tide_plan_frame *grown = realloc(p->frames, sizeof *grown * ((size_t)p->num_frames + 1));
    if (!grown)
        return -1;
    p->frames = grown;
    tide_plan_frame *fr = &p->frames[p->num_frames];
    *fr = (tide_plan_frame){.name = tide__strdup(name), .parent = parent,
                            .parallel_iterations = parallel < 1 ? 1 : parallel > (1 << 20) ? 1 << 20 : (int)parallel};
    return fr->name ? p->num_frames++ : -1;
}

/* The flow facts of a node item that runs in frame f. */
static tide_status set_flow(tide_plan *p, int k, tide_error *err)
{
    tide_exec_item *it = &p->items[k];
    const tide_node *n = it->node;
    char where[160];
    it->sees_dead = (it->kn.kernel->spec.flags & TIDE_KERNEL_SEES_DEAD) != 0;
    if (is_op(it, "Merge")) {
        it->is_merge = true;
        it->sees_dead = true;
    } else if (is_op(it, "Enter")) {
        const char *name = "";
        bool constant = false;
        int64_t parallel = 10;
        tide_attrs_get_string(n->attrs, "frame_name", &name);
        tide_attrs_get_bool(n->attrs, "is_constant", &constant);
        tide_attrs_get_int(n->attrs, "parallel_iterations", &parallel);
        it->flow = constant ? FLOW_CONST_ENTER : FLOW_ENTER;
        it->child = child_frame(p, it->frame, name, parallel);
        if (it->child < 0)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else if (is_op(it, "Exit") || is_op(it, "NextIteration")) {
        if (it->frame == 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "node '%s' (%s) is not inside a loop: its input "
                                  "comes from %s, and only values that entered a loop (through Enter) can "
                                  "leave it or go round it", n->name, n->op->name, frame_text(p, 0, where, sizeof where));
        it->flow = is_op(it, "Exit") ? FLOW_EXIT : FLOW_NEXT;
    }
    if (!p->control_flow)
        p->control_flow = it->is_merge || it->flow != FLOW_PLAIN || is_op(it, "Switch") || is_op(it, "LoopCond");
    return TIDE_OK;
}

/* The frame item k (a node, in topological order) runs in, from its inputs' landing frames. */
static tide_status frame_of(tide_plan *p, int k, const int *node_item,
                            bool (*is_fed)(void *, const tide_node *, int), void *arg, tide_error *err)
{
    tide_exec_item *it = &p->items[k];
    const tide_node *n = it->node;
    int frame = -1, first = -1; /* first: the input that decided it */
    for (int i = 0; i < n->num_inputs + n->num_control; i++) {
        const tide_node *src = i < n->num_inputs ? n->inputs[i].node : n->control[i - n->num_inputs];
        int land;
        if (i < n->num_inputs && tide__input_is_ref(n, i))
            continue; /* a variable, not a value: no edge */
        if (i < n->num_inputs && is_fed(arg, src, n->inputs[i].index)) {
            land = 0; /* feeds come from the caller, outside every loop */
        } else {
            int s = node_item[src->id];
            if (s < 0)
                continue; /* a control input from a fully fed node: met at once */
            if (s >= k) /* not ordered before: the back edge of a loop (checked by check_back_edges) */
                continue;
            land = tide__plan_landing_frame(p, s);
        }
        if (frame < 0) {
            frame = land;
            first = i;
        } else if (land != frame) {
            char a[160], b[160];
            const tide_node *other = first < n->num_inputs ? n->inputs[first].node : n->control[first - n->num_inputs];
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "node '%s' (%s) mixes frames: its input '%s' comes from %s, its input '%s' from %s "
                                  "(a value enters a loop only through an Enter and leaves it only through an Exit)",
                                  n->name, n->op->name, other->name, frame_text(p, frame, a, sizeof a), src->name,
                                  frame_text(p, land, b, sizeof b));
        }
    }
    it->frame = frame < 0 ? 0 : frame;
    return set_flow(p, k, err);
}

/* Values that reach only some iterations (a non-constant Enter's, a NextIteration's) may feed only a
 * Merge, and a back edge stays in its frame. */
static tide_status check_loop_edges(tide_plan *p, int num_node_items, const int *node_item,
                                    bool (*is_fed)(void *, const tide_node *, int), void *arg, tide_error *err)
{
    for (int k = 0; k < num_node_items; k++) {
        const tide_exec_item *it = &p->items[k];
        const tide_node *n = it->node;
        for (int i = 0; i < n->num_inputs + n->num_control; i++) {
            bool data = i < n->num_inputs;
            const tide_node *src = data ? n->inputs[i].node : n->control[i - n->num_inputs];
            if ((data && (tide__input_is_ref(n, i) || is_fed(arg, src, n->inputs[i].index))) || node_item[src->id] < 0)
                continue;
            const tide_exec_item *s = &p->items[node_item[src->id]];
            if (s->flow != FLOW_ENTER && s->flow != FLOW_NEXT)
                continue;
            if (!data || !it->is_merge)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "node '%s' (%s) %s '%s' (%s), whose value reaches %s iteration%s of its loop: only a "
                                      "Merge may read it%s", n->name, n->op->name, data ? "reads" : "waits for",
                                      src->name, src->op->name, s->flow == FLOW_ENTER ? "only the first" : "only the later",
                                      s->flow == FLOW_ENTER ? "" : "s",
                                      s->flow == FLOW_ENTER ? " (make the Enter constant for a loop invariant)" : "");
            if (s->flow == FLOW_NEXT && s->frame != it->frame) {
                char a[160], b[160];
                return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                      "node '%s' (Merge) in %s reads '%s' (NextIteration) of %s: a back edge must stay "
                                      "within one loop", n->name, frame_text(p, it->frame, a, sizeof a), src->name,
                                      frame_text(p, s->frame, b, sizeof b));
            }
        }
    }
    return TIDE_OK;
}

tide_status tide__plan_assign_frames(tide_plan *p, int num_node_items, const int *node_item,
                                     bool (*is_fed)(void *arg, const tide_node *n, int index), void *arg,
                                     tide_error *err)
{
    p->frames = calloc(1, sizeof *p->frames);
    if (!p->frames || !(p->frames[0].name = tide__strdup("")))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    p->frames[0].parent = -1;
    p->frames[0].parallel_iterations = 1;
    p->num_frames = 1;
    for (int k = 0; k < num_node_items; k++) {
        tide_status st = frame_of(p, k, node_item, is_fed, arg, err);
        if (st != TIDE_OK)
            return st;
    }
    return p->control_flow ? check_loop_edges(p, num_node_items, node_item, is_fed, arg, err) : TIDE_OK;
}

tide_status tide__plan_number_frames(tide_plan *p, tide_error *err)
{
    TIDE_UNUSED(err);
    for (int f = 0; f < p->num_frames; f++) {
        tide_plan_frame *fr = &p->frames[f];
        fr->num_items = fr->num_slots = fr->num_enters = fr->num_const_enters = fr->num_exits = 0;
    }
    for (int k = 0; k < p->num_items; k++) {
        tide_exec_item *it = &p->items[k];
        tide_plan_frame *fr = &p->frames[it->frame];
        it->local = fr->num_items++;
        it->input_base = fr->num_slots;
        fr->num_slots += it->num_inputs;
        if (it->flow == FLOW_ENTER || it->flow == FLOW_CONST_ENTER) {
            p->frames[it->child].num_enters++;
            if (it->flow == FLOW_CONST_ENTER)
                it->flow_index = p->frames[it->child].num_const_enters++;
        } else if (it->flow == FLOW_EXIT) {
            it->flow_index = fr->num_exits++;
        }
    }
    p->num_slots = p->frames[0].num_slots;
    return TIDE_OK;
}

tide_status tide__plan_finish_frames(tide_plan *p, tide_error *err)
{
    for (int f = 0; f < p->num_frames; f++) {
        tide_plan_frame *fr = &p->frames[f];
        fr->items = malloc(sizeof(int) * ((size_t)fr->num_items + 1));
        fr->init_pending = malloc(sizeof(int) * ((size_t)fr->num_items + 1));
        if (!fr->items || !fr->init_pending)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        tide_plan_frame *fr = &p->frames[it->frame];
        fr->items[it->local] = k;
        fr->init_pending[it->local] = it->is_merge ? it->merge_control + 1 : it->initial_pending;
    }
    return TIDE_OK;
}
