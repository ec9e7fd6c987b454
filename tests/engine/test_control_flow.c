/* test_control_flow.c — the executor's control flow built from the raw ops (Switch, Merge, Enter, Exit,
 * NextIteration, LoopCond): conditionals whose untaken branch would fail, counting loops, loops whose
 * value changes shape, nested loops, loop invariants, parallel_iterations, errors and cancellation
 * inside loops, partial fetches, traced iterations, plans that are refused (with the message checked)
 * and loops across two devices. Every expected value is computed here independently (closed forms or
 * plain C loops). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/graph_util.h"
#include "tide_op.h"

/* ---------------------------------------------------------------- a test-only op that fails on demand */

/* TestFailAt(x: int32, at) returns x, and fails with OutOfRange when x == at. */
static tide_status fail_at_compute(tide_kernel_ctx *ctx)
{
    int64_t at = 0;
    tide_attrs_get_int(tide_kernel_attrs(ctx), "at", &at);
    tide_tensor *x = tide_kernel_input(ctx, 0);
    if (*(int32_t *)tide_tensor_data(x) == at)
        return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE, "reached %lld", (long long)at);
    tide_kernel_set_output(ctx, 0, x);
    return TIDE_OK;
}

static void register_test_ops(void)
{
    tide_op_register(&(tide_op_spec){.name = "TestFailAt", .inputs = {"x: int32"}, .outputs = {"y: int32"},
                                     .attrs = {"at: int"}, .shape_fn = tide_shape_fn_unchanged,
                                     .doc = "Test op: fails when x == at."});
    tide_kernel_register(&(tide_kernel_spec){.op = "TestFailAt", .device_type = "cpu", .compute = fail_at_compute});
}
TIDE_REGISTER(register_test_ops)

/* ---------------------------------------------------------------- building blocks */

static tide_output O(tide_node *n) { return (tide_output){n, 0}; }
static tide_output O1(tide_node *n, int i) { return (tide_output){n, i}; }

static tide_node *op1(tide_graph *g, const char *op, tide_output a)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(b, a);
    return gu_finish(b);
}

static tide_node *op2(tide_graph *g, const char *op, tide_output a, tide_output c)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(b, a);
    tide_node_builder_add_input(b, c);
    return gu_finish(b);
}

static tide_node *i32(tide_graph *g, int32_t v) { return gu_const(g, NULL, th_i32(0, NULL, &v)); }

static tide_node *enter(tide_graph *g, const char *frame, tide_output in, bool constant, int parallel)
{
    tide_node_builder *b = tide_node_builder_new(g, "Enter", NULL);
    tide_node_builder_add_input(b, in);
    tide_attrs_set_string(tide_node_builder_attrs(b), "frame_name", frame);
    tide_attrs_set_bool(tide_node_builder_attrs(b), "is_constant", constant);
    tide_attrs_set_int(tide_node_builder_attrs(b), "parallel_iterations", parallel);
    return gu_finish(b);
}

/* A Merge of an Enter and (later, by close) its NextIteration. */
static tide_node *loop_merge(tide_graph *g, tide_node *enter_node)
{
    tide_output ins[2] = {O(enter_node), O(enter_node)};
    tide_node_builder *b = tide_node_builder_new(g, "Merge", NULL);
    tide_node_builder_add_input_list(b, ins, 2);
    return gu_finish(b);
}

static void close_loop(tide_graph *g, tide_node *merge, tide_node *next)
{
    tide_error *err = tide_error_new();
    tide_status st = tide_graph_close_loop(g, merge, 1, O(next), err);
    if (st != TIDE_OK)
        fprintf(stderr, "close_loop: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_error_free(err);
}

/* One loop variable: its Merge, the value inside the body (Switch's true side), and the Switch. */
typedef struct loop_var {
    tide_node *merge, *sw, *body;
} loop_var;

static loop_var var_open(tide_graph *g, const char *frame, tide_output init, int parallel)
{
    loop_var v = {0};
    v.merge = loop_merge(g, enter(g, frame, init, false, parallel));
    return v;
}

static void var_switch(tide_graph *g, loop_var *v, tide_node *cond)
{
    v->sw = op2(g, "Switch", O(v->merge), O(cond));
    v->body = op1(g, "Identity", O1(v->sw, 1));
}

/* Closes the variable's loop with `next_value` and returns its Exit. */
static tide_node *var_close(tide_graph *g, loop_var *v, tide_output next_value)
{
    close_loop(g, v->merge, op1(g, "NextIteration", next_value));
    return op1(g, "Exit", O1(v->sw, 0));
}

/* i = i0; while (i < n) i += step; — returns the Exit. */
static tide_node *count_loop(tide_graph *g, const char *frame, tide_output i0, tide_output n, tide_output step,
                             int parallel)
{
    loop_var i = var_open(g, frame, i0, parallel);
    tide_node *limit = enter(g, frame, n, true, parallel), *by = enter(g, frame, step, true, parallel);
    tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(limit))));
    var_switch(g, &i, cond);
    return var_close(g, &i, O(op2(g, "Add", O(i.body), O(by))));
}

static int32_t fetch_i32(tide_session *s, tide_node *n)
{
    tide_tensor *t = gu_fetch(s, n);
    int32_t v = t ? *(int32_t *)tide_tensor_data(t) : INT32_MIN;
    tide_tensor_release(t);
    return v;
}

static tide_status run_fetch(tide_session *s, const tide_run_options *opts, tide_node *n, tide_tensor **out,
                             tide_error *err)
{
    tide_output o = O(n);
    return tide_session_run(s, opts, NULL, 0, &o, 1, out, NULL, 0, NULL, err);
}

/* The graph written as text and read back into a new graph (a loop's back edge, NextIteration into
 * Merge, is closed after the rest is built: docs/graph-text-format.md), whose text must be the same;
 * node `name`'s value there (NULL after a failed assertion). */
static tide_tensor *fetch_through_text(const tide_graph *g, const char *name)
{
    tide_error *err = tide_error_new();
    char *text = tide_graph_to_text(g, err);
    tide_graph *copy = tide_graph_new();
    tide_status st = text ? tide_graph_extend_text(copy, text, err) : TIDE_INTERNAL;
    if (st != TIDE_OK)
        fprintf(stderr, "reading the text back: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    char *again = tide_graph_to_text(copy, err);
    CU_ASSERT(again && strcmp(again, text) == 0);
    tide_node *n = tide_graph_node(copy, name);
    CU_ASSERT_PTR_NOT_NULL(n);
    tide_session *s = n ? tide_session_new(th_engine(), copy, NULL, err) : NULL;
    tide_tensor *t = s ? gu_fetch(s, n) : NULL;
    tide_session_free(s);
    tide_graph_free(copy);
    free(again);
    free(text);
    tide_error_free(err);
    return t;
}

/* ---------------------------------------------------------------- conditionals */

/* Switch + Merge: the untaken branch would fail (TestFailAt at its value), but never runs; the taken
 * branch's value comes out of the Merge with its index. */
static void test_cond_untaken_branch_does_not_run(void)
{
    for (int taken = 0; taken < 2; taken++) {
        tide_graph *g = tide_graph_new();
        bool p = taken;
        tide_node *pred = gu_const(g, "pred", th_tensor(TIDE_BOOL, 0, NULL, &p));
        tide_node *x = i32(g, 7);
        tide_node *sw = op2(g, "Switch", O(x), O(pred));
        tide_node_builder *b = tide_node_builder_new(g, "TestFailAt", "false_branch");
        tide_node_builder_add_input(b, O1(sw, 0));
        tide_attrs_set_int(tide_node_builder_attrs(b), "at", taken ? 7 : -1);
        tide_node *f = gu_finish(b);
        b = tide_node_builder_new(g, "TestFailAt", "true_branch");
        tide_node_builder_add_input(b, O(op2(g, "Mul", O1(sw, 1), O(i32(g, 3)))));
        tide_attrs_set_int(tide_node_builder_attrs(b), "at", taken ? -1 : 21);
        tide_node *t = gu_finish(b);
        tide_output ins[2] = {O(f), O(t)};
        b = tide_node_builder_new(g, "Merge", "merge");
        tide_node_builder_add_input_list(b, ins, 2);
        tide_node *m = gu_finish(b);
        tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
        tide_output fetch[2] = {O1(m, 0), O1(m, 1)};
        tide_tensor *out[2] = {0};
        tide_error *err = tide_error_new();
        tide_status st = tide_session_run(s, NULL, NULL, 0, fetch, 2, out, NULL, 0, NULL, err);
        if (st != TIDE_OK)
            fprintf(stderr, "cond: %s\n", tide_error_message(err));
        CU_ASSERT_EQUAL(st, TIDE_OK);
        if (st == TIDE_OK) {
            CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(out[0]), taken ? 21 : 7);
            CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(out[1]), taken ? 1 : 0);
        }
        /* Fetching the untaken side is an error that says so. */
        tide_tensor *dead = NULL;
        st = run_fetch(s, NULL, taken ? f : t, &dead, err);
        CU_ASSERT_EQUAL(st, TIDE_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NULL(dead);
        CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "not taken"));
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
        tide_error_free(err);
        tide_session_free(s);
        tide_graph_free(g);
    }
}

/* ---------------------------------------------------------------- loops */

static void test_counting_loops(void)
{
    const int32_t cases[][4] = {{0, 10, 1, 10}, {0, 0, 1, 0}, {5, 3, 1, 5}, {0, 10, 3, 12}, {-4, 1000, 7, 1004}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tide_graph *g = tide_graph_new();
        tide_node *exit_node = count_loop(g, "loop", O(i32(g, cases[c][0])), O(i32(g, cases[c][1])),
                                          O(i32(g, cases[c][2])), 10);
        tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
        int32_t expect = cases[c][0]; /* the same loop in C */
        while (expect < cases[c][1])
            expect += cases[c][2];
        CU_ASSERT_EQUAL(expect, cases[c][3]);
        for (int again = 0; again < 3; again++) /* the cached plan, steps after steps */
            CU_ASSERT_EQUAL(fetch_i32(s, exit_node), expect);
        tide_tensor *reloaded = fetch_through_text(g, tide_node_name(exit_node));
        CU_ASSERT(reloaded && *(int32_t *)tide_tensor_data(reloaded) == expect);
        tide_tensor_release(reloaded);
        tide_session_free(s);
        tide_graph_free(g);
    }
}

/* 10,000 iterations with each parallel_iterations, also across two concurrent steps. */
static void test_long_loop_and_parallel_iterations(void)
{
    const int parallel[] = {1, 2, 10, 32};
    for (int p = 0; p < 4; p++) {
        tide_graph *g = tide_graph_new();
        tide_node *e = count_loop(g, "long", O(i32(g, 0)), O(i32(g, 10000)), O(i32(g, 1)), parallel[p]);
        tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
        CU_ASSERT_EQUAL(fetch_i32(s, e), 10000);
        tide_session_free(s);
        tide_graph_free(g);
    }
}

/* Two loop variables, one a float accumulator reading a loop invariant: sum of k*x for k < n. */
static void test_two_variables_and_invariant(void)
{
    tide_graph *g = tide_graph_new();
    float x0 = 0.5f, zero = 0;
    tide_node *x = gu_const(g, "x", th_f32(0, NULL, &x0));
    loop_var i = var_open(g, "acc", O(i32(g, 0)), 10);
    loop_var acc = var_open(g, "acc", O(gu_const(g, NULL, th_f32(0, NULL, &zero))), 10);
    tide_node *n = enter(g, "acc", O(i32(g, 20)), true, 10), *xi = enter(g, "acc", O(x), true, 10);
    tide_node *one = enter(g, "acc", O(i32(g, 1)), true, 10);
    tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n))));
    var_switch(g, &i, cond);
    var_switch(g, &acc, cond);
    tide_node_builder *b = tide_node_builder_new(g, "Cast", NULL);
    tide_node_builder_add_input(b, O(i.body));
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", TIDE_FLOAT32);
    tide_node *kf = gu_finish(b);
    tide_node *acc_exit = var_close(g, &acc, O(op2(g, "Add", O(acc.body), O(op2(g, "Mul", O(kf), O(xi))))));
    tide_node *i_exit = var_close(g, &i, O(op2(g, "Add", O(i.body), O(one))));
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    float expect = 0;
    for (int k = 0; k < 20; k++)
        expect += (float)k * x0;
    tide_tensor *t = gu_fetch(s, acc_exit);
    if (t)
        CU_ASSERT_DOUBLE_EQUAL(*(float *)tide_tensor_data(t), expect, 1e-4);
    tide_tensor_release(t);
    CU_ASSERT_EQUAL(fetch_i32(s, i_exit), 20); /* fetched partially: only one of the two results */
    tide_session_free(s);
    tide_graph_free(g);
}

/* A loop whose value grows: v = concat(v, [i]) for i < n; the Merge's shape relaxes to [?]. */
static void test_loop_value_changes_shape(void)
{
    const char *concat = tide_registry_op_info("ConcatV2", &(tide_op_info){0}) ? "ConcatV2" : "Concat";
    tide_graph *g = tide_graph_new();
    loop_var i = var_open(g, "grow", O(i32(g, 0)), 10);
    loop_var v = var_open(g, "grow", O(gu_const(g, "empty", th_i32(1, TH_DIMS(0), NULL))), 10);
    tide_node *n = enter(g, "grow", O(i32(g, 6)), true, 10), *one = enter(g, "grow", O(i32(g, 1)), true, 10);
    tide_node *axis = enter(g, "grow", O(i32(g, 0)), true, 10);
    tide_node *shape1 = enter(g, "grow", O(gu_const(g, "shape1", th_i32(1, TH_DIMS(1), (int32_t[]){1}))), true, 10);
    tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n))));
    var_switch(g, &i, cond);
    var_switch(g, &v, cond);
    tide_node *piece = op2(g, "Reshape", O(op2(g, "Mul", O(i.body), O(i.body))), O(shape1));
    tide_output parts[2] = {O(v.body), O(piece)};
    tide_node_builder *b = tide_node_builder_new(g, concat, NULL);
    tide_node_builder_add_input_list(b, parts, 2);
    tide_node_builder_add_input(b, O(axis));
    tide_node *grown = gu_finish(b);
    tide_node *v_exit = var_close(g, &v, O(grown));
    var_close(g, &i, O(op2(g, "Add", O(i.body), O(one))));
    tide_shape merged = tide_node_output_shape(v.merge, 0);
    CU_ASSERT_EQUAL(merged.rank, 1);
    CU_ASSERT_EQUAL(merged.dims[0], -1); /* relaxed from [0] */
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *t = gu_fetch(s, v_exit);
    int32_t expect[6];
    for (int k = 0; k < 6; k++)
        expect[k] = k * k;
    tide_tensor *want = th_i32(1, TH_DIMS(6), expect);
    if (t)
        TH_ASSERT_CLOSE(t, want, 0, 0);
    tide_tensor *reloaded = fetch_through_text(g, tide_node_name(v_exit));
    if (reloaded)
        TH_ASSERT_CLOSE(reloaded, want, 0, 0);
    tide_tensor_release(reloaded);
    tide_tensor_release(want);
    tide_tensor_release(t);
    tide_session_free(s);
    tide_graph_free(g);
}

/* An outer loop of 4 iterations, each running an inner loop of 5 that adds 1 to the total; the inner
 * loop's limit comes from the outer iteration (k + 2), so the inner instances differ. */
static void test_nested_loops(void)
{
    tide_graph *g = tide_graph_new();
    loop_var i = var_open(g, "outer", O(i32(g, 0)), 10);
    loop_var total = var_open(g, "outer", O(i32(g, 0)), 10);
    tide_node *n = enter(g, "outer", O(i32(g, 4)), true, 10), *one = enter(g, "outer", O(i32(g, 1)), true, 10);
    tide_node *two = enter(g, "outer", O(i32(g, 2)), true, 10);
    tide_node *zero = enter(g, "outer", O(i32(g, 0)), true, 10);
    tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n))));
    var_switch(g, &i, cond);
    var_switch(g, &total, cond);
    /* inner: j from 0 while j < i + 2: t += 1 */
    loop_var j = var_open(g, "inner", O(zero), 10);
    loop_var t = var_open(g, "inner", O(total.body), 10);
    tide_node *limit = enter(g, "inner", O(op2(g, "Add", O(i.body), O(two))), true, 10);
    tide_node *inner_one = enter(g, "inner", O(one), true, 10);
    tide_node *inner_cond = op1(g, "LoopCond", O(op2(g, "Less", O(j.merge), O(limit))));
    var_switch(g, &j, inner_cond);
    var_switch(g, &t, inner_cond);
    tide_node *t_exit = var_close(g, &t, O(op2(g, "Add", O(t.body), O(inner_one))));
    var_close(g, &j, O(op2(g, "Add", O(j.body), O(inner_one))));
    tide_node *total_exit = var_close(g, &total, O(t_exit));
    var_close(g, &i, O(op2(g, "Add", O(i.body), O(one))));
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    int32_t expect = 0;
    for (int k = 0; k < 4; k++)
        for (int m = 0; m < k + 2; m++)
            expect++;
    CU_ASSERT_EQUAL(fetch_i32(s, total_exit), expect);
    tide_tensor *reloaded = fetch_through_text(g, tide_node_name(total_exit));
    CU_ASSERT(reloaded && *(int32_t *)tide_tensor_data(reloaded) == expect);
    tide_tensor_release(reloaded);
    /* Traced: one timing per execution, tagged with its frame and iteration. */
    tide_run_options opts = {.trace = true};
    tide_step_stats *stats = NULL;
    tide_output o = O(total_exit);
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, &o, 1, &out, NULL, 0, &stats, NULL), TIDE_OK);
    int inner_adds = 0, max_iteration = -1, outer_merges = 0;
    for (int k = 0; k < tide_step_stats_count(stats); k++) {
        const tide_node_timing *tm = tide_step_stats_at(stats, k);
        if (strncmp(tm->frame, "outer:", 6) == 0 && strstr(tm->frame, "/inner") &&
            strcmp(tide_node_op(tm->node), "Add") == 0 && strstr(tide_node_name(tm->node), "add")) {
            inner_adds++;
            if (tm->iteration > max_iteration)
                max_iteration = (int)tm->iteration;
        }
        if (tm->node == i.merge && strcmp(tm->frame, "outer") == 0)
            outer_merges++;
    }
    /* Inner body: two Adds per iteration that runs its body (2+3+4+5 = 14 live iterations); the
     * inner instance of outer iteration 3 counts to iteration 5 (its last test, with the body dead). */
    CU_ASSERT_EQUAL(inner_adds, 2 * expect);
    CU_ASSERT_EQUAL(max_iteration, 4);
    CU_ASSERT_EQUAL(outer_merges, 5); /* iterations 0..4, the last one ends the loop */
    tide_step_stats_free(stats);
    tide_tensor_release(out);
    tide_session_free(s);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- failures inside loops */

/* A kernel failing at iteration 5 ends the step with its error; the session works afterwards. */
static void test_error_inside_loop(void)
{
    tide_graph *g = tide_graph_new();
    loop_var i = var_open(g, "fails", O(i32(g, 0)), 4);
    tide_node *n = enter(g, "fails", O(i32(g, 100)), true, 4), *one = enter(g, "fails", O(i32(g, 1)), true, 4);
    tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n))));
    var_switch(g, &i, cond);
    tide_node_builder *b = tide_node_builder_new(g, "TestFailAt", "check");
    tide_node_builder_add_input(b, O(i.body));
    tide_attrs_set_int(tide_node_builder_attrs(b), "at", 5);
    tide_node *check = gu_finish(b);
    tide_node *e = var_close(g, &i, O(op2(g, "Add", O(check), O(one))));
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    for (int again = 0; again < 3; again++) {
        tide_tensor *out = NULL;
        CU_ASSERT_EQUAL(run_fetch(s, NULL, e, &out, err), TIDE_OUT_OF_RANGE);
        CU_ASSERT_PTR_NULL(out);
        CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'check'"));
        CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "reached 5"));
    }
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* A loop that never ends stops at its timeout, and at a cancellation from another thread. */
static void *cancel_soon(void *arg)
{
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    tide_session_cancel(arg);
    return NULL;
}

static void test_endless_loop_is_stopped(void)
{
    tide_graph *g = tide_graph_new();
    /* while (true) i += 1 */
    loop_var i = var_open(g, "endless", O(i32(g, 0)), 10);
    bool yes = true;
    tide_node *always = enter(g, "endless", O(gu_const(g, NULL, th_tensor(TIDE_BOOL, 0, NULL, &yes))), true, 10);
    tide_node *one = enter(g, "endless", O(i32(g, 1)), true, 10);
    var_switch(g, &i, op1(g, "LoopCond", O(always)));
    tide_node *e = var_close(g, &i, O(op2(g, "Add", O(i.body), O(one))));
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_run_options opts = {.timeout_ms = 100};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(run_fetch(s, &opts, e, &out, err), TIDE_DEADLINE_EXCEEDED);
    CU_ASSERT_PTR_NULL(out);
    pthread_t t;
    pthread_create(&t, NULL, cancel_soon, s);
    CU_ASSERT_EQUAL(run_fetch(s, NULL, e, &out, err), TIDE_CANCELLED);
    pthread_join(t, NULL);
    CU_ASSERT_PTR_NULL(out);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- plans refused */

static void expect_plan_error(tide_graph *g, tide_node *fetch, const char *needle)
{
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(run_fetch(s, NULL, fetch, &out, err), TIDE_INVALID_ARGUMENT);
    if (!strstr(tide_error_message(err), needle))
        fprintf(stderr, "expected '%s' in: %s\n", needle, tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), needle));
    tide_tensor_release(out);
    tide_error_free(err);
    tide_session_free(s);
}

static void test_refused_plans(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = i32(g, 1);
    /* An Exit outside any loop. */
    expect_plan_error(g, op1(g, "Exit", O(x)), "is not inside a loop");
    /* A value from outside used inside without an Enter. */
    tide_node *e = enter(g, "f", O(x), true, 10);
    expect_plan_error(g, op2(g, "Add", O(e), O(x)), "mixes frames");
    /* A non-constant Enter read by something else than a Merge. */
    tide_node *e2 = enter(g, "f2", O(x), false, 10);
    tide_node *inside = op2(g, "Add", O(e2), O(e2));
    expect_plan_error(g, op1(g, "Exit", O(inside)), "only a Merge may read it");
    /* Fetching a value computed inside a loop. */
    tide_node *e3 = enter(g, "f3", O(x), true, 10);
    expect_plan_error(g, op2(g, "Add", O(e3), O(e3)), "inside the loop frame 'f3'");
    /* A loop without a Switch never stops, and its Exit gets a value in every iteration: the step
     * fails on the second one instead of running for ever. */
    tide_node *m = loop_merge(g, enter(g, "f4", O(x), false, 10));
    tide_node *ident = op1(g, "Identity", O(m));
    tide_node_builder *cyc = tide_node_builder_new(g, "Merge", NULL); /* reads itself through Identity */
    tide_node_builder_add_input_list(cyc, (tide_output[]){O(ident), O(ident)}, 2);
    tide_node *m2 = gu_finish(cyc);
    close_loop(g, m, op1(g, "NextIteration", O(m2)));
    expect_plan_error(g, op1(g, "Exit", O(m2)), "produced a value in two iterations");
    tide_graph_free(g);
    /* close_loop's own checks. */
    g = tide_graph_new();
    x = i32(g, 1);
    m = loop_merge(g, enter(g, "c", O(x), false, 10));
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_close_loop(g, m, 1, O(x), err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "NextIteration"));
    CU_ASSERT_EQUAL(tide_graph_close_loop(g, x, 1, O(x), err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_graph_close_loop(g, m, 5, O(op1(g, "NextIteration", O(m))), err), TIDE_OUT_OF_RANGE);
    float f = 1;
    tide_node *fl = enter(g, "c", O(gu_const(g, NULL, th_f32(0, NULL, &f))), true, 10);
    CU_ASSERT_EQUAL(tide_graph_close_loop(g, m, 1, O(op1(g, "NextIteration", O(fl))), err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "float32"));
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- two devices */

/* The counting loop and a cond on an engine with two devices, with the loop's body and the cond's
 * branches asked for on /cpu:1 and the rest on /cpu:0: every transfer happens inside the loop's frame,
 * once per iteration, and dead values cross too. Same results as on one device. */
static void test_loops_across_devices(void)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_cpu_devices = 2;
    o.num_threads = 2;
    tide_engine *e2 = tide_engine_new(&o, NULL);
    for (int steps = 0; steps < 2; steps++) {
        tide_graph *g = tide_graph_new();
        tide_graph_push_device(g, "/cpu:0");
        loop_var i = var_open(g, "two", O(i32(g, 0)), 10);
        loop_var acc = var_open(g, "two", O(i32(g, 0)), 10);
        tide_node *n = enter(g, "two", O(i32(g, 50)), true, 10), *one = enter(g, "two", O(i32(g, 1)), true, 10);
        tide_node *cond = op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n))));
        var_switch(g, &i, cond);
        var_switch(g, &acc, cond);
        tide_graph_pop_device(g);
        tide_graph_push_device(g, "/cpu:1");
        tide_node *sq = op2(g, "Mul", O(i.body), O(i.body));
        tide_node *sum = op2(g, "Add", O(acc.body), O(sq));
        tide_graph_pop_device(g);
        tide_graph_push_device(g, "/cpu:0");
        tide_node *acc_exit = var_close(g, &acc, O(sum));
        var_close(g, &i, O(op2(g, "Add", O(i.body), O(one))));
        tide_graph_pop_device(g);
        tide_session *s = tide_session_new(e2, g, NULL, NULL);
        int32_t expect = 0;
        for (int k = 0; k < 50; k++)
            expect += k * k;
        for (int again = 0; again < 3; again++)
            CU_ASSERT_EQUAL(fetch_i32(s, acc_exit), expect);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(sq), tide_engine_device_name(e2, 1));
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(i.merge), tide_engine_device_name(e2, 0));
        tide_session_free(s);
        tide_graph_free(g);
    }
    tide_engine_free(e2);
}

/* With no device requests and round-robin placement spreading everything over two devices, every
 * loop variable's Merge, Enter and NextIteration still land together (their values must not cross), and
 * the results match one device. */
static void test_loop_placement_keeps_variables_together(void)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_cpu_devices = 2;
    o.placement = TIDE_PLACEMENT_ROUND_ROBIN;
    tide_engine *e2 = tide_engine_new(&o, NULL);
    tide_graph *g = tide_graph_new();
    tide_node *e = count_loop(g, "rr", O(i32(g, 0)), O(i32(g, 300)), O(i32(g, 3)), 10);
    tide_session *s = tide_session_new(e2, g, NULL, NULL);
    CU_ASSERT_EQUAL(fetch_i32(s, e), 300);
    bool both_used = false;
    const char *first = NULL;
    for (int k = 0; k < tide_graph_num_nodes(g); k++) {
        tide_node *n = tide_graph_node_at(g, k);
        const char *d = tide_node_assigned_device(n);
        if (!d)
            continue;
        if (!first)
            first = d;
        both_used |= strcmp(first, d) != 0;
        if (strcmp(tide_node_op(n), "Merge") == 0)
            for (int i = 0; i < tide_node_num_inputs(n); i++)
                CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(tide_node_input(n, i).node), d);
    }
    CU_ASSERT_TRUE(both_used); /* round robin did spread the rest */
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e2);
}

/* An observer sees a loop body's tensor once per iteration, with the frame and iteration; node timings
 * carry them too. */
typedef struct seen {
    pthread_mutex_t lock;
    const tide_node *watched;
    int count;
    int64_t iterations[64];
    char frame[64];
    int timed;
} seen;

static bool wants_watched(void *user, const tide_node *n) { return n == ((seen *)user)->watched; }

static void on_tensor(void *user, const tide_run_info *run, const tide_node *n, int output, const tide_tensor *v,
                      const tide_exec_point *at)
{
    (void)run, (void)n, (void)output, (void)v;
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->count < 64)
        s->iterations[s->count] = at->iteration;
    s->count++;
    snprintf(s->frame, sizeof s->frame, "%s", at->frame);
    pthread_mutex_unlock(&s->lock);
}

static void on_timing(void *user, const tide_run_info *run, const tide_node_timing *t)
{
    (void)run;
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->timed += t->node == s->watched && strcmp(t->frame, "observed") == 0;
    pthread_mutex_unlock(&s->lock);
}

static void test_observers_see_iterations(void)
{
    tide_graph *g = tide_graph_new();
    loop_var i = var_open(g, "observed", O(i32(g, 0)), 10);
    tide_node *n = enter(g, "observed", O(i32(g, 7)), true, 10), *one = enter(g, "observed", O(i32(g, 1)), true, 10);
    var_switch(g, &i, op1(g, "LoopCond", O(op2(g, "Less", O(i.merge), O(n)))));
    tide_node *next = op2(g, "Add", O(i.body), O(one));
    tide_node *e = var_close(g, &i, O(next));
    seen s = {.lock = PTHREAD_MUTEX_INITIALIZER, .watched = next};
    tide_observer obs = {.user = &s, .wants_tensors = wants_watched, .tensor_produced = on_tensor,
                         .node_finished = on_timing};
    int id = tide_engine_add_observer(th_engine(), &obs, NULL);
    CU_ASSERT(id > 0);
    tide_session *ses = tide_session_new(th_engine(), g, NULL, NULL);
    tide_run_options opts = {.trace = true};
    tide_output o = O(e);
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(ses, &opts, NULL, 0, &o, 1, &out, NULL, 0, NULL, NULL), TIDE_OK);
    tide_engine_remove_observer(th_engine(), id);
    CU_ASSERT_EQUAL(s.count, 7);
    CU_ASSERT_EQUAL(s.timed, 7);
    CU_ASSERT_STRING_EQUAL(s.frame, "observed");
    bool each[7] = {0};
    for (int k = 0; k < s.count && k < 7; k++)
        if (s.iterations[k] >= 0 && s.iterations[k] < 7)
            each[s.iterations[k]] = true;
    for (int k = 0; k < 7; k++)
        CU_ASSERT_TRUE(each[k]);
    tide_tensor_release(out);
    tide_session_free(ses);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_cond_untaken_branch_does_not_run), TH_TEST(test_counting_loops),
                                    TH_TEST(test_long_loop_and_parallel_iterations),
                                    TH_TEST(test_two_variables_and_invariant), TH_TEST(test_loop_value_changes_shape),
                                    TH_TEST(test_nested_loops), TH_TEST(test_error_inside_loop),
                                    TH_TEST(test_endless_loop_is_stopped), TH_TEST(test_refused_plans),
                                    TH_TEST(test_loops_across_devices),
                                    TH_TEST(test_loop_placement_keeps_variables_together),
                                    TH_TEST(test_observers_see_iterations), TH_END};
    return th_main("control_flow", tests);
}
