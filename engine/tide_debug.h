/* tide_debug.h — the step debugger's engine side (DESIGN §7; docs/debugger.md): a hook the executor
 * asks before and after each node execution, able to park that execution and stop the step for the
 * user; a view of the stopped step (what ran, what is waiting, any tensor produced so far, overriding
 * a value before its consumers read it); health summaries of tensors.
 *
 * How a stop works. The debugger's `check` runs on the executor thread that is about to run a node
 * (before) or has just run it (after), for the nodes its `watches` accepted (and every node while
 * stepping). Answering TIDE_DEBUG_PAUSE parks that execution: the node's consumers wait, but
 * independent branches and other devices go on until they need it. The thread that called
 * tide_session_run is then woken and calls `paused` — the user's turn: a prompt, a browser — with a
 * view of the step; the step's deadline clock stands still meanwhile. What `paused` returns resumes
 * the parked execution: continue, step (run on and stop at the very next node execution), or abort
 * (the run fails with TIDE_CANCELLED). Several parked executions are presented one
 * after another. Cancelling the session (Ctrl-C) during a stop makes the run fail once resumed.
 *
 * Cost. With no debugger attached a node costs one more predictable branch; attached, nodes that
 * `watches` refused cost one more; `check` runs only for the others.
 */
#ifndef TIDE_DEBUG_H
#define TIDE_DEBUG_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tide_debug_action {
    TIDE_DEBUG_CONTINUE = 0, /* run on */
    TIDE_DEBUG_PAUSE = 1,    /* park this execution and stop the step (paused is called) */
    TIDE_DEBUG_ABORT = 2,    /* fail the run now */
} tide_debug_action;

typedef enum tide_debug_command {
    TIDE_DEBUG_RESUME = 0,   /* continue from the stop */
    TIDE_DEBUG_STEP = 1,     /* continue, and stop again before the next node execution of the step */
    TIDE_DEBUG_ABORT_RUN = 2,/* end the run: it fails with TIDE_CANCELLED, "aborted in the debugger" */
} tide_debug_command;

/* One node execution as the debugger sees it (borrowed for the call). */
typedef struct tide_debug_event {
    const tide_run_info *run;
    const tide_node *node;
    const char *device;          /* full device name */
    tide_exec_point at;          /* frame and iteration inside loops */
    bool after;                  /* false: about to run (inputs ready); true: ran (outputs made) */
    int64_t seq;                 /* executions started so far in the step, this one included (1, 2, ...) */
    int num_inputs;
    const tide_tensor *const *inputs;   /* NULL entries: dead or missing (control flow) */
    int num_outputs;                    /* after only; 0 before */
    const tide_tensor *const *outputs;  /* NULL entries: dead outputs */
} tide_debug_event;

/* A stopped step, valid during `paused` only. */
typedef struct tide_debug_step tide_debug_step;

typedef struct tide_debugger {
    void *user;
    /* Asked once per plan (and again after tide_engine_debugger_changed) for each node: does it need
     * `check`? NULL: every node. */
    bool (*watches)(void *user, const tide_node *node);
    /* On an executor thread, before and after each watched execution (every one while stepping).
     * Must be thread-safe; may compute on the tensors (tide_tensor_health). */
    tide_debug_action (*check)(void *user, const tide_debug_event *ev);
    /* On the thread that called tide_session_run, while ev's execution is parked. */
    tide_debug_command (*paused)(void *user, tide_debug_step *step, const tide_debug_event *ev);
    /* true: `check` is asked only after executions (a debugger whose breakpoints look at outputs),
     * which saves watched nodes the call before; stepping still stops before the next one. */
    bool after_only;
    /* true: the step keeps every value it produces until it ends. Without it, a value nothing else
     * holds is let go just before its last reader runs (so that the reader's kernel may write over it in
     * place) unless the step has already stopped once. Costs memory: all of the step's intermediates
     * are held at once, and kernels that would have written over their inputs allocate instead. */
    bool keep_values;
    /* NULL, or on the thread that called tide_session_run once the step is over (every execution
     * finished, the run failed or not), with a view of it: tide_debug_step_value and _node_state work
     * (set_value fails: nothing is stopped). The debugger may retain values to keep them past the step. */
    void (*finished)(void *user, tide_debug_step *step);
} tide_debugger;

/* Attaches d (copied) to the engine, replacing any debugger attached before; runs starting from now
 * use it. Returns an id (> 0), or 0 with err. */
int tide_engine_attach_debugger(tide_engine *engine, const tide_debugger *d, tide_error *err);
/* Detaches it (if still attached): when this returns, none of its callbacks runs or will run, but
 * a stop whose `paused` is running now (on this very thread, or another) finishes first. */
void tide_engine_detach_debugger(tide_engine *engine, int id);
/* The answers of `watches` may have changed (breakpoints were set): plans ask again. */
void tide_engine_debugger_changed(tide_engine *engine);

/* ---------------------------------------------------------------- the stopped step */

typedef enum tide_debug_node_state {
    TIDE_DEBUG_NOT_IN_STEP = 0, /* not in this run's plan */
    TIDE_DEBUG_WAITING = 1,     /* waiting for inputs */
    TIDE_DEBUG_READY = 2,       /* ready, not started */
    TIDE_DEBUG_RUNNING = 3,     /* its kernel is running */
    TIDE_DEBUG_DONE = 4,        /* ran (its last execution, inside a loop) */
    TIDE_DEBUG_STOPPED = 5,     /* parked by the debugger */
    TIDE_DEBUG_SKIPPED = 6,     /* did not run: dead (a branch not taken) or the run failed */
} tide_debug_node_state;

const char *tide_debug_node_state_name(tide_debug_node_state s);
tide_debug_node_state tide_debug_step_node_state(const tide_debug_step *step, const tide_node *node);
/* Executions started so far in the step. */
int64_t tide_debug_step_executions(const tide_debug_step *step);
/* The latest value of output `output` of node in this step (a new reference in *value; inside a loop,
 * the latest iteration's, whose execution point goes to *at if not NULL). A value in an accelerator's
 * memory comes as a host copy. A fed value (the node does not run: the caller gave it) is the caller's
 * tensor (a new reference, or a host copy), TIDE_OK, at the root frame's point. Errors: NOT_FOUND when
 * the node has not produced it yet or does not run in this step, and when the value is gone (the
 * debugger let go of it so that its last reader could write over it: see keep_values; the message says
 * so); FAILED_PRECONDITION for a dead value (a branch not taken); OUT_OF_RANGE for an output the node
 * does not have. *value is NULL on every error. */
tide_status tide_debug_step_value(const tide_debug_step *step, const tide_node *node, int output, tide_tensor **value,
                                  tide_exec_point *at, tide_error *err);
/* Calls visit for every value the step holds now: each fed value, then each output its node executions
 * have produced and that is not gone or dead (inside a loop, the latest iteration's), in plan order. A
 * node merged into another by common-subexpression elimination is visited with that node's values. The
 * tensor is borrowed for the call (retain it to keep it; an accelerator's value comes as a host copy);
 * at is the execution point (its frame string borrowed too). For :dump and keeping a finished step. */
typedef void (*tide_debug_value_visit)(void *user, const tide_node *node, int output, tide_tensor *value,
                                       const tide_exec_point *at);
void tide_debug_step_each_value(const tide_debug_step *step, tide_debug_value_visit visit, void *user);
/* Replaces a value before its consumers read it: an output of the node the step is stopped after, or
 * an input of the node it is stopped before. The value must have the dtype of the one it replaces
 * (the shape may differ: consumers check). Fails, changing nothing, otherwise. */
tide_status tide_debug_step_set_value(tide_debug_step *step, const tide_node *node, int output, tide_tensor *value,
                                      tide_error *err);
/* The run being debugged. */
const tide_run_info *tide_debug_step_run(const tide_debug_step *step);

/* ---------------------------------------------------------------- health summaries */

/* TensorFlow's DebugNumericSummary: counts of each kind of element, and min, max, mean, std over the
 * finite ones (0 when there are none). Integer and bool tensors count as finite numbers. */
typedef struct tide_health {
    int64_t elements, nan, neg_inf, pos_inf, negative, zero, positive;
    double min, max, mean, std;
} tide_health;

/* Fills *h; false (h zeroed) for a dtype that has no numbers (string) or no tensor. */
bool tide_tensor_health(const tide_tensor *t, tide_health *h);
/* Whether any element of t is NaN or infinite: what has_inf_or_nan asks of every output, a pass
 * over the exponent bits of host floats (vectorised, AVX2 where the CPU has it); integers and bools
 * have none; the whole summary for the rest (complex, a tensor in an accelerator's memory). */
bool tide_tensor_has_inf_or_nan(const tide_tensor *t);
/* Any NaN or infinity counted. */
static inline bool tide_health_bad(const tide_health *h) { return h->nan + h->neg_inf + h->pos_inf > 0; }

#ifdef __cplusplus
}
#endif
#endif
