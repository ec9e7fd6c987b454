/* lua_options.c — the options tables of the REPL's Lua functions (run's {trace=, timeout=},
 * variable's {name=, trainable=}, the optimizers', load_csv's...): every key must be one the function
 * knows. A misspelt or unsupported option is an error naming the function and its options, never a
 * silent default. The C functions call repl_check_options; the prelude's Lua functions call the same
 * check through tide.check_options. */
#include <string.h>

#include "repl.h"

bool repl_is_options_table(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        return false;
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool str = lua_type(L, -2) == LUA_TSTRING;
        lua_pop(L, 1);
        if (str) {
            lua_pop(L, 1);
            return true;
        }
    }
    return false;
}

/* "a, b, c" into buf. */
static const char *list_names(const char *const *names, char *buf, size_t size)
{
    buf[0] = 0;
    for (int i = 0; names[i]; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", names[i]);
    return buf;
}

bool repl_check_options(lua_State *L, int idx, const char *fn, const char *const *names)
{
    char list[256];
    if (lua_isnoneornil(L, idx))
        return false;
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx) && !names[0])
        repl_raise(L, "%s takes no options, got a %s", fn, luaL_typename(L, idx));
    if (!lua_istable(L, idx))
        repl_raise(L, "%s: options must be a table such as {%s = ...}, got a %s", fn, names[0],
                   luaL_typename(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool known = false;
        for (int i = 0; names[i] && lua_type(L, -2) == LUA_TSTRING; i++)
            known = known || strcmp(lua_tostring(L, -2), names[i]) == 0;
        if (!known) {
            if (!names[0])
                repl_raise(L, "%s takes no options, got '%s'", fn, luaL_tolstring(L, -2, NULL));
            if (lua_type(L, -2) == LUA_TSTRING)
                repl_raise(L, "%s: unknown option '%s' (options: %s)", fn, lua_tostring(L, -2),
                           list_names(names, list, sizeof list));
            repl_raise(L, "%s: options are named fields (%s), got a %s key", fn,
                       list_names(names, list, sizeof list), luaL_typename(L, -2));
        }
        lua_pop(L, 1);
    }
    return true;
}

/* tide.check_options(fn, opts, {names...}): the check above for the prelude's functions. */
static int l_check_options(lua_State *L)
{
    const char *fn = luaL_checkstring(L, 1);
    luaL_checktype(L, 3, LUA_TTABLE);
    const char *names[64];
    int n = (int)lua_rawlen(L, 3);
    if (n > 63)
        n = 63;
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 3, i + 1);
        names[i] = lua_tostring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
        if (!names[i])
            return luaL_error(L, "check_options: option names are strings");
    }
    names[n] = NULL;
    repl_check_options(L, 2, fn, names);
    return 0;
}

void repl_open_options(lua_State *L)
{
    lua_pushcfunction(L, l_check_options);
    lua_setfield(L, -2, "check_options");
}
