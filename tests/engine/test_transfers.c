/* test_transfers.c — the plan passes around cross-device transfers and duplicate nodes:
 *  - common-subexpression elimination (plan.c pass 3b): what merges (stateless twins, transitively)
 *    and what never does (fed nodes, Placeholders, stateful ops, constants that differ only in the
 *    sign of zero), the switch (no_cse, $TIDE_CSE), observers still seeing a merged node's tensors;
 *  - lossy transfer compression (float32 as its upper 16 bits): exact truncation, per engine, per
 *    graph and per tensor, other dtypes untouched;
 *  - ALAP scheduling of _Recv (pass 6b): control edges added, the same values, and a lower peak of
 *    memory on the receiving device than with every _Recv started at once;
 *  - the simulated step time in step stats, and the model-parallel acceptance figure: on two towers
 *    of dense layers with a join, greedy placement's simulated step time is no worse than all on one
 *    device (naive) and better than round robin. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "graph_util.h"

#define CPU0 "/cpu:0"
#define CPU1 "/cpu:1"

static tide_engine *engine_opts(int devices, bool no_cse, bool no_alap, bool compress, tide_placement_kind kind)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = devices;
    o.num_cpu_devices = devices;
    o.no_cse = no_cse;
    o.no_alap = no_alap;
    o.compress_transfers = compress;
    o.placement = kind;
    return th_engine_new(&o);
}

static tide_node *on(tide_graph *g, const char *op, const char *name, const char *device, int n, tide_node *const *ins)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    if (device)
        tide_node_builder_set_device(b, device);
    return gu_finish(b);
}

static tide_node *const_on(tide_graph *g, const char *name, const char *device, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    if (device)
        tide_node_builder_set_device(b, device);
    return gu_finish(b);
}

/* Sum over every axis of a rank-`rank` input (the axes are a Const next to it). */
static tide_node *sum_all(tide_graph *g, const char *name, const char *device, tide_node *x, int rank)
{
    int32_t axes[4] = {0, 1, 2, 3};
    char axes_name[64];
    snprintf(axes_name, sizeof axes_name, "%s/axes", name);
    tide_node *ax = const_on(g, axes_name, device, th_i32(1, TH_DIMS(rank), axes));
    return on(g, "Sum", name, device, 2, (tide_node *[]){x, ax});
}

/* A plan for fetches (output 0 of each), no feeds unless given. */
static tide_plan *plan_for(tide_engine *e, tide_graph *g, const tide_feed *feeds, int nfeeds, tide_node *const *fetch,
                           int n)
{
    tide_output outs[16];
    for (int i = 0; i < n; i++)
        outs[i] = (tide_output){fetch[i], 0};
    tide_error *err = tide_error_new();
    tide_plan *p = tide__plan_build(e, g, feeds, nfeeds, outs, n, NULL, 0, false, NULL, err);
    if (!p)
        fprintf(stderr, "plan: %s\n", tide_error_message(err));
    tide_error_free(err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* Runs and returns fetch values (caller releases); asserts success. */
static void run_fetch(tide_session *s, const tide_feed *feeds, int nfeeds, tide_node *const *fetch, int n,
                      tide_tensor **vals, tide_step_stats **stats)
{
    tide_output outs[16];
    for (int i = 0; i < n; i++)
        outs[i] = (tide_output){fetch[i], 0};
    tide_run_options o = {.trace = stats != NULL};
    tide_error *err = tide_error_new();
    tide_status st = tide_session_run(s, &o, feeds, nfeeds, outs, n, vals, NULL, 0, stats, err);
    if (st != TIDE_OK)
        fprintf(stderr, "run: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    tide_error_free(err);
}

static bool bits_equal(const tide_tensor *a, const tide_tensor *b)
{
    return a && b && tide_tensor_dtype(a) == tide_tensor_dtype(b) &&
           tide_shape_equal(tide_tensor_shape(a), tide_tensor_shape(b)) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

/* ---------------------------------------------------------------- CSE */

typedef struct seen {
    int count;
    char names[8][64];
} seen;

static bool wants_b(void *user, const tide_node *n)
{
    (void)user;
    return strcmp(tide_node_name(n), "b") == 0;
}

static void record_tensor(void *user, const tide_run_info *run, const tide_node *node, int output,
                          const tide_tensor *value, const tide_exec_point *at)
{
    (void)at;
    (void)run;
    (void)output;
    (void)value;
    seen *s = user;
    if (s->count < 8)
        snprintf(s->names[s->count++], 64, "%s", tide_node_name(node));
}

static void test_cse_merges_twins(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 1, TH_DIMS(3));
    tide_node *c1 = gu_scalar_f32(g, "c1", 2), *c2 = gu_scalar_f32(g, "c2", 2);
    tide_node *pz = gu_scalar_f32(g, "pz", 0.0f), *nz = gu_scalar_f32(g, "nz", -0.0f);
    tide_node *a = gu_op(g, "Mul", "a", 2, (tide_node *[]){x, c1});
    tide_node *b = gu_op(g, "Mul", "b", 2, (tide_node *[]){x, c2});   /* a's twin once c2 is c1's */
    tide_node *d = gu_op(g, "Add", "d", 2, (tide_node *[]){a, b});
    tide_node *qp = gu_op(g, "Div", "qp", 2, (tide_node *[]){c1, pz}); /* 2/+0 = +inf */
    tide_node *qn = gu_op(g, "Div", "qn", 2, (tide_node *[]){c1, nz}); /* 2/-0 = -inf: never merged */
    tide_node *y = gu_placeholder(g, "y", TIDE_FLOAT32, 1, TH_DIMS(3)); /* same attrs as x: still distinct */
    tide_node *e2 = gu_op(g, "Sub", "e2", 2, (tide_node *[]){x, y});
    tide_node *fetch[] = {a, b, d, qp, qn, e2};
    tide_tensor *xv = th_f32(1, TH_DIMS(3), (float[]){1, 2, 3}), *yv = th_f32(1, TH_DIMS(3), (float[]){5, 5, 5});
    tide_feed feeds[] = {{{x, 0}, xv}, {{y, 0}, yv}};

    tide_engine *on_e = engine_opts(1, false, false, false, TIDE_PLACEMENT_GREEDY);
    tide_engine *off_e = engine_opts(1, true, false, false, TIDE_PLACEMENT_GREEDY);
    tide_plan *p = plan_for(on_e, g, feeds, 2, fetch, 6);
    CU_ASSERT_EQUAL(p->num_merged, 2); /* c2 into c1, then b into a */
    tide__plan_free(p);
    p = plan_for(off_e, g, feeds, 2, fetch, 6);
    CU_ASSERT_EQUAL(p->num_merged, 0);
    tide__plan_free(p);

    /* the same values, bit for bit, with and without; an observer watching b still sees b */
    seen watched = {0};
    tide_observer obs = {.user = &watched, .wants_tensors = wants_b, .tensor_produced = record_tensor};
    CU_ASSERT(tide_engine_add_observer(on_e, &obs, NULL) > 0);
    tide_session *s_on = tide_session_new(on_e, g, NULL, NULL), *s_off = tide_session_new(off_e, g, NULL, NULL);
    tide_tensor *v_on[6], *v_off[6];
    run_fetch(s_on, feeds, 2, fetch, 6, v_on, NULL);
    run_fetch(s_off, feeds, 2, fetch, 6, v_off, NULL);
    for (int i = 0; i < 6; i++)
        CU_ASSERT(bits_equal(v_on[i], v_off[i]));
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(v_on[2]))[2], 12.0f);
    CU_ASSERT(isinf(((float *)tide_tensor_data(v_on[4]))[0]) && ((float *)tide_tensor_data(v_on[4]))[0] < 0);
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(v_on[5]))[0], -4.0f);
    CU_ASSERT(watched.count >= 1);
    bool saw_b = false;
    for (int i = 0; i < watched.count; i++)
        saw_b |= strcmp(watched.names[i], "b") == 0;
    CU_ASSERT(saw_b);
    CU_ASSERT_PTR_NOT_NULL(tide_node_assigned_device(b)); /* a merged node still reports a device */
    for (int i = 0; i < 6; i++) {
        tide_tensor_release(v_on[i]);
        tide_tensor_release(v_off[i]);
    }
    tide_session_free(s_on);
    tide_session_free(s_off);
    tide_engine_free(on_e);
    tide_engine_free(off_e);
    tide_tensor_release(xv);
    tide_tensor_release(yv);
    tide_graph_free(g);
}

static void test_cse_never_merges_state(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *shape = const_on(g, "shape", NULL, th_i32(1, TH_DIMS(1), (int32_t[]){64}));
    tide_node_builder *b1 = tide_node_builder_new(g, "RandomUniform", "r1");
    tide_node_builder_add_input(b1, (tide_output){shape, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b1), "dtype", TIDE_FLOAT32);
    tide_node *r1 = gu_finish(b1);
    tide_node_builder *b2 = tide_node_builder_new(g, "RandomUniform", "r2");
    tide_node_builder_add_input(b2, (tide_output){shape, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b2), "dtype", TIDE_FLOAT32);
    tide_node *r2 = gu_finish(b2);
    tide_node *fetch[] = {r1, r2};
    tide_engine *e = engine_opts(1, false, false, false, TIDE_PLACEMENT_GREEDY);
    tide_plan *p = plan_for(e, g, NULL, 0, fetch, 2);
    CU_ASSERT_EQUAL(p->num_merged, 0); /* random ops are stateful: each draws its own numbers */
    tide__plan_free(p);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_tensor *v[2];
    run_fetch(s, NULL, 0, fetch, 2, v, NULL);
    CU_ASSERT_FALSE(bits_equal(v[0], v[1]));
    tide_tensor_release(v[0]);
    tide_tensor_release(v[1]);
    tide_session_free(s);
    tide_engine_free(e);
    tide_graph_free(g);
}

static void test_switch_environment(void)
{
    tide_error *err = tide_error_new();
    setenv("TIDE_CSE", "0", 1);
    tide_engine *e = tide_engine_new(NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_FALSE(e->cse);
    tide_engine_free(e);
    setenv("TIDE_CSE", "yes", 1);
    CU_ASSERT_PTR_NULL(tide_engine_new(NULL, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "TIDE_CSE='yes': expected 0 or 1"));
    unsetenv("TIDE_CSE");
    setenv("TIDE_ALAP", "0", 1);
    setenv("TIDE_COMPRESS_TRANSFERS", "1", 1);
    e = tide_engine_new(NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT(e->cse && !e->alap && e->compress_transfers);
    tide_engine_free(e);
    unsetenv("TIDE_ALAP");
    unsetenv("TIDE_COMPRESS_TRANSFERS");
    tide_error_free(err);
}

/* ---------------------------------------------------------------- compression */

static const float samples[] = {1.0f, 3.14159265f, -0.0f, 1e-30f, -65504.123f, 0.1f, 16777217.0f, INFINITY};
#define NUM_SAMPLES ((int64_t)(sizeof samples / sizeof samples[0]))

/* x on /cpu:0 crosses to /cpu:1 (Identity there); returns the value fetched from /cpu:1. */
static tide_tensor *cross(tide_engine *e, bool graph_flag, bool node_attr, tide_dtype dt)
{
    tide_graph *g = tide_graph_new();
    tide_graph_set_compress_transfers(g, graph_flag);
    tide_tensor *v;
    if (dt == TIDE_FLOAT32) {
        v = th_f32(1, TH_DIMS(NUM_SAMPLES), samples);
    } else {
        int32_t ints[NUM_SAMPLES];
        for (int i = 0; i < NUM_SAMPLES; i++)
            ints[i] = 0x12345678 + i;
        v = th_i32(1, TH_DIMS(NUM_SAMPLES), ints);
    }
    tide_node_builder *b = tide_node_builder_new(g, "Const", "x");
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", v);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    if (node_attr)
        tide_attrs_set_bool(tide_node_builder_attrs(b), "_compress_transfers", true);
    tide_node_builder_set_device(b, CPU0);
    tide_node *x = gu_finish(b);
    tide_tensor_release(v);
    tide_node *y = on(g, "Identity", "y", CPU1, 1, (tide_node *[]){x});
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_tensor *out = gu_fetch(s, y);
    tide_session_free(s);
    tide_graph_free(g);
    return out;
}

static int truncated_count(const tide_tensor *t)
{
    const uint32_t *got = tide_tensor_data(t);
    int exact = 0;
    for (int i = 0; i < NUM_SAMPLES; i++) {
        uint32_t want;
        memcpy(&want, &samples[i], 4);
        CU_ASSERT(got[i] == want || got[i] == (want & 0xffff0000u));
        exact += got[i] == (want & 0xffff0000u);
    }
    return exact;
}

static bool exact_copy(const tide_tensor *t)
{
    return memcmp(tide_tensor_data(t), samples, sizeof samples) == 0;
}

static void test_compression(void)
{
    tide_engine *plain = engine_opts(2, false, false, false, TIDE_PLACEMENT_GREEDY);
    tide_engine *all = engine_opts(2, false, false, true, TIDE_PLACEMENT_GREEDY);
    tide_tensor *t = cross(plain, false, false, TIDE_FLOAT32);
    CU_ASSERT(exact_copy(t)); /* off by default: the same bits */
    tide_tensor_release(t);
    t = cross(all, false, false, TIDE_FLOAT32);
    CU_ASSERT_EQUAL(truncated_count(t), NUM_SAMPLES); /* every value is its upper 16 bits */
    CU_ASSERT_FALSE(exact_copy(t));
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(t))[0], 1.0f); /* representable values survive */
    CU_ASSERT(isinf(((float *)tide_tensor_data(t))[7]));
    tide_tensor_release(t);
    t = cross(plain, true, false, TIDE_FLOAT32); /* per graph */
    CU_ASSERT_EQUAL(truncated_count(t), NUM_SAMPLES);
    tide_tensor_release(t);
    t = cross(plain, false, true, TIDE_FLOAT32); /* per tensor: the producer's attr */
    CU_ASSERT_EQUAL(truncated_count(t), NUM_SAMPLES);
    tide_tensor_release(t);
    t = cross(all, true, true, TIDE_INT32); /* other dtypes travel untouched */
    CU_ASSERT_EQUAL(((int32_t *)tide_tensor_data(t))[3], 0x12345678 + 3);
    tide_tensor_release(t);
    tide_engine_free(plain);
    tide_engine_free(all);
}

/* ---------------------------------------------------------------- ALAP */

#define BIG (1 << 20) /* floats: 4 MiB per received tensor */
#define NUM_BIG 4

typedef struct alap_graph {
    tide_graph *g;
    tide_node *fetch[NUM_BIG];
} alap_graph;

/* Four 4 MiB constants on /cpu:0, sent at the start of the step, needed on /cpu:1 one after another,
 * each only after a stretch of a MatMul chain there (whose next stretch needs the result): without
 * ALAP all four arrive (and, compressed, are restored to float32 on /cpu:1) at once. */
static alap_graph alap_graph_new(void)
{
    alap_graph a = {tide_graph_new(), {0}};
    float *big = malloc(sizeof(float) * BIG);
    tide_node *m = const_on(a.g, "m0", CPU1, th_tensor(TIDE_FLOAT32, 2, TH_DIMS(256, 256), NULL));
    tide_node *w = const_on(a.g, "w", CPU1, th_tensor(TIDE_FLOAT32, 2, TH_DIMS(256, 256), NULL));
    for (int i = 0; i < NUM_BIG; i++) {
        for (int j = 0; j < BIG; j++)
            big[j] = (float)(i + 1) + (float)(j % 7) * 0.25f;
        char name[32];
        snprintf(name, sizeof name, "big%d", i);
        tide_node *scaled = const_on(a.g, name, CPU0, th_f32(1, TH_DIMS(BIG), big)); /* sent at once */
        for (int k = 0; k < 6; k++) {
            snprintf(name, sizeof name, "chain%d_%d", i, k);
            m = on(a.g, "MatMul", name, CPU1, 2, (tide_node *[]){m, w});
        }
        snprintf(name, sizeof name, "level%d", i);
        tide_node *level = sum_all(a.g, name, CPU1, m, 2);
        snprintf(name, sizeof name, "use%d", i);
        tide_node *use = on(a.g, "Mul", name, CPU1, 2, (tide_node *[]){scaled, level});
        snprintf(name, sizeof name, "total%d", i);
        a.fetch[i] = sum_all(a.g, name, CPU1, use, 1);
        snprintf(name, sizeof name, "next%d", i); /* the next stretch of the chain needs this one's total */
        m = on(a.g, "Mul", name, CPU1, 2, (tide_node *[]){m, a.fetch[i]});
    }
    free(big);
    return a;
}

/* Peak bytes on /cpu:1 (and in *peak0 on /cpu:0) during one run (the second: the first builds the
 * plan), and the values. */
static int64_t peak_on_cpu1(tide_engine *e, alap_graph *a, tide_tensor **vals, int *alap_edges, int64_t *peak0)
{
    tide_session *s = tide_session_new(e, a->g, NULL, NULL);
    run_fetch(s, NULL, 0, a->fetch, NUM_BIG, vals, NULL);
    for (int i = 0; i < NUM_BIG; i++)
        tide_tensor_release(vals[i]);
    tide_engine_reset_peak_memory(e);
    int64_t before = 0, peak = 0;
    tide_engine_device_memory(e, 1, &before, NULL);
    run_fetch(s, NULL, 0, a->fetch, NUM_BIG, vals, NULL);
    tide_engine_device_memory(e, 1, NULL, &peak);
    tide_engine_device_memory(e, 0, NULL, peak0);
    tide_plan *p = plan_for(e, a->g, NULL, 0, a->fetch, NUM_BIG);
    *alap_edges = p->num_alap_edges;
    tide__plan_free(p);
    tide_session_free(s);
    return peak - before;
}

static void test_alap_bounds_memory(void)
{
    alap_graph a = alap_graph_new();
    tide_engine *late = engine_opts(2, false, false, true, TIDE_PLACEMENT_GREEDY);
    tide_engine *early = engine_opts(2, false, true, true, TIDE_PLACEMENT_GREEDY);
    tide_tensor *v_late[NUM_BIG], *v_early[NUM_BIG];
    int edges_late = 0, edges_early = 0;
    int64_t sent_late = 0, sent_early = 0;
    int64_t peak_late = peak_on_cpu1(late, &a, v_late, &edges_late, &sent_late);
    int64_t peak_early = peak_on_cpu1(early, &a, v_early, &edges_early, &sent_early);
    /* The sender keeps the compressed (half-size) tensors meanwhile: /cpu:0's peak grows by less. */
    printf("\n    ALAP: peak on /cpu:1 %.1f MiB with, %.1f MiB without; on /cpu:0 %.1f MiB with, %.1f MiB "
           "without (%d control edges added)\n", (double)peak_late / (1 << 20), (double)peak_early / (1 << 20),
           (double)sent_late / (1 << 20), (double)sent_early / (1 << 20), edges_late);
    CU_ASSERT(peak_late + sent_late < peak_early + sent_early);
    CU_ASSERT(edges_late >= NUM_BIG - 1);
    CU_ASSERT_EQUAL(edges_early, 0);
    CU_ASSERT(peak_late < peak_early);
    CU_ASSERT(peak_early >= (int64_t)NUM_BIG * BIG * 4); /* all four restored tensors at once */
    for (int i = 0; i < NUM_BIG; i++) {
        CU_ASSERT(bits_equal(v_late[i], v_early[i]));
        tide_tensor_release(v_late[i]);
        tide_tensor_release(v_early[i]);
    }
    tide_engine_free(late);
    tide_engine_free(early);
    tide_graph_free(a.g);
}

/* ---------------------------------------------------------------- simulated step time */

/* Two towers of `layers` dense layers (width w, batch n) joined by an Add, no device requests. */
static tide_node *two_towers(tide_graph *g, tide_node **x, int n, int w, int layers)
{
    *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(n, w));
    tide_node *towers[2];
    float *vals = malloc(sizeof(float) * (size_t)w * (size_t)w);
    for (int t = 0; t < 2; t++) {
        tide_node *h = *x;
        for (int l = 0; l < layers; l++) {
            for (int i = 0; i < w * w; i++)
                vals[i] = (float)(((i * 7 + l * 13 + t * 29) % 17) - 8) * 0.01f;
            char name[48];
            snprintf(name, sizeof name, "tower%d/W%d", t, l);
            tide_node *W = const_on(g, name, NULL, th_f32(2, TH_DIMS(w, w), vals));
            snprintf(name, sizeof name, "tower%d/matmul%d", t, l);
            h = gu_op(g, "MatMul", name, 2, (tide_node *[]){h, W});
            snprintf(name, sizeof name, "tower%d/relu%d", t, l);
            h = gu_op(g, "Relu", name, 1, (tide_node *[]){h});
        }
        towers[t] = h;
    }
    free(vals);
    tide_node *join = gu_op(g, "Add", "join", 2, towers);
    return sum_all(g, "y", NULL, join, 2);
}

static double simulated_ms(tide_placement_kind kind, tide_graph *g, tide_node *x, tide_node *y, tide_tensor *xv)
{
    tide_engine *e = engine_opts(2, false, false, false, kind);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_feed feed = {{x, 0}, xv};
    tide_tensor *v;
    tide_step_stats *stats = NULL;
    run_fetch(s, &feed, 1, &y, 1, &v, &stats);
    double ms = tide_step_stats_simulated_s(stats) * 1e3;
    CU_ASSERT(ms > 0);
    tide_step_stats_free(stats);
    tide_tensor_release(v);
    tide_session_free(s);
    tide_engine_free(e);
    return ms;
}

static void test_simulated_model_parallel(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x;
    tide_node *y = two_towers(g, &x, 64, 256, 3);
    tide_tensor *xv = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(64, 256), NULL);
    double greedy = simulated_ms(TIDE_PLACEMENT_GREEDY, g, x, y, xv);
    double naive = simulated_ms(TIDE_PLACEMENT_NAIVE, g, x, y, xv);
    double rr = simulated_ms(TIDE_PLACEMENT_ROUND_ROBIN, g, x, y, xv);
    printf("\n    simulated step: greedy %.3f ms, all on one device %.3f ms, round robin %.3f ms\n", greedy, naive,
           rr);
    CU_ASSERT(greedy <= naive);
    CU_ASSERT(greedy < rr);
    CU_ASSERT(greedy < 0.75 * naive); /* two towers in parallel: close to half */
    CU_ASSERT_EQUAL(tide_step_stats_simulated_s(NULL), 0);
    tide_tensor_release(xv);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_cse_merges_twins),
        TH_TEST(test_cse_never_merges_state),
        TH_TEST(test_switch_environment),
        TH_TEST(test_compression),
        TH_TEST(test_alap_bounds_memory),
        TH_TEST(test_simulated_model_parallel),
        TH_END,
    };
    return th_main("transfers", tests);
}
