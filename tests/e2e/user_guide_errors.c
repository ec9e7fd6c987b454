/* user_guide_errors.c — the error messages docs/user-guide.md shows ("Errors", the indented lines after
 * "for example:") are the engine's: this program makes each mistake through the public API (shapes that
 * do not broadcast, a placeholder not fed, a feed of the wrong dtype, a misspelt op, an undefined input
 * in graph text) and checks that every line the guide shows is part of one of the messages it got.
 * Usage: user_guide_errors docs/user-guide.md. Prints "ok"/"FAIL" lines; exits 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide.h"

enum { MAX_MESSAGES = 8 };

static char messages[MAX_MESSAGES][512];
static int num_messages;

static void keep(const tide_error *err)
{
    if (num_messages < MAX_MESSAGES)
        snprintf(messages[num_messages++], sizeof messages[0], "%s", tide_error_message(err));
}

/* Runs the graph of `text` in a session: fetches y, with x fed (x NULL: nothing fed). */
static void run_fed(tide_engine *e, const char *text, const tide_tensor *x, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_session *s = NULL;
    tide_output xo, yo;
    tide_tensor *out = NULL;
    if (tide_graph_extend_text(g, text, err) == TIDE_OK && (s = tide_session_new(e, g, NULL, err)) &&
        tide_graph_output(g, "x", &xo, err) == TIDE_OK && tide_graph_output(g, "y", &yo, err) == TIDE_OK) {
        tide_feed feed = {xo, (tide_tensor *)x};
        tide_session_run(s, NULL, &feed, x ? 1 : 0, &yo, 1, &out, NULL, 0, NULL, err);
    }
    keep(err);
    tide_tensor_release(out);
    tide_session_free(s);
    tide_graph_free(g);
}

static void extend(const char *text, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_graph_extend_text(g, text, err);
    keep(err);
    tide_graph_free(g);
}

/* The guide's example lines: the indented lines that follow "for example:" up to the next blank line
 * after them. Returns how many were read into lines. */
static int example_lines(const char *path, char lines[][512], int max)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 0;
    }
    char line[512];
    int n = 0;
    bool in_errors = false, started = false;
    while (n < max && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!in_errors)
            in_errors = strstr(line, "for example:") != NULL;
        else if (strncmp(line, "    ", 4) == 0) {
            snprintf(lines[n++], 512, "%s", line + 4);
            started = true;
        } else if (started)
            break;
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: user_guide_errors docs/user-guide.md\n");
        return 2;
    }
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(NULL, err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", tide_error_message(err));
        return 1;
    }
    extend("x = Placeholder(dtype=float32, shape=[2, 3])\nb = Placeholder(dtype=float32, shape=[4])\n"
           "y = Add(x, b)\n", err);
    run_fed(e, "x = Placeholder(dtype=float32, shape=[?, 784])\ny = Relu(x)\n", NULL, err);
    double v[4] = {1, 2, 3, 4};
    tide_shape shape = tide_shape_matrix(2, 2);
    tide_tensor *f64 = tide_tensor_new_copy(TIDE_FLOAT64, &shape, v, sizeof v, err);
    run_fed(e, "x = Placeholder(dtype=float32, shape=[?, 2])\ny = Relu(x)\n", f64, err);
    tide_tensor_release(f64);
    extend("x = Placeholder(dtype=float32, shape=[2, 2])\ny = Matmul(x, x)\n", err);
    extend("x = Placeholder(dtype=float32, shape=[2, 2])\na = Relu(x)\nb = Add(a, nope)\n", err);

    char shown[16][512];
    int num_shown = example_lines(argv[1], shown, 16), failures = 0;
    if (num_shown < 5) {
        printf("FAIL the guide shows %d example messages (5 expected)\n", num_shown);
        failures++;
    }
    for (int i = 0; i < num_shown; i++) {
        bool found = false;
        for (int k = 0; k < num_messages && !found; k++)
            found = strstr(messages[k], shown[i]) != NULL;
        printf("%s %s\n", found ? "ok  " : "FAIL", shown[i]);
        failures += !found;
    }
    if (failures) {
        printf("the messages were:\n");
        for (int k = 0; k < num_messages; k++)
            printf("  %s\n", messages[k]);
    }
    tide_engine_free(e);
    tide_error_free(err);
    return failures ? 1 : 0;
}
