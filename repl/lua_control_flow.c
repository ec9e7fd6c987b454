/* lua_control_flow.c — cond and while_loop at the prompt (docs/control-flow.md):
 *
 *   y = cond(x > 0, function() return x * 2 end, function() return -x end)
 *   i, acc = while_loop(function(i, acc) return i < 10 end,
 *                       function(i, acc) return i + 1, acc + i end, {0, 0})
 *
 * The Lua functions build the branches, the condition and the body with the usual node functions;
 * tide_cond and tide_while_loop (engine/tide_control_flow.h) call them back. A Lua error must never
 * unwind through those C calls (they hold the graph's context on their stack), so each call into Lua,
 * and the conversion of what it returns, runs under lua_pcall and comes back as an engine error. */
#include <stdlib.h>
#include <string.h>

#include "lua_control_flow.h"
#include "repl.h"

/* What one callback asks of Lua: call the function at fn_idx with `in` as node handles, and turn its
 * results (nodes, or numbers and tables made constants of the matching dtype) into outputs. */
typedef struct lua_call {
    int fn_idx;
    const tide_output *in;
    int num_in;
    tide_output *out;
    int max_out, num_out;
    const tide_dtype *dtypes; /* the dtype each result must have (loops), or NULL */
    const char *what;         /* "the condition", "the body", "the true branch" */
} lua_call;

/* A result as an output: a node handle, else a value made a Const (of dt when known). */
static tide_output to_output(lua_State *L, int idx, tide_dtype dt, const char *what, int i)
{
    if (repl_is_node(L, idx))
        return repl_check_output(L, idx);
    repl *r = repl_of(L);
    tide_tensor *t = repl_tensor_from_lua(L, idx, dt, repl_scratch_error(L));
    if (!t)
        repl_raise(L, "%s: result %d is a %s, not a node or a value (%s)", what, i + 1, luaL_typename(L, idx),
                   tide_error_message(r->err));
    tide_node_builder *b = tide_node_builder_new(r->graph, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(t));
    tide_tensor_release(t);
    tide_node *n = tide_node_builder_finish(b, repl_scratch_error(L));
    if (!n)
        repl_raise(L, "%s: %s", what, tide_error_message(r->err));
    return (tide_output){n, 0};
}

/* Runs under lua_pcall with the Lua function and the call's description (a light userdata). */
static int protected_call(lua_State *L)
{
    lua_call *c = lua_touserdata(L, 2);
    repl_check_interrupt(L); /* a Ctrl-C while a long loop is being built */
    int base = lua_gettop(L);
    lua_pushvalue(L, 1);
    for (int i = 0; i < c->num_in; i++)
        repl_push_output(L, c->in[i], true);
    lua_call(L, c->num_in, LUA_MULTRET);
    int n = lua_gettop(L) - base;
    int first = base + 1;
    bool listed = false; /* a table whose first element is a node: a table of results (else a value) */
    if (n == 1 && lua_type(L, first) == LUA_TTABLE && !repl_is_node(L, first) && lua_rawlen(L, first) > 0) {
        lua_rawgeti(L, first, 1);
        listed = repl_is_node(L, -1) || (c->max_out > 1 && (int)lua_rawlen(L, first) == c->max_out);
        lua_pop(L, 1);
    }
    if (listed) { /* unpack it */
        int len = (int)lua_rawlen(L, first);
        luaL_checkstack(L, len, "too many results");
        for (int i = 1; i <= len; i++)
            lua_rawgeti(L, first, i);
        lua_remove(L, first);
        n = len;
    }
    if (n > c->max_out)
        return repl_raise(L, "%s returned %d values, expected %d", c->what, n, c->max_out);
    if (c->dtypes && n != c->max_out)
        return repl_raise(L, "%s returned %d values, expected %d (one per loop variable)", c->what, n, c->max_out);
    for (int i = 0; i < n; i++)
        c->out[i] = to_output(L, first + i, c->dtypes ? c->dtypes[i] : TIDE_INVALID_DTYPE, c->what, i);
    c->num_out = n;
    lua_settop(L, base);
    return 0;
}

static tide_status call_lua(lua_State *L, lua_call *c, tide_error *err)
{
    lua_pushcfunction(L, protected_call);
    lua_pushvalue(L, c->fn_idx); /* an index of the calling Lua function's frame (cond, while_loop) */
    lua_pushlightuserdata(L, c);
    if (lua_pcall(L, 2, 0, 0) == LUA_OK)
        return TIDE_OK;
    const char *msg = lua_tostring(L, -1);
    tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s", msg ? msg : "error in a Lua function");
    lua_pop(L, 1);
    return TIDE_INVALID_ARGUMENT;
}

/* ---------------------------------------------------------------- cond */

typedef struct cond_args {
    lua_State *L;
    int true_idx, false_idx;
} cond_args;

static tide_status branch(tide_graph *g, void *user, int fn_idx, const char *what, tide_output *outs, int max,
                          int *n, tide_error *err)
{
    (void)g;
    cond_args *a = user;
    lua_call c = {.fn_idx = fn_idx, .out = outs, .max_out = max, .what = what};
    tide_status st = call_lua(a->L, &c, err);
    *n = c.num_out;
    return st;
}

static tide_status true_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    return branch(g, user, ((cond_args *)user)->true_idx, "the true branch", outs, max, n, err);
}

static tide_status false_branch(tide_graph *g, void *user, tide_output *outs, int max, int *n, tide_error *err)
{
    return branch(g, user, ((cond_args *)user)->false_idx, "the false branch", outs, max, n, err);
}

#define MAX_RESULTS 64

static int l_cond(lua_State *L)
{
    repl *r = repl_of(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    if (lua_gettop(L) > 3)
        return repl_raise(L, "cond(pred, true_fn, false_fn) takes 3 arguments, not %d", lua_gettop(L));
    tide_output pred = to_output(L, 1, TIDE_BOOL, "cond's condition", 0);
    cond_args a = {L, 2, 3};
    tide_output res[MAX_RESULTS];
    int n = 0;
    tide_error *err = tide_error_new();
    int before = tide_graph_num_nodes(r->graph);
    tide_status st = tide_cond(r->graph, pred, true_branch, false_branch, &a, res, MAX_RESULTS, &n, err);
    if (st != TIDE_OK) {
        repl_kill_handles(L, before); /* tide_cond removed what the branches built */
        lua_pushstring(L, tide_error_message(err));
        tide_error_free(err);
        return repl_raise(L, "cond: %s", lua_tostring(L, -1));
    }
    tide_error_free(err);
    for (int i = 0; i < n; i++)
        repl_push_output(L, res[i], true);
    return n;
}

/* ---------------------------------------------------------------- while_loop */

typedef struct loop_args {
    lua_State *L;
    int cond_idx, body_idx;
    const tide_dtype *dtypes;
} loop_args;

static tide_status loop_cond(tide_graph *g, void *user, const tide_output *vars, int n, tide_output *pred,
                             tide_error *err)
{
    (void)g;
    loop_args *a = user;
    static const tide_dtype bool_dtype = TIDE_BOOL;
    lua_call c = {.fn_idx = a->cond_idx, .in = vars, .num_in = n, .out = pred, .max_out = 1, .dtypes = &bool_dtype,
                  .what = "the condition"};
    return call_lua(a->L, &c, err);
}

static tide_status loop_body(tide_graph *g, void *user, const tide_output *vars, int n, tide_output *next,
                             tide_error *err)
{
    (void)g;
    loop_args *a = user;
    lua_call c = {.fn_idx = a->body_idx, .in = vars, .num_in = n, .out = next, .max_out = n, .dtypes = a->dtypes,
                  .what = "the body"};
    return call_lua(a->L, &c, err);
}

/* The options table at idx into o (shapes into inv, one per variable); unknown keys are errors. */
static void check_options(lua_State *L, int idx, int n, tide_while_options *o, tide_shape *inv)
{
    static const char *const known[] = {"parallel_iterations", "maximum_iterations", "shape_invariants", "name", NULL};
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        int k = 0;
        while (key && known[k] && strcmp(known[k], key) != 0)
            k++;
        if (!key || !known[k])
            repl_raise(L, "while_loop: unknown option '%s' (options: parallel_iterations, maximum_iterations, "
                          "shape_invariants, name)", key ? key : luaL_typename(L, -2));
        if (k == 0 || k == 1) {
            if (!lua_isinteger(L, -1))
                repl_raise(L, "while_loop: %s must be an integer, not a %s", key, luaL_typename(L, -1));
            lua_Integer v = lua_tointeger(L, -1);
            if (k == 0 && (v < 1 || v > 1 << 20))
                repl_raise(L, "while_loop: parallel_iterations must be between 1 and %d, not %lld", 1 << 20, (long long)v);
            if (k == 0)
                o->parallel_iterations = (int)v;
            else
                o->maximum_iterations = v;
        } else if (k == 2) {
            if (lua_type(L, -1) != LUA_TTABLE || (int)lua_rawlen(L, -1) != n)
                repl_raise(L, "while_loop: shape_invariants must be a table of %d shapes (one per loop variable; "
                              "{nil} or {-1} for a vector whose length changes)", n);
            for (int i = 0; i < n; i++) {
                lua_rawgeti(L, -1, i + 1);
                if (!repl_to_shape(L, lua_gettop(L), &inv[i], repl_scratch_error(L)))
                    repl_raise(L, "while_loop: shape_invariants[%d]: %s", i + 1, tide_error_message(repl_of(L)->err));
                lua_pop(L, 1);
            }
            o->shape_invariants = inv;
        } else {
            o->name = luaL_checkstring(L, -1);
        }
        lua_pop(L, 1);
    }
}

static int l_while_loop(lua_State *L)
{
    repl *r = repl_of(L);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    bool single = lua_type(L, 3) != LUA_TTABLE || repl_is_node(L, 3);
    int n = single ? 1 : (int)lua_rawlen(L, 3);
    if (n < 1 || n > MAX_RESULTS)
        return repl_raise(L, "while_loop(cond_fn, body_fn, loop_vars [, options]): loop_vars must be a value or a "
                             "table of 1 to %d values", MAX_RESULTS);
    tide_output vars[MAX_RESULTS];
    tide_dtype dtypes[MAX_RESULTS];
    tide_shape inv[MAX_RESULTS];
    for (int i = 0; i < n; i++) {
        if (!single)
            lua_rawgeti(L, 3, i + 1);
        vars[i] = to_output(L, single ? 3 : lua_gettop(L), TIDE_INVALID_DTYPE, "while_loop's loop_vars", i);
        if (!single)
            lua_pop(L, 1);
        dtypes[i] = tide_node_output_dtype(vars[i].node, vars[i].index);
    }
    tide_while_options o;
    tide_while_options_init(&o);
    if (!lua_isnoneornil(L, 4))
        check_options(L, 4, n, &o, inv);
    loop_args a = {L, 1, 2, dtypes};
    tide_output res[MAX_RESULTS];
    tide_error *err = tide_error_new();
    int before = tide_graph_num_nodes(r->graph);
    tide_status st = tide_while_loop(r->graph, loop_cond, loop_body, &a, vars, n, &o, res, err);
    if (st != TIDE_OK) {
        repl_kill_handles(L, before); /* tide_while_loop removed what the condition and body built */
        lua_pushstring(L, tide_error_message(err));
        tide_error_free(err);
        return repl_raise(L, "%s", lua_tostring(L, -1));
    }
    tide_error_free(err);
    for (int i = 0; i < n; i++)
        repl_push_output(L, res[i], true);
    return n;
}

void repl_open_control_flow(lua_State *L)
{
    static const luaL_Reg fns[] = {{"cond", l_cond}, {"while_loop", l_while_loop}, {NULL, NULL}};
    static const char *const help[][2] = {
        {"cond", "cond(pred, true_fn, false_fn)\n\nA conditional in the graph (tf.cond): the values true_fn returns "
                 "when pred (a bool scalar node) is true when the graph runs, else false_fn's. Both build nodes and "
                 "return the same number of values of the same dtypes; only the branch taken runs. Values from "
                 "outside read in a branch are switched into it. y = cond(x > 0, function() return x * 2 end, "
                 "function() return -x end)"},
        {"while_loop", "while_loop(cond_fn, body_fn, loop_vars [, {parallel_iterations=10, maximum_iterations=, "
                       "shape_invariants={...}, name=}])\n\nA loop in the graph (tf.while_loop): while cond_fn(vars) "
                       "is true, vars = body_fn(vars); returns the final values. loop_vars is a value or a table of "
                       "values; cond_fn and body_fn take them as arguments, body_fn returns one new value per "
                       "variable (or a table), of the same dtype and shape unless shape_invariants allows otherwise "
                       "({-1} for a vector that grows). Values from outside enter the loop once; gradients flow through the loop (docs/control-flow.md). i, s = while_loop(function(i, s) return i < 10 end, function(i, s) return i + 1, "
                       "s + i end, {0, 0})"},
    };
    repl_register(L, fns, help, sizeof help / sizeof help[0]);
}
