/* web_internal.h — what the files of web/ share: a request (its query parameters and the log it
 * reads), a reply (status, content type, body), the parameter and log helpers every endpoint uses,
 * and the endpoints themselves (api_*.c), which server.c routes to.
 *
 * An endpoint reads parameters with web_arg*, which answer 400 naming the parameter when a value is
 * bad; reads the log with web_query* (store's named queries, store_queries.h: no SQL is written in web/,
 * and every value from the URL is a bound parameter); and fills the reply with web_reply_json or
 * web_reply_error. Much of the JSON is built by SQLite itself in those queries (json_object,
 * json_group_array), which escapes every string; the rest by viz/json.h. */
#ifndef TIDE_WEB_INTERNAL_H
#define TIDE_WEB_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "store.h"
#include "tide.h"
#include "web.h"

#define WEB_MAX_URI 2048 /* longer request URIs are answered 414 */

#define WEB_CACHE_SLOTS 16 /* drawings kept (graph.svg, legend), least recently used replaced */

typedef struct web_cache_entry {
    char *key;  /* the endpoint, its parameters and the log's state (web_cache_key); NULL: empty slot */
    char *body;
    size_t len;
    uint64_t used;
} web_cache_entry;

/* ---------------------------------------------------------------- guard.c: limits and deadlines */

typedef struct web_limits {
    int max_connections;       /* open at once */
    int max_per_address;       /* from one client address */
    int64_t header_timeout_ms; /* a request's whole header, from the connection's start or last reply */
    int64_t reply_timeout_ms;  /* for the client to take a reply, from its being queued */
} web_limits;

typedef struct web_guard_counts {
    int64_t open;      /* connections open now */
    int64_t in_header; /* of them, in the middle of a request's header (its request line seen) */
    int64_t accepted;  /* since the start */
    int64_t refused;   /* new connections refused: every other one was busy with a request */
    int64_t evicted;   /* closed to make room for a new one */
    int64_t timed_out; /* closed at a deadline (idle keep-alive connections included) */
} web_guard_counts;

/* What server.c keeps of a request line that libmicrohttpd does not: set by its URI logger. */
typedef struct web_request_line {
    size_t uri_len;      /* bytes of the URI as received, up to a NUL byte */
    bool escaped_nul;    /* it holds "%00" */
    const char *uri_end; /* where strlen stopped, in libmicrohttpd's buffer (a raw NUL byte check) */
    bool deferred;       /* its header was seen: answered at the next call, once the request is complete */
} web_request_line;

typedef struct web_guard web_guard;

/* Starts the watchdog thread; NULL with err set on failure. */
web_guard *web_guard_new(const web_limits *limits, tide_error *err);
/* Stops the watchdog; call after MHD_stop_daemon. NULL is allowed. */
void web_guard_free(web_guard *g);
void web_guard_counts_get(web_guard *g, web_guard_counts *out);
/* libmicrohttpd's accept policy (cls: the guard): makes room for a new connection or refuses it. */
enum MHD_Result web_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_NOTIFY_COMPLETED (cls: the guard). */
void web_guard_notify(void *cls, struct MHD_Connection *con, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
void web_guard_request_completed(void *cls, struct MHD_Connection *con, void **req_cls,
                                 enum MHD_RequestTerminationCode toe);
/* A request line arrived on con: the record to fill (cleared), or NULL for an unguarded connection. */
web_request_line *web_guard_request_line(web_guard *g, struct MHD_Connection *con);
/* The request reached its endpoint (no deadline while it works); its reply was queued. */
void web_guard_request_handling(web_guard *g, struct MHD_Connection *con);
void web_guard_reply_queued(web_guard *g, struct MHD_Connection *con);

struct tide_web {
    struct MHD_Daemon *daemon;
    web_guard *guard;
    web_limits limits;
    char *db_path;
    char url[96];
    int port;
    pthread_mutex_t cache_lock;
    web_cache_entry cache[WEB_CACHE_SLOTS];
    uint64_t cache_clock;
    int64_t cache_hits, cache_misses; /* lookups since the start (/api/status): a hit draws no layout */
    bool has_debugger;          /* the REPL's debugger: the page and POST /api/debug/command */
    tide_web_debugger debugger;
    char token[33];             /* random, hex: what control requests must carry */
    char debugger_url[160];
    char bind[64];              /* the address listened on, as a Host header names it */
};

typedef struct web_request {
    struct MHD_Connection *con;
    tide_web *w;
    const char *db; /* w->db_path */
    const char *method;
} web_request;

typedef struct web_reply {
    int status;
    const char *content_type; /* static text */
    char *body;               /* malloc'd (handed to libmicrohttpd) or NULL */
    size_t len;
    const unsigned char *static_body; /* an embedded asset, used when body is NULL */
    char disposition[96];     /* a Content-Disposition header, or "" */
    bool cacheable;           /* an embedded asset (not no-store) */
} web_reply;

#define WEB_JSON_TYPE "application/json; charset=utf-8"

/* ---------------------------------------------------------------- server.c: replies */

/* {"error": "message"} with status (400, 404, 500...). */
void web_reply_error(web_reply *out, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The error of a failed store or viz call: NOT_FOUND -> 404 (500 when the log itself is gone),
 * INVALID_ARGUMENT -> 400, else 500. */
void web_reply_tide_error(web_request *rq, web_reply *out, const tide_error *err);
/* A 200 JSON reply that takes over body (malloc'd); body NULL: 500 (out of memory). */
void web_reply_json(web_reply *out, char *body, size_t len);
/* A 200 reply of another type that takes over body. */
void web_reply_take(web_reply *out, const char *content_type, char *body, size_t len);
/* Takes the builder's document as a 200 JSON reply (500 if it failed). */
void web_reply_builder(web_reply *out, tide_json *j);

/* ---------------------------------------------------------------- server.c: parameters */

/* The query parameter's value; NULL when absent or empty. */
const char *web_arg(web_request *rq, const char *name);
/* An integer parameter in [min, max]; absent: def. False (400 set in out) when malformed or out of range. */
bool web_arg_int(web_request *rq, web_reply *out, const char *name, int64_t def, int64_t min, int64_t max,
                 int64_t *value);
/* A required parameter; false (400 naming it) when absent. */
bool web_arg_required(web_request *rq, web_reply *out, const char *name, const char **value);
/* One of choices (NULL-terminated) or absent (*value NULL); false (400 listing them) otherwise. */
bool web_arg_choice(web_request *rq, web_reply *out, const char *name, const char *const *choices,
                    const char **value);
/* A comma-separated list of up to max integers >= 1; false (400) when malformed or too long. */
bool web_arg_int_list(web_request *rq, web_reply *out, const char *name, int max, int64_t *values, int *count);

/* ---------------------------------------------------------------- server.c: the log */

/* Runs the named query (store_queries.h); NULL with the error in out (500: the log's failure, never the
 * request's). */
tide_store_table *web_query(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                            int max_rows);
/* A query expected to give one value (row 0, column 0). True with *value malloc'd, or NULL for SQL NULL
 * / no row; false with the error in out (500). */
bool web_query_value(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                     char **value);
/* The same for an integer value; *value = def for SQL NULL or no row. */
bool web_query_int(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                   int64_t def, int64_t *value);
/* Runs a *_JSON query and replies with its document; a NULL result is answered 404 with not_found (a
 * printf-free message). */
void web_query_reply(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                     const char *not_found);
/* The session of parameter `session`: absent or 0 means the latest (0 when the log has none). False
 * (404) for a session the log does not have. */
bool web_arg_session(web_request *rq, web_reply *out, int64_t *session);
/* The same with another rule for an absent session: the query latest (no parameters) gives it. */
bool web_arg_session_or_latest(web_request *rq, web_reply *out, tide_store_query_id latest, int64_t *session);
/* A runs.id parameter that must exist (required, or absent -> *run = 0 when !required). False with
 * 400/404 set. */
bool web_arg_run(web_request *rq, web_reply *out, const char *name, bool required, int64_t *run);

/* A copy of the cached body for key (malloc'd, *len set), or NULL. */
char *web_cache_get(tide_web *w, const char *key, size_t *len);
/* The lookups since the start: found in the cache, and not (drawn anew). */
void web_cache_counts(tide_web *w, int64_t *hits, int64_t *misses);
/* Keeps a copy of body under key (replacing the least recently used entry); quietly nothing when out
 * of memory. */
void web_cache_put(tide_web *w, const char *key, const char *body, size_t len);

/* An integer as text for binding (buf of 24 bytes). */
const char *web_itoa(char *buf, int64_t v);

/* ---------------------------------------------------------------- the endpoints (api_*.c, assets.c) */

typedef void (*web_handler)(web_request *rq, web_reply *out);

/* api_debug.c: the debugger page's endpoints (only with the REPL's debugger) */
/* Makes w's token and debugger URL; false when no random bytes could be had. */
bool web_debug_init(tide_web *w, const tide_web_debugger *d, const char *url_base);
/* Whether method may be used on path (POST only for /api/debug/command with a debugger). */
bool web_debug_method_allowed(const tide_web *w, const char *path, const char *method);
void web_api_debug_state(web_request *rq, web_reply *out);
void web_api_debug_tensor(web_request *rq, web_reply *out);
void web_api_debug_command(web_request *rq, web_reply *out);

void web_api_status(web_request *rq, web_reply *out);
void web_api_sessions(web_request *rq, web_reply *out);
void web_api_runs(web_request *rq, web_reply *out);
void web_api_run(web_request *rq, web_reply *out);
void web_api_scalars(web_request *rq, web_reply *out);
void web_api_scalar(web_request *rq, web_reply *out);
void web_api_graphs(web_request *rq, web_reply *out);
void web_api_graph(web_request *rq, web_reply *out);
void web_api_graph_svg(web_request *rq, web_reply *out);
void web_api_graph_legend(web_request *rq, web_reply *out);
void web_api_devices(web_request *rq, web_reply *out);
void web_api_node(web_request *rq, web_reply *out);
void web_api_timeline(web_request *rq, web_reply *out);
void web_api_trace(web_request *rq, web_reply *out);
void web_api_tensors(web_request *rq, web_reply *out);
void web_api_tensor(web_request *rq, web_reply *out);
void web_api_tensor_values(web_request *rq, web_reply *out);
void web_api_tensor_history(web_request *rq, web_reply *out);
void web_api_tensor_histograms(web_request *rq, web_reply *out);
void web_api_images(web_request *rq, web_reply *out);
void web_api_compare(web_request *rq, web_reply *out);

/* A tensor's rows over steps (query q with its params; column 0 the session), or NULL with the reply
 * set: 404 naming node:output when there is none (api_tensor.c). */
tide_store_table *web_tensor_rows(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params,
                                  int n, const char *node, int64_t output, int64_t session);
/* Opens the document of a tensor over steps: {"node","output","session" (row 0's column 0), ... */
void web_tensor_doc_begin(tide_json *j, const char *node, int64_t output, const tide_store_table *t);

/* The JSON of /api/tensor for a logged tensor, appended to j as one object (api_tensor.c). */
void web_tensor_json(tide_json *j, const tide_store_tensor *t);

/* assets.c: the page or embedded asset a path names ("/", "/graph", "/static/style.css"); false when
 * none (the reply is untouched). */
bool web_asset_reply(const char *path, web_reply *out);

#endif
