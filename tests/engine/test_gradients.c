/* test_gradients.c — tide_gradients itself: which nodes get gradient ops, sums over several
 * consumers, grad_ys, StopGradient and integer edges, unconnected xs, broadcasting reductions (static
 * and at run time), scopes and devices of the new nodes, and every error, with the graph left
 * unchanged on failure. The per-op gradient formulas are checked numerically by test_gradcheck.c. */
#include <string.h>

#include "engine/graph_util.h"
#include "tide_op.h"

/* An op of this test with a kernel but no gradient registration: a path through it is an error. */
static tide_status test_copy_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static void register_test_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "TestNoGradient",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: {float32, float64}"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Test op: returns x; has no gradient function.",
    });
    tide_kernel_register(&(tide_kernel_spec){.op = "TestNoGradient", .device_type = "cpu",
                                              .compute = test_copy_compute});
}
TIDE_REGISTER(register_test_ops)

static tide_node *vec(tide_graph *g, const char *name, int n, const float *v)
{
    int64_t d = n;
    return gu_const(g, name, th_f32(1, &d, v));
}

static tide_node *op2(tide_graph *g, const char *op, tide_node *a, tide_node *b)
{
    return gu_op(g, op, NULL, 2, (tide_node *[]){a, b});
}

/* Runs one fetch with optional feeds; the fetched tensor or NULL (reported). */
static tide_tensor *eval(tide_graph *g, tide_output out, const tide_feed *feeds, int num_feeds)
{
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    tide_tensor *t = NULL;
    if (!s || tide_session_run(s, NULL, feeds, num_feeds, &out, 1, &t, NULL, 0, NULL, err) != TIDE_OK)
        fprintf(stderr, "eval failed: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(t);
    tide_session_free(s);
    tide_error_free(err);
    return t;
}

static void assert_values(tide_tensor *t, int n, const double *want)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL_FATAL(tide_tensor_num_elements(t), n);
    for (int i = 0; i < n; i++)
        CU_ASSERT_DOUBLE_EQUAL(tide_tensor_get_f64(t, i), want[i], 1e-5);
    tide_tensor_release(t);
}

static tide_output out0(tide_node *n) { return (tide_output){n, 0}; }

/* y = x*x + x: x has two consumers (the Mul twice, the Add once); dy/dx = 2x + 1. */
static void test_sums_over_consumers(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 3, (float[]){1, -2, 0.5f});
    tide_node *y = op2(g, "Add", op2(g, "Mul", x, x), x);
    tide_output dx;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){y, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, err),
                          TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dx.node);
    CU_ASSERT_STRING_EQUAL(tide_node_op(dx.node), "AddN");
    CU_ASSERT_EQUAL(strncmp(tide_node_name(dx.node), "gradients/", 10), 0);
    assert_values(eval(g, dx, NULL, 0), 3, (double[]){3, -3, 2});
    tide_error_free(err);
    tide_graph_free(g);
}

/* Two ys sum their gradients; grad_ys weighs them. */
static void test_several_ys_and_grad_ys(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 2, (float[]){2, 3});
    tide_node *y1 = op2(g, "Mul", x, x);                                /* 2x   */
    tide_node *y2 = op2(g, "Mul", x, vec(g, "c", 2, (float[]){5, 7}));  /* c    */
    tide_node *w = vec(g, "w", 2, (float[]){10, 100});
    tide_output ys[2] = {{y1, 0}, {y2, 0}}, dx;
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, ys, 2, &(tide_output){x, 0}, 1, NULL, &dx, NULL), TIDE_OK);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){4 + 5, 6 + 7});
    tide_output gys[2] = {{w, 0}, {NULL, 0}}; /* weights for y1, ones for y2 */
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, ys, 2, &(tide_output){x, 0}, 1, gys, &dx, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(strncmp(tide_node_name(dx.node), "gradients_1/", 12), 0);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){10 * 4 + 5, 100 * 6 + 7});
    tide_graph_free(g);
}

/* Only nodes on a path from xs to ys get gradient ops: a side branch and a y-only branch don't. */
static void test_only_path_nodes(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 2, (float[]){1, 2});
    tide_node *a = vec(g, "a", 2, (float[]){3, 4});
    tide_node *side = gu_op(g, "Exp", "side", 1, &x);                   /* from x, not to y */
    tide_node *only_y = gu_op(g, "Exp", "only_y", 1, &a);               /* to y, not from x */
    tide_node *y = op2(g, "Mul", x, only_y);
    int before = tide_graph_num_nodes(g);
    tide_output dx;
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){y, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL),
                          TIDE_OK);
    for (int i = before; i < tide_graph_num_nodes(g); i++) {
        tide_node *n = tide_graph_node_at(g, i);
        CU_ASSERT_PTR_NULL(strstr(tide_node_name(n), "side"));
        CU_ASSERT_PTR_NULL(strstr(tide_node_name(n), "only_y_grad"));
        for (int k = 0; k < tide_node_num_inputs(n); k++)
            CU_ASSERT_PTR_NOT_EQUAL(tide_node_input(n, k).node, side);
    }
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){exp(3), exp(4)});
    /* An x that does not reach y gets no gradient, and that is not an error. */
    tide_output xs[2] = {{x, 0}, {side, 0}}, dxs[2];
    CU_ASSERT_EQUAL(tide_gradients(g, &(tide_output){y, 0}, 1, xs, 2, NULL, dxs, NULL), TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(dxs[0].node);
    CU_ASSERT_PTR_NULL(dxs[1].node);
    tide_graph_free(g);
}

/* StopGradient and integer-valued edges block the flow. */
static void test_blocked_paths(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 2, (float[]){1.5f, -2.5f});
    tide_node *stopped = gu_op(g, "StopGradient", NULL, 1, &x);
    tide_node *y = op2(g, "Mul", stopped, x); /* d/dx = stopped = x, not 2x */
    tide_output dx;
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){y, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL),
                          TIDE_OK);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){1.5, -2.5});

    tide_node_builder *b = tide_node_builder_new(g, "Cast", "to_int");
    tide_node_builder_add_input(b, out0(x));
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", TIDE_INT32);
    tide_node *as_int = gu_finish(b);
    b = tide_node_builder_new(g, "Cast", "back");
    tide_node_builder_add_input(b, out0(as_int));
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", TIDE_FLOAT32);
    tide_node *back = gu_finish(b);
    tide_node *z = op2(g, "Mul", back, x); /* d/dx = float(int(x)) only */
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){z, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL),
                          TIDE_OK);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){1, -2});
    /* y does not depend on x through any open path: no gradient at all. */
    CU_ASSERT_EQUAL(tide_gradients(g, &(tide_output){stopped, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL),
                    TIDE_OK);
    CU_ASSERT_PTR_NULL(dx.node);
    tide_graph_free(g);
}

/* Broadcasting: a bias added to a batch sums over the batch, with a known batch and an unknown one. */
static void test_broadcast_reduction(void)
{
    tide_graph *g = tide_graph_new();
    int64_t dims[2] = {-1, 3};
    tide_node *p = gu_placeholder(g, "p", TIDE_FLOAT32, 2, dims);
    tide_node *k = gu_const(g, "k", th_f32(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}));
    tide_node *bias = vec(g, "bias", 3, (float[]){0, 0, 0});
    tide_node *col = gu_const(g, "col", th_f32(2, (int64_t[]){2, 1}, (float[]){7, 8}));
    tide_node *ys[3] = {op2(g, "Mul", op2(g, "Add", p, bias), p),  /* d bias = sum_rows p   (dynamic) */
                        op2(g, "Mul", op2(g, "Add", k, bias), k),  /* d bias = sum_rows k   (static)  */
                        op2(g, "Mul", op2(g, "Add", k, col), k)};  /* d col  = sum_cols k   (static)  */
    tide_output dx;
    tide_tensor *feed_value = th_f32(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6});
    tide_feed feed = {{p, 0}, feed_value};
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){ys[0], 0}, 1, &(tide_output){bias, 0}, 1, NULL, &dx,
                                         NULL), TIDE_OK);
    bool dynamic = false;
    for (int i = 0; i < tide_graph_num_nodes(g); i++)
        dynamic |= strcmp(tide_node_op(tide_graph_node_at(g, i)), "BroadcastGradientArgs") == 0;
    CU_ASSERT_TRUE(dynamic);
    tide_shape s = tide_node_output_shape(dx.node, dx.index);
    CU_ASSERT_EQUAL(s.rank, 1);
    assert_values(eval(g, dx, &feed, 1), 3, (double[]){5, 7, 9});
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){ys[1], 0}, 1, &(tide_output){bias, 0}, 1, NULL, &dx,
                                         NULL), TIDE_OK);
    s = tide_node_output_shape(dx.node, dx.index);
    CU_ASSERT_TRUE(s.rank == 1 && s.dims[0] == 3);
    assert_values(eval(g, dx, NULL, 0), 3, (double[]){5, 7, 9});
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){ys[2], 0}, 1, &(tide_output){col, 0}, 1, NULL, &dx,
                                         NULL), TIDE_OK);
    s = tide_node_output_shape(dx.node, dx.index);
    CU_ASSERT_TRUE(s.rank == 2 && s.dims[0] == 2 && s.dims[1] == 1);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){6, 15});
    tide_tensor_release(feed_value);
    tide_graph_free(g);
}

/* Gradient nodes inherit the forward node's requested device. */
static void test_device_inherited(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 1, (float[]){2});
    tide_graph_push_device(g, "/cpu:0");
    tide_node *y = op2(g, "Mul", x, x);
    tide_graph_pop_device(g);
    int before = tide_graph_num_nodes(g);
    tide_output dx;
    CU_ASSERT_EQUAL_FATAL(tide_gradients(g, &(tide_output){y, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL),
                          TIDE_OK);
    int on_device = 0;
    for (int i = before; i < tide_graph_num_nodes(g); i++) {
        tide_node *n = tide_graph_node_at(g, i);
        if (strstr(tide_node_name(n), "_grad/"))
            on_device += strcmp(tide_node_requested_device(n), "/cpu:0") == 0;
    }
    CU_ASSERT_TRUE(on_device >= 2);
    tide_graph_free(g);
}

static void expect_error(tide_graph *g, const tide_output *ys, int num_ys, const tide_output *xs, int num_xs,
                         const tide_output *grad_ys, tide_status code, const char *needle)
{
    int before = tide_graph_num_nodes(g);
    uint64_t version = tide_graph_version(g);
    tide_output dxs[4] = {{NULL, 0}};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_gradients(g, ys, num_ys, xs, num_xs, grad_ys, dxs, err), code);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", tide_error_message(err), needle);
        CU_FAIL("error message");
    }
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    (void)version;
    for (int i = 0; i < num_xs; i++)
        CU_ASSERT_PTR_NULL(dxs[i].node);
    tide_error_free(err);
}

static void test_errors_leave_graph_unchanged(void)
{
    tide_graph *g = tide_graph_new();
    tide_graph *other = tide_graph_new();
    tide_node *x = vec(g, "x", 2, (float[]){1, 2});
    tide_node *sq = op2(g, "Mul", x, x);
    tide_node *opaque = gu_op(g, "TestNoGradient", "opaque", 1, &sq);
    tide_node *y = op2(g, "Mul", opaque, x);
    tide_output X = {x, 0}, Y = {y, 0};
    /* No gradient for an op on the path: names the op and the node; the Mul ops built before the
     * failure are rolled back. */
    expect_error(g, &Y, 1, &X, 1, NULL, TIDE_INVALID_ARGUMENT, "TestNoGradient (node 'opaque')");
    /* ys must be float. */
    tide_node *i = gu_const(g, "i", th_i32(0, NULL, (int32_t[]){3}));
    expect_error(g, &(tide_output){i, 0}, 1, &X, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    /* Nodes of another graph, bad output indices, mismatched grad_ys. */
    tide_node *foreign = vec(other, "f", 1, (float[]){1});
    expect_error(g, &Y, 1, &(tide_output){foreign, 0}, 1, NULL, TIDE_INVALID_ARGUMENT, "another graph");
    expect_error(g, &Y, 1, &(tide_output){x, 3}, 1, NULL, TIDE_INVALID_ARGUMENT, "output 3");
    tide_node *d = gu_const(g, "d", th_f64(1, (int64_t[]){2}, (double[]){1, 1}));
    expect_error(g, &Y, 1, &X, 1, &(tide_output){d, 0}, TIDE_INVALID_ARGUMENT, "grad_ys[0] has dtype float64");
    CU_ASSERT_EQUAL(tide_gradients(NULL, &Y, 1, &X, 1, NULL, NULL, NULL), TIDE_INVALID_ARGUMENT);
    /* The opaque path wrapped in StopGradient is fine. */
    tide_node *stopped = gu_op(g, "StopGradient", NULL, 1, &opaque);
    tide_node *y2 = op2(g, "Mul", stopped, x);
    tide_output dx;
    CU_ASSERT_EQUAL(tide_gradients(g, &(tide_output){y2, 0}, 1, &X, 1, NULL, &dx, NULL), TIDE_OK);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){1, 4});
    tide_graph_free(other);
    tide_graph_free(g);
}

/* y itself as x, and a gradient function's registry listing. */
static void test_trivial_and_registry(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = vec(g, "x", 2, (float[]){1, 2});
    tide_output dx;
    CU_ASSERT_EQUAL(tide_gradients(g, &(tide_output){x, 0}, 1, &(tide_output){x, 0}, 1, NULL, &dx, NULL), TIDE_OK);
    assert_values(eval(g, dx, NULL, 0), 2, (double[]){1, 1});
    const char *const *names;
    int n = tide_registry_gradient_ops(&names);
    bool mul = false, stop = false;
    for (int k = 0; k < n; k++) {
        mul |= strcmp(names[k], "Mul") == 0;
        stop |= strcmp(names[k], "StopGradient") == 0;
        if (k)
            CU_ASSERT_TRUE(strcmp(names[k - 1], names[k]) < 0);
    }
    CU_ASSERT_TRUE(mul);
    CU_ASSERT_FALSE(stop); /* declared not differentiable: not listed */
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_sums_over_consumers),
        TH_TEST(test_several_ys_and_grad_ys),
        TH_TEST(test_only_path_nodes),
        TH_TEST(test_blocked_paths),
        TH_TEST(test_broadcast_reduction),
        TH_TEST(test_device_inherited),
        TH_TEST(test_errors_leave_graph_unchanged),
        TH_TEST(test_trivial_and_registry),
        TH_END,
    };
    return th_main("gradients", tests);
}
