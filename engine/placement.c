/* placement.c — choosing a device for every node of a plan (the contract is in placement.h): device
 * masks of what each node requests and where it has kernels, colocation groups (union-find), the
 * candidate devices of each group with hard errors, conflicts and soft placement, and the three
 * strategies, all of which run the same simulation of one step so that each reports its makespan.
 *
 * Members. The nodes of the plan (positions 0..n-1 of `order`) and, after them, the Variables that
 * their Ref inputs name when those are not in the plan themselves (an Assign run alone still lands
 * where its variable lives). A Variable's device is chosen once, by a placement of the whole graph the
 * first time a plan needs it (place_variables), and kept: its group is pinned there when that device
 * is still a candidate, so every plan that reads, updates or initialises it agrees.
 *
 * Cost. Linear in nodes · devices · inputs: arrays indexed by graph node id and by member replace
 * every search; device sets are bit masks (words per mask: devices / 64 rounded up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"

typedef uint64_t word;

typedef struct placer {
    tide_engine *e;
    const tide_graph *g;
    const int *order;
    const int *canonical;       /* node id -> the id of the node it was merged into (CSE), or NULL */
    int n, m;                   /* nodes in order; members (nodes, then Variables behind Ref inputs) */
    const tide_node **member;
    int *member_of;             /* graph node id -> member, or -1 */
    int *parent;                /* union-find over members */
    int nw;                     /* words per device mask */
    word *req, *ker;            /* per member: devices its request matches / with a kernel for it */
    word *type_mask;            /* per device type: its devices */
    int num_types;
    int *type_of;               /* device -> type */
    int num_groups;
    int *group_of;              /* member -> group, numbered by first appearance */
    int *group_start, *group_list; /* members of group k: group_list[group_start[k] .. group_start[k+1]) */
    word *cand;                 /* per group: its candidate devices */
    word *group_req;            /* per group: the devices every member's request matches */
    bool *soft;                 /* per group: placed softly */
    int *group_dev;             /* per group: chosen device, -1 until chosen */
    int *dev;                   /* per position: device */
    double *finish;             /* per position: simulated finish time */
    double *ready, *start, *type_cost; /* per device, per device, per type (scratch) */
    tide_error *err;
} placer;

/* ---------------------------------------------------------------- small helpers */

static bool bit(const word *mask, int d) { return (mask[d / 64] >> (d % 64)) & 1; }
static void set_bit(word *mask, int d) { mask[d / 64] |= (word)1 << (d % 64); }

static bool empty(const word *mask, int nw)
{
    for (int w = 0; w < nw; w++)
        if (mask[w])
            return false;
    return true;
}

static bool disjoint(const word *a, const word *b, int nw)
{
    for (int w = 0; w < nw; w++)
        if (a[w] & b[w])
            return false;
    return true;
}

static int first_bit(const word *mask, int num_devices)
{
    for (int d = 0; d < num_devices; d++)
        if (bit(mask, d))
            return d;
    return -1;
}

static int count_bits(const word *mask, int nw)
{
    int c = 0;
    for (int w = 0; w < nw; w++)
        c += __builtin_popcountll(mask[w]);
    return c;
}

static int nth_bit(const word *mask, int num_devices, int nth)
{
    for (int d = 0; d < num_devices; d++)
        if (bit(mask, d) && nth-- == 0)
            return d;
    return -1;
}

static bool is_variable(const tide_node *n) { return strcmp(n->op->name, "Variable") == 0; }

/* " with T=int32" for an op with a type attr T, else "". */
static const char *dtype_note(const tide_node *n, char *buf, size_t size)
{
    tide_dtype t;
    buf[0] = 0;
    if (tide_attrs_get_type(n->attrs, "T", &t) || tide_attrs_get_type(n->attrs, "dtype", &t))
        snprintf(buf, size, " with %s=%s", tide_attrs_type(n->attrs, "T") ? "T" : "dtype", tide_dtype_name(t));
    return buf;
}

/* "name, name, ..." of the engine's devices; malloc'd (NULL when out of memory). */
static char *device_list(const tide_engine *e)
{
    size_t len = 1;
    for (int i = 0; i < e->num_devices; i++)
        len += strlen(e->devices[i].name) + 2;
    char *s = malloc(len);
    if (!s)
        return NULL;
    size_t at = 0;
    s[0] = 0;
    for (int i = 0; i < e->num_devices; i++)
        at += (size_t)snprintf(s + at, len - at, "%s%s", i ? ", " : "", e->devices[i].name);
    return s;
}

static int find_root(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]]; /* path halving */
        x = parent[x];
    }
    return x;
}

static void unite(int *parent, int a, int b)
{
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* the earlier member is the root */
}

/* ---------------------------------------------------------------- memory */

static void placer_free(placer *p)
{
    void *arrays[] = {p->member, p->member_of, p->parent, p->req, p->ker, p->type_mask, p->type_of,
                      p->group_of, p->group_start, p->group_list, p->cand, p->group_req, p->soft, p->group_dev,
                      p->dev, p->finish, p->ready, p->start, p->type_cost};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(arrays[i]);
}

/* Zeroed room for count items (at least one); clears *ok when out of memory. */
static void *alloc(size_t count, size_t size, bool *ok)
{
    void *x = calloc(count + 1, size);
    if (!x)
        *ok = false;
    return x;
}

/* Device types (devices of one type share a kernel lookup and a cost estimate) and per-device arrays. */
static bool init_devices(placer *p)
{
    tide_engine *e = p->e;
    bool ok = true;
    p->nw = (e->num_devices + 63) / 64;
    p->type_of = alloc((size_t)e->num_devices, sizeof *p->type_of, &ok);
    p->type_mask = alloc((size_t)e->num_devices * (size_t)p->nw, sizeof(word), &ok);
    p->ready = alloc((size_t)e->num_devices, sizeof(double), &ok);
    p->start = alloc((size_t)e->num_devices, sizeof(double), &ok);
    p->type_cost = alloc((size_t)e->num_devices, sizeof(double), &ok);
    if (!ok)
        return false;
    for (int d = 0; d < e->num_devices; d++) {
        p->type_of[d] = p->num_types;
        for (int before = 0; before < d; before++)
            if (strcmp(e->devices[before].type, e->devices[d].type) == 0) {
                p->type_of[d] = p->type_of[before];
                break;
            }
        if (p->type_of[d] == p->num_types)
            p->num_types++;
        set_bit(&p->type_mask[p->type_of[d] * p->nw], d);
    }
    return true;
}

/* The name of device type t ("cpu"). */
static const char *type_name(const placer *p, int t)
{
    return p->e->devices[first_bit(&p->type_mask[t * p->nw], p->e->num_devices)].type;
}

/* ---------------------------------------------------------------- step 0: members */

static tide_status collect_members(placer *p)
{
    const tide_graph *g = p->g;
    bool ok = true;
    p->member_of = alloc((size_t)g->num_nodes, sizeof(int), &ok);
    if (!ok)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    for (int i = 0; i < g->num_nodes; i++)
        p->member_of[i] = -1;
    size_t refs = 0;
    for (int k = 0; k < p->n; k++) {
        int id = p->order[k];
        if (id < 0 || id >= g->num_nodes || p->member_of[id] >= 0)
            return tide_error_set(p->err, TIDE_INVALID_ARGUMENT,
                                  "placement: entry %d of the order (%d) is not a node of the graph or comes twice",
                                  k, id);
        p->member_of[id] = k;
        const tide_node *node = g->nodes[id];
        for (int a = 0; a < node->op->num_inputs; a++)
            if (node->op->inputs[a].is_ref)
                refs += (size_t)(node->arg_start[a + 1] - node->arg_start[a]);
    }
    p->member = alloc((size_t)p->n + refs, sizeof *p->member, &ok);
    if (!ok)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    for (int k = 0; k < p->n; k++)
        p->member[k] = g->nodes[p->order[k]];
    p->m = p->n;
    for (int k = 0; k < p->n; k++) {
        const tide_node *node = p->member[k];
        for (int i = 0; i < node->num_inputs; i++)
            if (tide__input_is_ref(node, i) && p->member_of[node->inputs[i].node->id] < 0) {
                p->member_of[node->inputs[i].node->id] = p->m;
                p->member[p->m++] = node->inputs[i].node;
            }
    }
    for (int id = 0; p->canonical && id < g->num_nodes; id++) { /* merged twins read as their canonical node */
        int c = p->canonical[id];
        if (c >= 0 && c != id && p->member_of[id] < 0 && p->member_of[c] >= 0)
            p->member_of[id] = p->member_of[c];
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- step 1: requests and kernels */

static tide_status no_such_device(placer *p, const tide_node *node)
{
    char *have = device_list(p->e);
    tide_error_set(p->err, TIDE_INVALID_ARGUMENT,
                   "node '%s' (%s) requests device '%s', which matches none of this engine's devices (%s)",
                   node->name, node->op->name, node->requested_device, have ? have : "?");
    free(have);
    return TIDE_INVALID_ARGUMENT;
}

static tide_status request_mask(placer *p, int j, const char **last, int *last_j)
{
    const tide_node *node = p->member[j];
    const char *r = node->requested_device ? node->requested_device : "";
    word *mask = &p->req[(size_t)j * (size_t)p->nw];
    if (!r[0]) {
        for (int d = 0; d < p->e->num_devices; d++)
            set_bit(mask, d);
        return TIDE_OK;
    }
    if (*last && strcmp(r, *last) == 0) { /* most requests repeat the one before (scopes) */
        memcpy(mask, &p->req[(size_t)*last_j * (size_t)p->nw], sizeof(word) * (size_t)p->nw);
        return TIDE_OK;
    }
    tide_device_spec spec;
    tide_status st = tide_device_spec_parse(r, &spec, p->err);
    if (st != TIDE_OK) {
        tide__error_prefix(p->err, "node '%s' (%s)", node->name, node->op->name);
        return st;
    }
    for (int d = 0; d < p->e->num_devices; d++)
        if (tide_device_spec_matches(&spec, &p->e->devices[d].spec))
            set_bit(mask, d);
    if (empty(mask, p->nw))
        return no_such_device(p, node);
    *last = r;
    *last_j = j;
    return TIDE_OK;
}

static tide_status member_masks(placer *p)
{
    bool ok = true;
    size_t words = (size_t)p->m * (size_t)p->nw;
    p->req = alloc(words, sizeof(word), &ok);
    p->ker = alloc(words, sizeof(word), &ok);
    if (!ok)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    const char *last = NULL;
    int last_j = 0;
    for (int j = 0; j < p->m; j++) {
        tide_status st = request_mask(p, j, &last, &last_j);
        if (st != TIDE_OK)
            return st;
        const tide_node *node = p->member[j];
        word *ker = &p->ker[(size_t)j * (size_t)p->nw];
        for (int t = 0; t < p->num_types; t++) {
            const word *tm = &p->type_mask[t * p->nw];
            if (tide__registry_kernel(node->op, type_name(p, t), node->attrs))
                for (int w = 0; w < p->nw; w++)
                    ker[w] |= tm[w];
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- step 2: colocation groups */

static const tide_node *colocation_target(placer *p, const tide_node *node, tide_status *st)
{
    *st = TIDE_OK;
    if (tide_attrs_type(node->attrs, "_colocate_with") == TIDE_ATTR_NONE)
        return NULL;
    const char *name = NULL;
    if (!tide_attrs_get_string(node->attrs, "_colocate_with", &name)) {
        *st = tide_error_set(p->err, TIDE_INVALID_ARGUMENT,
                             "node '%s' (%s): attr _colocate_with must be a string (a node's name), got a %s",
                             node->name, node->op->name,
                             tide__attr_type_name(tide_attrs_type(node->attrs, "_colocate_with")));
        return NULL;
    }
    tide_graph *g = (tide_graph *)p->g; /* the lock guards the name table against growth */
    pthread_mutex_lock(&g->lock);
    const tide_node *target = tide__names_get(g->names, name);
    pthread_mutex_unlock(&g->lock);
    if (!target)
        *st = tide_error_set(p->err, TIDE_INVALID_ARGUMENT,
                             "node '%s' (%s) has _colocate_with = '%s', but the graph has no node '%s'",
                             node->name, node->op->name, name, name);
    return target;
}

/* A loop variable's Merge stays with its non-constant Enter and its NextIteration: their values reach
 * only some iterations, so they must not cross devices (plan_frames.c). */
static bool loop_variable_edge(const tide_node *node, int i)
{
    if (!(node->op->flags & TIDE_OP_CONTROL_FLOW) || strcmp(node->op->name, "Merge") != 0)
        return false;
    const tide_node *src = node->inputs[i].node;
    bool constant = false;
    if (strcmp(src->op->name, "NextIteration") == 0)
        return true;
    return strcmp(src->op->name, "Enter") == 0 && (!tide_attrs_get_bool(src->attrs, "is_constant", &constant) || !constant);
}

static tide_status make_groups(placer *p)
{
    bool ok = true;
    p->parent = alloc((size_t)p->m, sizeof(int), &ok);
    p->group_of = alloc((size_t)p->m, sizeof(int), &ok);
    p->group_start = alloc((size_t)p->m + 1, sizeof(int), &ok);
    p->group_list = alloc((size_t)p->m, sizeof(int), &ok);
    if (!ok)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    for (int j = 0; j < p->m; j++)
        p->parent[j] = j;
    for (int k = 0; k < p->n; k++) {
        const tide_node *node = p->member[k];
        for (int i = 0; i < node->num_inputs; i++)
            if ((tide__input_is_ref(node, i) || loop_variable_edge(node, i)) && p->member_of[node->inputs[i].node->id] >= 0)
                unite(p->parent, k, p->member_of[node->inputs[i].node->id]);
        tide_status st;
        const tide_node *target = colocation_target(p, node, &st);
        if (st != TIDE_OK)
            return st;
        if (target && p->member_of[target->id] >= 0)
            unite(p->parent, k, p->member_of[target->id]);
    }
    /* Roots are the earliest member of their group, so numbering roots in member order numbers the
     * groups by first appearance in topological order. group_of[root] holds its group meanwhile. */
    p->num_groups = 0;
    for (int j = 0; j < p->m; j++) {
        int r = find_root(p->parent, j);
        p->group_of[j] = r == j ? p->num_groups++ : p->group_of[r];
        p->group_start[p->group_of[j] + 1]++;
    }
    for (int k = 0; k < p->num_groups; k++)
        p->group_start[k + 1] += p->group_start[k];
    int *fill = p->parent; /* union-find is done: reuse as fill counters */
    memcpy(fill, p->group_start, sizeof(int) * (size_t)p->num_groups);
    for (int j = 0; j < p->m; j++)
        p->group_list[fill[p->group_of[j]]++] = j;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- step 3: candidates */

/* Why nodes a and b are in one group, for messages; returns buf. */
static const char *tie_reason(const tide_node *a, const tide_node *b, char *buf, size_t size)
{
    const tide_node *pair[2][2] = {{a, b}, {b, a}};
    for (int k = 0; k < 2; k++) {
        const tide_node *x = pair[k][0], *y = pair[k][1];
        const char *s;
        for (int i = 0; i < x->num_inputs; i++)
            if (tide__input_is_ref(x, i) && x->inputs[i].node == y) {
                snprintf(buf, size, "'%s' updates '%s' in place through a Ref input", x->name, y->name);
                return buf;
            }
        if (tide_attrs_get_string(x->attrs, "_colocate_with", &s) && strcmp(s, y->name) == 0) {
            snprintf(buf, size, "'%s' has _colocate_with = '%s'", x->name, y->name);
            return buf;
        }
    }
    snprintf(buf, size, "Ref inputs, _colocate_with and loop variables (a Merge with its Enter and NextIteration) "
                        "put them in one colocation group");
    return buf;
}

/* Members of group k before position `upto` in its list: the first whose mask (in masks) is disjoint
 * from member j's, else the first with a request of its own, else the first. */
static int culprit(const placer *p, int k, int upto, int j, const word *masks)
{
    int with_request = -1;
    for (int at = p->group_start[k]; at < upto; at++) {
        int i = p->group_list[at];
        if (disjoint(&masks[(size_t)i * (size_t)p->nw], &masks[(size_t)j * (size_t)p->nw], p->nw))
            return i;
        if (with_request < 0 && p->member[i]->requested_device[0])
            with_request = i;
    }
    return with_request >= 0 ? with_request : p->group_list[p->group_start[k]];
}

static tide_status conflict(placer *p, int k, int upto, int j)
{
    const tide_node *b = p->member[j], *a = p->member[culprit(p, k, upto, j, p->req)];
    char why[600];
    return tide_error_set(p->err, TIDE_INVALID_ARGUMENT,
                          "node '%s' (%s) requests '%s' and node '%s' (%s) requests '%s', but they must be on one "
                          "device (%s) and no device matches both requests",
                          a->name, a->op->name, a->requested_device[0] ? a->requested_device : "any device",
                          b->name, b->op->name, b->requested_device[0] ? b->requested_device : "any device",
                          tie_reason(a, b, why, sizeof why));
}

static tide_status no_kernel(placer *p, int k, int upto, int j)
{
    const tide_node *b = p->member[j];
    char note[64], types[128] = "";
    size_t at = 0;
    for (int t = 0; t < p->num_types && at < sizeof types; t++)
        at += (size_t)snprintf(types + at, sizeof types - at, "%s%s", t ? ", " : "", type_name(p, t));
    if (empty(&p->ker[(size_t)j * (size_t)p->nw], p->nw))
        return tide_error_set(p->err, TIDE_UNIMPLEMENTED,
                              "node '%s' (%s): no kernel for %s%s on any device type of this engine (%s)", b->name,
                              b->op->name, b->op->name, dtype_note(b, note, sizeof note), types);
    const tide_node *a = p->member[culprit(p, k, upto, j, p->ker)];
    char why[600];
    return tide_error_set(p->err, TIDE_UNIMPLEMENTED,
                          "node '%s' (%s) and node '%s' (%s) must be on one device (%s), but no device type of this "
                          "engine (%s) has kernels for both", a->name, a->op->name, b->name, b->op->name,
                          tie_reason(a, b, why, sizeof why), types);
}

static tide_status candidates(placer *p)
{
    bool ok = true;
    int nw = p->nw;
    p->cand = alloc((size_t)p->num_groups * (size_t)nw, sizeof(word), &ok);
    p->group_req = alloc((size_t)p->num_groups * (size_t)nw, sizeof(word), &ok);
    p->soft = alloc((size_t)p->num_groups, sizeof(bool), &ok);
    word *ker = alloc((size_t)nw, sizeof(word), &ok);
    tide_status st = ok ? TIDE_OK : tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing nodes");
    for (int k = 0; st == TIDE_OK && k < p->num_groups; k++) {
        word *req = &p->group_req[(size_t)k * (size_t)nw];
        memset(req, 0xff, sizeof(word) * (size_t)nw);
        memset(ker, 0xff, sizeof(word) * (size_t)nw);
        for (int at = p->group_start[k]; st == TIDE_OK && at < p->group_start[k + 1]; at++) {
            int j = p->group_list[at];
            for (int w = 0; w < nw; w++) {
                req[w] &= p->req[(size_t)j * (size_t)nw + (size_t)w];
                ker[w] &= p->ker[(size_t)j * (size_t)nw + (size_t)w];
            }
            if (empty(req, nw))
                st = conflict(p, k, at, j);
            else if (empty(ker, nw))
                st = no_kernel(p, k, at, j);
        }
        word *cand = &p->cand[(size_t)k * (size_t)nw];
        for (int w = 0; w < nw; w++)
            cand[w] = req[w] & ker[w];
        if (st == TIDE_OK && empty(cand, nw)) { /* the requested devices lack a kernel: soft placement */
            memcpy(cand, ker, sizeof(word) * (size_t)nw);
            p->soft[k] = true;
        }
    }
    free(ker);
    return st;
}

/* ---------------------------------------------------------------- step 4: strategies and simulation */

typedef struct sim_args {
    tide_placement_kind strategy;
    const tide_cost_model *model;
    const tide_cost_table *table;
    bool (*fed)(void *arg, const tide_node *node, int output);
    void *fed_arg;
} sim_args;

/* p->start[d] = when node k could start on device d: d free and every input arrived there. */
/* The plan inputs of node k that count as edges (not Ref, not fed): their positions, -1 otherwise. */
static int input_pos(const placer *p, const sim_args *a, int k, int i)
{
    const tide_node *node = p->member[k];
    const tide_node *src;
    if (i < node->num_inputs) {
        tide_output in = node->inputs[i];
        if (tide__input_is_ref(node, i) || (a->fed && a->fed(a->fed_arg, in.node, in.index)))
            return -1;
        src = in.node;
    } else {
        src = node->control[i - node->num_inputs];
    }
    int pos = p->member_of[src->id];
    return pos >= 0 && pos < p->n ? pos : -1;
}

/* What a copy into or out of device d's memory adds to a transfer (0 for host memory). */
static double copy_cost(const tide_device *d, double bytes)
{
    if (d->host_visible)
        return 0;
    const tide_device_cost *c = &d->ops->cost;
    return c->copy_latency_s + (c->copy_bytes_per_s > 0 ? bytes / c->copy_bytes_per_s : 0);
}

static void start_times(placer *p, const sim_args *a, int k)
{
    const tide_node *node = p->member[k];
    int nd = p->e->num_devices;
    memcpy(p->start, p->ready, sizeof(double) * (size_t)nd);
    for (int i = 0; i < node->num_inputs + node->num_control; i++) {
        int pos = input_pos(p, a, k, i); /* a Ref names a variable; a fed tensor is there at time 0 */
        if (pos < 0 || p->dev[pos] < 0)
            continue; /* no edge, or a deferred source (it goes where k goes) */
        double bytes = i < node->num_inputs ? tide__output_bytes(node->inputs[i].node, node->inputs[i].index) : 0;
        double t = p->finish[pos], xfer = a->model->transfer_latency_s;
        if (a->model->transfer_bytes_per_s > 0)
            xfer += bytes / a->model->transfer_bytes_per_s;
        double out_of = copy_cost(&p->e->devices[p->dev[pos]], bytes);
        for (int d = 0; d < nd; d++) {
            double arrive = d == p->dev[pos] ? t : t + xfer + out_of + copy_cost(&p->e->devices[d], bytes);
            if (arrive > p->start[d])
                p->start[d] = arrive;
        }
    }
}

/* Compute time of node k on device d (one estimate per device type and node). */
static double cost_on(placer *p, const sim_args *a, int k, int d)
{
    double *c = &p->type_cost[p->type_of[d]];
    if (*c < 0)
        *c = tide__cost_estimate(a->model, a->table, p->member[k], &p->e->devices[d]);
    return *c;
}

static int pinned_device(const placer *p, int k)
{
    const word *cand = &p->cand[(size_t)k * (size_t)p->nw];
    for (int at = p->group_start[k]; at < p->group_start[k + 1]; at++) {
        const tide_node *v = p->member[p->group_list[at]];
        const char *placed = is_variable(v) && atomic_load(&((tide_node *)v)->placement_fixed)
                                 ? atomic_load(&((tide_node *)v)->assigned_device) : NULL;
        for (int d = 0; placed && d < p->e->num_devices; d++)
            if (placed == p->e->devices[d].name && bit(cand, d)) /* pointer identity: this engine's */
                return d;
    }
    return -1;
}

static int choose(placer *p, const sim_args *a, int k, int group)
{
    const word *cand = &p->cand[(size_t)group * (size_t)p->nw];
    int nd = p->e->num_devices;
    if (a->strategy == TIDE_PLACEMENT_NAIVE)
        return first_bit(cand, nd);
    if (a->strategy == TIDE_PLACEMENT_ROUND_ROBIN)
        return nth_bit(cand, nd, group % count_bits(cand, p->nw));
    int best = -1;
    double best_finish = 0;
    for (int d = 0; d < nd; d++)
        if (bit(cand, d)) {
            double f = p->start[d] + cost_on(p, a, k, d);
            if (best < 0 || f < best_finish) {
                best = d;
                best_finish = f;
            }
        }
    return best;
}

/* A source (no inputs at all: a Variable, a constant) of a group without a
 * device yet is not placed when the greedy walk meets it (every device would look equally good, so
 * sources would be spread by load alone): it goes where its first consumer goes (the white paper's
 * placer colocates such generators with their consumers). */
static bool deferrable(const placer *p, const sim_args *a, int k)
{
    int group = p->group_of[k];
    if (a->strategy != TIDE_PLACEMENT_GREEDY || p->group_dev[group] >= 0 ||
        count_bits(&p->cand[(size_t)group * (size_t)p->nw], p->nw) < 2)
        return false; /* placed, or only one device fits it anyway */
    const tide_node *node = p->member[k];
    return node->num_inputs == 0 && node->num_control == 0; /* fed inputs do not make a source */
}

/* The device of deferred source j, once a consumer went to device d (or, with no consumer, the first
 * candidate of its group that is ready soonest). */
static void settle(placer *p, int j, int d)
{
    int group = p->group_of[j];
    const word *cand = &p->cand[(size_t)group * (size_t)p->nw];
    if (p->group_dev[group] < 0) {
        if (d < 0 || !bit(cand, d)) {
            d = -1;
            for (int x = 0; x < p->e->num_devices; x++)
                if (bit(cand, x) && (d < 0 || p->ready[x] < p->ready[d]))
                    d = x;
        }
        p->group_dev[group] = d;
    }
    p->dev[j] = p->group_dev[group];
    p->finish[j] = 0;
}

static tide_status simulate(placer *p, const sim_args *a, double *makespan)
{
    bool ok = true;
    p->group_dev = alloc((size_t)p->num_groups, sizeof(int), &ok);
    p->dev = alloc((size_t)p->n, sizeof(int), &ok);
    p->finish = alloc((size_t)p->n, sizeof(double), &ok);
    if (!ok)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    for (int k = 0; k < p->num_groups; k++)
        p->group_dev[k] = pinned_device(p, k);
    *makespan = 0;
    for (int k = 0; k < p->n; k++) {
        for (int t = 0; t < p->num_types; t++)
            p->type_cost[t] = -1;
        int group = p->group_of[k];
        if (deferrable(p, a, k)) {
            p->dev[k] = -1;
            p->finish[k] = 0;
            continue;
        }
        start_times(p, a, k);
        if (p->group_dev[group] < 0)
            p->group_dev[group] = choose(p, a, k, group);
        int d = p->group_dev[group];
        p->dev[k] = d;
        p->finish[k] = p->start[d] + cost_on(p, a, k, d);
        p->ready[d] = p->finish[k];
        if (p->finish[k] > *makespan)
            *makespan = p->finish[k];
        const tide_node *node = p->member[k];
        for (int i = 0; i < node->num_inputs + node->num_control; i++) {
            int j = input_pos(p, a, k, i);
            if (j >= 0 && p->dev[j] < 0)
                settle(p, j, d);
        }
    }
    for (int k = 0; k < p->n; k++) /* sources no consumer in the plan claimed */
        if (p->dev[k] < 0)
            settle(p, k, -1);
    return TIDE_OK;
}

/* Whether node k's kernel on device d reads input i in host memory (engine/host_inputs.c). */
static bool reads_on_host(const placer *p, int k, int d, int i)
{
    const tide_device *dev = &p->e->devices[d];
    if (dev->host_visible)
        return false;
    const tide_node *node = p->member[k];
    return tide__kernel_host_input(tide__registry_kernel(node->op, dev->type, node->attrs), dev, node, i);
}

/* A constant placed on an accelerator whose every consumer in the plan reads it in host memory there (an
 * axis, a shape, Dropout's rate: engine/host_inputs.c) runs on the host (device 0) instead, whatever its
 * request, as TensorFlow keeps such constants in host memory: its value then reaches the kernels with
 * neither a copy into the device nor one back (the plan's host-memory inputs). A constant alone in its
 * colocation group only, with a kernel on device 0. */
static void keep_constants_on_host(placer *p, const sim_args *a)
{
    signed char *state = malloc((size_t)p->n + 1); /* per position: 1 read on the host, 0 not yet, -1 no */
    if (!state)
        return; /* out of memory: the constants stay where they are (correct, with copies) */
    for (int j = 0; j < p->n; j++) {
        int group = p->group_of[j];
        bool candidate = strcmp(p->member[j]->op->name, "Const") == 0 && p->dev[j] > 0 &&
                         !p->e->devices[p->dev[j]].host_visible && bit(&p->ker[(size_t)j * (size_t)p->nw], 0) &&
                         p->group_start[group + 1] - p->group_start[group] == 1;
        state[j] = candidate ? 0 : -1;
    }
    for (int k = 0; k < p->n; k++) {
        const tide_node *node = p->member[k];
        for (int i = 0; i < node->num_inputs; i++) {
            int j = input_pos(p, a, k, i);
            if (j >= 0 && state[j] >= 0)
                state[j] = p->dev[k] == p->dev[j] && reads_on_host(p, k, p->dev[k], i) ? 1 : -1;
        }
    }
    for (int j = 0; j < p->n; j++)
        if (state[j] == 1)
            p->dev[j] = p->group_dev[p->group_of[j]] = 0;
    free(state);
}

/* ---------------------------------------------------------------- results */

/* The warning for member j of a softly placed group whose request its device does not match. */
static char *soft_warning(const placer *p, int group, int j, const tide_device *placed)
{
    const tide_node *node = p->member[j];
    /* A device all requests of the group match; some member has no kernel of its type. */
    int rd = first_bit(&p->group_req[(size_t)group * (size_t)p->nw], p->e->num_devices);
    const word *tm = &p->type_mask[p->type_of[rd] * p->nw];
    int lacking = j; /* j itself when it lacks the kernel, else the first member that does */
    for (int at = p->group_start[group];
         at < p->group_start[group + 1] && !disjoint(&p->ker[(size_t)lacking * (size_t)p->nw], tm, p->nw); at++)
        lacking = p->group_list[at];
    const tide_node *l = p->member[lacking];
    char note[64];
    if (l == node)
        return tide__asprintf("node '%s' (%s) requested '%s' (no %s kernel for %s%s): placed on %s", node->name,
                              node->op->name, node->requested_device, p->e->devices[rd].type, l->op->name,
                              dtype_note(l, note, sizeof note), placed->name);
    return tide__asprintf("node '%s' (%s) requested '%s' (no %s kernel for %s%s of node '%s', which it is "
                          "colocated with): placed on %s", node->name, node->op->name, node->requested_device,
                          p->e->devices[rd].type, l->op->name, dtype_note(l, note, sizeof note), l->name,
                          placed->name);
}

/* Is member j softly placed away from its own request? */
static bool warned(const placer *p, int j)
{
    int group = p->group_of[j];
    return p->soft[group] && p->member[j]->requested_device[0] &&
           !bit(&p->req[(size_t)j * (size_t)p->nw], p->group_dev[group]);
}

static tide_status fill_result(placer *p, tide_placement *out)
{
    int num_warnings = 0;
    for (int j = 0; j < p->m; j++)
        num_warnings += warned(p, j);
    out->device = malloc(sizeof *out->device * ((size_t)p->n + 1));
    out->warnings = calloc((size_t)num_warnings + 1, sizeof *out->warnings);
    if (!out->device || !out->warnings)
        return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
    for (int k = 0; k < p->n; k++)
        out->device[k] = &p->e->devices[p->dev[k]];
    /* Group by group, so that a group's warnings stand together. */
    for (int group = 0; group < p->num_groups && num_warnings > 0; group++)
        for (int at = p->group_start[group]; at < p->group_start[group + 1]; at++) {
            int j = p->group_list[at];
            if (!warned(p, j))
                continue;
            char *text = soft_warning(p, group, j, &p->e->devices[p->group_dev[group]]);
            if (!text)
                return tide_error_set(p->err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing %d nodes", p->n);
            out->warnings[out->num_warnings++] = text;
        }
    return TIDE_OK;
}

static void record_assignments(const placer *p)
{
    for (int j = 0; j < p->m; j++) {
        int d = p->group_dev[p->group_of[j]];
        atomic_store(&((tide_node *)p->member[j])->assigned_device, (const char *)p->e->devices[d].name);
        if (is_variable(p->member[j])) /* placed once for good: every later plan agrees (bug 7) */
            atomic_store(&((tide_node *)p->member[j])->placement_fixed, true);
    }
}

/* ---------------------------------------------------------------- variables: one device for good */

static bool is_initializer(const tide_node *n)
{
    bool on = false;
    return tide_attrs_get_bool(n->attrs, "_initializer", &on) && on;
}

static bool has_unplaced_variable(const placer *p)
{
    for (int j = 0; j < p->m; j++)
        if (is_variable(p->member[j]) && !atomic_load(&((tide_node *)p->member[j])->placement_fixed))
            return true;
    return false;
}

/* The device of a Variable is chosen once, and every plan then places the ops that read or update it
 * around it: the initialisation plan, the training plan and any other agree (bug 7: a variable was
 * initialised on /cpu:1 and read on /cpu:0). An initialisation plan alone cannot choose well (it only
 * assigns: nothing in it says where the variable is used), so the first plan that meets a Variable
 * without a device places the whole graph but its initializers, as the white paper's placer places
 * the graph: each Variable goes where its readers and updates go. Only the Variables' devices are
 * kept. When the whole graph cannot be placed (a node elsewhere that no device runs), the plan at
 * hand decides (record_assignments keeps what it chose). */
static void place_variables(tide_engine *e, const tide_graph *g, const sim_args *a)
{
    int *order = malloc(sizeof *order * ((size_t)g->num_nodes + 1));
    if (!order)
        return;
    int n = 0;
    for (int id = 0; id < g->num_nodes; id++)
        if (!is_initializer(g->nodes[id]))
            order[n++] = id;
    placer q = {.e = e, .g = g, .order = order, .n = n};
    double makespan = 0;
    tide_status st = init_devices(&q) ? TIDE_OK : TIDE_RESOURCE_EXHAUSTED;
    if (st == TIDE_OK)
        st = collect_members(&q);
    if (st == TIDE_OK)
        st = member_masks(&q);
    if (st == TIDE_OK)
        st = make_groups(&q);
    if (st == TIDE_OK)
        st = candidates(&q);
    if (st == TIDE_OK)
        st = simulate(&q, a, &makespan);
    for (int j = 0; st == TIDE_OK && j < q.m; j++) {
        tide_node *v = (tide_node *)q.member[j];
        if (is_variable(v) && !atomic_load(&v->placement_fixed)) {
            atomic_store(&v->assigned_device, (const char *)e->devices[q.group_dev[q.group_of[j]]].name);
            atomic_store(&v->placement_fixed, true);
        }
    }
    placer_free(&q);
    free(order);
}

static tide_status check_args(tide_engine *e, const tide_graph *g, const int *order, int n,
                              tide_placement_kind strategy, tide_error *err)
{
    if (!e || !g || n < 0 || (n > 0 && !order))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "placement: missing engine, graph or order");
    if (strategy != TIDE_PLACEMENT_GREEDY && strategy != TIDE_PLACEMENT_NAIVE && strategy != TIDE_PLACEMENT_ROUND_ROBIN)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "placement: unknown strategy %d", (int)strategy);
    if (e->num_devices < 1)
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "placement: the engine has no devices");
    return TIDE_OK;
}

tide_status tide__place(tide_engine *e, const tide_graph *g, const int *order, int n, const int *canonical,
                        bool (*fed)(void *arg, const tide_node *node, int output), void *fed_arg,
                        tide_placement_kind strategy, const tide_cost_model *model,
                        const tide_cost_table *table, tide_placement *out, tide_error *err)
{
    memset(out, 0, sizeof *out);
    tide_status st = check_args(e, g, order, n, strategy, err);
    if (st != TIDE_OK)
        return st;
    tide_cost_model default_model;
    if (!model) {
        tide__cost_model_default(&default_model);
        model = &default_model;
    }
    placer p = {.e = e, .g = g, .order = order, .canonical = canonical, .n = n, .err = err};
    sim_args a = {strategy, model, table, fed, fed_arg};
    double makespan = 0;
    st = init_devices(&p) ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory placing nodes");
    if (st == TIDE_OK)
        st = collect_members(&p);
    if (st == TIDE_OK && e->num_devices > 1 && has_unplaced_variable(&p))
        place_variables(e, g, &a);
    if (st == TIDE_OK)
        st = member_masks(&p);
    if (st == TIDE_OK)
        st = make_groups(&p);
    if (st == TIDE_OK)
        st = candidates(&p);
    if (st == TIDE_OK)
        st = simulate(&p, &a, &makespan);
    if (st == TIDE_OK && e->num_devices > e->num_cpu_devices)
        keep_constants_on_host(&p, &a);
    if (st == TIDE_OK)
        st = fill_result(&p, out);
    if (st == TIDE_OK) {
        out->simulated_s = makespan;
        record_assignments(&p);
    } else {
        tide__placement_clear(out);
    }
    placer_free(&p);
    return st;
}

void tide__placement_clear(tide_placement *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->num_warnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->device);
    memset(p, 0, sizeof *p);
}
