/* test_partition.c — the plan's partition pass (engine/plan.c, pass 5b) on random graphs: every
 * cross-device data edge must become a _Send on the producer's device and a _Recv on the consumer's,
 * one pair per (tensor, destination device), and a partitioned run must compute exactly what one
 * device computes.
 *
 *  - A generator of random VALID graphs (seeded, deterministic: its own PRNG, and the same draws
 *    whatever the device count): 5-60 stateless float32 nodes (Const, Placeholder, Add/Sub/Mul with
 *    a scalar broadcast, MatMul, Relu, Tanh, Sigmoid, Neg, Square, Exp of bounded values, Sum/Mean
 *    over an axis, ConcatV2, Transpose, Reshape, AddN, Identity) whose shapes and magnitudes it tracks,
 *    fan-out, control edges, device requests (/cpu:K, /device:cpu:*, none) and a NoOp target; and
 *    conds (a branch taken by the data's sign) and while loops (0-4 iterations, parallel_iterations
 *    1-4) whose branches and bodies are random chains reading outside tensors, on any device.
 *    Some unary nodes get a twin (same op, input and request) for the plan's CSE pass to merge.
 *  - Each graph is run on one CPU device (the reference) and on 2, 3 and 4 devices under the greedy,
 *    naive and round-robin strategies (1 or 2 threads per device; some engines without CSE or without
 *    ALAP _Recv scheduling), CPUs only and then /cpu:0 with 1-3 simulated accelerators (/sim:K, memory
 *    the host cannot read: feeds copied in, fetches copied out, transfers through device copies, kernels
 *    on stream threads); every fetched tensor must be equal BIT FOR BIT, in two runs.
 *  - Each multi-device plan (tide__plan_build, deterministic like the session's) is checked against
 *    the original graph: check_plan() and the functions before it say what is checked.
 *  - Aborted steps: a kernel failing at run time on one device while the others wait in _Recv ends
 *    the run with that kernel's error, every time, and the next run on the session succeeds.
 *
 * Every run is watched (th_watch_start, tests/watchdog.c): a hang — no thread of the process ran or was
 * ready to run for 10 s — or a spin ends the process with a message naming the graph and engine and
 * every thread's state; a slow machine does not. A run needs milliseconds of CPU time; at load ~28 one
 * took 0.64 s with 2 ms of CPU, waiting for a CPU, which the 10-s alarm() used before could not tell
 * from a hang (it fired twice under load ~22). The slowest run is printed at the end.
 * TIDE_PARTITION_GRAPHS overrides the number of random graphs (1000 plain, 500 under ASan) and
 * TIDE_PARTITION_FIRST_SEED the first graph's seed (1): the variants in tests/meson.build run other
 * graphs than the plain suite, so that together they check more graphs for the same time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/graph_util.h"
#include "exec.h"
#include "placement.h"
#include "rendezvous.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MAX_DEVICES 4

/* ---------------------------------------------------------------- failures, watched runs */

static char context[256];   /* what runs now: printed with a failure or by the watchdog */
static int failures;        /* check failures in this process */

/* Like CU_ASSERT, but prints the context and reports only the first 20 failures to CUnit. */
#define CHECK(cond) check_impl((cond), #cond, __FILE__, __LINE__)
static bool check_impl(bool ok, const char *what, const char *file, int line)
{
    if (ok)
        return true;
    if (failures++ < 20) {
        fprintf(stderr, "\n%s:%d: %s failed (%s)", file, line, what, context);
        CU_assertImplementation(CU_FALSE, (unsigned)line, what, file, "", CU_FALSE);
    }
    return false;
}

static double slowest_wall, slowest_cpu; /* the slowest run's time and CPU time, seconds */
static char slowest[256];

static double clock_s(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs under the watchdog; fetch_values must have nf slots. */
static tide_status guarded_run(tide_session *s, const tide_feed *feeds, int nfeeds, const tide_output *fetches,
                               int nf, tide_tensor **fetch_values, tide_node *const *targets, int nt,
                               tide_error *err)
{
    double wall0 = clock_s(CLOCK_MONOTONIC), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    th_watch_start("%s", context);
    tide_status st = tide_session_run(s, NULL, feeds, nfeeds, fetches, nf, fetch_values, targets, nt, NULL, err);
    th_watch_stop();
    double wall = clock_s(CLOCK_MONOTONIC) - wall0;
    if (wall > slowest_wall) {
        slowest_wall = wall;
        slowest_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        snprintf(slowest, sizeof slowest, "%s", context);
    }
    return st;
}

/* ---------------------------------------------------------------- a small PRNG (splitmix64) */

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rnd(uint64_t *s, int n) { return (int)(next_u64(s) % (uint64_t)n); }

/* A float in [-1, 1) with few significant bits (exactly representable). */
static float rnd_value(uint64_t *s) { return (float)(rnd(s, 257) - 128) / 128.0f; }

/* ---------------------------------------------------------------- the generator */

#define MAX_NODES 1024
#define MAX_FETCHES 6

typedef struct gtensor {
    tide_node *node;            /* output 0 */
    int rank;                   /* 0..2 */
    int64_t dims[2];
    double mag;                 /* an upper bound of |value| */
} gtensor;

typedef struct gen {
    uint64_t rng;
    int ndev;                   /* requests /cpu:K become /cpu:(K mod ndev) */
    bool sim;                   /* for an engine of /cpu:0 and /sim:0../sim:(ndev-2): device K is /sim:(K-1) */
    tide_graph *g;
    gtensor t[MAX_NODES];       /* float32 tensors usable as inputs and fetches */
    int nt;
    int nodes;                  /* nodes made (Const int32 helpers included) */
    int want;                   /* stop once nodes >= want */
    tide_feed feeds[4];
    int nfeeds;
    tide_output fetches[MAX_FETCHES];
    int nf;
    tide_node *target;          /* NoOp or NULL */
    int request[MAX_NODES];     /* per node id: the device index requested exactly, or -1 */
    int last_request;           /* the last request drawn */
    bool repeat;                /* making a twin: the last request again, no control input */
    int in_loop;                /* building a loop's condition or body: no control inputs from outside */
    int conds, loops;           /* made so far (totals in the summary) */
} gen;

/* Draws a device request (the same draws whatever ndev; the last one again when G->repeat) and sets
 * it on b. */
static void request_device(gen *G, tide_node_builder *b, int *exact)
{
    if (!G->repeat)
        G->last_request = rnd(&G->rng, 10) * MAX_DEVICES + rnd(&G->rng, MAX_DEVICES);
    int kind = G->last_request / MAX_DEVICES, k = G->last_request % MAX_DEVICES % G->ndev;
    char spec[96];
    *exact = -1;
    if (kind < 5)
        return;
    if (kind == 9) {
        tide_node_builder_set_device(b, "/device:cpu:*");
        return;
    }
    const char *type = G->sim && k > 0 ? "sim" : "cpu"; /* device index k of the engine */
    int ordinal = G->sim && k > 0 ? k - 1 : k;
    if (kind == 8)
        snprintf(spec, sizeof spec, "/job:localhost/replica:0/task:0/device:%s:%d", type, ordinal);
    else
        snprintf(spec, sizeof spec, "/%s:%d", type, ordinal);
    tide_node_builder_set_device(b, spec);
    *exact = k;
}

/* A builder for op with a fresh name ("Op_N"). */
static tide_node_builder *builder(gen *G, const char *op)
{
    char name[64];
    snprintf(name, sizeof name, "%s_%d", op, G->nodes);
    return tide_node_builder_new(G->g, op, name);
}

/* A random earlier tensor's node for a control input (a fed Placeholder too: the edge is met at once;
 * never a node inside a cond or loop, which would mix frames). */
static tide_node *control_source(gen *G)
{
    return G->t[rnd(&G->rng, G->nt)].node;
}

/* Finishes b with a random device request, and sometimes a control input on an earlier node. */
static tide_node *finish(gen *G, tide_node_builder *b)
{
    int exact;
    request_device(G, b, &exact);
    tide_node *c = !G->repeat && G->nt > 0 && rnd(&G->rng, 100) < 15 ? control_source(G) : NULL;
    if (c && !G->in_loop)
        tide_node_builder_add_control_input(b, c);
    tide_node *n = gu_finish(b);
    CU_ASSERT_FATAL(n != NULL && tide_node_id(n) >= G->nodes && tide_node_id(n) < MAX_NODES);
    for (int id = G->nodes; id < tide_node_id(n); id++) /* made by a cond or loop builder: no request */
        G->request[id] = -1;
    G->request[tide_node_id(n)] = exact;
    G->nodes = tide_node_id(n) + 1;
    return n;
}

static gtensor *push(gen *G, tide_node *n, int rank, const int64_t *dims, double mag)
{
    CU_ASSERT_FATAL(G->nt < MAX_NODES);
    gtensor *t = &G->t[G->nt++];
    *t = (gtensor){n, rank, {rank > 0 ? dims[0] : 1, rank > 1 ? dims[1] : 1}, mag};
    return t;
}

static tide_tensor *random_f32(gen *G, int rank, const int64_t *dims)
{
    int64_t n = (rank > 0 ? dims[0] : 1) * (rank > 1 ? dims[1] : 1);
    float *v = malloc(sizeof *v * (size_t)n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = rnd_value(&G->rng);
    tide_tensor *t = th_f32(rank, dims, v);
    free(v);
    return t;
}

/* An int32 Const (axes, permutations, shapes): rank 0 when n < 0, else a vector of n. */
static tide_node *int_const(gen *G, const int32_t *v, int n)
{
    tide_node_builder *b = builder(G, "Const");
    tide_tensor *t = n < 0 ? th_i32(0, NULL, v) : th_i32(1, TH_DIMS(n), v);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_INT32);
    tide_tensor_release(t);
    return finish(G, b);
}

static void random_dims(gen *G, int rank, int64_t *dims)
{
    for (int i = 0; i < rank; i++)
        dims[i] = 1 + rnd(&G->rng, 4);
}

static gtensor *make_const(gen *G, int rank, const int64_t *dims)
{
    tide_node_builder *b = builder(G, "Const");
    tide_tensor *t = random_f32(G, rank, dims);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_tensor_release(t);
    return push(G, finish(G, b), rank, dims, 1);
}

static gtensor *make_placeholder(gen *G)
{
    int rank = 1 + rnd(&G->rng, 2);
    int64_t dims[2];
    random_dims(G, rank, dims);
    tide_node_builder *b = builder(G, "Placeholder");
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_shape s = tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    tide_node *n = finish(G, b);
    G->feeds[G->nfeeds++] = (tide_feed){{n, 0}, random_f32(G, rank, dims)};
    return push(G, n, rank, dims, 1);
}

/* A random tensor usable as an input (bounded magnitude; there is always one). */
static gtensor *pick(gen *G)
{
    for (;;) {
        gtensor *t = &G->t[rnd(&G->rng, G->nt)];
        if (t->mag <= 1e4)
            return t;
    }
}

static bool same_shape(const gtensor *a, const gtensor *b)
{
    return a->rank == b->rank && a->dims[0] == b->dims[0] && a->dims[1] == b->dims[1];
}

/* Another tensor of a's shape (a itself when a few tries find none). */
static gtensor *pick_like(gen *G, gtensor *a)
{
    for (int tries = 0; tries < 8; tries++) {
        gtensor *b = pick(G);
        if (same_shape(a, b))
            return b;
    }
    return a;
}

static gtensor *unary(gen *G, const char *op, gtensor *x, double mag)
{
    tide_node_builder *b = builder(G, op);
    tide_node_builder_add_input(b, (tide_output){x->node, 0});
    return push(G, finish(G, b), x->rank, x->dims, mag);
}

static gtensor *make_unary(gen *G)
{
    static const char *ops[] = {"Relu", "Tanh", "Sigmoid", "Neg", "Square", "Exp", "Identity"};
    int k = rnd(&G->rng, 7);
    gtensor *x = pick(G);
    if (k == 5 && x->mag > 4) /* Exp of tanh'd values: no overflow */
        x = unary(G, "Tanh", x, 1);
    double mags[] = {x->mag, 1, 1, x->mag, x->mag * x->mag, exp(x->mag), x->mag};
    gtensor *y = unary(G, ops[k], x, mags[k]);
    if (rnd(&G->rng, 4) == 0) { /* a twin (same op, input and request) for the plan's CSE to merge */
        G->repeat = true;
        y = unary(G, ops[k], x, mags[k]);
        G->repeat = false;
    }
    return y;
}

/* Add/Sub/Mul of two tensors of one shape, or of a tensor and a scalar (either side). */
static gtensor *make_binary(gen *G)
{
    static const char *ops[] = {"Add", "Sub", "Mul"};
    int k = rnd(&G->rng, 3);
    gtensor *a = pick(G), *b = pick_like(G, a);
    if (rnd(&G->rng, 4) == 0) { /* broadcast a scalar */
        int64_t none[1] = {0};
        b = rnd(&G->rng, 2) ? make_const(G, 0, none) : b;
        if (rnd(&G->rng, 2)) {
            gtensor *s = a;
            a = b;
            b = s;
        }
    }
    if (!same_shape(a, b) && a->rank != 0 && b->rank != 0)
        b = a;
    const gtensor *big = a->rank >= b->rank ? a : b;
    double mag = k == 2 ? a->mag * b->mag : a->mag + b->mag;
    tide_node_builder *nb = builder(G, ops[k]);
    tide_node_builder_add_input(nb, (tide_output){a->node, 0});
    tide_node_builder_add_input(nb, (tide_output){b->node, 0});
    int64_t dims[2] = {big->dims[0], big->dims[1]};
    return push(G, finish(G, nb), big->rank, dims, mag);
}

/* MatMul of a [m, k] with some [k, n] (a new Const when none is at hand). */
static gtensor *make_matmul(gen *G)
{
    gtensor *a = pick(G);
    if (a->rank != 2)
        return make_unary(G);
    gtensor *b = NULL;
    for (int tries = 0; tries < 8 && !b; tries++) {
        gtensor *c = pick(G);
        if (c->rank == 2 && c->dims[0] == a->dims[1])
            b = c;
    }
    if (!b)
        b = make_const(G, 2, TH_DIMS(a->dims[1], 1 + rnd(&G->rng, 4)));
    tide_node_builder *nb = builder(G, "MatMul");
    tide_node_builder_add_input(nb, (tide_output){a->node, 0});
    tide_node_builder_add_input(nb, (tide_output){b->node, 0});
    return push(G, finish(G, nb), 2, TH_DIMS(a->dims[0], b->dims[1]), a->mag * b->mag * (double)a->dims[1]);
}

/* Sum or Mean over one axis (negative sometimes), keep_dims sometimes. */
static gtensor *make_reduce(gen *G)
{
    gtensor *x = pick(G);
    if (x->rank == 0)
        return make_unary(G);
    bool mean = rnd(&G->rng, 2), keep = rnd(&G->rng, 2);
    int axis = rnd(&G->rng, x->rank);
    int32_t given = rnd(&G->rng, 2) ? axis : axis - x->rank;
    tide_node *ax = int_const(G, &given, -1);
    tide_node_builder *b = builder(G, mean ? "Mean" : "Sum");
    tide_node_builder_add_input(b, (tide_output){x->node, 0});
    tide_node_builder_add_input(b, (tide_output){ax, 0});
    tide_attrs_set_bool(tide_node_builder_attrs(b), "keep_dims", keep);
    int64_t dims[2];
    int rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != axis)
            dims[rank++] = x->dims[i];
        else if (keep)
            dims[rank++] = 1;
    return push(G, finish(G, b), rank, dims, mean ? x->mag : x->mag * (double)x->dims[axis]);
}

/* Concat of 2-3 tensors of one rank agreeing off the axis (a repeated when nothing else fits). */
static gtensor *make_concat(gen *G)
{
    gtensor *a = pick(G);
    if (a->rank == 0 || a->dims[0] * a->dims[1] > 32) /* keep tensors small */
        return make_unary(G);
    int axis = rnd(&G->rng, a->rank), n = 2 + rnd(&G->rng, 2);
    tide_output ins[3];
    int64_t total = 0;
    double mag = 0;
    for (int i = 0; i < n; i++) {
        gtensor *c = a;
        for (int tries = 0; i > 0 && tries < 6; tries++) {
            gtensor *d = pick(G);
            if (d->rank == a->rank && (a->rank == 1 || d->dims[1 - axis] == a->dims[1 - axis])) {
                c = d;
                break;
            }
        }
        ins[i] = (tide_output){c->node, 0};
        total += c->dims[axis];
        mag = mag > c->mag ? mag : c->mag;
    }
    int32_t ax = axis;
    tide_node *axn = int_const(G, &ax, -1);
    tide_node_builder *b = builder(G, "ConcatV2");
    tide_node_builder_add_input_list(b, ins, n);
    tide_node_builder_add_input(b, (tide_output){axn, 0});
    int64_t dims[2] = {a->dims[0], a->dims[1]};
    dims[axis] = total;
    return push(G, finish(G, b), a->rank, dims, mag);
}

/* Transpose of a matrix, or Reshape: a matrix flattened, a vector folded into a matrix. */
static gtensor *make_shape_op(gen *G)
{
    gtensor *x = pick(G);
    if (x->rank == 0)
        return make_unary(G);
    bool transpose = x->rank == 2 && rnd(&G->rng, 2);
    int32_t v[2];
    int64_t dims[2];
    int rank;
    if (transpose) {
        v[0] = 1, v[1] = 0, rank = 2;
        dims[0] = x->dims[1], dims[1] = x->dims[0];
    } else if (x->rank == 2) {
        v[0] = -1, rank = 1;
        dims[0] = x->dims[0] * x->dims[1];
    } else {
        int64_t a = x->dims[0] % 2 == 0 ? 2 : 1;
        v[0] = (int32_t)a, v[1] = (int32_t)(x->dims[0] / a), rank = 2;
        dims[0] = a, dims[1] = x->dims[0] / a;
    }
    tide_node *arg = int_const(G, v, transpose ? 2 : rank);
    tide_node_builder *b = builder(G, transpose ? "Transpose" : "Reshape");
    tide_node_builder_add_input(b, (tide_output){x->node, 0});
    tide_node_builder_add_input(b, (tide_output){arg, 0});
    return push(G, finish(G, b), rank, dims, x->mag);
}

static gtensor *make_addn(gen *G)
{
    gtensor *a = pick(G);
    int n = 2 + rnd(&G->rng, 3);
    tide_output ins[4];
    double mag = 0;
    for (int i = 0; i < n; i++) {
        gtensor *c = i == 0 ? a : pick_like(G, a);
        ins[i] = (tide_output){c->node, 0};
        mag += c->mag;
    }
    tide_node_builder *b = builder(G, "AddN");
    tide_node_builder_add_input_list(b, ins, n);
    return push(G, finish(G, b), a->rank, a->dims, mag);
}

/* ---------------------------------------------------------------- conds and loops */

/* A short random chain from x inside a branch or a loop body: element-wise ops with other tensors of
 * x's shape (those from outside come in through the cond's or loop's context), ending in Tanh so the
 * result stays bounded. The tensors made inside are forgotten afterwards (they are not for outside). */
static tide_node *inner_chain(gen *G, gtensor *x)
{
    int nt = G->nt;
    gtensor *cur = x;
    for (int k = 1 + rnd(&G->rng, 3); k > 0; k--) {
        static const char *ops[] = {"Add", "Sub", "Mul"};
        if (rnd(&G->rng, 3) == 0) {
            cur = unary(G, rnd(&G->rng, 2) ? "Sigmoid" : "Neg", cur, cur->mag);
            continue;
        }
        gtensor *o = pick_like(G, cur);
        tide_node_builder *b = builder(G, ops[rnd(&G->rng, 3)]);
        tide_node_builder_add_input(b, (tide_output){cur->node, 0});
        tide_node_builder_add_input(b, (tide_output){o->node, 0});
        cur = push(G, finish(G, b), cur->rank, cur->dims, cur->mag * (o->mag + 1));
    }
    tide_node *out = unary(G, "Tanh", cur, 1)->node;
    G->nt = nt;
    return out;
}

typedef struct branch_arg {
    gen *G;
    gtensor *x;
} branch_arg;

static tide_status gen_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)g;
    (void)max;
    (void)err;
    branch_arg *a = user;
    outs[0] = (tide_output){inner_chain(a->G, a->x), 0};
    *n = 1;
    return TIDE_OK;
}

/* cond(sum(x) > 0, chain(x), chain(x)): only one branch runs; its nodes may sit on any device. */
static gtensor *make_cond(gen *G)
{
    gtensor *x = pick(G);
    int32_t axes[2] = {0, 1};
    tide_node *ax = int_const(G, axes, x->rank);
    tide_node_builder *b = builder(G, "Sum");
    tide_node_builder_add_input(b, (tide_output){x->node, 0});
    tide_node_builder_add_input(b, (tide_output){ax, 0});
    tide_node *sum = finish(G, b);
    b = builder(G, "Greater");
    tide_node_builder_add_input(b, (tide_output){sum, 0});
    tide_node_builder_add_input(b, (tide_output){make_const(G, 0, NULL)->node, 0});
    G->nt--; /* that zero is not worth picking */
    tide_node *pred = finish(G, b);
    branch_arg a = {G, x};
    tide_output r;
    int n = 0;
    tide_error *err = tide_error_new();
    tide_status st = tide_cond(G->g, (tide_output){pred, 0}, gen_branch, gen_branch, &a, &r, 1, &n, err);
    if (st != TIDE_OK)
        fprintf(stderr, "generator: cond: %s\n", tide_error_message(err));
    CU_ASSERT_FATAL(st == TIDE_OK && n == 1);
    tide_error_free(err);
    for (int id = G->nodes; id < tide_graph_num_nodes(G->g); id++) /* the Merges: no request */
        G->request[id] = -1;
    G->nodes = tide_graph_num_nodes(G->g);
    G->conds++;
    return push(G, r.node, x->rank, x->dims, 1);
}

typedef struct loop_arg {
    gen *G;
    gtensor *x;
    int32_t steps;
} loop_arg;

static tide_status gen_loop_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred,
                                 tide_error *err)
{
    (void)g;
    (void)n;
    (void)err;
    loop_arg *a = user;
    tide_node_builder *b = builder(a->G, "Less");
    tide_node_builder_add_input(b, v[0]);
    tide_node_builder_add_input(b, (tide_output){int_const(a->G, &a->steps, -1), 0});
    *pred = (tide_output){finish(a->G, b), 0};
    return TIDE_OK;
}

static tide_status gen_loop_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next,
                                 tide_error *err)
{
    (void)g;
    (void)n;
    (void)err;
    loop_arg *a = user;
    gen *G = a->G;
    int32_t one = 1;
    tide_node_builder *b = builder(G, "Add");
    tide_node_builder_add_input(b, v[0]);
    tide_node_builder_add_input(b, (tide_output){int_const(G, &one, -1), 0});
    next[0] = (tide_output){finish(G, b), 0};
    int nt = G->nt;
    gtensor *cur = push(G, v[1].node, a->x->rank, a->x->dims, 1); /* the variable's value in this iteration */
    next[1] = (tide_output){inner_chain(G, cur), 0};
    G->nt = nt;
    return TIDE_OK;
}

/* for i < steps: v = chain(v), chain reading tensors from outside (loop invariants); 0-4 iterations. */
static gtensor *make_while(gen *G)
{
    gtensor *x = pick(G);
    if (x->mag > 1)
        x = unary(G, "Tanh", x, 1);
    int32_t zero = 0;
    loop_arg a = {G, x, rnd(&G->rng, 5)};
    tide_output init[2] = {{int_const(G, &zero, -1), 0}, {x->node, 0}}, r[2];
    tide_while_options o;
    tide_while_options_init(&o);
    o.parallel_iterations = 1 + rnd(&G->rng, 4);
    tide_error *err = tide_error_new();
    G->in_loop++;
    tide_status st = tide_while_loop(G->g, gen_loop_cond, gen_loop_body, &a, init, 2, &o, r, err);
    G->in_loop--;
    if (st != TIDE_OK)
        fprintf(stderr, "generator: while_loop: %s\n", tide_error_message(err));
    CU_ASSERT_FATAL(st == TIDE_OK);
    tide_error_free(err);
    for (int id = G->nodes; id < tide_graph_num_nodes(G->g); id++) /* the Exits: no request */
        G->request[id] = -1;
    G->nodes = tide_graph_num_nodes(G->g);
    G->loops++;
    return push(G, r[1].node, x->rank, x->dims, 1);
}

/* One random step of the generator. */
static void grow(gen *G)
{
    int r = rnd(&G->rng, 100);
    gtensor *t;
    if (r < 8) {
        int64_t dims[2];
        int rank = rnd(&G->rng, 3);
        random_dims(G, rank, dims);
        t = make_const(G, rank, dims);
    } else if (r < 12 && G->nfeeds < 4) {
        t = make_placeholder(G);
    } else if (r < 35) {
        t = make_unary(G);
    } else if (r < 55) {
        t = make_binary(G);
    } else if (r < 68) {
        t = make_matmul(G);
    } else if (r < 78) {
        t = make_reduce(G);
    } else if (r < 85) {
        t = make_concat(G);
    } else if (r < 92) {
        t = make_shape_op(G);
    } else if (r < 96) {
        t = make_addn(G);
    } else if (r < 98) {
        t = make_cond(G);
    } else {
        t = make_while(G);
    }
    if (t->mag > 1e4) /* keep values finite: the big one may be fetched, but is used no further */
        unary(G, "Tanh", t, 1);
}

/* Fetches 1-5 distinct tensors (the last ones made more often), sometimes a NoOp target. */
static void choose_fetches(gen *G)
{
    int want = 1 + rnd(&G->rng, 5);
    for (int i = 0; i < want; i++) {
        int k = rnd(&G->rng, 2) ? G->nt - 1 - rnd(&G->rng, G->nt < 4 ? G->nt : 4) : rnd(&G->rng, G->nt);
        bool dup = false;
        for (int j = 0; j < G->nf; j++)
            dup |= G->fetches[j].node == G->t[k].node;
        if (!dup)
            G->fetches[G->nf++] = (tide_output){G->t[k].node, 0};
    }
    if (rnd(&G->rng, 10) < 4) {
        tide_node_builder *b = builder(G, "NoOp");
        int n = 1 + rnd(&G->rng, 3);
        for (int i = 0; i < n; i++) {
            tide_node *c = control_source(G);
            if (c)
                tide_node_builder_add_control_input(b, c);
        }
        G->target = finish(G, b);
    }
}

/* The graph of `seed` with device requests for an engine of ndev devices (the same graph, values
 * and fetches for every ndev). */
static void generate(gen *G, uint64_t seed, int ndev, bool sim)
{
    memset(G, 0, sizeof *G);
    G->rng = seed * 0x2545f4914f6cdd1dull + 1;
    G->ndev = ndev;
    G->sim = sim;
    G->g = tide_graph_new();
    G->want = 5 + rnd(&G->rng, 52); /* a step adds at most 4 nodes, the NoOp 1: 5..60 in all */
    int64_t dims[2];
    random_dims(G, 2, dims);
    if (rnd(&G->rng, 2))
        make_placeholder(G);
    else
        make_const(G, 2, dims);
    while (G->nodes < G->want)
        grow(G);
    choose_fetches(G);
}

static void gen_clear(gen *G)
{
    for (int i = 0; i < G->nfeeds; i++)
        tide_tensor_release(G->feeds[i].value);
    tide_graph_free(G->g);
    G->g = NULL;
}

/* ---------------------------------------------------------------- plan invariants */

typedef struct stats {
    long graphs, plans, crossing_edges, transfers, alap_edges, cross_control, merged, runs, aborted_runs;
    long conds, loops, loop_transfers;  /* conds and loops generated; transfers inside a loop's frame */
    long sim_items, feeds_in, fetches_out; /* nodes on simulated devices; feeds copied in, fetches out */
    long host_inputs; /* data edges into an input a device kernel reads in host memory, made on the host */
} stats;

static stats totals;

/* A plan seen from its inputs: which item and output feeds each slot (slots are numbered per frame:
 * SLOT(v, item, i) is input i of that item in one numbering over every frame). */
typedef struct plan_view {
    const tide_engine *e;
    const tide_plan *p;
    const tide_graph *g;
    int *node_item;             /* graph node id -> item, -1 */
    int *slot_item, *slot_output;
    int *slot_base;             /* per frame */
} plan_view;

#define SLOT(v, it, i) ((v)->slot_base[(it)->frame] + (it)->input_base + (i))

static void view_init(plan_view *v, const tide_engine *e, const tide_plan *p, const tide_graph *g)
{
    int n = tide_graph_num_nodes(g), total = 0;
    int *base = malloc(sizeof(int) * ((size_t)p->num_frames + 1));
    CU_ASSERT_FATAL(base != NULL);
    for (int f = 0; f < p->num_frames; f++) {
        base[f] = total;
        total += p->frames[f].num_slots;
    }
    *v = (plan_view){e, p, g, malloc(sizeof(int) * ((size_t)n + 1)), malloc(sizeof(int) * ((size_t)total + 1)),
                     malloc(sizeof(int) * ((size_t)total + 1)), base};
    CU_ASSERT_FATAL(v->node_item && v->slot_item && v->slot_output);
    for (int i = 0; i < n; i++)
        v->node_item[i] = -1;
    for (int s = 0; s < total; s++)
        v->slot_item[s] = v->slot_output[s] = -1;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind == ITEM_NODE && it->node->id >= 0)
            v->node_item[it->node->id] = k;
        for (int t = 0; it->kind == ITEM_NODE && t < it->num_twins; t++) /* merged into it by CSE */
            v->node_item[it->twins[t]->id] = k;
        for (int e = 0; e < it->num_edges; e++)
            if (it->edges[e].slot >= 0) {
                int slot = v->slot_base[p->items[it->edges[e].dst].frame] + it->edges[e].slot;
                CHECK(v->slot_item[slot] < 0); /* one edge per slot */
                v->slot_item[slot] = k;
                v->slot_output[slot] = it->edges[e].output;
            }
    }
}

static void view_clear(plan_view *v)
{
    free(v->node_item);
    free(v->slot_item);
    free(v->slot_output);
    free(v->slot_base);
}

static const char *attr_string(const tide_node *n, const char *name)
{
    const char *s = NULL;
    return tide_attrs_get_string(n->attrs, name, &s) ? s : "";
}

static bool is_op(const tide_exec_item *it, const char *op)
{
    return it->kind == ITEM_NODE && strcmp(it->node->op->name, op) == 0;
}

/* The _Send item for (tensor, destination device), -1 when none. */
static int find_send(const tide_plan *p, const char *tensor, const tide_device *dst)
{
    for (int k = 0; k < p->num_items; k++)
        if (is_op(&p->items[k], "_Send") && strcmp(attr_string(p->items[k].node, "tensor_name"), tensor) == 0 &&
            strcmp(attr_string(p->items[k].node, "recv_device"), dst->name) == 0)
            return k;
    return -1;
}

/* The incoming edges of _Recv item r: only control edges (its value comes by the rendezvous), from
 * node items of its own device (pass 6b's as-late-as-possible edges), and inside a loop one from the
 * tensor's producer (it starts the _Recv in each iteration). Returns how many are pass 6b's. */
static int recv_incoming(const tide_plan *p, int r, int producer)
{
    int n = 0, started = 0;
    for (int k = 0; k < p->num_items; k++)
        for (int e = 0; e < p->items[k].num_edges; e++)
            if (p->items[k].edges[e].dst == r) {
                CHECK(p->items[k].edges[e].slot < 0 && p->items[k].edges[e].output < 0);
                if (k == producer && p->items[r].frame != 0) {
                    started++;
                    continue;
                }
                CHECK(p->items[k].kind == ITEM_NODE && p->items[k].device == p->items[r].device);
                n++;
            }
    CHECK(started == (p->items[r].frame != 0));
    CHECK(n + started == p->items[r].initial_pending);
    return n;
}

/* The name of a transferred tensor: "node:output" of the producer item's node, or of the fed tensor
 * when the producer is a feed item (a feed going to an accelerator). */
static void tensor_name(const plan_view *v, const gen *G, int producer, int output, char *buf, size_t size)
{
    const tide_exec_item *it = &v->p->items[producer];
    if (it->kind == ITEM_FEED)
        snprintf(buf, size, "%s:%d", G->feeds[it->index].output.node->name, G->feeds[it->index].output.index);
    else
        snprintf(buf, size, "%s:%d", it->node->name, output);
}

/* A cross-device input: slot of consumer item k comes from a _Recv on k's device that has no input
 * (the value comes by the rendezvous), named and keyed for exactly the producer's tensor, whose
 * _Send on the producer's device reads that tensor from the producer's item (output `output` of a
 * node item, or a feed item: a fed value going to an accelerator). */
static void check_transfer(const plan_view *v, const gen *G, int k, int slot, int producer, int output)
{
    const tide_plan *p = v->p;
    const tide_device *from = p->items[producer].device, *to = p->items[k].device;
    char tensor[300], name[400];
    tensor_name(v, G, producer, output, tensor, sizeof tensor);
    int r = v->slot_item[slot];
    if (!CHECK(r >= 0 && is_op(&p->items[r], "_Recv") && v->slot_output[slot] == 0))
        return;
    const tide_exec_item *recv = &p->items[r];
    snprintf(name, sizeof name, "%s/_recv_on_%s%d", tensor, to->type, to->ordinal);
    CHECK(recv->device == to && strcmp(recv->node->name, name) == 0);
    CHECK(recv->num_inputs == 0 && recv->async);
    CHECK(strcmp(attr_string(recv->node, "tensor_name"), tensor) == 0);
    CHECK(strcmp(attr_string(recv->node, "send_device"), from->name) == 0);
    CHECK(strcmp(attr_string(recv->node, "recv_device"), to->name) == 0);
    CHECK(p->items[producer].kind == ITEM_FEED || recv->node->out_dtypes[0] == p->items[producer].node->out_dtypes[output]);
    int s = find_send(p, tensor, to);
    if (!CHECK(s >= 0))
        return;
    const tide_exec_item *send = &p->items[s];
    snprintf(name, sizeof name, "%s/_send_to_%s%d", tensor, to->type, to->ordinal);
    CHECK(send->device == from && strcmp(send->node->name, name) == 0);
    CHECK(strcmp(attr_string(send->node, "send_device"), from->name) == 0);
    CHECK(send->num_inputs == 1 && send->num_edges == 0);
    CHECK(v->slot_item[SLOT(v, send, 0)] == producer && v->slot_output[SLOT(v, send, 0)] == output);
    CHECK(send->frame == recv->frame); /* both where the tensor lands (inside a loop: once per iteration) */
}

/* A (tensor, destination device) pair found from the original graph: the producer's item (CSE may
 * have merged the producer into a twin: its item computes the tensor), output, device index. */
typedef struct pair {
    int item, output, dst;
} pair;

static bool is_fed(const gen *G, const tide_node *n, int output)
{
    for (int i = 0; i < G->nfeeds; i++)
        if (G->feeds[i].output.node == n && G->feeds[i].output.index == output)
            return true;
    return false;
}

/* The feed item of a fed tensor, -1 when it is not fed. */
static int fed_item(const plan_view *v, const gen *G, const tide_node *n, int output)
{
    for (int k = 0; k < v->p->num_items; k++)
        if (v->p->items[k].kind == ITEM_FEED && G->feeds[v->p->items[k].index].output.node == n &&
            G->feeds[v->p->items[k].index].output.index == output)
            return k;
    return -1;
}

static int add_pair(pair *pairs, int np, int cap, pair x)
{
    for (int j = 0; j < np; j++)
        if (pairs[j].item == x.item && pairs[j].output == x.output && pairs[j].dst == x.dst)
            return np;
    if (CHECK(np < cap))
        pairs[np++] = x;
    return np;
}

/* Whether input i of item k is one its kernel reads in host memory (engine/host_inputs.c) and item
 * producer, which makes it, is on a device the host reads: then the edge is direct, with no transfer. */
static bool host_input_edge(const tide_plan *p, int k, int i, int producer)
{
    const tide_exec_item *it = &p->items[k];
    return p->items[producer].device->host_visible && tide__kernel_host_input(it->kn.kernel, it->device, it->node, i);
}

/* Every data input of every graph node in the plan: from a feed item (through a transfer to an
 * accelerator), straight from its producer (same device, or a host-memory input made on the host), or
 * through a transfer. Collects the pairs; returns how many. */
static int check_data_edges(const plan_view *v, const gen *G, pair *pairs, int cap)
{
    const tide_plan *p = v->p;
    int np = 0;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind != ITEM_NODE || it->node->id < 0)
            continue;
        for (int i = 0; i < it->node->num_inputs; i++) {
            tide_output in = it->node->inputs[i];
            int slot = SLOT(v, it, i);
            int f = fed_item(v, G, in.node, in.index);
            if (f >= 0 && (it->device->host_visible || host_input_edge(p, k, i, f))) {
                CHECK(v->slot_item[slot] == f);
                totals.host_inputs += !it->device->host_visible;
                continue;
            }
            if (f >= 0) { /* to an accelerator from the host */
                totals.feeds_in++;
                check_transfer(v, G, k, slot, f, 0);
                np = add_pair(pairs, np, cap, (pair){f, 0, it->device->index});
                continue;
            }
            int src = v->node_item[in.node->id];
            if (!CHECK(src >= 0))
                continue;
            if (p->items[src].device == it->device || host_input_edge(p, k, i, src)) {
                CHECK(v->slot_item[slot] == src && v->slot_output[slot] == in.index);
                totals.host_inputs += p->items[src].device != it->device;
                continue;
            }
            totals.crossing_edges++;
            check_transfer(v, G, k, slot, src, in.index);
            np = add_pair(pairs, np, cap, (pair){src, in.index, it->device->index});
        }
    }
    return np;
}

/* Every fetch reads its tensor straight from the producer's item (fetches belong to no device), or,
 * for a tensor made on an accelerator, from a _Recv on the host: those pairs are added. */
static int check_fetches(const plan_view *v, const gen *G, pair *pairs, int np, int cap)
{
    const tide_plan *p = v->p;
    int fetches = 0;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind != ITEM_FETCH || !CHECK(it->index >= 0 && it->index < G->nf))
            continue;
        fetches++;
        tide_output o = G->fetches[it->index];
        int slot = SLOT(v, it, 0), src = v->slot_item[slot], producer = v->node_item[o.node->id];
        if (is_fed(G, o.node, o.index)) {
            CHECK(src >= 0 && p->items[src].kind == ITEM_FEED);
        } else if (CHECK(producer >= 0) && !p->items[producer].device->host_visible) {
            totals.fetches_out++;
            check_transfer(v, G, k, slot, producer, o.index);
            np = add_pair(pairs, np, cap, (pair){producer, o.index, 0});
        } else {
            CHECK(src == producer && v->slot_output[slot] == o.index);
        }
    }
    CHECK(fetches == G->nf && p->num_fetches == G->nf);
    return np;
}

/* Whether _Send/_Recv item it is for one of the pairs. */
static bool for_a_pair(const plan_view *v, const gen *G, const tide_exec_item *it, const pair *pairs, int np)
{
    for (int j = 0; j < np; j++) {
        char tensor[300];
        tensor_name(v, G, pairs[j].item, pairs[j].output, tensor, sizeof tensor);
        if (strcmp(tensor, attr_string(it->node, "tensor_name")) == 0 &&
            strcmp(tide_engine_device_name(v->e, pairs[j].dst), attr_string(it->node, "recv_device")) == 0)
            return true;
    }
    return false;
}

/* Exactly one _Recv and one _Send per pair, nothing else synthetic; the plan's counts agree; the
 * only edges into _Recv items are pass 6b's control edges. */
static void check_pairs(const plan_view *v, const gen *G, const pair *pairs, int np)
{
    const tide_plan *p = v->p;
    int recvs = 0, sends = 0, alap = 0;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (!is_op(it, "_Recv") && !is_op(it, "_Send"))
            continue;
        CHECK(it->node->id < 0); /* made by the plan, not in the graph */
        bool recv = is_op(it, "_Recv");
        recvs += recv, sends += !recv;
        for (int j = k + 1; j < p->num_items; j++) /* no duplicate (op, tensor, destination) */
            CHECK(!(is_op(&p->items[j], it->node->op->name) &&
                    strcmp(attr_string(p->items[j].node, "tensor_name"), attr_string(it->node, "tensor_name")) == 0 &&
                    strcmp(attr_string(p->items[j].node, "recv_device"), attr_string(it->node, "recv_device")) == 0));
        CHECK(for_a_pair(v, G, it, pairs, np));
        if (recv) {
            int s = find_send(p, attr_string(it->node, "tensor_name"), it->device);
            CHECK(it->num_edges > 0 && s >= 0);
            alap += recv_incoming(p, k, s >= 0 ? v->slot_item[SLOT(v, &p->items[s], 0)] : -1);
        }
    }
    for (int k = 0; k < p->num_items; k++)
        totals.loop_transfers += is_op(&p->items[k], "_Recv") && p->items[k].frame != 0;
    CHECK(recvs == np && sends == np);
    CHECK(p->num_transfers == np && p->num_synthetic == 2 * np);
    CHECK(p->uses_rendezvous == (np > 0));
    CHECK(alap == p->num_alap_edges);
    totals.transfers += np;
    totals.alap_edges += alap;
}

/* No data edge joins two node items on different devices but into a host-memory input made on the host
 * (host_input_edge); control edges may (in one process the executor orders them directly, plan.c says):
 * each graph control input is a plain edge, except one from a fed Placeholder, which does not run. */
static void check_edges_and_control(const plan_view *v)
{
    const tide_plan *p = v->p;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        for (int e = 0; e < it->num_edges; e++) {
            const tide_edge *edge = &it->edges[e];
            const tide_exec_item *dst = &p->items[edge->dst];
            if (it->kind != ITEM_NODE || dst->kind != ITEM_NODE || it->device == dst->device ||
                (edge->slot >= 0 && dst->node->id >= 0 && host_input_edge(p, edge->dst, edge->slot - dst->input_base, k)))
                continue;
            CHECK(edge->slot < 0 && edge->output < 0);
            totals.cross_control++;
        }
        if (it->kind != ITEM_NODE || it->node->id < 0)
            continue;
        for (int c = 0; c < it->node->num_control; c++) {
            int src = v->node_item[it->node->control[c]->id], found = 0;
            if (strcmp(tide_node_op(it->node->control[c]), "Placeholder") == 0) { /* every one is fed */
                CHECK(src < 0); /* a fed node does not run: its control edge is met at once */
                continue;
            }
            for (int e = 0; src >= 0 && e < p->items[src].num_edges; e++)
                found += p->items[src].edges[e].dst == k && p->items[src].edges[e].slot < 0;
            CHECK(src >= 0 && found >= 1);
        }
    }
}

/* Node n (of item it, its own or merged into it) is assigned its item's device, as requested; but a
 * constant requested on an accelerator whose consumers read it in host memory there, which runs on the
 * host (device 0: docs/devices.md, "Host-memory inputs"). */
static void check_device(const plan_view *v, const tide_exec_item *it, const tide_node *n, const gen *G)
{
    const char *assigned = tide_node_assigned_device(n);
    CHECK(assigned && strcmp(assigned, it->device->name) == 0);
    if (n->id >= 0 && G->request[n->id] >= 0 && it->device->index != G->request[n->id])
        CHECK(strcmp(tide_node_op(n), "Const") == 0 && it->device->index == 0 &&
              !tide_engine_device_host_visible(v->e, G->request[n->id]));
}

/* Every node item runs on its node's assigned device, and an exact request is honoured. */
static void check_devices(const plan_view *v, const gen *G)
{
    const tide_plan *p = v->p;
    for (int k = 0; k < p->num_items; k++) {
        const tide_exec_item *it = &p->items[k];
        if (it->kind == ITEM_NODE) {
            totals.sim_items += it->node->id >= 0 && !it->device->host_visible;
            check_device(v, it, it->node, G);
            for (int t = 0; t < it->num_twins; t++)
                check_device(v, it, it->twins[t], G);
        }
    }
}

/* Builds the plan the session ran (placement is deterministic) and checks it against the graph. */
static void check_plan(tide_engine *e, const gen *G)
{
    tide_error *err = tide_error_new();
    int nt = G->target ? 1 : 0;
    tide_plan *p = tide__plan_build(e, G->g, G->feeds, G->nfeeds, G->fetches, G->nf, &G->target, nt, false, NULL, err);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, " plan: %s\n", tide_error_message(err));
        tide_error_free(err);
        return;
    }
    plan_view v;
    view_init(&v, e, p, G->g);
    pair pairs[4 * MAX_NODES];
    int np = check_data_edges(&v, G, pairs, 4 * MAX_NODES);
    np = check_fetches(&v, G, pairs, np, 4 * MAX_NODES);
    check_pairs(&v, G, pairs, np);
    check_edges_and_control(&v);
    check_devices(&v, G);
    totals.plans++;
    totals.merged += p->num_merged;
    view_clear(&v);
    tide__plan_free(p);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- running and comparing */

/* Runs G's fetches (twice: a fresh plan, then the cached one) on a session of e; out[] receives the
 * first run's values. False when a run failed. */
static bool run_graph(tide_engine *e, const gen *G, tide_tensor **out)
{
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(e, G->g, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    bool ok = true;
    for (int rep = 0; rep < 2 && ok; rep++) {
        tide_tensor *vals[MAX_FETCHES] = {0};
        tide_status st = guarded_run(s, G->feeds, G->nfeeds, G->fetches, G->nf, rep == 0 ? out : vals,
                                     &G->target, G->target ? 1 : 0, err);
        totals.runs++;
        ok = CHECK(st == TIDE_OK);
        if (!ok)
            fprintf(stderr, " run (%s): %s\n", context, tide_error_message(err));
        for (int i = 0; i < G->nf && rep == 1; i++) {
            CHECK(ok && vals[i] && tide_tensor_byte_size(vals[i]) == tide_tensor_byte_size(out[i]) &&
                  memcmp(tide_tensor_data(vals[i]), tide_tensor_data(out[i]), tide_tensor_byte_size(out[i])) == 0);
            tide_tensor_release(vals[i]);
        }
    }
    CHECK(tide__rendezvous_pending(e->rendezvous) == 0);
    tide_session_free(s);
    tide_error_free(err);
    return ok;
}

static bool bit_equal(const tide_tensor *a, const tide_tensor *b)
{
    if (!a || !b || tide_tensor_dtype(a) != tide_tensor_dtype(b) || tide_tensor_rank(a) != tide_tensor_rank(b))
        return false;
    for (int i = 0; i < tide_tensor_rank(a); i++)
        if (tide_tensor_dim(a, i) != tide_tensor_dim(b, i))
            return false;
    return tide_tensor_byte_size(a) == tide_tensor_byte_size(b) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

static const char *strategy_name(int s)
{
    return s == TIDE_PLACEMENT_GREEDY ? "greedy" : s == TIDE_PLACEMENT_NAIVE ? "naive" : "round_robin";
}

/* variant 0: the default plan passes; 1: without CSE; 2: without ALAP _Recv scheduling. sim: /cpu:0 and
 * ndev - 1 simulated accelerators (memory of their own, copies, stream threads) instead of ndev CPUs. */
static tide_engine *make_engine_of(int ndev, bool sim, int threads, tide_placement_kind placement, int variant)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = threads;
    o.num_cpu_devices = sim ? 1 : ndev;
    o.num_sim_devices = sim ? ndev - 1 : 0;
    o.placement = placement;
    o.no_cse = variant == 1;
    o.no_alap = variant == 2;
    tide_engine *e = th_engine_new(&o);
    CU_ASSERT_FATAL(tide_engine_num_devices(e) == ndev && e->placement == placement);
    CU_ASSERT_FATAL(e->cse == (variant != 1) && e->alap == (variant != 2) && !e->compress_transfers);
    return e;
}

static tide_engine *make_engine(int ndev, int threads, tide_placement_kind placement, int variant)
{
    return make_engine_of(ndev, false, threads, placement, variant);
}

/* Graph `seed` on the reference engine, then on every multi-device engine: CPUs only (index
 * (ndev-2)*3+strategy), then /cpu:0 with simulated accelerators (9 + the same). */
static void check_graph(uint64_t seed, tide_engine *ref, tide_engine *const *engines)
{
    gen *G = malloc(sizeof *G);
    CU_ASSERT_PTR_NOT_NULL_FATAL(G);
    tide_tensor *want[MAX_FETCHES] = {0};
    generate(G, seed, 1, false);
    totals.conds += G->conds;
    totals.loops += G->loops;
    snprintf(context, sizeof context, "graph %llu (%d nodes) on 1 device", (unsigned long long)seed, G->nodes);
    bool ok = run_graph(ref, G, want);
    gen_clear(G);
    for (int m = 0; m < 6 && ok; m++) {
        int ndev = 2 + m % 3;
        bool sim = m >= 3;
        generate(G, seed, ndev, sim);
        for (int strategy = 0; strategy < 3; strategy++) {
            tide_engine *e = engines[9 * sim + (ndev - 2) * 3 + strategy];
            snprintf(context, sizeof context, "graph %llu (%d nodes) on %d devices%s, %s, %d threads%s%s",
                     (unsigned long long)seed, G->nodes, ndev, sim ? " (cpu and sim)" : "", strategy_name(strategy),
                     tide_engine_num_threads(e), e->cse ? "" : ", no CSE", e->alap ? "" : ", no ALAP");
            tide_tensor *got[MAX_FETCHES] = {0};
            if (run_graph(e, G, got))
                for (int i = 0; i < G->nf; i++)
                    CHECK(bit_equal(got[i], want[i]));
            for (int i = 0; i < G->nf; i++)
                tide_tensor_release(got[i]);
            check_plan(e, G);
        }
        gen_clear(G);
    }
    for (int i = 0; i < MAX_FETCHES; i++)
        tide_tensor_release(want[i]);
    free(G);
    totals.graphs++;
}

static int graph_count(void)
{
    const char *env = getenv("TIDE_PARTITION_GRAPHS");
    int n = env && *env ? atoi(env) : 0;
    return n > 0 ? n : SANITIZED ? 500 : 1000;
}

static uint64_t first_seed(void)
{
    const char *env = getenv("TIDE_PARTITION_FIRST_SEED");
    long long s = env && *env ? atoll(env) : 0;
    return s > 0 ? (uint64_t)s : 1;
}

static void test_random_graphs(void)
{
    tide_engine *ref = make_engine(1, 2, TIDE_PLACEMENT_GREEDY, 0);
    tide_engine *engines[18];
    for (int sim = 0; sim < 2; sim++)
        for (int ndev = 2; ndev <= MAX_DEVICES; ndev++)
            for (int s = 0; s < 3; s++) /* 1 or 2 threads per device; each strategy with and without CSE, ALAP */
                engines[9 * sim + (ndev - 2) * 3 + s] = make_engine_of(ndev, sim, ndev * (1 + (ndev + s) % 2),
                                                                       (tide_placement_kind)s, (ndev + s + 1) % 3);
    int n = graph_count(), failures0 = failures;
    uint64_t seed0 = first_seed();
    long transfers0 = totals.transfers;
    for (int i = 0; i < n; i++)
        check_graph(seed0 + (uint64_t)i, ref, engines);
    fprintf(stderr, "\n  %ld graphs, %ld plans: %ld data edges crossing devices, %ld transfers, %ld ALAP edges, %ld "
            "cross-device control edges, %ld nodes merged by CSE, %ld runs; %ld conds and %ld while loops, %ld "
            "transfers inside loops; %ld nodes on simulated devices, %ld feeds copied in, %ld fetches copied out, %ld "
            "host-memory inputs from the host ",
            totals.graphs, totals.plans, totals.crossing_edges, totals.transfers, totals.alap_edges, totals.cross_control,
            totals.merged, totals.runs, totals.conds, totals.loops, totals.loop_transfers, totals.sim_items,
            totals.feeds_in, totals.fetches_out, totals.host_inputs);
    CU_ASSERT_EQUAL(totals.graphs, n);
    CU_ASSERT(totals.transfers - transfers0 >= n); /* round robin alone crosses in most graphs */
    CU_ASSERT(totals.cross_control > 0 && totals.alap_edges > 0 && totals.merged > 0);
    CU_ASSERT(totals.conds > 0 && totals.loops > 0 && totals.loop_transfers > 0);
    CU_ASSERT(totals.sim_items >= 10L * n && totals.feeds_in > 0 && totals.fetches_out > 0);
    CU_ASSERT_EQUAL(failures, failures0);
    for (int i = 0; i < 18; i++)
        tide_engine_free(engines[i]);
    tide_engine_free(ref);
}

/* The generator itself: the same seed gives the same graph text whatever the device count (but for
 * the requests), valid graphs of 5-60 nodes (a cond or loop adds its own builders' nodes, up to 30 each)
 * with every op kind, and a 1-device plan has no pair. */
static void test_generator(void)
{
    int seen_ops = 0;
    static const char *ops[] = {"MatMul", "ConcatV2", "Transpose", "Reshape", "Sum", "Mean", "AddN", "Exp",
                                "Placeholder", "NoOp", "Switch", "NextIteration"};
    tide_engine *one = make_engine(1, 1, TIDE_PLACEMENT_GREEDY, 0);
    for (uint64_t seed = 1; seed <= 60; seed++) {
        gen *a = malloc(sizeof *a), *b = malloc(sizeof *b);
        CU_ASSERT_FATAL(a && b);
        generate(a, seed, 1, false);
        generate(b, seed, 4, false);
        CU_ASSERT(a->nodes >= 5 && a->nodes <= 60 + 30 * (a->conds + a->loops));
        CU_ASSERT_EQUAL(a->nodes, b->nodes);
        CU_ASSERT_EQUAL(a->nf, b->nf);
        for (int i = 0; i < a->nodes; i++) {
            const tide_node *x = tide_graph_node_at(a->g, i), *y = tide_graph_node_at(b->g, i);
            CU_ASSERT_STRING_EQUAL(tide_node_name(x), tide_node_name(y));
            CU_ASSERT_EQUAL(tide_node_num_inputs(x), tide_node_num_inputs(y));
            CU_ASSERT_EQUAL(tide_node_num_control_inputs(x), tide_node_num_control_inputs(y));
            for (int k = 0; k < 12; k++)
                if (strcmp(tide_node_op(x), ops[k]) == 0)
                    seen_ops |= 1 << k;
        }
        tide_error *err = tide_error_new();
        tide_plan *p = tide__plan_build(one, a->g, a->feeds, a->nfeeds, a->fetches, a->nf, &a->target,
                                        a->target ? 1 : 0, false, NULL, err);
        if (!p)
            fprintf(stderr, "\nplan of graph %d: %s", (int)seed, tide_error_message(err));
        tide_error_free(err);
        CU_ASSERT(p && p->num_transfers == 0 && p->num_synthetic == 0 && !p->uses_rendezvous);
        tide__plan_free(p);
        gen_clear(a);
        gen_clear(b);
        free(a);
        free(b);
    }
    CU_ASSERT_EQUAL(seen_ops, (1 << 12) - 1);
    tide_engine_free(one);
}

/* ---------------------------------------------------------------- aborted steps */

/* A graph on ndev devices whose node 'bad' on device `failing` fails at run time when fed the wrong
 * value (variant 0: MatrixInverse of a singular matrix; 1: Reshape of a [2, 2] Const to a fed shape
 * of the wrong size),
 * while every other device waits in _Recv for it: each uses it directly and through a chain that
 * crosses the devices in turn. Fetches one result per device. */
typedef struct abort_graph {
    tide_graph *g;
    tide_node *input;           /* the fed Placeholder */
    tide_output fetches[MAX_DEVICES];
    int nf;
} abort_graph;

static tide_node *on(tide_graph *g, const char *op, const char *name, int dev, tide_node *a, tide_node *b)
{
    char spec[32];
    snprintf(spec, sizeof spec, "/cpu:%d", dev);
    tide_node_builder *nb = tide_node_builder_new(g, op, name);
    if (a)
        tide_node_builder_add_input(nb, (tide_output){a, 0});
    if (b)
        tide_node_builder_add_input(nb, (tide_output){b, 0});
    tide_node_builder_set_device(nb, spec);
    return gu_finish(nb);
}

static void build_abort_graph(abort_graph *A, int ndev, int failing, int variant)
{
    memset(A, 0, sizeof *A);
    A->g = tide_graph_new();
    tide_graph_push_device(A->g, "/cpu:0");
    float c[6] = {0.5f, -0.25f, 1, 0.75f, -1, 0.125f};
    tide_node *w = gu_const(A->g, "w", th_f32(2, TH_DIMS(2, 2), c));
    tide_node *x = gu_const(A->g, "x", th_f32(2, TH_DIMS(2, 2), c + 2));
    tide_graph_pop_device(A->g);
    char spec[32];
    snprintf(spec, sizeof spec, "/cpu:%d", failing);
    tide_graph_push_device(A->g, spec);
    A->input = variant == 0 ? gu_placeholder(A->g, "m", TIDE_FLOAT32, 2, TH_DIMS(2, 2))
                            : gu_placeholder(A->g, "shape", TIDE_INT32, 1, TH_DIMS(2));
    tide_node *bad = variant == 0 ? on(A->g, "MatrixInverse", "bad", failing, A->input, NULL)
                                  : on(A->g, "Reshape", "bad", failing, x, A->input);
    tide_graph_pop_device(A->g);
    A->fetches[A->nf++] = (tide_output){on(A->g, "Neg", "here", failing, bad, NULL), 0};
    tide_node *chain = bad;
    char name[32];
    for (int d = 0; d < ndev; d++) {
        if (d == failing)
            continue;
        snprintf(name, sizeof name, "tanh_%d", d);
        tide_node *local = on(A->g, "Tanh", name, d, w, NULL);
        snprintf(name, sizeof name, "direct_%d", d);
        tide_node *direct = on(A->g, "Add", name, d, bad, local);
        snprintf(name, sizeof name, "chain_%d", d);
        chain = on(A->g, "MatMul", name, d, chain, direct);
        A->fetches[A->nf++] = (tide_output){chain, 0};
    }
}

/* The fed value: good (the run succeeds) or wrong (node 'bad' fails). */
static tide_tensor *abort_feed(int variant, bool good)
{
    static const float invertible[4] = {2, 1, 1, 1}, singular[4] = {1, 2, 2, 4};
    static const int32_t fits[2] = {2, 2}, too_big[2] = {3, 2};
    if (variant == 0)
        return th_f32(2, TH_DIMS(2, 2), good ? invertible : singular);
    return th_i32(1, TH_DIMS(2), good ? fits : too_big);
}

/* One run of A on s: good runs must succeed with want's bits (recorded when want[0] is NULL); wrong
 * ones must fail with the kernel's own error and fetch nothing. The rendezvous is empty after both. */
static void abort_run(tide_engine *e, tide_session *s, const abort_graph *A, int variant, bool good,
                      tide_tensor **want)
{
    static const char *needles[2] = {"node 'bad' (MatrixInverse): matrix is not invertible: the [2, 2] input",
                                     "node 'bad' (Reshape): cannot reshape a tensor of shape [2, 2] (4 elements) "
                                     "into shape [3, 2] (6 elements)"};
    tide_error *err = tide_error_new();
    tide_feed feed = {{A->input, 0}, abort_feed(variant, good)};
    tide_tensor *got[MAX_DEVICES] = {0};
    tide_status st = guarded_run(s, &feed, 1, A->fetches, A->nf, got, NULL, 0, err);
    totals.runs++;
    if (good) {
        if (!CHECK(st == TIDE_OK))
            fprintf(stderr, " run: %s\n", tide_error_message(err));
        for (int i = 0; i < A->nf; i++) {
            if (!want[i])
                want[i] = tide_tensor_retain(got[i]);
            CHECK(st == TIDE_OK && bit_equal(got[i], want[i]));
        }
    } else {
        totals.aborted_runs++;
        CHECK(st == TIDE_INVALID_ARGUMENT);
        if (!CHECK(strstr(tide_error_message(err), needles[variant]) != NULL))
            fprintf(stderr, " got: %s\n", tide_error_message(err));
        for (int i = 0; i < A->nf; i++)
            CHECK(got[i] == NULL);
    }
    CHECK(tide__rendezvous_pending(e->rendezvous) == 0);
    for (int i = 0; i < A->nf; i++)
        tide_tensor_release(got[i]);
    tide_tensor_release(feed.value);
    tide_error_free(err);
}

/* Every (device count, threads per device, failing device, failing op): a good run, then wrong and
 * good runs in turn on the same session. */
static void test_aborted_steps(void)
{
    enum { REPS = 6 };
    int failures0 = failures;
    long aborted0 = totals.aborted_runs;
    for (int ndev = 2; ndev <= MAX_DEVICES; ndev++)
        for (int per = 1; per <= 2; per++) {
            tide_engine *e = make_engine(ndev, ndev * per, TIDE_PLACEMENT_GREEDY, 0);
            for (int failing = 0; failing < ndev; failing++)
                for (int variant = 0; variant < 2; variant++) {
                    abort_graph A;
                    build_abort_graph(&A, ndev, failing, variant);
                    tide_session *s = tide_session_new(e, A.g, NULL, NULL);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
                    snprintf(context, sizeof context, "aborted step: %d devices, %d threads, '%s' fails on cpu:%d",
                             ndev, ndev * per, variant ? "Reshape" : "MatrixInverse", failing);
                    tide_tensor *want[MAX_DEVICES] = {0};
                    abort_run(e, s, &A, variant, true, want);
                    for (int rep = 0; rep < REPS; rep++) {
                        abort_run(e, s, &A, variant, false, want);
                        abort_run(e, s, &A, variant, true, want);
                    }
                    for (int i = 0; i < MAX_DEVICES; i++)
                        tide_tensor_release(want[i]);
                    tide_session_free(s);
                    tide_graph_free(A.g);
                }
            tide_engine_free(e);
        }
    fprintf(stderr, "\n  %ld aborted runs, each followed by a good one ", totals.aborted_runs - aborted0);
    CU_ASSERT(totals.aborted_runs - aborted0 >= 200);
    CU_ASSERT_EQUAL(failures, failures0);
}

int main(void)
{
    /* Each engine names its strategy and passes (make_engine checks they took); no lossy transfers. */
    unsetenv("TIDE_PLACEMENT");
    unsetenv("TIDE_CSE");
    unsetenv("TIDE_ALAP");
    unsetenv("TIDE_COMPRESS_TRANSFERS");
    static const th_test tests[] = {TH_TEST(test_generator), TH_TEST(test_random_graphs),
                                    TH_TEST(test_aborted_steps), TH_END};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = th_main("partition", tests);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "test_partition: %.1f s (%s build); the slowest run took %.3f s (%.3f s of CPU): %s\n",
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), SANITIZED ? "ASan" : "plain",
            slowest_wall, slowest_cpu, slowest);
    return rc;
}
