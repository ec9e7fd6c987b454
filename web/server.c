/* server.c — the HTTP side of tide's web views: libmicrohttpd started on a listening socket of our
 * own (so that a taken port or a bad address is a clear error, and port -1 can pick a free one),
 * request checks (GET and HEAD only, URIs up to WEB_MAX_URI bytes without NUL bytes, at most one
 * Content-Length and not with Transfer-Encoding), routing to the endpoints of api_*.c and the embedded
 * pages of assets.c, the headers every reply carries, and the helpers the endpoints share to read
 * parameters and query the log. guard.c holds the connection limits and deadlines.
 *
 * Threads: libmicrohttpd runs a pool of WEB_THREADS threads, each serving many connections (epoll) and
 * answering a request from start to end; the endpoints share nothing but the tide_web (read-only after
 * start), its drawing cache and the guard. Every query opens its own read-only connection to the log
 * (store/query.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "web_internal.h"

#define WEB_THREADS 4
#define WEB_DEFAULT_PORT 6006
#define WEB_DEFAULT_MAX_CONNECTIONS 1000
#define WEB_DEFAULT_MAX_PER_ADDRESS 64
#define WEB_DEFAULT_HEADER_TIMEOUT_MS 10000
#define WEB_DEFAULT_REPLY_TIMEOUT_MS 60000
#define WEB_MAX_CONNECTIONS 100000
#define WEB_LISTEN_BACKLOG 1024
#define WEB_IDLE_TIMEOUT_S 30 /* libmicrohttpd's own: a connection where nothing moves (the guard is stricter) */

static const char csp[] = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'";

/* ---------------------------------------------------------------- replies */

void web_reply_error(web_reply *out, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(out->body);
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "error");
    tide_json_string(&j, msg);
    tide_json_end_object(&j);
    out->body = tide_json_take(&j, &out->len);
    out->status = out->body ? status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    out->content_type = WEB_JSON_TYPE;
}

/* The status of a failed store or viz call. A log that is gone (deleted or moved while served) is the
 * server's failure, not a missing resource: the store says NOT_FOUND for a file it cannot find. */
static int store_error_status(web_request *rq, const tide_error *err, const char **gone)
{
    tide_status code = tide_error_code(err);
    struct stat st;
    *gone = NULL;
    if (code == TIDE_NOT_FOUND && stat(rq->db, &st) != 0) {
        *gone = rq->db;
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    return code == TIDE_NOT_FOUND ? MHD_HTTP_NOT_FOUND
           : code == TIDE_INVALID_ARGUMENT ? MHD_HTTP_BAD_REQUEST
                                           : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

void web_reply_tide_error(web_request *rq, web_reply *out, const tide_error *err)
{
    const char *gone = NULL, *msg = tide_error_message(err);
    int status = store_error_status(rq, err, &gone);
    if (gone)
        web_reply_error(out, status, "the run log %s is gone (deleted or moved while served)", gone);
    else
        web_reply_error(out, status, "%s", msg && *msg ? msg : "internal error");
}

void web_reply_take(web_reply *out, const char *content_type, char *body, size_t len)
{
    if (!body) {
        web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    free(out->body);
    out->status = MHD_HTTP_OK;
    out->content_type = content_type;
    out->body = body;
    out->len = len;
}

void web_reply_json(web_reply *out, char *body, size_t len) { web_reply_take(out, WEB_JSON_TYPE, body, len); }

void web_reply_builder(web_reply *out, tide_json *j)
{
    size_t len = 0;
    char *text = tide_json_take(j, &len);
    web_reply_json(out, text, len);
}

/* ---------------------------------------------------------------- parameters */

const char *web_itoa(char *buf, int64_t v)
{
    snprintf(buf, 24, "%" PRId64, v);
    return buf;
}

const char *web_arg(web_request *rq, const char *name)
{
    const char *v = MHD_lookup_connection_value(rq->con, MHD_GET_ARGUMENT_KIND, name);
    return v && *v ? v : NULL;
}

static bool parse_int(const char *s, int64_t *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        return false;
    *v = x;
    return true;
}

bool web_arg_int(web_request *rq, web_reply *out, const char *name, int64_t def, int64_t min, int64_t max,
                 int64_t *value)
{
    const char *s = web_arg(rq, name);
    *value = def;
    if (!s)
        return true;
    if (!parse_int(s, value) || *value < min || *value > max) {
        web_reply_error(out, MHD_HTTP_BAD_REQUEST,
                        "parameter '%s' must be a whole number from %" PRId64 " to %" PRId64 ", not '%.40s'", name,
                        min, max, s);
        return false;
    }
    return true;
}

bool web_arg_required(web_request *rq, web_reply *out, const char *name, const char **value)
{
    *value = web_arg(rq, name);
    if (!*value)
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "parameter '%s' is required", name);
    return *value != NULL;
}

bool web_arg_choice(web_request *rq, web_reply *out, const char *name, const char *const *choices,
                    const char **value)
{
    const char *s = web_arg(rq, name);
    *value = NULL;
    if (!s)
        return true;
    char list[160] = "";
    for (int i = 0; choices[i]; i++) {
        if (strcmp(s, choices[i]) == 0) {
            *value = choices[i];
            return true;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", choices[i]);
    }
    web_reply_error(out, MHD_HTTP_BAD_REQUEST, "parameter '%s' must be one of %s, not '%.40s'", name, list, s);
    return false;
}

bool web_arg_int_list(web_request *rq, web_reply *out, const char *name, int max, int64_t *values, int *count)
{
    const char *s = web_arg(rq, name);
    *count = 0;
    if (!s)
        return true;
    char buf[32];
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        int64_t v = 0;
        bool ok = n > 0 && n < sizeof buf;
        if (ok) {
            memcpy(buf, p, n);
            buf[n] = 0;
            ok = parse_int(buf, &v) && v >= 1;
        }
        if (!ok || *count == max) {
            web_reply_error(out, MHD_HTTP_BAD_REQUEST,
                            "parameter '%s' must be a comma-separated list of up to %d run ids, not '%.60s'", name,
                            max, s);
            return false;
        }
        values[(*count)++] = v;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

/* ---------------------------------------------------------------- the log */

tide_store_table *web_query(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                            int max_rows)
{
    tide_error *err = tide_error_new();
    tide_store_table *t = err ? tide_store_query_named(rq->db, q, params, n, max_rows, err) : NULL;
    if (!t) {
        if (err && tide_error_code(err) == TIDE_INVALID_ARGUMENT) /* our query, not the request: 500 */
            web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", tide_error_message(err));
        else if (err) /* the log's own errors (a file gone, a damaged table) are the server's: 500 */
            web_reply_tide_error(rq, out, err);
        else
            web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    tide_error_free(err);
    return t;
}

bool web_query_value(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                     char **value)
{
    tide_store_table *t = web_query(rq, out, q, params, n, 1);
    *value = NULL;
    bool ok = t != NULL;
    if (t && tide_store_table_num_rows(t) > 0 && !tide_store_table_is_null(t, 0, 0)) {
        *value = strdup(tide_store_table_cell(t, 0, 0));
        ok = *value != NULL;
        if (!ok)
            web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    tide_store_table_free(t);
    return ok;
}

bool web_query_int(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                   int64_t def, int64_t *value)
{
    char *text = NULL;
    *value = def;
    if (!web_query_value(rq, out, q, params, n, &text))
        return false;
    if (text && !parse_int(text, value))
        *value = def;
    free(text);
    return true;
}

void web_query_reply(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params, int n,
                     const char *not_found)
{
    char *text = NULL;
    if (!web_query_value(rq, out, q, params, n, &text))
        return;
    if (!text)
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "%s", not_found);
    else
        web_reply_json(out, text, strlen(text));
}

bool web_arg_session_or_latest(web_request *rq, web_reply *out, tide_store_query_id latest, int64_t *session)
{
    if (!web_arg_int(rq, out, "session", 0, 0, INT64_MAX, session))
        return false;
    char buf[24];
    const char *p[] = {web_itoa(buf, *session)};
    int64_t found = 0;
    if (*session > 0 ? !web_query_int(rq, out, TIDE_STORE_Q_SESSION_EXISTS, p, 1, -1, &found)
                     : !web_query_int(rq, out, latest, NULL, 0, 0, &found))
        return false;
    if (found < 0) {
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no session %" PRId64 " in the run log", *session);
        return false;
    }
    *session = found;
    return true;
}

bool web_arg_session(web_request *rq, web_reply *out, int64_t *session)
{
    return web_arg_session_or_latest(rq, out, TIDE_STORE_Q_LATEST_SESSION, session);
}

bool web_arg_run(web_request *rq, web_reply *out, const char *name, bool required, int64_t *run)
{
    const char *s;
    if (required && !web_arg_required(rq, out, name, &s))
        return false;
    if (!web_arg_int(rq, out, name, 0, 1, INT64_MAX, run))
        return false;
    if (*run == 0)
        return true;
    char buf[24];
    const char *p[] = {web_itoa(buf, *run)};
    tide_store_table *t = web_query(rq, out, TIDE_STORE_Q_RUN_BRIEF, p, 1, 1);
    if (!t)
        return false;
    bool found = tide_store_table_num_rows(t) > 0;
    tide_store_table_free(t);
    if (!found)
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no run %" PRId64 " in the run log", *run);
    return found;
}

/* ---------------------------------------------------------------- the drawing cache */

char *web_cache_get(tide_web *w, const char *key, size_t *len)
{
    char *copy = NULL;
    pthread_mutex_lock(&w->cache_lock);
    for (int i = 0; i < WEB_CACHE_SLOTS; i++) {
        web_cache_entry *e = &w->cache[i];
        if (e->key && strcmp(e->key, key) == 0) {
            if ((copy = malloc(e->len + 1)) != NULL) {
                memcpy(copy, e->body, e->len + 1);
                *len = e->len;
                e->used = ++w->cache_clock;
            }
            break;
        }
    }
    if (copy)
        w->cache_hits++;
    else
        w->cache_misses++;
    pthread_mutex_unlock(&w->cache_lock);
    return copy;
}

void web_cache_counts(tide_web *w, int64_t *hits, int64_t *misses)
{
    pthread_mutex_lock(&w->cache_lock);
    *hits = w->cache_hits;
    *misses = w->cache_misses;
    pthread_mutex_unlock(&w->cache_lock);
}

void web_cache_put(tide_web *w, const char *key, const char *body, size_t len)
{
    char *k = strdup(key), *b = malloc(len + 1);
    if (!k || !b) {
        free(k);
        free(b);
        return;
    }
    memcpy(b, body, len);
    b[len] = 0;
    pthread_mutex_lock(&w->cache_lock);
    web_cache_entry *victim = &w->cache[0];
    for (int i = 0; i < WEB_CACHE_SLOTS; i++) {
        web_cache_entry *e = &w->cache[i];
        if (e->key && strcmp(e->key, key) == 0) { /* another thread drew it meanwhile */
            victim = e;
            break;
        }
        if (!e->key || e->used < victim->used)
            victim = e;
        if (!e->key)
            break;
    }
    free(victim->key);
    free(victim->body);
    *victim = (web_cache_entry){.key = k, .body = b, .len = len, .used = ++w->cache_clock};
    pthread_mutex_unlock(&w->cache_lock);
}

/* ---------------------------------------------------------------- routing */

static const struct route {
    const char *path;
    web_handler handler;
} routes[] = {
    {"/api/status", web_api_status},
    {"/api/sessions", web_api_sessions},
    {"/api/runs", web_api_runs},
    {"/api/run", web_api_run},
    {"/api/graphs", web_api_graphs},
    {"/api/graph", web_api_graph},
    {"/api/graph.svg", web_api_graph_svg},
    {"/api/graph/legend", web_api_graph_legend},
    {"/api/devices", web_api_devices},
    {"/api/node", web_api_node},
    {"/api/timeline", web_api_timeline},
    {"/api/trace.json", web_api_trace},
    {"/api/tensors", web_api_tensors},
    {"/api/tensor", web_api_tensor},
    {"/api/tensor/values", web_api_tensor_values},
    {"/api/tensor/history", web_api_tensor_history},
    {"/api/tensor/histograms", web_api_tensor_histograms},
    {"/api/images", web_api_images},
    {"/api/scalars", web_api_scalars},
    {"/api/scalar", web_api_scalar},
    {"/api/compare", web_api_compare},
    {"/api/debug/state", web_api_debug_state},
    {"/api/debug/tensor", web_api_debug_tensor},
    {"/api/debug/command", web_api_debug_command},
};

static void route(web_request *rq, const char *path, web_reply *out)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i].path) == 0) {
            routes[i].handler(rq, out);
            return;
        }
    if (!web_asset_reply(path, out))
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no such page or endpoint: %.100s", path);
}

/* Queues the reply with the headers every reply carries. */
static enum MHD_Result send_reply(struct MHD_Connection *con, web_reply *out, bool allow_header)
{
    struct MHD_Response *resp;
    if (out->body) {
        resp = MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
        if (resp)
            out->body = NULL; /* libmicrohttpd frees it */
    } else
        resp = MHD_create_response_from_buffer(out->len, (void *)out->static_body, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out->content_type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy", csp);
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, out->cacheable ? "no-cache" : "no-store");
    if (out->disposition[0])
        MHD_add_response_header(resp, "Content-Disposition", out->disposition);
    if (allow_header)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result r = MHD_queue_response(con, (unsigned)out->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* The URI as received (before unescaping): its length and whether it holds an escaped NUL ("%00",
 * which would cut the unescaped path short) go to the connection's request record, the request's
 * context. */
static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *con)
{
    web_request_line *line = web_guard_request_line(((tide_web *)cls)->guard, con);
    if (line) {
        line->uri_len = strlen(uri);
        line->escaped_nul = strstr(uri, "%00") != NULL;
        line->uri_end = uri + line->uri_len;
    }
    return line;
}

/* True when the request line held a raw NUL byte in its URI. libmicrohttpd parses the line by its
 * length and cuts the URI at its last space: a NUL byte inside ends the URI's C string early, so the
 * version (which follows that space in the same buffer) does not start right after the string. */
static bool raw_nul_in_uri(const web_request_line *line, const char *version)
{
    return line && version > line->uri_end + 1 && version <= line->uri_end + 1 + WEB_MAX_URI + 64;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    int *counts = cls;
    counts[0] += strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0;
    counts[1] += strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0;
    return MHD_YES;
}

/* The checks of a request before it is routed; false with the error in out. */
static bool request_ok(const tide_web *w, struct MHD_Connection *con, const char *url, const char *method,
                       const char *version, const web_request_line *line, web_reply *out, bool *allow)
{
    size_t uri_len = line ? line->uri_len : strlen(url);
    int counts[2] = {0, 0}; /* Content-Length, Transfer-Encoding */
    MHD_get_connection_values(con, MHD_HEADER_KIND, count_header, counts);
    if (uri_len > WEB_MAX_URI)
        web_reply_error(out, MHD_HTTP_URI_TOO_LONG, "the URI is %zu bytes long; at most %d are accepted", uri_len,
                        WEB_MAX_URI);
    else if (line && line->escaped_nul)
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "the URI holds an escaped NUL byte (%%00)");
    else if (raw_nul_in_uri(line, version))
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "the URI holds a NUL byte");
    else if (counts[0] > 1)
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "the request has %d Content-Length headers; at most one is "
                        "accepted", counts[0]);
    else if (counts[0] && counts[1])
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "the request has both Content-Length and Transfer-Encoding");
    else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 && !web_debug_method_allowed(w, url, method)) {
        web_reply_error(out, MHD_HTTP_METHOD_NOT_ALLOWED, "method %.20s is not allowed: the server is read-only "
                        "(GET and HEAD only)", method);
        *allow = true;
    } else
        return true;
    return false;
}

/* True when the request announces a body (tide reads none). */
static bool has_body(struct MHD_Connection *con)
{
    const char *length = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (length && strspn(length, "0") != strlen(length)) ||
           MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* libmicrohttpd calls this when a request's header is complete, and again when the whole request is.
 * A request without a body is answered at the second call, so that the connection may serve the next
 * one (libmicrohttpd closes a connection whose reply was queued at the first call); a refused request
 * or one with a body (never read) is answered at once, and its connection closed after the answer. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls)
{
    (void)upload_data;
    tide_web *w = cls;
    web_request_line *line = *req_cls;
    web_request rq = {.con = con, .w = w, .db = w->db_path, .method = method};
    web_reply out = {.status = MHD_HTTP_OK, .content_type = WEB_JSON_TYPE};
    bool allow = false;
    *upload_data_size = 0; /* a body is never read */
    bool ok = line && line->deferred ? true : request_ok(w, con, url, method, version, line, &out, &allow);
    if (ok && line && !line->deferred && !has_body(con)) {
        line->deferred = true; /* the request's header arrived in time: no deadline while it is served */
        web_guard_request_handling(w->guard, con);
        return MHD_YES;
    }
    web_guard_request_handling(w->guard, con);
    if (ok)
        route(&rq, url, &out);
    enum MHD_Result r = send_reply(con, &out, allow);
    free(out.body);
    web_guard_reply_queued(w->guard, con);
    return r;
}

/* ---------------------------------------------------------------- starting and stopping */

void tide_web_options_init(tide_web_options *o)
{
    memset(o, 0, sizeof *o);
    o->port = WEB_DEFAULT_PORT;
    o->max_connections = WEB_DEFAULT_MAX_CONNECTIONS;
    o->max_per_address = WEB_DEFAULT_MAX_PER_ADDRESS;
    o->header_timeout_ms = WEB_DEFAULT_HEADER_TIMEOUT_MS;
    o->reply_timeout_ms = WEB_DEFAULT_REPLY_TIMEOUT_MS;
}

/* The limits of o (0: the default), or TIDE_INVALID_ARGUMENT naming the bad one. */
static tide_status limits_of(const tide_web_options *o, web_limits *l, tide_error *err)
{
    const struct {
        const char *name;
        int value, def, max;
    } f[] = {
        {"max_connections", o->max_connections, WEB_DEFAULT_MAX_CONNECTIONS, WEB_MAX_CONNECTIONS},
        {"max_per_address", o->max_per_address, WEB_DEFAULT_MAX_PER_ADDRESS, WEB_MAX_CONNECTIONS},
        {"header_timeout_ms", o->header_timeout_ms, WEB_DEFAULT_HEADER_TIMEOUT_MS, 3600000},
        {"reply_timeout_ms", o->reply_timeout_ms, WEB_DEFAULT_REPLY_TIMEOUT_MS, 3600000},
    };
    int v[4];
    for (int i = 0; i < 4; i++) {
        if (f[i].value < 0 || f[i].value > f[i].max)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "web: %s is %d; it must be from 1 to %d (0: %d)",
                                  f[i].name, f[i].value, f[i].max, f[i].def);
        v[i] = f[i].value ? f[i].value : f[i].def;
    }
    *l = (web_limits){.max_connections = v[0], .max_per_address = v[1], .header_timeout_ms = v[2],
                      .reply_timeout_ms = v[3]};
    return TIDE_OK;
}

/* libmicrohttpd's own connection limit: above the guard's, which closes connections to stay under
 * its own (closing takes a moment). */
static unsigned hard_connection_limit(const web_limits *l) { return (unsigned)(l->max_connections + l->max_connections / 4 + 16); }

/* Raises the soft limit on open files towards the hard one when the connections need more. */
static void raise_file_limit(const web_limits *l)
{
    struct rlimit r;
    rlim_t want = (rlim_t)hard_connection_limit(l) + 256;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= want)
        return;
    r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max > want ? want : r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
}

/* A listening socket on bind:port (port 0: any). Returns the fd, or -1 with err set. */
static int listen_on(const char *bind_addr, int port, bool *ipv6, tide_error *err)
{
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    const char *addr = !bind_addr || strcmp(bind_addr, "localhost") == 0 ? "127.0.0.1" : bind_addr;
    *ipv6 = false;
    if (inet_pton(AF_INET, addr, &a4.sin_addr) != 1) {
        if (inet_pton(AF_INET6, addr, &a6.sin6_addr) != 1) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT,
                           "web: '%s' is not an IP address to listen on (e.g. 127.0.0.1, 0.0.0.0, ::1)", addr);
            return -1;
        }
        *ipv6 = true;
    }
    int fd = socket(*ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd >= 0 && *ipv6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    bool ok = fd >= 0 && (*ipv6 ? bind(fd, (struct sockaddr *)&a6, sizeof a6) : bind(fd, (struct sockaddr *)&a4, sizeof a4)) == 0 &&
              listen(fd, WEB_LISTEN_BACKLOG) == 0;
    if (!ok) {
        int e = errno;
        tide_error_set(err, TIDE_UNAVAILABLE, "web: cannot listen on %s port %d: %s%s", addr, port, strerror(e),
                       e == EADDRINUSE ? " (another server uses it: pick another with --port, or --port 0)" : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t n = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &n) != 0)
        return 0;
    return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Fails unless path is a run log this build reads (the totals query checks the schema). */
static tide_status check_log(const char *path, tide_error *err)
{
    if (!path || !*path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "web: no run log given");
    tide_store_table *t = tide_store_query_totals(path, err);
    tide_store_table_free(t);
    return t ? TIDE_OK : tide_error_code(err);
}

tide_web *tide_web_start(const tide_web_options *o, tide_error *err)
{
    if (!o || o->port < -1 || o->port > 65535) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "web: port %d: must be from 1 to 65535 (0: 6006, -1: any free port)",
                       o ? o->port : 0);
        return NULL;
    }
    web_limits limits;
    if (limits_of(o, &limits, err) != TIDE_OK || check_log(o->db_path, err) != TIDE_OK)
        return NULL;
    bool ipv6 = false;
    int fd = listen_on(o->bind, o->port == 0 ? WEB_DEFAULT_PORT : o->port < 0 ? 0 : o->port, &ipv6, err);
    if (fd < 0)
        return NULL;
    tide_web *w = calloc(1, sizeof *w);
    if (!w || !(w->db_path = strdup(o->db_path))) {
        free(w);
        close(fd);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "web: out of memory");
        return NULL;
    }
    w->limits = limits;
    if (!(w->guard = web_guard_new(&limits, err))) {
        free(w->db_path);
        free(w);
        close(fd);
        return NULL;
    }
    raise_file_limit(&limits);
    pthread_mutex_init(&w->cache_lock, NULL);
    w->port = bound_port(fd);
    const char *addr = !o->bind || strcmp(o->bind, "localhost") == 0 ? "127.0.0.1" : o->bind;
    snprintf(w->url, sizeof w->url, ipv6 ? "http://[%s]:%d/" : "http://%s:%d/", addr, w->port);
    snprintf(w->bind, sizeof w->bind, ipv6 ? "[%s]" : "%s", addr);
    if (o->debugger && !web_debug_init(w, o->debugger, w->url)) {
        close(fd);
        tide_error_set(err, TIDE_UNAVAILABLE, "web: no random bytes for the debugger's token (getrandom failed)");
        web_guard_free(w->guard);
        pthread_mutex_destroy(&w->cache_lock);
        free(w->db_path);
        free(w);
        return NULL;
    }
    w->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (ipv6 ? MHD_USE_IPv6 : 0), 0,
                                 web_guard_accept, w->guard, handle, w, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned)WEB_THREADS,
                                 MHD_OPTION_CONNECTION_LIMIT, hard_connection_limit(&limits),
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_IDLE_TIMEOUT_S,
                                 MHD_OPTION_NOTIFY_CONNECTION, web_guard_notify, w->guard,
                                 MHD_OPTION_NOTIFY_COMPLETED, web_guard_request_completed, w->guard,
                                 MHD_OPTION_URI_LOG_CALLBACK, uri_logger, w, MHD_OPTION_END);
    if (!w->daemon) {
        close(fd);
        tide_error_set(err, TIDE_UNAVAILABLE, "web: the HTTP server (libmicrohttpd) did not start on %s", w->url);
        web_guard_free(w->guard);
        pthread_mutex_destroy(&w->cache_lock);
        free(w->db_path);
        free(w);
        return NULL;
    }
    return w;
}

int tide_web_port(const tide_web *w) { return w ? w->port : 0; }
const char *tide_web_url(const tide_web *w) { return w ? w->url : NULL; }
const char *tide_web_db_path(const tide_web *w) { return w ? w->db_path : NULL; }
const char *tide_web_debugger_url(const tide_web *w) { return w && w->has_debugger ? w->debugger_url : NULL; }

void tide_web_stop(tide_web *w)
{
    if (!w)
        return;
    MHD_stop_daemon(w->daemon); /* waits for the requests in progress; closes the listening socket */
    web_guard_free(w->guard);
    pthread_mutex_destroy(&w->cache_lock);
    for (int i = 0; i < WEB_CACHE_SLOTS; i++) {
        free(w->cache[i].key);
        free(w->cache[i].body);
    }
    free(w->db_path);
    free(w);
}
