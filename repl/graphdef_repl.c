/* graphdef_repl.c — TensorFlow GraphDefs at the prompt: the Lua functions import_graph and
 * export_graph, and the commands :import and :export (docs/tensorflow.md).
 *
 *   g = import_graph("model.pb", {scope="net", input_map={["x:0"]=images}})
 *   run(g.y, {[g.x] = batch})            -- g: the GraphDef's node names -> node handles
 *   export_graph("tide.pbtxt")           -- format from the extension, or {format="text"}
 *   :import model.pbtxt [SCOPE]
 *   :export graph.pb [text|binary]
 *
 * An import is one atomic extension of the REPL's graph (the library checks everything before it
 * adds a node and rolls back on failure); the imported nodes belong to the entry like any other, so an
 * error later in the same entry rolls them back too. The Lua functions build their C arguments in
 * memory Lua owns (a userdata), so that a Lua error raised while reading the options leaks nothing. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "graphdef_repl.h"
#include "tide_graphdef.h"

/* ---------------------------------------------------------------- options */

static tide_graphdef_format check_format(lua_State *L, const char *fn, int opts)
{
    if (lua_getfield(L, opts, "format") == LUA_TNIL) {
        lua_pop(L, 1);
        return TIDE_GRAPHDEF_AUTO;
    }
    const char *name = lua_tostring(L, -1);
    int format = tide_graphdef_format_from_name(name);
    if (format < 0)
        repl_raise(L, "%s: format must be \"binary\" or \"text\", not %s", fn, name ? name : luaL_typename(L, -1));
    lua_pop(L, 1);
    return (tide_graphdef_format)format;
}

/* input_map = {["x:0"] = node, ["^init"] = node, ...} -> mappings in a userdata left on the stack. */
static tide_graphdef_mapping *check_input_map(lua_State *L, int opts, int *count)
{
    *count = 0;
    if (lua_getfield(L, opts, "input_map") == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    int map = lua_gettop(L);
    if (!lua_istable(L, map))
        repl_raise(L, "import_graph: input_map must be a table {[\"name:0\"] = node, ...}, not a %s",
                   luaL_typename(L, map));
    int n = 0;
    for (lua_pushnil(L); lua_next(L, map); lua_pop(L, 1))
        n++;
    tide_graphdef_mapping *m = lua_newuserdatauv(L, sizeof *m * (size_t)(n ? n : 1), 0);
    for (lua_pushnil(L); lua_next(L, map); lua_pop(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            repl_raise(L, "import_graph: input_map's keys are tensor names of the GraphDef (\"x:0\", \"^init\"), "
                          "not a %s", luaL_typename(L, -2));
        m[*count].name = lua_tostring(L, -2); /* the key lives as long as the table, which the caller holds */
        m[*count].value = repl_check_output(L, -1);
        if (m[*count].value.index < 0)
            m[*count].value.index = 0; /* a node without outputs: only good for a control input */
        (*count)++;
    }
    lua_remove(L, map);
    return m;
}

/* The key of a node in import_graph's result: its name in the GraphDef (without the graph's scope and
 * the import's scope). */
static const char *graphdef_name(const char *full, const char *scope)
{
    if (!scope || !scope[0])
        return full;
    size_t n = strlen(scope);
    for (const char *p = full; p; p = strchr(p, '/')) {
        if (*p == '/')
            p++;
        if (strncmp(p, scope, n) == 0 && p[n] == '/')
            return p + n + 1;
    }
    return full;
}

/* ---------------------------------------------------------------- Lua */

static int l_import_graph(lua_State *L)
{
    repl *r = repl_of(L);
    const char *path = luaL_checkstring(L, 1);
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        o.format = check_format(L, "import_graph", 2);
        if (lua_getfield(L, 2, "scope") != LUA_TNIL && lua_type(L, -1) != LUA_TSTRING)
            repl_raise(L, "import_graph: scope must be a string, not a %s", luaL_typename(L, -1));
        o.scope = lua_tostring(L, -1); /* stays on the stack, alive */
        o.input_map = check_input_map(L, 2, &o.num_input_map);
        lua_getfield(L, 2, "clear_devices");
        o.clear_devices = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    int before = tide_graph_num_nodes(r->graph);
    tide_error *err = repl_scratch_error(L);
    if (tide_graphdef_import_file(r->graph, path, &o, err) != TIDE_OK)
        return repl_raise(L, "import_graph: %s", tide_error_message(err));
    int after = tide_graph_num_nodes(r->graph);
    lua_createtable(L, 0, after - before);
    for (int i = before; i < after; i++) {
        tide_node *n = tide_graph_node_at(r->graph, i);
        repl_push_output(L, (tide_output){n, tide_node_num_outputs(n) ? 0 : -1}, false);
        lua_setfield(L, -2, graphdef_name(tide_node_name(n), o.scope));
    }
    return 1;
}

static int l_export_graph(lua_State *L)
{
    repl *r = repl_of(L);
    const char *path = luaL_checkstring(L, 1);
    tide_graphdef_export_options o;
    tide_graphdef_export_options_init(&o);
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        o.format = check_format(L, "export_graph", 2);
        if (lua_getfield(L, 2, "output_shapes") != LUA_TNIL)
            o.output_shapes = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    tide_error *err = repl_scratch_error(L);
    if (tide_graphdef_export_file(r->graph, path, &o, err) != TIDE_OK)
        return repl_raise(L, "export_graph: %s", tide_error_message(err));
    lua_pushinteger(L, tide_graph_num_nodes(r->graph));
    return 1;
}

void repl_open_graphdef(lua_State *L)
{
    static const luaL_Reg fns[] = {{"import_graph", l_import_graph}, {"export_graph", l_export_graph}, {NULL, NULL}};
    static const char *const help[][2] = {
        {"import_graph", "import_graph(path [, {scope=\"name\", input_map={[\"x:0\"]=node}, format=\"text\", "
                         "clear_devices=false}])\n\n"
                         "Adds the nodes of a TensorFlow GraphDef (.pb binary, .pbtxt text) to the graph, all or "
                         "none, as tf.import_graph_def: under scope, with the GraphDef's tensors named in "
                         "input_map read from nodes already in the graph. Returns a table from the GraphDef's "
                         "node names to node handles: g = import_graph(\"model.pb\"); run(g.y, {[g.x] = batch}). "
                         "clear_devices drops the GraphDef's device requests."},
        {"export_graph", "export_graph(path [, {format=\"text\", output_shapes=true}])\n\nWrites the graph as a "
                         "TensorFlow GraphDef (binary unless path ends in .pbtxt or format says text) that "
                         "TensorFlow, TensorBoard and Netron read; returns the number of nodes written."},
    };
    repl_register(L, fns, help, sizeof help / sizeof help[0]);
}

/* ---------------------------------------------------------------- commands */

repl_result repl_cmd_import(repl *r, int argc, char **argv)
{
    char *path = repl_expand_path(argv[1]);
    if (!path) {
        fprintf(stderr, "cannot import '%s': out of memory\n", argv[1]);
        return REPL_FAILED;
    }
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.scope = argc > 2 ? argv[2] : NULL;
    int before = tide_graph_num_nodes(r->graph);
    tide_error_clear(r->err);
    tide_status st = tide_graphdef_import_file(r->graph, path, &o, r->err);
    free(path);
    if (st != TIDE_OK) {
        fprintf(stderr, "cannot import: %s (nothing was added)\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    int after = tide_graph_num_nodes(r->graph), added = after - before;
    printf("imported %d node%s from %s (the graph has %d); in Lua: ", added, added == 1 ? "" : "s", argv[1], after);
    for (int i = before; i < after && i < before + 4; i++)
        printf("%snode(\"%s\")", i > before ? ", " : "", tide_node_name(tide_graph_node_at(r->graph, i)));
    puts(added > 4 ? ", ..." : added ? "" : "(none)");
    return REPL_DONE;
}

repl_result repl_cmd_export(repl *r, int argc, char **argv)
{
    tide_graphdef_export_options o;
    tide_graphdef_export_options_init(&o);
    if (argc > 2) {
        int format = tide_graphdef_format_from_name(argv[2]);
        if (format <= 0) {
            fprintf(stderr, "usage: :export FILE [text|binary] ('%s' is not a format)\n", argv[2]);
            return REPL_FAILED;
        }
        o.format = (tide_graphdef_format)format;
    }
    char *path = repl_expand_path(argv[1]);
    if (!path) {
        fprintf(stderr, "cannot export to '%s': out of memory\n", argv[1]);
        return REPL_FAILED;
    }
    tide_graphdef_format format = o.format ? o.format : tide_graphdef_format_of_path(path);
    tide_error_clear(r->err);
    tide_status st = tide_graphdef_export_file(r->graph, path, &o, r->err);
    free(path);
    if (st != TIDE_OK) {
        fprintf(stderr, "cannot export: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    int n = tide_graph_num_nodes(r->graph);
    printf("wrote %d node%s to %s (a TensorFlow GraphDef, %s)\n", n, n == 1 ? "" : "s", argv[1],
           format == TIDE_GRAPHDEF_TEXT ? "text" : "binary");
    return REPL_DONE;
}
