/* plan.c — turns one Run signature (feeds, fetches, targets) into an executable plan, in passes:
 *   1. check the signature and index the feeds;
 *   2. prune: walk backwards from fetches and targets, stopping at fed outputs;
 *   3. order: Kahn's algorithm over the needed nodes (also proves there is no cycle but loops: the edge
 *      from a NextIteration into its Merge, a loop's back edge, is not followed);
 *   4. place every node on a device (placement.c: requests, colocation groups, soft placement, and the
 *      engine's strategy — greedy over the cost model by default);
 *   5. find and initialise each node's kernel;
 *   5a. frames (plan_frames.c): the loop frame every node runs in, and what the executor does with
 *      control-flow items (Enter, Exit, NextIteration, Merge);
 *   5c. fusion (fusion.c): groups of element-wise nodes on one CPU device become one item each,
 *      which runs the group in one pass over the data (when the session fuses: not when the
 *      debugger watches one of the plan's nodes or keeps values, not in plans with control flow);
 *   5b. partition: every data edge between nodes placed on different devices goes through a _Send
 *      item on the source device and a _Recv item on the destination device, one _Recv per (tensor,
 *      destination device) however many consumers it has. Their nodes are synthetic (made by the
 *      plan, owned by it, not in the graph); the pair meets in the engine's rendezvous under the key
 *      (source device, destination device, "node:index", the run's id, and inside a loop the frame and
 *      iteration). A _Recv of the root frame has no incoming edge: it is a root whose asynchronous
 *      kernel completes when the value arrives; inside a loop the tensor's producer starts it, once per
 *      iteration. Both run with a dead tensor too, which travels as such. Feeds and fetches are
 *      host tensors and belong to no device (no transfer). An input a kernel on an accelerator reads
 *      in host memory (host_inputs.c: an axis, a shape, Dropout's rate) whose producer is on the host
 *      (a feed, a constant placement kept there) is a plain edge: no transfer, no copy. Control edges
 *      between devices stay plain edges: in one process the executor orders them directly (a remote partition will need a token
 *      Send/Recv for them);
 *   6. wire edges, input slots and pending counts, with virtual feed and fetch items;
 *   6a. order each variable's updates after the step's other readers of its value (below);
 *   6b. with transfers: control edges that start each _Recv as late as possible unless it is on the
 *      critical path (ALAP; tide_engine_options.no_alap turns it off; not in plans with loops).
 * Pass 3b merges duplicate stateless nodes (CSE; tide_engine_options.no_cse turns it off).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion.h"
#include "placement.h"

/* One cross-device tensor: the output `output` of item src, needed on device dst. */
typedef struct transfer {
    int src, output;
    tide_device *dst;
    int send, recv;       /* their items */
    int next;             /* the next transfer of the same src item, -1 */
} transfer;

typedef struct builder {
    tide_engine *engine;
    tide_graph *graph;
    const tide_feed *feeds;
    int num_feeds;
    int *node_item;      /* graph node id -> item index, -1 if not needed */
    int *order;          /* needed node ids in topological order */
    int num_needed;
    tide_plan *plan;
    tide_error *err;
    transfer *transfers;
    int num_transfers, cap_transfers;
    int *first_transfer; /* per item: its first transfer, -1 */
    int *canonical;      /* CSE: graph node id -> the node it was merged into (itself when kept), or NULL */
    int num_merged;
} builder;

static int find_feed(const builder *b, const tide_node *n, int index)
{
    for (int i = 0; i < b->num_feeds; i++)
        if (b->feeds[i].output.node == n && b->feeds[i].output.index == index)
            return i;
    return -1;
}

static bool is_fed(void *arg, const tide_node *n, int index)
{
    return find_feed(arg, n, index) >= 0;
}

/* The node whose inputs an item is wired from: a fused group's externals, else its node's. */
static const tide_node *wiring_node(const tide_exec_item *it)
{
    return it->fused ? &it->fused->wiring : it->node;
}

/* A node whose every output is fed does not run: a control edge from it is met at once (TensorFlow
 * moves such edges to the feed). */
static bool fully_fed(const builder *b, const tide_node *n)
{
    if (n->num_outputs == 0)
        return false;
    for (int o = 0; o < n->num_outputs; o++)
        if (find_feed(b, n, o) < 0)
            return false;
    return true;
}

static tide_status check_output(const tide_graph *g, tide_output o, const char *what, int i, tide_error *err)
{
    if (!o.node)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s %d names no node", what, i);
    if (o.node->graph != g || o.node->id >= g->num_nodes || g->nodes[o.node->id] != o.node)
        return tide_error_set(err, TIDE_NOT_FOUND, "%s %d ('%s') is not a node of this session's graph", what, i,
                              o.node->name);
    if (o.index < 0 || o.index >= o.node->num_outputs)
        return tide_error_set(err, TIDE_OUT_OF_RANGE, "%s %d asks for output %d of '%s' (%s), which has %d", what,
                              i, o.index, o.node->name, o.node->op->name, o.node->num_outputs);
    return TIDE_OK;
}

/* Pass 1. */
static tide_status check_signature(builder *b, const tide_output *fetches, int nf, tide_node *const *targets,
                                   int nt)
{
    for (int i = 0; i < b->num_feeds; i++) {
        tide_status st = check_output(b->graph, b->feeds[i].output, "feed", i, b->err);
        if (st != TIDE_OK)
            return st;
        for (int j = 0; j < i; j++)
            if (b->feeds[j].output.node == b->feeds[i].output.node &&
                b->feeds[j].output.index == b->feeds[i].output.index)
                return tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "'%s:%d' is fed twice",
                                      b->feeds[i].output.node->name, b->feeds[i].output.index);
    }
    for (int i = 0; i < nf; i++) {
        tide_status st = check_output(b->graph, fetches[i], "fetch", i, b->err);
        if (st != TIDE_OK)
            return st;
    }
    for (int i = 0; i < nt; i++) {
        tide_status st = check_output(b->graph, (tide_output){targets[i], 0}, "target", i, b->err);
        if (st != TIDE_OK && !(targets[i] && targets[i]->num_outputs == 0 && st == TIDE_OUT_OF_RANGE))
            return st;
        tide_error_clear(b->err);
    }
    return TIDE_OK;
}

/* Pass 2: marks needed nodes (node_item[id] = 0 for "needed", -1 otherwise). */
static tide_status prune(builder *b, const tide_output *fetches, int nf, tide_node *const *targets, int nt)
{
    int n = b->graph->num_nodes;
    int *stack = malloc(sizeof(int) * ((size_t)n + 1));
    if (!stack)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int top = 0;
    for (int i = 0; i < nf; i++)
        if (find_feed(b, fetches[i].node, fetches[i].index) < 0 && b->node_item[fetches[i].node->id] < 0) {
            b->node_item[fetches[i].node->id] = 0;
            stack[top++] = fetches[i].node->id;
        }
    for (int i = 0; i < nt; i++)
        if (b->node_item[targets[i]->id] < 0) {
            b->node_item[targets[i]->id] = 0;
            stack[top++] = targets[i]->id;
        }
    while (top > 0) {
        const tide_node *node = b->graph->nodes[stack[--top]];
        for (int i = 0; i < node->num_inputs + node->num_control; i++) {
            const tide_node *src;
            if (i < node->num_inputs) {
                tide_output in = node->inputs[i];
                if (find_feed(b, in.node, in.index) >= 0 || tide__input_is_ref(node, i))
                    continue;
                src = in.node;
            } else {
                src = node->control[i - node->num_inputs];
                if (fully_fed(b, src))
                    continue;
            }
            if (b->node_item[src->id] < 0) {
                b->node_item[src->id] = 0;
                stack[top++] = src->id;
            }
        }
    }
    free(stack);
    return TIDE_OK;
}

/* Whether the edge from src into a node is a loop's back edge (a NextIteration's output), which the
 * order does not follow: the only cycles a plan may have close through one (plan_frames.c). */
static bool back_edge(const tide_node *src)
{
    return (src->op->flags & TIDE_OP_CONTROL_FLOW) && strcmp(src->op->name, "NextIteration") == 0;
}

/* Pass 3: topological order of the needed nodes. */
static tide_status order_nodes(builder *b)
{
    int n = b->graph->num_nodes;
    int *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int *succ_count = calloc((size_t)n + 1, sizeof *succ_count);
    b->order = malloc(sizeof(int) * ((size_t)n + 1));
    if (!indeg || !succ_count || !b->order) {
        free(indeg);
        free(succ_count);
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    /* Build successor lists restricted to needed nodes (CSR). */
    for (int id = 0; id < n; id++) {
        const tide_node *node = b->graph->nodes[id];
        if (b->node_item[id] < 0)
            continue;
        for (int i = 0; i < node->num_inputs + node->num_control; i++) {
            const tide_node *src = i < node->num_inputs ? node->inputs[i].node : node->control[i - node->num_inputs];
            if ((i < node->num_inputs ? find_feed(b, src, node->inputs[i].index) >= 0 || tide__input_is_ref(node, i)
                                      : fully_fed(b, src)) || back_edge(src))
                continue;
            indeg[id]++;
            succ_count[src->id]++;
        }
    }
    int *start = malloc(sizeof(int) * ((size_t)n + 2));
    int total = 0;
    for (int id = 0; id < n && start; id++) {
        start[id] = total;
        total += succ_count[id];
    }
    int *succ = malloc(sizeof(int) * ((size_t)total + 1));
    tide_status st = TIDE_OK;
    if (!start || !succ) {
        st = tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        start[n] = total;
        memset(succ_count, 0, sizeof(int) * (size_t)n);
        for (int id = 0; id < n; id++) {
            const tide_node *node = b->graph->nodes[id];
            if (b->node_item[id] < 0)
                continue;
            for (int i = 0; i < node->num_inputs + node->num_control; i++) {
                const tide_node *src = i < node->num_inputs ? node->inputs[i].node : node->control[i - node->num_inputs];
                if ((i < node->num_inputs ? find_feed(b, src, node->inputs[i].index) >= 0 || tide__input_is_ref(node, i)
                                          : fully_fed(b, src)) || back_edge(src))
                    continue;
                succ[start[src->id] + succ_count[src->id]++] = id;
            }
        }
        int head = 0, tail = 0, needed = 0;
        for (int id = 0; id < n; id++)
            if (b->node_item[id] >= 0) {
                needed++;
                if (indeg[id] == 0)
                    b->order[tail++] = id;
            }
        while (head < tail) {
            int id = b->order[head++];
            for (int k = start[id]; k < start[id + 1]; k++)
                if (--indeg[succ[k]] == 0)
                    b->order[tail++] = succ[k];
        }
        if (tail != needed) {
            const char *on = "?";
            for (int id = 0; id < n; id++)
                if (b->node_item[id] >= 0 && indeg[id] > 0) {
                    on = b->graph->nodes[id]->name;
                    break;
                }
            st = tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "the graph has a cycle through node '%s' (only a "
                                "loop may close a cycle, through a NextIteration into a Merge)", on);
        }
        b->num_needed = tail;
        for (int k = 0; k < tail; k++)
            b->node_item[b->order[k]] = k; /* items in topological order */
    }
    free(indeg);
    free(succ_count);
    free(start);
    free(succ);
    return st;
}

/* ---------------------------------------------------------------- pass 3b: merging duplicates */

/* Whether node may be merged with a twin: stateless, not fed, no Ref input, not an identity-bearing
 * source (a Placeholder is a distinct input even when its attrs match another's), not internal. */
static bool mergeable(const builder *b, const tide_node *n)
{
    if ((n->op->flags & (TIDE_OP_STATEFUL | TIDE_OP_CONTROL_FLOW)) || n->op->name[0] == '_' || n->num_outputs == 0 ||
        strncmp(n->op->name, "Placeholder", 11) == 0)
        return false;
    for (int o = 0; o < n->num_outputs; o++)
        if (find_feed(b, n, o) >= 0)
            return false;
    for (int i = 0; i < n->num_inputs; i++)
        if (tide__input_is_ref(n, i))
            return false;
    return true;
}

/* The part of a node's identity that fits a hash key: op, device request, inputs and control inputs
 * (by their canonical nodes). Attrs are compared separately. malloc'd. */
static char *merge_key(const builder *b, const tide_node *n)
{
    size_t cap = 64 + strlen(n->op->name) + strlen(n->requested_device ? n->requested_device : "") +
                 24 * (size_t)(n->num_inputs + n->num_control);
    char *key = malloc(cap);
    if (!key)
        return NULL;
    size_t at = (size_t)snprintf(key, cap, "%s|%s|", n->op->name, n->requested_device ? n->requested_device : "");
    for (int i = 0; i < n->num_inputs; i++)
        at += (size_t)snprintf(key + at, cap - at, "%d:%d,", b->canonical[n->inputs[i].node->id], n->inputs[i].index);
    /* control inputs as a set: sorted canonical ids */
    int *c = malloc(sizeof(int) * ((size_t)n->num_control + 1));
    if (!c) {
        free(key);
        return NULL;
    }
    for (int i = 0; i < n->num_control; i++)
        c[i] = b->canonical[n->control[i]->id];
    for (int i = 1; i < n->num_control; i++)
        for (int j = i; j > 0 && c[j - 1] > c[j]; j--) {
            int t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    for (int i = 0; i < n->num_control; i++)
        if (i == 0 || c[i] != c[i - 1])
            at += (size_t)snprintf(key + at, cap - at, "^%d", c[i]);
    free(c);
    return key;
}

/* Pass 3b (white paper §5.1): a needed stateless node with the same op, attrs, device request and
 * (canonical) inputs as an earlier one is merged into it. Walking in topological order makes merging
 * transitive (twins of twins' consumers merge too). Merged nodes leave the order; node_item of a merged
 * node is set to its canonical node's item after renumbering, so every later pass reads an edge from a
 * merged node as an edge from its twin. */
static tide_status merge_duplicates(builder *b)
{
    int n = b->graph->num_nodes;
    b->canonical = malloc(sizeof(int) * ((size_t)n + 1));
    int *first = malloc(sizeof(int) * ((size_t)b->num_needed + 1)); /* per key slot: chain of candidates */
    int *next = malloc(sizeof(int) * ((size_t)n + 1));
    char **keys = calloc((size_t)b->num_needed + 1, sizeof *keys);
    tide_name_table *table = tide__names_new();
    tide_status st = b->canonical && first && next && keys && table
                         ? TIDE_OK : tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int id = 0; st == TIDE_OK && id < n; id++)
        b->canonical[id] = id;
    int num_keys = 0, kept = 0;
    for (int k = 0; st == TIDE_OK && k < b->num_needed; k++) {
        int id = b->order[k];
        const tide_node *node = b->graph->nodes[id];
        int twin = -1;
        if (mergeable(b, node)) {
            char *key = merge_key(b, node);
            if (!key) {
                st = tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
                break;
            }
            void *slot = tide__names_get(table, key);
            if (slot) {
                int sk = (int)(intptr_t)slot - 1;
                for (int c = first[sk]; c >= 0 && twin < 0; c = next[c])
                    if (tide__attrs_equal(b->graph->nodes[c]->attrs, node->attrs))
                        twin = c;
                if (twin < 0) {
                    next[id] = first[sk];
                    first[sk] = id;
                }
                free(key);
            } else {
                keys[num_keys] = key;
                first[num_keys] = id;
                next[id] = -1;
                tide__names_put(table, key, (void *)(intptr_t)(num_keys + 1));
                num_keys++;
            }
        }
        if (twin >= 0) {
            b->canonical[id] = twin;
            b->num_merged++;
        } else {
            b->order[kept++] = id;
        }
    }
    if (st == TIDE_OK) {
        b->num_needed = kept;
        for (int k = 0; k < kept; k++)
            b->node_item[b->order[k]] = k;
        for (int id = 0; id < n; id++)
            if (b->canonical[id] != id)
                b->node_item[id] = b->node_item[b->canonical[id]];
    }
    for (int i = 0; i < num_keys; i++)
        free(keys[i]);
    free(keys);
    free(first);
    free(next);
    tide__names_free(table);
    return st;
}

/* Pass 5: an item for a node on the device placement chose, with its kernel initialised. */
static tide_status init_node_item(builder *b, tide_exec_item *it, const tide_node *node, tide_device *device)
{
    tide_status st = TIDE_OK;
    it->device = device;
    const tide_kernel_def *k = tide__registry_kernel(node->op, it->device->type, node->attrs);
    if (!k) /* placement only chooses devices with a kernel */
        return tide_error_set(b->err, TIDE_INTERNAL, "node '%s' (%s) was placed on %s, which has no kernel for it",
                              node->name, node->op->name, it->device->name);
    it->kind = ITEM_NODE;
    it->node = node;
    it->num_inputs = node->num_inputs;
    it->expensive = (k->spec.flags & TIDE_KERNEL_EXPENSIVE) != 0;
    it->async = (k->spec.flags & TIDE_KERNEL_ASYNC) != 0 && k->spec.compute_async;
    it->sees_dead = (k->spec.flags & TIDE_KERNEL_SEES_DEAD) != 0;
    tide_kernel_node *kn = &it->kn;
    kn->name = node->name;
    kn->op = node->op;
    kn->node = node;
    kn->attrs = node->attrs;
    kn->kernel = k;
    kn->num_inputs = node->num_inputs;
    kn->num_outputs = node->num_outputs;
    kn->out_dtypes = node->out_dtypes;
    kn->in_dtypes = malloc(sizeof(tide_dtype) * ((size_t)node->num_inputs + 1));
    kn->ref_sources = calloc((size_t)node->num_inputs + 1, sizeof *kn->ref_sources);
    if (!kn->in_dtypes || !kn->ref_sources)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < node->num_inputs; i++)
        kn->in_dtypes[i] = node->inputs[i].node->out_dtypes[node->inputs[i].index];
    for (int a = 0; a < node->op->num_inputs; a++)
        if (node->op->inputs[a].is_ref)
            for (int i = node->arg_start[a]; i < node->arg_start[a + 1]; i++)
                kn->ref_sources[i] = node->inputs[i].node;
    kn->engine = b->engine;
    kn->device = it->device;
    kn->graph_seed = b->graph->seed;
    st = tide__kernel_node_init(kn, b->err);
    if (st == TIDE_OK)
        it->kn.kernel = k;
    else
        kn->kernel = NULL; /* nothing to destroy */
    return st;
}

/* Adds edge e from item src. A Merge counts its inputs by kind: control, or data from its own iteration
 * (or an Enter), or data over the loop's back edge (`back`: the value comes from a NextIteration). */
static tide_status add_edge(builder *b, int src, tide_edge e, bool back)
{
    tide_exec_item *it = &b->plan->items[src], *dst = &b->plan->items[e.dst];
    tide_edge *edges = realloc(it->edges, sizeof *edges * ((size_t)it->num_edges + 1));
    if (!edges)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    e.dst_local = dst->local;
    it->edges = edges;
    it->edges[it->num_edges++] = e;
    dst->initial_pending++;
    if (dst->is_merge)
        *(e.slot < 0 ? &dst->merge_control : back ? &dst->merge_back : &dst->merge_forward) += 1;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- pass 6a: updates after reads */

/* Whether item `to` is reachable from item `from` over the plan's edges and its transfers (a _Send
 * reaches its _Recv through the rendezvous, with no edge). mark/stack: num_items ints each. */
static bool reaches(const builder *b, const int *recv_of_send, int from, int to, int *mark, int stamp, int *stack)
{
    const tide_plan *p = b->plan;
    int top = 0;
    stack[top++] = from;
    mark[from] = stamp;
    while (top > 0) {
        int k = stack[--top];
        if (k == to)
            return true;
        for (int e = 0; e <= p->items[k].num_edges; e++) {
            int next = e < p->items[k].num_edges ? p->items[k].edges[e].dst : recv_of_send[k];
            if (next >= 0 && mark[next] != stamp) {
                mark[next] = stamp;
                stack[top++] = next;
            }
        }
    }
    return false;
}

static bool has_edge(const tide_exec_item *src, int dst)
{
    for (int e = 0; e < src->num_edges; e++)
        if (src->edges[e].dst == dst)
            return true;
    return false;
}

/* An update of a variable (a node with a Ref input: Assign*, Apply*) writes the variable's buffer in
 * place when only the variable holds it, else copies it (copy on write). A reader of the variable's
 * value in the same step that nothing orders against the update (the gradient MatMul through a
 * weight, dh = dy * W', beside W's ApplyGradientDescent) made that choice a race: in place when the
 * reader had run (or been queued on the device's stream) before the update, a copy when it had not
 * yet started. Both give the reader the old value, but the step then differs from run to run in its
 * memory and, for whole-step capture, in whether the update stays at its address (a capture with a
 * copy on write is refused: step_capture.c). So each update waits for every other data consumer of
 * its variable's Variable item that does not itself depend on the update (a control edge; what
 * TensorFlow's gate_gradients=GATE_OP achieves by grouping an op's gradients): the update runs in
 * place whenever the variable's value is read only there. Readers through another node (an Identity
 * of the variable) are not followed: they may still make a copy. Not in plans with control flow
 * (a dead reader would make the update dead). */
static tide_status order_updates_after_reads(builder *b)
{
    tide_plan *p = b->plan;
    if (p->control_flow)
        return TIDE_OK;
    int n = p->num_items;
    int *mark = calloc((size_t)n + 1, sizeof *mark), *stack = malloc(sizeof(int) * ((size_t)n + 1));
    int *recv_of_send = malloc(sizeof(int) * ((size_t)n + 1));
    tide_status st = mark && stack && recv_of_send ? TIDE_OK : tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int k = 0; st == TIDE_OK && k < n; k++)
        recv_of_send[k] = -1;
    for (int t = 0; st == TIDE_OK && t < b->num_transfers; t++)
        recv_of_send[b->transfers[t].send] = b->transfers[t].recv;
    int stamp = 0;
    for (int u = 0; st == TIDE_OK && u < b->num_needed; u++) {
        const tide_exec_item *update = &p->items[u];
        for (int i = 0; st == TIDE_OK && update->kind == ITEM_NODE && !update->fused && i < update->kn.num_inputs; i++) {
            const tide_node *var = update->kn.ref_sources[i];
            int v = var ? b->node_item[var->id] : -1;
            for (int e = 0; v >= 0 && st == TIDE_OK && e < p->items[v].num_edges; e++) {
                int reader = p->items[v].edges[e].dst;
                if (p->items[v].edges[e].slot < 0 || reader == u || p->items[reader].kind != ITEM_NODE ||
                    has_edge(&p->items[reader], u) ||
                    reaches(b, recv_of_send, u, reader, mark, ++stamp, stack))
                    continue;
                st = add_edge(b, reader, (tide_edge){u, -1, -1, 0}, false);
            }
        }
    }
    free(mark);
    free(stack);
    free(recv_of_send);
    return st;
}

static int cmp_edges(const void *a, const void *b)
{
    const tide_edge *x = a, *y = b;
    int ox = x->output < 0 ? 1 << 30 : x->output, oy = y->output < 0 ? 1 << 30 : y->output;
    return ox != oy ? (ox < oy ? -1 : 1) : (x->dst - y->dst);
}

/* ---------------------------------------------------------------- pass 5b: partitioning */

static int find_transfer(const builder *b, int src, int output, const tide_device *dst)
{
    if (!b->first_transfer || b->plan->items[src].kind == ITEM_FETCH)
        return -1;
    for (int t = b->first_transfer[src]; t >= 0; t = b->transfers[t].next)
        if (b->transfers[t].output == output && b->transfers[t].dst == dst)
            return t;
    return -1;
}

/* Records that output `output` of item src is needed on device dst (once per such pair). */
static tide_status need_transfer(builder *b, int src, int output, tide_device *dst)
{
    if (find_transfer(b, src, output, dst) >= 0)
        return TIDE_OK;
    if (b->num_transfers == b->cap_transfers) {
        int cap = b->cap_transfers ? 2 * b->cap_transfers : 16;
        transfer *grown = realloc(b->transfers, sizeof *grown * (size_t)cap);
        if (!grown)
            return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        b->transfers = grown;
        b->cap_transfers = cap;
    }
    b->transfers[b->num_transfers] = (transfer){src, output, dst, -1, -1, b->first_transfer[src]};
    b->first_transfer[src] = b->num_transfers++;
    return TIDE_OK;
}

/* A node made by the plan (not in the graph) for a _Send or _Recv item; the plan frees it. */
static tide_node *synthetic_node(builder *b, bool send, const transfer *x, tide_error *err)
{
    const char *op = send ? "_Send" : "_Recv";
    const tide_exec_item *from_item = &b->plan->items[x->src];
    /* A feed's value goes to an accelerator from the host: the tensor is the fed output. */
    tide_output fed = from_item->kind == ITEM_FEED ? b->feeds[from_item->index].output : (tide_output){NULL, 0};
    const tide_node *src = fed.node ? fed.node : from_item->node;
    int index = fed.node ? fed.index : x->output;
    tide_device *from = from_item->device;
    tide_node *n = calloc(1, sizeof *n);
    const tide_op_def *def = tide__registry_find(op);
    if (!n || !def) {
        free(n);
        tide_error_set(err, def ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                       def ? "out of memory" : "the %s op is not registered", op);
        return NULL;
    }
    char tensor[512];
    snprintf(tensor, sizeof tensor, "%s:%d", src->name, index);
    n->id = -1;
    n->name = tide__asprintf("%s/%s%s%d", tensor, send ? "_send_to_" : "_recv_on_", x->dst->type,
                             x->dst->ordinal);
    n->op = def;
    n->attrs = tide_attrs_new();
    tide_dtype dt = src->out_dtypes[index];
    tide_attrs_set_type(n->attrs, "T", dt);
    tide_attrs_set_string(n->attrs, "tensor_name", tensor);
    tide_attrs_set_string(n->attrs, "send_device", from->name);
    tide_attrs_set_string(n->attrs, "recv_device", x->dst->name);
    bool per_tensor = false;
    tide_attrs_get_bool(src->attrs, "_compress_transfers", &per_tensor);
    /* (Lossy compression is for links between hosts; not for copies into or out of an accelerator.) */
    if (dt == TIDE_FLOAT32 && from->host_visible && x->dst->host_visible &&
        (per_tensor || b->graph->compress_transfers || b->engine->compress_transfers))
        tide_attrs_set_bool(n->attrs, "compress", true);
    if (send) {
        n->num_inputs = 1;
        n->inputs = malloc(sizeof *n->inputs);
        if (n->inputs)
            n->inputs[0] = (tide_output){(tide_node *)src, index};
        n->arg_start[1] = 1;
    } else {
        tide_attrs_set_shape(n->attrs, "shape", &src->out_shapes[index]);
        n->num_outputs = 1;
        n->out_dtypes = malloc(sizeof *n->out_dtypes);
        n->out_shapes = malloc(sizeof *n->out_shapes);
        if (n->out_dtypes && n->out_shapes) {
            n->out_dtypes[0] = dt;
            n->out_shapes[0] = src->out_shapes[index];
        }
    }
    n->requested_device = tide__strdup(send ? from->name : x->dst->name);
    atomic_init(&n->assigned_device, send ? (const char *)from->name : (const char *)x->dst->name);
    atomic_init(&n->used_by_plan, true);
    if (!n->name || !n->attrs || !n->requested_device || (send ? !n->inputs : !n->out_dtypes || !n->out_shapes)) {
        tide__node_free(n);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    return n;
}

/* Whether input i of item k's node reaches it in host memory, without a transfer: its kernel reads that
 * input on the host (host_inputs.c; k on an accelerator) and item src, which makes it (a node or a
 * feed), is on a device whose memory the host reads. */
static bool host_input(const builder *b, int k, int i, int src)
{
    const tide_exec_item *it = &b->plan->items[k];
    return it->kind == ITEM_NODE && b->plan->items[src].device->host_visible &&
           tide__kernel_host_input(it->kn.kernel, it->device, wiring_node(it), i);
}

/* The transfers that feeds and fetches need: a fed value consumed on a device whose memory the host
 * cannot read goes there from the host (/cpu:0, where feed items are), and a fetched tensor made on
 * such a device comes back to the host (where fetch items are). */
static tide_status host_transfers(builder *b, const tide_output *fetches, int nf)
{
    tide_plan *p = b->plan;
    int feed_base = b->num_needed;
    tide_status st = TIDE_OK;
    for (int k = 0; k < b->num_needed && st == TIDE_OK; k++) {
        const tide_node *node = wiring_node(&p->items[k]);
        if (p->items[k].device->host_visible)
            continue;
        for (int i = 0; i < node->num_inputs && st == TIDE_OK; i++) {
            int f = find_feed(b, node->inputs[i].node, node->inputs[i].index);
            if (f >= 0 && !tide__input_is_ref(node, i) && !host_input(b, k, i, feed_base + f))
                st = need_transfer(b, feed_base + f, 0, p->items[k].device);
        }
    }
    for (int i = 0; i < nf && st == TIDE_OK; i++) {
        if (find_feed(b, fetches[i].node, fetches[i].index) >= 0)
            continue;
        int src = b->node_item[fetches[i].node->id];
        if (!p->items[src].device->host_visible)
            st = need_transfer(b, src, fetches[i].index, &b->engine->devices[0]);
    }
    return st;
}

/* Pass 5b: finds the cross-device data edges and adds a _Send and a _Recv item for each (tensor,
 * destination device), and those of host_transfers. Appends the items after the fetch items. */
static tide_status partition(builder *b, const tide_output *fetches, int nf)
{
    tide_plan *p = b->plan;
    if (b->engine->num_devices < 2)
        return TIDE_OK;
    b->first_transfer = malloc(sizeof(int) * ((size_t)p->num_items + 1));
    if (!b->first_transfer)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int k = 0; k < p->num_items; k++)
        b->first_transfer[k] = -1;
    tide_status st = TIDE_OK;
    for (int k = 0; k < b->num_needed && st == TIDE_OK; k++) {
        const tide_node *node = wiring_node(&p->items[k]);
        for (int i = 0; i < node->num_inputs && st == TIDE_OK; i++) {
            tide_output in = node->inputs[i];
            if (tide__input_is_ref(node, i) || find_feed(b, in.node, in.index) >= 0)
                continue;
            int src = b->node_item[in.node->id];
            if (p->items[src].device == p->items[k].device || host_input(b, k, i, src))
                continue;
            if (p->items[src].flow == FLOW_ENTER || p->items[src].flow == FLOW_NEXT) /* placement prevents it */
                return tide_error_set(b->err, TIDE_INTERNAL, "loop variable '%s' would cross from %s to %s at '%s' "
                                      "(a Merge must run with its Enter and NextIteration)", in.node->name,
                                      p->items[src].device->name, p->items[k].device->name, node->name);
            st = need_transfer(b, src, in.index, p->items[k].device);
        }
    }
    if (st == TIDE_OK && b->engine->num_devices > b->engine->num_cpu_devices)
        st = host_transfers(b, fetches, nf);
    if (st != TIDE_OK || b->num_transfers == 0)
        return st;
    int base = p->num_items;
    tide_exec_item *items = realloc(p->items, sizeof *items * ((size_t)base + 2 * (size_t)b->num_transfers + 1));
    tide_node **nodes = calloc(2 * (size_t)b->num_transfers, sizeof *nodes);
    if (items)
        p->items = items;
    if (!items || !nodes) {
        free(nodes);
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    memset(p->items + base, 0, sizeof *items * 2 * (size_t)b->num_transfers);
    p->synthetic = nodes;
    for (int t = 0; t < b->num_transfers && st == TIDE_OK; t++) {
        transfer *x = &b->transfers[t];
        for (int side = 0; side < 2 && st == TIDE_OK; side++) {
            tide_node *n = synthetic_node(b, side == 0, x, b->err);
            if (!n)
                return tide_error_code(b->err);
            p->synthetic[p->num_synthetic++] = n;
            int k = p->num_items++;
            *(side == 0 ? &x->send : &x->recv) = k;
            st = init_node_item(b, &p->items[k], n, side == 0 ? p->items[x->src].device : x->dst);
            p->items[k].frame = tide__plan_landing_frame(p, x->src); /* per iteration inside a loop */
        }
    }
    p->num_transfers = b->num_transfers; /* uses_rendezvous: set for every '_' item by tide__plan_build */
    return st;
}

/* ---------------------------------------------------------------- pass 6b: _Recv as late as possible */

/* The items as a graph for the cost model: edges plus the rendezvous's implicit link from each _Send
 * to its _Recv, predecessor lists, predicted costs and earliest start times. */
typedef struct item_graph {
    int n;
    int *partner;           /* per item: the _Recv of a _Send item, -1 */
    int *pred_start, *pred; /* CSR: predecessors of item k are pred[pred_start[k] .. pred_start[k+1]) */
    double *cost, *early;
    int *mark, *stack;      /* DFS stamps and stack */
} item_graph;

static void item_graph_free(item_graph *ig)
{
    free(ig->partner);
    free(ig->pred_start);
    free(ig->pred);
    free(ig->cost);
    free(ig->early);
    free(ig->mark);
    free(ig->stack);
}

/* Successor j of item `from`, for j in 0..num_edges: its edges' destinations, then (j == num_edges)
 * its partner _Recv when it is a _Send; -1 when there is none. */
static int successor(const tide_plan *p, const item_graph *ig, int from, int k)
{
    const tide_exec_item *it = &p->items[from];
    return k < it->num_edges ? it->edges[k].dst : k == it->num_edges ? ig->partner[from] : -1;
}

/* Predecessor lists, costs by the cost model and earliest start times (Kahn's order). */
static bool item_graph_build(builder *b, item_graph *ig)
{
    tide_plan *p = b->plan;
    int n = ig->n = p->num_items;
    ig->partner = malloc(sizeof(int) * (size_t)n);
    ig->pred_start = calloc((size_t)n + 1, sizeof(int));
    ig->cost = calloc((size_t)n, sizeof(double));
    ig->early = calloc((size_t)n, sizeof(double));
    ig->mark = calloc((size_t)n, sizeof(int));
    ig->stack = malloc(sizeof(int) * (size_t)n);
    int *pending = calloc((size_t)n, sizeof(int)), *queue = malloc(sizeof(int) * (size_t)n);
    bool ok = ig->partner && ig->pred_start && ig->cost && ig->early && ig->mark && ig->stack && pending && queue;
    tide_cost_model model;
    tide__cost_model_default(&model);
    for (int k = 0; ok && k < n; k++) {
        const tide_exec_item *it = &p->items[k];
        ig->partner[k] = -1;
        if (it->kind == ITEM_NODE)
            ig->cost[k] = it->node->id < 0 ? model.transfer_latency_s
                                           : tide__cost_estimate(&model, b->engine->cost_table, it->node, it->device);
    }
    for (int t = 0; ok && t < b->num_transfers; t++)
        ig->partner[b->transfers[t].send] = b->transfers[t].recv;
    for (int k = 0; ok && k < n; k++)
        for (int j = 0; j <= p->items[k].num_edges; j++) {
            int d = successor(p, ig, k, j);
            if (d >= 0)
                pending[d]++;
        }
    int total = 0;
    for (int k = 0; ok && k < n; k++) {
        ig->pred_start[k] = total;
        total += pending[k];
    }
    ig->pred = malloc(sizeof(int) * ((size_t)total + 1));
    ok = ok && ig->pred;
    int head = 0, tail = 0;
    if (ok) {
        ig->pred_start[n] = total;
        int *fill = calloc((size_t)n, sizeof(int));
        ok = fill != NULL;
        for (int k = 0; ok && k < n; k++)
            for (int j = 0; j <= p->items[k].num_edges; j++) {
                int d = successor(p, ig, k, j);
                if (d >= 0)
                    ig->pred[ig->pred_start[d] + fill[d]++] = k;
            }
        free(fill);
        for (int k = 0; ok && k < n; k++)
            if (pending[k] == 0)
                queue[tail++] = k;
    }
    while (ok && head < tail) {
        int k = queue[head++];
        double done = ig->early[k] + ig->cost[k];
        for (int j = 0; j <= p->items[k].num_edges; j++) {
            int d = successor(p, ig, k, j);
            if (d < 0)
                continue;
            if (done > ig->early[d])
                ig->early[d] = done;
            if (--pending[d] == 0)
                queue[tail++] = d;
        }
    }
    free(pending);
    free(queue);
    return ok && tail == n; /* the plan is acyclic */
}

/* Marks (with stamp) every item reachable from r through edges and _Send -> _Recv links. */
static void mark_descendants(const tide_plan *p, item_graph *ig, int r, int stamp)
{
    int top = 0;
    ig->stack[top++] = r;
    ig->mark[r] = stamp;
    while (top > 0) {
        int k = ig->stack[--top];
        for (int j = 0; j <= p->items[k].num_edges; j++) {
            int d = successor(p, ig, k, j);
            if (d >= 0 && ig->mark[d] != stamp) {
                ig->mark[d] = stamp;
                ig->stack[top++] = d;
            }
        }
    }
}

/* When the consumers of item r could start but for r: the earliest, over r's consumers, of the time
 * their other inputs are predicted ready. */
static double needed_at(const tide_plan *p, const item_graph *ig, int r)
{
    double want = -1;
    const tide_exec_item *it = &p->items[r];
    for (int e = 0; e < it->num_edges; e++) {
        int d = it->edges[e].dst;
        double others = 0;
        for (int q = ig->pred_start[d]; q < ig->pred_start[d + 1]; q++)
            if (ig->pred[q] != r && ig->early[ig->pred[q]] + ig->cost[ig->pred[q]] > others)
                others = ig->early[ig->pred[q]] + ig->cost[ig->pred[q]];
        if (want < 0 || others < want)
            want = others;
    }
    return want;
}

/* Pass 6b (white paper §5.2): a _Recv whose consumers would wait for something else anyway (by the
 * cost model) is delayed until just before they can start: it gets a control edge from the node of
 * its device predicted to finish last before then. A _Recv its consumers wait for (the critical path)
 * starts at once. A received tensor is then not held, or (compressed) restored, long before it is
 * needed. The node must not depend on the _Recv, counting the rendezvous's _Send -> _Recv links, so no
 * cycle or deadlock can form. Skipped for very large plans (the search is quadratic). */
static tide_status schedule_recvs_late(builder *b)
{
    tide_plan *p = b->plan;
    if ((double)b->num_transfers * (double)p->num_items > 2e7)
        return TIDE_OK;
    item_graph ig = {0};
    tide_status st = TIDE_OK;
    if (!item_graph_build(b, &ig)) {
        item_graph_free(&ig);
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory scheduling receives");
    }
    for (int t = 0; t < b->num_transfers && st == TIDE_OK; t++) {
        int r = b->transfers[t].recv;
        double start_by = needed_at(p, &ig, r) - ig.cost[r];
        if (start_by <= ig.early[r] + 1e-6)
            continue; /* the consumers wait for this tensor: receive it as soon as possible */
        mark_descendants(p, &ig, r, t + 1);
        int best = -1;
        double best_finish = ig.early[r]; /* a node that ends before the tensor arrives delays nothing */
        for (int k = 0; k < b->num_needed; k++) {
            double finish = ig.early[k] + ig.cost[k];
            if (p->items[k].device == p->items[r].device && ig.mark[k] != t + 1 && finish <= start_by &&
                finish > best_finish) {
                best = k;
                best_finish = finish;
            }
        }
        if (best >= 0) {
            st = add_edge(b, best, (tide_edge){r, -1, -1, 0}, false);
            p->num_alap_edges++;
        }
    }
    item_graph_free(&ig);
    return st;
}

/* Pass 6: edges, slots and pending counts. Items: needed nodes, then feeds, then fetches, then the
 * _Send/_Recv pairs of pass 5b. */
static tide_status wire(builder *b, const tide_output *fetches, int nf)
{
    tide_plan *p = b->plan;
    int feed_base = b->num_needed, fetch_base = feed_base + b->num_feeds;
    tide_status st = tide__plan_number_frames(p, b->err); /* input slots per frame */
    for (int k = 0; k < b->num_needed && st == TIDE_OK; k++) {
        const tide_node *node = wiring_node(&p->items[k]);
        for (int i = 0; i < node->num_inputs && st == TIDE_OK; i++) {
            tide_output in = node->inputs[i];
            if (tide__input_is_ref(node, i))
                continue;
            int f = find_feed(b, in.node, in.index);
            int src = f >= 0 ? feed_base + f : b->node_item[in.node->id];
            int output = f >= 0 ? 0 : in.index;
            bool back = f < 0 && p->items[src].flow == FLOW_NEXT;
            int t = host_input(b, k, i, src) ? -1 : find_transfer(b, src, output, p->items[k].device);
            if (t >= 0) { /* from the _Recv on this item's device (a host-memory input: straight from the host) */
                src = b->transfers[t].recv;
                output = 0;
            }
            st = add_edge(b, src, (tide_edge){k, p->items[k].input_base + i, output, 0}, back);
        }
        for (int i = 0; i < node->num_control && st == TIDE_OK; i++)
            if (!fully_fed(b, node->control[i]))
                st = add_edge(b, b->node_item[node->control[i]->id], (tide_edge){k, -1, -1, 0}, false);
    }
    for (int t = 0; t < b->num_transfers && st == TIDE_OK; t++) { /* each _Send reads its tensor */
        const transfer *x = &b->transfers[t];
        st = add_edge(b, x->src, (tide_edge){x->send, p->items[x->send].input_base, x->output, 0}, false);
        /* Inside a loop a _Recv runs once per iteration, started by its tensor's producer: in one process
         * that is a plain edge (a remote partition will need a loop of its own to start it). */
        if (st == TIDE_OK && p->items[x->recv].frame != 0)
            st = add_edge(b, x->src, (tide_edge){x->recv, -1, -1, 0}, false);
    }
    for (int i = 0; i < nf && st == TIDE_OK; i++) {
        int f = find_feed(b, fetches[i].node, fetches[i].index);
        int src = f >= 0 ? feed_base + f : b->node_item[fetches[i].node->id];
        if (f < 0 && tide__plan_landing_frame(p, src) != 0)
            return tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "cannot fetch '%s:%d': it is computed inside the "
                                  "loop frame '%s' (fetch the loop's result, an Exit)", fetches[i].node->name,
                                  fetches[i].index, p->frames[tide__plan_landing_frame(p, src)].name);
        int output = f >= 0 ? 0 : fetches[i].index;
        int t = f >= 0 || p->items[src].device->host_visible ? -1
                                                               : find_transfer(b, src, output, &b->engine->devices[0]);
        if (t >= 0) { /* made on an accelerator: from its _Recv on the host */
            src = b->transfers[t].recv;
            output = 0;
        }
        st = add_edge(b, src, (tide_edge){fetch_base + i, p->items[fetch_base + i].input_base, output, 0}, false);
    }
    if (st == TIDE_OK)
        st = order_updates_after_reads(b);
    if (st != TIDE_OK)
        return st;
    for (int k = 0; k < p->num_items; k++)
        if (p->items[k].num_edges > 1)
            qsort(p->items[k].edges, (size_t)p->items[k].num_edges, sizeof(tide_edge), cmp_edges);
    /* (Scheduling receives late reasons over one pass of an acyclic plan: not for plans with loops.) */
    if (b->engine->alap && b->num_transfers > 0 && p->num_frames == 1 && (st = schedule_recvs_late(b)) != TIDE_OK)
        return st;
    if ((st = tide__plan_finish_frames(p, b->err)) != TIDE_OK)
        return st;
    p->roots = malloc(sizeof(int) * ((size_t)p->num_items + 1));
    if (!p->roots)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    /* Roots in reverse so that the executor's LIFO stack starts with the first in topological order. */
    for (int k = p->num_items - 1; k >= 0; k--)
        if (p->items[k].initial_pending == 0)
            p->roots[p->num_roots++] = k;
    return TIDE_OK;
}

#ifndef NDEBUG
/* The invariants listed in exec.h; debug builds check every plan they build. */
static bool plan_check(const tide_plan *p)
{
    int total = 0, *slot_base = calloc((size_t)p->num_frames + 1, sizeof *slot_base); /* per frame */
    for (int f = 0; slot_base && f < p->num_frames; f++) {
        slot_base[f] = total;
        total += p->frames[f].num_slots;
    }
    int *slot_edges = calloc((size_t)total + 1, sizeof *slot_edges);
    int *incoming = calloc((size_t)p->num_items + 1, sizeof *incoming);
    bool ok = slot_base && slot_edges && incoming;
    for (int k = 0; ok && k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        for (int e = 0; e < it->num_edges; e++) {
            const tide_edge *edge = &it->edges[e];
            const tide_exec_item *dst = &p->items[edge->dst];
            incoming[edge->dst]++;
            if (edge->slot >= 0)
                slot_edges[slot_base[dst->frame] + edge->slot]++;
            if (edge->dst_local != dst->local || tide__plan_landing_frame(p, k) != dst->frame)
                ok = false; /* 5 */
            if (e > 0 && it->edges[e - 1].output >= 0 && edge->output >= 0 && it->edges[e - 1].output > edge->output)
                ok = false; /* 4: grouped by output, in order */
            if (e > 0 && it->edges[e - 1].output < 0 && edge->output >= 0)
                ok = false; /* 4: control edges last */
        }
    }
    for (int k = 0; ok && k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        ok = incoming[k] == it->initial_pending; /* 2 */
        for (int i = 0; ok && i < it->num_inputs; i++) {
            bool ref = it->kind == ITEM_NODE && it->kn.ref_sources[i];
            ok = slot_edges[slot_base[it->frame] + it->input_base + i] == (ref ? 0 : 1); /* 1 */
        }
    }
    int roots = 0;
    for (int k = 0; ok && k < p->num_items; k++) {
        roots += p->items[k].initial_pending == 0;
        ok = p->items[k].initial_pending > 0 || p->items[k].frame == 0; /* 3 */
    }
    ok = ok && roots == p->num_roots; /* 3 */
    free(slot_base);
    free(slot_edges);
    free(incoming);
    return ok;
}
#endif

static char *output_name(tide_output o)
{
    return tide__asprintf("%s:%d", o.node->name, o.index);
}

/* Gives each item the nodes merged into it, and those nodes their twin's device. */
static tide_status record_twins(builder *b)
{
    tide_plan *p = b->plan;
    for (int id = 0; id < b->graph->num_nodes; id++) {
        if (b->canonical[id] == id)
            continue;
        tide_exec_item *it = &p->items[b->node_item[id]];
        const tide_node **grown = realloc(it->twins, sizeof *grown * ((size_t)it->num_twins + 1));
        if (!grown)
            return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        it->twins = grown;
        it->twins[it->num_twins++] = b->graph->nodes[id];
        atomic_store(&b->graph->nodes[id]->assigned_device, (const char *)it->device->name);
    }
    p->num_merged = b->num_merged;
    return TIDE_OK;
}

static tide_status make_items(builder *b, const tide_output *fetches, int nf, tide_node *const *targets, int nt)
{
    tide_plan *p = b->plan;
    p->num_items = b->num_needed + b->num_feeds + nf;
    p->items = calloc((size_t)p->num_items + 1, sizeof *p->items);
    p->feed_items = calloc((size_t)b->num_feeds + 1, sizeof *p->feed_items);
    p->feed_dtypes = calloc((size_t)b->num_feeds + 1, sizeof *p->feed_dtypes);
    p->feed_shapes = calloc((size_t)b->num_feeds + 1, sizeof *p->feed_shapes);
    p->feed_names = calloc((size_t)b->num_feeds + 1, sizeof(char *));
    p->fetch_names = calloc((size_t)nf + 1, sizeof(char *));
    p->target_names = calloc((size_t)nt + 1, sizeof(char *));
    if (!p->items || !p->feed_items || !p->feed_dtypes || !p->feed_shapes || !p->feed_names || !p->fetch_names ||
        !p->target_names)
        return tide_error_set(b->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    p->num_feeds = b->num_feeds;
    p->num_fetches = nf;
    p->num_targets = nt;
    /* Pass 4: placement (placement.c) of every needed node. */
    tide_placement pl = {0};
    tide_status st = tide__place(b->engine, b->graph, b->order, b->num_needed, b->canonical, is_fed, b,
                                 b->engine->placement, NULL, b->engine->cost_table, &pl, b->err);
    for (int k = 0; k < b->num_needed && st == TIDE_OK; k++)
        st = init_node_item(b, &p->items[k], b->graph->nodes[b->order[k]], pl.device[k]);
    if (st == TIDE_OK && b->num_merged > 0)
        st = record_twins(b);
    if (st == TIDE_OK) { /* the plan keeps the soft-placement warnings (tide_session_warnings) */
        p->warnings = pl.warnings;
        p->num_warnings = pl.num_warnings;
        p->simulated_s = pl.simulated_s;
        pl.warnings = NULL;
        pl.num_warnings = 0;
    }
    tide__placement_clear(&pl);
    if (st != TIDE_OK)
        return st;
    for (int i = 0; i < b->num_feeds; i++) {
        tide_exec_item *it = &p->items[b->num_needed + i];
        tide_output o = b->feeds[i].output;
        it->kind = ITEM_FEED;
        it->index = i;
        it->device = &b->engine->devices[0];
        p->feed_items[i] = b->num_needed + i;
        p->feed_dtypes[i] = o.node->out_dtypes[o.index];
        p->feed_shapes[i] = o.node->out_shapes[o.index];
        p->feed_names[i] = output_name(o);
    }
    for (int i = 0; i < nf; i++) {
        tide_exec_item *it = &p->items[b->num_needed + b->num_feeds + i];
        it->kind = ITEM_FETCH;
        it->index = i;
        it->num_inputs = 1;
        it->device = &b->engine->devices[0];
        p->fetch_names[i] = output_name(fetches[i]);
    }
    for (int i = 0; i < nt; i++)
        p->target_names[i] = tide__strdup(targets[i]->name);
    return TIDE_OK;
}

tide_plan *tide__plan_build(tide_engine *e, tide_graph *g, const tide_feed *feeds, int num_feeds,
                            const tide_output *fetches, int num_fetches, tide_node *const *targets,
                            int num_targets, bool fuse, const tide_debugger_slot *debugger, tide_error *err)
{
    builder b = {.engine = e, .graph = g, .feeds = feeds, .num_feeds = num_feeds, .err = err};
    b.plan = calloc(1, sizeof *b.plan);
    static atomic_uint_fast64_t plans_built;
    if (b.plan)
        b.plan->serial = atomic_fetch_add(&plans_built, 1) + 1;
    b.node_item = malloc(sizeof(int) * ((size_t)g->num_nodes + 1));
    tide_status st = b.plan && b.node_item ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; st == TIDE_OK && i < g->num_nodes; i++)
        b.node_item[i] = -1;
    if (st == TIDE_OK)
        st = check_signature(&b, fetches, num_fetches, targets, num_targets);
    if (st == TIDE_OK)
        st = prune(&b, fetches, num_fetches, targets, num_targets);
    if (st == TIDE_OK)
        st = order_nodes(&b);
    if (st == TIDE_OK && e->cse && b.num_needed > 1)
        st = merge_duplicates(&b);
    if (st == TIDE_OK)
        st = make_items(&b, fetches, num_fetches, targets, num_targets);
    if (st == TIDE_OK)
        st = tide__plan_assign_frames(b.plan, b.num_needed, b.node_item, is_fed, &b, err);
    if (st == TIDE_OK && fuse) {
        tide_fuse_args fa = {.engine = e, .graph = g, .num_node_items = b.num_needed, .node_item = b.node_item,
                             .fetches = fetches, .num_fetches = num_fetches, .is_fed = is_fed, .arg = &b,
                             .debugger = debugger};
        st = tide__plan_fuse(b.plan, &fa, err);
        b.num_needed = fa.num_node_items;
    }
    if (st == TIDE_OK)
        st = partition(&b, fetches, num_fetches);
    if (st == TIDE_OK)
        st = wire(&b, fetches, num_fetches);
#ifndef NDEBUG
    if (st == TIDE_OK && !plan_check(b.plan))
        st = tide_error_set(err, TIDE_INTERNAL, "internal error: an inconsistent plan was built (please report)");
#endif
    for (int k = 0; st == TIDE_OK && k < b.plan->num_items; k++) /* user-built pairs use the rendezvous too */
        if (b.plan->items[k].kind == ITEM_NODE && b.plan->items[k].node->op->name[0] == '_')
            b.plan->uses_rendezvous = true;
    if (st == TIDE_OK) {
        pthread_mutex_lock(&g->lock);
        for (int k = 0; k < b.num_needed; k++) {
            atomic_store(&((tide_node *)b.plan->items[k].node)->used_by_plan, true);
            for (int t = 0; t < b.plan->items[k].num_twins; t++)
                atomic_store(&((tide_node *)b.plan->items[k].twins[t])->used_by_plan, true);
            for (int m = 0; b.plan->items[k].fused && m < b.plan->items[k].fused->num_members; m++)
                atomic_store(&((tide_node *)b.plan->items[k].fused->members[m].node)->used_by_plan, true);
        }
        pthread_mutex_unlock(&g->lock);
        b.plan->observers_version = -1;
        b.plan->debugger_version = -1;
        b.plan->debug_version = -1;
    }
    free(b.node_item);
    free(b.order);
    free(b.transfers);
    free(b.first_transfer);
    free(b.canonical);
    if (st != TIDE_OK) {
        tide__plan_free(b.plan);
        return NULL;
    }
    return b.plan;
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

void tide__plan_free(tide_plan *p)
{
    if (!p)
        return;
    for (int k = 0; p->items && k < p->num_items; k++) {
        tide_exec_item *it = &p->items[k];
        if (it->kind == ITEM_NODE) {
            tide__kernel_node_clear(&it->kn);
            free(it->kn.in_dtypes);
            free(it->kn.ref_sources);
        }
        free(it->edges);
        free(it->twins);
    }
    free(p->items);
    for (int f = 0; p->frames && f < p->num_frames; f++) {
        free(p->frames[f].name);
        free(p->frames[f].items);
        free(p->frames[f].init_pending);
    }
    free(p->frames);
    for (int i = 0; i < p->num_synthetic; i++)
        tide__node_free(p->synthetic[i]);
    free(p->synthetic);
    for (int i = 0; i < p->num_warnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->roots);
    free(p->feed_items);
    free(p->feed_dtypes);
    free(p->feed_shapes);
    free_names(p->feed_names, p->num_feeds);
    free_names(p->fetch_names, p->num_fetches);
    free_names(p->target_names, p->num_targets);
    free(p->key);
    free(p);
}

void tide__plan_update_debugger(tide_plan *p, tide_engine *e, const tide_debugger_slot *d)
{
    int version = atomic_load(&e->debugger_version);
    if (__atomic_load_n(&p->debugger_version, __ATOMIC_ACQUIRE) == version || !tide__entry_enter(d->entry))
        return;
    pthread_mutex_lock(&e->observers_lock); /* one refresh at a time (the plan is shared by steps) */
    int num_watched = 0;
    for (int k = 0; p->debugger_version != version && k < p->num_items; k++) {
        tide_exec_item *it = &p->items[k];
        bool watched = it->kind == ITEM_NODE && (!d->d.watches || d->d.watches(d->d.user, it->node));
        atomic_store_explicit(&it->debug_watched, watched, memory_order_relaxed);
        num_watched += watched;
    }
    if (p->debugger_version != version)
        atomic_store(&p->num_debug_watched, num_watched);
    __atomic_store_n(&p->debugger_version, version, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&e->observers_lock);
    tide__entry_leave(d->entry);
}

void tide__plan_update_observers(tide_plan *p, tide_engine *e)
{
    pthread_mutex_lock(&e->observers_lock);
    int version = atomic_load(&e->observers_version);
    if (version != p->observers_version) {
        for (int k = 0; k < p->num_items; k++) {
            tide_exec_item *it = &p->items[k];
            bool wants = false;
            for (int o = 0; it->kind == ITEM_NODE && o < e->num_observers; o++) {
                const tide_observer *obs = &e->observers[o].obs;
                if (obs->tensor_produced && (!obs->wants_tensors || obs->wants_tensors(obs->user, it->node)))
                    wants = true;
                for (int t = 0; t < it->num_twins && !wants; t++)
                    if (obs->tensor_produced && (!obs->wants_tensors || obs->wants_tensors(obs->user, it->twins[t])))
                        wants = true;
            }
            atomic_store_explicit(&it->wants_tensors, wants, memory_order_relaxed);
        }
        p->observers_version = version;
    }
    pthread_mutex_unlock(&e->observers_lock);
}
