/* cost_model.c — how long a node takes, for the placer (placement.h): an estimate from the node's
 * inferred shapes (FLOPs over the device's speed, bytes read and written over its memory bandwidth,
 * plus a fixed per-node overhead), replaced by a measured time when the engine has recorded one for
 * the node's name (the cost table: a thread-safe hash table of exponential moving averages).
 *
 * FLOPs by op family (unknown dimensions and unknown ranks count as 1):
 *   MatMul                 2·m·n·k (k the inner dimension, after transpose_a)
 *   BatchMatMul(V2)        2·(output elements)·k
 *   Conv2D                 2·(output elements)·kh·kw·cin       (filter [kh, kw, cin, cout])
 *   Conv2DBackprop*        2·(out_backprop elements)·kh·kw·cin (the forward convolution's work)
 *   pooling (and grads)    (pooled elements)·kh·kw
 *   reductions             one per input element
 *   free ops               none, and no bytes either: Const, Placeholder, Variable, NoOp and the
 *                          views (Identity, StopGradient, Reshape, ExpandDims, Squeeze)
 *   everything else        element-wise: one per output element (all outputs)
 * Bytes: every input (Ref inputs too: the update reads the variable) plus every output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"

void tide__cost_model_default(tide_cost_model *m)
{
    m->flops_per_s = 20e9;
    m->bytes_per_s = 10e9;
    m->node_overhead_s = 1e-6;
    m->transfer_latency_s = 20e-6; /* a hand-over between two devices' threads: 7-57 us measured (docs/devices.md) */
    m->transfer_bytes_per_s = 0; /* virtual CPU devices share memory: nothing is copied */
}

/* ---------------------------------------------------------------- the cost table */

#define EMA_WEIGHT 0.25 /* weight of a new measurement in the moving average */

/* One measured node; the table's index (engine/names.c) borrows its name as the key. */
typedef struct cost_entry {
    struct cost_entry *next; /* every entry, for freeing */
    double seconds;
    char name[];
} cost_entry;

struct tide_cost_table {
    pthread_rwlock_t lock;
    tide_name_table *index; /* name -> cost_entry */
    cost_entry *all;
};

tide_cost_table *tide__cost_table_new(void)
{
    tide_cost_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->index = tide__names_new();
    if (!t->index || pthread_rwlock_init(&t->lock, NULL) != 0) {
        tide__names_free(t->index);
        free(t);
        return NULL;
    }
    return t;
}

void tide__cost_table_free(tide_cost_table *t)
{
    if (!t)
        return;
    for (cost_entry *e = t->all, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    tide__names_free(t->index);
    pthread_rwlock_destroy(&t->lock);
    free(t);
}

void tide__cost_record(tide_cost_table *t, const char *name, double seconds)
{
    if (!t || !name || !(seconds >= 0) || isinf(seconds))
        return;
    pthread_rwlock_wrlock(&t->lock);
    cost_entry *e = tide__names_get(t->index, name);
    if (e) {
        e->seconds += EMA_WEIGHT * (seconds - e->seconds);
    } else if ((e = malloc(sizeof *e + strlen(name) + 1))) { /* out of memory: the estimate stays */
        strcpy(e->name, name);
        e->seconds = seconds;
        e->next = t->all;
        t->all = e;
        tide__names_put(t->index, e->name, e);
    }
    pthread_rwlock_unlock(&t->lock);
}

double tide__cost_measured(const tide_cost_table *t, const char *name)
{
    if (!t || !name)
        return -1;
    tide_cost_table *mt = (tide_cost_table *)t; /* the lock is the only mutable part */
    pthread_rwlock_rdlock(&mt->lock);
    const cost_entry *e = tide__names_get(t->index, name);
    double v = e ? e->seconds : -1;
    pthread_rwlock_unlock(&mt->lock);
    return v;
}

/* ---------------------------------------------------------------- estimates */

typedef enum op_kind {
    KIND_ELEMENTWISE = 0,
    KIND_FREE,
    KIND_MATMUL,
    KIND_BATCH_MATMUL,
    KIND_CONV,
    KIND_CONV_BACKPROP,
    KIND_POOL,
    KIND_POOL_GRAD,
    KIND_REDUCE,
} op_kind;

typedef struct kind_entry {
    const char *name;
    op_kind kind;
} kind_entry;

/* Sorted by name (bsearch). */
static const kind_entry kinds[] = {
    {"ArgMax", KIND_REDUCE},
    {"ArgMin", KIND_REDUCE},
    {"AvgPool", KIND_POOL},
    {"AvgPoolGrad", KIND_POOL_GRAD},
    {"BatchMatMul", KIND_BATCH_MATMUL},
    {"BatchMatMulV2", KIND_BATCH_MATMUL},
    {"BiasAddGrad", KIND_REDUCE},
    {"Const", KIND_FREE},
    {"Conv2D", KIND_CONV},
    {"Conv2DBackpropFilter", KIND_CONV_BACKPROP},
    {"Conv2DBackpropInput", KIND_CONV_BACKPROP},
    {"ExpandDims", KIND_FREE},
    {"Identity", KIND_FREE},
    {"L2Loss", KIND_REDUCE},
    {"MatMul", KIND_MATMUL},
    {"Max", KIND_REDUCE},
    {"MaxPool", KIND_POOL},
    {"MaxPoolGrad", KIND_POOL_GRAD},
    {"Mean", KIND_REDUCE},
    {"Min", KIND_REDUCE},
    {"NoOp", KIND_FREE},
    {"Placeholder", KIND_FREE},
    {"Prod", KIND_REDUCE},
    {"Reshape", KIND_FREE},
    {"Squeeze", KIND_FREE},
    {"StopGradient", KIND_FREE},
    {"Sum", KIND_REDUCE},
    {"Variable", KIND_FREE},
};

static int cmp_kind(const void *key, const void *entry)
{
    return strcmp(key, *(const char *const *)entry);
}

static op_kind kind_of(const char *op)
{
    const void *hit = bsearch(op, kinds, sizeof kinds / sizeof kinds[0], sizeof kinds[0], cmp_kind);
    return hit ? ((const kind_entry *)hit)->kind : KIND_ELEMENTWISE;
}

static double dim(const tide_shape *s, int i)
{
    if (s->rank < 0)
        return 1;
    if (i < 0)
        i += s->rank;
    return i >= 0 && i < s->rank && s->dims[i] >= 0 ? (double)s->dims[i] : 1;
}

static double elements(const tide_shape *s)
{
    double n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i] >= 0 ? (double)s->dims[i] : 1;
    return n;
}

double tide__output_bytes(const tide_node *n, int index)
{
    if (index < 0 || index >= n->num_outputs)
        return 0;
    return elements(&n->out_shapes[index]) * (double)tide_dtype_size(n->out_dtypes[index]);
}

static const tide_shape *in_shape(const tide_node *n, int i)
{
    static const tide_shape unknown = {.rank = -1};
    if (i < 0 || i >= n->num_inputs)
        return &unknown;
    return &n->inputs[i].node->out_shapes[n->inputs[i].index];
}

static bool flag(const tide_node *n, const char *attr)
{
    bool v = false;
    tide_attrs_get_bool(n->attrs, attr, &v);
    return v;
}

/* The pooling window's area, from ksize [1, kh, kw, 1]. */
static double window(const tide_node *n)
{
    const int64_t *k;
    int len;
    if (!tide_attrs_get_int_list(n->attrs, "ksize", &k, &len) || len != 4)
        return 1;
    return (double)(k[1] > 0 ? k[1] : 1) * (double)(k[2] > 0 ? k[2] : 1);
}

static double flops(const tide_node *n, op_kind kind)
{
    const tide_shape *out = n->num_outputs > 0 ? &n->out_shapes[0] : in_shape(n, -1);
    double total = 0;
    switch (kind) {
    case KIND_FREE:
        return 0;
    case KIND_MATMUL: /* out [m, n]; a [m, k] or [k, m] */
        return 2 * dim(out, 0) * dim(out, 1) * dim(in_shape(n, 0), flag(n, "transpose_a") ? 0 : 1);
    case KIND_BATCH_MATMUL:
        return 2 * elements(out) * dim(in_shape(n, 0), flag(n, "adj_x") ? -2 : -1);
    case KIND_CONV: { /* filter [kh, kw, cin, cout] */
        const tide_shape *f = in_shape(n, 1);
        return 2 * elements(out) * dim(f, 0) * dim(f, 1) * dim(f, 2);
    }
    case KIND_CONV_BACKPROP: { /* the filter: input 1 (BackpropInput) or the output (BackpropFilter) */
        const tide_shape *f = strcmp(n->op->name, "Conv2DBackpropInput") == 0 ? in_shape(n, 1) : out;
        return 2 * elements(in_shape(n, 2)) * dim(f, 0) * dim(f, 1) * dim(f, 2);
    }
    case KIND_POOL:
        return elements(out) * window(n);
    case KIND_POOL_GRAD: /* the gradient of the pooled output is the last input */
        return elements(in_shape(n, n->num_inputs - 1)) * window(n);
    case KIND_REDUCE:
        return elements(in_shape(n, 0));
    case KIND_ELEMENTWISE:
        for (int i = 0; i < n->num_outputs; i++)
            total += elements(&n->out_shapes[i]);
        return total;
    }
    return total;
}

static double bytes(const tide_node *n)
{
    double total = 0;
    for (int i = 0; i < n->num_inputs; i++)
        total += tide__output_bytes(n->inputs[i].node, n->inputs[i].index);
    for (int i = 0; i < n->num_outputs; i++)
        total += tide__output_bytes(n, i);
    return total;
}

/* x / speed, where a speed that is not positive means free. */
static double over(double x, double speed)
{
    return speed > 0 ? x / speed : 0;
}

double tide__cost_estimate(const tide_cost_model *m, const tide_cost_table *table, const tide_node *n,
                           const tide_device *d)
{
    double measured = tide__cost_measured(table, n->name);
    if (measured >= 0)
        return measured;
    op_kind kind = kind_of(n->op->name);
    double io = kind == KIND_FREE ? 0 : bytes(n);
    if (d && !d->host_visible) { /* an accelerator: its type's figures (tide_device_ops.cost) */
        const tide_device_cost *c = &d->ops->cost;
        return over(flops(n, kind), c->flops_per_s) + over(io, c->bytes_per_s) + c->launch_s;
    }
    return over(flops(n, kind), m->flops_per_s) + over(io, m->bytes_per_s) + m->node_overhead_s;
}
