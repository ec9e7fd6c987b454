/* fusion.c — the plan pass that fuses element-wise chains and trees (fusion.h has what a group is).
 *
 * Walking the node items from the last in topological order to the first, each candidate not yet in
 * a group roots a new one, which then grows towards its producers: a producer joins when it is a
 * candidate on the root's device, of the group's dtype and shape, not fetched, watched or the
 * source of a control edge, and every consumer it has is in the group already (tried again as the
 * group grows, so a value read twice inside the group joins once both readers did). A group of one
 * is dropped. Then each group becomes one item (the root's slot; the others' items are removed and
 * the items renumbered): its kernel is fusion_run.c's, its state the program.
 *
 * What the user asks to see stays visible: a fetched or watched node (an observer's wants_tensors
 * accepted it when the plan was made) is never fused away, only a group's root may be a fetched
 * or watched one. A plan in which the debugger watches any node (a breakpoint can stop there) is not
 * fused at all: from a stop the user may step through every node, print any value and override one
 * (docs/debugger.md), so every node runs as itself; a plan none of whose nodes it watches cannot stop
 * and is fused as without a debugger. The session makes plans without this pass when fusion is off
 * or a debugger in keep mode is attached (every value of the step is to be kept), and keys fused
 * plans by the observers' version and the debugger's, so that a new watch or breakpoint gets a new
 * plan (session.c). */
#include <stdlib.h>
#include <string.h>

#include "fusion.h"

static const tide_kernel_def fused_kernel = {
    .spec = {.op = "_FusedElementwise", .device_type = "cpu", .compute = tide__fusion_compute,
             .destroy = tide__fusion_free},
};

/* Per node item: what the grouping needs. */
typedef struct fuse_info {
    bool candidate;             /* an element-wise kernel fusion can run, by itself */
    bool pinned;                /* fetched, watched or a control edge's source: may only be a root */
    tide_elementwise ew;
    int group;                  /* -1: none */
    int num_consumers;
    int first_consumer;         /* into consumers[] */
} fuse_info;

typedef struct fuser {
    tide_plan *p;
    tide_fuse_args *a;
    int n;                      /* node items */
    fuse_info *info;
    int *consumers;             /* CSR: the consumer item of each data use */
    tide_error *err;
} fuser;

/* The item producing input i of node (-1 when fed or a Ref input). */
static int input_item(const fuser *f, const tide_node *node, int i)
{
    tide_output in = node->inputs[i];
    if (tide__input_is_ref(node, i) || f->a->is_fed(f->a->arg, in.node, in.index))
        return -1;
    return f->a->node_item[in.node->id];
}

static bool watched(const fuser *f, const tide_node *node)
{
    tide_engine *e = f->a->engine;
    bool wants = false;
    pthread_mutex_lock(&e->observers_lock);
    for (int o = 0; o < e->num_observers && !wants; o++) {
        const tide_observer *obs = &e->observers[o].obs;
        wants = obs->tensor_produced && (!obs->wants_tensors || obs->wants_tensors(obs->user, node));
    }
    pthread_mutex_unlock(&e->observers_lock);
    return wants;
}

/* Whether item k's kernel may be fused at all (its shape and neighbours aside). */
static bool candidate(fuser *f, int k, tide_elementwise *ew)
{
    const tide_exec_item *it = &f->p->items[k];
    const tide_node *node = it->node;
    const tide_kernel_def *kd = it->kn.kernel;
    if (it->kind != ITEM_NODE || strcmp(it->device->type, "cpu") != 0 || it->num_twins > 0 || it->async ||
        node->num_control > 0 || node->num_outputs != 1 || !kd || !kd->spec.elementwise ||
        f->a->is_fed(f->a->arg, node, 0))
        return false;
    tide_dtype dt = node->out_dtypes[0];
    if ((dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64) || node->out_shapes[0].rank < 0)
        return false;
    for (int i = 0; i < node->num_inputs; i++)
        if (it->kn.in_dtypes[i] != dt)
            return false;
    *ew = (tide_elementwise){0};
    tide_kernel_ctx ctx = {.kn = &it->kn, .in_init = true};
    bool ok = kd->spec.elementwise(&ctx, ew);
    tide_error_free(ctx.err);
    int arity = ew->unary || ew->unary_p ? 1 : ew->binary || ew->binary_p ? 2 : 0;
    return ok && arity == node->num_inputs;
}

/* The kind input i of node would have as an operand of a group of shape s; -1 when it cannot be one. */
static int operand_kind(const tide_node *node, const tide_elementwise *ew, int i, const tide_shape *s)
{
    const tide_shape *in = &node->inputs[i].node->out_shapes[node->inputs[i].index];
    bool may_broadcast = (ew->broadcast >> i) & 1;
    if (tide_shape_equal(in, s) && !(s->rank == 1 && may_broadcast && strcmp(node->op->name, "BiasAdd") == 0))
        return FUSION_FULL;
    if (!may_broadcast)
        return -1;
    if (in->rank == 0)
        return strcmp(node->op->name, "BiasAdd") == 0 ? -1 : FUSION_SCALAR;
    if (in->rank == 1 && s->rank >= 2 && in->dims[0] >= 0 && in->dims[0] == s->dims[s->rank - 1])
        return FUSION_BIAS;
    return -1;
}

/* Whether node may be a member of a group of shape s: its output is of shape s, each input is an
 * operand it may have, and at least one of them is full (so its output really is of shape s). */
static bool fits(const tide_node *node, const tide_elementwise *ew, const tide_shape *s)
{
    if (!tide_shape_equal(&node->out_shapes[0], s) || s->rank < 1)
        return false;
    bool full = false;
    for (int i = 0; i < node->num_inputs; i++) {
        int kind = operand_kind(node, ew, i, s);
        if (kind < 0)
            return false;
        full |= kind == FUSION_FULL;
    }
    return full;
}

/* Consumers, pins and candidates of every node item. */
static tide_status analyse(fuser *f)
{
    int n = f->n;
    f->info = calloc((size_t)n + 1, sizeof *f->info);
    if (!f->info)
        return tide_error_set(f->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int total = 0;
    for (int k = 0; k < n; k++) {
        const tide_node *node = f->p->items[k].node;
        f->info[k].group = -1;
        for (int i = 0; i < node->num_inputs; i++) {
            int src = input_item(f, node, i);
            if (src >= 0 && src < n) {
                f->info[src].num_consumers++;
                total++;
            }
        }
        for (int c = 0; c < node->num_control; c++) {
            int src = f->a->node_item[node->control[c]->id];
            if (src >= 0 && src < n)
                f->info[src].pinned = true;
        }
    }
    for (int i = 0; i < f->a->num_fetches; i++) {
        tide_output o = f->a->fetches[i];
        int src = f->a->is_fed(f->a->arg, o.node, o.index) ? -1 : f->a->node_item[o.node->id];
        if (src >= 0 && src < n)
            f->info[src].pinned = true;
    }
    f->consumers = malloc(sizeof(int) * ((size_t)total + 1));
    if (!f->consumers)
        return tide_error_set(f->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int at = 0;
    for (int k = 0; k < n; k++) {
        f->info[k].first_consumer = at;
        at += f->info[k].num_consumers;
        f->info[k].num_consumers = 0;
    }
    for (int k = 0; k < n; k++) {
        const tide_node *node = f->p->items[k].node;
        for (int i = 0; i < node->num_inputs; i++) {
            int src = input_item(f, node, i);
            if (src >= 0 && src < n)
                f->consumers[f->info[src].first_consumer + f->info[src].num_consumers++] = k;
        }
    }
    for (int k = 0; k < n; k++) {
        f->info[k].candidate = candidate(f, k, &f->info[k].ew);
        if (f->info[k].candidate && !f->info[k].pinned && watched(f, f->p->items[k].node))
            f->info[k].pinned = true;
    }
    return TIDE_OK;
}

/* Whether producer item j may join group g (rooted at item r). */
static bool may_join(const fuser *f, int j, int g, int r)
{
    const fuse_info *in = &f->info[j];
    const tide_exec_item *root = &f->p->items[r], *it = &f->p->items[j];
    if (!in->candidate || in->pinned || in->group >= 0 || it->device != root->device ||
        it->node->out_dtypes[0] != root->node->out_dtypes[0] || !fits(it->node, &in->ew, &root->node->out_shapes[0]))
        return false;
    for (int c = 0; c < in->num_consumers; c++)
        if (f->info[f->consumers[in->first_consumer + c]].group != g)
            return false;
    return true;
}

/* Grows group g from its root r; returns its members (items, ascending: topological order). */
static int grow(fuser *f, int g, int r, int *members)
{
    int count = 0;
    members[count++] = r;
    f->info[r].group = g;
    for (bool changed = true; changed && count < TIDE_FUSION_MAX_MEMBERS;) {
        changed = false;
        for (int m = 0; m < count && count < TIDE_FUSION_MAX_MEMBERS; m++) {
            const tide_node *node = f->p->items[members[m]].node;
            for (int i = 0; i < node->num_inputs && count < TIDE_FUSION_MAX_MEMBERS; i++) {
                int j = input_item(f, node, i);
                if (j >= 0 && j < f->n && may_join(f, j, g, r)) {
                    f->info[j].group = g;
                    members[count++] = j;
                    changed = true;
                }
            }
        }
    }
    for (int a = 1; a < count; a++) /* insertion sort: topological order */
        for (int b = a; b > 0 && members[b - 1] > members[b]; b--) {
            int t = members[b];
            members[b] = members[b - 1];
            members[b - 1] = t;
        }
    return count;
}

/* The value of input i of member item k (of a group whose members are items[0..count)): a member's
 * output (numbered TIDE_FUSION_MAX_EXTERNALS + m until the externals are counted), or an external,
 * added on first use; -1 past the cap on externals. */
static int value_of(const fuser *f, tide_fusion *fu, const int *items, int count, int k, int i)
{
    const tide_node *node = f->p->items[k].node;
    int src = input_item(f, node, i);
    for (int m = 0; src >= 0 && m < count; m++)
        if (items[m] == src)
            return TIDE_FUSION_MAX_EXTERNALS + m;
    tide_output o = node->inputs[i];
    for (int e = 0; e < fu->num_ext; e++)
        if (fu->ext[e].node == o.node && fu->ext[e].index == o.index)
            return e;
    if (fu->num_ext == TIDE_FUSION_MAX_EXTERNALS)
        return -1;
    fu->ext[fu->num_ext] = o;
    fu->ext_kind[fu->num_ext] = (uint8_t)operand_kind(node, &f->info[k].ew, i,
                                                      &f->p->items[items[count - 1]].node->out_shapes[0]);
    return fu->num_ext++;
}

/* Tile registers: a member's output takes a free register once its inputs' last reads are done
 * (the loops may write over an input), the root writes the group's output. False past the cap. */
static bool allocate_registers(tide_fusion *fu)
{
    int last_use[TIDE_FUSION_MAX_MEMBERS], free_regs[TIDE_FUSION_MAX_REGS], num_free = 0;
    for (int m = 0; m < fu->num_members; m++)
        last_use[m] = -1;
    for (int m = 0; m < fu->num_members; m++)
        for (int i = 0; i < fu->members[m].num_in; i++)
            if (fu->members[m].in[i] >= fu->num_ext)
                last_use[fu->members[m].in[i] - fu->num_ext] = m;
    for (int m = 0; m < fu->num_members; m++) {
        fusion_member *mb = &fu->members[m];
        for (int i = 0; i < mb->num_in; i++) {
            int v = mb->in[i] - fu->num_ext;
            if (v >= 0 && last_use[v] == m && (i == 0 || mb->in[0] != mb->in[i]))
                free_regs[num_free++] = fu->members[v].reg;
        }
        if (m == fu->num_members - 1) {
            mb->reg = -1;
        } else if (num_free > 0) {
            mb->reg = free_regs[--num_free];
        } else if (fu->num_regs < TIDE_FUSION_MAX_REGS) {
            mb->reg = fu->num_regs++;
        } else {
            return false;
        }
    }
    return true;
}

/* The program of the group made of items[0..count) (topological order, the root last). Takes
 * nothing from the items yet. *fused false (and NULL returned) when the group exceeds a cap. */
static tide_fusion *make_program(fuser *f, const int *items, int count, bool *too_big)
{
    tide_fusion *fu = calloc(1, sizeof *fu);
    *too_big = false;
    if (!fu || !(fu->members = calloc((size_t)count, sizeof *fu->members)) ||
        !(fu->ext = calloc(TIDE_FUSION_MAX_EXTERNALS, sizeof *fu->ext)) ||
        !(fu->ext_kind = calloc(TIDE_FUSION_MAX_EXTERNALS, 1))) {
        tide__fusion_free(fu);
        return NULL;
    }
    fu->num_members = count;
    fu->dtype = f->p->items[items[count - 1]].node->out_dtypes[0];
    for (int m = 0; m < count && !*too_big; m++) {
        fusion_member *mb = &fu->members[m];
        const tide_exec_item *it = &f->p->items[items[m]];
        mb->node = it->node;
        mb->ew = f->info[items[m]].ew;
        mb->num_in = it->node->num_inputs;
        mb->expensive = it->expensive;
        fu->cost = mb->ew.cost > fu->cost ? mb->ew.cost : fu->cost;
        for (int i = 0; i < mb->num_in && !*too_big; i++) {
            mb->in[i] = value_of(f, fu, items, count, items[m], i);
            *too_big = mb->in[i] < 0;
        }
    }
    for (int m = 0; m < count; m++) /* members' values after the externals */
        for (int i = 0; i < fu->members[m].num_in; i++)
            if (fu->members[m].in[i] >= TIDE_FUSION_MAX_EXTERNALS)
                fu->members[m].in[i] += fu->num_ext - TIDE_FUSION_MAX_EXTERNALS;
    if (!*too_big)
        *too_big = !allocate_registers(fu);
    if (*too_big) {
        tide__fusion_free(fu);
        return NULL;
    }
    return fu;
}

/* "a, b, c": the members' names (malloc'd). */
static char *members_text(const tide_fusion *fu)
{
    size_t len = 1;
    for (int m = 0; m < fu->num_members; m++)
        len += strlen(fu->members[m].node->name) + 2;
    char *text = malloc(len);
    if (!text)
        return NULL;
    text[0] = 0;
    for (int m = 0; m < fu->num_members; m++) {
        if (m > 0)
            strcat(text, ", ");
        strcat(text, fu->members[m].node->name);
    }
    return text;
}

/* Turns the root's item into the group's: the members take their items' kernels, the item gets the
 * fused kernel over the externals. */
static tide_status make_item(fuser *f, tide_fusion *fu, const int *items, int count)
{
    tide_exec_item *root = &f->p->items[items[count - 1]];
    tide_kernel_node *kn = &root->kn;
    tide_dtype *in_dtypes = malloc(sizeof(tide_dtype) * ((size_t)fu->num_ext + 1));
    const tide_node **refs = calloc((size_t)fu->num_ext + 1, sizeof *refs);
    fu->members_text = members_text(fu);
    if (!in_dtypes || !refs || !fu->members_text) {
        free(in_dtypes);
        free(refs);
        tide__fusion_free(fu);
        return tide_error_set(f->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    bool expensive = false;
    for (int m = 0; m < count; m++) {
        tide_exec_item *it = &f->p->items[items[m]];
        fu->members[m].kn = it->kn;
        it->kn = (tide_kernel_node){0};
        expensive |= it->expensive;
    }
    for (int e = 0; e < fu->num_ext; e++)
        in_dtypes[e] = fu->ext[e].node->out_dtypes[fu->ext[e].index];
    const tide_kernel_node *rk = &fu->members[count - 1].kn;
    *kn = (tide_kernel_node){.name = rk->name, .op = rk->op, .node = rk->node, .attrs = rk->attrs,
                             .kernel = &fused_kernel, .state = fu, .num_inputs = fu->num_ext, .num_outputs = 1,
                             .in_dtypes = in_dtypes, .out_dtypes = rk->out_dtypes, .engine = rk->engine,
                             .device = rk->device, .graph_seed = rk->graph_seed, .ref_sources = refs};
    fu->wiring.id = -1;
    fu->wiring.name = root->node->name;
    fu->wiring.op = root->node->op;
    fu->wiring.num_inputs = fu->num_ext;
    fu->wiring.inputs = fu->ext;
    fu->wiring.num_outputs = 1;
    fu->wiring.out_dtypes = root->node->out_dtypes;
    fu->wiring.out_shapes = root->node->out_shapes;
    root->num_inputs = fu->num_ext;
    root->expensive = expensive;
    root->fused = fu;
    root->fused_members = fu->members_text;
    return TIDE_OK;
}

/* Removes the items marked in `gone` (members but roots), renumbering the rest and the maps. */
static tide_status compact(fuser *f, const bool *gone)
{
    tide_plan *p = f->p;
    int *new_index = malloc(sizeof(int) * ((size_t)p->num_items + 1));
    if (!new_index)
        return tide_error_set(f->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int kept = 0;
    for (int k = 0; k < p->num_items; k++) {
        new_index[k] = k < f->n && gone[k] ? -1 : kept;
        if (new_index[k] >= 0) {
            if (kept != k)
                memcpy(&p->items[kept], &p->items[k], sizeof *p->items);
            kept++;
        }
    }
    int removed = p->num_items - kept;
    /* a member's item: its group's root's (the group's item) */
    for (int k = 0; k < f->n; k++)
        if (gone[k]) {
            int g = f->info[k].group, r = k;
            while (r < f->n && !(f->info[r].group == g && !gone[r]))
                r++;
            new_index[k] = new_index[r];
        }
    for (int id = 0; id < f->a->graph->num_nodes; id++)
        if (f->a->node_item[id] >= 0)
            f->a->node_item[id] = new_index[f->a->node_item[id]];
    for (int i = 0; i < p->num_feeds; i++)
        p->feed_items[i] = new_index[p->feed_items[i]];
    p->num_items = kept;
    f->a->num_node_items -= removed;
    free(new_index);
    return TIDE_OK;
}

/* Whether the run's debugger watches any of the plan's nodes (a step of it may stop). */
static bool debugger_watches_any(const tide_plan *p, const tide_fuse_args *a)
{
    const tide_debugger_slot *d = a->debugger;
    if (!d || !d->entry)
        return false;
    if (!d->d.watches)
        return true;
    if (!tide__entry_enter(d->entry))
        return false; /* detached meanwhile: the next run makes a new plan */
    bool yes = false;
    for (int k = 0; k < a->num_node_items && !yes; k++)
        yes = d->d.watches(d->d.user, p->items[k].node);
    tide__entry_leave(d->entry);
    return yes;
}

tide_status tide__plan_fuse(tide_plan *p, tide_fuse_args *a, tide_error *err)
{
    if (p->control_flow || a->num_node_items < 2 || debugger_watches_any(p, a))
        return TIDE_OK;
    fuser f = {.p = p, .a = a, .n = a->num_node_items, .err = err};
    tide_status st = analyse(&f);
    int members[TIDE_FUSION_MAX_MEMBERS];
    bool *gone = calloc((size_t)f.n + 1, sizeof *gone);
    if (st == TIDE_OK && !gone)
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int groups = 0, fused_nodes = 0;
    for (int r = f.n - 1; st == TIDE_OK && r >= 0; r--) {
        if (!f.info[r].candidate || f.info[r].group >= 0 || !fits(p->items[r].node, &f.info[r].ew,
                                                                    &p->items[r].node->out_shapes[0]))
            continue;
        int count = grow(&f, groups, r, members);
        bool too_big = false;
        tide_fusion *fu = count >= 2 ? make_program(&f, members, count, &too_big) : NULL;
        if (!fu) {
            for (int m = 0; m < count; m++) /* not a group: each stays itself (a root never rejoins) */
                f.info[members[m]].group = m == count - 1 ? -2 : -1;
            if (count >= 2 && !too_big)
                st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            continue;
        }
        st = make_item(&f, fu, members, count);
        for (int m = 0; st == TIDE_OK && m < count - 1; m++)
            gone[members[m]] = true;
        groups++;
        fused_nodes += count;
    }
    if (st == TIDE_OK && groups > 0)
        st = compact(&f, gone);
    if (st == TIDE_OK) {
        p->num_fused_groups = groups;
        p->num_fused_nodes = fused_nodes;
    }
    free(gone);
    free(f.info);
    free(f.consumers);
    return st;
}
