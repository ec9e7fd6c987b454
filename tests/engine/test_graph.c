/* test_graph.c — building graphs: validation errors that leave the graph unchanged, names and scopes,
 * shape inference at build time, rollback, and the text format (round trip, atomic extension, errors,
 * cycles, loops whose back edge closes a cycle; numbers that do not fit their type, tensor literals checked before they are allocated, a
 * million nodes in any order; graph text files and the cap on what is read). */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph_util.h"

static tide_node *try_build(tide_node_builder *b, tide_error *err)
{
    return tide_node_builder_finish(b, err);
}

static void expect_error(tide_error *err, tide_status code, const char *needle)
{
    if (tide_error_code(err) != code)
        fprintf(stderr, "expected %s, got %s: %s\n", tide_status_name(code), tide_status_name(tide_error_code(err)),
                tide_error_message(err));
    CU_ASSERT_EQUAL(tide_error_code(err), code);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", tide_error_message(err), needle);
        CU_FAIL("error message");
    }
}

static void test_builder_errors_leave_graph_unchanged(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *v = gu_variable(g, "v", TIDE_FLOAT32, 0, NULL, NULL);
    int32_t one = 1;
    tide_node *i = gu_const(g, "i", th_i32(0, NULL, &one));
    tide_error *err = tide_error_new();
    int before = tide_graph_num_nodes(g);
    uint64_t version = tide_graph_version(g);

    CU_ASSERT_PTR_NULL(try_build(tide_node_builder_new(g, "Matmul", NULL), err)); /* unknown op */
    expect_error(err, TIDE_NOT_FOUND, "unknown op 'Matmul'");

    tide_node_builder *b = tide_node_builder_new(g, "Assign", NULL); /* wrong dtype */
    tide_node_builder_add_input(b, (tide_output){v, 0});
    tide_node_builder_add_input(b, (tide_output){i, 0});
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "input 'value' has dtype int32, expected float32");

    b = tide_node_builder_new(g, "Identity", NULL); /* wrong arity */
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "expects 1 input (input), got 0");

    b = tide_node_builder_new(g, "Identity", NULL); /* unknown attr */
    tide_node_builder_add_input(b, (tide_output){i, 0});
    tide_attrs_set_int(tide_node_builder_attrs(b), "colour", 3);
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "unknown attr 'colour'");

    b = tide_node_builder_new(g, "Placeholder", NULL); /* missing attr */
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "missing attr 'dtype'");

    b = tide_node_builder_new(g, "Placeholder", NULL); /* attr of the wrong type */
    tide_attrs_set_int(tide_node_builder_attrs(b), "dtype", 3);
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "attr 'dtype' must be a type");

    b = tide_node_builder_new(g, "Identity", "i"); /* duplicate name */
    tide_node_builder_add_input(b, (tide_output){i, 0});
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_ALREADY_EXISTS, "'i' is already used (by a Const node)");

    b = tide_node_builder_new(g, "Identity", "bad name"); /* bad name */
    tide_node_builder_add_input(b, (tide_output){i, 0});
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "bad node name");

    b = tide_node_builder_new(g, "Identity", NULL); /* output out of range */
    tide_node_builder_add_input(b, (tide_output){i, 2});
    CU_ASSERT_PTR_NULL(try_build(b, err));
    expect_error(err, TIDE_OUT_OF_RANGE, "output 2 of 'i'");

    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    CU_ASSERT_EQUAL(tide_graph_version(g), version);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_names_and_scopes(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, NULL, 1);
    CU_ASSERT_STRING_EQUAL(tide_node_name(c), "const");
    tide_node *c1 = gu_scalar_f32(g, NULL, 1);
    CU_ASSERT_STRING_EQUAL(tide_node_name(c1), "const_1");
    tide_graph_push_scope(g, "layer1");
    tide_node *a = gu_op(g, "Identity", NULL, 1, &c);
    tide_node *w = gu_op(g, "Identity", "w", 1, &c);
    tide_graph_push_scope(g, "inner");
    tide_node *d = gu_op(g, "Identity", NULL, 1, &c);
    tide_graph_pop_scope(g);
    tide_graph_pop_scope(g);
    CU_ASSERT_STRING_EQUAL(tide_node_name(a), "layer1/identity");
    CU_ASSERT_STRING_EQUAL(tide_node_name(w), "layer1/w");
    CU_ASSERT_STRING_EQUAL(tide_node_name(d), "layer1/inner/identity");
    CU_ASSERT_PTR_EQUAL(tide_graph_node(g, "layer1/w"), w);
    tide_graph_push_device(g, "/cpu:0");
    tide_node *e = gu_op(g, "Identity", NULL, 1, &c);
    tide_graph_pop_device(g);
    CU_ASSERT_STRING_EQUAL(tide_node_requested_device(e), "/cpu:0");
    /* Many default names stay fast and unique. */
    for (int i = 0; i < 2000; i++)
        gu_op(g, "Identity", NULL, 1, &c);
    CU_ASSERT_PTR_NOT_NULL(tide_graph_node(g, "identity_2000"));
    tide_graph_free(g);
}

static void test_shape_inference_at_build(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_placeholder(g, "x", TIDE_FLOAT32, 2, TH_DIMS(-1, 784));
    tide_node *y = gu_op(g, "Identity", "y", 1, &x);
    tide_shape s = tide_node_output_shape(y, 0);
    CU_ASSERT_EQUAL(s.rank, 2);
    CU_ASSERT_EQUAL(s.dims[0], -1);
    CU_ASSERT_EQUAL(s.dims[1], 784);
    CU_ASSERT_EQUAL(tide_node_output_dtype(y, 0), TIDE_FLOAT32);
    tide_node *u = gu_placeholder(g, "u", TIDE_INT32, -1, NULL);
    CU_ASSERT_EQUAL(tide_node_output_shape(u, 0).rank, -1);
    tide_graph_free(g);
}

static void test_rollback(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c = gu_scalar_f32(g, "c", 1);
    int mark = tide_graph_num_nodes(g);
    gu_op(g, "Identity", "a", 1, &c);
    gu_op(g, "Identity", "b", 1, &c);
    CU_ASSERT_EQUAL(tide_graph_rollback(g, mark, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1);
    CU_ASSERT_PTR_NULL(tide_graph_node(g, "a"));
    gu_op(g, "Identity", "a", 1, &c); /* the name is free again */
    CU_ASSERT_EQUAL(tide_graph_rollback(g, 7, NULL), TIDE_INVALID_ARGUMENT);
    tide_graph_free(g);
}

static const char *sample_text =
    "# a small graph\n"
    "x = Placeholder(dtype=float32, shape=[?, 2])\n"
    "y = Identity(x) @\"/cpu:0\"\n"
    "w = Variable(dtype=float32, shape=[2], container=\"\", shared_name=\"text_w\")\n"
    "w0 = Const(value=tensor(float32, [2], [1.5, -2]), dtype=float32)\n"
    "init = Assign(w, w0)\n"
    "grp = NoOp(^init, ^y)\n"
    "s = Const(value=tensor(string, [2], [\"a\\\"b\", \"\\x01\"]), dtype=string)\n"
    "later = Identity(z)   # inputs may come later in the text\n"
    "z = Identity(w0:0)\n";

static void test_text_round_trip(void)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, sample_text, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 9);
    char *text = tide_graph_to_text(g, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    tide_graph *g2 = tide_graph_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(g2, text, err), TIDE_OK);
    char *text2 = tide_graph_to_text(g2, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text2);
    /* Reading back what was written reproduces it exactly (node order may differ only where the input
     * came later; here 'later' is written after 'z' the second time). */
    CU_ASSERT_EQUAL(strlen(text), strlen(text2));
    tide_node *s = tide_graph_node(g2, "s");
    tide_tensor *sv = NULL;
    CU_ASSERT(tide_attrs_get_tensor(tide_node_attrs(s), "value", &sv));
    size_t len = 0;
    CU_ASSERT_STRING_EQUAL(tide_tensor_string_get(sv, 0, &len), "a\"b");
    CU_ASSERT_EQUAL(tide_tensor_string_get(sv, 1, &len)[0], 1);
    CU_ASSERT_STRING_EQUAL(tide_node_requested_device(tide_graph_node(g2, "y")), "/cpu:0");
    /* The read graph runs: init then read the variable. */
    tide_session *sess = tide_session_new(th_engine(), g2, NULL, NULL);
    /* grp waits for y, which needs x: unfed, so the step fails and names the placeholder. */
    CU_ASSERT_EQUAL(gu_target(sess, tide_graph_node(g2, "grp"), err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'x' (Placeholder)"));
    tide_tensor *wv = gu_fetch(sess, tide_graph_node(g2, "init"));
    float want[2] = {1.5f, -2.0f};
    tide_tensor *wt = th_f32(1, TH_DIMS(2), want);
    TH_ASSERT_CLOSE(wv, wt, 0, 0);
    tide_tensor_release(wv);
    tide_tensor_release(wt);
    tide_session_free(sess);
    tide_engine_reset_container(th_engine(), "", NULL);
    free(text);
    free(text2);
    tide_error_free(err);
    tide_graph_free(g);
    tide_graph_free(g2);
}

/* "_" annotations of every kind read back as written, in name order whatever order they were set in;
 * their kind follows from how they are written (a list holding '?' is a shape). */
static void test_text_annotations_of_every_kind(void)
{
    const char *line =
        "n = NoOp(_a=true, _b=-3, _c=0.5, _d=\"s\", _e=float16, _f=[2, ?], _g=*, _h=tensor(int32, [2], [1, 2]), "
        "_i=[1, 2], _j=[0.5, 2.0], _k=[int64, bool], _l=[\"x\", \"\"], _m=[true, false], _n=[[1], *, [?, 3]], "
        "_o=[tensor(bool, [], [true])], _p=[])\n";
    tide_graph *g = th_graph_of(line);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *text = tide_graph_to_text(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, line));
    const tide_attrs *a = tide_node_attrs(tide_graph_node(g, "n"));
    static const struct { const char *name; tide_attr_type type; } kinds[] = {
        {"_a", TIDE_ATTR_BOOL}, {"_b", TIDE_ATTR_INT}, {"_c", TIDE_ATTR_FLOAT}, {"_d", TIDE_ATTR_STRING},
        {"_e", TIDE_ATTR_TYPE}, {"_f", TIDE_ATTR_SHAPE}, {"_g", TIDE_ATTR_SHAPE}, {"_h", TIDE_ATTR_TENSOR},
        {"_i", TIDE_ATTR_INT_LIST}, {"_j", TIDE_ATTR_FLOAT_LIST}, {"_k", TIDE_ATTR_TYPE_LIST},
        {"_l", TIDE_ATTR_STRING_LIST}, {"_m", TIDE_ATTR_BOOL_LIST}, {"_n", TIDE_ATTR_SHAPE_LIST},
        {"_o", TIDE_ATTR_TENSOR_LIST}, {"_p", TIDE_ATTR_INT_LIST},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (tide_attrs_type(a, kinds[i].name) != kinds[i].type) {
            fprintf(stderr, "%s read as kind %d, not %d\n", kinds[i].name, tide_attrs_type(a, kinds[i].name),
                    kinds[i].type);
            CU_FAIL("annotation kind");
        }
    th_assert_graph_fails("", "m = NoOp(_q=[\"x\", 1])\n", "attr _q of NoOp must be a list(string)");
    th_assert_graph_fails("", "m = NoOp(_q=[[1], 2])\n", "attr _q of NoOp must be a list(shape)");
    th_assert_graph_fails("", "m = NoOp(_q=nonsense)\n", "annotation _q: a value of no attr kind");
    free(text);
    tide_graph_free(g);
}

static void test_text_float_values_round_trip(void)
{
    /* Written with the fewest digits that read back exactly: values survive bit for bit. */
    tide_graph *g = tide_graph_new(), *g2 = tide_graph_new();
    float f[4] = {0.1f, 1.0f / 3.0f, -1e-30f, 16777217.0f};
    double d[3] = {0.1, 1.0 / 3.0, 1e300};
    gu_const(g, "f", th_f32(1, TH_DIMS(4), f));
    gu_const(g, "d", th_f64(1, TH_DIMS(3), d));
    char *text = tide_graph_to_text(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "[0.1, 0.33333334,"));
    CU_ASSERT_EQUAL(tide_graph_extend_text(g2, text, NULL), TIDE_OK);
    for (int i = 0; i < 2; i++) {
        tide_tensor *a = NULL, *b = NULL;
        tide_attrs_get_tensor(tide_node_attrs(tide_graph_node_at(g, i)), "value", &a);
        tide_attrs_get_tensor(tide_node_attrs(tide_graph_node_at(g2, i)), "value", &b);
        CU_ASSERT(a && b && tide_tensor_equal(a, b, false));
    }
    free(text);
    tide_graph_free(g);
    tide_graph_free(g2);
}

static void expect_text_error(const char *text, tide_status code, const char *needle)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, "keep = Const(value=tensor(int32, [], [3]), dtype=int32)\n", err), TIDE_OK);
    CU_ASSERT_NOT_EQUAL(tide_graph_extend_text(g, text, err), TIDE_OK);
    expect_error(err, code, needle);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1); /* atomic: nothing of the failed text stayed */
    tide_error_free(err);
    tide_graph_free(g);
}

/* Bug 8: a reduction over all axes (axes = Range(0, Rank(x), 1), as sum() and mean() build them)
 * inferred <unknown>; values known at graph time (Rank, Shape, Size of known shapes, Range of known
 * scalars) are folded so that their consumers' shape functions see them. */
static void test_shape_values_folded(void)
{
#define I32(name, value) name " = Const(value=tensor(int32, [], [" value "]), dtype=int32)\n"
    tide_graph *g = th_graph_of(
        "x = Placeholder(dtype=float32, shape=[?, 3])\n"
        "w = Placeholder(dtype=float32, shape=[4, 3])\n"
        "sq = Mul(w, w)\n"
        "r = Rank(sq)\n" I32("zero", "0") I32("one", "1")
        "axes = Range(zero, r, one)\n"
        "total = Sum(sq, axes)\n"
        "x_rank = Rank(x)\n"
        "x_axes = Range(zero, x_rank, one)\n"
        "average = Mean(x, x_axes)\n"
        "kept = Sum(w, axes, keep_dims=true)\n"
        "dims = Shape(w)\n"
        "filled = Fill(dims, one)\n"
        "n = Size(w)\n"
        "unknown_dims = Shape(x)\n"
        "x_size = Size(x)\n"
        "first = Range(zero, x_size, one)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "r", 0, 0, NULL);
    th_assert_output_shape(g, "axes", 0, 1, TH_DIMS(2));
    th_assert_output_shape(g, "total", 0, 0, NULL);
    tide_node *average = tide_graph_node(g, "average");
    CU_ASSERT_PTR_NOT_NULL_FATAL(average);
    tide_shape s = tide_node_output_shape(average, 0);
    CU_ASSERT_EQUAL(s.rank, 0); /* x's first dimension is unknown, its rank is not */
    th_assert_output_shape(g, "kept", 0, 2, TH_DIMS(1, 1));
    th_assert_output_shape(g, "filled", 0, 2, TH_DIMS(4, 3));
    th_assert_output_shape(g, "n", 0, 0, NULL);
    th_assert_output_shape(g, "unknown_dims", 0, 1, TH_DIMS(2)); /* [?, 3]: not folded, length known */
    tide_node *first = tide_graph_node(g, "first");
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    s = tide_node_output_shape(first, 0); /* Size of [?, 3] is unknown: so is the Range */
    CU_ASSERT(s.rank == 1 && s.dims[0] == -1);
    tide_graph_free(g);
#undef I32
}

static void test_text_errors(void)
{
    expect_text_error("a = Identity(keep)\nb = Identity(nope)\n", TIDE_NOT_FOUND, "'nope', which is not defined");
    expect_text_error("a = Identity(b)\nb = Identity(a)\n", TIDE_INVALID_ARGUMENT, "cycle");
    expect_text_error("a = Identity(keep)\na = Identity(keep)\n", TIDE_ALREADY_EXISTS, "defined twice");
    expect_text_error("keep = Identity(keep)\n", TIDE_INVALID_ARGUMENT, "cycle");
    expect_text_error("a = Identty(keep)\n", TIDE_INVALID_ARGUMENT, "did you mean Identity?");
    expect_text_error("a = iDENTITY(keep)\n", TIDE_INVALID_ARGUMENT, "did you mean Identity?"); /* any case */
    expect_text_error("a = Identity(keep\n", TIDE_INVALID_ARGUMENT, "line 1");
    /* a tensor's shape or dtype list that fails half read is freed (the ASan build's leak check caught it
       in the statement fuzzer) */
    expect_text_error("a = Const(value=tensor(float32, [1, [2, 3], \"abc", TIDE_INVALID_ARGUMENT, "unterminated string");
    expect_text_error("a = Const(value=tensor([1, \"abc", TIDE_INVALID_ARGUMENT, "unterminated string");
    expect_text_error("a = Placeholder(dtype=floaty)\n", TIDE_INVALID_ARGUMENT, "must be a type");
    expect_text_error("\n\na = Placeholder(dtype=float32, shape=[2, x])\n", TIDE_INVALID_ARGUMENT, "line 3");
    expect_text_error("a = Const(value=tensor(float32, [3], [1, 2]), dtype=float32)\n", TIDE_INVALID_ARGUMENT,
                      "needs 3 values, the list holds 2");
    expect_text_error("a = Const(value=tensor(float32, [3], [1, 2, 3, 4]), dtype=float32)\n",
                      TIDE_INVALID_ARGUMENT, "needs 3 values, the list holds 4");
    expect_text_error("a = Identity(keep) @\"/tpu:0\"\n", TIDE_INVALID_ARGUMENT, "unknown device type");
    expect_text_error("a = Identity(keep, bogus=1)\n", TIDE_INVALID_ARGUMENT, "has no attr 'bogus'");
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* A Const of dtype with one value written as text (the value of node "c" of a new graph), or NULL
 * with the error in err. */
static tide_tensor *const_value(const char *dtype, const char *value, tide_error *err)
{
    char text[256];
    snprintf(text, sizeof text, "c = Const(value=tensor(%s, [1], [%s]), dtype=%s)\n", dtype, value, dtype);
    tide_graph *g = tide_graph_new();
    tide_tensor *t = NULL;
    if (tide_graph_extend_text(g, text, err) == TIDE_OK) {
        tide_tensor *v = NULL;
        if (tide_attrs_get_tensor(tide_node_attrs(tide_graph_node(g, "c")), "value", &v))
            t = tide_tensor_retain(v);
    }
    tide_graph_free(g);
    return t;
}

/* Integers that do not fit their type are errors (99999999999 read as int32 was 1215752191), at
 * each type's limits; so are output indices, int attrs and floats that would become inf. */
static void test_text_number_limits(void)
{
    tide_error *err = tide_error_new();
    static const struct { const char *dtype, *fits, *too_big; } cases[] = {
        {"int8", "-128", "128"},        {"int8", "127", "-129"},
        {"int16", "-32768", "32768"},   {"int32", "2147483647", "99999999999"},
        {"int32", "-2147483648", "-2147483649"},
        {"int64", "9223372036854775807", "9223372036854775808"},
        {"int64", "-9223372036854775808", "99999999999999999999"},
        {"uint8", "255", "256"},        {"uint8", "0", "-1"},
        {"uint16", "65535", "65536"},   {"float32", "3.4e38", "1e39"},
        {"float32", "-inf", "-1e39"},   {"float64", "1e308", "1e309"},
        {"float16", "65504", "1e5"},    {"bfloat16", "3e38", "4e38"},
        {"complex64", "1, 2", "1, 1e39"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tide_tensor *t = const_value(cases[i].dtype, cases[i].fits, err);
        if (!t)
            printf("\n%s %s: %s\n", cases[i].dtype, cases[i].fits, tide_error_message(err));
        CU_ASSERT_PTR_NOT_NULL(t);
        tide_tensor_release(t);
        t = const_value(cases[i].dtype, cases[i].too_big, err);
        CU_ASSERT_PTR_NULL(t);
        if (t || !strstr(tide_error_message(err), "out of the range") ||
            !strstr(tide_error_message(err), "graph text line 1: tensor("))
            printf("\n%s %s: %s\n", cases[i].dtype, cases[i].too_big, t ? "accepted" : tide_error_message(err));
        tide_tensor_release(t);
    }
    tide_tensor *t = const_value("int32", "-2147483648", err);
    CU_ASSERT(t && ((int32_t *)tide_tensor_data(t))[0] == INT32_MIN);
    tide_tensor_release(t);
    t = const_value("int64", "-9223372036854775808", err);
    CU_ASSERT(t && ((int64_t *)tide_tensor_data(t))[0] == INT64_MIN);
    tide_tensor_release(t);
    CU_ASSERT_PTR_NULL(const_value("int32", "1.5", err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "tensor(int32, [1]) value 0: 1.5 is not an integer");
    CU_ASSERT_PTR_NULL(const_value("int32", "99999999999", err));
    expect_error(err, TIDE_INVALID_ARGUMENT,
                 "tensor(int32, [1]) value 0: 99999999999 is out of the range of int32 (-2147483648 to 2147483647)");
    CU_ASSERT_PTR_NULL(const_value("float32", "1e39", err));
    expect_error(err, TIDE_INVALID_ARGUMENT, "1e39 is out of the range of float32 (write inf for an infinity)");
    expect_text_error("a = Identity(keep:99999999999999999999)\n", TIDE_INVALID_ARGUMENT,
                      "output index 99999999999999999999 after 'keep:' is too large");
    expect_text_error("a = Identity(keep:4294967296)\n", TIDE_INVALID_ARGUMENT, "is too large");
    expect_text_error("a = Identity(keep:2147483647)\n", TIDE_OUT_OF_RANGE, "asks for output 2147483647");
    expect_text_error("a = Identity(keep:-1)\n", TIDE_INVALID_ARGUMENT, "bad output index after 'keep:'");
    expect_text_error("a = Pack([keep], axis=99999999999999999999)\n", TIDE_INVALID_ARGUMENT,
                      "attr axis of Pack: 99999999999999999999 is out of the range of int64");
    expect_text_error("a = Placeholder(dtype=float32, shape=[99999999999999999999])\n", TIDE_INVALID_ARGUMENT,
                      "too large for int64");
    expect_text_error("a = Identity(keep, _note=99999999999999999999)\n", TIDE_INVALID_ARGUMENT,
                      "_note: 99999999999999999999 is out of the range of int64");
    tide_error_free(err);
}

/* A tensor literal's shape is checked against its values before anything is allocated: 65 bytes
 * claiming 500,000,000 floats allocated and zeroed 2 GB before, [4000000000] 16 GB. */
static void test_text_tensor_checked_before_allocating(void)
{
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_text_error("z = Const(value=tensor(float32, [500000000], []), dtype=float32)", TIDE_INVALID_ARGUMENT,
                      "tensor(float32, [500000000]) needs 500000000 values, the list holds 0");
    expect_text_error("z = Const(value=tensor(float32, [4000000000], [1, 2]), dtype=float32)",
                      TIDE_INVALID_ARGUMENT, "needs 4000000000 values, the list holds 2");
    expect_text_error("z = Const(value=tensor(complex128, [1000000, 1000000], [1]), dtype=complex128)",
                      TIDE_INVALID_ARGUMENT, "needs 2000000000000 values, the list holds 1");
    expect_text_error("z = Const(value=tensor(string, [100000000], [\"a\"]), dtype=string)",
                      TIDE_INVALID_ARGUMENT, "needs 100000000 values, the list holds 1");
    expect_text_error("z = Const(value=tensor(float32, [4611686018427387904, 4], []), dtype=float32)",
                      TIDE_INVALID_ARGUMENT, "too large");
    expect_text_error("z = Const(value=tensor(float32, [2, ?], []), dtype=float32)", TIDE_INVALID_ARGUMENT,
                      "not fully defined");
    expect_text_error("z = Const(value=tensor(floaty, [1], [1]), dtype=float32)", TIDE_INVALID_ARGUMENT,
                      "'floaty' is not a dtype");
    expect_text_error("z = Const(value=tensor(float32, [1] [1]), dtype=float32)", TIDE_INVALID_ARGUMENT,
                      "expected tensor(DTYPE, [dims], [values])");
    getrusage(RUSAGE_SELF, &after);
    double seconds = seconds_since(&t0);
    long grown_kb = after.ru_maxrss - before.ru_maxrss;
    printf("\n  (refused in %.3f s; peak memory grew %ld KiB) ", seconds, grown_kb);
    CU_ASSERT(seconds < 1.0);
    CU_ASSERT(grown_kb < 64 * 1024);
    /* The values really are read: every dtype, and strings with escapes. */
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_graph_extend_text(g, "s = Const(value=tensor(string, [2], [\"a\\\"b\", \"\\x00c\"]), "
                                                    "dtype=string)\n", err), TIDE_OK);
    size_t len;
    tide_tensor *s = NULL;
    CU_ASSERT_FATAL(tide_attrs_get_tensor(tide_node_attrs(tide_graph_node(g, "s")), "value", &s));
    CU_ASSERT(!strcmp(tide_tensor_string_get(s, 0, &len), "a\"b") && len == 3);
    CU_ASSERT(tide_tensor_string_get(s, 1, &len)[1] == 'c' && len == 2);
    tide_graph_free(g);
    tide_error_free(err);
}

/* `n` Identity nodes chained from a Const, written in the order order[] gives (a permutation of
 * 0..n, where 0 is the Const): node i reads node i-1. The caller frees the text. */
static char *chain_text(int n, const int *order)
{
    size_t cap = (size_t)(n + 1) * 40, len = 0;
    char *text = malloc(cap);
    for (int k = 0; k <= n; k++) {
        int i = order[k];
        if (i == 0)
            len += (size_t)snprintf(text + len, cap - len, "n0 = Const(value=tensor(float32, [], [1.5]), dtype=float32)\n");
        else
            len += (size_t)snprintf(text + len, cap - len, "n%d = Identity(n%d)\n", i, i - 1);
    }
    return text;
}

/* A million nodes in reverse dependency order, and in a random order, load (the reader recursed once
 * per node and overflowed the stack at 65,000); through a session as well. */
static void test_text_million_nodes(void)
{
    const int n = 1000000;
    int *order = malloc(sizeof *order * (size_t)(n + 1));
    tide_error *err = tide_error_new();
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k <= n; k++)
            order[k] = pass == 0 ? n - k : k;
        if (pass == 1)
            for (int k = n; k > 0; k--) { /* Fisher-Yates, deterministic */
                int j = (int)(th_rand(0, 1) * (k + 1)), tmp = order[k];
                order[k] = order[j];
                order[j] = tmp;
            }
        char *text = chain_text(n, order);
        tide_graph *g = tide_graph_new();
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_t cpu0 = clock();
        tide_status st = pass == 0 ? tide_graph_extend_text(g, text, err) : TIDE_OK;
        tide_engine *engine = NULL;
        tide_session *s = NULL;
        if (pass == 1) { /* the same through tide_session_extend */
            engine = tide_engine_new(NULL, err);
            s = tide_session_new(engine, g, NULL, err);
            st = tide_session_extend(s, text, err);
        }
        printf("\n  (%s order: %d nodes in %.2f s, %.2f s of CPU) ", pass == 0 ? "reverse" : "random", n + 1,
               seconds_since(&t0), (double)(clock() - cpu0) / CLOCKS_PER_SEC);
        if (st != TIDE_OK)
            printf("%s\n", tide_error_message(err));
        CU_ASSERT_EQUAL(st, TIDE_OK);
        CU_ASSERT_EQUAL(tide_graph_num_nodes(g), n + 1);
        char last[32];
        snprintf(last, sizeof last, "n%d", n);
        tide_node *end = tide_graph_node(g, last);
        CU_ASSERT_FATAL(end != NULL);
        CU_ASSERT_STRING_EQUAL(tide_node_name(tide_node_input(end, 0).node), "n999999");
        tide_session_free(s);
        tide_engine_free(engine);
        tide_graph_free(g);
        free(text);
    }
    free(order);
    tide_error_free(err);
}

/* A loop in graph text: NextIteration's output into its Merge is the loop's back edge, the one input
 * that may close a cycle (docs/graph-text-format.md). The Merge is built with a stand-in for it and the
 * loop closed once every node is in. Other cycles, and back edges that cannot close, are errors that
 * leave the graph as it was. */
static void test_text_loops(void)
{
#define LOOP_HEAD                                                                                                     \
    "zero = Const(value=tensor(int32, [], [0]), dtype=int32)\n"                                                     \
    "five = Const(value=tensor(int32, [], [5]), dtype=int32)\n"                                                     \
    "one = Const(value=tensor(int32, [], [1]), dtype=int32)\n"                                                      \
    "enter = Enter(zero, frame_name=\"L\", is_constant=false, parallel_iterations=10)\n"                            \
    "limit = Enter(five, frame_name=\"L\", is_constant=true, parallel_iterations=10)\n"                             \
    "step = Enter(one, frame_name=\"L\", is_constant=true, parallel_iterations=10)\n"
#define LOOP_BODY                                                                                                     \
    "less = Less(merge, limit)\n"                                                                                   \
    "cond = LoopCond(less)\n"                                                                                       \
    "switch = Switch(merge, cond)\n"                                                                                \
    "body = Identity(switch:1)\n"                                                                                   \
    "add = Add(body, step)\n"                                                                                       \
    "done = Exit(switch)\n"
    const char *texts[] = {
        LOOP_HEAD "merge = Merge([enter, next])\n" LOOP_BODY "next = NextIteration(add)\n", /* forward reference */
        "next = NextIteration(add)\n" LOOP_HEAD "merge = Merge([enter, next])\n" LOOP_BODY, /* NextIteration first */
        LOOP_HEAD "merge = Merge([next, enter])\n" LOOP_BODY "next = NextIteration(add)\n", /* the back edge first */
    };
    tide_error *err = tide_error_new();
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        tide_graph *g = tide_graph_new();
        tide_status st = tide_graph_extend_text(g, texts[i], err);
        if (st != TIDE_OK)
            fprintf(stderr, "loop text %zu: %s\n", i, tide_error_message(err));
        CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
        tide_node *merge = tide_graph_node(g, "merge");
        int back = i == 2 ? 0 : 1;
        CU_ASSERT_PTR_EQUAL(tide_node_input(merge, back).node, tide_graph_node(g, "next"));
        CU_ASSERT_PTR_EQUAL(tide_node_input(merge, 1 - back).node, tide_graph_node(g, "enter"));
        tide_session *sess = tide_session_new(th_engine(), g, NULL, NULL);
        tide_tensor *done = gu_fetch(sess, tide_graph_node(g, "done"));
        CU_ASSERT(done && *(int32_t *)tide_tensor_data(done) == 5);
        tide_tensor_release(done);
        tide_session_free(sess);
        tide_graph_free(g);
    }
    tide_error_free(err);
    /* Only back edges: nothing enters the loop. */
    expect_text_error("n = NextIteration(m)\nm = Merge([n, n])\n", TIDE_INVALID_ARGUMENT,
                      "line 2: Merge 'm' has only NextIteration inputs");
    /* A cycle through a NextIteration that does not end in a Merge stays a cycle. */
    expect_text_error("n = NextIteration(x)\nx = Identity(n)\n", TIDE_INVALID_ARGUMENT, "a cycle of 2 nodes");
    expect_text_error("m = Merge([keep, x])\nx = Identity(n)\nn = NextIteration(x)\n", TIDE_INVALID_ARGUMENT,
                      "a cycle of 2 nodes: x -> n -> x");
    /* A back edge of another dtype cannot close the loop: named with the Merge's line. */
    expect_text_error("m = Merge([keep, n])\nn = NextIteration(f)\nf = Const(value=tensor(float32, [], [1]), "
                      "dtype=float32)\n",
                      TIDE_INVALID_ARGUMENT, "line 1: close_loop: Merge 'm' is int32 but NextIteration 'n' is float32");
#undef LOOP_HEAD
#undef LOOP_BODY
}

/* A long cycle is named, elided in the middle; a failure is reported without an error object too. */
static void test_text_cycles_and_no_error_object(void)
{
    enum { N = 100 };
    char *text = malloc(N * 40);
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, N * 40 - len, "c%d = Identity(c%d)\n", i, (i + 1) % N);
    expect_text_error(text, TIDE_INVALID_ARGUMENT, "a cycle of 100 nodes: c0 -> c1 -> c2 -> c3 -> ... -> c97 -> c98 -> c99 -> c0");
    free(text);
    tide_graph *g = tide_graph_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, "a = Const(value=tensor(int32, [], [1]), dtype=float32)\n", NULL),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, "a = Const(value=tensor(int32, [9], []), dtype=int32)\n", NULL),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 0);
    tide_graph_free(g);
}

/* A graph text file: errors name it and the line; NUL bytes and sizes over the cap are refused as
 * they are read (`:load /dev/zero` buffered up to 4 GiB); the cap's option and variable. */
static void test_text_file(void)
{
    char dir[] = "/tmp/tide-test-graph-XXXXXX", path[64], big[64];
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/g.txt", dir);
    snprintf(big, sizeof big, "%s/big.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("# a graph\nb = Identity(a)\na = Const(value=tensor(int32, [], [3]), dtype=int32)\n", f);
    fclose(f);
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, path, 0, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 2);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, path, 0, err), TIDE_ALREADY_EXISTS);
    char want[128];
    snprintf(want, sizeof want, "%s line 3: node name 'a' is already used", path);
    expect_error(err, TIDE_ALREADY_EXISTS, want);
    f = fopen(big, "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "x%d = Const(value=tensor(int32, [], [%d]), dtype=int32)\n", i, i);
    fclose(f);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, big, 1000, err), TIDE_RESOURCE_EXHAUSTED);
    expect_error(err, TIDE_RESOURCE_EXHAUSTED, "more than 1000 bytes, the cap");
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "TIDE_MAX_INPUT_BYTES"));
    setenv("TIDE_MAX_INPUT_BYTES", "2K", 1);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, big, 0, err), TIDE_RESOURCE_EXHAUSTED);
    expect_error(err, TIDE_RESOURCE_EXHAUSTED, "more than 2 KiB");
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, big, 1 << 20, err), TIDE_OK); /* the option wins */
    unsetenv("TIDE_MAX_INPUT_BYTES");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1002);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, "/dev/zero", 0, err), TIDE_INVALID_ARGUMENT);
    expect_error(err, TIDE_INVALID_ARGUMENT, "/dev/zero line 1: a NUL byte");
    CU_ASSERT(seconds_since(&t0) < 1.0);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, dir, 0, err), TIDE_INVALID_ARGUMENT);
    expect_error(err, TIDE_INVALID_ARGUMENT, "directory");
    snprintf(want, sizeof want, "%s/none.txt", dir);
    CU_ASSERT_EQUAL(tide_graph_extend_file(g, want, 0, err), TIDE_NOT_FOUND);
    expect_error(err, TIDE_NOT_FOUND, "none.txt: No such file");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 1002);
    unlink(path);
    unlink(big);
    rmdir(dir);
    tide_graph_free(g);
    tide_error_free(err);
}

/* $TIDE_MAX_INPUT_BYTES: sizes with binary units; anything else is an error naming it. */
static void test_input_max_bytes(void)
{
    static const struct { const char *text; uint64_t bytes; } good[] = {
        {"100", 100},       {"8G", 8ull << 30},  {"512m", 512ull << 20}, {"1KiB", 1024},
        {" 2T ", 2ull << 40}, {"3kb", 3072},     {"18446744073709551615", UINT64_MAX},
    };
    const char *bad[] = {"0", "-1", "1.5G", "lots", "99999999999T", "8 G", "8GG", "99999999999999999999"};
    tide_error *err = tide_error_new();
    uint64_t v = 0;
    unsetenv("TIDE_MAX_INPUT_BYTES");
    CU_ASSERT(tide_input_max_bytes(&v, err) == TIDE_OK && v == TIDE_DEFAULT_MAX_INPUT_BYTES && v == 1ull << 30);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        setenv("TIDE_MAX_INPUT_BYTES", good[i].text, 1);
        CU_ASSERT(tide_input_max_bytes(&v, err) == TIDE_OK && v == good[i].bytes);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TIDE_MAX_INPUT_BYTES", bad[i], 1);
        CU_ASSERT_EQUAL(tide_input_max_bytes(&v, err), TIDE_INVALID_ARGUMENT);
        expect_error(err, TIDE_INVALID_ARGUMENT, "TIDE_MAX_INPUT_BYTES");
    }
    unsetenv("TIDE_MAX_INPUT_BYTES");
    char buf[32];
    CU_ASSERT_STRING_EQUAL(tide_format_bytes(1ull << 30, buf, sizeof buf), "1 GiB");
    CU_ASSERT_STRING_EQUAL(tide_format_bytes(3ull << 20, buf, sizeof buf), "3 MiB");
    CU_ASSERT_STRING_EQUAL(tide_format_bytes(1536, buf, sizeof buf), "1536 bytes");
    CU_ASSERT_STRING_EQUAL(tide_format_bytes(0, buf, sizeof buf), "0 bytes");
    tide_error_free(err);
}

static void test_device_specs(void)
{
    tide_device_spec full, spec;
    CU_ASSERT_EQUAL(tide_device_spec_parse("/job:localhost/replica:0/task:0/device:cpu:0", &full, NULL), TIDE_OK);
    const char *matching[] = {"/cpu:0", "cpu:0", "/device:CPU:*", "/job:localhost", "/task:0", "", "/device:cpu:0"};
    for (size_t i = 0; i < sizeof matching / sizeof *matching; i++) {
        CU_ASSERT_EQUAL(tide_device_spec_parse(matching[i], &spec, NULL), TIDE_OK);
        CU_ASSERT(tide_device_spec_matches(&spec, &full));
    }
    const char *other[] = {"/cpu:1", "/gpu:0", "/job:worker", "/task:1"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        CU_ASSERT_EQUAL(tide_device_spec_parse(other[i], &spec, NULL), TIDE_OK);
        CU_ASSERT(!tide_device_spec_matches(&spec, &full));
    }
    tide_error *err = tide_error_new();
    const char *bad[] = {"/tpu:0", "/cpu:x", "/job:", "/task:-1", "gpu0", "/job:a/bogus:1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CU_ASSERT_EQUAL(tide_device_spec_parse(bad[i], &spec, err), TIDE_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "bad device specification"));
    }
    char buf[128];
    tide_device_spec_parse("/gpu:1", &spec, NULL);
    CU_ASSERT_STRING_EQUAL(tide_device_spec_format(&spec, buf, sizeof buf), "/device:gpu:1");
    /* The short names people read (the views, the run log's queries, the REPL). */
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/job:localhost/replica:0/task:0/device:cpu:1", buf, sizeof buf),
                           "/cpu:1");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/job:worker/replica:0/task:3/device:gpu:0", buf, sizeof buf),
                           "/job:worker/replica:0/task:3/gpu:0");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/job:localhost/replica:0/task:0", buf, sizeof buf), "");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/device:cpu:0", buf, sizeof buf), "/cpu:0");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/cpu:2", buf, sizeof buf), "/cpu:2");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("", buf, sizeof buf), "");
    CU_ASSERT_STRING_EQUAL(tide_device_short_name(NULL, buf, sizeof buf), "");
    char small[4];
    CU_ASSERT_STRING_EQUAL(tide_device_short_name("/job:localhost/replica:0/task:0/device:cpu:1", small,
                                                  sizeof small), "/cp");
    tide_error_free(err);
}

/* tide_graph_rename_node: the REPL names nodes after Lua variables. */
static void test_rename_node(void)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_node *a = gu_scalar_f32(g, "a", 1), *b = gu_scalar_f32(g, "b", 2);
    tide_node *sum = gu_op(g, "Add", NULL, 2, (tide_node *[]){a, b});
    uint64_t v = tide_graph_version(g);
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, sum, "total", err), TIDE_OK);
    CU_ASSERT_STRING_EQUAL(tide_node_name(sum), "total");
    CU_ASSERT_PTR_EQUAL(tide_graph_node(g, "total"), sum);
    CU_ASSERT_PTR_NULL(tide_graph_node(g, "add"));
    CU_ASSERT(tide_graph_version(g) > v);
    /* the old name is free again, the new one taken */
    CU_ASSERT_PTR_NOT_NULL(gu_scalar_f32(g, "add", 3));
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, a, "total", err), TIDE_ALREADY_EXISTS);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "taken"));
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, a, "bad name!", err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, a, "", err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(tide_node_name(a), "a");
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, a, "a", err), TIDE_OK); /* to itself: nothing to do */
    /* the text format sees the new name in inputs too */
    char *text = tide_graph_to_text(g, err);
    CU_ASSERT_PTR_NOT_NULL(text && strstr(text, "total = Add(a, b"));
    free(text);
    /* once run, a node keeps its name (plans and the run log know it) */
    tide_engine *e = tide_engine_new(NULL, err);
    tide_session *s = tide_session_new(e, g, NULL, err);
    tide_output out = {sum, 0};
    tide_tensor *val = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &out, 1, &val, NULL, 0, NULL, err), TIDE_OK);
    tide_tensor_release(val);
    CU_ASSERT_EQUAL(tide_graph_rename_node(g, sum, "later", err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_STRING_EQUAL(tide_node_name(sum), "total");
    tide_session_free(s);
    tide_engine_free(e);
    tide_graph_free(g);
    tide_error_free(err);
}

/* tide_registry_op_info: what bindings generate functions from. */
static void test_op_info(void)
{
    tide_op_info info;
    CU_ASSERT_FALSE(tide_registry_op_info("NoSuchOp", &info));
    CU_ASSERT_FALSE(tide_registry_op_info(NULL, &info));
    CU_ASSERT_TRUE_FATAL(tide_registry_op_info("MatMul", &info));
    CU_ASSERT_STRING_EQUAL(info.name, "MatMul");
    CU_ASSERT_EQUAL(info.num_inputs, 2);
    CU_ASSERT_EQUAL(info.num_outputs, 1);
    CU_ASSERT_STRING_EQUAL(info.inputs[0].name, "a");
    CU_ASSERT_STRING_EQUAL(info.inputs[0].type_attr, "T");
    CU_ASSERT_PTR_NULL(info.inputs[0].number_attr);
    CU_ASSERT_STRING_EQUAL(info.outputs[0].name, "product");
    CU_ASSERT_FALSE(info.stateful);
    CU_ASSERT_PTR_NOT_NULL(strstr(info.signature, "MatMul(a: T, b: T)"));
    int found = 0;
    for (int i = 0; i < info.num_attrs; i++) {
        if (!strcmp(info.attrs[i].name, "T"))
            found += info.attrs[i].type == TIDE_ATTR_TYPE && info.attrs[i].inferred;
        if (!strcmp(info.attrs[i].name, "transpose_a"))
            found += info.attrs[i].type == TIDE_ATTR_BOOL && info.attrs[i].has_default && !info.attrs[i].inferred;
    }
    CU_ASSERT_EQUAL(found, 2);
    CU_ASSERT_TRUE_FATAL(tide_registry_op_info("ConcatV2", &info));
    CU_ASSERT_STRING_EQUAL(info.inputs[0].number_attr, "N");
    CU_ASSERT_EQUAL(info.inputs[1].dtype, TIDE_INVALID_DTYPE);
    CU_ASSERT_TRUE(info.in_tensorflow);
    CU_ASSERT_STRING_EQUAL(info.alias, "concat");
    CU_ASSERT_TRUE_FATAL(tide_registry_op_info("Concat", &info)); /* the legacy one: axis first */
    CU_ASSERT_EQUAL(info.inputs[0].dtype, TIDE_INT32);
    CU_ASSERT_STRING_EQUAL(info.inputs[1].number_attr, "N");
    CU_ASSERT_PTR_NULL(info.alias);
    CU_ASSERT_TRUE_FATAL(tide_registry_op_info("Rank", &info));
    CU_ASSERT_EQUAL(info.outputs[0].dtype, TIDE_INT32);
    CU_ASSERT_TRUE_FATAL(tide_registry_op_info("Assign", &info));
    CU_ASSERT_TRUE(info.inputs[0].is_ref);
    CU_ASSERT_TRUE(tide_registry_op_info("Variable", &info) && info.stateful);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_builder_errors_leave_graph_unchanged), TH_TEST(test_names_and_scopes),
        TH_TEST(test_shape_inference_at_build), TH_TEST(test_rollback), TH_TEST(test_text_round_trip),
        TH_TEST(test_text_annotations_of_every_kind), TH_TEST(test_text_float_values_round_trip),
        TH_TEST(test_shape_values_folded), TH_TEST(test_text_errors), TH_TEST(test_text_number_limits),
        TH_TEST(test_text_tensor_checked_before_allocating), TH_TEST(test_text_million_nodes),
        TH_TEST(test_text_cycles_and_no_error_object), TH_TEST(test_text_loops), TH_TEST(test_text_file), TH_TEST(test_input_max_bytes),
        TH_TEST(test_device_specs), TH_TEST(test_rename_node),
        TH_TEST(test_op_info), TH_END};
    return th_main("graph", tests);
}
