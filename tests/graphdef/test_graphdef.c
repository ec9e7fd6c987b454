/* test_graphdef.c — TensorFlow GraphDef import and export (engine/graphdef/): round trips of tide graphs
 * through both encodings; GraphDefs written the way TensorFlow writes them (tests/graphdef/data: text
 * by hand, binary encoded from the text by protoc at build time) import and compute what they should;
 * every tensor encoding and attr kind; scopes and input maps; and the errors (unknown ops in one
 * message, malformed files, cycles, bad inputs) with the graph left unchanged.
 *
 * The data files are found in $TIDE_GRAPHDEF_DATA (the source folder) and $TIDE_GRAPHDEF_BUILT (the
 * encoded .pb files), set by tests/graphdef/meson.build. */
#include <math.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tide_graphdef.h"

/* ---------------------------------------------------------------- helpers */

#define CONST_F32(name) "node { name: \"" name "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } " \
                        "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }\n"

static char *data_path(const char *name)
{
    const char *dir = getenv(strstr(name, ".pbtxt") ? "TIDE_GRAPHDEF_DATA" : "TIDE_GRAPHDEF_BUILT");
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir ? dir : ".", name) < 0)
        abort();
    return path;
}

static void expect_message(tide_error *err, const char *needle)
{
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", tide_error_message(err), needle);
        CU_FAIL("error message");
    }
}

/* Imports a data file into g; asserts success (printing the message otherwise). */
static void import_ok(tide_graph *g, const char *file, const tide_graphdef_import_options *opts)
{
    char *path = data_path(file);
    tide_error *err = tide_error_new();
    tide_status st = tide_graphdef_import_file(g, path, opts, err);
    if (st != TIDE_OK)
        fprintf(stderr, "importing %s: %s\n", path, tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_error_free(err);
    free(path);
}

/* Imports text (a .pbtxt in memory) into g, expecting failure with needle in the message and the graph
 * unchanged. */
static void import_fails(tide_graph *g, const char *text, const tide_graphdef_import_options *opts,
                         const char *needle)
{
    char *before = tide_graph_to_text(g, NULL);
    tide_error *err = tide_error_new();
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    if (opts)
        o = *opts;
    if (o.format == TIDE_GRAPHDEF_AUTO)
        o.format = TIDE_GRAPHDEF_TEXT;
    CU_ASSERT_NOT_EQUAL(tide_graphdef_import(g, text, strlen(text), "test.pbtxt", &o, err), TIDE_OK);
    expect_message(err, needle);
    char *after = tide_graph_to_text(g, NULL);
    CU_ASSERT_STRING_EQUAL(before, after);
    free(before);
    free(after);
    tide_error_free(err);
}

/* Runs `fetch` of g with x fed (when x_name is not NULL). */
static tide_tensor *run_fetch(tide_graph *g, const char *target, const char *x_name, tide_tensor *x,
                              const char *fetch)
{
    tide_error *err = tide_error_new();
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_node *init = target ? tide_graph_node(g, target) : NULL;
    if (init && tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK)
        fprintf(stderr, "running %s: %s\n", target, tide_error_message(err));
    tide_feed feed = {{NULL, 0}, x};
    if (x_name)
        CU_ASSERT_EQUAL(tide_graph_output(g, x_name, &feed.output, err), TIDE_OK);
    tide_output out;
    tide_tensor *value = NULL;
    CU_ASSERT_EQUAL_FATAL(tide_graph_output(g, fetch, &out, err), TIDE_OK);
    if (tide_session_run(s, NULL, &feed, x_name ? 1 : 0, &out, 1, &value, NULL, 0, NULL, err) != TIDE_OK)
        fprintf(stderr, "running %s: %s\n", fetch, tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(value);
    tide_session_free(s);
    tide_error_free(err);
    return value;
}

/* ---------------------------------------------------------------- round trips */

/* A graph with most of what tide graphs hold: variables and their initializers, a training step (the
 * gradients and Adam's slots), list inputs, several outputs, control inputs, devices, colocation and
 * the other annotations, attrs of every type tide has. */
static tide_graph *rich_graph(void)
{
    tide_graph *g = th_graph_of(
        "x = Placeholder(dtype=float32, shape=[?, 3])\n"
        "labels = Placeholder(dtype=int32, shape=[?])\n"
        "W/initial_value = Const(value=tensor(float32, [3, 4], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]), dtype=float32)\n"
        "any = Placeholder(dtype=string, shape=*)\n"
        "words = Const(value=tensor(string, [2], [\"a\\nb\", \"\\xff\\x00z\"]), dtype=string)\n"
        "h = Const(value=tensor(float16, [2], [1.5, -2.0]), dtype=float16)\n"
        "bh = Const(value=tensor(bfloat16, [], [3.0]), dtype=bfloat16)\n"
        "c = Const(value=tensor(complex64, [1], [1.0, -2.5]), dtype=complex64)\n"
        "flags = Const(value=tensor(bool, [3], [true, false, true]), dtype=bool)\n"
        "big = Const(value=tensor(int64, [2], [9007199254740993, -1]), dtype=int64)\n"
        "u = Const(value=tensor(uint16, [], [65535]), dtype=uint16)\n"
        "split = Split(axis_c, W/initial_value, num_split=2, T=float32)\n"
        "axis_c = Const(value=tensor(int32, [], [1]), dtype=int32)\n"
        "joined = ConcatV2([split, split:1], axis_c, N=2, T=float32, Tidx=int32)\n"
        "cast = Cast(joined, SrcT=float32, DstT=float64, Truncate=false)\n"
        "neg = Neg(x, ^joined) @\"/cpu:0\"\n"
        "p = Pack([x, neg], axis=-1, N=2, T=float32) @\"/job:localhost/replica:0/task:0/device:cpu:0\"\n"
        "dims = Const(value=tensor(int32, [2], [2, 3]), dtype=int32)\n"
        "noise = RandomNormal(dims, dtype=float32, seed=1, seed2=2)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_error *err = tide_error_new();
    tide_output init_value;
    CU_ASSERT_EQUAL(tide_graph_output(g, "W/initial_value", &init_value, err), TIDE_OK);
    tide_node *W = tide_variable_new(g, "W", init_value, true, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(W);
    tide_node_builder *b = tide_node_builder_new(g, "MatMul", "logits");
    tide_node_builder_add_input(b, (tide_output){tide_graph_node(g, "x"), 0});
    tide_node_builder_add_input(b, (tide_output){W, 0});
    tide_attrs_set_bool(tide_node_builder_attrs(b), "transpose_b", false);
    tide_attrs_set_string(tide_node_builder_attrs(b), "_colocate_with", "W");
    tide_attrs_set_float(tide_node_builder_attrs(b), "_scale", 0.1);
    tide_attrs_set_int(tide_node_builder_attrs(b), "_mark", -7);
    tide_node *logits = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(logits);
    b = tide_node_builder_new(g, "SparseSoftmaxCrossEntropyWithLogits", "xent");
    tide_node_builder_add_input(b, (tide_output){logits, 0});
    tide_node_builder_add_input(b, (tide_output){tide_graph_node(g, "labels"), 0});
    tide_node *xent = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(xent);
    b = tide_node_builder_new(g, "Mean", "loss");
    tide_node_builder_add_input(b, (tide_output){xent, 0});
    int32_t zero = 0;
    tide_node_builder *axes = tide_node_builder_new(g, "Const", "axes");
    tide_tensor *zt = th_i32(1, TH_DIMS(1), &zero);
    tide_attrs_set_tensor(tide_node_builder_attrs(axes), "value", zt);
    tide_attrs_set_type(tide_node_builder_attrs(axes), "dtype", TIDE_INT32);
    tide_tensor_release(zt);
    tide_node_builder_add_input(b, (tide_output){tide_node_builder_finish(axes, err), 0});
    tide_node *loss = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(loss);
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    CU_ASSERT_PTR_NOT_NULL(tide_optimizer_minimize(g, &opt, (tide_output){loss, 0}, NULL, 0, tide_global_step(g, err),
                                                   err));
    CU_ASSERT_PTR_NOT_NULL(tide_global_variables_initializer(g, err));
    if (tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "rich_graph: %s\n", tide_error_message(err));
    tide_error_free(err);
    return g;
}

static void round_trip(tide_graphdef_format format, bool shapes)
{
    tide_graph *g = rich_graph();
    tide_error *err = tide_error_new();
    tide_graphdef_export_options eo;
    tide_graphdef_export_options_init(&eo);
    eo.format = format;
    eo.output_shapes = shapes;
    void *data = NULL;
    size_t size = 0;
    CU_ASSERT_EQUAL_FATAL(tide_graphdef_export(g, &eo, &data, &size, err), TIDE_OK);
    CU_ASSERT(size > 1000);
    tide_graph *back = tide_graph_new();
    tide_graphdef_import_options io;
    tide_graphdef_import_options_init(&io);
    io.format = format;
    tide_status st = tide_graphdef_import(back, data, size, "exported", &io, err);
    if (st != TIDE_OK)
        fprintf(stderr, "re-import: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    char *want = tide_graph_to_text(g, err), *got = tide_graph_to_text(back, err);
    CU_ASSERT_FATAL(want && got);
    if (want && got && strcmp(want, got) != 0)
        fprintf(stderr, "--- tide\n%s\n--- after the GraphDef\n%s\n", want, got);
    CU_ASSERT_STRING_EQUAL(got ? got : "", want ? want : "");
    CU_ASSERT(tide_graph_num_nodes(g) > 60);
    free(want);
    free(got);
    free(data);
    tide_graph_free(back);
    tide_graph_free(g);
    tide_error_free(err);
}

static void test_round_trip_binary(void) { round_trip(TIDE_GRAPHDEF_BINARY, true); }
static void test_round_trip_text(void) { round_trip(TIDE_GRAPHDEF_TEXT, true); }
static void test_round_trip_without_shapes(void) { round_trip(TIDE_GRAPHDEF_BINARY, false); }

/* The exported text is what TensorFlow writes: its op names and attr layout. */
static void test_export_conventions(void)
{
    tide_graph *g = rich_graph();
    tide_graphdef_export_options eo;
    tide_graphdef_export_options_init(&eo);
    eo.format = TIDE_GRAPHDEF_TEXT;
    void *data = NULL;
    size_t size = 0;
    CU_ASSERT_EQUAL_FATAL(tide_graphdef_export(g, &eo, &data, &size, NULL), TIDE_OK);
    const char *text = data;
    CU_ASSERT_EQUAL(strlen(text), size);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "op: \"VariableV2\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "op: \"RandomStandardNormal\""));
    CU_ASSERT_PTR_NULL(strstr(text, "op: \"RandomNormal\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "versions {\n  producer: 27\n}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "input: \"^joined\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "input: \"split:1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "key: \"_class\"\n    value {\n      list {\n        s: \"loc:@W\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "key: \"_output_shapes\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "device: \"/cpu:0\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "type: DT_HALF"));
    /* A matrix in tensor_content, a scalar in its value field. */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "tensor_content: \"\\315\\314\\314=")); /* 0.1f, little-endian */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "int_val: 65535"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "half_val: 16448")); /* bfloat16 3.0 = 0x4040 */
    /* Attr entries sorted by key, as TensorFlow writes them. */
    const char *t = strstr(text, "name: \"logits\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    const char *k1 = strstr(t, "key: \"T\""), *k2 = strstr(t, "key: \"_class\""), *k3 = strstr(t, "key: \"transpose_a\"");
    CU_ASSERT(k1 && k2 && k3 && k1 < k2 && k2 < k3);
    free(data);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- GraphDefs as TensorFlow writes them */

static void check_mlp(tide_graph *g, const char *prefix)
{
    char init[64], x[64], y[64];
    snprintf(init, sizeof init, "%sinit", prefix);
    snprintf(x, sizeof x, "%sx", prefix);
    snprintf(y, sizeof y, "%sy", prefix);
    float xv[] = {1, 2, 3};
    tide_tensor *xt = th_f32(2, TH_DIMS(1, 3), xv);
    tide_tensor *got = run_fetch(g, init, x, xt, y);
    /* x W = [7, -4]; + b = [7.5, -4.5]; relu = [7.5, 0]; softmax */
    float e = expf(7.5f);
    float want_v[] = {e / (e + 1), 1 / (e + 1)};
    tide_tensor *want = th_f32(2, TH_DIMS(1, 2), want_v);
    if (got)
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-7);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(xt);
}

static void test_import_tf_text(void)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, "mlp.pbtxt", NULL);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 14);
    tide_node *W = tide_graph_node(g, "W");
    CU_ASSERT_PTR_NOT_NULL_FATAL(W);
    CU_ASSERT_STRING_EQUAL(tide_node_op(W), "Variable");
    const char *coloc = NULL;
    CU_ASSERT(tide_attrs_get_string(tide_node_attrs(tide_graph_node(g, "W/read")), "_colocate_with", &coloc));
    CU_ASSERT_STRING_EQUAL(coloc ? coloc : "", "W");
    CU_ASSERT_EQUAL(tide_node_num_control_inputs(tide_graph_node(g, "init")), 2);
    check_mlp(g, "");
    tide_graph_free(g);
}

static void test_import_tf_binary(void)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, "mlp.pb", NULL);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 14);
    check_mlp(g, "");
    /* The same graph as from the text. */
    tide_graph *t = tide_graph_new();
    import_ok(t, "mlp.pbtxt", NULL);
    char *a = tide_graph_to_text(g, NULL), *b = tide_graph_to_text(t, NULL);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
    tide_graph_free(t);
    tide_graph_free(g);
}

/* tf.import_graph_def(graph_def, input_map={"x:0": z}, name="net") */
static void test_import_scope_and_input_map(void)
{
    tide_graph *g = th_graph_of("z = Const(value=tensor(float32, [1, 3], [1, 2, 3]), dtype=float32)\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    tide_graphdef_mapping map[] = {{"x:0", {tide_graph_node(g, "z"), 0}}};
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.scope = "net";
    o.input_map = map;
    o.num_input_map = 1;
    import_ok(g, "mlp.pbtxt", &o);
    CU_ASSERT_PTR_NOT_NULL(tide_graph_node(g, "net/W/read"));
    CU_ASSERT_PTR_NULL(tide_graph_node(g, "W"));
    tide_node *mm = tide_graph_node(g, "net/MatMul");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mm);
    CU_ASSERT_STRING_EQUAL(tide_node_name(tide_node_input(mm, 0).node), "z");
    const char *coloc = NULL;
    tide_attrs_get_string(tide_node_attrs(tide_graph_node(g, "net/W/Assign")), "_colocate_with", &coloc);
    CU_ASSERT_STRING_EQUAL(coloc ? coloc : "", "net/W");
    /* No feed: x's uses read z. */
    tide_tensor *got = run_fetch(g, "net/init", NULL, NULL, "net/y");
    float e = expf(7.5f);
    float want_v[] = {e / (e + 1), 1 / (e + 1)};
    tide_tensor *want = th_f32(2, TH_DIMS(1, 2), want_v);
    if (got)
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-7);
    tide_tensor_release(got);
    tide_tensor_release(want);
    /* The same GraphDef again in the same scope: the names are taken, nothing is added. */
    int before = tide_graph_num_nodes(g);
    char *path = data_path("mlp.pbtxt");
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, path, &o, err), TIDE_ALREADY_EXISTS);
    expect_message(err, "node name 'net/");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), before);
    /* Under the graph's own scope as well. */
    tide_graph_push_scope(g, "outer");
    o.num_input_map = 0;
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, path, &o, err), TIDE_OK);
    tide_graph_pop_scope(g);
    coloc = NULL;
    tide_attrs_get_string(tide_node_attrs(tide_graph_node(g, "outer/net/W/read")), "_colocate_with", &coloc);
    CU_ASSERT_STRING_EQUAL(coloc ? coloc : "", "outer/net/W");
    check_mlp(g, "outer/net/");
    free(path);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_input_map_errors(void)
{
    tide_graph *g = th_graph_of("z = Const(value=tensor(float32, [1, 3], [1, 2, 3]), dtype=float32)\n"
                                "i = Const(value=tensor(int32, [1, 3], [1, 2, 3]), dtype=int32)\n");
    char *path = data_path("mlp.pbtxt");
    tide_error *err = tide_error_new();
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    tide_graphdef_mapping map[1] = {{"nothere:0", {tide_graph_node(g, "z"), 0}}};
    o.input_map = map;
    o.num_input_map = 1;
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, path, &o, err), TIDE_NOT_FOUND);
    expect_message(err, "input map entry 'nothere:0': the GraphDef has no node 'nothere'");
    map[0] = (tide_graphdef_mapping){"x:0", {tide_graph_node(g, "i"), 0}};
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, path, &o, err), TIDE_INVALID_ARGUMENT);
    expect_message(err, "node 'MatMul' (MatMul): input 'a' has dtype int32, expected float32");
    map[0] = (tide_graphdef_mapping){"x:zero", {tide_graph_node(g, "z"), 0}};
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, path, &o, err), TIDE_INVALID_ARGUMENT);
    expect_message(err, "input map entry 'x:zero' is not a tensor");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 2);
    free(path);
    tide_error_free(err);
    tide_graph_free(g);
}


/* ---------------------------------------------------------------- a TensorFlow-written CNN */

/* data/cnn.pbtxt's network, computed here in plain C: reshape to [1, 4, 4, 1], a 2x2 convolution with
 * TensorFlow's SAME padding (the extra row and column after), bias, relu, 2x2 max pooling, flatten,
 * the flat vector concatenated with itself, a [16, 3] dense layer, softmax. */
static void reference_cnn(const float *x, float *probs, float *relu)
{
    const float kernel[2][2][2] = {{{0.5f, -1.0f}, {0.25f, 0.0f}}, {{-0.5f, 1.0f}, {1.0f, 0.5f}}};
    const float bias[2] = {0.1f, -0.2f};
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            for (int o = 0; o < 2; o++) {
                float sum = bias[o];
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2; j++)
                        if (r + i < 4 && c + j < 4)
                            sum += x[(r + i) * 4 + c + j] * kernel[i][j][o];
                relu[(r * 4 + c) * 2 + o] = sum > 0 ? sum : 0;
            }
    float flat[16];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++)
            for (int o = 0; o < 2; o++) {
                float m = relu[((2 * r) * 4 + 2 * c) * 2 + o];
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2; j++)
                        if (relu[((2 * r + i) * 4 + 2 * c + j) * 2 + o] > m)
                            m = relu[((2 * r + i) * 4 + 2 * c + j) * 2 + o];
                flat[(r * 2 + c) * 2 + o] = flat[8 + (r * 2 + c) * 2 + o] = m;
            }
    double logits[3], total = 0;
    for (int k = 0; k < 3; k++) {
        logits[k] = 0;
        for (int i = 0; i < 16; i++)
            logits[k] += flat[i] * ((((i * 3 + k) * 7) % 5 - 2) * 0.25); /* the dense kernel, as the data writes it */
    }
    for (int k = 0; k < 3; k++)
        total += exp(logits[k]);
    for (int k = 0; k < 3; k++)
        probs[k] = (float)(exp(logits[k]) / total);
}

static void check_tf_cnn(const char *file)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, file, NULL);
    CU_ASSERT_STRING_EQUAL(tide_node_op(tide_graph_node(g, "conv/kernel")), "Variable");
    const float x[16] = {1, 2, 0, -1, 0, 1, 3, 2, -2, 0, 1, 1, 4, -1, 0, 2};
    float probs[3], relu[32];
    reference_cnn(x, probs, relu);
    tide_tensor *xt = th_f32(2, TH_DIMS(1, 16), x);
    tide_tensor *got = run_fetch(g, "init", "x", xt, "probs"), *want = th_f32(2, TH_DIMS(1, 3), probs);
    if (got)
        TH_ASSERT_CLOSE(got, want, 1e-5, 1e-6);
    tide_tensor_release(got);
    tide_tensor_release(want);
    got = run_fetch(g, NULL, "x", xt, "conv/Relu");
    want = th_f32(4, TH_DIMS(1, 4, 4, 2), relu);
    if (got)
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-6);
    tide_tensor_release(got);
    tide_tensor_release(want);
    int best = probs[0] > probs[1] ? (probs[0] > probs[2] ? 0 : 2) : (probs[1] > probs[2] ? 1 : 2);
    got = run_fetch(g, NULL, "x", xt, "ArgMax");
    if (got) {
        CU_ASSERT_EQUAL(tide_tensor_dtype(got), TIDE_INT64);
        CU_ASSERT_EQUAL(((const int64_t *)tide_tensor_data(got))[0], best);
    }
    tide_tensor_release(got);
    got = run_fetch(g, NULL, "x", xt, "Mean"); /* keep_dims: [1, 1], a third */
    if (got) {
        TH_ASSERT_SHAPE(got, 2, TH_DIMS(1, 1));
        CU_ASSERT_DOUBLE_EQUAL(tide_tensor_get_f64(got, 0), 1.0 / 3, 1e-6);
    }
    tide_tensor_release(got);
    got = run_fetch(g, NULL, "x", xt, "strided_slice"); /* tf.shape(x)[0]: the batch size */
    if (got) {
        CU_ASSERT_EQUAL(tide_tensor_rank(got), 0);
        CU_ASSERT_EQUAL(tide_tensor_get_f64(got, 0), 1);
    }
    tide_tensor_release(got);
    tide_tensor_release(xt);
    tide_graph_free(g);
}

static void test_tf_cnn_text(void) { check_tf_cnn("cnn.pbtxt"); }
static void test_tf_cnn_binary(void) { check_tf_cnn("cnn.pb"); }

/* ---------------------------------------------------------------- tensor encodings and attr kinds */

static tide_tensor *fetch(tide_graph *g, const char *name)
{
    return run_fetch(g, NULL, NULL, NULL, name);
}

static void expect_values(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims,
                          const double *v, double imag)
{
    tide_tensor *got = fetch(g, name), *want = th_from_doubles(dt, rank, dims, v, imag);
    if (got) {
        if (!tide_tensor_equal(got, want, true))
            fprintf(stderr, "%s differs\n", name);
        TH_ASSERT_CLOSE(got, want, 0, 0);
    }
    tide_tensor_release(got);
    tide_tensor_release(want);
}

static void expect_strings(tide_graph *g, const char *name, int n, const char *const *want, const size_t *lens)
{
    tide_tensor *got = fetch(g, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL(tide_tensor_num_elements(got), n);
    for (int i = 0; i < n && i < tide_tensor_num_elements(got); i++) {
        size_t len;
        const char *s = tide_tensor_string_get(got, i, &len);
        CU_ASSERT_EQUAL(len, lens[i]);
        CU_ASSERT(len == lens[i] && memcmp(s, want[i], len) == 0);
    }
    tide_tensor_release(got);
}

static void check_encodings(const char *file)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, file, NULL);
    expect_values(g, "f32_content", TIDE_FLOAT32, 2, TH_DIMS(2, 2), (double[]){1.5, -2, 0.25, 1e-3f}, 0);
    expect_values(g, "f32_vals", TIDE_FLOAT32, 1, TH_DIMS(3), (double[]){1, -2.5, 3e38f}, 0);
    expect_values(g, "f32_fill", TIDE_FLOAT32, 2, TH_DIMS(2, 3), (double[]){7, 7, 7, 7, 7, 7}, 0);
    expect_values(g, "f32_last", TIDE_FLOAT32, 1, TH_DIMS(4), (double[]){1, 2, 2, 2}, 0);
    expect_values(g, "f32_zeros", TIDE_FLOAT32, 1, TH_DIMS(2), (double[]){0, 0}, 0);
    expect_values(g, "f32_scalar", TIDE_FLOAT32, 0, NULL, (double[]){0.5}, 0);
    expect_values(g, "f64_vals", TIDE_FLOAT64, 1, TH_DIMS(2), (double[]){0.1, -1e-300}, 0);
    expect_values(g, "i32_vals", TIDE_INT32, 1, TH_DIMS(3), (double[]){-2147483648.0, 0, 2147483647}, 0);
    expect_values(g, "i16_vals", TIDE_INT16, 1, TH_DIMS(2), (double[]){-32768, 32767}, 0);
    expect_values(g, "i8_vals", TIDE_INT8, 1, TH_DIMS(2), (double[]){-128, 127}, 0);
    expect_values(g, "u8_vals", TIDE_UINT8, 1, TH_DIMS(3), (double[]){255, 0, 0}, 0);
    expect_values(g, "u16_content", TIDE_UINT16, 1, TH_DIMS(2), (double[]){65535, 1}, 0);
    tide_tensor *big = fetch(g, "i64_vals");
    if (big) {
        const int64_t *v = tide_tensor_data(big);
        CU_ASSERT_EQUAL(v[0], 9007199254740993LL);
        CU_ASSERT_EQUAL(v[1], INT64_MIN);
    }
    tide_tensor_release(big);
    expect_values(g, "i64_content", TIDE_INT64, 1, TH_DIMS(2), (double[]){-5, 1099511627776.0}, 0);
    expect_values(g, "bool_vals", TIDE_BOOL, 1, TH_DIMS(3), (double[]){1, 0, 0}, 0);
    expect_values(g, "bool_content", TIDE_BOOL, 1, TH_DIMS(2), (double[]){1, 0}, 0);
    expect_values(g, "half_vals", TIDE_FLOAT16, 1, TH_DIMS(2), (double[]){1.5, -2}, 0);
    expect_values(g, "half_content", TIDE_FLOAT16, 1, TH_DIMS(1), (double[]){1}, 0);
    expect_values(g, "bf16_vals", TIDE_BFLOAT16, 1, TH_DIMS(2), (double[]){3, -1}, 0);
    tide_tensor *c = fetch(g, "c64_vals");
    if (c) {
        const float *v = tide_tensor_data(c);
        CU_ASSERT(v[0] == 1 && v[1] == -2 && v[2] == 0.5f && v[3] == 4);
    }
    tide_tensor_release(c);
    expect_values(g, "c64_fill", TIDE_COMPLEX64, 1, TH_DIMS(3), (double[]){1, 1, 1}, 2);
    c = fetch(g, "c128_vals");
    if (c) {
        const double *v = tide_tensor_data(c);
        CU_ASSERT(v[0] == 0.1 && v[1] == -0.2);
    }
    tide_tensor_release(c);
    expect_strings(g, "str_vals", 3, (const char *const[]){"tide", "\xff\0z", ""}, (size_t[]){4, 3, 0});
    expect_strings(g, "str_fill", 2, (const char *const[]){"same", "same"}, (size_t[]){4, 4});
    expect_strings(g, "str_content", 2, (const char *const[]){"ab", "\0yz"}, (size_t[]){2, 3});
    tide_tensor *e = fetch(g, "empty");
    if (e)
        TH_ASSERT_SHAPE(e, 2, TH_DIMS(0, 3));
    tide_tensor_release(e);
    tide_graph_free(g);
}

static void test_tensor_encodings_text(void) { check_encodings("encodings.pbtxt"); }
static void test_tensor_encodings_binary(void) { check_encodings("encodings.pb"); }

static void check_attr_kinds(const char *file)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, file, NULL);
    expect_values(g, "mm", TIDE_FLOAT32, 2, TH_DIMS(2, 2), (double[]){1, 3, 3, 7}, 0);
    expect_values(g, "cast", TIDE_INT32, 2, TH_DIMS(2, 2), (double[]){1, 3, 3, 7}, 0);
    expect_values(g, "pack", TIDE_FLOAT32, 3, TH_DIMS(2, 2, 2), (double[]){1, 2, 1, 0, 3, 4, 1, 1}, 0);
    expect_values(g, "pool", TIDE_FLOAT32, 4, TH_DIMS(1, 1, 1, 1), (double[]){5}, 0);
    double r = 1 / sqrt(1.25);
    tide_tensor *bn = fetch(g, "bn"), *want = th_f32(2, TH_DIMS(1, 2), (float[]){(float)(r + 1), (float)(1 - r)});
    if (bn)
        TH_ASSERT_CLOSE(bn, want, 1e-6, 1e-6);
    tide_tensor_release(bn);
    tide_tensor_release(want);
    double eps = 0;
    CU_ASSERT(tide_attrs_get_float(tide_node_attrs(tide_graph_node(g, "bn")), "epsilon", &eps) && eps == 0.25);
    th_assert_output_shape(g, "x", 0, 2, TH_DIMS(-1, 2));
    tide_shape s = tide_node_output_shape(tide_graph_node(g, "anything"), 0);
    CU_ASSERT_EQUAL(s.rank, -1);
    th_assert_output_shape(g, "scalar", 0, 0, NULL);

    const tide_attrs *a = tide_node_attrs(tide_graph_node(g, "marked"));
    int64_t i = 0;
    double f = 0;
    bool b = false;
    const char *str = NULL;
    tide_dtype dt = TIDE_INVALID_DTYPE;
    tide_tensor *t = NULL;
    CU_ASSERT(tide_attrs_get_int(a, "_count", &i) && i == -3);
    CU_ASSERT(tide_attrs_get_float(a, "_ratio", &f) && f == 0.1); /* the float 0.1f reads as the double 0.1 */
    CU_ASSERT(tide_attrs_get_bool(a, "_flag", &b) && b);
    CU_ASSERT(tide_attrs_get_string(a, "_label", &str) && strcmp(str, "tide \"graph\"\n") == 0);
    CU_ASSERT(tide_attrs_get_type(a, "_dt", &dt) && dt == TIDE_FLOAT16);
    CU_ASSERT(tide_attrs_get_shape(a, "_shape", &s) && s.rank == 2 && s.dims[0] == 3 && s.dims[1] == -1);
    CU_ASSERT(tide_attrs_get_tensor(a, "_t", &t) && t && tide_tensor_num_elements(t) == 2 &&
              ((const int32_t *)tide_tensor_data(t))[1] == 4);
    const int64_t *ints;
    const double *floats;
    const tide_dtype *types;
    int n = 0;
    CU_ASSERT(tide_attrs_get_int_list(a, "_ints", &ints, &n) && n == 2 && ints[1] == -1);
    CU_ASSERT(tide_attrs_get_float_list(a, "_weights", &floats, &n) && n == 2 && floats[0] == 0.5 && floats[1] == 0.1);
    CU_ASSERT(tide_attrs_get_type_list(a, "_types", &types, &n) && n == 2 && types[0] == TIDE_FLOAT32 &&
              types[1] == TIDE_INT64);
    CU_ASSERT(tide_attrs_get_int_list(a, "_none", &ints, &n) && n == 0);
    const char *const *names;
    const bool *bits;
    const tide_shape *shapes;
    tide_tensor *const *tensors;
    CU_ASSERT(tide_attrs_get_string_list(a, "_names", &names, &n) && n == 2 && strcmp(names[0], "a") == 0 &&
              strcmp(names[1], "\xc3\xa9t\xc3\xa9") == 0);
    CU_ASSERT(tide_attrs_get_bool_list(a, "_bits", &bits, &n) && n == 3 && bits[0] && !bits[1] && bits[2]);
    CU_ASSERT(tide_attrs_get_shape_list(a, "_shapes", &shapes, &n) && n == 3 && shapes[0].rank == 1 &&
              shapes[0].dims[0] == 2 && shapes[1].rank == -1 && shapes[2].rank == 0);
    CU_ASSERT_FATAL(tide_attrs_get_tensor_list(a, "_tensors", &tensors, &n) && n == 2);
    size_t len = 0;
    CU_ASSERT(tide_tensor_dtype(tensors[0]) == TIDE_STRING && tide_tensor_rank(tensors[0]) == 0 &&
              memcmp(tide_tensor_string_get(tensors[0], 0, &len), "x", 1) == 0 && len == 1);
    CU_ASSERT(tide_tensor_num_elements(tensors[1]) == 3 && ((const int64_t *)tide_tensor_data(tensors[1]))[2] == 7);

    /* The graph text holds every kind, and reads back as the same graph (:save, then :load). */
    char *text = tide_graph_to_text(g, NULL);
    tide_graph *again = th_graph_of(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    char *text2 = tide_graph_to_text(again, NULL);
    CU_ASSERT_STRING_EQUAL(text2, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "_shapes=[[2], *, []]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "_tensors=[tensor(string, [], [\"x\"]), tensor(int64, [3], [7, 7, 7])]"));
    const tide_attrs *read = tide_node_attrs(tide_graph_node(again, "marked"));
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_bits"), TIDE_ATTR_BOOL_LIST);
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_shapes"), TIDE_ATTR_SHAPE_LIST);
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_names"), TIDE_ATTR_STRING_LIST);
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_dt"), TIDE_ATTR_TYPE);
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_shape"), TIDE_ATTR_SHAPE);
    CU_ASSERT_EQUAL(tide_attrs_type(read, "_weights"), TIDE_ATTR_FLOAT_LIST);
    free(text);
    free(text2);
    tide_graph_free(again);
    tide_graph_free(g);
}

static void test_attr_kinds_text(void) { check_attr_kinds("attrs.pbtxt"); }
static void test_attr_kinds_binary(void) { check_attr_kinds("attrs.pb"); }

/* ---------------------------------------------------------------- control flow */

/* A TensorFlow 1.x while_loop (Enter, Merge with its back edge, LoopCond, Switch, NextIteration, Exit)
 * and a cond on its result (Switch, pivots, Merge) import and run; exported and imported again they are
 * the same graph. */
static void check_while_loop(const char *file)
{
    tide_graph *g = tide_graph_new();
    import_ok(g, file, NULL);
    tide_node *merge = tide_graph_node(g, "while/Merge");
    CU_ASSERT_PTR_NOT_NULL_FATAL(merge);
    CU_ASSERT_STRING_EQUAL(tide_node_name(tide_node_input(merge, 1).node), "while/NextIteration");
    expect_values(g, "while/Exit", TIDE_INT32, 0, NULL, (double[]){10}, 0);
    expect_values(g, "while/Exit_1", TIDE_FLOAT32, 0, NULL, (double[]){1024}, 0);
    expect_values(g, "cond/Merge", TIDE_FLOAT32, 0, NULL, (double[]){3072}, 0); /* the true branch */
    void *data = NULL;
    size_t size = 0;
    CU_ASSERT_EQUAL_FATAL(tide_graphdef_export(g, NULL, &data, &size, NULL), TIDE_OK);
    tide_graph *back = tide_graph_new();
    tide_error *err = tide_error_new();
    if (tide_graphdef_import(back, data, size, "exported loop", NULL, err) != TIDE_OK)
        fprintf(stderr, "re-import: %s\n", tide_error_message(err));
    char *a = tide_graph_to_text(g, NULL), *b = tide_graph_to_text(back, NULL);
    CU_ASSERT_STRING_EQUAL(a ? a : "", b ? b : "");
    expect_values(back, "while/Exit", TIDE_INT32, 0, NULL, (double[]){10}, 0);
    free(a);
    free(b);
    free(data);
    tide_error_free(err);
    tide_graph_free(back);
    tide_graph_free(g);
}

static void test_while_loop_text(void) { check_while_loop("while_loop.pbtxt"); }
static void test_while_loop_binary(void) { check_while_loop("while_loop.pb"); }

static void test_loop_errors(void)
{
    tide_graph *g = tide_graph_new();
    /* A Merge with no way in; a cycle that does not go through a Merge's NextIteration. */
    import_fails(g,
                 "node { name: \"m\" op: \"Merge\" input: \"n\" attr { key: \"T\" value { type: DT_INT32 } } "
                 "attr { key: \"N\" value { i: 1 } } }\n"
                 "node { name: \"n\" op: \"NextIteration\" input: \"m\" attr { key: \"T\" value { type: DT_INT32 } } }\n",
                 NULL, "node 'm' (Merge): a Merge whose every input is a loop's back edge");
    import_fails(g,
                 CONST_F32("c")
                 "node { name: \"m\" op: \"Merge\" input: \"c\" input: \"a\" attr { key: \"T\" value { type: DT_FLOAT } } "
                 "attr { key: \"N\" value { i: 2 } } }\n"
                 "node { name: \"a\" op: \"Neg\" input: \"m\" attr { key: \"T\" value { type: DT_FLOAT } } }\n",
                 NULL, "the GraphDef has a cycle: m -> a -> m");
    tide_graph_free(g);
}

/* A chain of 100,000 nodes listed consumers first: ordering it goes 100,000 deep, which the importer's
 * explicit stack handles (a recursive one would exhaust the C stack); it imports in linear time. */
static void test_long_chain_in_reverse(void)
{
    enum { N = 100000 };
    size_t cap = (size_t)N * 110 + 512, len = 0;
    char *text = malloc(cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    for (int i = N - 1; i > 0; i--)
        len += (size_t)snprintf(text + len, cap - len,
                                "node { name: \"n%d\" op: \"Identity\" input: \"n%d\" attr { key: \"T\" value { type: "
                                "DT_FLOAT } } }\n", i, i - 1);
    len += (size_t)snprintf(text + len, cap - len, CONST_F32("n0"));
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.format = TIDE_GRAPHDEF_TEXT;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tide_status st = tide_graphdef_import(g, text, len, "chain.pbtxt", &o, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != TIDE_OK)
        fprintf(stderr, "chain: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), N);
    /* Built inputs first: n0 is the first node, n99999 the last. */
    CU_ASSERT_STRING_EQUAL(tide_node_name(tide_graph_node_at(g, 0)), "n0");
    CU_ASSERT_STRING_EQUAL(tide_node_name(tide_graph_node_at(g, N - 1)), "n99999");
    printf("\n  (importing a chain of %d nodes in reverse order: %.2f s)", N,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    free(text);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- errors */


static void test_unknown_ops_in_one_message(void)
{
    tide_graph *g = th_graph_of("a = Const(value=tensor(float32, [], [1.0]), dtype=float32)\n");
    import_fails(g,
                 CONST_F32("c")
                 "node { name: \"f1\" op: \"Frobnicate\" input: \"c\" }\n"
                 "node { name: \"q\" op: \"QuantizeV2\" input: \"c\" }\n"
                 "node { name: \"f2\" op: \"Frobnicate\" input: \"f1\" }\n"
                 "node { name: \"call\" op: \"my_fn\" input: \"c\" }\n"
                 "library { function { signature { name: \"my_fn\" } } }\n",
                 NULL,
                 "3 ops that tide does not have: Frobnicate (node 'f1' and others), QuantizeV2 (node 'q'), my_fn "
                 "(node 'call'; a function of the GraphDef's library: tide does not run functions)");
    tide_graph_free(g);
}

static void test_structure_errors(void)
{
    tide_graph *g = th_graph_of("a = Const(value=tensor(float32, [], [1.0]), dtype=float32)\n");
    import_fails(g, CONST_F32("c") CONST_F32("c"), NULL, "two nodes are named 'c'");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Neg\" input: \"d\" }\n", NULL,
                 "node 'n' (Neg): input 'd' names no node of the GraphDef");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Neg\" input: \"c:x\" }\n", NULL,
                 "input 0 'c:x' is not 'node', 'node:N' or '^node'");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Neg\" input: \"^c\" input: \"c\" }\n", NULL,
                 "data input 'c' comes after a control input");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Neg\" input: \"c:3\" }\n", NULL,
                 "asks for output 3 of 'c' (Const), which has 1");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Add\" input: \"c\" }\n", NULL,
                 "node 'n' (Add): the op takes 2 inputs, the GraphDef gives 1 data inputs");
    import_fails(g, CONST_F32("a"), NULL, "node name 'a' is already used");
    import_fails(g, CONST_F32("bad name"), NULL, "node name 'bad name' is not one tide can hold");
    import_fails(g,
                 "node { name: \"p\" op: \"Add\" input: \"q\" input: \"r\" }\n"
                 "node { name: \"q\" op: \"Neg\" input: \"r\" }\n"
                 "node { name: \"r\" op: \"Neg\" input: \"p\" }\n",
                 NULL, "the GraphDef has a cycle: p -> q -> r -> p");
    import_fails(g, CONST_F32("c") "node { name: \"n\" op: \"Neg\" input: \"c\" attr { key: \"_class\" value { list "
                 "{ s: \"loc:@elsewhere\" } } } }\n", NULL, "is colocated (_class) with 'elsewhere', which the GraphDef "
                 "does not have");
    tide_graph_free(g);
}

static void test_attr_errors(void)
{
    tide_graph *g = tide_graph_new();
    import_fails(g, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { i: 1 } } }\n", NULL,
                 "node 'p' (Placeholder): attr 'dtype' must be a type, the GraphDef has an int");
    import_fails(g, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_QINT8 } } }\n",
                 NULL, "attr 'dtype' has dtype DT_QINT8, which tide does not have");
    import_fails(g, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                 "attr { key: \"_f\" value { func { name: \"g\" } } } }\n", NULL,
                 "attr '_f' is a function ('g'): tide does not support functions");
    import_fails(g, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { placeholder: \"T\" } } }\n",
                 NULL, "attr 'dtype' is the placeholder 'T', which only a function body may hold");
    import_fails(g, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                 "attr { key: \"shape\" value { shape { dim { size: -3 } } } } }\n", NULL,
                 "attr 'shape': a shape has dimension 0 of size -3");
    import_fails(g, "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
                 "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: \"abc\" } "
                 "} } }\n", NULL, "node 'c' (Const): attr 'value': tensor_content has 3 bytes; a float32 tensor of "
                 "shape [2] takes 8");
    import_fails(g, "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
                 "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } int_val: 1 } } } }\n",
                 NULL, "a float32 tensor has values in int_val (its values go in float_val or tensor_content)");
    import_fails(g, "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_UINT8 } } attr { key: "
                 "\"value\" value { tensor { dtype: DT_UINT8 tensor_shape { dim { size: 2 } } int_val: 1 int_val: 256 "
                 "} } } }\n", NULL, "int_val value 256 does not fit a uint8");
    import_fails(g, "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
                 "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 float_val: 2 "
                 "float_val: 3 } } } }\n", NULL, "float_val holds 3 values for a tensor of shape [2] (2 elements)");
    import_fails(g, "node { name: \"n\" op: \"NoOp\" attr { key: \"_names\" value { list { s: \"a\" s: \"b\\000\" } } "
                 "} }\n", NULL, "attr '_names' (element 1) is a string holding a NUL byte");
    import_fails(g, "node { name: \"n\" op: \"NoOp\" attr { key: \"_mixed\" value { list { s: \"a\" i: 1 } } } }\n",
                 NULL, "attr '_mixed' must be a list(string), the GraphDef has a list of values of several kinds");
    import_fails(g, "node { name: \"n\" op: \"NoOp\" attr { key: \"colour\" value { i: 3 } } }\n", NULL,
                 "unknown attr 'colour' (NoOp has no attrs)");
    tide_graph_free(g);
}

/* Malformed encodings: the messages say where (line and column; byte offset and message path). */
static void test_malformed_files(void)
{
    tide_graph *g = th_graph_of("a = Const(value=tensor(float32, [], [1.0]), dtype=float32)\n");
    import_fails(g, "node {\n  name: \"c\"\n  op: \"Const\"\n  attr { key: \"dtype\" value { type: DT_FLOOT } }\n}\n",
                 NULL, "test.pbtxt: malformed text GraphDef: line 4, column 46: Unknown enumeration value of "
                 "\"DT_FLOOT\"");
    import_fails(g, "node {\n  name: \"c\"\n  opp: \"Const\"\n}\n", NULL,
                 "line 3, column 6: Message type \"tensorflow.NodeDef\" has no field named \"opp\"");
    import_fails(g, "node {\n  name: \"c\"\n", NULL, "line 3, column 1: Expected identifier");
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.format = TIDE_GRAPHDEF_BINARY;
    /* node { name: "abc" } cut after 4 of its 7 bytes */
    import_fails(g, "\x0a\x05\x0a\x03" "a", &o, "malformed binary GraphDef at byte 0 of 5, in GraphDef: a field of 5 "
                 "bytes where 3 remain (truncated?)");
    import_fails(g, "\x0a\x05\x0a\x07" "abc", &o, "at byte 2 of 7, in GraphDef.node[0]: a field of 7 bytes where 3 "
                 "remain (truncated?)");
    import_fails(g, "\x0a\x02\x0f\x01", &o, "at byte 2 of 4, in GraphDef.node[0]: a field of wire type 3, 4, 6 or 7");
    /* Text given as binary, and binary given as text: the messages say so. */
    import_fails(g, "node { name: \"c\" op: \"NoOp\" }\n", &o, "(it looks like text: name the file .pbtxt or ask for "
                 "the text format)");
    o.format = TIDE_GRAPHDEF_TEXT;
    import_fails(g, "\x0a\x05\x0a\x03" "abc", &o, "(it looks binary: name the file .pb or ask for the binary format)");
    /* A file that does not exist. */
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graphdef_import_file(g, "/nonexistent/model.pb", NULL, err), TIDE_NOT_FOUND);
    expect_message(err, "cannot open '/nonexistent/model.pb': No such file or directory");
    tide_error_free(err);
    tide_graph_free(g);
}

/* Messages nested a thousand deep are refused before protobuf-c would recurse through them. */
static void test_deep_nesting(void)
{
    size_t cap = 16 * 1024, len = 0;
    unsigned char *buf = calloc(1, cap);
    for (int i = 0; i < 1004; i++) { /* variant_val and tensors alternating, then tensor/value/attr/node */
        unsigned char tag = i < 1000 ? (i % 2 ? 0x7a : 0x1a) : (unsigned char[]){0x42, 0x12, 0x2a, 0x0a}[i - 1000];
        unsigned char head[8];
        size_t n = 0, v = len;
        head[n++] = tag;
        do {
            head[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            v >>= 7;
        } while (v);
        memmove(buf + n, buf, len);
        memcpy(buf, head, n);
        len += n;
    }
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.format = TIDE_GRAPHDEF_BINARY;
    CU_ASSERT_EQUAL(tide_graphdef_import(g, buf, len, "deep.pb", &o, err), TIDE_INVALID_ARGUMENT);
    expect_message(err, "deep.pb: malformed binary GraphDef at byte");
    expect_message(err, "in GraphDef.node[0].attr[0].value.tensor.variant_val[0].tensors[0].variant_val[0]");
    expect_message(err, "messages nested more than 100 deep");
    CU_ASSERT_EQUAL(tide_graph_num_nodes(g), 0);
    free(buf);
    tide_error_free(err);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- tests */

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_round_trip_binary),
        TH_TEST(test_round_trip_text),
        TH_TEST(test_round_trip_without_shapes),
        TH_TEST(test_export_conventions),
        TH_TEST(test_import_tf_text),
        TH_TEST(test_import_tf_binary),
        TH_TEST(test_tf_cnn_text),
        TH_TEST(test_tf_cnn_binary),
        TH_TEST(test_import_scope_and_input_map),
        TH_TEST(test_input_map_errors),
        TH_TEST(test_tensor_encodings_text),
        TH_TEST(test_tensor_encodings_binary),
        TH_TEST(test_attr_kinds_text),
        TH_TEST(test_attr_kinds_binary),
        TH_TEST(test_while_loop_text),
        TH_TEST(test_while_loop_binary),
        TH_TEST(test_loop_errors),
        TH_TEST(test_long_chain_in_reverse),
        TH_TEST(test_unknown_ops_in_one_message),
        TH_TEST(test_structure_errors),
        TH_TEST(test_attr_errors),
        TH_TEST(test_malformed_files),
        TH_TEST(test_deep_nesting),
        TH_END,
    };
    return th_main("graphdef", tests);
}
