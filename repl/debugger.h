/* debugger.h — what the files of the REPL's step debugger share (docs/debugger.md):
 *   debugger.c          the controller: breakpoints, the engine debugger it attaches while any is
 *                       set (watches / check / paused), why a step stopped, the nested prompt
 *   debugger_bad.c      has_inf_or_nan: health of outputs and inputs, the first bad node's message
 *   debugger_commands.c the ':' commands (:break, :step, :print, ...) and their help
 *   debugger_view.c     what a stop shows: :where, :print (NumPy slices), :ni, :li, :lo, :set
 *   debugger_lua.c      the Lua table `dbg`
 *   debugger_web.c      the same from the web server's threads (web/web.h's tide_web_debugger)
 *   debugger_dump.c     keep mode (a finished step's values held until the next run) and :dump
 *
 * Threads. The breakpoints are guarded by `lock`: written (a writer) by the main thread (the one that
 * runs Lua) or by a web server thread while no step is stopped, read (a reader) by `check` on executor
 * threads and by the main thread. Everything about a stop (the step view, the event, the answer)
 * lives on the main thread, inside `paused`; the web's requests are posted to it while it is stopped.
 */
#ifndef TIDE_REPL_DEBUGGER_H
#define TIDE_REPL_DEBUGGER_H

#include <pthread.h>
#include <stdatomic.h>

#include "commands.h"
#include "repl.h"

typedef enum repl_bp_kind {
    REPL_BP_NODE = 0, /* :break NODE|GLOB: after the node ran */
    REPL_BP_OP = 1,   /* :break op:TYPE */
    REPL_BP_BAD = 2,  /* :break if has_inf_or_nan [--ignore GLOB...] */
    REPL_BP_LUA = 3,  /* :break [GLOB] if LUA_EXPR: evaluated at a stop on the main thread */
} repl_bp_kind;

#define REPL_BP_MAX_IGNORE 16

typedef struct repl_breakpoint {
    int id;
    repl_bp_kind kind;
    char *spec;                 /* as given ("h1", "op:Log", "if has_inf_or_nan --ignore a*") */
    char *pattern;              /* NODE/LUA: a glob (NULL: every node); OP: the op type */
    char *ignore[REPL_BP_MAX_IGNORE];
    int num_ignore;
    char *expr;                 /* LUA */
    bool enabled;
    atomic_llong hits;
} repl_breakpoint;

typedef struct repl_web_req repl_web_req;
typedef struct repl_kept_step repl_kept_step;

typedef struct repl_debugger {
    repl *r;
    pthread_mutex_t attach_lock;
    int attached;               /* the engine debugger's id; 0 when detached (no breakpoint); attach_lock */
    bool attached_keep;         /* ... attached in keep mode (attach_lock) */
    pthread_rwlock_t lock;      /* bps */
    repl_breakpoint **bps;
    int num_bps, cap_bps, next_id;
    const tide_node *until;     /* :until NODE: stepping on silently until it is done */
    int64_t until_step;         /* ... in this run */

    /* The stop, main thread only. */
    tide_debug_step *step;      /* NULL when no step is stopped */
    const tide_debug_event *ev;
    int64_t run_step;           /* the session step of the stopped run */
    char reason[64];            /* "breakpoint 2", "step", "has_inf_or_nan", "until" */
    char *message;              /* the stop's message (the first bad node's), malloc'd */
    bool decided;               /* a command chose how the step goes on */
    tide_debug_command answer;
    int steps_left;             /* :step N: stops still to pass silently */
    bool stepping;              /* the last answer was STEP: the next stop is a step's */
    bool had_stop;              /* the current run stopped at least once */
    int lua_on_bad;             /* registry ref of dbg.on_bad's function, LUA_NOREF if none */
    atomic_llong last_run_step; /* the step of the latest stop (the web's "run") */
    atomic_bool running;        /* a run() of the REPL is in progress (the web's "running") */

    /* Keep mode (debugger_dump.c): attached with keep_values while on; the last finished run's values. */
    bool keep;                  /* :keep on; changed on the main thread, never at a stop */
    pthread_mutex_t kept_lock;
    repl_kept_step *kept;       /* kept_lock; NULL: none */

    /* The web's requests (debugger_web.c): posted while the main thread serves a stop. */
    pthread_mutex_t web_lock;
    pthread_cond_t web_cond;
    int wake[2];                /* a pipe: a byte in it wakes the stop's prompt; -1 until the web asks */
    bool serving;               /* the main thread is at a stop and takes requests (web_lock) */
    repl_web_req *requests;     /* web_lock */
} repl_debugger;

/* ---------------------------------------------------------------- debugger.c */

repl_debugger *repl_debugger_new(repl *r);
void repl_debugger_free(repl_debugger *d);
/* Adds a breakpoint from its spec (what follows ":break"); its id, or 0 with the message printed to
 * stderr (quiet: into msg instead). */
int repl_debugger_add(repl_debugger *d, const char *spec, char *msg, size_t size);
/* Deletes / enables / disables breakpoint id; false when there is none. */
bool repl_debugger_delete(repl_debugger *d, int id);
bool repl_debugger_enable(repl_debugger *d, int id, bool on);
/* Re-attaches (or detaches, with no breakpoint) after the breakpoints changed. */
void repl_debugger_update(repl_debugger *d);
/* Ends the stop with cmd (the nested prompt then returns it). False when no step is stopped. */
bool repl_debugger_resume(repl_debugger *d, tide_debug_command cmd, int steps);
/* Whether an enabled has_inf_or_nan breakpoint is set. */
bool repl_debugger_has_bad(repl_debugger *d);
/* :until NODE: continue, stop after NODE ran. */
bool repl_debugger_until(repl_debugger *d, const char *node, char *msg, size_t size);
/* The node of the graph named `name` (also a node of the stopped step's plan: _Send, _Recv...). */
const tide_node *repl_debugger_node(repl_debugger *d, const char *name);
/* Prints where the step is stopped (the stop message). */
void repl_debugger_print_stop(repl_debugger *d, FILE *out);
/* The stop's prompt: "tide[step N at 'NODE']> " into buf. */
const char *repl_debugger_prompt(const repl_debugger *d, char *buf, size_t size);

/* ---------------------------------------------------------------- debugger_bad.c */

/* check's part for has_inf_or_nan: whether ev (after) is a bad origin for bp. Thread-safe. */
bool repl_bad_origin(const repl_breakpoint *bp, const tide_debug_event *ev);
/* Whether a node name is a gradient node (built by gradients(): "gradients[_N]/X_grad/...") and of
 * which forward node (into of, "" when unknown). */
bool repl_is_gradient_node(const char *name, char *of, size_t size);
/* The has_inf_or_nan message of a stop at ev (malloc'd): the node, forward or gradient, its bad
 * outputs and its inputs' summaries. */
char *repl_bad_message(const tide_debug_event *ev);
/* One health summary as a line: "float32[2, 3]: 6 elements, 1 nan, min -1 max 3 mean 0.5 std 1.2". */
void repl_format_health(const tide_tensor *t, char *buf, size_t size);

/* ---------------------------------------------------------------- debugger_commands.c */

/* The debugger's command table (commands.c looks names up in it too). */
extern const repl_command_entry repl_debugger_commands[];
extern const int repl_num_debugger_commands;

/* ---------------------------------------------------------------- debugger_view.c */

repl_result repl_dbg_where(repl_debugger *d, FILE *out);
repl_result repl_dbg_print(repl_debugger *d, const char *args);
repl_result repl_dbg_ni(repl_debugger *d, const char *name);
repl_result repl_dbg_li(repl_debugger *d, const char *args, bool inputs);
repl_result repl_dbg_set(repl_debugger *d, const char *args);
/* The value of NODE[:k] at the stop (a new reference), or NULL with a message in msg. */
tide_tensor *repl_dbg_value(repl_debugger *d, const char *spec, char *msg, size_t size);

/* ---------------------------------------------------------------- debugger_dump.c */

/* keep_values and finished of the engine debugger, as keep mode wants them. */
void repl_debugger_keep_callbacks(repl_debugger *d, tide_debugger *dbg);
/* :keep on|off (dbg.keep): false (msg says why) at a stop; else what changed into msg. Off releases the
 * kept values at once. */
bool repl_debugger_set_keep(repl_debugger *d, bool on, char *msg, size_t size);
/* What keep mode holds now, as a line into msg. */
void repl_debugger_keep_status(repl_debugger *d, char *msg, size_t size);
/* A run() starts: the values kept of the last one are let go (keep mode). */
void repl_debugger_run_starts(repl_debugger *d);
void repl_debugger_free_kept(repl_debugger *d);
/* :dump (dbg.dump): every value of the stopped step, or else of the last finished run (keep mode), into
 * the run log as tensors rows of kind "dumped"; prints what it wrote and what it left out. False with
 * msg when there is nothing to dump or no run log. */
bool repl_dbg_dump(repl_debugger *d, char *msg, size_t size);

/* ---------------------------------------------------------------- debugger_lua.c */

/* Registers the table `dbg` as a global. */
void repl_open_debugger(lua_State *L);
/* Calls dbg.on_bad's function at a has_inf_or_nan stop; true when it decided how to go on. */
bool repl_dbg_call_on_bad(repl_debugger *d);
/* A tensor from a Lua expression evaluated in the REPL's environment, cast to dt (INVALID: inferred);
 * NULL with msg. */
tide_tensor *repl_dbg_lua_tensor(repl *r, const char *expr, tide_dtype dt, char *msg, size_t size);
/* Evaluates breakpoint id's condition EXPR at the stop: 1 true, 0 false, -1 error (printed). */
int repl_dbg_eval_condition(repl_debugger *d, int id, const char *expr);

/* ---------------------------------------------------------------- debugger_web.c */

/* Makes the wake pipe (the first time); false when it cannot. */
bool repl_dbg_web_enable(repl_debugger *d);
/* The table's three functions (web/web.h's tide_web_debugger, user = the repl_debugger). */
char *repl_dbg_web_state_json(void *user);
char *repl_dbg_web_command(void *user, const char *command);
char *repl_dbg_web_tensor_json(void *user, const char *node, int output, char **message);
/* Main thread, at a stop: answers the requests posted so far. */
void repl_dbg_web_serve(repl_debugger *d);
/* Main thread: a stop starts (on) or ends (off) taking requests; off answers those left. */
void repl_dbg_web_serving(repl_debugger *d, bool on);

#endif
