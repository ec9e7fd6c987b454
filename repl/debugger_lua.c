/* debugger_lua.c — the step debugger from Lua: the table `dbg` (docs/repl.md, docs/debugger.md).
 *
 *   dbg.break_at(SPEC) -> id        what :break takes ("h1", "op:Log", "if has_inf_or_nan --ignore x")
 *   dbg.on_bad([fn] [, {ignore={GLOB...}}]) -> id   has_inf_or_nan; fn(stop) runs at the stop
 *   dbg.breaks() -> {{id=, spec=, enabled=, hits=}...}, dbg.delete(id)
 *   at a stop: dbg.stopped() -> {node=, op=, after=, step=, reason=, frame=, iteration=} (nil when
 *   none), dbg.value(NODE [, k]) -> tensor, dbg.summary(NODE|tensor) -> {nan=, min=, ...},
 *   dbg.step([n]), dbg.continue(), dbg.abort()
 *   dbg.keep([on]) -> whether keep mode is on; dbg.dump(): what :keep and :dump do
 *
 * A stop's decision (step, continue, abort) takes effect when the entry (or on_bad's function)
 * returns. Lua runs only on the main thread: `:break if EXPR` conditions are evaluated here, at a
 * stop, with node, op, value and health in scope.
 */
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

#define ENV_KEY "tide.env" /* repl.c's proxy environment */

static repl_debugger *debugger_of(lua_State *L)
{
    repl *r = repl_of(L);
    if (!r->debugger)
        r->debugger = repl_debugger_new(r);
    if (!r->debugger)
        repl_raise(L, "out of memory");
    return r->debugger;
}

static repl_debugger *stopped_debugger(lua_State *L, const char *fn)
{
    repl_debugger *d = debugger_of(L);
    if (!d->step)
        repl_raise(L, "dbg.%s: no step is stopped (a breakpoint stops one: dbg.break_at)", fn);
    return d;
}

static void push_health(lua_State *L, const tide_tensor *t)
{
    tide_health h;
    if (!tide_tensor_health(t, &h)) {
        lua_pushnil(L);
        return;
    }
    lua_createtable(L, 0, 11);
    const struct { const char *k; int64_t v; } counts[] = {
        {"elements", h.elements}, {"nan", h.nan}, {"neg_inf", h.neg_inf}, {"pos_inf", h.pos_inf},
        {"negative", h.negative}, {"zero", h.zero}, {"positive", h.positive}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        lua_pushinteger(L, counts[i].v);
        lua_setfield(L, -2, counts[i].k);
    }
    const struct { const char *k; double v; } stats[] = {{"min", h.min}, {"max", h.max}, {"mean", h.mean}, {"std", h.std}};
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
        lua_pushnumber(L, stats[i].v);
        lua_setfield(L, -2, stats[i].k);
    }
}

/* The node name at idx (a string or a node handle) with ":k" appended when k is given. */
static const char *node_spec(lua_State *L, int idx, const char *fn)
{
    tide_output out;
    if (repl_handle_output(L, idx, &out) == 1) {
        lua_pushfstring(L, "%s:%d", tide_node_name(out.node), out.index < 0 ? 0 : out.index);
    } else if (lua_type(L, idx) == LUA_TSTRING) {
        lua_pushvalue(L, idx);
    } else {
        repl_raise(L, "dbg.%s: give a node or its name, not a %s", fn, luaL_typename(L, idx));
    }
    if (lua_isinteger(L, idx + 1))
        lua_pushfstring(L, "%s:%d", lua_tostring(L, -1), (int)lua_tointeger(L, idx + 1));
    return lua_tostring(L, -1);
}

static int l_value(lua_State *L)
{
    repl_debugger *d = stopped_debugger(L, "value");
    const char *spec = node_spec(L, 1, "value");
    char msg[512];
    tide_tensor *v = repl_dbg_value(d, spec, msg, sizeof msg);
    tide_tensor *copy = v ? tide_tensor_copy(v, NULL) : NULL; /* the step's own value stays as it is */
    tide_tensor_release(v);
    if (!copy)
        return repl_raise(L, "dbg.value: %s", v ? "out of memory" : msg);
    repl_push_tensor(L, copy);
    return 1;
}

static int l_summary(lua_State *L)
{
    tide_tensor *t = repl_to_tensor(L, 1);
    if (t) {
        push_health(L, t);
        return 1;
    }
    repl_debugger *d = stopped_debugger(L, "summary");
    const char *spec = node_spec(L, 1, "summary");
    char msg[512];
    tide_tensor *v = repl_dbg_value(d, spec, msg, sizeof msg);
    if (!v)
        return repl_raise(L, "dbg.summary: %s", msg);
    push_health(L, v);
    tide_tensor_release(v);
    return 1;
}

static int l_break_at(lua_State *L)
{
    const char *spec = luaL_checkstring(L, 1);
    char msg[512];
    int id = repl_debugger_add(debugger_of(L), spec, msg, sizeof msg);
    if (!id)
        return repl_raise(L, "dbg.break_at: %s", msg);
    lua_pushinteger(L, id);
    return 1;
}

/* dbg.on_bad([fn] [, {ignore = {GLOB...}}]) */
static int l_on_bad(lua_State *L)
{
    repl_debugger *d = debugger_of(L);
    int fn = lua_isfunction(L, 1) ? 1 : 0, opts = lua_istable(L, 1) ? 1 : lua_istable(L, 2) ? 2 : 0;
    if (!fn && !opts && !lua_isnoneornil(L, 1))
        return repl_raise(L, "dbg.on_bad: give a function, an options table {ignore={GLOB...}}, or both");
    static const char *const names[] = {"ignore", NULL};
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "if has_inf_or_nan");
    if (opts) {
        repl_check_options(L, opts, "dbg.on_bad", names);
        lua_getfield(L, opts, "ignore");
        int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
        for (int i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING)
                return repl_raise(L, "dbg.on_bad: ignore holds globs (strings), not a %s", luaL_typename(L, -1));
            luaL_addstring(&b, " --ignore ");
            luaL_addstring(&b, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    luaL_pushresult(&b);
    char msg[512];
    int id = repl_debugger_add(d, lua_tostring(L, -1), msg, sizeof msg);
    if (!id)
        return repl_raise(L, "dbg.on_bad: %s", msg);
    luaL_unref(L, LUA_REGISTRYINDEX, d->lua_on_bad);
    d->lua_on_bad = LUA_NOREF;
    if (fn) {
        lua_pushvalue(L, fn);
        d->lua_on_bad = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_pushinteger(L, id);
    return 1;
}

static int l_breaks(lua_State *L)
{
    repl_debugger *d = debugger_of(L);
    lua_createtable(L, d->num_bps, 0);
    pthread_rwlock_rdlock(&d->lock); /* no Lua error can come while it is held (only stack growth: none) */
    for (int i = 0; i < d->num_bps; i++) {
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, d->bps[i]->id);
        lua_setfield(L, -2, "id");
        lua_pushstring(L, d->bps[i]->spec);
        lua_setfield(L, -2, "spec");
        lua_pushboolean(L, d->bps[i]->enabled);
        lua_setfield(L, -2, "enabled");
        lua_pushinteger(L, (lua_Integer)atomic_load(&d->bps[i]->hits));
        lua_setfield(L, -2, "hits");
        lua_rawseti(L, -2, i + 1);
    }
    pthread_rwlock_unlock(&d->lock);
    return 1;
}

static int l_delete(lua_State *L)
{
    lua_Integer id = luaL_checkinteger(L, 1);
    if (id <= 0 || id > 1000000 || !repl_debugger_delete(debugger_of(L), (int)id))
        return repl_raise(L, "dbg.delete: no breakpoint %lld (dbg.breaks() lists them)", (long long)id);
    return 0;
}

static int l_stopped(lua_State *L)
{
    repl_debugger *d = debugger_of(L);
    if (!d->step) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 7);
    lua_pushstring(L, tide_node_name(d->ev->node));
    lua_setfield(L, -2, "node");
    lua_pushstring(L, tide_node_op(d->ev->node));
    lua_setfield(L, -2, "op");
    lua_pushboolean(L, d->ev->after);
    lua_setfield(L, -2, "after");
    lua_pushinteger(L, d->run_step);
    lua_setfield(L, -2, "step");
    lua_pushstring(L, d->reason);
    lua_setfield(L, -2, "reason");
    lua_pushstring(L, d->ev->at.frame ? d->ev->at.frame : "");
    lua_setfield(L, -2, "frame");
    lua_pushinteger(L, d->ev->at.iteration);
    lua_setfield(L, -2, "iteration");
    char of[256];
    bool grad = repl_is_gradient_node(tide_node_name(d->ev->node), of, sizeof of);
    lua_pushstring(L, grad ? "gradient" : "forward");
    lua_setfield(L, -2, "kind");
    if (d->message) {
        lua_pushstring(L, d->message);
        lua_setfield(L, -2, "message");
    }
    return 1;
}

static int l_step(lua_State *L)
{
    lua_Integer n = luaL_optinteger(L, 1, 1);
    if (n < 1 || n > 1000000000)
        return repl_raise(L, "dbg.step: n is 1 or more");
    repl_debugger_resume(stopped_debugger(L, "step"), TIDE_DEBUG_STEP, (int)n);
    return 0;
}

static int l_continue(lua_State *L)
{
    repl_debugger_resume(stopped_debugger(L, "continue"), TIDE_DEBUG_RESUME, 0);
    return 0;
}

static int l_abort(lua_State *L)
{
    repl_debugger_resume(stopped_debugger(L, "abort"), TIDE_DEBUG_ABORT_RUN, 0);
    return 0;
}

/* dbg.keep([on]) -> whether keep mode is on (after the change, if one was asked). */
static int l_keep(lua_State *L)
{
    repl_debugger *d = debugger_of(L);
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TBOOLEAN);
        char msg[512];
        if (!repl_debugger_set_keep(d, lua_toboolean(L, 1), msg, sizeof msg))
            return repl_raise(L, "dbg.keep: %s", msg);
    }
    lua_pushboolean(L, d->keep);
    return 1;
}

/* dbg.dump(): what :dump does; raises when there is nothing to dump. */
static int l_dump(lua_State *L)
{
    char msg[512];
    if (!repl_dbg_dump(debugger_of(L), msg, sizeof msg))
        return repl_raise(L, "dbg.dump: %s", msg);
    return 0;
}

void repl_open_debugger(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"break_at", l_break_at}, {"on_bad", l_on_bad}, {"breaks", l_breaks}, {"delete", l_delete},
        {"stopped", l_stopped}, {"value", l_value}, {"summary", l_summary}, {"step", l_step},
        {"continue", l_continue}, {"abort", l_abort}, {"keep", l_keep}, {"dump", l_dump}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setglobal(L, "dbg");
}

/* ---------------------------------------------------------------- Lua at a stop */

/* Runs the function at the top (no arguments, one result) under pcall; false with the message printed. */
static bool call_protected(lua_State *L, const char *what)
{
    if (lua_pcall(L, 0, 1, 0) == LUA_OK)
        return true;
    fprintf(stderr, "%s: %s\n", what, lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)");
    lua_pop(L, 1);
    return false;
}

/* Compiles "return (expr)" with env = the table at env_idx (0: the REPL's); pushes the function. */
static bool compile_expr(lua_State *L, const char *expr, int env_idx, char *msg, size_t size)
{
    lua_pushfstring(L, "return (%s)", expr);
    int st = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=debugger");
    lua_remove(L, -2);
    if (st != LUA_OK) {
        snprintf(msg, size, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return false;
    }
    if (env_idx)
        lua_pushvalue(L, env_idx);
    else
        lua_getfield(L, LUA_REGISTRYINDEX, ENV_KEY);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return true;
}

tide_tensor *repl_dbg_lua_tensor(repl *r, const char *expr, tide_dtype dt, char *msg, size_t size)
{
    lua_State *L = r->L;
    int top = lua_gettop(L);
    tide_tensor *t = NULL;
    if (compile_expr(L, expr, 0, msg, size)) {
        if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
            snprintf(msg, size, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)");
        } else {
            tide_error *err = tide_error_new();
            t = repl_tensor_from_lua(L, -1, dt, err);
            if (!t)
                snprintf(msg, size, "%s", tide_error_message(err));
            tide_error_free(err);
        }
    }
    lua_settop(L, top);
    return t;
}

int repl_dbg_eval_condition(repl_debugger *d, int id, const char *expr)
{
    lua_State *L = d->r->L;
    int top = lua_gettop(L);
    lua_createtable(L, 0, 4); /* the condition's environment: node, op, value, health; then the REPL's */
    int env = lua_gettop(L);
    lua_pushstring(L, tide_node_name(d->ev->node));
    lua_setfield(L, env, "node");
    lua_pushstring(L, tide_node_op(d->ev->node));
    lua_setfield(L, env, "op");
    if (d->ev->num_outputs > 0 && d->ev->outputs[0]) {
        push_health(L, d->ev->outputs[0]);
        lua_setfield(L, env, "health");
        tide_tensor *copy = tide_tensor_copy(d->ev->outputs[0], NULL);
        if (copy) {
            repl_push_tensor(L, copy);
            lua_setfield(L, env, "value");
        }
    }
    lua_createtable(L, 0, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, ENV_KEY);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, env);
    char msg[512], what[64];
    int result = -1;
    snprintf(what, sizeof what, "breakpoint %d's condition", id);
    if (!compile_expr(L, expr ? expr : "false", env, msg, sizeof msg))
        fprintf(stderr, "%s: %s\n", what, msg);
    else if (call_protected(L, what))
        result = lua_toboolean(L, -1);
    lua_settop(L, top);
    return result;
}

bool repl_dbg_call_on_bad(repl_debugger *d)
{
    if (d->lua_on_bad == LUA_NOREF)
        return false;
    lua_State *L = d->r->L;
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, d->lua_on_bad);
    l_stopped(L);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK)
        fprintf(stderr, "dbg.on_bad's function: %s\n", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)");
    lua_settop(L, top);
    return d->decided;
}
