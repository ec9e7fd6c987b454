/* debugger_web.c — the step debugger from another thread: the browser's debugger page (web/web.h's
 * tide_web_debugger table, docs/web.md) reads the state, sends commands and reads tensors from the
 * web server's threads.
 *
 * A stopped step can be looked at only on the main thread (the step view is valid inside the engine's
 * `paused` only), so while a step is stopped every request is posted to the main thread:
 *
 *   server thread: request -> queue (under web_lock) -> a byte into the wake pipe -> wait (<= 2 s)
 *   main thread, at the stop's prompt: poll(stdin, wake pipe) -> serve the queue -> answer -> signal
 *
 * The stop's prompt (debugger.c) waits on both the terminal and the pipe, so Step or Continue from the
 * page resume the step while the terminal prompt is idle; the terminal shows what the page did. When
 * no step is stopped, requests are answered on the server thread: the breakpoints are guarded by the
 * debugger's lock, and there is no step to look at.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "debugger.h"
#include "json.h"

#define WEB_WAIT_MS 2000      /* how long a server thread waits for the main thread */
#define WEB_MAX_VALUES 1000   /* tensor_json's values */

typedef enum web_req_kind { REQ_STATE = 0, REQ_COMMAND = 1, REQ_TENSOR = 2 } web_req_kind;

struct repl_web_req {
    web_req_kind kind;
    char *text;            /* the command, or the node */
    int output;
    char *result, *message;
    bool done, abandoned;
    repl_web_req *next;
};

/* ---------------------------------------------------------------- JSON of a stop */

static const char *state_word(tide_debug_node_state s)
{
    static const char *const words[] = {"not_in_step", "waiting", "ready", "running", "done", "stopped", "skipped"};
    return (int)s >= 0 && (size_t)s < sizeof words / sizeof words[0] ? words[s] : "not_in_step";
}

static void json_health(tide_json *j, const tide_tensor *t)
{
    tide_health h;
    if (!t || !tide_tensor_health(t, &h)) {
        tide_json_null(j);
        return;
    }
    tide_json_begin_object(j);
    const struct { const char *k; int64_t v; } counts[] = {
        {"elements", h.elements}, {"nan", h.nan}, {"neg_inf", h.neg_inf}, {"pos_inf", h.pos_inf},
        {"negative", h.negative}, {"zero", h.zero}, {"positive", h.positive}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        tide_json_key(j, counts[i].k);
        tide_json_int(j, counts[i].v);
    }
    const struct { const char *k; double v; } stats[] = {{"min", h.min}, {"max", h.max}, {"mean", h.mean}, {"std", h.std}};
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
        tide_json_key(j, stats[i].k);
        tide_json_double(j, stats[i].v);
    }
    tide_json_end_object(j);
}

static void json_breakpoints(repl_debugger *d, tide_json *j)
{
    tide_json_key(j, "breakpoints");
    tide_json_begin_array(j);
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps; i++) {
        const repl_breakpoint *bp = d->bps[i];
        tide_json_begin_object(j);
        tide_json_key(j, "id");
        tide_json_int(j, bp->id);
        tide_json_key(j, "spec");
        tide_json_string(j, bp->spec);
        tide_json_key(j, "node");
        tide_json_string(j, bp->kind == REPL_BP_NODE && !strpbrk(bp->pattern, "*?[") ? bp->pattern : NULL);
        tide_json_key(j, "enabled");
        tide_json_bool(j, bp->enabled);
        tide_json_key(j, "hits");
        tide_json_int(j, (int64_t)atomic_load(&bp->hits));
        tide_json_end_object(j);
    }
    pthread_rwlock_unlock(&d->lock);
    tide_json_end_array(j);
}

static void json_at(repl_debugger *d, tide_json *j)
{
    tide_json_key(j, "at");
    if (!d->step) {
        tide_json_null(j);
        return;
    }
    tide_json_begin_object(j);
    tide_json_key(j, "node");
    tide_json_string(j, tide_node_name(d->ev->node));
    tide_json_key(j, "after");
    tide_json_bool(j, d->ev->after);
    tide_json_key(j, "frame");
    tide_json_string(j, d->ev->at.frame ? d->ev->at.frame : "");
    tide_json_key(j, "iteration");
    tide_json_int(j, d->ev->at.iteration);
    tide_json_key(j, "reason");
    tide_json_string(j, strncmp(d->reason, "until", 5) == 0 ? "until" : d->reason);
    tide_json_end_object(j);
}

static void json_nodes(repl_debugger *d, tide_json *j)
{
    if (!d->step)
        return;
    tide_json_key(j, "nodes");
    tide_json_begin_array(j);
    tide_graph *g = d->r->graph;
    for (int i = 0; i < tide_graph_num_nodes(g); i++) {
        const tide_node *n = tide_graph_node_at(g, i);
        tide_json_begin_object(j);
        tide_json_key(j, "name");
        tide_json_string(j, tide_node_name(n));
        tide_json_key(j, "state");
        tide_json_string(j, state_word(tide_debug_step_node_state(d->step, n)));
        tide_json_key(j, "health");
        tide_tensor *v = NULL;
        if (tide_node_num_outputs(n) > 0 && tide_debug_step_value(d->step, n, 0, &v, NULL, NULL) == TIDE_OK) {
            json_health(j, v);
            tide_tensor_release(v);
        } else
            tide_json_null(j);
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
}

/* The state; the step's part only on the main thread (stopped tells which). */
static char *state_json(repl_debugger *d, bool on_main)
{
    bool stopped = on_main && d->step;
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "stopped");
    tide_json_bool(&j, stopped);
    tide_json_key(&j, "running");
    tide_json_bool(&j, !stopped && atomic_load(&d->running));
    tide_json_key(&j, "run");
    tide_json_int(&j, atomic_load(&d->last_run_step));
    if (stopped) {
        json_at(d, &j);
        tide_json_key(&j, "message");
        tide_json_string(&j, d->message);
        json_nodes(d, &j);
    } else {
        tide_json_key(&j, "at");
        tide_json_null(&j);
        tide_json_key(&j, "message");
        tide_json_null(&j);
    }
    json_breakpoints(d, &j);
    tide_json_end_object(&j);
    return tide_json_take(&j, NULL);
}

static char *tensor_json(repl_debugger *d, const char *node, int output, char **message)
{
    char spec[600], msg[512];
    snprintf(spec, sizeof spec, "%s:%d", node, output);
    tide_tensor *v = repl_dbg_value(d, spec, msg, sizeof msg);
    if (!v) {
        *message = strdup(msg);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "node");
    tide_json_string(&j, node);
    tide_json_key(&j, "output");
    tide_json_int(&j, output);
    tide_json_key(&j, "dtype");
    tide_json_string(&j, tide_dtype_name(tide_tensor_dtype(v)));
    tide_json_key(&j, "shape");
    tide_json_begin_array(&j);
    for (int i = 0; i < tide_tensor_rank(v); i++)
        tide_json_int(&j, tide_tensor_dim(v, i));
    tide_json_end_array(&j);
    tide_json_key(&j, "health");
    json_health(&j, v);
    int64_t n = tide_tensor_num_elements(v), shown = n < WEB_MAX_VALUES ? n : WEB_MAX_VALUES;
    tide_json_key(&j, "values");
    tide_json_begin_array(&j);
    for (int64_t i = 0; i < shown; i++) {
        if (tide_tensor_dtype(v) == TIDE_STRING) {
            size_t len;
            const char *s = tide_tensor_string_get(v, i, &len);
            tide_json_string_n(&j, s, len);
        } else
            tide_json_double(&j, tide_tensor_get_f64(v, i));
    }
    tide_json_end_array(&j);
    tide_json_key(&j, "truncated");
    tide_json_bool(&j, shown < n);
    tide_json_end_object(&j);
    tide_tensor_release(v);
    char *text = tide_json_take(&j, NULL);
    if (!text)
        *message = strdup("out of memory");
    return text;
}

/* ---------------------------------------------------------------- commands */

static char *message_of(const char *fmt, const char *arg)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, arg);
    return strdup(buf);
}

/* "break NODE": a breakpoint on NODE, or the one there deleted. */
static char *toggle_break(repl_debugger *d, const char *node)
{
    int found = 0;
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps && !found; i++)
        if (d->bps[i]->kind == REPL_BP_NODE && strcmp(d->bps[i]->pattern, node) == 0)
            found = d->bps[i]->id;
    pthread_rwlock_unlock(&d->lock);
    if (found) {
        repl_debugger_delete(d, found);
        return NULL;
    }
    char msg[512];
    return repl_debugger_add(d, node, msg, sizeof msg) ? NULL : strdup(msg);
}

/* One command from the page. stopped: on the main thread at a stop. Returns NULL or a message. */
static char *run_command(repl_debugger *d, const char *cmd, bool stopped, char *echo, size_t size)
{
    char word[32] = "";
    int n = 0;
    sscanf(cmd, "%31s %n", word, &n);
    const char *arg = cmd + n;
    bool go = strcmp(word, "step") == 0 || strcmp(word, "continue") == 0 || strcmp(word, "continue_bad") == 0 ||
              strcmp(word, "abort") == 0;
    snprintf(echo, size, "%s", cmd);
    if (go && !stopped)
        return message_of("%s: no step is stopped", word);
    if (strcmp(word, "step") == 0) {
        char *end;
        long k = *arg ? strtol(arg, &end, 10) : 1;
        if (*arg && (*end || k < 1 || k > 1000000000))
            return message_of("step N: N is a number of node executions (1 or more), not '%s'", arg);
        repl_debugger_resume(d, TIDE_DEBUG_STEP, (int)k);
    } else if (strcmp(word, "continue") == 0 || strcmp(word, "abort") == 0) {
        repl_debugger_resume(d, word[0] == 'a' ? TIDE_DEBUG_ABORT_RUN : TIDE_DEBUG_RESUME, 0);
    } else if (strcmp(word, "continue_bad") == 0) {
        char msg[512];
        if (!repl_debugger_has_bad(d) && !repl_debugger_add(d, "if has_inf_or_nan", msg, sizeof msg))
            return strdup(msg);
        repl_debugger_resume(d, TIDE_DEBUG_RESUME, 0);
    } else if (strcmp(word, "break") == 0 && *arg) {
        return toggle_break(d, arg);
    } else if ((strcmp(word, "delete") == 0 || strcmp(word, "enable") == 0 || strcmp(word, "disable") == 0) && *arg) {
        char *end;
        long id = strtol(arg, &end, 10);
        bool ok = !*end && id > 0 && id < 1000000 &&
                  (word[0] == 'd' && word[1] == 'e' ? repl_debugger_delete(d, (int)id)
                                                    : repl_debugger_enable(d, (int)id, word[0] == 'e'));
        if (!ok)
            return message_of("no breakpoint %s", arg);
    } else {
        return message_of("unknown command '%s' (step [N], continue, continue_bad, abort, break NODE, delete ID, "
                          "enable ID, disable ID)", cmd);
    }
    return NULL;
}

/* ---------------------------------------------------------------- the main thread's side */

static void serve_one(repl_debugger *d, repl_web_req *rq)
{
    char echo[600];
    if (rq->kind == REQ_STATE) {
        rq->result = state_json(d, true);
    } else if (rq->kind == REQ_TENSOR) {
        rq->result = tensor_json(d, rq->text, rq->output, &rq->message);
    } else {
        rq->message = run_command(d, rq->text, d->step != NULL, echo, sizeof echo);
        fflush(stdout);
        fprintf(stdout, "\r(from the web page) :%s%s%s\n", echo, rq->message ? ": " : "",
                rq->message ? rq->message : "");
        fflush(stdout);
    }
}

void repl_dbg_web_serve(repl_debugger *d)
{
    if (d->wake[0] < 0)
        return;
    char drain[64];
    while (read(d->wake[0], drain, sizeof drain) > 0)
        ;
    pthread_mutex_lock(&d->web_lock);
    repl_web_req *rq = d->requests;
    d->requests = NULL;
    pthread_mutex_unlock(&d->web_lock);
    while (rq) {
        repl_web_req *next = rq->next;
        serve_one(d, rq);
        pthread_mutex_lock(&d->web_lock);
        bool abandoned = rq->abandoned;
        rq->done = true;
        pthread_cond_broadcast(&d->web_cond);
        pthread_mutex_unlock(&d->web_lock);
        if (abandoned) { /* its server thread gave up waiting: nobody takes the answer */
            free(rq->text);
            free(rq->result);
            free(rq->message);
            free(rq);
        }
        rq = next;
    }
}

bool repl_debug_wake(repl *r)
{
    repl_debugger *d = r->debugger;
    if (!d || !d->step)
        return true;
    repl_dbg_web_serve(d);
    return d->decided;
}

void repl_dbg_web_serving(repl_debugger *d, bool on)
{
    pthread_mutex_lock(&d->web_lock);
    d->serving = on;
    pthread_mutex_unlock(&d->web_lock);
    if (!on)
        repl_dbg_web_serve(d); /* what came in meanwhile is answered before the stop ends */
}

/* ---------------------------------------------------------------- the server thread's side */

/* Posts rq to the main thread if it is serving a stop; false (rq untouched) when it is not. */
static bool post(repl_debugger *d, repl_web_req *rq)
{
    pthread_mutex_lock(&d->web_lock);
    if (!d->serving) {
        pthread_mutex_unlock(&d->web_lock);
        return false;
    }
    rq->next = NULL;
    repl_web_req **tail = &d->requests;
    while (*tail)
        tail = &(*tail)->next;
    *tail = rq;
    ssize_t ignored = write(d->wake[1], "w", 1);
    (void)ignored;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WEB_WAIT_MS / 1000;
    while (!rq->done && pthread_cond_timedwait(&d->web_cond, &d->web_lock, &deadline) != ETIMEDOUT)
        ;
    if (!rq->done) {
        rq->abandoned = true; /* the main thread frees it */
        pthread_mutex_unlock(&d->web_lock);
        return false;
    }
    pthread_mutex_unlock(&d->web_lock);
    return true;
}

static repl_web_req *request_new(web_req_kind kind, const char *text, int output)
{
    repl_web_req *rq = calloc(1, sizeof *rq);
    if (rq) {
        *rq = (repl_web_req){.kind = kind, .text = text ? strdup(text) : NULL, .output = output};
        if (text && !rq->text) {
            free(rq);
            rq = NULL;
        }
    }
    return rq;
}

static void request_free(repl_web_req *rq)
{
    free(rq->text);
    free(rq);
}

char *repl_dbg_web_state_json(void *user)
{
    repl_debugger *d = user;
    repl_web_req *rq = request_new(REQ_STATE, NULL, 0);
    if (!rq)
        return NULL;
    if (!post(d, rq)) {
        bool abandoned = rq->abandoned;
        if (!abandoned)
            request_free(rq);
        return state_json(d, false);
    }
    char *result = rq->result;
    request_free(rq);
    return result;
}

char *repl_dbg_web_command(void *user, const char *command)
{
    repl_debugger *d = user;
    if (!command)
        return strdup("no command");
    repl_web_req *rq = request_new(REQ_COMMAND, command, 0);
    if (!rq)
        return strdup("out of memory");
    if (!post(d, rq)) {
        if (rq->abandoned)
            return strdup("the REPL did not answer within 2 s; try again");
        request_free(rq);
        char echo[600];
        return run_command(d, command, false, echo, sizeof echo);
    }
    char *message = rq->message;
    free(rq->result);
    request_free(rq);
    return message;
}

char *repl_dbg_web_tensor_json(void *user, const char *node, int output, char **message)
{
    repl_debugger *d = user;
    *message = NULL;
    repl_web_req *rq = node ? request_new(REQ_TENSOR, node, output) : NULL;
    if (!rq) {
        *message = strdup(node ? "out of memory" : "no node");
        return NULL;
    }
    if (!post(d, rq)) {
        *message = strdup(rq->abandoned ? "the REPL did not answer within 2 s; try again" : "no step is stopped");
        if (!rq->abandoned)
            request_free(rq);
        return NULL;
    }
    char *result = rq->result;
    *message = rq->message;
    request_free(rq);
    return result;
}

bool repl_dbg_web_enable(repl_debugger *d)
{
    if (d->wake[0] >= 0)
        return true;
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    for (int i = 0; i < 2; i++)
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    d->wake[0] = fds[0];
    d->wake[1] = fds[1];
    d->r->debug_wake_fd = fds[0];
    return true;
}
