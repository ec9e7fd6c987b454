/* debugger_commands.c — the step debugger's ':' commands (docs/debugger.md): setting breakpoints
 * (:break, :breaks, :delete, :disable, :enable), going on from a stop (:step, :continue, :until,
 * :abort) and looking at it (:where, :print, :ni, :li, :lo, :set; debugger_view.c prints them).
 *
 * Every command takes the rest of its line as typed (a slice `[0:5, :]` or a Lua value `{1, 2}` has
 * spaces) and parses it here. commands.c finds them in repl_debugger_commands (so :help, completion
 * and "did you mean" know them).
 */
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

static repl_debugger *dbg_of(repl *r)
{
    if (!r->debugger)
        r->debugger = repl_debugger_new(r);
    return r->debugger;
}

static const char *arg_of(int argc, char **argv) { return argc > 1 ? argv[1] : ""; }

static bool need_stop(repl_debugger *d, const char *cmd)
{
    if (d && d->step)
        return true;
    fprintf(stderr, ":%s: no step is stopped (a breakpoint stops one: :break NODE, then run)\n", cmd);
    return false;
}

/* A breakpoint id from text; -1 when it is not one. */
static int parse_id(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    while (*end == ' ')
        end++;
    return *s && !*end && v > 0 && v < 1000000 ? (int)v : -1;
}

static repl_result cmd_break(repl *r, int argc, char **argv)
{
    repl_debugger *d = dbg_of(r);
    char msg[512];
    if (!d)
        return fputs("out of memory\n", stderr), REPL_FAILED;
    int id = repl_debugger_add(d, arg_of(argc, argv), msg, sizeof msg);
    if (!id) {
        fprintf(stderr, "%s\n", msg);
        return REPL_FAILED;
    }
    pthread_rwlock_rdlock(&d->lock); /* a web thread may change the list */
    for (int i = 0; i < d->num_bps; i++) {
        const repl_breakpoint *bp = d->bps[i];
        if (bp->id != id)
            continue;
        printf("breakpoint %d: %s\n", id, bp->spec);
        if (bp->kind == REPL_BP_NODE && !strpbrk(bp->pattern, "*?[") && !tide_graph_node(r->graph, bp->pattern))
            fprintf(stderr, "warning: no node '%s' in the graph yet (the breakpoint waits for one)\n", bp->pattern);
        if (bp->kind == REPL_BP_LUA)
            printf("(the condition runs on the main thread at a stop after each node it may concern: slow, "
                   "docs/debugger.md)\n");
    }
    pthread_rwlock_unlock(&d->lock);
    return REPL_DONE;
}

static repl_result cmd_breaks(repl *r, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    repl_debugger *d = r->debugger;
    if (!d || d->num_bps == 0) {
        puts("no breakpoints (:break NODE sets one)");
        return REPL_DONE;
    }
    printf("%-4s %-8s %-6s %s\n", "ID", "ENABLED", "HITS", "BREAKPOINT");
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps; i++)
        printf("%-4d %-8s %-6lld %s\n", d->bps[i]->id, d->bps[i]->enabled ? "yes" : "no",
               (long long)atomic_load(&d->bps[i]->hits), d->bps[i]->spec);
    pthread_rwlock_unlock(&d->lock);
    return REPL_DONE;
}

static repl_result change_bp(repl *r, int argc, char **argv, int how)
{
    const char *names[] = {"delete", "disable", "enable"};
    int id = parse_id(arg_of(argc, argv));
    if (id < 0) {
        fprintf(stderr, "usage: :%s N (a breakpoint's number, as :breaks lists them)\n", names[how]);
        return REPL_FAILED;
    }
    repl_debugger *d = r->debugger;
    bool ok = d && (how == 0 ? repl_debugger_delete(d, id) : repl_debugger_enable(d, id, how == 2));
    if (!ok) {
        fprintf(stderr, ":%s: no breakpoint %d (:breaks lists them)\n", names[how], id);
        return REPL_FAILED;
    }
    printf("breakpoint %d %s\n", id, how == 0 ? "deleted" : how == 1 ? "disabled" : "enabled");
    return REPL_DONE;
}

static repl_result cmd_delete(repl *r, int argc, char **argv) { return change_bp(r, argc, argv, 0); }
static repl_result cmd_disable(repl *r, int argc, char **argv) { return change_bp(r, argc, argv, 1); }
static repl_result cmd_enable(repl *r, int argc, char **argv) { return change_bp(r, argc, argv, 2); }

static repl_result cmd_step(repl *r, int argc, char **argv)
{
    repl_debugger *d = r->debugger;
    const char *a = arg_of(argc, argv);
    int n = *a ? parse_id(a) : 1;
    if (n < 0) {
        fprintf(stderr, "usage: :step [N] (N node executions, 1 or more)\n");
        return REPL_FAILED;
    }
    if (!need_stop(d, "step"))
        return REPL_FAILED;
    repl_debugger_resume(d, TIDE_DEBUG_STEP, n);
    return REPL_DONE;
}

static repl_result cmd_continue(repl *r, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (!need_stop(r->debugger, "continue"))
        return REPL_FAILED;
    repl_debugger_resume(r->debugger, TIDE_DEBUG_RESUME, 0);
    return REPL_DONE;
}

static repl_result cmd_abort(repl *r, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (!need_stop(r->debugger, "abort"))
        return REPL_FAILED;
    repl_debugger_resume(r->debugger, TIDE_DEBUG_ABORT_RUN, 0);
    return REPL_DONE;
}

static repl_result cmd_until(repl *r, int argc, char **argv)
{
    char msg[512];
    const char *node = arg_of(argc, argv);
    if (!*node || strchr(node, ' ')) {
        fputs("usage: :until NODE\n", stderr);
        return REPL_FAILED;
    }
    if (!r->debugger || !repl_debugger_until(r->debugger, node, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", r->debugger ? msg : ":until: no step is stopped");
        return REPL_FAILED;
    }
    return REPL_DONE;
}

static repl_result cmd_where(repl *r, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (!need_stop(r->debugger, "where"))
        return REPL_FAILED;
    return repl_dbg_where(r->debugger, stdout);
}

static repl_result cmd_print(repl *r, int argc, char **argv)
{
    if (!need_stop(r->debugger, "print"))
        return REPL_FAILED;
    return repl_dbg_print(r->debugger, arg_of(argc, argv));
}

static repl_result cmd_ni(repl *r, int argc, char **argv)
{
    if (!need_stop(r->debugger, "ni"))
        return REPL_FAILED;
    return repl_dbg_ni(r->debugger, arg_of(argc, argv));
}

static repl_result cmd_li(repl *r, int argc, char **argv)
{
    if (!need_stop(r->debugger, "li"))
        return REPL_FAILED;
    return repl_dbg_li(r->debugger, arg_of(argc, argv), true);
}

static repl_result cmd_lo(repl *r, int argc, char **argv)
{
    if (!need_stop(r->debugger, "lo"))
        return REPL_FAILED;
    return repl_dbg_li(r->debugger, arg_of(argc, argv), false);
}

static repl_result cmd_set(repl *r, int argc, char **argv)
{
    if (!need_stop(r->debugger, "set"))
        return REPL_FAILED;
    return repl_dbg_set(r->debugger, arg_of(argc, argv));
}

static repl_result cmd_dump(repl *r, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    repl_debugger *d = dbg_of(r);
    char msg[512];
    if (!d)
        return fputs("out of memory\n", stderr), REPL_FAILED;
    if (repl_dbg_dump(d, msg, sizeof msg))
        return REPL_DONE;
    fprintf(stderr, ":dump: %s\n", msg);
    return REPL_FAILED;
}

static repl_result cmd_keep(repl *r, int argc, char **argv)
{
    const char *a = arg_of(argc, argv);
    repl_debugger *d = dbg_of(r);
    char msg[512];
    if (!d)
        return fputs("out of memory\n", stderr), REPL_FAILED;
    if (!*a) {
        repl_debugger_keep_status(d, msg, sizeof msg);
        puts(msg);
        return REPL_DONE;
    }
    bool on = strcmp(a, "on") == 0;
    if (!on && strcmp(a, "off") != 0) {
        fputs("usage: :keep [on|off]\n", stderr);
        return REPL_FAILED;
    }
    if (!repl_debugger_set_keep(d, on, msg, sizeof msg)) {
        fprintf(stderr, ":keep: %s\n", msg);
        return REPL_FAILED;
    }
    puts(msg);
    return REPL_DONE;
}

const repl_command_entry repl_debugger_commands[] = {
    {"break", "b", 0, 1, "SPEC", "stop a step after a node runs (breakpoints stay across runs)",
     "SPEC is NODE, GLOB, op:TYPE, if has_inf_or_nan [--ignore GLOB...] or [GLOB] if LUA_EXPR.\n"
     "Sets a breakpoint; every run() from now on stops when it fires and the prompt becomes\n"
     "`tide[step N at 'NODE']>` (docs/debugger.md). `:break h1` stops after the node h1 ran (inside a loop,\n"
     "at each iteration); `:break layer1/*` after any node the glob matches; `:break op:Log` after any Log.\n"
     "`:break if has_inf_or_nan [--ignore GLOB...]` stops at the first node (in execution order) that made\n"
     "a NaN or infinity from finite inputs, says whether it is a forward or a gradient node and shows its\n"
     "inputs' summaries; --ignore skips nodes expected to be non-finite. `:break [GLOB] if LUA_EXPR` stops\n"
     "when the expression is true; it sees `node` (name), `op`, `value` (output 0) and `health` (its\n"
     "summary). Lua cannot run on the executor's threads: such a breakpoint stops after every node it\n"
     "concerns and evaluates on the main thread (slow; give a GLOB). With no breakpoint the debugger is\n"
     "detached and costs nothing. A breakpoint set at a stop fires in the rest of the step too.",
     cmd_break, true},
    {"breaks", NULL, 0, 0, "", "the breakpoints: number, enabled, hits",
     "Lists the breakpoints: their numbers (for :delete, :disable, :enable), whether they are enabled,\n"
     "how many times they fired, and what they are.",
     cmd_breaks, true},
    {"delete", NULL, 0, 1, "N", "delete breakpoint N",
     "Deletes breakpoint N (:breaks lists them). The last one gone, the debugger detaches.", cmd_delete, true},
    {"disable", NULL, 0, 1, "N", "disable breakpoint N (kept, not firing)",
     "Disables breakpoint N: it is kept (:breaks shows it) but does not fire until :enable N.", cmd_disable, true},
    {"enable", NULL, 0, 1, "N", "enable breakpoint N again", "Enables the disabled breakpoint N.", cmd_enable, true},
    {"step", "s", 0, 1, "[N]", "at a stop: run on and stop before the next node execution (N: the Nth)",
     "At a stop: the step goes on and stops again before the next node execution (in execution order;\n"
     "other branches run meanwhile). `:step 3` passes three executions and stops before the third.\n"
     "Before a node, :print shows its inputs and :set replaces them.",
     cmd_step, true},
    {"continue", "c", 0, 0, "", "at a stop: run on until the next breakpoint or the end of the run",
     "At a stop: the step goes on until a breakpoint fires again or the run ends.", cmd_continue, true},
    {"until", NULL, 0, 1, "NODE", "at a stop: run on and stop after NODE ran",
     "At a stop: the step goes on and stops after NODE ran (once; the breakpoints fire meanwhile).", cmd_until,
     true},
    {"abort", NULL, 0, 0, "", "at a stop: end the run (it fails: aborted in the debugger)",
     "At a stop: the run ends and fails with \"aborted in the debugger\"; variables keep what the nodes\n"
     "that ran wrote. Ctrl-C at a stop does the same.",
     cmd_abort, true},
    {"where", NULL, 0, 0, "", "at a stop: where the step is, and the state of each node",
     "At a stop: what the step stopped at and why, then every node of the graph with its state in this\n"
     "step: done, ready, waiting (for inputs), running, stopped (here), skipped (dead branch), and how many\n"
     "are not in this step.",
     cmd_where, true},
    {"print", "p", 0, 1, "NODE[:k] [SLICE] [-s]", "at a stop: a tensor produced in this step",
     "At a stop: output k (0) of NODE as produced in this step (inside a loop, the latest iteration's).\n"
     "SLICE is NumPy's: `:print h1 [0:5, :]`, `[-1]`, `[::2, 3]`. -s prints the health summary (counts of\n"
     "NaN, -inf, +inf, negative, zero, positive; min, max, mean, std of the finite values) instead.",
     cmd_print, true},
    {"ni", NULL, 0, 1, "NODE", "at a stop: a node's op, device, state, inputs and outputs",
     "At a stop: the node's op, device, state in this step, its inputs (with their producers' states) and\n"
     "its outputs with their health summaries when produced.",
     cmd_ni, true},
    {"li", NULL, 0, 1, "NODE [-r] [-d N]", "at a stop: a node's inputs (-r: recursively, -d: depth)",
     "At a stop: the inputs of NODE with their states in this step; -r follows them recursively (to depth\n"
     "20, or -d N), each node once.",
     cmd_li, true},
    {"lo", NULL, 0, 1, "NODE [-r]", "at a stop: the nodes that consume a node's outputs (-r: recursively)",
     "At a stop: the consumers of NODE with their states in this step; -r follows them recursively.",
     cmd_lo, true},
    {"set", NULL, 0, 1, "NODE[:k] VALUE", "at a stop: replace a value before its consumers read it",
     "At a stop after NODE: replaces its output k (0) with VALUE (a Lua expression: a number, a table, a\n"
     "tensor), cast to the output's dtype, before the consumers read it. At a stop before a node: replaces\n"
     "an input it reads, named by its producer. The shape may differ (the consumers check).",
     cmd_set, true},
    {"dump", NULL, 0, 0, "", "write every tensor of the stopped (or, with :keep on, the last) step into the run log",
     "At a stop: every tensor the step has produced so far (inside loops, the latest iteration's) goes\n"
     "into the run log as a tensors row of kind `dumped`: its statistics, and its value when it fits under\n"
     "the value cap (`:log cap BYTES`; the values left out are named). With no step stopped, the last\n"
     "run's values are written if keep mode held them (`:keep on` before the run); else :dump says so.\n"
     "`:tensor NODE STEP` and the browser's tensor pages show them.",
     cmd_dump, true},
    {"keep", NULL, 0, 1, "[on|off]", "keep every value of each run until the next one (for :dump); no arg: status",
     "`:keep on`: from the next run on, every run keeps every value it computes: nothing is let go\n"
     "before the run ends (so :print at a stop shows values consumed before the first stop too), and\n"
     "the finished run's values stay held until the next run() starts, for :dump. Costs memory: all of a\n"
     "step's intermediates are held at once, and kernels that would write over an input allocate instead.\n"
     "`:keep off` releases the values held at once. Not at a stop.",
     cmd_keep, true},
};
const int repl_num_debugger_commands = (int)(sizeof repl_debugger_commands / sizeof repl_debugger_commands[0]);
