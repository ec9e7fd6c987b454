/* test_debugger_web.c — the step debugger driven from another thread, as the browser's debugger page
 * drives it through web/web.h's tide_web_debugger table (repl/debugger_web.c), without a browser.
 *
 * The main thread runs a REPL entry whose run stops at a breakpoint; the stop's prompt reads a pipe
 * nobody writes to, so only the "page" (a second thread calling the table) can move the step on. The
 * page checks the state JSON (where, why, each node's state and health, the breakpoints), a tensor,
 * errors for unknown nodes and commands, toggles a breakpoint on a node at the stop (it fires later in
 * the same step), steps, continues; once the run is over, the state says so and stepping is refused.
 * Prints "ok N - ..." / "FAIL N - ..." lines; exits 1 on any failure. */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repl_check.h"

static void sleep_ms(int ms) { nanosleep(&(struct timespec){0, ms * 1000000L}, NULL); }

/* Polls the state until it contains `want` (120 s at most: the other thread may wait long for a CPU on
 * a loaded machine under a sanitizer); returns the last state (malloc'd). */
static char *state_with(repl_debugger *d, const char *want)
{
    char *state = NULL;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        free(state);
        state = repl_dbg_web_state_json(d);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((state && strstr(state, want)) || t.tv_sec - t0.tv_sec >= 120)
            break;
        sleep_ms(10);
    }
    return state;
}

/* Sends `command` as the page's buttons do and checks its answer: accepted (no message) when `refusal`
 * is NULL, else a message containing `refusal`. */
static void command_answers(repl_debugger *d, const char *command, const char *what, const char *refusal)
{
    char *msg = repl_dbg_web_command(d, command);
    check(what, refusal ? msg && strstr(msg, refusal) : msg == NULL, msg);
    free(msg);
}

static void *page(void *arg)
{
    repl_debugger *d = arg;
    char *s = state_with(d, "\"stopped\":true");
    check("the page sees the stop", s && strstr(s, "\"stopped\":true"), s);
    check("where and why", s && strstr(s, "\"at\":{\"node\":\"h\",\"after\":true") && strstr(s, "\"reason\":\"breakpoint 1\""), s);
    check("each node's state", s && strstr(s, "{\"name\":\"h\",\"state\":\"stopped\"") &&
                                   strstr(s, "{\"name\":\"y\",\"state\":\"waiting\",\"health\":null}"), s);
    check("health of a node that ran", s && strstr(s, "\"elements\":2,\"nan\":0"), s);
    check("the breakpoints", s && strstr(s, "\"breakpoints\":[{\"id\":1,\"spec\":\"h\",\"node\":\"h\",\"enabled\":true,\"hits\":1}]"), s);
    free(s);

    char *msg = NULL;
    char *t = repl_dbg_web_tensor_json(d, "h", 0, &msg);
    check("a tensor of the stopped step", t && strstr(t, "\"dtype\":\"float32\",\"shape\":[2]") &&
                                              strstr(t, "\"values\":[2,4],\"truncated\":false"), t ? t : msg);
    free(t);
    free(msg);
    t = repl_dbg_web_tensor_json(d, "nope", 0, &msg);
    check("an unknown node: a message", !t && msg && strstr(msg, "no node 'nope'"), msg);
    free(t);
    free(msg);
    command_answers(d, "frobnicate", "an unknown command: a message", "unknown command");

    command_answers(d, "break y", "break NODE at the stop: accepted", NULL);
    command_answers(d, "step", "step: accepted", NULL);
    s = state_with(d, "\"reason\":\"step\"");
    check("step: stopped before the next node", s && strstr(s, "\"after\":false") && strstr(s, "\"reason\":\"step\""), s);
    free(s);
    command_answers(d, "continue", "continue: accepted", NULL);
    s = state_with(d, "\"reason\":\"breakpoint 2\"");
    check("the breakpoint set at the stop fires in the same step", s && strstr(s, "\"at\":{\"node\":\"y\"") &&
                                                                    strstr(s, "\"reason\":\"breakpoint 2\""), s);
    free(s);
    command_answers(d, "break y", "break NODE again: deleted", NULL);
    command_answers(d, "disable 1", "disable ID", NULL);
    free(repl_dbg_web_command(d, "continue"));
    s = state_with(d, "\"stopped\":false");
    check("the run ended", s && strstr(s, "\"stopped\":false") && strstr(s, "\"enabled\":false"), s);
    free(s);
    command_answers(d, "step", "step with no stop: refused", "no step is stopped");
    command_answers(d, "delete 7", "delete an unknown breakpoint: a message", "no breakpoint 7");
    return NULL;
}

int main(void)
{
    repl *r = check_repl_new();
    if (!r)
        return 1;
    bool ok = eval(r, "x = placeholder(float32, {2})") && eval(r, "h = x * 2.0") && eval(r, "y = h + 1.0") &&
              eval(r, "z = sum(y)") && eval(r, ":break h");
    check("the model and a breakpoint", ok && r->debugger, NULL);
    check("the web side starts", r->debugger && repl_dbg_web_enable(r->debugger), NULL);
    int in[2];
    if (pipe(in) != 0)
        return 1;
    r->input = fdopen(in[0], "r"); /* the stop reads it; nothing is ever written: only the page resumes */
    pthread_t t;
    pthread_create(&t, NULL, page, r->debugger);
    ok = eval(r, "result = run(z, {[x] = {1, 2}})");
    pthread_join(t, NULL);
    check("the run finished", ok, NULL);
    check("its result", eval(r, "assert(result:item() == 8)"), NULL); /* (2 + 1) + (4 + 1) */
    fclose(r->input);
    r->input = NULL;
    close(in[1]);
    return check_finish(r);
}
