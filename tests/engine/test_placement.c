/* test_placement.c — the placer and the cost model (engine/placement.h), called directly on graphs
 * built here: requests full and partial, scope defaults, hard errors, colocation through Ref inputs
 * and _colocate_with, conflicts, soft placement and its warning, the three strategies and their
 * simulated makespans, the cost model's FLOP and byte counts, measured times.
 *
 * Soft placement needs a device type without a kernel. Every registered op has CPU kernels only, so
 * the tests give an engine a pretend GPU: its device array (internal.h) grows by one device of type
 * "gpu" named /job:localhost/replica:0/task:0/device:gpu:0 (nothing runs on it: placement only reads
 * names, specs and types). Two test-only ops give that type kernels: PlacementTest has a CPU kernel
 * for float32 and int32 and a GPU kernel for float32 only; PlacementGpuOnly has only a GPU kernel. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph_util.h"
#include "placement.h"

#define CPU0 "/job:localhost/replica:0/task:0/device:cpu:0"
#define CPU1 "/job:localhost/replica:0/task:0/device:cpu:1"
#define GPU0 "/job:localhost/replica:0/task:0/device:gpu:0"

/* ---------------------------------------------------------------- test-only ops and kernels */

static tide_status copy_compute(tide_kernel_ctx *ctx)
{
    tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, 0));
    return TIDE_OK;
}

static void register_test_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "PlacementTest",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: {float32, int32}"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Test only: y = x, with a GPU kernel for float32 only.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "PlacementGpuOnly",
        .inputs = {"x: T"},
        .outputs = {"y: T"},
        .attrs = {"T: {float32}"},
        .shape_fn = tide_shape_fn_unchanged,
        .doc = "Test only: y = x, with a GPU kernel only.",
    });
    tide_kernel_register(&(tide_kernel_spec){.op = "PlacementTest", .device_type = "cpu", .compute = copy_compute});
    tide_kernel_register(&(tide_kernel_spec){
        .op = "PlacementTest", .device_type = "gpu", .constraints = {"T: {float32}"}, .compute = copy_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "PlacementGpuOnly", .device_type = "gpu", .compute = copy_compute});
}
TIDE_REGISTER(register_test_ops)

/* ---------------------------------------------------------------- helpers */

/* An engine with `cpus` CPU devices and, when gpu is set, a pretend GPU after them. */
static tide_engine *engine_with(int cpus, bool gpu)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 1;
    o.num_cpu_devices = cpus;
    tide_engine *e = th_engine_new(&o);
    if (gpu) {
        tide_device *devs = realloc(e->devices, sizeof *devs * (size_t)(e->num_devices + 1));
        if (!devs)
            abort();
        e->devices = devs;
        tide_device *d = &devs[e->num_devices];
        memset(d, 0, sizeof *d);
        snprintf(d->name, sizeof d->name, "%s", GPU0);
        tide_device_spec_parse(d->name, &d->spec, NULL);
        d->ops = &tide__cpu_device_ops;
        snprintf(d->type, sizeof d->type, "gpu");
        d->index = e->num_devices++;
    }
    return e;
}

/* Places nodes (in this order) with strategy; the default cost model when model is NULL. */
static tide_status place(tide_engine *e, tide_graph *g, tide_node *const *nodes, int n,
                         tide_placement_kind strategy, const tide_cost_model *model,
                         const tide_cost_table *table, tide_placement *out, tide_error *err)
{
    int order[64];
    CU_ASSERT_FATAL(n <= 64);
    for (int i = 0; i < n; i++)
        order[i] = tide_node_id(nodes[i]);
    return tide__place(e, g, order, n, NULL, NULL, NULL, strategy, model, table, out, err);
}

/* Places and expects success; prints the message otherwise. */
static bool place_ok(tide_engine *e, tide_graph *g, tide_node *const *nodes, int n,
                     tide_placement_kind strategy, tide_placement *out)
{
    tide_error *err = tide_error_new();
    tide_status st = place(e, g, nodes, n, strategy, NULL, NULL, out, err);
    if (st != TIDE_OK)
        fprintf(stderr, "placement failed: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_error_free(err);
    return st == TIDE_OK;
}

static bool contains(const char *haystack, const char *needle)
{
    bool ok = haystack && strstr(haystack, needle);
    if (!ok)
        fprintf(stderr, "\n'%s' not found in: %s\n", needle, haystack ? haystack : "(null)");
    return ok;
}

/* Places and expects failure with code and every needle (NULL-terminated) in the message. */
static void place_fails(tide_engine *e, tide_graph *g, tide_node *const *nodes, int n, tide_status code,
                        const char *const *needles)
{
    tide_error *err = tide_error_new();
    tide_placement out;
    tide_status st = place(e, g, nodes, n, TIDE_PLACEMENT_GREEDY, NULL, NULL, &out, err);
    CU_ASSERT_EQUAL(st, code);
    CU_ASSERT_PTR_NULL(out.device);
    CU_ASSERT_EQUAL(out.num_warnings, 0);
    for (int i = 0; needles[i]; i++)
        CU_ASSERT(contains(tide_error_message(err), needles[i]));
    tide_error_free(err);
}

static tide_node *on_device(tide_node_builder *b, const char *device)
{
    if (device)
        tide_node_builder_set_device(b, device);
    return gu_finish(b);
}

static tide_node *const_on(tide_graph *g, const char *name, const char *device)
{
    float v = 1;
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_tensor *t = th_f32(0, NULL, &v);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_tensor_release(t);
    return on_device(b, device);
}

static tide_node *matrix(tide_graph *g, const char *name, int64_t rows, int64_t cols)
{
    return gu_const(g, name, th_tensor(TIDE_FLOAT32, 2, TH_DIMS(rows, cols), NULL));
}

/* op(inputs...) named name on device (NULL: none). */
static tide_node *op_on(tide_graph *g, const char *op, const char *name, const char *device, int n,
                        tide_node *const *ins)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    return on_device(b, device);
}

static tide_node *colocated(tide_graph *g, const char *name, const char *device, const char *with)
{
    double v = 2; /* a string: the gpu type has a Const kernel for numbers, none for strings */
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_tensor *t = th_from_doubles(TIDE_STRING, 0, NULL, &v, 0);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_STRING);
    tide_attrs_set_string(tide_node_builder_attrs(b), "_colocate_with", with);
    tide_tensor_release(t);
    return on_device(b, device);
}

/* A float32 scalar Variable named name on device (NULL: none). */
static tide_node *scalar_variable(tide_graph *g, const char *name, const char *device)
{
    tide_node_builder *b = tide_node_builder_new(g, "Variable", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_shape scalar = tide_shape_scalar();
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &scalar);
    return on_device(b, device);
}

static int dev(const tide_placement *p, int k) { return p->device[k]->index; }

/* ---------------------------------------------------------------- requests */

static void test_requests_full_and_partial(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *nodes[] = {
        const_on(g, "short", "/cpu:1"),
        const_on(g, "any_cpu", "/device:cpu:*"),
        const_on(g, "task", "/job:localhost/task:0"),
        const_on(g, "full", CPU1),
        const_on(g, "upper", "/device:CPU:1"),
        const_on(g, "none", NULL),
    };
    tide_placement p;
    if (place_ok(e, g, nodes, 6, TIDE_PLACEMENT_NAIVE, &p)) {
        int want[] = {1, 0, 0, 1, 1, 0};
        for (int k = 0; k < 6; k++)
            CU_ASSERT_EQUAL(dev(&p, k), want[k]);
        CU_ASSERT_EQUAL(p.num_warnings, 0);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(nodes[0]), CPU1);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(nodes[5]), CPU0);
    }
    tide__placement_clear(&p);
    /* Round robin honours requests too: only unrequested groups alternate. */
    if (place_ok(e, g, nodes, 6, TIDE_PLACEMENT_ROUND_ROBIN, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 1);
        CU_ASSERT_EQUAL(dev(&p, 3), 1);
        CU_ASSERT_EQUAL(dev(&p, 4), 1);
        CU_ASSERT_EQUAL(dev(&p, 1), 1); /* group 1 of a two-device candidate set */
        CU_ASSERT_EQUAL(dev(&p, 2), 0);
    }
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

static void test_scope_default_device(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, "/cpu:1");
    tide_node *a = const_on(g, "a", NULL);
    tide_node *b = const_on(g, "b", "/cpu:0"); /* its own request wins over the scope's */
    tide_graph_pop_device(g);
    tide_node *c = const_on(g, "c", NULL);
    CU_ASSERT_STRING_EQUAL(tide_node_requested_device(a), "/cpu:1");
    tide_node *nodes[] = {a, b, c};
    tide_placement p;
    if (place_ok(e, g, nodes, 3, TIDE_PLACEMENT_GREEDY, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 1);
        CU_ASSERT_EQUAL(dev(&p, 1), 0);
        CU_ASSERT_PTR_EQUAL(p.device[0], &e->devices[1]);
    }
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

static void test_bad_requests(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *ok = const_on(g, "fine", NULL);
    tide_node *seven = const_on(g, "seven", "/cpu:7");
    tide_node *worker = const_on(g, "worker", "/job:worker/task:1");
    tide_node *gpu = const_on(g, "gpu", "/gpu:0");
    tide_node *nodes[] = {ok, seven};
    place_fails(e, g, nodes, 2, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'seven' (Const)", "'/cpu:7'", "matches none of this engine's devices",
                                 CPU0 ", " CPU1, NULL});
    /* Assigned devices are written only on success. */
    CU_ASSERT_PTR_NULL(tide_node_assigned_device(ok));
    place_fails(e, g, (tide_node *[]){worker}, 1, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'worker'", "'/job:worker/task:1'", CPU1, NULL});
    place_fails(e, g, (tide_node *[]){gpu}, 1, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'gpu'", "'/gpu:0'", "matches none", NULL});
    tide_placement p;
    if (place_ok(e, g, (tide_node *[]){ok}, 1, TIDE_PLACEMENT_GREEDY, &p))
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(ok), CPU0);
    tide__placement_clear(&p);
    /* Bad arguments. */
    tide_error *err = tide_error_new();
    int order[] = {tide_node_id(ok), tide_node_id(ok)};
    CU_ASSERT_EQUAL(tide__place(e, g, order, 2, NULL, NULL, NULL, TIDE_PLACEMENT_GREEDY, NULL, NULL, &p, err),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT(contains(tide_error_message(err), "comes twice"));
    CU_ASSERT_EQUAL(tide__place(e, g, order, 1, NULL, NULL, NULL, (tide_placement_kind)7, NULL, NULL, &p, err),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT(contains(tide_error_message(err), "unknown strategy 7"));
    /* Nothing to place is fine. */
    CU_ASSERT_EQUAL(tide__place(e, g, NULL, 0, NULL, NULL, NULL, TIDE_PLACEMENT_GREEDY, NULL, NULL, &p, err), TIDE_OK);
    CU_ASSERT_EQUAL(p.simulated_s, 0);
    tide__placement_clear(&p);
    tide_error_free(err);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- colocation */

static void test_ref_colocation(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *v = scalar_variable(g, "v", "/cpu:1");
    tide_node *init = const_on(g, "init", NULL);
    tide_node *assign = op_on(g, "Assign", "assign", NULL, 2, (tide_node *[]){v, init});
    tide_node *add = op_on(g, "AssignAdd", "add", NULL, 2, (tide_node *[]){v, init});
    tide_placement p;
    /* The plan of the Assign alone (a Ref input prunes nothing in: v is not in the order). */
    if (place_ok(e, g, (tide_node *[]){init, assign}, 2, TIDE_PLACEMENT_NAIVE, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 0);
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(assign), CPU1);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(v), CPU1); /* the variable's group went there */
    }
    tide__placement_clear(&p);
    for (int s = 0; s < 3; s++) {
        if (place_ok(e, g, (tide_node *[]){v, init, assign, add}, 4, (tide_placement_kind)s, &p)) {
            CU_ASSERT_EQUAL(dev(&p, 0), 1);
            CU_ASSERT_EQUAL(dev(&p, 2), 1);
            CU_ASSERT_EQUAL(dev(&p, 3), 1);
        }
        tide__placement_clear(&p);
    }
    tide_graph_free(g);
    tide_engine_free(e);
}

/* A Variable that an earlier plan placed keeps its device in later plans. */
static void test_variable_keeps_device(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *c = const_on(g, "c", NULL);
    tide_node *v = gu_variable(g, "v", TIDE_FLOAT32, 0, NULL, NULL);
    tide_node *assign = op_on(g, "Assign", "assign", NULL, 2, (tide_node *[]){v, c});
    tide_node *read = op_on(g, "Identity", "read", NULL, 1, (tide_node *[]){v});
    tide_placement p;
    /* The first plan that needs v places it (by a placement of the whole graph: round robin deals
     * c, v's group and read's group to cpu:0, cpu:1, cpu:0); every later plan keeps it there. */
    if (place_ok(e, g, (tide_node *[]){c, assign}, 2, TIDE_PLACEMENT_ROUND_ROBIN, &p))
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    tide__placement_clear(&p);
    CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(v), CPU1);
    /* Naive alone would put the Assign on cpu:0; its variable is on cpu:1. */
    if (place_ok(e, g, (tide_node *[]){c, assign}, 2, TIDE_PLACEMENT_NAIVE, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 0);
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    }
    tide__placement_clear(&p);
    if (place_ok(e, g, (tide_node *[]){c, v, read}, 3, TIDE_PLACEMENT_NAIVE, &p))
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* Bug 7: with two devices, examples/two_towers.lua initialised a variable on one device and read it
 * on the other. Two towers of variables (with their initializers) under greedy placement: the init
 * plan, the training plan and a second init must all put each Variable and its Assign ops on one
 * device, the same in every plan. */
static tide_node *tower(tide_graph *g, const char *name, tide_node *x, tide_node **vars)
{
    tide_graph_push_scope(g, name);
    tide_node *h = x;
    for (int i = 0; i < 3; i++) {
        tide_initializer init;
        tide_initializer_init(&init, TIDE_INIT_NORMAL);
        init.seed = 10 * i + 1;
        tide_shape shape = tide_shape_matrix(256, 256);
        tide_output value = tide_initializer_build(g, &init, TIDE_FLOAT32, &shape, NULL);
        char var_name[8];
        snprintf(var_name, sizeof var_name, "W%d", i + 1);
        vars[i] = tide_variable_new(g, var_name, value, true, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(vars[i]);
        h = op_on(g, "MatMul", NULL, NULL, 2, (tide_node *[]){h, vars[i]});
        h = op_on(g, "Relu", NULL, NULL, 1, &h);
    }
    tide_graph_pop_scope(g);
    return h;
}

/* Every Variable of vars is where its initializer is and where it was before (*where, NULL: unset). */
static void check_colocated(tide_graph *g, tide_node *const *vars, int n, const char **where)
{
    for (int i = 0; i < n; i++) {
        char init_name[64];
        snprintf(init_name, sizeof init_name, "%s/init", tide_node_name(vars[i]));
        tide_node *init = tide_graph_node(g, init_name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(init);
        const char *var_device = tide_node_assigned_device(vars[i]), *init_device = tide_node_assigned_device(init);
        if (!var_device || !init_device || strcmp(var_device, init_device) != 0 ||
            (where[i] && strcmp(where[i], var_device) != 0))
            fprintf(stderr, "\n%s on %s (before: %s), its initializer on %s ", tide_node_name(vars[i]),
                    var_device ? var_device : "-", where[i] ? where[i] : "-", init_device ? init_device : "-");
        CU_ASSERT(var_device && init_device && strcmp(var_device, init_device) == 0);
        CU_ASSERT(!where[i] || (var_device && strcmp(where[i], var_device) == 0));
        where[i] = var_device;
    }
}

static void test_variables_stay_with_their_initializers(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *x = matrix(g, "x", 64, 256);
    tide_node *vars[6];
    tide_node *left = tower(g, "left", x, vars), *right = tower(g, "right", x, vars + 3);
    tide_node *sum = op_on(g, "Add", "sum", NULL, 2, (tide_node *[]){left, right});
    tide_node *init = tide_global_variables_initializer(g, NULL);
    CU_ASSERT_EQUAL_FATAL(tide_node_num_control_inputs(init), 6);
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    tide_run_options opts = {.trace = false};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err), TIDE_OK);
    if (tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "\ninit: %s ", tide_error_message(err));
    tide_error_free(err);
    const char *where[6] = {0};
    check_colocated(g, vars, 6, where);
    tide_tensor *out = gu_fetch(s, sum);
    CU_ASSERT_PTR_NOT_NULL(out);
    tide_tensor_release(out);
    check_colocated(g, vars, 6, where); /* the training plan read each where the init plan put it */
    CU_ASSERT_EQUAL(tide_session_run(s, &opts, NULL, 0, NULL, 0, NULL, &init, 1, NULL, NULL), TIDE_OK);
    check_colocated(g, vars, 6, where);
    /* Greedy spreads the towers: both devices hold variables. */
    bool on_second = false;
    for (int i = 0; i < 6; i++)
        on_second |= strcmp(where[i], CPU1) == 0;
    CU_ASSERT(on_second);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

static void test_colocate_with(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *anchor = const_on(g, "anchor", "/cpu:1");
    tide_node *follower = colocated(g, "follower", NULL, "anchor");
    tide_placement p;
    if (place_ok(e, g, (tide_node *[]){anchor, follower}, 2, TIDE_PLACEMENT_NAIVE, &p))
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    tide__placement_clear(&p);
    /* The anchor not in the plan: no tie. */
    if (place_ok(e, g, (tide_node *[]){follower}, 1, TIDE_PLACEMENT_NAIVE, &p))
        CU_ASSERT_EQUAL(dev(&p, 0), 0);
    tide__placement_clear(&p);
    /* The follower comes first in the order: the group is placed then, and still on cpu:1. */
    if (place_ok(e, g, (tide_node *[]){follower, anchor}, 2, TIDE_PLACEMENT_ROUND_ROBIN, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 1);
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    }
    tide__placement_clear(&p);
    tide_node *lost = colocated(g, "lost", NULL, "nowhere");
    place_fails(e, g, (tide_node *[]){lost}, 1, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'lost' (Const)", "_colocate_with = 'nowhere'", "no node 'nowhere'", NULL});
    tide_node_builder *b = tide_node_builder_new(g, "NoOp", "typed");
    tide_attrs_set_int(tide_node_builder_attrs(b), "_colocate_with", 3);
    tide_node *typed = gu_finish(b);
    place_fails(e, g, (tide_node *[]){typed}, 1, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'typed' (NoOp)", "_colocate_with must be a string", NULL});
    /* Greedy: a heavy follower still goes where its anchor is. */
    tide_node *x = matrix(g, "x", 64, 64);
    tide_node *mm1 = op_on(g, "MatMul", "mm1", NULL, 2, (tide_node *[]){x, x});
    tide_node_builder *mb = tide_node_builder_new(g, "MatMul", "mm2");
    tide_node_builder_add_input(mb, (tide_output){x, 0});
    tide_node_builder_add_input(mb, (tide_output){x, 0});
    tide_attrs_set_string(tide_node_builder_attrs(mb), "_colocate_with", "mm1");
    tide_node *mm2 = gu_finish(mb);
    if (place_ok(e, g, (tide_node *[]){x, mm1, mm2}, 3, TIDE_PLACEMENT_GREEDY, &p))
        CU_ASSERT_EQUAL(dev(&p, 1), dev(&p, 2)); /* without the tie greedy splits them (test_strategies) */
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

static void test_conflicts(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *v = scalar_variable(g, "v", "/cpu:0");
    tide_node *c = const_on(g, "c", NULL);
    tide_node *assign = op_on(g, "Assign", "assign", "/cpu:1", 2, (tide_node *[]){v, c});
    place_fails(e, g, (tide_node *[]){v, c, assign}, 3, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'v' (Variable) requests '/cpu:0'", "node 'assign' (Assign) requests '/cpu:1'",
                                 "'assign' updates 'v' in place through a Ref input", "no device matches both",
                                 NULL});
    /* Also when only the Assign is in the plan. */
    place_fails(e, g, (tide_node *[]){c, assign}, 2, TIDE_INVALID_ARGUMENT,
                (const char *[]){"'v'", "'/cpu:0'", "'assign'", "'/cpu:1'", NULL});
    CU_ASSERT_PTR_NULL(tide_node_assigned_device(c));
    CU_ASSERT_PTR_NULL(tide_node_assigned_device(v));
    tide_node *a = const_on(g, "a", "/cpu:0");
    tide_node *b = colocated(g, "b", "/cpu:1", "a");
    place_fails(e, g, (tide_node *[]){a, b}, 2, TIDE_INVALID_ARGUMENT,
                (const char *[]){"node 'a' (Const) requests '/cpu:0'", "node 'b' (Const) requests '/cpu:1'",
                                 "'b' has _colocate_with = 'a'", NULL});
    /* Partial requests that overlap are no conflict. */
    tide_node *d = const_on(g, "d", "/job:localhost");
    tide_node *f = colocated(g, "f", "/cpu:1", "d");
    tide_placement p;
    if (place_ok(e, g, (tide_node *[]){d, f}, 2, TIDE_PLACEMENT_NAIVE, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 1);
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
    }
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- soft placement */

static tide_node *test_op(tide_graph *g, const char *op, const char *name, const char *device, tide_node *in)
{
    return op_on(g, op, name, device, 1, (tide_node *[]){in});
}

static void test_soft_placement(void)
{
    tide_engine *e = engine_with(2, true);
    CU_ASSERT_EQUAL_FATAL(e->num_devices, 3);
    tide_graph *g = tide_graph_new();
    tide_node *x = matrix(g, "x", 2, 2);
    int32_t iv = 1;
    tide_node *xi = gu_const(g, "xi", th_i32(0, NULL, &iv));
    tide_node *mm = op_on(g, "FloorMod", "mm", "/gpu:0", 2, (tide_node *[]){x, x});
    tide_node *tf = test_op(g, "PlacementTest", "tf", "/gpu:0", x);
    tide_node *ti = test_op(g, "PlacementTest", "ti", "/gpu:0", xi);
    tide_node *free_i = test_op(g, "PlacementTest", "free_i", NULL, xi);
    tide_node *gpu_only = test_op(g, "PlacementGpuOnly", "gpu_only", NULL, x);
    tide_placement p;
    tide_node *nodes[] = {x, xi, mm, tf, ti, free_i, gpu_only};
    if (place_ok(e, g, nodes, 7, TIDE_PLACEMENT_NAIVE, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 0);
        CU_ASSERT_EQUAL(dev(&p, 2), 0); /* soft: no gpu FloorMod (MatMul has one where CUDA is built) */
        CU_ASSERT_EQUAL(dev(&p, 3), 2); /* the float32 kernel exists on the gpu */
        CU_ASSERT_EQUAL(dev(&p, 4), 0); /* soft: the gpu kernel is float32 only */
        CU_ASSERT_EQUAL(dev(&p, 5), 0);
        CU_ASSERT_EQUAL(dev(&p, 6), 2); /* the only device with a kernel */
        CU_ASSERT_EQUAL_FATAL(p.num_warnings, 2);
        CU_ASSERT_STRING_EQUAL(p.warnings[0], "node 'mm' (FloorMod) requested '/gpu:0' (no gpu kernel for FloorMod "
                                              "with T=float32): placed on " CPU0);
        CU_ASSERT_STRING_EQUAL(p.warnings[1], "node 'ti' (PlacementTest) requested '/gpu:0' (no gpu kernel for "
                                              "PlacementTest with T=int32): placed on " CPU0);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(mm), CPU0);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(tf), GPU0);
    }
    tide__placement_clear(&p);
    /* Round robin over the soft candidates (both CPUs), never the gpu without a kernel. */
    for (int s = 0; s < 3; s++) {
        if (place_ok(e, g, nodes, 7, (tide_placement_kind)s, &p)) {
            CU_ASSERT_NOT_EQUAL(dev(&p, 2), 2);
            CU_ASSERT_NOT_EQUAL(dev(&p, 4), 2);
            CU_ASSERT_NOT_EQUAL(dev(&p, 5), 2);
            CU_ASSERT_EQUAL(p.num_warnings, 2);
        }
        tide__placement_clear(&p);
    }
    /* Soft because of a colocated node: the warning names it. */
    tide_node_builder *b = tide_node_builder_new(g, "PlacementTest", "tied");
    tide_node_builder_add_input(b, (tide_output){x, 0});
    tide_attrs_set_string(tide_node_builder_attrs(b), "_colocate_with", "mm");
    tide_node *tied = on_device(b, "/gpu:0");
    if (place_ok(e, g, (tide_node *[]){x, mm, tied}, 3, TIDE_PLACEMENT_NAIVE, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 2), 0);
        CU_ASSERT_EQUAL_FATAL(p.num_warnings, 2);
        CU_ASSERT(contains(p.warnings[1], "node 'tied' (PlacementTest) requested '/gpu:0' (no gpu kernel for "
                                          "FloorMod with T=float32 of node 'mm', which it is colocated with)"));
    }
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
    /* No device has a kernel at all. */
    e = engine_with(2, false);
    g = tide_graph_new();
    x = matrix(g, "x", 2, 2);
    gpu_only = test_op(g, "PlacementGpuOnly", "gpu_only", NULL, x);
    place_fails(e, g, (tide_node *[]){x, gpu_only}, 2, TIDE_UNIMPLEMENTED,
                (const char *[]){"node 'gpu_only' (PlacementGpuOnly)", "no kernel for PlacementGpuOnly with T=float32",
                                 "(cpu)", NULL});
    tide_graph_free(g);
    tide_engine_free(e);
    /* Each has a kernel somewhere, but no device type has kernels for both of two colocated nodes. */
    e = engine_with(2, true);
    g = tide_graph_new();
    x = matrix(g, "x", 2, 2);
    xi = gu_const(g, "xi", th_i32(0, NULL, &iv));
    ti = test_op(g, "PlacementTest", "ti", NULL, xi); /* int32: a CPU kernel only */
    b = tide_node_builder_new(g, "PlacementGpuOnly", "g_only");
    tide_node_builder_add_input(b, (tide_output){x, 0});
    tide_attrs_set_string(tide_node_builder_attrs(b), "_colocate_with", "ti");
    tide_node *g_only = on_device(b, NULL);
    place_fails(e, g, (tide_node *[]){x, xi, ti, g_only}, 4, TIDE_UNIMPLEMENTED,
                (const char *[]){"must be on one device", "has kernels for both", "(cpu, gpu)", NULL});
    tide_graph_free(g);
    tide_engine_free(e);
}

/* tide_session_warnings: each plan's soft-placement warnings, oldest first; an array handed out stays
 * valid and unchanged until the session is freed, also after later calls found more warnings. */
static void test_session_warnings_stay_valid(void)
{
    tide_engine *e = engine_with(1, true);
    tide_graph *g = tide_graph_new();
    tide_node *x = matrix(g, "x", 2, 2);
    int32_t iv = 1;
    tide_node *xi = gu_const(g, "xi", th_i32(0, NULL, &iv));
    tide_node *mm = op_on(g, "FloorMod", "mm", "/gpu:0", 2, (tide_node *[]){x, x});
    tide_node *ti = test_op(g, "PlacementTest", "ti", "/gpu:0", xi); /* the gpu kernel is float32 only */
    tide_session *s = tide_session_new(e, g, NULL, NULL);
    const char *const *first = NULL, *const *second = NULL;
    CU_ASSERT_EQUAL(tide_session_warnings(s, &first), 0);
    tide_tensor *out = gu_fetch(s, mm);
    tide_tensor_release(out);
    CU_ASSERT_EQUAL_FATAL(tide_session_warnings(s, &first), 1);
    const char *first_text = first[0];
    CU_ASSERT(contains(first_text, "node 'mm' (FloorMod) requested '/gpu:0'"));
    CU_ASSERT_PTR_NULL(first[1]);
    out = gu_fetch(s, ti);
    tide_tensor_release(out);
    CU_ASSERT_EQUAL_FATAL(tide_session_warnings(s, &second), 2);
    CU_ASSERT(contains(second[1], "node 'ti' (PlacementTest) requested '/gpu:0'"));
    CU_ASSERT_PTR_EQUAL(first[0], first_text); /* the first array is unchanged */
    CU_ASSERT_PTR_NULL(first[1]);
    CU_ASSERT(contains(first[0], "node 'mm' (FloorMod)"));
    const char *const *again = NULL;
    CU_ASSERT_EQUAL(tide_session_warnings(s, &again), 2);
    CU_ASSERT_PTR_EQUAL(again, second); /* nothing new: the same array */
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* More than 64 devices: device sets span two words. */
static void test_many_devices(void)
{
    tide_engine *e = engine_with(64, true);
    CU_ASSERT_EQUAL_FATAL(e->num_devices, 65);
    tide_graph *g = tide_graph_new();
    tide_node *x = const_on(g, "x", "/cpu:63");
    tide_node *y = test_op(g, "PlacementTest", "y", "/gpu:0", x);
    tide_node *z = colocated(g, "z", NULL, "y");
    tide_node *w = test_op(g, "PlacementTest", "w", NULL, x);
    tide_node *last = const_on(g, "last", "/device:cpu:*");
    tide_node *nodes[] = {x, y, w, last};
    tide_placement p;
    if (place_ok(e, g, nodes, 4, TIDE_PLACEMENT_ROUND_ROBIN, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 0), 63);
        CU_ASSERT_EQUAL(dev(&p, 1), 64);
        CU_ASSERT_EQUAL(dev(&p, 2), 2); /* group 2 of 65 candidates */
        CU_ASSERT_EQUAL(dev(&p, 3), 3); /* group 3 of the 64 CPUs */
        CU_ASSERT_EQUAL(p.num_warnings, 0);
        CU_ASSERT_STRING_EQUAL(tide_node_assigned_device(y), GPU0);
    }
    tide__placement_clear(&p);
    /* z (a string Const: CPU kernels only) tied to y: y is placed softly, on a CPU, and warned about. */
    if (place_ok(e, g, (tide_node *[]){x, y, z}, 3, TIDE_PLACEMENT_ROUND_ROBIN, &p)) {
        CU_ASSERT_EQUAL(dev(&p, 1), 1);
        CU_ASSERT_EQUAL(dev(&p, 2), 1);
        CU_ASSERT_EQUAL_FATAL(p.num_warnings, 1);
        CU_ASSERT(contains(p.warnings[0], "node 'y' (PlacementTest) requested '/gpu:0' (no gpu kernel for Const"));
    }
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- strategies */

/* Two towers of three 128x128 MatMuls: tower A built fully before tower B. nodes[4..6] are A,
 * nodes[7..9] B. */
static void two_towers(tide_graph *g, tide_node **nodes)
{
    nodes[0] = matrix(g, "xa", 128, 128);
    nodes[1] = matrix(g, "wa", 128, 128);
    nodes[2] = matrix(g, "xb", 128, 128);
    nodes[3] = matrix(g, "wb", 128, 128);
    const char *names[] = {"a1", "a2", "a3", "b1", "b2", "b3"};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 3; i++) {
            tide_node *prev = i == 0 ? nodes[2 * t] : nodes[4 + 3 * t + i - 1];
            nodes[4 + 3 * t + i] = op_on(g, "MatMul", names[3 * t + i], NULL, 2, (tide_node *[]){prev, nodes[2 * t + 1]});
        }
}

static void test_strategies(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *nodes[10];
    two_towers(g, nodes);
    tide_placement naive, rr, greedy;
    bool ok = place_ok(e, g, nodes, 10, TIDE_PLACEMENT_NAIVE, &naive) &&
              place_ok(e, g, nodes, 10, TIDE_PLACEMENT_ROUND_ROBIN, &rr) &&
              place_ok(e, g, nodes, 10, TIDE_PLACEMENT_GREEDY, &greedy);
    if (ok) {
        for (int k = 0; k < 10; k++) {
            CU_ASSERT_EQUAL(dev(&naive, k), 0);
            CU_ASSERT_EQUAL(dev(&rr, k), k % 2);
        }
        /* Greedy: each tower on one device, the towers on different devices. */
        CU_ASSERT_EQUAL(dev(&greedy, 4), dev(&greedy, 5));
        CU_ASSERT_EQUAL(dev(&greedy, 5), dev(&greedy, 6));
        CU_ASSERT_EQUAL(dev(&greedy, 7), dev(&greedy, 8));
        CU_ASSERT_EQUAL(dev(&greedy, 8), dev(&greedy, 9));
        CU_ASSERT_NOT_EQUAL(dev(&greedy, 4), dev(&greedy, 7));
        /* One 128^3 MatMul: 2·128^3 FLOPs at 20 GFLOP/s plus 3·64 KiB at 10 GB/s, plus 1 µs. */
        double mm = 2.0 * 128 * 128 * 128 / 20e9 + 3 * 65536.0 / 10e9 + 1e-6;
        CU_ASSERT(naive.simulated_s >= 6 * mm);
        CU_ASSERT(naive.simulated_s < 6 * mm + 10e-6);
        CU_ASSERT(greedy.simulated_s <= naive.simulated_s);
        CU_ASSERT(greedy.simulated_s < rr.simulated_s);
        CU_ASSERT(greedy.simulated_s < 3 * mm + 20e-6);
        CU_ASSERT(rr.simulated_s > 4 * mm);
    }
    tide__placement_clear(&naive);
    tide__placement_clear(&rr);
    tide__placement_clear(&greedy);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* A chain stays on the device of its start (cpu:1, requested): moving to the idle cpu:0, which ties
 * with cpu:1 but for the transfer, would only add transfers. */
static void test_greedy_chain(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *nodes[12];
    tide_node_builder *b = tide_node_builder_new(g, "Const", "x");
    tide_tensor *t = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(256, 256), NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_tensor_release(t);
    nodes[0] = on_device(b, "/cpu:1");
    for (int i = 1; i < 12; i++)
        nodes[i] = op_on(g, i % 2 ? "MatMul" : "Square", NULL, NULL, i % 2 ? 2 : 1,
                         (tide_node *[]){nodes[i - 1], nodes[i - 1]});
    tide_placement p;
    if (place_ok(e, g, nodes, 12, TIDE_PLACEMENT_GREEDY, &p))
        for (int k = 0; k < 12; k++)
            CU_ASSERT_EQUAL(dev(&p, k), 1);
    tide__placement_clear(&p);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* Transfers count: two towers reading one big input split across devices when copies are cheap, and
 * stay together when copying the input costs more than the second device saves. */
static void test_greedy_transfer_cost(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *x = matrix(g, "x", 128, 128);
    tide_node *a = op_on(g, "MatMul", "a", NULL, 2, (tide_node *[]){x, x});
    tide_node *b = op_on(g, "MatMul", "b", NULL, 2, (tide_node *[]){x, x});
    tide_node *nodes[] = {x, a, b};
    tide_cost_model m;
    tide__cost_model_default(&m);
    tide_placement p;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(place(e, g, nodes, 3, TIDE_PLACEMENT_GREEDY, &m, NULL, &p, err), TIDE_OK);
    if (p.device)
        CU_ASSERT_NOT_EQUAL(dev(&p, 1), dev(&p, 2));
    tide__placement_clear(&p);
    m.transfer_bytes_per_s = 1e6; /* 64 KiB: 65 ms, far more than a 0.2 ms MatMul */
    CU_ASSERT_EQUAL(place(e, g, nodes, 3, TIDE_PLACEMENT_GREEDY, &m, NULL, &p, err), TIDE_OK);
    if (p.device) {
        CU_ASSERT_EQUAL(dev(&p, 1), dev(&p, 0));
        CU_ASSERT_EQUAL(dev(&p, 2), dev(&p, 0));
    }
    double together = p.simulated_s;
    tide__placement_clear(&p);
    /* Round robin pays for the copy. */
    CU_ASSERT_EQUAL(place(e, g, nodes, 3, TIDE_PLACEMENT_ROUND_ROBIN, &m, NULL, &p, err), TIDE_OK);
    CU_ASSERT(p.simulated_s > 65536 / 1e6);
    CU_ASSERT(together < p.simulated_s);
    tide__placement_clear(&p);
    tide_error_free(err);
    tide_graph_free(g);
    tide_engine_free(e);
}

static bool feed_x(void *arg, const tide_node *node, int output)
{
    return node == arg && output == 0;
}

/* A fed input is on hand at time 0 wherever its consumer runs. */
static void test_fed_inputs(void)
{
    tide_engine *e = engine_with(2, false);
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(128, 128));
    tide_node *a = op_on(g, "MatMul", "a", NULL, 2, (tide_node *[]){x, x});
    tide_node *b = op_on(g, "MatMul", "b", NULL, 2, (tide_node *[]){x, x});
    tide_cost_model m;
    tide__cost_model_default(&m);
    m.transfer_bytes_per_s = 1e6; /* copies would be dear: but nothing is copied */
    int order[] = {tide_node_id(a), tide_node_id(b)};
    tide_placement p;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide__place(e, g, order, 2, NULL, feed_x, x, TIDE_PLACEMENT_GREEDY, &m, NULL, &p, err), TIDE_OK);
    if (p.device) {
        CU_ASSERT_NOT_EQUAL(dev(&p, 0), dev(&p, 1));
        double mm = 2.0 * 128 * 128 * 128 / 20e9 + 3 * 65536.0 / 10e9 + 1e-6;
        CU_ASSERT(fabs(p.simulated_s - mm) < 1e-12);
    }
    tide__placement_clear(&p);
    tide_error_free(err);
    tide_graph_free(g);
    tide_engine_free(e);
}

/* ---------------------------------------------------------------- the cost model */

static void test_cost_model_flops(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *a = gu_placeholder(g, "a", TIDE_FLOAT32, 2, TH_DIMS(3, 5));
    tide_node *b = gu_placeholder(g, "b", TIDE_FLOAT32, 2, TH_DIMS(5, 7));
    tide_node *at = gu_placeholder(g, "at", TIDE_FLOAT32, 2, TH_DIMS(5, 3));
    tide_node *partial = gu_placeholder(g, "partial", TIDE_FLOAT32, 2, TH_DIMS(-1, 5));
    tide_node *mm = gu_op(g, "MatMul", "mm", 2, (tide_node *[]){a, b});
    tide_node_builder *tb = tide_node_builder_new(g, "MatMul", "mm_t");
    tide_node_builder_add_input(tb, (tide_output){at, 0});
    tide_node_builder_add_input(tb, (tide_output){b, 0});
    tide_attrs_set_bool(tide_node_builder_attrs(tb), "transpose_a", true);
    tide_node *mm_t = gu_finish(tb);
    tide_node *mm_partial = gu_op(g, "MatMul", "mm_partial", 2, (tide_node *[]){partial, b});
    tide_node *img = gu_placeholder(g, "img", TIDE_FLOAT32, 4, TH_DIMS(2, 9, 9, 3));
    tide_node *filt = gu_placeholder(g, "filt", TIDE_FLOAT32, 4, TH_DIMS(3, 3, 3, 4));
    tide_node_builder *cb = tide_node_builder_new(g, "Conv2D", "conv");
    tide_node_builder_add_input(cb, (tide_output){img, 0});
    tide_node_builder_add_input(cb, (tide_output){filt, 0});
    tide_attrs_set_int_list(tide_node_builder_attrs(cb), "strides", (const int64_t[]){1, 1, 1, 1}, 4);
    tide_attrs_set_string(tide_node_builder_attrs(cb), "padding", "VALID");
    tide_node *conv = gu_finish(cb);
    tide_node *m45 = gu_placeholder(g, "m45", TIDE_FLOAT32, 2, TH_DIMS(4, 5));
    tide_node *v5 = gu_placeholder(g, "v5", TIDE_FLOAT32, 1, TH_DIMS(5));
    tide_node *add = gu_op(g, "Add", "add", 2, (tide_node *[]){m45, v5});
    int32_t axis = 1;
    tide_node *axes = gu_const(g, "axes", th_i32(0, NULL, &axis));
    tide_node *sum = gu_op(g, "Sum", "sum", 2, (tide_node *[]){m45, axes});
    tide_node *k = gu_scalar_f32(g, "k", 1);
    if (!mm || !mm_t || !mm_partial || !conv || !add || !sum) {
        tide_graph_free(g);
        return;
    }
    tide_cost_model flops_only = {.flops_per_s = 1}; /* bytes and overhead free: the estimate is FLOPs */
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, mm, NULL), 2 * 3 * 7 * 5);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, mm_t, NULL), 2 * 3 * 7 * 5);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, mm_partial, NULL), 2 * 1 * 7 * 5);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, conv, NULL), 2 * (2 * 7 * 7 * 4) * 3 * 3 * 3);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, add, NULL), 20);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, sum, NULL), 20);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, k, NULL), 0);
    CU_ASSERT_EQUAL(tide__cost_estimate(&flops_only, NULL, a, NULL), 0);
    tide_cost_model bytes_only = {.bytes_per_s = 1};
    CU_ASSERT_EQUAL(tide__cost_estimate(&bytes_only, NULL, mm, NULL), (15 + 35 + 21) * 4);
    CU_ASSERT_EQUAL(tide__cost_estimate(&bytes_only, NULL, add, NULL), (20 + 5 + 20) * 4);
    CU_ASSERT_EQUAL(tide__cost_estimate(&bytes_only, NULL, k, NULL), 0); /* a Const moves nothing */
    CU_ASSERT_EQUAL(tide__output_bytes(partial, 0), 5 * 4);
    CU_ASSERT_EQUAL(tide__output_bytes(mm, 0), 21 * 4);
    CU_ASSERT_EQUAL(tide__output_bytes(mm, 1), 0);
    tide_cost_model d;
    tide__cost_model_default(&d);
    CU_ASSERT_EQUAL(d.flops_per_s, 20e9);
    CU_ASSERT_EQUAL(d.bytes_per_s, 10e9);
    CU_ASSERT_EQUAL(d.transfer_latency_s, 20e-6);
    CU_ASSERT_EQUAL(d.transfer_bytes_per_s, 0);
    CU_ASSERT_EQUAL(tide__cost_estimate(&d, NULL, k, NULL), d.node_overhead_s);
    CU_ASSERT(d.node_overhead_s > 0);
    CU_ASSERT(fabs(tide__cost_estimate(&d, NULL, mm, NULL) - (210 / 20e9 + 284 / 10e9 + d.node_overhead_s)) < 1e-18);
    tide_graph_free(g);
}

typedef struct recorder {
    tide_cost_table *table;
    int id;
} recorder;

static void *record_many(void *arg)
{
    recorder *r = arg;
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "n%d", i % 500);
        tide__cost_record(r->table, name, 1e-3 * (1 + r->id));
        tide__cost_measured(r->table, name);
    }
    return NULL;
}

static void test_measured_times(void)
{
    tide_cost_table *t = tide__cost_table_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT(tide__cost_measured(t, "mm") < 0);
    tide__cost_record(t, "mm", 0.5);
    CU_ASSERT_EQUAL(tide__cost_measured(t, "mm"), 0.5);
    tide__cost_record(t, "mm", 1.0); /* a moving average: 0.5 + 0.25 · (1.0 - 0.5) */
    CU_ASSERT_DOUBLE_EQUAL(tide__cost_measured(t, "mm"), 0.625, 1e-15);
    tide__cost_record(t, "mm", -1);  /* ignored */
    tide__cost_record(t, "mm", NAN); /* ignored */
    CU_ASSERT_DOUBLE_EQUAL(tide__cost_measured(t, "mm"), 0.625, 1e-15);
    /* Growth keeps every name. */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "node_%d", i);
        tide__cost_record(t, name, i);
    }
    int found = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "node_%d", i);
        found += tide__cost_measured(t, name) == i;
    }
    CU_ASSERT_EQUAL(found, 1000);
    /* Measured times replace estimates, in the model and in the placement. */
    tide_graph *g = tide_graph_new();
    tide_node *x = matrix(g, "x", 2, 2);
    tide_node *mm = op_on(g, "MatMul", "mm", NULL, 2, (tide_node *[]){x, x});
    tide_node *sq = op_on(g, "Square", "sq", NULL, 1, (tide_node *[]){x});
    tide_cost_model m;
    tide__cost_model_default(&m);
    CU_ASSERT_EQUAL(tide__cost_estimate(&m, t, mm, NULL), 0.625);
    CU_ASSERT(tide__cost_estimate(&m, t, sq, NULL) < 1e-5);
    tide_engine *e = engine_with(2, false);
    tide_placement p;
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(place(e, g, (tide_node *[]){x, mm, sq}, 3, TIDE_PLACEMENT_NAIVE, &m, t, &p, err), TIDE_OK);
    CU_ASSERT(p.simulated_s > 0.625 && p.simulated_s < 0.626);
    tide__placement_clear(&p);
    tide__cost_record(t, "sq", 0.625);
    CU_ASSERT_EQUAL(place(e, g, (tide_node *[]){x, mm, sq}, 3, TIDE_PLACEMENT_GREEDY, &m, t, &p, err), TIDE_OK);
    if (p.device)
        CU_ASSERT_NOT_EQUAL(dev(&p, 1), dev(&p, 2)); /* two slow nodes: one each */
    CU_ASSERT(p.simulated_s < 0.626);
    tide__placement_clear(&p);
    tide_error_free(err);
    tide_engine_free(e);
    tide_graph_free(g);
    tide__cost_table_free(t);
    /* Concurrent records and reads. */
    t = tide__cost_table_new();
    pthread_t threads[4];
    recorder rs[4];
    for (int i = 0; i < 4; i++) {
        rs[i] = (recorder){t, i};
        pthread_create(&threads[i], NULL, record_many, &rs[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    double v = tide__cost_measured(t, "n7");
    CU_ASSERT(v >= 1e-3 && v <= 4e-3);
    tide__cost_table_free(t);
    tide__cost_table_free(NULL);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_requests_full_and_partial),
        TH_TEST(test_scope_default_device),
        TH_TEST(test_bad_requests),
        TH_TEST(test_ref_colocation),
        TH_TEST(test_variable_keeps_device), TH_TEST(test_variables_stay_with_their_initializers),
        TH_TEST(test_colocate_with),
        TH_TEST(test_conflicts),
        TH_TEST(test_soft_placement), TH_TEST(test_session_warnings_stay_valid),
        TH_TEST(test_many_devices),
        TH_TEST(test_strategies),
        TH_TEST(test_greedy_chain),
        TH_TEST(test_greedy_transfer_cost),
        TH_TEST(test_fed_inputs),
        TH_TEST(test_cost_model_flops),
        TH_TEST(test_measured_times),
        TH_END,
    };
    return th_main("placement", tests);
}
