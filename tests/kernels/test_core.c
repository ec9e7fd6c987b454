/* test_core.c — the core kernels: Const, Placeholder, PlaceholderWithDefault, Identity, NoOp, and
 * variable kernels (Variable,
 * Assign, AssignAdd, AssignSub) for every numeric dtype, including in-place updates and their errors. */
#include <string.h>

#include "engine/graph_util.h"

static void test_identity_all_dtypes(void)
{
    for (int d = 1; d < TIDE_NUM_DTYPES; d++) {
        tide_shape s = tide_shape_make(2, TH_DIMS(2, 3));
        tide_tensor *t = tide_tensor_new((tide_dtype)d, &s, NULL);
        if (d == TIDE_STRING)
            tide_tensor_string_set(t, 4, "four", 4, NULL);
        else
            memset(tide_tensor_data(t), 0x11, tide_tensor_byte_size(t));
        const char *ops[] = {"Identity", "Snapshot", "PreventGradient", "StopGradient"};
        for (int k = 0; k < 4; k++) {
            tide_tensor *out = th_run1(ops[k], &t, 1, NULL);
            CU_ASSERT_PTR_EQUAL(out, t); /* they hand over the same tensor: no copy */
            tide_tensor_release(out);
        }
        tide_tensor_release(t);
    }
}

static void test_const_and_noop(void)
{
    tide_graph *g = tide_graph_new();
    int64_t v[3] = {1, -2, 1LL << 40};
    tide_node *c = gu_const(g, "c", th_i64(1, TH_DIMS(3), v));
    tide_node *n = gu_op(g, "NoOp", "n", 0, NULL);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *out = gu_fetch(s, c);
    tide_tensor *want = th_i64(1, TH_DIMS(3), v);
    TH_ASSERT_CLOSE(out, want, 0, 0);
    CU_ASSERT_EQUAL(gu_target(s, n, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_node_num_outputs(n), 0);
    /* Const checks its dtype attr against its value. */
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", want);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "dtype=float32 but value is int64"));
    tide_error_free(err);
    tide_tensor_release(out);
    tide_tensor_release(want);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_placeholder_eager_needs_feed(void)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "dtype", TIDE_FLOAT32);
    TH_ASSERT_FAILS("Placeholder", NULL, 0, a, TIDE_INVALID_ARGUMENT, "you must feed a value");
    tide_attrs_free(a);
}

/* PlaceholderWithDefault: its input unless fed; the shape attr bounds both. */
static void test_placeholder_with_default(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_const(g, "c", th_f32(1, TH_DIMS(2), (float[]){1, 2}));
    tide_node_builder *b = tide_node_builder_new(g, "PlaceholderWithDefault", "p");
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &(tide_shape){.rank = 1, .dims = {-1}});
    tide_node *p = gu_finish(b);
    tide_shape inferred = tide_node_output_shape(p, 0);
    CU_ASSERT(inferred.rank == 1 && inferred.dims[0] == -1); /* the attr's shape: a feed may differ */
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *got = gu_fetch(s, p), *want = th_f32(1, TH_DIMS(2), (float[]){1, 2});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor *fed = th_f32(1, TH_DIMS(3), (float[]){7, 8, 9});
    tide_feed feed = {{p, 0}, fed};
    tide_output fetch = {p, 0};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, &feed, 1, &fetch, 1, &got, NULL, 0, NULL, NULL), TIDE_OK);
    TH_ASSERT_CLOSE(got, fed, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(fed);
    /* a default that does not fit the shape attr is refused when the node is built */
    b = tide_node_builder_new(g, "PlaceholderWithDefault", "bad");
    tide_node_builder_add_input(b, (tide_output){c, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &(tide_shape){.rank = 1, .dims = {3}});
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_node_builder_finish(b, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the default input of shape [2] does not fit the "
                                                           "shape attr [3]"));
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

/* Runs Assign/AssignAdd/AssignSub on a [4] variable of dtype dt and checks the arithmetic. */
static void check_updates(tide_dtype dt)
{
    tide_graph *g = tide_graph_new();
    char name[32];
    snprintf(name, sizeof name, "var_%s", tide_dtype_name(dt));
    tide_node *var = gu_variable(g, name, dt, 1, TH_DIMS(4), "core_updates");
    double init_v[4] = {1, 2, 3, 4}, delta_v[4] = {10, 20, 30, 40};
    tide_error *err = tide_error_new();
    tide_tensor *init64 = th_f64(1, TH_DIMS(4), init_v), *delta64 = th_f64(1, TH_DIMS(4), delta_v);
    tide_tensor *init_t = tide_tensor_cast(init64, dt, err), *delta_t = tide_tensor_cast(delta64, dt, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(init_t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(delta_t);
    tide_node *ci = gu_const(g, NULL, init_t), *cd = gu_const(g, NULL, delta_t);
    tide_node *ins[2] = {var, ci};
    tide_node *assign = gu_op(g, "Assign", NULL, 2, ins);
    ins[1] = cd;
    tide_node *add = gu_op(g, "AssignAdd", NULL, 2, ins);
    tide_node *sub = gu_op(g, "AssignSub", NULL, 2, ins);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    CU_ASSERT_EQUAL(gu_target(s, assign, err), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(s, add, err), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(s, add, err), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(s, sub, err), TIDE_OK);
    tide_tensor *v = gu_fetch(s, var); /* 1 + 10 = 11, 22, 33, 44 */
    for (int i = 0; v && i < 4; i++)
        CU_ASSERT_DOUBLE_EQUAL(tide_tensor_get_f64(v, i), init_v[i] + delta_v[i], 1e-6);
    tide_tensor_release(v);
    tide_tensor_release(init64);
    tide_tensor_release(delta64);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_variable_updates_by_dtype(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32,   TIDE_INT64,    TIDE_INT8, TIDE_INT16,
                              TIDE_UINT8,   TIDE_UINT16,  TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_COMPLEX64};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++)
        check_updates(dts[i]);
    tide_engine_reset_container(th_engine(), "core_updates", NULL);
}

/* int32 and int64 updates wrap around (two's complement) rather than overflowing a signed type (which
 * UBSan reports as undefined behaviour: the ASan+UBSan build fails this test without the wrap). */
static void test_integer_updates_wrap(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *v32 = gu_variable(g, "w32", TIDE_INT32, 1, TH_DIMS(2), "core_wrap");
    tide_node *v64 = gu_variable(g, "w64", TIDE_INT64, 1, TH_DIMS(2), "core_wrap");
    tide_node *i32 = gu_const(g, NULL, th_i32(1, TH_DIMS(2), (const int32_t[]){INT32_MAX, INT32_MIN}));
    tide_node *i64 = gu_const(g, NULL, th_i64(1, TH_DIMS(2), (const int64_t[]){INT64_MAX, INT64_MIN}));
    tide_node *one32 = gu_const(g, NULL, th_i32(1, TH_DIMS(2), (const int32_t[]){1, -1}));
    tide_node *one64 = gu_const(g, NULL, th_i64(1, TH_DIMS(2), (const int64_t[]){1, -1}));
    tide_node *steps[] = {gu_op(g, "Assign", NULL, 2, (tide_node *const[]){v32, i32}),
                          gu_op(g, "Assign", NULL, 2, (tide_node *const[]){v64, i64}),
                          gu_op(g, "AssignAdd", NULL, 2, (tide_node *const[]){v32, one32}),
                          gu_op(g, "AssignAdd", NULL, 2, (tide_node *const[]){v64, one64}),
                          gu_op(g, "AssignSub", NULL, 2, (tide_node *const[]){v32, one32}),
                          gu_op(g, "AssignSub", NULL, 2, (tide_node *const[]){v64, one64}),
                          gu_op(g, "AssignSub", NULL, 2, (tide_node *const[]){v32, one32}),
                          gu_op(g, "AssignSub", NULL, 2, (tide_node *const[]){v64, one64})};
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    for (int k = 0; k < 4; k++)
        CU_ASSERT_EQUAL(gu_target(s, steps[k], err), TIDE_OK); /* MAX + 1 -> MIN, MIN + -1 -> MAX */
    tide_tensor *a32 = gu_fetch(s, v32), *a64 = gu_fetch(s, v64);
    CU_ASSERT(a32 && ((const int32_t *)tide_tensor_data(a32))[0] == INT32_MIN &&
              ((const int32_t *)tide_tensor_data(a32))[1] == INT32_MAX);
    CU_ASSERT(a64 && ((const int64_t *)tide_tensor_data(a64))[0] == INT64_MIN &&
              ((const int64_t *)tide_tensor_data(a64))[1] == INT64_MAX);
    tide_tensor_release(a32);
    tide_tensor_release(a64);
    for (int k = 4; k < 8; k++) /* back past the edges again: MIN - 1 -> MAX, MAX - -1 -> MIN, then again */
        CU_ASSERT_EQUAL(gu_target(s, steps[k], err), TIDE_OK);
    a32 = gu_fetch(s, v32);
    a64 = gu_fetch(s, v64);
    CU_ASSERT(a32 && ((const int32_t *)tide_tensor_data(a32))[0] == INT32_MAX - 1 &&
              ((const int32_t *)tide_tensor_data(a32))[1] == INT32_MIN + 1);
    CU_ASSERT(a64 && ((const int64_t *)tide_tensor_data(a64))[0] == INT64_MAX - 1 &&
              ((const int64_t *)tide_tensor_data(a64))[1] == INT64_MIN + 1);
    tide_tensor_release(a32);
    tide_tensor_release(a64);
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_reset_container(th_engine(), "core_wrap", NULL);
}

static void test_update_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *var = gu_variable(g, "u", TIDE_FLOAT32, -1, NULL, "core_errors"); /* rank unknown */
    float two[2] = {1, 2}, three[3] = {1, 2, 3};
    tide_node *c2 = gu_const(g, NULL, th_f32(1, TH_DIMS(2), two));
    tide_node *c3 = gu_const(g, NULL, th_f32(1, TH_DIMS(3), three));
    tide_node *ins[2] = {var, c3};
    tide_node *add3 = gu_op(g, "AssignAdd", NULL, 2, ins);
    ins[1] = c2;
    tide_node *assign2 = gu_op(g, "Assign", NULL, 2, ins);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(gu_target(s, add3, err), TIDE_FAILED_PRECONDITION); /* uninitialised */
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "uninitialized"));
    CU_ASSERT_EQUAL(gu_target(s, assign2, err), TIDE_OK);
    CU_ASSERT_EQUAL(gu_target(s, add3, err), TIDE_INVALID_ARGUMENT); /* [3] into [2], caught at run time */
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "update of shape [3] does not match variable 'u' of shape [2]"));
    tide_error_free(err);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_reset_container(th_engine(), "core_errors", NULL);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_identity_all_dtypes), TH_TEST(test_const_and_noop),
                                    TH_TEST(test_placeholder_eager_needs_feed),
                                    TH_TEST(test_placeholder_with_default),
                                    TH_TEST(test_variable_updates_by_dtype), TH_TEST(test_integer_updates_wrap),
                                    TH_TEST(test_update_errors), TH_END};
    return th_main("core", tests);
}
