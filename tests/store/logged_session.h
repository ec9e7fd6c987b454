/* logged_session.h — the set-up that store tests which log a real engine's runs share (test_query.c,
 * test_queries.c): a fresh run-log file (temp_db.h), an engine of the test's own, the graph it builds,
 * a session over that graph logged by a store attached to the engine; and the teardown in the order
 * it needs (the store first: closing it writes what is queued). Header-only.
 *
 *   logged_session l;
 *   logged_session_begin(&l, "tide-query", &engine_options);  // file, engine, empty graph
 *   ... build l.g ...
 *   logged_session_open(&l, NULL, "query");                    // session, store, attached, logged
 *   ... runs, queries on db_path ...
 *   logged_session_end(&l);                                    // store (if open), session, graph, engine, file */
#ifndef TIDE_TEST_LOGGED_SESSION_H
#define TIDE_TEST_LOGGED_SESSION_H

#include "store.h"
#include "store/temp_db.h"

typedef struct logged_session {
    tide_engine *engine;
    tide_graph *g;
    tide_session *session;
    tide_store *store; /* a test may close it early and set it NULL */
} logged_session;

/* A fresh log file in /tmp/<prefix>-XXXXXX (db_path), an engine made with o (NULL: the defaults) and an
 * empty graph for the test to build. */
static inline void logged_session_begin(logged_session *l, const char *prefix, const tide_engine_options *o)
{
    *l = (logged_session){0};
    temp_db_new(prefix);
    tide_engine_options defaults;
    tide_engine_options_init(&defaults);
    l->engine = tide_engine_new(o ? o : &defaults, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l->engine);
    l->g = tide_graph_new();
}

/* Once the graph is built: the session over it, the store opened on db_path with store_options (NULL:
 * the defaults), attached to the engine, the session logged under name. */
static inline void logged_session_open(logged_session *l, const tide_store_options *store_options, const char *name)
{
    l->session = tide_session_new(l->engine, l->g, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l->session);
    tide_error *err = tide_error_new();
    l->store = tide_store_open(db_path, store_options, err);
    if (!l->store)
        fprintf(stderr, "\nopening %s failed: %s\n", db_path, tide_error_message(err));
    tide_error_free(err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l->store);
    CU_ASSERT(tide_store_attach(l->store, l->engine, NULL) > 0);
    CU_ASSERT(tide_store_log_session(l->store, l->session, l->engine, name, NULL) > 0);
}

/* Closes the store (when still open), frees the session, graph and engine, removes the log file. */
static inline void logged_session_end(logged_session *l)
{
    tide_store_close(l->store);
    tide_session_free(l->session);
    tide_graph_free(l->g);
    tide_engine_free(l->engine);
    temp_db_remove();
    *l = (logged_session){0};
}

#endif
