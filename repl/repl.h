/* repl.h — the private interface between the files of the `tide` program (repl/).
 *
 * The program is cut into one concept per file:
 *   main.c        options, modes (prompt, script, -e, stdin), exit status
 *   repl.c        the REPL state, evaluating an entry (expression printing, incomplete input,
 *                 atomic extension, naming nodes after Lua globals), scripts, history
 *   lua_node.c    node handles, op functions generated from the registry, scopes and devices,
 *                 printing values
 *   lua_run.c     run and eval, feeds and fetches, traced timings, session(), tide.clock()
 *   lua_train.c   gradients, variables, init, optimizers
 *   lua_tensor.c  host tensors: built from Lua tables, printed NumPy-style, sliced without copying,
 *                 eager arithmetic; dtype values
 *   lua_data.c    NPY/IDX/CSV files, Fashion-MNIST, batches
 *   lua_options.c the options tables of the Lua functions: unknown keys are errors
 *   prompt.c      the interactive prompt: libedit, ~/.tide_history, multi-line input, Ctrl-C
 *   complete.c    tab completion (ops, nodes, Lua globals, commands)
 *   commands.c    the ':' commands
 *   suggest.c     the edit distance that "did you mean" suggestions rank by
 *   stop_signals.c SIGINT and SIGTERM without the REPL: `tide run-graph` (cancel the run, exit 130 /
 *                 143), `tide serve` (forwarded to the thread that waits for them)
 *
 * All REPL state is in one struct (SQLite's shell does the same); Lua code reaches it through
 * repl_of(L). Errors a user causes are Lua errors (raised with repl_raise, which prefixes the
 * location of the user's line) and never abort the process.
 */
#ifndef TIDE_REPL_H
#define TIDE_REPL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

#include "store.h"
#include "tide.h"

#define REPL_MAX_SESSIONS 64
/* scope() and device() nest C -> Lua -> C; Lua allows 200 C levels, and a finalizer run near that
 * limit fails and is dropped (its tensor would leak): nesting is refused beyond this. */
#define REPL_MAX_SCOPE_DEPTH 50

typedef struct repl_options {
    int num_threads;          /* 0: one per core */
    int num_cpu_devices;      /* 0: 1 (or $TIDE_CPU_DEVICES) */
    const char *log_path;     /* the run log; NULL: none */
    const char *log_off_reason; /* why there is none ("started with --no-log", the open error) */
    bool log_best_effort;     /* --log-best-effort: a log that loses records does not fail a script */
    bool interactive;         /* a terminal: prompts, completion, history file */
    bool quiet;               /* no banner */
    bool debug;               /* --debug: a debugger stop reads entries from stdin, terminal or not */
    bool exit_on_second_interrupt; /* a second Ctrl-C while the first is pending ends the process
                                    * (the program; not drivers such as the statement fuzzer) */
} repl_options;

typedef struct repl {
    lua_State *L;
    tide_engine *engine;
    tide_graph *graph;          /* the default session's graph */
    tide_session *session;      /* the default session */
    tide_error *err;            /* scratch error for calls made by the REPL itself */
    tide_store *store;          /* the run log, NULL when off */
    int store_observer;         /* tide_store_attach's id */
    int log_watcher;            /* the observer that reports the log's losses after each run */
    uint64_t log_events_told;   /* tide_store_events when the user was last told (log_commands.c) */
    int64_t log_told_at_ns;     /* ... and when */
    repl_options opts;

    /* Every session alive (the default one first), so that Ctrl-C can cancel their runs. Written
     * only by the main thread; read by the SIGINT handler, which always runs on the main thread (a
     * signal that lands on another thread is forwarded to it). */
    tide_session *volatile sessions[REPL_MAX_SESSIONS];
    pthread_t main_thread;             /* the thread that runs Lua */
    volatile sig_atomic_t interrupted; /* set by SIGINT; cleared when the entry ends */
    volatile sig_atomic_t evaluating;  /* an entry (Lua or a command) or a script is running */
    int64_t interrupted_at_ns;         /* when the pending Ctrl-C came (for the second press) */
    bool entry_interrupted;            /* the last entry ended by a Ctrl-C (scripts then exit 130) */

    /* The entry being evaluated: nodes with index >= first_node were created by it; auto-named ones
     * may be renamed after the global they are assigned to; on failure they are rolled back. */
    int first_node;
    int graph_generation;       /* bumped by :reset; node handles of older generations are dead */
    int scope_depth;            /* scope()/device() calls in progress (bounded: REPL_MAX_SCOPE_DEPTH) */
    const char *default_device; /* the innermost device() in progress (a Lua string), or NULL */
    /* A loop that builds nodes before every run: the graph's size at the entry's last run (-1: none
     * yet), how many runs in a row found it grown, and whether the entry was warned (lua_run.c). */
    int nodes_at_last_run;
    int growing_runs;
    bool growth_warned;

    /* The executions of the last traced run (run(..., {trace=true})), by name: what :info shows of a
     * node (inside loops, one per iteration). */
    struct repl_execution {
        char *node, *frame; /* frame NULL outside loops */
        char *fused;        /* a fused group's execution: its members, "h, r, out"; NULL otherwise */
        int64_t iteration, ns;
    } *last_trace;
    int num_last_trace;                /* repl_forget_trace frees them */
    struct repl_debugger *debugger; /* the step debugger (debugger.h), made at its first use */
    FILE *input;                /* the stream entries are read from (repl_run_stream), or NULL */
    int debug_wake_fd;          /* readable when the web posted to a debugger stop; -1: none */

    char **history;             /* entries of this session, oldest first */
    int num_history, cap_history;
    bool quit;                  /* :quit or quit() asked to leave */
    int exit_status;
} repl;

/* The exit status of a script or stream stopped by Ctrl-C (128 + SIGINT, as shells report it). */
#define REPL_INTERRUPTED_STATUS 130
/* The message of an entry stopped by Ctrl-C (docs/repl.md quotes it). */
#define REPL_INTERRUPTED_MESSAGE "interrupted (Ctrl-C)"

/* Result of evaluating one entry. */
typedef enum repl_result {
    REPL_DONE = 0,       /* ran (and printed what it returned) */
    REPL_INCOMPLETE = 1, /* the statement continues on the next line: nothing ran */
    REPL_FAILED = 2,     /* a syntax or run-time error, printed to stderr */
    REPL_QUIT = 3,       /* :quit, quit() or os.exit */
} repl_result;

/* ---------------------------------------------------------------- repl.c */

/* NULL with err set when the engine or the run log cannot start. */
repl *repl_new(const repl_options *opts, tide_error *err);
void repl_free(repl *r);
/* Frees the executions kept of the last traced run (lua_run.c; :info shows them). */
void repl_forget_trace(repl *r);
static inline repl *repl_of(lua_State *L) { return *(repl **)lua_getextraspace(L); }
/* The REPL's scratch error, cleared: for one engine call whose message is raised at once. */
static inline tide_error *repl_scratch_error(lua_State *L)
{
    tide_error *err = repl_of(L)->err;
    tide_error_clear(err);
    return err;
}

/* Evaluates one entry (one or more lines): a ':' command, or Lua. An expression prints its values;
 * a statement runs. An error prints its message (with the Lua location) to stderr, and rolls back
 * the nodes the entry added. chunkname is what error locations call the entry ("stdin"). */
repl_result repl_eval(repl *r, const char *entry, const char *chunkname);
/* Runs a Lua file with arg = {[0]=path, ...}; returns the process exit status (0, or 1 on error). */
int repl_run_script(repl *r, const char *path, int argc, char **argv);
/* Reads entries from a stream that is not a terminal (a pipe, a file): lines accumulate while the
 * statement is incomplete. No prompt, no echo; Ctrl-C stops the entry and the next one is read, as
 * at the prompt. Returns the exit status (1 if any entry failed). */
int repl_run_stream(repl *r, FILE *in, const char *chunkname);
/* Evaluates an entry typed at a debugger stop, inside the entry that is running (the step's run):
 * the outer entry's state (its first node, its Ctrl-C handling) is kept. */
repl_result repl_eval_nested(repl *r, const char *entry);
/* Appends to the session's history (the prompt also writes ~/.tide_history). */
void repl_history_add(repl *r, const char *entry);
/* Drops the graph, the default session and every node handle; makes a fresh graph and session (the
 * engine, its variables' containers and the run log stay). */
tide_status repl_reset(repl *r, tide_error *err);
/* Raises a Lua error "LOCATION: message" where LOCATION is the innermost user line (not the prelude or
 * a C function). Does not return. */
int repl_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Raises REPL_INTERRUPTED_MESSAGE when a Ctrl-C is pending (functions that start long work, such as
 * run, call it first and after: a Ctrl-C that lands just before or after a run stops the entry). */
void repl_check_interrupt(lua_State *L);

/* Registers the functions fns (NULL-terminated) into the table at the top (the module tide) and their
 * help texts, help[i] = {name, text}, into its table `help` (what :help NAME prints). */
void repl_register(lua_State *L, const luaL_Reg *fns, const char *const (*help)[2], size_t num_help);

/* Pushes the table that holds the user's globals. Entries run with an environment whose reads fall
 * back to _G (Lua's library and the tide functions) and whose writes land in this table, so that
 * every assignment to a global is seen (it names nodes). Completion lists both tables. */
void repl_push_globals(lua_State *L);

/* ---------------------------------------------------------------- lua_node.c */

/* The op a Lua function name stands for ("matmul" and "mat_mul" -> "MatMul"); NULL if none. The
 * help of the other tide functions (placeholder, variable, sgd, run...) is the table `tide.help`
 * (function name -> text: a usage line, then a paragraph). */
const char *repl_op_of_function(lua_State *L, const char *name);

/* The one of its names that listings (completion, :help's suggestions) show for the function at idx
 * (matmul for matmul and mat_mul, sum for sum and reduce_sum), or NULL when it has no aliases known.
 * The string lives in a registry table. */
const char *repl_preferred_name(lua_State *L, int idx);

/* Registers the node functions, one function per registered op, and the training API into the table
 * at the top of the stack (the module `tide`); also tide.prefer_name(fn, name), which the prelude
 * uses for its own aliases and then removes. */
void repl_open_nodes(lua_State *L);
/* A node handle (one output of a node, or the node itself for ops without outputs: index -1). */
bool repl_is_node(lua_State *L, int idx);
/* The handle at idx as an output; raises a Lua error if it is not a live node handle. */
tide_output repl_check_output(lua_State *L, int idx);
/* Pushes the (unique) handle of out; auto_named says the binding chose the node's name. */
void repl_push_output(lua_State *L, tide_output out, bool auto_named);
/* Renames the auto-named node of the handle at idx (and the nodes under its name scope created by the
 * current entry) to `name`, keeping its scope prefix, when the node was created by the current entry
 * and the name is free. Quietly does nothing otherwise. */
void repl_name_after_variable(lua_State *L, int idx, const char *name);
/* Marks dead every handle whose node index is >= first (rolled back), or every handle (first < 0). */
void repl_kill_handles(lua_State *L, int first);
/* The output a node handle at idx names: 1 (out set), 0 when idx is not a handle, -1 when its node
 * no longer exists (rolled back, or :reset). */
int repl_handle_output(lua_State *L, int idx, tide_output *out);
/* Arithmetic shared by nodes and host tensors: if either operand is a node the result is a new node
 * (the other converted to a Const of the node's dtype), else the op runs eagerly on host tensors.
 * op is a registered op name ("Add"); unary ops pass one operand. */
int repl_arith(lua_State *L, const char *op, int nargs);
/* Prints one value as the prompt does (a node: its description or, for a variable, its value, read by
 * a run). Raises REPL_INTERRUPTED_MESSAGE when a Ctrl-C came before or during that read: call it
 * protected. */
void repl_print_value(lua_State *L, int idx, FILE *out);

/* ---------------------------------------------------------------- lua_run.c */

/* run(fetches [, feeds] [, opts]) with its arguments from index base on, on session s: pushes the
 * results (a tensor, a list or a table; the timings with trace=true). Raises on failure. */
int repl_run(lua_State *L, tide_session *s, int base);
/* Registers run, eval, session and clock into the table at the top. */
void repl_open_run(lua_State *L);
/* Closes the sessions made by session() (before :reset drops the graph they run). */
void repl_close_sessions(repl *r);

/* ---------------------------------------------------------------- lua_queue.c */

/* Registers queue, enqueue(_many), dequeue(_many, _up_to), queue_close, queue_size, coordinator and
 * queue_runner (docs/queues.md) into the table at the top. */
void repl_open_queues(lua_State *L);

/* ---------------------------------------------------------------- lua_train.c */

/* Registers gradients, variable, init, global_step and the optimizers into the table at the top. */
void repl_open_train(lua_State *L);

/* ---------------------------------------------------------------- lua_tensor.c */

/* Registers the tensor functions and the dtype values (float32, ...) into the table at the top. */
void repl_open_tensors(lua_State *L);
/* The host tensor at idx (borrowed), or NULL if it is not one. */
tide_tensor *repl_to_tensor(lua_State *L, int idx);
/* Pushes a tensor handle; takes over one reference of t. */
void repl_push_tensor(lua_State *L, tide_tensor *t);
/* A new reference to a tensor made from the Lua value at idx: a host tensor (cast to dt when dt is
 * given and differs), a number, a boolean, a string, or nested tables of them (rectangular). With
 * dt == TIDE_INVALID_DTYPE the dtype is inferred (integers: int32, else float32; booleans: bool;
 * strings: string). NULL with a message in err when the value cannot be a tensor. */
tide_tensor *repl_tensor_from_lua(lua_State *L, int idx, tide_dtype dt, tide_error *err);
/* A dtype value at idx (a dtype handle or a name such as "float32"); TIDE_INVALID_DTYPE otherwise. */
tide_dtype repl_to_dtype(lua_State *L, int idx);
void repl_push_dtype(lua_State *L, tide_dtype dt);
/* A shape from the Lua value at idx: a table of integers where nil or -1 is an unknown dimension
 * ({nil, 784}), a host tensor of integers, or a single integer (a vector). False with err set. */
bool repl_to_shape(lua_State *L, int idx, tide_shape *out, tide_error *err);

/* ---------------------------------------------------------------- lua_options.c */

/* The options table at idx of function fn: false when there is none (nil or none); raises when it
 * is not a table or has a key not in names (NULL-terminated), naming fn and its options. */
bool repl_check_options(lua_State *L, int idx, const char *fn, const char *const *names);
/* Whether the value at idx is a table with a string key: an options (or attrs) table, not a list. */
bool repl_is_options_table(lua_State *L, int idx);
/* Registers tide.check_options(fn, opts, {names...}) (the same check, for the prelude) into the table
 * at the top; the prelude takes it out of the module again. */
void repl_open_options(lua_State *L);

/* ---------------------------------------------------------------- lua_data.c */

/* Registers load_npy, save_npy, load_idx, load_csv, fashion_mnist and batches into the table at the top. */
void repl_open_data(lua_State *L);

/* ---------------------------------------------------------------- prompt.c / complete.c */

/* The interactive loop on a terminal; returns the exit status. */
int repl_run_prompt(repl *r);
/* One line at a debugger stop (malloc'd, without its '\n'), with `prompt`: from the stream being read
 * (r->input), else from the terminal (the prompt's line editor). NULL at the end of the input, with
 * *interrupted set after a Ctrl-C, or with *woken set when r->debug_wake_fd became readable first. */
char *repl_read_stop_line(repl *r, const char *prompt, bool *interrupted, bool *woken);
/* At a debugger stop, when r->debug_wake_fd is readable: answers the web's requests (debugger_web.c);
 * true when one of them resumed or aborted the step (the stop's line must end). */
bool repl_debug_wake(repl *r);
/* Closes the line editor a script's debugger stop opened (at the end). */
void repl_prompt_cleanup(void);
/* Whether stdin is a terminal. */
bool repl_stdin_is_terminal(void);
/* Completions of the word that ends at `end` in line (ops, nodes, Lua globals and fields after a
 * '.' or ':', commands after a leading ':'). Returns a malloc'd array of malloc'd strings, sorted and
 * unique, with *count set (NULL when none). */
char **repl_complete(repl *r, const char *line, int end, int *count);

/* ---------------------------------------------------------------- commands.c */

/* ---------------------------------------------------------------- log_commands.c: what the log lost */

/* Starts telling the user what the run log loses: after every run, and after every entry (at the
 * prompt the log is committed first, so that a failure shows before the next prompt). */
tide_status repl_log_watch_start(repl *r, tide_error *err);
/* After an entry: tells the user at once of anything new the log lost. */
void repl_log_after_entry(repl *r);
/* At the end: closes the log (everything committed, the runs' final statuses written) and, when it
 * lost records or a run reads as unfinished in it though it ended, says so in one summary line naming
 * those runs. Returns true when something was lost (a script then exits with status 3 unless
 * --log-best-effort). */
bool repl_log_finish(repl *r);

/* Stops the REPL's web server (:web), if any: before the debugger it drives goes. */
void repl_web_stop(void);
/* Runs a ':' command line (with the ':'). Unknown commands suggest the nearest. */
repl_result repl_command(repl *r, const char *line);
/* The command names ("help", "nodes", ...), NULL-terminated, for completion and :help. */
const char *const *repl_command_names(void);

/* ---------------------------------------------------------------- suggest.c */

/* Case-insensitive edit distance (Levenshtein) of two names of up to 64 bytes (99 beyond). */
int repl_edit_distance(const char *a, const char *b);

#endif
