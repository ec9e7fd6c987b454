/* stop_signals.h — SIGINT and SIGTERM for a command that runs sessions without the REPL (`tide
 * run-graph`): the first cancels the run in flight and is remembered, a second leaves at once
 * (stop_signals.c says how and why). Used by the main thread only. */
#ifndef TIDE_REPL_STOP_SIGNALS_H
#define TIDE_REPL_STOP_SIGNALS_H

#include <pthread.h>
#include <signal.h>

#include "tide.h"

typedef struct repl_stop_signals repl_stop_signals;

/* Blocks SIGINT and SIGTERM in the calling thread (those not ignored) and starts the thread that takes
 * them (it lives until the process ends). Call it once, before the engine starts its threads (they
 * inherit the mask). command ("tide run-graph") starts the second signal's message. NULL when called
 * again or when no thread can start: the signals then keep their default action. */
repl_stop_signals *repl_stop_signals_start(const char *command);
/* Before each run of s, in this order: arm (s becomes the session a signal cancels; a cancel mark is
 * taken on opts), then repl_stop_signals_received, then the run with opts. s NULL: nothing to cancel
 * (the session is about to be freed). w may be NULL. */
void repl_stop_signals_arm(repl_stop_signals *w, tide_session *s, tide_run_options *opts);
/* The first signal received (SIGINT, SIGTERM), or 0. */
int repl_stop_signals_received(const repl_stop_signals *w);
/* "Ctrl-C (SIGINT)", "SIGTERM". */
const char *repl_stop_signal_name(int sig);
/* The command is done: a signal from now on is taken and does nothing. NULL is fine. */
void repl_stop_signals_finish(repl_stop_signals *w);

/* For a program that takes signals with sigwait on one thread, target, with them blocked in every
 * thread it starts: a thread started before they were blocked (OpenBLAS starts its own when the
 * library loads) may still receive one, and its default action would end the process there. This
 * installs a handler for each of signals that hands it to target instead. `tide serve` uses it;
 * repl_stop_signals_start does it for its own thread. */
void repl_forward_signals(pthread_t target, const sigset_t *signals);

#endif
