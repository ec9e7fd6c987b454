/* cancel.h — waking the asynchronous kernels that wait (a dequeue from an empty queue, an enqueue into
 * a full one) when their step ends early, without a thread that polls. Shared by cancel.c, the
 * executor (two calls: a failing step fires its callbacks, an ending step lets them go), the session
 * (Ctrl-C pokes the watcher) and the engine (it stops the watcher).
 *
 * A step may carry a cancellation list: the callbacks its waiting kernels registered
 * (tide_kernel_on_cancel in tide_op.h). It is made by the first registration, so a step whose kernels
 * never wait carries none. The list fires once, calling every callback with a code and a message,
 * when one of these ends the step early:
 *   1. a failure anywhere in the step: tide__step_fail fires it (on a pool thread, not inside the
 *      failing kernel's stack);
 *   2. tide_session_cancel (Ctrl-C) or tide_session_close: the session's counter moves and the
 *      engine's watcher is poked through a pipe (a write(), safe in a signal handler);
 *   3. the run's timeout: the watcher sleeps in poll() until the earliest deadline it watches.
 * The watcher is one thread per engine, started by the first list a step makes.
 *
 * Race rules (a waiter completed by its queue versus the same waiter cancelled): the kernel decides
 * under its own lock which of the two finishes it; tide_kernel_forget_cancel returns whether the
 * callback was kept from running, and when it already runs, waits for it to return, so that the
 * kernel may free what the callback reads afterwards. Locks: a kernel may register while holding its
 * own lock (queue lock -> list lock -> watcher lock); callbacks run with no list or watcher lock held.
 */
#ifndef TIDE_CANCEL_H
#define TIDE_CANCEL_H

#include "internal.h"

typedef struct tide_cancel_list tide_cancel_list;
typedef struct tide_watcher tide_watcher;

/* executor.c: the step failed (code, message): fire its list, if any, on a pool thread. */
void tide__cancel_step_failed(struct tide_step *step, tide_status code, const char *message);
/* executor.c: the step drained: the watcher forgets it and the list goes (every kernel that waited
 * has finished, so no callback is registered any more). */
void tide__cancel_step_end(struct tide_step *step);
/* session.c: wakes the engine's watcher to look at the sessions' cancellation counters again.
 * Async-signal-safe; does nothing when the engine has no watcher yet. */
void tide__watcher_poke(tide_engine *e);
/* engine.c: stops and frees the watcher (no step may be running). */
void tide__watcher_free(tide_engine *e);

#endif
