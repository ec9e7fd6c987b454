/* repl.c — the REPL's state and its evaluation of entries: what happens between a line arriving and
 * its result printed.
 *
 * Evaluating an entry (Lua's own lua.c is the model):
 *   1. A line starting with ':' is a command (commands.c).
 *   2. "return <entry>" is tried first, so that an expression prints its values; otherwise the entry
 *      is compiled as a statement. A syntax error at <eof> means the statement is incomplete: nothing
 *      runs and the caller reads another line.
 *   3. The chunk runs with the REPL's environment (below) under a message handler that keeps the
 *      error's location. Ctrl-C cancels the runs in flight and stops Lua code through a hook.
 *   4. The entry is one Extend of the graph: if it fails, the nodes it added are rolled back (unless a
 *      run already used them) and their handles die.
 *
 * The environment. Entries and scripts run with _ENV = a proxy whose reads fall back to the table
 * of user globals and then to _G, and whose writes all go through __newindex into the user table.
 * Every assignment to a global is therefore seen: `W = variable(...)` renames the auto-named node
 * to "W" (DESIGN.md §6: node names follow the Lua variable).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lualib.h>

#include "debugger.h"
#include "graphdef_repl.h"
#include "lua_checkpoint.h"
#include "lua_control_flow.h"
#include "repl.h"

#define ENV_KEY "tide.env"         /* registry: the proxy used as _ENV */
#define GLOBALS_KEY "tide.globals" /* registry: the user's globals */
#define PRELUDE_NAME "=[tide prelude]"

extern const char repl_prelude_lua[];

static repl *volatile active; /* the REPL the SIGINT handler acts on */

/* ---------------------------------------------------------------- errors */

int repl_raise(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_Debug ar;
    bool located = false;
    for (int level = 1; !located && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0 || strcmp(ar.source, PRELUDE_NAME) == 0)
            continue;
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
        located = true;
    }
    if (!located) /* e.g. an entry that tail-calls the prelude has no user line left on the stack */
        lua_pushliteral(L, "");
    char msg[4096]; /* C's formats (%lld, %zu, widths), which lua_pushvfstring lacks */
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

/* ---------------------------------------------------------------- Ctrl-C
 *
 * A Ctrl-C must always stop the entry (or the script), wherever it lands:
 *   - during a run: the handler cancels every session's runs in flight;
 *   - in Lua code, also just before or after a run: the handler installs a count hook that raises
 *     REPL_INTERRUPTED_MESSAGE at the next Lua instruction. The hook stays installed until the entry
 *     ends, so a pcall that catches the error does not swallow the Ctrl-C: the next instruction after
 *     it raises again, up to the entry's own protected call;
 *   - in a C function that starts runs (run, eval): repl_check_interrupt refuses to start one and
 *     fails one that finished while the flag was set, so a short run that completes before its
 *     cancellation is polled does not lose the Ctrl-C.
 * A second Ctrl-C while the first is still pending (more than SECOND_PRESS_NS later: a stuck C
 * function, a kernel that does not poll) ends the process at once with status 130, saying so (when
 * repl_options.exit_on_second_interrupt: the tide program sets it, in-process drivers do not).
 * The handler always runs on the main thread (the one that runs Lua): a signal delivered to another
 * thread (the web server's) is forwarded there with pthread_kill.
 */

#define SECOND_PRESS_NS 500000000LL /* presses closer than this to the first count as one */

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Raises the Ctrl-C error at the Lua line being executed (ar is its activation record); the hook
 * stays installed: see above. */
static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 && strcmp(ar->source, PRELUDE_NAME) != 0)
        luaL_error(L, "%s:%d: %s", ar->short_src, ar->currentline, REPL_INTERRUPTED_MESSAGE);
    repl_raise(L, REPL_INTERRUPTED_MESSAGE);
}

void repl_check_interrupt(lua_State *L)
{
    if (repl_of(L)->interrupted)
        repl_raise(L, REPL_INTERRUPTED_MESSAGE);
}

/* A second Ctrl-C: leaves at once (async-signal-safe calls only). */
static void leave_now(void)
{
    static const char msg[] = "\ntide: Ctrl-C again while the first was pending: leaving now "
                              "(the run log may miss this entry's last runs)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(REPL_INTERRUPTED_STATUS);
}

static void on_sigint(int sig)
{
    repl *r = active;
    if (!r)
        return;
    int saved_errno = errno;
    if (!pthread_equal(pthread_self(), r->main_thread)) {
        pthread_kill(r->main_thread, sig);
        errno = saved_errno;
        return;
    }
    int64_t now = monotonic_ns();
    if (r->opts.exit_on_second_interrupt && r->evaluating && r->interrupted &&
        now - r->interrupted_at_ns > SECOND_PRESS_NS)
        leave_now();
    if (!r->interrupted)
        r->interrupted_at_ns = now;
    r->interrupted = 1;
    if (r->evaluating) {
        for (int i = 0; i < REPL_MAX_SESSIONS; i++)
            if (r->sessions[i])
                tide_session_cancel(r->sessions[i]);
        lua_sethook(r->L, interrupt_hook, LUA_MASKCOUNT, 1);
    }
    errno = saved_errno;
}

static void install_sigint(repl *r)
{
    r->main_thread = pthread_self();
    active = r;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a read at the prompt returns EINTR */
    sigaction(SIGINT, &sa, NULL);
}

/* ---------------------------------------------------------------- environment */

static int env_newindex(lua_State *L)
{
    /* (proxy, key, value): name an auto-named node after the global, then store it. */
    if (lua_type(L, 2) == LUA_TSTRING && repl_is_node(L, 3))
        repl_name_after_variable(L, 3, lua_tostring(L, 2));
    lua_getfield(L, LUA_REGISTRYINDEX, GLOBALS_KEY);
    lua_replace(L, 1);
    lua_rawset(L, 1);
    return 0;
}

void repl_push_globals(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, GLOBALS_KEY);
}

static void make_env(lua_State *L)
{
    lua_newtable(L); /* user globals; reads fall back to _G */
    lua_createtable(L, 0, 1);
    lua_pushglobaltable(L);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, GLOBALS_KEY);
    lua_newtable(L); /* the proxy */
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, env_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, ENV_KEY);
    lua_pop(L, 1);
}

/* Sets the _ENV of the function at the top of the stack to the proxy. */
static void set_env(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, ENV_KEY);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
}

/* dofile, loadfile and load run chunks with the REPL's environment too (Lua's own use _G): a file
 * run by dofile at the prompt sees and sets the same globals as the prompt, and its nodes are named
 * after them, as `tide -i FILE` does. A chunk given an explicit env keeps it. */
static int l_dofile(lua_State *L)
{
    const char *path = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    if (luaL_loadfile(L, path) != LUA_OK)
        return lua_error(L);
    set_env(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 1;
}

/* Lua's load or loadfile (upvalue 1), whose env is argument number upvalue 2. */
static int load_with_env(lua_State *L)
{
    bool has_env = lua_gettop(L) >= (int)lua_tointeger(L, lua_upvalueindex(2));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    if (!has_env && lua_type(L, 1) == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        set_env(L);
        lua_pop(L, 1);
    }
    return lua_gettop(L);
}

static void replace_loaders(lua_State *L)
{
    lua_pushglobaltable(L);
    lua_pushcfunction(L, l_dofile);
    lua_setfield(L, -2, "dofile");
    static const struct { const char *name; int env_arg; } loaders[] = {{"loadfile", 3}, {"load", 4}};
    for (int i = 0; i < 2; i++) {
        lua_getfield(L, -1, loaders[i].name);
        lua_pushinteger(L, loaders[i].env_arg);
        lua_pushcclosure(L, load_with_env, 2);
        lua_setfield(L, -2, loaders[i].name);
    }
    lua_pop(L, 1);
}

/* ---------------------------------------------------------------- the tide module */

void repl_register(lua_State *L, const luaL_Reg *fns, const char *const (*help)[2], size_t num_help)
{
    luaL_setfuncs(L, fns, 0);
    luaL_getsubtable(L, -1, "help");
    for (size_t i = 0; i < num_help; i++) {
        lua_pushstring(L, help[i][1]);
        lua_setfield(L, -2, help[i][0]);
    }
    lua_pop(L, 1);
}

static int l_quit(lua_State *L)
{
    repl *r = repl_of(L);
    r->quit = true;
    r->exit_status = (int)luaL_optinteger(L, 1, 0);
    return 0;
}

static tide_status open_lua(repl *r, tide_error *err)
{
    lua_State *L = r->L = luaL_newstate();
    if (!L)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot create the Lua state");
    *(repl **)lua_getextraspace(L) = r;
    luaL_openlibs(L);
    lua_newtable(L);
    int module = lua_gettop(L);
    lua_newtable(L);
    lua_setfield(L, module, "help"); /* the open functions and the prelude add to it */
    repl_open_tensors(L);
    repl_open_nodes(L);
    repl_open_run(L);
    repl_open_train(L);
    repl_open_data(L);
    repl_open_graphdef(L);
    repl_open_control_flow(L);
    repl_open_checkpoint(L);
    repl_open_queues(L);
    repl_open_options(L);
    repl_open_debugger(L);
    lua_pushcfunction(L, l_quit);
    lua_setfield(L, module, "quit");
    lua_pushvalue(L, module);
    lua_setglobal(L, "tide");
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, module);
    lua_setfield(L, -2, "tide");
    lua_pop(L, 1);
    /* The prelude defines the friendlier wrappers (zeros, sum over all axes...) in the module. */
    if (luaL_loadbuffer(L, repl_prelude_lua, strlen(repl_prelude_lua), PRELUDE_NAME) != LUA_OK ||
        lua_pcall(L, 0, 0, 0) != LUA_OK) {
        tide_error_set(err, TIDE_INTERNAL, "the prelude failed: %s", lua_tostring(L, -1));
        return TIDE_INTERNAL;
    }
    /* Every module entry becomes a global too, except those that would hide Lua's own (select,
     * string, type...) and `help`: they stay reachable as tide.NAME. */
    lua_pushglobaltable(L);
    int g = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, module)) {
        lua_pushvalue(L, -2);
        if (lua_type(L, -1) == LUA_TSTRING && lua_rawget(L, g) == LUA_TNIL && strcmp(lua_tostring(L, -3), "help") != 0) {
            lua_pop(L, 1);
            lua_pushvalue(L, -2);
            lua_pushvalue(L, -2);
            lua_rawset(L, g);
        } else
            lua_pop(L, 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    make_env(L);
    replace_loaders(L);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- lifetime */

static tide_status open_graph(repl *r, tide_error *err)
{
    r->graph = tide_graph_new();
    r->session = r->graph ? tide_session_new(r->engine, r->graph, NULL, err) : NULL;
    if (!r->session)
        return tide_error_code(err) ? tide_error_code(err)
                                    : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    r->sessions[0] = r->session;
    if (r->store && tide_store_log_session(r->store, r->session, r->engine, "repl", err) < 0)
        return tide_error_code(err);
    return TIDE_OK;
}

repl *repl_new(const repl_options *opts, tide_error *err)
{
    repl *r = calloc(1, sizeof *r);
    if (!r) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    r->opts = *opts;
    r->nodes_at_last_run = -1;
    r->debug_wake_fd = -1;
    tide_engine_options eo;
    tide_engine_options_init(&eo);
    eo.num_threads = opts->num_threads;
    eo.num_cpu_devices = opts->num_cpu_devices;
    r->err = tide_error_new();
    r->engine = tide_engine_new(&eo, err);
    if (!r->engine || !r->err)
        goto fail;
    if (opts->log_path) {
        r->store = tide_store_open(opts->log_path, NULL, err);
        if (!r->store || !(r->store_observer = tide_store_attach(r->store, r->engine, err)) ||
            repl_log_watch_start(r, err) != TIDE_OK)
            goto fail;
    }
    if (open_graph(r, err) != TIDE_OK || open_lua(r, err) != TIDE_OK)
        goto fail;
    install_sigint(r);
    return r;
fail:
    repl_free(r);
    return NULL;
}

void repl_free(repl *r)
{
    if (!r)
        return;
    if (active == r)
        active = NULL;
    if (r->store)
        tide_store_close(r->store); /* detaches and commits before the engine goes */
    if (r->L)
        lua_close(r->L); /* frees the sessions made by session() */
    repl_close_sessions(r);
    if (r->debugger)
        repl_web_stop(); /* its threads call the debugger */
    repl_debugger_free(r->debugger);
    repl_prompt_cleanup();
    tide_session_free(r->session);
    tide_graph_free(r->graph);
    tide_engine_free(r->engine);
    tide_error_free(r->err);
    for (int i = 0; i < r->num_history; i++)
        free(r->history[i]);
    free(r->history);
    repl_forget_trace(r);
    free(r);
}

tide_status repl_reset(repl *r, tide_error *err)
{
    repl_kill_handles(r->L, -1);
    repl_close_sessions(r);
    r->sessions[0] = NULL; /* first: the SIGINT handler reads the array */
    tide_session_free(r->session);
    tide_graph_free(r->graph);
    r->session = NULL;
    r->graph = NULL;
    r->graph_generation++;
    r->first_node = 0;
    return open_graph(r, err);
}

void repl_history_add(repl *r, const char *entry)
{
    if (r->num_history == r->cap_history) {
        int cap = r->cap_history ? 2 * r->cap_history : 64;
        char **grown = realloc(r->history, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        r->history = grown;
        r->cap_history = cap;
    }
    char *copy = strdup(entry);
    if (copy)
        r->history[r->num_history++] = copy;
}

/* ---------------------------------------------------------------- evaluation */

/* The nearest string key of the table at idx to name (edit distance), if nearer than *best. */
static void nearest_key(lua_State *L, int idx, const char *name, char *out, size_t size, int *best)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        return;
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            int d = repl_edit_distance(name, k);
            if (d < *best && strcmp(k, name) != 0) {
                *best = d;
                snprintf(out, size, "%s", k);
            }
        }
    }
}

/* "attempt to call a nil value (global 'matmull')" gets "; did you mean matmul?": the nearest name
 * among the globals, the tide module and the methods of nodes and tensors. */
static void suggest_name(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    const char *kinds[] = {"(global '", "(field '", "(method '"};
    const char *at = NULL;
    for (int i = 0; i < 3 && !at; i++)
        if ((at = strstr(msg, kinds[i])))
            at += strlen(kinds[i]);
    const char *end = at ? strchr(at, '\'') : NULL;
    if (!end || end - at >= 64 || !strstr(msg, "a nil value"))
        return;
    char name[64], best_name[128] = "";
    snprintf(name, sizeof name, "%.*s", (int)(end - at), at);
    int best = 1 + (int)strlen(name) / 3 + 1;
    repl_push_globals(L);
    nearest_key(L, -1, name, best_name, sizeof best_name, &best);
    lua_pushglobaltable(L);
    nearest_key(L, -1, name, best_name, sizeof best_name, &best);
    lua_getglobal(L, "tide");
    nearest_key(L, -1, name, best_name, sizeof best_name, &best);
    luaL_getmetatable(L, "tide.node");
    lua_getfield(L, -1, "methods");
    nearest_key(L, -1, name, best_name, sizeof best_name, &best);
    luaL_getmetatable(L, "tide.tensor");
    lua_getfield(L, -1, "__methods");
    nearest_key(L, -1, name, best_name, sizeof best_name, &best);
    lua_pop(L, 7);
    if (best_name[0])
        lua_pushfstring(L, "%s; did you mean %s?", msg, best_name);
}

static int message_handler(lua_State *L)
{
    if (!lua_isstring(L, 1)) { /* an error object that is not a string */
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        return 1;
    }
    suggest_name(L);
    return 1;
}

static int print_results_protected(lua_State *L)
{
    for (int i = 1; i <= lua_gettop(L); i++)
        repl_print_value(L, i, stdout);
    return 0;
}

/* Compiles entry: as an expression ("return ..."), else as a statement. Pushes the function (status
 * LUA_OK) or the error message. */
static int compile(lua_State *L, const char *entry, const char *chunkname)
{
    char name[256];
    snprintf(name, sizeof name, "=%s", chunkname);
    /* No collection while parsing: a finalizer run from deep inside the parser can fail with "C stack
     * overflow", and Lua drops a failed finalizer (a tensor's __gc would never release it). */
    lua_gc(L, LUA_GCSTOP);
    lua_pushfstring(L, "return %s;", entry);
    int st = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), name);
    lua_remove(L, -2);
    if (st == LUA_OK) {
        /* An expression: evaluated as the argument list of an identity function, so that a call in it
         * is not a tail call: the entry's line stays on the stack for error locations (a tail call to
         * a prelude function would leave no user line for repl_raise to name). */
        lua_pushfstring(L, "return (function(...) return ... end)(%s\n);", entry);
        if (luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), name) == LUA_OK) {
            lua_remove(L, -2);
            lua_remove(L, -2);
        } else
            lua_pop(L, 2);
    } else {
        lua_pop(L, 1);
        st = luaL_loadbuffer(L, entry, strlen(entry), name);
    }
    lua_gc(L, LUA_GCRESTART);
    return st;
}

static bool incomplete(lua_State *L, int status)
{
    if (status != LUA_ERRSYNTAX)
        return false;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    return len >= 5 && strcmp(msg + len - 5, "<eof>") == 0;
}

/* Runs the function at the top with the REPL's environment; prints results when print_results. */
static bool call_entry(repl *r, int nargs, bool print_results)
{
    lua_State *L = r->L;
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, message_handler);
    lua_insert(L, base);
    r->evaluating = 1;
    if (r->interrupted) /* a Ctrl-C before the entry started (a script's start-up) stops it at once */
        lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, 1);
    int st = lua_pcall(L, nargs, LUA_MULTRET, base);
    if (st == LUA_OK && print_results && lua_gettop(L) > base) {
        /* Printing runs Lua too (__tostring, a variable's value): protected, and Ctrl-C still works. */
        lua_pushcfunction(L, print_results_protected);
        lua_insert(L, base + 1);
        st = lua_pcall(L, lua_gettop(L) - base - 1, 0, base);
    }
    r->evaluating = 0;
    lua_sethook(L, NULL, 0, 0);
    if (st != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        fflush(stdout);
        fprintf(stderr, "error: %s\n", msg ? msg : "(no message)");
        lua_settop(L, base - 1);
        return false;
    }
    lua_settop(L, base - 1);
    return true;
}

/* After an entry: a failed one is rolled back (when possible); a new graph version is logged. */
static void finish_entry(repl *r, bool ok, uint64_t version_before)
{
    if (!ok && tide_graph_num_nodes(r->graph) > r->first_node) {
        if (tide_graph_rollback(r->graph, r->first_node, r->err) == TIDE_OK)
            repl_kill_handles(r->L, r->first_node);
    }
    if (r->store && tide_graph_version(r->graph) != version_before)
        tide_store_log_graph(r->store, r->session, NULL);
    r->first_node = tide_graph_num_nodes(r->graph);
    r->entry_interrupted = r->interrupted;
    r->interrupted = 0;
    r->nodes_at_last_run = -1; /* the graph-growth watch is per entry (lua_run.c) */
    r->growing_runs = 0;
    r->growth_warned = false;
    repl_log_after_entry(r); /* what the log lost, at once */
}

repl_result repl_eval(repl *r, const char *entry, const char *chunkname)
{
    while (*entry == ' ' || *entry == '\t' || *entry == '\n' || *entry == '\r')
        entry++;
    if (!*entry)
        return REPL_DONE;
    r->first_node = tide_graph_num_nodes(r->graph);
    uint64_t version = tide_graph_version(r->graph);
    if (entry[0] == ':') {
        r->evaluating = 1; /* a second Ctrl-C ends a command stuck in C code too */
        repl_result res = repl_command(r, entry);
        r->evaluating = 0;
        lua_sethook(r->L, NULL, 0, 0);
        finish_entry(r, res != REPL_FAILED, version);
        return r->quit ? REPL_QUIT : res;
    }
    lua_State *L = r->L;
    int st = compile(L, entry, chunkname);
    if (st != LUA_OK) {
        bool more = incomplete(L, st);
        if (!more)
            fprintf(stderr, "error: %s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
        return more ? REPL_INCOMPLETE : REPL_FAILED;
    }
    set_env(L);
    bool ok = call_entry(r, 0, true);
    finish_entry(r, ok, version);
    fflush(stdout);
    if (r->quit)
        return REPL_QUIT;
    return ok ? REPL_DONE : REPL_FAILED;
}

repl_result repl_eval_nested(repl *r, const char *entry)
{
    int first_node = r->first_node;
    sig_atomic_t evaluating = r->evaluating;
    repl_result res = repl_eval(r, entry, "stdin");
    if (res == REPL_INCOMPLETE)
        fputs("error: an entry at a debugger stop is one line\n", stderr);
    r->first_node = first_node;
    r->evaluating = evaluating;
    return res;
}

int repl_run_script(repl *r, const char *path, int argc, char **argv)
{
    lua_State *L = r->L;
    lua_createtable(L, argc, 1);
    lua_pushstring(L, path);
    lua_rawseti(L, -2, 0);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i + 1);
    }
    repl_push_globals(L);
    lua_insert(L, -2);
    lua_setfield(L, -2, "arg");
    lua_pop(L, 1);
    r->first_node = tide_graph_num_nodes(r->graph);
    uint64_t version = tide_graph_version(r->graph);
    if (luaL_loadfile(L, path) != LUA_OK) {
        fprintf(stderr, "tide: %s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
        return 1;
    }
    set_env(L);
    for (int i = 0; i < argc; i++)
        lua_pushstring(L, argv[i]);
    bool ok = call_entry(r, argc, false);
    finish_entry(r, true, version); /* a script's nodes stay (they may have run) */
    fflush(stdout);
    if (!ok)
        return r->entry_interrupted ? REPL_INTERRUPTED_STATUS : 1;
    return r->exit_status;
}

int repl_run_stream(repl *r, FILE *in, const char *chunkname)
{
    char *line = NULL, *entry = NULL;
    size_t cap = 0, len = 0;
    bool failed = false;
    FILE *outer = r->input;
    r->input = in; /* a debugger stop reads its entries from here too */
    for (;;) {
        errno = 0;
        ssize_t n = getline(&line, &cap, in);
        if (n < 0 && errno == EINTR && r->interrupted) { /* Ctrl-C while waiting: the pending entry goes */
            clearerr(in);
            r->interrupted = 0;
            len = 0;
            continue;
        }
        if (n < 0)
            break;
        char *grown = realloc(entry, len + (size_t)n + 1);
        if (!grown)
            break;
        entry = grown;
        memcpy(entry + len, line, (size_t)n + 1);
        len += (size_t)n;
        repl_result res = repl_eval(r, entry, chunkname);
        if (res == REPL_INCOMPLETE)
            continue;
        repl_history_add(r, entry);
        len = 0;
        entry[0] = 0;
        failed |= res == REPL_FAILED;
        if (res == REPL_QUIT)
            break;
    }
    if (len > 0 && !r->quit) { /* the input ended inside a statement */
        fprintf(stderr, "error: %s: the input ended inside an unfinished statement\n", chunkname);
        failed = true;
    }
    free(line);
    free(entry);
    r->input = outer;
    if (r->quit)
        return r->exit_status;
    return failed ? 1 : 0;
}
