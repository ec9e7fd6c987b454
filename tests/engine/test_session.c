/* test_session.c — sessions: Run with feeds, fetches and targets, pruning, the plan cache, variables
 * in containers shared across sessions, control dependencies, tracing and observers, and the errors a
 * user can cause at run time. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_util.h"
#include "tide_op.h"

/* A kernel that breaks the contract: it produces its output, then returns a failure without saying
 * why through tide_kernel_error. The failure must still fail the run, and name the node and op. */
static tide_status returns_error_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_INVALID_ARGUMENT;
}

static void register_test_ops(void)
{
    tide_op_register(&(tide_op_spec){.name = "TestReturnsError", .inputs = {"x: T"}, .outputs = {"y: T"},
                                     .attrs = {"T: alltypes"}, .shape_fn = tide_shape_fn_unchanged,
                                     .doc = "Test only: returns a failure without tide_kernel_error."});
    tide_kernel_register(&(tide_kernel_spec){.op = "TestReturnsError", .device_type = "cpu",
                                             .compute = returns_error_compute});
}
TIDE_REGISTER(register_test_ops)

static void test_fetch_const_and_identity(void)
{
    tide_graph *g = tide_graph_new();
    float v[3] = {1, 2, 3};
    tide_node *c = gu_const(g, "c", th_f32(1, TH_DIMS(3), v));
    tide_node *id = gu_op(g, "Identity", "id", 1, &c);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *out = gu_fetch(s, id);
    tide_tensor *want = th_f32(1, TH_DIMS(3), v);
    TH_ASSERT_CLOSE(out, want, 0, 0);
    CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(id), "/job:localhost/replica:0/task:0/device:cpu:0");
    CU_ASSERT_EQUAL(tide_session_step(s), 1);
    tide_tensor_release(out);
    tide_tensor_release(want);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_feed_placeholder_and_missing_feed(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, 2));
    tide_node *y = gu_op(g, "Identity", "y", 1, &x);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output fetch = {y, 0};
    /* Not fed: the placeholder's kernel refuses, naming it. */
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'x' (Placeholder)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "must feed"));
    CU_ASSERT_PTR_NULL(out);
    /* Fed with a matching shape. */
    float v[4] = {1, 2, 3, 4};
    tide_tensor *in = th_f32(2, TH_DIMS(2, 2), v);
    tide_feed feed = {{x, 0}, in};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    TH_ASSERT_CLOSE(out, in, 0, 0);
    tide_tensor_release(out);
    /* Wrong shape and wrong dtype are refused before anything runs. */
    tide_tensor *bad = th_f32(1, TH_DIMS(4), v);
    feed.value = bad;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "shape [4]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'x:0'"));
    double dv[4] = {1, 2, 3, 4};
    tide_tensor *bad2 = th_f64(2, TH_DIMS(2, 2), dv);
    feed.value = bad2;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "float64"));
    tide_tensor_release(bad);
    tide_tensor_release(bad2);
    tide_tensor_release(in);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_feed_intermediate_prunes_upstream(void)
{
    /* x (unfed placeholder) -> a -> b. Feeding a:0 means x never runs. */
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, -1, NULL);
    tide_node *a = gu_op(g, "Identity", "a", 1, &x);
    tide_node *b = gu_op(g, "Identity", "b", 1, &a);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    float v = 7;
    tide_tensor *seven = th_f32(0, NULL, &v);
    tide_feed feed = {{a, 0}, seven};
    tide_output fetch = {b, 0};
    tide_tensor *out = NULL;
    tide_error *err = tide_error_new();
    tide_step_stats *stats = NULL;
    tide_run_options opts = {.trace = true};
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, &feed, 1, &fetch, 1, &out, NULL, 0, &stats, err), TIDE_OK);
    TH_ASSERT_CLOSE(out, seven, 0, 0);
    /* Only b ran: x and a were pruned away. */
    CU_ASSERT_EQUAL(tide_step_stats_count(stats), 1);
    if (tide_step_stats_count(stats) == 1) {
        const tide_node_timing *t = tide_step_stats_at(stats, 0);
        CU_ASSERT_PTR_EQUAL(t->node, b);
        CU_ASSERT(t->end_ns >= t->start_ns && t->start_ns >= t->scheduled_ns);
    }
    /* Fetching a fed output returns the fed tensor itself. */
    tide_tensor *out2 = NULL;
    tide_output fa = {a, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fa, 1, &out2, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_PTR_EQUAL(out2, seven);
    tide_tensor_release(out2);
    tide_step_stats_free(stats);
    tide_tensor_release(out);
    tide_tensor_release(seven);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_plan_cache(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *a = gu_op(g, "Identity", "a", 1, &c);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    for (int i = 0; i < 3; i++)
        tide_tensor_release(gu_fetch(s, a));
    CU_ASSERT_EQUAL(tide_session_num_plans(s), 1);
    tide_tensor_release(gu_fetch(s, c));
    CU_ASSERT_EQUAL(tide_session_num_plans(s), 2);
    /* Growing the graph keeps cached plans valid. */
    tide_node *b = gu_op(g, "Identity", "b", 1, &a);
    tide_tensor_release(gu_fetch(s, a));
    CU_ASSERT_EQUAL(tide_session_num_plans(s), 2);
    tide_tensor_release(gu_fetch(s, b));
    CU_ASSERT_EQUAL(tide_session_num_plans(s), 3);
    /* Nodes a plan has used can no longer be rolled back. */
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_rollback(g, 1, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 3);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* A float32 scalar variable initialised by an Assign, and an AssignAdd of 1. */
typedef struct counter {
    tide_node *var, *init, *inc;
} counter;

static counter make_counter(tide_graph *g, const char *name, const char *container)
{
    counter c;
    c.var = gu_variable(g, name, TIDE_FLOAT32, 0, NULL, container);
    tide_node *zero = gu_scalar_f32(g, NULL, 0);
    tide_node *one = gu_scalar_f32(g, NULL, 1);
    tide_node *ins[2] = {c.var, zero};
    c.init = gu_op(g, "Assign", NULL, 2, ins);
    ins[1] = one;
    c.inc = gu_op(g, "AssignAdd", NULL, 2, ins);
    return c;
}

static float read_f32(tide_session *s, tide_node *n)
{
    tide_tensor *t = gu_fetch(s, n);
    float v = t ? *(float *)tide_tensor_data(t) : -1;
    tide_tensor_release(t);
    return v;
}

static void test_variables_persist_and_share(void)
{
    tide_engine *e = th_engine();
    tide_graph *g1 = tide_graph_new(), *g2 = tide_graph_new();
    counter c1 = make_counter(g1, "steps", "shared");
    counter c2 = make_counter(g2, "steps", "shared");
    tide_session *s1 = tide_session_new(e, g1, NULL, NULL), *s2 = tide_session_new(e, g2, NULL, NULL);
    tide_error *err = tide_error_new();
    /* Uninitialised read is a clear error. */
    tide_output fv = {c1.var, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s1, NULL, NULL, 0, &fv, 1, &out, NULL, 0, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "uninitialized"));
    CU_ASSERT_EQUAL(gu_target(s1, c1.init, err), TIDE_OK);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(gu_target(s1, c1.inc, err), TIDE_OK);
    CU_ASSERT_EQUAL(read_f32(s1, c1.var), 5.0f);
    /* The other session, over another graph, names the same variable: it sees and updates it. */
    CU_ASSERT_EQUAL(read_f32(s2, c2.var), 5.0f);
    CU_ASSERT_EQUAL(gu_target(s2, c2.inc, err), TIDE_OK);
    CU_ASSERT_EQUAL(read_f32(s1, c1.var), 6.0f);
    CU_ASSERT_EQUAL(tide_engine_container_size(e, "shared"), 1);
    /* Resetting the container drops it: uninitialised again. */
    CU_ASSERT_EQUAL(tide_engine_reset_container(e, "shared", err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_engine_container_size(e, "shared"), 0);
    CU_ASSERT_EQUAL(tide_session_run(s1, NULL, NULL, 0, &fv, 1, &out, NULL, 0, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_EQUAL(tide_engine_reset_container(e, "no-such", err), TIDE_NOT_FOUND);
    tide_error_free(err);
    tide_session_free(s1);
    tide_session_free(s2);
    tide_graph_free(g1);
    tide_graph_free(g2);
}

/* A Variable node W of the given dtype and dims in the default container "redeclared", with an
 * Assign of `value` (consumed) as its initializer. */
static tide_node *declare(tide_graph *g, tide_dtype dt, int rank, const int64_t *dims, tide_tensor *value,
                          tide_node **init)
{
    tide_node *w = gu_variable(g, "W", dt, rank, dims, "redeclared");
    tide_node *ins[2] = {w, gu_const(g, NULL, value)};
    *init = gu_op(g, "Assign", "W/init", 2, ins);
    return w;
}

/* The contract: a variable's value never disagrees with the shape (or dtype) its Variable node
 * declares. A graph that declares W with another shape than the value an earlier graph left in the
 * container (the REPL's :reset, then W = variable(zeros{5})) must not read the old value, and its
 * initializer replaces it; the old graph then refuses to read the new value. */
static void test_variable_redeclared_with_another_shape(void)
{
    tide_engine *e = th_engine();
    tide_error *err = tide_error_new();
    tide_graph *g1 = tide_graph_new(), *g2 = tide_graph_new(), *g3 = tide_graph_new();
    tide_node *init1, *init2, *init3;
    float ones[6] = {1, 1, 1, 1, 1, 1}, zeros[5] = {0};
    tide_node *w1 = declare(g1, TIDE_FLOAT32, 2, TH_DIMS(3, 2), th_f32(2, TH_DIMS(3, 2), ones), &init1);
    tide_node *w2 = declare(g2, TIDE_FLOAT32, 1, TH_DIMS(5), th_f32(1, TH_DIMS(5), zeros), &init2);
    tide_session *s1 = tide_session_new(e, g1, NULL, NULL), *s2 = tide_session_new(e, g2, NULL, NULL);
    CU_ASSERT_EQUAL(gu_target(s1, init1, err), TIDE_OK);
    /* The [5] declaration does not hand out the [3, 2] value: a clear error names both shapes. */
    tide_output o2 = {w2, 0}, o1 = {w1, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s2, NULL, NULL, 0, &o2, 1, &out, NULL, 0, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "[3, 2]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "[5]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "initializer"));
    /* Its initializer works (it failed for ever before) and replaces the value. */
    CU_ASSERT_EQUAL(gu_target(s2, init2, err), TIDE_OK);
    out = gu_fetch(s2, w2);
    TH_ASSERT_SHAPE(out, 1, TH_DIMS(5));
    tide_tensor_release(out);
    /* Now the old [3, 2] declaration refuses the [5] value instead of handing it out. */
    out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s1, NULL, NULL, 0, &o1, 1, &out, NULL, 0, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NULL(out);
    /* Another dtype: the same, through its initializer. */
    double twos[5] = {2, 2, 2, 2, 2};
    tide_node *w3 = declare(g3, TIDE_FLOAT64, 1, TH_DIMS(5), th_f64(1, TH_DIMS(5), twos), &init3);
    tide_session *s3 = tide_session_new(e, g3, NULL, NULL);
    tide_output o3 = {w3, 0};
    CU_ASSERT_NOT_EQUAL(tide_session_run(s3, NULL, NULL, 0, &o3, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(gu_target(s3, init3, err), TIDE_OK);
    out = gu_fetch(s3, w3);
    CU_ASSERT(out && tide_tensor_dtype(out) == TIDE_FLOAT64 && ((double *)tide_tensor_data(out))[4] == 2.0);
    tide_tensor_release(out);
    CU_ASSERT_NOT_EQUAL(tide_session_run(s2, NULL, NULL, 0, &o2, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_PTR_NULL(out);
    tide_engine_reset_container(e, "redeclared", NULL);
    tide_error_free(err);
    tide_session_free(s1);
    tide_session_free(s2);
    tide_session_free(s3);
    tide_graph_free(g1);
    tide_graph_free(g2);
    tide_graph_free(g3);
}

static void test_snapshot_semantics(void)
{
    /* A value fetched before an update keeps its old contents (copy on write). */
    tide_graph *g = tide_graph_new();
    counter c = make_counter(g, "snap", "snapshots");
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(gu_target(s, c.init, err), TIDE_OK);
    tide_tensor *before = gu_fetch(s, c.var);
    CU_ASSERT_EQUAL(gu_target(s, c.inc, err), TIDE_OK);
    CU_ASSERT_EQUAL(*(float *)tide_tensor_data(before), 0.0f);
    CU_ASSERT_EQUAL(read_f32(s, c.var), 1.0f);
    tide_tensor_release(before);
    tide_engine_reset_container(th_engine(), "snapshots", NULL);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_control_dependencies(void)
{
    tide_graph *g = tide_graph_new();
    counter c = make_counter(g, "ctl", "control");
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "step");
    tide_node_builder_add_control_input(b, c.inc);
    tide_node *step = gu_finish(b);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(gu_target(s, c.init, err), TIDE_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(gu_target(s, step, err), TIDE_OK);
    CU_ASSERT_EQUAL(read_f32(s, c.var), 3.0f);
    tide_engine_reset_container(th_engine(), "control", NULL);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_assign_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *v = gu_variable(g, "w", TIDE_FLOAT32, 1, TH_DIMS(3), NULL);
    float vals[2] = {1, 2};
    tide_node *c2 = gu_const(g, "c2", th_f32(1, TH_DIMS(2), vals));
    tide_node *c1 = gu_scalar_f32(g, "c1", 1);
    tide_error *err = tide_error_new();
    int before = tide_graph_num_nodes(g);
    /* Shape mismatch caught at graph time; the graph is unchanged. */
    tide_node_builder *b = tide_node_builder_new(g, "Assign", NULL);
    tide_node_builder_add_input(b, (tide_output){v, 0});
    tide_node_builder_add_input(b, (tide_output){c2, 0});
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "[2]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "[3]"));
    /* Ref input not from a Variable. */
    b = tide_node_builder_new(g, "Assign", NULL);
    tide_node_builder_add_input(b, (tide_output){c1, 0});
    tide_node_builder_add_input(b, (tide_output){c1, 0});
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "must come from a Variable"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_run_errors(void)
{
    tide_graph *g = tide_graph_new(), *other = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *foreign = gu_scalar_f32(other, "c", 1);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output fetch = {foreign, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "not a node of this session's graph"));
    fetch = (tide_output){c, 3};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_OUT_OF_RANGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "output 3 of 'c'"));
    tide_output o;
    CU_ASSERT_EQUAL(tide_graph_output(g, "nope:0", &o, err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "no node named 'nope'"));
    CU_ASSERT_EQUAL(tide_graph_output(g, "c:1", &o, err), TIDE_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(tide_graph_output(g, "c", &o, err), TIDE_OK);
    CU_ASSERT_PTR_EQUAL(o.node, c);
    /* Feeding the same output twice. */
    float v = 2;
    tide_tensor *t = th_f32(0, NULL, &v);
    tide_feed feeds[2] = {{{c, 0}, t}, {{c, 0}, t}};
    fetch = (tide_output){c, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, feeds, 2, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "fed twice"));
    /* A device that does not exist. */
    tide_node_builder *b = tide_node_builder_new(g, "Identity", "on_gpu");
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_node_builder_set_device(b, "/gpu:0");
    tide_node *on_gpu = gu_finish(b);
    fetch = (tide_output){on_gpu, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "matches none of this engine's devices"));
    /* A malformed device is refused when the node is built. */
    b = tide_node_builder_new(g, "Identity", NULL);
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_node_builder_set_device(b, "/tpu:0");
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "unknown device type"));
    tide_tensor_release(t);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
    tide_graph_free(other);
}

static void test_kernel_return_value_checked(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *bad = gu_op(g, "TestReturnsError", "bad", 1, &c);
    tide_node *after = gu_op(g, "Identity", "after", 1, &bad);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output fetch = {after, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'bad' (TestReturnsError)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "returned INVALID_ARGUMENT"));
    tide_tensor_release(out);
    /* Eagerly too. */
    float v = 1;
    tide_tensor *x = th_f32(0, NULL, &v);
    TH_ASSERT_FAILS("TestReturnsError", &x, 1, NULL, TIDE_INVALID_ARGUMENT, "op TestReturnsError");
    tide_tensor_release(x);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* A session holds its graph: the graph may be freed first and is destroyed with the last session
 * that uses it; two sessions may share it, and extend it, in any order of freeing. */
static void test_session_holds_its_graph(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 2);
    tide_node *id = gu_op(g, "Identity", "id", 1, &c);
    tide_session *first = tide_session_new(th_engine(), g, NULL, NULL);
    tide_session *second = tide_session_new(th_engine(), g, NULL, NULL);
    tide_graph_free(g); /* the creator lets go first */
    tide_tensor *out = gu_fetch(first, id);
    CU_ASSERT(out && *(float *)tide_tensor_data(out) == 2.0f);
    tide_tensor_release(out);
    CU_ASSERT_PTR_EQUAL(tide_session_graph(second), g);
    CU_ASSERT_EQUAL(tide_session_extend(second, "doubled = Add(id, id)\n", NULL), TIDE_OK);
    tide_session_free(first);
    tide_node *doubled = tide_graph_node(tide_session_graph(second), "doubled");
    CU_ASSERT_PTR_NOT_NULL_FATAL(doubled);
    out = gu_fetch(second, doubled);
    CU_ASSERT(out && *(float *)tide_tensor_data(out) == 4.0f);
    tide_tensor_release(out);
    CU_ASSERT_STRING_EQUAL(tide_node_name(c), "c"); /* the nodes live while a session does */
    tide_session_free(second); /* the graph goes now (the sanitizer build checks that nothing leaks) */
    /* The usual order too: sessions first, then the graph. */
    g = tide_graph_new();
    c = gu_scalar_f32(g, "c", 3);
    first = tide_session_new(th_engine(), g, NULL, NULL);
    out = gu_fetch(first, c);
    tide_tensor_release(out);
    tide_session_free(first);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1);
    tide_graph_free(g);
}

/* Without an error object (err NULL, which every call allows) a run still succeeds or fails as with
 * one: a NoOp target ran nothing and returned OK, and a run whose plan failed returned OK. */
static void test_runs_without_error_object(void)
{
    tide_graph *g = tide_graph_new(), *other = tide_graph_new();
    tide_node *v = gu_variable(g, "v", TIDE_FLOAT32, 0, NULL, "no_error_object");
    tide_node *c = gu_scalar_f32(g, "c", 5);
    tide_node *assign = gu_op(g, "Assign", "assign", 2, (tide_node *[]){v, c});
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "init");
    tide_node_builder_add_control_input(b, assign);
    tide_node *init = gu_finish(b);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, NULL), TIDE_OK);
    tide_tensor *out = gu_fetch(s, v); /* the NoOp's control input ran */
    CU_ASSERT(out && *(float *)tide_tensor_data(out) == 5.0f);
    tide_tensor_release(out);
    tide_output foreign = {gu_scalar_f32(other, "c", 1), 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &foreign, 1, &out, NULL, 0, NULL, NULL), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_NOT_EQUAL(tide_graph_extend_text(g, "a = Identity(nope)\n", NULL), TIDE_OK);
    CU_ASSERT_NOT_EQUAL(tide_graph_extend_text(g, "a = Identity(c) @\"/tpu:0\"\n", NULL), TIDE_OK);
    b = tide_node_builder_new(g, "Identity", "on_tpu"); /* a malformed device */
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_node_builder_set_device(b, "/tpu:0");
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, NULL));
    CU_ASSERT_PTR_NULL(tide_graph_node(g, "on_tpu"));
    tide_session_free(s);
    tide_graph_free(g);
    tide_graph_free(other);
    tide_engine_reset_container(th_engine(), "no_error_object", NULL);
}

typedef struct counts {
    atomic_int started, ended, nodes, tensors, fetched;
    _Atomic double fetched_value;
} counts;

static void on_start(void *u, const tide_run_info *r) { (void)r; atomic_fetch_add(&((counts *)u)->started, 1); }
static void on_end(void *u, const tide_run_info *r, tide_status st, const char *m, int64_t w)
{
    (void)r, (void)st, (void)m, (void)w;
    atomic_fetch_add(&((counts *)u)->ended, 1);
}
static void on_node(void *u, const tide_run_info *r, const tide_node_timing *t)
{
    (void)r, (void)t;
    atomic_fetch_add(&((counts *)u)->nodes, 1);
}
static bool wants(void *u, const tide_node *n) { (void)u; return strcmp(tide_node_name(n), "b") == 0; }
static void on_tensor(void *u, const tide_run_info *r, const tide_node *n, int i, const tide_tensor *t,
                      const tide_exec_point *at)
{
    (void)r, (void)n, (void)i, (void)t, (void)at;
    atomic_fetch_add(&((counts *)u)->tensors, 1);
}

static void on_fetched(void *u, const tide_run_info *r, int fetch, const tide_tensor *t)
{
    (void)r;
    counts *k = u;
    atomic_fetch_add(&k->fetched, 1);
    if (fetch == 0)
        k->fetched_value = tide_tensor_get_f64(t, 0);
}

static void test_observers(void)
{
    tide_engine *e = tide_engine_new(NULL, NULL);
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    tide_node *a = gu_op(g, "Identity", "a", 1, &c);
    tide_node *b = gu_op(g, "Identity", "b", 1, &a);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    counts k = {0};
    tide_observer obs = {.user = &k, .run_started = on_start, .run_ended = on_end, .node_finished = on_node,
                         .wants_tensors = wants, .tensor_produced = on_tensor, .tensor_fetched = on_fetched};
    int id = tide_engine_add_observer(e, &obs, NULL);
    CU_ASSERT(id > 0);
    tide_tensor_release(gu_fetch(s, b)); /* untraced: no node timings, but b's tensor */
    tide_run_options opts = {.trace = true};
    tide_output fetch = {b, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, NULL), TIDE_OK);
    tide_tensor_release(out);
    CU_ASSERT_EQUAL(atomic_load(&k.started), 2);
    CU_ASSERT_EQUAL(atomic_load(&k.ended), 2);
    CU_ASSERT_EQUAL(atomic_load(&k.nodes), 3);
    CU_ASSERT_EQUAL(atomic_load(&k.tensors), 2);
    CU_ASSERT_EQUAL(atomic_load(&k.fetched), 2); /* every fetched value is shown, traced or not */
    CU_ASSERT_DOUBLE_EQUAL(k.fetched_value, 1.0, 0);
    tide_run_options plain = {0};
    CU_ASSERT_EQUAL(tide_session_run(s, &plain, NULL, 0, NULL, 0, NULL, &b, 1, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(atomic_load(&k.fetched), 2); /* a target is not a fetch */
    tide_engine_remove_observer(e, id);
    tide_tensor_release(gu_fetch(s, b));
    CU_ASSERT_EQUAL(atomic_load(&k.started), 3); /* the two fetches and the target run, not this one */
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* Watching a node changes what a fused plan may fuse away, so each observer added or removed makes the
 * next run build a new plan; the plans made for earlier observers can never be found again and are
 * dropped (1,000 changes left 1,000 plans in the cache, each with its kernels) — also while another
 * thread runs the session on a plan being dropped, which is freed only once that run is done. */
static bool watch_h(void *user, const tide_node *n)
{
    (void)user;
    return strcmp(tide_node_name(n), "h") == 0;
}

typedef struct runner {
    tide_session *s;
    tide_node *fetch;
    atomic_bool stop;
    atomic_int runs, failures;
} runner;

static void *run_until_stopped(void *arg)
{
    runner *r = arg;
    while (!atomic_load(&r->stop)) {
        tide_output o = {r->fetch, 0};
        tide_tensor *out = NULL;
        if (tide_session_run(r->s, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, NULL) != TIDE_OK || !out)
            atomic_fetch_add(&r->failures, 1);
        tide_tensor_release(out);
        atomic_fetch_add(&r->runs, 1);
    }
    return NULL;
}

static void test_plans_of_old_watches_dropped(void)
{
    tide_engine *e = tide_engine_new(NULL, NULL);
    tide_graph *g = tide_graph_new();
    float xs[64];
    for (int i = 0; i < 64; i++)
        xs[i] = (float)(i - 32);
    tide_node *x = gu_const(g, "x", th_f32(1, TH_DIMS(64), xs));
    tide_node *b = gu_scalar_f32(g, "b", 0.5f);
    tide_node *h = gu_op(g, "Add", "h", 2, (tide_node *const[]){x, b}); /* Add + Relu: a fused group */
    tide_node *r = gu_op(g, "Relu", "r", 1, &h);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_observer obs = {.wants_tensors = watch_h};
    runner other = {.s = s, .fetch = r};
    pthread_t t;
    size_t heap_at_100 = 0;
    for (int i = 0; i < 1000; i++) {
        if (i == 500) /* the second half with another thread running the session all along */
            CU_ASSERT_FATAL(pthread_create(&t, NULL, run_until_stopped, &other) == 0);
        int id = tide_engine_add_observer(e, &obs, NULL);
        tide_tensor *got = gu_fetch(s, r);
        CU_ASSERT(got && ((const float *)tide_tensor_data(got))[40] == 8.5f);
        tide_tensor_release(got);
        tide_engine_remove_observer(e, id);
        tide_tensor_release(gu_fetch(s, r));
        if (i < 500)
            CU_ASSERT(tide_session_num_plans(s) <= 1);
        if (i == 100)
            heap_at_100 = mallinfo2().uordblks;
        if (i == 499) /* the heap in use stays put (ASan's allocator reports 0 here) */
            CU_ASSERT((long)(mallinfo2().uordblks - heap_at_100) < 256 * 1024);
    }
    /* on a loaded machine the other thread may not have been scheduled yet: let it run once (60 s at most) */
    for (int w = 0; w < 60000 && atomic_load(&other.runs) == 0; w++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    atomic_store(&other.stop, true);
    pthread_join(t, NULL);
    CU_ASSERT(tide_session_num_plans(s) <= 2);
    CU_ASSERT(atomic_load(&other.runs) > 0);
    CU_ASSERT_EQUAL(atomic_load(&other.failures), 0);
    printf("\n  (plans cached after 1,000 watch changes: %d; the other thread's runs: %d) ", tide_session_num_plans(s),
           atomic_load(&other.runs));
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* run_started and run_ended see the fed values (the run log records their shapes: a training step
 * and an evaluation of the same nodes differ by them). */
typedef struct feed_seen {
    atomic_int calls;
    int64_t dims[2];
    const tide_node *node;
} feed_seen;

static void record_feed(void *u, const tide_run_info *r)
{
    feed_seen *f = u;
    if (r->num_feeds == 1 && r->feeds && r->feeds[0].value) {
        const tide_shape *sh = tide_tensor_shape(r->feeds[0].value);
        f->dims[0] = sh->rank > 0 ? sh->dims[0] : -1;
        f->dims[1] = sh->rank > 1 ? sh->dims[1] : -1;
        f->node = r->feeds[0].output.node;
        atomic_fetch_add(&f->calls, 1);
    }
}
static void record_feed_end(void *u, const tide_run_info *r, tide_status st, const char *m, int64_t w)
{
    (void)st, (void)m, (void)w;
    record_feed(u, r);
}

static void test_observers_see_feeds(void)
{
    tide_engine *e = tide_engine_new(NULL, NULL);
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, 2));
    tide_node *y = gu_op(g, "Identity", "y", 1, &x);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    feed_seen f = {0};
    tide_observer obs = {.user = &f, .run_started = record_feed, .run_ended = record_feed_end};
    int id = tide_engine_add_observer(e, &obs, NULL);
    tide_tensor *v = th_f32(2, TH_DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    tide_feed feed = {{x, 0}, v};
    tide_output fetch = {y, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(atomic_load(&f.calls), 2);
    CU_ASSERT_EQUAL(f.dims[0], 3);
    CU_ASSERT_EQUAL(f.dims[1], 2);
    CU_ASSERT_PTR_EQUAL(f.node, x);
    tide_tensor_release(out);
    tide_tensor_release(v);
    tide_engine_remove_observer(e, id);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* Engine options for several devices: placement strategy, memory per device, placement warnings. */
static void test_devices_memory_and_options(void)
{
    tide_error *err = tide_error_new();
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_cpu_devices = 2;
    o.placement = (tide_placement_kind)7;
    CU_ASSERT_PTR_NULL(tide_engine_new(&o, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "placement=7"));
    o.placement = TIDE_PLACEMENT_GREEDY;
    setenv("TIDE_PLACEMENT", "sideways", 1);
    CU_ASSERT_PTR_NULL(tide_engine_new(&o, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "TIDE_PLACEMENT='sideways'"));
    setenv("TIDE_PLACEMENT", "naive", 1); /* everything on /cpu:0 */
    tide_engine *e = tide_engine_new(&o, err);
    unsetenv("TIDE_PLACEMENT");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_const(g, "c", th_f32(2, TH_DIMS(64, 64), NULL));
    tide_node *m = gu_op(g, "MatMul", "m", 2, (tide_node *[]){c, c});
    tide_session *s = tide_session_new(e, g, NULL, err);
    int64_t in_use = -1, peak = -1;
    CU_ASSERT_FALSE(tide_engine_device_memory(e, 2, &in_use, &peak));
    CU_ASSERT_FALSE(tide_engine_device_memory(e, -1, NULL, NULL));
    tide_tensor *out = gu_fetch(s, m);
    CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(m), tide_engine_device_name(e, 0));
    CU_ASSERT_TRUE(tide_engine_device_memory(e, 0, &in_use, &peak));
    CU_ASSERT_EQUAL(in_use, 64 * 64 * 4); /* the fetched product, still held */
    CU_ASSERT(peak >= in_use);
    tide_tensor_release(out);
    CU_ASSERT_TRUE(tide_engine_device_memory(e, 0, &in_use, NULL));
    CU_ASSERT_EQUAL(in_use, 0);
    tide_engine_reset_peak_memory(e);
    CU_ASSERT_TRUE(tide_engine_device_memory(e, 0, NULL, &peak));
    CU_ASSERT_EQUAL(peak, 0);
    CU_ASSERT_TRUE(tide_engine_device_memory(e, 1, &in_use, &peak));
    CU_ASSERT_EQUAL(in_use + peak, 0); /* naive: nothing ran on /cpu:1 */
    const char *const *warnings = NULL;
    CU_ASSERT_EQUAL(tide_session_warnings(s, &warnings), 0); /* no soft placement here */
    CU_ASSERT_EQUAL(tide_session_warnings(NULL, &warnings), 0);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
}

/* A control edge from a fed node is met at once: the fed node does not run (as in TensorFlow, where the
 * edge moves to the feed). Found by test_partition's graph generator. */
static void test_control_from_fed_node(void)
{
    tide_engine *e = th_engine();
    tide_graph *g = tide_graph_new();
    tide_node *p = gu_placeholder(g, "p", TIDE_FLOAT32, 1, TH_DIMS(2));
    tide_node *c = gu_const(g, "c", th_f32(1, TH_DIMS(2), (float[]){1, 2}));
    tide_node_builder *b = tide_node_builder_new(g, "Identity", "y");
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_node_builder_add_control_input(b, p);
    tide_node *y = gu_finish(b);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_tensor *pv = th_f32(1, TH_DIMS(2), (float[]){5, 6}), *out = NULL;
    tide_feed feed = {{p, 0}, pv};
    tide_output o = {y, 0};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &o, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT(out && ((float *)tide_tensor_data(out))[1] == 2.0f);
    tide_tensor_release(out);
    /* not fed: the placeholder must be fed, as before */
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "you must feed a value"));
    tide_error_free(err);
    tide_tensor_release(pv);
    tide_session_free(s);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_fetch_const_and_identity), TH_TEST(test_feed_placeholder_and_missing_feed),
        TH_TEST(test_feed_intermediate_prunes_upstream), TH_TEST(test_plan_cache),
        TH_TEST(test_variables_persist_and_share), TH_TEST(test_variable_redeclared_with_another_shape),
        TH_TEST(test_snapshot_semantics),
        TH_TEST(test_control_dependencies), TH_TEST(test_assign_errors), TH_TEST(test_run_errors),
        TH_TEST(test_kernel_return_value_checked), TH_TEST(test_session_holds_its_graph), TH_TEST(test_runs_without_error_object),
        TH_TEST(test_observers), TH_TEST(test_plans_of_old_watches_dropped), TH_TEST(test_observers_see_feeds), TH_TEST(test_devices_memory_and_options),
        TH_TEST(test_control_from_fed_node),
        TH_END};
    return th_main("session", tests);
}
