/* debugger.c — the REPL's step debugger controller (docs/debugger.md): the breakpoints, the engine
 * debugger (engine/tide_debug.h) attached while any breakpoint is set and detached when none is (so an
 * unused debugger costs nothing), deciding why a step stopped, and the nested prompt of a stop.
 *
 * A stop, on the main thread (inside `paused`, while the engine keeps the execution parked):
 *   why: a step's stop (before a node) | the first enabled breakpoint that matches (after a node):
 *        NODE/OP by name, has_inf_or_nan by the first bad node, a Lua condition evaluated here (false:
 *        resume silently) | :until's node
 *   then: :step N passes N - 1 stops silently; dbg.on_bad's function may decide; else the stop is
 *        shown and the nested prompt reads entries (commands, Lua) until one resumes, steps or aborts
 *        (:continue, :step, :abort, Ctrl-C, the end of the input: abort). Without any input to read
 *        (a script whose stdin is not a terminal, without --debug) the run is aborted, saying why.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debugger.h"

/* ---------------------------------------------------------------- breakpoints */

static void bp_free(repl_breakpoint *bp)
{
    if (!bp)
        return;
    free(bp->spec);
    free(bp->pattern);
    free(bp->expr);
    for (int i = 0; i < bp->num_ignore; i++)
        free(bp->ignore[i]);
    free(bp);
}

static bool bp_matches_name(const repl_breakpoint *bp, const tide_node *n)
{
    switch (bp->kind) {
    case REPL_BP_NODE:
        return fnmatch(bp->pattern, tide_node_name(n), 0) == 0;
    case REPL_BP_OP:
        return strcmp(bp->pattern, tide_node_op(n)) == 0;
    case REPL_BP_BAD:
        return true;
    case REPL_BP_LUA:
        return !bp->pattern || fnmatch(bp->pattern, tide_node_name(n), 0) == 0;
    }
    return false;
}

static char *skip_spaces(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* "has_inf_or_nan [--ignore GLOB...]" into bp; false with msg. */
static bool parse_bad(repl_breakpoint *bp, char *rest, char *msg, size_t size)
{
    bp->kind = REPL_BP_BAD;
    for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t")) {
        if (strcmp(w, "--ignore") == 0)
            continue;
        if (bp->num_ignore == REPL_BP_MAX_IGNORE) {
            snprintf(msg, size, ":break if has_inf_or_nan: at most %d --ignore patterns", REPL_BP_MAX_IGNORE);
            return false;
        }
        if (w[0] == '-') {
            snprintf(msg, size, ":break if has_inf_or_nan: unknown option '%s' (only --ignore GLOB...)", w);
            return false;
        }
        bp->ignore[bp->num_ignore++] = strdup(w);
    }
    return true;
}

/* Parses a breakpoint's spec: NODE|GLOB, op:TYPE, [GLOB] if has_inf_or_nan [--ignore G...],
 * [GLOB] if LUA_EXPR. */
static repl_breakpoint *parse_bp(const char *spec_in, char *msg, size_t size)
{
    char *spec = strdup(spec_in ? spec_in : "");
    repl_breakpoint *bp = calloc(1, sizeof *bp);
    if (!spec || !bp) {
        snprintf(msg, size, "out of memory");
        free(spec);
        free(bp);
        return NULL;
    }
    trim_end(spec);
    char *s = skip_spaces(spec);
    bp->spec = strdup(s);
    bp->enabled = true;
    atomic_init(&bp->hits, 0);
    char *cond = strncmp(s, "if ", 3) == 0 ? s : strstr(s, " if ");
    bool ok = true;
    if (!*s) {
        snprintf(msg, size, "usage: :break NODE|GLOB, :break op:TYPE, :break if has_inf_or_nan [--ignore GLOB...], "
                            ":break [GLOB] if LUA_EXPR");
        ok = false;
    } else if (cond) {
        char *expr = skip_spaces(cond + (cond == s ? 3 : 4));
        *cond = '\0';
        trim_end(s);
        bp->pattern = *s ? strdup(s) : NULL;
        if (strncmp(expr, "has_inf_or_nan", 14) == 0 && (expr[14] == '\0' || expr[14] == ' ')) {
            ok = parse_bad(bp, expr + 14, msg, size);
        } else if (!*expr) {
            snprintf(msg, size, ":break if: a condition is missing (has_inf_or_nan, or a Lua expression)");
            ok = false;
        } else {
            bp->kind = REPL_BP_LUA;
            bp->expr = strdup(expr);
        }
    } else if (strncmp(s, "op:", 3) == 0) {
        bp->kind = REPL_BP_OP;
        bp->pattern = strdup(s + 3);
        tide_op_info info;
        if (!bp->pattern[0] || !tide_registry_op_info(bp->pattern, &info)) {
            snprintf(msg, size, ":break op:%s: no op is called '%s' (op names as :nodes shows them: MatMul, Log)",
                     bp->pattern, bp->pattern);
            ok = false;
        }
    } else if (strchr(s, ' ')) {
        snprintf(msg, size, ":break %s: one node name or glob (or op:TYPE, or if CONDITION)", s);
        ok = false;
    } else {
        bp->kind = REPL_BP_NODE;
        bp->pattern = strdup(s);
    }
    free(spec);
    if (!ok) {
        bp_free(bp);
        return NULL;
    }
    return bp;
}

int repl_debugger_add(repl_debugger *d, const char *spec, char *msg, size_t size)
{
    repl_breakpoint *bp = parse_bp(spec, msg, size);
    if (!bp)
        return 0;
    pthread_rwlock_wrlock(&d->lock);
    if (d->num_bps == d->cap_bps) {
        int cap = d->cap_bps ? 2 * d->cap_bps : 8;
        repl_breakpoint **grown = realloc(d->bps, sizeof *grown * (size_t)cap);
        if (!grown) {
            pthread_rwlock_unlock(&d->lock);
            bp_free(bp);
            snprintf(msg, size, "out of memory");
            return 0;
        }
        d->bps = grown;
        d->cap_bps = cap;
    }
    bp->id = ++d->next_id;
    d->bps[d->num_bps++] = bp;
    pthread_rwlock_unlock(&d->lock);
    repl_debugger_update(d);
    return bp->id;
}

static int bp_index(repl_debugger *d, int id)
{
    for (int i = 0; i < d->num_bps; i++)
        if (d->bps[i]->id == id)
            return i;
    return -1;
}

bool repl_debugger_delete(repl_debugger *d, int id)
{
    pthread_rwlock_wrlock(&d->lock);
    int i = bp_index(d, id);
    repl_breakpoint *bp = i >= 0 ? d->bps[i] : NULL;
    if (bp)
        memmove(&d->bps[i], &d->bps[i + 1], sizeof *d->bps * (size_t)(d->num_bps - i - 1)), d->num_bps--;
    pthread_rwlock_unlock(&d->lock);
    if (!bp)
        return false;
    repl_debugger_update(d); /* detaches at the last: no check runs any more, bp can go */
    bp_free(bp);
    return true;
}

bool repl_debugger_enable(repl_debugger *d, int id, bool on)
{
    pthread_rwlock_wrlock(&d->lock);
    int i = bp_index(d, id);
    if (i >= 0)
        d->bps[i]->enabled = on;
    pthread_rwlock_unlock(&d->lock);
    if (i >= 0)
        repl_debugger_update(d);
    return i >= 0;
}

bool repl_debugger_until(repl_debugger *d, const char *node, char *msg, size_t size)
{
    if (!d->step) {
        snprintf(msg, size, ":until: no step is stopped (a breakpoint stops one: :break)");
        return false;
    }
    const tide_node *n = repl_debugger_node(d, node);
    tide_debug_node_state st = n ? tide_debug_step_node_state(d->step, n) : TIDE_DEBUG_NOT_IN_STEP;
    if (!n) {
        snprintf(msg, size, ":until: no node '%s' in the graph", node);
        return false;
    }
    if (st == TIDE_DEBUG_NOT_IN_STEP || st == TIDE_DEBUG_DONE || st == TIDE_DEBUG_SKIPPED || st == TIDE_DEBUG_STOPPED) {
        snprintf(msg, size, ":until: '%s' %s", node, st == TIDE_DEBUG_NOT_IN_STEP ? "does not run in this step"
                                                     : st == TIDE_DEBUG_SKIPPED ? "was skipped in this step"
                                                                                : "already ran in this step");
        return false;
    }
    /* :until steps silently until the node is done (on whichever thread or device it runs). */
    d->until = n;
    d->until_step = d->run_step;
    return repl_debugger_resume(d, TIDE_DEBUG_STEP, 1);
}

/* ---------------------------------------------------------------- the engine's callbacks */

static bool dbg_watches(void *user, const tide_node *n)
{
    repl_debugger *d = user;
    bool yes = false;
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps && !yes; i++)
        yes = d->bps[i]->enabled && bp_matches_name(d->bps[i], n);
    pthread_rwlock_unlock(&d->lock);
    return yes;
}

/* On executor threads: pause after a node that a breakpoint (or :until) wants. */
static tide_debug_action dbg_check(void *user, const tide_debug_event *ev)
{
    repl_debugger *d = user;
    if (!ev->after) /* not asked (after_only): a guard */
        return TIDE_DEBUG_CONTINUE;
    bool stop = false;
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps && !stop; i++) {
        repl_breakpoint *bp = d->bps[i];
        if (!bp->enabled || !bp_matches_name(bp, ev->node))
            continue;
        stop = bp->kind != REPL_BP_BAD || repl_bad_origin(bp, ev);
        if (stop && bp->kind != REPL_BP_LUA)
            atomic_fetch_add(&bp->hits, 1);
    }
    pthread_rwlock_unlock(&d->lock);
    return stop ? TIDE_DEBUG_PAUSE : TIDE_DEBUG_CONTINUE;
}

/* Breakpoint i as the main thread needs it at a stop (copied under the lock: a web thread may change
 * the list meanwhile). False past the end. */
typedef struct bp_seen {
    int id;
    repl_bp_kind kind;
    bool fires;   /* enabled, matches the node (has_inf_or_nan: a bad origin) */
    char *expr;   /* LUA: a copy */
} bp_seen;

static bool bp_at(repl_debugger *d, int i, const tide_debug_event *ev, bp_seen *out)
{
    pthread_rwlock_rdlock(&d->lock);
    bool there = i < d->num_bps;
    if (there) {
        const repl_breakpoint *bp = d->bps[i];
        *out = (bp_seen){bp->id, bp->kind, bp->enabled && bp_matches_name(bp, ev->node), NULL};
        if (out->fires && bp->kind == REPL_BP_BAD)
            out->fires = repl_bad_origin(bp, ev);
        if (out->fires && bp->kind == REPL_BP_LUA)
            out->expr = strdup(bp->expr);
    }
    pthread_rwlock_unlock(&d->lock);
    return there;
}

static void count_hit(repl_debugger *d, int id)
{
    pthread_rwlock_rdlock(&d->lock);
    int i = bp_index(d, id);
    if (i >= 0)
        atomic_fetch_add(&d->bps[i]->hits, 1);
    pthread_rwlock_unlock(&d->lock);
}

/* Why the step stopped at ev: sets d->reason (and d->message for has_inf_or_nan). False when it
 * should go on silently (a Lua condition that is false, a breakpoint deleted meanwhile). */
static bool stop_reason(repl_debugger *d, const tide_debug_event *ev)
{
    d->reason[0] = '\0';
    if (!ev->after) {
        snprintf(d->reason, sizeof d->reason, "step");
        return true;
    }
    bp_seen bp;
    for (int i = 0; bp_at(d, i, ev, &bp); i++) {
        if (!bp.fires)
            continue;
        if (bp.kind == REPL_BP_LUA) {
            int yes = repl_dbg_eval_condition(d, bp.id, bp.expr);
            free(bp.expr);
            if (yes == 0)
                continue;
            count_hit(d, bp.id);
        }
        if (bp.kind == REPL_BP_BAD) {
            snprintf(d->reason, sizeof d->reason, "has_inf_or_nan");
            d->message = repl_bad_message(ev);
        } else
            snprintf(d->reason, sizeof d->reason, "breakpoint %d", bp.id);
        return true;
    }
    return false;
}

void repl_debugger_print_stop(repl_debugger *d, FILE *out)
{
    if (!d->step) {
        fputs("no step is stopped\n", out);
        return;
    }
    const tide_debug_event *ev = d->ev;
    char where[256] = "";
    if (ev->at.frame && ev->at.frame[0])
        snprintf(where, sizeof where, ", iteration %lld of loop '%s'", (long long)ev->at.iteration, ev->at.frame);
    fprintf(out, "stopped %s '%s' (%s) in step %lld%s: %s\n", ev->after ? "after" : "before", tide_node_name(ev->node),
            tide_node_op(ev->node), (long long)d->run_step, where, d->reason);
    if (d->message)
        fputs(d->message, out);
    fflush(out);
}

const char *repl_debugger_prompt(const repl_debugger *d, char *buf, size_t size)
{
    snprintf(buf, size, "tide[step %lld at '%s']> ", (long long)d->run_step, d->ev ? tide_node_name(d->ev->node) : "?");
    return buf;
}

bool repl_debugger_resume(repl_debugger *d, tide_debug_command cmd, int steps)
{
    if (!d->step)
        return false;
    d->decided = true;
    d->answer = cmd;
    d->steps_left = cmd == TIDE_DEBUG_STEP && steps > 1 ? steps - 1 : 0;
    return true;
}

/* Where the entries of a stop come from: the terminal, the stream being read, or nowhere. */
static bool has_input(repl_debugger *d)
{
    return d->r->opts.debug || d->r->input || d->r->opts.interactive || repl_stdin_is_terminal();
}

/* The nested prompt: entries (and the web's requests) until one decides how the step goes on. */
static void stop_prompt(repl_debugger *d)
{
    repl *r = d->r;
    char prompt[320];
    repl_dbg_web_serving(d, true);
    while (!d->decided) {
        repl_dbg_web_serve(d);
        if (d->decided)
            break;
        bool interrupted = false, woken = false;
        char *line = repl_read_stop_line(r, repl_debugger_prompt(d, prompt, sizeof prompt), &interrupted, &woken);
        if (woken && !interrupted)
            continue;
        if (interrupted || r->interrupted) {
            free(line);
            fputs("^C: the run is aborted\n", stdout);
            repl_debugger_resume(d, TIDE_DEBUG_ABORT_RUN, 0);
            break;
        }
        if (!line) {
            fputs("\nthe input ended at a debugger stop: the run is aborted\n", stderr);
            repl_debugger_resume(d, TIDE_DEBUG_ABORT_RUN, 0);
            break;
        }
        repl_eval_nested(r, line);
        free(line);
    }
    repl_dbg_web_serving(d, false);
}

static tide_debug_command dbg_paused(void *user, tide_debug_step *step, const tide_debug_event *ev)
{
    repl_debugger *d = user;
    if (d->step) /* a stop inside a stop (a run from the nested prompt is refused): never */
        return TIDE_DEBUG_RESUME;
    d->step = step;
    d->ev = ev;
    d->run_step = tide_debug_step_run(step)->step;
    atomic_store(&d->last_run_step, d->run_step);
    d->decided = false;
    d->answer = TIDE_DEBUG_RESUME;
    bool stepped = d->stepping;
    d->stepping = false;
    if (d->until && d->until_step != d->run_step)
        d->until = NULL; /* the run it was for ended */
    bool stop = stop_reason(d, ev);
    if (stop && d->until && stepped && !ev->after) { /* :until: silently on until its node is done */
        stop = tide_debug_step_node_state(step, d->until) == TIDE_DEBUG_DONE;
        if (stop)
            snprintf(d->reason, sizeof d->reason, "until '%.40s' ran", tide_node_name(d->until));
        else
            repl_debugger_resume(d, TIDE_DEBUG_STEP, 1);
    }
    if (stop)
        d->until = NULL; /* a breakpoint met on the way ends it too */
    if (stop && stepped && !ev->after && d->steps_left > 0) {
        d->steps_left--;
        repl_debugger_resume(d, TIDE_DEBUG_STEP, d->steps_left + 1);
    } else if (stop) {
        d->had_stop = true;
        bool handled = strcmp(d->reason, "has_inf_or_nan") == 0 && repl_dbg_call_on_bad(d);
        if (!handled && !has_input(d)) {
            fflush(stdout);
            repl_debugger_print_stop(d, stderr);
            fputs("no terminal to debug at: the run is aborted (run the script with `tide --debug` in a terminal, "
                  "or handle the stop in Lua with dbg.on_bad(fn))\n", stderr);
            repl_debugger_resume(d, TIDE_DEBUG_ABORT_RUN, 0);
        } else if (!handled) {
            repl_debugger_print_stop(d, stdout);
            stop_prompt(d);
        }
    }
    tide_debug_command answer = d->decided ? d->answer : TIDE_DEBUG_RESUME;
    d->stepping = answer == TIDE_DEBUG_STEP;
    d->step = NULL;
    d->ev = NULL;
    free(d->message);
    d->message = NULL;
    return answer;
}

/* ---------------------------------------------------------------- attaching */

void repl_debugger_update(repl_debugger *d)
{
    pthread_rwlock_rdlock(&d->lock);
    bool wanted = d->keep;
    for (int i = 0; i < d->num_bps && !wanted; i++)
        wanted = d->bps[i]->enabled;
    pthread_rwlock_unlock(&d->lock);
    pthread_mutex_lock(&d->attach_lock);
    int detach = 0;
    if (wanted && (!d->attached || d->attached_keep != d->keep)) { /* attaching again replaces */
        tide_debugger dbg = {.user = d, .watches = dbg_watches, .check = dbg_check, .paused = dbg_paused,
                             .after_only = true}; /* dbg_check stops after nodes only */
        repl_debugger_keep_callbacks(d, &dbg);
        d->attached_keep = d->keep;
        tide_error *err = tide_error_new();
        d->attached = tide_engine_attach_debugger(d->r->engine, &dbg, err);
        if (!d->attached)
            fprintf(stderr, "the debugger cannot attach: %s\n", tide_error_message(err));
        tide_error_free(err);
    } else if (wanted) {
        tide_engine_debugger_changed(d->r->engine);
    } else if (d->attached) {
        detach = d->attached;
        d->attached = 0;
    }
    pthread_mutex_unlock(&d->attach_lock);
    if (detach) /* outside the lock: it waits for a stop in progress on another thread */
        tide_engine_detach_debugger(d->r->engine, detach);
}

bool repl_debugger_has_bad(repl_debugger *d)
{
    bool yes = false;
    pthread_rwlock_rdlock(&d->lock);
    for (int i = 0; i < d->num_bps && !yes; i++)
        yes = d->bps[i]->enabled && d->bps[i]->kind == REPL_BP_BAD;
    pthread_rwlock_unlock(&d->lock);
    return yes;
}

const tide_node *repl_debugger_node(repl_debugger *d, const char *name)
{
    const tide_node *n = tide_graph_node(d->r->graph, name);
    if (!n && d->ev && strcmp(tide_node_name(d->ev->node), name) == 0)
        n = d->ev->node; /* a node the plan added (_Send, _Recv) */
    return n;
}

repl_debugger *repl_debugger_new(repl *r)
{
    repl_debugger *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->r = r;
    d->lua_on_bad = LUA_NOREF;
    d->wake[0] = d->wake[1] = -1;
    pthread_rwlock_init(&d->lock, NULL);
    pthread_mutex_init(&d->attach_lock, NULL);
    pthread_mutex_init(&d->web_lock, NULL);
    pthread_cond_init(&d->web_cond, NULL);
    pthread_mutex_init(&d->kept_lock, NULL);
    return d;
}

void repl_debugger_free(repl_debugger *d)
{
    if (!d)
        return;
    if (d->attached)
        tide_engine_detach_debugger(d->r->engine, d->attached);
    repl_debugger_free_kept(d);
    for (int i = 0; i < d->num_bps; i++)
        bp_free(d->bps[i]);
    free(d->bps);
    free(d->message);
    for (int i = 0; i < 2; i++)
        if (d->wake[i] >= 0)
            close(d->wake[i]);
    if (d->r->debug_wake_fd == d->wake[0])
        d->r->debug_wake_fd = -1;
    pthread_rwlock_destroy(&d->lock);
    pthread_mutex_destroy(&d->attach_lock);
    pthread_mutex_destroy(&d->web_lock);
    pthread_cond_destroy(&d->web_cond);
    pthread_mutex_destroy(&d->kept_lock);
    free(d);
}
