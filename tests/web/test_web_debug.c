/* test_web_debug.c — the debugger page's endpoints (web/api_debug.c) over real HTTP, with a fake
 * debugger table standing in for the REPL's: the token (32 hex characters, one per server), 403 without
 * it, with a wrong one, from a foreign Origin or through a foreign Host name (DNS rebinding); commands
 * are POST only and reach the debugger only when allowed; the debugger's refusals are 409 with its
 * message; tensors; and a server started without a debugger (`tide serve`) has no debugger URL, answers
 * 404 on /api/debug/ and 405 on POST. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "viz/viz_log.h"
#include "web.h"

/* ---------------------------------------------------------------- the fake debugger */

typedef struct fake {
    pthread_mutex_t lock;
    int commands;
    char last[256];
} fake;

static char *fake_state(void *user)
{
    (void)user;
    return strdup("{\"stopped\":true,\"running\":false,\"run\":7,\"at\":{\"node\":\"h\",\"after\":true}}");
}

static char *fake_command(void *user, const char *command)
{
    fake *f = user;
    pthread_mutex_lock(&f->lock);
    f->commands++;
    snprintf(f->last, sizeof f->last, "%s", command);
    pthread_mutex_unlock(&f->lock);
    return strcmp(command, "refuse") == 0 ? strdup("no step is stopped") : NULL;
}

static char *fake_tensor(void *user, const char *node, int output, char **message)
{
    (void)user;
    if (strcmp(node, "h") == 0 && output == 0)
        return strdup("{\"node\":\"h\",\"output\":0,\"dtype\":\"float32\",\"shape\":[],\"values\":[6]}");
    *message = strdup("'nope' has produced nothing in this step");
    return NULL;
}

static fake the_fake;
static viz_log vlog;

/* ---------------------------------------------------------------- raw HTTP */

typedef struct reply {
    int status;
    char text[4096]; /* head and body */
} reply;

/* Sends method path with extra header lines (each ending in \r\n) and Host: host (NULL: 127.0.0.1:port). */
static reply http(int port, const char *method, const char *path, const char *host, const char *headers)
{
    reply r = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    CU_ASSERT_FATAL(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    char req[2048], own_host[64];
    snprintf(own_host, sizeof own_host, "127.0.0.1:%d", port);
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s%s\r\n", method, path,
                     host ? host : own_host, headers ? headers : "",
                     strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
    CU_ASSERT_EQUAL(write(fd, req, (size_t)n), n);
    size_t got = 0;
    ssize_t k;
    while (got < sizeof r.text - 1 && (k = read(fd, r.text + got, sizeof r.text - 1 - got)) > 0)
        got += (size_t)k;
    close(fd);
    r.text[got] = 0;
    sscanf(r.text, "HTTP/1.1 %d", &r.status);
    return r;
}

static const char *body_of(const reply *r)
{
    const char *b = strstr(r->text, "\r\n\r\n");
    return b ? b + 4 : "";
}

static int commands_seen(void)
{
    pthread_mutex_lock(&the_fake.lock);
    int n = the_fake.commands;
    pthread_mutex_unlock(&the_fake.lock);
    return n;
}

static tide_web *start(bool with_debugger)
{
    tide_web_debugger d = {.user = &the_fake, .state_json = fake_state, .command = fake_command,
                           .tensor_json = fake_tensor};
    tide_web_options o;
    tide_web_options_init(&o);
    o.db_path = vlog.path;
    o.port = -1;
    o.debugger = with_debugger ? &d : NULL;
    tide_error *err = tide_error_new();
    tide_web *w = tide_web_start(&o, err);
    if (!w)
        fprintf(stderr, "web start: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    tide_error_free(err);
    return w;
}

/* The token in w's debugger URL. */
static void token_of(tide_web *w, char *token, size_t size)
{
    const char *url = tide_web_debugger_url(w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(url);
    const char *t = strstr(url, "/debugger?token=");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    snprintf(token, size, "%s", t + strlen("/debugger?token="));
}

/* A server with the fake debugger, its port, its token and the header that carries it. */
typedef struct debug_server {
    tide_web *w;
    int port;
    char token[64], header[256];
} debug_server;

static debug_server start_debug(void)
{
    debug_server d = {.w = start(true)};
    d.port = tide_web_port(d.w);
    token_of(d.w, d.token, sizeof d.token);
    snprintf(d.header, sizeof d.header, "X-Tide-Token: %s\r\n", d.token);
    return d;
}

/* ---------------------------------------------------------------- tests */

static void test_token(void)
{
    tide_web *a = start(true), *b = start(true);
    char ta[64], tb[64];
    token_of(a, ta, sizeof ta);
    token_of(b, tb, sizeof tb);
    CU_ASSERT_EQUAL(strlen(ta), 32);
    CU_ASSERT_EQUAL(strspn(ta, "0123456789abcdef"), 32);
    CU_ASSERT_STRING_NOT_EQUAL(ta, tb);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "http://127.0.0.1:%d/debugger?token=", tide_web_port(a));
    CU_ASSERT_EQUAL(strncmp(tide_web_debugger_url(a), prefix, strlen(prefix)), 0);
    /* the page itself is served */
    reply page = http(tide_web_port(a), "GET", "/debugger", NULL, NULL);
    CU_ASSERT_EQUAL(page.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(page.text, "debugger.js"));
    tide_web_stop(a);
    tide_web_stop(b);
}

static void test_state_needs_token(void)
{
    debug_server d = start_debug();
    tide_web *w = d.w;
    int port = d.port;
    char *token = d.token, *header = d.header, path[128];
    reply r = http(port, "GET", "/api/debug/state", NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 403);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "token"));
    r = http(port, "GET", "/api/debug/state", NULL, "X-Tide-Token: 00000000000000000000000000000000\r\n");
    CU_ASSERT_EQUAL(r.status, 403);
    r = http(port, "GET", "/api/debug/state", NULL, header);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "\"run\":7"));
    snprintf(path, sizeof path, "/api/debug/state?token=%s", token);
    r = http(port, "GET", path, NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 200);
    /* DNS rebinding: the right token, a foreign name for the host */
    char evil[64];
    snprintf(evil, sizeof evil, "evil.example:%d", port);
    r = http(port, "GET", path, evil, NULL);
    CU_ASSERT_EQUAL(r.status, 403);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "Host"));
    char localhost[64];
    snprintf(localhost, sizeof localhost, "localhost:%d", port);
    r = http(port, "GET", path, localhost, NULL);
    CU_ASSERT_EQUAL(r.status, 200);
    tide_web_stop(w);
}

static void test_commands(void)
{
    debug_server d = start_debug();
    tide_web *w = d.w;
    int port = d.port;
    char *token = d.token, *header = d.header, path[160];
    int before = commands_seen();

    reply r = http(port, "POST", "/api/debug/command?command=step", NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 403);
    CU_ASSERT_EQUAL(commands_seen(), before);
    snprintf(header, sizeof d.header, "X-Tide-Token: %s\r\nOrigin: http://evil.example\r\n", token);
    r = http(port, "POST", "/api/debug/command?command=step", NULL, header);
    CU_ASSERT_EQUAL(r.status, 403);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "another site"));
    CU_ASSERT_EQUAL(commands_seen(), before);

    snprintf(header, sizeof d.header, "X-Tide-Token: %s\r\nOrigin: http://127.0.0.1:%d\r\n", token, port);
    r = http(port, "POST", "/api/debug/command?command=step%203", NULL, header);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_STRING_EQUAL(body_of(&r), "{\"ok\":true}");
    CU_ASSERT_EQUAL(commands_seen(), before + 1);
    pthread_mutex_lock(&the_fake.lock);
    CU_ASSERT_STRING_EQUAL(the_fake.last, "step 3");
    pthread_mutex_unlock(&the_fake.lock);

    /* the debugger's refusal */
    r = http(port, "POST", "/api/debug/command?command=refuse", NULL, header);
    CU_ASSERT_EQUAL(r.status, 409);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "no step is stopped"));
    /* a command is POST only; other endpoints stay GET only */
    snprintf(path, sizeof path, "/api/debug/command?command=step&token=%s", token);
    r = http(port, "GET", path, NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 405);
    r = http(port, "POST", "/api/runs", NULL, header);
    CU_ASSERT_EQUAL(r.status, 405);
    r = http(port, "POST", "/api/debug/command", NULL, header);
    CU_ASSERT_EQUAL(r.status, 400);
    CU_ASSERT_EQUAL(commands_seen(), before + 2);
    tide_web_stop(w);
}

static void test_tensor(void)
{
    debug_server d = start_debug();
    tide_web *w = d.w;
    int port = d.port;
    const char *header = d.header;
    reply r = http(port, "GET", "/api/debug/tensor?node=h", NULL, header);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "\"values\":[6]"));
    r = http(port, "GET", "/api/debug/tensor?node=nope", NULL, header);
    CU_ASSERT_EQUAL(r.status, 404);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "produced nothing"));
    r = http(port, "GET", "/api/debug/tensor", NULL, header);
    CU_ASSERT_EQUAL(r.status, 400);
    r = http(port, "GET", "/api/debug/tensor?node=h", NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 403);
    tide_web_stop(w);
}

static void test_read_only_server(void)
{
    tide_web *w = start(false);
    int port = tide_web_port(w);
    CU_ASSERT_PTR_NULL(tide_web_debugger_url(w));
    int before = commands_seen();
    reply r = http(port, "GET", "/api/debug/state", NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 404);
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(&r), "read-only"));
    r = http(port, "POST", "/api/debug/command?command=step", NULL, "X-Tide-Token: x\r\n");
    CU_ASSERT_EQUAL(r.status, 405);
    CU_ASSERT_EQUAL(commands_seen(), before);
    tide_web_stop(w);
}

int main(void)
{
    pthread_mutex_init(&the_fake.lock, NULL);
    viz_log_open(&vlog, 1, "x = Const(value=tensor(float32, [], [2]), dtype=float32)\n");
    viz_log_run(&vlog, "x", 1);
    viz_log_close(&vlog);
    static const th_test tests[] = {TH_TEST(test_token), TH_TEST(test_state_needs_token), TH_TEST(test_commands),
                                    TH_TEST(test_tensor), TH_TEST(test_read_only_server), TH_END};
    int rc = th_main("web_debug", tests);
    viz_log_remove(&vlog);
    return rc;
}
