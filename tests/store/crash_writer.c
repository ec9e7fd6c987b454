/* crash_writer.c — a small program that logs runs to a run log until it is killed or its time is up;
 * test_crash.c starts it and kills it with SIGKILL. Usage:
 *
 *   crash_writer FILE LABEL FLUSH_EVERY SECONDS
 *
 * It opens a store on FILE, logs a session labelled LABEL, attaches the store to an engine, watches
 * `y` (statistics and value) and runs a small graph in a loop, a few hundred runs a second, every
 * fourth traced. After every FLUSH_EVERY-th run it flushes the store and prints `flushed STEP` (the
 * highest step known committed) on stdout. After SECONDS (0: forever) it closes the store and prints
 * `done RUNS DROPPED`. Any failure prints `error: MESSAGE` and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(const char *what, const tide_error *err)
{
    printf("error: %s: %s\n", what, err ? tide_error_message(err) : "");
    fflush(stdout);
    return 1;
}

/* A node of op with inputs' outputs 0 (and a Const's value, taken); NULL with err set. */
static tide_node *node(tide_graph *g, const char *op, const char *name, tide_node *const *ins, int n,
                       tide_tensor *value, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    if (value) {
        tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
        tide_tensor_release(value);
    }
    return tide_node_builder_finish(b, err);
}

/* y = a @ a + a with a = [[1, 2], [3, 4]]; NULL with err set. */
static tide_node *build(tide_graph *g, tide_error *err)
{
    tide_shape shape = tide_shape_make(2, (const int64_t[]){2, 2});
    float v[4] = {1, 2, 3, 4};
    tide_tensor *t = tide_tensor_new_copy(TIDE_FLOAT32, &shape, v, sizeof v, err);
    tide_node *a = t ? node(g, "Const", "a", NULL, 0, t, err) : NULL;
    tide_node *m = a ? node(g, "MatMul", "m", (tide_node *[]){a, a}, 2, NULL, err) : NULL;
    return m ? node(g, "Add", "y", (tide_node *[]){m, a}, 2, NULL, err) : NULL;
}

/* Runs y = a @ a + a in a loop; returns the number of runs, or -1 (after printing the error). */
static int64_t run_loop(tide_session *session, tide_node *y, tide_store *s, int flush_every, double seconds,
                        tide_error *err)
{
    int64_t end = seconds > 0 ? now_ns() + (int64_t)(seconds * 1e9) : INT64_MAX;
    int64_t step = 0;
    for (; now_ns() < end; step++) {
        tide_run_options o = {.trace = step % 4 == 0};
        tide_output out = {y, 0};
        tide_tensor *v = NULL;
        if (tide_session_run(session, &o, NULL, 0, &out, 1, &v, NULL, 0, NULL, err) != TIDE_OK)
            return fail("run", err), -1;
        tide_tensor_release(v);
        if ((step + 1) % flush_every == 0) {
            if (tide_store_flush(s, err) != TIDE_OK)
                return fail("flush", err), -1;
            printf("flushed %lld\n", (long long)step);
            fflush(stdout);
        }
        nanosleep(&(struct timespec){0, 2 * 1000000L}, NULL);
    }
    return step;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s FILE LABEL FLUSH_EVERY SECONDS\n", argv[0]);
        return 2;
    }
    int flush_every = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (flush_every < 1)
        flush_every = 1;
    tide_error *err = tide_error_new();
    tide_store *s = tide_store_open(argv[1], NULL, err);
    if (!s)
        return fail("open", err);
    tide_engine_options eo;
    tide_engine_options_init(&eo);
    eo.num_threads = 2;
    tide_engine *e = tide_engine_new(&eo, err);
    if (!e)
        return fail("engine", err);
    tide_graph *g = tide_graph_new();
    tide_node *y = build(g, err);
    tide_session *session = y ? tide_session_new(e, g, NULL, err) : NULL;
    int rc = 1;
    if (!y)
        fail("graph", err);
    else if (!session)
        fail("session", err);
    else if (tide_store_attach(s, e, err) <= 0)
        fail("attach", err);
    else if (tide_store_log_session(s, session, e, argv[2], err) < 0)
        fail("log_session", err);
    else if (tide_store_log_graph(s, session, err) < 0)
        fail("log_graph", err);
    else if (tide_store_watch(s, "y", err) != TIDE_OK)
        fail("watch", err);
    else {
        int64_t runs = run_loop(session, y, s, flush_every, seconds, err);
        if (runs >= 0 && tide_store_flush(s, err) != TIDE_OK)
            fail("final flush", err);
        else if (runs >= 0) {
            printf("done %lld %lld\n", (long long)runs, (long long)tide_store_dropped(s));
            rc = 0;
        }
    }
    tide_store_close(s);
    tide_session_free(session);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    fflush(stdout);
    return rc;
}
