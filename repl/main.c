/* main.c — the `tide` program. Until the REPL lands (its own issue) this runs a small demonstration of
 * the engine: it builds y = relu-free affine map W·x + b with W a variable, initialises it, feeds x,
 * runs, and prints the graph (in the text format) and the result, then updates W and runs again. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide.h"
#include "tide_config.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tide [--threads N] [--quiet] [--help] [--version]\n"
            "\n"
            "tide is a TensorFlow-style dataflow engine. This build runs a short demonstration:\n"
            "it builds a graph (y = matmul(x, W) + b, W a variable), runs it and prints the result.\n"
            "The interactive prompt (Lua) is the next milestone; see README.md.\n"
            "\n"
            "  --threads N   executor threads (default: one per core, or $TIDE_THREADS)\n"
            "  --quiet       print only the result\n");
}

static tide_node *finish(tide_node_builder *b, tide_error *err)
{
    tide_node *n = tide_node_builder_finish(b, err);
    if (!n) {
        fprintf(stderr, "tide: %s\n", tide_error_message(err));
        exit(1);
    }
    return n;
}

static tide_node *constant(tide_graph *g, const char *name, tide_tensor *value, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    return finish(b, err);
}

static tide_node *op2(tide_graph *g, const char *op, const char *name, tide_node *a, tide_node *b, tide_error *err)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, name);
    tide_node_builder_add_input(nb, (tide_output){a, 0});
    tide_node_builder_add_input(nb, (tide_output){b, 0});
    return finish(nb, err);
}

static tide_tensor *matrix(int rows, int cols, const float *v)
{
    tide_shape s = tide_shape_matrix(rows, cols);
    return tide_tensor_new_copy(TIDE_FLOAT32, &s, v, sizeof(float) * (size_t)(rows * cols), NULL);
}

static void print_tensor(const char *label, tide_tensor *t)
{
    char *text = tide_tensor_format(t, 1000, 3);
    printf("%s =\n%s\n", label, text ? text : "?");
    free(text);
}

static int run_demo(tide_engine *e, bool quiet, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", "x");
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_shape xs = tide_shape_make(2, (int64_t[]){-1, 3});
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &xs);
    tide_node *x = finish(b, err);
    b = tide_node_builder_new(g, "Variable", "W");
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_shape ws = tide_shape_matrix(3, 2);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &ws);
    tide_node *w = finish(b, err);
    const float w0[6] = {1, 0, 0, 1, 1, 1}, bias[2] = {0.5f, -0.5f}, step[6] = {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
    tide_node *init = op2(g, "Assign", "W/init", w, constant(g, "W/initial_value", matrix(3, 2, w0), err), err);
    tide_node *update = op2(g, "AssignAdd", "W/update", w, constant(g, "W/step", matrix(3, 2, step), err), err);
    tide_node *bn = constant(g, "b", matrix(1, 2, bias), err);
    tide_node *y = op2(g, "Add", "y", op2(g, "MatMul", "matmul", x, w, err), bn, err);

    tide_session *s = tide_session_new(e, g, NULL, err);
    if (!s)
        return 1;
    if (!quiet) {
        char *text = tide_graph_to_text(g, err);
        printf("graph (%d nodes):\n%s\n", tide_graph_num_nodes(g), text ? text : "");
        free(text);
    }
    const float xv[6] = {1, 2, 3, 4, 5, 6};
    tide_tensor *xt = matrix(2, 3, xv), *out = NULL;
    tide_feed feed = {{x, 0}, xt};
    tide_output fetch = {y, 0};
    int rc = 0;
    if (tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK ||
        tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err) != TIDE_OK) {
        fprintf(stderr, "tide: %s\n", tide_error_message(err));
        rc = 1;
    } else {
        if (!quiet)
            print_tensor("x", xt);
        print_tensor("y = matmul(x, W) + b", out);
        tide_tensor_release(out);
        out = NULL;
        if (tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &update, 1, NULL, err) == TIDE_OK &&
            tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err) == TIDE_OK) {
            print_tensor("after W += 0.1: y", out);
        } else {
            fprintf(stderr, "tide: %s\n", tide_error_message(err));
            rc = 1;
        }
    }
    tide_tensor_release(out);
    tide_tensor_release(xt);
    tide_session_free(s);
    tide_graph_free(g);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {{"threads", required_argument, NULL, 't'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"version", no_argument, NULL, 'V'},
                                            {NULL, 0, NULL, 0}};
    tide_engine_options opts;
    tide_engine_options_init(&opts);
    bool quiet = false;
    for (int c; (c = getopt_long(argc, argv, "t:qhV", options, NULL)) != -1;) {
        switch (c) {
        case 't': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 1024) {
                fprintf(stderr, "tide: --threads wants a number from 1 to 1024, got '%s'\n", optarg);
                return 2;
            }
            opts.num_threads = (int)n;
            break;
        }
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("tide %s\n", TIDE_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tide: unexpected argument '%s' (scripts arrive with the REPL)\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(&opts, err);
    if (!e) {
        fprintf(stderr, "tide: %s\n", tide_error_message(err));
        tide_error_free(err);
        return 1;
    }
    if (!quiet)
        printf("tide %s: %d executor threads, device %s\n\n", TIDE_VERSION, tide_engine_num_threads(e),
               tide_engine_device_name(e, 0));
    int rc = run_demo(e, quiet, err);
    tide_engine_free(e);
    tide_error_free(err);
    return rc;
}
