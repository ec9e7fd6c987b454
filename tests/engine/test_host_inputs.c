/* test_host_inputs.c — host-memory inputs (engine/host_inputs.c, docs/devices.md "Host-memory inputs") on
 * the simulated accelerator: a kernel's small arguments (a Reshape's shape, a Sum's axes, a Transpose's
 * permutation) made on the host reach it without a copy — constants are evaluated on the host even when
 * requested on the device, fed values go straight in — and the results are the CPU's; an argument
 * computed on the device stays there and still works; a step whose device kernels read host constants is
 * captured and replayed (the graph keeps the values), one reading a fed value on the host is not. */
#include <stdlib.h>
#include <string.h>

#include "graph_util.h"

/* x [4, 6] fed; on /sim:0 (every node requested there): r = Reshape(x, [6, 4]), t = Transpose(r, [1, 0]),
 * out = Sum(t, [1]) -> [4]; shape, perm and axes are Consts (or, with fed_shape, shape is fed). */
typedef struct net {
    tide_graph *g;
    tide_node *x, *shape, *perm, *axes, *out;
} net;

static net net_new(bool fed_shape)
{
    net n = {.g = tide_graph_new()};
    tide_graph_push_device(n.g, "/sim:0");
    n.x = gu_placeholder(n.g, "x", TIDE_FLOAT32, 2, TH_DIMS(4, 6));
    n.shape = fed_shape ? gu_placeholder(n.g, "shape", TIDE_INT32, 1, TH_DIMS(2))
                        : gu_const(n.g, "shape", th_i32(1, TH_DIMS(2), (const int32_t[]){6, 4}));
    n.perm = gu_const(n.g, "perm", th_i32(1, TH_DIMS(2), (const int32_t[]){1, 0}));
    n.axes = gu_const(n.g, "axes", th_i32(1, TH_DIMS(1), (const int32_t[]){1}));
    tide_node *r = gu_op(n.g, "Reshape", "r", 2, (tide_node *const[]){n.x, n.shape});
    tide_node *t = gu_op(n.g, "Transpose", "t", 2, (tide_node *const[]){r, n.perm});
    n.out = gu_op(n.g, "Sum", "out", 2, (tide_node *const[]){t, n.axes});
    tide_graph_pop_device(n.g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n.out);
    return n;
}

/* x for step `step`: x[i] = i + step / 4; out[j] = sum over i of x reshaped [6, 4] transposed row j: the
 * elements of column j of the [6, 4] view, x[k * 4 + j] for k < 6. */
static tide_tensor *x_for(int step, float *want)
{
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)i + (float)step * 0.25f;
    for (int j = 0; j < 4; j++) {
        double s = 0;
        for (int k = 0; k < 6; k++)
            s += v[k * 4 + j];
        want[j] = (float)s;
    }
    return th_f32(2, TH_DIMS(4, 6), v);
}

static tide_engine *sim_engine(bool capture)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_sim_devices = 1;
    o.no_capture = !capture;
    return th_engine_new(&o);
}

/* One run fetching out; its _Recv items into /sim:0 counted in *copies_in (traced). */
static void run_once(tide_session *s, const net *n, int step, bool trace, int *copies_in)
{
    float want[4];
    tide_tensor *xv = x_for(step, want), *shape = th_i32(1, TH_DIMS(2), (const int32_t[]){6, 4});
    tide_feed feeds[2] = {{{n->x, 0}, xv}, {{n->shape, 0}, shape}};
    tide_output fetch = {n->out, 0};
    tide_tensor *got = NULL;
    tide_step_stats *stats = NULL;
    tide_run_options ro = {.trace = trace};
    tide_error *err = tide_error_new();
    bool fed_shape = strcmp(tide_node_op(n->shape), "Placeholder") == 0;
    tide_status st = tide_session_run(s, &ro, feeds, fed_shape ? 2 : 1, &fetch, 1, &got, NULL, 0, trace ? &stats : NULL, err);
    if (st != TIDE_OK)
        fprintf(stderr, "step %d: %s\n", step, tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    tide_tensor *wt = th_f32(1, TH_DIMS(4), want);
    th_assert_close_impl(got, wt, 0, 0, __FILE__, __LINE__);
    for (int i = 0; copies_in && i < tide_step_stats_count(stats); i++)
        *copies_in += strstr(tide_node_name(tide_step_stats_at(stats, i)->node), "/_recv_on_sim0") != NULL;
    tide_step_stats_free(stats);
    tide_tensor_release(wt);
    tide_tensor_release(got);
    tide_tensor_release(xv);
    tide_tensor_release(shape);
    tide_error_free(err);
}

static bool on_host(const tide_node *n)
{
    const char *d = tide_node_assigned_device(n);
    return d && strstr(d, "cpu:0") != NULL;
}

/* The constants are evaluated on /cpu:0 though requested on /sim:0, and nothing but x is copied in; the
 * kernels ran on /sim:0; the results are exact. A fed shape goes in without a copy too. */
static void test_small_arguments_stay_on_host(void)
{
    for (int fed = 0; fed < 2; fed++) {
        tide_engine *e = sim_engine(false);
        net n = net_new(fed);
        tide_session *s = tide_session_new(e, n.g, NULL, NULL);
        int copies_in = 0;
        run_once(s, &n, 0, true, &copies_in);
        CU_ASSERT_EQUAL(copies_in, 1); /* x only */
        CU_ASSERT(on_host(n.perm) && on_host(n.axes) && (fed || on_host(n.shape)));
        CU_ASSERT(!on_host(n.out) && strstr(tide_node_assigned_device(n.out), "sim:0") != NULL);
        tide_session_free(s);
        tide_graph_free(n.g);
        tide_engine_free(e);
    }
}

/* An axis computed on the device (an Identity of the constant there) stays in the device's memory: the
 * kernel reads it there; the constant then stays on the device too (its consumer reads it there). */
static void test_argument_made_on_device(void)
{
    tide_engine *e = sim_engine(false);
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/sim:0");
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_node *c = gu_const(g, "c", th_i32(1, TH_DIMS(1), (const int32_t[]){0}));
    tide_node *axes = gu_op(g, "Identity", "axes", 1, (tide_node *const[]){c});
    tide_node *out = gu_op(g, "Sum", "out", 2, (tide_node *const[]){x, axes});
    tide_graph_pop_device(g);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_tensor *xv = th_f32(2, TH_DIMS(2, 3), (const float[]){1, 2, 3, 10, 20, 30}), *got = NULL;
    tide_feed feed = {{x, 0}, xv};
    tide_output fetch = {out, 0};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &got, NULL, 0, NULL, err), TIDE_OK);
    tide_tensor *want = th_f32(1, TH_DIMS(3), (const float[]){11, 22, 33});
    th_assert_close_impl(got, want, 0, 0, __FILE__, __LINE__);
    CU_ASSERT(!on_host(c) && !on_host(axes));
    tide_tensor_release(want);
    tide_tensor_release(got);
    tide_tensor_release(xv);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* With capture: two eager steps, one captured, then replays, every result exact with x changing each step
 * (the graph reads the constants it recorded). A fed shape read on the host keeps the step eager, saying
 * why. */
static void test_capture_with_host_constants(void)
{
    for (int fed = 0; fed < 2; fed++) {
        tide_engine *e = sim_engine(true);
        net n = net_new(fed);
        tide_session *s = tide_session_new(e, n.g, NULL, NULL);
        tide_capture_status cs;
        for (int step = 0; step < 8; step++)
            run_once(s, &n, step, false, NULL);
        tide_session_capture_status(s, &cs);
        if (!fed) {
            if (cs.last != TIDE_STEP_REPLAYED)
                fprintf(stderr, "not replayed: %s\n", cs.why);
            CU_ASSERT_EQUAL(cs.last, TIDE_STEP_REPLAYED);
            CU_ASSERT_EQUAL(cs.captures, 1);
            CU_ASSERT_EQUAL(cs.replays, 5);
        } else {
            CU_ASSERT_EQUAL(cs.last, TIDE_STEP_EAGER);
            CU_ASSERT_EQUAL(cs.captures, 0);
            CU_ASSERT(strstr(cs.why, "the fed value 'shape:0' is read on the host by node 'r'") != NULL);
        }
        tide_session_free(s);
        tide_graph_free(n.g);
        tide_engine_free(e);
    }
}

int main(void)
{
    setenv("TIDE_CAPTURE", "1", 1); /* capture on (the default; an environment turning it off is overridden) */
    static const th_test tests[] = {TH_TEST(test_small_arguments_stay_on_host), TH_TEST(test_argument_made_on_device),
                                    TH_TEST(test_capture_with_host_constants), TH_END};
    return th_main("host_inputs", tests);
}
