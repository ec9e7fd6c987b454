/* graphdef_tool.c — a helper of tests/graphdef/check_protobuf.py, which checks tide's GraphDefs with
 * Python's protobuf (classes protoc generates from the same .proto):
 *
 *   graphdef_tool export DIR      builds a training graph (an MLP with Adam, variables, colocation,
 *                                 devices, control inputs, strings, every dtype) and writes DIR/tide.pb,
 *                                 DIR/tide.pbtxt and DIR/tide.graph (its graph text)
 *   graphdef_tool text FILE       imports FILE (a GraphDef in either encoding) and prints its graph text
 *
 * Exit status 0, or 1 with the message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide.h"
#include "tide_graphdef.h"

static const char *const graph_text =
    "x = Placeholder(dtype=float32, shape=[?, 4])\n"
    "labels = Placeholder(dtype=int32, shape=[?])\n"
    "W/initial_value = Const(value=tensor(float32, [4, 3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]), dtype=float32)\n"
    "b/initial_value = Const(value=tensor(float32, [3], [0.0, 0.5, -0.5]), dtype=float32)\n"
    "words = Const(value=tensor(string, [2], [\"tide\", \"\\xff\\x00\"]), dtype=string)\n"
    "h = Const(value=tensor(float16, [2], [1.5, -2.0]), dtype=float16)\n"
    "flags = Const(value=tensor(bool, [3], [true, false, true]), dtype=bool)\n"
    "c = Const(value=tensor(complex128, [], [1.0, -2.0]), dtype=complex128)\n"
    "neg = Neg(x, ^flags, T=float32) @\"/job:localhost/replica:0/task:0/device:cpu:0\"\n";

static tide_node *op2(tide_graph *g, const char *op, const char *name, tide_output a, tide_output b, tide_error *err)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, name);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return tide_node_builder_finish(nb, err);
}

static tide_graph *training_graph(tide_error *err)
{
    tide_graph *g = tide_graph_new();
    if (tide_graph_extend_text(g, graph_text, err) != TIDE_OK)
        return NULL;
    tide_output wi, bi;
    tide_graph_output(g, "W/initial_value", &wi, err);
    tide_graph_output(g, "b/initial_value", &bi, err);
    tide_node *W = tide_variable_new(g, "W", wi, true, err);
    tide_node *b = W ? tide_variable_new(g, "b", bi, true, err) : NULL;
    tide_node *mm = b ? op2(g, "MatMul", "matmul", (tide_output){tide_graph_node(g, "x"), 0}, (tide_output){W, 0}, err)
                      : NULL;
    tide_node *logits = mm ? op2(g, "BiasAdd", "logits", (tide_output){mm, 0}, (tide_output){b, 0}, err) : NULL;
    tide_node *xent = logits ? op2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", (tide_output){logits, 0},
                                   (tide_output){tide_graph_node(g, "labels"), 0}, err)
                             : NULL;
    if (!xent || tide_graph_extend_text(g, "axes = Const(value=tensor(int32, [1], [0]), dtype=int32)\n"
                                           "loss = Mean(xent, axes, T=float32, Tidx=int32, keep_dims=false, "
                                           "_colocate_with=\"b\")\n", err) != TIDE_OK)
        goto fail;
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    if (!tide_optimizer_minimize(g, &opt, (tide_output){tide_graph_node(g, "loss"), 0}, NULL, 0, tide_global_step(g, err),
                                 err) ||
        !tide_global_variables_initializer(g, err))
        goto fail;
    return g;
fail:
    tide_graph_free(g);
    return NULL;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "graphdef_tool: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int export_sample(const char *dir, tide_error *err)
{
    tide_graph *g = training_graph(err);
    if (!g)
        return 1;
    char path[4096];
    int status = 0;
    const char *ext[] = {"pb", "pbtxt"};
    for (int i = 0; i < 2 && !status; i++) {
        snprintf(path, sizeof path, "%s/tide.%s", dir, ext[i]);
        status = tide_graphdef_export_file(g, path, NULL, err) != TIDE_OK;
    }
    char *text = status ? NULL : tide_graph_to_text(g, err);
    if (text) {
        snprintf(path, sizeof path, "%s/tide.graph", dir);
        status = write_text(path, text);
    }
    free(text);
    tide_graph_free(g);
    return status;
}

static int print_text(const char *file, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    char *text = NULL;
    if (tide_graphdef_import_file(g, file, NULL, err) == TIDE_OK)
        text = tide_graph_to_text(g, err);
    if (text)
        fputs(text, stdout);
    tide_graph_free(g);
    int status = text ? 0 : 1;
    free(text);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "export") && strcmp(argv[1], "text"))) {
        fprintf(stderr, "usage: graphdef_tool export DIR | graphdef_tool text FILE\n");
        return 2;
    }
    tide_error *err = tide_error_new();
    int status = strcmp(argv[1], "export") == 0 ? export_sample(argv[2], err) : print_text(argv[2], err);
    if (status && tide_error_code(err) != TIDE_OK)
        fprintf(stderr, "graphdef_tool: %s\n", tide_error_message(err));
    tide_error_free(err);
    return status;
}
