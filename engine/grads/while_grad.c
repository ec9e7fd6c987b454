/* while_grad.c — the gradient of a while loop (gradients.h), as TensorFlow 1.x builds it: a gradient
 * loop that runs the forward loop's iterations backwards.
 *
 *   forward loop F (already built)              gradient loop B (built here)
 *     + a counter k = 0, 1, ... (new nodes)       vars: n = N (F's count), dv (one per variable,
 *     + pushes: value t of iteration k kept         from the gradients at F's Exits), acc (one per
 *       at index k on a stack, on first use         loop invariant, from zeros)
 *       by B's body                               while n > 0:
 *     N = the counter at F's end                    k = n - 1
 *                                                   dv, d(invariants) = gradient of F's body at
 *                                                     iteration k, with t popped at index k
 *                                                   acc += d(invariants); n = k
 *   results: dv -> the variables' initial values, acc -> the invariants' outer values
 *
 * B's body is a walk of F's body region (tide__grad_region) built in B's context, whose capture hook
 * (tide__grad_loop_side/pop) turns every forward value of F a gradient function reads into a pop of
 * its stack, made with its push on first use; invariants are read outside F instead. Every push of
 * iteration k is a control input of the counter's increment, so N, hence B, waits for all pushes. A
 * loop inside F's body is differentiated the same way inside B's body: its stack handles and count
 * are forward values of F, kept on F's stacks in turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gradients.h"

typedef struct grad_loop {
    grad_frames *fr;
    int frame;                 /* F */
    int parallel;              /* F's parallel_iterations */
    tide_node *anchor;         /* a node of F's parent frame: stacks and the counter's 0 hang on it */
    tide_output counter;       /* F's iteration index, in F's body */
    tide_output index;         /* in B's body: the forward iteration being undone */
    tide_node **pushes;
    int num_pushes, cap_pushes;
} grad_loop;

typedef struct loop_var {
    tide_node *enter, *merge, *next, *sw, *exit;
    bool diff;                 /* differentiable dtype */
} loop_var;

typedef struct loop_shape {
    grad_frames *fr;
    int frame;
    tide_node *loop_cond;
    loop_var *vars;
    int num_vars;
    tide_node **invariants;    /* constant Enters into F whose outer value wants a gradient */
    int num_invariants;
} loop_shape;

static bool is_op(const tide_node *n, const char *op)
{
    return (n->op->flags & TIDE_OP_CONTROL_FLOW) && strcmp(n->op->name, op) == 0;
}

static bool is_float(tide_dtype dt) { return tide_dtype_is_float(dt) || tide_dtype_is_complex(dt); }

/* The frame a value of node n lands in (forward-side nodes only; -1 otherwise). */
static int value_frame(const grad_frames *fr, const tide_node *n)
{
    int f = tide__grad_frame_of(fr, n);
    if (f < 0 || n->id >= fr->num_nodes)
        return f; /* added by a gradient: recorded where its value lands */
    if (fr->enter_child[n->id] >= 0)
        return fr->enter_child[n->id];
    return is_op(n, "Exit") && f > 0 ? fr->f[f].parent : f;
}

int tide__grad_loop_side(const tide_cf_context *c, tide_output in)
{
    int f = value_frame(c->grad->fr, in.node);
    return f < 0 ? GRAD_NOT_FORWARD : f == c->grad->frame ? GRAD_FORWARD_HERE : GRAD_FORWARD_OUTSIDE;
}

/* ---------------------------------------------------------------- building on the forward side */

/* A node of op over inputs on the forward side: built outside every context, recorded as landing in
 * frame `lands`. NULL with err. */
static tide_node *forward_node(tide_graph *g, grad_frames *fr, const char *op, const tide_output *in, int n,
                               tide_node *control, int lands, tide_attrs *attrs, tide_error *err)
{
    tide_cf_context *saved = g->cf_context;
    g->cf_context = NULL;
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_inputs_flat(b, in, n);
    if (control)
        tide_node_builder_add_control_input(b, control);
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    tide_node *node = tide_node_builder_finish(b, err);
    g->cf_context = saved;
    if (node && tide__grad_frames_note(fr, node, lands, err) != TIDE_OK)
        return NULL;
    return node;
}

static tide_node *int_const(tide_graph *g, grad_frames *fr, int32_t v, tide_node *control, int lands, tide_error *err)
{
    tide_tensor *t = tide_tensor_new_scalar(TIDE_INT32, &v, err);
    if (!t)
        return NULL;
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_tensor(a, "value", t);
    tide_attrs_set_type(a, "dtype", TIDE_INT32);
    tide_tensor_release(t);
    tide_node *n = forward_node(g, fr, "Const", NULL, 0, control, lands, a, err);
    tide_attrs_free(a);
    return n;
}

static tide_node *enter_into(tide_graph *g, grad_loop *gl, tide_output in, bool constant, tide_error *err)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_string(a, "frame_name", gl->fr->f[gl->frame].name);
    tide_attrs_set_bool(a, "is_constant", constant);
    tide_attrs_set_int(a, "parallel_iterations", gl->parallel);
    tide_node *n = forward_node(g, gl->fr, "Enter", &in, 1, NULL, gl->frame, a, err);
    tide_attrs_free(a);
    return n;
}

tide_output tide__grad_loop_pop(tide_graph *g, tide_cf_context *c, tide_output in, tide_error *err)
{
    grad_loop *gl = c->grad;
    grad_frames *fr = gl->fr;
    tide_output none = {NULL, 0};
    bool constant = false;
    if (in.node->id < fr->num_nodes && fr->enter_child[in.node->id] == gl->frame &&
        tide_attrs_get_bool(in.node->attrs, "is_constant", &constant) && constant) {
        tide_cf_context *saved = g->cf_context; /* a loop invariant: its outer value, entered into B */
        g->cf_context = c;
        tide_output outer = tide__cf_capture(g, in.node->inputs[0], err);
        g->cf_context = saved;
        return outer;
    }
    tide_dtype dt = in.node->out_dtypes[in.index];
    int parent = fr->f[gl->frame].parent;
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "elem_type", dt);
    tide_node *stack = forward_node(g, fr, "_LoopStack", NULL, 0, gl->anchor, parent, a, err);
    tide_attrs_free(a);
    tide_node *handle = stack ? enter_into(g, gl, (tide_output){stack, 0}, true, err) : NULL;
    tide_output push_in[3] = {{handle, 0}, gl->counter, in};
    tide_node *push = handle ? forward_node(g, fr, "_LoopStackPush", push_in, 3, NULL, gl->frame, NULL, err) : NULL;
    if (!push)
        return none;
    if (gl->num_pushes == gl->cap_pushes) {
        int cap = gl->cap_pushes ? 2 * gl->cap_pushes : 8;
        tide_node **grown = realloc(gl->pushes, sizeof *grown * (size_t)cap);
        if (!grown) {
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            return none;
        }
        gl->pushes = grown;
        gl->cap_pushes = cap;
    }
    gl->pushes[gl->num_pushes++] = push;
    /* The pop, in B: its handle comes in through B's context like any outside value. */
    tide_cf_context *saved = g->cf_context;
    g->cf_context = c;
    tide_node_builder *b = tide_node_builder_new(g, "_LoopStackPop", NULL);
    tide_node_builder_add_input(b, (tide_output){stack, 0});
    tide_node_builder_add_input(b, gl->index);
    tide_attrs_set_type(tide_node_builder_attrs(b), "elem_type", dt);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &in.node->out_shapes[in.index]);
    tide_node *pop = tide_node_builder_finish(b, err);
    g->cf_context = saved;
    return (tide_output){pop, 0};
}

/* ---------------------------------------------------------------- the loop's structure */

static tide_status refuse(const loop_shape *ls, tide_error *err, const char *why)
{
    return tide_error_set(err, TIDE_UNIMPLEMENTED, "gradients: cannot differentiate the loop of frame '%s': %s",
                          ls->fr->f[ls->frame].name, why);
}

/* The loop variables (a Switch on the LoopCond of a Merge of an Enter and a NextIteration), their
 * Exits, and the invariants whose outer values want a gradient. */
static tide_status find_structure(walk *w, loop_shape *ls, tide_error *err)
{
    grad_frames *fr = ls->fr;
    tide_graph *g = fr->g;
    for (int id = 0; id < fr->num_nodes; id++) {
        tide_node *n = g->nodes[id];
        if (fr->frame_of[id] == ls->frame && is_op(n, "Switch") && is_op(n->inputs[0].node, "Merge") &&
            is_op(n->inputs[1].node, "LoopCond") && fr->frame_of[n->inputs[0].node->id] == ls->frame) {
            tide_node *m = n->inputs[0].node;
            loop_var v = {.sw = n, .merge = m, .diff = is_float(m->out_dtypes[0])};
            for (int i = 0; i < m->num_inputs; i++) {
                tide_node *src = m->inputs[i].node;
                if (is_op(src, "NextIteration") && !v.next)
                    v.next = src;
                else if (is_op(src, "Enter") && !v.enter)
                    v.enter = src;
            }
            if (!v.next || !v.enter || m->num_inputs != 2)
                return refuse(ls, err, "a loop variable's Merge must read one Enter and one NextIteration");
            if (ls->loop_cond && ls->loop_cond != n->inputs[1].node)
                return refuse(ls, err, "its Switches read two different LoopConds");
            ls->loop_cond = n->inputs[1].node;
            loop_var *grown = realloc(ls->vars, sizeof *grown * ((size_t)ls->num_vars + 1));
            if (!grown)
                return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            ls->vars = grown;
            ls->vars[ls->num_vars++] = v;
        }
    }
    if (ls->num_vars == 0)
        return refuse(ls, err, "no loop variable (Enter, Merge, Switch on a LoopCond, NextIteration) was found");
    for (int id = 0; id < fr->num_nodes; id++) {
        tide_node *n = g->nodes[id];
        bool constant = false;
        if (is_op(n, "Exit") && fr->frame_of[id] == ls->frame)
            for (int k = 0; k < ls->num_vars; k++)
                if (n->inputs[0].node == ls->vars[k].sw && n->inputs[0].index == 0 && !ls->vars[k].exit)
                    ls->vars[k].exit = n;
        if (fr->enter_child[id] == ls->frame && tide_attrs_get_bool(n->attrs, "is_constant", &constant) && constant &&
            tide__walk_wants(w, n->inputs[0])) {
            tide_node **grown = realloc(ls->invariants, sizeof *grown * ((size_t)ls->num_invariants + 1));
            if (!grown)
                return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            ls->invariants = grown;
            ls->invariants[ls->num_invariants++] = n;
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- the forward counter */

typedef struct counter {
    tide_node *merge, *body, *exit;
} counter;

/* k = 0, 1, ... in F (its body sees k; its Exit is N), all but the increment, which waits for the
 * pushes (finish_counter). */
static tide_status start_counter(tide_graph *g, grad_loop *gl, const loop_shape *ls, counter *c, tide_error *err)
{
    int parent = gl->fr->f[gl->frame].parent;
    tide_node *zero = int_const(g, gl->fr, 0, gl->anchor, parent, err);
    tide_node *e = zero ? enter_into(g, gl, (tide_output){zero, 0}, false, err) : NULL;
    tide_output pair[2] = {{e, 0}, {e, 0}};
    c->merge = e ? forward_node(g, gl->fr, "Merge", pair, 2, NULL, gl->frame, NULL, err) : NULL;
    tide_output sw_in[2] = {{c->merge, 0}, {ls->loop_cond, 0}};
    tide_node *sw = c->merge ? forward_node(g, gl->fr, "Switch", sw_in, 2, NULL, gl->frame, NULL, err) : NULL;
    c->body = sw ? forward_node(g, gl->fr, "Identity", &(tide_output){sw, 1}, 1, NULL, gl->frame, NULL, err) : NULL;
    c->exit = c->body ? forward_node(g, gl->fr, "Exit", &(tide_output){sw, 0}, 1, NULL, parent, NULL, err) : NULL;
    gl->counter = (tide_output){c->body, 0};
    return c->exit ? TIDE_OK : tide_error_code(err);
}

static tide_status finish_counter(tide_graph *g, grad_loop *gl, counter *c, tide_error *err)
{
    tide_node *one = int_const(g, gl->fr, 1, c->body, gl->frame, err);
    tide_output add_in[2] = {{c->body, 0}, {one, 0}};
    tide_cf_context *saved = g->cf_context;
    g->cf_context = NULL;
    tide_node_builder *b = tide_node_builder_new(g, "Add", NULL);
    tide_node_builder_add_inputs_flat(b, add_in, 2);
    for (int i = 0; i < gl->num_pushes; i++) /* iteration k + 1 starts counting once k's pushes are done */
        tide_node_builder_add_control_input(b, gl->pushes[i]);
    tide_node *add = one ? tide_node_builder_finish(b, err) : (tide_node_builder_free(b), NULL);
    g->cf_context = saved;
    if (!add || tide__grad_frames_note(gl->fr, add, gl->frame, err) != TIDE_OK)
        return tide_error_code(err);
    tide_node *next = forward_node(g, gl->fr, "NextIteration", &(tide_output){add, 0}, 1, NULL, gl->frame, NULL, err);
    return next ? tide_graph_close_loop(g, c->merge, 1, (tide_output){next, 0}, err) : tide_error_code(err);
}

/* ---------------------------------------------------------------- the gradient loop */

typedef struct grad_build {
    walk *w;
    loop_shape *ls;
    grad_loop *gl;
    int num_diff;              /* differentiable variables (B's dv come first after n) */
    int *diff;                 /* their indices in ls->vars */
} grad_build;

static tide_status b_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user;
    (void)n;
    int32_t zero = 0;
    tide_tensor *t = tide_tensor_new_scalar(TIDE_INT32, &zero, err);
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_INT32);
    tide_tensor_release(t);
    tide_node *z = tide_node_builder_finish(b, err);
    tide_node *gt = z ? tide__cf_op(g, "Greater", NULL, (tide_output[]){v[0], {z, 0}}, 2, err) : NULL;
    *pred = (tide_output){gt, 0};
    return gt ? TIDE_OK : tide_error_code(err);
}

static tide_output b_op2(tide_graph *g, const char *op, tide_output a, tide_output c, tide_error *err)
{
    if (!a.node || !c.node)
        return (tide_output){NULL, 0};
    return (tide_output){tide__cf_op(g, op, NULL, (tide_output[]){a, c}, 2, err), 0};
}

/* B's body: k = n - 1; the body's gradient at iteration k; acc += d(invariants). */
static tide_status b_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    grad_build *gb = user;
    loop_shape *ls = gb->ls;
    (void)n;
    int32_t one_v = 1;
    tide_tensor *t = tide_tensor_new_scalar(TIDE_INT32, &one_v, err);
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_INT32);
    tide_tensor_release(t);
    tide_node *one = tide_node_builder_finish(b, err);
    gb->gl->index = b_op2(g, "Sub", v[0], (tide_output){one, 0}, err);
    if (!gb->gl->index.node)
        return tide_error_code(err);
    next[0] = gb->gl->index;
    int nd = gb->num_diff, ni = ls->num_invariants;
    tide_output *ys = calloc((size_t)nd + 1, sizeof *ys), *gys = calloc((size_t)nd + 1, sizeof *gys);
    tide_output *xs = calloc((size_t)(nd + ni) + 1, sizeof *xs), *dxs = calloc((size_t)(nd + ni) + 1, sizeof *dxs);
    tide_status st = ys && gys && xs && dxs ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; st == TIDE_OK && i < nd; i++) {
        const loop_var *lv = &ls->vars[gb->diff[i]];
        ys[i] = lv->next->inputs[0];
        gys[i] = v[1 + i];
        xs[i] = (tide_output){lv->sw, 1};
    }
    for (int j = 0; st == TIDE_OK && j < ni; j++)
        xs[nd + j] = (tide_output){ls->invariants[j], 0};
    if (st == TIDE_OK)
        st = tide__grad_region(ls->fr, ls->frame, ys, nd, gys, xs, nd + ni, dxs, err);
    for (int i = 0; st == TIDE_OK && i < nd; i++) {
        next[1 + i] = dxs[i].node ? dxs[i] : (tide_output){tide__cf_op(g, "ZerosLike", NULL, &v[1 + i], 1, err), 0};
        if (!next[1 + i].node)
            st = tide_error_code(err);
    }
    for (int j = 0; st == TIDE_OK && j < ni; j++) {
        tide_output acc = v[1 + nd + j];
        next[1 + nd + j] = dxs[nd + j].node ? b_op2(g, "Add", acc, dxs[nd + j], err) : acc;
        if (!next[1 + nd + j].node)
            st = tide_error_code(err);
    }
    free(ys);
    free(gys);
    free(xs);
    free(dxs);
    return st;
}

/* The initial values of B's variables: n = N, dv = what reached F's Exits (else zeros), acc = zeros. */
static tide_status b_init(tide_graph *g, grad_build *gb, const counter *c, tide_output *init, tide_shape *inv,
                          tide_error *err)
{
    walk *w = gb->w;
    loop_shape *ls = gb->ls;
    init[0] = (tide_output){c->exit, 0};
    inv[0] = tide_shape_scalar();
    for (int i = 0; i < gb->num_diff; i++) {
        loop_var *lv = &ls->vars[gb->diff[i]];
        if (!lv->exit) /* no Exit: no gradient reaches the end; zeros of the final value */
            lv->exit = forward_node(g, ls->fr, "Exit", &(tide_output){lv->sw, 0}, 1, NULL,
                                    ls->fr->f[ls->frame].parent, NULL, err);
        if (!lv->exit)
            return tide_error_code(err);
        tide_output dy = tide__walk_gradient(w, (tide_output){lv->exit, 0});
        if (tide_error_code(err) != TIDE_OK)
            return tide_error_code(err);
        init[1 + i] = dy.node ? dy : (tide_output){tide__cf_op(g, "ZerosLike", NULL, &(tide_output){lv->exit, 0}, 1, err), 0};
        inv[1 + i] = lv->merge->out_shapes[0];
        if (!init[1 + i].node)
            return tide_error_code(err);
    }
    for (int j = 0; j < ls->num_invariants; j++) {
        tide_output x = ls->invariants[j]->inputs[0];
        tide_node *z = tide__cf_op(g, "ZerosLike", NULL, &x, 1, err);
        if (!z)
            return tide_error_code(err);
        init[1 + gb->num_diff + j] = (tide_output){z, 0};
        inv[1 + gb->num_diff + j] = x.node->out_shapes[x.index];
    }
    return TIDE_OK;
}

static tide_status build_gradient_loop(walk *w, loop_shape *ls, grad_loop *gl, tide_error *err)
{
    tide_graph *g = ls->fr->g;
    grad_build gb = {.w = w, .ls = ls, .gl = gl};
    gb.diff = malloc(sizeof(int) * ((size_t)ls->num_vars + 1));
    if (!gb.diff)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int k = 0; k < ls->num_vars; k++)
        if (ls->vars[k].diff)
            gb.diff[gb.num_diff++] = k;
    int nb = 1 + gb.num_diff + ls->num_invariants;
    tide_output *init = calloc((size_t)nb, sizeof *init), *res = calloc((size_t)nb, sizeof *res);
    tide_shape *inv = calloc((size_t)nb, sizeof *inv);
    counter c = {0};
    tide_status st = init && res && inv ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK)
        st = start_counter(g, gl, ls, &c, err);
    if (st == TIDE_OK)
        st = b_init(g, &gb, &c, init, inv, err);
    char *scope = st == TIDE_OK ? tide__unique_scope(g, "while_grad") : NULL;
    if (st == TIDE_OK && !scope)
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK) {
        tide_while_options o;
        tide_while_options_init(&o);
        o.name = scope;
        o.parallel_iterations = gl->parallel;
        o.shape_invariants = inv;
        st = tide__while_loop(g, b_cond, b_body, &gb, init, nb, &o, res, gl, err);
    }
    if (st == TIDE_OK)
        st = finish_counter(g, gl, &c, err);
    for (int i = 0; st == TIDE_OK && i < gb.num_diff; i++) {
        tide_output x = ls->vars[gb.diff[i]].enter->inputs[0];
        if (tide__walk_wants(w, x))
            st = tide__walk_contribute(w, x, res[1 + i]);
    }
    for (int j = 0; st == TIDE_OK && j < ls->num_invariants; j++)
        st = tide__walk_contribute(w, ls->invariants[j]->inputs[0], res[1 + gb.num_diff + j]);
    free(scope);
    free(init);
    free(res);
    free(inv);
    free(gb.diff);
    return st;
}

tide_status tide__while_grad(walk *w, int frame)
{
    grad_frames *fr = tide__walk_frames(w);
    tide_error *err = tide__walk_error(w);
    loop_shape ls = {.fr = fr, .frame = frame};
    tide_status st = find_structure(w, &ls, err);
    bool flows = false, wanted = ls.num_invariants > 0;
    for (int k = 0; st == TIDE_OK && k < ls.num_vars; k++) {
        if (ls.vars[k].exit) {
            flows |= tide__walk_gradient(w, (tide_output){ls.vars[k].exit, 0}).node != NULL;
            st = tide_error_code(err);
        }
        wanted |= ls.vars[k].diff && tide__walk_wants(w, ls.vars[k].enter->inputs[0]);
    }
    if (st == TIDE_OK && flows && wanted) {
        grad_loop gl = {.fr = fr, .frame = frame, .parallel = 10, .anchor = ls.vars[0].enter->inputs[0].node};
        int64_t p = 10;
        tide_attrs_get_int(ls.vars[0].enter->attrs, "parallel_iterations", &p);
        gl.parallel = p < 1 ? 1 : p > 1024 ? 1024 : (int)p;
        st = build_gradient_loop(w, &ls, &gl, err);
        free(gl.pushes);
    }
    free(ls.vars);
    free(ls.invariants);
    return st;
}
