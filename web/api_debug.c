/* api_debug.c — the debugger page's endpoints, served only when the REPL hands the server its debugger
 * (`:web`, `tide --web`; `tide serve` has none and stays read-only): the state of the debugger and of
 * a stopped step (GET /api/debug/state), a tensor of that step (GET /api/debug/tensor) and the
 * commands Step, Continue, Abort, breakpoints (POST /api/debug/command).
 *
 * Who may drive it. The server makes a random token per process (16 bytes from getrandom, in hex) and
 * puts it in the URL the REPL prints, as Jupyter does. Every /api/debug request must carry it (the
 * header X-Tide-Token, or the parameter token) and must name this server in its Host header (and in
 * its Origin header when it has one): a page of another site, or one reached through DNS rebinding
 * (a foreign name resolving to 127.0.0.1), gets 403. Commands change the step, so they are POST only;
 * the GETs change nothing. What the debugger does is the REPL's (repl/), behind tide_web_debugger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "web_internal.h"

#define TOKEN_HEADER "X-Tide-Token"

bool web_debug_init(tide_web *w, const tide_web_debugger *d, const char *url_base)
{
    unsigned char bytes[16];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(w->token + 2 * i, 3, "%02x", bytes[i]);
    w->debugger = *d;
    w->has_debugger = true;
    snprintf(w->debugger_url, sizeof w->debugger_url, "%sdebugger?token=%s", url_base, w->token);
    return true;
}

bool web_debug_method_allowed(const tide_web *w, const char *path, const char *method)
{
    return w->has_debugger && strcmp(method, "POST") == 0 && strcmp(path, "/api/debug/command") == 0;
}

/* Whether host ("127.0.0.1:6006", "localhost:6006", "[::1]:6006", or the bound address) is this
 * server as a browser on this machine names it. */
static bool host_is_ours(const tide_web *w, const char *host)
{
    const char *names[] = {"127.0.0.1", "localhost", "[::1]", w->bind};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s:%d", names[i], w->port);
        if (strcasecmp(host, want) == 0)
            return true;
    }
    return false;
}

/* Time independent of where a and b differ. */
static bool same_token(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (!a || strlen(a) != n)
        return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/* True when the request may use the debugger; else out holds 404 (no debugger) or 403. */
static bool allowed(web_request *rq, web_reply *out)
{
    tide_web *w = rq->w;
    if (!w->has_debugger) {
        web_reply_error(out, 404, "this server has no debugger: `tide serve` is read-only; the REPL's own server "
                                  "(:web, tide --web) serves the debugger page");
        return false;
    }
    const char *host = MHD_lookup_connection_value(rq->con, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(rq->con, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    const char *token = MHD_lookup_connection_value(rq->con, MHD_HEADER_KIND, TOKEN_HEADER);
    if (!token)
        token = web_arg(rq, "token");
    if (!host || !host_is_ours(w, host)) {
        web_reply_error(out, 403, "the debugger answers only requests to this server by its address "
                                  "(Host: %.100s): a foreign name for it is refused", host ? host : "(none)");
        return false;
    }
    if (origin && !(strncmp(origin, "http://", 7) == 0 && host_is_ours(w, origin + 7))) {
        web_reply_error(out, 403, "the debugger refuses requests from another site (Origin: %.100s)", origin);
        return false;
    }
    if (!same_token(token, w->token)) {
        web_reply_error(out, 403, "the debugger needs the token of the address the REPL printed (:web): %s",
                        token ? "this one is wrong" : "none was given (header " TOKEN_HEADER " or ?token=)");
        return false;
    }
    return true;
}

static bool method_is(web_request *rq, web_reply *out, const char *want)
{
    bool head_for_get = strcmp(want, "GET") == 0 && strcmp(rq->method, "HEAD") == 0;
    if (strcmp(rq->method, want) == 0 || head_for_get)
        return true;
    web_reply_error(out, 405, "%s takes %s", strcmp(want, "POST") == 0 ? "a debugger command" : "this endpoint",
                    want);
    return false;
}

void web_api_debug_state(web_request *rq, web_reply *out)
{
    if (!allowed(rq, out) || !method_is(rq, out, "GET"))
        return;
    char *body = rq->w->debugger.state_json(rq->w->debugger.user);
    web_reply_json(out, body, body ? strlen(body) : 0);
}

void web_api_debug_tensor(web_request *rq, web_reply *out)
{
    const char *node = NULL;
    int64_t output = 0;
    if (!allowed(rq, out) || !method_is(rq, out, "GET") || !web_arg_required(rq, out, "node", &node) ||
        !web_arg_int(rq, out, "output", 0, 0, 1 << 20, &output))
        return;
    char *message = NULL;
    char *body = rq->w->debugger.tensor_json(rq->w->debugger.user, node, (int)output, &message);
    if (body)
        web_reply_json(out, body, strlen(body));
    else
        web_reply_error(out, 404, "%s", message ? message : "no such tensor in the stopped step");
    free(message);
}

void web_api_debug_command(web_request *rq, web_reply *out)
{
    const char *command = NULL;
    if (!allowed(rq, out) || !method_is(rq, out, "POST") || !web_arg_required(rq, out, "command", &command))
        return;
    char *message = rq->w->debugger.command(rq->w->debugger.user, command);
    if (message) {
        web_reply_error(out, 409, "%s", message); /* refused in the debugger's state (e.g. not stopped) */
        free(message);
        return;
    }
    static const char ok[] = "{\"ok\":true}";
    char *body = strdup(ok);
    web_reply_json(out, body, body ? strlen(body) : 0);
}
