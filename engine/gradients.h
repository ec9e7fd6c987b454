/* gradients.h — what gradients.c (the backward walk) and grads/while_grad.c (the gradient of a while
 * loop) share. Nothing else includes it.
 *
 * A backward pass walks one *region*: the root frame for tide_gradients, or the body of a loop for
 * the gradient of that loop (which builds a gradient loop whose body is such a walk). Nodes of the
 * region get their gradient functions called; a loop inside the region is one unit, handled by
 * tide__while_grad when the walk reaches the loop's lowest Exit (by then every consumer of its Exits
 * has contributed), and its Enters are left to it. */
#ifndef TIDE_GRADIENTS_H
#define TIDE_GRADIENTS_H

#include "internal.h"

/* The loop frames of the graph's nodes, found once per tide_gradients call (as plan_frames.c finds
 * them for a plan, over every node), and extended with the forward-side nodes the gradients add to
 * loops (counters, stacks). */
typedef struct grad_frame {
    char *name;       /* the Enters' frame_name ("" for the root) */
    int parent;       /* -1 for the root */
    int lowest_exit;  /* the smallest id of its Exit nodes, -1 when none */
} grad_frame;

typedef struct grad_frames {
    tide_graph *g;
    int num_nodes;    /* the forward graph: nodes when tide_gradients started */
    int *frame_of;    /* per node id (cap_nodes of them): its frame, -1 for a node of the backward pass */
    int *enter_child; /* per forward node id: an Enter's child frame, else -1 */
    int cap_nodes;
    grad_frame *f;
    int num;
} grad_frames;

/* The frame node n runs in, -1 when it is not a forward-side node. */
int tide__grad_frame_of(const grad_frames *fr, const tide_node *n);
/* Records a node the gradient adds on the forward side (in frame f). */
tide_status tide__grad_frames_note(grad_frames *fr, const tide_node *n, int f, tide_error *err);

typedef struct walk walk;

/* The walk's facts for the loop unit: the frames, the summed gradient arriving at t (.node NULL when
 * none), whether t wants a gradient (on the path from xs, or one of them, and differentiable), and
 * adding a gradient for t. */
grad_frames *tide__walk_frames(walk *w);
tide_output tide__walk_gradient(walk *w, tide_output t);
bool tide__walk_wants(const walk *w, tide_output t);
tide_status tide__walk_contribute(walk *w, tide_output t, tide_output grad);
tide_error *tide__walk_error(walk *w);

/* Gradients of ys (seeded with grad_ys) with respect to xs within `region`: dxs[i] the summed
 * gradient of xs[i] (.node NULL when none reaches it). Used by the loop unit for a body. */
tide_status tide__grad_region(grad_frames *fr, int region, const tide_output *ys, int num_ys,
                              const tide_output *grad_ys, const tide_output *xs, int num_xs, tide_output *dxs,
                              tide_error *err);

/* grads/while_grad.c: the gradient of the loop of frame `frame` (a child of the walk's region),
 * given what arrived at its Exits: contributes to the inputs of its Enters. */
tide_status tide__while_grad(walk *w, int frame);
/* The grad-loop hooks of a context (control_flow.c's capture). side: whether `in` is a value of the
 * forward loop the context's gradient loop undoes (popped from the stack its forward iteration pushed
 * it on: pop makes the push on first use), a node the gradient added on the forward side elsewhere
 * (outside the context, however late it was made), or neither. */
enum { GRAD_NOT_FORWARD = 0, GRAD_FORWARD_HERE = 1, GRAD_FORWARD_OUTSIDE = 2 };
int tide__grad_loop_side(const tide_cf_context *c, tide_output in);
tide_output tide__grad_loop_pop(tide_graph *g, tide_cf_context *c, tide_output in, tide_error *err);

#endif
