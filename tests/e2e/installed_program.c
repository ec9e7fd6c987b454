/* installed_program.c — a small C program built against an installed tide through pkg-config only
 * (tests/e2e/install.sh): it builds y = x * 2 + b, runs it, checks the values, reads the gradient
 * dy/dx through tide_gradients, and reports a run error naming the node, as a C user's program would. */
#include <stdio.h>
#include <string.h>

#include <tide.h>

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *engine = tide_engine_new(NULL, err);
    tide_graph *g = tide_graph_new();
    if (!engine || tide_graph_extend_text(g,
            "x = Placeholder(dtype=float32, shape=[?, 2])\n"
            "two = Const(value=tensor(float32, [], [2]), dtype=float32)\n"
            "b = Const(value=tensor(float32, [2], [1, -1]), dtype=float32)\n"
            "twice = Mul(x, two)\n"
            "y = Add(twice, b)\n", err) != TIDE_OK) {
        fprintf(stderr, "building: %s\n", tide_error_message(err));
        return 1;
    }
    tide_session *s = tide_session_new(engine, g, NULL, err);
    tide_output x, y, dx;
    tide_graph_output(g, "x", &x, err);
    tide_graph_output(g, "y", &y, err);
    if (tide_gradients(g, &y, 1, &x, 1, NULL, &dx, err) != TIDE_OK) {
        fprintf(stderr, "gradients: %s\n", tide_error_message(err));
        return 1;
    }
    float v[2] = {1, 2};
    tide_shape shape = tide_shape_matrix(1, 2);
    tide_tensor *in = tide_tensor_new_copy(TIDE_FLOAT32, &shape, v, sizeof v, err);
    tide_feed feed = {x, in};
    tide_output fetches[2] = {y, dx};
    tide_tensor *out[2] = {NULL, NULL};
    if (tide_session_run(s, NULL, &feed, 1, fetches, 2, out, NULL, 0, NULL, err) != TIDE_OK) {
        fprintf(stderr, "run: %s\n", tide_error_message(err));
        return 1;
    }
    const float *yv = tide_tensor_data(out[0]), *dv = tide_tensor_data(out[1]);
    int ok = yv[0] == 3 && yv[1] == 3 && dv[0] == 2 && dv[1] == 2;
    printf("y = [%g, %g], dy/dx = [%g, %g]\n", yv[0], yv[1], dv[0], dv[1]);
    /* A wrong feed is a clear error, not a crash. */
    tide_shape bad = tide_shape_matrix(1, 3);
    tide_tensor *wrong = tide_tensor_new(TIDE_FLOAT32, &bad, err);
    tide_feed bad_feed = {x, wrong};
    tide_tensor_release(out[0]);
    tide_tensor_release(out[1]);
    if (tide_session_run(s, NULL, &bad_feed, 1, &y, 1, out, NULL, 0, NULL, err) == TIDE_OK ||
        !strstr(tide_error_message(err), "x")) {
        fprintf(stderr, "a [1, 3] feed for a [?, 2] placeholder was not refused by name: %s\n", tide_error_message(err));
        ok = 0;
    }
    printf("wrong feed: %s\n", tide_error_message(err));
    tide_tensor_release(wrong);
    tide_tensor_release(in);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(engine);
    tide_error_free(err);
    return ok ? 0 : 1;
}
