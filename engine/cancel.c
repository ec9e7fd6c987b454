/* cancel.c — cancellation lists of steps and the engine's watcher (cancel.h has the rules): the
 * kernel API tide_kernel_on_cancel / tide_kernel_forget_cancel, firing a list once, and the watcher
 * thread that fires the lists of runs cancelled (tide_session_cancel, Ctrl-C, tide_session_close) or
 * past their timeout.
 *
 * A list is open until something closes it with a code and a message (the first closer wins:
 * tide__step_fail, or the watcher); from then on registrations are refused (the kernel finishes at
 * once with that code) and the closer runs the callbacks still listed, one at a time and without the
 * list's lock. forget() of a token still listed removes it (true: its callback will not run); of one
 * whose callback runs now, waits for it to return (false). A failed step's callbacks run on a pool
 * task; the watcher's on its own thread. The watcher holds a reference to every list it watches and
 * to a list while it runs it, so a step may end (and drop its reference) while the last callback of
 * its list is still returning. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "step.h"

typedef struct cancel_entry {
    int64_t token;
    tide_kernel_cancel_fn fn;
    void *arg;
} cancel_entry;

struct tide_cancel_list {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t idle;          /* a callback returned */
    cancel_entry *entries;
    int n, cap;
    int64_t next_token;
    bool fired;                   /* closed to registrations; code and message are set */
    int64_t running;              /* the token whose callback runs now (0: none) */
    tide_status code;
    char message[512];
    /* What the watcher checks (copied from the step: the session outlives its steps). */
    const atomic_int *cancel_gen;
    int cancel_at_start;
    int64_t deadline_ns;          /* 0: none */
    int64_t timeout_ms;
    bool watched;                 /* handed to the watcher (under the list's lock) */
    struct tide_cancel_list *watch_next, *watch_prev; /* the watcher's list (watcher's lock) */
};

struct tide_watcher {
    pthread_t thread;
    int pipe[2];                  /* [0] the watcher polls, [1] pokes write one byte */
    pthread_mutex_t lock;
    tide_cancel_list *lists;      /* watched lists, each holding a reference */
    bool stop;
};

static pthread_mutex_t watcher_start_lock = PTHREAD_MUTEX_INITIALIZER;

static void list_release(tide_cancel_list *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    free(l->entries);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->idle);
    free(l);
}

/* Closes the list to registrations with (code, message); true for the first caller, who must then
 * list_run it. */
static bool list_close(tide_cancel_list *l, tide_status code, const char *message)
{
    pthread_mutex_lock(&l->lock);
    bool first = !l->fired;
    if (first) {
        l->fired = true;
        l->code = code;
        snprintf(l->message, sizeof l->message, "%s", message);
    }
    pthread_mutex_unlock(&l->lock);
    return first;
}

/* Calls the callbacks still listed, one at a time, without the lock (code and message no longer
 * change once closed). A forget() meanwhile removes its own callback before it runs, or waits while
 * it runs. */
static void list_run(tide_cancel_list *l)
{
    pthread_mutex_lock(&l->lock);
    while (l->n > 0) {
        cancel_entry e = l->entries[--l->n];
        l->running = e.token;
        pthread_mutex_unlock(&l->lock);
        e.fn(e.arg, l->code, l->message);
        pthread_mutex_lock(&l->lock);
        l->running = 0;
        pthread_cond_broadcast(&l->idle);
    }
    pthread_mutex_unlock(&l->lock);
}

/* ---------------------------------------------------------------- the watcher */

static void watcher_drain(tide_watcher *w)
{
    char buf[64];
    while (read(w->pipe[0], buf, sizeof buf) > 0)
        ;
}

/* Why list l's step must end now (code and message), or TIDE_OK. */
static tide_status due(const tide_cancel_list *l, int64_t now, char *msg, size_t size)
{
    if (atomic_load(l->cancel_gen) != l->cancel_at_start) {
        snprintf(msg, size, "the run was cancelled");
        return TIDE_CANCELLED;
    }
    if (l->deadline_ns && now >= l->deadline_ns) {
        snprintf(msg, size, "the run exceeded its timeout (%lld ms)", (long long)l->timeout_ms);
        return TIDE_DEADLINE_EXCEEDED;
    }
    return TIDE_OK;
}

/* One pass: fires the lists that are due (outside the watcher's lock, each held by a reference) and
 * returns the milliseconds until the nearest deadline (-1: none). */
static int watcher_pass(tide_watcher *w)
{
    enum { MAX_DUE = 32 };
    tide_cancel_list *fire[MAX_DUE];
    tide_status codes[MAX_DUE];
    char messages[MAX_DUE][128];
    int num_due = 0;
    int64_t now = tide__now_ns(), next = INT64_MAX;
    pthread_mutex_lock(&w->lock);
    for (tide_cancel_list *l = w->lists; l; l = l->watch_next) {
        pthread_mutex_lock(&l->lock);
        bool fired = l->fired; /* its step is ending anyway */
        pthread_mutex_unlock(&l->lock);
        if (fired)
            continue;
        tide_status code = num_due < MAX_DUE ? due(l, now, messages[num_due], sizeof messages[0]) : TIDE_OK;
        if (code != TIDE_OK) {
            atomic_fetch_add(&l->refs, 1);
            codes[num_due] = code;
            fire[num_due++] = l;
        } else if (l->deadline_ns && l->deadline_ns < next) {
            next = l->deadline_ns;
        }
    }
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < num_due; i++) {
        if (list_close(fire[i], codes[i], messages[i]))
            list_run(fire[i]);
        list_release(fire[i]);
    }
    if (num_due == MAX_DUE)
        return 0; /* more may be due: look again at once */
    if (next == INT64_MAX)
        return -1;
    int64_t ms = (next - tide__now_ns() + 999999) / 1000000;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

static void *watcher_main(void *arg)
{
    tide_watcher *w = arg;
    sigset_t all;
    sigfillset(&all); /* signals (Ctrl-C) go to the program's own threads */
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        bool stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        if (stop)
            return NULL;
        int timeout = watcher_pass(w);
        struct pollfd p = {.fd = w->pipe[0], .events = POLLIN};
        if (poll(&p, 1, timeout) > 0)
            watcher_drain(w);
    }
}

static void poke(tide_watcher *w)
{
    char one = 1;
    ssize_t r = write(w->pipe[1], &one, 1); /* a full pipe already holds a wake-up */
    TIDE_UNUSED(r);
}

void tide__watcher_poke(tide_engine *e)
{
    tide_watcher *w = atomic_load(&e->watcher);
    if (w)
        poke(w);
}

/* The engine's watcher, started on first use; NULL when no thread or pipe can be had. */
static tide_watcher *watcher_of(tide_engine *e)
{
    tide_watcher *w = atomic_load(&e->watcher);
    if (w)
        return w;
    pthread_mutex_lock(&watcher_start_lock);
    w = atomic_load(&e->watcher);
    if (!w && (w = calloc(1, sizeof *w))) {
        pthread_mutex_init(&w->lock, NULL);
        bool ok = pipe2(w->pipe, O_NONBLOCK | O_CLOEXEC) == 0;
        if (ok && pthread_create(&w->thread, NULL, watcher_main, w) != 0) {
            close(w->pipe[0]);
            close(w->pipe[1]);
            ok = false;
        }
        if (!ok) {
            pthread_mutex_destroy(&w->lock);
            free(w);
            w = NULL;
        } else {
            atomic_store(&e->watcher, w);
        }
    }
    pthread_mutex_unlock(&watcher_start_lock);
    return w;
}

static void watcher_add(tide_watcher *w, tide_cancel_list *l)
{
    atomic_fetch_add(&l->refs, 1);
    pthread_mutex_lock(&w->lock);
    l->watch_prev = NULL;
    l->watch_next = w->lists;
    if (w->lists)
        w->lists->watch_prev = l;
    w->lists = l;
    pthread_mutex_unlock(&w->lock);
    poke(w); /* its deadline may be the nearest, or its run already cancelled */
}

static void watcher_remove(tide_watcher *w, tide_cancel_list *l)
{
    pthread_mutex_lock(&w->lock);
    if (l->watch_prev)
        l->watch_prev->watch_next = l->watch_next;
    else
        w->lists = l->watch_next;
    if (l->watch_next)
        l->watch_next->watch_prev = l->watch_prev;
    pthread_mutex_unlock(&w->lock);
    list_release(l);
}

void tide__watcher_free(tide_engine *e)
{
    tide_watcher *w = atomic_load(&e->watcher);
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_mutex_unlock(&w->lock);
    poke(w);
    pthread_join(w->thread, NULL);
    while (w->lists)
        watcher_remove(w, w->lists);
    close(w->pipe[0]);
    close(w->pipe[1]);
    pthread_mutex_destroy(&w->lock);
    free(w);
    atomic_store(&e->watcher, NULL);
}

/* ---------------------------------------------------------------- steps */

/* The step's list, made by the first registration (NULL when out of memory). */
static tide_cancel_list *list_of(tide_step *step)
{
    tide_cancel_list *l = atomic_load(&step->cancel);
    if (l)
        return l;
    tide_cancel_list *made = calloc(1, sizeof *made);
    if (!made)
        return NULL;
    atomic_init(&made->refs, 1); /* the step's */
    pthread_mutex_init(&made->lock, NULL);
    pthread_cond_init(&made->idle, NULL);
    made->next_token = 1;
    made->cancel_gen = step->args->cancel_gen;
    made->cancel_at_start = step->args->cancel_at_start;
    made->deadline_ns = step->deadline_ns;
    made->timeout_ms = step->args->opts ? step->args->opts->timeout_ms : 0;
    if (!atomic_compare_exchange_strong(&step->cancel, &l, made)) {
        list_release(made); /* another kernel of the step made it first: l is that one */
        return l;
    }
    return made;
}

static void run_task(void *arg)
{
    list_run(arg);
    list_release(arg);
}

void tide__cancel_step_failed(tide_step *step, tide_status code, const char *message)
{
    tide_cancel_list *l = atomic_load(&step->cancel);
    if (!l || !list_close(l, code, message))
        return; /* without a list, registrations from now on see step->failed and refuse */
    atomic_fetch_add(&l->refs, 1);
    tide__pool_submit(step->pool, run_task, l); /* not inside the failing kernel's stack */
}

void tide__cancel_step_end(tide_step *step)
{
    tide_cancel_list *l = atomic_load(&step->cancel);
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    bool watched = l->watched;
    pthread_mutex_unlock(&l->lock);
    if (watched)
        watcher_remove(atomic_load(&step->args->engine->watcher), l);
    list_release(l);
}

/* ---------------------------------------------------------------- the kernel API */

static void refuse(tide_kernel_ctx *ctx, tide_status code, const char *why)
{
    tide_kernel_error(ctx, code, "%s", why);
}

int64_t tide_kernel_on_cancel(tide_kernel_ctx *ctx, tide_kernel_cancel_fn fn, void *arg)
{
    tide_step *step = ctx->step;
    if (!step) {
        refuse(ctx, TIDE_FAILED_PRECONDITION, "it would wait, but it runs eagerly (outside a session's run "
               "nothing could end the wait): run it in a graph");
        return 0;
    }
    tide_cancel_list *l = list_of(step);
    if (!l) {
        refuse(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory before waiting");
        return 0;
    }
    pthread_mutex_lock(&l->lock);
    if (l->fired) {
        char why[sizeof l->message + 32];
        snprintf(why, sizeof why, "%s", l->message);
        tide_status code = l->code;
        pthread_mutex_unlock(&l->lock);
        refuse(ctx, code, why);
        return 0;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        cancel_entry *e = realloc(l->entries, sizeof *e * (size_t)cap);
        if (!e) {
            pthread_mutex_unlock(&l->lock);
            refuse(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory before waiting");
            return 0;
        }
        l->entries = e;
        l->cap = cap;
    }
    int64_t token = l->next_token++;
    l->entries[l->n++] = (cancel_entry){token, fn, arg};
    bool watch = !l->watched;
    l->watched = true;
    pthread_mutex_unlock(&l->lock);
    /* A failure recorded before the list existed did not close it: refuse now (seq-cst: the failing
     * thread stores failed before it loads step->cancel; this one stored the list before this load). */
    if (atomic_load(&step->failed) && tide_kernel_forget_cancel(ctx, token)) {
        refuse(ctx, TIDE_CANCELLED, "the run failed before this node could wait");
        token = 0;
    }
    tide_watcher *w = watch ? watcher_of(step->args->engine) : NULL;
    if (w)
        watcher_add(w, l);
    else if (watch) { /* no watcher thread: timeouts and cancellation are noticed only between nodes */
        pthread_mutex_lock(&l->lock);
        l->watched = false;
        pthread_mutex_unlock(&l->lock);
    }
    return token;
}

bool tide_kernel_forget_cancel(tide_kernel_ctx *ctx, int64_t token)
{
    tide_cancel_list *l = ctx->step && token > 0 ? atomic_load(&ctx->step->cancel) : NULL;
    if (!l)
        return true;
    pthread_mutex_lock(&l->lock);
    for (int i = 0; i < l->n; i++)
        if (l->entries[i].token == token) {
            l->entries[i] = l->entries[--l->n];
            pthread_mutex_unlock(&l->lock);
            return true;
        }
    while (l->running == token)
        pthread_cond_wait(&l->idle, &l->lock);
    pthread_mutex_unlock(&l->lock);
    return false;
}

/* ---------------------------------------------------------------- completing on the pool */

static void done_task(void *arg)
{
    tide_kernel_ctx *ctx = arg;
    tide_kernel_done(ctx, ctx->status);
}

void tide_kernel_done_later(tide_kernel_ctx *ctx, tide_status status)
{
    tide__kernel_ctx_returned(ctx, status);
    tide_threadpool *pool = ctx->kn->device && ctx->kn->device->pool ? ctx->kn->device->pool
                            : ctx->kn->engine ? ctx->kn->engine->pool : NULL;
    if (!ctx->step || !pool)
        tide_kernel_done(ctx, ctx->status);
    else
        tide__pool_submit(pool, done_task, ctx);
}
