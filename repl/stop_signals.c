/* stop_signals.c — SIGINT and SIGTERM for a command that runs a session without the REPL (`tide
 * run-graph`, run_graph.c): the first one cancels the run in flight and is remembered, so that the
 * command stops where it is, says what it was doing and exits 128 + the signal (130 for Ctrl-C); a
 * second one leaves at once.
 *
 * One thread of its own takes the signals with sigwait, so what is done on a signal is ordinary code
 * (a mutex, tide_session_cancel) and the session cancelled is never one being freed. The signals are
 * blocked in the thread that starts it and in the engine's threads (they inherit that mask: start it
 * before the engine); a thread that was running before (OpenBLAS starts its own when the library
 * loads) may still receive one: a handler there forwards it to the waiting thread. The thread lives
 * until the process ends; after repl_stop_signals_finish a signal is noted and does nothing. A signal
 * the process was started ignoring (a background job of a script, nohup) stays ignored.
 *
 * The caller's order for each run closes the gap between its check and the run's start, as the REPL
 * does (lua_run.c): repl_stop_signals_arm (a cancel mark on the run's options), then
 * repl_stop_signals_received, then the run. A signal after the check moves the session's cancel
 * counter past the mark and cancels the run even before it has begun. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stop_signals.h"

struct repl_stop_signals {
    sigset_t waited;      /* SIGINT and SIGTERM, less those ignored at the start */
    pthread_t thread;     /* takes them (sigwait) */
    pthread_mutex_t lock; /* guards session and finished */
    tide_session *session;
    bool finished;
    atomic_int received;  /* the first signal, 0 none */
    char command[32];     /* "tide run-graph", for the second signal's message */
};

/* One per process. */
static repl_stop_signals the_signals;
static atomic_bool started;
static pthread_t forward_target; /* the thread that takes forwarded signals (repl_forward_signals) */

/* Runs on a thread that does not block the signal (one started before the mask was set): hands it to
 * the thread that waits for it, where it is blocked and taken by sigwait. */
static void forward_signal(int sig)
{
    int saved_errno = errno;
    pthread_kill(forward_target, sig);
    errno = saved_errno;
}

void repl_forward_signals(pthread_t target, const sigset_t *signals)
{
    forward_target = target;
    struct sigaction forward;
    memset(&forward, 0, sizeof forward);
    forward.sa_handler = forward_signal;
    forward.sa_mask = *signals;
    forward.sa_flags = SA_RESTART;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(signals, sig) == 1)
            sigaction(sig, &forward, NULL);
}

/* A second signal while the first is being honoured: the run did not end (a kernel that does not
 * notice cancellation); leave now. */
static void leave_now(const repl_stop_signals *w, int sig)
{
    fprintf(stderr, "\n%s: %s again while stopping: leaving now\n", w->command, repl_stop_signal_name(sig));
    fflush(stderr);
    _exit(128 + sig);
}

static void *wait_for_signals(void *arg)
{
    repl_stop_signals *w = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&w->waited, &sig) != 0)
            continue;
        pthread_mutex_lock(&w->lock);
        int first = 0;
        bool again = !w->finished && !atomic_compare_exchange_strong(&w->received, &first, sig);
        if (!w->finished && !again && w->session)
            tide_session_cancel(w->session);
        pthread_mutex_unlock(&w->lock);
        if (again)
            leave_now(w, sig);
    }
    return NULL;
}

const char *repl_stop_signal_name(int sig)
{
    return sig == SIGINT ? "Ctrl-C (SIGINT)" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

repl_stop_signals *repl_stop_signals_start(const char *command)
{
    repl_stop_signals *w = &the_signals;
    if (atomic_exchange(&started, true))
        return NULL; /* once per process */
    snprintf(w->command, sizeof w->command, "%s", command);
    sigemptyset(&w->waited);
    const int signals[] = {SIGINT, SIGTERM};
    int num_waited = 0;
    for (int i = 0; i < 2; i++) {
        struct sigaction now;
        if (sigaction(signals[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN)
            num_waited += sigaddset(&w->waited, signals[i]) == 0;
    }
    pthread_mutex_init(&w->lock, NULL);
    if (!num_waited)
        return w; /* both ignored: nothing to wait for */
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &w->waited, &old_mask);
    if (pthread_create(&w->thread, NULL, wait_for_signals, w) != 0) {
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        return NULL; /* the signals keep their default action */
    }
    repl_forward_signals(w->thread, &w->waited);
    return w;
}

void repl_stop_signals_arm(repl_stop_signals *w, tide_session *s, tide_run_options *opts)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->session = s;
    pthread_mutex_unlock(&w->lock);
    if (s && opts)
        tide_session_cancel_mark(s, opts);
}

int repl_stop_signals_received(const repl_stop_signals *w)
{
    return w ? atomic_load(&((repl_stop_signals *)w)->received) : 0;
}

void repl_stop_signals_finish(repl_stop_signals *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->finished = true;
    w->session = NULL;
    pthread_mutex_unlock(&w->lock);
}
