/* viz_log.h — helpers shared by the viz test and benchmark: a run log in a fresh temporary directory
 * written through the real store (tide_store_open, _log_session, _log_graph, _attach, traced runs),
 * and its removal. Header-only. */
#ifndef TIDE_TEST_VIZ_LOG_H
#define TIDE_TEST_VIZ_LOG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "tide.h"

typedef struct viz_log {
    char dir[64], path[128];
    tide_engine *engine;
    tide_graph *graph;
    tide_session *session;
    tide_store *store;
    int64_t session_id;
} viz_log;

static inline void viz_log_fail(const char *what, tide_error *err)
{
    fprintf(stderr, "viz test log: %s: %s\n", what, tide_error_message(err));
    exit(1);
}

/* A log with one session over an engine of num_devices CPU devices (round-robin placement when > 1)
 * and the graph `graph` (taken over), logged once. Every run is traced (trace_every 1). */
static inline void viz_log_open_graph(viz_log *l, int num_devices, tide_graph *graph)
{
    memset(l, 0, sizeof *l);
    snprintf(l->dir, sizeof l->dir, "/tmp/tide-viz-XXXXXX");
    if (!mkdtemp(l->dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(l->path, sizeof l->path, "%s/runs.db", l->dir);
    tide_error *err = tide_error_new();
    tide_engine_options eo;
    tide_engine_options_init(&eo);
    eo.num_threads = 2;
    eo.num_cpu_devices = num_devices;
    eo.placement = num_devices > 1 ? TIDE_PLACEMENT_ROUND_ROBIN : TIDE_PLACEMENT_GREEDY;
    tide_store_options so;
    tide_store_options_init(&so);
    so.trace_every = 1;
    if (!(l->engine = tide_engine_new(&eo, err)))
        viz_log_fail("engine", err);
    l->graph = graph;
    if (!(l->session = tide_session_new(l->engine, l->graph, NULL, err)))
        viz_log_fail("session", err);
    if (!(l->store = tide_store_open(l->path, &so, err)))
        viz_log_fail("store", err);
    if ((l->session_id = tide_store_log_session(l->store, l->session, l->engine, "viz test", err)) < 0)
        viz_log_fail("log_session", err);
    if (tide_store_log_graph(l->store, l->session, err) < 0)
        viz_log_fail("log_graph", err);
    if (tide_store_attach(l->store, l->engine, err) <= 0)
        viz_log_fail("attach", err);
    tide_error_free(err);
}

/* The same with the graph of `text`. */
static inline void viz_log_open(viz_log *l, int num_devices, const char *text)
{
    tide_error *err = tide_error_new();
    tide_graph *graph = tide_graph_new();
    if (tide_graph_extend_text(graph, text, err) != TIDE_OK)
        viz_log_fail("graph", err);
    tide_error_free(err);
    viz_log_open_graph(l, num_devices, graph);
}

/* Runs the session `n` times fetching output 0 of `fetch`, then flushes the log. */
static inline void viz_log_run(viz_log *l, const char *fetch, int n)
{
    tide_error *err = tide_error_new();
    tide_output out = {tide_graph_node(l->graph, fetch), 0};
    if (!out.node)
        viz_log_fail(fetch, err);
    for (int i = 0; i < n; i++) {
        tide_tensor *v = NULL;
        if (tide_session_run(l->session, NULL, NULL, 0, &out, 1, &v, NULL, 0, NULL, err) != TIDE_OK)
            viz_log_fail("run", err);
        tide_tensor_release(v);
    }
    if (tide_store_flush(l->store, err) != TIDE_OK)
        viz_log_fail("flush", err);
    tide_error_free(err);
}

/* Closes the store and frees the engine objects; keeps the file. */
static inline void viz_log_close(viz_log *l)
{
    tide_store_close(l->store);
    tide_session_free(l->session);
    tide_graph_free(l->graph);
    tide_engine_free(l->engine);
    l->store = NULL;
    l->session = NULL;
    l->graph = NULL;
    l->engine = NULL;
}

static inline void viz_log_remove(viz_log *l)
{
    const char *suffix[3] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", l->path, suffix[i]);
        unlink(p);
    }
    rmdir(l->dir);
}

#endif
