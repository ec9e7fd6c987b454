/* lua_train.c — training in Lua: gradients(ys, xs), variable(initial_value), init(), global_step(),
 * and the optimizers (sgd, momentum, adagrad, rmsprop, adam) whose :minimize(loss) adds the gradient
 * and update ops. Thin bindings over engine/train (tide.h); the ops they add are ordinary graph nodes
 * that :nodes, :graph and the run log show.
 */
#include <stdlib.h>
#include <string.h>

#include "repl.h"

#define OPTIMIZER_MT "tide.optimizer"

/* Raises the message of r->err. */
static int raise_err(lua_State *L)
{
    return repl_raise(L, "%s", tide_error_message(repl_of(L)->err));
}

/* Reads one node or a list of nodes at idx into out (up to max); returns the count; *single says
 * whether a lone node was given. */
static int read_outputs(lua_State *L, int idx, tide_output *out, int max, bool *single, const char *what)
{
    if (repl_is_node(L, idx)) {
        *single = true;
        out[0] = repl_check_output(L, idx);
        return 1;
    }
    *single = false;
    if (lua_type(L, idx) != LUA_TTABLE)
        return repl_raise(L, "gradients: %s must be a node or a list of nodes, not a %s", what, luaL_typename(L, idx));
    int n = (int)lua_rawlen(L, idx);
    if (n > max)
        return repl_raise(L, "gradients: at most %d %s", max, what);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        out[i] = repl_check_output(L, -1);
        lua_pop(L, 1);
        if (out[i].index < 0)
            return repl_raise(L, "gradients: %s[%d] has no outputs", what, i + 1);
    }
    return n;
}

/* gradients(ys, xs [, grad_ys]) -> one node (or nil) for a single x, else a list. */
static int l_gradients(lua_State *L)
{
    repl *r = repl_of(L);
    tide_output ys[64], xs[64], gys[64], dxs[64];
    bool y1, x1, g1;
    int ny = read_outputs(L, 1, ys, 64, &y1, "ys");
    int nx = read_outputs(L, 2, xs, 64, &x1, "xs");
    int ng = lua_isnoneornil(L, 3) ? 0 : read_outputs(L, 3, gys, 64, &g1, "grad_ys");
    if (ng && ng != ny)
        return repl_raise(L, "gradients: %d grad_ys for %d ys", ng, ny);
    if (tide_gradients(r->graph, ys, ny, xs, nx, ng ? gys : NULL, dxs, r->err) != TIDE_OK)
        return raise_err(L);
    if (x1) {
        if (dxs[0].node)
            repl_push_output(L, dxs[0], false);
        else
            lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, nx, 0);
    for (int i = 0; i < nx; i++)
        if (dxs[i].node) {
            repl_push_output(L, dxs[i], false);
            lua_rawseti(L, -2, i + 1);
        }
    return 1;
}

/* variable(initial_value [, {name=, trainable=true, dtype=}]) */
static int l_variable(lua_State *L)
{
    repl *r = repl_of(L);
    if (lua_isnoneornil(L, 1))
        return repl_raise(L, "variable(initial_value [, {name=..., trainable=true}]): the initial value is missing");
    static const char *const options[] = {"name", "trainable", "dtype", NULL};
    const char *name = NULL;
    bool trainable = true;
    tide_dtype dt = TIDE_INVALID_DTYPE;
    if (lua_type(L, 2) == LUA_TTABLE) {
        repl_check_options(L, 2, "variable", options);
        lua_getfield(L, 2, "name");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
            return repl_raise(L, "variable: option name must be a string, not a %s", luaL_typename(L, -1));
        name = lua_tostring(L, -1);
        lua_getfield(L, 2, "trainable");
        if (!lua_isnil(L, -1))
            trainable = lua_toboolean(L, -1);
        lua_getfield(L, 2, "dtype");
        if (!lua_isnil(L, -1) && (dt = repl_to_dtype(L, -1)) == TIDE_INVALID_DTYPE)
            return repl_raise(L, "variable: bad dtype");
        lua_pop(L, 3);
    } else if (!lua_isnoneornil(L, 2))
        return repl_raise(L, "variable's second argument is an options table {name=, trainable=, dtype=}");
    tide_output init;
    if (repl_is_node(L, 1)) {
        init = repl_check_output(L, 1);
    } else {
        lua_getglobal(L, "tide");
        lua_getfield(L, -1, "constant");
        lua_pushvalue(L, 1);
        if (dt != TIDE_INVALID_DTYPE)
            repl_push_dtype(L, dt);
        else
            lua_pushnil(L);
        lua_call(L, 2, 1);
        init = repl_check_output(L, -1);
    }
    char *unique = name ? NULL : tide_graph_unique_name(r->graph, "variable");
    /* tide_variable_new applies the scope itself: pass the unique name without it. */
    const char *base = unique ? strrchr(unique, '/') : NULL;
    tide_node *v = tide_variable_new(r->graph, name ? name : base ? base + 1 : unique, init, trainable, r->err);
    free(unique);
    if (!v)
        return raise_err(L);
    repl_push_output(L, (tide_output){v, 0}, name == NULL);
    return 1;
}

static int l_init(lua_State *L)
{
    repl *r = repl_of(L);
    tide_node *n = tide_global_variables_initializer(r->graph, r->err);
    if (!n)
        return raise_err(L);
    repl_push_output(L, (tide_output){n, -1}, false);
    return 1;
}

static int l_global_step(lua_State *L)
{
    repl *r = repl_of(L);
    tide_node *n = tide_global_step(r->graph, r->err);
    if (!n)
        return raise_err(L);
    repl_push_output(L, (tide_output){n, 0}, false);
    return 1;
}

/* ---------------------------------------------------------------- optimizers */

static double opt_number(lua_State *L, int idx, const char *key, double dflt)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        return dflt;
    lua_getfield(L, idx, key);
    double v = lua_isnil(L, -1) ? dflt : lua_tonumber(L, -1);
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TNUMBER)
        repl_raise(L, "optimizer option '%s' must be a number, not a %s", key, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

/* The options each optimizer knows (indexed by tide_optimizer_kind). */
static const char *const optimizer_options[][4] = {
    [TIDE_OPT_SGD] = {NULL},
    [TIDE_OPT_MOMENTUM] = {"momentum", "nesterov", NULL},
    [TIDE_OPT_ADAGRAD] = {"initial_accumulator", NULL},
    [TIDE_OPT_RMSPROP] = {"decay", "momentum", "epsilon", NULL},
    [TIDE_OPT_ADAM] = {"beta1", "beta2", "epsilon", NULL},
};

/* name(learning_rate [, opts]) for each optimizer kind. */
static int new_optimizer(lua_State *L, tide_optimizer_kind kind, const char *fname)
{
    if (lua_type(L, 1) != LUA_TNUMBER || !(lua_tonumber(L, 1) > 0))
        return repl_raise(L, "%s(learning_rate [, {options}]): the learning rate must be a positive number", fname);
    int opts = 2;
    if (kind == TIDE_OPT_MOMENTUM && lua_type(L, 2) == LUA_TNUMBER)
        opts = 3; /* momentum(lr, 0.9 [, opts]) */
    repl_check_options(L, opts, fname, optimizer_options[kind]);
    tide_optimizer *o = lua_newuserdatauv(L, sizeof *o, 0);
    tide_optimizer_init(o, kind, lua_tonumber(L, 1));
    if (opts == 3)
        o->momentum = lua_tonumber(L, 2);
    o->momentum = opt_number(L, opts, "momentum", o->momentum);
    o->beta1 = opt_number(L, opts, "beta1", o->beta1);
    o->beta2 = opt_number(L, opts, "beta2", o->beta2);
    o->epsilon = opt_number(L, opts, "epsilon", o->epsilon);
    o->decay = opt_number(L, opts, "decay", o->decay);
    o->initial_accumulator = opt_number(L, opts, "initial_accumulator", o->initial_accumulator);
    if (lua_type(L, opts) == LUA_TTABLE) {
        lua_getfield(L, opts, "nesterov");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            return repl_raise(L, "%s: option nesterov must be true or false, not a %s", fname, luaL_typename(L, -1));
        o->nesterov = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    luaL_setmetatable(L, OPTIMIZER_MT);
    return 1;
}

static int l_sgd(lua_State *L) { return new_optimizer(L, TIDE_OPT_SGD, "sgd"); }
static int l_momentum(lua_State *L) { return new_optimizer(L, TIDE_OPT_MOMENTUM, "momentum"); }
static int l_adagrad(lua_State *L) { return new_optimizer(L, TIDE_OPT_ADAGRAD, "adagrad"); }
static int l_rmsprop(lua_State *L) { return new_optimizer(L, TIDE_OPT_RMSPROP, "rmsprop"); }
static int l_adam(lua_State *L) { return new_optimizer(L, TIDE_OPT_ADAM, "adam"); }

/* opt:minimize(loss [, {var_list={...}, global_step=true|node}]) -> the training step (a NoOp) */
static int optimizer_minimize(lua_State *L)
{
    repl *r = repl_of(L);
    tide_optimizer *o = luaL_checkudata(L, 1, OPTIMIZER_MT);
    tide_output loss = repl_check_output(L, 2);
    static const char *const options[] = {"var_list", "global_step", NULL};
    tide_node *vars[256], *gstep = NULL;
    int nvars = 0;
    bool have_list = false;
    if (lua_type(L, 3) == LUA_TTABLE) {
        repl_check_options(L, 3, "minimize", options);
        lua_getfield(L, 3, "var_list");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TTABLE)
            return repl_raise(L, "minimize: option var_list must be a list of variables, not a %s",
                              luaL_typename(L, -1));
        if (lua_type(L, -1) == LUA_TTABLE) {
            have_list = true;
            nvars = (int)lua_rawlen(L, -1);
            if (nvars > 256)
                return repl_raise(L, "minimize: at most 256 variables in var_list");
            for (int i = 0; i < nvars; i++) {
                lua_rawgeti(L, -1, i + 1);
                vars[i] = repl_check_output(L, -1).node;
                lua_pop(L, 1);
            }
        }
        lua_getfield(L, 3, "global_step");
        if (repl_is_node(L, -1))
            gstep = repl_check_output(L, -1).node;
        else if (lua_toboolean(L, -1) && !(gstep = tide_global_step(r->graph, r->err)))
            return raise_err(L);
        lua_pop(L, 2);
    } else if (!lua_isnoneornil(L, 3))
        return repl_raise(L, "minimize(loss [, {var_list=, global_step=}]): options must be a table");
    tide_node *step = tide_optimizer_minimize(r->graph, o, loss, have_list ? vars : NULL, nvars, gstep, r->err);
    if (!step)
        return raise_err(L);
    repl_push_output(L, (tide_output){step, -1}, false);
    return 1;
}

static int optimizer_tostring(lua_State *L)
{
    static const char *const kinds[] = {"sgd", "momentum", "adagrad", "rmsprop", "adam"};
    tide_optimizer *o = luaL_checkudata(L, 1, OPTIMIZER_MT);
    lua_pushfstring(L, "optimizer %s (learning rate %f)", kinds[o->kind], o->learning_rate);
    return 1;
}

static const luaL_Reg functions[] = {
    {"gradients", l_gradients}, {"variable", l_variable}, {"init", l_init}, {"global_step", l_global_step},
    {"sgd", l_sgd},             {"momentum", l_momentum}, {"adagrad", l_adagrad}, {"rmsprop", l_rmsprop},
    {"adam", l_adam},           {NULL, NULL},
};

void repl_open_train(lua_State *L)
{
    luaL_newmetatable(L, OPTIMIZER_MT);
    lua_newtable(L);
    lua_pushcfunction(L, optimizer_minimize);
    lua_setfield(L, -2, "minimize");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, optimizer_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    luaL_setfuncs(L, functions, 0);
}
