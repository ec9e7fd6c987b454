/* web.h — tide's built-in HTTP server (libmicrohttpd): the browser views of a run log (pages compiled
 * into the binary) and the read-only JSON API behind them (docs/web.md).
 *
 * The server reads the log through store/store.h's queries, each on a read-only connection of its own,
 * so it may serve a file that a store (in this process or another) is writing. It answers GET and HEAD
 * only (but the debugger's commands, POST with a token, when the REPL gives it its debugger), never
 * writes the log, never reads a file other than the log (its pages are embedded), binds
 * 127.0.0.1 unless told otherwise, and escapes every name it returns. Requests run on a small pool of
 * threads of its own; tide_web_start returns once it listens.
 *
 * Conventions are tide.h's: fallible calls take an optional tide_error as their last argument;
 * constructors return NULL with err set on failure. */
#ifndef TIDE_WEB_H
#define TIDE_WEB_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_web tide_web;

/* The REPL's step debugger as the debugger page drives it (docs/debugger.md, docs/web.md "The
 * debugger page"). The REPL fills it when it serves its own log (`:web`, `tide --web`); `tide serve`
 * leaves it NULL and stays read-only. Every function runs on a server thread and must be thread-safe.
 * Returned strings are malloc'd; the server frees them. */
typedef struct tide_web_debugger {
    void *user;
    /* The debugger's state as a JSON object (docs/web.md says its fields); NULL: out of memory. */
    char *(*state_json)(void *user);
    /* One command from the page ("step", "step N", "continue", "continue_bad", "abort", "break NODE",
     * "delete ID", "enable ID", "disable ID"): NULL when accepted, else the message why not. */
    char *(*command)(void *user, const char *command);
    /* A tensor of the stopped step as JSON, or NULL with *message set (malloc'd). */
    char *(*tensor_json)(void *user, const char *node, int output, char **message);
} tide_web_debugger;

typedef struct tide_web_options {
    const char *db_path; /* the run log to serve (required; copied) */
    const char *bind;    /* an IPv4 or IPv6 address, or "localhost"; NULL: 127.0.0.1 (copied) */
    int port;            /* 1..65535; 0: 6006; -1: any free port (tide_web_port says which) */
    /* Limits against slow and greedy clients (docs/web.md, "Limits"); 0 takes the default. */
    int max_connections;     /* open at once; default 1000 */
    int max_per_address;     /* from one client address; default 64 */
    int header_timeout_ms;   /* for a request's whole header, from the connection's start or its
                                previous reply; default 10000 */
    int reply_timeout_ms;    /* for the client to take a reply once it is ready; default 60000 */
    /* The REPL's debugger (copied), or NULL: read-only. With one, the server makes a random token for
     * this process and accepts POST /api/debug/command carrying it (tide_web_debugger_url). */
    const tide_web_debugger *debugger;
} tide_web_options;

/* Fills the defaults: no db_path, bind NULL (127.0.0.1), port 6006, the limits' defaults. */
void tide_web_options_init(tide_web_options *o);

/* Checks that o->db_path is a tide run log, then listens and serves it. NULL with err set:
 * TIDE_NOT_FOUND (no such file), TIDE_FAILED_PRECONDITION (not a run log), TIDE_INVALID_ARGUMENT (bad
 * address, port or limit), TIDE_UNAVAILABLE (the port is taken or cannot be bound). May raise the
 * process's soft limit on open files (RLIMIT_NOFILE, up to its hard limit) to hold max_connections. */
tide_web *tide_web_start(const tide_web_options *o, tide_error *err);
/* The port it listens on (the one picked, for port -1). */
int tide_web_port(const tide_web *w);
/* "http://127.0.0.1:6006/" (owned by w). */
const char *tide_web_url(const tide_web *w);
/* "http://127.0.0.1:6006/debugger?token=..." when started with a debugger, else NULL (owned by w). */
const char *tide_web_debugger_url(const tide_web *w);
/* The run log it serves (owned by w). */
const char *tide_web_db_path(const tide_web *w);
/* Stops listening, waits for the requests in progress and frees w. NULL is allowed. */
void tide_web_stop(tide_web *w);

#ifdef __cplusplus
}
#endif
#endif
