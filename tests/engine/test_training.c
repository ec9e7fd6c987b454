/* test_training.c — the training API (engine/train) and the fused update ops it builds
 * (engine/ops/training_ops.c, kernels/cpu/training.c).
 *
 * Expected values are computed here, independently of the kernels: every Apply op is stepped in double
 * by TensorFlow's documented update formulas (inputs rounded to the op's dtype first) over several
 * steps with fresh gradients and hyper-parameters fed each step; initializers are checked by their
 * ranges and by mean/stddev statistics of 100k samples against the distributions' moments; minimize
 * drives a least-squares linear regression (MatMul, Add, Sub, Square, Mean) whose first gradient-descent
 * step is also checked against the gradient 2/N X^T (XW + b - Y) written out here. Errors a user can
 * cause are checked for their code and for the names in their messages, and for leaving the graph as
 * it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"

/* ---------------------------------------------------------------- helpers */

/* Each test starts with no variables in the engine (they outlive graphs and would be shared by name). */
static void reset_variables(void)
{
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_engine_reset_container(th_engine(), "", err), TIDE_OK);
    tide_error_free(err);
}

static tide_session *new_session(tide_graph *g)
{
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    if (!s)
        fprintf(stderr, "session: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_error_free(err);
    return s;
}

/* A Const of dtype dt holding v (rounded to dt). */
static tide_node *const_of(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims,
                           const double *v)
{
    return gu_const(g, name, th_from_doubles(dt, rank, dims, v, 0));
}

static tide_node *scalar_of(tide_graph *g, const char *name, tide_dtype dt, double v)
{
    return const_of(g, name, dt, 0, NULL, &v);
}

/* v rounded to dt (float32 or float64), as the graph will hold it. */
static double round_to(tide_dtype dt, double v) { return dt == TIDE_FLOAT32 ? (double)(float)v : v; }

/* Runs fetches (and targets) with feeds; fails the test (printing the message) unless it succeeds. */
static void run_ok(tide_session *s, const tide_feed *feeds, int nf, const tide_output *fetches, int nfetch,
                   tide_tensor **values, tide_node *const *targets, int nt)
{
    tide_error *err = tide_error_new();
    tide_status st = tide_session_run(s, NULL, feeds, nf, fetches, nfetch, values, targets, nt, NULL, err);
    if (st != TIDE_OK)
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    tide_error_free(err);
}

static void run_target(tide_session *s, tide_node *target) { run_ok(s, NULL, 0, NULL, 0, NULL, &target, 1); }

/* Runs target (or fetches output 0 of node when target is NULL) and expects code and needle. */
static void expect_run_fails(tide_session *s, const tide_feed *feeds, int nf, tide_node *node, tide_status code,
                             const char *needle)
{
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output o = {node, 0};
    tide_status st = tide_session_run(s, NULL, feeds, nf, &o, 1, &out, NULL, 0, NULL, err);
    CU_ASSERT_EQUAL(st, code);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", tide_error_message(err), needle);
        CU_FAIL("error message lacks the expected text");
    }
    CU_ASSERT_PTR_NULL(out);
    tide_tensor_release(out);
    tide_error_free(err);
}

static void expect_error(const tide_error *err, tide_status code, const char *needle)
{
    CU_ASSERT_EQUAL(tide_error_code(err), code);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", tide_error_message(err), needle);
        CU_FAIL("error message lacks the expected text");
    }
}

static tide_node *finish_expect_fail(tide_node_builder *b, tide_status code, const char *needle)
{
    tide_error *err = tide_error_new();
    tide_node *n = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NULL(n);
    expect_error(err, code, needle);
    tide_error_free(err);
    return n;
}

static tide_tensor *fetch(tide_session *s, tide_node *n)
{
    tide_tensor *t = NULL;
    tide_output o = {n, 0};
    run_ok(s, NULL, 0, &o, 1, &t, NULL, 0);
    return t;
}

static double fetch_scalar(tide_session *s, tide_node *n)
{
    tide_tensor *t = fetch(s, n);
    double v = t ? tide_tensor_get_f64(t, 0) : NAN;
    tide_tensor_release(t);
    return v;
}

static tide_node *variable_from(tide_graph *g, const char *name, tide_node *initial, bool trainable)
{
    tide_error *err = tide_error_new();
    tide_node *v = tide_variable_new(g, name, (tide_output){initial, 0}, trainable, err);
    if (!v)
        fprintf(stderr, "tide_variable_new: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    tide_error_free(err);
    return v;
}

static tide_node *init_op(tide_graph *g)
{
    tide_error *err = tide_error_new();
    tide_node *n = tide_global_variables_initializer(g, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    tide_error_free(err);
    return n;
}

/* ---------------------------------------------------------------- reference updates (double) */

enum { GD, MOMENTUM, ADAGRAD, RMSPROP, ADAM, NUM_KINDS };

typedef struct apply_kind {
    const char *op;
    int num_inputs, num_refs, grad;
} apply_kind;

static const apply_kind KINDS[NUM_KINDS] = {
    {"ApplyGradientDescent", 3, 1, 2}, {"ApplyMomentum", 5, 2, 3}, {"ApplyAdagrad", 4, 2, 3},
    {"ApplyRMSProp", 8, 3, 7},         {"ApplyAdam", 10, 3, 9},
};

/* The scalars of kind at step t (1, 2, ...), in the op's input order. Returns how many. */
static int step_scalars(int kind, int t, double *h)
{
    switch (kind) {
    case GD: h[0] = 0.1 + 0.01 * t; return 1;                                    /* alpha */
    case MOMENTUM: h[0] = 0.05; h[1] = 0.9; return 2;                            /* lr, momentum */
    case ADAGRAD: h[0] = 0.1; return 1;                                          /* lr */
    case RMSPROP: h[0] = 0.01; h[1] = 0.9; h[2] = 0.5; h[3] = 0.05; return 4;    /* lr, rho, momentum, eps */
    case ADAM:                       /* beta1_power, beta2_power, lr, beta1, beta2, epsilon */
        h[0] = pow(0.9, t); h[1] = pow(0.999, t); h[2] = 0.01; h[3] = 0.9; h[4] = 0.999; h[5] = 1e-3;
        return 6;
    }
    return 0;
}

/* One step of TensorFlow's documented update for element i. s[0] is the variable, s[1], s[2] slots.
 * variant: use_nesterov for Momentum and Adam, update_slots false for Adagrad. */
static void reference_step(int kind, bool nesterov, double *s[3], const double *g, int64_t n, const double *h)
{
    for (int64_t i = 0; i < n; i++) {
        double *var = &s[0][i], gi = g[i];
        switch (kind) {
        case GD: *var -= h[0] * gi; break;
        case MOMENTUM: {
            double *accum = &s[1][i];
            *accum = *accum * h[1] + gi;
            *var -= nesterov ? gi * h[0] + *accum * h[1] * h[0] : h[0] * *accum;
            break;
        }
        case ADAGRAD: {
            double *accum = &s[1][i];
            if (!nesterov) /* update_slots false leaves the accumulator as it is */
                *accum += gi * gi;
            *var -= h[0] * gi / sqrt(*accum);
            break;
        }
        case RMSPROP: {
            double *ms = &s[1][i], *mom = &s[2][i];
            *ms = h[1] * *ms + (1 - h[1]) * gi * gi;
            *mom = h[2] * *mom + h[0] * gi / sqrt(*ms + h[3]);
            *var -= *mom;
            break;
        }
        case ADAM: {
            double *m = &s[1][i], *v = &s[2][i];
            double lr_t = h[2] * sqrt(1 - h[1]) / (1 - h[0]);
            *m = h[3] * *m + (1 - h[3]) * gi;
            *v = h[4] * *v + (1 - h[4]) * gi * gi;
            double step = nesterov ? h[3] * *m + (1 - h[3]) * gi : *m;
            *var -= lr_t * step / (sqrt(*v) + h[5]);
            break;
        }
        }
    }
}

/* Initial value of ref k for element i: slots that must be positive (Adagrad's accumulator, the
 * mean squares) start positive. */
static double initial_value(int kind, int k)
{
    if (k == 0)
        return th_rand(-1, 1);
    if (kind == ADAGRAD)
        return th_rand(0.1, 0.5);
    if ((kind == RMSPROP && k == 1) || (kind == ADAM && k == 2))
        return th_rand(0.0, 0.3);
    return th_rand(-0.5, 0.5);
}

/* A graph with one Apply op over variables "var", "slot1", "slot2" of n elements, the gradient and
 * every scalar as Placeholders. */
typedef struct apply_graph {
    tide_graph *g;
    tide_session *s;
    tide_node *refs[3], *apply, *grad, *scalars[6], *init;
    int num_scalars;
    double *state[3]; /* the reference values */
} apply_graph;

static void apply_graph_build(apply_graph *a, int kind, tide_dtype dt, bool nesterov, int rank,
                              const int64_t *dims)
{
    static const char *const ref_names[] = {"var", "slot1", "slot2"};
    reset_variables();
    memset(a, 0, sizeof *a);
    a->g = tide_graph_new();
    tide_shape shape = tide_shape_make(rank, dims);
    int64_t n = tide_shape_num_elements(&shape);
    const apply_kind *k = &KINDS[kind];
    for (int r = 0; r < k->num_refs; r++) {
        a->state[r] = malloc((size_t)n * sizeof(double));
        for (int64_t i = 0; i < n; i++)
            a->state[r][i] = round_to(dt, initial_value(kind, r));
        char name[32];
        snprintf(name, sizeof name, "%s_value", ref_names[r]);
        a->refs[r] = variable_from(a->g, ref_names[r], const_of(a->g, name, dt, rank, dims, a->state[r]), true);
    }
    a->grad = gu_placeholder(a->g, "grad", dt, rank, dims);
    double h[6];
    a->num_scalars = step_scalars(kind, 1, h);
    tide_output in[10];
    int next_scalar = 0;
    for (int i = 0; i < k->num_inputs; i++) {
        if (i < k->num_refs) {
            in[i] = (tide_output){a->refs[i], 0};
        } else if (i == k->grad) {
            in[i] = (tide_output){a->grad, 0};
        } else {
            char name[16];
            snprintf(name, sizeof name, "h%d", next_scalar);
            a->scalars[next_scalar] = gu_placeholder(a->g, name, dt, 0, NULL);
            in[i] = (tide_output){a->scalars[next_scalar++], 0};
        }
    }
    tide_node_builder *b = tide_node_builder_new(a->g, k->op, "apply");
    tide_node_builder_add_inputs_flat(b, in, k->num_inputs);
    if (nesterov) /* the variant: Adagrad's is update_slots false */
        tide_attrs_set_bool(tide_node_builder_attrs(b), kind == ADAGRAD ? "update_slots" : "use_nesterov",
                            kind != ADAGRAD);
    a->apply = gu_finish(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a->apply);
    a->init = init_op(a->g);
    a->s = new_session(a->g);
}

static void apply_graph_free(apply_graph *a)
{
    tide_session_free(a->s);
    tide_graph_free(a->g);
    for (int r = 0; r < 3; r++)
        free(a->state[r]);
}

/* Runs step t (1, 2, ...) with a fresh random gradient, advances the reference, and checks the op's
 * output (the variable's new value) against it. */
static void apply_graph_step(apply_graph *a, int kind, tide_dtype dt, bool nesterov, int t, double rtol, double atol)
{
    tide_shape s = tide_node_output_shape(a->apply, 0);
    int64_t n = tide_shape_num_elements(&s);
    double *g = malloc((size_t)n * sizeof *g), h[6];
    for (int64_t i = 0; i < n; i++)
        g[i] = round_to(dt, th_rand(-1, 1));
    step_scalars(kind, t, h);
    tide_feed feeds[7];
    feeds[0] = (tide_feed){{a->grad, 0}, th_from_doubles(dt, s.rank, s.dims, g, 0)};
    for (int i = 0; i < a->num_scalars; i++) {
        h[i] = round_to(dt, h[i]);
        feeds[1 + i] = (tide_feed){{a->scalars[i], 0}, th_from_doubles(dt, 0, NULL, &h[i], 0)};
    }
    tide_tensor *out = NULL;
    tide_output o = {a->apply, 0};
    run_ok(a->s, feeds, 1 + a->num_scalars, &o, 1, &out, NULL, 0);
    reference_step(kind, nesterov, a->state, g, n, h);
    tide_tensor *want = th_from_doubles(dt, s.rank, s.dims, a->state[0], 0);
    TH_ASSERT_CLOSE(out, want, rtol, atol);
    tide_tensor_release(want);
    tide_tensor_release(out);
    for (int i = 0; i < 1 + a->num_scalars; i++)
        tide_tensor_release(feeds[i].value);
    free(g);
}

/* After the steps: the variable and every slot, read back through their Variable nodes. */
static void apply_graph_check_state(apply_graph *a, int kind, tide_dtype dt, double rtol, double atol)
{
    tide_shape s = tide_node_output_shape(a->apply, 0);
    for (int r = 0; r < KINDS[kind].num_refs; r++) {
        tide_tensor *got = fetch(a->s, a->refs[r]);
        tide_tensor *want = th_from_doubles(dt, s.rank, s.dims, a->state[r], 0);
        TH_ASSERT_CLOSE(got, want, rtol, atol);
        tide_tensor_release(want);
        tide_tensor_release(got);
    }
}

static void check_apply(int kind, tide_dtype dt, bool nesterov, int rank, const int64_t *dims, int steps)
{
    double rtol = dt == TIDE_FLOAT32 ? 2e-5 : 1e-12, atol = dt == TIDE_FLOAT32 ? 2e-6 : 1e-14;
    apply_graph a;
    apply_graph_build(&a, kind, dt, nesterov, rank, dims);
    run_target(a.s, a.init);
    for (int t = 1; t <= steps; t++)
        apply_graph_step(&a, kind, dt, nesterov, t, rtol, atol);
    apply_graph_check_state(&a, kind, dt, rtol, atol);
    apply_graph_free(&a);
}

/* ---------------------------------------------------------------- the Apply ops */

static void test_apply_ops_match_reference(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int d = 0; d < 2; d++)
        for (int kind = 0; kind < NUM_KINDS; kind++) {
            check_apply(kind, dts[d], false, 2, TH_DIMS(3, 5), 4);
            if (kind == MOMENTUM || kind == ADAM || kind == ADAGRAD)
                check_apply(kind, dts[d], true, 2, TH_DIMS(3, 5), 4);
        }
}

static void test_apply_ops_scalar_and_empty_variables(void)
{
    for (int kind = 0; kind < NUM_KINDS; kind++) {
        check_apply(kind, TIDE_FLOAT64, false, 0, NULL, 3);
        check_apply(kind, TIDE_FLOAT32, false, 2, TH_DIMS(0, 4), 2);
    }
}

/* Large enough to be split over threads; an odd size leaves tails in every block and chunk. */
static void test_apply_ops_large_variables(void)
{
    for (int kind = 0; kind < NUM_KINDS; kind++)
        check_apply(kind, kind % 2 ? TIDE_FLOAT64 : TIDE_FLOAT32, kind == ADAM, 1, TH_DIMS(200003), 2);
}

static void test_apply_copy_on_write(void)
{
    apply_graph a;
    int64_t dims[] = {4};
    apply_graph_build(&a, MOMENTUM, TIDE_FLOAT32, false, 1, dims);
    run_target(a.s, a.init);
    /* Values read before an update never change after it. */
    tide_tensor *var_before = fetch(a.s, a.refs[0]), *accum_before = fetch(a.s, a.refs[1]);
    tide_tensor *var_copy = tide_tensor_copy(var_before, NULL), *accum_copy = tide_tensor_copy(accum_before, NULL);
    apply_graph_step(&a, MOMENTUM, TIDE_FLOAT32, false, 1, 2e-5, 2e-6);
    TH_ASSERT_CLOSE(var_before, var_copy, 0, 0);
    TH_ASSERT_CLOSE(accum_before, accum_copy, 0, 0);
    tide_tensor *var_after = fetch(a.s, a.refs[0]);
    CU_ASSERT_FALSE(tide_tensor_equal(var_after, var_before, false));
    CU_ASSERT_NOT_EQUAL(tide_tensor_data(var_after), tide_tensor_data(var_before));
    tide_tensor_release(var_after);
    tide_tensor_release(var_before);
    tide_tensor_release(accum_before);
    tide_tensor_release(var_copy);
    tide_tensor_release(accum_copy);
    apply_graph_check_state(&a, MOMENTUM, TIDE_FLOAT32, 2e-5, 2e-6);

    /* With nobody else holding the variable's tensor, the update writes in place: two updates in a row
     * return the same buffer (copy on write would allocate while the old one is still alive). */
    double alpha = 0.5, g[4] = {1, 2, 3, 4};
    tide_node *alpha_node = scalar_of(a.g, "alpha", TIDE_FLOAT32, alpha);
    tide_node *grad = const_of(a.g, "g", TIDE_FLOAT32, 1, dims, g);
    tide_node_builder *b = tide_node_builder_new(a.g, "ApplyGradientDescent", "descend");
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{a.refs[0], 0}, {alpha_node, 0}, {grad, 0}}, 3);
    tide_node *descend = gu_finish(b);
    tide_tensor *first = fetch(a.s, descend);
    uintptr_t first_data = (uintptr_t)tide_tensor_data(first);
    double before = tide_tensor_get_f64(first, 2);
    tide_tensor_release(first);
    tide_tensor *second = fetch(a.s, descend);
    CU_ASSERT_EQUAL((uintptr_t)tide_tensor_data(second), first_data);
    CU_ASSERT_DOUBLE_EQUAL(tide_tensor_get_f64(second, 2), before - alpha * g[2], 1e-6);
    tide_tensor_release(second);
    apply_graph_free(&a);
}

static void test_apply_errors_at_run_time(void)
{
    apply_graph a;
    apply_graph_build(&a, MOMENTUM, TIDE_FLOAT32, false, 1, TH_DIMS(3));
    double g[4] = {1, 2, 3, 4}, lr = 0.1, mom = 0.9;
    tide_tensor *g3 = th_from_doubles(TIDE_FLOAT32, 1, TH_DIMS(3), g, 0);
    tide_tensor *lr_t = th_from_doubles(TIDE_FLOAT32, 0, NULL, &lr, 0);
    tide_tensor *mom_t = th_from_doubles(TIDE_FLOAT32, 0, NULL, &mom, 0);
    tide_feed feeds[3] = {{{a.grad, 0}, g3}, {{a.scalars[0], 0}, lr_t}, {{a.scalars[1], 0}, mom_t}};
    /* Uninitialised: the variable, then (var initialised alone) the slot, by name. */
    expect_run_fails(a.s, feeds, 3, a.apply, TIDE_FAILED_PRECONDITION, "variable 'var' (var) is uninitialized");
    run_target(a.s, tide_graph_node(a.g, "var/init"));
    expect_run_fails(a.s, feeds, 3, a.apply, TIDE_FAILED_PRECONDITION, "variable 'slot1' (accum) is uninitialized");
    run_target(a.s, a.init);
    tide_tensor *var_before = fetch(a.s, a.refs[0]);
    /* Placeholders of unknown shape let wrong shapes reach the kernel; a failed update changes nothing. */
    tide_graph *g2 = a.g;
    tide_node *loose_grad = gu_placeholder(g2, "loose_grad", TIDE_FLOAT32, -1, NULL);
    tide_node *loose_lr = gu_placeholder(g2, "loose_lr", TIDE_FLOAT32, -1, NULL);
    tide_node_builder *b = tide_node_builder_new(g2, "ApplyMomentum", "loose");
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{a.refs[0], 0}, {a.refs[1], 0}, {loose_lr, 0}, {loose_grad, 0},
                                                         {a.scalars[1], 0}}, 5);
    tide_node *loose = gu_finish(b);
    tide_tensor *g4 = th_from_doubles(TIDE_FLOAT32, 1, TH_DIMS(4), g, 0);
    tide_tensor *lr2 = th_from_doubles(TIDE_FLOAT32, 1, TH_DIMS(2), g, 0);
    tide_feed bad_grad[3] = {{{loose_grad, 0}, g4}, {{loose_lr, 0}, lr_t}, {{a.scalars[1], 0}, mom_t}};
    expect_run_fails(a.s, bad_grad, 3, loose, TIDE_INVALID_ARGUMENT,
                     "grad of shape [4] does not match variable 'var' (var) of shape [3]");
    tide_feed bad_lr[3] = {{{loose_grad, 0}, g3}, {{loose_lr, 0}, lr2}, {{a.scalars[1], 0}, mom_t}};
    expect_run_fails(a.s, bad_lr, 3, loose, TIDE_INVALID_ARGUMENT, "lr must be a scalar, got shape [2]");
    tide_tensor *var_after = fetch(a.s, a.refs[0]);
    TH_ASSERT_CLOSE(var_after, var_before, 0, 0);
    /* One variable given as both var and accum. */
    b = tide_node_builder_new(g2, "ApplyMomentum", "twice");
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{a.refs[0], 0}, {a.refs[0], 0}, {a.scalars[0], 0}, {a.grad, 0},
                                                         {a.scalars[1], 0}}, 5);
    tide_node *twice = gu_finish(b);
    expect_run_fails(a.s, feeds, 3, twice, TIDE_INVALID_ARGUMENT, "var and accum are the same variable 'var'");
    tide_tensor_release(var_after);
    tide_tensor_release(var_before);
    tide_tensor_release(g3);
    tide_tensor_release(g4);
    tide_tensor_release(lr_t);
    tide_tensor_release(lr2);
    tide_tensor_release(mom_t);
    apply_graph_free(&a);
}

static void test_apply_errors_at_graph_time(void)
{
    reset_variables();
    tide_graph *g = tide_graph_new();
    double zeros[4] = {0};
    tide_node *var = variable_from(g, "var", const_of(g, "v0", TIDE_FLOAT32, 1, TH_DIMS(3), zeros), true);
    tide_node *accum = variable_from(g, "accum", const_of(g, "a0", TIDE_FLOAT32, 1, TH_DIMS(3), zeros), true);
    tide_node *lr = scalar_of(g, "lr", TIDE_FLOAT32, 0.1);
    tide_node *g3 = const_of(g, "g3", TIDE_FLOAT32, 1, TH_DIMS(3), zeros);
    tide_node *g4 = const_of(g, "g4", TIDE_FLOAT32, 1, TH_DIMS(4), zeros);
    tide_node *vec = const_of(g, "vec", TIDE_FLOAT32, 1, TH_DIMS(2), zeros);
    int nodes = tide_graph_num_nodes(g);

    tide_node_builder *b = tide_node_builder_new(g, "ApplyGradientDescent", NULL);
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{var, 0}, {lr, 0}, {g4, 0}}, 3);
    finish_expect_fail(b, TIDE_INVALID_ARGUMENT, "delta has shape [4] but var has shape [3]");
    b = tide_node_builder_new(g, "ApplyAdagrad", NULL);
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{var, 0}, {accum, 0}, {vec, 0}, {g3, 0}}, 4);
    finish_expect_fail(b, TIDE_INVALID_ARGUMENT, "lr must be a scalar, got shape [2]");
    /* A Ref input must come straight from a Variable. */
    b = tide_node_builder_new(g, "ApplyGradientDescent", NULL);
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{g3, 0}, {lr, 0}, {g3, 0}}, 3);
    finish_expect_fail(b, TIDE_INVALID_ARGUMENT, "must come from a Variable");
    /* float32 and float64 only. */
    int32_t iz[3] = {0, 0, 0};
    tide_node *ivar = variable_from(g, "ivar", gu_const(g, "i0", th_i32(1, TH_DIMS(3), iz)), true);
    tide_node *ione = gu_const(g, "ione", th_i32(0, NULL, iz));
    tide_node *ig = gu_const(g, "ig", th_i32(1, TH_DIMS(3), iz));
    nodes = tide_graph_num_nodes(g);
    b = tide_node_builder_new(g, "ApplyGradientDescent", NULL);
    tide_node_builder_add_inputs_flat(b, (tide_output[]){{ivar, 0}, {ione, 0}, {ig, 0}}, 3);
    finish_expect_fail(b, TIDE_INVALID_ARGUMENT, "int32");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), nodes);
    tide_graph_free(g);

    /* Eager calls cannot reach a variable. */
    double one = 1;
    tide_tensor *ins[3] = {th_f64(1, TH_DIMS(1), &one), th_f64(0, NULL, &one), th_f64(1, TH_DIMS(1), &one)};
    tide_tensor *out[1] = {NULL};
    int nout = 0;
    tide_error *err = tide_error_new();
    CU_ASSERT_NOT_EQUAL(tide_engine_run_op(th_engine(), "ApplyGradientDescent", ins, 3, NULL, out, 1, &nout, err),
                        TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "Variable"));
    for (int i = 0; i < 3; i++)
        tide_tensor_release(ins[i]);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- initializers */

typedef struct stats {
    double min, max, mean, stddev;
} stats;

static stats stats_of(const tide_tensor *t)
{
    int64_t n = tide_tensor_num_elements(t);
    stats s = {INFINITY, -INFINITY, 0, 0};
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = tide_tensor_get_f64(t, i);
        s.min = fmin(s.min, v);
        s.max = fmax(s.max, v);
        sum += v;
    }
    s.mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = tide_tensor_get_f64(t, i) - s.mean;
        sum2 += d * d;
    }
    s.stddev = sqrt(sum2 / (double)n);
    return s;
}

/* Builds init (shape given as dims) in g and returns its value, run in a fresh session. */
static tide_tensor *initial(tide_graph *g, const tide_initializer *init, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_error *err = tide_error_new();
    tide_shape shape = tide_shape_make(rank, dims);
    tide_output o = tide_initializer_build(g, init, dt, &shape, err);
    if (!o.node)
        fprintf(stderr, "tide_initializer_build: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(o.node);
    tide_shape inferred = tide_node_output_shape(o.node, o.index);
    CU_ASSERT_TRUE(tide_shape_equal(&inferred, &shape));
    CU_ASSERT_EQUAL(tide_node_output_dtype(o.node, o.index), dt);
    tide_error_free(err);
    tide_session *s = new_session(g);
    tide_tensor *t = fetch(s, o.node);
    tide_session_free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    TH_ASSERT_SHAPE(t, rank, dims);
    return t;
}

static tide_tensor *initial_of_kind(tide_init_kind kind, tide_dtype dt, int rank, const int64_t *dims, int64_t seed)
{
    tide_graph *g = tide_graph_new();
    tide_initializer init;
    tide_initializer_init(&init, kind);
    init.seed = seed;
    tide_tensor *t = initial(g, &init, dt, rank, dims);
    tide_graph_free(g);
    return t;
}

static void test_initializer_defaults(void)
{
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_TRUNCATED_NORMAL);
    CU_ASSERT_EQUAL(init.kind, TIDE_INIT_TRUNCATED_NORMAL);
    CU_ASSERT_DOUBLE_EQUAL(init.lo, -0.05, 0);
    CU_ASSERT_DOUBLE_EQUAL(init.hi, 0.05, 0);
    CU_ASSERT_DOUBLE_EQUAL(init.mean, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(init.stddev, 0.05, 0);
    CU_ASSERT_DOUBLE_EQUAL(init.value, 0, 0);
    CU_ASSERT_EQUAL(init.seed, 0);
}

static void check_all_equal(const tide_tensor *t, double v)
{
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++)
        if (tide_tensor_get_f64(t, i) != v) {
            fprintf(stderr, "element %lld is %g, expected %g\n", (long long)i, tide_tensor_get_f64(t, i), v);
            CU_FAIL("constant initializer value");
            return;
        }
}

static void test_constant_initializers(void)
{
    tide_tensor *t = initial_of_kind(TIDE_INIT_ZEROS, TIDE_FLOAT32, 3, TH_DIMS(2, 3, 4), 0);
    check_all_equal(t, 0);
    tide_tensor_release(t);
    t = initial_of_kind(TIDE_INIT_ONES, TIDE_FLOAT64, 0, NULL, 0);
    CU_ASSERT_EQUAL(tide_tensor_dtype(t), TIDE_FLOAT64);
    check_all_equal(t, 1);
    tide_tensor_release(t);
    t = initial_of_kind(TIDE_INIT_ONES, TIDE_FLOAT16, 1, TH_DIMS(5), 0);
    check_all_equal(t, 1);
    tide_tensor_release(t);
    tide_graph *g = tide_graph_new();
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_CONSTANT);
    init.value = -7;
    t = initial(g, &init, TIDE_INT32, 2, TH_DIMS(2, 3));
    CU_ASSERT_EQUAL(tide_tensor_dtype(t), TIDE_INT32);
    check_all_equal(t, -7);
    tide_tensor_release(t);
    init.value = 0.25;
    t = initial(g, &init, TIDE_FLOAT32, 2, TH_DIMS(0, 3));
    CU_ASSERT_EQUAL(tide_tensor_num_elements(t), 0);
    tide_tensor_release(t);
    tide_graph_free(g);
}

/* Statistics of 100k samples: the mean within 5 standard errors, the stddev within 2%. */
static void check_moments(const stats *s, double mean, double stddev, int64_t n)
{
    double se = stddev / sqrt((double)n);
    if (fabs(s->mean - mean) > 5 * se + 1e-12 || fabs(s->stddev - stddev) > 0.02 * stddev) {
        fprintf(stderr, "mean %g stddev %g, expected %g and %g\n", s->mean, s->stddev, mean, stddev);
        CU_FAIL("moments out of bounds");
    }
}

static void test_random_initializers_statistics(void)
{
    const int64_t n = 100000;
    tide_graph *g = tide_graph_new();
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_UNIFORM);
    init.lo = -0.5;
    init.hi = 1.5;
    tide_tensor *t = initial(g, &init, TIDE_FLOAT32, 2, TH_DIMS(250, 400));
    stats s = stats_of(t);
    CU_ASSERT_TRUE(s.min >= -0.5 && s.max < 1.5);
    CU_ASSERT_TRUE(s.min < -0.49 && s.max > 1.49);
    check_moments(&s, 0.5, 2 / sqrt(12.0), n);
    tide_tensor_release(t);

    tide_initializer_init(&init, TIDE_INIT_NORMAL);
    init.mean = 2;
    init.stddev = 3;
    t = initial(g, &init, TIDE_FLOAT64, 1, TH_DIMS(n));
    s = stats_of(t);
    check_moments(&s, 2, 3, n);
    CU_ASSERT_TRUE(s.min < 2 - 3 * 3 && s.max > 2 + 3 * 3); /* tails beyond 3 sigma exist in 100k */
    tide_tensor_release(t);

    tide_initializer_init(&init, TIDE_INIT_TRUNCATED_NORMAL);
    init.mean = 1;
    init.stddev = 0.5;
    t = initial(g, &init, TIDE_FLOAT32, 1, TH_DIMS(n));
    s = stats_of(t);
    CU_ASSERT_TRUE(s.min >= 1 - 2 * 0.5 - 1e-6 && s.max <= 1 + 2 * 0.5 + 1e-6);
    check_moments(&s, 1, 0.5 * 0.87962566103423978, n);
    tide_tensor_release(t);

    tide_initializer_init(&init, TIDE_INIT_TRUNCATED_NORMAL); /* TensorFlow's defaults */
    t = initial(g, &init, TIDE_FLOAT32, 1, TH_DIMS(n));
    s = stats_of(t);
    CU_ASSERT_TRUE(s.min >= -0.1 - 1e-6 && s.max <= 0.1 + 1e-6);
    check_moments(&s, 0, 0.05 * 0.87962566103423978, n);
    tide_tensor_release(t);
    tide_graph_free(g);
}

/* Glorot uniform: every |x| below sqrt(6 / (fan_in + fan_out)), close to it at the extremes, and the
 * stddev of a uniform on [-limit, limit]. */
static void check_glorot_uniform(int rank, const int64_t *dims, double fan_in, double fan_out)
{
    double limit = sqrt(6 / (fan_in + fan_out));
    tide_tensor *t = initial_of_kind(TIDE_INIT_GLOROT_UNIFORM, TIDE_FLOAT32, rank, dims, 3);
    stats s = stats_of(t);
    int64_t n = tide_tensor_num_elements(t);
    CU_ASSERT_TRUE(s.min >= -limit * (1 + 1e-6) && s.max <= limit * (1 + 1e-6));
    if (n >= 1000) {
        CU_ASSERT_TRUE(s.min < -0.95 * limit && s.max > 0.95 * limit);
        double se = limit / sqrt(3.0 * (double)n);
        CU_ASSERT_TRUE(fabs(s.mean) < 5 * se);
        CU_ASSERT_TRUE(fabs(s.stddev - limit / sqrt(3.0)) < 0.03 * limit / sqrt(3.0));
    }
    tide_tensor_release(t);
}

static void test_glorot_initializers(void)
{
    check_glorot_uniform(2, TH_DIMS(300, 200), 300, 200);
    check_glorot_uniform(4, TH_DIMS(3, 3, 16, 32), 3 * 3 * 16, 3 * 3 * 32);
    check_glorot_uniform(3, TH_DIMS(5, 40, 60), 5 * 40, 5 * 60);
    check_glorot_uniform(1, TH_DIMS(20000), 20000, 20000);
    check_glorot_uniform(0, NULL, 1, 1);

    /* Glorot normal: a truncated normal whose stddev comes out as sqrt(2 / (fan_in + fan_out)). */
    tide_tensor *t = initial_of_kind(TIDE_INIT_GLOROT_NORMAL, TIDE_FLOAT32, 2, TH_DIMS(400, 250), 5);
    stats s = stats_of(t);
    double stddev = sqrt(2.0 / 650), bound = 2 * stddev / 0.87962566103423978;
    CU_ASSERT_TRUE(s.min >= -bound * (1 + 1e-6) && s.max <= bound * (1 + 1e-6));
    check_moments(&s, 0, stddev, 100000);
    tide_tensor_release(t);
}

static void test_initializer_seeds(void)
{
    /* The same op seed (and graph seed) gives the same values in another graph; another seed does not. */
    tide_tensor *a = initial_of_kind(TIDE_INIT_GLOROT_UNIFORM, TIDE_FLOAT32, 2, TH_DIMS(30, 20), 11);
    tide_tensor *b = initial_of_kind(TIDE_INIT_GLOROT_UNIFORM, TIDE_FLOAT32, 2, TH_DIMS(30, 20), 11);
    tide_tensor *c = initial_of_kind(TIDE_INIT_GLOROT_UNIFORM, TIDE_FLOAT32, 2, TH_DIMS(30, 20), 12);
    CU_ASSERT_TRUE(tide_tensor_equal(a, b, false));
    CU_ASSERT_FALSE(tide_tensor_equal(a, c, false));
    tide_tensor_release(a);
    tide_tensor_release(b);
    tide_tensor_release(c);
    tide_tensor *graphs[2];
    for (int k = 0; k < 2; k++) {
        tide_graph *g = tide_graph_new();
        tide_graph_set_seed(g, 1234);
        tide_initializer init;
        tide_initializer_init(&init, TIDE_INIT_NORMAL);
        graphs[k] = initial(g, &init, TIDE_FLOAT64, 1, TH_DIMS(50));
        tide_graph_free(g);
    }
    CU_ASSERT_TRUE(tide_tensor_equal(graphs[0], graphs[1], false));
    tide_tensor_release(graphs[0]);
    tide_tensor_release(graphs[1]);
}

static void expect_initializer_fails(const tide_initializer *init, tide_dtype dt, const tide_shape *shape,
                                     const char *needle)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_output o = tide_initializer_build(g, init, dt, shape, err);
    CU_ASSERT_PTR_NULL(o.node);
    expect_error(err, TIDE_INVALID_ARGUMENT, needle);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 0);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_initializer_errors(void)
{
    tide_initializer init;
    tide_shape partial = tide_shape_make(2, TH_DIMS(-1, 3)), ok = tide_shape_vector(3);
    tide_initializer_init(&init, TIDE_INIT_ZEROS);
    expect_initializer_fails(&init, TIDE_FLOAT32, &partial, "shape [?, 3] is not fully defined");
    tide_initializer_init(&init, TIDE_INIT_GLOROT_UNIFORM);
    expect_initializer_fails(&init, TIDE_INT32, &ok, "random values need a float dtype");
    tide_initializer_init(&init, TIDE_INIT_NORMAL);
    init.stddev = -1;
    expect_initializer_fails(&init, TIDE_FLOAT32, &ok, "stddev >= 0");
    tide_initializer_init(&init, TIDE_INIT_UNIFORM);
    init.lo = 1;
    init.hi = 0;
    expect_initializer_fails(&init, TIDE_FLOAT32, &ok, "lo <= hi");
    tide_initializer_init(&init, TIDE_INIT_UNIFORM);
    init.kind = (tide_init_kind)42;
    expect_initializer_fails(&init, TIDE_FLOAT32, &ok, "unknown initializer kind 42");
}

/* ---------------------------------------------------------------- variables */

static void test_variable_new(void)
{
    reset_variables();
    tide_graph *g = tide_graph_new();
    double v[6] = {1, 2, 3, 4, 5, 6};
    tide_graph_push_scope(g, "layer1");
    tide_node *value = const_of(g, "w_value", TIDE_FLOAT64, 2, TH_DIMS(2, 3), v);
    tide_node *w = variable_from(g, "w", value, true);
    tide_node *frozen = variable_from(g, "frozen", value, false);
    tide_node *unnamed = variable_from(g, NULL, value, true);
    tide_graph_pop_scope(g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(w), "layer1/w");
    CU_ASSERT_STRING_EQUAL(tide_node_op(w), "Variable");
    CU_ASSERT_EQUAL(tide_node_output_dtype(w, 0), TIDE_FLOAT64);
    tide_shape s = tide_node_output_shape(w, 0), want = tide_shape_matrix(2, 3);
    CU_ASSERT_TRUE(tide_shape_equal(&s, &want));
    bool flag = false;
    CU_ASSERT_TRUE(tide_attrs_get_bool(tide_node_attrs(w), "_trainable", &flag) && flag);
    CU_ASSERT_TRUE(tide_attrs_get_bool(tide_node_attrs(frozen), "_trainable", &flag) && !flag);
    tide_node *init = tide_graph_node(g, "layer1/w/init");
    CU_ASSERT_PTR_NOT_NULL_FATAL(init);
    CU_ASSERT_STRING_EQUAL(tide_node_op(init), "Assign");
    CU_ASSERT_PTR_EQUAL(tide_node_input(init, 0).node, w);
    CU_ASSERT_PTR_EQUAL(tide_node_input(init, 1).node, value);
    CU_ASSERT_TRUE(tide_attrs_get_bool(tide_node_attrs(init), "_initializer", &flag) && flag);
    CU_ASSERT_STRING_EQUAL(tide_node_name(unnamed), "layer1/variable");
    CU_ASSERT_PTR_NOT_NULL(tide_graph_node(g, "layer1/variable/init"));
    /* The annotations survive the text format. */
    char *text = tide_graph_to_text(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "_initializer=true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "_trainable=false"));
    tide_graph *copy = tide_graph_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(copy, text, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_graph_variables(copy, false, NULL, 0), 3);
    CU_ASSERT_EQUAL(tide_graph_variables(copy, true, NULL, 0), 2);
    free(text);
    tide_graph_free(copy);
    tide_graph_free(g);
}

static void expect_variable_fails(tide_graph *g, const char *name, tide_output value, tide_status code,
                                  const char *needle)
{
    int nodes = tide_graph_num_nodes(g);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_variable_new(g, name, value, true, err));
    expect_error(err, code, needle);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), nodes);
    tide_error_free(err);
}

static void test_variable_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *partial = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, 3));
    expect_variable_fails(g, "v", (tide_output){partial, 0}, TIDE_INVALID_ARGUMENT,
                          "variable 'v': the initial value 'x:0' has shape [?, 3], which is not fully defined");
    tide_node *unknown = gu_placeholder(g, "u", TIDE_FLOAT32, -1, NULL);
    expect_variable_fails(g, "v", (tide_output){unknown, 0}, TIDE_INVALID_ARGUMENT, "not fully defined");
    expect_variable_fails(g, "v", (tide_output){NULL, 0}, TIDE_INVALID_ARGUMENT, "the initial value is NULL");
    tide_node *zero = scalar_of(g, "zero", TIDE_FLOAT32, 0);
    expect_variable_fails(g, "v", (tide_output){zero, 1}, TIDE_INVALID_ARGUMENT, "does not have");
    expect_variable_fails(g, "zero", (tide_output){zero, 0}, TIDE_ALREADY_EXISTS, "'zero' is already used");
    /* The initializer's name is taken: the Variable built first is removed again. */
    scalar_of(g, "taken/init", TIDE_FLOAT32, 0);
    expect_variable_fails(g, "taken", (tide_output){zero, 0}, TIDE_ALREADY_EXISTS, "taken/init");
    CU_ASSERT_PTR_NULL(tide_graph_node(g, "taken"));
    CU_ASSERT_PTR_NULL(tide_variable_new(NULL, "v", (tide_output){zero, 0}, true, NULL));
    tide_graph_free(g);
}

static void test_graph_variables_and_init(void)
{
    reset_variables();
    tide_graph *g = tide_graph_new();
    double a[2] = {1.5, -2}, b[3] = {7, 8, 9};
    tide_node *va = variable_from(g, "a", const_of(g, "a0", TIDE_FLOAT32, 1, TH_DIMS(2), a), true);
    tide_node *vb = variable_from(g, "b", const_of(g, "b0", TIDE_FLOAT64, 1, TH_DIMS(3), b), false);
    tide_node *raw = gu_variable(g, "raw", TIDE_FLOAT32, 0, NULL, NULL);
    tide_node *vc = variable_from(g, "c", const_of(g, "c0", TIDE_INT32, 0, NULL, a), true);
    tide_node *all[8], *trainable[8], *one[1];
    CU_ASSERT_EQUAL(tide_graph_variables(g, false, all, 8), 4);
    CU_ASSERT_PTR_EQUAL(all[0], va);
    CU_ASSERT_PTR_EQUAL(all[1], vb);
    CU_ASSERT_PTR_EQUAL(all[2], raw);
    CU_ASSERT_PTR_EQUAL(all[3], vc);
    CU_ASSERT_EQUAL(tide_graph_variables(g, true, trainable, 8), 2);
    CU_ASSERT_PTR_EQUAL(trainable[0], va);
    CU_ASSERT_PTR_EQUAL(trainable[1], vc);
    CU_ASSERT_EQUAL(tide_graph_variables(g, true, one, 1), 2);
    CU_ASSERT_PTR_EQUAL(one[0], va);
    CU_ASSERT_EQUAL(tide_graph_variables(NULL, false, NULL, 0), 0);

    tide_node *init = init_op(g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(init), "init");
    CU_ASSERT_STRING_EQUAL(tide_node_op(init), "NoOp");
    CU_ASSERT_EQUAL(tide_node_num_control_inputs(init), 3);
    tide_graph_push_scope(g, "s");
    tide_node *again = init_op(g);
    tide_graph_pop_scope(g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(again), "s/init");
    CU_ASSERT_STRING_EQUAL(tide_node_name(init_op(g)), "init_1");

    tide_session *s = new_session(g);
    expect_run_fails(s, NULL, 0, va, TIDE_FAILED_PRECONDITION, "uninitialized");
    run_target(s, init);
    tide_tensor *got = fetch(s, va), *want = th_from_doubles(TIDE_FLOAT32, 1, TH_DIMS(2), a, 0);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    got = fetch(s, vb);
    want = th_from_doubles(TIDE_FLOAT64, 1, TH_DIMS(3), b, 0);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(s, vc), 1, 0);
    tide_session_free(s);
    tide_graph_free(g);
}

static void test_global_step(void)
{
    reset_variables();
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_graph_push_scope(g, "deep");
    tide_graph_push_scope(g, "er");
    tide_node *step = tide_global_step(g, err);
    tide_graph_pop_scope(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(step);
    CU_ASSERT_STRING_EQUAL(tide_node_name(step), "global_step");
    CU_ASSERT_EQUAL(tide_node_output_dtype(step, 0), TIDE_INT64);
    CU_ASSERT_EQUAL(tide_node_output_shape(step, 0).rank, 0);
    CU_ASSERT_PTR_EQUAL(tide_global_step(g, err), step);
    tide_graph_pop_scope(g);
    CU_ASSERT_PTR_EQUAL(tide_global_step(g, err), step);
    /* The scopes pushed before are intact. */
    tide_graph_push_scope(g, "after");
    tide_node *x = scalar_of(g, "x", TIDE_FLOAT32, 1);
    tide_graph_pop_scope(g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(x), "after/x");
    CU_ASSERT_EQUAL(tide_graph_variables(g, true, NULL, 0), 0);
    CU_ASSERT_EQUAL(tide_graph_variables(g, false, NULL, 0), 1);
    tide_session *s = new_session(g);
    run_target(s, init_op(g));
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(s, step), 0, 0);
    tide_session_free(s);
    tide_graph_free(g);

    /* A node already called global_step that is not an integer scalar Variable. */
    g = tide_graph_new();
    scalar_of(g, "global_step", TIDE_FLOAT32, 0);
    CU_ASSERT_PTR_NULL(tide_global_step(g, err));
    expect_error(err, TIDE_ALREADY_EXISTS, "'global_step' exists but is not an integer scalar Variable");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1);
    tide_graph_free(g);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- minimize: a linear regression */

#define ROWS 32
#define FEATURES 3

/* y = X w + b with X uniform in [-1, 1] and known w, b; the model starts at zero. */
typedef struct regression {
    tide_graph *g;
    tide_session *s;
    tide_node *w, *b, *loss, *step;
    double x[ROWS * FEATURES], y[ROWS];
} regression;

static tide_node *op2(tide_graph *g, const char *op, tide_node *a, tide_node *b)
{
    return gu_op(g, op, NULL, 2, (tide_node *[]){a, b});
}

static void regression_build(regression *r, tide_dtype dt, bool with_step)
{
    static const double true_w[FEATURES] = {1.5, -2, 0.5}, true_b = 0.3;
    reset_variables();
    memset(r, 0, sizeof *r);
    r->g = tide_graph_new();
    for (int i = 0; i < ROWS; i++) {
        r->y[i] = true_b;
        for (int j = 0; j < FEATURES; j++) {
            r->x[i * FEATURES + j] = round_to(dt, th_rand(-1, 1));
            r->y[i] += r->x[i * FEATURES + j] * true_w[j];
        }
        r->y[i] = round_to(dt, r->y[i]);
    }
    tide_node *x = const_of(r->g, "x", dt, 2, TH_DIMS(ROWS, FEATURES), r->x);
    tide_node *y = const_of(r->g, "y", dt, 2, TH_DIMS(ROWS, 1), r->y);
    tide_initializer zeros;
    tide_initializer_init(&zeros, TIDE_INIT_ZEROS);
    tide_shape ws = tide_shape_matrix(FEATURES, 1), bs = tide_shape_vector(1);
    tide_output w0 = tide_initializer_build(r->g, &zeros, dt, &ws, NULL);
    tide_output b0 = tide_initializer_build(r->g, &zeros, dt, &bs, NULL);
    r->w = variable_from(r->g, "w", w0.node, true);
    r->b = variable_from(r->g, "b", b0.node, true);
    tide_node *pred = op2(r->g, "Add", op2(r->g, "MatMul", x, r->w), r->b);
    tide_node *sq = gu_op(r->g, "Square", NULL, 1, (tide_node *[]){op2(r->g, "Sub", pred, y)});
    tide_node *axes = gu_const(r->g, "axes", th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}));
    r->loss = gu_op(r->g, "Mean", "loss", 2, (tide_node *[]){sq, axes});
    if (with_step) {
        r->step = tide_global_step(r->g, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r->step);
    }
}

static tide_node *minimize(regression *r, const tide_optimizer *opt)
{
    tide_error *err = tide_error_new();
    tide_node *train = tide_optimizer_minimize(r->g, opt, (tide_output){r->loss, 0}, NULL, 0, r->step, err);
    if (!train)
        fprintf(stderr, "minimize: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(train);
    tide_error_free(err);
    return train;
}

/* Trains for `steps` and returns the final loss (initialising first). */
static double train(regression *r, tide_node *train_op, int steps)
{
    r->s = new_session(r->g);
    run_target(r->s, init_op(r->g));
    for (int i = 0; i < steps; i++)
        run_target(r->s, train_op);
    return fetch_scalar(r->s, r->loss);
}

static void regression_free(regression *r)
{
    tide_session_free(r->s);
    tide_graph_free(r->g);
}

static double initial_loss(const regression *r)
{
    double sum = 0;
    for (int i = 0; i < ROWS; i++)
        sum += r->y[i] * r->y[i];
    return sum / ROWS;
}

static void check_training(tide_optimizer_kind kind, double lr, bool nesterov, int steps, double bound)
{
    static const char *const names[] = {"SGD", "Momentum", "Adagrad", "RMSProp", "Adam"};
    regression r;
    regression_build(&r, TIDE_FLOAT32, true);
    tide_optimizer opt;
    tide_optimizer_init(&opt, kind, lr);
    opt.nesterov = nesterov;
    tide_node *op = minimize(&r, &opt);
    double start = initial_loss(&r), loss = train(&r, op, steps);
    if (getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "%s%s: loss %g -> %g after %d steps\n", names[kind], nesterov ? " (Nesterov)" : "", start,
                loss, steps);
    if (!(loss < bound)) {
        fprintf(stderr, "%s%s: loss %g after %d steps, bound %g\n", names[kind], nesterov ? " (Nesterov)" : "",
                loss, steps, bound);
        CU_FAIL("training did not reach the loss bound");
    }
    CU_ASSERT_TRUE(start > 1);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, r.step), steps, 0);
    regression_free(&r);
}

static void test_minimize_drives_regression(void)
{
    /* Measured: 2e-13, 8e-10, 1e-12, 1e-13, 6e-6 (RMSProp's steps stay about lr long, so its loss
     * levels off near lr^2), 3e-9. The bounds leave room for other rounding. */
    check_training(TIDE_OPT_SGD, 0.2, false, 200, 1e-10);
    check_training(TIDE_OPT_MOMENTUM, 0.05, false, 200, 1e-7);
    check_training(TIDE_OPT_MOMENTUM, 0.05, true, 200, 1e-9);
    check_training(TIDE_OPT_ADAGRAD, 0.5, false, 200, 1e-10);
    check_training(TIDE_OPT_RMSPROP, 0.003, false, 1000, 1e-4);
    check_training(TIDE_OPT_ADAM, 0.05, false, 200, 1e-6);
}

/* One gradient-descent step from zero: w = lr * 2/N X^T y, b = lr * 2/N sum(y) (float64). */
static void test_minimize_first_sgd_step(void)
{
    regression r;
    regression_build(&r, TIDE_FLOAT64, false);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_SGD, 0.1);
    tide_node *op = minimize(&r, &opt);
    train(&r, op, 1);
    double want_w[FEATURES] = {0}, want_b = 0;
    for (int i = 0; i < ROWS; i++) {
        for (int j = 0; j < FEATURES; j++)
            want_w[j] += 0.1 * 2.0 / ROWS * r.x[i * FEATURES + j] * r.y[i];
        want_b += 0.1 * 2.0 / ROWS * r.y[i];
    }
    tide_tensor *w = fetch(r.s, r.w), *want = th_f64(2, TH_DIMS(FEATURES, 1), want_w);
    TH_ASSERT_CLOSE(w, want, 1e-12, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, r.b), want_b, 1e-12);
    tide_tensor_release(w);
    tide_tensor_release(want);
    regression_free(&r);
}

static void expect_node(tide_graph *g, const char *name, const char *op)
{
    tide_node *n = tide_graph_node(g, name);
    if (!n || strcmp(tide_node_op(n), op) != 0) {
        fprintf(stderr, "expected node '%s' (%s), found %s\n", name, op, n ? tide_node_op(n) : "none");
        CU_FAIL("missing node");
    }
}

static void test_minimize_builds_slots_and_names(void)
{
    regression r;
    regression_build(&r, TIDE_FLOAT32, true);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_MOMENTUM, 0.01);
    tide_graph_push_scope(r.g, "outer");
    tide_node *first = minimize(&r, &opt);
    tide_node *second = minimize(&r, &opt);
    tide_graph_pop_scope(r.g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(first), "outer/Momentum/train");
    CU_ASSERT_STRING_EQUAL(tide_node_name(second), "outer/Momentum_1/train");
    CU_ASSERT_STRING_EQUAL(tide_node_op(first), "NoOp");
    expect_node(r.g, "w/Momentum", "Variable");
    expect_node(r.g, "b/Momentum", "Variable");
    expect_node(r.g, "w/Momentum_1", "Variable");
    expect_node(r.g, "w/Momentum/init", "Assign");
    expect_node(r.g, "outer/Momentum/update_w/ApplyMomentum", "ApplyMomentum");
    expect_node(r.g, "outer/Momentum/update_b/ApplyMomentum", "ApplyMomentum");
    expect_node(r.g, "outer/Momentum/learning_rate", "Const");
    expect_node(r.g, "outer/Momentum/increment_global_step", "AssignAdd");
    CU_ASSERT_EQUAL(tide_graph_variables(r.g, true, NULL, 0), 2); /* slots are not trainable */
    /* train waits for both updates and the step increment, which waits for both updates. */
    CU_ASSERT_EQUAL(tide_node_num_control_inputs(first), 3);
    CU_ASSERT_EQUAL(tide_node_num_control_inputs(tide_graph_node(r.g, "outer/Momentum/increment_global_step")), 2);
    regression_free(&r);

    const struct {
        tide_optimizer_kind kind;
        const char *nodes[6][2]; /* name, op */
    } kinds[] = {
        {TIDE_OPT_SGD, {{"GradientDescent/update_w/ApplyGradientDescent", "ApplyGradientDescent"},
                        {"GradientDescent/train", "NoOp"}}},
        {TIDE_OPT_ADAGRAD, {{"w/Adagrad", "Variable"}, {"b/Adagrad", "Variable"},
                            {"Adagrad/update_w/ApplyAdagrad", "ApplyAdagrad"}}},
        {TIDE_OPT_RMSPROP, {{"w/RMSProp_ms", "Variable"}, {"w/RMSProp_mom", "Variable"}, {"b/RMSProp_mom", "Variable"},
                            {"RMSProp/update_b/ApplyRMSProp", "ApplyRMSProp"}, {"RMSProp/decay", "Const"}}},
        {TIDE_OPT_ADAM, {{"w/Adam_m", "Variable"}, {"w/Adam_v", "Variable"}, {"Adam/beta1_power", "Variable"},
                         {"Adam/beta2_power", "Variable"}, {"Adam/update_w/ApplyAdam", "ApplyAdam"},
                         {"Adam/update_beta1_power", "Assign"}}},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        regression_build(&r, TIDE_FLOAT32, false);
        tide_optimizer_init(&opt, kinds[k].kind, 0.01);
        minimize(&r, &opt);
        for (int i = 0; i < 6 && kinds[k].nodes[i][0]; i++)
            expect_node(r.g, kinds[k].nodes[i][0], kinds[k].nodes[i][1]);
        regression_free(&r);
    }
}

/* Adagrad's accumulators start at initial_accumulator; Adam's beta powers are beta^(t+1) after t steps. */
static void test_minimize_slot_values(void)
{
    regression r;
    regression_build(&r, TIDE_FLOAT32, false);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAGRAD, 0.1);
    opt.initial_accumulator = 0.25;
    minimize(&r, &opt);
    r.s = new_session(r.g);
    run_target(r.s, init_op(r.g));
    tide_tensor *acc = fetch(r.s, tide_graph_node(r.g, "w/Adagrad"));
    check_all_equal(acc, 0.25);
    tide_tensor_release(acc);
    regression_free(&r);

    regression_build(&r, TIDE_FLOAT32, false);
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    opt.beta1 = 0.8;
    opt.beta2 = 0.95;
    tide_node *op = minimize(&r, &opt);
    train(&r, op, 3);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, tide_graph_node(r.g, "Adam/beta1_power")), pow(0.8, 4), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, tide_graph_node(r.g, "Adam/beta2_power")), pow(0.95, 4), 1e-6);
    regression_free(&r);
}

static void test_minimize_float64_and_explicit_vars(void)
{
    regression r;
    regression_build(&r, TIDE_FLOAT64, true);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.05);
    /* Only w is trained: b stays 0. */
    tide_node *train_op = tide_optimizer_minimize(r.g, &opt, (tide_output){r.loss, 0}, &r.w, 1, r.step, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(train_op);
    CU_ASSERT_PTR_NULL(tide_graph_node(r.g, "b/Adam_m"));
    double loss = train(&r, train_op, 300);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, r.b), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(fetch_scalar(r.s, r.step), 300, 0);
    /* The best loss without a bias is the variance left by b = 0.3 (about 0.09); it must get near. */
    CU_ASSERT_TRUE(loss < 0.12);
    regression_free(&r);
}

static void expect_minimize_fails(regression *r, const tide_optimizer *opt, tide_node *const *vars, int n,
                                  tide_node *step, const char *needle)
{
    int nodes = tide_graph_num_nodes(r->g);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_optimizer_minimize(r->g, opt, (tide_output){r->loss, 0}, vars, n, step, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, needle);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(r->g), nodes);
    tide_error_free(err);
}

static void test_minimize_errors(void)
{
    regression r;
    regression_build(&r, TIDE_FLOAT32, true);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    double zero = 0;
    tide_node *unused = variable_from(r.g, "unused", const_of(r.g, "u0", TIDE_FLOAT32, 0, NULL, &zero), true);
    /* From the implicit list (every trainable variable) an unreachable one is skipped, as in TensorFlow;
     * listed explicitly it is an error. */
    int before = tide_graph_num_nodes(r.g);
    tide_node *skipping = tide_optimizer_minimize(r.g, &opt, (tide_output){r.loss, 0}, NULL, 0, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL(skipping);
    int touching_unused = 0;
    for (int i = before; i < tide_graph_num_nodes(r.g); i++)
        for (int k = 0; k < tide_node_num_inputs(tide_graph_node_at(r.g, i)); k++)
            touching_unused += tide_node_input(tide_graph_node_at(r.g, i), k).node == unused;
    CU_ASSERT_EQUAL(touching_unused, 0);
    CU_ASSERT(tide_graph_rollback(r.g, before, NULL) == TIDE_OK);
    expect_minimize_fails(&r, &opt, &unused, 1, NULL, "variable 'unused' gets no gradient");
    tide_node *twice[2] = {r.w, r.w};
    expect_minimize_fails(&r, &opt, twice, 2, NULL, "variable 'w' is listed twice");
    int32_t iz = 0;
    tide_node *ivar = variable_from(r.g, "ivar", gu_const(r.g, "i0", th_i32(0, NULL, &iz)), false);
    expect_minimize_fails(&r, &opt, &ivar, 1, NULL, "variable 'ivar' is int32");
    tide_node *x = tide_graph_node(r.g, "x");
    expect_minimize_fails(&r, &opt, &x, 1, NULL, "vars[0] (x) is not a Variable");
    expect_minimize_fails(&r, &opt, &r.w, 1, x, "the global step 'x' must be an int64 or int32 scalar Variable");
    expect_minimize_fails(&r, &opt, &r.w, 0, NULL, "no trainable variables");
    tide_optimizer bad = opt;
    bad.learning_rate = NAN;
    expect_minimize_fails(&r, &bad, &r.w, 1, NULL, "learning_rate is nan");
    bad = opt;
    bad.beta1 = 1;
    expect_minimize_fails(&r, &bad, &r.w, 1, NULL, "beta1 and beta2 must be in [0, 1)");
    bad = opt;
    bad.kind = (tide_optimizer_kind)9;
    expect_minimize_fails(&r, &bad, &r.w, 1, NULL, "unknown optimizer kind 9");
    tide_optimizer_init(&bad, TIDE_OPT_ADAGRAD, 0.1);
    bad.initial_accumulator = 0;
    expect_minimize_fails(&r, &bad, &r.w, 1, NULL, "initial_accumulator must be > 0");
    regression_free(&r);

    /* A graph without trainable variables. */
    regression_build(&r, TIDE_FLOAT32, false);
    tide_graph *g = tide_graph_new();
    tide_node *c = scalar_of(g, "c", TIDE_FLOAT32, 1);
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_optimizer_minimize(g, &opt, (tide_output){c, 0}, NULL, 0, NULL, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "no trainable variables");
    tide_error_free(err);
    tide_graph_free(g);
    regression_free(&r);
}

static void test_optimizer_defaults(void)
{
    tide_optimizer o;
    tide_optimizer_init(&o, TIDE_OPT_RMSPROP, 0.01);
    CU_ASSERT_EQUAL(o.kind, TIDE_OPT_RMSPROP);
    CU_ASSERT_DOUBLE_EQUAL(o.learning_rate, 0.01, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.momentum, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.epsilon, 1e-10, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.decay, 0.9, 0);
    tide_optimizer_init(&o, TIDE_OPT_ADAM, 0.001);
    CU_ASSERT_DOUBLE_EQUAL(o.beta1, 0.9, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.beta2, 0.999, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.epsilon, 1e-8, 0);
    tide_optimizer_init(&o, TIDE_OPT_MOMENTUM, 0.1);
    CU_ASSERT_DOUBLE_EQUAL(o.momentum, 0.9, 0);
    CU_ASSERT_FALSE(o.nesterov);
    tide_optimizer_init(&o, TIDE_OPT_ADAGRAD, 0.1);
    CU_ASSERT_DOUBLE_EQUAL(o.initial_accumulator, 0.1, 0);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_apply_ops_match_reference),
        TH_TEST(test_apply_ops_scalar_and_empty_variables),
        TH_TEST(test_apply_ops_large_variables),
        TH_TEST(test_apply_copy_on_write),
        TH_TEST(test_apply_errors_at_run_time),
        TH_TEST(test_apply_errors_at_graph_time),
        TH_TEST(test_initializer_defaults),
        TH_TEST(test_constant_initializers),
        TH_TEST(test_random_initializers_statistics),
        TH_TEST(test_glorot_initializers),
        TH_TEST(test_initializer_seeds),
        TH_TEST(test_initializer_errors),
        TH_TEST(test_variable_new),
        TH_TEST(test_variable_errors),
        TH_TEST(test_graph_variables_and_init),
        TH_TEST(test_global_step),
        TH_TEST(test_optimizer_defaults),
        TH_TEST(test_minimize_first_sgd_step),
        TH_TEST(test_minimize_drives_regression),
        TH_TEST(test_minimize_builds_slots_and_names),
        TH_TEST(test_minimize_slot_values),
        TH_TEST(test_minimize_float64_and_explicit_vars),
        TH_TEST(test_minimize_errors),
        TH_END,
    };
    return th_main("training", tests);
}
