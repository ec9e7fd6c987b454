/* lua_control_flow.h — cond and while_loop in Lua (lua_control_flow.c). */
#ifndef TIDE_REPL_LUA_CONTROL_FLOW_H
#define TIDE_REPL_LUA_CONTROL_FLOW_H

#include <lua.h>

/* Registers cond and while_loop (and their help) into the table at the top of the stack. */
void repl_open_control_flow(lua_State *L);

#endif
