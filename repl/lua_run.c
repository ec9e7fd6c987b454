/* lua_run.c — running graphs from Lua: run(fetches [, feeds] [, {trace=, timeout=}]) and eval in
 * their three fetch forms (one node, a list, a table of named nodes), feeds, traced runs' timings,
 * other sessions (session(), s:run, s:close) and tide.clock().
 *
 * A run is where a Ctrl-C must not be lost (repl.c says how): one that lands just before a run keeps
 * it from starting, one that lands as it finishes still stops the entry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debugger.h"
#include "repl.h"

#define SESSION_MT "tide.session"

typedef struct session_handle {
    tide_session *session; /* NULL once closed */
    int slot;              /* index in repl->sessions */
    int generation;
} session_handle;

/* ---------------------------------------------------------------- run */

/* How many runs in a row of one entry must find the graph grown before the warning. */
#define GROWTH_WARN_RUNS 10

/* A loop that builds nodes before every run (run(one_hot(labels, 10)) with labels a placeholder,
 * x * y inside the loop) grows the graph without end, and every new node costs a plan: warns once
 * per entry when GROWTH_WARN_RUNS runs in a row found new nodes, naming what the last step added. */
static void watch_growth(repl *r)
{
    int n = tide_graph_num_nodes(r->graph);
    int before = r->nodes_at_last_run;
    r->growing_runs = before >= 0 && n > before ? r->growing_runs + 1 : 0;
    r->nodes_at_last_run = n;
    if (r->growing_runs < GROWTH_WARN_RUNS || r->growth_warned)
        return;
    r->growth_warned = true;
    char ops[256] = "";
    for (int i = before; i < n && strlen(ops) < 160; i++) {
        const char *op = tide_node_op(tide_graph_node_at(r->graph, i));
        char item[80];
        snprintf(item, sizeof item, "%s%s", ops[0] ? ", " : "", op);
        if (!strstr(ops, op))
            strncat(ops, item, sizeof ops - strlen(ops) - 1);
    }
    fflush(stdout);
    fprintf(stderr, "warning: the graph grew before each of the last %d runs (it has %d nodes; the last step "
                    "added %d: %s): something in the loop builds nodes at every step. Build them once before "
                    "the loop and run the same nodes (op functions on host tensors, such as one_hot(labels, 10) "
                    "of a batch, add none).\n", GROWTH_WARN_RUNS, n, n - before, ops);
}


static bool to_fetch(lua_State *L, int idx, tide_output *out, tide_error *err)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        return tide_graph_output(repl_of(L)->graph, lua_tostring(L, idx), out, err) == TIDE_OK;
    int found = repl_handle_output(L, idx, out);
    if (found == 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot fetch a %s: give nodes (or \"name:index\" strings)",
                       luaL_typename(L, idx));
        return false;
    }
    if (found < 0) {
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "cannot fetch a node that no longer exists");
        return false;
    }
    return true;
}

typedef struct run_call {
    tide_output fetch[64];
    tide_node *target[64];
    int nfetch, ntarget;
    int slot_of[64];       /* fetch position i -> fetch[] index, or -(target index) - 1 */
    int nslots;
    tide_feed feeds[64];
    int nfeeds;
    tide_tensor *values[64];
} run_call;

static bool add_fetch(lua_State *L, int idx, run_call *c, tide_error *err)
{
    if (c->nslots >= 64)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "at most 64 fetches per run"), false;
    tide_output o;
    if (!to_fetch(L, idx, &o, err))
        return false;
    if (o.index < 0) {
        c->target[c->ntarget] = o.node;
        c->slot_of[c->nslots++] = -(c->ntarget++) - 1;
    } else {
        c->fetch[c->nfetch] = o;
        c->slot_of[c->nslots++] = c->nfetch++;
    }
    return true;
}

static bool read_feeds(lua_State *L, int idx, run_call *c, tide_error *err)
{
    if (lua_isnoneornil(L, idx))
        return true;
    if (lua_type(L, idx) != LUA_TTABLE)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "feeds must be a table {[node] = value}, not a %s",
                              luaL_typename(L, idx)), false;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        tide_output o;
        bool ok = c->nfeeds < 64 && to_fetch(L, -2, &o, err);
        if (c->nfeeds >= 64)
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "at most 64 feeds per run");
        if (ok && o.index < 0) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot feed node '%s': it has no outputs", tide_node_name(o.node));
            ok = false;
        }
        tide_tensor *t = NULL;
        if (ok) {
            t = repl_tensor_from_lua(L, -1, tide_node_output_dtype(o.node, o.index), err);
            if (!t) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s", tide_error_message(err));
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "feed for '%s': %s", tide_node_name(o.node), msg);
                ok = false;
            }
        }
        lua_pop(L, 1);
        if (!ok) {
            lua_pop(L, 1);
            return false;
        }
        c->feeds[c->nfeeds++] = (tide_feed){o, t};
    }
    return true;
}

static void release_call(run_call *c)
{
    for (int i = 0; i < c->nfeeds; i++)
        tide_tensor_release(c->feeds[i].value);
    for (int i = 0; i < c->nfetch; i++)
        tide_tensor_release(c->values[i]);
    c->nfeeds = c->nfetch = 0;
}

/* Keeps the executions of a traced run for :info (names copied: the graph may be reset later). */
void repl_forget_trace(repl *r)
{
    for (int i = 0; i < r->num_last_trace; i++) {
        free(r->last_trace[i].node);
        free(r->last_trace[i].frame);
        free(r->last_trace[i].fused);
    }
    free(r->last_trace);
    r->last_trace = NULL;
    r->num_last_trace = 0;
}

static void remember_trace(repl *r, const tide_step_stats *stats)
{
    repl_forget_trace(r);
    int n = tide_step_stats_count(stats);
    r->last_trace = calloc((size_t)(n ? n : 1), sizeof *r->last_trace);
    if (!r->last_trace)
        return; /* :info then shows no executions */
    for (int i = 0; i < n; i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        struct repl_execution *e = &r->last_trace[r->num_last_trace++];
        e->node = strdup(tide_node_name(t->node));
        e->frame = t->frame && t->frame[0] ? strdup(t->frame) : NULL;
        e->fused = t->fused ? strdup(t->fused) : NULL;
        e->iteration = t->iteration;
        e->ns = t->end_ns - t->start_ns;
    }
}

static int push_stats(lua_State *L, tide_step_stats *stats)
{
    remember_trace(repl_of(L), stats);
    int n = tide_step_stats_count(stats);
    int64_t origin = 0; /* the earliest start: times below are relative to it */
    for (int i = 0; i < n; i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        if (i == 0 || t->start_ns < origin)
            origin = t->start_ns;
    }
    lua_createtable(L, n, 1);
    lua_pushnumber(L, tide_step_stats_simulated_s(stats) * 1e3);
    lua_setfield(L, -2, "simulated_ms"); /* the step time placement predicted */
    for (int i = 0; i < n; i++) {
        const tide_node_timing *t = tide_step_stats_at(stats, i);
        lua_createtable(L, 0, 11);
        lua_pushnumber(L, (double)(t->start_ns - origin) / 1e3);
        lua_setfield(L, -2, "start_us");
        lua_pushnumber(L, (double)(t->end_ns - origin) / 1e3);
        lua_setfield(L, -2, "end_us");
        lua_pushstring(L, tide_node_name(t->node));
        lua_setfield(L, -2, "node");
        lua_pushstring(L, tide_node_op(t->node));
        lua_setfield(L, -2, "op");
        lua_pushstring(L, t->device ? t->device : "");
        lua_setfield(L, -2, "device");
        lua_pushinteger(L, t->thread);
        lua_setfield(L, -2, "thread");
        lua_pushnumber(L, (double)(t->end_ns - t->start_ns) / 1e3);
        lua_setfield(L, -2, "us");
        lua_pushinteger(L, (lua_Integer)t->output_bytes);
        lua_setfield(L, -2, "bytes");
        lua_pushstring(L, t->output_shapes);
        lua_setfield(L, -2, "shapes");
        if (t->fused) { /* a fused group (docs/fusion.md): its members, the root (node) last */
            lua_pushstring(L, t->fused);
            lua_setfield(L, -2, "fused");
        }
        if (t->stream) { /* queued on a device stream: its lane, "/sim:0 compute"; times are the device's */
            char device[128];
            tide_device_short_name(t->stream_device ? t->stream_device : t->device, device, sizeof device);
            lua_pushfstring(L, "%s %s", device, t->stream);
            lua_setfield(L, -2, "lane");
        }
        if (t->frame && t->frame[0]) { /* inside a loop: one entry per iteration */
            lua_pushstring(L, t->frame);
            lua_setfield(L, -2, "frame");
            lua_pushinteger(L, (lua_Integer)t->iteration);
            lua_setfield(L, -2, "iteration");
        }
        lua_rawseti(L, -2, i + 1);
    }
    tide_step_stats_free(stats);
    return 1;
}

/* run(fetches [, feeds [, opts]]) on session s. */
int repl_run(lua_State *L, tide_session *s, int base)
{
    repl *r = repl_of(L);
    int fidx = base, feed_idx = base + 1, opt_idx = base + 2;
    if (lua_isnoneornil(L, fidx))
        return repl_raise(L, "run needs something to run: a node, a list of nodes or a table of named nodes");
    if (r->debugger && r->debugger->step)
        return repl_raise(L, "run() at a debugger stop: the stopped step must end first (:continue, :step or :abort)");
    static const char *const options[] = {"trace", "timeout", NULL};
    tide_run_options ro = {0};
    if (lua_type(L, opt_idx) == LUA_TTABLE) {
        repl_check_options(L, opt_idx, "run", options);
        lua_getfield(L, opt_idx, "trace");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            return repl_raise(L, "run: option trace must be true or false, not a %s", luaL_typename(L, -1));
        ro.trace = lua_toboolean(L, -1);
        lua_getfield(L, opt_idx, "timeout");
        double seconds = lua_isnil(L, -1) ? 0 : lua_tonumber(L, -1);
        if (!lua_isnil(L, -1) && (!lua_isnumber(L, -1) || !(seconds >= 0) || seconds > 1e9))
            return repl_raise(L, "run: timeout must be a number of seconds from 0 (none) to 1e9");
        /* Whole milliseconds, rounded up: a positive timeout is never "none" (0). */
        ro.timeout_ms = (int64_t)ceil(seconds * 1000);
        lua_pop(L, 2);
    } else if (!lua_isnoneornil(L, opt_idx))
        return repl_raise(L, "run's third argument is an options table {trace=, timeout=}");
    run_call *c = calloc(1, sizeof *c);
    tide_error *err = tide_error_new();
    if (!c || !err) {
        free(c);
        tide_error_free(err);
        return repl_raise(L, "out of memory");
    }
    enum { ONE, LIST, MAP } form = ONE;
    bool ok = true;
    if (lua_type(L, fidx) == LUA_TTABLE) {
        form = repl_is_options_table(L, fidx) ? MAP : LIST;
        lua_pushnil(L);
        while (ok && lua_next(L, fidx)) {
            ok = add_fetch(L, lua_gettop(L), c, err);
            lua_pop(L, 1);
        }
        if (!ok)
            lua_pop(L, 1);
    } else
        ok = add_fetch(L, fidx, c, err);
    ok = ok && read_feeds(L, feed_idx, c, err);
    tide_step_stats *stats = NULL;
    if (ok)
        watch_growth(r);
    /* The mark first, then the check: a Ctrl-C after the check moves the session's cancel counter past
     * the mark and cancels the run, even before tide_session_run samples anything itself. */
    tide_session_cancel_mark(s, &ro);
    if (ok && r->interrupted) { /* a Ctrl-C just before the run: it must not start */
        tide_error_set(err, TIDE_CANCELLED, REPL_INTERRUPTED_MESSAGE);
        ok = false;
    }
    if (ok) {
        if (r->debugger) { /* what the debugger page shows; keep mode lets go of the last run's values */
            atomic_store(&r->debugger->running, true);
            repl_debugger_run_starts(r->debugger);
        }
        tide_status st = tide_session_run(s, &ro, c->feeds, c->nfeeds, c->fetch, c->nfetch, c->values, c->target,
                                          c->ntarget, ro.trace ? &stats : NULL, err);
        if (r->debugger)
            atomic_store(&r->debugger->running, false);
        ok = st == TIDE_OK && !r->interrupted; /* a run that ended as the Ctrl-C came still stops the entry */
        if (r->interrupted)
            tide_error_set(err, TIDE_CANCELLED, "%s: the run was %s; the graph and the variables' values are kept",
                           REPL_INTERRUPTED_MESSAGE, st == TIDE_OK ? "finished" : "cancelled");
    }
    if (!ok) {
        tide_step_stats_free(stats); /* a failed traced run still hands back the stats it has */
        release_call(c);
        free(c);
        lua_pushstring(L, tide_error_message(err));
        tide_error_free(err);
        return repl_raise(L, "%s", lua_tostring(L, -1));
    }
    tide_error_free(err);
    /* Results, in the form asked for; targets give nil (true in tables, so that lists keep no holes). */
    int slot = 0;
    if (form == ONE) {
        if (c->slot_of[0] < 0) { /* a target: nothing to return */
            release_call(c);
            free(c);
            return stats ? push_stats(L, stats) : 0;
        }
        repl_push_tensor(L, c->values[c->slot_of[0]]);
        c->values[c->slot_of[0]] = NULL;
    } else {
        lua_newtable(L);
        int out = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, fidx)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            int k = c->slot_of[slot++];
            if (k >= 0) {
                repl_push_tensor(L, c->values[k]);
                c->values[k] = NULL;
            } else
                lua_pushboolean(L, 1);
            lua_settable(L, out);
        }
    }
    release_call(c);
    free(c);
    if (stats)
        return 1 + push_stats(L, stats);
    return 1;
}

static int l_run(lua_State *L)
{
    return repl_run(L, repl_of(L)->session, 1);
}

/* ---------------------------------------------------------------- sessions */

static session_handle *check_session(lua_State *L, int idx)
{
    session_handle *h = luaL_checkudata(L, idx, SESSION_MT);
    if (!h->session || h->generation != repl_of(L)->graph_generation)
        repl_raise(L, "this session is closed");
    return h;
}

static int l_session(lua_State *L)
{
    repl *r = repl_of(L);
    int slot = 1;
    while (slot < REPL_MAX_SESSIONS && r->sessions[slot])
        slot++;
    if (slot == REPL_MAX_SESSIONS)
        return repl_raise(L, "too many sessions open (%d); close some with s:close()", REPL_MAX_SESSIONS - 1);
    session_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = (session_handle){NULL, slot, r->graph_generation};
    luaL_setmetatable(L, SESSION_MT);
    h->session = tide_session_new(r->engine, r->graph, NULL, r->err);
    if (!h->session)
        return repl_raise(L, "%s", tide_error_message(r->err));
    r->sessions[slot] = h->session;
    if (r->store)
        tide_store_log_session(r->store, h->session, r->engine, "repl session()", NULL);
    return 1;
}

static int session_close(lua_State *L)
{
    session_handle *h = luaL_checkudata(L, 1, SESSION_MT);
    repl *r = repl_of(L);
    if (h->session && h->generation == r->graph_generation) {
        r->sessions[h->slot] = NULL;
        tide_session_free(h->session);
    }
    h->session = NULL;
    return 0;
}

static int session_run(lua_State *L)
{
    return repl_run(L, check_session(L, 1)->session, 2);
}

static int session_tostring(lua_State *L)
{
    session_handle *h = luaL_checkudata(L, 1, SESSION_MT);
    if (!h->session || h->generation != repl_of(L)->graph_generation)
        lua_pushliteral(L, "session (closed)");
    else
        lua_pushfstring(L, "session (%d runs)", (int)tide_session_step(h->session));
    return 1;
}

/* fusion([on]): element-wise fusion of session s's later runs (docs/fusion.md); returns whether it is
 * on (after the change). */
static int fusion_setting(lua_State *L, tide_session *s, int idx)
{
    if (!lua_isnoneornil(L, idx)) {
        luaL_checktype(L, idx, LUA_TBOOLEAN);
        tide_session_set_fusion(s, lua_toboolean(L, idx));
    }
    lua_pushboolean(L, tide_session_fusion_enabled(s));
    return 1;
}

static int l_fusion(lua_State *L)
{
    return fusion_setting(L, repl_of(L)->session, 1);
}

static int session_fusion(lua_State *L)
{
    return fusion_setting(L, check_session(L, 1)->session, 2);
}

/* tide.clock(): monotonic wall-clock seconds. */
static int l_clock(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    return 1;
}

/* Closes the sessions made by session() (before :reset drops the graph they run). */
void repl_close_sessions(repl *r)
{
    for (int i = 1; i < REPL_MAX_SESSIONS; i++)
        if (r->sessions[i]) {
            tide_session *s = r->sessions[i];
            r->sessions[i] = NULL; /* first: the SIGINT handler reads the array */
            tide_session_free(s);
        }
}

void repl_open_run(lua_State *L)
{
    static const luaL_Reg session_methods[] = {
        {"run", session_run}, {"close", session_close}, {"fusion", session_fusion}, {NULL, NULL}};
    static const luaL_Reg functions[] = {
        {"run", l_run}, {"eval", l_run}, {"session", l_session}, {"clock", l_clock}, {"fusion", l_fusion},
        {NULL, NULL},
    };
    luaL_newmetatable(L, SESSION_MT);
    luaL_newlib(L, session_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, session_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, session_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    luaL_setfuncs(L, functions, 0);
}
