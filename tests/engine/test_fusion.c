/* test_fusion.c — element-wise fusion (engine/fusion.c, fusion_run.c): fused and unfused plans must
 * compute the same tensors bit for bit (every fused op runs its own kernel's loop over the same
 * elements), and what the user asks to see must stay visible.
 *
 *  - Random DAGs (seeded; TIDE_FUSION_GRAPHS overrides the count, 600): float32 or float64
 *    graphs of [R, C] tensors (C up to 700, across tile and row boundaries) made of unary math ops,
 *    activations, binary ops with full, scalar and last-axis operands, BiasAdd and the activations'
 *    gradient ops, with fan-out, several fetches and placeholders of unknown batch size (some fed a
 *    batch of 1 that broadcasts at run time, which the group must notice). Each runs in a session with
 *    fusion and one without: every fetched tensor equal bit for bit, and fusion must have happened.
 *  - One test per rule and exclusion: a bias add + ReLU chain is one execution; a fetched, watched or
 *    multi-consumer intermediate is not fused away; a watch added after the plan was cached gets a new
 *    plan; a debugger attached plans without fusion; the switch; an error inside a group names the
 *    member that failed; gradients of a small model are equal fused and unfused. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"
#include "fusion.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng = 1;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static int pick(int n) { return (int)(next_u32() % (uint32_t)n); }

static tide_engine *engine_new(int threads)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = threads;
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(&o, err);
    if (!e)
        fprintf(stderr, "engine: %s\n", tide_error_message(err));
    tide_error_free(err);
    return e;
}

static tide_session *session_new(tide_engine *e, tide_graph *g, bool fusion)
{
    tide_session_options so = {.no_fusion = !fusion};
    return tide_session_new(e, g, &so, NULL);
}

/* Runs fetches with feeds; returns the number of executions (traced), -1 on failure (err set). */
static int run(tide_session *s, const tide_feed *feeds, int nfeeds, const tide_output *fetches, int nf,
               tide_tensor **out, tide_error *err)
{
    tide_run_options o = {.trace = true};
    tide_step_stats *stats = NULL;
    tide_status st = tide_session_run(s, &o, feeds, nfeeds, fetches, nf, out, NULL, 0, &stats, err);
    int n = st == TIDE_OK ? tide_step_stats_count(stats) : -1;
    tide_step_stats_free(stats);
    return n;
}

static bool bit_equal(const tide_tensor *a, const tide_tensor *b)
{
    return a && b && tide_tensor_dtype(a) == tide_tensor_dtype(b) &&
           tide_shape_equal(tide_tensor_shape(a), tide_tensor_shape(b)) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

static tide_tensor *random_tensor(tide_dtype dt, int rank, const int64_t *dims)
{
    tide_shape s = tide_shape_make(rank, dims);
    tide_tensor *t = tide_tensor_new(dt, &s, NULL);
    int64_t n = tide_shape_num_elements(&s);
    for (int64_t i = 0; i < n; i++) {
        double v = (double)(int)(next_u32() % 2001 - 1000) / 250.0; /* [-4, 4], zeros included */
        if (dt == TIDE_FLOAT32)
            ((float *)tide_tensor_data(t))[i] = (float)v;
        else
            ((double *)tide_tensor_data(t))[i] = v;
    }
    return t;
}

static tide_node *op_attr_f(tide_graph *g, const char *op, int n, tide_node *const *ins, const char *attr, double v)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    if (attr)
        tide_attrs_set_float(tide_node_builder_attrs(b), attr, v);
    return gu_finish(b);
}

/* ---------------------------------------------------------------- random graphs */

static const char *const unary_ops[] = {"Neg", "Abs", "Square", "Tanh", "Sigmoid", "Relu", "Relu6", "Softsign",
                                        "Exp", "Floor", "Sign", "LeakyRelu", "Elu"};
static const char *const binary_ops[] = {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum",
                                         "SquaredDifference", "BiasAdd"};
static const char *const same_shape_ops[] = {"ReluGrad", "TanhGrad", "SigmoidGrad", "LeakyReluGrad", "EluGrad"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct random_graph {
    tide_graph *g;
    tide_feed feeds[2];
    int nfeeds;
    tide_output fetches[4];
    int nf;
} random_graph;

/* A graph of `size` element-wise nodes over [rows, cols] values; the last node and up to 3 others
 * fetched. Placeholders (unknown batch size) are fed [rows, cols], or [1, cols] when `broadcast`. */
static void random_graph_new(random_graph *r, tide_dtype dt, int64_t rows, int64_t cols, int size, bool broadcast)
{
    memset(r, 0, sizeof *r);
    tide_graph *g = r->g = tide_graph_new();
    tide_node *full[64];
    int nfull = 0;
    int64_t dims[2] = {rows, cols}, bias_dims[1] = {cols};
    full[nfull++] = gu_const(g, NULL, random_tensor(dt, 2, dims));
    for (int p = 0; p < 2; p++) {
        int64_t pd[2] = {-1, cols};
        full[nfull] = gu_placeholder(g, NULL, dt, 2, pd);
        int64_t fed[2] = {broadcast && p == 1 ? 1 : rows, cols};
        r->feeds[r->nfeeds++] = (tide_feed){{full[nfull], 0}, random_tensor(dt, 2, fed)};
        nfull++;
    }
    tide_node *scalar = gu_const(g, NULL, random_tensor(dt, 0, NULL));
    tide_node *bias = gu_const(g, NULL, random_tensor(dt, 1, bias_dims));
    for (int k = 0; k < size && nfull < 64; k++) {
        tide_node *a = full[nfull - 1 - pick(nfull < 4 ? nfull : 4)], *b = full[pick(nfull)], *n;
        int kind = pick(10);
        if (kind < 4) {
            const char *op = unary_ops[pick(COUNT(unary_ops))];
            n = op_attr_f(g, op, 1, &a, strcmp(op, "LeakyRelu") == 0 ? "alpha" : NULL, 0.3);
        } else if (kind < 8) {
            const char *op = binary_ops[pick(COUNT(binary_ops))];
            int operand = pick(4); /* full, full, scalar, bias */
            tide_node *y = strcmp(op, "BiasAdd") == 0 || operand == 3 ? bias : operand == 2 ? scalar : b;
            bool swap = strcmp(op, "BiasAdd") != 0 && pick(2);
            n = gu_op(g, op, NULL, 2, swap ? (tide_node *[]){y, a} : (tide_node *[]){a, y});
        } else {
            const char *op = same_shape_ops[pick(COUNT(same_shape_ops))];
            n = op_attr_f(g, op, 2, (tide_node *[]){a, b}, strcmp(op, "LeakyReluGrad") == 0 ? "alpha" : NULL, 0.2);
        }
        if (!n)
            break;
        full[nfull++] = n;
    }
    r->fetches[r->nf++] = (tide_output){full[nfull - 1], 0};
    for (int i = pick(4); i > 0; i--)
        r->fetches[r->nf++] = (tide_output){full[3 + pick(nfull - 3)], 0};
}

static void random_graph_free(random_graph *r)
{
    for (int i = 0; i < r->nfeeds; i++)
        tide_tensor_release(r->feeds[i].value);
    tide_graph_free(r->g);
}

static void test_random_graphs(void)
{
    int graphs = getenv("TIDE_FUSION_GRAPHS") ? atoi(getenv("TIDE_FUSION_GRAPHS")) : 600;
    tide_engine *e = engine_new(2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    int fused_runs = 0, fewer_executions = 0, mismatches = 0;
    for (int i = 0; i < graphs; i++) {
        rng = 0x9e3779b97f4a7c15ULL + (uint64_t)i * 7919;
        random_graph r;
        tide_dtype dt = pick(2) ? TIDE_FLOAT32 : TIDE_FLOAT64;
        int64_t rows = pick(8) == 0 ? 100 + pick(200) : 1 + pick(6), cols = pick(3) == 0 ? 1 + pick(700) : 1 + pick(40);
        if (pick(10) == 0) { /* rows longer than a tile (fusion_run.c: up to 8 KiB), a bias split over tiles */
            rows = 1 + pick(6);
            cols = 1000 + pick(4000);
        }
        random_graph_new(&r, dt, rows, cols, 2 + pick(20), pick(5) == 0);
        tide_session *fused = session_new(e, r.g, true), *plain = session_new(e, r.g, false);
        tide_tensor *a[4] = {0}, *b[4] = {0};
        tide_error *ea = tide_error_new(), *eb = tide_error_new();
        int na = run(fused, r.feeds, r.nfeeds, r.fetches, r.nf, a, ea);
        int nb = run(plain, r.feeds, r.nfeeds, r.fetches, r.nf, b, eb);
        CU_ASSERT_EQUAL(na < 0, nb < 0);
        if ((na < 0) != (nb < 0))
            fprintf(stderr, "graph %d: fused: %s; unfused: %s\n", i, na < 0 ? tide_error_message(ea) : "ok",
                    nb < 0 ? tide_error_message(eb) : "ok");
        for (int f = 0; na >= 0 && nb >= 0 && f < r.nf; f++)
            if (!bit_equal(a[f], b[f])) {
                if (mismatches++ < 5)
                    fprintf(stderr, "graph %d (%s, [%lld, %lld]): fetch %d ('%s') differs fused vs unfused\n", i,
                            tide_dtype_name(dt), (long long)rows, (long long)cols, f,
                            tide_node_name(r.fetches[f].node));
            }
        fused_runs += na >= 0 && nb >= 0;
        fewer_executions += na >= 0 && na < nb;
        for (int f = 0; f < r.nf; f++) {
            tide_tensor_release(a[f]);
            tide_tensor_release(b[f]);
        }
        tide_error_free(ea);
        tide_error_free(eb);
        tide_session_free(fused);
        tide_session_free(plain);
        random_graph_free(&r);
    }
    printf("\n  %d random graphs: %d ran, %d with fewer executions fused, %d mismatches\n", graphs, fused_runs,
           fewer_executions, mismatches);
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(fewer_executions > graphs / 2);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- rules and exclusions */

/* x [?, 4] fed [3, 4]; h = BiasAdd(x, b); r = Relu(h); out = r * 2. */
typedef struct chain {
    tide_graph *g;
    tide_node *x, *b, *h, *r, *two, *out;
    tide_feed feed;
} chain;

static void chain_new(chain *c)
{
    c->g = tide_graph_new();
    int64_t xd[2] = {-1, 4}, bd[1] = {4}, fed[2] = {3, 4};
    c->x = gu_placeholder(c->g, "x", TIDE_FLOAT32, 2, xd);
    c->b = gu_const(c->g, "b", th_f32(1, bd, (float[]){1, -2, 3, -4}));
    c->h = gu_op(c->g, "BiasAdd", "h", 2, (tide_node *[]){c->x, c->b});
    c->r = gu_op(c->g, "Relu", "r", 1, &c->h);
    c->two = gu_scalar_f32(c->g, "two", 2);
    c->out = gu_op(c->g, "Mul", "out", 2, (tide_node *[]){c->r, c->two});
    c->feed = (tide_feed){{c->x, 0}, th_f32(2, fed, (float[]){1, 2, 3, 4, -5, 6, -7, 8, 0, 0, 0, 0})};
}

static void chain_free(chain *c)
{
    tide_tensor_release(c->feed.value);
    tide_graph_free(c->g);
}

static const float chain_want[12] = {4, 0, 12, 0, 0, 8, 0, 8, 2, 0, 6, 0};

/* Executions of a traced run fetching fetches[0..nf) (checking out's value when it is among them). */
static int chain_run(tide_session *s, chain *c, const tide_output *fetches, int nf)
{
    tide_tensor *out[4] = {0};
    tide_error *err = tide_error_new();
    int n = run(s, &c->feed, 1, fetches, nf, out, err);
    if (n < 0)
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
    for (int i = 0; i < nf; i++) {
        if (n >= 0 && fetches[i].node == c->out)
            CU_ASSERT_EQUAL(memcmp(tide_tensor_data(out[i]), chain_want, sizeof chain_want), 0);
        tide_tensor_release(out[i]);
    }
    tide_error_free(err);
    return n;
}

/* The chain is one execution fused (BiasAdd, Relu, Mul: bias and scalar operands), three unfused;
 * the plan says what it fused, and the timing names the root with its members. */
static void test_bias_relu_chain(void)
{
    chain c;
    chain_new(&c);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true), *plain = session_new(e, c.g, false);
    tide_output o = {c.out, 0};
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3); /* b, two and the group */
    CU_ASSERT_EQUAL(chain_run(plain, &c, &o, 1), 5);
    tide_plan *p = tide__plan_build(e, c.g, &c.feed, 1, &o, 1, NULL, 0, true, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->num_fused_groups, 1);
    CU_ASSERT_EQUAL(p->num_fused_nodes, 3);
    CU_ASSERT_EQUAL(p->num_items, 5); /* b, two, the group, the feed and the fetch */
    const tide_exec_item *group = NULL;
    for (int k = 0; k < p->num_items; k++)
        if (p->items[k].fused)
            group = &p->items[k];
    CU_ASSERT_PTR_NOT_NULL_FATAL(group);
    CU_ASSERT_PTR_EQUAL(group->node, c.out);
    CU_ASSERT_EQUAL(group->num_inputs, 3);
    CU_ASSERT_STRING_EQUAL(group->fused->members_text, "h, r, out");
    tide__plan_free(p);
    /* a traced run's timing of the group: the root's, naming the members */
    tide_run_options opts = {.trace = true};
    tide_step_stats *stats = NULL;
    tide_tensor *value = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, &c.feed, 1, &o, 1, &value, NULL, 0, &stats, NULL), TIDE_OK);
    int groups = 0;
    for (int i = 0; i < tide_step_stats_count(stats); i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        if (t->fused) {
            groups++;
            CU_ASSERT_PTR_EQUAL(t->node, c.out);
            CU_ASSERT_STRING_EQUAL(t->fused, "h, r, out");
        }
    }
    CU_ASSERT_EQUAL(groups, 1);
    tide_step_stats_free(stats);
    tide_tensor_release(value);
    tide_session_free(s);
    tide_session_free(plain);
    tide_engine_free(e);
    chain_free(&c);
}

/* Fetching an intermediate keeps it: r fetched too is pinned, so h and r form one group (its root r)
 * and out is an item of its own. */
static void test_fetched_not_fused(void)
{
    chain c;
    chain_new(&c);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true);
    tide_output o[2] = {{c.out, 0}, {c.r, 0}};
    CU_ASSERT_EQUAL(chain_run(s, &c, o, 2), 4); /* b, two, {h, r}, out */
    tide_plan *p = tide__plan_build(e, c.g, &c.feed, 1, o, 2, NULL, 0, true, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->num_fused_groups, 1);
    for (int k = 0; k < p->num_items; k++)
        if (p->items[k].fused)
            CU_ASSERT_PTR_EQUAL(p->items[k].node, c.r);
    tide__plan_free(p);
    tide_session_free(s);
    tide_engine_free(e);
    chain_free(&c);
}

/* h read by r and by another consumer outside: h stays an item of its own. */
static void test_multi_consumer_not_fused(void)
{
    chain c;
    chain_new(&c);
    tide_node *other = gu_op(c.g, "Sum", "other", 2, (tide_node *[]){c.h, gu_const(c.g, "axis", th_i32(0, NULL,
                                                                                    (int32_t[]){0}))});
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true);
    tide_output o[2] = {{c.out, 0}, {other, 0}};
    /* b, two, h, the group {r, out}, axis, other */
    CU_ASSERT_EQUAL(chain_run(s, &c, o, 2), 6);
    tide_session_free(s);
    tide_engine_free(e);
    chain_free(&c);
}

static bool wants_r(void *user, const tide_node *node)
{
    (void)user;
    return strcmp(tide_node_name(node), "r") == 0;
}

static atomic_int produced_r;
static void tensor_produced(void *user, const tide_run_info *run, const tide_node *node, int output,
                            const tide_tensor *value, const tide_exec_point *at)
{
    (void)user, (void)run, (void)output, (void)value, (void)at;
    if (strcmp(tide_node_name(node), "r") == 0)
        atomic_fetch_add(&produced_r, 1);
}

/* A watched node (an observer wants its tensors) is not fused away, also when the watch comes after
 * the fused plan was cached; removing the watch fuses it again. */
static void test_watched_not_fused(void)
{
    chain c;
    chain_new(&c);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true);
    tide_output o = {c.out, 0};
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_observer obs = {.wants_tensors = wants_r, .tensor_produced = tensor_produced};
    int id = tide_engine_add_observer(e, &obs, NULL);
    CU_ASSERT(id > 0);
    atomic_store(&produced_r, 0);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 4); /* b, two, {h, r}, out */
    CU_ASSERT_EQUAL(atomic_load(&produced_r), 1);
    tide_engine_remove_observer(e, id);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_session_free(s);
    tide_engine_free(e);
    chain_free(&c);
}

static atomic_int dbg_checks;

static tide_debug_action dbg_check(void *user, const tide_debug_event *ev)
{
    (void)user, (void)ev;
    atomic_fetch_add(&dbg_checks, 1);
    return TIDE_DEBUG_CONTINUE;
}

/* watches: the node named *user (a breakpoint on one node). */
static bool dbg_watches_named(void *user, const tide_node *node)
{
    return strcmp(tide_node_name(node), *(const char **)user) == 0;
}

static tide_debug_command dbg_paused(void *user, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)user, (void)step, (void)ev;
    return TIDE_DEBUG_RESUME;
}

/* While a debugger that watches every node is attached, plans are made without fusion; the switch. */
static void test_debugger_and_switch(void)
{
    chain c;
    chain_new(&c);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true);
    tide_output o = {c.out, 0};
    CU_ASSERT(tide_session_fusion_enabled(s));
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_debugger d = {.check = dbg_check, .paused = dbg_paused};
    int id = tide_engine_attach_debugger(e, &d, NULL);
    CU_ASSERT(id > 0);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 5);
    tide_engine_detach_debugger(e, id);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_session_set_fusion(s, false);
    CU_ASSERT(!tide_session_fusion_enabled(s));
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 5);
    tide_session_set_fusion(s, true);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_session_free(s);
    tide_engine_free(e);
    chain_free(&c);
}

/* A debugger whose breakpoints can stop at none of a plan's nodes leaves it fused, and its check is
 * never asked; a breakpoint on one of them (set while attached) makes the next run's plan unfused, so
 * that every node can be stepped to and printed at a stop; keep mode (every value kept) runs unfused. */
static void test_debugger_watching_elsewhere(void)
{
    chain c;
    chain_new(&c);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, c.g, true);
    tide_output o = {c.out, 0};
    const char *watched = "no_such_node";
    tide_debugger d = {.user = &watched, .watches = dbg_watches_named, .check = dbg_check, .paused = dbg_paused};
    int id = tide_engine_attach_debugger(e, &d, NULL);
    CU_ASSERT(id > 0);
    atomic_store(&dbg_checks, 0);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3); /* fused: b, two and the group */
    CU_ASSERT_EQUAL(atomic_load(&dbg_checks), 0);
    watched = "r"; /* a breakpoint on a member of the group */
    tide_engine_debugger_changed(e);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 5);
    CU_ASSERT_EQUAL(atomic_load(&dbg_checks), 2); /* r's check, before and after */
    watched = "no_such_node";
    tide_engine_debugger_changed(e);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    CU_ASSERT_EQUAL(atomic_load(&dbg_checks), 2);
    d.keep_values = true; /* attaching again replaces it */
    int keep = tide_engine_attach_debugger(e, &d, NULL);
    CU_ASSERT(keep > 0);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 5);
    tide_engine_detach_debugger(e, keep);
    CU_ASSERT_EQUAL(chain_run(s, &c, &o, 1), 3);
    tide_session_free(s);
    tide_engine_free(e);
    chain_free(&c);
}

/* x [?, 3] and y [?, 3] fed [2, 3] and [4, 3]: the group falls back to its members' kernels, whose
 * error names the Add that cannot broadcast, not the group's root. */
static void test_error_names_member(void)
{
    tide_graph *g = tide_graph_new();
    int64_t d[2] = {-1, 3}, d2[2] = {2, 3}, d4[2] = {4, 3};
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, d), *y = gu_placeholder(g, "y", TIDE_FLOAT32, 2, d);
    tide_node *sum = gu_op(g, "Add", "sum", 2, (tide_node *[]){x, y});
    tide_node *act = gu_op(g, "Tanh", "act", 1, &sum);
    tide_engine *e = engine_new(1);
    tide_session *s = session_new(e, g, true);
    float v[12] = {0};
    tide_feed feeds[2] = {{{x, 0}, th_f32(2, d2, v)}, {{y, 0}, th_f32(2, d4, v)}};
    tide_output o = {act, 0};
    tide_tensor *out = NULL;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, feeds, 2, &o, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'sum' (Add)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "[2, 3]"));
    /* the same feeds of one batch size run fused */
    tide_tensor_release(feeds[1].value);
    feeds[1].value = th_f32(2, d2, v);
    CU_ASSERT_EQUAL(run(s, feeds, 2, &o, 1, &out, err), 1);
    tide_tensor_release(out);
    tide_error_free(err);
    tide_tensor_release(feeds[0].value);
    tide_tensor_release(feeds[1].value);
    tide_session_free(s);
    tide_engine_free(e);
    tide_graph_free(g);
}

/* A two-layer model's gradients (BiasAdd, Relu, ReluGrad, the loss's arithmetic): equal bit for bit
 * fused and unfused, and fused plans run fewer items. */
static void test_gradients_equal(void)
{
    rng = 42;
    tide_graph *g = tide_graph_new();
    int64_t xd[2] = {8, 5}, w1d[2] = {5, 16}, b1d[1] = {16}, w2d[2] = {16, 3}, b2d[1] = {3};
    tide_node *x = gu_const(g, "x", random_tensor(TIDE_FLOAT32, 2, xd));
    tide_node *w1 = gu_const(g, "w1", random_tensor(TIDE_FLOAT32, 2, w1d));
    tide_node *b1 = gu_const(g, "b1", random_tensor(TIDE_FLOAT32, 1, b1d));
    tide_node *w2 = gu_const(g, "w2", random_tensor(TIDE_FLOAT32, 2, w2d));
    tide_node *b2 = gu_const(g, "b2", random_tensor(TIDE_FLOAT32, 1, b2d));
    tide_node *h = gu_op(g, "Relu", "h", 1,
                         (tide_node *[]){gu_op(g, "BiasAdd", "z1", 2, (tide_node *[]){gu_op(g, "MatMul", "m1", 2,
                                                                                (tide_node *[]){x, w1}), b1})});
    tide_node *z2 = gu_op(g, "BiasAdd", "z2", 2, (tide_node *[]){gu_op(g, "MatMul", "m2", 2, (tide_node *[]){h, w2}), b2});
    tide_node *t = gu_op(g, "Tanh", "t", 1, &z2);
    tide_node *sq = gu_op(g, "Square", "sq", 1, (tide_node *[]){gu_op(g, "Sub", "d", 2,
                                                                               (tide_node *[]){t, gu_scalar_f32(g, "target", 0.5f)})});
    tide_node *axes = gu_const(g, "axes", th_i32(1, (int64_t[]){2}, (int32_t[]){0, 1}));
    tide_node *loss = gu_op(g, "Mean", "loss", 2, (tide_node *[]){sq, axes});
    tide_output ys = {loss, 0}, xs[4] = {{w1, 0}, {b1, 0}, {w2, 0}, {b2, 0}}, grads[4];
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &ys, 1, xs, 4, NULL, grads, err), TIDE_OK);
    tide_engine *e = engine_new(2);
    tide_session *fused = session_new(e, g, true), *plain = session_new(e, g, false);
    tide_tensor *a[4] = {0}, *b[4] = {0};
    int na = run(fused, NULL, 0, grads, 4, a, err), nb = run(plain, NULL, 0, grads, 4, b, err);
    CU_ASSERT(na > 0 && nb > 0 && na < nb);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT(bit_equal(a[i], b[i]));
        tide_tensor_release(a[i]);
        tide_tensor_release(b[i]);
    }
    tide_error_free(err);
    tide_session_free(fused);
    tide_session_free(plain);
    tide_engine_free(e);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_bias_relu_chain),
        TH_TEST(test_fetched_not_fused),
        TH_TEST(test_multi_consumer_not_fused),
        TH_TEST(test_watched_not_fused),
        TH_TEST(test_debugger_and_switch),
        TH_TEST(test_debugger_watching_elsewhere),
        TH_TEST(test_error_names_member),
        TH_TEST(test_gradients_equal),
        TH_TEST(test_random_graphs),
        TH_END,
    };
    return th_main("fusion", tests);
}
