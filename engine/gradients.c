/* gradients.c — symbolic differentiation: tide_gradients extends a graph backwards from ys to xs
 * (white paper §4.1), calling the gradient function registered for each op on the way; also the
 * registry of gradient functions and the context those functions build in (tide_op.h).
 *
 * How tide_gradients works:
 *  1. Nodes reachable FORWARD from xs (along data edges of float or complex dtype, not through
 *     StopGradient or ops declared not differentiable) and nodes reaching ys BACKWARD are marked;
 *     the nodes in both sets are "on the path": only they get gradient functions called.
 *  2. Every y receives grad_ys[j] (or OnesLike(y)). Nodes on the path are visited in decreasing
 *     creation order — a node's inputs always exist before it, so this is a reverse topological
 *     order — and when a node is visited every consumer has already contributed the gradients of its
 *     outputs; contributions to one tensor are summed (AddN) once, then the node's gradient function
 *     adds the ops of its inputs' gradients.
 *  3. A failure anywhere rolls the graph back to the nodes it had: tide_gradients is atomic.
 * Gradient functions may only add nodes; they build in the scope "gradients[_N]/<node>_grad" and on
 * the forward node's requested device.
 *
 * Control flow (gradients.h): the walk covers one region, the root frame; a while loop in it is one
 * unit whose gradient (grads/while_grad.c) is a loop running the iterations backwards, with a walk of
 * the loop's body as its body. Marks cross a loop's back edge (NextIteration into Merge) until they
 * settle, except the back edges of the region itself. Conds need nothing special: Switch and Merge
 * have gradient functions (grads/control_flow_grad.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gradients.h"

/* ---------------------------------------------------------------- the registry of gradient functions */

typedef struct grad_entry {
    char *op;
    tide_grad_fn fn; /* NULL: declared not differentiable */
} grad_entry;

static grad_entry *grad_table;
static int grad_count, grad_cap;
static const char **grad_names; /* sorted names with a function, built on first request */
static int grad_names_count = -1;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const grad_entry *)a)->op, ((const grad_entry *)b)->op);
}

/* Registration happens from load-time constructors only (single-threaded). */
void tide_gradient_register(const char *op, tide_grad_fn fn)
{
    for (int i = 0; i < grad_count; i++)
        if (strcmp(grad_table[i].op, op) == 0) {
            grad_table[i].fn = fn;
            return;
        }
    if (grad_count == grad_cap) {
        int cap = grad_cap ? grad_cap * 2 : 64;
        grad_entry *t = realloc(grad_table, (size_t)cap * sizeof *t);
        if (!t)
            return;
        grad_table = t;
        grad_cap = cap;
    }
    char *name = strdup(op);
    if (!name)
        return;
    grad_table[grad_count++] = (grad_entry){name, fn};
    qsort(grad_table, (size_t)grad_count, sizeof *grad_table, cmp_entry);
    grad_names_count = -1;
}

static const grad_entry *grad_lookup(const char *op)
{
    grad_entry key = {(char *)op, NULL};
    return grad_count ? bsearch(&key, grad_table, (size_t)grad_count, sizeof *grad_table, cmp_entry)
                      : NULL;
}

int tide_registry_gradient_ops(const char *const **names)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (grad_names_count < 0) {
        free(grad_names);
        grad_names = malloc((size_t)(grad_count + 1) * sizeof *grad_names);
        grad_names_count = 0;
        for (int i = 0; grad_names && i < grad_count; i++)
            if (grad_table[i].fn)
                grad_names[grad_names_count++] = grad_table[i].op;
    }
    pthread_mutex_unlock(&lock);
    *names = grad_names;
    return grad_names ? grad_names_count : 0;
}

/* ---------------------------------------------------------------- the context of a gradient function */

struct tide_grad_ctx {
    tide_graph *g;
    tide_node *node;
    const tide_output *dy; /* per output; .node NULL when nothing flows */
    const bool *wants;     /* per input */
    tide_output *dx;       /* per input, filled by the function */
    tide_error *err;       /* the first failure */
    tide_status status;
};

tide_graph *tide_grad_graph(const tide_grad_ctx *ctx) { return ctx->g; }
const tide_node *tide_grad_node(const tide_grad_ctx *ctx) { return ctx->node; }
const tide_attrs *tide_grad_attrs(const tide_grad_ctx *ctx) { return ctx->node->attrs; }
tide_status tide_grad_status(const tide_grad_ctx *ctx) { return ctx->status; }

static bool in_range(const tide_grad_ctx *ctx, int i, int n, const char *what)
{
    if (i >= 0 && i < n)
        return true;
    if (ctx->status == TIDE_OK)
        tide_grad_error((tide_grad_ctx *)ctx, TIDE_INTERNAL, "gradient function asked for %s %d of %d",
                        what, i, n);
    return false;
}

tide_output tide_grad_x(const tide_grad_ctx *ctx, int i)
{
    return in_range(ctx, i, ctx->node->num_inputs, "input") ? ctx->node->inputs[i] : (tide_output){0};
}

tide_output tide_grad_y(const tide_grad_ctx *ctx, int i)
{
    return in_range(ctx, i, ctx->node->num_outputs, "output") ? (tide_output){ctx->node, i}
                                                              : (tide_output){0};
}

tide_output tide_grad_dy(const tide_grad_ctx *ctx, int i)
{
    return in_range(ctx, i, ctx->node->num_outputs, "output") ? ctx->dy[i] : (tide_output){0};
}

tide_output tide_grad_dy_or_zeros(tide_grad_ctx *ctx, int i)
{
    tide_output dy = tide_grad_dy(ctx, i);
    if (dy.node || ctx->status != TIDE_OK)
        return dy;
    return tide_grad_op1(ctx, "ZerosLike", (tide_output){ctx->node, i});
}

bool tide_grad_wants(const tide_grad_ctx *ctx, int i)
{
    return in_range(ctx, i, ctx->node->num_inputs, "input") && ctx->wants[i];
}

void tide_grad_set_dx(tide_grad_ctx *ctx, int i, tide_output dx)
{
    if (in_range(ctx, i, ctx->node->num_inputs, "input"))
        ctx->dx[i] = dx;
}

tide_status tide_grad_error(tide_grad_ctx *ctx, tide_status code, const char *fmt, ...)
{
    if (ctx->status != TIDE_OK)
        return ctx->status; /* keep the first failure */
    va_list ap;
    va_start(ap, fmt);
    tide__error_vset(ctx->err, code, fmt, ap);
    va_end(ap);
    tide__error_prefix(ctx->err, "gradient of node '%s' (%s)", ctx->node->name, ctx->node->op->name);
    ctx->status = code;
    return code;
}

tide_node *tide_grad_node_new(tide_grad_ctx *ctx, const char *op, const tide_output *inputs, int n,
                              const tide_attrs *attrs)
{
    if (ctx->status != TIDE_OK)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!inputs[i].node) {
            tide_grad_error(ctx, TIDE_INTERNAL, "input %d of the %s it builds is missing", i, op);
            return NULL;
        }
    tide_node_builder *b = tide_node_builder_new(ctx->g, op, NULL);
    if (!b) {
        tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    tide_node_builder_add_inputs_flat(b, inputs, n);
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    tide_node *node = tide_node_builder_finish(b, ctx->err);
    if (!node) {
        ctx->status = tide_error_code(ctx->err);
        tide__error_prefix(ctx->err, "gradient of node '%s' (%s)", ctx->node->name, ctx->node->op->name);
    }
    return node;
}

tide_output tide_grad_op(tide_grad_ctx *ctx, const char *op, const tide_output *inputs, int n,
                         const tide_attrs *attrs)
{
    return (tide_output){tide_grad_node_new(ctx, op, inputs, n, attrs), 0};
}

tide_output tide_grad_op1(tide_grad_ctx *ctx, const char *op, tide_output a)
{
    return tide_grad_op(ctx, op, &a, 1, NULL);
}

tide_output tide_grad_op2(tide_grad_ctx *ctx, const char *op, tide_output a, tide_output b)
{
    tide_output in[2] = {a, b};
    return tide_grad_op(ctx, op, in, 2, NULL);
}

static tide_output const_of(tide_grad_ctx *ctx, tide_tensor *value)
{
    if (!value) {
        tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return (tide_output){0};
    }
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_tensor(a, "value", value);
    tide_attrs_set_type(a, "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    tide_output out = tide_grad_op(ctx, "Const", NULL, 0, a);
    tide_attrs_free(a);
    return out;
}

tide_output tide_grad_scalar(tide_grad_ctx *ctx, tide_dtype dt, double v)
{
    if (ctx->status != TIDE_OK)
        return (tide_output){0};
    tide_tensor *d = tide_tensor_new_scalar(TIDE_FLOAT64, &v, NULL);
    tide_tensor *t = d ? tide_tensor_cast(d, dt, ctx->err) : NULL;
    tide_tensor_release(d);
    return const_of(ctx, t);
}

tide_output tide_grad_ints(tide_grad_ctx *ctx, const int32_t *v, int n)
{
    if (ctx->status != TIDE_OK)
        return (tide_output){0};
    tide_shape s = tide_shape_vector(n);
    return const_of(ctx, tide_tensor_new_copy(TIDE_INT32, &s, v, (size_t)n * sizeof *v, NULL));
}

/* The axes of the broadcast of x against other that x was stretched along, when the static shapes
 * decide them: the leading axes x lacks, and the axes where x has size 1 and other a known size
 * other than 1. False when they depend on sizes unknown at graph time. */
static bool static_broadcast_axes(const tide_shape *x, const tide_shape *other, int32_t *axes, int *n,
                                  int *out_rank)
{
    if (x->rank < 0 || other->rank < 0)
        return false;
    int rank = x->rank > other->rank ? x->rank : other->rank;
    *n = 0;
    *out_rank = rank;
    for (int i = 0; i < rank; i++) {
        int jx = i - (rank - x->rank), jo = i - (rank - other->rank);
        if (jx < 0) {
            axes[(*n)++] = i;
            continue;
        }
        int64_t dx = x->dims[jx], dother = jo >= 0 ? other->dims[jo] : 1;
        if (dx == 1 && dother != 1) {
            if (dother < 0)
                return false;
            axes[(*n)++] = i;
        } else if (dx < 0 && dother != 1) {
            return false; /* x's unknown size could be 1 */
        }
    }
    return true;
}

tide_output tide_grad_unbroadcast(tide_grad_ctx *ctx, tide_output g, tide_output x, tide_output other)
{
    if (ctx->status != TIDE_OK || !g.node || !x.node || !other.node) {
        if (ctx->status == TIDE_OK)
            tide_grad_error(ctx, TIDE_INTERNAL, "unbroadcast of a missing tensor");
        return (tide_output){0};
    }
    tide_shape sx = tide_node_output_shape(x.node, x.index);
    tide_shape so = tide_node_output_shape(other.node, other.index);
    int32_t axes[TIDE_MAX_RANK];
    int n, out_rank;
    if (static_broadcast_axes(&sx, &so, axes, &n, &out_rank)) {
        if (n == 0)
            return g;
        tide_attrs *keep = tide_attrs_new();
        tide_attrs_set_bool(keep, "keep_dims", false);
        tide_output in[2] = {g, tide_grad_ints(ctx, axes, n)};
        tide_output sum = tide_grad_op(ctx, "Sum", in, 2, keep);
        tide_attrs_free(keep);
        if (sum.node && out_rank - n == sx.rank)
            return sum; /* only leading axes were summed: already x's shape */
        if (tide_shape_is_fully_defined(&sx)) {
            int32_t dims[TIDE_MAX_RANK];
            for (int i = 0; i < sx.rank; i++)
                dims[i] = (int32_t)sx.dims[i];
            return tide_grad_op2(ctx, "Reshape", sum, tide_grad_ints(ctx, dims, sx.rank));
        }
        return tide_grad_op2(ctx, "Reshape", sum, tide_grad_op1(ctx, "Shape", x));
    }
    tide_output shape_x = tide_grad_op1(ctx, "Shape", x);
    tide_output shape_o = tide_grad_op1(ctx, "Shape", other);
    tide_node *args = tide_grad_node_new(ctx, "BroadcastGradientArgs", (tide_output[]){shape_x, shape_o},
                                         2, NULL);
    tide_output in[2] = {g, {args, 0}};
    tide_output sum = tide_grad_op(ctx, "Sum", in, 2, NULL);
    return tide_grad_op2(ctx, "Reshape", sum, shape_x);
}

/* ---------------------------------------------------------------- tide_gradients */

static bool differentiable_dtype(tide_dtype dt)
{
    return tide_dtype_is_float(dt) || tide_dtype_is_complex(dt);
}

/* Gradients arriving at one tensor, to be summed. */
typedef struct contributions {
    tide_output *items;
    int count, cap;
    tide_output sum; /* built once, when first needed */
} contributions;

struct walk {
    tide_graph *g;
    grad_frames *fr;
    int region;             /* the frame walked */
    int num_nodes;          /* the forward graph's size (fr->num_nodes) */
    bool *forward;          /* reachable from xs */
    bool *backward;         /* reaches ys */
    contributions **grads;  /* per node: one per output, allocated on demand */
    const tide_output *xs;
    int num_xs;
    tide_error *err;
};

static bool on_path(const walk *w, const tide_node *n)
{
    return n->id < w->num_nodes && w->forward[n->id] && w->backward[n->id];
}

/* Does gradient flow out of node n at all (registered and not declared non-differentiable)? */
static bool blocks_gradient(const tide_node *n)
{
    const grad_entry *e = grad_lookup(n->op->name);
    return e && !e->fn;
}

static bool is_x(const tide_output *xs, int num_xs, tide_output t)
{
    for (int i = 0; i < num_xs; i++)
        if (xs[i].node == t.node && xs[i].index == t.index)
            return true;
    return false;
}

static bool is_op(const tide_node *n, const char *op)
{
    return (n->op->flags & TIDE_OP_CONTROL_FLOW) && strcmp(n->op->name, op) == 0;
}

/* Marks until nothing changes: loops' back edges point to later nodes, so one pass is not enough.
 * The region's own back edges are not followed (a body's walk ends at its NextIterations). */
static void mark_forward(walk *w)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (int id = 0; id < w->num_nodes; id++) {
            const tide_node *n = w->g->nodes[id];
            if (w->forward[id] || blocks_gradient(n) ||
                (is_op(n, "NextIteration") && w->fr->frame_of[id] == w->region))
                continue;
            for (int i = 0; i < n->num_inputs && !w->forward[id]; i++) {
                tide_output in = n->inputs[i];
                if (!differentiable_dtype(in.node->out_dtypes[in.index]))
                    continue;
                if (is_x(w->xs, w->num_xs, in) || (in.node->id < w->num_nodes && w->forward[in.node->id]))
                    changed = w->forward[id] = true;
            }
        }
    }
}

static void mark_backward(walk *w, const tide_output *ys, int num_ys)
{
    for (int j = 0; j < num_ys; j++)
        if (ys[j].node->id < w->num_nodes)
            w->backward[ys[j].node->id] = true;
    for (bool changed = true; changed;) {
        changed = false;
        for (int id = w->num_nodes - 1; id >= 0; id--) {
            const tide_node *n = w->g->nodes[id];
            if (!w->backward[id])
                continue;
            for (int i = 0; i < n->num_inputs; i++) {
                int src = n->inputs[i].node->id;
                if (src < w->num_nodes && !w->backward[src]) {
                    w->backward[src] = true;
                    changed |= src > id; /* a back edge: another pass */
                }
            }
        }
    }
}

static tide_status add_contribution(walk *w, tide_output to, tide_output grad)
{
    contributions **slot = &w->grads[to.node->id];
    if (!*slot && !(*slot = calloc((size_t)to.node->num_outputs, sizeof **slot)))
        return tide_error_set(w->err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
    contributions *c = &(*slot)[to.index];
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 2;
        tide_output *items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items)
            return tide_error_set(w->err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
        c->items = items;
        c->cap = cap;
    }
    c->items[c->count++] = grad;
    return TIDE_OK;
}

/* The summed gradient of tensor t (.node NULL when none arrived), built under the current scope. */
static tide_output summed_gradient(walk *w, tide_output t)
{
    contributions *all = w->grads[t.node->id];
    if (!all || all[t.index].count == 0)
        return (tide_output){0};
    contributions *c = &all[t.index];
    if (c->sum.node)
        return c->sum;
    if (c->count == 1)
        return c->sum = c->items[0];
    tide_node_builder *b = tide_node_builder_new(w->g, "AddN", NULL);
    if (!b)
        return (tide_output){0};
    tide_node_builder_add_input_list(b, c->items, c->count);
    tide_node *sum = tide_node_builder_finish(b, w->err);
    if (!sum)
        tide__error_prefix(w->err, "gradients: summing the %d gradients of '%s:%d'", c->count,
                           t.node->name, t.index);
    return c->sum = (tide_output){sum, 0};
}

/* A scope name no node uses yet: "gradients", "gradients_1", ... (under the current scope). */
static char *fresh_scope(tide_graph *g)
{
    char *prefix = tide__graph_scope_prefix(g);
    if (!prefix)
        return NULL;
    for (int k = 0;; k++) {
        char *name = k ? tide__asprintf("gradients_%d", k) : strdup("gradients");
        char *full = name ? tide__asprintf("%s%s", prefix, name) : NULL;
        if (!full) {
            free(name);
            free(prefix);
            return NULL;
        }
        size_t len = strlen(full);
        bool used = false;
        for (int i = 0; i < g->num_nodes && !used; i++)
            used = strncmp(g->nodes[i]->name, full, len) == 0 &&
                   (g->nodes[i]->name[len] == 0 || g->nodes[i]->name[len] == '/');
        free(full);
        if (!used) {
            free(prefix);
            return name;
        }
        free(name);
    }
}

static tide_status check_tensor(const tide_graph *g, tide_output t, const char *what, int i,
                                tide_error *err)
{
    if (!t.node || t.node->graph != g)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: %s[%d] is %s", what, i,
                              t.node ? "a node of another graph" : "NULL");
    if (t.index < 0 || t.index >= t.node->num_outputs)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: %s[%d] names output %d of '%s', "
                              "which has %d", what, i, t.index, t.node->name, t.node->num_outputs);
    tide_dtype dt = t.node->out_dtypes[t.index];
    if (!differentiable_dtype(dt))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: %s[%d] '%s:%d' has dtype %s; "
                              "only float and complex tensors have gradients", what, i, t.node->name,
                              t.index, tide_dtype_name(dt));
    return TIDE_OK;
}

/* Calls the gradient function of node n (on the path) and records what it gives its inputs. */
static tide_status backprop_node(walk *w, tide_node *n)
{
    tide_output dy[n->num_outputs > 0 ? n->num_outputs : 1];
    bool any = false;
    for (int k = 0; k < n->num_outputs; k++) {
        dy[k] = summed_gradient(w, (tide_output){n, k});
        if (tide_error_code(w->err) != TIDE_OK)
            return tide_error_code(w->err);
        any |= dy[k].node != NULL;
    }
    if (!any)
        return TIDE_OK; /* nothing flows back through n (e.g. a consumer that passes no gradient) */
    const grad_entry *e = grad_lookup(n->op->name);
    if (!e)
        return tide_error_set(w->err, TIDE_INVALID_ARGUMENT, "gradients: no gradient is registered "
                              "for op %s (node '%s'), which lies on a path from xs to ys; wrap the "
                              "input in StopGradient if no gradient should flow", n->op->name, n->name);
    if (!e->fn)
        return TIDE_OK;
    bool wants[n->num_inputs > 0 ? n->num_inputs : 1];
    tide_output dx[n->num_inputs > 0 ? n->num_inputs : 1];
    for (int i = 0; i < n->num_inputs; i++) {
        tide_output in = n->inputs[i];
        wants[i] = differentiable_dtype(in.node->out_dtypes[in.index]) &&
                   ((in.node->id < w->num_nodes && on_path(w, in.node)) || is_x(w->xs, w->num_xs, in));
        dx[i] = (tide_output){0};
    }
    tide_grad_ctx ctx = {.g = w->g, .node = n, .dy = dy, .wants = wants, .dx = dx, .err = w->err};
    char *scope = tide__asprintf("%s_grad", n->name);
    if (!scope)
        return tide_error_set(w->err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
    tide_graph_push_scope(w->g, scope);
    if (n->requested_device[0])
        tide_graph_push_device(w->g, n->requested_device);
    tide_status st = e->fn(&ctx);
    if (st == TIDE_OK)
        st = ctx.status;
    if (st != TIDE_OK && tide_error_code(w->err) == TIDE_OK)
        tide_error_set(w->err, st, "gradient of node '%s' (%s) failed", n->name, n->op->name);
    if (n->requested_device[0])
        tide_graph_pop_device(w->g);
    tide_graph_pop_scope(w->g);
    free(scope);
    for (int i = 0; st == TIDE_OK && i < n->num_inputs; i++) {
        if (!wants[i] || !dx[i].node)
            continue;
        tide_output in = n->inputs[i];
        tide_dtype want = in.node->out_dtypes[in.index], got = dx[i].node->out_dtypes[dx[i].index];
        tide_shape ws = in.node->out_shapes[in.index], gs = dx[i].node->out_shapes[dx[i].index];
        if (want != got || (tide_shape_is_fully_defined(&ws) && tide_shape_is_fully_defined(&gs) &&
                            !tide_shape_equal(&ws, &gs))) {
            char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
            return tide_error_set(w->err, TIDE_INTERNAL, "gradients: the gradient function of %s (node "
                                  "'%s') gave input %d a %s %s gradient for a %s %s input", n->op->name,
                                  n->name, i, tide_dtype_name(got), tide_shape_format(&gs, b, sizeof b),
                                  tide_dtype_name(want), tide_shape_format(&ws, a, sizeof a));
        }
        st = add_contribution(w, in, dx[i]);
    }
    return st;
}

static tide_status seed_ys(walk *w, const tide_output *ys, int num_ys, const tide_output *grad_ys)
{
    for (int j = 0; j < num_ys; j++) {
        tide_output seed;
        if (grad_ys && grad_ys[j].node) {
            seed = grad_ys[j];
        } else {
            tide_node_builder *b = tide_node_builder_new(w->g, "OnesLike", NULL);
            if (!b)
                return tide_error_set(w->err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
            tide_node_builder_add_input(b, ys[j]);
            seed = (tide_output){tide_node_builder_finish(b, w->err), 0};
            if (!seed.node)
                return tide_error_code(w->err);
        }
        tide_status st = add_contribution(w, ys[j], seed);
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

static tide_status check_arguments(tide_graph *g, const tide_output *ys, int num_ys, const tide_output *xs,
                                   int num_xs, const tide_output *grad_ys, tide_error *err)
{
    if (!g || (num_ys > 0 && !ys) || (num_xs > 0 && !xs) || num_ys < 0 || num_xs < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: NULL graph, ys or xs");
    for (int j = 0; j < num_ys; j++) {
        tide_status st = check_tensor(g, ys[j], "ys", j, err);
        if (st != TIDE_OK)
            return st;
        if (grad_ys && grad_ys[j].node) {
            if ((st = check_tensor(g, grad_ys[j], "grad_ys", j, err)) != TIDE_OK)
                return st;
            tide_dtype a = ys[j].node->out_dtypes[ys[j].index];
            tide_dtype b = grad_ys[j].node->out_dtypes[grad_ys[j].index];
            if (a != b)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: grad_ys[%d] has dtype %s "
                                      "but ys[%d] is %s", j, tide_dtype_name(b), j, tide_dtype_name(a));
        }
    }
    for (int i = 0; i < num_xs; i++) {
        tide_status st = check_tensor(g, xs[i], "xs", i, err);
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

static void walk_free(walk *w)
{
    for (int id = 0; w->grads && id < w->num_nodes; id++) {
        if (!w->grads[id])
            continue;
        for (int k = 0; k < w->g->nodes[id]->num_outputs; k++)
            free(w->grads[id][k].items);
        free(w->grads[id]);
    }
    free(w->grads);
    free(w->forward);
    free(w->backward);
}

/* ---------------------------------------------------------------- frames of the forward graph */

int tide__grad_frame_of(const grad_frames *fr, const tide_node *n)
{
    return n->id < fr->cap_nodes ? fr->frame_of[n->id] : -1;
}

tide_status tide__grad_frames_note(grad_frames *fr, const tide_node *n, int f, tide_error *err)
{
    if (n->id >= fr->cap_nodes) {
        int cap = fr->cap_nodes * 2 > n->id + 1 ? fr->cap_nodes * 2 : n->id + 64;
        int *grown = realloc(fr->frame_of, sizeof *grown * (size_t)cap);
        if (!grown)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
        for (int i = fr->cap_nodes; i < cap; i++)
            grown[i] = -1;
        fr->frame_of = grown;
        fr->cap_nodes = cap;
    }
    fr->frame_of[n->id] = f;
    return TIDE_OK;
}

/* The frame the outputs of forward node id land in. */
static int landing(const grad_frames *fr, int id)
{
    if (fr->enter_child[id] >= 0)
        return fr->enter_child[id];
    int f = fr->frame_of[id];
    return is_op(fr->g->nodes[id], "Exit") && f > 0 ? fr->f[f].parent : f;
}

static int child_frame(grad_frames *fr, int parent, const char *name)
{
    for (int f = 1; f < fr->num; f++)
        if (fr->f[f].parent == parent && strcmp(fr->f[f].name, name) == 0)
            return f;
    grad_frame *grown = realloc(fr->f, sizeof *grown * ((size_t)fr->num + 1));
    if (!grown)
        return -1;
    fr->f = grown;
    fr->f[fr->num] = (grad_frame){tide__strdup(name), parent, -1};
    return fr->f[fr->num].name ? fr->num++ : -1;
}

/* Every forward node's frame, in creation order (inputs come first but for loops' back edges). */
static tide_status frames_build(grad_frames *fr, tide_graph *g, tide_error *err)
{
    fr->g = g;
    fr->num_nodes = fr->cap_nodes = g->num_nodes;
    fr->frame_of = malloc(sizeof(int) * ((size_t)g->num_nodes + 1));
    fr->enter_child = malloc(sizeof(int) * ((size_t)g->num_nodes + 1));
    fr->f = calloc(1, sizeof *fr->f);
    if (!fr->frame_of || !fr->enter_child || !fr->f || !(fr->f[0].name = tide__strdup("")))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
    fr->f[0] = (grad_frame){fr->f[0].name, -1, -1};
    fr->num = 1;
    for (int id = 0; id < g->num_nodes; id++) {
        const tide_node *n = g->nodes[id];
        int f = -1;
        for (int i = 0; i < n->num_inputs + n->num_control && f < 0; i++) {
            const tide_node *src = i < n->num_inputs ? n->inputs[i].node : n->control[i - n->num_inputs];
            if (src->id < id) /* a later one is a loop's back edge: same frame anyway */
                f = landing(fr, src->id);
        }
        fr->frame_of[id] = f < 0 ? 0 : f;
        fr->enter_child[id] = -1;
        if (is_op(n, "Enter")) {
            const char *name = "";
            tide_attrs_get_string(n->attrs, "frame_name", &name);
            if ((fr->enter_child[id] = child_frame(fr, fr->frame_of[id], name)) < 0)
                return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
        } else if (is_op(n, "Exit") && fr->frame_of[id] > 0 && fr->f[fr->frame_of[id]].lowest_exit < 0) {
            fr->f[fr->frame_of[id]].lowest_exit = id;
        }
    }
    return TIDE_OK;
}

static void frames_free(grad_frames *fr)
{
    for (int f = 0; fr->f && f < fr->num; f++)
        free(fr->f[f].name);
    free(fr->f);
    free(fr->frame_of);
    free(fr->enter_child);
}

/* ---------------------------------------------------------------- a region's walk */

grad_frames *tide__walk_frames(walk *w) { return w->fr; }
tide_error *tide__walk_error(walk *w) { return w->err; }
tide_output tide__walk_gradient(walk *w, tide_output t) { return summed_gradient(w, t); }
tide_status tide__walk_contribute(walk *w, tide_output t, tide_output grad) { return add_contribution(w, t, grad); }

bool tide__walk_wants(const walk *w, tide_output t)
{
    return t.node->id < w->num_nodes && differentiable_dtype(t.node->out_dtypes[t.index]) &&
           (on_path(w, t.node) || is_x(w->xs, w->num_xs, t));
}

static tide_status walk_init(walk *w, grad_frames *fr, int region, const tide_output *xs, int num_xs,
                             tide_error *err)
{
    *w = (walk){.g = fr->g, .fr = fr, .region = region, .num_nodes = fr->num_nodes, .xs = xs, .num_xs = num_xs,
                .err = err};
    w->forward = calloc((size_t)w->num_nodes + 1, sizeof *w->forward);
    w->backward = calloc((size_t)w->num_nodes + 1, sizeof *w->backward);
    w->grads = calloc((size_t)w->num_nodes + 1, sizeof *w->grads);
    if (!w->forward || !w->backward || !w->grads)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
    return TIDE_OK;
}

/* Visits the region's nodes in decreasing creation order; a loop of the region is one unit, taken when
 * the walk reaches its lowest Exit, and its Enters are its own. */
static tide_status walk_region(walk *w)
{
    tide_status st = TIDE_OK;
    for (int id = w->num_nodes - 1; st == TIDE_OK && id >= 0; id--) {
        int f = w->fr->frame_of[id];
        if (f == w->region) {
            if (w->fr->enter_child[id] < 0 && on_path(w, w->g->nodes[id]))
                st = backprop_node(w, w->g->nodes[id]);
        } else if (f > 0 && w->fr->f[f].parent == w->region && w->fr->f[f].lowest_exit == id) {
            st = tide__while_grad(w, f);
        }
    }
    return st;
}

/* The walk of `region` from ys (seeded with grad_ys, or ones) to xs; dxs[i] receives xs[i]'s summed
 * gradient. */
static tide_status backprop(grad_frames *fr, int region, const tide_output *ys, int num_ys, const tide_output *grad_ys,
                            const tide_output *xs, int num_xs, tide_output *dxs, tide_error *err)
{
    walk w;
    tide_status st = walk_init(&w, fr, region, xs, num_xs, err);
    if (st == TIDE_OK) {
        mark_forward(&w);
        mark_backward(&w, ys, num_ys);
        st = seed_ys(&w, ys, num_ys, grad_ys);
    }
    if (st == TIDE_OK)
        st = walk_region(&w);
    for (int i = 0; st == TIDE_OK && i < num_xs; i++) {
        dxs[i] = summed_gradient(&w, xs[i]);
        st = tide_error_code(err);
    }
    walk_free(&w);
    return st;
}

tide_status tide__grad_region(grad_frames *fr, int region, const tide_output *ys, int num_ys,
                              const tide_output *grad_ys, const tide_output *xs, int num_xs, tide_output *dxs,
                              tide_error *err)
{
    return backprop(fr, region, ys, num_ys, grad_ys, xs, num_xs, dxs, err);
}

/* ys and xs must be values of the root frame (a loop's result, not a value inside it). */
static tide_status check_frames(const grad_frames *fr, const tide_output *t, int n, const char *what, tide_error *err)
{
    for (int i = 0; i < n; i++) {
        int f = landing(fr, t[i].node->id);
        if (f != 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: %s[%d] '%s' is computed inside the loop "
                                  "frame '%s': take gradients of a loop's results (its Exits) and with respect to "
                                  "values outside it", what, i, t[i].node->name, fr->f[f].name);
    }
    return TIDE_OK;
}

tide_status tide_gradients(tide_graph *g, const tide_output *ys, int num_ys, const tide_output *xs,
                           int num_xs, const tide_output *grad_ys, tide_output *dxs, tide_error *err)
{
    tide_status st = check_arguments(g, ys, num_ys, xs, num_xs, grad_ys, err);
    if (st != TIDE_OK)
        return st;
    if (num_xs > 0 && !dxs)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "gradients: dxs is NULL");
    tide_error *own = err ? NULL : tide_error_new();
    tide_error *e = err ? err : own;
    if (!e)
        return TIDE_RESOURCE_EXHAUSTED;
    tide_error_clear(e);
    int num_nodes = g->num_nodes;
    grad_frames fr = {0};
    st = frames_build(&fr, g, e);
    if (st == TIDE_OK)
        st = check_frames(&fr, ys, num_ys, "ys", e);
    if (st == TIDE_OK)
        st = check_frames(&fr, xs, num_xs, "xs", e);
    char *scope = st == TIDE_OK ? fresh_scope(g) : NULL;
    if (st == TIDE_OK && !scope)
        st = tide_error_set(e, TIDE_RESOURCE_EXHAUSTED, "gradients: out of memory");
    if (st == TIDE_OK) {
        graph_mark mark = tide__graph_mark(g);
        tide_graph_push_scope(g, scope);
        st = backprop(&fr, 0, ys, num_ys, grad_ys, xs, num_xs, dxs, e);
        if (st == TIDE_OK)
            tide_graph_pop_scope(g);
        else
            tide__graph_restore(g, mark); /* scopes, devices, contexts and every node made */
    }
    if (st != TIDE_OK) {
        tide_graph_rollback(g, num_nodes, NULL);
        for (int i = 0; i < num_xs; i++)
            dxs[i] = (tide_output){0};
    }
    free(scope);
    frames_free(&fr);
    tide_error_free(own);
    return st;
}

static void register_core_gradients(void)
{
    tide_gradient_register("StopGradient", NULL);
    tide_gradient_register("BroadcastGradientArgs", NULL);
}
TIDE_REGISTER(register_core_gradients)
