/* test_cond_while.c — the builders tide_cond and tide_while_loop (tide_control_flow.h): values from
 * outside brought in once, constants tied to their branch or iteration, conds and loops nested in each
 * other, maximum_iterations, shape invariants and their messages, and atomicity (a failing branch or
 * body leaves the graph as it was). Expected values are computed here in plain C. */
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"

static tide_output O(tide_node *n) { return (tide_output){n, 0}; }

static tide_output op2(tide_graph *g, const char *op, tide_output a, tide_output b)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return O(gu_finish(nb));
}

static tide_output i32(tide_graph *g, int32_t v) { return O(gu_const(g, NULL, th_i32(0, NULL, &v))); }
static tide_output f32(tide_graph *g, float v) { return O(gu_scalar_f32(g, NULL, v)); }

static tide_tensor *run1(tide_graph *g, tide_output fetch, const tide_feed *feeds, int nfeeds)
{
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    if (tide_session_run(s, NULL, feeds, nfeeds, &fetch, 1, &out, NULL, 0, NULL, err) != TIDE_OK)
        fprintf(stderr, "run: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(out);
    tide_error_free(err);
    tide_session_free(s);
    return out;
}

static int count_op(tide_graph *g, const char *op)
{
    int n = 0;
    for (int k = 0; k < tide_graph_num_nodes(g); k++)
        n += strcmp(tide_node_op(tide_graph_node_at(g, k)), op) == 0;
    return n;
}

/* ---------------------------------------------------------------- cond */

typedef struct branch_args {
    tide_output x, y; /* from outside */
    int fail;         /* 1: the true branch fails, 2: the false one */
} branch_args;

/* true: x * y + 1 (the constant 1 made inside); false: x - y */
static tide_status true_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    branch_args *a = user;
    (void)max;
    if (a->fail == 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "true branch refused");
    outs[0] = op2(g, "Add", op2(g, "Mul", a->x, a->y), f32(g, 1));
    outs[1] = a->x; /* a value from outside as a result: this branch's side of it */
    *n = 2;
    return TIDE_OK;
}

static tide_status false_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    branch_args *a = user;
    (void)max;
    if (a->fail == 2)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "false branch refused");
    outs[0] = op2(g, "Sub", a->x, a->y);
    outs[1] = op2(g, "Mul", a->y, a->y);
    *n = 2;
    return TIDE_OK;
}

static void test_cond_builder(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *p = gu_placeholder(g, "p", TIDE_BOOL, 0, NULL);
    branch_args a = {f32(g, 3), f32(g, 4), 0};
    tide_output r[2];
    int n = 0;
    tide_error *err = tide_error_new();
    tide_status st = tide_cond(g, O(p), true_branch, false_branch, &a, r, 2, &n, err);
    if (st != TIDE_OK)
        fprintf(stderr, "cond: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_STRING_EQUAL(tide_node_op(r[0].node), "Merge");
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_node_name(r[0].node), "cond/"));
    for (int pv = 0; pv < 2 && st == TIDE_OK; pv++) {
        bool b = pv;
        tide_tensor *pt = th_tensor(TIDE_BOOL, 0, NULL, &b);
        tide_feed f = {O(p), pt};
        tide_tensor *v0 = run1(g, r[0], &f, 1), *v1 = run1(g, r[1], &f, 1);
        if (v0 && v1) {
            CU_ASSERT_DOUBLE_EQUAL(*(float *)tide_tensor_data(v0), pv ? 3.0 * 4 + 1 : 3.0 - 4, 1e-6);
            CU_ASSERT_DOUBLE_EQUAL(*(float *)tide_tensor_data(v1), pv ? 3.0 : 16.0, 1e-6);
        }
        tide_tensor_release(v0);
        tide_tensor_release(v1);
        tide_tensor_release(pt);
    }
    /* A branch that fails, and results that disagree, leave the graph as it was. */
    int before = tide_graph_num_nodes(g);
    a.fail = 2;
    CU_ASSERT_EQUAL(tide_cond(g, O(p), true_branch, false_branch, &a, r, 2, &n, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "false branch refused"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cond_1"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    a.fail = 0;
    CU_ASSERT_EQUAL(tide_cond(g, a.x, true_branch, false_branch, &a, r, 2, &n, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "must be a bool scalar"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A branch that builds a node of an unknown op with no inputs: the builder says so (it read the op's
 * definition, which was not found, to decide whether to hoist a constant, and crashed). */
static tide_status unknown_op_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)user;
    (void)max;
    tide_node *made = tide_node_builder_finish(tide_node_builder_new(g, "NoSuchOp", "made"), err);
    if (!made)
        return tide_error_code(err);
    outs[0] = O(made);
    *n = 1;
    return TIDE_OK;
}

static void test_cond_unknown_op(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *p = gu_placeholder(g, "p", TIDE_BOOL, 0, NULL);
    int before = tide_graph_num_nodes(g), n = 0;
    tide_output r[1];
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_cond(g, O(p), unknown_op_branch, unknown_op_branch, NULL, r, 1, &n, err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "unknown op 'NoSuchOp'"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- while_loop */

typedef struct loop_args {
    tide_output limit, scale; /* from outside */
    int body_fails;
} loop_args;

/* (i, acc): while i < limit: i += 1, acc += i * scale (the 1 made inside, limit and scale from outside) */
static tide_status sum_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)n;
    (void)err;
    *pred = op2(g, "Less", v[0], ((loop_args *)user)->limit);
    return TIDE_OK;
}

static tide_status sum_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    loop_args *a = user;
    (void)n;
    if (a->body_fails)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "body refused");
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    tide_node_builder *b = tide_node_builder_new(g, "Cast", NULL);
    tide_node_builder_add_input(b, next[0]);
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", TIDE_FLOAT32);
    tide_output fi = O(gu_finish(b));
    next[1] = op2(g, "Add", v[1], op2(g, "Mul", fi, a->scale));
    /* the scale read a second time: it still enters only once */
    next[1] = op2(g, "Add", next[1], op2(g, "Sub", a->scale, a->scale));
    return TIDE_OK;
}

static void test_while_builder(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *limit = gu_placeholder(g, "limit", TIDE_INT32, 0, NULL);
    loop_args a = {O(limit), f32(g, 0.5f), 0};
    tide_output init[2] = {i32(g, 0), f32(g, 0)}, r[2];
    tide_error *err = tide_error_new();
    tide_status st = tide_while_loop(g, sum_cond, sum_body, &a, init, 2, NULL, r, err);
    if (st != TIDE_OK)
        fprintf(stderr, "while: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    /* Enters: 2 loop variables + limit + scale (read twice, entered once) + the constant 1 (made outside the
     * loop by the builder, entered once rather than run in every iteration) = 5. */
    CU_ASSERT_EQUAL(count_op(g, "Enter"), 5);
    CU_ASSERT_EQUAL(count_op(g, "Exit"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_node_name(r[1].node), "while/"));
    for (int32_t lim = 0; lim <= 30 && st == TIDE_OK; lim += 10) {
        tide_tensor *lt = th_i32(0, NULL, &lim);
        tide_feed f = {O(limit), lt};
        tide_tensor *acc = run1(g, r[1], &f, 1), *i = run1(g, r[0], &f, 1);
        float want = 0;
        for (int k = 1; k <= lim; k++)
            want += (float)k * 0.5f;
        if (acc && i) {
            CU_ASSERT_DOUBLE_EQUAL(*(float *)tide_tensor_data(acc), want, 1e-3);
            CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(i), lim);
        }
        tide_tensor_release(acc);
        tide_tensor_release(i);
        tide_tensor_release(lt);
    }
    /* maximum_iterations stops it first. */
    tide_while_options o;
    tide_while_options_init(&o);
    o.maximum_iterations = 7;
    CU_ASSERT_EQUAL(tide_while_loop(g, sum_cond, sum_body, &a, init, 2, &o, r, err), TIDE_OK);
    int32_t lim = 1000;
    tide_tensor *lt = th_i32(0, NULL, &lim);
    tide_feed f = {O(limit), lt};
    tide_tensor *i = run1(g, r[0], &f, 1);
    if (i)
        CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(i), 7);
    tide_tensor_release(i);
    tide_tensor_release(lt);
    /* A failing body leaves nothing behind. */
    int before = tide_graph_num_nodes(g);
    a.body_fails = 1;
    CU_ASSERT_EQUAL(tide_while_loop(g, sum_cond, sum_body, &a, init, 2, NULL, r, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "body refused"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    o.maximum_iterations = -1;
    a.body_fails = 0;
    CU_ASSERT_EQUAL(tide_while_loop(g, sum_cond, sum_body, &a, init, 2, &o, r, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "maximum_iterations"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A vector that grows: concat needs a shape invariant; without one the message says so. */
static tide_status grow_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    *pred = op2(g, "Less", v[0], i32(g, 5));
    return TIDE_OK;
}

static tide_status grow_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    const char *concat = tide_registry_op_info("ConcatV2", &(tide_op_info){0}) ? "ConcatV2" : "Concat";
    tide_node_builder *b = tide_node_builder_new(g, concat, NULL);
    tide_output parts[2] = {v[1], O(gu_const(g, NULL, th_f32(1, TH_DIMS(1), (float[]){2.5f})))};
    tide_node_builder_add_input_list(b, parts, 2);
    tide_node_builder_add_input(b, i32(g, 0));
    next[1] = O(gu_finish(b));
    return TIDE_OK;
}

static void test_while_shape_invariants(void)
{
    tide_graph *g = tide_graph_new();
    tide_output init[2] = {i32(g, 0), O(gu_const(g, NULL, th_f32(1, TH_DIMS(1), (float[]){1})))}, r[2];
    tide_error *err = tide_error_new();
    int before = tide_graph_num_nodes(g);
    CU_ASSERT_EQUAL(tide_while_loop(g, grow_cond, grow_body, NULL, init, 2, NULL, r, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "has shape [1] when the loop starts and [2] after an iteration"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "shape_invariants"));
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    tide_shape inv[2] = {tide_shape_scalar(), tide_shape_vector(-1)};
    tide_while_options o;
    tide_while_options_init(&o);
    o.shape_invariants = inv;
    CU_ASSERT_EQUAL(tide_while_loop(g, grow_cond, grow_body, NULL, init, 2, &o, r, err), TIDE_OK);
    tide_shape s = tide_node_output_shape(r[1].node, 0);
    CU_ASSERT_EQUAL(s.rank, 1);
    CU_ASSERT_EQUAL(s.dims[0], -1);
    tide_tensor *v = run1(g, r[1], NULL, 0);
    tide_tensor *want = th_f32(1, TH_DIMS(6), (float[]){1, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f});
    if (v)
        TH_ASSERT_CLOSE(v, want, 0, 0);
    tide_tensor_release(v);
    tide_tensor_release(want);
    /* An invariant the initial value breaks. */
    inv[1] = tide_shape_vector(3);
    CU_ASSERT_EQUAL(tide_while_loop(g, grow_cond, grow_body, NULL, init, 2, &o, r, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "does not hold for its initial value"));
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- nesting */

/* outer: i < 4: total += inner(i), inner: j < i + 1: t += cond(j is even ? j : 10 * j) */
typedef struct nest {
    tide_output outer_i;
} nest;

static tide_status even_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    outs[0] = *(tide_output *)user;
    (void)g;
    *n = 1;
    return TIDE_OK;
}

static tide_status odd_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    outs[0] = op2(g, "Mul", *(tide_output *)user, i32(g, 10));
    *n = 1;
    return TIDE_OK;
}

static tide_status inner_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)n;
    (void)err;
    *pred = op2(g, "Less", v[0], op2(g, "Add", ((nest *)user)->outer_i, i32(g, 1)));
    return TIDE_OK;
}

static tide_status inner_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    tide_output j = v[0];
    const char *mod = tide_registry_op_info("FloorMod", &(tide_op_info){0}) ? "FloorMod" : "Mod"; /* j >= 0 */
    tide_output even = op2(g, "Equal", op2(g, mod, j, i32(g, 2)), i32(g, 0));
    tide_output r;
    int nr = 0;
    tide_status st = tide_cond(g, even, even_branch, odd_branch, &j, &r, 1, &nr, err);
    if (st != TIDE_OK)
        return st;
    next[0] = op2(g, "Add", j, i32(g, 1));
    next[1] = op2(g, "Add", v[1], r);
    return TIDE_OK;
}

static tide_status outer_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    *pred = op2(g, "Less", v[0], i32(g, 4));
    return TIDE_OK;
}

static tide_status outer_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    nest ns = {v[0]};
    tide_output init[2] = {i32(g, 0), v[1]}, r[2];
    tide_status st = tide_while_loop(g, inner_cond, inner_body, &ns, init, 2, NULL, r, err);
    if (st != TIDE_OK)
        return st;
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    next[1] = r[1];
    return TIDE_OK;
}

static void test_nested_builders(void)
{
    tide_graph *g = tide_graph_new();
    tide_output init[2] = {i32(g, 0), i32(g, 0)}, r[2];
    tide_error *err = tide_error_new();
    tide_status st = tide_while_loop(g, outer_cond, outer_body, NULL, init, 2, NULL, r, err);
    if (st != TIDE_OK)
        fprintf(stderr, "nested: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    int32_t want = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i + 1; j++)
            want += j % 2 == 0 ? j : 10 * j;
    tide_tensor *v = st == TIDE_OK ? run1(g, r[1], NULL, 0) : NULL;
    if (v)
        CU_ASSERT_EQUAL(*(int32_t *)tide_tensor_data(v), want);
    tide_tensor_release(v);
    /* Every node has a name of its own: the inner loop's Enters of values from outside both loops
     * (made while the node reading them was being built) did take the name that node had chosen. */
    int shared = 0;
    for (int k = 0; k < tide_graph_num_nodes(g); k++) {
        tide_node *n = tide_graph_node_at(g, k);
        if (tide_graph_node(g, tide_node_name(n)) != n) {
            fprintf(stderr, "two nodes are named '%s'\n", tide_node_name(n));
            shared++;
        }
    }
    CU_ASSERT_EQUAL(shared, 0);
    /* Written as graph text and read back (the loops' back edges closed last), it computes the same. */
    char *text = tide_graph_to_text(g, err);
    tide_graph *copy = tide_graph_new();
    st = text ? tide_graph_extend_text(copy, text, err) : TIDE_INTERNAL;
    if (st != TIDE_OK)
        fprintf(stderr, "nested, read back: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_node *exit_copy = st == TIDE_OK ? tide_graph_node(copy, tide_node_name(r[1].node)) : NULL;
    v = exit_copy ? run1(copy, (tide_output){exit_copy, r[1].index}, NULL, 0) : NULL;
    CU_ASSERT(v && *(int32_t *)tide_tensor_data(v) == want);
    tide_tensor_release(v);
    tide_graph_free(copy);
    free(text);
    tide_error_free(err);
    tide_graph_free(g);
}

/* A loop inside a cond: only the branch taken runs its loop. */
static tide_status loop_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    loop_args a = {*(tide_output *)user, f32(g, 1), 0};
    tide_output init[2] = {i32(g, 0), f32(g, 0)};
    tide_status st = tide_while_loop(g, sum_cond, sum_body, &a, init, 2, NULL, outs, err);
    outs[0] = outs[1];
    *n = 1;
    return st;
}

static tide_status const_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)user;
    (void)max;
    (void)err;
    outs[0] = f32(g, -1);
    *n = 1;
    return TIDE_OK;
}

static void test_loop_in_cond(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *p = gu_placeholder(g, "p", TIDE_BOOL, 0, NULL);
    tide_output limit = i32(g, 10), r;
    int n = 0;
    tide_error *err = tide_error_new();
    tide_status st = tide_cond(g, O(p), loop_branch, const_branch, &limit, &r, 1, &n, err);
    if (st != TIDE_OK)
        fprintf(stderr, "loop in cond: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    for (int pv = 0; pv < 2 && st == TIDE_OK; pv++) {
        bool b = pv;
        tide_tensor *pt = th_tensor(TIDE_BOOL, 0, NULL, &b);
        tide_feed f = {O(p), pt};
        tide_tensor *v = run1(g, r, &f, 1);
        if (v)
            CU_ASSERT_DOUBLE_EQUAL(*(float *)tide_tensor_data(v), pv ? 55.0 : -1.0, 1e-5);
        tide_tensor_release(v);
        tide_tensor_release(pt);
    }
    tide_error_free(err);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_cond_builder), TH_TEST(test_cond_unknown_op), TH_TEST(test_while_builder),
                                    TH_TEST(test_while_shape_invariants), TH_TEST(test_nested_builders),
                                    TH_TEST(test_loop_in_cond), TH_END};
    return th_main("cond_while", tests);
}
