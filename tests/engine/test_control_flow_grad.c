/* test_control_flow_grad.c — gradients through cond and while_loop against finite differences, the
 * gradient checker's method (test_gradcheck.c): loss = sum(output * W) with fixed random weights, the
 * symbolic d loss / d x from tide_gradients against (loss(x + h e_j) - loss(x - h e_j)) / 2h in float64,
 * |sym - num| <= 1e-6 + 1e-5 |num|. Cases: both sides of a cond, a value read by one branch only,
 * repeated squaring, an RNN-like loop with loop invariants (weights read in every iteration), nested
 * loops, a cond inside a loop, a loop inside a cond, maximum_iterations, parallel_iterations 1 and
 * 10, a loop variable with no result used, and the same on two devices. Each graph is also written as
 * graph text and read back, and must compute the same gradients bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"

#define MAX_X 4
#define H 1e-6

static tide_output O(tide_node *n) { return (tide_output){n, 0}; }

static tide_output op1(tide_graph *g, const char *op, tide_output a)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(b, a);
    return O(gu_finish(b));
}

static tide_output op2(tide_graph *g, const char *op, tide_output a, tide_output c)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(b, a);
    tide_node_builder_add_input(b, c);
    return O(gu_finish(b));
}

static tide_output f64(tide_graph *g, double v) { return O(gu_const(g, NULL, th_f64(0, NULL, &v))); }
static tide_output i32(tide_graph *g, int32_t v) { return O(gu_const(g, NULL, th_i32(0, NULL, &v))); }

/* One case: build(g, xs, user) returns the output whose weighted sum is the loss. */
typedef struct gcase {
    const char *name;
    int num_x;
    int64_t dims[MAX_X][2];  /* rank 1 or 2 (dims[i][1] = 0: a vector) */
    tide_output (*build)(tide_graph *g, const tide_output *xs, void *user);
    void *user;
    int devices;             /* 0/1: one device, 2: two */
} gcase;

typedef struct checker {
    tide_engine *engine;
    tide_graph *g;
    tide_session *s;
    tide_output x[MAX_X];
    tide_tensor *val[MAX_X];
    tide_output loss;
    const gcase *c;
} checker;

static double run_loss(checker *k, bool *ok)
{
    tide_feed feeds[MAX_X];
    for (int i = 0; i < k->c->num_x; i++)
        feeds[i] = (tide_feed){k->x[i], k->val[i]};
    tide_tensor *out = NULL;
    tide_error *err = tide_error_new();
    if (tide_session_run(k->s, NULL, feeds, k->c->num_x, &k->loss, 1, &out, NULL, 0, NULL, err) != TIDE_OK) {
        fprintf(stderr, "%s: loss: %s\n", k->c->name, tide_error_message(err));
        *ok = false;
    }
    double v = out ? *(double *)tide_tensor_data(out) : NAN;
    tide_tensor_release(out);
    tide_error_free(err);
    return v;
}

static int64_t count(const int64_t *d) { return d[1] ? d[0] * d[1] : d[0]; }

/* The graph (loops, their gradients' loops and stacks) written as text and read back into a new graph
 * (docs/graph-text-format.md: a loop's back edge is closed after the rest is built) computes the same
 * gradients, bit for bit, as the original. */
static bool same_through_text(const checker *k, const tide_output *dx, tide_tensor *const *sym)
{
    tide_error *err = tide_error_new();
    char *text = tide_graph_to_text(k->g, err);
    tide_graph *copy = tide_graph_new();
    bool ok = text && tide_graph_extend_text(copy, text, err) == TIDE_OK;
    if (!ok)
        fprintf(stderr, "%s: reading the graph text back: %s\n", k->c->name, tide_error_message(err));
    tide_feed feeds[MAX_X];
    tide_output fetch[MAX_X];
    for (int i = 0; ok && i < k->c->num_x; i++) {
        feeds[i] = (tide_feed){{tide_graph_node(copy, tide_node_name(k->x[i].node)), k->x[i].index}, k->val[i]};
        fetch[i] = (tide_output){tide_graph_node(copy, tide_node_name(dx[i].node)), dx[i].index};
        ok = feeds[i].output.node && fetch[i].node;
    }
    tide_session *s = ok ? tide_session_new(k->engine, copy, NULL, err) : NULL;
    tide_tensor *back[MAX_X] = {0};
    if (ok && tide_session_run(s, NULL, feeds, k->c->num_x, fetch, k->c->num_x, back, NULL, 0, NULL, err) != TIDE_OK) {
        fprintf(stderr, "%s: running the graph read back: %s\n", k->c->name, tide_error_message(err));
        ok = false;
    }
    for (int i = 0; i < k->c->num_x; i++) {
        if (ok && !tide_tensor_equal(back[i], sym[i], false)) {
            fprintf(stderr, "%s: d loss / d x%d differs in the graph read back from text\n", k->c->name, i);
            ok = false;
        }
        tide_tensor_release(back[i]);
    }
    tide_session_free(s);
    tide_graph_free(copy);
    free(text);
    tide_error_free(err);
    return ok;
}

static bool check_case(const gcase *c)
{
    checker k = {.c = c};
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_cpu_devices = c->devices > 1 ? c->devices : 1;
    o.placement = c->devices > 1 ? TIDE_PLACEMENT_ROUND_ROBIN : TIDE_PLACEMENT_GREEDY;
    k.engine = c->devices > 1 ? tide_engine_new(&o, NULL) : th_engine();
    k.g = tide_graph_new();
    for (int i = 0; i < c->num_x; i++) {
        int rank = c->dims[i][1] ? 2 : 1;
        k.x[i] = O(gu_placeholder(k.g, NULL, TIDE_FLOAT64, rank, c->dims[i]));
        int64_t n = count(c->dims[i]);
        double *v = malloc(sizeof *v * (size_t)n);
        for (int64_t j = 0; j < n; j++)
            v[j] = th_rand(-0.9, 0.9);
        k.val[i] = th_f64(rank, c->dims[i], v);
        free(v);
    }
    tide_output y = c->build(k.g, k.x, c->user);
    bool ok = y.node != NULL;
    if (ok) { /* loss = sum(y * W), W fixed */
        tide_shape s = tide_node_output_shape(y.node, y.index);
        int64_t n = tide_shape_is_fully_defined(&s) ? tide_shape_num_elements(&s) : -1;
        CU_ASSERT_TRUE(n > 0);
        double *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
        for (int64_t j = 0; j < n; j++)
            w[j] = th_rand(0.5, 1.5);
        tide_output wn = O(gu_const(k.g, "w", th_tensor(TIDE_FLOAT64, s.rank, s.dims, w)));
        free(w);
        tide_output prod = op2(k.g, "Mul", y, wn);
        int32_t axes[TIDE_MAX_RANK];
        for (int a = 0; a < s.rank; a++)
            axes[a] = a;
        tide_output ax = O(gu_const(k.g, NULL, th_i32(1, (int64_t[]){s.rank}, axes)));
        k.loss = op2(k.g, "Sum", prod, ax);
    }
    tide_output dx[MAX_X];
    tide_error *err = tide_error_new();
    if (ok && tide_gradients(k.g, &k.loss, 1, k.x, c->num_x, NULL, dx, err) != TIDE_OK) {
        fprintf(stderr, "%s: gradients: %s\n", c->name, tide_error_message(err));
        ok = false;
    }
    k.s = tide_session_new(k.engine, k.g, NULL, NULL);
    tide_tensor *sym[MAX_X] = {0};
    if (ok) {
        tide_feed feeds[MAX_X];
        for (int i = 0; i < c->num_x; i++)
            feeds[i] = (tide_feed){k.x[i], k.val[i]};
        if (tide_session_run(k.s, NULL, feeds, c->num_x, dx, c->num_x, sym, NULL, 0, NULL, err) != TIDE_OK) {
            fprintf(stderr, "%s: running the gradients: %s\n", c->name, tide_error_message(err));
            ok = false;
        }
    }
    ok = ok && same_through_text(&k, dx, sym);
    for (int i = 0; ok && i < c->num_x; i++) {
        double *x = tide_tensor_data(k.val[i]);
        for (int64_t j = 0; ok && j < count(c->dims[i]); j++) {
            double keep = x[j], h = H * fmax(1, fabs(keep));
            x[j] = keep + h;
            double up = run_loss(&k, &ok);
            x[j] = keep - h;
            double down = run_loss(&k, &ok);
            x[j] = keep;
            double num = (up - down) / (2 * h), s = ((double *)tide_tensor_data(sym[i]))[j];
            if (!(fabs(s - num) <= 1e-6 + 1e-5 * fabs(num))) {
                fprintf(stderr, "%s: d loss / d x%d[%lld]: symbolic %.10g, numeric %.10g\n", c->name, i, (long long)j, s, num);
                ok = false;
            }
        }
    }
    for (int i = 0; i < c->num_x; i++) {
        tide_tensor_release(sym[i]);
        tide_tensor_release(k.val[i]);
    }
    tide_error_free(err);
    tide_session_free(k.s);
    tide_graph_free(k.g);
    if (c->devices > 1)
        tide_engine_free(k.engine);
    return ok;
}

/* ---------------------------------------------------------------- cond cases */

typedef struct cond_user {
    tide_output x, y;
    bool pred;
} cond_user;

static tide_status cube_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    cond_user *u = user;
    outs[0] = op2(g, "Mul", op2(g, "Mul", u->x, u->x), op2(g, "Mul", u->x, f64(g, 3)));
    *n = 1;
    return TIDE_OK;
}

static tide_status sin_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    cond_user *u = user;
    outs[0] = op2(g, "Mul", op1(g, "Sin", u->x), u->y); /* y read by this branch only */
    *n = 1;
    return TIDE_OK;
}

static tide_output build_cond(tide_graph *g, const tide_output *xs, void *user)
{
    bool p = *(bool *)user;
    cond_user u = {xs[0], xs[1], p};
    tide_output pred = O(gu_const(g, NULL, th_tensor(TIDE_BOOL, 0, NULL, &p)));
    tide_output r;
    int n = 0;
    tide_error *err = tide_error_new();
    if (tide_cond(g, pred, cube_branch, sin_branch, &u, &r, 1, &n, err) != TIDE_OK) {
        fprintf(stderr, "cond: %s\n", tide_error_message(err));
        r.node = NULL;
    }
    tide_error_free(err);
    return op2(g, "Add", r, xs[1]); /* y also used outside: its gradient sums both */
}

/* ---------------------------------------------------------------- while cases */

typedef struct loop_user {
    int steps;
    int parallel;
    int64_t max_iter;
    tide_output w, b;       /* invariants (RNN) */
    bool cond_in_body;
    bool drop_second;       /* the second variable's result is not used */
} loop_user;

static tide_status steps_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)n;
    (void)err;
    loop_user *u = user;
    *pred = op2(g, "Less", v[0], i32(g, u->steps));
    return TIDE_OK;
}

/* v = v * v * 0.5 + v (or, with cond_in_body, even steps: sin(v), odd: v * v) */
static tide_status odd_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    outs[0] = op2(g, "Mul", *(tide_output *)user, *(tide_output *)user);
    *n = 1;
    return TIDE_OK;
}

static tide_status even_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)max;
    (void)err;
    outs[0] = op1(g, "Sin", *(tide_output *)user);
    *n = 1;
    return TIDE_OK;
}

static tide_status square_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)n;
    loop_user *u = user;
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    if (u->cond_in_body) {
        tide_output odd = op2(g, "Equal", op2(g, "Mod", v[0], i32(g, 2)), i32(g, 1));
        tide_output x = v[1];
        int nr = 0;
        tide_status st = tide_cond(g, odd, odd_branch, even_branch, &x, &next[1], 1, &nr, err);
        if (st != TIDE_OK)
            return st;
    } else {
        next[1] = op2(g, "Add", op2(g, "Mul", op2(g, "Mul", v[1], v[1]), f64(g, 0.5)), v[1]);
    }
    if (n > 2)
        next[2] = op2(g, "Add", v[2], v[1]); /* a second float variable */
    return TIDE_OK;
}

static tide_output build_square_loop(tide_graph *g, const tide_output *xs, void *user)
{
    loop_user *u = user;
    int nv = u->drop_second ? 3 : 2;
    tide_output init[3] = {i32(g, 0), xs[0], xs[0]}, r[3];
    tide_while_options o;
    tide_while_options_init(&o);
    o.parallel_iterations = u->parallel ? u->parallel : 10;
    o.maximum_iterations = u->max_iter;
    tide_error *err = tide_error_new();
    tide_status st = tide_while_loop(g, steps_cond, square_body, u, init, nv, &o, r, err);
    if (st != TIDE_OK)
        fprintf(stderr, "square loop: %s\n", tide_error_message(err));
    tide_error_free(err);
    return st == TIDE_OK ? r[1] : (tide_output){NULL, 0};
}

/* h = tanh(matmul(h, W) + b), W and b read in every iteration (loop invariants). */
static tide_status rnn_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)n;
    (void)err;
    loop_user *u = user;
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    next[1] = op1(g, "Tanh", op2(g, "Add", op2(g, "MatMul", v[1], u->w), u->b));
    return TIDE_OK;
}

static tide_output build_rnn(tide_graph *g, const tide_output *xs, void *user)
{
    loop_user *u = user;
    u->w = xs[1];
    u->b = xs[2];
    tide_output init[2] = {i32(g, 0), xs[0]}, r[2];
    tide_error *err = tide_error_new();
    tide_status st = tide_while_loop(g, steps_cond, rnn_body, u, init, 2, NULL, r, err);
    if (st != TIDE_OK)
        fprintf(stderr, "rnn: %s\n", tide_error_message(err));
    tide_error_free(err);
    return st == TIDE_OK ? r[1] : (tide_output){NULL, 0};
}

/* outer: 3 iterations of { inner: 2 iterations of h = sin(h * w) + h }, w an invariant of both */
typedef struct nest_user {
    tide_output w;
} nest_user;

static tide_status two_cond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)n;
    (void)err;
    *pred = op2(g, "Less", v[0], i32(g, *(int *)user));
    return TIDE_OK;
}

static nest_user nest;
static int inner_steps = 2, outer_steps = 3;

static tide_status inner_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    (void)err;
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    next[1] = op2(g, "Add", op1(g, "Sin", op2(g, "Mul", v[1], nest.w)), v[1]);
    return TIDE_OK;
}

static tide_status outer_body(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user;
    (void)n;
    tide_output init[2] = {i32(g, 0), op2(g, "Mul", v[1], f64(g, 0.9))}, r[2];
    tide_status st = tide_while_loop(g, two_cond, inner_body, &inner_steps, init, 2, NULL, r, err);
    next[0] = op2(g, "Add", v[0], i32(g, 1));
    next[1] = r[1];
    return st;
}

static tide_output build_nested(tide_graph *g, const tide_output *xs, void *user)
{
    (void)user;
    nest.w = xs[1];
    tide_output init[2] = {i32(g, 0), xs[0]}, r[2];
    tide_error *err = tide_error_new();
    tide_status st = tide_while_loop(g, two_cond, outer_body, &outer_steps, init, 2, NULL, r, err);
    if (st != TIDE_OK)
        fprintf(stderr, "nested: %s\n", tide_error_message(err));
    tide_error_free(err);
    return st == TIDE_OK ? r[1] : (tide_output){NULL, 0};
}

/* A loop inside a cond's true branch. */
static loop_user in_cond = {.steps = 3};
static tide_output cond_x;

static tide_status loop_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)user;
    (void)max;
    tide_output init[2] = {i32(g, 0), cond_x}, r[2];
    tide_status st = tide_while_loop(g, steps_cond, square_body, &in_cond, init, 2, NULL, r, err);
    outs[0] = r[1];
    *n = 1;
    return st;
}

static tide_status plain_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    (void)user;
    (void)max;
    (void)err;
    outs[0] = op1(g, "Tanh", cond_x);
    *n = 1;
    return TIDE_OK;
}

static tide_output build_loop_in_cond(tide_graph *g, const tide_output *xs, void *user)
{
    bool p = *(bool *)user;
    cond_x = xs[0];
    tide_output pred = O(gu_const(g, NULL, th_tensor(TIDE_BOOL, 0, NULL, &p))), r;
    int n = 0;
    tide_error *err = tide_error_new();
    tide_status st = tide_cond(g, pred, loop_branch, plain_branch, NULL, &r, 1, &n, err);
    if (st != TIDE_OK)
        fprintf(stderr, "loop in cond: %s\n", tide_error_message(err));
    tide_error_free(err);
    return st == TIDE_OK ? r : (tide_output){NULL, 0};
}

/* ---------------------------------------------------------------- the tests */

static bool yes = true, no = false;

static void test_cond_gradients(void)
{
    gcase c = {"cond (true)", 2, {{3, 0}, {3, 0}}, build_cond, &yes, 0};
    CU_ASSERT_TRUE(check_case(&c));
    c.name = "cond (false)";
    c.user = &no;
    CU_ASSERT_TRUE(check_case(&c));
}

static void test_loop_gradients(void)
{
    loop_user u1 = {.steps = 3}, u2 = {.steps = 4, .parallel = 1}, u3 = {.steps = 1000, .max_iter = 3},
              u4 = {.steps = 5, .cond_in_body = true}, u5 = {.steps = 3, .drop_second = true},
              u0 = {.steps = 0};
    gcase cases[] = {
        {"squaring, 3 iterations", 1, {{4, 0}}, build_square_loop, &u1, 0},
        {"squaring, parallel_iterations 1", 1, {{4, 0}}, build_square_loop, &u2, 0},
        {"maximum_iterations", 1, {{3, 0}}, build_square_loop, &u3, 0},
        {"a cond inside the body", 1, {{4, 0}}, build_square_loop, &u4, 0},
        {"a variable whose result is not used", 1, {{2, 0}}, build_square_loop, &u5, 0},
        {"zero iterations", 1, {{3, 0}}, build_square_loop, &u0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!check_case(&cases[i]))
            CU_FAIL(cases[i].name);
}

static void test_rnn_gradients(void)
{
    loop_user u = {.steps = 4};
    gcase c = {"rnn: h = tanh(h W + b), 4 steps", 3, {{2, 3}, {3, 3}, {3, 0}}, build_rnn, &u, 0};
    CU_ASSERT_TRUE(check_case(&c));
    c.devices = 2;
    c.name = "rnn on two devices (round robin)";
    CU_ASSERT_TRUE(check_case(&c));
}

static void test_nested_gradients(void)
{
    gcase c = {"nested loops with an invariant of both", 2, {{3, 0}, {3, 0}}, build_nested, NULL, 0};
    CU_ASSERT_TRUE(check_case(&c));
}

static void test_loop_in_cond_gradients(void)
{
    gcase c = {"a loop in a cond (taken)", 1, {{3, 0}}, build_loop_in_cond, &yes, 0};
    CU_ASSERT_TRUE(check_case(&c));
    c.name = "a loop in a cond (not taken)";
    c.user = &no;
    CU_ASSERT_TRUE(check_case(&c));
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_cond_gradients), TH_TEST(test_loop_gradients),
                                    TH_TEST(test_rnn_gradients), TH_TEST(test_nested_gradients),
                                    TH_TEST(test_loop_in_cond_gradients), TH_END};
    return th_main("control_flow_grad", tests);
}
